/* tests/unit/test_ops_elementwise — the elementwise and broadcast ops of the registry: each op's
 * shape inference (op->infer) and reference kernel (op->kernel) on small graphs, against values
 * computed here from the ONNX formulas; numpy broadcasting, opset-dependent forms (opset<7
 * legacy broadcast, Clip attributes vs inputs, Dropout forms, PRelu-6 channel slope), integer
 * semantics, dtypes, errors naming the node, and the cost formulas. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/ops-impl.h" /* fa_float_to_half / fa_half_to_float */

/* ---- a one-node graph harness ---- */

typedef struct tin {
    const char *name;  /* NULL: omitted optional input */
    fa_dtype dt;
    int rank;
    int64_t dims[FA_MAX_RANK];
    const void *data;
    bool is_const;     /* attach data to the tensor (an initializer) */
} tin;

typedef struct th {
    fa_ctx *ctx;
    fa_graph *g;
    fa_node *n;
    int n_in, n_out;
    tin in[8];
    fa_value out[2];
} th;

static int64_t numel(int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    return n;
}

static void th_node(th *t, const char *op, int opset, int n_in, const tin *in, int n_out)
{
    memset(t, 0, sizeof *t);
    t->ctx = fa_ctx_create();
    t->g = fa_graph_create("t");
    assert_int_equal(fa_graph_set_opset(t->ctx, t->g, "", opset), FA_OK);
    const char *names[8] = {0};
    for (int i = 0; i < n_in; i++) {
        t->in[i] = in[i];
        names[i] = in[i].name;
        if (!in[i].name) continue;
        int tid = fa_graph_tensor(t->g, in[i].name); /* may grow g->tensors: index after */
        assert_true(tid >= 0);
        fa_tensor *x = t->g->tensors[tid];
        fa_tensor_set_shape(x, in[i].dt, in[i].rank, in[i].dims);
        if (in[i].is_const) {
            size_t bytes = (size_t)numel(in[i].rank, in[i].dims) * fa_dtype_size(in[i].dt);
            assert_int_equal(fa_tensor_set_data(t->ctx, x, in[i].data, bytes), FA_OK);
        }
    }
    const char *outs[2] = {"out0", "out1"};
    t->n = fa_graph_add_node(t->ctx, t->g, "node_under_test", op, "", n_in, names, n_out, outs);
    assert_non_null(t->n);
    assert_non_null(t->n->op);
    t->n_in = n_in;
    t->n_out = n_out;
}

/* op->infer, then op->kernel on freshly allocated outputs. Returns the first failure. */
static fa_status th_exec(th *t, int threads)
{
    fa_status st = t->n->op->infer(t->ctx, t->g, t->n);
    if (st) return st;
    fa_value in[8];
    memset(in, 0, sizeof in);
    for (int i = 0; i < t->n_in; i++) {
        if (!t->in[i].name) continue;
        in[i].data = (void *)t->in[i].data;
        in[i].dtype = t->in[i].dt;
        in[i].rank = t->in[i].rank;
        memcpy(in[i].dims, t->in[i].dims, sizeof in[i].dims);
    }
    for (int o = 0; o < t->n_out; o++) {
        fa_tensor *y = fa_graph_out(t->g, t->n, o);
        assert_non_null(y);
        assert_true(y->rank >= 0);
        t->out[o].dtype = y->dtype;
        t->out[o].rank = y->rank;
        memcpy(t->out[o].dims, y->dims, sizeof y->dims);
        size_t bytes = (size_t)fa_tensor_numel(y) * fa_dtype_size(y->dtype);
        t->out[o].data = calloc(1, bytes ? bytes : 1);
    }
    return t->n->op->kernel(t->ctx, t->n, in, t->n_in, t->out, t->n_out, threads);
}

static void th_free(th *t)
{
    for (int o = 0; o < 2; o++) free(t->out[o].data);
    fa_graph_free(t->g);
    fa_ctx_free(t->ctx);
}

static void expect_ok(th *t, fa_status st)
{
    if (st) fprintf(stderr, "unexpected error: %s\n", fa_ctx_errmsg(t->ctx));
    assert_int_equal(st, FA_OK);
}

static void expect_err_naming_node(th *t, fa_status st, fa_status want)
{
    assert_int_equal(st, want);
    assert_non_null(strstr(fa_ctx_errmsg(t->ctx), "node_under_test"));
}

static void expect_close(double got, double want, const char *what, int i)
{
    if (isnan(want)) {
        if (!isnan(got)) fail_msg("%s[%d]: got %.9g, expected NaN", what, i, got);
        return;
    }
    if (!(fabs(got - want) <= 1e-5 + 1e-4 * fabs(want)))
        fail_msg("%s[%d]: got %.9g, expected %.9g", what, i, got, want);
}

static void expect_dims(const fa_value *v, int rank, const int64_t *dims)
{
    assert_int_equal(v->rank, rank);
    for (int i = 0; i < rank; i++) assert_int_equal(v->dims[i], dims[i]);
}

#define F32(name_, rank_, data_, ...) \
    ((tin){name_, FA_DTYPE_FLOAT, rank_, {__VA_ARGS__}, data_, false})

/* ---- unary ops ---- */

static const float k_x[] = {-3.5f, -1.0f, -0.25f, 0.0f, 0.3f, 1.0f, 2.5f, 7.0f};
#define NX 8

typedef struct ucase {
    const char *op;
    const char *attr_f;  /* float attribute name or NULL */
    float attr_v;
    double (*ref)(double x, double a);
} ucase;

static double r_relu(double x, double a) { return x > 0 ? x : 0; }
static double r_leaky(double x, double a) { return x >= 0 ? x : a * x; }
static double r_sigmoid(double x, double a) { return 1 / (1 + exp(-x)); }
static double r_tanh(double x, double a) { return tanh(x); }
static double r_hsig(double x, double a) { double v = 0.2 * x + 0.5; return v < 0 ? 0 : v > 1 ? 1 : v; }
static double r_hswish(double x, double a) { double v = x / 6 + 0.5; return x * (v < 0 ? 0 : v > 1 ? 1 : v); }
static double r_elu(double x, double a) { return x >= 0 ? x : a * (exp(x) - 1); }
static double r_selu(double x, double a)
{
    return x > 0 ? 1.0507009873554805 * x : 1.0507009873554805 * 1.6732632423543772 * (exp(x) - 1);
}
static double r_softplus(double x, double a) { return log(exp(x) + 1); }
static double r_softsign(double x, double a) { return x / (1 + fabs(x)); }
static double r_mish(double x, double a) { return x * tanh(log(1 + exp(x))); }
static double r_erf(double x, double a) { return erf(x); }
static double r_gelu(double x, double a) { return x * 0.5 * (1 + erf(x / sqrt(2.0))); }
static double r_swish(double x, double a) { return x / (1 + exp(-a * x)); }
static double r_exp(double x, double a) { return exp(x); }
static double r_neg(double x, double a) { return -x; }
static double r_abs(double x, double a) { return fabs(x); }
static double r_recip(double x, double a) { return 1 / x; }
static double r_floor(double x, double a) { return floor(x); }
static double r_ceil(double x, double a) { return ceil(x); }
static double r_sign(double x, double a) { return (x > 0) - (x < 0); }
static double r_sin(double x, double a) { return sin(x); }
static double r_cos(double x, double a) { return cos(x); }

static const ucase k_ucases[] = {
    {"Relu", NULL, 0, r_relu},          {"LeakyRelu", "alpha", 0.1f, r_leaky},
    {"Sigmoid", NULL, 0, r_sigmoid},    {"Tanh", NULL, 0, r_tanh},
    {"HardSigmoid", NULL, 0, r_hsig},   {"HardSwish", NULL, 0, r_hswish},
    {"Elu", "alpha", 2.0f, r_elu},      {"Selu", NULL, 0, r_selu},
    {"Softplus", NULL, 0, r_softplus},  {"Softsign", NULL, 0, r_softsign},
    {"Mish", NULL, 0, r_mish},          {"Erf", NULL, 0, r_erf},
    {"Gelu", NULL, 0, r_gelu},          {"Swish", "alpha", 0.5f, r_swish},
    {"Exp", NULL, 0, r_exp},            {"Neg", NULL, 0, r_neg},
    {"Abs", NULL, 0, r_abs},            {"Reciprocal", NULL, 0, r_recip},
    {"Floor", NULL, 0, r_floor},        {"Ceil", NULL, 0, r_ceil},
    {"Sign", NULL, 0, r_sign},          {"Sin", NULL, 0, r_sin},
    {"Cos", NULL, 0, r_cos},
};

/* Every unary op on float32 (fast path), double and float16 (generic path) matches its
 * ONNX formula evaluated here in double. */
