/* cli/cmd_advise — `fuse-advise advise [RUN|latest] [--json] ...`: reload the run's model,
 * analyze the run, build the fusion plan, store it, print clusters and the why-not list. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor/advisor.h"
#include "advisor/gate.h"
#include "applier/applier.h"
#include "cli.h"
#include "trace/trace.h"

static const char *k_about =
    "  RUN is a run id from `fuse-advise runs` (default: the latest run, a model run or an imported or\n"
    "  traced trace, which gets op-level advice). A model run's model is loaded again from its path\n"
    "  (zoo:NAME is rebuilt) with the run's --batch/--shape/--no-fold; a model file whose SHA-256\n"
    "  changed since the run is refused. MODEL (an .onnx file or zoo:NAME) is planned without a run:\n"
    "  the registry's FLOPs and bytes on default ceilings, nodes of unsupported ops kept opaque and\n"
    "  listed, nothing stored.\n"
    "  --target cuda on a run measured on the cpu (or a MODEL) plans for the GPU --arch names from its\n"
    "  data sheet's roofs, no device needed or measured: sm_70, sm_75, sm_80, sm_86, sm_89, sm_90, sm_100\n"
    "  (the data-center part of that generation: sm_80 A100 80GB SXM, sm_90 H100 SXM, sm_100 B200) or a\n"
    "  part's name ('H100 PCIe', 'A100 40GB', L4, L40S, ...).\n"
    "  --against TRACE_RUN sets such a plan beside a trace of the model imported from that GPU: each\n"
    "  cluster member matched to the trace's op of its kind reading inputs of its sizes (no pairing\n"
    "  guessed), its estimated and measured kernel times, and their ratio; a trace from another part\n"
    "  is named and not compared.\n";

/* A RUN argument: "latest" or a run id (digits); anything else names a model. */
static bool is_run_spec(const char *a)
{
    if (!strcmp(a, "latest")) return true;
    for (const char *p = a; *p; p++)
        if (*p < '0' || *p > '9') return false;
    return *a != 0;
}

/* --arch sm_XY or a GPU part's name: resolved with --target (fa_gpu_plan_device) after parsing */
static int opt_arch(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *v, fa_buf *why)
{
    (void)ctx, (void)verb;
    if (!v[0]) {
        fa_buf_printf_term(why, "--arch wants sm_XY or a GPU's name");
        return -1;
    }
    *(const char **)o->dest = v;
    return 0;
}

