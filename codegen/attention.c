/* codegen/attention — the fused attention kernel: Y = softmax(scale·Q·Kᵀ ⊕ masks)·V for one
 * cluster, tiled over the keys with an online softmax (FlashAttention-2: Dao, "FlashAttention-2:
 * Faster Attention with Better Parallelism and Work Partitioning", 2023, Algorithm 1: a running
 * row max m and row sum l, the output accumulator rescaled by exp(m_old − m_new) per key tile),
 * so the Sq×Sk scores are never written. The cluster is either the opset-23 Attention op or its
 * decomposition as exporters write it; the members are analysed into one description (att) —
 * the Q, K, V and output accessors through the views around them (fa_view), the score program
 * (scales, additive masks, boolean masks, in member order), the row guard after the softmax —
 * which both emitters print: C for the cpu target (per (batch·head, group of query rows) task,
 * each key tile packed once per group, the two products as 8-row register tiles of GCC vectors
 * sized to the ISA the compiler targets; c_tiles) and CUDA
 * C (one block per (batch·head, 16 query rows), a warp per row, one key per lane).
 * docs/codegen.md "Attention". */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen-impl.h"
#include "runtime/cuda_reduce.h"

enum { ST_MUL, ST_DIV, ST_ADD, ST_SUB, ST_WHERE, ST_SOFTCAP, ST_BOOL_MASK };
/* The CUDA kernel's shape: 4 warps per block, 4 query rows per warp (16 rows), one key per lane
 * (32-key tiles); its static shared memory (Q rows, K tile padded by one float, V tile padded to
 * 32 values) must fit the 48 KB a kernel may declare statically. */
enum { CU_WARPS = 4, CU_RPW = 4, CU_BR = 16, CU_BC = 32 };
#define CU_SMEM_MAX (48 * 1024)
static int64_t cu_smem_bytes(int64_t D, int64_t DV)
{
    return 4 * (CU_BR * D + CU_BC * (D + 1) + CU_BC * ((DV + 31) / 32 * 32));
}
#define ATT_MAX_STEPS 12

/* One step of the score program, applied to each score x in member order. */
typedef struct att_step {
    int kind;
    double c;                  /* ST_MUL / ST_DIV / ST_SOFTCAP: the constant (when in < 0) */
    int in;                    /* cluster input of the operand (mask, fill, scale), -1 constant */
    fa_view acc;               /* its accessor over [BH, SQ, SK] */
    int cond_in;               /* ST_WHERE / ST_BOOL_MASK: the boolean condition */
    fa_view cond;
    bool score_when_true;      /* ST_WHERE: cond ? x : fill (else cond ? fill : x) */
} att_step;

typedef struct att {
    int64_t BH, SQ, SK, D, DV;
    int q_in, k_in, v_in, y_out;
    fa_view q, k, v, y;        /* [BH, SQ, D], [BH, SK, D] (K itself, not Kᵀ), [BH, SK, DV], [BH, SQ, DV] */
    double scale;              /* on the dot product (the scalar scales of Q and K folded in) */
    int n_steps;
    att_step steps[ATT_MAX_STEPS];
    int guard_in;              /* a per-row condition after the softmax that zeroes the row, -1 none */
    fa_view guard;             /* over [BH, SQ, SK] (constant along the keys) */
    bool guard_zero_when_true;
    bool zero_masked_rows;     /* the Attention op: a row masked everywhere gives 0, not NaN */
    bool nan_guard;            /* Where(IsNaN(P), 0, P) after the softmax (PyTorch's SDPA
                                  decomposition): a NaN row (every key masked, or a NaN score) gives 0 */
    bool causal;               /* the Attention op's is_causal: key j > query i masked (tiles skipped) */
    int64_t mask_len;          /* the Attention op's mask shorter than the keys: j >= mask_len masked */
    bool has_tanh;
} att;

typedef struct att_build {
    const fa_graph *g;
    const fa_kernel_desc *d;
    bool *member;              /* by node id */
    const char *why;
    char *msg;
    size_t cap;
} att_build;

static bool fail(att_build *b, const char *why, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(att_build *b, const char *why, const char *fmt, ...)
{
    if (!b->why) {
        b->why = why;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->msg, b->cap, fmt, ap);
        va_end(ap);
    }
    return false;
}

static int input_index(const att_build *b, int tid)
{
    for (int i = 0; i < b->d->n_inputs; i++)
        if (b->d->inputs[i] == tid) return i;
    return -1;
}

static int output_index(const att_build *b, int tid)
{
    for (int i = 0; i < b->d->n_outputs; i++)
        if (b->d->outputs[i] == tid) return i;
    return -1;
}

static int n_consumers(const fa_graph *g, int tid)
{
    const int *cons;
    return fa_graph_consumers(g, tid, &cons);
}

static bool is_member(const att_build *b, int nid) { return nid >= 0 && b->member[nid]; }

/* Tensor tid is produced by a member and read by members only (not a cluster output). */
static bool internal(const att_build *b, int tid)
{
    if (tid < 0 || !is_member(b, b->g->tensors[tid]->producer) || output_index(b, tid) >= 0) return false;
    const int *cons;
    int nc = fa_graph_consumers(b->g, tid, &cons);
    for (int k = 0; k < nc; k++)
        if (!is_member(b, cons[k])) return false;
    return !(b->g->tensors[tid]->flags & FA_TENSOR_GRAPH_OUTPUT);
}

/* The only member consuming tensor tid, -1 when none or several. */
static int sole_member_consumer(const att_build *b, int tid)
{
    const int *cons;
    int nc = fa_graph_consumers(b->g, tid, &cons), found = -1;
    for (int k = 0; k < nc; k++) {
        if (!is_member(b, cons[k])) continue;
        if (found >= 0 && found != cons[k]) return -1;
        found = cons[k];
    }
    return found;
}

static bool const_scalar(const fa_graph *g, int tid, double *v)
{
    if (tid < 0) return false;
    const fa_tensor *t = g->tensors[tid];
    if (!(t->flags & FA_TENSOR_CONST) || !t->data || fa_tensor_numel(t) != 1) return false;
    if (t->dtype != FA_DTYPE_FLOAT && t->dtype != FA_DTYPE_DOUBLE) return false;
    *v = fa_load_as_double(t->data, t->dtype, 0);
    return true;
}

static bool is_op(const fa_node *n, const char *op)
{
    return (!n->domain || !n->domain[0] || !strcmp(n->domain, "ai.onnx")) && !strcmp(n->op_type, op);
}

/* Whether view node n keeps the linear order of its input (a reshape, a copy): its map of the
 * row-major accessor of the input is the row-major accessor of the output. */
static bool keeps_linear_order(const fa_graph *g, const fa_node *n)
{
    const fa_tensor *x = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0);
    if (!x || !y || x->rank < 0 || y->rank < 0 || fa_tensor_numel(x) != fa_tensor_numel(y)) return false;
    fa_view v, w;
    fa_view_contiguous(&v, x->rank, x->dims);
    if (!fa_view_through(g, n, &v)) return false;
    fa_view_contiguous(&w, y->rank, y->dims);
    if (v.offset != w.offset) return false;
    for (int a = 0; a < y->rank; a++) {
        int64_t s1, s2;
        bool a1 = fa_view_axis_stride(&v, a, &s1), a2 = fa_view_axis_stride(&w, a, &s2);
        if (!a1 || !a2 || (s1 != s2 && y->dims[a] > 1)) return false;
    }
    return true;
}

/* The accessor over [BH, R, C] of external tensor tid read at the points of a member output of
 * shape (rank, dims) whose linear order is the scores' (last two dims R, C): broadcast to that
 * shape, then the batch dims merged. */
static bool score_space(att_build *b, int tid, int rank, const int64_t *dims, int64_t BH, int64_t R, int64_t C,
                        fa_view *out)
{
    const fa_tensor *t = b->g->tensors[tid];
    if (t->rank < 0 || t->rank > rank) return fail(b, "a mask does not broadcast to the scores", "'%s' has rank %d", t->name, t->rank);
    fa_view_contiguous(out, t->rank, t->dims);
    if (!fa_view_expand(out, rank, dims))
        return fail(b, "a mask does not broadcast to the scores", "'%s' does not broadcast to the scores", t->name);
    int64_t s3[3] = {BH, R, C};
    if (!fa_view_reshape(out, 3, s3))
        return fail(b, "a mask's batch dims have no strided accessor", "'%s' read over the scores' batch", t->name);
    int64_t st;
    if (!fa_view_axis_stride(out, 1, &st) || !fa_view_axis_stride(out, 2, &st))
        return fail(b, "a mask is not strided along the query or key axis", "'%s'", t->name);
    return true;
}

/* Output (rank, dims) keeps the last two dims (SQ, SK) and the element count of the scores. */
static bool score_shaped(const att *a, const fa_tensor *t)
{
    return t->rank >= 2 && t->dims[t->rank - 2] == a->SQ && t->dims[t->rank - 1] == a->SK &&
           fa_tensor_numel(t) == a->BH * a->SQ * a->SK;
}

/* The accessor of a MatMul operand: the chain of member views and scalar scales from a cluster
 * input up to operand `slot` of matmul node mm, broadcast to mm's output batch and merged into
 * [BH, rows, cols] (rows, cols: the operand's own last two dims). *scale gets the product of the
 * scalar scales (Mul by c, Div by c) on the way when allow_scale. */
