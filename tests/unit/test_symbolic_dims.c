/* Models as exporters write them, with symbolic batch/sequence dims: unbound dims default to 1
 * (listed once, stored with the run), --no-dim-defaults lists every unbound dim in one message,
 * --shape/--batch override, exec takes shapes from its input files, and an exported model keeps
 * the original's symbolic dims (shape subgraphs that follow them stay nodes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"

#include "graph/graph.h"
#include "store/store.h"

static void set_input(fa_ctx *ctx, fa_graph *g, const char *name, int rank, const int64_t *dims, const char *const *params)
{
    int id = fa_graph_tensor(g, name);
    fa_tensor_set_shape(g->tensors[id], FA_DTYPE_FLOAT, rank, dims);
    for (int d = 0; d < rank; d++) g->tensors[id]->dim_params[d] = params[d];
    assert_int_equal(fa_graph_add_input(ctx, g, id), FA_OK);
}

static void set_i64(fa_ctx *ctx, fa_graph *g, const char *name, int n, const int64_t *v)
{
    int id = fa_graph_tensor(g, name);
    int64_t d[1] = {n};
    fa_tensor_set_shape(g->tensors[id], FA_DTYPE_INT64, n ? 1 : 0, d);
    assert_int_equal(fa_tensor_set_data(ctx, g->tensors[id], v, sizeof(int64_t) * (size_t)(n ? n : 1)), FA_OK);
    g->tensors[id]->flags |= FA_TENSOR_INITIALIZER;
}

/* x[batch, seq, 4] -> Relu -> y; m[batch, ?] -> Neg -> z (an unnamed symbolic dim). */
static const char *write_two_input_model(fa_ctx *ctx)
{
    fa_graph *g = fa_graph_create("two");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 17), FA_OK);
    set_input(ctx, g, "x", 3, (int64_t[]){-1, -1, 4}, (const char *[]){"batch", "seq", NULL});
    set_input(ctx, g, "m", 2, (int64_t[]){-1, -1}, (const char *[]){"batch", NULL});
    assert_non_null(fa_graph_add_node(ctx, g, "relu", "Relu", "", 1, (const char *[]){"x"}, 1, (const char *[]){"y"}));
    assert_non_null(fa_graph_add_node(ctx, g, "neg", "Neg", "", 1, (const char *[]){"m"}, 1, (const char *[]){"z"}));
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y")), FA_OK);
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "z")), FA_OK);
    const char *path = fa_test_path(fa_test_tmpdir(), "two.onnx");
    assert_int_equal(fa_onnx_export(ctx, g, path), FA_OK);
    fa_graph_free(g);
    return path;
}

/* x[batch, 3, 4] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) -> Relu -> y:
 * the exporters' flatten that keeps the batch dim. */
static const char *write_shape_subgraph_model(fa_ctx *ctx)
{
    fa_graph *g = fa_graph_create("flat");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 17), FA_OK);
    set_input(ctx, g, "x", 3, (int64_t[]){-1, 3, 4}, (const char *[]){"batch", NULL, NULL});
    set_i64(ctx, g, "zero", 0, (int64_t[]){0});
    set_i64(ctx, g, "axes", 1, (int64_t[]){0});
    set_i64(ctx, g, "minus1", 1, (int64_t[]){-1});
    assert_non_null(fa_graph_add_node(ctx, g, "/shape/Shape", "Shape", "", 1, (const char *[]){"x"}, 1, (const char *[]){"s"}));
    fa_node *ga = fa_graph_add_node(ctx, g, "/shape/Gather", "Gather", "", 2, (const char *[]){"s", "zero"}, 1,
                                    (const char *[]){"b"});
    assert_non_null(ga);
    assert_non_null(fa_node_add_attr_int(g, ga, "axis", 0));
    assert_non_null(fa_graph_add_node(ctx, g, "/shape/Unsqueeze", "Unsqueeze", "", 2, (const char *[]){"b", "axes"}, 1,
                                      (const char *[]){"bu"}));
    fa_node *cc = fa_graph_add_node(ctx, g, "/shape/Concat", "Concat", "", 2, (const char *[]){"bu", "minus1"}, 1,
                                    (const char *[]){"shp"});
    assert_non_null(cc);
    assert_non_null(fa_node_add_attr_int(g, cc, "axis", 0));
    assert_non_null(fa_graph_add_node(ctx, g, "/Reshape", "Reshape", "", 2, (const char *[]){"x", "shp"}, 1,
                                      (const char *[]){"r"}));
    assert_non_null(fa_graph_add_node(ctx, g, "/Relu", "Relu", "", 1, (const char *[]){"r"}, 1, (const char *[]){"y"}));
    int y = fa_graph_find_tensor(g, "y");
    fa_tensor_set_shape(g->tensors[y], FA_DTYPE_FLOAT, 2, (int64_t[]){-1, 12});
    g->tensors[y]->dim_params[0] = "batch";
    assert_int_equal(fa_graph_add_output(ctx, g, y), FA_OK);
    const char *path = fa_test_path(fa_test_tmpdir(), "flat.onnx");
    assert_int_equal(fa_onnx_export(ctx, g, path), FA_OK);
    fa_graph_free(g);
    return path;
}

