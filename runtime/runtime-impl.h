/* runtime/runtime-impl — private: a target's tables (what runtime.h's wrappers call), per-node
 * kernel objects shared by exec.c and the cpu kernels, and the targets' own entry points. */
#ifndef FA_RUNTIME_IMPL_H
#define FA_RUNTIME_IMPL_H

#include "runtime.h"
#include "runtime/ceilings.h"
#include "runtime/fused.h"
#include "runtime/layout.h"

/* ==== a target: three tables split by object, as ggml splits its backend tables (device,
 * backend, buffer) ====
 * Everything that differs between a cpu and a GPU lives behind them; nothing outside runtime/
 * sees them: callers use runtime.h's wrappers (fa_target_*, fa_exec_*), which own the NULL check
 * of every optional slot, so a slot changes here and in its wrapper only. A target defines its
 * tables in its own folder (runtime/cpu/target.c, runtime/cuda/target.c) and is listed in
 * runtime/exec.c; docs/architecture.md "Adding an execution target". Slots marked (optional)
 * may be NULL. */

/* The device: presence, identity, ceilings. */
typedef struct fa_target_device_i {
    /* A device is present: FA_TARGET_AUTO picks the first registered accelerator for which this
     * is true. Never fails, never prints. */
    bool (*available)(void);
    /* Open the device (load its driver) and describe it. */
    fa_status (*device_open)(fa_ctx *ctx, fa_target_device *out);
    /* Device key of the ceilings cache ("cpu:<model>:<threads>t", "cuda:<name>:sm_XY"). */
    fa_status (*device_key)(fa_ctx *ctx, int threads, char *buf, size_t cap);
    /* (optional) fa_target_measure_ceilings. */
    fa_status (*measure_ceilings)(fa_ctx *ctx, int threads, fa_ceilings *out);
    const char *latency_ceiling;  /* the stored name of launch_ns: "dispatch" (cpu), "launch" (cuda) */
    /* (optional) the tag of the current measurement method, carried in the measured ceilings'
     * detail: stored ceilings whose detail lacks it were measured by an earlier method and are
     * measured again (fa_target_ceilings_method). */
    const char *ceilings_method;
    /* (optional) the name of the cache level a working set of ws bytes shows ("L2"). */
    const char *(*cache_level_name)(uint64_t working_set);
} fa_target_device_i;

/* The unfused executor (fa_exec_* forward here; state is the target's) and its layouts. */
typedef struct fa_target_exec_i {
    fa_status (*exec_create)(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *opt, void **state);
    void (*exec_free)(void *state);
    fa_status (*exec_set_input)(fa_ctx *ctx, void *state, int i, const fa_value *v);
    fa_status (*exec_fill_inputs)(fa_ctx *ctx, void *state, uint64_t seed);
    fa_status (*exec_run)(fa_ctx *ctx, void *state, const fa_exec_observer *obs);
    const fa_value *(*exec_output)(const void *state, int i);
    /* (optional) fa_exec_tensor_layout; NULL: every tensor PLAIN */
    fa_layout (*exec_tensor_layout)(const void *state, int tensor);
    uint64_t (*exec_peak_bytes)(const void *state);
    const char *(*exec_kernel_name)(const void *state, const fa_node *n);
    /* (optional) the library implementation behind node n's kernel (fa_exec_kernel_impl) */
    const char *(*exec_kernel_impl)(const void *state, const fa_node *n);
    /* (optional) reorder kernels per run (fa_exec_reorders); NULL = every tensor plain */
    int (*exec_reorders)(const void *state);
    /* (optional) fa_exec_veto_measured_tactics; NULL: no kernel of the target chooses a tactic */
    int (*exec_veto_tactics)(void *state);
    int (*exec_threads)(const void *state);
    /* fa_target_supports_node. */
    bool (*supports_node)(const fa_graph *g, const fa_node *n, char *why, size_t why_cap);
    /* (optional, with FA_TARGET_CAP_LAYOUTS) The layout node n's kernel can read its activation
     * inputs (fa_layout_input_follows) and write its output 0 in, when the executor keeps
     * layouts (fa_exec_options.blocked_layouts); PLAIN when it reads plain tensors only. One
     * blocked layout per executor (`plan`, the plan layout: fa_exec_options.plan_layout resolved,
     * never PLAIN), so that every producer and consumer agrees. A kernel may still decline it at
     * executor creation (the executor then runs that node plain). */
    fa_layout (*preferred_layout)(const fa_graph *g, const fa_node *n, fa_layout plan);
    /* (optional, with FA_TARGET_CAP_LAYOUTS) fa_target_plan_layouts on this machine. */
    void (*plan_layouts)(fa_plan_layouts *out);
    /* (optional, with FA_TARGET_CAP_LAYOUTS) A kernel that converts a tensor of v's shape from
     * layout `from` to `to`, run by the executor as a kernel of its own (named in traces)
     * between a producer and a consumer whose layouts differ. */
    fa_status (*reorder_kernel)(fa_ctx *ctx, const fa_value *v, fa_layout from, fa_layout to, fa_custom_kernel *out);
} fa_target_exec_i;

