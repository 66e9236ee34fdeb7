/* runtime/cpu/dwconv.c — see dwconv.h. This file is compiled with -mavx512f (CMakeLists.txt);
 * its kernels run only after fa_dwconv_available() said the CPU has AVX-512F. */
#include "dwconv.h"

#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "graph/vmath.h"
#include "epilogue512-inl.h"

struct fa_dwconv {
    fa_dwconv_shape s;
    int64_t cb;     /* channel blocks of 16 */
    float *w;       /* [cb][kh][kw][16], 64-byte aligned */
    float *b;       /* [cb][16], 64-byte aligned (zeros without a bias) */
    fa_post_op_kind act;
    bool has_act;
    float alpha, beta;
};

/* outputs of one row computed together in the interior: 8 accumulators, the 9 weights of a 3x3
 * and the input vectors fit AVX-512's 32 registers */
enum { OWB = 8 };

bool fa_dwconv_available(void) { return fa_vmath512_available(); }

bool fa_dwconv_epilogue_ok(const fa_post_op *ops, int n_ops)
{
    /* fa_unary16's kinds but the sigmoid (a depthwise convolution's epilogue is never one alone) */
    return n_ops == 0 || (n_ops == 1 && ops && fa_unary16_has(ops[0].kind) && ops[0].kind != FA_POST_OP_SIGMOID);
}

fa_dwconv *fa_dwconv_create(const fa_dwconv_shape *sh, const float *w, const float *b, const fa_post_op *ops, int n_ops)
{
    if (!sh || !w || !fa_dwconv_epilogue_ok(ops, n_ops)) return NULL;
    if (sh->n < 1 || sh->c < 1 || sh->ih < 1 || sh->iw < 1 || sh->oh < 1 || sh->ow < 1 || sh->kh < 1 || sh->kw < 1 ||
        sh->kh > FA_DWCONV_KMAX || sh->kw > FA_DWCONV_KMAX || sh->sh < 1 || sh->sw < 1 || sh->ph < 0 || sh->pw < 0 ||
        sh->ph >= sh->kh || sh->pw >= sh->kw || sh->c > INT32_MAX)
        return NULL;
    /* every output row and column reads inside the padded input: oh·sh - ph + kh - 1 < ih + pad
     * at most kh - 1 past the end (the trailing pad), which the row and column clipping skip */
    if ((sh->oh - 1) * sh->sh - sh->ph >= sh->ih || (sh->ow - 1) * sh->sw - sh->pw >= sh->iw) return NULL;
    fa_dwconv *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->s = *sh;
    d->cb = (sh->c + 15) / 16;
    size_t kk = (size_t)sh->kh * (size_t)sh->kw;
    size_t wn = (size_t)d->cb * kk * 16, bn = (size_t)d->cb * 16;
    if (posix_memalign((void **)&d->w, 64, wn * sizeof(float)) != 0) d->w = NULL;
    if (posix_memalign((void **)&d->b, 64, bn * sizeof(float)) != 0) d->b = NULL;
    if (!d->w || !d->b) {
        fa_dwconv_free(d);
        return NULL;
    }
    memset(d->w, 0, wn * sizeof(float));
    memset(d->b, 0, bn * sizeof(float));
    for (int64_t c = 0; c < sh->c; c++) {
        for (size_t k = 0; k < kk; k++) d->w[((size_t)(c / 16) * kk + k) * 16 + (size_t)(c % 16)] = w[(size_t)c * kk + k];
        if (b) d->b[c] = b[c];
    }
    d->has_act = n_ops == 1;
    if (d->has_act) {
        d->act = ops[0].kind;
        d->alpha = ops[0].alpha;
        d->beta = ops[0].beta;
    }
    return d;
}

void fa_dwconv_free(fa_dwconv *d)
{
    if (!d) return;
    free(d->w);
    free(d->b);
    free(d);
}

/* The epilogue on one vector of sums (runtime/cpu/epilogue512-inl.h: graph/post_op.h's
 * definitions; the swish is graph/vmath512.c's, as the unfused Sigmoid·x and the swish after
 * oneDNN's convolution take). */
static inline __m512 act16(const fa_dwconv *d, __m512 v) { return d->has_act ? fa_unary16(d->act, d->alpha, d->beta, v) : v; }

/* One output row (batch image nb, channel block cb, output row oh) for a KH x KW kernel; KH and KW
 * are compile-time constants in the specialised copies below, so the window loops unroll. */
