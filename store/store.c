/* store/store — open the run database on its back end (store/sqlite.c, store/pg.c),
 * transactions, and the run/graph/trace writers and readers. Every database call goes through
 * FA_SQL_CHECK (STYLE.md); the SQL here is the dialect both back ends accept. */
#include "store-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- errors ---- */

fa_status fa_store_sql_check(fa_ctx *ctx, fa_store *st, int rc, const char *call, const char *file, int line)
{
    if (rc == FA_DB_OK || rc == FA_DB_ROW || rc == FA_DB_DONE) return FA_OK;
    if (st->fault) { /* a value the back end refused: its own message, whatever the call */
        fa_log(ctx, FA_LOG_DEBUG, "%s: %s refused a value at %s:%d", st->path, call, file, line);
        fa_status s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s", st->fault);
        free(st->fault);
        st->fault = NULL;
        return s;
    }
    return st->be->error(ctx, st, rc, call, file, line);
}

/* Check a sqlite3_step result; the message names the statement's SQL. */
fa_status fa_sq_step_check(fa_ctx *ctx, fa_store *st, fa_stmt *q, int rc, const char *file, int line)
{
    if (rc == FA_DB_OK || rc == FA_DB_ROW || rc == FA_DB_DONE) return FA_OK;
    const char *sql = q ? fa_stmt_sql(q) : NULL;
    char call[200];
    if (!sql) sql = "?";
    snprintf(call, sizeof call, "fa_stmt_step(\"%.120s%s\")", sql, strlen(sql) > 120 ? "..." : "");
    return fa_store_sql_check(ctx, st, rc, call, file, line);
}

fa_status fa_sq_require_writable(fa_ctx *ctx, fa_store *st, const char *what)
{
    if (!st->readonly) return FA_OK;
    return fa_ctx_error(ctx, FA_ERR_IO,
                        "%s: database is read-only (the file is not writable), cannot %s", st->path,
                        what);
}

/* ---- small helpers ---- */

int64_t fa_sq_unix_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* starttime (field 22 of /proc/PID/stat, clock ticks since boot); -1 when unknown. */
static int64_t proc_start_ticks(int64_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* comm may contain spaces and parentheses */
    if (!p) return -1;
    p++;
    /* after ")": field 3 (state) ... field 22 (starttime) */
    for (int field = 3; field < 22; field++) {
        while (*p == ' ') p++;
        while (*p && *p != ' ') p++;
        if (!*p) return -1;
    }
    return strtoll(p, NULL, 10);
}

static void host_name(char *buf, size_t n)
{
    if (gethostname(buf, n) != 0) snprintf(buf, n, "unknown");
    buf[n - 1] = 0;
}

/* Run one or more SQL statements without results. */
fa_status fa_sq_exec_sql(fa_ctx *ctx, fa_store *st, const char *sql)
{
    return FA_SQL_CHECK(ctx, st, fa_db_exec(st, sql));
}

fa_status fa_sq_prepare(fa_ctx *ctx, fa_store *st, const char *sql, fa_stmt **out)
{
    *out = NULL;
    return FA_SQL_CHECK(ctx, st, fa_db_prepare(st, sql, out));
}

fa_status fa_sq_prepare_run(fa_ctx *ctx, fa_store *st, const char *sql, int64_t run_id, fa_stmt **q, binder *b)
{
    fa_status s = fa_sq_prepare(ctx, st, sql, q);
    if (s) return s;
    b_start(b, *q);
    b_i64(b, run_id);
    return FA_OK;
}

bool fa_sq_grow(fa_arena *arena, void **v, size_t n, size_t *cap, size_t size)
{
    if (n < *cap) return true;
    size_t nc = *cap ? *cap * 2 : 64;
    void *p = fa_arena_alloc(arena, nc * size);
    if (!p) return false;
    if (n) memcpy(p, *v, n * size);
    *v = p;
    *cap = nc;
    return true;
}

fa_status fa_sq_collect_rows(fa_ctx *ctx, fa_store *st, fa_stmt *q, int bind_rc, fa_arena *arena, size_t size,
                             fa_sq_row_decode decode, void *user, void **out, size_t *n_out)
{
    fa_status s = FA_SQL_CHECK(ctx, st, bind_rc);
    void *v = NULL;
    size_t n = 0, cap = 0;
    int rc = FA_DB_DONE;
    while (!s && (rc = fa_stmt_step(q)) == FA_DB_ROW) {
        if (!fa_sq_grow(arena, &v, n, &cap, size)) {
            s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
            break;
        }
        void *row = (char *)v + n * size;
        memset(row, 0, size);
        s = decode(ctx, st, q, arena, row, user);
        n++;
    }
    if (!s) s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    if (!s && !v && !(v = fa_arena_alloc(arena, size))) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    if (s) return s;
    *out = v;
    *n_out = n;
    return FA_OK;
}

const char *fa_sq_col_str(fa_stmt *s, int col, fa_arena *arena)
{
    const char *t = fa_col_text(s, col);
    if (!t) return NULL;
    return fa_arena_strndup(arena, (const char *)t, (size_t)fa_col_bytes(s, col));
}

/* Read one integer of a single-row query. */
fa_status fa_sq_query_i64(fa_ctx *ctx, fa_store *st, const char *sql, int64_t *out)
{
    fa_stmt *q;
    fa_status s = fa_sq_prepare(ctx, st, sql, &q);
    if (s) return s;
    int rc = fa_stmt_step(q);
    s = STEP_CHECK(ctx, st, q, rc);
    if (!s) *out = rc == FA_DB_ROW ? fa_col_i64(q, 0) : 0;
    fa_stmt_finalize(q);
    return s;
}

/* ---- transactions ---- */

/* Start a write unit: the back end's write BEGIN when no transaction is open (SQLite: BEGIN
 * IMMEDIATE, takes the write lock at
 * once so the busy timeout applies), a SAVEPOINT inside the caller's transaction. */
fa_status fa_sq_tx_open(fa_ctx *ctx, fa_store *st, bool *own)
{
    *own = !fa_db_in_tx(st);
    return fa_sq_exec_sql(ctx, st, *own ? st->be->begin_sql : "SAVEPOINT fa_write");
}

fa_status fa_sq_write_open(fa_ctx *ctx, fa_store *st, const char *what, bool *own)
{
    fa_status s = fa_sq_require_writable(ctx, st, what);
    return s ? s : fa_sq_tx_open(ctx, st, own);
}

fa_status fa_sq_put_rows(fa_ctx *ctx, fa_store *st, const char *sql, int64_t run_id, size_t n, fa_sq_row_bind bind,
                         const void *user)
{
    fa_stmt *q = NULL;
    fa_status s = n ? fa_sq_prepare(ctx, st, sql, &q) : FA_OK;
    for (size_t i = 0; i < n && !s; i++) {
        binder b;
        b_start(&b, q);
        b_i64(&b, run_id);
        bind(&b, i, user);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    }
    fa_stmt_finalize(q);
    return s;
}

/* Finish a write unit: commit/release on s == FA_OK, otherwise undo it. Returns s, or the
 * commit's failure. */
fa_status fa_sq_tx_close(fa_ctx *ctx, fa_store *st, bool own, fa_status s)
{
    if (s == FA_OK) {
        s = fa_sq_exec_sql(ctx, st, own ? "COMMIT" : "RELEASE fa_write");
        if (s == FA_OK) return FA_OK;
    }
    if (own) fa_db_exec(st, "ROLLBACK");
    else fa_db_exec(st, "ROLLBACK TO fa_write; RELEASE fa_write");
    return s;
}

fa_status fa_store_begin(fa_ctx *ctx, fa_store *st)
{
    fa_status s = fa_sq_require_writable(ctx, st, "start a transaction");
    if (s) return s;
    if (st->explicit_tx || fa_db_in_tx(st))
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: fa_store_begin inside an open transaction",
                            st->path);
    s = fa_sq_exec_sql(ctx, st, st->be->begin_sql);
    if (!s) st->explicit_tx = true;
    return s;
}

fa_status fa_store_commit(fa_ctx *ctx, fa_store *st)
{
    if (!st->explicit_tx)
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: fa_store_commit without fa_store_begin",
                            st->path);
    fa_status s = fa_sq_exec_sql(ctx, st, "COMMIT");
    if (s) fa_db_exec(st, "ROLLBACK");
    st->explicit_tx = false;
    return s;
}

void fa_store_rollback(fa_store *st)
{
    if (!st) return;
    if (fa_db_in_tx(st)) fa_db_exec(st, "ROLLBACK");
    st->explicit_tx = false;
}


