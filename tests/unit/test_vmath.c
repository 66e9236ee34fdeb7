/* tests/unit/test_vmath — the SLEEF-vectorised float32 functions of graph/vmath.h against
 * double-precision libm: exp, tanh, erf, sigmoid, swish, both GELU forms and pow over a dense
 * grid of [-30, 30], odd lengths (the zero-padded tail), in place, and the values that send naive
 * vector code down slow or wrong paths (huge negative masks, +-inf, NaN). Prints the measured
 * maximum errors (docs/runtime.md "Vectorised transcendentals" quotes them), in both the 16-lane and
 * the 8-lane forms on an AVX-512 CPU. Skipped (77) on a CPU without AVX2+FMA. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/vmath.h"
#include "testutil.h"

#define N 200003 /* odd: exercises the tail */

typedef void (*vfn)(const float *, float *, int64_t);

static float *grid(void)
{
    float *x = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) x[i] = -30.0f + 60.0f * (float)i / (float)(N - 1);
    return x;
}

/* max over the grid of |y - ref| / max(|ref|, floor) */
static double max_err(vfn f, double (*ref)(double), double floor_)
{
    float *x = grid(), *y = malloc(sizeof(float) * N);
    f(x, y, N);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double r = ref(x[i]), d = fabs((double)y[i] - r) / fmax(fabs(r), floor_);
        if (!(d <= worst)) worst = d; /* NaN counts as worst */
    }
    /* in place gives the same bits */
    f(x, x, N);
    assert_memory_equal(x, y, sizeof(float) * N);
    free(x);
    free(y);
    return worst;
}

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }
static double gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double gelu_t(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }
static void swish1(const float *x, float *y, int64_t n) { fa_vswishf(x, y, n, 1.0f); }
static double swish_ref(double x) { return x * sigm(x); }

static void swish_1702(const float *x, float *y, int64_t n) { fa_vswishf(x, y, n, 1.702f); }
static double swish_1702_ref(double x) { return x * sigm(1.702 * x); }
static void swish_neg(const float *x, float *y, int64_t n) { fa_vswishf(x, y, n, -0.5f); }
static double swish_neg_ref(double x) { return x * sigm(-0.5 * x); }

/* Every function over the grid, in the form this CPU takes (force_avx2 false) or in the 8-lane
 * AVX2 one (true): on an AVX-512 machine both forms are checked. */
static void accuracy(bool force_avx2)
{
    fa_vmath_force_avx2(force_avx2);
    struct { const char *name; vfn f; double (*ref)(double); double floor_, tol; } C[] = {
        /* exp over [-30, 30] stays normal: relative error; 1 ULP of float is 6e-8 (u10: <= 1 ULP) */
        {"exp", fa_vexpf, exp, 1e-30, 2.5e-7},
        /* tanh: SLEEF u35, <= 3.5 ULP: 4.2e-7 relative at most */
        {"tanh", fa_vtanhf, tanh, 1e-30, 4.5e-7},
        {"erf", fa_verff, erf, 1e-30, 2.5e-7},
        /* composed: the float rounding of 1 + exp(-x) and friends adds a few ULPs */
        {"sigmoid", fa_vsigmoidf, sigm, 1e-30, 1e-6},
        /* GELU/swish near their tiny negative tails: absolute error (1 + erf(x) cancels) */
        {"swish", swish1, swish_ref, 1.0, 1e-6},
        {"swish1.702", swish_1702, swish_1702_ref, 1.0, 1e-6},
        {"swish-0.5", swish_neg, swish_neg_ref, 1.0, 1e-6},
        {"gelu", fa_vgeluf, gelu, 1.0, 1e-6},
        {"gelu_tanh", fa_vgelu_tanhf, gelu_t, 1.0, 1e-6},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        double e = max_err(C[i].f, C[i].ref, C[i].floor_);
        printf("vmath %-10s %s max error %.3g (bound %.3g)\n", C[i].name, force_avx2 || !fa_vmath512_available() ? "avx2" : "avx512", e,
               C[i].tol);
        if (!(e <= C[i].tol)) {
            fa_vmath_force_avx2(false);
            fail_msg("%s%s: max error %.3g > %.3g", C[i].name, force_avx2 ? " (avx2)" : "", e, C[i].tol);
        }
    }
    fa_vmath_force_avx2(false);
}

