/* cli/cmd_analyze — `fuse-advise analyze RUN [--json] [--db PATH] [--top N]`: ceilings, per-kernel
 * roofline placement, memory-bound chains, intermediate traffic and dispatch overhead. */
#include <inttypes.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/analyzer.h"
#include "cli.h"


/* Resolve "latest" / an id. latest: the newest run that is not the fused twin of another
 * (a model run, or an imported or traced trace), or with model_only the newest model run. */
static int resolve_run(fa_ctx *ctx, fa_store *st, const char *spec, bool model_only, int64_t *run_id)
{
    if (!spec || !strcmp(spec, "latest")) {
        fa_arena *ar = fa_arena_create(4096);
        fa_run_info *runs = NULL;
        size_t n = 0;
        fa_status s = fa_store_list_runs(ctx, st, ar, &runs, &n);
        int rc = s ? fa_cli_fail(ctx, s) : 0;
        size_t i = 0;
        while (!s && i < n && runs[i].kind &&
               (model_only ? strcmp(runs[i].kind, "run") != 0 : strcmp(runs[i].kind, "fused") == 0))
            i++;
        if (!s && i == n) {
            fa_cli_eprintf("fuse-advise: error: %s: no %sruns yet (fuse-advise run MODEL)\n", fa_store_path(st),
                           model_only ? "model " : "");
            rc = 1;
        } else if (!s) {
            *run_id = runs[i].id;
        }
        fa_arena_free(ar);
        return rc;
    }
    char *end;
    errno = 0;
    long long v = strtoll(spec, &end, 10);
    if (!*spec || *end || errno || v <= 0) {
        fa_cli_eprintf("fuse-advise: error: '%s' is not a run id (see `fuse-advise runs`)\n", spec);
        return 2;
    }
    *run_id = v;
    return 0;
}

int fa_cli_resolve_run(fa_ctx *ctx, fa_store *st, const char *spec, int64_t *run_id)
{
    return resolve_run(ctx, st, spec, false, run_id);
}

int fa_cli_resolve_model_run(fa_ctx *ctx, fa_store *st, const char *spec, int64_t *run_id)
{
    return resolve_run(ctx, st, spec, true, run_id);
}

/* Node indices by their median time, longest first (qsort_r's context: the analysis's nodes). */
static int cmp_by_median(const void *x, const void *y, void *nodes_)
{
    const fa_an_node *nodes = nodes_;
    int64_t a = nodes[*(const int *)x].median_ns, b = nodes[*(const int *)y].median_ns;
    return a > b ? -1 : a < b;
}

