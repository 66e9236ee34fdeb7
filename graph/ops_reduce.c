/* graph/ops_reduce — reductions (ReduceMean/Sum/Max/Min/Prod/L1/L2/SumSquare/LogSumExp,
 * ArgMax/ArgMin), selections and scans along an axis (TopK, CumSum, CumProd): shape inference,
 * FLOPs/bytes formulas and reference CPU kernels.
 *
 * Semantics after the ONNX operator spec for opsets 1..23: `axes` is an attribute before
 * opset 18 (ReduceSum: 13) and an optional int64 input from then on; this code accepts
 * whichever form the node carries. Empty or absent axes reduce every axis unless
 * noop_with_empty_axes=1 (then the op is the identity). Accumulation is in double; integer
 * Sum/Prod/Max/Min/SumSquare/L1 are exact in int64 with wrap-around, as numpy's. Reducing an
 * empty domain gives the ONNX reference values: Sum 0, Prod 1, Max -inf / lowest, Min +inf /
 * highest, LogSumExp -inf, Mean NaN. */
#include "ops-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RD_PAR_MIN 32768 /* input elements below which one thread does the whole reduction */

typedef enum rop {
    R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_SUMSQ, R_LOGSUMEXP, R_ARGMAX, R_ARGMIN,
    R_COUNT
} rop;

typedef struct rop_desc {
    const char *name;
    rop op;
    unsigned flops;      /* FLOPs per input element */
    int axes_input_from; /* first opset where axes is input 1 */
} rop_desc;

static const rop_desc k_reduce[] = {
    {"ReduceSum", R_SUM, 1, 13},          {"ReduceMean", R_MEAN, 1, 18},
    {"ReduceMax", R_MAX, 1, 18},          {"ReduceMin", R_MIN, 1, 18},
    {"ReduceProd", R_PROD, 1, 18},        {"ReduceL1", R_L1, 2, 18},
    {"ReduceL2", R_L2, 2, 18},            {"ReduceSumSquare", R_SUMSQ, 2, 18},
    {"ReduceLogSumExp", R_LOGSUMEXP, 2, 18},
    {"ArgMax", R_ARGMAX, 1, 0},           {"ArgMin", R_ARGMIN, 1, 0},
};

static const rop_desc *reduce_desc(const char *op_type)
{
    for (size_t i = 0; i < sizeof k_reduce / sizeof k_reduce[0]; i++)
        if (strcmp(k_reduce[i].name, op_type) == 0) return &k_reduce[i];
    return NULL;
}

static bool dt_reducible(fa_dtype t)
{
    return t != FA_DTYPE_UNDEFINED && t != FA_DTYPE_STRING && fa_dtype_size(t) > 0;
}

/* Which axes of a rank-`rank` input are reduced. `axes`/`n_axes` come from the attribute or
 * input 1; *identity is set when noop_with_empty_axes applies. Errors name the node. */
static fa_status reduce_mask(fa_ctx *ctx, const fa_node *n, int rank, const int64_t *axes,
                             int n_axes, bool have_axes, bool *mask, bool *identity)
{
    *identity = false;
    memset(mask, 0, sizeof(bool) * FA_MAX_RANK);
    if (!have_axes || n_axes == 0) {
        if (fa_node_attr_int(n, "noop_with_empty_axes", 0)) {
            *identity = true;
            return FA_OK;
        }
        for (int i = 0; i < rank; i++) mask[i] = true;
        return FA_OK;
    }
    for (int k = 0; k < n_axes; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
        if (a < 0 || a >= rank)
            return fa_node_error(ctx, n, "axis %lld out of range for rank %d", (long long)axes[k], rank);
        if (mask[a]) return fa_node_error(ctx, n, "axis %lld listed twice", (long long)axes[k]);
        mask[a] = true;
    }
    return FA_OK;
}

static void reduce_out_shape(int rank, const int64_t *dims, const bool *mask, bool keepdims,
                             int *rout, int64_t *dout)
{
    int r = 0;
    for (int i = 0; i < rank; i++) {
        if (!mask[i]) dout[r++] = dims[i];
        else if (keepdims) dout[r++] = 1;
    }
    *rout = r;
}

/* ---- shape inference ---- */

static fa_status infer_reduce(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    if (x->dtype && !dt_reducible(x->dtype))
        return fa_node_error(ctx, n, "input '%s' has dtype %s, expected a numeric type", x->name,
                             fa_dtype_name(x->dtype));
    int64_t axes[FA_MAX_RANK];
    int n_axes = 0;
    bool have = false;
    const int64_t *aa;
    int na = fa_node_attr_ints(n, "axes", &aa);
    if (fa_node_attr(n, "axes")) {
        if (na > FA_MAX_RANK) return fa_node_error(ctx, n, "%d axes for rank %d", na, x->rank);
        memcpy(axes, aa, sizeof(int64_t) * (size_t)na);
        n_axes = na;
        have = true;
    } else if (fa_graph_in(g, n, 1)) {
        fa_status st = fa_const_ints(ctx, g, n, 1, axes, FA_MAX_RANK, &n_axes);
        if (st) return st;
        have = true;
    }
    bool mask[FA_MAX_RANK], identity;
    fa_status st = reduce_mask(ctx, n, x->rank, axes, n_axes, have, mask, &identity);
    if (st) return st;
    if (identity) {
        fa_set_out(g, n, 0, x->dtype, x->rank, x->dims);
        return FA_OK;
    }
    int r;
    int64_t d[FA_MAX_RANK];
    reduce_out_shape(x->rank, x->dims, mask, fa_node_attr_int(n, "keepdims", 1) != 0, &r, d);
    fa_set_out(g, n, 0, x->dtype, r, d);
    return FA_OK;
}

