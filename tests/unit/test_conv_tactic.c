/* tests/unit/test_conv_tactic — the convolution tactics (fa_conv_tactic): which algorithm a
 * blocked executor's 3x3 convolution takes, and whether a plain executor's unfused convolution
 * keeps its activations plain or reorders them inside; that every result stays within the direct
 * summation's rounding-error bound, and that one process decides once per signature. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/post_op.h"
#include "runtime/runtime.h"
#include "testutil.h"

enum { C = 32, H = 14, W_ = 14 };

/* oneDNN 2.6 has its f32 Winograd kernels on AVX-512 (avx512_core: F, BW, VL, DQ) only: where
 * the machine has it, a Winograd tactic must be taken; elsewhere it must fall back to direct. */
static bool has_winograd_isa(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
    return false;
#endif
}

/* A constant initializer (testutil's, uniform in [-0.5, 0.5)) and a copy of its values for the
 * reference (caller frees). */
static float *const_data(fa_ctx *ctx, fa_graph *g, const char *name, int rank, const int64_t *dims, int seed)
{
    fa_test_add_const(ctx, g, name, rank, dims, -0.5f, 0.5f, seed);
    const fa_tensor *t = g->tensors[fa_graph_find_tensor(g, name)];
    size_t bytes = sizeof(float) * (size_t)fa_tensor_numel(t);
    float *d = malloc(bytes);
    assert_non_null(d);
    memcpy(d, t->data, bytes);
    return d;
}

/* x [1, C, H, W] -> Conv k x k (stride, pad k/2) + bias -> y, optionally as a FusedConv with a
 * Relu post-op; *wout and *bout get the weights and bias (caller frees). */
static fa_graph *conv_graph(fa_ctx *ctx, int k, int stride, bool fused, float **wout, float **bout)
{
    fa_graph *g = fa_graph_create("conv");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {1, C, H, W_}, wd[4] = {C, C, k, k}, bd[1] = {C};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    *wout = const_data(ctx, g, "w", 4, wd, 7);
    *bout = const_data(ctx, g, "b", 1, bd, 8);
    int64_t p = k / 2, pads[4] = {p, p, p, p}, strides[2] = {stride, stride};
    const char *ins[] = {"x", "w", "b"}, *outs[] = {"y"};
    fa_node *n = fa_graph_add_node(ctx, g, "conv", fused ? "FusedConv" : "Conv", fused ? "ai.fuse-advise" : "", 3, ins, 1, outs);
    fa_node_add_attr_ints(g, n, "pads", pads, 4);
    fa_node_add_attr_ints(g, n, "strides", strides, 2);
    fa_node_add_attr_ints(g, n, "kernel_shape", wd + 2, 2);
    if (fused) {
        const fa_post_op po[] = {{FA_POST_OP_RELU, 0, 0, -1}};
        assert_true(fa_post_ops_set_node(g, n, po, 1));
        int64_t o = (H + 2 * p - k) / stride + 1, yd[4] = {1, C, o, o};
        fa_tensor_set_shape(g->tensors[fa_graph_find_tensor(g, "y")], FA_DTYPE_FLOAT, 4, yd);
        fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
        assert_int_equal(fa_graph_index(ctx, g), FA_OK);
    } else {
        fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
        assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    }
    return g;
}

static fa_exec *make(fa_ctx *ctx, const fa_graph *g, bool blocked, fa_conv_tactic t)
{
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2, .blocked_layouts = blocked, .conv_tactic = t};
    if (fa_exec_create(ctx, g, &eo, &e)) fail_msg("%s", fa_ctx_errmsg(ctx));
    return e;
}

static bool is_winograd(const fa_exec *e, const fa_graph *g)
{
    const char *name = fa_exec_kernel_name(e, g->nodes[0]);
    assert_non_null(name);
    return strstr(name, "winograd") != NULL;
}

/* Runs e on the fixed input and checks every output element against the direct sum in double:
 * |y - ref| <= gamma_K * (|W|.|x| + |b|) + u |ref|, K = C * k * k, gamma_K = K u / (1 - K u), u
 * = 2^-24 (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., Lemma 3.1 and
 * Section 3.5: the bound of any summation order of the dot product) — the bound the applier's
 * verification holds every fused convolution to (applier/bound.c), whatever its algorithm. */
