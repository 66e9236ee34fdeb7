/* graph/ops_nn — convolution, matrix product, pooling, normalization, resize and quantization
 * ops: shape inference, cost formulas and reference CPU kernels (the numeric oracle).
 * Semantics follow the ONNX operator spec (onnx/docs/Operators.md) and its reference
 * implementation (onnx/reference/ops); formulas per op are in the comments and docs/ops-nn.md. */
#include "ops-impl.h"
#include "vmath.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SP 3 /* spatial rank the kernels handle (1-D, 2-D, 3-D) */

static int opset_of(const fa_node *n) { return n->opset > 0 ? n->opset : 22; }
static int nthreads(int t) { return t > 0 ? t : 1; }

static bool is_float_type(fa_dtype t)
{
    return t == FA_DTYPE_FLOAT || t == FA_DTYPE_DOUBLE || t == FA_DTYPE_FLOAT16 ||
           t == FA_DTYPE_BFLOAT16;
}

static int64_t prod64(const int64_t *d, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= d[i];
    return p;
}

/* floor(a / b) and ceil(a / b) for b > 0 and any sign of a. */
static int64_t floordiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static int64_t ceildiv(int64_t a, int64_t b) { return -floordiv(-a, b); }

/* ---- float views: kernels compute in float; other dtypes are converted on the way in/out ---- */

/* Input as float: the value's own buffer when it is float, else a malloc'd copy in *tmp
 * (NULL on OOM with *tmp NULL). */
static const float *in_f32(const fa_value *v, float **tmp)
{
    *tmp = NULL;
    if (!v->data) return NULL;
    if (v->dtype == FA_DTYPE_FLOAT) return v->data;
    int64_t ne = fa_value_numel(v);
    float *b = malloc(sizeof(float) * (size_t)(ne > 0 ? ne : 1));
    if (!b) return NULL;
    for (int64_t i = 0; i < ne; i++) b[i] = (float)fa_load_as_double(v->data, v->dtype, i);
    *tmp = b;
    return b;
}

/* Output as float: the value's buffer or a malloc'd scratch (written back by out_f32_done). */
static float *out_f32(fa_value *v, float **tmp)
{
    *tmp = NULL;
    if (v->dtype == FA_DTYPE_FLOAT) return v->data;
    int64_t ne = fa_value_numel(v);
    float *b = calloc((size_t)(ne > 0 ? ne : 1), sizeof(float));
    *tmp = b;
    return b;
}

static void out_f32_done(fa_value *v, float *tmp)
{
    if (!tmp) return;
    int64_t ne = fa_value_numel(v);
    bool integral = !is_float_type(v->dtype);
    for (int64_t i = 0; i < ne; i++)
        fa_store_from_double(v->data, v->dtype, i, integral ? nearbyint(tmp[i]) : tmp[i]);
    free(tmp);
}

static fa_status oom(fa_ctx *ctx, const fa_node *n)
{
    return fa_ctx_error(ctx, FA_ERR_NOMEM, "node '%s' (%s): out of memory in kernel", n->name,
                        n->op_type);
}

static fa_status need_float(fa_ctx *ctx, const fa_node *n, const fa_tensor *t, int idx)
{
    if (t->dtype != FA_DTYPE_UNDEFINED && !is_float_type(t->dtype))
        return fa_node_error(ctx, n, "input %d '%s' must be a floating-point tensor, is %s", idx,
                             t->name, fa_dtype_name(t->dtype));
    return FA_OK;
}

/* ---- window geometry shared by Conv, ConvTranspose and the pools ---- */

typedef struct win_geom {
    int sr;                                 /* spatial rank */
    int64_t in[MAX_SP], out[MAX_SP];        /* spatial extents */
    int64_t k[MAX_SP], s[MAX_SP], d[MAX_SP]; /* kernel, stride, dilation */
    int64_t pb[MAX_SP], pe[MAX_SP];         /* pads at begin / end */
} win_geom;

/* Read strides/dilations/pads (and validate their lengths) into g; k and in must be set. */
static fa_status geom_attrs(fa_ctx *ctx, const fa_node *n, win_geom *g)
{
    const int64_t *v;
    int c;
    for (int i = 0; i < g->sr; i++) g->s[i] = g->d[i] = 1, g->pb[i] = g->pe[i] = 0;
    if ((c = fa_node_attr_ints(n, "strides", &v)) > 0) {
        if (c != g->sr) return fa_node_error(ctx, n, "strides has %d values, expected %d", c, g->sr);
        for (int i = 0; i < c; i++) {
            if (v[i] < 1) return fa_node_error(ctx, n, "strides[%d] = %lld must be >= 1", i, (long long)v[i]);
            g->s[i] = v[i];
        }
    }
    if ((c = fa_node_attr_ints(n, "dilations", &v)) > 0) {
        if (c != g->sr) return fa_node_error(ctx, n, "dilations has %d values, expected %d", c, g->sr);
        for (int i = 0; i < c; i++) {
            if (v[i] < 1) return fa_node_error(ctx, n, "dilations[%d] = %lld must be >= 1", i, (long long)v[i]);
            g->d[i] = v[i];
        }
    }
    if ((c = fa_node_attr_ints(n, "pads", &v)) > 0) {
        if (c != 2 * g->sr) return fa_node_error(ctx, n, "pads has %d values, expected %d", c, 2 * g->sr);
        for (int i = 0; i < g->sr; i++) {
            if (v[i] < 0 || v[i + g->sr] < 0) return fa_node_error(ctx, n, "negative pads are not allowed");
            g->pb[i] = v[i];
            g->pe[i] = v[i + g->sr];
        }
    }
    int64_t taps = 1;
    for (int i = 0; i < g->sr; i++) {
        if (g->k[i] < 1) return fa_node_error(ctx, n, "kernel extent %d is %lld, must be >= 1", i, (long long)g->k[i]);
        /* every value a window is made of is within what a tensor may span (graph.h), so the
         * geometry below needs checked arithmetic only where two of them multiply */
        static const char *const field[] = {"kernel extent", "strides", "dilations", "pads (begin)", "pads (end)"};
        const int64_t v[] = {g->k[i], g->s[i], g->d[i], g->pb[i], g->pe[i]};
        for (int f = 0; f < 5; f++)
            if (v[f] > FA_MAX_TENSOR_ELEMENTS)
                return fa_node_error(ctx, n, "%s[%d] = %lld is over the 2^48 a tensor may span", field[f], i, (long long)v[f]);
        if (!fa_i64_mul(taps, g->k[i], &taps) || taps > FA_MAX_TENSOR_ELEMENTS)
            return fa_node_error(ctx, n, "the kernel's extents multiply to more than 2^48 taps");
    }
    return FA_OK;
}

/* The dilated kernel extent (k - 1) * d + 1 of spatial axis i, checked. */
static fa_status dilated_extent(fa_ctx *ctx, const fa_node *n, const win_geom *g, int i, int64_t *ek)
{
    char what[64];
    snprintf(what, sizeof what, "(kernel extent[%d] - 1) x dilations[%d]", i, i);
    fa_status st = fa_dim_mul(ctx, n, what, g->k[i] - 1, g->d[i], ek);
    return st ? st : fa_dim_add(ctx, n, what, *ek, 1, ek);
}

/* Output extent of a forward window op (Conv, pools). ONNX Conv/MaxPool/AveragePool spec:
 *   NOTSET: floor((in + pb + pe - ((k-1)*d+1)) / s) + 1  (ceil with ceil_mode, dropping a last
 *           window that would start in the end padding, as onnx/reference/ops/_op_common_pool)
 *   SAME_UPPER/SAME_LOWER: ceil(in / s), total pad = max(0, (out-1)*s + (k-1)*d+1 - in),
 *           the odd pixel at the end (UPPER) or the beginning (LOWER)
 *   VALID:  ceil((in - ((k-1)*d+1) + 1) / s), no padding.
 * Unknown (-1) input extents give -1. */
static fa_status geom_forward(fa_ctx *ctx, const fa_node *n, bool ceil_mode, win_geom *g)
{
    fa_status st = geom_attrs(ctx, n, g);
    if (st) return st;
    const char *ap = fa_node_attr_string(n, "auto_pad", "NOTSET");
    bool same_u = strcmp(ap, "SAME_UPPER") == 0, same_l = strcmp(ap, "SAME_LOWER") == 0;
    bool valid = strcmp(ap, "VALID") == 0;
    if (!same_u && !same_l && !valid && strcmp(ap, "NOTSET") != 0 && *ap)
        return fa_node_error(ctx, n, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);
    for (int i = 0; i < g->sr; i++) {
        int64_t ek, in = g->in[i];
        if ((st = dilated_extent(ctx, n, g, i, &ek))) return st;
        if (in < 0) { g->out[i] = -1; continue; }
        /* in, strides and pads are at most 2^48 (geom_attrs), ek any int64: */
        if (same_u || same_l) {
            g->out[i] = ceildiv(in, g->s[i]);
            int64_t tot = (g->out[i] - 1) * g->s[i] - in; /* out = ceil(in / s): (out - 1) s < in */
            if ((st = fa_dim_add(ctx, n, "auto_pad total padding", tot, ek, &tot))) return st;
            if (tot < 0) tot = 0;
            g->pb[i] = same_u ? tot / 2 : tot - tot / 2;
            g->pe[i] = tot - g->pb[i];
        } else if (valid) {
            g->pb[i] = g->pe[i] = 0;
            g->out[i] = in >= ek ? (in - ek) / g->s[i] + 1 : 0;
        } else {
            int64_t span = in + g->pb[i] + g->pe[i] - ek; /* <= 3 x 2^48 minus a positive int64 */
            if (span < 0) g->out[i] = 0;
            else if (ceil_mode) {
                g->out[i] = ceildiv(span, g->s[i]) + 1;
                if ((g->out[i] - 1) * g->s[i] >= in + g->pb[i]) g->out[i]--; /* <= span + s */
            } else g->out[i] = span / g->s[i] + 1;
        }
        if (g->out[i] < 1)
            return fa_node_error(ctx, n, "spatial dim %d: input extent %lld is smaller than the kernel extent %lld (dilated) plus padding",
                                 i, (long long)in, (long long)ek);
    }
    return FA_OK;
}

/* Range [lo, hi) of positions o in [0, n_o) such that 0 <= o*s - pb + koff < n_in. */
static void valid_range(int64_t n_o, int64_t s, int64_t pb, int64_t koff, int64_t n_in, int64_t *lo, int64_t *hi)
{
    int64_t a = ceildiv(pb - koff, s), b = floordiv(n_in - 1 + pb - koff, s) + 1;
    if (a < 0) a = 0;
    if (b > n_o) b = n_o;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

/* Pad a geometry of rank sr < 3 to 3-D with unit leading dims (kernels loop in 3-D). */
static void geom_pad3(const win_geom *g, win_geom *o)
{
    int off = MAX_SP - g->sr;
    for (int i = 0; i < MAX_SP; i++) {
        int j = i - off;
        bool r = j >= 0;
        o->in[i] = r ? g->in[j] : 1;
        o->out[i] = r ? g->out[j] : 1;
        o->k[i] = r ? g->k[j] : 1;
        o->s[i] = r ? g->s[j] : 1;
        o->d[i] = r ? g->d[j] : 1;
        o->pb[i] = r ? g->pb[j] : 0;
        o->pe[i] = r ? g->pe[j] : 0;
    }
    o->sr = MAX_SP;
}

static void fmt_dims(char *buf, size_t cap, int r, const int64_t *d)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < r && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "x" : "", (long long)d[i]);
}

/* ======================================= Conv ======================================= */

/* Shared Conv geometry from X/W shapes: validates channels/group, fills g. */
static fa_status conv_geom(fa_ctx *ctx, const fa_node *n, int xr, const int64_t *xd, int wr,
                           const int64_t *wd, win_geom *g)
{
    if (xr < 3) return fa_node_error(ctx, n, "input X must have rank >= 3 (N, C, spatial...), has rank %d", xr);
    if (wr != xr) return fa_node_error(ctx, n, "weight W has rank %d, X has rank %d", wr, xr);
    if (xr - 2 > MAX_SP) return fa_node_unsupported(ctx, n, "%d spatial dims (at most %d supported)", xr - 2, MAX_SP);
    int64_t group = fa_node_attr_int(n, "group", 1);
    if (group < 1) return fa_node_error(ctx, n, "group %lld must be >= 1", (long long)group);
    int64_t C = xd[1], M = wd[0];
    if (M >= 0 && M % group) return fa_node_error(ctx, n, "group %lld does not divide the %lld output channels", (long long)group, (long long)M);
    if (C >= 0 && C % group) return fa_node_error(ctx, n, "group %lld does not divide the %lld input channels", (long long)group, (long long)C);
    int64_t wc;
    if (C >= 0 && wd[1] >= 0 && (!fa_i64_mul(wd[1], group, &wc) || wc != C))
        return fa_node_error(ctx, n, "channel mismatch: X has %lld channels, W expects %lld x group %lld",
                             (long long)C, (long long)wd[1], (long long)group);
    g->sr = xr - 2;
    const int64_t *ks;
    int kc = fa_node_attr_ints(n, "kernel_shape", &ks);
    if (kc > 0 && kc != g->sr) return fa_node_error(ctx, n, "kernel_shape has %d values, expected %d", kc, g->sr);
    for (int i = 0; i < g->sr; i++) {
        g->in[i] = xd[i + 2];
        g->k[i] = wd[i + 2];
        if (kc > 0 && wd[i + 2] >= 0 && ks[i] != wd[i + 2])
            return fa_node_error(ctx, n, "kernel_shape[%d] = %lld but W has %lld", i, (long long)ks[i], (long long)wd[i + 2]);
        if (kc > 0) g->k[i] = ks[i];
    }
    return geom_forward(ctx, n, false, g);
}

/* Conv: Y[N, M, out...] with out per geom_forward. */
static fa_status conv_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0), *w = x ? fa_req_input(ctx, g, n, 1) : NULL;
    if (!x || !w) return fa_ctx_status(ctx);
    fa_status st;
    if ((st = need_float(ctx, n, x, 0)) || (st = need_float(ctx, n, w, 1))) return st;
    win_geom gm;
    if ((st = conv_geom(ctx, n, x->rank, x->dims, w->rank, w->dims, &gm))) return st;
    fa_tensor *b = fa_graph_in(g, n, 2);
    if (b && b->rank >= 0 && (b->rank != 1 || (b->dims[0] >= 0 && w->dims[0] >= 0 && b->dims[0] != w->dims[0])))
        return fa_node_error(ctx, n, "bias B must be 1-D with %lld values", (long long)w->dims[0]);
    int64_t od[FA_MAX_RANK] = {x->dims[0], w->dims[0]};
    for (int i = 0; i < gm.sr; i++) od[i + 2] = gm.out[i];
    fa_set_out(g, n, 0, x->dtype, x->rank, od);
    return FA_OK;
}

/* Conv FLOPs = 2 * N * M * (C/group) * prod over spatial dims i of V_i
 *            + N * M * prod(out spatial) when a bias is present,
 * V_i = the (output position, kernel tap) pairs of dim i whose input position lies inside the
 * input, not in its padding: 0 <= o*s_i - pad_begin_i + k*d_i < in_i (valid_range). Taps on the
 * padding multiply zeros, and the direct convolutions (oneDNN's, ours) skip them: a 3 x 3
 * convolution dilated by 12-36 on a 10 x 10 map (DeepLabV3's ASPP) has only its centre tap
 * inside, and counting all nine put it at 29x the machine's peak. With no padding V_i is
 * out_i * k_i, the textbook 2 * N * M * prod(out) * (C/group) * prod(kernel), which is also the
 * count where the geometry is unknown or a kernel extent over 65,536 taps.
 * Bytes: X + W (+ B) read once, Y written once. */
static void conv_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *x = fa_graph_in(g, n, 0), *w = fa_graph_in(g, n, 1), *y = fa_graph_out(g, n, 0);
    if (!x || !w || !y || fa_tensor_numel(y) < 0 || fa_tensor_numel(w) < 0) return;
    uint64_t ny = (uint64_t)fa_tensor_numel(y);
    uint64_t per = (uint64_t)(w->rank >= 2 ? fa_tensor_numel(w) / (w->dims[0] ? w->dims[0] : 1) : 0);
    uint64_t macs = fa_u64_mul_sat(ny, per);
    win_geom gm;
    if (x->rank >= 3 && w->rank == x->rank && x->dims[0] >= 0 && w->dims[0] >= 0 && w->dims[1] >= 0 &&
        conv_geom(NULL, n, x->rank, x->dims, w->rank, w->dims, &gm) == FA_OK) {
        uint64_t pairs = 1;
        bool known = true;
        for (int i = 0; i < gm.sr && known; i++) {
            known = gm.in[i] >= 0 && gm.out[i] >= 0 && gm.k[i] >= 0 && gm.k[i] <= 65536;
            uint64_t v = 0;
            for (int64_t k = 0; known && k < gm.k[i]; k++) {
                int64_t lo, hi;
                valid_range(gm.out[i], gm.s[i], gm.pb[i], k * gm.d[i], gm.in[i], &lo, &hi);
                v += (uint64_t)(hi - lo);
            }
            pairs = fa_u64_mul_sat(pairs, v);
        }
        /* N * M * (C/group) * prod V_i */
        if (known) macs = fa_u64_mul_sat(fa_u64_mul_sat((uint64_t)x->dims[0], (uint64_t)w->dims[0]),
                                         fa_u64_mul_sat((uint64_t)w->dims[1], pairs));
    }
    out->flops = fa_u64_add_sat(fa_u64_mul_sat(2, macs), fa_graph_in(g, n, 2) ? ny : 0);
}

/* Direct convolution over a 3-D-padded geometry g: Y[N, M, out] = sum over the group's input
 * channels and the kernel taps of X * W (+ B[m]). Per output plane (n, m) the taps of one input
 * channel accumulate in a float plane (an inner loop the compiler vectorizes) when the kernel
 * has 2..max_part_taps taps, the channel sums in a double plane, so rounding grows with
 * prod(kernel), not C (and 8-bit integer products stay exact when max_part_taps <= 512).
 * Writes float Yf or double Yd (one non-NULL). Parallel over planes. Returns false on OOM. */
static bool conv_run(const win_geom *g, int64_t N, int64_t C, int64_t M, int64_t group,
                     const float *X, const float *W, const float *B, float *Yf, double *Yd,
                     int64_t max_part_taps, int threads)
{
    int64_t Cg = C / group, Mg = M / group;
    int64_t insp = g->in[0] * g->in[1] * g->in[2], outsp = g->out[0] * g->out[1] * g->out[2];
    int64_t ksp = g->k[0] * g->k[1] * g->k[2];
    int failed = 0;
    bool use_part = ksp > 1 && ksp <= max_part_taps;
#pragma omp parallel for num_threads(nthreads(threads)) schedule(dynamic)
    for (int64_t nm = 0; nm < N * M; nm++) {
        int64_t b = nm / M, m = nm % M, grp = m / Mg;
        double *acc = malloc(sizeof(double) * (size_t)(outsp ? outsp : 1));
        /* taps of one input channel sum in a float plane (vectorizable), channels in double */
        float *part = use_part ? malloc(sizeof(float) * (size_t)(outsp ? outsp : 1)) : NULL;
        if (!acc || (use_part && !part)) {
            free(acc);
            free(part);
#pragma omp atomic write
            failed = 1;
            continue;
        }
        double bias = B ? B[m] : 0.0;
        for (int64_t i = 0; i < outsp; i++) acc[i] = bias;
        for (int64_t c = 0; c < Cg; c++) {
            const float *xp = X + (b * C + grp * Cg + c) * insp;
            const float *wp = W + (m * Cg + c) * ksp;
            if (part) memset(part, 0, sizeof(float) * (size_t)outsp);
            for (int64_t kd = 0; kd < g->k[0]; kd++) {
                int64_t d0, d1;
                valid_range(g->out[0], g->s[0], g->pb[0], kd * g->d[0], g->in[0], &d0, &d1);
                for (int64_t kh = 0; kh < g->k[1]; kh++) {
                    int64_t h0, h1;
                    valid_range(g->out[1], g->s[1], g->pb[1], kh * g->d[1], g->in[1], &h0, &h1);
                    for (int64_t kw = 0; kw < g->k[2]; kw++) {
                        int64_t w0, w1;
                        valid_range(g->out[2], g->s[2], g->pb[2], kw * g->d[2], g->in[2], &w0, &w1);
                        double wv = wp[(kd * g->k[1] + kh) * g->k[2] + kw];
                        for (int64_t od = d0; od < d1; od++) {
                            int64_t id = od * g->s[0] - g->pb[0] + kd * g->d[0];
                            for (int64_t oh = h0; oh < h1; oh++) {
                                int64_t ih = oh * g->s[1] - g->pb[1] + kh * g->d[1];
                                const float *xr = xp + (id * g->in[1] + ih) * g->in[2] - g->pb[2] + kw * g->d[2];
                                int64_t o = (od * g->out[1] + oh) * g->out[2], sw = g->s[2];
                                if (!part) { /* 1-tap kernel: straight into the double plane */
                                    double *ar = acc + o;
                                    for (int64_t ow = w0; ow < w1; ow++) ar[ow] += wv * xr[ow * sw];
                                } else if (sw == 1) {
                                    float *ar = part + o, wf = (float)wv;
#pragma omp simd
                                    for (int64_t ow = w0; ow < w1; ow++) ar[ow] += wf * xr[ow];
                                } else {
                                    float *ar = part + o, wf = (float)wv;
                                    for (int64_t ow = w0; ow < w1; ow++) ar[ow] += wf * xr[ow * sw];
                                }
                            }
                        }
                    }
                }
            }
            if (part)
                for (int64_t i = 0; i < outsp; i++) acc[i] += part[i];
        }
        if (Yd) memcpy(Yd + nm * outsp, acc, sizeof(double) * (size_t)outsp);
        else
            for (int64_t i = 0; i < outsp; i++) Yf[nm * outsp + i] = (float)acc[i];
        free(acc);
        free(part);
    }
    return !failed;
}

