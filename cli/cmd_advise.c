/* cli/cmd_advise — `fuse-advise advise [RUN|latest] [--json] ...`: reload the run's model,
 * analyze the run, build the fusion plan, store it, print clusters and the why-not list. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor/advisor.h"
#include "applier/applier.h"
#include "cli.h"

static const char *k_help =
    "usage: fuse-advise advise [RUN|latest] [--json] [--db PATH|URI] [--target cpu|cuda] [--arch sm_XY]\n"
    "                          [--max-ops N] [--max-inputs N] [--occupancy-floor F] [--no-gate]\n"
    "  RUN is a run id from `fuse-advise runs` (default: the latest run, a model run or an imported or\n"
    "  traced trace, which gets op-level advice). A model run's model is loaded again from its path (zoo:NAME is rebuilt) with the run's --batch/--shape/--no-fold; a model\n"
    "  file whose SHA-256 changed since the run is refused.\n"
    "  --target cuda runs the register/occupancy gate (NVRTC) unless --no-gate.\n";


/* Reload options from the run's recorded command line (--batch, --shape, --no-fold). */
static void load_opts_from_cmdline(fa_ctx *ctx, char *cmd, fa_cli_model_opts *mo)
{
    char *argv[256];
    int argc = 0;
    for (char *tok = strtok(cmd, " "); tok && argc < 255; tok = strtok(NULL, " ")) argv[argc++] = tok;
    argv[argc] = NULL;
    for (int i = 0; i < argc; i++) {
        int save = i;
        if (!strncmp(argv[i], "--batch", 7) || !strncmp(argv[i], "--shape", 7) || !strcmp(argv[i], "--no-fold")) {
            if (fa_cli_model_opt(ctx, "advise", argc, argv, &i, mo) < 0) i = save;
        }
    }
}

