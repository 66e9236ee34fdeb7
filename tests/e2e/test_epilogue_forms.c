/* tests/e2e/test_epilogue_forms — epilogues as exporters write them, each on a small model built
 * here: SiLU as x·Sigmoid(x), HardSwish as x·HardSigmoid(x) and as x·Clip(x+3,0,6)/6, GELU as its
 * erf and tanh subgraphs after a MatMul + bias, ReLU6 as Clip(0,6) after Conv + BN, and the
 * residual Add + Relu after Conv + BN, MatMul/Gemm epilogues across a view-only Reshape, and
 * residual epilogues of a Conv without its bias and a Gemm without its C (the dynamo exporter's
 * form: the first post-op operand must not land in the omitted bias slot): a table
 * of cases (k_forms: anchor, constants, ops, post-ops wanted), one cmocka test each. Each becomes
 * one epilogue cluster with the typed post-ops expected, and fa_apply verifies the fused oneDNN
 * kernel numerically against the unfused ops (the rounding-error bound of applier/bound.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor/advisor.h"
#include "applier/applier.h"
#include "testutil.h"

static fa_ctx *C;

static void tensor(fa_graph *g, const char *name, int rank, const int64_t *d, bool input)
{
    int t = fa_graph_tensor(g, name);
    fa_tensor_set_shape(g->tensors[t], FA_DTYPE_FLOAT, rank, d);
    if (input) assert_int_equal(fa_graph_add_input(C, g, t), FA_OK);
}

/* a float constant: uniform [lo, hi) from seed, or the one value lo when rank is 0 */
static void weights(fa_graph *g, const char *name, int rank, const int64_t *d, uint64_t seed, float lo, float hi)
{
    int t = fa_graph_tensor(g, name);
    fa_tensor_set_shape(g->tensors[t], FA_DTYPE_FLOAT, rank, d);
    int64_t n = fa_tensor_numel(g->tensors[t]);
    float *v = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    fa_rng r;
    fa_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) v[i] = rank == 0 ? lo : fa_rng_uniform(&r, lo, hi);
    assert_int_equal(fa_tensor_set_data(C, g->tensors[t], v, sizeof(float) * (size_t)n), FA_OK);
    g->tensors[t]->flags |= FA_TENSOR_INITIALIZER;
    free(v);
}

/* a node; ins/outs comma-separated, "-" an omitted input */
static fa_node *node(fa_graph *g, const char *op, const char *ins, const char *outs)
{
    const char *iv[8], *ov[4];
    char ib[256], ob[128], name[64];
    int ni = 0, no = 0;
    snprintf(ib, sizeof ib, "%s", ins);
    snprintf(ob, sizeof ob, "%s", outs);
    for (char *t = strtok(ib, ","); t; t = strtok(NULL, ",")) iv[ni++] = strcmp(t, "-") ? t : "";
    for (char *t = strtok(ob, ","); t; t = strtok(NULL, ",")) ov[no++] = t;
    snprintf(name, sizeof name, "%s_%d", op, g->n_nodes);
    fa_node *n = fa_graph_add_node(C, g, name, op, "", ni, iv, no, ov);
    assert_non_null(n);
    return n;
}

/* The producer an epilogue form follows, each ending in tensor "c" (the forms read it). */
typedef enum anchor {
    CONV,           /* x [1,16,8,8] -> Conv 3x3 (16 -> 16, bias) */
    CONV_BN,        /* the same -> BatchNormalization */
    MATMUL_BIAS,    /* x [8,64] -> MatMul W [64,32] -> Add bias [32] */
    MATMUL_RESHAPE, /* x [6,32] -> MatMul W [32,16] -> Reshape [2,3,16]: a view keeping the last dim */
    GEMM_RESHAPE,   /* x [6,32] -> Gemm (bias C) -> Reshape [2,3,16] */
    CONV_NO_BIAS,   /* x [1,16,8,8] -> Conv 3x3 (16 -> 16), its optional bias omitted */
    GEMM_NO_C,      /* x [6,32] -> Gemm, its optional C omitted -> Reshape [2,3,16] */
} anchor;

