/* store/plans — typed writes of the advisor's plans: the plan row, its clusters (proposal and
 * the applier's verdicts) and the why-not list. Every SQL statement on those tables from the
 * stages above lives here. */
#include "store-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void b_int_or_null(binder *b, int v) { if (v >= 0) b_i64(b, v); else b_txt(b, NULL); }
static void b_dbl_or_null(binder *b, double v, bool present) { if (present) b_dbl(b, v); else b_txt(b, NULL); }

/* ids as a JSON array ("[1,2,3]") into b, replacing its content. */
static void ints_json(fa_buf *b, const int *v, int n)
{
    fa_buf_reset(b);
    fa_buf_puts(b, "[");
    for (int k = 0; k < n; k++) fa_buf_printf(b, "%s%d", k ? "," : "", v[k]);
    fa_buf_puts(b, "]");
}

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

/* Rows of one plan as fa_sq_put_rows binds them (?1 = run_id bound by it). */
typedef struct plan_rows {
    int plan_id;
    const void *rows; /* fa_cluster_row[] / fa_why_not_row[] */
} plan_rows;

static void bind_cluster_verdict(binder *b, size_t i, const void *user)
{
    const plan_rows *p = user;
    const fa_cluster_row *c = (const fa_cluster_row *)p->rows + i;
    b_i64(b, p->plan_id);
    b_i64(b, c->id);
    bind_verdict(b, c);
}

static void bind_why_not(binder *b, size_t i, const void *user)
{
    const plan_rows *p = user;
    const fa_why_not_row *w = (const fa_why_not_row *)p->rows + i;
    b_i64(b, p->plan_id);
    b_i64(b, (int64_t)i);
    b_i64(b, w->producer);
    b_i64(b, w->consumer);
    b_i64(b, w->tensor);
    b_txt(b, w->code);
    b_txt(b, w->reason);
}

fa_status fa_store_put_plan(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_plan_row *plan,
                            const fa_cluster_row *clusters, int n_clusters, const fa_why_not_row *why_not,
                            int n_why_not, int *plan_id)
{
    bool own;
    fa_status s = fa_sq_write_open(ctx, st, "store a plan", &own);
    if (s) return s;
    fa_stmt *q = NULL;
    binder b;
    int id = 1;
    s = fa_sq_prepare(ctx, st, "SELECT coalesce(max(plan_id),0)+1 FROM plans WHERE run_id=?1", &q);
    if (!s) {
        b_start(&b, q);
        b_i64(&b, run_id);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        int rc = FA_DB_DONE;
        if (!s) s = STEP_CHECK(ctx, st, q, rc = fa_stmt_step(q));
        if (!s && rc == FA_DB_ROW) id = fa_col_int(q, 0);
    }
    fa_stmt_finalize(q);
    q = NULL;
    if (!s)
        s = fa_sq_prepare(ctx, st,
                          "INSERT INTO plans (run_id, plan_id, created_at_ns, plan_hash, target, arch, max_ops, max_inputs, "
                          "occupancy_floor, gate, status) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,'proposed')",
                          &q);
    if (!s) {
        b_start(&b, q);
        b_i64(&b, run_id);
        b_i64(&b, id);
        b_i64(&b, fa_sq_unix_now_ns());
        b_txt(&b, plan->plan_hash);
        b_txt(&b, plan->target);
        b_txt(&b, plan->arch);
        b_int_or_null(&b, plan->max_ops);
        b_int_or_null(&b, plan->max_inputs);
        b_dbl_or_null(&b, plan->occupancy_floor, !isnan(plan->occupancy_floor));
        b_int_or_null(&b, plan->gate);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    }
    fa_stmt_finalize(q);
    q = NULL;
    if (!s)
        s = fa_sq_prepare(ctx, st,
                          "INSERT INTO clusters (run_id, plan_id, cluster_id, kind, members_json, saved_bytes, "
                          "saved_launches, recompute_us, est_saving_us, est_saving_pct, status, reason, "
                          "measured_saving_us, max_rel_error, registers, spill_bytes, occupancy, label, anchor, "
                          "depends_on, reduction, reduce_axis, epsilon, block_size, inputs_json, outputs_json, basis, score_bytes) "
                          "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,"
                          "?23,?24,?25,?26,?27,?28)",
                          &q);
    fa_stmt *qp = NULL;
    if (!s)
        s = fa_sq_prepare(ctx, st,
                          "INSERT INTO cluster_post_ops (run_id, plan_id, cluster_id, seq, spec, operand_tensor) "
                          "VALUES (?1,?2,?3,?4,?5,?6)",
                          &qp);
    fa_buf m, in, out;
    fa_buf_init(&m);
    fa_buf_init(&in);
    fa_buf_init(&out);
    for (int i = 0; i < n_clusters && !s; i++) {
        const fa_cluster_row *c = &clusters[i];
        ints_json(&m, c->members, c->n_members); /* JSON arrays of ids (docs/schema.md) */
        ints_json(&in, c->inputs, c->n_inputs);
        ints_json(&out, c->outputs, c->n_outputs);
        if (m.oom || in.oom || out.oom) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path); break; }
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
        b_txt(&b, c->label);
        b_int_or_null(&b, c->anchor);
        b_int_or_null(&b, c->depends_on);
        b_txt(&b, c->reduction);
        b_int_or_null(&b, c->reduce_axis);
        b_dbl_or_null(&b, c->epsilon, !isnan(c->epsilon));
        b_int_or_null(&b, c->block_size);
        b_txt(&b, in.data);
        b_txt(&b, out.data);
        b_txt(&b, c->basis);
        b_i64(&b, (int64_t)c->score_bytes);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
        for (int k = 0; k < c->n_post_ops && !s; k++) {
            b_start(&b, qp);
            b_i64(&b, run_id);
            b_i64(&b, id);
            b_i64(&b, c->id);
            b_i64(&b, k);
            b_txt(&b, c->post_ops[k].spec ? c->post_ops[k].spec : "");
            b_i64(&b, c->post_ops[k].operand_tensor);
            s = FA_SQL_CHECK(ctx, st, b.rc);
            if (!s) s = STEP_CHECK(ctx, st, qp, fa_stmt_step(qp));
        }
    }
    fa_buf_free(&m);
    fa_buf_free(&in);
    fa_buf_free(&out);
    fa_stmt_finalize(qp);
    fa_stmt_finalize(q);
    plan_rows wn = {id, why_not};
    if (!s)
        s = fa_sq_put_rows(ctx, st,
                           "INSERT INTO why_not (run_id, plan_id, seq, producer, consumer, tensor_id, reason_code, "
                           "reason) VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
                           run_id, n_why_not > 0 ? (size_t)n_why_not : 0, bind_why_not, &wn);
    s = fa_sq_tx_close(ctx, st, own, s);
    if (!s) *plan_id = id;
    return s;
}

