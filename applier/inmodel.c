/* applier/inmodel — each accepted cluster's saving as the whole model sees it: the nodes its
 * fused node replaces in the baseline's trace against that fused node in the fused model's trace
 * (issue 36; the contract and the formula are in applier.h, fa_apply_inmodel_savings). */
#include "applier-impl.h"

#include "runtime/layout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One run's per-op table by node id (rows of fa_store_op_table) and its reorder rows by name. */
typedef struct side {
    fa_op_row *rows;
    size_t n_rows;
    int n_iters;
    const fa_op_row **by_node; /* [n_nodes]: the row of node id i, NULL none */
    int n_nodes;
    const fa_op_row **reorders; /* the reorder rows (no node, FA_REORDER_OP), by name */
    size_t n_reorders;
} side;

static int cmp_row_name(const void *x, const void *y)
{
    return strcmp((*(const fa_op_row *const *)x)->node_name, (*(const fa_op_row *const *)y)->node_name);
}

/* The side of per-op rows (fa_store_op_table's, or fa_op_table_of_trace's): indexed by node
 * id for [0, n_nodes), its reorder rows by name. */
static fa_status side_index(fa_ctx *ctx, fa_op_row *rows, size_t n_rows, int n_iters, int n_nodes, fa_arena *ar, side *out)
{
    memset(out, 0, sizeof *out);
    out->rows = rows;
    out->n_rows = n_rows;
    out->n_iters = n_iters;
    out->n_nodes = n_nodes;
    out->by_node = fa_arena_alloc(ar, sizeof *out->by_node * ((size_t)n_nodes + 1));
    if (!out->by_node) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    memset(out->by_node, 0, sizeof *out->by_node * ((size_t)n_nodes + 1));
    out->reorders = fa_arena_alloc(ar, sizeof *out->reorders * (out->n_rows + 1));
    if (!out->reorders) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < out->n_rows; i++) {
        const fa_op_row *r = &out->rows[i];
        if (r->node >= 0 && r->node < n_nodes) out->by_node[r->node] = r;
        else if (r->node < 0 && r->op_type && r->node_name && !strcmp(r->op_type, FA_REORDER_OP))
            out->reorders[out->n_reorders++] = r;
    }
    if (out->n_reorders > 1) qsort(out->reorders, out->n_reorders, sizeof *out->reorders, cmp_row_name);
    return FA_OK;
}

/* The side of a stored run. */
static fa_status side_load(fa_ctx *ctx, fa_store *st, int64_t run, int n_nodes, fa_arena *ar, side *out)
{
    fa_op_row *rows = NULL;
    size_t n = 0;
    int iters = 0;
    fa_status s = fa_store_op_table(ctx, st, run, ar, &rows, &n, &iters);
    return s ? s : side_index(ctx, rows, n, iters, n_nodes, ar, out);
}

/* The side of a trace held in memory (the baseline's side of the end-to-end rounds). */
static fa_status side_from_trace(fa_ctx *ctx, const fa_trace *t, int n_nodes, fa_arena *ar, side *out)
{
    fa_op_row *rows = NULL;
    size_t n = 0;
    int iters = 0;
    fa_status s = fa_op_table_of_trace(ctx, t, ar, &rows, &n, &iters);
    return s ? s : side_index(ctx, rows, n, iters, n_nodes, ar, out);
}

/* *out: the reorder row of tensor `name` (no node; FA_REORDER_OP, named FA_REORDER_NAME_FMT), NULL
 * none. FA_ERR_NOMEM. */
static fa_status reorder_row(fa_ctx *ctx, const side *sd, const char *name, const fa_op_row **out)
{
    *out = NULL;
    if (!sd->n_reorders) return FA_OK;
    size_t len = strlen(name) + sizeof FA_REORDER_NAME_FMT;
    char *want = malloc(len);
    if (!want) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    snprintf(want, len, FA_REORDER_NAME_FMT, name);
    fa_op_row key = {.node_name = want};
    const fa_op_row *kp = &key, **hit = bsearch(&kp, sd->reorders, sd->n_reorders, sizeof *sd->reorders, cmp_row_name);
    free(want);
    *out = hit ? *hit : NULL;
    return FA_OK;
}

