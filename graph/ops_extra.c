/* graph/ops_extra — normalization, softmax, attention, gated and recurrent ops: Softmax,
 * LogSoftmax, Hardmax, LayerNormalization, RMSNormalization, GroupNormalization, RotaryEmbedding,
 * Attention, LSTM, GRU, RNN, SwiGLU.
 * Semantics per opset follow the ONNX operator spec (onnx/docs/Operators.md) and the ONNX
 * reference evaluator (onnx/reference/ops/op_*.py), whose outputs are the corpus oracle.
 * Formulas for FLOPs and bytes are given per op next to its cost function and in
 * docs/ops-extra.md. Kernels compute in float (fp16/bf16/double are converted on the way in
 * and out) with double accumulators for sums, means and variances. */
#include "ops-impl.h"
#include "expf_poly.h"
#include "vmath.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ------------------------------------------------------------------------------------------ */
/* shared helpers                                                                             */

static int64_t dims_prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= d[i];
    return p;
}

static bool is_float_dtype(fa_dtype t)
{
    return t == FA_DTYPE_FLOAT || t == FA_DTYPE_DOUBLE || t == FA_DTYPE_FLOAT16 ||
           t == FA_DTYPE_BFLOAT16;
}

static int clamp_threads(int threads) { return threads < 1 ? 1 : threads; }

/* exp(x) in float over arrays, 4 lanes at a time with GCC/Clang vector extensions (libm's expf
 * does not vectorize at -O2, and a select-based scalar form is not if-converted by GCC 12):
 * x = n ln2 + r with ln2 split in two (Cody-Waite), exp(r) from the Cephes expf minimax
 * polynomial (graph/expf_poly.h; measured max relative error 8e-8 on
 * [-87.3, 88.72]), 2^n assembled in the exponent bits. Below -87.3 it gives 0 (numpy gives
 * subnormals there, under 1.2e-38); above log(FLT_MAX) = 88.72283 +inf; NaN stays NaN. */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

static inline v4f v4_select(v4i m, v4f a, v4f b) { return (v4f)(((v4i)a & m) | ((v4i)b & ~m)); }

static inline v4f v4_exp(v4f x)
{
    const v4f lo = {-87.3f, -87.3f, -87.3f, -87.3f}, hi = {88.72283f, 88.72283f, 88.72283f, 88.72283f};
    const v4f magic = {12582912.0f, 12582912.0f, 12582912.0f, 12582912.0f}; /* 1.5 * 2^23 */
    v4i too_low = x < lo, too_high = x > hi, nan = x != x;
    v4f xc = v4_select(too_low, lo, v4_select(too_high, hi, x));
    v4f n = (xc * FA_EXPF_LOG2E + magic) - magic; /* round to nearest */
    v4f r = xc - n * FA_EXPF_LN2_HI - n * FA_EXPF_LN2_LO;
    v4f p = r * FA_EXPF_P0 + FA_EXPF_P1;
    p = p * r + FA_EXPF_P2;
    p = p * r + FA_EXPF_P3;
    p = p * r + FA_EXPF_P4;
    p = p * r + FA_EXPF_P5;
    v4f y = p * r * r + r + 1.0f;
    v4i ni = __builtin_convertvector(n, v4i);
    v4i big = ni > 127; /* 2^128 overflows the exponent field: use 2^127 * 2 */
    v4i e = ((ni & ~big) | (127 & big)) + 127;
    y *= (v4f)(e << 23);
    y = v4_select(big, y * 2.0f, y);
    const v4f zero = {0, 0, 0, 0}, inf = {INFINITY, INFINITY, INFINITY, INFINITY};
    y = v4_select(too_low, zero, y);
    y = v4_select(too_high, inf, y);
    return v4_select(nan, x, y);
}

/* y[j] = exp(y[j]) for j < n, in place. */
static void vexp_inplace(float *y, int64_t n)
{
    if (fa_vmath_available()) { /* SLEEF, 8 lanes (graph/vmath.h); same limits, <= 1 ULP */
        fa_vexpf(y, y, n);
        return;
    }
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        v4f v;
        memcpy(&v, y + j, sizeof v);
        v = v4_exp(v);
        memcpy(y + j, &v, sizeof v);
    }
    if (j < n) {
        v4f v = {0, 0, 0, 0};
        for (int64_t k = j; k < n; k++) v[k - j] = y[k];
        v = v4_exp(v);
        for (int64_t k = j; k < n; k++) y[k] = v[k - j];
    }
}

/* Shape text "2x3x5" into buf (for messages). */
static const char *shape_text(int rank, const int64_t *d, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    if (rank == 0) {
        snprintf(buf, n, "scalar");
        return buf;
    }
    for (int i = 0; i < rank && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "x" : "", (long long)d[i]);
    return buf;
}

/* Input idx must be present, of known shape and of a floating dtype. */
static fa_tensor *req_float_input(fa_ctx *ctx, fa_graph *g, fa_node *n, int idx)
{
    fa_tensor *t = fa_req_input(ctx, g, n, idx);
    if (!t) return NULL;
    if (!is_float_dtype(t->dtype)) {
        fa_node_unsupported(ctx, n, "input %d '%s' has dtype %s; float32/float64/float16/bfloat16 expected",
                            idx, t->name, fa_dtype_name(t->dtype));
        return NULL;
    }
    return t;
}

/* Optional input: NULL (no error) when omitted; error when present with unknown shape. */
static fa_tensor *opt_input(fa_ctx *ctx, fa_graph *g, fa_node *n, int idx, bool *err)
{
    fa_tensor *t = fa_graph_in(g, n, idx);
    *err = false;
    if (t && t->rank < 0) {
        fa_node_error(ctx, n, "input %d '%s' has unknown shape", idx, t->name);
        *err = true;
        return NULL;
    }
    return t;
}

/* True when (rs, ds) broadcasts unidirectionally onto (rx, dx) (ONNX Broadcasting.md). */
static bool bcasts_onto(int rs, const int64_t *ds, int rx, const int64_t *dx)
{
    if (rs > rx) return false;
    for (int i = 0; i < rs; i++) {
        int64_t s = ds[i], x = dx[i + rx - rs];
        if (s != x && s != 1) return false;
    }
    return true;
}

/* A float32 view of a value: borrowed when it already is float32, else converted into a
 * malloc'd copy stored in *owned (caller frees). NULL data gives NULL. */
static fa_status f32_in(fa_ctx *ctx, const fa_node *n, const fa_value *v, const float **out,
                        float **owned)
{
    *owned = NULL;
    *out = NULL;
    if (!v || !v->data) return FA_OK;
    if (v->dtype == FA_DTYPE_FLOAT) {
        *out = v->data;
        return FA_OK;
    }
    int64_t ne = fa_value_numel(v);
    float *p = malloc(sizeof(float) * (size_t)(ne > 0 ? ne : 1));
    if (!p) return fa_ctx_error(ctx, FA_ERR_NOMEM, "node '%s': out of memory converting an input", n->name);
    for (int64_t i = 0; i < ne; i++) p[i] = (float)fa_load_as_double(v->data, v->dtype, i);
    *owned = p;
    *out = p;
    return FA_OK;
}

/* A float32 destination for output v: its own buffer when float32, else a scratch buffer that
 * f32_out_done converts back into v's dtype and frees. */
static fa_status f32_out(fa_ctx *ctx, const fa_node *n, fa_value *v, float **out)
{
    *out = NULL;
    if (!v || !v->data) return FA_OK;
    if (v->dtype == FA_DTYPE_FLOAT) {
        *out = v->data;
        return FA_OK;
    }
    int64_t ne = fa_value_numel(v);
    *out = malloc(sizeof(float) * (size_t)(ne > 0 ? ne : 1));
    if (!*out) return fa_ctx_error(ctx, FA_ERR_NOMEM, "node '%s': out of memory for an output", n->name);
    return FA_OK;
}

static void f32_out_done(fa_value *v, float *buf)
{
    if (!v || !v->data || !buf || v->dtype == FA_DTYPE_FLOAT) return;
    int64_t ne = fa_value_numel(v);
    for (int64_t i = 0; i < ne; i++) fa_store_from_double(v->data, v->dtype, i, buf[i]);
    free(buf);
}

static void f32_out_free(fa_value *v, float *buf)
{
    if (v && buf && v->dtype != FA_DTYPE_FLOAT) free(buf);
}

/* Offsets of a broadcast parameter (scale/bias of rank rs, dims ds) seen from the rank-rx
 * input x split at `axis`: base[r] for each of the `outer` rows and inner[j] for each of the
 * D = prod(dx[axis:]) row elements; element (r, j) of the parameter is p[base[r] + inner[j]].
 * *identity is set when base is all 0 and inner[j] == j (the usual normalized-shape case),
 * in which case the tables are not filled. Tables are malloc'd (caller frees). */
typedef struct bparam {
    const float *p;
    int64_t *base, *inner;
    bool identity;
} bparam;

static fa_status bparam_init(fa_ctx *ctx, const fa_node *n, bparam *bp, const float *p, int rs,
                             const int64_t *ds, int rx, const int64_t *dx, int axis)
{
    memset(bp, 0, sizeof *bp);
    bp->p = p;
    if (!p) return FA_OK;
    int64_t st[FA_MAX_RANK];
    fa_bcast_strides(rs, ds, rx, dx, st);
    int64_t outer = dims_prod(dx, 0, axis), D = dims_prod(dx, axis, rx);
    bool id = true;
    for (int i = 0; i < axis; i++) id &= st[i] == 0 || dx[i] == 1;
    int64_t expect = 1;
    for (int i = rx - 1; i >= axis; i--) {
        id &= st[i] == expect || dx[i] == 1;
        expect *= dx[i];
    }
    if (id) {
        bp->identity = true;
        return FA_OK;
    }
    bp->base = malloc(sizeof(int64_t) * (size_t)(outer > 0 ? outer : 1));
    bp->inner = malloc(sizeof(int64_t) * (size_t)(D > 0 ? D : 1));
    if (!bp->base || !bp->inner) {
        free(bp->base);
        free(bp->inner);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "node '%s': out of memory", n->name);
    }
    for (int64_t r = 0; r < outer; r++) {
        int64_t rem = r, off = 0;
        for (int i = axis - 1; i >= 0; i--) {
            off += (rem % dx[i]) * st[i];
            rem /= dx[i];
        }
        bp->base[r] = off;
    }
    for (int64_t j = 0; j < D; j++) {
        int64_t rem = j, off = 0;
        for (int i = rx - 1; i >= axis; i--) {
            off += (rem % dx[i]) * st[i];
            rem /= dx[i];
        }
        bp->inner[j] = off;
    }
    return FA_OK;
}

static inline float bparam_at(const bparam *bp, int64_t r, int64_t j)
{
    return bp->identity ? bp->p[j] : bp->p[bp->base[r] + bp->inner[j]];
}

static void bparam_free(bparam *bp)
{
    free(bp->base);
    free(bp->inner);
}

/* ------------------------------------------------------------------------------------------ */
/* Softmax, LogSoftmax                                                                        */
/* opset 1-12: the input is coerced to 2-D [prod(d[:axis]), prod(d[axis:])] and each row is
 * normalized (default axis 1). opset >= 13: one axis (default -1), the others independent.
 * An opset of 0 (graph built without an opset import) means the latest semantics. */

static int node_opset(const fa_node *n, int latest) { return n->opset > 0 ? n->opset : latest; }

static fa_status softmax_layout(fa_ctx *ctx, const fa_node *n, int rank, const int64_t *d,
                                int64_t *outer, int64_t *len, int64_t *inner)
{
    int opset = node_opset(n, 13);
    int64_t ax = fa_node_attr_int(n, "axis", opset >= 13 ? -1 : 1);
    if (rank == 0) {
        *outer = *len = *inner = 1;
        return FA_OK;
    }
    int a = fa_norm_axis(ctx, n, ax, rank);
    if (a < 0) return FA_ERR_INPUT;
    *outer = dims_prod(d, 0, a);
    if (opset < 13) {
        *len = dims_prod(d, a, rank);
        *inner = 1;
    } else {
        *len = d[a];
        *inner = dims_prod(d, a + 1, rank);
    }
    return FA_OK;
}

static fa_status infer_softmax(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = req_float_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    int64_t o, l, i;
    fa_status st = softmax_layout(ctx, n, x->rank, x->dims, &o, &l, &i);
    if (st) return st;
    fa_set_out(g, n, 0, x->dtype, x->rank, x->dims);
    return FA_OK;
}

/* Softmax / LogSoftmax over `len` elements at stride `inner`, for outer*inner independent
 * lanes; max subtracted first (ONNX reference: x - max, exp, sum, divide). */
static void softmax_f32(const float *x, float *y, int64_t outer, int64_t len, int64_t inner,
                        bool logsm, int threads)
{
    if (inner == 1 && fa_vmath512_available()) { /* a row at a time on 16 lanes (graph/vmath512.c) */
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t r = 0; r < outer; r++) fa_vmath512_softmax_row(x + r * len, y + r * len, len, logsm);
        return;
    }
    if (inner == 1) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t r = 0; r < outer; r++) {
            const float *xr = x + r * len;
            float *yr = y + r * len;
            float m = -INFINITY;
#pragma omp simd reduction(max : m)
            for (int64_t j = 0; j < len; j++) m = xr[j] > m ? xr[j] : m;
#pragma omp simd
            for (int64_t j = 0; j < len; j++) yr[j] = xr[j] - m;
            vexp_inplace(yr, len);
            double s = 0.0;
#pragma omp simd reduction(+ : s)
            for (int64_t j = 0; j < len; j++) s += yr[j];
            if (logsm) {
                float ls = (float)log(s);
#pragma omp simd
                for (int64_t j = 0; j < len; j++) yr[j] = (xr[j] - m) - ls;
            } else {
                float inv = (float)(1.0 / s);
#pragma omp simd
                for (int64_t j = 0; j < len; j++) yr[j] *= inv;
            }
        }
        return;
    }
    /* Strided lanes: process up to CH adjacent lanes together so every access is contiguous. */
    enum { CH = 64 };
    int64_t chunks = (inner + CH - 1) / CH;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t t = 0; t < outer * chunks; t++) {
        int64_t o = t / chunks, c0 = (t % chunks) * CH;
        int64_t cw = inner - c0 < CH ? inner - c0 : CH;
        float m[CH];
        double s[CH];
        const float *xb = x + o * len * inner + c0;
        float *yb = y + o * len * inner + c0;
        for (int64_t c = 0; c < cw; c++) {
            m[c] = -INFINITY;
            s[c] = 0.0;
        }
        for (int64_t k = 0; k < len; k++)
#pragma omp simd
            for (int64_t c = 0; c < cw; c++) {
                float v = xb[k * inner + c];
                m[c] = v > m[c] ? v : m[c];
            }
        for (int64_t k = 0; k < len; k++) {
            float *yk = yb + k * inner;
            const float *xk = xb + k * inner;
#pragma omp simd
            for (int64_t c = 0; c < cw; c++) yk[c] = xk[c] - m[c];
            vexp_inplace(yk, cw);
#pragma omp simd
            for (int64_t c = 0; c < cw; c++) s[c] += yk[c];
        }
        float f[CH];
        for (int64_t c = 0; c < cw; c++) f[c] = logsm ? (float)log(s[c]) : (float)(1.0 / s[c]);
        for (int64_t k = 0; k < len; k++) {
            float *yk = yb + k * inner;
            const float *xk = xb + k * inner;
            if (logsm) {
#pragma omp simd
                for (int64_t c = 0; c < cw; c++) yk[c] = (xk[c] - m[c]) - f[c];
            } else {
#pragma omp simd
                for (int64_t c = 0; c < cw; c++) yk[c] *= f[c];
            }
        }
    }
}

