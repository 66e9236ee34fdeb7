/* codegen/codegen — kernel source for one kernel description: C for the cpu target (compiled by
 * the system compiler through the cpu target's table), CUDA C for the cuda target (NVRTC through
 * the cuda target's table). One description, two emitters sharing one expression emitter per op
 * (the unary ops' expressions come from graph/op_math.h). Same description + plan hash -> same
 * bytes. The module sits between analyzer and advisor (DESIGN.md): it knows graphs, not plans;
 * the advisor describes a cluster (advisor/codegen.h, fa_cluster_kernel_desc). docs/codegen.md. */
#ifndef FA_CODEGEN_H
#define FA_CODEGEN_H

#include "core/core.h"
#include "graph/graph.h"
#include "runtime/fused.h"

/* Generated C ABI (cpu), shapes baked in at generation time:
 *
 *     void NAME(const void *const *in, void *const *out, int threads);
 *
 * in[i] is the data of desc->inputs[i] (row-major, dtype of that tensor; in desc->layout for an
 * input that follows it), out[j] the preallocated buffer of desc->outputs[j] (in desc->layout,
 * channels padded to its block). The kernel may use OpenMP with `threads` threads. The first line of
 * the source is a comment saying it is generated, by which fuse-advise version, from which
 * plan hash and cluster id.
 *
 * Generated CUDA ABI: `extern "C" __global__ void NAME(const void *const *in, void *const *out)`
 * is NOT used (pointer arrays need a device copy); instead the kernel takes one parameter per
 * input then per output, in description order: `extern "C" __global__ void NAME(const float
 * *__restrict__ in0, ..., float *__restrict__ out0, ...)`, launched with *block_size threads and
 * *grid blocks. */

/* What kind of kernel a description asks for. Stored nowhere. */
typedef enum fa_kernel_kind {
    FA_KERNEL_ELEMENTWISE = 0, /* one loop over the output index space (an elementwise chain) */
    FA_KERNEL_HORIZONTAL = 1,  /* the same loop, one store per output (consumers of one input) */
    FA_KERNEL_ROWS = 2,        /* a row kernel: a reduction over the innermost axes with its
                                  elementwise prologue/epilogue */
    FA_KERNEL_EPILOGUE = 3,    /* a library's fused epilogue: nothing generated */
    FA_KERNEL_BN_FOLD = 4,     /* folded weights: nothing generated */
    FA_KERNEL_ATTENTION = 5,   /* softmax(scale·Q·Kᵀ + masks)·V with the views around Q, K, V and the
                                  output: tiled over keys with an online softmax, the scores never
                                  written (codegen/attention.c) */
    FA_KERNEL_KIND_COUNT
} fa_kernel_kind;

/* One kernel to generate: member nodes of a graph, the tensors it reads from outside (inputs, in
 * parameter order) and writes (outputs). Arrays are borrowed. */
typedef struct fa_kernel_desc {
    int id;                  /* names the kernel ("fa_fused_c<id>_<hash8>") */
    fa_kernel_kind kind;
    fa_reduce_kind reduce;   /* FA_KERNEL_ROWS only: the row reduction (graph/graph.h; softmax,
                                log-softmax, layer norm and RMS norm are generated) */
    int reduce_axis;         /* row kernels: the first reduced axis (negative from the end) */
    int anchor;              /* row kernels: the reduction node (-1: the first member that reduces) */
    const int *members;      /* node ids */
    int n_members;
    const int *inputs;       /* tensor ids */
    int n_inputs;
    const int *outputs;      /* tensor ids */
    int n_outputs;
    /* The layout the kernel reads its following inputs and writes its output in
     * (fa_layout_of_generated decides it from the target's plan). PLAIN (0): row-major, as
     * ONNX defines every tensor. nChw8c / nChw16c / nhwc (ELEMENTWISE, one rank-4 float output,
     * C only): the loop runs over the output's blocks, an input that follows
     * (fa_layout_operand_follows: an activation of the output's channels, each other dim the
     * output's or 1) is read at its own blocked offset of the element's (n, c, h, w), every
     * other input (constants, lower-rank operands) plain at its broadcast offset; the padded
     * channels of the last block (C not a multiple of the block) are written 0 and no input is
     * read for them. The CUDA generator refuses any layout but PLAIN. */
    fa_layout layout;
    /* A GEMM's generated epilogue (ELEMENTWISE, PLAIN, C only; false: off). The member `anchor`
     * (a MatMul or Gemm) is not generated: the caller computes it, and the kernel runs the other
     * members over rows [r0, r1) of the anchor's output only — output elements [r0·N, r1·N), N the
     * product's last dim. The product is read from in[n_inputs] (the call's out[0]: the caller
     * computes the product into the cluster's one output, which the kernel overwrites in place,
     * so neither is declared restrict), {r0, r1} as two int64_t from in[n_inputs + 1]; no OpenMP
     * team of its own (the caller threads over blocks of rows and passes threads = 1). Every
     * member must keep the product's element count. runtime/cpu/dnnl.c
     * fa_dnnl_gemm_epilogue_kernel calls it on each block of rows right after oneDNN computed it. */
    bool gemm_epilogue;
} fa_kernel_desc;

typedef struct fa_codegen_info {
    char name[96];         /* kernel / function name, "fa_fused_c<id>_<hash8>" */
    int block_size;        /* CUDA: threads per block */
    int64_t grid;          /* CUDA: blocks */
    int64_t work_items;    /* elements (elementwise) or rows (reduction) processed */
} fa_codegen_info;

/* The generated C opens an OpenMP team only for a loop whose whole work is more than this many
 * elements (rows x row length for row kernels); every size is a constant of the kernel, so the
 * decision is made when the source is generated and a smaller kernel is a plain (`omp simd`) loop
 * with no parallel region at all. Why: with `if(...)` false, or one thread, libgomp still creates
 * and frees a one-thread team on every call (GOMP_parallel: gomp_new_team mallocs it unless the
 * pool's last team has that size), measured ~1,500 instructions and 0.3-1 µs per call here (valgrind;
 * bench/bench_dispatch), more than the whole work of a 256-element chain. 16384 floats is 64 KiB per
 * operand, about 2-5 µs of one core: the split only pays beyond it. The attention kernel opens its
 * team only when it has more than one task (batch x head x query blocks). */
#define FA_CODEGEN_PARALLEL_MIN 16384

/* True when the kind and every member op have an emitter for language lang; otherwise false with
 * *why set to a static sentence. */
bool fa_codegen_kernel_supported(const fa_graph *g, const fa_kernel_desc *d, fa_kernel_lang lang, const char **why);
/* Append the source of d in language lang to out. FA_ERR_UNSUPPORTED naming the node and op
 * without an emitter (or the tensor whose dtype/shape is not generated). */
fa_status fa_codegen_kernel(fa_ctx *ctx, const fa_graph *g, const fa_kernel_desc *d, fa_kernel_lang lang,
                            const char *plan_hash, fa_buf *out, fa_codegen_info *info);

#endif
