/* collector — trace sources (cpu executor clock, CUPTI, Kineto JSON / Nsight Systems import)
 * all produce one in-memory trace of activity records (fa_trace). */
#ifndef FA_COLLECTOR_H
#define FA_COLLECTOR_H

#include "core/core.h"
#include "graph/graph.h"
#include "runtime/runtime.h"

/* Activity kinds. Stored in the database: only grows at its end. */
typedef enum fa_activity_kind {
    FA_ACT_KERNEL = 0,      /* a compute kernel (ours on cpu, a GPU kernel on cuda/imports) */
    FA_ACT_MEMCPY = 1,
    FA_ACT_MEMSET = 2,
    FA_ACT_RUNTIME = 3,     /* CUDA runtime API call (cudaLaunchKernel, ...) */
    FA_ACT_DRIVER = 4,      /* CUDA driver API call */
    FA_ACT_CPU_OP = 5,      /* framework op on the CPU (Kineto cpu_op / Operator) */
    FA_ACT_RANGE = 6,       /* NVTX / user annotation range */
    FA_ACT_SYNC = 7,        /* synchronization */
    FA_ACT_OVERHEAD = 8,    /* profiler's own overhead (CUPTI OVERHEAD records) */
    FA_ACT_MODULE = 9,      /* nn.Module scope on the CPU (Kineto python_function "nn.Module: X") */
    FA_ACT_PYFRAME = 10,    /* a Python source frame on the CPU (Kineto python_function "file.py(N): fn") */
    FA_ACT_KIND_COUNT
} fa_activity_kind;
const char *fa_activity_kind_name(fa_activity_kind k);

/* One activity record. Strings are interned in the trace's arena (valid until
 * fa_trace_free). Unknown numeric fields are 0 unless stated; unknown ids are -1. */
typedef struct fa_activity {
    fa_activity_kind kind;
    const char *name;         /* kernel / API / op name */
    const char *op_type;      /* ONNX op type for our runs; CPU op name for imports; may be NULL */
    const char *node_name;    /* graph node (our runs) or attributed op/range (imports); may be NULL */
    int32_t node;             /* graph node id for our runs, -1 otherwise */
    int32_t iter;             /* timed iteration (0-based); -1 for warm-up or unknown */
    int32_t device;           /* device index; -1 for host */
    int64_t stream;           /* CUDA stream, or the host thread id for cpu kernels */
    int64_t pid, tid;         /* host process / thread of the launch (imports), 0 if unknown */
    uint64_t start_ns, end_ns;/* CLOCK_MONOTONIC for cpu runs; the trace's own clock for imports */
    int64_t correlation;      /* launch ↔ kernel correlation id, -1 if none */
    int64_t external_id;      /* Kineto External id (kernel → cpu op), -1 if none */
    int32_t grid[3], block[3];/* launch configuration, 0 if unknown */
    int32_t registers;        /* registers per thread, 0 if unknown */
    int32_t static_smem;      /* bytes per block */
    int32_t dynamic_smem;     /* bytes per block */
    int32_t local_mem;        /* bytes per thread (spills), 0 if unknown */
    uint64_t bytes_read;      /* DRAM-level bytes this kernel reads (model-derived), 0 if unknown */
    uint64_t bytes_written;
    uint64_t flops;           /* floating-point operations, 0 if unknown */
    float occupancy;          /* achieved/theoretical occupancy if the source gives it, <0 unknown */
    unsigned flags;           /* FA_ACTF_* */
    /* FA_ACT_SYNC from Kineto's cuda_sync records ("Stream Wait Event", "Event Sync"): the
     * correlation id of the cudaEventRecord call whose event the stream or the host waited on,
     * and the stream that event was recorded on; -1 when the record names none */
    int64_t wait_record, wait_stream;
    /* imports only (NULL otherwise; not stored in the run database): */
    const char *shapes;       /* cpu op: its inputs "TYPE:DIMS;..." (DIMS "8x512x768", "L<numel>"
                                 for a TensorList, "?" unreadable; "8x512x768@393216x768x1" with the
                                 input's strides when Input Strides has them) from Input Dims /
                                 Input type / Input Strides; GPU record: its op's, when that op
                                 launched only it */
    const char *stack;        /* GPU record: the frames around its cpu op, outermost first,
                                 " > " between them (cpu ops, user ranges, nn.Module scopes) */
    const char *source;       /* GPU record: the innermost Python frame of the user's code around its
                                 cpu op ("transformers/models/qwen2/modeling_qwen2.py(68): forward"),
                                 not torch's own; NULL when the trace has none (with_stack off) */
} fa_activity;