static const fa_tensor *input(const fa_graph *g, const char *name)
{
    return g->tensors[fa_graph_find_tensor(g, name)];
}

static void test_unbound_dims_default_to_one_each_listed_once(void **s)
{
    fa_ctx *ctx = fa_ctx_create();
    const char *path = write_two_input_model(ctx);
    fa_graph *g = NULL;
    assert_int_equal(fa_graph_load(ctx, path, NULL, &g), FA_OK);
    const fa_tensor *x = input(g, "x"), *m = input(g, "m");
    assert_int_equal(x->dims[0], 1);
    assert_int_equal(x->dims[1], 1);
    assert_int_equal(x->dims[2], 4);
    assert_int_equal(m->dims[0], 1);
    assert_int_equal(m->dims[1], 1);
    /* 'batch' is one dim shared by two inputs */
    assert_int_equal(g->n_dim_defaults, 3);
    assert_string_equal(g->dim_defaults[0], "batch");
    assert_string_equal(g->dim_defaults[1], "seq");
    assert_string_equal(g->dim_defaults[2], "m[1]");
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void test_no_dim_defaults_lists_every_unbound_dim_in_one_message(void **s)
{
    fa_ctx *ctx = fa_ctx_create();
    const char *path = write_two_input_model(ctx);
    fa_graph *g = NULL;
    fa_load_options lo = {0};
    lo.no_dim_defaults = true;
    assert_int_equal(fa_graph_load(ctx, path, &lo, &g), FA_ERR_INPUT);
    assert_null(g);
    const char *msg = fa_ctx_errmsg(ctx);
    assert_non_null(strstr(msg, "two.onnx"));
    assert_non_null(strstr(msg, "3 symbolic input dims are unbound"));
    assert_non_null(strstr(msg, "'batch' (input 'x' dim 0; --shape batch=N)"));
    assert_non_null(strstr(msg, "'seq' (input 'x' dim 1; --shape seq=N)"));
    assert_non_null(strstr(msg, "input 'm' dim 1 (unnamed; --shape m=DIMS)"));
    /* bound ones are not listed */
    fa_shape_binding b[2];
    assert_int_equal(fa_shape_binding_parse(ctx, "seq=5", &b[0]), FA_OK);
    assert_int_equal(fa_shape_binding_parse(ctx, "m=2x7", &b[1]), FA_OK);
    lo.bindings = b;
    lo.n_bindings = 2;
    assert_int_equal(fa_graph_load(ctx, path, &lo, &g), FA_ERR_INPUT);
    msg = fa_ctx_errmsg(ctx);
    assert_non_null(strstr(msg, "1 symbolic input dim is unbound"));
    assert_non_null(strstr(msg, "'batch'"));
    assert_null(strstr(msg, "'seq'"));
    fa_ctx_free(ctx);
}

static void test_shape_and_batch_override_the_default(void **s)
{
    fa_ctx *ctx = fa_ctx_create();
    const char *path = write_two_input_model(ctx);
    fa_shape_binding b[1];
    assert_int_equal(fa_shape_binding_parse(ctx, "seq=5", &b[0]), FA_OK);
    fa_load_options lo = {0};
    lo.bindings = b;
    lo.n_bindings = 1;
    lo.batch = 3;
    fa_graph *g = NULL;
    assert_int_equal(fa_graph_load(ctx, path, &lo, &g), FA_OK);
    assert_int_equal(input(g, "x")->dims[0], 3);
    assert_int_equal(input(g, "x")->dims[1], 5);
    assert_int_equal(input(g, "m")->dims[0], 3);
    assert_int_equal(input(g, "m")->dims[1], 1);
    assert_int_equal(g->n_dim_defaults, 1);
    assert_string_equal(g->dim_defaults[0], "m[1]");
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* The exported model (export of the prepared graph, as model.folded.onnx is made) keeps the
 * symbolic batch: the folded Shape->Gather->Unsqueeze->Concat subgraph is a node chain again,
 * input and output carry dim_param 'batch', and the export prepares at batch 3 with the right
 * shape. Without restoring, the folded constant [1, -1] would flatten batch 3 into [1, 36]. */
static void test_export_keeps_symbolic_dims_and_shape_subgraph(void **s)
{
    fa_ctx *ctx = fa_ctx_create();
    const char *path = write_shape_subgraph_model(ctx);
    fa_graph *g = NULL;
    assert_int_equal(fa_graph_load(ctx, path, NULL, &g), FA_OK);
    assert_int_equal(g->n_folded, 4); /* Shape, Gather, Unsqueeze, Concat folded at batch 1 */
    const char *plain = fa_test_path(fa_test_tmpdir(), "flat-plain.onnx");
    assert_int_equal(fa_onnx_export(ctx, g, plain), FA_OK);
    fa_graph *d = NULL;
    assert_int_equal(fa_onnx_import(ctx, plain, &d), FA_OK);
    assert_int_equal(d->n_nodes, 2); /* Reshape + Relu: the subgraph became the constant [1, -1] */
    assert_int_equal(fa_graph_restore_symbolic(ctx, d, g, NULL), FA_OK);
    assert_int_equal(d->n_nodes, 6);
    const char *sym = fa_test_path(fa_test_tmpdir(), "flat-sym.onnx");
    assert_int_equal(fa_onnx_export(ctx, d, sym), FA_OK);

    fa_graph *raw = NULL;
    assert_int_equal(fa_onnx_import(ctx, sym, &raw), FA_OK);
    const fa_tensor *x = input(raw, "x"), *y = raw->tensors[raw->outputs[0]];
    assert_int_equal(x->dims[0], -1);
    assert_string_equal(x->dim_params[0], "batch");
    assert_int_equal(x->dims[1], 3);
    assert_int_equal(y->dims[0], -1);
    assert_string_equal(y->dim_params[0], "batch");
    assert_int_equal(y->dims[1], 12);
    fa_graph_free(raw);

    fa_shape_binding b[1];
    assert_int_equal(fa_shape_binding_parse(ctx, "batch=3", &b[0]), FA_OK);
    fa_load_options lo = {0};
    lo.bindings = b;
    lo.n_bindings = 1;
    fa_graph *g3 = NULL;
    assert_int_equal(fa_graph_load(ctx, sym, &lo, &g3), FA_OK);
    const fa_tensor *y3 = g3->tensors[g3->outputs[0]];
    assert_int_equal(y3->rank, 2);
    assert_int_equal(y3->dims[0], 3);
    assert_int_equal(y3->dims[1], 12);
    fa_graph_free(g3);
    fa_graph *p3 = NULL; /* the plain export is specialised to batch 1: 'batch' is gone */
    assert_int_equal(fa_graph_load(ctx, plain, &lo, &p3), FA_ERR_USAGE);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "no graph input and no symbolic dim of that name"));
    fa_graph_free(d);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void write_pb(fa_ctx *ctx, const char *dir, int i, int rank, const int64_t *dims)
{
    fa_value v = {0};
    v.dtype = FA_DTYPE_FLOAT;
    v.rank = rank;
    memcpy(v.dims, dims, sizeof(int64_t) * (size_t)rank);
    int64_t n = fa_value_numel(&v);
    float *data = malloc(sizeof(float) * (size_t)n);
    for (int64_t k = 0; k < n; k++) data[k] = (float)k - 3.0f;
    v.data = data;
    char path[4200];
    snprintf(path, sizeof path, "%s/input_%d.pb", dir, i);
    assert_int_equal(fa_tensorproto_write(ctx, path, &v, NULL), FA_OK);
    free(data);
}

/* An integer input (frozen to its file's values as a possible shape parameter) is checked
 * against the shared dims as the others are: ids[batch, seq] and mask[batch, seq] files of 2 x 5
 * and 2 x 3 were taken, and the model failed deep inside (a Qwen2 export's attention Add). */
static void test_exec_checks_shared_dims_of_integer_inputs(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("ids");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 17), FA_OK);
    const char *names[2] = {"ids", "mask"};
    for (int k = 0; k < 2; k++) {
        int id = fa_graph_tensor(g, names[k]);
        fa_tensor_set_shape(g->tensors[id], FA_DTYPE_INT64, 2, (int64_t[]){-1, -1});
        g->tensors[id]->dim_params[0] = "batch";
        g->tensors[id]->dim_params[1] = "seq";
        assert_int_equal(fa_graph_add_input(ctx, g, id), FA_OK);
    }
    assert_non_null(fa_graph_add_node(ctx, g, "add", "Add", "", 2, (const char *[]){"ids", "mask"}, 1, (const char *[]){"y"}));
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y")), FA_OK);
    const char *path = fa_test_path(fa_test_tmpdir(), "ids.onnx");
    assert_int_equal(fa_onnx_export(ctx, g, path), FA_OK);
    fa_graph_free(g);
    char inb[4096], outb[4096];
    snprintf(inb, sizeof inb, "%s", fa_test_path(fa_test_tmpdir(), "ids-in"));
    snprintf(outb, sizeof outb, "%s", fa_test_path(fa_test_tmpdir(), "ids-out"));
    mkdir(inb, 0755);
    for (int k = 0; k < 2; k++) {
        fa_value v = {0};
        v.dtype = FA_DTYPE_INT64;
        v.rank = 2;
        v.dims[0] = 2;
        v.dims[1] = k ? 3 : 5;
        int64_t data[10] = {0};
        v.data = data;
        char pb[4200];
        snprintf(pb, sizeof pb, "%s/input_%d.pb", inb, k);
        assert_int_equal(fa_tensorproto_write(ctx, pb, &v, NULL), FA_OK);
    }
    char *so = NULL, *se = NULL;
    const char *argv[] = {"exec", path, "--inputs", inb, "--outputs", outb, NULL};
    assert_int_equal(fa_test_run_cli(argv, &so, &se), 1);
    if (!strstr(se, "input_1.pb: dim 'seq' of input 'mask' is 3, but") || !strstr(se, "input_0.pb gives it 5"))
        fail_msg("want the shared dim named: %s", se);
    free(so);
    free(se);
    fa_ctx_free(ctx);
}

