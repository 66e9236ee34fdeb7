/* store/plans — typed writes of the advisor's plans: the plan row, its clusters (proposal and
 * the applier's verdicts) and the why-not list. Every SQL statement on those tables from the
 * stages above lives here. */
#include "store-impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ids as a JSON array ("[1,2,3]") into b, replacing its content. */
static void ints_json(fa_buf *b, const int *v, int n)
{
    fa_buf_reset(b);
    fa_buf_puts(b, "[");
    for (int k = 0; k < n; k++) fa_buf_printf(b, "%s%d", k ? "," : "", v[k]);
    fa_buf_puts(b, "]");
}

/* The rows of FA_CLUSTER_FIELDS stored as columns of `clusters` (owner: any; V only). */
static bool stored(const fa_plan_field *f, bool verdict_only)
{
    return f->column && (!verdict_only || f->owner == FA_PF_OWNER_V);
}

/* Bind one field's column value (fa_plan_field_kind's conventions: none -> NULL). scratch holds
 * an id array's JSON text until the statement steps. */
static void bind_field(binder *b, const fa_plan_field *f, const fa_cluster *c, const fa_cluster_verdict *v, fa_buf *scratch)
{
    const void *p = fa_plan_field_ptr(f, c, v);
    switch (f->kind) {
    case FA_PF_INT: b_i64(b, *(const int *)p); break;
    case FA_PF_INT_OPT: if (*(const int *)p >= 0) b_i64(b, *(const int *)p); else b_txt(b, NULL); break;
    case FA_PF_U64: b_i64(b, (int64_t)*(const uint64_t *)p); break;
    case FA_PF_NS: if (!isnan(*(const double *)p)) b_dbl(b, *(const double *)p / 1e3); else b_txt(b, NULL); break;
    case FA_PF_REAL: if (!isnan(*(const double *)p)) b_dbl(b, *(const double *)p); else b_txt(b, NULL); break;
    case FA_PF_REAL_OPT: if (*(const double *)p >= 0) b_dbl(b, *(const double *)p); else b_txt(b, NULL); break;
    case FA_PF_FLOAT: if (!isnan(*(const float *)p)) b_dbl(b, *(const float *)p); else b_txt(b, NULL); break;
    case FA_PF_STR: b_txt(b, *(const char *const *)p); break;
    case FA_PF_KIND: b_txt(b, fa_cluster_kind_name(*(const fa_cluster_kind *)p)); break;
    case FA_PF_REDUCTION: b_txt(b, fa_reduce_kind_name(*(const fa_reduce_kind *)p)); break;
    case FA_PF_STATUS: b_txt(b, fa_cluster_status_name(*(const fa_cluster_status *)p)); break;
    case FA_PF_IDS:
    case FA_PF_NODE_IDS:
    case FA_PF_NODE_OPS:
    case FA_PF_TENSOR_IDS: /* JSON arrays of ids (docs/schema.md) */
        ints_json(scratch, *(int *const *)p, *fa_plan_field_count(f, c));
        b_txt(b, scratch->data);
        break;
    case FA_PF_POST_OPS:
    case FA_PF_KIND_COUNT: b_txt(b, NULL); break;
    }
}

/* "INSERT INTO clusters (run_id, plan_id, <columns>) VALUES (?1, ?2, ...)" into b. */
static void insert_sql(fa_buf *b)
{
    fa_buf_puts(b, "INSERT INTO clusters (run_id, plan_id");
    int n = 2;
    for (int f = 0; f < fa_cluster_n_fields; f++)
        if (stored(&fa_cluster_fields[f], false)) fa_buf_printf(b, ", %s", fa_cluster_fields[f].column), n++;
    fa_buf_puts(b, ") VALUES (");
    for (int k = 1; k <= n; k++) fa_buf_printf(b, "%s?%d", k > 1 ? "," : "", k);
    fa_buf_puts(b, ")");
}

/* Rows of one plan as fa_sq_put_rows binds them (?1 = run_id bound by it). */
typedef struct plan_rows {
    int plan_id;
    const fa_plan *p;
    const fa_cluster_verdict *v;
    fa_buf *scratch;
} plan_rows;