static void test_unary_ops_match_onnx_formulas_in_three_dtypes(void **state)
{
    (void)state;
    double xd[NX];
    uint16_t xh[NX];
    for (int i = 0; i < NX; i++) {
        xd[i] = k_x[i];
        xh[i] = fa_float_to_half(k_x[i]);
    }
    for (size_t c = 0; c < sizeof k_ucases / sizeof k_ucases[0]; c++) {
        const ucase *u = &k_ucases[c];
        for (int variant = 0; variant < 3; variant++) {
            fa_dtype dt = variant == 0 ? FA_DTYPE_FLOAT : variant == 1 ? FA_DTYPE_DOUBLE : FA_DTYPE_FLOAT16;
            const void *data = variant == 0 ? (const void *)k_x : variant == 1 ? (const void *)xd : (const void *)xh;
            tin in = {"x", dt, 1, {NX}, data, false};
            th t;
            th_node(&t, u->op, 22, 1, &in, 1);
            if (u->attr_f) fa_node_add_attr_float(t.g, t.n, u->attr_f, u->attr_v);
            expect_ok(&t, th_exec(&t, 1));
            assert_int_equal(t.out[0].dtype, dt);
            for (int i = 0; i < NX; i++) {
                double x = variant == 2 ? fa_half_to_float(xh[i]) : k_x[i];
                if (strcmp(u->op, "Reciprocal") == 0 && x == 0) continue;
                double want = u->ref(x, u->attr_v), got = fa_load_as_double(t.out[0].data, dt, i);
                if (variant == 2) {
                    if (!(fabs(got - want) <= 2e-3 + 2e-3 * fabs(want)))
                        fail_msg("%s float16 [%d]: got %.6g, expected %.6g", u->op, i, got, want);
                } else {
                    expect_close(got, want, u->op, i);
                }
            }
            th_free(&t);
        }
    }
}

static void test_sqrt_log_round_half_to_even(void **state)
{
    (void)state;
    const float x[] = {0.5f, 1.5f, 2.5f, -2.5f, 4.0f, 9.0f};
    const double round_want[] = {0, 2, 2, -2, 4, 9};
    const char *ops[] = {"Sqrt", "Log", "Round"};
    for (int k = 0; k < 3; k++) {
        tin in = F32("x", 1, x, 6);
        th t;
        th_node(&t, ops[k], 13, 1, &in, 1);
        expect_ok(&t, th_exec(&t, 1));
        const float *y = t.out[0].data;
        for (int i = 0; i < 6; i++) {
            double want = k == 0 ? sqrt(x[i]) : k == 1 ? log(x[i]) : round_want[i];
            expect_close(y[i], want, ops[k], i);
        }
        th_free(&t);
    }
}

static void test_gelu_tanh_approximation_and_bad_mode(void **state)
{
    (void)state;
    tin in = F32("x", 1, k_x, NX);
    th t;
    th_node(&t, "Gelu", 20, 1, &in, 1);
    fa_node_add_attr_string(t.g, t.n, "approximate", "tanh");
    expect_ok(&t, th_exec(&t, 1));
    const float *y = t.out[0].data;
    for (int i = 0; i < NX; i++) {
        double x = k_x[i];
        double want = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        expect_close(y[i], want, "gelu_tanh", i);
    }
    th_free(&t);
    th_node(&t, "Gelu", 20, 1, &in, 1);
    fa_node_add_attr_string(t.g, t.n, "approximate", "fast");
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_UNSUPPORTED);
    th_free(&t);
}

static void test_integer_relu_neg_abs_sign_are_exact(void **state)
{
    (void)state;
    const int64_t x[] = {-(INT64_C(1) << 60) - 1, -5, 0, 7, (INT64_C(1) << 60) + 1};
    const char *ops[] = {"Relu", "Neg", "Abs", "Sign"};
    for (int k = 0; k < 4; k++) {
        tin in = {"x", FA_DTYPE_INT64, 1, {5}, x, false};
        th t;
        th_node(&t, ops[k], 14, 1, &in, 1);
        expect_ok(&t, th_exec(&t, 1));
        const int64_t *y = t.out[0].data;
        for (int i = 0; i < 5; i++) {
            int64_t want = k == 0 ? (x[i] > 0 ? x[i] : 0) : k == 1 ? -x[i] : k == 2 ? (x[i] < 0 ? -x[i] : x[i])
                                                                    : (x[i] > 0) - (x[i] < 0);
            assert_true(y[i] == want);
        }
        th_free(&t);
    }
    /* Sigmoid has no integer form in ONNX. */
    tin in = {"x", FA_DTYPE_INT64, 1, {5}, x, false};
    th t;
    th_node(&t, "Sigmoid", 13, 1, &in, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_UNSUPPORTED);
    th_free(&t);
}

static void test_unary_on_bool_is_input_error(void **state)
{
    (void)state;
    const uint8_t b[] = {1, 0};
    tin in = {"x", FA_DTYPE_BOOL, 1, {2}, b, false};
    th t;
    th_node(&t, "Exp", 13, 1, &in, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);
}

/* NaN propagates through the clamping activations as through numpy (the ONNX reference). */
static void test_nan_propagates_through_relu_clip_hardsigmoid(void **state)
{
    (void)state;
    float x[37]; /* long enough for the vectorized loop body, not only its remainder */
    for (int i = 0; i < 37; i++) x[i] = (float)(i % 5) - 2.0f;
    x[0] = x[20] = x[36] = NAN;
    const char *ops[] = {"Relu", "Clip", "HardSigmoid", "HardSwish", "LeakyRelu"};
    for (int k = 0; k < 5; k++) {
        tin in = F32("x", 1, x, 37);
        th t;
        th_node(&t, ops[k], 6, 1, &in, 1);
        if (k == 1) {
            fa_node_add_attr_float(t.g, t.n, "min", 0.0f);
            fa_node_add_attr_float(t.g, t.n, "max", 1.0f);
        }
        expect_ok(&t, th_exec(&t, 1));
        for (int i = 0; i < 37; i++)
            if (isnan(((float *)t.out[0].data)[i]) != isnan(x[i])) fail_msg("%s: NaN mismatch at %d", ops[k], i);
        th_free(&t);
    }
}

/* ---- Clip ---- */

static void test_clip_opset6_uses_min_max_attributes(void **state)
{
    (void)state;
    tin in = F32("x", 1, k_x, NX);
    th t;
    th_node(&t, "Clip", 6, 1, &in, 1);
    fa_node_add_attr_float(t.g, t.n, "min", -0.5f);
    fa_node_add_attr_float(t.g, t.n, "max", 0.5f);
    expect_ok(&t, th_exec(&t, 1));
    const float *y = t.out[0].data;
    for (int i = 0; i < NX; i++) expect_close(y[i], fmin(fmax(k_x[i], -0.5), 0.5), "clip6", i);
    th_free(&t);
}

static void test_clip_opset13_inputs_may_be_omitted(void **state)
{
    (void)state;
    const float lo = -1.0f, hi = 2.0f;
    /* min given, max omitted ("") */
    tin in[3] = {F32("x", 1, k_x, NX), {"min", FA_DTYPE_FLOAT, 0, {0}, &lo, true}, {NULL}};
    th t;
    th_node(&t, "Clip", 13, 3, in, 1);
    expect_ok(&t, th_exec(&t, 1));
    const float *y = t.out[0].data;
    for (int i = 0; i < NX; i++) expect_close(y[i], fmax(k_x[i], -1.0), "clip13_min", i);
    th_free(&t);
    /* max only */
    tin in2[3] = {F32("x", 1, k_x, NX), {NULL}, {"max", FA_DTYPE_FLOAT, 0, {0}, &hi, true}};
    th_node(&t, "Clip", 13, 3, in2, 1);
    expect_ok(&t, th_exec(&t, 1));
    y = t.out[0].data;
    for (int i = 0; i < NX; i++) expect_close(y[i], fmin(k_x[i], 2.0), "clip13_max", i);
    th_free(&t);
    /* neither: identity; at opset 11 the attribute form is ignored */
    th_node(&t, "Clip", 11, 1, in, 1);
    fa_node_add_attr_float(t.g, t.n, "min", 0.0f);
    expect_ok(&t, th_exec(&t, 1));
    assert_memory_equal(t.out[0].data, k_x, sizeof k_x);
    th_free(&t);
}

