/* reports/trace_report — the report of an imported GPU trace, from the advice stored with the run:
 * summary cards it can fill, the ranked fusion opportunities, busy and idle per stream, kernel time
 * by class, launch overhead, the largest idle gaps with their cpu op, a roofline of estimated bytes
 * and FLOPs under the device's theoretical roofs, the step's timeline as measured and with the top
 * fusions applied, and the kernels (short names, the full ones on hover). */
#include "reports-impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void h(fa_buf *b, const char *s)
{
    if (s) fa_escape_html(b, s, strlen(s));
}

/* colours by kernel class (Tableau 10) */
static const char *class_color(fa_kclass c)
{
    static const char *const col[] = {"#59a14f", "#edc948", "#4e79a7", "#76b7b2", "#b07aa1", "#a0a7b0",
                                      "#e15759", "#f28e2b", "#9c755f"};
    _Static_assert(sizeof col / sizeof col[0] == FA_KCLASS_COUNT, "a colour per kernel class");
    return (unsigned)c < FA_KCLASS_COUNT ? col[c] : "#a0a7b0";
}

static void class_legend(fa_buf *b)
{
    fa_buf_puts(b, "<div class=\"legend\">");
    for (int c = 0; c < FA_KCLASS_COUNT; c++) {
        fa_buf_puts(b, "<span>");
        fa_rep_swatch(b, class_color((fa_kclass)c));
        h(b, fa_kclass_name((fa_kclass)c));
        fa_buf_puts(b, "</span>");
    }
    fa_buf_puts(b, "</div>");
}

static void card(fa_buf *b, const char *k, const char *v, const char *detail)
{
    fa_buf_puts(b, "<div class=\"card\"><div class=\"k\">");
    h(b, k);
    fa_buf_puts(b, "</div><div class=\"v\">");
    h(b, v);
    fa_buf_puts(b, "</div>");
    if (detail) {
        fa_buf_puts(b, "<div class=\"d\">");
        h(b, detail);
        fa_buf_puts(b, "</div>");
    }
    fa_buf_puts(b, "</div>");
}

/* rows of the report's kernels table (the most time first); kernels.csv holds every kernel */
enum { FA_REP_KERNEL_ROWS = 2000 };

static const char *tns(char *buf, size_t cap, double ns)
{
    fa_rep_fmt_ns(buf, cap, ns);
    return buf;
}

/* a kernel's short name with its full name (NULL: norm) on hover */
static void kname_full(fa_buf *b, const char *norm, const char *full)
{
    char sh[96];
    if (!full) full = norm;
    fa_buf_puts(b, "<span title=\"");
    h(b, full);
    fa_buf_puts(b, "\">");
    h(b, fa_kernel_name_short(norm, sh, sizeof sh));
    fa_buf_puts(b, "</span>");
}

/* the same, its full name looked up among the trace's kernels (for the few rows of the
 * opportunities and gaps; the kernels table passes its own) */
static void kname(fa_buf *b, const fa_trace_advice *a, const char *norm)
{
    char sh[96];
    const char *full = norm;
    for (int i = 0; i < a->n_kernel_names; i++)
        if (!strcmp(a->kernels[i].name, norm)) {
            full = a->kernels[i].full_name;
            break;
        }
    fa_buf_puts(b, "<span title=\"");
    h(b, full);
    fa_buf_puts(b, "\">");
    h(b, fa_kernel_name_short(norm, sh, sizeof sh));
    fa_buf_puts(b, "</span>");
}

static void td_num(fa_buf *b, double v, const char *txt)
{
    fa_buf_printf(b, "<td class=\"num\" data-v=\"%.6g\">", v);
    h(b, txt);
    fa_buf_puts(b, "</td>");
}

/* ---- sections ---- */

static int64_t union_busy(const fa_trace_advice *a)
{
    int64_t best = 0;
    for (int i = 0; i < a->n_streams; i++)
        if (a->streams[i].busy_ns > best) best = a->streams[i].busy_ns;
    return best;
}

