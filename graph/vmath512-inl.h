/* graph/vmath512-inl.h — the 16-lane exponential and sigmoid that graph/vmath512.c's functions
 * and the kernels that apply them in registers (runtime/cpu/dwconv.c's epilogue) share. Static
 * inline AVX-512F code: include it only from a file compiled with -mavx512f (CMakeLists.txt),
 * and call that file's code only after fa_vmath512_available() (graph/vmath.h) said yes. */
#ifndef FA_VMATH512_INL_H
#define FA_VMATH512_INL_H

#include "expf_poly.h"

#ifdef __AVX512F__ /* empty elsewhere (a file compiled without -mavx512f that includes it gets nothing) */
#include <immintrin.h>

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

#endif /* __AVX512F__ */

#endif
