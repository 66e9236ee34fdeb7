/* tests/unit/test_dwconv — the depthwise convolution with its epilogue in registers
 * (runtime/cpu/dwconv.h): every output element against the direct sum in double within the
 * summation's rounding-error bound, over kernel sizes, strides, pads, a padded channel tail, a
 * batch and every epilogue it takes; and in the fused plan's executor (nChw16c), the tactic that
 * picks it (FA_CONV_TACTIC_OWN; MEASURED and DIRECT keep oneDNN's: docs/runtime.md). Skipped
 * (exit 77) on a CPU without AVX-512F, where the kernel is never used. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/post_op.h"
#include "runtime/cpu/dwconv.h"
#include "runtime/runtime.h"
#include "epilogue_ref.h"
#include "testutil.h"

typedef struct dw_case {
    int64_t n, c, ih, iw;
    int k, s, p;
} dw_case;

/* One case: x, w, b uniform in [-1, 1) (x), [-0.5, 0.5) (w, b); the kernel on the nChw16c copy of x
 * against the direct sum: |y - ref| <= gamma_K (|w|.|x| + |b|) + u |ref| before the epilogue (K =
 * k^2 + 1 terms, Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., Lemma 3.1), then
 * through it (epilogue_tol); the padded channel tail's outputs are act(0) = 0 for every epilogue here. */
static void run_case(const dw_case *c, const fa_post_op *op, bool with_bias)
{
    int64_t oh = (c->ih + 2 * c->p - c->k) / c->s + 1, ow = (c->iw + 2 * c->p - c->k) / c->s + 1, cb = (c->c + 15) / 16;
    size_t nx = (size_t)(c->n * c->c * c->ih * c->iw), nw = (size_t)(c->c * c->k * c->k);
    float *x = malloc(nx * sizeof(float)), *w = malloc(nw * sizeof(float)), *b = malloc((size_t)c->c * sizeof(float));
    size_t nxb = (size_t)(c->n * cb * 16 * c->ih * c->iw), nyb = (size_t)(c->n * cb * 16 * oh * ow);
    float *xb = calloc(nxb, sizeof(float)), *yb = malloc(nyb * sizeof(float));
    assert_true(x && w && b && xb && yb);
    fa_rng r;
    fa_rng_seed(&r, 11);
    for (size_t i = 0; i < nx; i++) x[i] = fa_rng_uniform(&r, -1.0f, 1.0f);
    for (size_t i = 0; i < nw; i++) w[i] = fa_rng_uniform(&r, -0.5f, 0.5f);
    for (int64_t i = 0; i < c->c; i++) b[i] = with_bias ? fa_rng_uniform(&r, -0.5f, 0.5f) : 0.0f;
    for (int64_t nb = 0; nb < c->n; nb++)
        for (int64_t ch = 0; ch < c->c; ch++)
            for (int64_t h = 0; h < c->ih; h++)
                for (int64_t v = 0; v < c->iw; v++)
                    xb[((((size_t)nb * cb + ch / 16) * c->ih + h) * c->iw + v) * 16 + ch % 16] =
                        x[(((size_t)nb * c->c + ch) * c->ih + h) * c->iw + v];
    for (size_t i = 0; i < nyb; i++) yb[i] = NAN; /* every element must be written */
    fa_dwconv_shape sh = {c->n, c->c, c->ih, c->iw, oh, ow, c->k, c->k, c->s, c->s, c->p, c->p};
    fa_dwconv *d = fa_dwconv_create(&sh, w, with_bias ? b : NULL, op, op ? 1 : 0);
    assert_non_null(d);
    fa_dwconv_run(d, xb, yb, 2);
    double u = ldexp(1.0, -24), K = (double)(c->k * c->k + 1), gamma = K * u / (1 - K * u), maxabs = 0;
    for (int64_t nb = 0; nb < c->n; nb++)
        for (int64_t ch = 0; ch < cb * 16; ch++)
            for (int64_t y0 = 0; y0 < oh; y0++)
                for (int64_t x0 = 0; x0 < ow; x0++) {
                    double got = yb[((((size_t)nb * cb + ch / 16) * oh + y0) * ow + x0) * 16 + ch % 16];
                    if (ch >= c->c) {
                        if (got != 0.0) fail_msg("padded channel %lld: %.9g, not 0", (long long)ch, got);
                        continue;
                    }
                    double ref = b[ch], mag = fabs(b[ch]);
                    for (int ky = 0; ky < c->k; ky++)
                        for (int kx = 0; kx < c->k; kx++) {
                            int64_t iy = y0 * c->s + ky - c->p, ix = x0 * c->s + kx - c->p;
                            if (iy < 0 || iy >= c->ih || ix < 0 || ix >= c->iw) continue;
                            double a = w[(ch * c->k + ky) * c->k + kx], v = x[(((size_t)nb * c->c + ch) * c->ih + iy) * c->iw + ix];
                            ref += a * v;
                            mag += fabs(a * v);
                        }
                    double want = epilogue_ref(op, ref), tol = epilogue_tol(op, ref, gamma * mag + u * fabs(ref));
                    maxabs = fmax(maxabs, fabs(want));
                    if (!(fabs(got - want) <= tol))
                        fail_msg("n%lld c%lld %lldx%lld k%d s%d p%d %s: y[%lld,%lld,%lld,%lld] = %.9g, want %.9g (error %.3g > %.3g)",
                                 (long long)c->n, (long long)c->c, (long long)c->ih, (long long)c->iw, c->k, c->s, c->p,
                                 op ? fa_post_op_name(op->kind) : "none", (long long)nb, (long long)ch, (long long)y0,
                                 (long long)x0, got, want, fabs(got - want), tol);
                }
    assert_true(maxabs > 0.05); /* a real convolution */
    fa_dwconv_free(d);
    free(x);
    free(w);
    free(b);
    free(xb);
    free(yb);
}