static fa_status infer_arg(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    if (x->dtype && !dt_reducible(x->dtype))
        return fa_node_error(ctx, n, "input '%s' has dtype %s, expected a numeric type", x->name,
                             fa_dtype_name(x->dtype));
    int axis = fa_norm_axis(ctx, n, fa_node_attr_int(n, "axis", 0), x->rank);
    if (axis < 0) return fa_ctx_status(ctx);
    bool mask[FA_MAX_RANK] = {false};
    mask[axis] = true;
    int r;
    int64_t d[FA_MAX_RANK];
    reduce_out_shape(x->rank, x->dims, mask, fa_node_attr_int(n, "keepdims", 1) != 0, &r, d);
    fa_set_out(g, n, 0, FA_DTYPE_INT64, r, d);
    return FA_OK;
}

/* ---- kernels ---- */

static double rd_init(rop op, fa_dtype dt)
{
    switch (op) {
    case R_PROD: return 1.0;
    case R_MAX: return -INFINITY;
    case R_MIN: return INFINITY;
    default: return 0.0;
    }
    (void)dt;
}

static inline double rd_step(rop op, double acc, double x)
{
    switch (op) {
    case R_SUM: case R_MEAN: return acc + x;
    case R_MAX: return (x > acc || x != x) ? x : acc;
    case R_MIN: return (x < acc || x != x) ? x : acc;
    case R_PROD: return acc * x;
    case R_L1: return acc + fabs(x);
    case R_L2: case R_SUMSQ: return acc + x * x;
    case R_LOGSUMEXP: return acc + exp(x);
    default: return acc;
    }
}

static inline double rd_final(rop op, double acc, int64_t count)
{
    switch (op) {
    case R_MEAN: return acc / (double)count;
    case R_L2: return sqrt(acc);
    case R_LOGSUMEXP: return log(acc);
    default: return acc;
    }
}

/* Max/Min of an empty domain on an integer type: the type's lowest/highest (the ONNX
 * reference uses numpy's iinfo there); ±inf saturates through fa_store_from_double's
 * conversion otherwise, so clamp here. */
static double rd_clamp(fa_dtype dt, double v)
{
    if (isfinite(v) || dt == FA_DTYPE_FLOAT || dt == FA_DTYPE_DOUBLE || dt == FA_DTYPE_FLOAT16 ||
        dt == FA_DTYPE_BFLOAT16)
        return v;
    if (v != v) return 0;
    switch (dt) {
    case FA_DTYPE_INT8: return v < 0 ? INT8_MIN : INT8_MAX;
    case FA_DTYPE_UINT8: return v < 0 ? 0 : UINT8_MAX;
    case FA_DTYPE_INT16: return v < 0 ? INT16_MIN : INT16_MAX;
    case FA_DTYPE_UINT16: return v < 0 ? 0 : UINT16_MAX;
    case FA_DTYPE_INT32: return v < 0 ? INT32_MIN : INT32_MAX;
    case FA_DTYPE_UINT32: return v < 0 ? 0 : UINT32_MAX;
    case FA_DTYPE_BOOL: return v < 0 ? 0 : 1;
    case FA_DTYPE_UINT64: return v < 0 ? 0 : 18446744073709549568.0;
    default: return v < 0 ? -9223372036854775808.0 : 9223372036854774784.0;
    }
}

/* Reduced axes merged into groups: the input is viewed as alternating kept/reduced blocks.
 * (outer, red, inner) covers every case with one reduced block; others use the odometer. */
typedef struct rd_view {
    int rank;
    int64_t dims[FA_MAX_RANK];
    bool red[FA_MAX_RANK];
} rd_view;

static void rd_view_make(rd_view *v, int rank, const int64_t *dims, const bool *mask)
{
    v->rank = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 1) continue; /* size-1 axes change nothing */
        if (v->rank && v->red[v->rank - 1] == mask[i]) {
            v->dims[v->rank - 1] *= dims[i];
            continue;
        }
        v->dims[v->rank] = dims[i];
        v->red[v->rank] = mask[i];
        v->rank++;
    }
}

/* Integer Sum/Prod/Max/Min/SumSquare/L1 exactly, as numpy reduces integers (the reference):
 * int64 accumulators with two's-complement wrap-around, unsigned order for uint64, the type's
 * lowest/highest for Max/Min of an empty domain; stored wrapping to the element type. One pass
 * over the input in row-major order; out[o] gets input element e with o from the kept axes. */
static bool rd_int_exact(rop op) { return op == R_SUM || op == R_PROD || op == R_MAX || op == R_MIN || op == R_SUMSQ || op == R_L1; }

