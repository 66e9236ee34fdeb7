/* runtime — the unfused executor: runs a prepared graph op by op, one kernel per live node, on an
 * execution target (cpu always; cuda when built with the toolkit and a device is present), and
 * the target it runs on, asked through thin wrappers (the tables are private: runtime-impl.h).
 * The rest of the module has a header per subject: generated fused kernels on a target
 * (runtime/fused.h), device ceilings (runtime/ceilings.h), layouts between a target's kernels
 * (runtime/layout.h), cuda library epilogues (runtime/cuda_epilogue.h), the CUDA reduction text
 * (runtime/cuda_reduce.h). */
#ifndef FA_RUNTIME_H
#define FA_RUNTIME_H

#include "core/core.h"
#include "graph/graph.h"

/* Execution targets. A run stores the target by name (fa_target_name); the numeric values are
 * never stored, but the enum only grows at its end. Each value other than AUTO names one target
 * (its tables registered by its folder, runtime-impl.h), asked through the wrappers below. */
typedef enum fa_target {
    FA_TARGET_AUTO = 0,
    FA_TARGET_CPU = 1,
    FA_TARGET_CUDA = 2,
    FA_TARGET_COUNT
} fa_target;
/* "auto", "cpu", "cuda" (the name of every value, registered in this build or not). */
const char *fa_target_name(fa_target t);
/* A target name (fa_target_name) -> its value; FA_ERR_USAGE listing the names otherwise. */
fa_status fa_target_parse(fa_ctx *ctx, const char *s, fa_target *out);

/* The kernel name a cpu executor gives a view (Reshape, Flatten, Squeeze, Unsqueeze, Identity)
 * whose output it places on its input's bytes: the node still shows in a trace, one record per
 * run, moving nothing (docs/runtime.md "Memory plan"). */
#define FA_VIEW_KERNEL_NAME "view"

/* Called around every kernel launch (the cpu collector's hook). node = graph node id. */
typedef struct fa_exec_observer {
    void *user;
    void (*kernel_begin)(void *user, const fa_node *n, const char *kernel_name);
    void (*kernel_end)(void *user, const fa_node *n, const char *kernel_name);
} fa_exec_observer;

/* Activation layouts (oneDNN format tags). A target's kernels may prefer a blocked layout
 * between its own kernels (ONNX Runtime's NCHWc); tensors crossing a graph boundary are PLAIN
 * unless the executor is told otherwise (fa_exec_options.input_layouts / output_layouts). Stored
 * nowhere. */
typedef enum fa_layout {
    FA_LAYOUT_PLAIN = 0,     /* row-major as ONNX defines the tensor (NCHW for images) */
    FA_LAYOUT_NCHW8C = 1,    /* channels blocked by 8: [N][ceil(C/8)][H][W][8] (oneDNN nChw8c) */
    FA_LAYOUT_NCHW16C = 2,   /* channels blocked by 16 (oneDNN nChw16c, AVX-512) */
    FA_LAYOUT_NHWC = 3,      /* channels last: [N][H][W][C] (oneDNN nhwc, acdb), C not padded */
    FA_LAYOUT_COUNT
} fa_layout;
const char *fa_layout_name(fa_layout l); /* "plain", "nChw8c", "nChw16c", "nhwc" */
/* The multiple a tensor's channel count (dim 1) is padded to in layout l: 8 / 16 for nChw8c /
 * nChw16c (oneDNN "Understanding Memory Formats": the padded tail holds zeros), 1 for plain and
 * nhwc (no padding). A buffer's size, whether a padded tail exists (C % block), and which
 * channel counts split evenly into blocks (Concat) all follow from it. */
int64_t fa_layout_channel_block(fa_layout l);
/* The layout fa_layout_name calls `name` ("plain", "nChw8c", "nChw16c", "nhwc", exactly as
 * written); false (out untouched) for anything else. */
bool fa_layout_of_name(const char *name, fa_layout *out);

/* A kernel supplied from outside the registry (the applier's fused kernels). */
typedef struct fa_custom_kernel {
    const char *name;      /* kernel name recorded by the collector; must outlive the executor */
    fa_status (*run)(void *state, fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                     fa_value *out, int n_out, int threads);
    void (*destroy)(void *state); /* may be NULL */
    void *state;
    /* The layout the kernel reads its following inputs (fa_layout_input_follows) and writes its
     * output 0 in; the executor plans its reorders around it as for its own kernels (PLAIN, the
     * zero value: plain tensors only). A generated kernel's is the one codegen emitted it for. */
    fa_layout layout;
} fa_custom_kernel;

