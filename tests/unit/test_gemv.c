/* tests/unit/test_gemv — runtime/cpu/gemv.c: a batch-1 MatMul or Gemm with constant weights runs
 * as a matrix-vector product that computes what the reference kernel computes (FA_NO_DNNL: no
 * library kernel), in both weight orders (Gemm transB = 1: rows; MatMul and transB = 0: columns),
 * for K and N off every block size (the 64-float unroll, the 16-lane vector and its masked tail,
 * the 4-row unroll), alpha and beta, C as a scalar, [N] or [1, N], A of rank 1 and 3, on 1, 2 and
 * 3 threads; and that the executor chose it where it applies and not where it does not (M > 1,
 * non-constant B, a C of shape [M, N] with M > 1). Each case runs in the CPU's own instruction set,
 * in the 8-lane AVX2 form (forced, as a CPU without AVX-512 runs it), and with neither (declined:
 * oneDNN keeps every node). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "runtime/runtime-impl.h"
#include "runtime/runtime.h"
#include "testutil.h"

typedef struct gcase {
    const char *name;
    bool gemm;
    int64_t M, K, N;
    int a_rank;      /* MatMul: A's rank (its leading dims M, then 1s) */
    bool trans_b;    /* Gemm */
    float alpha, beta;
    int c_rank;      /* Gemm: 0 no C; 1 [N] or [1]; 2 [1, N] / [M, N] */
    bool c_scalar;
    bool b_input;    /* B a graph input, not a constant */
    bool expect;     /* the executor must pick the gemv kernel (where AVX-512F is present) */
} gcase;

static void add_data(fa_ctx *ctx, fa_graph *g, int t, uint64_t seed)
{
    int64_t n = fa_tensor_numel(g->tensors[t]);
    float *d = malloc(sizeof(float) * (size_t)n);
    fa_rng r;
    fa_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) d[i] = fa_rng_uniform(&r, -1.0f, 1.0f);
    assert_int_equal(fa_tensor_set_data(ctx, g->tensors[t], d, sizeof(float) * (size_t)n), FA_OK);
    g->tensors[t]->flags |= FA_TENSOR_INITIALIZER;
    free(d);
}

static fa_graph *build(fa_ctx *ctx, const gcase *c)
{
    fa_graph *g = fa_graph_create(c->name);
    fa_graph_set_opset(ctx, g, "", 17);
    int x = fa_graph_tensor(g, "x");
    int64_t ad[4] = {c->M, c->K};
    int ar = 2;
    if (!c->gemm) {
        ar = c->a_rank;
        if (ar == 1) ad[0] = c->K;
        if (ar == 3) ad[0] = c->M, ad[1] = 1, ad[2] = c->K;
    }
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, ar, ad);
    fa_graph_add_input(ctx, g, x);
    int b = fa_graph_tensor(g, "b");
    int64_t bd[2] = {c->trans_b ? c->N : c->K, c->trans_b ? c->K : c->N};
    fa_tensor_set_shape(g->tensors[b], FA_DTYPE_FLOAT, 2, bd);
    if (c->b_input) fa_graph_add_input(ctx, g, b);
    else add_data(ctx, g, b, 11);
    const char *ins[3] = {"x", "b", "c"};
    int n_in = 2;
    if (c->gemm && c->c_rank) {
        int ct = fa_graph_tensor(g, "c");
        int64_t cd[2] = {c->c_rank == 2 ? c->M : (c->c_scalar ? 1 : c->N), c->c_scalar ? 1 : c->N};
        if (c->c_rank == 1) cd[0] = c->c_scalar ? 1 : c->N;
        fa_tensor_set_shape(g->tensors[ct], FA_DTYPE_FLOAT, c->c_rank, cd);
        add_data(ctx, g, ct, 12);
        n_in = 3;
    }
    fa_node *n = fa_graph_add_node(ctx, g, "node", c->gemm ? "Gemm" : "MatMul", "", n_in, ins, 1, (const char *[]){"y"});
    if (c->gemm) {
        if (c->trans_b) fa_node_add_attr_int(g, n, "transB", 1);
        if (c->alpha != 0) fa_node_add_attr_float(g, n, "alpha", c->alpha);
        if (c->beta != 0) fa_node_add_attr_float(g, n, "beta", c->beta);
    }
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    if (fa_graph_prepare(ctx, g, NULL)) fail_msg("%s: %s", c->name, fa_ctx_errmsg(ctx));
    return g;
}

static void set_input(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int i, uint64_t seed, float **keep)
{
    const fa_tensor *t = g->tensors[g->inputs[i]];
    fa_value v = {.dtype = FA_DTYPE_FLOAT, .rank = t->rank};
    memcpy(v.dims, t->dims, sizeof v.dims);
    int64_t n = fa_value_numel(&v);
    float *d = malloc(sizeof(float) * (size_t)n);
    fa_rng r;
    fa_rng_seed(&r, seed);
    for (int64_t k = 0; k < n; k++) d[k] = fa_rng_uniform(&r, -2.0f, 2.0f);
    v.data = d;
    assert_int_equal(fa_exec_set_input(ctx, e, i, &v), FA_OK);
    *keep = d;
}

