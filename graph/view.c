/* graph/view — strided accessors (fa_view) and the index maps of the ops that only move elements
 * (Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand, a float-to-float Cast, an
 * inference Dropout): a chain of them from a source tensor composes into one accessor of that
 * source, so a generated kernel reads through the views instead of a copy. graph/graph.h. */
#include <string.h>

#include "graph/graph.h"
#include "ops-impl.h"

static void drop_unit_terms(fa_view *v, int a)
{
    int k = 0;
    for (int t = 0; t < v->n_terms[a]; t++)
        if (v->terms[a][t].mod != 1 && v->terms[a][t].stride != 0) v->terms[a][k++] = v->terms[a][t];
    v->n_terms[a] = k;
}

void fa_view_contiguous(fa_view *v, int rank, const int64_t *dims)
{
    memset(v, 0, sizeof *v);
    v->rank = rank;
    int64_t s = 1;
    for (int a = rank - 1; a >= 0; a--) {
        v->dims[a] = dims[a];
        v->terms[a][0] = (fa_view_term){1, dims[a], s};
        v->n_terms[a] = 1;
        drop_unit_terms(v, a);
        s *= dims[a] > 0 ? dims[a] : 1;
    }
}

/* Merge the whole accessor into one axis of size prod(dims) (the row-major linear index): each
 * term of axis a gets its div multiplied by the product of the dims after a, which keeps
 * div·mod | N for every term (div·mod | dims[a] before). */
static bool merge_all(const fa_view *v, int64_t *n, fa_view_term *out, int *n_out, int cap)
{
    int64_t inner = 1;
    int k = 0;
    for (int a = v->rank - 1; a >= 0; a--) {
        for (int t = 0; t < v->n_terms[a]; t++) {
            if (k == cap) return false;
            out[k] = v->terms[a][t];
            out[k].div *= inner;
            k++;
        }
        inner *= v->dims[a];
    }
    *n = inner;
    *n_out = k;
    return true;
}

static bool add_term(fa_view *v, int a, fa_view_term t)
{
    if (t.mod == 1 || t.stride == 0) return true;
    for (int k = 0; k < v->n_terms[a]; k++) /* the same digit twice: one term of both strides */
        if (v->terms[a][k].div == t.div && v->terms[a][k].mod == t.mod) {
            v->terms[a][k].stride += t.stride;
            return true;
        }
    if (v->n_terms[a] == FA_VIEW_TERMS) return false;
    v->terms[a][v->n_terms[a]++] = t;
    return true;
}

/* Order axis a's terms by div and merge neighbours that are one digit run: (d, m, s) and
 * (d·m, m2, s·m) read the same as (d, m·m2, s) — a reshape that splits a row-major axis and
 * merges it back gives its one term again. */
static void coalesce(fa_view *v, int a)
{
    fa_view_term *t = v->terms[a];
    int n = v->n_terms[a];
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && t[j].div < t[j - 1].div; j--) {
            fa_view_term x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (k > 0 && t[i].div == t[k - 1].div * t[k - 1].mod && t[i].stride == t[k - 1].stride * t[k - 1].mod) {
            t[k - 1].mod *= t[i].mod;
            continue;
        }
        t[k++] = t[i];
    }
    v->n_terms[a] = k;
}

bool fa_view_reshape(fa_view *v, int rank, const int64_t *dims)
{
    if (rank < 0 || rank > FA_MAX_RANK) return false;
    int64_t n = 1, want = 1;
    for (int a = 0; a < rank; a++) {
        if (dims[a] < 1) return false;
        want *= dims[a];
    }
    fa_view_term terms[FA_MAX_RANK * FA_VIEW_TERMS];
    int nt = 0;
    if (!merge_all(v, &n, terms, &nt, FA_MAX_RANK * FA_VIEW_TERMS) || n != want) return false;
    fa_view r;
    memset(&r, 0, sizeof r);
    r.rank = rank;
    r.offset = v->offset;
    /* split the linear index from the right: axis a of size d2 = dims[a] holds the digits below
     * `inner` (the product of the dims after a); each term (div, mod, stride) of the rest, whose
     * coordinate is L / inner, either lies inside the axis (div·mod | d2), above it (d2 | div),
     * or straddles it (div | d2 | div·mod: split into the axis' part and the rest's part). */
    for (int a = rank - 1; a >= 0; a--) {
        int64_t d2 = dims[a];
        r.dims[a] = d2;
        int keep = 0;
        for (int t = 0; t < nt; t++) {
            fa_view_term x = terms[t];
            if (x.mod == 1 || x.stride == 0) continue;
            if ((x.div * x.mod) % d2 == 0 && x.div % d2 == 0) {
                terms[keep++] = (fa_view_term){x.div / d2, x.mod, x.stride}; /* above this axis */
            } else if (d2 % (x.div * x.mod) == 0) {
                if (!add_term(&r, a, x)) return false;                        /* inside it */
            } else if (d2 % x.div == 0 && (x.div * x.mod) % d2 == 0) {      /* straddles it */
                if (!add_term(&r, a, (fa_view_term){x.div, d2 / x.div, x.stride})) return false;
                terms[keep++] = (fa_view_term){1, x.div * x.mod / d2, x.stride * (d2 / x.div)};
            } else {
                return false;
            }
        }
        nt = keep;
    }
    for (int t = 0; t < nt; t++)
        if (terms[t].mod != 1 && terms[t].stride != 0) return false; /* cannot happen: n == want */
    for (int a = 0; a < rank; a++) coalesce(&r, a);
    *v = r;
    return true;
}

