/* tests/unit/test_onnx_bad_input — every bad ONNX input kind (issues 2 and 11) is refused with
 * FA_ERR_INPUT (or UNSUPPORTED) and one message naming the file and the node/tensor/field.
 * The bad bytes are built here: truncations and wire-type flips of a valid model, crafted
 * dims, attributes and external-data references. */
#include "onnx_testutil.h"

#include <unistd.h>

/* Import `buf` as `file` (from base_dir, NULL for none) and assert the status and that the
 * message contains the file name and each of up to two fragments. */
static void expect_refused(const uint8_t *buf, size_t len, const char *file, const char *base_dir,
                           fa_status want, const char *frag1, const char *frag2)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    fa_status s = fa_onnx_import_buffer(ctx, file, base_dir, buf, len, &g);
    const char *msg = fa_ctx_errmsg(ctx);
    if (getenv("FA_TEST_VERBOSE")) printf("    %s: %s\n", fa_status_name(s), msg);
    if (s != want)
        fail_msg("%s: status %s (want %s), message: %s", file, fa_status_name(s),
                 fa_status_name(want), msg);
    assert_null(g);
    if (strncmp(msg, file, strlen(file)) != 0) fail_msg("message does not start with the file: %s", msg);
    if (frag1 && !strstr(msg, frag1)) fail_msg("message lacks '%s': %s", frag1, msg);
    if (frag2 && !strstr(msg, frag2)) fail_msg("message lacks '%s': %s", frag2, msg);
    fa_ctx_free(ctx);
}

static void expect_model_refused(ot_model *b, const char *file, fa_status want, const char *frag1,
                                 const char *frag2)
{
    size_t len;
    uint8_t *buf = ot_pack(b, &len);
    expect_refused(buf, len, file, NULL, want, frag1, frag2);
    free(buf);
}

/* ---- protobuf structure ---- */

static void test_bad_empty_file(void **state)
{
    (void)state;
    const uint8_t none[1] = {0};
    expect_refused(none, 0, "empty.onnx", NULL, FA_ERR_INPUT, "empty file", NULL);
}

static void test_bad_garbage_bytes_report_offset(void **state)
{
    (void)state;
    uint8_t junk[256];
    fa_rng r;
    fa_rng_seed(&r, 42);
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)fa_rng_u64(&r);
    expect_refused(junk, sizeof junk, "junk.onnx", NULL, FA_ERR_INPUT,
                   "not a valid ONNX protobuf (truncated or corrupt)", "byte ");
    const char text[] = "this is not protobuf at all\n";
    expect_refused((const uint8_t *)text, sizeof text - 1, "text.onnx", NULL, FA_ERR_INPUT,
                   "not a valid ONNX protobuf", "byte ");
}

/* Offset of the first top-level field with number `field` (wire type 2) in buf. */
static size_t find_field(const uint8_t *buf, size_t len, unsigned field, size_t *end)
{
    size_t pos = 0;
    while (pos < len) {
        size_t at = pos;
        uint64_t tag = 0, v = 0;
        int sh = 0;
        while (buf[pos] & 0x80) tag |= (uint64_t)(buf[pos++] & 0x7f) << sh, sh += 7;
        tag |= (uint64_t)buf[pos++] << sh;
        unsigned wt = tag & 7;
        if (wt == 0) {
            while (buf[pos++] & 0x80) {}
        } else if (wt == 2) {
            sh = 0;
            while (buf[pos] & 0x80) v |= (uint64_t)(buf[pos++] & 0x7f) << sh, sh += 7;
            v |= (uint64_t)buf[pos++] << sh;
            if ((tag >> 3) == field) {
                *end = pos + v;
                return at;
            }
            pos += v;
        } else {
            pos += wt == 1 ? 8 : 4;
        }
    }
    fail_msg("field %u not found", field);
    return 0;
}

/* Truncation at every byte: never crashes; every cut inside the graph field is refused
 * with the graph field's own offset; other cuts either load (a shorter valid message) or
 * are refused naming the file. */
static void test_bad_truncated_at_every_offset(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    size_t gend, gat = find_field(buf, len, 7, &gend);
    char want[64];
    snprintf(want, sizeof want, "byte %zu of", gat);
    fa_ctx *ctx = fa_ctx_create();
    int refused = 0;
    for (size_t cut = 0; cut < len; cut++) {
        fa_graph *g = NULL;
        fa_status s = fa_onnx_import_buffer(ctx, "cut.onnx", NULL, buf, cut, &g);
        if (s == FA_OK) {
            assert_true(cut <= gat || cut >= gend);
            fa_graph_free(g);
            continue;
        }
        refused++;
        assert_int_equal(s, FA_ERR_INPUT);
        assert_non_null(strstr(fa_ctx_errmsg(ctx), "cut.onnx: "));
        if (cut > gat && cut < gend) {
            if (!strstr(fa_ctx_errmsg(ctx), want) || !strstr(fa_ctx_errmsg(ctx), "ModelProto.graph"))
                fail_msg("cut %zu: %s", cut, fa_ctx_errmsg(ctx));
        }
    }
    assert_true(refused >= (int)(gend - gat - 1));
    fa_ctx_free(ctx);
    free(buf);
}

