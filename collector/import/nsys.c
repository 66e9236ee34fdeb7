/* collector/import/nsys — read an Nsight Systems SQLite export (any generation we can probe:
 * tables and columns are looked up, never assumed) into an fa_trace. */
#include "collector/import/import-impl.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <sys/stat.h>

/* An export is untrusted input (docs/hardening.md, issue 32): bytes of one name (a kernel, API
 * call or NVTX range) at most; a longer one is refused naming its table, row and column. The
 * longest demangled kernel names of real exports are a few KiB (2.9 KiB in the corpus export). */
#define NSYS_NAME_MAX ((size_t)64 << 10)
/* SQLITE_LIMIT_LENGTH of the export's connection: SQLite refuses to load a longer value at all. */
#define NSYS_VALUE_HARD_MAX (16 << 20)
/* Default wall-clock limit of one step of one statement on the export, in seconds (the progress
 * handler ends it; FA_DB_STEP_LIMIT_S overrides it, as for a run database). The slowest step of a
 * real export is the kernel query's sort: seconds for millions of kernels. */
#define NSYS_STEP_LIMIT_S 120

typedef struct nsx {
    fa_ctx *ctx;
    const char *path;   /* the name messages give the file */
    const char *rec_table, *rec_name_col; /* the table being read and its StringIds reference column */
    sqlite3 *db;
    fa_trace *t;
    fa_import_stats *st;
    fa_buf sql, tmp;
    int64_t deadline_ns, limit_ns; /* the running step's end (CLOCK_MONOTONIC), its budget */
    bool interrupted;   /* the progress handler ended a step */
} nsx;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* SQLite's progress handler (every 1000 instructions): a statement's steps share one budget from
 * the statement's first instruction (nsys_step re-arms it per row). */
static int nsys_progress(void *arg)
{
    nsx *n = arg;
    int64_t now = mono_ns();
    if (!n->deadline_ns) n->deadline_ns = now + n->limit_ns;
    if (now <= n->deadline_ns) return 0;
    n->interrupted = true;
    return 1;
}

/* sqlite3_step with a fresh time budget. */
static int nsys_step(nsx *n, sqlite3_stmt *q)
{
    n->deadline_ns = mono_ns() + n->limit_ns;
    int rc = sqlite3_step(q);
    n->deadline_ns = 0;
    return rc;
}

/* Every SQLite call's failure goes through here: names the call, the vendor's message and
 * the file. */
#define SQ_CHECK(x, rc_ok, what)                                                              \
    do {                                                                                      \
        int rc_ = (x);                                                                        \
        if (rc_ != (rc_ok)) return sq_fail(n, rc_, what);                                     \
    } while (0)

/* An SQLite failure on the export: out of memory is FA_ERR_NOMEM, anything else a bad file;
 * the message names the file and what was being read, never our source lines. */
static fa_status sq_fail(nsx *n, int rc, const char *what)
{
    if ((rc & 0xff) == SQLITE_NOMEM)
        return fa_ctx_error(n->ctx, FA_ERR_NOMEM, "%s: out of memory (%s)", n->path, what);
    if ((rc & 0xff) == SQLITE_INTERRUPT && n->interrupted)
        return fa_ctx_error(n->ctx, FA_ERR_INPUT,
                            "%s: %s: a query ran longer than %.0f s and was stopped (a crafted or damaged export; "
                            "FA_DB_STEP_LIMIT_S sets the limit)",
                            n->path, what, (double)n->limit_ns / 1e9);
    if ((rc & 0xff) == SQLITE_TOOBIG)
        return fa_ctx_error(n->ctx, FA_ERR_INPUT, "%s: %s: a value longer than %d MiB (SQLite refuses to load it)",
                            n->path, what, NSYS_VALUE_HARD_MAX >> 20);
    return fa_ctx_error(n->ctx, FA_ERR_INPUT, "%s: %s: %s", n->path, what, sqlite3_errmsg(n->db));
}

/* What the export's schema holds under a name we read: only an ordinary table is read (a view
 * runs a query of the file's choosing, a virtual table a module's code). */
typedef enum { NS_ABSENT, NS_TABLE, NS_OTHER } ns_kind;