/* UPDATE's parameters: ?2 plan_id, ?3 cluster_id, then the verdict columns in table order. */
static void bind_cluster_verdict(binder *b, size_t i, const void *user)
{
    const plan_rows *r = user;
    b_i64(b, r->plan_id);
    b_i64(b, r->p->clusters[i].id);
    for (int f = 0; f < fa_cluster_n_fields; f++)
        if (stored(&fa_cluster_fields[f], true)) bind_field(b, &fa_cluster_fields[f], &r->p->clusters[i], &r->v[i], r->scratch);
}

static void bind_why_not(binder *b, size_t i, const void *user)
{
    const plan_rows *r = user;
    const fa_why_not *w = &r->p->why_not[i];
    b_i64(b, r->plan_id);
    b_i64(b, (int64_t)i);
    b_i64(b, w->producer);
    b_i64(b, w->consumer);
    b_i64(b, w->tensor);
    b_txt(b, fa_why_code_name(w->code));
    b_txt(b, w->reason);
}

/* A figure of the plan's layout, integer ns (NULL when NAN). */
static void b_ns(binder *b, double ns)
{
    if (isnan(ns)) b_txt(b, NULL);
    else b_i64(b, (int64_t)llround(ns));
}

/* plans.layout .. layout_gain_hi_ns (schema v11); all NULL for an undecided layout. */
static void bind_layout(binder *b, const fa_plan_layout *l)
{
    bool known = l->source != FA_LAYOUT_SRC_UNKNOWN;
    bool measured = l->source == FA_LAYOUT_SRC_MEASURED && l->rounds > 0;
    b_txt(b, known ? fa_layout_name(l->layout) : NULL);
    b_txt(b, fa_layout_source_name(l->source));
    b_txt(b, known ? fa_layout_name(l->deflt) : NULL);
    b_txt(b, measured ? fa_layout_name(l->rival) : NULL);
    if (measured) b_i64(b, l->rounds), b_i64(b, l->verdict);
    else b_txt(b, NULL), b_txt(b, NULL);
    b_ns(b, measured ? l->default_median_ns : NAN);
    b_ns(b, measured ? l->rival_median_ns : NAN);
    b_ns(b, measured ? l->gain_ns : NAN);
    b_ns(b, measured ? l->gain_lo_ns : NAN);
    b_ns(b, measured ? l->gain_hi_ns : NAN);
}

/* The layout a stored word names (fa_layout_of_name); false for NULL or an unknown word. */
static bool layout_col(fa_stmt *q, int col, fa_layout *out)
{
    return !fa_col_null(q, col) && fa_layout_of_name(fa_col_text(q, col), out);
}

static double ns_col(fa_stmt *q, int col) { return fa_col_null(q, col) ? NAN : (double)fa_col_i64(q, col); }

/* fa_plan.layout from columns col.. of q (bind_layout's order): UNKNOWN when the source or the
 * layout is missing or names nothing this build knows (a newer build's word, a hand edit). */
static fa_plan_layout decode_layout(fa_stmt *q, int col)
{
    fa_plan_layout l = fa_plan_layout_unknown();
    fa_layout lay, def, riv;
    fa_layout_source src = fa_col_null(q, col + 1) ? FA_LAYOUT_SRC_UNKNOWN : fa_layout_source_parse(fa_col_text(q, col + 1));
    if (src == FA_LAYOUT_SRC_UNKNOWN || !layout_col(q, col, &lay)) return l;
    l.source = src;
    l.layout = lay;
    l.deflt = layout_col(q, col + 2, &def) ? def : lay;
    if (src == FA_LAYOUT_SRC_MEASURED && layout_col(q, col + 3, &riv) && !fa_col_null(q, col + 4)) {
        l.rival = riv;
        l.rounds = fa_col_int(q, col + 4);
        l.verdict = fa_col_null(q, col + 5) ? 0 : fa_col_int(q, col + 5);
        l.default_median_ns = ns_col(q, col + 6);
        l.rival_median_ns = ns_col(q, col + 7);
        l.gain_ns = ns_col(q, col + 8);
        l.gain_lo_ns = ns_col(q, col + 9);
        l.gain_hi_ns = ns_col(q, col + 10);
        if (l.rounds < 0) l.rounds = 0;
        if (l.verdict < -1 || l.verdict > 1) l.verdict = 0;
    }
    return l;
}

