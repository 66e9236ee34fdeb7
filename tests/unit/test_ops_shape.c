/* tests/unit/test_ops_shape — shape/injective ops of graph/ops_shape.c: each op's infer and
 * reference kernel on small hand-built nodes, expected values computed independently in the
 * test (index formulas, hand-written tables), the opset forms of attributes that became
 * inputs, negative axes, and the bad inputs that must fail naming the node. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/ops-impl.h"
#include "testutil.h"

typedef struct T {
    fa_ctx *ctx;
    fa_graph *g;
    fa_value out[8];
    int n_out;
} T;

static T *t_new(int opset)
{
    T *t = calloc(1, sizeof *t);
    t->ctx = fa_ctx_create();
    t->g = fa_graph_create("t");
    assert_int_equal(fa_graph_set_opset(t->ctx, t->g, "", opset), FA_OK);
    return t;
}

static void t_free(T *t)
{
    for (int i = 0; i < t->n_out; i++) free(t->out[i].data);
    fa_graph_free(t->g);
    fa_ctx_free(t->ctx);
    free(t);
}

/* Constant input tensor NAME with data (NULL data: a graph input with only a shape). */
static void t_tensor(T *t, const char *name, fa_dtype dt, int rank, const int64_t *dims, const void *data)
{
    int id = fa_graph_tensor(t->g, name);
    fa_tensor *x = t->g->tensors[id];
    fa_tensor_set_shape(x, dt, rank, dims);
    if (data) {
        int64_t ne = fa_tensor_numel(x);
        assert_int_equal(fa_tensor_set_data(t->ctx, x, data, (size_t)ne * fa_dtype_size(dt)), FA_OK);
        x->flags |= FA_TENSOR_INITIALIZER;
    } else {
        assert_int_equal(fa_graph_add_input(t->ctx, t->g, id), FA_OK);
    }
}

static void t_f32(T *t, const char *name, int rank, const int64_t *dims, const float *v)
{
    t_tensor(t, name, FA_DTYPE_FLOAT, rank, dims, v);
}

static void t_i64(T *t, const char *name, int64_t n, const int64_t *v)
{
    t_tensor(t, name, FA_DTYPE_INT64, 1, &n, v);
}

/* iota float tensor 0,1,2,... of the given shape */
static void t_iota(T *t, const char *name, int rank, const int64_t *dims)
{
    int64_t ne = 1;
    for (int i = 0; i < rank; i++) ne *= dims[i];
    float *v = malloc(sizeof(float) * (size_t)(ne ? ne : 1));
    for (int64_t i = 0; i < ne; i++) v[i] = (float)i;
    t_f32(t, name, rank, dims, v);
    free(v);
}

static fa_node *t_node(T *t, const char *op, int n_in, const char *const *in, int n_out, const char *const *out)
{
    fa_node *n = fa_graph_add_node(t->ctx, t->g, NULL, op, "", n_in, in, n_out, out);
    assert_non_null(n);
    assert_non_null(n->op);
    return n;
}

static fa_status t_infer(T *t, fa_node *n)
{
    return n->op->infer(t->ctx, t->g, n);
}

/* infer + kernel with a thread budget; outputs land in t->out[]. */
static fa_status t_run_threads(T *t, fa_node *n, int threads)
{
    fa_status st = t_infer(t, n);
    if (st) return st;
    fa_value in[16];
    memset(in, 0, sizeof in);
    for (int i = 0; i < n->n_inputs; i++) {
        fa_tensor *x = fa_graph_in(t->g, n, i);
        if (!x) continue;
        in[i].data = x->data;
        in[i].dtype = x->dtype;
        in[i].rank = x->rank;
        memcpy(in[i].dims, x->dims, sizeof x->dims);
    }
    t->n_out = n->n_outputs;
    for (int k = 0; k < n->n_outputs; k++) {
        fa_tensor *o = fa_graph_out(t->g, n, k);
        t->out[k].dtype = o->dtype;
        t->out[k].rank = o->rank;
        memcpy(t->out[k].dims, o->dims, sizeof o->dims);
        t->out[k].data = calloc(1, fa_tensor_bytes(o) + 1);
    }
    return n->op->kernel(t->ctx, n, in, n->n_inputs, t->out, n->n_outputs, threads);
}

static fa_status t_run(T *t, fa_node *n)
{
    return t_run_threads(t, n, 1);
}

static void assert_dims(const fa_value *v, int rank, const int64_t *dims)
{
    assert_int_equal(v->rank, rank);
    for (int i = 0; i < rank; i++) assert_int_equal(v->dims[i], dims[i]);
}

static void assert_f32(const fa_value *v, const float *want, int64_t n)
{
    assert_int_equal(fa_value_numel(v), n);
    for (int64_t i = 0; i < n; i++)
        if (((const float *)v->data)[i] != want[i]) {
            fprintf(stderr, "element %lld: got %g want %g\n", (long long)i, ((const float *)v->data)[i], want[i]);
            fail();
        }
}

static void assert_i64(const fa_value *v, const int64_t *want, int64_t n)
{
    assert_int_equal(fa_value_numel(v), n);
    for (int64_t i = 0; i < n; i++) assert_int_equal(((const int64_t *)v->data)[i], want[i]);
}

/* The error names the node and carries the status. */
static void assert_node_error(T *t, fa_status got, fa_status want, const fa_node *n, const char *needle)
{
    assert_int_equal(got, want);
    const char *msg = fa_ctx_errmsg(t->ctx);
    if (!strstr(msg, n->name) || (needle && !strstr(msg, needle))) {
        fprintf(stderr, "message: %s\n", msg);
        fail();
    }
}

static const char *const X[] = {"x"}, *const Y[] = {"y"};

/* ------------------------------------------------------------ Reshape */

static void test_reshape_zero_copies_dim_and_minus_one_inferred(void **s)
{
    T *t = t_new(13);
    int64_t d[3] = {2, 3, 4}, shp[2] = {0, -1};
    t_iota(t, "x", 3, d);
    t_i64(t, "s", 2, shp);
    fa_node *n = t_node(t, "Reshape", 2, (const char *[]){"x", "s"}, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){2, 12});
    float want[24];
    for (int i = 0; i < 24; i++) want[i] = (float)i;
    assert_f32(&t->out[0], want, 24);
    t_free(t);
}

static void test_reshape_opset4_shape_attribute(void **s)
{
    T *t = t_new(4);
    int64_t d[2] = {2, 6};
    t_iota(t, "x", 2, d);
    fa_node *n = t_node(t, "Reshape", 1, X, 1, Y);
    fa_node_add_attr_ints(t->g, n, "shape", (int64_t[]){4, -1, 1}, 3);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 3, (int64_t[]){4, 3, 1});
    t_free(t);
}

