/* runtime/cpu/gemv — the matrix-vector product of a batch-1 MatMul or Gemm with constant weights,
 * y[1, N] = alpha · x[1, K] · B[K, N] + beta · C (issue 35: "MatMul/Gemm at small M").
 *
 * Why not oneDNN's matmul. At M = 1 every weight is read once and used once: the product is a
 * stream over B, bound by memory bandwidth when B is not in cache, which it seldom is in a model
 * (a classifier runs after the whole network evicted it). oneDNN 2.6's brgemm matmul, given M = 1
 * and its blocked weights, streamed them at 21–28 GB/s here where one sequential read per thread
 * reached 38 (1280 × 1000, cache flushed: 0.247 → 0.135 ms; bench/README.md "GEMV at batch 1").
 * Warm, the two are within 10 %.
 *
 * The two weight orders, each read front to back:
 *  - Gemm with transB = 1 (PyTorch's Linear: B stored [N, K]): each output is the dot product of a
 *    contiguous row of B with x; the threads split N.
 *  - MatMul, or Gemm with transB = 0 (B stored [K, N]): y is the sum over k of x[k] · B[k, :]; the
 *    threads split K, each adds its rows into a partial y of its own (N floats, in L1 or L2), and
 *    the partials are summed after. Splitting N instead gave each thread K strided segments:
 *    1.3–1.4× slower cold at 3072 × 768.
 * The weights are read where the model holds them (no packed copy: issue 39's memory).
 *
 * Where: AVX-512F cores (16 lanes) or AVX2 + FMA ones (8 lanes; other CPUs keep oneDNN's), unfused float32 nodes
 * whose A has numel K (every leading dim 1; for a Gemm, transA does not move a single row), whose B
 * is a constant 2-D initializer and whose C (Gemm) is absent or broadcasts to [1, N] (a scalar,
 * [N], [1, N]). Fused nodes keep oneDNN, whose post-ops they need. FA_NO_DNNL (the reference
 * kernels only) turns this off too. The sum order differs from oneDNN's: four partial sums per row
 * (dot form) or per thread (axpy form), within the float tolerance every check uses. */
#include "runtime/runtime-impl.h"

#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

/* below this many weights one thread does it: a wake-up (~5 µs) costs more than half of it */
#define GEMV_PAR_MIN_WEIGHTS 65536

typedef struct gemv_state {
    fa_cpu_gemv gv;  /* the product; B (input 1) is read at each run as the executor hands it */
    int c_input;     /* the node's input index of C, -1 none */
} gemv_state;

/* The instruction set the product runs in: 2 AVX-512F (16 lanes), 1 AVX2 + FMA (8 lanes), 0 none
 * (oneDNN's then); the CPU's, checked once, unless a test forced another (fa_cpu_gemv_force_isa). */
static int g_forced = -1;
static int gemv_isa(void)
{
    static int cpu = -1;
    if (cpu < 0) {
        __builtin_cpu_init();
        cpu = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
    }
    return g_forced >= 0 && g_forced <= cpu ? g_forced : cpu;
}

bool fa_cpu_gemv_available(void) { return gemv_isa() > 0; }

void fa_cpu_gemv_force_isa(int isa) { g_forced = isa; }

/* y[n] = B[n, :] · x for n in [n0, n1): four accumulators per row, a masked tail */
__attribute__((target("avx512f"))) void fa_cpu_gemv_dot_rows16(const float *x, const float *B, int64_t K, int64_t n0,
                                                               int64_t n1, float *y)
{
    for (int64_t n = n0; n < n1; n++) {
        const float *w = B + n * K;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int64_t k = 0;
        for (; k + 64 <= K; k += 64) {
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + k), _mm512_loadu_ps(x + k), a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + k + 16), _mm512_loadu_ps(x + k + 16), a1);
            a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w + k + 32), _mm512_loadu_ps(x + k + 32), a2);
            a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w + k + 48), _mm512_loadu_ps(x + k + 48), a3);
        }
        for (; k + 16 <= K; k += 16) a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + k), _mm512_loadu_ps(x + k), a0);
        if (k < K) {
            __mmask16 m = (__mmask16)((1u << (K - k)) - 1u);
            a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w + k), _mm512_maskz_loadu_ps(m, x + k), a1);
        }
        y[n] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    }
}

