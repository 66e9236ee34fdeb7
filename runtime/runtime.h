/* runtime — the unfused executor: runs a prepared graph op by op, one kernel per live node,
 * on a target (cpu always; cuda when built with the toolkit and a device is present). */
#ifndef FA_RUNTIME_H
#define FA_RUNTIME_H

#include "core/core.h"
#include "graph/graph.h"
#include "graph/post_op.h"

/* Execution targets. A run stores the target by name (fa_target_name); the numeric values are
 * never stored, but the enum only grows at its end. Each value other than AUTO names one
 * function table (fa_target_iface below) registered by the target's folder. */
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

/* Called around every kernel launch (the cpu collector's hook). node = graph node id. */
typedef struct fa_exec_observer {
    void *user;
    void (*kernel_begin)(void *user, const fa_node *n, const char *kernel_name);
    void (*kernel_end)(void *user, const fa_node *n, const char *kernel_name);
} fa_exec_observer;

/* A kernel supplied from outside the registry (the applier's fused kernels). */
typedef struct fa_custom_kernel {
    const char *name;      /* kernel name recorded by the collector; must outlive the executor */
    fa_status (*run)(void *state, fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                     fa_value *out, int n_out, int threads);
    void (*destroy)(void *state); /* may be NULL */
    void *state;
} fa_custom_kernel;

/* Asked once per live node at executor creation, before the built-in kernels: set *provided and
 * fill *out to take the node. Errors abort executor creation. */
typedef fa_status (*fa_kernel_provider)(void *user, fa_ctx *ctx, const fa_graph *g, const fa_node *n,
                                        fa_custom_kernel *out, bool *provided);

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
    /* Boundary layouts (optional; NULL: every graph input and output PLAIN, as a whole-model run
     * and the unfused baseline have them). input_layouts[i]: the layout graph input i is kept in
     * — fa_exec_set_input / fa_exec_fill_inputs take plain values and reorder them into it once,
     * outside fa_exec_run, so its first consumer reads it in that layout with no reorder kernel
     * in the run (a consumer reading another layout gets a reorder kernel as usual).
     * output_layouts[i]: the layout graph output i is left in by the run (no reorder kernel at
     * the end); fa_exec_output converts it to plain when read, outside the run. What the applier
     * sets on a cluster's fused sub-graph so that it pays the reorders the whole fused plan pays
     * and no others (docs/runtime.md "Boundary layouts"). A non-PLAIN entry needs a rank-4 float
     * tensor and a target with a reorder_kernel slot (FA_ERR_UNSUPPORTED naming the tensor
     * otherwise); constant inputs are PLAIN whatever is asked. Copied by fa_exec_create. */
    const fa_layout *input_layouts;  /* by graph input index (g->inputs), n_inputs entries */
    const fa_layout *output_layouts; /* by graph output index (g->outputs), n_outputs entries */
} fa_exec_options;

typedef struct fa_exec fa_exec;

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
fa_target fa_exec_target(const fa_exec *e);
int fa_exec_threads(const fa_exec *e);

/* ---- the cpu target's compiled kernels and their cache (runtime/cpu/compile.c, docs/codegen.md
 *      "Kernel cache") ---- */

/* Shared objects the cache keeps before evicting the least recently used (256 MiB: about 4,000
 * batches of typical generated kernels, 20-200 KiB each as built here). */
#define FA_KERNEL_CACHE_MAX_BYTES_DEFAULT (256ull << 20)

/* The folder compiled kernels are cached in. dir NULL: $XDG_CACHE_HOME/fuse-advise/kernels, else
 * $HOME/.cache/fuse-advise/kernels, else a folder made for this process under $TMPDIR or /tmp
 * (removed by fa_kernel_cache_free); a relative variable, or one whose cache path would not fit
 * PATH_MAX, is ignored (XDG Base Directory Specification: relative paths are invalid). A
 * relative dir is taken from the current folder. The path is opened with fa_private_dir_open
 * (core.h): every folder from "/" owned by the effective user or root and writable by nobody
 * else unless sticky, the cache folder itself the user's and writable by nobody else, links
 * followed only where nobody else can write, missing folders created 0700; refused with
 * FA_ERR_IO naming the folder at fault and what to do. The folder is held open until
 * fa_kernel_cache_free and every later step is relative to it. Work folders of dead processes
 * are removed. max_bytes 0: FA_KERNEL_CACHE_MAX_BYTES_DEFAULT. */
