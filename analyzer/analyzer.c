/* analyzer — placement, edges, chains, overhead from a stored run (see analyzer.h). */
#include "analyzer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tensor_info {
    const char *name;
    uint64_t bytes;
    int producer;
    bool graph_output;
} tensor_info;

static int cmp_chain(const void *a, const void *b)
{
    const fa_an_chain *x = a, *y = b;
    return x->max_saving_ns > y->max_saving_ns ? -1 : x->max_saving_ns < y->max_saving_ns;
}

void fa_analysis_free(fa_analysis *a)
{
    if (!a) return;
    fa_arena_free(a->arena);
    free(a);
}

int fa_analysis_node_index(const fa_analysis *a, int node_id)
{
    if (a->node_index) return (node_id >= 0 && node_id <= a->max_node_id) ? a->node_index[node_id] : -1;
    for (int i = 0; i < a->n_nodes; i++)
        if (a->nodes[i].id == node_id) return i;
    return -1;
}

static bool is_light(int pattern)
{
    return pattern == FA_PATTERN_ELEMWISE || pattern == FA_PATTERN_BROADCAST || pattern == FA_PATTERN_INJECTIVE;
}

static bool membound(const fa_an_node *n)
{
    return n->place.bound == FA_BOUND_MEMORY || n->place.bound == FA_BOUND_LATENCY;
}

/* Spans by iteration, then by start (the warm-up's iteration -1 first, skipped by the caller). */
static bool span_before(const fa_kernel_span *x, const fa_kernel_span *y)
{
    return x->iter != y->iter ? x->iter < y->iter : x->start_ns < y->start_ns;
}

static void sift_down(fa_kernel_span *v, size_t root, size_t n)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n) return;
        if (c + 1 < n && span_before(&v[c], &v[c + 1])) c++;
        if (!span_before(&v[root], &v[c])) return;
        fa_kernel_span t = v[root];
        v[root] = v[c];
        v[c] = t;
        root = c;
    }
}

/* Orders v by (iter, start) in place, with no second array: a run's spans arrive in seq order,
 * which for a cpu run is already that order (checked in one pass); otherwise heapsort (Williams
 * 1964), O(n log n) and O(1) memory — glibc's qsort would allocate a copy of the whole array
 * (merge sort), 65 MB for the 2.7 million kernels of a 100,000-node chain's traced span. */
static void sort_spans(fa_kernel_span *v, size_t n)
{
    size_t i = 1;
    while (i < n && !span_before(&v[i], &v[i - 1])) i++;
    if (i >= n) return;
    for (size_t r = n / 2; r-- > 0;) sift_down(v, r, n);
    for (size_t end = n; end-- > 1;) {
        fa_kernel_span t = v[0];
        v[0] = v[end];
        v[end] = t;
        sift_down(v, 0, end);
    }
}

/* Median over iterations of the summed idle gaps between consecutive kernels. Reads the run's
 * kernels as spans (fa_store_kernel_spans, 24 bytes each), not its whole trace, and orders them in
 * place (sort_spans): one array of the run's kernels at a time (a traced baseline holds every
 * iteration of its span: 2.7 million kernels for a 100,000-node chain). */
