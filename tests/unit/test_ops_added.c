/* tests/unit/test_ops_added — the ops and modes added for ONNX conformance, through the real
 * load + execute path (fa_graph_prepare, fa_exec): TopK ties and NaN, CumSum exclusive/reverse
 * with integer wrap-around, Hardmax, Trilu, EyeLike, ScatterElements/ScatterND with duplicates and
 * reductions, Einsum (diagonal, implicit output order, ellipsis broadcast), GridSample
 * reflection, RotaryEmbedding, Attention's fully masked rows, sliding window and softcap,
 * exact integer MatMul, and the element-type fixes the dtype sweep found (unsigned uint64,
 * integer Pow wrap, exact int64 ReduceSum, saturating uint8 Resize, RMSNormalization's and
 * DequantizeLinear's output types). Expected values are worked out by hand (or by a loop written here) from
 * the ONNX operator spec, independently of the kernels. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "runtime/runtime.h"

typedef struct in_spec {
    const char *name;
    fa_dtype dt;
    int rank;
    int64_t dims[FA_MAX_RANK];
    const void *data;
    bool as_const; /* initializer (shape parameters: K, axis, k) */
} in_spec;

typedef struct run1 {
    fa_ctx *ctx;
    fa_graph *g;
    fa_node *n;
    fa_exec *e;
} run1;

/* One node of `op` over the inputs, n_out outputs y0..; prepared and run on cpu. */
static fa_status run_node(run1 *r, const char *op, int opset, int n_in, const in_spec *in, int n_out,
                          void (*attrs)(fa_graph *, fa_node *))
{
    memset(r, 0, sizeof *r);
    r->ctx = fa_ctx_create();
    r->g = fa_graph_create("t");
    assert_int_equal(fa_graph_set_opset(r->ctx, r->g, "", opset), FA_OK);
    const char *ins[8], *outs[4] = {"y0", "y1", "y2", "y3"};
    for (int i = 0; i < n_in; i++) ins[i] = in[i].name;
    r->n = fa_graph_add_node(r->ctx, r->g, "node_under_test", op, "", n_in, ins, n_out, outs);
    assert_non_null(r->n);
    if (attrs) attrs(r->g, r->n);
    for (int i = 0; i < n_in; i++) {
        if (!in[i].name) continue;
        fa_tensor *t = fa_graph_in(r->g, r->n, i);
        fa_tensor_set_shape(t, in[i].dt, in[i].rank, in[i].dims);
        if (in[i].as_const) {
            int64_t ne = 1;
            for (int k = 0; k < in[i].rank; k++) ne *= in[i].dims[k];
            assert_int_equal(fa_tensor_set_data(r->ctx, t, in[i].data, (size_t)ne * fa_dtype_size(in[i].dt)), FA_OK);
        } else assert_int_equal(fa_graph_add_input(r->ctx, r->g, t->id), FA_OK);
    }
    for (int i = 0; i < n_out; i++) assert_int_equal(fa_graph_add_output(r->ctx, r->g, fa_graph_out(r->g, r->n, i)->id), FA_OK);
    fa_status st = fa_graph_prepare(r->ctx, r->g, NULL);
    if (st) return st;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2};
    if ((st = fa_exec_create(r->ctx, r->g, &eo, &r->e))) return st;
    int k = 0;
    for (int i = 0; i < n_in; i++) {
        if (!in[i].name || in[i].as_const) continue;
        fa_value v = {.data = (void *)in[i].data, .dtype = in[i].dt, .rank = in[i].rank};
        memcpy(v.dims, in[i].dims, sizeof v.dims);
        if ((st = fa_exec_set_input(r->ctx, r->e, k++, &v))) return st;
    }
    return fa_exec_run(r->ctx, r->e, NULL);
}

static void run_ok(run1 *r, const char *op, int opset, int n_in, const in_spec *in, int n_out,
                   void (*attrs)(fa_graph *, fa_node *))
{
    fa_status st = run_node(r, op, opset, n_in, in, n_out, attrs);
    if (st) fprintf(stderr, "%s: %s\n", op, fa_ctx_errmsg(r->ctx));
    assert_int_equal(st, FA_OK);
}

static void run_free(run1 *r)
{
    fa_exec_free(r->e);
    fa_graph_free(r->g);
    fa_ctx_free(r->ctx);
}

static void expect_f32(const fa_value *v, const float *want, int64_t n)
{
    assert_int_equal(fa_value_numel(v), n);
    for (int64_t i = 0; i < n; i++) {
        double got = fa_load_as_double(v->data, v->dtype, i);
        if (!(fabs(got - want[i]) <= 1e-5 + 1e-5 * fabs(want[i])) && !(isnan(got) && isnan(want[i])))
            fail_msg("element %lld: got %.9g, expected %.9g", (long long)i, got, (double)want[i]);
    }
}

static void expect_i64(const fa_value *v, const int64_t *want, int64_t n)
{
    assert_int_equal(fa_value_numel(v), n);
    for (int64_t i = 0; i < n; i++) {
        int64_t got = ((const int64_t *)v->data)[i];
        if (got != want[i]) fail_msg("element %lld: got %lld, expected %lld", (long long)i, (long long)got, (long long)want[i]);
    }
}

/* ---- TopK ---- */

static void attrs_topk_smallest(fa_graph *g, fa_node *n) { fa_node_add_attr_int(g, n, "largest", 0); }

