/* applier/outputs — plan.json, summary.json, and the apply results in the run database. */
#include "applier-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One cluster: the advisor's proposal c and, when v is given, the applier's verdict on it. */
static void cluster_json(fa_buf *b, const fa_graph *g, const fa_cluster *c, const fa_cluster_verdict *v)
{
    fa_cluster_verdict advisor = {c->status, c->refusal, c->reason, NAN, -1, c->registers, c->spill_bytes, c->block_size};
    if (!v) v = &advisor;
    fa_buf_printf(b, "{\"id\":%d,\"kind\":", c->id);
    fa_json_str_or_empty(b, fa_cluster_kind_name(c->kind));
    fa_buf_puts(b, ",\"label\":");
    fa_json_str_or_empty(b, c->label);
    fa_buf_puts(b, ",\"members\":[");
    for (int m = 0; m < c->n_members; m++) {
        if (m) fa_buf_puts(b, ",");
        fa_json_str_or_empty(b, g->nodes[c->members[m]]->name);
    }
    fa_buf_puts(b, "],\"ops\":[");
    for (int m = 0; m < c->n_members; m++) {
        if (m) fa_buf_puts(b, ",");
        fa_json_str_or_empty(b, g->nodes[c->members[m]]->op_type);
    }
    fa_buf_printf(b, "],\"saved_bytes\":%llu,\"score_bytes\":%llu,\"saved_launches\":%d,\"recompute_ns\":",
                  (unsigned long long)c->saved_bytes, (unsigned long long)c->score_bytes, c->saved_launches);
    fa_json_num(b, c->recompute_ns, 6);
    fa_buf_puts(b, ",\"est_saving_ns\":");
    fa_json_num(b, c->est_saving_ns, 6);
    fa_buf_puts(b, ",\"est_saving_pct\":");
    fa_json_num(b, c->est_saving_pct, 6);
    fa_buf_puts(b, ",\"basis\":");
    fa_json_str_or_empty(b, c->basis);
    fa_buf_printf(b, ",\"registers\":%d,\"spill_bytes\":%d,\"occupancy\":", v->registers, v->spill_bytes);
    fa_json_num(b, c->occupancy, 6);
    fa_buf_puts(b, ",\"status\":");
    fa_json_str_or_empty(b, fa_cluster_status_name(v->status));
    fa_buf_puts(b, ",\"reason\":");
    fa_json_str_or_empty(b, v->reason);
    fa_buf_puts(b, ",\"measured_saving_ns\":");
    fa_json_num(b, v->measured_saving_ns, 6);
    fa_buf_puts(b, ",\"max_rel_error\":");
    fa_json_num(b, v->max_rel_error, 6);
    fa_buf_puts(b, "}");
}

fa_status fa_write_plan_json(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const fa_cluster_verdict *v,
                             const char *path)
{
    fa_buf b;
    fa_buf_init(&b);
    fa_buf_printf(&b, "{\"plan_hash\":\"%s\",\"run_id\":%lld,\"plan_id\":%d,\"clusters\":[", p->hash, (long long)p->run_id,
                  p->plan_id);
    for (int i = 0; i < p->n_clusters; i++) {
        if (i) fa_buf_puts(&b, ",\n");
        cluster_json(&b, g, &p->clusters[i], v ? &v[i] : NULL);
    }
    fa_buf_puts(&b, "],\"why_not\":[");
    for (int i = 0; i < p->n_why_not; i++) {
        const fa_why_not *w = &p->why_not[i];
        if (i) fa_buf_puts(&b, ",\n");
        fa_buf_puts(&b, "{\"producer\":");
        fa_json_str_or_empty(&b, w->producer >= 0 ? g->nodes[w->producer]->name : NULL);
        fa_buf_puts(&b, ",\"consumer\":");
        fa_json_str_or_empty(&b, w->consumer >= 0 ? g->nodes[w->consumer]->name : NULL);
        fa_buf_puts(&b, ",\"tensor\":");
        fa_json_str_or_empty(&b, w->tensor >= 0 ? g->tensors[w->tensor]->name : NULL);
        fa_buf_puts(&b, ",\"code\":");
        fa_json_str_or_empty(&b, fa_why_code_name(w->code));
        fa_buf_puts(&b, ",\"reason\":");
        fa_json_str_or_empty(&b, w->reason);
        fa_buf_puts(&b, "}");
    }
    fa_buf_puts(&b, "]}\n");
    fa_status s = b.oom ? fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory writing %s", path)
                        : fa_write_file_atomic(ctx, path, b.data, b.len);
    fa_buf_free(&b);
    return s;
}

static void stats_json(fa_buf *b, const char *key, const fa_sample_stats *s)
{
    fa_buf_printf(b, "\"%s\":{\"median_ns\":", key);
    fa_json_num(b, s->median_ns, 6);
    fa_buf_puts(b, ",\"p25_ns\":");
    fa_json_num(b, s->p25_ns, 6);
    fa_buf_puts(b, ",\"p75_ns\":");
    fa_json_num(b, s->p75_ns, 6);
    fa_buf_printf(b, ",\"samples\":%d}", s->n);
}

