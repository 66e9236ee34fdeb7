/* codegen/codegen — C and CUDA C source for one kernel description (elementwise, horizontal, row
 * kernels for softmax/log-softmax/layer-norm/RMS-norm). Members are lowered to one value IR (loads
 * with broadcast offsets computed here, per-element expressions from one op table, row
 * reductions); two drivers (flat elementwise loop, row kernel) print it as C or CUDA.
 * The contract is codegen/codegen.h; the design is in docs/codegen.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen-impl.h"
#include "graph/op_math.h"
#include "runtime/cuda_reduce.h"
#include "runtime/layout.h"

enum { LANG_C = 0, LANG_CUDA = 1 };
enum { LV_ROW = 1, LV_FULL = 2 };               /* value depends on the row only / on (row, j) */
enum { VK_LOAD, VK_OP, VK_RED };
enum { RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_SUMSQ };

#define CG_EXPR 640

typedef struct cg_val {
    int kind;
    int level;
    int depth;                  /* reduction passes before this value is available */
    bool is_bool;
    int rank;                   /* shape of the tensor this value stands for */
    int64_t dims[FA_MAX_RANK];
    /* VK_LOAD */
    int input;                  /* index in c->inputs */
    char off[CG_EXPR];          /* elementwise: offset in terms of i; row: column offset in terms of j */
    char row_off[CG_EXPR];      /* row kernel: offset in terms of row (hoisted per row) */
    /* VK_OP: expression with argument names substituted */
    char expr[CG_EXPR];
    int a[3], na;               /* VK_OP arguments (value indices) */
    /* VK_RED */
    int red;
    int arg;
    bool needed;
} cg_val;

typedef struct cg {
    const fa_graph *g;
    const fa_kernel_desc *c;
    int prod_t;                 /* gemm_epilogue: the product's tensor id (read as in[n_inputs]); -1 */
    int64_t prod_n;             /* gemm_epilogue: the product's last dim (elements per row) */
    bool rowk;                  /* row kernel (REDUCTION) */
    /* reference shape: elementwise = largest output; row kernel = anchor input */
    int rrank;
    int64_t rdims[FA_MAX_RANK];
    int rsplit;                 /* row kernel: domain is axes [rsplit, rrank) */
    int64_t n, rows, rowlen;
    cg_val *v;
    int nv, capv;
    int *tval;                  /* tensor id -> value index or -1 */
    int *tin;                   /* tensor id -> index in c->inputs or -1 */
    int max_depth;
    const char *why;            /* static sentence when unsupported */
    char msg[512];              /* detailed message */
} cg;

/* ------------------------------------------------------------------------------------------ */
/* helpers                                                                                    */