/* exec runs a dynamic-axes model at its input files' shapes, with no flag; --shape still
 * applies; files that disagree on a shared dim are refused naming both files and the model. */
static void test_exec_takes_shapes_from_input_files(void **s)
{
    fa_ctx *ctx = fa_ctx_create();
    const char *path = write_two_input_model(ctx);
    const char *in = fa_test_path(fa_test_tmpdir(), "in"), *out = fa_test_path(fa_test_tmpdir(), "out");
    char inb[4096], outb[4096];
    snprintf(inb, sizeof inb, "%s", in);
    snprintf(outb, sizeof outb, "%s", out);
    mkdir(inb, 0755);
    write_pb(ctx, inb, 0, 3, (int64_t[]){2, 5, 4});
    write_pb(ctx, inb, 1, 2, (int64_t[]){2, 7});
    char *so = NULL, *se = NULL;
    const char *argv[] = {"exec", path, "--inputs", inb, "--outputs", outb, NULL};
    assert_int_equal(fa_test_run_cli(argv, &so, &se), 0);
    assert_null(strstr(se, "notice")); /* every dim came from the files */
    free(so);
    free(se);
    char op[4200];
    snprintf(op, sizeof op, "%s/output_1.pb", outb);
    fa_value v;
    assert_int_equal(fa_tensorproto_read(ctx, op, &v, NULL), FA_OK);
    assert_int_equal(v.rank, 2);
    assert_int_equal(v.dims[0], 2);
    assert_int_equal(v.dims[1], 7);
    assert_true(((float *)v.data)[0] == 3.0f); /* Neg */
    free(v.data);
    /* a --shape that contradicts the files is refused, naming the model and the file */
    const char *argv2[] = {"exec", path, "--inputs", inb, "--outputs", outb, "--shape", "batch=3", NULL};
    assert_int_equal(fa_test_run_cli(argv2, &so, &se), 1);
    assert_non_null(strstr(se, "two.onnx"));
    assert_non_null(strstr(se, "input_0.pb"));
    free(so);
    free(se);
    /* files that disagree on 'batch' */
    write_pb(ctx, inb, 1, 2, (int64_t[]){3, 7});
    assert_int_equal(fa_test_run_cli(argv, &so, &se), 1);
    assert_non_null(strstr(se, "two.onnx"));
    assert_non_null(strstr(se, "input_1.pb: dim 'batch' of input 'm' is 3, but"));
    assert_non_null(strstr(se, "input_0.pb gives it 2"));
    free(so);
    free(se);
    fa_ctx_free(ctx);
}