fa_status fa_store_put_plan(fa_ctx *ctx, fa_store *st, const fa_plan *p, const fa_cluster_verdict *v, int *plan_id)
{
    if (p->run_id < 0) return fa_ctx_error(ctx, FA_ERR_INPUT, "plan has no run (run_id -1): nothing to attach it to");
    int64_t run_id = p->run_id;
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
                          "occupancy_floor, gate, status, layout, layout_source, layout_default, layout_rival, layout_rounds, "
                          "layout_verdict, layout_default_median_ns, layout_rival_median_ns, layout_gain_ns, layout_gain_lo_ns, "
                          "layout_gain_hi_ns) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,'proposed',?11,?12,?13,?14,?15,?16,?17,"
                          "?18,?19,?20,?21)",
                          &q);
    if (!s) {
        b_start(&b, q);
        b_i64(&b, run_id);
        b_i64(&b, id);
        b_i64(&b, fa_sq_unix_now_ns());
        b_txt(&b, p->hash);
        b_txt(&b, fa_target_name(p->opt.target));
        b_txt(&b, p->opt.arch);
        if (p->opt.max_ops >= 0) b_i64(&b, p->opt.max_ops); else b_txt(&b, NULL);
        if (p->opt.max_inputs >= 0) b_i64(&b, p->opt.max_inputs); else b_txt(&b, NULL);
        if (!isnan(p->opt.occupancy_floor)) b_dbl(&b, p->opt.occupancy_floor); else b_txt(&b, NULL);
        b_i64(&b, !p->opt.no_gate);
        bind_layout(&b, &p->layout);
        s = FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
    }
    fa_stmt_finalize(q);
    q = NULL;
    fa_buf sql, scratch;
    fa_buf_init(&sql);
    fa_buf_init(&scratch);
    insert_sql(&sql);
    if (!s && sql.oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    if (!s) s = fa_sq_prepare(ctx, st, sql.data, &q);
    fa_stmt *qp = NULL;
    if (!s)
        s = fa_sq_prepare(ctx, st,
                          "INSERT INTO cluster_post_ops (run_id, plan_id, cluster_id, seq, spec, operand_tensor) "
                          "VALUES (?1,?2,?3,?4,?5,?6)",
                          &qp);
    for (int i = 0; i < p->n_clusters && !s; i++) {
        const fa_cluster *c = &p->clusters[i];
        fa_cluster_verdict advisor = fa_cluster_verdict_of(c);
        b_start(&b, q);
        b_i64(&b, run_id);
        b_i64(&b, id);
        fa_buf cols[8]; /* the id arrays' JSON, alive until the step */
        int nb = 0;
        for (int f = 0; f < fa_cluster_n_fields; f++) {
            if (!stored(&fa_cluster_fields[f], false)) continue;
            fa_buf *t = &scratch;
            if (fa_cluster_fields[f].count_offset && nb < 8) fa_buf_init(t = &cols[nb++]);
            bind_field(&b, &fa_cluster_fields[f], c, v ? &v[i] : &advisor, t);
        }
        bool oom = false;
        for (int k = 0; k < nb; k++) oom |= cols[k].oom;
        s = oom ? fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path) : FA_SQL_CHECK(ctx, st, b.rc);
        if (!s) s = STEP_CHECK(ctx, st, q, fa_stmt_step(q));
        for (int k = 0; k < nb; k++) fa_buf_free(&cols[k]);
        for (int k = 0; k < c->n_post_ops && !s; k++) {
            char spec[64];
            fa_post_op_format(&c->post_ops[k], spec, sizeof spec);
            b_start(&b, qp);
            b_i64(&b, run_id);
            b_i64(&b, id);
            b_i64(&b, c->id);
            b_i64(&b, k);
            b_txt(&b, spec);
            b_i64(&b, c->post_ops[k].operand);
            s = FA_SQL_CHECK(ctx, st, b.rc);
            if (!s) s = STEP_CHECK(ctx, st, qp, fa_stmt_step(qp));
        }
    }
    fa_stmt_finalize(qp);
    fa_stmt_finalize(q);
    plan_rows wn = {id, p, v, &scratch};
    if (!s)
        s = fa_sq_put_rows(ctx, st,
                           "INSERT INTO why_not (run_id, plan_id, seq, producer, consumer, tensor_id, reason_code, "
                           "reason) VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
                           run_id, p->n_why_not > 0 ? (size_t)p->n_why_not : 0, bind_why_not, &wn);
    fa_buf_free(&sql);
    fa_buf_free(&scratch);
    s = fa_sq_tx_close(ctx, st, own, s);
    if (!s) *plan_id = id;
    return s;
}