/* Ties keep the lower index first; NaN counts as the largest value (numpy lexsort order). */
static void test_topk_ties_by_index_and_nan_largest(void **state)
{
    (void)state;
    static const float x[] = {3, 1, NAN, 3, 1, 2};
    static const int64_t k[] = {3};
    in_spec in[] = {{"x", FA_DTYPE_FLOAT, 1, {6}, x}, {"k", FA_DTYPE_INT64, 1, {1}, k, true}};
    run1 r;
    run_ok(&r, "TopK", 11, 2, in, 2, NULL);
    expect_f32(fa_exec_output(r.e, 0), (const float[]){NAN, 3, 3}, 3);
    expect_i64(fa_exec_output(r.e, 1), (const int64_t[]){2, 0, 3}, 3);
    run_free(&r);
    run_ok(&r, "TopK", 11, 2, in, 2, attrs_topk_smallest);
    expect_f32(fa_exec_output(r.e, 0), (const float[]){1, 1, 2}, 3);
    expect_i64(fa_exec_output(r.e, 1), (const int64_t[]){1, 4, 5}, 3);
    run_free(&r);
}

/* int64 values beyond 2^53 order exactly (not through double). */
static void test_topk_int64_exact(void **state)
{
    (void)state;
    static const int64_t x[] = {(int64_t)1 << 60, ((int64_t)1 << 60) + 1, 5};
    static const int64_t k[] = {1};
    in_spec in[] = {{"x", FA_DTYPE_INT64, 1, {3}, x}, {"k", FA_DTYPE_INT64, 1, {1}, k, true}};
    run1 r;
    run_ok(&r, "TopK", 11, 2, in, 2, NULL);
    expect_i64(fa_exec_output(r.e, 0), (const int64_t[]){((int64_t)1 << 60) + 1}, 1);
    expect_i64(fa_exec_output(r.e, 1), (const int64_t[]){1}, 1);
    run_free(&r);
}

/* ---- CumSum ---- */

static void attrs_excl_rev(fa_graph *g, fa_node *n)
{
    fa_node_add_attr_int(g, n, "exclusive", 1);
    fa_node_add_attr_int(g, n, "reverse", 1);
}

static void test_cumsum_exclusive_reverse_int32_wraps(void **state)
{
    (void)state;
    static const int32_t x[] = {1, 2, 3, 2147483647};
    static const int64_t axis[] = {0};
    in_spec in[] = {{"x", FA_DTYPE_INT32, 1, {4}, x}, {"axis", FA_DTYPE_INT64, 0, {0}, axis, true}};
    run1 r;
    run_ok(&r, "CumSum", 14, 2, in, 1, attrs_excl_rev);
    const int32_t *y = fa_exec_output(r.e, 0)->data;
    /* exclusive from the end: [2+3+MAX, 3+MAX, MAX, 0], wrapped to int32 */
    assert_int_equal(y[3], 0);
    assert_int_equal(y[2], 2147483647);
    assert_int_equal(y[1], (int32_t)(3u + 2147483647u));
    assert_int_equal(y[0], (int32_t)(5u + 2147483647u));
    run_free(&r);
}

/* ---- Hardmax, Trilu ---- */

static void test_hardmax_first_max_per_row(void **state)
{
    (void)state;
    static const float x[] = {1, 5, 5, 0, -1, -2, -3, -1};
    in_spec in[] = {{"x", FA_DTYPE_FLOAT, 2, {2, 4}, x}};
    run1 r;
    run_ok(&r, "Hardmax", 13, 1, in, 1, NULL);
    expect_f32(fa_exec_output(r.e, 0), (const float[]){0, 1, 0, 0, 1, 0, 0, 0}, 8);
    run_free(&r);
}

static void attrs_lower(fa_graph *g, fa_node *n) { fa_node_add_attr_int(g, n, "upper", 0); }

static void test_trilu_lower_with_negative_k(void **state)
{
    (void)state;
    static const float x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    static const int64_t k[] = {-1};
    in_spec in[] = {{"x", FA_DTYPE_FLOAT, 2, {3, 3}, x}, {"k", FA_DTYPE_INT64, 0, {0}, k, true}};
    run1 r;
    run_ok(&r, "Trilu", 14, 2, in, 1, attrs_lower);
    expect_f32(fa_exec_output(r.e, 0), (const float[]){0, 0, 0, 4, 0, 0, 7, 8, 0}, 9);
    run_free(&r);
}

/* ---- Concat over threads ---- */

static void attrs_axis1(fa_graph *g, fa_node *n) { fa_node_add_attr_int(g, n, "axis", 1); }

/* Past 1 MiB a Concat copies on the executor's threads: with few outer rows each thread takes a
 * 64-byte-aligned share of every input's row (sizes here leave uneven, unaligned tails), with
 * many it takes whole rows. Every element must land where the spec puts it. */
static void concat_check(int64_t outer, const int64_t *mid, int n_in, int64_t inner)
{
    in_spec in[3];
    float *x[3];
    int64_t total_mid = 0;
    for (int i = 0; i < n_in; i++) {
        int64_t ne = outer * mid[i] * inner;
        x[i] = malloc(sizeof(float) * (size_t)ne);
        for (int64_t e = 0; e < ne; e++) x[i][e] = (float)(i * 1000003 + e % 1000003);
        static const char *names[] = {"a", "b", "c"};
        in[i] = (in_spec){names[i], FA_DTYPE_FLOAT, 3, {outer, mid[i], inner}, x[i]};
        total_mid += mid[i];
    }
    run1 r;
    run_ok(&r, "Concat", 13, n_in, in, 1, attrs_axis1);
    const fa_value *y = fa_exec_output(r.e, 0);
    assert_int_equal(y->dims[1], total_mid);
    const float *yd = y->data;
    for (int64_t o = 0; o < outer; o++) {
        int64_t m0 = 0;
        for (int i = 0; i < n_in; i++) {
            for (int64_t m = 0; m < mid[i]; m++)
                for (int64_t k = 0; k < inner; k++) {
                    int64_t src = (o * mid[i] + m) * inner + k, dst = (o * total_mid + m0 + m) * inner + k;
                    if (yd[dst] != x[i][src])
                        fail_msg("outer %lld input %d [%lld, %lld]: got %g, expected %g", (long long)o, i, (long long)m,
                                 (long long)k, (double)yd[dst], (double)x[i][src]);
                }
            m0 += mid[i];
        }
    }
    run_free(&r);
    for (int i = 0; i < n_in; i++) free(x[i]);
}

