/* collector/cupti — CUPTI Activity API collector: pure record conversion (testable without the
 * CUPTI runtime or a GPU), an in-process collector with a worker thread, and the compact trace
 * file the injection tracer (injection.c) writes for `fuse-advise trace`. docs/cuda.md. */
#ifndef FA_CUPTI_H
#define FA_CUPTI_H

#include "collector/collector.h"
#include "core/core.h"

/* Counters of one collection (all buffers of a run). Every field is a count. */
typedef struct fa_cupti_stats {
    uint64_t buffers;            /* buffers walked */
    uint64_t bytes;              /* valid bytes walked */
    uint64_t records;            /* records converted into fa_activity */
    uint64_t by_kind[FA_ACT_KIND_COUNT]; /* converted records per fa_activity_kind */
    uint64_t skipped;            /* records of a kind we know the size of but do not convert
                                    (CUPTI_ACTIVITY_KIND_NAME, DEVICE, CONTEXT, ...) */
    uint64_t unknown_kind;       /* records whose kind is not in our size table: the rest of
                                    that buffer cannot be walked and is skipped */
    uint64_t unknown_bytes;      /* bytes skipped because of them */
    uint64_t truncated;          /* buffers whose valid size ends inside a record */
    uint64_t dropped;            /* records CUPTI itself dropped (cuptiActivityGetNumDroppedRecords) */
    uint64_t markers_unpaired;   /* NVTX ranges with a start or an end record only (after finish) */
    uint64_t orphans;            /* kernels/copies/sets without a runtime/driver record of the same
                                    correlation id (after finish) */
    uint64_t clock_inversions;   /* device activity starting before its launch call (after finish) */
} fa_cupti_stats;

/* Size in bytes of one activity record of CUPTI kind `kind` as the installed CUPTI (13.x,
 * CUPTI_API_VERSION 130001) writes it, i.e. sizeof the newest versioned struct that
 * cupti_activity.h defines for that kind; 0 when not tabled. Records are 8-byte aligned
 * (ACTIVITY_RECORD_ALIGNMENT) and every tabled struct's size is a multiple of 8. */
size_t fa_cupti_record_size(uint32_t kind);

/* Convert the activity records in buf[0..valid_size) (a completed CUPTI activity buffer, or a
 * synthetic one laid out the same way) into records appended to t:
 *   CONCURRENT_KERNEL / KERNEL  (CUpti_ActivityKernel10)        -> FA_ACT_KERNEL
 *   RUNTIME / DRIVER            (CUpti_ActivityAPI)              -> FA_ACT_RUNTIME / FA_ACT_DRIVER
 *   MEMCPY                      (CUpti_ActivityMemcpy6)          -> FA_ACT_MEMCPY
 *   MEMSET                      (CUpti_ActivityMemset4)          -> FA_ACT_MEMSET
 *   SYNCHRONIZATION             (CUpti_ActivitySynchronization2) -> FA_ACT_SYNC
 *   OVERHEAD                    (CUpti_ActivityOverhead3)        -> FA_ACT_OVERHEAD
 *   MARKER (NVTX)               (CUpti_ActivityMarker2)          -> FA_ACT_RANGE
 *   DEVICE                      (CUpti_ActivityDevice5)          -> t->device_name (first seen)
 * Kernel fields: grid, block, registers per thread, static and dynamic shared memory (bytes per
 * block), local memory per thread (bytes), stream id, correlation id, device id, start/end ns
 * (CUPTI timestamps, ns). API records are named by cuptiGetCallbackName (a table lookup that
 * needs no driver), else "runtime_cbid_N" / "driver_cbid_N". An NVTX range is one FA_ACT_RANGE
 * whose START and END marker records (same marker id, kept in external_id) may arrive in any
 * order and in different buffers; instantaneous markers are zero-length ranges. A record that
 * crosses valid_size counts as truncated; an unknown kind stops the walk of this buffer (its
 * size is unknown) and counts in unknown_kind/unknown_bytes. Records are appended in buffer
 * order; call fa_cupti_trace_finish once after the last buffer. stats may be NULL.
 * FA_ERR_NOMEM on allocation failure; FA_ERR_INPUT for a misaligned buffer. */
fa_status fa_cupti_process_buffer(fa_ctx *ctx, fa_trace *t, const uint8_t *buf, size_t valid_size,
                                  fa_cupti_stats *stats);

/* After the last buffer: sort the records by start time (buffers complete out of order), link
 * every kernel/memcpy/memset to the runtime or driver call with its correlation id (copying the
 * call's pid/tid; FA_ACTF_ORPHAN when none, FA_ACTF_CLOCK_INVERSION when the device activity
 * starts before the call), and attribute it to the innermost NVTX range on the launching thread
 * that contains the call's start: node_name = range name, and for our executor's ranges named
 * "fa:<node id>:<op type>:<node name>" node/op_type/node_name are parsed back. Updates stats'
 * orphans, clock_inversions and markers_unpaired, and t's n_orphans / n_clock_inversions. */
fa_status fa_cupti_trace_finish(fa_ctx *ctx, fa_trace *t, fa_cupti_stats *stats);

/* NVTX range name the cuda executor pushes for a node (parsed by fa_cupti_trace_finish). */
const char *fa_cupti_range_name(int node_id, const char *op_type, const char *node_name, char *buf,
                                size_t cap);

/* ---- compact trace file (written by the injection library, read by `fuse-advise trace`) ----
 * Little-endian: "FACUPTI1", u32 format version (1), u32 n_notes, notes (u32 len + bytes each),
 * the device name (string), fa_cupti_stats as 16 u64, u64 n_records, then each record: the numeric fields of fa_activity
 * in declaration order and its three strings (u32 len + bytes, 0xffffffff = NULL). */