/* Reference Conv (conv_run). */
static fa_status conv_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                             fa_value *out, int n_out, int threads)
{
    win_geom g0, g;
    fa_status st = conv_geom(ctx, n, in[0].rank, in[0].dims, in[1].rank, in[1].dims, &g0);
    if (st) return st;
    geom_pad3(&g0, &g);
    float *tx, *tw, *tb, *ty;
    const float *X = in_f32(&in[0], &tx), *W = in_f32(&in[1], &tw);
    const float *B = (n_in > 2 && in[2].data) ? in_f32(&in[2], &tb) : (tb = NULL, NULL);
    float *Y = out_f32(&out[0], &ty);
    if (!X || !W || !Y || (n_in > 2 && in[2].data && !B)) {
        free(tx); free(tw); free(tb); free(ty);
        return oom(ctx, n);
    }
    int64_t N = in[0].dims[0], C = in[0].dims[1], M = in[1].dims[0];
    bool ok = conv_run(&g, N, C, M, fa_node_attr_int(n, "group", 1), X, W, B, Y, NULL, INT64_MAX, threads);
    free(tx); free(tw); free(tb);
    if (!ok) { free(ty); return oom(ctx, n); }
    out_f32_done(&out[0], ty);
    return FA_OK;
}

/* =================================== ConvTranspose =================================== */

/* ConvTranspose geometry (ONNX ConvTranspose spec, opset 11+):
 *   out = s*(in-1) + output_padding + ((k-1)*d+1) - pb - pe
 * output_shape given (spatial dims, or N,C,spatial): total = s*(in-1) + output_padding
 *   + ((k-1)*d+1) - output_shape; SAME_UPPER: pb = total/2, else pb = total - total/2.
 * auto_pad SAME_*: output_shape = in*s, same split. VALID: pads 0. */
static fa_status convt_geom(fa_ctx *ctx, const fa_node *n, int xr, const int64_t *xd, int wr,
                            const int64_t *wd, win_geom *g, int64_t *M_out)
{
    if (xr < 3) return fa_node_error(ctx, n, "input X must have rank >= 3 (N, C, spatial...), has rank %d", xr);
    if (wr != xr) return fa_node_error(ctx, n, "weight W has rank %d, X has rank %d", wr, xr);
    if (xr - 2 > MAX_SP) return fa_node_unsupported(ctx, n, "%d spatial dims (at most %d supported)", xr - 2, MAX_SP);
    int64_t group = fa_node_attr_int(n, "group", 1);
    if (group < 1) return fa_node_error(ctx, n, "group %lld must be >= 1", (long long)group);
    int64_t C = xd[1];
    if (C >= 0 && C % group) return fa_node_error(ctx, n, "group %lld does not divide the %lld input channels", (long long)group, (long long)C);
    if (C >= 0 && wd[0] >= 0 && wd[0] != C)
        return fa_node_error(ctx, n, "channel mismatch: X has %lld channels, W (layout [C_in, C_out/group, k...]) has %lld",
                             (long long)C, (long long)wd[0]);
    *M_out = -1;
    if (wd[1] >= 0) {
        fa_status e = fa_dim_mul(ctx, n, "W's output channels per group x group", wd[1], group, M_out);
        if (e) return e;
    }
    g->sr = xr - 2;
    const int64_t *ks, *op, *os;
    int kc = fa_node_attr_ints(n, "kernel_shape", &ks);
    if (kc > 0 && kc != g->sr) return fa_node_error(ctx, n, "kernel_shape has %d values, expected %d", kc, g->sr);
    for (int i = 0; i < g->sr; i++) {
        g->in[i] = xd[i + 2];
        g->k[i] = kc > 0 ? ks[i] : wd[i + 2];
    }
    fa_status st = geom_attrs(ctx, n, g);
    if (st) return st;
    int opc = fa_node_attr_ints(n, "output_padding", &op);
    if (opc > 0 && opc != g->sr) return fa_node_error(ctx, n, "output_padding has %d values, expected %d", opc, g->sr);
    int osc = fa_node_attr_ints(n, "output_shape", &os);
    if (osc > 0 && osc != g->sr && osc != g->sr + 2)
        return fa_node_error(ctx, n, "output_shape has %d values, expected %d", osc, g->sr);
    const char *ap = fa_node_attr_string(n, "auto_pad", "NOTSET");
    bool same_u = strcmp(ap, "SAME_UPPER") == 0, same_l = strcmp(ap, "SAME_LOWER") == 0;
    bool valid = strcmp(ap, "VALID") == 0;
    if (!same_u && !same_l && !valid && strcmp(ap, "NOTSET") != 0 && *ap)
        return fa_node_error(ctx, n, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);
    for (int i = 0; i < g->sr; i++) {
        int64_t opad = opc > 0 ? op[i] : 0, ek, in = g->in[i];
        if ((st = dilated_extent(ctx, n, g, i, &ek))) return st;
        if (opad < 0) return fa_node_error(ctx, n, "output_padding[%d] is negative", i);
        if (opad > FA_MAX_TENSOR_ELEMENTS) return fa_node_error(ctx, n, "output_padding[%d] = %lld is over the 2^48 a tensor may span", i, (long long)opad);
        if (in < 0) { g->out[i] = -1; continue; }
        /* full = strides x (in - 1) + output_padding + ek, each step checked */
        int64_t full;
        char what[64];
        snprintf(what, sizeof what, "strides[%d] x (input extent - 1) + output_padding + kernel", i);
        if ((st = fa_dim_mul(ctx, n, what, g->s[i], in - 1, &full)) ||
            (st = fa_dim_add(ctx, n, what, full, opad, &full)) || (st = fa_dim_add(ctx, n, what, full, ek, &full)))
            return st;
        if (osc > 0 || same_u || same_l) {
            int64_t target = osc > 0 ? os[i + (osc - g->sr)] : 0;
            if (osc <= 0 && (st = fa_dim_mul(ctx, n, "input extent x strides", in, g->s[i], &target))) return st;
            if (target < 0 || target > FA_MAX_TENSOR_ELEMENTS)
                return fa_node_error(ctx, n, "output_shape[%d] = %lld is outside [0, 2^48]", i, (long long)target);
            int64_t tot = full - target;
            if (tot < 0) tot = 0; /* ONNX reference clamps negative total padding the same way */
            g->pb[i] = same_u ? tot / 2 : tot - tot / 2;
            g->pe[i] = tot - g->pb[i];
            g->out[i] = target;
        } else {
            if (valid) g->pb[i] = g->pe[i] = 0;
            g->out[i] = full - g->pb[i] - g->pe[i];
        }
        if (g->out[i] < 1) return fa_node_error(ctx, n, "spatial dim %d: output extent %lld < 1", i, (long long)g->out[i]);
    }
    return FA_OK;
}

static fa_status convt_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0), *w = x ? fa_req_input(ctx, g, n, 1) : NULL;
    if (!x || !w) return fa_ctx_status(ctx);
    fa_status st;
    if ((st = need_float(ctx, n, x, 0)) || (st = need_float(ctx, n, w, 1))) return st;
    win_geom gm;
    int64_t M;
    if ((st = convt_geom(ctx, n, x->rank, x->dims, w->rank, w->dims, &gm, &M))) return st;
    fa_tensor *b = fa_graph_in(g, n, 2);
    if (b && b->rank >= 0 && (b->rank != 1 || (b->dims[0] >= 0 && M >= 0 && b->dims[0] != M)))
        return fa_node_error(ctx, n, "bias B must be 1-D with %lld values", (long long)M);
    int64_t od[FA_MAX_RANK] = {x->dims[0], M};
    for (int i = 0; i < gm.sr; i++) od[i + 2] = gm.out[i];
    fa_set_out(g, n, 0, x->dtype, x->rank, od);
    return FA_OK;
}

/* ConvTranspose FLOPs = 2 * N * C_in * prod(in spatial) * (C_out/group) * prod(kernel)
 *                     + N * C_out * prod(out spatial) when a bias is present
 * (every input pixel scatters one kernel; taps that fall in the cropped padding still count). */
static void convt_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *x = fa_graph_in(g, n, 0), *w = fa_graph_in(g, n, 1), *y = fa_graph_out(g, n, 0);
    if (!x || !w || !y || fa_tensor_numel(x) < 0 || fa_tensor_numel(w) < 0 || fa_tensor_numel(y) < 0) return;
    uint64_t per = (uint64_t)(fa_tensor_numel(w) / (w->dims[0] ? w->dims[0] : 1)); /* (C_out/group)*prod(k) */
    out->flops = fa_u64_add_sat(fa_u64_mul_sat(2 * (uint64_t)fa_tensor_numel(x), per),
                                fa_graph_in(g, n, 2) ? (uint64_t)fa_tensor_numel(y) : 0);
}

/* Reference ConvTranspose: gather form (each output plane (n, m) pulls from the input pixels
 * whose scattered taps land on it), so planes are independent: parallel over (n, m). */
static fa_status convt_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                              fa_value *out, int n_out, int threads)
{
    win_geom g0, g;
    int64_t M;
    fa_status st = convt_geom(ctx, n, in[0].rank, in[0].dims, in[1].rank, in[1].dims, &g0, &M);
    if (st) return st;
    geom_pad3(&g0, &g);
    float *tx, *tw, *tb, *ty;
    const float *X = in_f32(&in[0], &tx), *W = in_f32(&in[1], &tw);
    const float *B = (n_in > 2 && in[2].data) ? in_f32(&in[2], &tb) : (tb = NULL, NULL);
    float *Y = out_f32(&out[0], &ty);
    if (!X || !W || !Y || (n_in > 2 && in[2].data && !B)) {
        free(tx); free(tw); free(tb); free(ty);
        return oom(ctx, n);
    }
    int64_t N = in[0].dims[0], C = in[0].dims[1];
    int64_t group = fa_node_attr_int(n, "group", 1), Cg = C / group, Mg = M / group;
    int64_t insp = g.in[0] * g.in[1] * g.in[2], outsp = g.out[0] * g.out[1] * g.out[2];
    int64_t ksp = g.k[0] * g.k[1] * g.k[2];
    int failed = 0;
#pragma omp parallel for num_threads(nthreads(threads)) schedule(dynamic)
    for (int64_t nm = 0; nm < N * M; nm++) {
        int64_t b = nm / M, m = nm % M, grp = m / Mg, mm = m % Mg;
        double *acc = malloc(sizeof(double) * (size_t)(outsp ? outsp : 1));
        if (!acc) {
#pragma omp atomic write
            failed = 1;
            continue;
        }
        double bias = B ? B[m] : 0.0;
        for (int64_t i = 0; i < outsp; i++) acc[i] = bias;
        for (int64_t c = 0; c < Cg; c++) {
            int64_t ic = grp * Cg + c;
            const float *xp = X + (b * C + ic) * insp;
            const float *wp = W + (ic * Mg + mm) * ksp;
            for (int64_t kd = 0; kd < g.k[0]; kd++) {
                int64_t d0, d1; /* input positions i with 0 <= i*s - pb + k*d < out */
                valid_range(g.in[0], g.s[0], g.pb[0], kd * g.d[0], g.out[0], &d0, &d1);
                for (int64_t kh = 0; kh < g.k[1]; kh++) {
                    int64_t h0, h1;
                    valid_range(g.in[1], g.s[1], g.pb[1], kh * g.d[1], g.out[1], &h0, &h1);
                    for (int64_t kw = 0; kw < g.k[2]; kw++) {
                        int64_t w0, w1;
                        valid_range(g.in[2], g.s[2], g.pb[2], kw * g.d[2], g.out[2], &w0, &w1);
                        double wv = wp[(kd * g.k[1] + kh) * g.k[2] + kw];
                        for (int64_t id = d0; id < d1; id++) {
                            int64_t od = id * g.s[0] - g.pb[0] + kd * g.d[0];
                            for (int64_t ih = h0; ih < h1; ih++) {
                                int64_t oh = ih * g.s[1] - g.pb[1] + kh * g.d[1];
                                const float *xr = xp + (id * g.in[1] + ih) * g.in[2];
                                double *ar = acc + (od * g.out[1] + oh) * g.out[2] - g.pb[2] + kw * g.d[2];
                                int64_t sw = g.s[2];
                                for (int64_t iw = w0; iw < w1; iw++) ar[iw * sw] += wv * xr[iw];
                            }
                        }
                    }
                }
            }
        }
        float *yp = Y + nm * outsp;
        for (int64_t i = 0; i < outsp; i++) yp[i] = (float)acc[i];
        free(acc);
    }
    free(tx); free(tw); free(tb);
    if (failed) { free(ty); return oom(ctx, n); }
    out_f32_done(&out[0], ty);
    return FA_OK;
}

/* ======================================= MatMul ======================================= */

/* numpy matmul shapes: a 1-D A is [1,K] (the 1 dropped from Y), a 1-D B is [K,1] (dropped);
 * batch dims broadcast. Fills M, K, N, the output shape and both batch shapes. */
typedef struct mm_shape {
    int64_t M, K, N;
    int br;                         /* batch rank of Y */
    int64_t bd[FA_MAX_RANK];        /* batch dims of Y */
    int64_t sa[FA_MAX_RANK], sb[FA_MAX_RANK]; /* batch strides, in matrices, 0 on broadcast */
    int yr;
    int64_t yd[FA_MAX_RANK];
} mm_shape;

static fa_status mm_shape_make(fa_ctx *ctx, const fa_node *n, int ar, const int64_t *ad, int brk,
                               const int64_t *bdm, mm_shape *s)
{
    if (ar < 1 || brk < 1) return fa_node_error(ctx, n, "MatMul operands must have rank >= 1 (ranks %d and %d)", ar, brk);
    s->M = ar >= 2 ? ad[ar - 2] : 1;
    s->K = ad[ar - 1];
    int64_t kb = brk >= 2 ? bdm[brk - 2] : bdm[0];
    s->N = brk >= 2 ? bdm[brk - 1] : 1;
    if (s->K >= 0 && kb >= 0 && s->K != kb) {
        char sa[96], sb[96];
        fmt_dims(sa, sizeof sa, ar, ad);
        fmt_dims(sb, sizeof sb, brk, bdm);
        return fa_node_error(ctx, n, "inner dims differ: A [%s] has K=%lld, B [%s] has K=%lld", sa, (long long)s->K, sb, (long long)kb);
    }
    int ra = ar > 2 ? ar - 2 : 0, rb = brk > 2 ? brk - 2 : 0;
    fa_status st = fa_bcast_shape(ctx, n, ra, ad, rb, bdm, &s->br, s->bd);
    if (st) return st;
    if (s->br + 2 > FA_MAX_RANK) return fa_node_error(ctx, n, "rank too large");
    fa_bcast_strides(ra, ad, s->br, s->bd, s->sa);
    fa_bcast_strides(rb, bdm, s->br, s->bd, s->sb);
    s->yr = 0;
    for (int i = 0; i < s->br; i++) s->yd[s->yr++] = s->bd[i];
    if (ar >= 2) s->yd[s->yr++] = s->M;
    if (brk >= 2) s->yd[s->yr++] = s->N;
    return FA_OK;
}

static fa_status matmul_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *a = fa_req_input(ctx, g, n, 0), *b = a ? fa_req_input(ctx, g, n, 1) : NULL;
    if (!a || !b) return fa_ctx_status(ctx);
    mm_shape s;
    fa_status st = mm_shape_make(ctx, n, a->rank, a->dims, b->rank, b->dims, &s);
    if (st) return st;
    fa_set_out(g, n, 0, a->dtype, s.yr, s.yd);
    return FA_OK;
}

/* MatMul FLOPs = 2 * prod(batch dims of Y) * M * N * K. */
static void matmul_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *a = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0);
    if (!a || !y || a->rank < 1 || fa_tensor_numel(y) < 0 || a->dims[a->rank - 1] < 0) return;
    out->flops = fa_u64_mul_sat(2 * (uint64_t)fa_tensor_numel(y), (uint64_t)a->dims[a->rank - 1]);
}

enum { GEMM_IB = 16, GEMM_JB = 256, GEMM_KB = 32 }; /* task tile rows x columns; float partial sums over KB products
                                                        (8-bit integer products stay exact: 32 * 2^15 < 2^24) */

/* C[i, j] = sum_k A[i*sai + k*sak] * B[k*sbk + j*sbj] for rows [i0, i1) and columns [jlo, jhi)
 * (jhi - jlo <= GEMM_JB) of one matrix with N columns, double accumulators. alpha scales the
 * product; C is overwritten. */
static void gemm_tile(int64_t i0, int64_t i1, int64_t jlo, int64_t jhi, int64_t N, int64_t K,
                      const float *A, int64_t sai, int64_t sak, const float *B, int64_t sbk,
                      int64_t sbj, float *C, double *Cd, double alpha)
{
    double acc[GEMM_JB];
    int64_t jn = jhi - jlo;
    for (int64_t i = i0; i < i1; i++) {
        const float *ar = A + i * sai;
        if (sbj == 1) { /* blocks of GEMM_KB products sum in float (vectorized), blocks in double */
            float part[GEMM_JB];
            for (int64_t j = 0; j < jn; j++) acc[j] = 0;
            for (int64_t k0 = 0; k0 < K; k0 += GEMM_KB) {
                int64_t k1 = k0 + GEMM_KB < K ? k0 + GEMM_KB : K;
                for (int64_t j = 0; j < jn; j++) part[j] = 0;
                for (int64_t k = k0; k < k1; k++) {
                    float av = ar[k * sak];
                    const float *br = B + k * sbk + jlo;
#pragma omp simd
                    for (int64_t j = 0; j < jn; j++) part[j] += av * br[j];
                }
                for (int64_t j = 0; j < jn; j++) acc[j] += part[j];
            }
        } else {
            for (int64_t j = 0; j < jn; j++) {
                const float *bc = B + (jlo + j) * sbj;
                double sum = 0;
                for (int64_t k = 0; k < K; k++) sum += (double)ar[k * sak] * bc[k * sbk];
                acc[j] = sum;
            }
        }
        if (Cd)
            for (int64_t j = 0; j < jn; j++) Cd[i * N + jlo + j] = alpha * acc[j];
        else
            for (int64_t j = 0; j < jn; j++) C[i * N + jlo + j] = (float)(alpha * acc[j]);
    }
}

/* Batched numpy matmul over mm_shape s into float Y or double Yd (one non-NULL). */
static void mm_run(const mm_shape *s, const float *A, const float *B, float *Y, double *Yd, int threads)
{
    int64_t nb = prod64(s->bd, s->br), M = s->M, K = s->K, N = s->N;
    /* one task per (batch, row block, column block) */
    int64_t nrb = (M + GEMM_IB - 1) / GEMM_IB, ncb = (N + GEMM_JB - 1) / GEMM_JB, per = nrb * ncb;
#pragma omp parallel for num_threads(nthreads(threads)) schedule(dynamic)
    for (int64_t t = 0; t < nb * per; t++) {
        int64_t bi = t / per, r0 = (t % per) / ncb * GEMM_IB, r1 = r0 + GEMM_IB < M ? r0 + GEMM_IB : M;
        int64_t c0 = (t % ncb) * GEMM_JB, c1 = c0 + GEMM_JB < N ? c0 + GEMM_JB : N;
        int64_t oa = 0, ob = 0, rem = bi;
        for (int d = s->br - 1; d >= 0; d--) {
            int64_t ix = rem % s->bd[d];
            rem /= s->bd[d];
            oa += ix * s->sa[d];
            ob += ix * s->sb[d];
        }
        gemm_tile(r0, r1, c0, c1, N, K, A + oa * M * K, K, 1, B + ob * K * N, N, 1, Y ? Y + bi * M * N : NULL,
                  Yd ? Yd + bi * M * N : NULL, 1.0);
    }
}

/* Integer matrix products (MatMul/Gemm on int32/int64/uint32/uint64, as numpy computes them):
 * exact in int64 with two's-complement wrap-around, never through float32 (whose 24-bit
 * mantissa rounds products beyond 2^24). C[i, j] = sum_k A[i*sai + k*sak] B[k*sbk + j*sbj]. */
static void mm_int(const fa_value *a, int64_t oa, int64_t sai, int64_t sak, const fa_value *b, int64_t ob,
                   int64_t sbk, int64_t sbj, int64_t M, int64_t K, int64_t N, int64_t *C, int threads)
{
#pragma omp parallel for num_threads(nthreads(threads)) schedule(static) if (M * N * K >= 65536)
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            uint64_t acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += (uint64_t)fa_load_as_i64(a->data, a->dtype, oa + i * sai + k * sak) *
                       (uint64_t)fa_load_as_i64(b->data, b->dtype, ob + k * sbk + j * sbj);
            C[i * N + j] = (int64_t)acc;
        }
}

static fa_status matmul_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                               fa_value *out, int n_out, int threads)
{
    mm_shape s;
    fa_status st = mm_shape_make(ctx, n, in[0].rank, in[0].dims, in[1].rank, in[1].dims, &s);
    if (st) return st;
    if (fa_dtype_is_integer(out[0].dtype)) {
        int64_t nb = prod64(s.bd, s.br), MN = s.M * s.N;
        int64_t *C = malloc(sizeof(int64_t) * (size_t)(MN ? MN : 1));
        if (!C) return oom(ctx, n);
        for (int64_t bi = 0; bi < nb; bi++) {
            int64_t oa = 0, ob = 0, rem = bi;
            for (int d = s.br - 1; d >= 0; d--) {
                int64_t ix = rem % s.bd[d];
                rem /= s.bd[d];
                oa += ix * s.sa[d];
                ob += ix * s.sb[d];
            }
            mm_int(&in[0], oa * s.M * s.K, s.K, 1, &in[1], ob * s.K * s.N, s.N, 1, s.M, s.K, s.N, C, threads);
            for (int64_t e = 0; e < MN; e++) fa_store_from_i64(out[0].data, out[0].dtype, bi * MN + e, C[e]);
        }
        free(C);
        return FA_OK;
    }
    float *ta, *tb, *ty;
    const float *A = in_f32(&in[0], &ta), *B = in_f32(&in[1], &tb);
    float *Y = out_f32(&out[0], &ty);
    if (!A || !B || !Y) { free(ta); free(tb); free(ty); return oom(ctx, n); }
    mm_run(&s, A, B, Y, NULL, threads);
    free(ta); free(tb);
    out_f32_done(&out[0], ty);
    return FA_OK;
}

