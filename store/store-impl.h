/* store-impl — private details of the run database shared by the store sources. */
#ifndef FA_STORE_IMPL_H
#define FA_STORE_IMPL_H

#include <sqlite3.h>

#include "store.h"

/* application_id of a fuse-advise run database: the bytes 'F','A','d','v'. */
#define FA_STORE_APPLICATION_ID 0x46416476

/* fa_store_migrations[v]: SQL taking user_version v to v+1 (store/schema.c). */
extern const char *const fa_store_migrations[FA_STORE_SCHEMA_VERSION];

struct fa_store {
    sqlite3 *db;
    char *path;      /* as given to open */
    bool readonly;   /* opened read-only */
    bool explicit_tx;/* inside fa_store_begin .. commit/rollback */
};


/* The raw connection, for the store's own sources and white-box tests only: no module above
 * store/ includes this header (store.h is the whole API, with no SQLite type in it). Borrowed
 * until fa_store_close. */
sqlite3 *fa_store_db(fa_store *st);
/* Checking helper behind every sqlite3 call (STYLE.md): rc SQLITE_OK/ROW/DONE -> FA_OK;
 * otherwise records "PATH: CALL failed at FILE:LINE: sqlite3_errmsg (errstr)" on ctx and
 * returns FA_ERR_INPUT (not a database / corrupt), FA_ERR_NOMEM, or FA_ERR_IO (busy,
 * read-only, I/O, constraint, ...). Use through FA_SQL_CHECK. */
fa_status fa_store_sql_check(fa_ctx *ctx, fa_store *st, int rc, const char *call, const char *file,
                             int line);
#define FA_SQL_CHECK(ctx, st, call) fa_store_sql_check((ctx), (st), (call), #call, __FILE__, __LINE__)

/* Binder: binds in order and keeps the first failing rc, checked once per row. */
typedef struct binder {
    sqlite3_stmt *s;
    int i;  /* next parameter index (1-based) */
    int rc; /* first failure */
} binder;

static inline void b_start(binder *b, sqlite3_stmt *s)
{
    b->s = s;
    b->i = 1;
    b->rc = sqlite3_reset(s);
}
static inline void b_i64(binder *b, int64_t v)
{
    int rc = sqlite3_bind_int64(b->s, b->i++, v);
    if (b->rc == SQLITE_OK) b->rc = rc;
}
static inline void b_dbl(binder *b, double v)
{
    int rc = sqlite3_bind_double(b->s, b->i++, v);
    if (b->rc == SQLITE_OK) b->rc = rc;
}
static inline void b_txt(binder *b, const char *v)
{
    int rc = v ? sqlite3_bind_text(b->s, b->i++, v, -1, SQLITE_STATIC) : sqlite3_bind_null(b->s, b->i++);
    if (b->rc == SQLITE_OK) b->rc = rc;
}

/* ---- helpers shared by the store's sources (store.c defines them) ---- */

/* Check a sqlite3_step result; the message names the statement's SQL. */
fa_status fa_sq_step_check(fa_ctx *ctx, fa_store *st, sqlite3_stmt *q, int rc, const char *file, int line);
#define STEP_CHECK(ctx, st, q, rc) fa_sq_step_check((ctx), (st), (q), (rc), __FILE__, __LINE__)
/* FA_ERR_IO "PATH: database is read-only ..., cannot WHAT" when opened read-only. */
fa_status fa_sq_require_writable(fa_ctx *ctx, fa_store *st, const char *what);
int64_t fa_sq_unix_now_ns(void);
/* Run SQL without results / prepare one statement (*out NULL on failure). */
fa_status fa_sq_exec_sql(fa_ctx *ctx, fa_store *st, const char *sql);
fa_status fa_sq_prepare(fa_ctx *ctx, fa_store *st, const char *sql, sqlite3_stmt **out);
/* Column text copied into arena; NULL for SQL NULL. */
const char *fa_sq_col_str(sqlite3_stmt *s, int col, fa_arena *arena);
/* Prepare sql and bind ?1 = run_id through *b (bind further parameters with b, then check
 * b->rc with FA_SQL_CHECK before stepping). *q NULL on failure. */
fa_status fa_sq_prepare_run(fa_ctx *ctx, fa_store *st, const char *sql, int64_t run_id, sqlite3_stmt **q,
                            binder *b);
/* Make room in an arena array of `size`-byte rows for row n (capacity doubles, old rows copied);
 * false when out of memory. */
bool fa_sq_grow(fa_arena *arena, void **v, size_t n, size_t *cap, size_t size);
/* Read one integer of a single-row query (0 when no row). */
fa_status fa_sq_query_i64(fa_ctx *ctx, fa_store *st, const char *sql, int64_t *out);
/* A write unit: BEGIN IMMEDIATE when no transaction is open, a SAVEPOINT inside the caller's;
 * tx_close commits/releases on s == FA_OK, else undoes it, and returns s or the commit's failure. */
fa_status fa_sq_tx_open(fa_ctx *ctx, fa_store *st, bool *own);
fa_status fa_sq_tx_close(fa_ctx *ctx, fa_store *st, bool own, fa_status s);


#endif