/* Asked once per live node at executor creation, before the built-in kernels: set *provided and
 * fill *out to take the node. Errors abort executor creation. */
typedef fa_status (*fa_kernel_provider)(void *user, fa_ctx *ctx, const fa_graph *g, const fa_node *n,
                                        fa_custom_kernel *out, bool *provided);


/* Which algorithm a fused plan's convolution takes (fa_exec_options.conv_tactic): a tactic in
 * TensorRT's sense, chosen among oneDNN's own algorithms for the same convolution. Winograd
 * (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016; oneDNN 2.6's
 * dnnl_convolution_winograd: F(2x2, 3x3) and F(4x4, 3x3) kernels on AVX-512) computes a 3x3,
 * stride-1, undilated, ungrouped 2-D convolution with fewer multiplications; it exists only on
 * the blocked layouts oneDNN gives it and with the post-ops it supports. */
typedef enum fa_conv_tactic {
    FA_CONV_TACTIC_DIRECT = 0, /* direct convolution only, oneDNN's kernel on the executor's
                                  layout: the zero value */
    FA_CONV_TACTIC_MEASURED,   /* blocked executors: where Winograd exists, both timed on the
                                  kernel's own shapes (interleaved, medians) and the faster kept;
                                  plain executors (the unfused baseline): an unfused 2-D Conv's
                                  plain-NCHW kernel against the same convolution with its
                                  activations reordered inside to the layout oneDNN prefers,
                                  timed alike. One decision per convolution signature per
                                  process, so every executor of a run (the baseline, cluster
                                  sub-graphs, the probe, the whole fused model) agrees */
    FA_CONV_TACTIC_WINOGRAD,   /* Winograd wherever it exists, else direct (tests, benchmarks) */
    FA_CONV_TACTIC_REORDER,    /* plain executors: every unfused 2-D Conv reordered inside where
                                  oneDNN prefers another layout; blocked ones: every ungrouped
                                  2-D convolution so, where oneDNN prefers another layout than the
                                  executor's, the rest direct (tests, benchmarks) */
    FA_CONV_TACTIC_OWN,        /* blocked executors: every depthwise convolution our kernel takes
                                  (runtime/cpu/dwconv.h) run by it, the rest direct; plain ones:
                                  direct (benchmarks, tests). Not part of MEASURED: no end-to-end gain
                                  measured (docs/runtime.md "Convolution tactics") */
} fa_conv_tactic;

/* The tactic in force: env FA_CONV_TACTIC (direct, measured, winograd, reorder, own) over `asked` when set,
 * else asked. An unknown value is ignored (asked). */
fa_conv_tactic fa_conv_tactic_effective(fa_conv_tactic asked);

