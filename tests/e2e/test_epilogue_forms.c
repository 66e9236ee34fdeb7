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
#include "analyzer/analyzer.h"
#include "applier/applier.h"
#include "store/store.h"
#include "testutil.h"

/* The applier on plan p of g with a few quick rounds (the verdicts are checked, not the speed). */
static fa_apply_result *apply_small(fa_ctx *C, fa_graph *g, fa_plan *p)
{
    fa_apply_options opt;
    fa_apply_options_default(&opt);
    opt.iters = 3;
    opt.warmup = 1;
    opt.threads = 2;
    opt.cache_dir = fa_test_path(fa_test_tmpdir(), "kcache");
    fa_apply_result *r = NULL;
    if (fa_apply(C, g, p, &opt, &r)) fail_msg("%s: apply: %s", g->name, fa_ctx_errmsg(C));
    return r;
}

/* Cluster k was verified (its reason says `verified`, e.g. "within the rounding-error bound") and
 * then measured: accepted, or rejected for no gain or a regression — a cluster the end-to-end
 * back-off dropped later says so instead of the verification's words. */
static void expect_verified_and_measured(const fa_cluster *k, const fa_cluster_verdict *v, const char *verified)
{
    printf("  cluster %d %s: %s (relative error %.2g): %s\n", k->id, k->label, fa_cluster_status_name(v->status),
           v->max_rel_error, v->reason ? v->reason : "");
    assert_true(v->status == FA_CLUSTER_ACCEPTED || v->status == FA_CLUSTER_REJECTED_NO_GAIN ||
                v->status == FA_CLUSTER_REJECTED_REGRESSION);
    if (!strstr(v->reason, "end-to-end back-off")) assert_non_null(strstr(v->reason, verified));
}

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

static void expect_epilogue_ex(fa_graph *g, const fa_post_op_kind *want, int n, float alpha0, const char *label);

/* Advise g: exactly one epilogue cluster, covering every node of g, with post-op kinds
 * want[0..n); then apply it and require it verified against the unfused ops. */
static void expect_epilogue(fa_graph *g, const fa_post_op_kind *want, int n, float alpha0)
{
    expect_epilogue_ex(g, want, n, alpha0, NULL);
}

/* The same, and the cluster's label is `label`. */
static void expect_epilogue_labelled(fa_graph *g, const fa_post_op_kind *want, int n, const char *label)
{
    expect_epilogue_ex(g, want, n, NAN, label);
}

static void expect_epilogue_ex(fa_graph *g, const fa_post_op_kind *want, int n, float alpha0, const char *label)
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
    if (label) assert_string_equal(c->label, label);
    assert_int_equal(c->n_post_ops, n);
    for (int k = 0; k < n; k++) assert_int_equal(c->post_ops[k].kind, want[k]);
    if (!isnan(alpha0)) assert_true(fabsf(c->post_ops[0].alpha - alpha0) <= 1e-6f);

    fa_apply_result *r = apply_small(C, g, p);
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *k = &p->clusters[i];
        const fa_cluster_verdict *v = &r->verdicts[i]; /* the applier's record of it */
        if (k->kind == FA_CLUSTER_EPILOGUE) expect_verified_and_measured(k, v, "within the rounding-error bound");
        else printf("  cluster %d %s: %s\n", k->id, k->label, fa_cluster_status_name(v->status));
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

/* ---- GEMM forms as ONNX Runtime fuses them (issue 33) ----
 * A Linear on batched activations (x [2,5,32] -> MatMul W [32,48]) with its epilogues, and
 * products of two activations with a Transpose and a scalar scale of an operand folded in
 * (FusedMatMul): each builds its model here (build), then one epilogue cluster covering every
 * node, with the label and post-ops wanted, verified by fa_apply against the unfused ops. */
typedef struct gemm_form {
    const char *name;
    void (*build)(fa_graph *g);
    const char *label;
    fa_post_op_kind want[3];
    int n_want;
} gemm_form;

static void perm(fa_graph *g, const char *in, const char *out, int n, const int64_t *p)
{
    fa_node *t = node(g, "Transpose", in, out);
    fa_node_add_attr_ints(g, t, "perm", p, n);
}

static void scalar(fa_graph *g, const char *name, float v) { weights(g, name, 0, NULL, 0, v, 0); }

/* x [2,5,32] -> MatMul W [32,48] -> "m" */
static void linear3d(fa_graph *g)
{
    int64_t xd[3] = {2, 5, 32}, wd[2] = {32, 48}, bd[1] = {48};
    tensor(g, "x", 3, xd, true);
    weights(g, "w", 2, wd, 1, -0.3f, 0.3f);
    weights(g, "bias", 1, bd, 2, -0.5f, 0.5f);
    node(g, "MatMul", "x,w", "m");
}

/* GELU's erf form as exporters write it, on tensor `in`: 0.5·in·(1 + erf(in/√2)) -> "y" */
static void gelu_erf_of(fa_graph *g, const char *in)
{
    char b[64];
    scalar(g, "sqrt2", 1.41421356f);
    scalar(g, "one", 1.0f);
    scalar(g, "half", 0.5f);
    snprintf(b, sizeof b, "%s,sqrt2", in);
    node(g, "Div", b, "gd");
    node(g, "Erf", "gd", "ge");
    node(g, "Add", "ge,one", "gf");
    snprintf(b, sizeof b, "%s,gf", in);
    node(g, "Mul", b, "gg");
    node(g, "Mul", "gg,half", "y");
}

