/* tests/unit/test_ops_extra — Softmax, LogSoftmax, LayerNormalization, RMSNormalization,
 * GroupNormalization, SwiGLU, Attention and LSTM: shape inference, cost formulas and the
 * reference kernels against values computed independently here (direct formulas in double). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "testutil.h"

#define TOL_R 1e-4
#define TOL_A 1e-5

/* ---- helpers: one-node graphs, run infer + kernel ---- */

typedef struct tcase {
    fa_ctx *ctx;
    fa_graph *g;
    fa_node *n;
} tcase;

static tcase mk(int opset, const char *op, int n_in, const char *const *ins, int n_out,
                const char *const *outs)
{
    tcase t;
    t.ctx = fa_ctx_create();
    t.g = fa_graph_create("t");
    assert_non_null(t.ctx);
    assert_non_null(t.g);
    if (opset > 0) assert_int_equal(fa_graph_set_opset(t.ctx, t.g, "", opset), FA_OK);
    t.n = fa_graph_add_node(t.ctx, t.g, "node_under_test", op, "", n_in, ins, n_out, outs);
    assert_non_null(t.n);
    assert_non_null(t.n->op);
    return t;
}

static void tc_free(tcase *t)
{
    fa_graph_free(t->g);
    fa_ctx_free(t->ctx);
}

static void shape(tcase *t, const char *name, fa_dtype dt, int rank, const int64_t *dims)
{
    int id = fa_graph_find_tensor(t->g, name);
    assert_true(id >= 0);
    fa_tensor_set_shape(t->g->tensors[id], dt, rank, dims);
}

static int64_t numel(int rank, const int64_t *d)
{
    int64_t p = 1;
    for (int i = 0; i < rank; i++) p *= d[i];
    return p;
}

/* Runs infer then the kernel. in_data[i] is the data of input i (NULL = omitted); outputs are
 * allocated from the inferred shapes and returned in out_data (caller frees). */
static fa_status run(tcase *t, void *const *in_data, void **out_data, int threads)
{
    fa_status st = t->n->op->infer(t->ctx, t->g, t->n);
    if (st) return st;
    fa_value in[8], out[4];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    for (int i = 0; i < t->n->n_inputs; i++) {
        fa_tensor *x = fa_graph_in(t->g, t->n, i);
        if (!x) continue;
        in[i].data = in_data[i];
        in[i].dtype = x->dtype;
        in[i].rank = x->rank;
        memcpy(in[i].dims, x->dims, sizeof x->dims);
    }
    for (int i = 0; i < t->n->n_outputs; i++) {
        fa_tensor *y = fa_graph_out(t->g, t->n, i);
        out_data[i] = NULL;
        if (!y) continue;
        out[i].dtype = y->dtype;
        out[i].rank = y->rank;
        memcpy(out[i].dims, y->dims, sizeof y->dims);
        size_t bytes = fa_tensor_bytes(y);
        out[i].data = calloc(1, bytes ? bytes : 1);
        out_data[i] = out[i].data;
    }
    return t->n->op->kernel(t->ctx, t->n, in, t->n->n_inputs, out, t->n->n_outputs, threads);
}

static void fill(float *p, int64_t n, uint64_t seed, float lo, float hi)
{
    fa_rng r;
    fa_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) p[i] = fa_rng_uniform(&r, lo, hi);
}

static void expect_close(const float *got, const double *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= TOL_A + TOL_R * fabs(want[i]))) {
            fprintf(stderr, "%s: element %lld is %.9g, expected %.9g\n", what, (long long)i, got[i], want[i]);
            fail();
        }
    }
}

/* ---- Softmax / LogSoftmax ---- */

/* Reference: softmax over `len` elements at stride `inner` for every (outer, inner) lane. */
static void ref_softmax(const float *x, double *y, int64_t outer, int64_t len, int64_t inner, bool logsm)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t c = 0; c < inner; c++) {
            double m = -INFINITY, s = 0;
            for (int64_t k = 0; k < len; k++) m = fmax(m, x[(o * len + k) * inner + c]);
            for (int64_t k = 0; k < len; k++) s += exp(x[(o * len + k) * inner + c] - m);
            for (int64_t k = 0; k < len; k++) {
                double v = x[(o * len + k) * inner + c];
                y[(o * len + k) * inner + c] = logsm ? v - m - log(s) : exp(v - m) / s;
            }
        }
}

static void softmax_case(const char *op, int opset, int rank, const int64_t *dims, int64_t axis,
                         bool has_axis, int64_t outer, int64_t len, int64_t inner, float **out_y)
{
    const char *ins[] = {"x"}, *outs[] = {"y"};
    tcase t = mk(opset, op, 1, ins, 1, outs);
    if (has_axis) fa_node_add_attr_int(t.g, t.n, "axis", axis);
    shape(&t, "x", FA_DTYPE_FLOAT, rank, dims);
    int64_t n = numel(rank, dims);
    float *x = malloc(sizeof(float) * (size_t)n);
    /* per-row different ranges so a kernel mixing rows fails */
    for (int64_t i = 0; i < n; i++) x[i] = (float)(sin((double)i * 0.37) * (1.0 + (double)(i % 7)) + (double)(i / 97));
    void *in[1] = {x}, *out[1] = {NULL};
    assert_int_equal(run(&t, in, out, 2), FA_OK);
    double *want = malloc(sizeof(double) * (size_t)n);
    ref_softmax(x, want, outer, len, inner, strcmp(op, "LogSoftmax") == 0);
    expect_close(out[0], want, n, op);
    if (out_y) *out_y = out[0];
    else free(out[0]);
    free(want);
    free(x);
    tc_free(&t);
}

static void test_softmax_rows_longer_than_1024_batch_3_match_formula(void **state)
{
    int64_t d[2] = {3, 1500};
    softmax_case("Softmax", 13, 2, d, -1, false, 3, 1500, 1, NULL);
    softmax_case("LogSoftmax", 13, 2, d, -1, false, 3, 1500, 1, NULL);
}

static void test_softmax_middle_axis_strided_lanes_match_formula(void **state)
{
    int64_t d[3] = {2, 5, 70}; /* 70 lanes: more than one 64-lane chunk */
    softmax_case("Softmax", 13, 3, d, 1, true, 2, 5, 70, NULL);
    softmax_case("LogSoftmax", 13, 3, d, -2, true, 2, 5, 70, NULL);
}

static void test_softmax_opset11_coerces_2d_opset13_uses_one_axis(void **state)
{
    int64_t d[3] = {2, 3, 4};
    float *y11, *y13;
    /* opset 11, axis 1: rows of 3*4 = 12 elements */
    softmax_case("Softmax", 11, 3, d, 1, true, 2, 12, 1, &y11);
    /* opset 13, axis 1: 3 elements at stride 4 */
    softmax_case("Softmax", 13, 3, d, 1, true, 2, 3, 4, &y13);
    double diff = 0;
    for (int i = 0; i < 24; i++) diff += fabs(y11[i] - y13[i]);
    assert_true(diff > 0.1);
    free(y11);
    free(y13);
    /* defaults differ too: opset 11 default axis 1 (rows of 12), opset 13 default -1 (rows of 4) */
    softmax_case("LogSoftmax", 11, 3, d, 0, false, 2, 12, 1, NULL);
    softmax_case("LogSoftmax", 13, 3, d, 0, false, 6, 4, 1, NULL);
}

static void test_softmax_large_values_stay_finite(void **state)
{
    const char *ins[] = {"x"}, *outs[] = {"y"};
    tcase t = mk(13, "Softmax", 1, ins, 1, outs);
    int64_t d[1] = {4};
    shape(&t, "x", FA_DTYPE_FLOAT, 1, d);
    float x[4] = {10000.f, 10001.f, 10002.f, 10003.f};
    void *in[1] = {x}, *out[1];
    assert_int_equal(run(&t, in, out, 1), FA_OK);
    double want[4], s = 0;
    for (int i = 0; i < 4; i++) s += exp(i - 3.0);
    for (int i = 0; i < 4; i++) want[i] = exp(i - 3.0) / s;
    expect_close(out[0], want, 4, "large");
    free(out[0]);
    tc_free(&t);
}

static void test_softmax_float16_computed_in_float(void **state)
{
    const char *ins[] = {"x"}, *outs[] = {"y"};
    tcase t = mk(13, "Softmax", 1, ins, 1, outs);
    int64_t d[2] = {2, 3};
    shape(&t, "x", FA_DTYPE_FLOAT16, 2, d);
    float xf[6] = {0.5f, 1.f, -2.f, 3.f, 3.f, 0.f};
    uint16_t xh[6];
    for (int i = 0; i < 6; i++) fa_store_from_double(xh, FA_DTYPE_FLOAT16, i, xf[i]);
    void *in[1] = {xh}, *out[1];
    assert_int_equal(run(&t, in, out, 1), FA_OK);
    double want[6];
    ref_softmax(xf, want, 2, 3, 1, false);
    for (int i = 0; i < 6; i++)
        assert_true(fabs(fa_load_as_double(out[0], FA_DTYPE_FLOAT16, i) - want[i]) < 1e-3);
    free(out[0]);
    tc_free(&t);
}

