/* reports/html — report.html: one self-contained file (inline CSS, SVG and a small sorting
 * script; nothing fetched from the network). Summary, roofline (Williams, Waterman, Patterson,
 * "Roofline", CACM 2009), timeline of the median iteration (baseline over fused), clusters,
 * why-not and per-op tables. Everything but sorting and hover works with JavaScript off. */
#include "reports-impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void h(fa_buf *b, const char *s)
{
    if (s) fa_escape_html(b, s, strlen(s));
}

static bool isnum(double v) { return v == v && v > -1e300 && v < 1e300; }

/* <td data-v=...>text</td> for sortable numeric cells; NAN shows "not measured". */
static void td_num(fa_buf *b, double v, const char *fmt, double scale)
{
    if (!isnum(v)) { fa_buf_puts(b, "<td class=\"na\" data-v=\"-1e300\">not measured</td>"); return; }
    fa_buf_printf(b, "<td class=\"num\" data-v=\"%.9g\">", v);
    fa_buf_printf(b, fmt, v * scale);
    fa_buf_puts(b, "</td>");
}

static void td_text(fa_buf *b, const char *s)
{
    fa_buf_puts(b, "<td>");
    h(b, s);
    fa_buf_puts(b, "</td>");
}

const char *const fa_rep_css =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}"
    "header{background:#1d2b3a;color:#fff;padding:14px 24px}header h1{margin:0;font-size:20px}"
    "header .sub{color:#b9c6d3;font-size:13px;margin-top:4px}"
    "main{padding:16px 24px;max-width:1280px}section{background:#fff;border:1px solid #dde2e8;border-radius:6px;"
    "padding:12px 16px;margin:0 0 16px}h2{font-size:16px;margin:0 0 10px}"
    ".cards{display:flex;flex-wrap:wrap;gap:10px}.card{border:1px solid #dde2e8;border-radius:6px;padding:8px 12px;"
    "min-width:170px;max-width:360px;background:#fbfcfd}.card .k{font-size:12px;color:#5b6675}.card .v{font-size:20px;font-weight:600}"
    ".card .d{font-size:12px;color:#5b6675}.good{color:#23803a}.bad{color:#b3261e}.na{color:#8a94a3;font-style:italic}"
    "table{border-collapse:collapse;width:100%;font-size:12.5px}th,td{border-bottom:1px solid #e6e9ee;padding:4px 6px;"
    "text-align:left;vertical-align:top}th{background:#eef1f5;position:sticky;top:0;user-select:none}html.js th{cursor:pointer}"
    "th[data-dir=asc]::after{content:' \\25B2'}th[data-dir=desc]::after{content:' \\25BC'}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    ".st-accepted{color:#23803a;font-weight:600}.st-refused,.st-rejected{color:#b3261e}"
    ".scroll{max-height:520px;overflow:auto}td.reason{min-width:240px;max-width:520px}"
    "details>summary{cursor:pointer}td details[open]>summary{margin-bottom:4px}p.verdict{font-size:15px;margin:10px 0 0}"
    "table.answer td{vertical-align:middle}table.answer tr.d-accepted td:first-child{font-weight:600}"
    ".filt input{position:absolute;opacity:0;width:1px;height:1px}.filt label{display:inline-block;border:1px solid #c9d0d9;"
    "border-radius:12px;padding:1px 9px;margin:0 4px 8px 0;cursor:pointer;font-size:12.5px}"
    ".filt input:checked+label{background:#1d2b3a;border-color:#1d2b3a;color:#fff}"
    ".filt input:focus-visible+label{outline:2px solid #4e79a7}"
    "#cf-accepted:checked~table tbody tr:not(.d-accepted),#cf-rejected:checked~table tbody tr:not(.d-rejected),"
    "#cf-refused:checked~table tbody tr:not(.d-refused),#cf-other:checked~table tbody tr:not(.d-other){display:none}"
    ".legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin:4px 0}svg.sw{margin-right:4px;vertical-align:-1px}"
    "svg text{font-family:Helvetica,Arial,sans-serif}h2.gap{margin-top:14px}"
    "pre.note{white-space:pre-wrap;background:#f3f5f8;padding:8px;border-radius:4px;margin:8px 0 0}"
    "code{background:#eef1f5;padding:0 3px;border-radius:3px}td .d{font-size:11px;color:#5b6675;margin-top:2px}";

const char *const fa_rep_js =
    "(function(){document.documentElement.classList.add('js');var ts=document.querySelectorAll('table.sortable');"
    "for(var t=0;t<ts.length;t++)(function(tb){var hs=tb.tHead?tb.tHead.rows[0].cells:[];"
    "for(var i=0;i<hs.length;i++)(function(th,col){th.addEventListener('click',function(){"
    "var body=tb.tBodies[0];if(!body)return;var rows=Array.prototype.slice.call(body.rows);"
    "var asc=th.getAttribute('data-dir')!=='asc';for(var j=0;j<hs.length;j++)hs[j].removeAttribute('data-dir');"
    "th.setAttribute('data-dir',asc?'asc':'desc');rows.sort(function(a,b){var x=a.cells[col],y=b.cells[col];"
    "if(!x||!y)return 0;var vx=x.getAttribute('data-v'),vy=y.getAttribute('data-v'),c;"
    "if(vx!==null&&vy!==null)c=parseFloat(vx)-parseFloat(vy);else c=x.textContent.localeCompare(y.textContent);"
    "return asc?c:-c;});for(var k=0;k<rows.length;k++)body.appendChild(rows[k]);});})(hs[i],i);})(ts[t]);})();";

void fa_rep_csp(fa_buf *b)
{
    char css[45], js[45];
    fa_sha256_base64(fa_rep_css, strlen(fa_rep_css), css);
    fa_sha256_base64(fa_rep_js, strlen(fa_rep_js), js);
    fa_buf_printf(b, "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'sha256-%s'; "
                     "script-src 'sha256-%s'; img-src data:\">", css, js);
}

void fa_rep_swatch(fa_buf *b, const char *color)
{
    fa_buf_printf(b, "<svg class=\"sw\" width=\"10\" height=\"10\" aria-hidden=\"true\"><rect width=\"10\" height=\"10\" "
                     "rx=\"2\" fill=\"%s\"/></svg>", color);
}

/* Op-type colours: the 12 op types with the most baseline time get distinct colours (Tableau 10
 * + 2), in order of time; the rest (and fused-only op types beyond 12) are grey. */
#define PAL_N 12
typedef struct palette {
    int n;
    const char *op[64];
    double t[64];
} palette;

static const char *const k_pal[PAL_N] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                         "#b07aa1", "#ff9da7", "#9c755f", "#2f6f8f", "#8cd17d", "#d37295"};

static void pal_add(palette *p, const char *op, double t)
{
    if (!op) op = "";
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->op[i], op)) { p->t[i] += t; return; }
    if (p->n < 64) { p->op[p->n] = op; p->t[p->n] = t; p->n++; }
}

static void pal_build(const fa_rep *r, palette *p)
{
    memset(p, 0, sizeof *p);
    /* imported traces have no op type: their kernels are coloured by name */
    for (size_t i = 0; i < r->n_ops; i++)
        pal_add(p, r->ops[i].op_type ? r->ops[i].op_type : r->ops[i].node_name, (double)r->ops[i].median_ns);
    for (size_t i = 0; i < r->n_fused_ops; i++)
        pal_add(p, r->fused_ops[i].op_type ? r->fused_ops[i].op_type : r->fused_ops[i].node_name,
                1e-9 * (double)r->fused_ops[i].median_ns);
    /* stable sort by time, descending */
    for (int i = 1; i < p->n; i++)
        for (int j = i; j > 0 && p->t[j] > p->t[j - 1]; j--) {
            const char *o = p->op[j]; p->op[j] = p->op[j - 1]; p->op[j - 1] = o;
            double t = p->t[j]; p->t[j] = p->t[j - 1]; p->t[j - 1] = t;
        }
}

static const char *op_color(const palette *p, const char *op)
{
    if (!op) op = "";
    for (int i = 0; i < p->n && i < PAL_N; i++)
        if (!strcmp(p->op[i], op)) return k_pal[i];
    return "#a0a7b0";
}

static void legend(const palette *p, fa_buf *b)
{
    fa_buf_puts(b, "<div class=\"legend\">");
    for (int i = 0; i < p->n && i < PAL_N; i++) {
        fa_buf_puts(b, "<span>");
        fa_rep_swatch(b, k_pal[i]);
        if (*p->op[i]) fa_escape_html(b, p->op[i], strlen(p->op[i]));
        else fa_buf_puts(b, "(no op type)");
        fa_buf_puts(b, "</span>");
    }
    if (p->n > PAL_N) {
        fa_buf_puts(b, "<span>");
        fa_rep_swatch(b, "#a0a7b0");
        fa_buf_puts(b, "other ops</span>");
    }
    fa_buf_puts(b, "</div>");
}

/* A summary card. figure (may be NULL): the summary.json key it shows, with its value in
 * data-value (ns, a count) so a reader can check that the two agree. */