static void summary(const fa_rep *r, const fa_trace_advice *a, fa_buf *b)
{
    char v[64], d[256], t1[32], t2[32];
    fa_buf_puts(b, "<section id=\"summary\"><h2>Summary</h2><div class=\"cards\">");
    snprintf(v, sizeof v, "%" PRId64, a->n_kernels);
    snprintf(d, sizeof d, "%d distinct names, %d streams", a->n_kernel_names, a->n_streams);
    card(b, "GPU kernels", v, d);
    snprintf(d, sizeof d, "over a %s span%s", tns(t1, sizeof t1, (double)a->span_ns), a->n_steps ? "" : "");
    card(b, "Kernel time", tns(v, sizeof v, (double)a->kernel_ns), d);
    if (a->n_steps) {
        snprintf(v, sizeof v, "%" PRId64, a->n_steps);
        snprintf(d, sizeof d, "%s each (span / steps)", tns(t1, sizeof t1, (double)a->step_ns));
        card(b, "Profiler steps", v, d);
    }
    int64_t busy = union_busy(a);
    if (a->span_ns > 0) {
        snprintf(v, sizeof v, "%.1f%%", 100.0 * (double)busy / (double)a->span_ns);
        card(b, "GPU busy (busiest stream)", v, "kernel time without overlaps, of the span");
    }
    /* launch overhead per kernel: the stored launch_per_kernel_ns (host launch call + device launch
     * latency), as the text answer and the gate read it */
    if (a->launch_per_kernel_ns >= 0) {
        snprintf(v, sizeof v, "%.2f \xc2\xb5s", a->launch_per_kernel_ns / 1e3);
        char c[48], l[48];
        if (a->launch_call_median_ns >= 0) snprintf(c, sizeof c, "median launch call %s", tns(t1, sizeof t1, (double)a->launch_call_median_ns));
        else snprintf(c, sizeof c, "launch call not measured");
        if (a->launch_latency_ns >= 0) snprintf(l, sizeof l, "device launch latency %s", tns(t2, sizeof t2, (double)a->launch_latency_ns));
        else snprintf(l, sizeof l, "device launch latency not measured");
        snprintf(d, sizeof d, "%s + %s", c, l);
        card(b, "Launch overhead per kernel", v, d);
    } /* else no card (a card the trace cannot fill is left out): the Launch overhead section says why */
    if (a->n_host_bound_gaps) {
        snprintf(d, sizeof d, "%" PRId64 " gaps where the GPU waited for the host (median %s); not launch overhead",
                 a->n_host_bound_gaps, tns(t2, sizeof t2, (double)a->host_bound_gap_median_ns));
        card(b, "Host-bound idle", tns(v, sizeof v, (double)a->host_bound_idle_ns), d);
    }
    if (a->n_opps) {
        snprintf(v, sizeof v, "%s", tns(t1, sizeof t1, a->saving_ns));
        snprintf(d, sizeof d, "estimated, %.1f%% of the span, %" PRId64 " opportunities, each kernel counted once",
                 a->span_ns ? 100.0 * a->saving_ns / (double)a->span_ns : 0.0, a->n_opps_total);
        card(b, "Fusion could save", v, d);
    }
    if (a->roofs.label) {
        snprintf(v, sizeof v, "%.0f GB/s", a->roofs.hbm_gbs);
        snprintf(d, sizeof d, "theoretical (%s data sheet); FP32 %.1f TFLOP/s", a->roofs.label, a->roofs.fp32_gflops / 1e3);
        card(b, "Memory roof", v, d);
    }
    fa_buf_puts(b, "</div><p>Device: ");
    h(b, a->device_name ? a->device_name : "unknown");
    /* in the vendor's terms: an AMD part by its gfx architecture and compute units */
    if (a->vendor && !strcmp(a->vendor, "AMD")) {
        if (a->arch) fa_buf_puts(b, ", "), h(b, a->arch);
        if (a->arch_family) fa_buf_puts(b, " ("), h(b, a->arch_family), fa_buf_puts(b, ")");
        if (a->sm_count) fa_buf_printf(b, ", %d compute units", a->sm_count);
    } else if (a->cc_major) {
        fa_buf_printf(b, ", sm_%d%d (", a->cc_major, a->cc_minor), h(b, a->cc_source), fa_buf_puts(b, ")");
        if (a->sm_count) fa_buf_printf(b, ", %d SMs", a->sm_count);
    }
    if (a->n_fused_kernels)
        fa_buf_printf(b, ". Already fused (attention kernels, torch.compile / Triton, fused optimizers; never part of a "
                         "fusion here): %" PRId64 " kernels, %s",
                      a->n_fused_kernels, tns(t1, sizeof t1, (double)a->fused_kernel_ns));
    if (a->n_outside_steps)
        fa_buf_printf(b, ". %" PRId64 " kernels (%s) were launched outside the profiler steps: not in the opportunities",
                      a->n_outside_steps, tns(t2, sizeof t2, (double)a->outside_steps_ns));
    if (a->mem_roof_gbs > 0) {
        fa_buf_printf(b, ". Fused kernels are predicted on a %.0f GB/s memory roof: ", a->mem_roof_gbs);
        h(b, a->mem_roof_source);
    }
    fa_buf_puts(b, ".</p><p>Trace: <code>");
    h(b, r->run.model_path);
    fa_buf_printf(b, "</code> (%s", r->run.trace_source ? "" : "");
    h(b, r->run.trace_source ? r->run.trace_source : "imported trace");
    fa_buf_printf(b, "); orphans %" PRIu64 ", clock inversions %" PRIu64 ", recoverable parse errors %" PRIu64 ".", a->n_orphans,
                  a->n_clock_inversions, a->n_parse_errors);
    if (a->n_estimated_bytes == 0)
        fa_buf_puts(b, " No kernel has sizes (the profiler ran without <code>record_shapes</code>): byte and FLOP figures "
                       "are unknown, fused kernels are taken to last as long as their slowest member.");
    fa_buf_puts(b, "</p></section>\n");
}

static void opportunities(const fa_trace_advice *a, fa_buf *b)
{
    char t1[32];
    fa_buf_puts(b, "<section id=\"opportunities\"><h2>Fusion opportunities, ranked by estimated saving</h2>");
    if (!a->n_opps) {
        fa_buf_puts(b, "<p>No named pattern and no repeated sequence of memory-bound kernels in this trace.</p></section>\n");
        return;
    }
    fa_buf_puts(b, "<p>Each kernel occurrence belongs to at most one row, so the savings add up. Saving = measured kernel "
                   "time of the members &minus; the fused kernel's predicted time + the launch cost removed (per removed launch, "
                   "the GPU idle before it up to its launch call, at most the trace's median launch call; idle while the "
                   "host did other work is not counted); every prediction is an estimate and says what it rests on. Only "
                   "groups the fusion rule allows are listed: no collective, transfer, attention or already fused kernel, "
                   "a GEMM only as the first member, one reduction domain.</p><div class=\"scroll\"><table class=\"sortable\">"
                   "<thead><tr><th>#</th><th>pattern</th><th>count</th><th>kernels, and what the estimate rests on</th>"
                   "<th>measured</th><th>launch cost</th><th>fused (est.)</th><th>saving (est.)</th><th>share of span</th>"
                   "<th>bytes per occurrence (est.)</th></tr></thead><tbody>");
    for (int i = 0; i < a->n_opps; i++) {
        const fa_ta_opportunity *o = &a->opps[i];
        fa_buf_printf(b, "<tr><td class=\"num\" data-v=\"%d\">%d</td><td><b>", i + 1, i + 1);
        h(b, o->pattern ? o->pattern : "repeated sequence");
        if (o->backward) fa_buf_puts(b, " (backward pass)");
        fa_buf_puts(b, "</b><div class=\"d\">fix: ");
        h(b, o->fix);
        fa_buf_puts(b, "</div>");
        if (o->module || o->source) { /* where in the user's code (first occurrence) */
            fa_buf_puts(b, "<div class=\"d\">where: ");
            if (o->module) h(b, o->module);
            if (o->module && o->source) fa_buf_puts(b, ", ");
            if (o->source) fa_buf_puts(b, "<code>"), h(b, o->source), fa_buf_puts(b, "</code>");
            fa_buf_puts(b, "</div>");
        }
        fa_buf_puts(b, "</td>");
        char c[32];
        snprintf(c, sizeof c, "%" PRId64, o->count);
        td_num(b, (double)o->count, c);
        fa_buf_puts(b, "<td>");
        for (int m = 0; m < o->n; m++) {
            if (m) fa_buf_puts(b, " &rarr; ");
            kname(b, a, o->members[m]);
        }
        if (o->skipped) fa_buf_printf(b, " <i>(%" PRId64 " kernels between stay)</i>", o->skipped);
        fa_buf_puts(b, "<div class=\"d\">estimated from: ");
        h(b, o->est.basis);
        fa_buf_puts(b, "</div></td>");
        td_num(b, (double)o->kernel_ns, tns(t1, sizeof t1, (double)o->kernel_ns));
        td_num(b, (double)o->gaps_ns, tns(t1, sizeof t1, (double)o->gaps_ns));
        td_num(b, o->est.fused_ns, tns(t1, sizeof t1, o->est.fused_ns));
        td_num(b, o->est.saving_ns, tns(t1, sizeof t1, o->est.saving_ns));
        char sh[32];
        snprintf(sh, sizeof sh, "%.2f%%", 100 * o->share);
        td_num(b, o->share, sh);
        if (o->read_bytes >= 0) {
            char rb[32], wb[32], sb[32], txt[128];
            fa_rep_fmt_bytes(rb, sizeof rb, o->read_bytes);
            fa_rep_fmt_bytes(wb, sizeof wb, o->write_bytes);
            fa_rep_fmt_bytes(sb, sizeof sb, o->saved_bytes);
            snprintf(txt, sizeof txt, "reads %s, writes %s, saves %s", rb, wb, sb);
            td_num(b, o->saved_bytes, txt);
        } else {
            fa_buf_puts(b, "<td class=\"na\" data-v=\"-1\">unknown (no Input Dims)</td>");
        }
        fa_buf_puts(b, "</tr>");
    }
    fa_buf_puts(b, "</tbody></table></div>");
    if (a->n_opps_total > a->n_opps)
        fa_buf_printf(b, "<p>%" PRId64 " more with smaller savings (in the total above).</p>", a->n_opps_total - a->n_opps);
    fa_buf_puts(b, "</section>\n");
}

