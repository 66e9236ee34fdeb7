/* tests/unit/test_bad_cli_onnx — the issue 11 ONNX bad-input catalog at the command line: each
 * bad model (crafted here with the onnx_testutil builder and written to a temp folder) makes
 * `fuse-advise inspect` and `fuse-advise run` exit 1 with one message naming the file and the
 * place (field, byte, tensor or node), never a crash; and a run database that already holds a
 * good run is not touched (same bytes, same runs). Library-level checks of the same kinds live in
 * test_onnx_bad_input.c; this file proves the CLI carries them to the user. */
#include "onnx_testutil.h"

#include <unistd.h>

static char g_db[4200];
static char g_db_sha[65];

static int run_cli(const char *const *argv, char **err)
{
    char *out = NULL;
    int rc = fa_test_run_cli(argv, &out, err);
    free(out);
    return rc;
}

/* A database holding one good run (zoo:mlp-tiny), created once. */
static int setup_db(void **state)
{
    (void)state;
    snprintf(g_db, sizeof g_db, "%s", fa_test_path(fa_test_tmpdir(), "good.db"));
    const char *argv[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "1", "--warmup", "0",
                          "--threads", "1", "--db", g_db, NULL};
    char *err = NULL;
    int rc = run_cli(argv, &err);
    if (rc != 0) fprintf(stderr, "setup run failed (%d): %s\n", rc, err ? err : "");
    free(err);
    if (rc != 0) return -1;
    fa_ctx *ctx = fa_ctx_create();
    fa_status s = fa_sha256_file(ctx, g_db, g_db_sha);
    fa_ctx_free(ctx);
    return s == FA_OK ? 0 : -1;
}

static void assert_db_untouched(const char *what)
{
    char sha[65];
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_sha256_file(ctx, g_db, sha), FA_OK);
    fa_ctx_free(ctx);
    if (strcmp(sha, g_db_sha) != 0) fail_msg("%s: the run database changed", what);
    const char *argv[] = {"runs", "--db", g_db, "--json", NULL};
    char *out = NULL;
    assert_int_equal(fa_test_run_cli(argv, &out, NULL), 0);
    assert_non_null(strstr(out, "mlp-tiny"));
    free(out);
}

/* Write buf to the temp folder as `name` (or into `dir` when given); returns the path. */
static const char *write_model(const char *dir, const char *name, const uint8_t *buf, size_t len)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s", fa_test_path(dir ? dir : fa_test_tmpdir(), name));
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_write_file_atomic(ctx, path, buf, len), FA_OK);
    fa_ctx_free(ctx);
    return path;
}

/* `inspect PATH` and `run PATH --db good.db` both exit 1; stderr names PATH and every fragment. */
static void expect_cli_refused_path(const char *path, const char *frag1, const char *frag2)
{
    const char *inspect[] = {"inspect", path, NULL};
    const char *run[] = {"run", path, "--no-apply", "--iters", "1", "--warmup", "0", "--threads", "1",
                         "--db", g_db, NULL};
    const char *const *cmds[] = {inspect, run};
    for (int c = 0; c < 2; c++) {
        char *err = NULL;
        int rc = run_cli(cmds[c], &err);
        if (rc != 1) fail_msg("%s %s: exit %d (want 1), stderr: %s", cmds[c][0], path, rc, err);
        if (!strstr(err, path)) fail_msg("%s: stderr does not name the file: %s", cmds[c][0], err);
        if (frag1 && !strstr(err, frag1)) fail_msg("%s: stderr lacks '%s': %s", cmds[c][0], frag1, err);
        if (frag2 && !strstr(err, frag2)) fail_msg("%s: stderr lacks '%s': %s", cmds[c][0], frag2, err);
        free(err);
    }
    assert_db_untouched(path);
}

static void expect_cli_refused(ot_model *b, const char *name, const char *frag1, const char *frag2)
{
    size_t len;
    uint8_t *buf = ot_pack(b, &len);
    expect_cli_refused_path(write_model(NULL, name, buf, len), frag1, frag2);
    free(buf);
}

