/* advisor/codegen — kernel source for one cluster: C for the cpu target (compiled by the system
 * compiler into a shared object by applier/), CUDA C for the cuda target (compiled by NVRTC here
 * for the register/occupancy gate, and by the applier to run). One cluster description, two
 * emitters sharing one expression emitter per op. Same cluster + plan hash -> same bytes. */
#ifndef FA_CODEGEN_H
#define FA_CODEGEN_H

#include "advisor.h"

/* Generated C ABI (cpu), shapes baked in at generation time:
 *
 *     void NAME(const void *const *in, void *const *out, int threads);
 *
 * in[i] is the data of c->inputs[i] (row-major, dtype of that tensor), out[j] the preallocated
 * buffer of c->outputs[j]. The kernel may use OpenMP with `threads` threads. The first line of
 * the source is a comment saying it is generated, by which fuse-advise version, from which
 * plan hash and cluster id.
 *
 * Generated CUDA ABI: `extern "C" __global__ void NAME(const void *const *in, void *const *out)`
 * is NOT used (pointer arrays need a device copy); instead the kernel takes one parameter per
 * input then per output, in cluster order: `extern "C" __global__ void NAME(const float *__restrict__ in0,
 * ..., float *__restrict__ out0, ...)`, launched with *block_size threads and *grid blocks. */

typedef struct fa_codegen_info {
    char name[96];         /* kernel / function name, "fa_fused_c<id>_<hash8>" */
    int block_size;        /* CUDA: threads per block */
    int64_t grid;          /* CUDA: blocks */
    int64_t work_items;    /* elements (elementwise) or rows (reduction) processed */
} fa_codegen_info;

/* True when the cluster kind and every member op have an emitter for this language; otherwise
 * false with *why set to a static sentence. */
bool fa_codegen_supported(const fa_graph *g, const fa_cluster *c, bool cuda, const char **why);
/* Append the C source for cluster c to out. FA_ERR_UNSUPPORTED naming the op without an emitter. */
fa_status fa_codegen_c(fa_ctx *ctx, const fa_graph *g, const fa_cluster *c, const char *plan_hash, fa_buf *out,
                       fa_codegen_info *info);
/* Append the CUDA C source for cluster c to out. */
fa_status fa_codegen_cuda(fa_ctx *ctx, const fa_graph *g, const fa_cluster *c, const char *plan_hash, fa_buf *out,
                          fa_codegen_info *info);

/* The source of cluster c in language lang (the target's kernel_lang): fa_codegen_c or
 * fa_codegen_cuda. */
fa_status fa_codegen(fa_ctx *ctx, const fa_graph *g, const fa_cluster *c, fa_kernel_lang lang, const char *plan_hash,
                     fa_buf *out, fa_codegen_info *info);

#endif