enum {
    FA_ACTF_ESTIMATED_BYTES = 1u << 0, /* bytes derived from recorded input dims, not measured */
    FA_ACTF_ORPHAN = 1u << 1,          /* no matching launch/correlation in the trace window */
    FA_ACTF_CLOCK_INVERSION = 1u << 2, /* kernel appeared to start before its launch */
    FA_ACTF_GRAPH = 1u << 3,           /* launched by a CUDA/HIP graph replay (cudaGraphLaunch):
                                          op_type is the op it was captured under when the capture
                                          is in the trace, node_name the op around the launch */
};

/* The trace: activities plus metadata. Owns an arena for strings. */
typedef struct fa_trace {
    fa_arena *arena;
    fa_activity *acts;
    size_t n_acts, cap_acts;
    const char *source;       /* "cpu-executor", "cupti", "kineto", "nsys" */
    const char *source_path;  /* imported file, or NULL */
    const char *device_name;  /* e.g. "NVIDIA A100-SXM4-40GB" or the cpu model name */
    int n_iters;              /* timed iterations recorded (our runs); 0 for imports */
    int n_warmup;             /* untimed warm-up iterations run before them (our runs; FA_WARMUP_AUTO
                                 resolved): not stored, the run's row keeps it (fa_run_info.warmup) */
    /* counters an importer reports (0 for our own runs) */
    uint64_t n_orphans, n_clock_inversions, n_parse_errors;
} fa_trace;

fa_trace *fa_trace_create(const char *source);
void fa_trace_free(fa_trace *t);
/* Append a copy of *a; its strings must already be interned (fa_trace_intern). Returns the
 * stored record (valid until the next add) or NULL on OOM. */
fa_activity *fa_trace_add(fa_trace *t, const fa_activity *a);
/* Intern a string in the trace's arena (dedup by content). NULL -> NULL. */
const char *fa_trace_intern(fa_trace *t, const char *s);
const char *fa_trace_intern_n(fa_trace *t, const char *s, size_t n);
/* Bytes of the distinct strings t holds (each kept once; fa_intern_bytes). */
size_t fa_trace_names_bytes(const fa_trace *t);
/* A zeroed activity with ids set to -1 and occupancy -1. */
fa_activity fa_activity_init(fa_activity_kind kind);

/* ---- cpu collector (collector/cpu/) ---- */

/* Progress of long collections (fa_progress_fn, core.h): done/total iterations (warm-up
 * included). total never changes within a step: fa_collect_cpu_span reports against the most
 * iterations it may take and calls done == total when it stops. */

/* Run `warmup` unrecorded and `iters` timed iterations of executor e over graph g and return
 * one FA_ACT_KERNEL record per kernel per timed iteration (start/end CLOCK_MONOTONIC ns,
 * node, op, thread, bytes and FLOPs from the op registry's cost formulas) plus one
 * FA_ACT_RANGE record named "iteration" per timed iteration (its wall time, dispatch gaps
 * included). The collector's own bookkeeping is taken out of the timeline (overhead
 * compensation, collector/cpu/cpu.c): within an iteration every stamp is moved back by the time
 * the collector measured itself spending on the kernels before it, so a kernel's span keeps its
 * length and the idle time between kernels and the iteration's span are the executor's, as an
 * uninstrumented run (the applier's benchmarks) has them. Inputs must be set on e. *out owned by
 * caller (fa_trace_free). */
fa_status fa_collect_cpu(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int warmup, int iters,
                         fa_progress_fn progress, void *progress_user, fa_trace **out);
