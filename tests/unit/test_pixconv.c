/* tests/unit/test_pixconv — the convolution on one pixel (runtime/cpu/pixconv.h): every output
 * against the dot product in double within the summation's rounding-error bound, over input and
 * output counts with and without 16-lane tails, a padded output tail, one and two threads and every
 * epilogue it takes; what it refuses; and in the executors (the fused plan's on nChw16c, the plain
 * unfused one), which convolutions take it (a 1 x 1 input, kernel 1 x 1, batch 1) and which keep
 * oneDNN's (a 2 x 2 input, FA_PIXEL_CONV=0). Skipped (exit 77) on a CPU without AVX-512F, where the
 * kernel is never used. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/post_op.h"
#include "runtime/cpu/pixconv.h"
#include "runtime/runtime.h"
#include "epilogue_ref.h"
#include "testutil.h"

/* One case: x in [-1, 1), w and b in [-0.5, 0.5); |y - ref| <= gamma_(K+1) (|w|.|x| + |b|) + u |ref|
 * before the epilogue (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., Lemma
 * 3.1), then through it (epilogue_tol); the padded tail exactly 0. */
static void run_case(int64_t K, int64_t N, int64_t padded, const fa_post_op *op, bool with_bias, int threads)
{
    float *x = malloc(sizeof(float) * (size_t)K), *w = malloc(sizeof(float) * (size_t)(K * N)),
          *b = malloc(sizeof(float) * (size_t)N), *y = malloc(sizeof(float) * (size_t)padded);
    assert_true(x && w && b && y);
    fa_rng r;
    fa_rng_seed(&r, 5);
    for (int64_t i = 0; i < K; i++) x[i] = fa_rng_uniform(&r, -1.0f, 1.0f);
    for (int64_t i = 0; i < K * N; i++) w[i] = fa_rng_uniform(&r, -0.5f, 0.5f);
    for (int64_t i = 0; i < N; i++) b[i] = fa_rng_uniform(&r, -0.5f, 0.5f);
    for (int64_t i = 0; i < padded; i++) y[i] = NAN; /* every element must be written */
    fa_pixconv *p = fa_pixconv_create(K, N, padded, op, op ? 1 : 0);
    assert_non_null(p);
    fa_pixconv_run(p, x, w, with_bias ? b : NULL, y, threads);
    double u = ldexp(1.0, -24), gamma = (double)(K + 1) * u / (1 - (double)(K + 1) * u), maxabs = 0;
    for (int64_t n = 0; n < padded; n++) {
        if (n >= N) {
            if (y[n] != 0.0f) fail_msg("K %lld N %lld: padded output %lld is %.9g, not 0", (long long)K, (long long)N, (long long)n, y[n]);
            continue;
        }
        double ref = with_bias ? b[n] : 0, mag = fabs(ref);
        for (int64_t k = 0; k < K; k++) {
            ref += (double)w[n * K + k] * x[k];
            mag += fabs((double)w[n * K + k] * x[k]);
        }
        double want = epilogue_ref(op, ref), tol = epilogue_tol(op, ref, gamma * mag + u * fabs(ref));
        maxabs = fmax(maxabs, fabs(want));
        if (!(fabs(y[n] - want) <= tol))
            fail_msg("K %lld N %lld %s bias %d threads %d: y[%lld] = %.9g, want %.9g (error %.3g > %.3g)", (long long)K,
                     (long long)N, op ? fa_post_op_name(op->kind) : "none", with_bias, threads, (long long)n, y[n], want,
                     fabs(y[n] - want), tol);
    }
    assert_true(maxabs > 0.01 || K * N < 16); /* a real product (one weight times one input may be small) */
    fa_pixconv_free(p);
    free(x);
    free(w);
    free(b);
    free(y);
}