bool fa_view_permute(fa_view *v, const int64_t *perm)
{
    fa_view r = *v;
    bool seen[FA_MAX_RANK] = {false};
    for (int a = 0; a < v->rank; a++) {
        int64_t p = perm[a];
        if (p < 0 || p >= v->rank || seen[p]) return false;
        seen[p] = true;
        r.dims[a] = v->dims[p];
        r.n_terms[a] = v->n_terms[p];
        memcpy(r.terms[a], v->terms[p], sizeof r.terms[a]);
    }
    *v = r;
    return true;
}

bool fa_view_expand(fa_view *v, int rank, const int64_t *dims)
{
    if (rank < v->rank || rank > FA_MAX_RANK) return false;
    fa_view r;
    memset(&r, 0, sizeof r);
    r.rank = rank;
    r.offset = v->offset;
    int lead = rank - v->rank;
    for (int a = 0; a < rank; a++) {
        r.dims[a] = dims[a];
        if (a < lead) continue;
        int s = a - lead;
        if (v->dims[s] == dims[a]) {
            r.n_terms[a] = v->n_terms[s];
            memcpy(r.terms[a], v->terms[s], sizeof r.terms[a]);
        } else if (v->dims[s] != 1) {
            return false;
        }
    }
    *v = r;
    return true;
}

bool fa_view_axis_stride(const fa_view *v, int axis, int64_t *stride)
{
    if (axis < 0 || axis >= v->rank) return false;
    if (v->n_terms[axis] == 0 || v->dims[axis] == 1) {
        *stride = 0;
        return true;
    }
    const fa_view_term *t = &v->terms[axis][0];
    if (v->n_terms[axis] != 1 || t->div != 1 || t->mod != v->dims[axis]) return false;
    *stride = t->stride;
    return true;
}

int64_t fa_view_offset_at(const fa_view *v, const int64_t *c)
{
    int64_t off = v->offset;
    for (int a = 0; a < v->rank; a++)
        for (int t = 0; t < v->n_terms[a]; t++) {
            const fa_view_term *x = &v->terms[a][t];
            off += ((c[a] / x->div) % x->mod) * x->stride;
        }
    return off;
}

bool fa_view_through(const fa_graph *g, const fa_node *n, fa_view *v)
{
    if (!n->op || !n->op->view || n->n_inputs < 1 || n->n_outputs < 1) return false;
    const fa_tensor *x = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0);
    if (!x || !y || x->rank < 0 || y->rank < 0 || x->rank != v->rank) return false;
    for (int a = 0; a < x->rank; a++)
        if (x->dims[a] != v->dims[a]) return false;
    for (int a = 0; a < y->rank; a++)
        if (y->dims[a] < 1) return false;
    return n->op->view(g, n, v);
}

/* ---- the index maps (fa_op.view of the registry rows) ---- */

/* Identity, Reshape, Flatten, Squeeze, Unsqueeze: the linear order is kept, the shape is the
 * inferred output's. */
bool fa_view_op_reshape(const fa_graph *g, const fa_node *n, fa_view *v)
{
    const fa_tensor *y = fa_graph_out(g, n, 0);
    return fa_view_reshape(v, y->rank, y->dims);
}

/* Transpose: output axis i is input axis perm[i] (default: the axes reversed). */
bool fa_view_op_transpose(const fa_graph *g, const fa_node *n, fa_view *v)
{
    (void)g;
    const int64_t *perm = NULL;
    int np = fa_node_attr_ints(n, "perm", &perm);
    int64_t rev[FA_MAX_RANK];
    if (np == 0) {
        for (int a = 0; a < v->rank; a++) rev[a] = v->rank - 1 - a;
        perm = rev;
    } else if (np != v->rank) {
        return false;
    }
    return fa_view_permute(v, perm);
}

/* Expand: numpy broadcast to the inferred output shape. */
bool fa_view_op_expand(const fa_graph *g, const fa_node *n, fa_view *v)
{
    const fa_tensor *y = fa_graph_out(g, n, 0);
    return fa_view_expand(v, y->rank, y->dims);
}

/* Cast to the type it already has (exporters' float-to-float casts around a softmax): a copy. */
bool fa_view_op_cast(const fa_graph *g, const fa_node *n, fa_view *v)
{
    (void)v;
    const fa_tensor *x = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0);
    return x->dtype == y->dtype && x->dtype != FA_DTYPE_UNDEFINED;
}

/* Dropout in inference (training_mode absent or a constant false): output 0 is its input; the
 * optional mask output is another matter (the caller checks that nothing reads it). */
bool fa_view_op_dropout(const fa_graph *g, const fa_node *n, fa_view *v)
{
    (void)v;
    if (n->n_inputs > 2 && n->inputs[2] >= 0) {
        const fa_tensor *t = g->tensors[n->inputs[2]];
        if (!(t->flags & FA_TENSOR_CONST) || !t->data || fa_tensor_numel(t) != 1 ||
            fa_load_as_double(t->data, t->dtype, 0) != 0)
            return false;
    }
    return true;
}
