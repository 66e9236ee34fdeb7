/* gate/checks — the gate's rules: end-to-end latency, kernels per iteration, accepted clusters
 * (lost, verification, registers/spills), per-component latency; each adds a fa_gate_check with
 * its verdict and sentence (docs/ci.md). */
#include "gate/gate-impl.h"
#include "runtime/runtime.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fa_gate_check *fa_gate_add_check(fa_gate_report *r, const char *id, const char *category, const char *name,
                                 fa_gate_verdict v, const char *fmt, ...)
{
    if (r->n_checks == r->cap_checks) {
        int ncap = r->cap_checks ? r->cap_checks * 2 : 32;
        fa_gate_check *nc = realloc(r->checks, sizeof(fa_gate_check) * (size_t)ncap);
        if (!nc) {
            r->oom = true;
            return NULL;
        }
        r->checks = nc;
        r->cap_checks = ncap;
    }
    fa_buf b;
    fa_buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    fa_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    fa_gate_check *c = &r->checks[r->n_checks];
    memset(c, 0, sizeof *c);
    c->id = fa_arena_strdup(r->arena, id);
    c->category = category;
    c->name = fa_arena_strdup(r->arena, name);
    c->verdict = v;
    c->message = fa_arena_strdup(r->arena, b.data ? b.data : "");
    fa_buf_free(&b);
    if (!c->id || !c->name || !c->message) {
        r->oom = true;
        return NULL;
    }
    r->n_checks++;
    return c;
}

void fa_gate_note(fa_gate_report *r, const char *fmt, ...)
{
    if (r->n_notes >= (int)(sizeof r->notes / sizeof r->notes[0])) return;
    fa_buf b;
    fa_buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    fa_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    const char *s = b.data ? fa_arena_strdup(r->arena, b.data) : NULL;
    fa_buf_free(&b);
    if (s) r->notes[r->n_notes++] = s;
}

static uint64_t check_seed(const fa_gate_options *o, const char *id) { return o->seed ^ fa_hash64(id, strlen(id)); }

void fa_gate_fmt_time(char *buf, size_t cap, double ns)
{
    if (fabs(ns) >= 1e9) snprintf(buf, cap, "%.3f s", ns / 1e9);
    else if (fabs(ns) >= 1e6) snprintf(buf, cap, "%.3f ms", ns / 1e6);
    else snprintf(buf, cap, "%.1f us", ns / 1e3);
}

/* Iterations per run a suggestion may name: more would take a CI job longer than this at the
 * baseline's median (docs/ci.md "How a latency check decides"). */
#define GATE_SUGGEST_MAX_S 600.0

/* Sentence describing a latency comparison: change, CI and what decides it. */
static void describe(fa_buf *b, const fa_gate_stats *s, const fa_gate_options *o)
{
    char r[32], lo[32], hi[32], tb[32], tc[32];
    fa_gate_pct(r, sizeof r, s->ratio);
    fa_gate_pct(lo, sizeof lo, s->lo);
    fa_gate_pct(hi, sizeof hi, s->hi);
    fa_gate_fmt_time(tb, sizeof tb, s->base_median_ns);
    fa_gate_fmt_time(tc, sizeof tc, s->cand_median_ns);
    fa_buf_printf(b, "median %s -> %s (%s", tb, tc, r);
    if (isfinite(s->lo))
        fa_buf_printf(b, ", %.4g%% CI %s..%s", s->confidence * 100, lo, hi);
    if (s->runs_base > 1 || s->runs_cand > 1)
        fa_buf_printf(b, "; %d vs %d iterations in %d vs %d runs)", s->n_base, s->n_cand, s->runs_base, s->runs_cand);
    else fa_buf_printf(b, "; %d vs %d iterations)", s->n_base, s->n_cand);
    double thr = o->max_regression * 100;
    switch (s->verdict) {
    case FA_GATE_FAIL:
        fa_buf_printf(b, ": confidently more than %.3g%% slower", thr);
        break;
    case FA_GATE_PASS:
        fa_buf_printf(b, ": confidently under the %.3g%% threshold", thr);
        break;
    default:
        if (!isfinite(s->lo))
            fa_buf_printf(b, ": too few samples; rerun with --iters %d or more", s->suggested_iters);
        else if (s->suggested_iters > 0 && s->suggested_iters * s->base_median_ns / 1e9 > GATE_SUGGEST_MAX_S)
            fa_buf_printf(b, ": the interval straddles +%.3g%%; more iterations than a CI job can run would decide "
                             "(over %.0f s per run): record --runs 3 per side, or let inconclusive pass", thr,
                          GATE_SUGGEST_MAX_S);
        else if (s->suggested_iters > 0)
            fa_buf_printf(b, ": the interval straddles +%.3g%%; about %d iterations per run would decide (--iters %d)",
                          thr, s->suggested_iters, s->suggested_iters);
        else
            fa_buf_printf(b, ": the change sits on the +%.3g%% threshold; no practical iteration count decides", thr);
    }
}