static void conv_anchor(fa_graph *g, bool with_bn, bool bias)
{
    int64_t xd[4] = {1, 16, 8, 8}, wd[4] = {16, 16, 3, 3}, cd[1] = {16};
    tensor(g, "x", 4, xd, true);
    weights(g, "w", 4, wd, 1, -0.3f, 0.3f);
    if (bias) weights(g, "b", 1, cd, 2, -0.5f, 0.5f);
    int64_t pads[4] = {1, 1, 1, 1};
    fa_node *conv = node(g, "Conv", bias ? "x,w,b" : "x,w", with_bn ? "c0" : "c");
    fa_node_add_attr_ints(g, conv, "pads", pads, 4);
    if (with_bn) {
        weights(g, "scale", 1, cd, 3, 0.5f, 1.5f);
        weights(g, "shift", 1, cd, 4, -0.5f, 0.5f);
        weights(g, "mean", 1, cd, 5, -0.5f, 0.5f);
        weights(g, "var", 1, cd, 6, 0.5f, 1.5f);
        node(g, "BatchNormalization", "c0,scale,shift,mean,var", "c");
    }
}

/* x [6,32] -> MatMul W [32,16] (+ Gemm's bias C) -> Reshape to [2,3,16] -> "c" */
static void view_anchor(fa_graph *g, bool gemm, bool gemm_c)
{
    int64_t xd[2] = {6, 32}, wd[2] = {32, 16}, bd[1] = {16}, sd[1] = {3}, shape[3] = {2, 3, 16};
    tensor(g, "x", 2, xd, true);
    weights(g, "w", 2, wd, 1, -0.3f, 0.3f);
    if (!gemm || gemm_c) weights(g, gemm ? "gc" : "bias", 1, bd, 2, -0.5f, 0.5f);
    int t = fa_graph_tensor(g, "shape");
    fa_tensor_set_shape(g->tensors[t], FA_DTYPE_INT64, 1, sd);
    assert_int_equal(fa_tensor_set_data(C, g->tensors[t], shape, sizeof shape), FA_OK);
    g->tensors[t]->flags |= FA_TENSOR_INITIALIZER;
    node(g, gemm ? "Gemm" : "MatMul", gemm && gemm_c ? "x,w,gc" : "x,w", "m");
    node(g, "Reshape", "m,shape", "c");
}

static fa_graph *anchor_model(const char *name, anchor a)
{
    fa_graph *g = fa_graph_create(name);
    assert_int_equal(fa_graph_set_opset(C, g, "", 17), FA_OK);
    if (a == CONV || a == CONV_BN || a == CONV_NO_BIAS) conv_anchor(g, a == CONV_BN, a != CONV_NO_BIAS);
    else if (a == MATMUL_BIAS) {
        int64_t xd[2] = {8, 64}, wd[2] = {64, 32}, bd[1] = {32};
        tensor(g, "x", 2, xd, true);
        weights(g, "w", 2, wd, 1, -0.3f, 0.3f);
        weights(g, "bias", 1, bd, 2, -0.5f, 0.5f);
        node(g, "MatMul", "x,w", "m");
        node(g, "Add", "m,bias", "c");
    } else view_anchor(g, a == GEMM_RESHAPE || a == GEMM_NO_C, a == GEMM_RESHAPE);
    return g;
}

static void finish(fa_graph *g, const char *out)
{
    assert_int_equal(fa_graph_add_output(C, g, fa_graph_find_tensor(g, out)), FA_OK);
    if (fa_graph_prepare(C, g, NULL)) fail_msg("%s: %s", g->name, fa_ctx_errmsg(C));
}

/* Advise g: exactly one epilogue cluster, covering every node of g, with post-op kinds
 * want[0..n); then apply it and require it verified against the unfused ops. */