/* The same on a real corpus model: cuts at 64 offsets across light_squeezenet. */
static void test_bad_truncated_corpus_model(void **state)
{
    (void)state;
    fa_test_require_corpus();
    size_t len;
    uint8_t *buf = ot_slurp(fa_test_path(fa_test_corpus(), "onnx/light/light_squeezenet.onnx"), &len);
    size_t gend, gat = find_field(buf, len, 7, &gend);
    for (int k = 1; k < 64; k++) {
        size_t cut = gat + 1 + (gend - gat - 2) * (size_t)k / 64;
        expect_refused(buf, cut, "sq.onnx", NULL, FA_ERR_INPUT, "not a valid ONNX protobuf",
                       "runs past the end");
    }
    free(buf);
}

static void test_bad_wire_type_flipped_on_graph_field(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    size_t gend, gat = find_field(buf, len, 7, &gend);
    assert_int_equal(buf[gat], (7 << 3) | 2);
    buf[gat] = (7 << 3) | 0; /* length-delimited -> varint */
    char want[32];
    snprintf(want, sizeof want, "byte %zu", gat);
    expect_refused(buf, len, "flip.onnx", NULL, FA_ERR_INPUT,
                   "ModelProto.graph (field 7): wire type varint, expected length-delimited", want);
    buf[gat] = (7 << 3) | 3; /* group start: invalid */
    expect_refused(buf, len, "flip.onnx", NULL, FA_ERR_INPUT, "invalid wire type 3", want);
    free(buf);
}

static void test_bad_wire_type_flipped_inside_node(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    b.nodes[0].op_type = "Relu";
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    /* NodeProto.op_type: tag 0x22 followed by length 4 and "Relu" */
    uint8_t *p = memmem(buf, len, "\x22\x04Relu", 6);
    assert_non_null(p);
    p[0] = (4 << 3) | 5; /* -> fixed32 */
    expect_refused(buf, len, "flip2.onnx", NULL, FA_ERR_INPUT,
                   "NodeProto.op_type (field 4): wire type fixed32", "byte ");
    free(buf);
}

static void test_bad_nesting_deeper_than_limit(void **state)
{
    (void)state;
    /* graph { node { attribute { g { node { ... } } } } } built from the inside out, 30000
     * levels: protobuf-c alone would recurse until the stack overflows */
    size_t cap = 1 << 21, pos = cap;
    uint8_t *buf = malloc(cap);
    assert_non_null(buf);
    static const uint8_t tags[3] = {(6 << 3) | 2 /* Attr.g */, (5 << 3) | 2 /* Node.attribute */,
                                    (1 << 3) | 2 /* Graph.node */};
    for (int level = 0; level < 30000; level++) {
        size_t body = cap - pos;
        uint8_t v[10];
        int nv = 0;
        do {
            v[nv++] = (uint8_t)((body & 0x7f) | (body > 0x7f ? 0x80 : 0));
            body >>= 7;
        } while (body);
        pos -= (size_t)nv;
        memcpy(buf + pos, v, (size_t)nv);
        buf[--pos] = tags[level % 3];
        assert_true(pos > 16);
    }
    /* wrap in ModelProto.graph */
    size_t body = cap - pos;
    uint8_t v[10];
    int nv = 0;
    do {
        v[nv++] = (uint8_t)((body & 0x7f) | (body > 0x7f ? 0x80 : 0));
        body >>= 7;
    } while (body);
    pos -= (size_t)nv;
    memcpy(buf + pos, v, (size_t)nv);
    buf[--pos] = (7 << 3) | 2;
    expect_refused(buf + pos, cap - pos, "deep.onnx", NULL, FA_ERR_INPUT, "nested deeper than 100",
                   "byte ");
    free(buf);
}

static void test_bad_missing_graph(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    b.m.graph = NULL;
    expect_model_refused(&b, "nograph.onnx", FA_ERR_INPUT, "ModelProto.graph (field 7) is missing",
                         NULL);
}

/* ---- tensors ---- */

static void test_bad_negative_initializer_dim(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static int64_t d[2] = {2, -2};
    b.inits[0].n_dims = 2;
    b.inits[0].dims = d;
    expect_model_refused(&b, "neg.onnx", FA_ERR_INPUT, "initializer 'W'", "dims[1] = -2 is negative");
}

