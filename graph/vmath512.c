/* graph/vmath512 — the AVX-512 variants of graph/vmath's slowest functions (erf, tanh), 16 lanes
 * of SLEEF. This file alone is compiled with -mavx512f (CMakeLists.txt); graph/vmath.c calls it
 * only after fa_vmath512_available() said the CPU has AVX-512F. */
#include "vmath.h"
#include "expf_poly.h"

#include <immintrin.h>
#include <math.h>
#include <sleef.h>
#include <string.h>

bool fa_vmath512_available(void)
{
    static int have = -1;
    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("avx512f");
    }
    return have;
}

/* F (an __m512 expression of `v`) over x[0..n) in chunks of 16; the tail through a zero-padded buffer. */
#define FA_VMAP16(x, y, n, F)                                                                                          \
    do {                                                                                                               \
        int64_t i_ = 0;                                                                                                \
        for (; i_ + 16 <= (n); i_ += 16) {                                                                             \
            __m512 v = _mm512_loadu_ps((x) + i_);                                                                      \
            _mm512_storeu_ps((y) + i_, F);                                                                             \
        }                                                                                                              \
        if (i_ < (n)) {                                                                                                \
            float t_[16] = {0};                                                                                        \
            memcpy(t_, (x) + i_, sizeof(float) * (size_t)((n) - i_));                                                  \
            __m512 v = _mm512_loadu_ps(t_);                                                                            \
            _mm512_storeu_ps(t_, F);                                                                                   \
            memcpy((y) + i_, t_, sizeof(float) * (size_t)((n) - i_));                                                  \
        }                                                                                                              \
    } while (0)

void fa_vmath512_erff(const float *x, float *y, int64_t n) { FA_VMAP16(x, y, n, Sleef_erff16_u10avx512f(v)); }
void fa_vmath512_tanhf(const float *x, float *y, int64_t n) { FA_VMAP16(x, y, n, Sleef_tanhf16_u35avx512f(v)); }

/* exp(t), 16 lanes, by graph/expf_poly.h's reduction and Horner polynomial: t clamped below to -104
 * (2^-150 rounds to 0; a caller clamps above, where it needs to), p · 2^n by vscalefps, which
 * rounds once, through the subnormals and to +inf past FLT_MAX. A NaN t gives NaN: each step
 * keeps it (the clamp's operand order, roundscale, the FMAs, vscalefps). */
static inline __m512 exp_clamped16(__m512 t)
{
    t = _mm512_max_ps(_mm512_set1_ps(-104.0f), t); /* vmaxps returns its second operand, t, for a NaN t */
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(FA_EXPF_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(FA_EXPF_LN2_HI), t);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(FA_EXPF_LN2_LO), r);
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 p = _mm512_set1_ps(FA_EXPF_H6); /* graph/expf_poly.h's Horner form */
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(FA_EXPF_H5));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(FA_EXPF_H4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(FA_EXPF_H3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(FA_EXPF_H2));
    p = _mm512_fmadd_ps(p, r, one);
    p = _mm512_fmadd_ps(p, r, one);
    return _mm512_scalef_ps(p, n);
}

/* sigmoid(t) = 1 / (1 + e) for t >= 0 and e / (1 + e) for t < 0, e = exp(-|t|) in (0, 1]: no
 * overflow, no cancellation; 1 / (1 + e) by the 14-bit reciprocal estimate and one Newton step
 * (error ~2^-28, below float's rounding), not a division: vdivps is the slowest instruction of the
 * form and kept a SLEEF-exp swish at oneDNN's post-op speed (bench/README.md "Swish after the
 * convolution"). -|t| by setting the sign bit (one instruction); a NaN t gives NaN through
 * exp_clamped16, the reciprocal and the products, with no mask of its own (issue 35: the swish
 * after EfficientNet's convolutions is compute-bound, ~28 instructions a vector before). */
static inline __m512 sigmoid16(__m512 t)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 nabs = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), _mm512_set1_epi32((int)0x80000000u)));
    __m512 e = exp_clamped16(nabs);
    __m512 d = _mm512_add_ps(one, e);
    __m512 q = _mm512_rcp14_ps(d);
    q = _mm512_fmadd_ps(_mm512_fnmadd_ps(d, q, one), q, q);
    __mmask16 neg = _mm512_cmp_ps_mask(t, _mm512_setzero_ps(), _CMP_LT_OQ);
    return _mm512_mask_mul_ps(q, neg, q, e);
}

/* exp(x) over the float range: x clamped above to 88.8, where p · 2^n is already +inf (x > 88.72,
 * +inf included), then exp_clamped16 (0 below -103.3, -inf included); a NaN x gives NaN. */
static inline __m512 exp16(__m512 x)
{
    return exp_clamped16(_mm512_min_ps(_mm512_set1_ps(88.8f), x)); /* vminps: x, a NaN, when unordered */
}

void fa_vmath512_expf(const float *x, float *y, int64_t n) { FA_VMAP16(x, y, n, exp16(v)); }

void fa_vmath512_sigmoidf(const float *x, float *y, int64_t n) { FA_VMAP16(x, y, n, sigmoid16(v)); }

void fa_vmath512_swishf(const float *x, float *y, int64_t n, float alpha)
{
    const __m512 a = _mm512_set1_ps(alpha);
    FA_VMAP16(x, y, n, _mm512_mul_ps(v, sigmoid16(_mm512_mul_ps(a, v))));
}

/* One softmax row: y = exp(x - max) / sum, or (logsm) x - max - log(sum), 16 lanes; three passes
 * (the max; exp(x - max) written and summed in 16 float accumulators; the scale), the tail of
 * each masked. y may equal x. */
void fa_vmath512_softmax_row(const float *x, float *y, int64_t n, bool logsm)
{
    if (n <= 0) return;
    __m512 vm = _mm512_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) vm = _mm512_max_ps(vm, _mm512_loadu_ps(x + i));
    __mmask16 tail = (__mmask16)((1u << (n - i)) - 1u);
    if (i < n) vm = _mm512_mask_max_ps(vm, tail, vm, _mm512_maskz_loadu_ps(tail, x + i));
    float m = _mm512_reduce_max_ps(vm);
    if (!(m > -INFINITY)) m = 0.0f; /* every element -inf (or NaN): exp(x - 0), as the reference's x - max */
    const __m512 mm = _mm512_set1_ps(m);
    __m512 acc = _mm512_setzero_ps();
    for (i = 0; i + 16 <= n; i += 16) {
        __m512 t = _mm512_sub_ps(_mm512_loadu_ps(x + i), mm);
        __m512 e = exp16(t);
        acc = _mm512_add_ps(acc, e);
        _mm512_storeu_ps(y + i, logsm ? t : e);
    }
    if (i < n) {
        __m512 t = _mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + i), mm);
        __m512 e = _mm512_maskz_mov_ps(tail, exp16(t));
        acc = _mm512_add_ps(acc, e);
        _mm512_mask_storeu_ps(y + i, tail, logsm ? t : e);
    }
    double sum = (double)_mm512_reduce_add_ps(acc);
    const __m512 k = _mm512_set1_ps(logsm ? (float)log(sum) : (float)(1.0 / sum));
    for (i = 0; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(y + i);
        _mm512_storeu_ps(y + i, logsm ? _mm512_sub_ps(v, k) : _mm512_mul_ps(v, k));
    }
    if (i < n) {
        __m512 v = _mm512_maskz_loadu_ps(tail, y + i);
        _mm512_mask_storeu_ps(y + i, tail, logsm ? _mm512_sub_ps(v, k) : _mm512_mul_ps(v, k));
    }
}
