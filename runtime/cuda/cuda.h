/* runtime/cuda — the cuda target: a run-time loader for the driver API (libcuda.so.1 is never
 * linked, so every binary starts without a driver), a private NVRTC helper, our CUDA kernels
 * (CUDA C strings compiled by NVRTC at executor creation, cached by source hash) and the unfused
 * CUDA executor (Conv by cuDNN, MatMul/Gemm by cuBLAS, every other op by our kernels).
 * Built only with the CUDA toolkit (FA_HAVE_CUDA). docs/cuda.md. */
#ifndef FA_RUNTIME_CUDA_H
#define FA_RUNTIME_CUDA_H

#include "core/core.h"
#include "graph/graph.h"
#include "runtime/cuda_epilogue.h"
#include "runtime/runtime-impl.h"

/* ---- toolkit libraries (runtime/cuda/toolkit.c) ---- */

/* cudart, NVRTC, CUPTI and cuBLAS are not linked: each is opened with dlopen the first time one
 * of its functions is called (searching $FA_CUDA_LIBDIR, the loader's own path, the toolkit the
 * build used, /usr/local/cuda/lib64 and lib), so only the cuda target and CUPTI map them. */
typedef enum fa_cuda_lib {
    FA_CUDA_LIB_CUDART,
    FA_CUDA_LIB_NVRTC,
    FA_CUDA_LIB_CUPTI,
    FA_CUDA_LIB_CUBLAS,
    FA_CUDA_LIB_COUNT
} fa_cuda_lib;
/* Open `lib` (once) and return the path of the file opened, valid for the process; NULL when it
 * cannot be loaded (fa_cuda_lib_error says why). */
const char *fa_cuda_lib_path(fa_cuda_lib lib);
/* Why `lib` could not be loaded ("" when it is loaded); opens it first. Valid for the process. */
const char *fa_cuda_lib_error(fa_cuda_lib lib);

/* ---- driver API loader ---- */

/* Load libcuda.so.1 with dlopen, resolve the driver entry points this project uses (a small
 * table) and cuInit(0). Idempotent and thread-safe; the result is remembered.
 * FA_ERR_UNSUPPORTED "no CUDA driver (...)" when libcuda.so.1 is absent, a symbol is missing,
 * or cuInit fails (the message carries dlerror / cuGetErrorString). */
fa_status fa_cuda_driver_load(fa_ctx *ctx);

typedef struct fa_cuda_device_info {
    int ordinal;
    char name[256];          /* cuDeviceGetName, e.g. "NVIDIA H200" */
    int cc_major, cc_minor;  /* compute capability */
    int sm_count;            /* multiprocessors */
    int sm_clock_khz;        /* CU_DEVICE_ATTRIBUTE_CLOCK_RATE (kHz) */
    int mem_clock_khz;       /* CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE (kHz) */
    int mem_bus_bits;        /* CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH (bits) */
    int l2_bytes;            /* CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE (bytes) */
    int driver_version;      /* cuDriverGetVersion, e.g. 13000 */
} fa_cuda_device_info;

/* Device `ordinal`'s properties (loads the driver). FA_ERR_UNSUPPORTED without a driver or when
 * no such device exists ("no CUDA device"). */
fa_status fa_cuda_device_query(fa_ctx *ctx, int ordinal, fa_cuda_device_info *out);
/* Number of devices (0 without a driver; never fails). */
int fa_cuda_device_count(void);

/* A compiled CUDA module loaded into the current (primary) context. */
typedef struct fa_cuda_module fa_cuda_module;
/* cuModuleLoadData of a cubin; FA_ERR_RUNTIME with cuGetErrorString on failure. */
fa_status fa_cuda_module_load(fa_ctx *ctx, const void *cubin, fa_cuda_module **out);
void fa_cuda_module_unload(fa_cuda_module *m);
/* cuModuleGetFunction: *fn is a CUfunction. */
fa_status fa_cuda_module_function(fa_ctx *ctx, fa_cuda_module *m, const char *name, void **fn);
/* cuLaunchKernel on `stream` (a cudaStream_t / CUstream; NULL = legacy default stream). */
fa_status fa_cuda_launch(fa_ctx *ctx, void *fn, const unsigned grid[3], const unsigned block[3],
                         unsigned dyn_smem, void *stream, void **args);
/* cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS) etc.; -1 when unavailable. */
int fa_cuda_function_regs(void *fn);

/* Record a CUDA runtime error (cudaError_t `err`) from `call` at file:line: FA_OK for
 * cudaSuccess, else `fail` with "CALL failed at FILE:LINE: cudaGetErrorName: cudaGetErrorString". */
fa_status fa_cuda_rt_check(fa_ctx *ctx, int err, fa_status fail, const char *call, const char *file, int line);
#define FA_CUDA_CHECK(ctx, call) fa_cuda_rt_check((ctx), (int)(call), FA_ERR_RUNTIME, #call, __FILE__, __LINE__)

/* ---- NVRTC: the one wrapper (the executor's kernels, generated fused kernels, the gate) ---- */

typedef struct fa_cuda_kernel_info {
    char name[128];      /* entry function */
    int registers;       /* registers per thread (ptxas "Used N registers") */
    int spill_stores;    /* bytes (ptxas "N bytes spill stores") */
    int spill_loads;     /* bytes */
    int stack_frame;     /* bytes */
    int static_smem;     /* bytes of static shared memory per block (ptxas "N bytes smem") */
} fa_cuda_kernel_info;

typedef struct fa_cuda_compiled {
    uint8_t *cubin;      /* malloc'd */
    size_t cubin_size;
    char *log;           /* malloc'd NVRTC + ptxas log */
    int n_kernels;
    fa_cuda_kernel_info *kernels; /* malloc'd, per entry function found in the ptxas log */
} fa_cuda_compiled;

/* Compile CUDA C `src` (named `name` in messages and diagnostics) with NVRTC for `arch` ("sm_80",
 * "80" or "8.0"; NULL: sm_90) to a cubin, with --ptxas-options=--verbose so registers, spills,
 * static shared memory and stack frame per kernel come from the log, plus -default-device and
 * --std=c++17. Works without a GPU. FA_ERR_RUNTIME with NVRTC's diagnostics about the source on a
 * compile error, or when the log has no ptxas figures. Release with fa_cuda_compiled_free. */
fa_status fa_cuda_nvrtc_compile(fa_ctx *ctx, const char *src, const char *name, const char *arch,
                                fa_cuda_compiled *out);
/* The figures of entry function `name` in c; NULL when ptxas reported none. */
const fa_cuda_kernel_info *fa_cuda_compiled_kernel(const fa_cuda_compiled *c, const char *name);
void fa_cuda_compiled_free(fa_cuda_compiled *c);
/* Parse a ptxas --verbose log into per-kernel infos (malloc'd array, *n set). Exposed for tests. */
fa_status fa_cuda_parse_ptxas_log(fa_ctx *ctx, const char *log, fa_cuda_kernel_info **out, int *n);
/* NVRTC version "13.0". */
const char *fa_cuda_nvrtc_version(char *buf, size_t cap);

/* ---- our kernels ---- */

/* The CUDA C source of every kernel of the executor (one module), and the entry names. */
const char *fa_cuda_kernels_source(void);
int fa_cuda_kernel_count(void);
const char *fa_cuda_kernel_entry(int i);
/* Compile (NVRTC, cached per process by source hash and arch) and load the kernels module into
 * the current context; the caller must have made a context current (cudaSetDevice + cudaFree(0)).
 * Release with fa_cuda_module_unload. */
fa_status fa_cuda_kernels_module(fa_ctx *ctx, const char *arch, fa_cuda_module **out);

/* ---- executor ---- */

typedef struct fa_cuda_exec fa_cuda_exec;

/* Check that every live node of g has a cuda kernel, without touching a device:
 * FA_ERR_UNSUPPORTED "unsupported op X at node 'Y' on cuda" (or naming the dtype/attribute)
 * otherwise. */