static bool operand(att_build *b, const fa_node *mm, int slot, bool allow_scale, double *scale, int *in, fa_view *acc)
{
    const fa_graph *g = b->g;
    const fa_node *chain[32];
    int n = 0, t = mm->inputs[slot];
    *scale = 1.0;
    while (internal(b, t)) {
        const fa_node *p = g->nodes[g->tensors[t]->producer];
        if (n == 32) return fail(b, "an operand chain is too long", "operand %d of '%s'", slot, mm->name);
        if (sole_member_consumer(b, t) < 0) return fail(b, "an operand is read twice inside", "'%s'", g->tensors[t]->name);
        if (p->op && p->op->view) {
            for (int o = 1; o < p->n_outputs; o++)
                if (p->outputs[o] >= 0 && (n_consumers(g, p->outputs[o]) > 0 ||
                                           (g->tensors[p->outputs[o]]->flags & FA_TENSOR_GRAPH_OUTPUT)))
                    return fail(b, "a view's second output is used", "node '%s' (%s)", p->name, p->op_type);
            chain[n++] = p;
            t = p->inputs[0];
            continue;
        }
        double c;
        if (allow_scale && (is_op(p, "Mul") || is_op(p, "Div")) && p->n_inputs == 2) {
            int k = const_scalar(g, p->inputs[1], &c) ? 0 : (is_op(p, "Mul") && const_scalar(g, p->inputs[0], &c)) ? 1 : -1;
            if (k >= 0) {
                *scale = is_op(p, "Mul") ? *scale * c : *scale / c;
                t = p->inputs[k];
                continue;
            }
        }
        return fail(b, "an op on a Q, K or V operand the attention kernel does not lower",
                    "node '%s' (%s) feeds operand %d of '%s'", p->name, p->op_type, slot, mm->name);
    }
    *in = input_index(b, t);
    const fa_tensor *src = t >= 0 ? g->tensors[t] : NULL;
    if (*in < 0 || !src || src->dtype != FA_DTYPE_FLOAT || src->rank < 1)
        return fail(b, "a Q, K or V operand is not a float32 cluster input", "operand %d of '%s'", slot, mm->name);
    fa_view_contiguous(acc, src->rank, src->dims);
    for (int k = n - 1; k >= 0; k--)
        if (!fa_view_through(g, chain[k], acc))
            return fail(b, "a view around Q, K or V has no strided accessor",
                        "node '%s' (%s): its index map on '%s' is not strided", chain[k]->name, chain[k]->op_type, src->name);
    const fa_tensor *x = fa_graph_in(g, mm, slot), *y = fa_graph_out(g, mm, 0);
    if (x->rank < 2 || y->rank < 2) return fail(b, "a 1-D matrix product operand", "'%s'", mm->name);
    int64_t dims[FA_MAX_RANK];
    memcpy(dims, y->dims, sizeof dims);
    dims[y->rank - 2] = x->dims[x->rank - 2];
    dims[y->rank - 1] = x->dims[x->rank - 1];
    if (!fa_view_expand(acc, y->rank, dims))
        return fail(b, "a matrix product's batch dims do not broadcast", "'%s'", mm->name);
    int64_t bh = 1;
    for (int a = 0; a < y->rank - 2; a++) bh *= y->dims[a];
    int64_t s3[3] = {bh, x->dims[x->rank - 2], x->dims[x->rank - 1]};
    if (!fa_view_reshape(acc, 3, s3))
        return fail(b, "a Q, K or V operand's batch dims have no strided accessor", "operand %d of '%s'", slot, mm->name);
    int64_t st;
    if (!fa_view_axis_stride(acc, 1, &st) || !fa_view_axis_stride(acc, 2, &st))
        return fail(b, "a Q, K or V operand is not strided along the sequence or head axis", "operand %d of '%s'", slot,
                    mm->name);
    return true;
}

/* One member between the QK product and the softmax, applied to the scores (x). */
static bool score_step(att_build *b, att *a, const fa_node *n, int from)
{
    const fa_graph *g = b->g;
    const fa_tensor *y = fa_graph_out(g, n, 0);
    if (!y || !score_shaped(a, y))
        return fail(b, "an op before the softmax changes the scores' shape", "node '%s' (%s)", n->name, n->op_type);
    if (n->op && n->op->view) {
        if (!keeps_linear_order(g, n))
            return fail(b, "a view of the scores reorders them", "node '%s' (%s)", n->name, n->op_type);
        return true;
    }
    if (a->n_steps == ATT_MAX_STEPS) return fail(b, "too many score ops", "node '%s'", n->name);
    att_step *s = &a->steps[a->n_steps];
    memset(s, 0, sizeof *s);
    s->in = s->cond_in = -1;
    int other = -1;
    if ((is_op(n, "Mul") || is_op(n, "Div") || is_op(n, "Add") || is_op(n, "Sub")) && n->n_inputs == 2) {
        int k = n->inputs[0] == from ? 1 : 0;
        if (n->inputs[k] == from) return fail(b, "the scores on both sides of an op", "node '%s'", n->name);
        if (k == 0 && (is_op(n, "Div") || is_op(n, "Sub")))
            return fail(b, "the scores as a divisor or subtrahend", "node '%s' (%s)", n->name, n->op_type);
        other = n->inputs[k];
        s->kind = is_op(n, "Mul") ? ST_MUL : is_op(n, "Div") ? ST_DIV : is_op(n, "Add") ? ST_ADD : ST_SUB;
        if ((s->kind == ST_MUL || s->kind == ST_DIV) && !const_scalar(g, other, &s->c)) {
            if (fa_tensor_numel(g->tensors[other]) != 1)
                return fail(b, "the scores multiplied by a tensor", "node '%s' (%s): only a scalar scale", n->name, n->op_type);
        } else if (s->kind == ST_MUL || s->kind == ST_DIV) {
            a->n_steps++;
            return true; /* a constant scale: a literal */
        }
    } else if (is_op(n, "Where") && n->n_inputs == 3) {
        if (n->inputs[0] == from || (n->inputs[1] == from) == (n->inputs[2] == from))
            return fail(b, "a Where that selects the scores on both sides", "node '%s'", n->name);
        s->kind = ST_WHERE;
        s->score_when_true = n->inputs[1] == from;
        other = n->inputs[s->score_when_true ? 2 : 1];
        int ci = input_index(b, n->inputs[0]);
        const fa_tensor *ct = g->tensors[n->inputs[0]];
        if (ci < 0 || ct->dtype != FA_DTYPE_BOOL)
            return fail(b, "a Where condition that is not a boolean cluster input", "node '%s'", n->name);
        s->cond_in = ci;
        if (!score_space(b, n->inputs[0], y->rank, y->dims, a->BH, a->SQ, a->SK, &s->cond)) return false;
    } else {
        return fail(b, "an op between the QK product and the softmax the attention kernel does not lower",
                    "node '%s' (%s)", n->name, n->op_type);
    }
    s->in = input_index(b, other);
    const fa_tensor *ot = other >= 0 ? g->tensors[other] : NULL;
    if (s->in < 0 || !ot || ot->dtype != FA_DTYPE_FLOAT)
        return fail(b, "a mask or scale that is not a float32 cluster input", "node '%s' (%s)", n->name, n->op_type);
    if (!score_space(b, other, y->rank, y->dims, a->BH, a->SQ, a->SK, &s->acc)) return false;
    a->n_steps++;
    return true;
}

/* Where(IsNaN(P), 0, P) on the probabilities P = tid, the two members reading P (PyTorch's SDPA
 * decomposition; advisor/attention.c nan_guard): the Where's node id, or -1. A softmax row is NaN
 * everywhere or nowhere, so the guard zeroes whole rows (emit_final). */
static int nan_guard_where(const att_build *b, int tid)
{
    const fa_graph *g = b->g;
    const int *cons;
    if (fa_graph_consumers(g, tid, &cons) != 2) return -1;
    for (int k = 0; k < 2; k++) {
        const fa_node *nn = g->nodes[cons[k]], *w = g->nodes[cons[1 - k]];
        double z;
        if (!is_member(b, nn->id) || !is_member(b, w->id) || !is_op(nn, "IsNaN") || nn->n_inputs != 1 || nn->inputs[0] != tid ||
            nn->n_outputs != 1 || !internal(b, nn->outputs[0]) || !is_op(w, "Where") || w->n_inputs != 3 ||
            w->inputs[0] != nn->outputs[0] || w->inputs[2] != tid || !const_scalar(g, w->inputs[1], &z) || z != 0)
            continue;
        if (sole_member_consumer(b, nn->outputs[0]) != w->id) continue;
        const fa_tensor *y = fa_graph_out(g, w, 0), *p = g->tensors[tid];
        if (!y || fa_tensor_numel(y) != fa_tensor_numel(p) || y->rank != p->rank) continue;
        return w->id;
    }
    return -1;
}

/* One member between the softmax and the PV product: a copy or a view, or the row guard
 * Where(row condition, 0, P) / Where(row condition, P, 0). */
static bool prob_step(att_build *b, att *a, const fa_node *n, int from)
{
    const fa_graph *g = b->g;
    const fa_tensor *y = fa_graph_out(g, n, 0);
    if (!y || !score_shaped(a, y))
        return fail(b, "an op after the softmax changes the probabilities' shape", "node '%s' (%s)", n->name, n->op_type);
    if (n->op && n->op->view) {
        if (!keeps_linear_order(g, n))
            return fail(b, "a view of the probabilities reorders them", "node '%s' (%s)", n->name, n->op_type);
        for (int o = 1; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0 && n_consumers(g, n->outputs[o]) > 0)
                return fail(b, "a view's second output is used", "node '%s' (%s)", n->name, n->op_type);
        return true;
    }
    double z;
    if (is_op(n, "Where") && n->n_inputs == 3 && n->inputs[0] != from && (n->inputs[1] == from) != (n->inputs[2] == from) &&
        a->guard_in < 0) {
        int fill = n->inputs[n->inputs[1] == from ? 2 : 1];
        int ci = input_index(b, n->inputs[0]);
        if (ci >= 0 && g->tensors[n->inputs[0]]->dtype == FA_DTYPE_BOOL && const_scalar(g, fill, &z) && z == 0) {
            if (!score_space(b, n->inputs[0], y->rank, y->dims, a->BH, a->SQ, a->SK, &a->guard)) return false;
            int64_t sj;
            if (!fa_view_axis_stride(&a->guard, 2, &sj) || sj != 0)
                return fail(b, "a Where after the softmax that varies along the keys", "node '%s'", n->name);
            a->guard_in = ci;
            a->guard_zero_when_true = n->inputs[2] == from;
            return true;
        }
    }
    return fail(b, "an op between the softmax and the PV product the attention kernel does not lower",
                "node '%s' (%s)", n->name, n->op_type);
}