typedef struct fa_exec_options {
    fa_target target;
    int threads;           /* 0 = all cores */
    uint64_t max_memory;   /* activation bytes cap (--max-memory), 0 = none */
    fa_kernel_provider provider; /* optional */
    void *provider_user;
    /* Keep the target's preferred (blocked) activation layouts between its kernels, with
     * reorders as kernels of their own (fa_layout_plan_of): set for a fused plan's executor (the
     * applier's fused graphs, `exec` of an applied plan). false: every tensor plain — the unfused
     * baseline, what an unoptimised framework hands the library. */
    bool blocked_layouts;
    /* With blocked_layouts: the layout the fused plan's convolution regions take (nChw8c,
     * nChw16c, nhwc — one of fa_target_plan_layouts' candidates; the plan's measured choice,
     * plan/plan.h fa_plan_layout). PLAIN, the zero value: the target's default
     * (fa_target_plan_layouts .deflt). Ignored without blocked_layouts. */
    fa_layout plan_layout;
    /* Boundary layouts (optional; NULL: every graph input and output PLAIN, as a whole-model run
     * and the unfused baseline have them). input_layouts[i]: the layout graph input i is kept in
     * — fa_exec_set_input / fa_exec_fill_inputs take plain values and reorder them into it once,
     * outside fa_exec_run, so its first consumer reads it in that layout with no reorder kernel
     * in the run (a consumer reading another layout gets a reorder kernel as usual).
     * output_layouts[i]: the layout graph output i is left in by the run (no reorder kernel at
     * the end); fa_exec_output converts it to plain when read, outside the run. What the applier
     * sets on a cluster's fused sub-graph so that it pays the reorders the whole fused plan pays
     * and no others (docs/runtime.md "Boundary layouts"). A non-PLAIN entry needs a rank-4 float
     * tensor and a target with layouts, FA_TARGET_CAP_LAYOUTS (FA_ERR_UNSUPPORTED naming the tensor
     * otherwise); constant inputs are PLAIN whatever is asked. Copied by fa_exec_create. */
    const fa_layout *input_layouts;  /* by graph input index (g->inputs), n_inputs entries */
    const fa_layout *output_layouts; /* by graph output index (g->outputs), n_outputs entries */
    /* The caller reads none of the graph's constant data after fa_exec_create (`exec`: load, run
     * once, write the outputs). Then a constant whose every consumer's kernel reads a derived
     * (reordered) copy of it, held by nothing else, has its plain bytes freed as soon as its last
     * consumer's kernel exists (fa_blob_drop_plain): the tensor's data becomes NULL, so the copy
     * of an unaligned weight read from the file no longer stays beside the reordered one
     * (docs/runtime.md "Weights once in memory"). Applies to plain-layout executors only
     * (blocked_layouts false: no reorder kernels read constants at run time). */
    bool release_plain_weights;
    /* The algorithm of the convolutions (fa_conv_tactic; the zero value DIRECT): with
     * blocked_layouts the plan's 3x3 ones (Winograd or direct), else the unfused ones (plain or
     * reordered inside). The applier's executors, its probe, `run`'s baseline and `exec` ask
     * MEASURED; the kernel's name says ", winograd" where Winograd was kept, "reorder(nchw>...)"
     * where the activations are reordered inside. */
    fa_conv_tactic conv_tactic;
} fa_exec_options;

typedef struct fa_exec fa_exec;

/* The options every executor that is timed, or stands for one that is, starts from: target,
 * threads and FA_CONV_TACTIC_MEASURED, so that `run`'s baseline, `exec`, the probe's and the
 * applier's unfused and fused sub-graphs, the layout choice and the end-to-end models all run each
 * convolution the way one process-wide measurement chose (fa_conv_tactic). An executor that asked
 * DIRECT beside them timed ResNet-18's unfused convolutions on another kernel than the baseline's
 * and over-predicted every convolution cluster by 1.3x (bench/README.md, "Calibration", the 20:25
 * pass). The caller sets the rest (layouts, limits) on the copy. */
fa_exec_options fa_exec_options_measured(fa_target target, int threads);

/* Create an executor for a prepared graph (fa_graph_prepare done). The graph must outlive it.
 * Refuses ops without a kernel for the target ("unsupported op X at node Y on cpu"). */
fa_status fa_exec_create(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *opt, fa_exec **out);
void fa_exec_free(fa_exec *e);
/* Set graph input i (index into g->inputs); data copied. Shape and dtype must match. */
fa_status fa_exec_set_input(fa_ctx *ctx, fa_exec *e, int i, const fa_value *v);
/* Fill every graph input with deterministic values from `seed` (uniform [-1,1) floats,
 * small non-negative ints). */
fa_status fa_exec_fill_inputs(fa_ctx *ctx, fa_exec *e, uint64_t seed);
/* Execute once. obs may be NULL. On cpu every activation lives at its offset in one arena
 * planned, allocated and touched by fa_exec_create (the static memory plan): a run allocates
 * nothing and page-faults nothing. */
fa_status fa_exec_run(fa_ctx *ctx, fa_exec *e, const fa_exec_observer *obs);
/* Graph output i after a run, in plain layout; borrowed until the next run / fa_exec_free. An
 * output kept in a blocked layout (fa_exec_options.output_layouts) is converted to plain by the
 * first call after a run (a reorder into a buffer allocated by fa_exec_create; later calls
 * return the same values), so e must not be running concurrently. NULL before the first run,
 * for i out of range, or when that conversion failed. */
const fa_value *fa_exec_output(const fa_exec *e, int i);
/* The layout tensor `tensor` (an id of the graph e runs) is written in by its producer — for a
 * graph input the layout it is kept in (fa_exec_options.input_layouts) — as the executor planned
 * it (fa_layout_plan_of over the layouts its kernels took). PLAIN for constants, unplanned
 * tensors, ids out of range and targets without layouts. */
fa_layout fa_exec_tensor_layout(const fa_exec *e, int tensor);
/* Bytes of activations (graph inputs + intermediates + outputs) the executor holds at its peak:
 * on cpu the static plan's arena, known from fa_exec_create on (read from the plan, not measured);
 * on cuda the peak of live device buffers in the last run. */
