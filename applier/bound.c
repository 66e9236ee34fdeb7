/* applier/bound — the verification bound of fused kernels that reassociate a reduction
 * (Conv, ConvTranspose, Gemm, MatMul): a componentwise rounding-error bound against the same
 * computation run on magnitudes (|W|·|x| for a convolution), instead of a relative error that
 * says nothing near cancellation. docs/runtime.md "Verification bound". */
#include "applier-impl.h"
#include "graph/op_math.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How a node's output magnitude M(y) follows from its inputs' (first-order forward error
 * analysis, Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., §3.1-3.5): an
 * error bound of the form |ŷ - y| <= c·M(y) holds for the computed ŷ whenever every input
 * carries |x̂ - x| <= c·M(x) and the op's own rounding is counted in c. */
typedef enum mag_rule {
    MAG_SAME,      /* linear with non-negative structure once constants are |.|: the op itself on
                      the magnitudes (Conv, MatMul, Add, Mul, pooling, views, Concat) */
    MAG_GEMM,      /* Gemm with |alpha|, |beta| */
    MAG_BN,        /* inference BatchNormalization: |s|/sqrt(var+eps)·(M(x) + |mean|) + |B| */
    MAG_SUM_MAGS,  /* Sub: M(a) + M(b) */
    MAG_MAX_MAGS,  /* Max, Min: max(M(a), M(b)) (both 1-Lipschitz in the max norm) */
    MAG_LIPSCHITZ, /* unary f with sup|f'| <= L: L·M(x) + |y| (|y|: the implementation's own error) */
    MAG_EXP,       /* Exp: |y|·(M(x) + 1) */
    MAG_POW,       /* Pow(x, p), constant scalar p >= 1: |p|·M(x)^p + |y| */
    MAG_DIV,       /* Div: (M(a) + |y|·M(b)) / |b| */
    MAG_WHERE,     /* Where(c, a, b): Where(c, M(a), M(b)) (a selection adds no rounding) */
    MAG_SOFTMAX,   /* Softmax p of s over an axis: p·(M(s) + Σ_axis p·M(s) + 1), 0 where p = 0 */
    MAG_ATTENTION, /* the Attention op: (2σ + 2)·Attention(Q, K, |V|, mask), σ a bound of |scores| */
    MAG_NONE,      /* no first-order bound (an op-math row's FA_BOUND_NONE): relative error instead */
} mag_rule;

/* The ops without an op-math row (graph/op_math.h), whose rule is written here: contractions,
 * BatchNormalization, views and copies, pooling, Where, Softmax, the Attention op. roundings:
 * relative errors of size u the op adds along a path through it, besides the reduction length
 * counted from shapes (reduction_terms). An elementwise op with an op-math row takes its rule,
 * Lipschitz constant and roundings from the row's BOUND column (mag_op_of). */
struct mag_op {
    const char *op;
    mag_rule rule;
    unsigned data;   /* bit i: input i carries a computed value (its magnitude replaces it);
                        other inputs (shape, axes, indices, bounds) are passed as they are */
    double lipschitz; /* MAG_LIPSCHITZ: sup|f'| at the node's attributes */
    int roundings;
    const char *none; /* MAG_NONE: why the op has no first-order bound */
};
static const struct mag_op k_mag_ops[] = {
    {"Conv", MAG_SAME, 0x7, 0, 1, NULL},
    {"ConvTranspose", MAG_SAME, 0x7, 0, 1, NULL},
    {"MatMul", MAG_SAME, 0x3, 0, 0, NULL},
    {"Gemm", MAG_GEMM, 0x7, 0, 3, NULL},
    /* six roundings along a path: a generated BN (codegen/codegen.c lower_bn) rounds var + eps,
     * the sqrt, scale / sqrt, x - mean, the product and + B; a fold rounds fewer (the scale, the
     * shift, W·s) */
    {"BatchNormalization", MAG_BN, 0x1, 0, 6, NULL},
    {"Identity", MAG_SAME, 0x1, 0, 0, NULL},
    {"Reshape", MAG_SAME, 0x1, 0, 0, NULL},
    {"Flatten", MAG_SAME, 0x1, 0, 0, NULL},
    {"Squeeze", MAG_SAME, 0x1, 0, 0, NULL},
    {"Unsqueeze", MAG_SAME, 0x1, 0, 0, NULL},
    {"Transpose", MAG_SAME, 0x1, 0, 0, NULL},
    {"Expand", MAG_SAME, 0x1, 0, 0, NULL},
    {"Slice", MAG_SAME, 0x1, 0, 0, NULL},
    {"Gather", MAG_SAME, 0x1, 0, 0, NULL},
    {"Concat", MAG_SAME, ~0u, 0, 0, NULL},
    {"MaxPool", MAG_SAME, 0x1, 0, 0, NULL},
    {"GlobalMaxPool", MAG_SAME, 0x1, 0, 0, NULL},
    {"AveragePool", MAG_SAME, 0x1, 0, 1, NULL},
    {"GlobalAveragePool", MAG_SAME, 0x1, 0, 1, NULL},
    /* the attention pattern (docs/codegen.md "Verification bound", attention): a cast to the same
     * type, an inference dropout and a selection copy values; the softmax's own rounding is its
     * max-subtraction, exp (a few ulps), the division, and its sum's terms (reduction_terms) */
    {"Cast", MAG_SAME, 0x1, 0, 0, NULL},
    {"Dropout", MAG_SAME, 0x1, 0, 0, NULL},
    {"Where", MAG_WHERE, 0x6, 0, 0, NULL},
    {"Softmax", MAG_SOFTMAX, 0x1, 0, 6, NULL},
    {"Attention", MAG_ATTENTION, 0x7, 0, 8, NULL},
    /* elementwise ops the cpu kernels compute by hand (no op-math row): no first-order bound */
    {"Mod", MAG_NONE, 0, 0, 0, "it jumps at multiples of the divisor"},
    {"Round", MAG_NONE, 0, 0, 0, "it jumps at the half-integers"},
    {"Sign", MAG_NONE, 0, 0, 0, "it jumps at 0"},
    {"Mean", MAG_NONE, 0, 0, 0, "no rule written for it yet"},
    {"CastLike", MAG_NONE, 0, 0, 0, "no rule written for it yet"},
    {"SwiGLU", MAG_NONE, 0, 0, 0, "no rule written for it yet"},
};

