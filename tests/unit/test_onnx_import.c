/* tests/unit/test_onnx_import — ONNX import: every corpus model, the structure of known
 * models, initializer encodings, symbolic dims, attributes, external data, opsets. */
#include "onnx_testutil.h"

#include <unistd.h>

static int count_op(const fa_graph *g, const char *op)
{
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++) c += strcmp(g->nodes[i]->op_type, op) == 0;
    return c;
}

/* Every .onnx under corpus/onnx imports; the only acceptable failure is UNSUPPORTED
 * (subgraph attributes, string tensors). Prints the per-folder counts. */
static void test_import_every_corpus_model_loads_or_is_unsupported(void **state)
{
    (void)state;
    fa_test_require_corpus();
    ot_list files = ot_corpus_files(".onnx");
    assert_true(files.n >= 300);
    const char *folders[] = {"light", "node", "pytorch-converted", "pytorch-operator",
                             "tensorrt-polygraphy", "onnxconverter-common"};
    int loaded[6] = {0}, failed[6] = {0}, bad = 0;
    fa_ctx *ctx = fa_ctx_create();
    for (int i = 0; i < files.n; i++) {
        int f = 0;
        while (f < 6 && strcmp(folders[f], ot_folder(files.v[i])) != 0) f++;
        assert_true(f < 6);
        fa_graph *g = NULL;
        fa_status s = fa_onnx_import(ctx, files.v[i], &g);
        if (s == FA_OK) {
            loaded[f]++;
            assert_true(g->n_nodes > 0);
            assert_non_null(g->topo);
            assert_int_equal(g->n_topo, g->n_nodes);
            assert_string_equal(g->path, files.v[i]);
            fa_graph_free(g);
        } else {
            failed[f]++;
            printf("  FAILED %s: %s: %s\n", ot_folder(files.v[i]), fa_status_name(s),
                   fa_ctx_errmsg(ctx));
            if (s != FA_ERR_UNSUPPORTED) bad++;
            /* every message names the file */
            assert_non_null(strstr(fa_ctx_errmsg(ctx), files.v[i]));
        }
    }
    for (int f = 0; f < 6; f++)
        printf("  corpus/onnx/%-22s loaded %3d, failed %d\n", folders[f], loaded[f], failed[f]);
    fa_ctx_free(ctx);
    ot_list_free(&files);
    assert_int_equal(bad, 0);
}

/* light_resnet50: counts from SOURCES.md (415 nodes, 53 Conv, 53 BN, 239 ConstantOfShape,
 * 269 initializers, ir 3, opset 9, producer onnx-caffe2). */
static void test_import_light_resnet50_matches_manifest(void **state)
{
    (void)state;
    fa_test_require_corpus();
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    const char *p = fa_test_path(fa_test_corpus(), "onnx/light/light_resnet50.onnx");
    assert_int_equal(fa_onnx_import(ctx, p, &g), FA_OK);
    assert_int_equal(g->n_nodes, 415);
    assert_int_equal(count_op(g, "Conv"), 53);
    assert_int_equal(count_op(g, "BatchNormalization"), 53);
    assert_int_equal(count_op(g, "ConstantOfShape"), 239);
    int inits = 0;
    for (int i = 0; i < g->n_tensors; i++) inits += !!(g->tensors[i]->flags & FA_TENSOR_INITIALIZER);
    assert_int_equal(inits, 269);
    assert_int_equal(g->ir_version, 3);
    assert_int_equal(fa_graph_opset(g, ""), 9);
    assert_string_equal(g->producer_name, "onnx-caffe2");
    for (int i = 0; i < g->n_nodes; i++) assert_int_equal(g->nodes[i]->opset, 9);
    /* initializers are not graph inputs, even when the file lists them as inputs */
    for (int i = 0; i < g->n_inputs; i++)
        assert_false(g->tensors[g->inputs[i]]->flags & FA_TENSOR_INITIALIZER);
    assert_int_equal(g->n_inputs, 1);
    fa_tensor *in = g->tensors[g->inputs[0]];
    assert_int_equal(in->rank, 4);
    assert_int_equal(in->dims[1], 3);
    assert_int_equal(in->dims[2], 224);
    assert_int_equal(g->n_outputs, 1);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void test_import_small_model_inputs_initializers_and_order(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    /* list the initializer as a graph input too, as IR < 4 exporters do */
    static const int64_t wd[1] = {4};
    ot_input(&b, "W", 1, wd);
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_onnx_import_buffer(ctx, "small.onnx", NULL, buf, len, &g), FA_OK);
    assert_int_equal(g->n_nodes, 2);
    assert_int_equal(g->n_inputs, 1);
    assert_string_equal(g->tensors[g->inputs[0]]->name, "X");
    int w = fa_graph_find_tensor(g, "W");
    assert_true(w >= 0);
    fa_tensor *t = g->tensors[w];
    assert_int_equal(t->flags & (FA_TENSOR_INITIALIZER | FA_TENSOR_CONST | FA_TENSOR_GRAPH_INPUT),
                     FA_TENSOR_INITIALIZER | FA_TENSOR_CONST);
    assert_int_equal(t->dtype, FA_DTYPE_FLOAT);
    assert_int_equal(t->nbytes, 16);
    assert_true(((float *)t->data)[3] == 4.0f);
    assert_int_equal(g->nodes[0]->opset, 13);
    assert_int_equal(g->nodes[1]->opset, 13);
    assert_int_equal(g->n_topo, 2);
    assert_int_equal(g->topo[0], 0);
    fa_graph_free(g);
    fa_ctx_free(ctx);
    free(buf);
}

