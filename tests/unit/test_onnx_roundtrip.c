/* tests/unit/test_onnx_roundtrip — import → export → import gives the same graph: on every
 * corpus model, on a model with every attribute type, and with folded nodes dropped. */
#include "onnx_testutil.h"

/* Compare two tensors' type, shape and constant data; returns NULL or what differs. */
static const char *tensor_diff(const fa_tensor *a, const fa_tensor *b)
{
    if (strcmp(a->name, b->name)) return "name";
    if (a->dtype != b->dtype) return "dtype";
    if (a->rank != b->rank) return "rank";
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i] != b->dims[i]) return "dims";
        /* a dim with a value (a bound symbolic dim of a prepared graph) is exported as the value:
         * its dim_param survives only while the dim is symbolic (ONNX Dimension is a oneof) */
        if (a->dims[i] >= 0) continue;
        if (!a->dim_params[i] != !b->dim_params[i]) return "dim_param presence";
        if (a->dim_params[i] && strcmp(a->dim_params[i], b->dim_params[i])) return "dim_param";
    }
    if (!a->data != !b->data) return "data presence";
    if (a->nbytes != b->nbytes) return "nbytes";
    if (a->nbytes && memcmp(a->data, b->data, a->nbytes)) return "data bytes";
    return NULL;
}

static const char *attr_diff(const fa_attr *a, const fa_attr *b)
{
    if (strcmp(a->name, b->name)) return "attr name";
    if (a->type != b->type) return "attr type";
    switch (a->type) {
    case FA_ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) ? "attr f" : NULL;
    case FA_ATTR_INT: return a->i != b->i ? "attr i" : NULL;
    case FA_ATTR_STRING:
        return a->s_len != b->s_len || memcmp(a->s, b->s, a->s_len) ? "attr s" : NULL;
    case FA_ATTR_TENSOR: return tensor_diff(a->t, b->t);
    case FA_ATTR_FLOATS:
        return a->n != b->n || (a->n && memcmp(a->floats, b->floats, sizeof(float) * (size_t)a->n))
                   ? "attr floats" : NULL;
    case FA_ATTR_INTS:
        return a->n != b->n || (a->n && memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n))
                   ? "attr ints" : NULL;
    case FA_ATTR_STRINGS:
        if (a->n != b->n) return "attr strings count";
        for (int k = 0; k < a->n; k++)
            if (strcmp(a->strings[k], b->strings[k])) return "attr strings";
        return NULL;
    default: return "attr type unknown";
    }
}

static const char *tname(const fa_graph *g, int tid)
{
    return tid < 0 ? "" : g->tensors[tid]->name;
}

/* Same live graph: nodes (order, names, ops, io names, attributes, opset), inputs, outputs,
 * opsets, and every constant tensor a node reads (by name, bytes compared). */
