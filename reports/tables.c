/* reports/tables — summary.json (the applier's keys, docs/reports.md) and kernels.csv (RFC 4180
 * per-op table) regenerated from the database. */
#include "reports-impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void fa_rep_fmt_age(char *buf, size_t cap, int64_t at_ns, int64_t run_ns)
{
    if (cap) buf[0] = '\0';
    if (at_ns <= 0) return;
    time_t t = (time_t)(at_ns / 1000000000);
    struct tm tm;
    char when[32] = "";
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
    double age = run_ns > 0 ? (double)(run_ns - at_ns) / 1e9 : NAN;
    if (!(age >= 0)) snprintf(buf, cap, "%s", when);
    else if (age < 120) snprintf(buf, cap, "%s, %.0f s before this run", when, age);
    else if (age < 7200) snprintf(buf, cap, "%s, %.0f min before this run", when, age / 60);
    else if (age < 172800) snprintf(buf, cap, "%s, %.1f h before this run", when, age / 3600);
    else snprintf(buf, cap, "%s, %.1f days before this run", when, age / 86400);
}

static void stats_json(fa_buf *b, const char *key, const fa_sample_stats *s)
{
    if (s->n <= 0) { fa_buf_printf(b, "\"%s\":null", key); return; }
    fa_buf_printf(b, "\"%s\":{\"median_ns\":", key);
    fa_json_num(b, s->median_ns, FA_JSON_NS_DIGITS);
    fa_buf_puts(b, ",\"p25_ns\":");
    fa_json_num(b, s->p25_ns, FA_JSON_NS_DIGITS);
    fa_buf_puts(b, ",\"p75_ns\":");
    fa_json_num(b, s->p75_ns, FA_JSON_NS_DIGITS);
    fa_buf_printf(b, ",\"samples\":%d}", s->n);
}

/* One side's iteration time as summary.json writes it: the figure (fa_run_figures_latency) with
 * its spread when it is the benchmark's, or the traced median with the traced iterations' spread
 * (the same kernel records); *src names which ("benchmarks", "trace"; NULL none). */
static fa_sample_stats side_stats(const fa_rep *r, bool fused, const char **src)
{
    const char *what = NULL;
    double v = fa_run_figures_latency(&r->fig, fused, &what);
    fa_sample_stats s = {0};
    *src = NULL;
    if (!what) return s;
    if (!strcmp(what, "benchmark median")) {
        *src = "benchmarks";
        return fused ? r->fig.bench_fused : r->fig.bench_baseline;
    }
    const fa_rep_trace *t = fused ? &r->fused : &r->base;
    if (t->n_iters > 0) fa_sample_stats_of(t->spans, t->n_iters, &s);
    s.median_ns = v; /* the stored traced median (runs.iter_median_ns), as every surface shows it */
    if (!s.n) s.n = fused ? r->fig.fused_traced_iters : r->fig.traced_iters;
    *src = fused ? "fused run trace" : "trace";
    return s;
}

static void num_or_null(fa_buf *b, double v)
{
    fa_json_num(b, v, 6);
}