/* Offsets where each field of the message at buf[from..to) starts (wire types 0, 1, 2, 5). */
static int field_starts(const uint8_t *buf, size_t from, size_t to, size_t *out, int cap)
{
    int n = 0;
    size_t pos = from;
    while (pos < to && n < cap) {
        out[n++] = pos;
        uint64_t tag = 0, v = 0;
        int sh = 0;
        while (buf[pos] & 0x80) tag |= (uint64_t)(buf[pos++] & 0x7f) << sh, sh += 7;
        tag |= (uint64_t)buf[pos++] << sh;
        switch (tag & 7) {
        case 0: while (buf[pos++] & 0x80) {} break;
        case 1: pos += 8; break;
        case 5: pos += 4; break;
        case 2:
            sh = 0;
            while (buf[pos] & 0x80) v |= (uint64_t)(buf[pos++] & 0x7f) << sh, sh += 7;
            v |= (uint64_t)buf[pos++] << sh;
            pos += v;
            break;
        default: return n;
        }
    }
    return n;
}

static void test_bad_cli_truncated_at_every_message_boundary(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    size_t top[64];
    int nt = field_starts(buf, 0, len, top, 64);
    int checked = 0;
    for (int i = 0; i < nt; i++) {
        if (buf[top[i]] != ((7 << 3) | 2)) continue; /* the graph field */
        /* its payload starts after the tag byte and the length varint */
        size_t p = top[i] + 1;
        uint64_t glen = 0;
        int sh = 0;
        while (buf[p] & 0x80) glen |= (uint64_t)(buf[p++] & 0x7f) << sh, sh += 7;
        glen |= (uint64_t)buf[p++] << sh;
        size_t sub[64];
        int ns = field_starts(buf, p, p + glen, sub, 64);
        /* cut at every GraphProto message boundary (node, initializer, input, output, ...) */
        for (int k = 1; k < ns; k++) {
            char name[64];
            snprintf(name, sizeof name, "cut-at-%zu.onnx", sub[k]);
            expect_cli_refused_path(write_model(NULL, name, buf, sub[k]), "byte ", "ModelProto.graph");
            checked++;
        }
    }
    assert_true(checked >= 5);
    free(buf);
}

static void test_bad_cli_wire_type_flipped(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    uint8_t *p = memmem(buf, len, "\x22\x04Relu", 6);
    assert_non_null(p);
    p[0] = (4 << 3) | 5; /* NodeProto.op_type -> fixed32 */
    expect_cli_refused_path(write_model(NULL, "wire.onnx", buf, len), "wire type fixed32", "byte ");
    free(buf);
}

static void test_bad_cli_dims_overflow_size_t(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static int64_t d[3] = {1LL << 40, 1LL << 40, 2};
    b.inits[0].n_dims = 3;
    b.inits[0].dims = d;
    expect_cli_refused(&b, "ovf.onnx", "initializer 'W'", "overflows size_t");
}

static void test_bad_cli_rank_above_eight(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static const int64_t xd[9] = {1, 1, 1, 1, 1, 1, 1, 1, 4};
    b.in_ptrs[0] = ot_vi(&b, "X", 1, 9, xd);
    expect_cli_refused(&b, "rank9.onnx", "graph input 'X'", "rank 9 exceeds");
}

static void test_bad_cli_zero_sized_tensor_with_bytes(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static int64_t z[2] = {0, 4};
    b.inits[0].n_dims = 2;
    b.inits[0].dims = z;
    b.inits[0].raw_data.len = 4;
    expect_cli_refused(&b, "zero.onnx", "initializer 'W'", "need 0");
}

/* A well-formed 0-sized graph input ([0,4]) is legal ONNX: it loads or is refused, but a run
 * never crashes, and inspect reports its shape. */
static void test_bad_cli_zero_sized_input_never_crashes(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static const int64_t xd[2] = {0, 4};
    b.in_ptrs[0] = ot_vi(&b, "X", 1, 2, xd);
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    const char *path = write_model(NULL, "zero-in.onnx", buf, len);
    free(buf);
    const char *db = fa_test_path(fa_test_tmpdir(), "zero.db");
    const char *run[] = {"run", path, "--no-apply", "--iters", "1", "--warmup", "0", "--threads", "1",
                         "--db", db, NULL};
    char *err = NULL;
    int rc = run_cli(run, &err);
    if (rc != 0 && !(rc == 1 && strstr(err, path))) fail_msg("run on a 0-sized input: exit %d: %s", rc, err);
    free(err);
}