static fa_status kernel_softmax_common(fa_ctx *ctx, const fa_node *n, const fa_value *in,
                                       fa_value *out, int threads, bool logsm)
{
    int64_t outer, len, inner;
    fa_status st = softmax_layout(ctx, n, in[0].rank, in[0].dims, &outer, &len, &inner);
    if (st) return st;
    const float *x;
    float *xo, *y;
    if ((st = f32_in(ctx, n, &in[0], &x, &xo))) return st;
    if ((st = f32_out(ctx, n, &out[0], &y))) {
        free(xo);
        return st;
    }
    if (fa_value_numel(&in[0]) > 0) softmax_f32(x, y, outer, len, inner, logsm, clamp_threads(threads));
    f32_out_done(&out[0], y);
    free(xo);
    return FA_OK;
}

static fa_status kernel_softmax(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                fa_value *out, int n_out, int threads)
{
    return kernel_softmax_common(ctx, n, in, out, threads, false);
}

static fa_status kernel_logsoftmax(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                   fa_value *out, int n_out, int threads)
{
    return kernel_softmax_common(ctx, n, in, out, threads, true);
}

/* FLOPs = 5 * numel (max compare, subtract, exp, sum, divide; LogSoftmax: the final subtract
 * replaces the divide, plus one log per lane, not counted). Bytes: input + output once. */
static void cost_softmax(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 5, out);
}

/* Hardmax (opset 1-13): 1 at the first maximum of each lane, 0 elsewhere; lanes as Softmax's
 * (opset < 13 the 2-D coercion at axis). A NaN is the maximum, as numpy's argmax (the ONNX
 * reference) makes it. Computed on the element values as double, any float dtype. */
static fa_status kernel_hardmax(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                fa_value *out, int n_out, int threads)
{
    int64_t outer, len, inner;
    fa_status st = softmax_layout(ctx, n, in[0].rank, in[0].dims, &outer, &len, &inner);
    if (st) return st;
    const fa_value *x = &in[0];
    fa_value *y = &out[0];
#pragma omp parallel for num_threads(clamp_threads(threads)) schedule(static) if (outer * len * inner >= 32768)
    for (int64_t t = 0; t < outer * inner; t++) {
        int64_t o = t / inner, j = t % inner, best = 0;
        double bv = len ? fa_load_as_double(x->data, x->dtype, o * len * inner + j) : 0.0;
        for (int64_t r = 1; r < len && bv == bv; r++) {
            double v = fa_load_as_double(x->data, x->dtype, (o * len + r) * inner + j);
            if (v > bv || v != v) { bv = v; best = r; }
        }
        for (int64_t r = 0; r < len; r++)
            fa_store_from_double(y->data, y->dtype, (o * len + r) * inner + j, r == best ? 1.0 : 0.0);
    }
    return FA_OK;
}

/* Hardmax FLOPs = numel (one compare per element). */
static void cost_hardmax(const fa_graph *g, const fa_node *n, fa_op_cost *out) { fa_cost_io(g, n, 1, out); }

/* ------------------------------------------------------------------------------------------ */
/* LayerNormalization (opset 17), RMSNormalization (opset 23)                                 */

/* Shared shape check: X float, Scale (and Bias) unidirectionally broadcastable to X. */
static fa_status check_norm_param(fa_ctx *ctx, fa_graph *g, fa_node *n, const fa_tensor *x, int idx,
                                  const char *what, bool required)
{
    bool err;
    fa_tensor *p = opt_input(ctx, g, n, idx, &err);
    if (err) return fa_ctx_status(ctx);
    if (!p) return required ? fa_node_error(ctx, n, "required input %d (%s) is missing", idx, what) : FA_OK;
    if (!is_float_dtype(p->dtype))
        return fa_node_error(ctx, n, "%s '%s' has dtype %s, a float type is expected", what, p->name,
                             fa_dtype_name(p->dtype));
    if (!bcasts_onto(p->rank, p->dims, x->rank, x->dims)) {
        char a[128], b[128];
        return fa_node_error(ctx, n, "%s '%s' shape [%s] does not broadcast to input shape [%s]", what,
                             p->name, shape_text(p->rank, p->dims, a, sizeof a),
                             shape_text(x->rank, x->dims, b, sizeof b));
    }
    return FA_OK;
}

static fa_dtype stash_dtype(const fa_node *n)
{
    int64_t s = fa_node_attr_int(n, "stash_type", 1);
    return is_float_dtype((fa_dtype)s) ? (fa_dtype)s : FA_DTYPE_FLOAT;
}

static fa_status infer_layernorm(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = req_float_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    if (x->rank < 1) return fa_node_error(ctx, n, "input '%s' must have rank >= 1", x->name);
    int a = fa_norm_axis(ctx, n, fa_node_attr_int(n, "axis", -1), x->rank);
    if (a < 0) return FA_ERR_INPUT;
    fa_status st = check_norm_param(ctx, g, n, x, 1, "Scale", true);
    if (!st) st = check_norm_param(ctx, g, n, x, 2, "B", false);
    if (st) return st;
    fa_set_out(g, n, 0, x->dtype, x->rank, x->dims);
    int64_t rd[FA_MAX_RANK];
    for (int i = 0; i < x->rank; i++) rd[i] = i < a ? x->dims[i] : 1;
    fa_set_out(g, n, 1, stash_dtype(n), x->rank, rd);
    fa_set_out(g, n, 2, stash_dtype(n), x->rank, rd);
    return FA_OK;
}

static fa_status infer_rmsnorm(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = req_float_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    if (x->rank < 1) return fa_node_error(ctx, n, "input '%s' must have rank >= 1", x->name);
    int a = fa_norm_axis(ctx, n, fa_node_attr_int(n, "axis", -1), x->rank);
    if (a < 0) return FA_ERR_INPUT;
    fa_status st = check_norm_param(ctx, g, n, x, 1, "scale", true);
    if (st) return st;
    /* Y has scale's type (RMSNormalization-23: X is T, scale and Y are V) */
    fa_tensor *sc = fa_graph_in(g, n, 1);
    fa_set_out(g, n, 0, sc && sc->dtype ? sc->dtype : x->dtype, x->rank, x->dims);
    return FA_OK;
}

/* One kernel for both: rms = false gives LayerNorm (centered), true gives RMSNorm. */
static fa_status kernel_norm_rows(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                  fa_value *out, int n_out, int threads, bool rms)
{
    const fa_value *xv = &in[0];
    int rank = xv->rank;
    int a = fa_norm_axis(ctx, n, fa_node_attr_int(n, "axis", -1), rank);
    if (a < 0) return FA_ERR_INPUT;
    float eps = fa_node_attr_float(n, "epsilon", 1e-5f);
    int64_t outer = dims_prod(xv->dims, 0, a), D = dims_prod(xv->dims, a, rank);
    const fa_value *sv = n_in > 1 && in[1].data ? &in[1] : NULL;
    const fa_value *bv = !rms && n_in > 2 && in[2].data ? &in[2] : NULL;
    if (!sv) return fa_node_error(ctx, n, "scale input is missing");
    if (!bcasts_onto(sv->rank, sv->dims, rank, xv->dims) ||
        (bv && !bcasts_onto(bv->rank, bv->dims, rank, xv->dims))) {
        char s1[128], s2[128];
        return fa_node_error(ctx, n, "scale/bias shape [%s] does not broadcast to input shape [%s]",
                             shape_text(sv->rank, sv->dims, s1, sizeof s1),
                             shape_text(rank, xv->dims, s2, sizeof s2));
    }
    fa_status st = FA_OK;
    const float *x = NULL, *s = NULL, *b = NULL;
    float *xo = NULL, *so = NULL, *bo = NULL, *y = NULL, *mo = NULL, *io = NULL;
    bparam bs = {0}, bb = {0};
    fa_value *mv = !rms && n_out > 1 && out[1].data ? &out[1] : NULL;
    fa_value *iv = !rms && n_out > 2 && out[2].data ? &out[2] : NULL;
    if ((st = f32_in(ctx, n, xv, &x, &xo))) goto done;
    if ((st = f32_in(ctx, n, sv, &s, &so))) goto done;
    if ((st = f32_in(ctx, n, bv, &b, &bo))) goto done;
    if ((st = f32_out(ctx, n, &out[0], &y))) goto done;
    if ((st = f32_out(ctx, n, mv, &mo))) goto done;
    if ((st = f32_out(ctx, n, iv, &io))) goto done;
    if ((st = bparam_init(ctx, n, &bs, s, sv->rank, sv->dims, rank, xv->dims, a))) goto done;
    if (bv && (st = bparam_init(ctx, n, &bb, b, bv->rank, bv->dims, rank, xv->dims, a))) goto done;
#pragma omp parallel for num_threads(clamp_threads(threads)) schedule(static)
    for (int64_t r = 0; r < outer; r++) {
        const float *xr = x + r * D;
        float *yr = y + r * D;
        double mean = 0.0, var = 0.0;
        if (!rms) {
#pragma omp simd reduction(+ : mean)
            for (int64_t j = 0; j < D; j++) mean += xr[j];
            mean /= (double)D;
        }
#pragma omp simd reduction(+ : var)
        for (int64_t j = 0; j < D; j++) {
            double d = (double)xr[j] - mean;
            var += d * d;
        }
        var /= (double)D;
        double inv = 1.0 / sqrt(var + (double)eps);
        float fm = (float)mean, fi = (float)inv;
        if (bs.identity && (!b || bb.identity)) {
#pragma omp simd
            for (int64_t j = 0; j < D; j++) {
                float v = (xr[j] - fm) * fi * s[j];
                yr[j] = b ? v + b[j] : v;
            }
        } else {
            for (int64_t j = 0; j < D; j++) {
                float v = (xr[j] - fm) * fi * bparam_at(&bs, r, j);
                yr[j] = b ? v + bparam_at(&bb, r, j) : v;
            }
        }
        if (mo) mo[r] = fm;
        if (io) io[r] = fi;
    }
done:
    if (st) {
        f32_out_free(&out[0], y);
        f32_out_free(mv, mo);
        f32_out_free(iv, io);
    } else {
        f32_out_done(&out[0], y);
        f32_out_done(mv, mo);
        f32_out_done(iv, io);
    }
    bparam_free(&bs);
    bparam_free(&bb);
    free(xo);
    free(so);
    free(bo);
    return st;
}

static fa_status kernel_layernorm(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                  fa_value *out, int n_out, int threads)
{
    return kernel_norm_rows(ctx, n, in, n_in, out, n_out, threads, false);
}

static fa_status kernel_rmsnorm(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                fa_value *out, int n_out, int threads)
{
    return kernel_norm_rows(ctx, n, in, n_in, out, n_out, threads, true);
}

/* Rows (outer) and row length D of a normalization node over axes [axis, rank). */
static void norm_rows(const fa_graph *g, const fa_node *n, int64_t *rows, int64_t *D)
{
    const fa_tensor *x = fa_graph_in(g, n, 0);
    *rows = *D = 0;
    if (!x || x->rank < 1 || fa_tensor_numel(x) < 0) return;
    int64_t ax = fa_node_attr_int(n, "axis", -1);
    int a = (int)(ax < 0 ? ax + x->rank : ax);
    if (a < 0 || a >= x->rank) return;
    *rows = dims_prod(x->dims, 0, a);
    *D = dims_prod(x->dims, a, x->rank);
}

/* LayerNormalization FLOPs = N * (6 + [B present]) + 3 * rows, N = numel(X):
 * mean (1 add), center (1 sub), variance (1 mul + 1 add), normalize (1 mul), scale (1 mul),
 * bias (1 add); per row: divide for the mean, add epsilon + sqrt + reciprocal counted as 3.
 * Bytes: X, Scale, B read once; Y (and Mean, InvStdDev when requested) written once. */
static void cost_layernorm(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    int64_t rows, D;
    norm_rows(g, n, &rows, &D);
    uint64_t per = 6 + (fa_graph_in(g, n, 2) ? 1 : 0);
    out->flops = fa_u64_add_sat(fa_u64_mul_sat(per, fa_u64_mul_sat((uint64_t)rows, (uint64_t)D)), fa_u64_mul_sat(3, (uint64_t)rows));
}

/* RMSNormalization FLOPs = 4 * N + 3 * rows: square (1 mul) and sum (1 add), normalize (1 mul),
 * scale (1 mul); per row: mean divide, epsilon add, sqrt/reciprocal. Bytes: X, scale in, Y out. */
static void cost_rmsnorm(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    int64_t rows, D;
    norm_rows(g, n, &rows, &D);
    out->flops = fa_u64_add_sat(fa_u64_mul_sat(4, fa_u64_mul_sat((uint64_t)rows, (uint64_t)D)), fa_u64_mul_sat(3, (uint64_t)rows));
}

/* ------------------------------------------------------------------------------------------ */
/* GroupNormalization: opset 18 (scale, bias shape [num_groups]) and opset 21 (shape [C],
 * stash_type). X is [N, C, D1, ...]; each of the N*num_groups groups of C/num_groups channels
 * is normalized with its own mean and variance, then y = scale * x_hat + bias per group
 * (opset 18) or per channel (opset 21). */

static bool groupnorm_per_channel(const fa_node *n, int64_t pnumel, int64_t C, int64_t G)
{
    if (n->opset > 0) return n->opset >= 21;
    return pnumel == C; /* no opset known: decide by the parameter size */
}

static fa_status infer_groupnorm(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = req_float_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    if (x->rank < 2) return fa_node_error(ctx, n, "input '%s' must have rank >= 2 ([N, C, ...])", x->name);
    const fa_attr *ga = fa_node_attr(n, "num_groups");
    if (!ga || ga->type != FA_ATTR_INT) return fa_node_error(ctx, n, "required attribute num_groups is missing");
    int64_t G = ga->i, C = x->dims[1];
    if (G <= 0 || C % G != 0)
        return fa_node_error(ctx, n, "num_groups %lld does not divide the %lld channels", (long long)G,
                             (long long)C);
    for (int i = 1; i <= 2; i++) {
        fa_tensor *p = fa_req_input(ctx, g, n, i);
        if (!p) return fa_ctx_status(ctx);
        int64_t ne = fa_tensor_numel(p);
        bool per_c = groupnorm_per_channel(n, ne, C, G);
        int64_t want = per_c ? C : G;
        if (p->rank != 1 || ne != want)
            return fa_node_error(ctx, n, "%s '%s' must have shape [%lld] (%s, opset %d), has %d dims and %lld elements",
                                 i == 1 ? "scale" : "bias", p->name, (long long)want,
                                 per_c ? "one per channel" : "one per group", n->opset, p->rank,
                                 (long long)ne);
    }
    fa_set_out(g, n, 0, x->dtype, x->rank, x->dims);
    return FA_OK;
}