/* The rule of node n: an op-math row's BOUND (graph/op_math.h; its Lipschitz constant at n's
 * attributes), else n's row of k_mag_ops. False when n has neither. */
static bool mag_op_of(const fa_node *n, struct mag_op *out)
{
    if (n->domain && n->domain[0]) return false;
    const fa_unary_math *um = fa_unary_math_find(n->op_type);
    const fa_binary_math *bm = um ? NULL : fa_binary_math_find(n->op_type);
    if (um || bm) {
        fa_op_bound ob;
        if (um) {
            double p[3];
            for (int k = 0; k < 3; k++)
                p[k] = um->attr[k] ? (double)fa_node_attr_float(n, um->attr[k], (float)um->def[k]) : um->def[k];
            ob = fa_unary_math_bound(um->op, p[0], p[1], p[2]);
        } else {
            ob = fa_binary_math_bound(bm->op);
        }
        static const mag_rule k_rule[] = {
            [FA_BOUND_RULE_NONE] = MAG_NONE,         [FA_BOUND_RULE_LINEAR] = MAG_SAME,
            [FA_BOUND_RULE_SUM_MAGS] = MAG_SUM_MAGS, [FA_BOUND_RULE_MAX_MAGS] = MAG_MAX_MAGS,
            [FA_BOUND_RULE_DIV] = MAG_DIV,           [FA_BOUND_RULE_POW] = MAG_POW,
            [FA_BOUND_RULE_LIPSCHITZ] = MAG_LIPSCHITZ, [FA_BOUND_RULE_EXP] = MAG_EXP,
        };
        *out = (struct mag_op){n->op_type, k_rule[ob.rule], ob.rule == FA_BOUND_RULE_POW ? 0x1u : ~0u, ob.lipschitz,
                               ob.roundings, ob.why};
        return true;
    }
    for (size_t i = 0; i < sizeof k_mag_ops / sizeof k_mag_ops[0]; i++)
        if (!strcmp(k_mag_ops[i].op, n->op_type)) {
            *out = k_mag_ops[i];
            return true;
        }
    return false;
}

static int64_t dims_product(const fa_tensor *t, int from)
{
    int64_t p = 1;
    for (int d = from; d < t->rank; d++) p *= t->dims[d] > 0 ? t->dims[d] : 1;
    return p;
}

/* Terms of the longest sum one output element of n accumulates (0: not a reduction): the
 * reduction length K of Conv (C_in/group·kH·kW: W is [C_out, C_in/group, k...]), ConvTranspose
 * (C_in/group·prod k, an upper bound: W is [C_in, C_out/group, k...]), Gemm and MatMul (the
 * inner dimension), AveragePool (the window), GlobalAveragePool (the spatial size), Sum (its
 * inputs). */
static int64_t reduction_terms(const fa_graph *g, const fa_node *n)
{
    const fa_tensor *x = fa_graph_in(g, n, 0), *w = n->n_inputs > 1 ? fa_graph_in(g, n, 1) : NULL;
    const char *op = n->op_type;
    if (!strcmp(op, "Conv") && w && w->rank >= 2) return dims_product(w, 1);
    if (!strcmp(op, "ConvTranspose") && w && w->rank >= 2) {
        int64_t group = fa_node_attr_int(n, "group", 1);
        return (w->dims[0] > 0 ? w->dims[0] : 1) / (group > 0 ? group : 1) * dims_product(w, 2);
    }
    if (!strcmp(op, "MatMul") && x && x->rank >= 1) return x->dims[x->rank - 1] > 0 ? x->dims[x->rank - 1] : 1;
    if (!strcmp(op, "Gemm") && x && x->rank == 2) {
        int64_t k = fa_node_attr_int(n, "transA", 0) ? x->dims[0] : x->dims[1];
        return k > 0 ? k : 1;
    }
    if (!strcmp(op, "AveragePool")) {
        const int64_t *ks;
        int nk = fa_node_attr_ints(n, "kernel_shape", &ks);
        int64_t p = 1;
        for (int i = 0; i < nk; i++) p *= ks[i] > 0 ? ks[i] : 1;
        return p;
    }
    if (!strcmp(op, "GlobalAveragePool") && x) return dims_product(x, 2);
    if (!strcmp(op, "Sum")) return n->n_inputs;
    /* Softmax over an axis of length L: its sum of L terms, and as many again for the fused
     * attention kernel's online softmax, which rescales its running sum and accumulator once per
     * key tile (an exp and a multiply: two roundings per tile, at most L/16 tiles of at least 16
     * keys, so L/8 < L; counted as L to stay an upper bound whatever the tile). The QK and PV
     * products count their inner dimensions as MatMuls. */
    if (!strcmp(op, "Softmax") && x && x->rank >= 1) {
        int64_t ax = fa_node_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
        if (ax < 0) ax += x->rank;
        if (ax < 0 || ax >= x->rank) return 0;
        int64_t len = n->opset >= 13 ? x->dims[ax] : dims_product(x, (int)ax);
        return 2 * (len > 0 ? len : 1);
    }
    /* Attention: the head dimension D of the dot products, the 2·St of its softmax (as above), the
     * St terms of the sum over the keys weighted by V */
    if (!strcmp(op, "Attention") && x && w && x->rank >= 3 && w->rank >= 3) {
        int64_t D = x->rank == 4 ? x->dims[3] : x->dims[2] / (fa_node_attr_int(n, "q_num_heads", 1) > 0 ? fa_node_attr_int(n, "q_num_heads", 1) : 1);
        int64_t St = w->rank == 4 ? w->dims[2] : w->dims[1];
        return (D > 0 ? D : 1) + 3 * (St > 0 ? St : 1);
    }
    return 0;
}