static void card_fig2(fa_buf *b, const char *k, const char *v, const char *cls, const char *detail, const char *figure,
                      double value, const char *figure2, double value2)
{
    fa_buf_puts(b, "<div class=\"card\"");
    if (figure && isnum(value)) fa_buf_printf(b, " data-figure=\"%s\" data-value=\"%.9g\"", figure, value);
    if (figure2 && isnum(value2)) fa_buf_printf(b, " data-figure2=\"%s\" data-value2=\"%.9g\"", figure2, value2);
    fa_buf_puts(b, "><div class=\"k\">");
    h(b, k);
    fa_buf_printf(b, "</div><div class=\"v %s\">", cls ? cls : "");
    h(b, v);
    fa_buf_puts(b, "</div>");
    if (detail) { fa_buf_puts(b, "<div class=\"d\">"); h(b, detail); fa_buf_puts(b, "</div>"); }
    fa_buf_puts(b, "</div>");
}

static void card_fig(fa_buf *b, const char *k, const char *v, const char *cls, const char *detail, const char *figure,
                     double value)
{
    card_fig2(b, k, v, cls, detail, figure, value, NULL, NAN);
}

static void card(fa_buf *b, const char *k, const char *v, const char *cls, const char *detail)
{
    card_fig(b, k, v, cls, detail, NULL, NAN);
}

/* One side's latency card: the figure every surface shows (benchmark median, else the traced
 * iteration median), which measurement it is, and the other measurement beside it. */
static void latency_card(const fa_rep *r, fa_buf *b, bool fused)
{
    const fa_run_figures *f = &r->fig;
    const char *what;
    double v = fa_run_figures_latency(f, fused, &what);
    const fa_sample_stats *bs = fused ? &f->bench_fused : &f->bench_baseline;
    double traced = fused ? f->fused_traced_iter_ns : f->traced_iter_ns;
    int n_traced = fused ? f->fused_traced_iters : f->traced_iters;
    char val[48], d[320], x[48], t[48];
    fa_rep_fmt_ns(val, sizeof val, isnum(v) ? v : -1);
    if (!what) snprintf(d, sizeof d, fused ? "no fused benchmark or fused run stored" : "no timed iteration stored");
    else if (bs->n) {
        fa_rep_fmt_ns(x, sizeof x, bs->p75_ns - bs->p25_ns);
        int len = snprintf(d, sizeof d, "benchmark median of %d interleaved rounds, IQR %s", bs->n, x);
        if (isnum(traced) && len > 0 && (size_t)len < sizeof d) {
            fa_rep_fmt_ns(t, sizeof t, traced);
            snprintf(d + len, sizeof d - (size_t)len, "; traced iteration: %s (median of %d, under the collector)", t, n_traced);
        }
    } else snprintf(d, sizeof d, "traced iteration median over %d iterations (first kernel start to last kernel end); no "
                    "end-to-end benchmark stored", n_traced);
    card_fig(b, fused ? "Fused latency / iteration" : "Baseline latency / iteration", val, what ? NULL : "na", d,
             fused ? "fused.median_ns" : "baseline.median_ns", v);
}

static void summary(const fa_rep *r, fa_buf *b)
{
    const fa_run_figures *f = &r->fig;
    char v[96], d[320], x[64];
    fa_buf_puts(b, "<section id=\"summary\"><h2>Summary</h2><div class=\"cards\">");
    latency_card(r, b, false);
    latency_card(r, b, true);
    const char *wb, *wf;
    double lb = fa_run_figures_latency(f, false, &wb), lf = fa_run_figures_latency(f, true, &wf);
    if (wb && wf && !strcmp(wb, wf) && lf > 0) {
        double sp = lb / lf;
        snprintf(v, sizeof v, "%.3fx", sp);
        double sv = lb - lf;
        fa_rep_fmt_ns(x, sizeof x, sv >= 0 ? sv : -sv);
        bool same = r->plan_id && f->n_accepted == 0 && f->reorders_fused == 0;
        if (same) /* the "fused" model is the baseline: the difference is noise */
            snprintf(d, sizeof d, "no cluster accepted: the fused model is the unfused one, so this %s %s is measurement noise",
                     sv >= 0 ? "saving of" : "loss of", x);
        else if (r->plan_id && f->n_accepted == 0)
            snprintf(d, sizeof d, "no cluster accepted: the fused model differs from the unfused one by its blocked layouts "
                     "only (%d reorder kernels per iteration); %s %s per iteration (%ss)", f->reorders_fused,
                     sv >= 0 ? "saves" : "costs", x, wb);
        else if (r->e2e_verdict == FA_E2E_LOSS) /* medians may differ either way inside the noise */
            snprintf(d, sizeof d, "%s %s per iteration (%ss), not measurably faster: a loss end to end", sv >= 0 ? "saves" : "costs",
                     x, wb);
        else snprintf(d, sizeof d, "%s %s per iteration (%ss)", sv >= 0 ? "saves" : "costs", x, wb);
        if (r->e2e_verdict == FA_E2E_MISMATCH)
            snprintf(d, sizeof d, "not a speedup: the fused model's outputs differ from the unfused model's");
        card_fig(b, "Speedup", v,
                 same ? "na" : r->e2e_verdict == FA_E2E_LOSS || r->e2e_verdict == FA_E2E_MISMATCH ? "bad" : sp > 1 ? "good" : sp < 1 ? "bad" : NULL,
                 d, "speedup", sp);
    } else card(b, "Speedup", "not measured", "na", "needs baseline and fused measurements of the same kind");
    if (r->e2e_verdict == FA_E2E_MISMATCH) {
        char mm[200];
        snprintf(mm, sizeof mm, "the fused model's outputs differ from the unfused model's (max relative error %.3g): "
                 "not deployable, no speedup claimed", r->e2e_max_rel_error);
        card(b, "End-to-end verdict", "MISMATCH", "bad", mm);
    } else if (r->e2e_verdict == FA_E2E_LOSS)
        card(b, "End-to-end verdict", "LOSS", "bad",
             "with the clusters kept the fused model is not measurably faster than the baseline, even after the back-off "
             "dropped the smallest savings: deploy the baseline");
    else if (r->e2e_verdict == FA_E2E_WIN)
        card(b, "End-to-end verdict", "win", "good",
             fa_run_figures_noisy(f) ? "the fused model measured faster than the baseline (paired samples), on noisy timings: "
                                       "not reliable on this machine; run on a quiet one for figures you keep"
                                     : "the fused model is measurably faster than the baseline (paired samples)");
    else if (r->e2e_verdict == FA_E2E_NO_CLUSTERS)
        card(b, "End-to-end verdict", "no cluster kept", "na", "the fused model is the baseline");
    fa_rep_fmt_bytes(v, sizeof v, r->run.peak_activation_bytes ? (double)r->run.peak_activation_bytes : -1);
    fa_rep_fmt_bytes(x, sizeof x,
                     r->have_fused_run && r->fused_run.peak_activation_bytes ? (double)r->fused_run.peak_activation_bytes : -1);
    snprintf(d, sizeof d, "fused: %s", x);
    card(b, "Peak activations (baseline)", v, r->run.peak_activation_bytes ? NULL : "na", d);
    if (f->kernels_baseline >= 0) snprintf(v, sizeof v, "%d", f->kernels_baseline);
    else snprintf(v, sizeof v, "not measured");
    char kf[128]; /* "not measured" when kernels_fused < 0 */
    fa_run_figures_fused_kernels_text(f, kf, sizeof kf);
    snprintf(d, sizeof d, "fused: %s%s", kf, f->kernels_fused >= 0 ? "; kernel records in a traced iteration" : "");
    card_fig2(b, "Kernels / iteration", v, NULL, d, "kernels_per_iteration.baseline", f->kernels_baseline >= 0 ? f->kernels_baseline : NAN,
              "kernels_per_iteration.fused", f->kernels_fused >= 0 ? f->kernels_fused : NAN);
    if (r->plan_id > 0 && f->n_accepted > 0) {
        char pm[48];
        fa_rep_fmt_ns(v, sizeof v, f->measured_saving_ns);
        fa_rep_fmt_ns(pm, sizeof pm, f->predicted_saving_ns);
        snprintf(d, sizeof d, "end to end, benchmark medians; the %d accepted clusters predicted %s", f->n_accepted, pm);
        card_fig2(b, "Measured saving / iteration", v, isnum(f->measured_saving_ns) ? NULL : "na", d, "measured_saving_ns",
                  f->measured_saving_ns, "predicted_saving_ns", f->predicted_saving_ns);
    }
    if (r->plan_id > 0) {
        snprintf(v, sizeof v, "%d accepted", f->n_accepted);
        snprintf(d, sizeof d, "%d rejected by measurement, %d refused by the advisor, %d not tried; plan %d",
                 f->n_rejected, f->n_refused, f->n_other, r->plan_id);
        card(b, "Clusters", v, f->n_accepted ? "good" : NULL, d);
    } else card(b, "Clusters", "no plan", "na", "run `fuse-advise advise` to get fusion clusters");
    fa_buf_puts(b, "</div>");
    /* ceilings */
    fa_buf_puts(b, "<h2 class=\"gap\">Device and ceilings</h2><table><tbody>");
    fa_buf_puts(b, "<tr><th>device</th><td>");
    h(b, r->run.device_name ? r->run.device_name : "unknown");
    if (r->run.target) {
        fa_buf_puts(b, " (target ");
        h(b, r->run.target);
        fa_buf_printf(b, ", %d threads)</td></tr>", r->run.threads);
    } else fa_buf_puts(b, " (imported trace)</td></tr>");
    if (r->have_ceil) {
        fa_buf_printf(b, "<tr><th>memory bandwidth</th><td>%.1f GB/s (", r->ceil.mem_bw_gbs);
        h(b, r->ceil.mem_bw_source);
        fa_buf_puts(b, ")</td></tr>");
        fa_buf_printf(b, "<tr><th>FP32 peak</th><td>%.1f GFLOP/s (", r->ceil.peak_gflops);
        h(b, r->ceil.peak_source);
        fa_buf_printf(b, "); ridge point %.2f FLOP/byte", r->ceil.peak_gflops / r->ceil.mem_bw_gbs);
        char age[96];
        fa_rep_fmt_age(age, sizeof age, r->ceil_peak_at_ns, r->run.started_at_ns);
        if (*age) fa_buf_printf(b, "; measured %s", age);
        if (r->ceil_load >= 0) fa_buf_printf(b, " at a load of %.2f (1-minute average)", r->ceil_load);
        fa_buf_puts(b, "</td></tr>");
        if (r->n_above_peak) { /* the roofline cannot be believed on its own terms: say so */
            fa_buf_printf(b, "<tr><th>warning</th><td class=\"bad\">%d op%s ran above this FP32 peak (", r->n_above_peak,
                          r->n_above_peak == 1 ? "" : "s");
            h(b, r->above_peak_node ? r->above_peak_node : "?");
            fa_buf_printf(b, " at %.0f%% of it): the peak was measured at a busy moment, so the roofline's compute roof "
                             "is too low; re-measure on a quiet machine: <code>fuse-advise devices --measure</code></td></tr>",
                          100 * r->max_above_peak);
        }
        if (r->ceil.launch_ns > 0) {
            fa_buf_printf(b, "<tr><th>dispatch per kernel</th><td>%.0f ns (", r->ceil.launch_ns);
            h(b, r->ceil.launch_source);
            fa_buf_puts(b, ")</td></tr>");
        }
        fa_buf_puts(b, "<tr><th>ceilings key</th><td><code>");
        h(b, r->ceil_key);
        fa_buf_puts(b, "</code></td></tr>");
    } else {
        fa_buf_puts(b, "<tr><th>ceilings</th><td class=\"na\">not measured for this device (run <code>fuse-advise analyze</code>)"
                       "</td></tr>");
    }
    fa_buf_puts(b, "<tr><th>model</th><td>");
    h(b, r->run.model_path);
    fa_buf_printf(b, "</td></tr><tr><th>run</th><td>%" PRId64 " (", r->run_id);
    h(b, r->run.kind);
    fa_buf_puts(b, ", <span data-figure=\"status\">");
    h(b, r->run.status);
    fa_buf_puts(b, "</span>");
    if (r->have_fused_run) fa_buf_printf(b, "; fused run %" PRId64, r->fused_run_id);
    fa_buf_puts(b, ")</td></tr>");
    if (r->run.command_line) {
        fa_buf_puts(b, "<tr><th>command</th><td><code>");
        h(b, r->run.command_line);
        fa_buf_puts(b, "</code></td></tr>");
    }
    fa_buf_puts(b, "</tbody></table>");
    if (r->analysis_text) {
        fa_buf_puts(b, "<pre class=\"note\">");
        h(b, r->analysis_text);
        fa_buf_puts(b, "</pre>");
    } else if (!r->have_analysis) {
        fa_buf_puts(b, "<p class=\"na\">No analysis stored for this run (chains, intermediate traffic): not measured.</p>");
    }
    fa_buf_puts(b, "</section>\n");
}