/* Samples of one side of a check, grouped by run (heap). */
typedef struct pool {
    double *v;
    int n, cap;
    int *g;                   /* samples per run */
    int ng, gcap;
    bool oom;
} pool;

/* Append one run's samples as a group; zero and negative values (a component that ran nothing
 * in that iteration) are no latency samples and are dropped. */
static void pool_add(pool *p, const double *v, int n)
{
    int kept = 0;
    for (int i = 0; i < n && !p->oom; i++) {
        if (!(v[i] > 0)) continue;
        if (p->n == p->cap) {
            int ncap = p->cap ? p->cap * 2 : 256;
            double *nv = realloc(p->v, sizeof(double) * (size_t)ncap);
            if (!nv) { p->oom = true; break; }
            p->v = nv;
            p->cap = ncap;
        }
        p->v[p->n++] = v[i];
        kept++;
    }
    if (!kept || p->oom) return;
    if (p->ng == p->gcap) {
        int ncap = p->gcap ? p->gcap * 2 : 8;
        int *ng = realloc(p->g, sizeof(int) * (size_t)ncap);
        if (!ng) { p->oom = true; return; }
        p->g = ng;
        p->gcap = ncap;
    }
    p->g[p->ng++] = kept;
}

static void pool_free(pool *p)
{
    free(p->v);
    free(p->g);
    memset(p, 0, sizeof *p);
}


/* Compare two sample sets and add the check. For a component check (a cluster or op, a part of
 * an iteration whose baseline median is ref_ns > 0) a confident slowdown fails the build only
 * when it costs at least --min-share of the iteration at the interval's lower bound
 * ((lo - 1) * component median / iteration median); a smaller one warns. An inconclusive
 * component that could not cost --min-share even at the upper bound passes. */
static fa_status latency_check(fa_ctx *ctx, fa_gate_report *r, const char *id, const char *name, const pool *pb,
                               const pool *pc, double confidence, double ref_ns, const char *extra)
{
    fa_gate_stats s;
    if (pb->oom || pc->oom) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory collecting samples");
    CK(fa_gate_compare_grouped(ctx, pb->v, pb->n, pb->g, pb->ng, pc->v, pc->n, pc->g, pc->ng, &r->opt, confidence,
                               check_seed(&r->opt, id), &s));
    fa_buf b;
    fa_buf_init(&b);
    fa_gate_verdict v = s.verdict;
    bool cheap = false; /* inconclusive, but too small to matter: a pass that says why */
    double cost_lo = NAN, cost_hi = NAN;
    if (ref_ns > 0 && isfinite(s.lo)) {
        cost_lo = (s.lo - 1) * s.base_median_ns / ref_ns;
        cost_hi = (s.hi - 1) * s.base_median_ns / ref_ns;
        cheap = v == FA_GATE_INCONCLUSIVE && cost_hi < r->opt.min_share;
    }
    if (cheap) {
        char tb[32], tc[32], pr[32];
        fa_gate_fmt_time(tb, sizeof tb, s.base_median_ns);
        fa_gate_fmt_time(tc, sizeof tc, s.cand_median_ns);
        fa_gate_pct(pr, sizeof pr, s.ratio);
        v = FA_GATE_PASS;
        fa_buf_printf(&b, "median %s -> %s (%s; %d vs %d iterations): even at the interval's upper bound the change costs "
                          "under --min-share %.3g%% of the iteration", tb, tc, pr, s.n_base, s.n_cand, r->opt.min_share * 100);
    } else describe(&b, &s, &r->opt);
    if (v == FA_GATE_FAIL && cost_lo < r->opt.min_share) {
        v = FA_GATE_WARN;
        fa_buf_printf(&b, " (the slowdown costs at least %.3g%% of the iteration, under --min-share %.3g%%: not gating)",
                      cost_lo * 100, r->opt.min_share * 100);
    } else if (v == FA_GATE_FAIL && isfinite(cost_lo)) {
        fa_buf_printf(&b, " (costs at least %.3g%% of the iteration)", cost_lo * 100);
    }
    if (extra) fa_buf_printf(&b, "%s", extra);
    fa_gate_check *c = fa_gate_add_check(r, id, "latency", name, v, "%s", b.data ? b.data : "");
    fa_buf_free(&b);
    if (!c) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    c->has_stats = true;
    c->stats = s;
    return FA_OK;
}

