/* store-impl — private details of the run database shared by the store sources. */
#ifndef FA_STORE_IMPL_H
#define FA_STORE_IMPL_H

#include <sqlite3.h>

#include "store.h"

/* application_id of a fuse-advise run database: the bytes 'F','A','d','v'. */
#define FA_STORE_APPLICATION_ID 0x46416476

/* fa_store_migrations[v]: SQL taking schema version v to v+1 (store/schema.c), written in the
 * SQLite dialect; the PostgreSQL back end translates its types (store/pg.c, pg_schema_sql). */
extern const char *const fa_store_migrations[FA_STORE_SCHEMA_VERSION];

/* ---- databases from elsewhere are untrusted input (docs/hardening.md, issue 32) ---- */

/* Bytes of one text value read from or written to a run database: a longer one is refused with
 * a message naming its table, row and column (a legitimate value is far shorter: the longest are
 * the member lists of a cluster or chain, ~7 bytes per node of a graph). */
#define FA_STORE_VALUE_MAX ((size_t)16 << 20)
/* the longest latency a benchmarks row may hold: one run of one model or sub-graph, an hour */
#define FA_STORE_LATENCY_MAX_NS (3600LL * 1000000000LL)
/* the largest iteration number a kernels row may hold (-1: not in a timed iteration): a run
 * traces at most a few hundred iterations (the baseline's span, the end-to-end rounds), and every
 * reader sizes per-iteration arrays by it */
#define FA_STORE_ITER_MAX ((1 << 20) - 1)
/* FA_ERR_INPUT naming the table, run, row (seq) and columns when a kernels row of run_id is not a
 * span: an end before its start, or a span whose length overflows int64 (a
 * doctored database made `show` print -4611686018428 ms), or whose iter is outside
 * [-1, FA_STORE_ITER_MAX]. Called before every read that
 * subtracts start_ns from end_ns. */
fa_status fa_store_check_kernel_times(fa_ctx *ctx, fa_store *st, int64_t run_id);
/* The domain of a numeric column (store/domain.c): what the readers may take its values for. */
#define FA_DOM_NONE 0         /* not checked: ids, node indices (-1 none), flags of bits, timestamps */
#define FA_DOM_QUANTITY 'q'   /* a count, size, time or rate: finite, >= 0 (an integer <= 2^53) */
#define FA_DOM_FINITE 'f'     /* a signed figure (a saving, a gain): finite (an integer within 2^53) */
#define FA_DOM_ERROR 'e'      /* a relative error: >= 0 or +inf (0/0 references: fa_max_rel_error) */
#define FA_DOM_OCCUPANCY 'o'  /* 0..1, negative for "not computed" */
#define FA_DOM_FRACTION 'r'   /* 0..1 */
#define FA_DOM_FLAG 'b'       /* 0 or 1 */
#define FA_DOM_AXIS 'a'       /* an axis of a tensor: 0 .. FA_MAX_RANK - 1, or -1 for none (plans before version 5) */
#define FA_DOM_RANK 'n'       /* a rank: 0 .. FA_MAX_RANK */
#define FA_DOM_ACT_KIND 'k'   /* fa_activity_kind: 0 .. FA_ACT_KIND_COUNT - 1 */
#define FA_DOM_DTYPE 'd'      /* fa_dtype: 0 .. FA_DTYPE_COUNT - 1 */
#define FA_DOM_PATTERN 'p'    /* fa_pattern: 0 .. FA_PATTERN_COUNT - 1 */
#define FA_DOM_SIGN 's'       /* a verdict: -1, 0 or 1 */
#define FA_DOM_ID32 'I'       /* an id the readers keep in an int: 0 .. 2^31 - 1 */
/* Largest integer quantity a row may hold: 2^53, the largest a double carries exactly (readers sum
 * and divide them as doubles); a legitimate byte, FLOP or ns count is far below it. */
#define FA_STORE_QUANTITY_MAX (1LL << 53)
/* FA_DOM_* of column `column` of our table `table` (NULLs: FA_DOM_NONE); a static table. */
char fa_store_column_domain(const char *table, const char *column);
/* NULL when a value read from a column of domain `dom` lies in it (is_int: the value is the
 * integer i, else the double d); else writes "VALUE where the column holds WHAT" into buf (cap
 * bytes) and returns buf, for the back end's "table T, row R, column C: ..." refusal. */