static void test_kernel_matches_the_dot_product(void **s)
{
    (void)s;
    /* K, N, the output's padded size: MobileNetV3-small's smallest layer (16 -> 8, padded to 16),
     * 16-lane tails on both sides, a 64-wide main loop with a tail, and EfficientNet's 1152 -> 48 */
    const int64_t shapes[][3] = {{16, 8, 16}, {1, 1, 1}, {5, 3, 8}, {17, 33, 48}, {64, 16, 16}, {100, 37, 37}, {1152, 48, 48}};
    const fa_post_op ops[] = {
        {FA_POST_OP_RELU, 0, 0, -1},       {FA_POST_OP_LEAKY_RELU, 0.1f, 0, -1}, {FA_POST_OP_CLIP, 0, 6, -1},
        {FA_POST_OP_HARD_SWISH, 0, 0, -1}, {FA_POST_OP_SWISH, 1, 0, -1},         {FA_POST_OP_SIGMOID, 0, 0, -1},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        run_case(shapes[i][0], shapes[i][1], shapes[i][2], NULL, true, 1);
        run_case(shapes[i][0], shapes[i][1], shapes[i][2], NULL, false, 1);
        for (size_t j = 0; j < sizeof ops / sizeof ops[0]; j++) run_case(shapes[i][0], shapes[i][1], shapes[i][2], &ops[j], true, 1);
    }
    /* past FA_PIXCONV_PAR_MIN_WEIGHTS the rows split over two threads: 576 -> 144 (and back),
     * an odd row count whose second share is short */
    run_case(576, 144, 144, &ops[0], true, 2);
    run_case(144, 576, 576, &ops[5], true, 2);
    run_case(1000, 83, 96, &ops[4], true, 2);
    assert_true(576 * 144 >= FA_PIXCONV_PAR_MIN_WEIGHTS && 1000 * 83 >= FA_PIXCONV_PAR_MIN_WEIGHTS);
}

static void test_unsupported_refused(void **s)
{
    (void)s;
    const fa_post_op two[] = {{FA_POST_OP_RELU, 0, 0, -1}, {FA_POST_OP_RELU, 0, 0, -1}};
    const fa_post_op add[] = {{FA_POST_OP_ADD, 0, 0, 3}};
    const fa_post_op gelu[] = {{FA_POST_OP_GELU_ERF, 0, 0, -1}};
    assert_null(fa_pixconv_create(16, 8, 16, two, 2));
    assert_null(fa_pixconv_create(16, 8, 16, add, 1));
    assert_null(fa_pixconv_create(16, 8, 16, gelu, 1));
    assert_null(fa_pixconv_create(16, 8, 7, NULL, 0)); /* a padded size short of the outputs */
    assert_null(fa_pixconv_create(0, 8, 8, NULL, 0));
    fa_pixconv *p = fa_pixconv_create(16, 8, 16, NULL, 0);
    assert_non_null(p);
    fa_pixconv_free(p);
}

enum { CI = 40, CO = 24 };

/* x [1, CI, S, S] -> conv 1x1 (+ bias, + relu when fused: FusedConv, else an ONNX Conv) -> y */
static fa_graph *conv_graph(fa_ctx *ctx, bool fused, int64_t S, float **wout, float **bout)
{
    fa_graph *g = fa_graph_create("pix");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {1, CI, S, S}, wd[4] = {CO, CI, 1, 1}, bd[1] = {CO}, yd[4] = {1, CO, S, S};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    fa_test_add_const(ctx, g, "w", 4, wd, -0.5f, 0.5f, 7);
    fa_test_add_const(ctx, g, "b", 1, bd, -0.5f, 0.5f, 8);
    *wout = malloc(sizeof(float) * CO * CI);
    *bout = malloc(sizeof(float) * CO);
    memcpy(*wout, g->tensors[fa_graph_find_tensor(g, "w")]->data, sizeof(float) * CO * CI);
    memcpy(*bout, g->tensors[fa_graph_find_tensor(g, "b")]->data, sizeof(float) * CO);
    const char *ins[] = {"x", "w", "b"}, *outs[] = {"y"};
    fa_node *n = fa_graph_add_node(ctx, g, "fc", fused ? "FusedConv" : "Conv", fused ? "ai.fuse-advise" : "", 3, ins, 1, outs);
    fa_node_add_attr_ints(g, n, "kernel_shape", wd + 2, 2);
    if (fused) {
        const fa_post_op po[] = {{FA_POST_OP_RELU, 0, 0, -1}};
        assert_true(fa_post_ops_set_node(g, n, po, 1));
    }
    fa_tensor_set_shape(g->tensors[fa_graph_find_tensor(g, "y")], FA_DTYPE_FLOAT, 4, yd);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    assert_int_equal(fa_graph_index(ctx, g), FA_OK);
    return g;
}