/* Generated fused kernels: compile, load, report. */
typedef struct fa_target_fused_i {
    fa_kernel_lang kernel_lang;
    fa_status (*fused_compile)(fa_ctx *ctx, const fa_fused_compile_options *o, int n, const fa_fused_source *src,
                               fa_fused_binary **out, char **errs);
    fa_status (*fused_kernel)(fa_ctx *ctx, const fa_fused_binary *b, fa_custom_kernel *out);
    /* (optional) the kernel of a FusedKernel node n that is a GEMM with generated epilogue b
     * (fa_target_fused_node_kernel); NULL: the target has none */
    fa_status (*fused_gemm_kernel)(fa_ctx *ctx, const fa_fused_binary *b, const fa_graph *g, const fa_node *n,
                                   fa_custom_kernel *out);
    /* (optional, with FA_TARGET_CAP_KERNEL_REPORT) what the compiler reported for b */
    bool (*fused_resources)(const fa_fused_binary *b, fa_kernel_resources *out);
    void (*fused_free)(fa_fused_binary *b);
} fa_target_fused_i;

struct fa_target_iface {
    fa_target id;
    const char *name; /* fa_target_name(id) */
    const fa_target_device_i *device;
    const fa_target_exec_i *exec;
    const fa_target_fused_i *fused;
};

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
int fa_cpu_exec_veto_tactics(void *state);
int fa_cpu_exec_threads(const void *state);

/* The cpu target's ceilings (runtime/cpu/ceilings.c): its measure_ceilings slot, and the cache
 * level (sysfs) a working set of ws bytes shows: "L1".."L3", "LLC" when sysfs says nothing. */
fa_status fa_cpu_measure_ceilings(fa_ctx *ctx, int threads, fa_ceilings *out);
/* The cpu ceilings' method tag (fa_target_device_i.ceilings_method): "method 2" since the FP32
 * peak is measured with fused multiply-add instructions (runtime/cpu/ceilings.c). */
#define FA_CPU_CEILINGS_METHOD "method 2"
/* The FP32 peak's kernel on this CPU, for tests: iters steps of acc[i] = acc[i] * x + y on each
 * of the floats it updates (16 chains of 16 lanes with AVX-512F, 12 of 8 with AVX2+FMA: one
 * rounding per step; 8 scalar multiply-adds otherwise), in place. Returns that count, or -1 when
 * acc is NULL or cap (floats) is smaller. */
int fa_cpu_peak_chain(float *acc, int cap, float x, float y, uint64_t iters);
const char *fa_cpu_cache_level_name(uint64_t working_set);

#ifdef FA_HAVE_CUDA
/* The cuda target's ceilings on device 0 (runtime/cuda/ceilings.c): its measure_ceilings slot.
 * FA_ERR_UNSUPPORTED without a driver or device; FA_ERR_RUNTIME for CUDA failures. */
fa_status fa_cuda_measure_ceilings(fa_ctx *ctx, int threads, fa_ceilings *out);
#endif

/* runtime/cpu/gemv.c: a batch-1 MatMul/Gemm with constant 2-D weights as a matrix-vector product
 * streaming the weights where the model holds them (conditions and figures in that file); handled
 * false leaves the node to oneDNN. fa_cpu_gemv_available: AVX-512F or AVX2 + FMA, checked once. */
fa_status fa_cpu_gemv_kernel_create(fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_kernel *out, bool *handled);
bool fa_cpu_gemv_available(void);
/* Tests only: run the product in instruction set `isa` (1 AVX2 + FMA, 0 none: oneDNN keeps the
 * nodes) where the CPU has it; -1 restores the CPU's own (AVX-512F, else AVX2 + FMA). */
void fa_cpu_gemv_force_isa(int isa);
/* One batch-1 product, for the unfused kernel and the one-row generated-epilogue GEMM:
 * y[N] = alpha · x[K] · B + beta · C, B [N, K] when rows (Gemm transB), else [K, N]; C NULL, one
 * float (c_numel 1, broadcast) or N floats. partial: the columns form's per-thread partial rows,
 * grown on demand and owned by the struct (fa_cpu_gemv_release frees them). Zero-initialise the
 * scratch fields. Call only where fa_cpu_gemv_available(). */
typedef struct fa_cpu_gemv {
    int64_t K, N;
    bool rows;
    float alpha, beta;
    float *partial;
    int cap_threads;
} fa_cpu_gemv;
/* false: out of memory for the partial rows (y not written) */
bool fa_cpu_gemv_run(fa_cpu_gemv *g, const float *x, const float *B, const float *C, int64_t c_numel, int threads,
                     float *y);