static void assert_same_graph(const char *what, const fa_graph *a, const fa_graph *b)
{
    char msg[512] = "";
#define DIFF(...) do { snprintf(msg, sizeof msg, __VA_ARGS__); goto fail; } while (0)
    int live = 0;
    for (int i = 0; i < a->n_nodes; i++) live += !a->nodes[i]->folded;
    if (b->n_nodes != live) DIFF("node count %d vs %d", live, b->n_nodes);
    /* the export is in topological order: every producer comes before its consumers */
    for (int j = 0; j < b->n_nodes; j++)
        for (int k = 0; k < b->nodes[j]->n_inputs; k++) {
            int tid = b->nodes[j]->inputs[k];
            if (tid >= 0 && b->tensors[tid]->producer >= j)
                DIFF("exported node %s comes before the producer of its input %d", b->nodes[j]->name, k);
        }
    /* nodes matched by name (a file that is not in topological order is reordered) */
    for (int i = 0, j = 0; i < a->n_nodes; i++) {
        const fa_node *x = a->nodes[i];
        if (x->folded) continue;
        const fa_node *y = NULL;
        for (int m = 0; m < b->n_nodes && !y; m++) {
            int c = (j + m) % b->n_nodes; /* start at the expected position: linear when in order */
            if (strcmp(b->nodes[c]->name, x->name) == 0) y = b->nodes[c];
        }
        if (!y) DIFF("node %s missing after round trip", x->name);
        j = y->id + 1;
        if (strcmp(x->name, y->name) || strcmp(x->op_type, y->op_type) || strcmp(x->domain, y->domain))
            DIFF("node %d: %s/%s vs %s/%s", i, x->name, x->op_type, y->name, y->op_type);
        if (x->opset != y->opset) DIFF("node %s: opset", x->name);
        if (x->n_inputs != y->n_inputs || x->n_outputs != y->n_outputs)
            DIFF("node %s: io counts", x->name);
        for (int k = 0; k < x->n_inputs; k++)
            if (strcmp(tname(a, x->inputs[k]), tname(b, y->inputs[k])))
                DIFF("node %s: input %d", x->name, k);
        for (int k = 0; k < x->n_outputs; k++)
            if (strcmp(tname(a, x->outputs[k]), tname(b, y->outputs[k])))
                DIFF("node %s: output %d", x->name, k);
        if (x->n_attrs != y->n_attrs) DIFF("node %s: attr count", x->name);
        for (int k = 0; k < x->n_attrs; k++) {
            const char *d = attr_diff(&x->attrs[k], &y->attrs[k]);
            if (d) DIFF("node %s: attribute '%s': %s", x->name, x->attrs[k].name, d);
        }
        for (int k = 0; k < x->n_inputs; k++) {
            if (x->inputs[k] < 0) continue;
            const fa_tensor *ta = a->tensors[x->inputs[k]], *tb = b->tensors[y->inputs[k]];
            if (ta->data) {
                const char *d = tensor_diff(ta, tb);
                if (d) DIFF("tensor %s: %s", ta->name, d);
                if (!(tb->flags & FA_TENSOR_INITIALIZER)) DIFF("tensor %s: not an initializer", ta->name);
            }
        }
    }
    if (a->n_inputs != b->n_inputs) DIFF("input count %d vs %d", a->n_inputs, b->n_inputs);
    for (int i = 0; i < a->n_inputs; i++) {
        const char *d = tensor_diff(a->tensors[a->inputs[i]], b->tensors[b->inputs[i]]);
        if (d) DIFF("graph input %d: %s", i, d);
    }
    if (a->n_outputs != b->n_outputs) DIFF("output count");
    for (int i = 0; i < a->n_outputs; i++)
        if (strcmp(tname(a, a->outputs[i]), tname(b, b->outputs[i]))) DIFF("graph output %d", i);
    if (a->n_opsets != b->n_opsets) DIFF("opset count");
    for (int i = 0; i < a->n_opsets; i++)
        if (fa_graph_opset(b, a->opsets[i].domain) != a->opsets[i].version)
            DIFF("opset %s", a->opsets[i].domain);
    if (a->ir_version != b->ir_version) DIFF("ir_version");
    if (strcmp(a->name, b->name)) DIFF("graph name");
    return;
fail:
    fail_msg("%s: round trip differs: %s", what, msg);
#undef DIFF
}

static fa_graph *roundtrip(fa_ctx *ctx, const fa_graph *g, const char *name)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    fa_status s = fa_onnx_export_buffer(ctx, g, &buf, &len);
    if (s != FA_OK) fail_msg("%s: export: %s", name, fa_ctx_errmsg(ctx));
    fa_graph *g2 = NULL;
    s = fa_onnx_import_buffer(ctx, name, NULL, buf, len, &g2);
    if (s != FA_OK) fail_msg("%s: re-import: %s", name, fa_ctx_errmsg(ctx));
    /* export is deterministic: the re-imported graph exports to the same bytes */
    uint8_t *buf2 = NULL;
    size_t len2 = 0;
    assert_int_equal(fa_onnx_export_buffer(ctx, g2, &buf2, &len2), FA_OK);
    assert_int_equal(len, len2);
    assert_memory_equal(buf, buf2, len);
    free(buf);
    free(buf2);
    return g2;
}

