/* advisor/patterns — BatchNormalization folding math and legality, oneDNN post-op mapping for
 * epilogues, and recognition of the decomposed GELU forms (see advisor-impl.h). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor-impl.h"
#include "graph/op_math.h"

/* The pattern class is the registry's (graph/graph.h fa_pattern, after TVM's OpPatternKind): the
 * advisor compares no op names to tell an anchor, an elementwise op or a reduction. */
bool fa_adv_is_complex(const fa_node *n)
{
    return n->op && n->op->pattern == FA_PATTERN_OUT_ELEMWISE_FUSABLE;
}

bool fa_adv_is_elementwise(const fa_graph *g, const fa_node *n)
{
    if (!n->op || n->folded) return false;
    if (n->op->pattern != FA_PATTERN_ELEMWISE && n->op->pattern != FA_PATTERN_BROADCAST) return false;
    for (int i = 0; i < n->n_outputs; i++) {
        const fa_tensor *t = fa_graph_out(g, n, i);
        if (t && (t->dtype != FA_DTYPE_FLOAT || t->rank < 0)) return false;
    }
    for (int i = 0; i < n->n_inputs; i++) {
        const fa_tensor *t = fa_graph_in(g, n, i);
        if (t && t->dtype != FA_DTYPE_FLOAT && t->dtype != FA_DTYPE_BOOL) return false;
    }
    return n->n_outputs >= 1 && fa_graph_out(g, n, 0) != NULL;
}

fa_reduce_kind fa_adv_reduce_kind(const fa_node *n)
{
    return n->op && n->op->pattern == FA_PATTERN_REDUCTION ? n->op->reduce : FA_REDUCE_NONE;
}

bool fa_adv_is_reduction(const fa_node *n)
{
    return n->op && n->op->pattern == FA_PATTERN_REDUCTION;
}

/* ---- scalar constants ---- */

static bool scalar_rec(const fa_graph *g, int tid, double *out, int depth)
{
    if (tid < 0 || depth > 6) return false;
    const fa_tensor *t = g->tensors[tid];
    if (fa_tensor_numel(t) != 1) return false;
    if ((t->flags & FA_TENSOR_CONST) && t->data) {
        if (t->dtype != FA_DTYPE_FLOAT && t->dtype != FA_DTYPE_DOUBLE && t->dtype != FA_DTYPE_INT64 &&
            t->dtype != FA_DTYPE_INT32)
            return false;
        *out = fa_load_as_double(t->data, t->dtype, 0);
        return true;
    }
    const fa_node *p = fa_graph_producer(g, tid);
    if (!p) return false;
    double a = 0, b = 0;
    const char *op = p->op_type;
    if (!strcmp(op, "CastLike") || !strcmp(op, "Cast") || !strcmp(op, "Identity"))
        return scalar_rec(g, p->inputs[0], out, depth + 1);
    if (!scalar_rec(g, p->inputs[0], &a, depth + 1)) return false;
    if (!strcmp(op, "Sqrt")) { *out = sqrt(a); return true; }
    if (!strcmp(op, "Reciprocal")) { *out = 1.0 / a; return true; }
    if (!strcmp(op, "Neg")) { *out = -a; return true; }
    if (p->n_inputs < 2 || !scalar_rec(g, p->inputs[1], &b, depth + 1)) return false;
    if (!strcmp(op, "Mul")) *out = a * b;
    else if (!strcmp(op, "Div")) *out = a / b;
    else if (!strcmp(op, "Add")) *out = a + b;
    else if (!strcmp(op, "Sub")) *out = a - b;
    else if (!strcmp(op, "Pow")) *out = pow(a, b);
    else return false;
    return true;
}

bool fa_adv_scalar_value(const fa_graph *g, int tid, double *out)
{
    return scalar_rec(g, tid, out, 0);
}

/* ---- activations written as subgraphs (GELU, SiLU, HardSwish) ---- */

/* The ops an activation subgraph is built from: those with a scalar expression in the op-math
 * table (graph/op_math.h, unary or binary; Sum is Add's row) and the value copies (Cast,
 * CastLike, Identity). */
static bool activation_op(const char *op)
{
    return fa_unary_math_find(op) || fa_binary_math_find(op) || !strcmp(op, "Cast") || !strcmp(op, "CastLike") ||
           !strcmp(op, "Identity");
}

/* Whether input i of n supplies a parameter of its op-math row (Clip's bounds). */
static bool param_input(const fa_node *n, int i)
{
    const fa_unary_math *m = fa_unary_math_for_node(n, NULL);
    for (int k = 0; m && k < 3; k++)
        if (fa_unary_math_param_input(n, m, k) == i) return true;
    return false;
}