static fa_status reduce_int(fa_ctx *ctx, const fa_node *n, rop op, const fa_value *x, const bool *mask,
                            fa_value *y)
{
    int64_t ne_out = fa_value_numel(y), ne_in = fa_value_numel(x);
    bool u64 = x->dtype == FA_DTYPE_UINT64, is_signed = x->dtype == FA_DTYPE_INT8 || x->dtype == FA_DTYPE_INT16 ||
                                                       x->dtype == FA_DTYPE_INT32 || x->dtype == FA_DTYPE_INT64;
    int64_t lo, hi; /* the type's range, for the empty Max/Min */
    switch (x->dtype) {
    case FA_DTYPE_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
    case FA_DTYPE_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
    case FA_DTYPE_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
    case FA_DTYPE_INT64: lo = INT64_MIN; hi = INT64_MAX; break;
    case FA_DTYPE_UINT8: lo = 0; hi = UINT8_MAX; break;
    case FA_DTYPE_UINT16: lo = 0; hi = UINT16_MAX; break;
    case FA_DTYPE_UINT32: lo = 0; hi = UINT32_MAX; break;
    case FA_DTYPE_UINT64: lo = 0; hi = -1; break; /* UINT64_MAX's bits */
    default: lo = 0; hi = 1; break;               /* bool */
    }
    (void)is_signed;
    int64_t *acc = malloc(sizeof(int64_t) * (size_t)(ne_out > 0 ? ne_out : 1));
    if (!acc) return fa_ctx_error(ctx, FA_ERR_NOMEM, "node '%s' (%s): out of memory", n->name, n->op_type);
    int64_t init = op == R_PROD ? 1 : op == R_MAX ? lo : op == R_MIN ? hi : 0;
    for (int64_t o = 0; o < ne_out; o++) acc[o] = init;
    int r = x->rank;
    int64_t ostr[FA_MAX_RANK], s = 1, idx[FA_MAX_RANK] = {0};
    for (int a = r - 1; a >= 0; a--) { /* output stride of each input axis; 0 on reduced axes */
        ostr[a] = mask[a] ? 0 : s;
        if (!mask[a]) s *= x->dims[a];
    }
    int64_t o = 0;
    for (int64_t e = 0; e < ne_in; e++) {
        int64_t v = fa_load_as_i64(x->data, x->dtype, e), *a = &acc[o];
        switch (op) {
        case R_SUM: *a = (int64_t)((uint64_t)*a + (uint64_t)v); break;
        case R_SUMSQ: *a = (int64_t)((uint64_t)*a + (uint64_t)v * (uint64_t)v); break;
        case R_L1: *a = (int64_t)((uint64_t)*a + (uint64_t)(v < 0 && !u64 ? 0 - (uint64_t)v : (uint64_t)v)); break;
        case R_PROD: *a = (int64_t)((uint64_t)*a * (uint64_t)v); break;
        case R_MAX: if (u64 ? (uint64_t)v > (uint64_t)*a : v > *a) *a = v; break;
        default: if (u64 ? (uint64_t)v < (uint64_t)*a : v < *a) *a = v; break;
        }
        for (int d = r - 1; d >= 0; d--) { /* odometer: next input element, its output index */
            o += ostr[d];
            if (++idx[d] < x->dims[d]) break;
            o -= ostr[d] * x->dims[d];
            idx[d] = 0;
        }
    }
    for (int64_t k = 0; k < ne_out; k++) fa_store_from_i64(y->data, y->dtype, k, acc[k]);
    free(acc);
    return FA_OK;
}

/* Reduction rows of kernel_reduce, one output element o each (a team of threads shares the rows, or
 * one thread runs them all: FA_OMP_TEAM). rd_row: input row o of R contiguous elements (inner = 1);
 * float Sum/Mean in a simd reduction (independent double partial sums, no latency chain).
 * rd_middle: R rows of `inner` values each, accumulated a row at a time into acc[inner] so the
 * input is read contiguously. */
static void rd_row(const fa_value *x, fa_value *y, rop op, double init, int64_t count, int64_t o, int64_t R)
{
    double acc = init;
    if (x->dtype == FA_DTYPE_FLOAT) {
        const float *p = (const float *)x->data + o * R;
        if (op == R_SUM || op == R_MEAN) {
            double s0 = 0;
#pragma omp simd reduction(+ : s0)
            for (int64_t r = 0; r < R; r++) s0 += p[r];
            acc = s0;
        } else
            for (int64_t r = 0; r < R; r++) acc = rd_step(op, acc, p[r]);
    } else {
        for (int64_t r = 0; r < R; r++) acc = rd_step(op, acc, fa_load_as_double(x->data, x->dtype, o * R + r));
    }
    fa_store_from_double(y->data, y->dtype, o, rd_clamp(y->dtype, rd_final(op, acc, count)));
}