/* The output: PV's result through member views (bijective: transposes and reshapes) to the one
 * cluster output; *acc the accessor of that output's buffer over [BH, SQ, DV]. */
static bool output_side(att_build *b, att *a, const fa_node *pv)
{
    const fa_graph *g = b->g;
    const fa_node *chain[16];
    int n = 0, t = pv->outputs[0];
    while (internal(b, t)) {
        int c = sole_member_consumer(b, t);
        if (c < 0 || n == 16) return fail(b, "the attention output is read twice inside", "'%s'", g->tensors[t]->name);
        const fa_node *v = g->nodes[c];
        if (!v->op || !v->op->view || v->inputs[0] != t)
            return fail(b, "an op after the PV product the attention kernel does not lower", "node '%s' (%s)", v->name,
                        v->op_type);
        chain[n++] = v;
        t = v->outputs[0];
    }
    a->y_out = output_index(b, t);
    if (a->y_out < 0 || b->d->n_outputs != 1)
        return fail(b, "the attention cluster must have exactly one output, after the PV product", "'%s'",
                    t >= 0 ? g->tensors[t]->name : "?");
    const fa_tensor *T = g->tensors[t];
    fa_view_contiguous(&a->y, T->rank, T->dims);
    for (int k = n - 1; k >= 0; k--) { /* back through each view: its inverse on the accessor */
        const fa_tensor *x = fa_graph_in(g, chain[k], 0), *y = fa_graph_out(g, chain[k], 0);
        if (fa_tensor_numel(x) != fa_tensor_numel(y))
            return fail(b, "a view after the PV product changes the element count", "node '%s' (%s)", chain[k]->name,
                        chain[k]->op_type);
        if (keeps_linear_order(g, chain[k])) {
            if (!fa_view_reshape(&a->y, x->rank, x->dims)) return fail(b, "an output reshape has no accessor", "node '%s'", chain[k]->name);
            continue;
        }
        /* a permutation: the map of x's row-major accessor gives each output axis's source axis */
        fa_view p;
        fa_view_contiguous(&p, x->rank, x->dims);
        if (!fa_view_through(g, chain[k], &p) || p.rank != x->rank)
            return fail(b, "a view after the PV product is neither a reshape nor a transpose", "node '%s' (%s)",
                        chain[k]->name, chain[k]->op_type);
        int64_t inv[FA_MAX_RANK];
        bool used[FA_MAX_RANK] = {false};
        for (int ax = 0; ax < p.rank; ax++) {
            int64_t st, cs = 1;
            if (!fa_view_axis_stride(&p, ax, &st))
                return fail(b, "a view after the PV product is neither a reshape nor a transpose", "node '%s'", chain[k]->name);
            int src = -1;
            for (int s2 = x->rank - 1; s2 >= 0; cs *= x->dims[s2], s2--)
                if (!used[s2] && x->dims[s2] == p.dims[ax] && (st == cs || (p.dims[ax] == 1 && src < 0))) {
                    src = s2;
                    if (st == cs) break;
                }
            if (src < 0) return fail(b, "a view after the PV product is neither a reshape nor a transpose", "node '%s'", chain[k]->name);
            used[src] = true;
            inv[src] = ax;
        }
        if (!fa_view_permute(&a->y, inv)) return fail(b, "an output transpose has no accessor", "node '%s'", chain[k]->name);
    }
    const fa_tensor *Y = fa_graph_out(g, pv, 0);
    if (Y->rank < 2 || !fa_view_reshape(&a->y, 3, (int64_t[]){a->BH, a->SQ, a->DV}))
        return fail(b, "the output's batch dims have no strided accessor", "'%s'", T->name);
    int64_t st;
    if (!fa_view_axis_stride(&a->y, 1, &st) || !fa_view_axis_stride(&a->y, 2, &st))
        return fail(b, "the output is not strided along the query or value axis", "'%s'", T->name);
    return true;
}

/* The decomposed form: QK product -> score ops -> Softmax over the keys -> row guard -> PV
 * product -> output views, with the views and scales on Q, K and V. */
static bool analyse_decomposed(att_build *b, att *a)
{
    const fa_graph *g = b->g;
    const fa_kernel_desc *d = b->d;
    int mm[2], nmm = 0, sm = -1;
    for (int i = 0; i < d->n_members; i++) {
        const fa_node *n = g->nodes[d->members[i]];
        if (n->op && (n->op->flags & FA_OPF_MATMUL)) {
            if (nmm == 2) return fail(b, "more than two matrix products", "node '%s'", n->name);
            mm[nmm++] = n->id;
        } else if (n->op && n->op->pattern == FA_PATTERN_REDUCTION) {
            if (n->op->reduce != FA_REDUCE_SOFTMAX || sm >= 0)
                return fail(b, "the reduction is not one softmax", "node '%s' (%s)", n->name, n->op_type);
            sm = n->id;
        }
    }
    if (nmm != 2 || sm < 0) return fail(b, "not two matrix products around a softmax", "cluster %d", d->id);
    const fa_node *S = g->nodes[sm];
    const fa_tensor *X = fa_graph_in(g, S, 0);
    if (!X || X->rank < 2 || X->dtype != FA_DTYPE_FLOAT) return fail(b, "the softmax input is not float32", "'%s'", S->name);
    int64_t ax = fa_node_attr_int(S, "axis", S->opset >= 13 ? -1 : 1);
    if (ax < 0) ax += X->rank;
    if (ax != X->rank - 1) return fail(b, "the softmax is not over the keys (the last axis)", "node '%s'", S->name);
    /* backward from the softmax to the QK product */
    const fa_node *back[ATT_MAX_STEPS * 2];
    int nb = 0, t = S->inputs[0];
    const fa_node *qk = NULL;
    while (!qk) {
        if (!internal(b, t) || sole_member_consumer(b, t) < 0)
            return fail(b, "the scores are read outside the kernel", "'%s'", g->tensors[t]->name);
        const fa_node *p = g->nodes[g->tensors[t]->producer];
        if (p->op && (p->op->flags & FA_OPF_MATMUL)) { qk = p; break; }
        if (nb == ATT_MAX_STEPS * 2) return fail(b, "too many score ops", "'%s'", S->name);
        back[nb++] = p;
        int next = -1;
        for (int k = 0; k < p->n_inputs; k++)
            if (p->inputs[k] >= 0 && is_member(b, g->tensors[p->inputs[k]]->producer)) {
                if (next >= 0) return fail(b, "a score op with two computed operands", "node '%s'", p->name);
                next = p->inputs[k];
            }
        if (next < 0) return fail(b, "the softmax input does not come from a matrix product", "node '%s'", p->name);
        t = next;
    }
    const fa_node *pv = g->nodes[mm[0] == qk->id ? mm[1] : mm[0]];
    const fa_tensor *Sq = fa_graph_out(g, qk, 0), *Yt = fa_graph_out(g, pv, 0);
    const fa_tensor *Qt = fa_graph_in(g, qk, 0), *Kt = fa_graph_in(g, qk, 1), *Vt = fa_graph_in(g, pv, 1);
    if (!Sq || !Yt || !Qt || !Kt || !Vt || Sq->rank < 2 || Yt->rank < 2 || Qt->rank < 2 || Kt->rank < 2 || Vt->rank < 2)
        return fail(b, "a 1-D matrix product operand", "'%s'", qk->name);
    for (const fa_tensor *const *tt = (const fa_tensor *const[]){Sq, Yt, Qt, Kt, Vt, NULL}; *tt; tt++)
        if ((*tt)->dtype != FA_DTYPE_FLOAT) return fail(b, "a member touches a tensor that is not float32", "'%s'", (*tt)->name);
    a->SQ = Sq->dims[Sq->rank - 2];
    a->SK = Sq->dims[Sq->rank - 1];
    a->D = Qt->dims[Qt->rank - 1];
    a->DV = Yt->dims[Yt->rank - 1];
    a->BH = fa_tensor_numel(Sq) / (a->SQ * a->SK > 0 ? a->SQ * a->SK : 1);
    if (fa_tensor_numel(Sq) <= 0 || a->BH * a->SQ * a->SK != fa_tensor_numel(Sq))
        return fail(b, "the scores have no static shape", "'%s'", Sq->name);
    if (fa_tensor_numel(Yt) != a->BH * a->SQ * a->DV || Yt->dims[Yt->rank - 2] != a->SQ || Vt->dims[Vt->rank - 2] != a->SK)
        return fail(b, "the PV product does not take the softmax over the same rows and keys", "'%s'", pv->name);
    /* the score program in member order (from the QK product forward) */
    int from = qk->outputs[0];
    for (int k = nb - 1; k >= 0; k--) {
        if (!score_step(b, a, back[k], from)) return false;
        from = back[k]->outputs[0];
    }
    /* forward from the softmax to the PV product */
    t = S->outputs[0];
    for (int guard = 0;; guard++) {
        if (!internal(b, t)) return fail(b, "the probabilities are read outside the kernel", "'%s'", g->tensors[t]->name);
        int w = a->nan_guard ? -1 : nan_guard_where(b, t);
        if (w >= 0) {
            a->nan_guard = true;
            t = g->nodes[w]->outputs[0];
            continue;
        }
        int c = sole_member_consumer(b, t);
        if (c < 0 || guard > ATT_MAX_STEPS) return fail(b, "the probabilities are read twice inside", "'%s'", g->tensors[t]->name);
        const fa_node *n = g->nodes[c];
        if (n->id == pv->id) {
            if (pv->inputs[0] != t) return fail(b, "the probabilities are not the PV product's first operand", "'%s'", pv->name);
            break;
        }
        if (!prob_step(b, a, n, t)) return false;
        t = n->outputs[0];
    }
    double sq = 1, sk = 1, sv = 1;
    fa_view kt;
    if (!operand(b, qk, 0, true, &sq, &a->q_in, &a->q) || !operand(b, qk, 1, true, &sk, &a->k_in, &kt) ||
        !operand(b, pv, 1, false, &sv, &a->v_in, &a->v))
        return false;
    (void)sv;
    /* Kᵀ [BH, D, SK] read as K [BH, SK, D] */
    a->k = kt;
    if (!fa_view_permute(&a->k, (const int64_t[]){0, 2, 1})) return fail(b, "K", "K");
    a->scale = sq * sk;
    /* leading scalar scales of the scores fold into the dot product's scale */
    int k0 = 0;
    while (k0 < a->n_steps && (a->steps[k0].kind == ST_MUL || a->steps[k0].kind == ST_DIV) && a->steps[k0].in < 0) {
        a->scale = a->steps[k0].kind == ST_MUL ? a->scale * a->steps[k0].c : a->scale / a->steps[k0].c;
        k0++;
    }
    memmove(a->steps, a->steps + k0, sizeof(att_step) * (size_t)(a->n_steps - k0));
    a->n_steps -= k0;
    return output_side(b, a, pv);
}

