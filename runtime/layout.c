/* runtime/layout — where a target that prefers a blocked activation layout keeps each tensor, and
 * which reorders its executor runs as kernels of their own (fa_layout_plan_make). */
#include "runtime-impl.h"

#include <stdlib.h>
#include <string.h>

static fa_status add_reorder(fa_ctx *ctx, fa_layout_plan *p, int *cap, int tensor, int consumer, int input, fa_layout from,
                             fa_layout to)
{
    for (int i = 0; i < p->n_reorders; i++) /* one reorder per (tensor, layout): consumers share it */
        if (p->reorders[i].tensor == tensor && p->reorders[i].to == to) return FA_OK;
    if (p->n_reorders == *cap) {
        int nc = *cap ? 2 * *cap : 8;
        fa_reorder *r = realloc(p->reorders, sizeof *r * (size_t)nc);
        if (!r) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory planning layouts");
        p->reorders = r;
        *cap = nc;
    }
    p->reorders[p->n_reorders++] = (fa_reorder){tensor, consumer, input, from, to};
    return FA_OK;
}

bool fa_layout_operand_follows(const fa_tensor *x, const fa_tensor *y)
{
    if (!x || !y || (x->flags & FA_TENSOR_CONST) || x->rank != y->rank || x->rank < 3 || x->dims[1] != y->dims[1]) return false;
    for (int d = 0; d < x->rank; d++)
        if (x->dims[d] != y->dims[d] && x->dims[d] != 1) return false;
    return true;
}

fa_layout fa_layout_of_generated(const fa_graph *g, const fa_layout *tensor_layout, const int *inputs, int n_inputs,
                                 const int *outputs, int n_outputs)
{
    if (!tensor_layout || n_outputs != 1 || outputs[0] < 0 || outputs[0] >= g->n_tensors) return FA_LAYOUT_PLAIN;
    const fa_tensor *y = g->tensors[outputs[0]];
    if (y->rank != 4 || y->dtype != FA_DTYPE_FLOAT) return FA_LAYOUT_PLAIN;
    for (int i = 0; i < n_inputs; i++) { /* as the executor's rule for every op but a conv: it follows a blocked input */
        int x = inputs[i];
        if (x < 0 || x >= g->n_tensors || g->tensors[x]->dtype != FA_DTYPE_FLOAT || !fa_layout_operand_follows(g->tensors[x], y))
            continue;
        fa_layout l = tensor_layout[x];
        if (l != FA_LAYOUT_PLAIN && (unsigned)l < FA_LAYOUT_COUNT) return l;
    }
    return FA_LAYOUT_PLAIN;
}

bool fa_layout_input_follows(const fa_graph *g, const fa_node *n, int i)
{
    if (i < 0 || i >= n->n_inputs || n->inputs[i] < 0 || n->n_outputs < 1 || n->outputs[0] < 0) return i == 0;
    const fa_tensor *x = g->tensors[n->inputs[i]], *y = g->tensors[n->outputs[0]];
    /* input 0 is the activation (a conv's or a pool's input has other dims than its output).
     * A broadcast-class op's inputs follow when they are activations with the output's channels
     * and every other dim the output's or 1 (the [N,C,1,1] scale of Mul(scale, x), whichever
     * input it is: a channel-blocked layout blocks its channels the same way), never a
     * [N,1,H,W] or lower-rank operand */
    const fa_op *op = fa_op_find(n->domain, n->op_type);
    /* a generated kernel (FusedKernel) reads its operands as an elementwise broadcast does
     * (codegen/ emits the same rule through fa_layout_operand_follows) */
    bool bcast = (op && op->pattern == FA_PATTERN_BROADCAST) || (!strcmp(n->domain, FA_FUSED_DOMAIN) && !strcmp(n->op_type, "FusedKernel"));
    if (i == 0 && !bcast) return true;
    if (bcast) return fa_layout_operand_follows(x, y);
    if ((x->flags & FA_TENSOR_CONST) || x->rank != y->rank || x->rank < 3) return false;
    bool concat = !*n->domain && !strcmp(n->op_type, "Concat");
    for (int d = 0; d < x->rank; d++)
        if (x->dims[d] != y->dims[d] && !(d == 1 && concat)) return false;
    return true;
}

fa_status fa_layout_plan_of(fa_ctx *ctx, const fa_graph *g, const fa_layout *node_layout, const fa_layout *node_in0,
                            const fa_layout *in_layout, const fa_layout *out_layout, fa_layout_plan *out)
{
    memset(out, 0, sizeof *out);
    out->layout = calloc((size_t)g->n_tensors + 1, sizeof *out->layout); /* all FA_LAYOUT_PLAIN (0) */
    if (!out->layout) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory planning layouts");
    int cap = 0;
    fa_status s = FA_OK;
    for (int i = 0; i < g->n_inputs && in_layout && !s; i++) { /* handed in the layout the caller keeps them in */
        int x = g->inputs[i];
        if ((unsigned)in_layout[i] >= FA_LAYOUT_COUNT)
            s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "graph input '%s': layout %d out of range", g->tensors[x]->name,
                             (int)in_layout[i]);
        else if (!(g->tensors[x]->flags & FA_TENSOR_CONST)) out->layout[x] = in_layout[i];
    }
    for (int k = 0; k < g->n_topo && !s; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        fa_layout want = node_layout ? node_layout[n->id] : FA_LAYOUT_PLAIN, in0 = node_in0 ? node_in0[n->id] : want;
        if ((unsigned)want >= FA_LAYOUT_COUNT || (unsigned)in0 >= FA_LAYOUT_COUNT) {
            s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': layout %d out of range", n->name, (int)want);
            break;
        }
        for (int i = 0; i < n->n_inputs && !s; i++) { /* the activations in `want`, the rest PLAIN */
            int x = n->inputs[i];
            if (x < 0) continue;
            bool follows = fa_layout_input_follows(g, n, i);
            fa_layout need = i == 0 && follows ? in0 : i > 0 && want != FA_LAYOUT_PLAIN && follows ? want : FA_LAYOUT_PLAIN;
            if (out->layout[x] != need) s = add_reorder(ctx, out, &cap, x, n->id, i, out->layout[x], need);
        }
        if (n->n_outputs > 0 && n->outputs[0] >= 0) out->layout[n->outputs[0]] = want;
    }
    for (int i = 0; i < g->n_outputs && !s; i++) { /* left in the layout the caller reads them in (PLAIN by default) */
        int y = g->outputs[i];
        fa_layout need = out_layout ? out_layout[i] : FA_LAYOUT_PLAIN;
        if ((unsigned)need >= FA_LAYOUT_COUNT)
            s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "graph output '%s': layout %d out of range", g->tensors[y]->name, (int)need);
        else if (out->layout[y] != need) s = add_reorder(ctx, out, &cap, y, -1, i, out->layout[y], need);
    }
    if (s) fa_layout_plan_free(out);
    return s;
}