static void check_against_direct_sum(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int k, int stride, bool relu, const float *w,
                                     const float *b)
{
    static float x[C * H * W_];
    fa_rng r;
    fa_rng_seed(&r, 42);
    for (int i = 0; i < C * H * W_; i++) x[i] = fa_rng_uniform(&r, -1.0f, 1.0f);
    fa_value xv = {.data = x, .dtype = FA_DTYPE_FLOAT, .rank = 4, .dims = {1, C, H, W_}};
    assert_int_equal(fa_exec_set_input(ctx, e, 0, &xv), FA_OK);
    assert_int_equal(fa_exec_run(ctx, e, NULL), FA_OK);
    const fa_value *yv = fa_exec_output(e, 0);
    assert_non_null(yv);
    const float *y = yv->data;
    int p = k / 2, o = (H + 2 * p - k) / stride + 1;
    assert_int_equal(fa_value_numel(yv), (int64_t)C * o * o);
    double u = ldexp(1.0, -24), K = (double)C * k * k, gamma = K * u / (1 - K * u), worst = 0, maxabs = 0;
    for (int co = 0; co < C; co++)
        for (int oy = 0; oy < o; oy++)
            for (int ox = 0; ox < o; ox++) {
                double ref = b[co], mag = fabs(b[co]);
                for (int ci = 0; ci < C; ci++)
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            int iy = oy * stride + ky - p, ix = ox * stride + kx - p;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W_) continue;
                            double a = w[((co * C + ci) * k + ky) * k + kx], v = x[(ci * H + iy) * W_ + ix];
                            ref += a * v;
                            mag += fabs(a * v);
                        }
                if (relu && ref < 0) ref = 0, mag = fmax(mag, 0);
                double got = y[(co * o + oy) * o + ox], bound = gamma * mag + u * fabs(ref);
                maxabs = fmax(maxabs, fabs(ref));
                if (fabs(got - ref) > bound)
                    fail_msg("y[%d,%d,%d] = %.9g, the direct sum %.9g: error %.3g beyond the bound %.3g", co, oy, ox, got, ref,
                             fabs(got - ref), bound);
                worst = fmax(worst, fabs(got - ref) / (bound > 0 ? bound : 1));
            }
    assert_true(maxabs > 0.1); /* a real convolution, not zeros */
    (void)worst;
    (void)g;
}

static void check(int k, int stride, bool fused, bool blocked, fa_conv_tactic t, bool want_winograd)
{
    fa_ctx *ctx = fa_ctx_create();
    float *w, *b;
    fa_graph *g = conv_graph(ctx, k, stride, fused, &w, &b);
    fa_exec *e = make(ctx, g, blocked, t);
    if (is_winograd(e, g) != want_winograd)
        fail_msg("k %d stride %d fused %d blocked %d tactic %d: kernel '%s', Winograd expected: %d", k, stride, fused, blocked,
                 (int)t, fa_exec_kernel_name(e, g->nodes[0]), want_winograd);
    check_against_direct_sum(ctx, e, g, k, stride, fused, w, b);
    fa_exec_free(e);
    fa_graph_free(g);
    free(w);
    free(b);
    fa_ctx_free(ctx);
}

static void test_direct_is_the_default(void **s)
{
    (void)s;
    check(3, 1, false, true, FA_CONV_TACTIC_DIRECT, false);
    check(3, 1, true, true, FA_CONV_TACTIC_DIRECT, false);
}

static void test_winograd_where_it_exists_within_the_direct_bound(void **s)
{
    (void)s;
    check(3, 1, false, true, FA_CONV_TACTIC_WINOGRAD, has_winograd_isa());
    check(3, 1, true, true, FA_CONV_TACTIC_WINOGRAD, has_winograd_isa()); /* with its Relu post-op */
}

static void test_winograd_never_for_other_convolutions_or_the_baseline(void **s)
{
    (void)s;
    check(3, 2, false, true, FA_CONV_TACTIC_WINOGRAD, false); /* stride 2 */
    check(1, 1, false, true, FA_CONV_TACTIC_WINOGRAD, false); /* 1x1 */
    check(5, 1, false, true, FA_CONV_TACTIC_WINOGRAD, false); /* 5x5 */
    check(3, 1, false, false, FA_CONV_TACTIC_WINOGRAD, false); /* plain layouts: the unfused baseline */
}