static void test_reshape_allowzero_keeps_zero_dim(void **s)
{
    T *t = t_new(14);
    int64_t d[2] = {0, 3}, shp[2] = {3, 0};
    t_tensor(t, "x", FA_DTYPE_FLOAT, 2, d, "");
    t_i64(t, "s", 2, shp);
    fa_node *n = t_node(t, "Reshape", 2, (const char *[]){"x", "s"}, 1, Y);
    fa_node_add_attr_int(t->g, n, "allowzero", 1);
    assert_int_equal(t_infer(t, n), FA_OK);
    fa_tensor *y = fa_graph_out(t->g, n, 0);
    assert_int_equal(y->dims[0], 3);
    assert_int_equal(y->dims[1], 0);
    t_free(t);
}

static void test_reshape_incompatible_size_is_input_error(void **s)
{
    T *t = t_new(13);
    int64_t d[2] = {2, 3}, shp[2] = {4, 2};
    t_iota(t, "x", 2, d);
    t_i64(t, "s", 2, shp);
    fa_node *n = t_node(t, "Reshape", 2, (const char *[]){"x", "s"}, 1, Y);
    assert_node_error(t, t_infer(t, n), FA_ERR_INPUT, n, "6 elements");
    t_free(t);
}

static void test_reshape_two_minus_ones_is_input_error(void **s)
{
    T *t = t_new(13);
    int64_t d[2] = {2, 3}, shp[3] = {-1, 1, -1};
    t_iota(t, "x", 2, d);
    t_i64(t, "s", 3, shp);
    fa_node *n = t_node(t, "Reshape", 2, (const char *[]){"x", "s"}, 1, Y);
    assert_node_error(t, t_infer(t, n), FA_ERR_INPUT, n, "-1");
    t_free(t);
}

static void test_reshape_runtime_shape_is_unsupported(void **s)
{
    T *t = t_new(13);
    int64_t d[2] = {2, 3}, two = 2;
    t_iota(t, "x", 2, d);
    t_tensor(t, "s", FA_DTYPE_INT64, 1, &two, NULL);
    fa_node *n = t_node(t, "Reshape", 2, (const char *[]){"x", "s"}, 1, Y);
    assert_node_error(t, t_infer(t, n), FA_ERR_UNSUPPORTED, n, "constant");
    t_free(t);
}

/* ------------------------------------------------------------ Flatten */

static void test_flatten_axes_zero_negative_and_rank(void **s)
{
    int64_t axes[4] = {0, -1, 3, 1}, want[4][2] = {{1, 24}, {6, 4}, {24, 1}, {2, 12}};
    for (int k = 0; k < 4; k++) {
        T *t = t_new(13);
        int64_t d[3] = {2, 3, 4};
        t_iota(t, "x", 3, d);
        fa_node *n = t_node(t, "Flatten", 1, X, 1, Y);
        if (k < 3) fa_node_add_attr_int(t->g, n, "axis", axes[k]);
        assert_int_equal(t_run(t, n), FA_OK);
        assert_dims(&t->out[0], 2, want[k]);
        assert_float_equal(((float *)t->out[0].data)[23], 23.0f, 0);
        t_free(t);
    }
    T *t = t_new(13);
    int64_t d[3] = {2, 3, 4};
    t_iota(t, "x", 3, d);
    fa_node *n = t_node(t, "Flatten", 1, X, 1, Y);
    fa_node_add_attr_int(t->g, n, "axis", 4);
    assert_node_error(t, t_infer(t, n), FA_ERR_INPUT, n, "axis");
    t_free(t);
}

/* ------------------------------------------------------------ Transpose */

static void test_transpose_default_reverses_axes(void **s)
{
    T *t = t_new(13);
    int64_t d[3] = {2, 3, 4};
    t_iota(t, "x", 3, d);
    fa_node *n = t_node(t, "Transpose", 1, X, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 3, (int64_t[]){4, 3, 2});
    float want[24];
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++) want[(a * 3 + b) * 2 + c] = (float)(c * 12 + b * 4 + a);
    assert_f32(&t->out[0], want, 24);
    t_free(t);
}

static void test_transpose_perm_on_uint8_and_float16(void **s)
{
    fa_dtype types[3] = {FA_DTYPE_UINT8, FA_DTYPE_FLOAT16, FA_DTYPE_DOUBLE};
    for (int k = 0; k < 3; k++) {
        T *t = t_new(13);
        int64_t d[4] = {2, 3, 2, 2};
        size_t es = fa_dtype_size(types[k]);
        unsigned char buf[24 * 8];
        for (int i = 0; i < 24; i++) fa_store_from_double(buf, types[k], i, i);
        t_tensor(t, "x", types[k], 4, d, buf);
        fa_node *n = t_node(t, "Transpose", 1, X, 1, Y);
        fa_node_add_attr_ints(t->g, n, "perm", (int64_t[]){0, 2, 3, 1}, 4);
        assert_int_equal(t_run(t, n), FA_OK);
        assert_dims(&t->out[0], 4, (int64_t[]){2, 2, 2, 3});
        assert_int_equal(t->out[0].dtype, types[k]);
        /* y[n,h,w,c] = x[n,c,h,w] = n*12 + c*4 + h*2 + w */
        int i = 0;
        for (int a = 0; a < 2; a++)
            for (int h = 0; h < 2; h++)
                for (int w = 0; w < 2; w++)
                    for (int c = 0; c < 3; c++, i++)
                        assert_int_equal((int)fa_load_as_double(t->out[0].data, types[k], i), a * 12 + c * 4 + h * 2 + w);
        (void)es;
        t_free(t);
    }
}

/* Over 1 MiB the copies split rows across threads; 3 threads over 601 rows do not divide
 * evenly, so chunk boundaries fall mid-odometer. */
static void test_transpose_and_pad_multithreaded_match_formula(void **s)
{
    T *t = t_new(13);
    int64_t d[3] = {601, 3, 173};
    t_iota(t, "x", 3, d);
    fa_node *n = t_node(t, "Transpose", 1, X, 1, Y);
    fa_node_add_attr_ints(t->g, n, "perm", (int64_t[]){2, 0, 1}, 3);
    assert_int_equal(t_run_threads(t, n, 3), FA_OK);
    const float *y = t->out[0].data;
    for (int64_t c = 0; c < 173; c++)
        for (int64_t a = 0; a < 601; a++)
            for (int64_t b = 0; b < 3; b++)
                if (y[(c * 601 + a) * 3 + b] != (float)((a * 3 + b) * 173 + c)) fail();
    free(t->out[0].data);
    t->n_out = 0;
    t_i64(t, "p", 6, (int64_t[]){1, 0, 2, 0, 1, 1});
    fa_node *m = t_node(t, "Pad", 2, (const char *[]){"x", "p"}, 1, (const char *[]){"z"});
    fa_node_add_attr_string(t->g, m, "mode", "edge");
    assert_int_equal(t_run_threads(t, m, 3), FA_OK);
    assert_dims(&t->out[0], 3, (int64_t[]){602, 4, 176});
    const float *z = t->out[0].data;
    for (int64_t a = 0; a < 602; a++)
        for (int64_t b = 0; b < 4; b++)
            for (int64_t c = 0; c < 176; c++) {
                int64_t ia = a < 1 ? 0 : a - 1, ib = b > 2 ? 2 : b, ic = c < 2 ? 0 : c - 2 > 172 ? 172 : c - 2;
                if (z[(a * 4 + b) * 176 + c] != (float)((ia * 3 + ib) * 173 + ic)) fail();
            }
    t_free(t);
}

