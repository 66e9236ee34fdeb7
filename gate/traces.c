/* gate/traces — the gate on two imported traces (Kineto JSON, Nsight Systems SQLite): what a trace
 * holds is its advice (trace/trace.h: kernel time by kernel class, kernels, launch overhead,
 * profiler steps), not timed iterations of a model we ran, so these checks compare those figures
 * per profiler step (docs/ci.md "Imported traces"). One trace per side gives one figure per side:
 * no interval, a point comparison against the same threshold and cost rule as the latency
 * checks. */
#include "gate/gate-impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A "trace" check; base and cand: the two figures (stats.base_median_ns / cand_median_ns in
 * --json: ns, or kernels for trace.kernels), ratio = cand / base (NAN: no change column). */
static fa_status add(fa_ctx *ctx, fa_gate_report *r, const char *id, const char *name, fa_gate_verdict v, double base,
                     double cand, double ratio, const char *fmt, ...) __attribute__((format(printf, 9, 10)));
static fa_status add(fa_ctx *ctx, fa_gate_report *r, const char *id, const char *name, fa_gate_verdict v, double base,
                     double cand, double ratio, const char *fmt, ...)
{
    fa_buf b;
    fa_buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    fa_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    fa_gate_check *c = b.oom ? NULL : fa_gate_add_check(r, id, "trace", name, v, "%s", b.data ? b.data : "");
    fa_buf_free(&b);
    if (!c) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    if (isfinite(ratio)) { /* the change column; one figure per side: no interval */
        c->has_stats = true;
        c->stats.ratio = ratio;
        c->stats.base_median_ns = base;
        c->stats.cand_median_ns = cand;
        c->stats.lo = c->stats.hi = NAN;
        c->stats.n_base = c->stats.n_cand = 1;
        c->stats.runs_base = c->stats.runs_cand = 1;
        c->stats.verdict = v;
    }
    return FA_OK;
}

/* One kernel-time figure per step of each side: fail when the candidate is more than
 * max_regression slower and the added time is at least min_share of the baseline's step; warn
 * when slower but cheaper than that; pass otherwise (the latency checks' rule without the
 * interval, docs/ci.md). */
static fa_status time_check(fa_ctx *ctx, fa_gate_report *r, const char *id, const char *name, double base_ns,
                            double cand_ns, double step_ns, const char *per)
{
    char b[32], c[32], d[32];
    fa_gate_fmt_time(b, sizeof b, base_ns);
    fa_gate_fmt_time(c, sizeof c, cand_ns);
    fa_gate_fmt_time(d, sizeof d, cand_ns - base_ns);
    double ratio = base_ns > 0 ? cand_ns / base_ns : (cand_ns > 0 ? INFINITY : 1.0);
    double cost = step_ns > 0 ? (cand_ns - base_ns) / step_ns : NAN;
    bool slower = ratio > 1 + r->opt.max_regression;
    fa_gate_verdict v = !slower ? FA_GATE_PASS : (isfinite(cost) && cost >= r->opt.min_share) ? FA_GATE_FAIL : FA_GATE_WARN;
    if (v == FA_GATE_PASS)
        return add(ctx, r, id, name, v, base_ns, cand_ns, ratio, "%s -> %s %s: not more than %.3g%% slower", b, c, per,
                   r->opt.max_regression * 100);
    return add(ctx, r, id, name, v, base_ns, cand_ns, ratio, "%s -> %s %s (+%s, %.3g%% of the baseline's step): %s", b, c, per, d,
               isfinite(cost) ? cost * 100 : 0.0,
               v == FA_GATE_FAIL ? "a regression; compare the two traces' kernels of this class in their reports"
                                 : "slower, but under --min-share of the step");
}