/* The opset-23 Attention op (one member): its attributes as the description. */
static bool analyse_op(att_build *b, att *a, const fa_node *n)
{
    const fa_graph *g = b->g;
    if (b->d->n_members != 1) return fail(b, "an Attention op with other members", "node '%s'", n->name);
    for (int i = 4; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0)
            return fail(b, "an Attention op with a KV cache or nonpad_kv_seqlen", "node '%s': input %d is given", n->name, i);
    for (int o = 1; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0 && (n_consumers(g, n->outputs[o]) > 0 ||
                                   (g->tensors[n->outputs[o]]->flags & FA_TENSOR_GRAPH_OUTPUT) || output_index(b, n->outputs[o]) >= 0))
            return fail(b, "an Attention op whose present_key/value or qk_matmul_output is used", "node '%s': output %d", n->name, o);
    if (fa_node_attr_int(n, "left_window_size", -1) != -1 || fa_node_attr_int(n, "right_window_size", -1) != -1)
        return fail(b, "an Attention op with a sliding window", "node '%s'", n->name);
    const fa_tensor *Q = fa_graph_in(g, n, 0), *K = fa_graph_in(g, n, 1), *V = fa_graph_in(g, n, 2), *Y = fa_graph_out(g, n, 0);
    for (const fa_tensor *const *tt = (const fa_tensor *const[]){Q, K, V, Y, NULL}; *tt; tt++)
        if ((*tt)->dtype != FA_DTYPE_FLOAT || (*tt)->rank < 3 || fa_tensor_numel(*tt) <= 0)
            return fail(b, "a member touches a tensor that is not float32", "'%s'", (*tt)->name);
    if (Q->rank != K->rank || Q->rank != V->rank) return fail(b, "Q, K, V of different ranks", "node '%s'", n->name);
    int64_t B = Q->dims[0], Hq, Hkv;
    int64_t qd[4], kd[4], vd[4], yd[4];
    if (Q->rank == 3) {
        Hq = fa_node_attr_int(n, "q_num_heads", 0);
        Hkv = fa_node_attr_int(n, "kv_num_heads", 0);
        if (Hq <= 0 || Hkv <= 0) return fail(b, "a 3-D Attention without head counts", "node '%s'", n->name);
        a->SQ = Q->dims[1];
        a->SK = K->dims[1];
        a->D = Q->dims[2] / Hq;
        a->DV = V->dims[2] / Hkv;
    } else {
        Hq = Q->dims[1];
        Hkv = K->dims[1];
        a->SQ = Q->dims[2];
        a->SK = K->dims[2];
        a->D = Q->dims[3];
        a->DV = V->dims[3];
    }
    if (Hkv <= 0 || Hq % Hkv) return fail(b, "query heads not a multiple of key heads", "node '%s'", n->name);
    int64_t grp = Hq / Hkv;
    a->BH = B * Hq;
    /* Q and Y: [B, Hq, S, E] (4-D) or [B, S, Hq·E] read as [B, S, Hq, E] transposed */
    int64_t yl = Q->rank == 3 ? a->DV * Hq : a->DV;
    (void)yl;
    struct { const fa_tensor *t; int64_t H, S, E; fa_view *acc; bool kv; } side[4] = {
        {Q, Hq, a->SQ, a->D, &a->q, false}, {K, Hkv, a->SK, a->D, &a->k, true},
        {V, Hkv, a->SK, a->DV, &a->v, true}, {Y, Hq, a->SQ, a->DV, &a->y, false}};
    (void)qd; (void)kd; (void)vd; (void)yd;
    for (int s = 0; s < 4; s++) {
        fa_view *v = side[s].acc;
        const fa_tensor *t = side[s].t;
        fa_view_contiguous(v, t->rank, t->dims);
        bool ok = true;
        if (t->rank == 3) ok = fa_view_reshape(v, 4, (int64_t[]){B, side[s].S, side[s].H, side[s].E}) &&
                              fa_view_permute(v, (const int64_t[]){0, 2, 1, 3});
        if (ok && side[s].kv && grp > 1) /* query head h reads key/value head h / grp */
            ok = fa_view_reshape(v, 5, (int64_t[]){B, Hkv, 1, side[s].S, side[s].E}) &&
                 fa_view_expand(v, 5, (int64_t[]){B, Hkv, grp, side[s].S, side[s].E}) &&
                 fa_view_reshape(v, 4, (int64_t[]){B, Hq, side[s].S, side[s].E});
        ok = ok && fa_view_reshape(v, 3, (int64_t[]){a->BH, side[s].S, side[s].E});
        int64_t st;
        if (!ok || !fa_view_axis_stride(v, 1, &st) || !fa_view_axis_stride(v, 2, &st))
            return fail(b, "an Attention operand has no strided accessor", "node '%s'", n->name);
    }
    a->q_in = input_index(b, Q->id);
    a->k_in = input_index(b, K->id);
    a->v_in = input_index(b, V->id);
    a->y_out = output_index(b, Y->id);
    if (a->q_in < 0 || a->k_in < 0 || a->v_in < 0 || a->y_out < 0 || b->d->n_outputs != 1)
        return fail(b, "the Attention op's Q, K, V are not the cluster's inputs", "node '%s'", n->name);
    const fa_attr *sa = fa_node_attr(n, "scale");
    a->scale = sa && sa->type == FA_ATTR_FLOAT ? sa->f : 1.0 / sqrt((double)a->D);
    double softcap = fa_node_attr_float(n, "softcap", 0.0f);
    if (softcap > 0) a->steps[a->n_steps++] = (att_step){.kind = ST_SOFTCAP, .c = softcap, .in = -1, .cond_in = -1};
    a->causal = fa_node_attr_int(n, "is_causal", 0) != 0;
    a->zero_masked_rows = true;
    a->mask_len = a->SK;
    if (n->n_inputs > 3 && n->inputs[3] >= 0) {
        const fa_tensor *M = g->tensors[n->inputs[3]];
        int mi = input_index(b, M->id);
        if (mi < 0 || M->rank < 1 || M->rank > 4 || M->dims[M->rank - 1] > a->SK || fa_tensor_numel(M) <= 0)
            return fail(b, "an Attention mask the kernel does not read", "node '%s'", n->name);
        a->mask_len = M->dims[M->rank - 1];
        /* the mask over [B, Hq, SQ, mask_len]; keys from mask_len on are masked */
        fa_view mv;
        fa_view_contiguous(&mv, M->rank, M->dims);
        if (!fa_view_expand(&mv, 4, (int64_t[]){B, Hq, a->SQ, a->mask_len}) ||
            !fa_view_reshape(&mv, 3, (int64_t[]){a->BH, a->SQ, a->mask_len}))
            return fail(b, "an Attention mask does not broadcast to the scores", "node '%s'", n->name);
        att_step *s = &a->steps[a->n_steps++];
        memset(s, 0, sizeof *s);
        s->in = s->cond_in = -1;
        if (M->dtype == FA_DTYPE_BOOL) {
            s->kind = ST_BOOL_MASK;
            s->cond_in = mi;
            s->cond = mv;
        } else if (M->dtype == FA_DTYPE_FLOAT) {
            s->kind = ST_ADD;
            s->in = mi;
            s->acc = mv;
        } else {
            return fail(b, "an Attention mask that is neither bool nor float32", "node '%s'", n->name);
        }
    }
    return true;
}

static bool analyse(att_build *b, att *a)
{
    memset(a, 0, sizeof *a);
    a->q_in = a->k_in = a->v_in = a->y_out = a->guard_in = -1;
    a->scale = 1.0;
    const fa_graph *g = b->g;
    const fa_kernel_desc *d = b->d;
    if (d->n_members <= 0 || d->n_outputs <= 0) return fail(b, "empty cluster", "cluster %d", d->id);
    for (int i = 0; i < d->n_members; i++)
        if (d->members[i] < 0 || d->members[i] >= g->n_nodes) return fail(b, "bad cluster member", "cluster %d", d->id);
    for (int i = 0; i < d->n_inputs; i++)
        if (d->inputs[i] < 0 || d->inputs[i] >= g->n_tensors || fa_tensor_numel(g->tensors[d->inputs[i]]) < 0)
            return fail(b, "a cluster input has a dynamic shape", "cluster %d: input %d", d->id, i);
    for (int i = 0; i < d->n_outputs; i++)
        if (d->outputs[i] < 0 || d->outputs[i] >= g->n_tensors || g->tensors[d->outputs[i]]->dtype != FA_DTYPE_FLOAT)
            return fail(b, "a member touches a tensor that is not float32", "cluster %d: output %d", d->id, i);
    const fa_node *op = NULL;
    for (int i = 0; i < d->n_members; i++) {
        const fa_node *n = g->nodes[d->members[i]];
        if (n->op && n->op->pattern == FA_PATTERN_REDUCTION && n->op->reduce == FA_REDUCE_ATTENTION) op = n;
    }
    bool ok = op ? analyse_op(b, a, op) : analyse_decomposed(b, a);
    if (!ok) return false;
    if (a->SQ <= 0 || a->SK <= 0 || a->D <= 0 || a->DV <= 0 || a->BH <= 0)
        return fail(b, "empty attention", "cluster %d", d->id);
    if (a->D > 256 || a->DV > 256)
        return fail(b, "a head size over 256", "cluster %d: head sizes %lld, %lld", d->id, (long long)a->D, (long long)a->DV);
    for (int s = 0; s < a->n_steps; s++)
        if (a->steps[s].kind == ST_SOFTCAP) a->has_tanh = true;
    return true;
}

