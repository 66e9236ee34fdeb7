/* runtime/cpu/epilogue512-inl.h — one unary post-op (graph/post_op.h's definitions) on 16 lanes
 * in registers, for the kernels that apply their epilogue before the store (runtime/cpu/dwconv.c,
 * runtime/cpu/pixconv.c). Static inline AVX-512F code: include it only from a file compiled with
 * -mavx512f (CMakeLists.txt), and run that file's code only after fa_vmath512_available(). */
#ifndef FA_RUNTIME_CPU_EPILOGUE512_INL_H
#define FA_RUNTIME_CPU_EPILOGUE512_INL_H

#include "graph/post_op.h"
#include "graph/vmath512-inl.h"

#ifdef __AVX512F__
#include <immintrin.h>

/* Whether fa_unary16 applies kind k (the rest pass v through: callers check first). */
static inline bool fa_unary16_has(fa_post_op_kind k)
{
    switch (k) {
    case FA_POST_OP_RELU:
    case FA_POST_OP_LEAKY_RELU:
    case FA_POST_OP_CLIP:
    case FA_POST_OP_HARD_SWISH:
    case FA_POST_OP_SWISH:
    case FA_POST_OP_SIGMOID: return true;
    default: return false;
    }
}

/* kind k with its parameters alpha, beta on v: relu max(v, 0); leaky relu v < 0 ? alpha·v : v;
 * clip min(max(v, alpha), beta); hard swish v·min(max(v/6 + 1/2, 0), 1) (ONNX HardSwish); swish
 * v·sigmoid(alpha·v); sigmoid (graph/vmath512-inl.h's, as the unfused Sigmoid takes it). */
static inline __m512 fa_unary16(fa_post_op_kind k, float alpha, float beta, __m512 v)
{
    switch (k) {
    case FA_POST_OP_RELU: return _mm512_max_ps(v, _mm512_setzero_ps());
    case FA_POST_OP_LEAKY_RELU: {
        __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
        return _mm512_mask_mul_ps(v, neg, v, _mm512_set1_ps(alpha));
    }
    case FA_POST_OP_CLIP: return _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(alpha)), _mm512_set1_ps(beta));
    case FA_POST_OP_HARD_SWISH: {
        __m512 t = _mm512_fmadd_ps(v, _mm512_set1_ps(1.0f / 6.0f), _mm512_set1_ps(0.5f));
        t = _mm512_min_ps(_mm512_max_ps(t, _mm512_setzero_ps()), _mm512_set1_ps(1.0f));
        return _mm512_mul_ps(v, t);
    }
    case FA_POST_OP_SWISH: return _mm512_mul_ps(v, sigmoid16(_mm512_mul_ps(_mm512_set1_ps(alpha), v)));
    case FA_POST_OP_SIGMOID: return sigmoid16(v);
    default: return v;
    }
}

#endif /* __AVX512F__ */

#endif