static void test_bad_negative_graph_input_dim(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static const int64_t d[2] = {1, -7};
    b.in_ptrs[0] = ot_vi(&b, "X", 1, 2, d);
    expect_model_refused(&b, "negin.onnx", FA_ERR_INPUT, "graph input 'X'", "dim 1 = -7 is negative");
}

static void test_bad_dims_product_overflows_size_t(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static int64_t d[3] = {1LL << 40, 1LL << 40, 2};
    b.inits[0].n_dims = 3;
    b.inits[0].dims = d;
    expect_model_refused(&b, "ovf.onnx", FA_ERR_INPUT, "initializer 'W'", "overflows size_t");
    /* element count fits, byte count (x4 for float) does not */
    static int64_t d2[2] = {1LL << 31, 1LL << 31};
    b.inits[0].n_dims = 2;
    b.inits[0].dims = d2;
    expect_model_refused(&b, "ovf2.onnx", FA_ERR_INPUT, "initializer 'W'", "overflows size_t");
}

static void test_bad_rank_above_max(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static int64_t d[9] = {1, 1, 1, 1, 1, 1, 1, 1, 4};
    b.inits[0].n_dims = 9;
    b.inits[0].dims = d;
    expect_model_refused(&b, "rank.onnx", FA_ERR_INPUT, "initializer 'W'", "rank 9 exceeds");
    ot_model_small(&b);
    static const int64_t xd[9] = {1, 1, 1, 1, 1, 1, 1, 1, 4};
    b.in_ptrs[0] = ot_vi(&b, "X", 1, 9, xd);
    expect_model_refused(&b, "rank2.onnx", FA_ERR_INPUT, "graph input 'X'", "rank 9 exceeds");
}

static void test_bad_raw_data_size_mismatch(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    b.inits[0].raw_data.len = 12; /* dims [4] float need 16 */
    expect_model_refused(&b, "raw.onnx", FA_ERR_INPUT, "initializer 'W'",
                         "raw_data holds 12 bytes, dims [4] of float32 need 16");
    /* a 0-sized tensor carrying bytes is as wrong as a short one */
    static int64_t z[2] = {0, 4};
    b.inits[0].n_dims = 2;
    b.inits[0].dims = z;
    b.inits[0].raw_data.len = 4;
    expect_model_refused(&b, "zero.onnx", FA_ERR_INPUT, "initializer 'W'",
                         "raw_data holds 4 bytes, dims [0, 4] of float32 need 0");
}

static void test_bad_huge_declared_size_with_small_data(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static int64_t d[2] = {1LL << 20, 1LL << 20}; /* 4 TiB of float, 16 bytes present */
    b.inits[0].n_dims = 2;
    b.inits[0].dims = d;
    expect_model_refused(&b, "huge.onnx", FA_ERR_INPUT, "initializer 'W'", "raw_data holds 16 bytes");
    static float fv[3] = {1, 2, 3};
    b.inits[0].has_raw_data = 0;
    b.inits[0].n_float_data = 3;
    b.inits[0].float_data = fv;
    expect_model_refused(&b, "huge2.onnx", FA_ERR_INPUT, "initializer 'W'", "float_data holds 3 values");
}

static void test_bad_tensor_without_data_or_type(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    b.inits[0].has_raw_data = 0;
    expect_model_refused(&b, "nodata.onnx", FA_ERR_INPUT, "initializer 'W'", "has no data");
    ot_model_small(&b);
    b.inits[0].has_data_type = 0;
    expect_model_refused(&b, "notype.onnx", FA_ERR_INPUT, "initializer 'W'", "data_type is missing");
    ot_model_small(&b);
    static int64_t iv[4] = {1, 2, 3, 4};
    b.inits[0].has_raw_data = 0;
    b.inits[0].n_int64_data = 4;
    b.inits[0].int64_data = iv;
    expect_model_refused(&b, "wrongfield.onnx", FA_ERR_INPUT, "initializer 'W'",
                         "values in int64_data, but data_type float32 stores its values in float_data");
    ot_model_small(&b);
    b.inits[0].data_type = FA_DTYPE_STRING;
    expect_model_refused(&b, "string.onnx", FA_ERR_UNSUPPORTED, "initializer 'W'", "string");
}

static void test_bad_duplicate_initializer_names(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static float w[4];
    static int64_t wd[1] = {4};
    ot_init_raw(&b, "W", 1, 1, wd, w, sizeof w);
    expect_model_refused(&b, "dup.onnx", FA_ERR_INPUT, "duplicate tensor name", "'W'");
}

