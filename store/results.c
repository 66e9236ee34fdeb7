/* store/results — typed reads of a run's graph rows and typed writes of the later stages'
 * results (analysis, benchmark samples, the applied plan's end-to-end error). The stages above
 * see only these functions and their row structs; every SQL statement stays here. */
#include "store-impl.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* ---- graph rows ---- */

/* A run's graph rows are numbered 0..n-1 (nodes by node_id, tensors by tensor_id: the writer
 * stores every node and tensor of the graph), and the readers index arrays by those ids: a
 * doctored node_id of -5 wrote out of bounds in `analyze` (SIGSEGV), one of 10^8 took `report` to
 * 13.7 GB, one of 2^32 + 2 read as node 2 (the sixth attack pass). Every id a graph row holds is
 * checked against the run's own counts as it is read, as an int64 before it is narrowed. */
fa_status fa_sq_count_run(fa_ctx *ctx, fa_store *st, const char *sql, int64_t run_id, int64_t *n)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_sq_prepare_run(ctx, st, sql, run_id, &q, &b);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, b.rc);
    int rc = FA_DB_DONE;
    if (!s) s = STEP_CHECK(ctx, st, q, rc = fa_stmt_step(q));
    if (!s) *n = rc == FA_DB_ROW ? fa_col_i64(q, 0) : 0;
    fa_stmt_finalize(q);
    return s;
}

fa_status fa_store_graph_counts(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_graph_counts *c)
{
    c->run_id = run_id;
    fa_status s = fa_sq_count_run(ctx, st, "SELECT count(*) FROM nodes WHERE run_id=?1", run_id, &c->nodes);
    if (!s) s = fa_sq_count_run(ctx, st, "SELECT count(*) FROM tensors WHERE run_id=?1", run_id, &c->tensors);
    return s;
}

fa_status fa_store_graph_id(fa_ctx *ctx, fa_store *st, const fa_graph_counts *c, const char *table, const char *column,
                            int64_t v, int64_t count, const char *of, bool none_ok, int *out)
{
    if ((v >= 0 && v < count && v <= INT32_MAX) || (none_ok && v == -1)) {
        *out = (int)v;
        return FA_OK;
    }
    return fa_ctx_error(ctx, FA_ERR_INPUT,
                        "%s: table %s, run %lld, column %s: %lld is not the id of one of the run's %lld %s (0 to %lld%s); "
                        "the database was damaged, or not written by fuse-advise",
                        st->path, table, (long long)c->run_id, column, (long long)v, (long long)count, of,
                        (long long)count - 1, none_ok ? ", or -1 for none" : "");
}

static fa_status decode_node(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    const fa_graph_counts *c = user;
    fa_node_row *r = row;
    fa_status s = fa_store_graph_id(ctx, st, c, "nodes", "node_id", fa_col_i64(q, 0), c->nodes, "nodes", false, &r->id);
    if (s) return s;
    r->name = fa_sq_col_str(q, 1, arena);
    r->op_type = fa_sq_col_str(q, 2, arena);
    r->pattern = fa_col_null(q, 3) ? -1 : fa_col_int(q, 3);
    r->folded = fa_col_int(q, 4) != 0;
    r->flops = (uint64_t)fa_col_i64(q, 5);
    r->bytes = (uint64_t)fa_col_i64(q, 6);
    if (!r->name || !r->op_type) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    return FA_OK;
}

fa_status fa_store_get_nodes(fa_ctx *ctx, fa_store *st, int64_t run_id, bool live_only, fa_arena *arena,
                             fa_node_row **out, size_t *n_out)
{
    fa_graph_counts c;
    fa_status s = fa_store_graph_counts(ctx, st, run_id, &c);
    if (s) return s;
    fa_stmt *q;
    binder b;
    s = fa_sq_prepare_run(ctx, st, "SELECT node_id, name, op_type, pattern, folded, flops, bytes_read + bytes_written "
                                "FROM nodes WHERE run_id=?1 AND (?2 = 0 OR folded = 0) ORDER BY node_id", run_id, &q, &b);
    if (s) return s;
    b_i64(&b, live_only);
    return fa_sq_collect_rows(ctx, st, q, b.rc, arena, sizeof **out, decode_node, &c, (void **)out, n_out);
}