static const char *which_missing(const gate_run *b, const gate_run *c, bool in_b, bool in_c, char *buf, size_t n)
{
    if (!in_b && !in_c)
        snprintf(buf, n, "the baseline run %" PRId64 " and the candidate run %" PRId64 " have", b->info.id, c->info.id);
    else if (!in_b) snprintf(buf, n, "the baseline run %" PRId64 " has", b->info.id);
    else snprintf(buf, n, "the candidate run %" PRId64 " has", c->info.id);
    return buf;
}

/* Each side's end-to-end samples of the unfused (fused false) or fused model into pb / pc: a
 * run's benchmark samples where it has them, else its iteration records (the unfused trace's, or
 * its fused twin's). *n_bench / *n_iter count the runs that gave each. */
static void pool_e2e(const side *sb, const side *sc, bool fused, pool *pb, pool *pc, int *n_bench, int *n_iter)
{
    for (int k = 0; k < 2; k++) {
        const side *sd = k ? sc : sb;
        pool *p = k ? pc : pb;
        for (int i = 0; i < sd->n; i++) {
            const gate_run *g = &sd->r[i];
            const double *bench = fused ? g->bench_fused : g->bench_baseline;
            int nb = fused ? g->n_bench_fused : g->n_bench_baseline;
            const double *iter = fused ? g->fused_iter_ns : g->iter_ns;
            int ni = fused ? g->n_fused_iter_ns : g->n_iter_ns;
            if (nb) {
                pool_add(p, bench, nb);
                (*n_bench)++;
            } else if (ni) {
                pool_add(p, iter, ni);
                (*n_iter)++;
            }
        }
    }
}

static fa_status check_e2e(fa_ctx *ctx, fa_gate_report *r, const side *sb, const side *sc)
{
    char w[160];
    const gate_run *b = &sb->r[0], *c = &sc->r[0];
    pool pb = {0}, pc = {0};
    /* each side's figure from the value `runs`, report.html and summary.json quote
     * (fa_store_get_run_figures): the end-to-end benchmark's baseline samples where the run was
     * applied, else its traced iterations, so that the gate and `runs` never tell two stories of
     * one pair of runs (a busy machine had the traced medians +15 % apart while the benchmark's
     * agreed) */
    int n_bench = 0, n_iter = 0;
    pool_e2e(sb, sc, false, &pb, &pc, &n_bench, &n_iter);
    fa_status s = FA_OK;
    if (pb.n && pc.n)
        s = latency_check(ctx, r, "latency.e2e.unfused", "end-to-end latency (unfused)", &pb, &pc, 0, 0,
                          n_bench && n_iter ? " (partly from the runs' iteration records)" : NULL);
    else if (!fa_gate_add_check(r, "latency.e2e.unfused", "latency", "end-to-end latency (unfused)", FA_GATE_SKIPPED,
                        "not measured in one of the runs: %s no per-iteration \"iteration\" records",
                        which_missing(b, c, pb.n > 0, pc.n > 0, w, sizeof w)))
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    pool_free(&pb);
    pool_free(&pc);
    if (s) return s;
    n_bench = n_iter = 0;
    pool_e2e(sb, sc, true, &pb, &pc, &n_bench, &n_iter);
    if (pb.n && pc.n)
        s = latency_check(ctx, r, "latency.e2e.fused", "end-to-end latency (fused)", &pb, &pc, 0, 0,
                          n_iter ? " (partly from the fused runs' iteration records)" : NULL);
    else if (!fa_gate_add_check(r, "latency.e2e.fused", "latency", "end-to-end latency (fused)", FA_GATE_SKIPPED,
                        "not measured in one of the runs: %s no fused benchmark (run without --no-apply)",
                        which_missing(b, c, pb.n > 0, pc.n > 0, w, sizeof w)))
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    pool_free(&pb);
    pool_free(&pc);
    /* the candidate's own plan judged end to end by the applier (plans.e2e_verdict, schema v6): a
     * LOSS warns (the latency checks above judge the change between the runs) */
    fa_e2e_verdict ev = c->info.e2e_verdict;
    if (!s && ev == FA_E2E_MISMATCH)
        fa_gate_add_check(r, "fusion.e2e", "fusion", "end-to-end verdict of the candidate's plan", FA_GATE_FAIL,
            "run %" PRId64 "'s fused plan is a MISMATCH end to end: its outputs differ from its unfused model's beyond "
            "the end-to-end tolerance; it is not deployable", c->info.id);
    else if (!s && ev == FA_E2E_LOSS)
        fa_gate_add_check(r, "fusion.e2e", "fusion", "end-to-end verdict of the candidate's plan", FA_GATE_WARN,
            "run %" PRId64 "'s fused plan is a LOSS end to end: with its clusters kept it is not measurably faster than "
            "its unfused baseline; deploy the baseline", c->info.id);
    else if (!s && ev != FA_E2E_NOT_APPLIED)
        fa_gate_add_check(r, "fusion.e2e", "fusion", "end-to-end verdict of the candidate's plan", FA_GATE_PASS,
            "run %" PRId64 "'s fused plan end to end: %s", c->info.id, fa_e2e_verdict_name(ev));
    return s;
}