static bool is_contraction(const fa_node *n)
{
    return !strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "ConvTranspose") || !strcmp(n->op_type, "Gemm") ||
           !strcmp(n->op_type, "MatMul") || !strcmp(n->op_type, "Attention");
}

/* ---- building the magnitude graph ---- */

typedef struct mag_builder {
    fa_ctx *ctx;
    const fa_graph *g; /* the unfused sub-graph */
    fa_graph *m;       /* its copy plus the magnitude nodes */
    int *mag;          /* by tensor id of g: id of its magnitude tensor in m, -1 not yet */
    int n_new;         /* counter for unique names */
    bool failed;       /* an error is on ctx (an elementwise op without a row) */
    bool dry;          /* fa_apply_bound_of: whether a bound applies, constants' |.| not computed */
} mag_builder;

static int new_tensor(mag_builder *b, const char *stem, const fa_tensor *like)
{
    char name[700];
    snprintf(name, sizeof name, "%.600s__mag%d", stem, b->n_new++);
    int id = fa_graph_tensor(b->m, name);
    if (id >= 0) fa_tensor_set_shape(b->m->tensors[id], FA_DTYPE_FLOAT, like->rank, like->dims);
    return id;
}

static int const_tensor(mag_builder *b, const char *stem, fa_dtype dt, int rank, const int64_t *dims, const void *data,
                        size_t bytes)
{
    char name[700];
    snprintf(name, sizeof name, "%.600s__magc%d", stem, b->n_new++);
    int id = fa_graph_tensor(b->m, name);
    if (id < 0) return -1;
    fa_tensor *t = b->m->tensors[id];
    fa_tensor_set_shape(t, dt, rank, dims);
    if (fa_tensor_set_data(b->ctx, t, data, bytes)) return -1;
    t->flags |= FA_TENSOR_INITIALIZER | FA_TENSOR_CONST;
    return id;
}

static int scalar(mag_builder *b, float v) { return const_tensor(b, "scalar", FA_DTYPE_FLOAT, 0, NULL, &v, sizeof v); }

/* A new tensor of dtype dt and the given shape. */
static int new_typed(mag_builder *b, const char *stem, fa_dtype dt, int rank, const int64_t *dims)
{
    char name[700];
    snprintf(name, sizeof name, "%.600s__mag%d", stem, b->n_new++);
    int id = fa_graph_tensor(b->m, name);
    if (id >= 0) fa_tensor_set_shape(b->m->tensors[id], dt, rank, dims);
    return id;
}

/* A node of m: op over tensor ids ins (-1: omitted) into the new tensor out; NULL on error. */
static fa_node *add(mag_builder *b, const char *op, const int *ins, int n_in, int out)
{
    const char *in_names[16], *out_names[1] = {b->m->tensors[out]->name};
    for (int i = 0; i < n_in && i < 16; i++) in_names[i] = ins[i] >= 0 ? b->m->tensors[ins[i]]->name : "";
    char name[720];
    snprintf(name, sizeof name, "%.600s__node", out_names[0]);
    return fa_graph_add_node(b->ctx, b->m, name, op, "", n_in, in_names, 1, out_names);
}

/* out = op(a, b) shaped like `like`. -1 on error. */
static int binary(mag_builder *b, const char *op, int a, int c, const fa_tensor *like)
{
    int out = new_tensor(b, like->name, like);
    int ins[2] = {a, c};
    return out >= 0 && add(b, op, ins, 2, out) ? out : -1;
}

static int unary(mag_builder *b, const char *op, int a, const fa_tensor *like)
{
    int out = new_tensor(b, like->name, like);
    return out >= 0 && add(b, op, &a, 1, out) ? out : -1;
}

/* The magnitude of tensor t of g as a tensor id of m: |data| for a float constant, Abs(t) for a
 * graph input (its value is exact: both sides are fed the same), the producer's rule otherwise
 * (already built: topological order). -1 with *why when it has none. */
static int mag_of(mag_builder *b, int t, char *why, size_t cap)
{
    if (b->mag[t] >= 0) return b->mag[t];
    const fa_tensor *T = b->g->tensors[t];
    int id = -1;
    if ((T->flags & FA_TENSOR_CONST) && T->data) {
        if (T->dtype != FA_DTYPE_FLOAT) {
            snprintf(why, cap, "constant '%s' is %s, not float32", T->name, fa_dtype_name(T->dtype));
            return -1;
        }
        int64_t n = fa_tensor_numel(T);
        fa_blob *mb = NULL;
        if (!b->dry) { /* a dry build never reads the weight: its |W| (9 MB for GPT-2's MLP) is not made */
            mb = fa_blob_alloc(sizeof(float) * (size_t)(n > 0 ? n : 0)); /* filled here, not copied */
            if (!mb) return -1;
            float *a = (float *)fa_blob_data(mb);
            for (int64_t i = 0; i < n; i++) a[i] = fabsf(((const float *)T->data)[i]);
            /* read once: a weight read in place from the model file leaves the resident set again
             * (its kernels read their reordered copy; a plain read faults the pages back in) */
            fa_blob_release_pages(T->blob);
        }
        char name[700];
        snprintf(name, sizeof name, "%.600s__magc%d", T->name, b->n_new++);
        id = fa_graph_tensor(b->m, name);
        if (id >= 0) {
            fa_tensor *mt = b->m->tensors[id];
            fa_tensor_set_shape(mt, FA_DTYPE_FLOAT, T->rank, T->dims);
            if (mb) fa_tensor_set_blob(mt, mb);
            mt->flags |= FA_TENSOR_INITIALIZER | FA_TENSOR_CONST;
        }
        fa_blob_unref(mb);
    } else if (T->producer < 0 || !b->g->nodes[T->producer] || b->g->nodes[T->producer]->folded) {
        if (T->dtype != FA_DTYPE_FLOAT) {
            snprintf(why, cap, "input '%s' is %s, not float32", T->name, fa_dtype_name(T->dtype));
            return -1;
        }
        id = unary(b, "Abs", fa_graph_find_tensor(b->m, T->name), T);
    } else {
        snprintf(why, cap, "tensor '%s' has no magnitude", T->name);
        return -1;
    }
    b->mag[t] = id;
    return id;
}