static void rd_middle(const fa_value *x, fa_value *y, rop op, double init, int64_t count, int64_t o, int64_t R,
                      int64_t inner, double *acc)
{
    const bool f32 = x->dtype == FA_DTYPE_FLOAT;
    for (int64_t j = 0; j < inner; j++) acc[j] = init;
    for (int64_t r = 0; r < R; r++) {
        int64_t base = (o * R + r) * inner;
        if (f32 && (op == R_SUM || op == R_MEAN)) {
            const float *p = (const float *)x->data + base;
#pragma omp simd
            for (int64_t j = 0; j < inner; j++) acc[j] += p[j];
        } else if (f32) {
            const float *p = (const float *)x->data + base;
            for (int64_t j = 0; j < inner; j++) acc[j] = rd_step(op, acc[j], p[j]);
        } else {
            for (int64_t j = 0; j < inner; j++) acc[j] = rd_step(op, acc[j], fa_load_as_double(x->data, x->dtype, base + j));
        }
    }
    for (int64_t j = 0; j < inner; j++)
        fa_store_from_double(y->data, y->dtype, o * inner + j, rd_clamp(y->dtype, rd_final(op, acc[j], count)));
}

static fa_status kernel_reduce(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                               fa_value *out, int n_out, int threads)
{
    const rop_desc *d = reduce_desc(n->op_type);
    if (!d) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': %s is not a reduction", n->name, n->op_type);
    const fa_value *x = &in[0];
    fa_value *y = &out[0];
    if ((!x->data && fa_value_numel(x) > 0) || !dt_reducible(x->dtype) || y->dtype != x->dtype)
        return fa_node_unsupported(ctx, n, "dtype %s is not supported", fa_dtype_name(x->dtype));
    int64_t axes[FA_MAX_RANK];
    int n_axes = 0;
    bool have = false;
    const int64_t *aa;
    int na = fa_node_attr_ints(n, "axes", &aa);
    if (fa_node_attr(n, "axes")) {
        if (na > FA_MAX_RANK) return fa_node_error(ctx, n, "%d axes for rank %d", na, x->rank);
        memcpy(axes, aa, sizeof(int64_t) * (size_t)na);
        n_axes = na;
        have = true;
    } else if (n_in > 1 && in[1].data) {
        int64_t cnt = fa_value_numel(&in[1]);
        if (cnt > FA_MAX_RANK) return fa_node_error(ctx, n, "%lld axes for rank %d", (long long)cnt, x->rank);
        if (in[1].dtype != FA_DTYPE_INT64 && in[1].dtype != FA_DTYPE_INT32)
            return fa_node_error(ctx, n, "axes input must be int64, is %s", fa_dtype_name(in[1].dtype));
        for (int64_t k = 0; k < cnt; k++)
            axes[k] = in[1].dtype == FA_DTYPE_INT64 ? ((const int64_t *)in[1].data)[k]
                                                   : ((const int32_t *)in[1].data)[k];
        n_axes = (int)cnt;
        have = true;
    }
    bool mask[FA_MAX_RANK], identity;
    fa_status st = reduce_mask(ctx, n, x->rank, axes, n_axes, have, mask, &identity);
    if (st) return st;
    int64_t ne_in = fa_value_numel(x), ne_out = fa_value_numel(y);
    if (identity) {
        if (ne_in > 0) memcpy(y->data, x->data, (size_t)ne_in * fa_dtype_size(x->dtype));
        return FA_OK;
    }
    if (fa_dtype_is_integer(x->dtype) && x->dtype != FA_DTYPE_BOOL && rd_int_exact(d->op))
        return reduce_int(ctx, n, d->op, x, mask, y);
    int64_t count = 1;
    for (int i = 0; i < x->rank; i++)
        if (mask[i]) count *= x->dims[i];
    if (ne_out * (count ? count : 1) != ne_in && count != 0)
        return fa_node_error(ctx, n, "output buffer has %lld elements, expected %lld", (long long)ne_out,
                             (long long)(count ? ne_in / count : 0));
    rd_view v;
    rd_view_make(&v, x->rank, x->dims, mask);
    rop op = d->op;
    double init = rd_init(op, x->dtype);
    if (threads < 1) threads = 1;
    bool one_block = v.rank == 0 || (v.rank == 1) || (v.rank == 2) ||
                     (v.rank == 3 && v.red[1]);
    if (one_block) {
        /* (outer, R, inner) with R the reduced block (or 1 when nothing is reduced). */
        int64_t outer = 1, R = 1, inner = 1;
        if (v.rank == 1) { if (v.red[0]) R = v.dims[0]; else outer = v.dims[0]; }
        else if (v.rank == 2) {
            if (v.red[0]) { R = v.dims[0]; inner = v.dims[1]; }
            else { outer = v.dims[0]; R = v.dims[1]; }
        } else if (v.rank == 3) { outer = v.dims[0]; R = v.dims[1]; inner = v.dims[2]; }
        if (count == 0) R = 0;
        if (inner == 1) {
            if (FA_OMP_TEAM(threads, ne_in >= RD_PAR_MIN)) { /* else no team (ops-impl.h) */
#pragma omp parallel for num_threads(threads) schedule(static)
                for (int64_t o = 0; o < outer; o++) rd_row(x, y, op, init, count, o, R);
            } else {
                for (int64_t o = 0; o < outer; o++) rd_row(x, y, op, init, count, o, R);
            }
        } else {
            /* Reduce over the middle axis: accumulate a row of `inner` values per step so
             * the input is read contiguously. */
            int ok = 1;
            if (FA_OMP_TEAM(threads, ne_in >= RD_PAR_MIN)) { /* else no team (ops-impl.h) */
#pragma omp parallel num_threads(threads)
                {
                    double *acc = malloc(sizeof(double) * (size_t)inner);
                    if (!acc) {
#pragma omp atomic write
                        ok = 0;
                    }
#pragma omp for schedule(static)
                    for (int64_t o = 0; o < outer; o++)
                        if (acc) rd_middle(x, y, op, init, count, o, R, inner, acc);
                    free(acc);
                }
            } else {
                double *acc = malloc(sizeof(double) * (size_t)inner);
                for (int64_t o = 0; acc && o < outer; o++) rd_middle(x, y, op, init, count, o, R, inner, acc);
                ok = acc != NULL;
                free(acc);
            }
            if (!ok) return fa_ctx_error(ctx, FA_ERR_NOMEM, "node '%s': out of memory", n->name);
        }
        return FA_OK;
    }
    /* General case (several separate reduced blocks): per output element, walk the reduced
     * sub-space with an odometer. */
    int64_t stride[FA_MAX_RANK];
    {
        int64_t s = 1;
        for (int i = v.rank - 1; i >= 0; i--) { stride[i] = s; s *= v.dims[i]; }
    }
    int kept[FA_MAX_RANK], redx[FA_MAX_RANK], nk = 0, nr = 0;
    for (int i = 0; i < v.rank; i++) {
        if (v.red[i]) redx[nr++] = i;
        else kept[nk++] = i;
    }
#pragma omp parallel for num_threads(threads) if (ne_in >= RD_PAR_MIN) schedule(static)
    for (int64_t o = 0; o < ne_out; o++) {
        int64_t base = 0, rem = o;
        for (int k = nk - 1; k >= 0; k--) {
            base += (rem % v.dims[kept[k]]) * stride[kept[k]];
            rem /= v.dims[kept[k]];
        }
        int64_t idx[FA_MAX_RANK] = {0};
        double acc = init;
        for (int64_t c = 0; c < count; c++) {
            int64_t off = base;
            for (int k = 0; k < nr; k++) off += idx[k] * stride[redx[k]];
            acc = rd_step(op, acc, fa_load_as_double(x->data, x->dtype, off));
            for (int k = nr - 1; k >= 0; k--) {
                if (++idx[k] < v.dims[redx[k]]) break;
                idx[k] = 0;
            }
        }
        fa_store_from_double(y->data, y->dtype, o, rd_clamp(y->dtype, rd_final(op, acc, count)));
    }
    return FA_OK;
}