static void test_clip_min_above_max_gives_max_and_int8_bounds(void **state)
{
    (void)state;
    const float lo = 2.0f, hi = 1.0f;
    tin in[3] = {F32("x", 1, k_x, NX), {"min", FA_DTYPE_FLOAT, 0, {0}, &lo, true},
                 {"max", FA_DTYPE_FLOAT, 0, {0}, &hi, true}};
    th t;
    th_node(&t, "Clip", 13, 3, in, 1);
    expect_ok(&t, th_exec(&t, 1));
    for (int i = 0; i < NX; i++) expect_close(((float *)t.out[0].data)[i], 1.0, "clip_inverted", i);
    th_free(&t);

    const int8_t x8[] = {-128, -10, 0, 10, 127};
    const int8_t lo8 = -5, hi8 = 100;
    tin in8[3] = {{"x", FA_DTYPE_INT8, 1, {5}, x8, false}, {"min", FA_DTYPE_INT8, 0, {0}, &lo8, true},
                  {"max", FA_DTYPE_INT8, 0, {0}, &hi8, true}};
    th_node(&t, "Clip", 13, 3, in8, 1);
    expect_ok(&t, th_exec(&t, 1));
    const int8_t want[] = {-5, -5, 0, 10, 100};
    assert_memory_equal(t.out[0].data, want, 5);
    th_free(&t);

    const float two[] = {1, 2};
    tin bad[2] = {F32("x", 1, k_x, NX), {"min", FA_DTYPE_FLOAT, 1, {2}, two, true}};
    th_node(&t, "Clip", 13, 2, bad, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);
}

/* ---- binary broadcasting ---- */

static void test_add_sub_mul_div_broadcast_numpy_rules(void **state)
{
    (void)state;
    float a[24], b[3];
    for (int i = 0; i < 24; i++) a[i] = (float)i * 0.5f - 3.25f;
    for (int i = 0; i < 3; i++) b[i] = (float)i + 1.5f;
    const char *ops[] = {"Add", "Sub", "Mul", "Div"};
    for (int k = 0; k < 4; k++) {
        /* [2,3,4] op [3,1] → [2,3,4]; b indexed by the middle axis */
        tin in[2] = {F32("a", 3, a, 2, 3, 4), F32("b", 2, b, 3, 1)};
        th t;
        th_node(&t, ops[k], 14, 2, in, 1);
        expect_ok(&t, th_exec(&t, 1));
        expect_dims(&t.out[0], 3, (int64_t[]){2, 3, 4});
        const float *y = t.out[0].data;
        for (int i = 0; i < 24; i++) {
            double x = a[i], z = b[(i / 4) % 3];
            double want = k == 0 ? x + z : k == 1 ? x - z : k == 2 ? x * z : x / z;
            expect_close(y[i], want, ops[k], i);
        }
        th_free(&t);
        /* scalar (rank 0) on the left: b-scalar op a */
        tin in2[2] = {F32("s", 0, b, 0), F32("a", 3, a, 2, 3, 4)};
        th_node(&t, ops[k], 14, 2, in2, 1);
        expect_ok(&t, th_exec(&t, 1));
        y = t.out[0].data;
        for (int i = 0; i < 24; i++) {
            double x = b[0], z = a[i];
            double want = k == 0 ? x + z : k == 1 ? x - z : k == 2 ? x * z : x / z;
            expect_close(y[i], want, ops[k], i);
        }
        th_free(&t);
    }
}

static void test_broadcast_both_sides_expand(void **state)
{
    (void)state;
    /* [3,1] + [1,4] → [3,4] */
    const float a[] = {1, 2, 3}, b[] = {10, 20, 30, 40};
    tin in[2] = {F32("a", 2, a, 3, 1), F32("b", 2, b, 1, 4)};
    th t;
    th_node(&t, "Sub", 14, 2, in, 1);
    expect_ok(&t, th_exec(&t, 1));
    expect_dims(&t.out[0], 2, (int64_t[]){3, 4});
    for (int i = 0; i < 12; i++) expect_close(((float *)t.out[0].data)[i], a[i / 4] - b[i % 4], "sub", i);
    th_free(&t);
}

static void test_incompatible_shapes_are_input_error_naming_node(void **state)
{
    (void)state;
    const float a[6] = {0}, b[4] = {0};
    tin in[2] = {F32("a", 2, a, 2, 3), F32("b", 1, b, 4)};
    th t;
    th_node(&t, "Add", 14, 2, in, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);
    /* mixed element types */
    const int32_t bi[3] = {0};
    tin in2[2] = {F32("a", 2, a, 2, 3), {"b", FA_DTYPE_INT32, 1, {3}, bi, false}};
    th_node(&t, "Mul", 14, 2, in2, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);
}

/* Naive broadcast index: output multi-index → input flat index (dims of 1 pinned to 0). */
static int64_t naive_index(int rout, const int64_t *dout, int64_t flat, int rin, const int64_t *din)
{
    int64_t idx = 0, stride = 1;
    for (int d = rout - 1; d >= 0; d--) {
        int64_t i = flat % dout[d];
        flat /= dout[d];
        int k = d - (rout - rin);
        if (k >= 0) {
            idx += (din[k] == 1 ? 0 : i) * stride;
            stride *= din[k];
        }
    }
    return idx;
}

/* 300 random shape pairs (rank 0..4, dims 1..4, random dims set to 1 or dropped), each op and
 * dtype, against naive per-element indexing: checks the coalescing broadcast iterator. */
static void test_random_broadcast_shapes_match_naive_indexing(void **state)
{
    (void)state;
    fa_rng rng;
    fa_rng_seed(&rng, 42);
    const char *ops[] = {"Add", "Sub", "Mul", "Max", "Min", "Greater"};
    for (int trial = 0; trial < 300; trial++) {
        int r = (int)(fa_rng_u64(&rng) % 5);
        int64_t full[4];
        for (int d = 0; d < r; d++) full[d] = 1 + (int64_t)(fa_rng_u64(&rng) % 4);
        int ra = r, rb = r - (r ? (int)(fa_rng_u64(&rng) % (r + 1)) : 0);
        int64_t da[4], db[4];
        for (int d = 0; d < ra; d++) da[d] = fa_rng_u64(&rng) % 3 == 0 ? 1 : full[d];
        for (int d = 0; d < rb; d++) db[d] = fa_rng_u64(&rng) % 3 == 0 ? 1 : full[d + (r - rb)];
        int64_t na = numel(ra, da), nb = numel(rb, db);
        float fa_[256], fb[256];
        int32_t ia[256], ib[256];
        for (int64_t i = 0; i < na; i++) { ia[i] = (int32_t)(fa_rng_u64(&rng) % 19) - 9; fa_[i] = (float)ia[i] * 0.5f; }
        for (int64_t i = 0; i < nb; i++) { ib[i] = (int32_t)(fa_rng_u64(&rng) % 19) - 9; fb[i] = (float)ib[i] * 0.5f; }
        const char *op = ops[trial % 6];
        for (int v = 0; v < 2; v++) {
            fa_dtype dt = v ? FA_DTYPE_INT32 : FA_DTYPE_FLOAT;
            tin in[2] = {{"a", dt, ra, {0}, v ? (const void *)ia : (const void *)fa_, false},
                         {"b", dt, rb, {0}, v ? (const void *)ib : (const void *)fb, false}};
            memcpy(in[0].dims, da, sizeof da);
            memcpy(in[1].dims, db, sizeof db);
            th t;
            th_node(&t, op, 14, 2, in, 1);
            expect_ok(&t, th_exec(&t, 1));
            int64_t no = fa_value_numel(&t.out[0]);
            for (int64_t i = 0; i < no; i++) {
                int64_t ka = naive_index(t.out[0].rank, t.out[0].dims, i, ra, da);
                int64_t kb = naive_index(t.out[0].rank, t.out[0].dims, i, rb, db);
                double x = v ? ia[ka] : fa_[ka], y = v ? ib[kb] : fb[kb];
                double want = trial % 6 == 0 ? x + y : trial % 6 == 1 ? x - y : trial % 6 == 2 ? x * y
                            : trial % 6 == 3 ? fmax(x, y) : trial % 6 == 4 ? fmin(x, y) : (double)(x > y);
                double got = fa_load_as_double(t.out[0].data, t.out[0].dtype, i);
                if (got != want)
                    fail_msg("trial %d %s %s: out[%lld] = %g, expected %g", trial, op, fa_dtype_name(dt),
                             (long long)i, got, want);
            }
            th_free(&t);
        }
    }
}

/* Opset 6: broadcast=1 with axis lines B up with A at axis; without axis, at the end; size-1
 * dims of B broadcast (pytorch-operator add_size1 tests); broadcast=0 needs equal shapes. */
