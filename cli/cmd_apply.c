/* cli/cmd_apply — `fuse-advise apply [RUN|latest]`: re-run the stages after the baseline
 * (analysis, plan, codegen, verify, benchmark, accept/reject, outputs, reports) for a stored run,
 * reloading its model exactly as the run loaded it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "applier/applier.h"
#include "store/store.h"

static const char *k_about =
    "  Plans, generates, verifies and benchmarks fused kernels for a stored baseline run\n"
    "  (`fuse-advise run MODEL --no-apply`), then writes the outputs and reports. RUN is a run id\n"
    "  from `fuse-advise runs` (default: the latest model run). Prints what `run` prints. The plan's\n"
    "  layout is the one the run's stored plan decided unless --layout names one (auto: measure again).\n";

int fa_cmd_apply(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = fa_cli_default_db(), *spec_run = NULL, *out_dir = NULL;
    fa_pipeline_options po; /* the library's defaults, shown by --help */
    fa_pipeline_options_default(&po);
    po.apply.max_clusters = FA_APPLY_MAX_CLUSTERS_DEFAULT;
    po.apply.budget_s = FA_APPLY_BUDGET_S_DEFAULT;
    po.layout = -2; /* --layout not given: the stored plan's (below) */
    fa_cli_output_opts oo = {false, false, -1};
    bool prog_on = false, prog_off = false;
    const fa_cli_opt opts[] = {
        FA_CLI_OPT_DB(&db),
        FA_CLI_STRING("--out", "DIR", &out_dir, "outputs (default ./fuse-advise-out/<model>)"),
        FA_CLI_OPTS_ITERATIONS(&po.apply.iters, &po.apply.warmup),
        FA_CLI_OPTS_CLUSTER_CAPS(&po.max_ops, &po.max_inputs),
        FA_CLI_OPTS_APPLY(&po.apply.tolerance, &po.apply.max_clusters, &po.apply.budget_s),
        FA_CLI_OPT_LAYOUT(&po.layout),
        FA_CLI_OPTS_OUTPUT(&oo.verbose, &oo.json, &prog_on, &prog_off),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = "apply", .synopsis = "[RUN|latest] [options]", .about = k_about, .opts = opts,
                              .max_args = 1};
    fa_cli_args args;
    int prc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (prc >= 0) return prc;
    if (args.n) spec_run = args.arg[0];
    oo.progress = prog_off ? 0 : prog_on ? 1 : -1;
    fa_store *st = NULL;
    fa_status s = fa_store_open_ex(ctx, db, FA_STORE_NO_CREATE, &st);
    if (s) return fa_cli_fail(ctx, s);
    int64_t run_id;
    int rc = fa_cli_resolve_model_run(ctx, st, spec_run, &run_id);
    if (rc) { fa_store_close(st); return rc; }
    fa_arena *ar = fa_arena_create(4096);
    fa_run_info ri;
    fa_graph *g = NULL;
    s = fa_cli_reload_model(ctx, st, run_id, ar, &ri, &g);
    /* a run another process is still working on is left alone (a dead one was marked failed
     * when the database opened; a failed run whose baseline is stored may be applied again) */
    if (!s && ri.status && !strcmp(ri.status, "running"))
        s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: run %lld is unfinished ('running', process %lld): apply works on "
                         "finished runs", fa_store_path(st), (long long)run_id, (long long)ri.pid);
    /* a bad output folder is refused before the run is touched */
    if (!s) {
        char ob[4096];
        if (!out_dir) fa_cli_default_out_dir(ri.model_path ? ri.model_path : "model", ob, sizeof ob);
        s = fa_cli_check_out_dir(ctx, out_dir ? out_dir : ob, db, ri.model_path);
    }
    /* the run's plan and measurements are rewritten: it is unfinished until they all are */
    bool reopened = false;
    if (!s) s = fa_store_run_reopen(ctx, st, run_id);
    if (!s) reopened = true;
    fa_target target = FA_TARGET_CPU; /* the run's own target (a name this build may lack: refused by apply) */
    if (!s && ri.target && fa_target_parse(ctx, ri.target, &target)) {
        fa_ctx_clear(ctx);
        target = FA_TARGET_CPU;
    }
    po.apply.target = target;
    po.apply.threads = ri.threads;
    /* the layout the run's stored plan decided (measured, or named) is kept unless --layout names
     * one (--layout auto measures again) */
    fa_plan *prev = NULL;
    bool layout_given = po.layout != -2;
    if (!layout_given) po.layout = -1;
    if (!s && !layout_given) s = fa_store_get_latest_plan(ctx, st, run_id, &prev, NULL);
    if (!s && prev) po.layout_reuse = &prev->layout;
    char *cmdline = fa_cli_command_line("fuse-advise", argc, argv);
    po.command_line = cmdline; /* the fused twin's row names this command, not the baseline's */
    if (!s)
        s = fa_cli_apply_pipeline(ctx, st, g, run_id, ri.model_path, &ri, ri.device_name ? ri.device_name : "cpu", out_dir,
                                  &po, &oo); /* finishes the run */
    free(cmdline);
    if (s) {
        rc = fa_cli_fail(ctx, s);
        if (reopened) {
            fa_ctx *c2 = fa_ctx_create();
            fa_store_run_finish(c2, st, run_id, false, fa_ctx_errmsg(ctx));
            fa_ctx_free(c2);
        }
    }
    fa_plan_free(prev);
    fa_graph_free(g);
    fa_arena_free(ar);
    fa_store_close(st);
    return rc;
}