static bool same_shape(const fa_tensor *a, const fa_tensor *b)
{
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

/* Evaluate the subgraph (nodes S[0..n) in topological order) at x = xv; tensor values in val[]
 * indexed by position (tid -> slot through map). Returns the value of tensor `y`. */
static bool activation_eval(const fa_graph *g, const int *S, int n, int x, int y, double xv, double *out)
{
    double val[24];
    int tid[24];
    for (int k = 0; k < n; k++) {
        const fa_node *nd = g->nodes[S[k]];
        double in[8];
        bool have[8] = {false};
        int ni = nd->n_inputs < 8 ? nd->n_inputs : 8;
        for (int i = 0; i < ni; i++) {
            int t = nd->inputs[i];
            if (t < 0) continue; /* an omitted optional input (Clip's bounds) */
            have[i] = true;
            if (t == x) { in[i] = xv; continue; }
            int j;
            for (j = 0; j < k; j++)
                if (tid[j] == t) break;
            if (j < k) { in[i] = val[j]; continue; }
            if (!fa_adv_scalar_value(g, t, &in[i])) return false;
        }
        if (ni < 1 || !have[0]) return false;
        const char *op = nd->op_type;
        const fa_unary_math *um = fa_unary_math_find(op) ? fa_unary_math_for_node(nd, NULL) : NULL;
        const fa_binary_math *bm = fa_unary_math_find(op) ? NULL : fa_binary_math_find(op);
        double r;
        if (fa_unary_math_find(op) && !um) return false; /* an attribute value without an expression */
        if (um) { /* the table's expression, its parameters bound as the kernels bind them */
            float p[3];
            for (int j = 0; j < 3; j++) {
                int ix = fa_unary_math_param_input(nd, um, j);
                p[j] = ix < 0 && um->attr[j] && fa_node_attr(nd, um->attr[j]) ? fa_node_attr_float(nd, um->attr[j], 0)
                                                                               : (float)um->def[j];
                if (ix >= 0 && ix < ni && have[ix]) p[j] = (float)in[ix];
            }
            r = fa_unary_math_eval(um->op, (float)in[0], p[0], p[1], p[2]);
        } else if (bm) { /* variadic Sum/Max/Min chain the expression */
            if (ni < 2) return false;
            r = in[0];
            for (int i = 1; i < ni; i++) {
                if (!have[i]) return false;
                r = fa_binary_math_eval(bm->op, (float)r, (float)in[i]);
            }
        } else if (!strcmp(op, "Cast") || !strcmp(op, "CastLike") || !strcmp(op, "Identity")) {
            r = in[0];
        } else return false;
        val[k] = r;
        tid[k] = nd->outputs[0];
        if (tid[k] == y) { *out = r; return true; }
    }
    return false;
}

/* The reference functions (onnx/docs/Operators.md: Gelu, HardSwish; SiLU = Swish with alpha 1). */
static double activation_ref(fa_post_op_kind k, double x)
{
    switch (k) {
    case FA_POST_OP_GELU_ERF: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case FA_POST_OP_GELU_TANH: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case FA_POST_OP_SWISH: return x / (1.0 + exp(-x));
    case FA_POST_OP_HARD_SWISH: return x * fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0;
    default: return NAN;
    }
}

void fa_adv_heap_push(fa_adv_heap *h, int v)
{
    if (h->n == h->cap) {
        int nc = h->cap ? 2 * h->cap : 64;
        int *nv = realloc(h->v, sizeof(int) * (size_t)nc);
        if (!nv) { h->oom = true; return; }
        h->v = nv;
        h->cap = nc;
    }
    int i = h->n++;
    while (i > 0 && h->v[(i - 1) / 2] > v) { h->v[i] = h->v[(i - 1) / 2]; i = (i - 1) / 2; }
    h->v[i] = v;
}

int fa_adv_heap_pop(fa_adv_heap *h)
{
    int top = h->v[0], v = h->v[--h->n], i = 0;
    for (;;) {
        int k = 2 * i + 1;
        if (k >= h->n) break;
        if (k + 1 < h->n && h->v[k + 1] < h->v[k]) k++;
        if (h->v[k] >= v) break;
        h->v[i] = h->v[k];
        i = k;
    }
    if (h->n > 0) h->v[i] = v;
    return top;
}

/* Queue the live consumers of tensor t that come after topological position `after`. */
static void offer_consumers(const fa_graph *g, const int *pos, int t, int after, fa_adv_heap *h)
{
    const int *cons;
    int nc = fa_graph_consumers(g, t, &cons);
    for (int k = 0; k < nc; k++)
        if (pos[cons[k]] > after) fa_adv_heap_push(h, pos[cons[k]]);
}

bool fa_adv_match_activation(const fa_graph *g, const int *pos, int x, const int *taken, unsigned kinds,
                             fa_adv_activation *out)
{
    const fa_tensor *X = g->tensors[x];
    if (X->dtype != FA_DTYPE_FLOAT || X->rank < 0 || (X->flags & FA_TENSOR_GRAPH_OUTPUT)) return false;
    /* closure: nodes reachable from x through allowed ops whose inputs are x, closure outputs or
     * scalar constants; output shape = x's shape. Passes in topological order until nothing
     * joins; only consumers of x and of the closure's outputs can join, so each pass visits
     * those (a heap of their positions; one that becomes a candidate after the pass's cursor is
     * visited in the same pass) instead of the whole graph. */
    int S[24], n = 0;
    fa_adv_heap h = {0};
    bool grew = true;
    while (grew && n < 24) {
        grew = false;
        h.n = 0;
        offer_consumers(g, pos, x, -1, &h);
        for (int k = 0; k < n; k++) offer_consumers(g, pos, g->nodes[S[k]]->outputs[0], -1, &h);
        int cursor = -1;
        while (h.n > 0 && n < 24) {
            int p = fa_adv_heap_pop(&h);
            if (p == cursor) continue; /* queued twice */
            cursor = p;
            const fa_node *nd = g->nodes[g->topo[p]];
            if (taken && taken[nd->id] >= 0) continue;
            if (!activation_op(nd->op_type) || nd->n_outputs != 1 || nd->outputs[0] < 0) continue;
            bool in_s = false;
            for (int k = 0; k < n; k++)
                if (S[k] == nd->id) in_s = true;
            if (in_s) continue;
            const fa_tensor *Y = g->tensors[nd->outputs[0]];
            if (Y->dtype != FA_DTYPE_FLOAT || !same_shape(Y, X)) continue;
            bool linked = false, ok = true;
            for (int i = 0; i < nd->n_inputs && ok; i++) {
                int t = nd->inputs[i];
                if (t < 0 && i > 0 && param_input(nd, i)) continue; /* an omitted bound: the default */
                if (t < 0) { ok = false; break; }
                if (t == x) { linked = true; continue; }
                bool from_s = false;
                for (int k = 0; k < n; k++)
                    if (g->nodes[S[k]]->outputs[0] == t) from_s = true;
                if (from_s) { linked = true; continue; }
                double v;
                if (!fa_adv_scalar_value(g, t, &v)) ok = false;
            }
            if (!ok || !linked) continue;
            S[n++] = nd->id;
            grew = true;
            offer_consumers(g, pos, nd->outputs[0], cursor, &h);
        }
    }
    free(h.v);
    if (h.oom || n < 2) return false;
    /* keep S in topological order */
    int pos_of[24];
    for (int k = 0; k < n; k++) pos_of[k] = pos[S[k]];
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && pos_of[j] < pos_of[j - 1]; j--) {
            int t = pos_of[j]; pos_of[j] = pos_of[j - 1]; pos_of[j - 1] = t;
            t = S[j]; S[j] = S[j - 1]; S[j - 1] = t;
        }
    /* both sides of HardSwish's kinks at -3 and 3, GELU's and SiLU's curved range */
    static const double xs[] = {-5.2, -3.1, -1.7, -0.6, -0.05, 0.3, 0.9, 1.6, 2.8, 3.4, 6.3};
    /* latest output first: the largest activation */
    for (int cand = n - 1; cand >= 1; cand--) {
        int y = g->nodes[S[cand]]->outputs[0];
        /* ancestors of y inside S */
        bool in_sub[24] = {false};
        in_sub[cand] = true;
        for (int k = cand; k >= 0; k--) {
            if (!in_sub[k]) continue;
            const fa_node *nd = g->nodes[S[k]];
            for (int i = 0; i < nd->n_inputs; i++)
                for (int j = 0; j < k; j++)
                    if (g->nodes[S[j]]->outputs[0] == nd->inputs[i]) in_sub[j] = true;
        }
        int sub[24], m = 0;
        for (int k = 0; k <= cand; k++)
            if (in_sub[k]) sub[m++] = S[k];
        if (m < 2) continue;
        /* every consumer of x and of every inner tensor inside the subgraph */
        bool closed = true;
        const int *cons;
        int nc = fa_graph_consumers(g, x, &cons);
        for (int c = 0; c < nc && closed; c++) {
            bool f = false;
            for (int k = 0; k < m; k++)
                if (sub[k] == cons[c]) f = true;
            closed = f;
        }
        for (int k = 0; k < m && closed; k++) {
            int t = g->nodes[sub[k]]->outputs[0];
            if (t == y) continue;
            if (g->tensors[t]->flags & FA_TENSOR_GRAPH_OUTPUT) { closed = false; break; }
            nc = fa_graph_consumers(g, t, &cons);
            for (int c = 0; c < nc && closed; c++) {
                bool f = false;
                for (int j = 0; j < m; j++)
                    if (sub[j] == cons[c]) f = true;
                closed = f;
            }
        }
        if (!closed) continue;
        bool has_erf = false, has_tanh = false;
        for (int k = 0; k < m; k++) {
            if (!strcmp(g->nodes[sub[k]]->op_type, "Erf")) has_erf = true;
            if (!strcmp(g->nodes[sub[k]]->op_type, "Tanh")) has_tanh = true;
        }
        static const fa_post_op_kind cands[] = {FA_POST_OP_GELU_ERF, FA_POST_OP_GELU_TANH, FA_POST_OP_SWISH,
                                                FA_POST_OP_HARD_SWISH};
        for (size_t ci = 0; ci < sizeof cands / sizeof cands[0]; ci++) {
            fa_post_op_kind k = cands[ci];
            if (!(kinds & (1u << k))) continue;
            /* a GELU form is told by its Erf / Tanh node as well as by its values */
            if ((k == FA_POST_OP_GELU_ERF && (!has_erf || has_tanh)) || (k == FA_POST_OP_GELU_TANH && (!has_tanh || has_erf)))
                continue;
            bool match = true;
            for (size_t i = 0; i < sizeof xs / sizeof xs[0] && match; i++) {
                double v, ref = activation_ref(k, xs[i]);
                if (!activation_eval(g, sub, m, x, y, xs[i], &v) || !(fabs(v - ref) <= 1e-4 * (fabs(ref) + 1e-2))) match = false;
            }
            if (!match) continue;
            out->n = m;
            memcpy(out->nodes, sub, sizeof(int) * (size_t)m);
            out->output = y;
            out->kind = k;
            return true;
        }
    }
    return false;
}

