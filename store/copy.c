/* store/copy — move run history between two stores (an SQLite file and a PostgreSQL server,
 * either way, or two of a kind): every row of the chosen runs under new run ids, and the device
 * ceilings. Table and column names come from our own schema (the reference store/schema.c builds
 * from the migrations), never from a store being read: a migration that adds a column is copied
 * too, and a source whose schema differs was refused when it was opened. */
#include "store-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tables keyed by run_id, parents before children (plans before clusters/why_not/fused_kernels,
 * clusters before cluster_post_ops). A migration adding a table keyed by run_id adds it here
 * (test_store_backends copies every kind of row there and back). */
static const char *const k_run_tables[] = {"nodes", "tensors", "consumers", "kernels", "analysis_kernels",
                                           "analysis_chains", "analysis_edges", "analysis_summary", "plans",
                                           "clusters", "cluster_post_ops", "why_not", "fused_kernels", "benchmarks"};

typedef struct col_list {
    char **names;
    int n;
    char *joined; /* "a, b, c" */
} col_list;

static void col_list_free(col_list *c)
{
    for (int i = 0; i < c->n; i++) free(c->names[i]);
    free(c->names);
    free(c->joined);
    memset(c, 0, sizeof *c);
}

/* The columns of `table` in our own schema (the reference the migrations build), in their order:
 * never the names a database being read declares. Each store's schema was checked against the
 * same reference when it was opened (a file by store/sqlite.c, a server by store/pg.c), so both
 * have exactly these columns. */