/* acc[0, N) = sum over k in [k0, k1) of x[k] · B[k, :]: four rows per pass over acc */
__attribute__((target("avx512f"))) static void axpy_cols(const float *x, const float *B, int64_t N, int64_t k0, int64_t k1,
                                                         float *acc)
{
    memset(acc, 0, sizeof(float) * (size_t)N);
    int64_t k = k0;
    for (; k + 4 <= k1; k += 4) {
        const float *b0 = B + k * N, *b1 = b0 + N, *b2 = b1 + N, *b3 = b2 + N;
        __m512 x0 = _mm512_set1_ps(x[k]), x1 = _mm512_set1_ps(x[k + 1]), x2 = _mm512_set1_ps(x[k + 2]),
               x3 = _mm512_set1_ps(x[k + 3]);
        int64_t n = 0;
        for (; n + 16 <= N; n += 16) {
            __m512 a = _mm512_loadu_ps(acc + n);
            a = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b0 + n), a);
            a = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b1 + n), a);
            a = _mm512_fmadd_ps(x2, _mm512_loadu_ps(b2 + n), a);
            a = _mm512_fmadd_ps(x3, _mm512_loadu_ps(b3 + n), a);
            _mm512_storeu_ps(acc + n, a);
        }
        for (; n < N; n++) acc[n] += x[k] * b0[n] + x[k + 1] * b1[n] + x[k + 2] * b2[n] + x[k + 3] * b3[n];
    }
    for (; k < k1; k++)
        for (int64_t n = 0; n < N; n++) acc[n] += x[k] * B[k * N + n];
}

/* dot_rows with 8 AVX2 lanes: four accumulators per row, a scalar tail */
__attribute__((target("avx2,fma"))) static void dot_rows8(const float *x, const float *B, int64_t K, int64_t n0, int64_t n1,
                                                          float *y)
{
    for (int64_t n = n0; n < n1; n++) {
        const float *w = B + n * K;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int64_t k = 0;
        for (; k + 32 <= K; k += 32) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + k), _mm256_loadu_ps(x + k), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + k + 8), _mm256_loadu_ps(x + k + 8), a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w + k + 16), _mm256_loadu_ps(x + k + 16), a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w + k + 24), _mm256_loadu_ps(x + k + 24), a3);
        }
        for (; k + 8 <= K; k += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + k), _mm256_loadu_ps(x + k), a0);
        __m256 a = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        float sum = _mm_cvtss_f32(h);
        for (; k < K; k++) sum += w[k] * x[k];
        y[n] = sum;
    }
}

/* axpy_cols with 8 AVX2 lanes */
__attribute__((target("avx2,fma"))) static void axpy_cols8(const float *x, const float *B, int64_t N, int64_t k0, int64_t k1,
                                                           float *acc)
{
    memset(acc, 0, sizeof(float) * (size_t)N);
    int64_t k = k0;
    for (; k + 4 <= k1; k += 4) {
        const float *b0 = B + k * N, *b1 = b0 + N, *b2 = b1 + N, *b3 = b2 + N;
        __m256 x0 = _mm256_set1_ps(x[k]), x1 = _mm256_set1_ps(x[k + 1]), x2 = _mm256_set1_ps(x[k + 2]),
               x3 = _mm256_set1_ps(x[k + 3]);
        int64_t n = 0;
        for (; n + 8 <= N; n += 8) {
            __m256 a = _mm256_loadu_ps(acc + n);
            a = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b0 + n), a);
            a = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b1 + n), a);
            a = _mm256_fmadd_ps(x2, _mm256_loadu_ps(b2 + n), a);
            a = _mm256_fmadd_ps(x3, _mm256_loadu_ps(b3 + n), a);
            _mm256_storeu_ps(acc + n, a);
        }
        for (; n < N; n++) acc[n] += x[k] * b0[n] + x[k + 1] * b1[n] + x[k + 2] * b2[n] + x[k + 3] * b3[n];
    }
    for (; k < k1; k++)
        for (int64_t n = 0; n < N; n++) acc[n] += x[k] * B[k * N + n];
}

typedef void (*dot_fn)(const float *, const float *, int64_t, int64_t, int64_t, float *);
typedef void (*axpy_fn)(const float *, const float *, int64_t, int64_t, int64_t, float *);

static void gemv_product(const float *x, const float *B, int64_t K, int64_t N, bool rows, int threads, float *partial, float *y)
{
    bool wide = gemv_isa() == 2;
    dot_fn dot_rows_ = wide ? fa_cpu_gemv_dot_rows16 : dot_rows8;
    axpy_fn axpy_cols_ = wide ? axpy_cols : axpy_cols8;
    int nt = threads > 1 && K * N >= GEMV_PAR_MIN_WEIGHTS ? threads : 1;
    if (rows) {
        if (nt > 1) {
#pragma omp parallel num_threads(nt)
            {
                int t = omp_get_thread_num(), team = omp_get_num_threads();
                int64_t c = (N + team - 1) / team, n0 = t * c, n1 = n0 + c < N ? n0 + c : N;
                if (n0 < n1) dot_rows_(x, B, K, n0, n1, y);
            }
        } else {
            dot_rows_(x, B, K, 0, N, y);
        }
    } else if (nt > 1 && partial) {
        int used = nt;
#pragma omp parallel num_threads(nt)
        {
            int t = omp_get_thread_num(), team = omp_get_num_threads();
#pragma omp single
            used = team;
            int64_t c = (K + team - 1) / team, k0 = t * c, k1 = k0 + c < K ? k0 + c : K;
            axpy_cols_(x, B, N, k0 < K ? k0 : K, k1 > k0 ? k1 : k0, partial + (size_t)t * (size_t)N);
        }
        for (int t = 1; t < used; t++) {
            const float *p = partial + (size_t)t * (size_t)N;
            for (int64_t j = 0; j < N; j++) partial[j] += p[j];
        }
        memcpy(y, partial, sizeof(float) * (size_t)N);
    } else {
        axpy_cols_(x, B, N, 0, K, y);
    }
}