fa_status fa_cuda_exec_check_graph(fa_ctx *ctx, const fa_graph *g);
/* True when the cuda executor runs node n of g (no device touched); false with the sentence of
 * fa_cuda_exec_check_graph in why. A FusedKernel node is a provider's; a Fused{Conv,MatMul,...}
 * epilogue node is refused with its library-epilogue mapping (fa_cuda_epilogue_map): "no cuda
 * epilogue for ..." or "cuda epilogue X fits but is not executed yet". */
bool fa_cuda_exec_supports_node(const fa_graph *g, const fa_node *n, char *why, size_t why_cap);
/* Create the cuda executor for prepared graph g on device 0: driver loaded, kernels compiled by
 * NVRTC for the device's arch (cached by source hash per process), cuBLAS handle, cuDNN loaded
 * (libcudnn.so.9 by dlopen) when the graph has Conv, constants uploaded. Options: threads is
 * ignored; max_memory caps live device activation bytes; a kernel provider may hand it generated
 * fused kernels as device kernels (see "Kernel providers on the cuda target" below; host kernels
 * are refused). Never run on a GPU in this project's CI. Errors: FA_ERR_UNSUPPORTED
 * "no CUDA driver" / "no CUDA device" / unsupported op; FA_ERR_RUNTIME for CUDA failures. */
fa_status fa_cuda_exec_create(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *opt, fa_cuda_exec **out);
/* The same execution plan run on the host without a GPU (tests): every kernel launch goes to a C
 * version with the same arguments and index arithmetic (runtime/cuda/emulate.c), MatMul/Gemm to
 * a naive column-major SGEMM called with the exact cuBLAS arguments, Conv to a naive
 * cross-correlation with the cuDNN descriptor parameters (2-D only). No driver needed. */
fa_status fa_cuda_exec_create_emulated(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *opt,
                                       fa_cuda_exec **out);
void fa_cuda_exec_free(fa_cuda_exec *e);
/* As fa_exec_set_input / fa_exec_fill_inputs (the same values for the same seed as on cpu). */
fa_status fa_cuda_exec_set_input(fa_ctx *ctx, fa_cuda_exec *e, int i, const fa_value *v);
fa_status fa_cuda_exec_fill_inputs(fa_ctx *ctx, fa_cuda_exec *e, uint64_t seed);
/* Run once on the executor's stream: one NVTX range per node ("fa:<id>:<op>:<name>"),
 * intermediates allocated (cudaMallocAsync) per tensor and freed after their last consumer.
 * With an observer the stream is synchronized before kernel_begin and before kernel_end so
 * host-clock timings are the node's GPU time. Outputs are copied to host at the end. */
fa_status fa_cuda_exec_run(fa_ctx *ctx, fa_cuda_exec *e, const fa_exec_observer *obs);
/* NVTX range name of node n: "fa:<node id>:<op type>:<node name>" (the format
 * fa_cupti_trace_finish parses back into node / op_type / node_name). */
const char *fa_cuda_range_name(const fa_node *n, char *buf, size_t cap);
/* Host copy of graph output i after a run; valid until the next run / free. */
const fa_value *fa_cuda_exec_output(const fa_cuda_exec *e, int i);
uint64_t fa_cuda_exec_peak_bytes(const fa_cuda_exec *e);
const char *fa_cuda_exec_kernel_name(const fa_cuda_exec *e, const fa_node *n);
const char *fa_cuda_exec_device_name(const fa_cuda_exec *e);

/* ---- fused kernels (runtime/cuda/fused.c): the applier's generated CUDA kernels ----
 * A fused kernel is a cubin compiled by NVRTC for the device's arch with one entry function
 * whose parameters are one device pointer per cluster input, then per output (advisor/codegen.h
 * "Generated CUDA ABI"), launched as a 1-D grid: block = (block_size,1,1), grid = (grid,1,1). */

typedef struct fa_cuda_fused fa_cuda_fused;

/* What a fused kernel used, for reports: NVRTC/ptxas figures given at creation and the driver's
 * own figures read after loading (-1 until loaded / unavailable). */
typedef struct fa_cuda_fused_stats {
    char name[128];          /* entry function */
    unsigned block[3], grid[3];
    int n_in, n_out;         /* pointer parameters */
    int ptxas_registers;     /* per thread, from the ptxas --verbose log (caller-supplied) */
    int ptxas_spill_bytes;   /* spill stores + loads, bytes */
    int registers;           /* cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS) */
    int local_bytes;         /* cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES), per thread */
    int max_threads;         /* cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) */
} fa_cuda_fused_stats;