static void f_linear_bias_gelu_erf(fa_graph *g)
{
    linear3d(g);
    node(g, "Add", "m,bias", "a");
    gelu_erf_of(g, "a");
}

static void f_linear_gelu_erf_no_bias(fa_graph *g)
{
    linear3d(g);
    gelu_erf_of(g, "m");
}

static void f_linear_bias_gelu_tanh(fa_graph *g)
{
    linear3d(g);
    node(g, "Add", "m,bias", "c");
    scalar(g, "three", 3.0f);
    scalar(g, "k", 0.044715f);
    scalar(g, "s2pi", 0.7978845608f);
    scalar(g, "one", 1.0f);
    scalar(g, "half", 0.5f);
    node(g, "Pow", "c,three", "p");
    node(g, "Mul", "p,k", "q");
    node(g, "Add", "c,q", "r");
    node(g, "Mul", "r,s2pi", "t");
    node(g, "Tanh", "t", "th");
    node(g, "Add", "th,one", "u");
    node(g, "Mul", "c,half", "hx");
    node(g, "Mul", "hx,u", "y");
}

static void f_linear_bias_silu(fa_graph *g)
{
    linear3d(g);
    node(g, "Add", "m,bias", "c");
    node(g, "Sigmoid", "c", "sg");
    node(g, "Mul", "c,sg", "y");
}

/* ViT's GEMM + bias + residual ("matmul+add+add") and the residual added before the bias */
static void f_linear_bias_residual(fa_graph *g)
{
    linear3d(g);
    int64_t sd[3] = {2, 5, 48};
    tensor(g, "skip", 3, sd, true);
    node(g, "Add", "m,bias", "a");
    node(g, "Add", "a,skip", "y");
}

static void f_linear_residual_then_bias(fa_graph *g)
{
    linear3d(g);
    int64_t sd[3] = {2, 5, 48};
    tensor(g, "skip", 3, sd, true);
    node(g, "Add", "skip,m", "a");
    node(g, "Add", "a,bias", "y");
}

/* scores-like products of two activations: q [2,3,6,8] and k read transposed */
static void qk(fa_graph *g, bool heads_layout)
{
    int64_t qd[4] = {2, 3, 6, 8}, kd[4] = {2, 3, 10, 8}, kh[4] = {2, 10, 3, 8};
    tensor(g, "q", 4, qd, true);
    tensor(g, "k", 4, heads_layout ? kh : kd, true);
    if (heads_layout) { /* K as the projection writes it, [B, S, H, D] -> [B, H, D, S] in one Transpose */
        int64_t p[4] = {0, 2, 3, 1};
        perm(g, "k", "kt", 4, p);
    } else {
        int64_t p[4] = {0, 1, 3, 2};
        perm(g, "k", "kt", 4, p);
    }
}

static void f_transposed_b(fa_graph *g)
{
    qk(g, false);
    node(g, "MatMul", "q,kt", "y");
}

static void f_transposed_b_heads_with_mask(fa_graph *g)
{
    qk(g, true);
    int64_t md[4] = {2, 1, 1, 10};
    weights(g, "mask", 4, md, 7, -1.0f, 0.0f);
    node(g, "MatMul", "q,kt", "s");
    node(g, "Add", "s,mask", "y");
}

static void f_scale_before_transposed_b(fa_graph *g)
{
    qk(g, false);
    scalar(g, "c", 0.125f);
    node(g, "Mul", "q,c", "qs");
    node(g, "MatMul", "qs,kt", "y");
}

static void f_scale_after_transposed_b(fa_graph *g)
{
    qk(g, false);
    scalar(g, "d", 2.828427f);
    node(g, "MatMul", "q,kt", "s");
    node(g, "Div", "s,d", "y");
}

static void f_scale_before_linear_bias(fa_graph *g)
{
    int64_t xd[3] = {2, 5, 32}, wd[2] = {32, 48}, bd[1] = {48};
    tensor(g, "x", 3, xd, true);
    weights(g, "w", 2, wd, 1, -0.3f, 0.3f);
    weights(g, "bias", 1, bd, 2, -0.5f, 0.5f);
    scalar(g, "c", 0.5f);
    node(g, "Mul", "c,x", "xs");
    node(g, "MatMul", "xs,w", "m");
    node(g, "Add", "m,bias", "y");
}

/* A [2,8,6] transposed to [2,6,8] times B [2,8,5] */
static void f_transposed_a(fa_graph *g)
{
    int64_t ad[3] = {2, 8, 6}, bd[3] = {2, 8, 5}, p[3] = {0, 2, 1};
    tensor(g, "a", 3, ad, true);
    tensor(g, "b", 3, bd, true);
    perm(g, "a", "at", 3, p);
    node(g, "MatMul", "at,b", "y");
}

/* Gemm as exporters write a 2-D Linear: x [10,32], W [48,32] read transposed (transB), alpha and
 * beta not 1, C per column [48] or per row and column [10,48] (c_input: a graph input, not a
 * constant); then the epilogue. Before, a fused Gemm whose alpha or beta was not 1 or whose C was
 * not a row bias failed to build: its cluster was rejected with an error. */