/* Random ranks, dims (many past the 16-element tile and not multiples of it), perms, element sizes
 * 1, 2, 4 and 8, on 1 and 3 threads (one case over the 1 MiB the copies split at), against
 * y[o] = x[Σ o_k · stride_x(perm[k])]: the tiled walk of a transpose that moves the input's last
 * axis, and the row walk otherwise. */
static void test_transpose_random_perms_match_formula(void **s)
{
    uint64_t seed = 12345;
#define NEXT() (seed = seed * 6364136223846793005ULL + 1442695040888963407ULL, (seed >> 33))
    const fa_dtype types[4] = {FA_DTYPE_UINT8, FA_DTYPE_FLOAT16, FA_DTYPE_FLOAT, FA_DTYPE_INT64};
    for (int trial = 0; trial < 120; trial++) {
        int r = 2 + (int)(NEXT() % 4);
        int64_t d[5], perm[5], xs[5], n = 1;
        for (int k = 0; k < r; k++) d[k] = 1 + (int64_t)(NEXT() % (trial == 119 ? 90 : 37));
        if (trial == 119) d[0] = 48, d[1] = 64, r = 3, d[2] = 96; /* 1.1 MiB of float: parallel */
        for (int k = 0; k < r; k++) n *= d[k], perm[k] = k;
        for (int k = r - 1; k > 0; k--) {
            int j = (int)(NEXT() % (uint64_t)(k + 1));
            int64_t tmp = perm[k];
            perm[k] = perm[j], perm[j] = tmp;
        }
        for (int k = r - 1, st = 1; k >= 0; st *= (int)d[k], k--) xs[k] = st;
        fa_dtype dt = trial == 119 ? FA_DTYPE_FLOAT : types[trial % 4];
        size_t es = fa_dtype_size(dt);
        unsigned char *x = malloc((size_t)n * es);
        assert_non_null(x);
        for (int64_t i = 0; i < n; i++) memcpy(x + i * (int64_t)es, &(uint64_t){(uint64_t)i * 2654435761u}, es);
        for (int threads = 1; threads <= 3; threads += 2) {
            T *t = t_new(13);
            t_tensor(t, "x", dt, r, d, x);
            fa_node *nd = t_node(t, "Transpose", 1, X, 1, Y);
            fa_node_add_attr_ints(t->g, nd, "perm", perm, r);
            assert_int_equal(t_run_threads(t, nd, threads), FA_OK);
            const unsigned char *y = t->out[0].data;
            int64_t o[5] = {0};
            for (int64_t i = 0; i < n; i++) {
                int64_t src = 0;
                for (int k = 0; k < r; k++) src += o[k] * xs[perm[k]];
                if (memcmp(y + i * (int64_t)es, x + src * (int64_t)es, es))
                    fail_msg("trial %d (rank %d, %zu-byte elements, %d threads): element %lld differs", trial, r, es, threads,
                             (long long)i);
                for (int k = r - 1; k >= 0; k--) {
                    if (++o[k] < d[perm[k]]) break;
                    o[k] = 0;
                }
            }
            t_free(t);
        }
        free(x);
    }
#undef NEXT
}

static void test_transpose_bad_perm_is_input_error(void **s)
{
    T *t = t_new(13);
    int64_t d[2] = {2, 3};
    t_iota(t, "x", 2, d);
    fa_node *n = t_node(t, "Transpose", 1, X, 1, Y);
    fa_node_add_attr_ints(t->g, n, "perm", (int64_t[]){1, 1}, 2);
    assert_node_error(t, t_infer(t, n), FA_ERR_INPUT, n, "perm");
    t_free(t);
}

/* ------------------------------------------------------------ Concat */

static void test_concat_negative_axis_int64(void **s)
{
    T *t = t_new(13);
    int64_t da[2] = {2, 1}, db[2] = {2, 2};
    int64_t a[2] = {1, 2}, b[4] = {10, 11, 20, 21};
    t_tensor(t, "a", FA_DTYPE_INT64, 2, da, a);
    t_tensor(t, "b", FA_DTYPE_INT64, 2, db, b);
    fa_node *n = t_node(t, "Concat", 2, (const char *[]){"a", "b"}, 1, Y);
    fa_node_add_attr_int(t->g, n, "axis", -1);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){2, 3});
    assert_i64(&t->out[0], (int64_t[]){1, 10, 11, 2, 20, 21}, 6);
    t_free(t);
}

static void test_concat_rank_or_dim_mismatch_is_input_error(void **s)
{
    T *t = t_new(13);
    int64_t da[2] = {2, 1}, db[3] = {2, 1, 1}, dc[2] = {3, 1};
    t_iota(t, "a", 2, da);
    t_iota(t, "b", 3, db);
    t_iota(t, "c", 2, dc);
    fa_node *n = t_node(t, "Concat", 2, (const char *[]){"a", "b"}, 1, Y);
    fa_node_add_attr_int(t->g, n, "axis", 1);
    assert_node_error(t, t_infer(t, n), FA_ERR_INPUT, n, "rank");
    fa_node *m = t_node(t, "Concat", 2, (const char *[]){"a", "c"}, 1, (const char *[]){"z"});
    fa_node_add_attr_int(t->g, m, "axis", 1);
    assert_node_error(t, t_infer(t, m), FA_ERR_INPUT, m, "dim 0");
    t_free(t);
}

/* ------------------------------------------------------------ Split */

static void test_split_opset11_attribute_sizes(void **s)
{
    T *t = t_new(11);
    int64_t d[2] = {2, 3};
    t_iota(t, "x", 2, d);
    fa_node *n = t_node(t, "Split", 1, X, 2, (const char *[]){"a", "b"});
    fa_node_add_attr_int(t->g, n, "axis", -1);
    fa_node_add_attr_ints(t->g, n, "split", (int64_t[]){1, 2}, 2);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){2, 1});
    assert_f32(&t->out[0], (float[]){0, 3}, 2);
    assert_f32(&t->out[1], (float[]){1, 2, 4, 5}, 4);
    t_free(t);
}

static void test_split_opset13_input_sizes(void **s)
{
    T *t = t_new(13);
    int64_t d[1] = {5}, sp[2] = {3, 2};
    t_iota(t, "x", 1, d);
    t_i64(t, "sp", 2, sp);
    fa_node *n = t_node(t, "Split", 2, (const char *[]){"x", "sp"}, 2, (const char *[]){"a", "b"});
    assert_int_equal(t_run(t, n), FA_OK);
    assert_f32(&t->out[0], (float[]){0, 1, 2}, 3);
    assert_f32(&t->out[1], (float[]){3, 4}, 2);
    t_free(t);
}