/* --against in --json: the one fa_against, every figure as computed there (ns) */
static void against_json(fa_buf *b, const fa_graph *g, const fa_plan *p, const fa_against *vs)
{
    fa_buf_printf(b, ",\"against\":{\"trace_run\":%" PRId64 ",\"trace_device\":", vs->trace_run);
    fa_json_str(b, vs->trace_device);
    fa_buf_puts(b, ",\"trace_part\":");
    fa_json_str(b, vs->trace_part);
    fa_buf_puts(b, ",\"plan_part\":");
    fa_json_str(b, vs->plan_part);
    fa_buf_puts(b, ",\"plan_arch\":");
    fa_json_str(b, vs->plan_arch);
    fa_buf_printf(b, ",\"compared\":%s,\"few_matches\":%s,\"why\":", vs->compared ? "true" : "false",
                  vs->few ? "true" : "false");
    fa_json_str(b, vs->why);
    fa_buf_printf(b, ",\"member_kernels\":%d,\"matched\":%d,\"est_ns\":", vs->n_kernels, vs->n_matched);
    fa_json_num(b, vs->n_matched ? vs->est_ns : NAN, FA_JSON_NS_DIGITS); /* sums over the matched: none, null */
    fa_buf_puts(b, ",\"measured_ns\":");
    fa_json_num(b, vs->n_matched ? vs->measured_ns : NAN, FA_JSON_NS_DIGITS);
    fa_buf_puts(b, ",\"ratio\":");
    fa_json_num(b, vs->ratio, 4);
    fa_buf_puts(b, ",\"clusters\":[");
    for (int i = 0; i < vs->n_clusters; i++) {
        const fa_against_cluster *ac = &vs->clusters[i];
        const fa_cluster *c = &p->clusters[ac->cluster];
        fa_buf_printf(b, "%s{\"id\":%d,\"member_kernels\":%d,\"matched\":%d,\"est_ns\":", i ? "," : "", c->id,
                      ac->n_kernels, ac->n_matched);
        fa_json_num(b, ac->n_matched ? ac->est_ns : NAN, FA_JSON_NS_DIGITS);
        fa_buf_puts(b, ",\"measured_ns\":");
        fa_json_num(b, ac->n_matched ? ac->measured_ns : NAN, FA_JSON_NS_DIGITS);
        fa_buf_puts(b, ",\"est_fused_ns\":");
        fa_json_num(b, c->pred_fused_ns, FA_JSON_NS_DIGITS);
        fa_buf_puts(b, ",\"one_op\":");
        fa_json_str(b, ac->one_op);
        fa_buf_puts(b, ",\"one_op_ns\":");
        fa_json_num(b, ac->one_op ? ac->one_op_ns : NAN, FA_JSON_NS_DIGITS);
        fa_buf_puts(b, ",\"members\":[");
        for (int m = 0; m < ac->n_members; m++) {
            const fa_against_member *am = &ac->members[m];
            fa_buf_puts(b, m ? ",{\"node\":" : "{\"node\":");
            fa_json_str(b, g->nodes[am->node]->name);
            fa_buf_puts(b, ",\"op_type\":");
            fa_json_str(b, g->nodes[am->node]->op_type);
            fa_buf_puts(b, ",\"est_ns\":");
            fa_json_num(b, am->est_ns, FA_JSON_NS_DIGITS);
            fa_buf_puts(b, ",\"trace_op\":");
            fa_json_str(b, am->op);
            fa_buf_puts(b, ",\"trace_shapes\":");
            fa_json_str(b, am->shapes);
            fa_buf_puts(b, ",\"calls\":");
            fa_json_num(b, am->op ? (double)am->calls : NAN, 15); /* unmatched: null */
            fa_buf_puts(b, ",\"measured_ns\":");
            fa_json_num(b, am->measured_ns, FA_JSON_NS_DIGITS);
            fa_buf_puts(b, ",\"why\":");
            fa_json_str(b, am->why);
            fa_buf_puts(b, "}");
        }
        fa_buf_puts(b, "]}");
    }
    fa_buf_puts(b, "]}");
}

/* --against in the text: the plan-wide line under the header */
static void against_head_text(fa_buf *b, const fa_against *vs)
{
    if (!vs->compared) {
        fa_buf_printf_term(b, "against: %s\n\n", vs->why);
        return;
    }
    fa_buf_printf_term(b, "against trace %" PRId64 " (%s, %s): %d of the plan's %d member kernels matched an op of the "
                       "trace by kind and input sizes", vs->trace_run, vs->trace_device ? vs->trace_device : "?",
                       vs->trace_part, vs->n_matched, vs->n_kernels);
    if (vs->n_matched)
        fa_buf_printf_term(b, "; for them estimated %.1f us on %s, measured %.1f us", vs->est_ns / 1e3, vs->plan_part,
                           vs->measured_ns / 1e3);
    if (vs->few) fa_buf_printf_term(b, "\n  %s", vs->why);
    else if (vs->ratio == vs->ratio) fa_buf_printf_term(b, " (measured / estimated %.2f)", vs->ratio);
    fa_buf_puts(b, "\n\n");
}