static void test_opset6_legacy_broadcast_axis(void **state)
{
    (void)state;
    float a[2 * 3 * 4 * 5], b[12];
    for (int i = 0; i < 120; i++) a[i] = (float)i;
    for (int i = 0; i < 12; i++) b[i] = (float)(1000 * (i + 1));
    tin in[2] = {F32("a", 4, a, 2, 3, 4, 5), F32("b", 2, b, 3, 4)};
    th t;
    th_node(&t, "Add", 6, 2, in, 1);
    fa_node_add_attr_int(t.g, t.n, "broadcast", 1);
    fa_node_add_attr_int(t.g, t.n, "axis", 1);
    expect_ok(&t, th_exec(&t, 1));
    expect_dims(&t.out[0], 4, (int64_t[]){2, 3, 4, 5});
    for (int i = 0; i < 120; i++) {
        int c = (i / 20) % 3, h = (i / 5) % 4;
        expect_close(((float *)t.out[0].data)[i], a[i] + b[c * 4 + h], "add6_axis1", i);
    }
    th_free(&t);

    /* no axis: suffix alignment, B [4,5] */
    float b2[20];
    for (int i = 0; i < 20; i++) b2[i] = (float)(i + 1);
    tin in2[2] = {F32("a", 4, a, 2, 3, 4, 5), F32("b", 2, b2, 4, 5)};
    th_node(&t, "Mul", 6, 2, in2, 1);
    fa_node_add_attr_int(t.g, t.n, "broadcast", 1);
    expect_ok(&t, th_exec(&t, 1));
    for (int i = 0; i < 120; i++) expect_close(((float *)t.out[0].data)[i], a[i] * b2[i % 20], "mul6", i);
    th_free(&t);

    /* axis=0 with a size-1 dim: [2,3] + [2,1] (double, as in pytorch-operator) */
    const double ad[] = {1, 2, 3, 4, 5, 6}, bd[] = {10, 20};
    tin in3[2] = {{"a", FA_DTYPE_DOUBLE, 2, {2, 3}, ad, false}, {"b", FA_DTYPE_DOUBLE, 2, {2, 1}, bd, false}};
    th_node(&t, "Add", 6, 2, in3, 1);
    fa_node_add_attr_int(t.g, t.n, "broadcast", 1);
    fa_node_add_attr_int(t.g, t.n, "axis", 0);
    expect_ok(&t, th_exec(&t, 1));
    for (int i = 0; i < 6; i++) expect_close(((double *)t.out[0].data)[i], ad[i] + bd[i / 3], "add6_size1", i);
    th_free(&t);

    /* the same [2,3] + [3] at axis 0 does not fit: error naming the node */
    tin in4[2] = {{"a", FA_DTYPE_DOUBLE, 2, {2, 3}, ad, false}, {"b", FA_DTYPE_DOUBLE, 1, {3}, bd, false}};
    th_node(&t, "Add", 6, 2, in4, 1);
    fa_node_add_attr_int(t.g, t.n, "broadcast", 1);
    fa_node_add_attr_int(t.g, t.n, "axis", 0);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);

    /* without broadcast=1, opset 6 needs equal shapes; opset 7 broadcasts the same inputs */
    tin in5[2] = {F32("a", 4, a, 2, 3, 4, 5), F32("b", 2, b2, 4, 5)};
    th_node(&t, "Sub", 6, 2, in5, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);
    th_node(&t, "Sub", 7, 2, in5, 1);
    expect_ok(&t, th_exec(&t, 1));
    for (int i = 0; i < 120; i++) expect_close(((float *)t.out[0].data)[i], a[i] - b2[i % 20], "sub7", i);
    th_free(&t);
}

static void test_integer_div_truncates_and_mod_follows_fmod_attr(void **state)
{
    (void)state;
    const int32_t a[] = {-7, 7, -7, 7, 9, 5}, b[] = {2, -2, -2, 2, 3, 0};
    tin in[2] = {{"a", FA_DTYPE_INT32, 1, {6}, a, false}, {"b", FA_DTYPE_INT32, 1, {6}, b, false}};
    th t;
    th_node(&t, "Div", 14, 2, in, 1);
    expect_ok(&t, th_exec(&t, 1));
    const int32_t div_want[] = {-3, -3, 3, 3, 3, 0}; /* x/0 → 0 (undefined in ONNX) */
    assert_memory_equal(t.out[0].data, div_want, sizeof div_want);
    th_free(&t);

    th_node(&t, "Mod", 13, 2, in, 1); /* fmod=0: result takes the divisor's sign */
    expect_ok(&t, th_exec(&t, 1));
    const int32_t mod_want[] = {1, -1, -1, 1, 0, 0};
    assert_memory_equal(t.out[0].data, mod_want, sizeof mod_want);
    th_free(&t);

    th_node(&t, "Mod", 13, 2, in, 1); /* fmod=1: the dividend's sign (C fmod) */
    fa_node_add_attr_int(t.g, t.n, "fmod", 1);
    expect_ok(&t, th_exec(&t, 1));
    const int32_t fmod_want[] = {-1, 1, -1, 1, 0, 0};
    assert_memory_equal(t.out[0].data, fmod_want, sizeof fmod_want);
    th_free(&t);

    const float fa_[] = {-7.5f, 7.5f}, fb[] = {2.0f, -2.0f};
    tin fin[2] = {F32("a", 1, fa_, 2), F32("b", 1, fb, 2)};
    th_node(&t, "Mod", 13, 2, fin, 1);
    fa_node_add_attr_int(t.g, t.n, "fmod", 1);
    expect_ok(&t, th_exec(&t, 1));
    expect_close(((float *)t.out[0].data)[0], -1.5, "fmod", 0);
    expect_close(((float *)t.out[0].data)[1], 1.5, "fmod", 1);
    th_free(&t);

    /* int64 add is exact past 2^53 */
    const int64_t la[] = {(INT64_C(1) << 60) + 1}, lb[] = {2};
    tin lin[2] = {{"a", FA_DTYPE_INT64, 1, {1}, la, false}, {"b", FA_DTYPE_INT64, 0, {0}, lb, false}};
    th_node(&t, "Add", 14, 2, lin, 1);
    expect_ok(&t, th_exec(&t, 1));
    assert_true(((int64_t *)t.out[0].data)[0] == (INT64_C(1) << 60) + 3);
    th_free(&t);
}

static void test_pow_float_base_with_int_exponent(void **state)
{
    (void)state;
    const float x[] = {1.5f, -2.0f, 3.0f};
    const int64_t e[] = {2, 3, 0};
    tin in[2] = {F32("x", 1, x, 3), {"e", FA_DTYPE_INT64, 1, {3}, e, false}};
    th t;
    th_node(&t, "Pow", 15, 2, in, 1);
    expect_ok(&t, th_exec(&t, 1));
    assert_int_equal(t.out[0].dtype, FA_DTYPE_FLOAT);
    const double want[] = {2.25, -8, 1};
    for (int i = 0; i < 3; i++) expect_close(((float *)t.out[0].data)[i], want[i], "pow", i);
    th_free(&t);
}

