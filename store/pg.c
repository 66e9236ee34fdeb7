/* store/pg — the PostgreSQL back end of the run database (`--db postgresql://...`): libpq
 * connection, the schema in its own namespace `fuse_advise` with the same migrations as SQLite
 * (types translated), statements through PQsendQueryParams in single-row mode, and bulk rows
 * through COPY FROM STDIN (PostgreSQL docs, libpq 34.9 "Functions Associated with COPY"). */
#include "store-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FA_HAVE_LIBPQ

fa_status fa_store_pg_open(fa_ctx *ctx, fa_store *st, const char *conninfo, unsigned flags)
{
    (void)conninfo;
    (void)flags;
    return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED,
                        "%s: this fuse-advise was built without PostgreSQL support (libpq); install libpq-dev "
                        "and rebuild (scripts/setup.sh), or pass a file path to --db",
                        st->path);
}

int fa_store_pq_conninfo(const char *canon, bool uri, fa_conninfo *ci)
{
    (void)canon, (void)uri, (void)ci;
    return -1;
}

#else

#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>

#include <libpq-fe.h>

/* libpq is opened with dlopen on the first postgresql:// store, as runtime/cuda/toolkit.c opens
 * the CUDA libraries: a process on the embedded SQLite store (the default) loads neither libpq
 * nor its ~20 dependencies (Kerberos, LDAP, SASL, gnutls, ...), and the binary copied to a
 * device machine with its shared libraries (scripts/gpu-kit) stays small. The headers give the
 * types; the functions come from the SONAME libpq.so.5 (Debian's libpq5, a dependency of
 * libpq-dev; libpq's ABI has kept that SONAME since PostgreSQL 8.2). */
#define PG_LIBPQ_SONAME "libpq.so.5"
#define PQ_FUNCS(X)                                                                                                    \
    X(PQclear) X(PQcmdTuples) X(PQconndefaults) X(PQconnectdbParams) X(PQconninfoFree) X(PQconninfoParse)              \
    X(PQerrorMessage) X(PQexec) X(PQexecParams) X(PQfinish) X(PQfreemem) X(PQftable) X(PQftablecol) X(PQfname)                        \
    X(PQftype) X(PQgetResult) X(PQgetisnull) X(PQgetlength) X(PQgetvalue) X(PQnfields) X(PQntuples)                    \
    X(PQparameterStatus) X(PQputCopyData) X(PQputCopyEnd) X(PQreset) X(PQresultErrorField) X(PQresultErrorMessage)     \
    X(PQresultStatus) X(PQsendQueryParams) X(PQsetNoticeProcessor) X(PQsetSingleRowMode) X(PQstatus)                   \
    X(PQtransactionStatus)

static struct {
#define PQ_MEMBER(f) __typeof__(f) *f;
    PQ_FUNCS(PQ_MEMBER)
#undef PQ_MEMBER
} pq;
static pthread_once_t pq_once = PTHREAD_ONCE_INIT;
static char pq_err[512]; /* why loading failed, "" when it succeeded */

static void pq_load_once(void)
{
    void *h = dlopen(PG_LIBPQ_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(pq_err, sizeof pq_err, "%s", dlerror());
        return;
    }
#define PQ_SYM(f)                                                                                                      \
    if (!pq_err[0] && !(*(void **)&pq.f = dlsym(h, #f))) snprintf(pq_err, sizeof pq_err, "%s has no %s", PG_LIBPQ_SONAME, #f);
    PQ_FUNCS(PQ_SYM)
#undef PQ_SYM
}

/* Open libpq once per process. FA_ERR_UNSUPPORTED naming the library when it is absent. */
static fa_status pq_load(fa_ctx *ctx, const char *store_path)
{
    pthread_once(&pq_once, pq_load_once);
    if (pq_err[0])
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED,
                            "%s: the PostgreSQL client library could not be loaded (%s); install Debian's libpq5 "
                            "(scripts/setup.sh installs libpq-dev), or pass a file path to --db",
                            store_path, pq_err);
    return FA_OK;
}

/* From here on every PQ call goes through the table. */
#define PQ_ALIAS(f) pq.f
#define PQclear PQ_ALIAS(PQclear)
#define PQcmdTuples PQ_ALIAS(PQcmdTuples)
#define PQconndefaults PQ_ALIAS(PQconndefaults)
#define PQconnectdbParams PQ_ALIAS(PQconnectdbParams)
#define PQconninfoFree PQ_ALIAS(PQconninfoFree)
#define PQconninfoParse PQ_ALIAS(PQconninfoParse)
#define PQfreemem PQ_ALIAS(PQfreemem)
#define PQftable PQ_ALIAS(PQftable)
#define PQftablecol PQ_ALIAS(PQftablecol)
#define PQfname PQ_ALIAS(PQfname)
#define PQerrorMessage PQ_ALIAS(PQerrorMessage)
#define PQexec PQ_ALIAS(PQexec)
#define PQexecParams PQ_ALIAS(PQexecParams)
#define PQfinish PQ_ALIAS(PQfinish)
#define PQftype PQ_ALIAS(PQftype)
#define PQgetResult PQ_ALIAS(PQgetResult)
#define PQgetisnull PQ_ALIAS(PQgetisnull)
#define PQgetlength PQ_ALIAS(PQgetlength)
#define PQgetvalue PQ_ALIAS(PQgetvalue)
#define PQnfields PQ_ALIAS(PQnfields)
#define PQntuples PQ_ALIAS(PQntuples)
#define PQparameterStatus PQ_ALIAS(PQparameterStatus)
#define PQputCopyData PQ_ALIAS(PQputCopyData)
#define PQputCopyEnd PQ_ALIAS(PQputCopyEnd)
#define PQreset PQ_ALIAS(PQreset)
#define PQresultErrorField PQ_ALIAS(PQresultErrorField)
#define PQresultErrorMessage PQ_ALIAS(PQresultErrorMessage)
#define PQresultStatus PQ_ALIAS(PQresultStatus)
#define PQsendQueryParams PQ_ALIAS(PQsendQueryParams)
#define PQsetNoticeProcessor PQ_ALIAS(PQsetNoticeProcessor)
#define PQsetSingleRowMode PQ_ALIAS(PQsetSingleRowMode)
#define PQstatus PQ_ALIAS(PQstatus)
#define PQtransactionStatus PQ_ALIAS(PQtransactionStatus)

/* ---- connection strings (store/conninfo.c calls this) ---- */

/* RFC 3986 unreserved characters stay, every other byte is %XX. */
static void pct_encode(fa_buf *b, const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (isalnum(*p) || strchr("-._~", *p)) fa_buf_append(b, p, 1);
        else fa_buf_printf(b, "%%%02X", *p);
    }
}

/* A keyword/value value (PostgreSQL docs 34.1.1.1): single-quoted when empty or holding a space,
 * quote or backslash, those two escaped with a backslash. */
static void kv_value(fa_buf *b, const char *v)
{
    if (*v && !strpbrk(v, " \t\n\r\f\v'\\")) {
        fa_buf_puts(b, v);
        return;
    }
    fa_buf_puts(b, "'");
    for (const char *p = v; *p; p++) {
        if (*p == '\'' || *p == '\\') fa_buf_puts(b, "\\");
        fa_buf_append(b, p, 1);
    }
    fa_buf_puts(b, "'");
}

/* libpq's message on a string it cannot read quotes parts of the string ("invalid percent-encoded
 * token: \"p%zz\"", the whole URI in others), which may be a password: every quoted part that is not
 * one of libpq's own keyword names becomes "(...)". */
static void pq_reason(fa_buf *b, const char *msg)
{
    PQconninfoOption *kw = PQconndefaults();
    const char *p = msg;
    while (*p) {
        const char *q = strchr(p, '"');
        const char *e = q ? strchr(q + 1, '"') : NULL;
        if (!e) {
            size_t n = strlen(p);
            while (n && (p[n - 1] == '\n' || p[n - 1] == ' ')) n--;
            fa_buf_append(b, p, n);
            break;
        }
        fa_buf_append(b, p, (size_t)(q - p));
        bool keyword = false;
        for (PQconninfoOption *o = kw; o && o->keyword && !keyword; o++)
            keyword = strlen(o->keyword) == (size_t)(e - q - 1) && !strncmp(o->keyword, q + 1, (size_t)(e - q - 1));
        if (keyword) fa_buf_append(b, q, (size_t)(e - q) + 1);
        else fa_buf_puts(b, "(...)");
        p = e + 1;
    }
    if (kw) PQconninfoFree(kw);
}

static bool add_secret(fa_conninfo *ci, const char *v)
{
    if (!v || !*v || ci->n_secret == (int)(sizeof ci->secret / sizeof ci->secret[0])) return true;
    return (ci->secret[ci->n_secret++] = strdup(v)) != NULL;
}

int fa_store_pq_conninfo(const char *canon, bool uri, fa_conninfo *ci)
{
    pthread_once(&pq_once, pq_load_once);
    if (pq_err[0]) return -1;
    char *err = NULL;
    PQconninfoOption *opts = PQconninfoParse(canon, &err);
    if (!opts) {
        if (!err) return -2;
        fa_buf r;
        fa_buf_init(&r);
        pq_reason(&r, err);
        PQfreemem(err);
        snprintf(ci->why, sizeof ci->why, "not a connection string libpq can read (%s)", r.data ? r.data : "?");
        fa_buf_free(&r);
        return 1;
    }
    const char *user = NULL, *password = NULL, *host = NULL, *port = NULL, *dbname = NULL;
    bool oom = false;
    /* keywords whose value libpq opens as a local file: a connection string is input from
     * elsewhere (a CI file others write), and a path in it would be followed (passfile=/etc/shadow
     * was opened, its name printed raw by libpq); the user's own environment (PGPASSFILE,
     * PGSSLROOTCERT, PGSSLCERT, PGSSLKEY, ...) still names them */
    static const char *const file_keys[][2] = {
        {"passfile", "PGPASSFILE"},     {"sslkey", "PGSSLKEY"},     {"sslcert", "PGSSLCERT"},
        {"sslrootcert", "PGSSLROOTCERT"}, {"sslcrl", "PGSSLCRL"},   {"sslcrldir", "PGSSLCRLDIR"},
        {"servicefile", "PGSERVICEFILE"}, /* libpq 16 on; a service name only picks a section of the user's own file */
    };
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val) continue;
        for (size_t k = 0; k < sizeof file_keys / sizeof file_keys[0]; k++) {
            if (strcmp(o->keyword, file_keys[k][0])) continue;
            /* the environment's own value reaches the option list too: only one the string sets is refused */
            const char *env = getenv(file_keys[k][1]);
            if (env && !strcmp(env, o->val)) continue;
            snprintf(ci->why, sizeof ci->why,
                     "the connection string sets '%s', a file on this machine: not taken from a connection string "
                     "(set %s in your environment instead)",
                     o->keyword, file_keys[k][1]);
            PQconninfoFree(opts);
            return 1;
        }
        if (!strcmp(o->keyword, "user")) user = o->val;
        else if (!strcmp(o->keyword, "password")) password = o->val;
        else if (!strcmp(o->keyword, "host")) host = o->val;
        else if (!strcmp(o->keyword, "port")) port = o->val;
        else if (!strcmp(o->keyword, "dbname")) dbname = o->val;
        /* dispchar "*": libpq's own mark of a field to hide (password, sslpassword) */
        if (o->dispchar && o->dispchar[0] == '*') {
            ci->had_password = true;
            oom |= !add_secret(ci, o->val);
        }
    }
    /* libpq ends the userinfo at the first '@' or '/': a password holding '/' or a raw '@' leaves
     * the rest of it in the host, port or database name, which would then be shown */
    if (uri) {
        const char *after = canon + (strncmp(canon, "postgresql://", 13) ? 11 : 13);
        size_t path_end = strcspn(after, "?");
        const char *at = memchr(after, '@', path_end);
        if ((at && !user && !password) || (host && strchr(host, '@')) || (port && strchr(port, '@'))) {
            snprintf(ci->why, sizeof ci->why,
                     "libpq cannot tell the user and password from the host in this URI (a '/' or '@' in a "
                     "password or user name must be written %%2F or %%40; or give the password with PGPASSWORD "
                     "or ~/.pgpass)");
            PQconninfoFree(opts);
            return oom ? -2 : 1;
        }
    }
    /* a database name that is itself a connection string (libpq expands one level only): its own
     * secrets too */
    fa_conninfo inner;
    memset(&inner, 0, sizeof inner);
    bool nested = dbname && fa_store_path_is_pg(dbname);
    if (nested && !fa_conninfo_read(dbname, &inner)) oom = true;
    for (int i = 0; nested && !oom && i < inner.n_secret; i++) oom = !add_secret(ci, inner.secret[i]);
    if (nested) ci->had_password |= inner.had_password;
    fa_buf b;
    fa_buf_init(&b);
    if (uri) {
        fa_buf_puts(&b, strncmp(canon, "postgresql://", 13) ? "postgres://" : "postgresql://");
        bool simple_host = host && *host && !strpbrk(host, ",:/[]@");
        bool simple_port = simple_host && port && *port && strspn(port, "0123456789") == strlen(port);
        if (user) {
            pct_encode(&b, user);
            if (password) fa_buf_puts(&b, ":***");
            fa_buf_puts(&b, "@");
        }
        if (simple_host) pct_encode(&b, host);
        if (simple_port) fa_buf_printf(&b, ":%s", port);
        if (dbname) {
            fa_buf_puts(&b, "/");
            pct_encode(&b, nested ? (inner.display ? inner.display : "") : dbname);
        }
        char sep = '?';
        for (PQconninfoOption *o = opts; o->keyword; o++) {
            if (!o->val || !strcmp(o->keyword, "user") || (user && !strcmp(o->keyword, "password")) ||
                !strcmp(o->keyword, "dbname") || (simple_host && !strcmp(o->keyword, "host")) ||
                (simple_port && !strcmp(o->keyword, "port")))
                continue;
            fa_buf_printf(&b, "%c%s=", sep, o->keyword);
            sep = '&';
            if (o->dispchar && o->dispchar[0] == '*') fa_buf_puts(&b, "***");
            else pct_encode(&b, o->val);
        }
    } else {
        for (PQconninfoOption *o = opts; o->keyword; o++) {
            if (!o->val) continue;
            fa_buf_printf(&b, "%s%s=", b.len ? " " : "", o->keyword);
            if (o->dispchar && o->dispchar[0] == '*') fa_buf_puts(&b, "***");
            else kv_value(&b, nested && o->val == dbname ? (inner.display ? inner.display : "") : o->val);
        }
    }
    fa_conninfo_free(&inner);
    PQconninfoFree(opts);
    if (b.oom || oom) {
        fa_buf_free(&b);
        return -2;
    }
    ci->display = b.data ? b.data : strdup("");
    return ci->display ? 0 : -2;
}