typedef struct fa_kernel_cache fa_kernel_cache;
fa_status fa_kernel_cache_open(fa_ctx *ctx, const char *dir, uint64_t max_bytes, fa_kernel_cache **out);
const char *fa_kernel_cache_dir(const fa_kernel_cache *kc);
void fa_kernel_cache_free(fa_kernel_cache *kc);

typedef void (*fa_fused_fn)(const void *const *in, void *const *out, int threads);
/* One generated C kernel: a whole translation unit defining fn_name (fa_codegen_c's output). */
typedef struct fa_kernel_source {
    const char *src;
    size_t len;
    const char *fn_name;
} fa_kernel_source;
/* A loaded kernel: holds one reference to its shared object (fa_compiled_free drops it). */
typedef struct fa_compiled {
    void *handle;
    fa_fused_fn fn;
    char hash[65];  /* the cache entry (SHA-256 of flags + every source of its batch) */
    bool cached;    /* loaded from the cache, not compiled now */
} fa_compiled;
void fa_compiled_free(fa_compiled *c);

/* Compile n kernels into one shared object with one compiler process ($CC split into words as a
 * shell would, fa_split_words, or cc; started with an argument vector, never a shell; -O3
 * -march=native -fopenmp -fno-trapping-math -fno-math-errno -DFA_SLEEF_GNUABI -shared), each
 * source marked "#line 1 \"kernel-K.c\"" so diagnostics name their kernel; kernels that fail
 * are dropped and the rest go again together (one kernel per process only where the
 * diagnostics name none). The compile folder is made inside the held cache folder and is the
 * compiler's working folder (it compiles kernels.c to out.so by those names); it is removed.
 * Entries are KEY.so plus KEY.so.sha256, the SHA-256 of the binary written when it was built;
 * before dlopen an entry must be a regular file owned by us, writable by nobody else, non-empty
 * and match that hash, else it is removed and rebuilt (zero-byte, corrupt, tampered or planted
 * entries never load); the descriptor that was hashed is what dlopen maps (/proc/self/fd/N).
 * A use refreshes its mtime; after adding one, least recently used entries are removed until
 * the shared objects fit the cache's max_bytes.
 * Per kernel: out[i] (owned by the caller) or errs[i] (malloc'd, the compiler's diagnostics
 * about that kernel only, fa_compiler_diagnostics, never the content of an included file).
 * Returns FA_OK unless the cache itself failed (folder, compiler not startable, CC with an
 * unterminated quote). */
fa_status fa_compile_kernels(fa_ctx *ctx, fa_kernel_cache *kc, int n, const fa_kernel_source *srcs, fa_compiled **out,
                             char **errs);

/* ---- cuda library epilogues (runtime/cuda_epilogue.c; pure, built with or without the toolkit) ---- */

/* How an EPILOGUE cluster runs on cuda. Stored nowhere; grows at its end. */
typedef enum fa_cuda_epilogue {
    FA_CUDA_EPI_NONE = 0,              /* refused: no cuda library epilogue fits */
    FA_CUDA_EPI_CUBLASLT_BIAS = 1,     /* MatMul/Gemm + bias: CUBLASLT_EPILOGUE_BIAS */
    FA_CUDA_EPI_CUBLASLT_RELU_BIAS = 2,/* + Relu: CUBLASLT_EPILOGUE_RELU_BIAS */
    FA_CUDA_EPI_CUBLASLT_GELU_BIAS = 3,/* + tanh-GELU: CUBLASLT_EPILOGUE_GELU_BIAS */
    FA_CUDA_EPI_CUDNN_CONV_BIAS_RELU = 4, /* Conv + bias + Relu: cudnnConvolutionBiasActivationForward */
    FA_CUDA_EPI_COUNT
} fa_cuda_epilogue;
const char *fa_cuda_epilogue_name(fa_cuda_epilogue e); /* "cublaslt:bias", ..., "none" */