int fa_cmd_advise(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = fa_cli_default_db(), *spec = NULL, *v;
    bool json = false;
    fa_advise_options opt = fa_advise_options_default();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--no-gate")) opt.no_gate = true;
        else if ((v = fa_cli_opt_value(argc, argv, &i, "--db"))) db = v;
        else if ((v = fa_cli_opt_value(argc, argv, &i, "--target"))) {
            if (fa_target_parse(ctx, v, &opt.target)) return fa_cli_usage("advise", "%s", fa_ctx_errmsg(ctx));
            if (opt.target == FA_TARGET_AUTO) opt.target = FA_TARGET_CPU;
        } else if ((v = fa_cli_opt_value(argc, argv, &i, "--arch"))) {
            if (strncmp(v, "sm_", 3) || !v[3]) return fa_cli_usage("advise", "--arch wants sm_XY, got '%s'", v);
            opt.arch = v;
        } else if ((v = fa_cli_opt_value(argc, argv, &i, "--max-ops"))) {
            long x = fa_cli_parse_long("advise", "--max-ops", v, 1, 4096);
            if (x < 0) return 2;
            opt.max_ops = (int)x;
        } else if ((v = fa_cli_opt_value(argc, argv, &i, "--max-inputs"))) {
            long x = fa_cli_parse_long("advise", "--max-inputs", v, 1, 4096);
            if (x < 0) return 2;
            opt.max_inputs = (int)x;
        } else if ((v = fa_cli_opt_value(argc, argv, &i, "--occupancy-floor"))) {
            double f;
            if (fa_cli_parse_double("advise", "--occupancy-floor", v, 0, 1, true, &f) < 0) return 2;
            opt.occupancy_floor = f;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { fputs(k_help, stdout); return 0; }
        else if (argv[i][0] == '-') return fa_cli_usage("advise", "unknown option '%s'", argv[i]);
        else if (!spec) spec = argv[i];
        else return fa_cli_usage("advise", "unexpected argument '%s'", argv[i]);
    }
    fa_store *st = NULL;
    fa_status s = fa_store_open_ex(ctx, db, FA_STORE_NO_CREATE, &st);
    if (s) return fa_cli_fail(ctx, s);
    int64_t run_id = -1;
    int rc = 0;
    /* `latest` is the newest run advice can work on: a model run, or an imported or traced
     * trace (op-level advice); never the fused twin of a model run */
    rc = fa_cli_resolve_run(ctx, st, spec, &run_id);
    if (rc) { fa_store_close(st); return rc; }
    fa_arena *ar = fa_arena_create(4096);
    fa_run_info ri;
    fa_ceilings c;
    fa_analysis *a = NULL;
    fa_graph *g = NULL;
    fa_plan *plan = NULL;
    char *cmd = NULL;
    s = fa_store_get_run(ctx, st, run_id, ar, &ri);
    if (s) goto fail;
    if (ri.kind && (!strcmp(ri.kind, "import") || !strcmp(ri.kind, "trace"))) {
        /* no model graph: the advice on a trace is op-level (docs/trace-advice.md) */
        rc = fa_cli_trace_advise_stored(ctx, st, run_id, json);
        fa_arena_free(ar);
        fa_store_close(st);
        return rc;
    }
    if (!ri.model_path || (ri.kind && strcmp(ri.kind, "run"))) {
        s = fa_ctx_error(ctx, FA_ERR_INPUT, "run %" PRId64 " is a%s '%s', not a model run: there is no graph to advise on",
                         run_id, ri.kind && ri.kind[0] == 'i' ? "n" : "", ri.kind ? ri.kind : "?");
        goto fail;
    }
    if (ri.model_sha256 && ri.model_sha256[0] && strncmp(ri.model_path, "zoo:", 4)) {
        char sha[65];
        s = fa_sha256_file(ctx, ri.model_path, sha);
        if (s) {
            fa_ctx_wrap(ctx, s, "run %" PRId64 ": cannot read its model again", run_id);
            goto fail;
        }
        if (strcmp(sha, ri.model_sha256)) {
            s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s changed since run %" PRId64 " (sha256 %.12s... now, %.12s... then): "
                             "run it again", ri.model_path, run_id, sha, ri.model_sha256);
            goto fail;
        }
    }
    fa_cli_model_opts mo;
    memset(&mo, 0, sizeof mo);
    if (ri.command_line) {
        cmd = strdup(ri.command_line);
        if (cmd) load_opts_from_cmdline(ctx, cmd, &mo);
    }
    fa_load_options lo = fa_cli_load_options(&mo);
    s = fa_graph_load(ctx, ri.model_path, &lo, &g);
    if (s) goto fail;
    int64_t stored = 0;
    s = fa_store_count_nodes(ctx, st, run_id, &stored);
    if (s) goto fail;
    if (stored != g->n_nodes) {
        s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s loads as %d nodes but run %" PRId64 " stored %" PRId64 ": the model or "
                         "its load options differ from the run", ri.model_path, g->n_nodes, run_id, stored);
        goto fail;
    }
    s = fa_roofline_cpu_ceilings(ctx, fa_store_readonly(st) ? NULL : st, ri.threads, false, &c);
    if (!s) s = fa_analyze_run(ctx, st, run_id, &c, &a);
    fa_measured_fused *mf = NULL; /* fused kernels earlier plans measured on this device */
    if (!s) s = fa_store_measured_fused(ctx, st, run_id, ar, &mf, &opt.n_measured_fused);
    opt.measured_fused = mf;
    /* the probe of fused library kernels, where the run's profile describes this machine: a cpu
     * run on the same cpu model (its ceilings' device) with the run's threads. A run from another
     * machine or target keeps the profile model (the probe would time another device). */
    fa_kernel_probe *probe = NULL;
    if (!s && opt.target == FA_TARGET_CPU && ri.target && !strcmp(ri.target, "cpu") && ri.device_name &&
        c.device_name && !strcmp(ri.device_name, c.device_name) &&
        fa_kernel_probe_create(ctx, g, FA_TARGET_CPU, ri.threads, 0, &probe) != FA_OK)
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

    fa_buf b;
    fa_buf_init(&b);
    bool cuda = opt.target == FA_TARGET_CUDA;
    if (json) {
        /* the plan as plan.json writes it (plan/plan.h fa_plan_json), with what advise measured it on */
        fa_buf extra;
        fa_buf_init(&extra);
        fa_buf_puts(&extra, ",\"model\":");
        fa_json_str(&extra, ri.model_path);
        fa_buf_puts(&extra, ",\"ceilings\":{\"mem_bw_gbs\":");
        fa_json_num(&extra, c.mem_bw_gbs, 6);
        fa_buf_puts(&extra, ",\"peak_gflops\":");
        fa_json_num(&extra, c.peak_gflops, 6);
        fa_buf_puts(&extra, ",\"dispatch_ns\":");
        fa_json_num(&extra, c.launch_ns, 6);
        fa_buf_printf(&extra, "},\"iter_ns\":%" PRId64, a->iter_ns);
        fa_plan_json(&b, g, plan, NULL, extra.data);
        b.oom |= extra.oom;
        fa_buf_free(&extra);
    } else {
        fa_buf_printf_term(&b, "run %" PRId64 ": %s -> plan %d (%d clusters, %d why-not), hash %.16s\n", run_id, ri.model_path,
                           plan->plan_id, plan->n_clusters, plan->n_why_not, plan->hash);
        fa_buf_printf_term(&b, "target %s%s%s, ceilings %.2f GB/s, %.2f GFLOP/s, dispatch %.0f ns, iteration %.1f us\n\n",
                           fa_target_name(opt.target), cuda ? " " : "", cuda ? opt.arch : "", c.mem_bw_gbs, c.peak_gflops,
                           c.launch_ns, a->iter_ns / 1e3);
        for (int i = 0; i < plan->n_clusters; i++) {
            const fa_cluster *cl = &plan->clusters[i];
            fa_buf_printf_term(&b, "#%-3d %-17s %-30s %-8s saves %8.1f us (%5.2f%%)  %9.3f MB  %2d launch(es)", cl->id,
                               fa_cluster_kind_name(cl->kind), cl->label, fa_cluster_status_name(cl->status),
                               cl->est_saving_ns / 1e3, cl->est_saving_pct, cl->saved_bytes / 1e6, cl->saved_launches);
            if (cuda) fa_buf_printf_term(&b, "  regs %d spill %d B occ %.0f%%", cl->registers, cl->spill_bytes,
                                         cl->occupancy >= 0 ? 100 * cl->occupancy : -1.0);
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
    free(cmd);
    fa_plan_free(plan);
    fa_analysis_free(a);
    fa_graph_free(g);
    fa_arena_free(ar);
    fa_store_close(st);
    return rc;
}