static ns_kind table_kind(nsx *n, const char *name)
{
    sqlite3_stmt *q = NULL;
    ns_kind k = NS_ABSENT;
    if (sqlite3_prepare_v2(n->db, "SELECT type FROM pragma_table_list WHERE schema = 'main' AND name = ?1", -1, &q,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
        if (nsys_step(n, q) == SQLITE_ROW) {
            const char *t = (const char *)sqlite3_column_text(q, 0);
            k = t && !strcmp(t, "table") ? NS_TABLE : NS_OTHER;
        }
    }
    sqlite3_finalize(q);
    return k;
}

static bool has_table(nsx *n, const char *name) { return table_kind(n, name) == NS_TABLE; }

/* Every name this reader may query that the export holds as something other than a table (the
 * tables it reads, and names starting NVTX_EVENTS): refused, named. */
static fa_status only_tables(nsx *n)
{
    static const char *const names[] = {"META_DATA_EXPORT", "EXPORT_META_DATA", "TARGET_INFO_GPU",
                                        "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME",
                                        "CUPTI_ACTIVITY_KIND_DRIVER", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                        "CUPTI_ACTIVITY_KIND_MEMSET", "StringIds"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (table_kind(n, names[i]) == NS_OTHER)
            return fa_ctx_error(n->ctx, FA_ERR_INPUT,
                                "%s: %s is a view or virtual table, not a table: refusing to read this export",
                                n->path, names[i]);
    sqlite3_stmt *q = NULL;
    fa_status s = FA_OK;
    if (sqlite3_prepare_v2(n->db, "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type <> 'table' AND "
                                  "substr(name, 1, 11) = 'NVTX_EVENTS' LIMIT 1",
                           -1, &q, NULL) == SQLITE_OK &&
        nsys_step(n, q) == SQLITE_ROW)
        s = fa_ctx_error(n->ctx, FA_ERR_INPUT,
                         "%s: an NVTX_EVENTS table is a view or virtual table: refusing to read this export", n->path);
    sqlite3_finalize(q);
    /* a generated column is computed on every read: an expression of the file's choosing where a
     * stored value is read */
    q = NULL;
    if (!s && sqlite3_prepare_v2(n->db, "SELECT t.name, c.name FROM pragma_table_list t, pragma_table_xinfo(t.name) c "
                                        "WHERE t.schema = 'main' AND t.type = 'table' AND c.hidden <> 0 AND (t.name IN "
                                        "('TARGET_INFO_GPU', 'CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_RUNTIME', "
                                        "'CUPTI_ACTIVITY_KIND_DRIVER', 'CUPTI_ACTIVITY_KIND_MEMCPY', "
                                        "'CUPTI_ACTIVITY_KIND_MEMSET', 'StringIds', 'META_DATA_EXPORT', 'EXPORT_META_DATA') "
                                        "OR substr(t.name, 1, 11) = 'NVTX_EVENTS') LIMIT 1",
                                  -1, &q, NULL) == SQLITE_OK &&
        nsys_step(n, q) == SQLITE_ROW) {
        fa_buf m;
        fa_buf_init(&m);
        const char *t = (const char *)sqlite3_column_text(q, 0), *c = (const char *)sqlite3_column_text(q, 1);
        fa_buf_printf(&m, "%.64s.%.64s", t ? t : "?", c ? c : "?");
        for (size_t i = 0; m.data && i < m.len; i++)
            if ((unsigned char)m.data[i] < 0x20 || (unsigned char)m.data[i] >= 0x7f) m.data[i] = '?';
        s = fa_ctx_error(n->ctx, FA_ERR_INPUT,
                         "%s: column %s is a generated column, not stored data: refusing to read this export", n->path,
                         m.data ? m.data : "?");
        fa_buf_free(&m);
    }
    sqlite3_finalize(q);
    return s;
}

/* First table whose name starts with prefix (NVTX_EVENTS may carry a version suffix). */
static bool find_table_prefix(nsx *n, const char *prefix, char *out, size_t outsz)
{
    sqlite3_stmt *q = NULL;
    bool ok = false;
    if (sqlite3_prepare_v2(n->db, "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND "
                                  "substr(name, 1, length(?1)) = ?1 ORDER BY length(name), name LIMIT 1",
                           -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_text(q, 1, prefix, -1, SQLITE_STATIC);
        if (nsys_step(n, q) == SQLITE_ROW) {
            const char *nm = (const char *)sqlite3_column_text(q, 0);
            /* the name goes into SQL text: accept plain identifiers only */
            ok = nm && strlen(nm) < outsz && strspn(nm, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == strlen(nm);
            if (ok) snprintf(out, outsz, "%s", nm);
        }
    }
    sqlite3_finalize(q);
    return ok;
}

static bool has_column(nsx *n, const char *table, const char *col)
{
    char sql[256];
    sqlite3_snprintf(sizeof sql, sql, "SELECT 1 FROM pragma_table_info(%Q) WHERE name = ?1", table);
    sqlite3_stmt *q = NULL;
    bool ok = false;
    if (sqlite3_prepare_v2(n->db, sql, -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_text(q, 1, col, -1, SQLITE_STATIC);
        ok = nsys_step(n, q) == SQLITE_ROW;
    }
    sqlite3_finalize(q);
    return ok;
}

static fa_status need_column(nsx *n, const char *table, const char *col, const char *why)
{
    if (has_column(n, table, col)) return FA_OK;
    return fa_ctx_error(n->ctx, FA_ERR_INPUT, "%s: Nsight Systems export lacks column %s.%s (%s)",
                        n->path, table, col, why);
}

/* "k.col" if present, else "0" (optional columns) */
static void opt_col(nsx *n, fa_buf *b, const char *table, const char *alias, const char *col)
{
    if (has_column(n, table, col)) fa_buf_printf(b, ", %s.%s", alias, col);
    else fa_buf_puts(b, ", 0");
}

static const char *intern_text(nsx *n, const unsigned char *s, int len);

/* Name column `col` of q's current row (from `table`.`column`, whose row is named by integer column
 * id_col when >= 0, else by the row's position); *name interned, "" for NULL. A value that is not
 * text is an unknown name (counted as a bad number); a name over NSYS_NAME_MAX is refused. */
/* StringIds.id is the string table's key: an id on two rows joined every record that names it
 * twice (a crafted export's kernels and calls all doubled, exit 0), and which name counts is not
 * defined. Refused naming the id. */
static fa_status string_ids_unique(nsx *n)
{
    sqlite3_stmt *q = NULL;
    /* the key is an integer (nsys writes one): a text '5' beside an integer 5 is not a duplicate to
     * GROUP BY, yet a join on k.nameId = 5 finds both (every kernel doubled, exit 0) */
    /* (no rowid: a WITHOUT ROWID table has none) */
    SQ_CHECK(sqlite3_prepare_v2(n->db, "SELECT substr(CAST(id AS TEXT), 1, 40), typeof(id) FROM StringIds WHERE typeof(id) "
                                "<> 'integer' LIMIT 1",
                                -1, &q, NULL),
             SQLITE_OK, "checking StringIds");
    int rc = nsys_step(n, q);
    fa_status s = FA_OK;
    if (rc == SQLITE_ROW) {
        const unsigned char *v = sqlite3_column_text(q, 0);
        s = fa_ctx_error(n->ctx, FA_ERR_INPUT,
                         "%s: table StringIds, column id: the key '%s' is %s, where the string key (an integer) belongs",
                         n->path, v ? (const char *)v : "NULL", (const char *)sqlite3_column_text(q, 1));
    }
    else if (rc != SQLITE_DONE)
        s = sq_fail(n, rc, "StringIds");
    sqlite3_finalize(q);
    if (s) return s;
    q = NULL;
    SQ_CHECK(sqlite3_prepare_v2(n->db, "SELECT id, count(*) FROM StringIds GROUP BY id HAVING count(*) > 1 LIMIT 1", -1, &q,
                                NULL),
             SQLITE_OK, "checking StringIds");
    rc = nsys_step(n, q);
    if (rc == SQLITE_ROW)
        s = fa_ctx_error(n->ctx, FA_ERR_INPUT,
                         "%s: table StringIds, column id: the key %lld is on %lld rows: which name it stands for is not "
                         "defined",
                         n->path, (long long)sqlite3_column_int64(q, 0), (long long)sqlite3_column_int64(q, 1));
    else if (rc != SQLITE_DONE)
        s = sq_fail(n, rc, "StringIds");
    sqlite3_finalize(q);
    return s;
}

static fa_status read_name(nsx *n, sqlite3_stmt *q, int col, const char *table, const char *column, int id_col,
                          int64_t row, const char **name)
{
    int t = sqlite3_column_type(q, col);
    /* a name joined from StringIds (id_col: the joined row's id, id_col + 1: the record's own
     * reference): a reference that finds no row, or a row whose value is not text, is a broken
     * export, not a nameless kernel (all of a crafted export's kernels merged into one "" row) */
    if (id_col >= 0 && t != SQLITE_TEXT && sqlite3_column_type(q, id_col + 1) != SQLITE_NULL) {
        static const char *const kinds[] = {"?", "an integer", "a real number", "text", "a blob", "NULL"};
        if (sqlite3_column_type(q, id_col) == SQLITE_NULL)
            return fa_ctx_error(n->ctx, FA_ERR_INPUT,
                                "%s: table %s, row #%lld read, column %s: the name id %lld names no row of table "
                                "StringIds",
                                n->path, n->rec_table ? n->rec_table : "?", (long long)row,
                                n->rec_name_col ? n->rec_name_col : "?", (long long)sqlite3_column_int64(q, id_col + 1));
        return fa_ctx_error(n->ctx, FA_ERR_INPUT, "%s: table %s, row id %lld, column %s: %s where a name belongs",
                            n->path, table, (long long)sqlite3_column_int64(q, id_col), column, kinds[t]);
    }
    if (t != SQLITE_TEXT) {
        if (t != SQLITE_NULL) n->st->n_bad_numbers++;
        *name = fa_trace_intern(n->t, "");
        return *name ? FA_OK : fa_ctx_error(n->ctx, FA_ERR_NOMEM, "%s: out of memory", n->path);
    }
    int len = sqlite3_column_bytes(q, col);
    if ((size_t)len > NSYS_NAME_MAX) {
        if (id_col >= 0 && sqlite3_column_type(q, id_col) == SQLITE_INTEGER)
            return fa_ctx_error(n->ctx, FA_ERR_INPUT,
                                "%s: table %s, row id %lld, column %s: a name of %d bytes, over the %zu KiB limit on one "
                                "name",
                                n->path, table, (long long)sqlite3_column_int64(q, id_col), column, len, NSYS_NAME_MAX >> 10);
        return fa_ctx_error(n->ctx, FA_ERR_INPUT,
                            "%s: table %s, row #%lld read, column %s: a name of %d bytes, over the %zu KiB limit on one name",
                            n->path, table, (long long)row, column, len, NSYS_NAME_MAX >> 10);
    }
    *name = intern_text(n, sqlite3_column_text(q, col), len);
    return *name ? FA_OK : fa_ctx_error(n->ctx, FA_ERR_NOMEM, "%s: out of memory", n->path);
}

static const char *intern_text(nsx *n, const unsigned char *s, int len)
{
    if (!s) return fa_trace_intern(n->t, "");
    int f = fa__name_clean((const char *)s, (size_t)len, &n->tmp);
    if (f) {
        if (f & FA_NAME_BAD_UTF8 && !n->st->n_bad_utf8++) n->st->first_bad_utf8_offset = 0;
        if (f & FA_NAME_NUL) n->st->n_nul_names++;
        if (n->tmp.oom) return NULL;
        return fa_trace_intern_n(n->t, n->tmp.data, n->tmp.len);
    }
    return fa_trace_intern_n(n->t, (const char *)s, (size_t)len);
}

/* Typed column reads: SQLite stores any type in any column, and sqlite3_column_int64 turns
 * NULL and text into 0 and clamps reals, which made 183-second kernels and wrapped ids. */
typedef enum { COL_OK, COL_NULL, COL_BAD } colr;

static colr col_i64(sqlite3_stmt *q, int i, int64_t *v)
{
    switch (sqlite3_column_type(q, i)) {
    case SQLITE_INTEGER: *v = sqlite3_column_int64(q, i); return COL_OK;
    case SQLITE_NULL: return COL_NULL;
    default: return COL_BAD; /* TEXT, REAL, BLOB */
    }
}

/* A column the record needs (a time, a process, device or stream id): anything but an INTEGER
 * makes the row a bad record. */
static bool need_i64(sqlite3_stmt *q, int i, int64_t *v)
{
    return col_i64(q, i, v) == COL_OK;
}

/* A descriptive column (launch configuration, sizes): an INTEGER in [0, INT32_MAX], else 0
 * (unknown); a value of the wrong type or out of range counts as a bad number. */
static int32_t desc_i32(nsx *n, sqlite3_stmt *q, int i)
{
    int64_t v = 0;
    colr r = col_i64(q, i, &v);
    if (r == COL_NULL) return 0;
    if (r == COL_BAD || v < 0 || v > INT32_MAX) {
        n->st->n_bad_numbers++;
        return 0;
    }
    return (int32_t)v;
}

/* A row skipped because a column it needs is unusable. */
static void bad_row(nsx *n)
{
    n->st->n_bad_records++;
}

static fa_status add_act(nsx *n, fa_activity *a, int64_t start, int64_t end)
{
    if (end < start) {
        n->st->n_negative_durations++;
        end = start;
    }
    /* signed until fa__import_place_times: a start before 0 shifts the whole trace, never clamps */
    a->start_ns = (uint64_t)start;
    a->end_ns = (uint64_t)end;
    if (!a->name) return fa_ctx_error(n->ctx, FA_ERR_NOMEM, "%s: out of memory", n->path);
    if (!fa_trace_add(n->t, a)) return fa_ctx_error(n->ctx, FA_ERR_NOMEM, "%s: out of memory", n->path);
    n->st->n_events++;
    return FA_OK;
}

static int64_t pid_of_tid(int64_t global_tid)
{
    return global_tid & ~(int64_t)0xFFFFFF; /* nsys: globalTid = ... | pid << 24 | tid */
}

static fa_status read_metadata(nsx *n)
{
    const char *mt = has_table(n, "META_DATA_EXPORT") ? "META_DATA_EXPORT"
                     : has_table(n, "EXPORT_META_DATA") ? "EXPORT_META_DATA" : NULL;
    if (!mt) return FA_OK;
    if (!has_column(n, mt, "name") || !has_column(n, mt, "value")) return FA_OK;
    char sql[200];
    /* only version rows: the table also holds host and user names, which we never read */
    snprintf(sql, sizeof sql, "SELECT value FROM %s WHERE name = 'EXPORT_SCHEMA_VERSION'", mt);
    sqlite3_stmt *q = NULL;
    SQ_CHECK(sqlite3_prepare_v2(n->db, sql, -1, &q, NULL), SQLITE_OK, "reading the export metadata");
    if (nsys_step(n, q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        snprintf(n->st->schema, sizeof n->st->schema, "nsys %.24s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    if (!n->st->schema[0]) snprintf(n->st->schema, sizeof n->st->schema, "nsys (%s)", mt);
    return FA_OK;
}

static fa_status read_gpus(nsx *n)
{
    const char *tb = "TARGET_INFO_GPU";
    if (!has_table(n, tb) || !has_column(n, tb, "id")) return FA_OK;
    fa_buf *b = &n->sql;
    fa_buf_reset(b);
    fa_buf_puts(b, "SELECT g.id");
    opt_col(n, b, tb, "g", "name");
    opt_col(n, b, tb, "g", "smCount");
    opt_col(n, b, tb, "g", "computeMajor");
    opt_col(n, b, tb, "g", "computeMinor");
    opt_col(n, b, tb, "g", "totalMemory");
    opt_col(n, b, tb, "g", "maxWarpsPerSm");
    opt_col(n, b, tb, "g", "maxRegistersPerSm");
    opt_col(n, b, tb, "g", "maxShmemPerSm");
    opt_col(n, b, tb, "g", "maxShmemPerBlock");
    opt_col(n, b, tb, "g", "threadsPerWarp");
    fa_buf_puts(b, " FROM TARGET_INFO_GPU g ORDER BY g.id");
    sqlite3_stmt *q = NULL;
    SQ_CHECK(sqlite3_prepare_v2(n->db, b->data, -1, &q, NULL), SQLITE_OK, "reading TARGET_INFO_GPU");
    int rc;
    while ((rc = nsys_step(n, q)) == SQLITE_ROW && n->st->n_devices < FA_IMPORT_MAX_DEVICES) {
        fa_import_device *d = &n->st->devices[n->st->n_devices++];
        memset(d, 0, sizeof *d);
        d->id = desc_i32(n, q, 0);
        if (sqlite3_column_type(q, 1) == SQLITE_TEXT)
            fa__name_to_cbuf((const char *)sqlite3_column_text(q, 1), (size_t)sqlite3_column_bytes(q, 1), d->name,
                             sizeof d->name);
        d->sm_count = desc_i32(n, q, 2);
        d->cc_major = desc_i32(n, q, 3);
        d->cc_minor = desc_i32(n, q, 4);
        int64_t mem = 0;
        if (col_i64(q, 5, &mem) == COL_OK && mem > 0) d->total_mem_bytes = (uint64_t)mem;
        d->warp_size = desc_i32(n, q, 10);
        int64_t thr = (int64_t)desc_i32(n, q, 6) * (d->warp_size ? d->warp_size : 32);
        d->max_threads_per_sm = thr <= INT32_MAX ? (int32_t)thr : 0;
        d->regs_per_sm = desc_i32(n, q, 7);
        d->smem_per_sm = desc_i32(n, q, 8);
        d->smem_per_block = desc_i32(n, q, 9);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sq_fail(n, rc, tb);
    if (n->st->n_devices && n->st->devices[0].name[0])
        n->t->device_name = fa_trace_intern(n->t, n->st->devices[0].name);
    return FA_OK;
}

static fa_status read_kernels(nsx *n)
{
    const char *tb = "CUPTI_ACTIVITY_KIND_KERNEL";
    static const char *const req[] = {"start", "end", "correlationId", "globalPid", "deviceId", "streamId"};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        fa_status s = need_column(n, tb, req[i], "needed for every kernel record");
        if (s) return s;
    }
    const char *name_col = has_column(n, tb, "demangledName") ? "demangledName"
                           : has_column(n, tb, "shortName") ? "shortName" : NULL;
    if (!name_col)
        return fa_ctx_error(n->ctx, FA_ERR_INPUT,
                            "%s: Nsight Systems export lacks column %s.demangledName (or shortName): "
                            "kernel names", n->path, tb);
    fa_buf *b = &n->sql;
    fa_buf_reset(b);
    fa_buf_printf(b, "SELECT k.start, k.end, k.correlationId, k.globalPid, k.deviceId, k.streamId, s.value");
    opt_col(n, b, tb, "k", "gridX");
    opt_col(n, b, tb, "k", "gridY");
    opt_col(n, b, tb, "k", "gridZ");
    opt_col(n, b, tb, "k", "blockX");
    opt_col(n, b, tb, "k", "blockY");
    opt_col(n, b, tb, "k", "blockZ");
    opt_col(n, b, tb, "k", "registersPerThread");
    opt_col(n, b, tb, "k", "staticSharedMemory");
    opt_col(n, b, tb, "k", "dynamicSharedMemory");
    opt_col(n, b, tb, "k", "localMemoryPerThread");
    fa_buf_printf(b, ", s.id, k.%s FROM %s k LEFT JOIN StringIds s ON s.id = k.%s ORDER BY k.start", name_col, tb, name_col);
    n->rec_table = tb;
    n->rec_name_col = name_col;
    sqlite3_stmt *q = NULL;
    SQ_CHECK(sqlite3_prepare_v2(n->db, b->data, -1, &q, NULL), SQLITE_OK, "reading CUPTI_ACTIVITY_KIND_KERNEL");
    int rc;
    fa_status s = FA_OK;
    int64_t row = 0;
    while ((rc = nsys_step(n, q)) == SQLITE_ROW) {
        fa_activity a = fa_activity_init(FA_ACT_KERNEL);
        row++;
        int64_t start, end, dev;
        colr cr = col_i64(q, 2, &a.correlation);
        if (!need_i64(q, 0, &start) || !need_i64(q, 1, &end) || cr == COL_BAD || !need_i64(q, 3, &a.pid) ||
            !need_i64(q, 4, &dev) || dev < -1 || dev > INT32_MAX || !need_i64(q, 5, &a.stream)) {
            bad_row(n);
            continue;
        }
        if (cr == COL_NULL) a.correlation = -1;
        a.device = (int32_t)dev;
        if ((s = read_name(n, q, 6, "StringIds", "value", 17, row, &a.name))) break;
        for (int i = 0; i < 3; i++) {
            a.grid[i] = desc_i32(n, q, 7 + i);
            a.block[i] = desc_i32(n, q, 10 + i);
        }
        a.registers = desc_i32(n, q, 13);
        a.static_smem = desc_i32(n, q, 14);
        a.dynamic_smem = desc_i32(n, q, 15);
        a.local_mem = desc_i32(n, q, 16);
        s = add_act(n, &a, start, end);
        if (s) break;
    }
    if (!s && rc != SQLITE_DONE)
        s = sq_fail(n, rc, tb);
    sqlite3_finalize(q);
    return s;
}

static fa_status read_calls(nsx *n, const char *tb, fa_activity_kind kind)
{
    static const char *const req[] = {"start", "end", "globalTid", "correlationId", "nameId"};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        fa_status s = need_column(n, tb, req[i], "needed to link kernels to their launch");
        if (s) return s;
    }
    fa_buf *b = &n->sql;
    fa_buf_reset(b);
    fa_buf_printf(b, "SELECT r.start, r.end, r.globalTid, r.correlationId, s.value, s.id, r.nameId FROM %s r "
                     "LEFT JOIN StringIds s ON s.id = r.nameId", tb);
    n->rec_table = tb;
    n->rec_name_col = "nameId";
    sqlite3_stmt *q = NULL;
    SQ_CHECK(sqlite3_prepare_v2(n->db, b->data, -1, &q, NULL), SQLITE_OK, "reading the launch calls");
    int rc;
    fa_status s = FA_OK;
    int64_t row = 0;
    while ((rc = nsys_step(n, q)) == SQLITE_ROW) {
        fa_activity a = fa_activity_init(kind);
        int64_t start, end, gt;
        row++;
        colr cr = col_i64(q, 3, &a.correlation);
        if (!need_i64(q, 0, &start) || !need_i64(q, 1, &end) || !need_i64(q, 2, &gt) || cr == COL_BAD) {
            bad_row(n);
            continue;
        }
        if (cr == COL_NULL) a.correlation = -1;
        a.pid = pid_of_tid(gt);
        a.tid = gt;
        if ((s = read_name(n, q, 4, "StringIds", "value", 5, row, &a.name))) break;
        s = add_act(n, &a, start, end);
        if (s) break;
    }
    if (!s && rc != SQLITE_DONE)
        s = sq_fail(n, rc, tb);
    sqlite3_finalize(q);
    return s;
}

typedef struct callref {
    int64_t tid, corr;
    uint64_t start, end;
    size_t i;
} callref;

static int callref_cmp(const void *x, const void *y)
{
    const callref *a = x, *b = y;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->corr != b->corr) return a->corr < b->corr ? -1 : 1;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    if (a->end != b->end) return a->end > b->end ? -1 : 1; /* the outer call first */
    return a->i < b->i ? -1 : a->i > b->i;
}

/* "cudaLaunchKernel_v7000" is the versioned entry point of "cudaLaunchKernel" */
static bool versioned_of(const char *inner, const char *outer)
{
    size_t n = strlen(outer);
    if (strncmp(inner, outer, n) || inner[n] != '_' || inner[n + 1] != 'v' || !inner[n + 2]) return false;
    for (const char *p = inner + n + 2; *p; p++)
        if (*p < '0' || *p > '9') return false;
    return true;
}

/* Older exports (nsys 2021, EXPORT_META_DATA) record a runtime call twice: the call and, nested in
 * it on the same thread with the same correlation id, its versioned entry point
 * ("cudaLaunchKernel" around "cudaLaunchKernel_v7000"). One call is one launch: the inner record
 * of such a pair, among the records from `first` on, is dropped (it counted as a duplicate
 * correlation, and the kernel linked to it). */
static fa_status drop_versioned_calls(nsx *n, size_t first)
{
    fa_trace *t = n->t;
    size_t m = t->n_acts - first;
    if (m < 2) return FA_OK;
    callref *r = malloc(m * sizeof *r);
    bool *drop = calloc(m, sizeof *drop);
    if (!r || !drop) {
        free(r);
        free(drop);
        return fa_ctx_error(n->ctx, FA_ERR_NOMEM, "%s: out of memory", n->path);
    }
    for (size_t k = 0; k < m; k++) {
        const fa_activity *a = &t->acts[first + k];
        r[k] = (callref){a->tid, a->correlation, a->start_ns, a->end_ns, k};
    }
    qsort(r, m, sizeof *r, callref_cmp);
    size_t outer = 0, dropped = 0;
    for (size_t k = 1; k < m; k++) {
        const callref *o = &r[outer], *c = &r[k];
        const fa_activity *oa = &t->acts[first + o->i], *ca = &t->acts[first + c->i];
        if (c->corr >= 0 && c->tid == o->tid && c->corr == o->corr && c->start >= o->start && c->end <= o->end &&
            oa->name && ca->name && versioned_of(ca->name, oa->name)) {
            drop[c->i] = true;
            dropped++;
        } else {
            outer = k;
        }
    }
    if (dropped) {
        size_t w = first;
        for (size_t k = 0; k < m; k++)
            if (!drop[k]) t->acts[w++] = t->acts[first + k];
        t->n_acts = w;
        n->st->n_events -= dropped;
    }
    free(r);
    free(drop);
    return FA_OK;
}

/* CUPTI_ACTIVITY_MEMCPY_KIND values (cupti_activity.h) */
static const char *memcpy_name(int k)
{
    static const char *const names[] = {"Memcpy unknown", "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA",
                                        "Memcpy AtoH", "Memcpy AtoA", "Memcpy AtoD", "Memcpy DtoA",
                                        "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"};
    return k >= 0 && k < (int)(sizeof names / sizeof names[0]) ? names[k] : "Memcpy";
}

static fa_status read_mem(nsx *n, const char *tb, fa_activity_kind kind)
{
    static const char *const req[] = {"start", "end", "correlationId", "globalPid", "deviceId", "streamId"};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        fa_status s = need_column(n, tb, req[i], "needed for every memcpy/memset record");
        if (s) return s;
    }
    fa_buf *b = &n->sql;
    fa_buf_reset(b);
    fa_buf_puts(b, "SELECT m.start, m.end, m.correlationId, m.globalPid, m.deviceId, m.streamId");
    opt_col(n, b, tb, "m", "bytes");
    opt_col(n, b, tb, "m", "copyKind");
    fa_buf_printf(b, " FROM %s m", tb);
    sqlite3_stmt *q = NULL;
    SQ_CHECK(sqlite3_prepare_v2(n->db, b->data, -1, &q, NULL), SQLITE_OK, "reading memcpy/memset records");
    int rc;
    fa_status s = FA_OK;
    while ((rc = nsys_step(n, q)) == SQLITE_ROW) {
        fa_activity a = fa_activity_init(kind);
        int64_t start, end, dev, bytes = 0, ck = 0;
        colr cr = col_i64(q, 2, &a.correlation);
        if (!need_i64(q, 0, &start) || !need_i64(q, 1, &end) || cr == COL_BAD || !need_i64(q, 3, &a.pid) ||
            !need_i64(q, 4, &dev) || dev < -1 || dev > INT32_MAX || !need_i64(q, 5, &a.stream)) {
            bad_row(n);
            continue;
        }
        if (cr == COL_NULL) a.correlation = -1;
        a.device = (int32_t)dev;
        colr br = col_i64(q, 6, &bytes);
        if (br == COL_BAD || bytes < 0) {
            n->st->n_bad_numbers++;
            bytes = 0;
        }
        if (col_i64(q, 7, &ck) != COL_OK || ck < 0 || ck > INT32_MAX) ck = 0;
        if (kind == FA_ACT_MEMCPY) {
            a.bytes_read = a.bytes_written = (uint64_t)bytes;
            a.name = fa_trace_intern(n->t, memcpy_name((int)ck));
        } else {
            a.bytes_written = (uint64_t)bytes;
            a.name = fa_trace_intern(n->t, "Memset");
        }
        s = add_act(n, &a, start, end);
        if (s) break;
    }
    if (!s && rc != SQLITE_DONE)
        s = sq_fail(n, rc, tb);
    sqlite3_finalize(q);
    return s;
}

/* NVTX push/pop (eventType 59) and start/end (60) ranges; marks (34) and others are skipped.
 * Event type values: Nsight Systems export documentation, NVTX_EVENTS. */
static fa_status read_nvtx(nsx *n, const char *tb)
{
    static const char *const req[] = {"start", "end", "globalTid"};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        fa_status s = need_column(n, tb, req[i], "needed for NVTX ranges");
        if (s) return s;
    }
    bool has_text = has_column(n, tb, "text"), has_tid = has_column(n, tb, "textId");
    bool has_type = has_column(n, tb, "eventType");
    fa_buf *b = &n->sql;
    fa_buf_reset(b);
    fa_buf_printf(b, "SELECT e.start, e.end, e.globalTid, %s, %s, %s, %s FROM %s e %s WHERE e.end IS NOT NULL%s",
                  has_text && has_tid ? "COALESCE(e.text, s.value)" : has_text ? "e.text" : has_tid ? "s.value" : "NULL",
                  has_tid ? "s.id" : "NULL", has_tid ? "e.textId" : "NULL", has_text ? "e.text" : "NULL", tb,
                  has_tid ? "LEFT JOIN StringIds s ON s.id = e.textId" : "", has_type ? " AND e.eventType IN (59, 60)" : "");
    sqlite3_stmt *q = NULL;
    SQ_CHECK(sqlite3_prepare_v2(n->db, b->data, -1, &q, NULL), SQLITE_OK, "reading NVTX ranges");
    int rc;
    fa_status s = FA_OK;
    int64_t row = 0;
    while ((rc = nsys_step(n, q)) == SQLITE_ROW) {
        fa_activity a = fa_activity_init(FA_ACT_RANGE);
        int64_t start, end, gt;
        row++;
        if (!need_i64(q, 0, &start) || !need_i64(q, 1, &end) || !need_i64(q, 2, &gt)) {
            bad_row(n);
            continue;
        }
        a.pid = pid_of_tid(gt);
        a.tid = gt;
        /* a range named by textId (no text of its own) whose id finds no StringIds row: a broken
         * export, as for kernels and calls, not a nameless range */
        if (sqlite3_column_type(q, 6) == SQLITE_NULL && sqlite3_column_type(q, 5) != SQLITE_NULL &&
            sqlite3_column_type(q, 4) == SQLITE_NULL) {
            s = fa_ctx_error(n->ctx, FA_ERR_INPUT,
                             "%s: table %s, row #%lld read, column textId: the name id %s names no row of table StringIds",
                             n->path, tb, (long long)row, (const char *)sqlite3_column_text(q, 5));
            break;
        }
        if ((s = read_name(n, q, 3, tb, has_text ? "text (or StringIds.value of textId)" : "textId (StringIds.value)", -1,
                          row, &a.name)))
            break;
        s = add_act(n, &a, start, end);
        if (s) break;
    }
    if (!s && rc != SQLITE_DONE)
        s = sq_fail(n, rc, tb);
    sqlite3_finalize(q);
    return s;
}

static fa_status nsys_read(nsx *n)
{
    sqlite3_stmt *q = NULL;
    /* a non-database file fails here (SQLITE_NOTADB) */
    if (sqlite3_prepare_v2(n->db, "SELECT count(*) FROM sqlite_master", -1, &q, NULL) != SQLITE_OK ||
        nsys_step(n, q) != SQLITE_ROW) {
        fa_status s = fa_ctx_error(n->ctx, FA_ERR_INPUT, "%s: not a readable SQLite database: %s",
                                   n->path, sqlite3_errmsg(n->db));
        sqlite3_finalize(q);
        return s;
    }
    sqlite3_finalize(q);
    fa_status s = only_tables(n);
    if (s) return s;
    bool meta = has_table(n, "META_DATA_EXPORT") || has_table(n, "EXPORT_META_DATA");
    bool kern = has_table(n, "CUPTI_ACTIVITY_KIND_KERNEL");
    bool rt = has_table(n, "CUPTI_ACTIVITY_KIND_RUNTIME");
    if (!meta && !kern && !rt)
        return fa_ctx_error(n->ctx, FA_ERR_INPUT,
                            "%s: not an Nsight Systems export (no META_DATA_EXPORT, EXPORT_META_DATA "
                            "or CUPTI_ACTIVITY_KIND_KERNEL table)", n->path);
    s = read_metadata(n);
    if (s) return s;
    if ((kern || rt) && !has_table(n, "StringIds"))
        return fa_ctx_error(n->ctx, FA_ERR_INPUT,
                            "%s: Nsight Systems export lacks table StringIds (kernel and API names)", n->path);
    if (has_table(n, "StringIds")) {
        if ((s = need_column(n, "StringIds", "id", "string table key"))) return s;
        if ((s = need_column(n, "StringIds", "value", "string table text"))) return s;
        if ((s = string_ids_unique(n))) return s;
    }
    if ((s = read_gpus(n))) return s;
    if (kern && (s = read_kernels(n))) return s;
    size_t first_call = n->t->n_acts;
    if (rt && (s = read_calls(n, "CUPTI_ACTIVITY_KIND_RUNTIME", FA_ACT_RUNTIME))) return s;
    if (rt && (s = drop_versioned_calls(n, first_call))) return s;
    if (has_table(n, "CUPTI_ACTIVITY_KIND_DRIVER") &&
        (s = read_calls(n, "CUPTI_ACTIVITY_KIND_DRIVER", FA_ACT_DRIVER)))
        return s;
    if (has_table(n, "CUPTI_ACTIVITY_KIND_MEMCPY") && (s = read_mem(n, "CUPTI_ACTIVITY_KIND_MEMCPY", FA_ACT_MEMCPY)))
        return s;
    if (has_table(n, "CUPTI_ACTIVITY_KIND_MEMSET") && (s = read_mem(n, "CUPTI_ACTIVITY_KIND_MEMSET", FA_ACT_MEMSET)))
        return s;
    char nvtx[128];
    if (find_table_prefix(n, "NVTX_EVENTS", nvtx, sizeof nvtx) && (s = read_nvtx(n, nvtx))) return s;
    return FA_OK;
}

fa_status fa__import_nsys_src(fa_ctx *ctx, const char *path, const char *name, uint64_t bytes, fa_trace **out,
                              fa_import_stats *stats)
{
    uint64_t t0 = fa_now_ns();
    fa_import_stats local;
    fa_import_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    st->kind = fa_import_detect(path);
    st->file_bytes = st->input_bytes = bytes;
    if (st->kind != FA_IMPORT_NSYS_SQLITE)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: not an SQLite file (no \"SQLite format 3\" header)", name);
    nsx n = {0};
    n.ctx = ctx;
    n.path = name;
    n.st = st;
    fa_buf_init(&n.sql);
    fa_buf_init(&n.tmp);
    /* SQLite opens PATH-journal / -wal / -shm by name when they exist: a FIFO there would block it */
    bool watch_companions = false, shm_before = true;
    fa_status s = fa_sqlite_companions_check(ctx, path);
    if (s) goto done;
    char lit[4200];
    const char *opath = fa_sqlite_literal_path(path, lit, sizeof lit);
    if (!opath) {
        s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: path too long", name);
        goto done;
    }
    /* a finished export with no -wal beside it: opened immutable, so reading it makes no -wal or
     * -shm in the user's folder (a WAL-mode export gained both); with a -wal, read with it */
    char walp[4300], shmp[4300];
    struct stat wsb;
    snprintf(walp, sizeof walp, "%s-wal", path);
    snprintf(shmp, sizeof shmp, "%s-shm", path);
    bool wal_before = !(lstat(walp, &wsb) != 0 && errno == ENOENT);
    shm_before = !(lstat(shmp, &wsb) != 0 && errno == ENOENT);
    watch_companions = true;
    char *uri = !wal_before ? fa_sqlite_immutable_uri(path) : NULL;
    int rc = uri ? sqlite3_open_v2(uri, &n.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL)
                 : sqlite3_open_v2(opath, &n.db, SQLITE_OPEN_READONLY, NULL);
    free(uri);
    if (rc != SQLITE_OK) {
        s = rc == SQLITE_NOMEM || !n.db
                ? fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory opening the database", name)
                : fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot open database: %s", name, sqlite3_errmsg(n.db));
        goto done;
    }
    /* The export is untrusted input (docs/hardening.md, issue 32), as a run database is: SQLite's
     * defensive mode, no function of its schema that is not innocuous, no view or trigger ever
     * run, double-quoted text always an identifier, no value longer than NSYS_VALUE_HARD_MAX
     * loaded, every step bounded in time. */
    static const int k_off[] = {SQLITE_DBCONFIG_TRUSTED_SCHEMA, SQLITE_DBCONFIG_ENABLE_VIEW,
                                SQLITE_DBCONFIG_ENABLE_TRIGGER, SQLITE_DBCONFIG_DQS_DML, SQLITE_DBCONFIG_DQS_DDL,
                                SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION};
    rc = sqlite3_db_config(n.db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < sizeof k_off / sizeof k_off[0]; i++)
        rc = sqlite3_db_config(n.db, k_off[i], 0, NULL);
    if (rc != SQLITE_OK) {
        s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: cannot configure SQLite: %s", name, sqlite3_errstr(rc));
        goto done;
    }
    sqlite3_limit(n.db, SQLITE_LIMIT_LENGTH, NSYS_VALUE_HARD_MAX);
    const char *lim = getenv("FA_DB_STEP_LIMIT_S");
    char *end = NULL;
    double sec = lim && *lim ? strtod(lim, &end) : 0;
    if (!(sec > 0 && sec < 1e6 && end && !*end)) sec = NSYS_STEP_LIMIT_S;
    n.limit_ns = (int64_t)(sec * 1e9);
    sqlite3_progress_handler(n.db, 1000, nsys_progress, &n);
    n.t = fa_trace_create("nsys");
    if (!n.t) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", name);
        goto done;
    }
    s = nsys_read(&n);
    if (s) goto done;
    fa__import_place_times(n.t, st, 0);
    s = fa__import_attribute(n.ctx, n.t, n.st, true, FA_ACT_RANGE, false);
    if (s) {
        s = fa_ctx_wrap(ctx, s, "%s: ", name);
        goto done;
    }
    n.t->source_path = fa_trace_intern(n.t, name);
    n.t->n_parse_errors = st->n_bad_utf8 + st->n_bad_numbers + st->n_bad_records;
    fa__import_count(n.t, st);
    *out = n.t;
    n.t = NULL;
done:
    fa_trace_free(n.t);
    sqlite3_close(n.db);
    /* with a -wal beside it SQLite read the export with a -shm it made: not left in the user's folder */
    if (watch_companions) fa_sqlite_remove_created(path, true, shm_before);
    fa_buf_free(&n.sql);
    fa_buf_free(&n.tmp);
    st->elapsed_ns = fa_now_ns() - t0;
    return s;
}

fa_status fa_import_nsys(fa_ctx *ctx, const char *path, fa_trace **out, fa_import_stats *stats)
{
    fa_import_source src;
    fa_status s = fa_import_source_open(ctx, path, &src);
    if (s) {
        if (stats) memset(stats, 0, sizeof *stats);
        return s;
    }
    s = fa__import_nsys_src(ctx, src.path, path, src.bytes, out, stats);
    fa_import_source_close(&src);
    return s;
}