/* The executor (the fused plan's on nChw16c when fused, else the plain one): the convolution's
 * kernel name into name, and its outputs against the dot product per pixel. */
static void exec_case(bool fused, int64_t S, char *name, size_t cap)
{
    fa_ctx *ctx = fa_ctx_create();
    float *w, *b;
    fa_graph *g = conv_graph(ctx, fused, S, &w, &b);
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2, .blocked_layouts = fused,
                          .plan_layout = fused ? FA_LAYOUT_NCHW16C : FA_LAYOUT_PLAIN};
    if (fa_exec_create(ctx, g, &eo, &e)) fail_msg("%s", fa_ctx_errmsg(ctx));
    const char *kn = fa_exec_kernel_name(e, g->nodes[0]);
    assert_non_null(kn);
    snprintf(name, cap, "%s", kn);
    float *x = malloc(sizeof(float) * (size_t)(CI * S * S));
    fa_rng r;
    fa_rng_seed(&r, 42);
    for (int64_t i = 0; i < CI * S * S; i++) x[i] = fa_rng_uniform(&r, -2.0f, 2.0f);
    fa_value xv = {.data = x, .dtype = FA_DTYPE_FLOAT, .rank = 4, .dims = {1, CI, S, S}};
    assert_int_equal(fa_exec_set_input(ctx, e, 0, &xv), FA_OK);
    assert_int_equal(fa_exec_run(ctx, e, NULL), FA_OK);
    const float *y = fa_exec_output(e, 0)->data;
    double u = ldexp(1.0, -24), gamma = (CI + 1) * u / (1 - (CI + 1) * u);
    int clipped = 0;
    for (int c = 0; c < CO; c++)
        for (int64_t px = 0; px < S * S; px++) {
            double ref = b[c], mag = fabs(b[c]);
            for (int k = 0; k < CI; k++) {
                double a = (double)w[c * CI + k] * x[k * S * S + px];
                ref += a;
                mag += fabs(a);
            }
            double want = fused ? fmax(ref, 0) : ref, got = y[c * S * S + px];
            clipped += fused && ref < 0;
            if (!(fabs(got - want) <= gamma * mag + u * fabs(ref) + 1e-6 * fabs(ref)))
                fail_msg("kernel '%s': y[%d, %lld] = %.9g, want %.9g", kn, c, (long long)px, got, want);
        }
    assert_true(!fused || clipped > 0); /* the epilogue ran */
    fa_exec_free(e);
    fa_graph_free(g);
    free(x);
    free(w);
    free(b);
    fa_ctx_free(ctx);
}

static void test_executors_take_it_for_one_pixel(void **s)
{
    (void)s;
    char n[128];
    exec_case(true, 1, n, sizeof n);
    assert_string_equal(n, "pixel-conv+post-ops(nChw16c)");
    exec_case(false, 1, n, sizeof n);
    assert_string_equal(n, "pixel-conv(plain)");
    exec_case(true, 2, n, sizeof n); /* four pixels: oneDNN's */
    assert_null(strstr(n, "pixel"));
    exec_case(false, 2, n, sizeof n);
    assert_null(strstr(n, "pixel"));
    setenv("FA_PIXEL_CONV", "0", 1); /* the A/B switch keeps oneDNN's */
    exec_case(true, 1, n, sizeof n);
    assert_null(strstr(n, "pixel"));
    unsetenv("FA_PIXEL_CONV");
}

int main(void)
{
    unsetenv("FA_PIXEL_CONV");
    if (!fa_pixconv_available()) {
        printf("SKIP: no AVX-512F here; the one-pixel convolution is never used\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_matches_the_dot_product),
        cmocka_unit_test(test_unsupported_refused),
        cmocka_unit_test(test_executors_take_it_for_one_pixel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
