/* tests/unit/test_tensorproto — TensorProto .pb reader/writer: every corpus test_data_set file
 * and reference output, write→read identity for every dtype, bad .pb files. */
#include "onnx_testutil.h"

static size_t value_bytes(const fa_value *v)
{
    return (size_t)fa_value_numel(v) * fa_dtype_size(v->dtype);
}

/* Every .pb in the corpus reads; each also survives write → read unchanged. */
static void test_tensorproto_reads_and_rewrites_every_corpus_pb(void **state)
{
    (void)state;
    fa_test_require_corpus();
    ot_list files = ot_corpus_files(".pb");
    assert_true(files.n >= 1000);
    fa_ctx *ctx = fa_ctx_create();
    int by_dtype[FA_DTYPE_COUNT] = {0}, ok = 0;
    const char *tmp = fa_test_path(fa_test_tmpdir(), "rewrite.pb");
    for (int i = 0; i < files.n; i++) {
        fa_value v;
        char *name = NULL;
        fa_status s = fa_tensorproto_read(ctx, files.v[i], &v, &name);
        if (s != FA_OK) fail_msg("%s", fa_ctx_errmsg(ctx));
        assert_true(v.rank >= 0 && v.rank <= FA_MAX_RANK);
        assert_non_null(v.data);
        by_dtype[v.dtype]++;
        assert_int_equal(fa_tensorproto_write(ctx, tmp, &v, name), FA_OK);
        fa_value w;
        char *name2 = NULL;
        assert_int_equal(fa_tensorproto_read(ctx, tmp, &w, &name2), FA_OK);
        assert_int_equal(w.dtype, v.dtype);
        assert_int_equal(w.rank, v.rank);
        for (int d = 0; d < v.rank; d++) assert_int_equal(w.dims[d], v.dims[d]);
        assert_string_equal(name, name2);
        if (value_bytes(&v)) assert_memory_equal(w.data, v.data, value_bytes(&v));
        free(v.data);
        free(w.data);
        free(name);
        free(name2);
        ok++;
    }
    printf("  read and rewrote %d corpus .pb files:", ok);
    for (int t = 0; t < FA_DTYPE_COUNT; t++)
        if (by_dtype[t]) printf(" %s=%d", fa_dtype_name((fa_dtype)t), by_dtype[t]);
    printf("\n");
    assert_int_equal(ok, files.n);
    fa_ctx_free(ctx);
    ot_list_free(&files);
}

/* The light models' reference outputs are float32 [1, 1000] (squeezenet [1, 1000, 1, 1]). */
static void test_tensorproto_light_reference_output_shapes(void **state)
{
    (void)state;
    fa_test_require_corpus();
    fa_ctx *ctx = fa_ctx_create();
    fa_value v;
    assert_int_equal(fa_tensorproto_read(ctx, fa_test_path(fa_test_corpus(),
                                         "onnx/light/light_resnet50_output_0.pb"), &v, NULL), FA_OK);
    assert_int_equal(v.dtype, FA_DTYPE_FLOAT);
    assert_int_equal(v.rank, 2);
    assert_int_equal(v.dims[0], 1);
    assert_int_equal(v.dims[1], 1000);
    free(v.data);
    assert_int_equal(fa_tensorproto_read(ctx, fa_test_path(fa_test_corpus(),
                                         "onnx/light/light_squeezenet_output_0.pb"), &v, NULL), FA_OK);
    assert_int_equal(v.rank, 4);
    assert_int_equal(v.dims[1], 1000);
    assert_int_equal(v.dims[3], 1);
    free(v.data);
    fa_ctx_free(ctx);
}

/* In every node test, input_N.pb has the dtype and static dims of the model's graph input N:
 * the .pb reader and the model importer agree. */
static void test_tensorproto_node_inputs_match_model_inputs(void **state)
{
    (void)state;
    fa_test_require_corpus();
    ot_list models = ot_corpus_files("model.onnx");
    fa_ctx *ctx = fa_ctx_create();
    int checked = 0;
    for (int i = 0; i < models.n; i++) {
        if (strcmp(ot_folder(models.v[i]), "node") != 0) continue;
        fa_graph *g = NULL;
        assert_int_equal(fa_onnx_import(ctx, models.v[i], &g), FA_OK);
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", models.v[i]);
        *strrchr(dir, '/') = 0;
        for (int k = 0; k < g->n_inputs; k++) {
            char pb[4200];
            snprintf(pb, sizeof pb, "%s/test_data_set_0/input_%d.pb", dir, k);
            FILE *f = fopen(pb, "rb");
            if (!f) continue;
            fclose(f);
            fa_value v;
            if (fa_tensorproto_read(ctx, pb, &v, NULL) != FA_OK) fail_msg("%s", fa_ctx_errmsg(ctx));
            const fa_tensor *t = g->tensors[g->inputs[k]];
            if (t->dtype != v.dtype || t->rank != v.rank)
                fail_msg("%s: dtype/rank %d/%d vs %d/%d", pb, t->dtype, t->rank, v.dtype, v.rank);
            for (int d = 0; d < v.rank; d++)
                if (t->dims[d] >= 0 && t->dims[d] != v.dims[d]) fail_msg("%s: dim %d", pb, d);
            free(v.data);
            checked++;
        }
        fa_graph_free(g);
    }
    printf("  %d node-test inputs agree with their model's graph inputs\n", checked);
    assert_true(checked > 300);
    fa_ctx_free(ctx);
    ot_list_free(&models);
}