static int cg_fail(cg *b, const char *why, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int cg_fail(cg *b, const char *why, const char *fmt, ...)
{
    if (!b->why) {
        b->why = why;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->msg, sizeof b->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int64_t prod(const int64_t *d, int lo, int hi)
{
    int64_t p = 1;
    for (int i = lo; i < hi; i++) p *= d[i];
    return p;
}

/* Does shape (rs, ds) broadcast (numpy, right-aligned) to (rt, dt)? */
static bool bcasts_to(int rs, const int64_t *ds, int rt, const int64_t *dt)
{
    if (rs > rt) {
        for (int i = 0; i < rs - rt; i++)
            if (ds[i] != 1) return false;
        ds += rs - rt;
        rs = rt;
    }
    for (int i = 0; i < rs; i++) {
        int64_t a = ds[i], t = dt[rt - rs + i];
        if (a != t && a != 1) return false;
    }
    return true;
}

/* Element strides of (rs, ds) read at the coordinates of (rt, dt) it broadcasts to. */
static void bstrides(int rs, const int64_t *ds, int rt, const int64_t *dt, int64_t *st)
{
    int64_t s = 1;
    for (int i = rt - 1; i >= 0; i--) {
        int k = i - (rt - rs);
        if (k < 0 || ds[k] == 1 || dt[i] == 1) st[i] = 0;
        else st[i] = s;
        if (k >= 0) s *= ds[k];
    }
}

static void cat(char *dst, size_t cap, const char *s)
{
    size_t n = strlen(dst);
    if (n + 1 < cap) snprintf(dst + n, cap - n, "%s", s);
}

/* Closed-form offset of linear index `var` over dims[lo..hi) with strides st[lo..hi):
 * sum_d ((var / inner_d) % dims[d]) * st[d]; "var" when the strides are the contiguous ones. */
static void offset_expr(char *out, size_t cap, const char *var, const int64_t *dims, int lo, int hi,
                        const int64_t *st)
{
    out[0] = 0;
    bool contiguous = true, any = false;
    int64_t scale = 0; /* strides = scale x the contiguous ones: offset = var * scale */
    for (int d = lo; d < hi; d++) {
        if (dims[d] == 1) continue;
        int64_t inner = prod(dims, d + 1, hi);
        if (st[d] != 0) any = true;
        if (scale == 0 && st[d] % inner == 0) scale = st[d] / inner;
        if (scale == 0 || st[d] != inner * scale) contiguous = false;
    }
    if (!any) {
        snprintf(out, cap, "0");
        return;
    }
    if (contiguous && scale == 1) {
        snprintf(out, cap, "%s", var);
        return;
    }
    if (contiguous) {
        snprintf(out, cap, "%s * %lld", var, (long long)scale);
        return;
    }
    for (int d = lo; d < hi; d++) {
        if (dims[d] == 1 || st[d] == 0) continue;
        int64_t inner = prod(dims, d + 1, hi), outer = prod(dims, lo, d);
        char t[160];
        char q[64];
        if (inner == 1) snprintf(q, sizeof q, "%s", var);
        else snprintf(q, sizeof q, "%s / %lld", var, (long long)inner);
        if (outer == 1) snprintf(t, sizeof t, "(%s)", q);
        else snprintf(t, sizeof t, "((%s) %% %lld)", q, (long long)dims[d]);
        if (out[0]) cat(out, cap, " + ");
        cat(out, cap, t);
        if (st[d] != 1) {
            char m[40];
            snprintf(m, sizeof m, " * %lld", (long long)st[d]);
            cat(out, cap, m);
        }
    }
}

/* A float literal that C and CUDA read back to the same float: "%.9g" + ".0" when needed + 'f'. */
static void flit(char *out, size_t cap, double v, int lang)
{
    float f = (float)v;
    if (isnan(f)) {
        snprintf(out, cap, lang == LANG_CUDA ? "__int_as_float(0x7fc00000)" : "NAN");
        return;
    }
    if (isinf(f)) {
        snprintf(out, cap, "%s%s", f < 0 ? "-" : "", lang == LANG_CUDA ? "__int_as_float(0x7f800000)" : "INFINITY");
        return;
    }
    char t[48];
    snprintf(t, sizeof t, "%.9g", (double)f);
    if (!strpbrk(t, ".e")) cat(t, sizeof t, ".0");
    snprintf(out, cap, "%s%sf", f < 0 ? "(" : "", t);
    if (f < 0) cat(out, cap, ")");
}

/* Expand a template: $0 $1 $2 -> argument names, $a $b $g -> float literals of p[0..2]. */
static void expand(char *out, size_t cap, const char *tpl, const char *const *args, const double *p, int lang)
{
    out[0] = 0;
    size_t n = 0;
    for (const char *s = tpl; *s && n + 1 < cap; s++) {
        if (*s == '$' && s[1]) {
            char t[64];
            const char *r = "";
            s++;
            if (*s >= '0' && *s <= '2') r = args[*s - '0'];
            else {
                int k = *s == 'a' ? 0 : *s == 'b' ? 1 : 2;
                flit(t, sizeof t, p[k], lang);
                r = t;
            }
            size_t l = strlen(r);
            if (n + l + 1 >= cap) break;
            memcpy(out + n, r, l);
            n += l;
            out[n] = 0;
        } else {
            out[n++] = *s;
            out[n] = 0;
        }
    }
}

static bool const_scalar(const fa_graph *g, int tid, double *out)
{
    if (tid < 0) return false;
    const fa_tensor *t = g->tensors[tid];
    if (!(t->flags & FA_TENSOR_CONST) || !t->data || fa_tensor_numel(t) != 1) return false;
    if (t->dtype != FA_DTYPE_FLOAT && t->dtype != FA_DTYPE_DOUBLE && t->dtype != FA_DTYPE_INT32 &&
        t->dtype != FA_DTYPE_INT64)
        return false;
    *out = fa_load_as_double(t->data, t->dtype, 0);
    return true;
}

/* ------------------------------------------------------------------------------------------ */
/* value IR                                                                                   */

static int new_val(cg *b, int kind)
{
    if (b->nv == b->capv) {
        int cap = b->capv ? b->capv * 2 : 64;
        cg_val *nvv = realloc(b->v, (size_t)cap * sizeof *nvv);
        if (!nvv) return cg_fail(b, "out of memory", "out of memory growing the value table");
        b->v = nvv;
        b->capv = cap;
    }
    cg_val *v = &b->v[b->nv];
    memset(v, 0, sizeof *v);
    v->kind = kind;
    v->arg = -1;
    v->input = -1;
    return b->nv++;
}

/* Row split of a shape in the row kernel: axis a with prod(d[:a]) == rows and prod(d[a:]) ==
 * rowlen (full) or 1 (per-row). -1 when none. */
static int row_split(const cg *b, int r, const int64_t *d, bool *per_row)
{
    for (int a = 0; a <= r; a++) {
        if (prod(d, 0, a) != b->rows) continue;
        int64_t rest = prod(d, a, r);
        if (rest == b->rowlen) {
            *per_row = b->rowlen == 1;
            return a;
        }
        if (rest == 1) {
            *per_row = true;
            return a;
        }
    }
    return -1;
}

/* Load of external input k (tensor tid) at the points of a node whose output shape is (r, d). */
/* Load of cluster input k (tensor tid) read as a tensor of rank tr and dims td (its own shape, or
 * one it broadcasts as: BatchNormalization's [C] parameters read as [1, C, 1, ...]) at a
 * consumer of output shape (r, d). The load's value keeps (tr, td): every emitter derives its
 * strides from the value, never from the tensor. */
static int load_as(cg *b, int k, int tid, int tr, const int64_t *td, int r, const int64_t *d)
{
    const fa_tensor *t = b->g->tensors[tid];
    int64_t st[FA_MAX_RANK];
    char off[CG_EXPR], roff[CG_EXPR];
    int level = LV_FULL;
    roff[0] = 0;
    if (tid == b->prod_t) { /* the product, in place in the output: the same element order */
        snprintf(off, sizeof off, "i");
    } else if (!b->rowk) {
        if (!bcasts_to(tr, td, b->rrank, b->rdims))
            return cg_fail(b, "an input does not broadcast to the cluster's output shape",
                           "input '%s' does not broadcast to the cluster's output shape", t->name);
        bstrides(tr, td, b->rrank, b->rdims, st);
        offset_expr(off, sizeof off, "i", b->rdims, 0, b->rrank, st);
    } else {
        int cr;
        const int64_t *cd;
        int split;
        bool per_row = false;
        if (bcasts_to(r, d, b->rrank, b->rdims)) {
            cr = b->rrank;
            cd = b->rdims;
            split = b->rsplit;
        } else {
            split = row_split(b, r, d, &per_row);
            if (split < 0)
                return cg_fail(b, "a shape mixes rows and row elements",
                               "input '%s' is read at a shape that does not split into %lld rows of %lld",
                               t->name, (long long)b->rows, (long long)b->rowlen);
            cr = r;
            cd = d;
        }
        if (!bcasts_to(tr, td, cr, cd))
            return cg_fail(b, "an input does not broadcast to its consumer",
                           "input '%s' does not broadcast to its consumer's shape", t->name);
        bstrides(tr, td, cr, cd, st);
        offset_expr(roff, sizeof roff, "row", cd, 0, split, st);
        offset_expr(off, sizeof off, "j", cd, split, cr, st);
        if (strcmp(off, "0") == 0) level = LV_ROW;
    }
    for (int i = 0; i < b->nv; i++) { /* same input at the same offsets: one load */
        cg_val *o = &b->v[i];
        if (o->kind == VK_LOAD && o->input == k && strcmp(o->off, off) == 0 && strcmp(o->row_off, roff) == 0 &&
            o->rank == tr && !memcmp(o->dims, td, sizeof *td * (size_t)tr))
            return i;
    }
    int vi = new_val(b, VK_LOAD);
    if (vi < 0) return -1;
    cg_val *v = &b->v[vi];
    v->input = k;
    v->level = level;
    v->is_bool = t->dtype == FA_DTYPE_BOOL;
    v->rank = tr;
    memcpy(v->dims, td, sizeof *td * (size_t)tr);
    snprintf(v->off, sizeof v->off, "%s", off);
    snprintf(v->row_off, sizeof v->row_off, "%s", roff);
    return vi;
}

static int load(cg *b, int k, int tid, int r, const int64_t *d)
{
    const fa_tensor *t = b->g->tensors[tid];
    return load_as(b, k, tid, t->rank, t->dims, r, d);
}

/* Value of tensor tid as an argument of a node with output shape (r, d). */
static int arg(cg *b, const fa_node *n, int tid, int r, const int64_t *d)
{
    if (tid < 0) return cg_fail(b, "an optional input is missing", "node '%s' (%s): a required input is missing",
                                n->name, n->op_type);
    if (b->tval[tid] >= 0) {
        int vi = b->tval[tid];
        cg_val *v = &b->v[vi];
        if (!b->rowk || v->kind == VK_LOAD) return vi;
        if (v->level == LV_FULL) {
            if (prod(v->dims, 0, v->rank) != prod(d, 0, r))
                return cg_fail(b, "an intermediate is broadcast to a larger shape",
                               "node '%s' (%s) broadcasts intermediate '%s' to a larger shape", n->name,
                               n->op_type, b->g->tensors[tid]->name);
        } else { /* per-row value: its leading dims must line up with the consumer's rows */
            bool pr;
            int a = row_split(b, r, d, &pr);
            if (a < 0) return cg_fail(b, "a shape mixes rows and row elements",
                                      "node '%s' (%s): output shape does not split into rows", n->name, n->op_type);
            for (int i = 0; i < r; i++) {
                int k = i - (r - v->rank);
                int64_t vd = k < 0 ? 1 : v->dims[k];
                if (i < a ? (vd != d[i] && !(vd == 1 && d[i] == 1)) : vd != 1)
                    return cg_fail(b, "a per-row value does not line up with the rows",
                                   "node '%s' (%s): per-row value '%s' does not line up with the rows of its consumer",
                                   n->name, n->op_type, b->g->tensors[tid]->name);
            }
            if (v->rank > r)
                for (int i = 0; i < v->rank - r; i++)
                    if (v->dims[i] != 1)
                        return cg_fail(b, "a per-row value does not line up with the rows",
                                       "node '%s' (%s): per-row value '%s' has more dims than its consumer",
                                       n->name, n->op_type, b->g->tensors[tid]->name);
        }
        return vi;
    }
    if (b->tin[tid] >= 0) return load(b, b->tin[tid], tid, r, d);
    return cg_fail(b, "a member reads a tensor from outside the cluster that is not a cluster input",
                   "node '%s' (%s) reads '%s', which is neither a cluster input nor produced inside the cluster",
                   n->name, n->op_type, b->g->tensors[tid]->name);
}

/* New op value from template tpl over args a[0..na), shape (r, d). */
static int op_val(cg *b, const char *tpl, const int *a, int na, const double *p, int r, const int64_t *d, bool is_bool,
                  int lang)
{
    char names[3][24];
    const char *an[3] = {"", "", ""};
    int level = LV_ROW, depth = 0;
    for (int i = 0; i < na; i++) {
        snprintf(names[i], sizeof names[i], "v%d", a[i]);
        an[i] = names[i];
        if (b->v[a[i]].level > level) level = b->v[a[i]].level;
        if (b->v[a[i]].depth > depth) depth = b->v[a[i]].depth;
    }
    int vi = new_val(b, VK_OP);
    if (vi < 0) return -1;
    cg_val *v = &b->v[vi];
    double zero[3] = {0, 0, 0};
    expand(v->expr, sizeof v->expr, tpl, an, p ? p : zero, lang);
    for (int i = 0; i < na; i++) v->a[i] = a[i];
    v->na = na;
    v->level = level;
    v->depth = depth;
    v->is_bool = is_bool;
    v->rank = r;
    memcpy(v->dims, d, (size_t)r * sizeof *d);
    if (b->rowk && level == LV_ROW && prod(d, 0, r) != b->rows) v->level = LV_FULL; /* broadcast row value */
    return vi;
}

static int red_val(cg *b, int red, int a, int r, const int64_t *d)
{
    if (b->v[a].level != LV_FULL)
        return cg_fail(b, "a reduction reads a per-row value", "a reduction reads a value that is constant along the row");
    int vi = new_val(b, VK_RED);
    if (vi < 0) return -1;
    cg_val *v = &b->v[vi];
    v->red = red;
    v->arg = a;
    v->level = LV_ROW;
    v->depth = b->v[a].depth + 1;
    v->rank = r;
    memcpy(v->dims, d, (size_t)r * sizeof *d);
    if (v->depth > b->max_depth) b->max_depth = v->depth;
    return vi;
}

/* ------------------------------------------------------------------------------------------ */
/* op table: one entry per op type, shared by both languages                                   */

/* One member's lowering: appends the value(s) of node n (output shape (r, d)) and returns the
 * value of its output 0, or -1 (cg_fail said why). */
typedef struct cg_opdef cg_opdef;
typedef int (*cg_lower_fn)(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d);

/* What a member's inputs and outputs may be, besides float32 everywhere. */
enum {
    CG_ROWS_ONLY = 1u << 0,  /* a reduction, normalization or view: row kernels only */
    CG_BOOL_OUT = 1u << 1,   /* a comparison: a bool output read only as Where's condition */
    CG_BOOL_COND = 1u << 2,  /* Where: input 0 is bool */
    CG_POW_EXP = 1u << 3,    /* Pow: input 1 is float32 or a constant */
    CG_MORE_OUTS = 1u << 4,  /* LayerNormalization: lowers its extra outputs (Mean, InvStdDev) */
    CG_MEAN = 1u << 5,       /* Mean: the fold divided by the input count */
    CG_DROPOUT = 1u << 6,    /* Dropout: only with a constant false training_mode */
};

/* op table: one row per op type, shared by both languages; find_op's lookup and lower's dispatch
 * read only this (an op is one row: its name, its lowering, its template or attributes). */
struct cg_opdef {
    const char *name;
    cg_lower_fn lower;
    const char *tpl;            /* expression template (lower_expr); NULL: the op-math table's */
    int arity;                  /* template args (inputs), -1 variadic */
    double p[3];                /* defaults of the attributes $a $b $g */
    const char *attr[3];        /* attribute names of $a $b $g */
    unsigned flags;             /* CG_* */
    unsigned any_in;            /* bit i: input i is not data (axes, shape, Dropout's ratio and mode) */
    int red;                    /* lower_reduce: RED_* */
    fa_reduce_kind kind;        /* lower_norm: the normalization (graph/graph.h) */
};

/* The template of binary op `op` from graph/op_math.h's binary table into buf ("Sum" and
 * "Mean" fold with Add's); NULL when the op has no row or buf is too small. */
static const char *binary_tpl(const char *op, char *buf, size_t cap)
{
    const fa_binary_math *m = fa_binary_math_find(!strcmp(op, "Mean") ? "Add" : op);
    if (!m || fa_binary_math_template(m, buf, cap) >= cap) return NULL;
    return buf;
}

static int lower_expr(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d);
static int lower_pow(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d);
static int lower_fold(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d);
static int lower_view(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d);
static int lower_cast(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d);
static int lower_reduce(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d);
static int lower_norm(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d);
static int lower_bn(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d);

/* The unary ops of graph/op_math.h: their template is the table's expression (fa_unary_math_template
 * at lowering), their attributes the table's; the rest are written here. */
#define CG_UNARY_ROW_(ID, NAME, AA, DA, AB, DB, AG, DG, EXPR, BOUND) {NAME, lower_expr, NULL, 1, {DA, DB, DG}, {AA, AB, AG}},
static const cg_opdef OPS[] = {
    FA_UNARY_MATH(CG_UNARY_ROW_)
    /* the binary ops' templates are graph/op_math.h's binary table (binary_tpl) */
    {"PRelu", lower_expr, NULL, 2},
    {"Add", lower_expr, NULL, 2},
    {"Sub", lower_expr, NULL, 2},
    {"Mul", lower_expr, NULL, 2},
    {"Div", lower_expr, NULL, 2},
    {"Pow", lower_pow, NULL, 2, .flags = CG_POW_EXP},
    {"Max", lower_fold, NULL, -1},
    {"Min", lower_fold, NULL, -1},
    {"Sum", lower_fold, NULL, -1},
    {"Mean", lower_fold, NULL, -1, .flags = CG_MEAN},
    {"Where", lower_expr, "($0 ? $1 : $2)", 3, .flags = CG_BOOL_COND},
    {"Equal", lower_expr, "($0 == $1)", 2, .flags = CG_BOOL_OUT},
    {"Less", lower_expr, "($0 < $1)", 2, .flags = CG_BOOL_OUT},
    {"Greater", lower_expr, "($0 > $1)", 2, .flags = CG_BOOL_OUT},
    {"Identity", lower_view, NULL, 1},
    {"Dropout", lower_view, NULL, 1, .flags = CG_DROPOUT, .any_in = ~1u},
    {"Cast", lower_cast, NULL, 1},
    {"BatchNormalization", lower_bn, NULL, 5},
    /* reductions and normalizations (row kernels only) */
    {"ReduceSum", lower_reduce, NULL, 1, .flags = CG_ROWS_ONLY, .any_in = 0x2, .red = RED_SUM},
    {"ReduceMean", lower_reduce, NULL, 1, .flags = CG_ROWS_ONLY, .any_in = 0x2, .red = RED_MEAN},
    {"ReduceMax", lower_reduce, NULL, 1, .flags = CG_ROWS_ONLY, .any_in = 0x2, .red = RED_MAX},
    {"ReduceMin", lower_reduce, NULL, 1, .flags = CG_ROWS_ONLY, .any_in = 0x2, .red = RED_MIN},
    {"ReduceSumSquare", lower_reduce, NULL, 1, .flags = CG_ROWS_ONLY, .any_in = 0x2, .red = RED_SUMSQ},
    {"Softmax", lower_norm, NULL, 1, .flags = CG_ROWS_ONLY, .kind = FA_REDUCE_SOFTMAX},
    {"LogSoftmax", lower_norm, NULL, 1, .flags = CG_ROWS_ONLY, .kind = FA_REDUCE_LOG_SOFTMAX},
    {"LayerNormalization", lower_norm, NULL, 1, .flags = CG_ROWS_ONLY | CG_MORE_OUTS,
     .kind = FA_REDUCE_LAYER_NORM},
    {"RMSNormalization", lower_norm, NULL, 1, .flags = CG_ROWS_ONLY, .kind = FA_REDUCE_RMS_NORM},
    /* shape views (row kernels: the linear index is unchanged) */
    {"Reshape", lower_view, NULL, 1, .flags = CG_ROWS_ONLY, .any_in = 0x2},
    {"Flatten", lower_view, NULL, 1, .flags = CG_ROWS_ONLY},
    {"Squeeze", lower_view, NULL, 1, .flags = CG_ROWS_ONLY, .any_in = 0x2},
    {"Unsqueeze", lower_view, NULL, 1, .flags = CG_ROWS_ONLY, .any_in = 0x2},
};

static const cg_opdef *find_op(const fa_node *n)
{
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) return NULL;
    for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++)
        if (strcmp(OPS[i].name, n->op_type) == 0) return &OPS[i];
    return NULL;
}

/* The tensor is consumed only by cluster members and is not a graph output. */
static bool internal_only(const cg *b, int tid)
{
    if (tid < 0) return true;
    for (int i = 0; i < b->c->n_outputs; i++)
        if (b->c->outputs[i] == tid) return false;
    const int *cons;
    int nc = fa_graph_consumers(b->g, tid, &cons);
    for (int i = 0; i < nc; i++) {
        bool mem = false;
        for (int m = 0; m < b->c->n_members; m++)
            if (b->c->members[m] == cons[i]) mem = true;
        if (!mem) return false;
    }
    return true;
}

/* Reduction axes of a Reduce* node (attribute before opset 18, input 1 from 18 on). */
static int reduce_axes(const cg *b, const fa_node *n, int rank, bool *mask)
{
    memset(mask, 0, FA_MAX_RANK * sizeof *mask);
    int64_t ax[FA_MAX_RANK];
    int na = 0;
    const fa_attr *a = fa_node_attr(n, "axes");
    if (a && a->type == FA_ATTR_INTS) {
        if (a->n > FA_MAX_RANK) return -1;
        for (int i = 0; i < a->n; i++) ax[na++] = a->ints[i];
    } else if (n->n_inputs > 1 && n->inputs[1] >= 0) {
        const fa_tensor *t = b->g->tensors[n->inputs[1]];
        if (!(t->flags & FA_TENSOR_CONST) || !t->data) return -1;
        int64_t cnt = fa_tensor_numel(t);
        if (cnt < 0 || cnt > FA_MAX_RANK) return -1;
        for (int64_t i = 0; i < cnt; i++) ax[na++] = fa_f64_to_i64_sat(fa_load_as_double(t->data, t->dtype, i));
    }
    if (na == 0) {
        if (fa_node_attr_int(n, "noop_with_empty_axes", 0)) return -1;
        for (int i = 0; i < rank; i++) mask[i] = true;
        return rank;
    }
    for (int i = 0; i < na; i++) {
        int64_t x = ax[i] < 0 ? ax[i] + rank : ax[i];
        if (x < 0 || x >= rank) return -1;
        mask[x] = true;
    }
    return na;
}

/* Lower one member node: the checks every op shares (its row's flags), then its row's lowering;
 * sets b->tval for its outputs. 0 or -1. */
static int lower(cg *b, const fa_node *n, int lang)
{
    const fa_graph *g = b->g;
    const cg_opdef *od = find_op(n);
    if (!od)
        return cg_fail(b, "a member op has no expression emitter", "node '%s': op %s has no code emitter", n->name,
                       n->op_type);
    const fa_tensor *y = fa_graph_out(g, n, 0);
    if (!y || y->rank < 0) return cg_fail(b, "a member output has no known shape", "node '%s': output shape unknown", n->name);
    for (int i = 0; i < y->rank; i++)
        if (y->dims[i] < 0)
            return cg_fail(b, "a member output has a dynamic shape", "node '%s': output '%s' has a dynamic dim",
                           n->name, y->name);
    const char *op = n->op_type;
    bool cmp = od->flags & CG_BOOL_OUT;
    /* dtypes: fp32 everywhere except Where's condition and the comparisons producing it */
    for (int i = 0; i < n->n_inputs; i++) {
        const fa_tensor *t = fa_graph_in(g, n, i);
        if (!t) continue;
        bool ok = t->dtype == FA_DTYPE_FLOAT;
        if ((od->flags & CG_BOOL_COND) && i == 0) ok = t->dtype == FA_DTYPE_BOOL;
        if ((od->flags & CG_POW_EXP) && i == 1) ok = t->dtype == FA_DTYPE_FLOAT || (t->flags & FA_TENSOR_CONST);
        if (i < 32 && (od->any_in >> i) & 1u) ok = true;
        if (!ok)
            return cg_fail(b, "a member touches a tensor that is not float32",
                           "node '%s' (%s): input '%s' is %s (generated kernels are float32 only)", n->name, op,
                           t->name, fa_dtype_name(t->dtype));
    }
    if (y->dtype != (cmp ? FA_DTYPE_BOOL : FA_DTYPE_FLOAT))
        return cg_fail(b, "a member touches a tensor that is not float32",
                       "node '%s' (%s): output '%s' is %s (generated kernels are float32 only)", n->name, op, y->name,
                       fa_dtype_name(y->dtype));
    if (cmp && !internal_only(b, y->id))
        return cg_fail(b, "a comparison is used other than as Where's condition",
                       "node '%s' (%s): its boolean output leaves the cluster", n->name, op);
    for (int i = 1; i < n->n_outputs; i++) { /* extra outputs: only LayerNormalization lowers them */
        int t = n->outputs[i];
        if (t < 0 || (od->flags & CG_MORE_OUTS)) continue;
        const int *cons;
        bool used = fa_graph_consumers(g, t, &cons) > 0 || (g->tensors[t]->flags & FA_TENSOR_GRAPH_OUTPUT);
        for (int k = 0; k < b->c->n_outputs; k++) used |= b->c->outputs[k] == t;
        if (used)
            return cg_fail(b, "a member has a second output that is used", "node '%s' (%s): output %d is used",
                           n->name, op, i);
    }
    int r = y->rank;
    const int64_t *d = y->dims;
    if (!b->rowk && (od->flags & CG_ROWS_ONLY))
        return cg_fail(b, "elementwise clusters hold elementwise ops only",
                       "node '%s' (%s) is not elementwise (only REDUCTION clusters take reductions and views)", n->name,
                       op);
    if (!b->rowk && !bcasts_to(r, d, b->rrank, b->rdims))
        return cg_fail(b, "a member's output does not broadcast to the cluster's output shape",
                       "node '%s' (%s): output shape does not broadcast to the cluster's output shape", n->name, op);
    int out = od->lower(b, n, od, lang, r, d);
    if (out < 0) return -1;
    b->tval[y->id] = out;
    return 0;
}

/* Identity, an inference Dropout and the shape views: the input's value (a row kernel re-shapes
 * an intermediate's). */
static int lower_view(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d)
{
    const fa_graph *g = b->g;
    const fa_tensor *y = fa_graph_out(g, n, 0);
    if (od->flags & CG_DROPOUT) {
        double tm = 0;
        if (n->n_inputs > 2 && n->inputs[2] >= 0 && (!const_scalar(g, n->inputs[2], &tm) || tm != 0))
            return cg_fail(b, "Dropout in training mode", "node '%s': Dropout training_mode is not a constant false",
                           n->name);
    }
    const fa_tensor *x = fa_graph_in(g, n, 0);
    if (!x) return cg_fail(b, "an optional input is missing", "node '%s': input missing", n->name);
    if (fa_tensor_numel(x) != fa_tensor_numel(y))
        return cg_fail(b, "a view changes the element count", "node '%s' (%s) changes the element count", n->name,
                       n->op_type);
    int out = arg(b, n, x->id, x->rank, x->dims);
    if (out < 0) return -1;
    if (b->rowk && b->v[out].kind != VK_LOAD) { /* re-shaped view of an intermediate */
        int vi = op_val(b, "$0", &out, 1, NULL, r, d, b->v[out].is_bool, lang);
        if (vi < 0) return -1;
        b->v[vi].level = b->v[out].level;
        out = vi;
    }
    return out;
}

/* Cast to float32: the input's value. */
static int lower_cast(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d)
{
    (void)od;
    (void)lang;
    int64_t to = fa_node_attr_int(n, "to", 0);
    if (to != FA_DTYPE_FLOAT)
        return cg_fail(b, "a member touches a tensor that is not float32", "node '%s': Cast to a non-float type", n->name);
    return arg(b, n, n->inputs[0], r, d);
}

/* Pow: a constant exponent 2, 3, 0.5 or 1 as products or a root, else powf. */
static int lower_pow(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d)
{
    (void)od;
    const fa_graph *g = b->g;
    int out;
    double e;
    int a[2];
    a[0] = arg(b, n, n->inputs[0], r, d);
    if (a[0] < 0) return -1;
    if (const_scalar(g, n->inputs[1], &e) && (e == 2 || e == 3 || e == 0.5 || e == 1))
        out = op_val(b, e == 2 ? "($0 * $0)" : e == 3 ? "($0 * $0 * $0)" : e == 0.5 ? "sqrtf($0)" : "$0", a, 1,
                     NULL, r, d, false, lang);
    else {
        if (g->tensors[n->inputs[1]]->dtype != FA_DTYPE_FLOAT)
            return cg_fail(b, "a member touches a tensor that is not float32",
                           "node '%s': Pow exponent is not float32", n->name);
        a[1] = arg(b, n, n->inputs[1], r, d);
        if (a[1] < 0) return -1;
        char pt[256];
        const char *ptpl = binary_tpl("Pow", pt, sizeof pt);
        if (!ptpl) return cg_fail(b, "a member op's expression is too long", "node '%s': expression of Pow", n->name);
        out = op_val(b, ptpl, a, 2, NULL, r, d, false, lang);
    }
    return out;
}

/* Max Min Sum Mean: a pairwise fold of the binary expression. */
static int lower_fold(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d)
{
    const char *op = n->op_type;
    int acc = arg(b, n, n->inputs[0], r, d);
    if (acc < 0) return -1;
    char bt[256];
    const char *tpl = binary_tpl(op, bt, sizeof bt);
    if (!tpl) return cg_fail(b, "a member op's expression is too long", "node '%s': expression of %s", n->name, op);
    for (int i = 1; i < n->n_inputs; i++) {
        int a[2] = {acc, arg(b, n, n->inputs[i], r, d)};
        if (a[1] < 0) return -1;
        acc = op_val(b, tpl, a, 2, NULL, r, d, false, lang);
        if (acc < 0) return -1;
    }
    if ((od->flags & CG_MEAN) && n->n_inputs > 1) {
        double p[3] = {(double)n->n_inputs, 0, 0};
        acc = op_val(b, "($0 / $a)", &acc, 1, p, r, d, false, lang);
    } else if (n->n_inputs == 1) {
        acc = op_val(b, "$0", &acc, 1, NULL, r, d, false, lang);
    }
    return acc;
}

/* Reduce*: the row's reduction od->red over the trailing axes. */
static int lower_reduce(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d)
{
    (void)lang;
    const fa_graph *g = b->g;
    const char *op = n->op_type;
    const fa_tensor *x = fa_graph_in(g, n, 0);
    bool mask[FA_MAX_RANK];
    if (reduce_axes(b, n, x->rank, mask) < 0)
        return cg_fail(b, "a reduction's axes are not constant", "node '%s' (%s): axes unknown or empty no-op", n->name, op);
    int a0 = -1;
    for (int i = 0; i < x->rank; i++)
        if (mask[i] && a0 < 0) a0 = i;
    bool suffix = a0 >= 0;
    for (int i = 0; i < x->rank; i++)
        if (mask[i] != (suffix && i >= a0)) suffix = false;
    if (!suffix || prod(x->dims, 0, a0) != b->rows || prod(x->dims, a0, x->rank) != b->rowlen)
        return cg_fail(b, "a reduction is not over the cluster's row domain",
                       "node '%s' (%s) does not reduce exactly the %lld trailing elements of each of %lld rows",
                       n->name, op, (long long)b->rowlen, (long long)b->rows);
    int xa = arg(b, n, x->id, x->rank, x->dims);
    if (xa < 0) return -1;
    return red_val(b, od->red, xa, r, d);
}

/* Softmax, LogSoftmax, LayerNormalization, RMSNormalization as row values. */
static int lower_norm(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d)
{
    (void)r;
    (void)d;
    const fa_graph *g = b->g;
    const char *op = n->op_type;
    int out = -1;
    const fa_tensor *x = fa_graph_in(g, n, 0);
    int opset = n->opset > 0 ? n->opset : 23;
    bool sm = od->kind == FA_REDUCE_SOFTMAX || od->kind == FA_REDUCE_LOG_SOFTMAX;
    int64_t ax = fa_node_attr_int(n, "axis", sm && opset < 13 ? 1 : -1);
    if (ax < 0) ax += x->rank;
    if (ax < 0 || ax >= x->rank || (x->rank == 0))
        return cg_fail(b, "a normalization axis is out of range", "node '%s' (%s): axis out of range", n->name, op);
    if (sm && opset >= 13 && prod(x->dims, ax + 1, x->rank) != 1)
        return cg_fail(b, "softmax over an inner axis is not a row reduction",
                       "node '%s' (%s): axis %lld is not the last non-unit axis", n->name, op, (long long)ax);
    if (prod(x->dims, 0, (int)ax) != b->rows || prod(x->dims, (int)ax, x->rank) != b->rowlen)
        return cg_fail(b, "a reduction is not over the cluster's row domain",
                       "node '%s' (%s) does not normalize %lld rows of %lld", n->name, op, (long long)b->rows,
                       (long long)b->rowlen);
    int64_t rd[FA_MAX_RANK];
    for (int i = 0; i < x->rank; i++) rd[i] = i < ax ? x->dims[i] : 1;
    int xa = arg(b, n, x->id, x->rank, x->dims);
    if (xa < 0) return -1;
    int xr = x->rank;
    const int64_t *xd = x->dims;
    if (sm) {
        int m = red_val(b, RED_MAX, xa, xr, rd);
        if (m < 0) return -1;
        int a2[2] = {xa, m};
        int dv = op_val(b, "($0 - $1)", a2, 2, NULL, xr, xd, false, lang);
        if (dv < 0) return -1;
        int e = op_val(b, "expf($0)", &dv, 1, NULL, xr, xd, false, lang);
        if (e < 0) return -1;
        int s = red_val(b, RED_SUM, e, xr, rd);
        if (s < 0) return -1;
        if (od->kind == FA_REDUCE_SOFTMAX) {
            int a3[2] = {e, s};
            out = op_val(b, "($0 / $1)", a3, 2, NULL, xr, xd, false, lang);
        } else {
            int ls = op_val(b, "logf($0)", &s, 1, NULL, xr, rd, false, lang);
            if (ls < 0) return -1;
            int a3[2] = {dv, ls};
            out = op_val(b, "($0 - $1)", a3, 2, NULL, xr, xd, false, lang);
        }
    } else {
        bool rms = od->kind == FA_REDUCE_RMS_NORM;
        double p[3] = {fa_node_attr_float(n, "epsilon", 1e-5f), 0, 0};
        int centered = xa, mean = -1;
        if (!rms) {
            mean = red_val(b, RED_MEAN, xa, xr, rd);
            if (mean < 0) return -1;
            int a2[2] = {xa, mean};
            centered = op_val(b, "($0 - $1)", a2, 2, NULL, xr, xd, false, lang);
            if (centered < 0) return -1;
        }
        int var = red_val(b, RED_SUMSQ, centered, xr, rd);
        if (var < 0) return -1;
        b->v[var].red = RED_SUMSQ; /* mean of squares: divided by rowlen below */
        double pl[3] = {(double)b->rowlen, p[0], 0};
        int inv = op_val(b, "(1.0f / sqrtf($0 / $a + $b))", &var, 1, pl, xr, rd, false, lang);
        if (inv < 0) return -1;
        int a2[2] = {centered, inv};
        int yv = op_val(b, "($0 * $1)", a2, 2, NULL, xr, xd, false, lang);
        if (yv < 0) return -1;
        int sc = arg(b, n, n->inputs[1], xr, xd);
        if (sc < 0) return -1;
        int a3[2] = {yv, sc};
        yv = op_val(b, "($0 * $1)", a3, 2, NULL, xr, xd, false, lang);
        if (yv < 0) return -1;
        if (!rms && n->n_inputs > 2 && n->inputs[2] >= 0) {
            int bb = arg(b, n, n->inputs[2], xr, xd);
            if (bb < 0) return -1;
            int a4[2] = {yv, bb};
            yv = op_val(b, "($0 + $1)", a4, 2, NULL, xr, xd, false, lang);
        }
        out = yv;
        if (!rms && out >= 0) { /* optional Mean / InvStdDev outputs (per row) */
            if (n->n_outputs > 1 && n->outputs[1] >= 0) b->tval[n->outputs[1]] = mean;
            if (n->n_outputs > 2 && n->outputs[2] >= 0) b->tval[n->outputs[2]] = inv;
        }
    }
    return out;
}

/* One expression: an op-math row's (unary or binary) or the row's template. */
/* Inference BatchNormalization (ONNX: Y = (X - mean) / sqrt(var + epsilon) · scale + B, the [C]
 * parameters along axis 1) as three values: the per-channel factor scale / sqrt(var + eps), then
 * (x - mean) · factor, then + B; each parameter read as [1, C, 1, ...] (load_as), so a blocked
 * loop computes the factor once per row of a channel block. A BN not after a convolution (a
 * pre-activation BN + ReLU: DenseNet's 58 and every pre-activation ResNet's; a BN after a Concat
 * or an Add) had no emitter, so its elementwise chain was never generated. The verification bound
 * counts its six roundings (applier/bound.c MAG_BN). Refused: training mode, a used extra output,
 * rank < 2, parameters that are not [C] cluster inputs. */
static int lower_bn(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d)
{
    (void)od;
    if (fa_node_attr_int(n, "training_mode", 0) || n->n_inputs < 5)
        return cg_fail(b, "a BatchNormalization is not in inference form", "node '%s': training mode or a missing input",
                       n->name);
    if (r < 2) return cg_fail(b, "a BatchNormalization has no channel axis", "node '%s': output rank %d", n->name, r);
    int x = arg(b, n, n->inputs[0], r, d);
    if (x < 0) return -1;
    int64_t pd[FA_MAX_RANK];
    for (int i = 0; i < r; i++) pd[i] = i == 1 ? d[1] : 1;
    int p[5] = {x, -1, -1, -1, -1}; /* scale, B, mean, var */
    for (int i = 1; i <= 4; i++) {
        int tid = n->inputs[i];
        const fa_tensor *t = tid >= 0 ? b->g->tensors[tid] : NULL;
        if (!t || t->rank != 1 || t->dims[0] != d[1] || b->tin[tid] < 0)
            return cg_fail(b, "a BatchNormalization parameter is not a [C] cluster input",
                           "node '%s': input %d is not a [%lld] tensor read from outside the cluster", n->name, i,
                           (long long)d[1]);
        if ((p[i] = load_as(b, b->tin[tid], tid, r, pd, r, d)) < 0) return -1;
    }
    double eps[3] = {fa_node_attr_float(n, "epsilon", 1e-5f), 0, 0};
    int fa[2] = {p[1], p[4]};
    int f = op_val(b, "($0 / sqrtf($1 + $a))", fa, 2, eps, r, d, false, lang);
    if (f < 0) return -1;
    int ta[3] = {x, p[3], f};
    int t = op_val(b, "(($0 - $1) * $2)", ta, 3, NULL, r, d, false, lang);
    if (t < 0) return -1;
    int ya[2] = {t, p[2]};
    return op_val(b, "($0 + $1)", ya, 2, NULL, r, d, false, lang);
}

static int lower_expr(cg *b, const fa_node *n, const cg_opdef *od, int lang, int r, const int64_t *d)
{
    const fa_graph *g = b->g;
    const char *op = n->op_type;
    bool cmp = od->flags & CG_BOOL_OUT;
    int a[3];
    int na = od->arity;
    if (n->n_inputs < na)
        return cg_fail(b, "an optional input is missing", "node '%s' (%s): %d inputs, %d expected", n->name, op,
                       n->n_inputs, na);
    for (int i = 0; i < na; i++) {
        a[i] = arg(b, n, n->inputs[i], r, d);
        if (a[i] < 0) return -1;
    }
    double p[3]; /* an absent attribute takes the default as written (Selu's are double) */
    for (int k = 0; k < 3; k++)
        p[k] = od->attr[k] && fa_node_attr(n, od->attr[k]) ? fa_node_attr_float(n, od->attr[k], 0) : od->p[k];
    if ((od->flags & CG_BOOL_COND) && !b->v[a[0]].is_bool)
        return cg_fail(b, "Where's condition is not boolean", "node '%s': condition is not bool", n->name);
    char mt[512];
    const char *tpl = od->tpl;
    const char *sel = NULL;
    const fa_unary_math *m = fa_unary_math_find(op) ? fa_unary_math_for_node(n, &sel) : NULL;
    if (fa_unary_math_find(op) && !m)
        return cg_fail(b, "an attribute value without an expression", "node '%s': %s %s='%s'", n->name, op,
                       sel ? sel : "?", sel ? fa_node_attr_string(n, sel, "") : "");
    if (m) {
        if (fa_unary_math_template(m, mt, sizeof mt) >= sizeof mt)
            return cg_fail(b, "a member op's expression is too long", "node '%s': expression of %s too long", n->name, op);
        tpl = mt;
        /* parameters that are inputs (Clip's bounds from opset 11): a constant becomes a
         * literal, a computed one an operand ($a -> $1, $b -> $2 in the template) */
        for (int k = 0; k < 3; k++) {
            int ix = fa_unary_math_param_input(n, m, k), tid = ix >= 0 && ix < n->n_inputs ? n->inputs[ix] : -1;
            if (ix < 0) continue;
            p[k] = m->def[k];
            if (tid < 0) continue;
            double cv;
            if (const_scalar(g, tid, &cv)) { p[k] = cv; continue; }
            if (na >= 3) return cg_fail(b, "a member op's expression is too long", "node '%s': too many operands", n->name);
            a[na] = arg(b, n, tid, r, d);
            if (a[na] < 0) return -1;
            char ph[3] = {'$', (char)('0' + na), 0}, pk[3] = {'$', "abg"[k], 0}, t2[512];
            size_t o = 0;
            for (const char *q = mt; *q && o + 2 < sizeof t2; q++) {
                if (q[0] == pk[0] && q[1] == pk[1]) { t2[o++] = ph[0]; t2[o++] = ph[1]; q++; }
                else t2[o++] = *q;
            }
            t2[o] = 0;
            snprintf(mt, sizeof mt, "%s", t2);
            na++;
        }
    } else if (fa_binary_math_find(op)) {
        tpl = binary_tpl(op, mt, sizeof mt);
        if (!tpl)
            return cg_fail(b, "a member op's expression is too long", "node '%s': expression of %s too long", n->name, op);
    }
    if (!tpl) return cg_fail(b, "an op without an expression", "node '%s': %s has no expression", n->name, op);
    return op_val(b, tpl, a, na, p, r, d, cmp, lang);
}

/* ------------------------------------------------------------------------------------------ */
/* cluster analysis                                                                           */

static void cg_free(cg *b)
{
    free(b->v);
    free(b->tval);
    free(b->tin);
}

static int cg_build(cg *b, const fa_graph *g, const fa_kernel_desc *c, int lang)
{
    memset(b, 0, sizeof *b);
    b->g = g;
    b->c = c;
    b->prod_t = -1;
    if (c->kind == FA_KERNEL_EPILOGUE || c->kind == FA_KERNEL_BN_FOLD)
        return cg_fail(b, "epilogue and BN-folding clusters use the library's kernels",
                       "cluster %d is a %s cluster: it runs through the library's fused kernels, no generated code",
                       c->id, c->kind == FA_KERNEL_EPILOGUE ? "epilogue" : "bn-fold");
    if (c->kind == FA_KERNEL_ROWS) {
        if (!fa_reduce_is_row(c->reduce))
            return cg_fail(b, "generic reductions have no code emitter yet",
                           "cluster %d: only softmax, log-softmax, layer-norm and RMS-norm reductions are generated", c->id);
        b->rowk = true;
    } else if (c->kind != FA_KERNEL_ELEMENTWISE && c->kind != FA_KERNEL_HORIZONTAL) {
        return cg_fail(b, "unknown cluster kind", "cluster %d: unknown kind %d", c->id, (int)c->kind);
    }
    if (c->n_members <= 0 || c->n_outputs <= 0)
        return cg_fail(b, "empty cluster", "cluster %d has no members or no outputs", c->id);
    if (c->layout != FA_LAYOUT_PLAIN) { /* the blocked emitter's domain (codegen.h, fa_kernel_desc.layout) */
        if ((unsigned)c->layout >= FA_LAYOUT_COUNT)
            return cg_fail(b, "unknown layout", "cluster %d: layout %d out of range", c->id, (int)c->layout);
        if (lang == LANG_CUDA)
            return cg_fail(b, "the CUDA generator reads and writes plain tensors only",
                           "cluster %d: no CUDA emitter for layout %s", c->id, fa_layout_name(c->layout));
        const fa_tensor *y = c->outputs[0] >= 0 && c->outputs[0] < g->n_tensors ? g->tensors[c->outputs[0]] : NULL;
        if (c->kind != FA_KERNEL_ELEMENTWISE || c->n_outputs != 1 || !y || y->rank != 4 || y->dtype != FA_DTYPE_FLOAT ||
            fa_tensor_numel(y) <= 0)
            return cg_fail(b, "only an elementwise chain with one rank-4 float output is generated in a blocked layout",
                           "cluster %d: layout %s needs an elementwise chain with one rank-4 float output", c->id,
                           fa_layout_name(c->layout));
    }
    if (c->gemm_epilogue) { /* codegen.h, fa_kernel_desc.gemm_epilogue */
        if (lang == LANG_CUDA)
            return cg_fail(b, "the CUDA generator has no GEMM epilogue over blocks of rows",
                           "cluster %d: a generated GEMM epilogue is emitted in C only", c->id);
        const fa_node *an = c->anchor >= 0 && c->anchor < g->n_nodes ? g->nodes[c->anchor] : NULL;
        const fa_tensor *p = an ? fa_graph_out(g, an, 0) : NULL;
        const fa_tensor *y = c->n_outputs == 1 && c->outputs[0] >= 0 && c->outputs[0] < g->n_tensors ? g->tensors[c->outputs[0]]
                                                                                                       : NULL;
        bool member = false;
        for (int i = 0; an && i < c->n_members; i++) member |= c->members[i] == c->anchor;
        if (c->kind != FA_KERNEL_ELEMENTWISE || c->layout != FA_LAYOUT_PLAIN || !member || !p || !y || p->rank < 1 ||
            p->dtype != FA_DTYPE_FLOAT || p->dims[p->rank - 1] <= 0 || fa_tensor_numel(p) <= 0 ||
            fa_tensor_numel(y) != fa_tensor_numel(p) || p->id == y->id)
            return cg_fail(b, "a GEMM epilogue is one elementwise chain with one output of the product's size",
                           "cluster %d: a generated GEMM epilogue needs its anchor among the members and one plain "
                           "output with the product's element count", c->id);
        b->prod_t = p->id;
        b->prod_n = p->dims[p->rank - 1];
    }
    b->tval = malloc((size_t)g->n_tensors * sizeof *b->tval);
    b->tin = malloc((size_t)g->n_tensors * sizeof *b->tin);
    if (!b->tval || !b->tin) return cg_fail(b, "out of memory", "out of memory");
    for (int i = 0; i < g->n_tensors; i++) b->tval[i] = b->tin[i] = -1;
    for (int i = 0; i < c->n_inputs; i++) {
        int t = c->inputs[i];
        if (t < 0 || t >= g->n_tensors) return cg_fail(b, "bad cluster input", "cluster %d: input %d out of range", c->id, i);
        const fa_tensor *tt = g->tensors[t];
        if (tt->rank < 0 || fa_tensor_numel(tt) < 0)
            return cg_fail(b, "a cluster input has a dynamic shape", "input '%s' has an unknown shape", tt->name);
        if (b->tin[t] < 0) b->tin[t] = i;
    }
    if (b->prod_t >= 0) b->tin[b->prod_t] = c->n_inputs; /* in[n_inputs]: the product */
    for (int i = 0; i < c->n_members; i++)
        if (c->members[i] < 0 || c->members[i] >= g->n_nodes)
            return cg_fail(b, "bad cluster member", "cluster %d: member %d out of range", c->id, i);
    for (int i = 0; i < c->n_outputs; i++) {
        int t = c->outputs[i];
        if (t < 0 || t >= g->n_tensors || g->tensors[t]->rank < 0 || fa_tensor_numel(g->tensors[t]) < 0)
            return cg_fail(b, "a cluster output has an unknown shape", "cluster %d: output %d has an unknown shape", c->id, i);
        if (g->tensors[t]->dtype != FA_DTYPE_FLOAT)
            return cg_fail(b, "a member touches a tensor that is not float32", "output '%s' is %s", g->tensors[t]->name,
                           fa_dtype_name(g->tensors[t]->dtype));
    }
    if (b->rowk) {
        /* reference shape: input 0 of the anchor (or of the first reduction/normalization member) */
        const fa_node *an = NULL;
        if (c->anchor >= 0 && c->anchor < g->n_nodes) an = g->nodes[c->anchor];
        for (int i = 0; !an && i < c->n_members; i++) {
            const fa_node *m = g->nodes[c->members[i]];
            if (m->op && (fa_reduce_is_axes(m->op->reduce) || fa_reduce_is_row(m->op->reduce))) an = m;
        }
        const fa_tensor *x = an ? fa_graph_in(g, an, 0) : NULL;
        if (!x || x->rank < 0 || fa_tensor_numel(x) < 0)
            return cg_fail(b, "the reduction's input shape is unknown", "cluster %d: no reduction member with a known input shape", c->id);
        int ax = c->reduce_axis < 0 ? c->reduce_axis + x->rank : c->reduce_axis;
        if (ax < 0 || ax > x->rank)
            return cg_fail(b, "reduce_axis out of range", "cluster %d: reduce_axis %d out of range for rank %d", c->id,
                           c->reduce_axis, x->rank);
        b->rrank = x->rank;
        memcpy(b->rdims, x->dims, sizeof b->rdims);
        b->rsplit = ax;
        b->rows = prod(x->dims, 0, ax);
        b->rowlen = prod(x->dims, ax, x->rank);
        b->n = b->rows * b->rowlen;
        if (b->rowlen <= 0)
            return cg_fail(b, "empty reduction rows", "cluster %d: reduction rows are empty", c->id);
    } else {
        int best = -1;
        int64_t bn = -1;
        for (int i = 0; i < c->n_outputs; i++) {
            int64_t ne = fa_tensor_numel(g->tensors[c->outputs[i]]);
            if (ne > bn) {
                bn = ne;
                best = c->outputs[i];
            }
        }
        const fa_tensor *t = g->tensors[best];
        b->rrank = t->rank;
        memcpy(b->rdims, t->dims, sizeof b->rdims);
        b->n = bn;
        b->rows = 1;
        b->rowlen = bn;
        for (int i = 0; i < c->n_outputs; i++) {
            const fa_tensor *o = g->tensors[c->outputs[i]];
            if (!bcasts_to(o->rank, o->dims, b->rrank, b->rdims))
                return cg_fail(b, "outputs of different shapes", "output '%s' does not broadcast to output '%s'", o->name, t->name);
        }
    }
    for (int i = 0; i < c->n_members; i++)
        if (!(c->gemm_epilogue && c->members[i] == c->anchor) && lower(b, g->nodes[c->members[i]], lang) < 0) return -1;
    for (int i = 0; i < c->n_outputs; i++) {
        int t = c->outputs[i];
        int vi = b->tval[t];
        if (vi < 0)
            return cg_fail(b, "a cluster output is not produced by a member", "output '%s' is not produced inside cluster %d",
                           g->tensors[t]->name, c->id);
        const fa_tensor *o = g->tensors[t];
        if (b->rowk) {
            int64_t ne = fa_tensor_numel(o);
            if (!(ne == b->n || (ne == b->rows && b->v[vi].level == LV_ROW)))
                return cg_fail(b, "an output changes the shape", "output '%s' has %lld elements; rows x row = %lld x %lld",
                               o->name, (long long)ne, (long long)b->rows, (long long)b->rowlen);
        }
    }
    for (int i = 0; c->layout != FA_LAYOUT_PLAIN && i < c->n_inputs; i++) { /* a reorder moves float tensors only */
        const fa_tensor *t = g->tensors[c->inputs[i]];
        if (t->dtype != FA_DTYPE_FLOAT && fa_layout_operand_follows(t, g->tensors[c->outputs[0]]))
            return cg_fail(b, "an input that follows a blocked layout is not float32",
                           "cluster %d: input '%s' is %s and would be read in %s", c->id, t->name, fa_dtype_name(t->dtype),
                           fa_layout_name(c->layout));
    }
    /* liveness: mark what the outputs need */
    for (int i = 0; i < c->n_outputs; i++) b->v[b->tval[c->outputs[i]]].needed = true;
    for (int i = b->nv - 1; i >= 0; i--) {
        cg_val *v = &b->v[i];
        if (!v->needed) continue;
        if (v->kind == VK_RED) b->v[v->arg].needed = true;
        for (int k = 0; k < v->na; k++) b->v[v->a[k]].needed = true;
    }
    return 0;
}

bool fa_codegen_kernel_supported(const fa_graph *g, const fa_kernel_desc *c, fa_kernel_lang lang, const char **why)
{
    if (c->kind == FA_KERNEL_ATTENTION) {
        char msg[512];
        return fa_cg_attention_supported(g, c, lang == FA_KERNEL_LANG_CUDA, why, msg, sizeof msg);
    }
    cg b;
    int rc = cg_build(&b, g, c, lang == FA_KERNEL_LANG_CUDA ? LANG_CUDA : LANG_C);
    if (rc < 0 && why) *why = b.why;
    cg_free(&b);
    return rc == 0;
}

/* ------------------------------------------------------------------------------------------ */
/* printing                                                                                   */

static const char *kind_name(fa_kernel_kind k)
{
    switch (k) {
    case FA_KERNEL_ELEMENTWISE: return "elementwise-chain";
    case FA_KERNEL_HORIZONTAL: return "horizontal";
    case FA_KERNEL_ROWS: return "reduction";
    case FA_KERNEL_ATTENTION: return "attention";
    default: return "cluster";
    }
}

void fa_cg_header(fa_buf *out, const fa_kernel_desc *c, const char *plan_hash, fa_codegen_info *info)
{
    char h8[9];
    const char *ph = plan_hash && plan_hash[0] ? plan_hash : "none";
    int k = 0;
    for (const char *s = ph; *s && k < 8; s++)
        if ((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')) h8[k++] = *s;
    while (k < 8) h8[k++] = '0';
    h8[8] = 0;
    snprintf(info->name, sizeof info->name, "fa_fused_c%d_%s", c->id, h8);
    /* No string from the model reaches generated source (DESIGN.md "Outputs"): the cluster is
     * named by its id and kind, tensors by their index in the graph; the label (which may hold
     * tensor names) stays in plan.json and the reports, escaped for their formats. */
    char hs[72];
    snprintf(hs, sizeof hs, "%s", ph);
    for (char *s = hs; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) *s = '_';
    fa_buf_printf(out, "/* generated by fuse-advise %s from plan %s cluster %d (%s) - do not edit */\n",
                  FA_VERSION_STRING, hs, c->id, c->gemm_epilogue ? "GEMM epilogue, per block of rows" : kind_name(c->kind));
}

/* One statement computing value vi (loads read through their offsets). */
static void stmt(fa_buf *o, const cg *b, int vi, const char *ind, bool row_kernel)
{
    const cg_val *v = &b->v[vi];
    const char *ty = v->is_bool ? "int" : "float";
    if (v->kind == VK_LOAD) {
        char idx[2 * CG_EXPR + 16];
        bool ro = row_kernel && strcmp(v->row_off, "0") != 0;
        bool co = strcmp(v->off, "0") != 0 || !ro;
        if (ro && co) snprintf(idx, sizeof idx, "ro%d + %s", vi, v->off);
        else if (ro) snprintf(idx, sizeof idx, "ro%d", vi);
        else snprintf(idx, sizeof idx, "%s", v->off);
        fa_buf_printf(o, "%sconst %s v%d = in%d[%s]%s;\n", ind, ty, vi, v->input, idx, v->is_bool ? " != 0" : "");
    } else if (v->kind == VK_OP) {
        fa_buf_printf(o, "%sconst %s v%d = %s;\n", ind, ty, vi, v->expr);
    }
}

/* The tensor read as in[k]: c->inputs[k], or the product of a GEMM epilogue at k = n_inputs. */
static const fa_tensor *in_tensor(const cg *b, int k)
{
    return b->g->tensors[k == b->c->n_inputs && b->prod_t >= 0 ? b->prod_t : b->c->inputs[k]];
}

static void params_c(fa_buf *o, const cg *b)
{
    const fa_kernel_desc *c = b->c;
    bool gemm = b->prod_t >= 0;
    for (int k = 0; k < c->n_inputs + gemm; k++) {
        bool used = false;
        for (int i = 0; i < b->nv; i++) used |= b->v[i].needed && b->v[i].kind == VK_LOAD && b->v[i].input == k;
        if (!used) continue;
        const fa_tensor *t = in_tensor(b, k);
        bool bl = t->dtype == FA_DTYPE_BOOL, prod = k == c->n_inputs;
        fa_buf_printf(o, "    const %s *%sin%d = (const %s *)in[%d]; /* tensor #%d%s */\n", bl ? "unsigned char" : "float",
                      prod ? "" : "restrict ", k, bl ? "unsigned char" : "float", k, t->id,
                      prod ? ": the product, overwritten in place by out0" : "");
    }
    for (int k = 0; k < c->n_outputs; k++)
        fa_buf_printf(o, "    float *%sout%d = (float *)out[%d]; /* tensor #%d */\n", gemm ? "" : "restrict ", k, k,
                      c->outputs[k]);
    if (gemm)
        fa_buf_printf(o, "    /* rows [r0, r1) of the product, %lld elements each, from the caller */\n"
                         "    const int64_t *range = (const int64_t *)in[%d];\n"
                         "    const int64_t lo = range[0] * %lld, hi = range[1] * %lld;\n",
                      (long long)b->prod_n, c->n_inputs + 1, (long long)b->prod_n, (long long)b->prod_n);
}

static void params_cuda(fa_buf *o, const cg *b)
{
    const fa_kernel_desc *c = b->c;
    for (int k = 0; k < c->n_inputs; k++) {
        bool bl = b->g->tensors[c->inputs[k]]->dtype == FA_DTYPE_BOOL;
        fa_buf_printf(o, "%s    const %s *__restrict__ in%d", k ? ",\n" : "", bl ? "unsigned char" : "float", k);
    }
    for (int k = 0; k < c->n_outputs; k++)
        fa_buf_printf(o, "%s    float *__restrict__ out%d", (k || c->n_inputs) ? ",\n" : "", k);
    fa_buf_puts(o, ")\n");
}

/* Store of output k (elementwise driver): at i when full-size, else at its broadcast offset
 * from the one loop point whose coordinates along its broadcast axes are 0. */
static void store_ew(fa_buf *o, const cg *b, int k, const char *ind)
{
    const fa_tensor *t = b->g->tensors[b->c->outputs[k]];
    int vi = b->tval[t->id];
    if (fa_tensor_numel(t) == b->n) {
        fa_buf_printf(o, "%sout%d[i] = v%d;\n", ind, k, vi);
        return;
    }
    int64_t st[FA_MAX_RANK], ind1[FA_MAX_RANK];
    bstrides(t->rank, t->dims, b->rrank, b->rdims, st);
    for (int d = 0; d < b->rrank; d++) ind1[d] = (st[d] == 0 && b->rdims[d] > 1) ? 1 : 0;
    char off[CG_EXPR], cond[CG_EXPR];
    offset_expr(off, sizeof off, "i", b->rdims, 0, b->rrank, st);
    offset_expr(cond, sizeof cond, "i", b->rdims, 0, b->rrank, ind1);
    fa_buf_printf(o, "%sif (%s == 0) out%d[%s] = v%d;\n", ind, cond, k, off, vi);
}

static bool fast_path(const cg *b)
{
    for (int i = 0; i < b->nv; i++)
        if (b->v[i].needed && b->v[i].kind == VK_LOAD && strcmp(b->v[i].off, "i") && strcmp(b->v[i].off, "0"))
            return false;
    for (int k = 0; k < b->c->n_outputs; k++)
        if (fa_tensor_numel(b->g->tensors[b->c->outputs[k]]) != b->n) return false;
    return true;
}

/* Inner-axis split for the broadcast elementwise loop: the smallest s such that every needed
 * load reads axes [s, rank) of the loop shape either contiguously or not at all (stride 0).
 * Returns s, or -1 when no split leaves an inner run longer than 1. */
static int tile_split(const cg *b, int64_t (*st)[FA_MAX_RANK])
{
    for (int i = 0; i < b->nv; i++) {
        const cg_val *v = &b->v[i];
        if (!v->needed || v->kind != VK_LOAD) continue;
        const fa_tensor *t = in_tensor(b, v->input);
        if (t->id == b->prod_t) { /* the product is read at i, in the output's order */
            for (int d = 0; d < b->rrank; d++) st[i][d] = prod(b->rdims, d + 1, b->rrank);
            continue;
        }
        bstrides(v->rank, v->dims, b->rrank, b->rdims, st[i]); /* the shape it is read as (load_as) */
    }
    for (int s = 0; s < b->rrank; s++) {
        if (prod(b->rdims, s, b->rrank) <= 1) break;
        bool ok = true;
        for (int i = 0; i < b->nv && ok; i++) {
            const cg_val *v = &b->v[i];
            if (!v->needed || v->kind != VK_LOAD) continue;
            bool zero = true, contig = true;
            for (int d = s; d < b->rrank; d++) {
                if (b->rdims[d] == 1) continue;
                if (st[i][d] != 0) zero = false;
                if (st[i][d] != prod(b->rdims, d + 1, b->rrank)) contig = false;
            }
            ok = zero || contig;
        }
        if (ok) return s;
    }
    return -1;
}

/* Broadcast elementwise loop as outer rows x contiguous inner run: per-row offsets hoisted, the
 * inner loop `omp simd` (loads are in[ro + j] or in[ro]). Only when every output is full-size.
 * Rows in parallel when there are at least 16, else the inner run in parallel; neither when the
 * work is at most FA_CODEGEN_PARALLEL_MIN elements (codegen.h). */
static bool emit_tiled(fa_buf *o, const cg *b)
{
    for (int k = 0; k < b->c->n_outputs; k++)
        if (fa_tensor_numel(b->g->tensors[b->c->outputs[k]]) != b->n) return false;
    int64_t(*st)[FA_MAX_RANK] = calloc((size_t)b->nv + 1, sizeof *st);
    if (!st) return false;
    int s = tile_split(b, st);
    if (s <= 0) {
        free(st);
        return false;
    }
    int64_t outer = prod(b->rdims, 0, s), len = prod(b->rdims, s, b->rrank);
    bool gemm = b->prod_t >= 0;
    if (gemm && b->prod_n % len) { /* a GEMM epilogue's blocks of rows must start and end on run edges */
        free(st);
        return false;
    }
    fa_buf_printf(o, "    /* broadcast: %lld rows x %lld contiguous elements */\n", (long long)outer, (long long)len);
    fa_buf_printf(o, "    const int64_t rows = %lld, len = %lld;\n", (long long)outer, (long long)len);
    bool par_rows = outer >= 16 && !gemm;
    if (par_rows && outer * len > FA_CODEGEN_PARALLEL_MIN)
        fa_buf_puts(o, "#pragma omp parallel for num_threads(threads) schedule(static)\n");
    if (gemm) fa_buf_puts(o, "    (void)rows;\n    for (int64_t row = lo / len; row < hi / len; row++) {\n");
    else fa_buf_puts(o, "    for (int64_t row = 0; row < rows; row++) {\n");
    fa_buf_puts(o, "        const int64_t base = row * len;\n");
    for (int i = 0; i < b->nv; i++) {
        const cg_val *v = &b->v[i];
        if (!v->needed || v->kind != VK_LOAD) continue;
        char ro[CG_EXPR], co[CG_EXPR];
        offset_expr(ro, sizeof ro, "row", b->rdims, 0, s, st[i]);
        offset_expr(co, sizeof co, "j", b->rdims, s, b->rrank, st[i]);
        bool inner = strcmp(co, "0") != 0;
        if (!inner) /* constant along the run */
            fa_buf_printf(o, "        const %s v%d = in%d[%s]%s;\n", v->is_bool ? "int" : "float", i, v->input, ro,
                          v->is_bool ? " != 0" : "");
        else if (strcmp(ro, "0"))
            fa_buf_printf(o, "        const int64_t ro%d = %s;\n", i, ro);
    }
    if (par_rows || gemm || len <= FA_CODEGEN_PARALLEL_MIN) fa_buf_puts(o, "#pragma omp simd\n");
    else fa_buf_puts(o, "#pragma omp parallel for simd num_threads(threads) schedule(static)\n");
    fa_buf_puts(o, "        for (int64_t j = 0; j < len; j++) {\n");
    for (int i = 0; i < b->nv; i++) {
        const cg_val *v = &b->v[i];
        if (!v->needed) continue;
        if (v->kind == VK_LOAD) {
            char ro[CG_EXPR], co[CG_EXPR];
            offset_expr(ro, sizeof ro, "row", b->rdims, 0, s, st[i]);
            offset_expr(co, sizeof co, "j", b->rdims, s, b->rrank, st[i]);
            if (!strcmp(co, "0")) continue;
            if (strcmp(ro, "0"))
                fa_buf_printf(o, "            const %s v%d = in%d[ro%d + j]%s;\n", v->is_bool ? "int" : "float", i,
                              v->input, i, v->is_bool ? " != 0" : "");
            else
                fa_buf_printf(o, "            const %s v%d = in%d[j]%s;\n", v->is_bool ? "int" : "float", i, v->input,
                              v->is_bool ? " != 0" : "");
        } else {
            stmt(o, b, i, "            ", false);
        }
    }
    for (int k = 0; k < b->c->n_outputs; k++)
        fa_buf_printf(o, "            out%d[base + j] = v%d;\n", k, b->tval[b->c->outputs[k]]);
    fa_buf_puts(o, "        }\n    }\n");
    free(st);
    return true;
}

/* The elementwise loop on a blocked layout (fa_kernel_desc.layout; cg_build checked the
 * cluster: one rank-4 float output of dims N, C, H, W = the loop shape). The layout is nChw<B>c
 * with B = 8 or 16, and nhwc taken as nChw<C>c (one block of all C channels: the same offsets,
 * no padding). Element (n, c, h, w) of a tensor of dims N', C', H', W' in the layout lies at
 * (((n'·CB' + c / B)·H' + h')·W' + w')·B + c % B, CB' = ceil(C' / B), a broadcast dim's
 * coordinate 0 (oneDNN "Understanding Memory Formats": nChw16c is the 5-D array
 * [N][ceil(C/16)][H][W][16], the padded channels of the last block zero). The loop runs in
 * parallel over the output's rows of blocks r = (n·CB + cb)·H + h, then over w, and within a
 * block over the lim = min(B, C − cb·B) real channels: an input that follows
 * (fa_layout_operand_follows) is read at its blocked offset, every other one plain at its
 * broadcast offset of (n, cb·B + j, h, w). Values that vary with the channel only (the
 * squeeze-excitation scale and HardSigmoid of it) are computed once per row into a block-sized
 * array. The block's padded channels [lim, B) are stored 0 — nothing is read for them — so a
 * convolution after it that multiplies them by its zero-padded weights gets 0, never NaN. */
static void emit_blocked(fa_buf *o, const cg *b)
{
    const fa_kernel_desc *c = b->c;
    const int64_t N = b->rdims[0], C = b->rdims[1], H = b->rdims[2], W = b->rdims[3];
    const int64_t B = c->layout == FA_LAYOUT_NHWC ? C : fa_layout_channel_block(c->layout), CB = (C + B - 1) / B;
    const fa_tensor *y = b->g->tensors[c->outputs[0]];
    int64_t *cst = calloc((size_t)b->nv + 1, sizeof *cst); /* by load: its stride along a block's channels */
    int64_t *wst = calloc((size_t)b->nv + 1, sizeof *wst); /* by load: its stride along w */
    bool *chan = calloc((size_t)b->nv + 1, sizeof *chan);  /* by value: varies with the channel only */
    char (*ro)[CG_EXPR] = calloc((size_t)b->nv + 1, sizeof *ro); /* by load: its offset at (n, cb, h, w = 0) */
    if (!cst || !wst || !chan || !ro) {
        free(cst), free(wst), free(chan), free(ro);
        fa_buf_puts(o, "#error out of memory generating this kernel\n");
        return;
    }
    bool hoist = B <= 4096; /* a block's channel values on the stack: at most 16 KiB each (nhwc's block is C) */
    for (int i = 0; i < b->nv; i++) {
        const cg_val *v = &b->v[i];
        if (v->kind == VK_OP) {
            chan[i] = hoist && v->na > 0;
            for (int k = 0; k < v->na; k++) chan[i] = chan[i] && chan[v->a[k]];
            continue;
        }
        if (v->kind != VK_LOAD) continue;
        const fa_tensor *t = b->g->tensors[c->inputs[v->input]];
        if (fa_layout_operand_follows(t, y)) { /* its own blocked offset of (n, cb, h, 0): a broadcast dim's coordinate 0 */
            int64_t th = t->dims[2], tw = t->dims[3];
            char e[CG_EXPR], f[CG_EXPR];
            if (t->dims[0] > 1) snprintf(e, sizeof e, "n * %lld + cb", (long long)CB);
            else snprintf(e, sizeof e, "cb");
            if (th > 1) {
                snprintf(f, sizeof f, "(%s) * %lld + h", e, (long long)th);
                snprintf(e, sizeof e, "%s", f);
            }
            if (tw > 1) {
                snprintf(f, sizeof f, "(%s) * %lld", e, (long long)tw);
                snprintf(e, sizeof e, "%s", f);
            }
            snprintf(ro[i], sizeof ro[i], "(%s) * %lld", e, (long long)B);
            cst[i] = 1;
            wst[i] = tw > 1 ? B : 0;
            chan[i] = hoist && th == 1 && tw == 1;
        } else { /* plain at its broadcast offset of (n, cb·B + j, h, w) */
            int64_t st[FA_MAX_RANK];
            bstrides(v->rank, v->dims, 4, b->rdims, st); /* the shape it is read as (load_as) */
            const char *var[3] = {"n", "cb", "h"};
            int64_t mul[3] = {st[0], B * st[1], st[2]};
            for (int k = 0; k < 3; k++) {
                if (mul[k] == 0) continue;
                char term[64];
                if (mul[k] == 1) snprintf(term, sizeof term, "%s%s", ro[i][0] ? " + " : "", var[k]);
                else snprintf(term, sizeof term, "%s%s * %lld", ro[i][0] ? " + " : "", var[k], (long long)mul[k]);
                cat(ro[i], sizeof ro[i], term);
            }
            if (!ro[i][0]) snprintf(ro[i], sizeof ro[i], "0");
            cst[i] = st[1];
            wst[i] = st[3];
            chan[i] = hoist && st[2] == 0 && st[3] == 0;
        }
    }
    fa_buf_printf(o, "    /* %s: %lld x %lld blocks x %lld x %lld of %lld channels; C = %lld%s */\n",
                  fa_layout_name(c->layout), (long long)N, (long long)CB, (long long)H, (long long)W, (long long)B,
                  (long long)C, CB * B != C ? " (the last block's padded channels stored 0)" : "");
    fa_buf_printf(o, "    const int64_t rows = %lld;\n", (long long)(N * CB * H));
    if (N * CB * H * W * B > FA_CODEGEN_PARALLEL_MIN)
        fa_buf_puts(o, "#pragma omp parallel for num_threads(threads) schedule(static)\n");
    fa_buf_puts(o, "    for (int64_t r = 0; r < rows; r++) {\n");
    fa_buf_printf(o, "        const int64_t h = r %% %lld, cb = r / %lld %% %lld, n = r / %lld;\n", (long long)H, (long long)H,
                  (long long)CB, (long long)(H * CB));
    fa_buf_puts(o, "        (void)h, (void)n, (void)cb;\n");
    if (CB * B != C) fa_buf_printf(o, "        const int64_t lim = %lld - cb * %lld < %lld ? %lld - cb * %lld : %lld;\n", (long long)C,
                                   (long long)B, (long long)B, (long long)C, (long long)B, (long long)B);
    else fa_buf_printf(o, "        const int64_t lim = %lld;\n", (long long)B);
    for (int i = 0; i < b->nv; i++)
        if (b->v[i].needed && b->v[i].kind == VK_LOAD) fa_buf_printf(o, "        const int64_t ro%d = %s;\n", i, ro[i]);
    /* the values that vary with the channel only, once per row; the ones the per-element loop
     * reads kept in ch<i>[j] */
    bool any_chan = false, *kept = calloc((size_t)b->nv + 1, sizeof *kept);
    if (!kept) {
        free(cst), free(wst), free(chan), free(ro);
        fa_buf_puts(o, "#error out of memory generating this kernel\n");
        return;
    }
    for (int i = 0; i < b->nv; i++) {
        const cg_val *v = &b->v[i];
        any_chan |= v->needed && chan[i];
        if (!v->needed || chan[i]) continue;
        for (int k = 0; v->kind == VK_OP && k < v->na; k++) kept[v->a[k]] |= chan[v->a[k]];
    }
    if (chan[b->tval[c->outputs[0]]]) kept[b->tval[c->outputs[0]]] = true;
    for (int pass = 0; any_chan && pass < 2; pass++) {
        if (pass == 0) {
            for (int i = 0; i < b->nv; i++)
                if (kept[i]) fa_buf_printf(o, "        float ch%d[%lld];\n", i, (long long)B);
            fa_buf_puts(o, "#pragma omp simd\n        for (int64_t j = 0; j < lim; j++) {\n");
            continue;
        }
        for (int i = 0; i < b->nv; i++) {
            const cg_val *v = &b->v[i];
            if (!v->needed || !chan[i]) continue;
            if (v->kind == VK_LOAD) {
                char idx[96];
                if (cst[i] == 0) snprintf(idx, sizeof idx, "ro%d", i);
                else if (cst[i] == 1) snprintf(idx, sizeof idx, "ro%d + j", i);
                else snprintf(idx, sizeof idx, "ro%d + j * %lld", i, (long long)cst[i]);
                fa_buf_printf(o, "            const %s v%d = in%d[%s]%s;\n", v->is_bool ? "int" : "float", i, v->input, idx,
                              v->is_bool ? " != 0" : "");
            } else {
                stmt(o, b, i, "            ", false);
            }
            if (kept[i]) fa_buf_printf(o, "            ch%d[j] = v%d;\n", i, i);
        }
        fa_buf_puts(o, "        }\n");
    }
    fa_buf_printf(o, "        for (int64_t w = 0; w < %lld; w++) {\n", (long long)W);
    fa_buf_printf(o, "            float *restrict ob = out0 + (r * %lld + w) * %lld;\n", (long long)W, (long long)B);
    fa_buf_puts(o, "#pragma omp simd\n            for (int64_t j = 0; j < lim; j++) {\n");
    for (int i = 0; i < b->nv; i++) {
        const cg_val *v = &b->v[i];
        if (!v->needed) continue;
        if (chan[i]) {
            if (kept[i]) fa_buf_printf(o, "                const %s v%d = ch%d[j];\n", v->is_bool ? "int" : "float", i, i);
        } else if (v->kind == VK_LOAD) {
            char idx[128], wpart[48] = "", jpart[48] = "";
            if (wst[i] == 1) snprintf(wpart, sizeof wpart, " + w");
            else if (wst[i]) snprintf(wpart, sizeof wpart, " + w * %lld", (long long)wst[i]);
            if (cst[i] == 1) snprintf(jpart, sizeof jpart, " + j");
            else if (cst[i]) snprintf(jpart, sizeof jpart, " + j * %lld", (long long)cst[i]);
            snprintf(idx, sizeof idx, "ro%d%s%s", i, wpart, jpart);
            fa_buf_printf(o, "                const %s v%d = in%d[%s]%s;\n", v->is_bool ? "int" : "float", i, v->input, idx,
                          v->is_bool ? " != 0" : "");
        } else {
            stmt(o, b, i, "                ", false);
        }
    }
    fa_buf_printf(o, "                ob[j] = v%d;\n            }\n", b->tval[c->outputs[0]]);
    if (CB * B != C) fa_buf_printf(o, "            for (int64_t j = lim; j < %lld; j++) ob[j] = 0.0f;\n", (long long)B);
    fa_buf_puts(o, "        }\n    }\n");
    free(cst), free(wst), free(chan), free(ro), free(kept);
}

/* Mark in `set` the FULL-level values that value `root` needs inside a j loop. A value buffered by
 * an earlier sweep (buf[v] > 0 and < sweep: its row kept in L1 by the C row kernel) is read back
 * there, so what it was computed from is not needed again. buf NULL: none. */
static void closure_in(const cg *b, int root, bool *set, const int *buf, int sweep)
{
    const cg_val *v = &b->v[root];
    if (v->level != LV_FULL || v->kind == VK_RED || set[root]) return;
    set[root] = true;
    if (buf && buf[root] > 0 && buf[root] < sweep) return;
    for (int k = 0; k < v->na; k++) closure_in(b, v->a[k], set, buf, sweep);
}

static void closure(const cg *b, int root, bool *set) { closure_in(b, root, set, NULL, 0); }

static const char *red_init(int red, int lang)
{
    if (red == RED_MAX) return lang == LANG_CUDA ? "-__int_as_float(0x7f800000)" : "-INFINITY";
    if (red == RED_MIN) return lang == LANG_CUDA ? "__int_as_float(0x7f800000)" : "INFINITY";
    return lang == LANG_CUDA ? "0.0f" : "0.0f";
}

/* Threads per row block: the power of two covering a quarter of the row (about 4 elements per
 * thread per pass), at least 64 (2 warps: with one block per row, sm_80/sm_90's 32 resident
 * blocks per SM then still fill all 64 warp slots) and at most 1024. */
static int64_t pow2_block(int64_t len)
{
    int64_t want = (len + 3) / 4, bs = 64;
    while (bs < want && bs < 1024) bs *= 2;
    return bs;
}

/* The C row kernel keeps a row of a value in a stack buffer (per thread, L1-resident) when an
 * earlier sweep computes it as a reduction's argument and a later sweep needs it again: the
 * residual + x of a skip layer norm, read and added once instead of in each of its three sweeps;
 * the exp(x - max) of a softmax, computed once instead of in its sum and again in its output
 * sweep. At most FA_CG_ROW_BUFFER_FLOATS floats in all per row (16 KB: half an L1 data cache of
 * 32 KB beside the inputs' rows); a longer row recomputes, as before. */
#define FA_CG_ROW_BUFFER_FLOATS 4096

/* buf[v] = the sweep (1..max_depth) whose loop stores value v's row into buffer rb<v>, 0 when v
 * is recomputed wherever it is needed. */
static void plan_row_buffers(const cg *b, int *buf)
{
    int64_t used = 0;
    bool *later = calloc((size_t)b->nv + 1, 1);
    for (int p = 1; p <= b->max_depth && later; p++)
        for (int i = 0; i < b->nv; i++) {
            const cg_val *r = &b->v[i];
            if (!r->needed || r->kind != VK_RED || r->depth != p) continue;
            int x = r->arg;
            const cg_val *v = &b->v[x];
            if (buf[x] || v->kind == VK_LOAD || v->is_bool || v->level != LV_FULL) continue; /* a load is no dearer from L1 */
            if (used + b->rowlen > FA_CG_ROW_BUFFER_FLOATS) continue;
            /* needed by a reduction of a later sweep or by the final sweep's outputs? */
            memset(later, 0, (size_t)b->nv);
            for (int k = 0; k < b->nv; k++)
                if (b->v[k].needed && b->v[k].kind == VK_RED && b->v[k].depth > p) closure(b, b->v[k].arg, later);
            for (int k = 0; k < b->c->n_outputs; k++)
                if (fa_tensor_numel(b->g->tensors[b->c->outputs[k]]) == b->n) closure(b, b->tval[b->c->outputs[k]], later);
            if (!later[x]) continue;
            buf[x] = p;
            used += b->rowlen;
        }
    free(later);
}

static void emit_row(fa_buf *o, const cg *b, int lang, int64_t bs)
{
    const char *IT = lang == LANG_CUDA ? (b->n > 0x3fffffff ? "long long" : "int") : "int64_t";
    bool cu = lang == LANG_CUDA;
    const char *ind = "        ";
    int *buf = calloc((size_t)b->nv + 1, sizeof(int));
    if (!cu && buf) plan_row_buffers(b, buf);
    if (cu) {
        ind = "    ";
        fa_buf_puts(o, "    __shared__ float fa_red[32];\n");
        fa_buf_printf(o, "    if (blockIdx.x >= %lldu) return; /* grid is at least 1 */\n", (long long)b->rows);
        fa_buf_printf(o, "    const %s row = blockIdx.x;\n    const %s len = %lld;\n", IT, IT, (long long)b->rowlen);
        fa_buf_printf(o, "    const %s base = row * len;\n    (void)base;\n", IT);
    } else {
        fa_buf_printf(o, "    const int64_t rows = %lld, len = %lld;\n", (long long)b->rows, (long long)b->rowlen);
        if (b->rows * b->rowlen > FA_CODEGEN_PARALLEL_MIN)
            fa_buf_puts(o, "#pragma omp parallel for num_threads(threads) schedule(static)\n");
        fa_buf_puts(o, "    for (int64_t row = 0; row < rows; row++) {\n");
        fa_buf_puts(o, "        const int64_t base = row * len;\n        (void)base;\n");
        for (int i = 0; buf && i < b->nv; i++)
            if (buf[i]) fa_buf_printf(o, "        float rb%d[%lld]; /* row of v%d, kept from sweep %d */\n", i, (long long)b->rowlen, i, buf[i]);
    }
    /* per-row offsets of loads, then row values available before any pass */
    for (int i = 0; i < b->nv; i++)
        if (b->v[i].needed && b->v[i].kind == VK_LOAD && strcmp(b->v[i].row_off, "0"))
            fa_buf_printf(o, "%sconst %s ro%d = %s;\n", ind, IT, i, b->v[i].row_off);
    for (int i = 0; i < b->nv; i++)
        if (b->v[i].needed && b->v[i].level == LV_ROW && b->v[i].depth == 0) stmt(o, b, i, ind, true);
    bool *set = calloc((size_t)b->nv + 1, 1);
    char ind2[32], ind3[40];
    snprintf(ind2, sizeof ind2, "%s    ", ind);
    snprintf(ind3, sizeof ind3, "%s    ", ind2);
    for (int p = 1; p <= b->max_depth; p++) {
        memset(set, 0, (size_t)b->nv);
        char sum_vars[512] = "", max_vars[512] = "", min_vars[512] = "";
        for (int i = 0; i < b->nv; i++) {
            const cg_val *v = &b->v[i];
            if (!v->needed || v->kind != VK_RED || v->depth != p) continue;
            closure_in(b, v->arg, set, buf, p);
            /* C: float lanes (omp simd reduction: one partial per vector lane, added at the end).
             * A sum or mean of the first sweep reads the raw row, which may sit far from 0 (a
             * residual stream): it accumulates x - x[0], so the lanes' rounding scales with the
             * row's spread, not its offset (the shifted-data algorithm: T. F. Chan, G. H. Golub,
             * R. J. LeVeque, "Algorithms for computing the sample variance", The American
             * Statistician 37(3), 1983); later sweeps read centred or positive values. */
            bool shift = !cu && p == 1 && (v->red == RED_SUM || v->red == RED_MEAN);
            if (shift) {
                bool *s0 = calloc((size_t)b->nv + 1, 1);
                if (s0) closure_in(b, v->arg, s0, buf, p);
                fa_buf_printf(o, "%sfloat k%d;\n%s{ /* the shift: the argument at j = 0 */\n%sconst int64_t j = 0;\n", ind, i, ind,
                              ind2);
                for (int k = 0; s0 && k < b->nv; k++)
                    if (s0[k]) stmt(o, b, k, ind2, true);
                fa_buf_printf(o, "%sk%d = v%d;\n%s}\n", ind2, i, v->arg, ind);
                free(s0);
            }
            fa_buf_printf(o, "%sfloat a%d = %s;\n", ind, i, red_init(v->red, lang));
            char *dst = v->red == RED_MAX ? max_vars : v->red == RED_MIN ? min_vars : sum_vars;
            char nm[24];
            snprintf(nm, sizeof nm, "%sa%d", dst[0] ? "," : "", i);
            cat(dst, 512, nm);
        }
        if (cu) {
            fa_buf_printf(o, "%sfor (%s j = threadIdx.x; j < len; j += %lld) {\n", ind, IT, (long long)bs);
        } else {
            fa_buf_printf(o, "%s#pragma omp simd", "");
            if (sum_vars[0]) fa_buf_printf(o, " reduction(+:%s)", sum_vars);
            if (max_vars[0]) fa_buf_printf(o, " reduction(max:%s)", max_vars);
            if (min_vars[0]) fa_buf_printf(o, " reduction(min:%s)", min_vars);
            fa_buf_printf(o, "\n%sfor (int64_t j = 0; j < len; j++) {\n", ind);
        }
        for (int i = 0; i < b->nv; i++) {
            if (!set[i]) continue;
            if (buf && buf[i] > 0 && buf[i] < p) fa_buf_printf(o, "%sconst float v%d = rb%d[j];\n", ind2, i, i);
            else stmt(o, b, i, ind2, true);
            if (buf && buf[i] == p) fa_buf_printf(o, "%srb%d[j] = v%d;\n", ind2, i, i);
        }
        for (int i = 0; i < b->nv; i++) {
            const cg_val *v = &b->v[i];
            if (!v->needed || v->kind != VK_RED || v->depth != p) continue;
            bool shift = !cu && p == 1 && (v->red == RED_SUM || v->red == RED_MEAN);
            switch (v->red) {
            case RED_MAX:
                fa_buf_printf(o, "%sa%d = a%d > v%d ? a%d : v%d;\n", ind2, i, i, v->arg, i, v->arg);
                break;
            case RED_MIN:
                fa_buf_printf(o, "%sa%d = a%d < v%d ? a%d : v%d;\n", ind2, i, i, v->arg, i, v->arg);
                break;
            case RED_SUMSQ:
                fa_buf_printf(o, "%sa%d += v%d * v%d;\n", ind2, i, v->arg, v->arg);
                break;
            default:
                if (shift) fa_buf_printf(o, "%sa%d += v%d - k%d;\n", ind2, i, v->arg, i);
                else fa_buf_printf(o, "%sa%d += v%d;\n", ind2, i, v->arg);
                break;
            }
        }
        fa_buf_printf(o, "%s}\n", ind);
        for (int i = 0; i < b->nv; i++) {
            const cg_val *v = &b->v[i];
            if (!v->needed || v->kind != VK_RED || v->depth != p) continue;
            bool shift = !cu && p == 1 && (v->red == RED_SUM || v->red == RED_MEAN);
            if (cu)
                fa_buf_printf(o, "%sa%d = fa_block_%s(a%d, fa_red);\n", ind, i,
                              v->red == RED_MAX ? "max" : v->red == RED_MIN ? "min" : "sum", i);
            if (v->red == RED_MEAN && shift)
                fa_buf_printf(o, "%sconst float v%d = k%d + a%d / (float)len;\n", ind, i, i, i);
            else if (v->red == RED_MEAN)
                fa_buf_printf(o, "%sconst float v%d = a%d / (float)len;\n", ind, i, i);
            else if (shift)
                fa_buf_printf(o, "%sconst float v%d = k%d * (float)len + a%d;\n", ind, i, i, i);
            else
                fa_buf_printf(o, "%sconst float v%d = a%d;\n", ind, i, i);
        }
        for (int i = 0; i < b->nv; i++)
            if (b->v[i].needed && b->v[i].level == LV_ROW && b->v[i].depth == p && b->v[i].kind == VK_OP)
                stmt(o, b, i, ind, true);
    }
    /* final pass: full outputs */
    memset(set, 0, (size_t)b->nv);
    bool any_full = false;
    int fin = b->max_depth + 1;
    for (int k = 0; k < b->c->n_outputs; k++) {
        int vi = b->tval[b->c->outputs[k]];
        if (fa_tensor_numel(b->g->tensors[b->c->outputs[k]]) == b->n) {
            any_full = true;
            closure_in(b, vi, set, buf, fin);
        }
    }
    if (any_full) {
        if (cu) fa_buf_printf(o, "%sfor (%s j = threadIdx.x; j < len; j += %lld) {\n", ind, IT, (long long)bs);
        else fa_buf_printf(o, "#pragma omp simd\n%sfor (int64_t j = 0; j < len; j++) {\n", ind);
        for (int i = 0; i < b->nv; i++) {
            if (!set[i]) continue;
            if (buf && buf[i] > 0) fa_buf_printf(o, "%sconst float v%d = rb%d[j];\n", ind2, i, i);
            else stmt(o, b, i, ind2, true);
        }
        for (int k = 0; k < b->c->n_outputs; k++)
            if (fa_tensor_numel(b->g->tensors[b->c->outputs[k]]) == b->n)
                fa_buf_printf(o, "%sout%d[base + j] = v%d;\n", ind2, k, b->tval[b->c->outputs[k]]);
        fa_buf_printf(o, "%s}\n", ind);
    }
    for (int k = 0; k < b->c->n_outputs; k++)
        if (fa_tensor_numel(b->g->tensors[b->c->outputs[k]]) != b->n)
            fa_buf_printf(o, "%s%sout%d[row] = v%d;\n", ind, cu ? "if (threadIdx.x == 0) " : "", k,
                          b->tval[b->c->outputs[k]]);
    if (!cu) fa_buf_puts(o, "    }\n");
    free(set);
    free(buf);
    (void)ind3;
}

/* tanhf through SLEEF's u35 variant (<= 3.5 ULP). libmvec's name, _ZGVeN16v_tanhf, resolves to
 * SLEEF's GNU-ABI library first (runtime/cpu/compile.c links it before -lm) and there it is the
 * 1-ULP u10 variant, 2.3-2.6x slower than u35 (1 thread, AVX-512, 1 K to 1 M floats: 2.0 against
 * 1.0 us, 1522 against 648 us; max abs error 6e-8 against 1.5e-7), while the unfused Tanh runs
 * u35 (graph/vmath.c fa_vtanhf): a fused Sigmoid/Tanh chain measured slower than its members on
 * small tensors. SLEEF's GNU ABI names its u35 vector variants after a scalar "tanhf_u35"
 * (_ZGVdN8v_tanhf_u35, _ZGVeN16v_tanhf_u35, ...: `nm -D libsleefgnuabi.so`), and gcc names a
 * `declare simd` function's vector variants after its assembler name (the Vector Function ABI),
 * so declaring fa_tanhf_u35 with that assembler name sends the vectorised lanes to u35. The
 * declaration says `const` as math.h's builtin tanhf is known to be: without it gcc treats the
 * call as clobbering memory, cannot if-convert a select after it (a Relu), and left a
 * Sigmoid/Tanh/Relu/Neg chain scalar, 6x slower (40 against 6.6 us on 1 K floats). The
 * library has no scalar tanhf_u35: each source defines it, weak and hidden (several sources link
 * into one object; a batch is one translation unit, hence FA_TANHF_U35), as libm's tanhf for the
 * scalar remainder. Only where the compile command says it links SLEEF's GNU-ABI library
 * (-DFA_SLEEF_GNUABI, runtime/cpu/compile.c); elsewhere tanhf stays libm's. */
static const char k_tanh_u35[] =
    "#if defined(FA_SLEEF_GNUABI) && defined(__x86_64__) && defined(_OPENMP) && !defined(__FAST_MATH__) && \\\n"
    "    !defined(FA_TANHF_U35)\n"
    "/* tanhf: SLEEF's u35 vector variant, as the unfused Tanh; libm's tanhf for scalar remainders */\n"
    "#define FA_TANHF_U35 1\n"
    "#pragma omp declare simd notinbranch\n"
    "float fa_tanhf_u35(float) __asm__(\"tanhf_u35\") __attribute__((const, nothrow, leaf));\n"
    "static __attribute__((used)) float fa_tanhf_u35_scalar(float x) { return tanhf(x); }\n"
    "__asm__(\".weak tanhf_u35\\n.hidden tanhf_u35\\n.set tanhf_u35, fa_tanhf_u35_scalar\");\n"
    "#define tanhf fa_tanhf_u35\n"
    "#endif\n\n";

/* erff's vector lanes through glibc's libmvec, not SLEEF. With SLEEF's GNU-ABI library linked
 * first (runtime/cpu/compile.c), the vector names gcc calls (_ZGVeN16v_erff, ...) resolve to SLEEF's
 * erff, 2.7x slower than libmvec's: wav2vec2-Conformer's generated LayerNorm tail + GELU over
 * [512, 3199] took 2.11 ms against 0.78 with libmvec's (2 threads, AVX-512; measured on the kernel
 * the plan generated, bench/README.md "A fifth sweep"), slower than its seven unfused members, which
 * already call libmvec's erff (graph/vmath.c, "Erf through libmvec"). A .symver directive binds this
 * source's references to the GLIBC_2.35 version, which only libmvec defines (SLEEF's names carry no
 * version); libm's linker script brings libmvec in. Once per translation unit (a batch compiles
 * several sources as one: FA_ERFF_MVEC). Only where SLEEF is linked (-DFA_SLEEF_GNUABI). */
static const char k_erff_mvec[] =
    "#if defined(FA_SLEEF_GNUABI) && defined(__x86_64__) && defined(__GLIBC__) && defined(_OPENMP) && \\\n"
    "    !defined(__FAST_MATH__) && !defined(FA_ERFF_MVEC)\n"
    "#if __GLIBC_PREREQ(2, 35)\n"
    "/* erff: libmvec's vector variants (GLIBC_2.35), as the unfused Erf; SLEEF's are slower */\n"
    "#define FA_ERFF_MVEC 1\n"
    "__asm__(\".symver _ZGVbN4v_erff,_ZGVbN4v_erff@GLIBC_2.35\");\n"
    "__asm__(\".symver _ZGVcN8v_erff,_ZGVcN8v_erff@GLIBC_2.35\");\n"
    "__asm__(\".symver _ZGVdN8v_erff,_ZGVdN8v_erff@GLIBC_2.35\");\n"
    "__asm__(\".symver _ZGVeN16v_erff,_ZGVeN16v_erff@GLIBC_2.35\");\n"
    "#endif\n"
    "#endif\n\n";

/* glibc's libmvec has vector variants of these float functions (x86_64: expf logf sinf cosf
 * powf since glibc 2.22, tanhf erff log1pf since 2.35 — libmvec.so symbol versions). Declaring
 * them `omp declare simd` lets gcc vectorise loops that call them (math.h declares them so only
 * under -ffast-math); libm.so's linker script pulls libmvec in AS_NEEDED with -lm. Measured here:
 * tanh+exp over 4M floats, 1 thread, AVX2: 257 ms scalar -> 18 ms, max rel error 2e-7. */
static void simd_decls(fa_buf *o, const cg *b)
{
    static const struct { const char *fn, *proto; int minor; } F[] = {
        {"expf(", "float expf(float);", 22},   {"logf(", "float logf(float);", 22},
        {"sinf(", "float sinf(float);", 22},   {"cosf(", "float cosf(float);", 22},
        {"powf(", "float powf(float, float);", 22}, {"tanhf(", "float tanhf(float);", 35},
        {"erff(", "float erff(float);", 35},   {"log1pf(", "float log1pf(float);", 35},
    };
    bool any = false;
    for (size_t f = 0; f < sizeof F / sizeof F[0]; f++) {
        bool used = false;
        for (int i = 0; i < b->nv && !used; i++)
            used = b->v[i].needed && b->v[i].kind == VK_OP && strstr(b->v[i].expr, F[f].fn) != NULL;
        if (!used) continue;
        if (!any)
            fa_buf_puts(o, "#if defined(__x86_64__) && defined(__GLIBC__) && defined(_OPENMP) && !defined(__FAST_MATH__)\n"
                           "/* glibc libmvec vector variants: let the compiler vectorise the loops below */\n");
        any = true;
        fa_buf_printf(o, "#if __GLIBC_PREREQ(2, %d)\n#pragma omp declare simd notinbranch\n%s\n#endif\n", F[f].minor,
                      F[f].proto);
    }
    if (any) fa_buf_puts(o, "#endif\n\n");
    bool tanh_used = false;
    for (int i = 0; i < b->nv && !tanh_used; i++)
        tanh_used = b->v[i].needed && b->v[i].kind == VK_OP && strstr(b->v[i].expr, "tanhf(") != NULL;
    if (tanh_used) fa_buf_puts(o, k_tanh_u35);
    bool erf_used = false;
    for (int i = 0; i < b->nv && !erf_used; i++)
        erf_used = b->v[i].needed && b->v[i].kind == VK_OP && strstr(b->v[i].expr, "erff(") != NULL;
    if (erf_used) fa_buf_puts(o, k_erff_mvec);
}

static fa_status gen(fa_ctx *ctx, const fa_graph *g, const fa_kernel_desc *c, const char *plan_hash, fa_buf *out,
                     fa_codegen_info *info, int lang)
{
    cg b;
    if (cg_build(&b, g, c, lang) < 0) {
        fa_status st = fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "codegen cluster %d: %s", c->id, b.msg);
        cg_free(&b);
        return st;
    }
    if (lang == LANG_CUDA && b.rowk && b.rows > 0x7fffffff) {
        cg_free(&b);
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "codegen cluster %d: %lld rows exceed the CUDA grid limit", c->id,
                            (long long)b.rows);
    }
    fa_buf o;
    fa_buf_init(&o);
    fa_codegen_info inf;
    memset(&inf, 0, sizeof inf);
    fa_cg_header(&o, c, plan_hash, &inf);
    fa_buf_printf(&o, "/* %s: %lld row(s) x %lld element(s); inputs %d, outputs %d */\n",
                  b.rowk ? "row kernel" : "elementwise kernel", (long long)b.rows, (long long)b.rowlen, c->n_inputs,
                  c->n_outputs);
    if (lang == LANG_C) {
        fa_buf_puts(&o, "#include <math.h>\n#include <stdint.h>\n\n");
        simd_decls(&o, &b);
        fa_buf_printf(&o, "void %s(const void *const *in, void *const *out, int threads);\n", inf.name);
        fa_buf_printf(&o, "void %s(const void *const *in, void *const *out, int threads)\n{\n", inf.name);
        params_c(&o, &b);
        fa_buf_puts(&o, "    (void)threads;\n");
        if (b.rowk) {
            emit_row(&o, &b, lang, 0);
            inf.work_items = b.rows;
        } else if (c->layout != FA_LAYOUT_PLAIN) {
            emit_blocked(&o, &b);
            inf.work_items = b.n;
        } else {
            bool fast = fast_path(&b);
            if (!fast && emit_tiled(&o, &b)) {
                inf.work_items = b.n;
                fa_buf_puts(&o, "}\n");
                goto done_c;
            }
            if (b.prod_t >= 0) { /* one block of rows, on the caller's thread */
                if (fast) fa_buf_puts(&o, "    /* contiguous: every input full-size or scalar */\n#pragma omp simd\n");
                fa_buf_puts(&o, "    for (int64_t i = lo; i < hi; i++) {\n");
            } else {
                fa_buf_printf(&o, "    const int64_t n = %lld;\n", (long long)b.n);
                bool par = b.n > FA_CODEGEN_PARALLEL_MIN;
                if (fast) fa_buf_printf(&o, "    /* contiguous: every input full-size or scalar */\n#pragma omp %s\n",
                                        par ? "parallel for simd num_threads(threads) schedule(static)" : "simd");
                else if (par) fa_buf_puts(&o, "#pragma omp parallel for num_threads(threads) schedule(static)\n");
                fa_buf_puts(&o, "    for (int64_t i = 0; i < n; i++) {\n");
            }
            for (int i = 0; i < b.nv; i++)
                if (b.v[i].needed) stmt(&o, &b, i, "        ", false);
            for (int k = 0; k < c->n_outputs; k++) store_ew(&o, &b, k, "        ");
            fa_buf_puts(&o, "    }\n");
            inf.work_items = b.n;
        }
        fa_buf_puts(&o, "}\n");
    done_c:;
    } else {
        int64_t bs;
        if (b.rowk) {
            bs = pow2_block(b.rowlen);
            fa_buf_puts(&o, FA_CUDA_REDUCE_HELPERS "\n");
            inf.grid = b.rows > 0 ? b.rows : 1;
            inf.work_items = b.rows;
        } else {
            bs = 256;
            int64_t gr = (b.n + bs - 1) / bs;
            if (gr > 1048576) gr = 1048576; /* grid-stride loop covers the rest */
            inf.grid = gr < 1 ? 1 : gr;
            inf.work_items = b.n;
        }
        inf.block_size = (int)bs;
        fa_buf_printf(&o, "extern \"C\" __global__ void __launch_bounds__(%lld) %s(\n", (long long)bs, inf.name);
        params_cuda(&o, &b);
        fa_buf_puts(&o, "{\n");
        if (b.rowk) {
            emit_row(&o, &b, lang, bs);
        } else {
            const char *IT = b.n > 0x3fffffff ? "long long" : "int";
            fa_buf_printf(&o, "    const %s n = %lld;\n", IT, (long long)b.n);
            fa_buf_printf(&o, "    for (%s i = (%s)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (%s)gridDim.x * blockDim.x) {\n",
                          IT, IT, IT);
            for (int i = 0; i < b.nv; i++)
                if (b.v[i].needed) stmt(&o, &b, i, "        ", false);
            for (int k = 0; k < c->n_outputs; k++) store_ew(&o, &b, k, "        ");
            fa_buf_puts(&o, "    }\n");
        }
        fa_buf_puts(&o, "}\n");
    }
    cg_free(&b);
    if (o.oom) {
        fa_buf_free(&o);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "codegen cluster %d: out of memory", c->id);
    }
    fa_buf_append(out, o.data, o.len);
    fa_buf_free(&o);
    if (info) *info = inf;
    return FA_OK;
}

fa_status fa_codegen_kernel(fa_ctx *ctx, const fa_graph *g, const fa_kernel_desc *c, fa_kernel_lang lang,
                            const char *plan_hash, fa_buf *out, fa_codegen_info *info)
{
    if (c->kind == FA_KERNEL_ATTENTION)
        return fa_cg_attention(ctx, g, c, lang == FA_KERNEL_LANG_CUDA, plan_hash, out, info);
    return gen(ctx, g, c, plan_hash, out, info, lang == FA_KERNEL_LANG_CUDA ? LANG_CUDA : LANG_C);
}

void fa_cg_flit(char *out, size_t cap, double v, bool cuda) { flit(out, cap, v, cuda ? LANG_CUDA : LANG_C); }