/* Adds row r's per-iteration time (kernels + the idle before them) into acc[0..n_iters). */
static void add_row(double *acc, const fa_op_row *r, int n_iters)
{
    for (int k = 0; k < n_iters; k++) acc[k] += (double)r->iter_ns[k] + (double)r->idle_ns[k];
}

/* Median and IQR of acc[0..n) (core/stats.c's quantiles; acc sorted in place). */
static void med_iqr(double *acc, int n, double *med, double *iqr)
{
    qsort(acc, (size_t)n, sizeof *acc, fa_stats_cmp_double);
    *med = fa_stats_quantile_sorted(acc, (size_t)n, 0.5);
    *iqr = fa_stats_quantile_sorted(acc, (size_t)n, 0.75) - fa_stats_quantile_sorted(acc, (size_t)n, 0.25);
}

fa_status fa_apply_inmodel_savings(fa_ctx *ctx, fa_store *st, int64_t baseline_run, int64_t fused_run, const fa_plan *p,
                                   const fa_graph *fused, const fa_fused_map *map, const fa_trace *base_rounds,
                                   fa_cluster_verdict *v)
{
    for (int i = 0; i < p->n_clusters; i++) v[i].inmodel_saving_ns = v[i].inmodel_spread_ns = NAN;
    if (!fused || !map || !map->source || !map->fused || map->n_fused != fused->n_nodes) return FA_OK;
    fa_arena *ar = fa_arena_create(1 << 16);
    if (!ar) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    side base, fz;
    fa_status s = side_load(ctx, st, fused_run, fused->n_nodes, ar, &fz);
    /* the baseline's side of the same rounds when it matches them, round for round; else the
     * baseline run's own trace */
    bool paired = false;
    if (!s && base_rounds) {
        s = side_from_trace(ctx, base_rounds, map->n_source, ar, &base);
        paired = !s && base.n_iters > 0 && base.n_iters == fz.n_iters;
    }
    if (!s && !paired) s = side_load(ctx, st, baseline_run, map->n_source, ar, &base);
    double *a = NULL, *b = NULL;
    if (!s && base.n_iters > 0 && fz.n_iters > 0) {
        a = malloc(sizeof *a * (size_t)base.n_iters);
        b = malloc(sizeof *b * (size_t)fz.n_iters);
        if (!a || !b) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; !s && a && b && i < p->n_clusters; i++) {
        if (v[i].status != FA_CLUSTER_ACCEPTED) continue;
        int id = p->clusters[i].id;
        memset(a, 0, sizeof *a * (size_t)base.n_iters);
        memset(b, 0, sizeof *b * (size_t)fz.n_iters);
        int n_base = 0, n_fused = 0;
        bool missing = false;
        for (int n = 0; n < map->n_source && !missing; n++) {
            if (map->source[n] != id) continue;
            if (!base.by_node[n]) missing = true; /* a node the baseline ran and did not trace */
            else add_row(a, base.by_node[n], base.n_iters), n_base++;
        }
        for (int n = 0; n < map->n_fused && !missing; n++) {
            if (map->fused[n] != id) continue;
            if (!fz.by_node[n]) {
                missing = true;
                break;
            }
            add_row(b, fz.by_node[n], fz.n_iters), n_fused++;
            const fa_node *fn = fused->nodes[n];
            for (int o = 0; o < fn->n_outputs && !s; o++) {
                const fa_op_row *r = NULL;
                if (fn->outputs[o] >= 0) s = reorder_row(ctx, &fz, fused->tensors[fn->outputs[o]]->name, &r);
                if (r) add_row(b, r, fz.n_iters);
            }
        }
        if (s || missing || !n_base || !n_fused) continue; /* not measured: NAN */
        double ma, ia, mb, ib;
        if (paired) { /* round k's difference, a[k] <- a[k] - b[k] */
            for (int k = 0; k < base.n_iters; k++) a[k] -= b[k];
            med_iqr(a, base.n_iters, &ma, &ia);
            v[i].inmodel_saving_ns = ma;
            v[i].inmodel_spread_ns = ia;
            continue;
        }
        med_iqr(a, base.n_iters, &ma, &ia);
        med_iqr(b, fz.n_iters, &mb, &ib);
        v[i].inmodel_saving_ns = ma - mb;
        v[i].inmodel_spread_ns = sqrt(ia * ia + ib * ib);
    }
    free(a);
    free(b);
    fa_arena_free(ar);
    return s;
}
