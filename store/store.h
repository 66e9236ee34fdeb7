/* store — the run database behind a typed API (the SQLite back end: schema and forward migrations,
 * graphs and traces, typed reads for the verbs and later pipeline stages (docs/schema.md). */
#ifndef FA_STORE_H
#define FA_STORE_H

#include "collector/collector.h"
#include "core/core.h"
#include "graph/graph.h"
#include "plan/plan.h"

/* Schema version this build writes (PRAGMA user_version). Older files are migrated forward
 * on open; newer files are refused untouched. History in docs/schema.md. */
#define FA_STORE_SCHEMA_VERSION 13

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
/* `path` of fa_store_open for a PostgreSQL server: a libpq connection URI
 * ("postgresql://[user@]host[:port]/dbname[?param=value...]", PostgreSQL docs 34.1.1). The
 * password comes from libpq's standard means (PGPASSWORD, ~/.pgpass or PGPASSFILE, a service
 * file); one written in the URI works but is removed from every message and from
 * fa_store_path. Without libpq in the build such a path is FA_ERR_UNSUPPORTED. */
/* True when `path` names a server: a postgresql:// or postgres:// URI, the scheme in any case, or
 * a libpq keyword/value string ("host=db1 dbname=perf", PostgreSQL docs 34.1.1.1: a path that
 * opens with `word =`). Such a string is read by libpq (PQconninfoParse) and opens a server, or is
 * refused: it is never taken as a file name (write ./NAME for a file whose name starts so). */
bool fa_store_path_is_pg(const char *path);
/* `uri` as every message and stored text shows it: a server string rendered from what libpq read
 * with each secret (password, sslpassword, in the userinfo, a query parameter however its key
 * is percent-encoded, or a keyword) as "***"; a string libpq cannot read keeps only its scheme,
 * a plain user name and its host part (*had_password set when there was a secret; may be NULL).
 * Any other string is copied as is. malloc'd (caller frees); NULL when out of memory. */
char *fa_store_redact_uri(const char *uri, bool *had_password);
/* One command-line argument as fa_store_redact_uri renders it, also in the form "--opt=VALUE";
 * any other argument copied. malloc'd; NULL when out of memory. */
char *fa_store_redact_arg(const char *arg, bool *had_password);
/* Back end of an open store: "sqlite" | "postgresql". */
const char *fa_store_backend_name(const fa_store *st);

/* Close; NULL is a no-op. Rolls back an open explicit transaction. */
void fa_store_close(fa_store *st);
/* Path as given to open (valid until close); true when opened read-only. */
const char *fa_store_path(const fa_store *st);
bool fa_store_readonly(const fa_store *st);

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
    /* derived from the run's newest plan (read only; fa_store_set_plan_e2e) */
    fa_e2e_verdict e2e_verdict;   /* that plan's verdict; FA_E2E_NOT_APPLIED when none */
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

/* One kernel record (FA_ACT_KERNEL) of a run reduced to its iteration and extent: what the
 * analyzer's idle-gap measure reads, 24 bytes a kernel where a loaded trace holds a whole
 * fa_activity (a 100,000-node model's run of 11 iterations: 26 MB, not 220 MB and more). */
typedef struct fa_kernel_span {
    int32_t iter;       /* timed iteration (0-based); -1 warm-up or unknown (imports) */
    uint64_t start_ns;  /* the trace's clock, as stored */
    uint64_t end_ns;
} fa_kernel_span;
/* The run's kernel records as spans, in seq order: *out malloc'd (caller frees; NULL when
 * there are none), *n_out entries. FA_ERR_NOMEM, or the database's error naming the file. */
fa_status fa_store_kernel_spans(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_kernel_span **out, size_t *n_out);

/* ---- moving history between stores ---- */

typedef struct fa_store_copy_result {
    size_t copied;               /* runs written to the destination */
    size_t skipped_present;      /* the destination already held them (same kind, host, pid, start time) */
    size_t skipped_running;      /* still 'running' in the source: never copied half-written */
    size_t skipped_orphan_twins; /* fused twins whose baseline run was not copied nor present */
} fa_store_copy_result;