/* Abs of the value tensor t of g (its copy in m). */
static int abs_value(mag_builder *b, int t)
{
    const fa_tensor *T = b->g->tensors[t];
    return unary(b, "Abs", fa_graph_find_tensor(b->m, T->name), T);
}

/* The magnitude node(s) of g's node n; false with why when n has no rule here. */
static bool mag_node(mag_builder *b, const fa_node *n, char *why, size_t cap)
{
    /* IsNaN makes a selection's condition (PyTorch's SDPA decomposition: Where(IsNaN(P), 0, P)):
     * no magnitude of its own; the Where reads the condition as computed (its copy in m) */
    if (!strcmp(n->op_type, "IsNaN") && !(n->domain && n->domain[0]) && n->n_outputs == 1 && n->outputs[0] >= 0 &&
        b->g->tensors[n->outputs[0]]->dtype == FA_DTYPE_BOOL)
        return true;
    struct mag_op rule;
    const struct mag_op *r = &rule;
    if (!mag_op_of(n, &rule)) {
        const fa_tensor *Y0 = fa_graph_out(b->g, n, 0);
        if (n->op && (n->op->pattern == FA_PATTERN_ELEMWISE || n->op->pattern == FA_PATTERN_BROADCAST) && Y0 &&
            Y0->dtype == FA_DTYPE_FLOAT) {
            /* an elementwise op added without its row: said, never a bound silently dropped */
            fa_ctx_error(b->ctx, FA_ERR_INTERNAL,
                         "%s '%s' is an elementwise op with no rounding-error row (a BOUND in graph/op_math.h's "
                         "tables, or a row of applier/bound.c's k_mag_ops): its cluster's verification bound "
                         "cannot be built", n->op_type, n->name);
            b->failed = true;
            return false;
        }
        snprintf(why, cap, "%s '%s' has no rounding-error rule", n->op_type, n->name);
        return false;
    }
    if (r->rule == MAG_NONE) {
        snprintf(why, cap, "%s '%s' has no first-order rounding-error bound: %s", n->op_type, n->name,
                 r->none ? r->none : "none written");
        return false;
    }
    const fa_graph *g = b->g;
    int y = n->outputs[0];
    if (y < 0) return true;
    const fa_tensor *Y = g->tensors[y];
    if (Y->dtype != FA_DTYPE_FLOAT) {
        snprintf(why, cap, "%s '%s' output '%s' is not float32", n->op_type, n->name, Y->name);
        return false;
    }
    int ins[16];
    if (n->n_inputs > 16) {
        snprintf(why, cap, "%s '%s' has %d inputs", n->op_type, n->name, n->n_inputs);
        return false;
    }
    /* the data inputs' magnitudes, the others as they are */
    for (int i = 0; i < n->n_inputs; i++) {
        int t = n->inputs[i];
        if (t < 0) ins[i] = -1;
        else if (r->data & (1u << (i < 31 ? i : 31))) ins[i] = mag_of(b, t, why, cap);
        else ins[i] = fa_graph_find_tensor(b->m, g->tensors[t]->name);
        if (t >= 0 && ins[i] < 0) return false;
    }
    int out = -1;
    switch (r->rule) {
    case MAG_SAME:
    case MAG_GEMM: {
        if (n->n_outputs > 1)
            for (int o = 1; o < n->n_outputs; o++)
                if (n->outputs[o] >= 0) {
                    snprintf(why, cap, "%s '%s' has more than one output", n->op_type, n->name);
                    return false;
                }
        out = new_tensor(b, Y->name, Y);
        fa_node *c = out >= 0 ? add(b, n->op_type, ins, n->n_inputs, out) : NULL;
        if (!c) return false;
        for (int a = 0; a < n->n_attrs; a++) {
            const fa_attr *at = &n->attrs[a];
            bool ok = r->rule == MAG_GEMM && at->type == FA_ATTR_FLOAT && (!strcmp(at->name, "alpha") || !strcmp(at->name, "beta"))
                          ? fa_node_add_attr_float(b->m, c, at->name, fabsf(at->f)) != NULL
                          : fa_node_copy_attr(b->m, c, at) != NULL;
            if (!ok) return false;
        }
        break;
    }
    case MAG_BN: {
        if (n->n_inputs < 5 || fa_node_attr_int(n, "training_mode", 0)) {
            snprintf(why, cap, "BatchNormalization '%s' is not in inference form", n->name);
            return false;
        }
        int p[5] = {ins[0], -1, -1, -1, fa_graph_find_tensor(b->m, g->tensors[n->inputs[4]]->name)};
        for (int i = 1; i <= 3; i++) {
            const fa_tensor *P = fa_graph_in(g, n, i);
            if (!P || !(P->flags & FA_TENSOR_CONST) || !P->data || P->dtype != FA_DTYPE_FLOAT) {
                snprintf(why, cap, "BatchNormalization '%s' input %d is not a float32 constant", n->name, i);
                return false;
            }
            int64_t k = fa_tensor_numel(P);
            float *a = malloc(sizeof(float) * (size_t)(k > 0 ? k : 1));
            if (!a) return false;
            for (int64_t j = 0; j < k; j++) a[j] = (i == 3 ? -1.0f : 1.0f) * fabsf(((const float *)P->data)[j]);
            p[i] = const_tensor(b, P->name, FA_DTYPE_FLOAT, P->rank, P->dims, a, sizeof(float) * (size_t)k);
            free(a);
            if (p[i] < 0) return false;
        }
        out = new_tensor(b, Y->name, Y);
        fa_node *c = out >= 0 ? add(b, "BatchNormalization", p, 5, out) : NULL;
        if (!c || !fa_node_add_attr_float(b->m, c, "epsilon", fa_node_attr_float(n, "epsilon", 1e-5f))) return false;
        break;
    }
    case MAG_SUM_MAGS: out = binary(b, "Add", ins[0], ins[1], Y); break;
    case MAG_MAX_MAGS: {
        out = ins[0];
        for (int i = 1; i < n->n_inputs && out >= 0; i++)
            if (ins[i] >= 0) out = binary(b, "Max", out, ins[i], Y);
        if (out >= 0 && n->n_inputs == 1) out = unary(b, "Identity", out, Y);
        break;
    }
    case MAG_NONE: break; /* returned above */
    case MAG_LIPSCHITZ: {
        double L = r->lipschitz;
        int lm = L == 1.0 ? ins[0] : binary(b, "Mul", ins[0], scalar(b, (float)L), Y);
        int ay = lm >= 0 ? abs_value(b, y) : -1;
        out = ay >= 0 ? binary(b, "Add", lm, ay, Y) : -1;
        break;
    }
    case MAG_EXP: {
        int one = scalar(b, 1.0f), ay = abs_value(b, y);
        int s = one >= 0 ? binary(b, "Add", ins[0], one, Y) : -1;
        out = s >= 0 && ay >= 0 ? binary(b, "Mul", ay, s, Y) : -1;
        break;
    }
    case MAG_POW: {
        double pv;
        const fa_tensor *P = fa_graph_in(g, n, 1);
        if (!P || !(P->flags & FA_TENSOR_CONST) || !P->data || fa_tensor_numel(P) != 1 ||
            !((pv = fa_load_as_double(P->data, P->dtype, 0)) >= 1.0) || !isfinite(pv)) {
            snprintf(why, cap, "Pow '%s' has no constant exponent >= 1", n->name);
            return false;
        }
        int e = scalar(b, (float)pv), k = scalar(b, (float)fabs(pv));
        int pw = e >= 0 ? binary(b, "Pow", ins[0], e, Y) : -1;
        int sc = pw >= 0 && k >= 0 ? binary(b, "Mul", pw, k, Y) : -1;
        int ay = sc >= 0 ? abs_value(b, y) : -1;
        out = ay >= 0 ? binary(b, "Add", sc, ay, Y) : -1;
        break;
    }
    case MAG_WHERE: {
        int ins3[3] = {ins[0], ins[1], ins[2]};
        out = new_tensor(b, Y->name, Y);
        if (out >= 0 && !add(b, "Where", ins3, 3, out)) out = -1;
        break;
    }
    case MAG_SOFTMAX: {
        /* first order in the scores' errors δs (|δs| <= c·M(s)): δp_j = p_j·(δs_j - Σ_k p_k·δs_k),
         * so |δp| <= c·p·(M(s) + Σ p·M(s)); the softmax's own rounding adds c·p (c >= its γ).
         * Where p = 0 (a key masked with -inf, or an exp that underflowed in both computations)
         * p·M(s) is 0, also when M(s) is infinite. */
        const fa_tensor *X = fa_graph_in(g, n, 0);
        int64_t ax = fa_node_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
        if (ax < 0) ax += X->rank;
        if (ax != X->rank - 1 && n->opset < 13) {
            snprintf(why, cap, "Softmax '%s' before opset 13 over axis %lld of a rank-%d input", n->name, (long long)ax,
                     X->rank);
            return false;
        }
        int p = fa_graph_find_tensor(b->m, Y->name), zero = scalar(b, 0.0f), one = scalar(b, 1.0f);
        int z = zero >= 0 ? new_typed(b, Y->name, FA_DTYPE_BOOL, Y->rank, Y->dims) : -1;
        int ez[2] = {p, zero};
        if (z < 0 || !add(b, "Equal", ez, 2, z)) break;
        int pm = binary(b, "Mul", p, ins[0], Y);
        int sel[3] = {z, zero, pm};
        int pm0 = pm >= 0 ? new_tensor(b, Y->name, Y) : -1;
        if (pm0 < 0 || !add(b, "Where", sel, 3, pm0)) break;
        int64_t rd[FA_MAX_RANK];
        memcpy(rd, Y->dims, sizeof rd);
        rd[ax] = 1;
        int r = new_typed(b, Y->name, FA_DTYPE_FLOAT, Y->rank, rd);
        fa_node *rs = NULL;
        if (r >= 0 && fa_graph_opset(b->m, "") >= 13) {
            int64_t axes[1] = {ax}, ad[1] = {1};
            int at = const_tensor(b, "axes", FA_DTYPE_INT64, 1, ad, axes, sizeof axes);
            int ri[2] = {pm0, at};
            rs = at >= 0 ? add(b, "ReduceSum", ri, 2, r) : NULL;
        } else if (r >= 0) {
            rs = add(b, "ReduceSum", &pm0, 1, r);
            if (rs && !fa_node_add_attr_ints(b->m, rs, "axes", (int64_t[]){ax}, 1)) rs = NULL;
        }
        if (!rs) break;
        int u = binary(b, "Add", ins[0], r, Y);
        int u1 = u >= 0 ? binary(b, "Add", u, one, Y) : -1;
        int pu = u1 >= 0 ? binary(b, "Mul", p, u1, Y) : -1;
        int sel2[3] = {z, zero, pu};
        out = pu >= 0 ? new_tensor(b, Y->name, Y) : -1;
        if (out >= 0 && !add(b, "Where", sel2, 3, out)) out = -1;
        break;
    }
    case MAG_ATTENTION: {
        /* The scores s = scale·q·k + mask carry |δs| <= c·σ with σ = |scale|·D·max|Q|·max|K| +
         * the largest finite |mask| (a bound of |scale|·Σ_d |q_d||k_d| + |mask| where a key is not
         * masked away; a key masked with -inf has p = 0 on both sides). With MAG_SOFTMAX's bound
         * M(p) <= p·(2σ + 1) and the sum over the keys weighted by V: |δy| <= c·(2σ + 2)·Σ_j p_j·|v_j|,
         * and Σ_j p_j·|v_j| is the Attention op itself on |V| (the same probabilities). */
        const fa_tensor *Q = fa_graph_in(g, n, 0), *K = fa_graph_in(g, n, 1);
        if (n->n_outputs > 1)
            for (int o = 1; o < n->n_outputs; o++)
                if (n->outputs[o] >= 0) {
                    snprintf(why, cap, "Attention '%s' has more than one output", n->name);
                    return false;
                }
        for (int i = 4; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0) {
                snprintf(why, cap, "Attention '%s' has a KV cache or nonpad_kv_seqlen", n->name);
                return false;
            }
        int64_t D = Q->rank == 4 ? Q->dims[3] : Q->dims[2] / (fa_node_attr_int(n, "q_num_heads", 1) > 0 ? fa_node_attr_int(n, "q_num_heads", 1) : 1);
        const fa_attr *sa = fa_node_attr(n, "scale");
        double scale = sa && sa->type == FA_ATTR_FLOAT ? fabs(sa->f) : 1.0 / sqrt((double)(D > 0 ? D : 1));
        int vals[7];
        for (int i = 0; i < n->n_inputs && i < 7; i++) /* Q, K, mask as they are; V's magnitude */
            vals[i] = n->inputs[i] < 0 ? -1 : i == 2 ? ins[2] : fa_graph_find_tensor(b->m, g->tensors[n->inputs[i]]->name);
        int a = new_tensor(b, Y->name, Y);
        fa_node *an = a >= 0 ? add(b, "Attention", vals, n->n_inputs < 4 ? n->n_inputs : 4, a) : NULL;
        for (int k = 0; an && k < n->n_attrs; k++)
            if (!fa_node_copy_attr(b->m, an, &n->attrs[k])) an = NULL;
        if (!an) break;
        int64_t none[1] = {0};
        (void)none;
        int sc[2];
        for (int k = 0; k < 2; k++) { /* max |Q|, max |K|: every axis */
            const fa_tensor *T = k ? K : Q;
            int at = k ? ins[1] : ins[0];
            sc[k] = new_typed(b, T->name, FA_DTYPE_FLOAT, 0, NULL);
            fa_node *rm = sc[k] >= 0 ? add(b, "ReduceMax", &at, 1, sc[k]) : NULL;
            if (!rm || !fa_node_add_attr_int(b->m, rm, "keepdims", 0)) sc[k] = -1;
        }
        if (sc[0] < 0 || sc[1] < 0) break;
        int qk = binary(b, "Mul", sc[0], sc[1], g->tensors[n->inputs[0]]);
        if (qk >= 0) fa_tensor_set_shape(b->m->tensors[qk], FA_DTYPE_FLOAT, 0, NULL);
        int k2 = qk >= 0 ? scalar(b, (float)(scale * (double)D)) : -1;
        int sg = k2 >= 0 ? binary(b, "Mul", qk, k2, b->m->tensors[qk]) : -1;
        if (sg < 0) break;
        if (n->n_inputs > 3 && n->inputs[3] >= 0 && g->tensors[n->inputs[3]]->dtype == FA_DTYPE_FLOAT) {
            const fa_tensor *M = g->tensors[n->inputs[3]];
            int mv = fa_graph_find_tensor(b->m, M->name), inf = scalar(b, INFINITY), zero = scalar(b, 0.0f);
            int am = unary(b, "Abs", mv, M);
            int isinf = am >= 0 ? new_typed(b, M->name, FA_DTYPE_BOOL, M->rank, M->dims) : -1;
            int ei[2] = {am, inf};
            if (isinf < 0 || !add(b, "Equal", ei, 2, isinf)) break;
            int fi[3] = {isinf, zero, am};
            int fin = new_tensor(b, M->name, M);
            if (fin < 0 || !add(b, "Where", fi, 3, fin)) break;
            int mm = new_typed(b, M->name, FA_DTYPE_FLOAT, 0, NULL);
            fa_node *rm = mm >= 0 ? add(b, "ReduceMax", &fin, 1, mm) : NULL;
            if (!rm || !fa_node_add_attr_int(b->m, rm, "keepdims", 0)) break;
            sg = binary(b, "Add", sg, mm, b->m->tensors[sg]);
            if (sg < 0) break;
        }
        int two = scalar(b, 2.0f);
        int s2 = two >= 0 ? binary(b, "Mul", sg, two, b->m->tensors[sg]) : -1;
        int s3 = s2 >= 0 ? binary(b, "Add", s2, two, b->m->tensors[sg]) : -1;
        out = s3 >= 0 ? binary(b, "Mul", a, s3, Y) : -1;
        break;
    }
    case MAG_DIV: {
        int bv = fa_graph_find_tensor(b->m, g->tensors[n->inputs[1]]->name);
        int ab = unary(b, "Abs", bv, g->tensors[n->inputs[1]]);
        int ay = ab >= 0 ? abs_value(b, y) : -1;
        int t1 = ay >= 0 ? binary(b, "Mul", ay, ins[1], Y) : -1;
        int t2 = t1 >= 0 ? binary(b, "Add", ins[0], t1, Y) : -1;
        out = t2 >= 0 ? binary(b, "Div", t2, ab, Y) : -1;
        break;
    }
    }
    if (out < 0) {
        if (!why[0]) snprintf(why, cap, "out of memory");
        return false;
    }
    b->mag[y] = out;
    return true;
}