/* ---- roofline ---- */

typedef struct rl_axis { double lo, hi; double x0, x1; } rl_axis; /* log10 range -> pixels */
static double rl_map(const rl_axis *a, double v)
{
    double l = log10(v);
    return a->x0 + (l - a->lo) / (a->hi - a->lo) * (a->x1 - a->x0);
}

static void tick_label(char *buf, size_t cap, int e)
{
    if (e >= -2 && e <= 4) snprintf(buf, cap, "%g", pow(10, e));
    else snprintf(buf, cap, "1e%d", e);
}

static void roofline(const fa_rep *r, fa_buf *b, const palette *pal)
{
    const double W = 820, H = 460, L = 74, R = 24, T = 16, B = 52;
    double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0, tmax = 0;
    int n_pts = 0, n_zero = 0;
    for (int i = 0; i < r->n_nodes; i++) {
        const fa_rep_node *n = &r->nodes[i];
        if (!n->name || n->folded || n->median_ns <= 0) continue;
        if (!n->flops || !n->bytes) { n_zero++; continue; }
        double x = (double)n->flops / (double)n->bytes, y = n->flops / (double)n->median_ns;
        if (x < xmin) xmin = x;
        if (x > xmax) xmax = x;
        if (y < ymin) ymin = y;
        if (y > ymax) ymax = y;
        if (n->median_ns > tmax) tmax = (double)n->median_ns;
        n_pts++;
    }
    for (int ci = 0; ci < r->n_clusters; ci++) {
        const fa_rep_cluster *c = &r->clusters[ci];
        if (!c->accepted || !c->flops || !c->ext_bytes || !isnum(c->fused_ns) || c->fused_ns <= 0) continue;
        double x = (double)c->flops / (double)c->ext_bytes, y = c->flops / c->fused_ns;
        if (x < xmin) xmin = x;
        if (x > xmax) xmax = x;
        if (y < ymin) ymin = y;
        if (y > ymax) ymax = y;
    }
    fa_buf_puts(b, "<section id=\"roofline\"><h2>Roofline</h2>");
    if (n_pts == 0) {
        fa_buf_puts(b, "<p class=\"na\">No kernel with both FLOPs and bytes was measured: nothing to place.</p></section>\n");
        return;
    }
    if (r->have_ceil) {
        double ridge = r->ceil.peak_gflops / r->ceil.mem_bw_gbs;
        if (ridge * 4 > xmax) xmax = ridge * 4;
        if (ridge / 4 < xmin) xmin = ridge / 4;
        if (r->ceil.peak_gflops * 2 > ymax) ymax = r->ceil.peak_gflops * 2;
    }
    rl_axis ax = {floor(log10(xmin)), ceil(log10(xmax)), L, W - R};
    rl_axis ay = {floor(log10(ymin)), ceil(log10(ymax)), H - B, T};
    if (ax.hi <= ax.lo) ax.hi = ax.lo + 1;
    if (ay.hi <= ay.lo) ay.hi = ay.lo + 1;
    fa_buf_printf(b, "<svg id=\"roofline-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                     "viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"roofline chart\">",
                  W, H, W, H);
    fa_buf_puts(b, "<defs><marker id=\"arr\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
                   "orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#23803a\"/></marker></defs>");
    fa_buf_printf(b, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fff\" stroke=\"#c8ced6\"/>", L, T,
                  W - R - L, H - B - T);
    char tl[32];
    for (int e = (int)ax.lo; e <= (int)ax.hi; e++) {
        double px = rl_map(&ax, pow(10, e));
        tick_label(tl, sizeof tl, e);
        fa_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#eceff3\"/>"
                         "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\" fill=\"#5b6675\">%s</text>",
                      px, T, px, H - B, px, H - B + 16, tl);
    }
    for (int e = (int)ay.lo; e <= (int)ay.hi; e++) {
        double py = rl_map(&ay, pow(10, e));
        tick_label(tl, sizeof tl, e);
        fa_buf_printf(b, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#eceff3\"/>"
                         "<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" fill=\"#5b6675\">%s</text>",
                      L, py, W - R, py, L - 6, py + 4, tl);
    }
    fa_buf_printf(b, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte, "
                     "log)</text>", (L + W - R) / 2, H - 12);
    fa_buf_printf(b, "<text transform=\"translate(16,%.0f) rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">achieved "
                     "GFLOP/s (log)</text>", (T + H - B) / 2);
    if (r->have_ceil) {
        double bw = r->ceil.mem_bw_gbs, pk = r->ceil.peak_gflops, ridge = pk / bw;
        double xa = pow(10, ax.lo), xb = pow(10, ax.hi), ylo = pow(10, ay.lo);
        double xs = xa * bw < ylo ? ylo / bw : xa; /* memory roof enters the plot */
        fa_buf_printf(b, "<polyline fill=\"none\" stroke=\"#1d2b3a\" stroke-width=\"2\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\">"
                         "<title>memory roof %.1f GB/s, compute roof %.1f GFLOP/s, ridge %.2f FLOP/byte</title></polyline>",
                      rl_map(&ax, xs), rl_map(&ay, xs * bw), rl_map(&ax, ridge), rl_map(&ay, pk), rl_map(&ax, xb),
                      rl_map(&ay, pk), bw, pk, ridge);
        fa_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#1d2b3a\">compute roof %.0f GFLOP/s (",
                      rl_map(&ax, ridge) + 6, rl_map(&ay, pk) - 6, pk);
        h(b, r->ceil.peak_source);
        fa_buf_puts(b, ")</text>");
        double xm = sqrt(xs * ridge);
        fa_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#1d2b3a\" text-anchor=\"end\">memory roof %.1f GB/s (",
                      rl_map(&ax, xm) - 4, rl_map(&ay, xm * bw) - 8, bw);
        h(b, r->ceil.mem_bw_source);
        fa_buf_puts(b, ")</text>");
        /* the measured cache levels' roofs, dashed: bandwidth x intensity up to the compute roof */
        for (int k = 0; k < r->ceil.n_cache_levels; k++) {
            const fa_cache_level *cl = &r->ceil.cache[k];
            double cbw = cl->bandwidth_gbs, cridge = pk / cbw;
            if (!(cbw > bw) || cridge <= xa) continue; /* no roof above main memory's inside the plot */
            double cxs = xa * cbw < ylo ? ylo / cbw : xa;
            char ws[48];
            fa_rep_fmt_bytes(ws, sizeof ws, (double)cl->working_set);
            fa_buf_printf(b, "<polyline fill=\"none\" stroke=\"#6b7a8c\" stroke-width=\"1.2\" stroke-dasharray=\"5,4\" "
                             "points=\"%.1f,%.1f %.1f,%.1f\"><title>", rl_map(&ax, cxs), rl_map(&ay, cxs * cbw),
                          rl_map(&ax, cridge), rl_map(&ay, pk));
            h(b, cl->name ? cl->name : "cache");
            fa_buf_printf(b, " roof %.1f GB/s (measured read bandwidth at a %s working set)</title></polyline>", cbw, ws);
            fa_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#6b7a8c\" text-anchor=\"end\">",
                          rl_map(&ax, cridge) - 4, rl_map(&ay, pk) + 12 + 11 * k);
            h(b, cl->name ? cl->name : "cache");
            fa_buf_printf(b, " roof %.0f GB/s</text>", cbw);
        }
    }
    /* baseline kernels */
    char tb[48];
    for (int i = 0; i < r->n_nodes; i++) {
        const fa_rep_node *n = &r->nodes[i];
        if (!n->name || n->folded || n->median_ns <= 0 || !n->flops || !n->bytes) continue;
        double x = (double)n->flops / (double)n->bytes, y = n->flops / (double)n->median_ns;
        double rad = 3 + 11 * sqrt(n->median_ns / tmax);
        fa_rep_fmt_ns(tb, sizeof tb, (double)n->median_ns);
        fa_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" fill-opacity=\"0.55\" stroke=\"%s\">"
                         "<title>", rl_map(&ax, x), rl_map(&ay, y), rad, op_color(pal, n->op_type), op_color(pal, n->op_type));
        h(b, n->name);
        fa_buf_puts(b, " (");
        h(b, n->op_type);
        fa_buf_printf(b, "): %s, %.3g FLOP/byte, %.3g GFLOP/s, %.3g GB/s", tb, x, y, n->bytes / (double)n->median_ns);
        if (n->bound) { fa_buf_puts(b, ", "); h(b, n->bound); fa_buf_puts(b, "-bound"); }
        fa_buf_puts(b, "</title></circle>");
    }
    /* accepted clusters: arrow from the unfused combined point to the fused kernel */
    int n_arrows = 0;
    for (int ci = 0; ci < r->n_clusters; ci++) {
        const fa_rep_cluster *c = &r->clusters[ci];
        if (!c->accepted || !c->flops || !c->ext_bytes || !isnum(c->fused_ns) || c->fused_ns <= 0) continue;
        uint64_t all_bytes = 0;
        for (int m = 0; m < c->p->n_members; m++)
            if (c->p->members[m] >= 0 && c->p->members[m] < r->n_nodes) all_bytes += r->nodes[c->p->members[m]].bytes;
        double fx = (double)c->flops / (double)c->ext_bytes, fy = c->flops / c->fused_ns;
        double px = rl_map(&ax, fx), py = rl_map(&ay, fy);
        if (c->unfused_ns > 0 && all_bytes) {
            double ux = (double)c->flops / (double)all_bytes, uy = c->flops / (double)c->unfused_ns;
            if (ux >= pow(10, ax.lo) && uy >= pow(10, ay.lo)) {
                fa_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#23803a\" stroke-width=\"1.5\" "
                                 "marker-end=\"url(#arr)\"><title>cluster %d: unfused members (%.3g FLOP/byte, %.3g GFLOP/s) "
                                 "to fused kernel</title></line>",
                              rl_map(&ax, ux), rl_map(&ay, uy), px, py, c->p->id, ux, uy);
                fa_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"none\" stroke=\"#23803a\"/>", rl_map(&ax, ux),
                              rl_map(&ay, uy));
            }
        }
        fa_rep_fmt_ns(tb, sizeof tb, c->fused_ns);
        fa_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" transform=\"rotate(45 %.1f %.1f)\" fill=\"#23803a\">"
                         "<title>fused cluster %d ", px - 4.5, py - 4.5, px, py, c->p->id);
        h(b, c->p->label ? c->p->label : fa_cluster_kind_name(c->p->kind));
        if (c->fused_name) { fa_buf_puts(b, " = "); h(b, c->fused_name); }
        fa_buf_printf(b, ": %s (", tb);
        h(b, c->fused_source);
        fa_buf_printf(b, "), %.3g FLOP/byte, %.3g GFLOP/s</title></rect>", fx, fy);
        n_arrows++;
    }
    fa_buf_puts(b, "</svg>");
    legend(pal, b);
    fa_buf_printf(b, "<p>Each circle is one baseline kernel (area by median time, color by op type); %d kernels placed", n_pts);
    if (n_zero) fa_buf_printf(b, ", %d without FLOPs or bytes (data movement only) not drawn on the log axes", n_zero);
    fa_buf_printf(b, ". Green diamonds are accepted fused kernels (%d); an arrow starts at the cluster's unfused members "
                     "combined (sum of FLOPs over sum of the members' bytes, at the sum of their times) and ends at the fused "
                     "kernel (sum of FLOPs over the cluster's external traffic, at the fused time).", n_arrows);
    if (!r->have_ceil) fa_buf_puts(b, " <span class=\"na\">Roofs: device ceilings not measured.</span>");
    if (r->n_accepted && n_arrows == 0) fa_buf_puts(b, " <span class=\"na\">Fused kernel times: not measured.</span>");
    fa_buf_puts(b, "</p></section>\n");
}

