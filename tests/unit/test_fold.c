/* tests/unit/test_fold — constant folding of shape-computation subgraphs by fa_graph_prepare:
 * hand-built graphs whose input has a static shape; after prepare only the compute nodes are
 * live, g->n_folded counts the folded ones, and the folded values (Reshape targets, the Size
 * divisor, ConstantOfShape fills, Range outputs) are right. Also: the folded *_expanded
 * conformance graphs keep the compute-node sequence of a hand-written decomposition. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "runtime/runtime.h"
#include "testutil.h"

typedef struct F {
    fa_ctx *ctx;
    fa_graph *g;
} F;

static F f_new(int opset, int rank, const int64_t *xdims)
{
    F f = {fa_ctx_create(), fa_graph_create("fold")};
    assert_int_equal(fa_graph_set_opset(f.ctx, f.g, "", opset), FA_OK);
    int id = fa_graph_tensor(f.g, "x");
    fa_tensor_set_shape(f.g->tensors[id], FA_DTYPE_FLOAT, rank, xdims);
    assert_int_equal(fa_graph_add_input(f.ctx, f.g, id), FA_OK);
    return f;
}

static void f_free(F *f)
{
    fa_graph_free(f->g);
    fa_ctx_free(f->ctx);
}

/* An int64 initializer (rank 0 when n < 0: a scalar holding v[0]). */
static void f_i64(F *f, const char *name, int n, const int64_t *v)
{
    int id = fa_graph_tensor(f->g, name);
    int64_t d = n;
    fa_tensor_set_shape(f->g->tensors[id], FA_DTYPE_INT64, n < 0 ? 0 : 1, &d);
    assert_int_equal(fa_tensor_set_data(f->ctx, f->g->tensors[id], v, sizeof(int64_t) * (size_t)(n < 0 ? 1 : n)), FA_OK);
    f->g->tensors[id]->flags |= FA_TENSOR_INITIALIZER;
}

static fa_node *f_node(F *f, const char *op, int n_in, const char *const *in, const char *out)
{
    fa_node *n = fa_graph_add_node(f->ctx, f->g, NULL, op, "", n_in, in, 1, &out);
    assert_non_null(n);
    return n;
}

static void f_output(F *f, const char *name)
{
    assert_int_equal(fa_graph_add_output(f->ctx, f->g, fa_graph_find_tensor(f->g, name)), FA_OK);
}

static void f_prepare(F *f)
{
    fa_status st = fa_graph_prepare(f->ctx, f->g, NULL);
    if (st) fprintf(stderr, "prepare: %s\n", fa_ctx_errmsg(f->ctx));
    assert_int_equal(st, FA_OK);
}

