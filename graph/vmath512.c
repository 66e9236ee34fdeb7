/* graph/vmath512 — the AVX-512 variants of graph/vmath's slowest functions (erf, tanh), 16 lanes
 * of SLEEF. This file alone is compiled with -mavx512f (CMakeLists.txt); graph/vmath.c calls it
 * only after fa_vmath512_available() said the CPU has AVX-512F. */
#include "vmath.h"
#include "vmath512-inl.h"

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

/* Sum of x[0..n) and of (x - m)^2, each in 8 double lanes (two 8-float halves a step, converted):
 * the same double accumulation as the scalar loop, summed in another order. */
static double sum_pd(const float *x, int64_t n, double m, bool sq)
{
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
    const __m512d vm = _mm512_set1_pd(m);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512d lo = _mm512_cvtps_pd(_mm256_loadu_ps(x + i)), hi = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
        if (sq) {
            lo = _mm512_sub_pd(lo, vm), hi = _mm512_sub_pd(hi, vm);
            a0 = _mm512_fmadd_pd(lo, lo, a0), a1 = _mm512_fmadd_pd(hi, hi, a1);
        } else {
            a0 = _mm512_add_pd(a0, lo), a1 = _mm512_add_pd(a1, hi);
        }
    }
    double s = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
    for (; i < n; i++) s += sq ? ((double)x[i] - m) * ((double)x[i] - m) : (double)x[i];
    return s;
}

void fa_vmath512_norm_plane(const float *x, float *y, int64_t n, double scale, double bias, double eps)
{
    if (n <= 0) return;
    double mean = sum_pd(x, n, 0, false) / (double)n;
    double var = sum_pd(x, n, mean, true) / (double)n;
    double k = scale / sqrt(var + eps);
    /* y = (x - mean)·k + bias in double, rounded once to float, as the scalar kernel */
    const __m512d vm = _mm512_set1_pd(mean), vk = _mm512_set1_pd(k), vb = _mm512_set1_pd(bias);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
        _mm256_storeu_ps(y + i, _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(_mm512_sub_pd(v, vm), vk), vb)));
    }
    for (; i < n; i++) y[i] = (float)(((double)x[i] - mean) * k + bias);
}