static fa_status decode_tensor(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    const fa_graph_counts *c = user;
    fa_tensor_row *r = row;
    fa_status s = fa_store_graph_id(ctx, st, c, "tensors", "tensor_id", fa_col_i64(q, 0), c->tensors, "tensors", false, &r->id);
    if (!s) s = fa_store_graph_id(ctx, st, c, "tensors", "producer", fa_col_i64(q, 3), c->nodes, "nodes", true, &r->producer);
    if (s) return s;
    r->name = fa_sq_col_str(q, 1, arena);
    r->bytes = (uint64_t)fa_col_i64(q, 2);
    r->flags = (uint32_t)fa_col_i64(q, 4);
    r->graph_output = fa_col_int(q, 5) != 0;
    if (!r->name) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    return FA_OK;
}

fa_status fa_store_get_tensors(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena, fa_tensor_row **out,
                               size_t *n_out)
{
    fa_graph_counts c;
    fa_status s = fa_store_graph_counts(ctx, st, run_id, &c);
    if (s) return s;
    fa_stmt *q;
    binder b;
    s = fa_sq_prepare_run(ctx, st, "SELECT tensor_id, name, bytes, producer, flags, is_graph_output FROM tensors "
                                "WHERE run_id=?1 ORDER BY tensor_id", run_id, &q, &b);
    if (s) return s;
    return fa_sq_collect_rows(ctx, st, q, b.rc, arena, sizeof **out, decode_tensor, &c, (void **)out, n_out);
}

static fa_status decode_consumer(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    (void)arena;
    const fa_graph_counts *c = user;
    fa_consumer_row *r = row;
    fa_status s = fa_store_graph_id(ctx, st, c, "consumers", "tensor_id", fa_col_i64(q, 0), c->tensors, "tensors", false, &r->tensor);
    if (!s) s = fa_store_graph_id(ctx, st, c, "consumers", "node_id", fa_col_i64(q, 1), c->nodes, "nodes", false, &r->node);
    return s;
}

fa_status fa_store_get_consumers(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena,
                                 fa_consumer_row **out, size_t *n_out)
{
    fa_graph_counts c;
    fa_status s = fa_store_graph_counts(ctx, st, run_id, &c);
    if (s) return s;
    fa_stmt *q;
    binder b;
    s = fa_sq_prepare_run(ctx, st, "SELECT DISTINCT tensor_id, node_id FROM consumers WHERE run_id=?1 "
                                "ORDER BY tensor_id, node_id", run_id, &q, &b);
    if (s) return s;
    return fa_sq_collect_rows(ctx, st, q, b.rc, arena, sizeof **out, decode_consumer, &c, (void **)out, n_out);
}

fa_status fa_store_count_nodes(fa_ctx *ctx, fa_store *st, int64_t run_id, int64_t *n)
{
    return fa_sq_count_run(ctx, st, "SELECT count(*) FROM nodes WHERE run_id=?1", run_id, n);
}

/* ---- analysis ---- */

/* Run a DELETE ... WHERE run_id=?1. */
static fa_status delete_run_rows(fa_ctx *ctx, fa_store *st, const char *sql, int64_t run_id)
{
    fa_stmt *q;
    fa_status s = fa_sq_prepare(ctx, st, sql, &q);
    if (s) return s;
    binder b;
    b_start(&b, q);
    b_i64(&b, run_id);
    s = FA_SQL_CHECK(ctx, st, b.rc);
    if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    fa_stmt_finalize(q);
    return s;
}