static inline void dw_row(const fa_dwconv *d, const float *x, float *y, int64_t nb, int64_t cb, int64_t oh, const int KH,
                          const int KW)
{
    const fa_dwconv_shape *s = &d->s;
    const int64_t IH = s->ih, IW = s->iw, OW = s->ow, SW = s->sw;
    const float *xc = x + ((size_t)(nb * d->cb + cb) * (size_t)IH * (size_t)IW) * 16;
    const float *wc = d->w + (size_t)cb * (size_t)(KH * KW) * 16;
    float *yr = y + (((size_t)(nb * d->cb + cb) * (size_t)s->oh + (size_t)oh) * (size_t)OW) * 16;
    const __m512 bias = _mm512_load_ps(d->b + cb * 16);
    const int64_t ih0 = oh * s->sh - s->ph;
    const int kh0 = ih0 < 0 ? (int)-ih0 : 0;
    const int kh1 = ih0 + KH > IH ? (int)(IH - ih0) : KH;
    /* interior columns [lo, hi]: every kw of the window inside the input; the columns before
     * and after (and the interior's last few, short of a block) one at a time, clipped */
    const int64_t lo = (s->pw + SW - 1) / SW;
    int64_t hi = IW - KW + s->pw >= 0 ? (IW - KW + s->pw) / SW : -1;
    if (hi > OW - 1) hi = OW - 1;
    int64_t ow = 0;
#define DW_ONE(o)                                                                                                      \
    do {                                                                                                               \
        __m512 a_ = bias;                                                                                              \
        const int64_t iw0_ = (o) * SW - s->pw;                                                                         \
        for (int kh = kh0; kh < kh1; kh++) {                                                                           \
            const float *xr_ = xc + (size_t)(ih0 + kh) * (size_t)IW * 16;                                             \
            for (int kw = 0; kw < KW; kw++) {                                                                          \
                int64_t iw_ = iw0_ + kw;                                                                               \
                if (iw_ < 0 || iw_ >= IW) continue;                                                                    \
                a_ = _mm512_fmadd_ps(_mm512_load_ps(wc + (kh * KW + kw) * 16), _mm512_loadu_ps(xr_ + iw_ * 16), a_);    \
            }                                                                                                          \
        }                                                                                                              \
        _mm512_storeu_ps(yr + (o) * 16, act16(d, a_));                                                                  \
    } while (0)
    /* an interior block of NB outputs, NB a constant: its sums stay in registers */
#define DW_BLOCK(NB)                                                                                                   \
    do {                                                                                                               \
        __m512 a_[NB];                                                                                                 \
        for (int j = 0; j < (NB); j++) a_[j] = bias;                                                                   \
        for (int kh = kh0; kh < kh1; kh++) {                                                                           \
            const float *xr_ = xc + ((size_t)(ih0 + kh) * (size_t)IW + (size_t)(ow * SW - s->pw)) * 16;               \
            for (int kw = 0; kw < KW; kw++) {                                                                          \
                const __m512 wv_ = _mm512_load_ps(wc + (kh * KW + kw) * 16);                                           \
                for (int j = 0; j < (NB); j++) a_[j] = _mm512_fmadd_ps(wv_, _mm512_loadu_ps(xr_ + (j * SW + kw) * 16), a_[j]); \
            }                                                                                                          \
        }                                                                                                              \
        for (int j = 0; j < (NB); j++) _mm512_storeu_ps(yr + (ow + j) * 16, act16(d, a_[j]));                         \
        ow += (NB);                                                                                                    \
    } while (0)
    for (; ow < OW && ow < lo; ow++) DW_ONE(ow);
    while (ow + OWB - 1 <= hi) DW_BLOCK(OWB);
    if (ow + 3 <= hi) DW_BLOCK(4);
    if (ow + 1 <= hi) DW_BLOCK(2);
    if (ow <= hi) DW_BLOCK(1);
    for (; ow < OW; ow++) DW_ONE(ow);
#undef DW_BLOCK
#undef DW_ONE
}

#define DW_ROWS(NAME, KH, KW)                                                                                  \
    static void NAME(const fa_dwconv *d, const float *x, float *y, int threads)                                \
    {                                                                                                          \
        const int64_t rows = d->s.n * d->cb * d->s.oh;                                                         \
        _Pragma("omp parallel for num_threads(threads) schedule(static) if (threads > 1)")                     \
        for (int64_t r = 0; r < rows; r++) {                                                                   \
            int64_t oh = r % d->s.oh, t = r / d->s.oh;                                                          \
            dw_row(d, x, y, t / d->cb, t % d->cb, oh, (KH), (KW));                                              \
        }                                                                                                      \
    }
DW_ROWS(dw_3x3, 3, 3)
DW_ROWS(dw_5x5, 5, 5)
DW_ROWS(dw_any, d->s.kh, d->s.kw)

void fa_dwconv_run(const fa_dwconv *d, const float *x, float *y, int threads)
{
    if (d->s.kh == 3 && d->s.kw == 3) dw_3x3(d, x, y, threads);
    else if (d->s.kh == 5 && d->s.kw == 5) dw_5x5(d, x, y, threads);
    else dw_any(d, x, y, threads);
}
