/* store/sqlite — the embedded SQLite back end of the run database (the default): the file's
 * checks before SQLite touches it, WAL and pragmas, PRAGMA user_version migrations, and the
 * statement slots of fa_store_backend over SQLite's prepared statements. */
#include "store-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUSY_TIMEOUT_MS 10000

_Static_assert(SQLITE_OK == FA_DB_OK && SQLITE_ROW == FA_DB_ROW && SQLITE_DONE == FA_DB_DONE,
               "the SQLite back end returns SQLite's result codes as they are");

/* What a result column must hold, from the declaration of the table column it reads (SQLite
 * stores any type in any column, and a file from elsewhere may hold anything): 'i' INTEGER, 'r'
 * REAL (or an integer), 't' TEXT; 0 for a computed column (any type but a blob). */
typedef struct sq_col {
    char kind;
    bool notnull; /* declared NOT NULL */
    bool pk;      /* part of the table's primary key: names the row in a message */
    char dom;     /* FA_DOM_* of the table column it reads (store/domain.c) */
} sq_col;

typedef struct sq_stmt {
    fa_stmt base;
    sqlite3_stmt *q;
    int n_cols;
    sq_col *cols;
    int64_t rows;     /* rows returned since the last reset */
} sq_stmt;

#define SQ(q) (((sq_stmt *)(q))->q)

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* SQLite's progress handler (called every 1000 virtual-machine instructions): ends a step that
 * runs past the store's budget. A statement run on the raw handle (white-box tests) has its
 * budget from its first call here. */
static int sq_progress(void *arg)
{
    fa_store *st = arg;
    int64_t now = mono_ns();
    if (!st->step_deadline_ns) st->step_deadline_ns = now + st->step_limit_ns;
    if (now <= st->step_deadline_ns) return 0;
    st->interrupted = true;
    return 1;
}

static void sq_arm(fa_store *st)
{
    st->interrupted = false;
    st->step_deadline_ns = mono_ns() + st->step_limit_ns;
}

/* "PATH: a statement ran longer than N s" when the progress handler ended the call. */
static int sq_after(fa_store *st, int rc)
{
    st->step_deadline_ns = 0;
    if ((rc & 0xff) == SQLITE_INTERRUPT && st->interrupted && !st->fault) {
        fa_buf m;
        fa_buf_init(&m);
        fa_buf_printf(&m,
                      "%s: a statement on the run database ran longer than %.0f s and was stopped (a crafted or "
                      "damaged database; FA_DB_STEP_LIMIT_S sets the limit)",
                      st->path, (double)st->step_limit_ns / 1e9);
        st->fault = m.data;
    }
    return rc;
}

static int sq_exec(fa_store *st, const char *sql)
{
    free(st->fault); /* a new call: an earlier refusal nobody reported is not this one's */
    st->fault = NULL;
    sq_arm(st);
    return sq_after(st, sqlite3_exec(st->db, sql, NULL, NULL, NULL));
}

static int sq_prepare(fa_store *st, const char *sql, fa_stmt **out)
{
    *out = NULL;
    sq_stmt *h = calloc(1, sizeof *h);
    if (!h) return SQLITE_NOMEM;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &h->q, NULL);
    h->n_cols = rc == SQLITE_OK ? sqlite3_column_count(h->q) : 0;
    if (rc == SQLITE_OK && h->n_cols > 0 && !(h->cols = calloc((size_t)h->n_cols, sizeof *h->cols))) rc = SQLITE_NOMEM;
    for (int i = 0; rc == SQLITE_OK && i < h->n_cols; i++) {
        /* the table column a result column reads (SQLITE_ENABLE_COLUMN_METADATA, as Debian builds
         * SQLite); NULL for a computed one */
        const char *tb = sqlite3_column_table_name(h->q, i), *col = sqlite3_column_origin_name(h->q, i);
        const char *dbn = sqlite3_column_database_name(h->q, i), *decl = NULL;
        int notnull = 0, pk = 0;
        if (!tb || !col || sqlite3_table_column_metadata(st->db, dbn, tb, col, &decl, NULL, &notnull, &pk, NULL) != SQLITE_OK)
            continue;
        h->cols[i].kind = !decl ? 0 : !strcasecmp(decl, "INTEGER") ? 'i' : !strcasecmp(decl, "REAL") ? 'r'
                                 : !strcasecmp(decl, "TEXT") ? 't' : 0;
        h->cols[i].notnull = notnull != 0;
        h->cols[i].pk = pk != 0;
        h->cols[i].dom = fa_store_column_domain(tb, col);
    }
    if (rc != SQLITE_OK) {
        sqlite3_finalize(h->q);
        free(h->cols);
        free(h);
        return rc;
    }
    h->base.be = &fa_store_sqlite_backend;
    h->base.st = st;
    *out = &h->base;
    return SQLITE_OK;
}