static void streams(const fa_trace_advice *a, fa_buf *b)
{
    char t1[32], t2[32];
    fa_buf_puts(b, "<section id=\"streams\"><h2>GPU busy and idle per stream</h2>");
    const double W = 1000, x0 = 120, x1 = 900, row = 22;
    double H = 20 + row * a->n_streams;
    fa_buf_printf(b, "<svg id=\"streams-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                     "role=\"img\" aria-label=\"busy per stream\">", W, H, W, H);
    for (int i = 0; i < a->n_streams; i++) {
        const fa_ta_stream *m = &a->streams[i];
        int64_t span = m->last_ns > m->first_ns ? (int64_t)(m->last_ns - m->first_ns) : 0;
        double busy = span ? (double)m->busy_ns / (double)span : 0;
        double y = 10 + row * i;
        fa_buf_printf(b, "<text x=\"4\" y=\"%.0f\" font-size=\"11\">stream %d:%" PRId64 "</text>", y + 14, m->device, m->stream);
        double x = x0;
        for (int c = 0; c < FA_KCLASS_COUNT; c++) {
            double w = span ? (x1 - x0) * (double)m->class_ns[c] / (double)span : 0;
            if (m->kernel_ns > m->busy_ns && m->kernel_ns > 0) w *= (double)m->busy_ns / (double)m->kernel_ns; /* overlaps */
            if (w <= 0) continue;
            fa_buf_printf(b, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"16\" fill=\"%s\"><title>%s %s</title></rect>", x, y + 2, w,
                          class_color((fa_kclass)c), fa_kclass_name((fa_kclass)c), tns(t1, sizeof t1, (double)m->class_ns[c]));
            x += w;
        }
        fa_buf_printf(b, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"16\" fill=\"#eef1f5\"><title>idle %s</title></rect>", x, y + 2,
                      x1 > x ? x1 - x : 0, tns(t1, sizeof t1, (double)m->idle_ns));
        fa_buf_printf(b, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">%.1f%% busy</text>", x1 + 6, y + 14, 100 * busy);
    }
    fa_buf_puts(b, "</svg>");
    class_legend(b);
    fa_buf_puts(b, "<table class=\"sortable\"><thead><tr><th>device:stream</th><th>kernels</th><th>kernel time</th><th>busy</th>"
                   "<th>busy share</th><th>idle</th><th>gaps</th><th>overlapping kernels</th></tr></thead><tbody>");
    for (int i = 0; i < a->n_streams; i++) {
        const fa_ta_stream *m = &a->streams[i];
        int64_t span = m->last_ns > m->first_ns ? (int64_t)(m->last_ns - m->first_ns) : 0;
        char c[48];
        snprintf(c, sizeof c, "%d:%" PRId64, m->device, m->stream);
        fa_buf_puts(b, "<tr><td>");
        h(b, c);
        fa_buf_puts(b, "</td>");
        snprintf(c, sizeof c, "%" PRId64, m->n_kernels);
        td_num(b, (double)m->n_kernels, c);
        td_num(b, (double)m->kernel_ns, tns(t1, sizeof t1, (double)m->kernel_ns));
        td_num(b, (double)m->busy_ns, tns(t1, sizeof t1, (double)m->busy_ns));
        snprintf(c, sizeof c, "%.1f%%", span ? 100.0 * (double)m->busy_ns / (double)span : 0.0);
        td_num(b, span ? (double)m->busy_ns / (double)span : 0, c);
        td_num(b, (double)m->idle_ns, tns(t2, sizeof t2, (double)m->idle_ns));
        snprintf(c, sizeof c, "%" PRId64, m->n_gaps);
        td_num(b, (double)m->n_gaps, c);
        snprintf(c, sizeof c, "%" PRId64, m->n_overlaps);
        td_num(b, (double)m->n_overlaps, c);
        fa_buf_puts(b, "</tr>");
    }
    fa_buf_puts(b, "</tbody></table></section>\n");
}

static void classes(const fa_trace_advice *a, fa_buf *b)
{
    char t1[32];
    fa_buf_puts(b, "<section id=\"classes\"><h2>Kernel time by class</h2>");
    const double W = 1000, x0 = 10, x1 = 990;
    fa_buf_puts(b, "<svg id=\"classes-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"1000\" height=\"34\" viewBox=\"0 0 1000 34\" "
                   "role=\"img\" aria-label=\"kernel time by class\">");
    double x = x0;
    for (int c = 0; c < FA_KCLASS_COUNT; c++) {
        if (a->class_ns[c] <= 0 || a->kernel_ns <= 0) continue;
        double w = (x1 - x0) * (double)a->class_ns[c] / (double)a->kernel_ns;
        fa_buf_printf(b, "<rect x=\"%.2f\" y=\"4\" width=\"%.2f\" height=\"24\" fill=\"%s\"><title>%s: %s (%.1f%%)</title></rect>", x, w,
                      class_color((fa_kclass)c), fa_kclass_name((fa_kclass)c), tns(t1, sizeof t1, (double)a->class_ns[c]),
                      100.0 * (double)a->class_ns[c] / (double)a->kernel_ns);
        if (w > 70)
            fa_buf_printf(b, "<text x=\"%.2f\" y=\"20\" font-size=\"11\" fill=\"#fff\">%s %.0f%%</text>", x + 4,
                          fa_kclass_name((fa_kclass)c), 100.0 * (double)a->class_ns[c] / (double)a->kernel_ns);
        x += w;
    }
    (void)W;
    fa_buf_puts(b, "</svg>");
    class_legend(b);
    fa_buf_puts(b, "<table><thead><tr><th>class</th><th>time</th><th>share</th></tr></thead><tbody>");
    for (int c = 0; c < FA_KCLASS_COUNT; c++) {
        if (a->class_ns[c] <= 0) continue;
        fa_buf_puts(b, "<tr><td>");
        fa_rep_swatch(b, class_color((fa_kclass)c));
        h(b, fa_kclass_name((fa_kclass)c));
        fa_buf_puts(b, "</td>");
        td_num(b, (double)a->class_ns[c], tns(t1, sizeof t1, (double)a->class_ns[c]));
        char sh[32];
        snprintf(sh, sizeof sh, "%.1f%%", a->kernel_ns ? 100.0 * (double)a->class_ns[c] / (double)a->kernel_ns : 0.0);
        td_num(b, (double)a->class_ns[c], sh);
        fa_buf_puts(b, "</tr>");
    }
    if (a->n_memcpy || a->n_memset)
        fa_buf_printf(b, "<tr><td>memcpy / memset (not kernels)</td><td class=\"num\">%s</td><td class=\"num\">%" PRId64 " / %" PRId64
                         "</td></tr>",
                      tns(t1, sizeof t1, (double)(a->memcpy_ns + a->memset_ns)), a->n_memcpy, a->n_memset);
    fa_buf_puts(b, "</tbody></table></section>\n");
}