uint64_t fa_exec_peak_bytes(const fa_exec *e);
/* Kernel name used for node n on this executor ("dnnl:conv", "ref:Relu", ...). */
const char *fa_exec_kernel_name(const fa_exec *e, const fa_node *n);
/* The implementation a library chose for node n's kernel on this executor (oneDNN's
 * dnnl_query_impl_info_str: "jit:avx512_core", "gemm:jit", "ref:any", ...); NULL for our own and
 * generated kernels and on cuda. Borrowed until fa_exec_free. */
const char *fa_exec_kernel_impl(const fa_exec *e, const fa_node *n);
/* Reorder kernels one run of e executes between layouts (fa_exec_options.blocked_layouts); 0 when
 * every tensor is plain, so the executor runs exactly the graph's ops. A blocked region always
 * ends in a reorder (graph outputs and position-indexed kernels read plain), so > 0 means the
 * executor's layouts differ from the plain baseline's. */
int fa_exec_reorders(const fa_exec *e);
/* The applier's answer to a fused sub-graph that failed verification: every kernel of e whose
 * algorithm a measurement chose among equivalent ones that round differently (cpu: a blocked
 * convolution reordered inside to oneDNN's brgemm kernel, FA_CONV_TACTIC_MEASURED; docs/runtime.md
 * "Convolution tactics") has that choice turned into the default algorithm for its signature, for
 * the rest of the process, so that executors created afterwards (the cluster's rebuilt one, the
 * whole fused model's) run the kernel the verification has always accepted. e is unchanged: free
 * it and create it again. Returns how many kernels were vetoed (0: none of e's kernels chose one,
 * and rebuilding would change nothing). */
int fa_exec_veto_measured_tactics(fa_exec *e);

/* The layouts a fused plan's convolution regions can take on target t on this machine
 * (fa_exec_options.plan_layout). deflt: the one taken unless the plan chose another (cpu:
 * fa_cpu_blocked_layout — FA_BLOCKED_LAYOUT when set, from_env true; else the block of oneDNN's
 * jit convolution on this ISA; PLAIN for a target without layouts or a cpu without oneDNN).
 * cand[0..n): the layouts oneDNN runs convolutions on here, deflt first when it is one of them:
 * nhwc and nChw8c on every x86-64 oneDNN supports, nChw16c on AVX-512 cores
 * (dnnl_cpu_isa_avx512_core); n = 0 without layouts. */
typedef struct fa_plan_layouts {
    fa_layout deflt;
    bool from_env;
    int n;
    fa_layout cand[FA_LAYOUT_COUNT];
} fa_plan_layouts;
void fa_target_plan_layouts(fa_target t, fa_plan_layouts *out);
fa_target fa_exec_target(const fa_exec *e);
int fa_exec_threads(const fa_exec *e);
/* The OpenMP pool placed for a timed run on the host: when two of its threads share a CPU, each
 * thread is moved to a distinct CPU of its own affinity mask (pinned there for a moment, then its
 * mask restored, so the scheduler may move it again later as before). Why: Linux wakes a sleeping
 * thread on its waker's CPU when that looks cheap (the scheduler's wake-affine rule), so once the
 * pool's worker slept through a long single-threaded stretch — `run` waiting for the C compiler —
 * the master and the worker could share one CPU and stay there, each parallel region then waiting
 * for the CPU the master held: the GPT-2 export's GEMM + GELU sub-graph measured 0.61-0.80 ms in
 * the applier instead of 0.07-0.09 ms, its fused kernel 0.15-0.26 instead of 0.05, in most runs
 * (bench/README.md "Threads on one CPU"). Nothing when threads < 2, when a thread's mask holds
 * one CPU, or when OMP_PROC_BIND binds the pool (omp_get_proc_bind); threads: the team size the
 * caller's executors use (fa_exec_threads), 0 for the pool's (omp_get_max_threads). Costs one
 * parallel region when the threads are apart. Returns true when
 * it moved threads. Called before each timed run of the profile and each round of the applier's
 * benchmarks, outside their timing. */