static void test_split_opset18_num_outputs_uneven_last_chunk(void **s)
{
    T *t = t_new(18);
    int64_t d[1] = {7};
    t_iota(t, "x", 1, d);
    fa_node *n = t_node(t, "Split", 1, X, 3, (const char *[]){"a", "b", "c"});
    fa_node_add_attr_int(t->g, n, "num_outputs", 3);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_f32(&t->out[0], (float[]){0, 1, 2}, 3);
    assert_f32(&t->out[1], (float[]){3, 4, 5}, 3);
    assert_f32(&t->out[2], (float[]){6}, 1);
    t_free(t);
}

static void test_split_equal_parts_must_divide(void **s)
{
    T *t = t_new(13);
    int64_t d[1] = {7};
    t_iota(t, "x", 1, d);
    fa_node *n = t_node(t, "Split", 1, X, 2, (const char *[]){"a", "b"});
    assert_node_error(t, t_infer(t, n), FA_ERR_INPUT, n, "divisible");
    t_free(t);
}

/* ------------------------------------------------------------ Slice */

static void test_slice_opset9_attributes(void **s)
{
    T *t = t_new(9);
    int64_t d[2] = {3, 4};
    t_iota(t, "x", 2, d);
    fa_node *n = t_node(t, "Slice", 1, X, 1, Y);
    fa_node_add_attr_ints(t->g, n, "starts", (int64_t[]){1, 0}, 2);
    fa_node_add_attr_ints(t->g, n, "ends", (int64_t[]){1000, -1}, 2);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){2, 3});
    assert_f32(&t->out[0], (float[]){4, 5, 6, 8, 9, 10}, 6);
    t_free(t);
}

static void test_slice_opset13_negative_step_axes_and_clamping(void **s)
{
    T *t = t_new(13);
    int64_t d[2] = {3, 5};
    t_iota(t, "x", 2, d);
    /* axis -1 from INT64_MAX down (clamped to 4) by -2 until INT64_MIN (to the start); axis 0 1..end */
    t_i64(t, "st", 2, (int64_t[]){INT64_MAX, 1});
    t_i64(t, "en", 2, (int64_t[]){INT64_MIN, INT64_MAX});
    t_i64(t, "ax", 2, (int64_t[]){-1, 0});
    t_i64(t, "sp", 2, (int64_t[]){-2, 1});
    fa_node *n = t_node(t, "Slice", 5, (const char *[]){"x", "st", "en", "ax", "sp"}, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){2, 3});
    assert_f32(&t->out[0], (float[]){9, 7, 5, 14, 12, 10}, 6);
    t_free(t);
}

static void test_slice_empty_result_and_zero_step_error(void **s)
{
    T *t = t_new(13);
    int64_t d[1] = {5};
    t_iota(t, "x", 1, d);
    t_i64(t, "st", 1, (int64_t[]){3});
    t_i64(t, "en", 1, (int64_t[]){1});
    t_i64(t, "z", 1, (int64_t[]){0});
    t_i64(t, "ax", 1, (int64_t[]){0});
    fa_node *n = t_node(t, "Slice", 3, (const char *[]){"x", "st", "en"}, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 1, (int64_t[]){0});
    fa_node *m = t_node(t, "Slice", 5, (const char *[]){"x", "st", "en", "ax", "z"}, 1, (const char *[]){"w"});
    assert_node_error(t, t_infer(t, m), FA_ERR_INPUT, m, "step");
    /* a step of INT64_MAX from 0 to INT64_MAX takes one element, without overflow */
    t_i64(t, "s0", 1, (int64_t[]){0});
    t_i64(t, "big", 1, (int64_t[]){INT64_MAX});
    fa_node *b = t_node(t, "Slice", 5, (const char *[]){"x", "s0", "big", "ax", "big"}, 1, (const char *[]){"v"});
    free(t->out[0].data);
    t->n_out = 0;
    assert_int_equal(t_run(t, b), FA_OK);
    assert_dims(&t->out[0], 1, (int64_t[]){1});
    assert_f32(&t->out[0], (float[]){0}, 1);
    t_free(t);
}

/* ------------------------------------------------------------ Squeeze / Unsqueeze */

static void test_squeeze_opset11_attribute_vs_opset13_input(void **s)
{
    int64_t d[4] = {1, 3, 1, 2};
    T *t = t_new(11);
    t_iota(t, "x", 4, d);
    fa_node *n = t_node(t, "Squeeze", 1, X, 1, Y);
    fa_node_add_attr_ints(t->g, n, "axes", (int64_t[]){-2}, 1);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 3, (int64_t[]){1, 3, 2});
    t_free(t);

    t = t_new(13);
    t_iota(t, "x", 4, d);
    t_i64(t, "a", 1, (int64_t[]){0});
    n = t_node(t, "Squeeze", 2, (const char *[]){"x", "a"}, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 3, (int64_t[]){3, 1, 2});
    assert_float_equal(((float *)t->out[0].data)[5], 5.0f, 0);
    t_free(t);

    t = t_new(13); /* no axes: every 1 goes */
    t_iota(t, "x", 4, d);
    n = t_node(t, "Squeeze", 1, X, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){3, 2});
    t_free(t);
}

static void test_squeeze_non_unit_axis_is_input_error(void **s)
{
    T *t = t_new(13);
    int64_t d[2] = {1, 3};
    t_iota(t, "x", 2, d);
    t_i64(t, "a", 1, (int64_t[]){1});
    fa_node *n = t_node(t, "Squeeze", 2, (const char *[]){"x", "a"}, 1, Y);
    assert_node_error(t, t_infer(t, n), FA_ERR_INPUT, n, "squeeze");
    t_free(t);
}

static void test_unsqueeze_opset11_attribute_vs_opset13_input(void **s)
{
    int64_t d[2] = {3, 2};
    T *t = t_new(11);
    t_iota(t, "x", 2, d);
    fa_node *n = t_node(t, "Unsqueeze", 1, X, 1, Y);
    fa_node_add_attr_ints(t->g, n, "axes", (int64_t[]){0, -1}, 2);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 4, (int64_t[]){1, 3, 2, 1});
    t_free(t);

    t = t_new(13);
    t_iota(t, "x", 2, d);
    t_i64(t, "a", 1, (int64_t[]){1});
    n = t_node(t, "Unsqueeze", 2, (const char *[]){"x", "a"}, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 3, (int64_t[]){3, 1, 2});
    t_free(t);
}

/* ------------------------------------------------------------ Gather / GatherElements */

static void test_gather_axis1_negative_indices(void **s)
{
    T *t = t_new(13);
    int64_t d[2] = {2, 4}, di[2] = {1, 2};
    t_iota(t, "x", 2, d);
    t_tensor(t, "i", FA_DTYPE_INT32, 2, di, (int32_t[]){-1, 1});
    fa_node *n = t_node(t, "Gather", 2, (const char *[]){"x", "i"}, 1, Y);
    fa_node_add_attr_int(t->g, n, "axis", 1);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 3, (int64_t[]){2, 1, 2});
    assert_f32(&t->out[0], (float[]){3, 1, 7, 5}, 4);
    t_free(t);
}