static void test_softmax_axis_out_of_range_names_node(void **state)
{
    const char *ins[] = {"x"}, *outs[] = {"y"};
    tcase t = mk(13, "Softmax", 1, ins, 1, outs);
    fa_node_add_attr_int(t.g, t.n, "axis", 3);
    int64_t d[2] = {2, 3};
    shape(&t, "x", FA_DTYPE_FLOAT, 2, d);
    assert_int_equal(t.n->op->infer(t.ctx, t.g, t.n), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(t.ctx), "node_under_test"));
    tc_free(&t);
}

/* ---- LayerNormalization, RMSNormalization ---- */

static void test_layernorm_axis1_scale_bias_mean_invstd_match_formula(void **state)
{
    const char *ins[] = {"x", "s", "b"}, *outs[] = {"y", "mean", "inv"};
    tcase t = mk(17, "LayerNormalization", 3, ins, 3, outs);
    fa_node_add_attr_int(t.g, t.n, "axis", 1);
    fa_node_add_attr_float(t.g, t.n, "epsilon", 1e-3f);
    int64_t xd[3] = {2, 3, 1100}, sd[2] = {3, 1100};
    shape(&t, "x", FA_DTYPE_FLOAT, 3, xd);
    shape(&t, "s", FA_DTYPE_FLOAT, 2, sd);
    shape(&t, "b", FA_DTYPE_FLOAT, 2, sd);
    int64_t D = 3 * 1100, N = 2 * D;
    float *x = malloc(sizeof(float) * (size_t)N), *s = malloc(sizeof(float) * (size_t)D),
          *b = malloc(sizeof(float) * (size_t)D);
    fill(x, D, 1, -1.f, 1.f);
    fill(x + D, D, 2, 3.f, 9.f); /* second batch: different mean and spread */
    fill(s, D, 3, 0.5f, 1.5f);
    fill(b, D, 4, -0.5f, 0.5f);
    void *in[3] = {x, s, b}, *out[3];
    assert_int_equal(run(&t, in, out, 2), FA_OK);
    double *want = malloc(sizeof(double) * (size_t)N), wm[2], wi[2];
    for (int r = 0; r < 2; r++) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < D; j++) mean += x[r * D + j];
        mean /= (double)D;
        for (int64_t j = 0; j < D; j++) var += (x[r * D + j] - mean) * (x[r * D + j] - mean);
        var /= (double)D;
        double inv = 1.0 / sqrt(var + 1e-3);
        for (int64_t j = 0; j < D; j++) want[r * D + j] = (x[r * D + j] - mean) * inv * s[j] + b[j];
        wm[r] = mean;
        wi[r] = inv;
    }
    expect_close(out[0], want, N, "Y");
    expect_close(out[1], wm, 2, "Mean");
    expect_close(out[2], wi, 2, "InvStdDev");
    fa_tensor *mt = t.g->tensors[fa_graph_find_tensor(t.g, "mean")];
    assert_int_equal(mt->rank, 3);
    assert_int_equal(mt->dims[0], 2);
    assert_int_equal(mt->dims[1], 1);
    assert_int_equal(mt->dims[2], 1);
    assert_int_equal(mt->dtype, FA_DTYPE_FLOAT);
    for (int i = 0; i < 3; i++) free(out[i]);
    free(x), free(s), free(b), free(want);
    tc_free(&t);
}

static void test_layernorm_broadcast_scale_and_bias_over_normalized_dims(void **state)
{
    /* axis 1 of [2, 3, 40]: Scale [40] repeats over the 3 rows, B [3, 1] is one value per row */
    const char *ins[] = {"x", "s", "b"}, *outs[] = {"y"};
    tcase t = mk(17, "LayerNormalization", 3, ins, 1, outs);
    fa_node_add_attr_int(t.g, t.n, "axis", 1);
    int64_t xd[3] = {2, 3, 40}, sd[1] = {40}, bd[2] = {3, 1};
    shape(&t, "x", FA_DTYPE_FLOAT, 3, xd);
    shape(&t, "s", FA_DTYPE_FLOAT, 1, sd);
    shape(&t, "b", FA_DTYPE_FLOAT, 2, bd);
    float x[240], s[40], b[3] = {-1.f, 0.5f, 2.f};
    fill(x, 240, 61, -3.f, 3.f);
    fill(s, 40, 62, 0.5f, 1.5f);
    void *in[3] = {x, s, b}, *out[1];
    assert_int_equal(run(&t, in, out, 2), FA_OK);
    double want[240];
    for (int r = 0; r < 2; r++) {
        double mean = 0, var = 0;
        for (int j = 0; j < 120; j++) mean += x[r * 120 + j];
        mean /= 120.0;
        for (int j = 0; j < 120; j++) var += (x[r * 120 + j] - mean) * (x[r * 120 + j] - mean);
        double inv = 1.0 / sqrt(var / 120.0 + 1e-5);
        for (int j = 0; j < 120; j++) want[r * 120 + j] = (x[r * 120 + j] - mean) * inv * s[j % 40] + b[j / 40];
    }
    expect_close(out[0], want, 240, "LayerNorm broadcast params");
    free(out[0]);
    tc_free(&t);
}

static void test_layernorm_scale_shape_mismatch_is_input_error_naming_node(void **state)
{
    const char *ins[] = {"x", "s"}, *outs[] = {"y"};
    tcase t = mk(17, "LayerNormalization", 2, ins, 1, outs);
    int64_t xd[2] = {2, 5}, sd[1] = {7};
    shape(&t, "x", FA_DTYPE_FLOAT, 2, xd);
    shape(&t, "s", FA_DTYPE_FLOAT, 1, sd);
    assert_int_equal(t.n->op->infer(t.ctx, t.g, t.n), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(t.ctx), "node_under_test"));
    assert_non_null(strstr(fa_ctx_errmsg(t.ctx), "Scale"));
    tc_free(&t);
}

static void test_rmsnorm_rows_of_1037_match_formula(void **state)
{
    const char *ins[] = {"x", "w"}, *outs[] = {"y"};
    tcase t = mk(23, "RMSNormalization", 2, ins, 1, outs);
    fa_node_add_attr_float(t.g, t.n, "epsilon", 0.1f);
    int64_t xd[3] = {2, 3, 1037}, wd[1] = {1037};
    shape(&t, "x", FA_DTYPE_FLOAT, 3, xd);
    shape(&t, "w", FA_DTYPE_FLOAT, 1, wd);
    int64_t D = 1037, N = 6 * D;
    float *x = malloc(sizeof(float) * (size_t)N), w[1037];
    for (int r = 0; r < 6; r++) fill(x + r * D, D, 10 + (uint64_t)r, -1.f - (float)r, 1.f + 2.f * (float)r);
    fill(w, D, 99, -2.f, 2.f);
    void *in[2] = {x, w}, *out[1];
    assert_int_equal(run(&t, in, out, 2), FA_OK);
    double *want = malloc(sizeof(double) * (size_t)N);
    for (int r = 0; r < 6; r++) {
        double ss = 0;
        for (int64_t j = 0; j < D; j++) ss += (double)x[r * D + j] * x[r * D + j];
        double rms = sqrt(ss / (double)D + 0.1);
        for (int64_t j = 0; j < D; j++) want[r * D + j] = x[r * D + j] / rms * w[j];
    }
    expect_close(out[0], want, N, "RMSNorm");
    free(out[0]), free(x), free(want);
    tc_free(&t);
}

/* ---- GroupNormalization ---- */

static void ref_groupnorm(const float *x, const float *s, const float *b, double *y, int64_t N, int64_t C,
                          int64_t S, int64_t G, bool per_channel, double eps)
{
    int64_t cpg = C / G;
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++) {
            const float *xr = x + (n * C + g * cpg) * S;
            double mean = 0, var = 0;
            for (int64_t j = 0; j < cpg * S; j++) mean += xr[j];
            mean /= (double)(cpg * S);
            for (int64_t j = 0; j < cpg * S; j++) var += (xr[j] - mean) * (xr[j] - mean);
            var /= (double)(cpg * S);
            for (int64_t c = 0; c < cpg; c++)
                for (int64_t k = 0; k < S; k++) {
                    int64_t p = per_channel ? g * cpg + c : g;
                    y[(n * C + g * cpg + c) * S + k] = (xr[c * S + k] - mean) / sqrt(var + eps) * s[p] + b[p];
                }
        }
}