static void test_concat_large_splits_over_threads(void **state)
{
    (void)state;
    concat_check(1, (const int64_t[]){37, 50, 1}, 3, 4099); /* 1.4 MiB, one outer row */
    concat_check(3, (const int64_t[]){29, 3}, 2, 3001);      /* 1.1 MiB, three outer rows */
    concat_check(64, (const int64_t[]){3, 5}, 2, 1501);      /* 3 MiB, rows to threads */
}

/* ---- EyeLike ---- */

static void attrs_eyelike_int64_k2(fa_graph *g, fa_node *n)
{
    fa_node_add_attr_int(g, n, "dtype", FA_DTYPE_INT64);
    fa_node_add_attr_int(g, n, "k", 2);
}
static void attrs_eyelike_km1(fa_graph *g, fa_node *n) { fa_node_add_attr_int(g, n, "k", -1); }
static int64_t eyelike_k;
static void attrs_eyelike_k(fa_graph *g, fa_node *n) { fa_node_add_attr_int(g, n, "k", eyelike_k); }

/* EyeLike-9: the input's shape, ones on the diagonal j - i = k (above it for k > 0, below for
 * k < 0, clipped where it leaves the matrix), the dtype attribute's type or the input's; the
 * input's values are not read. */
static void test_eyelike_offsets_and_dtype(void **state)
{
    (void)state;
    static const float x[15] = {7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};
    in_spec wide[] = {{"x", FA_DTYPE_FLOAT, 2, {3, 5}, x}};
    run1 r;
    run_ok(&r, "EyeLike", 9, 1, wide, 1, attrs_eyelike_int64_k2);
    const fa_value *y = fa_exec_output(r.e, 0);
    assert_int_equal(y->dtype, FA_DTYPE_INT64);
    assert_int_equal(y->dims[0], 3);
    assert_int_equal(y->dims[1], 5);
    expect_i64(y, (const int64_t[]){0, 0, 1, 0, 0, /**/ 0, 0, 0, 1, 0, /**/ 0, 0, 0, 0, 1}, 15);
    run_free(&r);
    in_spec tall[] = {{"x", FA_DTYPE_FLOAT, 2, {4, 2}, x}};
    run_ok(&r, "EyeLike", 9, 1, tall, 1, attrs_eyelike_km1);
    y = fa_exec_output(r.e, 0);
    assert_int_equal(y->dtype, FA_DTYPE_FLOAT);
    expect_f32(y, (const float[]){0, 0, /**/ 1, 0, /**/ 0, 1, /**/ 0, 0}, 8);
    run_free(&r);
    /* a k past the matrix, INT64_MIN included: all zeros */
    static const int64_t far_k[] = {INT64_MIN, -4, 5, INT64_MAX};
    for (int t = 0; t < 4; t++) {
        eyelike_k = far_k[t];
        run_ok(&r, "EyeLike", 9, 1, tall, 1, attrs_eyelike_k);
        expect_f32(fa_exec_output(r.e, 0), (const float[]){0, 0, 0, 0, 0, 0, 0, 0}, 8);
        run_free(&r);
    }
    /* a rank other than 2 is refused at load, naming the node */
    in_spec flat[] = {{"x", FA_DTYPE_FLOAT, 1, {15}, x}};
    assert_int_not_equal(run_node(&r, "EyeLike", 9, 1, flat, 1, NULL), FA_OK);
    assert_non_null(strstr(fa_ctx_errmsg(r.ctx), "node_under_test"));
    run_free(&r);
}

/* ---- Scatter ---- */

static void attrs_axis1_add(fa_graph *g, fa_node *n)
{
    fa_node_add_attr_int(g, n, "axis", 1);
    fa_node_add_attr_string(g, n, "reduction", "add");
}

/* Duplicate indices accumulate with reduction=add; a negative index counts from the end. */
static void test_scatter_elements_add_duplicates_negative_index(void **state)
{
    (void)state;
    static const float data[] = {1, 2, 3, 4, 5, 6};
    static const int64_t idx[] = {0, 0, -1, 1, 1, 1};
    static const float upd[] = {10, 20, 30, 1, 2, 3};
    in_spec in[] = {{"data", FA_DTYPE_FLOAT, 2, {2, 3}, data},
                    {"idx", FA_DTYPE_INT64, 2, {2, 3}, idx, true},
                    {"upd", FA_DTYPE_FLOAT, 2, {2, 3}, upd}};
    run1 r;
    run_ok(&r, "ScatterElements", 18, 3, in, 1, attrs_axis1_add);
    expect_f32(fa_exec_output(r.e, 0), (const float[]){31, 2, 33, 4, 11, 6}, 6);
    run_free(&r);
}

static void attrs_mul(fa_graph *g, fa_node *n) { fa_node_add_attr_string(g, n, "reduction", "mul"); }

/* Slices of data addressed by the last index dim; duplicates multiply in order. */
static void test_scatter_nd_slices_mul(void **state)
{
    (void)state;
    static const float data[] = {1, 2, 3, 4, 5, 6};
    static const int64_t idx[] = {1, 1, 0};
    static const float upd[] = {2, 2, 2, 3, 3, 3, 4, 4, 4};
    in_spec in[] = {{"data", FA_DTYPE_FLOAT, 2, {2, 3}, data},
                    {"idx", FA_DTYPE_INT64, 2, {3, 1}, idx, true},
                    {"upd", FA_DTYPE_FLOAT, 2, {3, 3}, upd}};
    run1 r;
    run_ok(&r, "ScatterND", 18, 3, in, 1, attrs_mul);
    expect_f32(fa_exec_output(r.e, 0), (const float[]){4, 8, 12, 24, 30, 36}, 6);
    run_free(&r);
}