static void test_gather_scalar_index_drops_axis_and_range_checked(void **s)
{
    T *t = t_new(13);
    int64_t d[2] = {3, 2};
    t_iota(t, "x", 2, d);
    t_tensor(t, "i", FA_DTYPE_INT64, 0, NULL, (int64_t[]){2});
    t_tensor(t, "bad", FA_DTYPE_INT64, 0, NULL, (int64_t[]){3});
    fa_node *n = t_node(t, "Gather", 2, (const char *[]){"x", "i"}, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 1, (int64_t[]){2});
    assert_f32(&t->out[0], (float[]){4, 5}, 2);
    free(t->out[0].data);
    t->n_out = 0;
    fa_node *m = t_node(t, "Gather", 2, (const char *[]){"x", "bad"}, 1, (const char *[]){"z"});
    assert_node_error(t, t_run(t, m), FA_ERR_INPUT, m, "out of range");
    t_free(t);
}

static void test_gather_elements_axis0(void **s)
{
    T *t = t_new(13);
    int64_t d[2] = {3, 2}, di[2] = {2, 2};
    t_iota(t, "x", 2, d);
    t_tensor(t, "i", FA_DTYPE_INT64, 2, di, (int64_t[]){2, 0, -3, 1});
    fa_node *n = t_node(t, "GatherElements", 2, (const char *[]){"x", "i"}, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    /* y[i][j] = x[idx[i][j]][j] */
    assert_f32(&t->out[0], (float[]){4, 1, 0, 3}, 4);
    t_free(t);
}

/* GatherElements a row at a time: along the last axis, along a middle axis (the row's own
 * position read along the last axis), int32 indices with negative ones, an index out of range
 * refused naming it — values against y[...] = x[... idx ...] written out here. */
static void test_gather_elements_rows_every_axis(void **s)
{
    T *t = t_new(13);
    int64_t d[3] = {2, 3, 4}, di[3] = {2, 2, 3};
    t_iota(t, "x", 3, d);
    int32_t idx[12];
    for (int e = 0; e < 12; e++) idx[e] = (int32_t)((e * 5) % 3) - (e % 4 == 1 ? 3 : 0); /* in [-3, 2] */
    t_tensor(t, "i", FA_DTYPE_INT32, 3, di, idx);
    for (int axis = 1; axis <= 2; axis++) {
        char yn[8];
        snprintf(yn, sizeof yn, "y%d", axis);
        fa_node *n = t_node(t, "GatherElements", 2, (const char *[]){"x", "i"}, 1, (const char *[]){yn});
        fa_node_add_attr_int(t->g, n, "axis", axis);
        assert_int_equal(t_run(t, n), FA_OK);
        float want[12];
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++)
                for (int c = 0; c < 3; c++) {
                    int e = (a * 2 + b) * 3 + c, k = idx[e];
                    int dim = axis == 1 ? 3 : 4;
                    if (k < 0) k += dim;
                    int xb = axis == 1 ? k : b, xc = axis == 2 ? k : c;
                    want[e] = (float)((a * 3 + xb) * 4 + xc); /* iota */
                }
        assert_f32(&t->out[0], want, 12);
        free(t->out[0].data);
        t->n_out = 0;
    }
    t_tensor(t, "bad", FA_DTYPE_INT64, 3, di, (int64_t[]){0, 1, 2, 3, 0, 1, 2, 9, 0, 1, 2, 3});
    fa_node *m = t_node(t, "GatherElements", 2, (const char *[]){"x", "bad"}, 1, (const char *[]){"z"});
    fa_node_add_attr_int(t->g, m, "axis", 2);
    assert_node_error(t, t_run(t, m), FA_ERR_INPUT, m, "index 9 out of range");
    t_free(t);
}

/* ------------------------------------------------------------ GatherND (Operators.md examples) */

static void test_gathernd_tuples_select_elements_and_rows(void **s)
{
    T *t = t_new(13);
    int64_t d2[2] = {2, 2}, d3[3] = {2, 2, 2}, i22[2] = {2, 2}, i21[2] = {2, 1};
    t_iota(t, "x", 2, d2);
    t_iota(t, "x3", 3, d3);
    t_tensor(t, "full", FA_DTYPE_INT64, 2, i22, (int64_t[]){0, 0, 1, 1});
    t_tensor(t, "rows", FA_DTYPE_INT64, 2, i21, (int64_t[]){1, 0});
    t_tensor(t, "neg", FA_DTYPE_INT64, 2, i22, (int64_t[]){0, -1, -1, 0});
    /* example 1: full tuples pick elements */
    fa_node *n = t_node(t, "GatherND", 2, (const char *[]){"x", "full"}, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 1, (int64_t[]){2});
    assert_f32(&t->out[0], (float[]){0, 3}, 2);
    free(t->out[0].data);
    t->n_out = 0;
    /* example 2: one index per tuple picks rows */
    n = t_node(t, "GatherND", 2, (const char *[]){"x", "rows"}, 1, (const char *[]){"y2"});
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){2, 2});
    assert_f32(&t->out[0], (float[]){2, 3, 0, 1}, 4);
    free(t->out[0].data);
    t->n_out = 0;
    /* example 3 with negative indices: data rank 3, tuples of 2 pick rows of the last dim */
    n = t_node(t, "GatherND", 2, (const char *[]){"x3", "neg"}, 1, (const char *[]){"y3"});
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){2, 2});
    assert_f32(&t->out[0], (float[]){2, 3, 4, 5}, 4);
    t_free(t);
}

static void test_gathernd_batch_dims_and_errors(void **s)
{
    T *t = t_new(13);
    int64_t d3[3] = {2, 2, 2}, i21[2] = {2, 1}, i3[2] = {2, 3}, i1[1] = {1};
    t_iota(t, "x3", 3, d3);
    t_tensor(t, "rows", FA_DTYPE_INT64, 2, i21, (int64_t[]){1, 0});
    t_tensor(t, "long", FA_DTYPE_INT64, 2, i3, (int64_t[]){0, 0, 0, 1, 1, 1});
    t_tensor(t, "far", FA_DTYPE_INT64, 1, i1, (int64_t[]){2});
    /* example 5: batch_dims 1, each batch picks its own row */
    fa_node *n = t_node(t, "GatherND", 2, (const char *[]){"x3", "rows"}, 1, Y);
    fa_node_add_attr_int(t->g, n, "batch_dims", 1);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){2, 2});
    assert_f32(&t->out[0], (float[]){2, 3, 4, 5}, 4);
    free(t->out[0].data);
    t->n_out = 0;
    /* tuples longer than data rank - batch_dims */
    fa_node *m = t_node(t, "GatherND", 2, (const char *[]){"x3", "long"}, 1, (const char *[]){"z"});
    fa_node_add_attr_int(t->g, m, "batch_dims", 1);
    assert_node_error(t, t_run(t, m), FA_ERR_INPUT, m, "last dim");
    /* an index past its dim */
    fa_node *o = t_node(t, "GatherND", 2, (const char *[]){"x3", "far"}, 1, (const char *[]){"w"});
    assert_node_error(t, t_run(t, o), FA_ERR_INPUT, o, "out of range");
    t_free(t);
}