static const char *type_word(int t)
{
    switch (t) {
    case SQLITE_INTEGER: return "an integer";
    case SQLITE_FLOAT: return "a real number";
    case SQLITE_TEXT: return "text";
    case SQLITE_BLOB: return "a blob";
    default: return "NULL";
    }
}

/* Record "PATH: table T, row R, column C: WHAT" as the store's fault and return the code the
 * caller's check turns into it (col -1: no one column). R is the row's primary-key values the
 * statement reads, else its position in the result. */
static int sq_fault(sq_stmt *h, int col, bool have_row, const char *what)
{
    fa_store *st = h->base.st;
    fa_buf m;
    fa_buf_init(&m);
    const char *tb = col >= 0 ? sqlite3_column_table_name(h->q, col) : NULL;
    for (int i = 0; !tb && i < h->n_cols; i++) tb = sqlite3_column_table_name(h->q, i);
    fa_buf_printf(&m, "%s: ", st->path);
    if (tb) {
        fa_buf_puts(&m, "table ");
        fa_store_quote_name(&m, tb, strlen(tb));
        fa_buf_puts(&m, ", ");
    }
    int keys = 0;
    for (int i = 0; i < h->n_cols; i++) {
        if (!have_row || !h->cols[i].pk || !tb || !sqlite3_column_table_name(h->q, i) || strcmp(sqlite3_column_table_name(h->q, i), tb))
            continue;
        int t = sqlite3_column_type(h->q, i);
        if (t != SQLITE_INTEGER && t != SQLITE_TEXT) continue;
        const char *o = sqlite3_column_origin_name(h->q, i);
        fa_buf_puts(&m, keys++ ? ", " : "row (");
        fa_buf_printf(&m, "%s ", o ? o : "?");
        if (t == SQLITE_INTEGER) fa_buf_printf(&m, "%lld", (long long)sqlite3_column_int64(h->q, i));
        else fa_store_quote_name(&m, (const char *)sqlite3_column_text(h->q, i), (size_t)sqlite3_column_bytes(h->q, i));
    }
    if (keys) fa_buf_puts(&m, ")");
    else fa_buf_printf(&m, "row #%lld of the query", (long long)h->rows);
    if (col >= 0) {
        const char *o = sqlite3_column_origin_name(h->q, col);
        fa_buf_puts(&m, ", column ");
        if (!o) o = sqlite3_column_name(h->q, col);
        fa_store_quote_name(&m, o ? o : "?", o ? strlen(o) : 1);
    }
    fa_buf_printf(&m, ": %s; the database was damaged, or not written by fuse-advise", what);
    free(st->fault);
    st->fault = m.oom ? NULL : m.data;
    if (m.oom) fa_buf_free(&m);
    return m.oom ? SQLITE_NOMEM : SQLITE_CORRUPT;
}

/* Every value of the current row against its column's declaration, its domain (store/domain.c) and
 * FA_STORE_VALUE_MAX. */