void fa_cpu_gemv_release(fa_cpu_gemv *g);
/* y[n] = B[n, :] · x for n in [n0, n1), B row-major with K columns: four 16-lane accumulators per
 * row, a masked tail (the dot form of the product; runtime/cpu/pixconv.c's rows too). AVX-512F:
 * call only where the CPU has it. */
void fa_cpu_gemv_dot_rows16(const float *x, const float *B, int64_t K, int64_t n0, int64_t n1, float *y);
/* oneDNN kernels (runtime/cpu/dnnl.c): Conv, ConvTranspose, MatMul, Gemm on plain layouts.
 * *handled = false (FA_OK) when oneDNN cannot take the node (dtype, shape), so the caller
 * falls back to the op's reference kernel. tactic FA_CONV_TACTIC_MEASURED: an unfused 2-D Conv
 * takes oneDNN's plain-NCHW kernel or the same convolution with its activations reordered
 * inside, whichever measured faster (fa_conv_tactic); else the plain kernel. */
fa_status fa_dnnl_kernel_create(fa_ctx *ctx, const fa_graph *g, const fa_node *n, int threads, fa_conv_tactic tactic,
                                fa_kernel *out, bool *handled);
/* The same kernels reading their activations and writing their output in the blocked layout l
 * (the fused plan's executor, fa_exec_options.blocked_layouts): Conv and FusedConv (plain,
 * grouped and depthwise) created on l instead of reordering inside; where oneDNN has no fast
 * convolution reading l (a first conv on 3 or 8 image channels) one reading plain input 0 and
 * writing l, *in0 = PLAIN (else l). *handled = false (FA_OK) when oneDNN cannot run the node on
 * l (the executor then runs it plain). tactic: the algorithm of a 3x3 convolution (fa_conv_tactic,
 * after fa_conv_tactic_effective). */
fa_status fa_dnnl_kernel_create_blocked(fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_layout l, fa_conv_tactic tactic,
                                        fa_kernel *out, fa_layout *in0, bool *handled);
/* Benchmarks and tests only (not thread-safe; kernels created after the call): true gives a fused
 * convolution's trailing swish to oneDNN as its eltwise post-op, as on a CPU without AVX-512F,
 * instead of applying it after the primitive (runtime/cpu/dnnl.c swish_after_conv); false
 * restores. */
void fa_dnnl_swish_post_op_force(bool on);
/* Benchmarks and tests only (not thread-safe): the cpu executor's wake-ahead of the pool over a
 * stretch of one-thread kernels (runtime/cpu/exec_cpu.c run_stretch_awake): mode 1 every
 * stretch that a kernel on the pool's threads ends, whatever it took; 0 none; -1 (the default)
 * by the stretch's duration in the last run and FA_WAKE_AHEAD. */
void fa_cpu_wake_ahead_force(int mode);
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
 * FA_BLOCKED_LAYOUT=nChw8c|nChw16c|nhwc|plain overrides (plain: no plan layout); the plan's default
 * (fa_exec_options.plan_layout PLAIN). fa_cpu_plan_layouts: that default and the layouts oneDNN
 * runs convolutions on here (fa_target_plan_layouts). fa_cpu_preferred_layout: plan layout l for a
 * rank-4 float node the blocked kernels above take (its preferred_layout slot), PLAIN otherwise
 * (and for l PLAIN). fa_cpu_reorder_kernel: a
 * oneDNN reorder primitive between two layouts of v's shape ("dnnl:reorder(nchw>nChw16c)"). */
fa_layout fa_cpu_blocked_layout(void);
void fa_cpu_plan_layouts(fa_plan_layouts *out);
fa_layout fa_cpu_preferred_layout(const fa_graph *g, const fa_node *n, fa_layout l);
fa_status fa_cpu_reorder_kernel(fa_ctx *ctx, const fa_value *v, fa_layout from, fa_layout to, fa_custom_kernel *out);
/* oneDNN library version string, e.g. "oneDNN 2.6.3". */
const char *fa_dnnl_version(void);
/* When k is a oneDNN convolution kernel whose measured tactic reordered its activations inside
 * (runtime/cpu/dnnl.c blocked_reorder_inside, FA_CONV_TACTIC_MEASURED), that decision for its
 * signature becomes "direct" for the rest of the process: executors created afterwards build the
 * direct kernel there. k itself is unchanged (the caller frees and rebuilds its executor).
 * Returns 1 when vetoed, 0 for any other kernel (NULL included). Thread-safe (the memo's lock). */
int fa_dnnl_kernel_veto_tactic(fa_kernel *k);
/* Test hook (tests/e2e/test_verify_bound.c): while on, every oneDNN convolution kernel whose
 * algorithm a tactic chose (Winograd, or reordered inside: the kernels fa_dnnl_kernel_veto_tactic
 * vetoes) adds 1.0 to its first output element — a wrong kernel the applier's verification must
 * catch and its veto must replace. Off by default; nothing outside the tests turns it on. */
void fa_dnnl_test_tactic_defect(bool on);

#endif