/* The live nodes' op types in topological order, joined by spaces. */
static const char *live_ops(const fa_graph *g, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = 0;
    for (int k = 0; k < g->n_topo && off < cap; k++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%s", k ? " " : "", g->nodes[g->topo[k]]->op_type);
    return buf;
}

static const fa_tensor *T(const F *f, const char *name)
{
    int id = fa_graph_find_tensor(f->g, name);
    assert_true(id >= 0);
    return f->g->tensors[id];
}

static void assert_const_i64(const fa_tensor *t, int n, const int64_t *want)
{
    assert_true(t->flags & FA_TENSOR_CONST);
    assert_non_null(t->data);
    assert_int_equal(t->nbytes, sizeof(int64_t) * (size_t)n);
    for (int i = 0; i < n; i++) assert_int_equal(((const int64_t *)t->data)[i], want[i]);
}

/* PyTorch's x.view(x.size(0), -1): Shape → Gather → Unsqueeze → Concat → Reshape. */
static void test_fold_shape_gather_unsqueeze_concat_reshape(void **s)
{
    int64_t xd[3] = {2, 3, 4};
    F f = f_new(13, 3, xd);
    f_i64(&f, "zero", -1, (int64_t[]){0});
    f_i64(&f, "ax0", 1, (int64_t[]){0});
    f_i64(&f, "minus1", 1, (int64_t[]){-1});
    f_node(&f, "Shape", 1, (const char *[]){"x"}, "s");
    f_node(&f, "Gather", 2, (const char *[]){"s", "zero"}, "d0");
    f_node(&f, "Unsqueeze", 2, (const char *[]){"d0", "ax0"}, "d0v");
    fa_node *c = f_node(&f, "Concat", 2, (const char *[]){"d0v", "minus1"}, "ns");
    fa_node_add_attr_int(f.g, c, "axis", 0);
    f_node(&f, "Reshape", 2, (const char *[]){"x", "ns"}, "y");
    f_output(&f, "y");
    f_prepare(&f);
    char buf[256];
    assert_string_equal(live_ops(f.g, buf, sizeof buf), "Reshape");
    assert_int_equal(f.g->n_folded, 4);
    assert_const_i64(T(&f, "ns"), 2, (int64_t[]){2, -1});
    const fa_tensor *y = T(&f, "y");
    assert_int_equal(y->rank, 2);
    assert_int_equal(y->dims[0], 2);
    assert_int_equal(y->dims[1], 12);
    f_free(&f);
}

/* x.view(*x.shape[:2], -1): Shape → Slice → Concat → Reshape. */
static void test_fold_shape_slice_concat_reshape(void **s)
{
    int64_t xd[4] = {2, 3, 4, 5};
    F f = f_new(13, 4, xd);
    f_i64(&f, "st", 1, (int64_t[]){0});
    f_i64(&f, "en", 1, (int64_t[]){2});
    f_i64(&f, "minus1", 1, (int64_t[]){-1});
    f_node(&f, "Shape", 1, (const char *[]){"x"}, "s");
    f_node(&f, "Slice", 3, (const char *[]){"s", "st", "en"}, "s01");
    fa_node *c = f_node(&f, "Concat", 2, (const char *[]){"s01", "minus1"}, "ns");
    fa_node_add_attr_int(f.g, c, "axis", 0);
    f_node(&f, "Reshape", 2, (const char *[]){"x", "ns"}, "y");
    f_output(&f, "y");
    f_prepare(&f);
    char buf[256];
    assert_string_equal(live_ops(f.g, buf, sizeof buf), "Reshape");
    assert_int_equal(f.g->n_folded, 3);
    assert_const_i64(T(&f, "ns"), 3, (int64_t[]){2, 3, -1});
    const fa_tensor *y = T(&f, "y");
    assert_int_equal(y->rank, 3);
    assert_int_equal(y->dims[2], 20);
    f_free(&f);
}

/* mean by hand: x / Cast(Size(x)); the divisor folds to 24.0f and the executor uses it. */
static void test_fold_size_cast_div(void **s)
{
    int64_t xd[3] = {2, 3, 4};
    F f = f_new(13, 3, xd);
    f_node(&f, "Size", 1, (const char *[]){"x"}, "n");
    fa_node *c = f_node(&f, "Cast", 1, (const char *[]){"n"}, "nf");
    fa_node_add_attr_int(f.g, c, "to", FA_DTYPE_FLOAT);
    f_node(&f, "Div", 2, (const char *[]){"x", "nf"}, "y");
    f_output(&f, "y");
    f_prepare(&f);
    char buf[256];
    assert_string_equal(live_ops(f.g, buf, sizeof buf), "Div");
    assert_int_equal(f.g->n_folded, 2);
    const fa_tensor *nf = T(&f, "nf");
    assert_true(nf->flags & FA_TENSOR_CONST);
    assert_int_equal(nf->dtype, FA_DTYPE_FLOAT);
    assert_int_equal(nf->rank, 0);
    assert_float_equal(*(const float *)nf->data, 24.0f, 0);

    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1};
    assert_int_equal(fa_exec_create(f.ctx, f.g, &eo, &e), FA_OK);
    float xv[24];
    for (int i = 0; i < 24; i++) xv[i] = (float)(i * 3);
    fa_value xin = {.data = xv, .dtype = FA_DTYPE_FLOAT, .rank = 3, .dims = {2, 3, 4}};
    assert_int_equal(fa_exec_set_input(f.ctx, e, 0, &xin), FA_OK);
    assert_int_equal(fa_exec_run(f.ctx, e, NULL), FA_OK);
    const fa_value *y = fa_exec_output(e, 0);
    assert_non_null(y);
    for (int i = 0; i < 24; i++) assert_float_equal(((const float *)y->data)[i], xv[i] / 24.0f, 1e-6);
    fa_exec_free(e);
    f_free(&f);
}