static int sq_row_check(sq_stmt *h)
{
    for (int i = 0; i < h->n_cols; i++) {
        const sq_col *c = &h->cols[i];
        int t = sqlite3_column_type(h->q, i);
        char what[160];
        if (t == SQLITE_NULL) {
            if (c->notnull) return sq_fault(h, i, true, "NULL where the schema requires a value");
            continue;
        }
        bool ok = c->kind == 'i' ? t == SQLITE_INTEGER
                  : c->kind == 'r' ? t == SQLITE_FLOAT || t == SQLITE_INTEGER
                  : c->kind == 't' ? t == SQLITE_TEXT
                                   : t != SQLITE_BLOB;
        if (!ok) {
            snprintf(what, sizeof what, "%s where the schema has %s", type_word(t),
                     c->kind == 'i' ? "an integer" : c->kind == 'r' ? "a real number" : c->kind == 't' ? "text" : "no blob");
            return sq_fault(h, i, true, what);
        }
        if (c->dom && (t == SQLITE_INTEGER || t == SQLITE_FLOAT)) {
            const char *bad = fa_store_domain_fault(c->dom, t == SQLITE_INTEGER, sqlite3_column_int64(h->q, i),
                                                    sqlite3_column_double(h->q, i), what, sizeof what);
            if (bad) return sq_fault(h, i, true, bad);
        }
        if (t == SQLITE_TEXT && (size_t)sqlite3_column_bytes(h->q, i) > FA_STORE_VALUE_MAX) {
            snprintf(what, sizeof what, "a value of %d bytes, over the %zu MiB limit on one value",
                     sqlite3_column_bytes(h->q, i), FA_STORE_VALUE_MAX >> 20);
            return sq_fault(h, i, true, what);
        }
    }
    return SQLITE_ROW;
}

static int sq_prepare_bulk(fa_store *st, const char *table, const char *cols, int n, fa_stmt **out)
{
    fa_buf b;
    fa_buf_init(&b);
    fa_buf_printf(&b, "INSERT INTO %s (%s) VALUES (", table, cols);
    for (int i = 0; i < n; i++) fa_buf_puts(&b, i ? ",?" : "?");
    fa_buf_puts(&b, ")");
    int rc = b.oom ? SQLITE_NOMEM : sq_prepare(st, b.data, out);
    fa_buf_free(&b);
    return rc;
}