/* ======================================= Einsum ======================================= */

/* Einsum-12 (numpy.einsum semantics, the ONNX reference): "term,term->out" over letters
 * [a-zA-Z] and one "..." per term for the leading or inner broadcast dims. Implicit output
 * (no "->"): the ellipsis dims, then the letters that occur once, in ASCII order. A letter
 * repeated within a term takes the diagonal; labels absent from the output are summed.
 * Letter dims must agree; ellipsis dims broadcast (1 or equal), aligned on the right. */
#define ES_LETTERS 52
#define ES_MAXLAB (ES_LETTERS + FA_MAX_RANK)
#define ES_MAXIN 8

typedef struct es_plan {
    int n_in;
    int rank[ES_MAXIN];
    int lab[ES_MAXIN][FA_MAX_RANK];  /* label id per axis of each input */
    int n_out;
    int out_lab[FA_MAX_RANK];
    int64_t size[ES_MAXLAB];         /* extent per label, -1 unused */
    int n_sum;
    int sum_lab[ES_MAXLAB];          /* labels summed over */
} es_plan;

static int es_letter(char c)
{
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + c - 'A';
    return -1;
}

/* Parse one term s[0..len) for an input of rank `rank` (rank < 0: the output); ellipsis dims
 * get ids ES_LETTERS + (E - e) ... where E is the widest ellipsis. Fills lab/count. */
static fa_status es_term(fa_ctx *ctx, const fa_node *n, const char *s, size_t len, int rank, int E,
                         int *lab, int *count, int *ell_dims)
{
    int letters = 0, ell = -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (ell >= 0 || i + 2 >= len + 0 || strncmp(s + i, "...", 3) != 0)
                return fa_node_error(ctx, n, "equation: malformed or repeated '...' in term '%.*s'", (int)len, s);
            ell = letters;
            i += 2;
        } else if (es_letter(s[i]) >= 0) letters++;
        else return fa_node_error(ctx, n, "equation: unexpected character '%c'", s[i]);
    }
    int e = ell >= 0 ? (rank >= 0 ? rank - letters : E) : 0;
    if (rank >= 0 && (e < 0 || (ell < 0 && letters != rank)))
        return fa_node_error(ctx, n, "equation term '%.*s' has %d labels for an input of rank %d", (int)len, s,
                             letters, rank);
    if (letters + e > FA_MAX_RANK) return fa_node_error(ctx, n, "equation term '%.*s' has too many labels", (int)len, s);
    int k = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            for (int j = 0; j < e; j++) lab[k++] = ES_LETTERS + (E - e) + j;
            i += 2;
        } else lab[k++] = es_letter(s[i]);
    }
    *count = k;
    *ell_dims = e;
    return FA_OK;
}

/* Build the plan from the equation and the inputs' shapes. */
static fa_status es_plan_make(fa_ctx *ctx, const fa_node *n, int n_in, const int *ranks,
                              const int64_t *const *dims, es_plan *p)
{
    const char *eq = fa_node_attr_string(n, "equation", NULL);
    if (!eq) return fa_node_error(ctx, n, "required attribute 'equation' is missing");
    if (n_in < 1 || n_in > ES_MAXIN) return fa_node_unsupported(ctx, n, "%d inputs (1..%d supported)", n_in, ES_MAXIN);
    char buf[512];
    size_t L = 0;
    for (const char *c = eq; *c; c++)
        if (*c != ' ') {
            if (L + 1 >= sizeof buf) return fa_node_error(ctx, n, "equation is too long");
            buf[L++] = *c;
        }
    buf[L] = 0;
    memset(p, 0, sizeof *p);
    p->n_in = n_in;
    for (int l = 0; l < ES_MAXLAB; l++) p->size[l] = -1;
    char *arrow = strstr(buf, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - buf) : L;
    /* widest ellipsis among the inputs */
    int E = 0, t = 0;
    const char *start = buf;
    for (size_t i = 0; i <= lhs_len; i++) {
        if (i < lhs_len && buf[i] != ',') continue;
        if (t >= n_in) return fa_node_error(ctx, n, "equation has more terms than the %d inputs", n_in);
        int cnt, e;
        fa_status st = es_term(ctx, n, start, (size_t)(buf + i - start), ranks[t], FA_MAX_RANK, p->lab[t], &cnt, &e);
        if (st) return st;
        if (e > E) E = e;
        t++;
        start = buf + i + 1;
    }
    if (t != n_in) return fa_node_error(ctx, n, "equation has %d terms for %d inputs", t, n_in);
    /* again with the common ellipsis width, recording sizes */
    bool any_ell = false;
    int occ[ES_MAXLAB] = {0};
    t = 0;
    start = buf;
    for (size_t i = 0; i <= lhs_len; i++) {
        if (i < lhs_len && buf[i] != ',') continue;
        int cnt, e;
        fa_status st = es_term(ctx, n, start, (size_t)(buf + i - start), ranks[t], E, p->lab[t], &cnt, &e);
        if (st) return st;
        any_ell |= e > 0 || memchr(start, '.', (size_t)(buf + i - start)) != NULL;
        p->rank[t] = cnt;
        for (int a = 0; a < cnt; a++) {
            int l = p->lab[t][a];
            int64_t d = dims[t][a];
            occ[l]++;
            if (p->size[l] < 0 || p->size[l] == 1) p->size[l] = d;
            else if (d != p->size[l] && !(l >= ES_LETTERS && d == 1))
                return fa_node_error(ctx, n, "label '%c' has extents %lld and %lld",
                                     l < 26 ? 'a' + l : l < ES_LETTERS ? 'A' + l - 26 : '.', (long long)p->size[l],
                                     (long long)d);
        }
        t++;
        start = buf + i + 1;
    }
    if (arrow) {
        int cnt, e;
        fa_status st = es_term(ctx, n, arrow + 2, strlen(arrow + 2), -1, E, p->out_lab, &cnt, &e);
        if (st) return st;
        p->n_out = cnt;
        for (int a = 0; a < cnt; a++) {
            int l = p->out_lab[a];
            for (int b = 0; b < a; b++)
                if (p->out_lab[b] == l) return fa_node_error(ctx, n, "output label repeated in '%s'", eq);
            if (p->size[l] < 0) return fa_node_error(ctx, n, "output label of '%s' is not in any input", eq);
        }
    } else {
        int k = 0;
        if (any_ell)
            for (int j = 0; j < E; j++) p->out_lab[k++] = ES_LETTERS + j;
        for (int c = 0; c < 128; c++) { /* ASCII order: 'A'..'Z' before 'a'..'z' */
            int l = es_letter((char)c);
            if (l >= 0 && occ[l] == 1) {
                if (k >= FA_MAX_RANK) return fa_node_error(ctx, n, "implicit output of '%s' has too many labels", eq);
                p->out_lab[k++] = l;
            }
        }
        p->n_out = k;
    }
    bool in_out[ES_MAXLAB] = {false};
    for (int a = 0; a < p->n_out; a++) in_out[p->out_lab[a]] = true;
    for (int l = 0; l < ES_MAXLAB; l++)
        if (p->size[l] >= 0 && !in_out[l]) p->sum_lab[p->n_sum++] = l;
    return FA_OK;
}

bool fa_einsum_as_matmul(const fa_graph *g, const fa_node *n, fa_einsum_matmul *mm)
{
    memset(mm, 0, sizeof *mm);
    if (!n || *n->domain || strcmp(n->op_type, "Einsum") || n->n_inputs != 2 || n->n_outputs < 1) return false;
    const fa_tensor *A = fa_graph_in(g, n, 0), *B = fa_graph_in(g, n, 1), *Y = fa_graph_out(g, n, 0);
    if (!A || !B || !Y || A->rank < 0 || B->rank < 0 || Y->rank < 0) return false;
    const char *eq = fa_node_attr_string(n, "equation", NULL);
    if (!eq || strchr(eq, '.')) return false; /* an ellipsis broadcasts: the reference kernel */
    int ranks[2] = {A->rank, B->rank};
    const int64_t *dims[2] = {A->dims, B->dims};
    es_plan p;
    fa_ctx *tmp = fa_ctx_create();
    if (!tmp) return false;
    fa_status st = es_plan_make(tmp, n, 2, ranks, dims, &p);
    fa_ctx_free(tmp);
    if (st || p.n_out != Y->rank) return false;
    /* each label's role: in A, in B, in the output */
    int posA[ES_MAXLAB], posB[ES_MAXLAB], posY[ES_MAXLAB];
    for (int l = 0; l < ES_MAXLAB; l++) posA[l] = posB[l] = posY[l] = -1;
    for (int a = 0; a < p.rank[0]; a++) {
        if (posA[p.lab[0][a]] >= 0) return false; /* a diagonal */
        posA[p.lab[0][a]] = a;
    }
    for (int a = 0; a < p.rank[1]; a++) {
        if (posB[p.lab[1][a]] >= 0) return false;
        posB[p.lab[1][a]] = a;
    }
    for (int a = 0; a < p.n_out; a++) posY[p.out_lab[a]] = a;
    int64_t sa[FA_MAX_RANK], sb[FA_MAX_RANK], sy[FA_MAX_RANK], acc = 1;
    for (int a = p.rank[0] - 1; a >= 0; a--) { sa[a] = acc; acc *= A->dims[a]; }
    acc = 1;
    for (int a = p.rank[1] - 1; a >= 0; a--) { sb[a] = acc; acc *= B->dims[a]; }
    acc = 1;
    for (int a = p.n_out - 1; a >= 0; a--) { sy[a] = acc; acc *= Y->dims[a]; }
    /* the M, N and K labels, each in the order of the output (K: of the first input); several
     * labels of one role are one dim where they are adjacent and contiguous in every tensor that
     * has them ("bid,de->bie": b and i, M = b·i). A label of extent 1 has no role (its stride
     * is never used). An M or N label outside the innermost contiguous run of its role is an
     * outer loop around the product (fa_einsum_matmul.outer_*): Funnel's "binh,tnh->bnit" (b and
     * i are not adjacent in the output) at batch 2. */
    int ml[ES_MAXLAB], nl[ES_MAXLAB], kl[ES_MAXLAB], nm = 0, nn = 0, nk = 0;
    for (int a = 0; a < p.n_out; a++) {
        int l = p.out_lab[a];
        if (p.size[l] == 1) continue;
        if (posA[l] >= 0 && posB[l] < 0) ml[nm++] = l;
        else if (posA[l] < 0 && posB[l] >= 0) nl[nn++] = l;
    }
    for (int a = 0; a < p.rank[0]; a++) {
        int l = p.lab[0][a];
        if (p.size[l] != 1 && posB[l] >= 0 && posY[l] < 0) kl[nk++] = l;
    }
    for (int l = 0; l < ES_MAXLAB; l++) /* a label of one input alone, summed: the reference kernel */
        if (p.size[l] > 1 && posY[l] < 0 && (posA[l] < 0 || posB[l] < 0)) return false;
    bool demoted[ES_MAXLAB] = {false};
    int m0 = nm - 1, n0 = nn - 1; /* the first label of each role's innermost contiguous run */
    while (m0 > 0 && sa[posA[ml[m0 - 1]]] == sa[posA[ml[m0]]] * p.size[ml[m0]] &&
           sy[posY[ml[m0 - 1]]] == sy[posY[ml[m0]]] * p.size[ml[m0]])
        m0--;
    while (n0 > 0 && sb[posB[nl[n0 - 1]]] == sb[posB[nl[n0]]] * p.size[nl[n0]] &&
           sy[posY[nl[n0 - 1]]] == sy[posY[nl[n0]]] * p.size[nl[n0]])
        n0--;
    for (int i = 0; i < m0; i++) demoted[ml[i]] = true;
    for (int i = 0; i < n0; i++) demoted[nl[i]] = true;
    int64_t M = 1, N = 1, K = 1, smA = 1, smY = 1, snB = 1, snY = 1, skA = 1, skB = 1;
    for (int i = m0 < 0 ? 0 : m0; i < nm; i++) {
        int l = ml[i];
        M *= p.size[l], smA = sa[posA[l]], smY = sy[posY[l]];
    }
    for (int i = n0 < 0 ? 0 : n0; i < nn; i++) {
        int l = nl[i];
        N *= p.size[l], snB = sb[posB[l]], snY = sy[posY[l]];
    }
    for (int i = 0; i < nk; i++) {
        int l = kl[i];
        if (i && (sa[posA[kl[i - 1]]] != sa[posA[l]] * p.size[l] || sb[posB[kl[i - 1]]] != sb[posB[l]] * p.size[l])) return false;
        K *= p.size[l], skA = sa[posA[l]], skB = sb[posB[l]];
    }
    nm -= m0 > 0 ? m0 : 0;
    nn -= n0 > 0 ? n0 : 0;
    int nb = 0;
    for (int a = 0; a < p.n_out; a++) {
        int l = p.out_lab[a];
        if (p.size[l] == 1) continue;
        if (demoted[l]) { /* an outer loop: the input without the label is read again */
            int o = mm->outer_rank++;
            mm->outer_dims[o] = p.size[l];
            mm->outer_sa[o] = posA[l] >= 0 ? sa[posA[l]] : 0;
            mm->outer_sb[o] = posB[l] >= 0 ? sb[posB[l]] : 0;
            mm->outer_sy[o] = sy[posY[l]];
            continue;
        }
        if (posA[l] < 0 || posB[l] < 0) continue;
        if (nb >= FA_MAX_RANK - 2) return false;
        if (A->dims[posA[l]] != B->dims[posB[l]]) return false; /* no broadcast of a batch label */
        mm->dims_a[nb] = mm->dims_b[nb] = mm->dims_y[nb] = p.size[l];
        mm->strides_a[nb] = sa[posA[l]];
        mm->strides_b[nb] = sb[posB[l]];
        mm->strides_y[nb] = sy[posY[l]];
        nb++;
    }
    /* an absent role is an extent-1 dim: its stride the next dim's extent times stride */
    if (!nm) smA = K * skA, smY = N * snY;
    if (!nk) skA = 1, skB = N * snB;
    if (!nn) snB = 1, snY = 1;
    mm->dims_a[nb] = M, mm->dims_a[nb + 1] = K;
    mm->strides_a[nb] = smA, mm->strides_a[nb + 1] = skA;
    mm->dims_b[nb] = K, mm->dims_b[nb + 1] = N;
    mm->strides_b[nb] = skB, mm->strides_b[nb + 1] = snB;
    mm->dims_y[nb] = M, mm->dims_y[nb + 1] = N;
    mm->strides_y[nb] = smY, mm->strides_y[nb + 1] = snY;
    mm->rank = nb + 2;
    return true;
}

static fa_status einsum_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    int ranks[ES_MAXIN] = {0};
    const int64_t *dims[ES_MAXIN] = {0};
    fa_dtype dt = FA_DTYPE_UNDEFINED;
    if (n->n_inputs > ES_MAXIN) return fa_node_unsupported(ctx, n, "%d inputs (1..%d supported)", n->n_inputs, ES_MAXIN);
    for (int i = 0; i < n->n_inputs; i++) {
        fa_tensor *t = fa_req_input(ctx, g, n, i);
        if (!t) return fa_ctx_status(ctx);
        if (i == 0) dt = t->dtype;
        else if (t->dtype != dt)
            return fa_node_error(ctx, n, "input %d is %s, input 0 is %s", i, fa_dtype_name(t->dtype), fa_dtype_name(dt));
        ranks[i] = t->rank;
        dims[i] = t->dims;
    }
    if (dt == FA_DTYPE_BOOL || dt == FA_DTYPE_STRING || !fa_dtype_size(dt))
        return fa_node_error(ctx, n, "inputs must be numeric, are %s", fa_dtype_name(dt));
    es_plan p;
    fa_status st = es_plan_make(ctx, n, n->n_inputs, ranks, dims, &p);
    if (st) return st;
    int64_t od[FA_MAX_RANK];
    for (int a = 0; a < p.n_out; a++) od[a] = p.size[p.out_lab[a]];
    fa_set_out(g, n, 0, dt, p.n_out, od);
    return FA_OK;
}

/* Einsum FLOPs = n_in * prod(extent of every label): a multiply per extra input and an add per
 * term, for each point of the full index space (the reference loop nest; no reordering). */
static void einsum_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    int ranks[ES_MAXIN] = {0};
    const int64_t *dims[ES_MAXIN] = {0};
    if (n->n_inputs > ES_MAXIN) return;
    for (int i = 0; i < n->n_inputs; i++) {
        const fa_tensor *t = fa_graph_in(g, n, i);
        if (!t || fa_tensor_numel(t) < 0) return;
        ranks[i] = t->rank;
        dims[i] = t->dims;
    }
    es_plan p;
    fa_ctx *tmp = fa_ctx_create();
    if (!tmp) return;
    if (es_plan_make(tmp, n, n->n_inputs, ranks, dims, &p) == FA_OK) {
        uint64_t pts = 1;
        for (int l = 0; l < ES_MAXLAB; l++)
            if (p.size[l] > 0) pts = fa_u64_mul_sat(pts, (uint64_t)p.size[l]);
        out->flops = fa_u64_mul_sat(pts, (uint64_t)n->n_inputs);
    }
    fa_ctx_free(tmp);
}

static fa_status einsum_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                               fa_value *out, int n_out, int threads)
{
    int ranks[ES_MAXIN] = {0};
    const int64_t *dims[ES_MAXIN] = {0};
    if (n_in < 1 || n_in > ES_MAXIN) return fa_node_unsupported(ctx, n, "%d inputs (1..%d supported)", n_in, ES_MAXIN);
    for (int i = 0; i < n_in; i++) {
        ranks[i] = in[i].rank;
        dims[i] = in[i].dims;
    }
    es_plan p;
    fa_status st = es_plan_make(ctx, n, n_in, ranks, dims, &p);
    if (st) return st;
    /* one input, nothing summed, no label repeated: a permutation of the input ("bghid->bhgid"),
     * copied through its strides (fa_strided_copy, as Transpose) — the general loop below walks
     * the full index space in double per element */
    if (n_in == 1 && p.n_sum == 0 && p.rank[0] == p.n_out && fa_dtype_size(in[0].dtype)) {
        int64_t st0[ES_MAXLAB], acc = 1, ost[FA_MAX_RANK];
        bool seen[ES_MAXLAB] = {false}, perm = true;
        for (int a = p.rank[0] - 1; a >= 0; a--) {
            int l = p.lab[0][a];
            perm = perm && !seen[l] && in[0].dims[a] == p.size[l];
            seen[l] = true;
            st0[l] = acc;
            acc *= in[0].dims[a];
        }
        if (perm) {
            for (int a = 0; a < p.n_out; a++) ost[a] = st0[p.out_lab[a]];
            fa_strided_copy(out[0].data, in[0].data, fa_dtype_size(in[0].dtype), p.n_out, out[0].dims, ost, threads);
            return FA_OK;
        }
    }
    bool integral = fa_dtype_is_integer(out[0].dtype);
    /* per input and label: element stride (sum over repeated axes; 0 for a broadcast dim of 1) */
    int64_t lstride[ES_MAXIN][ES_MAXLAB];
    memset(lstride, 0, sizeof lstride);
    double *vd[ES_MAXIN] = {0};
    int64_t *vi[ES_MAXIN] = {0};
    bool oom_ = false;
    for (int i = 0; i < n_in; i++) {
        int64_t s = 1;
        for (int a = p.rank[i] - 1; a >= 0; a--) {
            if (!(in[i].dims[a] == 1 && p.size[p.lab[i][a]] != 1)) lstride[i][p.lab[i][a]] += s;
            s *= in[i].dims[a];
        }
        int64_t ne = fa_value_numel(&in[i]);
        if (integral) {
            vi[i] = malloc(sizeof(int64_t) * (size_t)(ne ? ne : 1));
            if (!vi[i]) { oom_ = true; continue; }
            for (int64_t e = 0; e < ne; e++) vi[i][e] = fa_load_as_i64(in[i].data, in[i].dtype, e);
        } else {
            vd[i] = malloc(sizeof(double) * (size_t)(ne ? ne : 1));
            if (!vd[i]) { oom_ = true; continue; }
            for (int64_t e = 0; e < ne; e++) vd[i][e] = fa_load_as_double(in[i].data, in[i].dtype, e);
        }
    }
    if (!oom_) {
        int64_t total = fa_value_numel(&out[0]), inner = 1;
        for (int k = 0; k < p.n_sum; k++) inner *= p.size[p.sum_lab[k]];
#pragma omp parallel for num_threads(nthreads(threads)) schedule(static) if (total * inner >= 65536)
        for (int64_t o = 0; o < total; o++) {
            int64_t base[ES_MAXIN] = {0}, rem = o;
            for (int a = p.n_out - 1; a >= 0; a--) {
                int l = p.out_lab[a];
                int64_t v = rem % p.size[l];
                rem /= p.size[l];
                for (int i = 0; i < n_in; i++) base[i] += v * lstride[i][l];
            }
            double accd = 0;
            int64_t acci = 0;
            int64_t cnt[ES_MAXLAB] = {0}, off[ES_MAXIN];
            memcpy(off, base, sizeof(int64_t) * (size_t)n_in);
            for (int64_t s = 0; s < inner; s++) {
                if (integral) {
                    int64_t prod = 1;
                    for (int i = 0; i < n_in; i++) prod = (int64_t)((uint64_t)prod * (uint64_t)vi[i][off[i]]);
                    acci = (int64_t)((uint64_t)acci + (uint64_t)prod);
                } else {
                    double prod = 1;
                    for (int i = 0; i < n_in; i++) prod *= vd[i][off[i]];
                    accd += prod;
                }
                for (int k = p.n_sum - 1; k >= 0; k--) { /* odometer over the summed labels */
                    int l = p.sum_lab[k];
                    for (int i = 0; i < n_in; i++) off[i] += lstride[i][l];
                    if (++cnt[k] < p.size[l]) break;
                    for (int i = 0; i < n_in; i++) off[i] -= p.size[l] * lstride[i][l];
                    cnt[k] = 0;
                }
            }
            if (integral) fa_store_from_i64(out[0].data, out[0].dtype, o, acci);
            else fa_store_from_double(out[0].data, out[0].dtype, o, accd);
        }
    }
    for (int i = 0; i < n_in; i++) { free(vd[i]); free(vi[i]); }
    return oom_ ? oom(ctx, n) : FA_OK;
}

