/* tests/unit/test_vmath — the SLEEF-vectorised float32 functions of graph/vmath.h against
 * double-precision libm: exp, tanh, erf, sigmoid, swish, both GELU forms and pow over a dense
 * grid of [-30, 30], odd lengths (the zero-padded tail), in place, and the values that send naive
 * vector code down slow or wrong paths (huge negative masks, +-inf, NaN). Prints the measured
 * maximum errors (docs/status.md quotes them). Skipped (77) on a CPU without AVX2+FMA. */
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

static void test_accuracy_against_double_libm(void **state)
{
    (void)state;
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
        {"gelu", fa_vgeluf, gelu, 1.0, 1e-6},
        {"gelu_tanh", fa_vgelu_tanhf, gelu_t, 1.0, 1e-6},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        double e = max_err(C[i].f, C[i].ref, C[i].floor_);
        printf("vmath %-10s max error %.3g (bound %.3g)\n", C[i].name, e, C[i].tol);
        if (!(e <= C[i].tol)) fail_msg("%s: max error %.3g > %.3g", C[i].name, e, C[i].tol);
    }
}

/* glibc >= 2.35 has libmvec's AVX2 erff: the lookup must find it there (a silent fall back to
 * SLEEF's 7x slower erf would pass every accuracy check), and its results on a grid stay within
 * 2 ULP of double erf, and so of SLEEF's u10 within 3. */
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
        cmocka_unit_test(test_erf_is_libmvec_where_glibc_has_it),
        cmocka_unit_test(test_pow_broadcasts_and_signs),
        cmocka_unit_test(test_masks_infinities_and_nan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
