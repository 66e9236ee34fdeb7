/* collector/import — turn trace files other tools wrote (PyTorch profiler / Kineto Chrome-trace
 * JSON, plain or gzip; Nsight Systems SQLite exports) into one in-memory fa_trace. */
#ifndef FA_COLLECTOR_IMPORT_H
#define FA_COLLECTOR_IMPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/collector.h"
#include "core/core.h"

/* What a file looks like, judged by its first bytes (never its name). */
typedef enum fa_import_kind {
    FA_IMPORT_UNKNOWN = 0,
    FA_IMPORT_KINETO_JSON = 1,    /* first non-blank byte '{' or '[' */
    FA_IMPORT_KINETO_JSON_GZ = 2, /* gzip magic 1f 8b (the JSON inside is checked on import) */
    FA_IMPORT_NSYS_SQLITE = 3,    /* "SQLite format 3\0" header (tables are checked on import) */
    FA_IMPORT_KIND_COUNT
} fa_import_kind;
const char *fa_import_kind_name(fa_import_kind k);

/* Device properties a trace carries (Kineto deviceProperties, nsys TARGET_INFO_GPU).
 * 0 / "" where the trace does not say. */
typedef struct fa_import_device {
    int32_t id;                   /* CUDA device index */
    char name[96];                /* e.g. "NVIDIA A100-SXM4-80GB" */
    int32_t sm_count;             /* multiprocessors */
    int32_t cc_major, cc_minor;   /* compute capability */
    uint64_t total_mem_bytes;     /* global memory, bytes */
    int32_t max_threads_per_sm;
    int32_t regs_per_sm;          /* 32-bit registers per SM */
    int32_t smem_per_sm;          /* bytes */
    int32_t smem_per_block;       /* bytes (default limit, not opt-in) */
    int32_t warp_size;
} fa_import_device;

enum { FA_IMPORT_MAX_DEVICES = 16 };

/* What an import saw. Filled on success and, as far as the importer got, on failure.
 * Counts are records, offsets are bytes into the (uncompressed) JSON text. */
typedef struct fa_import_stats {
    fa_import_kind kind;
    uint64_t file_bytes;        /* size on disk */
    uint64_t input_bytes;       /* bytes parsed: uncompressed JSON, or the SQLite file size */
    uint64_t n_events;          /* JSON trace events / SQLite rows read */
    uint64_t n_kernels, n_memcpy, n_memset, n_runtime, n_driver, n_cpu_ops, n_ranges, n_sync;
    uint64_t n_frames;          /* Python frames kept as the cpu ops' stack (nn.Module scopes, user
                                 * source lines: with_modules / with_stack) */
    uint64_t n_skipped;         /* events of kinds not imported (flows, instants, python, ...);
                                 * n_events = the kinds above + n_frames + n_skipped + n_bad_records */
    uint64_t n_orphans;         /* GPU records with no launch call in the trace (FA_ACTF_ORPHAN) */
    uint64_t n_clock_inversions;/* GPU records starting before their launch (FA_ACTF_CLOCK_INVERSION) */
    uint64_t n_duplicate_correlations; /* launch calls sharing a correlation id (same process) */
    bool legacy_props;          /* the devices came from an older Kineto's "computeProperties" */
    uint64_t n_extid_mismatch;  /* GPU records whose External id names an op that is not around
                                 * their launch call (same thread, holding its start): attributed
                                 * by the launch's time instead */
    uint64_t n_attributed;      /* GPU records attributed to a cpu op (Kineto) / NVTX range (nsys) */
    uint64_t n_estimated_bytes; /* records with bytes from Input Dims (FA_ACTF_ESTIMATED_BYTES) */
    uint64_t n_negative_durations; /* dur < 0 or end < start in the input: clamped to 0 */
    uint64_t n_bad_records;     /* records of an imported kind skipped because a field they need is
                                 * unusable: a time or id of the wrong JSON type ("ts":"123"),
                                 * a number that overflows int64 (also ts + dur + base time), no
                                 * ts; nsys: NULL / text / real start, end or id columns */
    uint64_t first_bad_record_offset; /* Kineto: byte offset just after the first such event;
                                       * nsys: 0 */
    uint64_t n_negative_times;  /* records starting before time 0 (after baseTimeNanoseconds) */
    uint64_t time_shift_ns;     /* when any record starts before 0: every record's start and
                                 * end were moved later by this much (the earliest start becomes
                                 * 0), so nothing is clamped and durations and gaps are kept */
    uint64_t n_bad_utf8;        /* names with invalid UTF-8 (each bad byte -> U+FFFD + its hex) */
    uint64_t n_nul_names;       /* names holding a NUL ("\u0000" or a raw NUL) -> U+FFFD "00":
                                 * never truncated, never merged with another name */
    uint64_t first_bad_utf8_offset; /* Kineto: byte offset just after the first such string
                                     * token; nsys: 0 (rows have no byte offsets) */
    uint64_t n_control_chars;   /* raw control bytes inside JSON strings (lenient pass) */
    uint64_t n_nonfinite;       /* NaN / Infinity / -Infinity literals (read as null) */
    uint64_t n_bad_numbers;     /* numbers beyond int64 / not integral where one was needed */
    uint64_t first_bad_number_offset; /* just after that number (ts/dur: after its event) */
    bool lenient_pass;          /* strict JSON failed; the file was re-read in lenient mode */
    bool no_gpu_activity;       /* no kernel / memcpy / memset at all: nothing to advise on */
    bool truncated;             /* the input ended early (kept only with keep_partial) */
    uint64_t truncated_offset;  /* byte offset where it ended */
    int64_t base_time_ns;       /* Kineto baseTimeNanoseconds, 0 if absent */
    char schema[32];            /* "kineto schemaVersion 1", "nsys 3.13.2", ... */
    uint64_t elapsed_ns;        /* wall time of the import */
    int n_devices;
    fa_import_device devices[FA_IMPORT_MAX_DEVICES];
} fa_import_stats;