static void expect_epilogue(fa_graph *g, const fa_post_op_kind *want, int n, float alpha0)
{
    fa_advise_options ao = {0};
    ao.target = FA_TARGET_CPU;
    ao.no_gate = true;
    fa_plan *p = NULL;
    if (fa_advise(C, g, NULL, &ao, &p)) fail_msg("%s: advise: %s", g->name, fa_ctx_errmsg(C));
    const fa_cluster *c = NULL;
    int members = 0;
    for (int i = 0; i < p->n_clusters; i++)
        if (p->clusters[i].kind == FA_CLUSTER_EPILOGUE) {
            assert_null(c);
            c = &p->clusters[i];
        }
    if (!c) fail_msg("%s: no epilogue cluster", g->name);
    members = c->n_members;
    for (int i = 0; i < p->n_clusters; i++)
        if (p->clusters[i].kind == FA_CLUSTER_BN_FOLD && p->clusters[i].anchor == c->anchor) members += 1; /* the BN */
    printf("%s: cluster %s, %d post-ops:", g->name, c->label, c->n_post_ops);
    for (int k = 0; k < c->n_post_ops; k++) {
        char r[64];
        fa_post_op_format(&c->post_ops[k], r, sizeof r);
        printf(" %s", r);
    }
    printf("\n");
    assert_int_equal(members, g->n_topo);
    assert_int_equal(c->n_post_ops, n);
    for (int k = 0; k < n; k++) assert_int_equal(c->post_ops[k].kind, want[k]);
    if (!isnan(alpha0)) assert_true(fabsf(c->post_ops[0].alpha - alpha0) <= 1e-6f);

    fa_apply_options opt;
    fa_apply_options_default(&opt);
    opt.iters = 3;
    opt.warmup = 1;
    opt.threads = 2;
    opt.cache_dir = fa_test_path(fa_test_tmpdir(), "kcache");
    fa_apply_result *r = NULL;
    if (fa_apply(C, g, p, &opt, &r)) fail_msg("%s: apply: %s", g->name, fa_ctx_errmsg(C));
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *k = &p->clusters[i];
        const fa_cluster_verdict *v = &r->verdicts[i]; /* the applier's record of it */
        printf("  cluster %d %s: %s (relative error %.2g): %s\n", k->id, k->label, fa_cluster_status_name(v->status),
               v->max_rel_error, v->reason ? v->reason : "");
        if (k->kind == FA_CLUSTER_EPILOGUE) {
            assert_true(v->status == FA_CLUSTER_ACCEPTED || v->status == FA_CLUSTER_REJECTED_NO_GAIN ||
                        v->status == FA_CLUSTER_REJECTED_REGRESSION);
            /* verified by the bound (a cluster the end-to-end back-off dropped later says so instead) */
            if (!strstr(v->reason, "end-to-end back-off")) assert_non_null(strstr(v->reason, "within the rounding-error bound"));
        }
    }
    fa_apply_result_free(r);
    fa_plan_free(p);
    fa_graph_free(g);
}

/* One epilogue form: the ops an exporter writes after the anchor (reading "c", ending in "y"),
 * the scalar constants they use, an optional second graph input "skip", and the post-ops the
 * advisor must recognise (alpha0: the first post-op's alpha, NAN unchecked). */
typedef struct form_op {
    const char *op, *ins, *outs;
    const char *attr[2]; /* float attributes, NULL-terminated */
    float value[2];
} form_op;
typedef struct form_const {
    const char *name;
    float value;
} form_const;
typedef struct epilogue_form {
    const char *name;
    anchor anchor;
    form_const consts[5];   /* NULL-terminated */
    int skip_rank;          /* 0: no "skip" input */
    int64_t skip_dims[4];
    form_op ops[9];         /* NULL-terminated */
    fa_post_op_kind want[2];
    int n_want;
    float alpha0;
} epilogue_form;