static void groupnorm_case(int opset, int64_t pcount, bool per_channel)
{
    const char *ins[] = {"x", "s", "b"}, *outs[] = {"y"};
    tcase t = mk(opset, "GroupNormalization", 3, ins, 1, outs);
    fa_node_add_attr_int(t.g, t.n, "num_groups", 2);
    fa_node_add_attr_float(t.g, t.n, "epsilon", 1e-2f);
    int64_t xd[4] = {2, 6, 3, 5}, pd[1] = {pcount};
    shape(&t, "x", FA_DTYPE_FLOAT, 4, xd);
    shape(&t, "s", FA_DTYPE_FLOAT, 1, pd);
    shape(&t, "b", FA_DTYPE_FLOAT, 1, pd);
    float x[180], s[6], b[6];
    fill(x, 90, 5, -1.f, 1.f);
    fill(x + 90, 90, 6, 2.f, 7.f);
    fill(s, pcount, 7, 0.5f, 2.f);
    fill(b, pcount, 8, -1.f, 1.f);
    void *in[3] = {x, s, b}, *out[1];
    assert_int_equal(run(&t, in, out, 2), FA_OK);
    double want[180];
    ref_groupnorm(x, s, b, want, 2, 6, 15, 2, per_channel, 1e-2);
    expect_close(out[0], want, 180, per_channel ? "GroupNorm-21" : "GroupNorm-18");
    free(out[0]);
    tc_free(&t);
}

static void test_groupnorm_opset21_scale_per_channel(void **state) { groupnorm_case(21, 6, true); }
static void test_groupnorm_opset18_scale_per_group(void **state) { groupnorm_case(18, 2, false); }

static void test_groupnorm_opset18_rejects_per_channel_scale(void **state)
{
    const char *ins[] = {"x", "s", "b"}, *outs[] = {"y"};
    tcase t = mk(18, "GroupNormalization", 3, ins, 1, outs);
    fa_node_add_attr_int(t.g, t.n, "num_groups", 2);
    int64_t xd[4] = {2, 6, 3, 5}, pd[1] = {6};
    shape(&t, "x", FA_DTYPE_FLOAT, 4, xd);
    shape(&t, "s", FA_DTYPE_FLOAT, 1, pd);
    shape(&t, "b", FA_DTYPE_FLOAT, 1, pd);
    assert_int_equal(t.n->op->infer(t.ctx, t.g, t.n), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(t.ctx), "node_under_test"));
    tc_free(&t);
}

/* ---- SwiGLU ---- */

static void test_swiglu_alpha_with_broadcast_gate(void **state)
{
    const char *ins[] = {"a", "b"}, *outs[] = {"y"};
    tcase t = mk(28, "SwiGLU", 2, ins, 1, outs);
    fa_node_add_attr_float(t.g, t.n, "alpha", 0.5f);
    int64_t ad[3] = {2, 3, 5}, bd[1] = {5};
    shape(&t, "a", FA_DTYPE_FLOAT, 3, ad);
    shape(&t, "b", FA_DTYPE_FLOAT, 1, bd);
    float a[30], b[5];
    fill(a, 30, 11, -4.f, 4.f);
    fill(b, 5, 12, -2.f, 2.f);
    void *in[2] = {a, b}, *out[1];
    assert_int_equal(run(&t, in, out, 2), FA_OK);
    double want[30];
    for (int i = 0; i < 30; i++) want[i] = a[i] / (1.0 + exp(-0.5 * a[i])) * b[i % 5];
    expect_close(out[0], want, 30, "SwiGLU");
    /* corpus test_swiglu values: a=1, b=0.5, alpha 1 -> 0.36552929 */
    free(out[0]);
    tc_free(&t);
}

/* ---- Attention ---- */

/* Direct reference over 4-D views: q(b,h,i,d), k(b,hk,j,d), v(b,hk,j,e) via accessors. */
typedef struct aref {
    int64_t B, Hq, Hkv, Sq, St, D, Dv;
    double scale;
    bool causal;
    int64_t past;
} aref;

static void ref_attention(const aref *p, const float *q4, const float *k4, const float *v4,
                          const double *bias /* [Sq, St] or NULL */, double *y4)
{
    int64_t grp = p->Hq / p->Hkv;
    double *sc = malloc(sizeof(double) * (size_t)p->St);
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t h = 0; h < p->Hq; h++)
            for (int64_t i = 0; i < p->Sq; i++) {
                int64_t hk = h / grp;
                double m = -INFINITY, s = 0;
                for (int64_t j = 0; j < p->St; j++) {
                    double acc = 0;
                    for (int64_t d = 0; d < p->D; d++)
                        acc += (double)q4[((b * p->Hq + h) * p->Sq + i) * p->D + d] *
                               k4[((b * p->Hkv + hk) * p->St + j) * p->D + d];
                    acc *= p->scale;
                    if (bias) acc += bias[i * p->St + j];
                    if (p->causal && j > i + p->past) acc = -INFINITY;
                    sc[j] = acc;
                    m = fmax(m, acc);
                }
                for (int64_t j = 0; j < p->St; j++) s += exp(sc[j] - m);
                for (int64_t e = 0; e < p->Dv; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j < p->St; j++)
                        acc += exp(sc[j] - m) / s * v4[((b * p->Hkv + hk) * p->St + j) * p->Dv + e];
                    y4[((b * p->Hq + h) * p->Sq + i) * p->Dv + e] = acc;
                }
            }
    free(sc);
}

static void test_attention_4d_gqa_causal_float_mask_match_formula(void **state)
{
    const char *ins[] = {"q", "k", "v", "m"}, *outs[] = {"y"};
    tcase t = mk(23, "Attention", 4, ins, 1, outs);
    fa_node_add_attr_int(t.g, t.n, "is_causal", 1);
    aref p = {.B = 2, .Hq = 4, .Hkv = 2, .Sq = 3, .St = 5, .D = 4, .Dv = 6, .causal = true, .past = 0};
    p.scale = 1.0 / sqrt(4.0);
    int64_t qd[4] = {2, 4, 3, 4}, kd[4] = {2, 2, 5, 4}, vd[4] = {2, 2, 5, 6}, md[2] = {3, 5};
    shape(&t, "q", FA_DTYPE_FLOAT, 4, qd);
    shape(&t, "k", FA_DTYPE_FLOAT, 4, kd);
    shape(&t, "v", FA_DTYPE_FLOAT, 4, vd);
    shape(&t, "m", FA_DTYPE_FLOAT, 2, md);
    float q[96], k[80], v[120], m[15];
    fill(q, 96, 21, -1.f, 1.f);
    fill(k, 80, 22, -1.f, 1.f);
    fill(v, 120, 23, -2.f, 2.f);
    fill(m, 15, 24, -1.f, 0.f);
    void *in[4] = {q, k, v, m}, *out[1];
    assert_int_equal(run(&t, in, out, 2), FA_OK);
    double bias[15], want[2 * 4 * 3 * 6];
    for (int i = 0; i < 15; i++) bias[i] = m[i];
    ref_attention(&p, q, k, v, bias, want);
    expect_close(out[0], want, 144, "Attention-4d");
    free(out[0]);
    tc_free(&t);
}

static void test_attention_3d_past_kv_bool_mask_shorter_than_total(void **state)
{
    /* 3-D Q/K/V with 2 heads each, past of 2 steps, bool mask [Sq, 3] over a total of 4 keys
     * (the missing last column is padded as masked out). */
    const char *ins[] = {"q", "k", "v", "m", "pk", "pv"}, *outs[] = {"y", "prk", "prv"};
    tcase t = mk(23, "Attention", 6, ins, 3, outs);
    fa_node_add_attr_int(t.g, t.n, "q_num_heads", 2);
    fa_node_add_attr_int(t.g, t.n, "kv_num_heads", 2);
    fa_node_add_attr_float(t.g, t.n, "scale", 0.3f);
    int64_t B = 2, H = 2, Sq = 2, Skv = 2, P = 2, D = 3, Dv = 2, St = 4;
    int64_t qd[3] = {B, Sq, H * D}, kd[3] = {B, Skv, H * D}, vd[3] = {B, Skv, H * Dv}, md[2] = {Sq, 3};
    int64_t pkd[4] = {B, H, P, D}, pvd[4] = {B, H, P, Dv};
    shape(&t, "q", FA_DTYPE_FLOAT, 3, qd);
    shape(&t, "k", FA_DTYPE_FLOAT, 3, kd);
    shape(&t, "v", FA_DTYPE_FLOAT, 3, vd);
    shape(&t, "m", FA_DTYPE_BOOL, 2, md);
    shape(&t, "pk", FA_DTYPE_FLOAT, 4, pkd);
    shape(&t, "pv", FA_DTYPE_FLOAT, 4, pvd);
    float q[24], k[24], v[16], pk[24], pv[16];
    uint8_t m[6] = {1, 0, 1, 1, 1, 0};
    fill(q, 24, 31, -1.f, 1.f);
    fill(k, 24, 32, -1.f, 1.f);
    fill(v, 16, 33, -1.f, 1.f);
    fill(pk, 24, 34, -1.f, 1.f);
    fill(pv, 16, 35, -1.f, 1.f);
    void *in[6] = {q, k, v, m, pk, pv}, *out[3];
    assert_int_equal(run(&t, in, out, 2), FA_OK);
    /* build 4-D views: q4 [B,H,Sq,D], k4 [B,H,St,D] = past ++ current */
    float q4[24], k4[2 * 2 * 4 * 3], v4[2 * 2 * 4 * 2];
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++) {
            for (int64_t i = 0; i < Sq; i++)
                for (int64_t d = 0; d < D; d++)
                    q4[((b * H + h) * Sq + i) * D + d] = q[(b * Sq + i) * H * D + h * D + d];
            for (int64_t j = 0; j < St; j++) {
                for (int64_t d = 0; d < D; d++)
                    k4[((b * H + h) * St + j) * D + d] = j < P ? pk[((b * H + h) * P + j) * D + d]
                                                               : k[(b * Skv + j - P) * H * D + h * D + d];
                for (int64_t d = 0; d < Dv; d++)
                    v4[((b * H + h) * St + j) * Dv + d] = j < P ? pv[((b * H + h) * P + j) * Dv + d]
                                                                : v[(b * Skv + j - P) * H * Dv + h * Dv + d];
            }
        }
    double bias[8];
    for (int i = 0; i < Sq; i++)
        for (int j = 0; j < St; j++) bias[i * St + j] = (j < 3 && m[i * 3 + j]) ? 0.0 : -INFINITY;
    aref p = {.B = B, .Hq = H, .Hkv = H, .Sq = Sq, .St = St, .D = D, .Dv = Dv, .scale = 0.3f};
    double y4[16], want[16], wk[48], wv[32];
    ref_attention(&p, q4, k4, v4, bias, y4);
    for (int64_t b = 0; b < B; b++) /* back to 3-D [B, Sq, H*Dv] */
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < Sq; i++)
                for (int64_t e = 0; e < Dv; e++)
                    want[(b * Sq + i) * H * Dv + h * Dv + e] = y4[((b * H + h) * Sq + i) * Dv + e];
    for (int i = 0; i < 48; i++) wk[i] = k4[i];
    for (int i = 0; i < 32; i++) wv[i] = v4[i];
    expect_close(out[0], want, 16, "Attention-3d");
    expect_close(out[1], wk, 48, "present_key");
    expect_close(out[2], wv, 32, "present_value");
    fa_tensor *y = t.g->tensors[fa_graph_find_tensor(t.g, "y")];
    assert_int_equal(y->rank, 3);
    assert_int_equal(y->dims[2], H * Dv);
    for (int i = 0; i < 3; i++) free(out[i]);
    tc_free(&t);
}