/* MEASURED: whichever algorithm the timing picks, every executor of the process built for the
 * same convolution takes the same one (a measurement made once), and the result is within the
 * bound either way. */
static void test_measured_decides_once_per_signature(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    float *w, *b;
    fa_graph *g = conv_graph(ctx, 3, 1, true, &w, &b);
    fa_exec *e1 = make(ctx, g, true, FA_CONV_TACTIC_MEASURED);
    bool first = is_winograd(e1, g);
    for (int i = 0; i < 3; i++) {
        fa_exec *e = make(ctx, g, true, FA_CONV_TACTIC_MEASURED);
        assert_int_equal(is_winograd(e, g), first);
        assert_string_equal(fa_exec_kernel_name(e, g->nodes[0]), fa_exec_kernel_name(e1, g->nodes[0]));
        fa_exec_free(e);
    }
    if (!has_winograd_isa()) assert_false(first);
    check_against_direct_sum(ctx, e1, g, 3, 1, true, w, b);
    fa_exec_free(e1);
    fa_graph_free(g);
    free(w);
    free(b);
    fa_ctx_free(ctx);
}

static const char *kname(const fa_exec *e, const fa_graph *g)
{
    const char *name = fa_exec_kernel_name(e, g->nodes[0]);
    assert_non_null(name);
    return name;
}

/* A plain executor's unfused convolution (the baseline): DIRECT keeps oneDNN's plain-NCHW kernel;
 * REORDER takes the reorder-inside build wherever oneDNN prefers another layout — on every x86
 * CPU oneDNN 2.6 runs (its jit and brgemm convolutions want nChw8c/nChw16c/nhwc) — and its
 * result is within the bound; MEASURED takes one of the two, the same in every executor of the
 * process, within the bound too. */
static void test_plain_convolution_reordered_inside_by_measurement(void **s)
{
    (void)s;
    for (int k = 1; k <= 3; k += 2) {
        fa_ctx *ctx = fa_ctx_create();
        float *w, *b;
        fa_graph *g = conv_graph(ctx, k, 1, false, &w, &b);
        fa_exec *ed = make(ctx, g, false, FA_CONV_TACTIC_DIRECT);
        assert_string_equal(kname(ed, g), "dnnl:convolution");
        check_against_direct_sum(ctx, ed, g, k, 1, false, w, b);
        fa_exec *er = make(ctx, g, false, FA_CONV_TACTIC_REORDER);
        if (strncmp(kname(er, g), "dnnl:reorder(nchw>", 18) || !strstr(kname(er, g), "+convolution+reorder("))
            fail_msg("k %d: kernel '%s', reorder-inside expected", k, kname(er, g));
        assert_null(strstr(kname(er, g), "post-ops")); /* an unfused convolution has none */
        check_against_direct_sum(ctx, er, g, k, 1, false, w, b);
        fa_exec *em = make(ctx, g, false, FA_CONV_TACTIC_MEASURED);
        const char *first = kname(em, g);
        assert_true(!strcmp(first, "dnnl:convolution") || !strcmp(first, kname(er, g)));
        check_against_direct_sum(ctx, em, g, k, 1, false, w, b);
        for (int i = 0; i < 2; i++) {
            fa_exec *e = make(ctx, g, false, FA_CONV_TACTIC_MEASURED);
            assert_string_equal(kname(e, g), first);
            fa_exec_free(e);
        }
        fa_exec_free(em);
        fa_exec_free(er);
        fa_exec_free(ed);
        fa_graph_free(g);
        free(w);
        free(b);
        fa_ctx_free(ctx);
    }
}

/* A blocked executor's convolution (the fused plan's, nChw16c): REORDER takes the build with its
 * activations reordered inside, from and back to the executor's layouts, wherever oneDNN prefers
 * another one — on AVX-512 its brgemm convolution's nhwc — and the result, its ReLU post-op
 * included, is within the bound; MEASURED takes one of the two (the faster on this machine), whose
 * result is within the bound too, and an executor made again after it takes the same. A 3x3
 * stride-2 and a 1x1 stride-2 convolution (no Winograd for either). */
