/* trace/text — the advice as text (what `import`, `run TRACE` and `advise` print). */
#include "trace/trace-impl.h"

#include <inttypes.h>

static const char *occ_text(const fa_trace_advice *a, const fa_ta_kernel *k, char *buf, size_t cap)
{
    if (k->occupancy >= 0 && k->occupancy_source && !strcmp(k->occupancy_source, "trace"))
        snprintf(buf, cap, "%.0f%% (trace)", 100 * k->occupancy);
    else if (k->occupancy >= 0)
        snprintf(buf, cap, "%.0f%% (sm_%d%d%s)", 100 * k->occupancy, a->cc_major, a->cc_minor,
                 a->cc_source && !strncmp(a->cc_source, "assumed", 7) ? ", assumed" : "");
    else
        snprintf(buf, cap, "unknown");
    return buf;
}

void fa__ta_opp_members(fa_buf *b, const fa_ta_opportunity *o, bool ops)
{
    for (int i = 0; i < o->n; i++) {
        char sh[96];
        fa_buf_puts(b, i ? " -> " : "");
        /* ops: the op key, or the kernel's short name where the key says nothing */
        bool other = ops && !strcmp(o->member_ops[i], "other");
        fa_buf_printf_term(b, "%s", ops && !other ? o->member_ops[i] : fa_kernel_name_short(o->members[i], sh, sizeof sh));
    }
}

const char *fa__ta_ms(double ns, char *buf, size_t cap)
{
    if (ns >= 1e6) snprintf(buf, cap, "%.2f ms", ns / 1e6);
    else snprintf(buf, cap, "%.1f us", ns / 1e3);
    return buf;
}

void fa__ta_launch_words(fa_buf *b, const fa_trace_advice *a)
{
    if (a->launch_per_kernel_ns == FA_TA_NOT_STORED) {
        fa_buf_puts(b, "launch overhead per kernel: not stored in this run (imported by an older version, whose figure "
                       "added the median idle gap of any cause; import the trace again)");
        return;
    }
    if (a->launch_per_kernel_ns < 0) {
        fa_buf_puts(b, "launch overhead per kernel: not measured (no launch call linked to a kernel, and no kernel queued "
                       "behind another on its stream)");
        return;
    }
    fa_buf_printf(b, "launch overhead per kernel, measured: %.2f us = ", a->launch_per_kernel_ns / 1e3);
    if (a->launch_call_median_ns >= 0)
        fa_buf_printf(b, "median launch call %.2f us (%" PRId64 " calls)", a->launch_call_median_ns / 1e3, a->n_launch_calls);
    else
        fa_buf_puts(b, "launch call not measured (no launch call linked to a kernel)");
    if (a->launch_latency_ns >= 0)
        fa_buf_printf(b, " + median device launch latency %.2f us (%" PRId64 " gap%s before a kernel already queued)",
                      a->launch_latency_ns / 1e3, a->n_latency_gaps, a->n_latency_gaps == 1 ? "" : "s");
    else
        fa_buf_puts(b, " + device launch latency not measured (no kernel was queued before the one ahead of it on its "
                       "stream ended)");
}

void fa__ta_idle_words(fa_buf *b, const fa_trace_advice *a)
{
    char t1[32], t2[32];
    if (a->launch_per_kernel_ns == FA_TA_NOT_STORED) return; /* an older advice: not classified */
    if (a->host_bound_device == FA_TA_NOT_STORED || a->host_bound_streams <= 1) { /* one stream, or an older advice */
        fa_buf_printf(b, "host-bound idle (not launch overhead): %s in %" PRId64 " gap%s",
                      fa__ta_ms((double)a->host_bound_idle_ns, t1, sizeof t1), a->n_host_bound_gaps,
                      a->n_host_bound_gaps == 1 ? "" : "s");
        if (a->n_host_bound_gaps)
            fa_buf_printf(b, " (median %s)", fa__ta_ms((double)a->host_bound_gap_median_ns, t2, sizeof t2));
        fa_buf_puts(b, " where the GPU waited for the host to launch the next kernel");
    } else {
        char t3[32];
        fa_buf_printf(b, "host-bound idle (not launch overhead): %s on stream %" PRId64 ", the busiest stream, waiting for "
                         "the host to launch its next kernel (%" PRId64 " such gaps on %d streams, median %s; summed over the "
                         "streams %s, which passes the span where streams wait at the same time)",
                      fa__ta_ms((double)a->host_bound_idle_ns, t1, sizeof t1), a->host_bound_stream, a->n_host_bound_gaps,
                      a->host_bound_streams, fa__ta_ms((double)a->host_bound_gap_median_ns, t2, sizeof t2),
                      fa__ta_ms((double)a->host_bound_idle_sum_ns, t3, sizeof t3));
    }
    if (a->n_held_gaps)
        fa_buf_printf(b, "; %s in %" PRId64 " gap%s before a queued kernel held over 10 us by another stream's work (not "
                         "launch latency)",
                      fa__ta_ms((double)a->held_ns, t1, sizeof t1), a->n_held_gaps, a->n_held_gaps == 1 ? "" : "s");
    if (a->n_unclassed_gaps)
        fa_buf_printf(b, "; %s in %" PRId64 " more gap%s not told apart (the next kernel has no launch call in the trace or "
                         "starts before it, or a copy or set ran between)",
                      fa__ta_ms((double)a->unclassed_idle_ns, t1, sizeof t1), a->n_unclassed_gaps, a->n_unclassed_gaps == 1 ? "" : "s");
}