bool fa_cg_attention_supported(const fa_graph *g, const fa_kernel_desc *d, bool cuda, const char **why, char *msg,
                               size_t cap)
{
    bool *member = calloc((size_t)g->n_nodes + 1, 1);
    att_build b = {g, d, member, NULL, msg, cap};
    att a;
    msg[0] = 0;
    bool ok = member != NULL;
    for (int i = 0; ok && i < d->n_members; i++)
        if (d->members[i] >= 0 && d->members[i] < g->n_nodes) member[d->members[i]] = true;
    ok = ok && analyse(&b, &a);
    if (ok && cuda && cu_smem_bytes(a.D, a.DV) > CU_SMEM_MAX)
        ok = fail(&b, "the CUDA attention kernel's tiles exceed 48 KB of shared memory (head sizes over 128)",
                  "cluster %d: head sizes %lld, %lld need %lld bytes", d->id, (long long)a.D, (long long)a.DV,
                  (long long)cu_smem_bytes(a.D, a.DV));
    if (!member) b.why = "out of memory";
    if (!ok && why) *why = b.why;
    free(member);
    return ok;
}

/* ---- printing ---- */

/* Σ ((bh / div) % mod) · stride over axis 0 of v, plus v's offset: the per-(batch·head) base. */
static void base_expr(char *out, size_t cap, const fa_view *v)
{
    char t[160];
    snprintf(out, cap, "%lld", (long long)v->offset);
    for (int k = 0; k < v->n_terms[0]; k++) {
        const fa_view_term *x = &v->terms[0][k];
        char q[64];
        if (x->div == 1) snprintf(q, sizeof q, "bh");
        else snprintf(q, sizeof q, "(bh / %lld)", (long long)x->div);
        if (x->div * x->mod < v->dims[0]) snprintf(t, sizeof t, " + ((%s) %% %lld) * %lld", q, (long long)x->mod, (long long)x->stride);
        else snprintf(t, sizeof t, " + %s * %lld", q, (long long)x->stride);
        size_t n = strlen(out);
        if (n + 1 < cap) snprintf(out + n, cap - n, "%s", t);
    }
}

static int64_t stride_of(const fa_view *v, int axis)
{
    int64_t s = 0;
    fa_view_axis_stride(v, axis, &s);
    return s;
}

/* `row_var + j * sj` spelled without zero terms. */
static void idx2(char *out, size_t cap, const char *base, const char *iv, int64_t si, const char *jv, int64_t sj)
{
    int n = snprintf(out, cap, "%s", base);
    if (si) n += snprintf(out + n, cap - (size_t)n, " + %s * %lld", iv, (long long)si);
    if (sj) snprintf(out + n, cap - (size_t)n, " + %s * %lld", jv, (long long)sj);
}

/* The score program on x at key j of row i (mask row bases mrK already set), one statement per
 * step. lang: the float literal spelling. */
static const char *ninf(bool cuda) { return cuda ? "(-__int_as_float(0x7f800000))" : "-INFINITY"; }

static void emit_steps(fa_buf *o, const att *a, const char *ind, bool cuda)
{
    char lit[64], ix[256], base[32];
    for (int s = 0; s < a->n_steps; s++) {
        const att_step *st = &a->steps[s];
        switch (st->kind) {
        case ST_MUL:
        case ST_DIV:
            if (st->in < 0) {
                fa_cg_flit(lit, sizeof lit, st->c, cuda);
                fa_buf_printf(o, "%sx = x %s %s;\n", ind, st->kind == ST_MUL ? "*" : "/", lit);
            } else {
                fa_buf_printf(o, "%sx = x %s in%d[0];\n", ind, st->kind == ST_MUL ? "*" : "/", st->in);
            }
            break;
        case ST_ADD:
        case ST_SUB:
            snprintf(base, sizeof base, "mr%d", s);
            idx2(ix, sizeof ix, base, "i", 0, "j", stride_of(&st->acc, 2));
            if (st->in >= 0 && a->mask_len < a->SK && a->zero_masked_rows) /* the op's mask narrower than the keys */
                fa_buf_printf(o, "%sx = j < %lld ? x + in%d[%s] : %s;\n", ind, (long long)a->mask_len, st->in, ix, ninf(cuda));
            else
                fa_buf_printf(o, "%sx = x %s in%d[%s];\n", ind, st->kind == ST_SUB ? "-" : "+", st->in, ix);
            break;
        case ST_WHERE: {
            char cb[32], cix[256];
            snprintf(cb, sizeof cb, "mc%d", s);
            idx2(cix, sizeof cix, cb, "i", 0, "j", stride_of(&st->cond, 2));
            snprintf(base, sizeof base, "mr%d", s);
            idx2(ix, sizeof ix, base, "i", 0, "j", stride_of(&st->acc, 2));
            fa_buf_printf(o, "%s{\n%s    const float f = in%d[%s];\n", ind, ind, st->in, ix);
            if (st->score_when_true) fa_buf_printf(o, "%s    x = in%d[%s] ? x : f;\n%s}\n", ind, st->cond_in, cix, ind);
            else fa_buf_printf(o, "%s    x = in%d[%s] ? f : x;\n%s}\n", ind, st->cond_in, cix, ind);
            break;
        }
        case ST_BOOL_MASK: {
            char cb[32], cix[256];
            snprintf(cb, sizeof cb, "mc%d", s);
            idx2(cix, sizeof cix, cb, "i", 0, "j", stride_of(&st->cond, 2));
            fa_buf_printf(o, "%sx = (j < %lld && in%d[%s]) ? x : %s;\n", ind, (long long)a->mask_len, st->cond_in, cix, ninf(cuda));
            break;
        }
        case ST_SOFTCAP:
            fa_cg_flit(lit, sizeof lit, st->c, cuda);
            fa_buf_printf(o, "%sx = %s * tanhf(x / %s);\n", ind, lit, lit);
            break;
        }
    }
    if (a->causal) fa_buf_printf(o, "%sif (j > i) x = %s;\n", ind, ninf(cuda));
}

/* Per-row bases of the mask reads: mrK (operand) and mcK (condition) at row i. */
static void emit_mask_rows(fa_buf *o, const att *a, const char *ind, const char *IT)
{
    for (int s = 0; s < a->n_steps; s++) {
        const att_step *st = &a->steps[s];
        if (st->in >= 0 && st->kind != ST_MUL && st->kind != ST_DIV)
            fa_buf_printf(o, "%sconst %s mr%d = mb%d + i * %lld;\n", ind, IT, s, s, (long long)stride_of(&st->acc, 1));
        if (st->cond_in >= 0)
            fa_buf_printf(o, "%sconst %s mc%d = cb%d + i * %lld;\n", ind, IT, s, s, (long long)stride_of(&st->cond, 1));
    }
}

static void emit_bases(fa_buf *o, const att *a, const char *ind, const char *IT)
{
    char e[640];
    const struct { const char *nm; const fa_view *v; } acc[4] = {{"qb", &a->q}, {"kb", &a->k}, {"vb", &a->v}, {"yb", &a->y}};
    for (int k = 0; k < 4; k++) {
        base_expr(e, sizeof e, acc[k].v);
        fa_buf_printf(o, "%sconst %s %s = %s;\n", ind, IT, acc[k].nm, e);
    }
    for (int s = 0; s < a->n_steps; s++) {
        const att_step *st = &a->steps[s];
        if (st->in >= 0 && st->kind != ST_MUL && st->kind != ST_DIV) {
            base_expr(e, sizeof e, &st->acc);
            fa_buf_printf(o, "%sconst %s mb%d = %s;\n", ind, IT, s, e);
        }
        if (st->cond_in >= 0) {
            base_expr(e, sizeof e, &st->cond);
            fa_buf_printf(o, "%sconst %s cb%d = %s;\n", ind, IT, s, e);
        }
    }
    if (a->guard_in >= 0) {
        base_expr(e, sizeof e, &a->guard);
        fa_buf_printf(o, "%sconst %s gb = %s;\n", ind, IT, e);
    }
}

/* The guard and the division of the accumulator by the row sum, as one expression of r (row in
 * the block), i (query), acc (the accumulated value), l (the row sum), m (the row max). */
static void emit_final(fa_buf *o, const att *a, const char *ind, const char *acc, const char *l, const char *m, bool cuda)
{
    fa_buf_printf(o, "%sfloat yv = %s / %s;\n", ind, acc, l);
    if (a->zero_masked_rows)
        fa_buf_printf(o, "%sif (%s == %s) yv = 0.0f; /* every key masked: 0 (the op's rule) */\n", ind, m, ninf(cuda));
    if (a->nan_guard) /* the unfused softmax row is NaN: every key masked (max -inf) or a NaN score */
        fa_buf_printf(o, "%sif (%s == %s || yv != yv) yv = 0.0f; /* Where(IsNaN(P), 0, P) */\n", ind, m, ninf(cuda));
    if (a->guard_in >= 0)
        fa_buf_printf(o, "%sif (%sin%d[gb + i * %lld]) yv = 0.0f; /* the row guard after the softmax */\n", ind,
                      a->guard_zero_when_true ? "" : "!", a->guard_in, (long long)stride_of(&a->guard, 1));
}