fa_status fa_store_put_cluster_verdicts(fa_ctx *ctx, fa_store *st, const fa_plan *p, const fa_cluster_verdict *v)
{
    bool own;
    fa_status s = fa_sq_write_open(ctx, st, "store cluster verdicts", &own);
    if (s) return s;
    fa_buf sql, scratch;
    fa_buf_init(&sql);
    fa_buf_init(&scratch);
    fa_buf_puts(&sql, "UPDATE clusters SET ");
    int k = 4;
    for (int f = 0; f < fa_cluster_n_fields; f++)
        if (stored(&fa_cluster_fields[f], true)) fa_buf_printf(&sql, "%s%s=?%d", k > 4 ? ", " : "", fa_cluster_fields[f].column, k), k++;
    fa_buf_puts(&sql, " WHERE run_id=?1 AND plan_id=?2 AND cluster_id=?3");
    plan_rows rows = {p->plan_id, p, v, &scratch};
    if (sql.oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    else
        s = fa_sq_put_rows(ctx, st, sql.data, p->run_id, p->n_clusters > 0 ? (size_t)p->n_clusters : 0, bind_cluster_verdict,
                           &rows);
    fa_buf_free(&sql);
    fa_buf_free(&scratch);
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

/* A post-op row with the cluster it belongs to. */
typedef struct post_op_at {
    int cluster_id;
    fa_post_op op;
    bool known;                /* its spec names a post-op kind of this build */
} post_op_at;

/* A spec this build cannot read is corruption, not a newer build's (a newer schema is refused
 * when the file opens): refused naming the run and the text, never a post-op silently dropped
 * from its cluster. user: the run id. */
static fa_status decode_post_op(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    (void)arena;
    post_op_at *r = row;
    r->cluster_id = fa_col_int(q, 0);
    const char *spec = fa_col_text(q, 1);
    r->known = fa_post_op_parse(spec, fa_col_int(q, 2), &r->op);
    if (!r->known) {
        fa_buf shown;
        fa_buf_init(&shown);
        fa_store_quote_name(&shown, spec ? spec : "(null)", spec ? strlen(spec) : 6);
        fa_status e = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: run %lld: table cluster_post_ops, column spec: %s is not a post-op",
                                   st->path, (long long)*(const int64_t *)user, shown.data ? shown.data : "?");
        fa_buf_free(&shown);
        return e;
    }
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

/* The post-op rows of plan (run_id, plan_id), attached to their clusters cv[0..nc) (a spec this
 * build cannot read: FA_ERR_INPUT). */
static fa_status get_post_ops(fa_ctx *ctx, fa_store *st, int64_t run_id, int plan_id, fa_arena *arena,
                              fa_cluster *cv, size_t nc)
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
    s = fa_sq_collect_rows(ctx, st, q, b.rc, arena, sizeof *rows, decode_post_op, &run_id, (void **)&rows, &n);
    if (s) return s;
    fa_post_op *v = fa_arena_alloc(arena, sizeof *v * (n ? n : 1)); /* the clusters point into one array */
    if (!v) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    size_t nv = 0;
    for (size_t i = 0; i < nc; i++) { /* rows ordered by cluster id: binary search for its first */
        size_t k = 0, hi = n;
        while (k < hi) {
            size_t mid = k + (hi - k) / 2;
            if (rows[mid].cluster_id < cv[i].id) k = mid + 1; else hi = mid;
        }
        cv[i].post_ops = &v[nv];
        cv[i].n_post_ops = 0;
        for (; k < n && rows[k].cluster_id == cv[i].id; k++)
            if (rows[k].known) v[nv++] = rows[k].op, cv[i].n_post_ops++;
    }
    return FA_OK;
}

/* "[1,2,3]" (members_json, a list of node, tensor or cluster ids) -> ints in arena; NULL text is
 * no ints. A stored list is untrusted input: exactly a JSON array of integers in [-1,
 * FA_STORE_NODE_ID_MAX] (-1: an absent optional tensor), else -2 with *bad saying what (a member
 * list silently shortened, or 2^63-1 read as -1, would have show, report and gate judge another
 * cluster than the one stored). -1 when out of memory. */
static int ids_of(fa_arena *ar, const char *json, int **out, char *bad, size_t bad_cap)
{
    int cap = 1;
    for (const char *c = json; c && *c; c++) cap += *c == ',';
    int *v = fa_arena_alloc(ar, sizeof(int) * (size_t)cap);
    *out = v;
    if (!v) return -1;
    if (!json) return 0;
    int n = 0;
    const char *p = json;
#define SKIP_WS() while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++
    SKIP_WS();
    bool ok = *p == '[';
    if (ok) p++;
    SKIP_WS();
    if (ok && *p == ']') p++;
    else
        while (ok) {
            SKIP_WS();
            char *end = (char *)p;
            errno = 0;
            long long x = *p == '-' || (*p >= '0' && *p <= '9') ? strtoll(p, &end, 10) : 0;
            if (end == p) break; /* not a number: ok stays, the check below names where */
            if (errno == ERANGE || x < -1 || x > FA_STORE_NODE_ID_MAX) {
                int len = (int)(end - p);
                snprintf(bad, bad_cap, "id %.*s%s is outside [-1, %d]", len > 24 ? 24 : len, p, len > 24 ? "..." : "",
                         FA_STORE_NODE_ID_MAX);
                return -2;
            }
            v[n++] = (int)x; /* n < cap: one number per comma-separated place */
            p = end;
            SKIP_WS();
            if (*p == ']') {
                p++;
                break;
            }
            ok = *p == ',';
            if (ok) p++; /* never past the terminator */
        }
    SKIP_WS();
#undef SKIP_WS
    if (!ok || *p || (p > json && p[-1] != ']')) {
        snprintf(bad, bad_cap, "not a list of integers at character %ld", (long)(p - json));
        return -2;
    }
    return n;
}

/* One column into its field (fa_plan_field_kind's conventions for NULL). 0, or -1 when out of
 * memory, -2 when an id list is not one (*bad says why). */
static int decode_field(fa_stmt *q, int col, const fa_plan_field *f, fa_cluster *c, fa_cluster_verdict *v, fa_arena *ar,
                        char *bad, size_t bad_cap)
{
    void *p = fa_plan_field_ptr(f, c, v);
    bool null = fa_col_null(q, col);
    switch (f->kind) {
    case FA_PF_INT: *(int *)p = fa_col_int(q, col); break;
    case FA_PF_INT_OPT: *(int *)p = null ? -1 : fa_col_int(q, col); break;
    case FA_PF_U64: *(uint64_t *)p = null ? 0 : (uint64_t)fa_col_i64(q, col); break;
    case FA_PF_NS: *(double *)p = null ? NAN : fa_col_dbl(q, col) * 1e3; break;
    case FA_PF_REAL: *(double *)p = null ? NAN : fa_col_dbl(q, col); break;
    case FA_PF_REAL_OPT: *(double *)p = null ? -1 : fa_col_dbl(q, col); break;
    case FA_PF_FLOAT: *(float *)p = null ? NAN : (float)fa_col_dbl(q, col); break;
    case FA_PF_STR:
        *(const char **)p = fa_sq_col_str(q, col, ar);
        if (!null && !*(const char **)p) return -1;
        break;
    case FA_PF_KIND: *(fa_cluster_kind *)p = fa_cluster_kind_parse(fa_col_text(q, col)); break;
    case FA_PF_REDUCTION: *(fa_reduce_kind *)p = fa_reduce_kind_parse(fa_col_text(q, col)); break;
    case FA_PF_STATUS: *(fa_cluster_status *)p = fa_cluster_status_parse(fa_col_text(q, col)); break;
    case FA_PF_IDS:
    case FA_PF_NODE_IDS:
    case FA_PF_NODE_OPS:
    case FA_PF_TENSOR_IDS: {
        int *ids = NULL, n = ids_of(ar, fa_col_text(q, col), &ids, bad, bad_cap);
        if (n < 0) return n;
        *(int **)p = ids;
        *fa_plan_field_count(f, c) = n;
        break;
    }
    case FA_PF_POST_OPS:
    case FA_PF_KIND_COUNT: break;
    }
    return 0;
}

/* A stored cluster row: its proposal into row (fa_cluster), its verdict into the matching slot
 * of user's verdict list, appended in the same order. */
typedef struct cluster_rows {
    fa_cluster_verdict *v;
    size_t n, cap;
    fa_arena *ar;
    int64_t run_id;            /* for a bad row's message */
    fa_graph_counts g;         /* the run's graph: what member, anchor and tensor ids may name */
} cluster_rows;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* A stored cluster's ids against the run's graph (when the run has one): at least one member,
 * each a distinct node of the run; the anchor -1 or one of the members; inputs and outputs -1 or
 * tensors of the run. A doctored list ([16777216], [], [0,0,0], an anchor of 99999) made `gate`
 * report "fusion lost" on a baseline and `report` show a cluster of nothing (the sixth attack
 * pass). NULL, or what is wrong written into bad. */
static const char *cluster_ids_fault(const cluster_rows *cr, const fa_cluster *c, fa_arena *ar, char *bad, size_t cap)
{
    if (cr->g.nodes <= 0) return NULL; /* an import with no graph: nothing to check them against */
    if (c->n_members < 1) return snprintf(bad, cap, "members_json: a cluster of no node"), bad;
    int *sorted = fa_arena_alloc(ar, sizeof(int) * (size_t)c->n_members);
    for (int i = 0; i < c->n_members; i++) {
        if (c->members[i] < 0 || c->members[i] >= cr->g.nodes)
            return snprintf(bad, cap, "members_json: node id %d is not one of the run's %lld nodes", c->members[i],
                            (long long)cr->g.nodes), bad;
        if (sorted) sorted[i] = c->members[i];
    }
    if (sorted) {
        qsort(sorted, (size_t)c->n_members, sizeof *sorted, cmp_int);
        for (int i = 1; i < c->n_members; i++)
            if (sorted[i] == sorted[i - 1])
                return snprintf(bad, cap, "members_json: node id %d is listed twice", sorted[i]), bad;
    }
    if (c->anchor >= 0) {
        bool member = false;
        for (int i = 0; i < c->n_members && !member; i++) member = c->members[i] == c->anchor;
        if (!member) return snprintf(bad, cap, "anchor: node id %d is not one of the cluster's members", c->anchor), bad;
    }
    for (int k = 0; k < 2; k++) {
        const int *t = k ? c->outputs : c->inputs;
        int n = k ? c->n_outputs : c->n_inputs;
        for (int i = 0; i < n; i++)
            if (t[i] < -1 || t[i] >= cr->g.tensors)
                return snprintf(bad, cap, "%s: tensor id %d is not one of the run's %lld tensors",
                                k ? "outputs_json" : "inputs_json", t[i], (long long)cr->g.tensors), bad;
    }
    return NULL;
}

static fa_status decode_cluster(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    cluster_rows *cr = user;
    fa_cluster *c = row;
    if (!fa_sq_grow(arena, (void **)&cr->v, cr->n, &cr->cap, sizeof *cr->v))
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    fa_cluster_verdict *v = &cr->v[cr->n++];
    memset(v, 0, sizeof *v);
    v->block_size = -1;
    c->refusal = FA_WHY_NONE;
    int col = 0;
    for (int f = 0; f < fa_cluster_n_fields; f++) {
        if (!stored(&fa_cluster_fields[f], false)) continue;
        char bad[160] = "";
        int dr = decode_field(q, col++, &fa_cluster_fields[f], c, v, arena, bad, sizeof bad);
        if (dr == -2)
            return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: run %lld: table clusters, column %s: %s", st->path,
                                (long long)cr->run_id, fa_cluster_fields[f].column, bad);
        if (dr)
            return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    }
    /* the advisor's own decision is not stored apart from the verdict: the stored status/reason
     * are the latest word on the cluster */
    char bad[200];
    if (cluster_ids_fault(cr, c, arena, bad, sizeof bad))
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: run %lld: table clusters, cluster %d, column %s; the database was "
                            "damaged, or not written by fuse-advise", st->path, (long long)cr->run_id, c->id, bad);
    c->status = v->status;
    c->reason = v->reason;
    c->registers = v->registers;
    c->spill_bytes = v->spill_bytes;
    v->refusal = FA_WHY_NONE;
    v->block_size = c->block_size;
    return FA_OK;
}