static void test_blocked_convolution_reordered_inside_when_asked_or_faster(void **s)
{
    (void)s;
    for (int k = 1; k <= 3; k += 2) {
        fa_ctx *ctx = fa_ctx_create();
        float *w, *b;
        fa_graph *g = conv_graph(ctx, k, 2, true, &w, &b);
        fa_exec *ed = make(ctx, g, true, FA_CONV_TACTIC_DIRECT);
        assert_null(strstr(kname(ed, g), "reorder("));
        check_against_direct_sum(ctx, ed, g, k, 2, true, w, b);
        fa_exec *er = make(ctx, g, true, FA_CONV_TACTIC_REORDER);
        const char *rn = kname(er, g);
        bool inside = !strncmp(rn, "dnnl:reorder(", 13) && strstr(rn, "+convolution+post-ops+reorder(") && strstr(rn, "nChw16c");
        if (has_winograd_isa() && !inside) fail_msg("k %d: kernel '%s', reordered inside expected", k, rn);
        check_against_direct_sum(ctx, er, g, k, 2, true, w, b);
        fa_exec *em = make(ctx, g, true, FA_CONV_TACTIC_MEASURED);
        const char *mn = kname(em, g);
        if (strcmp(mn, kname(ed, g)) && strcmp(mn, rn)) fail_msg("k %d: measured kernel '%s', neither '%s' nor '%s'", k, mn,
                                                                 kname(ed, g), rn);
        check_against_direct_sum(ctx, em, g, k, 2, true, w, b);
        fa_exec *em2 = make(ctx, g, true, FA_CONV_TACTIC_MEASURED); /* decided once: the same kernel */
        assert_string_equal(kname(em2, g), mn);
        fa_exec_free(em2);
        fa_exec_free(em);
        fa_exec_free(er);
        fa_exec_free(ed);
        fa_graph_free(g);
        free(w);
        free(b);
        fa_ctx_free(ctx);
    }
}

/* The applier's veto (fa_exec_veto_measured_tactics) after a cluster failed verification: the
 * executor whose convolution was reordered inside reports one kernel vetoed, and every executor
 * made afterwards for that signature takes the direct kernel — MEASURED and even REORDER — while
 * an executor with nothing to veto reports 0; a Winograd kernel the same under WINOGRAD. A 1x1
 * stride-1 convolution, which no other test here builds on a blocked executor with REORDER, and
 * a 3x3 one (the veto lasts the process: this test runs last). */
static void test_veto_brings_back_the_direct_kernel(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    float *w, *b;
    fa_graph *g = conv_graph(ctx, 1, 1, true, &w, &b);
    fa_exec *ed = make(ctx, g, true, FA_CONV_TACTIC_DIRECT);
    assert_int_equal(fa_exec_veto_measured_tactics(ed), 0);
    fa_exec *er = make(ctx, g, true, FA_CONV_TACTIC_REORDER);
    if (!strncmp(kname(er, g), "dnnl:reorder(", 13)) { /* oneDNN prefers another layout here (AVX-512: nhwc) */
        assert_int_equal(fa_exec_veto_measured_tactics(er), 1);
        fa_exec *er2 = make(ctx, g, true, FA_CONV_TACTIC_REORDER);
        assert_string_equal(kname(er2, g), kname(ed, g));
        assert_int_equal(fa_exec_veto_measured_tactics(er2), 0);
        fa_exec *em = make(ctx, g, true, FA_CONV_TACTIC_MEASURED);
        assert_string_equal(kname(em, g), kname(ed, g));
        check_against_direct_sum(ctx, em, g, 1, 1, true, w, b);
        fa_exec_free(em);
        fa_exec_free(er2);
    } else {
        assert_false(has_winograd_isa()); /* AVX-512 has the brgemm kernel on nhwc */
        assert_int_equal(fa_exec_veto_measured_tactics(er), 0);
    }
    fa_exec_free(er);
    fa_exec_free(ed);
    fa_graph_free(g);
    free(w);
    free(b);
    /* Winograd (a 3x3 stride-1 convolution) is vetoed the same way */
    g = conv_graph(ctx, 3, 1, true, &w, &b);
    fa_exec *ew = make(ctx, g, true, FA_CONV_TACTIC_WINOGRAD);
    if (is_winograd(ew, g)) {
        assert_int_equal(fa_exec_veto_measured_tactics(ew), 1);
        fa_exec *ew2 = make(ctx, g, true, FA_CONV_TACTIC_WINOGRAD);
        assert_false(is_winograd(ew2, g));
        check_against_direct_sum(ctx, ew2, g, 3, 1, true, w, b);
        fa_exec_free(ew2);
    } else {
        assert_false(has_winograd_isa());
    }
    fa_exec_free(ew);
    fa_graph_free(g);
    free(w);
    free(b);
    fa_ctx_free(ctx);
}