static void gemm2d_c(fa_graph *g, int64_t trans_a, float alpha, float beta, bool full_c, bool c_input)
{
    int64_t xd[2] = {10, 32}, xt[2] = {32, 10}, wd[2] = {48, 32}, cd[1] = {48}, cf[2] = {10, 48};
    tensor(g, "x", 2, trans_a ? xt : xd, true);
    weights(g, "w", 2, wd, 1, -0.3f, 0.3f);
    if (c_input) tensor(g, "gc", full_c ? 2 : 1, full_c ? cf : cd, true);
    else weights(g, "gc", full_c ? 2 : 1, full_c ? cf : cd, 2, -0.5f, 0.5f);
    fa_node *n = node(g, "Gemm", "x,w,gc", "m");
    fa_node_add_attr_int(g, n, "transB", 1);
    if (trans_a) fa_node_add_attr_int(g, n, "transA", 1);
    if (alpha != 1) fa_node_add_attr_float(g, n, "alpha", alpha);
    if (beta != 1) fa_node_add_attr_float(g, n, "beta", beta);
}

static void gemm2d(fa_graph *g, int64_t trans_a, float alpha, float beta, bool full_c)
{
    gemm2d_c(g, trans_a, alpha, beta, full_c, false);
}

static void f_gemm_transb_alpha_beta_gelu_erf(fa_graph *g)
{
    gemm2d(g, 0, 0.5f, 2.0f, false);
    gelu_erf_of(g, "m");
}

static void f_gemm_transa_full_c_residual_relu(fa_graph *g)
{
    gemm2d(g, 1, 1.0f, 0.25f, true);
    int64_t sd[2] = {10, 48};
    tensor(g, "skip", 2, sd, true);
    node(g, "Add", "m,skip", "a");
    node(g, "Relu", "a", "y");
}

static void f_gemm_alpha_silu(fa_graph *g)
{
    gemm2d(g, 0, 0.125f, 1.0f, false);
    node(g, "Sigmoid", "m", "sg");
    node(g, "Mul", "sg,m", "y");
}

static void f_gemm_c_input_alpha_beta_tanh(fa_graph *g)
{
    gemm2d_c(g, 0, 2.0f, 0.5f, false, true);
    node(g, "Tanh", "m", "y");
}

static void f_gemm_beta_zero_relu(fa_graph *g)
{
    gemm2d(g, 0, 1.0f, 0.0f, true);
    node(g, "Relu", "m", "y");
}

static const gemm_form k_gemm_forms[] = {
    {"linear3d_bias_gelu_erf", f_linear_bias_gelu_erf, "matmul+add+gelu_erf", {FA_POST_OP_ADD, FA_POST_OP_GELU_ERF}, 2},
    {"linear3d_gelu_erf_no_bias", f_linear_gelu_erf_no_bias, "matmul+gelu_erf", {FA_POST_OP_GELU_ERF}, 1},
    {"linear3d_bias_gelu_tanh", f_linear_bias_gelu_tanh, "matmul+add+gelu_tanh", {FA_POST_OP_ADD, FA_POST_OP_GELU_TANH}, 2},
    {"linear3d_bias_silu", f_linear_bias_silu, "matmul+add+silu", {FA_POST_OP_ADD, FA_POST_OP_SWISH}, 2},
    {"linear3d_bias_then_residual", f_linear_bias_residual, "matmul+add+add", {FA_POST_OP_ADD, FA_POST_OP_ADD}, 2},
    {"linear3d_residual_then_bias", f_linear_residual_then_bias, "matmul+add+add", {FA_POST_OP_ADD, FA_POST_OP_ADD}, 2},
    {"transposed_b", f_transposed_b, "matmul(view b)", {0}, 0},
    {"transposed_b_heads_layout_with_mask", f_transposed_b_heads_with_mask, "matmul(view b)+add", {FA_POST_OP_ADD}, 1},
    {"scale_before_transposed_b", f_scale_before_transposed_b, "matmul(view b,scale)", {0}, 0},
    {"scale_after_transposed_b", f_scale_after_transposed_b, "matmul(view b)+div", {FA_POST_OP_DIV}, 1},
    {"scale_before_linear_bias", f_scale_before_linear_bias, "matmul(scale)+add", {FA_POST_OP_ADD}, 1},
    {"transposed_a", f_transposed_a, "matmul(view a)", {0}, 0},
    {"gemm_transb_alpha_beta_gelu_erf", f_gemm_transb_alpha_beta_gelu_erf, "gemm+gelu_erf", {FA_POST_OP_GELU_ERF}, 1},
    {"gemm_transa_full_c_residual_relu", f_gemm_transa_full_c_residual_relu, "gemm+add+relu", {FA_POST_OP_ADD, FA_POST_OP_RELU}, 2},
    {"gemm_alpha_silu", f_gemm_alpha_silu, "gemm+silu", {FA_POST_OP_SWISH}, 1},
    {"gemm_c_input_alpha_beta_tanh", f_gemm_c_input_alpha_beta_tanh, "gemm+tanh", {FA_POST_OP_TANH}, 1},
    {"gemm_beta_zero_relu", f_gemm_beta_zero_relu, "gemm+relu", {FA_POST_OP_RELU}, 1},
};
enum { N_GEMM_FORMS = sizeof k_gemm_forms / sizeof k_gemm_forms[0] };

static void test_gemm_form(void **state)
{
    const gemm_form *f = *state;
    fa_graph *g = fa_graph_create(f->name);
    assert_int_equal(fa_graph_set_opset(C, g, "", 17), FA_OK);
    f->build(g);
    finish(g, "y");
    expect_epilogue_labelled(g, f->want, f->n_want, f->label);
}