/* An index outside the data is refused naming the node, not written out of bounds. */
static void test_scatter_index_out_of_range_refused(void **state)
{
    (void)state;
    static const float data[] = {1, 2};
    static const int64_t idx[] = {2};
    static const float upd[] = {9};
    in_spec in[] = {{"data", FA_DTYPE_FLOAT, 1, {2}, data},
                    {"idx", FA_DTYPE_INT64, 1, {1}, idx, true},
                    {"upd", FA_DTYPE_FLOAT, 1, {1}, upd}};
    run1 r;
    fa_status st = run_node(&r, "ScatterElements", 13, 3, in, 1, NULL);
    assert_int_equal(st, FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(r.ctx), "node_under_test"));
    run_free(&r);
}

/* ---- Einsum ---- */

static const char *g_equation;
static void attrs_equation(fa_graph *g, fa_node *n) { fa_node_add_attr_string(g, n, "equation", g_equation); }

static void test_einsum_diagonal_trace_and_implicit_order(void **state)
{
    (void)state;
    static const float m[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    in_spec in1[] = {{"a", FA_DTYPE_FLOAT, 2, {3, 3}, m}};
    run1 r;
    g_equation = "ii->i"; /* diagonal */
    run_ok(&r, "Einsum", 12, 1, in1, 1, attrs_equation);
    expect_f32(fa_exec_output(r.e, 0), (const float[]){1, 5, 9}, 3);
    run_free(&r);
    g_equation = "ii"; /* implicit output: nothing occurs once, so the trace */
    run_ok(&r, "Einsum", 12, 1, in1, 1, attrs_equation);
    expect_f32(fa_exec_output(r.e, 0), (const float[]){15}, 1);
    run_free(&r);
    g_equation = "ba"; /* implicit output in ASCII order: "ab", i.e. a transpose */
    run_ok(&r, "Einsum", 12, 1, in1, 1, attrs_equation);
    expect_f32(fa_exec_output(r.e, 0), (const float[]){1, 4, 7, 2, 5, 8, 3, 6, 9}, 9);
    run_free(&r);
}

/* A two-input Einsum that is one batched product runs as oneDNN's matmul through the inputs' own
 * strides (fa_einsum_as_matmul): attention's "bhid,bhjd->bhij" (K read transposed), its
 * "bhij,bhjd->bhid", two M labels merged ("bid,de->bie"), a permuted output ("bhid,bhjd->bhji"),
 * no K label (an outer product, "bi,bj->bij"); a one-input permutation ("bhid->bihd") is a strided
 * copy. Values against loops written here; a label summed in one input alone ("bij,bjk->bi")
 * stays with the reference kernel, right too. */
static double es_at(const float *t, const int64_t *d, int r, const int64_t *ix)
{
    int64_t o = 0;
    for (int a = 0; a < r; a++) o = o * d[a] + ix[a];
    return t[o];
}

static void test_einsum_products_and_permutation(void **state)
{
    (void)state;
    enum { B = 2, H = 3, I = 5, J = 4, D = 6 };
    static float q[B * H * I * D], k[B * H * J * D], p[B * H * I * J];
    for (int i = 0; i < B * H * I * D; i++) q[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
    for (int i = 0; i < B * H * J * D; i++) k[i] = (float)((i * 5) % 13) / 6.0f - 1.0f;
    for (int i = 0; i < B * H * I * J; i++) p[i] = (float)((i * 3) % 7) / 4.0f - 0.5f;
    const int64_t dq[4] = {B, H, I, D}, dk[4] = {B, H, J, D}, dp[4] = {B, H, I, J};
    static float want[B * H * I * J * D];
    run1 r;
    /* scores and the permuted scores */
    for (int t = 0; t < 2; t++) {
        in_spec in[] = {{"q", FA_DTYPE_FLOAT, 4, {B, H, I, D}, q}, {"k", FA_DTYPE_FLOAT, 4, {B, H, J, D}, k}};
        g_equation = t ? "bhid,bhjd->bhji" : "bhid,bhjd->bhij";
        run_ok(&r, "Einsum", 12, 2, in, 1, attrs_equation);
        assert_string_equal(fa_exec_kernel_name(r.e, r.n), "dnnl:matmul(einsum)");
        int64_t o = 0;
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t x = 0; x < (t ? J : I); x++)
                    for (int64_t y = 0; y < (t ? I : J); y++) {
                        int64_t i_ = t ? y : x, j_ = t ? x : y;
                        double s = 0;
                        for (int64_t d = 0; d < D; d++)
                            s += es_at(q, dq, 4, (int64_t[]){b, h, i_, d}) * es_at(k, dk, 4, (int64_t[]){b, h, j_, d});
                        want[o++] = (float)s;
                    }
        expect_f32(fa_exec_output(r.e, 0), want, o);
        run_free(&r);
    }
    { /* P·V */
        in_spec in[] = {{"p", FA_DTYPE_FLOAT, 4, {B, H, I, J}, p}, {"v", FA_DTYPE_FLOAT, 4, {B, H, J, D}, k}};
        g_equation = "bhij,bhjd->bhid";
        run_ok(&r, "Einsum", 12, 2, in, 1, attrs_equation);
        assert_string_equal(fa_exec_kernel_name(r.e, r.n), "dnnl:matmul(einsum)");
        int64_t o = 0;
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t i = 0; i < I; i++)
                    for (int64_t d = 0; d < D; d++) {
                        double s = 0;
                        for (int64_t j = 0; j < J; j++)
                            s += es_at(p, dp, 4, (int64_t[]){b, h, i, j}) * es_at(k, dk, 4, (int64_t[]){b, h, j, d});
                        want[o++] = (float)s;
                    }
        expect_f32(fa_exec_output(r.e, 0), want, o);
        run_free(&r);
    }
    { /* two M labels merged: "bid,de->bie" on [B, H·I, D] x [D, J] */
        in_spec in[] = {{"a", FA_DTYPE_FLOAT, 3, {B, H * I, D}, q}, {"w", FA_DTYPE_FLOAT, 2, {D, J}, k}};
        g_equation = "bid,de->bie";
        run_ok(&r, "Einsum", 12, 2, in, 1, attrs_equation);
        assert_string_equal(fa_exec_kernel_name(r.e, r.n), "dnnl:matmul(einsum)");
        int64_t o = 0;
        for (int64_t m = 0; m < B * H * I; m++)
            for (int64_t e = 0; e < J; e++) {
                double s = 0;
                for (int64_t d = 0; d < D; d++) s += (double)q[m * D + d] * k[d * J + e];
                want[o++] = (float)s;
            }
        expect_f32(fa_exec_output(r.e, 0), want, o);
        run_free(&r);
    }
    { /* no K: an outer product per batch */
        in_spec in[] = {{"a", FA_DTYPE_FLOAT, 2, {B, I}, q}, {"c", FA_DTYPE_FLOAT, 2, {B, J}, k}};
        g_equation = "bi,bj->bij";
        run_ok(&r, "Einsum", 12, 2, in, 1, attrs_equation);
        assert_string_equal(fa_exec_kernel_name(r.e, r.n), "dnnl:matmul(einsum)");
        int64_t o = 0;
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < I; i++)
                for (int64_t j = 0; j < J; j++) want[o++] = q[b * I + i] * k[b * J + j];
        expect_f32(fa_exec_output(r.e, 0), want, o);
        run_free(&r);
    }
    /* Funnel's relative-position products: "binh,tnh->bnit" (b and i, both M, not adjacent in the
     * output: b a batch dim broadcast in the second input) at batch 2 and 1 (an extent-1 label has
     * no role), and "bind,snd->bnis" the same with the output's N label last */
    for (int bt = 2; bt >= 1; bt--) {
        for (int e = 0; e < 2; e++) {
            in_spec in[] = {{"a", FA_DTYPE_FLOAT, 4, {bt, I, H, D}, q}, {"r", FA_DTYPE_FLOAT, 3, {J, H, D}, k}};
            g_equation = e ? "bind,snd->bnis" : "binh,tnh->bnit";
            run_ok(&r, "Einsum", 12, 2, in, 1, attrs_equation);
            assert_string_equal(fa_exec_kernel_name(r.e, r.n), "dnnl:matmul(einsum)");
            const int64_t da[4] = {bt, I, H, D}, dr[3] = {J, H, D};
            int64_t o = 0;
            for (int64_t b = 0; b < bt; b++)
                for (int64_t h = 0; h < H; h++)
                    for (int64_t i = 0; i < I; i++)
                        for (int64_t t = 0; t < J; t++) {
                            double sum = 0;
                            for (int64_t d = 0; d < D; d++)
                                sum += es_at(q, da, 4, (int64_t[]){b, i, h, d}) * es_at(k, dr, 3, (int64_t[]){t, h, d});
                            want[o++] = (float)sum;
                        }
            expect_f32(fa_exec_output(r.e, 0), want, o);
            run_free(&r);
        }
    }
    { /* a label summed in one input alone: the reference kernel, still right */
        in_spec in[] = {{"p", FA_DTYPE_FLOAT, 3, {B * H, I, J}, p}, {"v", FA_DTYPE_FLOAT, 3, {B * H, J, D}, k}};
        g_equation = "bij,bjk->bi";
        run_ok(&r, "Einsum", 12, 2, in, 1, attrs_equation);
        assert_string_not_equal(fa_exec_kernel_name(r.e, r.n), "dnnl:matmul(einsum)");
        int64_t o = 0;
        for (int64_t b = 0; b < B * H; b++)
            for (int64_t i = 0; i < I; i++) {
                double s = 0;
                for (int64_t j = 0; j < J; j++)
                    for (int64_t d = 0; d < D; d++) s += (double)p[(b * I + i) * J + j] * k[(b * J + j) * D + d];
                want[o++] = (float)s;
            }
        expect_f32(fa_exec_output(r.e, 0), want, o);
        run_free(&r);
    }
    { /* a one-input permutation */
        in_spec in[] = {{"q", FA_DTYPE_FLOAT, 4, {B, H, I, D}, q}};
        g_equation = "bhid->bihd";
        run_ok(&r, "Einsum", 12, 1, in, 1, attrs_equation);
        int64_t o = 0;
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < I; i++)
                for (int64_t h = 0; h < H; h++)
                    for (int64_t d = 0; d < D; d++) want[o++] = (float)es_at(q, dq, 4, (int64_t[]){b, h, i, d});
        expect_f32(fa_exec_output(r.e, 0), want, o);
        run_free(&r);
    }
}