static fa_status bound_build(fa_ctx *ctx, const fa_graph *gu, fa_apply_bound *out, fa_graph **gm, bool dry, char *why,
                             size_t cap)
{
    *gm = NULL;
    why[0] = 0;
    memset(out, 0, sizeof *out);
    /* the depth: the most rounding errors on any path, reductions counted by their terms */
    int64_t *depth = calloc((size_t)gu->n_tensors + 1, sizeof(int64_t));
    int *mag = malloc(sizeof(int) * (size_t)(gu->n_tensors + 1));
    if (!depth || !mag) {
        free(depth);
        free(mag);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    bool contraction = false;
    int64_t deepest = 0, elements = 0;
    for (int k = 0; k < gu->n_topo; k++) {
        const fa_node *n = gu->nodes[gu->topo[k]];
        struct mag_op rule;
        const struct mag_op *r = mag_op_of(n, &rule) ? &rule : NULL;
        contraction |= is_contraction(n);
        int64_t d = 0;
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0 && depth[n->inputs[i]] > d) d = depth[n->inputs[i]];
        d += reduction_terms(gu, n) + (r ? r->roundings : 0);
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) depth[n->outputs[o]] = d;
    }
    for (int i = 0; i < gu->n_outputs; i++) {
        const fa_tensor *T = gu->tensors[gu->outputs[i]];
        if (depth[T->id] > deepest) deepest = depth[T->id];
        elements += fa_tensor_numel(T) > 0 ? fa_tensor_numel(T) : 0;
    }
    free(depth);
    if (!contraction) {
        free(mag);
        snprintf(why, cap, "no reduction is reassociated");
        return FA_OK;
    }
    /* u = 2^-24 (binary32, round to nearest). Higham & Mary, "A New Approach to Probabilistic
     * Rounding Error Analysis", SIAM J. Sci. Comput. 41(5), 2019: for an inner product of length
     * n, |ŷ - y| <= γ̃_n(λ)·|a|ᵀ|b| with γ̃_n(λ) = exp(λ·sqrt(n)·u + n·u²/(1-u)) - 1, failing with
     * probability at most n·2·exp(-λ²(1-u)²/2) (rounding errors independent, mean zero). λ is
     * chosen so that the union over every output element of both computations fails with
     * probability <= 1e-6: λ = sqrt(2·ln(4·N·n / 1e-6)) / (1 - u). */
    const double u = ldexp(1.0, -24), delta = 1e-6;
    double n = (double)(deepest > 1 ? deepest : 1), N = (double)(elements > 1 ? elements : 1);
    out->applies = true;
    out->depth = deepest;
    out->lambda = sqrt(2.0 * log(4.0 * N * n / delta)) / (1.0 - u);
    out->gamma = exp(out->lambda * sqrt(n) * u + n * u * u / (1.0 - u)) - 1.0;
    out->gamma_det = n * u < 1 ? n * u / (1.0 - n * u) : INFINITY;

    mag_builder b = {ctx, gu, fa_graph_create(gu->name), mag, 0, false, dry};
    fa_status s = b.m ? FA_OK : fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    for (int i = 0; i < gu->n_tensors; i++) mag[i] = -1;
    for (int i = 0; i < gu->n_opsets && !s; i++) s = fa_graph_set_opset(ctx, b.m, gu->opsets[i].domain, gu->opsets[i].version);
    /* the values: a copy of gu (its inputs, constants and nodes) */
    for (int i = 0; i < gu->n_tensors && !s; i++) {
        const fa_tensor *T = gu->tensors[i];
        int id = fa_graph_tensor(b.m, T->name);
        if (id < 0) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        else {
            fa_tensor_set_shape(b.m->tensors[id], T->dtype, T->rank, T->dims);
            if ((T->flags & FA_TENSOR_CONST) && T->data) {
                s = fa_tensor_share_data(ctx, b.m->tensors[id], T);
                b.m->tensors[id]->flags |= FA_TENSOR_INITIALIZER | FA_TENSOR_CONST;
            }
        }
    }
    for (int i = 0; i < gu->n_inputs && !s; i++) s = fa_graph_add_input(ctx, b.m, fa_graph_find_tensor(b.m, gu->tensors[gu->inputs[i]]->name));
    for (int k = 0; k < gu->n_topo && !s; k++) {
        const fa_node *n = gu->nodes[gu->topo[k]];
        const char *ins[64], *outs[16];
        if (n->n_inputs > 64 || n->n_outputs > 16) {
            snprintf(why, cap, "%s '%s' has too many inputs or outputs", n->op_type, n->name);
            break;
        }
        for (int i = 0; i < n->n_inputs; i++) ins[i] = n->inputs[i] >= 0 ? gu->tensors[n->inputs[i]]->name : "";
        for (int i = 0; i < n->n_outputs; i++) outs[i] = n->outputs[i] >= 0 ? gu->tensors[n->outputs[i]]->name : "";
        fa_node *c = fa_graph_add_node(ctx, b.m, n->name, n->op_type, n->domain, n->n_inputs, ins, n->n_outputs, outs);
        for (int a = 0; c && a < n->n_attrs; a++)
            if (!fa_node_copy_attr(b.m, c, &n->attrs[a])) c = NULL;
        if (!c) s = fa_ctx_status(ctx) ? fa_ctx_status(ctx) : fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    /* the magnitudes, node by node */
    for (int k = 0; k < gu->n_topo && !s && !why[0]; k++)
        if (!mag_node(&b, gu->nodes[gu->topo[k]], why, cap)) {
            if (b.failed) s = fa_ctx_status(ctx);
            else if (!why[0]) snprintf(why, cap, "out of memory");
        }
    for (int i = 0; i < gu->n_outputs && !s && !why[0]; i++) {
        int t = gu->outputs[i];
        int id = b.mag[t] >= 0 ? b.mag[t] : mag_of(&b, t, why, cap);
        if (id >= 0) s = fa_graph_add_output(ctx, b.m, id);
    }
    if (!s && !why[0]) s = fa_graph_index(ctx, b.m);
    free(mag);
    if (s || why[0]) {
        fa_graph_free(b.m);
        out->applies = false;
        return s;
    }
    if (dry) fa_graph_free(b.m);
    else *gm = b.m;
    return FA_OK;
}