void fa_rep_summary_json(const fa_rep *r, fa_buf *b)
{
    const fa_run_figures *f = &r->fig;
    const char *bsrc, *fsrc;
    fa_sample_stats bs = side_stats(r, false, &bsrc), fs = side_stats(r, true, &fsrc);
    fa_buf_puts(b, "{\"schema\":\"fuse-advise.summary/1\",\"version\":\"" FA_VERSION_STRING "\",\"model\":");
    fa_json_str(b, r->run.model_path);
    fa_buf_printf(b, ",\"run_id\":%" PRId64 ",\"status\":", r->run_id);
    fa_json_str(b, r->run.status);
    fa_buf_puts(b, ",\"device\":");
    fa_json_str(b, r->run.device_name);
    fa_buf_printf(b, ",\"threads\":%d,\"ceilings\":", r->run.threads);
    if (r->have_ceil) {
        fa_buf_puts(b, "{\"mem_bw_gbs\":");
        fa_json_num(b, r->ceil.mem_bw_gbs, 6);
        fa_buf_puts(b, ",\"peak_gflops\":");
        fa_json_num(b, r->ceil.peak_gflops, 6);
        fa_buf_puts(b, ",\"dispatch_ns\":");
        fa_json_num(b, r->ceil.launch_ns > 0 ? r->ceil.launch_ns : NAN, FA_JSON_NS_DIGITS);
        fa_buf_puts(b, ",\"device_key\":");
        fa_json_str(b, r->ceil_key);
        fa_buf_puts(b, ",\"source\":{\"mem_bw_gbs\":");
        fa_json_str(b, r->ceil.mem_bw_source);
        fa_buf_puts(b, ",\"peak_gflops\":");
        fa_json_str(b, r->ceil.peak_source);
        fa_buf_puts(b, ",\"dispatch_ns\":");
        fa_json_str(b, r->ceil.launch_source);
        fa_buf_puts(b, "},\"peak_measured_at_ns\":");
        if (r->ceil_peak_at_ns > 0) fa_buf_printf(b, "%" PRId64, r->ceil_peak_at_ns);
        else fa_buf_puts(b, "null");
        fa_buf_puts(b, ",\"load_at_measurement\":"); /* the 1-minute load average then */
        if (r->ceil_load >= 0) fa_json_num(b, r->ceil_load, 3);
        else fa_buf_puts(b, "null");
        fa_buf_puts(b, ",\"above_peak\":");
        if (r->n_above_peak) {
            fa_buf_printf(b, "{\"ops\":%d,\"max_ratio\":", r->n_above_peak);
            fa_json_num(b, r->max_above_peak, 6);
            fa_buf_puts(b, ",\"node\":");
            fa_json_str(b, r->above_peak_node ? r->above_peak_node : "");
            fa_buf_puts(b, "}");
        } else fa_buf_puts(b, "null");
        fa_buf_puts(b, "}");
    } else {
        fa_buf_puts(b, "{\"mem_bw_gbs\":null,\"peak_gflops\":null,\"dispatch_ns\":null,\"device_key\":null,\"source\":null,"
                       "\"peak_measured_at_ns\":null,\"above_peak\":null}");
    }
    fa_buf_puts(b, ",");
    stats_json(b, "baseline", &bs);
    fa_buf_puts(b, ",");
    stats_json(b, "fused", &fs);
    fa_buf_puts(b, ",\"baseline_source\":");
    fa_json_str(b, bsrc);
    fa_buf_puts(b, ",\"fused_source\":");
    fa_json_str(b, fsrc);
    fa_buf_puts(b, ",\"traced_iteration_ns\":{\"baseline\":");
    num_or_null(b, f->traced_iter_ns);
    fa_buf_puts(b, ",\"fused\":");
    num_or_null(b, f->fused_traced_iter_ns);
    fa_buf_puts(b, "},\"speedup\":");
    fa_json_num(b, bs.n && fs.n && fs.median_ns > 0 ? bs.median_ns / fs.median_ns : NAN, 6);
    fa_buf_puts(b, ",\"peak_activation_bytes\":{\"baseline\":");
    if (r->run.peak_activation_bytes) fa_buf_printf(b, "%" PRIu64, r->run.peak_activation_bytes);
    else fa_buf_puts(b, "null");
    fa_buf_puts(b, ",\"fused\":");
    if (r->have_fused_run && r->fused_run.peak_activation_bytes) fa_buf_printf(b, "%" PRIu64, r->fused_run.peak_activation_bytes);
    else fa_buf_puts(b, "null");
    fa_buf_puts(b, "},\"kernels_per_iteration\":{\"baseline\":");
    if (f->kernels_baseline >= 0) fa_buf_printf(b, "%d", f->kernels_baseline);
    else fa_buf_puts(b, "null");
    fa_buf_puts(b, ",\"fused\":");
    if (f->kernels_fused >= 0) fa_buf_printf(b, "%d", f->kernels_fused);
    else fa_buf_puts(b, "null");
    fa_buf_printf(b, ",\"fused_reorders\":%d,\"fused_winograd\":%d}", f->reorders_fused, f->winograd_fused);
    fa_buf_puts(b, ",\"clusters\":");
    if (r->plan_id > 0)
        fa_buf_printf(b, "{\"accepted\":%d,\"rejected\":%d,\"refused_by_advisor\":%d,\"proposed\":%d}", f->n_accepted,
                      f->n_rejected, f->n_refused, f->n_other);
    else fa_buf_puts(b, "null");
    /* the answer: the plan's patterns, kept ones first (plan/plan.h fa_plan_groups) */
    fa_buf_puts(b, ",\"opportunities\":");
    if (r->plan) {
        fa_plan_group *gs = malloc(sizeof *gs * (size_t)(r->plan->n_clusters + 1));
        int ng = gs ? fa_plan_groups(r->plan, r->verdicts, gs) : 0;
        if (!gs) b->oom = true;
        double base = fa_run_figures_latency(f, false, NULL);
        fa_buf_puts(b, "[");
        for (int i = 0; i < ng; i++) {
            const fa_plan_group *g = &gs[i];
            fa_buf_printf(b, "%s{\"kind\":\"%s\",\"label\":", i ? "," : "", fa_cluster_kind_name(g->kind));
            fa_json_str(b, g->label);
            fa_buf_printf(b, ",\"clusters\":%d,\"accepted\":%d,\"inside_epilogues\":%d,\"measured_saving_ns\":", g->n_clusters,
                          g->n_accepted, g->n_inside);
            fa_json_num(b, g->n_accepted > g->n_inside ? g->measured_saving_ns : NAN, FA_JSON_NS_DIGITS);
            fa_buf_puts(b, ",\"share\":");
            fa_json_num(b, g->n_accepted > g->n_inside && base > 0 ? g->measured_saving_ns / base : NAN, 6);
            fa_buf_puts(b, ",\"predicted_saving_ns\":");
            fa_json_num(b, g->predicted_saving_ns, FA_JSON_NS_DIGITS);
            fa_buf_puts(b, ",\"best_predicted_ns\":");
            fa_json_num(b, g->best_predicted_ns, FA_JSON_NS_DIGITS);
            fa_buf_puts(b, ",\"max_rel_error\":");
            fa_json_num(b, g->max_rel_error >= 0 ? g->max_rel_error : NAN, 6);
            fa_buf_printf(b, ",\"decision\":\"%s\"}", fa_cluster_status_name(g->decision));
        }
        fa_buf_puts(b, "]");
        free(gs);
    } else fa_buf_puts(b, "null");
    fa_buf_puts(b, ",\"predicted_saving_ns\":");
    fa_json_num(b, f->predicted_saving_ns, FA_JSON_NS_DIGITS);
    fa_buf_puts(b, ",\"measured_saving_ns\":");
    fa_json_num(b, f->measured_saving_ns, FA_JSON_NS_DIGITS);
    /* nothing accepted and no layout changed: both sides ran the same model, the difference is noise */
    fa_buf_puts(b, ",\"measured_saving_is_noise\":");
    if (f->measured_saving_ns == f->measured_saving_ns)
        fa_buf_puts(b, f->n_accepted == 0 && f->reorders_fused == 0 ? "true" : "false");
    else fa_buf_puts(b, "null");
    fa_buf_puts(b, ",\"e2e_max_rel_error\":");
    fa_json_num(b, r->e2e_max_rel_error, 6);
    fa_buf_puts(b, ",\"e2e_verdict\":");
    fa_json_str(b, fa_e2e_verdict_name(r->e2e_verdict));
    fa_buf_puts(b, ",\"timings_noisy\":"); /* fa_run_figures_noisy: the verdict is not reliable */
    if (f->bench_baseline.n > 0) fa_buf_puts(b, fa_run_figures_noisy(f) ? "true" : "false");
    else fa_buf_puts(b, "null");
    fa_buf_puts(b, ",\"plan_hash\":");
    fa_json_str(b, r->plan ? r->plan->hash : NULL);
    fa_buf_printf(b, ",\"fused_run_id\":");
    if (r->have_fused_run) fa_buf_printf(b, "%" PRId64, r->fused_run_id);
    else fa_buf_puts(b, "null");
    fa_buf_puts(b, ",\"analysis\":");
    fa_buf_puts(b, r->have_analysis ? "true" : "false");
    fa_buf_puts(b, "}\n");
}

