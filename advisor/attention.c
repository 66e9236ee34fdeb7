/* advisor/attention — the attention pattern in the registry's terms (advisor-impl.h,
 * docs/fusion-rules.md "Attention"): a reduction of kind softmax whose input comes, through
 * elementwise/broadcast ops and element-moving views read by nothing else, from a batched matrix
 * product (the scores QKᵀ), and whose output goes, the same way, into operand A of another (·V);
 * or one op of reduce kind attention. The views and scalar scales on the products' Q, K and V
 * operands and the views after ·V join as optional members: the kernel reads through them. */
#include <string.h>

#include "advisor-impl.h"

static bool live_free(const fa_graph *g, const int *pos, const int *owner, int nid)
{
    return nid >= 0 && nid < g->n_nodes && pos[nid] >= 0 && owner[nid] < 0 && !g->nodes[nid]->folded;
}

/* Tensor t has exactly one consumer and is not a graph output: fusing its producer with that
 * consumer keeps nothing else from reading it. */
static int sole_consumer(const fa_graph *g, int t)
{
    if (t < 0 || (g->tensors[t]->flags & FA_TENSOR_GRAPH_OUTPUT)) return -1;
    const int *cons;
    return fa_graph_consumers(g, t, &cons) == 1 ? cons[0] : -1;
}

static bool is_matmul(const fa_node *n) { return n && n->op && (n->op->flags & FA_OPF_MATMUL); }
static bool is_view(const fa_node *n) { return n && n->op && n->op->view; }

/* An op the score and probability chains may hold: elementwise/broadcast (scales, masks, the
 * row guard) or a view (reshapes, copies). */
static bool chain_op(const fa_graph *g, const fa_node *n) { return fa_adv_is_elementwise(g, n) || is_view(n); }

/* Whether tensor t comes, through single-consumer chain ops, from a matrix product (depth-bounded). */
static bool from_matmul(const fa_graph *g, const int *pos, const int *owner, int t, int depth)
{
    if (depth > 24 || sole_consumer(g, t) < 0) return false;
    int p = g->tensors[t]->producer;
    if (!live_free(g, pos, owner, p)) return false;
    const fa_node *n = g->nodes[p];
    if (is_matmul(n)) return true;
    if (!chain_op(g, n)) return false;
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] >= 0 && from_matmul(g, pos, owner, n->inputs[k], depth + 1)) return true;
    return false;
}

static bool push(int *v, int *n, int cap, int x)
{
    for (int i = 0; i < *n; i++)
        if (v[i] == x) return true;
    if (*n == cap) return false;
    v[(*n)++] = x;
    return true;
}

/* The views and scalar scales producing operand `slot` of product mm, read by nothing else. */
static bool operand_chain(const fa_graph *g, const int *pos, const int *owner, const fa_node *mm, int slot, bool scales,
                          fa_adv_attention *out)
{
    int t = mm->inputs[slot];
    for (int depth = 0; depth < 16; depth++) {
        if (sole_consumer(g, t) < 0) return true;
        int p = g->tensors[t]->producer;
        if (!live_free(g, pos, owner, p)) return true;
        const fa_node *n = g->nodes[p];
        if (is_view(n) && n->n_inputs >= 1) {
            if (!push(out->views, &out->n_views, FA_ADV_ATTENTION_MAX, p)) return false;
            t = n->inputs[0];
            continue;
        }
        double c;
        bool mul = n->n_inputs == 2 && (!strcmp(n->op_type, "Mul") || !strcmp(n->op_type, "Div"));
        if (scales && mul && fa_adv_is_elementwise(g, n)) {
            int k = fa_adv_scalar_value(g, n->inputs[1], &c) ? 0 : (!strcmp(n->op_type, "Mul") && fa_adv_scalar_value(g, n->inputs[0], &c)) ? 1 : -1;
            if (k >= 0) {
                if (!push(out->views, &out->n_views, FA_ADV_ATTENTION_MAX, p)) return false;
                t = n->inputs[k];
                continue;
            }
        }
        return true;
    }
    return true;
}

/* PyTorch's SDPA decomposition (Hugging Face BERT / GPT-2 exports): Where(IsNaN(P), 0, P) on
 * the probabilities P = tensor t, the two P's only readers; the Where's node id, or -1. A softmax
 * row is NaN everywhere or nowhere (a NaN score, or every key masked), so the guard zeroes whole
 * rows: the kernel's row guard (codegen/attention.c). */
static int nan_guard(const fa_graph *g, const int *pos, const int *owner, int t)
{
    const int *cons;
    if (t < 0 || (g->tensors[t]->flags & FA_TENSOR_GRAPH_OUTPUT) || fa_graph_consumers(g, t, &cons) != 2) return -1;
    for (int k = 0; k < 2; k++) {
        const fa_node *nn = g->nodes[cons[k]], *w = g->nodes[cons[1 - k]];
        double z;
        if (!live_free(g, pos, owner, nn->id) || !live_free(g, pos, owner, w->id) || strcmp(nn->op_type, "IsNaN") ||
            nn->n_inputs != 1 || nn->inputs[0] != t || strcmp(w->op_type, "Where") || w->n_inputs != 3 ||
            w->inputs[0] != nn->outputs[0] || w->inputs[2] != t || !fa_adv_scalar_value(g, w->inputs[1], &z) || z != 0)
            continue;
        if (sole_consumer(g, nn->outputs[0]) != w->id) continue;
        return w->id;
    }
    return -1;
}