/* ---- operands folded into a GEMM (FusedMatMul) ---- */

/* The view of tensor src seen as the operand: the views among chain[0..n) applied in order from
 * src (what chain[n-1] reads) to the MatMul (chain[0]'s output), scales passed through. False when
 * a view has no accessor of this form. */
static bool chain_view(const fa_graph *g, const int *chain, int n, int src, fa_view *v)
{
    const fa_tensor *S = g->tensors[src];
    if (S->rank < 0) return false;
    fa_view_contiguous(v, S->rank, S->dims);
    for (int k = n - 1; k >= 0; k--) {
        const fa_node *nd = g->nodes[chain[k]];
        if (nd->op && nd->op->view && !fa_view_through(g, nd, v)) return false;
    }
    return true;
}

bool fa_gemm_operand_fold(const fa_graph *g, const fa_node *mm, int input, fa_gemm_take_fn take, void *user,
                          fa_gemm_operand *out)
{
    memset(out, 0, sizeof *out);
    out->scale = 1;
    int t = input < mm->n_inputs ? mm->inputs[input] : -1;
    out->source = t;
    if (t < 0 || !mm->op || !(mm->op->flags & FA_OPF_MATMUL)) return false;
    const fa_tensor *X = g->tensors[t];
    if (X->dtype != FA_DTYPE_FLOAT || X->rank < 2 || X->rank > FA_MAX_RANK) return false;
    /* the chain, nearest the MatMul first: node ids, and the tensor each reads */
    int chain[FA_GEMM_PROLOGUE_MAX], from_t[FA_GEMM_PROLOGUE_MAX], n = 0;
    double scale[FA_GEMM_PROLOGUE_MAX + 1];
    scale[0] = 1;
    while (n < FA_GEMM_PROLOGUE_MAX) {
        const fa_tensor *T = g->tensors[t];
        const int *cons;
        if (T->producer < 0 || (T->flags & FA_TENSOR_GRAPH_OUTPUT) || fa_graph_consumers(g, t, &cons) != 1) break;
        const fa_node *p = g->nodes[T->producer];
        if (p->folded || !p->op || !take(user, g, p->id) || T->dtype != FA_DTYPE_FLOAT) break;
        int next = -1;
        double c = 1;
        if (p->op->view && p->n_inputs >= 1 && p->inputs[0] >= 0) {
            for (int o = 1; o < p->n_outputs; o++)
                if (p->outputs[o] >= 0 && fa_graph_consumers(g, p->outputs[o], &cons) > 0) next = -2; /* a Dropout's mask read */
            if (next == -2) break;
            next = p->inputs[0];
        } else if ((!strcmp(p->op_type, "Mul") || !strcmp(p->op_type, "Div")) && p->n_inputs == 2) {
            bool div = !strcmp(p->op_type, "Div");
            for (int k = 0; k < 2 && next < 0; k++) {
                double v;
                int other = p->inputs[1 - k];
                if ((div && k == 0) || other < 0 || !fa_adv_scalar_value(g, p->inputs[k], &v) || !isfinite(v) || v == 0) continue;
                const fa_tensor *O = g->tensors[other];
                if (O->rank != T->rank || fa_tensor_numel(O) != fa_tensor_numel(T)) continue;
                next = other;
                c = div ? 1.0 / v : v;
            }
        }
        if (next < 0) break;
        chain[n] = p->id;
        from_t[n] = next;
        scale[n + 1] = scale[n] * c;
        n++;
        t = next;
    }
    /* the longest prefix (from the MatMul) whose views read the source with one stride per axis,
     * one of the two matrix axes contiguous, and that folds a data-moving view or a scale */
    for (; n > 0; n--) {
        bool moves = scale[n] != 1;
        for (int k = 0; k < n; k++) {
            const fa_node *nd = g->nodes[chain[k]];
            moves |= nd->op->view && !(nd->op->flags & FA_OPF_ALIAS);
        }
        if (!moves) continue;
        fa_view v;
        if (!chain_view(g, chain, n, from_t[n - 1], &v) || v.offset != 0 || v.rank != X->rank) continue;
        bool ok = true;
        for (int a = 0; a < v.rank && ok; a++) {
            int64_t st = 0;
            ok = v.dims[a] == X->dims[a] && fa_view_axis_stride(&v, a, &st) && (st > 0 || v.dims[a] == 1);
            out->dims[a] = v.dims[a];
            out->strides[a] = v.dims[a] == 1 ? 0 : st;
        }
        int r = v.rank;
        ok = ok && (out->strides[r - 1] <= 1 || out->strides[r - 2] <= 1);
        if (!ok) continue;
        out->rank = r;
        out->n_nodes = n;
        memcpy(out->nodes, chain, sizeof(int) * (size_t)n);
        out->source = from_t[n - 1];
        out->scale = scale[n];
        for (int k = 0; k < n; k++) out->strided |= g->nodes[chain[k]]->op->view != NULL;
        return true;
    }
    out->scale = 1;
    return false;
}

