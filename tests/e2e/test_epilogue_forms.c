/* tests/e2e/test_epilogue_forms — epilogues as exporters write them, each on a small model built
 * here: SiLU as x·Sigmoid(x), HardSwish as x·HardSigmoid(x) and as x·Clip(x+3,0,6)/6, GELU as its
 * erf and tanh subgraphs after a MatMul + bias, ReLU6 as Clip(0,6) after Conv + BN, and the
 * residual Add + Relu after Conv + BN, MatMul/Gemm epilogues across a view-only Reshape. Each becomes one epilogue cluster with the typed post-ops
 * expected, and fa_apply verifies the fused oneDNN kernel numerically against the unfused ops
 * (the rounding-error bound of applier/bound.c). */
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

/* x [1,16,8,8] -> Conv 3x3 (16 -> 16, bias) -> "c"; with_bn: -> BatchNormalization -> "c" */
static fa_graph *conv_model(const char *name, bool with_bn)
{
    fa_graph *g = fa_graph_create(name);
    assert_int_equal(fa_graph_set_opset(C, g, "", 17), FA_OK);
    int64_t xd[4] = {1, 16, 8, 8}, wd[4] = {16, 16, 3, 3}, cd[1] = {16};
    tensor(g, "x", 4, xd, true);
    weights(g, "w", 4, wd, 1, -0.3f, 0.3f);
    weights(g, "b", 1, cd, 2, -0.5f, 0.5f);
    int64_t pads[4] = {1, 1, 1, 1};
    fa_node *conv = node(g, "Conv", "x,w,b", with_bn ? "c0" : "c");
    fa_node_add_attr_ints(g, conv, "pads", pads, 4);
    if (with_bn) {
        weights(g, "scale", 1, cd, 3, 0.5f, 1.5f);
        weights(g, "shift", 1, cd, 4, -0.5f, 0.5f);
        weights(g, "mean", 1, cd, 5, -0.5f, 0.5f);
        weights(g, "var", 1, cd, 6, 0.5f, 1.5f);
        node(g, "BatchNormalization", "c0,scale,shift,mean,var", "c");
    }
    return g;
}

