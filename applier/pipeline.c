/* applier/pipeline — the stages `run` and `apply` share after the baseline is stored: ceilings,
 * analysis, plan, apply, and the applier's outputs (model.folded.onnx, plan.json). */
#include "applier-impl.h"

#include "analyzer/analyzer.h"
#include "roofline/roofline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fa_pipeline_options_default(fa_pipeline_options *o)
{
    memset(o, 0, sizeof *o);
    fa_apply_options_default(&o->apply);
    fa_advise_options d = fa_advise_options_default(); /* the advisor's caps */
    o->max_ops = d.max_ops;
    o->max_inputs = d.max_inputs;
    o->layout = -1;
}

void fa_pipeline_result_free(fa_pipeline_result *r)
{
    if (!r) return;
    fa_apply_result_free(r->apply);
    fa_plan_free(r->plan);
    fa_analysis_free(r->analysis);
    free(r);
}

/* model.folded.onnx: the model with BN folded into its producers, standard ONNX ops only, with
 * the original's symbolic dims where they can be restored (a dynamic-batch export stays dynamic;
 * otherwise a warning on the ctx's log and the bound shapes). */
static fa_status write_folded(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const fa_cluster_verdict *v,
                              const char *path)
{
    fa_graph *fg = NULL;
    fa_status s = fa_bn_folded_graph(ctx, g, p, v, &fg);
    if (!s && fa_graph_restore_symbolic(ctx, fg, g, NULL) != FA_OK) {
        fa_log(ctx, FA_LOG_WARN, "model.folded.onnx keeps the bound shapes: %s", fa_ctx_errmsg(ctx));
        fa_ctx_clear(ctx);
        fa_graph_free(fg);
        fg = NULL;
        s = fa_bn_folded_graph(ctx, g, p, v, &fg);
    }
    if (!s) s = fa_onnx_export(ctx, fg, path);
    fa_graph_free(fg);
    return s;
}

fa_status fa_pipeline_run(fa_ctx *ctx, fa_store *st, const fa_graph *g, int64_t run_id, const fa_pipeline_options *o,
                          fa_pipeline_result **out)
{
    if (!o || !o->apply.out_dir) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "fa_pipeline_run: no options or output folder");
    const fa_apply_options *ap = &o->apply;
    fa_pipeline_result *r = calloc(1, sizeof *r);
    if (!r) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    char path[4400];
    /* each stage reported as it starts and ends (fa_apply_options.progress; verify, apply and e2e
     * come from fa_apply) */