/* softcap 2, float mask, all four qk_matmul_output modes, against direct formulas */
static void test_attention_softcap_and_qk_matmul_output_modes(void **state)
{
    enum { B = 1, H = 2, SQ = 3, SK = 4, D = 5 };
    float q[B * H * SQ * D], k[B * H * SK * D], v[B * H * SK * D], m[SQ * SK];
    fill(q, B * H * SQ * D, 71, -2.f, 2.f);
    fill(k, B * H * SK * D, 72, -2.f, 2.f);
    fill(v, B * H * SK * D, 73, -1.f, 1.f);
    fill(m, SQ * SK, 74, -3.f, 0.f);
    m[5] = -INFINITY;
    double capped[H * SQ * SK], P[H * SQ * SK], Y[H * SQ * D];
    for (int h = 0; h < H; h++)
        for (int i = 0; i < SQ; i++) {
            double mx = -INFINITY, s = 0;
            for (int j = 0; j < SK; j++) {
                double acc = 0;
                for (int d = 0; d < D; d++) acc += (double)q[(h * SQ + i) * D + d] * k[(h * SK + j) * D + d];
                acc /= sqrt((double)D);
                int o = (h * SQ + i) * SK + j;
                capped[o] = 2.0 * tanh(acc / 2.0);
                mx = fmax(mx, capped[o] + m[i * SK + j]);
            }
            for (int j = 0; j < SK; j++) s += exp(capped[(h * SQ + i) * SK + j] + m[i * SK + j] - mx);
            for (int j = 0; j < SK; j++) {
                int o = (h * SQ + i) * SK + j;
                P[o] = exp(capped[o] + m[i * SK + j] - mx) / s;
            }
            for (int d = 0; d < D; d++) {
                double acc = 0;
                for (int j = 0; j < SK; j++) acc += P[(h * SQ + i) * SK + j] * v[(h * SK + j) * D + d];
                Y[(h * SQ + i) * D + d] = acc;
            }
        }
    for (int mode = 0; mode < 4; mode++) {
        const char *ins[] = {"q", "k", "v", "m"}, *outs[] = {"y", "", "", "qk"};
        tcase t = mk(23, "Attention", 4, ins, 4, outs);
        fa_node_add_attr_float(t.g, t.n, "softcap", 2.0f);
        fa_node_add_attr_int(t.g, t.n, "qk_matmul_output_mode", mode);
        int64_t qd[4] = {B, H, SQ, D}, kd[4] = {B, H, SK, D}, md[2] = {SQ, SK};
        shape(&t, "q", FA_DTYPE_FLOAT, 4, qd);
        shape(&t, "k", FA_DTYPE_FLOAT, 4, kd);
        shape(&t, "v", FA_DTYPE_FLOAT, 4, kd);
        shape(&t, "m", FA_DTYPE_FLOAT, 2, md);
        void *in[4] = {q, k, v, m}, *out[4];
        assert_int_equal(run(&t, in, out, 2), FA_OK);
        expect_close(out[0], Y, H * SQ * D, "softcap Y");
        double want[H * SQ * SK];
        for (int o = 0; o < H * SQ * SK; o++) {
            double bias = m[o % (SQ * SK)];
            /* as the reference writes them (onnx/reference/ops/op_attention.py): modes 0 and 1
             * the softcapped scores, 2 with the bias added, 3 the softmax */
            want[o] = mode <= 1 ? capped[o] : mode == 2 ? capped[o] + bias : P[o];
        }
        const float *qk = out[3];
        for (int o = 0; o < H * SQ * SK; o++) {
            if (isinf(want[o])) assert_true(isinf(qk[o]) && qk[o] < 0);
            else if (!(fabs(qk[o] - want[o]) <= TOL_A + TOL_R * fabs(want[o]))) {
                fprintf(stderr, "mode %d element %d: %.9g vs %.9g\n", mode, o, qk[o], want[o]);
                fail();
            }
        }
        free(out[0]);
        free(out[3]);
        tc_free(&t);
    }
}

/* opset 24 nonpad_kv_seqlen: keys at or past nonpad[b] are masked, per batch */
static void test_attention_nonpad_kv_seqlen_masks_per_batch(void **state)
{
    enum { B = 2, H = 1, SQ = 2, SK = 5, D = 3 };
    const char *ins[] = {"q", "k", "v", "", "", "", "nl"}, *outs[] = {"y"};
    tcase t = mk(24, "Attention", 7, ins, 1, outs);
    int64_t qd[4] = {B, H, SQ, D}, kd[4] = {B, H, SK, D}, nd[1] = {B};
    shape(&t, "q", FA_DTYPE_FLOAT, 4, qd);
    shape(&t, "k", FA_DTYPE_FLOAT, 4, kd);
    shape(&t, "v", FA_DTYPE_FLOAT, 4, kd);
    shape(&t, "nl", FA_DTYPE_INT64, 1, nd);
    float q[B * SQ * D], k[B * SK * D], v[B * SK * D];
    int64_t nl[B] = {2, 5};
    fill(q, B * SQ * D, 81, -1.f, 1.f);
    fill(k, B * SK * D, 82, -1.f, 1.f);
    fill(v, B * SK * D, 83, -1.f, 1.f);
    void *in[7] = {q, k, v, NULL, NULL, NULL, nl}, *out[1];
    assert_int_equal(run(&t, in, out, 1), FA_OK);
    double want[B * SQ * D];
    for (int b = 0; b < B; b++) {
        double bias[SQ * SK];
        for (int i = 0; i < SQ; i++)
            for (int j = 0; j < SK; j++) bias[i * SK + j] = j < nl[b] ? 0.0 : -INFINITY;
        aref p = {.B = 1, .Hq = 1, .Hkv = 1, .Sq = SQ, .St = SK, .D = D, .Dv = D, .scale = 1.0 / sqrt(3.0)};
        ref_attention(&p, q + b * SQ * D, k + b * SK * D, v + b * SK * D, bias, want + b * SQ * D);
    }
    expect_close(out[0], want, B * SQ * D, "nonpad");
    free(out[0]);
    tc_free(&t);
}

static void test_attention_heads_not_dividing_is_input_error(void **state)
{
    const char *ins[] = {"q", "k", "v"}, *outs[] = {"y"};
    tcase t = mk(23, "Attention", 3, ins, 1, outs);
    int64_t qd[4] = {1, 3, 2, 4}, kd[4] = {1, 2, 2, 4};
    shape(&t, "q", FA_DTYPE_FLOAT, 4, qd);
    shape(&t, "k", FA_DTYPE_FLOAT, 4, kd);
    shape(&t, "v", FA_DTYPE_FLOAT, 4, kd);
    assert_int_equal(t.n->op->infer(t.ctx, t.g, t.n), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(t.ctx), "node_under_test"));
    tc_free(&t);
}