static void csv(fa_buf *b, const char *s)
{
    fa_escape_csv(b, s ? s : "", s ? strlen(s) : 0);
}

void fa_rep_kernels_csv(const fa_rep *r, fa_buf *b)
{
    fa_buf_puts(b, "node,op,median_us,share,flops,bytes,intensity_flop_per_byte,achieved_gbs,achieved_gflops,bound\r\n");
    for (size_t i = 0; i < r->n_ops; i++) {
        const fa_op_row *o = &r->ops[i];
        const fa_rep_node *n = o->node >= 0 && o->node < r->n_nodes ? &r->nodes[o->node] : NULL;
        csv(b, o->node_name);
        fa_buf_puts(b, ",");
        csv(b, o->op_type);
        fa_buf_printf(b, ",%.3f,%.6f,", o->median_ns / 1e3, o->share);
        if (n && n->name) {
            double dur = o->median_ns > 0 ? (double)o->median_ns : NAN;
            fa_buf_printf(b, "%" PRIu64 ",%" PRIu64 ",", n->flops, n->bytes);
            if (n->bytes) fa_buf_printf(b, "%.4f", (double)n->flops / (double)n->bytes);
            fa_buf_puts(b, ",");
            if (dur == dur) fa_buf_printf(b, "%.3f,%.3f", n->bytes / dur, n->flops / dur);
            else fa_buf_puts(b, ",");
            fa_buf_puts(b, ",");
            csv(b, n->bound ? n->bound : "not measured");
        } else fa_buf_puts(b, ",,,,,not measured");
        fa_buf_puts(b, "\r\n");
    }
}