static int sq_bulk_end(fa_stmt *q) { (void)q; return SQLITE_OK; }
static int sq_reset(fa_stmt *q)
{
    ((sq_stmt *)q)->rows = 0;
    return sqlite3_reset(SQ(q));
}
static int sq_bind_i64(fa_stmt *q, int i, int64_t v) { return sqlite3_bind_int64(SQ(q), i, v); }
static int sq_bind_dbl(fa_stmt *q, int i, double v) { return sqlite3_bind_double(SQ(q), i, v); }
/* SQLITE_STATIC: callers keep v alive until the statement is stepped (the binder's contract). */
static int sq_bind_txt(fa_stmt *q, int i, const char *v)
{
    if (!v) return sqlite3_bind_null(SQ(q), i);
    size_t n = strlen(v);
    if (n > FA_STORE_VALUE_MAX) { /* what could not be read back is not written */
        fa_buf m;
        fa_buf_init(&m);
        fa_buf_printf(&m, "%s: a value of %zu bytes for parameter %d of \"%.60s...\", over the %zu MiB limit on one value",
                      q->st->path, n, i, sqlite3_sql(SQ(q)), FA_STORE_VALUE_MAX >> 20);
        free(q->st->fault);
        q->st->fault = m.data;
        return SQLITE_TOOBIG;
    }
    return sqlite3_bind_text(SQ(q), i, v, (int)n, SQLITE_STATIC);
}
static int sq_step(fa_stmt *q)
{
    sq_stmt *h = (sq_stmt *)q;
    free(q->st->fault); /* a new call: an earlier refusal nobody reported is not this one's */
    q->st->fault = NULL;
    sq_arm(q->st);
    int rc = sq_after(q->st, sqlite3_step(h->q));
    if (rc == SQLITE_ROW) {
        h->rows++;
        rc = sq_row_check(h);
    } else if ((rc & 0xff) == SQLITE_TOOBIG && !q->st->fault) {
        char what[120];
        snprintf(what, sizeof what, "a value longer than %zu MiB (SQLite refuses to load it)", FA_STORE_VALUE_HARD_MAX >> 20);
        h->rows++;
        rc = sq_fault(h, -1, false, what);
    }
    return rc;
}
static int64_t sq_col_i64(fa_stmt *q, int c) { return sqlite3_column_int64(SQ(q), c); }
static double sq_col_dbl(fa_stmt *q, int c) { return sqlite3_column_double(SQ(q), c); }
static const char *sq_col_text(fa_stmt *q, int c) { return (const char *)sqlite3_column_text(SQ(q), c); }
static size_t sq_col_bytes(fa_stmt *q, int c) { return (size_t)sqlite3_column_bytes(SQ(q), c); }
static bool sq_col_null(fa_stmt *q, int c) { return sqlite3_column_type(SQ(q), c) == SQLITE_NULL; }
static fa_db_kind sq_col_kind(fa_stmt *q, int c)
{
    switch (sqlite3_column_type(SQ(q), c)) {
    case SQLITE_INTEGER: return FA_DB_INTEGER;
    case SQLITE_FLOAT: return FA_DB_FLOAT;
    case SQLITE_NULL: return FA_DB_NULL;
    default: return FA_DB_TEXT;
    }
}
static void sq_finalize(fa_stmt *q)
{
    sqlite3_finalize(SQ(q));
    free(((sq_stmt *)q)->cols);
    free(q);
}
static const char *sq_sql(fa_stmt *q) { return sqlite3_sql(SQ(q)); }
static int64_t sq_changes(fa_store *st) { return sqlite3_changes(st->db); }
static bool sq_in_tx(fa_store *st) { return st->db && !sqlite3_get_autocommit(st->db); }
static void sq_close(fa_store *st)
{
    if (!st->db) return;
    if (sq_in_tx(st)) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close_v2(st->db);
    st->db = NULL;
}

static fa_status sq_error(fa_ctx *ctx, fa_store *st, int rc, const char *call, const char *file, int line)
{
    const char *path = st && st->path ? st->path : "database";
    const char *msg = st && st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc);
    fa_status s = FA_ERR_IO;
    int prim = rc & 0xff;
    if (prim == SQLITE_NOTADB || prim == SQLITE_CORRUPT) s = FA_ERR_INPUT;
    else if (prim == SQLITE_NOMEM) s = FA_ERR_NOMEM;
    else if (prim == SQLITE_MISUSE || prim == SQLITE_RANGE) s = FA_ERR_INTERNAL;
    const char *hint = "";
    if (prim == SQLITE_BUSY || prim == SQLITE_LOCKED)
        hint = " (another process held the database longer than the 10 s busy timeout)";
    else if (prim == SQLITE_READONLY)
        hint = " (the database file or its folder is read-only)";
    else if ((prim == SQLITE_CORRUPT || prim == SQLITE_NOTADB) && st && st->path) {
        /* SQLite applies a -wal beside the file as part of it: one planted or left from another
         * database makes a sound file read as malformed; say so, naming it */
        char wal[4200];
        struct stat wb;
        snprintf(wal, sizeof wal, "%s-wal", st->path);
        /* only a -wal that was there before this open: one SQLite just made is empty */
        if (st->wal_before && stat(wal, &wb) == 0 && wb.st_size > 0)
            hint = " (SQLite read it together with the -wal file beside it, which may not belong to it)";
    }
    /* The message names what the user can act on (the file, SQLite's reason, a hint); which
     * call in which of our source files failed goes to the debug log only. */
    fa_log(ctx, FA_LOG_DEBUG, "%s: %s failed at %s:%d: %s", path, call, file, line, sqlite3_errstr(rc));
    const char *es = sqlite3_errstr(rc);
    if (!strcmp(msg, es)) return fa_ctx_error(ctx, s, "%s: run database error: %s%s", path, msg, hint);
    return fa_ctx_error(ctx, s, "%s: run database error: %s [%s]%s", path, msg, es, hint);
}