/* ------------------------------------------------------------ Expand / Tile */

static void test_expand_bidirectional_broadcast(void **s)
{
    T *t = t_new(13);
    int64_t d[2] = {3, 1};
    t_iota(t, "x", 2, d);
    t_i64(t, "s", 3, (int64_t[]){2, 1, 4});
    fa_node *n = t_node(t, "Expand", 2, (const char *[]){"x", "s"}, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 3, (int64_t[]){2, 3, 4});
    float want[24];
    for (int i = 0; i < 24; i++) want[i] = (float)((i / 4) % 3);
    assert_f32(&t->out[0], want, 24);
    t_free(t);
}

static void test_expand_incompatible_shape_is_input_error(void **s)
{
    T *t = t_new(13);
    int64_t d[1] = {3};
    t_iota(t, "x", 1, d);
    t_i64(t, "s", 1, (int64_t[]){4});
    fa_node *n = t_node(t, "Expand", 2, (const char *[]){"x", "s"}, 1, Y);
    assert_node_error(t, t_infer(t, n), FA_ERR_INPUT, n, "broadcast");
    t_free(t);
}

static void test_tile_repeats(void **s)
{
    T *t = t_new(13);
    int64_t d[2] = {2, 2};
    t_iota(t, "x", 2, d);
    t_i64(t, "r", 2, (int64_t[]){2, 3});
    fa_node *n = t_node(t, "Tile", 2, (const char *[]){"x", "r"}, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){4, 6});
    float want[24];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++) want[i * 6 + j] = (float)((i % 2) * 2 + j % 2);
    assert_f32(&t->out[0], want, 24);
    t_free(t);
}

/* ------------------------------------------------------------ Pad */

static void test_pad_opset2_attribute_constant_value(void **s)
{
    T *t = t_new(2);
    int64_t d[2] = {2, 2};
    t_iota(t, "x", 2, d);
    fa_node *n = t_node(t, "Pad", 1, X, 1, Y);
    fa_node_add_attr_ints(t->g, n, "pads", (int64_t[]){0, 1, 1, 0}, 4);
    fa_node_add_attr_float(t->g, n, "value", 9.5f);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){3, 3});
    assert_f32(&t->out[0], (float[]){9.5f, 0, 1, 9.5f, 2, 3, 9.5f, 9.5f, 9.5f}, 9);
    t_free(t);
}

static void test_pad_opset11_inputs_reflect_edge_and_crop(void **s)
{
    /* x = [0 1 2 3] (1-D): reflect by 2 each side, edge by 2, negative pads crop */
    const char *modes[3] = {"reflect", "edge", "constant"};
    int64_t pads[3][2] = {{2, 2}, {2, 1}, {-1, 1}};
    float want[3][8] = {{2, 1, 0, 1, 2, 3, 2, 1}, {0, 0, 0, 1, 2, 3, 3}, {1, 2, 3, -7}};
    int64_t len[3] = {8, 7, 4};
    for (int k = 0; k < 3; k++) {
        T *t = t_new(11);
        int64_t d[1] = {4};
        t_iota(t, "x", 1, d);
        t_i64(t, "p", 2, pads[k]);
        t_f32(t, "v", 0, NULL, (float[]){-7});
        fa_node *n = t_node(t, "Pad", 3, (const char *[]){"x", "p", "v"}, 1, Y);
        fa_node_add_attr_string(t->g, n, "mode", modes[k]);
        assert_int_equal(t_run(t, n), FA_OK);
        assert_dims(&t->out[0], 1, &len[k]);
        assert_f32(&t->out[0], want[k], len[k]);
        t_free(t);
    }
}

static void test_pad_opset18_axes_input(void **s)
{
    T *t = t_new(18);
    int64_t d[2] = {2, 2};
    t_iota(t, "x", 2, d);
    t_i64(t, "p", 2, (int64_t[]){1, 0});
    t_i64(t, "a", 1, (int64_t[]){-1});
    fa_node *n = t_node(t, "Pad", 4, (const char *[]){"x", "p", "", "a"}, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){2, 3});
    assert_f32(&t->out[0], (float[]){0, 0, 1, 0, 2, 3}, 6);
    t_free(t);
}

/* ------------------------------------------------------------ Shape / Size / Constant* / Range */

static void test_shape_start_end_and_size(void **s)
{
    T *t = t_new(15);
    int64_t d[4] = {2, 3, 4, 5};
    t_tensor(t, "x", FA_DTYPE_FLOAT, 4, d, NULL); /* no data: shape-only ops need none */
    fa_node *n = t_node(t, "Shape", 1, X, 1, Y);
    fa_node_add_attr_int(t->g, n, "start", 1);
    fa_node_add_attr_int(t->g, n, "end", -1);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_int_equal(t->out[0].dtype, FA_DTYPE_INT64);
    assert_i64(&t->out[0], (int64_t[]){3, 4}, 2);
    free(t->out[0].data);
    t->n_out = 0;
    fa_node *m = t_node(t, "Size", 1, X, 1, (const char *[]){"z"});
    assert_int_equal(t_run(t, m), FA_OK);
    assert_int_equal(t->out[0].rank, 0);
    assert_i64(&t->out[0], (int64_t[]){120}, 1);
    assert_true(m->op->flags & FA_OPF_SHAPE_ONLY);
    assert_true(n->op->flags & FA_OPF_SHAPE_ONLY);
    fa_op_cost c;
    fa_node_cost(t->g, n, &c);
    assert_int_equal(c.bytes_read, 0);
    assert_int_equal(c.bytes_written, 16);
    t_free(t);
}

static void test_constant_value_forms(void **s)
{
    T *t = t_new(13);
    fa_node *a = t_node(t, "Constant", 0, NULL, 1, (const char *[]){"a"});
    fa_node_add_attr_ints(t->g, a, "value_ints", (int64_t[]){4, 5}, 2);
    assert_int_equal(t_run(t, a), FA_OK);
    assert_int_equal(t->out[0].dtype, FA_DTYPE_INT64);
    assert_i64(&t->out[0], (int64_t[]){4, 5}, 2);
    free(t->out[0].data);
    fa_node *b = t_node(t, "Constant", 0, NULL, 1, (const char *[]){"b"});
    fa_node_add_attr_float(t->g, b, "value_float", 2.5f);
    assert_int_equal(t_run(t, b), FA_OK);
    assert_int_equal(t->out[0].rank, 0);
    assert_f32(&t->out[0], (float[]){2.5f}, 1);
    free(t->out[0].data);
    /* value = a 2x1 int32 tensor */
    fa_node *c = t_node(t, "Constant", 0, NULL, 1, (const char *[]){"c"});
    fa_attr *at = fa_node_add_attr_int(t->g, c, "value", 0);
    at->type = FA_ATTR_TENSOR;
    at->t = fa_arena_alloc(t->g->arena, sizeof *at->t);
    fa_tensor_set_shape(at->t, FA_DTYPE_INT32, 2, (int64_t[]){2, 1});
    int32_t v[2] = {-3, 8};
    at->t->data = malloc(8);
    memcpy(at->t->data, v, 8);
    at->t->nbytes = 8;
    assert_int_equal(t_run(t, c), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){2, 1});
    assert_int_equal(((int32_t *)t->out[0].data)[0], -3);
    assert_int_equal(((int32_t *)t->out[0].data)[1], 8);
    fa_node *e = t_node(t, "Constant", 0, NULL, 1, (const char *[]){"e"});
    assert_node_error(t, t_infer(t, e), FA_ERR_INPUT, e, "value");
    t_free(t);
}