fa_status fa_cupti_trace_write(fa_ctx *ctx, const char *path, const fa_trace *t,
                               const fa_cupti_stats *stats, const char *const *notes, int n_notes);
/* Read a file written by fa_cupti_trace_write. *out (source "cupti") and *notes_out (one
 * malloc'd string, notes joined by newlines, may be NULL) owned by the caller. FA_ERR_INPUT
 * naming the file and byte offset for a bad/truncated file. */
fa_status fa_cupti_trace_read(fa_ctx *ctx, const char *path, fa_trace **out, fa_cupti_stats *stats,
                              char **notes_out);

/* ---- in-process collector (one per process: CUPTI's callbacks are process-wide; the
 *      callback trampoline state is the documented global of STYLE.md) ---- */
enum {
    FA_CUPTI_NO_API = 1u << 0,     /* skip RUNTIME/DRIVER records */
    FA_CUPTI_NO_NVTX = 1u << 1,    /* skip MARKER (NVTX) records */
};
/* Enable CONCURRENT_KERNEL (never KERNEL, which serializes kernels), RUNTIME, DRIVER, MEMCPY,
 * MEMSET, SYNCHRONIZATION, OVERHEAD, MARKER and DEVICE; register 8 MiB buffer callbacks; start the
 * worker thread that converts completed buffers. A kind that cannot be enabled (e.g. MARKER
 * without NVTX) is noted and skipped: tracing degrades. FA_ERR_UNSUPPORTED when CUPTI cannot
 * start at all (no driver / no device: the message names the CUPTI call and its result string);
 * FA_ERR_USAGE when already started. Never aborts the process. */
fa_status fa_cupti_start(fa_ctx *ctx, unsigned flags);
/* Flush (cuptiActivityFlushAll forced), join the worker, disable the kinds, finish the trace
 * (fa_cupti_trace_finish) and hand it over. *out owned by the caller; stats/notes may be NULL;
 * *notes (malloc'd, newline-joined degradation/error notes) owned by the caller. */
fa_status fa_cupti_stop(fa_ctx *ctx, fa_trace **out, fa_cupti_stats *stats, char **notes);
/* True between a successful fa_cupti_start and fa_cupti_stop. */
bool fa_cupti_active(void);

/* ---- collection over our own executor (collector/cupti/collect.c; not in the injection
 *      library) ---- */

/* Route NVTX to CUPTI in this process: set NVTX_INJECTION64_PATH to the loaded libcupti's path
 * unless already set. Must run before the process's first NVTX call (the executor's first run);
 * returns false when the path cannot be found or the variable was already set elsewhere. */
bool fa_cupti_route_nvtx(void);

/* Give every record whose start lies in window i ([win_start[i], win_end[i]], CUPTI clock, ns)
 * iter = i (others -1), add one FA_ACT_RANGE "iteration" record per window, and put each
 * attributed node's registry cost (costs[node], may be NULL) on its first kernel of each
 * iteration only, so a node that launches several kernels counts its bytes/FLOPs once.
 * n_costs bounds the node ids. */
fa_status fa_cupti_label_iterations(fa_ctx *ctx, fa_trace *t, const uint64_t *win_start, const uint64_t *win_end,
                                    int n_windows, const fa_op_cost *costs, int n_costs);

/* Like fa_collect_cpu, with GPU timings from CUPTI: route NVTX, run `warmup` untraced
 * iterations, start the collector, run `iters` timed iterations (each bracketed by
 * cuptiGetTimestamp; fa_exec_run synchronizes), stop, label iterations and costs. Kernels are
 * attributed to nodes through the executor's NVTX ranges. FA_ERR_UNSUPPORTED when CUPTI
 * cannot start (no driver). *out owned by the caller. */
fa_status fa_collect_cupti(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int warmup, int iters,
                           fa_progress_fn progress, void *progress_user, fa_trace **out);

/* Environment variable naming the trace file the injection library writes at exit. */
#define FA_CUPTI_OUT_ENV "FA_CUPTI_OUT"

/* Run cmd[0..cmd_argc) (argv, NULL-terminated; started with posix_spawnp, never a shell) with the
 * CUPTI injection tracer ($FA_CUPTI_INJECTION, else libfuse-advise-cupti.so beside this
 * executable) and, unless no_nvtx, NVTX routed to CUPTI; wait for it; read and merge the trace
 * file each of its processes wrote (fa_cupti_trace_read, fa_cupti_trace_finish). *out: the merged
 * trace (owned by the caller, empty when the command never initialized CUDA); *n_files: trace
 * files read; *cmd_status: its exit status (128 + signal); *notes (malloc'd, may be NULL): the
 * tracers' notes per pid; stats may be NULL. The caller flushes its own output first. Errors:
 * FA_ERR_UNSUPPORTED when the build has no CUDA toolkit or the tracer library is missing,
 * FA_ERR_INPUT when the command cannot start, FA_ERR_IO for the temporary folder. */
fa_status fa_cupti_trace_program(fa_ctx *ctx, int cmd_argc, char **cmd, bool no_nvtx, fa_trace **out,
                                 fa_cupti_stats *stats, char **notes, int *n_files, int *cmd_status);

/* Record the CUPTI call `call` with result `res` (CUptiResult) at file:line on ctx; FA_OK for
 * CUPTI_SUCCESS, else `fail` with "CALL failed at FILE:LINE: CUPTI_ERROR_...". */
fa_status fa_cupti_check(fa_ctx *ctx, int res, fa_status fail, const char *call, const char *file,
                         int line);
#define FA_CUPTI_CHECK(ctx, fail, call) fa_cupti_check((ctx), (int)(call), (fail), #call, __FILE__, __LINE__)

#endif