static void test_comparisons_and_logic_output_bool(void **state)
{
    (void)state;
    const float a[] = {1, 2, 3, NAN}, b[] = {2};
    const char *ops[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
    const uint8_t want[5][4] = {{0, 1, 0, 0}, {1, 0, 0, 0}, {0, 0, 1, 0}, {1, 1, 0, 0}, {0, 1, 1, 0}};
    for (int k = 0; k < 5; k++) {
        tin in[2] = {F32("a", 1, a, 4), F32("b", 1, b, 1)};
        th t;
        th_node(&t, ops[k], 16, 2, in, 1);
        expect_ok(&t, th_exec(&t, 1));
        assert_int_equal(t.out[0].dtype, FA_DTYPE_BOOL);
        assert_memory_equal(t.out[0].data, want[k], 4);
        th_free(&t);
    }
    /* Equal on int64 distinguishes values 1 apart above 2^53 */
    const int64_t la[] = {(INT64_C(1) << 60) + 1, 5}, lb[] = {INT64_C(1) << 60, 5};
    tin lin[2] = {{"a", FA_DTYPE_INT64, 1, {2}, la, false}, {"b", FA_DTYPE_INT64, 1, {2}, lb, false}};
    th t;
    th_node(&t, "Equal", 13, 2, lin, 1);
    expect_ok(&t, th_exec(&t, 1));
    const uint8_t eqw[] = {0, 1};
    assert_memory_equal(t.out[0].data, eqw, 2);
    th_free(&t);

    const uint8_t p[] = {0, 0, 1, 1}, q[] = {0, 1, 0, 1};
    const char *lops[] = {"And", "Or", "Xor"};
    const uint8_t lw[3][4] = {{0, 0, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 0}};
    for (int k = 0; k < 3; k++) {
        tin in[2] = {{"p", FA_DTYPE_BOOL, 1, {4}, p, false}, {"q", FA_DTYPE_BOOL, 1, {4}, q, false}};
        th_node(&t, lops[k], 7, 2, in, 1);
        expect_ok(&t, th_exec(&t, 1));
        assert_memory_equal(t.out[0].data, lw[k], 4);
        th_free(&t);
    }
    tin nin = {"p", FA_DTYPE_BOOL, 1, {4}, p, false};
    th_node(&t, "Not", 1, 1, &nin, 1);
    expect_ok(&t, th_exec(&t, 1));
    const uint8_t nw[] = {1, 1, 0, 0};
    assert_memory_equal(t.out[0].data, nw, 4);
    th_free(&t);
    /* And on floats is a type error */
    tin fin[2] = {F32("a", 1, a, 4), F32("b", 1, b, 1)};
    th_node(&t, "And", 7, 2, fin, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);
}

static void test_isnan_marks_only_nan(void **state)
{
    (void)state;
    const float x[] = {1, NAN, INFINITY, -0.0f};
    tin in = F32("x", 1, x, 4);
    th t;
    th_node(&t, "IsNaN", 13, 1, &in, 1);
    expect_ok(&t, th_exec(&t, 1));
    const uint8_t want[] = {0, 1, 0, 0};
    assert_int_equal(t.out[0].dtype, FA_DTYPE_BOOL);
    assert_memory_equal(t.out[0].data, want, 4);
    th_free(&t);
}

/* IsInf-10: +inf and -inf each counted only where its detect_* attribute asks, NaN never; the
 * float32 loop and the double and float16 path through a double load agree. */
static void test_isinf_detects_the_signs_asked(void **state)
{
    (void)state;
    const float x[] = {1, NAN, INFINITY, -INFINITY, -0.0f, 3.4e38f};
    const double xd[] = {1, NAN, INFINITY, -INFINITY, -0.0, 1e300};
    uint16_t xh[6];
    for (int i = 0; i < 6; i++) xh[i] = fa_float_to_half(x[i]);
    const int flags[3][2] = {{1, 1}, {1, 0}, {0, 1}};
    const uint8_t want[3][6] = {{0, 0, 1, 1, 0, 0}, {0, 0, 1, 0, 0, 0}, {0, 0, 0, 1, 0, 0}};
    for (int dt = 0; dt < 3; dt++)
        for (int f = 0; f < 3; f++) {
            tin in = {"x", dt == 0 ? FA_DTYPE_FLOAT : dt == 1 ? FA_DTYPE_DOUBLE : FA_DTYPE_FLOAT16, 1, {6},
                      dt == 0 ? (const void *)x : dt == 1 ? (const void *)xd : (const void *)xh, false};
            th t;
            th_node(&t, "IsInf", 10, 1, &in, 1);
            if (f != 0) {
                fa_node_add_attr_int(t.g, t.n, "detect_positive", flags[f][0]);
                fa_node_add_attr_int(t.g, t.n, "detect_negative", flags[f][1]);
            }
            expect_ok(&t, th_exec(&t, 1));
            assert_int_equal(t.out[0].dtype, FA_DTYPE_BOOL);
            uint8_t w[6];
            memcpy(w, want[f], 6);
            if (dt == 2) w[5] = f != 2; /* 3.4e38 is +inf in float16 */
            assert_memory_equal(t.out[0].data, w, 6);
            th_free(&t);
        }
    tin bad = {"x", FA_DTYPE_INT32, 1, {1}, x, false};
    th t;
    th_node(&t, "IsInf", 10, 1, &bad, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);
}

/* A value the mask ops meet: ordinary, large, signed zero, NaN and the infinities. */
static float mask_value(fa_rng *rng)
{
    static const float special[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 3e9f, -3e9f, 2147483648.0f, -2147483648.0f,
                                    9.3e18f, -9.3e18f, 0.5f, -0.5f};
    uint64_t r = fa_rng_u64(rng);
    if (r % 4 == 0) return special[(r >> 8) % (sizeof special / sizeof special[0])];
    return (float)((int64_t)((r >> 8) % 41) - 20) * 0.5f; /* many ties between the operands */
}

/* The comparisons, IsNaN, Not and the casts on tensors past one parallel chunk (EW_PAR_MIN,
 * 32,768 elements; a length that is no multiple of the 16,384-element chunk), on 1 and 2 threads,
 * in every broadcast form their rows write out (both contiguous, one operand a scalar, a row
 * against a column), against the formulas computed here element by element: the written-out loops
 * of ops_elementwise.c must give what the generic double path gave (NaN compares false, float to
 * integer truncates and saturates with NaN 0, to bool is v != 0, int64 to int32 wraps). */
static void test_mask_ops_fast_paths_match_the_formulas(void **state)
{
    (void)state;
    enum { R = 211, C = 333, N = R * C }; /* 70,263 elements */
    fa_rng rng;
    fa_rng_seed(&rng, 7);
    float *fx = malloc(sizeof(float) * N), *fy = malloc(sizeof(float) * N);
    int64_t *lx = malloc(sizeof(int64_t) * N), *ly = malloc(sizeof(int64_t) * N);
    int32_t *ix = malloc(sizeof(int32_t) * N), *iy = malloc(sizeof(int32_t) * N);
    uint8_t *bx = malloc(N);
    double *dx = malloc(sizeof(double) * N);
    assert_true(fx && fy && lx && ly && ix && iy && bx && dx);
    for (int i = 0; i < N; i++) {
        fx[i] = mask_value(&rng);
        fy[i] = mask_value(&rng);
        uint64_t r = fa_rng_u64(&rng);
        lx[i] = r % 3 == 0 ? (int64_t)r : (int64_t)(r % 9) - 4 + (r % 5 == 0 ? (INT64_C(1) << 60) : 0);
        ly[i] = (int64_t)(fa_rng_u64(&rng) % 9) - 4 + (r % 7 == 0 ? (INT64_C(1) << 60) : 0);
        ix[i] = (int32_t)lx[i];
        iy[i] = (int32_t)ly[i];
        bx[i] = (uint8_t)(r % 3 == 0 ? 0 : r % 3 == 1 ? 1 : 7); /* any non-zero byte is true */
        dx[i] = (double)fx[i] * 1.000000001;
    }
    const char *cmp[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
    /* forms: {a dims, b dims} as (rows, cols); 0 rows: rank 1 */
    const int64_t forms[4][2][2] = {{{R, C}, {R, C}}, {{R, C}, {1, 1}}, {{1, 1}, {R, C}}, {{R, 1}, {1, C}}};
    for (int threads = 1; threads <= 2; threads++)
        for (int k = 0; k < 5; k++)
            for (int fm = 0; fm < 4; fm++)
                for (int v = 0; v < 3; v++) {
                    fa_dtype dt = v == 0 ? FA_DTYPE_FLOAT : v == 1 ? FA_DTYPE_INT64 : FA_DTYPE_INT32;
                    const void *a = v == 0 ? (const void *)fx : v == 1 ? (const void *)lx : (const void *)ix;
                    const void *b = v == 0 ? (const void *)fy : v == 1 ? (const void *)ly : (const void *)iy;
                    tin in[2] = {{"a", dt, 2, {forms[fm][0][0], forms[fm][0][1]}, a, false},
                                 {"b", dt, 2, {forms[fm][1][0], forms[fm][1][1]}, b, false}};
                    th t;
                    th_node(&t, cmp[k], 16, 2, in, 1);
                    expect_ok(&t, th_exec(&t, threads));
                    assert_int_equal(fa_value_numel(&t.out[0]), N);
                    const uint8_t *o = t.out[0].data;
                    for (int i = 0; i < N; i++) {
                        int r = i / C, c = i % C;
                        int64_t ka = forms[fm][0][0] == 1 ? (forms[fm][0][1] == 1 ? 0 : c) : forms[fm][0][1] == 1 ? r : i;
                        int64_t kb = forms[fm][1][0] == 1 ? (forms[fm][1][1] == 1 ? 0 : c) : forms[fm][1][1] == 1 ? r : i;
                        bool lt, eq;
                        if (v == 0) lt = fx[ka] < fy[kb], eq = fx[ka] == fy[kb];
                        else if (v == 1) lt = lx[ka] < ly[kb], eq = lx[ka] == ly[kb];
                        else lt = ix[ka] < iy[kb], eq = ix[ka] == iy[kb];
                        bool un = v == 0 && (isnan(fx[ka]) || isnan(fy[kb])); /* unordered: every comparison false */
                        bool want = k == 0 ? eq : k == 1 ? lt : k == 2 ? !lt && !eq && !un : k == 3 ? lt || eq : !lt && !un;
                        if (o[i] != want)
                            fail_msg("%s %s form %d, %d threads: out[%d] = %d, expected %d", cmp[k], fa_dtype_name(dt), fm,
                                     threads, i, o[i], want);
                    }
                    th_free(&t);
                }
    for (int threads = 1; threads <= 2; threads++) {
        tin fin = {"x", FA_DTYPE_FLOAT, 1, {N}, fx, false}, bin = {"x", FA_DTYPE_BOOL, 1, {N}, bx, false};
        th t;
        th_node(&t, "IsNaN", 13, 1, &fin, 1);
        expect_ok(&t, th_exec(&t, threads));
        for (int i = 0; i < N; i++) assert_int_equal(((uint8_t *)t.out[0].data)[i], isnan(fx[i]) != 0);
        th_free(&t);
        th_node(&t, "IsInf", 10, 1, &fin, 1);
        expect_ok(&t, th_exec(&t, threads));
        for (int i = 0; i < N; i++) assert_int_equal(((uint8_t *)t.out[0].data)[i], isinf(fx[i]) != 0);
        th_free(&t);
        th_node(&t, "Not", 1, 1, &bin, 1);
        expect_ok(&t, th_exec(&t, threads));
        for (int i = 0; i < N; i++) assert_int_equal(((uint8_t *)t.out[0].data)[i], bx[i] == 0);
        th_free(&t);
    }
    /* casts: each pair the fast path writes out, against the formula per element */
    const struct { fa_dtype from, to; const void *x; } casts[] = {
        {FA_DTYPE_FLOAT, FA_DTYPE_INT64, fx}, {FA_DTYPE_FLOAT, FA_DTYPE_INT32, fx}, {FA_DTYPE_INT64, FA_DTYPE_FLOAT, lx},
        {FA_DTYPE_INT32, FA_DTYPE_FLOAT, ix}, {FA_DTYPE_BOOL, FA_DTYPE_FLOAT, bx},  {FA_DTYPE_FLOAT, FA_DTYPE_BOOL, fx},
        {FA_DTYPE_INT64, FA_DTYPE_BOOL, lx},  {FA_DTYPE_INT32, FA_DTYPE_BOOL, ix},  {FA_DTYPE_BOOL, FA_DTYPE_INT64, bx},
        {FA_DTYPE_BOOL, FA_DTYPE_INT32, bx},  {FA_DTYPE_INT64, FA_DTYPE_INT32, lx}, {FA_DTYPE_INT32, FA_DTYPE_INT64, ix},
        {FA_DTYPE_FLOAT, FA_DTYPE_DOUBLE, fx}, {FA_DTYPE_DOUBLE, FA_DTYPE_FLOAT, dx},
    };
    for (int threads = 1; threads <= 2; threads++)
        for (size_t k = 0; k < sizeof casts / sizeof casts[0]; k++) {
            tin in = {"x", casts[k].from, 1, {N}, casts[k].x, false};
            th t;
            th_node(&t, "Cast", 13, 1, &in, 1);
            fa_node_add_attr_int(t.g, t.n, "to", casts[k].to);
            expect_ok(&t, th_exec(&t, threads));
            assert_int_equal(t.out[0].dtype, casts[k].to);
            for (int i = 0; i < N; i++) {
                /* the source element, exactly, as a double or an int64 */
                double xv = casts[k].from == FA_DTYPE_FLOAT ? fx[i] : casts[k].from == FA_DTYPE_DOUBLE ? dx[i]
                            : casts[k].from == FA_DTYPE_BOOL ? (bx[i] != 0) : casts[k].from == FA_DTYPE_INT32 ? ix[i] : 0;
                int64_t xi = casts[k].from == FA_DTYPE_INT64 ? lx[i] : casts[k].from == FA_DTYPE_INT32 ? ix[i]
                             : casts[k].from == FA_DTYPE_BOOL ? (bx[i] != 0) : 0;
                bool from_int = casts[k].from != FA_DTYPE_FLOAT && casts[k].from != FA_DTYPE_DOUBLE;
                bool ok;
                const void *o = t.out[0].data;
                switch (casts[k].to) {
                case FA_DTYPE_INT64: {
                    int64_t w = from_int ? xi
                                : isnan(xv) ? 0 : xv <= -9223372036854775808.0 ? INT64_MIN
                                : xv >= 9223372036854774784.0 ? INT64_C(9223372036854774784) : (int64_t)xv;
                    ok = ((const int64_t *)o)[i] == w;
                    break;
                }
                case FA_DTYPE_INT32: {
                    int32_t w = from_int ? (int32_t)(uint32_t)(uint64_t)xi
                                : isnan(xv) ? 0 : xv <= -2147483648.0 ? INT32_MIN : xv >= 2147483647.0 ? INT32_MAX : (int32_t)xv;
                    ok = ((const int32_t *)o)[i] == w;
                    break;
                }
                case FA_DTYPE_BOOL: ok = ((const uint8_t *)o)[i] == (from_int ? xi != 0 : xv != 0); break;
                case FA_DTYPE_DOUBLE: ok = ((const double *)o)[i] == xv || (isnan(xv) && isnan(((const double *)o)[i])); break;
                default: { /* float: an int64 rounds through double, as the generic path */
                    float w = from_int ? (float)(double)xi : (float)xv;
                    float g = ((const float *)o)[i];
                    ok = g == w || (isnan(w) && isnan(g));
                    break;
                }
                }
                if (!ok)
                    fail_msg("Cast %s -> %s, %d threads: element %d wrong", fa_dtype_name(casts[k].from),
                             fa_dtype_name(casts[k].to), threads, i);
            }
            th_free(&t);
        }
    free(fx), free(fy), free(lx), free(ly), free(ix), free(iy), free(bx), free(dx);
}

/* ---- variadic ---- */

static void test_variadic_sum_mean_max_min_broadcast(void **state)
{
    (void)state;
    const float a[] = {1, -2, 3, -4, 5, -6}, b[] = {0.5f, 10, -10}, c[] = {2};
    const char *ops[] = {"Sum", "Mean", "Max", "Min"};
    for (int k = 0; k < 4; k++) {
        tin in[3] = {F32("c", 1, c, 1), F32("a", 2, a, 2, 3), F32("b", 1, b, 3)};
        th t;
        th_node(&t, ops[k], 13, 3, in, 1);
        expect_ok(&t, th_exec(&t, 1));
        expect_dims(&t.out[0], 2, (int64_t[]){2, 3});
        for (int i = 0; i < 6; i++) {
            double x = a[i], y = b[i % 3], z = c[0];
            double want = k == 0 ? x + y + z : k == 1 ? (x + y + z) / 3 : k == 2 ? fmax(x, fmax(y, z)) : fmin(x, fmin(y, z));
            expect_close(((float *)t.out[0].data)[i], want, ops[k], i);
        }
        th_free(&t);
    }
    /* one input: a copy; Max propagates NaN like numpy.maximum */
    const float n1[] = {1, NAN}, n2[] = {NAN, 1};
    tin in[2] = {F32("a", 1, n1, 2), F32("b", 1, n2, 2)};
    th t;
    th_node(&t, "Max", 13, 2, in, 1);
    expect_ok(&t, th_exec(&t, 1));
    assert_true(isnan(((float *)t.out[0].data)[0]) && isnan(((float *)t.out[0].data)[1]));
    th_free(&t);
    th_node(&t, "Sum", 13, 1, in, 1);
    expect_ok(&t, th_exec(&t, 1));
    assert_true(((float *)t.out[0].data)[0] == 1 && isnan(((float *)t.out[0].data)[1]));
    th_free(&t);
    /* int32 Max */
    const int32_t i1[] = {3, -9}, i2[] = {-1};
    tin iin[2] = {{"a", FA_DTYPE_INT32, 1, {2}, i1, false}, {"b", FA_DTYPE_INT32, 1, {1}, i2, false}};
    th_node(&t, "Max", 13, 2, iin, 1);
    expect_ok(&t, th_exec(&t, 1));
    const int32_t mw[] = {3, -1};
    assert_memory_equal(t.out[0].data, mw, sizeof mw);
    th_free(&t);
}

/* ---- Where ---- */

static void test_where_broadcasts_condition_x_and_y(void **state)
{
    (void)state;
    const uint8_t c[] = {1, 0};
    const float x[] = {1, 2, 3}, y[] = {-1};
    tin in[3] = {{"c", FA_DTYPE_BOOL, 2, {2, 1}, c, false}, F32("x", 2, x, 1, 3), F32("y", 0, y, 0)};
    th t;
    th_node(&t, "Where", 16, 3, in, 1);
    expect_ok(&t, th_exec(&t, 1));
    expect_dims(&t.out[0], 2, (int64_t[]){2, 3});
    const float want[] = {1, 2, 3, -1, -1, -1};
    assert_memory_equal(t.out[0].data, want, sizeof want);
    th_free(&t);
    /* int64 payloads (8-byte copy path) */
    const int64_t xl[] = {INT64_MAX, 7}, yl[] = {INT64_MIN, 8};
    const uint8_t c2[] = {1, 0};
    tin in2[3] = {{"c", FA_DTYPE_BOOL, 1, {2}, c2, false}, {"x", FA_DTYPE_INT64, 1, {2}, xl, false},
                  {"y", FA_DTYPE_INT64, 1, {2}, yl, false}};
    th_node(&t, "Where", 16, 3, in2, 1);
    expect_ok(&t, th_exec(&t, 1));
    const int64_t wl[] = {INT64_MAX, 8};
    assert_memory_equal(t.out[0].data, wl, sizeof wl);
    th_free(&t);
    /* non-bool condition */
    tin bad[3] = {F32("c", 1, x, 3), F32("x", 1, x, 3), F32("y", 1, x, 3)};
    th_node(&t, "Where", 16, 3, bad, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);
}

/* ---- PRelu ---- */

static void test_prelu_opset16_slope_broadcasts_unidirectionally(void **state)
{
    (void)state;
    float x[2 * 3 * 4];
    for (int i = 0; i < 24; i++) x[i] = (float)(i - 12);
    const float slope[] = {0.1f, 0.2f, 0.3f, 0.4f}; /* [4] broadcasts along the last axis */
    tin in[2] = {F32("x", 3, x, 2, 3, 4), F32("s", 1, slope, 4)};
    th t;
    th_node(&t, "PRelu", 16, 2, in, 1);
    expect_ok(&t, th_exec(&t, 1));
    for (int i = 0; i < 24; i++) {
        double want = x[i] < 0 ? x[i] * slope[i % 4] : x[i];
        expect_close(((float *)t.out[0].data)[i], want, "prelu16", i);
    }
    th_free(&t);
    /* a slope that would grow X is refused */
    float big[2 * 2 * 3 * 4] = {0};
    tin in2[2] = {F32("x", 3, x, 2, 3, 4), F32("s", 4, big, 2, 2, 3, 4)};
    th_node(&t, "PRelu", 16, 2, in2, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);
}

/* PRelu-6 (pytorch-converted PReLU_*_multiparam): a [C] slope applies per channel (axis 1). */
static void test_prelu_opset6_slope_is_per_channel(void **state)
{
    (void)state;
    float x[2 * 3 * 4];
    for (int i = 0; i < 24; i++) x[i] = (float)(i % 5) - 2.5f;
    const float slope[] = {0.1f, 0.2f, 0.3f};
    tin in[2] = {F32("x", 3, x, 2, 3, 4), F32("s", 1, slope, 3)};
    th t;
    th_node(&t, "PRelu", 6, 2, in, 1);
    expect_ok(&t, th_exec(&t, 1));
    for (int i = 0; i < 24; i++) {
        double want = x[i] < 0 ? x[i] * slope[(i / 4) % 3] : x[i];
        expect_close(((float *)t.out[0].data)[i], want, "prelu6", i);
    }
    th_free(&t);
    /* one-element slope shared */
    tin in2[2] = {F32("x", 3, x, 2, 3, 4), F32("s", 1, slope, 1)};
    th_node(&t, "PRelu", 6, 2, in2, 1);
    expect_ok(&t, th_exec(&t, 1));
    for (int i = 0; i < 24; i++)
        expect_close(((float *)t.out[0].data)[i], x[i] < 0 ? x[i] * slope[0] : x[i], "prelu6_1", i);
    th_free(&t);
}

/* ---- Cast / CastLike ---- */

static void test_cast_truncates_saturates_and_converts_half(void **state)
{
    (void)state;
    const float x[] = {-1.7f, 2.9f, 0.0f, 65504.0f, NAN, 3e9f};
    tin in = F32("x", 1, x, 6);
    th t;
    th_node(&t, "Cast", 13, 1, &in, 1);
    fa_node_add_attr_int(t.g, t.n, "to", FA_DTYPE_INT32);
    expect_ok(&t, th_exec(&t, 1));
    assert_int_equal(t.out[0].dtype, FA_DTYPE_INT32);
    const int32_t iw[] = {-1, 2, 0, 65504, 0, INT32_MAX};
    assert_memory_equal(t.out[0].data, iw, sizeof iw);
    th_free(&t);

    th_node(&t, "Cast", 13, 1, &in, 1);
    fa_node_add_attr_int(t.g, t.n, "to", FA_DTYPE_BOOL);
    expect_ok(&t, th_exec(&t, 1));
    const uint8_t bw[] = {1, 1, 0, 1, 1, 1};
    assert_memory_equal(t.out[0].data, bw, sizeof bw);
    th_free(&t);

    th_node(&t, "Cast", 19, 1, &in, 1);
    fa_node_add_attr_int(t.g, t.n, "to", FA_DTYPE_FLOAT16);
    fa_node_add_attr_int(t.g, t.n, "saturate", 1);
    expect_ok(&t, th_exec(&t, 1));
    const uint16_t *h = t.out[0].data;
    assert_int_equal(h[0], 0xBECD); /* -1.7 → -1.7001953125 */
    assert_int_equal(h[3], 0x7BFF); /* 65504 = max half */
    assert_true(isinf(fa_half_to_float(h[5])));
    th_free(&t);

    /* int64 → int32 keeps the low 32 bits; int → float exact for small values */
    const int64_t l[] = {(INT64_C(1) << 32) + 5, -3};
    tin lin = {"x", FA_DTYPE_INT64, 1, {2}, l, false};
    th_node(&t, "Cast", 13, 1, &lin, 1);
    fa_node_add_attr_int(t.g, t.n, "to", FA_DTYPE_INT32);
    expect_ok(&t, th_exec(&t, 1));
    const int32_t lw[] = {5, -3};
    assert_memory_equal(t.out[0].data, lw, sizeof lw);
    th_free(&t);

    /* CastLike takes the type of input 1 */
    const double like[] = {0};
    tin cin[2] = {{"x", FA_DTYPE_INT64, 1, {2}, l, false}, {"like", FA_DTYPE_DOUBLE, 1, {1}, like, false}};
    th_node(&t, "CastLike", 15, 2, cin, 1);
    expect_ok(&t, th_exec(&t, 1));
    assert_int_equal(t.out[0].dtype, FA_DTYPE_DOUBLE);
    assert_true(((double *)t.out[0].data)[1] == -3.0);
    th_free(&t);

    /* string is refused */
    th_node(&t, "Cast", 13, 1, &in, 1);
    fa_node_add_attr_int(t.g, t.n, "to", FA_DTYPE_STRING);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_UNSUPPORTED);
    th_free(&t);
}

/* ---- Dropout ---- */

static void test_dropout_inference_is_identity_with_true_mask(void **state)
{
    (void)state;
    tin in = F32("x", 1, k_x, NX);
    th t;
    th_node(&t, "Dropout", 13, 1, &in, 2);
    expect_ok(&t, th_exec(&t, 1));
    assert_memory_equal(t.out[0].data, k_x, sizeof k_x);
    assert_int_equal(t.out[1].dtype, FA_DTYPE_BOOL);
    for (int i = 0; i < NX; i++) assert_int_equal(((uint8_t *)t.out[1].data)[i], 1);
    th_free(&t);

    /* opset 7..9: the mask has the data type; ratio is an attribute */
    th_node(&t, "Dropout", 7, 1, &in, 2);
    fa_node_add_attr_float(t.g, t.n, "ratio", 0.4f);
    expect_ok(&t, th_exec(&t, 1));
    assert_int_equal(t.out[1].dtype, FA_DTYPE_FLOAT);
    assert_true(((float *)t.out[1].data)[3] == 1.0f);
    th_free(&t);

    /* opset 12+: training_mode=true with ratio>0 is refused at inference time */
    const float ratio = 0.5f, zero = 0.0f;
    const uint8_t yes = 1;
    tin tin3[3] = {F32("x", 1, k_x, NX), {"r", FA_DTYPE_FLOAT, 0, {0}, &ratio, true},
                   {"tm", FA_DTYPE_BOOL, 0, {0}, &yes, true}};
    th_node(&t, "Dropout", 13, 3, tin3, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_UNSUPPORTED);
    th_free(&t);
    /* training_mode as a runtime input: the kernel refuses it */
    tin tin4[3] = {F32("x", 1, k_x, NX), {"r", FA_DTYPE_FLOAT, 0, {0}, &ratio, false},
                   {"tm", FA_DTYPE_BOOL, 0, {0}, &yes, false}};
    th_node(&t, "Dropout", 13, 3, tin4, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_UNSUPPORTED);
    th_free(&t);
    /* ratio 0 in training mode drops nothing: allowed */
    tin tin5[3] = {F32("x", 1, k_x, NX), {"r", FA_DTYPE_FLOAT, 0, {0}, &zero, true},
                   {"tm", FA_DTYPE_BOOL, 0, {0}, &yes, true}};
    th_node(&t, "Dropout", 13, 3, tin5, 1);
    expect_ok(&t, th_exec(&t, 1));
    assert_memory_equal(t.out[0].data, k_x, sizeof k_x);
    th_free(&t);
}

/* ---- parallel path and costs ---- */

static void test_large_broadcast_add_parallel_matches_serial_formula(void **state)
{
    (void)state;
    enum { R = 300, C = 1001 };
    float *a = malloc(sizeof(float) * R * C), b[C];
    for (int i = 0; i < R * C; i++) a[i] = (float)(i % 97) * 0.25f;
    for (int j = 0; j < C; j++) b[j] = (float)j * 0.5f;
    tin in[2] = {F32("a", 2, a, R, C), F32("b", 1, b, C)};
    for (int threads = 1; threads <= 2; threads++) {
        th t;
        th_node(&t, "Add", 14, 2, in, 1);
        expect_ok(&t, th_exec(&t, threads));
        const float *y = t.out[0].data;
        for (int i = 0; i < R * C; i++)
            if (y[i] != a[i] + b[i % C]) fail_msg("threads %d: y[%d] = %g, expected %g", threads, i, y[i], a[i] + b[i % C]);
        th_free(&t);
    }
    /* unary chunked path on a length not divisible by the chunk size */
    tin u = F32("a", 1, a, R * C);
    th t;
    th_node(&t, "Neg", 13, 1, &u, 1);
    expect_ok(&t, th_exec(&t, 2));
    for (int i = 0; i < R * C; i++) assert_true(((float *)t.out[0].data)[i] == -a[i]);
    th_free(&t);
    free(a);
}

/* A zero-size dim broadcasts to an empty output; NULL data for an empty input is accepted. */
static void test_empty_tensors_give_empty_outputs(void **state)
{
    (void)state;
    const float b[] = {1, 2, 3};
    tin in[2] = {F32("a", 2, NULL, 0, 3), F32("b", 1, b, 3)};
    th t;
    th_node(&t, "Add", 14, 2, in, 1);
    expect_ok(&t, th_exec(&t, 2));
    expect_dims(&t.out[0], 2, (int64_t[]){0, 3});
    th_free(&t);
    tin u = F32("a", 2, NULL, 0, 3);
    th_node(&t, "Sigmoid", 13, 1, &u, 1);
    expect_ok(&t, th_exec(&t, 2));
    assert_int_equal(t.out[0].dims[0], 0);
    th_free(&t);
    th_node(&t, "Dropout", 13, 1, &u, 2);
    expect_ok(&t, th_exec(&t, 1));
    th_free(&t);
    /* [1,3] vs [0,1] → [0,3]; [2,3] vs [0,3] does not broadcast */
    tin in2[2] = {F32("a", 2, NULL, 0, 1), F32("b", 2, b, 1, 3)};
    th_node(&t, "Mul", 14, 2, in2, 1);
    expect_ok(&t, th_exec(&t, 1));
    expect_dims(&t.out[0], 2, (int64_t[]){0, 3});
    th_free(&t);
    float six[6] = {0};
    tin in3[2] = {F32("a", 2, six, 2, 3), F32("b", 2, NULL, 0, 3)};
    th_node(&t, "Mul", 14, 2, in3, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);
}

static void test_cost_formulas_count_flops_and_bytes(void **state)
{
    (void)state;
    const float a[6] = {0}, b[3] = {0};
    tin in[2] = {F32("a", 2, a, 2, 3), F32("b", 1, b, 3)};
    th t;
    th_node(&t, "Add", 14, 2, in, 1);
    expect_ok(&t, th_exec(&t, 1));
    fa_op_cost c;
    fa_node_cost(t.g, t.n, &c);
    assert_int_equal(c.flops, 6);
    assert_int_equal(c.bytes_read, (6 + 3) * 4);
    assert_int_equal(c.bytes_written, 6 * 4);
    th_free(&t);

    tin u = F32("a", 2, a, 2, 3);
    th_node(&t, "Sigmoid", 13, 1, &u, 1);
    expect_ok(&t, th_exec(&t, 1));
    fa_node_cost(t.g, t.n, &c);
    assert_int_equal(c.flops, 3 * 6);
    assert_int_equal(c.bytes_read, 24);
    assert_int_equal(c.bytes_written, 24);
    th_free(&t);

    tin v[3] = {F32("a", 2, a, 2, 3), F32("b", 1, b, 3), F32("c", 1, b, 3)};
    th_node(&t, "Mean", 13, 3, v, 1);
    expect_ok(&t, th_exec(&t, 1));
    fa_node_cost(t.g, t.n, &c);
    assert_int_equal(c.flops, 3 * 6); /* two adds and a scale per element */
    th_free(&t);

    const uint8_t cond[6] = {0};
    tin w[3] = {{"c", FA_DTYPE_BOOL, 2, {2, 3}, cond, false}, F32("x", 2, a, 2, 3), F32("y", 1, b, 3)};
    th_node(&t, "Where", 16, 3, w, 1);
    expect_ok(&t, th_exec(&t, 1));
    fa_node_cost(t.g, t.n, &c);
    assert_int_equal(c.flops, 0);
    assert_int_equal(c.bytes_read, 6 + 24 + 12);
    assert_int_equal(c.bytes_written, 24);
    th_free(&t);
}

static void test_registry_pattern_classes(void **state)
{
    (void)state;
    const char *elem[] = {"Relu", "Gelu", "Clip", "Cast", "CastLike", "Not", "IsNaN", "Erf"};
    /* Dropout is opaque (as in TVM): an inference identity, never a fusion member */
    assert_int_equal(fa_op_find("", "Dropout")->pattern, FA_PATTERN_OPAQUE);
    const char *bcast[] = {"Add", "PRelu", "Where", "Sum", "Equal", "Mod", "Pow"};
    for (size_t i = 0; i < sizeof elem / sizeof elem[0]; i++) {
        const fa_op *op = fa_op_find("", elem[i]);
        assert_non_null(op);
        assert_int_equal(op->pattern, FA_PATTERN_ELEMWISE);
        assert_non_null(op->doc);
    }
    for (size_t i = 0; i < sizeof bcast / sizeof bcast[0]; i++) {
        const fa_op *op = fa_op_find("ai.onnx", bcast[i]);
        assert_non_null(op);
        assert_int_equal(op->pattern, FA_PATTERN_BROADCAST);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_ops_match_onnx_formulas_in_three_dtypes),
        cmocka_unit_test(test_sqrt_log_round_half_to_even),
        cmocka_unit_test(test_gelu_tanh_approximation_and_bad_mode),
        cmocka_unit_test(test_integer_relu_neg_abs_sign_are_exact),
        cmocka_unit_test(test_unary_on_bool_is_input_error),
        cmocka_unit_test(test_nan_propagates_through_relu_clip_hardsigmoid),
        cmocka_unit_test(test_clip_opset6_uses_min_max_attributes),
        cmocka_unit_test(test_clip_opset13_inputs_may_be_omitted),
        cmocka_unit_test(test_clip_min_above_max_gives_max_and_int8_bounds),
        cmocka_unit_test(test_add_sub_mul_div_broadcast_numpy_rules),
        cmocka_unit_test(test_broadcast_both_sides_expand),
        cmocka_unit_test(test_incompatible_shapes_are_input_error_naming_node),
        cmocka_unit_test(test_random_broadcast_shapes_match_naive_indexing),
        cmocka_unit_test(test_opset6_legacy_broadcast_axis),
        cmocka_unit_test(test_integer_div_truncates_and_mod_follows_fmod_attr),
        cmocka_unit_test(test_pow_float_base_with_int_exponent),
        cmocka_unit_test(test_comparisons_and_logic_output_bool),
        cmocka_unit_test(test_isnan_marks_only_nan),
        cmocka_unit_test(test_isinf_detects_the_signs_asked),
        cmocka_unit_test(test_mask_ops_fast_paths_match_the_formulas),
        cmocka_unit_test(test_variadic_sum_mean_max_min_broadcast),
        cmocka_unit_test(test_where_broadcasts_condition_x_and_y),
        cmocka_unit_test(test_prelu_opset16_slope_broadcasts_unidirectionally),
        cmocka_unit_test(test_prelu_opset6_slope_is_per_channel),
        cmocka_unit_test(test_cast_truncates_saturates_and_converts_half),
        cmocka_unit_test(test_dropout_inference_is_identity_with_true_mask),
        cmocka_unit_test(test_large_broadcast_add_parallel_matches_serial_formula),
        cmocka_unit_test(test_empty_tensors_give_empty_outputs),
        cmocka_unit_test(test_cost_formulas_count_flops_and_bytes),
        cmocka_unit_test(test_registry_pattern_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