/* Binders of the analysis rows (fa_sq_put_rows; ?1 = run_id bound by it). */
static void bind_kernel(binder *b, size_t i, const void *user)
{
    const fa_analysis_kernel_row *k = (const fa_analysis_kernel_row *)user + i;
    b_i64(b, k->node);
    b_dbl(b, k->arithmetic_intensity);
    b_dbl(b, k->achieved_gbs);
    b_dbl(b, k->achieved_gflops);
    b_dbl(b, k->roof_pct);
    b_txt(b, k->bound);
}
static void bind_edge(binder *b, size_t i, const void *user)
{
    const fa_analysis_edge_row *e = (const fa_analysis_edge_row *)user + i;
    b_i64(b, e->tensor);
    b_i64(b, e->producer);
    b_i64(b, e->consumer);
    b_i64(b, (int64_t)e->bytes_written);
    b_i64(b, (int64_t)e->bytes_read);
    b_i64(b, e->other_consumers);
    b_i64(b, e->graph_output);
}
static void bind_summary(binder *b, size_t i, const void *user)
{
    const fa_analysis_summary_row *r = (const fa_analysis_summary_row *)user + i;
    b_txt(b, r->key);
    if (isnan(r->value)) b_txt(b, NULL); /* not measured: NULL, never a number */
    else b_dbl(b, r->value);
    b_txt(b, r->unit);
    b_txt(b, r->text);
}

/* Delete with `del` (n_del statements on ?1 = run_id), then insert rows, in one write unit. */
static fa_status put_analysis_rows(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *const *del, size_t n_del,
                                   const fa_analysis_rows *rows)
{
    bool own;
    fa_status s = fa_sq_write_open(ctx, st, "store an analysis", &own);
    if (s) return s;
    for (size_t i = 0; i < n_del && !s; i++) s = delete_run_rows(ctx, st, del[i], run_id);
    if (!s)
        s = fa_sq_put_rows(ctx, st,
                           "INSERT INTO analysis_kernels(run_id, seq, arithmetic_intensity, achieved_gbs, "
                           "achieved_gflops, roof_pct, bound) VALUES (?1,?2,?3,?4,?5,?6,?7)",
                           run_id, rows->n_kernels, bind_kernel, rows->kernels);
    fa_stmt *q = NULL;
    binder b;
    if (!s)
        s = fa_sq_prepare(ctx, st,
                          "INSERT INTO analysis_chains(run_id, chain_id, members_json, time_ns, share, "
                          "intermediate_bytes, launches, max_saving_ns) VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
                          &q);
    for (size_t i = 0; i < rows->n_chains && !s; i++) {
        const fa_analysis_chain_row *c = &rows->chains[i];
        fa_buf m; /* members as a JSON array of node ids (docs/schema.md) */
        fa_buf_init(&m);
        fa_buf_puts(&m, "[");
        for (int k = 0; k < c->n_members; k++) {
            if (k) fa_buf_puts(&m, ",");
            if (c->member_names) {
                fa_buf_puts(&m, "\"");
                fa_escape_json(&m, c->member_names[k], strlen(c->member_names[k]));
                fa_buf_puts(&m, "\"");
            } else {
                fa_buf_printf(&m, "%d", c->members[k]);
            }
        }
        fa_buf_puts(&m, "]");
        if (m.oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
        if (!s) {
            b_start(&b, q);
            b_i64(&b, run_id);
            b_i64(&b, (int64_t)i);
            b_txt(&b, m.data);
            b_i64(&b, c->time_ns);
            b_dbl(&b, c->share);
            b_i64(&b, (int64_t)c->intermediate_bytes);
            b_i64(&b, c->launches);
            b_i64(&b, c->max_saving_ns);
            s = FA_SQL_CHECK(ctx, st, b.rc);
            if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
        }
        fa_buf_free(&m);
    }
    fa_stmt_finalize(q);
    if (!s)
        s = fa_sq_put_rows(ctx, st,
                           "INSERT INTO analysis_edges(run_id, tensor_id, producer, consumer, "
                           "bytes_written, bytes_read, other_consumers, is_graph_output) VALUES (?1,?2,?3,?4,?5,?6,?7,?8) "
                           "ON CONFLICT (run_id, tensor_id, consumer) DO UPDATE SET producer=excluded.producer, "
                           "bytes_written=excluded.bytes_written, bytes_read=excluded.bytes_read, "
                           "other_consumers=excluded.other_consumers, is_graph_output=excluded.is_graph_output",
                           run_id, rows->n_edges, bind_edge, rows->edges);
    if (!s)
        s = fa_sq_put_rows(ctx, st,
                           "INSERT INTO analysis_summary(run_id, key, value, unit, text) VALUES (?1,?2,?3,?4,?5) "
                           "ON CONFLICT (run_id, key) DO UPDATE SET value=excluded.value, unit=excluded.unit, "
                           "text=excluded.text",
                           run_id, rows->n_summary, bind_summary, rows->summary);
    return fa_sq_tx_close(ctx, st, own, s);
}

fa_status fa_store_put_analysis(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_analysis_rows *rows)
{
    static const char *const del[] = {
        "DELETE FROM analysis_kernels WHERE run_id=?1", "DELETE FROM analysis_chains WHERE run_id=?1",
        "DELETE FROM analysis_edges WHERE run_id=?1", "DELETE FROM analysis_summary WHERE run_id=?1"};
    return put_analysis_rows(ctx, st, run_id, del, sizeof del / sizeof del[0], rows);
}

fa_status fa_store_put_trace_advice(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_analysis_rows *rows)
{
    for (size_t i = 0; i < rows->n_summary; i++)
        if (strncmp(rows->summary[i].key, "trace.", 6))
            return fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: trace advice key '%s' does not start with 'trace.'", st->path,
                                rows->summary[i].key);
    static const char *const del[] = {"DELETE FROM analysis_summary WHERE run_id=?1 AND key LIKE 'trace.%'",
                                      "DELETE FROM analysis_chains WHERE run_id=?1"};
    fa_analysis_rows r = *rows;
    r.n_kernels = r.n_edges = 0;
    return put_analysis_rows(ctx, st, run_id, del, sizeof del / sizeof del[0], &r);
}

