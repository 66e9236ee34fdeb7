/* graph/vmath512 — the AVX-512 variants of graph/vmath's slowest functions (erf, tanh), 16 lanes
 * of SLEEF. This file alone is compiled with -mavx512f (CMakeLists.txt); graph/vmath.c calls it
 * only after fa_vmath512_available() said the CPU has AVX-512F. */
#include "vmath.h"

#include <immintrin.h>
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
