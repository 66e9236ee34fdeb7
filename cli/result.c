/* cli/result — what `run` and `apply` print when the plan is applied: the answer first (the
 * plan's patterns ranked by measured saving, then the end-to-end verdict) in at most 40 lines,
 * every cluster with --verbose, summary.json with --json. Every figure comes from the run
 * database (store/figures.c, the stored plan), as the report's. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "applier/applier.h"
#include "plan/plan.h"
#include "reports/reports.h"
#include "store/store.h"

/* Opportunity rows printed by default (kept patterns, then the best patterns not kept). */
#define RESULT_KEPT_ROWS 8
#define RESULT_NOT_KEPT_ROWS 3

/* "12.3 us" / "4.567 ms" for a time in ns. */
static void fmt_time(char *buf, size_t cap, double ns)
{
    if (!(ns == ns)) snprintf(buf, cap, "-");
    else if (fabs(ns) >= 1e6) snprintf(buf, cap, "%.3f ms", ns / 1e6);
    else snprintf(buf, cap, "%.1f us", ns / 1e3);
}

/* A pattern's name: its label, or its kind's name for clusters without one (as the report's). */
static const char *group_name(const fa_plan_group *g)
{
    return g->label[0] ? g->label : fa_cluster_kind_name(g->kind);
}

/* name fitted to a column of width w: whole, or its first w - 3 bytes and "..." so that a cut
 * label says it was cut (--verbose and report.html show it whole). buf holds at least w + 1. */
static const char *fit_column(const char *name, int w, char *buf, size_t cap)
{
    if ((int)strlen(name) <= w || w < 4) return name;
    snprintf(buf, cap, "%.*s...", w - 3, name);
    return buf;
}

/* The opportunities, ranked by pattern: kept ones with their saving and what was verified, then
 * the best of those not kept with their decision. */
static void print_groups(const fa_plan *p, const fa_cluster_verdict *v, const fa_run_figures *f, bool all)
{
    fa_plan_group *gs = malloc(sizeof *gs * (size_t)(p->n_clusters + 1));
    if (!gs) return;
    int ng = fa_plan_groups(p, v, gs);
    double base = fa_run_figures_latency(f, false, NULL);
    int wl = 7;
    for (int i = 0; i < ng; i++) {
        int l = (int)strlen(group_name(&gs[i]));
        if (l > wl) wl = l;
    }
    if (wl > 40) wl = 40;
    int kept = 0, shown = 0, not_kept = 0, hidden_clusters = 0;
    for (int i = 0; i < ng; i++) kept += gs[i].n_accepted > 0;
    if (kept) fa_cli_printf("Top opportunities, by pattern (kept: verified against the unfused ops and measured faster):\n");
    else fa_cli_printf("No cluster was kept (verified and measured faster). The plan's patterns, best predicted first:\n");
    fa_cli_printf("  %-*s  %-17s %6s %12s %6s  %s\n", wl, "pattern", "kind", "kept", "saving/iter", "share",
                  kept ? "verified" : "decision");
    for (int i = 0; i < ng; i++) {
        const fa_plan_group *g = &gs[i];
        char t[32], kept_s[24], nm[48];
        const char *name = fit_column(group_name(g), wl, nm, sizeof nm);
        snprintf(kept_s, sizeof kept_s, "%d/%d", g->n_accepted, g->n_clusters);
        if (g->n_accepted > g->n_inside) {
            if (!all && shown >= RESULT_KEPT_ROWS) {
                hidden_clusters += g->n_clusters;
                continue;
            }
            fmt_time(t, sizeof t, g->measured_saving_ns);
            char share[16] = "-";
            if (base > 0) snprintf(share, sizeof share, "%.1f%%", 100.0 * g->measured_saving_ns / base);
            char mix[96];
            fa_cli_printf("  %-*.*s  %-17s %6s %12s %6s  max rel. error %.2g%s%s%s\n", wl, wl, name,
                          fa_cluster_kind_name(g->kind), kept_s, t, share, g->max_rel_error,
                          g->n_inside ? " (BN folds inside)" : "", *fa_plan_group_mix(g, mix, sizeof mix) ? " " : "", mix);
            shown++;
        } else if (g->n_accepted > 0) {
            fa_cli_printf("  %-*.*s  %-17s %6s %12s %6s  folded into the kept epilogues above (their saving holds it)\n", wl, wl,
                          name, fa_cluster_kind_name(g->kind), kept_s, "-", "-");
            shown++;
        } else if (all || not_kept < RESULT_NOT_KEPT_ROWS) {
            char why[96], pred[320], mix[96], spread[256];
            fa_plan_group_why(g, why, sizeof why);
            fmt_time(t, sizeof t, fabs(g->best_predicted_ns));
            snprintf(pred, sizeof pred, g->best_predicted_ns < 0 ? "predicted a loss of %s%s" : "predicted %s%s", t,
                     fa_cluster_spread_phrase(g->best, spread, sizeof spread));
            fa_cli_printf("  %-*.*s  %-17s %6s %12s %6s  not kept: %s (%s)%s%s\n", wl, wl, name,
                          fa_cluster_kind_name(g->kind), kept_s, "-", "-", why, pred,
                          *fa_plan_group_mix(g, mix, sizeof mix) ? " " : "", mix);
            not_kept++;
        } else hidden_clusters += g->n_clusters;
    }
    if (!all && hidden_clusters)
        fa_cli_printf("  ... %d more cluster%s in patterns not shown (--verbose, or report.html)\n", hidden_clusters,
                      hidden_clusters == 1 ? "" : "s");
    free(gs);
}

