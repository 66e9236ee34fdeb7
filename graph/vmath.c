/* graph/vmath — see vmath.h. This file alone is compiled with -mavx2 -mfma (CMakeLists.txt); its
 * functions are only called after fa_vmath_available(), so no AVX2 instruction runs on a CPU
 * without it. SLEEF's *_u10avx2 entry points are used directly (no dispatcher). */
#include "vmath.h"
#include "expf_poly.h"

#include <dlfcn.h>
#include <immintrin.h>
#include <pthread.h>
#include <sleef.h>
#include <string.h>

bool fa_vmath_available(void)
{
    static int have = -1;
    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return have;
}

static bool g_force_avx2; /* tests only: fa_vmath_force_avx2 */
void fa_vmath_force_avx2(bool on) { g_force_avx2 = on; }
/* the AVX-512 form of a function where the CPU has AVX-512F and no test asked for the AVX2 one */
static inline bool use512(void) { return !g_force_avx2 && fa_vmath512_available(); }

/* Apply F (an __m256 -> __m256 expression of `v`) to x[0..n) in chunks of 8; the tail goes
 * through a zero-padded 8-float buffer. */
#define FA_VMAP(x, y, n, F)                                                                                            \
    do {                                                                                                               \
        int64_t i_ = 0;                                                                                                \
        for (; i_ + 8 <= (n); i_ += 8) {                                                                               \
            __m256 v = _mm256_loadu_ps((x) + i_);                                                                      \
            _mm256_storeu_ps((y) + i_, F);                                                                             \
        }                                                                                                              \
        if (i_ < (n)) {                                                                                                \
            float t_[8] = {0};                                                                                         \
            memcpy(t_, (x) + i_, sizeof(float) * (size_t)((n) - i_));                                                  \
            __m256 v = _mm256_loadu_ps(t_);                                                                            \
            _mm256_storeu_ps(t_, F);                                                                                   \
            memcpy((y) + i_, t_, sizeof(float) * (size_t)((n) - i_));                                                  \
        }                                                                                                              \
    } while (0)

/* The 8-lane form of graph/vmath512.c's sigmoid: exp(t) for t <= 0 with the same clamp at -104,
 * reduction and Horner polynomial (graph/expf_poly.h), 2^n built in the exponent field (AVX2 has no
 * vscalefps) as 2^(n - n/2) · 2^(n/2), two normal factors, so that a subnormal result is rounded
 * once, by the last product; then 1 / (1 + e) by the 12-bit reciprocal estimate and two Newton
 * steps, not a division. 8 lanes gain little: 0.62 ns per element (0.64 with Cephes's polynomial)
 * against 0.67 for SLEEF's u10 exp and a division (131,072 floats, one thread, a scratch program,
 * 2026-12-06); the two forms share one algorithm and its error bounds (tests/unit/test_vmath.c). */
static inline __m256 exp_nonpos8(__m256 t)
{
    t = _mm256_max_ps(t, _mm256_set1_ps(-104.0f)); /* n >= -150: exp rounds to 0 there */
    __m256 n = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(FA_EXPF_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(FA_EXPF_LN2_HI), t);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(FA_EXPF_LN2_LO), r);
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 p = _mm256_set1_ps(FA_EXPF_H6); /* graph/expf_poly.h's Horner form */
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(FA_EXPF_H5));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(FA_EXPF_H4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(FA_EXPF_H3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(FA_EXPF_H2));
    p = _mm256_fmadd_ps(p, r, one);
    p = _mm256_fmadd_ps(p, r, one);
    const __m256i bias = _mm256_set1_epi32(127);
    __m256i ni = _mm256_cvtps_epi32(n), n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

static inline __m256 sigmoid8_fast(__m256 t)
{
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    __m256 e = exp_nonpos8(_mm256_or_ps(t, sign)); /* exp(-|t|) */
    __m256 d = _mm256_add_ps(one, e);
    __m256 q = _mm256_rcp_ps(d);
    q = _mm256_fmadd_ps(_mm256_fnmadd_ps(d, q, one), q, q);
    q = _mm256_fmadd_ps(_mm256_fnmadd_ps(d, q, one), q, q); /* one step misses sigmoid(0) = 0.5 exactly */
    q = _mm256_blendv_ps(q, _mm256_mul_ps(q, e), _mm256_cmp_ps(t, _mm256_setzero_ps(), _CMP_LT_OQ));
    return _mm256_blendv_ps(q, t, _mm256_cmp_ps(t, t, _CMP_UNORD_Q));
}

void fa_vexpf(const float *x, float *y, int64_t n)
{
    if (use512()) fa_vmath512_expf(x, y, n);
    else FA_VMAP(x, y, n, Sleef_expf8_u10avx2(v));
}
/* tanh: SLEEF's u35 variant (<= 3.5 ULP), 3x faster than u10 here (bench: 393k floats, 0.37 vs 1.2
 * ms on one AVX2 core); ONNX Runtime's MLAS tanh is a rational approximation of similar error. */
void fa_vtanhf(const float *x, float *y, int64_t n)
{
    if (use512()) fa_vmath512_tanhf(x, y, n);
    else FA_VMAP(x, y, n, Sleef_tanhf8_u35avx2(v));
}
/* erf. SLEEF has only its u10 erf, 1.45 ms per 393,216 floats on one AVX2 core here (0.93 with 16
 * AVX-512 lanes), 4x ONNX Runtime's MLAS erf in BERT-base's unfused baseline. glibc's libmvec
 * (>= 2.35) has an 8-lane AVX2 erff: 0.21 ms for the same floats, at most 2 ULP from double erf
 * (1.2e-7 relative; tests/unit/test_vmath.c bounds it at 2.5e-7), and no slow path for large,
 * infinite or NaN inputs (bench/README.md "Erf through libmvec"). The product links SLEEF's GNU-ABI
 * library ahead of libm, which exports the same name, _ZGVdN8v_erff (CMakeLists.txt
 * SLEEF_GNUABI_LIB): a plain or symbol-versioned reference may resolve to SLEEF's. So libmvec's is
 * looked up in libmvec.so.1 itself, by its version GLIBC_2.35 (dlvsym), once; SLEEF's stays the
 * fallback where that library or version is absent. libmvec's 16-lane AVX-512 erff measured slower
 * than its AVX2 one here (0.25 ms), so the AVX2 one serves both. */
typedef __m256 (*erff8_fn)(__m256);
static erff8_fn g_mvec_erff8;
static pthread_once_t g_mvec_once = PTHREAD_ONCE_INIT;
static void mvec_lookup(void)
{
    void *h = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL); /* kept open: the pointer lives as long */
    void *f = h ? dlvsym(h, "_ZGVdN8v_erff", "GLIBC_2.35") : NULL;
    memcpy(&g_mvec_erff8, &f, sizeof f); /* object pointer to function pointer (POSIX dlsym) */
}