static fa_status kernel_groupnorm(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                  fa_value *out, int n_out, int threads)
{
    const fa_value *xv = &in[0];
    if (xv->rank < 2 || n_in < 3 || !in[1].data || !in[2].data)
        return fa_node_error(ctx, n, "needs X of rank >= 2, scale and bias");
    int64_t N = xv->dims[0], C = xv->dims[1], G = fa_node_attr_int(n, "num_groups", 0);
    if (G <= 0 || C % G) return fa_node_error(ctx, n, "num_groups %lld does not divide %lld channels",
                                              (long long)G, (long long)C);
    int64_t S = dims_prod(xv->dims, 2, xv->rank), cpg = C / G, D = cpg * S;
    int64_t pn = fa_value_numel(&in[1]);
    bool per_c = groupnorm_per_channel(n, pn, C, G);
    if (pn != (per_c ? C : G) || fa_value_numel(&in[2]) != pn)
        return fa_node_error(ctx, n, "scale/bias have %lld elements, %lld expected", (long long)pn,
                             (long long)(per_c ? C : G));
    float eps = fa_node_attr_float(n, "epsilon", 1e-5f);
    const float *x, *s, *b;
    float *xo = NULL, *so = NULL, *bo = NULL, *y = NULL;
    fa_status st;
    if ((st = f32_in(ctx, n, xv, &x, &xo)) || (st = f32_in(ctx, n, &in[1], &s, &so)) ||
        (st = f32_in(ctx, n, &in[2], &b, &bo)) || (st = f32_out(ctx, n, &out[0], &y))) {
        free(xo);
        free(so);
        free(bo);
        return st;
    }
#pragma omp parallel for num_threads(clamp_threads(threads)) schedule(static)
    for (int64_t r = 0; r < N * G; r++) {
        int64_t grp = r % G;
        const float *xr = x + r * D;
        float *yr = y + r * D;
        double mean = 0.0, var = 0.0;
#pragma omp simd reduction(+ : mean)
        for (int64_t j = 0; j < D; j++) mean += xr[j];
        mean /= (double)D;
#pragma omp simd reduction(+ : var)
        for (int64_t j = 0; j < D; j++) {
            double d = (double)xr[j] - mean;
            var += d * d;
        }
        var /= (double)D;
        float fm = (float)mean, fi = (float)(1.0 / sqrt(var + (double)eps));
        for (int64_t c = 0; c < cpg; c++) {
            int64_t pi = per_c ? grp * cpg + c : grp;
            float sc = s[pi] * fi, bi = b[pi];
#pragma omp simd
            for (int64_t k = 0; k < S; k++) yr[c * S + k] = (xr[c * S + k] - fm) * sc + bi;
        }
    }
    f32_out_done(&out[0], y);
    free(xo);
    free(so);
    free(bo);
    return FA_OK;
}

/* GroupNormalization FLOPs = 7 * N + 3 * (batch * num_groups), N = numel(X): as
 * LayerNormalization with a bias. Bytes: X, scale, bias read once, Y written once. */
static void cost_groupnorm(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *x = fa_graph_in(g, n, 0);
    int64_t ne = x ? fa_tensor_numel(x) : -1;
    if (ne < 0 || x->rank < 2) return;
    int64_t groups = fa_node_attr_int(n, "num_groups", 1);
    out->flops = fa_u64_add_sat(fa_u64_mul_sat(7, (uint64_t)ne),
                                fa_u64_mul_sat(3, fa_u64_mul_sat((uint64_t)x->dims[0], groups > 0 ? (uint64_t)groups : 0)));
}

/* ------------------------------------------------------------------------------------------ */
/* SwiGLU (ai.onnx opset 28, a function op): Y = Swish(A, alpha) * B = A * sigmoid(alpha*A) * B
 * with numpy broadcasting of A and B (its function body is Swish then Mul); alpha default 1. */

static fa_status infer_swiglu(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *a = req_float_input(ctx, g, n, 0);
    if (!a) return fa_ctx_status(ctx);
    fa_tensor *b = req_float_input(ctx, g, n, 1);
    if (!b) return fa_ctx_status(ctx);
    if (a->dtype != b->dtype)
        return fa_node_error(ctx, n, "inputs have different dtypes (%s, %s)", fa_dtype_name(a->dtype),
                             fa_dtype_name(b->dtype));
    int r;
    int64_t d[FA_MAX_RANK];
    fa_status st = fa_bcast_shape(ctx, n, a->rank, a->dims, b->rank, b->dims, &r, d);
    if (st) return st;
    fa_set_out(g, n, 0, a->dtype, r, d);
    return FA_OK;
}

static fa_status kernel_swiglu(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                               fa_value *out, int n_out, int threads)
{
    float alpha = fa_node_attr_float(n, "alpha", 1.0f);
    fa_value *yv = &out[0];
    int r = yv->rank;
    int64_t sa[FA_MAX_RANK], sb[FA_MAX_RANK];
    fa_bcast_strides(in[0].rank, in[0].dims, r, yv->dims, sa);
    fa_bcast_strides(in[1].rank, in[1].dims, r, yv->dims, sb);
    const float *a, *b;
    float *ao = NULL, *bo = NULL, *y = NULL;
    fa_status st;
    if ((st = f32_in(ctx, n, &in[0], &a, &ao)) || (st = f32_in(ctx, n, &in[1], &b, &bo)) ||
        (st = f32_out(ctx, n, yv, &y))) {
        free(ao);
        free(bo);
        return st;
    }
    int64_t ne = fa_value_numel(yv);
    bool same = fa_value_numel(&in[0]) == ne && fa_value_numel(&in[1]) == ne;
    int64_t inner = r ? yv->dims[r - 1] : 1, rows = inner ? ne / inner : 0;
#pragma omp parallel for num_threads(clamp_threads(threads)) schedule(static)
    for (int64_t row = 0; row < rows; row++) {
        int64_t oa = 0, ob = 0;
        if (!same) {
            int64_t rem = row;
            for (int i = r - 2; i >= 0; i--) {
                int64_t k = rem % yv->dims[i];
                rem /= yv->dims[i];
                oa += k * sa[i];
                ob += k * sb[i];
            }
        } else {
            oa = ob = row * inner;
        }
        int64_t la = same ? 1 : (r ? sa[r - 1] : 0), lb = same ? 1 : (r ? sb[r - 1] : 0);
        float *yr = y + row * inner;
#pragma omp simd
        for (int64_t j = 0; j < inner; j++) yr[j] = -alpha * a[oa + j * la];
        vexp_inplace(yr, inner);
#pragma omp simd
        for (int64_t j = 0; j < inner; j++) yr[j] = a[oa + j * la] / (1.0f + yr[j]) * b[ob + j * lb];
    }
    f32_out_done(yv, y);
    free(ao);
    free(bo);
    return FA_OK;
}

/* SwiGLU FLOPs = 6 * numel(Y): alpha*a, exp, add, divide (sigmoid as 4), two multiplies.
 * Bytes: A and B read once, Y written once. */
static void cost_swiglu(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 6, out);
}

/* ------------------------------------------------------------------------------------------ */
/* RotaryEmbedding (opset 23, onnx/reference/ops/op_rotary_embedding.py). X is [B, H, S, D]
 * or [B, S, H*D] (num_heads required); the first rot = rotary_embedding_dim (default D)
 * elements of each head vector rotate in rot/2 pairs, (x[2i], x[2i+1]) when interleaved, else
 * (x[i], x[i + rot/2]): (x1, x2) -> (cos*x1 - sin*x2, sin*x1 + cos*x2), the rest is copied.
 * cos/sin: [B, S, rot/2], or [max_position, rot/2] indexed by position_ids [B, S]. */

typedef struct rope_dims {
    bool four_d;
    int64_t B, S, H, D, rot;
} rope_dims;

static fa_status rope_shape(fa_ctx *ctx, const fa_node *n, int rx, const int64_t *x, int rc,
                            const int64_t *c, int rs, const int64_t *s, bool has_pos, int rp,
                            const int64_t *p, rope_dims *rd)
{
    if (rx == 4) {
        rd->four_d = true;
        rd->B = x[0], rd->H = x[1], rd->S = x[2], rd->D = x[3];
    } else if (rx == 3) {
        int64_t nh = fa_node_attr_int(n, "num_heads", 0);
        if (nh <= 0 || x[2] % nh)
            return fa_node_error(ctx, n, "3-D input needs num_heads dividing the hidden size %lld (num_heads = %lld)",
                                 (long long)x[2], (long long)nh);
        rd->four_d = false;
        rd->B = x[0], rd->S = x[1], rd->H = nh, rd->D = x[2] / nh;
    } else return fa_node_error(ctx, n, "input X must be 3-D or 4-D, has rank %d", rx);
    int64_t rot = fa_node_attr_int(n, "rotary_embedding_dim", 0);
    rd->rot = rot ? rot : rd->D;
    if (rd->rot < 0 || rd->rot > rd->D || rd->rot % 2)
        return fa_node_error(ctx, n, "rotary_embedding_dim %lld must be even and at most the head size %lld",
                             (long long)rd->rot, (long long)rd->D);
    int64_t half = rd->rot / 2;
    bool ok = rc == rs && (has_pos ? rc == 2 : rc == 3) && c[rc - 1] == half && s[rs - 1] == half;
    for (int i = 0; ok && i < rc; i++) ok = c[i] == s[i];
    if (ok && !has_pos) ok = c[0] == rd->B && c[1] == rd->S;
    if (ok && has_pos) ok = rp == 2 && p[0] == rd->B && p[1] == rd->S;
    if (!ok)
        return fa_node_error(ctx, n, "cos/sin caches must be %s with last dim rotary_embedding_dim/2 = %lld%s",
                             has_pos ? "[max_position, rot/2]" : "[B, S, rot/2]", (long long)half,
                             has_pos ? " and position_ids [B, S]" : "");
    return FA_OK;
}

static fa_status infer_rope(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = req_float_input(ctx, g, n, 0), *c = x ? req_float_input(ctx, g, n, 1) : NULL,
              *s = c ? req_float_input(ctx, g, n, 2) : NULL;
    if (!s) return fa_ctx_status(ctx);
    bool err;
    fa_tensor *p = opt_input(ctx, g, n, 3, &err);
    if (err) return fa_ctx_status(ctx);
    if (p && p->dtype != FA_DTYPE_INT64)
        return fa_node_error(ctx, n, "position_ids '%s' must be int64, is %s", p->name, fa_dtype_name(p->dtype));
    rope_dims rd;
    fa_status st = rope_shape(ctx, n, x->rank, x->dims, c->rank, c->dims, s->rank, s->dims, p != NULL,
                              p ? p->rank : 0, p ? p->dims : NULL, &rd);
    if (st) return st;
    fa_set_out(g, n, 0, x->dtype, x->rank, x->dims);
    return FA_OK;
}

static fa_status kernel_rope(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                             fa_value *out, int n_out, int threads)
{
    const fa_value *x = &in[0], *c = &in[1], *s = &in[2];
    const fa_value *p = n_in > 3 && in[3].data ? &in[3] : NULL;
    rope_dims rd;
    fa_status st = rope_shape(ctx, n, x->rank, x->dims, c->rank, c->dims, s->rank, s->dims, p != NULL,
                              p ? p->rank : 0, p ? p->dims : NULL, &rd);
    if (st) return st;
    bool inter = fa_node_attr_int(n, "interleaved", 0) != 0;
    int64_t half = rd.rot / 2, maxpos = p ? c->dims[0] : 0;
    if (p)
        for (int64_t i = 0; i < rd.B * rd.S; i++) {
            int64_t v = ((const int64_t *)p->data)[i];
            if (v < 0 || v >= maxpos)
                return fa_node_error(ctx, n, "position_ids[%lld] = %lld is outside the caches' %lld positions",
                                     (long long)i, (long long)v, (long long)maxpos);
        }
    int64_t vecs = rd.B * rd.S * rd.H;
#pragma omp parallel for num_threads(clamp_threads(threads)) schedule(static) if (vecs * rd.D >= 32768)
    for (int64_t t = 0; t < vecs; t++) {
        int64_t h = t % rd.H, si = (t / rd.H) % rd.S, b = t / (rd.H * rd.S);
        int64_t base = rd.four_d ? ((b * rd.H + h) * rd.S + si) * rd.D : ((b * rd.S + si) * rd.H + h) * rd.D;
        int64_t crow = (p ? ((const int64_t *)p->data)[b * rd.S + si] : b * rd.S + si) * half;
        for (int64_t i = 0; i < half; i++) {
            int64_t i1 = inter ? 2 * i : i, i2 = inter ? 2 * i + 1 : i + half;
            double x1 = fa_load_as_double(x->data, x->dtype, base + i1), x2 = fa_load_as_double(x->data, x->dtype, base + i2);
            double cv = fa_load_as_double(c->data, c->dtype, crow + i), sv = fa_load_as_double(s->data, s->dtype, crow + i);
            fa_store_from_double(out[0].data, out[0].dtype, base + i1, cv * x1 - sv * x2);
            fa_store_from_double(out[0].data, out[0].dtype, base + i2, sv * x1 + cv * x2);
        }
        size_t es = fa_dtype_size(x->dtype);
        if (rd.D > rd.rot)
            memcpy((char *)out[0].data + (base + rd.rot) * (int64_t)es, (const char *)x->data + (base + rd.rot) * (int64_t)es,
                   (size_t)(rd.D - rd.rot) * es);
    }
    return FA_OK;
}

/* RotaryEmbedding FLOPs = 3 * B*S*H*rot (two multiplies and an add per rotated element).
 * Bytes: X and the cache rows read once, Y written once. */
static void cost_rope(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *x = fa_graph_in(g, n, 0);
    if (!x || fa_tensor_numel(x) < 0 || x->rank < 3) return;
    int64_t D = x->rank == 4 ? x->dims[3] : 0, nh = fa_node_attr_int(n, "num_heads", 0);
    if (x->rank == 3 && nh > 0) D = x->dims[2] / nh;
    int64_t rot = fa_node_attr_int(n, "rotary_embedding_dim", 0);
    if (D <= 0) return;
    if (!rot || rot > D) rot = D;
    out->flops = fa_u64_mul_sat(3 * (uint64_t)(fa_tensor_numel(x) / D), (uint64_t)rot);
}