/* ---- timeline ---- */

/* The timed iteration of t whose span is closest to want_ns (the card's figure); the median-span
 * iteration when want_ns is unknown. *span_ns its span. -1 when t has none. */
static int pick_iter(const fa_rep_trace *t, double want_ns, int64_t *span_ns)
{
    if (t->median_iter < 0) return -1;
    if (!isnum(want_ns)) {
        *span_ns = t->median_span_ns;
        return t->median_iter;
    }
    int max_iter = -1;
    for (int i = 0; i < t->n; i++)
        if (t->k[i].iter > max_iter) max_iter = t->k[i].iter;
    int64_t *lo = malloc(sizeof *lo * (size_t)(max_iter + 1)), *hi = malloc(sizeof *hi * (size_t)(max_iter + 1));
    if (!lo || !hi) {
        free(lo);
        free(hi);
        *span_ns = t->median_span_ns;
        return t->median_iter;
    }
    for (int i = 0; i <= max_iter; i++) { lo[i] = INT64_MAX; hi[i] = INT64_MIN; }
    for (int i = 0; i < t->n; i++) {
        const fa_rep_kernel *k = &t->k[i];
        if (k->iter < 0) continue;
        if (k->start_ns < lo[k->iter]) lo[k->iter] = k->start_ns;
        if (k->end_ns > hi[k->iter]) hi[k->iter] = k->end_ns;
    }
    int best = -1;
    double bd = 0;
    for (int i = 0; i <= max_iter; i++) {
        if (hi[i] < lo[i]) continue;
        double d = fabs((double)(hi[i] - lo[i]) - want_ns);
        if (best < 0 || d < bd) { best = i; bd = d; }
    }
    *span_ns = best >= 0 ? hi[best] - lo[best] : 0;
    free(lo);
    free(hi);
    return best;
}

static void lane(const fa_rep_trace *t, int iter, fa_buf *b, double y, double lane_h, double x0, double px_per_ns,
                 const palette *pal)
{
    int64_t lo = INT64_MAX;
    for (int i = 0; i < t->n; i++)
        if (t->k[i].iter == iter && t->k[i].start_ns < lo) lo = t->k[i].start_ns;
    char tb[48];
    for (int i = 0; i < t->n; i++) {
        const fa_rep_kernel *k = &t->k[i];
        if (k->iter != iter) continue;
        double x = x0 + (k->start_ns - lo) * px_per_ns, w = (k->end_ns - k->start_ns) * px_per_ns;
        if (w < 0.6) w = 0.6;
        const char *nm = k->node_name ? k->node_name : k->name;
        fa_rep_fmt_ns(tb, sizeof tb, (double)(k->end_ns - k->start_ns));
        fa_buf_printf(b, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.3\">"
                         "<title>", x, y, w, lane_h, op_color(pal, k->op_type ? k->op_type : nm));
        h(b, nm);
        fa_buf_puts(b, " (");
        h(b, k->op_type);
        fa_buf_printf(b, "): %s, %" PRIu64 " bytes, %" PRIu64 " FLOP</title></rect>", tb, k->bytes, k->flops);
        if (w > 46) {
            fa_buf_printf(b, "<svg x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\"><text x=\"3\" y=\"%.0f\" font-size=\"10\" "
                             "fill=\"#fff\">", x, y, w, lane_h, lane_h / 2 + 4);
            h(b, k->op_type ? k->op_type : nm);
            fa_buf_puts(b, "</text></svg>");
        }
    }
}

/* How far a drawn iteration may be from the card's figure and still be called representative. */
#define TIMELINE_MATCH 0.10