/* Namespace of every table; search_path points at it for the session. */
#define PG_SCHEMA "fuse_advise"
/* Key of the advisory lock that serialises migrations (the application_id bytes 'FAdv'). */
#define PG_MIGRATION_LOCK "1178690678"
/* Bytes of COPY text buffered before they are sent (PQputCopyData). */
#define PG_COPY_CHUNK (1u << 20)
/* libpq type OIDs (PostgreSQL src/include/catalog/pg_type.dat): int8, float8, text. */
#define PG_INT8OID 20
#define PG_FLOAT8OID 701
#define PG_TEXTOID 25
/* Attribute numbers whose domain a pg_rel keeps: our widest table (clusters) has under 50 columns,
 * and a migration's dropped column keeps its number; the schema check refuses a table with a
 * column past it (pg_schema_check). */
#define PG_REL_MAX_ATTNUM 127

struct fa_pg {
    PGconn *conn;
    bool utf8;         /* server_encoding UTF8: text must be valid UTF-8 */
    fa_conninfo ci;    /* the connection string as libpq read it (its secrets: never shown) */
    char *err;         /* message of the last failed call (malloc'd) */
    char sqlstate[6];  /* its SQLSTATE, "" when none */
    int64_t changes;   /* rows of the last command */
    fa_stmt *busy;     /* statement whose query or COPY is in flight */
    int64_t *held;     /* runs whose liveness lock this connection holds */
    size_t n_held, cap_held;
    /* our tables (checked at open): names in messages, and each column's FA_DOM_* by attnum
     * (store/domain.c; PG_REL_MAX_ATTNUM bounds what is checked) */
    struct pg_rel { Oid oid; char name[64]; char dom[PG_REL_MAX_ATTNUM + 1]; } *rels;
    size_t n_rels;
};

/* Key of a run's liveness lock: pg_advisory_lock(int4, int4) with class 'FAdv' and the run id
 * (PostgreSQL docs 9.27.10 "Advisory Lock Functions"; session locks end with the connection). */
#define PG_RUN_LOCK_CLASS "1178690678"

typedef struct pg_stmt {
    fa_stmt base;
    char *sql;         /* translated: $N parameters */
    int n_params;
    char **vals;       /* text values, NULL = SQL NULL */
    Oid *types;
    PGresult *row;     /* current row (single-row mode) */
    int64_t rows;      /* rows returned so far */
    int state;         /* 0 not started, 1 rows pending, 2 done */
    /* bulk (COPY) */
    bool bulk;
    bool copying;      /* COPY IN started on the server */
    bool binary;       /* COPY binary format (every column int8, float8 or text) */
    size_t n_rows;
    struct pg_val { int kind; int64_t i; double d; const char *t; } *bound; /* the row being bound;
                                                                               texts borrowed until the step */
    Oid *col_types;    /* per column (binary) */
    fa_buf buf;        /* rows not sent yet */
    char *dom;         /* per result column, FA_DOM_* of the table column it reads (first row) */
    int n_dom;
} pg_stmt;

enum { PV_NULL, PV_I64, PV_DBL, PV_TXT };

#define PGQ(q) ((pg_stmt *)(q))

static void pg_set_err(fa_store *st, const char *msg, const PGresult *r)
{
    struct fa_pg *pg = st->pg;
    free(pg->err);
    /* libpq's and the server's text never carries a secret of the connection string */
    pg->err = fa_conninfo_scrub(&pg->ci, msg && *msg ? msg : "unknown error");
    if (pg->err) {
        size_t n = strlen(pg->err);
        while (n && (pg->err[n - 1] == '\n' || pg->err[n - 1] == ' ')) pg->err[--n] = 0;
    }
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    snprintf(pg->sqlstate, sizeof pg->sqlstate, "%s", state ? state : "");
}

/* Read and free what is left of the command in flight; the first error is kept. */
static void pg_drain(fa_store *st)
{
    PGresult *r;
    while ((r = PQgetResult(st->pg->conn))) {
        ExecStatusType k = PQresultStatus(r);
        if (k == PGRES_COPY_IN) PQputCopyEnd(st->pg->conn, "abandoned");
        else if (k == PGRES_FATAL_ERROR && !st->pg->err) pg_set_err(st, PQresultErrorMessage(r), r);
        PQclear(r);
        if (k == PGRES_COPY_IN || PQstatus(st->pg->conn) == CONNECTION_BAD) {
            if (PQstatus(st->pg->conn) == CONNECTION_BAD) break;
        }
    }
}

/* One run-lock call ("pg_advisory_lock", "pg_advisory_unlock", "pg_try_advisory_lock");
 * *got = its boolean result (true for pg_advisory_lock). */
static int pg_lock_call(fa_store *st, const char *fn, int64_t run_id, bool *got)
{
    char sql[128], key[32];
    snprintf(sql, sizeof sql, "SELECT %s(" PG_RUN_LOCK_CLASS ", $1::int4)::text", fn);
    snprintf(key, sizeof key, "%lld", (long long)(run_id % 2147483647));
    const char *params[1] = {key};
    PGresult *r = PQexecParams(st->pg->conn, sql, 1, NULL, params, NULL, NULL, 0);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? FA_DB_OK : FA_DB_ERROR;
    if (rc) pg_set_err(st, r && *PQresultErrorMessage(r) ? PQresultErrorMessage(r) : PQerrorMessage(st->pg->conn), r);
    else if (got) *got = strcmp(PQgetvalue(r, 0, 0), "false") != 0;
    PQclear(r);
    return rc;
}