/* Set run_id's status (and error, ended_at) together with its fused twins (kind 'fused',
 * tag "fused-of:<run_id>", written by the applier): 'ok' finishes the twins still running with
 * it; 'failed' fails every twin, so a failed run never keeps an 'ok' fused twin. only_running:
 * change run_id itself only while it is 'running' (recovery). Inside the caller's transaction. */
static fa_status finish_with_twins(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *status, const char *error,
                                   bool only_running)
{
    fa_stmt *q = NULL;
    fa_status s = fa_sq_prepare(ctx, st,
                          only_running ? "UPDATE runs SET status = ?2, error = ?3, ended_at_ns = coalesce(ended_at_ns, ?4) "
                                         "WHERE id = ?1 AND status = 'running'"
                                       : "UPDATE runs SET status = ?2, error = ?3, ended_at_ns = ?4 WHERE id = ?1",
                          &q);
    if (!s) {
        binder b;
        b_start(&b, q);
        b_i64(&b, run_id);
        b_txt(&b, status);
        b_txt(&b, error);
        b_i64(&b, fa_sq_unix_now_ns());
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    }
    fa_stmt_finalize(q);
    q = NULL;
    bool ok = !strcmp(status, "ok");
    char why[160]; /* bound SQLITE_STATIC: must outlive the step below */
    snprintf(why, sizeof why, "its baseline run %lld failed", (long long)run_id);
    if (!s)
        s = fa_sq_prepare(ctx, st,
                    ok ? "UPDATE runs SET status = 'ok', error = NULL, ended_at_ns = coalesce(ended_at_ns, ?2) "
                         "WHERE kind = 'fused' AND tag = 'fused-of:' || ?1 AND status = 'running'"
                       : "UPDATE runs SET status = 'failed', error = ?3, ended_at_ns = coalesce(ended_at_ns, ?2) "
                         "WHERE kind = 'fused' AND tag = 'fused-of:' || ?1 AND status <> 'failed'",
                    &q);
    if (!s) {
        binder b;
        b_start(&b, q);
        b_i64(&b, run_id);
        b_i64(&b, fa_sq_unix_now_ns());
        if (!ok) b_txt(&b, why);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    }
    fa_stmt_finalize(q);
    return s;
}

/* A server: runs 'running' whose writer's connection is gone (no session holds the run's
 * liveness lock, fa_store_backend.run_lock), whichever host wrote them. */
static fa_status find_orphaned_runs(fa_ctx *ctx, fa_store *st, int64_t *dead, int *n_dead)
{
    int64_t ids[256];
    int n = 0, rc;
    fa_stmt *q;
    fa_status s = fa_sq_prepare(ctx, st, "SELECT id FROM runs WHERE status = 'running' ORDER BY id LIMIT 256", &q);
    if (s) return s;
    while ((rc = fa_stmt_step(q)) == FA_DB_ROW && n < 256) ids[n++] = fa_col_i64(q, 0);
    s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    for (int i = 0; !s && i < n; i++) {
        bool gone = false;
        s = FA_SQL_CHECK(ctx, st, st->be->run_lock(st, ids[i], FA_RUN_LOCK_PROBE, &gone));
        if (!s && gone) dead[(*n_dead)++] = ids[i];
    }
    return s;
}

/* Mark runs left 'running' by a dead process as failed: on a server, those whose writer's
 * connection is gone; in a file, those of this host whose process is gone. */
static fa_status recover_dead_runs(fa_ctx *ctx, fa_store *st)
{
    if (st->be->run_lock) {
        int64_t dead[256];
        int n_dead = 0;
        fa_status s = find_orphaned_runs(ctx, st, dead, &n_dead);
        if (s || n_dead == 0) return s;
        bool own;
        s = fa_sq_tx_open(ctx, st, &own);
        if (s) return s;
        for (int i = 0; !s && i < n_dead; i++) s = finish_with_twins(ctx, st, dead[i], "failed", "process died", true);
        return fa_sq_tx_close(ctx, st, own, s);
    }
    char host[256];
    host_name(host, sizeof host);
    fa_stmt *q;
    fa_status s = fa_sq_prepare(ctx, st, "SELECT id, pid, host, pid_start_ticks FROM runs WHERE status = 'running'", &q);
    if (s) return s;
    int64_t dead[256];
    int n_dead = 0;
    int rc;
    while ((rc = fa_stmt_step(q)) == FA_DB_ROW && n_dead < 256) {
        int64_t pid = fa_col_i64(q, 1);
        const char *h = fa_col_text(q, 2);
        if (pid <= 0 || !h || strcmp(h, host) != 0) continue; /* cannot judge another host */
        if (pid == (int64_t)getpid()) continue;
        bool is_dead = false;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) is_dead = true;
        else if (!fa_col_null(q, 3)) {
            int64_t want = fa_col_i64(q, 3), have = proc_start_ticks(pid);
            if (want >= 0 && have >= 0 && want != have) is_dead = true; /* pid reused */
        }
        if (is_dead) dead[n_dead++] = fa_col_i64(q, 0);
    }
    s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    if (s || n_dead == 0) return s;
    bool own;
    s = fa_sq_tx_open(ctx, st, &own);
    if (s) return s;
    /* whatever stage the process was in (baseline, analysis, plan, apply, outputs, import
     * advice): the run never finished, and its fused twins fail with it */
    for (int i = 0; !s && i < n_dead; i++) s = finish_with_twins(ctx, st, dead[i], "failed", "process died", true);
    return fa_sq_tx_close(ctx, st, own, s);
}


int64_t fa_store_step_limit_ns(void)
{
    const char *lim = getenv("FA_DB_STEP_LIMIT_S");
    char *end = NULL;
    double sec = lim && *lim ? strtod(lim, &end) : 0;
    if (!(sec > 0 && sec < 1e6 && end && !*end)) sec = FA_STORE_STEP_LIMIT_S;
    return (int64_t)(sec * 1e9);
}

fa_status fa_store_open_ex(fa_ctx *ctx, const char *path, unsigned flags, fa_store **out)
{
    if (!path || !*path) return fa_ctx_error(ctx, FA_ERR_USAGE, "empty database path");
    bool pg = fa_store_path_is_pg(path);
    fa_store *st = calloc(1, sizeof *st);
    if (!st) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", path);
    st->be = &fa_store_sqlite_backend;
    st->path = pg ? fa_store_redact_uri(path, NULL) : strdup(path);
    if (!st->path) {
        free(st);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory opening the run database");
    }
    fa_status s = pg ? fa_store_pg_open(ctx, st, path, flags) : fa_store_sqlite_open(ctx, st, path, flags);
    /* runs left 'running' by a process of this host that died */
    if (!s && !st->readonly) s = recover_dead_runs(ctx, st);
    if (s) {
        /* a file refused as input (not ours, malformed, another schema) gains no -wal/-shm from the
         * attempt; a busy or failing one keeps whatever is there (another process may own it) */
        bool drop = !pg && s == FA_ERR_INPUT && st->sq_opened;
        bool wb = st->wal_before, sb = st->shm_before;
        char *p = drop ? strdup(path) : NULL;
        fa_store_close(st);
        if (p) fa_sqlite_remove_created(p, wb, sb); /* core/fs.c */
        free(p);
        return s;
    }
    *out = st;
    return FA_OK;
}

fa_status fa_store_open(fa_ctx *ctx, const char *path, fa_store **out)
{
    return fa_store_open_ex(ctx, path, 0, out);
}


void fa_store_close(fa_store *st)
{
    if (!st) return;
    st->be->close(st);
    free(st->fault);
    free(st->path);
    free(st);
}

const char *fa_store_path(const fa_store *st) { return st->path; }
bool fa_store_readonly(const fa_store *st) { return st->readonly; }
const char *fa_store_backend_name(const fa_store *st) { return st->be->name; }

/* ---- runs ---- */