static void launch(const fa_trace_advice *a, fa_buf *b)
{
    char t1[32], t2[32], t3[32];
    fa_buf_puts(b, "<section id=\"launch\"><h2>Launch overhead</h2>");
    if (a->launch_per_kernel_ns == FA_TA_NOT_STORED) {
        fa_buf_puts(b, "<p>Launch overhead per kernel: not stored in this run (imported by an older version, whose figure "
                       "added the median idle gap of any cause; import the trace again).</p>");
    } else if (a->launch_per_kernel_ns < 0) {
        fa_buf_puts(b, "<p>Launch overhead per kernel: not measured (no launch call linked to a kernel, and no kernel queued "
                       "behind another on its stream).</p>");
    } else {
        fa_buf_puts(b, "<p>Launch overhead per kernel, measured: <b>");
        fa_buf_printf(b, "%.2f \xc2\xb5s</b> = ", a->launch_per_kernel_ns / 1e3);
        if (a->launch_call_median_ns >= 0)
            fa_buf_printf(b, "median launch call %s (%" PRId64 " launch calls, %s on the CPU in all)",
                          tns(t1, sizeof t1, (double)a->launch_call_median_ns), a->n_launch_calls,
                          tns(t2, sizeof t2, (double)a->launch_call_ns));
        else
            fa_buf_puts(b, "launch call not measured (no launch call linked to a kernel)");
        if (a->launch_latency_ns >= 0)
            fa_buf_printf(b, " + median device launch latency %s (%" PRId64 " gaps before a kernel that was already queued: "
                             "its launch call had ended before the kernel ahead of it on its stream ended)",
                          tns(t3, sizeof t3, (double)a->launch_latency_ns), a->n_latency_gaps);
        else
            fa_buf_puts(b, " + device launch latency not measured (no kernel was queued before the one ahead of it on its "
                           "stream ended)");
        fa_buf_puts(b, ".</p>");
    }
    if (a->launch_per_kernel_ns != FA_TA_NOT_STORED) {
        fa_buf_printf(b, "<p>Host-bound idle, not launch overhead: %s in %" PRId64 " gaps", tns(t1, sizeof t1, (double)a->host_bound_idle_ns),
                      a->n_host_bound_gaps);
        if (a->n_host_bound_gaps) fa_buf_printf(b, " (median %s)", tns(t2, sizeof t2, (double)a->host_bound_gap_median_ns));
        fa_buf_puts(b, " where the GPU waited for the host to launch the next kernel (Python, data loading, a synchronising "
                       "call): fusion removes launches, not this wait");
        if (a->n_unclassed_gaps)
            fa_buf_printf(b, "; %s in %" PRId64 " more gaps not told apart (the next kernel has no launch call in the trace or "
                             "starts before it, or a copy or set ran between)",
                          tns(t3, sizeof t3, (double)a->unclassed_idle_ns), a->n_unclassed_gaps);
        fa_buf_puts(b, ".</p>");
    }
    if (!a->n_launch_calls) {
        fa_buf_puts(b, "<p>No launch call linked to a kernel in this trace (every kernel is an orphan).</p></section>\n");
        return;
    }
    fa_buf_printf(b, "<p>%d launch-bound stretches (at least %d kernels in a row, each shorter than its own launch call): %" PRId64
                     " kernels, %s of kernel time. A CUDA graph (torch.cuda.graphs, torch.compile mode=\"reduce-overhead\") "
                     "or fusion removes these launches.</p>",
                  a->n_stretches, FA_TA_MIN_STRETCH, a->launch_bound_kernels, tns(t1, sizeof t1, (double)a->launch_bound_ns));
    if (a->n_stretches) {
        fa_buf_puts(b, "<table class=\"sortable\"><thead><tr><th>stream</th><th>kernels</th><th>first kernel</th><th>kernel time</th>"
                       "<th>launch calls</th></tr></thead><tbody>");
        for (int i = 0; i < a->n_stretches && i < 20; i++) {
            const fa_ta_stretch *r = &a->stretches[i];
            char c[48];
            snprintf(c, sizeof c, "%d:%" PRId64, r->device, r->stream);
            fa_buf_puts(b, "<tr><td>");
            h(b, c);
            fa_buf_puts(b, "</td>");
            snprintf(c, sizeof c, "%d", r->n_kernels);
            td_num(b, r->n_kernels, c);
            fa_buf_puts(b, "<td>");
            if (r->first_name) kname(b, a, r->first_name);
            fa_buf_puts(b, "</td>");
            td_num(b, (double)r->kernel_ns, tns(t1, sizeof t1, (double)r->kernel_ns));
            td_num(b, (double)r->launch_ns, tns(t2, sizeof t2, (double)r->launch_ns));
            fa_buf_puts(b, "</tr>");
        }
        fa_buf_puts(b, "</tbody></table>");
    }
    if (a->n_graphs) {
        fa_buf_printf(b, "<p>CUDA graphs: %d, %" PRId64 " kernels launched by graph replays.</p><table><thead><tr><th>graph</th>"
                         "<th>replays</th><th>kernels per replay</th><th>kernel time</th><th>launched under</th><th>captured under</th>"
                         "</tr></thead><tbody>",
                      a->n_graphs, a->graph_kernels);
        for (int i = 0; i < a->n_graphs; i++) {
            const fa_ta_graph *g = &a->graphs[i];
            fa_buf_printf(b, "<tr><td>%d</td><td class=\"num\">%" PRId64 "</td><td class=\"num\">%" PRId64 "</td><td class=\"num\">%s</td><td>",
                          g->id, g->replays, g->kernels, tns(t1, sizeof t1, (double)g->kernel_ns));
            h(b, g->launch_op ? g->launch_op : "unknown");
            fa_buf_puts(b, "</td><td>");
            h(b, g->capture_op ? g->capture_op : "(the capture is not in the trace)");
            fa_buf_puts(b, "</td></tr>");
        }
        fa_buf_puts(b, "</tbody></table>");
    }
    fa_buf_puts(b, "</section>\n");
}