/* ---- generated epilogues (issue 33; docs/fusion-rules.md §3 "Generated epilogues") ----
 * What oneDNN's post-ops cannot express after a MatMul/Gemm — an addend varying along the batch
 * only ([2,1,48] on [2,5,48], which the Linear's [rows, N] product cannot read), an operand computed
 * after the GEMM in topological order, Sub with the product as its second operand, SwiGLU's Mul of
 * two GEMM outputs — is one cluster all the same on the cpu target: oneDNN computes the product
 * in blocks of rows and the generated elementwise code runs the epilogue on each block (no
 * post-ops; the label says "(generated epilogue: <why post-ops could not>)"). Each is verified by
 * fa_apply against the unfused ops. Before, the epilogue stopped at that op with the why-not. On
 * the cuda target the generated path is refused and the why-not says so. */
typedef struct gen_form {
    const char *name;
    void (*build)(fa_graph *g);
    const char *label; /* the generated cluster's */
    int members;       /* its members, the GEMM included */
} gen_form;

static void f_gen_per_batch_addend(fa_graph *g)
{
    linear3d(g);
    int64_t pd[3] = {2, 1, 48};
    weights(g, "per_batch", 3, pd, 9, -0.5f, 0.5f);
    node(g, "Add", "m,per_batch", "a");
    node(g, "Relu", "a", "y");
}

/* the addend is computed from a second input after the MatMul in topological order */
static void f_gen_operand_later(fa_graph *g)
{
    linear3d(g);
    int64_t zd[3] = {2, 5, 48};
    tensor(g, "z", 3, zd, true);
    node(g, "Sigmoid", "z", "o");
    node(g, "Add", "m,o", "a");
    node(g, "Tanh", "a", "y");
}

/* bias - product, then the bias added back: Sub with the product second */
static void f_gen_product_subtracted(fa_graph *g)
{
    linear3d(g);
    node(g, "Sub", "bias,m", "a");
    node(g, "Relu", "a", "y");
}

/* LLaMA's SwiGLU MLP: silu(x·Wg) · (x·Wu) */
static void f_gen_swiglu(fa_graph *g)
{
    int64_t xd[3] = {2, 5, 32}, wd[2] = {32, 48};
    tensor(g, "x", 3, xd, true);
    weights(g, "wg", 2, wd, 1, -0.3f, 0.3f);
    weights(g, "wu", 2, wd, 3, -0.3f, 0.3f);
    node(g, "MatMul", "x,wg", "gate");
    node(g, "MatMul", "x,wu", "up");
    node(g, "Sigmoid", "gate", "sg");
    node(g, "Mul", "gate,sg", "silu");
    node(g, "Mul", "silu,up", "y");
}

/* a 2-D Gemm [rows, K] x [N, K]^T (transB, per-column C) whose product is divided into a graph
 * input, then Exp: Div with the product second */
static void gemm_divided_into(fa_graph *g, int64_t rows, int64_t K, int64_t N)
{
    int64_t xd[2] = {rows, K}, wd[2] = {N, K}, cd[1] = {N}, sd[2] = {rows, N};
    tensor(g, "x", 2, xd, true);
    weights(g, "w", 2, wd, 1, -0.3f, 0.3f);
    weights(g, "gc", 1, cd, 2, 2.0f, 3.0f); /* keeps the product away from 0 */
    tensor(g, "skip", 2, sd, true);
    fa_node *n = node(g, "Gemm", "x,w,gc", "m");
    fa_node_add_attr_int(g, n, "transB", 1);
    node(g, "Div", "skip,m", "a");
    node(g, "Exp", "a", "y");
}

/* an odd row count: the last block of rows is shorter */
static void f_gen_gemm_divided_into(fa_graph *g) { gemm_divided_into(g, 37, 32, 48); }

/* one row (a classifier, a decode step): the product is runtime/cpu/gemv.c's matrix-vector one
 * where the CPU has its instruction set, then the generated epilogue on that row; K off the
 * vector width */
static void f_gen_gemm_one_row(fa_graph *g) { gemm_divided_into(g, 1, 83, 40); }

/* one row through a MatMul (columns form: W [K, N]), an operand computed later */
static void f_gen_matmul_one_row(fa_graph *g)
{
    int64_t xd[3] = {1, 1, 70}, wd[2] = {70, 33}, zd[3] = {1, 1, 33};
    tensor(g, "x", 3, xd, true);
    weights(g, "w", 2, wd, 1, -0.3f, 0.3f);
    node(g, "MatMul", "x,w", "m");
    tensor(g, "z", 3, zd, true);
    node(g, "Sigmoid", "z", "o");
    node(g, "Add", "m,o", "a");
    node(g, "Tanh", "a", "y");
}