/* ArgMax/ArgMin along `axis`; ties give the first index, or the last with
 * select_last_index=1 (opset 12). A NaN is selected over any number, as numpy's
 * argmax/argmin (the ONNX reference implementation) do. */
static fa_status kernel_arg(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                            fa_value *out, int n_out, int threads)
{
    const fa_value *x = &in[0];
    if ((!x->data && fa_value_numel(x) > 0) || !dt_reducible(x->dtype) || out[0].dtype != FA_DTYPE_INT64)
        return fa_node_unsupported(ctx, n, "dtype %s is not supported", fa_dtype_name(x->dtype));
    int axis = fa_norm_axis(ctx, n, fa_node_attr_int(n, "axis", 0), x->rank);
    if (axis < 0) return fa_ctx_status(ctx);
    bool is_max = strcmp(n->op_type, "ArgMax") == 0;
    bool last = fa_node_attr_int(n, "select_last_index", 0) != 0;
    int64_t outer = 1, R = x->rank ? x->dims[axis] : 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++) inner *= x->dims[i];
    if (R == 0) return fa_node_error(ctx, n, "cannot take %s over an empty axis", n->op_type);
    int64_t *y = out[0].data;
    if (threads < 1) threads = 1;
#pragma omp parallel for num_threads(threads) if (outer * R * inner >= RD_PAR_MIN) schedule(static)
    for (int64_t t = 0; t < outer * inner; t++) {
        int64_t o = t / inner, j = t % inner, best_i = 0;
        double best = fa_load_as_double(x->data, x->dtype, o * R * inner + j);
        for (int64_t r = 1; r < R; r++) {
            double v = fa_load_as_double(x->data, x->dtype, (o * R + r) * inner + j);
            if (best != best) { /* a NaN wins (numpy argmax/argmin): first, or last */
                if (last && v != v) best_i = r;
                continue;
            }
            if (v != v) { best = v; best_i = r; continue; }
            bool better = is_max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
            if (better) { best = v; best_i = r; }
        }
        y[t] = best_i;
    }
    return FA_OK;
}

/* ---- TopK ---- */

/* k of a TopK node: input 1 (opset 10+, a one-element int64 tensor; constant for static
 * shapes) or attribute k (opset 1). */
