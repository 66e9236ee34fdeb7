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
    bool inplace;      /* output 0 may take the bytes of input `inplace_input`: the kernel reads that
                        * input only as output 0's initial value (oneDNN's sum post-op: dst += conv),
                        * and skips copying it when the two share memory. The executor's memory plan
                        * gives them the same bytes when that input's last reader is this node. */
    int inplace_input;
};

/* ---- the registered targets (runtime/exec.c lists them) ---- */
extern const fa_target_iface fa_target_cpu_iface;  /* runtime/cpu/target.c */
#ifdef FA_HAVE_CUDA
extern const fa_target_iface fa_target_cuda_iface; /* runtime/cuda/target.c */
#endif

/* The cpu target's executor (runtime/cpu/exec_cpu.c): the executor slots of its table. */
fa_status fa_cpu_exec_create(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *opt, void **out);
void fa_cpu_exec_free(void *state);
fa_status fa_cpu_exec_set_input(fa_ctx *ctx, void *state, int i, const fa_value *v);
fa_status fa_cpu_exec_fill_inputs(fa_ctx *ctx, void *state, uint64_t seed);
fa_status fa_cpu_exec_run(fa_ctx *ctx, void *state, const fa_exec_observer *obs);
const fa_value *fa_cpu_exec_output(const void *state, int i);
fa_layout fa_cpu_exec_tensor_layout(const void *state, int tensor);
uint64_t fa_cpu_exec_peak_bytes(const void *state);
const char *fa_cpu_exec_kernel_name(const void *state, const fa_node *n);
const char *fa_cpu_exec_kernel_impl(const void *state, const fa_node *n);
int fa_cpu_exec_reorders(const void *state);
int fa_cpu_exec_threads(const void *state);

/* The cpu target's ceilings (runtime/cpu/ceilings.c): its measure_ceilings slot, and the cache
 * level (sysfs) a working set of ws bytes shows: "L1".."L3", "LLC" when sysfs says nothing. */
fa_status fa_cpu_measure_ceilings(fa_ctx *ctx, int threads, fa_ceilings *out);
const char *fa_cpu_cache_level_name(uint64_t working_set);

#ifdef FA_HAVE_CUDA
/* The cuda target's ceilings on device 0 (runtime/cuda/ceilings.c): its measure_ceilings slot.
 * FA_ERR_UNSUPPORTED without a driver or device; FA_ERR_RUNTIME for CUDA failures. */
fa_status fa_cuda_measure_ceilings(fa_ctx *ctx, int threads, fa_ceilings *out);
#endif

/* oneDNN kernels (runtime/cpu/dnnl.c): Conv, ConvTranspose, MatMul, Gemm on plain layouts.
 * *handled = false (FA_OK) when oneDNN cannot take the node (dtype, shape), so the caller
 * falls back to the op's reference kernel. */
fa_status fa_dnnl_kernel_create(fa_ctx *ctx, const fa_graph *g, const fa_node *n, int threads,
                                fa_kernel *out, bool *handled);
/* The same kernels reading their activations and writing their output in the blocked layout l
 * (the fused plan's executor, fa_exec_options.blocked_layouts): Conv and FusedConv (plain,
 * grouped and depthwise) created on l instead of reordering inside; where oneDNN has no fast
 * convolution reading l (a first conv on 3 or 8 image channels) one reading plain input 0 and
 * writing l, *in0 = PLAIN (else l). *handled = false (FA_OK) when oneDNN cannot run the node on
 * l (the executor then runs it plain). */
fa_status fa_dnnl_kernel_create_blocked(fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_layout l, fa_kernel *out,
                                        fa_layout *in0, bool *handled);
/* oneDNN for the other ops where it beats our reference kernels (runtime/cpu/dnnl_ops.c):
 * depthwise/grouped Conv (blocked layout inside the kernel, plain NCHW at its boundary),
 * MaxPool/AveragePool/GlobalAveragePool/GlobalMaxPool, Softmax/LogSoftmax, LayerNormalization,
 * standard domain, float32. *handled = false (FA_OK) when oneDNN cannot express the node's
 * attributes exactly or (unless `force`) our kernel is the faster one; out is then untouched.
 * Env FA_NO_DNNL_OPS=1 turns these kernels off (FA_NO_DNNL: all of oneDNN). */
fa_status fa_dnnl_ops_kernel_create(fa_ctx *ctx, const fa_graph *g, const fa_node *n, bool force, fa_kernel *out,
                                    bool *handled);
/* The same on the blocked layout l, reading and writing it directly (no reorder inside): grouped
 * and depthwise Conv, the pools, and — on blocked tensors only, plain ones keep our kernels —
 * unary activations (oneDNN eltwise, which keeps the padded channel tail zero as every oneDNN
 * primitive does, so Sigmoid/Exp on C = 24 in nChw16c stay correct), Add/Sub/Mul/Div/Max/Min of
 * two same-shape tensors (oneDNN binary), inference BatchNormalization with constant parameters
 * (oneDNN batch normalization, global statistics) and Concat on channels (oneDNN concat). *handled =
 * false (FA_OK) when oneDNN cannot. */
fa_status fa_dnnl_ops_kernel_create_blocked(fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_layout l, fa_kernel *out,
                                            bool *handled);
/* The cpu target's layout slots (runtime/cpu/dnnl_ops.c). fa_cpu_blocked_layout: the one blocked
 * layout of this machine — what oneDNN's convolution picks for format_tag_any activations (asked
 * once, on a 64-channel 3x3 probe: nChw16c on AVX-512, nChw8c on AVX2/SSE4.1), by ISA when the
 * answer is channels last (measured slower on the zoo models, bench/README.md) or missing; env
 * FA_BLOCKED_LAYOUT=nChw8c|nChw16c|nhwc|plain overrides (plain: no plan layout). fa_cpu_preferred_layout: that layout for a rank-4 float node the blocked
 * kernels above take (its preferred_layout slot), PLAIN otherwise. fa_cpu_reorder_kernel: a
 * oneDNN reorder primitive between two layouts of v's shape ("dnnl:reorder(nchw>nChw16c)"). */
fa_layout fa_cpu_blocked_layout(void);
fa_layout fa_cpu_preferred_layout(const fa_graph *g, const fa_node *n);
fa_status fa_cpu_reorder_kernel(fa_ctx *ctx, const fa_value *v, fa_layout from, fa_layout to, fa_custom_kernel *out);
/* oneDNN library version string, e.g. "oneDNN 2.6.3". */
const char *fa_dnnl_version(void);

#endif