/* The end-to-end verdict in one sentence, with the figures it rests on. */
static void print_verdict(const fa_run_figures *f, double e2e_tolerance, const char *rounding_op)
{
    const fa_sample_stats *b = &f->bench_baseline, *fu = &f->bench_fused;
    char tt[32] = "not traced";
    if (f->traced_iter_ns == f->traced_iter_ns) snprintf(tt, sizeof tt, "%.3f ms", f->traced_iter_ns / 1e6);
    const char *word = f->verdict == FA_E2E_WIN        ? "a WIN"
                       : f->verdict == FA_E2E_LOSS     ? "a LOSS: deploy the baseline"
                       : f->verdict == FA_E2E_MISMATCH ? "a MISMATCH: not deployable, no speedup claimed"
                       : f->reorders_fused > 0          ? "no cluster kept, blocked layouts only"
                                                       : "no cluster kept: the fused model is the baseline";
    bool noisy = fa_run_figures_noisy(f) && (f->verdict == FA_E2E_WIN || f->verdict == FA_E2E_LOSS);
    fa_cli_printf("\nEnd to end: %s%s. ", word, noisy ? ", on noisy timings (not reliable: see the warning below)" : "");
    if (b->n && fu->n)
        fa_cli_printf("baseline %.3f ms (IQR %.3f), fused %.3f ms (IQR %.3f): speedup %.3fx (benchmark medians of %d interleaved "
                      "rounds; the traced iteration median was %s)\n", b->median_ns / 1e6, (b->p75_ns - b->p25_ns) / 1e6,
                      fu->median_ns / 1e6, (fu->p75_ns - fu->p25_ns) / 1e6, fu->median_ns > 0 ? b->median_ns / fu->median_ns : NAN,
                      b->n, tt);
    else fa_cli_printf("not measured end to end\n");
    if (f->verdict == FA_E2E_MISMATCH)
        fa_cli_printf("the fused model's outputs differ from the unfused model's: max relative error %.3g > %.3g\n",
                      f->e2e_max_rel_error, e2e_tolerance);
    else if (f->e2e_max_rel_error == f->e2e_max_rel_error && rounding_op && f->e2e_max_rel_error > FA_APPLY_E2E_TOLERANCE)
        fa_cli_printf("the fused model's outputs match the unfused model's within a max relative error of %.2g (limit %.2g: the "
                      "model rounds to steps (%s), and a value on a rounding tie moves a whole step under any other rounding "
                      "of the sum before it, another engine's too)\n",
                      f->e2e_max_rel_error, e2e_tolerance, rounding_op);
    else if (f->e2e_max_rel_error == f->e2e_max_rel_error)
        fa_cli_printf("the fused model's outputs match the unfused model's within a max relative error of %.2g\n",
                      f->e2e_max_rel_error);
}