static void test_roundtrip_every_corpus_model_gives_the_same_graph(void **state)
{
    (void)state;
    fa_test_require_corpus();
    ot_list files = ot_corpus_files(".onnx");
    fa_ctx *ctx = fa_ctx_create();
    int done = 0, nodes = 0, consts = 0;
    for (int i = 0; i < files.n; i++) {
        fa_graph *g = NULL;
        if (fa_onnx_import(ctx, files.v[i], &g) != FA_OK) fail_msg("%s", fa_ctx_errmsg(ctx));
        fa_graph *g2 = roundtrip(ctx, g, files.v[i]);
        assert_same_graph(files.v[i], g, g2);
        nodes += g->n_nodes;
        for (int t = 0; t < g->n_tensors; t++) consts += !!g->tensors[t]->data;
        fa_graph_free(g);
        fa_graph_free(g2);
        done++;
    }
    printf("  round-tripped %d corpus models, %d nodes, %d constant tensors\n", done, nodes, consts);
    assert_int_equal(done, files.n);
    fa_ctx_free(ctx);
    ot_list_free(&files);
}

static void test_roundtrip_attributes_of_every_type_and_symbolic_dims(void **state)
{
    (void)state;
    ot_model b;
    ot_model_init(&b, 17);
    static const int64_t xd[2] = {-1, 3};
    ot_input(&b, "X", 2, xd);
    const char *in[] = {"X", ""}, *out[] = {"Y", ""};
    Onnx__NodeProto *n = ot_node(&b, "custom", "MyOp", 2, in, 2, out);
    n->domain = "com.example";
    static float fl[2] = {0.5f, -1.5f};
    static int64_t is[3] = {1, -2, INT64_MAX};
    static ProtobufCBinaryData ss[2] = {{2, (uint8_t *)"ab"}, {4, (uint8_t *)"x\0yz"}};
    static uint16_t hv[2] = {0x3c00, 0xc000};
    static int64_t td[2] = {1, 2};
    static Onnx__TensorProto tp;
    onnx__tensor_proto__init(&tp);
    tp.name = "value";
    tp.has_data_type = 1;
    tp.data_type = FA_DTYPE_FLOAT16;
    tp.n_dims = 2;
    tp.dims = td;
    tp.has_raw_data = 1;
    tp.raw_data.data = (uint8_t *)hv;
    tp.raw_data.len = sizeof hv;
    Onnx__AttributeProto *a;
    a = ot_attr(&b, n, "f", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT); a->has_f = 1; a->f = 1e-5f;
    a = ot_attr(&b, n, "i", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT); a->has_i = 1; a->i = INT64_MIN;
    a = ot_attr(&b, n, "s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING); a->has_s = 1; a->s = ss[1];
    a = ot_attr(&b, n, "t", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR); a->t = &tp;
    a = ot_attr(&b, n, "fs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS); a->n_floats = 2; a->floats = fl;
    a = ot_attr(&b, n, "is", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS); a->n_ints = 3; a->ints = is;
    a = ot_attr(&b, n, "ss", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS); a->n_strings = 2; a->strings = ss;
    a = ot_attr(&b, n, "none", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    ot_output(&b, "Y");
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_onnx_import_buffer(ctx, "attrs.onnx", NULL, buf, len, &g), FA_OK);
    assert_int_equal(g->nodes[0]->inputs[1], -1); /* omitted optional input */
    assert_int_equal(g->nodes[0]->outputs[1], -1);
    fa_graph *g2 = roundtrip(ctx, g, "attrs-rt.onnx");
    assert_same_graph("attrs", g, g2);
    assert_int_equal(g2->nodes[0]->inputs[1], -1);
    assert_string_equal(g2->tensors[g2->inputs[0]]->dim_params[0], "N");
    assert_int_equal(fa_node_attr(g2->nodes[0], "s")->s_len, 4); /* embedded NUL kept */
    fa_graph_free(g);
    fa_graph_free(g2);
    fa_ctx_free(ctx);
    free(buf);
}

/* A folded node disappears from the export and its output becomes an initializer with
 * raw_data; the exported file is read back from disk. */
static void test_roundtrip_folded_nodes_become_initializers(void **state)
{
    (void)state;
    ot_model b;
    ot_model_init(&b, 13);
    static const int64_t xd[1] = {2};
    ot_input(&b, "X", 1, xd);
    const char *c_out[] = {"C"};
    ot_node(&b, "const", "Identity", 0, NULL, 1, c_out);
    b.nodes[0].n_input = 1;
    static char *c_in[1] = {"K"};
    b.nodes[0].input = c_in;
    static float kv[2] = {3, 4};
    static int64_t kd[1] = {2};
    ot_init_raw(&b, "K", 1, 1, kd, kv, sizeof kv);
    const char *a_in[] = {"X", "C"}, *a_out[] = {"Y"};
    ot_node(&b, "add", "Add", 2, a_in, 1, a_out);
    ot_output(&b, "Y");
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_onnx_import_buffer(ctx, "fold.onnx", NULL, buf, len, &g), FA_OK);
    /* fold by hand, as fa_graph_prepare would */
    fa_tensor *c = g->tensors[fa_graph_find_tensor(g, "C")];
    fa_tensor_set_shape(c, FA_DTYPE_FLOAT, 1, kd);
    assert_int_equal(fa_tensor_set_data(ctx, c, kv, sizeof kv), FA_OK);
    g->nodes[0]->folded = true;
    g->n_folded = 1;
    assert_int_equal(fa_graph_index(ctx, g), FA_OK);
    const char *path = fa_test_path(fa_test_tmpdir(), "folded.onnx");
    assert_int_equal(fa_onnx_export(ctx, g, path), FA_OK);
    fa_graph *g2 = NULL;
    assert_int_equal(fa_onnx_import(ctx, path, &g2), FA_OK);
    assert_int_equal(g2->n_nodes, 1);
    assert_string_equal(g2->nodes[0]->op_type, "Add");
    fa_tensor *c2 = g2->tensors[fa_graph_find_tensor(g2, "C")];
    assert_true(c2->flags & FA_TENSOR_INITIALIZER);
    assert_int_equal(c2->nbytes, 8);
    assert_memory_equal(c2->data, kv, 8);
    /* K was read only by the folded node: not exported */
    assert_int_equal(fa_graph_find_tensor(g2, "K"), -1);
    assert_same_graph("folded", g, g2);
    fa_graph_free(g);
    fa_graph_free(g2);
    fa_ctx_free(ctx);
    free(buf);
}

/* Nodes appended out of order (as a rewrite may do) are exported in a topological order. */
static void test_export_orders_nodes_topologically(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("order");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 13), FA_OK);
    int x = fa_graph_tensor(g, "X");
    int64_t d[1] = {4};
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 1, d);
    assert_int_equal(fa_graph_add_input(ctx, g, x), FA_OK);
    const char *in2[] = {"A"}, *out2[] = {"B"}, *in1[] = {"X"}, *out1[] = {"A"};
    assert_non_null(fa_graph_add_node(ctx, g, "second", "Relu", "", 1, in2, 1, out2));
    assert_non_null(fa_graph_add_node(ctx, g, "first", "Neg", "", 1, in1, 1, out1));
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "B")), FA_OK);
    uint8_t *buf;
    size_t len;
    assert_int_equal(fa_onnx_export_buffer(ctx, g, &buf, &len), FA_OK);
    fa_graph *g2 = NULL;
    assert_int_equal(fa_onnx_import_buffer(ctx, "order.onnx", NULL, buf, len, &g2), FA_OK);
    assert_string_equal(g2->nodes[0]->name, "first");
    assert_string_equal(g2->nodes[1]->name, "second");
    free(buf);
    fa_graph_free(g);
    fa_graph_free(g2);
    fa_ctx_free(ctx);
}