static fa_status topk_k(fa_ctx *ctx, const fa_graph *g, const fa_node *n, int64_t *k)
{
    if (n->n_inputs >= 2) {
        int64_t v[1];
        int cnt;
        fa_status st = fa_const_ints(ctx, g, n, 1, v, 1, &cnt);
        if (st) return st;
        if (cnt != 1) return fa_node_error(ctx, n, "K must hold one value, has %d", cnt);
        *k = v[0];
    } else {
        const fa_attr *a = fa_node_attr(n, "k");
        if (!a) return fa_node_error(ctx, n, "needs input K or attribute k");
        *k = a->i;
    }
    return FA_OK;
}

/* Values and Indices: X's shape with dims[axis] = k; Indices int64. */
static fa_status infer_topk(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    if (x->dtype && (!dt_reducible(x->dtype) || x->dtype == FA_DTYPE_BOOL))
        return fa_node_error(ctx, n, "input '%s' has dtype %s, expected a numeric type", x->name,
                             fa_dtype_name(x->dtype));
    if (x->rank < 1) return fa_node_error(ctx, n, "input '%s' must have rank >= 1", x->name);
    int axis = fa_norm_axis(ctx, n, fa_node_attr_int(n, "axis", -1), x->rank);
    if (axis < 0) return fa_ctx_status(ctx);
    int64_t k = 0;
    fa_status st = topk_k(ctx, g, n, &k);
    if (st) return st;
    if (k < 0 || k > x->dims[axis])
        return fa_node_error(ctx, n, "k = %lld is outside [0, %lld] (axis %d of '%s')", (long long)k,
                             (long long)x->dims[axis], axis, x->name);
    int64_t d[FA_MAX_RANK];
    memcpy(d, x->dims, sizeof d);
    d[axis] = k;
    fa_set_out(g, n, 0, x->dtype, x->rank, d);
    fa_set_out(g, n, 1, FA_DTYPE_INT64, x->rank, d);
    return FA_OK;
}

typedef struct topk_item {
    double v;      /* value (float dtypes) */
    int64_t iv;    /* value (integer dtypes, exact) */
    int64_t idx;   /* position along the axis */
} topk_item;

/* Orders of the ONNX reference (numpy lexsort by (value, index), flipped for largest):
 * largest first / smallest first, ties by the smaller index, NaN greater than every number. */
static int topk_cmp_f(const topk_item *a, const topk_item *b, int dir)
{
    bool an = a->v != a->v, bn = b->v != b->v;
    int c = an || bn ? (an && bn ? 0 : an ? 1 : -1) : (a->v > b->v) - (a->v < b->v);
    if (c) return dir * c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}
static int topk_cmp_i(const topk_item *a, const topk_item *b, int dir)
{
    int c = (a->iv > b->iv) - (a->iv < b->iv);
    if (c) return dir * c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}
static int topk_largest_f(const void *a, const void *b) { return topk_cmp_f(a, b, -1); }
static int topk_smallest_f(const void *a, const void *b) { return topk_cmp_f(a, b, 1); }
static int topk_largest_i(const void *a, const void *b) { return topk_cmp_i(a, b, -1); }
static int topk_smallest_i(const void *a, const void *b) { return topk_cmp_i(a, b, 1); }

/* TopK (ONNX TopK-1/10/11/24): the k largest (largest=1) or smallest elements along axis,
 * sorted (sorted=0 leaves the order open: sorted output is conformant), with their indices. */
static fa_status kernel_topk(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                             fa_value *out, int n_out, int threads)
{
    const fa_value *x = &in[0];
    int axis = fa_norm_axis(ctx, n, fa_node_attr_int(n, "axis", -1), x->rank);
    if (axis < 0) return fa_ctx_status(ctx);
    int64_t k = out[0].dims[axis];
    bool largest = fa_node_attr_int(n, "largest", 1) != 0;
    bool integral = fa_dtype_is_integer(x->dtype);
    int (*cmp)(const void *, const void *) = integral ? (largest ? topk_largest_i : topk_smallest_i)
                                                      : (largest ? topk_largest_f : topk_smallest_f);
    int64_t outer = 1, R = x->dims[axis], inner = 1;
    for (int i = 0; i < axis; i++) outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++) inner *= x->dims[i];
    size_t es = fa_dtype_size(x->dtype);
    int64_t *yi = n_out > 1 && out[1].data ? out[1].data : NULL;
    int failed = 0;
    if (threads < 1) threads = 1;
#pragma omp parallel num_threads(threads) if (outer * R * inner >= RD_PAR_MIN)
    {
        topk_item *buf = malloc(sizeof(topk_item) * (size_t)(R ? R : 1));
        if (!buf) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t t = 0; t < outer * inner; t++) {
            if (!buf) continue;
            int64_t o = t / inner, j = t % inner;
            for (int64_t r = 0; r < R; r++) {
                int64_t src = (o * R + r) * inner + j;
                buf[r].idx = r;
                if (integral) buf[r].iv = fa_load_as_i64(x->data, x->dtype, src);
                else buf[r].v = fa_load_as_double(x->data, x->dtype, src);
            }
            qsort(buf, (size_t)R, sizeof *buf, cmp);
            for (int64_t r = 0; r < k; r++) {
                int64_t src = (o * R + buf[r].idx) * inner + j, dst = (o * k + r) * inner + j;
                memcpy((char *)out[0].data + dst * (int64_t)es, (const char *)x->data + src * (int64_t)es, es);
                if (yi) yi[dst] = buf[r].idx;
            }
        }
        free(buf);
    }
    if (failed) return fa_ctx_error(ctx, FA_ERR_NOMEM, "node '%s' (TopK): out of memory", n->name);
    return FA_OK;
}