/* ======================================== Gemm ======================================== */

/* Y[M, N] = alpha * A' * B' + beta * C, A' = transA ? A^T : A, B' likewise; C broadcasts
 * unidirectionally to [M, N] (opset < 7 `broadcast` attr: both forms accepted). */
static fa_status gemm_dims(fa_ctx *ctx, const fa_node *n, int ar, const int64_t *ad, int br,
                           const int64_t *bd, int64_t *M, int64_t *K, int64_t *N)
{
    if (ar != 2 || br != 2) return fa_node_error(ctx, n, "A and B must be 2-D, have ranks %d and %d", ar, br);
    bool ta = fa_node_attr_int(n, "transA", 0) != 0, tb = fa_node_attr_int(n, "transB", 0) != 0;
    *M = ta ? ad[1] : ad[0];
    *K = ta ? ad[0] : ad[1];
    int64_t kb = tb ? bd[1] : bd[0];
    *N = tb ? bd[0] : bd[1];
    if (*K >= 0 && kb >= 0 && *K != kb)
        return fa_node_error(ctx, n, "inner dims differ: A' has K=%lld, B' has K=%lld (transA=%d, transB=%d)",
                             (long long)*K, (long long)kb, ta, tb);
    return FA_OK;
}

static fa_status gemm_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *a = fa_req_input(ctx, g, n, 0), *b = a ? fa_req_input(ctx, g, n, 1) : NULL;
    if (!a || !b) return fa_ctx_status(ctx);
    int64_t M, K, N;
    fa_status st = gemm_dims(ctx, n, a->rank, a->dims, b->rank, b->dims, &M, &K, &N);
    if (st) return st;
    int64_t yd[2] = {M, N};
    fa_tensor *c = fa_graph_in(g, n, 2);
    if (c && c->rank >= 0) {
        int r;
        int64_t od[FA_MAX_RANK];
        if (c->rank > 2) return fa_node_error(ctx, n, "C must have rank <= 2, has %d", c->rank);
        if ((st = fa_bcast_shape(ctx, n, 2, yd, c->rank, c->dims, &r, od))) return st;
        if ((od[0] != M && M >= 0) || (od[1] != N && N >= 0))
            return fa_node_error(ctx, n, "C does not broadcast to [%lld, %lld]", (long long)M, (long long)N);
    }
    fa_set_out(g, n, 0, a->dtype, 2, yd);
    return FA_OK;
}

/* Gemm FLOPs = 2*M*N*K, + M*N when alpha != 1, + 2*M*N when C is present (beta*C + add). */
static void gemm_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *a = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0);
    if (!a || !y || a->rank != 2 || y->rank != 2 || fa_tensor_numel(y) < 0) return;
    int64_t K = fa_node_attr_int(n, "transA", 0) ? a->dims[0] : a->dims[1];
    if (K < 0) return;
    uint64_t mn = (uint64_t)fa_tensor_numel(y);
    out->flops = fa_u64_add_sat(fa_u64_mul_sat(2 * mn, (uint64_t)K),
                                (fa_node_attr_float(n, "alpha", 1.0f) != 1.0f ? mn : 0) + (fa_graph_in(g, n, 2) ? 2 * mn : 0));
}

static fa_status gemm_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                             fa_value *out, int n_out, int threads)
{
    int64_t M, K, N;
    fa_status st = gemm_dims(ctx, n, in[0].rank, in[0].dims, in[1].rank, in[1].dims, &M, &K, &N);
    if (st) return st;
    bool ta = fa_node_attr_int(n, "transA", 0) != 0, tb = fa_node_attr_int(n, "transB", 0) != 0;
    double alpha = fa_node_attr_float(n, "alpha", 1.0f), beta = fa_node_attr_float(n, "beta", 1.0f);
    if (fa_dtype_is_integer(out[0].dtype)) {
        /* numpy's int Gemm (the reference): dot exact, then alpha*dot + beta*C in double,
         * truncated; with alpha = beta = 1 the sum stays exact in int64. */
        int64_t MN = M * N, *D = malloc(sizeof(int64_t) * (size_t)(MN > 0 ? MN : 1));
        if (!D) return oom(ctx, n);
        mm_int(&in[0], 0, ta ? 1 : K, ta ? M : 1, &in[1], 0, tb ? 1 : N, tb ? K : 1, M, K, N, D, threads);
        bool has_c = n_in > 2 && in[2].data;
        int64_t cs[2] = {0, 0}, yd[2] = {M, N};
        if (has_c) fa_bcast_strides(in[2].rank, in[2].dims, 2, yd, cs);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                int64_t e = i * N + j, c = has_c ? fa_load_as_i64(in[2].data, in[2].dtype, i * cs[0] + j * cs[1]) : 0;
                if (alpha == 1.0 && (!has_c || beta == 1.0))
                    fa_store_from_i64(out[0].data, out[0].dtype, e, (int64_t)((uint64_t)D[e] + (uint64_t)c));
                else
                    fa_store_from_double(out[0].data, out[0].dtype, e,
                                         trunc(alpha * (double)D[e] + (has_c ? beta * (double)c : 0.0)));
            }
        free(D);
        return FA_OK;
    }
    float *tA, *tB, *tC = NULL, *ty;
    const float *A = in_f32(&in[0], &tA), *B = in_f32(&in[1], &tB);
    bool has_c = n_in > 2 && in[2].data;
    const float *C = has_c ? in_f32(&in[2], &tC) : NULL;
    float *Y = out_f32(&out[0], &ty);
    if (!A || !B || !Y || (has_c && !C)) { free(tA); free(tB); free(tC); free(ty); return oom(ctx, n); }
    int64_t sai = ta ? 1 : K, sak = ta ? M : 1, sbk = tb ? 1 : N, sbj = tb ? K : 1;
    int64_t cs[2] = {0, 0}, yd[2] = {M, N};
    if (has_c) fa_bcast_strides(in[2].rank, in[2].dims, 2, yd, cs);
    int64_t nrb = (M + GEMM_IB - 1) / GEMM_IB, ncb = (N + GEMM_JB - 1) / GEMM_JB;
#pragma omp parallel for num_threads(nthreads(threads)) schedule(dynamic)
    for (int64_t t = 0; t < nrb * ncb; t++) {
        int64_t r0 = t / ncb * GEMM_IB, r1 = r0 + GEMM_IB < M ? r0 + GEMM_IB : M;
        int64_t c0 = (t % ncb) * GEMM_JB, c1 = c0 + GEMM_JB < N ? c0 + GEMM_JB : N;
        gemm_tile(r0, r1, c0, c1, N, K, A, sai, sak, B, sbk, sbj, Y, NULL, alpha);
        if (C)
            for (int64_t i = r0; i < r1; i++)
                for (int64_t j = c0; j < c1; j++)
                    Y[i * N + j] = (float)((double)Y[i * N + j] + beta * C[i * cs[0] + j * cs[1]]);
    }
    free(tA); free(tB); free(tC);
    out_f32_done(&out[0], ty);
    return FA_OK;
}

/* ======================================= Pools ======================================= */

static fa_status pool_geom(fa_ctx *ctx, const fa_node *n, int xr, const int64_t *xd, win_geom *g)
{
    if (xr < 3) return fa_node_error(ctx, n, "input X must have rank >= 3 (N, C, spatial...), has rank %d", xr);
    if (xr - 2 > MAX_SP) return fa_node_unsupported(ctx, n, "%d spatial dims (at most %d supported)", xr - 2, MAX_SP);
    g->sr = xr - 2;
    const int64_t *ks;
    int kc = fa_node_attr_ints(n, "kernel_shape", &ks);
    if (kc != g->sr) return fa_node_error(ctx, n, "kernel_shape must have %d values, has %d", g->sr, kc);
    for (int i = 0; i < g->sr; i++) {
        g->in[i] = xd[i + 2];
        g->k[i] = ks[i];
    }
    return geom_forward(ctx, n, fa_node_attr_int(n, "ceil_mode", 0) != 0, g);
}

static fa_status pool_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    win_geom gm;
    fa_status st = pool_geom(ctx, n, x->rank, x->dims, &gm);
    if (st) return st;
    int64_t od[FA_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < gm.sr; i++) od[i + 2] = gm.out[i];
    fa_set_out(g, n, 0, x->dtype, x->rank, od);
    if (n->n_outputs > 1) fa_set_out(g, n, 1, FA_DTYPE_INT64, x->rank, od);
    return FA_OK;
}

/* MaxPool FLOPs = numel(Y) * prod(kernel) (one compare per tap);
 * AveragePool FLOPs = numel(Y) * (prod(kernel) + 1) (adds, one divide);
 * LpPool FLOPs = numel(Y) * (2 * prod(kernel) + 1) (|x|^p and add per tap, one p-th root). */
static void pool_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *y = fa_graph_out(g, n, 0);
    const int64_t *ks;
    int kc = fa_node_attr_ints(n, "kernel_shape", &ks);
    if (!y || fa_tensor_numel(y) < 0) return;
    uint64_t taps = 1; /* the kernel's extents (each within 2^48, their product checked by infer) */
    for (int i = 0; i < kc; i++) taps = fa_u64_mul_sat(taps, ks[i] > 0 ? (uint64_t)ks[i] : 0);
    taps += strcmp(n->op_type, "AveragePool") == 0 ? 1 : 0;
    if (strcmp(n->op_type, "LpPool") == 0) taps = 2 * taps + 1; /* |x|^p and add per tap, one root */
    out->flops = fa_u64_mul_sat((uint64_t)fa_tensor_numel(y), taps);
}

/* Reference MaxPool / AveragePool / LpPool over one (n, c) plane per task.
 * LpPool: (sum over taps inside the input of |x|^p)^(1/p), p attribute default 2 (pads are zeros).
 * MaxPool: max over taps inside the input (pads never win); optional Indices output holds
 * the flat index into X (row-major; storage_order=1: column-major spatial, 2-D only).
 * AveragePool: sum over taps inside the input divided by the count of taps inside the input
 * (count_include_pad=0) or inside the padded extent [-pb, in+pe) (count_include_pad=1). */
static fa_status pool_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                             fa_value *out, int n_out, int threads)
{
    win_geom g0, g;
    fa_status st = pool_geom(ctx, n, in[0].rank, in[0].dims, &g0);
    if (st) return st;
    geom_pad3(&g0, &g);
    bool is_max = strcmp(n->op_type, "MaxPool") == 0, is_lp = strcmp(n->op_type, "LpPool") == 0;
    double lp = (double)fa_node_attr_int(n, "p", 2);
    bool incl = fa_node_attr_int(n, "count_include_pad", 0) != 0;
    int64_t order = fa_node_attr_int(n, "storage_order", 0);
    int64_t *I = (is_max && n_out > 1 && out[1].data) ? out[1].data : NULL;
    if (I && order == 1 && g0.sr != 2)
        return fa_node_unsupported(ctx, n, "storage_order=1 Indices only for 2-D pooling");
    float *tx, *ty;
    const float *X = in_f32(&in[0], &tx);
    float *Y = out_f32(&out[0], &ty);
    if (!X || !Y) { free(tx); free(ty); return oom(ctx, n); }
    int64_t planes = in[0].dims[0] * in[0].dims[1];
    int64_t insp = g.in[0] * g.in[1] * g.in[2], outsp = g.out[0] * g.out[1] * g.out[2];
#pragma omp parallel for num_threads(nthreads(threads)) schedule(dynamic)
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = X + p * insp;
        float *yp = Y + p * outsp;
        for (int64_t od = 0; od < g.out[0]; od++)
            for (int64_t oh = 0; oh < g.out[1]; oh++)
                for (int64_t ow = 0; ow < g.out[2]; ow++) {
                    int64_t b[3] = {od * g.s[0] - g.pb[0], oh * g.s[1] - g.pb[1], ow * g.s[2] - g.pb[2]};
                    double acc = is_max ? -INFINITY : 0.0;
                    int64_t cnt = 0, cnt_pad = 0, arg = -1;
                    for (int64_t kd = 0; kd < g.k[0]; kd++) {
                        int64_t id = b[0] + kd * g.d[0];
                        if (id < -g.pb[0] || id >= g.in[0] + g.pe[0]) continue;
                        for (int64_t kh = 0; kh < g.k[1]; kh++) {
                            int64_t ih = b[1] + kh * g.d[1];
                            if (ih < -g.pb[1] || ih >= g.in[1] + g.pe[1]) continue;
                            for (int64_t kw = 0; kw < g.k[2]; kw++) {
                                int64_t iw = b[2] + kw * g.d[2];
                                if (iw < -g.pb[2] || iw >= g.in[2] + g.pe[2]) continue;
                                cnt_pad++;
                                if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2])
                                    continue;
                                int64_t off = (id * g.in[1] + ih) * g.in[2] + iw;
                                double v = xp[off];
                                cnt++;
                                if (is_max) {
                                    if (v > acc || arg < 0) { acc = v; arg = off; }
                                } else acc += is_lp ? pow(fabs(v), lp) : v;
                            }
                        }
                    }
                    int64_t o = (od * g.out[1] + oh) * g.out[2] + ow;
                    if (is_max) {
                        yp[o] = (float)acc;
                        if (I) {
                            int64_t idx = arg < 0 ? 0 : arg;
                            if (order == 1 && arg >= 0) /* column-major within the plane: w*H + h */
                                idx = (arg % g.in[2]) * g.in[1] + (arg / g.in[2]) % g.in[1];
                            I[p * outsp + o] = p * insp + idx;
                        }
                    } else {
                        int64_t div = incl ? cnt_pad : cnt;
                        if (is_lp) yp[o] = (float)pow(acc, 1.0 / lp); /* pads are zeros: add nothing */
                        else yp[o] = div ? (float)(acc / (double)div) : 0.0f;
                    }
                }
    }
    free(tx);
    out_f32_done(&out[0], ty);
    return FA_OK;
}

/* GlobalAveragePool / GlobalMaxPool: Y[N, C, 1, ...]. */
static fa_status gpool_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    if (x->rank < 2) return fa_node_error(ctx, n, "input X must have rank >= 2, has rank %d", x->rank);
    int64_t od[FA_MAX_RANK];
    for (int i = 0; i < x->rank; i++) od[i] = i < 2 ? x->dims[i] : 1;
    fa_set_out(g, n, 0, x->dtype, x->rank, od);
    return FA_OK;
}

/* GlobalAveragePool FLOPs = numel(X) + N*C (sum, then one divide per plane);
 * GlobalMaxPool FLOPs = numel(X); GlobalLpPool FLOPs = 2*numel(X) + N*C (|x|^p, add; one root). */
static void gpool_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *x = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0);
    if (!x || !y || fa_tensor_numel(x) < 0 || fa_tensor_numel(y) < 0) return;
    bool lp = strcmp(n->op_type, "GlobalLpPool") == 0;
    out->flops = (uint64_t)fa_tensor_numel(x) * (lp ? 2 : 1) +
                 (strcmp(n->op_type, "GlobalMaxPool") != 0 ? (uint64_t)fa_tensor_numel(y) : 0);
}

#define GPOOL_PAR_MIN 262144 /* elements; under it one thread (see gpool_kernel) */

/* One plane of a global pool: Y = mean, max or Lp norm of xp[0..sp). The average sums in double
 * lanes with `omp simd`; the max and Lp forms keep the scalar loop. */
static inline void gpool_plane(const float *xp, int64_t sp, bool is_max, bool is_lp, double lp, float *y)
{
    if (!is_max && !is_lp) {
        double sum = 0.0;
#pragma omp simd reduction(+ : sum)
        for (int64_t i = 0; i < sp; i++) sum += xp[i];
        *y = (float)(sp ? sum / (double)sp : 0.0);
        return;
    }
    double acc = is_max ? -INFINITY : 0.0;
    for (int64_t i = 0; i < sp; i++) {
        if (is_max) { if (xp[i] > acc || isnan(xp[i])) acc = xp[i]; }
        else acc += is_lp ? pow(fabs(xp[i]), lp) : xp[i];
    }
    *y = (float)(is_max ? acc : is_lp ? pow(acc, 1.0 / lp) : (sp ? acc / (double)sp : 0.0));
}

static fa_status gpool_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                              fa_value *out, int n_out, int threads)
{
    bool is_max = strcmp(n->op_type, "GlobalMaxPool") == 0, is_lp = strcmp(n->op_type, "GlobalLpPool") == 0;
    double lp = (double)fa_node_attr_int(n, "p", 2);
    float *tx, *ty;
    const float *X = in_f32(&in[0], &tx);
    float *Y = out_f32(&out[0], &ty);
    if (!X || !Y) { free(tx); free(ty); return oom(ctx, n); }
    int64_t planes = in[0].dims[0] * in[0].dims[1], sp = prod64(in[0].dims + 2, in[0].rank - 2);
    /* A plane per task; a whole kernel of less than GPOOL_PAR_MIN elements runs on one thread
     * (the squeeze-excitation pools of MobileNetV3/EfficientNet/RegNetY read 10-100k floats: a
     * second thread's wake-up costs more than its half). The average sums in double lanes with
     * `omp simd` (a reduction gcc may reorder: the sum of <= 2^24 floats in double keeps a
     * float's precision in any order); the max and Lp forms keep the scalar loop. */
    if (FA_OMP_TEAM(nthreads(threads), planes * sp >= GPOOL_PAR_MIN)) { /* else no team (ops-impl.h) */
#pragma omp parallel for num_threads(nthreads(threads))
        for (int64_t p = 0; p < planes; p++) gpool_plane(X + p * sp, sp, is_max, is_lp, lp, &Y[p]);
    } else {
        for (int64_t p = 0; p < planes; p++) gpool_plane(X + p * sp, sp, is_max, is_lp, lp, &Y[p]);
    }
    free(tx);
    out_f32_done(&out[0], ty);
    return FA_OK;
}

/* ======================================== LRN ======================================== */

static fa_status lrn_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    if (x->rank < 3) return fa_node_error(ctx, n, "input X must have rank >= 3, has rank %d", x->rank);
    int64_t size = fa_node_attr_int(n, "size", 0);
    if (size < 1) return fa_node_error(ctx, n, "attribute size must be given and >= 1");
    if (size > FA_MAX_TENSOR_ELEMENTS) return fa_node_error(ctx, n, "attribute size %lld is over the 2^48 a window may span", (long long)size);
    fa_set_out(g, n, 0, x->dtype, x->rank, x->dims);
    return FA_OK;
}

/* LRN FLOPs = numel(X) * (2*size + 4): square+add per window tap, then scale, add bias,
 * pow, divide. */
static void lrn_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *x = fa_graph_in(g, n, 0);
    if (!x || fa_tensor_numel(x) < 0) return;
    int64_t size = fa_node_attr_int(n, "size", 1); /* within 2^48 (lrn_infer) */
    out->flops = fa_u64_mul_sat((uint64_t)fa_tensor_numel(x), 2 * (uint64_t)(size > 0 ? size : 0) + 4);
}

/* y = x / (bias + alpha/size * sum_{c' in [c - floor((size-1)/2), c + ceil((size-1)/2)]} x[c']^2)^beta
 * (ONNX LRN spec). */
static fa_status lrn_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                            fa_value *out, int n_out, int threads)
{
    int64_t size = fa_node_attr_int(n, "size", 1);
    double alpha = fa_node_attr_float(n, "alpha", 1e-4f), beta = fa_node_attr_float(n, "beta", 0.75f);
    double bias = fa_node_attr_float(n, "bias", 1.0f);
    float *tx, *ty;
    const float *X = in_f32(&in[0], &tx);
    float *Y = out_f32(&out[0], &ty);
    if (!X || !Y) { free(tx); free(ty); return oom(ctx, n); }
    int64_t N = in[0].dims[0], C = in[0].dims[1], sp = prod64(in[0].dims + 2, in[0].rank - 2);
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
#pragma omp parallel for num_threads(nthreads(threads))
    for (int64_t nc = 0; nc < N * C; nc++) {
        int64_t b = nc / C, c = nc % C;
        int64_t c0 = c - lo < 0 ? 0 : c - lo, c1 = c + hi >= C ? C - 1 : c + hi;
        for (int64_t i = 0; i < sp; i++) {
            double ss = 0;
            for (int64_t k = c0; k <= c1; k++) {
                double v = X[(b * C + k) * sp + i];
                ss += v * v;
            }
            Y[nc * sp + i] = (float)(X[nc * sp + i] / pow(bias + alpha / (double)size * ss, beta));
        }
    }
    free(tx);
    out_f32_done(&out[0], ty);
    return FA_OK;
}

/* ================================ InstanceNormalization ================================ */

static fa_status inorm_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    if (x->rank < 3) return fa_node_error(ctx, n, "input X must have rank >= 3, has rank %d", x->rank);
    for (int i = 1; i <= 2; i++) {
        fa_tensor *p = fa_req_input(ctx, g, n, i);
        if (!p) return fa_ctx_status(ctx);
        if (p->rank != 1 || (p->dims[0] >= 0 && x->dims[1] >= 0 && p->dims[0] != x->dims[1]))
            return fa_node_error(ctx, n, "input %d '%s' must be 1-D with C=%lld values", i, p->name, (long long)x->dims[1]);
    }
    fa_set_out(g, n, 0, x->dtype, x->rank, x->dims);
    return FA_OK;
}

/* InstanceNormalization FLOPs = 7 * numel(X): mean (1 add), variance (sub, square, add),
 * normalize (sub, mul by rstd, scale+bias FMA counted 2) — plus a sqrt per plane, ignored. */