bool fa_vmath_mvec_erf(void)
{
    pthread_once(&g_mvec_once, mvec_lookup);
    return g_mvec_erff8 != NULL;
}

static inline __m256 erf8(__m256 v, erff8_fn mv) { return mv ? mv(v) : Sleef_erff8_u10avx2(v); }

void fa_verff(const float *x, float *y, int64_t n)
{
    erff8_fn mv = fa_vmath_mvec_erf() ? g_mvec_erff8 : NULL;
    if (!mv && use512()) fa_vmath512_erff(x, y, n);
    else FA_VMAP(x, y, n, erf8(v, mv));
}
void fa_vsigmoidf(const float *x, float *y, int64_t n)
{
    if (use512()) fa_vmath512_sigmoidf(x, y, n);
    else FA_VMAP(x, y, n, sigmoid8_fast(v));
}

void fa_vswishf(const float *x, float *y, int64_t n, float alpha)
{
    const __m256 a = _mm256_set1_ps(alpha);
    if (use512()) fa_vmath512_swishf(x, y, n, alpha);
    else FA_VMAP(x, y, n, _mm256_mul_ps(v, sigmoid8_fast(_mm256_mul_ps(a, v))));
}

void fa_vgeluf(const float *x, float *y, int64_t n)
{
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f), rs2 = _mm256_set1_ps(0.70710678118654752f);
    erff8_fn mv = fa_vmath_mvec_erf() ? g_mvec_erff8 : NULL;
    FA_VMAP(x, y, n, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, erf8(_mm256_mul_ps(v, rs2), mv))));
}

void fa_vgelu_tanhf(const float *x, float *y, int64_t n)
{
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f), k = _mm256_set1_ps(0.79788456080286536f),
                 c = _mm256_set1_ps(0.044715f);
    FA_VMAP(x, y, n,
            _mm256_mul_ps(_mm256_mul_ps(half, v),
                          _mm256_add_ps(one, Sleef_tanhf8_u10avx2(_mm256_mul_ps(
                                                 k, _mm256_fmadd_ps(_mm256_mul_ps(c, v), _mm256_mul_ps(v, v), v))))));
}

void fa_vpowf(const float *a, int64_t sa, const float *b, int64_t sb, float *y, int64_t n)
{
    if (sa == 1 && sb == 0) {
        const __m256 e = _mm256_set1_ps(b[0]);
        FA_VMAP(a, y, n, Sleef_powf8_u10avx2(v, e));
    } else if (sa == 0 && sb == 1) {
        const __m256 base = _mm256_set1_ps(a[0]);
        FA_VMAP(b, y, n, Sleef_powf8_u10avx2(base, v));
    } else if (sa == 1 && sb == 1) {
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(y + i, Sleef_powf8_u10avx2(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
        if (i < n) {
            float ta[8] = {0}, tb[8] = {0};
            memcpy(ta, a + i, sizeof(float) * (size_t)(n - i));
            memcpy(tb, b + i, sizeof(float) * (size_t)(n - i));
            _mm256_storeu_ps(ta, Sleef_powf8_u10avx2(_mm256_loadu_ps(ta), _mm256_loadu_ps(tb)));
            memcpy(y + i, ta, sizeof(float) * (size_t)(n - i));
        }
    } else {
        const __m256 e = _mm256_set1_ps(b[0]), base = _mm256_set1_ps(a[0]);
        __m256 r = Sleef_powf8_u10avx2(base, e);
        float t[8];
        _mm256_storeu_ps(t, r);
        for (int64_t i = 0; i < n; i++) y[i] = t[0];
    }
}