int fa_cmd_analyze(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = fa_cli_default_db(), *spec_run = NULL;
    bool json = false;
    int top = 20;
    const fa_cli_opt opts[] = {
        FA_CLI_OPT_JSON(&json),
        FA_CLI_OPT_DB(&db),
        FA_CLI_INT("--top", "N", &top, 1, 1000000, 0, "rows listed per table (nodes by time, chains)"),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = "analyze", .synopsis = "[RUN|latest] [options]",
                              .about = "  RUN is a run id from `fuse-advise runs` (default: the latest run).\n",
                              .opts = opts, .max_args = 1};
    fa_cli_args args;
    int prc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (prc >= 0) return prc;
    if (args.n) spec_run = args.arg[0];
    fa_store *st = NULL;
    fa_status s = fa_store_open_ex(ctx, db, FA_STORE_NO_CREATE, &st);
    if (s) return fa_cli_fail(ctx, s);
    int64_t run_id;
    int rc = fa_cli_resolve_run(ctx, st, spec_run, &run_id);
    if (rc) { fa_store_close(st); return rc; }
    fa_arena *ar = fa_arena_create(4096);
    fa_run_info ri;
    fa_ceilings c;
    fa_analysis *a = NULL;
    s = fa_store_get_run(ctx, st, run_id, ar, &ri);
    if (!s && ri.kind && (!strcmp(ri.kind, "import") || !strcmp(ri.kind, "trace"))) {
        /* a trace has no model graph: the op-level trace advice is its analysis */
        rc = fa_cli_trace_advise_stored(ctx, st, run_id, json);
        fa_arena_free(ar);
        fa_store_close(st);
        return rc;
    }
    if (!s) s = fa_roofline_cpu_ceilings(ctx, fa_store_readonly(st) ? NULL : st, ri.threads, false, &c);
    if (!s) s = fa_analyze_run(ctx, st, run_id, &c, &a);
    if (!s && !fa_store_readonly(st)) s = fa_analysis_save(ctx, st, a);
    if (s) {
        rc = fa_cli_fail(ctx, s);
        goto out;
    }
    /* nodes sorted by time, longest first */
    int *order = malloc(sizeof(int) * (size_t)(a->n_nodes + 1));
    for (int i = 0; i < a->n_nodes; i++) order[i] = i;
    qsort_r(order, (size_t)a->n_nodes, sizeof(int), cmp_by_median, (void *)a->nodes);
    if (json) {
        fa_buf b;
        fa_buf_init(&b);
        fa_buf_printf_term(&b, "{\"run\":%" PRId64 ",\"model\":", run_id);
        fa_json_str_or_empty(&b, ri.model_path);
        fa_buf_puts(&b, ",\"ceilings\":{\"device_key\":");
        fa_json_str_or_empty(&b, c.device_key);
        fa_buf_printf_term(&b, ",\"mem_bw_gbs\":%.3f,\"peak_gflops\":%.3f,\"dispatch_ns\":%.1f},", c.mem_bw_gbs, c.peak_gflops, c.launch_ns);
        fa_buf_printf_term(&b, "\"iter_ns\":%" PRId64 ",\"gap_ns\":%" PRId64 ",\"launch_share\":%.4f,\"mem_bound_elementwise_share\":%.4f,"
                               "\"intermediate_bytes\":%" PRIu64 ",\"fusion_bound_ns\":%.0f,\"summary\":",
                           a->iter_ns, a->gap_ns, a->launch_share, a->mem_bound_elementwise_share, a->intermediate_bytes, a->fusion_bound_ns);
        fa_json_str_or_empty(&b, a->summary);
        fa_buf_puts(&b, ",\"kernels\":[");
        for (int k = 0; k < a->n_nodes; k++) {
            const fa_an_node *n = &a->nodes[order[k]];
            fa_buf_puts(&b, k ? ",{\"node\":" : "{\"node\":");
            fa_json_str_or_empty(&b, n->name);
            fa_buf_puts(&b, ",\"op\":");
            fa_json_str_or_empty(&b, n->op_type);
            fa_buf_printf_term(&b, ",\"node_id\":%d,\"median_ns\":%" PRId64 ",\"flops\":%" PRIu64 ",\"bytes\":%" PRIu64
                               ",\"intensity\":%.4f,\"achieved_gbs\":%.3f,\"achieved_gflops\":%.3f,\"pct_of_roof\":%.2f,\"bound\":\"%s\"}",
                               n->id, n->median_ns, n->flops, n->bytes, n->place.intensity, n->place.achieved_gbs,
                               n->place.achieved_gflops, n->place.pct_of_roof, fa_bound_name(n->place.bound));
        }
        fa_buf_puts(&b, "],\"chains\":[");
        for (int k = 0; k < a->n_chains; k++) {
            const fa_an_chain *ch = &a->chains[k];
            fa_buf_printf_term(&b, "%s{\"members\":[", k ? "," : "");
            for (int m = 0; m < ch->n_members; m++) {
                if (m) fa_buf_puts(&b, ",");
                fa_json_str_or_empty(&b, a->nodes[fa_analysis_node_index(a, ch->members[m])].name);
            }
            fa_buf_printf_term(&b, "],\"ops\":[");
            for (int m = 0; m < ch->n_members; m++) {
                if (m) fa_buf_puts(&b, ",");
                fa_json_str_or_empty(&b, a->nodes[fa_analysis_node_index(a, ch->members[m])].op_type);
            }
            fa_buf_printf_term(&b, "],\"time_ns\":%" PRId64 ",\"share\":%.4f,\"intermediate_bytes\":%" PRIu64 ",\"max_saving_ns\":%.0f}",
                               ch->time_ns, ch->share, ch->intermediate_bytes, ch->max_saving_ns);
        }
        fa_buf_puts(&b, "]}\n");
        fwrite(b.data, 1, b.len, stdout);
        fa_buf_free(&b);
    } else {
        fa_cli_printf("run %" PRId64 ": %s (%d timed iterations)\n", run_id, ri.model_path, a->n_iters);
        fa_cli_printf("ceilings %s: memory %.2f GB/s, FP32 peak %.2f GFLOP/s, dispatch %.0f ns, ridge %.2f FLOP/B\n\n",
                      c.device_key, c.mem_bw_gbs, c.peak_gflops, c.launch_ns, c.mem_bw_gbs > 0 ? c.peak_gflops / c.mem_bw_gbs : 0);
        int wn = 13, wo = 2; /* widths from the content: node names are never cut */
        for (int k = 0; k < a->n_nodes && k < top; k++) {
            const fa_an_node *n = &a->nodes[order[k]];
            if (n->name && (int)strlen(n->name) > wn) wn = (int)strlen(n->name);
            if (n->op_type && (int)strlen(n->op_type) > wo) wo = (int)strlen(n->op_type);
        }
        fa_cli_printf("%-*s %-*s %11s %9s %9s %10s %7s %-8s\n", wn, "kernel (node)", wo, "op", "median us", "FLOP/B", "GB/s",
                      "GFLOP/s", "%roof", "bound");
        for (int k = 0; k < a->n_nodes && k < top; k++) {
            const fa_an_node *n = &a->nodes[order[k]];
            fa_cli_printf("%-*s %-*s %11.1f %9.2f %9.2f %10.2f %6.1f%% %-8s\n", wn, n->name ? n->name : "", wo,
                          n->op_type ? n->op_type : "", n->median_ns / 1e3,
                          n->place.intensity, n->place.achieved_gbs, n->place.achieved_gflops, n->place.pct_of_roof,
                          fa_bound_name(n->place.bound));
        }
        if (a->n_nodes > top) fa_cli_printf("... %d more (--top N, --json)\n", a->n_nodes - (int)top);
        fa_cli_printf("\nmemory-bound chains (ranked by the traffic and launches fusing them removes, at the measured ceilings):\n");
        for (int k = 0; k < a->n_chains && k < top; k++) {
            const fa_an_chain *ch = &a->chains[k];
            fa_cli_printf("  %2d. ", k + 1);
            for (int m = 0; m < ch->n_members; m++)
                fa_cli_printf("%s%s", m ? " -> " : "", a->nodes[fa_analysis_node_index(a, ch->members[m])].op_type);
            fa_cli_printf("  [%s..]  %.1f us (%.1f%%), %.2f MB intermediate, removes ~%.1f us\n",
                          a->nodes[fa_analysis_node_index(a, ch->members[0])].name, ch->time_ns / 1e3, 100 * ch->share,
                          ch->intermediate_bytes / 1e6, ch->max_saving_ns / 1e3);
        }
        fa_cli_printf("\n%s\n", a->summary);
    }
    free(order);
out:
    fa_analysis_free(a);
    fa_arena_free(ar);
    fa_store_close(st);
    return rc;
}