fa_status fa_store_run_begin(fa_ctx *ctx, fa_store *st, const fa_run_info *info, int64_t *run_id)
{
    fa_status s = fa_sq_require_writable(ctx, st, "record a run");
    if (s) return s;
    char host[256];
    host_name(host, sizeof host);
    int64_t pid = (int64_t)getpid();
    bool own;
    s = fa_sq_tx_open(ctx, st, &own);
    if (s) return s;
    fa_stmt *q = NULL;
    s = fa_sq_prepare(ctx, st,
                "INSERT INTO runs (kind, model_path, model_sha256, target, device_name, threads, "
                "iters, warmup, command_line, tag, started_at_ns, status, peak_activation_bytes, "
                "source_sha256, pid, host, pid_start_ticks, dim_defaults) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,'running',?,?,?,?,?,?) RETURNING id",
                &q);
    /* a password given in a server URI on the command line is never stored */
    char *cmd = info->command_line ? fa_store_redact_command_line(info->command_line) : NULL;
    if (!s && info->command_line && !cmd) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    int64_t id = 0;
    if (!s) {
        binder b;
        b_start(&b, q);
        b_txt(&b, info->kind ? info->kind : "run");
        b_txt(&b, info->model_path);
        b_txt(&b, info->model_sha256);
        b_txt(&b, info->target);
        b_txt(&b, info->device_name);
        b_i64(&b, info->threads);
        b_i64(&b, info->iters);
        b_i64(&b, info->warmup);
        b_txt(&b, cmd);
        b_txt(&b, info->tag);
        b_i64(&b, info->started_at_ns ? info->started_at_ns : fa_sq_unix_now_ns());
        b_i64(&b, (int64_t)info->peak_activation_bytes);
        b_txt(&b, info->source_sha256);
        b_i64(&b, pid);
        b_txt(&b, host);
        b_i64(&b, proc_start_ticks(pid));
        b_txt(&b, info->dim_defaults);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        int rc = FA_DB_DONE;
        if (!s) s = STEP_CHECK(ctx, st, q, rc = fa_stmt_step(q));
        if (!s && rc != FA_DB_ROW) s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: INSERT INTO runs returned no id", st->path);
        if (!s) id = fa_col_i64(q, 0);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q)); /* to DONE: the row is written */
    }
    fa_stmt_finalize(q);
    free(cmd);
    /* a server: this connection keeps the run alive for other processes' recovery */
    if (!s && st->be->run_lock) s = FA_SQL_CHECK(ctx, st, st->be->run_lock(st, id, FA_RUN_LOCK_HOLD, NULL));
    s = fa_sq_tx_close(ctx, st, own, s);
    if (!s) *run_id = id;
    return s;
}

/* Fail with "no run N" unless run_id exists. */
static fa_status check_run(fa_ctx *ctx, fa_store *st, int64_t run_id)
{
    fa_stmt *q;
    /* On PostgreSQL the kernels table has no foreign key (store/pg.c, pg_schema_sql): the run row
     * is locked against deletion until the writer's transaction ends instead. */
    fa_status s = fa_sq_prepare(ctx, st, fa_db_is_pg(st) && !st->readonly ? "SELECT 1 FROM runs WHERE id = ? FOR KEY SHARE"
                                                          : "SELECT 1 FROM runs WHERE id = ?", &q);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 1, run_id));
    int rc = FA_DB_DONE;
    if (!s) {
        rc = fa_stmt_step(q);
        s = STEP_CHECK(ctx, st, q, rc);
    }
    fa_stmt_finalize(q);
    if (!s && rc != FA_DB_ROW)
        s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: no run %lld", st->path, (long long)run_id);
    return s;
}

fa_status fa_store_run_update(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_run_info *info)
{
    bool own;
    fa_status s = fa_sq_write_open(ctx, st, "update a run", &own);
    if (s) return s;
    s = check_run(ctx, st, run_id);
    fa_stmt *q = NULL;
    if (!s)
        s = fa_sq_prepare(ctx, st,
                    "UPDATE runs SET device_name = coalesce(?2, device_name), "
                    "model_sha256 = coalesce(?3, model_sha256), source_sha256 = coalesce(?4, source_sha256), "
                    "tag = coalesce(?5, tag), threads = coalesce(nullif(?6, 0), threads), "
                    "iters = coalesce(nullif(?7, 0), iters), warmup = coalesce(nullif(?8, 0), warmup), "
                    "peak_activation_bytes = coalesce(nullif(?9, 0), peak_activation_bytes) WHERE id = ?1",
                    &q);
    if (!s) {
        binder b;
        b_start(&b, q);
        b_i64(&b, run_id);
        b_txt(&b, info->device_name);
        b_txt(&b, info->model_sha256);
        b_txt(&b, info->source_sha256);
        b_txt(&b, info->tag);
        b_i64(&b, info->threads);
        b_i64(&b, info->iters);
        b_i64(&b, info->warmup);
        b_i64(&b, (int64_t)info->peak_activation_bytes);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    }
    fa_stmt_finalize(q);
    return fa_sq_tx_close(ctx, st, own, s);
}

fa_status fa_store_run_finish(fa_ctx *ctx, fa_store *st, int64_t run_id, bool ok, const char *error)
{
    bool own;
    fa_status s = fa_sq_write_open(ctx, st, "finish a run", &own);
    if (s) return s;
    s = check_run(ctx, st, run_id);
    if (!s) s = finish_with_twins(ctx, st, run_id, ok ? "ok" : "failed", ok ? NULL : (error ? error : "failed"), false);
    s = fa_sq_tx_close(ctx, st, own, s);
    if (!s && own && st->be->run_lock) s = FA_SQL_CHECK(ctx, st, st->be->run_lock(st, run_id, FA_RUN_LOCK_DROP, NULL));
    return s;
}

fa_status fa_store_run_reopen(fa_ctx *ctx, fa_store *st, int64_t run_id)
{
    fa_status s = fa_sq_require_writable(ctx, st, "reopen a run");
    if (s) return s;
    char host[256];
    host_name(host, sizeof host);
    int64_t pid = (int64_t)getpid();
    bool own;
    s = fa_sq_tx_open(ctx, st, &own);
    if (s) return s;
    s = check_run(ctx, st, run_id);
    fa_stmt *q = NULL;
    if (!s)
        s = fa_sq_prepare(ctx, st,
                    "UPDATE runs SET status = 'running', error = NULL, ended_at_ns = NULL, pid = ?2, host = ?3, "
                    "pid_start_ticks = ?4 WHERE id = ?1",
                    &q);
    if (!s) {
        binder b;
        b_start(&b, q);
        b_i64(&b, run_id);
        b_i64(&b, pid);
        b_txt(&b, host);
        b_i64(&b, proc_start_ticks(pid));
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    }
    fa_stmt_finalize(q);
    s = fa_sq_tx_close(ctx, st, own, s);
    if (!s && st->be->run_lock) s = FA_SQL_CHECK(ctx, st, st->be->run_lock(st, run_id, FA_RUN_LOCK_HOLD, NULL));
    return s;
}

/* ---- graph ---- */