static void gaps(const fa_trace_advice *a, fa_buf *b)
{
    char t1[32];
    fa_buf_printf(b, "<section id=\"gaps\"><h2>Largest idle gaps</h2><p>GPU idle between kernels: %s summed over streams",
                  tns(t1, sizeof t1, (double)a->idle_ns));
    if (a->n_overlaps) fa_buf_printf(b, " (%" PRId64 " overlapping kernels excluded)", a->n_overlaps);
    fa_buf_puts(b, ". The cpu op is the innermost one running at the gap's middle on the thread that launched the next kernel: "
                   "what the CPU was busy with while the GPU waited.</p>");
    if (a->n_gaps) {
        fa_buf_puts(b, "<table class=\"sortable\"><thead><tr><th>gap</th><th>stream</th><th>before kernel</th><th>cpu op then</th>"
                       "</tr></thead><tbody>");
        for (int i = 0; i < a->n_gaps; i++) {
            const fa_ta_gap *g = &a->gaps[i];
            td_num(b, (double)g->gap_ns, tns(t1, sizeof t1, (double)g->gap_ns));
            fa_buf_printf(b, "<td>%d:%" PRId64 "</td><td>", g->device, g->stream);
            if (g->next_kernel) kname(b, a, g->next_kernel);
            fa_buf_puts(b, "</td><td>");
            h(b, g->cpu_op ? g->cpu_op : "unknown");
            fa_buf_puts(b, "</td></tr>");
        }
        fa_buf_puts(b, "</tbody></table>");
    }
    fa_buf_puts(b, "</section>\n");
}

/* ---- roofline ---- */

typedef struct axis {
    double lo, hi; /* log10 */
    double p0, p1; /* pixels */
} axis;

static double amap(const axis *x, double v)
{
    double l = log10(v);
    return x->p0 + (l - x->lo) / (x->hi - x->lo) * (x->p1 - x->p0);
}

static void roofline(const fa_trace_advice *a, fa_buf *b)
{
    char t1[32];
    fa_buf_puts(b, "<section id=\"roofline\"><h2>Roofline (estimated)</h2>");
    /* placeable points: bytes and FLOPs estimated, a duration */
    double imin = 1e30, imax = 0, gmin = 1e30, gmax = 0;
    int n = 0;
    for (int i = 0; i < a->n_points; i++) {
        const fa_ta_point *p = &a->points[i];
        if (p->bytes <= 0 || p->flops <= 0 || p->count <= 0 || p->total_ns <= 0) continue;
        double in = p->flops / p->bytes, g = p->flops / ((double)p->total_ns / (double)p->count); /* GFLOP/s = FLOP/ns */
        if (in < imin) imin = in;
        if (in > imax) imax = in;
        if (g < gmin) gmin = g;
        if (g > gmax) gmax = g;
        n++;
    }
    double peak = a->roofs.tensor_gflops > 0 ? a->roofs.tensor_gflops : a->roofs.fp32_gflops;
    if (peak > gmax) gmax = peak;
    if (!n) {
        fa_buf_puts(b, "<p>No kernel with both bytes and FLOPs estimated from its cpu op's shapes: nothing to place (the "
                       "profiler needs <code>record_shapes=True</code>). The kernels below could not be placed.</p>");
    } else {
        axis x = {floor(log10(imin)) - 0.5, ceil(log10(imax)) + 0.5, 70, 980};
        axis y = {floor(log10(gmin)) - 0.5, ceil(log10(gmax)) + 0.3, 380, 20};
        fa_buf_puts(b, "<svg id=\"trace-roofline-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"1000\" height=\"420\" "
                       "viewBox=\"0 0 1000 420\" role=\"img\" aria-label=\"roofline\">");
        /* grid and axes */
        for (int e = (int)x.lo + 1; e <= (int)x.hi; e++) {
            double px = amap(&x, pow(10, e));
            fa_buf_printf(b, "<line x1=\"%.1f\" y1=\"20\" x2=\"%.1f\" y2=\"380\" stroke=\"#eef1f5\"/><text x=\"%.1f\" y=\"396\" "
                             "font-size=\"10\" text-anchor=\"middle\" fill=\"#5b6675\">1e%d</text>", px, px, px, e);
        }
        for (int e = (int)y.lo + 1; e <= (int)y.hi; e++) {
            double py = amap(&y, pow(10, e));
            fa_buf_printf(b, "<line x1=\"70\" y1=\"%.1f\" x2=\"980\" y2=\"%.1f\" stroke=\"#eef1f5\"/><text x=\"64\" y=\"%.1f\" "
                             "font-size=\"10\" text-anchor=\"end\" fill=\"#5b6675\">1e%d</text>", py, py, py + 3, e);
        }
        fa_buf_puts(b, "<text x=\"525\" y=\"414\" font-size=\"11\" text-anchor=\"middle\">arithmetic intensity, FLOP/byte "
                       "(estimated)</text><text x=\"14\" y=\"200\" font-size=\"11\" transform=\"rotate(-90 14 200)\" "
                       "text-anchor=\"middle\">GFLOP/s (estimated FLOPs / measured time)</text>");
        /* roofs: theoretical, from the data sheet */
        struct { double peak; const char *name; const char *col; } roofs[2] = {{a->roofs.fp32_gflops, "FP32", "#b3261e"},
                                                                                {a->roofs.tensor_gflops, "16-bit tensor", "#6b3fa0"}};
        if (a->roofs.hbm_gbs > 0) {
            for (int k = 0; k < 2; k++) {
                if (roofs[k].peak <= 0) continue;
                double ridge = roofs[k].peak / a->roofs.hbm_gbs; /* FLOP/byte */
                double xa = pow(10, x.lo), xb = pow(10, x.hi);
                double ya = xa * a->roofs.hbm_gbs;
                double xr = ridge < xa ? xa : ridge > xb ? xb : ridge;
                double yr = xr * a->roofs.hbm_gbs > roofs[k].peak ? roofs[k].peak : xr * a->roofs.hbm_gbs;
                fa_buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\" "
                                 "points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"><title>theoretical roof (",
                              roofs[k].col, amap(&x, xa), amap(&y, ya > pow(10, y.lo) ? ya : pow(10, y.lo)), amap(&x, xr),
                              amap(&y, yr), amap(&x, xb), amap(&y, roofs[k].peak));
                h(b, a->roofs.label); /* stored with the run: text, never markup */
                fa_buf_printf(b, " data sheet): %.0f GB/s, %s %.1f TFLOP/s</title></polyline>", a->roofs.hbm_gbs,
                              roofs[k].name, roofs[k].peak / 1e3);
                fa_buf_printf(b, "<text x=\"975\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\" fill=\"%s\">%s %.0f TFLOP/s "
                                 "(theoretical)</text>", amap(&y, roofs[k].peak) - 4, roofs[k].col, roofs[k].name, roofs[k].peak / 1e3);
            }
        }
        for (int i = 0; i < a->n_points; i++) {
            const fa_ta_point *p = &a->points[i];
            if (p->bytes <= 0 || p->flops <= 0 || p->count <= 0 || p->total_ns <= 0) continue;
            double in = p->flops / p->bytes, g = p->flops / ((double)p->total_ns / (double)p->count);
            double rad = 2.5 + 9 * sqrt((double)p->total_ns / (double)(a->kernel_ns > 0 ? a->kernel_ns : 1));
            char sh[96];
            fa_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" fill-opacity=\"0.75\" stroke=\"#1d2430\" "
                             "stroke-width=\"0.4\"><title>", amap(&x, in), amap(&y, g), rad, class_color(p->cls));
            h(b, fa_kernel_name_short(p->kernel, sh, sizeof sh));
            fa_buf_puts(b, " (");
            h(b, p->op ? p->op : "?");
            fa_buf_puts(b, ", inputs ");
            h(b, p->shapes ? p->shapes : "?");
            fa_buf_printf(b, "): %" PRId64 " launches, %s; estimated %.3g bytes and %.3g FLOP per launch</title></circle>", p->count,
                          tns(t1, sizeof t1, (double)p->total_ns), p->bytes, p->flops);
        }
        fa_buf_puts(b, "</svg>");
        class_legend(b);
        fa_buf_printf(b, "<p>%d kernel / input-shape pairs placed. Every point is <b>estimated</b>: bytes and FLOPs come from "
                         "the cpu op's Input Dims and dtypes (GEMM 2&middot;M&middot;N&middot;K, attention "
                         "4&middot;B&middot;H&middot;L&middot;S&middot;D, elementwise one FLOP per output element), the time is "
                         "measured. The roofs are <b>theoretical</b> (the vendor data sheet), not a measurement of this device.</p>", n);
    }
    /* what could not be placed */
    int unk = 0;
    for (int i = 0; i < a->n_points; i++)
        if (!(a->points[i].bytes > 0 && a->points[i].flops > 0)) unk++;
    if (unk) {
        fa_buf_printf(b, "<p>%d kernel / shape pairs could not be estimated:</p><div class=\"scroll\"><table class=\"sortable\">"
                         "<thead><tr><th>kernel</th><th>class</th><th>cpu op</th><th>launches</th><th>time</th><th>why</th></tr>"
                         "</thead><tbody>", unk);
        for (int i = 0; i < a->n_points; i++) {
            const fa_ta_point *p = &a->points[i];
            if (p->bytes > 0 && p->flops > 0) continue;
            fa_buf_puts(b, "<tr><td>");
            kname(b, a, p->kernel);
            fa_buf_puts(b, "</td><td>");
            h(b, fa_kclass_name(p->cls));
            fa_buf_puts(b, "</td><td>");
            h(b, p->op ? p->op : "unknown");
            char c[32];
            snprintf(c, sizeof c, "%" PRId64, p->count);
            fa_buf_puts(b, "</td>");
            td_num(b, (double)p->count, c);
            td_num(b, (double)p->total_ns, tns(t1, sizeof t1, (double)p->total_ns));
            fa_buf_puts(b, "<td>");
            h(b, p->bytes > 0 ? "no FLOP count for this op (a copy or data movement)" : p->why_unknown ? p->why_unknown : "unknown");
            fa_buf_puts(b, "</td></tr>");
        }
        fa_buf_puts(b, "</tbody></table></div>");
    }
    fa_buf_puts(b, "</section>\n");
}