static void inorm_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out) { fa_cost_io(g, n, 7, out); }

/* y = scale[c] * (x - mean_nc) / sqrt(var_nc + epsilon) + B[c], population variance over the
 * spatial dims of each (n, c) plane; double accumulation. */
static fa_status inorm_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                              fa_value *out, int n_out, int threads)
{
    double eps = fa_node_attr_float(n, "epsilon", 1e-5f);
    float *tx, *ts, *tb, *ty;
    const float *X = in_f32(&in[0], &tx), *S = in_f32(&in[1], &ts), *B = in_f32(&in[2], &tb);
    float *Y = out_f32(&out[0], &ty);
    if (!X || !S || !B || !Y) { free(tx); free(ts); free(tb); free(ty); return oom(ctx, n); }
    int64_t N = in[0].dims[0], C = in[0].dims[1], sp = prod64(in[0].dims + 2, in[0].rank - 2);
    bool v512 = fa_vmath512_available();
#pragma omp parallel for num_threads(nthreads(threads))
    for (int64_t nc = 0; nc < N * C; nc++) {
        int64_t c = nc % C;
        const float *xp = X + nc * sp;
        if (v512) { /* the same double arithmetic on 8 lanes: wav2vec2's GroupNorm(64, 64) on 64 x 3199 */
            fa_vmath512_norm_plane(xp, Y + nc * sp, sp, S[c], B[c], eps);
            continue;
        }
        double mean = 0, var = 0;
        for (int64_t i = 0; i < sp; i++) mean += xp[i];
        mean = sp ? mean / (double)sp : 0;
        for (int64_t i = 0; i < sp; i++) var += (xp[i] - mean) * (xp[i] - mean);
        var = sp ? var / (double)sp : 0;
        double k = S[c] / sqrt(var + eps);
        for (int64_t i = 0; i < sp; i++) Y[nc * sp + i] = (float)((xp[i] - mean) * k + B[c]);
    }
    free(tx); free(ts); free(tb);
    out_f32_done(&out[0], ty);
    return FA_OK;
}

/* ================================= BatchNormalization ================================= */

/* Training mode: opset >= 14 training_mode=1; opset < 14 the presence of the optional
 * outputs beyond Y (opset < 7 also is_test=0), per the spec's "output case #1". */
static bool bn_training(const fa_node *n)
{
    int os = opset_of(n);
    if (os >= 14) return fa_node_attr_int(n, "training_mode", 0) != 0;
    bool extra = false;
    for (int i = 1; i < n->n_outputs; i++) extra |= n->outputs[i] >= 0;
    if (os < 7 && fa_node_attr_int(n, "is_test", 0) != 0) return false;
    return extra;
}

static fa_status bn_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    if (x->rank < 2) return fa_node_error(ctx, n, "input X must have rank >= 2, has rank %d", x->rank);
    fa_status st = need_float(ctx, n, x, 0);
    if (st) return st;
    int64_t C = x->dims[1], per_act = prod64(x->dims + 1, x->rank - 1);
    const fa_tensor *p1 = NULL;
    for (int i = 1; i <= 4; i++) {
        fa_tensor *p = fa_req_input(ctx, g, n, i);
        if (!p) return fa_ctx_status(ctx);
        int64_t ne = fa_tensor_numel(p);
        if (C >= 0 && ne >= 0 && ne != C && !(ne == per_act && per_act > 0))
            return fa_node_error(ctx, n, "input %d '%s' has %lld values, expected C=%lld", i, p->name,
                                 (long long)ne, (long long)C);
        if (i == 1) p1 = p;
    }
    if (bn_training(n) && fa_tensor_numel(p1) != C && C >= 0)
        return fa_node_unsupported(ctx, n, "training mode with per-activation (spatial=0) parameters");
    fa_set_out(g, n, 0, x->dtype, x->rank, x->dims);
    /* outputs 1..4: running mean, running var, saved mean, saved var — all shaped like mean */
    for (int i = 1; i < n->n_outputs && i < 5; i++) {
        fa_tensor *m = fa_graph_in(g, n, i <= 2 ? i + 2 : 3);
        fa_set_out(g, n, i, m->dtype, m->rank, m->dims);
    }
    return FA_OK;
}

/* BatchNormalization FLOPs: inference 4 * numel(X) ((x - mean) * rstd * scale + B);
 * training adds 3 * numel(X) for the batch mean and variance. */
static void bn_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, bn_training(n) ? 7 : 4, out);
}

/* Inference: y = (x - mean) / sqrt(var + eps) * scale + B per channel (or per activation
 * for opset < 9 spatial=0 parameters). Training (onnx/reference/ops/op_batch_normalization):
 * batch mean/variance (population) over all axes but 1, y uses them, and
 * running_mean = mean * momentum + batch_mean * (1 - momentum), running_var likewise;
 * opset < 14 training outputs saved_mean / saved_var are the batch mean and variance. */
static fa_status bn_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                           fa_value *out, int n_out, int threads)
{
    double eps = fa_node_attr_float(n, "epsilon", 1e-5f);
    double mom = fa_node_attr_float(n, "momentum", 0.9f);
    bool train = bn_training(n);
    float *tx, *tp[4] = {0}, *ty;
    const float *X = in_f32(&in[0], &tx), *P[4];
    bool bad = !X;
    for (int i = 0; i < 4; i++) {
        P[i] = in_f32(&in[i + 1], &tp[i]);
        bad |= !P[i];
    }
    float *Y = out_f32(&out[0], &ty);
    if (bad || !Y) {
        free(tx); free(ty);
        for (int i = 0; i < 4; i++) free(tp[i]);
        return oom(ctx, n);
    }
    int64_t N = in[0].dims[0], C = in[0].dims[1], sp = prod64(in[0].dims + 2, in[0].rank - 2);
    int64_t pn = fa_value_numel(&in[1]);
    bool per_act = pn != C; /* spatial=0 (opset < 9): parameters per (c, spatial) */
    double *bm = NULL, *bv = NULL;
    if (train) {
        bm = calloc((size_t)(C ? C : 1), sizeof(double));
        bv = calloc((size_t)(C ? C : 1), sizeof(double));
        if (!bm || !bv) {
            free(bm); free(bv); free(tx); free(ty);
            for (int i = 0; i < 4; i++) free(tp[i]);
            return oom(ctx, n);
        }
        int64_t cnt = N * sp;
#pragma omp parallel for num_threads(nthreads(threads))
        for (int64_t c = 0; c < C; c++) {
            double s = 0, v = 0;
            for (int64_t b = 0; b < N; b++)
                for (int64_t i = 0; i < sp; i++) s += X[(b * C + c) * sp + i];
            s = cnt ? s / (double)cnt : 0;
            for (int64_t b = 0; b < N; b++)
                for (int64_t i = 0; i < sp; i++) {
                    double d = X[(b * C + c) * sp + i] - s;
                    v += d * d;
                }
            bm[c] = s;
            bv[c] = cnt ? v / (double)cnt : 0;
        }
    }
    /* per parameter: y = (x - mean) * k + B with k = scale / sqrt(var + eps) */
    double *kk = malloc(sizeof(double) * (size_t)(pn ? pn : 1)), *mu = malloc(sizeof(double) * (size_t)(pn ? pn : 1));
    if (!kk || !mu) {
        free(kk); free(mu); free(bm); free(bv); free(tx); free(ty);
        for (int i = 0; i < 4; i++) free(tp[i]);
        return oom(ctx, n);
    }
    for (int64_t q = 0; q < pn; q++) {
        int64_t c = per_act ? q / (sp ? sp : 1) : q;
        mu[q] = train ? bm[c] : P[2][q];
        kk[q] = P[0][q] / sqrt((train ? bv[c] : P[3][q]) + eps);
    }
    /* one value per channel (BatchNorm1d over [N, C] after a Linear: LeViT's 58 of them, 196 x
     * 256): the same float arithmetic a row of channels at a time, the per-channel constants in
     * float arrays (a row of one element per (n, c) ran at 0.7 ns an element, 3.8x ONNX
     * Runtime's) */
    float *cf = !per_act && sp == 1 && C > 0 ? malloc(sizeof(float) * 3 * (size_t)C) : NULL;
    if (cf) {
        float *mf = cf, *kf = cf + C, *bf = cf + 2 * C;
        for (int64_t c = 0; c < C; c++) {
            mf[c] = (float)mu[c];
            kf[c] = (float)kk[c];
            bf[c] = P[1][c];
        }
#pragma omp parallel for num_threads(nthreads(N * C >= 65536 ? threads : 1))
        for (int64_t b = 0; b < N; b++) {
            const float *xp = X + b * C;
            float *yp = Y + b * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) yp[c] = (xp[c] - mf[c]) * kf[c] + bf[c];
        }
        free(cf);
    } else
#pragma omp parallel for num_threads(nthreads(threads))
    for (int64_t nc = 0; nc < N * C; nc++) {
        int64_t c = nc % C;
        const float *xp = X + nc * sp;
        float *yp = Y + nc * sp;
        if (per_act)
            for (int64_t i = 0; i < sp; i++) {
                int64_t q = c * sp + i;
                yp[i] = (float)(((double)xp[i] - mu[q]) * kk[q] + P[1][q]);
            }
        else {
            /* float arithmetic per element, (x - mean) * k + B with k computed in double once per
             * channel: 8 float lanes instead of 4 double ones (the unfused baseline's BN was 1.6x
             * ONNX Runtime's on ResNet-50). Subtracting the mean first keeps the result's error
             * a few float ulps of itself, with no cancellation against a large shift. */
            const float m = (float)mu[c], k = (float)kk[c], b = P[1][c];
#pragma omp simd
            for (int64_t i = 0; i < sp; i++) yp[i] = (xp[i] - m) * k + b;
        }
    }
    free(kk);
    free(mu);
    for (int o = 1; o < n_out && o < 5; o++) {
        if (!out[o].data) continue;
        int64_t ne = fa_value_numel(&out[o]);
        for (int64_t c = 0; c < ne; c++) {
            double v;
            if (o <= 2) { /* running mean / var */
                double in_v = P[o + 1][c];
                v = train && c < C ? in_v * mom + (o == 1 ? bm[c] : bv[c]) * (1.0 - mom) : in_v;
            } else v = train && c < C ? (o == 3 ? bm[c] : bv[c]) : P[o - 1][c];
            fa_store_from_double(out[o].data, out[o].dtype, c, v);
        }
    }
    free(bm); free(bv); free(tx);
    for (int i = 0; i < 4; i++) free(tp[i]);
    out_f32_done(&out[0], ty);
    return FA_OK;
}

/* ================================= Resize / Upsample ================================= */

enum { RZ_NEAREST, RZ_LINEAR, RZ_CUBIC };
enum { CT_HALF_PIXEL, CT_HALF_PIXEL_SYM, CT_PYTORCH_HALF_PIXEL, CT_ALIGN_CORNERS, CT_ASYMMETRIC, CT_TF_CROP };
enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE };

typedef struct rz_params {
    int mode, ctm, nearest;
    double cubic_a, extrap;
    bool exclude_outside;
    int rank;
    int64_t in[FA_MAX_RANK], out[FA_MAX_RANK];
    double scale[FA_MAX_RANK];   /* per axis, used by the coordinate transform */
    double outf[FA_MAX_RANK];    /* scale * in: the unrounded output length (reference's output_width) */
    double roi_s[FA_MAX_RANK], roi_e[FA_MAX_RANK];
} rz_params;

static int str_pick(const char *s, const char *const *names, int cnt)
{
    for (int i = 0; i < cnt; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

/* Parse mode attributes of a Resize (opset 10+) or Upsample node. */
static fa_status rz_attrs(fa_ctx *ctx, const fa_node *n, rz_params *p)
{
    bool up = strcmp(n->op_type, "Upsample") == 0;
    int os = opset_of(n);
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    const char *m = fa_node_attr_string(n, "mode", "nearest");
    p->mode = str_pick(m, modes, 3);
    if (p->mode < 0 && (strcmp(m, "bilinear") == 0 || strcmp(m, "trilinear") == 0)) p->mode = RZ_LINEAR;
    if (p->mode < 0 || (up && p->mode == RZ_CUBIC)) return fa_node_error(ctx, n, "unknown mode '%s'", m);
    if (up || os < 11) {
        /* Upsample and Resize-10: x_original = x_resized / scale; nearest floors when upsampling
         * and ceils when downsampling (ONNX Runtime's "simple" mode, which reproduces the opset-10
         * backend tests: upsample x3 repeats, downsample 4 -> 2 at scale 0.6 picks [0, 2]) */
        p->ctm = CT_ASYMMETRIC;
        p->nearest = NM_SIMPLE;
    } else {
        static const char *const ctms[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                           "align_corners", "asymmetric", "tf_crop_and_resize"};
        static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
        const char *c = fa_node_attr_string(n, "coordinate_transformation_mode", "half_pixel");
        const char *nm = fa_node_attr_string(n, "nearest_mode", "round_prefer_floor");
        if ((p->ctm = str_pick(c, ctms, 6)) < 0)
            return strcmp(c, "tf_half_pixel_for_nn") == 0
                       ? fa_node_unsupported(ctx, n, "coordinate_transformation_mode 'tf_half_pixel_for_nn'")
                       : fa_node_error(ctx, n, "unknown coordinate_transformation_mode '%s'", c);
        if ((p->nearest = str_pick(nm, nms, 4)) < 0) return fa_node_error(ctx, n, "unknown nearest_mode '%s'", nm);
    }
    p->cubic_a = fa_node_attr_float(n, "cubic_coeff_a", -0.75f);
    p->extrap = fa_node_attr_float(n, "extrapolation_value", 0.0f);
    p->exclude_outside = fa_node_attr_int(n, "exclude_outside", 0) != 0;
    if (fa_node_attr_int(n, "antialias", 0) != 0 && p->mode != RZ_NEAREST)
        return fa_node_unsupported(ctx, n, "antialias=1 is not implemented");
    return FA_OK;
}

/* Output shape and per-axis scales (onnx/reference/ops/op_resize):
 *   scales given: out = floor(in * scale), transform uses the given scale;
 *   sizes given:  out = sizes, scale = out / in; with keep_aspect_ratio_policy not_larger /
 *                 not_smaller one scale (min / max of out/in) for all listed axes and
 *                 out = round(in * scale) (half away from zero).
 * opset 18 `axes` names the axes the scales/sizes/roi refer to. fscales/sizes/roi may be NULL. */
static fa_status rz_shape(fa_ctx *ctx, const fa_node *n, int rank, const int64_t *in,
                          const float *fscales, int nscales, const int64_t *sizes, int nsizes,
                          const double *roi, int nroi, rz_params *p)
{
    p->rank = rank;
    int ax[FA_MAX_RANK];
    const int64_t *axv;
    int nax = fa_node_attr_ints(n, "axes", &axv);
    if (nax > rank) return fa_node_error(ctx, n, "axes has %d values for rank %d", nax, rank);
    if (nax > 0)
        for (int i = 0; i < nax; i++) {
            if ((ax[i] = fa_norm_axis(ctx, n, axv[i], rank)) < 0) return fa_ctx_status(ctx);
        }
    else {
        nax = rank;
        for (int i = 0; i < rank; i++) ax[i] = i;
    }
    for (int i = 0; i < rank; i++) {
        p->in[i] = p->out[i] = in[i];
        p->scale[i] = 1.0;
        p->outf[i] = (double)in[i];
        p->roi_s[i] = 0.0;
        p->roi_e[i] = 1.0;
    }
    if (nroi == 2 * nax && roi)
        for (int i = 0; i < nax; i++) {
            p->roi_s[ax[i]] = roi[i];
            p->roi_e[ax[i]] = roi[i + nax];
        }
    if (nsizes > 0) {
        if (nsizes != nax) return fa_node_error(ctx, n, "sizes has %d values, expected %d", nsizes, nax);
        const char *pol = fa_node_attr_string(n, "keep_aspect_ratio_policy", "stretch");
        bool nl = strcmp(pol, "not_larger") == 0, ns = strcmp(pol, "not_smaller") == 0;
        if (!nl && !ns && strcmp(pol, "stretch") != 0)
            return fa_node_error(ctx, n, "unknown keep_aspect_ratio_policy '%s'", pol);
        double common = nl ? INFINITY : 0.0;
        for (int i = 0; i < nax; i++) {
            if (sizes[i] < 0) return fa_node_error(ctx, n, "sizes[%d] = %lld is negative", i, (long long)sizes[i]);
            double r = in[ax[i]] > 0 ? (double)sizes[i] / (double)in[ax[i]] : 1.0;
            common = nl ? fmin(common, r) : fmax(common, r);
            p->out[ax[i]] = sizes[i];
            p->scale[ax[i]] = r;
            p->outf[ax[i]] = (double)sizes[i];
        }
        if (nl || ns)
            for (int i = 0; i < nax; i++) {
                p->scale[ax[i]] = common;
                p->outf[ax[i]] = common * (double)in[ax[i]];
                char what[48];
                snprintf(what, sizeof what, "output dim %d (sizes, keep_aspect_ratio_policy)", ax[i]);
                fa_status st = fa_dim_from_double(ctx, n, what, floor(common * (double)in[ax[i]] + 0.5), &p->out[ax[i]]);
                if (st) return st;
            }
    } else if (nscales > 0) {
        if (nscales != nax) return fa_node_error(ctx, n, "scales has %d values, expected %d", nscales, nax);
        for (int i = 0; i < nax; i++) {
            if (!(fscales[i] > 0)) return fa_node_error(ctx, n, "scales[%d] = %g must be > 0", i, fscales[i]);
            /* spec: floor(in * (roi_end - roi_start) * scale); roi only counts for tf_crop_and_resize */
            double span = p->ctm == CT_TF_CROP ? p->roi_e[ax[i]] - p->roi_s[ax[i]] : 1.0;
            p->scale[ax[i]] = fscales[i];
            p->outf[ax[i]] = (double)fscales[i] * (double)in[ax[i]];
            p->out[ax[i]] = -1;
            char what[48];
            snprintf(what, sizeof what, "output dim %d (scales[%d] x input dim)", ax[i], i);
            fa_status st = in[ax[i]] < 0 ? FA_OK
                                         : fa_dim_from_double(ctx, n, what, floor((double)fscales[i] * (double)in[ax[i]] * span),
                                                              &p->out[ax[i]]);
            if (st) return st;
        }
    } else return fa_node_error(ctx, n, "neither scales nor sizes is given");
    return FA_OK;
}

/* Input positions of scales / sizes / roi for this node's opset. */
static void rz_slots(const fa_node *n, int *roi, int *scales, int *sizes)
{
    bool up = strcmp(n->op_type, "Upsample") == 0;
    if (up || opset_of(n) < 11) { *roi = -1; *scales = 1; *sizes = -1; }
    else { *roi = 1; *scales = 2; *sizes = 3; }
}

static fa_status rz_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    rz_params p;
    fa_status st = rz_attrs(ctx, n, &p);
    if (st) return st;
    int iroi, isc, isz;
    rz_slots(n, &iroi, &isc, &isz);
    float fs[FA_MAX_RANK];
    int nfs = 0, nsz = 0, nroi = 0;
    int64_t sz[FA_MAX_RANK];
    double roi[2 * FA_MAX_RANK];
    const fa_attr *sa = fa_node_attr(n, "scales");
    if (sa && sa->type == FA_ATTR_FLOATS) { /* Upsample-7 */
        if (sa->n > FA_MAX_RANK) return fa_node_error(ctx, n, "too many scales");
        nfs = sa->n;
        memcpy(fs, sa->floats, sizeof(float) * (size_t)nfs);
    }
    fa_tensor *ts = isc >= 0 ? fa_graph_in(g, n, isc) : NULL;
    fa_tensor *tz = isz >= 0 ? fa_graph_in(g, n, isz) : NULL;
    fa_tensor *tr = iroi >= 0 ? fa_graph_in(g, n, iroi) : NULL;
    if (tz && fa_tensor_numel(tz) != 0) {
        if ((st = fa_const_ints(ctx, g, n, isz, sz, FA_MAX_RANK, &nsz))) return st;
    } else if (ts && fa_tensor_numel(ts) != 0) {
        if (!fa_input_is_const(g, n, isc))
            return fa_node_unsupported(ctx, n, "scales input '%s' must be a constant (computed at run time is not supported)", ts->name);
        int64_t ne = (int64_t)(ts->nbytes / (fa_dtype_size(ts->dtype) ? fa_dtype_size(ts->dtype) : 1));
        if (ne > FA_MAX_RANK) return fa_node_error(ctx, n, "too many scales");
        nfs = (int)ne;
        for (int i = 0; i < nfs; i++) fs[i] = (float)fa_load_as_double(ts->data, ts->dtype, i);
    }
    if (tr && fa_input_is_const(g, n, iroi)) {
        int64_t ne = (int64_t)(tr->nbytes / (fa_dtype_size(tr->dtype) ? fa_dtype_size(tr->dtype) : 1));
        if (ne <= 2 * FA_MAX_RANK) {
            nroi = (int)ne;
            for (int i = 0; i < nroi; i++) roi[i] = fa_load_as_double(tr->data, tr->dtype, i);
        }
    }
    if ((st = rz_shape(ctx, n, x->rank, x->dims, fs, nfs, sz, nsz, roi, nroi, &p))) return st;
    fa_set_out(g, n, 0, x->dtype, x->rank, p.out);
    return FA_OK;
}

/* Resize FLOPs = numel(Y) * 2 * taps, taps = 2^(resized axes) for linear, 4^(resized axes)
 * for cubic, 0 for nearest (a pure gather). */
static void rz_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *x = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0);
    const char *m = fa_node_attr_string(n, "mode", "nearest");
    if (!x || !y || fa_tensor_numel(y) < 0 || strcmp(m, "nearest") == 0) return;
    uint64_t taps = 1, per = strcmp(m, "cubic") == 0 ? 4 : 2;
    for (int i = 0; i < x->rank && i < y->rank; i++)
        if (x->dims[i] != y->dims[i]) taps *= per;
    out->flops = fa_u64_mul_sat(2 * (uint64_t)fa_tensor_numel(y), taps);
}