static const gen_form k_gen_forms[] = {
    {"generated_per_batch_addend", f_gen_per_batch_addend, "matmul+add+relu (generated epilogue: shape-changing-epilogue)", 3},
    {"generated_operand_later", f_gen_operand_later, "matmul+add+tanh (generated epilogue: operand-later)", 3},
    {"generated_product_subtracted", f_gen_product_subtracted, "matmul+sub+relu (generated epilogue: operand-order)", 3},
    {"generated_swiglu", f_gen_swiglu, "matmul+silu+mul (generated epilogue: operand-later)", 4},
    {"generated_gemm_divided_into", f_gen_gemm_divided_into, "gemm+div+exp (generated epilogue: operand-order)", 3},
    {"generated_gemm_one_row", f_gen_gemm_one_row, "gemm+div+exp (generated epilogue: operand-order)", 3},
    {"generated_matmul_one_row", f_gen_matmul_one_row, "matmul+add+tanh (generated epilogue: operand-later)", 3},
};
enum { N_GEN_FORMS = sizeof k_gen_forms / sizeof k_gen_forms[0] };

static fa_graph *gen_model(const gen_form *f)
{
    fa_graph *g = fa_graph_create(f->name);
    assert_int_equal(fa_graph_set_opset(C, g, "", 17), FA_OK);
    f->build(g);
    finish(g, "y");
    return g;
}

static void test_gen_form(void **state)
{
    const gen_form *f = *state;
    fa_graph *g = gen_model(f);
    fa_advise_options ao = {0};
    ao.target = FA_TARGET_CPU;
    ao.no_gate = true;
    fa_plan *p = NULL;
    if (fa_advise(C, g, NULL, &ao, &p)) fail_msg("%s: advise: %s", g->name, fa_ctx_errmsg(C));
    const fa_cluster *c = NULL;
    for (int i = 0; i < p->n_clusters; i++) {
        printf("%s: cluster %s (%d members)\n", g->name, p->clusters[i].label, p->clusters[i].n_members);
        if (p->clusters[i].kind == FA_CLUSTER_EPILOGUE && p->clusters[i].epilogue_generated) c = &p->clusters[i];
    }
    if (!c) fail_msg("%s: no generated epilogue", g->name);
    assert_string_equal(c->label, f->label);
    assert_int_equal(c->n_members, f->members);
    assert_int_equal(c->n_post_ops, 0);
    assert_int_equal(c->status, FA_CLUSTER_PROPOSED);

    fa_apply_result *r = apply_small(C, g, p);
    expect_verified_and_measured(c, &r->verdicts[c - p->clusters], "within the rounding-error bound");
    assert_true(r->verdicts[c - p->clusters].max_rel_error >= 0);
    fa_apply_result_free(r);
    fa_plan_free(p);
    fa_graph_free(g);
}

/* A member the C generator has no emitter for (Round) after the switch: no generated epilogue is
 * proposed (the applier could not build it), and the edge where it would have started says why. */
static void test_gen_needs_an_emitter(void **state)
{
    (void)state;
    fa_graph *g = fa_graph_create("generated_needs_an_emitter");
    assert_int_equal(fa_graph_set_opset(C, g, "", 17), FA_OK);
    linear3d(g);
    node(g, "Sub", "bias,m", "a");
    node(g, "Round", "a", "y");
    finish(g, "y");
    fa_advise_options ao = {0};
    ao.target = FA_TARGET_CPU;
    ao.no_gate = true;
    fa_plan *p = NULL;
    if (fa_advise(C, g, NULL, &ao, &p)) fail_msg("advise: %s", fa_ctx_errmsg(C));
    for (int i = 0; i < p->n_clusters; i++) {
        printf("cluster %s\n", p->clusters[i].label);
        assert_false(p->clusters[i].kind == FA_CLUSTER_EPILOGUE && p->clusters[i].epilogue_generated);
    }
    bool said = false;
    for (int i = 0; i < p->n_why_not; i++) {
        printf("why-not %s: %s\n", fa_why_code_name(p->why_not[i].code), p->why_not[i].reason);
        said |= p->why_not[i].code == FA_WHY_CODEGEN_UNSUPPORTED && strstr(p->why_not[i].reason, "generated epilogue (operand-order)");
    }
    assert_true(said);
    fa_plan_free(p);
    fa_graph_free(g);
}

/* On the cuda target the per-batch addend still ends the epilogue, and the reason says why the
 * generated path does not take it. */
static void test_gen_refused_on_cuda(void **state)
{
    (void)state;
    fa_graph *g = gen_model(&k_gen_forms[0]);
    fa_advise_options ao = fa_advise_options_default();
    ao.target = FA_TARGET_CUDA;
    ao.no_gate = true;
    fa_plan *p = NULL;
    if (fa_advise(C, g, NULL, &ao, &p)) fail_msg("advise: %s", fa_ctx_errmsg(C));
    for (int i = 0; i < p->n_clusters; i++) {
        printf("cluster %s\n", p->clusters[i].label);
        assert_false(p->clusters[i].kind == FA_CLUSTER_EPILOGUE && p->clusters[i].epilogue_generated);
    }
    bool said = false;
    for (int i = 0; i < p->n_why_not; i++) printf("why-not %s: %s\n", fa_why_code_name(p->why_not[i].code), p->why_not[i].reason);
    for (int i = 0; i < p->n_why_not; i++)
        said |= p->why_not[i].code == FA_WHY_SHAPE_CHANGING_EPILOGUE && strstr(p->why_not[i].reason, "varies along a batch dim") &&
                strstr(p->why_not[i].reason, "the cuda target has no generated GEMM epilogue");
    assert_true(said);
    fa_plan_free(p);
    fa_graph_free(g);
}