static void test_bad_duplicate_graph_input(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static const int64_t xd[2] = {1, 4};
    ot_input(&b, "X", 2, xd);
    expect_model_refused(&b, "dupin.onnx", FA_ERR_INPUT, "duplicate tensor name", "graph input 'X'");
}

/* ---- graph structure ---- */

static void test_bad_node_consumes_its_own_output(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    const char *in[] = {"R", "Z"}, *out[] = {"Z"};
    ot_node(&b, "selfloop", "Add", 2, in, 1, out);
    expect_model_refused(&b, "cycle.onnx", FA_ERR_INPUT, "cycle", "'selfloop'");
}

static void test_bad_two_node_cycle(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    const char *in1[] = {"Q"}, *out1[] = {"P"}, *in2[] = {"P"}, *out2[] = {"Q"};
    ot_node(&b, "p", "Relu", 1, in1, 1, out1);
    ot_node(&b, "q", "Relu", 1, in2, 1, out2);
    expect_model_refused(&b, "cycle2.onnx", FA_ERR_INPUT, "cycle through node", NULL);
}

static void test_bad_dangling_input_or_missing_initializer(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    b.g.n_initializer = 0; /* Add reads W, which no longer exists */
    expect_model_refused(&b, "dangling.onnx", FA_ERR_INPUT, "node 'add' (Add): input 1 'W'",
                         "not produced by any node");
}

static void test_bad_graph_output_not_produced(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    ot_output(&b, "nowhere");
    expect_model_refused(&b, "out.onnx", FA_ERR_INPUT, "graph output 'nowhere'", NULL);
}

static void test_bad_duplicate_producers(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    const char *in[] = {"X"}, *out[] = {"R"};
    ot_node(&b, "relu2", "Relu", 1, in, 1, out);
    expect_model_refused(&b, "dupprod.onnx", FA_ERR_INPUT, "node 'relu2'",
                         "'R' is already produced by node 'relu'");
}

static void test_bad_node_writes_an_initializer(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    const char *in[] = {"X"}, *out[] = {"W"};
    ot_node(&b, "over", "Relu", 1, in, 1, out);
    expect_model_refused(&b, "overwrite.onnx", FA_ERR_INPUT, "node 'over'", "'W'");
}

static void test_bad_node_without_op_type(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    b.nodes[1].op_type = NULL;
    expect_model_refused(&b, "noop.onnx", FA_ERR_INPUT, "node 1 ('add') has no op_type", NULL);
}

static void test_bad_opset_version(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    b.opset.version = 0;
    expect_model_refused(&b, "opset.onnx", FA_ERR_INPUT, "opset_import 0", "not positive");
}

/* An ir_version past the newest this build reads (ONNX 1.23.2's, 14), a negative one, or one
 * below 3 (or none) beside an opset_import, is refused: 2^62, 0, 1 and 2 were accepted silently
 * (the attack passes' ir_huge.onnx, ir_ir0..2.onnx). */
static void test_bad_ir_version(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    b.m.has_ir_version = 1;
    b.m.ir_version = (int64_t)1 << 62;
    expect_model_refused(&b, "irhuge.onnx", FA_ERR_UNSUPPORTED, "ir_version 4611686018427387904 is newer than 14",
                         "ONNX 1.23.2");
    ot_model_small(&b);
    b.m.has_ir_version = 1;
    b.m.ir_version = -3;
    expect_model_refused(&b, "irneg.onnx", FA_ERR_INPUT, "ir_version -3", "not a version");
    /* below IR 3 (or absent) with an opset_import, as ONNX's checker refuses */
    ot_model_small(&b);
    b.m.ir_version = 2;
    expect_model_refused(&b, "ir2.onnx", FA_ERR_INPUT, "ir_version 2", "came with IR version 3");
    ot_model_small(&b);
    b.m.has_ir_version = 0;
    b.m.ir_version = 0;
    expect_model_refused(&b, "ir0.onnx", FA_ERR_INPUT, "ir_version 0 (the field is absent)", "came with IR version 3");
}

/* The default domain's version newer than this build knows, none at all for its nodes, or two
 * for one domain: each refused naming what, where the model had been read at opset 99, at
 * "opset 0", or at the second version silently. */
static void test_bad_opset_imports(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    b.opset.version = 99;
    expect_model_refused(&b, "opset99.onnx", FA_ERR_UNSUPPORTED, "version 99 is newer than 28", "ONNX 1.23.2");
    ot_model_small(&b);
    b.m.n_opset_import = 0;
    expect_model_refused(&b, "noopset.onnx", FA_ERR_INPUT, "node 0 ('relu', Relu) is of the default domain",
                         "names no version of it");
    ot_model_small(&b);
    Onnx__OperatorSetIdProto second;
    onnx__operator_set_id_proto__init(&second);
    second.domain = "ai.onnx";
    second.has_version = 1;
    second.version = 7;
    Onnx__OperatorSetIdProto *two[2] = {&b.opset, &second};
    b.m.opset_import = two;
    b.m.n_opset_import = 2;
    expect_model_refused(&b, "dupopset.onnx", FA_ERR_INPUT, "opset_import 1 (domain '')",
                         "imported twice (versions 13 and 7)");
}