#define STAGE(name, done) (ap->progress ? ap->progress(ap->progress_user, name, done, 1) : (void)0)
    STAGE("ceilings", 0);
    fa_status s = fa_roofline_ceilings(ctx, st, ap->target, ap->threads, false, &r->ceilings);
    if (!s) STAGE("ceilings", 1), STAGE("analysis", 0);
    if (!s) s = fa_analyze_run(ctx, st, run_id, &r->ceilings, &r->analysis);
    if (!s) s = fa_analysis_save(ctx, st, r->analysis);
    if (!s) STAGE("analysis", 1), STAGE("plan", 0);
    /* the plan's layout, before the probe: the probe, the plan's generated kernels and the apply
     * stage all run in it */
    fa_plan_layout layout = fa_plan_layout_unknown();
    if (!s && o->layout < 0 && o->layout_reuse && o->layout_reuse->source != FA_LAYOUT_SRC_UNKNOWN && !getenv("FA_BLOCKED_LAYOUT"))
        layout = *o->layout_reuse;
    else if (!s) s = fa_layout_choose(ctx, g, ap->target, ap->threads, o->layout, &layout);
    if (!s && layout.source == FA_LAYOUT_SRC_MEASURED)
        fa_log(ctx, FA_LOG_INFO, "plan layout %s (default %s; %s %.3f ms vs %.3f ms over %d paired rounds)",
               fa_layout_name(layout.layout), fa_layout_name(layout.deflt), fa_layout_name(layout.rival),
               layout.rival_median_ns / 1e6, layout.default_median_ns / 1e6, layout.rounds);
    fa_advise_options ao = fa_advise_options_default();
    ao.target = ap->target; /* the register/occupancy gate is the target's (none on cpu) */
    ao.max_ops = o->max_ops;
    ao.max_inputs = o->max_inputs;
    /* fused kernels earlier plans measured on this device: their time predicts the same kernel's */
    fa_arena *mar = fa_arena_create(1 << 16);
    fa_measured_fused *mf = NULL;
    if (!s && !mar) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    if (!s) s = fa_store_measured_fused(ctx, st, run_id, mar, &mf, &ao.n_measured_fused);
    ao.measured_fused = mf;
    /* the probe of fused kernels (library and generated): this run's baseline was measured on this machine with
     * these threads, so the probe's figures and the profile's describe the same device. A target
     * it cannot run on (no device) leaves the profile model, with the log saying why. */
    fa_kernel_probe *probe = NULL;
    if (!s && fa_kernel_probe_create(ctx, g, ap->target, ap->threads, 0, &probe) != FA_OK) {
        fa_log(ctx, FA_LOG_INFO, "no probe of fused kernels: %s", fa_ctx_errmsg(ctx));
        fa_ctx_clear(ctx);
    }
    if (!s) s = fa_kernel_probe_set_cache(ctx, probe, ap->cache_dir, ap->cache_max_bytes); /* the applier's cache */
    if (!s) s = fa_kernel_probe_set_layout(ctx, probe, layout.layout);
    ao.probe = probe ? fa_kernel_probe_fused : NULL;
    ao.probe_user = probe;
    ao.probe_revisit = probe ? fa_kernel_probe_revisit : NULL;
    ao.probe_visits = FA_PROBE_VISITS;
    ao.probe_prepare = probe ? fa_kernel_probe_prepare : NULL;
    /* the plan, with the probe's builds and timings: seconds on a full-size model */
    if (!s) s = fa_advise(ctx, g, r->analysis, &ao, &r->plan);
    if (probe) {
        int built, reused, over;
        double spent;
        fa_kernel_probe_stats(probe, &built, &reused, &over, &spent);
        fa_log(ctx, FA_LOG_INFO, "probe of fused kernels: %d built and timed in %.2f s, %d served by an earlier "
               "probe of the same signature, %d left to the profile model by the budget", built, spent, reused, over);
    }
    fa_kernel_probe_free(probe);
    fa_arena_free(mar); /* the plan keeps copies of what it says about them */
    if (!s) {
        r->plan->run_id = run_id;
        r->plan->layout = layout;
        s = fa_plan_save(ctx, st, r->plan);
    }
    if (!s) STAGE("plan", 1);
#undef STAGE
    if (!s) s = fa_apply(ctx, g, r->plan, ap, &r->apply);
    if (!s)
        fa_log(ctx, FA_LOG_INFO, "apply stage: %d cluster(s) with samples from %d benchmark(s) (one per signature), %d "
               "generated kernel(s) compiled (one per distinct code)", r->apply->n_cluster_bench, r->apply->n_benchmarked,
               r->apply->kernels_compiled);
    if (!s) s = fa_store_apply_result(ctx, st, r->plan, r->apply, o->command_line);
    /* each accepted cluster's saving in the model, from the baseline's trace and the fused
     * twin's just stored, into the verdicts (stored again: plan.json and the reports read them) */
    if (!s && r->apply->fused_graph && r->apply->fused_trace) {
        int64_t fid = -1;
        s = fa_store_get_fused_run(ctx, st, run_id, false, &fid);
        if (!s && fid >= 0)
            s = fa_apply_inmodel_savings(ctx, st, run_id, fid, r->plan, r->apply->fused_graph, &r->apply->fused_map,
                                         r->apply->baseline_rounds_trace, r->apply->verdicts);
        if (!s && fid >= 0) s = fa_store_put_cluster_verdicts(ctx, st, r->plan, r->apply->verdicts);
    }
    for (int i = 0; !s && i < r->plan->n_clusters; i++) r->folded_model |= r->plan->clusters[i].kind == FA_CLUSTER_BN_FOLD;
    if (!s && r->folded_model) {
        snprintf(path, sizeof path, "%s/model.folded.onnx", ap->out_dir);
        s = write_folded(ctx, g, r->plan, r->apply->verdicts, path);
    }
    if (!s) {
        snprintf(path, sizeof path, "%s/plan.json", ap->out_dir);
        s = fa_write_plan_json(ctx, g, r->plan, r->apply->verdicts, path);
    }
    if (s) {
        fa_pipeline_result_free(r);
        return s;
    }
    *out = r;
    return FA_OK;
}
