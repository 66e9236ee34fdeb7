/* tests/unit/test_dnnl_ops — the oneDNN kernels of runtime/cpu/dnnl_ops.c (depthwise/grouped
 * Conv, pools, Softmax/LogSoftmax, LayerNormalization) compute what our reference kernels
 * compute, attribute combination by attribute combination (asymmetric pads, auto_pad, ceil_mode,
 * count_include_pad, dilations, the Softmax axis of opsets < 13 and >= 13, LayerNorm axis and
 * epsilon), that they are the kernels the executor chose where they should be, and that the
 * combinations oneDNN cannot express exactly fall back to our kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "runtime/runtime.h"
#include "graph/vmath.h"
#include "testutil.h"

enum { ANY, LIB, OURS, ROWS };

typedef struct op_case {
    const char *name;
    const char *op;
    int opset;
    int rank;
    int64_t x[5];
    int64_t group, cout, kernel[3]; /* Conv: W [cout, C/group, kernel...] */
    bool bias;
    const char *auto_pad;
    int n_pads;
    int64_t pads[6];
    int n_k; /* pools: kernel_shape count (kernel[]) */
    int64_t strides[3], dilations[3]; /* 0: attribute absent */
    int ceil_mode, count_include_pad;
    int64_t axis; bool has_axis;
    float epsilon;
    int ln_param_rank; int64_t ln_param[3]; bool ln_bias, ln_mean_out;
    int expect; /* LIB: the executor must pick the oneDNN kernel; OURS: must not (semantics); ANY: a speed choice;
                   ROWS: a softmax over rows, ours on a CPU with AVX-512F (graph/vmath512.c, faster), else oneDNN's */
} op_case;

static void add_const(fa_ctx *ctx, fa_graph *g, const char *name, int rank, const int64_t *dims, uint64_t seed)
{
    int t = fa_graph_tensor(g, name);
    fa_tensor_set_shape(g->tensors[t], FA_DTYPE_FLOAT, rank, dims);
    int64_t n = fa_tensor_numel(g->tensors[t]);
    float *d = malloc(sizeof(float) * (size_t)n);
    fa_rng r;
    fa_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) d[i] = fa_rng_uniform(&r, -0.5f, 0.5f) + (seed == 7 ? 1.0f : 0.0f);
    assert_int_equal(fa_tensor_set_data(ctx, g->tensors[t], d, sizeof(float) * (size_t)n), FA_OK);
    g->tensors[t]->flags |= FA_TENSOR_INITIALIZER;
    free(d);
}

static fa_graph *build(fa_ctx *ctx, const op_case *c)
{
    fa_graph *g = fa_graph_create(c->name);
    fa_graph_set_opset(ctx, g, "", c->opset ? c->opset : 17);
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, c->rank, c->x);
    fa_graph_add_input(ctx, g, x);
    const char *ins[3] = {"x", NULL, NULL}, *outs[3] = {"y", NULL, NULL};
    int n_in = 1, n_out = 1, ns = c->rank - 2;
    if (!strcmp(c->op, "Conv")) {
        int64_t wd[5] = {c->cout, c->x[1] / c->group};
        for (int i = 0; i < ns; i++) wd[2 + i] = c->kernel[i];
        add_const(ctx, g, "w", c->rank, wd, 1);
        ins[n_in++] = "w";
        if (c->bias) {
            add_const(ctx, g, "b", 1, &c->cout, 2);
            ins[n_in++] = "b";
        }
    } else if (!strcmp(c->op, "LayerNormalization")) {
        add_const(ctx, g, "scale", c->ln_param_rank, c->ln_param, 7);
        ins[n_in++] = "scale";
        if (c->ln_bias) {
            add_const(ctx, g, "bias", c->ln_param_rank, c->ln_param, 3);
            ins[n_in++] = "bias";
        }
        if (c->ln_mean_out) outs[n_out++] = "mean";
    }
    fa_node *n = fa_graph_add_node(ctx, g, "node", c->op, "", n_in, ins, n_out, outs);
    if (c->group > 1) fa_node_add_attr_int(g, n, "group", c->group);
    if (c->auto_pad) fa_node_add_attr_string(g, n, "auto_pad", c->auto_pad);
    if (c->n_pads) fa_node_add_attr_ints(g, n, "pads", c->pads, c->n_pads);
    if (c->n_k) fa_node_add_attr_ints(g, n, "kernel_shape", c->kernel, c->n_k);
    if (c->strides[0]) fa_node_add_attr_ints(g, n, "strides", c->strides, ns);
    if (c->dilations[0]) fa_node_add_attr_ints(g, n, "dilations", c->dilations, ns);
    if (c->ceil_mode) fa_node_add_attr_int(g, n, "ceil_mode", 1);
    if (c->count_include_pad) fa_node_add_attr_int(g, n, "count_include_pad", 1);
    if (c->has_axis) fa_node_add_attr_int(g, n, "axis", c->axis);
    if (c->epsilon > 0) fa_node_add_attr_float(g, n, "epsilon", c->epsilon);
    for (int o = 0; o < n_out; o++) fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, outs[o]));
    fa_status st = fa_graph_prepare(ctx, g, NULL);
    if (st) fail_msg("%s: %s", c->name, fa_ctx_errmsg(ctx));
    return g;
}