static fa_status migrate(fa_ctx *ctx, fa_store *st, int64_t from)
{
    if (from < 0 || from > FA_STORE_SCHEMA_VERSION)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: no migration from schema version %lld", st->path, (long long)from);
    for (int64_t v = from; v < FA_STORE_SCHEMA_VERSION; v++) {
        fa_status s = fa_sq_exec_sql(ctx, st, "BEGIN IMMEDIATE");
        if (s) return fa_ctx_wrap(ctx, s, "migrating schema %lld -> %lld: ", (long long)v, (long long)v + 1);
        /* Another process may have migrated while we waited for the lock. */
        int64_t now;
        s = fa_sq_query_i64(ctx, st, "PRAGMA user_version", &now);
        if (!s && now > v) {
            fa_db_exec(st, "ROLLBACK");
            if (now > FA_STORE_SCHEMA_VERSION)
                return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "%s: another process set schema version %lld, newer than %d",
                                    st->path, (long long)now, FA_STORE_SCHEMA_VERSION);
            v = now - 1;
            continue;
        }
        if (!s && now < v) {
            fa_db_exec(st, "ROLLBACK");
            return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: schema version went back to %lld while migrating", st->path,
                                (long long)now);
        }
        if (!s) s = fa_sq_exec_sql(ctx, st, fa_store_migrations[v]);
        if (!s) {
            char sql[64];
            snprintf(sql, sizeof sql, "PRAGMA user_version = %lld", (long long)v + 1);
            s = fa_sq_exec_sql(ctx, st, sql);
        }
        if (!s) s = fa_sq_exec_sql(ctx, st, "COMMIT");
        if (s) {
            fa_db_exec(st, "ROLLBACK");
            return fa_ctx_wrap(ctx, s, "migrating schema %lld -> %lld: ", (long long)v, (long long)v + 1);
        }
    }
    return FA_OK;
}

/* user_version is a signed 32-bit header field any program can set: a negative one would index
 * the migration table out of bounds, a newer one needs a newer build. Refuse every version this
 * build does not know (the file is not modified). */
static fa_status version_known(fa_ctx *ctx, const char *path, int64_t version)
{
    if (version < 0)
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: database schema version %lld is not a version any fuse-advise writes "
                            "(this one knows 0..%d); the file was not modified",
                            path, (long long)version, FA_STORE_SCHEMA_VERSION);
    if (version > FA_STORE_SCHEMA_VERSION)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED,
                            "%s: database schema version %lld is newer than this fuse-advise "
                            "(%s) supports (version %d); use a newer fuse-advise, the file was not modified",
                            path, (long long)version, FA_VERSION_STRING, FA_STORE_SCHEMA_VERSION);
    return FA_OK;
}