static void test_import_symbolic_dims_become_minus_one_with_dim_param(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static const int64_t xd[2] = {-1, 4}; /* -1: dim_param "N" in the builder */
    ot_vi(&b, "X", 1, 2, xd);
    b.in_ptrs[0] = &b.vis[b.n_vis - 1];
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_onnx_import_buffer(ctx, "sym.onnx", NULL, buf, len, &g), FA_OK);
    fa_tensor *x = g->tensors[g->inputs[0]];
    assert_int_equal(x->rank, 2);
    assert_int_equal(x->dims[0], -1);
    assert_string_equal(x->dim_params[0], "N");
    assert_int_equal(x->dims[1], 4);
    assert_null(x->dim_params[1]);
    fa_graph_free(g);
    fa_ctx_free(ctx);
    free(buf);
}

/* Typed data fields, packed as onnx.proto says: int32_data carries int8/uint8/int16/uint16/
 * bool/float16/bfloat16, uint64_data carries uint32/uint64. */
static void test_import_initializers_in_typed_fields(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static int64_t d3[1] = {3};
    static float fv[3] = {1.5f, -2.0f, 3.25f};
    static int32_t i8v[3] = {-1, 127, -128};
    static int32_t u8v[3] = {255, 0, 7};
    static int32_t i16v[3] = {-300, 300, 0};
    static int32_t f16v[3] = {0x3c00, 0xc000, 0x7bff}; /* 1.0, -2.0, 65504 */
    static int32_t boolv[3] = {1, 0, 1};
    static int32_t i32v[3] = {-70000, 5, 70000};
    static int64_t i64v[3] = {-5000000000LL, 1, 5000000000LL};
    static double dv[3] = {0.1, 0.2, 0.3};
    static uint64_t u32v[3] = {4000000000u, 1, 2};
    static uint64_t u64v[3] = {18000000000000000000u, 1, 2};
    Onnx__TensorProto *t;
    t = ot_init_raw(&b, "f32", FA_DTYPE_FLOAT, 1, d3, NULL, 0); t->n_float_data = 3; t->float_data = fv;
    t = ot_init_raw(&b, "i8", FA_DTYPE_INT8, 1, d3, NULL, 0); t->n_int32_data = 3; t->int32_data = i8v;
    t = ot_init_raw(&b, "u8", FA_DTYPE_UINT8, 1, d3, NULL, 0); t->n_int32_data = 3; t->int32_data = u8v;
    t = ot_init_raw(&b, "i16", FA_DTYPE_INT16, 1, d3, NULL, 0); t->n_int32_data = 3; t->int32_data = i16v;
    t = ot_init_raw(&b, "f16", FA_DTYPE_FLOAT16, 1, d3, NULL, 0); t->n_int32_data = 3; t->int32_data = f16v;
    t = ot_init_raw(&b, "b", FA_DTYPE_BOOL, 1, d3, NULL, 0); t->n_int32_data = 3; t->int32_data = boolv;
    t = ot_init_raw(&b, "i32", FA_DTYPE_INT32, 1, d3, NULL, 0); t->n_int32_data = 3; t->int32_data = i32v;
    t = ot_init_raw(&b, "i64", FA_DTYPE_INT64, 1, d3, NULL, 0); t->n_int64_data = 3; t->int64_data = i64v;
    t = ot_init_raw(&b, "f64", FA_DTYPE_DOUBLE, 1, d3, NULL, 0); t->n_double_data = 3; t->double_data = dv;
    t = ot_init_raw(&b, "u32", FA_DTYPE_UINT32, 1, d3, NULL, 0); t->n_uint64_data = 3; t->uint64_data = u32v;
    t = ot_init_raw(&b, "u64", FA_DTYPE_UINT64, 1, d3, NULL, 0); t->n_uint64_data = 3; t->uint64_data = u64v;
    t = ot_init_raw(&b, "scalar", FA_DTYPE_INT64, 0, NULL, NULL, 0); t->n_int64_data = 1; t->int64_data = i64v;
    static int64_t d0[2] = {0, 5};
    ot_init_raw(&b, "empty", FA_DTYPE_FLOAT, 2, d0, NULL, 0);
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_onnx_import_buffer(ctx, "typed.onnx", NULL, buf, len, &g), FA_OK);
#define T(name) g->tensors[fa_graph_find_tensor(g, name)]
    assert_true(((float *)T("f32")->data)[2] == 3.25f);
    assert_int_equal(T("i8")->nbytes, 3);
    assert_int_equal(((int8_t *)T("i8")->data)[2], -128);
    assert_int_equal(((uint8_t *)T("u8")->data)[0], 255);
    assert_int_equal(T("i16")->nbytes, 6);
    assert_int_equal(((int16_t *)T("i16")->data)[0], -300);
    assert_int_equal(T("f16")->dtype, FA_DTYPE_FLOAT16);
    assert_int_equal(T("f16")->nbytes, 6);
    assert_int_equal(((uint16_t *)T("f16")->data)[1], 0xc000);
    assert_int_equal(((uint8_t *)T("b")->data)[1], 0);
    assert_int_equal(((uint8_t *)T("b")->data)[2], 1);
    assert_int_equal(((int32_t *)T("i32")->data)[0], -70000);
    assert_true(((int64_t *)T("i64")->data)[0] == -5000000000LL);
    assert_true(((double *)T("f64")->data)[1] == 0.2);
    assert_int_equal(T("u32")->nbytes, 12);
    assert_true(((uint32_t *)T("u32")->data)[0] == 4000000000u);
    assert_true(((uint64_t *)T("u64")->data)[0] == 18000000000000000000u);
    assert_int_equal(T("scalar")->rank, 0);
    assert_int_equal(T("scalar")->nbytes, 8);
    assert_int_equal(T("empty")->nbytes, 0);
    assert_int_equal(T("empty")->rank, 2);
    assert_true(T("empty")->flags & FA_TENSOR_CONST);