/* A graph input also given as an initializer, declared with another shape: refused naming both,
 * where the initializer's values were taken silently (a [7] for a declared [4]). */
static void test_bad_initializer_shape_not_the_declared_input_shape(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static const int64_t wd[1] = {7};
    ot_input(&b, "W", 1, wd); /* W's initializer holds [4] */
    expect_model_refused(&b, "initshape.onnx", FA_ERR_INPUT, "graph input 1 'W'", "not its initializer's [4]");
}

/* A NUL inside a name: protobuf-c hands strings on cut at it ('Y\0zz' read as 'Y'), so it is
 * refused where the walk finds it, naming the field and the byte. */
static void test_bad_nul_inside_a_name(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    const char *in[] = {"X"}, *out[] = {"YQzz"};
    ot_node(&b, "relu2", "Relu", 1, in, 1, out);
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    uint8_t *q = memmem(buf, len, "YQzz", 4);
    assert_non_null(q);
    q[1] = 0;
    expect_refused(buf, len, "nul.onnx", NULL, FA_ERR_INPUT, "NodeProto.output (field 2): a NUL byte inside a string",
                   "at its byte 1 of 4");
    free(buf);
}

/* A sparse_initializer (GraphProto field 15) is named, not left to a node's "not produced by any
 * node": a second occurrence of ModelProto.graph merges into the first, carrying one. */
static void test_bad_sparse_initializer_named(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    uint8_t *more = realloc(buf, len + 4);
    assert_non_null(more);
    buf = more;
    const uint8_t tail[4] = {(7 << 3) | 2, 2, (15 << 3) | 2, 0}; /* graph { sparse_initializer {} } */
    memcpy(buf + len, tail, 4);
    expect_refused(buf, len + 4, "sparse.onnx", NULL, FA_ERR_INPUT, "sparse_initializer", "not supported");
    free(buf);
}

/* ---- attributes ---- */