bool fa_host_spread_threads(int threads);
/* Evict each core's L2 before a timed run of a cluster's sub-graph, as the model around it would
 * have: each of `threads` OpenMP threads (0: the pool's, omp_get_max_threads) reads every 64-byte
 * line of a private buffer of FA_HOST_EVICT_L2_FACTOR x its core's L2 (glibc's
 * sysconf(_SC_LEVEL2_CACHE_SIZE), the CPUID cache descriptors; 1 MiB where it says nothing),
 * allocated and written once on first use and kept for the process. The sub-graph's weights and
 * inputs are then in L3 (or memory), not in the L2 that its own previous run left them in.
 * Why (issue 36): inside the model the kernels between two runs of a cluster leave little of its
 * data in L2, and back-to-back isolated benchmarks of the same sub-graphs measured 0.84-0.91 of
 * the profile's member times on the CNN families, 0.63-0.66 on Inception-v1 (bench/README.md
 * "Cold L2").
 * The same practice as Triton's do_bench (it clears the GPU's L2 before each timed run) and
 * nvbench's cold measurements. Costs a read of twice the L2 per thread (tens of us), outside
 * the timing. Returns the bytes each thread read (0 where a buffer could not be allocated:
 * nothing evicted, the run goes on warm). Thread-safe; not for use inside a parallel region. */
#define FA_HOST_EVICT_L2_FACTOR 2
uint64_t fa_host_evict_l2(int threads);
/* Evictions done by fa_host_evict_l2 in this process (for tests of the benchmark protocol). */
uint64_t fa_host_l2_evictions(void);


/* ---- the target an executor runs on (ggml's backend wrappers: callers never see a table) ----
 * A target is a handle; what differs between a cpu and a GPU is asked of it through these
 * wrappers, which own the NULL check of every optional slot. Capabilities are asked, never
 * inferred from a target's name. docs/architecture.md "Execution targets". */
typedef struct fa_target_iface fa_target_iface; /* opaque (runtime-impl.h) */

/* What a target can do, by target value, whether this build registers it or not (a gate on a
 * cpu-only build compares runs of cuda); a registered target's tables agree with its row (its
 * optional slots are set exactly for its capabilities: test_layout checks it). */
typedef enum fa_target_cap {
    FA_TARGET_CAP_ACCELERATOR = 1u << 0,    /* a device apart from the host: AUTO prefers it; the
                                               host's ceilings and probes do not describe it */
    FA_TARGET_CAP_KERNEL_REPORT = 1u << 1,  /* its compiler reports registers and spills of a fused
                                               kernel: the advisor's register/occupancy gate, the
                                               CI gate's register checks */
    FA_TARGET_CAP_LAYOUTS = 1u << 2,        /* its kernels keep blocked activation layouts, with
                                               reorders between them (runtime/layout.h) */
} fa_target_cap;
bool fa_target_has(fa_target t, fa_target_cap cap);

/* The target t in this build; NULL for AUTO and for a target this build lacks. */
const fa_target_iface *fa_target_get(fa_target t);
/* The registered targets in preference order (cpu first): i-th or NULL past the end. */
const fa_target_iface *fa_target_at(int i);
/* t itself, or for AUTO the first available accelerator, else cpu. FA_ERR_UNSUPPORTED
 * "target X: this build has no executor for it (use --target cpu)" when t is not built. */
fa_status fa_target_resolve(fa_ctx *ctx, fa_target t, const fa_target_iface **out);
fa_target fa_target_id(const fa_target_iface *t);
/* The target an executor runs on. */
const fa_target_iface *fa_exec_target_iface(const fa_exec *e);

/* The device a target runs on. */
typedef struct fa_target_device {
    char name[256];          /* "Intel(R) Xeon(R) ...", "NVIDIA H200" */
    char arch[16];           /* cuda: "sm_90"; "" on cpu */
} fa_target_device;
/* A device is present. Never fails, never prints. */
bool fa_target_available(const fa_target_iface *t);
/* Open the device (load its driver) and describe it. Errors name what is missing
 * (FA_ERR_UNSUPPORTED "no CUDA driver (...)" / "no CUDA device"). */
fa_status fa_target_device_open(fa_ctx *ctx, const fa_target_iface *t, fa_target_device *out);
/* Device key of the ceilings cache ("cpu:<model>:<threads>t", "cuda:<name>:sm_XY"). */
fa_status fa_target_device_key(fa_ctx *ctx, const fa_target_iface *t, int threads, char *buf, size_t cap);
/* True when t's executor runs node n of g (a kernel provider aside); false with a sentence in why
 * (naming the op, dtype or attribute) otherwise. Needs no device. */
bool fa_target_supports_node(const fa_target_iface *t, const fa_graph *g, const fa_node *n, char *why, size_t why_cap);

#endif