const char *fa_store_domain_fault(char dom, bool is_int, int64_t i, double d, char *buf, size_t cap);
/* SQLITE_LIMIT_LENGTH of a run database connection: SQLite refuses to load a value (or build a
 * string) longer than this at all, so a 1 GB value never reaches memory; between the two limits
 * the message names the column, beyond this one the table and row. */
#define FA_STORE_VALUE_HARD_MAX ((size_t)64 << 20)
/* Default wall-clock limit, in seconds, of one step of one statement on a run database file (the
 * SQLite progress handler interrupts it): no step of a legitimate database comes near it, an
 * endless one (a crafted schema's recursive query) ends. FA_DB_STEP_LIMIT_S overrides it. */
#define FA_STORE_STEP_LIMIT_S 120
/* Node ids a stored record may carry: readers that index by node id (the per-op table) refuse a
 * larger one instead of sizing an array by it. 2^24 nodes is far beyond any real graph (the
 * bench's 100,000-node chain is the largest we run). */
#define FA_STORE_NODE_ID_MAX (1 << 24)
/* A run row's threads, iters and warmup as read (read_run_row): the CLI's own ranges
 * (cli/cli.h: --threads [0, 1024], --iters and --warmup up to 1000000; a trace's timed
 * iterations under --trace-span stay within them). Beyond them a row is refused as bad input. */
#define FA_STORE_RUN_THREADS_MAX 1024
#define FA_STORE_RUN_ITERS_MAX 1000000
/* A run's plan of record, the one every surface reads (report, runs, show, gate, the figures):
 * the newest plan applied end to end (its e2e_verdict set), else the newest plan. An `advise
 * RUN` after `run` adds a proposed plan; the run's report, its verdict in `runs` and the gate's
 * per-cluster checks stay those of the plan that was applied and measured. The clause ends a
 * SELECT over plans of one run; _P is the same for the alias p. */
#define FA_STORE_PLAN_OF_RECORD "ORDER BY (e2e_verdict IS NOT NULL) DESC, plan_id DESC LIMIT 1"
#define FA_STORE_PLAN_OF_RECORD_P "ORDER BY (p.e2e_verdict IS NOT NULL) DESC, p.plan_id DESC LIMIT 1"
/* The limit in effect, ns: FA_DB_STEP_LIMIT_S when it is a number in (0, 1e6), else the default.
 * SQLite interrupts one step past it (its progress handler); a PostgreSQL session sets it as its
 * statement_timeout, so a server-side endless query (a crafted view, rule or function default the
 * schema check has not seen) ends too. */
int64_t fa_store_step_limit_ns(void);

/* s (n bytes, untrusted) quoted for a message: printable ASCII kept, any other byte \xNN, at most
 * 64 bytes shown. */
void fa_store_quote_name(fa_buf *b, const char *s, size_t n);
/* An in-memory database holding schema version `version` as the migrations build it (caller
 * closes it with sqlite3_close). */
fa_status fa_store_schema_reference(fa_ctx *ctx, int64_t version, sqlite3 **out);
/* The schema of db (the file at path, claiming `version`) against the reference: the same tables,
 * indexes (nothing else: no view, no trigger), each table with the same columns (name, declared
 * type, NOT NULL, default, primary key, no generated or hidden column), foreign keys and flags,
 * each index on the same columns. FA_ERR_INPUT naming the first difference (the object, the
 * column) otherwise. Reads only the schema (PRAGMA table lists), never a table's rows. */
fa_status fa_store_schema_check_sqlite(fa_ctx *ctx, const char *path, sqlite3 *db, int64_t version);
/* Column names of `table` in the reference database ref, in their order (malloc'd array of
 * malloc'd names); FA_ERR_INTERNAL when a name is not a plain identifier [a-z0-9_]. */
fa_status fa_store_schema_columns(fa_ctx *ctx, sqlite3 *ref, const char *table, char ***names, int *n);

/* ---- back ends (a function table, as SQLite's VFS and ggml's backends) ----
 * Result codes of every slot: FA_DB_OK, FA_DB_ROW (a row is ready), FA_DB_DONE, or a back-end
 * error code (the SQLite back end returns SQLite's codes, which share these three values; the
 * PostgreSQL one returns FA_DB_ERROR with the server's message kept on the store). */
