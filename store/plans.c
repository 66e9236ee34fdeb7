/* store/plans — typed writes of the advisor's plans: the plan row, its clusters (proposal and
 * the applier's verdicts) and the why-not list. Every SQL statement on those tables from the
 * stages above lives here. */
#include "store-impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void b_int_or_null(binder *b, int v) { if (v >= 0) b_i64(b, v); else b_txt(b, NULL); }
static void b_dbl_or_null(binder *b, double v, bool present) { if (present) b_dbl(b, v); else b_txt(b, NULL); }

/* The verdict columns of one cluster, in the order both statements below bind them. */
static void bind_verdict(binder *b, const fa_cluster_row *c)
{
    b_txt(b, c->status);
    b_txt(b, c->reason);
    b_dbl_or_null(b, c->measured_saving_ns / 1e3, !isnan(c->measured_saving_ns));
    b_dbl_or_null(b, c->max_rel_error, c->max_rel_error >= 0);
    b_int_or_null(b, c->registers);
    b_int_or_null(b, c->spill_bytes);
    b_dbl_or_null(b, c->occupancy, c->occupancy >= 0);
}

fa_status fa_store_put_plan(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_plan_row *plan,
                            const fa_cluster_row *clusters, int n_clusters, const fa_why_not_row *why_not,
                            int n_why_not, int *plan_id)
{
    fa_status s = fa_sq_require_writable(ctx, st, "store a plan");
    if (s) return s;
    bool own;
    s = fa_sq_tx_open(ctx, st, &own);
    if (s) return s;
    sqlite3_stmt *q = NULL;
    binder b;
    int id = 1;
    s = fa_sq_prepare(ctx, st, "SELECT coalesce(max(plan_id),0)+1 FROM plans WHERE run_id=?1", &q);
    if (!s) {
        b_start(&b, q);
        b_i64(&b, run_id);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        int rc = SQLITE_DONE;
        if (!s) s = STEP_CHECK(ctx, st, q, rc = sqlite3_step(q));
        if (!s && rc == SQLITE_ROW) id = sqlite3_column_int(q, 0);
    }
    sqlite3_finalize(q);
    q = NULL;
    if (!s)
        s = fa_sq_prepare(ctx, st,
                          "INSERT INTO plans (run_id, plan_id, created_at_ns, plan_hash, target, arch, options_json, "
                          "status) VALUES (?1,?2,?3,?4,?5,?6,?7,'proposed')",
                          &q);
    if (!s) {
        b_start(&b, q);
        b_i64(&b, run_id);
        b_i64(&b, id);
        b_i64(&b, fa_sq_unix_now_ns());
        b_txt(&b, plan->plan_hash);
        b_txt(&b, plan->target);
        b_txt(&b, plan->arch);
        b_txt(&b, plan->options_json ? plan->options_json : "{}");
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, sqlite3_step(q));
    }
    sqlite3_finalize(q);
    q = NULL;
    if (!s)
        s = fa_sq_prepare(ctx, st,
                          "INSERT INTO clusters (run_id, plan_id, cluster_id, kind, members_json, saved_bytes, "
                          "saved_launches, recompute_us, est_saving_us, est_saving_pct, status, reason, "
                          "measured_saving_us, max_rel_error, registers, spill_bytes, occupancy) "
                          "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)",
                          &q);
    fa_buf m;
    fa_buf_init(&m);
    for (int i = 0; i < n_clusters && !s; i++) {
        const fa_cluster_row *c = &clusters[i];
        fa_buf_reset(&m); /* members as a JSON array of node ids (docs/schema.md) */
        fa_buf_puts(&m, "[");
        for (int k = 0; k < c->n_members; k++) fa_buf_printf(&m, "%s%d", k ? "," : "", c->members[k]);
        fa_buf_puts(&m, "]");
        if (m.oom) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path); break; }
        b_start(&b, q);
        b_i64(&b, run_id);
        b_i64(&b, id);
        b_i64(&b, c->id);
        b_txt(&b, c->kind);
        b_txt(&b, m.data);
        b_i64(&b, (int64_t)c->saved_bytes);
        b_i64(&b, c->saved_launches);
        b_dbl(&b, c->recompute_ns / 1e3);
        b_dbl(&b, c->est_saving_ns / 1e3);
        b_dbl(&b, c->est_saving_pct);
        bind_verdict(&b, c);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, sqlite3_step(q));
    }
    fa_buf_free(&m);
    sqlite3_finalize(q);
    q = NULL;
    if (!s)
        s = fa_sq_prepare(ctx, st,
                          "INSERT INTO why_not (run_id, plan_id, seq, producer, consumer, tensor_id, reason_code, "
                          "reason) VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
                          &q);
    for (int i = 0; i < n_why_not && !s; i++) {
        const fa_why_not_row *w = &why_not[i];
        b_start(&b, q);
        b_i64(&b, run_id);
        b_i64(&b, id);
        b_i64(&b, i);
        b_i64(&b, w->producer);
        b_i64(&b, w->consumer);
        b_i64(&b, w->tensor);
        b_txt(&b, w->code);
        b_txt(&b, w->reason);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, sqlite3_step(q));
    }
    sqlite3_finalize(q);
    s = fa_sq_tx_close(ctx, st, own, s);
    if (!s) *plan_id = id;
    return s;
}

fa_status fa_store_put_cluster_verdicts(fa_ctx *ctx, fa_store *st, int64_t run_id, int plan_id,
                                        const fa_cluster_row *clusters, int n_clusters)
{
    fa_status s = fa_sq_require_writable(ctx, st, "store cluster verdicts");
    if (s) return s;
    bool own;
    s = fa_sq_tx_open(ctx, st, &own);
    if (s) return s;
    sqlite3_stmt *q = NULL;
    s = fa_sq_prepare(ctx, st,
                      "UPDATE clusters SET status=?4, reason=?5, measured_saving_us=?6, max_rel_error=?7, "
                      "registers=?8, spill_bytes=?9, occupancy=?10 WHERE run_id=?1 AND plan_id=?2 AND cluster_id=?3",
                      &q);
    for (int i = 0; i < n_clusters && !s; i++) {
        binder b;
        b_start(&b, q);
        b_i64(&b, run_id);
        b_i64(&b, plan_id);
        b_i64(&b, clusters[i].id);
        bind_verdict(&b, &clusters[i]);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, sqlite3_step(q));
    }
    sqlite3_finalize(q);
    return fa_sq_tx_close(ctx, st, own, s);
}
