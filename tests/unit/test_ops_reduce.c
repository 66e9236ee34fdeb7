/* tests/unit/test_ops_reduce — the reduction ops of the registry: shape inference (op->infer)
 * and reference kernels (op->kernel) against loops written here, for every reduction, axis
 * pattern (inner, middle, outer, non-adjacent, all), keepdims, axes as attribute (old opsets)
 * vs input (ReduceSum >= 13, others >= 18), noop_with_empty_axes, ArgMax/ArgMin tie rules,
 * integer and empty inputs, errors naming the node, and the cost formula. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

typedef struct tin {
    const char *name; /* NULL: omitted optional input */
    fa_dtype dt;
    int rank;
    int64_t dims[FA_MAX_RANK];
    const void *data;
    bool is_const;
} tin;

typedef struct th {
    fa_ctx *ctx;
    fa_graph *g;
    fa_node *n;
    int n_in;
    tin in[4];
    fa_value out;
} th;

static int64_t numel(int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    return n;
}

static void th_node(th *t, const char *op, int opset, int n_in, const tin *in)
{
    memset(t, 0, sizeof *t);
    t->ctx = fa_ctx_create();
    t->g = fa_graph_create("t");
    assert_int_equal(fa_graph_set_opset(t->ctx, t->g, "", opset), FA_OK);
    const char *names[4] = {0};
    for (int i = 0; i < n_in; i++) {
        t->in[i] = in[i];
        names[i] = in[i].name;
        if (!in[i].name) continue;
        int tid = fa_graph_tensor(t->g, in[i].name);
        assert_true(tid >= 0);
        fa_tensor *x = t->g->tensors[tid];
        fa_tensor_set_shape(x, in[i].dt, in[i].rank, in[i].dims);
        if (in[i].is_const) {
            size_t bytes = (size_t)numel(in[i].rank, in[i].dims) * fa_dtype_size(in[i].dt);
            assert_int_equal(fa_tensor_set_data(t->ctx, x, in[i].data, bytes), FA_OK);
        }
    }
    const char *outs[1] = {"out0"};
    t->n = fa_graph_add_node(t->ctx, t->g, "node_under_test", op, "", n_in, names, 1, outs);
    assert_non_null(t->n);
    assert_non_null(t->n->op);
    t->n_in = n_in;
}

static fa_status th_exec(th *t, int threads)
{
    fa_status st = t->n->op->infer(t->ctx, t->g, t->n);
    if (st) return st;
    fa_value in[4];
    memset(in, 0, sizeof in);
    for (int i = 0; i < t->n_in; i++) {
        if (!t->in[i].name) continue;
        in[i].data = (void *)t->in[i].data;
        in[i].dtype = t->in[i].dt;
        in[i].rank = t->in[i].rank;
        memcpy(in[i].dims, t->in[i].dims, sizeof in[i].dims);
    }
    fa_tensor *y = fa_graph_out(t->g, t->n, 0);
    t->out.dtype = y->dtype;
    t->out.rank = y->rank;
    memcpy(t->out.dims, y->dims, sizeof y->dims);
    size_t bytes = (size_t)fa_tensor_numel(y) * fa_dtype_size(y->dtype);
    t->out.data = calloc(1, bytes ? bytes : 1);
    return t->n->op->kernel(t->ctx, t->n, in, t->n_in, &t->out, 1, threads);
}

static void th_free(th *t)
{
    free(t->out.data);
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
    if (isinf(want) && got == want) return;
    if (!(fabs(got - want) <= 1e-5 + 1e-4 * fabs(want)))
        fail_msg("%s[%d]: got %.9g, expected %.9g", what, i, got, want);
}

/* ---- an independent reference: reduce a [2,3,4] tensor over a mask of axes ---- */

enum { D0 = 2, D1 = 3, D2 = 4 };

