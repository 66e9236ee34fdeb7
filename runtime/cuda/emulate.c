/* runtime/cuda/emulate — host versions of the executor's CUDA kernels (same arguments, same index
 * arithmetic as runtime/cuda/kernels.c; each "grid-stride loop" is a plain loop) plus naive
 * column-major SGEMM and cross-correlation in the cuBLAS / cuDNN calling conventions, so the
 * whole cuda execution plan can be checked against the cpu target without a GPU
 * (fa_cuda_exec_create_emulated). Not a performance path. */
#include "runtime/cuda/cuda-impl.h"
#include "graph/op_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef long long i64;

/* kernels.c's codes: the unary and binary tables of graph/op_math.h (fa_unary_op, fa_binary_op) */
enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_SUMSQ, R_L2, R_L1 };

static float un(int op, float x, float a, float b, float g)
{
    return fa_unary_math_eval((fa_unary_op)op, x, a, b, g);
}

/* the binary ops: graph/op_math.h's table, as the kernel source expands it */
static float bin(int op, float x, float y) { return fa_binary_math_eval((fa_binary_op)op, x, y); }

static i64 bc_off(const fa_bc *s, i64 i, i64 *ob, i64 *oc)
{
    i64 r = i, oa = 0;
    *ob = 0;
    *oc = 0;
    for (int d = s->rank - 1; d >= 0; d--) {
        i64 q = r % s->dims[d];
        r /= s->dims[d];
        oa += q * s->sa[d];
        *ob += q * s->sb[d];
        *oc += q * s->sc[d];
    }
    return oa;
}

static i64 cp_off(const fa_cp *c, i64 i)
{
    i64 r = i, o = c->base;
    for (int d = c->rank - 1; d >= 0; d--) {
        i64 q = r % c->dims[d];
        r /= c->dims[d];
        o += q * c->s[d];
    }
    return o;
}

#define ARG(i, T) (*(T *)args[i])

static void copy_kernel(void **args, size_t es, bool scatter)
{
    const uint8_t *in = ARG(0, const uint8_t *);
    uint8_t *out = ARG(1, uint8_t *);
    const fa_cp *c = (const fa_cp *)args[2];
    for (i64 i = 0; i < c->n; i++) {
        i64 o = cp_off(c, i);
        if (scatter) memcpy(out + o * es, in + i * es, es);
        else memcpy(out + i * es, in + o * es, es);
    }
}

static void take_kernel(void **args, size_t es)
{
    const uint8_t *data = ARG(0, const uint8_t *);
    const void *idx = ARG(1, const void *);
    int idx64 = ARG(2, int);
    uint8_t *out = ARG(3, uint8_t *);
    i64 outer = ARG(4, i64), axis = ARG(5, i64), inner = ARG(6, i64), nidx = ARG(7, i64);
    i64 n = outer * nidx * inner;
    for (i64 i = 0; i < n; i++) {
        i64 k = i % inner, j = (i / inner) % nidx, o = i / (inner * nidx);
        i64 ix = idx64 ? ((const i64 *)idx)[j] : (i64)((const int *)idx)[j];
        if (ix < 0) ix += axis;
        if (ix >= 0 && ix < axis) memcpy(out + i * es, data + ((o * axis + ix) * inner + k) * es, es);
        else memset(out + i * es, 0, es);
    }
}