static void test_bad_attribute_type_mismatch(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static int64_t ints[2] = {1, 2};
    Onnx__AttributeProto *a = ot_attr(&b, &b.nodes[0], "axes", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->n_ints = 2;
    a->ints = ints;
    expect_model_refused(&b, "attr.onnx", FA_ERR_INPUT, "node 'relu' (Relu): attribute 'axes'",
                         "declared INT but holds a value of type INTS (field 'ints')");
    ot_model_small(&b);
    a = ot_attr(&b, &b.nodes[0], "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_i = 1;
    a->i = 3;
    expect_model_refused(&b, "attr2.onnx", FA_ERR_INPUT, "attribute 'alpha'",
                         "declared FLOAT but holds a value of type INT");
    ot_model_small(&b);
    a = ot_attr(&b, &b.nodes[0], "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    expect_model_refused(&b, "attr3.onnx", FA_ERR_INPUT, "attribute 'value'", "has no tensor");
}

static void test_bad_attribute_unknown_type_and_duplicate(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    Onnx__AttributeProto *a = ot_attr(&b, &b.nodes[0], "odd", (Onnx__AttributeProto__AttributeType)99);
    expect_model_refused(&b, "attrtype.onnx", FA_ERR_INPUT, "attribute 'odd'", "unknown type 99");
    ot_model_small(&b);
    a = ot_attr(&b, &b.nodes[0], "k", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a = ot_attr(&b, &b.nodes[0], "k", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    expect_model_refused(&b, "attrdup.onnx", FA_ERR_INPUT, "node 'relu'", "'k' appears twice");
}

static void test_bad_subgraph_attribute_is_unsupported(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static Onnx__GraphProto sub;
    onnx__graph_proto__init(&sub);
    Onnx__AttributeProto *a = ot_attr(&b, &b.nodes[1], "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = &sub;
    b.nodes[1].op_type = "If";
    expect_model_refused(&b, "if.onnx", FA_ERR_UNSUPPORTED, "node 'add' (If): attribute 'then_branch'",
                         "subgraph");
}

static void test_bad_tensor_attribute_names_node(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static int64_t d[1] = {-1};
    static Onnx__TensorProto tp;
    onnx__tensor_proto__init(&tp);
    tp.has_data_type = 1;
    tp.data_type = 1;
    tp.n_dims = 1;
    tp.dims = d;
    Onnx__AttributeProto *a = ot_attr(&b, &b.nodes[0], "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = &tp;
    expect_model_refused(&b, "tattr.onnx", FA_ERR_INPUT, "node 'relu' (Relu): attribute 'value'",
                         "is negative");
}

/* ---- external data ---- */

static const char *ext_dir(const char *name)
{
    const char *d = fa_test_path(fa_test_tmpdir(), name);
    mkdir(d, 0700);
    return d;
}

/* Model whose initializer W (float[4]) points to external `location`. */
static uint8_t *ext_model(const char *location, const char *offset, const char *length, size_t *len)
{
    static ot_model b;
    static Onnx__StringStringEntryProto kv[3];
    static Onnx__StringStringEntryProto *kvp[3];
    ot_model_small(&b);
    Onnx__TensorProto *w = &b.inits[0];
    w->has_raw_data = 0;
    w->has_data_location = 1;
    w->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    int n = 0;
    const char *keys[3] = {"location", "offset", "length"}, *vals[3] = {location, offset, length};
    for (int i = 0; i < 3; i++) {
        if (!vals[i]) continue;
        onnx__string_string_entry_proto__init(&kv[n]);
        kv[n].key = (char *)keys[i];
        kv[n].value = (char *)vals[i];
        kvp[n] = &kv[n];
        n++;
    }
    w->n_external_data = (size_t)n;
    w->external_data = kvp;
    return ot_pack(&b, len);
}

static void expect_ext_refused(const char *dir, const char *loc, const char *off, const char *lenv,
                               const char *frag)
{
    size_t len;
    uint8_t *buf = ext_model(loc, off, lenv, &len);
    expect_refused(buf, len, "ext.onnx", dir, FA_ERR_INPUT, "initializer 'W'", frag);
    free(buf);
}

static void test_bad_external_data_absolute_path(void **state)
{
    (void)state;
    const char *dir = ext_dir("ext_abs");
    expect_ext_refused(dir, "/etc/passwd", NULL, NULL, "'/etc/passwd' is an absolute path");
}

static void test_bad_external_data_dotdot_escape(void **state)
{
    (void)state;
    const char *dir = ext_dir("ext_dotdot");
    expect_ext_refused(dir, "../secret.bin", NULL, NULL, "'..' component");
    expect_ext_refused(dir, "sub/../../x.bin", NULL, NULL, "'..' component");
}

static void test_bad_external_data_symlink_leaving_folder(void **state)
{
    (void)state;
    const char *dir = ext_dir("ext_link");
    const char *outside = fa_test_path(fa_test_tmpdir(), "outside.bin");
    float v[4] = {0};
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_write_file_atomic(ctx, outside, v, sizeof v), FA_OK);
    fa_ctx_free(ctx);
    assert_int_equal(symlink(outside, fa_test_path(dir, "w.bin")), 0);
    expect_ext_refused(dir, "w.bin", NULL, NULL, "outside the model's folder");
    /* a symlink to a device resolves outside as well */
    assert_int_equal(symlink("/dev/zero", fa_test_path(dir, "zero.bin")), 0);
    expect_ext_refused(dir, "zero.bin", NULL, NULL, "outside the model's folder");
}

static void test_bad_external_data_not_a_regular_file(void **state)
{
    (void)state;
    const char *dir = ext_dir("ext_fifo");
    /* a FIFO inside the folder would block a naive open(); a folder is not data either */
    assert_int_equal(mkfifo(fa_test_path(dir, "pipe.bin"), 0600), 0);
    expect_ext_refused(dir, "pipe.bin", NULL, NULL, "'pipe.bin' is not a regular file");
    assert_int_equal(mkdir(fa_test_path(dir, "sub"), 0700), 0);
    expect_ext_refused(dir, "sub", NULL, NULL, "'sub' is not a regular file");
}

static void test_bad_external_data_size_checks(void **state)
{
    (void)state;
    const char *dir = ext_dir("ext_size");
    float v[4] = {1, 2, 3, 4};
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_write_file_atomic(ctx, fa_test_path(dir, "w.bin"), v, sizeof v), FA_OK);
    fa_ctx_free(ctx);
    expect_ext_refused(dir, "w.bin", "8", "16", "offset 8 + length 16 runs past the end");
    expect_ext_refused(dir, "w.bin", "64", NULL, "offset 64 is past the end");
    expect_ext_refused(dir, "w.bin", "0", "12", "external data holds 12 bytes, dims and data_type need 16");
    expect_ext_refused(dir, "w.bin", "4", NULL, "external data holds 12 bytes");
    expect_ext_refused(dir, "w.bin", "-4", NULL, "offset '-4' is not a non-negative integer");
    expect_ext_refused(dir, "w.bin", "99999999999999999999999", NULL, "not a non-negative integer");
    expect_ext_refused(dir, "missing.bin", NULL, NULL, "cannot be opened");
    /* the same file with the right numbers loads */
    size_t len;
    uint8_t *buf = ext_model("w.bin", "0", "16", &len);
    ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_onnx_import_buffer(ctx, "ext.onnx", dir, buf, len, &g), FA_OK);
    fa_graph_free(g);
    fa_ctx_free(ctx);
    free(buf);
}

/* A tensor declaring far more bytes than its external file holds is refused by the size check
 * before anything is allocated: 2^40 floats (4 TiB) backed by a 16-byte file must name the
 * sizes, not fail to allocate (or, with overcommit, take the memory) first. */
static void test_bad_external_data_huge_declared_size_refused_before_allocating(void **state)
{
    (void)state;
    const char *dir = ext_dir("ext_huge");
    float v[4] = {1, 2, 3, 4};
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_write_file_atomic(ctx, fa_test_path(dir, "w.bin"), v, sizeof v), FA_OK);
    fa_ctx_free(ctx);
    size_t len;
    static ot_model b;
    static Onnx__StringStringEntryProto kv;
    static Onnx__StringStringEntryProto *kvp[1];
    ot_model_small(&b);
    Onnx__TensorProto *w = &b.inits[0];
    w->has_raw_data = 0;
    w->has_data_location = 1;
    w->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    onnx__string_string_entry_proto__init(&kv);
    kv.key = (char *)"location";
    kv.value = (char *)"w.bin";
    kvp[0] = &kv;
    w->n_external_data = 1;
    w->external_data = kvp;
    static int64_t huge[1] = {(int64_t)1 << 40};
    w->n_dims = 1;
    w->dims = huge;
    uint8_t *buf = ot_pack(&b, &len);
    expect_refused(buf, len, "ext.onnx", dir, FA_ERR_INPUT, "initializer 'W'",
                   "external data holds 16 bytes, dims and data_type need 4398046511104");
    free(buf);
}

static void test_bad_external_data_without_location(void **state)
{
    (void)state;
    const char *dir = ext_dir("ext_noloc");
    size_t len;
    uint8_t *buf = ext_model(NULL, "0", NULL, &len);
    expect_refused(buf, len, "ext.onnx", dir, FA_ERR_INPUT, "initializer 'W'", "no 'location'");
    free(buf);
}

/* The file-path entry point names the path it was given. */
static void test_bad_file_on_disk_message_names_path(void **state)
{
    (void)state;
    const char *p = fa_test_path(fa_test_tmpdir(), "bad-on-disk.onnx");
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_write_file_atomic(ctx, p, "\x3a\x7f\x01", 3), FA_OK);
    fa_graph *g = NULL;
    assert_int_equal(fa_onnx_import(ctx, p, &g), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), p));
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "byte 0"));
    assert_int_equal(fa_onnx_import(ctx, fa_test_path(fa_test_tmpdir(), "absent.onnx"), &g), FA_ERR_IO);
    assert_int_equal(fa_onnx_import(ctx, "/dev/null", &g), FA_ERR_INPUT);
    fa_ctx_free(ctx);
}