static double ref_reduce(const char *op, const float *x, const bool *mask, int i0, int i1, int i2)
{
    double sum = 0, prod = 1, mx = -INFINITY, mn = INFINITY, l1 = 0, ss = 0, se = 0;
    int cnt = 0;
    for (int a = 0; a < D0; a++)
        for (int b = 0; b < D1; b++)
            for (int c = 0; c < D2; c++) {
                if ((!mask[0] && a != i0) || (!mask[1] && b != i1) || (!mask[2] && c != i2)) continue;
                double v = x[(a * D1 + b) * D2 + c];
                sum += v; prod *= v; l1 += fabs(v); ss += v * v; se += exp(v); cnt++;
                if (v > mx) mx = v;
                if (v < mn) mn = v;
            }
    if (!strcmp(op, "ReduceSum")) return sum;
    if (!strcmp(op, "ReduceMean")) return sum / cnt;
    if (!strcmp(op, "ReduceMax")) return mx;
    if (!strcmp(op, "ReduceMin")) return mn;
    if (!strcmp(op, "ReduceProd")) return prod;
    if (!strcmp(op, "ReduceL1")) return l1;
    if (!strcmp(op, "ReduceL2")) return sqrt(ss);
    if (!strcmp(op, "ReduceSumSquare")) return ss;
    return log(se); /* ReduceLogSumExp */
}

static const char *k_ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                              "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"};

/* Every reduction, every axis subset of a [2,3,4] input (inner, middle, outer, non-adjacent,
 * all), keepdims 0 and 1, axes given as attribute at opset 13 (ReduceSum: 11). */
static void test_all_reductions_all_axis_subsets_match_loops(void **state)
{
    (void)state;
    float x[D0 * D1 * D2];
    for (int i = 0; i < D0 * D1 * D2; i++) x[i] = (float)((i * 7) % 11) * 0.25f - 1.1f;
    const int64_t dims[3] = {D0, D1, D2};
    for (size_t k = 0; k < sizeof k_ops / sizeof k_ops[0]; k++)
        for (int m = 1; m < 8; m++)
            for (int keep = 0; keep < 2; keep++) {
                bool mask[3] = {m & 1, (m >> 1) & 1, (m >> 2) & 1};
                int64_t axes[3];
                int na = 0;
                for (int a = 0; a < 3; a++)
                    if (mask[a]) axes[na++] = a - (a == 2 ? 3 : 0); /* axis 2 given as -1 */
                tin in = {"x", FA_DTYPE_FLOAT, 3, {D0, D1, D2}, x, false};
                th t;
                th_node(&t, k_ops[k], strcmp(k_ops[k], "ReduceSum") == 0 ? 11 : 13, 1, &in);
                fa_node_add_attr_ints(t.g, t.n, "axes", axes, na);
                fa_node_add_attr_int(t.g, t.n, "keepdims", keep);
                expect_ok(&t, th_exec(&t, 1));
                /* shape */
                int r = 0;
                for (int a = 0; a < 3; a++) {
                    if (!mask[a]) assert_int_equal(t.out.dims[r++], dims[a]);
                    else if (keep) assert_int_equal(t.out.dims[r++], 1);
                }
                assert_int_equal(t.out.rank, r);
                /* values, walking output positions in row-major order */
                int o = 0;
                for (int a = 0; a < (mask[0] ? 1 : D0); a++)
                    for (int b = 0; b < (mask[1] ? 1 : D1); b++)
                        for (int c = 0; c < (mask[2] ? 1 : D2); c++, o++) {
                            char what[64];
                            snprintf(what, sizeof what, "%s mask %d keep %d", k_ops[k], m, keep);
                            expect_close(((float *)t.out.data)[o], ref_reduce(k_ops[k], x, mask, a, b, c), what, o);
                        }
                th_free(&t);
            }
}

/* Axes as input: ReduceSum from opset 13, the others from 18; results equal the attribute form. */
static void test_axes_input_form_matches_attribute_form(void **state)
{
    (void)state;
    float x[D0 * D1 * D2];
    for (int i = 0; i < D0 * D1 * D2; i++) x[i] = (float)i * 0.1f;
    const int64_t axes[] = {0, 2};
    for (size_t k = 0; k < sizeof k_ops / sizeof k_ops[0]; k++) {
        int opset = strcmp(k_ops[k], "ReduceSum") == 0 ? 13 : 18;
        tin in[2] = {{"x", FA_DTYPE_FLOAT, 3, {D0, D1, D2}, x, false},
                     {"axes", FA_DTYPE_INT64, 1, {2}, axes, true}};
        th t;
        th_node(&t, k_ops[k], opset, 2, in);
        fa_node_add_attr_int(t.g, t.n, "keepdims", 0);
        expect_ok(&t, th_exec(&t, 1));
        assert_int_equal(t.out.rank, 1);
        assert_int_equal(t.out.dims[0], D1);
        bool mask[3] = {true, false, true};
        for (int b = 0; b < D1; b++)
            expect_close(((float *)t.out.data)[b], ref_reduce(k_ops[k], x, mask, 0, b, 0), k_ops[k], b);
        th_free(&t);
    }
}

