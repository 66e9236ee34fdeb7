/* store — the SQLite run database: schema and forward migrations, typed writes of runs,
 * graphs and traces, typed reads for the verbs and later pipeline stages (docs/schema.md). */
#ifndef FA_STORE_H
#define FA_STORE_H

#include "collector/collector.h"
#include "core/core.h"
#include "graph/graph.h"

/* Schema version this build writes (PRAGMA user_version). Older files are migrated forward
 * on open; newer files are refused untouched. History in docs/schema.md. */
#define FA_STORE_SCHEMA_VERSION 3

/* Default database path of every verb (`--db PATH` overrides). */
#define FA_STORE_DEFAULT_PATH "fuse-advise.db"

typedef struct fa_store fa_store;

/* fa_store_open_ex flags. */
enum {
    FA_STORE_NO_CREATE = 1u << 0, /* a missing file is an error (read verbs) instead of created */
    FA_STORE_READONLY = 1u << 1,  /* open read-only even when the file is writable */
};

/* Open (creating when missing) the run database at `path`.
 * - Connection: WAL journal, busy_timeout 10 s, foreign keys on, synchronous=NORMAL (in WAL
 *   mode a process crash never loses a committed transaction; only power loss can lose the
 *   last ones — SQLite docs, "pragma synchronous").
 * - Schema: user_version < FA_STORE_SCHEMA_VERSION is migrated forward step by step, each
 *   step in its own IMMEDIATE transaction; a newer version is refused (FA_ERR_UNSUPPORTED,
 *   message names the file and both versions) and the file is not modified.
 * - A file that is not SQLite: FA_ERR_INPUT naming the file, file untouched.
 * - A file without write permission (no write bit, or access(W_OK) fails) opens read-only:
 *   reads work, every write returns FA_ERR_IO "PATH: database is read-only ...". A
 *   read-only file whose schema is older than ours cannot be migrated: FA_ERR_IO.
 * - Writable opens mark runs left 'running' by a process that no longer exists (same host,
 *   kill(pid, 0) fails with ESRCH, or the pid now belongs to a younger process) as 'failed'
 *   with error "process died".
 * *out owned by the caller (fa_store_close); untouched on failure. */
fa_status fa_store_open(fa_ctx *ctx, const char *path, fa_store **out);
fa_status fa_store_open_ex(fa_ctx *ctx, const char *path, unsigned flags, fa_store **out);
/* Close; NULL is a no-op. Rolls back an open explicit transaction. */
void fa_store_close(fa_store *st);
/* Path as given to open (valid until close); true when opened read-only. */
const char *fa_store_path(const fa_store *st);
bool fa_store_readonly(const fa_store *st);
/* The raw connection, for later modules' own tables (analysis, plans, ...) and tests.
 * Borrowed until fa_store_close. Use fa_store_sql_check on every call made through it. */
struct sqlite3 *fa_store_db(fa_store *st);
/* Checking helper behind every sqlite3 call (STYLE.md): rc SQLITE_OK/ROW/DONE -> FA_OK;
 * otherwise records "PATH: CALL failed at FILE:LINE: sqlite3_errmsg (errstr)" on ctx and
 * returns FA_ERR_INPUT (not a database / corrupt), FA_ERR_NOMEM, or FA_ERR_IO (busy,
 * read-only, I/O, constraint, ...). Use through FA_SQL_CHECK. */
fa_status fa_store_sql_check(fa_ctx *ctx, fa_store *st, int rc, const char *call, const char *file,
                             int line);
#define FA_SQL_CHECK(ctx, st, call) fa_store_sql_check((ctx), (st), (call), #call, __FILE__, __LINE__)

/* Explicit transaction (BEGIN IMMEDIATE, waits up to the busy timeout for other writers).
 * Every write below runs in its own transaction when none is open, and inside the caller's
 * when one is: begin; run_begin? put_graph; put_trace; run_finish; commit makes a whole run
 * atomic. Nested begin is FA_ERR_INTERNAL. rollback with none open is a no-op. */
fa_status fa_store_begin(fa_ctx *ctx, fa_store *st);
fa_status fa_store_commit(fa_ctx *ctx, fa_store *st);
void fa_store_rollback(fa_store *st);

/* ---- runs ---- */

/* One row of `runs`. On write, NULL strings store NULL. On read, strings live in the arena
 * passed to the reader. Units inline. */
typedef struct fa_run_info {
    int64_t id;                   /* assigned by fa_store_run_begin (ignored on write) */
    const char *kind;             /* "run" | "import" | "trace" */
    const char *model_path;       /* model file, "zoo:NAME", or the traced command / trace file */
    const char *model_sha256;     /* hex SHA-256 of the model file, NULL if none */
    const char *target;           /* "cpu" | "cuda"; NULL for imports */
    const char *device_name;      /* e.g. "NVIDIA H200" or the cpu model name */
    int threads;                  /* executor threads, 0 unknown */
    int iters;                    /* timed iterations */
    int warmup;                   /* warm-up iterations (not recorded as timed) */
    const char *command_line;     /* argv joined by spaces */
    const char *tag;              /* user tag (`run --tag`), NULL if none */
    int64_t started_at_ns;        /* unix epoch ns; run_begin uses now when 0 */
    int64_t ended_at_ns;          /* unix epoch ns; 0 while running */
    const char *status;           /* "running" | "ok" | "failed" (read only; set by begin/finish) */
    const char *error;            /* failure message, NULL when ok */
    uint64_t peak_activation_bytes; /* executor's peak live intermediate bytes, 0 unknown */
    const char *source_sha256;    /* imports: hex SHA-256 of the imported trace file */
    const char *dim_defaults;     /* model runs: symbolic input dims bound to their default,
                                     "batch=1,seq=1" (fa_graph.dim_defaults); NULL when none */
    /* recorded by the store */
    int64_t pid;                  /* process that wrote the run */
    const char *host;             /* its host name */
    /* derived by fa_store_put_trace (read only) */
    const char *trace_source;     /* fa_trace.source: "cpu-executor", "cupti", "kineto", "nsys" */
    int64_t n_kernels;            /* activity rows stored for the run (all kinds) */
    int64_t iter_median_ns;       /* median over timed iterations of (last kernel end - first
                                     kernel start); -1 when the trace has no timed iteration */
} fa_run_info;