/* ---- both paths: a generated epilogue instead of post-ops (issue 33) ----
 * An epilogue the library's post-ops express whose anchor meets the generated path's conditions:
 * with a probe, the advisor probes both fused builds and takes the faster. A stub probe says
 * the generated build is faster (the test times nothing); the plan then carries the generated
 * epilogue, and fa_apply builds it (the product in blocks of rows, the generated elementwise
 * code over each) and verifies it against the unfused ops. Before, such a cluster always took the
 * post-op path and the probe was never asked for the generated build. */
typedef struct path_probe_stub {
    int post_asked, gen_asked;
} path_probe_stub;

/* post-ops 1.0 us, generated 0.5 us, the unfused sub-graph 2.0 us, each of 7 pairs */
static bool generated_faster_probe(void *user, const fa_graph *g, const fa_plan *p, int ci, const char *signature,
                                   fa_fused_probe_result *out)
{
    (void)g;
    path_probe_stub *st = user;
    const fa_cluster *c = &p->clusters[ci];
    memset(out, 0, sizeof *out);
    if (c->kind != FA_CLUSTER_EPILOGUE) {
        snprintf(out->what, sizeof out->what, "the test's probe times epilogues only");
        return false;
    }
    assert_true((strstr(signature, "(generated)") != NULL) == (c->epilogue_generated != 0));
    if (c->epilogue_generated) assert_int_equal(c->n_post_ops, 0);
    *(c->epilogue_generated ? &st->gen_asked : &st->post_asked) += 1;
    out->median_ns = c->epilogue_generated ? 500 : 1000;
    out->unfused_median_ns = 2000;
    out->paired_ratio = out->median_ns / out->unfused_median_ns;
    out->reps = 7;
    out->wins = 7;
    snprintf(out->what, sizeof out->what, "the test's stub");
    return true;
}

typedef struct both_path_form {
    const char *name;
    void (*build)(fa_graph *g);
    const char *label; /* the chosen cluster's */
    int members;
} both_path_form;

static void f_linear_bias_relu(fa_graph *g)
{
    linear3d(g);
    node(g, "Add", "m,bias", "a");
    node(g, "Relu", "a", "y");
}

/* a 2-D Gemm (transB, per-column C: oneDNN's bias) + a residual Add, an odd row count */
static void f_gemm_bias_residual(fa_graph *g)
{
    int64_t xd[2] = {37, 32}, wd[2] = {48, 32}, cd[1] = {48}, sd[2] = {37, 48};
    tensor(g, "x", 2, xd, true);
    weights(g, "w", 2, wd, 1, -0.3f, 0.3f);
    weights(g, "gc", 1, cd, 2, -0.5f, 0.5f);
    tensor(g, "skip", 2, sd, true);
    fa_node *n = node(g, "Gemm", "x,w,gc", "m");
    fa_node_add_attr_int(g, n, "transB", 1);
    node(g, "Add", "m,skip", "y");
}

static const both_path_form k_both_forms[] = {
    {"both_paths_matmul_bias_gelu_erf", f_linear_bias_gelu_erf, "matmul+add+gelu_erf (generated epilogue: faster than post-ops)", 7},
    {"both_paths_matmul_bias_relu", f_linear_bias_relu, "matmul+add+relu (generated epilogue: faster than post-ops)", 3},
    {"both_paths_matmul_bias_residual", f_linear_bias_residual, "matmul+add+add (generated epilogue: faster than post-ops)", 3},
    {"both_paths_gemm_bias_residual", f_gemm_bias_residual, "gemm+add (generated epilogue: faster than post-ops)", 2},
};
enum { N_BOTH_FORMS = sizeof k_both_forms / sizeof k_both_forms[0] };

static void test_both_paths_form(void **state)
{
    const both_path_form *f = *state;
    fa_graph *g = fa_graph_create(f->name);
    assert_int_equal(fa_graph_set_opset(C, g, "", 17), FA_OK);
    f->build(g);
    finish(g, "y");
    /* a measured profile: the probe is consulted only where every member has a median */
    const char *db = fa_test_path(fa_test_tmpdir(), "both_paths.db");
    remove(db);
    fa_store *st = NULL;
    int64_t run = 0;
    assert_int_equal(fa_store_open(C, db, &st), FA_OK);
    if (fa_test_store_graph_run(C, st, g, 3, &run)) fail_msg("%s: profile: %s", g->name, fa_ctx_errmsg(C));
    fa_ceilings ce;
    memset(&ce, 0, sizeof ce);
    ce.device_key = "cpu:test:1t";
    ce.mem_bw_gbs = 10;
    ce.peak_gflops = 100;
    ce.launch_ns = 1000;
    fa_analysis *a = NULL;
    assert_int_equal(fa_analyze_run(C, st, run, &ce, &a), FA_OK);

    path_probe_stub stub = {0};
    fa_advise_options ao = fa_advise_options_default();
    ao.no_gate = true;
    ao.probe = generated_faster_probe;
    ao.probe_user = &stub;
    fa_plan *p = NULL;
    if (fa_advise(C, g, a, &ao, &p)) fail_msg("%s: advise: %s", g->name, fa_ctx_errmsg(C));
    const fa_cluster *c = NULL;
    for (int i = 0; i < p->n_clusters; i++) {
        printf("%s: cluster %s (%d members): %s\n", g->name, p->clusters[i].label, p->clusters[i].n_members,
               p->clusters[i].basis ? p->clusters[i].basis : "");
        if (p->clusters[i].kind == FA_CLUSTER_EPILOGUE) c = &p->clusters[i];
    }
    if (!c) fail_msg("%s: no epilogue", g->name);
    assert_int_equal(stub.post_asked, 1);
    assert_int_equal(stub.gen_asked, 1);
    assert_true(c->epilogue_generated);
    assert_int_equal(c->n_post_ops, 0);
    assert_string_equal(c->label, f->label);
    assert_int_equal(c->n_members, f->members);
    assert_int_equal(c->status, FA_CLUSTER_PROPOSED);

    fa_apply_result *r = apply_small(C, g, p);
    expect_verified_and_measured(c, &r->verdicts[c - p->clusters], "within the rounding-error bound");
    assert_true(r->verdicts[c - p->clusters].max_rel_error >= 0);
    fa_apply_result_free(r);
    fa_plan_free(p);
    fa_analysis_free(a);
    fa_store_close(st);
    remove(db);
    fa_graph_free(g);
}