/* ------------------------------------------------------------------------------------------ */
/* Attention (opset 23-25). Inputs: Q, K, V, attn_mask?, past_key?, past_value?,
 * nonpad_kv_seqlen? (24). Outputs: Y, present_key?, present_value?, qk_matmul_output?.
 * 4-D: Q [B, Hq, Sq, D], K [B, Hkv, Skv, D], V [B, Hkv, Skv, Dv], Y [B, Hq, Sq, Dv].
 * 3-D: Q [B, Sq, Hq*D], K [B, Skv, Hkv*D], V [B, Skv, Hkv*Dv] (q_num_heads/kv_num_heads
 * required), Y [B, Sq, Hq*Dv]. past/present are always 4-D [B, Hkv, Spast(+Skv), D|Dv].
 * Semantics of the spec and its reference (onnx/reference/ops/op_attention.py, onnx 1.23):
 * scores = (Q*sqrt(s)) (K*sqrt(s))^T with s = scale or 1/sqrt(D) (applied here to Q once);
 * softcap (c*tanh(x/c) when softcap > 0) before any bias, so masked scores stay -inf;
 * + bias: attn_mask (bool True = attend, float added; a mask shorter than the total kv length
 * is padded with -inf), is_causal (j > i + offset masked), the sliding window of opset 25
 * (j < i + offset - left_window_size or j > i + offset + right_window_size masked, -1 =
 * unbounded), nonpad_kv_seqlen (j >= nonpad[b] masked), with offset = past length (internal
 * cache), nonpad[b] - Sq (external cache: nonpad_kv_seqlen without past) or 0; a negative
 * offset masks the leading query rows entirely; softmax over keys, and a row whose bias is
 * -inf everywhere (fully masked) gets zero probabilities and Y = 0 instead of NaN; Y = P V.
 * GQA: query head h uses kv head h / (Hq/Hkv). qk_matmul_output as the reference writes it:
 * modes 0 and 1 the (softcapped) scaled QK product, 2 that plus the bias (the softmax input),
 * 3 the guarded softmax. The softmax runs in float32 whatever softmax_precision says among
 * FLOAT, FLOAT16, BFLOAT16 (float32 is at least as precise); DOUBLE is refused (a_attention). */

typedef struct attn_dims {
    bool three_d;
    int64_t B, Hq, Hkv, Sq, Skv, Sp, St, D, Dv;
} attn_dims;

static fa_status attn_shape(fa_ctx *ctx, const fa_node *n, int rq, const int64_t *q, int rk,
                            const int64_t *k, int rv, const int64_t *v, int rp, const int64_t *pk,
                            int rpv, const int64_t *pv, attn_dims *ad)
{
    memset(ad, 0, sizeof *ad);
    if (rq != rk || rq != rv || (rq != 3 && rq != 4))
        return fa_node_error(ctx, n, "Q, K, V must all be 3-D or all 4-D (ranks %d, %d, %d)", rq, rk, rv);
    ad->B = q[0];
    if (k[0] != ad->B || v[0] != ad->B)
        return fa_node_error(ctx, n, "Q, K, V batch sizes differ (%lld, %lld, %lld)", (long long)q[0],
                             (long long)k[0], (long long)v[0]);
    if (rq == 3) {
        ad->three_d = true;
        ad->Hq = fa_node_attr_int(n, "q_num_heads", 0);
        ad->Hkv = fa_node_attr_int(n, "kv_num_heads", 0);
        if (ad->Hq <= 0 || ad->Hkv <= 0)
            return fa_node_error(ctx, n, "3-D inputs need attributes q_num_heads and kv_num_heads > 0");
        if (q[2] % ad->Hq || k[2] % ad->Hkv || v[2] % ad->Hkv)
            return fa_node_error(ctx, n, "hidden sizes (%lld, %lld, %lld) are not multiples of the head counts (%lld, %lld)",
                                 (long long)q[2], (long long)k[2], (long long)v[2], (long long)ad->Hq,
                                 (long long)ad->Hkv);
        ad->Sq = q[1];
        ad->Skv = k[1];
        ad->D = q[2] / ad->Hq;
        if (k[2] / ad->Hkv != ad->D)
            return fa_node_error(ctx, n, "Q head size %lld differs from K head size %lld", (long long)ad->D,
                                 (long long)(k[2] / ad->Hkv));
        ad->Dv = v[2] / ad->Hkv;
        if (v[1] != ad->Skv) return fa_node_error(ctx, n, "K and V sequence lengths differ");
    } else {
        ad->Hq = q[1];
        ad->Hkv = k[1];
        ad->Sq = q[2];
        ad->Skv = k[2];
        ad->D = q[3];
        ad->Dv = v[3];
        if (k[3] != ad->D) return fa_node_error(ctx, n, "Q head size %lld differs from K head size %lld",
                                                (long long)ad->D, (long long)k[3]);
        if (v[1] != ad->Hkv || v[2] != ad->Skv)
            return fa_node_error(ctx, n, "V heads/sequence (%lld, %lld) differ from K's (%lld, %lld)",
                                 (long long)v[1], (long long)v[2], (long long)ad->Hkv, (long long)ad->Skv);
    }
    if (ad->Hkv <= 0 || ad->Hq % ad->Hkv)
        return fa_node_error(ctx, n, "q heads %lld are not a multiple of kv heads %lld", (long long)ad->Hq,
                             (long long)ad->Hkv);
    if ((pk != NULL) != (pv != NULL))
        return fa_node_error(ctx, n, "past_key and past_value must be given together");
    if (pk) {
        if (rp != 4 || rpv != 4 || pk[0] != ad->B || pk[1] != ad->Hkv || pk[3] != ad->D ||
            pv[0] != ad->B || pv[1] != ad->Hkv || pv[2] != pk[2] || pv[3] != ad->Dv)
            return fa_node_error(ctx, n, "past_key/past_value must be [B=%lld, Hkv=%lld, P, %lld|%lld]",
                                 (long long)ad->B, (long long)ad->Hkv, (long long)ad->D, (long long)ad->Dv);
        ad->Sp = pk[2];
    }
    ad->St = ad->Sp + ad->Skv;
    return FA_OK;
}

static fa_status infer_attention(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *q = req_float_input(ctx, g, n, 0), *k = q ? req_float_input(ctx, g, n, 1) : NULL,
              *v = k ? req_float_input(ctx, g, n, 2) : NULL;
    if (!v) return fa_ctx_status(ctx);
    bool e1, e2, e3, e4;
    fa_tensor *m = opt_input(ctx, g, n, 3, &e1), *pk = opt_input(ctx, g, n, 4, &e2),
              *pv = opt_input(ctx, g, n, 5, &e3), *nl = opt_input(ctx, g, n, 6, &e4);
    if (e1 || e2 || e3 || e4) return fa_ctx_status(ctx);
    attn_dims ad;
    fa_status st = attn_shape(ctx, n, q->rank, q->dims, k->rank, k->dims, v->rank, v->dims,
                              pk ? pk->rank : 0, pk ? pk->dims : NULL, pv ? pv->rank : 0,
                              pv ? pv->dims : NULL, &ad);
    if (st) return st;
    if (m) {
        int64_t full[4] = {ad.B, ad.Hq, ad.Sq, ad.St};
        int64_t md[4];
        bool ok = m->rank >= 1 && m->rank <= 4 && m->dims[m->rank - 1] <= ad.St;
        if (ok) {
            memcpy(md, m->dims, sizeof(int64_t) * (size_t)m->rank);
            md[m->rank - 1] = 1;
            ok = bcasts_onto(m->rank, md, 4, full);
        }
        if (!ok || (m->dtype != FA_DTYPE_BOOL && !is_float_dtype(m->dtype))) {
            char s1[128];
            return fa_node_error(ctx, n, "attn_mask '%s' [%s] (%s) does not broadcast to [%lld, %lld, %lld, <=%lld]",
                                 m->name, shape_text(m->rank, m->dims, s1, sizeof s1),
                                 fa_dtype_name(m->dtype), (long long)ad.B, (long long)ad.Hq,
                                 (long long)ad.Sq, (long long)ad.St);
        }
    }
    if (nl && (fa_tensor_numel(nl) != ad.B || (nl->dtype != FA_DTYPE_INT64 && nl->dtype != FA_DTYPE_INT32)))
        return fa_node_error(ctx, n, "nonpad_kv_seqlen must be int64 [%lld]", (long long)ad.B);
    if (nl && pk)
        return fa_node_error(ctx, n, "nonpad_kv_seqlen (an external cache) cannot be combined with past_key/past_value");
    int64_t mode = fa_node_attr_int(n, "qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3)
        return fa_node_error(ctx, n, "qk_matmul_output_mode %lld is not 0..3", (long long)mode);
    if (ad.three_d) {
        int64_t hv;
        if ((st = fa_dim_mul(ctx, n, "q_num_heads x V head size", ad.Hq, ad.Dv, &hv))) return st;
        int64_t y[3] = {ad.B, ad.Sq, hv};
        fa_set_out(g, n, 0, q->dtype, 3, y);
    } else {
        int64_t y[4] = {ad.B, ad.Hq, ad.Sq, ad.Dv};
        fa_set_out(g, n, 0, q->dtype, 4, y);
    }
    int64_t prk[4] = {ad.B, ad.Hkv, ad.St, ad.D}, prv[4] = {ad.B, ad.Hkv, ad.St, ad.Dv},
            qk[4] = {ad.B, ad.Hq, ad.Sq, ad.St};
    fa_set_out(g, n, 1, k->dtype, 4, prk);
    fa_set_out(g, n, 2, v->dtype, 4, prv);
    fa_set_out(g, n, 3, q->dtype, 4, qk);
    return FA_OK;
}

/* Gather K (or V) of the current step (3-D or 4-D) after the past into a float buffer of
 * shape [B, Hkv, St, E]. */
static void attn_concat(float *dst, const float *past, const float *cur, const attn_dims *ad,
                        int64_t E)
{
    for (int64_t b = 0; b < ad->B; b++)
        for (int64_t h = 0; h < ad->Hkv; h++) {
            float *d = dst + ((b * ad->Hkv + h) * ad->St) * E;
            if (past) memcpy(d, past + ((b * ad->Hkv + h) * ad->Sp) * E, sizeof(float) * (size_t)(ad->Sp * E));
            d += ad->Sp * E;
            for (int64_t j = 0; j < ad->Skv; j++) {
                const float *src = ad->three_d ? cur + ((b * ad->Skv + j) * ad->Hkv + h) * E
                                               : cur + ((b * ad->Hkv + h) * ad->Skv + j) * E;
                memcpy(d + j * E, src, sizeof(float) * (size_t)E);
            }
        }
}

static fa_status kernel_attention(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                  fa_value *out, int n_out, int threads)
{
    const fa_value *qv = &in[0], *kv = &in[1], *vv = &in[2];
    const fa_value *mv = n_in > 3 && in[3].data ? &in[3] : NULL;
    const fa_value *pkv = n_in > 4 && in[4].data ? &in[4] : NULL;
    const fa_value *pvv = n_in > 5 && in[5].data ? &in[5] : NULL;
    const fa_value *nlv = n_in > 6 && in[6].data ? &in[6] : NULL;
    attn_dims ad;
    fa_status st = attn_shape(ctx, n, qv->rank, qv->dims, kv->rank, kv->dims, vv->rank, vv->dims,
                              pkv ? pkv->rank : 0, pkv ? pkv->dims : NULL, pvv ? pvv->rank : 0,
                              pvv ? pvv->dims : NULL, &ad);
    if (st) return st;
    bool causal = fa_node_attr_int(n, "is_causal", 0) != 0;
    int64_t mode = fa_node_attr_int(n, "qk_matmul_output_mode", 0);
    float softcap = fa_node_attr_float(n, "softcap", 0.0f);
    int64_t win_l = fa_node_attr_int(n, "left_window_size", -1), win_r = fa_node_attr_int(n, "right_window_size", -1);
    const fa_attr *sa = fa_node_attr(n, "scale");
    double scale = (sa && sa->type == FA_ATTR_FLOAT) ? sa->f : 1.0 / sqrt((double)ad.D);
    /* The reference scales Q and K by sqrt(scale) each; scaling Q by `scale` once is the same
     * product up to float rounding. */
    float sc2 = (float)scale;
    fa_value *yv = &out[0];
    fa_value *prk = n_out > 1 && out[1].data ? &out[1] : NULL;
    fa_value *prv = n_out > 2 && out[2].data ? &out[2] : NULL;
    fa_value *qko = n_out > 3 && out[3].data ? &out[3] : NULL;

    const float *q = NULL, *k = NULL, *v = NULL, *pk = NULL, *pv = NULL, *mf = NULL;
    float *qo = NULL, *ko = NULL, *vo = NULL, *pko = NULL, *pvo = NULL, *mo = NULL;
    float *y = NULL, *kall = NULL, *vall = NULL, *qkbuf = NULL, *ws = NULL;
    const uint8_t *mb = NULL;
    int64_t mstr[4] = {0, 0, 0, 0}, mlast = 0;
    if ((st = f32_in(ctx, n, qv, &q, &qo)) || (st = f32_in(ctx, n, kv, &k, &ko)) ||
        (st = f32_in(ctx, n, vv, &v, &vo)) || (st = f32_in(ctx, n, pkv, &pk, &pko)) ||
        (st = f32_in(ctx, n, pvv, &pv, &pvo)))
        goto done;
    if (mv) {
        int64_t full[4] = {ad.B, ad.Hq, ad.Sq, ad.St}, md[4];
        if (mv->rank < 1 || mv->rank > 4 || mv->dims[mv->rank - 1] > ad.St) {
            st = fa_node_error(ctx, n, "attn_mask of rank %d does not fit the scores", mv->rank);
            goto done;
        }
        memcpy(md, mv->dims, sizeof(int64_t) * (size_t)mv->rank);
        mlast = md[mv->rank - 1];
        md[mv->rank - 1] = 1;
        if (!bcasts_onto(mv->rank, md, 4, full)) {
            st = fa_node_error(ctx, n, "attn_mask does not broadcast to the scores");
            goto done;
        }
        /* strides with the true last dim (mlast), broadcast dims stride 0 */
        int64_t s = mlast;
        for (int i = 2; i >= 0; i--) {
            int mi = i - (4 - mv->rank);
            if (mi < 0) {
                mstr[i] = 0;
                continue;
            }
            mstr[i] = md[mi] == 1 ? 0 : s;
            s *= md[mi];
        }
        if (mv->dtype == FA_DTYPE_BOOL) mb = mv->data;
        else if ((st = f32_in(ctx, n, mv, &mf, &mo))) goto done;
    }
    if ((st = f32_out(ctx, n, yv, &y))) goto done;
    kall = malloc(sizeof(float) * (size_t)(ad.B * ad.Hkv * ad.St * ad.D + 1));
    vall = malloc(sizeof(float) * (size_t)(ad.B * ad.Hkv * ad.St * ad.Dv + 1));
    int nt = clamp_threads(threads);
    ws = malloc(sizeof(float) * (size_t)(nt * (ad.St + ad.D) + 1));
    if (qko) qkbuf = malloc(sizeof(float) * (size_t)(fa_value_numel(qko) + 1));
    if (!kall || !vall || !ws || (qko && !qkbuf)) {
        st = fa_ctx_error(ctx, FA_ERR_NOMEM, "node '%s': out of memory", n->name);
        goto done;
    }
    attn_concat(kall, pk, k, &ad, ad.D);
    attn_concat(vall, pv, v, &ad, ad.Dv);
    int64_t grp = ad.Hq / ad.Hkv;
    int64_t rows = ad.B * ad.Hq * ad.Sq;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        float *sc = ws + (size_t)tid * (size_t)(ad.St + ad.D), *qs = sc + ad.St;
        int64_t i = r % ad.Sq, h = (r / ad.Sq) % ad.Hq, b = r / (ad.Sq * ad.Hq), hk = h / grp;
        const float *qr = ad.three_d ? q + ((b * ad.Sq + i) * ad.Hq + h) * ad.D : q + r * ad.D;
#pragma omp simd
        for (int64_t d = 0; d < ad.D; d++) qs[d] = qr[d] * sc2;
        const float *kb = kall + (b * ad.Hkv + hk) * ad.St * ad.D;
        const float *vb = vall + (b * ad.Hkv + hk) * ad.St * ad.Dv;
        /* Offset of this query block (spec "offset"): the past length with an internal cache,
         * nonpad_kv_seqlen[b] - Sq with an external one, else 0; a negative offset masks
         * the leading rows entirely. Causal: j <= i + off; window: i + off - L <= j <= i + off + R. */
        int64_t nonpad = nlv ? fa_load_as_i64(nlv->data, nlv->dtype, b) : ad.St;
        int64_t off = pkv ? ad.Sp : nlv ? nonpad - ad.Sq : 0;
        float *qk = qkbuf ? qkbuf + r * ad.St : NULL;
        float mx = -INFINITY;
        bool open = false; /* some key's bias is above -inf: the row is not fully masked */
        for (int64_t j = 0; j < ad.St; j++) {
            const float *kr = kb + j * ad.D;
            float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
            for (int64_t d = 0; d < ad.D; d++) acc += qs[d] * kr[d];
            if (softcap > 0.0f) acc = softcap * tanhf(acc / softcap);
            if (qk && mode <= 1) qk[j] = acc; /* the reference's modes 0 and 1: softcapped QK */
            float bias = 0.0f;
            if (mb || mf) {
                if (j >= mlast) bias = -INFINITY;
                else {
                    int64_t mi = b * mstr[0] + h * mstr[1] + i * mstr[2] + j;
                    bias = mb ? (mb[mi] ? 0.0f : -INFINITY) : mf[mi];
                }
            }
            int64_t diff = i + off - j;
            if (causal && diff < 0) bias += -INFINITY;
            if ((win_l >= 0 && diff > win_l) || (win_r >= 0 && -diff > win_r)) bias += -INFINITY;
            if (j >= nonpad) bias += -INFINITY;
            if (!(isinf(bias) && bias < 0)) open = true;
            acc += bias;
            if (qk && mode == 2) qk[j] = acc;
            sc[j] = acc;
            if (acc > mx) mx = acc;
        }
        if (!open || mx == -INFINITY) {
            /* fully masked row: zero probabilities, so Y's row is 0 (spec; reference's guard) */
            for (int64_t j = 0; j < ad.St; j++) sc[j] = 0.0f;
        } else {
            double sum = 0.0;
#pragma omp simd
            for (int64_t j = 0; j < ad.St; j++) sc[j] -= mx;
            vexp_inplace(sc, ad.St);
#pragma omp simd reduction(+ : sum)
            for (int64_t j = 0; j < ad.St; j++) sum += sc[j];
            float inv = (float)(1.0 / sum);
            for (int64_t j = 0; j < ad.St; j++) sc[j] *= inv;
        }
        if (qk && mode == 3)
            for (int64_t j = 0; j < ad.St; j++) qk[j] = sc[j];
        float *yr = ad.three_d ? y + ((b * ad.Sq + i) * ad.Hq + h) * ad.Dv : y + r * ad.Dv;
#pragma omp simd
        for (int64_t d = 0; d < ad.Dv; d++) yr[d] = 0.0f;
        for (int64_t j = 0; j < ad.St; j++) {
            float p = sc[j];
            const float *vr = vb + j * ad.Dv;
#pragma omp simd
            for (int64_t d = 0; d < ad.Dv; d++) yr[d] += p * vr[d];
        }
    }
    if (prk) {
        int64_t ne = fa_value_numel(prk);
        for (int64_t i = 0; i < ne; i++) fa_store_from_double(prk->data, prk->dtype, i, kall[i]);
    }
    if (prv) {
        int64_t ne = fa_value_numel(prv);
        for (int64_t i = 0; i < ne; i++) fa_store_from_double(prv->data, prv->dtype, i, vall[i]);
    }
    if (qko) {
        int64_t ne = fa_value_numel(qko);
        for (int64_t i = 0; i < ne; i++) fa_store_from_double(qko->data, qko->dtype, i, qkbuf[i]);
    }
done:
    if (st) f32_out_free(yv, y);
    else f32_out_done(yv, y);
    free(qo);
    free(ko);
    free(vo);
    free(pko);
    free(pvo);
    free(mo);
    free(kall);
    free(vall);
    free(qkbuf);
    free(ws);
    return st;
}