/* Run g once with input values in [-3, 3), plus a few masked (-1e9) entries for a softmax, as
 * attention masks give; returns output 0 (malloc'd) and the kernel's name. */
static float *run_once(fa_ctx *ctx, const fa_graph *g, int64_t *n, char *kname, size_t kcap)
{
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2};
    if (fa_exec_create(ctx, g, &eo, &e)) fail_msg("%s: %s", g->name, fa_ctx_errmsg(ctx));
    const fa_tensor *xt = g->tensors[g->inputs[0]];
    fa_value xv = {.dtype = FA_DTYPE_FLOAT, .rank = xt->rank};
    memcpy(xv.dims, xt->dims, sizeof xv.dims);
    int64_t nx = fa_value_numel(&xv);
    float *xd = malloc(sizeof(float) * (size_t)nx);
    fa_rng r;
    fa_rng_seed(&r, 99);
    /* the masked entries only where a mask is what the op meets (a softmax): elsewhere an output
     * of 1e9 would make the relative comparison blind to errors of the ordinary elements (a
     * convolution's bias) */
    const char *op = g->nodes[g->topo[0]]->op_type;
    bool masked = !strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax");
    for (int64_t i = 0; i < nx; i++) xd[i] = (masked && i % 17 == 5) ? -1e9f : fa_rng_uniform(&r, -3.0f, 3.0f);
    xv.data = xd;
    assert_int_equal(fa_exec_set_input(ctx, e, 0, &xv), FA_OK);
    if (fa_exec_run(ctx, e, NULL)) fail_msg("%s: %s", g->name, fa_ctx_errmsg(ctx));
    const fa_value *v = fa_exec_output(e, 0);
    *n = fa_value_numel(v);
    float *out = malloc(sizeof(float) * (size_t)*n);
    memcpy(out, v->data, sizeof(float) * (size_t)*n);
    const char *k = fa_exec_kernel_name(e, g->nodes[0]);
    snprintf(kname, kcap, "%s", k ? k : "?");
    fa_exec_free(e);
    free(xd);
    return out;
}

static void check_case(const op_case *c)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = build(ctx, c);
    char k_lib[64], k_ref[64];
    int64_t n1, n2;
    unsetenv("FA_NO_DNNL_OPS");
    float *a = run_once(ctx, g, &n1, k_lib, sizeof k_lib);
    setenv("FA_NO_DNNL_OPS", "1", 1);
    float *b = run_once(ctx, g, &n2, k_ref, sizeof k_ref);
    unsetenv("FA_NO_DNNL_OPS");
    assert_int_equal(n1, n2);
    bool lib = !strncmp(k_lib, "dnnl:", 5) && strcmp(k_lib, k_ref) != 0;
    int expect = c->expect == ROWS ? (fa_vmath512_available() ? OURS : LIB) : c->expect;
    if (expect == LIB && !lib) fail_msg("%s: expected a oneDNN kernel, the executor chose '%s'", c->name, k_lib);
    if (expect == OURS && lib) fail_msg("%s: oneDNN cannot express this case exactly, yet '%s' ran", c->name, k_lib);
    double maxref = 0, maxdiff = 0;
    for (int64_t i = 0; i < n1; i++) {
        if (isnan(a[i]) != isnan(b[i])) fail_msg("%s: element %lld: %g vs %g", c->name, (long long)i, a[i], b[i]);
        if (isnan(b[i])) continue;
        maxref = fmax(maxref, fabs(b[i]));
        maxdiff = fmax(maxdiff, fabs((double)a[i] - b[i]));
    }
    double rel = maxdiff / fmax(maxref, 1e-12);
    if (rel > 1e-5) fail_msg("%s (%s vs %s): max relative difference %g", c->name, k_lib, k_ref, rel);
    free(a);
    free(b);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