/* A 100,000-node chain exports and imports (no recursion over the graph depth: issue 11). */
static void test_roundtrip_100k_node_chain(void **state)
{
    (void)state;
    enum { N = 100000 };
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("chain");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 13), FA_OK);
    int x = fa_graph_tensor(g, "t0");
    int64_t d[2] = {1, 8};
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 2, d);
    assert_int_equal(fa_graph_add_input(ctx, g, x), FA_OK);
    char in[32], out[32];
    for (int i = 0; i < N; i++) {
        snprintf(in, sizeof in, "t%d", i);
        snprintf(out, sizeof out, "t%d", i + 1);
        const char *ins[1] = {in}, *outs[1] = {out};
        fa_node *n = fa_graph_add_node(ctx, g, NULL, i % 2 ? "Relu" : "Neg", "", 1, ins, 1, outs);
        assert_non_null(n);
    }
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, out)), FA_OK);
    assert_int_equal(fa_graph_index(ctx, g), FA_OK);
    uint64_t t0 = fa_now_ns();
    uint8_t *buf;
    size_t len;
    assert_int_equal(fa_onnx_export_buffer(ctx, g, &buf, &len), FA_OK);
    uint64_t t1 = fa_now_ns();
    fa_graph *g2 = NULL;
    assert_int_equal(fa_onnx_import_buffer(ctx, "chain.onnx", NULL, buf, len, &g2), FA_OK);
    uint64_t t2 = fa_now_ns();
    printf("  100k-node chain: %zu bytes, export %.1f ms, import %.1f ms\n", len, (t1 - t0) / 1e6,
           (t2 - t1) / 1e6);
    assert_int_equal(g2->n_nodes, N);
    assert_int_equal(g2->n_topo, N);
    assert_string_equal(g2->nodes[N - 1]->name, g->nodes[N - 1]->name);
    free(buf);
    fa_graph_free(g);
    fa_graph_free(g2);
    fa_ctx_free(ctx);
}