/* Attention FLOPs = B*Hq*Sq*St * (2*D + 2*Dv + 5 + [mask or causal] + 3*[softcap > 0])
 * + numel(Q): QK^T and PV matmuls (FMA = 2), softmax 5 per score, bias add, softcap
 * (divide, tanh, multiply), and the scale multiply of Q.
 * Bytes: every input read once, every requested output written once. */
static void cost_attention(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *q = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0);
    const fa_tensor *k = fa_graph_in(g, n, 1), *pk = fa_graph_in(g, n, 4);
    if (!q || !y || !k || fa_tensor_numel(q) < 0 || fa_tensor_numel(y) < 0 || q->rank < 3) return;
    int64_t B = q->dims[0], Hq, Sq, D, Dv;
    if (q->rank == 3) {
        Hq = fa_node_attr_int(n, "q_num_heads", 1);
        if (Hq <= 0) return;
        Sq = q->dims[1];
        D = q->dims[2] / Hq;
        Dv = y->dims[2] / Hq;
    } else {
        Hq = q->dims[1];
        Sq = q->dims[2];
        D = q->dims[3];
        Dv = y->dims[3];
    }
    int64_t St = (q->rank == 3 ? k->dims[1] : k->dims[2]) + (pk && pk->rank == 4 ? pk->dims[2] : 0);
    /* every factor is a dim (within 2^48): the products saturate instead of wrapping */
    uint64_t scores = fa_u64_mul_sat(fa_u64_mul_sat((uint64_t)B, (uint64_t)Hq), fa_u64_mul_sat((uint64_t)Sq, (uint64_t)St));
    uint64_t per = 2 * (uint64_t)D + 2 * (uint64_t)Dv + 5;
    if (fa_graph_in(g, n, 3) || fa_node_attr_int(n, "is_causal", 0)) per += 1;
    if (fa_node_attr_float(n, "softcap", 0.0f) > 0.0f) per += 3;
    out->flops = fa_u64_add_sat(fa_u64_mul_sat(scores, per), (uint64_t)fa_tensor_numel(q));
}

/* ------------------------------------------------------------------------------------------ */
/* Recurrent layers: RNN, GRU and LSTM (ONNX Operators.md, opsets 7 and 14 (14 adds layout);
 * opset 22 only widens the element types). Inputs X [S, batch, I] (layout 1: [batch, S, I]),
 * W [dirs, G*H, I], R [dirs, G*H, H], B? [dirs, 2*G*H] (Wb then Rb), sequence_lens? [batch],
 * initial_h? [dirs, batch, H] (layout 1: [batch, dirs, H]); LSTM also initial_c? (same shape)
 * and P? [dirs, 3H]. G, the gates a step computes: RNN 1, GRU 3 (order z, r, h), LSTM 4 (order
 * i, o, f, c). With f, g, h the direction's activations and [] the clip to [-clip, clip] of
 * every activation's input:
 *   RNN:  Ht = f([Xt Wi^T + Ht-1 Ri^T + Wbi + Rbi])
 *   GRU:  zt = f([Xt Wz^T + Ht-1 Rz^T + Wbz + Rbz]),  rt = f([Xt Wr^T + Ht-1 Rr^T + Wbr + Rbr])
 *         ht = g([Xt Wh^T + (rt . Ht-1) Rh^T + Rbh + Wbh])         linear_before_reset = 0
 *         ht = g([Xt Wh^T + rt . (Ht-1 Rh^T + Rbh) + Wbh])         linear_before_reset != 0
 *         Ht = (1 - zt) . ht + zt . Ht-1
 *   LSTM: it = f([Xt Wi^T + Ht-1 Ri^T + Pi.Ct-1 + Wbi + Rbi])
 *         ft = f([Xt Wf^T + Ht-1 Rf^T + Pf.Ct-1 + Wbf + Rbf])       (input_forget: ft = 1 - it)
 *         ct = g([Xt Wc^T + Ht-1 Rc^T + Wbc + Rbc]),  Ct = ft.Ct-1 + it.ct
 *         ot = f([Xt Wo^T + Ht-1 Ro^T + Po.Ct + Wbo + Rbo]),  Ht = ot.h(Ct)
 * Default activations: RNN Tanh; GRU Sigmoid, Tanh; LSTM Sigmoid, Tanh, Tanh (per direction).
 * Steps past sequence_lens[b] give zeros in Y and keep the last state in Y_h/Y_c
 * (onnxruntime's semantics; the ONNX reference evaluator ignores sequence_lens). */

enum rnn_kind { RK_RNN, RK_GRU, RK_LSTM };

static int rnn_gates(enum rnn_kind k) { return k == RK_LSTM ? 4 : k == RK_GRU ? 3 : 1; }
static int rnn_acts(enum rnn_kind k) { return k == RK_LSTM ? 3 : k == RK_GRU ? 2 : 1; }
static enum rnn_kind rnn_kind_of(const fa_node *n)
{
    return strcmp(n->op_type, "LSTM") == 0 ? RK_LSTM : strcmp(n->op_type, "GRU") == 0 ? RK_GRU : RK_RNN;
}

enum rnn_act {
    ACT_SIGMOID,
    ACT_TANH,
    ACT_RELU,
    ACT_AFFINE,
    ACT_LEAKYRELU,
    ACT_THRESHRELU,
    ACT_SCALEDTANH,
    ACT_HARDSIGMOID,
    ACT_ELU,
    ACT_SOFTSIGN,
    ACT_SOFTPLUS,
};

typedef struct rnn_fn {
    enum rnn_act kind;
    float alpha, beta;
} rnn_fn;

static inline float rnn_apply(const rnn_fn *f, float x)
{
    switch (f->kind) {
    case ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case ACT_TANH: return tanhf(x);
    case ACT_RELU: return x > 0.0f ? x : 0.0f;
    case ACT_AFFINE: return f->alpha * x + f->beta;
    case ACT_LEAKYRELU: return x >= 0.0f ? x : f->alpha * x;
    case ACT_THRESHRELU: return x > f->alpha ? x : 0.0f;
    case ACT_SCALEDTANH: return f->alpha * tanhf(f->beta * x);
    case ACT_HARDSIGMOID: {
        float v = f->alpha * x + f->beta;
        return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
    }
    case ACT_ELU: return x >= 0.0f ? x : f->alpha * (expf(x) - 1.0f);
    case ACT_SOFTSIGN: return x / (1.0f + fabsf(x));
    case ACT_SOFTPLUS: return log1pf(expf(x));
    }
    return x;
}

/* rnn_apply over an array in place: Sigmoid and Tanh on graph/vmath.c's vector forms where the
 * CPU has them (sigmoid within 2e-7 relative, tanh SLEEF's u35), libm's per element otherwise and
 * for the other activations. */