/* One lane's sentence: which iteration is drawn and how it relates to the card's figure. */
static void lane_note(fa_buf *b, const char *side, int iter, int n_iters, int64_t span, double card, const char *what)
{
    char ts[48], cs[48];
    fa_rep_fmt_ns(ts, sizeof ts, (double)span);
    fa_buf_printf(b, "%s: iteration %d of %d, %s", side, iter, n_iters, ts);
    if (!what) return;
    fa_rep_fmt_ns(cs, sizeof cs, card);
    if (fabs((double)span - card) <= TIMELINE_MATCH * card)
        fa_buf_printf(b, " (the traced iteration closest to the card's %s, %s)", what, cs);
    else
        fa_buf_printf(b, " (the closest the traced run came to the card's %s, %s: the trace was taken under the collector, at "
                         "another moment than the benchmark, and no iteration of it ran within %.0f%% of it)",
                      what, cs, TIMELINE_MATCH * 100);
}

static void timeline(const fa_rep *r, fa_buf *b, const palette *pal)
{
    const double W = 1000, x0 = 90, x1 = 985, lane_h = 30;
    fa_buf_puts(b, "<section id=\"timeline\"><h2>Timeline of one iteration</h2>");
    if (r->base.median_iter < 0) {
        fa_buf_puts(b, "<p class=\"na\">No timed iteration in the kernel trace: not measured.</p></section>\n");
        return;
    }
    const char *wb, *wf;
    double cb = fa_run_figures_latency(&r->fig, false, &wb), cf = fa_run_figures_latency(&r->fig, true, &wf);
    /* the fused model is the baseline (no cluster kept, no layout change): one lane, not two
     * traces of the same model that differ by noise */
    bool same = r->plan_id && r->fig.n_accepted == 0 && r->fig.reorders_fused == 0 && r->have_fused_run;
    bool fz = r->have_fused_run && r->fused.median_iter >= 0 && !same;
    int64_t sb = 0, sf = 0;
    int ib = pick_iter(&r->base, cb, &sb), ifz = fz ? pick_iter(&r->fused, cf, &sf) : -1;
    double span = (double)sb;
    if (fz && sf > span) span = (double)sf;
    if (span <= 0) span = 1;
    double ppn = (x1 - x0) / span, H = 130;
    fa_buf_printf(b, "<svg id=\"timeline-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f "
                     "%.0f\" role=\"img\" aria-label=\"timeline\">", W, H, W, H);
    char tb[48];
    fa_rep_fmt_ns(tb, sizeof tb, (double)sb);
    fa_buf_printf(b, "<text x=\"4\" y=\"32\" font-size=\"12\">baseline</text><text x=\"4\" y=\"46\" font-size=\"10\" "
                     "fill=\"#5b6675\">%s</text>", tb);
    lane(&r->base, ib, b, 18, lane_h, x0, ppn, pal);
    if (fz) {
        fa_rep_fmt_ns(tb, sizeof tb, (double)sf);
        fa_buf_printf(b, "<text x=\"4\" y=\"76\" font-size=\"12\">fused</text><text x=\"4\" y=\"90\" font-size=\"10\" "
                         "fill=\"#5b6675\">%s</text>", tb);
        lane(&r->fused, ifz, b, 62, lane_h, x0, ppn, pal);
    } else {
        fa_buf_printf(b, "<text x=\"4\" y=\"80\" font-size=\"12\">fused</text><text x=\"%.0f\" y=\"80\" font-size=\"12\" "
                         "fill=\"#8a94a3\" font-style=\"italic\">%s</text>", x0,
                      same ? "the same model as the baseline (no cluster kept, no layout changed): not drawn twice"
                           : "not measured (no fused run stored for this run)");
    }
    /* time axis */
    fa_buf_printf(b, "<line x1=\"%.0f\" y1=\"100\" x2=\"%.0f\" y2=\"100\" stroke=\"#8a94a3\"/>", x0, x1);
    for (int i = 0; i <= 5; i++) {
        double t = span * i / 5, px = x0 + t * ppn;
        fa_rep_fmt_ns(tb, sizeof tb, t);
        fa_buf_printf(b, "<line x1=\"%.1f\" y1=\"100\" x2=\"%.1f\" y2=\"104\" stroke=\"#8a94a3\"/><text x=\"%.1f\" y=\"118\" "
                         "font-size=\"10\" text-anchor=\"%s\" fill=\"#5b6675\">%s</text>",
                      px, px, px, i == 0 ? "start" : i == 5 ? "end" : "middle", tb);
    }
    fa_buf_puts(b, "</svg>");
    legend(pal, b);
    fa_buf_puts(b, "<p>One traced iteration of each run, on one time scale. ");
    lane_note(b, "Baseline", ib, r->base.n_iters, sb, cb, wb);
    if (fz) {
        fa_buf_puts(b, "; ");
        lane_note(b, "fused", ifz, r->fused.n_iters, sf, cf, wf);
    }
    fa_buf_puts(b, ". Hover a kernel for its node, op, time, bytes and FLOPs; <code>trace.json</code> holds every iteration "
                   "for ui.perfetto.dev.</p></section>\n");
}

/* ---- tables ---- */

/* A decision's filter class: one of ours, whatever the database holds (a status is never markup). */
static const char *decision_class(fa_cluster_status st)
{
    if (st == FA_CLUSTER_ACCEPTED) return "accepted";
    if (st == FA_CLUSTER_REFUSED) return "refused";
    if (fa_cluster_status_rejected(st)) return "rejected";
    return "other";
}

/* What applying a pattern takes, in the terms of its kind. */
static const char *kind_action(fa_cluster_kind k)
{
    switch (k) {
    case FA_CLUSTER_BN_FOLD: return "fold the BatchNormalization into the conv's weights and bias (model.folded.onnx holds it)";
    case FA_CLUSTER_EPILOGUE:
        return "run the ops after the conv/GEMM in its kernel: as library post-ops, or as generated code on each block of "
               "the GEMM's rows while it is in cache (a label ending '(generated epilogue: ...)'): one kernel";
    case FA_CLUSTER_ELEMWISE_CHAIN: return "one generated kernel for the elementwise chain: its intermediates stay in registers";
    case FA_CLUSTER_REDUCTION: return "one kernel per row: the reduction with its prologue and epilogue";
    case FA_CLUSTER_HORIZONTAL: return "one kernel that reads the shared input once";
    case FA_CLUSTER_ATTENTION: return "one FlashAttention-style kernel (scaled_dot_product_attention): the scores never written";
    default: return "";
    }
}

/* The first clause of a reason (to its first ';'), at most cap-1 bytes cut at a word. */
static void reason_head(char *buf, size_t cap, const char *reason)
{
    if (!reason) reason = "";
    size_t n = strcspn(reason, ";");
    if (n >= cap - 4) {
        n = cap - 4;
        while (n > 0 && reason[n] != ' ') n--;
        snprintf(buf, cap, "%.*s...", (int)n, reason);
    } else snprintf(buf, cap, "%.*s", (int)n, reason);
}

/* The clause of a verdict's reason that carries its decision ("... and faster: median 644.8 ->
 * 109.4 us", "no measured gain: ...", "slower"), else its first clause: the summary a row shows
 * before its reason is opened. */
static void reason_key(char *buf, size_t cap, const char *reason, fa_cluster_status st)
{
    const char *key = st == FA_CLUSTER_ACCEPTED                ? "faster"
                      : st == FA_CLUSTER_REJECTED_NO_GAIN      ? "no measured gain"
                      : st == FA_CLUSTER_REJECTED_REGRESSION   ? "slower"
                      : st == FA_CLUSTER_REJECTED_VERIFY       ? "differ"
                                                               : NULL;
    const char *at = reason && key ? strstr(reason, key) : NULL;
    if (at && strncmp(reason, "dropped by", 10)) {
        while (at > reason && !(at[-1] == ' ' && at - 1 > reason && at[-2] == ';')) at--; /* back to its clause's start */
        reason_head(buf, cap, at);
    } else reason_head(buf, cap, reason);
}

/* The answer first (issue 37): the plan's patterns ranked by measured saving — how many clusters,
 * how many kept, the saving and its share of the iteration, what was verified, what it takes —
 * then the end-to-end verdict in one sentence. */