enum { FA_DB_OK = 0, FA_DB_ERROR = 1, FA_DB_ROW = 100, FA_DB_DONE = 101 };
enum { FA_RUN_LOCK_HOLD, FA_RUN_LOCK_DROP, FA_RUN_LOCK_PROBE };
/* Kind of a column value (col_kind), for copying rows between back ends with their types. */
typedef enum fa_db_kind { FA_DB_NULL, FA_DB_INTEGER, FA_DB_FLOAT, FA_DB_TEXT } fa_db_kind;

typedef struct fa_stmt fa_stmt;
typedef struct fa_store_backend {
    const char *name;                                         /* "sqlite" | "postgresql" */
    int (*exec)(fa_store *st, const char *sql);               /* one or more statements, no rows */
    /* sql uses SQLite's parameters (?, ?N); *out NULL on failure */
    int (*prepare)(fa_store *st, const char *sql, fa_stmt **out);
    /* bulk insert of rows into table(cols) (n columns, bound 1..n per row; one step per row):
     * COPY FROM STDIN on PostgreSQL, a prepared INSERT on SQLite. Nothing else may run on the
     * store between the first step and bulk_end. */
    int (*prepare_bulk)(fa_store *st, const char *table, const char *cols, int n, fa_stmt **out);
    int (*bulk_end)(fa_stmt *q);                              /* sends the rest; reports the failure */
    int (*reset)(fa_stmt *q);                                 /* ready to run again, binds kept */
    int (*bind_i64)(fa_stmt *q, int i, int64_t v);            /* i 1-based */
    int (*bind_dbl)(fa_stmt *q, int i, double v);             /* NaN binds NULL */
    int (*bind_txt)(fa_stmt *q, int i, const char *v);        /* NULL binds NULL; v valid until the next step */
    int (*step)(fa_stmt *q);
    int64_t (*col_i64)(fa_stmt *q, int col);                  /* 0-based; NULL reads 0 */
    double (*col_dbl)(fa_stmt *q, int col);
    const char *(*col_text)(fa_stmt *q, int col);             /* NULL for SQL NULL; valid until next step */
    size_t (*col_bytes)(fa_stmt *q, int col);
    bool (*col_null)(fa_stmt *q, int col);
    fa_db_kind (*col_kind)(fa_stmt *q, int col);
    void (*finalize)(fa_stmt *q);                             /* NULL is a no-op */
    const char *(*sql)(fa_stmt *q);                           /* statement text for messages */
    int64_t (*changes)(fa_store *st);                         /* rows changed by the last statement */
    bool (*in_tx)(fa_store *st);                              /* a transaction is open */
    const char *begin_sql;                                    /* write transaction: takes the write lock */
    /* (optional) writer liveness of a server: FA_RUN_LOCK_HOLD marks run_id as kept 'running' by
     * this connection (held until FA_RUN_LOCK_DROP or the connection ends, also re-taken after
     * a reconnect); FA_RUN_LOCK_PROBE sets *writer_gone when no live connection holds it
     * (taking and dropping it). NULL: the store judges liveness by pid and host. */
    int (*run_lock)(fa_store *st, int64_t run_id, int op, bool *writer_gone);
    /* message and fa_status of a failed call (see fa_store_sql_check) */
    fa_status (*error)(fa_ctx *ctx, fa_store *st, int rc, const char *call, const char *file, int line);
    void (*close)(fa_store *st);
} fa_store_backend;

/* Every statement handle starts with this header; each back end extends it. */
struct fa_stmt {
    const fa_store_backend *be;
    fa_store *st;
};

struct fa_store {
    const fa_store_backend *be;
    sqlite3 *db;     /* SQLite back end */
    struct fa_pg *pg;/* PostgreSQL back end (store/pg.c) */
    char *path;      /* as given to open; a PostgreSQL URI with its password removed */
    bool readonly;   /* opened read-only */
    bool explicit_tx;/* inside fa_store_begin .. commit/rollback */
    char *fault;     /* a value the back end refused (type, NULL, length; "PATH: table T, row R,
                        column C: ..."), reported by the next fa_store_sql_check (malloc'd) */
    int64_t step_deadline_ns; /* SQLite: the running step is interrupted after this (CLOCK_MONOTONIC) */
    int64_t step_limit_ns;    /* wall-clock budget of one step (SQLite) or statement (PostgreSQL), fa_store_step_limit_ns */
    bool interrupted;         /* SQLite: the progress handler stopped the last step */
    bool sq_opened;              /* SQLite: sqlite3_open was called (only then can it have made files) */
    bool wal_before, shm_before; /* SQLite: PATH-wal / PATH-shm existed before that open (one SQLite
                                    made is ours to remove when the file is refused) */
};