/* Where an epilogue cluster's bias comes from (anchor's own Gemm C / Conv B). */
typedef enum fa_cuda_bias_kind {
    FA_CUDA_BIAS_ABSENT = 0,
    FA_CUDA_BIAS_VECTOR = 1,  /* one value per output column (MatMul/Gemm) or channel (Conv) */
    FA_CUDA_BIAS_OTHER = 2    /* present but not such a vector (a full Gemm C matrix) */
} fa_cuda_bias_kind;

/* The facts the mapping needs, taken from a fused node (fa_cuda_epilogue_query_of_node) or
 * written by hand in tests. */
typedef struct fa_cuda_epilogue_query {
    const char *anchor_op;               /* "MatMul", "Gemm", "Conv", ... */
    fa_cuda_bias_kind anchor_bias;
    int n_post_ops;
    const fa_post_op *post_ops;          /* graph/post_op.h (operands are not read here) */
    const bool *operand_is_bias_vector;  /* per post-op: the binary operand is a per-column /
                                            per-channel vector (NULL: none is) */
    fa_post_op post_op_store[8];         /* storage for fa_cuda_epilogue_query_of_node */
} fa_cuda_epilogue_query;
#define FA_CUDA_EPILOGUE_MAX_POST_OPS 8

/* Pure mapping of an epilogue onto a cuda library epilogue. cuBLASLt (cublasLt.h,
 * cublasLtEpilogue_t): BIAS, RELU_BIAS, GELU_BIAS — its GELU is the tanh approximation, so
 * GELU_ERF is refused (differs by up to ~1e-3, beyond the 1e-5 tolerance). cuDNN
 * (cudnnConvolutionBiasActivationForward, cuDNN API reference): y = act(conv(x) + bias) with
 * act = RELU (IDENTITY is restricted to one algorithm, so Conv + bias alone is refused). The bias
 * is the anchor's own vector, or else a first ADD post-op whose operand is such a vector. Any
 * other post-op (a residual add, clip, sigmoid, ...) or a second activation: FA_CUDA_EPI_NONE
 * with `why` = "no cuda epilogue for <post-op name>[ (detail)]". why may be NULL. */
fa_cuda_epilogue fa_cuda_epilogue_map(const fa_cuda_epilogue_query *q, char *why, size_t why_cap);
/* The query for a fused epilogue node n of g (ai.fuse-advise Fused{Conv,ConvTranspose,MatMul,
 * Gemm} with its typed post-ops, fa_post_ops_of_node; malformed ones read as one post-op of
 * kind FA_POST_OP_COUNT, which maps to none): at
 * most FA_CUDA_EPILOGUE_MAX_POST_OPS post-ops; arrays point into q and `scratch` (one bool per
 * post-op). */
void fa_cuda_epilogue_query_of_node(const fa_graph *g, const fa_node *n, bool *scratch, fa_cuda_epilogue_query *q);

/* ==== execution targets: one function table per target (ggml's ggml_backend_i) ====
 *
 * Everything that differs between a cpu and a GPU lives behind this table: the executor, which
 * nodes it runs, the activation layout its kernels prefer and the reorders between layouts, how
 * a generated fused kernel is compiled and loaded, the register/occupancy figures the advisor's
 * gate reads, and the device's ceilings. The layers above (roofline, advisor, applier, cli) hold
 * no target-specific code: they ask the table. A target registers its table from its own folder
 * (runtime/cpu/target.c, runtime/cuda/target.c) in runtime/exec.c's list; docs/architecture.md
 * "Adding an execution target" says step by step how to add one. Slots marked (optional) may be
 * NULL. */

