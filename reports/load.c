/* reports/load — reads everything the reports show from the run database into one fa_rep
 * (arena-owned): graph, per-op times, ceilings, traces of the run and of its fused run, the
 * newest plan with its clusters, why-not rows and benchmark samples. */
#include "reports-impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fa_rep_node_name(const fa_rep *r, int id)
{
    if (id < 0 || id >= r->n_nodes || !r->nodes[id].name) return "";
    return r->nodes[id].name;
}

void fa_rep_fmt_ns(char *buf, size_t cap, double ns)
{
    if (!(ns == ns) || ns < 0) snprintf(buf, cap, "not measured");
    else if (ns < 1e3) snprintf(buf, cap, "%.0f ns", ns);
    else if (ns < 1e6) snprintf(buf, cap, "%.1f \xc2\xb5s", ns / 1e3);
    else if (ns < 1e9) snprintf(buf, cap, "%.3f ms", ns / 1e6);
    else snprintf(buf, cap, "%.3f s", ns / 1e9);
}

void fa_rep_fmt_bytes(char *buf, size_t cap, double v)
{
    if (!(v == v) || v < 0) snprintf(buf, cap, "not measured");
    else if (v < 1024) snprintf(buf, cap, "%.0f B", v);
    else if (v < 1048576.0) snprintf(buf, cap, "%.1f KiB", v / 1024);
    else if (v < 1073741824.0) snprintf(buf, cap, "%.1f MiB", v / 1048576.0);
    else snprintf(buf, cap, "%.2f GiB", v / 1073741824.0);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Kernel records (FA_ACT_KERNEL) of a run with their median iteration. */
static fa_status load_trace(fa_ctx *ctx, fa_store *st, fa_arena *ar, int64_t run_id, fa_rep_trace *t)
{
    memset(t, 0, sizeof *t);
    t->median_iter = -1;
    fa_trace *tr = NULL;
    fa_status s = fa_store_load_trace(ctx, st, run_id, &tr);
    if (s) return s;
    size_t n = 0;
    for (size_t i = 0; i < tr->n_acts; i++) n += tr->acts[i].kind == FA_ACT_KERNEL;
    if (n == 0) {
        fa_trace_free(tr);
        return FA_OK;
    }
    t->k = fa_arena_alloc(ar, sizeof *t->k * n);
    if (!t->k) {
        fa_trace_free(tr);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory loading %zu kernel records", n);
    }
    bool any_timed = false;
    for (size_t i = 0; i < tr->n_acts; i++) {
        const fa_activity *a = &tr->acts[i];
        if (a->kind != FA_ACT_KERNEL) continue;
        fa_rep_kernel *k = &t->k[t->n++];
        k->node = a->node;
        k->name = a->name ? fa_arena_strdup(ar, a->name) : NULL;
        k->op_type = a->op_type ? fa_arena_strdup(ar, a->op_type) : NULL;
        k->node_name = a->node_name ? fa_arena_strdup(ar, a->node_name) : NULL;
        k->start_ns = (int64_t)a->start_ns;
        k->end_ns = (int64_t)a->end_ns;
        k->flops = a->flops;
        k->bytes = a->bytes_read + a->bytes_written;
        k->iter = a->iter;
        k->stream = a->stream;
        if (k->iter >= 0) any_timed = true;
    }
    fa_trace_free(tr);
    /* A trace whose records all have iter -1 (imports) is one iteration (as store's op table). */
    int max_iter = -1;
    for (int i = 0; i < t->n; i++) {
        if (!any_timed) t->k[i].iter = 0;
        if (t->k[i].iter > max_iter) max_iter = t->k[i].iter;
    }
    if (max_iter < 0) return FA_OK;
    int64_t *lo = fa_arena_alloc(ar, sizeof(int64_t) * (size_t)(max_iter + 1));
    int64_t *hi = fa_arena_alloc(ar, sizeof(int64_t) * (size_t)(max_iter + 1));
    int *cnt = fa_arena_alloc(ar, sizeof(int) * (size_t)(max_iter + 1));
    int64_t *sorted = fa_arena_alloc(ar, sizeof(int64_t) * 2 * (size_t)(max_iter + 1));
    t->spans = fa_arena_alloc(ar, sizeof(double) * (size_t)(max_iter + 1));
    if (!lo || !hi || !cnt || !sorted || !t->spans) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    for (int i = 0; i <= max_iter; i++) { lo[i] = INT64_MAX; hi[i] = INT64_MIN; }
    for (int i = 0; i < t->n; i++) {
        const fa_rep_kernel *k = &t->k[i];
        if (k->iter < 0) continue;
        if (k->start_ns < lo[k->iter]) lo[k->iter] = k->start_ns;
        if (k->end_ns > hi[k->iter]) hi[k->iter] = k->end_ns;
        cnt[k->iter]++;
    }
    int m = 0;
    for (int i = 0; i <= max_iter; i++)
        if (cnt[i]) {
            sorted[2 * m] = hi[i] - lo[i];
            sorted[2 * m + 1] = i;
            t->spans[m] = (double)(hi[i] - lo[i]);
            m++;
        }
    t->n_iters = m;
    /* sort (span, iter) pairs by span; the iteration drawn is the lower middle one (a real
     * iteration, so its kernels can be drawn; for an odd count the median iteration) */
    qsort(sorted, (size_t)m, 2 * sizeof(int64_t), cmp_i64);
    int mid = (m - 1) / 2;
    t->median_span_ns = sorted[2 * mid];
    t->median_iter = (int)sorted[2 * mid + 1];
    t->kernels_in_median = cnt[t->median_iter];
    return FA_OK;
}

static fa_status load_benchmarks(fa_ctx *ctx, fa_store *st, fa_rep *r)
{
    fa_bench_series *v = NULL;
    size_t n = 0;
    fa_status s = fa_store_get_bench_series(ctx, st, r->run_id, r->plan_id, r->ar, &v, &n);
    if (s) return s;
    for (size_t i = 0; i < n; i++) {
        fa_sample_stats *dst = NULL;
        if (v[i].subject == FA_BENCH_BASELINE && v[i].cluster_id < 0) dst = &r->bench_base;
        else if (v[i].subject == FA_BENCH_FUSED && v[i].cluster_id < 0) dst = &r->bench_fused;
        else if (v[i].cluster_id >= 0)
            for (int c = 0; c < r->n_clusters; c++)
                if (r->clusters[c].p->id == v[i].cluster_id) {
                    if (v[i].subject == FA_BENCH_CLUSTER_UNFUSED) dst = &r->clusters[c].unfused;
                    else if (v[i].subject == FA_BENCH_CLUSTER_FUSED) dst = &r->clusters[c].fused;
                }
        if (dst) fa_sample_stats_of(v[i].samples_ns, v[i].n, dst);
    }
    /* each cluster's unfused and fused samples were timed in the same rounds (iter i of both) */
    for (int c = 0; c < r->n_clusters; c++) {
        const fa_bench_series *su = NULL, *sf = NULL;
        for (size_t i = 0; i < n; i++)
            if (v[i].cluster_id == r->clusters[c].p->id) {
                if (v[i].subject == FA_BENCH_CLUSTER_UNFUSED) su = &v[i];
                else if (v[i].subject == FA_BENCH_CLUSTER_FUSED) sf = &v[i];
            }
        if (su && sf) fa_paired_saving_of(su->samples_ns, sf->samples_ns, su->n < sf->n ? su->n : sf->n, &r->clusters[c].paired);
    }
    return FA_OK;
}

/* Sum FLOPs, external traffic and member time of each cluster (roofline arrow origin). */
static void cluster_points(fa_rep *r, const int *edge_all_p, const int *edge_all_c, const int *edge_all_t, int n_all)
{
    char *member = calloc((size_t)r->n_nodes + 1, 1);
    char *seen = calloc((size_t)r->n_tensors + 1, 1);
    if (!member || !seen) { free(member); free(seen); return; }
    for (int ci = 0; ci < r->n_clusters; ci++) {
        fa_rep_cluster *c = &r->clusters[ci];
        memset(seen, 0, (size_t)r->n_tensors + 1);
        for (int m = 0; m < c->p->n_members; m++) {
            int id = c->p->members[m];
            if (id < 0 || id >= r->n_nodes) continue;
            member[id] = 1;
            c->flops += r->nodes[id].flops;
            if (r->nodes[id].median_ns > 0) c->unfused_ns += r->nodes[id].median_ns;
        }
        for (int e = 0; e < n_all; e++) {
            int p = edge_all_p[e], k = edge_all_c[e], t = edge_all_t[e];
            if (t < 0 || t >= r->n_tensors || k < 0 || k >= r->n_nodes) continue;
            bool pin = p >= 0 && p < r->n_nodes && member[p];
            if (member[k] && !pin && !(seen[t] & 1)) { seen[t] |= 1; c->ext_bytes += r->tensors[t].bytes; }
            if (pin && !member[k] && !(seen[t] & 2)) { seen[t] |= 2; c->ext_bytes += r->tensors[t].bytes; }
        }
        for (int t = 0; t < r->n_tensors; t++) {
            int p = r->tensors[t].producer;
            if ((r->tensors[t].flags & 2) && p >= 0 && p < r->n_nodes && member[p] && !(seen[t] & 2)) {
                seen[t] |= 2;
                c->ext_bytes += r->tensors[t].bytes;
            }
        }
        for (int m = 0; m < c->p->n_members; m++)
            if (c->p->members[m] >= 0 && c->p->members[m] < r->n_nodes) member[c->p->members[m]] = 0;
    }
    free(member);
    free(seen);
}

/* The fused run's kernel for each accepted cluster: "fused_c<ID>" (generated kernels),
 * "<anchor>__fused" (epilogues), "<anchor>__bnfold" (BN folds) — applier/fused_graph.c. */
static fa_status fused_points(fa_ctx *ctx, fa_store *st, fa_rep *r)
{
    fa_node_row *fn = NULL; /* the fused run's nodes, looked up by name */
    size_t n_fn = 0;
    if (r->have_fused_run) {
        fa_status s = fa_store_get_nodes(ctx, st, r->fused_run_id, false, r->ar, &fn, &n_fn);
        if (s) return s;
    }
    for (int ci = 0; ci < r->n_clusters; ci++) {
        fa_rep_cluster *c = &r->clusters[ci];
        c->fused_ns = NAN;
        if (!c->accepted) continue;
        if (fn) {
            for (int m = -1; m < c->p->n_members && !c->fused_name; m++) {
                for (int suf = 0; suf < 2 && !c->fused_name; suf++) {
                    char name[1200];
                    if (m < 0) { if (suf) break; snprintf(name, sizeof name, "fused_c%d", c->p->id); }
                    else snprintf(name, sizeof name, "%s%s", fa_rep_node_name(r, c->p->members[m]), suf ? "__bnfold" : "__fused");
                    int nid = -1;
                    for (size_t i = 0; i < n_fn && nid < 0; i++)
                        if (fn[i].name && !strcmp(fn[i].name, name)) nid = fn[i].id;
                    if (nid < 0) continue;
                    for (size_t i = 0; i < r->n_fused_ops; i++)
                        if (r->fused_ops[i].node == nid && r->fused_ops[i].median_ns > 0) {
                            c->fused_ns = (double)r->fused_ops[i].median_ns;
                            c->fused_name = fa_arena_strdup(r->ar, name);
                            c->fused_source = "fused run";
                        }
                }
            }
        }
        if (!(c->fused_ns == c->fused_ns) && c->fused.n > 0) {
            c->fused_ns = c->fused.median_ns;
            c->fused_source = "cluster benchmark";
        }
        double meas_ns = c->v->measured_saving_ns;
        if (!(c->fused_ns == c->fused_ns) && meas_ns == meas_ns && c->unfused_ns > 0 && c->unfused_ns - meas_ns > 0) {
            c->fused_ns = c->unfused_ns - meas_ns;
            c->fused_source = "unfused time - measured saving";
        }
    }
    return FA_OK;
}

static fa_status load_ceilings(fa_ctx *ctx, fa_store *st, fa_rep *r)
{
    fa_ceiling *cs = NULL;
    size_t n = 0;
    r->ceil_load = -1; /* unknown until a load_1min row says */
    fa_status s = fa_store_get_ceilings(ctx, st, NULL, r->ar, &cs, &n);
    if (s) return s;
    char key[600];
    snprintf(key, sizeof key, "cpu:%s:%dt", r->run.device_name ? r->run.device_name : "cpu", r->run.threads);
    const char *use = NULL;
    for (size_t i = 0; i < n && !use; i++)
        if (!strcmp(cs[i].device_key, key)) use = cs[i].device_key;
    for (size_t i = 0; i < n && !use && r->run.device_name && *r->run.device_name; i++)
        if (strstr(cs[i].device_key, r->run.device_name)) use = cs[i].device_key;
    if (!use) return FA_OK;
    fa_ceilings *c = &r->ceil;
    memset(c, 0, sizeof *c);
    c->device_key = use;
    c->device_name = r->run.device_name;
    c->threads = r->run.threads;
    bool f1 = false, f2 = false, f3 = false;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(cs[i].device_key, use)) continue;
        if (!strcmp(cs[i].name, "mem_bw") || !strcmp(cs[i].name, "dram_bw")) {
            c->mem_bw_gbs = cs[i].value; c->mem_bw_source = cs[i].source; f1 = true;
            if (cs[i].detail) snprintf(c->detail, sizeof c->detail, "%s", cs[i].detail);
        } else if (!strcmp(cs[i].name, "fp32_peak")) {
            c->peak_gflops = cs[i].value; c->peak_source = cs[i].source; f2 = true;
            r->ceil_peak_at_ns = cs[i].measured_at_ns;
        } else if (!strcmp(cs[i].name, "load_1min")) {
            r->ceil_load = cs[i].value;
        } else if (!strncmp(cs[i].name, "cache_", 6) && c->n_cache_levels < 4 && cs[i].value > 0) {
            /* a cache level's read bandwidth (roofline/ceilings.c: detail = the sweep's working set) */
            fa_cache_level *cl = &c->cache[c->n_cache_levels++];
            cl->bandwidth_gbs = cs[i].value;
            cl->working_set = cs[i].detail ? strtoull(cs[i].detail, NULL, 10) : 0;
            const fa_target_iface *ti = fa_target_get(FA_TARGET_CPU);
            const char *lvl = strncmp(use, "cpu:", 4) == 0 && ti ? fa_target_cache_level_name(ti, cl->working_set) : NULL;
            cl->name = lvl ? lvl : "cache";
        } else if (!strcmp(cs[i].name, "dispatch") || !strcmp(cs[i].name, "launch_gap")) {
            c->launch_ns = cs[i].value; c->launch_source = cs[i].source; f3 = true;
        }
    }
    r->have_ceil = f1 && f2 && c->mem_bw_gbs > 0 && c->peak_gflops > 0;
    if (!f3) c->launch_ns = 0;
    r->ceil_key = use;
    return FA_OK;
}