/* ---- the what-if timeline ---- */

enum { WHATIF_TOP = 5 };

typedef struct lane_rec {
    uint64_t s, e;   /* drawn interval */
    int32_t w;       /* window index, -1 for a fused block */
    int32_t opp;
} lane_rec;

static void draw_lane(const fa_trace_advice *a, fa_buf *b, const lane_rec *v, int n, uint64_t t0, double x0, double ppn,
                      double y, double hgt)
{
    char t1[32], sh[96];
    for (int i = 0; i < n; i++) {
        double x = x0 + (double)(v[i].s - t0) * ppn, w = (double)(v[i].e - v[i].s) * ppn;
        if (w < 0.5) w = 0.5;
        if (v[i].w < 0) {
            fa_buf_printf(b, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"#23803a\" stroke=\"#1d2430\" "
                             "stroke-width=\"0.6\"><title>fused: ", x, y, w, hgt);
            const fa_ta_opportunity *o = &a->opps[v[i].opp];
            h(b, o->pattern ? o->pattern : "repeated sequence");
            fa_buf_printf(b, " (#%d), predicted %s</title></rect>", v[i].opp + 1, tns(t1, sizeof t1, (double)(v[i].e - v[i].s)));
            continue;
        }
        const fa_ta_wrec *r = &a->window[v[i].w];
        const char *col = r->kernel >= 0 ? (r->opp >= 0 && r->opp < WHATIF_TOP ? "#e15759" : "") : "#9c755f";
        fa_kclass c = r->kernel >= 0 ? a->kernels[r->kernel].cls : FA_KCLASS_COPY;
        fa_buf_printf(b, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"%s><title>", x, y, w, hgt,
                      class_color(c), *col && r->kernel >= 0 ? " stroke=\"#1d2430\" stroke-width=\"0.5\"" : "");
        if (r->kernel >= 0) {
            h(b, fa_kernel_name_short(a->kernels[r->kernel].name, sh, sizeof sh));
            fa_buf_puts(b, " (");
            h(b, fa_kclass_name(c));
            fa_buf_puts(b, ")");
            if (r->opp >= 0) fa_buf_printf(b, ", member of opportunity #%d", r->opp + 1);
        } else {
            fa_buf_puts(b, r->kind == FA_ACT_MEMCPY ? "memcpy" : "memset");
        }
        fa_buf_printf(b, ": %s</title></rect>", tns(t1, sizeof t1, (double)(v[i].e - v[i].s)));
    }
}

static int cmp_lane(const void *pa, const void *pb)
{
    const lane_rec *x = pa, *y = pb;
    return (x->s > y->s) - (x->s < y->s);
}