/* x_original for output coordinate xo along one axis (ONNX Resize coordinate_transformation_mode).
 * align_corners divides by the unrounded output length scale * in, as the reference does (onnx/reference/ops/op_resize.py `output_width`): with scales that do not
 * divide the input evenly (downsampling 4 -> floor(2.4) = 2) it differs from the rounded one. */
static double rz_coord(const rz_params *p, int a, int64_t xo, bool *outside)
{
    double s = p->scale[a], in = (double)p->in[a], out = (double)p->out[a], x = (double)xo;
    double outf = p->outf[a];
    *outside = false;
    switch (p->ctm) {
    case CT_HALF_PIXEL: return (x + 0.5) / s - 0.5;
    case CT_HALF_PIXEL_SYM: {
        double adj = out / (s * in), center = in / 2.0, off = center * (1.0 - adj);
        return off + (x + 0.5) / s - 0.5;
    }
    case CT_PYTORCH_HALF_PIXEL: return out > 1 ? (x + 0.5) / s - 0.5 : 0.0;
    case CT_ALIGN_CORNERS: return outf == 1 ? 0.0 : x * (in - 1) / (outf - 1);
    case CT_ASYMMETRIC: return x / s;
    default: { /* tf_crop_and_resize */
        double rs = p->roi_s[a], re = p->roi_e[a], v;
        v = out > 1 ? rs * (in - 1) + x * (re - rs) * (in - 1) / (out - 1) : 0.5 * (rs + re) * (in - 1);
        if (v < 0 || v > in - 1) *outside = true;
        return v;
    }
    }
}

/* The integer tap at or below coordinate x (already floored or rounded), for Resize and
 * GridSample: coordinates come from a model's scales and grids, so x may be huge, infinite or
 * NaN. Clamped to +-2^62 (every tap is clamped or reflected to the tensor afterwards; the margin
 * leaves room for the cubic kernel's x0 - 1 .. x0 + 2 without overflow), NaN -> 0. */
static int64_t tap_index(double x)
{
    return fa_f64_to_i64_sat(x < -0x1p62 ? -0x1p62 : x > 0x1p62 ? 0x1p62 : x);
}

static int64_t rz_nearest(int mode, double x)
{
    double f = floor(x);
    switch (mode) {
    case NM_ROUND_PREFER_FLOOR: return tap_index(x - f == 0.5 ? f : round(x));
    case NM_ROUND_PREFER_CEIL: return tap_index(x - f == 0.5 ? f + 1 : round(x));
    case NM_FLOOR: return tap_index(f);
    default: return tap_index(ceil(x));
    }
}

/* Per-axis taps: for output coordinate o, cnt[o] taps (index, weight); outside[o] marks a
 * tf_crop_and_resize coordinate outside the input (gets extrapolation_value). */
typedef struct rz_axis {
    int taps;
    int64_t *idx;
    double *w;
    unsigned char *outside;
} rz_axis;

static bool rz_axis_build(const rz_params *p, int a, rz_axis *ax)
{
    int64_t no = p->out[a], ni = p->in[a];
    bool identity = no == ni && p->scale[a] == 1.0 && p->ctm != CT_TF_CROP;
    ax->taps = identity || p->mode == RZ_NEAREST ? 1 : p->mode == RZ_LINEAR ? 2 : 4;
    size_t cnt = (size_t)(no ? no : 1) * (size_t)ax->taps;
    ax->idx = malloc(sizeof(int64_t) * cnt);
    ax->w = malloc(sizeof(double) * cnt);
    ax->outside = calloc((size_t)(no ? no : 1), 1);
    if (!ax->idx || !ax->w || !ax->outside) return false;
    for (int64_t o = 0; o < no; o++) {
        int64_t *ix = ax->idx + o * ax->taps;
        double *w = ax->w + o * ax->taps;
        if (identity) { ix[0] = o; w[0] = 1; continue; }
        bool outside;
        double x = rz_coord(p, a, o, &outside);
        ax->outside[o] = outside;
        if (p->mode == RZ_NEAREST) {
            int mode = p->nearest == NM_SIMPLE ? (p->scale[a] < 1.0 ? NM_CEIL : NM_FLOOR) : p->nearest;
            int64_t i = rz_nearest(mode, x);
            ix[0] = i < 0 ? 0 : i >= ni ? ni - 1 : i;
            w[0] = 1;
            continue;
        }
        double f = floor(x), r = x - f;
        int64_t x0 = tap_index(f);
        if (p->mode == RZ_LINEAR) {
            ix[0] = x0; ix[1] = x0 + 1;
            w[0] = 1 - r; w[1] = r;
        } else { /* cubic, Keys kernel with coefficient A (onnx reference _cubic_coeffs) */
            double A = p->cubic_a, q = 1 - r;
            ix[0] = x0 - 1; ix[1] = x0; ix[2] = x0 + 1; ix[3] = x0 + 2;
            w[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
            w[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
            w[2] = ((A + 2) * q - (A + 3)) * q * q + 1;
            w[3] = ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A;
        }
        if (p->exclude_outside) {
            double sum = 0;
            for (int t = 0; t < ax->taps; t++) {
                if (ix[t] < 0 || ix[t] >= ni) w[t] = 0;
                sum += w[t];
            }
            if (sum != 0)
                for (int t = 0; t < ax->taps; t++) w[t] /= sum;
        }
        for (int t = 0; t < ax->taps; t++) ix[t] = ix[t] < 0 ? 0 : ix[t] >= ni ? ni - 1 : ix[t]; /* edge */
    }
    return true;
}

/* Store v into integer output element o as the ONNX reference's saturate_cast does: round
 * half to even, clamp to the type's range (NaN gives 0). */
static void store_saturated(fa_value *y, int64_t o, double v)
{
    if (y->dtype == FA_DTYPE_BOOL) ((uint8_t *)y->data)[o] = v != 0.0;
    else fa_store_clamped_int(y->data, y->dtype, o, nearbyint(v));
}

/* Float32 Resize a row of the last axis at a time, the same arithmetic as rz_kernel's general
 * loop (bit for bit: the same products in the same order, the same double accumulation and skip
 * of zero weights) with what does not change along the row hoisted: the outer axes' taps are
 * walked once per row into (weight product, input offset) pairs, and nearest copies floats
 * through the last axis' index table — or, where a row reads the same input row as the row before
 * it (an upsampling by 2 reads each twice), copies that output row. The general loop walked every axis' taps per element
 * (an odometer over all of them): an upsampling Resize, as in a segmentation or detection head,
 * paid that for every output element. Only where no coordinate falls outside (not
 * tf_crop_and_resize). */
static void rz_rows_f32(const rz_params *p, const rz_axis *ax, const int64_t *istr, const float *X, float *Y, int64_t rows,
                        int64_t inner, int threads)
{
    const int R = p->rank;
    const rz_axis *al = &ax[R - 1];
    int outer_taps = 1;
    for (int a = 0; a < R - 1; a++) outer_taps *= ax[a].taps;
#pragma omp parallel num_threads(nthreads(threads))
    {
        double *wo = malloc(sizeof(double) * (size_t)outer_taps);
        int64_t *bo = malloc(sizeof(int64_t) * (size_t)outer_taps);
        int64_t last_row = -2, last_base = -1; /* nearest: this thread's previous row and its input row */
#pragma omp for schedule(static)
        for (int64_t row = 0; row < rows; row++) {
            if (!wo || !bo) continue; /* out of memory: rows left as they are (never in practice: a few taps) */
            int64_t oc[FA_MAX_RANK], rem = row;
            for (int a = R - 2; a >= 0; a--) { oc[a] = rem % p->out[a]; rem /= p->out[a]; }
            /* the outer axes' taps, in the general loop's order (axis R-2 fastest) */
            int t[FA_MAX_RANK] = {0}, n = 0;
            for (;;) {
                double w = 1;
                int64_t off = 0;
                for (int a = 0; a < R - 1; a++) {
                    int64_t k = oc[a] * ax[a].taps + t[a];
                    w *= ax[a].w[k];
                    off += ax[a].idx[k] * istr[a];
                }
                wo[n] = w;
                bo[n++] = off;
                int a = R - 2;
                while (a >= 0 && ++t[a] == ax[a].taps) t[a--] = 0;
                if (a < 0) break;
            }
            float *y = Y + row * inner;
            if (p->mode == RZ_NEAREST) { /* one tap per axis, weight 1: a gather along the row */
                if (row == last_row + 1 && bo[0] == last_base) /* the same input row as the row before: a copy of it */
                    memcpy(y, y - inner, sizeof(float) * (size_t)inner);
                else {
                    const float *x = X + bo[0];
                    for (int64_t j = 0; j < inner; j++) y[j] = x[al->idx[j] * istr[R - 1]];
                }
                last_row = row;
                last_base = bo[0];
                continue;
            }
            for (int64_t j = 0; j < inner; j++) {
                double acc = 0;
                for (int q = 0; q < n; q++)
                    for (int tl = 0; tl < al->taps; tl++) {
                        int64_t k = j * al->taps + tl;
                        double w = wo[q] * al->w[k];
                        if (w != 0) acc += w * (double)X[bo[q] + al->idx[k] * istr[R - 1]];
                    }
                y[j] = (float)acc;
            }
        }
        free(wo);
        free(bo);
    }
}

/* Float32 linear or cubic Resize of the last two axes of [..., H, W] planes (every leading axis
 * unresized), separably: each input row a band of output rows reads is interpolated along W once
 * into a row buffer (its taps with a zero weight skipped, as the general loop skips them), and each
 * output row is the weighted sum of its input rows' buffers along H (rows of weight 0 skipped):
 * per output element Th multiply-adds over contiguous floats instead of Th x Tw gathers in double
 * (LR-ASPP's two upsamplings to [1, 21, 224, 224]: 1.77 ms through rz_rows_f32, 0.57 ms this way,
 * ONNX Runtime's 0.68-0.75 ms; bench/ort_kernels.py). float accumulation, as ONNX Runtime's upsample (onnxruntime/core/providers/cpu/tensor/
 * upsample.cc): the results differ from the double path by rounding only. Work is split into
 * bands of up to RZ_BAND output rows of one plane; a band keeps its last Th + 1 input rows' buffers. */
#define RZ_BAND 32
static bool rz_planes_f32(const rz_params *p, const rz_axis *ax, const float *X, float *Y, int threads)
{
    const int R = p->rank;
    const rz_axis *ah = &ax[R - 2], *aw = &ax[R - 1];
    const int64_t Hi = p->in[R - 2], Wi = p->in[R - 1], Ho = p->out[R - 2], Wo = p->out[R - 1];
    const int Th = ah->taps, Tw = aw->taps, K = Th + 1;
    int64_t planes = 1;
    for (int a = 0; a < R - 2; a++) planes *= p->out[a];
    if (Ho <= 0 || Wo <= 0 || planes <= 0) return true;
    /* the W taps with a nonzero weight, per output column */
    unsigned char *cnt = malloc((size_t)Wo);
    int64_t *cidx = malloc(sizeof(int64_t) * (size_t)(Wo * Tw));
    float *cw = malloc(sizeof(float) * (size_t)(Wo * Tw));
    if (!cnt || !cidx || !cw) {
        free(cnt), free(cidx), free(cw);
        return false;
    }
    for (int64_t j = 0; j < Wo; j++) {
        int c = 0;
        for (int t = 0; t < Tw; t++) {
            double w = aw->w[j * Tw + t];
            if (w == 0) continue;
            cidx[j * Tw + c] = aw->idx[j * Tw + t];
            cw[j * Tw + c++] = (float)w;
        }
        cnt[j] = (unsigned char)c;
    }
    const int64_t nb = (Ho + RZ_BAND - 1) / RZ_BAND;
    bool ok = true;
#pragma omp parallel num_threads(nthreads(threads))
    {
        float *buf = malloc(sizeof(float) * (size_t)(K * Wo));
        int64_t tag[8]; /* Th + 1 <= 5: cubic */
        int64_t last_plane = -1;
        if (!buf) {
#pragma omp atomic write
            ok = false;
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < planes * nb; b++) {
            if (!buf) continue;
            int64_t pl = b / nb, o0 = (b % nb) * RZ_BAND, o1 = o0 + RZ_BAND < Ho ? o0 + RZ_BAND : Ho;
            if (pl != last_plane || o0 == 0) {
                for (int k = 0; k < K; k++) tag[k] = -1;
                last_plane = pl;
            }
            const float *xp = X + pl * Hi * Wi;
            for (int64_t oh = o0; oh < o1; oh++) {
                const float *rows[5];
                float wts[5];
                int n = 0;
                unsigned used = 0; /* slots this output row reads: never the victim */
                for (int t = 0; t < Th; t++) {
                    double wh = ah->w[oh * Th + t];
                    if (wh == 0) continue;
                    int64_t ih = ah->idx[oh * Th + t];
                    int slot = -1, victim = -1;
                    for (int k = 0; k < K; k++) {
                        if (tag[k] == ih) slot = k;
                        if (!(used >> k & 1) && (victim < 0 || tag[k] < tag[victim])) victim = k;
                    }
                    if (slot < 0) { /* interpolate input row ih along W into the oldest buffer */
                        slot = victim;
                        tag[slot] = ih;
                        float *h = buf + (int64_t)slot * Wo;
                        const float *x = xp + ih * Wi;
                        for (int64_t j = 0; j < Wo; j++) {
                            float acc = 0;
                            for (int c = 0; c < cnt[j]; c++) acc += cw[j * Tw + c] * x[cidx[j * Tw + c]];
                            h[j] = acc;
                        }
                    }
                    used |= 1u << slot;
                    rows[n] = buf + (int64_t)slot * Wo;
                    wts[n++] = (float)wh;
                }
                float *y = Y + (pl * Ho + oh) * Wo;
                if (n == 0) {
                    memset(y, 0, sizeof(float) * (size_t)Wo);
                    continue;
                }
                const float *r0 = rows[0];
                float w0 = wts[0];
                for (int64_t j = 0; j < Wo; j++) y[j] = w0 * r0[j];
                for (int q = 1; q < n; q++) {
                    const float *r = rows[q];
                    float w = wts[q];
                    for (int64_t j = 0; j < Wo; j++) y[j] += w * r[j];
                }
            }
        }
        free(buf);
    }
    free(cnt), free(cidx), free(cw);
    return ok;
}

/* Reference Resize: separable per-axis taps (nearest 1, linear 2, cubic 4), product over axes
 * with double accumulation; parallel over the outer output rows. Integer outputs are rounded
 * half to even and saturated (the reference's saturate_cast); nearest copies them exactly. */
static fa_status rz_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                           fa_value *out, int n_out, int threads)
{
    rz_params p;
    fa_status st = rz_attrs(ctx, n, &p);
    if (st) return st;
    int iroi, isc, isz;
    rz_slots(n, &iroi, &isc, &isz);
    float fs[FA_MAX_RANK];
    int64_t sz[FA_MAX_RANK];
    double roi[2 * FA_MAX_RANK];
    int nfs = 0, nsz = 0, nroi = 0;
    const fa_attr *sa = fa_node_attr(n, "scales");
    if (sa && sa->type == FA_ATTR_FLOATS && sa->n <= FA_MAX_RANK) {
        nfs = sa->n;
        memcpy(fs, sa->floats, sizeof(float) * (size_t)nfs);
    }
    if (isz >= 0 && isz < n_in && in[isz].data && fa_value_numel(&in[isz]) > 0) {
        nsz = (int)fa_value_numel(&in[isz]);
        if (nsz > FA_MAX_RANK) return fa_node_error(ctx, n, "too many sizes");
        for (int i = 0; i < nsz; i++) sz[i] = fa_load_as_i64(in[isz].data, in[isz].dtype, i);
    } else if (isc >= 0 && isc < n_in && in[isc].data && fa_value_numel(&in[isc]) > 0) {
        nfs = (int)fa_value_numel(&in[isc]);
        if (nfs > FA_MAX_RANK) return fa_node_error(ctx, n, "too many scales");
        for (int i = 0; i < nfs; i++) fs[i] = (float)fa_load_as_double(in[isc].data, in[isc].dtype, i);
    }
    if (iroi >= 0 && iroi < n_in && in[iroi].data && fa_value_numel(&in[iroi]) <= 2 * FA_MAX_RANK) {
        nroi = (int)fa_value_numel(&in[iroi]);
        for (int i = 0; i < nroi; i++) roi[i] = fa_load_as_double(in[iroi].data, in[iroi].dtype, i);
    }
    if ((st = rz_shape(ctx, n, in[0].rank, in[0].dims, fs, nfs, sz, nsz, roi, nroi, &p))) return st;
    for (int i = 0; i < p.rank; i++)
        if (p.out[i] != out[0].dims[i])
            return fa_ctx_error(ctx, FA_ERR_RUNTIME, "node '%s' (Resize): output dim %d is %lld, preallocated %lld",
                                n->name, i, (long long)p.out[i], (long long)out[0].dims[i]);
    rz_axis ax[FA_MAX_RANK] = {0};
    bool ok = true;
    for (int a = 0; a < p.rank; a++) ok = ok && rz_axis_build(&p, a, &ax[a]);
    /* float32 in place; any other type read as double (exact for every integer below 2^53 and
     * for float64), and nearest on an integer type copies the element itself (exact) */
    const fa_value *xv = &in[0];
    fa_value *yv = &out[0];
    bool f32 = xv->dtype == FA_DTYPE_FLOAT && yv->dtype == FA_DTYPE_FLOAT;
    bool integral = !is_float_type(yv->dtype);
    bool copy_nearest = integral && p.mode == RZ_NEAREST;
    int64_t ne_in = fa_value_numel(xv);
    size_t es = fa_dtype_size(yv->dtype);
    double *Xd = NULL;
    if (ok && !f32 && !copy_nearest) {
        Xd = malloc(sizeof(double) * (size_t)(ne_in > 0 ? ne_in : 1));
        if (Xd)
            for (int64_t e = 0; e < ne_in; e++) Xd[e] = fa_load_as_double(xv->data, xv->dtype, e);
    }
    if (!ok || (!f32 && !copy_nearest && !Xd)) {
        for (int a = 0; a < p.rank; a++) { free(ax[a].idx); free(ax[a].w); free(ax[a].outside); }
        free(Xd);
        return oom(ctx, n);
    }
    const float *X = f32 ? xv->data : NULL;
    float *Y = f32 ? yv->data : NULL;
    int R = p.rank;
    int64_t istr[FA_MAX_RANK], si = 1;
    for (int a = R - 1; a >= 0; a--) {
        istr[a] = si;
        si *= p.in[a];
    }
    int64_t total = prod64(p.out, R), inner = R ? p.out[R - 1] : 1, rows = inner ? total / inner : 0;
    bool planar = f32 && R >= 2 && p.ctm != CT_TF_CROP && (p.mode == RZ_LINEAR || p.mode == RZ_CUBIC) &&
                  ax[R - 2].taps <= 4 && ax[R - 1].taps <= 4;
    for (int a = 0; planar && a < R - 2; a++) planar = ax[a].taps == 1 && p.out[a] == p.in[a];
    if (planar) { /* only H and W resized: separably, a band of rows at a time */
        bool done = rz_planes_f32(&p, ax, X, Y, threads);
        for (int a = 0; a < R; a++) { free(ax[a].idx); free(ax[a].w); free(ax[a].outside); }
        return done ? FA_OK : oom(ctx, n);
    }
    if (f32 && R >= 1 && p.ctm != CT_TF_CROP) { /* no coordinate falls outside: a row at a time */
        rz_rows_f32(&p, ax, istr, X, Y, rows, inner, threads);
        for (int a = 0; a < R; a++) { free(ax[a].idx); free(ax[a].w); free(ax[a].outside); }
        return FA_OK;
    }
#pragma omp parallel for num_threads(nthreads(threads)) schedule(dynamic, 16)
    for (int64_t row = 0; row < rows; row++) {
        int64_t oc[FA_MAX_RANK], rem = row;
        for (int a = R - 2; a >= 0; a--) { oc[a] = rem % p.out[a]; rem /= p.out[a]; }
        for (int64_t last = 0; last < inner; last++) {
            if (R) oc[R - 1] = last;
            int64_t o = row * inner + last;
            bool outside = false;
            for (int a = 0; a < R; a++) outside |= ax[a].outside[oc[a]];
            double acc = 0;
            if (outside) acc = p.extrap;
            else if (copy_nearest) {
                int64_t off = 0;
                for (int a = 0; a < R; a++) off += ax[a].idx[oc[a]] * istr[a];
                memcpy((char *)yv->data + o * (int64_t)es, (const char *)xv->data + off * (int64_t)es, es);
                continue;
            } else {
                int t[FA_MAX_RANK] = {0};
                for (;;) { /* odometer over the taps of every axis */
                    double w = 1;
                    int64_t off = 0;
                    for (int a = 0; a < R; a++) {
                        int64_t k = oc[a] * ax[a].taps + t[a];
                        w *= ax[a].w[k];
                        off += ax[a].idx[k] * istr[a];
                    }
                    if (w != 0) acc += w * (X ? (double)X[off] : Xd[off]);
                    int a = R - 1;
                    while (a >= 0 && ++t[a] == ax[a].taps) t[a--] = 0;
                    if (a < 0) break;
                }
            }
            if (Y) Y[o] = (float)acc;
            else if (integral) store_saturated(yv, o, acc);
            else fa_store_from_double(yv->data, yv->dtype, o, acc);
        }
    }
    for (int a = 0; a < R; a++) { free(ax[a].idx); free(ax[a].w); free(ax[a].outside); }
    free(Xd);
    return FA_OK;
}

/* ===================================== GridSample ===================================== */

/* GridSample-16/20/22 (onnx/reference/ops/op_grid_sample.py). X [N, C, D1..Dr], grid
 * [N, O1..Or, r] holding normalized coordinates in [-1, 1], last component first (x = W,
 * then H, then D); Y [N, C, O1..Or]. A coordinate n maps to x = (n+1)/2*(len-1)
 * (align_corners=1) or ((n+1)*len-1)/2 (0), in float32 as the reference computes it. Modes:
 * nearest (round half to even), linear (2 taps per dim) and cubic (4 taps, Keys a = -0.75);
 * opset 16's names bilinear/bicubic are the same. padding_mode for coordinates outside
 * [-0.5, len-0.5] ([0, len-1] with align_corners): zeros (out-of-range taps read 0), border
 * (the coordinate and the taps clamp to the edge), reflection (the coordinate and the taps
 * reflect at the borders). */
enum { GS_NEAREST, GS_LINEAR, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECT };

static double gs_reflect(double x, double lo, double hi)
{
    double rng = hi - lo;
    if (rng <= 0) return lo;
    if (x < lo) {
        double dx = lo - x;
        int64_t k = fa_f64_to_i64_sat(dx / rng);
        double r = dx - (double)k * rng;
        return k % 2 == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi;
        int64_t k = fa_f64_to_i64_sat(dx / rng);
        double r = dx - (double)k * rng;
        return k % 2 == 0 ? hi - r : lo + r;
    }
    return x;
}

/* Tap index i along a dim of length len after padding: -1 means "reads zero". */
static int64_t gs_tap(int64_t i, int64_t len, int pad, double lo, double hi)
{
    if (i >= 0 && i < len) return i;
    if (pad == GS_ZEROS) return -1;
    if (pad == GS_BORDER) return i < 0 ? 0 : len - 1;
    int64_t r = tap_index(gs_reflect((double)i, lo, hi));
    return r < 0 ? 0 : r >= len ? len - 1 : r;
}

static fa_status gs_params(fa_ctx *ctx, const fa_node *n, int *mode, int *pad, bool *align)
{
    const char *m = fa_node_attr_string(n, "mode", "linear");
    const char *p = fa_node_attr_string(n, "padding_mode", "zeros");
    *mode = !strcmp(m, "nearest") ? GS_NEAREST : (!strcmp(m, "cubic") || !strcmp(m, "bicubic")) ? GS_CUBIC : GS_LINEAR;
    *pad = !strcmp(p, "border") ? GS_BORDER : !strcmp(p, "reflection") ? GS_REFLECT : GS_ZEROS;
    *align = fa_node_attr_int(n, "align_corners", 0) != 0;
    return FA_OK;
}

static fa_status gs_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0), *gr = x ? fa_req_input(ctx, g, n, 1) : NULL;
    if (!gr) return fa_ctx_status(ctx);
    fa_status st;
    if ((st = need_float(ctx, n, x, 0)) || (st = need_float(ctx, n, gr, 1))) return st;
    int r = x->rank - 2;
    if (r < 1 || r > MAX_SP) return fa_node_unsupported(ctx, n, "%d spatial dims (1..%d supported)", r, MAX_SP);
    if (gr->rank != x->rank || gr->dims[0] != x->dims[0] || gr->dims[gr->rank - 1] != r)
        return fa_node_error(ctx, n, "grid must be [N=%lld, out spatial..., %d], has rank %d", (long long)x->dims[0], r,
                             gr->rank);
    int64_t od[FA_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < r; i++) od[i + 2] = gr->dims[i + 1];
    fa_set_out(g, n, 0, x->dtype, x->rank, od);
    return FA_OK;
}