/* Source language of a target's generated fused kernels (what codegen/ emits for it). */
typedef enum fa_kernel_lang {
    FA_KERNEL_LANG_C = 0,    /* C11 + OpenMP, compiled by the system compiler (codegen.h ABI) */
    FA_KERNEL_LANG_CUDA = 1, /* CUDA C, compiled by NVRTC */
    FA_KERNEL_LANG_COUNT
} fa_kernel_lang;

/* One generated fused kernel: a whole translation unit defining the entry `name`, with its
 * parameter counts and (CUDA) 1-D launch shape as codegen/ reported them. */
typedef struct fa_fused_source {
    const char *src;
    size_t len;
    const char *name;
    int n_in, n_out;         /* pointer parameters: one per cluster input, then per output */
    int block_size;          /* threads per block (CUDA; 0 on cpu) */
    int64_t grid;            /* blocks (CUDA; 0 on cpu) */
} fa_fused_source;

/* Registers and memory of one compiled kernel, from the compiler's own report (ptxas -v). */
typedef struct fa_kernel_resources {
    char arch[16];           /* what it was compiled for ("sm_90") */
    int registers;           /* per thread */
    int spill_stores;        /* bytes */
    int spill_loads;         /* bytes */
    int static_smem;         /* bytes of static shared memory per block */
    int local_mem;           /* bytes of stack frame per thread */
} fa_kernel_resources;

/* A compiled fused kernel, owned by the target that built it (opaque; t->fused_free). */
typedef struct fa_fused_binary fa_fused_binary;

typedef struct fa_fused_compile_options {
    const char *cache_dir;    /* cpu: compiled shared objects by source hash (fa_kernel_cache_open) */
    uint64_t cache_max_bytes; /* cpu: 0 = FA_KERNEL_CACHE_MAX_BYTES_DEFAULT */
    const char *arch;         /* cuda: "sm_90"; NULL = the device's own (needs a device) */
} fa_fused_compile_options;

/* The device a target runs on. */
typedef struct fa_target_device {
    char name[256];          /* "Intel(R) Xeon(R) ...", "NVIDIA H200" */
    char arch[16];           /* cuda: "sm_90"; "" on cpu */
} fa_target_device;

/* ---- device ceilings (measured by the target, cached by roofline/) ---- */

typedef struct fa_cache_level {
    uint64_t working_set;       /* bytes of the sweep point that shows the level */
    double bandwidth_gbs;       /* measured read bandwidth at that working set, GB/s (1e9 B/s):
                                   the best kept across re-measurements (roofline/ceilings.c) */
    double bandwidth_new_gbs;   /* this call's own measurement when it measured, else 0 */
    const char *name;           /* "L1".."L3": the smallest cpu0 data cache (sysfs) holding the
                                   working set, "LLC" when sysfs says nothing */
} fa_cache_level;

typedef struct fa_ceilings {
    const char *device_key;     /* "cpu:<model>:<threads>t" or "cuda:<name>:sm_XY" */
    const char *device_name;
    int threads;                /* cpu threads measured with */
    double mem_bw_gbs;          /* main-memory (DRAM/HBM) bandwidth, GB/s: the best measured on
                                   this device key across re-measurements (roofline/ceilings.c) */
    double mem_bw_new_gbs;      /* this call's own measurement when it measured, else 0 */
    const char *mem_bw_source;  /* "measured" | "table" | "theoretical" */
    double peak_gflops;         /* FP32 peak, GFLOP/s */
    const char *peak_source;
    double launch_ns;           /* per-kernel dispatch (cpu executor) / launch latency (cuda), ns */
    const char *launch_source;
    int n_cache_levels;
    fa_cache_level cache[4];
    char detail[512];           /* how each was obtained (sizes, kernels) */
    const char *latency_detail; /* how launch_ns was obtained (static string) */
    /* device facts stored beside the ceilings (cuda: clocks, SM count, L2 size) */
    int n_facts;
    struct fa_ceiling_fact {
        const char *kind;       /* "clock", "limit" */
        const char *name;       /* "sm_clock", ... */
        double value;
        const char *unit;       /* "kHz", "count", "bytes" */
        const char *detail;     /* where it comes from (a driver attribute) */
    } facts[6];
} fa_ceilings;

