/* runtime/cpu/pixconv.c — see pixconv.h. This file is compiled with -mavx512f (CMakeLists.txt);
 * its kernel runs only after fa_pixconv_available() said the CPU has AVX-512F. */
#include "pixconv.h"

#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>

#include "epilogue512-inl.h"
#include "graph/vmath.h"
#include "runtime/runtime-impl.h"

struct fa_pixconv {
    int64_t k, n, n_padded;
    bool has_act;
    fa_post_op_kind act;
    float alpha, beta;
};

bool fa_pixconv_available(void) { return fa_vmath512_available(); }

bool fa_pixconv_epilogue_ok(const fa_post_op *ops, int n_ops)
{
    if (n_ops == 0) return true;
    return n_ops == 1 && ops && fa_unary16_has(ops[0].kind);
}

fa_pixconv *fa_pixconv_create(int64_t k, int64_t n, int64_t n_padded, const fa_post_op *ops, int n_ops)
{
    if (k < 1 || n < 1 || n_padded < n || !fa_pixconv_epilogue_ok(ops, n_ops)) return NULL;
    fa_pixconv *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->k = k;
    p->n = n;
    p->n_padded = n_padded;
    p->has_act = n_ops == 1;
    if (p->has_act) {
        p->act = ops[0].kind;
        p->alpha = ops[0].alpha;
        p->beta = ops[0].beta;
    }
    return p;
}

void fa_pixconv_free(fa_pixconv *p) { free(p); }

/* y[r0..r1) += b, then the post-op, 16 at a time (masked tail) */
static void epilogue(const fa_pixconv *p, const float *b, int64_t r0, int64_t r1, float *y)
{
    for (int64_t r = r0; r < r1; r += 16) {
        __mmask16 m = r1 - r >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (r1 - r)) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(m, y + r);
        if (b) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, b + r));
        if (p->has_act) v = fa_unary16(p->act, p->alpha, p->beta, v);
        _mm512_mask_storeu_ps(y + r, m, v);
    }
}

static void rows(const fa_pixconv *p, const float *x, const float *w, const float *b, int64_t r0, int64_t r1, float *y)
{
    fa_cpu_gemv_dot_rows16(x, w, p->k, r0, r1, y); /* runtime/cpu/gemv.c */
    epilogue(p, b, r0, r1, y);
}

void fa_pixconv_run(const fa_pixconv *p, const float *x, const float *w, const float *b, float *y, int threads)
{
    if (threads > 1 && p->k * p->n >= FA_PIXCONV_PAR_MIN_WEIGHTS) {
#pragma omp parallel num_threads(threads)
        {
            int nt = omp_get_num_threads(), id = omp_get_thread_num();
            /* rows split in multiples of 16 (each thread's epilogue vectors whole but the last) */
            int64_t per = ((p->n + nt - 1) / nt + 15) / 16 * 16, r0 = (int64_t)id * per, r1 = r0 + per < p->n ? r0 + per : p->n;
            if (r0 < r1) rows(p, x, w, b, r0, r1, y);
        }
    } else {
        rows(p, x, w, b, 0, p->n, y);
    }
    for (int64_t r = p->n; r < p->n_padded; r++) y[r] = 0.0f; /* the blocked layout's padded channels */
}