/* Median of the per-run kernel counts (fused or not) of a side, core's convention (core/stats.c:
 * the mean of the two middle counts for an even number of runs, rounded half up); -1 when the
 * primary run has none. */
static int side_kpi(const side *sd, bool fused)
{
    int64_t v[64];
    size_t n = 0;
    for (int i = 0; i < sd->n && n < 64; i++) {
        int m = fused ? sd->r[i].fkpi_mode : sd->r[i].kpi_mode;
        if (m < 0 && i == 0) return -1; /* the primary has none: not measured */
        if (m >= 0) v[n++] = m;         /* other runs without the data are left out */
    }
    return (int)fa_stats_median_i64(v, n);
}

static fa_status check_kernels(fa_ctx *ctx, fa_gate_report *r, const side *sb, const side *sc)
{
    char w[160];
    const gate_run *b = &sb->r[0], *c = &sc->r[0];
    for (int k = 0; k < 2; k++) {
        const char *id = k ? "kernels.fused" : "kernels.unfused";
        const char *name = k ? "kernels per iteration (fused)" : "kernels per iteration (unfused)";
        int bm = side_kpi(sb, k), cm = side_kpi(sc, k); /* the primary's count with one run per side */
        if (bm < 0 || cm < 0) {
            fa_gate_add_check(r, id, "kernels", name, FA_GATE_SKIPPED, "not measured in one of the runs: %s no %s",
                which_missing(b, c, bm >= 0, cm >= 0, w, sizeof w),
                k ? "fused-model trace (a run of kind 'fused' tagged fused-of:<run>)" : "timed kernel records");
            continue;
        }
        int cmin = k ? c->fkpi_min : c->kpi_min, cmax = k ? c->fkpi_max : c->kpi_max;
        char vary[96] = "";
        if (cmin != cmax) snprintf(vary, sizeof vary, " (the candidate's iterations ran %d..%d kernels)", cmin, cmax);
        if (cm > bm)
            fa_gate_add_check(r, id, "kernels", name, FA_GATE_FAIL, "%d -> %d kernels per iteration (+%d launches)%s", bm, cm, cm - bm,
                vary);
        else if (cm < bm)
            fa_gate_add_check(r, id, "kernels", name, FA_GATE_PASS, "%d -> %d kernels per iteration (%d fewer)%s", bm, cm, bm - cm, vary);
        else
            fa_gate_add_check(r, id, "kernels", name, FA_GATE_PASS, "%d kernels per iteration in both runs%s", bm, vary);
    }
    return FA_OK;
}

static const gate_cluster *find_cluster(const gate_run *g, const char *key)
{
    for (int i = 0; i < g->n_clusters; i++)
        if (!strcmp(g->cl[i].key, key)) return &g->cl[i];
    return NULL;
}

/* An accepted cluster of g holding every member of c, or NULL. */
static const gate_cluster *absorbing_cluster(const gate_run *g, const gate_cluster *c)
{
    for (int i = 0; i < g->n_clusters; i++) {
        const gate_cluster *o = &g->cl[i];
        if (!o->accepted || o->n_members < c->n_members) continue;
        bool all = true;
        for (int m = 0; m < c->n_members && all; m++) {
            bool found = false;
            for (int k = 0; k < o->n_members && !found; k++) found = !strcmp(c->members[m], o->members[k]);
            all = found;
        }
        if (all) return o;
    }
    return NULL;
}

/* 1 when run g accepts cluster `key` (or an accepted cluster of g holds all of bc's members). */
static bool kept_in(const gate_run *g, const gate_cluster *bc)
{
    const gate_cluster *m = find_cluster(g, bc->key);
    return (m && m->accepted) || (!m && absorbing_cluster(g, bc));
}