fa_status fa_store_get_summary_text(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *key, fa_arena *arena,
                                    const char **text)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_sq_prepare_run(ctx, st, "SELECT text FROM analysis_summary WHERE run_id=?1 AND key=?2", run_id, &q, &b);
    if (s) return s;
    b_txt(&b, key);
    s = FA_SQL_CHECK(ctx, st, b.rc);
    int rc = FA_DB_DONE;
    if (!s) s = STEP_CHECK(ctx, st, q, rc = fa_stmt_step(q));
    const char *t = NULL;
    if (!s && rc == FA_DB_ROW && !fa_col_null(q, 0)) {
        t = fa_sq_col_str(q, 0, arena);
        if (!t) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    }
    fa_stmt_finalize(q);
    if (!s) *text = t;
    return s;
}

fa_status fa_store_get_summary_text_parts(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *key, fa_arena *arena,
                                          const char **text)
{
    *text = NULL;
    /* each part read into a scratch arena, joined in one buffer, copied once into `arena` */
    fa_arena *scratch = fa_arena_create(1 << 16);
    if (!scratch) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    const char *first = NULL;
    fa_status s = fa_store_get_summary_text(ctx, st, run_id, key, scratch, &first);
    if (s || !first) {
        fa_arena_free(scratch);
        return s;
    }
    fa_buf all;
    fa_buf_init(&all);
    fa_buf_puts(&all, first);
    for (int part = 1; !s; part++) {
        char k[256];
        snprintf(k, sizeof k, "%s.%d", key, part);
        const char *t = NULL;
        s = fa_store_get_summary_text(ctx, st, run_id, k, scratch, &t);
        if (s || !t) break;
        if (part >= FA_STORE_TEXT_PARTS_MAX) {
            s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: run %lld: table analysis_summary: key '%s' is in more than %d parts",
                             st->path, (long long)run_id, key, FA_STORE_TEXT_PARTS_MAX);
            break;
        }
        fa_buf_puts(&all, t);
    }
    if (!s && all.oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    if (!s) {
        char *c = fa_arena_alloc(arena, all.len + 1);
        if (!c) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
        else {
            memcpy(c, all.data ? all.data : "", all.len);
            c[all.len] = 0;
            *text = c;
        }
    }
    fa_buf_free(&all);
    fa_arena_free(scratch);
    return s;
}

/* ---- benchmarks, end-to-end error ---- */

const char *fa_bench_subject_name(fa_bench_subject s)
{
    static const char *const names[] = {"baseline", "fused", "cluster-unfused", "cluster-fused"};
    _Static_assert(sizeof names / sizeof names[0] == FA_BENCH_SUBJECT_COUNT, "names: one row per value");
    return (unsigned)s < FA_BENCH_SUBJECT_COUNT ? names[s] : "?";
}