/* Session settings, again after a reconnect (with the run locks the lost connection held). */
static int pg_session(fa_store *st)
{
    /* statement_timeout: the run database's step limit (fa_store_step_limit_ns), so a statement
     * the server cannot finish (a crafted view or function on a shared server) ends with an error
     * instead of hanging the verb; in ms, an integer we format, never text from elsewhere */
    char sql[160];
    snprintf(sql, sizeof sql, "SET search_path TO " PG_SCHEMA "; SET client_min_messages TO warning; SET statement_timeout TO %lld",
             (long long)(fa_store_step_limit_ns() / 1000000));
    PGresult *r = PQexec(st->pg->conn, sql);
    int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? FA_DB_OK : FA_DB_ERROR;
    if (rc) pg_set_err(st, PQresultErrorMessage(r), r);
    PQclear(r);
    for (size_t i = 0; !rc && i < st->pg->n_held; i++) rc = pg_lock_call(st, "pg_advisory_lock", st->pg->held[i], NULL);
    return rc;
}

static int pg_run_lock(fa_store *st, int64_t run_id, int op, bool *writer_gone)
{
    struct fa_pg *pg = st->pg;
    if (pg->busy) {
        pg_set_err(st, "internal: a statement is still in progress on the connection", NULL);
        return FA_DB_ERROR;
    }
    if (op == FA_RUN_LOCK_PROBE) {
        bool free_now = false;
        int rc = pg_lock_call(st, "pg_try_advisory_lock", run_id, &free_now);
        if (!rc && free_now) rc = pg_lock_call(st, "pg_advisory_unlock", run_id, NULL);
        if (!rc) *writer_gone = free_now;
        return rc;
    }
    size_t i = 0;
    while (i < pg->n_held && pg->held[i] != run_id) i++;
    if (op == FA_RUN_LOCK_HOLD) {
        if (i < pg->n_held) return FA_DB_OK;
        if (pg->n_held == pg->cap_held) {
            size_t nc = pg->cap_held ? pg->cap_held * 2 : 8;
            int64_t *p = realloc(pg->held, nc * sizeof *p);
            if (!p) {
                pg_set_err(st, "out of memory", NULL);
                return FA_DB_ERROR;
            }
            pg->held = p;
            pg->cap_held = nc;
        }
        int rc = pg_lock_call(st, "pg_advisory_lock", run_id, NULL);
        if (!rc) pg->held[pg->n_held++] = run_id;
        return rc;
    }
    if (i == pg->n_held) return FA_DB_OK;
    pg->held[i] = pg->held[--pg->n_held];
    return pg_lock_call(st, "pg_advisory_unlock", run_id, NULL);
}

/* The previous connection was lost: reconnect once, only at the start of a new write unit or
 * outside any transaction (nothing of an interrupted transaction can be half-replayed). */
static int pg_ensure_conn(fa_store *st)
{
    if (PQstatus(st->pg->conn) == CONNECTION_OK) return FA_DB_OK;
    PQreset(st->pg->conn);
    if (PQstatus(st->pg->conn) != CONNECTION_OK) {
        pg_set_err(st, PQerrorMessage(st->pg->conn), NULL);
        return FA_DB_ERROR;
    }
    return pg_session(st);
}

static int pg_exec(fa_store *st, const char *sql)
{
    struct fa_pg *pg = st->pg;
    free(st->fault); /* a new call: an earlier refusal nobody reported is not this one's */
    st->fault = NULL;
    if (pg->busy) {
        pg_set_err(st, "internal: a statement is still in progress on the connection", NULL);
        return FA_DB_ERROR;
    }
    /* only a new write unit reconnects after a lost connection: a statement inside a
     * transaction never runs on a new connection outside it */
    if (!strcmp(sql, "BEGIN") && pg_ensure_conn(st)) return FA_DB_ERROR;
    PGresult *r = PQexec(pg->conn, sql);
    ExecStatusType k = PQresultStatus(r);
    int rc = FA_DB_OK;
    if (k != PGRES_COMMAND_OK && k != PGRES_TUPLES_OK) {
        pg_set_err(st, r ? PQresultErrorMessage(r) : PQerrorMessage(pg->conn), r);
        if (!r || !*PQresultErrorMessage(r)) pg_set_err(st, PQerrorMessage(pg->conn), NULL);
        rc = FA_DB_ERROR;
    } else {
        pg->changes = atoll(PQcmdTuples(r));
    }
    PQclear(r);
    return rc;
}

/* SQLite parameters (?, ?N) as PostgreSQL's ($N): a bare ? is one more than the largest
 * number so far (SQLite docs, "Binding Values To Prepared Statements"). Quoted text and
 * identifiers are copied as they are. malloc'd; *n_params = the largest number. */
static char *pg_translate_params(const char *sql, int *n_params)
{
    fa_buf b;
    fa_buf_init(&b);
    int max = 0;
    for (const char *p = sql; *p; p++) {
        if (*p == '\'' || *p == '"') {
            char qc = *p;
            const char *e = p + 1;
            while (*e && *e != qc) e++;
            fa_buf_append(&b, p, (size_t)(e - p) + (*e ? 1 : 0));
            if (!*e) break;
            p = e;
            continue;
        }
        if (*p != '?') {
            fa_buf_append(&b, p, 1);
            continue;
        }
        int n = 0;
        const char *d = p + 1;
        while (*d >= '0' && *d <= '9') n = n * 10 + (*d++ - '0');
        if (d == p + 1) n = max + 1;
        if (n > max) max = n;
        fa_buf_printf(&b, "$%d", n);
        p = d - 1;
    }
    if (b.oom || !b.data) {
        fa_buf_free(&b);
        return NULL;
    }
    *n_params = max;
    return b.data;
}

static pg_stmt *pg_stmt_new(fa_store *st, int n_params)
{
    pg_stmt *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->base.be = st->be;
    h->base.st = st;
    h->n_params = n_params;
    h->vals = calloc((size_t)n_params + 1, sizeof *h->vals);
    h->types = calloc((size_t)n_params + 1, sizeof *h->types);
    fa_buf_init(&h->buf);
    if (!h->vals || !h->types) {
        free(h->vals);
        free(h->types);
        free(h);
        return NULL;
    }
    return h;
}

static int pg_prepare(fa_store *st, const char *sql, fa_stmt **out)
{
    *out = NULL;
    int n = 0;
    char *t = pg_translate_params(sql, &n);
    pg_stmt *h = t ? pg_stmt_new(st, n) : NULL;
    if (!h) {
        free(t);
        pg_set_err(st, "out of memory", NULL);
        return FA_DB_ERROR;
    }
    h->sql = t;
    *out = &h->base;
    return FA_DB_OK;
}

/* Column types of table(cols) for a binary COPY: true when every one is int8, float8 or text. */
static bool pg_bulk_types(fa_store *st, const char *table, const char *cols, int n, Oid *types)
{
    const char *params[1] = {table};
    PGresult *r = PQexecParams(st->pg->conn,
                               "SELECT attname, atttypid FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass($1) "
                               "AND attnum > 0 AND NOT attisdropped",
                               1, NULL, params, NULL, NULL, 0);
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    const char *p = cols;
    for (int c = 0; ok && c < n; c++) {
        while (*p == ' ' || *p == ',') p++;
        size_t len = strcspn(p, ", ");
        int k = 0;
        while (k < PQntuples(r) && (strlen(PQgetvalue(r, k, 0)) != len || strncmp(PQgetvalue(r, k, 0), p, len))) k++;
        if (k == PQntuples(r)) ok = false;
        else types[c] = (Oid)strtoul(PQgetvalue(r, k, 1), NULL, 10);
        ok = ok && (types[c] == PG_INT8OID || types[c] == PG_FLOAT8OID || types[c] == PG_TEXTOID);
        p += len;
    }
    PQclear(r);
    return ok;
}

/* Binary COPY file header (PostgreSQL docs, COPY "Binary Format"): signature, flags, no extension. */
static const char k_copy_signature[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', '\377', '\r', '\n', '\0'};

static int pg_prepare_bulk(fa_store *st, const char *table, const char *cols, int n, fa_stmt **out)
{
    *out = NULL;
    if (st->pg->busy) {
        pg_set_err(st, "internal: a statement is still in progress on the connection", NULL);
        return FA_DB_ERROR;
    }
    pg_stmt *h = pg_stmt_new(st, n);
    char *sql = malloc(strlen(table) + strlen(cols) + 48);
    if (h) {
        h->bound = calloc((size_t)n + 1, sizeof *h->bound);
        h->col_types = calloc((size_t)n + 1, sizeof *h->col_types);
    }
    if (!h || !sql || !h->bound || !h->col_types) {
        if (h) {
            free(h->bound);
            free(h->col_types);
            free(h->vals);
            free(h->types);
            free(h);
        }
        free(sql);
        pg_set_err(st, "out of memory", NULL);
        return FA_DB_ERROR;
    }
    h->binary = pg_bulk_types(st, table, cols, n, h->col_types);
    sprintf(sql, "COPY %s (%s) FROM STDIN%s", table, cols, h->binary ? " (FORMAT binary)" : "");
    h->sql = sql;
    h->bulk = true;
    *out = &h->base;
    return FA_DB_OK;
}

/* Length of s with every byte that does not start a valid UTF-8 sequence (RFC 3629: no overlong
 * forms, no surrogates, at most U+10FFFF) replaced by U+FFFD, written to out when not NULL. A
 * UTF8 server refuses such text ("invalid byte sequence"); SQLite stores any bytes, so a trace
 * whose names carry them (a profiler's raw symbol) is stored with U+FFFD in their place instead
 * of failing the run. */
static size_t utf8_fix(const char *s, char *out, bool *changed)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0;
    *changed = false;
    while (*p) {
        unsigned c = *p;
        int len = c < 0x80 ? 1 : (c >= 0xc2 && c <= 0xdf) ? 2 : (c >= 0xe0 && c <= 0xef) ? 3 : (c >= 0xf0 && c <= 0xf4) ? 4 : 0;
        bool ok = len > 0;
        for (int k = 1; ok && k < len; k++) ok = (p[k] & 0xc0) == 0x80;
        if (ok && len == 3) ok = !(c == 0xe0 && p[1] < 0xa0) && !(c == 0xed && p[1] >= 0xa0);
        if (ok && len == 4) ok = !(c == 0xf0 && p[1] < 0x90) && !(c == 0xf4 && p[1] >= 0x90);
        if (ok) {
            if (out) memcpy(out + n, p, (size_t)len);
            n += (size_t)len;
            p += len;
        } else {
            if (out) memcpy(out + n, "\xef\xbf\xbd", 3);
            n += 3;
            p++;
            *changed = true;
        }
    }
    if (out) out[n] = 0;
    return n;
}