static void test_accuracy_against_double_libm(void **state)
{
    (void)state;
    accuracy(false);
}

static void test_accuracy_of_the_avx2_forms(void **state)
{
    (void)state;
    if (!fa_vmath512_available()) {
        printf("SKIP: no AVX-512F: the first test checked the AVX2 forms\n");
        skip();
    }
    accuracy(true);
}

/* The AVX-512 sigmoid and swish (an exponential and reciprocal of their own, graph/vmath512.c) at
 * the points where such code goes wrong: the clamp of the exponent (-87 .. -104: subnormal
 * exp(-|x|), exactly 0 past it), +-inf, NaN, -0 and both signs of tiny inputs, against double
 * precision and the limits IEEE arithmetic gives the reference x·sigmoid(x) (-inf·0 is NaN). */
static void test_sigmoid_and_swish_edges(void **state)
{
    (void)state;
    float x[] = {-1e4f, -200.0f, -104.5f, -103.0f, -95.0f, -88.0f, -87.5f, -30.0f, -1e-30f, -0.0f, 0.0f, 1e-30f,
                 30.0f, 88.0f, 200.0f, INFINITY, -INFINITY, NAN};
    enum { K = sizeof x / sizeof x[0] };
    float y[K], z[K];
    for (int f = 0; f < 2; f++) {
        fa_vmath_force_avx2(f == 1);
        fa_vsigmoidf(x, y, K);
        fa_vswishf(x, z, K, 1.0f);
        for (int i = 0; i < K; i++) {
            double r = sigm(x[i]), q = (double)x[i] * r;
            /* subnormal results within 1e-40 in both forms (a clamp of the exponent at -87 would
             * give 1.6e-38 at x = -95, a 2^n that flushes subnormals 0 at x = -88 where swish is
             * still -5.3e-37). Swish of -inf is IEEE's -inf·0, NaN, as the reference's. */
            double floor_ = 1e-40;
            bool sig_ok = isnan(r) ? isnan(y[i]) : fabs(y[i] - r) <= 1e-6 * fabs(r) + floor_;
            bool sw_ok = isnan(q) ? isnan(z[i]) : isinf(q) ? z[i] == q : fabs(z[i] - q) <= 1e-6 * fabs(q) + floor_;
            if (!sig_ok || !sw_ok) {
                fa_vmath_force_avx2(false);
                fail_msg("%s x = %.9g: sigmoid %.9g (double %.9g), swish %.9g (double %.9g)", f ? "avx2" : "native", x[i], y[i],
                         r, z[i], q);
            }
        }
        assert_true(y[9] == 0.5f && y[10] == 0.5f && y[15] == 1.0f && y[16] == 0.0f);
        assert_true(z[10] == 0.0f && !signbit(z[10]) && z[15] == INFINITY);
    }
    fa_vmath_force_avx2(false);
}

/* glibc >= 2.35 has libmvec's AVX2 erff: the lookup must find it there (a silent fall back to
 * SLEEF's 7x slower erf would pass every accuracy check), and its results on a grid stay within
 * 2 ULP of double erf, and so of SLEEF's u10 within 3. */
/* exp at the ends of the float range, in both forms: finite up to 88.72, +inf past FLT_MAX, the
 * subnormal results within 1e-40 of double precision (the 16-lane form clamps at 88.8 and -104 and
 * lets its final scaling round; SLEEF's handles them its own way). */
static void test_exp_range_ends(void **state)
{
    (void)state;
    const float x[] = {88.0f, 88.7f, 88.72f, 88.73f, 89.0f, 1e4f, -87.0f, -87.5f, -95.0f, -103.0f, -103.5f, -104.5f, -200.0f};
    enum { K = sizeof x / sizeof x[0] };
    float y[K];
    for (int f = 0; f < 2; f++) {
        fa_vmath_force_avx2(f == 1);
        fa_vexpf(x, y, K);
        for (int i = 0; i < K; i++) {
            double r = exp((double)x[i]);
            bool ok = r > 3.4028234663852886e38 ? isinf(y[i]) && y[i] > 0 : fabs(y[i] - r) <= 2.5e-7 * r + 1e-40;
            if (!ok) {
                fa_vmath_force_avx2(false);
                fail_msg("%s exp(%.9g) = %.9g, double %.9g", f ? "avx2" : "native", x[i], y[i], r);
            }
        }
    }
    fa_vmath_force_avx2(false);
}

