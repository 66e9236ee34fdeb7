/* collector/cupti/collect — CUPTI collection over our own executor (the cuda counterpart of
 * fa_collect_cpu): per-iteration windows on CUPTI's clock, node attribution through NVTX, node
 * costs on the first kernel of each node and iteration. */
#include "collector/cupti/cupti.h"
#include "runtime/cuda/cuda.h"

#include <cupti.h>
#include <stdlib.h>
#include <string.h>

bool fa_cupti_route_nvtx(void)
{
    if (getenv("NVTX_INJECTION64_PATH")) return false;
    const char *lib = fa_cuda_lib_path(FA_CUDA_LIB_CUPTI); /* loads CUPTI: NVTX needs its path */
    if (!lib) return false;
    return setenv("NVTX_INJECTION64_PATH", lib, 1) == 0;
}

fa_status fa_cupti_label_iterations(fa_ctx *ctx, fa_trace *t, const uint64_t *win_start, const uint64_t *win_end,
                                    int n_windows, const fa_op_cost *costs, int n_costs)
{
    /* first kernel of (node, iter) seen, in start order (the trace is sorted by fa_cupti_trace_finish) */
    size_t nseen = (size_t)(n_costs > 0 ? n_costs : 1) * (size_t)(n_windows > 0 ? n_windows : 1);
    unsigned char *seen = calloc(nseen, 1);
    if (!seen) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory labelling iterations");
    for (size_t i = 0; i < t->n_acts; i++) {
        fa_activity *a = &t->acts[i];
        a->iter = -1;
        for (int w = 0; w < n_windows; w++)
            if (a->start_ns >= win_start[w] && a->start_ns <= win_end[w]) {
                a->iter = w;
                break;
            }
        if (a->kind != FA_ACT_KERNEL || a->iter < 0 || !costs || a->node < 0 || a->node >= n_costs) continue;
        size_t k = (size_t)a->node * (size_t)n_windows + (size_t)a->iter;
        if (seen[k]) continue;
        seen[k] = 1;
        a->bytes_read = costs[a->node].bytes_read;
        a->bytes_written = costs[a->node].bytes_written;
        a->flops = costs[a->node].flops;
    }
    free(seen);
    for (int w = 0; w < n_windows; w++) {
        fa_activity r = fa_activity_init(FA_ACT_RANGE);
        r.name = fa_trace_intern(t, "iteration");
        r.iter = w;
        r.start_ns = win_start[w];
        r.end_ns = win_end[w];
        if (!r.name || !fa_trace_add(t, &r)) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory labelling iterations");
    }
    return FA_OK;
}

fa_status fa_collect_cupti(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int warmup, int iters,
                           fa_progress_fn progress, void *progress_user, fa_trace **out)
{
    /* by time on cpu (fa_warmup_more); a GPU's iterations are short, so the most it may take */
    if (warmup == FA_WARMUP_AUTO) warmup = FA_WARMUP_AUTO_MAX;
    if (iters < 1 || warmup < 0) return fa_ctx_error(ctx, FA_ERR_USAGE, "--iters must be >= 1 and --warmup >= 0");
    fa_cupti_route_nvtx();
    int total = warmup + iters;
    fa_status st = FA_OK;
    for (int it = 0; it < warmup && !st; it++) {
        st = fa_exec_run(ctx, e, NULL);
        if (progress) progress(progress_user, "warm-up", it + 1, total);
    }
    if (st) return st;
    uint64_t *ws = calloc((size_t)iters, sizeof *ws), *we = calloc((size_t)iters, sizeof *we);
    fa_op_cost *costs = calloc((size_t)g->n_nodes + 1, sizeof *costs);
    if (!ws || !we || !costs) {
        free(ws);
        free(we);
        free(costs);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < g->n_topo; k++) fa_node_cost(g, g->nodes[g->topo[k]], &costs[g->topo[k]]);
    st = fa_cupti_start(ctx, 0);
    for (int it = 0; it < iters && !st; it++) {
        st = FA_CUPTI_CHECK(ctx, FA_ERR_RUNTIME, cuptiGetTimestamp(&ws[it]));
        if (!st) st = fa_exec_run(ctx, e, NULL); /* ends with a stream synchronize */
        if (!st) st = FA_CUPTI_CHECK(ctx, FA_ERR_RUNTIME, cuptiGetTimestamp(&we[it]));
        if (progress) progress(progress_user, "timed", warmup + it + 1, total);
    }
    fa_trace *t = NULL;
    char *notes = NULL;
    if (fa_cupti_active()) {
        fa_ctx *c2 = fa_ctx_create();
        fa_status s2 = fa_cupti_stop(st ? c2 : ctx, &t, NULL, &notes);
        fa_ctx_free(c2);
        if (!st) st = s2;
    }
    if (notes) {
        fa_log(ctx, FA_LOG_WARN, "cupti: %s", notes);
        free(notes);
    }
    if (!st) st = fa_cupti_label_iterations(ctx, t, ws, we, iters, costs, g->n_nodes);
    free(ws);
    free(we);
    free(costs);
    if (st) {
        fa_trace_free(t);
        return st;
    }
    t->n_iters = iters;
    t->n_warmup = warmup;
    *out = t;
    return FA_OK;
}