/* Copy runs ids[0..n_ids) of src (n_ids 0: every run) into dst, for `export-runs` /
 * `import-runs` between an SQLite file and a PostgreSQL server (either way). Each run is one
 * transaction on dst: its runs row under a new id (a fused twin's "fused-of:<id>" tag renamed to
 * its baseline's new id; selecting a run brings its twins) and every row keyed by its run id in
 * every table, columns as the schema has them. Runs dst already holds are not copied again, so
 * repeating an import copies nothing new. Device ceilings are merged (a row measured later in
 * dst is kept). A failure leaves the runs copied before it in dst and nothing of the failing run.
 * Errors: FA_ERR_INPUT (no such run), FA_ERR_USAGE (src and dst are the same store), database
 * errors as fa_store_sql_check. *res counts what happened (set also on failure). */
fa_status fa_store_copy_runs(fa_ctx *ctx, fa_store *src, fa_store *dst, const int64_t *ids, size_t n_ids,
                             fa_store_copy_result *res);

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
    /* per timed iteration, in iteration order ([*n_iters] of fa_store_op_table, in its arena): */
    const int64_t *iter_ns; /* the summed duration whose median is median_ns, ns */
    const int64_t *idle_ns; /* the idle time before this op's kernels: for each kernel, its start
                               less the latest end of the iteration's kernels that started before
                               it, when positive (the analyzer's dispatch gap, analyzer/analyzer.c:
                               an iteration's idle times over every op sum to its gap), ns */
} fa_op_row;

/* Per-op rows of a run from its FA_ACT_KERNEL records with iter >= 0 (a trace whose records
 * all have iter -1, e.g. an import, is treated as one iteration), sorted by median_ns
 * descending. *n_iters = timed iterations seen. Array and strings in `arena`. */
fa_status fa_store_op_table(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena,
                            fa_op_row **out, size_t *n_out, int *n_iters);
/* The same rows from a trace held in memory (its FA_ACT_KERNEL records, by the same rules): a
 * run's records not stored, e.g. the baseline's side of the end-to-end rounds (applier/inmodel.c). */
fa_status fa_op_table_of_trace(fa_ctx *ctx, const fa_trace *t, fa_arena *arena, fa_op_row **out, size_t *n_out,
                               int *n_iters);

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
/* Delete device_key's ceilings whose name starts with name_prefix ("cache_": the cache levels
 * a measurement replaces as a set, so a later sweep that finds fewer levels leaves no stale
 * cache_N row behind). Joins the caller's transaction (fa_store_begin), else its own. */
fa_status fa_store_delete_ceilings(fa_ctx *ctx, fa_store *st, const char *device_key, const char *name_prefix);
/* All ceilings of device_key (NULL = every device), sorted by device_key, name. */
fa_status fa_store_get_ceilings(fa_ctx *ctx, fa_store *st, const char *device_key, fa_arena *arena,
                                fa_ceiling **out, size_t *n_out);

/* ---- graph rows (as fa_store_put_graph stored them) ---- */

typedef struct fa_node_row {
    int32_t id;             /* graph node id */
    const char *name;
    const char *op_type;
    int pattern;            /* fa_pattern class, -1 unknown */
    bool folded;            /* folded at load (constant subgraph), not executed */
    uint64_t flops;         /* one execution, registry formula (fa_node_cost) */
    uint64_t bytes;         /* bytes read + bytes written, one execution */
} fa_node_row;

typedef struct fa_tensor_row {
    int32_t id;             /* graph tensor id */
    const char *name;
    uint64_t bytes;         /* numel x element size; 0 unknown */
    int32_t producer;       /* node id, -1 for inputs and initializers */
    uint32_t flags;         /* fa_tensor.flags as stored */
    bool graph_output;
} fa_tensor_row;

typedef struct fa_consumer_row {
    int32_t tensor;         /* tensor id */
    int32_t node;           /* consuming node id */
} fa_consumer_row;

/* Nodes of the run ordered by id (live_only: folded nodes left out); *n_out may be 0 (an import
 * without op structure). Tensors ordered by id. Consumers: distinct (tensor, node) pairs ordered
 * by tensor then node. Arrays and strings in `arena`. */