fa_status fa_store_put_graph(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_graph *g)
{
    bool own;
    fa_status s = fa_sq_write_open(ctx, st, "store a graph", &own);
    if (s) return s;
    s = check_run(ctx, st, run_id);
    /* Three bulk inserts one after the other (COPY on PostgreSQL: one at a time per connection). */
    fa_stmt *q = NULL;
    binder b;
    if (!s)
        s = FA_SQL_CHECK(ctx, st, fa_db_prepare_bulk(st, "nodes",
                                                     "run_id, node_id, name, op_type, domain, pattern, folded, "
                                                     "n_inputs, n_outputs, output_shapes, flops, bytes_read, bytes_written",
                                                     13, &q));
    fa_buf shapes;
    fa_buf_init(&shapes);
    for (int i = 0; !s && i < g->n_nodes; i++) {
        const fa_node *n = g->nodes[i];
        fa_op_cost cost;
        fa_node_cost(g, n, &cost);
        fa_buf_reset(&shapes);
        for (int k = 0; k < n->n_outputs; k++) {
            char sh[256];
            const fa_tensor *t = fa_graph_out(g, n, k);
            if (k) fa_buf_puts(&shapes, ";");
            fa_buf_puts(&shapes, t ? fa_tensor_shape_str(t, sh, sizeof sh) : "-");
        }
        if (shapes.oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
        b_start(&b, q);
        b_i64(&b, run_id);
        b_i64(&b, n->id);
        b_txt(&b, n->name ? n->name : "");
        b_txt(&b, n->op_type ? n->op_type : "");
        b_txt(&b, n->domain ? n->domain : "");
        if (n->op) b_i64(&b, n->op->pattern);
        else b_txt(&b, NULL);
        b_i64(&b, n->folded);
        b_i64(&b, n->n_inputs);
        b_i64(&b, n->n_outputs);
        b_txt(&b, shapes.data ? shapes.data : "");
        b_i64(&b, (int64_t)cost.flops);
        b_i64(&b, (int64_t)cost.bytes_read);
        b_i64(&b, (int64_t)cost.bytes_written);
        if (!s) s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    }
    fa_buf_free(&shapes);
    if (!s) s = FA_SQL_CHECK(ctx, st, fa_db_bulk_end(q));
    fa_stmt_finalize(q);
    q = NULL;
    /* one row per (tensor, live node, input slot) */
    if (!s)
        s = FA_SQL_CHECK(ctx, st, fa_db_prepare_bulk(st, "consumers", "run_id, tensor_id, node_id, input_index", 4, &q));
    for (int i = 0; !s && i < g->n_nodes; i++) {
        const fa_node *n = g->nodes[i];
        if (n->folded) continue;
        for (int k = 0; !s && k < n->n_inputs; k++) {
            if (n->inputs[k] < 0) continue;
            b_start(&b, q);
            b_i64(&b, run_id);
            b_i64(&b, n->inputs[k]);
            b_i64(&b, n->id);
            b_i64(&b, k);
            s = FA_SQL_CHECK(ctx, st, b.rc);
            if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
        }
    }
    if (!s) s = FA_SQL_CHECK(ctx, st, fa_db_bulk_end(q));
    fa_stmt_finalize(q);
    q = NULL;
    if (!s)
        s = FA_SQL_CHECK(ctx, st, fa_db_prepare_bulk(st, "tensors",
                                                     "run_id, tensor_id, name, dtype, rank, shape, bytes, producer, "
                                                     "flags, is_const, is_initializer, is_graph_input, is_graph_output",
                                                     13, &q));
    for (int i = 0; !s && i < g->n_tensors; i++) {
        const fa_tensor *t = g->tensors[i];
        char sh[256];
        bool is_out = (t->flags & FA_TENSOR_GRAPH_OUTPUT) != 0, is_in = (t->flags & FA_TENSOR_GRAPH_INPUT) != 0;
        for (int k = 0; !is_out && k < g->n_outputs; k++) is_out = g->outputs[k] == t->id;
        for (int k = 0; !is_in && k < g->n_inputs; k++) is_in = g->inputs[k] == t->id;
        b_start(&b, q);
        b_i64(&b, run_id);
        b_i64(&b, t->id);
        b_txt(&b, t->name ? t->name : "");
        b_i64(&b, t->dtype);
        b_i64(&b, t->rank);
        b_txt(&b, t->rank >= 0 ? fa_tensor_shape_str(t, sh, sizeof sh) : NULL);
        b_i64(&b, (int64_t)fa_tensor_bytes(t));
        b_i64(&b, t->producer);
        b_i64(&b, t->flags);
        b_i64(&b, (t->flags & FA_TENSOR_CONST) != 0);
        b_i64(&b, (t->flags & FA_TENSOR_INITIALIZER) != 0);
        b_i64(&b, is_in);
        b_i64(&b, is_out);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    }
    if (!s) s = FA_SQL_CHECK(ctx, st, fa_db_bulk_end(q));
    fa_stmt_finalize(q);
    return fa_sq_tx_close(ctx, st, own, s);
}

/* ---- trace ---- */

fa_status fa_store_check_kernel_times(fa_ctx *ctx, fa_store *st, int64_t run_id)
{
    fa_stmt *q;
    fa_status s = fa_sq_prepare(ctx, st,
                                /* both back ends: no typeof (the schema check has the types), and
                                 * the overflow test in a CASE, evaluated only where it cannot
                                 * overflow itself */
                                "SELECT seq, start_ns, end_ns, iter, CASE WHEN end_ns < start_ns OR CASE WHEN start_ns < 0 "
                                "AND end_ns >= 0 THEN end_ns - 9223372036854775807 > start_ns ELSE 1 = 0 END THEN 1 ELSE 0 "
                                "END FROM kernels "
                                "WHERE run_id = ? AND (end_ns < start_ns OR CASE WHEN start_ns < 0 AND end_ns >= 0 THEN "
                                "end_ns - 9223372036854775807 > start_ns ELSE 1 = 0 END OR iter < -1 OR iter > ?) LIMIT 1",
                                &q);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 1, run_id));
    if (!s) s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 2, FA_STORE_ITER_MAX));
    int rc = s ? FA_DB_DONE : fa_stmt_step(q);
    if (!s && rc == FA_DB_ROW && !fa_col_i64(q, 4))
        /* the iteration number sizes per-iteration arrays of every reader: +50,000,000 took
         * report to 2.95 GB, +10^9 killed it */
        s = fa_ctx_error(ctx, FA_ERR_INPUT,
                         "%s: table kernels, run %lld, seq %lld: column iter is %lld, not an iteration number in [-1, %d]",
                         st->path, (long long)run_id, (long long)fa_col_i64(q, 0), (long long)fa_col_i64(q, 3),
                         (int)FA_STORE_ITER_MAX);
    else if (!s && rc == FA_DB_ROW)
        s = fa_ctx_error(ctx, FA_ERR_INPUT,
                         "%s: table kernels, run %lld, seq %lld: columns start_ns %lld, end_ns %lld: not a span (an end "
                         "before its start, or one that cannot be subtracted)",
                         st->path, (long long)run_id, (long long)fa_col_i64(q, 0), (long long)fa_col_i64(q, 1),
                         (long long)fa_col_i64(q, 2));
    else if (!s) s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    return s;
}

/* Median over timed iterations of (last kernel end - first kernel start), from the rows
 * stored for the run. */
static fa_status compute_iter_median(fa_ctx *ctx, fa_store *st, int64_t run_id, int64_t *out)
{
    fa_stmt *q;
    fa_status s = fa_store_check_kernel_times(ctx, st, run_id);
    if (s) return s;
    s = fa_sq_prepare(ctx, st,
                          "SELECT max(end_ns) - min(start_ns) FROM kernels WHERE run_id = ? AND "
                          "kind = ? AND iter >= 0 GROUP BY iter",
                          &q);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 1, run_id));
    if (!s) s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 2, FA_ACT_KERNEL));
    int64_t *v = NULL;
    size_t n = 0, cap = 0;
    int rc = FA_DB_DONE;
    while (!s && (rc = fa_stmt_step(q)) == FA_DB_ROW) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            int64_t *p = realloc(v, nc * sizeof *p);
            if (!p) {
                s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
                break;
            }
            v = p;
            cap = nc;
        }
        v[n++] = fa_col_i64(q, 0);
    }
    if (!s) s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    if (!s) *out = fa_stats_median_i64(v, n);
    free(v);
    return s;
}

/* The same median computed from an in-memory trace (the first chunk of a run). */
static fa_status trace_iter_median(fa_ctx *ctx, fa_store *st, const fa_trace *t, int64_t *out)
{
    int32_t max_iter = -1;
    for (size_t i = 0; i < t->n_acts; i++)
        if (t->acts[i].kind == FA_ACT_KERNEL && t->acts[i].iter > max_iter) max_iter = t->acts[i].iter;
    if (max_iter < 0) {
        *out = -1;
        return FA_OK;
    }
    size_t n = (size_t)max_iter + 1;
    uint64_t *lo = malloc(n * sizeof *lo), *hi = calloc(n, sizeof *hi);
    int64_t *span = malloc(n * sizeof *span);
    if (!lo || !hi || !span) {
        free(lo);
        free(hi);
        free(span);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory (%zu iterations)", st->path, n);
    }
    for (size_t k = 0; k < n; k++) lo[k] = UINT64_MAX;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        if (a->kind != FA_ACT_KERNEL || a->iter < 0) continue;
        if (a->start_ns < lo[a->iter]) lo[a->iter] = a->start_ns;
        if (a->end_ns > hi[a->iter]) hi[a->iter] = a->end_ns;
    }
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (lo[k] != UINT64_MAX) span[m++] = (int64_t)(hi[k] - lo[k]);
    *out = fa_stats_median_i64(span, m);
    free(lo);
    free(hi);
    free(span);
    return FA_OK;
}