/* ---- the pre-LN residual stream (issue 33) ----
 * x [2,5,48] + the residual r, the sum read by a LayerNormalization (or RMSNormalization) and by
 * the next residual add (+ z, z = the norm's output times W: the block the norm feeds, so the
 * add cannot join the norm's cluster): the norm's row kernel takes the Add and also writes the sum, one
 * cluster verified against the unfused ops (ONNX Runtime's SkipLayerNormalization with its sum
 * output). Before, the Add had two consumers and stayed a kernel of its own ("this plan never
 * duplicates a producer"). With gemm 1, the Add's operand comes from x [10,32] -> Gemm -> Reshape
 * [2,5,48] (GPT-2's Conv1D); with gemm 2 from MatMul -> bias Add (ViT's MLP): the Add stays the
 * GEMM's epilogue (matmul+add+add: the epilogue writes the sum the norm reads, one pass fewer than
 * a bias epilogue plus the norm's cluster), the norm on its own. */
static void skip_norm_model(bool rms, int gemm, fa_plan **pp, fa_graph **gp)
{
    fa_graph *g = fa_graph_create(rms ? "pre_ln_skip_rms_norm" : gemm == 1 ? "pre_ln_gemm_residual"
                                  : gemm == 2             ? "pre_ln_matmul_bias_residual"
                                                          : "pre_ln_skip_layer_norm");
    assert_int_equal(fa_graph_set_opset(C, g, "", rms ? 23 : 17), FA_OK);
    int64_t d[3] = {2, 5, 48}, gd[1] = {48};
    int64_t wz[2] = {48, 48};
    tensor(g, "r", 3, d, true);
    weights(g, "wz", 2, wz, 5, -0.3f, 0.3f);
    if (gemm == 2) { /* ViT's MLP output: MatMul -> bias Add -> residual Add */
        int64_t xd[3] = {2, 5, 32}, wd[2] = {32, 48};
        tensor(g, "x2", 3, xd, true);
        weights(g, "w", 2, wd, 1, -0.3f, 0.3f);
        weights(g, "bias", 1, gd, 2, -0.5f, 0.5f);
        node(g, "MatMul", "x2,w", "m");
        node(g, "Add", "m,bias", "x");
    } else if (gemm) {
        int64_t xd[2] = {10, 32}, wd[2] = {32, 48}, shape[3] = {2, 5, 48}, sd[1] = {3};
        tensor(g, "x2", 2, xd, true);
        weights(g, "w", 2, wd, 1, -0.3f, 0.3f);
        weights(g, "gc", 1, gd, 2, -0.5f, 0.5f);
        int t = fa_graph_tensor(g, "shape");
        fa_tensor_set_shape(g->tensors[t], FA_DTYPE_INT64, 1, sd);
        assert_int_equal(fa_tensor_set_data(C, g->tensors[t], shape, sizeof shape), FA_OK);
        g->tensors[t]->flags |= FA_TENSOR_INITIALIZER;
        node(g, "Gemm", "x2,w,gc", "m");
        node(g, "Reshape", "m,shape", "x");
    } else {
        tensor(g, "x", 3, d, true);
    }
    weights(g, "gamma", 1, gd, 3, 0.5f, 1.5f);
    if (!rms) weights(g, "beta", 1, gd, 4, -0.5f, 0.5f);
    node(g, "Add", "x,r", "s");
    node(g, rms ? "RMSNormalization" : "LayerNormalization", rms ? "s,gamma" : "s,gamma,beta", "y");
    node(g, "MatMul", "y,wz", "z");
    node(g, "Add", "s,z", "s2");
    finish(g, "s2");
    fa_advise_options ao = {0};
    ao.target = FA_TARGET_CPU;
    ao.no_gate = true;
    if (fa_advise(C, g, NULL, &ao, pp)) fail_msg("%s: advise: %s", g->name, fa_ctx_errmsg(C));
    *gp = g;
}

/* the cluster holding node `op_type` of g, NULL if none */
static const fa_cluster *cluster_with(const fa_graph *g, const fa_plan *p, const char *name)
{
    for (int i = 0; i < p->n_clusters; i++)
        for (int k = 0; k < p->clusters[i].n_members; k++)
            if (!strcmp(g->nodes[p->clusters[i].members[k]]->name, name)) return &p->clusters[i];
    return NULL;
}