static void test_bad_cli_duplicate_tensor_names(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static float w[4];
    static int64_t wd[1] = {4};
    ot_init_raw(&b, "W", 1, 1, wd, w, sizeof w);
    expect_cli_refused(&b, "dup.onnx", "duplicate tensor name", "'W'");
}

static void test_bad_cli_node_consumes_its_own_output(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    const char *in[] = {"R", "Z"}, *out[] = {"Z"};
    ot_node(&b, "selfloop", "Add", 2, in, 1, out);
    expect_cli_refused(&b, "selfloop.onnx", "cycle", "'selfloop'");
}

/* Initializer W (float[4]) stored externally at `location`, model written into `dir`. */
static const char *ext_model_file(const char *dir, const char *location)
{
    static Onnx__StringStringEntryProto kv;
    static Onnx__StringStringEntryProto *kvp[1];
    ot_model b;
    ot_model_small(&b);
    Onnx__TensorProto *w = &b.inits[0];
    w->has_raw_data = 0;
    w->has_data_location = 1;
    w->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    onnx__string_string_entry_proto__init(&kv);
    kv.key = "location";
    kv.value = (char *)location;
    kvp[0] = &kv;
    w->n_external_data = 1;
    w->external_data = kvp;
    size_t len;
    uint8_t *buf = ot_pack(&b, &len);
    const char *p = write_model(dir, "ext.onnx", buf, len);
    free(buf);
    return p;
}

static void test_bad_cli_external_data_outside_folder_or_device(void **state)
{
    (void)state;
    const char *dir = fa_test_path(fa_test_tmpdir(), "extdir");
    mkdir(dir, 0700);
    char path[4200];
    snprintf(path, sizeof path, "%s", ext_model_file(dir, "../outside.bin"));
    expect_cli_refused_path(path, "initializer 'W'", "'..' component");
    snprintf(path, sizeof path, "%s", ext_model_file(dir, "/dev/zero"));
    expect_cli_refused_path(path, "initializer 'W'", "absolute path");
    /* a name inside the folder that is a symlink to a device file */
    assert_int_equal(symlink("/dev/zero", fa_test_path(dir, "zero.bin")), 0);
    snprintf(path, sizeof path, "%s", ext_model_file(dir, "zero.bin"));
    expect_cli_refused_path(path, "initializer 'W'", "outside the model's folder");
}

static void test_bad_cli_huge_declared_size_small_file(void **state)
{
    (void)state;
    ot_model b;
    ot_model_small(&b);
    static int64_t d[2] = {1LL << 20, 1LL << 20}; /* 4 TiB of float, 16 bytes in the file */
    b.inits[0].n_dims = 2;
    b.inits[0].dims = d;
    expect_cli_refused(&b, "huge.onnx", "initializer 'W'", "raw_data holds 16 bytes");
}

static void test_bad_cli_missing_and_non_onnx_files(void **state)
{
    (void)state;
    const char *missing = fa_test_path(fa_test_tmpdir(), "no-such-model.onnx");
    expect_cli_refused_path(missing, NULL, NULL);
    const char text[] = "this is not protobuf at all\n";
    expect_cli_refused_path(write_model(NULL, "text.onnx", (const uint8_t *)text, sizeof text - 1),
                            "not a valid ONNX protobuf", "byte ");
    /* a folder given as the model */
    expect_cli_refused_path(fa_test_tmpdir(), NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_cli_truncated_at_every_message_boundary),
        cmocka_unit_test(test_bad_cli_wire_type_flipped),
        cmocka_unit_test(test_bad_cli_dims_overflow_size_t),
        cmocka_unit_test(test_bad_cli_rank_above_eight),
        cmocka_unit_test(test_bad_cli_zero_sized_tensor_with_bytes),
        cmocka_unit_test(test_bad_cli_zero_sized_input_never_crashes),
        cmocka_unit_test(test_bad_cli_duplicate_tensor_names),
        cmocka_unit_test(test_bad_cli_node_consumes_its_own_output),
        cmocka_unit_test(test_bad_cli_external_data_outside_folder_or_device),
        cmocka_unit_test(test_bad_cli_huge_declared_size_small_file),
        cmocka_unit_test(test_bad_cli_missing_and_non_onnx_files),
    };
    return cmocka_run_group_tests(tests, setup_db, NULL);
}