fa_status fa_store_put_trace(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_trace *t)
{
    bool own;
    fa_status s = fa_sq_write_open(ctx, st, "store a trace", &own);
    if (s) return s;
    s = check_run(ctx, st, run_id);
    /* Appending to a run that already has records continues its seq numbering. */
    int64_t base = 0;
    fa_stmt *q = NULL;
    if (!s) s = fa_sq_prepare(ctx, st, "SELECT n_kernels FROM runs WHERE id = ?", &q);
    if (!s) {
        s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 1, run_id));
        int rc = s ? FA_DB_DONE : fa_stmt_step(q);
        if (!s) s = STEP_CHECK(ctx, st, q, rc);
        if (rc == FA_DB_ROW) base = fa_col_i64(q, 0);
    }
    fa_stmt_finalize(q);
    q = NULL;
    if (!s)
        s = FA_SQL_CHECK(ctx, st, fa_db_prepare_bulk(st, "kernels",
                                                     "run_id, seq, kind, name, op_type, node, node_name, iter, "
                                                     "device, stream, pid, tid, start_ns, end_ns, correlation, external_id, grid_x, "
                                                     "grid_y, grid_z, block_x, block_y, block_z, registers, static_smem, dynamic_smem, "
                                                     "local_mem, bytes_read, bytes_written, flops, occupancy, flags",
                                                     31, &q));
    for (size_t i = 0; !s && i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        binder b;
        b_start(&b, q);
        b_i64(&b, run_id);
        b_i64(&b, base + (int64_t)i);
        b_i64(&b, a->kind);
        b_txt(&b, a->name);
        b_txt(&b, a->op_type);
        b_i64(&b, a->node);
        b_txt(&b, a->node_name);
        b_i64(&b, a->iter);
        b_i64(&b, a->device);
        b_i64(&b, a->stream);
        b_i64(&b, a->pid);
        b_i64(&b, a->tid);
        b_i64(&b, (int64_t)a->start_ns);
        b_i64(&b, (int64_t)a->end_ns);
        b_i64(&b, a->correlation);
        b_i64(&b, a->external_id);
        for (int k = 0; k < 3; k++) b_i64(&b, a->grid[k]);
        for (int k = 0; k < 3; k++) b_i64(&b, a->block[k]);
        b_i64(&b, a->registers);
        b_i64(&b, a->static_smem);
        b_i64(&b, a->dynamic_smem);
        b_i64(&b, a->local_mem);
        b_i64(&b, (int64_t)a->bytes_read);
        b_i64(&b, (int64_t)a->bytes_written);
        b_i64(&b, (int64_t)a->flops);
        b_dbl(&b, a->occupancy);
        b_i64(&b, a->flags);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    }
    if (!s) s = FA_SQL_CHECK(ctx, st, fa_db_bulk_end(q));
    fa_stmt_finalize(q);
    q = NULL;
    int64_t median = -1;
    if (!s && base == 0) s = trace_iter_median(ctx, st, t, &median);
    else if (!s) s = compute_iter_median(ctx, st, run_id, &median); /* appended: over all rows */
    if (!s)
        s = fa_sq_prepare(ctx, st,
                    "UPDATE runs SET trace_source = ?2, trace_source_path = ?3, trace_n_iters = ?4, "
                    "n_orphans = n_orphans + ?5, n_clock_inversions = n_clock_inversions + ?6, "
                    "n_parse_errors = n_parse_errors + ?7, n_kernels = n_kernels + ?8, "
                    "iter_median_ns = ?9, device_name = coalesce(device_name, ?10) WHERE id = ?1",
                    &q);
    if (!s) {
        binder b;
        b_start(&b, q);
        b_i64(&b, run_id);
        b_txt(&b, t->source);
        b_txt(&b, t->source_path);
        b_i64(&b, t->n_iters);
        b_i64(&b, (int64_t)t->n_orphans);
        b_i64(&b, (int64_t)t->n_clock_inversions);
        b_i64(&b, (int64_t)t->n_parse_errors);
        b_i64(&b, (int64_t)t->n_acts);
        if (median >= 0) b_i64(&b, median);
        else b_txt(&b, NULL);
        b_txt(&b, t->device_name);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    }
    fa_stmt_finalize(q);
    return fa_sq_tx_close(ctx, st, own, s);
}

/* ---- readers ---- */

#define RUN_COLUMNS                                                                              \
    "id, kind, model_path, model_sha256, target, device_name, threads, iters, warmup, "          \
    "command_line, tag, started_at_ns, ended_at_ns, status, error, "                             \
    "peak_activation_bytes, source_sha256, pid, host, trace_source, n_kernels, "                 \
    "iter_median_ns, dim_defaults, "                                                             \
    "(SELECT p.e2e_verdict FROM plans p WHERE p.run_id = runs.id " FA_STORE_PLAN_OF_RECORD_P ")"

static fa_status read_run_row(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, fa_run_info *r)
{
    memset(r, 0, sizeof *r);
    r->id = fa_col_i64(q, 0);
    r->kind = fa_sq_col_str(q, 1, arena);
    r->model_path = fa_sq_col_str(q, 2, arena);
    r->model_sha256 = fa_sq_col_str(q, 3, arena);
    r->target = fa_sq_col_str(q, 4, arena);
    r->device_name = fa_sq_col_str(q, 5, arena);
    /* figures that size work when a verb measures again on the run's terms (analyze's and
     * advise's ceilings, apply's executors and benchmarks): a database is untrusted input, and a
     * crafted thread count of 5,000 made `analyze` start 5,000 OpenMP threads that spun for
     * minutes. The bounds are the options' own (run_int_column) */
    static const struct { const char *name; int64_t lo, hi; } cols[3] = {
        {"threads", 0, FA_STORE_RUN_THREADS_MAX}, {"iters", 0, FA_STORE_RUN_ITERS_MAX},
        {"warmup", FA_WARMUP_AUTO, FA_STORE_RUN_ITERS_MAX}};
    int vals[3];
    for (int c = 0; c < 3; c++) {
        int64_t v = fa_col_i64(q, 6 + c);
        if (v < cols[c].lo || v > cols[c].hi)
            return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: run %lld: table runs, column %s: %lld is outside [%lld, %lld]",
                                st->path, (long long)r->id, cols[c].name, (long long)v, (long long)cols[c].lo,
                                (long long)cols[c].hi);
        vals[c] = (int)v;
    }
    r->threads = vals[0];
    r->iters = vals[1];
    r->warmup = vals[2];
    /* a command line stored by another tool or an older fuse-advise may still carry a secret */
    if (!fa_col_null(q, 9)) {
        char *cmd = fa_store_redact_command_line(fa_col_text(q, 9));
        r->command_line = cmd ? fa_arena_strdup(arena, cmd) : NULL;
        free(cmd);
        if (!r->command_line) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory reading run %lld", st->path, (long long)r->id);
    }
    r->tag = fa_sq_col_str(q, 10, arena);
    r->started_at_ns = fa_col_i64(q, 11);
    r->ended_at_ns = fa_col_null(q, 12) ? 0 : fa_col_i64(q, 12); /* columns, not coalesce(): type-checked */
    r->status = fa_sq_col_str(q, 13, arena);
    r->error = fa_sq_col_str(q, 14, arena);
    r->peak_activation_bytes = (uint64_t)fa_col_i64(q, 15);
    r->source_sha256 = fa_sq_col_str(q, 16, arena);
    r->pid = fa_col_i64(q, 17);
    r->host = fa_sq_col_str(q, 18, arena);
    r->trace_source = fa_sq_col_str(q, 19, arena);
    r->n_kernels = fa_col_i64(q, 20);
    r->iter_median_ns = fa_col_null(q, 21) ? -1 : fa_col_i64(q, 21);
    r->dim_defaults = fa_sq_col_str(q, 22, arena);
    r->e2e_verdict = fa_e2e_verdict_parse(fa_col_text(q, 23));
    if (!r->kind || !r->status) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory reading run %lld", st->path, (long long)r->id);
    return FA_OK;
}

static fa_status decode_run(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    (void)user;
    return read_run_row(ctx, st, q, arena, row);
}

fa_status fa_store_list_runs(fa_ctx *ctx, fa_store *st, fa_arena *arena, fa_run_info **out, size_t *n_out)
{
    fa_stmt *q;
    fa_status s = fa_sq_prepare(ctx, st, "SELECT " RUN_COLUMNS " FROM runs ORDER BY id DESC", &q);
    if (s) return s;
    return fa_sq_collect_rows(ctx, st, q, FA_DB_OK, arena, sizeof **out, decode_run, NULL, (void **)out, n_out);
}

fa_status fa_store_get_run(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena, fa_run_info *out)
{
    fa_stmt *q;
    fa_status s = fa_sq_prepare(ctx, st, "SELECT " RUN_COLUMNS " FROM runs WHERE id = ?", &q);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 1, run_id));
    int rc = FA_DB_DONE;
    if (!s) {
        rc = fa_stmt_step(q);
        s = STEP_CHECK(ctx, st, q, rc);
    }
    fa_run_info r;
    if (!s && rc == FA_DB_ROW) s = read_run_row(ctx, st, q, arena, &r);
    else if (!s) s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: no run %lld", st->path, (long long)run_id);
    fa_stmt_finalize(q);
    if (!s) *out = r;
    return s;
}

fa_status fa_store_latest_run(fa_ctx *ctx, fa_store *st, const char *tag, int64_t *run_id)
{
    fa_stmt *q;
    fa_status s = fa_sq_prepare(ctx, st,
                          tag ? "SELECT id FROM runs WHERE tag = ? ORDER BY id DESC LIMIT 1"
                              : "SELECT id FROM runs ORDER BY id DESC LIMIT 1",
                          &q);
    if (s) return s;
    if (tag) s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_txt(q, 1, tag));
    int rc = FA_DB_DONE;
    if (!s) {
        rc = fa_stmt_step(q);
        s = STEP_CHECK(ctx, st, q, rc);
    }
    int64_t id = rc == FA_DB_ROW ? fa_col_i64(q, 0) : 0;
    fa_stmt_finalize(q);
    if (!s && rc != FA_DB_ROW)
        s = tag ? fa_ctx_error(ctx, FA_ERR_INPUT, "%s: no run tagged '%s'", st->path, tag)
                : fa_ctx_error(ctx, FA_ERR_INPUT, "%s: no runs yet", st->path);
    if (!s) *run_id = id;
    return s;
}