extern const fa_store_backend fa_store_sqlite_backend;
/* Open the SQLite file / the PostgreSQL server behind `path` into st (st->path set by the
 * caller); migrate a writable store forward. fa_store_pg_open without libpq: FA_ERR_UNSUPPORTED. */
fa_status fa_store_sqlite_open(fa_ctx *ctx, fa_store *st, const char *path, unsigned flags);
fa_status fa_store_pg_open(fa_ctx *ctx, fa_store *st, const char *conninfo, unsigned flags);
/* True when path names a PostgreSQL server: a postgresql:// or postgres:// URI (any case), or a
 * libpq keyword/value string (store/conninfo.c). */
bool fa_store_path_is_pg(const char *path);

/* A PostgreSQL connection string as libpq reads it (store/conninfo.c, store/pg.c). */
typedef struct fa_conninfo {
    char *connect;    /* what libpq is given: the string with its URI scheme lowercased; NULL when
                         refused or libpq is unavailable */
    char *display;    /* every part libpq read, secrets (libpq's password fields: password,
                         sslpassword) as "***"; for messages, fa_store_path and stored command
                         lines. A string libpq cannot read: scheme, plain user name and host part
                         only. Never NULL after fa_conninfo_read succeeded */
    char *secret[4];  /* the secrets as libpq decoded them: scrubbed from libpq's own messages */
    int n_secret;
    bool had_password;/* the string carries a secret */
    char why[400];    /* why it is refused ("" when it is not); our words, never text of the string */
} fa_conninfo;
/* Read s (a string fa_store_path_is_pg accepts) into *ci; false only when out of memory (*ci
 * then holds nothing). Free with fa_conninfo_free. */
bool fa_conninfo_read(const char *s, fa_conninfo *ci);
void fa_conninfo_free(fa_conninfo *ci);
/* msg with every secret of ci replaced by "***"; malloc'd, NULL when out of memory. */
char *fa_conninfo_scrub(const fa_conninfo *ci, const char *msg);
/* libpq's reading of canon (store/pg.c, PQconninfoParse): fills display, secrets, had_password.
 * 0: read; 1: refused (why set: libpq's reason without any quoted text of the string, or a URI
 * whose user and password libpq could not separate from the host); -1: libpq unavailable;
 * -2: out of memory. */
int fa_store_pq_conninfo(const char *canon, bool uri, fa_conninfo *ci);
/* The store's own pass over a command line before it is stored (store/conninfo.c); malloc'd. */
char *fa_store_redact_command_line(const char *cmd);