/* s as valid UTF-8: s itself when it is (or the server does not check), else a malloc'd copy
 * with replacements, also in *owned (caller frees). */
static const char *pg_text(fa_store *st, const char *s, char **owned)
{
    *owned = NULL;
    bool changed = false;
    if (!s || !st->pg->utf8) return s;
    size_t n = utf8_fix(s, NULL, &changed);
    if (!changed) return s;
    char *t = malloc(n + 1);
    if (!t) return s; /* the server then refuses it with its own message */
    utf8_fix(s, t, &changed);
    *owned = t;
    return t;
}

static int pg_bulk_bind(fa_stmt *q, int i, struct pg_val v)
{
    pg_stmt *h = PGQ(q);
    if (i < 1 || i > h->n_params) {
        pg_set_err(q->st, "internal: parameter index out of range", NULL);
        return FA_DB_ERROR;
    }
    h->bound[i - 1] = v;
    return FA_DB_OK;
}

static int pg_set_param(fa_stmt *q, int i, char *v, Oid type)
{
    pg_stmt *h = PGQ(q);
    if (i < 1 || i > h->n_params) {
        free(v);
        pg_set_err(q->st, "internal: parameter index out of range", NULL);
        return FA_DB_ERROR;
    }
    free(h->vals[i - 1]);
    h->vals[i - 1] = v;
    h->types[i - 1] = v ? type : 0; /* NULL: the server infers the type from its use */
    return FA_DB_OK;
}

static int pg_bind_i64(fa_stmt *q, int i, int64_t v)
{
    if (PGQ(q)->bulk) return pg_bulk_bind(q, i, (struct pg_val){PV_I64, v, 0, NULL});
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    char *s = strdup(tmp);
    if (!s) return FA_DB_ERROR;
    return pg_set_param(q, i, s, PG_INT8OID);
}

static int pg_bind_dbl(fa_stmt *q, int i, double v)
{
    if (PGQ(q)->bulk) return pg_bulk_bind(q, i, (struct pg_val){v != v ? PV_NULL : PV_DBL, 0, v, NULL});
    if (v != v) return pg_set_param(q, i, NULL, 0); /* NaN stores NULL, as SQLite does */
    char tmp[40];
    if (v > 1.7976931348623157e308) snprintf(tmp, sizeof tmp, "Infinity");
    else if (v < -1.7976931348623157e308) snprintf(tmp, sizeof tmp, "-Infinity");
    else snprintf(tmp, sizeof tmp, "%.17g", v);
    char *s = strdup(tmp);
    if (!s) return FA_DB_ERROR;
    return pg_set_param(q, i, s, PG_FLOAT8OID);
}

static int pg_bind_txt(fa_stmt *q, int i, const char *v)
{
    if (v && strlen(v) > FA_STORE_VALUE_MAX) { /* what could not be read back is not written */
        fa_buf m;
        fa_buf_init(&m);
        fa_buf_printf(&m, "%s: a value of %zu bytes for parameter %d, over the %zu MiB limit on one value", q->st->path,
                      strlen(v), i, FA_STORE_VALUE_MAX >> 20);
        free(q->st->fault);
        q->st->fault = m.data;
        return FA_DB_ERROR;
    }
    if (PGQ(q)->bulk) return pg_bulk_bind(q, i, (struct pg_val){v ? PV_TXT : PV_NULL, 0, 0, v});
    char *owned = NULL;
    const char *t = pg_text(q->st, v, &owned);
    char *s = NULL;
    if (t && !(s = owned ? owned : strdup(t))) return FA_DB_ERROR;
    return pg_set_param(q, i, s, PG_TEXTOID);
}

static void pg_clear_row(pg_stmt *h)
{
    PQclear(h->row);
    h->row = NULL;
}

/* End the statement's query in flight (rows not read are discarded). */
static void pg_stop(fa_stmt *q)
{
    pg_stmt *h = PGQ(q);
    struct fa_pg *pg = q->st->pg;
    pg_clear_row(h);
    if (h->state == 1 && pg->busy == q) pg_drain(q->st);
    if (pg->busy == q && !h->copying) pg->busy = NULL;
    h->state = 0;
}

/* Big-endian integer of `bytes` bytes (COPY binary format: network byte order). */
static void put_be(fa_buf *b, uint64_t v, int bytes)
{
    unsigned char o[8];
    for (int k = 0; k < bytes; k++) o[k] = (unsigned char)(v >> (8 * (bytes - 1 - k)));
    fa_buf_append(b, o, (size_t)bytes);
}

/* COPY text format (PostgreSQL docs, COPY "Text Format"): tab-separated, \N for NULL,
 * backslash escapes for backslash, newline, carriage return and tab. */
static void pg_copy_field(fa_buf *b, const char *v)
{
    if (!v) {
        fa_buf_puts(b, "\\N");
        return;
    }
    const char *run = v;
    for (const char *p = v; *p; p++) {
        const char *esc = *p == '\\' ? "\\\\" : *p == '\n' ? "\\n" : *p == '\r' ? "\\r" : *p == '\t' ? "\\t" : NULL;
        if (!esc) continue;
        fa_buf_append(b, run, (size_t)(p - run));
        fa_buf_puts(b, esc);
        run = p + 1;
    }
    fa_buf_puts(b, run);
}

static int pg_copy_flush(fa_stmt *q)
{
    pg_stmt *h = PGQ(q);
    fa_store *st = q->st;
    struct fa_pg *pg = st->pg;
    if (!h->copying) {
        if (pg->busy) {
            pg_set_err(st, "internal: a statement is still in progress on the connection", NULL);
            return FA_DB_ERROR;
        }
        PGresult *r = PQexec(pg->conn, h->sql);
        if (PQresultStatus(r) != PGRES_COPY_IN) {
            pg_set_err(st, r && *PQresultErrorMessage(r) ? PQresultErrorMessage(r) : PQerrorMessage(pg->conn), r);
            PQclear(r);
            return FA_DB_ERROR;
        }
        PQclear(r);
        h->copying = true;
        pg->busy = q;
    }
    if (h->buf.len && PQputCopyData(pg->conn, h->buf.data, (int)h->buf.len) != 1) {
        pg_set_err(st, PQerrorMessage(pg->conn), NULL);
        return FA_DB_ERROR;
    }
    fa_buf_reset(&h->buf);
    return FA_DB_OK;
}

static int pg_bulk_end(fa_stmt *q)
{
    pg_stmt *h = PGQ(q);
    if (!h->bulk) return FA_DB_OK;
    fa_store *st = q->st;
    struct fa_pg *pg = st->pg;
    if (h->binary && h->n_rows) put_be(&h->buf, 0xffff, 2); /* file trailer */
    if (h->buf.oom) {
        pg_set_err(st, "out of memory", NULL);
        return FA_DB_ERROR;
    }
    if (h->buf.len && pg_copy_flush(q)) return FA_DB_ERROR;
    if (!h->copying) return FA_DB_OK; /* no rows */
    int rc = FA_DB_OK;
    h->copying = false;
    pg->busy = NULL;
    if (PQputCopyEnd(pg->conn, NULL) != 1) {
        pg_set_err(st, PQerrorMessage(pg->conn), NULL);
        rc = FA_DB_ERROR;
    }
    PGresult *r;
    while ((r = PQgetResult(pg->conn))) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == FA_DB_OK) {
            pg_set_err(st, *PQresultErrorMessage(r) ? PQresultErrorMessage(r) : PQerrorMessage(pg->conn), r);
            rc = FA_DB_ERROR;
        } else if (PQresultStatus(r) == PGRES_COMMAND_OK) {
            pg->changes = atoll(PQcmdTuples(r));
        }
        PQclear(r);
        if (PQstatus(pg->conn) == CONNECTION_BAD) break;
    }
    return rc;
}

/* A bound value as COPY text ("%lld", "%.17g", Infinity, NaN as NULL). */
static const char *pg_val_text(const struct pg_val *v, char *tmp, size_t n)
{
    if (v->kind == PV_TXT) return v->t;
    if (v->kind == PV_I64) snprintf(tmp, n, "%lld", (long long)v->i);
    else if (v->d > 1.7976931348623157e308) snprintf(tmp, n, "Infinity");
    else if (v->d < -1.7976931348623157e308) snprintf(tmp, n, "-Infinity");
    else snprintf(tmp, n, "%.17g", v->d);
    return tmp;
}

static int pg_step_bulk(fa_stmt *q)
{
    pg_stmt *h = PGQ(q);
    fa_buf *b = &h->buf;
    char tmp[48];
    if (h->binary) {
        if (h->n_rows == 0) {
            fa_buf_append(b, k_copy_signature, sizeof k_copy_signature);
            put_be(b, 0, 4); /* flags */
            put_be(b, 0, 4); /* header extension length */
        }
        put_be(b, (uint64_t)h->n_params, 2);
        for (int c = 0; c < h->n_params; c++) {
            const struct pg_val *v = &h->bound[c];
            Oid t = h->col_types[c];
            if (v->kind == PV_NULL) {
                put_be(b, 0xffffffffu, 4);
            } else if (t == PG_INT8OID) {
                int64_t x = v->kind == PV_I64 ? v->i : v->kind == PV_DBL ? (int64_t)v->d : strtoll(v->t, NULL, 10);
                put_be(b, 8, 4);
                put_be(b, (uint64_t)x, 8);
            } else if (t == PG_FLOAT8OID) {
                double x = v->kind == PV_DBL ? v->d : v->kind == PV_I64 ? (double)v->i : strtod(v->t, NULL);
                uint64_t bits;
                memcpy(&bits, &x, sizeof bits);
                put_be(b, 8, 4);
                put_be(b, bits, 8);
            } else {
                char *owned = NULL;
                const char *x = pg_text(q->st, pg_val_text(v, tmp, sizeof tmp), &owned);
                size_t len = strlen(x);
                put_be(b, (uint64_t)len, 4);
                fa_buf_append(b, x, len);
                free(owned);
            }
        }
    } else {
        for (int c = 0; c < h->n_params; c++) {
            if (c) fa_buf_puts(b, "\t");
            char *owned = NULL;
            pg_copy_field(b, h->bound[c].kind == PV_NULL ? NULL
                                                         : pg_text(q->st, pg_val_text(&h->bound[c], tmp, sizeof tmp), &owned));
            free(owned);
        }
        fa_buf_puts(b, "\n");
    }
    h->n_rows++;
    if (b->oom) {
        pg_set_err(q->st, "out of memory", NULL);
        return FA_DB_ERROR;
    }
    if (b->len >= PG_COPY_CHUNK) return pg_copy_flush(q) ? FA_DB_ERROR : FA_DB_DONE;
    return FA_DB_DONE;
}