static const char *col_intern(fa_trace *t, fa_stmt *q, int col)
{
    const char *s = fa_col_text(q, col);
    return s ? fa_trace_intern_n(t, (const char *)s, (size_t)fa_col_bytes(q, col)) : NULL;
}

fa_status fa_store_load_trace(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_trace **out)
{
    fa_stmt *q;
    fa_status s = fa_store_check_kernel_times(ctx, st, run_id);
    if (s) return s;
    s = fa_sq_prepare(ctx, st,
                          "SELECT coalesce(trace_source, 'unknown'), trace_source_path, device_name, "
                          "trace_n_iters, n_orphans, n_clock_inversions, n_parse_errors FROM runs WHERE id = ?",
                          &q);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 1, run_id));
    int rc = FA_DB_DONE;
    if (!s) {
        rc = fa_stmt_step(q);
        s = STEP_CHECK(ctx, st, q, rc);
    }
    if (!s && rc != FA_DB_ROW) s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: no run %lld", st->path, (long long)run_id);
    fa_trace *t = NULL;
    if (!s) {
        t = fa_trace_create(fa_col_text(q, 0));
        if (!t) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory loading run %lld", st->path, (long long)run_id);
    }
    if (!s) {
        t->source_path = col_intern(t, q, 1);
        t->device_name = col_intern(t, q, 2);
        t->n_iters = fa_col_int(q, 3);
        t->n_orphans = (uint64_t)fa_col_i64(q, 4);
        t->n_clock_inversions = (uint64_t)fa_col_i64(q, 5);
        t->n_parse_errors = (uint64_t)fa_col_i64(q, 6);
    }
    fa_stmt_finalize(q);
    q = NULL;
    if (!s)
        s = fa_sq_prepare(ctx, st,
                    "SELECT kind, name, op_type, node, node_name, iter, device, stream, pid, tid, "
                    "start_ns, end_ns, correlation, external_id, grid_x, grid_y, grid_z, block_x, "
                    "block_y, block_z, registers, static_smem, dynamic_smem, local_mem, bytes_read, "
                    "bytes_written, flops, occupancy, flags, run_id, seq FROM kernels WHERE run_id = ? ORDER BY seq",
                    &q);
    if (!s) s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 1, run_id));
    while (!s && (rc = fa_stmt_step(q)) == FA_DB_ROW) {
        fa_activity a;
        memset(&a, 0, sizeof a);
        a.kind = (fa_activity_kind)fa_col_int(q, 0);
        a.name = col_intern(t, q, 1);
        a.op_type = col_intern(t, q, 2);
        a.node = fa_col_int(q, 3);
        a.node_name = col_intern(t, q, 4);
        a.iter = fa_col_int(q, 5);
        a.device = fa_col_int(q, 6);
        a.stream = fa_col_i64(q, 7);
        a.pid = fa_col_i64(q, 8);
        a.tid = fa_col_i64(q, 9);
        a.start_ns = (uint64_t)fa_col_i64(q, 10);
        a.end_ns = (uint64_t)fa_col_i64(q, 11);
        a.correlation = fa_col_i64(q, 12);
        a.external_id = fa_col_i64(q, 13);
        for (int k = 0; k < 3; k++) a.grid[k] = fa_col_int(q, 14 + k);
        for (int k = 0; k < 3; k++) a.block[k] = fa_col_int(q, 17 + k);
        a.registers = fa_col_int(q, 20);
        a.static_smem = fa_col_int(q, 21);
        a.dynamic_smem = fa_col_int(q, 22);
        a.local_mem = fa_col_int(q, 23);
        a.bytes_read = (uint64_t)fa_col_i64(q, 24);
        a.bytes_written = (uint64_t)fa_col_i64(q, 25);
        a.flops = (uint64_t)fa_col_i64(q, 26);
        a.occupancy = (float)fa_col_dbl(q, 27);
        a.flags = (unsigned)fa_col_i64(q, 28);
        if ((!fa_col_null(q, 1) && !a.name) || !fa_trace_add(t, &a))
            s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory loading run %lld", st->path, (long long)run_id);
    }
    if (!s) s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    if (s) {
        fa_trace_free(t);
        return s;
    }
    *out = t;
    return FA_OK;
}

fa_status fa_store_kernel_spans(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_kernel_span **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    /* counted first, so the array is allocated once at its size */
    fa_stmt *q;
    fa_status s = fa_store_check_kernel_times(ctx, st, run_id);
    if (s) return s;
    s = fa_sq_prepare(ctx, st, "SELECT count(*) FROM kernels WHERE run_id = ? AND kind = ?", &q);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 1, run_id));
    if (!s) s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 2, FA_ACT_KERNEL));
    int rc = FA_DB_DONE;
    if (!s) {
        rc = fa_stmt_step(q);
        s = STEP_CHECK(ctx, st, q, rc);
    }
    int64_t want = !s && rc == FA_DB_ROW ? fa_col_i64(q, 0) : 0;
    fa_stmt_finalize(q);
    if (s || want <= 0) return s;
    fa_kernel_span *sp = malloc(sizeof *sp * (size_t)want);
    if (!sp) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory loading run %lld", st->path, (long long)run_id);
    s = fa_sq_prepare(ctx, st, "SELECT iter, start_ns, end_ns FROM kernels WHERE run_id = ? AND kind = ? ORDER BY seq", &q);
    if (!s) s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 1, run_id));
    if (!s) s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 2, FA_ACT_KERNEL));
    size_t n = 0;
    while (!s && (rc = fa_stmt_step(q)) == FA_DB_ROW && n < (size_t)want) {
        sp[n].iter = fa_col_int(q, 0);
        sp[n].start_ns = (uint64_t)fa_col_i64(q, 1);
        sp[n].end_ns = (uint64_t)fa_col_i64(q, 2);
        n++;
    }
    if (!s && rc != FA_DB_ROW) s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    if (s) {
        free(sp);
        return s;
    }
    *out = sp;
    *n_out = n;
    return FA_OK;
}

/* ---- per-op table ---- */

/* One op being accumulated. Grouping key: the node id when the records carry one (our runs),
 * else the attributed op / kernel name with the op type (imports). */
typedef struct op_acc {
    fa_op_row row;
    const char *key_name, *key_op; /* node < 0 only */
    int64_t *per_iter;             /* summed ns per iteration slot (it - it_min) */
    int64_t *idle_iter;            /* idle ns before its kernels per iteration slot */
} op_acc;

/* One kernel record reduced to what the table needs. */
typedef struct op_rec {
    uint32_t op;  /* index in the op_acc array */
    int32_t iter;
    int64_t dur;  /* end - start, ns */
    int64_t start; /* the trace's clock, ns */
} op_rec;

/* Its end (start + dur), saturated for a crafted database's clock. */
static int64_t op_rec_end(const op_rec *r)
{
    int64_t e;
    return fa_i64_add(r->start, r->dur, &e) ? e : r->dur > 0 ? INT64_MAX : INT64_MIN;
}

/* Records by iteration slot, then start (then seq: stable). */
static int cmp_op_rec(const void *a, const void *b)
{
    const op_rec *x = *(op_rec *const *)a, *y = *(op_rec *const *)b;
    if (x->iter != y->iter) return (x->iter > y->iter) - (x->iter < y->iter);
    if (x->start != y->start) return (x->start > y->start) - (x->start < y->start);
    return (x > y) - (x < y);
}

typedef struct op_tab {
    op_acc *acc;
    size_t n, cap;
    int32_t *by_node;   /* node id -> acc index + 1 (0: none) */
    size_t n_by_node;
    uint32_t *slots;    /* open-addressing hash of (key_name, key_op) -> acc index + 1 */
    size_t n_slots;
} op_tab;

static int cmp_op_row(const void *a, const void *b)
{
    const fa_op_row *x = a, *y = b;
    if (x->median_ns != y->median_ns) return x->median_ns < y->median_ns ? 1 : -1;
    if (x->node != y->node) return (x->node > y->node) - (x->node < y->node);
    return strcmp(x->node_name ? x->node_name : "", y->node_name ? y->node_name : "");
}