/* torch.ones_like(x) + x: Shape → ConstantOfShape folds into a constant of x's shape. */
static void test_fold_constant_of_shape_of_computed_shape(void **s)
{
    int64_t xd[2] = {2, 3};
    F f = f_new(13, 2, xd);
    f_node(&f, "Relu", 1, (const char *[]){"x"}, "h"); /* Shape of a computed tensor still folds */
    f_node(&f, "Shape", 1, (const char *[]){"h"}, "s");
    f_node(&f, "ConstantOfShape", 1, (const char *[]){"s"}, "zeros");
    f_node(&f, "Add", 2, (const char *[]){"h", "zeros"}, "y");
    f_output(&f, "y");
    f_prepare(&f);
    char buf[256];
    assert_string_equal(live_ops(f.g, buf, sizeof buf), "Relu Add");
    assert_int_equal(f.g->n_folded, 2);
    const fa_tensor *z = T(&f, "zeros");
    assert_true(z->flags & FA_TENSOR_CONST);
    assert_int_equal(z->dtype, FA_DTYPE_FLOAT);
    assert_int_equal(z->rank, 2);
    assert_int_equal(z->dims[0], 2);
    assert_int_equal(z->dims[1], 3);
    assert_int_equal(z->nbytes, 24);
    for (int i = 0; i < 6; i++) assert_float_equal(((const float *)z->data)[i], 0.0f, 0);
    f_free(&f);
}

/* position ids: Range(0, Shape(x)[1], 1) → Cast → Add broadcast over rows. */
static void test_fold_range_of_computed_limit(void **s)
{
    int64_t xd[2] = {2, 3};
    F f = f_new(13, 2, xd);
    f_i64(&f, "one_s", -1, (int64_t[]){1});
    f_i64(&f, "zero_s", -1, (int64_t[]){0});
    f_node(&f, "Shape", 1, (const char *[]){"x"}, "s");
    f_node(&f, "Gather", 2, (const char *[]){"s", "one_s"}, "len");
    f_node(&f, "Range", 3, (const char *[]){"zero_s", "len", "one_s"}, "pos");
    fa_node *c = f_node(&f, "Cast", 1, (const char *[]){"pos"}, "posf");
    fa_node_add_attr_int(f.g, c, "to", FA_DTYPE_FLOAT);
    f_node(&f, "Add", 2, (const char *[]){"x", "posf"}, "y");
    f_output(&f, "y");
    f_prepare(&f);
    char buf[256];
    assert_string_equal(live_ops(f.g, buf, sizeof buf), "Add");
    assert_int_equal(f.g->n_folded, 4);
    assert_const_i64(T(&f, "pos"), 3, (int64_t[]){0, 1, 2});
    const fa_tensor *pf = T(&f, "posf");
    assert_true(pf->flags & FA_TENSOR_CONST);
    for (int i = 0; i < 3; i++) assert_float_equal(((const float *)pf->data)[i], (float)i, 0);
    f_free(&f);
}

/* A foldable node that produces a graph output stays live (the model keeps its interface),
 * and a ConstantOfShape over the max_const_bytes cap is not folded. */