#define X4(a, b, c, d) .rank = 4, .x = {a, b, c, d}

static const op_case conv_cases[] = {
    {"depthwise 3x3 pads 1 bias", "Conv", 17, X4(1, 16, 13, 11), 16, 16, {3, 3}, true, NULL, 4, {1, 1, 1, 1}, .expect = LIB},
    {"depthwise stride 2 asymmetric pads", "Conv", 17, X4(2, 16, 15, 12), 16, 16, {3, 3}, false, NULL, 4, {0, 1, 1, 2},
     .strides = {2, 2}, .expect = LIB},
    {"depthwise dilation 2", "Conv", 17, X4(1, 16, 14, 14), 16, 16, {3, 3}, true, NULL, 4, {2, 2, 2, 2}, .dilations = {2, 2},
     .expect = LIB},
    /* a channel multiplier of 2: oneDNN 2.6 picks gemm on any layout, dnnl.c runs it */
    {"depthwise channel multiplier 2", "Conv", 17, X4(1, 8, 10, 9), 8, 16, {3, 3}, true, NULL, 4, {1, 1, 1, 1}},
    {"depthwise SAME_LOWER stride 2", "Conv", 17, X4(1, 16, 11, 11), 16, 16, {3, 3}, true, "SAME_LOWER", .strides = {2, 2},
     .expect = LIB},
    {"grouped 4 SAME_UPPER stride 2", "Conv", 17, X4(1, 16, 11, 10), 4, 8, {3, 3}, true, "SAME_UPPER", .strides = {2, 2}},
    /* 1-D grouped convolutions run as the 2-D ones over [N, C, 1, W]: oneDNN's jit kernels, not its gemm */
    {"depthwise 1-D k5", "Conv", 17, .rank = 3, .x = {1, 16, 20}, 16, 16, {5}, true, NULL, 2, {2, 2}, .expect = LIB},
    {"depthwise 1-D k9 stride 2 asymmetric pads", "Conv", 17, .rank = 3, .x = {2, 32, 37}, 32, 32, {9}, true, NULL, 2,
     {4, 3}, .strides = {2}, .expect = LIB},
    {"grouped 2 1-D k3 dilation 2", "Conv", 17, .rank = 3, .x = {2, 32, 29}, 2, 32, {3}, false, NULL, 2, {2, 2},
     .dilations = {2}},
    /* one-tap 1-D convolutions run as oneDNN's matmul, batched over the groups, looped over the batch,
     * the bias added after (runtime/cpu/dnnl_ops.c create_conv1x1_matmul) */
    {"1-D k1 bias batch 3", "Conv", 17, .rank = 3, .x = {3, 24, 19}, 1, 40, {1}, true, .expect = LIB},
    {"1-D k1 grouped 4 bias", "Conv", 17, .rank = 3, .x = {2, 32, 21}, 4, 48, {1}, true, .expect = LIB},
    {"1-D k1 grouped 8 no bias", "Conv", 17, .rank = 3, .x = {2, 64, 17}, 8, 16, {1}, false, .expect = LIB},
    {"1-D k1 stride 2 (not a product)", "Conv", 17, .rank = 3, .x = {2, 16, 17}, 1, 16, {1}, true, .strides = {2}},
    {"1-D k1 padded (not a product)", "Conv", 17, .rank = 3, .x = {2, 16, 17}, 1, 16, {1}, true, NULL, 2, {1, 1}},
};