static void test_empty_axes_reduce_all_unless_noop(void **state)
{
    (void)state;
    const float x[] = {1, 2, 3, 4, 5, 6};
    /* no axes at all: every axis, keepdims default 1 → [1,1] */
    tin in = {"x", FA_DTYPE_FLOAT, 2, {2, 3}, x, false};
    th t;
    th_node(&t, "ReduceMean", 18, 1, &in);
    expect_ok(&t, th_exec(&t, 1));
    assert_int_equal(t.out.rank, 2);
    assert_int_equal(t.out.dims[0], 1);
    assert_int_equal(t.out.dims[1], 1);
    expect_close(((float *)t.out.data)[0], 3.5, "mean_all", 0);
    th_free(&t);
    /* an empty axes input with noop_with_empty_axes=1: identity */
    const int64_t none[1] = {0};
    tin in2[2] = {{"x", FA_DTYPE_FLOAT, 2, {2, 3}, x, false}, {"axes", FA_DTYPE_INT64, 1, {0}, none, true}};
    th_node(&t, "ReduceSum", 13, 2, in2);
    fa_node_add_attr_int(t.g, t.n, "noop_with_empty_axes", 1);
    expect_ok(&t, th_exec(&t, 1));
    assert_int_equal(t.out.rank, 2);
    assert_memory_equal(t.out.data, x, sizeof x);
    th_free(&t);
    /* the same empty input without noop: everything, keepdims 0 → scalar */
    th_node(&t, "ReduceSum", 13, 2, in2);
    fa_node_add_attr_int(t.g, t.n, "keepdims", 0);
    expect_ok(&t, th_exec(&t, 1));
    assert_int_equal(t.out.rank, 0);
    expect_close(((float *)t.out.data)[0], 21, "sum_all", 0);
    th_free(&t);
}

static void test_bad_axes_are_input_errors_naming_node(void **state)
{
    (void)state;
    const float x[6] = {0};
    tin in = {"x", FA_DTYPE_FLOAT, 2, {2, 3}, x, false};
    th t;
    th_node(&t, "ReduceMax", 13, 1, &in);
    fa_node_add_attr_ints(t.g, t.n, "axes", (int64_t[]){2}, 1);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);
    th_node(&t, "ReduceMax", 13, 1, &in);
    fa_node_add_attr_ints(t.g, t.n, "axes", (int64_t[]){1, -1}, 2);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);
    th_node(&t, "ArgMax", 13, 1, &in);
    fa_node_add_attr_int(t.g, t.n, "axis", -3);
    expect_err_naming_node(&t, th_exec(&t, 1), FA_ERR_INPUT);
    th_free(&t);
    /* axes computed at run time cannot give a static shape */
    const int64_t ax[] = {0};
    tin in2[2] = {{"x", FA_DTYPE_FLOAT, 2, {2, 3}, x, false}, {"axes", FA_DTYPE_INT64, 1, {1}, ax, false}};
    th_node(&t, "ReduceMean", 18, 2, in2);
    assert_int_not_equal(th_exec(&t, 1), FA_OK);
    th_free(&t);
}

