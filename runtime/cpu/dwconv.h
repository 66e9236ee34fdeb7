/* runtime/cpu/dwconv — a depthwise 2-D convolution with its epilogue applied in registers, on
 * the fused plan's nChw16c activations (AVX-512F).
 *
 * Why: oneDNN 2.6's depthwise kernel (jit_dw:avx512_core) writes its output and, with a swish,
 * runs a second pass over it (its swish post-op is slower than the convolution: runtime/cpu/dnnl.c
 * swish_after_conv); the depthwise layers of MobileNetV2/V3 and EfficientNet-B0 are memory-bound
 * (9 or 25 FMAs per 16 outputs), so one pass that reads each input row from cache and writes each
 * output once, activated, is the fused kernel a compiler would emit for them (issue 35). It is a
 * tactic, not a rule: runtime/cpu/dnnl.c builds oneDNN's primitive too and keeps whichever
 * measured faster on the convolution's own shapes (docs/runtime.md "Convolution tactics").
 *
 * Shapes: x is [N, C, IH, IW] in nChw16c ([N][ceil(C/16)][IH][IW][16] floats), y [N, C, OH, OW]
 * the same way; weights [C, 1, KH, KW] (ONNX Conv with group = C), bias [C] or none. The padded
 * channel tail (C not a multiple of 16) has zero weights and bias, so its outputs are act(0).
 * Every output element is bias + sum over the window of w·x in single precision with FMAs, in
 * kh-major, kw-minor order, then the activation (fa_dwconv_act). */
#ifndef FA_RUNTIME_CPU_DWCONV_H
#define FA_RUNTIME_CPU_DWCONV_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/post_op.h"

typedef struct fa_dwconv fa_dwconv;

/* The geometry of one depthwise convolution (all counts in elements). */
typedef struct fa_dwconv_shape {
    int64_t n, c;          /* batch, channels (= groups = input = output channels) */
    int64_t ih, iw, oh, ow; /* input and output spatial size */
    int kh, kw;            /* kernel size, 1..FA_DWCONV_KMAX each */
    int sh, sw;            /* strides, >= 1 */
    int ph, pw;            /* leading (top, left) pads; the trailing ones follow from oh, ow */
} fa_dwconv_shape;

#define FA_DWCONV_KMAX 7

/* Whether this build and CPU can run it: AVX-512F (fa_vmath512_available). */
bool fa_dwconv_available(void);

/* Whether the epilogue ops[0..n_ops) is one this kernel applies in registers: none, or one unary
 * post-op of RELU, LEAKY_RELU, CLIP, HARD_SWISH, SWISH (graph/post_op.h parameters). */
bool fa_dwconv_epilogue_ok(const fa_post_op *ops, int n_ops);

/* A kernel for shape sh with weights w ([c, 1, kh, kw] floats, copied into the blocked order
 * [cb][kh][kw][16]) and bias b ([c] floats, or NULL for none), epilogue ops (fa_dwconv_epilogue_ok).
 * NULL when out of memory or the shape or epilogue is not supported (dilations are the caller's
 * to exclude: none here). The kernel owns its copies; fa_dwconv_free releases them. */
fa_dwconv *fa_dwconv_create(const fa_dwconv_shape *sh, const float *w, const float *b, const fa_post_op *ops, int n_ops);

/* y = act(conv(x) + b) over the whole batch on `threads` OpenMP threads (rows of output split
 * statically). x and y are the nChw16c buffers above and must not overlap. */
void fa_dwconv_run(const fa_dwconv *d, const float *x, float *y, int threads);

void fa_dwconv_free(fa_dwconv *d);

#endif