bool fa_cpu_gemv_run(fa_cpu_gemv *g, const float *x, const float *B, const float *C, int64_t c_numel, int threads,
                     float *y)
{
    if (!g->rows && threads > g->cap_threads) { /* the columns form's partial rows, one per thread */
        float *p = realloc(g->partial, sizeof(float) * (size_t)g->N * (size_t)threads);
        if (!p) return false;
        g->partial = p;
        g->cap_threads = threads;
    }
    gemv_product(x, B, g->K, g->N, g->rows, threads, g->partial, y);
    if (g->alpha != 1.0f)
        for (int64_t j = 0; j < g->N; j++) y[j] *= g->alpha;
    if (C && g->beta != 0.0f)
        for (int64_t j = 0; j < g->N; j++) y[j] += g->beta * C[c_numel == 1 ? 0 : j];
    return true;
}

void fa_cpu_gemv_release(fa_cpu_gemv *g)
{
    free(g->partial);
    g->partial = NULL;
    g->cap_threads = 0;
}

static fa_status gemv_run(fa_ctx *ctx, fa_kernel *k, const fa_node *n, const fa_value *in, int n_in, fa_value *out,
                          int n_out, int threads)
{
    (void)n_out;
    gemv_state *s = k->state;
    const fa_value *c = s->c_input >= 0 && s->c_input < n_in && in[s->c_input].data ? &in[s->c_input] : NULL;
    if (!fa_cpu_gemv_run(&s->gv, in[0].data, in[1].data, c ? c->data : NULL, c ? fa_value_numel(c) : 0, threads, out[0].data))
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory for node '%s''s partial sums", n->name);
    return FA_OK;
}

static void gemv_destroy(fa_kernel *k)
{
    gemv_state *s = k->state;
    if (s) fa_cpu_gemv_release(&s->gv);
    free(s);
    k->state = NULL;
}

static bool is_f32(const fa_tensor *t) { return t && t->dtype == FA_DTYPE_FLOAT; }

fa_status fa_cpu_gemv_kernel_create(fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_kernel *out, bool *handled)
{
    *handled = false;
    if (*n->domain || !fa_cpu_gemv_available() || getenv("FA_NO_DNNL")) return FA_OK;
    bool mm = !strcmp(n->op_type, "MatMul"), gemm = !strcmp(n->op_type, "Gemm");
    if (!(mm || gemm) || n->n_inputs < 2 || n->n_outputs < 1) return FA_OK;
    const fa_tensor *A = fa_graph_in(g, n, 0), *B = fa_graph_in(g, n, 1), *Y = fa_graph_out(g, n, 0);
    const fa_tensor *C = gemm && n->n_inputs > 2 ? fa_graph_in(g, n, 2) : NULL;
    if (!is_f32(A) || !is_f32(B) || !is_f32(Y) || (C && !is_f32(C))) return FA_OK;
    if (B->rank != 2 || !(B->flags & FA_TENSOR_CONST) || !B->data) return FA_OK;
    bool tb = gemm && fa_node_attr_int(n, "transB", 0);
    int64_t K = tb ? B->dims[1] : B->dims[0], N = tb ? B->dims[0] : B->dims[1];
    if (K <= 0 || N <= 0 || fa_tensor_numel(A) != K || fa_tensor_numel(Y) != N) return FA_OK;
    if (gemm && A->rank != 2) return FA_OK;
    if (mm && A->rank < 1) return FA_OK;
    if (C) { /* broadcast to [1, N]: a scalar, [N] or [1, N] */
        int64_t cn = fa_tensor_numel(C);
        bool ok = cn == 1 || (cn == N && C->dims[C->rank - 1] == N);
        if (!ok) return FA_OK;
    }
    gemv_state *s = calloc(1, sizeof *s);
    if (!s) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    s->gv = (fa_cpu_gemv){.K = K, .N = N, .rows = tb, .alpha = gemm ? fa_node_attr_float(n, "alpha", 1.0f) : 1.0f,
                          .beta = gemm ? fa_node_attr_float(n, "beta", 1.0f) : 1.0f};
    s->c_input = C ? 2 : -1;
    *out = (fa_kernel){.name = tb ? "gemv(rows)" : "gemv(cols)", .run = gemv_run, .destroy = gemv_destroy, .state = s};
    *handled = true;
    return FA_OK;
}
