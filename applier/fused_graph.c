/* applier/fused_graph — graph rewriting: copies of a prepared graph with clusters applied
 * (BN folded into weights, epilogues as oneDNN post-op nodes, generated kernels as FusedKernel
 * nodes), scoped sub-graphs for per-cluster verification and benchmarks. */
#include "applier-impl.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The BN_FOLD cluster an epilogue depends on: the one anchored at the same producer (found by
 * anchor, so the plan's ranking order does not matter). */
static const fa_cluster *bn_fold_of(const fa_plan *p, const fa_cluster *epi)
{
    if (epi->depends_on < 0) return NULL;
    for (int i = 0; i < p->n_clusters; i++)
        if (p->clusters[i].kind == FA_CLUSTER_BN_FOLD && p->clusters[i].anchor == epi->anchor) return &p->clusters[i];
    return NULL;
}

/* Copy tensor metadata of src into dst graph under the same name, its constant data shared
 * (one blob for every graph of the run: a weight is never copied, nor reordered twice). */
static int copy_tensor(fa_ctx *ctx, fa_graph *dst, const fa_tensor *t) { return fa_graph_copy_tensor(ctx, dst, t); }

static fa_node *copy_node(fa_ctx *ctx, fa_graph *dst, const fa_graph *g, const fa_node *n)
{
    return fa_graph_copy_node(ctx, dst, g, n, FA_COPY_OUTPUT_SHAPES);
}

static int add_const_tensor(fa_ctx *ctx, fa_graph *dst, const char *name, fa_dtype dt, int rank, const int64_t *dims,
                            const void *data, size_t bytes)
{
    int id = fa_graph_tensor(dst, name);
    if (id < 0) return -1;
    fa_tensor *t = dst->tensors[id];
    fa_tensor_set_shape(t, dt, rank, dims);
    if (fa_tensor_set_data(ctx, t, data, bytes)) return -1;
    t->flags |= FA_TENSOR_INITIALIZER | FA_TENSOR_CONST;
    return id;
}

/* Weights/bias of a BN-folded producer as new constant tensors in dst; names returned. */
static fa_status folded_params(fa_ctx *ctx, fa_graph *dst, const fa_graph *g, const fa_cluster *bn_c,
                               const char **w_name, const char **b_name, int64_t *b_rank_out, int inject)
{
    const fa_node *prod = g->nodes[bn_c->anchor], *bn = NULL;
    for (int m = 0; m < bn_c->n_members; m++)
        if (bn_c->members[m] != bn_c->anchor) bn = g->nodes[bn_c->members[m]];
    if (!bn) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "BN fold cluster %d has no BN member", bn_c->id);
    float *nw = NULL, *nb = NULL;
    size_t nwc = 0, nbc = 0;
    fa_status s = fa_bn_fold(ctx, g, prod, bn, &nw, &nwc, &nb, &nbc);
    if (s) return s;
    if (inject)
        for (size_t i = 0; i < nbc; i++) nb[i] += 1.0f; /* test hook: a wrong fold */
    const fa_tensor *W = fa_graph_in(g, prod, 1);
    char wn[512], bnm[512];
    snprintf(wn, sizeof wn, "%s__bnfold_w", prod->name);
    snprintf(bnm, sizeof bnm, "%s__bnfold_b", prod->name);
    int64_t bd[2];
    int br = 1;
    bd[0] = (int64_t)nbc;
    const fa_tensor *Y = fa_graph_out(g, bn, 0);
    if (!strcmp(prod->op_type, "Gemm") && Y && Y->rank == 2 && (int64_t)nbc == Y->dims[0] * Y->dims[1] && Y->dims[0] > 1) {
        br = 2;
        bd[0] = Y->dims[0];
        bd[1] = Y->dims[1];
    }
    if (add_const_tensor(ctx, dst, wn, FA_DTYPE_FLOAT, W->rank, W->dims, nw, nwc * sizeof(float)) < 0 ||
        add_const_tensor(ctx, dst, bnm, FA_DTYPE_FLOAT, br, bd, nb, nbc * sizeof(float)) < 0) {
        free(nw);
        free(nb);
        return fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_NOMEM;
    }
    free(nw);
    free(nb);
    *w_name = fa_graph_find_tensor(dst, wn) >= 0 ? dst->tensors[fa_graph_find_tensor(dst, wn)]->name : NULL;
    *b_name = dst->tensors[fa_graph_find_tensor(dst, bnm)]->name;
    if (b_rank_out) *b_rank_out = br;
    return FA_OK;
}

/* Test hook (fa_apply_defect): ins[1] (the weights) or ins[2] (the bias; a zero one added for a
 * Conv without) replaced in dst by a perturbed copy. */
