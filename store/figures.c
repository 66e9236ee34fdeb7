/* store/figures — the one set of figures a run is shown with (issue 37): every surface (`run`'s
 * stdout, report.html, summary.json, `runs`, the gate) takes the iteration times, kernel counts and
 * savings of a run from fa_store_get_run_figures, so two surfaces never disagree. Reads only. */
#include "store-impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The run's fused twin's baseline: "fused-of:<id>" of a run of kind 'fused'; -1 otherwise. */
static int64_t twin_of(const fa_run_info *r)
{
    if (!r->kind || strcmp(r->kind, "fused") || !r->tag || strncmp(r->tag, "fused-of:", 9)) return -1;
    char *end;
    long long id = strtoll(r->tag + 9, &end, 10);
    return end != r->tag + 9 && *end == 0 && id > 0 ? (int64_t)id : -1;
}

/* Kernel records per timed iteration of a run whose op type is op (name_suffix NULL) or whose
 * name ends with name_suffix (op NULL; a fixed suffix of ours, no LIKE wildcard in it), rounded
 * to the nearest integer; 0 without records. */
static fa_status kernels_per_iter_where(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *op, const char *name_suffix,
                                        int *out)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_sq_prepare_run(ctx, st,
                                    op ? "SELECT count(*), count(DISTINCT iter) FROM kernels WHERE run_id=?1 AND kind=?2 AND "
                                         "iter>=0 AND op_type=?3"
                                       : "SELECT count(*), count(DISTINCT iter) FROM kernels WHERE run_id=?1 AND kind=?2 AND "
                                         "iter>=0 AND name LIKE ?3",
                                    run_id, &q, &b);
    if (s) return s;
    char like[64];
    snprintf(like, sizeof like, "%%%s", op ? "" : name_suffix);
    b_i64(&b, FA_ACT_KERNEL);
    b_txt(&b, op ? op : like);
    s = FA_SQL_CHECK(ctx, st, b.rc);
    int rc = FA_DB_DONE;
    if (!s) s = STEP_CHECK(ctx, st, q, rc = fa_stmt_step(q));
    int64_t n = 0, it = 0;
    if (!s && rc == FA_DB_ROW) {
        n = fa_col_i64(q, 0);
        it = fa_col_i64(q, 1);
    }
    fa_stmt_finalize(q);
    if (!s) *out = it > 0 ? (int)((n + it / 2) / it) : 0;
    return s;
}

/* The kernels of one trace: the most frequent count per timed iteration, -1 when none. */
static fa_status kernels_of(fa_ctx *ctx, fa_store *st, int64_t run_id, int *mode)
{
    int mn, mx;
    return fa_store_get_kernels_per_iter(ctx, st, run_id, &mn, &mx, mode);
}

void fa_run_figures_fused_kernels_text(const fa_run_figures *f, char *out, size_t cap)
{
    if (!out || !cap) return;
    if (f->kernels_fused < 0) {
        snprintf(out, cap, "not measured");
        return;
    }
    char re[48] = "", wi[48] = "";
    if (f->reorders_fused > 0) snprintf(re, sizeof re, "%d layout reorder%s", f->reorders_fused, f->reorders_fused == 1 ? "" : "s");
    if (f->winograd_fused > 0)
        snprintf(wi, sizeof wi, "%d Winograd convolution%s", f->winograd_fused, f->winograd_fused == 1 ? "" : "s");
    if (re[0] || wi[0]) snprintf(out, cap, "%d (%s%s%s)", f->kernels_fused, re, re[0] && wi[0] ? ", " : "", wi);
    else snprintf(out, cap, "%d", f->kernels_fused);
}