static fa_status gs_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                           fa_value *out, int n_out, int threads)
{
    int mode, pad;
    bool align;
    fa_status st = gs_params(ctx, n, &mode, &pad, &align);
    if (st) return st;
    const fa_value *xv = &in[0], *gv = &in[1];
    int r = xv->rank - 2;
    int64_t N = xv->dims[0], C = xv->dims[1], insp = prod64(xv->dims + 2, r), outsp = prod64(out[0].dims + 2, r);
    const int64_t *len = xv->dims + 2;
    float *tx, *tg, *ty;
    const float *X = in_f32(xv, &tx), *G = in_f32(gv, &tg);
    float *Y = out_f32(&out[0], &ty);
    if (!X || !G || !Y) { free(tx); free(tg); free(ty); return oom(ctx, n); }
    int ntap = mode == GS_NEAREST ? 1 : mode == GS_LINEAR ? 2 : 4;
#pragma omp parallel for num_threads(nthreads(threads)) schedule(static)
    for (int64_t t = 0; t < N * outsp; t++) {
        int64_t b = t / outsp, o = t % outsp;
        int64_t idx[MAX_SP][4];
        double w[MAX_SP][4];
        for (int d = 0; d < r; d++) {
            double lo = align ? 0.0 : -0.5, hi = align ? (double)len[d] - 1 : (double)len[d] - 0.5;
            double nv = G[(b * outsp + o) * r + (r - 1 - d)];
            float xf = align ? (float)((nv + 1) / 2.0 * (double)(len[d] - 1)) : (float)(((nv + 1) * (double)len[d] - 1) / 2.0);
            double x = xf;
            if (mode == GS_NEAREST) x = nearbyint(x);
            if (x < lo || x > hi) {
                if (pad == GS_BORDER) x = x < 0 ? 0 : x > (double)len[d] - 1 ? (double)len[d] - 1 : x;
                else if (pad == GS_REFLECT) x = gs_reflect(x, lo, hi);
            }
            if (mode == GS_NEAREST) {
                idx[d][0] = gs_tap(tap_index(x), len[d], pad, lo, hi); /* int32 cast truncates, as the reference */
                w[d][0] = 1;
                continue;
            }
            double f0 = floor(x), fr = x - f0;
            int64_t x0 = tap_index(f0);
            if (mode == GS_LINEAR) {
                idx[d][0] = gs_tap(x0, len[d], pad, lo, hi), w[d][0] = 1 - fr;
                idx[d][1] = gs_tap(x0 + 1, len[d], pad, lo, hi), w[d][1] = fr;
            } else {
                double A = -0.75, q = 1 - fr;
                w[d][0] = ((A * (fr + 1) - 5 * A) * (fr + 1) + 8 * A) * (fr + 1) - 4 * A;
                w[d][1] = ((A + 2) * fr - (A + 3)) * fr * fr + 1;
                w[d][2] = ((A + 2) * q - (A + 3)) * q * q + 1;
                w[d][3] = ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A;
                for (int k = 0; k < 4; k++) idx[d][k] = gs_tap(x0 - 1 + k, len[d], pad, lo, hi);
            }
        }
        for (int64_t c = 0; c < C; c++) {
            const float *xp = X + (b * C + c) * insp;
            double acc = 0;
            int tp[MAX_SP] = {0};
            for (;;) { /* odometer over the taps of every dim */
                double wt = 1;
                int64_t off = 0;
                bool zero = false;
                for (int d = 0; d < r; d++) {
                    int64_t i = idx[d][tp[d]];
                    if (i < 0) zero = true;
                    wt *= w[d][tp[d]];
                    off = off * len[d] + (i < 0 ? 0 : i);
                }
                if (!zero && wt != 0) acc += wt * xp[off];
                int d = r - 1;
                while (d >= 0 && ++tp[d] == ntap) tp[d--] = 0;
                if (d < 0) break;
            }
            Y[(b * C + c) * outsp + o] = (float)acc;
        }
    }
    free(tx); free(tg);
    out_f32_done(&out[0], ty);
    return FA_OK;
}

/* GridSample FLOPs = numel(Y) * 2 * taps (taps = 1, 2^r or 4^r), plus 10 * N * prod(out) for
 * the coordinate arithmetic. Bytes: X and grid read once, Y written once. */
static void gs_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *x = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0), *gr = fa_graph_in(g, n, 1);
    if (!x || !y || !gr || fa_tensor_numel(y) < 0 || fa_tensor_numel(gr) < 0) return;
    const char *m = fa_node_attr_string(n, "mode", "linear");
    int per = !strcmp(m, "nearest") ? 1 : (!strcmp(m, "cubic") || !strcmp(m, "bicubic")) ? 4 : 2;
    uint64_t taps = 1;
    for (int i = 2; i < x->rank; i++) taps *= (uint64_t)per;
    out->flops = fa_u64_add_sat(fa_u64_mul_sat(2 * (uint64_t)fa_tensor_numel(y), taps), 10 * (uint64_t)fa_tensor_numel(gr));
}

/* ============================ QuantizeLinear / DequantizeLinear ============================ */

/* Per-tensor (scale has one element) or per-axis (scale 1-D of length X.dims[axis]). */
static fa_status q_check(fa_ctx *ctx, fa_graph *g, fa_node *n, fa_tensor *x, int *axis)
{
    fa_tensor *s = fa_req_input(ctx, g, n, 1);
    if (!s) return fa_ctx_status(ctx);
    if (fa_node_attr_int(n, "block_size", 0) > 0)
        return fa_node_unsupported(ctx, n, "blocked quantization (block_size > 0)");
    int64_t ne = fa_tensor_numel(s);
    *axis = -1;
    if (ne != 1) {
        if (s->rank != 1) return fa_node_error(ctx, n, "scale must be a scalar or 1-D, has rank %d", s->rank);
        int a = fa_norm_axis(ctx, n, fa_node_attr_int(n, "axis", 1), x->rank);
        if (a < 0) return fa_ctx_status(ctx);
        if (x->dims[a] >= 0 && ne >= 0 && ne != x->dims[a])
            return fa_node_error(ctx, n, "per-axis scale has %lld values, axis %d of X has %lld", (long long)ne, a, (long long)x->dims[a]);
        *axis = a;
    }
    fa_tensor *z = fa_graph_in(g, n, 2);
    if (z && z->rank >= 0 && fa_tensor_numel(z) != ne && ne >= 0)
        return fa_node_error(ctx, n, "zero point has %lld values, scale has %lld", (long long)fa_tensor_numel(z), (long long)ne);
    return FA_OK;
}

static bool q_int_type(fa_dtype t)
{
    return t == FA_DTYPE_UINT8 || t == FA_DTYPE_INT8 || t == FA_DTYPE_UINT16 || t == FA_DTYPE_INT16 ||
           t == FA_DTYPE_INT32;
}

static fa_dtype ql_out_type(const fa_graph *g, const fa_node *n)
{
    const fa_tensor *z = fa_graph_in(g, n, 2);
    if (z && z->dtype != FA_DTYPE_UNDEFINED) return z->dtype;
    int64_t od = fa_node_attr_int(n, "output_dtype", 0);
    return od ? (fa_dtype)od : FA_DTYPE_UINT8;
}

static fa_status ql_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    int axis;
    fa_status st = q_check(ctx, g, n, x, &axis);
    if (st) return st;
    fa_dtype ot = ql_out_type(g, n);
    if (!q_int_type(ot) || ot == FA_DTYPE_INT32)
        return fa_node_unsupported(ctx, n, "quantized type %s (uint8, int8, uint16, int16 supported)", fa_dtype_name(ot));
    fa_set_out(g, n, 0, ot, x->rank, x->dims);
    return FA_OK;
}

static fa_status dql_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    if (!q_int_type(x->dtype))
        return fa_node_unsupported(ctx, n, "input type %s (uint8, int8, uint16, int16, int32 supported)", fa_dtype_name(x->dtype));
    int axis;
    fa_status st = q_check(ctx, g, n, x, &axis);
    if (st) return st;
    fa_tensor *s = fa_graph_in(g, n, 1);
    /* y's type: output_dtype (opset 23+) when given, else x_scale's */
    int64_t od = fa_node_attr_int(n, "output_dtype", 0);
    fa_dtype yt = s->dtype ? s->dtype : FA_DTYPE_FLOAT;
    if (od) {
        if (!is_float_type((fa_dtype)od))
            return fa_node_unsupported(ctx, n, "output_dtype %lld (%s) is not a float type this op produces", (long long)od,
                                       fa_dtype_name((fa_dtype)od));
        yt = (fa_dtype)od;
    }
    fa_set_out(g, n, 0, yt, x->rank, x->dims);
    return FA_OK;
}

/* QuantizeLinear FLOPs = 3 * numel(X) (divide, round, add zero point);
 * DequantizeLinear FLOPs = 2 * numel(X) (subtract zero point, multiply). */
static void ql_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out) { fa_cost_io(g, n, 3, out); }
static void dql_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out) { fa_cost_io(g, n, 2, out); }

/* Axis geometry of a (de)quantize: element i uses parameter (i / inner) % C. */
static void q_geom(const fa_node *n, const fa_value *x, const fa_value *s, int64_t *C, int64_t *inner)
{
    *C = 1;
    *inner = 1;
    if (fa_value_numel(s) == 1) return;
    int64_t a = fa_node_attr_int(n, "axis", 1);
    if (a < 0) a += x->rank;
    *C = x->dims[a];
    *inner = prod64(x->dims + a + 1, x->rank - (int)a - 1);
}

static void q_range(fa_dtype t, double *lo, double *hi)
{
    switch (t) {
    case FA_DTYPE_INT8: *lo = -128; *hi = 127; break;
    case FA_DTYPE_UINT16: *lo = 0; *hi = 65535; break;
    case FA_DTYPE_INT16: *lo = -32768; *hi = 32767; break;
    default: *lo = 0; *hi = 255; break;
    }
}

/* y = saturate(round_half_even(x / scale) + zero_point) (ONNX QuantizeLinear; the divide is
 * done in float as the reference does, rint rounds half to even). */
static fa_status ql_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                           fa_value *out, int n_out, int threads)
{
    int64_t C, inner, ne = fa_value_numel(&in[0]);
    q_geom(n, &in[0], &in[1], &C, &inner);
    bool has_z = n_in > 2 && in[2].data;
    double lo, hi;
    q_range(out[0].dtype, &lo, &hi);
#pragma omp parallel for num_threads(nthreads(threads))
    for (int64_t i = 0; i < ne; i++) {
        int64_t c = (i / inner) % C;
        float x = (float)fa_load_as_double(in[0].data, in[0].dtype, i);
        float s = (float)fa_load_as_double(in[1].data, in[1].dtype, c);
        double z = has_z ? fa_load_as_double(in[2].data, in[2].dtype, c) : 0.0;
        double q = rint((double)(x / s)) + z;
        if (isnan(q)) q = 0; /* NaN has no integer image; the reference casts it to 0 too */
        q = q < lo ? lo : q > hi ? hi : q;
        fa_store_from_double(out[0].data, out[0].dtype, i, q);
    }
    return FA_OK;
}

/* y = (x - zero_point) * scale (ONNX DequantizeLinear), in float. */
static fa_status dql_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                            fa_value *out, int n_out, int threads)
{
    int64_t C, inner, ne = fa_value_numel(&in[0]);
    q_geom(n, &in[0], &in[1], &C, &inner);
    bool has_z = n_in > 2 && in[2].data;
#pragma omp parallel for num_threads(nthreads(threads))
    for (int64_t i = 0; i < ne; i++) {
        int64_t c = (i / inner) % C;
        double x = fa_load_as_double(in[0].data, in[0].dtype, i);
        double z = has_z ? fa_load_as_double(in[2].data, in[2].dtype, c) : 0.0;
        float s = (float)fa_load_as_double(in[1].data, in[1].dtype, c);
        float y = (float)(x - z) * s;
        fa_store_from_double(out[0].data, out[0].dtype, i, y);
    }
    return FA_OK;
}

/* ==================== integer / quantized-linear Conv and MatMul, dynamic quantize ==================== */

/* v - zero_point as floats (exact for integers below 2^24). zp absent: 0; one value: per tensor;
 * else per slice: element i uses zp[(i / inner) % numel(zp)]. malloc'd, NULL on OOM. */
static float *zp_sub(const fa_value *v, const fa_value *zp, int64_t inner)
{
    int64_t ne = fa_value_numel(v), nz = zp && zp->data ? fa_value_numel(zp) : 0;
    float *o = malloc(sizeof(float) * (size_t)(ne > 0 ? ne : 1));
    if (!o) return NULL;
    for (int64_t i = 0; i < ne; i++) {
        double z = nz == 0 ? 0.0 : fa_load_as_double(zp->data, zp->dtype, nz == 1 ? 0 : (i / inner) % nz);
        o[i] = (float)(fa_load_as_double(v->data, v->dtype, i) - z);
    }
    return o;
}

static bool q8_type(fa_dtype t) { return t == FA_DTYPE_UINT8 || t == FA_DTYPE_INT8; }

/* A zero point / scale input: absent, one value, or `want` values (per channel / row / column). */
static fa_status q_param_check(fa_ctx *ctx, fa_graph *g, fa_node *n, int idx, int64_t want, const char *what)
{
    fa_tensor *t = fa_graph_in(g, n, idx);
    if (!t || t->rank < 0) return FA_OK;
    int64_t ne = fa_tensor_numel(t);
    if (ne != 1 && ne >= 0 && want >= 0 && ne != want)
        return fa_node_error(ctx, n, "%s '%s' has %lld values, expected 1 or %lld", what, t->name,
                             (long long)ne, (long long)want);
    return FA_OK;
}

/* ConvInteger (opset 10): Y int32 = conv(x - x_zero_point, w - w_zero_point); QLinearConv
 * (opset 10): x/w/y are 8-bit, Y = saturate(rint(conv(...) + B) * x_scale*w_scale/y_scale + y_zp).
 * w's zero point and scale may be per output channel. */
static fa_status iconv_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    bool ql = strcmp(n->op_type, "QLinearConv") == 0;
    int iw = ql ? 3 : 1;
    fa_tensor *x = fa_req_input(ctx, g, n, 0), *w = x ? fa_req_input(ctx, g, n, iw) : NULL;
    if (!x || !w) return fa_ctx_status(ctx);
    if (!q8_type(x->dtype) || !q8_type(w->dtype))
        return fa_node_unsupported(ctx, n, "x and w must be uint8 or int8 (are %s, %s)", fa_dtype_name(x->dtype),
                                   fa_dtype_name(w->dtype));
    win_geom gm;
    fa_status st = conv_geom(ctx, n, x->rank, x->dims, w->rank, w->dims, &gm);
    if (st) return st;
    int64_t M = w->dims[0];
    if ((st = q_param_check(ctx, g, n, 2, 1, "x zero point")) ||
        (st = q_param_check(ctx, g, n, ql ? 5 : 3, M, "w zero point")))
        return st;
    if (ql && ((st = q_param_check(ctx, g, n, 1, 1, "x scale")) || (st = q_param_check(ctx, g, n, 4, M, "w scale")) ||
               (st = q_param_check(ctx, g, n, 6, 1, "y scale")) || (st = q_param_check(ctx, g, n, 7, 1, "y zero point")) ||
               (st = q_param_check(ctx, g, n, 8, M, "bias"))))
        return st;
    int64_t od[FA_MAX_RANK] = {x->dims[0], M};
    for (int i = 0; i < gm.sr; i++) od[i + 2] = gm.out[i];
    fa_tensor *yz = ql ? fa_graph_in(g, n, 7) : NULL;
    fa_set_out(g, n, 0, ql ? (yz && yz->dtype ? yz->dtype : x->dtype) : FA_DTYPE_INT32, x->rank, od);
    return FA_OK;
}

/* ConvInteger / QLinearConv FLOPs = 2 * N * M * prod(out) * (C/group) * prod(k) (integer MACs),
 * + 3 * numel(Y) for QLinearConv's requantization. */
static void iconv_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    bool ql = strcmp(n->op_type, "QLinearConv") == 0;
    fa_cost_io(g, n, 0, out);
    const fa_tensor *w = fa_graph_in(g, n, ql ? 3 : 1), *y = fa_graph_out(g, n, 0);
    if (!w || !y || fa_tensor_numel(y) < 0 || fa_tensor_numel(w) < 0 || w->rank < 1) return;
    uint64_t ny = (uint64_t)fa_tensor_numel(y);
    out->flops = fa_u64_add_sat(fa_u64_mul_sat(2 * ny, (uint64_t)(fa_tensor_numel(w) / (w->dims[0] ? w->dims[0] : 1))),
                                ql ? 3 * ny : 0);
}

/* Requantize one int32 accumulator (onnx reference QLinearConv/QLinearMatMul: acc * (sa*sb/sy)
 * with the multiplier in float, + y_zero_point, rint, saturate to the output type). */
static double requant(double acc, float sa, float sb, float sy, double yz, fa_dtype t)
{
    float mult = sa * sb / sy;
    double r = rint(acc * (double)mult + yz);
    double lo = t == FA_DTYPE_INT8 ? -128 : 0, hi = t == FA_DTYPE_INT8 ? 127 : 255;
    return r < lo ? lo : r > hi ? hi : r;
}

static double q_at(const fa_value *v, int64_t i)
{
    if (!v || !v->data) return 0.0;
    return fa_load_as_double(v->data, v->dtype, fa_value_numel(v) == 1 ? 0 : i);
}

static fa_status iconv_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                              fa_value *out, int n_out, int threads)
{
    bool ql = strcmp(n->op_type, "QLinearConv") == 0;
    int iw = ql ? 3 : 1;
    const fa_value *xz = ql ? &in[2] : (n_in > 2 ? &in[2] : NULL), *wz = ql ? &in[5] : (n_in > 3 ? &in[3] : NULL);
    win_geom g0, g;
    fa_status st = conv_geom(ctx, n, in[0].rank, in[0].dims, in[iw].rank, in[iw].dims, &g0);
    if (st) return st;
    geom_pad3(&g0, &g);
    int64_t N = in[0].dims[0], C = in[0].dims[1], M = in[iw].dims[0], ny = fa_value_numel(&out[0]);
    int64_t plane = g.out[0] * g.out[1] * g.out[2]; /* Y elements per (n, m) */
    float *X = zp_sub(&in[0], xz, 1), *W = zp_sub(&in[iw], wz, M ? fa_value_numel(&in[iw]) / M : 1);
    double *acc = malloc(sizeof(double) * (size_t)(ny ? ny : 1));
    bool ok = X && W && acc &&
              conv_run(&g, N, C, M, fa_node_attr_int(n, "group", 1), X, W, NULL, NULL, acc, 256, threads);
    free(X);
    free(W);
    if (!ok) { free(acc); return oom(ctx, n); }
    const fa_value *B = ql && n_in > 8 && in[8].data ? &in[8] : NULL;
    for (int64_t i = 0; i < ny; i++) {
        int64_t m = plane ? (i / plane) % M : 0;
        double v = acc[i];
        if (ql) {
            if (B) v += q_at(B, m);
            v = requant(v, (float)q_at(&in[1], 0), (float)q_at(&in[4], m), (float)q_at(&in[6], 0), q_at(&in[7], 0),
                        out[0].dtype);
        }
        fa_store_from_double(out[0].data, out[0].dtype, i, v);
    }
    free(acc);
    return FA_OK;
}