/* The samples of one benchmark subject, as fa_sq_put_rows binds them (iter = index). */
typedef struct bench_rows {
    int plan_id;
    const char *subject;
    int cluster_id;
    const double *samples_ns;
} bench_rows;

static void bind_sample(binder *b, size_t i, const void *user)
{
    const bench_rows *r = user;
    b_i64(b, r->plan_id);
    b_txt(b, r->subject);
    b_i64(b, r->cluster_id);
    b_i64(b, (int64_t)i);
    b_i64(b, (int64_t)r->samples_ns[i]);
}

fa_status fa_store_put_bench_samples(fa_ctx *ctx, fa_store *st, int64_t run_id, int plan_id, fa_bench_subject subject,
                                     int cluster_id, const double *samples_ns, int n)
{
    if ((unsigned)subject >= FA_BENCH_SUBJECT_COUNT)
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: benchmark subject %d out of range", st->path, (int)subject);
    bool own;
    fa_status s = fa_sq_write_open(ctx, st, "store benchmark samples", &own);
    if (s) return s;
    bench_rows rows = {plan_id, fa_bench_subject_name(subject), cluster_id, samples_ns};
    s = fa_sq_put_rows(ctx, st,
                       "INSERT INTO benchmarks(run_id, plan_id, subject, cluster_id, iter, latency_ns) "
                       "VALUES (?1,?2,?3,?4,?5,?6) ON CONFLICT (run_id, plan_id, subject, cluster_id, iter) "
                       "DO UPDATE SET latency_ns=excluded.latency_ns",
                       run_id, n > 0 ? (size_t)n : 0, bind_sample, &rows);
    return fa_sq_tx_close(ctx, st, own, s);
}

fa_status fa_store_set_plan_e2e(fa_ctx *ctx, fa_store *st, int64_t run_id, int plan_id, const fa_plan_e2e_row *e2e)
{
    bool own;
    fa_status s = fa_sq_write_open(ctx, st, "store the end-to-end result", &own);
    if (s) return s;
    fa_stmt *q = NULL;
    /* the plan's status follows: applied, or failed when its outputs did not match */
    s = fa_sq_prepare(ctx, st,
                      "UPDATE plans SET e2e_max_rel_error=?3, e2e_verdict=?4, "
                      "status=CASE WHEN ?4='mismatch' THEN 'failed' WHEN ?4 IS NULL THEN status ELSE 'applied' END "
                      "WHERE run_id=?1 AND plan_id=?2", &q);
    if (!s) {
        binder b;
        b_start(&b, q);
        b_i64(&b, run_id);
        b_i64(&b, plan_id);
        if (isfinite(e2e->max_rel_error)) b_dbl(&b, e2e->max_rel_error);
        else b_txt(&b, NULL);
        b_txt(&b, fa_e2e_verdict_name(e2e->verdict));
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
        if (!s && fa_db_changes(st) == 0)
            s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: run %lld has no plan %d to record its end-to-end result on",
                             st->path, (long long)run_id, plan_id);
    }
    fa_stmt_finalize(q);
    return fa_sq_tx_close(ctx, st, own, s);
}

fa_status fa_store_get_plan_e2e(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_plan_e2e_row *out)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_sq_prepare_run(ctx, st, "SELECT e2e_max_rel_error, e2e_verdict FROM plans WHERE run_id=?1 "
                                    FA_STORE_PLAN_OF_RECORD, run_id, &q, &b);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, b.rc);
    int rc = FA_DB_DONE;
    if (!s) s = STEP_CHECK(ctx, st, q, rc = fa_stmt_step(q));
    if (!s) {
        bool row = rc == FA_DB_ROW;
        out->max_rel_error = row && !fa_col_null(q, 0) ? fa_col_dbl(q, 0) : NAN;
        out->verdict = row ? fa_e2e_verdict_parse(fa_col_text(q, 1)) : FA_E2E_NOT_APPLIED;
    }
    fa_stmt_finalize(q);
    return s;
}

/* ---- per-iteration reads ---- */