static uint64_t op_key_hash(const char *name, const char *op)
{
    return fa_hash64(name, strlen(name)) * 31 + fa_hash64(op, strlen(op));
}

/* Index of the op for a record, creating it; -1 on OOM. */
static long op_tab_find(op_tab *tb, fa_arena *arena, int32_t node, const char *name, const char *op)
{
    if (!name) name = "";
    if (!op) op = "";
    if (node >= 0) {
        if ((size_t)node >= tb->n_by_node) {
            size_t nn = tb->n_by_node ? tb->n_by_node : 256;
            while (nn <= (size_t)node) nn *= 2;
            int32_t *p = realloc(tb->by_node, nn * sizeof *p);
            if (!p) return -1;
            memset(p + tb->n_by_node, 0, (nn - tb->n_by_node) * sizeof *p);
            tb->by_node = p;
            tb->n_by_node = nn;
        }
        if (tb->by_node[node]) return tb->by_node[node] - 1;
    } else {
        if ((tb->n + 1) * 2 > tb->n_slots) {
            size_t ns = tb->n_slots ? tb->n_slots * 2 : 256;
            uint32_t *p = calloc(ns, sizeof *p);
            if (!p) return -1;
            for (size_t i = 0; i < tb->n_slots; i++) {
                if (!tb->slots[i]) continue;
                const op_acc *a = &tb->acc[tb->slots[i] - 1];
                size_t h = op_key_hash(a->key_name, a->key_op) & (ns - 1);
                while (p[h]) h = (h + 1) & (ns - 1);
                p[h] = tb->slots[i];
            }
            free(tb->slots);
            tb->slots = p;
            tb->n_slots = ns;
        }
        size_t h = op_key_hash(name, op) & (tb->n_slots - 1);
        while (tb->slots[h]) {
            const op_acc *a = &tb->acc[tb->slots[h] - 1];
            if (!strcmp(a->key_name, name) && !strcmp(a->key_op, op)) return tb->slots[h] - 1;
            h = (h + 1) & (tb->n_slots - 1);
        }
    }
    if (tb->n == tb->cap) {
        size_t nc = tb->cap ? tb->cap * 2 : 64;
        op_acc *p = realloc(tb->acc, nc * sizeof *p);
        if (!p) return -1;
        tb->acc = p;
        tb->cap = nc;
    }
    op_acc *a = &tb->acc[tb->n];
    memset(a, 0, sizeof *a);
    a->row.node = node;
    if (node < 0) {
        a->key_name = fa_arena_strdup(arena, name);
        a->key_op = fa_arena_strdup(arena, op);
        if (!a->key_name || !a->key_op) return -1;
        size_t h = op_key_hash(name, op) & (tb->n_slots - 1);
        while (tb->slots[h]) h = (h + 1) & (tb->n_slots - 1);
        tb->slots[h] = (uint32_t)tb->n + 1;
    } else {
        tb->by_node[node] = (int32_t)tb->n + 1;
    }
    return (long)tb->n++;
}

/* The records of one run's kernels as they are read (op_scan_add), then the table
 * (op_scan_finish): shared by the run database's reader and a trace held in memory. */
typedef struct op_scan {
    op_tab tb;
    op_rec *recs;
    size_t n_recs, cap_recs;
    int32_t it_min, it_max;
} op_scan;

#define OP_SCAN_INIT {.it_min = INT32_MAX, .it_max = -1}

/* One kernel record (node -1 when none; name and op may be NULL). false: out of memory. */
static bool op_scan_add(op_scan *sc, fa_arena *arena, int32_t node, const char *nm, const char *op, int32_t it, int64_t dur,
                        int64_t start)
{
    long idx = op_tab_find(&sc->tb, arena, node, nm, op);
    if (idx < 0) return false;
    op_acc *a = &sc->tb.acc[idx];
    /* display names: the first non-NULL seen */
    if (!a->row.node_name && nm && !(a->row.node_name = fa_arena_strdup(arena, nm))) return false;
    if (!a->row.op_type && op && !(a->row.op_type = fa_arena_strdup(arena, op))) return false;
    if (sc->n_recs == sc->cap_recs) {
        size_t nc = sc->cap_recs ? sc->cap_recs * 2 : 4096;
        op_rec *p = realloc(sc->recs, nc * sizeof *p);
        if (!p) return false;
        sc->recs = p;
        sc->cap_recs = nc;
    }
    sc->recs[sc->n_recs++] = (op_rec){(uint32_t)idx, it, dur, start};
    if (it >= 0 && it < sc->it_min) sc->it_min = it;
    if (it > sc->it_max) sc->it_max = it;
    return true;
}

/* The rows of fa_store_op_table from the records scanned (s: the scan's own status, passed on);
 * what names the source in messages ("PATH: run N"). Frees the scan's memory either way. */
static fa_status op_scan_finish(fa_ctx *ctx, fa_status s, op_scan *sc, const char *what, fa_arena *arena, fa_op_row **out,
                                size_t *n_out, int *n_iters)
{
    op_tab tb = sc->tb;
    op_rec *recs = sc->recs;
    size_t n_recs = sc->n_recs;
    int32_t it_min = sc->it_min, it_max = sc->it_max;
    /* Timed iterations: records with iter >= 0; a trace without any (an import) is one
     * iteration made of all its kernel records. */
    bool timed = it_max >= 0;
    int64_t span = timed ? (int64_t)it_max - it_min + 1 : 1;
    if (!s && span > FA_STORE_ITER_MAX + 2)
        s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s has iteration numbers %d..%d, too wide for a per-op table", what,
                         (int)it_min, (int)it_max);
    bool *present = NULL;
    int64_t *samples = NULL;
    if (!s) {
        present = calloc((size_t)span, sizeof *present);
        samples = malloc((size_t)span * sizeof *samples);
        if (!present || !samples) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", what);
    }
    for (size_t i = 0; !s && i < tb.n; i++) {
        tb.acc[i].per_iter = fa_arena_alloc(arena, (size_t)span * sizeof *tb.acc[i].per_iter);
        tb.acc[i].idle_iter = fa_arena_alloc(arena, (size_t)span * sizeof *tb.acc[i].idle_iter);
        if (!tb.acc[i].per_iter || !tb.acc[i].idle_iter) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", what);
    }
    for (size_t i = 0; !s && i < n_recs; i++) {
        const op_rec *r = &recs[i];
        if (timed && r->iter < 0) continue; /* warm-up */
        int64_t slot = timed ? r->iter - it_min : 0;
        present[slot] = true;
        tb.acc[r->op].per_iter[slot] += r->dur;
        tb.acc[r->op].row.kernels++;
    }
    /* The idle time before each kernel, by the analyzer's rule for the iteration's dispatch gaps
     * (analyzer/analyzer.c: in start order, start minus the latest end of the kernels that started
     * before it, when positive), so an iteration's idle times over every op sum to its gap. The
     * records are in seq order; sorted here by slot and start when they are not already. */
    op_rec **ord = NULL;
    size_t n_ord = 0;
    if (!s && n_recs) {
        ord = malloc(n_recs * sizeof *ord);
        if (!ord) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", what);
    }
    for (size_t i = 0; !s && i < n_recs; i++) {
        op_rec *r = &recs[i];
        if (timed && r->iter < 0) continue;
        r->iter = timed ? r->iter - it_min : 0; /* from here on: its iteration slot */
        ord[n_ord++] = r;
    }
    bool sorted = true;
    for (size_t i = 1; !s && i < n_ord && sorted; i++) sorted = cmp_op_rec(&ord[i - 1], &ord[i]) <= 0;
    if (!s && !sorted) qsort(ord, n_ord, sizeof *ord, cmp_op_rec);
    for (size_t i = 0; !s && i < n_ord;) {
        size_t j = i;
        int64_t last_end = op_rec_end(ord[i]), gap;
        for (j = i + 1; j < n_ord && ord[j]->iter == ord[i]->iter; j++) {
            const op_rec *r = ord[j];
            int64_t *idle = &tb.acc[r->op].idle_iter[r->iter];
            if (r->start > last_end) /* a crafted clock's figures saturate */
                *idle = fa_i64_sub(r->start, last_end, &gap) && fa_i64_add(*idle, gap, &gap) ? gap : INT64_MAX;
            if (op_rec_end(r) > last_end) last_end = op_rec_end(r);
        }
        i = j;
    }
    free(ord);
    /* Rows, medians over the iteration numbers that occur (a sparse numbering leaves gaps
     * that are not iterations); an op absent from an iteration counts 0 there. Ops seen only
     * in warm-up are dropped. */
    fa_op_row *rows = NULL;
    size_t n = 0;
    int iters = 0;
    for (int64_t k = 0; !s && k < span; k++) iters += present[k];
    if (!s) {
        rows = fa_arena_alloc(arena, (tb.n ? tb.n : 1) * sizeof *rows);
        if (!rows) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", what);
    }
    double total = 0;
    for (size_t i = 0; !s && i < tb.n; i++) {
        if (!tb.acc[i].row.kernels) continue;
        size_t m = 0;
        for (int64_t k = 0; k < span; k++)
            if (present[k]) { /* the present slots to the front: the row's samples, in iteration order */
                tb.acc[i].idle_iter[m] = tb.acc[i].idle_iter[k];
                samples[m] = tb.acc[i].per_iter[m] = tb.acc[i].per_iter[k];
                m++;
            }
        tb.acc[i].row.iter_ns = tb.acc[i].per_iter;
        tb.acc[i].row.idle_ns = tb.acc[i].idle_iter;
        tb.acc[i].row.median_ns = fa_stats_median_i64(samples, m);
        rows[n] = tb.acc[i].row;
        total += (double)rows[n].median_ns;
        n++;
    }
    for (size_t i = 0; !s && i < n; i++) rows[i].share = total > 0 ? (double)rows[i].median_ns / total : 0;
    if (!s && n) qsort(rows, n, sizeof *rows, cmp_op_row);
    free(present);
    free(samples);
    free(recs);
    free(tb.acc);
    free(tb.by_node);
    free(tb.slots);
    if (s) return s;
    *out = rows;
    *n_out = n;
    if (n_iters) *n_iters = iters;
    return FA_OK;
}