/* graph/vmath512.c's row softmax and log-softmax against double precision: lengths around the
 * 16-lane block (the masked tail), a Hugging Face mask (-1e9) in a row, in place, and a row of
 * -inf (NaN everywhere, as the reference's x - max). */
static void test_softmax_rows(void **state)
{
    (void)state;
    if (!fa_vmath512_available()) {
        printf("SKIP: no AVX-512F: the reference Softmax keeps its 8-lane exp\n");
        skip();
    }
    static float x[1031], y[1031];
    const int lens[] = {1, 7, 15, 16, 17, 33, 128, 1031};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int n = lens[li];
        for (int i = 0; i < n; i++) x[i] = (i % 11 == 3) ? -1e9f : (float)sin(0.37 * i) * 8.0f;
        for (int lg = 0; lg < 2; lg++) {
            fa_vmath512_softmax_row(x, y, n, lg);
            double m = -INFINITY, sum = 0;
            for (int i = 0; i < n; i++) m = fmax(m, x[i]);
            for (int i = 0; i < n; i++) sum += exp((double)x[i] - m);
            for (int i = 0; i < n; i++) {
                double r = lg ? (double)x[i] - m - log(sum) : exp((double)x[i] - m) / sum;
                double tol = lg ? 1e-6 * fmax(1.0, fabs(r)) : 1e-6 * r + 1e-30;
                if (!(fabs(y[i] - r) <= tol)) fail_msg("n %d %s: y[%d] = %.9g, double %.9g", n, lg ? "log" : "softmax", i, y[i], r);
            }
        }
    }
    for (int i = 0; i < 40; i++) x[i] = (float)i * 0.25f;
    fa_vmath512_softmax_row(x, y, 40, false);
    fa_vmath512_softmax_row(x, x, 40, false); /* in place: the same bits */
    assert_memory_equal(x, y, sizeof(float) * 40);
    for (int i = 0; i < 19; i++) x[i] = -INFINITY;
    fa_vmath512_softmax_row(x, y, 19, false);
    for (int i = 0; i < 19; i++) assert_true(isnan(y[i]));
}

/* An instance-normalization plane on 8 double lanes against the scalar double loop of the
 * reference kernel: every element within one float ulp (the sums are the same double ones in
 * another order), lengths around the 16- and 8-lane steps, an offset plane (mean 1000: the
 * two-pass variance), and in place. */
static void test_norm_plane(void **state)
{
    (void)state;
    if (!fa_vmath512_available()) {
        printf("SKIP: no AVX-512F: InstanceNormalization keeps its scalar loop\n");
        skip();
    }
    static float x[3203], y[3203];
    const int lens[] = {1, 7, 8, 15, 16, 17, 33, 3199, 3203};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int n = lens[li];
        for (int off = 0; off < 2; off++) {
            for (int i = 0; i < n; i++) x[i] = (float)sin(0.37 * i) * 3.0f + (off ? 1000.0f : 0.0f);
            fa_vmath512_norm_plane(x, y, n, 1.5, -0.25, 1e-5);
            double mean = 0, var = 0;
            for (int i = 0; i < n; i++) mean += x[i];
            mean /= n;
            for (int i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
            var /= n;
            double k = 1.5 / sqrt(var + 1e-5);
            for (int i = 0; i < n; i++) {
                float r = (float)((x[i] - mean) * k - 0.25);
                if (!(fabsf(y[i] - r) <= 1.2e-7f * fmaxf(1.0f, fabsf(r))))
                    fail_msg("n %d offset %d: y[%d] = %.9g, scalar %.9g", n, off, i, y[i], r);
            }
        }
    }
    for (int i = 0; i < 40; i++) x[i] = (float)i * 0.25f;
    fa_vmath512_norm_plane(x, y, 40, 1.0, 0.0, 1e-5);
    fa_vmath512_norm_plane(x, x, 40, 1.0, 0.0, 1e-5); /* in place: the same bits */
    assert_memory_equal(x, y, sizeof(float) * 40);
}