/* A model whose batch is fixed at 1 run with --batch 3 on batch-3 input files: the files are
 * checked against the shapes --batch gives (before, the fixed 1 refused them, and batch-1 files
 * were refused by --batch: no combination ran); batch-1 files under --batch 3 are refused naming
 * the option, and the executor's own shape message gives the shape, not only the rank. */
static void test_exec_batch_option_applies_before_the_files_are_checked(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("fixed");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 17), FA_OK);
    set_input(ctx, g, "x", 3, (int64_t[]){1, 5, 4}, (const char *[]){NULL, NULL, NULL});
    assert_non_null(fa_graph_add_node(ctx, g, "relu", "Relu", "", 1, (const char *[]){"x"}, 1, (const char *[]){"y"}));
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y")), FA_OK);
    const char *path = fa_test_path(fa_test_tmpdir(), "fixed.onnx");
    assert_int_equal(fa_onnx_export(ctx, g, path), FA_OK);
    fa_graph_free(g);
    char in3[4096], in1[4096], outb[4096];
    snprintf(in3, sizeof in3, "%s", fa_test_path(fa_test_tmpdir(), "fixed-in3"));
    snprintf(in1, sizeof in1, "%s", fa_test_path(fa_test_tmpdir(), "fixed-in1"));
    snprintf(outb, sizeof outb, "%s", fa_test_path(fa_test_tmpdir(), "fixed-out"));
    mkdir(in3, 0755);
    mkdir(in1, 0755);
    write_pb(ctx, in3, 0, 3, (int64_t[]){3, 5, 4});
    write_pb(ctx, in1, 0, 3, (int64_t[]){1, 5, 4});
    char *so = NULL, *se = NULL;
    const char *argv[] = {"exec", path, "--batch", "3", "--inputs", in3, "--outputs", outb, NULL};
    if (fa_test_run_cli(argv, &so, &se) != 0) fail_msg("exec --batch 3 on batch-3 files: %s", se);
    free(so);
    free(se);
    char op[4200];
    snprintf(op, sizeof op, "%s/output_0.pb", outb);
    fa_value v;
    assert_int_equal(fa_tensorproto_read(ctx, op, &v, NULL), FA_OK);
    assert_int_equal(v.dims[0], 3);
    free(v.data);
    const char *argv1[] = {"exec", path, "--batch", "3", "--inputs", in1, "--outputs", outb, NULL};
    assert_int_equal(fa_test_run_cli(argv1, &so, &se), 1);
    if (!strstr(se, "dim 0 is 3 in the model with --shape/--batch applied, the file holds 1")) fail_msg("%s", se);
    free(so);
    free(se);
    /* the executor's check names both shapes */
    fa_graph *g2 = NULL;
    assert_int_equal(fa_graph_load(ctx, path, NULL, &g2), FA_OK);
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1};
    assert_int_equal(fa_exec_create(ctx, g2, &eo, &e), FA_OK);
    float x[30] = {0};
    fa_value xv = {.data = x, .dtype = FA_DTYPE_FLOAT, .rank = 3, .dims = {2, 5, 3}};
    assert_int_equal(fa_exec_set_input(ctx, e, 0, &xv), FA_ERR_INPUT);
    if (!strstr(fa_ctx_errmsg(ctx), "expected float32 [1x5x4], got float32 [2x5x3]")) fail_msg("%s", fa_ctx_errmsg(ctx));
    fa_exec_free(e);
    fa_graph_free(g2);
    fa_ctx_free(ctx);
}

