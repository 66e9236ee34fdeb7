/* graph/symbolic — what in a prepared graph follows the model's symbolic input dims, so an
 * exported model (model.folded.onnx) keeps them symbolic instead of fixing the bound values. */
#include "ops-impl.h"

#include <stdlib.h>
#include <string.h>

/* The probe: the model imported again with every input dim the file leaves symbolic bound to
 * the value g bound it to plus one (a dim_param shared by several inputs stays one value). */
static fa_status probe_graph(fa_ctx *ctx, const fa_graph *g, const fa_load_options *opt, fa_graph **out, bool *any)
{
    fa_graph *p = NULL;
    fa_status s = fa_onnx_import(ctx, g->path, &p);
    if (s) return s;
    *any = false;
    fa_shape_binding *b = calloc((size_t)p->n_inputs + 1, sizeof *b);
    if (!b) {
        fa_graph_free(p);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    int nb = 0;
    for (int i = 0; i < p->n_inputs; i++) {
        const fa_tensor *t = p->tensors[p->inputs[i]];
        int gid = fa_graph_find_tensor(g, t->name);
        if (gid < 0 || t->rank < 0) continue;
        const fa_tensor *gt = g->tensors[gid];
        if (gt->rank != t->rank) continue;
        fa_shape_binding *sb = &b[nb];
        sb->name = t->name;
        sb->rank = t->rank;
        bool sym = false;
        for (int d = 0; d < t->rank; d++) {
            sb->dims[d] = gt->dims[d];
            if (t->dims[d] < 0) {
                sb->dims[d] = gt->dims[d] + 1;
                sym = true;
            }
        }
        if (sym) nb++;
    }
    if (nb == 0) { /* nothing symbolic: nothing to probe */
        free(b);
        fa_graph_free(p);
        *out = NULL;
        return FA_OK;
    }
    *any = true;
    fa_load_options po = {0};
    po.bindings = b;
    po.n_bindings = nb;
    po.no_fold = opt ? opt->no_fold : false;
    po.max_const_bytes = opt ? opt->max_const_bytes : 0;
    s = fa_graph_prepare(ctx, p, &po);
    free(b);
    if (s) {
        fa_graph_free(p);
        return s;
    }
    *out = p;
    return FA_OK;
}

/* For prepared graph g: tsym[t] = bits of tensor t's dims that follow the symbolic input dims,
 * nsym[n] = folded node n's outputs follow them (shape or value). Both NULL-free on success;
 * *any false (and nothing allocated) when the model has no symbolic dim. */
static fa_status mark_symbolic(fa_ctx *ctx, const fa_graph *g, const fa_load_options *opt, unsigned **tsym, bool **nsym,
                               bool *any)
{
    fa_graph *p = NULL;
    fa_status s = probe_graph(ctx, g, opt, &p, any);
    if (s) return fa_ctx_wrap(ctx, s, "%s: probing its symbolic dims: ", g->path);
    if (!*any) return FA_OK;
    if (p->n_tensors != g->n_tensors || p->n_nodes != g->n_nodes) {
        fa_graph_free(p);
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: probing its symbolic dims: the probe has %d nodes, the graph %d",
                            g->path, p->n_nodes, g->n_nodes);
    }
    unsigned *ts = calloc((size_t)g->n_tensors + 1, sizeof *ts);
    bool *ns = calloc((size_t)g->n_nodes + 1, sizeof *ns);
    if (!ts || !ns) {
        free(ts);
        free(ns);
        fa_graph_free(p);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < g->n_tensors; i++) {
        const fa_tensor *t = g->tensors[i], *u = p->tensors[i];
        if (t->rank != u->rank) {
            ts[i] = ~0u; /* the rank itself follows the symbolic dims */
            continue;
        }
        for (int d = 0; d < t->rank; d++)
            if (t->dims[d] != u->dims[d]) ts[i] |= 1u << d;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const fa_node *n = g->nodes[i], *m = p->nodes[i];
        if (!n->folded) continue;
        bool differs = !m->folded;
        for (int o = 0; o < n->n_outputs && !differs; o++) {
            const fa_tensor *t = fa_graph_out(g, n, o), *u = fa_graph_out(p, m, o);
            if (!t || !u) continue;
            differs = ts[t->id] || t->nbytes != u->nbytes || (t->data && u->data && memcmp(t->data, u->data, t->nbytes));
        }
        ns[i] = differs;
    }
    fa_graph_free(p);
    *tsym = ts;
    *nsym = ns;
    return FA_OK;
}

/* Copy node n of src into dst (its inputs by name; a constant input that dst lacks comes along
 * as an initializer; an output dst holds as a constant becomes this node's output again). */
static fa_status copy_node(fa_ctx *ctx, fa_graph *dst, const fa_graph *src, const fa_node *n)
{
    return fa_graph_copy_node(ctx, dst, src, n, FA_COPY_OUTPUT_UNCONST) ? FA_OK
                                                                         : (fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_NOMEM);
}

fa_status fa_graph_restore_symbolic(fa_ctx *ctx, fa_graph *dst, const fa_graph *src, const fa_load_options *opt)
{
    if (!src->path || !strncmp(src->path, "zoo:", 4)) return FA_OK; /* zoo models have static shapes */
    unsigned *tsym = NULL;
    bool *nsym = NULL, any = false;
    fa_status s = mark_symbolic(ctx, src, opt, &tsym, &nsym, &any);
    if (s || !any) return s;
    bool changed = true;
    while (changed && !s) {
        changed = false;
        /* a constant dst reads that src computed from the symbolic dims: compute it again */
        for (int k = 0; k < dst->n_nodes && !s; k++) {
            const fa_node *dn = dst->nodes[k];
            if (dn->folded) continue;
            for (int i = 0; i < dn->n_inputs && !s; i++) {
                const fa_tensor *t = fa_graph_in(dst, dn, i);
                if (!t || t->producer >= 0 || !(t->flags & FA_TENSOR_CONST)) continue;
                int sid = fa_graph_find_tensor(src, t->name);
                if (sid < 0) continue;
                int prod = src->tensors[sid]->producer;
                if (prod < 0 || !nsym[prod]) continue;
                s = copy_node(ctx, dst, src, src->nodes[prod]);
                changed = true;
            }
        }
    }
    for (int i = 0; i < dst->n_tensors && !s; i++) {
        fa_tensor *t = dst->tensors[i];
        int sid = fa_graph_find_tensor(src, t->name);
        if (sid < 0) continue;
        const fa_tensor *u = src->tensors[sid];
        if (t->rank != u->rank) continue;
        t->sym_dims = tsym[sid];
        for (int d = 0; d < t->rank && !s; d++)
            if (u->dim_params[d] && !t->dim_params[d]) {
                t->dim_params[d] = fa_arena_strdup(dst->arena, u->dim_params[d]);
                if (!t->dim_params[d]) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            }
    }
    free(tsym);
    free(nsym);
    return s ? s : fa_graph_index(ctx, dst);
}