/* ---- LSTM ---- */

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The recurrent ops' three required inputs, float: X, W, R with these dims. */
static void shape_xwr(tcase *t, const int64_t *xd, const int64_t *wd, const int64_t *rd)
{
    shape(t, "x", FA_DTYPE_FLOAT, 3, xd);
    shape(t, "w", FA_DTYPE_FLOAT, 3, wd);
    shape(t, "r", FA_DTYPE_FLOAT, 3, rd);
}

/* Direct ONNX LSTM equations for one direction over one batch row, layout 0 tensors. */
static void ref_lstm_dir(const float *X, int64_t S, int64_t Bt, int64_t I, int64_t H, const float *W,
                         const float *R, const float *Bi, const float *P, const float *h0, const float *c0,
                         int64_t b, int64_t len, bool backward, int d, int dirs, double *Y, double *yh, double *yc)
{
    double h[64], c[64], nh[64];
    for (int64_t j = 0; j < H; j++) {
        h[j] = h0 ? h0[(d * Bt + b) * H + j] : 0;
        c[j] = c0 ? c0[(d * Bt + b) * H + j] : 0;
    }
    for (int64_t s = 0; s < len; s++) {
        int64_t t = backward ? len - 1 - s : s;
        const float *x = X + (t * Bt + b) * I;
        double gate[4][64];
        for (int gi = 0; gi < 4; gi++)
            for (int64_t j = 0; j < H; j++) {
                int64_t row = gi * H + j;
                double acc = 0;
                for (int64_t k = 0; k < I; k++) acc += (double)x[k] * W[row * I + k];
                for (int64_t k = 0; k < H; k++) acc += h[k] * R[row * H + k];
                if (Bi) acc += (double)Bi[row] + Bi[4 * H + row];
                gate[gi][j] = acc;
            }
        for (int64_t j = 0; j < H; j++) {
            double it = sigm(gate[0][j] + (P ? P[j] * c[j] : 0));
            double ft = sigm(gate[2][j] + (P ? P[2 * H + j] * c[j] : 0));
            double ct = tanh(gate[3][j]);
            c[j] = ft * c[j] + it * ct;
            double ot = sigm(gate[1][j] + (P ? P[H + j] * c[j] : 0));
            nh[j] = ot * tanh(c[j]);
        }
        for (int64_t j = 0; j < H; j++) {
            h[j] = nh[j];
            Y[((t * dirs + d) * Bt + b) * H + j] = h[j];
        }
    }
    for (int64_t j = 0; j < H; j++) {
        yh[(d * Bt + b) * H + j] = h[j];
        yc[(d * Bt + b) * H + j] = c[j];
    }
}

static void test_lstm_bidirectional_peephole_seqlens_match_equations(void **state)
{
    enum { S = 5, BT = 2, I = 3, H = 4, DIRS = 2 };
    const char *ins[] = {"x", "w", "r", "b", "sl", "h0", "c0", "p"}, *outs[] = {"y", "yh", "yc"};
    tcase t = mk(14, "LSTM", 8, ins, 3, outs);
    fa_node_add_attr_int(t.g, t.n, "hidden_size", H);
    fa_node_add_attr_string(t.g, t.n, "direction", "bidirectional");
    int64_t xd[3] = {S, BT, I}, wd[3] = {DIRS, 4 * H, I}, rd[3] = {DIRS, 4 * H, H}, bd[2] = {DIRS, 8 * H},
            sd[1] = {BT}, hd[3] = {DIRS, BT, H}, pd[2] = {DIRS, 3 * H};
    shape_xwr(&t, xd, wd, rd);
    shape(&t, "b", FA_DTYPE_FLOAT, 2, bd);
    shape(&t, "sl", FA_DTYPE_INT32, 1, sd);
    shape(&t, "h0", FA_DTYPE_FLOAT, 3, hd);
    shape(&t, "c0", FA_DTYPE_FLOAT, 3, hd);
    shape(&t, "p", FA_DTYPE_FLOAT, 2, pd);
    float x[S * BT * I], w[DIRS * 4 * H * I], r[DIRS * 4 * H * H], b[DIRS * 8 * H], h0[DIRS * BT * H],
        c0[DIRS * BT * H], p[DIRS * 3 * H];
    int32_t sl[BT] = {5, 3};
    fill(x, S * BT * I, 41, -1.f, 1.f);
    fill(w, DIRS * 4 * H * I, 42, -0.5f, 0.5f);
    fill(r, DIRS * 4 * H * H, 43, -0.5f, 0.5f);
    fill(b, DIRS * 8 * H, 44, -0.2f, 0.2f);
    fill(h0, DIRS * BT * H, 45, -0.3f, 0.3f);
    fill(c0, DIRS * BT * H, 46, -0.3f, 0.3f);
    fill(p, DIRS * 3 * H, 47, -0.2f, 0.2f);
    void *in[8] = {x, w, r, b, sl, h0, c0, p}, *out[3];
    assert_int_equal(run(&t, in, out, 2), FA_OK);
    double Y[S * DIRS * BT * H], yh[DIRS * BT * H], yc[DIRS * BT * H];
    memset(Y, 0, sizeof Y);
    for (int d = 0; d < DIRS; d++)
        for (int64_t bb = 0; bb < BT; bb++)
            ref_lstm_dir(x, S, BT, I, H, w + d * 4 * H * I, r + d * 4 * H * H, b + d * 8 * H, p + d * 3 * H,
                         h0, c0, bb, sl[bb], d == 1, d, DIRS, Y, yh, yc);
    expect_close(out[0], Y, S * DIRS * BT * H, "LSTM Y");
    expect_close(out[1], yh, DIRS * BT * H, "LSTM Y_h");
    expect_close(out[2], yc, DIRS * BT * H, "LSTM Y_c");
    for (int i = 0; i < 3; i++) free(out[i]);
    tc_free(&t);
}

static void test_lstm_layout1_is_batch_major_transpose_of_layout0(void **state)
{
    enum { S = 4, BT = 3, I = 2, H = 5 };
    float x0[S * BT * I], x1[S * BT * I], w[4 * H * I], r[4 * H * H];
    fill(x0, S * BT * I, 51, -1.f, 1.f);
    fill(w, 4 * H * I, 52, -0.6f, 0.6f);
    fill(r, 4 * H * H, 53, -0.6f, 0.6f);
    for (int t = 0; t < S; t++)
        for (int b = 0; b < BT; b++)
            for (int k = 0; k < I; k++) x1[(b * S + t) * I + k] = x0[(t * BT + b) * I + k];
    void *o0[3], *o1[3];
    for (int layout = 0; layout < 2; layout++) {
        const char *ins[] = {"x", "w", "r"}, *outs[] = {"y", "yh", "yc"};
        tcase t = mk(14, "LSTM", 3, ins, 3, outs);
        fa_node_add_attr_int(t.g, t.n, "hidden_size", H);
        fa_node_add_attr_int(t.g, t.n, "layout", layout);
        int64_t xd[3] = {layout ? BT : S, layout ? S : BT, I}, wd[3] = {1, 4 * H, I}, rd[3] = {1, 4 * H, H};
        shape_xwr(&t, xd, wd, rd);
        void *in[3] = {layout ? x1 : x0, w, r};
        assert_int_equal(run(&t, in, layout ? o1 : o0, 1), FA_OK);
        fa_tensor *y = t.g->tensors[fa_graph_find_tensor(t.g, "y")];
        assert_int_equal(y->dims[0], layout ? BT : S);
        assert_int_equal(y->dims[1], layout ? S : 1);
        tc_free(&t);
    }
    const float *y0 = o0[0], *y1 = o1[0];
    for (int t = 0; t < S; t++)
        for (int b = 0; b < BT; b++)
            for (int j = 0; j < H; j++)
                assert_float_equal(y0[(t * BT + b) * H + j], y1[(b * S + t) * H + j], 1e-6);
    for (int b = 0; b < BT; b++)
        for (int j = 0; j < H; j++) {
            assert_float_equal(((float *)o0[1])[b * H + j], ((float *)o1[1])[b * H + j], 1e-6);
            /* Y_h is the last step of Y */
            assert_float_equal(((float *)o0[1])[b * H + j], y0[((S - 1) * BT + b) * H + j], 1e-6);
        }
    for (int i = 0; i < 3; i++) free(o0[i]), free(o1[i]);
}