fa_status fa_store_get_nodes(fa_ctx *ctx, fa_store *st, int64_t run_id, bool live_only, fa_arena *arena,
                             fa_node_row **out, size_t *n_out);
fa_status fa_store_get_tensors(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena, fa_tensor_row **out,
                               size_t *n_out);
fa_status fa_store_get_consumers(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena,
                                 fa_consumer_row **out, size_t *n_out);
/* Number of nodes (live and folded) stored for the run. */
fa_status fa_store_count_nodes(fa_ctx *ctx, fa_store *st, int64_t run_id, int64_t *n);

/* ---- analysis (analyzer/ fills these; docs/schema.md "analysis_*") ---- */

typedef struct fa_analysis_kernel_row { /* one per live node */
    int32_t node;                 /* node id (stored as analysis_kernels.seq) */
    double arithmetic_intensity;  /* FLOP/byte */
    double achieved_gbs;          /* GB/s */
    double achieved_gflops;       /* GFLOP/s */
    double roof_pct;              /* % of the roofline at this intensity */
    const char *bound;            /* "memory" | "compute" | "latency" | ... (fa_bound_name) */
} fa_analysis_kernel_row;

typedef struct fa_analysis_chain_row {
    int n_members;
    const int *members;           /* node ids, producer first */
    const char *const *member_names; /* instead of ids (imported traces: kernel or op names); NULL for ids */
    int64_t time_ns;              /* summed member medians */
    double share;                 /* of the iteration (0..1) */
    uint64_t intermediate_bytes;  /* traffic fusing would remove */
    int launches;
    int64_t max_saving_ns;
} fa_analysis_chain_row;

typedef struct fa_analysis_edge_row {
    int32_t tensor, producer, consumer; /* ids */
    uint64_t bytes_written, bytes_read;
    int other_consumers;          /* consumers of the tensor besides this one */
    bool graph_output;
} fa_analysis_edge_row;

typedef struct fa_analysis_summary_row {
    const char *key;              /* e.g. "iter_ns" */
    double value;                 /* in `unit`; NAN is stored as NULL (not measured) */
    const char *unit;             /* "ns", "fraction", "bytes", "GB/s", ... */
    const char *text;             /* readable summary, NULL for most keys */
} fa_analysis_summary_row;

typedef struct fa_analysis_rows {
    const fa_analysis_kernel_row *kernels; size_t n_kernels;
    const fa_analysis_chain_row *chains; size_t n_chains; /* chain_id = index */
    const fa_analysis_edge_row *edges; size_t n_edges;
    const fa_analysis_summary_row *summary; size_t n_summary;
} fa_analysis_rows;

/* Replace the run's analysis with `rows` in one transaction (or the caller's). */
fa_status fa_store_put_analysis(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_analysis_rows *rows);
/* An imported trace's advice: replaces the run's summary keys starting "trace." and its chains
 * with rows.summary (keys must start "trace.") and rows.chains; kernels and edges unused. One
 * transaction (or the caller's). */
fa_status fa_store_put_trace_advice(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_analysis_rows *rows);
/* Text of the run's analysis summary row `key` in arena; *text = NULL when there is none. */
fa_status fa_store_get_summary_text(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *key, fa_arena *arena,
                                    const char **text);
/* A text stored in parts because one value holds at most 16 MiB: the row `key`, then the rows
 * `key.1`, `key.2`, ... (FA_STORE_TEXT_PARTS_MAX at most), joined in that order in arena; *text
 * NULL when there is no row `key`. A database whose parts are missing between, or more than the
 * limit, is refused naming the key (FA_ERR_INPUT). */
#define FA_STORE_TEXT_PARTS_MAX 32
fa_status fa_store_get_summary_text_parts(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *key, fa_arena *arena,
                                          const char **text);

/* ---- benchmarks and the applied plan's end-to-end result ---- */

/* Benchmark subjects (stored as text in benchmarks.subject). */
typedef enum fa_bench_subject {
    FA_BENCH_BASELINE,        /* the unfused model, end to end */
    FA_BENCH_FUSED,           /* the fused model, end to end */
    FA_BENCH_CLUSTER_UNFUSED, /* one cluster's member kernels */
    FA_BENCH_CLUSTER_FUSED,   /* one cluster's fused kernel */
    FA_BENCH_SUBJECT_COUNT
} fa_bench_subject;
const char *fa_bench_subject_name(fa_bench_subject s); /* "baseline", "fused", "cluster-unfused", "cluster-fused" */