/* x [8,64] -> MatMul W [64,32] -> Add bias [32] -> "c" */
static fa_graph *matmul_model(const char *name)
{
    fa_graph *g = fa_graph_create(name);
    assert_int_equal(fa_graph_set_opset(C, g, "", 17), FA_OK);
    int64_t xd[2] = {8, 64}, wd[2] = {64, 32}, bd[1] = {32};
    tensor(g, "x", 2, xd, true);
    weights(g, "w", 2, wd, 1, -0.3f, 0.3f);
    weights(g, "bias", 1, bd, 2, -0.5f, 0.5f);
    node(g, "MatMul", "x,w", "m");
    node(g, "Add", "m,bias", "c");
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

static void test_conv_silu_as_x_times_sigmoid(void **s)
{
    (void)s;
    fa_graph *g = conv_model("conv_silu", false);
    node(g, "Sigmoid", "c", "sg");
    node(g, "Mul", "c,sg", "y");
    finish(g, "y");
    const fa_post_op_kind want[] = {FA_POST_OP_SWISH};
    expect_epilogue(g, want, 1, 1.0f);
}

static void test_conv_bn_hardswish_as_x_times_hardsigmoid(void **s)
{
    (void)s;
    fa_graph *g = conv_model("conv_bn_hardswish_hardsigmoid", true);
    fa_node *hs = node(g, "HardSigmoid", "c", "h");
    fa_node_add_attr_float(g, hs, "alpha", 1.0f / 6.0f);
    fa_node_add_attr_float(g, hs, "beta", 0.5f);
    node(g, "Mul", "c,h", "y");
    finish(g, "y");
    const fa_post_op_kind want[] = {FA_POST_OP_HARD_SWISH};
    expect_epilogue(g, want, 1, NAN);
}

static void test_conv_hardswish_as_x_times_clip_div_6(void **s)
{
    (void)s;
    fa_graph *g = conv_model("conv_hardswish_clip", false);
    weights(g, "three", 0, NULL, 0, 3.0f, 0);
    weights(g, "zero", 0, NULL, 0, 0.0f, 0);
    weights(g, "six", 0, NULL, 0, 6.0f, 0);
    weights(g, "six_b", 0, NULL, 0, 6.0f, 0);
    node(g, "Add", "c,three", "a");
    node(g, "Clip", "a,zero,six", "k");
    node(g, "Mul", "c,k", "m");
    node(g, "Div", "m,six_b", "y");
    finish(g, "y");
    const fa_post_op_kind want[] = {FA_POST_OP_HARD_SWISH};
    expect_epilogue(g, want, 1, NAN);
}

static void test_matmul_bias_gelu_erf_subgraph(void **s)
{
    (void)s;
    fa_graph *g = matmul_model("matmul_gelu_erf");
    weights(g, "sqrt2", 0, NULL, 0, 1.41421356f, 0);
    weights(g, "one", 0, NULL, 0, 1.0f, 0);
    weights(g, "half", 0, NULL, 0, 0.5f, 0);
    node(g, "Div", "c,sqrt2", "d");
    node(g, "Erf", "d", "e");
    node(g, "Add", "e,one", "f");
    node(g, "Mul", "c,f", "g");
    node(g, "Mul", "g,half", "y");
    finish(g, "y");
    const fa_post_op_kind want[] = {FA_POST_OP_ADD, FA_POST_OP_GELU_ERF};
    expect_epilogue(g, want, 2, 0.0f);
}

static void test_matmul_bias_gelu_tanh_subgraph(void **s)
{
    (void)s;
    fa_graph *g = matmul_model("matmul_gelu_tanh");
    weights(g, "three", 0, NULL, 0, 3.0f, 0);
    weights(g, "k", 0, NULL, 0, 0.044715f, 0);
    weights(g, "s2pi", 0, NULL, 0, 0.7978845608f, 0);
    weights(g, "one", 0, NULL, 0, 1.0f, 0);
    weights(g, "half", 0, NULL, 0, 0.5f, 0);
    node(g, "Pow", "c,three", "p");
    node(g, "Mul", "p,k", "q");
    node(g, "Add", "c,q", "r");
    node(g, "Mul", "r,s2pi", "t");
    node(g, "Tanh", "t", "th");
    node(g, "Add", "th,one", "u");
    node(g, "Mul", "c,half", "hx");
    node(g, "Mul", "hx,u", "y");
    finish(g, "y");
    const fa_post_op_kind want[] = {FA_POST_OP_ADD, FA_POST_OP_GELU_TANH};
    expect_epilogue(g, want, 2, 0.0f);
}

static void test_conv_bn_relu6_as_clip(void **s)
{
    (void)s;
    fa_graph *g = conv_model("conv_bn_relu6", true);
    weights(g, "zero", 0, NULL, 0, 0.0f, 0);
    weights(g, "six", 0, NULL, 0, 6.0f, 0);
    node(g, "Clip", "c,zero,six", "y");
    finish(g, "y");
    const fa_post_op_kind want[] = {FA_POST_OP_CLIP};
    expect_epilogue(g, want, 1, 0.0f);
}

static void test_conv_bn_residual_add_relu(void **s)
{
    (void)s;
    fa_graph *g = conv_model("conv_bn_add_relu", true);
    int64_t rd[4] = {1, 16, 8, 8};
    tensor(g, "skip", 4, rd, true);
    node(g, "Add", "c,skip", "a");
    node(g, "Relu", "a", "y");
    finish(g, "y");
    const fa_post_op_kind want[] = {FA_POST_OP_ADD, FA_POST_OP_RELU};
    expect_epilogue(g, want, 2, 0.0f);
}

/* x [6,32] -> MatMul W [32,16] -> Reshape [2,3,16] -> Add bias [16] -> Relu: the epilogue crosses
 * the view (the last dimension kept), the bias stays a per-column operand */
static void test_matmul_reshape_bias_relu(void **s)
{
    (void)s;
    fa_graph *g = fa_graph_create("matmul_reshape_bias_relu");
    assert_int_equal(fa_graph_set_opset(C, g, "", 17), FA_OK);
    int64_t xd[2] = {6, 32}, wd[2] = {32, 16}, bd[1] = {16}, sd[1] = {3}, shape[3] = {2, 3, 16};
    tensor(g, "x", 2, xd, true);
    weights(g, "w", 2, wd, 1, -0.3f, 0.3f);
    weights(g, "bias", 1, bd, 2, -0.5f, 0.5f);
    int t = fa_graph_tensor(g, "shape");
    fa_tensor_set_shape(g->tensors[t], FA_DTYPE_INT64, 1, sd);
    assert_int_equal(fa_tensor_set_data(C, g->tensors[t], shape, sizeof shape), FA_OK);
    g->tensors[t]->flags |= FA_TENSOR_INITIALIZER;
    node(g, "MatMul", "x,w", "m");
    node(g, "Reshape", "m,shape", "v");
    node(g, "Add", "v,bias", "a");
    node(g, "Relu", "a", "y");
    finish(g, "y");
    const fa_post_op_kind want[] = {FA_POST_OP_ADD, FA_POST_OP_RELU};
    expect_epilogue(g, want, 2, 0.0f);
}

/* Gemm (bias C) -> Reshape [2,3,16] -> residual Add of a [2,3,16] input -> Relu */
static void test_gemm_reshape_residual_add_relu(void **s)
{
    (void)s;
    fa_graph *g = fa_graph_create("gemm_reshape_residual_relu");
    assert_int_equal(fa_graph_set_opset(C, g, "", 17), FA_OK);
    int64_t xd[2] = {6, 32}, wd[2] = {32, 16}, bd[1] = {16}, sd[1] = {3}, shape[3] = {2, 3, 16}, rd[3] = {2, 3, 16};
    tensor(g, "x", 2, xd, true);
    tensor(g, "skip", 3, rd, true);
    weights(g, "w", 2, wd, 1, -0.3f, 0.3f);
    weights(g, "c", 1, bd, 2, -0.5f, 0.5f);
    int t = fa_graph_tensor(g, "shape");
    fa_tensor_set_shape(g->tensors[t], FA_DTYPE_INT64, 1, sd);
    assert_int_equal(fa_tensor_set_data(C, g->tensors[t], shape, sizeof shape), FA_OK);
    g->tensors[t]->flags |= FA_TENSOR_INITIALIZER;
    node(g, "Gemm", "x,w,c", "m");
    node(g, "Reshape", "m,shape", "v");
    node(g, "Add", "v,skip", "a");
    node(g, "Relu", "a", "y");
    finish(g, "y");
    const fa_post_op_kind want[] = {FA_POST_OP_ADD, FA_POST_OP_RELU};
    expect_epilogue(g, want, 2, 0.0f);
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
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_silu_as_x_times_sigmoid),
        cmocka_unit_test(test_conv_bn_hardswish_as_x_times_hardsigmoid),
        cmocka_unit_test(test_conv_hardswish_as_x_times_clip_div_6),
        cmocka_unit_test(test_matmul_bias_gelu_erf_subgraph),
        cmocka_unit_test(test_matmul_bias_gelu_tanh_subgraph),
        cmocka_unit_test(test_conv_bn_relu6_as_clip),
        cmocka_unit_test(test_conv_bn_residual_add_relu),
        cmocka_unit_test(test_matmul_reshape_bias_relu),
        cmocka_unit_test(test_gemm_reshape_residual_add_relu),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