/* After fa_graph_load (import + shape inference + constant folding), the export holds only
 * the live nodes, folded constants become initializers, and inferred shapes come back as
 * value_info. Models whose preparation fails (ops still missing from the registry) are
 * counted, not judged here: test_onnx_import and the prepare tests own that. */
static void test_roundtrip_prepared_corpus_models_drop_folded_nodes(void **state)
{
    (void)state;
    fa_test_require_corpus();
    ot_list files = ot_corpus_files(".onnx");
    fa_ctx *ctx = fa_ctx_create();
    int prepared = 0, unprepared = 0, folded = 0, shaped = 0;
    for (int i = 0; i < files.n; i++) {
        fa_graph *g = NULL;
        fa_load_options opt = {0};
        if (fa_graph_load(ctx, files.v[i], &opt, &g) != FA_OK) {
            unprepared++;
            continue;
        }
        prepared++;
        folded += g->n_folded;
        fa_graph *g2 = roundtrip(ctx, g, files.v[i]);
        assert_same_graph(files.v[i], g, g2);
        for (int t = 0; t < g->n_tensors; t++) {
            const fa_tensor *a = g->tensors[t];
            if (a->producer < 0 || g->nodes[a->producer]->folded || a->rank < 0 || !a->dtype) continue;
            int u = fa_graph_find_tensor(g2, a->name);
            assert_true(u >= 0);
            const fa_tensor *b = g2->tensors[u];
            if (b->rank != a->rank || b->dtype != a->dtype)
                fail_msg("%s: tensor %s: inferred type/shape not exported", files.v[i], a->name);
            for (int d = 0; d < a->rank; d++) assert_int_equal(a->dims[d], b->dims[d]);
            shaped++;
        }
        fa_graph_free(g);
        fa_graph_free(g2);
    }
    printf("  prepared and round-tripped %d corpus models (%d folded nodes dropped, %d inferred "
           "shapes kept); %d did not prepare\n", prepared, folded, shaped, unprepared);
    fa_ctx_free(ctx);
    ot_list_free(&files);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_corpus_model_gives_the_same_graph),
        cmocka_unit_test(test_roundtrip_attributes_of_every_type_and_symbolic_dims),
        cmocka_unit_test(test_roundtrip_folded_nodes_become_initializers),
        cmocka_unit_test(test_export_orders_nodes_topologically),
        cmocka_unit_test(test_roundtrip_100k_node_chain),
        cmocka_unit_test(test_roundtrip_prepared_corpus_models_drop_folded_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