static void test_constant_of_shape_default_and_int_value(void **s)
{
    T *t = t_new(9);
    t_i64(t, "s", 2, (int64_t[]){2, 3});
    fa_node *n = t_node(t, "ConstantOfShape", 1, (const char *[]){"s"}, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_int_equal(t->out[0].dtype, FA_DTYPE_FLOAT);
    assert_f32(&t->out[0], (float[]){0, 0, 0, 0, 0, 0}, 6);
    free(t->out[0].data);
    fa_node *m = t_node(t, "ConstantOfShape", 1, (const char *[]){"s"}, 1, (const char *[]){"z"});
    fa_attr *at = fa_node_add_attr_int(t->g, m, "value", 0);
    at->type = FA_ATTR_TENSOR;
    at->t = fa_arena_alloc(t->g->arena, sizeof *at->t);
    int64_t one = 1;
    fa_tensor_set_shape(at->t, FA_DTYPE_INT64, 1, &one);
    at->t->data = malloc(8);
    *(int64_t *)at->t->data = 7;
    at->t->nbytes = 8;
    assert_int_equal(t_run(t, m), FA_OK);
    assert_int_equal(t->out[0].dtype, FA_DTYPE_INT64);
    assert_i64(&t->out[0], (int64_t[]){7, 7, 7, 7, 7, 7}, 6);
    t_free(t);
}

static void test_range_int_float_and_negative_delta(void **s)
{
    T *t = t_new(11);
    t_tensor(t, "a", FA_DTYPE_INT64, 0, NULL, (int64_t[]){10});
    t_tensor(t, "b", FA_DTYPE_INT64, 0, NULL, (int64_t[]){1});
    t_tensor(t, "c", FA_DTYPE_INT64, 0, NULL, (int64_t[]){-3});
    fa_node *n = t_node(t, "Range", 3, (const char *[]){"a", "b", "c"}, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_i64(&t->out[0], (int64_t[]){10, 7, 4}, 3); /* ceil((1-10)/-3) = 3 */
    free(t->out[0].data);
    t_f32(t, "fa", 0, NULL, (float[]){0.5f});
    t_f32(t, "fb", 0, NULL, (float[]){2.0f});
    t_f32(t, "fc", 0, NULL, (float[]){0.5f});
    fa_node *m = t_node(t, "Range", 3, (const char *[]){"fa", "fb", "fc"}, 1, (const char *[]){"z"});
    assert_int_equal(t_run(t, m), FA_OK);
    assert_f32(&t->out[0], (float[]){0.5f, 1.0f, 1.5f}, 3);
    t_free(t);
}

static void test_range_runtime_limit_is_unsupported(void **s)
{
    T *t = t_new(11);
    t_tensor(t, "a", FA_DTYPE_INT64, 0, NULL, (int64_t[]){0});
    t_tensor(t, "b", FA_DTYPE_INT64, 0, NULL, NULL);
    t_tensor(t, "c", FA_DTYPE_INT64, 0, NULL, (int64_t[]){1});
    fa_node *n = t_node(t, "Range", 3, (const char *[]){"a", "b", "c"}, 1, Y);
    assert_node_error(t, t_infer(t, n), FA_ERR_UNSUPPORTED, n, "constant");
    t_free(t);
}

/* ------------------------------------------------------------ OneHot / NonZero / DepthToSpace */

static void test_onehot_negative_index_and_axis0(void **s)
{
    T *t = t_new(11);
    int64_t di[1] = {3};
    t_tensor(t, "i", FA_DTYPE_INT64, 1, di, (int64_t[]){0, -1, 5});
    t_tensor(t, "d", FA_DTYPE_INT64, 0, NULL, (int64_t[]){3});
    t_f32(t, "v", 1, (int64_t[]){2}, (float[]){0, 1});
    fa_node *n = t_node(t, "OneHot", 3, (const char *[]){"i", "d", "v"}, 1, Y);
    fa_node_add_attr_int(t->g, n, "axis", 0);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){3, 3});
    /* y[k][j] = (idx[j] mod-neg == k): idx = 0, 2, (5: out of range) */
    assert_f32(&t->out[0], (float[]){1, 0, 0, 0, 0, 0, 0, 1, 0}, 9);
    t_free(t);
}

static void test_nonzero_constant_only(void **s)
{
    T *t = t_new(13);
    int64_t d[2] = {2, 2};
    t_f32(t, "x", 2, d, (float[]){1, 0, 0, 3});
    fa_node *n = t_node(t, "NonZero", 1, X, 1, Y);
    assert_int_equal(t_run(t, n), FA_OK);
    assert_dims(&t->out[0], 2, (int64_t[]){2, 2});
    assert_i64(&t->out[0], (int64_t[]){0, 1, 0, 1}, 4);
    t_tensor(t, "r", FA_DTYPE_FLOAT, 2, d, NULL);
    fa_node *m = t_node(t, "NonZero", 1, (const char *[]){"r"}, 1, (const char *[]){"z"});
    assert_node_error(t, t_infer(t, m), FA_ERR_UNSUPPORTED, m, NULL);
    t_free(t);
}

