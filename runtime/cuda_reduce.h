/* runtime/cuda_reduce — CUDA C text shared by the cuda executor's kernels and the code generator. */
#ifndef FA_RUNTIME_CUDA_REDUCE_H
#define FA_RUNTIME_CUDA_REDUCE_H

/* The CUDA C text of the warp and block reductions, written once and pasted by both CUDA
 * sources: the cuda executor's kernel module (runtime/cuda/kernels.c) and the code generator's
 * row kernels (codegen/codegen.c). Defines fa_warp_sum/max/min(v) (butterfly __shfl_xor_sync over
 * the 32 lanes, every lane gets the result) and fa_block_sum/max/min(v, s) with s a __shared__
 * float[32]: blockDim.x a multiple of 32 (<= 1024); every warp reduces by shuffles, the warp
 * partials go through s, every warp then reduces the partials, so all threads return the result;
 * the leading barrier lets s be reused by consecutive reductions. Identities: 0, -inf, +inf. */
#define FA_CUDA_REDUCE_HELPERS                                                                   \
    "__device__ __forceinline__ float fa_warp_sum(float v)\n"                                    \
    "{\n"                                                                                        \
    "    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n"           \
    "    return v;\n"                                                                            \
    "}\n"                                                                                        \
    "__device__ __forceinline__ float fa_warp_max(float v)\n"                                    \
    "{\n"                                                                                        \
    "    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));\n"  \
    "    return v;\n"                                                                            \
    "}\n"                                                                                        \
    "__device__ __forceinline__ float fa_warp_min(float v)\n"                                    \
    "{\n"                                                                                        \
    "    for (int o = 16; o > 0; o >>= 1) v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));\n"  \
    "    return v;\n"                                                                            \
    "}\n"                                                                                        \
    "/* Block-wide reduction (blockDim.x a multiple of 32): every warp reduces by shuffles, warp\n"  \
    " * partials go through s[32], every warp then reduces the partials, so all threads return\n"    \
    " * the result. The leading barrier lets s be reused by consecutive reductions. */\n"          \
    "#define FA_BLOCK_REDUCE(NAME, WARP, IDENT) \\\n"                                           \
    "    __device__ __forceinline__ float NAME(float v, float *s) \\\n"                         \
    "    { \\\n"                                                                                 \
    "        const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5; \\\n" \
    "        v = WARP(v); \\\n"                                                                  \
    "        __syncthreads(); \\\n"                                                              \
    "        if (lane == 0) s[w] = v; \\\n"                                                      \
    "        __syncthreads(); \\\n"                                                              \
    "        return WARP(lane < nw ? s[lane] : (IDENT)); \\\n"                                   \
    "    }\n"                                                                                    \
    "FA_BLOCK_REDUCE(fa_block_sum, fa_warp_sum, 0.0f)\n"                                         \
    "FA_BLOCK_REDUCE(fa_block_max, fa_warp_max, -__int_as_float(0x7f800000))\n"                  \
    "FA_BLOCK_REDUCE(fa_block_min, fa_warp_min, __int_as_float(0x7f800000))\n"

#endif