bool fa_adv_match_attention(const fa_graph *g, const int *pos, const int *owner, int seed, fa_adv_attention *out)
{
    memset(out, 0, sizeof *out);
    out->qk = out->pv = -1;
    out->softmax = seed;
    const fa_node *s = g->nodes[seed];
    fa_reduce_kind rk = fa_adv_reduce_kind(s);
    if (!live_free(g, pos, owner, seed)) return false;
    if (rk == FA_REDUCE_ATTENTION) { /* the op: one member, its attributes say the rest */
        out->core[out->n_core++] = seed;
        return true;
    }
    if (rk != FA_REDUCE_SOFTMAX || s->n_inputs < 1 || s->inputs[0] < 0) return false;
    const fa_tensor *X = fa_graph_in(g, s, 0);
    if (!X || X->rank < 2) return false;
    int64_t ax = fa_node_attr_int(s, "axis", s->opset >= 13 ? -1 : 1);
    if (ax < 0) ax += X->rank;
    if (ax != X->rank - 1) return false; /* a softmax over the keys only */
    /* backward: the scores, from a matrix product */
    int t = s->inputs[0];
    for (int depth = 0;; depth++) {
        if (depth > 24 || sole_consumer(g, t) < 0) return false;
        int p = g->tensors[t]->producer;
        if (!live_free(g, pos, owner, p)) return false;
        const fa_node *n = g->nodes[p];
        if (is_matmul(n)) {
            out->qk = p;
            break;
        }
        if (!chain_op(g, n) || !push(out->core, &out->n_core, FA_ADV_ATTENTION_MAX, p)) return false;
        int next = -1;
        for (int k = 0; k < n->n_inputs && next < 0; k++)
            if (n->inputs[k] >= 0 && from_matmul(g, pos, owner, n->inputs[k], depth + 1)) next = n->inputs[k];
        if (next < 0) return false;
        t = next;
    }
    /* forward: the probabilities, into operand A of a matrix product */
    t = s->outputs[0];
    for (int depth = 0;; depth++) {
        int guard = nan_guard(g, pos, owner, t);
        if (guard >= 0) { /* Where(IsNaN(P), 0, P): both readers of P join */
            const fa_node *w = g->nodes[guard];
            if (!push(out->core, &out->n_core, FA_ADV_ATTENTION_MAX, g->tensors[w->inputs[0]]->producer) ||
                !push(out->core, &out->n_core, FA_ADV_ATTENTION_MAX, guard))
                return false;
            t = w->outputs[0];
            continue;
        }
        int c = sole_consumer(g, t);
        if (depth > 24 || !live_free(g, pos, owner, c)) return false;
        const fa_node *n = g->nodes[c];
        if (is_matmul(n)) {
            if (n->inputs[0] != t || c == out->qk) return false;
            out->pv = c;
            break;
        }
        bool reads = false; /* the probabilities as any operand (Where's second or third) */
        for (int k = 0; k < n->n_inputs; k++) reads |= n->inputs[k] == t;
        if (!chain_op(g, n) || !reads || !push(out->core, &out->n_core, FA_ADV_ATTENTION_MAX, c)) return false;
        t = n->outputs[0];
    }
    if (!push(out->core, &out->n_core, FA_ADV_ATTENTION_MAX, seed) || !push(out->core, &out->n_core, FA_ADV_ATTENTION_MAX, out->qk) ||
        !push(out->core, &out->n_core, FA_ADV_ATTENTION_MAX, out->pv))
        return false;
    /* optional: the views and scales around Q, K, V; the views after ·V (bijective) */
    const fa_node *qk = g->nodes[out->qk], *pv = g->nodes[out->pv];
    if (!operand_chain(g, pos, owner, qk, 0, true, out) || !operand_chain(g, pos, owner, qk, 1, true, out) ||
        !operand_chain(g, pos, owner, pv, 1, false, out))
        return false;
    t = pv->outputs[0];
    for (int depth = 0; depth < 16; depth++) {
        int c = sole_consumer(g, t);
        if (!live_free(g, pos, owner, c)) break;
        const fa_node *n = g->nodes[c];
        const fa_tensor *y = fa_graph_out(g, n, 0);
        if (!is_view(n) || n->inputs[0] != t || !y || fa_tensor_numel(y) != fa_tensor_numel(g->tensors[t])) break;
        if (!push(out->views, &out->n_views, FA_ADV_ATTENTION_MAX, c)) return false;
        t = n->outputs[0];
    }
    return true;
}