static void test_kernel_matches_the_direct_sum(void **s)
{
    (void)s;
    const dw_case cases[] = {
        {1, 32, 14, 14, 3, 1, 1},  /* interior blocks and both borders */
        {2, 20, 9, 11, 3, 1, 1},   /* a batch, a padded channel tail, a width short of a block */
        {1, 48, 15, 15, 3, 2, 1},  /* stride 2, an odd size */
        {1, 32, 28, 28, 5, 2, 2},  /* 5x5 stride 2 (EfficientNet) */
        {1, 16, 12, 21, 5, 1, 2},  /* 5x5 stride 1, a wide row */
        {1, 16, 7, 7, 7, 1, 3},    /* a kernel as large as the image (the generic copy) */
        {1, 96, 12, 12, 3, 1, 0},  /* no padding */
        {1, 16, 3, 40, 1, 1, 0},   /* 1x1 */
    };
    const fa_post_op ops[] = {
        {FA_POST_OP_RELU, 0, 0, -1},       {FA_POST_OP_LEAKY_RELU, 0.1f, 0, -1}, {FA_POST_OP_CLIP, 0, 6, -1},
        {FA_POST_OP_HARD_SWISH, 0, 0, -1}, {FA_POST_OP_SWISH, 1, 0, -1},         {FA_POST_OP_SWISH, 1.702f, 0, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case(&cases[i], NULL, true);
        run_case(&cases[i], NULL, false);
        for (size_t j = 0; j < sizeof ops / sizeof ops[0]; j++) run_case(&cases[i], &ops[j], true);
    }
}

static void test_unsupported_shapes_and_epilogues_refused(void **s)
{
    (void)s;
    float w[16 * 9] = {0};
    fa_dwconv_shape ok = {1, 16, 8, 8, 8, 8, 3, 3, 1, 1, 1, 1};
    fa_dwconv *d = fa_dwconv_create(&ok, w, NULL, NULL, 0);
    assert_non_null(d);
    fa_dwconv_free(d);
    const fa_post_op two[] = {{FA_POST_OP_RELU, 0, 0, -1}, {FA_POST_OP_RELU, 0, 0, -1}};
    const fa_post_op add[] = {{FA_POST_OP_ADD, 0, 0, 3}};
    const fa_post_op gelu[] = {{FA_POST_OP_GELU_ERF, 0, 0, -1}};
    assert_null(fa_dwconv_create(&ok, w, NULL, two, 2));
    assert_null(fa_dwconv_create(&ok, w, NULL, add, 1));
    assert_null(fa_dwconv_create(&ok, w, NULL, gelu, 1));
    fa_dwconv_shape big = ok;
    big.kh = big.kw = FA_DWCONV_KMAX + 1;
    assert_null(fa_dwconv_create(&big, w, NULL, NULL, 0));
    fa_dwconv_shape past = ok;
    past.oh = 20; /* rows past the input and its padding */
    assert_null(fa_dwconv_create(&past, w, NULL, NULL, 0));
    fa_dwconv_shape pad = ok;
    pad.ph = 3; /* a pad as large as the kernel: a window wholly in the padding */
    assert_null(fa_dwconv_create(&pad, w, NULL, NULL, 0));
}

enum { C = 24, H = 13, W_ = 13, K = 3 };

/* x [1, C, H, W] -> FusedConv depthwise K x K (group C, stride 1, pad 1) + bias + clip(0, 6) -> y */
static fa_graph *dw_graph(fa_ctx *ctx, float **wout, float **bout)
{
    fa_graph *g = fa_graph_create("dw");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {1, C, H, W_}, wd[4] = {C, 1, K, K}, bd[1] = {C}, yd[4] = {1, C, H, W_};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    fa_test_add_const(ctx, g, "w", 4, wd, -0.5f, 0.5f, 7);
    fa_test_add_const(ctx, g, "b", 1, bd, -0.5f, 0.5f, 8);
    size_t wb = sizeof(float) * C * K * K;
    *wout = malloc(wb);
    *bout = malloc(sizeof(float) * C);
    memcpy(*wout, g->tensors[fa_graph_find_tensor(g, "w")]->data, wb);
    memcpy(*bout, g->tensors[fa_graph_find_tensor(g, "b")]->data, sizeof(float) * C);
    int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {1, 1};
    const char *ins[] = {"x", "w", "b"}, *outs[] = {"y"};
    fa_node *n = fa_graph_add_node(ctx, g, "dw", "FusedConv", "ai.fuse-advise", 3, ins, 1, outs);
    fa_node_add_attr_ints(g, n, "pads", pads, 4);
    fa_node_add_attr_ints(g, n, "strides", strides, 2);
    fa_node_add_attr_ints(g, n, "kernel_shape", wd + 2, 2);
    fa_node_add_attr_int(g, n, "group", C);
    const fa_post_op po[] = {{FA_POST_OP_CLIP, 0, 6, -1}};
    assert_true(fa_post_ops_set_node(g, n, po, 1));
    fa_tensor_set_shape(g->tensors[fa_graph_find_tensor(g, "y")], FA_DTYPE_FLOAT, 4, yd);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    assert_int_equal(fa_graph_index(ctx, g), FA_OK);
    return g;
}

static const fa_node *conv_node(const fa_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i]->op_type, "FusedConv")) return g->nodes[i];
    fail_msg("no FusedConv");
    return NULL;
}