/* Batched matmul over broadcast ellipsis dims, against a loop written here. */
static void test_einsum_ellipsis_broadcast_matmul(void **state)
{
    (void)state;
    float a[2 * 2 * 3], b[3 * 4], want[2 * 2 * 4];
    for (int i = 0; i < 12; i++) { a[i] = (float)(i - 5); b[i] = (float)(i % 5) - 1.5f; }
    for (int p = 0; p < 4; p++) /* a: [2,2,3] as 4 rows of 3; b: [1,3,4] broadcast */
        for (int j = 0; j < 4; j++) {
            double s = 0;
            for (int k = 0; k < 3; k++) s += (double)a[p * 3 + k] * b[k * 4 + j];
            want[p * 4 + j] = (float)s;
        }
    in_spec in[] = {{"a", FA_DTYPE_FLOAT, 3, {2, 2, 3}, a}, {"b", FA_DTYPE_FLOAT, 3, {1, 3, 4}, b}};
    run1 r;
    g_equation = "...ik, ...kj -> ...ij";
    run_ok(&r, "Einsum", 12, 2, in, 1, attrs_equation);
    const fa_value *y = fa_exec_output(r.e, 0);
    assert_int_equal(y->rank, 3);
    assert_int_equal(y->dims[0], 2);
    assert_int_equal(y->dims[2], 4);
    expect_f32(y, want, 16);
    run_free(&r);
}