typedef struct fa_target_iface {
    fa_target id;
    const char *name;                                  /* fa_target_name(id) */

    /* ---- device ---- */
    /* A device is present: FA_TARGET_AUTO picks the first registered target other than cpu for
     * which this is true. Never fails, never prints. */
    bool (*available)(void);
    /* Open the device (load its driver) and describe it. Errors name what is missing
     * (FA_ERR_UNSUPPORTED "no CUDA driver (...)" / "no CUDA device"). */
    fa_status (*device_open)(fa_ctx *ctx, fa_target_device *out);
    /* Device key of the ceilings cache ("cpu:<model>:<threads>t", "cuda:<name>:sm_XY"). */
    fa_status (*device_key)(fa_ctx *ctx, int threads, char *buf, size_t cap);

    /* ---- the unfused executor (fa_exec_* forward here; state is the target's) ---- */
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
    /* the library implementation behind node n's kernel (fa_exec_kernel_impl); NULL = none known */
    const char *(*exec_kernel_impl)(const void *state, const fa_node *n);
    /* reorder kernels per run (fa_exec_reorders); NULL = the target keeps every tensor plain */
    int (*exec_reorders)(const void *state);
    int (*exec_threads)(const void *state);
    /* True when the executor runs node n of g (a kernel provider aside); false with a sentence
     * in why (naming the op, dtype or attribute) otherwise. Needs no device. */
    bool (*supports_node)(const fa_graph *g, const fa_node *n, char *why, size_t why_cap);

    /* ---- layouts (optional: NULL means every kernel reads and writes PLAIN) ---- */
    /* The layout node n's kernel can read its activation inputs (fa_layout_input_follows) and
     * write its output 0 in, when the executor keeps layouts (fa_exec_options.blocked_layouts);
     * PLAIN when it reads plain tensors only. One blocked layout per target and machine, so that
     * every producer and consumer agrees. A kernel may still decline it at executor creation
     * (the executor then runs that node plain). */
    fa_layout (*preferred_layout)(const fa_graph *g, const fa_node *n);
    /* A kernel that converts a tensor of v's shape from layout `from` to `to`, run by the
     * executor as a kernel of its own (named in traces) between a producer and a consumer whose
     * layouts differ. */
    fa_status (*reorder_kernel)(fa_ctx *ctx, const fa_value *v, fa_layout from, fa_layout to,
                                fa_custom_kernel *out);

    /* ---- generated fused kernels ---- */
    fa_kernel_lang kernel_lang;
    /* Compile n sources; out[i] or errs[i] (malloc'd diagnostics about that source only) per
     * source. FA_OK unless the compiler itself could not be used (cache folder, toolkit). */
    fa_status (*fused_compile)(fa_ctx *ctx, const fa_fused_compile_options *o, int n, const fa_fused_source *src,
                               fa_fused_binary **out, char **errs);
    /* The executor kernel of a compiled fused kernel for an ai.fuse-advise FusedKernel node
     * (handed to fa_exec_create through a kernel provider). The binary outlives the executor. */
    fa_status (*fused_kernel)(fa_ctx *ctx, const fa_fused_binary *b, fa_custom_kernel *out);
    /* What the compiler reported for b (optional: NULL when the target has no such report).
     * A target with this slot gets the advisor's register/occupancy gate. */
    bool (*fused_resources)(const fa_fused_binary *b, fa_kernel_resources *out);
    void (*fused_free)(fa_fused_binary *b);

    /* ---- ceilings (roofline/ caches them per device key in the run database) ---- */
    /* Measure the device's ceilings with `threads` host threads (0 = all cores): main-memory
     * bandwidth, FP32 peak, per-kernel latency (launch_ns, launch_source, latency_detail), cache
     * levels and device facts where the target has them. device_key / device_name are left
     * NULL (the caller names them). Seconds, not minutes. */
    fa_status (*measure_ceilings)(fa_ctx *ctx, int threads, fa_ceilings *out);
    const char *latency_ceiling;  /* the stored name of launch_ns: "dispatch" (cpu), "launch" (cuda) */
    /* (optional) the name of the cache level a working set of ws bytes shows ("L2"). */
    const char *(*cache_level_name)(uint64_t working_set);
} fa_target_iface;