/* The fused plan's executor on nChw16c with tactic t: the convolution's kernel name, and its
 * output against the direct sum (the reorders around it plain in, plain out). */
static const char *exec_case(fa_conv_tactic t, char *name, size_t cap)
{
    fa_ctx *ctx = fa_ctx_create();
    float *w, *b;
    fa_graph *g = dw_graph(ctx, &w, &b);
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2, .blocked_layouts = true, .plan_layout = FA_LAYOUT_NCHW16C,
                          .conv_tactic = t};
    if (fa_exec_create(ctx, g, &eo, &e)) fail_msg("%s", fa_ctx_errmsg(ctx));
    const char *kn = fa_exec_kernel_name(e, conv_node(g));
    assert_non_null(kn);
    snprintf(name, cap, "%s", kn);
    static float x[C * H * W_];
    fa_rng r;
    fa_rng_seed(&r, 42);
    for (int i = 0; i < C * H * W_; i++) x[i] = fa_rng_uniform(&r, -2.0f, 2.0f);
    fa_value xv = {.data = x, .dtype = FA_DTYPE_FLOAT, .rank = 4, .dims = {1, C, H, W_}};
    assert_int_equal(fa_exec_set_input(ctx, e, 0, &xv), FA_OK);
    assert_int_equal(fa_exec_run(ctx, e, NULL), FA_OK);
    const float *y = fa_exec_output(e, 0)->data;
    double u = ldexp(1.0, -24), gamma = (K * K + 1) * u / (1 - (K * K + 1) * u);
    int clipped = 0;
    for (int c = 0; c < C; c++)
        for (int oy = 0; oy < H; oy++)
            for (int ox = 0; ox < W_; ox++) {
                double ref = b[c], mag = fabs(b[c]);
                for (int ky = 0; ky < K; ky++)
                    for (int kx = 0; kx < K; kx++) {
                        int iy = oy + ky - 1, ix = ox + kx - 1;
                        if (iy < 0 || iy >= H || ix < 0 || ix >= W_) continue;
                        double a = w[(c * K + ky) * K + kx] * (double)x[(c * H + iy) * W_ + ix];
                        ref += a;
                        mag += fabs(a);
                    }
                double want = fmin(fmax(ref, 0), 6), got = y[(c * H + oy) * W_ + ox];
                clipped += ref < 0;
                if (!(fabs(got - want) <= gamma * mag + u * fabs(ref)))
                    fail_msg("kernel '%s': y[%d,%d,%d] = %.9g, want %.9g", kn, c, oy, ox, got, want);
            }
    assert_true(clipped > 0); /* the epilogue ran */
    fa_exec_free(e);
    fa_graph_free(g);
    free(w);
    free(b);
    fa_ctx_free(ctx);
    return name;
}

static void test_tactic_in_the_fused_plan(void **s)
{
    (void)s;
    char n1[128], n2[128];
    assert_string_equal(exec_case(FA_CONV_TACTIC_OWN, n1, sizeof n1), "depthwise+post-ops(nChw16c)");
    assert_null(strstr(exec_case(FA_CONV_TACTIC_DIRECT, n1, sizeof n1), "depthwise"));
    assert_null(strstr(exec_case(FA_CONV_TACTIC_MEASURED, n2, sizeof n2), "depthwise"));
}

int main(void)
{
    unsetenv("FA_CONV_TACTIC");
    if (!fa_dwconv_available()) {
        printf("SKIP: no AVX-512F here; the depthwise kernel is never used\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_matches_the_direct_sum),
        cmocka_unit_test(test_unsupported_shapes_and_epilogues_refused),
        cmocka_unit_test(test_tactic_in_the_fused_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