/* --against in the text: one cluster's line(s) */
static void against_cluster_text(fa_buf *b, const fa_graph *g, const fa_cluster *c, const fa_against *vs,
                                 const fa_against_cluster *ac)
{
    if (!vs->compared) return;
    fa_buf_printf_term(b, "\n     trace %" PRId64 ": %d of %d member kernels matched", vs->trace_run, ac->n_matched,
                       ac->n_kernels);
    if (ac->n_matched)
        fa_buf_printf_term(b, ": estimated %.1f us for them on %s, measured %.1f us", ac->est_ns / 1e3, vs->plan_part,
                           ac->measured_ns / 1e3);
    for (int m = 0, shown = 0; m < ac->n_members; m++) {
        const fa_against_member *am = &ac->members[m];
        if (am->op || am->est_ns <= 0) continue;
        if (shown++ == 3) {
            fa_buf_puts(b, "; ...");
            break;
        }
        fa_buf_printf_term(b, "%s %s(%s): %s", shown == 1 ? "; not matched:" : ";", g->nodes[am->node]->name,
                           g->nodes[am->node]->op_type, am->why);
    }
    if (ac->one_op && c->kind == FA_CLUSTER_EPILOGUE)
        fa_buf_printf_term(b, "\n     trace %" PRId64 " ran its epilogue's function as one %s: %.1f us per call (%" PRId64
                           " calls); fused, the epilogue is estimated to add %.1f us to the anchor's kernel",
                           vs->trace_run, ac->one_op, ac->one_op_ns / 1e3, ac->one_op_calls, c->pred_fused_ns / 1e3);
    else if (ac->one_op)
        fa_buf_printf_term(b, "\n     trace %" PRId64 " ran %s as one %s: %.1f us per call (%" PRId64 " calls); the fused "
                           "kernel is estimated at %.1f us", vs->trace_run,
                           ac->residual_apart ? "its norm (the residual add apart)" : "it",
                           ac->one_op, ac->one_op_ns / 1e3, ac->one_op_calls, c->pred_fused_ns / 1e3);
}