void fa_trace_advice_text(const fa_trace_advice *a, fa_buf *b)
{
    char t1[32], t2[32], t3[32];
    if (a->no_gpu_activity) {
        fa_buf_puts(b, "no GPU activity in the trace: nothing to fuse\n");
        return;
    }
    fa_buf_printf_term(b, "device: %s", a->device_name ? a->device_name : "unknown");
    fa__ta_device_terms(b, a);
    if (a->roofs.label)
        fa_buf_printf_term(b, "\nroofs (theoretical, %s data sheet): HBM %.0f GB/s, FP32 %.1f TFLOP/s%s", a->roofs.label,
                      a->roofs.hbm_gbs, a->roofs.fp32_gflops / 1e3, a->roofs.tensor_gflops > 0 ? "" : "");
    if (a->roofs.tensor_gflops > 0) fa_buf_printf_term(b, ", 16-bit tensor %.0f TFLOP/s", a->roofs.tensor_gflops / 1e3);
    if (a->mem_roof_gbs > 0)
        fa_buf_printf_term(b, "\nmemory roof used for fused kernels: %.0f GB/s (%s)", a->mem_roof_gbs, a->mem_roof_source);
    else if (a->mem_roof_source)
        fa_buf_printf_term(b, "\nmemory roof %s; fused kernels taken to last as long as their slowest member", a->mem_roof_source);
    else
        fa_buf_puts(b, "\nmemory roof unknown (device not tabled, no sizes): fused kernels taken to last as long as their "
                       "slowest member");
    fa_buf_printf_term(b, "\n%" PRId64 " GPU kernels (%d distinct), %s of kernel time over a %s span on %d streams", a->n_kernels,
                  a->n_kernel_names, fa__ta_ms((double)a->kernel_ns, t1, sizeof t1), fa__ta_ms((double)a->span_ns, t2, sizeof t2),
                  a->n_streams);
    if (a->n_steps) fa_buf_printf_term(b, ", %" PRId64 " profiler steps (%s each)", a->n_steps, fa__ta_ms((double)a->step_ns, t3, sizeof t3));
    fa_buf_puts(b, "\nkernel time by class:");
    for (int c = 0; c < FA_KCLASS_COUNT; c++)
        if (a->class_ns[c] > 0)
            fa_buf_printf_term(b, " %s %s (%.0f%%)", fa_kclass_name((fa_kclass)c), fa__ta_ms((double)a->class_ns[c], t1, sizeof t1),
                          a->kernel_ns ? 100.0 * (double)a->class_ns[c] / (double)a->kernel_ns : 0.0);
    fa_buf_puts(b, "\n");
    fa__ta_launch_words(b, a);
    if (a->launch_per_kernel_ns != FA_TA_NOT_STORED) {
        fa_buf_puts(b, "\n");
        fa__ta_idle_words(b, a);
    }
    fa_buf_puts(b, "\n");
    if (a->n_fused_kernels)
        fa_buf_printf_term(b, "already fused (attention kernels, torch.compile / Triton, fused optimizers; reported, never made "
                         "part of a fusion): %" PRId64 " kernels, %s\n",
                      a->n_fused_kernels, fa__ta_ms((double)a->fused_kernel_ns, t1, sizeof t1));
    if (a->n_outside_steps)
        fa_buf_printf_term(b, "%" PRId64 " kernels (%s) were launched outside the profiler steps (before the trace or its first "
                         "step, or after its last): counted above, not in the opportunities or per-step figures\n",
                      a->n_outside_steps, fa__ta_ms((double)a->outside_steps_ns, t1, sizeof t1));

    fa_buf_printf_term(b, "\nfusion opportunities, ranked by estimated saving (each kernel counted in at most one): %" PRId64 "\n",
                  a->n_opps_total);
    if (a->launch_cap_ns > 0)
        fa_buf_printf_term(b, "  (launch cost removed: per removed launch, the GPU idle before it up to its own launch call and at "
                         "most the median launch call, %.2f us; idle while the host did other work is not counted)\n",
                      a->launch_cap_ns / 1e3);
    if (a->split_second_domain || a->split_not_connected)
        fa_buf_printf_term(b, "  (the fusion rule cut kernel runs %" PRId64 " times at a reduction over a second domain and %" PRId64
                         " times at a kernel that reads nothing the kernels before it wrote)\n",
                      a->split_second_domain, a->split_not_connected);
    if (a->split_host_boundary)
        fa_buf_printf_term(b, "  (and %" PRId64 " times where the next kernel was launched by another host thread or waited on "
                              "another stream's work: no one launch can span those)\n",
                           a->split_host_boundary);
    int show = a->n_opps < 10 ? a->n_opps : 10;
    for (int i = 0; i < show; i++) {
        const fa_ta_opportunity *o = &a->opps[i];
        fa_buf_printf_term(b, "  %2d. %s%s x%" PRId64 ": saves %s (%.1f%% of the span", i + 1,
                      o->pattern ? o->pattern : "repeated sequence", o->recompute ? " (recomputed in the backward pass: activation checkpointing)" : o->backward ? " (backward pass)" : "", o->count,
                      fa__ta_ms(o->est.saving_ns, t1, sizeof t1), 100 * o->share);
        if (a->n_steps) fa_buf_printf_term(b, "; %s per step", fa__ta_ms(o->est.saving_ns / (double)a->n_steps, t2, sizeof t2));
        fa_buf_puts(b, "), estimated\n      ");
        fa__ta_opp_members(b, o, true);
        fa_buf_printf_term(b, "  (%d launches -> 1", o->n);
        if (o->skipped) fa_buf_printf_term(b, "; %" PRId64 " kernels or transfers between them stay", o->skipped);
        fa_buf_puts(b, ")\n      kernels: ");
        fa__ta_opp_members(b, o, false);
        fa_buf_printf_term(b, "\n      measured %s kernels + %s launch cost; fused %s", fa__ta_ms((double)o->kernel_ns, t1, sizeof t1),
                      fa__ta_ms((double)o->gaps_ns, t2, sizeof t2), fa__ta_ms(o->est.fused_ns, t3, sizeof t3));
        if (o->read_bytes >= 0)
            fa_buf_printf_term(b, " (per occurrence reads %.2f MiB, writes %.2f MiB, %.2f MiB of intermediates no longer "
                             "written and read back)",
                          o->read_bytes / 1048576.0, o->write_bytes / 1048576.0, o->saved_bytes / 1048576.0);
        if (o->module || o->source)
            fa_buf_printf_term(b, "\n      where: %s%s%s%s", o->module ? o->module : "", o->module && o->source ? ", " : "",
                          o->source ? o->source : "", o->count > 1 ? " (first occurrence)" : "");
        fa_buf_printf_term(b, "\n      from: %s\n      fix: %s\n", o->est.basis, o->fix);
    }
    if (a->n_opps_total > show) fa_buf_printf_term(b, "  ... %" PRId64 " more\n", a->n_opps_total - show);
    fa_buf_printf_term(b, "  all together: %s estimated (%.1f%% of the span), from %s of kernel time\n",
                  fa__ta_ms(a->saving_ns, t1, sizeof t1), a->span_ns ? 100.0 * a->saving_ns / (double)a->span_ns : 0.0,
                  fa__ta_ms((double)a->saving_kernel_ns, t2, sizeof t2));

    fa_buf_printf_term(b, "\n%-60s %-11s %7s %11s %10s %14s %5s %7s %s\n", "kernel", "class", "count", "total us", "median us",
                  "grid/block", "regs", "smem", "occupancy");
    int ks = a->n_kernel_names < 15 ? a->n_kernel_names : 15;
    for (int i = 0; i < ks; i++) {
        const fa_ta_kernel *k = &a->kernels[i];
        char lc[64], oc[64], sh[61];
        if (k->block[0]) snprintf(lc, sizeof lc, "%d/%d", k->grid[0] * (k->grid[1] ? k->grid[1] : 1) * (k->grid[2] ? k->grid[2] : 1),
                                  k->block[0] * (k->block[1] ? k->block[1] : 1) * (k->block[2] ? k->block[2] : 1));
        else snprintf(lc, sizeof lc, "-");
        fa_buf_printf_term(b, "%-60s %-11s %7" PRId64 " %11.1f %10.2f %14s %5d %7d %s\n", fa_kernel_name_short(k->name, sh, sizeof sh),
                      fa_kclass_name(k->cls), k->count, k->total_ns / 1e3, k->median_ns / 1e3, lc, k->registers, k->smem,
                      occ_text(a, k, oc, sizeof oc));
    }
    if (a->n_kernel_names > ks) fa_buf_printf_term(b, "... %d more kernel names\n", a->n_kernel_names - ks);
    fa_buf_printf_term(b, "\nlaunch-bound stretches (>= %d kernels each shorter than its launch call): %d, %" PRId64
                     " kernels, %.1f us kernel time\n",
                  FA_TA_MIN_STRETCH, a->n_stretches, a->launch_bound_kernels, a->launch_bound_ns / 1e3);
    for (int i = 0; i < a->n_stretches && i < 5; i++) {
        const fa_ta_stretch *r = &a->stretches[i];
        char sh[96];
        fa_buf_printf_term(b, "  stream %" PRId64 ": %d kernels from %s, %.1f us kernels vs %.1f us launch calls (each up to the median call)\n", r->stream,
                      r->n_kernels, fa_kernel_name_short(r->first_name, sh, sizeof sh), r->kernel_ns / 1e3, r->launch_ns / 1e3);
    }
    if (a->n_stretches) fa_buf_puts(b, "  fix: capture them in a CUDA graph (torch.cuda.graphs, torch.compile mode=\"reduce-overhead\") or fuse them\n");
    fa_buf_printf_term(b, "\nidle gaps: %.3f ms summed over streams", a->idle_ns / 1e6);
    if (a->n_overlaps) fa_buf_printf_term(b, " (%" PRId64 " overlapping kernels excluded)", a->n_overlaps);
    fa_buf_puts(b, "\n");
    for (int i = 0; i < a->n_gaps && i < 5; i++) {
        const fa_ta_gap *g = &a->gaps[i];
        char sh[96];
        fa_buf_printf_term(b, "  %.1f us on stream %" PRId64 " before %s; cpu op then: %s\n", g->gap_ns / 1e3, g->stream,
                      fa_kernel_name_short(g->next_kernel, sh, sizeof sh), g->cpu_op ? g->cpu_op : "unknown");
    }
    for (int i = 0; i < a->n_streams; i++) {
        const fa_ta_stream *m = &a->streams[i];
        int64_t span = m->last_ns > m->first_ns ? (int64_t)(m->last_ns - m->first_ns) : 0;
        fa_buf_printf_term(b, "  stream %d:%" PRId64 ": %" PRId64 " kernels, busy %.1f%% of its %s span\n", m->device, m->stream,
                      m->n_kernels, span ? 100.0 * (double)m->busy_ns / (double)span : 0.0, fa__ta_ms((double)span, t1, sizeof t1));
    }
    if (a->n_graphs) {
        fa_buf_printf_term(b, "\nCUDA graphs: %d, %" PRId64 " kernels launched by graph replays\n", a->n_graphs, a->graph_kernels);
        for (int i = 0; i < a->n_graphs && i < 5; i++) {
            const fa_ta_graph *g = &a->graphs[i];
            fa_buf_printf_term(b, "  graph %d: %" PRId64 " replays x %" PRId64 " kernels, %s; launched under %s, captured under %s\n",
                          g->id, g->replays, g->kernels, fa__ta_ms((double)g->kernel_ns, t1, sizeof t1),
                          g->launch_op ? g->launch_op : "unknown", g->capture_op ? g->capture_op : "(capture not in the trace)");
        }
    }
    fa_buf_printf_term(b, "\norphans %" PRIu64 ", clock inversions %" PRIu64 ", parse errors %" PRIu64, a->n_orphans,
                  a->n_clock_inversions, a->n_parse_errors);
    fa_buf_puts(b, "\n");
    if (a->n_estimated_bytes == 0)
        fa_buf_puts(b, "no kernel has sizes (no Input Dims): every byte figure is unknown; a sequence's members are joined by "
                       "their order on the stream, not shown to read each other's output; fused kernels are taken to last as "
                       "long as their slowest member\n");
}

void fa__ta_device_terms(fa_buf *b, const fa_trace_advice *a)
{
    if (a->vendor && !strcmp(a->vendor, "AMD")) {
        if (a->arch) fa_buf_printf_term(b, ", %s%s%s%s", a->arch, a->arch_family ? " (" : "", a->arch_family ? a->arch_family : "",
                                   a->arch_family ? ")" : "");
        else if (a->cc_major) fa_buf_printf_term(b, ", HIP compute capability %d.%d", a->cc_major, a->cc_minor);
        if (a->sm_count) fa_buf_printf_term(b, ", %d %s", a->sm_count, a->units_name ? a->units_name : "compute units");
        fa_buf_puts(b, "; occupancy: from the trace only (the calculator is CUDA's)");
        return;
    }
    if (a->cc_major) fa_buf_printf_term(b, ", sm_%d%d (%s)", a->cc_major, a->cc_minor, a->cc_source);
    else fa_buf_puts(b, ", compute capability unknown: no occupancy from the calculator");
    if (a->sm_count) fa_buf_printf_term(b, ", %d SMs", a->sm_count);
}