/* ---- integer MatMul exact ---- */

static void test_matmul_int64_exact_beyond_float_mantissa(void **state)
{
    (void)state;
    static const int64_t a[] = {3000001, 3000002};
    static const int64_t b[] = {3000003, 3000005};
    in_spec in[] = {{"a", FA_DTYPE_INT64, 2, {1, 2}, a}, {"b", FA_DTYPE_INT64, 2, {2, 1}, b}};
    run1 r;
    run_ok(&r, "MatMul", 13, 2, in, 1, NULL);
    expect_i64(fa_exec_output(r.e, 0), (const int64_t[]){3000001LL * 3000003LL + 3000002LL * 3000005LL}, 1);
    run_free(&r);
}

/* ---- GridSample ---- */

static void attrs_gs_reflect(fa_graph *g, fa_node *n)
{
    fa_node_add_attr_string(g, n, "mode", "nearest");
    fa_node_add_attr_string(g, n, "padding_mode", "reflection");
    fa_node_add_attr_int(g, n, "align_corners", 1);
}

/* 1x1x1x4 input, grid x beyond the right edge reflects back inside (align_corners: borders 0
 * and 3): x = 1.5 -> pixel (1.5+1)/2*3 = 3.75 -> rint 4 -> reflected 2. */
static void test_gridsample_nearest_reflection(void **state)
{
    (void)state;
    static const float x[] = {10, 20, 30, 40};
    static const float grid[] = {-1, 0, 1.5f, 0, 0.34f, 0}; /* (x, y) pairs, 3 output points */
    in_spec in[] = {{"x", FA_DTYPE_FLOAT, 4, {1, 1, 1, 4}, x}, {"grid", FA_DTYPE_FLOAT, 4, {1, 1, 3, 2}, grid}};
    run1 r;
    run_ok(&r, "GridSample", 16, 2, in, 1, attrs_gs_reflect);
    /* -1 -> 0 -> 10; 1.5 -> 30; 0.34 -> 2.01 -> 2 -> 30 */
    expect_f32(fa_exec_output(r.e, 0), (const float[]){10, 30, 30}, 3);
    run_free(&r);
}

/* ---- RotaryEmbedding ---- */

/* One head of 4 (non-interleaved): pairs (x0, x2), (x1, x3) rotate by the cache's angle. */
static void test_rotary_embedding_half_split(void **state)
{
    (void)state;
    static const float x[] = {1, 2, 3, 4};
    static const float c[] = {0.5f, 0.0f}, s[] = {0.25f, 1.0f};
    in_spec in[] = {{"x", FA_DTYPE_FLOAT, 4, {1, 1, 1, 4}, x},
                    {"cos", FA_DTYPE_FLOAT, 3, {1, 1, 2}, c},
                    {"sin", FA_DTYPE_FLOAT, 3, {1, 1, 2}, s}};
    run1 r;
    run_ok(&r, "RotaryEmbedding", 23, 3, in, 1, NULL);
    /* real = cos*x1 - sin*x2, imag = sin*x1 + cos*x2 with x1 = (1, 2), x2 = (3, 4) */
    expect_f32(fa_exec_output(r.e, 0), (const float[]){0.5f - 0.75f, 0 - 4, 0.25f + 1.5f, 2 + 0}, 4);
    run_free(&r);
}

/* ---- Attention ---- */

static void attrs_window(fa_graph *g, fa_node *n)
{
    fa_node_add_attr_int(g, n, "left_window_size", 0);
    fa_node_add_attr_int(g, n, "right_window_size", 0);
}

/* A window of 0 left, 0 right: every query sees only its own key, so Y = V row by row. */
static void test_attention_window_sees_only_own_key(void **state)
{
    (void)state;
    static const float q[] = {1, 0, 0, 1, 1, 1}, k[] = {1, 1, 0, 1, 1, 0};
    static const float v[] = {1, 2, 3, 4, 5, 6};
    in_spec in[] = {{"q", FA_DTYPE_FLOAT, 4, {1, 1, 3, 2}, q}, {"k", FA_DTYPE_FLOAT, 4, {1, 1, 3, 2}, k},
                    {"v", FA_DTYPE_FLOAT, 4, {1, 1, 3, 2}, v}};
    run1 r;
    run_ok(&r, "Attention", 25, 3, in, 1, attrs_window);
    expect_f32(fa_exec_output(r.e, 0), v, 6);
    run_free(&r);
}

/* A boolean mask that masks a whole row gives zeros for that row, not NaN. */
static void test_attention_fully_masked_row_is_zero(void **state)
{
    (void)state;
    static const float q[] = {1, 0, 0, 1}, k[] = {1, 1, 0, 1}, v[] = {1, 2, 3, 4};
    static const uint8_t mask[] = {0, 0, 1, 1};
    in_spec in[] = {{"q", FA_DTYPE_FLOAT, 4, {1, 1, 2, 2}, q}, {"k", FA_DTYPE_FLOAT, 4, {1, 1, 2, 2}, k},
                    {"v", FA_DTYPE_FLOAT, 4, {1, 1, 2, 2}, v}, {"m", FA_DTYPE_BOOL, 2, {2, 2}, mask}};
    run1 r;
    run_ok(&r, "Attention", 23, 4, in, 1, NULL);
    const fa_value *y = fa_exec_output(r.e, 0);
    const float *yf = y->data;
    assert_true(yf[0] == 0 && yf[1] == 0);
    assert_false(isnan(yf[2]) || isnan(yf[3]));
    run_free(&r);
}