static fa_status measure_gaps(fa_ctx *ctx, fa_store *st, fa_analysis *a)
{
    fa_kernel_span *sp = NULL;
    size_t n_sp = 0;
    fa_status s = fa_store_kernel_spans(ctx, st, a->run_id, &sp, &n_sp);
    if (s) return s;
    int max_iter = -1;
    for (size_t i = 0; i < n_sp; i++)
        if (sp[i].iter > max_iter) max_iter = sp[i].iter;
    int n_it = max_iter + 1;
    bool single = n_it <= 0; /* imports: one pseudo-iteration */
    if (single) {
        n_it = 1;
        for (size_t i = 0; i < n_sp; i++) sp[i].iter = 0;
    }
    int64_t *gaps = calloc((size_t)n_it, sizeof *gaps);
    int64_t *counts = calloc((size_t)n_it, sizeof *counts);
    if (!gaps || !counts) {
        free(gaps); free(counts); free(sp);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory analyzing gaps");
    }
    sort_spans(sp, n_sp);
    for (size_t i = 0; i < n_sp;) {
        size_t j = i;
        while (j < n_sp && sp[j].iter == sp[i].iter) j++;
        if (sp[i].iter >= 0) { /* the warm-up's kernels (iteration -1) are not measured */
            int64_t g = 0;
            uint64_t last_end = sp[i].end_ns;
            for (size_t k = i + 1; k < j; k++) {
                if (sp[k].start_ns > last_end) g += (int64_t)(sp[k].start_ns - last_end);
                if (sp[k].end_ns > last_end) last_end = sp[k].end_ns;
            }
            gaps[sp[i].iter] = g;
            counts[sp[i].iter] = (int64_t)(j - i);
        }
        i = j;
    }
    free(sp);
    a->gap_ns = fa_stats_median_i64(gaps, (size_t)n_it); /* core's one median convention */
    a->kernels_per_iter = fa_stats_median_i64(counts, (size_t)n_it);
    free(gaps);
    free(counts);
    return FA_OK;
}