/* SQL that differs between the back ends chooses its text with this (kept inside store/). */
static inline bool fa_db_is_pg(const fa_store *st) { return st->be->name[0] == 'p'; }
static inline int fa_db_exec(fa_store *st, const char *sql) { return st->be->exec(st, sql); }
static inline int fa_db_prepare(fa_store *st, const char *sql, fa_stmt **out) { return st->be->prepare(st, sql, out); }
static inline int fa_db_prepare_bulk(fa_store *st, const char *table, const char *cols, int n, fa_stmt **out)
{
    return st->be->prepare_bulk(st, table, cols, n, out);
}
static inline int fa_db_bulk_end(fa_stmt *q) { return q->be->bulk_end(q); }
static inline int64_t fa_db_changes(fa_store *st) { return st->be->changes(st); }
static inline bool fa_db_in_tx(fa_store *st) { return st->be->in_tx(st); }
static inline int fa_stmt_reset(fa_stmt *q) { return q->be->reset(q); }
static inline int fa_stmt_bind_i64(fa_stmt *q, int i, int64_t v) { return q->be->bind_i64(q, i, v); }
static inline int fa_stmt_bind_dbl(fa_stmt *q, int i, double v) { return q->be->bind_dbl(q, i, v); }
static inline int fa_stmt_bind_txt(fa_stmt *q, int i, const char *v) { return q->be->bind_txt(q, i, v); }
static inline int fa_stmt_step(fa_stmt *q) { return q->be->step(q); }
static inline int64_t fa_col_i64(fa_stmt *q, int c) { return q->be->col_i64(q, c); }
static inline int fa_col_int(fa_stmt *q, int c) { return (int)q->be->col_i64(q, c); }
static inline double fa_col_dbl(fa_stmt *q, int c) { return q->be->col_dbl(q, c); }
static inline const char *fa_col_text(fa_stmt *q, int c) { return q->be->col_text(q, c); }
static inline size_t fa_col_bytes(fa_stmt *q, int c) { return q->be->col_bytes(q, c); }
static inline bool fa_col_null(fa_stmt *q, int c) { return q->be->col_null(q, c); }
static inline fa_db_kind fa_col_kind(fa_stmt *q, int c) { return q->be->col_kind(q, c); }
static inline void fa_stmt_finalize(fa_stmt *q) { if (q) q->be->finalize(q); }
static inline const char *fa_stmt_sql(fa_stmt *q) { return q->be->sql(q); }

/* The raw SQLite connection, for white-box tests of the SQLite back end only: no module above
 * store/ includes this header (store.h is the whole API, with no database type in it). NULL
 * on a PostgreSQL store. Borrowed until fa_store_close. */
sqlite3 *fa_store_db(fa_store *st);
/* Checking helper behind every database call (STYLE.md): rc FA_DB_OK/ROW/DONE -> FA_OK;
 * otherwise records "PATH: run database error: MESSAGE" on ctx (the call and location go to
 * the debug log) and returns FA_ERR_INPUT (not a database / corrupt), FA_ERR_NOMEM, or
 * FA_ERR_IO (busy, read-only, I/O, constraint, connection lost, ...). Use through FA_SQL_CHECK. */
fa_status fa_store_sql_check(fa_ctx *ctx, fa_store *st, int rc, const char *call, const char *file,
                             int line);
#define FA_SQL_CHECK(ctx, st, call) fa_store_sql_check((ctx), (st), (call), #call, __FILE__, __LINE__)

/* Binder: binds in order and keeps the first failing rc, checked once per row. */
typedef struct binder {
    fa_stmt *s;
    int i;  /* next parameter index (1-based) */
    int rc; /* first failure */
} binder;

static inline void b_start(binder *b, fa_stmt *s)
{
    b->s = s;
    b->i = 1;
    b->rc = fa_stmt_reset(s);
}
static inline void b_i64(binder *b, int64_t v)
{
    int rc = fa_stmt_bind_i64(b->s, b->i++, v);
    if (b->rc == FA_DB_OK) b->rc = rc;
}
static inline void b_dbl(binder *b, double v)
{
    int rc = fa_stmt_bind_dbl(b->s, b->i++, v);
    if (b->rc == FA_DB_OK) b->rc = rc;
}
static inline void b_txt(binder *b, const char *v)
{
    int rc = fa_stmt_bind_txt(b->s, b->i++, v);
    if (b->rc == FA_DB_OK) b->rc = rc;
}

/* ---- helpers shared by the store's sources (store.c defines them) ---- */

/* Check a sqlite3_step result; the message names the statement's SQL. */
fa_status fa_sq_step_check(fa_ctx *ctx, fa_store *st, fa_stmt *q, int rc, const char *file, int line);
#define STEP_CHECK(ctx, st, q, rc) fa_sq_step_check((ctx), (st), (q), (rc), __FILE__, __LINE__)
/* FA_ERR_IO "PATH: database is read-only ..., cannot WHAT" when opened read-only. */
fa_status fa_sq_require_writable(fa_ctx *ctx, fa_store *st, const char *what);
int64_t fa_sq_unix_now_ns(void);
/* Run SQL without results / prepare one statement (*out NULL on failure). */
fa_status fa_sq_exec_sql(fa_ctx *ctx, fa_store *st, const char *sql);
fa_status fa_sq_prepare(fa_ctx *ctx, fa_store *st, const char *sql, fa_stmt **out);
/* Column text copied into arena; NULL for SQL NULL. */
const char *fa_sq_col_str(fa_stmt *s, int col, fa_arena *arena);
/* Prepare sql and bind ?1 = run_id through *b (bind further parameters with b, then check
 * b->rc with FA_SQL_CHECK before stepping). *q NULL on failure. */