/* write → read for every dtype, rank 0 and a zero-sized tensor; float16 stays float16. */
static void test_tensorproto_write_read_every_dtype(void **state)
{
    (void)state;
    static const fa_dtype types[] = {FA_DTYPE_FLOAT, FA_DTYPE_UINT8, FA_DTYPE_INT8, FA_DTYPE_UINT16,
                                     FA_DTYPE_INT16, FA_DTYPE_INT32, FA_DTYPE_INT64, FA_DTYPE_BOOL,
                                     FA_DTYPE_FLOAT16, FA_DTYPE_DOUBLE, FA_DTYPE_UINT32,
                                     FA_DTYPE_UINT64, FA_DTYPE_BFLOAT16};
    fa_ctx *ctx = fa_ctx_create();
    uint8_t bytes[6 * 8];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (uint8_t)(i * 37 + 1);
    const char *p = fa_test_path(fa_test_tmpdir(), "t.pb");
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        for (int shape = 0; shape < 3; shape++) {
            fa_value v = {0};
            v.dtype = types[k];
            v.data = bytes;
            if (shape == 0) { v.rank = 2; v.dims[0] = 2; v.dims[1] = 3; }
            else if (shape == 1) { v.rank = 0; }
            else { v.rank = 3; v.dims[0] = 2; v.dims[1] = 0; v.dims[2] = 5; }
            if (types[k] == FA_DTYPE_BOOL) for (int i = 0; i < 6; i++) bytes[i] = (uint8_t)(i & 1);
            assert_int_equal(fa_tensorproto_write(ctx, p, &v, "tensor_name"), FA_OK);
            fa_value w;
            char *name = NULL;
            assert_int_equal(fa_tensorproto_read(ctx, p, &w, &name), FA_OK);
            assert_string_equal(name, "tensor_name");
            assert_int_equal(w.dtype, types[k]);
            assert_int_equal(w.rank, v.rank);
            for (int d = 0; d < v.rank; d++) assert_int_equal(w.dims[d], v.dims[d]);
            size_t nb = value_bytes(&v);
            if (nb) assert_memory_equal(w.data, bytes, nb);
            free(w.data);
            free(name);
        }
    }
    /* name is optional */
    fa_value v = {bytes, FA_DTYPE_FLOAT, 1, {2}};
    assert_int_equal(fa_tensorproto_write(ctx, p, &v, NULL), FA_OK);
    fa_value w;
    assert_int_equal(fa_tensorproto_read(ctx, p, &w, NULL), FA_OK);
    assert_memory_equal(w.data, bytes, 8);
    free(w.data);
    fa_ctx_free(ctx);
}

/* Typed-field encodings as other writers emit them (float16 bits in int32_data). */
static void test_tensorproto_reads_typed_fields(void **state)
{
    (void)state;
    Onnx__TensorProto tp;
    onnx__tensor_proto__init(&tp);
    int64_t dims[1] = {3};
    int32_t half[3] = {0x3c00, 0xbc00, 0x0001};
    tp.n_dims = 1;
    tp.dims = dims;
    tp.has_data_type = 1;
    tp.data_type = FA_DTYPE_FLOAT16;
    tp.n_int32_data = 3;
    tp.int32_data = half;
    tp.name = "h";
    uint8_t buf[128];
    size_t len = onnx__tensor_proto__pack(&tp, buf);
    fa_ctx *ctx = fa_ctx_create();
    fa_value v;
    char *name = NULL;
    assert_int_equal(fa_tensorproto_read_buffer(ctx, "h.pb", buf, len, &v, &name), FA_OK);
    assert_int_equal(v.dtype, FA_DTYPE_FLOAT16);
    assert_int_equal(((uint16_t *)v.data)[1], 0xbc00);
    assert_string_equal(name, "h");
    free(v.data);
    free(name);
    fa_ctx_free(ctx);
}

static void expect_pb_refused(const uint8_t *buf, size_t len, const char *frag)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_value v;
    fa_status s = fa_tensorproto_read_buffer(ctx, "bad.pb", buf, len, &v, NULL);
    if (s != FA_ERR_INPUT) fail_msg("status %s: %s", fa_status_name(s), fa_ctx_errmsg(ctx));
    if (strncmp(fa_ctx_errmsg(ctx), "bad.pb: ", 8) || !strstr(fa_ctx_errmsg(ctx), frag))
        fail_msg("message: %s", fa_ctx_errmsg(ctx));
    fa_ctx_free(ctx);
}