static void test_fold_keeps_graph_outputs_and_respects_size_cap(void **s)
{
    int64_t xd[2] = {4, 4};
    F f = f_new(13, 2, xd);
    f_node(&f, "Shape", 1, (const char *[]){"x"}, "s");
    f_node(&f, "ConstantOfShape", 1, (const char *[]){"s"}, "z");
    f_node(&f, "Add", 2, (const char *[]){"x", "z"}, "y");
    f_node(&f, "Size", 1, (const char *[]){"x"}, "n");
    f_output(&f, "y");
    f_output(&f, "n");
    fa_load_options o = {.max_const_bytes = 32}; /* z is 64 bytes */
    assert_int_equal(fa_graph_prepare(f.ctx, f.g, &o), FA_OK);
    char buf[256];
    /* Kahn order, ties in file order: ConstantOfShape and Size are both ready first */
    assert_string_equal(live_ops(f.g, buf, sizeof buf), "ConstantOfShape Size Add");
    assert_int_equal(f.g->n_folded, 1);
    assert_const_i64(T(&f, "s"), 2, (int64_t[]){4, 4});
    assert_false(T(&f, "z")->flags & FA_TENSOR_CONST);
    f_free(&f);
}

/* Folding has a budget for the whole load: a tiny model whose ConstantOfShape of 64 MiB feeds
 * eight Negs (512 MiB of folded outputs from a few bytes of constants) folds what fits under the
 * 256 MiB floor and leaves the rest as nodes (it held 10.5 GB at load with 1 GiB each); a MatMul
 * of two 2048 x 2048 constants (2^34 FLOPs, over one fold's 2^32) is left to run with the model. */
static void test_fold_budget_bounds_the_whole_load(void **s)
{
    (void)s;
    int64_t xd[2] = {1, 1};
    F f = f_new(13, 2, xd);
    f_i64(&f, "shp", 2, (int64_t[]){4096, 4096}); /* 64 MiB of float zeros */
    fa_node *cs = f_node(&f, "ConstantOfShape", 1, (const char *[]){"shp"}, "z");
    (void)cs;
    const char *negs[8] = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"};
    for (int i = 0; i < 8; i++) f_node(&f, "Neg", 1, (const char *[]){"z"}, negs[i]);
    f_node(&f, "Sum", 8, negs, "sum");
    f_node(&f, "Add", 2, (const char *[]){"x", "sum"}, "y");
    f_output(&f, "y");
    f_prepare(&f);
    uint64_t folded = 0;
    for (int i = 0; i < f.g->n_tensors; i++) {
        const fa_tensor *t = f.g->tensors[i];
        if ((t->flags & FA_TENSOR_CONST) && t->data && t->dtype == FA_DTYPE_FLOAT) folded += fa_tensor_bytes(t);
    }
    if (folded > ((uint64_t)256 << 20)) fail_msg("%llu bytes folded, over the 256 MiB floor", (unsigned long long)folded);
    assert_false(T(&f, "sum")->flags & FA_TENSOR_CONST);
    f_free(&f);

    F m = f_new(13, 2, xd);
    f_i64(&m, "shp", 2, (int64_t[]){2048, 2048});
    f_node(&m, "ConstantOfShape", 1, (const char *[]){"shp"}, "a");
    f_node(&m, "MatMul", 2, (const char *[]){"a", "a"}, "p");
    f_node(&m, "ReduceSum", 1, (const char *[]){"p"}, "r");
    f_node(&m, "Add", 2, (const char *[]){"x", "r"}, "y");
    f_output(&m, "y");
    f_prepare(&m);
    assert_true(T(&m, "a")->flags & FA_TENSOR_CONST);   /* 16 MiB: folded */
    assert_false(T(&m, "p")->flags & FA_TENSOR_CONST);  /* 2^34 FLOPs: a node */
    f_free(&m);

    /* the same product feeding a Reshape's shape: a small shape value is folded past the byte
     * budget, never past the work one (12 s a copy at load before); the load is refused instead */
    F r = f_new(13, 2, xd);
    f_i64(&r, "sa", 2, (int64_t[]){256, 65536}); /* 64 MiB each; the product 256 KiB, 2^33 FLOPs */
    f_i64(&r, "sb", 2, (int64_t[]){65536, 256});
    f_node(&r, "ConstantOfShape", 1, (const char *[]){"sa"}, "a");
    f_node(&r, "ConstantOfShape", 1, (const char *[]){"sb"}, "b");
    f_node(&r, "MatMul", 2, (const char *[]){"a", "b"}, "p");
    f_node(&r, "ReduceSum", 1, (const char *[]){"p"}, "s");
    fa_node *cast = f_node(&r, "Cast", 1, (const char *[]){"s"}, "si");
    fa_node_add_attr_int(r.g, cast, "to", FA_DTYPE_INT64);
    f_node(&r, "Reshape", 2, (const char *[]){"x", "si"}, "y");
    f_output(&r, "y");
    fa_load_options o = {0};
    assert_int_not_equal(fa_graph_prepare(r.ctx, r.g, &o), FA_OK);
    assert_false(T(&r, "p")->flags & FA_TENSOR_CONST);
    f_free(&r);
}