fa_status fa_store_put_cluster_verdicts(fa_ctx *ctx, fa_store *st, int64_t run_id, int plan_id,
                                        const fa_cluster_row *clusters, int n_clusters)
{
    bool own;
    fa_status s = fa_sq_write_open(ctx, st, "store cluster verdicts", &own);
    if (s) return s;
    plan_rows rows = {plan_id, clusters};
    s = fa_sq_put_rows(ctx, st,
                       "UPDATE clusters SET status=?4, reason=?5, measured_saving_us=?6, max_rel_error=?7, "
                       "registers=?8, spill_bytes=?9, occupancy=?10 WHERE run_id=?1 AND plan_id=?2 AND cluster_id=?3",
                       run_id, n_clusters > 0 ? (size_t)n_clusters : 0, bind_cluster_verdict, &rows);
    return fa_sq_tx_close(ctx, st, own, s);
}

/* ---- reads ---- */

fa_status fa_store_get_fused_run(fa_ctx *ctx, fa_store *st, int64_t run_id, bool ok_only, int64_t *fused_id)
{
    char tag[64];
    snprintf(tag, sizeof tag, "fused-of:%lld", (long long)run_id);
    fa_stmt *q;
    fa_status s = fa_sq_prepare(ctx, st,
                                "SELECT id FROM runs WHERE kind=?1 AND tag=?2 AND (status=?3 OR (?4 = 0 AND status<>?5)) "
                                "ORDER BY id DESC LIMIT 1",
                                &q);
    if (s) return s;
    binder b;
    b_start(&b, q);
    b_txt(&b, "fused");
    b_txt(&b, tag);
    b_txt(&b, "ok");
    b_i64(&b, ok_only);
    b_txt(&b, "failed");
    s = FA_SQL_CHECK(ctx, st, b.rc);
    int rc = FA_DB_DONE;
    if (!s) s = STEP_CHECK(ctx, st, q, rc = fa_stmt_step(q));
    if (!s) *fused_id = rc == FA_DB_ROW ? fa_col_i64(q, 0) : -1;
    fa_stmt_finalize(q);
    return s;
}