fa_status fa_apply_bound_graph(fa_ctx *ctx, const fa_graph *gu, fa_apply_bound *out, fa_graph **gm, char *why, size_t cap)
{
    return bound_build(ctx, gu, out, gm, false, why, cap);
}

fa_status fa_apply_bound_of(fa_ctx *ctx, const fa_graph *gu, fa_apply_bound *out, char *why, size_t cap)
{
    fa_graph *none = NULL;
    return bound_build(ctx, gu, out, &none, true, why, cap);
}

/* One stretch [lo, hi) of a bound scan: its largest ratio and the first element that gives it
 * (at -1: none above 0), or its first element that ends the scan (stop: 1 a NaN difference or,
 * without magnitudes, a non-finite value on either side, the result INFINITY at that element; 2
 * a magnitude that overflowed, the result NaN). mag NULL: against |unfused|. */
typedef struct bound_part {
    double ratio;
    int64_t at;
    int stop;
} bound_part;

static bound_part bound_part_scan(const fa_value *fused, const fa_value *unfused, const fa_value *mag, double scale,
                                  double floor_abs, int64_t lo, int64_t hi)
{
    bound_part p = {0, -1, 0};
    for (int64_t i = lo; i < hi; i++) {
        double f = fa_apply_elem(fused, i), g = fa_apply_elem(unfused, i);
        double r;
        if (mag) {
            double m = fa_apply_elem(mag, i);
            /* equal, equal infinities (whose difference is NaN) or NaN on both sides */
            if (f == g || (isnan(f) && isnan(g))) continue;
            double d = fabs(f - g);
            if (isnan(d)) {
                p.stop = 1;
                p.at = i;
                return p;
            }
            if (!isfinite(m)) { /* the magnitude overflowed: no bound */
                p.stop = 2;
                return p;
            }
            r = d / (scale * m + floor_abs);
        } else {
            if (f == g) continue;
            double d = fabs(f - g);
            if (!isfinite(d) || !isfinite(g)) { /* NaN or an infinity on either side: the full check decides */
                p.stop = 1;
                p.at = i;
                return p;
            }
            r = d / (scale * fabs(g) + floor_abs);
        }
        if (r > p.ratio) {
            p.ratio = r;
            p.at = i;
        }
    }
    return p;
}