bool fa_layout_starts_region(const fa_node *n)
{
    return (!*n->domain && !strcmp(n->op_type, "Conv")) || (!strcmp(n->domain, FA_FUSED_DOMAIN) && !strcmp(n->op_type, "FusedConv"));
}

bool fa_layout_continues(const fa_graph *g, const fa_node *n, fa_layout l, fa_layout plan, const fa_layout *tensor_layout,
                         const fa_layout *out_layout, fa_layout (*preferred)(const fa_graph *g, const fa_node *n, fa_layout plan))
{
    uint64_t held = 0, other = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        int x = n->inputs[i];
        if (x < 0 || !fa_layout_input_follows(g, n, i) || (g->tensors[x]->flags & FA_TENSOR_CONST)) continue;
        if (tensor_layout[x] == l) held += fa_tensor_bytes(g->tensors[x]);
        else other += fa_tensor_bytes(g->tensors[x]);
    }
    if (!held) return false;
    if (n->n_outputs < 1 || n->outputs[0] < 0) return true;
    int y = n->outputs[0];
    bool plain_reader = false, starter = false;
    for (int i = 0; i < g->n_outputs; i++) plain_reader |= g->outputs[i] == y && (out_layout ? out_layout[i] : FA_LAYOUT_PLAIN) != l;
    const int *cons = NULL;
    int nc = fa_graph_consumers(g, y, &cons);
    for (int k = 0; k < nc; k++) {
        const fa_node *c = g->nodes[cons[k]];
        if (!c || c->folded) continue;
        fa_layout pc = preferred ? preferred(g, c, plan) : FA_LAYOUT_PLAIN;
        bool reads_in_layout = pc == l;
        for (int i = 0; i < c->n_inputs && reads_in_layout; i++)
            if (c->inputs[i] == y && !fa_layout_input_follows(g, c, i)) reads_in_layout = false;
        if (!reads_in_layout) plain_reader = true;
        else if (fa_layout_starts_region(c)) starter = true;
    }
    uint64_t yb = fa_tensor_bytes(g->tensors[y]);
    uint64_t cost_continue = other + (plain_reader ? yb : 0), cost_plain = held + (starter ? yb : 0);
    return cost_continue <= cost_plain;
}

fa_status fa_layout_plan_make(fa_ctx *ctx, const fa_target_iface *t, const fa_graph *g, fa_layout plan,
                              fa_layout_plan *out)
{
    memset(out, 0, sizeof *out);
    fa_layout *nl = calloc((size_t)g->n_nodes + 1, sizeof *nl);
    fa_layout *tl = calloc((size_t)g->n_tensors + 1, sizeof *tl); /* what each tensor's producer writes, so far */
    if (!nl || !tl) {
        free(nl);
        free(tl);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory planning layouts");
    }
    for (int k = 0; k < g->n_topo && t->exec->preferred_layout && plan != FA_LAYOUT_PLAIN; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        fa_layout l = t->exec->preferred_layout(g, n, plan);
        if ((unsigned)l >= FA_LAYOUT_COUNT) {
            free(nl);
            free(tl);
            return fa_ctx_error(ctx, FA_ERR_INTERNAL, "target %s: node '%s': layout %d out of range", t->name, n->name, (int)l);
        }
        if (l != FA_LAYOUT_PLAIN && !fa_layout_starts_region(n) && !fa_layout_continues(g, n, l, plan, tl, NULL, t->exec->preferred_layout))
            l = FA_LAYOUT_PLAIN; /* as the executor: it only continues a region, where that moves fewer bytes */
        nl[n->id] = l;
        if (n->n_outputs > 0 && n->outputs[0] >= 0) tl[n->outputs[0]] = l;
    }
    fa_status s = fa_layout_plan_of(ctx, g, nl, NULL, NULL, NULL, out);
    free(nl);
    free(tl);
    return s;
}

fa_layout fa_target_preferred_layout(const fa_target_iface *t, const fa_graph *g, const fa_node *n, fa_layout plan)
{
    return t->exec->preferred_layout && plan != FA_LAYOUT_PLAIN ? t->exec->preferred_layout(g, n, plan) : FA_LAYOUT_PLAIN;
}

void fa_layout_plan_free(fa_layout_plan *p)
{
    if (!p) return;
    free(p->layout);
    free(p->reorders);
    memset(p, 0, sizeof *p);
}