/* activations HardSigmoid(0.3, 0.4) / Softsign / ScaledTanh(0.8, 1.2), clip 0.7, input_forget */
static void test_lstm_custom_activations_clip_input_forget_match_equations(void **state)
{
    enum { S = 4, I = 2, H = 3 };
    const char *ins[] = {"x", "w", "r"}, *outs[] = {"y", "yh", "yc"};
    tcase t = mk(7, "LSTM", 3, ins, 3, outs);
    fa_node_add_attr_int(t.g, t.n, "hidden_size", H);
    fa_node_add_attr_float(t.g, t.n, "clip", 0.7f);
    fa_node_add_attr_int(t.g, t.n, "input_forget", 1);
    static const char *acts[3] = {"HardSigmoid", "Softsign", "ScaledTanh"};
    fa_attr *a = fa_node_add_attr_string(t.g, t.n, "activations", "x");
    a->type = FA_ATTR_STRINGS; /* no STRINGS builder in graph.h: point at static storage */
    a->n = 3;
    a->strings = acts;
    float al[2] = {0.3f, 0.8f}, be[2] = {0.4f, 1.2f};
    fa_node_add_attr_floats(t.g, t.n, "activation_alpha", al, 2);
    fa_node_add_attr_floats(t.g, t.n, "activation_beta", be, 2);
    int64_t xd[3] = {S, 1, I}, wd[3] = {1, 4 * H, I}, rd[3] = {1, 4 * H, H};
    shape_xwr(&t, xd, wd, rd);
    float x[S * I], w[4 * H * I], r[4 * H * H];
    fill(x, S * I, 91, -2.f, 2.f);
    fill(w, 4 * H * I, 92, -1.f, 1.f);
    fill(r, 4 * H * H, 93, -1.f, 1.f);
    void *in[3] = {x, w, r}, *out[3];
    assert_int_equal(run(&t, in, out, 2), FA_OK);
    double h[H] = {0}, c[H] = {0}, Y[S * H];
    for (int s = 0; s < S; s++) {
        double g[4][H];
        for (int gi = 0; gi < 4; gi++)
            for (int j = 0; j < H; j++) {
                double acc = 0;
                for (int k = 0; k < I; k++) acc += (double)x[s * I + k] * w[(gi * H + j) * I + k];
                for (int k = 0; k < H; k++) acc += h[k] * r[(gi * H + j) * H + k];
                g[gi][j] = fmin(0.7, fmax(-0.7, acc));
            }
        for (int j = 0; j < H; j++) {
            double it = fmin(1.0, fmax(0.0, 0.3 * g[0][j] + 0.4));
            double ft = 1.0 - it;
            double ct = g[3][j] / (1.0 + fabs(g[3][j]));
            c[j] = ft * c[j] + it * ct;
            double ot = fmin(1.0, fmax(0.0, 0.3 * g[1][j] + 0.4));
            h[j] = ot * 0.8 * tanh(1.2 * c[j]);
            Y[s * H + j] = h[j];
        }
    }
    expect_close(out[0], Y, S * H, "LSTM custom Y");
    expect_close(out[1], h, H, "LSTM custom Y_h");
    expect_close(out[2], c, H, "LSTM custom Y_c");
    for (int i = 0; i < 3; i++) free(out[i]);
    tc_free(&t);
}

static void test_lstm_wrong_w_shape_is_input_error(void **state)
{
    const char *ins[] = {"x", "w", "r"}, *outs[] = {"y"};
    tcase t = mk(7, "LSTM", 3, ins, 1, outs);
    fa_node_add_attr_int(t.g, t.n, "hidden_size", 4);
    int64_t xd[3] = {2, 1, 3}, wd[3] = {1, 12, 3}, rd[3] = {1, 16, 4};
    shape_xwr(&t, xd, wd, rd);
    assert_int_equal(t.n->op->infer(t.ctx, t.g, t.n), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(t.ctx), "node_under_test"));
    tc_free(&t);
}

/* GRU reference (ONNX Operators.md GRU, gates z, r, h) for one direction and one batch entry, in
 * double: linear_before_reset picks where the reset gate applies; Y stays 0 past len. */
static void ref_gru_dir(const float *X, int64_t Bt, int64_t I, int64_t H, const float *W, const float *R,
                        const float *Bi, const float *h0, int64_t b, int64_t len, bool backward, int d, int dirs,
                        bool lbr, double clip, double *Y, double *yh)
{
    double h[64], nh[64];
    for (int64_t j = 0; j < H; j++) h[j] = h0 ? h0[(d * Bt + b) * H + j] : 0;
    for (int64_t s = 0; s < len; s++) {
        int64_t t = backward ? len - 1 - s : s;
        const float *x = X + (t * Bt + b) * I;
        double xg[3][64], hg[3][64], z[64], rr[64];
        for (int gi = 0; gi < 3; gi++)
            for (int64_t j = 0; j < H; j++) {
                int64_t row = gi * H + j;
                double ax = Bi ? Bi[row] : 0, ah = Bi ? Bi[3 * H + row] : 0;
                for (int64_t k = 0; k < I; k++) ax += (double)x[k] * W[row * I + k];
                for (int64_t k = 0; k < H; k++) ah += h[k] * R[row * H + k];
                xg[gi][j] = ax, hg[gi][j] = ah;
            }
#define CLIP(v) (clip > 0 ? fmin(clip, fmax(-clip, (v))) : (v))
        for (int64_t j = 0; j < H; j++) {
            z[j] = sigm(CLIP(xg[0][j] + hg[0][j]));
            rr[j] = sigm(CLIP(xg[1][j] + hg[1][j]));
        }
        for (int64_t j = 0; j < H; j++) {
            double pre;
            if (lbr) {
                pre = xg[2][j] + rr[j] * hg[2][j];
            } else { /* (r . h) Rh^T + Rbh */
                pre = xg[2][j] + (Bi ? Bi[3 * H + 2 * H + j] : 0);
                for (int64_t k = 0; k < H; k++) pre += rr[k] * h[k] * R[(2 * H + j) * H + k];
            }
            double ht = tanh(CLIP(pre));
            nh[j] = (1 - z[j]) * ht + z[j] * h[j];
        }
#undef CLIP
        for (int64_t j = 0; j < H; j++) {
            h[j] = nh[j];
            Y[((t * dirs + d) * Bt + b) * H + j] = h[j];
        }
    }
    for (int64_t j = 0; j < H; j++) yh[(d * Bt + b) * H + j] = h[j];
}

/* Bidirectional GRU with bias, sequence_lens, initial_h and clip, both places of the reset gate:
 * PyTorch exports linear_before_reset = 1, the ONNX node suite only 0. */
static void test_gru_bidirectional_seqlens_both_reset_placements_match_equations(void **state)
{
    enum { S = 5, BT = 2, I = 3, H = 4, DIRS = 2 };
    for (int lbr = 0; lbr < 2; lbr++) {
        const char *ins[] = {"x", "w", "r", "b", "sl", "h0"}, *outs[] = {"y", "yh"};
        tcase t = mk(14, "GRU", 6, ins, 2, outs);
        fa_node_add_attr_int(t.g, t.n, "hidden_size", H);
        fa_node_add_attr_string(t.g, t.n, "direction", "bidirectional");
        fa_node_add_attr_int(t.g, t.n, "linear_before_reset", lbr);
        fa_node_add_attr_float(t.g, t.n, "clip", 1.5f);
        int64_t xd[3] = {S, BT, I}, wd[3] = {DIRS, 3 * H, I}, rd[3] = {DIRS, 3 * H, H}, bd[2] = {DIRS, 6 * H},
                sd[1] = {BT}, hd[3] = {DIRS, BT, H};
        shape_xwr(&t, xd, wd, rd);
        shape(&t, "b", FA_DTYPE_FLOAT, 2, bd);
        shape(&t, "sl", FA_DTYPE_INT32, 1, sd);
        shape(&t, "h0", FA_DTYPE_FLOAT, 3, hd);
        float x[S * BT * I], w[DIRS * 3 * H * I], r[DIRS * 3 * H * H], b[DIRS * 6 * H], h0[DIRS * BT * H];
        int32_t sl[BT] = {5, 2};
        fill(x, S * BT * I, 61, -1.5f, 1.5f);
        fill(w, DIRS * 3 * H * I, 62, -0.8f, 0.8f);
        fill(r, DIRS * 3 * H * H, 63, -0.8f, 0.8f);
        fill(b, DIRS * 6 * H, 64, -0.5f, 0.5f);
        fill(h0, DIRS * BT * H, 65, -0.5f, 0.5f);
        void *in[6] = {x, w, r, b, sl, h0}, *out[2];
        assert_int_equal(run(&t, in, out, 2), FA_OK);
        double Y[S * DIRS * BT * H], yh[DIRS * BT * H];
        memset(Y, 0, sizeof Y);
        for (int d = 0; d < DIRS; d++)
            for (int64_t bb = 0; bb < BT; bb++)
                ref_gru_dir(x, BT, I, H, w + d * 3 * H * I, r + d * 3 * H * H, b + d * 6 * H, h0, bb, sl[bb],
                            d == 1, d, DIRS, lbr, 1.5, Y, yh);
        expect_close(out[0], Y, S * DIRS * BT * H, lbr ? "GRU Y (linear_before_reset)" : "GRU Y");
        expect_close(out[1], yh, DIRS * BT * H, lbr ? "GRU Y_h (linear_before_reset)" : "GRU Y_h");
        for (int i = 0; i < 2; i++) free(out[i]);
        tc_free(&t);
    }
}

/* The packed products (rnn_pack, rnn_rows_axpy: 16 or more rows of input projection, a batch
 * of 4 or more in the recurrence) on a width that is not a multiple of 16 (H 20: 60 or 80 gate
 * rows, each thread's range starting mid-block): GRU both ways and LSTM with peepholes, batch 8,
 * against the same double-precision references. */