fa_status fa_analyze_run(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_ceilings *ceil, fa_analysis **out)
{
    fa_analysis *a = calloc(1, sizeof *a);
    if (!a) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    a->arena = fa_arena_create(1 << 16);
    a->run_id = run_id;
    a->ceilings = *ceil;
    fa_status s = FA_OK;
    fa_run_info ri;
    s = fa_store_get_run(ctx, st, run_id, a->arena, &ri);
    if (s) goto fail;
    a->iter_ns = ri.iter_median_ns > 0 ? ri.iter_median_ns : 0;

    /* nodes */
    fa_node_row *noderows = NULL;
    size_t n_nrows = 0;
    s = fa_store_get_nodes(ctx, st, run_id, true, a->arena, &noderows, &n_nrows);
    if (s) goto fail;
    if (n_nrows == 0) {
        s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: run %lld has no graph to analyze (an import without op structure?)",
                         fa_store_path(st), (long long)run_id);
        goto fail;
    }
    a->nodes = fa_arena_alloc(a->arena, sizeof *a->nodes * n_nrows);
    int max_node = 0;
    for (size_t i = 0; i < n_nrows; i++) {
        fa_an_node *n = &a->nodes[a->n_nodes++];
        n->id = noderows[i].id;
        n->name = noderows[i].name;
        n->op_type = noderows[i].op_type;
        n->pattern = noderows[i].pattern;
        n->flops = noderows[i].flops;
        n->bytes = noderows[i].bytes;
        if (n->id > max_node) max_node = n->id;
    }
    int *idx = fa_arena_alloc(a->arena, sizeof(int) * (size_t)(max_node + 1));
    for (int i = 0; i <= max_node; i++) idx[i] = -1;
    for (int i = 0; i < a->n_nodes; i++) idx[a->nodes[i].id] = i;
    a->node_index = idx;
    a->max_node_id = max_node;

    /* measured medians */
    fa_op_row *rows = NULL;
    size_t nrows = 0;
    s = fa_store_op_table(ctx, st, run_id, a->arena, &rows, &nrows, &a->n_iters);
    if (s) goto fail;
    for (size_t r = 0; r < nrows; r++)
        if (rows[r].node >= 0 && rows[r].node <= max_node && idx[rows[r].node] >= 0) {
            fa_an_node *n = &a->nodes[idx[rows[r].node]];
            n->median_ns = rows[r].median_ns;
            n->kernels = rows[r].kernels;
        }
    for (int i = 0; i < a->n_nodes; i++)
        fa_roofline_place(ceil, a->nodes[i].flops, a->nodes[i].bytes, (uint64_t)a->nodes[i].median_ns, &a->nodes[i].place);

    /* tensors */
    fa_tensor_row *trows = NULL;
    size_t n_trows = 0;
    s = fa_store_get_tensors(ctx, st, run_id, a->arena, &trows, &n_trows);
    if (s) goto fail;
    int max_t = 0;
    for (size_t i = 0; i < n_trows; i++)
        if (trows[i].id > max_t) max_t = trows[i].id;
    tensor_info *tens = fa_arena_alloc(a->arena, sizeof *tens * (size_t)(max_t + 1));
    for (int i = 0; i <= max_t; i++) tens[i].producer = -1;
    for (size_t i = 0; i < n_trows; i++) {
        int t = trows[i].id;
        if (t < 0 || t > max_t) continue;
        tens[t].name = trows[i].name;
        tens[t].bytes = trows[i].bytes;
        tens[t].producer = trows[i].producer;
        tens[t].graph_output = trows[i].graph_output;
    }

    /* edges: (tensor produced by a live node) -> each live consumer */
    fa_consumer_row *crows = NULL;
    size_t n_crows = 0;
    s = fa_store_get_consumers(ctx, st, run_id, a->arena, &crows, &n_crows);
    if (s) goto fail;
    a->edges = fa_arena_alloc(a->arena, sizeof *a->edges * (n_crows + 1));
    int *ncons = fa_arena_alloc(a->arena, sizeof(int) * (size_t)(max_t + 1));
    for (size_t i = 0; i < n_crows; i++) {
        int t = crows[i].tensor, c = crows[i].node;
        if (t < 0 || t > max_t || c < 0 || c > max_node || idx[c] < 0) continue;
        int p = tens[t].producer;
        if (p < 0 || p > max_node || idx[p] < 0) continue;
        ncons[t]++;
        fa_an_edge *e = &a->edges[a->n_edges++];
        e->tensor = t;
        e->tensor_name = tens[t].name;
        e->producer = p;
        e->consumer = c;
        e->tensor_bytes = tens[t].bytes;
        e->traffic_bytes = 2 * tens[t].bytes;
        e->graph_output = tens[t].graph_output;
    }
    for (int i = 0; i < a->n_edges; i++) a->edges[i].n_consumers = ncons[a->edges[i].tensor];

    /* chains: walk nodes in id order (ONNX and the zoo keep nodes topologically sorted; the
     * store keeps node ids), start a chain at every node not yet taken that is memory/latency
     * bound or an out-elementwise-fusable head, and extend through the first untaken
     * memory/latency-bound consumer. */
    /* edges grouped by producer (counting sort), so walking a chain is linear overall */
    int *adj_start = fa_arena_alloc(a->arena, sizeof(int) * (size_t)(max_node + 2));
    int *adj = fa_arena_alloc(a->arena, sizeof(int) * (size_t)(a->n_edges + 1));
    int *adj_fill = fa_arena_alloc(a->arena, sizeof(int) * (size_t)(max_node + 1));
    for (int e = 0; e < a->n_edges; e++) adj_start[a->edges[e].producer + 1]++;
    for (int i = 0; i <= max_node; i++) adj_start[i + 1] += adj_start[i];
    for (int e = 0; e < a->n_edges; e++) {
        int p = a->edges[e].producer;
        adj[adj_start[p] + adj_fill[p]++] = e;
    }
    bool *taken = fa_arena_alloc(a->arena, sizeof(bool) * (size_t)(max_node + 1));
    a->chains = fa_arena_alloc(a->arena, sizeof *a->chains * (size_t)(a->n_nodes + 1));
    int *path = fa_arena_alloc(a->arena, sizeof(int) * (size_t)(a->n_nodes + 1));
    double bw = ceil->mem_bw_gbs > 0 ? ceil->mem_bw_gbs : 1; /* GB/s = bytes/ns */
    for (int i = 0; i < a->n_nodes; i++) {
        fa_an_node *h = &a->nodes[i];
        if (taken[h->id]) continue;
        bool head_ok = membound(h) || h->pattern == FA_PATTERN_OUT_ELEMWISE_FUSABLE;
        if (!head_ok) continue;
        int len = 0, cur = h->id;
        path[len++] = cur;
        taken[cur] = true;
        for (;;) {
            int next = -1;
            for (int q = adj_start[cur]; q < adj_start[cur + 1]; q++) {
                const fa_an_edge *ed = &a->edges[adj[q]];
                if (taken[ed->consumer]) continue;
                const fa_an_node *c = &a->nodes[idx[ed->consumer]];
                if (!membound(c) || c->pattern == FA_PATTERN_OUT_ELEMWISE_FUSABLE || c->pattern == FA_PATTERN_OPAQUE) continue;
                if (next < 0 || idx[ed->consumer] < idx[next]) next = ed->consumer;
            }
            if (next < 0) break;
            path[len++] = next;
            taken[next] = true;
            cur = next;
        }
        if (len < 2) {
            taken[h->id] = membound(h); /* a lone complex head stays free to be read as a plain node */
            continue;
        }
        fa_an_chain *ch = &a->chains[a->n_chains++];
        ch->n_members = len;
        ch->members = fa_arena_alloc(a->arena, sizeof(int) * (size_t)len);
        memcpy(ch->members, path, sizeof(int) * (size_t)len);
        ch->launches = len;
        for (int k = 0; k < len; k++) ch->time_ns += a->nodes[idx[path[k]]].median_ns;
        for (int k = 0; k + 1 < len; k++)
            for (int q = adj_start[path[k]]; q < adj_start[path[k] + 1]; q++) {
                const fa_an_edge *ed = &a->edges[adj[q]];
                if (ed->consumer != path[k + 1]) continue;
                /* a tensor with other consumers or that is a graph output is still written;
                 * fusing removes only this consumer's read */
                ch->intermediate_bytes += (ed->n_consumers == 1 && !ed->graph_output) ? ed->traffic_bytes : ed->tensor_bytes;
            }
        ch->max_saving_ns = (double)ch->intermediate_bytes / bw + (double)(len - 1) * ceil->launch_ns;
        /* at most what the chain takes beyond its arithmetic at the peak: a fused kernel still
         * computes every FLOP (a compute-bound conv head at 60 % of the roof keeps 60 % of its
         * time), so the bound never claims the whole chain */
        double flops = 0;
        for (int k = 0; k < len; k++) flops += (double)a->nodes[idx[path[k]]].flops;
        double compute_floor = ceil->peak_gflops > 0 ? flops / ceil->peak_gflops : 0; /* GFLOP/s = FLOP/ns */
        double room = (double)ch->time_ns - compute_floor;
        if (ch->max_saving_ns > room) ch->max_saving_ns = room > 0 ? room : 0;
        ch->share = a->iter_ns > 0 ? (double)ch->time_ns / (double)a->iter_ns : 0;
        a->fusion_bound_ns += ch->max_saving_ns;
    }
    qsort(a->chains, (size_t)a->n_chains, sizeof *a->chains, cmp_chain);

    s = measure_gaps(ctx, st, a);
    if (s) goto fail;
    int64_t light_ns = 0;
    for (int i = 0; i < a->n_nodes; i++)
        if (is_light(a->nodes[i].pattern) && membound(&a->nodes[i])) light_ns += a->nodes[i].median_ns;
    for (int i = 0; i < a->n_edges; i++)
        if (!a->edges[i].graph_output) a->intermediate_bytes += a->edges[i].traffic_bytes;
    if (a->iter_ns > 0) {
        a->mem_bound_elementwise_share = (double)light_ns / (double)a->iter_ns;
        a->launch_share = (double)a->gap_ns / (double)a->iter_ns;
    }
    /* fusion_bound_ns is the chains' traffic and launches at the measured ceilings: what fusing
     * the memory-bound chains removes, not a bound on the plan (a BN fold removes a whole kernel,
     * an epilogue in the library's blocked layout speeds up the conv itself): said as what it is */
    snprintf(a->summary, sizeof a->summary,
             "In the traced iteration (median %.3f ms), %.1f%% is memory- or latency-bound elementwise/broadcast/injective "
             "work; %.1f MB of intermediate tensors round-trip memory per iteration; dispatch gaps between the %lld "
             "kernels take %.1f%% (%.3f ms). The %d memory-bound chains found move %.3f ms (%.1f%%) of that traffic and "
             "those launches at the measured bandwidth and dispatch cost; the plan's clusters (BN folds, epilogues, "
             "reductions) are predicted and measured cluster by cluster.",
             a->iter_ns / 1e6, 100.0 * a->mem_bound_elementwise_share, a->intermediate_bytes / 1e6,
             (long long)a->kernels_per_iter, 100.0 * a->launch_share, a->gap_ns / 1e6, a->n_chains,
             a->fusion_bound_ns / 1e6, a->iter_ns > 0 ? 100.0 * a->fusion_bound_ns / (double)a->iter_ns : 0.0);
    *out = a;
    return FA_OK;