static void answer(const fa_rep *r, fa_buf *b)
{
    const fa_run_figures *f = &r->fig;
    fa_buf_puts(b, "<section id=\"answer\"><h2>The answer: what to fuse</h2>");
    if (!r->plan) {
        fa_buf_puts(b, "<p class=\"na\">No fusion plan stored for this run (a <code>run --no-apply</code>, or an import): "
                       "run <code>fuse-advise apply</code> for one.</p></section>\n");
        return;
    }
    /* a plan for another target than the run's (advise --target cuda on a cpu run): its savings
     * are estimated for that device from its data sheet, not measured here (issue 40) */
    if (r->run.target && strcmp(fa_target_name(r->plan->opt.target), r->run.target)) {
        fa_buf_puts(b, "<p class=\"bad\">This plan is for <code>");
        h(b, fa_target_name(r->plan->opt.target));
        if (r->plan->opt.arch) fa_buf_puts(b, " "), h(b, r->plan->opt.arch);
        fa_buf_puts(b, "</code>, estimated from that GPU's data sheet with no device measured (each cluster's basis names "
                       "the part and the figures); its savings are not this ");
        h(b, r->run.target);
        fa_buf_puts(b, " run's and nothing of it was applied or measured here.</p>");
    }
    fa_plan_group *gs = malloc(sizeof *gs * (size_t)(r->plan->n_clusters + 1));
    int ng = gs ? fa_plan_groups(r->plan, r->verdicts, gs) : 0;
    const char *what;
    double base = fa_run_figures_latency(f, false, &what);
    int kept = 0;
    for (int i = 0; i < ng; i++) kept += gs[i].n_accepted > 0;
    if (!ng) fa_buf_puts(b, "<p>The plan has no clusters: nothing in this model could be fused (why-not below).</p>");
    else {
        if (kept)
            fa_buf_printf(b, "<p>The plan's patterns, ranked by the saving measured in this run; a pattern is <b>kept</b> when "
                             "its clusters were verified against the unfused ops and measured faster. Share: of the baseline "
                             "iteration (%s).</p>", what ? what : "not measured");
        else fa_buf_puts(b, "<p>No cluster was kept (verified and measured faster). The plan's patterns, best predicted first:</p>");
        fa_buf_puts(b, "<table class=\"answer\"><thead><tr><th>pattern</th><th>kind</th><th>kept</th><th>saving / iteration</th>"
                       "<th>share</th><th>verified</th><th>what it takes</th></tr></thead><tbody>");
        for (int i = 0; i < ng; i++) {
            const fa_plan_group *g = &gs[i];
            char t[48], why[160];
            bool own = g->n_accepted > g->n_inside;
            fa_buf_printf(b, "<tr class=\"d-%s\">", own || g->n_accepted ? "accepted" : decision_class(g->decision));
            td_text(b, g->label[0] ? g->label : fa_cluster_kind_name(g->kind));
            td_text(b, fa_cluster_kind_name(g->kind));
            fa_buf_printf(b, "<td class=\"num\">%d of %d</td>", g->n_accepted, g->n_clusters);
            if (own) {
                fa_rep_fmt_ns(t, sizeof t, g->measured_saving_ns);
                fa_buf_printf(b, "<td class=\"num\">%s</td>", t);
                if (base > 0) fa_buf_printf(b, "<td class=\"num\">%.1f%%</td>", 100.0 * g->measured_saving_ns / base);
                else fa_buf_puts(b, "<td class=\"na\">-</td>");
                char mix[96];
                fa_buf_printf(b, "<td>outputs within %.2g of the unfused ops%s%s%s</td>", g->max_rel_error,
                              g->n_inside ? "; BN folds inside" : "", *fa_plan_group_mix(g, mix, sizeof mix) ? " " : "", mix);
                td_text(b, kind_action(g->kind));
            } else if (g->n_accepted) {
                fa_buf_puts(b, "<td colspan=\"3\">folded into the kept epilogues above: their saving holds it</td>");
                td_text(b, kind_action(g->kind));
            } else {
                fa_rep_fmt_ns(t, sizeof t, fabs(g->best_predicted_ns));
                fa_plan_group_why(g, why, sizeof why);
                char mix[96];
                fa_buf_printf(b, "<td class=\"na\">%s %s</td><td></td><td colspan=\"2\">not kept: ",
                              g->best_predicted_ns < 0 ? "predicted a loss of" : "predicted", t);
                h(b, why);
                if (*fa_plan_group_mix(g, mix, sizeof mix)) fa_buf_printf(b, " %s", mix); /* our words and counts */
                fa_buf_puts(b, "</td>");
            }
            fa_buf_puts(b, "</tr>\n");
        }
        fa_buf_puts(b, "</tbody></table>");
    }
    free(gs);
    /* the end-to-end verdict, in one sentence with the figures it rests on */
    const fa_sample_stats *bb = &f->bench_baseline, *bf = &f->bench_fused;
    fa_buf_puts(b, "<p class=\"verdict\">End to end: ");
    if (r->e2e_verdict == FA_E2E_WIN) fa_buf_puts(b, "<b class=\"good\">a win</b>");
    else if (r->e2e_verdict == FA_E2E_LOSS) fa_buf_puts(b, "<b class=\"bad\">a loss</b>: deploy the baseline");
    else if (r->e2e_verdict == FA_E2E_MISMATCH) fa_buf_puts(b, "<b class=\"bad\">a mismatch</b>: not deployable, no speedup claimed");
    else if (r->e2e_verdict == FA_E2E_NO_CLUSTERS) fa_buf_puts(b, "<b>no cluster kept</b>: the fused model is the baseline");
    else fa_buf_puts(b, "<b>not applied</b>");
    if ((r->e2e_verdict == FA_E2E_WIN || r->e2e_verdict == FA_E2E_LOSS) && fa_run_figures_noisy(f))
        fa_buf_puts(b, ", on noisy timings (an IQR over 25 % of its median, or the traced baseline more than 25 % from the "
                       "benchmark): not reliable on this machine");
    if (bb->n && bf->n && bf->median_ns > 0) {
        char x[48], y[48];
        fa_rep_fmt_ns(x, sizeof x, bb->median_ns);
        fa_rep_fmt_ns(y, sizeof y, bf->median_ns);
        fa_buf_printf(b, ". Baseline %s, fused %s per iteration: %.3fx (benchmark medians of %d interleaved rounds)", x, y,
                      bb->median_ns / bf->median_ns, bb->n);
    }
    if (isnum(r->e2e_max_rel_error))
        fa_buf_printf(b, "; the fused model's outputs %s the unfused model's (max relative error %.2g)",
                      r->e2e_verdict == FA_E2E_MISMATCH ? "differ from" : "match", r->e2e_max_rel_error);
    fa_buf_puts(b, ".</p>");
    char lay[512]; /* the plan's layout: the sentence `run` prints, from the same stored value */
    fa_plan_layout_text(&r->plan->layout, lay, sizeof lay);
    if (lay[0]) {
        fa_buf_puts(b, "<p class=\"layout\" data-figure=\"plan.layout\">");
        h(b, lay);
        fa_buf_puts(b, ".</p>");
    }
    fa_buf_puts(b, "</section>\n");
}