/* The scan of ne elements in stretches over the calling thread's OpenMP team (the run's
 * --threads once an executor has run), combined in element order: the result and *worst are
 * one pass's (the first stop, else the largest ratio at its first element), in a fraction of
 * the time on a deep model's hundreds of cluster outputs (issue 39). At an overflowed magnitude
 * *worst keeps the largest ratio's element before it, as one pass leaves it. */
static double bound_scan(const fa_value *fused, const fa_value *unfused, const fa_value *mag, double scale, double floor_abs,
                         int64_t ne, int64_t *worst)
{
    int64_t n_parts = (ne + FA_APPLY_SCAN_STRETCH - 1) / FA_APPLY_SCAN_STRETCH;
    bound_part one, *parts = n_parts > 1 ? malloc(sizeof *parts * (size_t)n_parts) : &one;
    if (!parts) { /* no room for the stretches: one pass */
        parts = &one;
        n_parts = 1;
    }
    if (n_parts == 1) one = bound_part_scan(fused, unfused, mag, scale, floor_abs, 0, ne);
    else {
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < n_parts; k++) {
            int64_t lo = k * FA_APPLY_SCAN_STRETCH, hi = lo + FA_APPLY_SCAN_STRETCH < ne ? lo + FA_APPLY_SCAN_STRETCH : ne;
            parts[k] = bound_part_scan(fused, unfused, mag, scale, floor_abs, lo, hi);
        }
    }
    double worst_ratio = 0;
    for (int64_t k = 0; k < n_parts; k++) {
        if (parts[k].stop == 2 && parts[k].at >= 0 && parts[k].ratio > worst_ratio) *worst = parts[k].at;
        if (parts[k].stop) {
            if (parts[k].stop == 1) *worst = parts[k].at;
            worst_ratio = parts[k].stop == 1 ? INFINITY : NAN;
            break;
        }
        if (parts[k].ratio > worst_ratio) {
            worst_ratio = parts[k].ratio;
            *worst = parts[k].at;
        }
    }
    if (parts != &one) free(parts);
    return worst_ratio;
}