static const op_case pool_cases[] = {
    {"maxpool k3 s2 p1", "MaxPool", 17, X4(1, 8, 14, 14), .kernel = {3, 3}, .n_k = 2, .n_pads = 4, .pads = {1, 1, 1, 1},
     .strides = {2, 2}, .expect = LIB},
    {"maxpool ceil_mode", "MaxPool", 17, X4(1, 4, 12, 12), .kernel = {3, 3}, .n_k = 2, .strides = {2, 2}, .ceil_mode = 1,
     .expect = LIB},
    {"maxpool floor drops the last column", "MaxPool", 17, X4(1, 4, 12, 12), .kernel = {3, 3}, .n_k = 2, .strides = {2, 2},
     .expect = LIB},
    {"maxpool dilation 2 asymmetric pads", "MaxPool", 17, X4(1, 4, 10, 9), .kernel = {2, 2}, .n_k = 2, .n_pads = 4,
     .pads = {1, 0, 0, 1}, .dilations = {2, 2}, .expect = LIB},
    {"maxpool SAME_LOWER", "MaxPool", 17, X4(1, 4, 9, 10), .kernel = {3, 3}, .n_k = 2, .auto_pad = "SAME_LOWER",
     .strides = {2, 2}, .expect = LIB},
    {"maxpool 3-D", "MaxPool", 17, .rank = 5, .x = {1, 3, 6, 6, 5}, .kernel = {2, 2, 2}, .n_k = 3, .strides = {2, 2, 2},
     .expect = LIB},
    /* a one-tap depth window (a video net's 1x3x3) runs as the 2-D pool over [N, C·D, H, W] */
    {"maxpool 3-D 1x3x3 depth folded", "MaxPool", 17, .rank = 5, .x = {2, 3, 4, 9, 9}, .kernel = {1, 3, 3}, .n_k = 3,
     .n_pads = 6, .pads = {0, 1, 1, 0, 1, 1}, .strides = {1, 2, 2}, .expect = LIB},
    {"avgpool 3-D 1x3x3 depth folded", "AveragePool", 17, .rank = 5, .x = {2, 3, 4, 9, 8}, .kernel = {1, 3, 3}, .n_k = 3,
     .n_pads = 6, .pads = {0, 1, 1, 0, 0, 1}, .strides = {1, 2, 2}, .expect = LIB},
    {"maxpool 3-D 1x1x3 two dims folded", "MaxPool", 17, .rank = 5, .x = {2, 3, 4, 5, 9}, .kernel = {1, 1, 3}, .n_k = 3,
     .strides = {1, 1, 2}, .expect = LIB},
    /* a one-tap depth window with a depth stride is not folded */
    {"maxpool 3-D 1x3x3 depth stride 2", "MaxPool", 17, .rank = 5, .x = {2, 3, 5, 9, 9}, .kernel = {1, 3, 3}, .n_k = 3,
     .strides = {2, 2, 2}, .expect = ANY},
    {"avgpool exclude pad", "AveragePool", 17, X4(1, 8, 13, 13), .kernel = {3, 3}, .n_k = 2, .n_pads = 4, .pads = {1, 1, 1, 1},
     .strides = {2, 2}, .expect = LIB},
    {"avgpool include pad", "AveragePool", 17, X4(1, 8, 13, 13), .kernel = {3, 3}, .n_k = 2, .n_pads = 4, .pads = {1, 1, 1, 1},
     .count_include_pad = 1, .expect = LIB},
    {"avgpool include pad asymmetric", "AveragePool", 17, X4(1, 8, 6, 6), .kernel = {7, 7}, .n_k = 2, .n_pads = 4,
     .pads = {0, 0, 1, 1}, .count_include_pad = 1, .expect = LIB},
    {"avgpool exclude pad ceil_mode", "AveragePool", 17, X4(1, 4, 11, 11), .kernel = {3, 3}, .n_k = 2, .n_pads = 4,
     .pads = {1, 1, 1, 1}, .strides = {2, 2}, .ceil_mode = 1, .expect = LIB},
    /* ONNX divides by the taps inside the declared padding, oneDNN by the kernel: ours runs */
    {"avgpool include pad ceil_mode past the pads", "AveragePool", 17, X4(1, 4, 12, 12), .kernel = {3, 3}, .n_k = 2,
     .n_pads = 4, .pads = {1, 1, 1, 1}, .strides = {2, 2}, .ceil_mode = 1, .count_include_pad = 1, .expect = OURS},
    {"avgpool dilations (opset 19)", "AveragePool", 19, X4(1, 4, 12, 12), .kernel = {2, 2}, .n_k = 2, .dilations = {2, 2}, .expect = OURS},
    {"avgpool 1-D", "AveragePool", 17, .rank = 3, .x = {2, 4, 17}, .kernel = {4}, .n_k = 1, .strides = {3}, .expect = LIB},
    /* plain GlobalAveragePool is ours (a vectorised plane sum, one thread under 256k elements):
     * faster than oneDNN's jit pooling on every squeeze-excitation shape (bench/README.md) */
    {"global average pool", "GlobalAveragePool", 17, X4(2, 6, 5, 7), .expect = OURS},
    {"global max pool", "GlobalMaxPool", 17, X4(2, 6, 5, 7), .expect = LIB},
    {"global average pool 3-D", "GlobalAveragePool", 17, .rank = 5, .x = {1, 3, 4, 5, 6}, .expect = OURS},
};