static fa_status defect_param(fa_ctx *ctx, fa_graph *dst, const fa_node *anchor, const char **ins, int *ni, int defect)
{
    bool weight = defect == FA_APPLY_DEFECT_WEIGHT;
    int k = weight ? 1 : 2;
    int src = k < *ni && ins[k][0] ? fa_graph_find_tensor(dst, ins[k]) : -1;
    const fa_tensor *W = fa_graph_find_tensor(dst, ins[1]) >= 0 ? dst->tensors[fa_graph_find_tensor(dst, ins[1])] : NULL;
    int64_t n = src >= 0 ? fa_tensor_numel(dst->tensors[src]) : (W && W->rank > 0 && strcmp(anchor->op_type, "Gemm") ? W->dims[0] : 0);
    if (n <= 0 || (src >= 0 && (dst->tensors[src]->dtype != FA_DTYPE_FLOAT || !dst->tensors[src]->data)))
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': no float %s to perturb", anchor->name, weight ? "weights" : "bias");
    float *v = calloc((size_t)n, sizeof(float));
    if (!v) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    if (src >= 0) memcpy(v, dst->tensors[src]->data, sizeof(float) * (size_t)n);
    int64_t at = 0;
    float big = 0;
    for (int64_t i = 0; i < n; i++)
        if (fabsf(v[i]) > big) {
            big = fabsf(v[i]);
            at = i;
        }
    if (weight) v[at] *= 1.10f;
    else v[0] += big > 0 ? 0.05f * big : 0.05f;
    char name[600];
    snprintf(name, sizeof name, "%s__defect_%s", anchor->name, weight ? "w" : "b");
    int64_t dims[1] = {n};
    const fa_tensor *S = src >= 0 ? dst->tensors[src] : NULL;
    int id = add_const_tensor(ctx, dst, name, FA_DTYPE_FLOAT, S ? S->rank : 1, S ? S->dims : dims, v, sizeof(float) * (size_t)n);
    free(v);
    if (id < 0) return fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_NOMEM;
    if (k >= *ni) *ni = k + 1;
    ins[k] = dst->tensors[id]->name;
    return FA_OK;
}

/* fa_gemm_take_fn of the applier: a member of the cluster (user). */
static bool member_of(void *user, const fa_graph *g, int node)
{
    (void)g;
    const fa_cluster *c = user;
    for (int m = 0; m < c->n_members; m++)
        if (c->members[m] == node) return true;
    return false;
}

/* The operands of a MatMul epilogue's anchor as its cluster folded them (fa_gemm_operand_fold on
 * its members): the fused node reads each one's source (ins[k] replaced), through `a_shape` /
 * `a_strides` (`b_...`: the operand's shape and its element strides in the source) when a view was
 * folded, and scales the product by `alpha` (oneDNN's output scale, before the post-ops) when a
 * scalar scale was. */
static fa_status fold_operands(fa_ctx *ctx, fa_graph *dst, const fa_graph *g, const fa_node *anchor, const fa_cluster *epi,
                               const char **ins, fa_gemm_operand *fo, double *alpha)
{
    *alpha = 1;
    for (int k = 0; k < 2; k++) {
        fo[k].n_nodes = 0;
        if (!epi || epi->n_members <= 1 || strcmp(anchor->op_type, "MatMul") ||
            !fa_gemm_operand_fold(g, anchor, k, member_of, (void *)epi, &fo[k]))
            continue;
        const fa_tensor *t = g->tensors[fo[k].source];
        if (copy_tensor(ctx, dst, t) < 0) return fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_NOMEM;
        ins[k] = t->name;
        *alpha *= fo[k].scale;
    }
    return FA_OK;
}

/* FA_FUSED_FLOPS_ATTR on fused node fn: the flops of cluster c's members in g by their own
 * formulas (fa_node_cost), the work its kernel does (a BN fold's scale and shift, folded into the
 * weights, count their few flops per output beside the product's). fa_node_cost reads it: the cpu
 * executor runs a kernel under 1 MFLOP and 256 KiB moved on one thread, so a fused node without
 * it ran its convolution or product there (graph/registry.c fused_cost). False on OOM. */
static bool set_fused_flops(fa_graph *dst, fa_node *fn, const fa_graph *g, const fa_cluster *c)
{
    uint64_t f = 0;
    for (int m = 0; m < c->n_members; m++) {
        const fa_node *mn = c->members[m] >= 0 && c->members[m] < g->n_nodes ? g->nodes[c->members[m]] : NULL;
        if (!mn) continue;
        fa_op_cost mc;
        fa_node_cost(g, mn, &mc);
        f = fa_u64_add_sat(f, mc.flops);
    }
    return fa_node_add_attr_int(dst, fn, FA_FUSED_FLOPS_ATTR, f > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)f) != NULL;
}

