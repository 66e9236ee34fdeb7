/* applier/outputs — plan.json and the apply results in the run database. */
#include "applier-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fa_status fa_write_plan_json(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const fa_cluster_verdict *v,
                             const char *path)
{
    fa_buf b;
    fa_buf_init(&b);
    fa_plan_json(&b, g, p, v, NULL);
    fa_status s = b.oom ? fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory writing %s", path)
                        : fa_write_file_atomic(ctx, path, b.data, b.len);
    fa_buf_free(&b);
    return s;
}

/* The end-to-end verdict of an apply result (what plans.e2e_verdict keeps). */
static fa_e2e_verdict e2e_verdict(const fa_apply_result *r)
{
    return r->e2e_mismatch ? FA_E2E_MISMATCH : r->e2e_wins ? FA_E2E_WIN : r->e2e_loss ? FA_E2E_LOSS : FA_E2E_NO_CLUSTERS;
}

/* The verdict columns of every cluster of the saved plan p. */
static fa_status put_verdicts(fa_ctx *ctx, fa_store *st, const fa_plan *p, const fa_apply_result *r)
{
    if (p->run_id < 0 || p->plan_id <= 0)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "plan was not saved (fa_plan_save first)");
    if (r->n_verdicts != p->n_clusters)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%d verdicts for a plan of %d clusters", r->n_verdicts, p->n_clusters);
    return fa_store_put_cluster_verdicts(ctx, st, p, r->verdicts);
}

fa_status fa_store_apply_result(fa_ctx *ctx, fa_store *st, const fa_plan *p, const fa_apply_result *r,
                                const char *command_line)
{
    fa_status s = fa_store_begin(ctx, st);
    if (s) return s;
    s = put_verdicts(ctx, st, p, r);
    /* end-to-end samples, then each benchmarked cluster's unfused and fused samples */
    if (!s) s = fa_store_put_bench_samples(ctx, st, p->run_id, p->plan_id, FA_BENCH_BASELINE, -1, r->baseline_samples, r->n_samples);
    if (!s) s = fa_store_put_bench_samples(ctx, st, p->run_id, p->plan_id, FA_BENCH_FUSED, -1, r->fused_samples, r->n_samples);
    for (int c = 0; c < r->n_cluster_bench && !s; c++) {
        size_t off = (size_t)c * (size_t)r->n_cluster_samples;
        s = fa_store_put_bench_samples(ctx, st, p->run_id, p->plan_id, FA_BENCH_CLUSTER_UNFUSED, r->cluster_ids[c],
                                       r->cluster_unfused + off, r->cluster_n_samples[c]);
        if (!s)
            s = fa_store_put_bench_samples(ctx, st, p->run_id, p->plan_id, FA_BENCH_CLUSTER_FUSED, r->cluster_ids[c],
                                           r->cluster_fused + off, r->cluster_n_samples[c]);
    }
    /* model outputs fused vs unfused and the win/loss verdict, so `report`, `runs` and `gate`
     * rebuild them from the database alone */
    fa_plan_e2e_row e2e = {r->e2e_max_rel_error, e2e_verdict(r)};
    if (!s) s = fa_store_set_plan_e2e(ctx, st, p->run_id, p->plan_id, &e2e);
    /* the fused model's trace as its own run, tagged with its baseline run */
    if (!s && r->fused_graph && r->fused_trace) {
        fa_run_info base;
        fa_arena *ar = fa_arena_create(4096);
        s = fa_store_get_run(ctx, st, p->run_id, ar, &base);
        if (!s) {
            char tag[64];
            snprintf(tag, sizeof tag, "fused-of:%lld", (long long)p->run_id);
            fa_run_info fi = base;
            fi.kind = "fused";
            fi.tag = tag;
            fi.started_at_ns = 0;
            fi.ended_at_ns = 0;
            fi.peak_activation_bytes = r->peak_bytes_fused;
            /* what its own trace holds (the end-to-end rounds it was recorded in), not the
             * baseline's iterations: `runs`, `show` and the report quote these */
            fi.iters = r->fused_trace->n_iters;
            if (command_line) fi.command_line = command_line; /* `apply RUN`'s, not the baseline's */
            fi.warmup = r->fused_trace->n_warmup;
            int64_t fid;
            s = fa_store_run_begin(ctx, st, &fi, &fid);
            if (!s) s = fa_store_put_graph(ctx, st, fid, r->fused_graph);
            if (!s) s = fa_store_put_trace(ctx, st, fid, r->fused_trace);
            /* left 'running': it finishes with its baseline run (fa_store_run_finish), after the
             * outputs are written, and fails with it */
        }
        fa_arena_free(ar);
    }
    if (s) {
        fa_store_rollback(st);
        return s;
    }
    return fa_store_commit(ctx, st);
}