/* A real model's weight standardization folds whole (BiT's WeightStandardizedConv2d: mean and
 * variance of each output channel's weights, then (W - mean) / sqrt(var + eps)): its chain
 * touches 9 times the weights and writes 3 times them. Under one budget of four times the
 * constants for both, the Mul and the Div stayed nodes and the convolution's weights were
 * computed at run time (BiT 182 ms against 9 ms once folded). 72 MiB of weights: past the
 * 256 MiB floor, so the factors decide. */
static void test_fold_weight_standardization_chain_whole(void **s)
{
    (void)s;
    enum { O = 2048, I = 1024, K = 3 };
    int64_t xd[4] = {1, I, K, K};
    F f = f_new(13, 4, xd);
    size_t nw = (size_t)O * I * K * K;
    float *w = malloc(nw * sizeof *w);
    assert_non_null(w);
    for (size_t i = 0; i < nw; i++) w[i] = (float)((i * 2654435761u) % 1000) * 0.001f + (float)(i / (I * K * K)) * 0.01f;
    int wid = fa_graph_tensor(f.g, "w");
    int64_t wd[4] = {O, I, K, K};
    fa_tensor_set_shape(f.g->tensors[wid], FA_DTYPE_FLOAT, 4, wd);
    assert_int_equal(fa_tensor_set_data(f.ctx, f.g->tensors[wid], w, nw * sizeof *w), FA_OK);
    f.g->tensors[wid]->flags |= FA_TENSOR_INITIALIZER;
    int eid = fa_graph_tensor(f.g, "eps");
    float eps = 1e-5f;
    fa_tensor_set_shape(f.g->tensors[eid], FA_DTYPE_FLOAT, 0, NULL);
    assert_int_equal(fa_tensor_set_data(f.ctx, f.g->tensors[eid], &eps, sizeof eps), FA_OK);
    f.g->tensors[eid]->flags |= FA_TENSOR_INITIALIZER;
    const int64_t axes[3] = {1, 2, 3};
    fa_node *m = f_node(&f, "ReduceMean", 1, (const char *[]){"w"}, "mean");
    fa_node_add_attr_ints(f.g, m, "axes", axes, 3);
    f_node(&f, "Sub", 2, (const char *[]){"w", "mean"}, "d");
    f_node(&f, "Mul", 2, (const char *[]){"d", "d"}, "sq");
    fa_node *v = f_node(&f, "ReduceMean", 1, (const char *[]){"sq"}, "var");
    fa_node_add_attr_ints(f.g, v, "axes", axes, 3);
    f_node(&f, "Add", 2, (const char *[]){"var", "eps"}, "ve");
    f_node(&f, "Sqrt", 1, (const char *[]){"ve"}, "sd");
    f_node(&f, "Div", 2, (const char *[]){"d", "sd"}, "ws");
    f_node(&f, "Conv", 2, (const char *[]){"x", "ws"}, "y");
    f_output(&f, "y");
    f_prepare(&f);
    const fa_tensor *ws = T(&f, "ws");
    assert_true((ws->flags & FA_TENSOR_CONST) && ws->data);
    char buf[64];
    assert_string_equal(live_ops(f.g, buf, sizeof buf), "Conv");
    /* each output channel standardized: mean 0, variance 1 (to float32 rounding) */
    const float *x = ws->data;
    for (int o = 0; o < O; o += 511) {
        double sum = 0, sq = 0;
        for (size_t i = 0; i < (size_t)I * K * K; i++) {
            double e = x[(size_t)o * I * K * K + i];
            sum += e, sq += e * e;
        }
        double n = (double)I * K * K, mu = sum / n;
        if (fabs(mu) > 1e-4 || fabs(sq / n - mu * mu - 1.0) > 1e-3) fail_msg("channel %d: mean %g variance %g", o, mu, sq / n - mu * mu);
    }
    free(w);
    f_free(&f);
}