fail:
    fa_analysis_free(a);
    return s ? s : fa_ctx_error(ctx, FA_ERR_INTERNAL, "analysis failed");
}

fa_status fa_analysis_save(fa_ctx *ctx, fa_store *st, const fa_analysis *a)
{
    fa_arena *ar = fa_arena_create(1 << 14);
    if (!ar) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_analysis_rows rows = {0};
    fa_analysis_kernel_row *k = fa_arena_alloc(ar, sizeof *k * (size_t)(a->n_nodes + 1));
    fa_analysis_chain_row *c = fa_arena_alloc(ar, sizeof *c * (size_t)(a->n_chains + 1));
    fa_analysis_edge_row *e = fa_arena_alloc(ar, sizeof *e * (size_t)(a->n_edges + 1));
    if (!k || !c || !e) {
        fa_arena_free(ar);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    /* analysis_kernels keyed by seq: we store one row per node (seq = node id) */
    for (int i = 0; i < a->n_nodes; i++) {
        const fa_an_node *n = &a->nodes[i];
        k[i] = (fa_analysis_kernel_row){n->id, n->place.intensity, n->place.achieved_gbs, n->place.achieved_gflops,
                                        n->place.pct_of_roof, fa_bound_name(n->place.bound)};
    }
    for (int i = 0; i < a->n_chains; i++) {
        const fa_an_chain *ch = &a->chains[i];
        c[i] = (fa_analysis_chain_row){.n_members = ch->n_members, .members = ch->members, .time_ns = ch->time_ns,
                                       .share = ch->share, .intermediate_bytes = ch->intermediate_bytes,
                                       .launches = ch->launches, .max_saving_ns = (int64_t)ch->max_saving_ns};
    }
    for (int i = 0; i < a->n_edges; i++) {
        const fa_an_edge *ed = &a->edges[i];
        e[i] = (fa_analysis_edge_row){ed->tensor, ed->producer, ed->consumer, ed->tensor_bytes, ed->tensor_bytes,
                                      ed->n_consumers - 1, ed->graph_output};
    }
    const fa_analysis_summary_row sums[] = {
        {"iter_ns", (double)a->iter_ns, "ns", a->summary},
        {"gap_ns", (double)a->gap_ns, "ns", NULL},
        {"launch_share", a->launch_share, "fraction", NULL},
        {"mem_bound_elementwise_share", a->mem_bound_elementwise_share, "fraction", NULL},
        {"intermediate_bytes", (double)a->intermediate_bytes, "bytes", NULL},
        {"fusion_bound_ns", a->fusion_bound_ns, "ns", NULL},
        {"mem_bw_gbs", a->ceilings.mem_bw_gbs, "GB/s", NULL},
        {"peak_gflops", a->ceilings.peak_gflops, "GFLOP/s", NULL},
        {"dispatch_ns", a->ceilings.launch_ns, "ns", NULL},
    };
    rows.kernels = k;
    rows.n_kernels = (size_t)a->n_nodes;
    rows.chains = c;
    rows.n_chains = (size_t)a->n_chains;
    rows.edges = e;
    rows.n_edges = (size_t)a->n_edges;
    rows.summary = sums;
    rows.n_summary = sizeof sums / sizeof sums[0];
    fa_status s = fa_store_put_analysis(ctx, st, a->run_id, &rows);
    fa_arena_free(ar);
    return s;
}