fa_status fa_store_get_analysis_text(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena, bool *have,
                                     const char **text)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_sq_prepare_run(ctx, st, "SELECT (SELECT count(*) FROM analysis_kernels WHERE run_id=?1) + "
                                "(SELECT count(*) FROM analysis_summary WHERE run_id=?1)", run_id, &q, &b);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, b.rc);
    int rc = FA_DB_DONE;
    if (!s) s = STEP_CHECK(ctx, st, q, rc = fa_stmt_step(q));
    bool any = !s && rc == FA_DB_ROW && fa_col_i64(q, 0) > 0;
    fa_stmt_finalize(q);
    if (s) return s;
    const char *t = NULL;
    if (any) {
        s = fa_sq_prepare(ctx, st, "SELECT text FROM analysis_summary WHERE run_id=?1 AND text IS NOT NULL ORDER BY key", &q);
        if (s) return s;
        b_start(&b, q);
        b_i64(&b, run_id);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        fa_buf all;
        fa_buf_init(&all);
        while (!s && (rc = fa_stmt_step(q)) == FA_DB_ROW) {
            if (all.len) fa_buf_puts(&all, "\n");
            const char *x = fa_col_text(q, 0);
            if (x) fa_buf_puts(&all, (const char *)x);
        }
        if (!s) s = STEP_CHECK(ctx, st, q, rc);
        fa_stmt_finalize(q);
        if (!s && all.oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
        if (!s && all.len) {
            t = fa_arena_strdup(arena, all.data);
            if (!t) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
        }
        fa_buf_free(&all);
        if (s) return s;
    }
    *have = any;
    *text = t;
    return FA_OK;
}

/* "[1,2,3]" (members_json) -> ints in arena; NULL text is no members. *out NULL when out of
 * memory. */
static int parse_ints(fa_arena *ar, const char *json, int **out)
{
    int n = 0, cap = 1;
    for (const char *p = json; p && *p; p++) cap += *p == ',';
    int *v = fa_arena_alloc(ar, sizeof(int) * (size_t)cap);
    *out = v;
    if (!v || !json) return 0;
    const char *p = json;
    while (*p) {
        if ((*p >= '0' && *p <= '9') || *p == '-') {
            char *end;
            long x = strtol(p, &end, 10);
            if (n < cap) v[n++] = (int)x;
            p = end > p ? end : p + 1;
        } else p++;
    }
    return n;
}

static double col_num(fa_stmt *q, int i) { return fa_col_null(q, i) ? NAN : fa_col_dbl(q, i); }
static int col_int_or(fa_stmt *q, int i, int none) { return fa_col_null(q, i) ? none : fa_col_int(q, i); }

/* A post-op row with the cluster it belongs to. */
typedef struct post_op_at {
    int cluster_id;
    fa_post_op_row op;
} post_op_at;

static fa_status decode_post_op(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    (void)ctx, (void)st, (void)user;
    post_op_at *r = row;
    r->cluster_id = fa_col_int(q, 0);
    r->op.spec = fa_sq_col_str(q, 1, arena);
    r->op.operand_tensor = fa_col_int(q, 2);
    return FA_OK;
}

/* Prepare sql and bind ?1 = run_id, ?2 = plan_id (the rows of one plan). */
static fa_status prepare_plan_rows(fa_ctx *ctx, fa_store *st, const char *sql, int64_t run_id, int plan_id,
                                   fa_stmt **q, binder *b)
{
    fa_status s = fa_sq_prepare_run(ctx, st, sql, run_id, q, b);
    if (!s) b_i64(b, plan_id);
    return s;
}

/* The post-op rows of plan (run_id, plan_id), attached to their clusters cv[0..nc). */
static fa_status get_post_ops(fa_ctx *ctx, fa_store *st, int64_t run_id, int plan_id, fa_arena *arena,
                              fa_cluster_row *cv, size_t nc)
{
    fa_stmt *q;
    binder b;
    fa_status s = prepare_plan_rows(ctx, st,
                                    "SELECT cluster_id, spec, operand_tensor FROM cluster_post_ops WHERE run_id=?1 AND "
                                    "plan_id=?2 ORDER BY cluster_id, seq",
                                    run_id, plan_id, &q, &b);
    if (s) return s;
    post_op_at *rows;
    size_t n;
    s = fa_sq_collect_rows(ctx, st, q, b.rc, arena, sizeof *rows, decode_post_op, NULL, (void **)&rows, &n);
    if (s) return s;
    fa_post_op_row *v = fa_arena_alloc(arena, sizeof *v * (n ? n : 1)); /* the clusters point into one array */
    if (!v) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    for (size_t k = 0; k < n; k++) v[k] = rows[k].op;
    for (size_t i = 0; i < nc; i++) { /* rows ordered by cluster id: binary search for its first */
        size_t k = 0, hi = n;
        while (k < hi) {
            size_t mid = k + (hi - k) / 2;
            if (rows[mid].cluster_id < cv[i].id) k = mid + 1; else hi = mid;
        }
        cv[i].post_ops = k < n ? &v[k] : NULL;
        cv[i].n_post_ops = 0;
        while (k + (size_t)cv[i].n_post_ops < n && rows[k + (size_t)cv[i].n_post_ops].cluster_id == cv[i].id)
            cv[i].n_post_ops++;
    }
    return FA_OK;
}