/* --no-fold keeps constant subgraphs as nodes, except the values a shape rule reads: Shape ->
 * ConstantOfShape (its shape: folded, as every export needs) -> Add to x stays a node, and a
 * constant Neg whose value only flows into the data (an Add) stays a node too; the model had not
 * loaded at all ("input 0 must be a constant (computed at run time is not supported)"). */
static void test_no_fold_still_folds_what_a_shape_reads(void **s)
{
    int64_t xd[2] = {4, 4};
    F f = f_new(13, 2, xd);
    f_i64(&f, "c", 2, (int64_t[]){4, 4});
    f_node(&f, "Identity", 1, (const char *[]){"c"}, "shp"); /* a constant the shape slot reads */
    f_node(&f, "ConstantOfShape", 1, (const char *[]){"shp"}, "z");
    f_node(&f, "Neg", 1, (const char *[]){"z"}, "nz");     /* a constant value, not a shape */
    f_node(&f, "Add", 2, (const char *[]){"x", "nz"}, "y");
    f_output(&f, "y");
    fa_load_options o = {.no_fold = true};
    if (fa_graph_prepare(f.ctx, f.g, &o)) fail_msg("prepare --no-fold: %s", fa_ctx_errmsg(f.ctx));
    char buf[256];
    assert_string_equal(live_ops(f.g, buf, sizeof buf), "ConstantOfShape Neg Add");
    assert_int_equal(f.g->n_folded, 1);
    assert_const_i64(T(&f, "shp"), 2, (int64_t[]){4, 4});
    f_free(&f);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Load a corpus *_expanded model; its live op types after folding, sorted, space-joined. */
static bool corpus_live_ops_sorted(const char *test, char *buf, size_t cap, int *n_folded)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/onnx/node/%s/model.onnx", fa_test_corpus(), test);
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    fa_status st = fa_graph_load(ctx, path, NULL, &g);
    if (st) fprintf(stderr, "%s: %s\n", test, fa_ctx_errmsg(ctx));
    bool ok = st == FA_OK;
    if (ok) {
        const char **ops = calloc((size_t)g->n_topo + 1, sizeof *ops);
        for (int k = 0; k < g->n_topo; k++) ops[k] = g->nodes[g->topo[k]]->op_type;
        qsort(ops, (size_t)g->n_topo, sizeof *ops, cmp_str);
        size_t off = 0;
        buf[0] = 0;
        for (int k = 0; k < g->n_topo && off < cap; k++)
            off += (size_t)snprintf(buf + off, cap - off, "%s%s", k ? " " : "", ops[k]);
        free(ops);
        *n_folded = g->n_folded;
    }
    fa_graph_free(g);
    fa_ctx_free(ctx);
    return ok;
}