/* ---- post-ops ---- */

static bool const_scalar_f(const fa_graph *g, const fa_node *n, int i, double *v)
{
    if (i >= n->n_inputs || n->inputs[i] < 0) return false;
    const fa_tensor *t = g->tensors[n->inputs[i]];
    if (!(t->flags & FA_TENSOR_CONST) || !t->data || fa_tensor_numel(t) != 1) return false;
    *v = fa_load_as_double(t->data, t->dtype, 0);
    return true;
}

bool fa_adv_post_op(const fa_graph *g, const fa_node *c, int t, fa_post_op *out, fa_why_code *why, char *why_buf,
                    size_t why_cap)
{
    *out = (fa_post_op){FA_POST_OP_RELU, 0, 0, -1};
    const char *op = c->op_type;
    const fa_tensor *T = g->tensors[t], *Y = fa_graph_out(g, c, 0);
    if (!c->op) {
        *why = FA_WHY_OPAQUE;
        snprintf(why_buf, why_cap, "%s '%s' %s: not analysed, never fused", op, c->name,
                 fa_op_find(c->domain, c->op_type) ? "has no shape (it follows an unsupported op)" : "is an unsupported op");
        return false;
    }
    if (!Y || Y->dtype != FA_DTYPE_FLOAT || T->dtype != FA_DTYPE_FLOAT) {
        *why = FA_WHY_DTYPE;
        snprintf(why_buf, why_cap, "%s '%s' is not float32: the epilogue only fuses float32", op, c->name);
        return false;
    }
    static const char *const cand[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "HardSwish", "Mish", "Softplus",
                                       "Gelu", "Clip", "Add", "Sub", "Mul", "Div", "Max", "Min", "Sum"};
    bool known = false;
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) known |= !strcmp(op, cand[i]);
    if (!known) {
        *why = FA_WHY_NOT_A_POST_OP;
        snprintf(why_buf, why_cap, "%s '%s' has no oneDNN post-op equivalent", op, c->name);
        return false;
    }
    if (!same_shape(Y, T)) {
        *why = FA_WHY_SHAPE_CHANGING_EPILOGUE;
        char a[64], b[64];
        snprintf(why_buf, why_cap, "%s '%s' changes the shape %s -> %s: a post-op must keep the output shape", op,
                 c->name, fa_tensor_shape_str(T, a, sizeof a), fa_tensor_shape_str(Y, b, sizeof b));
        return false;
    }
    if (c->n_outputs > 1) {
        for (int i = 1; i < c->n_outputs; i++)
            if (c->outputs[i] >= 0) {
                *why = FA_WHY_EXTRA_OUTPUTS;
                snprintf(why_buf, why_cap, "%s '%s' has more than one output", op, c->name);
                return false;
            }
    }
    /* the unary ops whose post-op is the op itself (graph/post_op.h names the parameters) */
    static const struct {
        const char *onnx;
        fa_post_op_kind kind;
        const char *alpha; /* the float attribute carried as alpha, NULL: none */
        float alpha_default;
    } unary[] = {
        {"Relu", FA_POST_OP_RELU, NULL, 0},       {"LeakyRelu", FA_POST_OP_LEAKY_RELU, "alpha", 0.01f},
        {"Sigmoid", FA_POST_OP_SIGMOID, NULL, 0}, {"Tanh", FA_POST_OP_TANH, NULL, 0},
        {"Elu", FA_POST_OP_ELU, "alpha", 1.0f},   {"HardSwish", FA_POST_OP_HARD_SWISH, NULL, 0},
        {"Mish", FA_POST_OP_MISH, NULL, 0},       {"Softplus", FA_POST_OP_SOFTPLUS, NULL, 0},
    };
    for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++)
        if (!strcmp(op, unary[i].onnx)) {
            out->kind = unary[i].kind;
            out->alpha = unary[i].alpha ? fa_node_attr_float(c, unary[i].alpha, unary[i].alpha_default) : 0;
            return true;
        }
    if (!strcmp(op, "Gelu")) {
        const char *ap = fa_node_attr_string(c, "approximate", "none");
        out->kind = !strcmp(ap, "tanh") ? FA_POST_OP_GELU_TANH : FA_POST_OP_GELU_ERF;
    } else if (!strcmp(op, "Clip")) {
        double lo = -FLT_MAX, hi = FLT_MAX;
        if (c->opset < 11) {
            lo = fa_node_attr_float(c, "min", -FLT_MAX);
            hi = fa_node_attr_float(c, "max", FLT_MAX);
        } else {
            bool ok = true;
            if (c->n_inputs > 1 && c->inputs[1] >= 0 && !const_scalar_f(g, c, 1, &lo)) ok = false;
            if (c->n_inputs > 2 && c->inputs[2] >= 0 && !const_scalar_f(g, c, 2, &hi)) ok = false;
            if (!ok) {
                *why = FA_WHY_NON_CONSTANT;
                snprintf(why_buf, why_cap, "Clip '%s' has bounds that are not constants: a post-op needs fixed bounds",
                         c->name);
                return false;
            }
        }
        *out = (fa_post_op){FA_POST_OP_CLIP, (float)lo, (float)hi, -1};
    } else if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div") ||
               ((!strcmp(op, "Max") || !strcmp(op, "Min") || !strcmp(op, "Sum")) && c->n_inputs == 2)) {
        if (!strcmp(op, "Sum")) op = "Add"; /* two-input Sum (old exporters' residual add) */
        if (c->n_inputs != 2 || c->inputs[0] < 0 || c->inputs[1] < 0) return false;
        int k = c->inputs[0] == t ? 1 : 0;
        if (c->inputs[k] == t) {
            *why = FA_WHY_SAME_OPERAND;
            snprintf(why_buf, why_cap, "%s '%s' uses the anchor's output on both sides", op, c->name);
            return false;
        }
        if (k == 0 && (!strcmp(op, "Sub") || !strcmp(op, "Div"))) {
            *why = FA_WHY_OPERAND_ORDER;
            snprintf(why_buf, why_cap, "%s '%s' takes the anchor's output as its second operand: a binary post-op "
                     "computes out %s operand only", op, c->name, !strcmp(op, "Sub") ? "-" : "/");
            return false;
        }
        const fa_tensor *B = g->tensors[c->inputs[k]];
        bool bc = B->dtype == FA_DTYPE_FLOAT && B->rank >= 0 && B->rank <= Y->rank;
        for (int d = 0; bc && d < B->rank; d++) {
            int yd = d + Y->rank - B->rank;
            if (B->dims[d] != 1 && B->dims[d] != Y->dims[yd]) bc = false;
        }
        if (!bc) {
            char a[64], b2[64];
            *why = FA_WHY_SHAPE_CHANGING_EPILOGUE;
            snprintf(why_buf, why_cap, "%s '%s': operand %s does not broadcast to the output %s without changing it",
                     op, c->name, fa_tensor_shape_str(B, a, sizeof a), fa_tensor_shape_str(Y, b2, sizeof b2));
            return false;
        }
        static const struct {
            const char *onnx;
            fa_post_op_kind kind;
        } binary[] = {{"Add", FA_POST_OP_ADD}, {"Sub", FA_POST_OP_SUB}, {"Mul", FA_POST_OP_MUL},
                      {"Div", FA_POST_OP_DIV}, {"Max", FA_POST_OP_MAX}, {"Min", FA_POST_OP_MIN}};
        for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++)
            if (!strcmp(op, binary[i].onnx)) out->kind = binary[i].kind;
        out->operand = c->inputs[k];
    } else {
        *why = FA_WHY_NOT_A_POST_OP;
        snprintf(why_buf, why_cap, "%s '%s' has no oneDNN post-op equivalent", op, c->name);
        return false;
    }
    return true;
}