static void clusters_table(const fa_rep *r, fa_buf *b)
{
    fa_buf_puts(b, "<section id=\"clusters\"><h2>Every cluster</h2>");
    if (r->plan_id <= 0) {
        fa_buf_puts(b, "<p class=\"na\">No fusion plan stored for this run: not measured.</p></section>\n");
        return;
    }
    if (r->n_clusters == 0) {
        fa_buf_puts(b, "<p>The plan has no clusters: nothing in this model could be fused (see why-not below).</p></section>\n");
        return;
    }
    /* columns only where some cluster has a value: the register/occupancy gate runs for cuda, the
     * score tensors exist for attention, cluster benchmarks where the applier ran */
    bool gate = false, score = false, bench = false;
    int nd[4] = {0}; /* accepted, rejected, refused, other */
    for (int ci = 0; ci < r->n_clusters; ci++) {
        const fa_rep_cluster *c = &r->clusters[ci];
        gate |= c->v->registers >= 0 || c->v->spill_bytes >= 0 || c->p->occupancy >= 0;
        score |= c->p->score_bytes > 0;
        bench |= c->unfused.n && c->fused.n;
        const char *dc = decision_class(c->v->status);
        nd[!strcmp(dc, "accepted") ? 0 : !strcmp(dc, "rejected") ? 1 : !strcmp(dc, "refused") ? 2 : 3]++;
    }
    /* filter by decision: radio buttons and the stylesheet's sibling rules, no script */
    fa_buf_printf(b, "<div class=\"filt\"><input type=\"radio\" name=\"cf\" id=\"cf-all\" checked><label for=\"cf-all\">all (%d)</label>"
                     "<input type=\"radio\" name=\"cf\" id=\"cf-accepted\"><label for=\"cf-accepted\">accepted (%d)</label>"
                     "<input type=\"radio\" name=\"cf\" id=\"cf-rejected\"><label for=\"cf-rejected\">rejected (%d)</label>"
                     "<input type=\"radio\" name=\"cf\" id=\"cf-refused\"><label for=\"cf-refused\">refused (%d)</label>"
                     "<input type=\"radio\" name=\"cf\" id=\"cf-other\"><label for=\"cf-other\">not tried (%d)</label>",
                  r->n_clusters, nd[0], nd[1], nd[2], nd[3]);
    fa_buf_puts(b, "<table class=\"sortable clusters\"><thead><tr><th>#</th><th>pattern</th><th>members</th>"
                   "<th>predicted (\xc2\xb5s)</th><th title=\"the cluster's unfused sub-graph and its fused kernel "
                   "benchmarked by themselves, interleaved: paired median\">measured alone (\xc2\xb5s)</th>"
                   "<th title=\"in each end-to-end round, the nodes the fused node replaces in the baseline's run less the "
                   "fused node (and the reorders of what it writes) in the fused model's run; the median over the rounds, "
                   "\xc2\xb1 the IQR of those differences. An accepted BN fold an epilogue absorbed has no node of its own "
                   "(its saving is in the epilogue's)\">in the model (\xc2\xb5s)</th><th>max rel. error</th>");
    if (bench) fa_buf_puts(b, "<th>cluster unfused / fused</th>");
    if (score)
        fa_buf_puts(b, "<th title=\"attention: the score tensors the unfused ops hold at once, which the fused kernel never "
                       "writes\">peak memory drop</th>");
    if (gate) fa_buf_puts(b, "<th>registers</th><th>spills (B)</th><th>occupancy</th>");
    fa_buf_puts(b, "<th>decision</th><th>reason</th></tr></thead><tbody>");
    for (int ci = 0; ci < r->n_clusters; ci++) {
        const fa_rep_cluster *c = &r->clusters[ci];
        const char *dc = decision_class(c->v->status);
        fa_buf_printf(b, "<tr class=\"d-%s\"><td class=\"num\" data-v=\"%d\">%d</td><td>", dc, c->p->id, c->p->id);
        h(b, c->p->label ? c->p->label : "");
        fa_buf_puts(b, "<div class=\"d\">");
        h(b, fa_cluster_kind_name(c->p->kind));
        fa_buf_printf(b, "</div></td><td data-v=\"%d\"><details><summary>%d op%s: ", c->p->n_members, c->p->n_members,
                      c->p->n_members == 1 ? "" : "s");
        h(b, c->p->n_members ? fa_rep_node_name(r, c->p->members[0]) : "");
        if (c->p->n_members > 1) fa_buf_puts(b, " \xe2\x80\xa6");
        fa_buf_puts(b, "</summary>");
        for (int m = 0; m < c->p->n_members; m++) {
            if (m) fa_buf_puts(b, "<br>");
            h(b, fa_rep_node_name(r, c->p->members[m]));
            int id = c->p->members[m];
            if (id >= 0 && id < r->n_nodes && r->nodes[id].op_type) {
                fa_buf_puts(b, " <small>(");
                h(b, r->nodes[id].op_type);
                fa_buf_puts(b, ")</small>");
            }
        }
        fa_buf_puts(b, "</details></td>");
        double est_us = c->p->est_saving_ns / 1e3;
        char spread[256]; /* the kind's past misses, or the probe's interval (issue 36; fa_cluster_spread_phrase) */
        fa_cluster_spread_phrase(c->p, spread, sizeof spread);
        if ((c->p->basis || spread[0]) && isnum(est_us)) { /* the prediction's basis (stored since schema v5) as a tooltip */
            fa_buf_printf(b, "<td class=\"num\" data-v=\"%.9g\" title=\"", est_us);
            h(b, c->p->basis ? c->p->basis : "");
            fa_buf_printf(b, "\">%.2f", est_us);
            h(b, spread);
            fa_buf_puts(b, "</td>");
        } else td_num(b, est_us, "%.2f", 1);
        bool measured = isnum(c->v->measured_saving_ns);
        if (measured) td_num(b, c->v->measured_saving_ns / 1e3, "%.2f", 1);
        else fa_buf_puts(b, "<td class=\"na\" data-v=\"-1e300\">\xe2\x80\x94</td>");
        if (isnum(c->v->inmodel_saving_ns)) /* stored once (clusters.inmodel_saving_us, schema v12) */
            fa_buf_printf(b, "<td class=\"num\" data-v=\"%.9g\" data-inmodel=\"%.9g\">%.2f <small>\xc2\xb1 %.2f</small></td>",
                          c->v->inmodel_saving_ns / 1e3, c->v->inmodel_saving_ns, c->v->inmodel_saving_ns / 1e3,
                          c->v->inmodel_spread_ns / 1e3);
        else fa_buf_puts(b, "<td class=\"na\" data-v=\"-1e300\">\xe2\x80\x94</td>");
        if (c->v->max_rel_error >= 0) td_num(b, c->v->max_rel_error, "%.2e", 1);
        else fa_buf_puts(b, "<td class=\"na\" data-v=\"-1e300\">\xe2\x80\x94</td>");
        if (bench) {
            if (c->unfused.n && c->fused.n) {
                char a[48], f[48];
                fa_rep_fmt_ns(a, sizeof a, c->unfused.median_ns);
                fa_rep_fmt_ns(f, sizeof f, c->fused.median_ns);
                fa_buf_printf(b, "<td class=\"num\" data-v=\"%.9g\">%s / %s</td>", c->unfused.median_ns - c->fused.median_ns, a, f);
            } else fa_buf_puts(b, "<td class=\"na\" data-v=\"-1e300\">\xe2\x80\x94</td>");
        }
        if (score) {
            if (c->p->score_bytes > 0) { /* stored by the advisor (clusters.score_bytes) */
                char sb[48];
                fa_rep_fmt_bytes(sb, sizeof sb, (double)c->p->score_bytes);
                fa_buf_printf(b, "<td class=\"num\" data-v=\"%lld\" title=\"score tensors never written\">%s</td>",
                              (long long)c->p->score_bytes, sb);
            } else fa_buf_puts(b, "<td class=\"na\" data-v=\"0\">\xe2\x80\x94</td>");
        }
        if (gate) {
            td_num(b, c->v->registers >= 0 ? c->v->registers : NAN, "%.0f", 1);
            td_num(b, c->v->spill_bytes >= 0 ? c->v->spill_bytes : NAN, "%.0f", 1);
            td_num(b, c->p->occupancy >= 0 ? c->p->occupancy : NAN, "%.0f%%", 100);
        }
        fa_buf_printf(b, "<td class=\"st-%s\">", dc);
        h(b, fa_cluster_status_name(c->v->status));
        fa_buf_puts(b, "</td><td class=\"reason\">");
        if (c->v->reason && *c->v->reason) {
            char head[140];
            reason_key(head, sizeof head, c->v->reason, c->v->status);
            fa_buf_puts(b, "<details><summary>");
            h(b, head);
            fa_buf_puts(b, "</summary>");
            h(b, c->v->reason);
            fa_buf_puts(b, "</details>");
        }
        fa_buf_puts(b, "</td></tr>\n");
    }
    fa_buf_puts(b, "</tbody></table></div></section>\n");
}

/* Calibration per cluster kind (issue 19): over the clusters the applier measured (accepted, no
 * gain, regression), the median of predicted / measured saving, the share predicted within
 * +-25% of the measured saving, and the count whose predicted sign is wrong, counted only over
 * the clusters whose measurement resolves a saving (fa_paired_saving_resolved: the paired
 * differences' confidence interval excludes 0, or their IQR is below the predicted magnitude);
 * the unresolved ones (within the run's own noise) are counted apart; then the same over the
 * accepted ones. bench/bench_calibration.sh prints the same figures over many models. */
static bool calib_measured(const fa_rep_cluster *c)
{
    return isnum(c->v->measured_saving_ns) && isnum(c->p->est_saving_ns) &&
           (c->v->status == FA_CLUSTER_ACCEPTED || c->v->status == FA_CLUSTER_REJECTED_NO_GAIN ||
            c->v->status == FA_CLUSTER_REJECTED_REGRESSION);
}

static void calib_row(const fa_rep *r, fa_buf *b, const char *kind, bool accepted_only, double *tmp)
{
    int n = 0, nres = 0, nr = 0, within = 0, wrong = 0;
    for (int i = 0; i < r->n_clusters; i++) {
        const fa_rep_cluster *c = &r->clusters[i];
        if (!calib_measured(c) || (kind && strcmp(fa_cluster_kind_name(c->p->kind), kind)) || (accepted_only && !c->accepted))
            continue;
        n++;
        double est = c->p->est_saving_ns, meas = c->v->measured_saving_ns;
        if (!fa_paired_saving_resolved(&c->paired, est)) continue;
        nres++;
        if (meas != 0) {
            tmp[nr++] = est / meas;
            if (fabs(est - meas) <= 0.25 * fabs(meas)) within++;
        }
        if ((est > 0) != (meas > 0)) wrong++;
    }
    if (!n) return;
    double med = fa_stats_median(tmp, (size_t)nr); /* core's convention; NAN when none */
    /* the term of the prediction that explains most of the resolved misses (outside +-25%) */
    int terms[FA_MISS_RATIO + 1] = {0}, misses = 0;
    for (int i = 0; i < r->n_clusters; i++) {
        const fa_rep_cluster *c = &r->clusters[i];
        if (!calib_measured(c) || (kind && strcmp(fa_cluster_kind_name(c->p->kind), kind)) || (accepted_only && !c->accepted))
            continue;
        double est = c->p->est_saving_ns, meas = c->v->measured_saving_ns;
        if (!fa_paired_saving_resolved(&c->paired, est) || fabs(est - meas) <= 0.25 * fabs(meas)) continue;
        misses++;
        terms[fa_cluster_miss_term(c->p, c->v)]++;
    }
    int top = FA_MISS_NONE;
    for (int t = FA_MISS_MEMBERS; t <= FA_MISS_RATIO; t++)
        if (terms[t] > 0 && (top == FA_MISS_NONE || terms[t] > terms[top])) top = t;
    fa_buf_puts(b, "<tr>");
    td_text(b, kind ? kind : "all");
    td_text(b, accepted_only ? "accepted" : "measured");
    fa_buf_printf(b, "<td class=\"num\">%d</td><td class=\"num\">%d</td><td class=\"num\">%d</td>", n, nres, n - nres);
    td_num(b, med, "%.2f", 1);
    if (nres)
        fa_buf_printf(b, "<td class=\"num\">%.0f%%</td><td class=\"num\">%d (%.0f%%)</td>", 100.0 * within / nres,
                      wrong, 100.0 * wrong / nres);
    else
        fa_buf_puts(b, "<td class=\"na\">none resolved</td><td class=\"na\">none resolved</td>");
    if (top != FA_MISS_NONE)
        fa_buf_printf(b, "<td>%s (%d of %d misses)</td></tr>\n", fa_miss_term_name((fa_miss_term)top), terms[top], misses);
    else
        fa_buf_printf(b, "<td class=\"na\">%s</td></tr>\n", misses ? "terms not stored" : "no miss");
}