static const epilogue_form k_forms[] = {
    {"conv_silu_as_x_times_sigmoid", CONV, {{0}}, 0, {0},
     {{"Sigmoid", "c", "sg"}, {"Mul", "c,sg", "y"}},
     {FA_POST_OP_SWISH}, 1, 1.0f},
    {"conv_bn_hardswish_as_x_times_hardsigmoid", CONV_BN, {{0}}, 0, {0},
     {{"HardSigmoid", "c", "h", {"alpha", "beta"}, {1.0f / 6.0f, 0.5f}}, {"Mul", "c,h", "y"}},
     {FA_POST_OP_HARD_SWISH}, 1, NAN},
    {"conv_hardswish_as_x_times_clip_div_6", CONV, {{"three", 3.0f}, {"zero", 0.0f}, {"six", 6.0f}, {"six_b", 6.0f}}, 0, {0},
     {{"Add", "c,three", "a"}, {"Clip", "a,zero,six", "k"}, {"Mul", "c,k", "m"}, {"Div", "m,six_b", "y"}},
     {FA_POST_OP_HARD_SWISH}, 1, NAN},
    {"matmul_bias_gelu_erf_subgraph", MATMUL_BIAS, {{"sqrt2", 1.41421356f}, {"one", 1.0f}, {"half", 0.5f}}, 0, {0},
     {{"Div", "c,sqrt2", "d"}, {"Erf", "d", "e"}, {"Add", "e,one", "f"}, {"Mul", "c,f", "g"}, {"Mul", "g,half", "y"}},
     {FA_POST_OP_ADD, FA_POST_OP_GELU_ERF}, 2, 0.0f},
    {"matmul_bias_gelu_tanh_subgraph", MATMUL_BIAS,
     {{"three", 3.0f}, {"k", 0.044715f}, {"s2pi", 0.7978845608f}, {"one", 1.0f}, {"half", 0.5f}}, 0, {0},
     {{"Pow", "c,three", "p"}, {"Mul", "p,k", "q"}, {"Add", "c,q", "r"}, {"Mul", "r,s2pi", "t"}, {"Tanh", "t", "th"},
      {"Add", "th,one", "u"}, {"Mul", "c,half", "hx"}, {"Mul", "hx,u", "y"}},
     {FA_POST_OP_ADD, FA_POST_OP_GELU_TANH}, 2, 0.0f},
    {"conv_bn_relu6_as_clip", CONV_BN, {{"zero", 0.0f}, {"six", 6.0f}}, 0, {0},
     {{"Clip", "c,zero,six", "y"}},
     {FA_POST_OP_CLIP}, 1, 0.0f},
    {"conv_bn_residual_add_relu", CONV_BN, {{0}}, 4, {1, 16, 8, 8},
     {{"Add", "c,skip", "a"}, {"Relu", "a", "y"}},
     {FA_POST_OP_ADD, FA_POST_OP_RELU}, 2, 0.0f},
    /* the epilogue crosses the view (the last dimension kept), the bias stays a per-column operand */
    {"matmul_reshape_bias_relu", MATMUL_RESHAPE, {{0}}, 0, {0},
     {{"Add", "c,bias", "a"}, {"Relu", "a", "y"}},
     {FA_POST_OP_ADD, FA_POST_OP_RELU}, 2, 0.0f},
    {"gemm_reshape_residual_add_relu", GEMM_RESHAPE, {{0}}, 3, {2, 3, 16},
     {{"Add", "c,skip", "a"}, {"Relu", "a", "y"}},
     {FA_POST_OP_ADD, FA_POST_OP_RELU}, 2, 0.0f},
    /* the dynamo exporter's forms: no bias on the Conv, no C on the Gemm */
    {"conv_without_bias_residual_add_relu", CONV_NO_BIAS, {{0}}, 4, {1, 16, 8, 8},
     {{"Add", "c,skip", "a"}, {"Relu", "a", "y"}},
     {FA_POST_OP_ADD, FA_POST_OP_RELU}, 2, 0.0f},
    {"gemm_without_c_reshape_residual_add", GEMM_NO_C, {{0}}, 3, {2, 3, 16},
     {{"Add", "c,skip", "y"}},
     {FA_POST_OP_ADD}, 1, NAN},
};
enum { N_FORMS = sizeof k_forms / sizeof k_forms[0] };

/* Build the case's model and require its one epilogue cluster verified (expect_epilogue). */
static void test_epilogue_form(void **state)
{
    const epilogue_form *f = *state;
    fa_graph *g = anchor_model(f->name, f->anchor);
    for (const form_const *k = f->consts; k->name; k++) weights(g, k->name, 0, NULL, 0, k->value, 0);
    if (f->skip_rank) tensor(g, "skip", f->skip_rank, f->skip_dims, true);
    for (const form_op *o = f->ops; o->op; o++) {
        fa_node *n = node(g, o->op, o->ins, o->outs);
        for (int a = 0; a < 2 && o->attr[a]; a++) fa_node_add_attr_float(g, n, o->attr[a], o->value[a]);
    }
    finish(g, "y");
    expect_epilogue(g, f->want, f->n_want, f->alpha0);
}

static int setup(void **s)
{
    (void)s;
    C = fa_ctx_create();
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    fa_ctx_free(C);
    return 0;
}

int main(void)
{
    struct CMUnitTest tests[N_FORMS];
    for (int i = 0; i < N_FORMS; i++)
        tests[i] = (struct CMUnitTest){.name = k_forms[i].name, .test_func = test_epilogue_form,
                                       .initial_state = (void *)&k_forms[i]};
    return cmocka_run_group_tests(tests, setup, teardown);
}