static fa_status decode_why_not(fa_ctx *ctx, fa_store *st, fa_stmt *q, fa_arena *arena, void *row, void *user)
{
    const cluster_rows *cr = user; /* the run's graph: what the edge's ids may name (-1: none) */
    fa_why_not *w = row;
    static const char *const col[3] = {"producer", "consumer", "tensor_id"};
    int *dst[3] = {&w->producer, &w->consumer, &w->tensor};
    for (int k = 0; k < 3; k++) {
        /* a run with no graph rows (a plan stored without them) bounds the ids by int only */
        int64_t count = cr->g.nodes <= 0 ? (int64_t)INT32_MAX + 1 : k < 2 ? cr->g.nodes : cr->g.tensors;
        fa_status s = fa_store_graph_id(ctx, st, &cr->g, "why_not", col[k], fa_col_i64(q, k), count,
                                        k < 2 ? "nodes" : "tensors", true, dst[k]);
        if (s) return s;
    }
    w->code = fa_why_code_parse(fa_col_text(q, 3));
    w->reason = fa_sq_col_str(q, 4, arena);
    if (!w->reason && !fa_col_null(q, 4)) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    return FA_OK;
}

/* The clusters query: every stored field's column (registers and spills the generated kernel's
 * when fused_kernels recorded them), ranked as the plan was. */