static void test_argmax_argmin_axis_keepdims_and_tie_rules(void **state)
{
    (void)state;
    /* [2,4] with ties: row 0 max 5 at 1 and 3, min 1 at 0 and 2 */
    const float x[] = {1, 5, 1, 5, 9, -2, 4, -2};
    tin in = {"x", FA_DTYPE_FLOAT, 2, {2, 4}, x, false};
    th t;
    th_node(&t, "ArgMax", 13, 1, &in);
    fa_node_add_attr_int(t.g, t.n, "axis", -1);
    expect_ok(&t, th_exec(&t, 1));
    assert_int_equal(t.out.dtype, FA_DTYPE_INT64);
    assert_int_equal(t.out.rank, 2);
    assert_int_equal(t.out.dims[1], 1);
    assert_int_equal(((int64_t *)t.out.data)[0], 1);
    assert_int_equal(((int64_t *)t.out.data)[1], 0);
    th_free(&t);

    th_node(&t, "ArgMax", 13, 1, &in);
    fa_node_add_attr_int(t.g, t.n, "axis", 1);
    fa_node_add_attr_int(t.g, t.n, "select_last_index", 1);
    expect_ok(&t, th_exec(&t, 1));
    assert_int_equal(((int64_t *)t.out.data)[0], 3);
    th_free(&t);

    th_node(&t, "ArgMin", 13, 1, &in);
    fa_node_add_attr_int(t.g, t.n, "axis", 1);
    fa_node_add_attr_int(t.g, t.n, "keepdims", 0);
    fa_node_add_attr_int(t.g, t.n, "select_last_index", 1);
    expect_ok(&t, th_exec(&t, 1));
    assert_int_equal(t.out.rank, 1);
    assert_int_equal(((int64_t *)t.out.data)[0], 2);
    assert_int_equal(((int64_t *)t.out.data)[1], 3);
    th_free(&t);

    /* NaN wins, as in numpy (the ONNX reference): first NaN, or the last one */
    const float xn[] = {1, NAN, 9, NAN};
    tin inn = {"x", FA_DTYPE_FLOAT, 1, {4}, xn, false};
    th_node(&t, "ArgMax", 13, 1, &inn);
    expect_ok(&t, th_exec(&t, 1));
    assert_int_equal(((int64_t *)t.out.data)[0], 1);
    th_free(&t);
    th_node(&t, "ArgMin", 13, 1, &inn);
    fa_node_add_attr_int(t.g, t.n, "select_last_index", 1);
    expect_ok(&t, th_exec(&t, 1));
    assert_int_equal(((int64_t *)t.out.data)[0], 3);
    th_free(&t);

    /* axis 0 (default) on int32 */
    const int32_t xi[] = {3, -1, 7, 2, 8, 7};
    tin ini = {"x", FA_DTYPE_INT32, 2, {2, 3}, xi, false};
    th_node(&t, "ArgMin", 11, 1, &ini);
    expect_ok(&t, th_exec(&t, 1));
    const int64_t want[] = {1, 0, 0};
    assert_memory_equal(t.out.data, want, sizeof want);
    th_free(&t);
}

static void test_integer_reductions_and_empty_domains(void **state)
{
    (void)state;
    const int64_t x[] = {2, 3, 4, -5, 6, 7};
    tin in = {"x", FA_DTYPE_INT64, 2, {2, 3}, x, false};
    th t;
    th_node(&t, "ReduceProd", 13, 1, &in);
    fa_node_add_attr_ints(t.g, t.n, "axes", (int64_t[]){1}, 1);
    fa_node_add_attr_int(t.g, t.n, "keepdims", 0);
    expect_ok(&t, th_exec(&t, 1));
    assert_int_equal(t.out.dtype, FA_DTYPE_INT64);
    assert_true(((int64_t *)t.out.data)[0] == 24 && ((int64_t *)t.out.data)[1] == -210);
    th_free(&t);

    const int32_t xi[] = {2, 3, 4, -5, 6, 7};
    tin ini = {"x", FA_DTYPE_INT32, 2, {2, 3}, xi, false};
    th_node(&t, "ReduceMax", 13, 1, &ini);
    fa_node_add_attr_ints(t.g, t.n, "axes", (int64_t[]){0}, 1);
    expect_ok(&t, th_exec(&t, 1));
    const int32_t mw[] = {2, 6, 7};
    assert_memory_equal(t.out.data, mw, sizeof mw);
    th_free(&t);

    /* reducing a zero-length axis: Sum 0, Prod 1, Max -inf (the ONNX reference values) */
    const float empty[1] = {0};
    const char *ops[] = {"ReduceSum", "ReduceProd", "ReduceMax"};
    const double want[] = {0, 1, -INFINITY};
    for (int k = 0; k < 3; k++) {
        tin e = {"x", FA_DTYPE_FLOAT, 2, {2, 0}, empty, false};
        th_node(&t, ops[k], 13, 1, &e);
        fa_node_add_attr_ints(t.g, t.n, "axes", (int64_t[]){1}, 1);
        expect_ok(&t, th_exec(&t, 1));
        assert_int_equal(t.out.dims[0], 2);
        assert_int_equal(t.out.dims[1], 1);
        for (int i = 0; i < 2; i++) expect_close(((float *)t.out.data)[i], want[k], ops[k], i);
        th_free(&t);
    }
}