/* x[batch, seq, 4] + pos[1, 8, 4] (positions of a fixed 8) -> y, and a[1, k] MatMul w[6, 3]:
 * written to path, the first with k absent (x only) or the second alone. */
static const char *write_dims_model(fa_ctx *ctx, bool matmul)
{
    fa_graph *g = fa_graph_create(matmul ? "mm" : "pos");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 17), FA_OK);
    if (matmul) {
        set_input(ctx, g, "a", 2, (int64_t[]){1, -1}, (const char *[]){NULL, "k"});
        int w = fa_graph_tensor(g, "w");
        fa_tensor_set_shape(g->tensors[w], FA_DTYPE_FLOAT, 2, (int64_t[]){6, 3});
        float wv[18] = {0};
        assert_int_equal(fa_tensor_set_data(ctx, g->tensors[w], wv, sizeof wv), FA_OK);
        g->tensors[w]->flags |= FA_TENSOR_INITIALIZER;
        assert_non_null(fa_graph_add_node(ctx, g, "mm", "MatMul", "", 2, (const char *[]){"a", "w"}, 1, (const char *[]){"y"}));
    } else {
        set_input(ctx, g, "x", 3, (int64_t[]){-1, -1, 4}, (const char *[]){"batch", "seq", NULL});
        int pos = fa_graph_tensor(g, "pos");
        fa_tensor_set_shape(g->tensors[pos], FA_DTYPE_FLOAT, 3, (int64_t[]){1, 8, 4});
        float pv[32] = {0};
        assert_int_equal(fa_tensor_set_data(ctx, g->tensors[pos], pv, sizeof pv), FA_OK);
        g->tensors[pos]->flags |= FA_TENSOR_INITIALIZER;
        assert_non_null(fa_graph_add_node(ctx, g, "add", "Add", "", 2, (const char *[]){"x", "pos"}, 1, (const char *[]){"y"}));
    }
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y")), FA_OK);
    const char *path = fa_test_path(fa_test_tmpdir(), matmul ? "dims-mm.onnx" : "dims-pos.onnx");
    assert_int_equal(fa_onnx_export(ctx, g, path), FA_OK);
    fa_graph_free(g);
    return path;
}