fa_status fa_store_get_run_figures(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_run_figures *out)
{
    fa_run_figures f;
    memset(&f, 0, sizeof f);
    f.run_id = run_id;
    f.fused_run_id = -1;
    f.twin_of = -1;
    f.traced_iter_ns = f.fused_traced_iter_ns = NAN;
    f.kernels_baseline = f.kernels_fused = -1;
    f.predicted_saving_ns = f.measured_saving_ns = f.e2e_max_rel_error = NAN;
    fa_arena *ar = fa_arena_create(1 << 12);
    if (!ar) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
    fa_run_info ri;
    fa_status s = fa_store_get_run(ctx, st, run_id, ar, &ri);
    int64_t base = run_id;
    if (!s) {
        f.twin_of = twin_of(&ri);
        if (f.twin_of >= 0) { /* a fused twin is shown with the figures of the run it belongs to */
            base = f.twin_of;
            f.run_id = base;
            s = fa_store_get_run(ctx, st, base, ar, &ri);
        }
    }
    if (!s) {
        f.traced_iter_ns = ri.iter_median_ns >= 0 ? (double)ri.iter_median_ns : NAN;
        f.traced_iters = ri.iters;
        f.peak_bytes_baseline = ri.peak_activation_bytes;
        s = kernels_of(ctx, st, base, &f.kernels_baseline);
    }
    if (!s) s = fa_store_get_fused_run(ctx, st, base, false, &f.fused_run_id);
    if (!s && f.fused_run_id >= 0) {
        fa_run_info fi;
        s = fa_store_get_run(ctx, st, f.fused_run_id, ar, &fi);
        if (!s) {
            f.fused_traced_iter_ns = fi.iter_median_ns >= 0 ? (double)fi.iter_median_ns : NAN;
            f.fused_traced_iters = fi.iters;
            f.peak_bytes_fused = fi.peak_activation_bytes;
            s = kernels_of(ctx, st, f.fused_run_id, &f.kernels_fused);
        }
        if (!s) s = kernels_per_iter_where(ctx, st, f.fused_run_id, "Reorder", NULL, &f.reorders_fused);
        if (!s) s = kernels_per_iter_where(ctx, st, f.fused_run_id, NULL, ", winograd)", &f.winograd_fused);
    }
    fa_plan *p = NULL;
    fa_cluster_verdict *v = NULL;
    if (!s) s = fa_store_get_latest_plan(ctx, st, base, &p, &v);
    if (!s && p) {
        f.plan_id = p->plan_id;
        for (int i = 0; i < p->n_clusters; i++) {
            fa_cluster_status cs = v[i].status;
            if (cs == FA_CLUSTER_ACCEPTED) f.n_accepted++;
            else if (cs == FA_CLUSTER_REFUSED) f.n_refused++;
            else if (fa_cluster_status_rejected(cs)) f.n_rejected++;
            else f.n_other++;
        }
        f.predicted_saving_ns = fa_plan_accepted_saving(p, v);
        fa_bench_series *bs = NULL;
        size_t nbs = 0;
        s = fa_store_get_bench_series(ctx, st, base, p->plan_id, ar, &bs, &nbs);
        for (size_t i = 0; !s && i < nbs; i++) {
            if (bs[i].cluster_id >= 0) continue;
            if (bs[i].subject == FA_BENCH_BASELINE) fa_sample_stats_of(bs[i].samples_ns, bs[i].n, &f.bench_baseline);
            else if (bs[i].subject == FA_BENCH_FUSED) fa_sample_stats_of(bs[i].samples_ns, bs[i].n, &f.bench_fused);
        }
        if (f.bench_baseline.n && f.bench_fused.n) f.measured_saving_ns = f.bench_baseline.median_ns - f.bench_fused.median_ns;
    }
    fa_plan_free(p);
    fa_plan_e2e_row e2e;
    if (!s) s = fa_store_get_plan_e2e(ctx, st, base, &e2e);
    if (!s) {
        f.verdict = e2e.verdict;
        f.e2e_max_rel_error = e2e.max_rel_error;
    }
    fa_arena_free(ar);
    if (!s) *out = f;
    return s;
}

double fa_run_figures_latency(const fa_run_figures *f, bool fused, const char **what)
{
    const fa_sample_stats *b = fused ? &f->bench_fused : &f->bench_baseline;
    double traced = fused ? f->fused_traced_iter_ns : f->traced_iter_ns;
    if (b->n > 0) {
        if (what) *what = "benchmark median";
        return b->median_ns;
    }
    if (traced == traced) {
        if (what) *what = "traced iteration median";
        return traced;
    }
    if (what) *what = NULL;
    return NAN;
}

bool fa_run_figures_noisy(const fa_run_figures *f)
{
    const fa_sample_stats *b = &f->bench_baseline, *fu = &f->bench_fused;
    if (!(b->n > 0 && b->median_ns > 0)) return false;
    if (b->p75_ns - b->p25_ns > 0.25 * b->median_ns) return true;
    if (fu->n > 0 && fu->median_ns > 0 && fu->p75_ns - fu->p25_ns > 0.25 * fu->median_ns) return true;
    return f->traced_iter_ns > 0 && (b->median_ns > 1.25 * f->traced_iter_ns || b->median_ns < 0.8 * f->traced_iter_ns);
}