static fa_status decode_cluster(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    (void)user;
    fa_cluster_row *c = row;
    int *members = NULL, *ins = NULL, *outs = NULL;
    c->id = fa_col_int(q, 0);
    c->kind = fa_sq_col_str(q, 1, arena);
    c->n_members = parse_ints(arena, fa_col_text(q, 2), &members);
    c->members = members;
    c->saved_bytes = (uint64_t)fa_col_i64(q, 3);
    c->saved_launches = fa_col_int(q, 4);
    c->recompute_ns = col_num(q, 5) * 1e3;
    c->est_saving_ns = col_num(q, 6) * 1e3;
    c->est_saving_pct = col_num(q, 7);
    c->registers = col_int_or(q, 8, -1);
    c->spill_bytes = col_int_or(q, 9, -1);
    c->occupancy = col_num(q, 10);
    c->status = fa_sq_col_str(q, 11, arena);
    c->reason = fa_sq_col_str(q, 12, arena);
    c->measured_saving_ns = col_num(q, 13) * 1e3;
    c->max_rel_error = col_num(q, 14);
    c->label = fa_sq_col_str(q, 15, arena);
    c->anchor = col_int_or(q, 16, -1);
    c->depends_on = col_int_or(q, 17, -1);
    c->reduction = fa_sq_col_str(q, 18, arena);
    c->reduce_axis = col_int_or(q, 19, -1);
    c->epsilon = col_num(q, 20);
    c->block_size = col_int_or(q, 21, -1);
    c->n_inputs = parse_ints(arena, fa_col_text(q, 22), &ins);
    c->inputs = ins;
    c->n_outputs = parse_ints(arena, fa_col_text(q, 23), &outs);
    c->outputs = outs;
    c->basis = fa_sq_col_str(q, 24, arena);
    c->score_bytes = fa_col_null(q, 25) ? 0 : (uint64_t)fa_col_i64(q, 25);
    if (!members || !ins || !outs) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    return FA_OK;
}

static fa_status decode_why_not(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    (void)ctx, (void)st, (void)user;
    fa_why_not_row *w = row;
    w->producer = fa_col_int(q, 0);
    w->consumer = fa_col_int(q, 1);
    w->tensor = fa_col_int(q, 2);
    w->code = fa_sq_col_str(q, 3, arena);
    w->reason = fa_sq_col_str(q, 4, arena);
    return FA_OK;
}