/* "PATH: table T, row #N of the query, column C: WHAT" as the store's fault (the server checks
 * types and NOT NULL itself; a value's length is ours to bound). */
static int pg_fault(fa_stmt *q, int col, const char *what)
{
    pg_stmt *h = PGQ(q);
    fa_store *st = q->st;
    fa_buf m;
    fa_buf_init(&m);
    fa_buf_printf(&m, "%s: ", st->path);
    Oid t = h->row && col >= 0 ? PQftable(h->row, col) : 0;
    for (size_t i = 0; t && i < st->pg->n_rels; i++)
        if (st->pg->rels[i].oid == t) {
            fa_buf_puts(&m, "table ");
            fa_store_quote_name(&m, st->pg->rels[i].name, strlen(st->pg->rels[i].name));
            fa_buf_puts(&m, ", ");
        }
    fa_buf_printf(&m, "row #%lld of the query", (long long)h->rows);
    if (col >= 0 && h->row) {
        const char *f = PQfname(h->row, col);
        fa_buf_puts(&m, ", column ");
        fa_store_quote_name(&m, f ? f : "?", f ? strlen(f) : 1);
    }
    fa_buf_printf(&m, ": %s", what);
    free(st->fault);
    st->fault = m.data;
    pg_stop(q);
    h->state = 2;
    return FA_DB_ERROR;
}

static fa_db_kind pg_col_kind(fa_stmt *q, int c);

/* Each result column's domain (store/domain.c), from the table column it reads (PQftable,
 * PQftablecol; 0 for a computed one), found once per statement. */
static int pg_row_domains(pg_stmt *h, struct fa_pg *pg)
{
    int n = PQnfields(h->row);
    if (h->dom && h->n_dom == n) return 0;
    free(h->dom);
    h->n_dom = 0;
    if (!(h->dom = calloc((size_t)n + 1, 1))) return -1;
    h->n_dom = n;
    for (int c = 0; c < n; c++) {
        Oid t = PQftable(h->row, c);
        int a = t ? PQftablecol(h->row, c) : 0;
        for (size_t i = 0; t && a > 0 && a <= PG_REL_MAX_ATTNUM && i < pg->n_rels; i++)
            if (pg->rels[i].oid == t) h->dom[c] = pg->rels[i].dom[a];
    }
    return 0;
}

/* Every value of the current row against FA_STORE_VALUE_MAX and its column's domain (the server
 * checks types and NOT NULL itself); numbers arrive as text: int2/4/8 by strtoll, float4/8 and
 * numeric by strtod, which reads PostgreSQL's 'Infinity', '-Infinity' and 'NaN'. */
static int pg_row_check(fa_stmt *q)
{
    pg_stmt *h = PGQ(q);
    if (pg_row_domains(h, q->st->pg)) {
        pg_set_err(q->st, "out of memory", NULL);
        return FA_DB_ERROR;
    }
    for (int c = 0; c < PQnfields(h->row); c++) {
        if (PQgetisnull(h->row, 0, c)) continue;
        char what[160];
        if ((size_t)PQgetlength(h->row, 0, c) > FA_STORE_VALUE_MAX) {
            snprintf(what, sizeof what, "a value of %d bytes, over the %zu MiB limit on one value",
                     PQgetlength(h->row, 0, c), FA_STORE_VALUE_MAX >> 20);
            return pg_fault(q, c, what);
        }
        if (!h->dom[c]) continue;
        fa_db_kind k = pg_col_kind(q, c);
        if (k != FA_DB_INTEGER && k != FA_DB_FLOAT) continue;
        const char *v = PQgetvalue(h->row, 0, c);
        const char *bad = fa_store_domain_fault(h->dom[c], k == FA_DB_INTEGER, k == FA_DB_INTEGER ? strtoll(v, NULL, 10) : 0,
                                                k == FA_DB_FLOAT ? strtod(v, NULL) : 0, what, sizeof what);
        if (bad) return pg_fault(q, c, bad);
    }
    return FA_DB_ROW;
}

static int pg_step(fa_stmt *q)
{
    pg_stmt *h = PGQ(q);
    fa_store *st = q->st;
    struct fa_pg *pg = st->pg;
    free(st->fault); /* a new call: an earlier refusal nobody reported is not this one's */
    st->fault = NULL;
    if (h->bulk) return pg_step_bulk(q);
    if (h->state == 2) return FA_DB_DONE;
    if (h->state == 0) {
        if (pg->busy) {
            pg_set_err(st, "internal: a statement is still in progress on the connection", NULL);
            return FA_DB_ERROR;
        }
        free(pg->err);
        pg->err = NULL;
        if (!PQsendQueryParams(pg->conn, h->sql, h->n_params, h->types, (const char *const *)h->vals, NULL, NULL, 0)) {
            pg_set_err(st, PQerrorMessage(pg->conn), NULL);
            h->state = 2;
            return FA_DB_ERROR;
        }
        PQsetSingleRowMode(pg->conn);
        pg->busy = q;
        h->state = 1;
    }
    pg_clear_row(h);
    PGresult *r = PQgetResult(pg->conn);
    ExecStatusType k = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (k == PGRES_SINGLE_TUPLE) {
        h->row = r;
        h->rows++;
        return pg_row_check(q);
    }
    int rc = FA_DB_DONE;
    if (k == PGRES_COMMAND_OK) pg->changes = atoll(PQcmdTuples(r));
    else if (k != PGRES_TUPLES_OK) {
        pg_set_err(st, r && *PQresultErrorMessage(r) ? PQresultErrorMessage(r) : PQerrorMessage(pg->conn), r);
        rc = FA_DB_ERROR;
    }
    PQclear(r);
    if (r) pg_drain(st);
    pg->busy = NULL;
    h->state = 2;
    return rc;
}

static int pg_reset(fa_stmt *q)
{
    PGQ(q)->rows = 0;
    if (!PGQ(q)->bulk) pg_stop(q);
    return FA_DB_OK;
}

static const char *pg_cell(fa_stmt *q, int c)
{
    pg_stmt *h = PGQ(q);
    if (!h->row || c < 0 || c >= PQnfields(h->row) || PQgetisnull(h->row, 0, c)) return NULL;
    return PQgetvalue(h->row, 0, c);
}

/* Integers as SQLite reads them: a real value truncated, NULL as 0. */
static int64_t pg_col_i64(fa_stmt *q, int c)
{
    const char *v = pg_cell(q, c);
    if (!v) return 0;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (*end == '.' || *end == 'e' || *end == 'E' || (end == v && *v)) return fa_f64_to_i64_sat(strtod(v, NULL));
    return x;
}
static double pg_col_dbl(fa_stmt *q, int c)
{
    const char *v = pg_cell(q, c);
    return v ? strtod(v, NULL) : 0.0;
}
static const char *pg_col_text(fa_stmt *q, int c) { return pg_cell(q, c); }
static size_t pg_col_bytes(fa_stmt *q, int c)
{
    return pg_cell(q, c) ? (size_t)PQgetlength(PGQ(q)->row, 0, c) : 0;
}
static bool pg_col_null(fa_stmt *q, int c) { return pg_cell(q, c) == NULL; }

/* By the column's type OID (pg_type.dat): int2 21, int4 23, int8 20; float4 700, float8 701,
 * numeric 1700 (sums of bigint); anything else as text. */
static fa_db_kind pg_col_kind(fa_stmt *q, int c)
{
    if (!pg_cell(q, c)) return FA_DB_NULL;
    Oid t = PQftype(PGQ(q)->row, c);
    if (t == 20 || t == 21 || t == 23) return FA_DB_INTEGER;
    if (t == 700 || t == 701 || t == 1700) return FA_DB_FLOAT;
    return FA_DB_TEXT;
}

static void pg_finalize(fa_stmt *q)
{
    pg_stmt *h = PGQ(q);
    struct fa_pg *pg = q->st->pg;
    if (h->bulk && h->copying) { /* abandoned COPY: the server discards its rows */
        PQputCopyEnd(pg->conn, "bulk insert abandoned");
        h->copying = false;
        pg->busy = NULL;
        pg_drain(q->st);
    }
    pg_stop(q);
    free(h->dom);
    for (int i = 0; i < h->n_params; i++) free(h->vals[i]);
    free(h->vals);
    free(h->types);
    free(h->sql);
    fa_buf_free(&h->buf);
    free(h->bound);
    free(h->col_types);
    free(h);
}

static const char *pg_sql(fa_stmt *q) { return PGQ(q)->sql; }
static int64_t pg_changes(fa_store *st) { return st->pg->changes; }
static bool pg_in_tx(fa_store *st)
{
    if (!st->pg || !st->pg->conn || PQstatus(st->pg->conn) != CONNECTION_OK) return false;
    PGTransactionStatusType t = PQtransactionStatus(st->pg->conn);
    return t == PQTRANS_INTRANS || t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}