/* Insert or replace n latency samples (ns; iter = index) of one subject of plan (run_id,
 * plan_id); cluster_id -1 for end-to-end subjects. One transaction (or the caller's). */
fa_status fa_store_put_bench_samples(fa_ctx *ctx, fa_store *st, int64_t run_id, int plan_id, fa_bench_subject subject,
                                     int cluster_id, const double *samples_ns, int n);
/* What the applier measured of the plan end to end. */
typedef struct fa_plan_e2e_row {
    double max_rel_error;     /* model outputs fused vs unfused, max |a-b| / max(|b|, 1e-12)
                                 (dimensionless); NAN: not measured (stores NULL) */
    fa_e2e_verdict verdict;   /* FA_E2E_NOT_APPLIED stores NULL */
} fa_plan_e2e_row;
/* Store the end-to-end row of plan (run_id, plan_id); the plan row must exist (else
 * FA_ERR_INTERNAL naming run and plan). One transaction (or the caller's). */
fa_status fa_store_set_plan_e2e(fa_ctx *ctx, fa_store *st, int64_t run_id, int plan_id, const fa_plan_e2e_row *e2e);
/* The run's newest plan's end-to-end row; {NAN, FA_E2E_NOT_APPLIED} when none was stored. */
fa_status fa_store_get_plan_e2e(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_plan_e2e_row *out);

/* ---- plans (docs/schema.md "plans", "clusters", "cluster_post_ops", "why_not") ---- */

/* Store plan p as a new plan of run p->run_id (plan_id = the run's largest + 1): the plan row
 * (hash, options), every cluster's FA_CLUSTER_FIELDS columns (plan/plan.h) with its post-ops, and
 * the why-nots, in one transaction (or the caller's). The verdict columns come from v[i] (NULL:
 * the advisor's decisions, fa_cluster_verdict_of). *plan_id set on success; p is not written.
 * Errors: FA_ERR_INPUT when p->run_id < 0; the store's. */
fa_status fa_store_put_plan(fa_ctx *ctx, fa_store *st, const fa_plan *p, const fa_cluster_verdict *v, int *plan_id);
/* Rewrite the verdict columns (the fields of owner V in FA_CLUSTER_FIELDS: status, reason,
 * measured saving, max error, registers, spills) of stored plan (p->run_id, p->plan_id) from
 * v[0..p->n_clusters), matched by cluster id. One transaction (or the caller's). */
fa_status fa_store_put_cluster_verdicts(fa_ctx *ctx, fa_store *st, const fa_plan *p, const fa_cluster_verdict *v);

/* ---- reads for the reports ---- */

/* The run's newest plan as the advisor made it and the applier judged it: *plan (owned by the
 * caller, fa_plan_free; NULL when the run has no plan) with run_id, plan_id, hash, options,
 * clusters ordered by predicted saving, largest first, then id, and why-nots in the advisor's
 * order; *verdicts [n_clusters] in the plan's arena (the verdict columns; may be NULL when not
 * wanted). Absent values read back as FA_CLUSTER_FIELDS says (NULL columns -> -1 / NAN / NULL);
 * registers/spill_bytes are the generated kernel's (fused_kernels) when recorded there; names a
 * newer build wrote and this one does not know read as the enums' _COUNT ("?"). */
fa_status fa_store_get_latest_plan(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_plan **plan, fa_cluster_verdict **verdicts);

/* The newest fused twin of run_id (kind 'fused', tag "fused-of:<run_id>", not failed); *fused_id
 * = -1 when there is none. ok_only: finished 'ok' only (else any not 'failed'). */
fa_status fa_store_get_fused_run(fa_ctx *ctx, fa_store *st, int64_t run_id, bool ok_only, int64_t *fused_id);
/* Whether the run has a stored analysis (roofline rows or summary rows), and its summary
 * sentences joined by newlines in key order (NULL when none). Strings in arena. */