/* Every cluster (--verbose): the plan's table with each verdict's reason. */
static void print_clusters(const fa_plan *p, const fa_cluster_verdict *v)
{
    int wl = 28;
    for (int i = 0; i < p->n_clusters; i++)
        if (p->clusters[i].label && (int)strlen(p->clusters[i].label) > wl) wl = (int)strlen(p->clusters[i].label);
    fa_cli_printf("\nEvery cluster (savings in us per iteration: predicted; measured alone, the cluster's sub-graph and its "
                  "fused kernel benchmarked by themselves; in the model, its nodes in the baseline's trace less its fused "
                  "node in the fused model's trace, +- the spread of one iteration):\n"
                  "%-4s %-18s %-*s %10s %10s %16s %9s  %s\n", "id", "kind", wl, "label", "predicted", "alone", "in the model",
                  "error", "decision");
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *cl = &p->clusters[i];
        const fa_cluster_verdict *cv = &v[i];
        fa_cli_printf("%-4d %-18s %-*s %10.1f ", cl->id, fa_cluster_kind_name(cl->kind), wl, cl->label ? cl->label : "",
                      cl->est_saving_ns / 1e3);
        char inm[48] = "-";
        if (cv->inmodel_saving_ns == cv->inmodel_saving_ns)
            snprintf(inm, sizeof inm, "%.1f+-%.1f", cv->inmodel_saving_ns / 1e3, cv->inmodel_spread_ns / 1e3);
        if (cv->measured_saving_ns == cv->measured_saving_ns && cv->status != FA_CLUSTER_REFUSED &&
            cv->status != FA_CLUSTER_PROPOSED && cv->status != FA_CLUSTER_NOT_TRIED)
            fa_cli_printf("%10.1f %16s %9.2g", cv->measured_saving_ns / 1e3, inm, cv->max_rel_error);
        else
            fa_cli_printf("%10s %16s %9s", "-", inm, "-");
        char spread[256];
        fa_cli_printf("  %s: %s%s%s\n", fa_cluster_status_name(cv->status), cv->reason ? cv->reason : "",
                      *fa_cluster_spread_phrase(cl, spread, sizeof spread) ? "; predicted" : "", spread);
    }
}