static void params_c(fa_buf *o, const fa_graph *g, const fa_kernel_desc *d)
{
    for (int k = 0; k < d->n_inputs; k++) {
        bool bl = g->tensors[d->inputs[k]]->dtype == FA_DTYPE_BOOL;
        fa_buf_printf(o, "    const %s *restrict in%d = (const %s *)in[%d]; /* tensor #%d */\n", bl ? "unsigned char" : "float",
                      k, bl ? "unsigned char" : "float", k, d->inputs[k]);
        fa_buf_printf(o, "    (void)in%d;\n", k);
    }
    for (int k = 0; k < d->n_outputs; k++)
        fa_buf_printf(o, "    float *restrict out%d = (float *)out[%d]; /* tensor #%d */\n", k, k, d->outputs[k]);
}

/* Tile sizes of the C kernel. The micro-kernels (emit_c) hold an MR × NR register tile: MR = 8
 * query rows × NR = 32 keys or values with AVX-512 (2 zmm per row, 16 accumulators of the 32
 * registers), 4 × 16 with AVX/AVX2 (2 ymm per row, 8 of 16), 4 × 8 otherwise (16-byte vectors);
 * so rows are padded to 8 and keys/values to 32, a multiple of every MR and NR. An FMA unit of
 * latency 4 cycles and throughput 2 per cycle (Intel's optimisation manual, Skylake-SP/Ice Lake;
 * AMD's Zen 4 software optimisation guide: 2 FMA pipes, latency 4) needs at least 8 independent
 * accumulators to stay busy, which the AVX-512 and AVX tiles have.
 *   BR = 32 query rows per block (Sq rounded up to 8 when shorter): the block's score tile S (BR·BC)
 *     and probabilities stay in L1 between the two products;
 *   BC = 64 keys per tile (32 for heads over 128), Sk rounded up to 32 when shorter: Kt (D·BC)
 *     and Vs (BC·DVP) are 16 KiB each for D = Dv = 64, so one key tile's K and V together fit a
 *     32 KiB L1d (Skylake-SP, Ice Lake, Sapphire Rapids, Zen 2-4: 32 or 48 KiB) while the block's
 *     products stream them BR/MR = 4 times each;
 *   QG = the most rows of one task (a group of query blocks, at most 256): each key tile is packed
 *     (K transposed, V row-major) once per group and used by its blocks, so packing costs 1/QG
 *     of the products per element instead of 1/BR. Per task Qs QG·D + O QG·DVP + Kt + Vs + S
 *     floats on the stack: 168 KiB for D = Dv = 64 at QG 256 (L2: 1-2 MiB per core). QG shrinks
 *     (by whole blocks) while the task's stack frame would pass 256 KiB (OpenMP threads get the
 *     default thread stack, 8 MiB under glibc's usual limit; 256 KiB keeps the frame far below
 *     it: 232 KiB for D = Dv = 128 at QG 160, 196 KiB for 256 at QG 64). The kernel splits each
 *     head's rows into fewer or more groups at run time (emit_c: C_TASKS_PER_THREAD): a group
 *     repacks every key tile, so ViT-B/16's 197 rows in groups of 96, 96 and 5 (the tasks then
 *     fixed at >= 32) packed each head's keys three times, and one group a head ran the kernel
 *     474-500 us against 521-535 us (bench_attention.sh at sequence 197, 2 threads);
 *   DVP = Dv rounded up to 32 (the value row as the PV micro-kernel reads it). */
enum { C_MR = 8, C_NR_PAD = 32, C_QG_MAX = 256 };
/* Tasks (a head's group of query rows) the C kernel makes per thread of its team at the least,
 * where a head's rows allow it: with a static schedule a thread's share is whole tasks, so a few
 * per thread keep the shares within a task of each other; beyond that more groups only repack the
 * keys again. */
#define C_TASKS_PER_THREAD 4
#define C_STACK_MAX (256 * 1024)
static void c_tiles(const att *a, int64_t *BR, int64_t *BC, int64_t *DVP, int64_t *QG)
{
    *BR = a->SQ >= 32 ? 32 : (a->SQ + C_MR - 1) / C_MR * C_MR;
    *BC = a->D > 128 || a->DV > 128 ? 32 : 64;
    if (a->SK < *BC) *BC = (a->SK + C_NR_PAD - 1) / C_NR_PAD * C_NR_PAD;
    *DVP = (a->DV + C_NR_PAD - 1) / C_NR_PAD * C_NR_PAD;
    int64_t nb = C_QG_MAX / *BR, blocks = (a->SQ + *BR - 1) / *BR;
    if (nb > blocks) nb = blocks;
    while (nb > 1 && 4 * (nb * *BR * (a->D + *DVP) + a->D * *BC + *BC * *DVP + *BR * *BC) > C_STACK_MAX) nb--;
    *QG = nb * *BR;
}