static void test_float_and_double_sums_accumulate_in_double(void **state)
{
    (void)state;
    /* 1e8 + many small values: float accumulation would lose them */
    enum { N = 1001 };
    double xd[N];
    xd[0] = 1e8;
    for (int i = 1; i < N; i++) xd[i] = 0.25;
    tin in = {"x", FA_DTYPE_DOUBLE, 1, {N}, xd, false};
    th t;
    th_node(&t, "ReduceSum", 13, 1, &in);
    expect_ok(&t, th_exec(&t, 1));
    assert_true(((double *)t.out.data)[0] == 1e8 + 250);
    th_free(&t);

    float xf[N];
    for (int i = 0; i < N; i++) xf[i] = i == 0 ? 16777216.0f : 1.0f;
    tin inf_ = {"x", FA_DTYPE_FLOAT, 1, {N}, xf, false};
    th_node(&t, "ReduceSum", 13, 1, &inf_);
    expect_ok(&t, th_exec(&t, 1));
    assert_true(((float *)t.out.data)[0] == 16777216.0f + 1000.0f);
    th_free(&t);
}

static void test_large_reductions_parallel_match_serial(void **state)
{
    (void)state;
    enum { R = 97, C = 1031 };
    float *x = malloc(sizeof(float) * R * C);
    for (int i = 0; i < R * C; i++) x[i] = (float)((i * 13) % 101) * 0.01f - 0.5f;
    for (int combo = 0; combo < 4; combo++) {
        int axis = combo & 1;
        bool mean = combo >= 2; /* ReduceMean takes the vectorized sum paths */
        float *ref = NULL;
        for (int threads = 1; threads <= 2; threads++) {
            tin in = {"x", FA_DTYPE_FLOAT, 2, {R, C}, x, false};
            th t;
            th_node(&t, mean ? "ReduceMean" : "ReduceSumSquare", 13, 1, &in);
            fa_node_add_attr_ints(t.g, t.n, "axes", (int64_t[]){axis}, 1);
            expect_ok(&t, th_exec(&t, threads));
            int no = axis == 0 ? C : R;
            for (int o = 0; o < no; o++) {
                double s = 0;
                for (int r = 0; r < (axis == 0 ? R : C); r++) {
                    double v = axis == 0 ? x[r * C + o] : x[o * C + r];
                    s += mean ? v : v * v;
                }
                if (mean) s /= (axis == 0 ? R : C);
                expect_close(((float *)t.out.data)[o], s, mean ? "mean" : "sumsq", o);
            }
            if (!ref) {
                ref = malloc(sizeof(float) * (size_t)no);
                memcpy(ref, t.out.data, sizeof(float) * (size_t)no);
            } else {
                assert_memory_equal(ref, t.out.data, sizeof(float) * (size_t)no);
            }
            th_free(&t);
        }
        free(ref);
    }
    free(x);
}

static void test_reduce_cost_formula(void **state)
{
    (void)state;
    const float x[24] = {0};
    tin in = {"x", FA_DTYPE_FLOAT, 3, {2, 3, 4}, x, false};
    th t;
    th_node(&t, "ReduceL2", 13, 1, &in);
    fa_node_add_attr_ints(t.g, t.n, "axes", (int64_t[]){2}, 1);
    expect_ok(&t, th_exec(&t, 1));
    fa_op_cost c;
    fa_node_cost(t.g, t.n, &c);
    assert_int_equal(c.flops, 2 * 24 + 6); /* square+add per input, sqrt per output */
    assert_int_equal(c.bytes_read, 24 * 4);
    assert_int_equal(c.bytes_written, 6 * 4);
    th_free(&t);
    th_node(&t, "ArgMax", 13, 1, &in);
    expect_ok(&t, th_exec(&t, 1));
    fa_node_cost(t.g, t.n, &c);
    assert_int_equal(c.flops, 24);
    assert_int_equal(c.bytes_written, 12 * 8);
    assert_int_equal(t.n->op->pattern, FA_PATTERN_REDUCTION);
    th_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_reductions_all_axis_subsets_match_loops),
        cmocka_unit_test(test_axes_input_form_matches_attribute_form),
        cmocka_unit_test(test_empty_axes_reduce_all_unless_noop),
        cmocka_unit_test(test_bad_axes_are_input_errors_naming_node),
        cmocka_unit_test(test_argmax_argmin_axis_keepdims_and_tie_rules),
        cmocka_unit_test(test_integer_reductions_and_empty_domains),
        cmocka_unit_test(test_float_and_double_sums_accumulate_in_double),
        cmocka_unit_test(test_large_reductions_parallel_match_serial),
        cmocka_unit_test(test_reduce_cost_formula),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
