/* cli/cmd_apply — `fuse-advise apply [RUN|latest]`: re-run the stages after the baseline
 * (analysis, plan, codegen, verify, benchmark, accept/reject, outputs, reports) for a stored run,
 * reloading its model exactly as the run loaded it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "store/store.h"

static const char *k_help =
    "usage: fuse-advise apply [RUN|latest] [--db PATH] [--out DIR] [--iters N] [--warmup W] [--tolerance T]\n"
    "                         [--max-ops N] [--max-inputs N]\n"
    "  Plans, generates, verifies and benchmarks fused kernels for a stored baseline run\n"
    "  (`fuse-advise run MODEL --no-apply`), then writes the outputs and reports.\n";

int fa_cmd_apply(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = FA_STORE_DEFAULT_PATH, *spec = NULL, *out_dir = NULL, *v;
    long iters = 20, warmup = 3, max_ops = 16, max_inputs = 8;
    double tolerance = 1e-5;
    for (int i = 1; i < argc; i++) {
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
            char *end;
            tolerance = strtod(v, &end);
            if (!*v || *end || !(tolerance > 0)) return fa_cli_usage("apply", "--tolerance expects a positive number");
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
    if (!s)
        s = fa_cli_apply_pipeline(ctx, st, g, run_id, ri.model_path, &ri, ri.device_name ? ri.device_name : "cpu", out_dir,
                                  tolerance, (int)max_ops, (int)max_inputs, (int)iters, (int)warmup,
                                  ri.target && !strcmp(ri.target, "cuda"));
    if (s) rc = fa_cli_fail(ctx, s);
    fa_graph_free(g);
    fa_arena_free(ar);
    fa_store_close(st);
    return rc;
}