#undef T
    fa_graph_free(g);
    fa_ctx_free(ctx);
    free(buf);
}

static void test_import_attributes_of_every_type(void **state)
{
    (void)state;
    ot_model b;
    ot_model_init(&b, 17);
    static const int64_t xd[1] = {2};
    ot_input(&b, "X", 1, xd);
    const char *out[] = {"Y"};
    const char *in[] = {"X"};
    Onnx__NodeProto *n = ot_node(&b, "", "MyOp", 1, in, 1, out);
    n->domain = "com.example";
    static float fl[2] = {0.5f, 1.5f};
    static int64_t is[3] = {1, -2, 3};
    static ProtobufCBinaryData ss[2] = {{2, (uint8_t *)"ab"}, {3, (uint8_t *)"xyz"}};
    static float tv[2] = {7, 8};
    static int64_t td[1] = {2};
    static Onnx__TensorProto tp;
    onnx__tensor_proto__init(&tp);
    tp.has_data_type = 1;
    tp.data_type = 1;
    tp.n_dims = 1;
    tp.dims = td;
    tp.has_raw_data = 1;
    tp.raw_data.data = (uint8_t *)tv;
    tp.raw_data.len = sizeof tv;
    Onnx__AttributeProto *a;
    a = ot_attr(&b, n, "f", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT); a->has_f = 1; a->f = 0.25f;
    a = ot_attr(&b, n, "i", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT); a->has_i = 1; a->i = -42;
    a = ot_attr(&b, n, "s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING); a->has_s = 1; a->s = ss[1];
    a = ot_attr(&b, n, "t", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR); a->t = &tp;
    a = ot_attr(&b, n, "fs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS); a->n_floats = 2; a->floats = fl;
    a = ot_attr(&b, n, "is", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS); a->n_ints = 3; a->ints = is;
    a = ot_attr(&b, n, "ss", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS); a->n_strings = 2; a->strings = ss;
    a = ot_attr(&b, n, "empty", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    ot_output(&b, "Y");
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_onnx_import_buffer(ctx, "attrs.onnx", NULL, buf, len, &g), FA_OK);
    fa_node *nd = g->nodes[0];
    assert_string_equal(nd->name, "MyOp_0"); /* unnamed nodes get "<op>_<id>" */
    assert_string_equal(nd->domain, "com.example");
    assert_null(nd->op); /* unknown op: imported, prepare reports it */
    assert_int_equal(nd->n_attrs, 8);
    assert_true(fa_node_attr_float(nd, "f", 0) == 0.25f);
    assert_int_equal(fa_node_attr_int(nd, "i", 0), -42);
    assert_string_equal(fa_node_attr_string(nd, "s", ""), "xyz");
    assert_int_equal(fa_node_attr(nd, "s")->s_len, 3);
    const fa_attr *ta = fa_node_attr(nd, "t");
    assert_int_equal(ta->type, FA_ATTR_TENSOR);
    assert_non_null(ta->t);
    assert_int_equal(ta->t->rank, 1);
    assert_int_equal(ta->t->dims[0], 2);
    assert_true(((float *)ta->t->data)[1] == 8.0f);
    const fa_attr *fa = fa_node_attr(nd, "fs");
    assert_int_equal(fa->n, 2);
    assert_true(fa->floats[1] == 1.5f);
    const int64_t *iv;
    assert_int_equal(fa_node_attr_ints(nd, "is", &iv), 3);
    assert_int_equal(iv[1], -2);
    const fa_attr *sa = fa_node_attr(nd, "ss");
    assert_int_equal(sa->n, 2);
    assert_string_equal(sa->strings[0], "ab");
    assert_int_equal(fa_node_attr(nd, "empty")->n, 0);
    fa_graph_free(g);
    fa_ctx_free(ctx);
    free(buf);
}

/* External data relative to the model's folder, with offset and length. */
static void test_import_external_data_with_offset(void **state)
{
    (void)state;
    const char *dir = fa_test_path(fa_test_tmpdir(), "ext_ok");
    mkdir(dir, 0700);
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/weights", dir);
    mkdir(sub, 0700);
    float data[6] = {9, 9, 1, 2, 3, 4}; /* tensor at byte offset 8 */
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_write_file_atomic(ctx, fa_test_path(sub, "w.bin"), data, sizeof data), FA_OK);
    ot_model b;
    ot_model_small(&b);
    Onnx__TensorProto *w = b.init_ptrs[0];
    w->has_raw_data = 0;
    w->has_data_location = 1;
    w->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    static Onnx__StringStringEntryProto kv[3];
    static Onnx__StringStringEntryProto *kvp[3] = {&kv[0], &kv[1], &kv[2]};
    for (int i = 0; i < 3; i++) onnx__string_string_entry_proto__init(&kv[i]);
    kv[0].key = "location"; kv[0].value = "weights/w.bin";
    kv[1].key = "offset"; kv[1].value = "8";
    kv[2].key = "length"; kv[2].value = "16";
    w->n_external_data = 3;
    w->external_data = kvp;
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    const char *model = fa_test_path(dir, "m.onnx");
    assert_int_equal(fa_write_file_atomic(ctx, model, buf, len), FA_OK);
    fa_graph *g = NULL;
    assert_int_equal(fa_onnx_import(ctx, model, &g), FA_OK);
    fa_tensor *t = g->tensors[fa_graph_find_tensor(g, "W")];
    assert_int_equal(t->nbytes, 16);
    assert_true(((float *)t->data)[0] == 1.0f && ((float *)t->data)[3] == 4.0f);
    fa_graph_free(g);
    /* from a buffer there is no folder: external data is refused, naming the tensor */
    assert_int_equal(fa_onnx_import_buffer(ctx, "mem.onnx", NULL, buf, len, &g), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "initializer 'W'"));
    fa_ctx_free(ctx);
    free(buf);
}