/* The decomposed LayerNormalization, Softmax and GELU keep, after folding, exactly the compute nodes
 * of their ONNX function bodies, with the shape plumbing (Shape, Size, Slice, Sub on ranks,
 * ConstantOfShape, Concat, Constant) gone:
 *  LayerNormalization-17 (stash_type float, Scale/B are graph inputs here): Flatten(X),
 *    Cast(X2D), ReduceMean, Mul(XU,XU), ReduceMean, Mul(Mean,Mean), Sub(var), Add(eps),
 *    Sqrt, Sub(deviation), Div, Cast(back), Flatten(Scale), Mul, Flatten(B), Add,
 *    Reshape(Y), Reciprocal, Reshape(Mean), Reshape(InvStdDev).
 *  Softmax-13: ReduceMax, Sub, Exp, ReduceSum, Div.
 * Compared as sorted multisets (the topological interleaving is not the point). */
static void test_fold_expanded_patterns_keep_compute_sequence(void **s)
{
    if (!fa_test_corpus()) skip();
    struct { const char *test, *want; } cases[] = {
        {"test_layer_normalization_4d_axis_negative_1_expanded",
         "Add Add Cast Cast Div Flatten Flatten Flatten Mul Mul Mul Reciprocal ReduceMean ReduceMean "
         "Reshape Reshape Reshape Sqrt Sub Sub"},
        {"test_layer_normalization_3d_axis1_epsilon_expanded_ver18",
         "Add Add Cast Cast Div Flatten Flatten Flatten Mul Mul Mul Reciprocal ReduceMean ReduceMean "
         "Reshape Reshape Reshape Sqrt Sub Sub"},
        {"test_softmax_axis_1_expanded", "Div Exp ReduceMax ReduceSum Sub"},
        {"test_softmax_negative_axis_expanded_ver18", "Div Exp ReduceMax ReduceSum Sub"},
        /* Gelu-20 (approximate none): Y = X * 0.5 * (1 + Erf(X / sqrt(2))) once CastLike of the
         * constants folds: Div, Erf, Sum (the +1), Mul, Mul. */
        {"test_gelu_default_1_expanded", "Div Erf Mul Mul Sum"},
        {"test_gelu_default_2_expanded", "Div Erf Mul Mul Sum"},
        /* Gelu-20 (approximate tanh): 0.5 * X * (1 + Tanh(sqrt(2/pi) * (X + 0.044715 * Pow(X, 3)))) */
        {"test_gelu_tanh_1_expanded", "Mul Mul Mul Mul Pow Sum Sum Tanh"},
        {"test_gelu_tanh_2_expanded", "Mul Mul Mul Mul Pow Sum Sum Tanh"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[1024];
        int folded = 0;
        assert_true(corpus_live_ops_sorted(cases[i].test, buf, sizeof buf, &folded));
        if (strcmp(buf, cases[i].want) != 0) {
            fprintf(stderr, "%s: live ops '%s', expected '%s' (%d folded)\n", cases[i].test, buf, cases[i].want, folded);
            fail();
        }
        assert_true(folded > 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold_shape_gather_unsqueeze_concat_reshape),
        cmocka_unit_test(test_no_fold_still_folds_what_a_shape_reads),
        cmocka_unit_test(test_fold_shape_slice_concat_reshape),
        cmocka_unit_test(test_fold_size_cast_div),
        cmocka_unit_test(test_fold_constant_of_shape_of_computed_shape),
        cmocka_unit_test(test_fold_range_of_computed_limit),
        cmocka_unit_test(test_fold_keeps_graph_outputs_and_respects_size_cap),
        cmocka_unit_test(test_fold_budget_bounds_the_whole_load),
        cmocka_unit_test(test_fold_weight_standardization_chain_whole),
        cmocka_unit_test(test_fold_expanded_patterns_keep_compute_sequence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