int fa_cmd_advise(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = fa_cli_default_db(), *spec_run = NULL, *arch_spec = NULL;
    int64_t against_run = 0;
    bool json = false;
    fa_advise_options opt = fa_advise_options_default();
    fa_cli_model_opts mo = {0};
    const fa_cli_opt opts[] = {
        FA_CLI_OPT_JSON(&json),
        FA_CLI_OPT_DB(&db),
        FA_CLI_CALLBACK("--target", "cpu|cuda", fa_cli_opt_target, &opt.target, 0, 0, 0,
                        "the plan's target (default cpu); cuda runs the register/occupancy gate (NVRTC)"),
        FA_CLI_CALLBACK("--arch", "sm_XY|GPU", opt_arch, &arch_spec, 0, 0, 0,
                        "the GPU planned for: its data sheet's roofs and the gate's architecture (default sm_90, H100 SXM)"),
        FA_CLI_I64("--against", "TRACE_RUN", &against_run, 1, INT64_MAX, 0,
                   "set the GPU estimate beside the kernels of an imported trace of the model (a run id)"),
        FA_CLI_DOUBLE("--occupancy-floor", "F", &opt.occupancy_floor, 0, 1, FA_CLI_MIN_OPEN,
                      "the gate refuses a memory-bound kernel under this occupancy"),
        FA_CLI_FLAG("--no-gate", &opt.no_gate, "skip the register/occupancy gate"),
        FA_CLI_OPTS_CLUSTER_CAPS(&opt.max_ops, &opt.max_inputs),
        FA_CLI_OPTS_MODEL(&mo),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = "advise", .synopsis = "[RUN|latest] [options]\nMODEL [options]", .about = k_about,
                              .opts = opts, .max_args = 1};
    fa_cli_args args;
    int prc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (prc >= 0) return prc;
    if (args.n) spec_run = args.arg[0];
    if (opt.target == FA_TARGET_AUTO) opt.target = FA_TARGET_CPU;
    /* the GPU planned for: its data sheet's roofs and its architecture's limits (the gate's arch) */
    fa_gpu_plan_dev dev;
    if (opt.target == FA_TARGET_CUDA) {
        if (fa_gpu_plan_device(ctx, arch_spec, &dev)) return fa_cli_usage("advise", "%s", fa_ctx_errmsg(ctx));
        opt.arch = dev.limits->arch;
        opt.device = &dev;
    } else if (arch_spec) {
        return fa_cli_usage("advise", "--arch is for --target cuda");
    }
    if (against_run && opt.target != FA_TARGET_CUDA)
        return fa_cli_usage("advise", "--against sets a plan for a GPU (--target cuda) beside a trace taken on it");
    fa_store *st = NULL;
    fa_status s = FA_OK;
    int64_t run_id = -1;
    int rc = 0;
    fa_arena *ar = fa_arena_create(4096);
    fa_run_info ri;
    memset(&ri, 0, sizeof ri);
    fa_ceilings c;
    memset(&c, 0, sizeof c);
    fa_analysis *a = NULL;
    fa_graph *g = NULL;
    fa_plan *plan = NULL;
    fa_trace_advice *ta = NULL; /* --against's trace */
    fa_against vs;
    memset(&vs, 0, sizeof vs);
    if (spec_run && !is_run_spec(spec_run)) {
        /* a model without a run: planned on the registry's costs, unsupported ops kept opaque */
        fa_load_options lo = fa_cli_load_options(&mo);
        lo.keep_unsupported = true;
        ri.model_path = spec_run;
        s = fa_graph_load(ctx, spec_run, &lo, &g);
        if (!s) {
            fa_cli_note_dim_defaults(g);
            fa_cli_memory_policy(g, 0);
            fa_cli_note_opaque(g);
            s = fa_advise(ctx, g, NULL, &opt, &plan);
        }
        if (!s && against_run) s = fa_store_open_ex(ctx, db, FA_STORE_NO_CREATE, &st);
        if (s) goto fail;
        goto against;
    }
    if (mo.n_bindings || mo.batch || mo.no_fold || mo.no_dim_defaults) {
        rc = fa_cli_usage("advise", "--shape/--batch/--no-fold/--no-dim-defaults go with a MODEL; a RUN is loaded as it ran");
        fa_arena_free(ar);
        return rc;
    }
    s = fa_store_open_ex(ctx, db, FA_STORE_NO_CREATE, &st);
    if (s) {
        fa_arena_free(ar);
        return fa_cli_fail(ctx, s);
    }
    /* `latest` is the newest run advice can work on: a model run, or an imported or traced
     * trace (op-level advice); never the fused twin of a model run */
    rc = fa_cli_resolve_run(ctx, st, spec_run, &run_id);
    if (rc) {
        fa_arena_free(ar);
        fa_store_close(st);
        return rc;
    }
    s = fa_store_get_run(ctx, st, run_id, ar, &ri);
    if (s) goto fail;
    if (ri.kind && (!strcmp(ri.kind, "import") || !strcmp(ri.kind, "trace"))) {
        /* no model graph: the advice on a trace is op-level (docs/trace-advice.md) */
        rc = fa_cli_trace_advise_stored(ctx, st, run_id, json);
        fa_arena_free(ar);
        fa_store_close(st);
        return rc;
    }
    /* the ceilings first, before the graph and the run's kernels are loaded: measuring them (the
     * first advice on this device and thread count) holds three 64 MiB triad buffers, which would
     * otherwise add to the graph's and the analysis' memory at the process's peak */
    s = fa_roofline_cpu_ceilings(ctx, fa_store_readonly(st) ? NULL : st, ri.threads, false, &c);
    if (s) goto fail;
    s = fa_cli_reload_model(ctx, st, run_id, ar, &ri, &g); /* checked by SHA-256, the run's load options */
    if (s) goto fail;
    int64_t stored = 0;
    s = fa_store_count_nodes(ctx, st, run_id, &stored);
    if (s) goto fail;
    if (stored != g->n_nodes) {
        s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s loads as %d nodes but run %" PRId64 " stored %" PRId64 ": the model or "
                         "its load options differ from the run", ri.model_path, g->n_nodes, run_id, stored);
        goto fail;
    }
    s = fa_analyze_run(ctx, st, run_id, &c, &a);
    fa_measured_fused *mf = NULL; /* fused kernels earlier plans measured on this device */
    if (!s) s = fa_store_measured_fused(ctx, st, run_id, ar, &mf, &opt.n_measured_fused);
    opt.measured_fused = mf;
    /* the probe of fused library kernels, where the run's profile describes this machine: a cpu
     * run on the same cpu model (its ceilings' device) with the run's threads. A run from another
     * machine or target keeps the profile model (the probe would time another device). */
    fa_kernel_probe *probe = NULL;
    fa_target run_target = FA_TARGET_AUTO;
    if (!s && ri.target && fa_target_parse(ctx, ri.target, &run_target)) fa_ctx_clear(ctx); /* a name this build lacks */
    if (!s && run_target == opt.target && !fa_target_has(opt.target, FA_TARGET_CAP_ACCELERATOR) && ri.device_name &&
        c.device_name && !strcmp(ri.device_name, c.device_name) &&
        fa_kernel_probe_create(ctx, g, opt.target, ri.threads, 0, &probe) != FA_OK)
        fa_ctx_clear(ctx); /* no probe: the profile model */
    opt.probe = probe ? fa_kernel_probe_fused : NULL;
    opt.probe_user = probe;
    opt.probe_revisit = probe ? fa_kernel_probe_revisit : NULL;
    opt.probe_visits = FA_PROBE_VISITS;
    opt.probe_prepare = probe ? fa_kernel_probe_prepare : NULL;
    if (!s) s = fa_advise(ctx, g, a, &opt, &plan);
    fa_kernel_probe_free(probe);
    if (!s && !fa_store_readonly(st)) s = fa_plan_save(ctx, st, plan);
    if (s) goto fail;