static void rnn_apply_array(const rnn_fn *f, float *v, int64_t n)
{
    if (n <= 0) return;
    if (f->kind == ACT_SIGMOID && fa_vmath_available()) {
        fa_vsigmoidf(v, v, n);
        return;
    }
    if (f->kind == ACT_TANH && fa_vmath_available()) {
        fa_vtanhf(v, v, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) v[i] = rnn_apply(f, v[i]);
}

/* Parse `activations` (rnn_acts(kind) per direction, forward's first) with activation_alpha/beta
 * (consumed in order by the activations that take them; defaults per ONNX: LeakyRelu 0.01,
 * ThresholdedRelu 1.0, ScaledTanh 1/1, HardSigmoid 0.2/0.5, Elu 1.0, Affine 1/0). fns holds
 * rnn_acts(kind) * dirs entries (at most 6). */
static fa_status rnn_parse_acts(fa_ctx *ctx, const fa_node *n, enum rnn_kind kind, int dirs, rnn_fn fns[6])
{
    static const char *const dflt[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    int per = rnn_acts(kind);
    const fa_attr *aa = fa_node_attr(n, "activations");
    const fa_attr *al = fa_node_attr(n, "activation_alpha"), *be = fa_node_attr(n, "activation_beta");
    int na = (aa && aa->type == FA_ATTR_STRINGS) ? aa->n : 0;
    if (na && na != per * dirs)
        return fa_node_error(ctx, n, "activations has %d entries, %d expected (%d per direction)", na, per * dirs, per);
    int ia = 0, ib = 0;
    for (int i = 0; i < per * dirs; i++) {
        const char *s = na ? aa->strings[i] : dflt[kind][i % per];
        static const struct { const char *name; enum rnn_act k; int np; float a, b; } tab[] = {
            {"Sigmoid", ACT_SIGMOID, 0, 0, 0},       {"Tanh", ACT_TANH, 0, 0, 0},
            {"Relu", ACT_RELU, 0, 0, 0},             {"Affine", ACT_AFFINE, 2, 1.0f, 0.0f},
            {"LeakyRelu", ACT_LEAKYRELU, 1, 0.01f, 0}, {"ThresholdedRelu", ACT_THRESHRELU, 1, 1.0f, 0},
            {"ScaledTanh", ACT_SCALEDTANH, 2, 1.0f, 1.0f}, {"HardSigmoid", ACT_HARDSIGMOID, 2, 0.2f, 0.5f},
            {"Elu", ACT_ELU, 1, 1.0f, 0},            {"Softsign", ACT_SOFTSIGN, 0, 0, 0},
            {"Softplus", ACT_SOFTPLUS, 0, 0, 0},
        };
        size_t t;
        for (t = 0; t < sizeof tab / sizeof tab[0]; t++)
            if (strcasecmp(s, tab[t].name) == 0) break;
        if (t == sizeof tab / sizeof tab[0]) return fa_node_unsupported(ctx, n, "activation '%s' is not supported", s);
        fns[i].kind = tab[t].k;
        fns[i].alpha = tab[t].a;
        fns[i].beta = tab[t].b;
        if (tab[t].np >= 1 && al && al->type == FA_ATTR_FLOATS && ia < al->n) fns[i].alpha = al->floats[ia++];
        if (tab[t].np >= 2 && be && be->type == FA_ATTR_FLOATS && ib < be->n) fns[i].beta = be->floats[ib++];
    }
    return FA_OK;
}

static int rnn_dirs(const fa_node *n, int *reverse_only)
{
    const char *d = fa_node_attr_string(n, "direction", "forward");
    *reverse_only = strcmp(d, "reverse") == 0;
    if (strcmp(d, "bidirectional") == 0) return 2;
    if (strcmp(d, "forward") == 0 || *reverse_only) return 1;
    return -1;
}

static fa_status infer_recurrent(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    enum rnn_kind kind = rnn_kind_of(n);
    int G = rnn_gates(kind);
    fa_tensor *x = req_float_input(ctx, g, n, 0), *w = x ? req_float_input(ctx, g, n, 1) : NULL,
              *r = w ? req_float_input(ctx, g, n, 2) : NULL;
    if (!r) return fa_ctx_status(ctx);
    int rev;
    int dirs = rnn_dirs(n, &rev);
    if (dirs < 0) return fa_node_error(ctx, n, "direction '%s' is not forward, reverse or bidirectional",
                                       fa_node_attr_string(n, "direction", ""));
    int64_t layout = node_opset(n, 14) >= 14 ? fa_node_attr_int(n, "layout", 0) : 0;
    if (layout != 0 && layout != 1) return fa_node_error(ctx, n, "layout %lld is not 0 or 1", (long long)layout);
    if (x->rank != 3 || w->rank != 3 || r->rank != 3)
        return fa_node_error(ctx, n, "X, W, R must be 3-D (ranks %d, %d, %d)", x->rank, w->rank, r->rank);
    int64_t S = layout ? x->dims[1] : x->dims[0], Bt = layout ? x->dims[0] : x->dims[1], I = x->dims[2];
    int64_t H = fa_node_attr_int(n, "hidden_size", r->dims[2]);
    if (H != r->dims[2]) /* R is [dirs, G*H, H]: H is within a tensor's span from here on */
        return fa_node_error(ctx, n, "hidden_size %lld differs from R's last dim %lld", (long long)H, (long long)r->dims[2]);
    if (w->dims[0] != dirs || w->dims[1] != G * H || w->dims[2] != I)
        return fa_node_error(ctx, n, "W must be [%d, %lld, %lld]", dirs, (long long)(G * H), (long long)I);
    if (r->dims[0] != dirs || r->dims[1] != G * H || r->dims[2] != H)
        return fa_node_error(ctx, n, "R must be [%d, %lld, %lld]", dirs, (long long)(G * H), (long long)H);
    rnn_fn fns[6];
    fa_status st = rnn_parse_acts(ctx, n, kind, dirs, fns);
    if (st) return st;
    (void)S;
    int64_t bth;
    if ((st = fa_dim_mul(ctx, n, "batch x hidden_size", Bt, H, &bth)) ||
        (st = fa_dim_mul(ctx, n, "directions x batch x hidden_size", bth, dirs, &bth)))
        return st;
    struct { int idx; int64_t want; const char *name; } chk[] = {
        {3, (int64_t)dirs * 2 * G * H, "B"}, {5, bth, "initial_h"},
        {6, bth, "initial_c"}, {7, (int64_t)dirs * 3 * H, "P"}, {4, Bt, "sequence_lens"}};
    for (size_t i = 0; i < sizeof chk / sizeof chk[0]; i++) {
        if (kind != RK_LSTM && chk[i].idx >= 6) continue;
        bool err;
        fa_tensor *t = opt_input(ctx, g, n, chk[i].idx, &err);
        if (err) return fa_ctx_status(ctx);
        if (t && fa_tensor_numel(t) != chk[i].want)
            return fa_node_error(ctx, n, "%s '%s' has %lld elements, %lld expected", chk[i].name, t->name,
                                 (long long)fa_tensor_numel(t), (long long)chk[i].want);
    }
    int64_t yd[4], hd[3];
    if (layout) {
        yd[0] = Bt, yd[1] = S, yd[2] = dirs, yd[3] = H;
        hd[0] = Bt, hd[1] = dirs, hd[2] = H;
    } else {
        yd[0] = S, yd[1] = dirs, yd[2] = Bt, yd[3] = H;
        hd[0] = dirs, hd[1] = Bt, hd[2] = H;
    }
    fa_set_out(g, n, 0, x->dtype, 4, yd);
    fa_set_out(g, n, 1, x->dtype, 3, hd);
    if (kind == RK_LSTM) fa_set_out(g, n, 2, x->dtype, 3, hd);
    return FA_OK;
}

static inline float rnn_clip(float v, float clip) { return clip > 0.0f ? (v > clip ? clip : (v < -clip ? -clip : v)) : v; }

/* The recurrent layers' two products, compiled for AVX-512F, AVX2 and the baseline and picked
 * at load (GCC target_clones; the graph library is built for the baseline x86-64 otherwise):
 * y_r[gi] = (bias ? bias[gi] : 0) + x_r . w[gi, :] for nr <= RNN_TILE rows x_r (K floats each)
 * and gate rows gi in [g0, g1) of w [*, K] row-major. Each w row is read once for the nr rows
 * (the rows stay in L1); sums in float, 16 lanes then a pairwise tree. */
enum { RNN_TILE = 8, RNN_GATE_BLOCK = 64 };
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define RNN_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=fast")))
#else
#define RNN_CLONES
#endif
typedef float rnn_v16 __attribute__((vector_size(64), aligned(4))); /* 16 lanes, unaligned loads */

/* By pointer: a 64-byte vector passed by value draws GCC's psABI note on the baseline build. */
static inline float rnn_hsum(const rnn_v16 *v)
{
    float t[16];
    memcpy(t, v, sizeof t);
    return (((t[0] + t[8]) + (t[4] + t[12])) + ((t[2] + t[10]) + (t[6] + t[14]))) +
           (((t[1] + t[9]) + (t[5] + t[13])) + ((t[3] + t[11]) + (t[7] + t[15])));
}

/* GCC vector extensions, not `omp simd reduction`: its reduction summed a 64-lane array in
 * scalar after every dot product, 40 % of an LSTM's time. */
RNN_CLONES static void
rnn_rows_dot(const float *const *x, int nr, const float *w, int64_t K, const float *bias, int64_t g0, int64_t g1,
             float *const *y)
{
    int64_t K16 = K & ~(int64_t)15;
    if (nr == RNN_TILE) {
        for (int64_t gi = g0; gi < g1; gi++) {
            const float *wr = w + gi * K;
            const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4], *x5 = x[5], *x6 = x[6], *x7 = x[7];
            rnn_v16 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
            for (int64_t k = 0; k < K16; k += 16) { /* eight accumulators held in registers */
                rnn_v16 wk = *(const rnn_v16 *)(wr + k);
                a0 += *(const rnn_v16 *)(x0 + k) * wk, a1 += *(const rnn_v16 *)(x1 + k) * wk;
                a2 += *(const rnn_v16 *)(x2 + k) * wk, a3 += *(const rnn_v16 *)(x3 + k) * wk;
                a4 += *(const rnn_v16 *)(x4 + k) * wk, a5 += *(const rnn_v16 *)(x5 + k) * wk;
                a6 += *(const rnn_v16 *)(x6 + k) * wk, a7 += *(const rnn_v16 *)(x7 + k) * wk;
            }
            float b0 = bias ? bias[gi] : 0.0f;
            float sum[RNN_TILE] = {rnn_hsum(&a0), rnn_hsum(&a1), rnn_hsum(&a2), rnn_hsum(&a3),
                                   rnn_hsum(&a4), rnn_hsum(&a5), rnn_hsum(&a6), rnn_hsum(&a7)};
            for (int r = 0; r < RNN_TILE; r++) {
                float acc = sum[r];
                for (int64_t k = K16; k < K; k++) acc += x[r][k] * wr[k];
                y[r][gi] = b0 + acc;
            }
        }
        return;
    }
    for (int r = 0; r < nr; r++) { /* four gate rows at once against one row of x */
        const float *xr = x[r];
        int64_t gi = g0, K32 = K & ~(int64_t)31;
        for (; gi + 4 <= g1; gi += 4) {
            const float *w0 = w + gi * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
            /* two accumulators a row (even and odd blocks of 16): eight independent sums */
            rnn_v16 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
            int64_t k = 0;
            for (; k < K32; k += 32) {
                rnn_v16 xk = *(const rnn_v16 *)(xr + k), xl = *(const rnn_v16 *)(xr + k + 16);
                a0 += *(const rnn_v16 *)(w0 + k) * xk, b0 += *(const rnn_v16 *)(w0 + k + 16) * xl;
                a1 += *(const rnn_v16 *)(w1 + k) * xk, b1 += *(const rnn_v16 *)(w1 + k + 16) * xl;
                a2 += *(const rnn_v16 *)(w2 + k) * xk, b2 += *(const rnn_v16 *)(w2 + k + 16) * xl;
                a3 += *(const rnn_v16 *)(w3 + k) * xk, b3 += *(const rnn_v16 *)(w3 + k + 16) * xl;
            }
            for (; k < K16; k += 16) {
                rnn_v16 xk = *(const rnn_v16 *)(xr + k);
                a0 += *(const rnn_v16 *)(w0 + k) * xk;
                a1 += *(const rnn_v16 *)(w1 + k) * xk;
                a2 += *(const rnn_v16 *)(w2 + k) * xk;
                a3 += *(const rnn_v16 *)(w3 + k) * xk;
            }
            a0 += b0, a1 += b1, a2 += b2, a3 += b3;
            float s0 = rnn_hsum(&a0), s1 = rnn_hsum(&a1), s2 = rnn_hsum(&a2), s3 = rnn_hsum(&a3);
            for (k = K16; k < K; k++) s0 += xr[k] * w0[k], s1 += xr[k] * w1[k], s2 += xr[k] * w2[k], s3 += xr[k] * w3[k];
            y[r][gi] = (bias ? bias[gi] : 0.0f) + s0;
            y[r][gi + 1] = (bias ? bias[gi + 1] : 0.0f) + s1;
            y[r][gi + 2] = (bias ? bias[gi + 2] : 0.0f) + s2;
            y[r][gi + 3] = (bias ? bias[gi + 3] : 0.0f) + s3;
        }
        for (; gi < g1; gi++) {
            const float *wr = w + gi * K;
            rnn_v16 a0 = {0};
            for (int64_t k = 0; k < K16; k += 16) a0 += *(const rnn_v16 *)(wr + k) * *(const rnn_v16 *)(xr + k);
            float acc = rnn_hsum(&a0);
            for (int64_t k = K16; k < K; k++) acc += xr[k] * wr[k];
            y[r][gi] = (bias ? bias[gi] : 0.0f) + acc;
        }
    }
}

/* The same products from a packed copy wp of w [N, K]: blocks of 16 columns (rows of w), each
 * K x 16 contiguous (rnn_pack: element (k, c) at wp[(c / 16) * K * 16 + k * 16 + c % 16]).
 * y_r[c] = (bias ? bias[c] : 0) + sum_k x_r[k] * w[c, k] for columns c in [c0, c1), 16 columns
 * a vector, so no sum across lanes: eight rows by 32 columns (16 accumulators), or one row by 64
 * columns. At batch 8 the lane sums of rnn_rows_dot cost as much as the products; a plain
 * transpose (a row stride of 4 KiB) put every k on the same L1 sets and was 2.7x slower. */
RNN_CLONES static void
rnn_rows_axpy(const float *const *x, int nr, const float *wp, int64_t K, const float *bias, int64_t c0, int64_t c1,
              float *const *y)
{
    const int64_t BK = K * 16; /* floats in one packed block */
    for (int r = 0; r < nr; r++) /* columns before the first full block: one at a time */
        for (int64_t cc = c0; cc < c1 && (cc & 15); cc++) {
            float acc = 0;
            const float *pb = wp + (cc >> 4) * BK + (cc & 15);
            for (int64_t k = 0; k < K; k++) acc += x[r][k] * pb[k * 16];
            y[r][cc] = (bias ? bias[cc] : 0.0f) + acc;
        }
    int64_t c = (c0 + 15) & ~(int64_t)15;
    if (c > c1) c = c1;
    int64_t cv = c;
    if (nr == RNN_TILE) {
        for (; cv + 32 <= c1; cv += 32) {
            const float *p0 = wp + (cv >> 4) * BK, *p1 = p0 + BK;
            rnn_v16 a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0}, a20 = {0}, a21 = {0}, a30 = {0}, a31 = {0};
            rnn_v16 a40 = {0}, a41 = {0}, a50 = {0}, a51 = {0}, a60 = {0}, a61 = {0}, a70 = {0}, a71 = {0};
            for (int64_t k = 0; k < K; k++) {
                rnn_v16 w0 = *(const rnn_v16 *)(p0 + k * 16), w1 = *(const rnn_v16 *)(p1 + k * 16);
                rnn_v16 x0 = (rnn_v16){0} + x[0][k], x1 = (rnn_v16){0} + x[1][k], x2 = (rnn_v16){0} + x[2][k],
                        x3 = (rnn_v16){0} + x[3][k];
                a00 += x0 * w0, a01 += x0 * w1, a10 += x1 * w0, a11 += x1 * w1;
                a20 += x2 * w0, a21 += x2 * w1, a30 += x3 * w0, a31 += x3 * w1;
                rnn_v16 x4 = (rnn_v16){0} + x[4][k], x5 = (rnn_v16){0} + x[5][k], x6 = (rnn_v16){0} + x[6][k],
                        x7 = (rnn_v16){0} + x[7][k];
                a40 += x4 * w0, a41 += x4 * w1, a50 += x5 * w0, a51 += x5 * w1;
                a60 += x6 * w0, a61 += x6 * w1, a70 += x7 * w0, a71 += x7 * w1;
            }
            rnn_v16 bv0 = {0}, bv1 = {0};
            if (bias) bv0 = *(const rnn_v16 *)(bias + cv), bv1 = *(const rnn_v16 *)(bias + cv + 16);
            rnn_v16 r0[RNN_TILE] = {a00, a10, a20, a30, a40, a50, a60, a70}, r1[RNN_TILE] = {a01, a11, a21, a31, a41, a51, a61, a71};
            for (int r = 0; r < RNN_TILE; r++) {
                rnn_v16 v0 = r0[r] + bv0, v1 = r1[r] + bv1;
                memcpy(y[r] + cv, &v0, sizeof v0);
                memcpy(y[r] + cv + 16, &v1, sizeof v1);
            }
        }
    }
    for (int r = 0; r < nr; r++) { /* one row at a time: 64 columns, then 16, then single ones */
        const float *xr = x[r];
        int64_t cc = cv;
        for (; cc + 64 <= c1; cc += 64) {
            const float *p0 = wp + (cc >> 4) * BK, *p1 = p0 + BK, *p2 = p1 + BK, *p3 = p2 + BK;
            rnn_v16 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
            for (int64_t k = 0; k < K; k++) {
                rnn_v16 xv = (rnn_v16){0} + xr[k];
                a0 += xv * *(const rnn_v16 *)(p0 + k * 16), a1 += xv * *(const rnn_v16 *)(p1 + k * 16);
                a2 += xv * *(const rnn_v16 *)(p2 + k * 16), a3 += xv * *(const rnn_v16 *)(p3 + k * 16);
            }
            if (bias) {
                a0 += *(const rnn_v16 *)(bias + cc), a1 += *(const rnn_v16 *)(bias + cc + 16);
                a2 += *(const rnn_v16 *)(bias + cc + 32), a3 += *(const rnn_v16 *)(bias + cc + 48);
            }
            memcpy(y[r] + cc, &a0, sizeof a0), memcpy(y[r] + cc + 16, &a1, sizeof a1);
            memcpy(y[r] + cc + 32, &a2, sizeof a2), memcpy(y[r] + cc + 48, &a3, sizeof a3);
        }
        for (; cc + 16 <= c1; cc += 16) {
            const float *p0 = wp + (cc >> 4) * BK;
            rnn_v16 a0 = {0};
            for (int64_t k = 0; k < K; k++) a0 += ((rnn_v16){0} + xr[k]) * *(const rnn_v16 *)(p0 + k * 16);
            if (bias) a0 += *(const rnn_v16 *)(bias + cc);
            memcpy(y[r] + cc, &a0, sizeof a0);
        }
        for (; cc < c1; cc++) {
            float acc = 0;
            const float *pb = wp + (cc >> 4) * BK + (cc & 15);
            for (int64_t k = 0; k < K; k++) acc += xr[k] * pb[k * 16];
            y[r][cc] = (bias ? bias[cc] : 0.0f) + acc;
        }
    }
}