static void attrs_softcap_mode0(fa_graph *g, fa_node *n)
{
    fa_node_add_attr_float(g, n, "softcap", 2.0f);
    fa_node_add_attr_float(g, n, "scale", 1.0f);
    fa_node_add_attr_int(g, n, "qk_matmul_output_mode", 0);
}

/* qk_matmul_output mode 0 holds the softcapped scores (c * tanh(s / c)), as the reference. */
static void test_attention_softcap_qk_output(void **state)
{
    (void)state;
    static const float q[] = {3}, k[] = {1, 2}, v[] = {1, 1};
    in_spec in[] = {{"q", FA_DTYPE_FLOAT, 4, {1, 1, 1, 1}, q}, {"k", FA_DTYPE_FLOAT, 4, {1, 1, 2, 1}, k},
                    {"v", FA_DTYPE_FLOAT, 4, {1, 1, 2, 1}, v}, {NULL}, {NULL}, {NULL}};
    run1 r;
    memset(&r, 0, sizeof r);
    fa_status st = run_node(&r, "Attention", 23, 6, in, 4, attrs_softcap_mode0);
    if (st) fprintf(stderr, "%s\n", fa_ctx_errmsg(r.ctx));
    assert_int_equal(st, FA_OK);
    expect_f32(fa_exec_output(r.e, 3), (const float[]){(float)(2 * tanh(1.5)), (float)(2 * tanh(3.0))}, 2);
    run_free(&r);
}

/* ---- element types (the fixes tests/conformance/onnx_dtype_sweep.py found) ---- */

static void expect_u64(const fa_value *v, const uint64_t *want, int64_t n)
{
    assert_int_equal(v->dtype, FA_DTYPE_UINT64);
    assert_int_equal(fa_value_numel(v), n);
    for (int64_t i = 0; i < n; i++) {
        uint64_t got = ((const uint64_t *)v->data)[i];
        if (got != want[i]) fail_msg("element %lld: got %llu, expected %llu", (long long)i, (unsigned long long)got,
                                     (unsigned long long)want[i]);
    }
}

/* uint64 beyond 2^63 is unsigned: (2^64 - 2) / 2 = 2^63 - 1 (signed: -2 / 2 = -1), and
 * 2^63 + 1 < 1 is false (signed: true). */
static void test_uint64_div_and_less_unsigned(void **state)
{
    (void)state;
    static const uint64_t a[] = {UINT64_MAX - 1, (1ULL << 63) + 1};
    static const uint64_t b[] = {2, 1};
    in_spec in[] = {{"a", FA_DTYPE_UINT64, 1, {2}, a}, {"b", FA_DTYPE_UINT64, 1, {2}, b}};
    run1 r;
    run_ok(&r, "Div", 14, 2, in, 1, NULL);
    expect_u64(fa_exec_output(r.e, 0), (const uint64_t[]){(1ULL << 63) - 1, (1ULL << 63) + 1}, 2);
    run_free(&r);
    run_ok(&r, "Less", 13, 2, in, 1, NULL);
    const fa_value *y = fa_exec_output(r.e, 0);
    assert_int_equal(y->dtype, FA_DTYPE_BOOL);
    assert_int_equal(((const uint8_t *)y->data)[0], 0);
    assert_int_equal(((const uint8_t *)y->data)[1], 0);
    run_free(&r);
}

/* Integer Pow wraps as numpy's power does (ONNX leaves overflow undefined; the reference is
 * numpy): 3^21 = 10460353203 = 2 * 2^32 + 1870418611 -> int32 1870418611 (saturating would
 * give 2147483647). 7^2 = 49 stays exact. */
static void test_pow_int32_wraps(void **state)
{
    (void)state;
    static const int32_t x[] = {3, 7};
    static const int32_t e[] = {21, 2};
    in_spec in[] = {{"x", FA_DTYPE_INT32, 1, {2}, x}, {"e", FA_DTYPE_INT32, 1, {2}, e}};
    run1 r;
    run_ok(&r, "Pow", 15, 2, in, 1, NULL);
    const fa_value *y = fa_exec_output(r.e, 0);
    assert_int_equal(y->dtype, FA_DTYPE_INT32);
    assert_int_equal(((const int32_t *)y->data)[0], 1870418611);
    assert_int_equal(((const int32_t *)y->data)[1], 49);
    run_free(&r);
}

/* int64 ReduceSum exact beyond 2^53: 2^53 + 1 + 1 = 2^53 + 2 (a double accumulator rounds
 * each + 1 away, ties to even, and gives 2^53). */
static void test_reducesum_int64_exact_beyond_double(void **state)
{
    (void)state;
    static const int64_t x[] = {1LL << 53, 1, 1};
    in_spec in[] = {{"x", FA_DTYPE_INT64, 1, {3}, x}};
    run1 r;
    run_ok(&r, "ReduceSum", 13, 1, in, 1, NULL);
    expect_i64(fa_exec_output(r.e, 0), (const int64_t[]){(1LL << 53) + 2}, 1);
    run_free(&r);
}

static const float resize_scales_x2[] = {1, 1, 1, 2};

/* uint8 cubic Resize saturates (the reference's saturate_cast) instead of wrapping. Input
 * 0 0 255 255 upsampled 2x, half_pixel, a = -0.75: output 1 sits at x = 0.25, taps at -1..2
 * (edge-clamped: 0 0 0 255) with weights W(1.25) W(0.25) W(0.75) W(1.75); W(1.75) =
 * a(s^3 - 5s^2 + 8s - 4) = -0.03515625 gives -8.96 -> 0; by symmetry output 5 is
 * 255 + 26.89 -> 255. The full row, from the ONNX reference implementation in float64:
 * 0 -8.96 -26.89 57.77 197.23 281.89 263.96 255, rounded half to even and saturated. */
