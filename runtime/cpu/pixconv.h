/* runtime/cpu/pixconv — a convolution on one pixel: a batch-1 Conv whose input is [1, K, 1, ...]
 * (every spatial dim 1), kernel 1 x ... x 1, no pads, group 1, as the squeeze-excitation blocks of
 * MobileNetV3, EfficientNet and RegNetY run it after their global pool. It is a matrix-vector
 * product, y[n] = act(b[n] + W[n, :] · x), with its epilogue applied in registers (AVX-512F).
 *
 * Why: oneDNN 2.6 runs such a convolution through its 1x1 convolution kernel, which vectorises
 * over the spatial positions and the output channels of a block; with one position most of each
 * vector is idle and its setup is most of the time: 2.8-3.7 us for MobileNetV3-small's smallest
 * squeeze-excitation layers (0.6-24 KB of weights) in the fused model's trace, where reading the
 * weights once takes a fraction of a microsecond (issue 35: "depthwise and squeeze-excitation
 * blocks"). The weights are read where the model holds them, row by row, as runtime/cpu/gemv.c
 * reads a Linear's (W is ONNX's [N, K, 1, ...], i.e. [N, K] row-major).
 *
 * Layouts: with every spatial dim 1, channel c of a plain, nhwc, nChw8c or nChw16c tensor is float
 * c: x is read as K floats in any of them, y written as N floats, and where the output layout
 * pads the channels to a block (fa_layout_channel_block) the padded tail is written with zeros,
 * as oneDNN keeps it. Sums: four partial sums per row over K (16 lanes each), added, then the
 * bias, then the post-op — a different order from oneDNN's, within the float tolerance every
 * check uses. */
#ifndef FA_RUNTIME_CPU_PIXCONV_H
#define FA_RUNTIME_CPU_PIXCONV_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/post_op.h"

typedef struct fa_pixconv fa_pixconv;

/* Whether this build and CPU can run it: AVX-512F (fa_vmath512_available). */
bool fa_pixconv_available(void);

/* Whether ops[0..n_ops) is an epilogue it applies: none, or one unary post-op of RELU, LEAKY_RELU,
 * CLIP, HARD_SWISH, SWISH, SIGMOID (graph/post_op.h parameters). */
bool fa_pixconv_epilogue_ok(const fa_post_op *ops, int n_ops);

/* A kernel for K inputs and N outputs, the output written over n_padded >= N floats (the tail
 * zeroed), epilogue ops (fa_pixconv_epilogue_ok). NULL when out of memory, K or N < 1, n_padded <
 * N, or the epilogue is not one it applies. Holds no weights: they are handed to each run. */
fa_pixconv *fa_pixconv_create(int64_t k, int64_t n, int64_t n_padded, const fa_post_op *ops, int n_ops);

/* y[0..n_padded) = act(b + W · x) over the N rows, the tail 0: x K floats, W N x K floats
 * row-major, b N floats or NULL (none), on `threads` OpenMP threads (rows split) where the weights
 * number at least FA_PIXCONV_PAR_MIN_WEIGHTS, else one. x and y must not overlap. */
void fa_pixconv_run(const fa_pixconv *p, const float *x, const float *w, const float *b, float *y, int threads);

void fa_pixconv_free(fa_pixconv *p);

/* below this many weights one thread does it: waking a second one (~5 us) costs more than half
 * of it (runtime/cpu/gemv.c's bound) */
#define FA_PIXCONV_PAR_MIN_WEIGHTS 65536

#endif