/* The options every timed executor starts from ask the measured tactic, and nothing else: two
 * executors made from them, one plain (the baseline's) and one for the same convolution in
 * another place, run the same kernel. */
static void test_timed_executors_start_from_measured_options(void **s)
{
    (void)s;
    fa_exec_options o = fa_exec_options_measured(FA_TARGET_CPU, 2);
    assert_int_equal(o.conv_tactic, FA_CONV_TACTIC_MEASURED);
    assert_int_equal(o.target, FA_TARGET_CPU);
    assert_int_equal(o.threads, 2);
    assert_false(o.blocked_layouts);
    assert_null(o.input_layouts);
    assert_null(o.provider);
    fa_ctx *ctx = fa_ctx_create();
    float *w, *b;
    fa_graph *g = conv_graph(ctx, 3, 2, false, &w, &b);
    fa_exec *e1 = NULL, *e2 = NULL;
    assert_int_equal(fa_exec_create(ctx, g, &o, &e1), FA_OK);
    assert_int_equal(fa_exec_create(ctx, g, &o, &e2), FA_OK);
    assert_string_equal(kname(e1, g), kname(e2, g));
    check_against_direct_sum(ctx, e1, g, 3, 2, false, w, b);
    fa_exec_free(e1);
    fa_exec_free(e2);
    fa_graph_free(g);
    free(w);
    free(b);
    fa_ctx_free(ctx);
}

/* FA_CONV_TACTIC overrides what the caller asked for (direct, winograd, measured); an unknown
 * value leaves it. */
static void test_environment_overrides_the_option(void **s)
{
    (void)s;
    assert_int_equal(setenv("FA_CONV_TACTIC", "direct", 1), 0);
    assert_int_equal(fa_conv_tactic_effective(FA_CONV_TACTIC_WINOGRAD), FA_CONV_TACTIC_DIRECT);
    check(3, 1, true, true, FA_CONV_TACTIC_WINOGRAD, false);
    assert_int_equal(setenv("FA_CONV_TACTIC", "winograd", 1), 0);
    assert_int_equal(fa_conv_tactic_effective(FA_CONV_TACTIC_DIRECT), FA_CONV_TACTIC_WINOGRAD);
    check(3, 1, true, true, FA_CONV_TACTIC_DIRECT, has_winograd_isa());
    assert_int_equal(setenv("FA_CONV_TACTIC", "measured", 1), 0);
    assert_int_equal(fa_conv_tactic_effective(FA_CONV_TACTIC_DIRECT), FA_CONV_TACTIC_MEASURED);
    assert_int_equal(setenv("FA_CONV_TACTIC", "reorder", 1), 0);
    assert_int_equal(fa_conv_tactic_effective(FA_CONV_TACTIC_DIRECT), FA_CONV_TACTIC_REORDER);
    assert_int_equal(setenv("FA_CONV_TACTIC", "fastest", 1), 0);
    assert_int_equal(fa_conv_tactic_effective(FA_CONV_TACTIC_WINOGRAD), FA_CONV_TACTIC_WINOGRAD);
    assert_int_equal(unsetenv("FA_CONV_TACTIC"), 0);
}

int main(void)
{
    unsetenv("FA_CONV_TACTIC"); /* the tests set it themselves */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_is_the_default),
        cmocka_unit_test(test_winograd_where_it_exists_within_the_direct_bound),
        cmocka_unit_test(test_winograd_never_for_other_convolutions_or_the_baseline),
        cmocka_unit_test(test_measured_decides_once_per_signature),
        cmocka_unit_test(test_plain_convolution_reordered_inside_by_measurement),
        cmocka_unit_test(test_blocked_convolution_reordered_inside_when_asked_or_faster),
        cmocka_unit_test(test_timed_executors_start_from_measured_options),
        cmocka_unit_test(test_environment_overrides_the_option),
        cmocka_unit_test(test_veto_brings_back_the_direct_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
