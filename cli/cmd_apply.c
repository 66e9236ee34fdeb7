/* cli/cmd_apply — `fuse-advise apply [RUN|latest]`: re-run the stages after the baseline
 * (analysis, plan, codegen, verify, benchmark, accept/reject, outputs, reports) for a stored run,
 * reloading its model exactly as the run loaded it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "applier/applier.h"
#include "store/store.h"

static const char *k_help =
    "usage: fuse-advise apply [RUN|latest] [--db PATH|URI] [--out DIR] [--iters N] [--warmup W] [--tolerance T]\n"
    "                         [--max-ops N] [--max-inputs N] [--max-clusters N] [--apply-budget S]\n"
    "                         [--verbose] [--json] [--progress|--no-progress]\n"
    "  Plans, generates, verifies and benchmarks fused kernels for a stored baseline run\n"
    "  (`fuse-advise run MODEL --no-apply`), then writes the outputs and reports. Prints what\n"
    "  `run` prints (--verbose: every cluster; --json: summary.json; progress as `run`'s).\n";

int fa_cmd_apply(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = fa_cli_default_db(), *spec = NULL, *out_dir = NULL, *v;
    long iters = 20, warmup = 3, max_ops = 16, max_inputs = 8;
    double tolerance = 1e-5;
    int max_clusters = 0;
    double budget_s = 0;
    fa_cli_output_opts oo = {false, false, -1};
    for (int i = 1; i < argc; i++) {
        if (fa_cli_output_opt(argv[i], &oo)) continue;
        int r = fa_cli_apply_bound_opt("apply", argc, argv, &i, &max_clusters, &budget_s);
        if (r < 0) return 2;
        if (r > 0) continue;
        if ((v = fa_cli_opt_value(argc, argv, &i, "--db"))) db = v;
        else if ((v = fa_cli_opt_value(argc, argv, &i, "--out"))) out_dir = v;
        else if ((v = fa_cli_opt_value(argc, argv, &i, "--iters"))) {
            if ((iters = fa_cli_parse_long("apply", "--iters", v, 3, 1000000)) < 0) return 2;
        } else if ((v = fa_cli_opt_value(argc, argv, &i, "--warmup"))) {
            if ((warmup = fa_cli_parse_long("apply", "--warmup", v, 0, 1000000)) < 0) return 2;
        } else if ((v = fa_cli_opt_value(argc, argv, &i, "--max-ops"))) {
            if ((max_ops = fa_cli_parse_long("apply", "--max-ops", v, 2, 1000)) < 0) return 2;
        } else if ((v = fa_cli_opt_value(argc, argv, &i, "--max-inputs"))) {
            if ((max_inputs = fa_cli_parse_long("apply", "--max-inputs", v, 1, 64)) < 0) return 2;
        } else if ((v = fa_cli_opt_value(argc, argv, &i, "--tolerance"))) {
            if (fa_cli_parse_double("apply", "--tolerance", v, 0, FA_APPLY_TOLERANCE_MAX, true, &tolerance) < 0) return 2;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { fputs(k_help, stdout); return 0; }
        else if (argv[i][0] == '-') return fa_cli_usage("apply", "unknown option '%s'", argv[i]);
        else if (!spec) spec = argv[i];
        else return fa_cli_usage("apply", "unexpected argument '%s'", argv[i]);
    }
    fa_store *st = NULL;
    fa_status s = fa_store_open_ex(ctx, db, FA_STORE_NO_CREATE, &st);
    if (s) return fa_cli_fail(ctx, s);
    int64_t run_id;
    int rc = fa_cli_resolve_model_run(ctx, st, spec, &run_id);
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
        s = fa_cli_check_out_dir(ctx, out_dir ? out_dir : ob, db);
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
    fa_pipeline_options po;
    fa_pipeline_options_default(&po);
    po.apply.target = target;
    po.apply.threads = ri.threads;
    po.apply.tolerance = tolerance;
    po.apply.iters = (int)iters;
    po.apply.warmup = (int)warmup;
    po.max_ops = (int)max_ops;
    po.max_inputs = (int)max_inputs;
    po.apply.max_clusters = max_clusters;
    po.apply.budget_s = budget_s;
    if (!s)
        s = fa_cli_apply_pipeline(ctx, st, g, run_id, ri.model_path, &ri, ri.device_name ? ri.device_name : "cpu", out_dir,
                                  &po, &oo); /* finishes the run */
    if (s) {
        rc = fa_cli_fail(ctx, s);
        if (reopened) {
            fa_ctx *c2 = fa_ctx_create();
            fa_store_run_finish(c2, st, run_id, false, fa_ctx_errmsg(ctx));
            fa_ctx_free(c2);
        }
    }
    fa_graph_free(g);
    fa_arena_free(ar);
    fa_store_close(st);
    return rc;
}