static void emit_c(fa_buf *o, const fa_graph *g, const fa_kernel_desc *d, const att *a, const char *name)
{
    int64_t BR, BC, DVP, QG;
    c_tiles(a, &BR, &BC, &DVP, &QG);
    const int64_t D = a->D, blocks = (a->SQ + BR - 1) / BR, NBMAX = QG / BR, NGMIN = (blocks + NBMAX - 1) / NBMAX;
    const long long lD = (long long)D, lBC = (long long)BC, lDVP = (long long)DVP, lBR = (long long)BR, lQG = (long long)QG,
                    lSQ = (long long)a->SQ, lSK = (long long)a->SK;
    char lit[64];
    fa_buf_puts(o, "#include <math.h>\n#include <stdint.h>\n\n");
    fa_buf_puts(o, "#if defined(__x86_64__) && defined(__GLIBC__) && defined(_OPENMP) && !defined(__FAST_MATH__)\n"
                   "/* vector variants (SLEEF's GNU-ABI library, else glibc's libmvec): the exp loops vectorise */\n"
                   "#pragma omp declare simd notinbranch\nfloat expf(float);\n");
    if (a->has_tanh) fa_buf_puts(o, "#if __GLIBC_PREREQ(2, 35)\n#pragma omp declare simd notinbranch\nfloat tanhf(float);\n#endif\n");
    fa_buf_puts(o, "#endif\n\n");
    /* the register tile of the micro-kernels, by the ISA the compiler targets (c_tiles) */
    fa_buf_puts(o, "/* micro-kernel register tile: FA_MR rows x FA_NV vectors of FA_VL floats */\n"
                   "#if defined(__AVX512F__)\n#define FA_VL 16\n#define FA_NV 2\n#define FA_MR 8\n"
                   "#elif defined(__AVX__)\n#define FA_VL 8\n#define FA_NV 2\n#define FA_MR 4\n"
                   "#else\n#define FA_VL 4\n#define FA_NV 2\n#define FA_MR 4\n#endif\n"
                   "typedef float fa_vf __attribute__((vector_size(FA_VL * 4), may_alias));\n\n");
    fa_buf_printf(o, "void %s(const void *const *in, void *const *out, int threads);\n", name);
    fa_buf_printf(o, "void %s(const void *const *in, void *const *out, int threads)\n{\n", name);
    params_c(o, g, d);
    fa_buf_printf(o, "    /* %lld (batch x head) x %lld query rows in groups of at most %lld (blocks of %lld), %lld keys in tiles of %lld, head %lld, value %lld */\n",
                  (long long)a->BH, lSQ, lQG, lBR, lSK, lBC, lD, (long long)a->DV);
    /* groups per head, at run time: the fewest (each repacks every key tile) that give the team
     * C_TASKS_PER_THREAD tasks a thread, within [NGMIN, blocks]; qg rows each, whole blocks */
    if (NGMIN < blocks) {
        fa_buf_printf(o, "    const int64_t want = ((int64_t)(threads > 0 ? threads : 1) * %d + %lld - 1) / %lld;\n",
                      C_TASKS_PER_THREAD, (long long)a->BH, (long long)a->BH);
        fa_buf_printf(o, "    const int64_t ngr = want < %lld ? %lld : want > %lld ? %lld : want;\n", (long long)NGMIN,
                      (long long)NGMIN, (long long)blocks, (long long)blocks);
        fa_buf_printf(o, "    const int64_t qg = (%lld + ngr - 1) / ngr * %lld;\n", (long long)blocks, lBR);
    } else { /* one way to split the rows: whole blocks, as many groups as blocks */
        fa_buf_printf(o, "    const int64_t ngr = %lld, qg = %lld;\n", (long long)NGMIN, (long long)((blocks + NGMIN - 1) / NGMIN * BR));
    }
    if (a->BH * blocks > 1) /* one task at most: no team (codegen.h FA_CODEGEN_PARALLEL_MIN) */
        fa_buf_puts(o, "#pragma omp parallel for num_threads(threads) schedule(static)\n");
    else fa_buf_puts(o, "    (void)threads;\n");
    fa_buf_printf(o, "    for (int64_t task = 0; task < %lld * ngr; task++) {\n", (long long)a->BH);
    fa_buf_puts(o, "        const int64_t bh = task / ngr, g0 = (task % ngr) * qg;\n");
    fa_buf_printf(o, "        const int64_t ng = %lld - g0 < qg ? %lld - g0 : qg;\n", lSQ, lSQ);
    emit_bases(o, a, "        ", "int64_t");
    fa_buf_printf(o, "        float Qs[%lld] __attribute__((aligned(64))), Kt[%lld] __attribute__((aligned(64)));\n",
                  (long long)(QG * D), (long long)(D * BC));
    fa_buf_printf(o, "        float Vs[%lld] __attribute__((aligned(64))), S[%lld] __attribute__((aligned(64)));\n",
                  (long long)(BC * DVP), (long long)(BR * BC));
    fa_buf_printf(o, "        float O[%lld] __attribute__((aligned(64))), M[%lld], L[%lld], A[%lld];\n", (long long)(QG * DVP),
                  lQG, lQG, lBR);
    char ix[256];
    idx2(ix, sizeof ix, "qb", "(g0 + r)", stride_of(&a->q, 1), "d", stride_of(&a->q, 2));
    fa_buf_printf(o, "        for (int64_t r = 0; r < qg; r++) {\n"
                     "            for (int64_t d = 0; d < %lld; d++) Qs[r * %lld + d] = r < ng ? in%d[%s] : 0.0f;\n"
                     "            M[r] = -INFINITY;\n            L[r] = 0.0f;\n"
                     "            for (int64_t e = 0; e < %lld; e++) O[r * %lld + e] = 0.0f;\n        }\n",
                  lD, lD, a->q_in, ix, lDVP, lDVP);
    if (a->causal) fa_buf_printf(o, "        const int64_t jend = g0 + ng < %lld ? g0 + ng : %lld; /* causal: later key tiles are all masked */\n",
                                 lSK, lSK);
    else fa_buf_printf(o, "        const int64_t jend = %lld;\n", lSK);
    fa_buf_printf(o, "        for (int64_t j0 = 0; j0 < jend; j0 += %lld) {\n", lBC);
    fa_buf_printf(o, "            const int64_t nt = jend - j0 < %lld ? jend - j0 : %lld, ntr = (nt + 31) / 32 * 32;\n", lBC, lBC);
    /* pack K transposed and V, once per group */
    idx2(ix, sizeof ix, "kb", "(j0 + jj)", stride_of(&a->k, 1), "d", stride_of(&a->k, 2));
    fa_buf_printf(o, "            /* the key tile packed once for the group's blocks: K transposed (Kt[d][j]), V row-major, zero-padded */\n"
                     "            for (int64_t jj = 0; jj < ntr; jj++)\n"
                     "                for (int64_t d = 0; d < %lld; d++) Kt[d * %lld + jj] = jj < nt ? in%d[%s] : 0.0f;\n",
                  lD, lBC, a->k_in, ix);
    idx2(ix, sizeof ix, "vb", "(j0 + jj)", stride_of(&a->v, 1), "e", stride_of(&a->v, 2));
    fa_buf_printf(o, "            for (int64_t jj = 0; jj < nt; jj++)\n"
                     "                for (int64_t e = 0; e < %lld; e++) Vs[jj * %lld + e] = e < %lld ? in%d[%s] : 0.0f;\n",
                  lDVP, lDVP, (long long)a->DV, a->v_in, ix);
    fa_buf_printf(o, "            for (int64_t i0 = g0; i0 < g0 + ng; i0 += %lld) {\n", lBR);
    fa_buf_printf(o, "                const int64_t nr = g0 + ng - i0 < %lld ? g0 + ng - i0 : %lld, nr8 = (nr + 7) / 8 * 8;\n", lBR, lBR);
    if (a->causal)
        fa_buf_printf(o, "                const int64_t je = i0 + nr < jend ? i0 + nr : jend; /* causal: this block's last key */\n"
                         "                if (j0 >= je) continue;\n"
                         "                const int64_t nc = je - j0 < nt ? je - j0 : nt, ncr = (nc + 31) / 32 * 32;\n");
    else fa_buf_puts(o, "                const int64_t nc = nt, ncr = ntr;\n");
    fa_buf_printf(o, "                const float *Qb = Qs + (i0 - g0) * %lld;\n"
                     "                float *Ob = O + (i0 - g0) * %lld, *Mb = M + (i0 - g0), *Lb = L + (i0 - g0);\n", lD, lDVP);
    /* S = Q Kᵀ micro-kernel */
    fa_buf_printf(o, "                /* S = Q K^T: FA_MR rows x FA_NV vectors of keys in registers over the head dim (keys up to ncr) */\n"
                     "                for (int64_t r = 0; r < nr8; r += FA_MR)\n"
                     "                    for (int64_t jc = 0; jc < ncr; jc += FA_VL * FA_NV) {\n"
                     "                        fa_vf acc[FA_MR][FA_NV];\n"
                     "                        for (int u = 0; u < FA_MR; u++)\n"
                     "                            for (int v = 0; v < FA_NV; v++) acc[u][v] = (fa_vf){0};\n"
                     "                        const float *q = Qb + r * %lld;\n"
                     "                        for (int64_t d = 0; d < %lld; d++) {\n"
                     "                            fa_vf b[FA_NV];\n"
                     "                            for (int v = 0; v < FA_NV; v++) b[v] = *(const fa_vf *)(Kt + d * %lld + jc + v * FA_VL);\n"
                     "                            for (int u = 0; u < FA_MR; u++) {\n"
                     "                                const float x = q[u * %lld + d];\n"
                     "                                for (int v = 0; v < FA_NV; v++) acc[u][v] += b[v] * x;\n"
                     "                            }\n                        }\n"
                     "                        for (int u = 0; u < FA_MR; u++)\n"
                     "                            for (int v = 0; v < FA_NV; v++) *(fa_vf *)(S + (r + u) * %lld + jc + v * FA_VL) = acc[u][v];\n"
                     "                    }\n",
                  lD, lD, lBC, lD, lBC);
    /* the score program and the online softmax, row by row */
    fa_cg_flit(lit, sizeof lit, a->scale, false);
    fa_buf_printf(o, "                for (int64_t r = 0; r < nr; r++) {\n"
                     "                    const int64_t i = i0 + r;\n                    (void)i;\n"
                     "                    float *s = S + r * %lld;\n", lBC);
    emit_mask_rows(o, a, "                    ", "int64_t");
    fa_buf_puts(o, "                    float mt = -INFINITY;\n"
                   "#pragma omp simd reduction(max:mt)\n"
                   "                    for (int64_t jj = 0; jj < nc; jj++) {\n"
                   "                        const int64_t j = j0 + jj;\n                        (void)j;\n");
    fa_buf_printf(o, "                        float x = s[jj] * %s;\n", lit);
    emit_steps(o, a, "                        ", false);
    fa_buf_puts(o, "                        s[jj] = x;\n                        mt = x > mt ? x : mt;\n                    }\n");
    fa_buf_puts(o, "                    const float mn = Mb[r] > mt ? Mb[r] : mt, base = mn == -INFINITY ? 0.0f : mn;\n"
                   "                    const float alpha = expf(Mb[r] - base); /* rescales what earlier tiles summed */\n"
                   "                    float ls = 0.0f;\n"
                   "#pragma omp simd reduction(+:ls)\n"
                   "                    for (int64_t jj = 0; jj < nc; jj++) {\n"
                   "                        const float p = expf(s[jj] - base);\n                        s[jj] = p;\n                        ls += p;\n"
                   "                    }\n"
                   "                    Lb[r] = Lb[r] * alpha + ls;\n                    Mb[r] = mn;\n                    A[r] = alpha;\n"
                   "                }\n"
                   "                for (int64_t r = nr; r < nr8; r++) A[r] = 0.0f;\n");
    /* O = α O + P V micro-kernel */
    fa_buf_printf(o, "                /* O = alpha O + P V: FA_MR rows x FA_NV vectors of values in registers over the tile's keys */\n"
                     "                for (int64_t r = 0; r < nr8; r += FA_MR)\n"
                     "                    for (int64_t ec = 0; ec < %lld; ec += FA_VL * FA_NV) {\n"
                     "                        fa_vf acc[FA_MR][FA_NV];\n"
                     "                        for (int u = 0; u < FA_MR; u++)\n"
                     "                            for (int v = 0; v < FA_NV; v++) acc[u][v] = *(const fa_vf *)(Ob + (r + u) * %lld + ec + v * FA_VL) * A[r + u];\n"
                     "                        const float *p = S + r * %lld;\n"
                     "                        for (int64_t jj = 0; jj < nc; jj++) {\n"
                     "                            fa_vf b[FA_NV];\n"
                     "                            for (int v = 0; v < FA_NV; v++) b[v] = *(const fa_vf *)(Vs + jj * %lld + ec + v * FA_VL);\n"
                     "                            for (int u = 0; u < FA_MR; u++) {\n"
                     "                                const float x = p[u * %lld + jj];\n"
                     "                                for (int v = 0; v < FA_NV; v++) acc[u][v] += b[v] * x;\n"
                     "                            }\n                        }\n"
                     "                        for (int u = 0; u < FA_MR; u++)\n"
                     "                            for (int v = 0; v < FA_NV; v++) *(fa_vf *)(Ob + (r + u) * %lld + ec + v * FA_VL) = acc[u][v];\n"
                     "                    }\n            }\n        }\n",
                  lDVP, lDVP, lBC, lDVP, lBC, lDVP);
    /* rows beyond nr computed on zero queries (raw dots 0, never exponentiated, alpha 0): their O
     * rows are never stored */
    idx2(ix, sizeof ix, "yb", "i", stride_of(&a->y, 1), "e", stride_of(&a->y, 2));
    fa_buf_puts(o, "        for (int64_t r = 0; r < ng; r++) {\n            const int64_t i = g0 + r;\n            (void)i; /* unread when Sq is 1 */\n");
    fa_buf_printf(o, "            for (int64_t e = 0; e < %lld; e++) {\n", (long long)a->DV);
    char accx[64];
    snprintf(accx, sizeof accx, "O[r * %lld + e]", lDVP);
    emit_final(o, a, "                ", accx, "L[r]", "M[r]", false);
    fa_buf_printf(o, "                out%d[%s] = yv;\n            }\n        }\n    }\n}\n", a->y_out, ix);
}

/* CUDA (CU_* above): K and V tiles in shared memory (K's rows padded by one float against bank
 * conflicts), the row's running max, sum and DVP/32 output values per lane in registers; every
 * thread runs every loop the same number of times, so the shuffles and barriers are uniform. */