static void whatif(const fa_trace_advice *a, fa_buf *b)
{
    char t1[32], t2[32];
    fa_buf_puts(b, "<section id=\"whatif\"><h2>What the top fusions buy: the timeline as measured and with them applied</h2>");
    if (!a->n_window) {
        fa_buf_puts(b, "<p>No timeline window stored with this run.</p></section>\n");
        return;
    }
    /* streams in the window */
    int64_t sid[64];
    int32_t sdev[64];
    int ns = 0;
    uint64_t t0 = UINT64_MAX, t1e = 0;
    for (int i = 0; i < a->n_window; i++) {
        const fa_ta_wrec *r = &a->window[i];
        if (r->start_ns < t0) t0 = r->start_ns;
        if (r->end_ns > t1e) t1e = r->end_ns;
        int k = 0;
        while (k < ns && !(sid[k] == r->stream && sdev[k] == r->device)) k++;
        if (k == ns && ns < 64) sid[ns] = r->stream, sdev[ns] = r->device, ns++;
    }
    int32_t max_occ = -1;
    for (int i = 0; i < a->n_window; i++)
        if (a->window[i].occ > max_occ) max_occ = a->window[i].occ;
    lane_rec *meas = calloc((size_t)a->n_window + 1, sizeof *meas), *fz = calloc((size_t)a->n_window + 1, sizeof *fz);
    bool *placed = calloc((size_t)max_occ + 2, sizeof *placed); /* occurrences already drawn as a block */
    if (!meas || !fz || !placed) {
        free(meas);
        free(fz);
        free(placed);
        fa_buf_puts(b, "<p>out of memory drawing the timeline</p></section>\n");
        return;
    }
    const double lane_h = 18, x0 = 130, x1 = 985;
    double span = t1e > t0 ? (double)(t1e - t0) : 1, ppn = (x1 - x0) / span;
    double H = 40 + ns * (2 * lane_h + 18);
    fa_buf_printf(b, "<svg id=\"whatif-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"1000\" height=\"%.0f\" viewBox=\"0 0 1000 %.0f\" "
                     "role=\"img\" aria-label=\"timeline, measured and with the top fusions applied\">", H, H);
    double saved_total = 0, end_fused = 0;
    for (int k = 0; k < ns; k++) {
        /* this stream's records in start order */
        int nm = 0;
        for (int i = 0; i < a->n_window; i++)
            if (a->window[i].stream == sid[k] && a->window[i].device == sdev[k])
                meas[nm++] = (lane_rec){a->window[i].start_ns, a->window[i].end_ns, i, -1};
        qsort(meas, (size_t)nm, sizeof *meas, cmp_lane);
        /* what-if: each occurrence of a top opportunity becomes one block of its predicted time at
         * its first member; its other members and the idle before them go; the rest keeps its
         * own duration and the idle before it (other streams are not moved: the trace does not
         * record dependencies between streams) */
        int nf = 0;
        uint64_t cur = meas[0].s, prev_end = meas[0].s;
        for (int i = 0; i < nm; i++) {
            const fa_ta_wrec *r = &a->window[meas[i].w];
            uint64_t gap = meas[i].s > prev_end ? meas[i].s - prev_end : 0;
            if (meas[i].e > prev_end) prev_end = meas[i].e;
            bool member = r->opp >= 0 && r->opp < WHATIF_TOP && r->occ >= 0;
            if (member && placed[r->occ]) continue; /* folded into its occurrence's block */
            cur += gap;
            if (member) {
                const fa_ta_opportunity *o = &a->opps[r->opp];
                uint64_t d = (uint64_t)(o->count ? o->est.fused_ns / (double)o->count : 0);
                fz[nf++] = (lane_rec){cur, cur + d, -1, r->opp};
                cur += d;
                placed[r->occ] = true;
            } else {
                uint64_t d = meas[i].e - meas[i].s;
                fz[nf++] = (lane_rec){cur, cur + d, meas[i].w, -1};
                cur += d;
            }
        }
        double y = 20 + k * (2 * lane_h + 18);
        fa_buf_printf(b, "<text x=\"4\" y=\"%.1f\" font-size=\"11\">%d:%" PRId64 " measured</text>", y + 13, sdev[k], sid[k]);
        draw_lane(a, b, meas, nm, t0, x0, ppn, y, lane_h);
        fa_buf_printf(b, "<text x=\"4\" y=\"%.1f\" font-size=\"11\" fill=\"#23803a\">%d:%" PRId64 " fused</text>", y + lane_h + 15,
                      sdev[k], sid[k]);
        draw_lane(a, b, fz, nf, t0, x0, ppn, y + lane_h + 2, lane_h);
        uint64_t me = 0;
        for (int i = 0; i < nm; i++)
            if (meas[i].e > me) me = meas[i].e;
        uint64_t fe = nf ? fz[nf - 1].e : me;
        if (me > fe) saved_total += (double)(me - fe);
        if ((double)(fe - t0) > end_fused) end_fused = (double)(fe - t0);
    }
    fa_buf_printf(b, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#8a94a3\"/>", x0, H - 16, x1, H - 16);
    for (int i = 0; i <= 5; i++) {
        double t = span * i / 5, px = x0 + t * ppn;
        fa_buf_printf(b, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"10\" text-anchor=\"%s\" fill=\"#5b6675\">%s</text>", px, H - 4,
                      i == 0 ? "start" : i == 5 ? "end" : "middle", tns(t1, sizeof t1, t));
    }
    fa_buf_puts(b, "</svg>");
    class_legend(b);
    fa_buf_puts(b, "<p>Window: ");
    h(b, a->window_what ? a->window_what : "part of the trace");
    fa_buf_printf(b, " (%d GPU records, %s). Outlined kernels belong to one of the top %d opportunities; in the lower lane of "
                     "each stream every occurrence is one green block of its <b>predicted</b> fused time, the idle gaps between "
                     "its members are gone, and everything after moves earlier: the streams end %s sooner in all (estimated). "
                     "Kernels on other streams are not moved (the trace records no dependencies between streams).</p></section>\n",
                  a->n_window, tns(t2, sizeof t2, span), WHATIF_TOP, tns(t1, sizeof t1, saved_total));
    free(meas);
    free(fz);
    free(placed);
}

static void kernels_table(const fa_trace_advice *a, fa_buf *b)
{
    char t1[32];
    fa_buf_puts(b, "<section id=\"kernels\"><h2>Kernels</h2><p>Short names drop namespaces, template arguments and parameters "
                   "(the functor of PyTorch's elementwise and reduce kernels is kept in &lt;&gt;); hover for the full name, which "
                   "<code>kernels.csv</code> also holds.</p><div class=\"scroll\"><table class=\"sortable\"><thead><tr><th>kernel</th>"
                   "<th>class</th><th>op</th><th>count</th><th>total</th><th>median</th><th>share</th><th>grid/block</th>"
                   "<th>occupancy</th></tr></thead><tbody>");
    /* the kernels by total time, at most FA_REP_KERNEL_ROWS rows: every name is in kernels.csv (a
     * crafted trace of 200,000 distinct names made a 200,000-row page, its full names looked up
     * row by row: 91 s) */
    int rows = a->n_kernel_names < FA_REP_KERNEL_ROWS ? a->n_kernel_names : FA_REP_KERNEL_ROWS;
    for (int i = 0; i < rows; i++) {
        const fa_ta_kernel *k = &a->kernels[i];
        fa_buf_puts(b, "<tr><td>");
        kname_full(b, k->name, k->full_name);
        fa_buf_puts(b, "</td><td>");
        fa_rep_swatch(b, class_color(k->cls));
        h(b, fa_kclass_name(k->cls));
        fa_buf_puts(b, "</td><td>");
        h(b, k->op);
        fa_buf_puts(b, "</td>");
        char c[48];
        snprintf(c, sizeof c, "%" PRId64, k->count);
        td_num(b, (double)k->count, c);
        td_num(b, (double)k->total_ns, tns(t1, sizeof t1, (double)k->total_ns));
        td_num(b, (double)k->median_ns, tns(t1, sizeof t1, (double)k->median_ns));
        snprintf(c, sizeof c, "%.2f%%", a->kernel_ns ? 100.0 * (double)k->total_ns / (double)a->kernel_ns : 0.0);
        td_num(b, (double)k->total_ns, c);
        if (k->block[0])
            snprintf(c, sizeof c, "%d/%d", k->grid[0] * (k->grid[1] ? k->grid[1] : 1) * (k->grid[2] ? k->grid[2] : 1),
                     k->block[0] * (k->block[1] ? k->block[1] : 1) * (k->block[2] ? k->block[2] : 1));
        else
            snprintf(c, sizeof c, "-");
        fa_buf_puts(b, "<td>");
        h(b, c);
        fa_buf_puts(b, "</td>");
        if (k->occupancy >= 0) {
            snprintf(c, sizeof c, "%.0f%% (%s)", 100 * k->occupancy, k->occupancy_source ? k->occupancy_source : "?");
            td_num(b, k->occupancy, c);
        } else {
            fa_buf_puts(b, "<td class=\"na\" data-v=\"-1\">unknown</td>");
        }
        fa_buf_puts(b, "</tr>");
    }
    fa_buf_puts(b, "</tbody></table></div>");
    if (rows < a->n_kernel_names)
        fa_buf_printf(b, "<p>The %d kernels with the most time; %d more are in <code>kernels.csv</code>.</p>", rows,
                      a->n_kernel_names - rows);
    fa_buf_puts(b, "</section>\n");
}

void fa_rep_trace_html(const fa_rep *r, const fa_trace_advice *a, fa_buf *b)
{
    fa_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">");
    fa_rep_csp(b);
    fa_buf_puts(b, "<title>fuse-advise trace report: ");
    h(b, r->run.model_path);
    fa_buf_printf(b, " (run %" PRId64 ")</title><style>%s</style></head><body><header><h1>fuse-advise trace report: ", r->run_id,
                  fa_rep_css);
    h(b, r->run.model_path);
    fa_buf_puts(b, "</h1><div class=\"sub\">");
    char when[64] = "";
    time_t sec = (time_t)(r->run.started_at_ns / 1000000000);
    struct tm tmv;
    if (r->run.started_at_ns > 0 && gmtime_r(&sec, &tmv)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tmv);
    fa_buf_printf(b, "run %" PRId64 " (imported trace) \xc2\xb7 %s \xc2\xb7 ", r->run_id, when);
    h(b, a->device_name ? a->device_name : "unknown device");
    fa_buf_puts(b, " \xc2\xb7 fuse-advise " FA_VERSION_STRING "</div></header><main>\n");
    if (a->no_gpu_activity) {
        fa_buf_puts(b, "<section id=\"summary\"><h2>Summary</h2><p>No GPU activity in the trace: nothing to fuse.</p></section>");
    } else {
        summary(r, a, b);
        opportunities(a, b);
        whatif(a, b);
        streams(a, b);
        classes(a, b);
        launch(a, b);
        gaps(a, b);
        roofline(a, b);
        kernels_table(a, b);
    }
    fa_buf_puts(b, "<section id=\"files\"><h2>Files</h2><p><code>kernels.csv</code> (every kernel name, short and full, with "
                   "its statistics), <code>summary.json</code> (the whole advice), <code>trace.json</code> (the timeline window, "
                   "for ui.perfetto.dev). Regenerated from the run database by <code>fuse-advise report</code>.</p></section>"
                   "</main>\n<script>");
    fa_buf_puts(b, fa_rep_js);
    fa_buf_puts(b, "</script></body></html>\n");
}