static void test_erf_is_libmvec_where_glibc_has_it(void **state)
{
    (void)state;
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
    assert_true(fa_vmath_mvec_erf());
#else
    printf("glibc < 2.35: erf stays SLEEF's u10\n");
#endif
    enum { M = 4099 };
    static float x[M], y[M];
    for (int i = 0; i < M; i++) x[i] = -6.0f + 12.0f * (float)i / (float)(M - 1);
    fa_verff(x, y, M);
    for (int i = 0; i < M; i++) {
        double r = erf((double)x[i]), ulp = fabs(nextafterf((float)r, 2.0f) - (float)r);
        if (!(fabs(y[i] - r) <= 2.0 * ulp + 1e-45)) fail_msg("erf(%.9g) = %.9g, double %.9g: > 2 ULP", x[i], y[i], r);
    }
}

static void test_pow_broadcasts_and_signs(void **state)
{
    (void)state;
    float a[13], b[13], y[13], e3 = 3.0f, e05 = 0.5f, two = 2.0f;
    for (int i = 0; i < 13; i++) a[i] = -3.0f + 0.5f * (float)i, b[i] = -1.0f + 0.25f * (float)i;
    fa_vpowf(a, 1, &e3, 0, y, 13); /* x^3, GPT-2's GELU: negative bases keep their sign */
    for (int i = 0; i < 13; i++) assert_float_equal(y[i], powf(a[i], 3.0f), 1e-6 * fabs(powf(a[i], 3.0f)) + 1e-7);
    fa_vpowf(a, 1, &e05, 0, y, 13); /* sqrt of a negative base is NaN, as powf */
    for (int i = 0; i < 13; i++) assert_true(isnan(powf(a[i], 0.5f)) ? isnan(y[i]) : fabsf(y[i] - powf(a[i], 0.5f)) <= 1e-6f);
    fa_vpowf(&two, 0, b, 1, y, 13);
    for (int i = 0; i < 13; i++) assert_float_equal(y[i], powf(2.0f, b[i]), 1e-6 * powf(2.0f, b[i]));
    for (int i = 0; i < 13; i++) a[i] = fabsf(a[i]) + 0.1f;
    fa_vpowf(a, 1, b, 1, y, 13);
    for (int i = 0; i < 13; i++) assert_float_equal(y[i], powf(a[i], b[i]), 1e-6 * powf(a[i], b[i]));
}

static void test_masks_infinities_and_nan(void **state)
{
    (void)state;
    /* Hugging Face masks: -1e4, -3.4e38 (finfo.min), -inf */
    float x[7] = {-1e4f, -3.4e38f, -INFINITY, INFINITY, 100.0f, NAN, -0.0f}, y[7];
    fa_vexpf(x, y, 7);
    assert_true(y[0] == 0.0f && y[1] == 0.0f && y[2] == 0.0f && isinf(y[3]) && isinf(y[4]) && isnan(y[5]) && y[6] == 1.0f);
    fa_vsigmoidf(x, y, 7);
    assert_true(y[0] == 0.0f && y[1] == 0.0f && y[2] == 0.0f && y[3] == 1.0f && y[4] == 1.0f && isnan(y[5]) && y[6] == 0.5f);
    fa_vtanhf(x, y, 7);
    assert_true(y[0] == -1.0f && y[2] == -1.0f && y[3] == 1.0f && isnan(y[5]) && y[6] == 0.0f && signbit(y[6]));
    fa_verff(x, y, 7);
    assert_true(y[0] == -1.0f && y[2] == -1.0f && y[3] == 1.0f && isnan(y[5]));
}

int main(void)
{
    if (!fa_vmath_available()) {
        printf("SKIP: this CPU has no AVX2+FMA; the elementwise kernels use scalar libm here\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accuracy_against_double_libm),
        cmocka_unit_test(test_accuracy_of_the_avx2_forms),
        cmocka_unit_test(test_sigmoid_and_swish_edges),
        cmocka_unit_test(test_exp_range_ends),
        cmocka_unit_test(test_softmax_rows),
        cmocka_unit_test(test_norm_plane),
        cmocka_unit_test(test_erf_is_libmvec_where_glibc_has_it),
        cmocka_unit_test(test_pow_broadcasts_and_signs),
        cmocka_unit_test(test_masks_infinities_and_nan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