fa_status fa_store_get_latest_plan(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena, int *plan_id,
                                   fa_plan_row *plan, fa_cluster_row **clusters, int *n_clusters,
                                   fa_why_not_row **why_not, int *n_why_not)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_sq_prepare_run(ctx, st,
                                    "SELECT plan_id, plan_hash, target, arch, max_ops, max_inputs, occupancy_floor, gate "
                                    "FROM plans WHERE run_id=?1 ORDER BY plan_id DESC LIMIT 1",
                                    run_id, &q, &b);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, b.rc);
    int rc = FA_DB_DONE, id = 0;
    fa_plan_row pr = {0};
    if (!s) s = STEP_CHECK(ctx, st, q, rc = fa_stmt_step(q));
    if (!s && rc == FA_DB_ROW) {
        id = fa_col_int(q, 0);
        pr.plan_hash = fa_sq_col_str(q, 1, arena);
        pr.target = fa_sq_col_str(q, 2, arena);
        pr.arch = fa_sq_col_str(q, 3, arena);
        pr.max_ops = col_int_or(q, 4, -1);
        pr.max_inputs = col_int_or(q, 5, -1);
        pr.occupancy_floor = col_num(q, 6);
        pr.gate = col_int_or(q, 7, -1);
    }
    fa_stmt_finalize(q);
    if (s) return s;
    if (id == 0) {
        *plan_id = 0;
        return FA_OK;
    }
    fa_cluster_row *cv;
    size_t nc;
    s = prepare_plan_rows(ctx, st,
                          "SELECT c.cluster_id, c.kind, c.members_json, c.saved_bytes, c.saved_launches, c.recompute_us, "
                          "c.est_saving_us, c.est_saving_pct, coalesce(f.registers, c.registers), "
                          "coalesce(f.spill_bytes, c.spill_bytes), c.occupancy, c.status, c.reason, c.measured_saving_us, "
                          "c.max_rel_error, c.label, c.anchor, c.depends_on, c.reduction, c.reduce_axis, c.epsilon, "
                          "c.block_size, c.inputs_json, c.outputs_json, c.basis, c.score_bytes FROM clusters c LEFT JOIN fused_kernels f "
                          "ON f.run_id=c.run_id AND f.plan_id=c.plan_id AND f.cluster_id=c.cluster_id "
                          "WHERE c.run_id=?1 AND c.plan_id=?2 ORDER BY c.est_saving_us DESC NULLS LAST, c.cluster_id",
                          run_id, id, &q, &b);
    if (!s) s = fa_sq_collect_rows(ctx, st, q, b.rc, arena, sizeof *cv, decode_cluster, NULL, (void **)&cv, &nc);
    if (!s) s = get_post_ops(ctx, st, run_id, id, arena, cv, nc);
    if (s) return s;
    fa_why_not_row *wv;
    size_t nw;
    s = prepare_plan_rows(ctx, st,
                          "SELECT producer, consumer, tensor_id, reason_code, reason FROM why_not WHERE run_id=?1 AND "
                          "plan_id=?2 ORDER BY seq",
                          run_id, id, &q, &b);
    if (!s) s = fa_sq_collect_rows(ctx, st, q, b.rc, arena, sizeof *wv, decode_why_not, NULL, (void **)&wv, &nw);
    if (s) return s;
    *plan_id = id;
    *plan = pr;
    *clusters = cv;
    *n_clusters = (int)nc;
    *why_not = wv;
    *n_why_not = (int)nw;
    return FA_OK;
}

fa_status fa_store_get_bench_series(fa_ctx *ctx, fa_store *st, int64_t run_id, int plan_id, fa_arena *arena,
                                    fa_bench_series **out, size_t *n_out)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_sq_prepare_run(ctx, st, "SELECT subject, cluster_id, latency_ns FROM benchmarks WHERE run_id=?1 AND "
                                "(plan_id=?2 OR ?2=0) ORDER BY subject, cluster_id, plan_id DESC, iter", run_id, &q, &b);
    if (s) return s;
    b_i64(&b, plan_id);
    s = FA_SQL_CHECK(ctx, st, b.rc);
    fa_bench_series *v = NULL;
    size_t n = 0, cap = 0;
    double *buf = NULL;
    int nbuf = 0, capbuf = 0;
    char cur[32] = "";
    int cur_cluster = -2, rc = FA_DB_DONE;
    for (;;) {
        const char *subj = NULL;
        int cid = -3;
        if (!s) {
            rc = fa_stmt_step(q);
            if (rc == FA_DB_ROW) {
                subj = fa_col_text(q, 0);
                cid = fa_col_int(q, 1);
                if (!subj) subj = "";
            } else {
                s = STEP_CHECK(ctx, st, q, rc);
            }
        }
        if (!subj || strcmp(subj, cur) || cid != cur_cluster) { /* flush the previous series */
            int k = 0;
            while (k < FA_BENCH_SUBJECT_COUNT && strcmp(cur, fa_bench_subject_name((fa_bench_subject)k))) k++;
            if (!s && nbuf > 0 && k < FA_BENCH_SUBJECT_COUNT) {
                if (!fa_sq_grow(arena, (void **)&v, n, &cap, sizeof *v)) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path); break; }
                double *smp = fa_arena_alloc(arena, sizeof(double) * (size_t)nbuf);
                if (!smp) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path); break; }
                memcpy(smp, buf, sizeof(double) * (size_t)nbuf);
                v[n++] = (fa_bench_series){(fa_bench_subject)k, cur_cluster, nbuf, smp};
            }
            nbuf = 0;
            if (!subj) break;
            snprintf(cur, sizeof cur, "%s", subj);
            cur_cluster = cid;
        }
        if (nbuf == capbuf) {
            int nc = capbuf ? capbuf * 2 : 1024;
            double *nb = realloc(buf, sizeof(double) * (size_t)nc);
            if (!nb) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path); continue; }
            buf = nb;
            capbuf = nc;
        }
        buf[nbuf++] = (double)fa_col_i64(q, 2);
    }
    free(buf);
    fa_stmt_finalize(q);
    if (s) return s;
    *out = v;
    *n_out = n;
    return FA_OK;
}