/* MatMulInteger (opset 10): Y int32 = matmul(A - a_zero_point, B - b_zero_point), a_zero_point
 * scalar or per row of A (M values), b_zero_point scalar or per column of B (N values);
 * QLinearMatMul (opset 10/21): 8-bit in and out, scales likewise per tensor / row / column. */
static fa_status imm_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    bool ql = strcmp(n->op_type, "QLinearMatMul") == 0;
    int ib = ql ? 3 : 1;
    fa_tensor *a = fa_req_input(ctx, g, n, 0), *b = a ? fa_req_input(ctx, g, n, ib) : NULL;
    if (!a || !b) return fa_ctx_status(ctx);
    if (!q8_type(a->dtype) || !q8_type(b->dtype))
        return fa_node_unsupported(ctx, n, "A and B must be uint8 or int8 (are %s, %s)", fa_dtype_name(a->dtype),
                                   fa_dtype_name(b->dtype));
    mm_shape s;
    fa_status st = mm_shape_make(ctx, n, a->rank, a->dims, b->rank, b->dims, &s);
    if (st) return st;
    if ((st = q_param_check(ctx, g, n, 2, s.M, "a zero point")) ||
        (st = q_param_check(ctx, g, n, ql ? 5 : 3, s.N, "b zero point")))
        return st;
    if (ql && ((st = q_param_check(ctx, g, n, 1, s.M, "a scale")) || (st = q_param_check(ctx, g, n, 4, s.N, "b scale")) ||
               (st = q_param_check(ctx, g, n, 6, 1, "y scale")) || (st = q_param_check(ctx, g, n, 7, 1, "y zero point"))))
        return st;
    fa_tensor *yz = ql ? fa_graph_in(g, n, 7) : NULL;
    fa_set_out(g, n, 0, ql ? (yz && yz->dtype ? yz->dtype : a->dtype) : FA_DTYPE_INT32, s.yr, s.yd);
    return FA_OK;
}

/* MatMulInteger / QLinearMatMul FLOPs = 2 * prod(batch) * M * N * K (+ 3 * numel(Y) requantize). */
static void imm_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    bool ql = strcmp(n->op_type, "QLinearMatMul") == 0;
    fa_cost_io(g, n, 0, out);
    const fa_tensor *a = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0);
    if (!a || !y || a->rank < 1 || fa_tensor_numel(y) < 0 || a->dims[a->rank - 1] < 0) return;
    uint64_t ny = (uint64_t)fa_tensor_numel(y);
    out->flops = fa_u64_add_sat(fa_u64_mul_sat(2 * ny, (uint64_t)a->dims[a->rank - 1]), ql ? 3 * ny : 0);
}

static fa_status imm_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                            fa_value *out, int n_out, int threads)
{
    bool ql = strcmp(n->op_type, "QLinearMatMul") == 0;
    int ib = ql ? 3 : 1;
    const fa_value *az = ql ? &in[2] : (n_in > 2 ? &in[2] : NULL), *bz = ql ? &in[5] : (n_in > 3 ? &in[3] : NULL);
    mm_shape s;
    fa_status st = mm_shape_make(ctx, n, in[0].rank, in[0].dims, in[ib].rank, in[ib].dims, &s);
    if (st) return st;
    int64_t ny = fa_value_numel(&out[0]);
    /* per-row zero point: element i of A is in row (i / K) % M; per-column of B: column i % N */
    float *A = zp_sub(&in[0], az, s.K ? s.K : 1), *B = zp_sub(&in[ib], bz, 1);
    double *acc = malloc(sizeof(double) * (size_t)(ny ? ny : 1));
    if (!A || !B || !acc) { free(A); free(B); free(acc); return oom(ctx, n); }
    mm_run(&s, A, B, NULL, acc, threads);
    free(A);
    free(B);
    for (int64_t i = 0; i < ny; i++) {
        double v = acc[i];
        if (ql) {
            int64_t row = (i / (s.N ? s.N : 1)) % (s.M ? s.M : 1), col = i % (s.N ? s.N : 1);
            v = requant(v, (float)q_at(&in[1], row), (float)q_at(&in[4], col), (float)q_at(&in[6], 0), q_at(&in[7], 0),
                        out[0].dtype);
        }
        fa_store_from_double(out[0].data, out[0].dtype, i, v);
    }
    free(acc);
    return FA_OK;
}

/* DynamicQuantizeLinear (opset 11): y_scale = (max(0, max x) - min(0, min x)) / 255 (1/255 when
 * the range is empty), y_zero_point = saturate(round_half_even(-min(0, min x) / y_scale)),
 * y = saturate(rint(x / y_scale) + y_zero_point), uint8; float32 arithmetic as the reference. */
static fa_status dynq_infer(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    fa_set_out(g, n, 0, FA_DTYPE_UINT8, x->rank, x->dims);
    fa_set_out(g, n, 1, FA_DTYPE_FLOAT, 0, NULL);
    fa_set_out(g, n, 2, FA_DTYPE_UINT8, 0, NULL);
    return FA_OK;
}

/* DynamicQuantizeLinear FLOPs = 5 * numel(X) (min, max, divide, round, add). */
static void dynq_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    const fa_tensor *x = fa_graph_in(g, n, 0);
    if (x && fa_tensor_numel(x) >= 0) out->flops = 5 * (uint64_t)fa_tensor_numel(x);
}

static fa_status dynq_kernel(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                             fa_value *out, int n_out, int threads)
{
    int64_t ne = fa_value_numel(&in[0]);
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < ne; i++) {
        float v = (float)fa_load_as_double(in[0].data, in[0].dtype, i);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
    float z0 = 0.0f - lo / scale;
    double zp = rint(z0 < 0 ? 0 : z0 > 255 ? 255 : z0);
    if (FA_OMP_TEAM(nthreads(threads), 1)) {
#pragma omp parallel for num_threads(nthreads(threads))
        for (int64_t i = 0; i < ne; i++) {
            float v = (float)fa_load_as_double(in[0].data, in[0].dtype, i);
            double q = rint((double)(v / scale)) + zp;
            fa_store_from_double(out[0].data, FA_DTYPE_UINT8, i, q); /* saturating, NaN -> 0 */
        }
    } else {
        for (int64_t i = 0; i < ne; i++) {
            float v = (float)fa_load_as_double(in[0].data, in[0].dtype, i);
            double q = rint((double)(v / scale)) + zp;
            fa_store_from_double(out[0].data, FA_DTYPE_UINT8, i, q); /* saturating, NaN -> 0 */
        }
    }
    if (n_out > 1 && out[1].data) fa_store_from_double(out[1].data, out[1].dtype, 0, scale);
    if (n_out > 2 && out[2].data) fa_store_from_double(out[2].data, out[2].dtype, 0, zp);
    return FA_OK;
}

/* ======================================== table ======================================== */

/* Attributes each op reads (fa_attr_spec; ONNX operator spec, every opset). */
#define AP_PADS "NOTSET|SAME_UPPER|SAME_LOWER|VALID|"
static const fa_attr_spec a_conv[] = {
    {"auto_pad", FA_ATTR_STRING, AP_PADS},      {"dilations", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL},
    {"group", FA_ATTR_INT},                     {"kernel_shape", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL},
    {"pads", FA_ATTR_INTS, NULL, FA_ACOUNT_2SPATIAL}, {"strides", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL}, {0}};
static const fa_attr_spec a_convt[] = {
    {"auto_pad", FA_ATTR_STRING, AP_PADS},      {"dilations", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL},
    {"group", FA_ATTR_INT},                     {"kernel_shape", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL},
    {"pads", FA_ATTR_INTS, NULL, FA_ACOUNT_2SPATIAL}, {"strides", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL},
    {"output_padding", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL}, {"output_shape", FA_ATTR_INTS}, {0}};
static const fa_attr_spec a_gemm[] = {{"alpha", FA_ATTR_FLOAT}, {"beta", FA_ATTR_FLOAT}, {"transA", FA_ATTR_INT},
                                      {"transB", FA_ATTR_INT}, {"broadcast", FA_ATTR_INT, "0|1", 0, 6}, {0}};
static const fa_attr_spec a_maxpool[] = {
    {"auto_pad", FA_ATTR_STRING, AP_PADS},      {"dilations", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL},
    {"kernel_shape", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL}, {"pads", FA_ATTR_INTS, NULL, FA_ACOUNT_2SPATIAL},
    {"strides", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL}, {"ceil_mode", FA_ATTR_INT, "0|1"},
    {"storage_order", FA_ATTR_INT, "0|1"}, {0}};
static const fa_attr_spec a_avgpool[] = {
    {"auto_pad", FA_ATTR_STRING, AP_PADS},      {"dilations", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL},
    {"kernel_shape", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL}, {"pads", FA_ATTR_INTS, NULL, FA_ACOUNT_2SPATIAL},
    {"strides", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL}, {"ceil_mode", FA_ATTR_INT, "0|1"},
    {"count_include_pad", FA_ATTR_INT, "0|1"}, {0}};
/* LpPool/GlobalLpPool p: FLOAT in opset 1, INT from opset 2; the kernels read the INT form. */
static const fa_attr_spec a_lppool[] = {
    {"auto_pad", FA_ATTR_STRING, AP_PADS},      {"dilations", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL},
    {"kernel_shape", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL}, {"pads", FA_ATTR_INTS, NULL, FA_ACOUNT_2SPATIAL},
    {"strides", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL}, {"ceil_mode", FA_ATTR_INT, "0|1"},
    {"p", FA_ATTR_INT, "1.."}, {0}};
static const fa_attr_spec a_glppool[] = {{"p", FA_ATTR_INT, "1.."}, {0}};
static const fa_attr_spec a_lrn[] = {{"alpha", FA_ATTR_FLOAT}, {"beta", FA_ATTR_FLOAT}, {"bias", FA_ATTR_FLOAT},
                                     {"size", FA_ATTR_INT}, {0}};
static const fa_attr_spec a_inorm[] = {{"epsilon", FA_ATTR_FLOAT}, {"consumed_inputs", FA_ATTR_INTS, NULL, 0, 5}, {0}};
/* BatchNormalization: spatial (opset <= 8) is implied by the parameters' size; is_test (<= 6)
 * and the presence of the optional outputs select training mode as the spec says. */
static const fa_attr_spec a_bn[] = {
    {"epsilon", FA_ATTR_FLOAT}, {"momentum", FA_ATTR_FLOAT}, {"training_mode", FA_ATTR_INT, "0|1"},
    {"spatial", FA_ATTR_INT, "0|1", 0, 8}, {"is_test", FA_ATTR_INT, "0|1", 0, 6},
    {"consumed_inputs", FA_ATTR_INTS, NULL, 0, 5}, {0}};
static const fa_attr_spec a_resize[] = {
    {"mode", FA_ATTR_STRING, "nearest|linear|cubic"},
    {"coordinate_transformation_mode", FA_ATTR_STRING,
     "half_pixel|half_pixel_symmetric|pytorch_half_pixel|align_corners|asymmetric|tf_crop_and_resize"},
    {"nearest_mode", FA_ATTR_STRING, "round_prefer_floor|round_prefer_ceil|floor|ceil"},
    {"cubic_coeff_a", FA_ATTR_FLOAT}, {"exclude_outside", FA_ATTR_INT, "0|1"},
    {"extrapolation_value", FA_ATTR_FLOAT}, {"keep_aspect_ratio_policy", FA_ATTR_STRING, "stretch|not_larger|not_smaller"},
    {"axes", FA_ATTR_INTS}, {"antialias", FA_ATTR_INT, "0|1"}, {0}};
/* Upsample-1's height_scale/width_scale are not read: refused as unknown attributes. */
static const fa_attr_spec a_upsample[] = {{"mode", FA_ATTR_STRING, "nearest|linear|bilinear"},
                                          {"scales", FA_ATTR_FLOATS, NULL, FA_ACOUNT_RANK, 8}, {0}};
/* saturate only concerns float8 outputs (refused); blocked quantization is not implemented. */
static const fa_attr_spec a_quant[] = {{"axis", FA_ATTR_INT}, {"saturate", FA_ATTR_INT, "0|1"},
                                       {"output_dtype", FA_ATTR_INT}, {"block_size", FA_ATTR_INT, "0"},
                                       {"precision", FA_ATTR_INT, "0"}, {0}};
static const fa_attr_spec a_dequant[] = {{"axis", FA_ATTR_INT}, {"block_size", FA_ATTR_INT, "0"},
                                         {"output_dtype", FA_ATTR_INT}, {0}};
static const fa_attr_spec a_gridsample[] = {{"mode", FA_ATTR_STRING, "linear|nearest|cubic|bilinear|bicubic"},
                                            {"padding_mode", FA_ATTR_STRING, "zeros|border|reflection"},
                                            {"align_corners", FA_ATTR_INT, "0|1"}, {0}};
static const fa_attr_spec a_einsum[] = {{"equation", FA_ATTR_STRING}, {0}};
static const fa_attr_spec a_iconv[] = {
    {"auto_pad", FA_ATTR_STRING, AP_PADS},      {"dilations", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL},
    {"group", FA_ATTR_INT},                     {"kernel_shape", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL},
    {"pads", FA_ATTR_INTS, NULL, FA_ACOUNT_2SPATIAL}, {"strides", FA_ATTR_INTS, NULL, FA_ACOUNT_SPATIAL}, {0}};

const fa_op fa_ops_nn[] = {
    {.name = "Conv", .domain = "", .pattern = FA_PATTERN_OUT_ELEMWISE_FUSABLE,
     .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
     .infer = conv_infer, .cost = conv_cost, .kernel = conv_kernel,
     .doc = "FLOPs = 2*N*M*(C/group)*prod_i V_i, V_i the (output, tap) pairs of spatial dim i inside the input, not its padding (no padding: prod(out)*prod(k)) (+N*M*prod(out) bias); bytes = X+W+B read, Y written",
     .attrs = a_conv},
    {.name = "ConvTranspose", .domain = "", .pattern = FA_PATTERN_OUT_ELEMWISE_FUSABLE,
     .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
     .infer = convt_infer, .cost = convt_cost, .kernel = convt_kernel,
     .doc = "FLOPs = 2*N*C*prod(in)*(M/group)*prod(k) (+N*M*prod(out) bias); bytes = X+W+B read, Y written",
     .attrs = a_convt},
    {.name = "MatMul", .domain = "", .pattern = FA_PATTERN_OUT_ELEMWISE_FUSABLE,
     .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .flags = FA_OPF_MATMUL,
     .infer = matmul_infer, .cost = matmul_cost, .kernel = matmul_kernel,
     .doc = "FLOPs = 2*batch*M*N*K; bytes = A+B read, Y written"},
    {.name = "Einsum", .domain = "", .pattern = FA_PATTERN_OPAQUE,
     .min_inputs = 1, .max_inputs = -1, .min_outputs = 1, .max_outputs = 1,
     .infer = einsum_infer, .cost = einsum_cost, .kernel = einsum_kernel,
     .doc = "FLOPs = n_in*prod(every label's extent); bytes = inputs read, output written",
     .attrs = a_einsum},
    {.name = "Gemm", .domain = "", .pattern = FA_PATTERN_OUT_ELEMWISE_FUSABLE,
     .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
     .infer = gemm_infer, .cost = gemm_cost, .kernel = gemm_kernel,
     .doc = "FLOPs = 2*M*N*K (+M*N if alpha!=1, +2*M*N with C); bytes = A+B+C read, Y written",
     .attrs = a_gemm},
    {.name = "MaxPool", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 2,
     .infer = pool_infer, .cost = pool_cost, .kernel = pool_kernel,
     .doc = "FLOPs = numel(Y)*prod(k) compares; bytes = X read, Y (+Indices) written",
     .attrs = a_maxpool},
    {.name = "AveragePool", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = pool_infer, .cost = pool_cost, .kernel = pool_kernel,
     .doc = "FLOPs = numel(Y)*(prod(k)+1); bytes = X read, Y written",
     .attrs = a_avgpool},
    {.name = "GlobalAveragePool", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = gpool_infer, .cost = gpool_cost, .kernel = gpool_kernel,
     .doc = "FLOPs = numel(X) + N*C; bytes = X read, Y written"},
    {.name = "GlobalMaxPool", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = gpool_infer, .cost = gpool_cost, .kernel = gpool_kernel,
     .doc = "FLOPs = numel(X); bytes = X read, Y written"},
    {.name = "LpPool", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = pool_infer, .cost = pool_cost, .kernel = pool_kernel,
     .doc = "FLOPs = numel(Y)*(2*prod(k)+1); bytes = X read, Y written",
     .attrs = a_lppool},
    {.name = "GlobalLpPool", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = gpool_infer, .cost = gpool_cost, .kernel = gpool_kernel,
     .doc = "FLOPs = 2*numel(X) + N*C; bytes = X read, Y written",
     .attrs = a_glppool},
    {.name = "LRN", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = lrn_infer, .cost = lrn_cost, .kernel = lrn_kernel,
     .doc = "FLOPs = numel(X)*(2*size+4); bytes = X read, Y written",
     .attrs = a_lrn},
    {.name = "InstanceNormalization", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
     .infer = inorm_infer, .cost = inorm_cost, .kernel = inorm_kernel,
     .doc = "FLOPs = 7*numel(X); bytes = X+scale+B read, Y written",
     .attrs = a_inorm},
    {.name = "BatchNormalization", .domain = "", .pattern = FA_PATTERN_BROADCAST,
     .min_inputs = 5, .max_inputs = 5, .min_outputs = 1, .max_outputs = 5,
     .infer = bn_infer, .cost = bn_cost, .kernel = bn_kernel,
     .doc = "FLOPs = 4*numel(X) inference, 7*numel(X) training; bytes = X+4 params read, outputs written",
     .attrs = a_bn},
    {.name = "Resize", .domain = "", .pattern = FA_PATTERN_INJECTIVE,
     .min_inputs = 1, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
     .infer = rz_infer, .cost = rz_cost, .kernel = rz_kernel,
     .doc = "FLOPs = numel(Y)*2*taps (linear 2^axes, cubic 4^axes, nearest 0); bytes = X read, Y written",
     .attrs = a_resize},
    {.name = "Upsample", .domain = "", .pattern = FA_PATTERN_INJECTIVE,
     .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
     .infer = rz_infer, .cost = rz_cost, .kernel = rz_kernel,
     .doc = "as Resize-10 (asymmetric coordinates, nearest floor up / ceil down)",
     .attrs = a_upsample},
    {.name = "GridSample", .domain = "", .pattern = FA_PATTERN_OPAQUE,
     .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
     .infer = gs_infer, .cost = gs_cost, .kernel = gs_kernel,
     .doc = "FLOPs = numel(Y)*2*taps + 10*numel(grid); bytes = X + grid read, Y written",
     .attrs = a_gridsample},
    {.name = "QuantizeLinear", .domain = "", .pattern = FA_PATTERN_BROADCAST,
     .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
     .infer = ql_infer, .cost = ql_cost, .kernel = ql_kernel,
     .doc = "FLOPs = 3*numel(X); bytes = X+scale+zp read, Y written",
     .attrs = a_quant},
    {.name = "DequantizeLinear", .domain = "", .pattern = FA_PATTERN_BROADCAST,
     .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
     .infer = dql_infer, .cost = dql_cost, .kernel = dql_kernel,
     .doc = "FLOPs = 2*numel(X); bytes = X+scale+zp read, Y written",
     .attrs = a_dequant},
    {.name = "ConvInteger", .domain = "", .pattern = FA_PATTERN_OUT_ELEMWISE_FUSABLE,
     .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
     .infer = iconv_infer, .cost = iconv_cost, .kernel = iconv_kernel,
     .doc = "FLOPs = 2*N*M*prod(out)*(C/group)*prod(k) integer MACs; bytes = inputs read, Y written",
     .attrs = a_iconv},
    {.name = "QLinearConv", .domain = "", .pattern = FA_PATTERN_OUT_ELEMWISE_FUSABLE,
     .min_inputs = 8, .max_inputs = 9, .min_outputs = 1, .max_outputs = 1,
     .infer = iconv_infer, .cost = iconv_cost, .kernel = iconv_kernel,
     .doc = "FLOPs = 2*N*M*prod(out)*(C/group)*prod(k) + 3*numel(Y); bytes = inputs read, Y written",
     .attrs = a_iconv},
    {.name = "MatMulInteger", .domain = "", .pattern = FA_PATTERN_OUT_ELEMWISE_FUSABLE,
     .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
     .infer = imm_infer, .cost = imm_cost, .kernel = imm_kernel,
     .doc = "FLOPs = 2*batch*M*N*K integer MACs; bytes = inputs read, Y written"},
    {.name = "QLinearMatMul", .domain = "", .pattern = FA_PATTERN_OUT_ELEMWISE_FUSABLE,
     .min_inputs = 8, .max_inputs = 8, .min_outputs = 1, .max_outputs = 1,
     .infer = imm_infer, .cost = imm_cost, .kernel = imm_kernel,
     .doc = "FLOPs = 2*batch*M*N*K + 3*numel(Y); bytes = inputs read, Y written"},
    {.name = "DynamicQuantizeLinear", .domain = "", .pattern = FA_PATTERN_REDUCTION,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 3, .max_outputs = 3,
     .infer = dynq_infer, .cost = dynq_cost, .kernel = dynq_kernel,
     .doc = "FLOPs = 5*numel(X); bytes = X read, Y + scale + zero point written"},
    {0},
};