static void check_skip_norm(bool rms)
{
    fa_plan *p = NULL;
    fa_graph *g = NULL;
    skip_norm_model(rms, 0, &p, &g);
    const fa_cluster *c = cluster_with(g, p, "Add_0");
    if (!c) fail_msg("%s: the residual Add is in no cluster", g->name);
    printf("%s: cluster %s, %d members\n", g->name, c->label, c->n_members);
    assert_int_equal(c->kind, FA_CLUSTER_REDUCTION);
    /* its own pattern label (ONNX Runtime's SkipLayerNormalization / SkipSimplifiedLayerNormalization),
     * the norm's reduction kind and row kernel */
    assert_string_equal(c->label, rms ? "add+rms_norm" : "add+layer_norm");
    assert_int_equal(c->reduction, rms ? FA_REDUCE_RMS_NORM : FA_REDUCE_LAYER_NORM);
    assert_ptr_equal(cluster_with(g, p, "LayerNormalization_1") ? cluster_with(g, p, "LayerNormalization_1")
                                                                  : cluster_with(g, p, "RMSNormalization_1"), c);
    bool sum_out = false; /* the sum is written for the next residual add */
    for (int k = 0; k < c->n_outputs; k++) sum_out |= !strcmp(g->tensors[c->outputs[k]]->name, "s");
    assert_true(sum_out);
    fa_apply_result *r = apply_small(C, g, p);
    expect_verified_and_measured(c, &r->verdicts[c - p->clusters], "verified");
    fa_apply_result_free(r);
    fa_plan_free(p);
    fa_graph_free(g);
}

static void test_pre_ln_skip_layer_norm_writes_the_sum(void **s) { (void)s; check_skip_norm(false); }
static void test_pre_ln_skip_rms_norm_writes_the_sum(void **s) { (void)s; check_skip_norm(true); }

static void test_pre_ln_residual_after_a_gemm_stays_its_epilogue(void **state)
{
    (void)state;
    for (int form = 1; form <= 2; form++) {
        fa_plan *p = NULL;
        fa_graph *g = NULL;
        skip_norm_model(false, form, &p, &g);
        /* nodes: the GEMM, the Reshape or the bias Add, then Add_2 (the residual), LayerNormalization_3 */
        const fa_cluster *c = cluster_with(g, p, "Add_2"), *ln = cluster_with(g, p, "LayerNormalization_3");
        if (!c) fail_msg("%s: the residual Add is in no cluster", g->name);
        printf("%s: the residual add in %s\n", g->name, c->label);
        assert_int_equal(c->kind, FA_CLUSTER_EPILOGUE);
        if (form == 2) assert_string_equal(c->label, "matmul+add+add");
        assert_true(ln != c);
        if (ln) assert_string_equal(ln->label, "layer_norm"); /* the norm alone: no residual add in it */
        fa_plan_free(p);
        fa_graph_free(g);
    }
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
    struct CMUnitTest tests[N_FORMS + N_GEMM_FORMS + N_GEN_FORMS + 5 + N_BOTH_FORMS];
    for (int i = 0; i < N_FORMS; i++)
        tests[i] = (struct CMUnitTest){.name = k_forms[i].name, .test_func = test_epilogue_form,
                                       .initial_state = (void *)&k_forms[i]};
    for (int i = 0; i < N_GEMM_FORMS; i++)
        tests[N_FORMS + i] = (struct CMUnitTest){.name = k_gemm_forms[i].name, .test_func = test_gemm_form,
                                                 .initial_state = (void *)&k_gemm_forms[i]};
    for (int i = 0; i < N_GEN_FORMS; i++)
        tests[N_FORMS + N_GEMM_FORMS + i] = (struct CMUnitTest){.name = k_gen_forms[i].name, .test_func = test_gen_form,
                                                                .initial_state = (void *)&k_gen_forms[i]};
    tests[N_FORMS + N_GEMM_FORMS + N_GEN_FORMS] = (struct CMUnitTest){.name = "generated_epilogue_refused_on_cuda",
                                                                      .test_func = test_gen_refused_on_cuda};
    tests[N_FORMS + N_GEMM_FORMS + N_GEN_FORMS + 1] = (struct CMUnitTest){.name = "pre_ln_skip_layer_norm_writes_the_sum",
                                                            .test_func = test_pre_ln_skip_layer_norm_writes_the_sum};
    tests[N_FORMS + N_GEMM_FORMS + N_GEN_FORMS + 2] = (struct CMUnitTest){.name = "pre_ln_skip_rms_norm_writes_the_sum",
                                                            .test_func = test_pre_ln_skip_rms_norm_writes_the_sum};
    tests[N_FORMS + N_GEMM_FORMS + N_GEN_FORMS + 3] = (struct CMUnitTest){.name = "pre_ln_residual_after_a_gemm_stays_its_epilogue",
                                                            .test_func = test_pre_ln_residual_after_a_gemm_stays_its_epilogue};
    tests[N_FORMS + N_GEMM_FORMS + N_GEN_FORMS + 4] = (struct CMUnitTest){.name = "generated_epilogue_needs_an_emitter",
                                                                          .test_func = test_gen_needs_an_emitter};
    for (int i = 0; i < N_BOTH_FORMS; i++)
        tests[N_FORMS + N_GEMM_FORMS + N_GEN_FORMS + 5 + i] = (struct CMUnitTest){
            .name = k_both_forms[i].name, .test_func = test_both_paths_form, .initial_state = (void *)&k_both_forms[i]};
    return cmocka_run_group_tests(tests, setup, teardown);
}