fa_status fa_store_get_analysis_text(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena, bool *have,
                                     const char **text);
/* Benchmark samples of one subject (and cluster) of a plan. */
typedef struct fa_bench_series {
    fa_bench_subject subject;
    int cluster_id;           /* -1 for end-to-end subjects */
    int n;
    double *samples_ns;       /* iter order */
} fa_bench_series;
/* Every series of plan plan_id of the run (plan_id 0: samples of any plan, newest plan first
 * within a series). Unknown subjects are skipped. Arrays in arena. */
fa_status fa_store_get_bench_series(fa_ctx *ctx, fa_store *st, int64_t run_id, int plan_id, fa_arena *arena,
                                    fa_bench_series **out, size_t *n_out);

/* ---- the figures a run is shown with (store/figures.c) ---- */

/* The one set of figures of a run (issue 37): `run`'s stdout, report.html, summary.json and
 * `runs` print these and nothing computed another way, each saying which measurement it is. */
typedef struct fa_run_figures {
    int64_t run_id;           /* the run the figures are of (a fused twin's baseline run) */
    int64_t twin_of;          /* asked of a fused twin (kind 'fused', tag "fused-of:N"): N; else -1 */
    int64_t fused_run_id;     /* its fused twin (fa_store_get_fused_run, any not failed); -1 none */
    int plan_id;              /* its newest plan; 0 none */
    /* iteration time, ns: the applier's end-to-end benchmark of the newest plan, interleaved
     * rounds of the whole unfused and fused model ('baseline' / 'fused' samples; n = 0: not
     * measured), and the traced runs' median iteration (runs.iter_median_ns: last kernel end -
     * first kernel start, under the collector) of the run and of its fused twin (NAN: none) */
    fa_sample_stats bench_baseline, bench_fused;
    double traced_iter_ns, fused_traced_iter_ns;
    int traced_iters, fused_traced_iters; /* timed iterations the traced medians are of */
    /* kernels per iteration: the most frequent count of kernel records in a timed iteration
     * (fa_store_get_kernels_per_iter) of the run's trace and of its fused twin's; -1 not measured.
     * reorders_fused: of the fused count, layout reorders (op 'Reorder') per iteration;
     * winograd_fused: of the fused count, convolutions run with Winograd (a kernel name ending
     * ", winograd)": docs/runtime.md "Convolution tactics") per iteration */
    int kernels_baseline, kernels_fused, reorders_fused, winograd_fused;
    /* peak live activation bytes of the run and of its fused twin (runs.peak_activation_bytes); 0 unknown */
    uint64_t peak_bytes_baseline, peak_bytes_fused;
    /* the newest plan: its clusters by decision; the predicted saving of the accepted ones
     * (fa_plan_accepted_saving), ns, NAN without a plan; the measured end-to-end saving,
     * bench_baseline.median - bench_fused.median, ns, NAN unless both were measured */
    int n_accepted, n_rejected, n_refused, n_other;
    double predicted_saving_ns, measured_saving_ns;
    fa_e2e_verdict verdict;   /* plans.e2e_verdict */
    double e2e_max_rel_error; /* plans.e2e_max_rel_error; NAN none */
} fa_run_figures;
/* The figures of run_id (of its baseline run when run_id is a fused twin). Errors: FA_ERR_INPUT
 * "PATH: no run N"; the store's. *out untouched on failure. */
fa_status fa_store_get_run_figures(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_run_figures *out);
/* The fused run's kernels per iteration as every surface words it (run's answer, report.html):
 * "90", "90 (5 layout reorders)", "90 (5 layout reorders, 12 Winograd convolutions)"; "not
 * measured" when kernels_fused < 0. Writes at most cap bytes, NUL-terminated. */
void fa_run_figures_fused_kernels_text(const fa_run_figures *f, char *out, size_t cap);
/* The iteration time a run is shown with, ns: the benchmark median when the applier measured it,
 * else the traced iteration median; NAN when neither. fused: the fused model's. *what (may be
 * NULL) names which: "benchmark median", "traced iteration median", or NULL. */
