/* cli/cmd_report — `fuse-advise report [RUN|latest] [-o DIR] [--db PATH]`: regenerate every report
 * of a stored run (report.html, graph.dot/.svg, trace.json, summary.json, kernels.csv) from the
 * run database alone (reports/reports.h, docs/reports.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "reports/reports.h"
#include "store/store.h"

/* cli/cmd_analyze.c */

int fa_cmd_report(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = fa_cli_default_db(), *spec_run = NULL, *out = NULL;
    const fa_cli_opt opts[] = {
        FA_CLI_STRING2("--out", "-o", "DIR", &out, "output folder (default: ./report-RUN), created when missing"),
        FA_CLI_OPT_DB(&db),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = "report", .synopsis = "[RUN|latest] [options]",
                              .about = "  RUN is a run id from `fuse-advise runs` (default: the latest run). Writes\n"
                                       "  report.html, graph.dot, graph.svg, trace.json, summary.json and kernels.csv.\n",
                              .opts = opts, .max_args = 1};
    fa_cli_args args;
    int prc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (prc >= 0) return prc;
    if (args.n) spec_run = args.arg[0];
    fa_store *st = NULL;
    fa_status s = fa_store_open_ex(ctx, db, FA_STORE_NO_CREATE | FA_STORE_READONLY, &st);
    if (s) return fa_cli_fail(ctx, s);
    int64_t run_id;
    int rc = fa_cli_resolve_run(ctx, st, spec_run, &run_id);
    if (rc) {
        fa_store_close(st);
        return rc;
    }
    /* "latest" after a full `run` is its fused run (kind 'fused', tag "fused-of:N"): report N,
     * whose report includes the fused run */
    if (!spec_run || !strcmp(spec_run, "latest")) {
        fa_arena *ar = fa_arena_create(4096);
        fa_run_info ri;
        if (ar && !fa_store_get_run(ctx, st, run_id, ar, &ri) && ri.kind && !strcmp(ri.kind, "fused") && ri.tag &&
            !strncmp(ri.tag, "fused-of:", 9)) {
            long long base = strtoll(ri.tag + 9, NULL, 10);
            if (base > 0) run_id = base;
        }
        fa_arena_free(ar);
        fa_ctx_clear(ctx);
    }
    char dflt[64];
    if (!out) {
        snprintf(dflt, sizeof dflt, "report-%" PRId64, run_id);
        out = dflt;
    }
    /* the folder is swapped in whole; files this verb does not write (plan.json, kernels/)
     * carry over from the existing folder */
    fa_outdir *od = NULL;
    s = fa_cli_check_not_db(ctx, out, true, db);
    if (!s) s = fa_outdir_begin(ctx, out, fa_cli_output_names, true, &od);
    if (!s) s = fa_reports_write(ctx, st, run_id, fa_outdir_path(od));
    if (!s) s = fa_outdir_commit(ctx, od);
    else fa_outdir_abort(od);
    fa_store_close(st);
    if (s) return fa_cli_fail(ctx, s);
    fa_cli_printf("%s/report.html\n", out);
    fa_cli_eprintf("wrote report.html, graph.dot, graph.svg, trace.json, summary.json, kernels.csv for run %" PRId64 " into %s\n",
                   run_id, out);
    return 0;
}
