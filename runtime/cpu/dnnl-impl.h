/* runtime/cpu/dnnl-impl — what the cpu target's two oneDNN files (dnnl.c: Conv/ConvTranspose/
 * MatMul/Gemm; dnnl_ops.c: depthwise conv, pools, softmax, layer norm) share: the checking macro
 * and the one CPU engine and stream. */
#ifndef FA_RUNTIME_CPU_DNNL_IMPL_H
#define FA_RUNTIME_CPU_DNNL_IMPL_H

#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>

#include "../runtime-impl.h"

/* Run a oneDNN call; on failure record "file:line: call failed: oneDNN status N" on ctx and
 * jump to the enclosing function's `fail:` label (which releases what it created). */
#define DNNL_CHECK(ctx, call)                                                                    \
    do {                                                                                         \
        dnnl_status_t s_ = (call);                                                               \
        if (s_ != dnnl_success) {                                                                \
            fa_ctx_error((ctx), FA_ERR_RUNTIME, "%s:%d: %s failed: oneDNN status %d", __FILE__,   \
                         __LINE__, #call, (int)s_);                                              \
            goto fail;                                                                           \
        }                                                                                        \
    } while (0)

/* The process's oneDNN CPU engine and in-order stream, created on first use (runtime/cpu/dnnl.c);
 * false when oneDNN cannot create them (the callers then decline and our kernels run). The
 * handles live until the process ends. */
bool fa_dnnl_engine(dnnl_engine_t *engine, dnnl_stream_t *stream);

/* The oneDNN format tag of an activation of rank `rank` in layout l (runtime/cpu/dnnl_ops.c):
 * plain: abc, abcd, ...; NCHW8C / NCHW16C / NHWC: nChw8c / nChw16c / nhwc (rank 4 only). dnnl_format_tag_undef
 * where there is none. */
dnnl_format_tag_t fa_dnnl_layout_tag(fa_layout l, int rank);

/* Constant weights W (plain bytes described by user_md) in the layout want_md a primitive chose
 * (docs/runtime.md "Weights once in memory"): the one reordered copy per (W's bytes, layout) of
 * the whole run, a derived copy of W's blob (fa_blob_derived) that every executor over every
 * graph sharing the blob reads, made by a oneDNN reorder the first time it is asked for; W's
 * own bytes when want_md is user_md. *data: where the primitive reads them; *hold: the blob the
 * kernel keeps a reference to while it lives (fa_blob_unref_reader(*hold, *data) when destroyed:
 * a reader of a derived copy is counted, see fa_blob_drop_plain); *owned: a private
 * copy the kernel frees, only for a W with no blob (a tensor whose data a caller set by hand).
 * Once a copy is made from a W read in place from a file's mapping, the plain pages are released
 * (fa_blob_release_pages): the executors read the copy, and a later plain read faults them in.
 * Errors: oneDNN's, FA_ERR_NOMEM. */
fa_status fa_dnnl_const_weights(fa_ctx *ctx, const fa_tensor *W, const dnnl_memory_desc_t *user_md,
                                const dnnl_memory_desc_t *want_md, const void **data, fa_blob **hold, void **owned);

/* The executor kernel of a FusedKernel node n that is a MatMul/Gemm with a generated epilogue
 * (applier/fused_graph.c gemm_attrs: `gemm` "MatMul" or "Gemm", `gemm_inputs` the input indices
 * of A, B and C or -1, the Gemm's transB/alpha/beta; docs/runtime.md "Generated GEMM
 * epilogues"): the product of A's rows (A row-major [..., K], rows = its leading dims) and B
 * [K, N] (constant: packed once by oneDNN, fa_dnnl_const_weights), C a per-column bias, in blocks
 * of rows sized to half of one core's L2, the blocks spread over the OpenMP team; right after
 * each block, on the same thread, epi (codegen.h ABI with fa_kernel_desc.gemm_epilogue: in[] the
 * node's inputs, then the product — output 0 itself, overwritten in place —, then {r0, r1})
 * runs the epilogue on it. FA_ERR_INPUT / FA_ERR_UNSUPPORTED naming the node when the attributes
 * do not describe such a product; oneDNN's errors. */
fa_status fa_dnnl_gemm_epilogue_kernel(fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_fused_fn epi, fa_custom_kernel *out);

#endif