double fa_run_figures_latency(const fa_run_figures *f, bool fused, const char **what);
/* Whether the run's timings are too noisy to rest a verdict on: an end-to-end benchmark side whose
 * IQR exceeds 25 % of its median, or the baseline's benchmark median more than 25 % away from its
 * traced iteration median (the same model timed twice in one run). Every surface words its verdict
 * with it (`run`'s answer and warning, report.html's verdict, summary.json `timings_noisy`). False
 * when not benchmarked. */
bool fa_run_figures_noisy(const fa_run_figures *f);

/* ---- per-iteration reads for the CI gate ---- */

/* Durations (end - start, ns) of the run's timed range records named `name` (FA_ACT_RANGE, iter
 * >= 0), in iteration order. Array in arena. */
fa_status fa_store_get_range_durations(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *name, fa_arena *arena,
                                       double **out, int *n_out);
/* Kernel records (FA_ACT_KERNEL) per timed iteration: smallest, largest and most frequent count
 * (ties: the smaller); *mode = -1 when the run has no timed kernel record. */
fa_status fa_store_get_kernels_per_iter(fa_ctx *ctx, fa_store *st, int64_t run_id, int *min, int *max, int *mode);
/* Distinct timed iterations (iter >= 0) of kernel and range records, ascending. Array in arena. */
fa_status fa_store_get_timed_iters(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena, int **out, int *n_out);

/* Kernel time of one op in one timed iteration. */
typedef struct fa_op_iter_row {
    const char *op;           /* node name, else the kernel name, else "?" */
    int iter;
    double kernel_ns;         /* summed end - start of the op's kernel records in that iteration */
} fa_op_iter_row;
/* Rows ordered by op then iter. Array and strings in arena. */
fa_status fa_store_get_op_iter_times(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena,
                                     fa_op_iter_row **out, size_t *n_out);

/* ---- measured fused kernels of earlier plans (store/kernel_lookup.c; issue 19) ---- */

typedef struct fa_measured_fused {
    int64_t run_id;           /* the run whose plan it belongs to */
    int plan_id, cluster_id;
    const char *signature;    /* clusters.signature: fa_cluster_signature's text, stored with the plan */
    double median_ns;         /* type-7 median of its 'cluster-fused' benchmark samples: ns per run of
                                 the fused sub-graph, measured in isolation by the applier */
    double unfused_median_ns; /* the same of its 'cluster-unfused' samples (the members' sub-graph,
                                 interleaved with the fused one round by round) */
    double paired_ratio;      /* the median of the rounds' fused / unfused ratios
                                 (fa_stats_paired_ratio); NAN: none */
    int n_samples;            /* rounds with both samples */
    bool resolved;            /* the paired unfused - fused differences' sign-test interval
                                 excludes 0 (fa_paired_saving_of): the measurement resolves a
                                 saving or a loss; false: within its own noise */
    fa_paired_saving paired;  /* those paired differences (ns): median, IQR, sign-test interval
                                 (NAN under 5 rounds) */
    fa_cluster_kind kind;     /* clusters.kind; FA_CLUSTER_KIND_COUNT for a word this build lacks */
    double est_saving_ns;     /* clusters.est_saving_us: what its plan predicted (ns); NAN none */
} fa_measured_fused;

/* Every cluster whose fused and unfused sub-graphs the applier benchmarked (benchmarks subjects
 * 'cluster-fused' and 'cluster-unfused', paired by iter) in a plan for the same target as run_id's, of a run on the same device as
 * run_id (runs.device_name and runs.threads equal; run_id's own earlier plans included) that
 * finished 'ok' (a failed or killed run's measurements are not evidence), with
 * its signature, kind, predicted saving and medians. Sorted by signature, then newest run first. Array and strings in
 * arena; *n_out 0 when none. Errors: the store's; FA_ERR_INPUT when run_id does not exist. */
fa_status fa_store_measured_fused(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena, fa_measured_fused **out,
                                  size_t *n_out);
/* The newest entry of v[0..n) (sorted as fa_store_measured_fused returns) with `signature` (and
 * resolved, when resolved_only), NULL when none. */
const fa_measured_fused *fa_measured_fused_find(const fa_measured_fused *v, size_t n, const char *signature,
                                                bool resolved_only);

#endif