/* A failure that a defaulted dim decides names it with its --shape (a MatMul's K that only the
 * size the message names fixes); one that fails the same way at any value of it does not (a
 * sequence of 10 over 8 positions: the hint had named 'batch', whose value only changed the
 * shapes printed in the same failure). */
static void test_failure_names_only_the_defaulted_dims_it_depends_on(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    char *so = NULL, *se = NULL;
    const char *pos = write_dims_model(ctx, false);
    const char *a1[] = {"inspect", pos, "--shape", "seq=10", NULL};
    assert_int_equal(fa_test_run_cli(a1, &so, &se), 1);
    if (!strstr(se, "node 'add' (Add)") || strstr(se, "depend on the symbolic dim")) fail_msg("want no dim blamed: %s", se);
    free(so);
    free(se);
    const char *mm = write_dims_model(ctx, true);
    const char *a2[] = {"inspect", mm, NULL};
    assert_int_equal(fa_test_run_cli(a2, &so, &se), 1);
    if (!strstr(se, "node 'mm' (MatMul)") || !strstr(se, "depend on the symbolic dim 'k' (--shape k=N)"))
        fail_msg("want 'k' named: %s", se);
    free(so);
    free(se);
    fa_ctx_free(ctx);
}

/* run: one notice naming every defaulted dim, and the run records them */
static void test_run_notices_defaults_once_and_stores_them(void **s)
{
    fa_ctx *ctx = fa_ctx_create();
    const char *path = write_two_input_model(ctx);
    const char *db = fa_test_path(fa_test_tmpdir(), "sym.db");
    char dbb[4096];
    snprintf(dbb, sizeof dbb, "%s", db);
    char *so = NULL, *se = NULL;
    const char *argv[] = {"run", path, "--no-apply", "--iters", "2", "--warmup", "0", "--db", dbb, NULL};
    assert_int_equal(fa_test_run_cli(argv, &so, &se), 0);
    const char *n1 = strstr(se, "notice: 3 symbolic dims bound to the default 1: batch, seq, m[1]");
    assert_non_null(n1);
    assert_null(strstr(n1 + 1, "notice:"));
    free(so);
    free(se);
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, dbb, &st), FA_OK);
    fa_arena *ar = fa_arena_create(4096);
    fa_run_info ri;
    assert_int_equal(fa_store_get_run(ctx, st, 1, ar, &ri), FA_OK);
    assert_non_null(ri.dim_defaults);
    assert_string_equal(ri.dim_defaults, "batch=1,seq=1,m[1]=1");
    fa_arena_free(ar);
    fa_store_close(st);
    const char *argv3[] = {"show", "1", "--db", dbb, NULL};
    assert_int_equal(fa_test_run_cli(argv3, &so, &se), 0);
    assert_non_null(strstr(so, "symbolic dims bound to their default: batch=1,seq=1,m[1]=1"));
    free(so);
    free(se);
    /* with --no-dim-defaults nothing runs and nothing is stored */
    const char *argv2[] = {"run", path, "--no-apply", "--no-dim-defaults", "--db", dbb, NULL};
    assert_int_equal(fa_test_run_cli(argv2, &so, &se), 1);
    assert_non_null(strstr(se, "3 symbolic input dims are unbound (--no-dim-defaults)"));
    free(so);
    free(se);
    fa_ctx_free(ctx);
}