fa_status fa_cli_print_result(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_cli_result *res)
{
    if (res->json) { /* summary.json as the reports write it */
        fa_buf b;
        fa_buf_init(&b);
        fa_status s = fa_reports_summary_json(ctx, st, run_id, &b);
        if (!s && b.data) fwrite(b.data, 1, b.len, stdout); /* JSON: every string already escaped */
        fa_buf_free(&b);
        return s;
    }
    fa_run_figures f;
    fa_status s = fa_store_get_run_figures(ctx, st, run_id, &f);
    fa_plan *p = NULL;
    fa_cluster_verdict *v = NULL;
    if (!s) s = fa_store_get_latest_plan(ctx, st, run_id, &p, &v);
    fa_arena *ar = fa_arena_create(1 << 12);
    bool have = false;
    const char *analysis = NULL;
    if (!s && !ar) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    if (!s) s = fa_store_get_analysis_text(ctx, st, run_id, ar, &have, &analysis);
    if (s) {
        fa_plan_free(p);
        fa_arena_free(ar);
        return s;
    }
    fa_cli_printf("run %" PRId64 ": %s on %s (%s, %d threads)\n\n", run_id, res->model, res->target, res->device, res->threads);
    if (p && p->n_clusters) print_groups(p, v, &f, res->verbose);
    else fa_cli_printf("The plan has no cluster: nothing in this model could be fused (the why-not list is in plan.json).\n");
    print_verdict(&f, res->e2e_tolerance, res->e2e_rounding_op);
    if (fa_run_figures_noisy(&f))
        fa_cli_printf("warning: the timings are noisy (an IQR over 25%% of its median, or the traced baseline run more than 25%% "
                      "away from the benchmark): speedups and accept/reject decisions on this machine are not reliable; run on "
                      "a quiet machine for figures you keep\n");
    /* the roofline checked on its own terms: a measured op above the FP32 peak */
    fa_reports_peak_check pc;
    fa_ctx *pctx = fa_ctx_create();
    if (pctx && !fa_reports_check_peak(pctx, st, run_id, &pc) && pc.n_above) {
        double age_h = pc.peak_at_ns > 0 && pc.run_at_ns > pc.peak_at_ns ? (pc.run_at_ns - pc.peak_at_ns) / 3.6e12 : NAN;
        char age[48] = "";
        if (age_h == age_h) snprintf(age, sizeof age, ", measured %.1f h before this run", age_h);
        fa_cli_printf("warning: %d op%s ran above the stored FP32 peak (%s at %.0f%% of it%s): the peak was measured at a busy "
                      "moment; re-measure on a quiet machine: fuse-advise devices --measure\n", pc.n_above,
                      pc.n_above == 1 ? "" : "s", pc.node, 100 * pc.max_ratio, age);
    }
    fa_ctx_free(pctx);
    if (res->backed_off)
        fa_cli_printf("end-to-end back-off: %d accepted cluster%s dropped (smallest measured savings first) because the whole "
                      "fused model was not measurably faster\n", res->backed_off, res->backed_off == 1 ? "" : "s");
    char kf[128];
    fa_run_figures_fused_kernels_text(&f, kf, sizeof kf);
    char pf[48] = "not measured"; /* no fused run stored (a MISMATCH): no figure, not 0 */
    if (f.fused_run_id >= 0) snprintf(pf, sizeof pf, "%.1f MiB", f.peak_bytes_fused / 1048576.0);
    fa_cli_printf("kernels per iteration %d -> %s; peak activations %.1f MiB -> %s\n", f.kernels_baseline, kf,
                  f.peak_bytes_baseline / 1048576.0, pf);
    char lay[512];
    if (p) fa_plan_layout_text(&p->layout, lay, sizeof lay);
    if (p && lay[0]) fa_cli_printf("%s\n", lay);
    if (f.n_accepted == 0 && f.reorders_fused == 0)
    {
        char dt[32];
        fa_duration_text(dt, sizeof dt, fabs(f.measured_saving_ns));
        fa_cli_printf("clusters: 0 accepted, %d rejected after measurement, %d refused: the fused model is the baseline%s, so "
                      "the %s between the two measurements is noise, not a saving\n", f.n_rejected, f.n_refused,
                      res->layouts_dropped ? " (its blocked layouts were dropped too: not faster)" : "", dt);
    }
    else if (f.n_accepted == 0)
        fa_cli_printf("clusters: 0 accepted, %d rejected after measurement, %d refused; the fused model differs from the baseline "
                      "by its blocked layouts only (%d reorder kernels per iteration): measured saving %.3f ms (%s)\n",
                      f.n_rejected, f.n_refused, f.reorders_fused, f.measured_saving_ns / 1e6,
                      f.verdict == FA_E2E_WIN ? "a win" : "not a win");
    else
        fa_cli_printf("clusters: %d accepted, %d rejected after measurement, %d refused; predicted saving %.3f ms, measured "
                      "%.3f ms (benchmark medians)\n", f.n_accepted, f.n_rejected, f.n_refused, f.predicted_saving_ns / 1e6,
                      f.measured_saving_ns / 1e6);
    if (analysis) { /* the stored sentences, one per line (each line escaped for the terminal) */
        fa_cli_printf("\n");
        for (const char *l = analysis; *l;) {
            size_t n = strcspn(l, "\n");
            fa_cli_printf("%.*s\n", (int)n, l);
            l += n + (l[n] == '\n');
        }
    }
    if (res->verbose && p) print_clusters(p, v);
    fa_cli_printf("\noutputs in %s/: report.html, graph.svg, trace.json, plan.json, summary.json, kernels.csv%s%s\n", res->out_dir,
                  res->wrote_kernels ? ", kernels/" : "", res->folded ? ", model.folded.onnx" : "");
    /* where the run is (issue 37: a model run never said); a connection string as the store shows it */
    bool had_password = false;
    char *where = fa_store_redact_arg(fa_store_path(st), &had_password); /* a password never printed */
    fa_cli_printf("stored in %s as run %" PRId64 " (`fuse-advise show %" PRId64 "`)\n", where ? where : "the run database",
                  run_id, run_id);
    free(where);
    if (!res->verbose)
        fa_cli_printf("every cluster and why: --verbose, or report.html; for machines: --json (summary.json)\n");
    fa_plan_free(p);
    fa_arena_free(ar);
    return FA_OK;
}
