/* cli/cmd_show — `fuse-advise show RUN [--db PATH] [--json]`: the per-op time table of one
 * stored run (median over timed iterations, share of the total, kernel count). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "store/store.h"


/* Defined in cmd_runs.c: one run as a JSON object. */
void fa_cli_run_json(fa_buf *b, const fa_run_info *r, const fa_run_figures *f);

int fa_cmd_show(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = fa_cli_default_db(), *run = NULL;
    bool json = false;
    const fa_cli_opt opts[] = {FA_CLI_OPT_DB(&db), FA_CLI_OPT_JSON(&json), FA_CLI_END};
    const fa_cli_spec spec = {.verb = "show", .synopsis = "RUN [options]",
                              .about = "  RUN is a run id (see `fuse-advise runs`) or 'latest': the per-op time table.\n",
                              .opts = opts, .max_args = 1};
    fa_cli_args args;
    int prc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (prc >= 0) return prc;
    if (args.n) run = args.arg[0];
    if (!run) return fa_cli_usage("show", "missing RUN (a run id from `fuse-advise runs`, or 'latest')");
    int64_t run_id = 0;
    bool latest = !strcmp(run, "latest");
    if (!latest) {
        char *end;
        errno = 0;
        long long x = strtoll(run, &end, 10);
        if (!*run || *end || errno || x <= 0)
            return fa_cli_usage("show", "RUN must be a positive run id or 'latest', got '%s'", run);
        run_id = x;
    }

    fa_store *st = NULL;
    fa_status s = fa_store_open_ex(ctx, db, FA_STORE_NO_CREATE | FA_STORE_READONLY, &st);
    if (s) return fa_cli_fail(ctx, s);
    fa_arena *ar = fa_arena_create(0);
    fa_run_info r;
    fa_op_row *rows = NULL;
    size_t n = 0;
    int iters = 0;
    if (!ar) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    if (!s && latest) s = fa_store_latest_run(ctx, st, NULL, &run_id);
    if (!s) s = fa_store_get_run(ctx, st, run_id, ar, &r);
    if (!s) s = fa_store_op_table(ctx, st, run_id, ar, &rows, &n, &iters);
    if (s) {
        fa_arena_free(ar);
        fa_store_close(st);
        return fa_cli_fail(ctx, s);
    }
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) total += rows[i].median_ns;

    fa_buf b;
    fa_buf_init(&b);
    if (json) {
        fa_buf_puts(&b, "{\"run\":");
        fa_cli_run_json(&b, &r, NULL);
        fa_buf_printf_term(&b, ",\"iterations\":%d,\"total_median_ns\":%" PRId64 ",\"ops\":[", iters, total);
        for (size_t i = 0; i < n; i++) {
            const fa_op_row *o = &rows[i];
            fa_buf_printf_term(&b, "%s{\"node\":%d,\"node_name\":", i ? "," : "", (int)o->node);
            fa_json_str(&b, o->node_name);
            fa_buf_puts(&b, ",\"op_type\":");
            fa_json_str(&b, o->op_type);
            fa_buf_printf_term(&b, ",\"median_ns\":%" PRId64 ",\"share\":%.6f,\"kernels\":%" PRId64 "}", o->median_ns,
                               o->share, o->kernels);
        }
        fa_buf_puts(&b, "]}\n");
    } else {
        fa_buf_printf_term(&b, "run %" PRId64 ": %s %s", r.id, r.kind, r.model_path ? r.model_path : "-");
        if (r.target) fa_buf_printf_term(&b, " on %s", r.target);
        if (r.device_name) fa_buf_printf_term(&b, " (%s)", r.device_name);
        fa_buf_printf_term(&b, ", status %s", r.status);
        if (r.error) fa_buf_printf_term(&b, ": %s", r.error);
        fa_buf_printf_term(&b, "\n%d timed iteration%s, %zu ops, sum of per-op medians %.3f ms", iters,
                           iters == 1 ? "" : "s", n, (double)total / 1e6);
        if (r.iter_median_ns >= 0)
            fa_buf_printf_term(&b, ", median iteration %.3f ms", (double)r.iter_median_ns / 1e6);
        if (r.dim_defaults) fa_buf_printf_term(&b, "\nsymbolic dims bound to their default: %s", r.dim_defaults);
        fa_buf_puts(&b, "\n\n");
        if (n == 0) {
            fa_buf_puts(&b, "no kernel records stored for this run\n");
        } else {
            fa_buf_printf_term(&b, "%6s  %-18s  %12s  %6s  %7s  %s\n", "NODE", "OP", "MEDIAN ms", "SHARE", "KERNELS",
                               "NAME");
            for (size_t i = 0; i < n; i++) {
                const fa_op_row *o = &rows[i];
                char node[16];
                if (o->node >= 0) snprintf(node, sizeof node, "%d", (int)o->node);
                else snprintf(node, sizeof node, "-");
                fa_buf_printf_term(&b, "%6s  %-18s  %12.4f  %5.1f%%  %7" PRId64 "  %s\n", node,
                                   o->op_type ? o->op_type : "-", (double)o->median_ns / 1e6, o->share * 100.0,
                                   o->kernels, o->node_name ? o->node_name : "-");
            }
        }
    }
    if (b.oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory formatting run %" PRId64, run_id);
    else fputs(b.data ? b.data : "", stdout);
    fa_buf_free(&b);
    fa_arena_free(ar);
    fa_store_close(st);
    return s ? fa_cli_fail(ctx, s) : 0;
}