static void attrs_cubic(fa_graph *g, fa_node *n) { fa_node_add_attr_string(g, n, "mode", "cubic"); }
static void test_resize_uint8_cubic_saturates(void **state)
{
    (void)state;
    static const uint8_t x[] = {0, 0, 255, 255};
    in_spec in[] = {{"x", FA_DTYPE_UINT8, 4, {1, 1, 1, 4}, x},
                    {NULL},
                    {"scales", FA_DTYPE_FLOAT, 1, {4}, resize_scales_x2, true}};
    run1 r;
    run_ok(&r, "Resize", 19, 3, in, 1, attrs_cubic);
    const fa_value *y = fa_exec_output(r.e, 0);
    assert_int_equal(y->dtype, FA_DTYPE_UINT8);
    static const uint8_t want[] = {0, 0, 0, 58, 197, 255, 255, 255};
    assert_int_equal(fa_value_numel(y), 8);
    for (int i = 0; i < 8; i++)
        if (((const uint8_t *)y->data)[i] != want[i])
            fail_msg("element %d: got %u, expected %u", i, ((const uint8_t *)y->data)[i], want[i]);
    run_free(&r);
}

/* RMSNormalization-23: X is T, scale and Y are V. X float32 [3, 4], scale float16 [1, 2]:
 * Y is float16, x / sqrt(mean(x^2) + 1e-5) * scale = 3/3.5355, 4/3.5355*2 = 0.8485, 2.2627. */
static void test_rmsnorm_output_has_scale_type(void **state)
{
    (void)state;
    static const float x[] = {3, 4};
    static const uint16_t scale[] = {0x3C00, 0x4000}; /* float16 1.0, 2.0 */
    in_spec in[] = {{"x", FA_DTYPE_FLOAT, 2, {1, 2}, x}, {"scale", FA_DTYPE_FLOAT16, 1, {2}, scale, true}};
    run1 r;
    run_ok(&r, "RMSNormalization", 23, 2, in, 1, NULL);
    const fa_value *y = fa_exec_output(r.e, 0);
    assert_int_equal(y->dtype, FA_DTYPE_FLOAT16);
    double rms = sqrt((9.0 + 16.0) / 2 + 1e-5), want[] = {3 / rms, 4 / rms * 2};
    for (int i = 0; i < 2; i++) {
        double got = fa_load_as_double(y->data, y->dtype, i);
        if (!(fabs(got - want[i]) <= 2e-3 * want[i])) fail_msg("element %d: got %.6g, expected %.6g", i, got, want[i]);
    }
    run_free(&r);
}

/* DequantizeLinear-23's output_dtype sets y's type (float16 here, scale float32):
 * (-4, 6) * 0.5 = (-2, 3); a non-float output_dtype (INT32) is refused naming it. */
static int64_t dq_output_dtype;
static void attrs_dq(fa_graph *g, fa_node *n) { fa_node_add_attr_int(g, n, "output_dtype", dq_output_dtype); }
static void test_dequantize_output_dtype(void **state)
{
    (void)state;
    static const int8_t x[] = {-4, 6};
    static const float scale[] = {0.5f};
    in_spec in[] = {{"x", FA_DTYPE_INT8, 1, {2}, x}, {"scale", FA_DTYPE_FLOAT, 0, {0}, scale, true}};
    run1 r;
    dq_output_dtype = FA_DTYPE_FLOAT16;
    run_ok(&r, "DequantizeLinear", 23, 2, in, 1, attrs_dq);
    const fa_value *y = fa_exec_output(r.e, 0);
    assert_int_equal(y->dtype, FA_DTYPE_FLOAT16);
    assert_true(fa_load_as_double(y->data, y->dtype, 0) == -2.0);
    assert_true(fa_load_as_double(y->data, y->dtype, 1) == 3.0);
    run_free(&r);
    dq_output_dtype = FA_DTYPE_INT32;
    assert_int_equal(run_node(&r, "DequantizeLinear", 23, 2, in, 1, attrs_dq), FA_ERR_UNSUPPORTED);
    assert_non_null(strstr(fa_ctx_errmsg(r.ctx), "output_dtype"));
    assert_non_null(strstr(fa_ctx_errmsg(r.ctx), "node_under_test"));
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topk_ties_by_index_and_nan_largest),
        cmocka_unit_test(test_topk_int64_exact),
        cmocka_unit_test(test_cumsum_exclusive_reverse_int32_wraps),
        cmocka_unit_test(test_hardmax_first_max_per_row),
        cmocka_unit_test(test_trilu_lower_with_negative_k),
        cmocka_unit_test(test_eyelike_offsets_and_dtype),
        cmocka_unit_test(test_concat_large_splits_over_threads),
        cmocka_unit_test(test_scatter_elements_add_duplicates_negative_index),
        cmocka_unit_test(test_scatter_nd_slices_mul),
        cmocka_unit_test(test_scatter_index_out_of_range_refused),
        cmocka_unit_test(test_einsum_diagonal_trace_and_implicit_order),
        cmocka_unit_test(test_einsum_ellipsis_broadcast_matmul),
        cmocka_unit_test(test_einsum_products_and_permutation),
        cmocka_unit_test(test_matmul_int64_exact_beyond_float_mantissa),
        cmocka_unit_test(test_gridsample_nearest_reflection),
        cmocka_unit_test(test_rotary_embedding_half_split),
        cmocka_unit_test(test_attention_window_sees_only_own_key),
        cmocka_unit_test(test_attention_fully_masked_row_is_zero),
        cmocka_unit_test(test_attention_softcap_qk_output),
        cmocka_unit_test(test_uint64_div_and_less_unsigned),
        cmocka_unit_test(test_pow_int32_wraps),
        cmocka_unit_test(test_reducesum_int64_exact_beyond_double),
        cmocka_unit_test(test_resize_uint8_cubic_saturates),
        cmocka_unit_test(test_rmsnorm_output_has_scale_type),
        cmocka_unit_test(test_dequantize_output_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