/* Random byte mutations of a valid model (fixed seeds): every result is FA_OK, INPUT or
 * UNSUPPORTED with a message naming the file; under FA_SANITIZE this is a small fuzz run. */
static void mutate_and_import(const uint8_t *orig, size_t len, int rounds, uint64_t seed)
{
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    fa_rng r;
    fa_rng_seed(&r, seed);
    fa_ctx *ctx = fa_ctx_create();
    int ok = 0, refused = 0;
    for (int i = 0; i < rounds; i++) {
        memcpy(buf, orig, len);
        int nmut = 1 + (int)(fa_rng_u64(&r) % 4);
        for (int k = 0; k < nmut; k++) {
            size_t at = (size_t)(fa_rng_u64(&r) % len);
            switch (fa_rng_u64(&r) % 3) {
            case 0: buf[at] = (uint8_t)fa_rng_u64(&r); break;
            case 1: buf[at] ^= (uint8_t)(1u << (fa_rng_u64(&r) % 8)); break;
            default: buf[at] = (uint8_t)(0x80 | fa_rng_u64(&r)); break; /* varint continuation */
            }
        }
        size_t cut = fa_rng_u64(&r) % 4 == 0 ? (size_t)(fa_rng_u64(&r) % len) : len;
        fa_graph *g = NULL;
        fa_status s = fa_onnx_import_buffer(ctx, "mut.onnx", NULL, buf, cut, &g);
        if (s == FA_OK) {
            ok++;
            uint8_t *out = NULL;
            size_t olen = 0;
            if (fa_onnx_export_buffer(ctx, g, &out, &olen) == FA_OK) free(out);
            fa_graph_free(g);
            continue;
        }
        refused++;
        if (s != FA_ERR_INPUT && s != FA_ERR_UNSUPPORTED)
            fail_msg("mutation %d: status %s: %s", i, fa_status_name(s), fa_ctx_errmsg(ctx));
        if (strncmp(fa_ctx_errmsg(ctx), "mut.onnx: ", 10) != 0)
            fail_msg("mutation %d: message lacks the file: %s", i, fa_ctx_errmsg(ctx));
    }
    printf("  %d mutations: %d loaded, %d refused\n", rounds, ok, refused);
    assert_true(refused > 0);
    fa_ctx_free(ctx);
    free(buf);
}