fa_status fa_sq_prepare_run(fa_ctx *ctx, fa_store *st, const char *sql, int64_t run_id, fa_stmt **q,
                            binder *b);
/* Make room in an arena array of `size`-byte rows for row n (capacity doubles, old rows copied);
 * false when out of memory. */
bool fa_sq_grow(fa_arena *arena, void **v, size_t n, size_t *cap, size_t size);
/* Decoder of one result row for fa_sq_collect_rows: fills *row (zeroed, `size` bytes) from the
 * current row of q, copying text into arena (fa_sq_col_str); user is the caller's state. Returns
 * FA_OK, or a failure with its message recorded on ctx (out of memory: "PATH: out of memory"). */
typedef fa_status (*fa_sq_row_decode)(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row,
                                      void *user);
/* Collect rows into the arena: step the prepared statement q to its end (bind_rc: the first
 * failure of its binds, a binder's rc, FA_DB_OK when none; checked before the first step), one
 * `size`-byte row per result row in an arena array decoded by `decode`. Finalizes q in every
 * case, on both back ends. On success *out is the array (never NULL: an empty result is a valid
 * block) and *n_out its length; both untouched on failure. */
fa_status fa_sq_collect_rows(fa_ctx *ctx, fa_store *st, fa_stmt *q, int bind_rc, fa_arena *arena, size_t size,
                             fa_sq_row_decode decode, void *user, void **out, size_t *n_out);
/* Read one integer of a single-row query (0 when no row). */
fa_status fa_sq_query_i64(fa_ctx *ctx, fa_store *st, const char *sql, int64_t *out);
/* A run's graph sizes (store/results.c): its rows are numbered 0..n-1 (nodes by node_id, tensors
 * by tensor_id), and every id another row holds must name one of them. */
typedef struct fa_graph_counts {
    int64_t run_id, nodes, tensors;
} fa_graph_counts;
fa_status fa_store_graph_counts(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_graph_counts *c);
/* FA_OK when v is the id of one of `count` rows (`of`: "nodes" or "tensors"; -1 too where
 * none_ok), *out = v; else FA_ERR_INPUT naming the file, table, run, column and value. */
fa_status fa_store_graph_id(fa_ctx *ctx, fa_store *st, const fa_graph_counts *c, const char *table, const char *column,
                            int64_t v, int64_t count, const char *of, bool none_ok, int *out);
/* The one integer of `sql` (a count, "... WHERE run_id=?1") for run_id; 0 when it returns no row. */
fa_status fa_sq_count_run(fa_ctx *ctx, fa_store *st, const char *sql, int64_t run_id, int64_t *n);
/* A write unit: BEGIN IMMEDIATE when no transaction is open, a SAVEPOINT inside the caller's;
 * tx_close commits/releases on s == FA_OK, else undoes it, and returns s or the commit's failure. */
fa_status fa_sq_tx_open(fa_ctx *ctx, fa_store *st, bool *own);
fa_status fa_sq_tx_close(fa_ctx *ctx, fa_store *st, bool own, fa_status s);
/* fa_sq_require_writable(what) then fa_sq_tx_open: the start of every typed write. */
fa_status fa_sq_write_open(fa_ctx *ctx, fa_store *st, const char *what, bool *own);
/* Binder of row i of fa_sq_put_rows: binds the parameters after ?1 = run_id, in order, through b
 * (b_i64 / b_dbl / b_txt); user is the caller's rows. */
typedef void (*fa_sq_row_bind)(binder *b, size_t i, const void *user);
/* Put rows: prepare sql once, then for each i in [0, n) bind ?1 = run_id and the rest with
 * bind, and step; stops at the first failure (its message on ctx). Finalizes the statement.
 * Runs inside the caller's write unit (fa_sq_write_open .. fa_sq_tx_close). */
fa_status fa_sq_put_rows(fa_ctx *ctx, fa_store *st, const char *sql, int64_t run_id, size_t n, fa_sq_row_bind bind,
                         const void *user);


#endif
