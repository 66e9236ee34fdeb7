/* trace/finish — the builder's last step: drain the windows, then rank and hand over the advice
 * (device roofs, per-kernel rows with occupancy, opportunities with their predicted savings,
 * roofline points, streams, gaps, stretches, graphs, the timeline window). */
#include "trace/trace-impl.h"

static int cmp_kernel_total(const void *a, const void *b)
{
    const fa_ta_kernel *x = a, *y = b;
    if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_opp(const void *a, const void *b)
{
    const fa_ta_opportunity *x = a, *y = b;
    if (x->est.saving_ns != y->est.saving_ns) return x->est.saving_ns > y->est.saving_ns ? -1 : 1;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    for (int i = 0; i < x->n; i++) {
        int c = strcmp(x->members[i], y->members[i]);
        if (c) return c;
    }
    return 0;
}

static int cmp_point(const void *a, const void *b)
{
    const fa_ta_point *x = a, *y = b;
    if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns ? -1 : 1;
    return strcmp(x->kernel, y->kernel);
}

static int cmp_gap(const void *a, const void *b)
{
    const fa_ta_gap *x = a, *y = b;
    if (x->gap_ns != y->gap_ns) return x->gap_ns > y->gap_ns ? -1 : 1;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int cmp_stretch(const void *a, const void *b)
{
    const fa_ta_stretch *x = a, *y = b;
    if (x->n_kernels != y->n_kernels) return x->n_kernels > y->n_kernels ? -1 : 1;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int cmp_stream(const void *a, const void *b)
{
    const fa_ta_stream *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    return (x->stream > y->stream) - (x->stream < y->stream);
}

static int cmp_wrec(const void *a, const void *b)
{
    const fa_ta_wrec *x = a, *y = b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    return (x->stream > y->stream) - (x->stream < y->stream);
}

/* The most a measured memory roof may be when the device has no data sheet here: the fastest
 * memory of roofline/gpu_roofs.c's table (B200, 7.7 TB/s) with a margin, GB/s. */
#define FA_TA_ROOF_PLAUSIBLE_MAX_GBS 8000

static const char *adup(fa_arena *ar, const char *s)
{
    return s ? fa_arena_strdup(ar, s) : NULL;
}

/* an op key's name, "<key>_backward" for a backward kernel (NULL on OOM) */
static const char *op_name(fa_arena *ar, int key, bool bwd)
{
    const char *n = fa_ta_key_name(key);
    if (!bwd) return n;
    char buf[64];
    snprintf(buf, sizeof buf, "%s_backward", n);
    return fa_arena_strdup(ar, buf);
}

fa_status fa_ta_builder_finish(fa_ctx *ctx, fa_ta_builder *b, fa_trace_advice **out)
{
    fa_status s = b->fail;
    fa_trace_advice *a = NULL;
    if (!s && b->own_trace) {
        /* a streaming import: the steps from the whole cpu side, read by now */
        b->n_steps = 0;
        b->n_step_starts = 0;
        fa__ta_count_steps(b, b->own_trace);
        b->n_waits = 0;
        fa__ta_collect_waits(b, b->own_trace);
    }
    fa__ta_sort_cuts(b);
    /* what one removed launch can give back: the median launch call of the kernels launched one
     * by one (graph replays' launches are counted as their replays are analysed) */
    b->launch_cap_ns = fa__qh_median(&b->launch_q);
    /* every record, sorted, through the per-stream analysis; then drain the windows */
    if (!s) s = fa__ta_spool_drain(ctx, b);
    if (!s) s = fa__ta_drain_streams(ctx, b);
    if (s) goto fail;
    a = calloc(1, sizeof *a);
    if (!a || !(a->arena = fa_arena_create(1 << 16))) goto nomem;
    fa_arena *ar = a->arena;

    /* device, in its vendor's terms */
    a->device_name = adup(ar, b->dev.name);
    fa_gpu_vendor vendor;
    fa_gpu_props props = {b->dev.name, b->dev.cc_major, b->dev.cc_minor, b->dev.sm_count, b->dev.warp_size,
                          b->dev.total_mem_bytes};
    fa_gpu_identify(&props, &vendor, &a->roofs);
    a->vendor = vendor == FA_GPU_VENDOR_AMD ? "AMD" : vendor == FA_GPU_VENDOR_NVIDIA ? "NVIDIA" : NULL;
    a->units_name = fa_gpu_units_name(vendor);
    if (b->dev.cc_major > 0) {
        a->cc_major = b->dev.cc_major;
        a->cc_minor = b->dev.cc_minor;
        a->cc_source = b->dev.props_source ? b->dev.props_source : "the trace";
    } else if (fa_gpu_cc_from_name(b->dev.name, &a->cc_major, &a->cc_minor)) {
        a->cc_source = "assumed from the device name";
    }
    a->total_mem_bytes = b->dev.total_mem_bytes;
    a->sm_count = b->dev.sm_count;
    a->hbm_gbs = a->roofs.hbm_gbs;
    a->hbm_label = a->roofs.label;
    a->arch_family = a->roofs.family;
    if (vendor == FA_GPU_VENDOR_AMD) {
        a->arch = a->roofs.arch; /* gfx942: HIP's major.minor does not name the part */
    } else if (a->cc_major) {
        char arch[16];
        snprintf(arch, sizeof arch, "sm_%d%d", a->cc_major, a->cc_minor);
        a->arch = adup(ar, arch);
    }
    /* the memory roof: the best bandwidth a memory-bound kernel reached in this trace, when it is
     * a real figure (at least a quarter of the data sheet's: below that the kernels were not
     * moving what the estimate says), else the data sheet. Only kernels moving more than the
     * device's last-level cache count: a 64 MiB fill on an MI300X ran in its 256 MB Infinity Cache
     * at 5 TB/s, which its HBM does not reach */
    int rb = 0;
    while (rb + 1 < ROOF_BUCKETS && a->roofs.llc_mb > 0 &&
           (double)FA_TA_ROOF_MIN_BYTES * (double)(1 << rb) < a->roofs.llc_mb * 1e6)
        rb++;
    double best = b->best_gbs[rb];
    /* with no data sheet to bound it, a figure past any GPU's memory (the table's fastest: B200's
     * 7.7 TB/s) is the byte estimate's error, not a roof: timeline_analysis's one cat "moved"
     * 1.6 GB in 156 us, 10 TB/s */
    bool implausible = a->hbm_gbs <= 0 && best > FA_TA_ROOF_PLAUSIBLE_MAX_GBS;
    if (implausible) {
        char buf[400];
        snprintf(buf, sizeof buf, "unknown: the best bandwidth a kernel reached in this trace, %.0f GB/s (%s), is beyond any GPU's "
                 "memory (%.0f GB/s): its bytes estimated from Input Dims are wrong, and the device has no data sheet here",
                 best, b->best_gbs_kernel[rb], (double)FA_TA_ROOF_PLAUSIBLE_MAX_GBS);
        a->mem_roof_source = adup(ar, buf);
    } else if (best > 0 && (a->hbm_gbs <= 0 || (best < a->hbm_gbs && best >= 0.25 * a->hbm_gbs))) {
        a->mem_roof_gbs = best;
        char buf[600], llc[96];
        if (a->roofs.llc_mb > 0) snprintf(llc, sizeof llc, " (past the %g MB last-level cache)", a->roofs.llc_mb);
        else snprintf(llc, sizeof llc, " (the device's last-level cache size is unknown: it may have run from cache)");
        snprintf(buf, sizeof buf, "measured in this trace: the best bandwidth a memory-bound kernel moving at least %.0f MiB%s "
                 "reached (%s, bytes estimated from Input Dims)",
                 FA_TA_ROOF_MIN_BYTES * (double)(1 << rb) / 1048576.0, llc, b->best_gbs_kernel[rb]);
        a->mem_roof_source = adup(ar, buf);
    } else if (a->hbm_gbs > 0) {
        a->mem_roof_gbs = a->hbm_gbs;
        a->mem_roof_source = "theoretical (data sheet)";
    }

    a->no_gpu_activity = !b->any_gpu;
    a->n_kernels = b->n_kernels;
    a->kernel_ns = b->kernel_ns;
    memcpy(a->class_ns, b->class_ns, sizeof a->class_ns);
    a->span_ns = b->n_kernels ? (int64_t)(b->last_ns - b->first_ns) : 0;
    a->n_steps = b->n_steps;
    /* the wall time the opportunities' kernels ran in: the span of the analysed kernels (with
     * profiler steps, those launched inside them) */
    int64_t an_span = b->an_any ? (int64_t)(b->an_last - b->an_first) : 0;
    a->step_ns = b->n_steps ? an_span / b->n_steps : a->span_ns;
    a->n_outside_steps = b->n_outside;
    a->outside_steps_ns = b->outside_ns;
    a->launch_cap_ns = b->launch_cap_ns;
    a->n_fused_kernels = b->n_fused_kernels;
    a->fused_kernel_ns = b->fused_kernel_ns;
    a->split_second_domain = b->n_split[FA_FUSE_WHY_SECOND_DOMAIN];
    a->split_not_connected = b->n_split[FA_FUSE_WHY_NOT_CONNECTED];
    a->split_host_boundary = b->n_split_host;
    a->n_memcpy = b->n_memcpy;
    a->memcpy_ns = b->memcpy_ns;
    a->n_memset = b->n_memset;
    a->memset_ns = b->memset_ns;
    a->n_launch_calls = b->n_launch_calls;
    a->launch_call_ns = b->launch_call_ns;
    a->launch_call_median_ns = fa__qh_median(&b->launch_q);
    /* launch overhead per kernel: the host's launch call and the device's launch latency — what a
     * fusion or a CUDA graph removes per launch. Idle while the GPU waited for the host is not
     * launch overhead (pipit's nsys saxpy export: a median gap of 234 ms of host work between
     * kernels made it 233,818 us "per kernel"); it is reported as host-bound idle */
    a->launch_latency_ns = fa__qh_median(&b->latency_q);
    a->n_latency_gaps = b->n_latency_gaps;
    a->n_held_gaps = b->n_held_gaps;
    a->held_ns = b->held_ns;
    a->n_host_bound_gaps = b->n_host_gaps;
    /* host-bound idle per stream, quoted for the busiest stream (the most kernel time: the work the
     * GPU waits to be given). Summed over streams it passed a multi-stream trace's whole span
     * (2,909 ms in 1,231 ms: side streams with a few kernels "wait" most of the trace) */
    a->host_bound_idle_sum_ns = b->host_idle_ns;
    a->host_bound_idle_ns = 0;
    a->host_bound_device = -1;
    a->host_bound_stream = -1;
    a->host_bound_streams = 0;
    int64_t busiest = -1;
    for (size_t i = 0; i < b->n_streams; i++) {
        const strm *st = &b->streams[i];
        if (st->host_idle_ns > 0) a->host_bound_streams++;
        if (st->st.kernel_ns > busiest) {
            busiest = st->st.kernel_ns;
            a->host_bound_idle_ns = st->host_idle_ns;
            a->host_bound_device = st->st.device;
            a->host_bound_stream = st->st.stream;
        }
    }
    a->host_bound_gap_median_ns = fa__qh_median(&b->host_q);
    a->n_unclassed_gaps = b->n_unclassed_gaps;
    a->unclassed_idle_ns = b->unclassed_idle_ns;
    a->launch_per_kernel_ns = a->launch_call_median_ns < 0 && a->launch_latency_ns < 0
                                  ? -1
                                  : (a->launch_call_median_ns > 0 ? a->launch_call_median_ns : 0) +
                                        (a->launch_latency_ns > 0 ? a->launch_latency_ns : 0);
    a->n_orphans = b->n_orphans;
    a->n_clock_inversions = b->n_clock_inversions;
    a->n_parse_errors = b->n_parse_errors;
    a->n_estimated_bytes = b->n_estimated_bytes;
    a->graph_kernels = b->graph_kernels;

    /* per kernel name */
    /* the occupancy calculator is CUDA's: not for an AMD device (wavefronts of 64, other limits) */
    const fa_cuda_limits *lim =
        a->cc_major && vendor != FA_GPU_VENDOR_AMD ? fa_cuda_limits_for(a->cc_major, a->cc_minor) : NULL;
    a->n_kernel_names = (int)b->n_toks;
    a->kernels = fa_arena_alloc(ar, (b->n_toks ? b->n_toks : 1) * sizeof *a->kernels);
    if (!a->kernels) goto nomem;
    int64_t *tok_median = calloc(b->n_toks + 1, sizeof *tok_median);
    if (!tok_median) goto nomem;
    for (size_t i = 0; i < b->n_toks; i++) {
        tokstat *t = &b->toks[i];
        fa_ta_kernel *k = &a->kernels[i];
        k->id = (int32_t)i;
        k->name = adup(ar, t->name);
        k->full_name = adup(ar, t->full_name);
        k->cls = t->cls;
        int tkey = fa_ta_key_of_kernel(t->name, t->cls);
        k->op = op_name(ar, tkey >= 0 ? tkey : FA_TA_KEY_OTHER, t->bwd);
        k->backward = t->bwd;
        k->fused_by = t->fused_by;
        k->count = t->count;
        k->total_ns = t->total_ns;
        k->median_ns = tok_median[i] = fa__qh_median(&t->dur);
        memcpy(k->grid, t->grid, sizeof k->grid);
        memcpy(k->block, t->block, sizeof k->block);
        k->registers = t->registers;
        k->smem = t->smem;
        k->occupancy = t->occupancy;
        k->occupancy_source = t->occ_src;
        int bs = k->block[0] * (k->block[1] ? k->block[1] : 1) * (k->block[2] ? k->block[2] : 1);
        if (k->occupancy < 0 && lim && bs > 0 && k->registers > 0) {
            fa_occ_input in = {.block_size = bs, .regs_per_thread = k->registers, .static_smem = (size_t)k->smem,
                               .carveout_percent = -1, .block_barriers = 1};
            fa_occ_result r;
            if (fa_occupancy(ctx, lim, &in, &r) == FA_OK) {
                k->occupancy = r.occupancy;
                k->occupancy_source = "calculator";
            } else {
                fa_ctx_clear(ctx);
            }
        }
        if (!k->name || !k->full_name || !k->op) {
            free(tok_median);
            goto nomem;
        }
    }

    /* opportunities: named patterns (any count) and repeated sequences (twice or more) */
    size_t n_o = 0;
    for (size_t i = 0; i < b->n_opps; i++)
        if (b->opps[i].pattern >= 0 || b->opps[i].count >= 2) n_o++;
    fa_ta_opportunity *ops = calloc(n_o ? n_o : 1, sizeof *ops);
    if (!ops) {
        free(tok_median);
        goto nomem;
    }
    double step_wall = b->an_any ? (double)(b->an_last - b->an_first) : (double)a->span_ns;
    size_t w = 0;
    for (size_t i = 0; i < b->n_opps; i++) {
        const oppstat *p = &b->opps[i];
        if (!(p->pattern >= 0 || p->count >= 2)) continue;
        fa_ta_opportunity *o = &ops[w++];
        o->id = (int32_t)i;
        o->pattern = p->pattern >= 0 ? b->patterns[p->pattern].name : NULL;
        o->backward = p->backward;
        o->recompute = p->recompute;
        o->fix = p->pattern >= 0 ? b->patterns[p->pattern].fix
                 : p->optim ? "an optimizer's per-parameter update, one kernel per op and parameter: its foreach or fused "
                              "implementation (torch.optim.SGD(..., foreach=True) or fused=True, the same for Adam/AdamW) "
                              "updates every parameter in a few kernels; or torch.compile of the step"
                 : p->recompute ? "forward ops recomputed in the backward pass (activation checkpointing): one fused kernel "
                                  "serves the forward and its recompute alike - torch.compile (it fuses inside checkpointed "
                                  "regions), or fuse-advise's generated kernel from the same cluster description"
                 : p->aot ? "already under torch.compile, with a backend that runs these ops one kernel each (AOTAutograd's "
                            "CompiledFunction with no Inductor graph inside: aot_eager, cudagraphs): the default backend, "
                            "Inductor, fuses such chains; or fuse-advise's generated kernel from the same cluster description"
                 : p->backward ? "one fused kernel for these backward ops: torch.compile (AOTAutograd compiles the backward "
                                 "pass too), or a fused backward kernel of the forward op"
                               : "one fused elementwise/reduction kernel: torch.compile, or fuse-advise's generated kernel "
                                 "from the same cluster description";
        o->n = p->n;
        o->count = p->count;
        o->kernel_ns = p->kernel_ns;
        o->gaps_ns = p->gaps_ns;
        o->skipped = p->skipped;
        o->bytes_occurrences = p->bytes_occ;
        o->device = p->device;
        o->stream = p->stream;
        o->first_start_ns = p->first_start;
        o->module = p->module >= 0 ? adup(ar, b->srcs[p->module]) : NULL;
        o->source = p->source >= 0 ? adup(ar, b->srcs[p->source]) : NULL;
        o->flops = -1;
        o->members = fa_arena_alloc(ar, (size_t)p->n * sizeof *o->members);
        o->member_ops = fa_arena_alloc(ar, (size_t)p->n * sizeof *o->member_ops);
        o->member_ns = fa_arena_alloc(ar, (size_t)p->n * sizeof *o->member_ns);
        if (!o->members || !o->member_ops || !o->member_ns) {
            free(tok_median);
            free(ops);
            goto nomem;
        }
        double floor = -1;
        for (int j = 0; j < p->n; j++) {
            o->members[j] = a->kernels[p->tok[j]].name;
            o->member_ops[j] = op_name(ar, p->key[j], p->bwd_mask >> j & 1);
            if (!o->member_ops[j]) {
                free(tok_median);
                free(ops);
                goto nomem;
            }
            o->member_ns[j] = p->member_ns[j];
            double md = (double)tok_median[p->tok[j]];
            if (md > 0 && (floor < 0 || md < floor)) floor = md;
        }
        fa_fusion_input in = {.occurrences = p->count, .n_members = p->n, .member_ns = (double)p->kernel_ns,
                              .gaps_ns = (double)p->gaps_ns, .read_bytes = -1, .write_bytes = -1, .flops = -1,
                              .floor_ns = floor > 0 ? floor : 0, .longest_member_ns = p->longest_ns / (double)p->count,
                              .member_bound_ns = p->bytes_occ > 0 ? p->member_bound_ns / (double)p->bytes_occ : 0};
        fa_ta_cost cost = p->pattern >= 0 ? b->patterns[p->pattern].cost : FA_TA_COST_MEMORY;
        double scale = p->bytes_occ > 0 ? (double)p->count / (double)p->bytes_occ : 0;
        if (p->bytes_occ > 0) {
            /* sizes of the occurrences that had them, scaled to all (occurrences of one sequence
             * repeat the same shapes) */
            in.read_bytes = p->read * scale;
            in.write_bytes = p->write * scale;
            o->read_bytes = p->read / (double)p->bytes_occ;
            o->write_bytes = p->write / (double)p->bytes_occ;
            o->saved_bytes = p->saved / (double)p->bytes_occ;
        } else {
            o->read_bytes = o->write_bytes = o->saved_bytes = -1;
        }
        double peak = a->roofs.fp32_gflops;
        if (cost == FA_TA_COST_EPILOGUE) {
            /* the GEMM stays (its measured time), the ops after it become its epilogue */
            in.anchor_ns = p->anchor_ns / (double)p->count;
            if (p->bytes_occ <= 0) in.read_bytes = in.write_bytes = 0;
        } else if (cost == FA_TA_COST_ATTENTION && p->bytes_occ > 0) {
            /* the fused kernel does the GEMMs' work; no member's time bounds it (the scale over the
             * scores, the fastest member, is not done at all) */
            in.floor_ns = 0;
            o->flops = p->flops / (double)p->bytes_occ;
            peak = p->tensor16 ? a->roofs.tensor_gflops : a->roofs.fp32_gflops;
            if (peak > 0) {
                in.flops = p->flops * scale;
            } else { /* no tensor roof for this device: the GEMMs as measured, the scores' traffic gone */
                in.anchor_ns = p->anchor_ns / (double)p->count;
                in.read_bytes = in.write_bytes = 0;
            }
        }
        fa_fusion_predict(&in, a->mem_roof_gbs, peak, &o->est);
        if (cost == FA_TA_COST_ATTENTION && p->bytes_occ > 0) {
            double t_mem = a->mem_roof_gbs > 0 ? (in.read_bytes + in.write_bytes) / a->mem_roof_gbs : 0;
            double t_cmp = in.flops > 0 && peak > 0 ? in.flops / peak : 0;
            if (in.anchor_ns > 0)
                o->est.basis = "attention: the two GEMMs as measured (no tensor roof for this device), the L x S scores no "
                               "longer written and read between them";
            else if (o->est.fused_ns > t_mem * 1.000001 && o->est.fused_ns > t_cmp * 1.000001)
                ; /* the fastest member's floor: fa_fusion_predict's own words */
            else if (t_cmp >= t_mem)
                o->est.basis = p->tensor16 ? "attention: the two GEMMs' FLOPs (4 B H L S D, from Input Dims) on the 16-bit "
                                             "tensor roof (data sheet); Q, K, V read and O written once, the L x S scores "
                                             "never written"
                                           : "attention: the two GEMMs' FLOPs (4 B H L S D, from Input Dims) on the FP32 roof "
                                             "(data sheet); Q, K, V read and O written once, the L x S scores never written";
            else
                o->est.basis = "attention: Q, K, V (and the mask) read and O written once on the memory roof, the L x S "
                               "scores never written; bytes from the cpu ops' Input Dims";
        }
        o->share = step_wall > 0 ? o->est.saving_ns / step_wall : 0;
        a->saving_ns += o->est.saving_ns;
        a->saving_kernel_ns += o->kernel_ns;
    }
    qsort(ops, w, sizeof *ops, cmp_opp);
    a->n_opps_total = (int64_t)w;
    a->n_opps = w < FA_TA_MAX_OPPS ? (int)w : FA_TA_MAX_OPPS;
    a->opps = fa_arena_alloc(ar, (size_t)(a->n_opps ? a->n_opps : 1) * sizeof *a->opps);
    if (!a->opps) {
        free(tok_median);
        free(ops);
        goto nomem;
    }
    memcpy(a->opps, ops, (size_t)a->n_opps * sizeof *a->opps);
    /* a window the GPU records never reached (the second profiler step launched nothing): the first
     * step's records are the timeline */
    if (!b->n_window && b->n_fb_window) {
        free(b->window);
        b->window = b->fb_window;
        b->n_window = b->n_fb_window;
        b->win_what = b->fb_what;
        b->fb_window = NULL;
        b->n_fb_window = 0;
    }
    /* the window's tags: internal opportunity id -> rank (-1 past the kept ones) */
    int32_t *rank = malloc((b->n_opps + 1) * sizeof *rank);
    if (!rank) {
        free(tok_median);
        free(ops);
        goto nomem;
    }
    for (size_t i = 0; i < b->n_opps; i++) rank[i] = -1;
    for (int i = 0; i < a->n_opps; i++) rank[a->opps[i].id] = i;
    for (size_t i = 0; i < b->n_window; i++)
        if (b->window[i].opp >= 0) {
            b->window[i].opp = rank[b->window[i].opp];
            if (b->window[i].opp < 0) b->window[i].occ = -1;
        }
    free(rank);
    free(ops);
    free(tok_median);

    /* roofline points */
    fa_ta_point *pts = calloc(b->n_points ? b->n_points : 1, sizeof *pts);
    if (!pts) goto nomem;
    for (size_t i = 0; i < b->n_points; i++) {
        const pointstat *p = &b->points[i];
        fa_ta_point *q = &pts[i];
        q->kernel = a->kernels[p->tok].name;
        q->cls = a->kernels[p->tok].cls;
        q->count = p->count;
        q->total_ns = p->total_ns;
        q->shapes = p->shape >= 0 ? b->shapes[p->shape]->dims_text : NULL;
        q->op = p->op >= 0 ? b->ops[p->op] : NULL;
        int key = fa_ta_key_of_kernel(b->toks[p->tok].name, b->toks[p->tok].cls);
        if (key < 0) key = fa_ta_key_of_op(q->op);
        size_t ol = q->op ? strlen(q->op) : 0;
        kbytes kb;
        fa__ta_kernel_bytes(p->shape >= 0 ? b->shapes[p->shape] : NULL, key >= 0 ? key : FA_TA_KEY_OTHER,
                     ol > 1 && q->op[ol - 1] == '_' && q->op[ol - 2] != '_', &kb);
        q->bytes = kb.read >= 0 && kb.write >= 0 ? kb.read + kb.write : -1;
        q->flops = q->bytes >= 0 ? kb.flops : -1;
        q->why_unknown = kb.why;
    }
    qsort(pts, b->n_points, sizeof *pts, cmp_point);
    a->n_points = b->n_points < FA_TA_MAX_POINTS ? (int)b->n_points : FA_TA_MAX_POINTS;
    a->points = fa_arena_alloc(ar, (size_t)(a->n_points ? a->n_points : 1) * sizeof *a->points);
    if (!a->points) {
        free(pts);
        goto nomem;
    }
    for (int i = 0; i < a->n_points; i++) {
        a->points[i] = pts[i];
        a->points[i].shapes = adup(ar, pts[i].shapes);
        a->points[i].op = adup(ar, pts[i].op);
    }
    free(pts);

    /* streams, gaps, stretches, graphs */
    a->streams = fa_arena_alloc(ar, (b->n_streams ? b->n_streams : 1) * sizeof *a->streams);
    if (!a->streams) goto nomem;
    for (size_t i = 0; i < b->n_streams; i++) {
        if (!b->streams[i].st.n_kernels) continue; /* only transfers, or only kernels outside the steps */
        fa_ta_stream *m = &a->streams[a->n_streams++];
        *m = b->streams[i].st;
        a->idle_ns += m->idle_ns;
        a->n_overlaps += m->n_overlaps;
    }
    qsort(a->streams, (size_t)a->n_streams, sizeof *a->streams, cmp_stream);
    a->n_gaps = b->n_gaps;
    a->gaps = fa_arena_alloc(ar, (size_t)(b->n_gaps ? b->n_gaps : 1) * sizeof *a->gaps);
    if (!a->gaps) goto nomem;
    for (int i = 0; i < b->n_gaps; i++) {
        a->gaps[i] = b->gaps[i];
        const char *op = NULL;
        if (b->lookup && b->gap_who[i].ok)
            op = b->lookup(b->lookup_user, b->gap_who[i].pid, b->gap_who[i].tid,
                           b->gaps[i].start_ns + (uint64_t)b->gaps[i].gap_ns / 2);
        a->gaps[i].cpu_op = adup(ar, op);
        a->gaps[i].next_kernel = adup(ar, b->gaps[i].next_kernel);
    }
    qsort(a->gaps, (size_t)a->n_gaps, sizeof *a->gaps, cmp_gap);
    a->n_stretches = b->n_stretches;
    a->stretches = fa_arena_alloc(ar, (size_t)(b->n_stretches ? b->n_stretches : 1) * sizeof *a->stretches);
    if (!a->stretches) goto nomem;
    for (int i = 0; i < b->n_stretches; i++) {
        a->stretches[i] = b->stretches[i];
        a->stretches[i].first_name = adup(ar, b->stretches[i].first_name);
    }
    qsort(a->stretches, (size_t)a->n_stretches, sizeof *a->stretches, cmp_stretch);
    a->launch_bound_kernels = b->launch_bound_kernels;
    a->launch_bound_ns = b->launch_bound_ns;
    a->n_graphs = (int)b->n_graphs;
    a->graphs = fa_arena_alloc(ar, (b->n_graphs ? b->n_graphs : 1) * sizeof *a->graphs);
    if (!a->graphs) goto nomem;
    for (size_t i = 0; i < b->n_graphs; i++) {
        const graphstat *g = &b->graphs[i];
        a->graphs[i] = (fa_ta_graph){g->id, g->replays, g->kernels, g->kernel_ns,
                                     adup(ar, g->launch_op >= 0 ? b->ops[g->launch_op] : NULL),
                                     adup(ar, g->capture_op >= 0 ? b->ops[g->capture_op] : NULL)};
    }

    /* the advice's own state at its peak: tables, histograms, windows */
    size_t st_bytes = b->cap_toks * sizeof(tokstat) + b->cap_points * sizeof(pointstat) +
                      b->cap_opps * sizeof(oppstat) + b->cap_streams * sizeof(strm) + b->cap_shapes * sizeof(shape_info) +
                      fa_arena_used(b->ar) +
                      (b->spool_seq ? (b->n_runs ? RUN_RECS : (size_t)b->spool_seq) * sizeof(srec) : 0) +
                      b->merge_bytes;
    for (size_t i = 0; i < b->n_toks; i++) st_bytes += fa__qh_bytes(&b->toks[i].dur);
    for (size_t i = 0; i < b->n_streams; i++) st_bytes += (size_t)b->streams[i].seg_cap * sizeof(rec);
    const fa_intern *maps[] = {b->tok_map, b->shape_map, b->frame_map, b->op_map, b->stream_map, b->graph_map,
                               b->opp_map, b->point_map, b->dims_map, b->src_map};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) st_bytes += fa_intern_bytes(maps[i]);
    a->peak_state_bytes = st_bytes;
    qsort(a->kernels, b->n_toks, sizeof *a->kernels, cmp_kernel_total);
    /* the window, its kernels as positions in the sorted kernels[] */
    a->window_what = adup(ar, b->win_what);
    if (b->n_window) {
        int32_t *pos = malloc((b->n_toks + 1) * sizeof *pos);
        a->window = fa_arena_alloc(ar, b->n_window * sizeof *a->window);
        if (!pos || !a->window) {
            free(pos);
            goto nomem;
        }
        for (size_t i = 0; i < b->n_toks; i++) pos[a->kernels[i].id] = (int32_t)i;
        for (size_t i = 0; i < b->n_window; i++) {
            a->window[i] = b->window[i];
            if (a->window[i].kernel >= 0) a->window[i].kernel = pos[a->window[i].kernel];
        }
        a->n_window = (int)b->n_window;
        free(pos);
        qsort(a->window, b->n_window, sizeof *a->window, cmp_wrec);
    }
    fa_ta_builder_free(b);
    *out = a;
    return FA_OK;
nomem:
    s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory in the trace advice");
fail:
    fa_trace_advice_free(a);
    fa_ta_builder_free(b);
    return s;
}

void fa_trace_advice_free(fa_trace_advice *a)
{
    if (!a) return;
    fa_arena_free(a->arena);
    free(a);
}