/* TopK FLOPs = numel(X) * ceil(log2(R)) comparisons (a sort per slice of length R along axis). */
static void cost_topk(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *x = fa_graph_in(g, n, 0);
    if (!x || fa_tensor_numel(x) <= 0 || x->rank < 1) return;
    int64_t ax = fa_node_attr_int(n, "axis", -1);
    if (ax < 0) ax += x->rank;
    if (ax < 0 || ax >= x->rank) return;
    uint64_t lg = 1;
    while (((int64_t)1 << lg) < x->dims[ax]) lg++;
    out->flops = fa_u64_mul_sat((uint64_t)fa_tensor_numel(x), lg);
}

/* ---- CumSum, CumProd ---- */

/* FLOPs = numel(X) (one add or multiply per element); bytes = X + axis read, Y written. */
static void cost_cum(const fa_graph *g, const fa_node *n, fa_op_cost *out) { fa_cost_io(g, n, 1, out); }

static fa_status infer_cum(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0), *ax = x ? fa_req_input(ctx, g, n, 1) : NULL;
    if (!ax) return fa_ctx_status(ctx);
    if (x->dtype && (!dt_reducible(x->dtype) || x->dtype == FA_DTYPE_BOOL))
        return fa_node_error(ctx, n, "input '%s' has dtype %s, expected a numeric type", x->name,
                             fa_dtype_name(x->dtype));
    if (fa_tensor_numel(ax) != 1 || (ax->dtype != FA_DTYPE_INT64 && ax->dtype != FA_DTYPE_INT32))
        return fa_node_error(ctx, n, "axis input '%s' must be an int32/int64 scalar", ax->name);
    if (x->rank < 1) return fa_node_error(ctx, n, "input '%s' must have rank >= 1", x->name);
    fa_set_out(g, n, 0, x->dtype, x->rank, x->dims);
    return FA_OK;
}

/* CumSum-11/14, CumProd-26: running sum/product along axis (input 1, read at run time);
 * exclusive=1 starts from the identity (the element itself excluded), reverse=1 runs from the
 * end. Integers accumulate exactly in int64 and wrap to the element type, as numpy's cumsum
 * with dtype=x.dtype; floats accumulate in double. */
static fa_status kernel_cum(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                            fa_value *out, int n_out, int threads)
{
    const fa_value *x = &in[0];
    if (!in[1].data || fa_value_numel(&in[1]) != 1) return fa_node_error(ctx, n, "axis input must be a scalar");
    int axis = fa_norm_axis(ctx, n, fa_load_as_i64(in[1].data, in[1].dtype, 0), x->rank);
    if (axis < 0) return fa_ctx_status(ctx);
    bool prod = strcmp(n->op_type, "CumProd") == 0;
    bool excl = fa_node_attr_int(n, "exclusive", 0) != 0, rev = fa_node_attr_int(n, "reverse", 0) != 0;
    bool integral = fa_dtype_is_integer(x->dtype);
    int64_t outer = 1, R = x->dims[axis], inner = 1;
    for (int i = 0; i < axis; i++) outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++) inner *= x->dims[i];
    if (threads < 1) threads = 1;
#pragma omp parallel for num_threads(threads) if (outer * R * inner >= RD_PAR_MIN) schedule(static)
    for (int64_t t = 0; t < outer * inner; t++) {
        int64_t o = t / inner, j = t % inner;
        int64_t ia = prod ? 1 : 0;
        double da = prod ? 1.0 : 0.0;
        for (int64_t s = 0; s < R; s++) {
            int64_t r = rev ? R - 1 - s : s, e = (o * R + r) * inner + j;
            if (integral) {
                int64_t v = fa_load_as_i64(x->data, x->dtype, e);
                if (excl) fa_store_from_i64(out[0].data, out[0].dtype, e, ia);
                ia = prod ? (int64_t)((uint64_t)ia * (uint64_t)v) : (int64_t)((uint64_t)ia + (uint64_t)v);
                if (!excl) fa_store_from_i64(out[0].data, out[0].dtype, e, ia);
            } else {
                double v = fa_load_as_double(x->data, x->dtype, e);
                if (excl) fa_store_from_double(out[0].data, out[0].dtype, e, da);
                da = prod ? da * v : da + v;
                if (!excl) fa_store_from_double(out[0].data, out[0].dtype, e, da);
            }
        }
    }
    return FA_OK;
}

/* FLOPs = per-op count × input elements (Sum/Mean/Max/Min/Prod/ArgMax/ArgMin 1, L1/L2/
 * SumSquare/LogSumExp 2: a transform and an add), plus one per output element for the
 * finalisation of Mean/L2/LogSumExp. Bytes = input (and axes) read once + output written. */