void fa_rep_trace_kernels_csv(const fa_trace_advice *a, fa_buf *b)
{
    fa_buf_puts(b, "short_name,name,full_name,class,op,count,total_ns,median_ns,share,grid,block,registers,smem,occupancy\n");
    for (int i = 0; i < a->n_kernel_names; i++) {
        const fa_ta_kernel *k = &a->kernels[i];
        char sh[256];
        fa_kernel_name_short(k->name, sh, sizeof sh);
        fa_escape_csv(b, sh, strlen(sh));
        fa_buf_puts(b, ",");
        fa_escape_csv(b, k->name, strlen(k->name));
        fa_buf_puts(b, ",");
        fa_escape_csv(b, k->full_name, strlen(k->full_name));
        fa_buf_printf(b, ",%s,", fa_kclass_name(k->cls));
        if (k->op) fa_escape_csv(b, k->op, strlen(k->op)); /* a cpu op's name from the trace */
        fa_buf_printf(b, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%.6f,%dx%dx%d,%dx%dx%d,%d,%d,",
                      k->count, k->total_ns, k->median_ns,
                      a->kernel_ns ? (double)k->total_ns / (double)a->kernel_ns : 0.0, k->grid[0], k->grid[1], k->grid[2],
                      k->block[0], k->block[1], k->block[2], k->registers, k->smem);
        if (k->occupancy >= 0) fa_buf_printf(b, "%.4f", k->occupancy);
        fa_buf_puts(b, "\n");
    }
}

void fa_rep_trace_summary_json(const fa_rep *r, const fa_trace_advice *a, fa_buf *b)
{
    fa_buf_printf(b, "{\"schema\":\"fuse-advise.trace-summary/1\",\"run_id\":%" PRId64 ",\"trace\":\"", r->run_id);
    if (r->run.model_path) fa_escape_json(b, r->run.model_path, strlen(r->run.model_path));
    fa_buf_puts(b, "\",\"advice\":");
    fa_trace_advice_json(a, b);
    fa_buf_puts(b, "}\n");
}

/* Chrome-trace JSON of the timeline window (ui.perfetto.dev): one track per device stream */
void fa_rep_trace_perfetto(const fa_rep *r, const fa_trace_advice *a, fa_buf *b)
{
    (void)r;
    fa_buf_puts(b, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    uint64_t t0 = a->n_window ? a->window[0].start_ns : 0;
    for (int i = 0; i < a->n_window; i++) {
        const fa_ta_wrec *w = &a->window[i];
        const char *nm = w->kernel >= 0 ? a->kernels[w->kernel].full_name : w->kind == FA_ACT_MEMCPY ? "Memcpy" : "Memset";
        fa_buf_printf(b, "%s{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"", i ? "," : "",
                      w->kernel >= 0 ? fa_kclass_name(a->kernels[w->kernel].cls) : "memory");
        fa_escape_json(b, nm, strlen(nm));
        fa_buf_printf(b, "\",\"pid\":%d,\"tid\":%" PRId64 ",\"ts\":%.3f,\"dur\":%.3f", w->device, w->stream,
                      (double)(w->start_ns - t0) / 1e3, (double)(w->end_ns - w->start_ns) / 1e3);
        if (w->opp >= 0) fa_buf_printf(b, ",\"args\":{\"opportunity\":%d}", w->opp + 1);
        fa_buf_puts(b, "}");
    }
    fa_buf_puts(b, "]}\n");
}