/* The baseline trace's span (issue 19): fa_collect_cpu_span keeps taking timed iterations past
 * `iters` until they span min_span_s seconds (or FA_TRACE_SPAN_MAX_ITERS iterations, or `iters`
 * when that is more), so the members' medians the advisor predicts from are not one moment of
 * the machine: on the shared 2-core VM memory bandwidth moves 10-50 % over seconds, and a
 * profile taken in one such phase put the members' time at 0.76-1.44x (p10-p90) of the same
 * sub-graphs measured over the apply stage, 0.80-1.18x with a 2 s span (bench/README.md,
 * "Calibration"). The same idea as Google Benchmark's --benchmark_min_time. `run --trace-span S`
 * (default FA_TRACE_SPAN_S_DEFAULT; 0: exactly `iters`); the trace's n_iters says how many were
 * taken. Errors: FA_ERR_USAGE for a span outside [0, FA_TRACE_SPAN_MAX_S]. */
#define FA_TRACE_SPAN_S_DEFAULT 2.0
#define FA_TRACE_SPAN_MAX_S 3600.0
#define FA_TRACE_SPAN_MAX_ITERS 200
fa_status fa_collect_cpu_span(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int warmup, int iters, double min_span_s,
                              fa_progress_fn progress, void *progress_user, fa_trace **out);
/* A clock in ns for fa_collect_cpu_clocked (user: its state). */
typedef uint64_t (*fa_clock_fn)(void *user);
/* fa_collect_cpu_span with the records stamped by clock (NULL: fa_now_ns, CLOCK_MONOTONIC), for
 * tests that check the overhead compensation against a clock they control. */
fa_status fa_collect_cpu_clocked(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int warmup, int iters, double min_span_s,
                                 fa_clock_fn clock, void *clock_user, fa_progress_fn progress, void *progress_user,
                                 fa_trace **out);
/* A cpu recorder: fa_collect_cpu's observer for iterations a caller runs in a loop of its own
 * (the applier's end-to-end rounds record the fused model's trace in its benchmark runs, not in
 * runs added for it: issue 39). Records, stamps and overhead compensation as fa_collect_cpu's.
 * clock NULL: fa_now_ns. fa_cpu_recorder_run runs e (inputs set, over the graph g the recorder
 * was made for) once: unrecorded when !timed (a warm-up), else as the trace's next timed
 * iteration; *own_ns (may be NULL) gets what the recorder itself spent in that run — the time a
 * caller timing the call subtracts to have the executor's, as the stamps have it. A failed run
 * records no iteration. fa_cpu_recorder_take hands over the trace (n_iters: the timed runs;
 * NULL after the first take); the recorder still owns nothing of it. Errors: out of memory; the
 * executor's own. */
typedef struct fa_cpu_recorder fa_cpu_recorder;
fa_status fa_cpu_recorder_create(fa_ctx *ctx, const fa_graph *g, fa_clock_fn clock, void *clock_user,
                                 fa_cpu_recorder **out);
fa_status fa_cpu_recorder_run(fa_ctx *ctx, fa_cpu_recorder *rec, fa_exec *e, bool timed, uint64_t *own_ns);
fa_trace *fa_cpu_recorder_take(fa_cpu_recorder *rec);
void fa_cpu_recorder_free(fa_cpu_recorder *rec);
/* The trace of executor e with its target's trace source (collector/collect.c): CUPTI on cuda,
 * the executor's clock (fa_collect_cpu) on cpu and on any target without a source of its own.
 * Same contract as fa_collect_cpu. */
fa_status fa_collect(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int warmup, int iters,
                     fa_progress_fn progress, void *progress_user, fa_trace **out);
/* fa_collect with a minimum span of the timed iterations (fa_collect_cpu_span) on cpu; a target
 * with a trace source of its own (cuda: CUPTI, whose kernel timings do not share the host's
 * memory phases) takes exactly `iters`. */
fa_status fa_collect_span(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int warmup, int iters, double min_span_s,
                          fa_progress_fn progress, void *progress_user, fa_trace **out);

#endif