/* ---- layouts between a target's kernels (runtime/layout.c) ---- */

/* One reorder the executor runs as a kernel of its own (the target's reorder_kernel): tensor
 * `tensor` from layout `from` to `to`, before node `consumer` reads it as input `input`
 * (consumer -1: graph output `input`). */
typedef struct fa_reorder {
    int tensor;
    int consumer;
    int input;
    fa_layout from, to;
} fa_reorder;

typedef struct fa_layout_plan {
    fa_layout *layout;       /* by tensor id: the layout its producer writes (for a graph input
                                the layout it is handed in; PLAIN for constants) */
    fa_reorder *reorders;    /* one per (tensor, target layout), in topological order */
    int n_reorders;
} fa_layout_plan;

/* Whether node n reads its input i in the node's own layout (the rest are read PLAIN): input 0,
 * and every other non-constant input with the output's rank and dims (a residual Add's second
 * operand, a fused conv's residual) — for Concat, dims equal but on axis 1. Weights, biases and
 * broadcast operands are PLAIN. */
bool fa_layout_input_follows(const fa_graph *g, const fa_node *n, int i);
/* The layouts of prepared graph g given each node's layout (node_layout, by node id): node n's
 * kernel reads its following inputs (fa_layout_input_follows) and writes its output 0 in
 * node_layout[n->id], every other input and output PLAIN — but input 0 in node_in0[n->id] when
 * node_in0 is given (a first convolution reading a plain image and writing the blocked layout).
 * Boundaries: graph input i is handed in in_layout[i] and graph output i is left in
 * out_layout[i] (by index into g->inputs / g->outputs; either NULL: all PLAIN, the whole-model
 * default); constants are PLAIN. Where a tensor's layout differs from what a consumer (or the
 * graph boundary) reads, a reorder; consumers wanting the same layout share one. Free with
 * fa_layout_plan_free. FA_ERR_NOMEM; FA_ERR_INTERNAL for a layout out of range. */
fa_status fa_layout_plan_of(fa_ctx *ctx, const fa_graph *g, const fa_layout *node_layout, const fa_layout *node_in0,
                            const fa_layout *in_layout, const fa_layout *out_layout, fa_layout_plan *out);
/* fa_layout_plan_of with node_layout[n] = t->preferred_layout(g, n) (a target without the slot:
 * every tensor PLAIN, no reorder). */
fa_status fa_layout_plan_make(fa_ctx *ctx, const fa_target_iface *t, const fa_graph *g, fa_layout_plan *out);
void fa_layout_plan_free(fa_layout_plan *p);

/* The table of target t in this build; NULL for AUTO and for a target this build lacks. */
const fa_target_iface *fa_target_get(fa_target t);
/* The registered targets in preference order (cpu first): i-th or NULL past the end. */
const fa_target_iface *fa_target_at(int i);
/* t itself, or for AUTO the first available non-cpu target, else cpu. FA_ERR_UNSUPPORTED
 * "target X: this build has no executor for it (use --target cpu)" when t is not built. */
fa_status fa_target_resolve(fa_ctx *ctx, fa_target t, const fa_target_iface **out);
/* The table of the target an executor runs on. */
const fa_target_iface *fa_exec_target_iface(const fa_exec *e);

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