/* exec freezes an integer input only when its values set a shape: token ids that index an
 * embedding and a mask that scales scores run through the executor; a shape input, even
 * through a Concat, is frozen. And random inputs stay inside the tables they index. */
static void test_integer_inputs_frozen_only_when_they_set_a_shape(void **s)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("ints");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 17), FA_OK);
    int ids = fa_graph_tensor(g, "ids"), mask = fa_graph_tensor(g, "mask"), shp = fa_graph_tensor(g, "shp");
    fa_tensor_set_shape(g->tensors[ids], FA_DTYPE_INT64, 2, (int64_t[]){1, 4});
    fa_tensor_set_shape(g->tensors[mask], FA_DTYPE_INT64, 2, (int64_t[]){1, 4});
    fa_tensor_set_shape(g->tensors[shp], FA_DTYPE_INT64, 1, (int64_t[]){1});
    assert_int_equal(fa_graph_add_input(ctx, g, ids), FA_OK);
    assert_int_equal(fa_graph_add_input(ctx, g, mask), FA_OK);
    assert_int_equal(fa_graph_add_input(ctx, g, shp), FA_OK);
    int emb = fa_graph_tensor(g, "emb");
    float table[3 * 2] = {0};
    fa_tensor_set_shape(g->tensors[emb], FA_DTYPE_FLOAT, 2, (int64_t[]){3, 2});
    assert_int_equal(fa_tensor_set_data(ctx, g->tensors[emb], table, sizeof table), FA_OK);
    g->tensors[emb]->flags |= FA_TENSOR_INITIALIZER;
    set_i64(ctx, g, "minus1", 1, (int64_t[]){-1});
    assert_non_null(fa_graph_add_node(ctx, g, "embed", "Gather", "", 2, (const char *[]){"emb", "ids"}, 1, (const char *[]){"h"}));
    fa_node *cast = fa_graph_add_node(ctx, g, "cast", "Cast", "", 1, (const char *[]){"mask"}, 1, (const char *[]){"mf"});
    assert_non_null(cast);
    assert_non_null(fa_node_add_attr_int(g, cast, "to", FA_DTYPE_FLOAT));
    assert_non_null(fa_graph_add_node(ctx, g, "scale", "Mul", "", 2, (const char *[]){"mf", "mf"}, 1, (const char *[]){"m2"}));
    fa_node *cc = fa_graph_add_node(ctx, g, "cat", "Concat", "", 2, (const char *[]){"shp", "minus1"}, 1, (const char *[]){"s2"});
    assert_non_null(cc);
    assert_non_null(fa_node_add_attr_int(g, cc, "axis", 0));
    assert_non_null(fa_graph_add_node(ctx, g, "flat", "Reshape", "", 2, (const char *[]){"h", "s2"}, 1, (const char *[]){"y"}));
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y")), FA_OK);
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "m2")), FA_OK);
    assert_int_equal(fa_graph_index(ctx, g), FA_OK);
    assert_false(fa_graph_input_is_shape_param(g, ids));
    assert_false(fa_graph_input_is_shape_param(g, mask));
    assert_true(fa_graph_input_is_shape_param(g, shp));
    /* ids index a 3-row table: random ids stay in 0..2; the mask indexes nothing: 0/1 */
    assert_int_equal(fa_graph_input_index_bound(g, ids), 3);
    assert_int_equal(fa_graph_input_index_bound(g, mask), 0);
    fa_rng r;
    fa_rng_seed(&r, 7);
    int64_t vals[64];
    fa_value v = {.dtype = FA_DTYPE_INT64, .rank = 1, .dims = {64}, .data = vals};
    fa_graph_fill_input(g, ids, &r, &v);
    bool seen2 = false;
    for (int i = 0; i < 64; i++) {
        assert_true(vals[i] >= 0 && vals[i] < 3);
        seen2 |= vals[i] == 2;
    }
    assert_true(seen2);
    fa_graph_fill_input(g, mask, &r, &v);
    for (int i = 0; i < 64; i++) assert_true(vals[i] == 0 || vals[i] == 1);
    /* a frozen (shape-setting) input checked as the executor checks any input, in its words:
     * "expected WHAT [SHAPE], got WHAT [SHAPE]" (a user's int32 ids read "declared int64, value
     * is int32" here and "expected float32 [...], got float64 [...]" for a float image) */
    int32_t s32[1] = {2};
    fa_value w32 = {.dtype = FA_DTYPE_INT32, .rank = 1, .dims = {1}, .data = s32};
    assert_int_equal(fa_graph_freeze_input(ctx, g, "shp", &w32), FA_ERR_INPUT);
    if (!strstr(fa_ctx_errmsg(ctx), "input 'shp': expected int64 [1], got int32 [1]")) fail_msg("%s", fa_ctx_errmsg(ctx));
    int64_t s64[2] = {2, 1};
    fa_value w2 = {.dtype = FA_DTYPE_INT64, .rank = 1, .dims = {2}, .data = s64};
    assert_int_equal(fa_graph_freeze_input(ctx, g, "shp", &w2), FA_ERR_INPUT);
    if (!strstr(fa_ctx_errmsg(ctx), "input 'shp': expected int64 [1], got int64 [2]")) fail_msg("%s", fa_ctx_errmsg(ctx));
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unbound_dims_default_to_one_each_listed_once),
        cmocka_unit_test(test_failure_names_only_the_defaulted_dims_it_depends_on),
        cmocka_unit_test(test_no_dim_defaults_lists_every_unbound_dim_in_one_message),
        cmocka_unit_test(test_shape_and_batch_override_the_default),
        cmocka_unit_test(test_export_keeps_symbolic_dims_and_shape_subgraph),
        cmocka_unit_test(test_exec_takes_shapes_from_input_files),
        cmocka_unit_test(test_exec_batch_option_applies_before_the_files_are_checked),
        cmocka_unit_test(test_exec_checks_shared_dims_of_integer_inputs),
        cmocka_unit_test(test_run_notices_defaults_once_and_stores_them),
        cmocka_unit_test(test_integer_inputs_frozen_only_when_they_set_a_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