static fa_status check_fusion(fa_ctx *ctx, fa_gate_report *r, const side *sb, const side *sc)
{
    char w[160];
    const gate_run *b = &sb->r[0], *c = &sc->r[0];
    if (!b->plan_id || !c->plan_id) {
        fa_gate_add_check(r, "fusion.accepted", "fusion", "accepted clusters", FA_GATE_SKIPPED,
            "not measured in one of the runs: %s no fusion plan (run without --no-apply)",
            which_missing(b, c, b->plan_id > 0, c->plan_id > 0, w, sizeof w));
    } else {
        int n_acc = 0;
        for (int i = 0; i < b->n_clusters; i++) {
            const gate_cluster *bc = &b->cl[i];
            if (!bc->accepted) continue;
            n_acc++;
            char id[600], name[600];
            snprintf(id, sizeof id, "fusion.accepted:%s", bc->key);
            snprintf(name, sizeof name, "fusion of cluster %s", bc->display);
            const gate_cluster *cc = find_cluster(c, bc->key);
            if (sb->n > 1 || sc->n > 1) {
                /* several runs per side: acceptance by majority, so one noisy accept/reject
                 * decision of the applier does not decide the build */
                int kb = 0, kc = 0, lost_at = -1;
                for (int k = 0; k < sb->n; k++) kb += kept_in(&sb->r[k], bc);
                for (int k = 0; k < sc->n; k++) {
                    bool kept = kept_in(&sc->r[k], bc);
                    kc += kept;
                    if (!kept && lost_at < 0) lost_at = k;
                }
                const gate_cluster *lc = lost_at >= 0 ? find_cluster(&sc->r[lost_at], bc->key) : NULL;
                char why[512] = "";
                if (lost_at >= 0)
                    snprintf(why, sizeof why, "; in run %" PRId64 " it is %s: %s", sc->r[lost_at].info.id,
                             lc ? lc->status : "not proposed", lc && lc->reason ? lc->reason : "(no reason recorded)");
                if (kb * 2 <= sb->n)
                    fa_gate_add_check(r, id, "fusion", name, FA_GATE_WARN,
                        "accepted in only %d of %d baseline runs: a marginal fusion, not gating (candidate: %d of %d)%s",
                        kb, sb->n, kc, sc->n, why);
                else if (kc == sc->n)
                    fa_gate_add_check(r, id, "fusion", name, FA_GATE_PASS, "accepted in %d of %d baseline and all %d candidate runs", kb,
                        sb->n, sc->n);
                else if (kc * 2 > sc->n)
                    fa_gate_add_check(r, id, "fusion", name, FA_GATE_WARN,
                        "accepted in %d of %d candidate runs (flaky acceptance, not gating)%s", kc, sc->n, why);
                else
                    fa_gate_add_check(r, id, "fusion", name, FA_GATE_FAIL,
                        "fusion lost: accepted in %d of %d baseline runs, %d of %d candidate runs%s", kb, sb->n, kc, sc->n,
                        why);
            } else if (cc && cc->accepted) {
                fa_gate_add_check(r, id, "fusion", name, FA_GATE_PASS, "accepted in both runs");
            } else if (cc) {
                fa_gate_add_check(r, id, "fusion", name, FA_GATE_FAIL, "fusion lost: accepted in the baseline, %s in the candidate: %s",
                    cc->status, cc->reason ? cc->reason : "(no reason recorded)");
            } else {
                const gate_cluster *ab = absorbing_cluster(c, bc);
                if (ab)
                    fa_gate_add_check(r, id, "fusion", name, FA_GATE_PASS, "its members are now fused in the larger cluster %s",
                        ab->display);
                else
                    fa_gate_add_check(r, id, "fusion", name, FA_GATE_FAIL,
                        "fusion lost: accepted in the baseline, not proposed by the candidate's plan (no cluster with "
                        "this label and these members)");
            }
        }
        int n_new = 0;
        for (int i = 0; i < c->n_clusters; i++) {
            const gate_cluster *cc = &c->cl[i];
            const gate_cluster *bc = find_cluster(b, cc->key);
            if (cc->accepted && !(bc && bc->accepted)) n_new++;
        }
        if (!n_acc)
            fa_gate_add_check(r, "fusion.accepted", "fusion", "accepted clusters", FA_GATE_PASS,
                "the baseline accepted no cluster; nothing to lose%s", n_new ? " (the candidate accepts new ones)" : "");
        if (n_new) fa_gate_note(r, "the candidate accepts %d cluster(s) the baseline did not", n_new);
    }
    /* verification */
    if (!c->plan_id) {
        fa_gate_add_check(r, "fusion.verify", "verification", "numerical verification of fused kernels", FA_GATE_SKIPPED,
            "not measured in one of the runs: the candidate run %" PRId64 " has no fusion plan", c->info.id);
    } else {
        fa_buf m;
        fa_buf_init(&m);
        int bad = 0;
        for (int i = 0; i < c->n_clusters; i++) {
            const gate_cluster *cc = &c->cl[i];
            if (strcmp(cc->status, "rejected-verify")) continue;
            fa_buf_printf(&m, "%scluster %s failed verification", bad ? "; " : "", cc->display);
            if (isfinite(cc->max_rel_error)) fa_buf_printf(&m, " (max relative error %.3g)", cc->max_rel_error);
            if (cc->reason) fa_buf_printf(&m, ": %s", cc->reason);
            bad++;
        }
        if (bad)
            fa_gate_add_check(r, "fusion.verify", "verification", "numerical verification of fused kernels", FA_GATE_FAIL, "%s",
                m.data ? m.data : "");
        else
            fa_gate_add_check(r, "fusion.verify", "verification", "numerical verification of fused kernels", FA_GATE_PASS,
                "no cluster of the candidate failed verification");
        fa_buf_free(&m);
    }
    /* registers and spills: a target whose compiler reports them (runtime.h FA_TARGET_CAP_KERNEL_REPORT) */
    const char *tgt = c->info.target ? c->info.target : "?";
    fa_target ct = FA_TARGET_AUTO;
    fa_ctx *pc = fa_ctx_create(); /* a name this build does not know is a target without the report */
    if (!pc || fa_target_parse(pc, tgt, &ct)) ct = FA_TARGET_AUTO;
    fa_ctx_free(pc);
    if (!fa_target_has(ct, FA_TARGET_CAP_KERNEL_REPORT)) {
        fa_gate_add_check(r, "cuda.registers", "registers", "registers and spills of fused kernels", FA_GATE_SKIPPED,
            "not measured in one of the runs: target %s (its compiler reports no registers and spills)", tgt);
    } else if (!b->plan_id || !c->plan_id) {
        fa_gate_add_check(r, "cuda.registers", "registers", "registers and spills of fused kernels", FA_GATE_SKIPPED,
            "not measured in one of the runs: %s no fusion plan",
            which_missing(b, c, b->plan_id > 0, c->plan_id > 0, w, sizeof w));
    } else {
        int compared = 0;
        for (int i = 0; i < b->n_clusters; i++) {
            const gate_cluster *bc = &b->cl[i];
            const gate_cluster *cc = find_cluster(c, bc->key);
            if (!bc->accepted || !cc || !cc->accepted) continue;
            char id[600], name[600];
            if (bc->spill_bytes >= 0 && cc->spill_bytes >= 0) {
                snprintf(id, sizeof id, "cuda.spills:%s", bc->key);
                snprintf(name, sizeof name, "spills of cluster %s", bc->display);
                if (cc->spill_bytes > bc->spill_bytes)
                    fa_gate_add_check(r, id, "registers", name, FA_GATE_FAIL, "spill stores grew from %d to %d bytes", bc->spill_bytes,
                        cc->spill_bytes);
                else
                    fa_gate_add_check(r, id, "registers", name, FA_GATE_PASS, "%d -> %d bytes of spill stores", bc->spill_bytes,
                        cc->spill_bytes);
                compared++;
            }
            if (bc->registers > 0 && cc->registers >= 0) {
                snprintf(id, sizeof id, "cuda.registers:%s", bc->key);
                snprintf(name, sizeof name, "registers of cluster %s", bc->display);
                double grow = (double)cc->registers / bc->registers - 1;
                fa_gate_add_check(r, id, "registers", name, grow > r->opt.register_warn ? FA_GATE_WARN : FA_GATE_PASS,
                    "%d -> %d registers per thread (%+.0f%%; warns above +%.0f%%)", bc->registers, cc->registers,
                    grow * 100, r->opt.register_warn * 100);
                compared++;
            }
        }
        if (!compared)
            fa_gate_add_check(r, "cuda.registers", "registers", "registers and spills of fused kernels", FA_GATE_SKIPPED,
                "not measured in one of the runs: no cluster accepted in both runs has registers/spills recorded");
    }
    return FA_OK;
}