/* Where a streaming import hands GPU records (fa_import_opts.sink). */
typedef struct fa_import_sink {
    /* Each GPU record (kernel, memcpy, memset) once it is attributed, with its launch call (NULL
     * when none) and the trace holding the cpu side read so far (its strings stay valid until
     * the trace is freed). Called in blocks, in file order; the record is not kept. */
    fa_status (*gpu)(void *user, fa_ctx *ctx, const fa_trace *t, const fa_activity *gpu, const fa_activity *launch);
    /* Forget what was sent: the Kineto importer reads a file again when strict JSON failed. */
    fa_status (*reset)(void *user, fa_ctx *ctx);
    void *user;
} fa_import_sink;

typedef struct fa_import_opts {
    /* Truncated JSON / gzip: false (default) -> FA_ERR_INPUT naming the byte offset and no
     * trace; true -> FA_OK with what was parsed up to there and stats->truncated set. */
    bool keep_partial;
    /* The name messages and trace->source_path give the input (NULL: the path imported). For a
     * caller that imports the spool of a pipe (fa_import_source_open) under the user's name. */
    const char *name;
    /* Streaming (Kineto): GPU records go to the sink in blocks as they are read and attributed,
     * and the returned trace holds the cpu side only, so memory does not grow with the number of
     * kernels (a trace of many graph replays: few launches, millions of kernels). Times are then
     * the file's own (no baseTimeNanoseconds, no shift of negative times; all biased by
     * FA_IMPORT_TIME_BIAS so that negative ones keep their order). A sink that is never called
     * got a trace with no GPU record in it, or one read whole: nsys SQLite exports ignore the
     * sink (their GPU records are in the returned trace). NULL: the whole trace in memory. */
    const fa_import_sink *sink;
} fa_import_opts;

#define FA_IMPORT_TIME_BIAS ((uint64_t)1 << 62) /* ns added to every time of a streaming import */

/* Judge a regular file by its magic bytes. Returns FA_IMPORT_UNKNOWN when it cannot be opened,
 * is not a regular file (its first bytes would be consumed: see fa_import_source_open) or
 * matches nothing. */
fa_import_kind fa_import_detect(const char *path);

/* An input the importers can read by path, as often as they need. A regular file is used in
 * place. Anything else that can be read once — a pipe, /dev/stdin, bash process substitution
 * (/dev/fd/N), a character device — is checked by its first bytes (not a trace: FA_ERR_INPUT
 * and nothing written) and then copied into a private temporary file (mode 0600, in a private
 * folder made under $TMPDIR when absolute, else /tmp, and reached through that folder's open
 * descriptor: core.h fa_private_tmpdir) that fa_import_source_close removes. Errors: FA_ERR_IO (cannot open/read, a folder is
 * FA_ERR_INPUT; cannot write the copy, e.g. disk full: the message names both), FA_ERR_NOMEM.
 * On failure nothing is left behind and *src holds no spool. */