/* Insert a run with status 'running' (own transaction unless one is open); records this
 * process's pid, host and start time for the dead-process check. *run_id set on success. */
fa_status fa_store_run_begin(fa_ctx *ctx, fa_store *st, const fa_run_info *info, int64_t *run_id);
/* Update the fields known only after execution: device_name, model_sha256, source_sha256
 * and tag when non-NULL; threads, iters, warmup, peak_activation_bytes when non-zero. */
fa_status fa_store_run_update(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_run_info *info);
/* Store the graph of the run: every node (live and folded) with its registry cost
 * (fa_node_cost: FLOPs, bytes read/written of one execution), every tensor, and one
 * consumer row per (tensor, live node, input slot), so producer→consumer edges can be rebuilt
 * from the database alone. One transaction (or the caller's). */
fa_status fa_store_put_graph(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_graph *g);
/* Store every activity of t (seq = index in t->acts) with one prepared statement in one
 * transaction (or the caller's), plus the trace metadata and the run's iter_median_ns. */
fa_status fa_store_put_trace(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_trace *t);
/* Mark the run 'ok' or 'failed' (with `error`, may be NULL) and set ended_at to now. A run is
 * 'ok' only when every stage it started has stored its results: callers finish it once, after
 * the last stage (docs/schema.md "Run status"). Its fused twins (kind 'fused', tag
 * "fused-of:<run_id>") finish with it: 'ok' finishes those still 'running', 'failed' fails all. */
fa_status fa_store_run_finish(fa_ctx *ctx, fa_store *st, int64_t run_id, bool ok, const char *error);
/* A stored run is being worked on again (`apply RUN` rewrites its plan and measurements): status
 * 'running' with this process's pid/host, error and ended_at cleared, until fa_store_run_finish.
 * A process that dies meanwhile leaves it to the dead-process recovery ('failed'). */
fa_status fa_store_run_reopen(fa_ctx *ctx, fa_store *st, int64_t run_id);

/* All runs, newest first. Array and strings allocated in `arena` (caller owns it). */
fa_status fa_store_list_runs(fa_ctx *ctx, fa_store *st, fa_arena *arena, fa_run_info **out,
                             size_t *n_out);
/* One run; FA_ERR_INPUT "PATH: no run N" when absent. Strings in `arena`. */
fa_status fa_store_get_run(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena,
                           fa_run_info *out);
/* Id of the newest run (optionally with this tag, NULL = any); FA_ERR_INPUT when none. */
fa_status fa_store_latest_run(fa_ctx *ctx, fa_store *st, const char *tag, int64_t *run_id);

/* The run's activities back as a trace, in seq order, every field as stored. Caller owns
 * *out (fa_trace_free). */
fa_status fa_store_load_trace(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_trace **out);

/* ---- per-op time table ---- */

/* One op (graph node; or for imports without node ids, the attributed op / kernel name). */
typedef struct fa_op_row {
    int32_t node;          /* graph node id, -1 when the records carry none */
    const char *node_name; /* node name, else the attributed op, else the kernel name */
    const char *op_type;   /* may be NULL */
    int64_t median_ns;     /* median over timed iterations of the summed duration (end-start)
                              of this op's kernel records in that iteration; iterations where it
                              ran no kernel count 0 */
    double share;          /* median_ns / sum of median_ns over all rows (0..1) */
    int64_t kernels;       /* kernel records of this op over all timed iterations */
} fa_op_row;

/* Per-op rows of a run from its FA_ACT_KERNEL records with iter >= 0 (a trace whose records
 * all have iter -1, e.g. an import, is treated as one iteration), sorted by median_ns
 * descending. *n_iters = timed iterations seen. Array and strings in `arena`. */
fa_status fa_store_op_table(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena,
                            fa_op_row **out, size_t *n_out, int *n_iters);

/* ---- device ceilings ---- */

typedef struct fa_ceiling {
    const char *device_key;  /* stable device identity, e.g. "cpu:<model>:<threads>" or
                                "cuda:<name>:sm_90" (roofline/ defines it) */
    const char *kind;        /* "bandwidth" | "compute" | "latency" | "limit" | ... (roofline/) */
    const char *name;        /* e.g. "dram_bw", "fp32_peak", "launch_gap" */
    double value;            /* in `unit` */
    const char *unit;        /* "GB/s", "GFLOP/s", "ns", "bytes", "count", ... */
    const char *source;      /* "measured" | "table" | "theoretical" */
    int64_t measured_at_ns;  /* unix epoch ns when measured/written */
    const char *detail;      /* how it was obtained (array size, kernel, table reference) */
} fa_ceiling;

/* Insert or replace the ceiling (device_key, name). */
fa_status fa_store_put_ceiling(fa_ctx *ctx, fa_store *st, const fa_ceiling *c);
/* All ceilings of device_key (NULL = every device), sorted by device_key, name. */
fa_status fa_store_get_ceilings(fa_ctx *ctx, fa_store *st, const char *device_key, fa_arena *arena,
                                fa_ceiling **out, size_t *n_out);

#endif