fa_status fa_store_op_table(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena, fa_op_row **out,
                            size_t *n_out, int *n_iters)
{
    fa_status s = check_run(ctx, st, run_id);
    if (!s) s = fa_store_check_kernel_times(ctx, st, run_id);
    if (s) return s;
    /* One scan in seq order (primary-key order, no sort); aggregation in memory. */
    fa_stmt *q;
    s = fa_sq_prepare(ctx, st,
                "SELECT node, coalesce(node_name, name), op_type, iter, end_ns - start_ns, start_ns FROM kernels "
                "WHERE run_id = ? AND kind = ?",
                &q);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 1, run_id));
    if (!s) s = FA_SQL_CHECK(ctx, st, fa_stmt_bind_i64(q, 2, FA_ACT_KERNEL));
    /* the table is indexed by node id: a crafted id must not size it (2^31 ids: 8 GB), nor wrap
     * (read as int64 before it is narrowed); a run with a graph bounds it by its node count */
    int64_t n_nodes = 0;
    if (!s) s = fa_store_count_nodes(ctx, st, run_id, &n_nodes);
    int64_t node_max = n_nodes > 0 ? n_nodes : FA_STORE_NODE_ID_MAX;
    op_scan sc = OP_SCAN_INIT;
    int rc = FA_DB_DONE;
    while (!s && (rc = fa_stmt_step(q)) == FA_DB_ROW) {
        int64_t node = fa_col_i64(q, 0);
        if (node >= node_max || node < INT32_MIN) {
            s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: run %lld: table kernels, column node: node id %lld is beyond the %lld "
                             "nodes %s", st->path, (long long)run_id, (long long)node, (long long)node_max,
                             n_nodes > 0 ? "of the run's graph" : "a graph may have");
            break;
        }
        if (!op_scan_add(&sc, arena, node, fa_col_text(q, 1), fa_col_text(q, 2), fa_col_int(q, 3), fa_col_i64(q, 4),
                         fa_col_i64(q, 5)))
            s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    }
    if (!s) s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    char what[4200];
    snprintf(what, sizeof what, "%s: run %lld", st->path, (long long)run_id);
    return op_scan_finish(ctx, s, &sc, what, arena, out, n_out, n_iters);
}

fa_status fa_op_table_of_trace(fa_ctx *ctx, const fa_trace *t, fa_arena *arena, fa_op_row **out, size_t *n_out, int *n_iters)
{
    op_scan sc = OP_SCAN_INIT;
    fa_status s = FA_OK;
    for (size_t i = 0; i < t->n_acts && !s; i++) {
        const fa_activity *a = &t->acts[i];
        if (a->kind != FA_ACT_KERNEL) continue;
        if (a->node >= FA_STORE_NODE_ID_MAX) continue; /* our own executor's records: never */
        if (!op_scan_add(&sc, arena, a->node, a->node_name ? a->node_name : a->name, a->op_type, a->iter,
                         (int64_t)(a->end_ns - a->start_ns), (int64_t)a->start_ns))
            s = fa_ctx_error(ctx, FA_ERR_NOMEM, "a trace in memory: out of memory");
    }
    return op_scan_finish(ctx, s, &sc, "a trace in memory", arena, out, n_out, n_iters);
}

/* ---- device ceilings ---- */

fa_status fa_store_put_ceiling(fa_ctx *ctx, fa_store *st, const fa_ceiling *c)
{
    fa_status s = fa_sq_require_writable(ctx, st, "store a device ceiling");
    if (s) return s;
    if (!c->device_key || !c->name || !c->kind || !c->unit || !c->source)
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: ceiling needs device_key, name, kind, unit and source", st->path);
    bool own;
    s = fa_sq_tx_open(ctx, st, &own);
    if (s) return s;
    fa_stmt *q = NULL;
    s = fa_sq_prepare(ctx, st,
                "INSERT INTO device_ceilings (device_key, name, kind, value, unit, source, "
                "measured_at_ns, detail) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (device_key, name) DO UPDATE SET "
                "kind=excluded.kind, value=excluded.value, unit=excluded.unit, source=excluded.source, "
                "measured_at_ns=excluded.measured_at_ns, detail=excluded.detail",
                &q);
    if (!s) {
        binder b;
        b_start(&b, q);
        b_txt(&b, c->device_key);
        b_txt(&b, c->name);
        b_txt(&b, c->kind);
        b_dbl(&b, c->value);
        b_txt(&b, c->unit);
        b_txt(&b, c->source);
        b_i64(&b, c->measured_at_ns ? c->measured_at_ns : fa_sq_unix_now_ns());
        b_txt(&b, c->detail);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    }
    fa_stmt_finalize(q);
    return fa_sq_tx_close(ctx, st, own, s);
}

fa_status fa_store_delete_ceilings(fa_ctx *ctx, fa_store *st, const char *device_key, const char *name_prefix)
{
    fa_status s = fa_sq_require_writable(ctx, st, "replace device ceilings");
    if (s) return s;
    if (!device_key || !name_prefix || !name_prefix[0])
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: deleting ceilings needs a device key and a name prefix", st->path);
    bool own;
    s = fa_sq_tx_open(ctx, st, &own);
    if (s) return s;
    fa_stmt *q = NULL;
    /* a prefix compare, not LIKE: '_' in "cache_" is a LIKE wildcard */
    s = fa_sq_prepare(ctx, st, "DELETE FROM device_ceilings WHERE device_key = ?1 AND substr(name, 1, length(?2)) = ?2", &q);
    if (!s) {
        binder b;
        b_start(&b, q);
        b_txt(&b, device_key);
        b_txt(&b, name_prefix);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    }
    fa_stmt_finalize(q);
    return fa_sq_tx_close(ctx, st, own, s);
}

static fa_status decode_ceiling(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    (void)user;
    fa_ceiling *c = row;
    c->device_key = fa_sq_col_str(q, 0, arena);
    c->name = fa_sq_col_str(q, 1, arena);
    c->kind = fa_sq_col_str(q, 2, arena);
    c->value = fa_col_dbl(q, 3);
    c->unit = fa_sq_col_str(q, 4, arena);
    c->source = fa_sq_col_str(q, 5, arena);
    c->measured_at_ns = fa_col_i64(q, 6);
    c->detail = fa_sq_col_str(q, 7, arena);
    if (!c->device_key || !c->name || !c->kind || !c->unit || !c->source)
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    return FA_OK;
}

fa_status fa_store_get_ceilings(fa_ctx *ctx, fa_store *st, const char *device_key, fa_arena *arena,
                                fa_ceiling **out, size_t *n_out)
{
    fa_stmt *q;
    fa_status s = fa_sq_prepare(ctx, st,
                          "SELECT device_key, name, kind, value, unit, source, measured_at_ns, detail "
                          "FROM device_ceilings WHERE CAST(?1 AS TEXT) IS NULL OR device_key = ?1 ORDER BY device_key, name",
                          &q);
    if (s) return s;
    binder b;
    b_start(&b, q);
    b_txt(&b, device_key);
    return fa_sq_collect_rows(ctx, st, q, b.rc, arena, sizeof **out, decode_ceiling, NULL, (void **)out, n_out);
}