/* Add the anchor op (plain or Fused*) with optionally folded weights; inject: 0, or 1 + the
 * fa_apply_defect its kernel carries (test hook). */
static fa_node *add_anchor(fa_ctx *ctx, fa_graph *dst, const fa_graph *g, const fa_node *anchor, const char *w_name,
                           const char *b_name, const char *out_name, const fa_cluster *epi, int inject)
{
    const char *ins[72];
    int ni = 0;
    for (int i = 0; i < anchor->n_inputs && i < 64; i++) {
        const fa_tensor *t = fa_graph_in(g, anchor, i);
        ins[ni++] = t ? t->name : "";
        if (t && copy_tensor(ctx, dst, t) < 0) return NULL;
    }
    if (w_name) ins[1] = w_name;
    if (b_name) {
        if (ni < 3) ni = 3;
        ins[2] = b_name;
    }
    fa_gemm_operand fo[2];
    double alpha = 1;
    if (fold_operands(ctx, dst, g, anchor, epi, ins, fo, &alpha)) return NULL;
    fa_post_op post[40];
    int np = 0;
    if (inject == 1 + FA_APPLY_DEFECT_WEIGHT || inject == 1 + FA_APPLY_DEFECT_BIAS) {
        if (defect_param(ctx, dst, anchor, ins, &ni, inject - 1)) return NULL;
    }
    if (epi) {
        /* post-op operands follow every input slot the anchor op declares: an omitted optional
         * input (a Conv's bias, a Gemm's C, as the dynamo exporter writes them) stays omitted ("")
         * instead of the first operand landing in its slot and being read as the bias */
        int slots = anchor->op && anchor->op->max_inputs > 0 ? anchor->op->max_inputs : 0;
        while (ni < slots && ni < 64) ins[ni++] = "";
        int n_post = epi->n_post_ops - (inject == 1 + FA_APPLY_DEFECT_DROP_POST_OP && epi->n_post_ops > 0);
        for (int k = 0; k < n_post && np < 38; k++) {
            post[np] = epi->post_ops[k];
            int tid = post[np].operand;
            if (tid >= 0) { /* the operand becomes an input of the fused node; the post-op names its index */
                const fa_tensor *t = g->tensors[tid];
                if (copy_tensor(ctx, dst, t) < 0) return NULL;
                post[np].operand = ni;
                ins[ni++] = t->name;
            }
            np++;
        }
        if (inject == 1 + FA_APPLY_DEFECT_ADD_ONE) post[np++] = (fa_post_op){FA_POST_OP_LINEAR, 1.0f, 1.0f, -1};
    }
    const char *outs[1] = {out_name};
    int ot = fa_graph_find_tensor(g, out_name);
    if (ot < 0 || copy_tensor(ctx, dst, g->tensors[ot]) < 0) {
        if (!fa_ctx_status(ctx)) fa_ctx_error(ctx, FA_ERR_INTERNAL, "fused output '%s' not in the graph", out_name);
        return NULL;
    }
    char op[64], name[600];
    snprintf(op, sizeof op, "%s%s", epi ? "Fused" : "", anchor->op_type);
    snprintf(name, sizeof name, "%s%s", anchor->name, epi ? "__fused" : "__bnfold");
    fa_node *n = fa_graph_add_node(ctx, dst, name, op, epi ? FA_FUSED_DOMAIN : anchor->domain, ni, ins, 1, outs);
    if (!n) return NULL;
    n->opset = anchor->opset;
    bool gemm_folded = b_name && !strcmp(anchor->op_type, "Gemm");
    for (int a = 0; a < anchor->n_attrs; a++) {
        if (gemm_folded && !strcmp(anchor->attrs[a].name, "beta")) continue; /* folded C carries beta */
        if (!fa_node_copy_attr(dst, n, &anchor->attrs[a])) return NULL;
    }
    if (np && !fa_post_ops_set_node(dst, n, post, np)) return NULL;
    if (epi && !set_fused_flops(dst, n, g, epi)) {
        fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (int k = 0; k < 2; k++)
        if (fo[k].n_nodes > 0 && fo[k].strided &&
            (!fa_node_add_attr_ints(dst, n, k ? "b_shape" : "a_shape", fo[k].dims, fo[k].rank) ||
             !fa_node_add_attr_ints(dst, n, k ? "b_strides" : "a_strides", fo[k].strides, fo[k].rank))) {
            fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            return NULL;
        }
    if (alpha != 1 && !fa_node_add_attr_float(dst, n, "alpha", (float)alpha)) {
        fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return n;
}

/* A generated epilogue's FusedKernel node fn (inputs: c->inputs in order) learns its product:
 * `gemm` the anchor's op ("MatMul" / "Gemm"), `gemm_inputs` the node's input indices of A, B and
 * C (-1: none), and the anchor's transB / alpha / beta (runtime/cpu/dnnl.c
 * fa_dnnl_gemm_epilogue_kernel reads them). False on OOM. */
static bool gemm_attrs(fa_graph *dst, fa_node *fn, const fa_graph *g, const fa_cluster *c)
{
    const fa_node *an = g->nodes[c->anchor];
    int64_t idx[3] = {-1, -1, -1};
    for (int k = 0; k < 3 && k < an->n_inputs; k++)
        for (int i = 0; an->inputs[k] >= 0 && i < c->n_inputs; i++)
            if (c->inputs[i] == an->inputs[k]) {
                idx[k] = i;
                break;
            }
    if (!fa_node_add_attr_string(dst, fn, "gemm", an->op_type) || !fa_node_add_attr_ints(dst, fn, "gemm_inputs", idx, 3))
        return false;
    for (int a = 0; a < an->n_attrs; a++)
        if (!strcmp(an->attrs[a].name, "transB") || !strcmp(an->attrs[a].name, "alpha") || !strcmp(an->attrs[a].name, "beta"))
            if (!fa_node_copy_attr(dst, fn, &an->attrs[a])) return false;
    return true;
}

/* dst gets out = in + 1.0 (a float scalar constant broadcast), `in` shaped as `like`. */
static fa_status add_plus_one(fa_ctx *ctx, fa_graph *dst, const fa_tensor *like, const char *in, const char *out)
{
    char one_name[640];
    snprintf(one_name, sizeof one_name, "%.600s__one", out);
    int ti = fa_graph_tensor(dst, in), to = fa_graph_tensor(dst, one_name);
    if (ti < 0 || to < 0) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_tensor_set_shape(dst->tensors[ti], like->dtype, like->rank, like->dims);
    const float one = 1.0f;
    fa_tensor_set_shape(dst->tensors[to], FA_DTYPE_FLOAT, 0, NULL);
    fa_status s = fa_tensor_set_data(ctx, dst->tensors[to], &one, sizeof one);
    if (s) return s;
    dst->tensors[to]->flags |= FA_TENSOR_INITIALIZER;
    const char *ins[2] = {in, one_name}, *outs[1] = {out};
    char name[700];
    snprintf(name, sizeof name, "%.600s__inject_add", out);
    fa_node *n = fa_graph_add_node(ctx, dst, name, "Add", "", 2, ins, 1, outs);
    if (!n) return fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_NOMEM;
    return FA_OK;
}

/* A node of an applied cluster and the cluster that emits it (its place in builder.applied). */
typedef struct owned {
    int node;
    int slot;
    int seq; /* order of assignment: a later one wins (an epilogue takes its BN fold's members) */
} owned;

typedef struct builder {
    const fa_graph *g;
    const fa_plan *p;
    int *applied;           /* indices into p->clusters of the applied clusters, in order applied */
    int n_applied;
    owned *owner;           /* members of applied clusters, sorted by node, one per node */
    int n_owner;
    int *scope;             /* node ids in scope, in g's topological order; NULL: every live node */
    int n_scope;
    int inject;             /* cluster id to corrupt, -1 */
    fa_apply_defect defect; /* what its fused kernel gets wrong */
    int *emit_lo, *emit_hi; /* by place in applied: the nodes [lo, hi) of dst its cluster emitted
                               (build fills them; lo == hi: none, a fold an epilogue took over) */
} builder;

/* What the builds walk (fa_fused_graph_walked): every node, tensor and cluster a build looks at. */
static _Atomic uint64_t walked;

uint64_t fa_fused_graph_walked(void) { return atomic_load(&walked); }

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int cmp_owned(const void *a, const void *b)
{
    const owned *x = a, *y = b;
    if (x->node != y->node) return (x->node > y->node) - (x->node < y->node);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Sorts ids[0..n) and drops repeats; the new count. */
static int sort_unique(int *ids, int n)
{
    if (n > 1) qsort(ids, (size_t)n, sizeof *ids, cmp_int);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!m || ids[m - 1] != ids[i]) ids[m++] = ids[i];
    return m;
}

static bool has_id(const int *ids, int n, int id) { return n > 0 && bsearch(&id, ids, (size_t)n, sizeof *ids, cmp_int); }

/* The place in b->applied of the applied cluster that emits node `node`, -1 none. */
static int owner_of(const builder *b, int node)
{
    int lo = 0, hi = b->n_owner;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (b->owner[mid].node < node) lo = mid + 1;
        else hi = mid;
    }
    return lo < b->n_owner && b->owner[lo].node == node ? b->owner[lo].slot : -1;
}

/* Build dst from the builder's scope. Graph inputs: the original inputs read in scope plus
 * every non-constant tensor read in scope but produced outside it (in the original input order,
 * then by tensor id). Graph outputs: original outputs produced in scope plus `extra` tensor ids.
 * Walks the scope's nodes and their edges, the applied clusters and the graph's inputs and
 * outputs, never the whole graph for a scope (issue 38: a probe per cluster made advise
 * quadratic). */
static fa_status build(fa_ctx *ctx, const builder *b, const int *extra, int n_extra, fa_graph **out)
{
    const fa_graph *g = b->g;
    const int *scope = b->scope ? b->scope : g->topo;
    int n_scope = b->scope ? b->n_scope : g->n_topo;
    uint64_t seen = (uint64_t)n_scope + (uint64_t)b->n_applied + (uint64_t)g->n_inputs + (uint64_t)g->n_outputs;
    fa_graph *dst = fa_graph_create(g->name);
    if (!dst) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    dst->path = g->path ? fa_arena_strdup(dst->arena, g->path) : NULL;
    dst->ir_version = g->ir_version;
    fa_status s = FA_OK;
    for (int i = 0; i < g->n_opsets && !s; i++) s = fa_graph_set_opset(ctx, dst, g->opsets[i].domain, g->opsets[i].version);
    if (!s) s = fa_graph_set_opset(ctx, dst, FA_FUSED_DOMAIN, 1);
    if (s) goto fail;
    /* the tensors the scope produces, then those it reads from outside (sorted id sets) */
    size_t n_out_edges = 0, n_in_edges = 0;
    for (int k = 0; k < n_scope; k++) {
        n_out_edges += (size_t)g->nodes[scope[k]]->n_outputs;
        n_in_edges += (size_t)g->nodes[scope[k]]->n_inputs;
    }
    for (int a = 0; a < b->n_applied; a++) n_in_edges += (size_t)b->p->clusters[b->applied[a]].n_post_ops;
    seen += n_out_edges + n_in_edges;
    int *produced = malloc(sizeof(int) * (n_out_edges + 1)), *is_in = malloc(sizeof(int) * (n_in_edges + 1));
    bool *taken = NULL;
    if (!produced || !is_in) { free(produced); free(is_in); s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto fail; }
    int n_produced = 0, n_is_in = 0;
    for (int k = 0; k < n_scope; k++) {
        const fa_node *n = g->nodes[scope[k]];
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) produced[n_produced++] = n->outputs[o];
    }
    n_produced = sort_unique(produced, n_produced);
    for (int k = 0; k < n_scope; k++) {
        const fa_node *n = g->nodes[scope[k]];
        for (int i = 0; i < n->n_inputs; i++) {
            int t = n->inputs[i];
            if (t < 0 || has_id(produced, n_produced, t)) continue;
            const fa_tensor *ten = g->tensors[t];
            if ((ten->flags & FA_TENSOR_CONST) && ten->data) continue;
            is_in[n_is_in++] = t;
        }
    }
    /* epilogue binary operands may come from outside the scope too */
    for (int a = 0; a < b->n_applied; a++) {
        const fa_cluster *cl = &b->p->clusters[b->applied[a]];
        for (int k = 0; k < cl->n_post_ops; k++) {
            int t = cl->post_ops[k].operand;
            if (t >= 0 && !has_id(produced, n_produced, t) && !((g->tensors[t]->flags & FA_TENSOR_CONST) && g->tensors[t]->data))
                is_in[n_is_in++] = t;
        }
    }
    n_is_in = sort_unique(is_in, n_is_in);
    taken = calloc((size_t)n_is_in + 1, sizeof *taken);
    if (!taken) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    /* inputs first, in the original order, so input indices stay comparable */
    for (int i = 0; i < g->n_inputs && !s; i++) {
        int t = g->inputs[i];
        int *at = n_is_in ? bsearch(&t, is_in, (size_t)n_is_in, sizeof *is_in, cmp_int) : NULL;
        if (!at || taken[at - is_in]) continue;
        int id = copy_tensor(ctx, dst, g->tensors[t]);
        if (id < 0 || fa_graph_add_input(ctx, dst, id)) s = fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_NOMEM;
        taken[at - is_in] = true;
    }
    for (int k = 0; k < n_is_in && !s; k++)
        if (!taken[k]) {
            int id = copy_tensor(ctx, dst, g->tensors[is_in[k]]);
            if (id < 0 || fa_graph_add_input(ctx, dst, id)) s = fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_NOMEM;
        }
    free(taken);
    free(is_in);
    free(produced);
    if (s) goto fail;

    bool *emitted = calloc((size_t)b->n_applied + 1, 1); /* by place in b->applied */
    if (!emitted) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    for (int k = 0; k < n_scope && !s; k++) {
        const fa_node *n = g->nodes[scope[k]];
        int slot = owner_of(b, n->id);
        if (slot < 0) {
            if (!copy_node(ctx, dst, g, n)) s = fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_NOMEM;
            continue;
        }
        if (emitted[slot]) continue;
        emitted[slot] = true;
        b->emit_lo[slot] = b->emit_hi[slot] = dst->n_nodes;
        const fa_cluster *c = &b->p->clusters[b->applied[slot]];
        int inject = b->inject == c->id ? 1 + (int)b->defect : 0; /* 0: none, else 1 + the defect */
        if (c->kind == FA_CLUSTER_BN_FOLD) {
            const char *wn, *bn_name;
            const fa_node *bn = NULL;
            for (int m = 0; m < c->n_members; m++)
                if (c->members[m] != c->anchor) bn = g->nodes[c->members[m]];
            s = folded_params(ctx, dst, g, c, &wn, &bn_name, NULL, inject == 1 + FA_APPLY_DEFECT_ADD_ONE);
            if (!s && !add_anchor(ctx, dst, g, g->nodes[c->anchor], wn, bn_name, fa_graph_out(g, bn, 0)->name, NULL, inject))
                s = fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_NOMEM;
        } else if (c->kind == FA_CLUSTER_EPILOGUE && !c->epilogue_generated) {
            const char *wn = NULL, *bn_name = NULL;
            if (c->depends_on >= 0) {
                const fa_cluster *dep = bn_fold_of(b->p, c);
                if (!dep) { s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "cluster %d depends on a BN fold the plan lacks", c->id); break; }
                s = folded_params(ctx, dst, g, dep, &wn, &bn_name, NULL, 0);
                if (s) break;
            }
            if (!add_anchor(ctx, dst, g, g->nodes[c->anchor], wn, bn_name, g->tensors[c->outputs[0]]->name, c, inject))
                s = fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_NOMEM;
        } else {
            const char *ins[64], *outs[16];
            if (c->n_inputs > 64 || c->n_outputs > 16) { s = fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "cluster %d too wide", c->id); break; }
            for (int i = 0; i < c->n_inputs; i++) {
                ins[i] = g->tensors[c->inputs[i]]->name;
                if (copy_tensor(ctx, dst, g->tensors[c->inputs[i]]) < 0) s = FA_ERR_NOMEM;
            }
            for (int i = 0; i < c->n_outputs; i++) {
                outs[i] = g->tensors[c->outputs[i]]->name;
                if (copy_tensor(ctx, dst, g->tensors[c->outputs[i]]) < 0) s = FA_ERR_NOMEM;
            }
            if (s) break;
            char name[64], wrong[600];
            snprintf(name, sizeof name, "fused_c%d", c->id);
            /* test hook: a deliberately wrong fused graph, on any target: the kernel writes its
             * first (float) output under another name and an Add of 1.0 makes the output */
            const char *real_out = outs[0];
            bool corrupt = inject > 0 && g->tensors[c->outputs[0]]->dtype == FA_DTYPE_FLOAT;
            if (corrupt) {
                snprintf(wrong, sizeof wrong, "%.580s__inject", real_out);
                outs[0] = wrong;
            }
            fa_node *fn = fa_graph_add_node(ctx, dst, name, "FusedKernel", FA_FUSED_DOMAIN, c->n_inputs, ins, c->n_outputs, outs);
            if (!fn || !fa_node_add_attr_int(dst, fn, "cluster", c->id) || !set_fused_flops(dst, fn, g, c))
                s = fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_NOMEM;
            if (!s && c->kind == FA_CLUSTER_EPILOGUE && !gemm_attrs(dst, fn, g, c))
                s = fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_NOMEM;
            if (!s && corrupt) s = add_plus_one(ctx, dst, g->tensors[c->outputs[0]], wrong, real_out);
        }
        b->emit_hi[slot] = dst->n_nodes;
    }
    free(emitted);
    if (s) goto fail;
    for (int i = 0; i < g->n_outputs && !s; i++) {
        int id = fa_graph_find_tensor(dst, g->tensors[g->outputs[i]]->name);
        if (id >= 0 && dst->tensors[id]->producer >= 0) s = fa_graph_add_output(ctx, dst, id);
    }
    for (int i = 0; i < n_extra && !s; i++) {
        int id = fa_graph_find_tensor(dst, g->tensors[extra[i]]->name);
        if (id < 0) continue;
        bool dup = false;
        for (int k = 0; k < dst->n_outputs; k++) dup |= dst->outputs[k] == id;
        if (!dup) s = fa_graph_add_output(ctx, dst, id);
    }
    if (!s) s = fa_graph_index(ctx, dst);
    if (s) goto fail;
    atomic_fetch_add(&walked, seen);
    *out = dst;
    return FA_OK;