double fa_apply_bound_ratio(const fa_value *fused, const fa_value *unfused, const fa_value *mag, const fa_apply_bound *bd,
                            int64_t *worst)
{
    *worst = -1;
    if (!fused || !unfused || !mag) return INFINITY;
    int64_t ne = fa_value_numel(unfused);
    if (fa_value_numel(fused) != ne || fa_value_numel(mag) != ne) return INFINITY;
    /* |f - g| <= |f - y| + |y - g| <= 2·γ̃·M: both computations' errors. M is itself computed in
     * float: a sum of non-negative terms, so its computed value is within a factor (1 - γ_depth)
     * of the exact one (Higham §3.1); the factor 1/(1 - 2·depth·u) covers it. Gradual underflow
     * adds at most 2^-149 per operation on the path (Higham §2.1, (2.8)). */
    const double u = ldexp(1.0, -24);
    double scale = 2.0 * bd->gamma / fmax(1.0 - 2.0 * (double)bd->depth * u, 0.5);
    double floor_abs = 2.0 * (double)bd->depth * ldexp(1.0, -149);
    return bound_scan(fused, unfused, mag, scale, floor_abs, ne, worst);
}

double fa_apply_bound_ratio_unfused(const fa_value *fused, const fa_value *unfused, const fa_apply_bound *bd, int64_t *worst)
{
    *worst = -1;
    if (!fused || !unfused || !bd->applies) return INFINITY;
    int64_t ne = fa_value_numel(unfused);
    if (fa_value_numel(fused) != ne) return INFINITY;
    /* fa_apply_bound_ratio accepts |f - g| <= scale·M̂ + floor. Every rule gives M >= |y| in exact
     * arithmetic (a sum or product of magnitudes dominates the value's modulus, and the rules
     * with an output term add |y|: docs/runtime.md "Verification bound"), the unfused value g is
     * within γ_n·M of y (Higham §3.1, deterministic: |g| <= (1 + γ_n)·M) and the computed M̂
     * within the factor (1 - 2·depth·u) of M. So |g|·(1 - 2·depth·u)/(1 + γ_n) <= M̂, and an
     * element within scale·that + floor is within the full check's bound. */
    const double u = ldexp(1.0, -24);
    double shrink = 1.0 - 2.0 * (double)bd->depth * u;
    if (!(shrink > 0.5) || !isfinite(bd->gamma_det)) return INFINITY; /* the magnitudes are needed */
    double scale = 2.0 * bd->gamma / (1.0 + bd->gamma_det); /* (2·γ̃/shrink)·shrink/(1 + γ_n) */
    double floor_abs = 2.0 * (double)bd->depth * ldexp(1.0, -149);
    return bound_scan(fused, unfused, NULL, scale, floor_abs, ne, worst);
}