static fa_status pg_error(fa_ctx *ctx, fa_store *st, int rc, const char *call, const char *file, int line)
{
    (void)rc;
    struct fa_pg *pg = st->pg;
    const char *msg = pg && pg->err ? pg->err : pg && pg->conn ? PQerrorMessage(pg->conn) : "no connection";
    fa_log(ctx, FA_LOG_DEBUG, "%s: %s failed at %s:%d: %s", st->path, call, file, line, msg);
    fa_status s = FA_ERR_IO;
    const char *hint = "";
    if (pg && pg->conn && PQstatus(pg->conn) == CONNECTION_BAD)
        hint = " (the connection to the PostgreSQL server was lost; the unfinished write was rolled back by the "
               "server, runs stored before are intact)";
    else if (pg && !strncmp(pg->sqlstate, "53", 2))
        s = !strcmp(pg->sqlstate, "53200") ? FA_ERR_NOMEM : FA_ERR_IO;
    else if (pg && !strcmp(pg->sqlstate, "25006"))
        hint = " (opened read-only)";
    else if (pg && (!strncmp(pg->sqlstate, "42", 2) || !strncmp(msg, "internal:", 9)))
        s = FA_ERR_INTERNAL;
    if (pg && *pg->sqlstate) return fa_ctx_error(ctx, s, "%s: run database error: %s [SQLSTATE %s]%s", st->path, msg, pg->sqlstate, hint);
    return fa_ctx_error(ctx, s, "%s: run database error: %s%s", st->path, msg, hint);
}

static void pg_close(fa_store *st)
{
    struct fa_pg *pg = st->pg;
    if (!pg) return;
    if (pg->conn) PQfinish(pg->conn); /* an open transaction is rolled back by the server */
    fa_conninfo_free(&pg->ci);
    free(pg->rels);
    free(pg->err);
    free(pg->held);
    free(pg);
    st->pg = NULL;
}

static const fa_store_backend pg_backend = {
    .name = "postgresql",
    .exec = pg_exec,
    .prepare = pg_prepare,
    .prepare_bulk = pg_prepare_bulk,
    .bulk_end = pg_bulk_end,
    .reset = pg_reset,
    .bind_i64 = pg_bind_i64,
    .bind_dbl = pg_bind_dbl,
    .bind_txt = pg_bind_txt,
    .step = pg_step,
    .col_i64 = pg_col_i64,
    .col_dbl = pg_col_dbl,
    .col_text = pg_col_text,
    .col_bytes = pg_col_bytes,
    .col_null = pg_col_null,
    .col_kind = pg_col_kind,
    .finalize = pg_finalize,
    .sql = pg_sql,
    .changes = pg_changes,
    .in_tx = pg_in_tx,
    .begin_sql = "BEGIN",
    .run_lock = pg_run_lock,
    .error = pg_error,
    .close = pg_close,
};

/* ---- schema ---- */

static bool is_word(const char *p, const char *w, const char *start)
{
    size_t n = strlen(w);
    if (strncmp(p, w, n)) return false;
    char after = p[n];
    bool ident_after = (after >= 'A' && after <= 'Z') || (after >= 'a' && after <= 'z') || (after >= '0' && after <= '9') || after == '_';
    char before = p > start ? p[-1] : ' ';
    bool ident_before = (before >= 'A' && before <= 'Z') || (before >= 'a' && before <= 'z') || (before >= '0' && before <= '9') || before == '_';
    return !ident_after && !ident_before;
}

/* One migration step of store/schema.c in PostgreSQL's dialect: PRAGMA lines dropped (the
 * schema_version table replaces user_version/application_id), INTEGER -> BIGINT (SQLite
 * integers are 64-bit), REAL -> DOUBLE PRECISION, the rowid alias "id INTEGER PRIMARY KEY" ->
 * an identity column, WITHOUT ROWID dropped. malloc'd; NULL on OOM. */
