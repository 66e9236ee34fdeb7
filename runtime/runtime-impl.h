/* runtime/runtime-impl — private: per-node kernel objects shared by exec.c and the cpu kernels. */
#ifndef FA_RUNTIME_IMPL_H
#define FA_RUNTIME_IMPL_H

#include "runtime.h"

/* A prepared kernel for one node on one target. */
typedef struct fa_kernel fa_kernel;
struct fa_kernel {
    const char *name; /* static string or owned by state; e.g. "dnnl:conv", "ref:Relu" */
    fa_status (*run)(fa_ctx *ctx, fa_kernel *k, const fa_node *n, const fa_value *in, int n_in,
                     fa_value *out, int n_out, int threads);
    void (*destroy)(fa_kernel *k);
    void *state;
    const char *impl; /* a library kernel's chosen implementation (oneDNN's impl_info_str, e.g.
                       * "jit:avx512_core", "gemm:jit", "ref:any"), owned by state; NULL otherwise */
};

/* oneDNN kernels (runtime/cpu/dnnl.c): Conv, ConvTranspose, MatMul, Gemm on plain layouts.
 * *handled = false (FA_OK) when oneDNN cannot take the node (dtype, shape), so the caller
 * falls back to the op's reference kernel. */
fa_status fa_dnnl_kernel_create(fa_ctx *ctx, const fa_graph *g, const fa_node *n, int threads,
                                fa_kernel *out, bool *handled);
/* oneDNN library version string, e.g. "oneDNN 2.6.3". */
const char *fa_dnnl_version(void);

#endif