static void test_depth_to_space_dcr_crd_and_space_to_depth_roundtrip(void **s)
{
    for (int crd = 0; crd < 2; crd++) {
        T *t = t_new(13);
        int64_t d[4] = {1, 8, 2, 3}, b = 2;
        t_iota(t, "x", 4, d);
        fa_node *n = t_node(t, "DepthToSpace", 1, X, 1, Y);
        fa_node_add_attr_int(t->g, n, "blocksize", b);
        if (crd) fa_node_add_attr_string(t->g, n, "mode", "CRD");
        assert_int_equal(t_run(t, n), FA_OK);
        assert_dims(&t->out[0], 4, (int64_t[]){1, 2, 4, 6});
        /* ONNX spec: DCR y[c, h*b+i, w*b+j] = x[(i*b+j)*C' + c, h, w]; CRD x[c*b*b + i*b + j, h, w] */
        const float *y = t->out[0].data;
        for (int c = 0; c < 2; c++)
            for (int h = 0; h < 2; h++)
                for (int i = 0; i < 2; i++)
                    for (int w = 0; w < 3; w++)
                        for (int j = 0; j < 2; j++) {
                            int ic = crd ? c * 4 + i * 2 + j : (i * 2 + j) * 2 + c;
                            float want = (float)(ic * 6 + h * 3 + w);
                            assert_float_equal(y[(c * 4 + h * 2 + i) * 6 + w * 2 + j], want, 0);
                        }
        if (!crd) { /* SpaceToDepth inverts DCR DepthToSpace */
            fa_tensor *yt = fa_graph_out(t->g, n, 0);
            assert_int_equal(fa_tensor_set_data(t->ctx, yt, y, 48 * 4), FA_OK);
            fa_node *m = t_node(t, "SpaceToDepth", 1, Y, 1, (const char *[]){"z"});
            fa_node_add_attr_int(t->g, m, "blocksize", b);
            free(t->out[0].data);
            t->n_out = 0;
            assert_int_equal(t_run(t, m), FA_OK);
            assert_dims(&t->out[0], 4, d);
            float want[48];
            for (int i = 0; i < 48; i++) want[i] = (float)i;
            assert_f32(&t->out[0], want, 48);
        }
        t_free(t);
    }
}

/* ------------------------------------------------------------ registry / cost */

static void test_registry_has_every_shape_op_with_pattern_and_kernel(void **s)
{
    const char *ops[] = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat",
                         "Split", "Slice", "Gather", "GatherElements", "GatherND", "Expand", "Tile", "Pad", "Shape",
                         "Size", "Constant", "ConstantOfShape", "Range", "OneHot", "NonZero",
                         "DepthToSpace", "SpaceToDepth"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        const fa_op *op = fa_op_find("", ops[i]);
        assert_non_null(op);
        assert_non_null(op->infer);
        assert_non_null(op->kernel);
        assert_non_null(op->doc);
        assert_true(op->pattern == FA_PATTERN_INJECTIVE || op->pattern == FA_PATTERN_BROADCAST ||
                    op->pattern == FA_PATTERN_OPAQUE);
    }
    assert_int_equal(fa_op_find("", "Transpose")->pattern, FA_PATTERN_INJECTIVE);
    assert_int_equal(fa_op_find("", "Expand")->pattern, FA_PATTERN_BROADCAST);
    assert_true(fa_op_find("ai.onnx", "Reshape")->flags & FA_OPF_ALIAS);
}

static void test_cost_injective_zero_flops_bytes_in_plus_out(void **s)
{
    T *t = t_new(13);
    int64_t d[2] = {4, 8}, di[1] = {2};
    t_iota(t, "x", 2, d);
    t_tensor(t, "i", FA_DTYPE_INT64, 1, di, (int64_t[]){0, 3});
    fa_node *n = t_node(t, "Transpose", 1, X, 1, Y);
    assert_int_equal(t_infer(t, n), FA_OK);
    fa_op_cost c;
    fa_node_cost(t->g, n, &c);
    assert_int_equal(c.flops, 0);
    assert_int_equal(c.bytes_read, 128);
    assert_int_equal(c.bytes_written, 128);
    /* Gather reads only the gathered rows (2 rows of 8 floats) + the indices */
    fa_node *m = t_node(t, "Gather", 2, (const char *[]){"x", "i"}, 1, (const char *[]){"z"});
    assert_int_equal(t_infer(t, m), FA_OK);
    fa_node_cost(t->g, m, &c);
    assert_int_equal(c.flops, 0);
    assert_int_equal(c.bytes_written, 64);
    assert_int_equal(c.bytes_read, 64 + 16);
    t_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reshape_zero_copies_dim_and_minus_one_inferred),
        cmocka_unit_test(test_reshape_opset4_shape_attribute),
        cmocka_unit_test(test_reshape_allowzero_keeps_zero_dim),
        cmocka_unit_test(test_reshape_incompatible_size_is_input_error),
        cmocka_unit_test(test_reshape_two_minus_ones_is_input_error),
        cmocka_unit_test(test_reshape_runtime_shape_is_unsupported),
        cmocka_unit_test(test_flatten_axes_zero_negative_and_rank),
        cmocka_unit_test(test_transpose_default_reverses_axes),
        cmocka_unit_test(test_transpose_perm_on_uint8_and_float16),
        cmocka_unit_test(test_transpose_and_pad_multithreaded_match_formula),
        cmocka_unit_test(test_transpose_random_perms_match_formula),
        cmocka_unit_test(test_transpose_bad_perm_is_input_error),
        cmocka_unit_test(test_concat_negative_axis_int64),
        cmocka_unit_test(test_concat_rank_or_dim_mismatch_is_input_error),
        cmocka_unit_test(test_split_opset11_attribute_sizes),
        cmocka_unit_test(test_split_opset13_input_sizes),
        cmocka_unit_test(test_split_opset18_num_outputs_uneven_last_chunk),
        cmocka_unit_test(test_split_equal_parts_must_divide),
        cmocka_unit_test(test_slice_opset9_attributes),
        cmocka_unit_test(test_slice_opset13_negative_step_axes_and_clamping),
        cmocka_unit_test(test_slice_empty_result_and_zero_step_error),
        cmocka_unit_test(test_squeeze_opset11_attribute_vs_opset13_input),
        cmocka_unit_test(test_squeeze_non_unit_axis_is_input_error),
        cmocka_unit_test(test_unsqueeze_opset11_attribute_vs_opset13_input),
        cmocka_unit_test(test_gather_axis1_negative_indices),
        cmocka_unit_test(test_gather_scalar_index_drops_axis_and_range_checked),
        cmocka_unit_test(test_gather_elements_axis0),
        cmocka_unit_test(test_gather_elements_rows_every_axis),
        cmocka_unit_test(test_gathernd_tuples_select_elements_and_rows),
        cmocka_unit_test(test_gathernd_batch_dims_and_errors),
        cmocka_unit_test(test_expand_bidirectional_broadcast),
        cmocka_unit_test(test_expand_incompatible_shape_is_input_error),
        cmocka_unit_test(test_tile_repeats),
        cmocka_unit_test(test_pad_opset2_attribute_constant_value),
        cmocka_unit_test(test_pad_opset11_inputs_reflect_edge_and_crop),
        cmocka_unit_test(test_pad_opset18_axes_input),
        cmocka_unit_test(test_shape_start_end_and_size),
        cmocka_unit_test(test_constant_value_forms),
        cmocka_unit_test(test_constant_of_shape_default_and_int_value),
        cmocka_unit_test(test_range_int_float_and_negative_delta),
        cmocka_unit_test(test_range_runtime_limit_is_unsupported),
        cmocka_unit_test(test_onehot_negative_index_and_axis0),
        cmocka_unit_test(test_nonzero_constant_only),
        cmocka_unit_test(test_depth_to_space_dcr_crd_and_space_to_depth_roundtrip),
        cmocka_unit_test(test_registry_has_every_shape_op_with_pattern_and_kernel),
        cmocka_unit_test(test_cost_injective_zero_flops_bytes_in_plus_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