static void select_sql(fa_buf *b)
{
    fa_buf_puts(b, "SELECT ");
    int k = 0;
    for (int f = 0; f < fa_cluster_n_fields; f++) {
        const fa_plan_field *fd = &fa_cluster_fields[f];
        if (!stored(fd, false)) continue;
        const char *col = fd->column;
        if (!strcmp(col, "registers") || !strcmp(col, "spill_bytes")) fa_buf_printf(b, "%scoalesce(f.%s, c.%s)", k ? ", " : "", col, col);
        else fa_buf_printf(b, "%sc.%s", k ? ", " : "", col);
        k++;
    }
    fa_buf_puts(b, " FROM clusters c LEFT JOIN fused_kernels f ON f.run_id=c.run_id AND f.plan_id=c.plan_id AND "
                   "f.cluster_id=c.cluster_id WHERE c.run_id=?1 AND c.plan_id=?2 "
                   "ORDER BY c.est_saving_us DESC NULLS LAST, c.cluster_id");
}

static fa_target target_of(const char *name)
{
    for (int t = 0; name && t < FA_TARGET_COUNT; t++)
        if (!strcmp(name, fa_target_name((fa_target)t))) return (fa_target)t;
    return FA_TARGET_AUTO;
}

fa_status fa_store_get_latest_plan(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_plan **plan, fa_cluster_verdict **verdicts)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_sq_prepare_run(ctx, st,
                                    "SELECT plan_id, plan_hash, target, arch, max_ops, max_inputs, occupancy_floor, gate, "
                                    "layout, layout_source, layout_default, layout_rival, layout_rounds, layout_verdict, "
                                    "layout_default_median_ns, layout_rival_median_ns, layout_gain_ns, layout_gain_lo_ns, "
                                    "layout_gain_hi_ns FROM plans WHERE run_id=?1 " FA_STORE_PLAN_OF_RECORD,
                                    run_id, &q, &b);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, b.rc);
    int rc = FA_DB_DONE;
    fa_plan *p = NULL;
    if (!s) s = STEP_CHECK(ctx, st, q, rc = fa_stmt_step(q));
    if (!s && rc == FA_DB_ROW) {
        p = fa_plan_create();
        if (!p) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    }
    if (p) {
        p->run_id = run_id;
        p->plan_id = fa_col_int(q, 0);
        const char *h = fa_col_text(q, 1);
        snprintf(p->hash, sizeof p->hash, "%s", h ? h : "");
        p->opt.target = target_of(fa_col_text(q, 2));
        p->opt.arch = fa_sq_col_str(q, 3, p->arena);
        p->opt.max_ops = fa_col_null(q, 4) ? -1 : fa_col_int(q, 4);
        p->opt.max_inputs = fa_col_null(q, 5) ? -1 : fa_col_int(q, 5);
        p->opt.occupancy_floor = fa_col_null(q, 6) ? NAN : fa_col_dbl(q, 6);
        p->opt.no_gate = !fa_col_null(q, 7) && fa_col_int(q, 7) == 0;
        p->layout = decode_layout(q, 8);
    }
    fa_stmt_finalize(q);
    if (s || !p) {
        fa_plan_free(p);
        if (!s) {
            *plan = NULL;
            if (verdicts) *verdicts = NULL;
        }
        return s;
    }
    fa_buf sql;
    fa_buf_init(&sql);
    select_sql(&sql);
    fa_cluster *cv = NULL;
    size_t nc = 0;
    cluster_rows cr = {NULL, 0, 0, p->arena, run_id, {0}};
    if (sql.oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    if (!s) s = fa_store_graph_counts(ctx, st, run_id, &cr.g);
    if (!s) s = prepare_plan_rows(ctx, st, sql.data, run_id, p->plan_id, &q, &b);
    fa_buf_free(&sql);
    if (!s) s = fa_sq_collect_rows(ctx, st, q, b.rc, p->arena, sizeof *cv, decode_cluster, &cr, (void **)&cv, &nc);
    for (size_t i = 0; !s && i < nc; i++) /* an index into the plan's clusters, or -1 */
        if (cv[i].depends_on < -1 || cv[i].depends_on >= (int64_t)nc || cv[i].depends_on == (int)i)
            s = fa_ctx_error(ctx, FA_ERR_INPUT,
                             "%s: run %lld: table clusters, cluster %d, column depends_on: %d is not another cluster of "
                             "the plan's %zu; the database was damaged, or not written by fuse-advise",
                             st->path, (long long)run_id, cv[i].id, cv[i].depends_on, nc);
    if (!s) s = get_post_ops(ctx, st, run_id, p->plan_id, p->arena, cv, nc);
    fa_why_not *wv = NULL;
    size_t nw = 0;
    if (!s)
        s = prepare_plan_rows(ctx, st,
                              "SELECT producer, consumer, tensor_id, reason_code, reason FROM why_not WHERE run_id=?1 AND "
                              "plan_id=?2 ORDER BY seq",
                              run_id, p->plan_id, &q, &b);
    if (!s) s = fa_sq_collect_rows(ctx, st, q, b.rc, p->arena, sizeof *wv, decode_why_not, &cr, (void **)&wv, &nw);
    if (!s && !cr.v) { /* no cluster: an empty verdict list */
        cr.v = fa_arena_alloc(p->arena, sizeof *cr.v);
        if (!cr.v) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    }
    if (s) {
        fa_plan_free(p);
        return s;
    }
    p->clusters = cv;
    p->n_clusters = (int)nc;
    p->why_not = wv;
    p->n_why_not = (int)nw;
    *plan = p;
    if (verdicts) *verdicts = cr.v;
    return FA_OK;
}