/* The end-to-end verdict of an apply result (what plans.e2e_verdict and summary.json keep). */
static fa_e2e_verdict e2e_verdict(const fa_apply_result *r)
{
    return r->e2e_mismatch ? FA_E2E_MISMATCH : r->e2e_wins ? FA_E2E_WIN : r->e2e_loss ? FA_E2E_LOSS : FA_E2E_NO_CLUSTERS;
}

fa_status fa_write_summary_json(fa_ctx *ctx, const fa_run_summary *s, const char *path)
{
    const fa_apply_result *r = s->result;
    fa_buf b;
    fa_buf_init(&b);
    fa_buf_puts(&b, "{\"schema\":\"fuse-advise.summary/1\",\"version\":\"" FA_VERSION_STRING "\",\"model\":");
    fa_json_str_or_empty(&b, s->model);
    fa_buf_printf(&b, ",\"run_id\":%lld,\"device\":", (long long)s->run_id);
    fa_json_str_or_empty(&b, s->device);
    fa_buf_printf(&b, ",\"threads\":%d,\"ceilings\":{\"mem_bw_gbs\":", s->threads);
    fa_json_num(&b, s->mem_bw_gbs, 6);
    fa_buf_puts(&b, ",\"peak_gflops\":");
    fa_json_num(&b, s->peak_gflops, 6);
    fa_buf_puts(&b, ",\"dispatch_ns\":");
    fa_json_num(&b, s->dispatch_ns, 6);
    fa_buf_puts(&b, "},");
    if (r) {
        stats_json(&b, "baseline", &r->baseline);
        fa_buf_puts(&b, ",");
        stats_json(&b, "fused", &r->fused);
        fa_buf_puts(&b, ",\"speedup\":");
        fa_json_num(&b, r->speedup, 6);
        fa_buf_printf(&b, ",\"peak_activation_bytes\":{\"baseline\":%llu,\"fused\":%llu}",
                      (unsigned long long)r->peak_bytes_baseline, (unsigned long long)r->peak_bytes_fused);
        fa_buf_printf(&b, ",\"kernels_per_iteration\":{\"baseline\":%d,\"fused\":%d}", r->kernels_baseline, r->kernels_fused);
        fa_buf_printf(&b, ",\"clusters\":{\"accepted\":%d,\"rejected\":%d,\"refused_by_advisor\":", r->accepted, r->rejected);
        int refused = 0;
        if (s->plan)
            for (int i = 0; i < s->plan->n_clusters; i++) refused += s->plan->clusters[i].status == FA_CLUSTER_REFUSED;
        fa_buf_printf(&b, "%d}", refused);
        fa_buf_puts(&b, ",\"predicted_saving_ns\":");
        fa_json_num(&b, r->predicted_saving_ns, 6);
        fa_buf_puts(&b, ",\"measured_saving_ns\":");
        fa_json_num(&b, r->measured_saving_ns, 6);
        /* nothing accepted: both sides ran the same model, the difference is measurement noise */
        fa_buf_printf(&b, ",\"measured_saving_is_noise\":%s", r->accepted == 0 ? "true" : "false");
        fa_buf_puts(&b, ",\"e2e_max_rel_error\":");
        fa_json_num(&b, r->e2e_max_rel_error, 6);
        fa_buf_printf(&b, ",\"e2e_verdict\":\"%s\"", fa_e2e_verdict_name(e2e_verdict(r)));
    } else {
        fa_buf_puts(&b, "\"baseline\":null,\"fused\":null");
    }
    if (s->plan) fa_buf_printf(&b, ",\"plan_hash\":\"%s\"", s->plan->hash);
    fa_buf_puts(&b, "}\n");
    fa_status st = b.oom ? fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory writing %s", path)
                         : fa_write_file_atomic(ctx, path, b.data, b.len);
    fa_buf_free(&b);
    return st;
}

/* The verdict columns of every cluster of the saved plan p. */
static fa_status put_verdicts(fa_ctx *ctx, fa_store *st, const fa_plan *p, const fa_apply_result *r)
{
    if (p->run_id < 0 || p->plan_id <= 0)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "plan was not saved (fa_plan_save first)");
    if (r->n_verdicts != p->n_clusters)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%d verdicts for a plan of %d clusters", r->n_verdicts, p->n_clusters);
    fa_cluster_row *cr = calloc((size_t)p->n_clusters + 1, sizeof *cr);
    if (!cr) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory saving the verdicts");
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster_verdict *v = &r->verdicts[i];
        cr[i].id = p->clusters[i].id;
        cr[i].status = fa_cluster_status_name(v->status);
        cr[i].reason = v->reason;
        cr[i].measured_saving_ns = v->measured_saving_ns;
        cr[i].max_rel_error = v->max_rel_error;
        cr[i].registers = v->registers;
        cr[i].spill_bytes = v->spill_bytes;
        cr[i].occupancy = p->clusters[i].occupancy;
    }
    fa_status s = fa_store_put_cluster_verdicts(ctx, st, p->run_id, p->plan_id, cr, p->n_clusters);
    free(cr);
    return s;
}

fa_status fa_store_apply_result(fa_ctx *ctx, fa_store *st, const fa_plan *p, const fa_apply_result *r)
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