static const op_case softmax_cases[] = {
    {"softmax opset 11 axis 1 (2-D coercion)", "Softmax", 11, X4(2, 3, 4, 5), .axis = 1, .has_axis = true, .expect = ROWS},
    {"softmax opset 11 default axis", "Softmax", 11, X4(2, 3, 4, 5), .expect = ROWS},
    {"softmax opset 11 axis 2", "Softmax", 11, X4(2, 3, 4, 5), .axis = 2, .has_axis = true, .expect = ROWS},
    {"softmax opset 13 axis 1 (one axis)", "Softmax", 13, X4(2, 3, 4, 5), .axis = 1, .has_axis = true, .expect = LIB},
    {"softmax opset 13 default axis", "Softmax", 13, X4(2, 12, 16, 16), .expect = ROWS},
    {"softmax opset 13 axis 0", "Softmax", 13, X4(3, 2, 4, 5), .axis = 0, .has_axis = true, .expect = LIB},
    {"logsoftmax opset 13 axis -2", "LogSoftmax", 13, X4(2, 3, 4, 5), .axis = -2, .has_axis = true, .expect = LIB},
    {"logsoftmax opset 11 axis 2", "LogSoftmax", 11, X4(2, 3, 4, 5), .axis = 2, .has_axis = true, .expect = ROWS},
};

static const op_case layernorm_cases[] = {
    {"layernorm last axis", "LayerNormalization", 17, .rank = 3, .x = {2, 5, 16}, .ln_param_rank = 1, .ln_param = {16},
     .ln_bias = true, .expect = LIB},
    {"layernorm axis 1 over two dims", "LayerNormalization", 17, .rank = 3, .x = {2, 3, 8}, .axis = 1, .has_axis = true,
     .ln_param_rank = 2, .ln_param = {3, 8}, .ln_bias = true, .expect = LIB},
    {"layernorm no bias epsilon 1e-2", "LayerNormalization", 17, .rank = 3, .x = {2, 5, 16}, .epsilon = 1e-2f,
     .ln_param_rank = 1, .ln_param = {16}, .expect = LIB},
    {"layernorm scale with a leading 1", "LayerNormalization", 17, .rank = 3, .x = {2, 5, 16}, .ln_param_rank = 2,
     .ln_param = {1, 16}, .ln_bias = true, .expect = LIB},
    /* Mean requested: oneDNN's statistics are not ONNX's outputs here, ours runs */
    {"layernorm with Mean output", "LayerNormalization", 17, .rank = 3, .x = {2, 5, 16}, .ln_param_rank = 1,
     .ln_param = {16}, .ln_bias = true, .ln_mean_out = true, .expect = OURS},
    /* Scale broadcast along the normalized dims: not oneDNN's per-element scale, ours runs */
    {"layernorm scale broadcast over a normalized dim", "LayerNormalization", 17, .rank = 3, .x = {2, 3, 8}, .axis = 1,
     .has_axis = true, .ln_param_rank = 2, .ln_param = {1, 8}, .ln_bias = false, .expect = OURS},
};

static void run_cases(const op_case *cs, size_t n)
{
    for (size_t i = 0; i < n; i++) check_case(&cs[i]);
}

static void test_dnnl_grouped_conv_matches_reference(void **s) { (void)s; run_cases(conv_cases, sizeof conv_cases / sizeof *conv_cases); }
static void test_dnnl_pools_match_reference_and_decline_what_onednn_cannot_express(void **s)
{
    (void)s;
    run_cases(pool_cases, sizeof pool_cases / sizeof *pool_cases);
}
static void test_dnnl_softmax_axis_semantics_of_both_opsets(void **s) { (void)s; run_cases(softmax_cases, sizeof softmax_cases / sizeof *softmax_cases); }
static void test_dnnl_layernorm_matches_reference(void **s) { (void)s; run_cases(layernorm_cases, sizeof layernorm_cases / sizeof *layernorm_cases); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dnnl_grouped_conv_matches_reference),
        cmocka_unit_test(test_dnnl_pools_match_reference_and_decline_what_onednn_cannot_express),
        cmocka_unit_test(test_dnnl_softmax_axis_semantics_of_both_opsets),
        cmocka_unit_test(test_dnnl_layernorm_matches_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