/* Column 0 as a double / an int (decoders of one-column reads). */
static fa_status decode_dbl(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    (void)ctx, (void)st, (void)arena, (void)user;
    *(double *)row = fa_col_dbl(q, 0);
    return FA_OK;
}
static fa_status decode_int(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    (void)ctx, (void)st, (void)arena, (void)user;
    *(int *)row = fa_col_int(q, 0);
    return FA_OK;
}

fa_status fa_store_get_range_durations(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *name, fa_arena *arena,
                                       double **out, int *n_out)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_store_check_kernel_times(ctx, st, run_id);
    if (s) return s;
    s = fa_sq_prepare_run(ctx, st, "SELECT end_ns - start_ns FROM kernels WHERE run_id=?1 AND kind=?2 AND name=?3 AND "
                                "iter>=0 ORDER BY iter", run_id, &q, &b);
    if (s) return s;
    b_i64(&b, FA_ACT_RANGE);
    b_txt(&b, name);
    size_t n;
    s = fa_sq_collect_rows(ctx, st, q, b.rc, arena, sizeof **out, decode_dbl, NULL, (void **)out, &n);
    if (!s) *n_out = (int)n;
    return s;
}

fa_status fa_store_get_kernels_per_iter(fa_ctx *ctx, fa_store *st, int64_t run_id, int *min, int *max, int *mode)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_sq_prepare_run(ctx, st, "SELECT c, count(*) FROM (SELECT iter, count(*) AS c FROM kernels WHERE run_id=?1 AND "
                                "kind=?2 AND iter>=0 GROUP BY iter) AS per_iter GROUP BY c ORDER BY count(*) DESC, c", run_id, &q, &b);
    if (s) return s;
    b_i64(&b, FA_ACT_KERNEL);
    s = FA_SQL_CHECK(ctx, st, b.rc);
    int mn = INT32_MAX, mx = -1, md = -1, rc = FA_DB_DONE;
    while (!s && (rc = fa_stmt_step(q)) == FA_DB_ROW) {
        int c = fa_col_int(q, 0);
        if (md < 0) md = c;
        if (c < mn) mn = c;
        if (c > mx) mx = c;
    }
    if (!s) s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    if (s) return s;
    *min = mn;
    *max = mx;
    *mode = md;
    return FA_OK;
}

fa_status fa_store_get_timed_iters(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena, int **out, int *n_out)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_sq_prepare_run(ctx, st, "SELECT DISTINCT iter FROM kernels WHERE run_id=?1 AND iter>=0 AND kind IN (?2, ?3) "
                                "ORDER BY iter", run_id, &q, &b);
    if (s) return s;
    b_i64(&b, FA_ACT_KERNEL);
    b_i64(&b, FA_ACT_RANGE);
    size_t n;
    s = fa_sq_collect_rows(ctx, st, q, b.rc, arena, sizeof **out, decode_int, NULL, (void **)out, &n);
    if (!s) *n_out = (int)n;
    return s;
}

/* One (op, iteration) time; user: the last name copied (rows come grouped by op, so each name is
 * copied once). */
static fa_status decode_op_iter(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    const char **last = user;
    const char *name = fa_col_text(q, 0); /* coalesce(..., '?'): NULL only when out of memory */
    if (name && (!*last || strcmp(*last, name))) *last = fa_arena_strdup(arena, name);
    if (!name || !*last) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    *(fa_op_iter_row *)row = (fa_op_iter_row){*last, fa_col_int(q, 1), fa_col_dbl(q, 2)};
    return FA_OK;
}

fa_status fa_store_get_op_iter_times(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena,
                                     fa_op_iter_row **out, size_t *n_out)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_store_check_kernel_times(ctx, st, run_id);
    if (s) return s;
    s = fa_sq_prepare_run(ctx, st, "SELECT coalesce(node_name, name, '?'), iter, sum(end_ns - start_ns) FROM kernels "
                                "WHERE run_id=?1 AND kind=?2 AND iter>=0 GROUP BY 1, 2 ORDER BY 1, 2", run_id, &q, &b);
    if (s) return s;
    b_i64(&b, FA_ACT_KERNEL);
    const char *last = NULL;
    return fa_sq_collect_rows(ctx, st, q, b.rc, arena, sizeof **out, decode_op_iter, &last, (void **)out, n_out);
}