/* rnn_rows_axpy's packed copy of w [N, K]: ((N + 15) / 16) blocks of K x 16 floats, parallel
 * over the blocks. */
static void rnn_pack(const float *w, int64_t N, int64_t K, float *wp, int nt)
{
    int64_t nb = (N + 15) / 16;
#pragma omp parallel for num_threads(nt) schedule(static) if (N * K >= 65536)
    for (int64_t b = 0; b < nb; b++)
        for (int64_t n = b * 16; n < N && n < b * 16 + 16; n++)
            for (int64_t k = 0; k < K; k++) wp[b * K * 16 + k * 16 + (n & 15)] = w[n * K + k];
}

/* Y rows (nrows of them, row i at yrow(i)) = X rows . W^T + bias over gate rows [g0, g1) of
 * W [*, K]: parallel over (tile of RNN_TILE rows, block of RNN_GATE_BLOCK gate rows). rows_x and
 * rows_y give each row's address. */
static void rnn_project(const float *const *rows_x, float *const *rows_y, int64_t nrows, const float *w,
                        const float *wt, int64_t K, const float *bias, int64_t g0, int64_t g1, int nt)
{
    int64_t ntile = (nrows + RNN_TILE - 1) / RNN_TILE, nblk = (g1 - g0 + RNN_GATE_BLOCK - 1) / RNN_GATE_BLOCK;
#pragma omp parallel for num_threads(nt) schedule(static) if (ntile * nblk > 1)
    for (int64_t tb = 0; tb < ntile * nblk; tb++) {
        int64_t t0 = tb / nblk * RNN_TILE, gb = g0 + tb % nblk * RNN_GATE_BLOCK;
        int64_t ge = gb + RNN_GATE_BLOCK < g1 ? gb + RNN_GATE_BLOCK : g1;
        int nr = (int)(nrows - t0 < RNN_TILE ? nrows - t0 : RNN_TILE);
        if (wt) rnn_rows_axpy(rows_x + t0, nr, wt, K, bias, gb, ge, rows_y + t0);
        else rnn_rows_dot(rows_x + t0, nr, w, K, bias, gb, ge, rows_y + t0);
    }
}

static fa_status kernel_recurrent(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                  fa_value *out, int n_out, int threads)
{
    enum rnn_kind kind = rnn_kind_of(n);
    int G = rnn_gates(kind), per = rnn_acts(kind);
    int rev;
    int dirs = rnn_dirs(n, &rev);
    if (dirs < 0) return fa_node_error(ctx, n, "bad direction");
    int64_t layout = node_opset(n, 14) >= 14 ? fa_node_attr_int(n, "layout", 0) : 0;
    const fa_value *xv = &in[0];
    int64_t S = layout ? xv->dims[1] : xv->dims[0], Bt = layout ? xv->dims[0] : xv->dims[1];
    int64_t I = xv->dims[2], H = in[2].dims[2], GH = G * H;
    if (xv->rank != 3 || in[1].rank != 3 || in[2].rank != 3 || in[1].dims[0] != dirs ||
        in[1].dims[1] != GH || in[1].dims[2] != I || in[2].dims[0] != dirs || in[2].dims[1] != GH)
        return fa_node_error(ctx, n, "X, W, R shapes do not fit (W must be [%d, %dH, I], R [%d, %dH, H])", dirs, G,
                             dirs, G);
    {
        const int64_t want[8] = {0, 0, 0, (int64_t)dirs * 2 * GH, Bt, (int64_t)dirs * Bt * H,
                                 (int64_t)dirs * Bt * H, (int64_t)dirs * 3 * H};
        for (int i = 3; i < n_in && i < (kind == RK_LSTM ? 8 : 6); i++)
            if (in[i].data && fa_value_numel(&in[i]) != want[i])
                return fa_node_error(ctx, n, "input %d has %lld elements, %lld expected", i,
                                     (long long)fa_value_numel(&in[i]), (long long)want[i]);
    }
    rnn_fn fns[6];
    fa_status st = rnn_parse_acts(ctx, n, kind, dirs, fns);
    if (st) return st;
    float clip = fa_node_attr_float(n, "clip", 0.0f);
    bool input_forget = kind == RK_LSTM && fa_node_attr_int(n, "input_forget", 0) != 0;
    bool lbr = kind == RK_GRU && fa_node_attr_int(n, "linear_before_reset", 0) != 0;
    const fa_value *bv = n_in > 3 && in[3].data ? &in[3] : NULL, *slv = n_in > 4 && in[4].data ? &in[4] : NULL;
    const fa_value *h0v = n_in > 5 && in[5].data ? &in[5] : NULL;
    const fa_value *c0v = kind == RK_LSTM && n_in > 6 && in[6].data ? &in[6] : NULL;
    const fa_value *pv = kind == RK_LSTM && n_in > 7 && in[7].data ? &in[7] : NULL;
    fa_value *yv = n_out > 0 && out[0].data ? &out[0] : NULL, *yhv = n_out > 1 && out[1].data ? &out[1] : NULL,
             *ycv = kind == RK_LSTM && n_out > 2 && out[2].data ? &out[2] : NULL;
    const float *x, *w, *r, *b = NULL, *h0 = NULL, *c0 = NULL, *p = NULL;
    float *xo = NULL, *wo = NULL, *ro = NULL, *bo = NULL, *h0o = NULL, *c0o = NULL, *po = NULL;
    float *y = NULL, *yh = NULL, *yc = NULL, *xw = NULL, *hs = NULL, *hs2 = NULL, *cs = NULL, *rec = NULL, *rh = NULL;
    float *scr = NULL; /* four arrays of H floats a thread: the gates of its units */
    float *wt = NULL, *rt = NULL; /* W and R of one direction packed (rnn_pack, rnn_rows_axpy) */
    const float **xrow = NULL, **hrow = NULL, **hrow2 = NULL, **rhrow = NULL;
    float **xwrow = NULL, **recrow = NULL;
    int64_t *sl = NULL;
    int nt = clamp_threads(threads);
    {   /* the scratch: every step's input projection and one step's gates, each within a tensor's bound */
        int64_t n_xw, n_rec;
        if ((st = fa_dim_mul(ctx, n, "steps x batch x gate rows", S * Bt, GH, &n_xw)) ||
            (st = fa_dim_mul(ctx, n, "batch x gate rows", Bt, GH, &n_rec)))
            goto done;
        if (n_xw > FA_MAX_TENSOR_ELEMENTS || n_rec > FA_MAX_TENSOR_ELEMENTS) {
            st = fa_node_error(ctx, n, "its input projection of %lld floats is past the largest tensor (2^48 elements)",
                               (long long)n_xw);
            goto done;
        }
    }
    if ((st = f32_in(ctx, n, xv, &x, &xo)) || (st = f32_in(ctx, n, &in[1], &w, &wo)) ||
        (st = f32_in(ctx, n, &in[2], &r, &ro)) || (st = f32_in(ctx, n, bv, &b, &bo)) ||
        (st = f32_in(ctx, n, h0v, &h0, &h0o)) || (st = f32_in(ctx, n, c0v, &c0, &c0o)) ||
        (st = f32_in(ctx, n, pv, &p, &po)) || (st = f32_out(ctx, n, yv, &y)) ||
        (st = f32_out(ctx, n, yhv, &yh)) || (st = f32_out(ctx, n, ycv, &yc)))
        goto done;
    xw = malloc(sizeof(float) * (size_t)(S * Bt * GH + 1));
    hs = malloc(sizeof(float) * (size_t)(Bt * H + 1));
    cs = malloc(sizeof(float) * (size_t)(Bt * H + 1));
    rh = malloc(sizeof(float) * (size_t)(Bt * H + 1));
    rec = malloc(sizeof(float) * (size_t)(Bt * GH + 1));
    sl = malloc(sizeof(int64_t) * (size_t)(Bt + 1));
    xrow = malloc(sizeof *xrow * (size_t)(S * Bt + 1));
    xwrow = malloc(sizeof *xwrow * (size_t)(S * Bt + 1));
    hrow = malloc(sizeof *hrow * (size_t)(Bt + 1));
    hrow2 = malloc(sizeof *hrow2 * (size_t)(Bt + 1));
    hs2 = malloc(sizeof(float) * (size_t)(Bt * H + 1));
    scr = malloc(sizeof(float) * (size_t)(4 * H * nt + 1));
    if (S * Bt >= 16 && !(wt = malloc(sizeof(float) * (size_t)(((GH + 15) / 16) * 16 * I + 1)))) {
        st = fa_ctx_error(ctx, FA_ERR_NOMEM, "node '%s': out of memory", n->name);
        goto done;
    }
    if (S >= 4 && Bt >= 4 && !(rt = malloc(sizeof(float) * (size_t)(((GH + 15) / 16) * 16 * H + 1)))) {
        st = fa_ctx_error(ctx, FA_ERR_NOMEM, "node '%s': out of memory", n->name);
        goto done;
    }
    rhrow = malloc(sizeof *rhrow * (size_t)(Bt + 1));
    recrow = malloc(sizeof *recrow * (size_t)(Bt + 1));
    if (!xw || !hs || !cs || !rh || !rec || !sl || !xrow || !xwrow || !hrow || !hrow2 || !hs2 || !scr || !rhrow || !recrow) {
        st = fa_ctx_error(ctx, FA_ERR_NOMEM, "node '%s': out of memory", n->name);
        goto done;
    }
    for (int64_t bb = 0; bb < Bt; bb++) {
        sl[bb] = slv ? fa_load_as_i64(slv->data, slv->dtype, bb) : S;
        if (sl[bb] < 0 || sl[bb] > S) {
            st = fa_node_error(ctx, n, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)bb,
                               (long long)sl[bb], (long long)S);
            goto done;
        }
    }
    if (y) memset(y, 0, sizeof(float) * (size_t)(S * dirs * Bt * H));
    for (int64_t bb = 0; bb < Bt; bb++) {
        hrow[bb] = hs + bb * H;
        hrow2[bb] = hs2 + bb * H;
        rhrow[bb] = rh + bb * H;
        recrow[bb] = rec + bb * GH;
    }
    for (int d = 0; d < dirs; d++) {
        bool backward = rev || d == 1;
        const float *wd = w + (int64_t)d * GH * I, *rd = r + (int64_t)d * GH * H;
        const float *wb = b ? b + (int64_t)d * 2 * GH : NULL, *rb = b ? b + (int64_t)d * 2 * GH + GH : NULL;
        const float *pd = p ? p + (int64_t)d * 3 * H : NULL;
        const rnn_fn *fa = &fns[per * d], *ga = &fns[per * d + (per > 1)], *ha = &fns[per * d + (per > 2) * 2];
        /* Input projection for every step at once: xw[t, b, :] = X[t, b] W^T + Wb. */
        for (int64_t tb = 0; tb < S * Bt; tb++) {
            int64_t t = tb / Bt, bb = tb % Bt;
            xrow[tb] = layout ? x + (bb * S + t) * I : x + (t * Bt + bb) * I;
            xwrow[tb] = xw + tb * GH;
        }
        /* packed copies where they pay: the input weights for 16 rows or more, R for 4 steps or more */
        const float *wtd = NULL, *rtd = NULL;
        if (wt) {
            rnn_pack(wd, GH, I, wt, nt);
            wtd = wt;
        }
        if (rt) {
            rnn_pack(rd, GH, H, rt, nt);
            rtd = rt;
        }
        rnn_project(xrow, xwrow, S * Bt, wd, wtd, I, wb, 0, GH, nt);
        for (int64_t bb = 0; bb < Bt; bb++)
            for (int64_t j = 0; j < H; j++) {
                int64_t hi = layout ? (bb * dirs + d) * H + j : ((int64_t)d * Bt + bb) * H + j;
                hs[bb * H + j] = h0 ? h0[hi] : 0.0f;
                cs[bb * H + j] = c0 ? c0[hi] : 0.0f;
            }
        /* The steps in one parallel region: each thread owns hidden units [j0, j1) of every batch
         * entry, computes their gates' recurrent rows from the whole Ht-1 (hcur) and writes their
         * Ht into hnxt; one barrier a step before the two swap (a GRU without
         * linear_before_reset one more, before its h gate reads every rt . Ht-1). Three parallel
         * loops a step before: their fork/join and barriers cost about as much as the products. */
        float *hbuf[2] = {hs, hs2};
        const float **hrows[2] = {hrow, hrow2};
        int fin = (int)(S & 1); /* the buffer holding Ht after the last step */
#pragma omp parallel num_threads(nt)
        {
            int tid = omp_get_thread_num(), nth = omp_get_num_threads();
            int64_t j0 = H * tid / nth, j1 = H * (tid + 1) / nth;
            for (int64_t step = 0; step < S; step++) {
                const float *hcur = hbuf[step & 1];
                float *hnxt = hbuf[(step + 1) & 1];
                const float *const *hr = hrows[step & 1];
                int ng = kind == RK_GRU && !lbr ? 2 : G;
                for (int64_t b0 = 0; b0 < Bt && j1 > j0; b0 += RNN_TILE) {
                    int nr = (int)(Bt - b0 < RNN_TILE ? Bt - b0 : RNN_TILE);
                    for (int gq = 0; gq < ng; gq++)
                        if (rtd) rnn_rows_axpy(hr + b0, nr, rtd, H, rb, gq * H + j0, gq * H + j1, recrow + b0);
                        else rnn_rows_dot(hr + b0, nr, rd, H, rb, gq * H + j0, gq * H + j1, recrow + b0);
                }
                if (kind == RK_GRU && !lbr) {
                    for (int64_t bb = 0; bb < Bt; bb++) {
                        if (step >= sl[bb]) continue;
                        int64_t t = backward ? sl[bb] - 1 - step : step;
                        for (int64_t j = j0; j < j1; j++) {
                            float rt = rnn_apply(fa, rnn_clip(xw[(t * Bt + bb) * GH + H + j] + rec[bb * GH + H + j], clip));
                            rh[bb * H + j] = rt * hcur[bb * H + j];
                        }
                    }
#pragma omp barrier
                    for (int64_t b0 = 0; b0 < Bt && j1 > j0; b0 += RNN_TILE) {
                        int nr = (int)(Bt - b0 < RNN_TILE ? Bt - b0 : RNN_TILE);
                        if (rtd) rnn_rows_axpy(rhrow + b0, nr, rtd, H, rb, 2 * H + j0, 2 * H + j1, recrow + b0);
                        else rnn_rows_dot(rhrow + b0, nr, rd, H, rb, 2 * H + j0, 2 * H + j1, recrow + b0);
                    }
                }
                for (int64_t bb = 0; bb < Bt; bb++) {
                    if (step >= sl[bb]) { /* the sequence has ended: its state carries */
                        for (int64_t j = j0; j < j1; j++) hnxt[bb * H + j] = hcur[bb * H + j];
                        continue;
                    }
                    int64_t t = backward ? sl[bb] - 1 - step : step;
                    const float *gx = xw + (t * Bt + bb) * GH + j0, *gr = rec + bb * GH + j0;
                    const float *hc = hcur + bb * H + j0;
                    float *hn = hnxt + bb * H + j0, *cc = cs + bb * H + j0;
                    float *v0 = scr + (size_t)tid * 4 * (size_t)H, *v1 = v0 + H, *v2 = v1 + H, *v3 = v2 + H;
                    int64_t nj = j1 - j0;
                    /* each gate over the thread's units as an array: its pre-activation, clipped,
                     * then the activation on the array (16 or 8 lanes for Sigmoid and Tanh) */
                    if (kind == RK_RNN) {
                        for (int64_t j = 0; j < nj; j++) v0[j] = rnn_clip(gx[j] + gr[j], clip);
                        rnn_apply_array(fa, v0, nj);
                        memcpy(hn, v0, sizeof(float) * (size_t)nj);
                    } else if (kind == RK_GRU) {
                        for (int64_t j = 0; j < nj; j++) v0[j] = rnn_clip(gx[j] + gr[j], clip); /* z */
                        rnn_apply_array(fa, v0, nj);
                        if (lbr) {
                            for (int64_t j = 0; j < nj; j++) v1[j] = rnn_clip(gx[H + j] + gr[H + j], clip); /* r */
                            rnn_apply_array(fa, v1, nj);
                            for (int64_t j = 0; j < nj; j++) v2[j] = rnn_clip(gx[2 * H + j] + v1[j] * gr[2 * H + j], clip);
                        } else {
                            for (int64_t j = 0; j < nj; j++) v2[j] = rnn_clip(gx[2 * H + j] + gr[2 * H + j], clip);
                        }
                        rnn_apply_array(ga, v2, nj);
                        for (int64_t j = 0; j < nj; j++) hn[j] = (1.0f - v0[j]) * v2[j] + v0[j] * hc[j];
                    } else {
                        const float *pi = pd ? pd + j0 : NULL, *po = pd ? pd + H + j0 : NULL, *pf = pd ? pd + 2 * H + j0 : NULL;
                        for (int64_t j = 0; j < nj; j++) v0[j] = rnn_clip(gx[j] + gr[j] + (pi ? pi[j] * cc[j] : 0.0f), clip);
                        rnn_apply_array(fa, v0, nj); /* i */
                        if (input_forget) {
                            for (int64_t j = 0; j < nj; j++) v1[j] = 1.0f - v0[j];
                        } else {
                            for (int64_t j = 0; j < nj; j++)
                                v1[j] = rnn_clip(gx[2 * H + j] + gr[2 * H + j] + (pf ? pf[j] * cc[j] : 0.0f), clip);
                            rnn_apply_array(fa, v1, nj); /* f */
                        }
                        for (int64_t j = 0; j < nj; j++) v2[j] = rnn_clip(gx[3 * H + j] + gr[3 * H + j], clip);
                        rnn_apply_array(ga, v2, nj); /* c */
                        for (int64_t j = 0; j < nj; j++) cc[j] = v1[j] * cc[j] + v0[j] * v2[j];
                        for (int64_t j = 0; j < nj; j++) v1[j] = rnn_clip(gx[H + j] + gr[H + j] + (po ? po[j] * cc[j] : 0.0f), clip);
                        rnn_apply_array(fa, v1, nj); /* o */
                        memcpy(v3, cc, sizeof(float) * (size_t)nj);
                        rnn_apply_array(ha, v3, nj);
                        for (int64_t j = 0; j < nj; j++) hn[j] = v1[j] * v3[j];
                    }
                    if (y)
                        for (int64_t j = 0; j < nj; j++) {
                            int64_t yi = layout ? ((bb * S + t) * dirs + d) * H + j0 + j : ((t * dirs + d) * Bt + bb) * H + j0 + j;
                            y[yi] = hn[j];
                        }
                }
#pragma omp barrier
            }
        }
        const float *hfin = hbuf[fin];
        for (int64_t bb = 0; bb < Bt; bb++)
            for (int64_t j = 0; j < H; j++) {
                int64_t hi = layout ? (bb * dirs + d) * H + j : ((int64_t)d * Bt + bb) * H + j;
                if (yh) yh[hi] = hfin[bb * H + j];
                if (yc) yc[hi] = cs[bb * H + j];
            }
    }