fa_status fa_gate_check_traces(fa_ctx *ctx, fa_gate_report *r, const side *sb, const side *sc)
{
    const gate_run *b = &sb->r[0], *c = &sc->r[0];
    /* per profiler step when both traces have steps, else the whole traces */
    bool steps = b->t_steps > 0 && c->t_steps > 0;
    double ub = steps ? (double)b->t_steps : 1.0, uc = steps ? (double)c->t_steps : 1.0;
    const char *per = steps ? "per step" : "in the whole trace";
    if (!steps)
        fa_gate_note(r, "the traces have no ProfilerStep ranges on both sides: their whole kernel time is compared, so "
                        "record the same number of steps (or the same workload) in both");
    if (sb->n > 1 || sc->n > 1)
        fa_gate_note(r, "imported traces: only the newest trace of each side is compared");
    double step_ns = steps ? (double)b->t_step_ns : (double)b->t_kernel_ns;
    fa_status s = time_check(ctx, r, "trace.kernel_time", "GPU kernel time", b->t_kernel_ns / ub, c->t_kernel_ns / uc,
                             step_ns, per);
    for (int k = 0; k < FA_KCLASS_COUNT && !s; k++) {
        if (!b->t_class_ns[k] && !c->t_class_ns[k]) continue;
        char id[64], name[96];
        snprintf(id, sizeof id, "trace.kernel_time:%s", fa_kclass_name((fa_kclass)k));
        snprintf(name, sizeof name, "kernel time: %s kernels", fa_kclass_name((fa_kclass)k));
        s = time_check(ctx, r, id, name, b->t_class_ns[k] / ub, c->t_class_ns[k] / uc, step_ns, per);
    }
    if (s) return s;
    /* kernels per step (those launched inside the steps): more = lost fusion or a new kernel */
    double kb = (double)(steps ? b->t_kernels - b->t_outside : b->t_kernels) / ub;
    double kc = (double)(steps ? c->t_kernels - c->t_outside : c->t_kernels) / uc;
    fa_gate_verdict kv = kc > kb + 0.5 ? FA_GATE_FAIL : FA_GATE_PASS;
    s = add(ctx, r, "trace.kernels", steps ? "kernels per step" : "kernels in the trace", kv, kb, kc, kb > 0 ? kc / kb : NAN,
            "%.1f -> %.1f%s", kb, kc,
            kv == FA_GATE_FAIL ? ": more kernels (a fusion lost, or new work); the traces' reports list them" : "");
    if (s) return s;
    /* launch overhead per kernel (median launch call + median device launch latency: the stored
     * launch_per_kernel_ns, as the text and the report show it): host and driver side, it warns.
     * A run imported before that figure stored median launch call + median gap of any cause under
     * another key: never compared with the new figure */
    int64_t lb = b->t_launch_per_kernel_ns, lc = c->t_launch_per_kernel_ns;
    bool ob = lb == FA_TA_NOT_STORED, oc = lc == FA_TA_NOT_STORED;
    bool latb = b->t_launch_latency_ns >= 0, latc = c->t_launch_latency_ns >= 0;
    if (ob || oc)
        s = add(ctx, r, "trace.launch_overhead", "launch overhead per kernel", FA_GATE_SKIPPED, NAN, NAN, NAN,
                "not comparable: the %s was imported by an older version, whose stored figure added the median idle gap "
                "of any cause (host work included); import it again",
                ob && oc ? "baseline and the candidate" : ob ? "baseline" : "candidate");
    else if (lb < 0 || lc < 0)
        s = add(ctx, r, "trace.launch_overhead", "launch overhead per kernel", FA_GATE_SKIPPED, NAN, NAN, NAN,
                "not measured in the %s: no launch call linked to a kernel and no kernel queued behind another",
                lb >= 0 ? "candidate" : lc >= 0 ? "baseline" : "baseline and the candidate");
    else if (latb != latc)
        s = add(ctx, r, "trace.launch_overhead", "launch overhead per kernel", FA_GATE_SKIPPED, NAN, NAN, NAN,
                "not comparable: the device launch latency is measured in the %s only (no kernel queued behind another "
                "in the other), so the two figures hold different parts",
                latb ? "baseline" : "candidate");
    else if (lb > 0) {
        double ratio = (double)lc / (double)lb;
        fa_gate_verdict lv = ratio > 1 + r->opt.max_regression ? FA_GATE_WARN : FA_GATE_PASS;
        s = add(ctx, r, "trace.launch_overhead", "launch overhead per kernel", lv, (double)lb, (double)lc, ratio,
                "%.2f -> %.2f us (median launch call + median device launch latency%s)%s", lb / 1e3, lc / 1e3,
                latb ? "" : ", latency not measured on either side",
                lv == FA_GATE_WARN ? ": higher launch cost per kernel (a busier host, another launch path, no CUDA graph)" : "");
    } else
        s = add(ctx, r, "trace.launch_overhead", "launch overhead per kernel", FA_GATE_SKIPPED, NAN, NAN, NAN,
                "the baseline's launch overhead is 0: no ratio to compare");
    return s;
}