/* 1-D launch configuration for `block_size` threads per block and `grid` blocks (the codegen's
 * info.block_size / info.grid): block = {block_size,1,1}, grid = {grid,1,1}. FA_ERR_UNSUPPORTED
 * (message naming the kernel) when block_size is outside 1..1024 (CUDA C Programming Guide,
 * "Thread Hierarchy": at most 1024 threads per block) or grid outside 1..2^31-1 (the x-dimension
 * limit of compute capability >= 3.0). Pure; no driver needed. */
fa_status fa_cuda_fused_launch_dims(fa_ctx *ctx, const char *name, int block_size, int64_t grid, unsigned block_out[3],
                                    unsigned grid_out[3]);

/* A fused kernel from a cubin (copied) with entry `name`, launch configuration as
 * fa_cuda_fused_launch_dims, n_in + n_out pointer parameters, ptxas figures (-1 unknown).
 * Needs no driver; nothing is loaded until fa_cuda_fused_load. Free with fa_cuda_fused_free. */
fa_status fa_cuda_fused_create(fa_ctx *ctx, const void *cubin, size_t cubin_size, const char *name, int block_size,
                               int64_t grid, int n_in, int n_out, int ptxas_registers, int ptxas_spill_bytes,
                               fa_cuda_fused **out);
/* cuModuleLoadData + cuModuleGetFunction into the current context (the caller made one current:
 * cudaSetDevice + cudaFree(0)), then registers / local bytes / max threads read with
 * cuFuncGetAttribute into the stats. FA_ERR_UNSUPPORTED without a driver; FA_ERR_RUNTIME with the
 * driver's error string; FA_ERR_UNSUPPORTED when the block exceeds the function's max threads.
 * Idempotent. */
fa_status fa_cuda_fused_load(fa_ctx *ctx, fa_cuda_fused *k);
/* cuLaunchKernel of a loaded kernel on `stream` (CUstream / cudaStream_t, NULL = legacy default)
 * with dev_in[0..n_in) then dev_out[0..n_out) as its parameters (device pointers). With n != NULL
 * the launch is wrapped in the node's NVTX range (fa_cuda_range_name); the executor, which
 * already opens that range per node, passes NULL. Asynchronous: errors of the kernel itself show
 * at the next synchronization. FA_ERR_INTERNAL when the counts differ from the kernel's. */
fa_status fa_cuda_fused_launch(fa_ctx *ctx, fa_cuda_fused *k, const fa_node *n, void *const *dev_in, int n_in,
                               void *const *dev_out, int n_out, void *stream);
/* Borrowed until fa_cuda_fused_free. */
const fa_cuda_fused_stats *fa_cuda_fused_stats_of(const fa_cuda_fused *k);
/* Unloads the module if loaded. NULL is a no-op. Takes void * so it can be a
 * fa_custom_kernel.destroy. */
void fa_cuda_fused_free(void *k);

/* Kernel providers on the cuda target. The cuda executor asks fa_exec_options.provider exactly as
 * the cpu executor does; a provider that hands it a device kernel sets
 *     out->run = fa_cuda_fused_custom_run, out->state = a fa_cuda_fused *, out->destroy = fa_cuda_fused_free
 * and the executor then loads the state (fa_cuda_fused_load) once its context is current and
 * launches it (fa_cuda_fused_launch, n = NULL) on its stream with the device buffers of the node's
 * inputs then outputs. fa_cuda_fused_custom_run itself is only a marker: called as a host kernel
 * (e.g. by the cpu executor) it refuses with FA_ERR_UNSUPPORTED "cuda kernel on a host executor". */
fa_status fa_cuda_fused_custom_run(void *state, fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                   fa_value *out, int n_out, int threads);
/* True when a provided kernel is a device kernel (ck->run == fa_cuda_fused_custom_run). */
bool fa_cuda_fused_is_device_kernel(const fa_custom_kernel *ck);

#endif