static char *pg_schema_sql(const char *sql)
{
    fa_buf b;
    fa_buf_init(&b);
    const char *p = sql;
    while (*p) {
        if (!strncmp(p, "PRAGMA", 6) && (p == sql || p[-1] == '\n')) {
            const char *e = strchr(p, '\n');
            p = e ? e + 1 : p + strlen(p);
            continue;
        }
        if (*p == '\'') {
            const char *e = strchr(p + 1, '\'');
            size_t n = e ? (size_t)(e - p) + 1 : strlen(p);
            fa_buf_append(&b, p, n);
            p += n;
            continue;
        }
        if (is_word(p, "INTEGER PRIMARY KEY", sql)) {
            fa_buf_puts(&b, "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY");
            p += strlen("INTEGER PRIMARY KEY");
        } else if (is_word(p, "INTEGER", sql)) {
            fa_buf_puts(&b, "BIGINT");
            p += 7;
        } else if (is_word(p, "REAL", sql)) {
            fa_buf_puts(&b, "DOUBLE PRECISION");
            p += 4;
        } else if (is_word(p, "WITHOUT ROWID", sql)) {
            p += strlen("WITHOUT ROWID");
        } else {
            fa_buf_append(&b, p, 1);
            p++;
        }
    }
    if (b.oom || !b.data) {
        fa_buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* The kernels table of version 1 without its foreign key. A foreign key is checked row by row by
 * a trigger: COPY of 1,000,000 kernel rows took 17.5 s with it and 6.0 s without (psql \timing,
 * INSERT ... SELECT of one bench_store run at load 11). The same guarantees instead: the writer
 * locks the run row (check_run, SELECT ... FOR KEY SHARE) in the transaction that adds its
 * records, and deleting a run deletes its records (trigger runs_delete_kernels below). */
static const char *const pg_kernels_fk = "CREATE TABLE kernels (\n  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,";
static const char *const pg_kernels_nofk = "CREATE TABLE kernels (\n  run_id BIGINT NOT NULL,";

/* Objects only the PostgreSQL schema has, created with version 1: fa_try_jsonb (text as
 * jsonb, NULL when it is not JSON; the label query of store/plans.c) and the kernels cascade. */
#define PG_TRY_JSONB_BODY "\nBEGIN RETURN t::jsonb; EXCEPTION WHEN others THEN RETURN NULL; END "
#define PG_DELETE_KERNELS_BODY "\nBEGIN DELETE FROM " PG_SCHEMA ".kernels WHERE run_id = OLD.id; RETURN OLD; END "
static const char *const pg_extra_v1 =
    "CREATE FUNCTION fa_try_jsonb(t text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$" PG_TRY_JSONB_BODY "$$;\n"
    "CREATE FUNCTION fa_runs_delete_kernels() RETURNS trigger LANGUAGE plpgsql AS $$" PG_DELETE_KERNELS_BODY "$$;\n"
    "CREATE TRIGGER runs_delete_kernels BEFORE DELETE ON runs FOR EACH ROW EXECUTE FUNCTION fa_runs_delete_kernels();\n";

/* Step 5 (version 4 -> 5) moves plans.options_json documents into columns with SQLite's JSON1;
 * on PostgreSQL its DDL (up to the first UPDATE) is translated as usual and the data is moved
 * with jsonb (fa_try_jsonb: a document that is not JSON moves nothing, as json_valid there). */
static const char *const pg_v5_ddl_end = "UPDATE plans SET\n";
static const char *const pg_v5_data =
    "UPDATE plans SET max_ops = (fa_try_jsonb(options_json)->>'max_ops')::bigint,\n"
    "  max_inputs = (fa_try_jsonb(options_json)->>'max_inputs')::bigint,\n"
    "  occupancy_floor = (fa_try_jsonb(options_json)->>'occupancy_floor')::double precision,\n"
    "  gate = CASE fa_try_jsonb(options_json)->>'no_gate' WHEN 'true' THEN 0 WHEN 'false' THEN 1 END\n"
    "  WHERE jsonb_typeof(fa_try_jsonb(options_json)) = 'object';\n"
    "CREATE TEMP TABLE v5_cluster_docs AS\n"
    "  SELECT p.run_id, p.plan_id, (j->>'id')::bigint AS cluster_id, j AS doc FROM plans p,\n"
    "  jsonb_array_elements(CASE WHEN jsonb_typeof(fa_try_jsonb(p.options_json)->'clusters') = 'array'\n"
    "    THEN fa_try_jsonb(p.options_json)->'clusters' ELSE '[]'::jsonb END) j\n"
    "  WHERE jsonb_typeof(j) = 'object' AND jsonb_typeof(j->'id') = 'number';\n"
    "UPDATE clusters c SET label = d.doc->>'label', anchor = (d.doc->>'anchor')::bigint,\n"
    "  depends_on = (d.doc->>'depends_on')::bigint, reduction = d.doc->>'reduction',\n"
    "  reduce_axis = (d.doc->>'reduce_axis')::bigint, epsilon = (d.doc->>'epsilon')::double precision,\n"
    "  block_size = (d.doc->>'block_size')::bigint,\n"
    "  inputs_json = CASE WHEN jsonb_typeof(d.doc->'inputs') = 'array' THEN (d.doc->'inputs')::text END,\n"
    "  outputs_json = CASE WHEN jsonb_typeof(d.doc->'outputs') = 'array' THEN (d.doc->'outputs')::text END\n"
    "  FROM v5_cluster_docs d WHERE d.run_id = c.run_id AND d.plan_id = c.plan_id AND d.cluster_id = c.cluster_id;\n"
    "INSERT INTO cluster_post_ops (run_id, plan_id, cluster_id, seq, spec, operand_tensor)\n"
    "  SELECT d.run_id, d.plan_id, d.cluster_id, k.ord - 1, k.value #>> '{}',\n"
    "         coalesce((d.doc->'post_op_inputs'->>(k.ord - 1)::int)::bigint, -1)\n"
    "  FROM v5_cluster_docs d JOIN clusters c ON c.run_id = d.run_id AND c.plan_id = d.plan_id\n"
    "       AND c.cluster_id = d.cluster_id,\n"
    "       jsonb_array_elements(CASE WHEN jsonb_typeof(d.doc->'post_ops') = 'array' THEN d.doc->'post_ops'\n"
    "         ELSE '[]'::jsonb END) WITH ORDINALITY k(value, ord)\n"
    "  WHERE jsonb_typeof(k.value) = 'string' ON CONFLICT DO NOTHING;\n"
    "DROP TABLE v5_cluster_docs;\n"
    "ALTER TABLE plans DROP COLUMN options_json;\n";

/* The SQL of step v (version v -> v+1) for PostgreSQL; malloc'd, NULL on OOM or when step 5
 * is not shaped as pg_v5_ddl_end expects (*bad set). */
static char *pg_step_sql(int64_t v, bool *bad)
{
    *bad = false;
    if (v != 4) return pg_schema_sql(fa_store_migrations[v]);
    const char *end = strstr(fa_store_migrations[4], pg_v5_ddl_end);
    if (!end) {
        *bad = true;
        return NULL;
    }
    char *ddl = strndup(fa_store_migrations[4], (size_t)(end - fa_store_migrations[4]));
    char *t = ddl ? pg_schema_sql(ddl) : NULL;
    free(ddl);
    char *all = t ? malloc(strlen(t) + strlen(pg_v5_data) + 1) : NULL;
    if (all) {
        strcpy(all, t);
        strcat(all, pg_v5_data);
    }
    free(t);
    return all;
}

/* Schema version on the server; -1 when there is no fuse-advise schema yet. */
/* Code others can put in our namespace runs on our statements with the client's role: a function,
 * aggregate or operator there that matches an argument's type better than pg_catalog's (an
 * aggregate max() over a domain given to schema_version.version ran `COPY ... TO PROGRAM` on the
 * version read of a read-only verb, the sixth attack pass), or a changed body of one of ours.
 * Before anything reads a table: in fuse_advise only our two plpgsql functions with our bodies
 * (no SECURITY DEFINER, no SET), no operator, and no type but the tables' own row types and their
 * arrays (a domain, enum, range or base type is refused); schema_version's one column a bigint.
 * Names come from the catalog, never from a statement we build. */
static fa_status pg_objects_check(fa_ctx *ctx, fa_store *st)
{
    int64_t bad = 0;
    fa_status s = fa_sq_query_i64(
        ctx, st,
        "SELECT (SELECT count(*) FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace "
        "  WHERE n.nspname = '" PG_SCHEMA "' AND NOT (p.prokind = 'f' AND NOT p.prosecdef AND p.proconfig IS NULL "
        "  AND p.prolang = (SELECT l.oid FROM pg_catalog.pg_language l WHERE l.lanname = 'plpgsql') AND "
        "  ((p.proname = 'fa_try_jsonb' AND p.pronargs = 1 AND p.prosrc = '" PG_TRY_JSONB_BODY "') OR "
        "   (p.proname = 'fa_runs_delete_kernels' AND p.pronargs = 0 AND p.prosrc = '" PG_DELETE_KERNELS_BODY "')))) + "
        "(SELECT count(*) FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace "
        "  WHERE n.nspname = '" PG_SCHEMA "') + "
        "(SELECT count(*) FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace "
        "  WHERE n.nspname = '" PG_SCHEMA "' AND NOT (t.typtype = 'c' AND t.typrelid <> 0) AND "
        "  NOT (t.typtype = 'b' AND t.typelem <> 0 AND t.typcategory = 'A')) + "
        "(SELECT count(*) FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid "
        "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '" PG_SCHEMA "' AND "
        "  c.relname = 'schema_version' AND a.attnum > 0 AND NOT a.attisdropped AND "
        "  NOT (a.attname = 'version' AND a.atttypid = 'pg_catalog.int8'::pg_catalog.regtype)) + "
        /* what runs a function on our own statements without being a function of our namespace:
         * a CHECK, exclusion or trigger constraint, an index over an expression or with a
         * predicate, row-level security or a policy (it runs with every reader's role), a table
         * inheriting from ours or ours from another (its rows join ours, unchecked) */
        "(SELECT count(*) FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class c ON c.oid = k.conrelid "
        "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '" PG_SCHEMA "' AND "
        "  k.contype NOT IN ('p', 'f', 'u', 'n')) + "
        "(SELECT count(*) FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indrelid "
        "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '" PG_SCHEMA "' AND "
        "  (i.indexprs IS NOT NULL OR i.indpred IS NOT NULL)) + "
        "(SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "  WHERE n.nspname = '" PG_SCHEMA "' AND (c.relrowsecurity OR c.relforcerowsecurity)) + "
        "(SELECT count(*) FROM pg_catalog.pg_policy o JOIN pg_catalog.pg_class c ON c.oid = o.polrelid "
        "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '" PG_SCHEMA "') + "
        "(SELECT count(*) FROM pg_catalog.pg_inherits h JOIN pg_catalog.pg_class c ON c.oid IN (h.inhrelid, h.inhparent) "
        "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '" PG_SCHEMA "')",
        &bad);
    if (!s && bad > 0)
        s = fa_ctx_error(ctx, FA_ERR_INPUT,
                         "%s: schema " PG_SCHEMA " holds %lld function, aggregate, operator, type, column, constraint, "
                         "expression index, row-level security policy or inheritance that fuse-advise did not create "
                         "(code there would run on fuse-advise's statements with your role); "
                         "not a run database this fuse-advise wrote: refusing to read it",
                         st->path, (long long)bad);
    return s;
}

static fa_status pg_read_version(fa_ctx *ctx, fa_store *st, int64_t *version)
{
    int64_t have = 0;
    fa_status s = fa_sq_query_i64(ctx, st, "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = '" PG_SCHEMA
                                           "' AND tablename = 'schema_version'", &have);
    if (s) return s;
    if (!have) {
        *version = -1;
        return FA_OK;
    }
    if ((s = pg_objects_check(ctx, st))) return s;
    return fa_sq_query_i64(ctx, st,
                           "SELECT coalesce(pg_catalog.max(version::pg_catalog.int8), 0) FROM " PG_SCHEMA
                           ".schema_version",
                           version);
}

/* One line per column of the reference's tables at `version`, as the server should have them:
 * "table|column|type|notnull" with the types pg_schema_sql gives (INTEGER bigint, REAL double
 * precision, TEXT text) and primary-key columns NOT NULL as PostgreSQL makes them. */
static fa_status pg_expected(fa_ctx *ctx, int64_t version, fa_buf *out)
{
    sqlite3 *ref = NULL;
    fa_status s = fa_store_schema_reference(ctx, version, &ref);
    sqlite3_stmt *q = NULL;
    if (!s && sqlite3_prepare_v2(ref,
                                 "SELECT m.name, c.name, upper(c.type), c.\"notnull\" OR c.pk > 0 FROM sqlite_schema m, "
                                 "pragma_table_info(m.name) c WHERE m.type = 'table' ORDER BY m.name, c.cid",
                                 -1, &q, NULL) != SQLITE_OK)
        s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "reading the reference schema: %s", sqlite3_errmsg(ref));
    while (!s && sqlite3_step(q) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(q, 2);
        fa_buf_printf(out, "%s|%s|%s|%d\n", sqlite3_column_text(q, 0), sqlite3_column_text(q, 1),
                      !t ? "?" : !strcmp(t, "INTEGER") ? "bigint" : !strcmp(t, "REAL") ? "double precision"
                                 : !strcmp(t, "TEXT") ? "text" : t,
                      sqlite3_column_int(q, 3));
    }
    sqlite3_finalize(q);
    sqlite3_close(ref);
    if (!s && out->oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    return s;
}

/* The first line of a that b lacks (*n its length); NULL when none. */
static const char *pg_line_missing(const char *a, const char *b, size_t *n)
{
    for (const char *p = a; *p;) {
        size_t len = strcspn(p, "\n");
        bool found = false;
        for (const char *r = b; *r && !found;) {
            size_t m = strcspn(r, "\n");
            found = m == len && !memcmp(p, r, len);
            r += m + (r[m] == '\n');
        }
        if (!found) {
            *n = len;
            return p;
        }
        p += len + (p[len] == '\n');
    }
    return NULL;
}

static fa_status pg_schema_refuse(fa_ctx *ctx, fa_store *st, int64_t version, const char *what, const char *line, size_t n)
{
    fa_buf m;
    fa_buf_init(&m);
    fa_buf_puts(&m, what);
    if (line) {
        const char *bar = memchr(line, '|', n), *bar2 = bar ? memchr(bar + 1, '|', n - (size_t)(bar + 1 - line)) : NULL;
        fa_buf_puts(&m, " table ");
        fa_store_quote_name(&m, line, bar ? (size_t)(bar - line) : n);
        if (bar) {
            fa_buf_puts(&m, ", column ");
            fa_store_quote_name(&m, bar + 1, bar2 ? (size_t)(bar2 - bar - 1) : n - (size_t)(bar + 1 - line));
        }
    }
    fa_status s = fa_ctx_error(ctx, FA_ERR_INPUT,
                               "%s: %s, in fuse-advise's schema version %lld: not a run database this fuse-advise "
                               "wrote (altered, or another program's); refusing to read it",
                               st->path, m.data ? m.data : what, (long long)version);
    fa_buf_free(&m);
    return s;
}

/* The server's schema against the reference at `version` (the same as store/sqlite.c checks for a
 * file): in namespace fuse_advise, only our tables (plus schema_version) as plain tables, each
 * with exactly the reference's columns and types; no view, no rule; no trigger but our own. The
 * table names and oids are kept for messages. */
static fa_status pg_schema_check(fa_ctx *ctx, fa_store *st, int64_t version)
{
    fa_buf want, have;
    fa_buf_init(&want);
    fa_buf_init(&have);
    fa_status s = pg_expected(ctx, version, &want);
    fa_stmt *q = NULL;
    int rc = FA_DB_DONE;
    if (!s)
        s = fa_sq_prepare(ctx, st,
                          "SELECT c.oid::text, c.relname::text, c.relkind::text, a.attname::text, "
                          "format_type(a.atttypid, a.atttypmod), a.attnotnull::int, "
                          "(a.attgenerated <> '' OR pg_catalog.pg_get_expr(d.adbin, d.adrelid) LIKE '%(%')::int, a.attnum::int "
                          "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                          "LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
                          "LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
                          "WHERE n.nspname = '" PG_SCHEMA "' AND c.relkind NOT IN ('i', 'S', 'I', 'c', 't') "
                          "ORDER BY c.relname, a.attnum",
                          &q);
    char odd[200] = "", computed[240] = "";
    while (!s && (rc = fa_stmt_step(q)) == FA_DB_ROW) {
        const char *rel = fa_col_text(q, 1), *kind = fa_col_text(q, 2), *col = fa_col_text(q, 3);
        if (!rel || !kind) continue;
        if (!strcmp(rel, "schema_version")) continue;
        if (strcmp(kind, "r")) {
            if (!odd[0]) {
                fa_buf m;
                fa_buf_init(&m);
                fa_store_quote_name(&m, rel, strlen(rel));
                snprintf(odd, sizeof odd, "%s (relkind %s) is not a plain table as", m.data ? m.data : "?", kind);
                fa_buf_free(&m);
            }
            continue;
        }
        if (col) fa_buf_printf(&have, "%s|%s|%s|%d\n", rel, col, fa_col_text(q, 4) ? fa_col_text(q, 4) : "?", fa_col_int(q, 5));
        /* ours are constants: a default that calls a function, or a generated column, runs code of
         * the server's on our writes */
        if (col && fa_col_int(q, 6) && !computed[0]) {
            fa_buf m;
            fa_buf_init(&m);
            fa_store_quote_name(&m, rel, strlen(rel));
            fa_buf_puts(&m, ", column ");
            fa_store_quote_name(&m, col, strlen(col));
            snprintf(computed, sizeof computed, "table %s has a computed default or value, which is not",
                     m.data ? m.data : "?");
            fa_buf_free(&m);
        }
        if (!st->pg->n_rels || strcmp(st->pg->rels[st->pg->n_rels - 1].name, rel)) {
            struct pg_rel *r = realloc(st->pg->rels, (st->pg->n_rels + 1) * sizeof *r);
            if (!r) {
                s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
                break;
            }
            st->pg->rels = r;
            memset(&r[st->pg->n_rels], 0, sizeof *r);
            r[st->pg->n_rels].oid = (Oid)strtoul(fa_col_text(q, 0) ? fa_col_text(q, 0) : "0", NULL, 10);
            snprintf(r[st->pg->n_rels].name, sizeof r->name, "%s", rel);
            st->pg->n_rels++;
        }
        if (col) {
            int64_t a = fa_col_int(q, 7);
            if (a > 0 && a <= PG_REL_MAX_ATTNUM) st->pg->rels[st->pg->n_rels - 1].dom[a] = fa_store_column_domain(rel, col);
            else if (!odd[0]) { /* a column renumbered past what the domain checks cover */
                fa_buf m;
                fa_buf_init(&m);
                fa_store_quote_name(&m, rel, strlen(rel));
                fa_buf_puts(&m, ", column ");
                fa_store_quote_name(&m, col, strlen(col));
                snprintf(odd, sizeof odd, "table %s has attribute number %lld (over %d), which is not", m.data ? m.data : "?",
                         (long long)a, PG_REL_MAX_ATTNUM);
                fa_buf_free(&m);
            }
        }
    }
    if (!s) s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    size_t n = 0;
    const char *line;
    if (!s && (have.oom || want.oom)) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    else if (!s && odd[0]) s = pg_schema_refuse(ctx, st, version, odd, NULL, 0);
    else if (!s && computed[0]) s = pg_schema_refuse(ctx, st, version, computed, NULL, 0);
    else if (!s && (line = pg_line_missing(have.data ? have.data : "", want.data ? want.data : "", &n)))
        s = pg_schema_refuse(ctx, st, version, "a column (or its type or NOT NULL) that is not", line, n);
    else if (!s && (line = pg_line_missing(want.data ? want.data : "", have.data ? have.data : "", &n)))
        s = pg_schema_refuse(ctx, st, version, "a missing (or otherwise declared) column of", line, n);
    /* nothing that runs on a read or a write: a rule, or a trigger that is not ours */
    int64_t extra = 0;
    if (!s)
        s = fa_sq_query_i64(ctx, st,
                            "SELECT (SELECT count(*) FROM pg_catalog.pg_rules WHERE schemaname = '" PG_SCHEMA "') + "
                            "(SELECT count(*) FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid "
                            "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                            "JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid WHERE n.nspname = '" PG_SCHEMA
                            "' AND NOT t.tgisinternal AND NOT (t.tgname = 'runs_delete_kernels' AND c.relname = 'runs' "
                            "AND p.proname = 'fa_runs_delete_kernels' AND p.pronamespace = n.oid))",
                            &extra);
    if (!s && extra > 0) s = pg_schema_refuse(ctx, st, version, "a rule or trigger that is not", NULL, 0);
    fa_buf_free(&want);
    fa_buf_free(&have);
    return s;
}

/* Migrate to FA_STORE_SCHEMA_VERSION in one transaction under an advisory lock (concurrent
 * openers wait, then find the work done). */
static fa_status pg_migrate(fa_ctx *ctx, fa_store *st)
{
    /* an event trigger runs its function on our DDL with our role: no migration while one is on */
    int64_t evt = 0;
    fa_status es = fa_sq_query_i64(ctx, st, "SELECT count(*) FROM pg_catalog.pg_event_trigger WHERE evtenabled <> 'D'", &evt);
    if (es) return es;
    if (evt > 0)
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: the server has %lld enabled event trigger(s), which would run on the schema changes "
                            "fuse-advise makes, with your role; refusing to create or migrate the run database here",
                            st->path, (long long)evt);
    fa_status s = fa_sq_exec_sql(ctx, st, "BEGIN");
    if (!s) s = fa_sq_exec_sql(ctx, st, "SELECT pg_advisory_xact_lock(" PG_MIGRATION_LOCK ")");
    if (!s) s = fa_sq_exec_sql(ctx, st, "CREATE SCHEMA IF NOT EXISTS " PG_SCHEMA "; "
                                        "CREATE TABLE IF NOT EXISTS " PG_SCHEMA ".schema_version (version BIGINT NOT NULL)");
    int64_t v = 0;
    if (!s) s = pg_read_version(ctx, st, &v);
    if (!s && v > FA_STORE_SCHEMA_VERSION)
        s = fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "%s: another process set schema version %lld, newer than %d", st->path,
                         (long long)v, FA_STORE_SCHEMA_VERSION);
    for (; !s && v < FA_STORE_SCHEMA_VERSION; v++) {
        bool bad = false;
        char *sql = pg_step_sql(v, &bad);
        if (!sql)
            s = bad ? fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: schema step %lld is not shaped as store/pg.c expects",
                                   st->path, (long long)v + 1)
                    : fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
        char *fk = !s && v == 0 ? strstr(sql, pg_kernels_fk) : NULL;
        if (!s && v == 0 && !fk)
            s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: schema step 1 has no kernels table as pg.c expects", st->path);
        if (fk) {
            size_t a = strlen(pg_kernels_fk), b = strlen(pg_kernels_nofk);
            memcpy(fk, pg_kernels_nofk, b);
            memmove(fk + b, fk + a, strlen(fk + a) + 1);
        }
        if (!s) s = fa_sq_exec_sql(ctx, st, sql);
        free(sql);
        if (!s && v == 0) s = fa_sq_exec_sql(ctx, st, pg_extra_v1);
        if (s) fa_ctx_wrap(ctx, s, "migrating schema %lld -> %lld: ", (long long)v, (long long)v + 1);
    }
    if (!s) {
        char sql[160];
        snprintf(sql, sizeof sql, "DELETE FROM " PG_SCHEMA ".schema_version; INSERT INTO " PG_SCHEMA
                                  ".schema_version VALUES (%d)", FA_STORE_SCHEMA_VERSION);
        s = fa_sq_exec_sql(ctx, st, sql);
    }
    if (!s) s = fa_sq_exec_sql(ctx, st, "COMMIT");
    if (s) pg_exec(st, "ROLLBACK");
    return s;
}