fa_status fa_rep_load(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_rep **out)
{
    fa_rep *r = calloc(1, sizeof *r);
    if (!r) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    r->ar = fa_arena_create(1 << 16);
    if (!r->ar) { free(r); return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); }
    r->run_id = run_id;
    int *ep = NULL, *ec = NULL, *et = NULL;
    int n_all = 0;
    fa_status s = fa_store_get_run(ctx, st, run_id, r->ar, &r->run);
    if (s) goto out;

    /* nodes, indexed by id */
    fa_node_row *nrows = NULL;
    size_t n_nrows = 0;
    s = fa_store_get_nodes(ctx, st, run_id, false, r->ar, &nrows, &n_nrows);
    if (s) goto out;
    for (size_t i = 0; i < n_nrows; i++)
        if (nrows[i].id + 1 > r->n_nodes) r->n_nodes = nrows[i].id + 1;
    r->nodes = fa_arena_alloc(r->ar, sizeof *r->nodes * (size_t)(r->n_nodes + 1));
    if (!r->nodes) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
    for (int i = 0; i < r->n_nodes; i++) { r->nodes[i].median_ns = -1; r->nodes[i].cluster = -1; r->nodes[i].pattern = -1; }
    for (size_t i = 0; i < n_nrows; i++) {
        int id = nrows[i].id;
        if (id < 0 || id >= r->n_nodes) continue;
        fa_rep_node *n = &r->nodes[id];
        n->name = nrows[i].name ? nrows[i].name : "";
        n->op_type = nrows[i].op_type;
        n->pattern = nrows[i].pattern;
        n->folded = nrows[i].folded;
        n->flops = nrows[i].flops;
        n->bytes = nrows[i].bytes;
        if (!n->folded) r->n_live++;
    }

    /* tensors, indexed by id */
    fa_tensor_row *trows = NULL;
    size_t n_trows = 0;
    s = fa_store_get_tensors(ctx, st, run_id, r->ar, &trows, &n_trows);
    if (s) goto out;
    for (size_t i = 0; i < n_trows; i++)
        if (trows[i].id + 1 > r->n_tensors) r->n_tensors = trows[i].id + 1;
    r->tensors = fa_arena_alloc(r->ar, sizeof *r->tensors * (size_t)(r->n_tensors + 1));
    if (!r->tensors) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
    for (int i = 0; i < r->n_tensors; i++) { r->tensors[i].producer = -1; r->tensors[i].name = ""; }
    for (size_t i = 0; i < n_trows; i++) {
        int id = trows[i].id;
        if (id < 0 || id >= r->n_tensors) continue;
        fa_rep_tensor *t = &r->tensors[id];
        t->name = trows[i].name ? trows[i].name : "";
        t->bytes = trows[i].bytes;
        t->producer = trows[i].producer;
        t->flags = trows[i].flags;
    }

    /* consumers: every (tensor, consumer); graph edges are those with a producer */
    fa_consumer_row *crows = NULL;
    size_t n_cons = 0;
    s = fa_store_get_consumers(ctx, st, run_id, r->ar, &crows, &n_cons);
    if (s) goto out;
    ep = malloc(sizeof(int) * (n_cons + 1));
    ec = malloc(sizeof(int) * (n_cons + 1));
    et = malloc(sizeof(int) * (n_cons + 1));
    r->edges = fa_arena_alloc(r->ar, sizeof *r->edges * (n_cons + 1));
    if (!ep || !ec || !et || !r->edges) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
    for (size_t i = 0; i < n_cons; i++) {
        int c = crows[i].node, t = crows[i].tensor;
        int p = t >= 0 && t < r->n_tensors ? r->tensors[t].producer : -1;
        ep[n_all] = p; ec[n_all] = c; et[n_all] = t;
        n_all++;
        /* one graph edge per (producer, consumer, tensor): the rows are distinct pairs */
        if (p >= 0) {
            fa_rep_edge *e = &r->edges[r->n_edges++];
            e->producer = p; e->consumer = c; e->tensor = t;
            e->bytes = r->tensors[t].bytes;
        }
    }

    /* per-op table */
    s = fa_store_op_table(ctx, st, run_id, r->ar, &r->ops, &r->n_ops, &r->n_iters);
    if (s) goto out;
    for (size_t i = 0; i < r->n_ops; i++) {
        int id = r->ops[i].node;
        if (id < 0 || id >= r->n_nodes) continue;
        r->nodes[id].median_ns = r->ops[i].median_ns;
        r->nodes[id].share = r->ops[i].share;
        r->nodes[id].kernels = r->ops[i].kernels;
    }

    s = load_ceilings(ctx, st, r);
    if (s) goto out;
    for (int i = 0; i < r->n_nodes; i++) {
        fa_rep_node *n = &r->nodes[i];
        if (!r->have_ceil || n->median_ns <= 0) continue;
        fa_roofline_place(&r->ceil, n->flops, n->bytes, (uint64_t)n->median_ns, &n->place);
        n->placed = true;
        n->bound = fa_bound_name(n->place.bound);
        /* a measured op above the FP32 peak: the peak is not the device's (a busy moment) */
        double over = n->place.achieved_gflops / r->ceil.peak_gflops;
        if (over > 1.0) {
            r->n_above_peak++;
            if (over > r->max_above_peak) {
                r->max_above_peak = over;
                r->above_peak_node = n->name;
            }
        }
    }

    /* analysis */
    s = fa_store_get_analysis_text(ctx, st, run_id, r->ar, &r->have_analysis, &r->analysis_text);
    if (s) goto out;

    /* traces */
    s = load_trace(ctx, st, r->ar, run_id, &r->base);
    if (s) goto out;
    s = fa_store_get_fused_run(ctx, st, run_id, false, &r->fused_run_id);
    if (s) goto out;
    r->have_fused_run = r->fused_run_id >= 0;
    if (!r->have_fused_run) r->fused_run_id = 0;
    if (r->have_fused_run) {
        s = fa_store_get_run(ctx, st, r->fused_run_id, r->ar, &r->fused_run);
        if (!s) s = load_trace(ctx, st, r->ar, r->fused_run_id, &r->fused);
        int nit = 0;
        if (!s) s = fa_store_op_table(ctx, st, r->fused_run_id, r->ar, &r->fused_ops, &r->n_fused_ops, &nit);
        if (s) goto out;
        for (size_t i = 0; i < r->n_fused_ops; i++)
            r->n_fused_reorder_ops += r->fused_ops[i].op_type && !strcmp(r->fused_ops[i].op_type, "Reorder");
    }

    /* newest plan */
    s = fa_store_get_latest_plan(ctx, st, run_id, &r->plan, (fa_cluster_verdict **)&r->verdicts);
    if (s) goto out;
    if (r->plan) {
        r->plan_id = r->plan->plan_id;
        r->clusters = fa_arena_alloc(r->ar, sizeof *r->clusters * (size_t)(r->plan->n_clusters + 1));
        if (!r->clusters) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
        memset(r->clusters, 0, sizeof *r->clusters * (size_t)(r->plan->n_clusters + 1));
        for (int i = 0; i < r->plan->n_clusters; i++) {
            fa_rep_cluster *c = &r->clusters[r->n_clusters];
            c->p = &r->plan->clusters[i];
            c->v = &r->verdicts[i];
            c->accepted = c->v->status == FA_CLUSTER_ACCEPTED;
            if (c->accepted) r->n_accepted++;
            else if (c->v->status == FA_CLUSTER_REFUSED) r->n_refused++;
            else if (fa_cluster_status_rejected(c->v->status)) r->n_rejected++;
            else r->n_proposed++;
            if (c->accepted)
                for (int m = 0; m < c->p->n_members; m++)
                    if (c->p->members[m] >= 0 && c->p->members[m] < r->n_nodes) r->nodes[c->p->members[m]].cluster = r->n_clusters;
            r->n_clusters++;
        }
    }
    /* measured by the applier, stored on the plan (schema v4, the verdict v6); NAN / NOT_APPLIED
     * when not applied */
    fa_plan_e2e_row e2e;
    s = fa_store_get_plan_e2e(ctx, st, run_id, &e2e);
    if (s) goto out;
    r->e2e_max_rel_error = e2e.max_rel_error;
    r->e2e_verdict = e2e.verdict;
    s = load_benchmarks(ctx, st, r);
    if (!s) s = fa_store_get_run_figures(ctx, st, run_id, &r->fig);
    if (s) goto out;
    cluster_points(r, ep, ec, et, n_all);
    s = fused_points(ctx, st, r);
out:
    free(ep);
    free(ec);
    free(et);
    if (s) {
        fa_rep_free(r);
        return s;
    }
    *out = r;
    return FA_OK;
}

void fa_rep_free(fa_rep *r)
{
    if (!r) return;
    fa_plan_free(r->plan);
    fa_arena_free(r->ar);
    free(r);
}