fa_status fa_store_get_bench_series(fa_ctx *ctx, fa_store *st, int64_t run_id, int plan_id, fa_arena *arena,
                                    fa_bench_series **out, size_t *n_out)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_sq_prepare_run(ctx, st, "SELECT subject, cluster_id, latency_ns, iter FROM benchmarks WHERE run_id=?1 AND "
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
        /* a latency is a positive duration of a run (an hour at most here: FA_STORE_LATENCY_MAX_NS);
         * zero, negative or past it is a doctored or corrupt row, never a sample: dropped, they made a
         * `gate` candidate look record-less and pass */
        int64_t ns = fa_col_i64(q, 2);
        if (ns <= 0 || ns > FA_STORE_LATENCY_MAX_NS) {
            s = fa_ctx_error(ctx, FA_ERR_INPUT,
                             "%s: table benchmarks, run %lld, subject '%s', cluster %d, iter %lld: column latency_ns "
                             "is %lld, not a duration in (0, %lld] ns",
                             st->path, (long long)run_id, cur, cur_cluster, (long long)fa_col_i64(q, 3), (long long)ns,
                             (long long)FA_STORE_LATENCY_MAX_NS);
            continue;
        }
        buf[nbuf++] = (double)ns;
    }
    free(buf);
    fa_stmt_finalize(q);
    if (s) return s;
    *out = v;
    *n_out = n;
    return FA_OK;
}