static bool file_not_writable(const char *path, const struct stat *sb)
{
    /* root passes access(W_OK) on any file: also honour a file with no write bit at all. */
    return access(path, W_OK) != 0 || (sb->st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0;
}

fa_status fa_store_sqlite_open(fa_ctx *ctx, fa_store *st, const char *path, unsigned flags)
{
    /* a link planted by another user in a folder they can write chooses where the database is
     * created or which one is read: not followed (core.h fa_link_owner_check) */
    fa_status lk = fa_link_owner_check(ctx, path, "open the run database through");
    if (lk) return lk;
    struct stat sb;
    bool exists = stat(path, &sb) == 0;
    bool readonly = (flags & FA_STORE_READONLY) != 0;
    if (!exists) {
        if (errno != ENOENT)
            return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        if (flags & (FA_STORE_NO_CREATE | FA_STORE_READONLY))
            return fa_ctx_error(ctx, FA_ERR_INPUT,
                                "%s: no run database here (run a model first, or pass --db PATH)", path);
    } else {
        if (!S_ISREG(sb.st_mode))
            return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: not a regular file", path);
        /* an empty file is a new database only to a verb that may create one: a verb that reads
         * (`runs`, `show`) wrote a schema into a user's zero-byte file, or called it "needing
         * migration" */
        if (sb.st_size == 0 && (flags & (FA_STORE_NO_CREATE | FA_STORE_READONLY)))
            return fa_ctx_error(ctx, FA_ERR_INPUT,
                                "%s: an empty file, not a run database (this verb only reads one; `run` or `import` "
                                "with --db PATH makes one)",
                                path);
        /* Refuse a non-SQLite file before SQLite touches it (SQLite file format, section 1.3:
         * the header starts with "SQLite format 3\0"). An empty file is a new database. */
        if (sb.st_size > 0) {
            unsigned char hdr[100] = {0};
            int fd = -1;
            fa_status os = fa_open_input(ctx, path, 0, &fd); /* swapped for a FIFO since the stat: refused */
            if (os) return os;
            ssize_t got = read(fd, hdr, sizeof hdr);
            close(fd);
            if (got < 16 || memcmp(hdr, "SQLite format 3", 16) != 0)
                return fa_ctx_error(ctx, FA_ERR_INPUT,
                                    "%s: not an SQLite database (no \"SQLite format 3\" header), "
                                    "refusing to use it as the run database",
                                    path);
            /* user_version: a big-endian signed 32-bit integer at header offset 60 (SQLite file
             * format, section 1.3). Checked here, before SQLite opens the file and creates its
             * -wal/-shm, so a version this build does not know leaves the file and its folder
             * exactly as they were. With a -wal present page 1 may be newer there: SQLite's
             * own PRAGMA user_version below decides. */
            char wal[4200];
            struct stat wb;
            snprintf(wal, sizeof wal, "%s-wal", path);
            if (got == (ssize_t)sizeof hdr && stat(wal, &wb) != 0) {
                int32_t v = (int32_t)(((uint32_t)hdr[60] << 24) | ((uint32_t)hdr[61] << 16) | ((uint32_t)hdr[62] << 8) |
                                      (uint32_t)hdr[63]);
                fa_status vs = version_known(ctx, path, v);
                if (vs) return vs;
            }
        }
        if (file_not_writable(path, &sb)) readonly = true;
    }
    /* SQLite opens PATH-journal / -wal / -shm by name: a FIFO planted there would block it forever */
    fa_status cs = fa_sqlite_companions_check(ctx, path);
    if (cs) return cs;

    st->readonly = readonly;
    {
        char side[4200];
        struct stat cb;
        snprintf(side, sizeof side, "%s-wal", path);
        st->wal_before = lstat(side, &cb) == 0;
        snprintf(side, sizeof side, "%s-shm", path);
        st->shm_before = lstat(side, &cb) == 0;
    }
    st->sq_opened = true;
    /* NOMUTEX: a store is used by one thread at a time (one fa_ctx per thread of work). */
    int oflags = (readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) |
                 SQLITE_OPEN_NOMUTEX;
    /* A read-only open of a WAL database makes SQLite create PATH-wal and PATH-shm (with the
     * file's own mode: 0444 files then break the owner's later writes), and fails where they
     * cannot be created (a read-only filesystem). With no -wal file there is nothing but the
     * main file to read: open it immutable (SQLite URI parameter "immutable=1": no locks, no
     * -wal/-shm), which leaves nothing behind. With a -wal present (a writer is active or
     * crashed) its content is needed: the ordinary read-only open. */
    char *uri = NULL, lit[4200];
    /* the very file the checks above looked at, never a URI or ":memory:" */
    const char *lit_path = fa_sqlite_literal_path(path, lit, sizeof lit);
    if (!lit_path) return fa_ctx_error(ctx, FA_ERR_INPUT, "%.200s...: path too long", path);
    if (readonly && exists) {
        char wal[4200];
        struct stat wb;
        snprintf(wal, sizeof wal, "%s-wal", path);
        if (stat(wal, &wb) != 0 && errno == ENOENT) uri = fa_sqlite_immutable_uri(path);
    }
    fa_status s = uri ? FA_SQL_CHECK(ctx, st, sqlite3_open_v2(uri, &st->db, oflags | SQLITE_OPEN_URI, NULL))
                      : FA_SQL_CHECK(ctx, st, sqlite3_open_v2(lit_path, &st->db, oflags, NULL));
    free(uri);
    if (!s) s = FA_SQL_CHECK(ctx, st, sqlite3_extended_result_codes(st->db, 1));
    /* A run database from elsewhere is untrusted input (docs/hardening.md, issue 32), before the
     * first statement reads its schema: SQLite's defensive mode (no writable_schema, no direct
     * writes to its pages), no function of the schema that is not innocuous (trusted_schema off),
     * no view and no trigger ever run (ours has neither: a file with one is refused below, these
     * keep it so whatever the check), double-quoted text always an identifier, no value longer
     * than FA_STORE_VALUE_HARD_MAX loaded, and every step bounded in time (the progress handler). */
    static const int k_off[] = {SQLITE_DBCONFIG_TRUSTED_SCHEMA, SQLITE_DBCONFIG_ENABLE_VIEW,
                                SQLITE_DBCONFIG_ENABLE_TRIGGER, SQLITE_DBCONFIG_DQS_DML, SQLITE_DBCONFIG_DQS_DDL,
                                SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION};
    if (!s) s = FA_SQL_CHECK(ctx, st, sqlite3_db_config(st->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL));
    for (size_t i = 0; !s && i < sizeof k_off / sizeof k_off[0]; i++)
        s = FA_SQL_CHECK(ctx, st, sqlite3_db_config(st->db, k_off[i], 0, NULL));
    if (!s) {
        sqlite3_limit(st->db, SQLITE_LIMIT_LENGTH, (int)FA_STORE_VALUE_HARD_MAX);
        st->step_limit_ns = fa_store_step_limit_ns();
        sqlite3_progress_handler(st->db, 1000, sq_progress, st);
    }
    if (!s) s = FA_SQL_CHECK(ctx, st, sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS));
    /* Until the file is known to be ours and not newer, closing must not checkpoint a WAL
     * left by another program into it. */
    if (!s) s = FA_SQL_CHECK(ctx, st, sqlite3_db_config(st->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL));

    /* Version check first: reading the header changes nothing in the file. */
    /* The three facts in ONE statement, so one read snapshot: read one by one, a process that
     * creates the file meanwhile (first open by several writers at once) could commit its first
     * migration between them, and a file seen with application_id 0 but schema objects would be
     * refused as another program's (test_store_backends' 8 writers saw it under load). */
    int64_t version = 0, app_id = 0, n_objects = 0;
    if (!s) {
        fa_stmt *q;
        s = fa_sq_prepare(ctx, st,
                          "SELECT (SELECT user_version FROM pragma_user_version), "
                          "(SELECT application_id FROM pragma_application_id), "
                          "(SELECT count(*) FROM sqlite_schema)",
                          &q);
        if (!s) {
            int rc = fa_stmt_step(q);
            s = STEP_CHECK(ctx, st, q, rc);
            if (!s && rc == FA_DB_ROW) {
                version = fa_col_i64(q, 0);
                app_id = fa_col_i64(q, 1);
                n_objects = fa_col_i64(q, 2);
            }
            fa_stmt_finalize(q);
        }
    }
    if (!s) s = version_known(ctx, path, version);
    if (!s && (app_id != 0 || version > 0 || n_objects > 0) && app_id != FA_STORE_APPLICATION_ID)
        s = fa_ctx_error(ctx, FA_ERR_INPUT,
                         "%s: an SQLite database that is not a fuse-advise run database "
                         "(application_id %lld, user_version %lld, %lld schema objects)",
                         path, (long long)app_id, (long long)version, (long long)n_objects);
    /* its schema is exactly the one our migrations built at its version, or it is refused: every
     * table, column and type this build reads is then the one it expects, and nothing runs as a
     * view or trigger where a table is expected (a file being created by another process right
     * now has no objects yet, and is ours) */
    if (!s && n_objects > 0) {
        /* one read snapshot: another process may migrate the file meanwhile */
        int64_t now_version = version;
        s = fa_sq_exec_sql(ctx, st, "BEGIN");
        if (!s) s = fa_sq_query_i64(ctx, st, "PRAGMA user_version", &now_version);
        if (!s) s = version_known(ctx, path, now_version);
        if (!s) {
            sq_arm(st);
            s = fa_store_schema_check_sqlite(ctx, path, st->db, now_version);
            sq_after(st, SQLITE_OK);
        }
        if (s) fa_db_exec(st, "ROLLBACK");
        else s = fa_sq_exec_sql(ctx, st, "COMMIT");
    }
    if (!s && readonly && version < FA_STORE_SCHEMA_VERSION)
        s = fa_ctx_error(ctx, FA_ERR_IO,
                         "%s: database schema version %lld needs migrating to version %d but the "
                         "file is read-only; open it once with write permission",
                         path, (long long)version, FA_STORE_SCHEMA_VERSION);
    if (!s) s = FA_SQL_CHECK(ctx, st, sqlite3_db_config(st->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, NULL));
    if (!s) s = fa_sq_exec_sql(ctx, st, "PRAGMA foreign_keys = ON");
    if (!s && !readonly && n_objects == 0)
        /* A new file: 16 KiB pages (must precede WAL). Measured with bench_store: about 15%
         * less CPU per kernel row than the 4 KiB default, rows being ~200 bytes. */
        s = fa_sq_exec_sql(ctx, st, "PRAGMA page_size = 16384");
    if (!s && !readonly) {
        /* WAL: readers never block the writer (SQLite docs, "Write-Ahead Logging"). */
        fa_stmt *q;
        s = fa_sq_prepare(ctx, st, "PRAGMA journal_mode = WAL", &q);
        if (!s) {
            /* Switching a fresh file to WAL needs an exclusive lock and SQLite may answer
             * SQLITE_BUSY without calling the busy handler (lock upgrade while another
             * process creates the file): retry for the busy timeout ourselves. */
            int rc = fa_stmt_step(q);
            for (int waited = 0; ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) && waited < BUSY_TIMEOUT_MS; waited += 5) {
                fa_stmt_reset(q);
                usleep(5000);
                rc = fa_stmt_step(q);
            }
            s = STEP_CHECK(ctx, st, q, rc);
            if (!s && (rc != FA_DB_ROW || strcmp(fa_col_text(q, 0), "wal") != 0))
                s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot switch the database to WAL mode", path);
            fa_stmt_finalize(q);
        }
        if (!s) s = fa_sq_exec_sql(ctx, st, "PRAGMA synchronous = NORMAL");
        if (!s && version < FA_STORE_SCHEMA_VERSION) s = migrate(ctx, st, version);
    }
    return s;
}

const fa_store_backend fa_store_sqlite_backend = {
    .name = "sqlite",
    .exec = sq_exec,
    .prepare = sq_prepare,
    .prepare_bulk = sq_prepare_bulk,
    .bulk_end = sq_bulk_end,
    .reset = sq_reset,
    .bind_i64 = sq_bind_i64,
    .bind_dbl = sq_bind_dbl,
    .bind_txt = sq_bind_txt,
    .step = sq_step,
    .col_i64 = sq_col_i64,
    .col_dbl = sq_col_dbl,
    .col_text = sq_col_text,
    .col_bytes = sq_col_bytes,
    .col_null = sq_col_null,
    .col_kind = sq_col_kind,
    .finalize = sq_finalize,
    .sql = sq_sql,
    .changes = sq_changes,
    .in_tx = sq_in_tx,
    .begin_sql = "BEGIN IMMEDIATE", /* takes the write lock at once, so the busy timeout applies */
    .error = sq_error,
    .close = sq_close,
};

sqlite3 *fa_store_db(fa_store *st) { return st->be == &fa_store_sqlite_backend ? st->db : NULL; }