fail:
    atomic_fetch_add(&walked, seen);
    fa_graph_free(dst);
    return s;
}

static void free_builder(builder *b)
{
    free(b->emit_lo);
    free(b->emit_hi);
    free(b->applied);
    free(b->owner);
    free(b->scope);
}

/* map from builder b after build made dst: each dst node emitted for an applied cluster maps to its
 * id, and each source node it owns to the same id when that cluster emitted a node (an epilogue's
 * absorbed fold emits none: its members are the epilogue's). */
static fa_status fill_map(fa_ctx *ctx, const builder *b, const fa_graph *dst, fa_fused_map *map)
{
    fa_fused_map m = {.n_source = b->g->n_nodes, .n_fused = dst->n_nodes};
    m.source = malloc(sizeof(int) * ((size_t)m.n_source + 1));
    m.fused = malloc(sizeof(int) * ((size_t)m.n_fused + 1));
    if (!m.source || !m.fused) {
        fa_fused_map_free(&m);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    *map = m;
    for (int i = 0; i < map->n_source; i++) map->source[i] = -1;
    for (int i = 0; i < map->n_fused; i++) map->fused[i] = -1;
    for (int a = 0; a < b->n_applied; a++)
        for (int n = b->emit_lo[a]; n < b->emit_hi[a] && n < map->n_fused; n++) map->fused[n] = b->p->clusters[b->applied[a]].id;
    for (int k = 0; k < b->n_owner; k++) {
        int a = b->owner[k].slot, node = b->owner[k].node;
        if (node >= 0 && node < map->n_source && b->emit_hi[a] > b->emit_lo[a]) map->source[node] = b->p->clusters[b->applied[a]].id;
    }
    return FA_OK;
}

void fa_fused_map_free(fa_fused_map *map)
{
    if (!map) return;
    free(map->source);
    free(map->fused);
    memset(map, 0, sizeof *map);
}

/* The index into p->clusters of the cluster with id `id`, -1 none: its own index when the plan
 * numbers clusters by place (the advisor's), else a scan. */
static int cluster_index(const fa_plan *p, int id)
{
    if (id >= 0 && id < p->n_clusters && p->clusters[id].id == id) return id;
    for (int i = 0; i < p->n_clusters; i++)
        if (p->clusters[i].id == id) return i;
    return -1;
}

fa_status fa_fused_graph_scoped(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const int *ids, int n_ids,
                                bool scope_to_clusters, bool apply, int inject, fa_apply_defect defect, const int *extra,
                                int n_extra, fa_graph **out)
{
    return fa_fused_graph_mapped(ctx, g, p, ids, n_ids, scope_to_clusters, apply, inject, defect, extra, n_extra, out,
                                 NULL);
}

fa_status fa_fused_graph_mapped(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const int *ids, int n_ids,
                                bool scope_to_clusters, bool apply, int inject, fa_apply_defect defect, const int *extra,
                                int n_extra, fa_graph **out, fa_fused_map *map)
{
    if (!g->topo || !g->topo_pos) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "fused graph: the graph is not indexed");
    builder b;
    memset(&b, 0, sizeof b);
    b.g = g;
    b.p = p;
    b.inject = inject;
    b.defect = defect;
    /* the chosen clusters (BN folds first, so a dependent epilogue can take their members over),
     * each with the BN fold an epilogue absorbs */
    int *order = malloc(sizeof(int) * (size_t)(n_ids + 1));
    size_t n_members = 0;
    int n_order = 0;
    for (int pass = 0; order && pass < 2; pass++)
        for (int k = 0; k < n_ids; k++) {
            int ci = cluster_index(p, ids[k]);
            if (ci < 0 || (pass == 0) != (p->clusters[ci].kind == FA_CLUSTER_BN_FOLD)) continue;
            const fa_cluster *c = &p->clusters[ci], *dep = c->kind == FA_CLUSTER_EPILOGUE ? bn_fold_of(p, c) : NULL;
            order[n_order++] = ci;
            n_members += (size_t)c->n_members + (dep ? (size_t)dep->n_members : 0);
        }
    b.applied = malloc(sizeof(int) * (size_t)(n_order + 1));
    b.emit_lo = calloc((size_t)n_order + 1, sizeof(int));
    b.emit_hi = calloc((size_t)n_order + 1, sizeof(int));
    b.owner = malloc(sizeof(owned) * (n_members + 1));
    if (scope_to_clusters) b.scope = malloc(sizeof(int) * (n_members + 1));
    if (!order || !b.applied || !b.emit_lo || !b.emit_hi || !b.owner || (scope_to_clusters && !b.scope)) {
        free(order);
        free_builder(&b);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < n_order; k++) {
        int ci = order[k];
        const fa_cluster *c = &p->clusters[ci], *dep = c->kind == FA_CLUSTER_EPILOGUE ? bn_fold_of(p, c) : NULL;
        if (b.scope) {
            for (int m = 0; m < c->n_members; m++) b.scope[b.n_scope++] = c->members[m];
            for (int m = 0; dep && m < dep->n_members; m++) b.scope[b.n_scope++] = dep->members[m];
        }
        if (!apply) continue;
        /* applied: its members map to it; an epilogue absorbs its BN fold's members */
        int slot = b.n_applied++;
        b.applied[slot] = ci;
        for (int m = 0; m < c->n_members; m++) b.owner[b.n_owner] = (owned){c->members[m], slot, b.n_owner}, b.n_owner++;
        for (int m = 0; dep && m < dep->n_members; m++) b.owner[b.n_owner] = (owned){dep->members[m], slot, b.n_owner}, b.n_owner++;
    }
    free(order);
    /* one owner per node, the last assignment */
    if (b.n_owner > 1) qsort(b.owner, (size_t)b.n_owner, sizeof *b.owner, cmp_owned);
    int m = 0;
    for (int i = 0; i < b.n_owner; i++) {
        if (m && b.owner[m - 1].node == b.owner[i].node) b.owner[m - 1] = b.owner[i];
        else b.owner[m++] = b.owner[i];
    }
    b.n_owner = m;
    /* the scope's live nodes in g's topological order */
    if (b.scope) {
        b.n_scope = sort_unique(b.scope, b.n_scope);
        int live = 0;
        for (int i = 0; i < b.n_scope; i++)
            if (b.scope[i] >= 0 && b.scope[i] < g->n_nodes && g->topo_pos[b.scope[i]] >= 0)
                b.scope[live++] = g->topo_pos[b.scope[i]];
        b.n_scope = sort_unique(b.scope, live);
        for (int i = 0; i < b.n_scope; i++) b.scope[i] = g->topo[b.scope[i]];
    }
    atomic_fetch_add(&walked, (uint64_t)n_ids * 2 + n_members);
    fa_graph *dst = NULL;
    fa_status s = build(ctx, &b, extra, n_extra, &dst);
    if (!s && map) s = fill_map(ctx, &b, dst, map);
    free_builder(&b);
    if (s) {
        fa_graph_free(dst);
        return s;
    }
    *out = dst;
    return FA_OK;
}