/* libpq prints server notices on stderr by default; a library never prints. */
static void pg_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

fa_status fa_store_pg_open(fa_ctx *ctx, fa_store *st, const char *conninfo, unsigned flags)
{
    fa_status ls = pq_load(ctx, st->path);
    if (ls) return ls;
    st->be = &pg_backend;
    st->pg = calloc(1, sizeof *st->pg);
    if (!st->pg) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    /* libpq reads the string first: one it cannot read, or whose password it would take for a host
     * or database name, is refused with our words (libpq's would quote it) */
    if (!fa_conninfo_read(conninfo, &st->pg->ci)) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    if (!st->pg->ci.connect)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s", st->path,
                            st->pg->ci.why[0] ? st->pg->ci.why : "not a connection string libpq can read");
    st->readonly = (flags & FA_STORE_READONLY) != 0;
    /* Later keywords win: the URI's own connect_timeout / application_name override ours. */
    const char *const keys[] = {"connect_timeout", "fallback_application_name", "dbname", NULL};
    const char *const vals[] = {"10", "fuse-advise", st->pg->ci.connect, NULL};
    st->pg->conn = PQconnectdbParams(keys, vals, 1);
    if (!st->pg->conn) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory connecting", st->path);
    if (PQstatus(st->pg->conn) != CONNECTION_OK) {
        pg_set_err(st, PQerrorMessage(st->pg->conn), NULL);
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot connect to the PostgreSQL server: %s", st->path,
                            st->pg->err ? st->pg->err : "out of memory");
    }
    PQsetNoticeProcessor(st->pg->conn, pg_notice, NULL);
    const char *enc = PQparameterStatus(st->pg->conn, "server_encoding");
    st->pg->utf8 = enc && (!strcmp(enc, "UTF8") || !strcmp(enc, "UTF-8"));
    fa_status s = FA_SQL_CHECK(ctx, st, pg_session(st));
    if (!s && st->readonly) s = fa_sq_exec_sql(ctx, st, "SET default_transaction_read_only = on");
    int64_t version = -1;
    if (!s) s = pg_read_version(ctx, st, &version);
    if (s) return s;
    if (version < 0 && (flags & (FA_STORE_NO_CREATE | FA_STORE_READONLY)))
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: no fuse-advise run database on this server yet (schema " PG_SCHEMA
                            " absent; run a model with this --db first)",
                            st->path);
    if (version > FA_STORE_SCHEMA_VERSION)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED,
                            "%s: database schema version %lld is newer than this fuse-advise (%s) supports (version "
                            "%d); use a newer fuse-advise, the database was not modified",
                            st->path, (long long)version, FA_VERSION_STRING, FA_STORE_SCHEMA_VERSION);
    /* a server's schema is checked as a file's is (store/schema.c), before anything reads a table */
    if (version > 0) s = pg_schema_check(ctx, st, version);
    if (s) return s;
    if (version < FA_STORE_SCHEMA_VERSION) {
        if (st->readonly)
            return fa_ctx_error(ctx, FA_ERR_IO,
                                "%s: database schema version %lld needs migrating to version %d; open it once "
                                "for writing",
                                st->path, (long long)version, FA_STORE_SCHEMA_VERSION);
        s = pg_migrate(ctx, st);
    }
    return s;
}

#endif