fa_status fa_cuda_emu_launch(fa_ctx *ctx, const char *k, void **args)
{
    if (!strcmp(k, "fa_unary")) {
        const float *x = ARG(0, const float *);
        float *y = ARG(1, float *);
        i64 n = ARG(2, i64);
        int op = ARG(3, int);
        float a = ARG(4, float), b = ARG(5, float), g = ARG(6, float);
        for (i64 i = 0; i < n; i++) y[i] = un(op, x[i], a, b, g);
    } else if (!strcmp(k, "fa_binary")) {
        const float *a = ARG(0, const float *), *b = ARG(1, const float *);
        float *y = ARG(2, float *);
        const fa_bc *s = (const fa_bc *)args[3];
        int op = ARG(4, int);
        for (i64 i = 0; i < s->n; i++) {
            i64 ob, oc, oa = bc_off(s, i, &ob, &oc);
            y[i] = bin(op, a[oa], b[ob]);
        }
    } else if (!strcmp(k, "fa_binary_flat")) {
        const float *a = ARG(0, const float *), *b = ARG(1, const float *);
        float *y = ARG(2, float *);
        i64 n = ARG(3, i64);
        int op = ARG(4, int);
        for (i64 i = 0; i < n; i++) y[i] = bin(op, a[i], b[i]);
    } else if (!strcmp(k, "fa_where")) {
        const uint8_t *c = ARG(0, const uint8_t *);
        const float *a = ARG(1, const float *), *b = ARG(2, const float *);
        float *y = ARG(3, float *);
        const fa_bc *s = (const fa_bc *)args[4];
        for (i64 i = 0; i < s->n; i++) {
            i64 ob, oc, oa = bc_off(s, i, &ob, &oc);
            y[i] = c[oc] ? a[oa] : b[ob];
        }
    } else if (!strncmp(k, "fa_gather_", 10)) copy_kernel(args, (size_t)atoi(k + 10), false);
    else if (!strncmp(k, "fa_scatter_", 11)) copy_kernel(args, (size_t)atoi(k + 11), true);
    else if (!strcmp(k, "fa_take_4")) take_kernel(args, 4);
    else if (!strcmp(k, "fa_take_8")) take_kernel(args, 8);
    else if (!strcmp(k, "fa_reduce")) {
        const float *x = ARG(0, const float *);
        float *y = ARG(1, float *);
        i64 outer = ARG(2, i64), red = ARG(3, i64), inner = ARG(4, i64);
        int op = ARG(5, int);
        for (i64 o = 0; o < outer * inner; o++) {
            i64 io = o / inner, ii = o % inner;
            const float *p = x + io * red * inner + ii;
            int kind = (op == R_MAX) ? 1 : (op == R_MIN) ? 2 : 0;
            float acc = kind == 0 ? 0.f : kind == 1 ? -INFINITY : INFINITY;
            bool nan = false;
            for (i64 kk = 0; kk < red; kk++) {
                float v = p[kk * inner];
                if (v != v) nan = true;
                if (op == R_SUMSQ || op == R_L2) v = v * v;
                else if (op == R_L1) v = fabsf(v);
                acc = kind == 0 ? acc + v : kind == 1 ? fmaxf(acc, v) : fminf(acc, v);
            }
            if (op == R_MEAN) acc /= (float)red;
            if (op == R_L2) acc = sqrtf(acc);
            if (nan && kind != 0) acc = NAN;
            y[o] = acc;
        }
    } else if (!strcmp(k, "fa_softmax")) {
        const float *x = ARG(0, const float *);
        float *y = ARG(1, float *);
        i64 outer = ARG(2, i64), axis = ARG(3, i64), inner = ARG(4, i64);
        int lg = ARG(5, int);
        for (i64 o = 0; o < outer * inner; o++) {
            i64 io = o / inner, ii = o % inner;
            const float *p = x + io * axis * inner + ii;
            float *q = y + io * axis * inner + ii;
            float m = -INFINITY, s = 0.f;
            for (i64 kk = 0; kk < axis; kk++) m = fmaxf(m, p[kk * inner]);
            for (i64 kk = 0; kk < axis; kk++) s += expf(p[kk * inner] - m);
            for (i64 kk = 0; kk < axis; kk++)
                q[kk * inner] = lg ? p[kk * inner] - m - logf(s) : expf(p[kk * inner] - m) / s;
        }
    } else if (!strcmp(k, "fa_layernorm")) {
        const float *x = ARG(0, const float *), *sc = ARG(1, const float *), *bi = ARG(2, const float *);
        float *y = ARG(3, float *);
        i64 rows = ARG(4, i64), cols = ARG(5, i64);
        float eps = ARG(6, float);
        for (i64 r = 0; r < rows; r++) {
            const float *p = x + r * cols;
            float *q = y + r * cols;
            float s = 0.f, v = 0.f;
            for (i64 kk = 0; kk < cols; kk++) s += p[kk];
            float mean = s / (float)cols;
            for (i64 kk = 0; kk < cols; kk++) v += (p[kk] - mean) * (p[kk] - mean);
            float inv = 1.f / sqrtf(v / (float)cols + eps);
            for (i64 kk = 0; kk < cols; kk++) q[kk] = (p[kk] - mean) * inv * sc[kk] + (bi ? bi[kk] : 0.f);
        }
    } else if (!strcmp(k, "fa_batchnorm")) {
        const float *x = ARG(0, const float *), *sc = ARG(1, const float *), *bi = ARG(2, const float *);
        const float *mean = ARG(3, const float *), *var = ARG(4, const float *);
        float *y = ARG(5, float *);
        i64 n = ARG(6, i64), c = ARG(7, i64), s = ARG(8, i64);
        float eps = ARG(9, float);
        for (i64 i = 0; i < n * c * s; i++) {
            i64 ch = (i / s) % c;
            y[i] = (x[i] - mean[ch]) * (sc[ch] / sqrtf(var[ch] + eps)) + bi[ch];
        }
    } else if (!strcmp(k, "fa_pool2d")) {
        const float *x = ARG(0, const float *);
        float *y = ARG(1, float *);
        i64 nc = ARG(2, i64);
        int h = ARG(3, int), w = ARG(4, int), oh = ARG(5, int), ow = ARG(6, int), kh = ARG(7, int), kw = ARG(8, int);
        int sh = ARG(9, int), sw = ARG(10, int), ph = ARG(11, int), pw = ARG(12, int), dh = ARG(13, int),
            dw = ARG(14, int), mode = ARG(15, int);
        for (i64 i = 0; i < nc * oh * ow; i++) {
            int ox = (int)(i % ow), oy = (int)((i / ow) % oh);
            const float *p = x + (i / ((i64)oh * ow)) * h * w;
            float acc = mode == 0 ? -INFINITY : 0.f;
            int cnt = 0;
            for (int ky = 0; ky < kh; ky++)
                for (int kx = 0; kx < kw; kx++) {
                    int iy = oy * sh - ph + ky * dh, ix = ox * sw - pw + kx * dw;
                    if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                    float v = p[iy * w + ix];
                    if (mode == 0) acc = (v > acc || v != v) ? v : acc;
                    else acc += v;
                    cnt++;
                }
            if (mode == 1) acc = cnt ? acc / (float)cnt : 0.f;
            else if (mode == 2) acc /= (float)(kh * kw);
            y[i] = acc;
        }
    } else if (!strcmp(k, "fa_fill")) {
        float *y = ARG(0, float *);
        i64 n = ARG(1, i64);
        float v = ARG(2, float);
        for (i64 i = 0; i < n; i++) y[i] = v;
    } else {
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "cuda emulation: no host version of kernel %s", k);
    }
    return FA_OK;
}