static void test_import_records_value_info_hints_and_producer(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    b.m.producer_name = "unit";
    b.m.producer_version = "1.2";
    static const int64_t rd[2] = {1, 4};
    static Onnx__ValueInfoProto *vip[1];
    vip[0] = ot_vi(&b, "R", 1, 2, rd);
    b.g.n_value_info = 1;
    b.g.value_info = vip;
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_onnx_import_buffer(ctx, "vi.onnx", NULL, buf, len, &g), FA_OK);
    fa_tensor *r = g->tensors[fa_graph_find_tensor(g, "R")];
    assert_int_equal(r->rank, 2);
    assert_int_equal(r->dims[1], 4);
    assert_string_equal(g->producer_name, "unit");
    assert_string_equal(g->producer_version, "1.2");
    assert_int_equal(g->ir_version, 8);
    assert_string_equal(g->path, "vi.onnx");
    fa_graph_free(g);
    fa_ctx_free(ctx);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_every_corpus_model_loads_or_is_unsupported),
        cmocka_unit_test(test_import_light_resnet50_matches_manifest),
        cmocka_unit_test(test_import_small_model_inputs_initializers_and_order),
        cmocka_unit_test(test_import_symbolic_dims_become_minus_one_with_dim_param),
        cmocka_unit_test(test_import_initializers_in_typed_fields),
        cmocka_unit_test(test_import_attributes_of_every_type),
        cmocka_unit_test(test_import_external_data_with_offset),
        cmocka_unit_test(test_import_records_value_info_hints_and_producer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