done:
    if (st) {
        f32_out_free(yv, y);
        f32_out_free(yhv, yh);
        f32_out_free(ycv, yc);
    } else {
        f32_out_done(yv, y);
        f32_out_done(yhv, yh);
        f32_out_done(ycv, yc);
    }
    free(xo), free(wo), free(ro), free(bo), free(h0o), free(c0o), free(po);
    free(xw), free(hs), free(cs), free(rh), free(rec), free(sl);
    free(xrow), free(xwrow), free(hrow), free(hrow2), free(hs2), free(scr), free(wt), free(rt), free(rhrow), free(recrow);
    return st;
}

/* FLOPs = dirs * S * batch * (2*G*H*(I + H) + 2*G*H + E*H): the input and recurrent projections
 * (FMA = 2) of the G gates and their two bias adds, then per hidden unit E operations after the
 * projections: RNN 1 (the activation); GRU 8 (3 activations, the reset product, 1 - z, two
 * products and a sum); LSTM 12 (4 gate activations, the cell update's 2 mul + 1 add, h's
 * activation and the output product, 3 more for the gate sums) + 6 when P is given (3 peephole
 * FMAs). Bytes: every input read once (weights once, not per step), every output written once. */
static void cost_recurrent(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    enum rnn_kind kind = rnn_kind_of(n);
    const fa_tensor *x = fa_graph_in(g, n, 0), *r = fa_graph_in(g, n, 2);
    if (!x || !r || x->rank != 3 || r->rank != 3 || fa_tensor_numel(x) < 0) return;
    int rev;
    int dirs = rnn_dirs(n, &rev);
    if (dirs < 0) return;
    int64_t layout = node_opset(n, 14) >= 14 ? fa_node_attr_int(n, "layout", 0) : 0;
    uint64_t S = (uint64_t)(layout ? x->dims[1] : x->dims[0]), Bt = (uint64_t)(layout ? x->dims[0] : x->dims[1]);
    uint64_t I = (uint64_t)x->dims[2], H = (uint64_t)r->dims[2], G = (uint64_t)rnn_gates(kind);
    uint64_t E = kind == RK_RNN ? 1 : kind == RK_GRU ? 8 : 12 + (fa_graph_in(g, n, 7) ? 6 : 0);
    uint64_t per = fa_u64_add_sat(fa_u64_mul_sat(2 * G * H, I + H), fa_u64_mul_sat(2 * G + E, H));
    out->flops = fa_u64_mul_sat(fa_u64_mul_sat((uint64_t)dirs * S, Bt), per);
}

/* ------------------------------------------------------------------------------------------ */

/* Attributes each op reads (fa_attr_spec; ONNX operator spec, every opset). The normalizations
 * compute their statistics in float32: stash_type is accepted only at its default (1, FLOAT). */
static const fa_attr_spec a_softmax[] = {{"axis", FA_ATTR_INT}, {0}};
static const fa_attr_spec a_norm[] = {{"axis", FA_ATTR_INT}, {"epsilon", FA_ATTR_FLOAT},
                                      {"stash_type", FA_ATTR_INT, "1"}, {0}};
static const fa_attr_spec a_groupnorm[] = {{"num_groups", FA_ATTR_INT}, {"epsilon", FA_ATTR_FLOAT},
                                           {"stash_type", FA_ATTR_INT, "1"}, {0}};
static const fa_attr_spec a_swiglu[] = {{"alpha", FA_ATTR_FLOAT}, {0}};
/* Attention: the softmax runs in float32, at least the precision of FLOAT, FLOAT16 and
 * BFLOAT16 (softmax_precision 1, 10, 16); DOUBLE (11) is refused. */
static const fa_attr_spec a_attention[] = {
    {"is_causal", FA_ATTR_INT, "0|1"}, {"kv_num_heads", FA_ATTR_INT}, {"q_num_heads", FA_ATTR_INT},
    {"qk_matmul_output_mode", FA_ATTR_INT, "0..3"}, {"scale", FA_ATTR_FLOAT}, {"softcap", FA_ATTR_FLOAT},
    {"softmax_precision", FA_ATTR_INT, "1|10|16"}, {"left_window_size", FA_ATTR_INT, "-1.."},
    {"right_window_size", FA_ATTR_INT, "-1.."}, {0}};
static const fa_attr_spec a_rope[] = {{"interleaved", FA_ATTR_INT, "0|1"}, {"num_heads", FA_ATTR_INT},
                                      {"rotary_embedding_dim", FA_ATTR_INT}, {0}};
static const fa_attr_spec a_lstm[] = {
    {"activation_alpha", FA_ATTR_FLOATS}, {"activation_beta", FA_ATTR_FLOATS}, {"activations", FA_ATTR_STRINGS},
    {"clip", FA_ATTR_FLOAT}, {"direction", FA_ATTR_STRING, "forward|reverse|bidirectional"},
    {"hidden_size", FA_ATTR_INT}, {"input_forget", FA_ATTR_INT, "0|1"}, {"layout", FA_ATTR_INT, "0|1"},
    {"output_sequence", FA_ATTR_INT, "0|1", 0, 6}, {0}};
static const fa_attr_spec a_gru[] = {
    {"activation_alpha", FA_ATTR_FLOATS}, {"activation_beta", FA_ATTR_FLOATS}, {"activations", FA_ATTR_STRINGS},
    {"clip", FA_ATTR_FLOAT}, {"direction", FA_ATTR_STRING, "forward|reverse|bidirectional"},
    {"hidden_size", FA_ATTR_INT}, {"layout", FA_ATTR_INT, "0|1"}, {"linear_before_reset", FA_ATTR_INT},
    {"output_sequence", FA_ATTR_INT, "0|1", 0, 6}, {0}};
static const fa_attr_spec a_rnn[] = {
    {"activation_alpha", FA_ATTR_FLOATS}, {"activation_beta", FA_ATTR_FLOATS}, {"activations", FA_ATTR_STRINGS},
    {"clip", FA_ATTR_FLOAT}, {"direction", FA_ATTR_STRING, "forward|reverse|bidirectional"},
    {"hidden_size", FA_ATTR_INT}, {"layout", FA_ATTR_INT, "0|1"},
    {"output_sequence", FA_ATTR_INT, "0|1", 0, 6}, {0}};

const fa_op fa_ops_extra[] = {
    {.name = "Softmax", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_softmax, .cost = cost_softmax, .kernel = kernel_softmax,
     .doc = "FLOPs 5*N; bytes in+out. opset<13: 2-D coercion at axis (default 1); >=13: one axis (default -1)",
     .attrs = a_softmax, .reduce = FA_REDUCE_SOFTMAX},
    {.name = "LogSoftmax", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_softmax, .cost = cost_softmax, .kernel = kernel_logsoftmax,
     .doc = "FLOPs 5*N; bytes in+out. opset<13: 2-D coercion at axis (default 1); >=13: one axis (default -1)",
     .attrs = a_softmax, .reduce = FA_REDUCE_LOG_SOFTMAX},
    {.name = "Hardmax", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_softmax, .cost = cost_hardmax, .kernel = kernel_hardmax,
     .doc = "FLOPs N compares; bytes in+out. opset<13: 2-D coercion at axis (default 1); >=13: one axis (default -1)",
     .attrs = a_softmax},
    {.name = "LayerNormalization", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 3,
     .infer = infer_layernorm, .cost = cost_layernorm, .kernel = kernel_layernorm,
     .doc = "FLOPs (6+[B])*N + 3*rows; bytes X+Scale+B in, Y(+Mean+InvStdDev) out",
     .attrs = a_norm, .reduce = FA_REDUCE_LAYER_NORM},
    {.name = "RMSNormalization", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_rmsnorm, .cost = cost_rmsnorm, .kernel = kernel_rmsnorm,
     .doc = "FLOPs 4*N + 3*rows; bytes X+scale in, Y out",
     .attrs = a_norm, .reduce = FA_REDUCE_RMS_NORM},
    {.name = "GroupNormalization", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_groupnorm, .cost = cost_groupnorm, .kernel = kernel_groupnorm,
     .doc = "FLOPs 7*N + 3*batch*groups; bytes X+scale+bias in, Y out; scale [G] opset 18, [C] opset 21",
     .attrs = a_groupnorm},
    {.name = "SwiGLU", .domain = "", .pattern = FA_PATTERN_BROADCAST,
     .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_swiglu, .cost = cost_swiglu, .kernel = kernel_swiglu,
     .doc = "FLOPs 6*numel(Y); bytes A+B in, Y out; Y = A*sigmoid(alpha*A)*B",
     .attrs = a_swiglu},
    {.name = "RotaryEmbedding", .domain = "", .pattern = FA_PATTERN_INJECTIVE,
     .min_inputs = 3, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_rope, .cost = cost_rope, .kernel = kernel_rope,
     .doc = "FLOPs 3*B*S*H*rot; bytes X+cos+sin(+position_ids) in, Y out",
     .attrs = a_rope},
    {.name = "Attention", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 3, .max_inputs = 7, .min_outputs = 1, .max_outputs = 4,
     .infer = infer_attention, .cost = cost_attention, .kernel = kernel_attention,
     .doc = "FLOPs B*Hq*Sq*St*(2D+2Dv+5+mask+3*softcap) + numel(Q); bytes inputs+outputs once",
     .attrs = a_attention, .reduce = FA_REDUCE_ATTENTION},
    {.name = "LSTM", .domain = "", .pattern = FA_PATTERN_OPAQUE,
     .min_inputs = 3, .max_inputs = 8, .min_outputs = 0, .max_outputs = 3,
     .infer = infer_recurrent, .cost = cost_recurrent, .kernel = kernel_recurrent,
     .doc = "FLOPs dirs*S*batch*(8H(I+H)+20H+6H*[P]); bytes inputs+outputs once",
     .attrs = a_lstm},
    {.name = "GRU", .domain = "", .pattern = FA_PATTERN_OPAQUE,
     .min_inputs = 3, .max_inputs = 6, .min_outputs = 0, .max_outputs = 2,
     .infer = infer_recurrent, .cost = cost_recurrent, .kernel = kernel_recurrent,
     .doc = "FLOPs dirs*S*batch*(6H(I+H)+14H); bytes inputs+outputs once",
     .attrs = a_gru},
    {.name = "RNN", .domain = "", .pattern = FA_PATTERN_OPAQUE,
     .min_inputs = 3, .max_inputs = 6, .min_outputs = 0, .max_outputs = 2,
     .infer = infer_recurrent, .cost = cost_recurrent, .kernel = kernel_recurrent,
     .doc = "FLOPs dirs*S*batch*(2H(I+H)+3H); bytes inputs+outputs once",
     .attrs = a_rnn},
    {0},
};