static void test_recurrent_batched_packed_paths_match_equations(void **state)
{
    enum { S = 6, BTMAX = 8, I = 35, H = 20, DIRS = 2 };
    for (int BT = BTMAX; BT >= 5; BT -= 3) { /* 8: eight-row tiles throughout; 5: 30 projection rows, a tail tile of 6 */
    static float x[S * BTMAX * I], w[DIRS * 4 * H * I], r[DIRS * 4 * H * H], b[DIRS * 8 * H], h0[DIRS * BTMAX * H],
        c0[DIRS * BTMAX * H], p[DIRS * 3 * H];
    int32_t sl[BTMAX] = {6, 4, 6, 1, 6, 5, 6, 6};
    fill(x, S * BT * I, 81, -1.f, 1.f);
    fill(w, DIRS * 4 * H * I, 82, -0.3f, 0.3f);
    fill(r, DIRS * 4 * H * H, 83, -0.3f, 0.3f);
    fill(b, DIRS * 8 * H, 84, -0.2f, 0.2f);
    fill(h0, DIRS * BT * H, 85, -0.3f, 0.3f);
    fill(c0, DIRS * BT * H, 86, -0.3f, 0.3f);
    fill(p, DIRS * 3 * H, 87, -0.2f, 0.2f);
    static double Y[S * DIRS * BTMAX * H], yh[DIRS * BTMAX * H], yc[DIRS * BTMAX * H];
    for (int kind = 0; kind < 3; kind++) { /* GRU lbr 0, GRU lbr 1, LSTM */
        int G = kind == 2 ? 4 : 3;
        const char *ins[] = {"x", "w", "r", "b", "sl", "h0", "c0", "p"}, *outs[] = {"y", "yh", "yc"};
        int nin = kind == 2 ? 8 : 6, nout = kind == 2 ? 3 : 2;
        tcase t = mk(14, kind == 2 ? "LSTM" : "GRU", nin, ins, nout, outs);
        fa_node_add_attr_int(t.g, t.n, "hidden_size", H);
        fa_node_add_attr_string(t.g, t.n, "direction", "bidirectional");
        if (kind < 2) fa_node_add_attr_int(t.g, t.n, "linear_before_reset", kind);
        int64_t xd[3] = {S, BT, I}, wd[3] = {DIRS, G * H, I}, rd[3] = {DIRS, G * H, H}, bd[2] = {DIRS, 2 * G * H},
                sd[1] = {BT}, hd[3] = {DIRS, BT, H}, pd[2] = {DIRS, 3 * H};
        shape_xwr(&t, xd, wd, rd);
        shape(&t, "b", FA_DTYPE_FLOAT, 2, bd);
        shape(&t, "sl", FA_DTYPE_INT32, 1, sd);
        shape(&t, "h0", FA_DTYPE_FLOAT, 3, hd);
        if (kind == 2) {
            shape(&t, "c0", FA_DTYPE_FLOAT, 3, hd);
            shape(&t, "p", FA_DTYPE_FLOAT, 2, pd);
        }
        void *in[8] = {x, w, r, b, sl, h0, c0, p}, *out[3];
        assert_int_equal(run(&t, in, out, 2), FA_OK);
        memset(Y, 0, sizeof Y);
        for (int d = 0; d < DIRS; d++)
            for (int64_t bb = 0; bb < BT; bb++) {
                if (kind == 2)
                    ref_lstm_dir(x, S, BT, I, H, w + d * 4 * H * I, r + d * 4 * H * H, b + d * 8 * H, p + d * 3 * H,
                                 h0, c0, bb, sl[bb], d == 1, d, DIRS, Y, yh, yc);
                else
                    ref_gru_dir(x, BT, I, H, w + d * 3 * H * I, r + d * 3 * H * H, b + d * 6 * H, h0, bb, sl[bb],
                                d == 1, d, DIRS, kind == 1, 0.0, Y, yh);
            }
        expect_close(out[0], Y, S * DIRS * BT * H, kind == 2 ? "LSTM Y (packed)" : "GRU Y (packed)");
        expect_close(out[1], yh, DIRS * BT * H, kind == 2 ? "LSTM Y_h (packed)" : "GRU Y_h (packed)");
        if (kind == 2) expect_close(out[2], yc, DIRS * BT * H, "LSTM Y_c (packed)");
        for (int i = 0; i < nout; i++) free(out[i]);
        tc_free(&t);
    }
    }
}

/* RNN, reverse, Relu activation, bias, layout 1 (batch-major X, Y and Y_h) */
static void test_rnn_reverse_relu_layout1_matches_equations(void **state)
{
    enum { S = 4, BT = 2, I = 3, H = 5 };
    const char *ins[] = {"x", "w", "r", "b"}, *outs[] = {"y", "yh"};
    tcase t = mk(14, "RNN", 4, ins, 2, outs);
    fa_node_add_attr_int(t.g, t.n, "hidden_size", H);
    fa_node_add_attr_int(t.g, t.n, "layout", 1);
    fa_node_add_attr_string(t.g, t.n, "direction", "reverse");
    static const char *acts[1] = {"Relu"};
    fa_attr *a = fa_node_add_attr_string(t.g, t.n, "activations", "x");
    a->type = FA_ATTR_STRINGS;
    a->n = 1;
    a->strings = acts;
    int64_t xd[3] = {BT, S, I}, wd[3] = {1, H, I}, rd[3] = {1, H, H}, bd[2] = {1, 2 * H};
    shape_xwr(&t, xd, wd, rd);
    shape(&t, "b", FA_DTYPE_FLOAT, 2, bd);
    float x[BT * S * I], w[H * I], r[H * H], b[2 * H];
    fill(x, BT * S * I, 71, -1.f, 1.f);
    fill(w, H * I, 72, -0.7f, 0.7f);
    fill(r, H * H, 73, -0.5f, 0.5f);
    fill(b, 2 * H, 74, -0.3f, 0.3f);
    void *in[4] = {x, w, r, b}, *out[2];
    assert_int_equal(run(&t, in, out, 2), FA_OK);
    fa_tensor *yt = t.g->tensors[fa_graph_find_tensor(t.g, "y")];
    assert_int_equal(yt->rank, 4);
    assert_int_equal(yt->dims[0], BT);
    assert_int_equal(yt->dims[1], S);
    double Y[BT * S * H], yh[BT * H];
    for (int bb = 0; bb < BT; bb++) {
        double h[H] = {0}, nh[H];
        for (int s = 0; s < S; s++) {
            int tt = S - 1 - s;
            for (int j = 0; j < H; j++) {
                double acc = (double)b[j] + b[H + j];
                for (int k = 0; k < I; k++) acc += (double)x[(bb * S + tt) * I + k] * w[j * I + k];
                for (int k = 0; k < H; k++) acc += h[k] * r[j * H + k];
                nh[j] = acc > 0 ? acc : 0;
            }
            for (int j = 0; j < H; j++) h[j] = nh[j], Y[(bb * S + tt) * H + j] = h[j];
        }
        for (int j = 0; j < H; j++) yh[bb * H + j] = h[j];
    }
    expect_close(out[0], Y, BT * S * H, "RNN Y");
    expect_close(out[1], yh, BT * H, "RNN Y_h");
    for (int i = 0; i < 2; i++) free(out[i]);
    tc_free(&t);
}

static void test_gru_rnn_wrong_shapes_and_activation_counts_are_input_errors(void **state)
{
    {
        const char *ins[] = {"x", "w", "r"}, *outs[] = {"y"};
        tcase t = mk(7, "GRU", 3, ins, 1, outs);
        fa_node_add_attr_int(t.g, t.n, "hidden_size", 4);
        int64_t xd[3] = {2, 1, 3}, wd[3] = {1, 16, 3}, rd[3] = {1, 12, 4}; /* W has LSTM's 4 gates */
        shape_xwr(&t, xd, wd, rd);
        assert_int_equal(t.n->op->infer(t.ctx, t.g, t.n), FA_ERR_INPUT);
        assert_non_null(strstr(fa_ctx_errmsg(t.ctx), "W must be [1, 12, 3]"));
        tc_free(&t);
    }
    {
        const char *ins[] = {"x", "w", "r"}, *outs[] = {"y"};
        tcase t = mk(7, "RNN", 3, ins, 1, outs);
        static const char *acts[2] = {"Tanh", "Tanh"}; /* one per direction for RNN */
        fa_attr *a = fa_node_add_attr_string(t.g, t.n, "activations", "x");
        a->type = FA_ATTR_STRINGS;
        a->n = 2;
        a->strings = acts;
        int64_t xd[3] = {2, 1, 3}, wd[3] = {1, 4, 3}, rd[3] = {1, 4, 4};
        shape_xwr(&t, xd, wd, rd);
        assert_int_equal(t.n->op->infer(t.ctx, t.g, t.n), FA_ERR_INPUT);
        assert_non_null(strstr(fa_ctx_errmsg(t.ctx), "activations has 2 entries, 1 expected"));
        tc_free(&t);
    }
    {
        /* GRU and RNN take at most six inputs: a seventh (LSTM's initial_c) is refused */
        const fa_op *g = fa_op_find("", "GRU"), *r = fa_op_find("", "RNN");
        assert_int_equal(g->max_inputs, 6);
        assert_int_equal(r->max_inputs, 6);
        assert_int_equal(g->max_outputs, 2);
    }
}