/* ---- BatchNormalization folding ---- */

static bool is_f32_const(const fa_tensor *t)
{
    return t && (t->flags & FA_TENSOR_CONST) && t->data && t->dtype == FA_DTYPE_FLOAT && fa_tensor_numel(t) >= 0 &&
           t->nbytes >= (size_t)fa_tensor_numel(t) * 4;
}

bool fa_adv_bn_foldable(const fa_graph *g, const fa_node *bn, int *producer, fa_why_code *code, char *why,
                        size_t why_cap)
{
    *producer = -1;
    const fa_tensor *X = fa_graph_in(g, bn, 0);
    const fa_node *p = X ? fa_graph_producer(g, X->id) : NULL;
    if (!p || p->folded || (strcmp(p->op_type, "Conv") && strcmp(p->op_type, "ConvTranspose") && strcmp(p->op_type, "Gemm")))
        return false; /* not a candidate at all */
    *producer = p->id;
    if (bn->opset >= 14 && fa_node_attr_int(bn, "training_mode", 0) == 1) {
        *code = FA_WHY_TRAINING_MODE;
        snprintf(why, why_cap, "BatchNormalization '%s' is in training mode (training_mode=1): batch statistics "
                 "change per batch and cannot fold into '%s'", bn->name, p->name);
        return false;
    }
    for (int i = 1; i < bn->n_outputs; i++)
        if (bn->outputs[i] >= 0) {
            *code = FA_WHY_EXTRA_OUTPUTS;
            snprintf(why, why_cap, "BatchNormalization '%s' has %d outputs (running statistics are used): folding "
                     "would drop them", bn->name, bn->n_outputs);
            return false;
        }
    static const char *const pn[] = {"", "scale", "B", "input_mean", "input_var"};
    for (int i = 1; i <= 4; i++)
        if (!is_f32_const(fa_graph_in(g, bn, i))) {
            *code = FA_WHY_NON_CONSTANT;
            snprintf(why, why_cap, "BatchNormalization '%s': %s is not a float32 constant, so the folded weights "
                     "cannot be computed ahead of time", bn->name, pn[i]);
            return false;
        }
    if (!is_f32_const(fa_graph_in(g, p, 1)) || (p->n_inputs > 2 && p->inputs[2] >= 0 && !is_f32_const(fa_graph_in(g, p, 2)))) {
        *code = FA_WHY_NON_CONSTANT;
        snprintf(why, why_cap, "%s '%s' has weights or bias that are not float32 constants: BN '%s' cannot fold",
                 p->op_type, p->name, bn->name);
        return false;
    }
    const fa_tensor *Y = fa_graph_out(g, p, 0);
    const int *cons;
    int nc = fa_graph_consumers(g, Y->id, &cons);
    if (nc != 1 || (Y->flags & FA_TENSOR_GRAPH_OUTPUT)) {
        *code = FA_WHY_MULTI_CONSUMER;
        snprintf(why, why_cap, "%s '%s' output '%s' has %d consumer(s)%s: folding BN '%s' would change what the "
                 "others read", p->op_type, p->name, Y->name, nc, (Y->flags & FA_TENSOR_GRAPH_OUTPUT) ? " and is a graph output" : "",
                 bn->name);
        return false;
    }
    if (X->dtype != FA_DTYPE_FLOAT) {
        *code = FA_WHY_DTYPE;
        snprintf(why, why_cap, "BatchNormalization '%s' is not float32", bn->name);
        return false;
    }
    return true;
}