static void emit_cuda(fa_buf *o, const fa_graph *g, const fa_kernel_desc *d, const att *a, const char *name,
                      fa_codegen_info *info)
{
    const int64_t D = a->D, DVP = (a->DV + 31) / 32 * 32, NQB = (a->SQ + CU_BR - 1) / CU_BR, NC = DVP / 32;
    int64_t extent = 0;
    for (int k = 0; k < d->n_inputs; k++)
        if (fa_tensor_numel(g->tensors[d->inputs[k]]) > extent) extent = fa_tensor_numel(g->tensors[d->inputs[k]]);
    if (fa_tensor_numel(g->tensors[d->outputs[0]]) > extent) extent = fa_tensor_numel(g->tensors[d->outputs[0]]);
    const char *IT = extent > 0x3fffffff || a->BH * NQB > 0x3fffffff ? "long long" : "int";
    char lit[64], ix[256];
    info->block_size = CU_WARPS * 32;
    info->grid = a->BH * NQB;
    fa_buf_puts(o, FA_CUDA_REDUCE_HELPERS "\n");
    fa_buf_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d) %s(\n", CU_WARPS * 32, name);
    for (int k = 0; k < d->n_inputs; k++) {
        bool bl = g->tensors[d->inputs[k]]->dtype == FA_DTYPE_BOOL;
        fa_buf_printf(o, "%s    const %s *__restrict__ in%d", k ? ",\n" : "", bl ? "unsigned char" : "float", k);
    }
    for (int k = 0; k < d->n_outputs; k++) fa_buf_printf(o, "%s    float *__restrict__ out%d", d->n_inputs || k ? ",\n" : "", k);
    fa_buf_puts(o, ")\n{\n");
    fa_buf_printf(o, "    /* %lld (batch x head) x %lld query rows in blocks of %d (a warp per row), %lld keys in tiles of %d (a key per lane), head %lld, value %lld */\n",
                  (long long)a->BH, (long long)a->SQ, CU_BR, (long long)a->SK, CU_BC, (long long)D, (long long)a->DV);
    fa_buf_printf(o, "    __shared__ float Qs[%lld];\n    __shared__ float Ks[%lld];\n    __shared__ float Vs[%lld];\n",
                  (long long)(CU_BR * D), (long long)(CU_BC * (D + 1)), (long long)(CU_BC * DVP));
    fa_buf_printf(o, "    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n"
                     "    const %s bh = (%s)blockIdx.x / %lld, i0 = ((%s)blockIdx.x %% %lld) * %d;\n",
                  IT, IT, (long long)NQB, IT, (long long)NQB, CU_BR);
    emit_bases(o, a, "    ", IT);
    idx2(ix, sizeof ix, "qb", "i", stride_of(&a->q, 1), "d", stride_of(&a->q, 2));
    fa_buf_printf(o, "    for (int idx = tid; idx < %lld; idx += %d) {\n"
                     "        const int r = idx / %lld, d = idx %% %lld;\n        const %s i = i0 + r;\n"
                     "        Qs[idx] = i < %lld ? in%d[%s] : 0.0f;\n    }\n",
                  (long long)(CU_BR * D), CU_WARPS * 32, (long long)D, (long long)D, IT, (long long)a->SQ, a->q_in, ix);
    fa_buf_printf(o, "    float m[%d], l[%d], acc[%d][%lld];\n", CU_RPW, CU_RPW, CU_RPW, (long long)NC);
    fa_buf_printf(o, "#pragma unroll\n    for (int rr = 0; rr < %d; rr++) {\n        m[rr] = -__int_as_float(0x7f800000);\n        l[rr] = 0.0f;\n"
                     "#pragma unroll\n        for (int c = 0; c < %lld; c++) acc[rr][c] = 0.0f;\n    }\n", CU_RPW, (long long)NC);
    if (a->causal)
        fa_buf_printf(o, "    const %s jend = i0 + %d < %lld ? i0 + %d : %lld; /* causal: later key tiles are all masked */\n", IT,
                      CU_BR, (long long)a->SK, CU_BR, (long long)a->SK);
    else fa_buf_printf(o, "    const %s jend = %lld;\n", IT, (long long)a->SK);
    fa_buf_printf(o, "    for (%s j0 = 0; j0 < jend; j0 += %d) {\n        __syncthreads();\n", IT, CU_BC);
    idx2(ix, sizeof ix, "kb", "(j0 + jj)", stride_of(&a->k, 1), "d", stride_of(&a->k, 2));
    fa_buf_printf(o, "        for (int idx = tid; idx < %lld; idx += %d) {\n"
                     "            const int jj = idx / %lld, d = idx %% %lld;\n"
                     "            Ks[jj * %lld + d] = j0 + jj < jend ? in%d[%s] : 0.0f;\n        }\n",
                  (long long)(CU_BC * D), CU_WARPS * 32, (long long)D, (long long)D, (long long)(D + 1), a->k_in, ix);
    idx2(ix, sizeof ix, "vb", "(j0 + jj)", stride_of(&a->v, 1), "e", stride_of(&a->v, 2));
    fa_buf_printf(o, "        for (int idx = tid; idx < %lld; idx += %d) {\n"
                     "            const int jj = idx / %lld, e = idx %% %lld;\n"
                     "            Vs[idx] = j0 + jj < jend && e < %lld ? in%d[%s] : 0.0f;\n        }\n        __syncthreads();\n",
                  (long long)(CU_BC * DVP), CU_WARPS * 32, (long long)DVP, (long long)DVP, (long long)a->DV, a->v_in, ix);
    fa_cg_flit(lit, sizeof lit, a->scale, true);
    fa_buf_printf(o, "#pragma unroll\n        for (int rr = 0; rr < %d; rr++) {\n"
                     "            const int r = warp * %d + rr;\n            const %s i = i0 + r, j = j0 + lane;\n"
                     "            float x = 0.0f;\n"
                     "            for (int d = 0; d < %lld; d++) x += Qs[r * %lld + d] * Ks[lane * %lld + d];\n"
                     "            if (i < %lld && j < jend) {\n",
                  CU_RPW, CU_RPW, IT, (long long)D, (long long)D, (long long)(D + 1), (long long)a->SQ);
    emit_mask_rows(o, a, "                ", IT);
    fa_buf_printf(o, "                x = x * %s;\n", lit);
    emit_steps(o, a, "                ", true);
    fa_buf_printf(o, "            } else {\n                x = -__int_as_float(0x7f800000);\n            }\n"
                     "            const float mn = fmaxf(m[rr], fa_warp_max(x)), base = mn == -__int_as_float(0x7f800000) ? 0.0f : mn;\n"
                     "            const float p = expf(x - base), alpha = expf(m[rr] - base);\n"
                     "            l[rr] = l[rr] * alpha + fa_warp_sum(p);\n            m[rr] = mn;\n"
                     "#pragma unroll\n            for (int c = 0; c < %lld; c++) acc[rr][c] *= alpha;\n"
                     "            for (int jj = 0; jj < %d; jj++) {\n"
                     "                const float pj = __shfl_sync(0xffffffffu, p, jj);\n"
                     "#pragma unroll\n                for (int c = 0; c < %lld; c++) acc[rr][c] += pj * Vs[jj * %lld + c * 32 + lane];\n"
                     "            }\n        }\n    }\n",
                  (long long)NC, CU_BC, (long long)NC, (long long)DVP);
    idx2(ix, sizeof ix, "yb", "i", stride_of(&a->y, 1), "e", stride_of(&a->y, 2));
    fa_buf_printf(o, "#pragma unroll\n    for (int rr = 0; rr < %d; rr++) {\n"
                     "        const %s i = i0 + warp * %d + rr;\n"
                     "        if (i >= %lld) continue;\n"
                     "#pragma unroll\n        for (int c = 0; c < %lld; c++) {\n"
                     "            const int e = c * 32 + lane;\n"
                     "            if (e >= %lld) continue;\n",
                  CU_RPW, IT, CU_RPW, (long long)a->SQ, (long long)NC, (long long)a->DV);
    emit_final(o, a, "            ", "acc[rr][c]", "l[rr]", "m[rr]", true);
    fa_buf_printf(o, "            out%d[%s] = yv;\n        }\n    }\n}\n", a->y_out, ix);
}

fa_status fa_cg_attention(fa_ctx *ctx, const fa_graph *g, const fa_kernel_desc *d, bool cuda, const char *plan_hash,
                          fa_buf *out, fa_codegen_info *info)
{
    char msg[512] = "";
    bool *member = calloc((size_t)g->n_nodes + 1, 1);
    if (!member) return fa_ctx_error(ctx, FA_ERR_NOMEM, "codegen cluster %d: out of memory", d->id);
    for (int i = 0; i < d->n_members; i++)
        if (d->members[i] >= 0 && d->members[i] < g->n_nodes) member[d->members[i]] = true;
    att_build b = {g, d, member, NULL, msg, sizeof msg};
    att a;
    bool ok = analyse(&b, &a);
    free(member);
    if (!ok) return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "codegen cluster %d: %s", d->id, msg[0] ? msg : b.why);
    const int64_t NQB = (a.SQ + CU_BR - 1) / CU_BR;
    if (cuda && cu_smem_bytes(a.D, a.DV) > CU_SMEM_MAX)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "codegen cluster %d: head sizes %lld, %lld need %lld bytes of shared "
                            "memory (48 KB at most)", d->id, (long long)a.D, (long long)a.DV,
                            (long long)cu_smem_bytes(a.D, a.DV));
    if (cuda && a.BH * NQB > 0x7fffffff)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "codegen cluster %d: %lld blocks exceed the CUDA grid limit", d->id,
                            (long long)(a.BH * NQB));
    fa_buf o;
    fa_buf_init(&o);
    fa_codegen_info inf;
    memset(&inf, 0, sizeof inf);
    fa_cg_header(&o, d, plan_hash, &inf);
    fa_buf_printf(&o, "/* attention kernel: softmax over %lld keys of %lld x %lld query rows, never storing the scores; "
                      "inputs %d, outputs %d */\n", (long long)a.SK, (long long)a.BH, (long long)a.SQ, d->n_inputs, d->n_outputs);
    if (cuda) emit_cuda(&o, g, d, &a, inf.name, &inf);
    else emit_c(&o, g, d, &a, inf.name);
    inf.work_items = a.BH * a.SQ;
    if (o.oom) {
        fa_buf_free(&o);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "codegen cluster %d: out of memory", d->id);
    }
    fa_buf_append(out, o.data, o.len);
    fa_buf_free(&o);
    if (info) *info = inf;
    return FA_OK;
}