static void cost_reduce(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const rop_desc *d = reduce_desc(n->op_type);
    const fa_tensor *x = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0);
    int64_t ne = x ? fa_tensor_numel(x) : 0, no = y ? fa_tensor_numel(y) : 0;
    if (!d || ne < 0 || no < 0) return;
    out->flops = fa_u64_mul_sat((uint64_t)ne, d->flops);
    if (d->op == R_MEAN || d->op == R_L2 || d->op == R_LOGSUMEXP) out->flops = fa_u64_add_sat(out->flops, (uint64_t)no);
}

#define REDUCE(NAME, KIND, ATTRS, DOC)                                                                       \
    {.name = NAME, .domain = "", .pattern = FA_PATTERN_REDUCTION, .min_inputs = 1, .max_inputs = 2,          \
     .min_outputs = 1, .max_outputs = 1, .infer = infer_reduce, .cost = cost_reduce, .kernel = kernel_reduce, \
     .doc = DOC, .attrs = ATTRS, .reduce = KIND}

/* Attributes each op reads (fa_attr_spec; ONNX operator spec, every opset): `axes` is an
 * attribute until ReduceSum-13 / the others' opset 18, then input 1. */
static const fa_attr_spec a_reduce[] = {{"axes", FA_ATTR_INTS, NULL, 0, 17}, {"keepdims", FA_ATTR_INT},
                                        {"noop_with_empty_axes", FA_ATTR_INT}, {0}};
static const fa_attr_spec a_reduce_sum[] = {{"axes", FA_ATTR_INTS, NULL, 0, 12}, {"keepdims", FA_ATTR_INT},
                                            {"noop_with_empty_axes", FA_ATTR_INT}, {0}};
static const fa_attr_spec a_arg[] = {{"axis", FA_ATTR_INT}, {"keepdims", FA_ATTR_INT},
                                     {"select_last_index", FA_ATTR_INT}, {0}};
static const fa_attr_spec a_topk[] = {{"axis", FA_ATTR_INT}, {"largest", FA_ATTR_INT}, {"sorted", FA_ATTR_INT},
                                      {"k", FA_ATTR_INT, NULL, 0, 9}, {0}};
static const fa_attr_spec a_cum[] = {{"exclusive", FA_ATTR_INT}, {"reverse", FA_ATTR_INT}, {0}};

const fa_op fa_ops_reduce[] = {
    REDUCE("ReduceSum", FA_REDUCE_SUM, a_reduce_sum, "Σ over axes; FLOPs = N_in; bytes = N_in·es + N_out·es"),
    REDUCE("ReduceMean", FA_REDUCE_MEAN, a_reduce, "Σ/count; FLOPs = N_in + N_out; bytes = N_in·es + N_out·es"),
    REDUCE("ReduceMax", FA_REDUCE_MAX, a_reduce, "max over axes; FLOPs = N_in; bytes = N_in·es + N_out·es"),
    REDUCE("ReduceMin", FA_REDUCE_MIN, a_reduce, "min over axes; FLOPs = N_in; bytes = N_in·es + N_out·es"),
    REDUCE("ReduceProd", FA_REDUCE_PROD, a_reduce, "Π over axes; FLOPs = N_in; bytes = N_in·es + N_out·es"),
    REDUCE("ReduceL1", FA_REDUCE_L1, a_reduce, "Σ|x|; FLOPs = 2N_in; bytes = N_in·es + N_out·es"),
    REDUCE("ReduceL2", FA_REDUCE_L2, a_reduce, "sqrt(Σx²); FLOPs = 2N_in + N_out; bytes = N_in·es + N_out·es"),
    REDUCE("ReduceSumSquare", FA_REDUCE_SUM_SQUARE, a_reduce, "Σx²; FLOPs = 2N_in; bytes = N_in·es + N_out·es"),
    REDUCE("ReduceLogSumExp", FA_REDUCE_LOG_SUM_EXP, a_reduce, "log(Σexp(x)); FLOPs = 2N_in + N_out; bytes = N_in·es + N_out·es"),
    {"ArgMax", "", FA_PATTERN_REDUCTION, 1, 1, 1, 1, 0, infer_arg, cost_reduce, kernel_arg,
     "index of max along axis; FLOPs = N_in; bytes = N_in·es + 8·N_out", a_arg},
    {"ArgMin", "", FA_PATTERN_REDUCTION, 1, 1, 1, 1, 0, infer_arg, cost_reduce, kernel_arg,
     "index of min along axis; FLOPs = N_in; bytes = N_in·es + 8·N_out", a_arg},
    {"TopK", "", FA_PATTERN_OPAQUE, 1, 2, 1, 2, 0, infer_topk, cost_topk, kernel_topk,
     "k largest/smallest along axis; FLOPs = N_in·ceil(log2 R); bytes = N_in·es + k-slices", a_topk},
    {"CumSum", "", FA_PATTERN_OPAQUE, 2, 2, 1, 1, 0, infer_cum, cost_cum, kernel_cum,
     "running sum along axis; FLOPs = N; bytes = 2·N·es", a_cum},
    {"CumProd", "", FA_PATTERN_OPAQUE, 2, 2, 1, 1, 0, infer_cum, cost_cum, kernel_cum,
     "running product along axis; FLOPs = N; bytes = 2·N·es", a_cum},
    {0},
};