fa_status fa_bn_fold(fa_ctx *ctx, const fa_graph *g, const fa_node *producer, const fa_node *bn, float **new_w,
                     size_t *w_count, float **new_b, size_t *b_count)
{
    const fa_tensor *gamma = fa_graph_in(g, bn, 1), *beta = fa_graph_in(g, bn, 2), *mean = fa_graph_in(g, bn, 3),
                    *var = fa_graph_in(g, bn, 4);
    if (!is_f32_const(gamma) || !is_f32_const(beta) || !is_f32_const(mean) || !is_f32_const(var))
        return fa_ctx_error(ctx, FA_ERR_INPUT, "BatchNormalization '%s': scale/B/mean/var must be float32 constants",
                            bn->name);
    int64_t C = fa_tensor_numel(gamma);
    if (fa_tensor_numel(beta) != C || fa_tensor_numel(mean) != C || fa_tensor_numel(var) != C)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "BatchNormalization '%s': scale/B/mean/var sizes differ", bn->name);
    const fa_tensor *W = fa_graph_in(g, producer, 1), *B = fa_graph_in(g, producer, 2);
    if (!is_f32_const(W) || (B && !is_f32_const(B)))
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s '%s': weight/bias must be float32 constants", producer->op_type,
                            producer->name);
    double eps = fa_node_attr_float(bn, "epsilon", 1e-5f);
    const float *gm = gamma->data, *bt = beta->data, *mu = mean->data, *vr = var->data, *w = W->data;
    const float *b = B ? B->data : NULL;
    int64_t wn = fa_tensor_numel(W);
    double *s = malloc(sizeof(double) * (size_t)(C > 0 ? C : 1));
    if (!s) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory folding '%s'", bn->name);
    for (int64_t c = 0; c < C; c++) s[c] = (double)gm[c] / sqrt((double)vr[c] + eps);
    float *ow = NULL, *ob = NULL;
    size_t obn = 0;
    const char *op = producer->op_type;
    if (!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose")) {
        bool tr = op[4] == 'T';
        int64_t grp = fa_node_attr_int(producer, "group", 1);
        if (W->rank < 2 || grp < 1) goto bad_shape;
        int64_t cout = tr ? W->dims[1] * grp : W->dims[0];
        if (cout != C || (B && fa_tensor_numel(B) != C) || (tr && W->dims[0] % grp)) goto bad_shape;
        int64_t ksz = 1;
        for (int d = 2; d < W->rank; d++) ksz *= W->dims[d];
        ow = malloc(sizeof(float) * (size_t)wn);
        ob = malloc(sizeof(float) * (size_t)C);
        if (!ow || !ob) goto oom;
        if (!tr) {
            int64_t per = wn / C;
            for (int64_t o = 0; o < C; o++)
                for (int64_t i = 0; i < per; i++) ow[o * per + i] = (float)(w[o * per + i] * s[o]);
        } else {
            int64_t cin = W->dims[0], cpg_in = cin / grp, cpg_out = W->dims[1];
            for (int64_t ci = 0; ci < cin; ci++) {
                int64_t gi = ci / cpg_in;
                for (int64_t j = 0; j < cpg_out; j++) {
                    int64_t o = gi * cpg_out + j;
                    const float *src = w + (ci * cpg_out + j) * ksz;
                    float *dst = ow + (ci * cpg_out + j) * ksz;
                    for (int64_t k = 0; k < ksz; k++) dst[k] = (float)(src[k] * s[o]);
                }
            }
        }
        for (int64_t o = 0; o < C; o++) ob[o] = (float)(((b ? b[o] : 0.0) - mu[o]) * s[o] + bt[o]);
        obn = (size_t)C;
    } else if (!strcmp(op, "Gemm")) {
        bool tb = fa_node_attr_int(producer, "transB", 0) != 0;
        double gbeta = fa_node_attr_float(producer, "beta", 1.0f);
        if (W->rank != 2) goto bad_shape;
        int64_t N = tb ? W->dims[0] : W->dims[1], K = tb ? W->dims[1] : W->dims[0];
        if (N != C) goto bad_shape;
        const fa_tensor *Y = fa_graph_out(g, producer, 0);
        int64_t M = Y && Y->rank == 2 ? Y->dims[0] : 1;
        ow = malloc(sizeof(float) * (size_t)wn);
        if (!ow) goto oom;
        for (int64_t k = 0; k < K; k++)
            for (int64_t n = 0; n < N; n++) {
                int64_t i = tb ? n * K + k : k * N + n;
                ow[i] = (float)(w[i] * s[n]);
            }
        /* C broadcast to [M,N] (unidirectional): rows when C is [M,N] or [M,1] with M > 1 */
        int64_t crow = 1, ccol = 1;
        if (B) {
            if (B->rank == 2) { crow = B->dims[0]; ccol = B->dims[1]; }
            else if (B->rank == 1) ccol = B->dims[0];
            if ((ccol != 1 && ccol != N) || (crow != 1 && crow != M)) goto bad_shape;
        }
        int64_t rows = crow > 1 ? M : 1;
        obn = (size_t)(rows * N);
        ob = malloc(sizeof(float) * obn);
        if (!ob) goto oom;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t n = 0; n < N; n++) {
                double cv = B ? b[(crow > 1 ? r : 0) * ccol + (ccol > 1 ? n : 0)] : 0.0;
                ob[r * N + n] = (float)(gbeta * cv * s[n] + (bt[n] - mu[n] * s[n]));
            }
    } else {
        free(s);
        return fa_ctx_error(ctx, FA_ERR_INPUT, "BatchNormalization '%s' cannot fold into %s '%s'", bn->name, op,
                            producer->name);
    }
    free(s);
    *new_w = ow;
    *w_count = (size_t)wn;
    *new_b = ob;
    *b_count = obn;
    return FA_OK;
bad_shape:
    free(s); free(ow); free(ob);
    return fa_ctx_error(ctx, FA_ERR_INPUT, "BatchNormalization '%s': %lld channels do not match the weight of %s '%s'",
                        bn->name, (long long)C, op, producer->name);
oom:
    free(s); free(ow); free(ob);
    return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory folding '%s'", bn->name);
}