/* Per-component latency from the unfused kernel records: every cluster of the baseline plan
 * is one component (the sum of its members' kernel time per iteration), every op outside
 * them another. A slowed kernel is named by its cluster. */
typedef struct component {
    const char *key, *name;
    const char **ops;
    int n_ops;
} component;

static void component_samples(const gate_run *g, const component *k, double *out, int *n_present)
{
    *n_present = 0;
    for (int i = 0; i < g->n_iters; i++) out[i] = 0;
    for (int m = 0; m < k->n_ops; m++) {
        int o = fa_gate_find_op(g, k->ops[m]);
        if (o < 0) continue;
        (*n_present)++;
        for (int i = 0; i < g->n_iters; i++) out[i] += g->ops[o].v[i];
    }
}

static fa_status check_components(fa_ctx *ctx, fa_gate_report *r, const side *sb, const side *sc)
{
    char w[160];
    const gate_run *b = &sb->r[0], *c = &sc->r[0];
    int max_iters = 1;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < (k ? sc->n : sb->n); i++) {
            const gate_run *g = k ? &sc->r[i] : &sb->r[i];
            if (g->n_iters > max_iters) max_iters = g->n_iters;
        }
    if (!b->n_ops || !c->n_ops) {
        fa_gate_add_check(r, "latency.component", "latency", "per-cluster / per-op latency (unfused kernels)", FA_GATE_SKIPPED,
            "not measured in one of the runs: %s no timed kernel records",
            which_missing(b, c, b->n_ops > 0, c->n_ops > 0, w, sizeof w));
        return FA_OK;
    }
    fa_arena *ar = r->arena;
    component *comp = fa_arena_alloc(ar, sizeof(component) * (size_t)(b->n_ops + b->n_clusters + 1));
    bool *used = fa_arena_alloc(ar, sizeof(bool) * (size_t)(b->n_ops + 1));
    double *bs = fa_arena_alloc(ar, sizeof(double) * (size_t)(max_iters + 1));
    double *cs = fa_arena_alloc(ar, sizeof(double) * (size_t)(max_iters + 1));
    if (!comp || !used || !bs || !cs) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    int nc = 0;
    /* accepted clusters first, then the others; a node belongs to the first cluster naming it */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < b->n_clusters; i++) {
            const gate_cluster *cl = &b->cl[i];
            if (cl->accepted != (pass == 0)) continue;
            component *k = &comp[nc];
            k->ops = fa_arena_alloc(ar, sizeof(char *) * (size_t)(cl->n_members + 1));
            if (!k->ops) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            k->n_ops = 0;
            for (int m = 0; m < cl->n_members; m++) {
                int o = fa_gate_find_op(b, cl->members[m]);
                if (o < 0 || used[o]) continue;
                used[o] = true;
                k->ops[k->n_ops++] = cl->members[m];
            }
            if (!k->n_ops) continue;
            char key[600], name[700];
            snprintf(key, sizeof key, "latency.component:%s", cl->key);
            snprintf(name, sizeof name, "cluster %s [unfused]", cl->display);
            k->key = fa_arena_strdup(ar, key);
            k->name = fa_arena_strdup(ar, name);
            nc++;
        }
    for (int o = 0; o < b->n_ops; o++) {
        if (used[o]) continue;
        component *k = &comp[nc++];
        k->ops = fa_arena_alloc(ar, sizeof(char *));
        if (!k->ops) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        k->ops[0] = b->ops[o].name;
        k->n_ops = 1;
        char key[600], name[600];
        snprintf(key, sizeof key, "latency.op:%s", b->ops[o].name);
        snprintf(name, sizeof name, "op '%s'%s", b->ops[o].name, b->plan_id ? " (in no cluster)" : "");
        k->key = fa_arena_strdup(ar, key);
        k->name = fa_arena_strdup(ar, name);
    }
    /* reference for --min-share: the baseline iteration median, else the sum of component medians */
    double ref = 0;
    double *tmp = fa_arena_alloc(ar, sizeof(double) * (size_t)(b->n_iter_ns + b->n_iters + 1));
    if (!tmp) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    double *shares = fa_arena_alloc(ar, sizeof(double) * (size_t)(nc + 1));
    if (!shares) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    double sum_med = 0;
    for (int i = 0; i < nc; i++) {
        int np;
        component_samples(b, &comp[i], bs, &np);
        memcpy(tmp, bs, sizeof(double) * (size_t)b->n_iters);
        shares[i] = fa_stats_median(tmp, b->n_iters);
        sum_med += shares[i];
    }
    if (b->n_iter_ns) {
        memcpy(tmp, b->iter_ns, sizeof(double) * (size_t)b->n_iter_ns);
        ref = fa_stats_median(tmp, b->n_iter_ns);
    }
    if (!(ref > 0)) ref = sum_med;
    int k_gating = 0;
    for (int i = 0; i < nc; i++) {
        shares[i] = ref > 0 ? shares[i] / ref : 0;
        k_gating += shares[i] >= r->opt.min_share;
    }
    /* Bonferroni over the gating components keeps the family's false-alarm rate at alpha */
    double conf = 1.0 - (1.0 - r->opt.confidence) / (k_gating > 1 ? k_gating : 1);
    for (int i = 0; i < nc; i++) {
        int npc, np;
        component_samples(c, &comp[i], cs, &npc);
        if (!npc) {
            fa_gate_add_check(r, comp[i].key, "latency", comp[i].name, FA_GATE_SKIPPED,
                "not measured in one of the runs: the candidate run %" PRId64 " ran no kernel of it", c->info.id);
            continue;
        }
        pool pb = {0}, pc = {0};
        for (int k = 0; k < sb->n; k++) {
            component_samples(&sb->r[k], &comp[i], bs, &np);
            pool_add(&pb, bs, sb->r[k].n_iters);
        }
        for (int k = 0; k < sc->n; k++) {
            component_samples(&sc->r[k], &comp[i], cs, &np);
            pool_add(&pc, cs, sc->r[k].n_iters);
        }
        char extra[200] = "";
        if (npc < comp[i].n_ops)
            snprintf(extra, sizeof extra, " (the candidate ran kernels of %d of its %d ops)", npc, comp[i].n_ops);
        fa_status s = latency_check(ctx, r, comp[i].key, comp[i].name, &pb, &pc, conf, ref, extra[0] ? extra : NULL);
        pool_free(&pb);
        pool_free(&pc);
        if (s) return s;
    }
    /* fused clusters' own benchmarks, matched by label and members */
    int n_pairs = 0;
    for (int i = 0; i < b->n_clusters; i++) {
        const gate_cluster *cc = find_cluster(c, b->cl[i].key);
        n_pairs += b->cl[i].n_fused > 0 && cc && cc->n_fused > 0;
    }
    double ref_f = 0;
    if (b->n_bench_fused) {
        double *t3 = fa_arena_alloc(ar, sizeof(double) * (size_t)b->n_bench_fused);
        if (!t3) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        memcpy(t3, b->bench_fused, sizeof(double) * (size_t)b->n_bench_fused);
        ref_f = fa_stats_median(t3, b->n_bench_fused);
    }
    if (!(ref_f > 0)) ref_f = ref;
    double conf_f = 1.0 - (1.0 - r->opt.confidence) / (n_pairs > 1 ? n_pairs : 1);
    for (int i = 0; i < b->n_clusters; i++) {
        const gate_cluster *bc = &b->cl[i];
        const gate_cluster *cc = find_cluster(c, bc->key);
        if (!bc->n_fused || !cc || !cc->n_fused) continue;
        char id[600], name[700];
        snprintf(id, sizeof id, "latency.cluster-fused:%s", bc->key);
        snprintf(name, sizeof name, "cluster %s [fused]", bc->display);
        pool pb = {0}, pc = {0};
        for (int k = 0; k < 2; k++) {
            const side *sd = k ? sc : sb;
            for (int j = 0; j < sd->n; j++) {
                const gate_cluster *m = find_cluster(&sd->r[j], bc->key);
                if (m && m->n_fused) pool_add(k ? &pc : &pb, m->fused, m->n_fused);
            }
        }
        fa_status s = latency_check(ctx, r, id, name, &pb, &pc, conf_f, ref_f, NULL);
        pool_free(&pb);
        pool_free(&pc);
        if (s) return s;
    }
    if (b->plan_id && c->plan_id && !n_pairs)
        fa_gate_add_check(r, "latency.cluster-fused", "latency", "per-cluster fused benchmarks", FA_GATE_SKIPPED,
            "not measured in one of the runs: no cluster has cluster-fused benchmark samples in both runs");
    return FA_OK;
}

fa_status fa_gate_check_all(fa_ctx *ctx, fa_gate_report *r, const side *sb, const side *sc)
{
    fa_status s = check_e2e(ctx, r, sb, sc);
    if (!s) s = check_kernels(ctx, r, sb, sc);
    if (!s) s = check_fusion(ctx, r, sb, sc);
    if (!s) s = check_components(ctx, r, sb, sc);
    if (!s && r->oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory recording the gate's checks");
    return s;
}