fa_status fa_fused_graph(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const fa_cluster_verdict *v,
                         const int *cluster_ids, int n_ids, fa_graph **out)
{
    int *ids = NULL;
    if (!cluster_ids) {
        ids = malloc(sizeof(int) * (size_t)(p->n_clusters + 1));
        if (!ids) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        n_ids = 0;
        for (int i = 0; i < p->n_clusters; i++)
            if (v ? v[i].status == FA_CLUSTER_ACCEPTED : p->clusters[i].status == FA_CLUSTER_PROPOSED)
                ids[n_ids++] = p->clusters[i].id;
        cluster_ids = ids;
    }
    fa_status s = fa_fused_graph_scoped(ctx, g, p, cluster_ids, n_ids, false, true, -1, 0, NULL, 0, out);
    free(ids);
    return s;
}

fa_status fa_bn_folded_graph(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const fa_cluster_verdict *v,
                             fa_graph **out)
{
    int *ids = malloc(sizeof(int) * (size_t)(p->n_clusters + 1));
    if (!ids) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    int n = 0;
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        fa_cluster_status st = v ? v[i].status : c->status;
        /* a fold refused for its speed alone (predicted or measured no faster on this target:
         * not-beneficial, below-noise, measured-loss) is still a legal fold, as a measured
         * regression is: the folded model has it; refused for a legality reason, it does not */
        bool cost_refusal = c->status == FA_CLUSTER_REFUSED && (c->refusal == FA_WHY_NOT_BENEFICIAL ||
                                                                 c->refusal == FA_WHY_BELOW_NOISE ||
                                                                 c->refusal == FA_WHY_MEASURED_LOSS);
        bool refused = c->status == FA_CLUSTER_REFUSED ? !cost_refusal : st == FA_CLUSTER_REFUSED;
        if (c->kind == FA_CLUSTER_BN_FOLD && !refused && st != FA_CLUSTER_REJECTED_VERIFY && st != FA_CLUSTER_REJECTED_ERROR)
            ids[n++] = c->id;
    }
    fa_status s = fa_fused_graph_scoped(ctx, g, p, ids, n, false, true, -1, 0, NULL, 0, out);
    free(ids);
    return s;
}