static void test_bad_random_mutations_never_crash(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static int64_t is[3] = {1, 2, 3};
    Onnx__AttributeProto *a = ot_attr(&b, &b.nodes[0], "axes", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = 3;
    a->ints = is;
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    /* FA_MUTATION_ROUNDS scales the run (e.g. 200000 under FA_SANITIZE) */
    int rounds = getenv("FA_MUTATION_ROUNDS") ? atoi(getenv("FA_MUTATION_ROUNDS")) : 5000;
    if (rounds < 100) rounds = 100;
    mutate_and_import(buf, len, rounds, 1);
    free(buf);
    if (!fa_test_corpus()) return;
    buf = ot_slurp(fa_test_path(fa_test_corpus(), "onnx/light/light_squeezenet.onnx"), &len);
    mutate_and_import(buf, len, rounds / 5, 2);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_empty_file),
        cmocka_unit_test(test_bad_garbage_bytes_report_offset),
        cmocka_unit_test(test_bad_truncated_at_every_offset),
        cmocka_unit_test(test_bad_truncated_corpus_model),
        cmocka_unit_test(test_bad_wire_type_flipped_on_graph_field),
        cmocka_unit_test(test_bad_wire_type_flipped_inside_node),
        cmocka_unit_test(test_bad_nesting_deeper_than_limit),
        cmocka_unit_test(test_bad_missing_graph),
        cmocka_unit_test(test_bad_negative_initializer_dim),
        cmocka_unit_test(test_bad_negative_graph_input_dim),
        cmocka_unit_test(test_bad_dims_product_overflows_size_t),
        cmocka_unit_test(test_bad_rank_above_max),
        cmocka_unit_test(test_bad_raw_data_size_mismatch),
        cmocka_unit_test(test_bad_huge_declared_size_with_small_data),
        cmocka_unit_test(test_bad_tensor_without_data_or_type),
        cmocka_unit_test(test_bad_duplicate_initializer_names),
        cmocka_unit_test(test_bad_duplicate_graph_input),
        cmocka_unit_test(test_bad_node_consumes_its_own_output),
        cmocka_unit_test(test_bad_two_node_cycle),
        cmocka_unit_test(test_bad_dangling_input_or_missing_initializer),
        cmocka_unit_test(test_bad_graph_output_not_produced),
        cmocka_unit_test(test_bad_duplicate_producers),
        cmocka_unit_test(test_bad_node_writes_an_initializer),
        cmocka_unit_test(test_bad_node_without_op_type),
        cmocka_unit_test(test_bad_opset_version),
        cmocka_unit_test(test_bad_ir_version),
        cmocka_unit_test(test_bad_nul_inside_a_name),
        cmocka_unit_test(test_bad_opset_imports),
        cmocka_unit_test(test_bad_initializer_shape_not_the_declared_input_shape),
        cmocka_unit_test(test_bad_sparse_initializer_named),
        cmocka_unit_test(test_bad_attribute_type_mismatch),
        cmocka_unit_test(test_bad_attribute_unknown_type_and_duplicate),
        cmocka_unit_test(test_bad_subgraph_attribute_is_unsupported),
        cmocka_unit_test(test_bad_tensor_attribute_names_node),
        cmocka_unit_test(test_bad_external_data_absolute_path),
        cmocka_unit_test(test_bad_external_data_dotdot_escape),
        cmocka_unit_test(test_bad_external_data_symlink_leaving_folder),
        cmocka_unit_test(test_bad_external_data_not_a_regular_file),
        cmocka_unit_test(test_bad_external_data_size_checks),
        cmocka_unit_test(test_bad_external_data_without_location),
        cmocka_unit_test(test_bad_external_data_huge_declared_size_refused_before_allocating),
        cmocka_unit_test(test_bad_file_on_disk_message_names_path),
        cmocka_unit_test(test_bad_random_mutations_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