static float *run_once(fa_ctx *ctx, const fa_graph *g, int threads, int64_t *n, char *kname, size_t kcap)
{
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = threads};
    if (fa_exec_create(ctx, g, &eo, &e)) fail_msg("%s: %s", g->name, fa_ctx_errmsg(ctx));
    float *keep[2] = {NULL, NULL};
    for (int i = 0; i < g->n_inputs; i++) set_input(ctx, e, g, i, 99 + (uint64_t)i, &keep[i]);
    if (fa_exec_run(ctx, e, NULL)) fail_msg("%s: %s", g->name, fa_ctx_errmsg(ctx));
    const fa_value *v = fa_exec_output(e, 0);
    *n = fa_value_numel(v);
    float *out = malloc(sizeof(float) * (size_t)*n);
    memcpy(out, v->data, sizeof(float) * (size_t)*n);
    const char *k = fa_exec_kernel_name(e, g->nodes[0]);
    snprintf(kname, kcap, "%s", k ? k : "?");
    fa_exec_free(e);
    free(keep[0]);
    free(keep[1]);
    return out;
}

static void check(const gcase *c)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = build(ctx, c);
    int64_t nr;
    char kr[64];
    setenv("FA_NO_DNNL", "1", 1);
    float *ref = run_once(ctx, g, 1, &nr, kr, sizeof kr);
    unsetenv("FA_NO_DNNL");
    if (!strncmp(kr, "gemv", 4)) fail_msg("%s: FA_NO_DNNL still ran '%s'", c->name, kr);
    for (int threads = 1; threads <= 3; threads++) {
        int64_t n;
        char k[64];
        float *y = run_once(ctx, g, threads, &n, k, sizeof k);
        bool gemv = !strncmp(k, "gemv", 4);
        bool want = c->expect && fa_cpu_gemv_available();
        if (gemv != want) fail_msg("%s, %d threads: kernel '%s', expected %s", c->name, threads, k, want ? "gemv" : "another");
        if (want && strcmp(k, c->trans_b ? "gemv(rows)" : "gemv(cols)"))
            fail_msg("%s: kernel '%s' for transB %d", c->name, k, c->trans_b);
        assert_int_equal(n, nr);
        double maxref = 0, maxdiff = 0;
        for (int64_t i = 0; i < n; i++) {
            maxref = fmax(maxref, fabs(ref[i]));
            maxdiff = fmax(maxdiff, fabs((double)y[i] - ref[i]));
        }
        /* K products of |x| <= 2 and |w| <= 1 summed in another order: a few float ulps of the sum */
        if (!(maxdiff <= 1e-5 * fmax(maxref, 1.0) * sqrt((double)c->K)))
            fail_msg("%s, %d threads (%s): max difference %g (reference max %g)", c->name, threads, k, maxdiff, maxref);
        free(y);
    }
    free(ref);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static const gcase C[] = {
        /* the weight orders, sizes off every block: K 1..1283 around 4, 16, 64; N 1..1000 */
        {"gemm rows 1280x1000 bias", true, 1, 1280, 1000, 2, true, 0, 0, 1, false, false, true},
        {"gemm rows K 1283 N 37", true, 1, 1283, 37, 2, true, 0, 0, 1, false, false, true},
        {"gemm rows K 7 N 5 (tail only)", true, 1, 7, 5, 2, true, 0, 0, 0, false, false, true},
        {"gemm rows alpha beta C [1,N]", true, 1, 577, 301, 2, true, 0.5f, -2.0f, 2, false, false, true},
        {"gemm rows C scalar", true, 1, 96, 130, 2, true, 0, 0.25f, 1, true, false, true},
        {"gemm cols 576x1024", true, 1, 576, 1024, 2, false, 0, 0, 1, false, false, true},
        {"gemm cols K 1283 N 33 alpha", true, 1, 1283, 33, 2, false, 1.5f, 0, 1, false, false, true},
        {"matmul cols 768x3072", false, 1, 768, 3072, 2, false, 0, 0, 0, false, false, true},
        {"matmul cols K 3 N 17 (rows under 4)", false, 1, 3, 17, 2, false, 0, 0, 0, false, false, true},
        {"matmul cols A rank 1", false, 1, 130, 67, 1, false, 0, 0, 0, false, false, true},
        {"matmul cols A rank 3 [1,1,K]", false, 1, 515, 129, 3, false, 0, 0, 0, false, false, true},
        /* not a gemv: M > 1, B computed, C [M, N] */
        {"matmul M 4", false, 4, 64, 64, 2, false, 0, 0, 0, false, false, false},
        {"gemm M 2 C [M,N]", true, 2, 64, 48, 2, true, 0, 0, 2, false, false, false},
        {"matmul B an input", false, 1, 64, 64, 2, false, 0, 0, 0, false, true, false},
};

/* the CPU's own instruction set (AVX-512F here) */
static void test_gemv_matches_the_reference(void **state)
{
    (void)state;
    fa_cpu_gemv_force_isa(-1);
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) check(&C[i]);
}

/* the 8-lane AVX2 form, as a CPU without AVX-512 runs it (skipped where the CPU lacks AVX2) */
static void test_gemv_avx2_matches_the_reference(void **state)
{
    (void)state;
    fa_cpu_gemv_force_isa(1);
    if (!fa_cpu_gemv_available()) {
        fa_cpu_gemv_force_isa(-1);
        skip();
    }
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) check(&C[i]);
    fa_cpu_gemv_force_isa(-1);
}

/* no vector unit for it: every node stays oneDNN's (check's `want` is false for every case) */
static void test_gemv_declined_without_the_isa(void **state)
{
    (void)state;
    fa_cpu_gemv_force_isa(0);
    assert_false(fa_cpu_gemv_available());
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) check(&C[i]);
    fa_cpu_gemv_force_isa(-1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gemv_matches_the_reference),
                                       cmocka_unit_test(test_gemv_avx2_matches_the_reference),
                                       cmocka_unit_test(test_gemv_declined_without_the_isa)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