static void calibration_table(const fa_rep *r, fa_buf *b)
{
    int n = 0;
    for (int i = 0; i < r->n_clusters; i++) n += calib_measured(&r->clusters[i]);
    fa_buf_puts(b, "<section id=\"calibration\"><h2>Calibration: predicted against measured saving</h2>");
    if (!n) {
        fa_buf_puts(b, "<p class=\"na\">No cluster of this run was measured: nothing to calibrate against.</p></section>\n");
        return;
    }
    double *tmp = malloc(sizeof(double) * (size_t)r->n_clusters);
    if (!tmp) {
        fa_buf_puts(b, "<p class=\"na\">out of memory</p></section>\n");
        return;
    }
    fa_buf_puts(b, "<p>Per cluster kind, over the clusters whose saving was measured: how many, how many of those "
                   "measurements resolve a saving (the paired unfused \xe2\x88\x92 fused differences have a "
                   "confidence interval that excludes 0, or an IQR smaller than the predicted saving) and how many do "
                   "not (the difference is within the run's own noise: it can neither confirm nor falsify the "
                   "prediction, so it is counted apart, not as a hit or a miss); over the resolved ones: the median of "
                   "predicted / measured, the share predicted within \xc2\xb1" "25% of the measured saving, and how "
                   "many had the wrong sign (a saving predicted, a loss measured, or the reverse). Targets: "
                   "\xe2\x89\xa5" "80% of accepted clusters within \xc2\xb1" "25%, under 5% with the wrong sign. The term missing "
                   "most: over the resolved clusters outside \xc2\xb1" "25%, the term of the prediction whose error "
                   "explains most of the miss (members: the members' time moved between the profile and the benchmark; "
                   "dispatch: the launch/dispatch term; fused: the fused kernel's predicted time; ratio: the probe's "
                   "fused/unfused ratio), the commonest with its count.</p>");
    fa_buf_puts(b, "<table><thead><tr><th>kind</th><th>clusters</th><th>n</th><th>resolved</th><th>unresolved</th>"
                   "<th>median predicted / measured</th><th>within \xc2\xb1" "25%</th><th>wrong sign</th>"
                   "<th>term missing most</th></tr></thead><tbody>");
    const char *kinds[16];
    int nk = 0;
    for (int i = 0; i < r->n_clusters; i++) {
        const fa_rep_cluster *c = &r->clusters[i];
        if (!calib_measured(c)) continue;
        const char *kn = fa_cluster_kind_name(c->p->kind);
        bool seen = false;
        for (int k = 0; k < nk; k++) seen |= !strcmp(kinds[k], kn);
        if (!seen && nk < 16) kinds[nk++] = kn;
    }
    for (int k = 0; k < nk; k++) {
        calib_row(r, b, kinds[k], false, tmp);
        calib_row(r, b, kinds[k], true, tmp);
    }
    calib_row(r, b, NULL, false, tmp);
    calib_row(r, b, NULL, true, tmp);
    free(tmp);
    fa_buf_puts(b, "</tbody></table></section>\n");
}

static void why_table(const fa_rep *r, fa_buf *b)
{
    fa_buf_puts(b, "<section id=\"why-not\"><h2>Why not</h2>");
    if (r->plan_id <= 0) {
        fa_buf_puts(b, "<p class=\"na\">No fusion plan stored for this run: not measured.</p></section>\n");
        return;
    }
    if (r->plan->n_why_not == 0) {
        fa_buf_puts(b, "<p>Every producer\xe2\x86\x92" "consumer edge that could fuse is in a cluster.</p></section>\n");
        return;
    }
    fa_buf_puts(b, "<div class=\"scroll\"><table class=\"sortable\"><thead><tr><th>producer</th><th>consumer</th><th>tensor</th>"
                   "<th>code</th><th>reason</th></tr></thead><tbody>");
    for (int i = 0; i < r->plan->n_why_not; i++) {
        const fa_why_not *w = &r->plan->why_not[i];
        fa_buf_puts(b, "<tr>");
        td_text(b, fa_rep_node_name(r, w->producer));
        td_text(b, fa_rep_node_name(r, w->consumer));
        td_text(b, w->tensor >= 0 && w->tensor < r->n_tensors ? r->tensors[w->tensor].name : "");
        fa_buf_puts(b, "<td><code>");
        h(b, fa_why_code_name(w->code));
        fa_buf_puts(b, "</code></td>");
        td_text(b, w->reason);
        fa_buf_puts(b, "</tr>\n");
    }
    fa_buf_puts(b, "</tbody></table></div></section>\n");
}

static void ops_table(const fa_rep *r, fa_buf *b)
{
    fa_buf_printf(b, "<section id=\"ops\"><h2>Per-op time</h2><p>Median over %d timed iterations of each op's kernel time; "
                     "share of the sum of medians.</p>", r->n_iters);
    if (r->n_ops == 0) {
        fa_buf_puts(b, "<p class=\"na\">No kernel records: not measured.</p></section>\n");
        return;
    }
    fa_buf_puts(b, "<div class=\"scroll\"><table class=\"sortable\"><thead><tr><th>node</th><th>op</th><th>median (\xc2\xb5s)</th>"
                   "<th>share</th><th>kernels</th><th>FLOPs</th><th>bytes</th><th>FLOP/byte</th><th>GB/s</th><th>GFLOP/s</th>"
                   "<th>bound</th><th>fused in</th></tr></thead><tbody>");
    for (size_t i = 0; i < r->n_ops; i++) {
        const fa_op_row *o = &r->ops[i];
        const fa_rep_node *n = o->node >= 0 && o->node < r->n_nodes && r->nodes[o->node].name ? &r->nodes[o->node] : NULL;
        fa_buf_puts(b, "<tr>");
        td_text(b, o->node_name);
        td_text(b, o->op_type ? o->op_type : "");
        td_num(b, (double)o->median_ns, "%.2f", 1e-3);
        td_num(b, o->share, "%.1f%%", 100);
        td_num(b, (double)o->kernels, "%.0f", 1);
        double dur = o->median_ns > 0 ? (double)o->median_ns : NAN;
        td_num(b, n ? (double)n->flops : NAN, "%.0f", 1);
        td_num(b, n ? (double)n->bytes : NAN, "%.0f", 1);
        td_num(b, n && n->bytes ? (double)n->flops / (double)n->bytes : NAN, "%.3f", 1);
        td_num(b, n ? n->bytes / dur : NAN, "%.2f", 1);
        td_num(b, n ? n->flops / dur : NAN, "%.2f", 1);
        if (n && n->bound) td_text(b, n->bound);
        else fa_buf_puts(b, "<td class=\"na\">not measured</td>");
        if (n && n->cluster >= 0) fa_buf_printf(b, "<td data-v=\"%d\">cluster %d</td>", r->clusters[n->cluster].p->id, r->clusters[n->cluster].p->id);
        else fa_buf_puts(b, "<td data-v=\"-1\"></td>");
        fa_buf_puts(b, "</tr>\n");
    }
    fa_buf_puts(b, "</tbody></table></div></section>\n");
}

void fa_rep_html(const fa_rep *r, fa_buf *b)
{
    fa_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">");
    fa_rep_csp(b);
    fa_buf_puts(b, "<title>fuse-advise report: ");
    h(b, r->run.model_path);
    fa_buf_printf(b, " (run %" PRId64 ")</title><style>%s</style></head><body><header><h1>fuse-advise report: ", r->run_id, fa_rep_css);
    h(b, r->run.model_path);
    fa_buf_puts(b, "</h1><div class=\"sub\">");
    char when[64] = "";
    time_t sec = (time_t)(r->run.started_at_ns / 1000000000);
    struct tm tmv;
    if (r->run.started_at_ns > 0 && gmtime_r(&sec, &tmv)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tmv);
    fa_buf_printf(b, "run %" PRId64 " \xc2\xb7 %s \xc2\xb7 ", r->run_id, when);
    h(b, r->run.device_name ? r->run.device_name : "unknown device");
    fa_buf_printf(b, " \xc2\xb7 %d threads \xc2\xb7 %d live nodes \xc2\xb7 fuse-advise " FA_VERSION_STRING "</div></header><main>\n",
                  r->run.threads, r->n_live);
    palette pal;
    pal_build(r, &pal);
    answer(r, b);
    summary(r, b);
    clusters_table(r, b);
    roofline(r, b, &pal);
    timeline(r, b, &pal);
    calibration_table(r, b);
    why_table(r, b);
    ops_table(r, b);
    fa_buf_puts(b, "<section id=\"files\"><h2>Files</h2><p><code>graph.svg</code> / <code>graph.dot</code> (op graph, clusters), "
                   "<code>trace.json</code> (open in ui.perfetto.dev or chrome://tracing), <code>summary.json</code>, "
                   "<code>kernels.csv</code>. All regenerated from the run database by <code>fuse-advise report</code>.</p>"
                   "</section></main>\n<script>");
    fa_buf_puts(b, fa_rep_js);
    fa_buf_puts(b, "</script></body></html>\n");
}