static void test_tensorproto_bad_files_are_refused(void **state)
{
    (void)state;
    Onnx__TensorProto tp;
    onnx__tensor_proto__init(&tp);
    int64_t dims[2] = {2, 2};
    float data[4] = {1, 2, 3, 4};
    tp.n_dims = 2;
    tp.dims = dims;
    tp.has_data_type = 1;
    tp.data_type = 1;
    tp.has_raw_data = 1;
    tp.raw_data.data = (uint8_t *)data;
    tp.raw_data.len = sizeof data;
    tp.name = "x";
    uint8_t buf[256];
    size_t len = onnx__tensor_proto__pack(&tp, buf);
    /* truncated inside raw_data */
    expect_pb_refused(buf, len - 3, "TensorProto.raw_data (field 9)");
    /* raw size mismatch */
    tp.raw_data.len = 12;
    len = onnx__tensor_proto__pack(&tp, buf);
    expect_pb_refused(buf, len, "raw_data holds 12 bytes");
    /* negative dim */
    tp.raw_data.len = 16;
    dims[0] = -2;
    len = onnx__tensor_proto__pack(&tp, buf);
    expect_pb_refused(buf, len, "dims[0] = -2 is negative");
    /* overflowing dims with 16 bytes of data */
    dims[0] = INT64_MAX;
    dims[1] = 4;
    len = onnx__tensor_proto__pack(&tp, buf);
    expect_pb_refused(buf, len, "overflows size_t");
    /* external data in a buffer: no folder to read from */
    dims[0] = 2;
    dims[1] = 2;
    tp.has_raw_data = 0;
    tp.has_data_location = 1;
    tp.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    Onnx__StringStringEntryProto kv, *kvp = &kv;
    onnx__string_string_entry_proto__init(&kv);
    kv.key = "location";
    kv.value = "x.bin";
    tp.n_external_data = 1;
    tp.external_data = &kvp;
    len = onnx__tensor_proto__pack(&tp, buf);
    expect_pb_refused(buf, len, "has no folder");
    /* not a TensorProto at all */
    expect_pb_refused((const uint8_t *)"\xff\xff\xff", 3, "not a valid TensorProto");
    /* writer refuses a negative dim */
    fa_ctx *ctx = fa_ctx_create();
    fa_value v = {data, FA_DTYPE_FLOAT, 1, {-1}};
    assert_int_equal(fa_tensorproto_write(ctx, fa_test_path(fa_test_tmpdir(), "neg.pb"), &v, NULL),
                     FA_ERR_INPUT);
    fa_ctx_free(ctx);
}

/* Random byte mutations of a valid .pb (fixed seed): always a status, never a crash; a tensor
 * that still reads has a byte count matching its dims. */
static void test_tensorproto_random_mutations_never_crash(void **state)
{
    (void)state;
    Onnx__TensorProto tp;
    onnx__tensor_proto__init(&tp);
    int64_t dims[3] = {2, 3, 2};
    float data[12];
    for (int i = 0; i < 12; i++) data[i] = (float)i;
    tp.n_dims = 3;
    tp.dims = dims;
    tp.has_data_type = 1;
    tp.data_type = 1;
    tp.has_raw_data = 1;
    tp.raw_data.data = (uint8_t *)data;
    tp.raw_data.len = sizeof data;
    tp.name = "input_0";
    uint8_t orig[256], buf[256];
    size_t len = onnx__tensor_proto__pack(&tp, orig);
    fa_rng r;
    fa_rng_seed(&r, 7);
    fa_ctx *ctx = fa_ctx_create();
    int ok = 0;
    for (int i = 0; i < 5000; i++) {
        memcpy(buf, orig, len);
        for (int k = 0; k < 1 + (int)(fa_rng_u64(&r) % 3); k++)
            buf[fa_rng_u64(&r) % len] = (uint8_t)fa_rng_u64(&r);
        size_t cut = fa_rng_u64(&r) % 4 == 0 ? (size_t)(fa_rng_u64(&r) % len) : len;
        fa_value v;
        fa_status s = fa_tensorproto_read_buffer(ctx, "mut.pb", buf, cut, &v, NULL);
        if (s == FA_OK) {
            ok++;
            assert_non_null(v.data);
            free(v.data);
        } else {
            assert_true(s == FA_ERR_INPUT || s == FA_ERR_UNSUPPORTED);
            assert_int_equal(strncmp(fa_ctx_errmsg(ctx), "mut.pb: ", 8), 0);
        }
    }
    printf("  5000 .pb mutations: %d still read\n", ok);
    fa_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensorproto_reads_and_rewrites_every_corpus_pb),
        cmocka_unit_test(test_tensorproto_light_reference_output_shapes),
        cmocka_unit_test(test_tensorproto_node_inputs_match_model_inputs),
        cmocka_unit_test(test_tensorproto_write_read_every_dtype),
        cmocka_unit_test(test_tensorproto_reads_typed_fields),
        cmocka_unit_test(test_tensorproto_bad_files_are_refused),
        cmocka_unit_test(test_tensorproto_random_mutations_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