static fa_status table_columns(fa_ctx *ctx, sqlite3 *ref, const char *table, col_list *out)
{
    memset(out, 0, sizeof *out);
    fa_status s = fa_store_schema_columns(ctx, ref, table, &out->names, &out->n);
    fa_buf j;
    fa_buf_init(&j);
    for (int i = 0; !s && i < out->n; i++) fa_buf_printf(&j, "%s%s", i ? ", " : "", out->names[i]);
    if (!s && j.oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    out->joined = s ? NULL : j.data;
    if (s) {
        fa_buf_free(&j);
        col_list_free(out);
    }
    return s;
}

/* Bind src's current column c to dst's parameter i with its kind. */
static int bind_like(fa_stmt *dst, int i, fa_stmt *src, int c)
{
    switch (fa_col_kind(src, c)) {
    case FA_DB_INTEGER: return fa_stmt_bind_i64(dst, i, fa_col_i64(src, c));
    case FA_DB_FLOAT: return fa_stmt_bind_dbl(dst, i, fa_col_dbl(src, c));
    case FA_DB_TEXT: return fa_stmt_bind_txt(dst, i, fa_col_text(src, c));
    default: return fa_stmt_bind_txt(dst, i, NULL);
    }
}

/* The id in dst of the run that is src's run `id` (same kind, host, pid and start time); 0 when
 * dst does not hold it. */
static fa_status find_same_run(fa_ctx *ctx, fa_store *src, int64_t id, fa_store *dst, int64_t *found)
{
    fa_stmt *q = NULL, *d = NULL;
    *found = 0;
    fa_status s = fa_sq_prepare(ctx, src, "SELECT kind, started_at_ns, host, pid FROM runs WHERE id = ?1", &q);
    if (!s) s = FA_SQL_CHECK(ctx, src, fa_stmt_bind_i64(q, 1, id));
    int rc = FA_DB_DONE;
    if (!s) s = STEP_CHECK(ctx, src, q, rc = fa_stmt_step(q));
    if (!s && rc != FA_DB_ROW) s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: no run %lld", src->path, (long long)id);
    if (!s)
        s = fa_sq_prepare(ctx, dst,
                          "SELECT id FROM runs WHERE kind = ?1 AND started_at_ns = ?2 AND coalesce(host, '') = "
                          "coalesce(CAST(?3 AS TEXT), '') AND coalesce(pid, -1) = coalesce(?4, -1) ORDER BY id LIMIT 1",
                          &d);
    if (!s) {
        binder b;
        b_start(&b, d);
        b_txt(&b, fa_col_text(q, 0));
        b_i64(&b, fa_col_i64(q, 1));
        b_txt(&b, fa_col_text(q, 2));
        b_i64(&b, fa_col_null(q, 3) ? -1 : fa_col_i64(q, 3));
        s = FA_SQL_CHECK(ctx, dst, b.rc);
        if (!s) s = STEP_CHECK(ctx, dst, d, rc = fa_stmt_step(d));
        if (!s && rc == FA_DB_ROW) *found = fa_col_i64(d, 0);
    }
    fa_stmt_finalize(d);
    fa_stmt_finalize(q);
    return s;
}

/* Copy the runs row of `id` to dst with tag `tag` (NULL: as in src); *new_id set. */
static fa_status copy_run_row(fa_ctx *ctx, fa_store *src, fa_store *dst, int64_t id, const col_list *cols,
                              const char *tag, int64_t *new_id)
{
    fa_buf sel, ins;
    fa_buf_init(&sel);
    fa_buf_init(&ins);
    fa_buf_puts(&sel, "SELECT ");
    fa_buf_puts(&ins, "INSERT INTO runs (");
    int n = 0, tag_col = -1;
    for (int i = 0; i < cols->n; i++) {
        if (!strcmp(cols->names[i], "id")) continue;
        if (!strcmp(cols->names[i], "tag")) tag_col = n;
        fa_buf_printf(&sel, "%s%s", n ? ", " : "", cols->names[i]);
        fa_buf_printf(&ins, "%s%s", n ? ", " : "", cols->names[i]);
        n++;
    }
    fa_buf_puts(&sel, " FROM runs WHERE id = ?1");
    fa_buf_puts(&ins, ") VALUES (");
    for (int i = 0; i < n; i++) fa_buf_printf(&ins, "%s?%d", i ? ", " : "", i + 1);
    fa_buf_puts(&ins, ") RETURNING id");
    fa_status s = sel.oom || ins.oom ? fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", dst->path) : FA_OK;
    fa_stmt *q = NULL, *d = NULL;
    if (!s) s = fa_sq_prepare(ctx, src, sel.data, &q);
    if (!s) s = FA_SQL_CHECK(ctx, src, fa_stmt_bind_i64(q, 1, id));
    int rc = FA_DB_DONE;
    if (!s) s = STEP_CHECK(ctx, src, q, rc = fa_stmt_step(q));
    if (!s && rc != FA_DB_ROW) s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: no run %lld", src->path, (long long)id);
    if (!s) s = fa_sq_prepare(ctx, dst, ins.data, &d);
    for (int i = 0; !s && i < n; i++)
        s = FA_SQL_CHECK(ctx, dst, i == tag_col && tag ? fa_stmt_bind_txt(d, i + 1, tag) : bind_like(d, i + 1, q, i));
    if (!s) s = STEP_CHECK(ctx, dst, d, rc = fa_stmt_step(d));
    if (!s && rc != FA_DB_ROW) s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: INSERT INTO runs returned no id", dst->path);
    if (!s) *new_id = fa_col_i64(d, 0);
    if (!s) s = STEP_CHECK(ctx, dst, d, fa_stmt_step(d));
    fa_stmt_finalize(d);
    fa_stmt_finalize(q);
    fa_buf_free(&sel);
    fa_buf_free(&ins);
    return s;
}

/* Every row of `table` for run `id` in src, into dst under run `new_id` (one bulk insert). */
static fa_status copy_table_rows(fa_ctx *ctx, fa_store *src, fa_store *dst, const char *table, const col_list *cols,
                                 int64_t id, int64_t new_id)
{
    char *sql = malloc(strlen(cols->joined) + strlen(table) + 64);
    if (!sql) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", dst->path);
    sprintf(sql, "SELECT %s FROM %s WHERE run_id = ?1", cols->joined, table);
    int run_col = -1;
    for (int i = 0; i < cols->n; i++)
        if (!strcmp(cols->names[i], "run_id")) run_col = i;
    fa_stmt *q = NULL, *d = NULL;
    fa_status s = run_col < 0 ? fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: table %s has no run_id", src->path, table) : FA_OK;
    if (!s) s = fa_sq_prepare(ctx, src, sql, &q);
    if (!s) s = FA_SQL_CHECK(ctx, src, fa_stmt_bind_i64(q, 1, id));
    if (!s) s = FA_SQL_CHECK(ctx, dst, fa_db_prepare_bulk(dst, table, cols->joined, cols->n, &d));
    int rc = FA_DB_DONE;
    while (!s && (rc = fa_stmt_step(q)) == FA_DB_ROW) {
        s = FA_SQL_CHECK(ctx, dst, fa_stmt_reset(d));
        for (int i = 0; !s && i < cols->n; i++)
            s = FA_SQL_CHECK(ctx, dst, i == run_col ? fa_stmt_bind_i64(d, i + 1, new_id) : bind_like(d, i + 1, q, i));
        if (!s) s = STEP_CHECK(ctx, dst, d, fa_stmt_step(d));
    }
    if (!s) s = STEP_CHECK(ctx, src, q, rc);
    if (!s) s = FA_SQL_CHECK(ctx, dst, fa_db_bulk_end(d));
    if (s) fa_ctx_wrap(ctx, s, "copying %s of run %lld: ", table, (long long)id);
    fa_stmt_finalize(d);
    fa_stmt_finalize(q);
    free(sql);
    return s;
}

/* Device ceilings: src's rows into dst, a row dst measured later kept. */
static fa_status copy_ceilings(fa_ctx *ctx, fa_store *src, fa_store *dst)
{
    fa_arena *ar = fa_arena_create(0);
    if (!ar) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_ceiling *c = NULL;
    size_t n = 0;
    fa_status s = fa_store_get_ceilings(ctx, src, NULL, ar, &c, &n);
    fa_stmt *d = NULL;
    if (!s && n)
        s = fa_sq_prepare(ctx, dst,
                          "INSERT INTO device_ceilings (device_key, name, kind, value, unit, source, measured_at_ns, "
                          "detail) VALUES (?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT (device_key, name) DO UPDATE SET "
                          "kind=excluded.kind, value=excluded.value, unit=excluded.unit, source=excluded.source, "
                          "measured_at_ns=excluded.measured_at_ns, detail=excluded.detail "
                          "WHERE excluded.measured_at_ns > device_ceilings.measured_at_ns",
                          &d);
    for (size_t i = 0; !s && i < n; i++) {
        binder b;
        b_start(&b, d);
        b_txt(&b, c[i].device_key);
        b_txt(&b, c[i].name);
        b_txt(&b, c[i].kind);
        b_dbl(&b, c[i].value);
        b_txt(&b, c[i].unit);
        b_txt(&b, c[i].source);
        b_i64(&b, c[i].measured_at_ns);
        b_txt(&b, c[i].detail);
        s = FA_SQL_CHECK(ctx, dst, b.rc);
        if (!s) s = STEP_CHECK(ctx, dst, d, fa_stmt_step(d));
    }
    fa_stmt_finalize(d);
    fa_arena_free(ar);
    return s;
}

/* "fused-of:<id>" -> id; 0 when tag is not a twin's. */
/* A run is read through the readers before it is copied: rows they refuse (a graph id that is no
 * id of the run's graph, a kernel span that is none, a cluster naming nothing) are refused here
 * too, naming the source, instead of spreading into another store where every verb would refuse
 * them (the seventh attack pass copied such runs with exit 0). */
static fa_status validate_run(fa_ctx *ctx, fa_store *src, int64_t id)
{
    fa_arena *ar = fa_arena_create(0);
    if (!ar) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_node_row *nr = NULL;
    fa_tensor_row *tr = NULL;
    fa_consumer_row *cr = NULL;
    size_t n = 0;
    fa_status s = fa_store_get_nodes(ctx, src, id, false, ar, &nr, &n);
    if (!s) s = fa_store_get_tensors(ctx, src, id, ar, &tr, &n);
    if (!s) s = fa_store_get_consumers(ctx, src, id, ar, &cr, &n);
    fa_op_row *ops = NULL;
    int iters = 0;
    if (!s) s = fa_store_op_table(ctx, src, id, ar, &ops, &n, &iters); /* the kernels' spans and node ids */
    fa_plan *plan = NULL;
    if (!s) s = fa_store_get_latest_plan(ctx, src, id, &plan, NULL);
    fa_plan_free(plan);
    fa_arena_free(ar);
    return s;
}

static int64_t twin_of(const char *tag)
{
    if (!tag || strncmp(tag, "fused-of:", 9)) return 0;
    char *end;
    long long v = strtoll(tag + 9, &end, 10);
    return *end || v <= 0 ? 0 : (int64_t)v;
}

fa_status fa_store_copy_runs(fa_ctx *ctx, fa_store *src, fa_store *dst, const int64_t *ids, size_t n_ids,
                             fa_store_copy_result *res)
{
    memset(res, 0, sizeof *res);
    fa_status s = fa_sq_require_writable(ctx, dst, "import runs");
    if (s) return s;
    if (dst->explicit_tx || fa_db_in_tx(dst))
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: fa_store_copy_runs inside an open transaction", dst->path);
    if (!strcmp(src->path, dst->path))
        return fa_ctx_error(ctx, FA_ERR_USAGE, "%s: source and destination are the same run database", src->path);
    fa_arena *ar = fa_arena_create(0);
    if (!ar) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_run_info *runs = NULL;
    size_t n = 0;
    s = fa_store_list_runs(ctx, src, ar, &runs, &n);
    /* The selection (all runs when n_ids is 0) and the fused twins of selected runs, oldest
     * first so a baseline's new id is known before its twins. */
    bool *pick = s ? NULL : calloc(n ? n : 1, sizeof *pick);
    int64_t *map_old = s ? NULL : calloc(n ? n : 1, sizeof *map_old), *map_new = s ? NULL : calloc(n ? n : 1, sizeof *map_new);
    if (!s && (!pick || !map_old || !map_new)) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    for (size_t k = 0; !s && k < n_ids; k++) {
        size_t i = 0;
        while (i < n && runs[i].id != ids[k]) i++;
        if (i == n) s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: no run %lld", src->path, (long long)ids[k]);
        else pick[i] = true;
    }
    for (size_t i = 0; !s && i < n; i++) {
        if (!n_ids) pick[i] = true;
        int64_t base = twin_of(runs[i].tag);
        for (size_t j = 0; base && j < n && n_ids; j++)
            if (runs[j].id == base && pick[j]) pick[i] = true;
    }
    size_t n_map = 0;
    col_list run_cols = {0};
    col_list cols[sizeof k_run_tables / sizeof k_run_tables[0]];
    memset(cols, 0, sizeof cols);
    sqlite3 *ref = NULL;
    if (!s) s = fa_store_schema_reference(ctx, FA_STORE_SCHEMA_VERSION, &ref);
    if (!s) s = table_columns(ctx, ref, "runs", &run_cols);
    for (size_t t = 0; !s && t < sizeof k_run_tables / sizeof k_run_tables[0]; t++)
        s = table_columns(ctx, ref, k_run_tables[t], &cols[t]);
    sqlite3_close(ref);
    for (size_t ii = n; !s && ii-- > 0;) { /* list_runs is newest first */
        const fa_run_info *r = &runs[ii];
        if (!pick[ii]) continue;
        if (strcmp(r->status, "ok") && strcmp(r->status, "failed")) {
            res->skipped_running++;
            continue;
        }
        int64_t have = 0;
        s = find_same_run(ctx, src, r->id, dst, &have);
        if (!s && have) {
            map_old[n_map] = r->id;
            map_new[n_map++] = have;
            res->skipped_present++;
            continue;
        }
        char tag[64];
        const char *new_tag = NULL;
        int64_t base = twin_of(r->tag);
        if (!s && base) {
            size_t m = 0;
            while (m < n_map && map_old[m] != base) m++;
            if (m == n_map) { /* its baseline did not come along: a twin alone means nothing */
                res->skipped_orphan_twins++;
                continue;
            }
            snprintf(tag, sizeof tag, "fused-of:%lld", (long long)map_new[m]);
            new_tag = tag;
        }
        if (!s) s = validate_run(ctx, src, r->id);
        if (s) s = fa_ctx_wrap(ctx, s, "run %lld not copied: ", (long long)r->id);
        bool own = false;
        int64_t new_id = 0;
        if (!s) s = fa_sq_tx_open(ctx, dst, &own);
        if (!s) {
            s = copy_run_row(ctx, src, dst, r->id, &run_cols, new_tag, &new_id);
            for (size_t t = 0; !s && t < sizeof k_run_tables / sizeof k_run_tables[0]; t++)
                s = copy_table_rows(ctx, src, dst, k_run_tables[t], &cols[t], r->id, new_id);
            s = fa_sq_tx_close(ctx, dst, own, s);
        }
        if (!s) {
            map_old[n_map] = r->id;
            map_new[n_map++] = new_id;
            res->copied++;
        }
    }
    if (!s) {
        bool own = false;
        s = fa_sq_tx_open(ctx, dst, &own);
        if (!s) s = fa_sq_tx_close(ctx, dst, own, copy_ceilings(ctx, src, dst));
    }
    col_list_free(&run_cols);
    for (size_t t = 0; t < sizeof k_run_tables / sizeof k_run_tables[0]; t++) col_list_free(&cols[t]);
    free(pick);
    free(map_old);
    free(map_new);
    fa_arena_free(ar);
    return s;
}