/* The kernel's own scratch (every step's input projection, S x batch x 3H floats) is sized by
 * checked products before anything is read or allocated: shapes whose product overflows int64
 * are an error naming the node, not a wrapped malloc (the values' data is never touched). */
static void test_gru_scratch_past_int64_is_an_error_before_any_read(void **state)
{
    const char *ins[] = {"x", "w", "r"}, *outs[] = {"y", "yh"};
    tcase t = mk(14, "GRU", 3, ins, 2, outs);
    float dummy[4] = {0};
    const int64_t big = (int64_t)1 << 24;
    fa_value in[3] = {{.data = dummy, .dtype = FA_DTYPE_FLOAT, .rank = 3, .dims = {big, big, 1}},
                      {.data = dummy, .dtype = FA_DTYPE_FLOAT, .rank = 3, .dims = {1, 3 * big, 1}},
                      {.data = dummy, .dtype = FA_DTYPE_FLOAT, .rank = 3, .dims = {1, 3 * big, big}}};
    fa_value out[2] = {{0}};
    assert_int_equal(t.n->op->kernel(t.ctx, t.n, in, 3, out, 2, 1), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(t.ctx), "node_under_test"));
    assert_non_null(strstr(fa_ctx_errmsg(t.ctx), "overflows int64"));
    tc_free(&t);
}

/* FLOPs: dirs*S*batch*(2GH(I+H) + (2G+E)H) with E = 1 (RNN), 8 (GRU) */
static void test_cost_recurrent_flops(void **state)
{
    const char *ops[2] = {"RNN", "GRU"};
    const int G[2] = {1, 3}, E[2] = {1, 8};
    for (int k = 0; k < 2; k++) {
        const char *ins[] = {"x", "w", "r"}, *outs[] = {"y"};
        tcase t = mk(14, ops[k], 3, ins, 1, outs);
        fa_node_add_attr_string(t.g, t.n, "direction", "bidirectional");
        int64_t xd[3] = {7, 2, 3}, wd[3] = {2, G[k] * 5, 3}, rd[3] = {2, G[k] * 5, 5};
        shape_xwr(&t, xd, wd, rd);
        assert_int_equal(t.n->op->infer(t.ctx, t.g, t.n), FA_OK);
        fa_op_cost c;
        fa_node_cost(t.g, t.n, &c);
        assert_int_equal(c.flops, 2 * 7 * 2 * (2 * G[k] * 5 * (3 + 5) + (2 * G[k] + E[k]) * 5));
        tc_free(&t);
    }
}

/* ---- cost formulas ---- */

static void test_cost_formulas_softmax_layernorm_attention(void **state)
{
    fa_op_cost c;
    {
        const char *ins[] = {"x"}, *outs[] = {"y"};
        tcase t = mk(13, "Softmax", 1, ins, 1, outs);
        int64_t d[2] = {8, 100};
        shape(&t, "x", FA_DTYPE_FLOAT, 2, d);
        assert_int_equal(t.n->op->infer(t.ctx, t.g, t.n), FA_OK);
        fa_node_cost(t.g, t.n, &c);
        assert_int_equal(c.flops, 5 * 800);
        assert_int_equal(c.bytes_read, 3200);
        assert_int_equal(c.bytes_written, 3200);
        tc_free(&t);
    }
    {
        const char *ins[] = {"x", "s", "b"}, *outs[] = {"y"};
        tcase t = mk(17, "LayerNormalization", 3, ins, 1, outs);
        int64_t d[2] = {4, 10}, sd[1] = {10};
        shape(&t, "x", FA_DTYPE_FLOAT, 2, d);
        shape(&t, "s", FA_DTYPE_FLOAT, 1, sd);
        shape(&t, "b", FA_DTYPE_FLOAT, 1, sd);
        assert_int_equal(t.n->op->infer(t.ctx, t.g, t.n), FA_OK);
        fa_node_cost(t.g, t.n, &c);
        assert_int_equal(c.flops, 7 * 40 + 3 * 4);
        assert_int_equal(c.bytes_read, 160 + 40 + 40);
        tc_free(&t);
    }
    {
        const char *ins[] = {"q", "k", "v"}, *outs[] = {"y"};
        tcase t = mk(23, "Attention", 3, ins, 1, outs);
        int64_t qd[4] = {1, 2, 3, 4}, kd[4] = {1, 2, 5, 4};
        shape(&t, "q", FA_DTYPE_FLOAT, 4, qd);
        shape(&t, "k", FA_DTYPE_FLOAT, 4, kd);
        shape(&t, "v", FA_DTYPE_FLOAT, 4, kd);
        assert_int_equal(t.n->op->infer(t.ctx, t.g, t.n), FA_OK);
        fa_node_cost(t.g, t.n, &c);
        /* scores 1*2*3*5 = 30, each 2*4 + 2*4 + 5 = 21; scaling Q: 24 */
        assert_int_equal(c.flops, 30 * 21 + 24);
        tc_free(&t);
    }
}

static void test_registry_pattern_classes(void **state)
{
    assert_int_equal(fa_op_find("", "Softmax")->pattern, FA_PATTERN_REDUCTION);
    assert_int_equal(fa_op_find("", "LogSoftmax")->pattern, FA_PATTERN_REDUCTION);
    assert_int_equal(fa_op_find("", "LayerNormalization")->pattern, FA_PATTERN_REDUCTION);
    assert_int_equal(fa_op_find("", "RMSNormalization")->pattern, FA_PATTERN_REDUCTION);
    assert_int_equal(fa_op_find("ai.onnx", "GroupNormalization")->pattern, FA_PATTERN_REDUCTION);
    assert_int_equal(fa_op_find("", "Attention")->pattern, FA_PATTERN_REDUCTION); /* over the keys */
    assert_int_equal(fa_op_find("", "Attention")->reduce, FA_REDUCE_ATTENTION);
    assert_int_equal(fa_op_find("", "LSTM")->pattern, FA_PATTERN_OPAQUE);
    assert_int_equal(fa_op_find("", "GRU")->pattern, FA_PATTERN_OPAQUE);
    assert_int_equal(fa_op_find("", "RNN")->pattern, FA_PATTERN_OPAQUE);
    assert_int_equal(fa_op_find("", "SwiGLU")->pattern, FA_PATTERN_BROADCAST);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_softmax_rows_longer_than_1024_batch_3_match_formula),
        cmocka_unit_test(test_softmax_middle_axis_strided_lanes_match_formula),
        cmocka_unit_test(test_softmax_opset11_coerces_2d_opset13_uses_one_axis),
        cmocka_unit_test(test_softmax_large_values_stay_finite),
        cmocka_unit_test(test_softmax_float16_computed_in_float),
        cmocka_unit_test(test_softmax_axis_out_of_range_names_node),
        cmocka_unit_test(test_layernorm_axis1_scale_bias_mean_invstd_match_formula),
        cmocka_unit_test(test_layernorm_broadcast_scale_and_bias_over_normalized_dims),
        cmocka_unit_test(test_layernorm_scale_shape_mismatch_is_input_error_naming_node),
        cmocka_unit_test(test_rmsnorm_rows_of_1037_match_formula),
        cmocka_unit_test(test_groupnorm_opset21_scale_per_channel),
        cmocka_unit_test(test_groupnorm_opset18_scale_per_group),
        cmocka_unit_test(test_groupnorm_opset18_rejects_per_channel_scale),
        cmocka_unit_test(test_swiglu_alpha_with_broadcast_gate),
        cmocka_unit_test(test_attention_4d_gqa_causal_float_mask_match_formula),
        cmocka_unit_test(test_attention_3d_past_kv_bool_mask_shorter_than_total),
        cmocka_unit_test(test_attention_softcap_and_qk_matmul_output_modes),
        cmocka_unit_test(test_attention_nonpad_kv_seqlen_masks_per_batch),
        cmocka_unit_test(test_attention_heads_not_dividing_is_input_error),
        cmocka_unit_test(test_lstm_bidirectional_peephole_seqlens_match_equations),
        cmocka_unit_test(test_lstm_layout1_is_batch_major_transpose_of_layout0),
        cmocka_unit_test(test_lstm_custom_activations_clip_input_forget_match_equations),
        cmocka_unit_test(test_lstm_wrong_w_shape_is_input_error),
        cmocka_unit_test(test_gru_bidirectional_seqlens_both_reset_placements_match_equations),
        cmocka_unit_test(test_recurrent_batched_packed_paths_match_equations),
        cmocka_unit_test(test_rnn_reverse_relu_layout1_matches_equations),
        cmocka_unit_test(test_gru_rnn_wrong_shapes_and_activation_counts_are_input_errors),
        cmocka_unit_test(test_cost_recurrent_flops),
        cmocka_unit_test(test_gru_scratch_past_int64_is_an_error_before_any_read),
        cmocka_unit_test(test_cost_formulas_softmax_layernorm_attention),
        cmocka_unit_test(test_registry_pattern_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