against:;
    /* the estimate beside a trace measured on the GPU (advisor/against.c) */
    if (against_run) {
        fa_run_info ti;
        if (!plan->estimated) {
            rc = fa_cli_usage("advise", "--against: this plan is not estimated from a data sheet (the run was measured "
                              "on the target's own kind of device): compare its run with the trace instead");
            goto out;
        }
        s = fa_store_get_run(ctx, st, against_run, ar, &ti);
        if (!s && !(ti.kind && (!strcmp(ti.kind, "import") || !strcmp(ti.kind, "trace"))))
            s = fa_ctx_error(ctx, FA_ERR_INPUT, "--against %" PRId64 ": run %" PRId64 " is a %s run, not an imported "
                             "or traced trace", against_run, against_run, ti.kind ? ti.kind : "model");
        if (!s) s = fa_trace_advise_run(ctx, st, against_run, NULL, &ta);
        if (!s) s = fa_plan_against_trace(ctx, g, plan, opt.device, ta, against_run, ar, &vs); /* borrows ta */
        if (s) goto fail;
    }

    fa_buf b;
    fa_buf_init(&b);
    bool cuda = fa_target_has(opt.target, FA_TARGET_CAP_KERNEL_REPORT); /* the gate's figures exist */
    /* the figures the plan used: the planned GPU's data sheet, or the profile's ceilings */
    const fa_gpu_plan_dev *est = plan->estimated ? opt.device : NULL;
    double used_bw = est ? est->roofs.hbm_gbs : c.mem_bw_gbs, used_peak = est ? est->roofs.fp32_gflops : c.peak_gflops,
           used_launch = est ? est->launch_ns : c.launch_ns;
    char lib[300];
    if (json) {
        /* the plan as plan.json writes it (plan/plan.h fa_plan_json), with the figures advise used:
         * the planned GPU's data sheet, the profile's ceilings, or the defaults */
        fa_buf extra;
        fa_buf_init(&extra);
        fa_buf_puts(&extra, ",\"model\":");
        fa_json_str(&extra, ri.model_path);
        if (run_id < 0) fa_buf_printf(&extra, ",\"unsupported_nodes\":%d", g->n_unsupported);
        fa_buf_puts(&extra, ",\"ceilings\":{\"mem_bw_gbs\":");
        fa_json_num(&extra, used_bw, 6);
        fa_buf_puts(&extra, ",\"peak_gflops\":");
        fa_json_num(&extra, used_peak, 6);
        fa_buf_puts(&extra, ",\"dispatch_ns\":");
        fa_json_num(&extra, used_launch, 6);
        fa_buf_printf(&extra, ",\"source\":\"%s\"},\"iter_ns\":%" PRId64 ",\"estimated_for\":",
                      est ? "data sheet" : a ? "measured" : "default", a ? a->iter_ns : 0);
        if (est) {
            fa_buf_puts(&extra, "{\"device\":");
            fa_json_str(&extra, est->roofs.label);
            fa_buf_puts(&extra, ",\"arch\":");
            fa_json_str(&extra, est->roofs.arch);
            fa_buf_printf(&extra, ",\"sms\":%d,\"measured\":false,\"iter_ns\":%.0f}", est->roofs.units,
                          plan->device_iter_ns);
        } else {
            fa_buf_puts(&extra, "null");
        }
        /* how each library cluster runs on cuda (fa_gate_library_kernel), by cluster id */
        fa_buf_puts(&extra, ",\"libraries\":[");
        for (int i = 0, k = 0; cuda && i < plan->n_clusters; i++) {
            const char *lk = fa_gate_library_kernel(g, &plan->clusters[i], lib, sizeof lib);
            if (!lk) continue;
            fa_buf_printf(&extra, "%s{\"id\":%d,\"library\":", k++ ? "," : "", plan->clusters[i].id);
            fa_json_str(&extra, lk);
            fa_buf_puts(&extra, "}");
        }
        fa_buf_puts(&extra, "]");
        if (against_run) against_json(&extra, g, plan, &vs);
        fa_plan_json(&b, g, plan, NULL, extra.data);
        b.oom |= extra.oom;
        fa_buf_free(&extra);
    } else {
        if (run_id < 0 && est)
            fa_buf_printf_term(&b, "model %s (no run): %d clusters, %d why-not, hash %.16s\n", ri.model_path,
                               plan->n_clusters, plan->n_why_not, plan->hash);
        else if (run_id < 0)
            fa_buf_printf_term(&b, "model %s (no run): %d clusters, %d why-not, hash %.16s; target %s%s%s; predicted from the "
                               "registry's FLOPs and bytes on default ceilings (run the model for measured ones)\n\n",
                               ri.model_path, plan->n_clusters, plan->n_why_not, plan->hash, fa_target_name(opt.target),
                               cuda ? " " : "", cuda ? opt.arch : "");
        else if (est)
            fa_buf_printf_term(&b, "run %" PRId64 ": %s -> plan %d (%d clusters, %d why-not), hash %.16s\n", run_id,
                               ri.model_path, plan->plan_id, plan->n_clusters, plan->n_why_not, plan->hash);
        else
            fa_buf_printf_term(&b, "run %" PRId64 ": %s -> plan %d (%d clusters, %d why-not), hash %.16s\n"
                               "target %s%s%s, ceilings %.2f GB/s, %.2f GFLOP/s, dispatch %.0f ns, iteration %.1f us\n\n",
                               run_id, ri.model_path, plan->plan_id, plan->n_clusters, plan->n_why_not, plan->hash,
                               fa_target_name(opt.target), cuda ? " " : "", cuda ? opt.arch : "", c.mem_bw_gbs,
                               c.peak_gflops, c.launch_ns, a->iter_ns / 1e3);
        if (est) {
            fa_buf_printf_term(&b, "target cuda %s: estimated for %s from its data sheet, no device measured: %.0f GB/s HBM, "
                               "%.0f GFLOP/s FP32, %d SMs, %.1f us per launch; estimated iteration %.1f us",
                               est->roofs.arch, est->roofs.label, used_bw, used_peak, est->roofs.units, used_launch / 1e3,
                               plan->device_iter_ns / 1e3);
            if (a)
                fa_buf_printf_term(&b, " (the profile's %.1f us on %s does not carry over)", a->iter_ns / 1e3,
                                   ri.target ? ri.target : "another device");
            fa_buf_puts(&b, "\n\n");
        }
        if (against_run) against_head_text(&b, &vs);
        for (int i = 0; i < plan->n_clusters; i++) {
            const fa_cluster *cl = &plan->clusters[i];
            /* a predicted loss is worded as one, never as a negative saving */
            bool loss = cl->est_saving_ns < 0;
            char spread[256]; /* the kind's past misses or the probe's interval (fa_cluster_spread_phrase) */
            char share[32] = ""; /* of the iteration; none without one (a bare model) */
            if (isfinite(cl->est_saving_pct)) snprintf(share, sizeof share, " (%5.2f%%)", fabs(cl->est_saving_pct));
            fa_buf_printf_term(&b, "#%-3d %-17s %-30s %-8s %s %8.1f us%s%s  %9.3f MB  %2d launch(es)", cl->id,
                               fa_cluster_kind_name(cl->kind), cl->label, fa_cluster_status_name(cl->status),
                               loss ? "loses" : "saves", fabs(cl->est_saving_ns) / 1e3,
                               fa_cluster_spread_phrase(cl, spread, sizeof spread), share, cl->saved_bytes / 1e6,
                               cl->saved_launches);
            const char *lk = cuda ? fa_gate_library_kernel(g, cl, lib, sizeof lib) : NULL;
            if (lk) fa_buf_printf_term(&b, "  %s", lk);
            else if (cuda && cl->registers >= 0)
                fa_buf_printf_term(&b, "  regs %d spill %d B occ %.0f%% (%s)", cl->registers, cl->spill_bytes,
                                   100 * cl->occupancy, opt.arch);
            else if (cuda)
                fa_buf_puts(&b, opt.no_gate ? "  not compiled (--no-gate)" : "  not compiled (no cuda kernel generated)");
            fa_buf_puts(&b, "\n     members:");
            for (int k = 0; k < cl->n_members; k++) {
                const fa_node *n = g->nodes[cl->members[k]];
                fa_buf_printf_term(&b, " %s(%s)", n->name, n->op_type);
            }
            if (cl->score_bytes)
                fa_buf_printf_term(&b, "\n     peak memory: %.3f MB of score tensors the unfused ops hold at once, never written fused",
                                   cl->score_bytes / 1e6);
            if (cl->basis) fa_buf_printf_term(&b, "\n     basis: %s", cl->basis);
            if (cl->n_post_ops) {
                fa_buf_puts(&b, "\n     post-ops:");
                for (int k = 0; k < cl->n_post_ops; k++) {
                    char po[64];
                    int t = cl->post_ops[k].operand;
                    fa_post_op_format(&cl->post_ops[k], po, sizeof po);
                    fa_buf_printf_term(&b, " %s%s%s", po, t >= 0 ? " " : "", t >= 0 ? g->tensors[t]->name : "");
                }
            }
            if (cl->depends_on >= 0) fa_buf_printf_term(&b, "\n     after cluster #%d", cl->depends_on);
            if (cl->reason) fa_buf_printf_term(&b, "\n     reason: %s", cl->reason);
            if (against_run) against_cluster_text(&b, g, cl, &vs, &vs.clusters[i]);
            fa_buf_puts(&b, "\n");
        }
        fa_buf_printf_term(&b, "\nwhy not fused (%d edges):\n", plan->n_why_not);
        for (int i = 0; i < plan->n_why_not; i++) {
            const fa_why_not *w = &plan->why_not[i];
            fa_buf_printf_term(&b, "  %-26s %s -> %s: %s\n", fa_why_code_name(w->code), w->producer >= 0 ? g->nodes[w->producer]->name : "(input)",
                               w->consumer >= 0 ? g->nodes[w->consumer]->name : "-", w->reason);
        }
    }
    fwrite(b.data, 1, b.len, stdout);
    fa_buf_free(&b);
    goto out;
fail:
    rc = fa_cli_fail(ctx, s);
out:
    fa_trace_advice_free(ta);
    fa_plan_free(plan);
    fa_analysis_free(a);
    fa_graph_free(g);
    fa_arena_free(ar);
    fa_store_close(st);
    return rc;
}