void fa_cuda_emu_sgemm_batched(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                               long long sa, const float *b, int ldb, long long sb, float beta, float *c, int ldc,
                               long long sc, int batch)
{
    for (int bt = 0; bt < batch; bt++) {
        const float *A = a + bt * sa, *B = b + bt * sb;
        float *C = c + bt * sc;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double acc = 0;
                for (int p = 0; p < k; p++) {
                    float av = trans_a ? A[p + (i64)i * lda] : A[i + (i64)p * lda];
                    float bv = trans_b ? B[j + (i64)p * ldb] : B[p + (i64)j * ldb];
                    acc += (double)av * bv;
                }
                float *cv = &C[i + (i64)j * ldc];
                *cv = (float)(alpha * acc) + (beta != 0.f ? beta * *cv : 0.f);
            }
    }
}

fa_status fa_cuda_emu_conv(fa_ctx *ctx, const fa_cuda_conv *c, const float *x, const float *w, const float *b, float *y)
{
    if (c->rank != 4) return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "cuda emulation: only 2-D convolutions");
    i64 N = c->x_dims[0], C = c->x_dims[1], H = c->x_dims[2], W = c->x_dims[3];
    i64 M = c->w_dims[0], CG = c->w_dims[1], KH = c->w_dims[2], KW = c->w_dims[3];
    i64 OH = c->y_dims[2], OW = c->y_dims[3], G = c->groups, MG = M / G;
    for (i64 nn = 0; nn < N; nn++)
        for (i64 mm = 0; mm < M; mm++) {
            i64 g = mm / MG;
            for (i64 oy = 0; oy < OH; oy++)
                for (i64 ox = 0; ox < OW; ox++) {
                    double acc = b && c->has_bias ? b[mm] : 0.0;
                    for (i64 cc = 0; cc < CG; cc++)
                        for (i64 ky = 0; ky < KH; ky++) {
                            i64 iy = oy * c->strides[0] - c->pads[0] + ky * c->dilations[0];
                            if (iy < 0 || iy >= H) continue;
                            for (i64 kx = 0; kx < KW; kx++) {
                                i64 ix = ox * c->strides[1] - c->pads[1] + kx * c->dilations[1];
                                if (ix < 0 || ix >= W) continue;
                                acc += (double)x[((nn * C + g * CG + cc) * H + iy) * W + ix] *
                                       w[((mm * CG + cc) * KH + ky) * KW + kx];
                            }
                        }
                    y[((nn * M + mm) * OH + oy) * OW + ox] = (float)acc;
                }
        }
    return FA_OK;
}