typedef struct fa_import_source {
    const char *path;   /* the path to read: the input itself, or the temporary copy */
    const char *name;   /* the path as given (for messages); borrowed from the caller */
    char *spool;        /* the temporary copy, NULL for a regular file (owned): reached as
                           /proc/self/fd/N/trace through its private folder's descriptor */
    int spool_dir_fd;   /* that folder, held open while the spool exists */
    char spool_dir[4096]; /* its path (for messages and removal) */
    uint64_t bytes;     /* size of what path holds */
} fa_import_source;
fa_status fa_import_source_open(fa_ctx *ctx, const char *path, fa_import_source *src);
/* Remove the temporary copy (if any). NULL or a closed source: no-op. */
void fa_import_source_close(fa_import_source *src);

/* Import a Kineto Chrome-trace JSON file (plain or gzip; gzip found by magic bytes). Streams
 * the document through yajl in 256 KiB chunks (a read-ahead thread, alive only during the call,
 * reads/inflates the next chunk while this one parses): memory is the trace, never the document.
 * Times: Chrome-trace "ts"/"dur" are µs (displayTimeUnit only changes display); they are
 * converted from their decimal text to integer ns exactly (round half away from zero at the
 * ns digit), plus baseTimeNanoseconds when present. Activities stay in file order.
 * Attribution: kernel/memcpy/memset -> launch call by correlation id -> cpu_op by External id,
 * else the innermost cpu_op on the launch's thread containing the launch's start; the kernel's
 * op_type and node_name are that op's name, pid/tid those of the launch.
 * Errors: FA_ERR_IO (cannot open/read), FA_ERR_INPUT (not JSON, truncated without
 * keep_partial, invalid even in lenient mode; message names the file and the byte offset),
 * FA_ERR_UNSUPPORTED (a non-CUDA accelerator trace, e.g. MTIA, with no CUDA GPU records),
 * FA_ERR_NOMEM. A trace with no GPU records is FA_OK with stats->no_gpu_activity set.
 * *out (caller frees with fa_trace_free) is untouched on failure; stats may be NULL. */
fa_status fa_import_kineto(fa_ctx *ctx, const char *path, fa_trace **out, fa_import_stats *stats);
fa_status fa_import_kineto_ex(fa_ctx *ctx, const char *path, const fa_import_opts *opts,
                              fa_trace **out, fa_import_stats *stats);

/* Import a Nsight Systems SQLite export (read-only). Tables and columns are probed: metadata in
 * META_DATA_EXPORT (nsys >= 2023) or EXPORT_META_DATA (older); kernels from
 * CUPTI_ACTIVITY_KIND_KERNEL (required: start, end, correlationId, globalPid, deviceId,
 * streamId and one of shortName/demangledName; launch configuration columns optional),
 * runtime calls from CUPTI_ACTIVITY_KIND_RUNTIME, memcpy/memset, NVTX_EVENTS* ranges and
 * TARGET_INFO_GPU when present. Times are the export's ns. Kernels link to runtime calls by
 * correlationId within one process (globalPid = globalTid with the low 24 bits cleared); a
 * kernel's op_type/node_name is the innermost NVTX push/pop or start/end range on the launch
 * thread that contains the launch start.
 * Errors: FA_ERR_IO, FA_ERR_INPUT (not SQLite, or a required table/column missing: the message
 * names it), FA_ERR_NOMEM. No kernel table but a metadata table: FA_OK, no_gpu_activity. */
fa_status fa_import_nsys(fa_ctx *ctx, const char *path, fa_trace **out, fa_import_stats *stats);

/* Append the stats as one JSON object (RFC 8259; names escaped with fa_escape_json) to out,
 * for `import --json`: {"kind":..., "schema":..., "file_bytes":..., "events":..., "kernels":...,
 * ..., "no_gpu_activity":..., "devices":[{"id":..,"name":..,"sm_count":..,...}]}. Times in ns. */
void fa_import_stats_json(const fa_import_stats *st, fa_buf *out);

/* Detect, then call the matching importer; path may be a pipe (fa_import_source_open).
 * FA_ERR_INPUT for an unknown kind. */
fa_status fa_import_file(fa_ctx *ctx, const char *path, const fa_import_opts *opts,
                         fa_trace **out, fa_import_stats *stats);

#endif
