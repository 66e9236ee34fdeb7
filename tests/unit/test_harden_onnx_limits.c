/* tests/unit/test_harden_onnx_limits — issue 32, limits before allocation in ONNX loading: files of
 * many empty or tiny repeated messages (NodeProtos, input names, tensor-shape dims, unknown fields,
 * external-data entries of a TensorProto .pb) took about 80x their size in protobuf-c's unpacker
 * before any check ran (30 MB -> 2.4 GB). The wire checker now bounds what unpacking will allocate
 * (graph/tensorproto.c, fa_pb_check) and refuses naming the byte offset; the unpacker runs under an
 * allocator with the same budget. Each crafted file is imported in a child process whose peak
 * memory is measured: on the main of before it grew by hundreds of MiB, now by the file's bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "graph/graph.h"
#include "graph/onnx-impl.h"

typedef struct wbuf { uint8_t *p; size_t n, cap; } wbuf;

static void put(wbuf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put_varint(wbuf *b, uint64_t v)
{
    uint8_t t[10];
    int n = 0;
    do { t[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)); v >>= 7; } while (v);
    put(b, t, (size_t)n);
}

/* field `f` (wire type 2) holding body */
static void put_msg(wbuf *b, int f, const wbuf *body)
{
    put_varint(b, (uint64_t)f << 3 | 2);
    put_varint(b, body->n);
    put(b, body->p, body->n);
}

/* `count` copies of the bytes `unit` */
static wbuf repeat(const uint8_t *unit, size_t n, size_t count)
{
    wbuf b = {0};
    b.cap = n * count + 16;
    b.p = malloc(b.cap);
    assert_non_null(b.p);
    for (size_t i = 0; i < count; i++) put(&b, unit, n);
    return b;
}

enum { KIND_MODEL, KIND_TENSOR };

/* Import buf in a child (ONNX model or TensorProto); returns the child's peak RSS growth in KiB
 * over its RSS before the import, and its message (static). The child exits 0 when the import
 * was refused with FA_ERR_INPUT naming the file and a byte offset. */
static long import_in_child(const wbuf *buf, int kind, char *msg, size_t cap, int *refused_ok)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        long before = ru.ru_maxrss;
        fa_ctx *ctx = fa_ctx_create();
        fa_status s;
        if (kind == KIND_MODEL) {
            fa_graph *g = NULL;
            s = fa_onnx_import_buffer(ctx, "crafted.onnx", NULL, buf->p, buf->n, &g);
            fa_graph_free(g);
        } else {
            fa_value v;
            memset(&v, 0, sizeof v);
            char *name = NULL;
            s = fa_tensorproto_read_buffer(ctx, "crafted.pb", buf->p, buf->n, &v, &name);
            if (!s) { free(v.data); free(name); }
        }
        getrusage(RUSAGE_SELF, &ru);
        char line[4200];
        int n = snprintf(line, sizeof line, "%ld %d %s", ru.ru_maxrss - before, (int)s, fa_ctx_errmsg(ctx));
        if (write(fds[1], line, (size_t)n) < 0) _exit(3);
        fa_ctx_free(ctx);
        _exit(s == FA_ERR_INPUT ? 0 : 1);
    }
    close(fds[1]);
    char line[4200] = "";
    size_t got = 0;
    ssize_t r;
    while ((r = read(fds[0], line + got, sizeof line - 1 - got)) > 0) got += (size_t)r;
    line[got] = 0;
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    long kib = -1;
    int status = -1, off = 0;
    if (sscanf(line, "%ld %d %n", &kib, &status, &off) < 2) fail_msg("child died (status 0x%x) before reporting", st);
    snprintf(msg, cap, "%s", line + off);
    *refused_ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    return kib;
}

/* Refused, naming the file and a byte offset, and the import's peak stayed within twice the file
 * plus 16 MiB (what the checker and the error path need), where unpacking took ~80x. */
static void expect_refused_small(const char *what, const wbuf *file, int kind)
{
    char msg[4200];
    int ok = 0;
    long kib = import_in_child(file, kind, msg, sizeof msg, &ok);
    if (getenv("FA_TEST_VERBOSE")) fprintf(stderr, "  %s: %zu bytes, +%ld KiB: %s\n", what, file->n, kib, msg);
    if (!ok) fail_msg("%s: not refused as bad input: %s", what, msg);
    if (!strstr(msg, kind == KIND_MODEL ? "crafted.onnx" : "crafted.pb")) fail_msg("%s: message lacks the file: %s", what, msg);
    if (!strstr(msg, "byte ")) fail_msg("%s: message lacks the byte offset: %s", what, msg);
    if (!strstr(msg, "refused before unpacking") || !strstr(msg, "unpacking would take more than"))
        fail_msg("%s: not refused by the memory bound: %s", what, msg);
    long limit = (long)(2 * file->n / 1024) + 16 * 1024;
    if (kib > limit) fail_msg("%s: the refusal took %ld KiB (file %zu bytes, limit %ld KiB)", what, kib, file->n, limit);
}

/* a GraphProto of 3 million empty NodeProtos (6 MB) */
static void test_empty_node_messages_refused_before_unpacking(void **state)
{
    (void)state;
    static const uint8_t node[] = {0x0a, 0x00}; /* GraphProto.node, length 0 */
    wbuf graph = repeat(node, 2, 3000000), model = {0};
    put_msg(&model, 7, &graph);
    expect_refused_small("empty nodes", &model, KIND_MODEL);
    free(graph.p);
    free(model.p);
}

/* one NodeProto with 3 million empty input names */
static void test_empty_repeated_strings_refused_before_unpacking(void **state)
{
    (void)state;
    static const uint8_t in[] = {0x0a, 0x00}; /* NodeProto.input "" */
    wbuf nodeb = repeat(in, 2, 3000000), graph = {0}, model = {0};
    put_msg(&graph, 1, &nodeb);
    put_msg(&model, 7, &graph);
    expect_refused_small("empty input names", &model, KIND_MODEL);
    free(nodeb.p);
    free(graph.p);
    free(model.p);
}

/* a graph input whose shape has 2 million empty dims */
static void test_empty_shape_dims_refused_before_unpacking(void **state)
{
    (void)state;
    static const uint8_t dim[] = {0x0a, 0x00}; /* TensorShapeProto.dim, empty */
    wbuf shape = repeat(dim, 2, 2000000), tt = {0}, type = {0}, vi = {0}, graph = {0}, model = {0};
    put_msg(&tt, 2, &shape);
    put_msg(&type, 1, &tt);
    put_msg(&vi, 2, &type);
    put_msg(&graph, 11, &vi);
    put_msg(&model, 7, &graph);
    expect_refused_small("empty dims", &model, KIND_MODEL);
    free(shape.p);
    free(tt.p);
    free(type.p);
    free(vi.p);
    free(graph.p);
    free(model.p);
}

/* 3 million unknown varint fields (protobuf-c keeps a copy of each) */
static void test_unknown_fields_refused_before_unpacking(void **state)
{
    (void)state;
    static const uint8_t unk[] = {0xf8, 0x06, 0x00}; /* field 111, varint 0 */
    wbuf model = repeat(unk, 3, 3000000);
    expect_refused_small("unknown fields", &model, KIND_MODEL);
    free(model.p);
}

/* `exec` inputs: a TensorProto .pb of 3 million empty external_data entries */
static void test_tensorproto_empty_external_data_refused_before_unpacking(void **state)
{
    (void)state;
    static const uint8_t kv[] = {0x6a, 0x00}; /* TensorProto.external_data, empty */
    wbuf tp = repeat(kv, 2, 3000000);
    expect_refused_small("external_data entries", &tp, KIND_TENSOR);
    free(tp.p);
}

/* The allocator's budget refuses cleanly (nothing leaked, the unpacker returns NULL) whatever the
 * checker's model says. */
static void test_unpack_allocator_budget_fails_cleanly(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_zoo_build(ctx, "mlp-tiny", 1, &g), FA_OK);
    const char *path = fa_test_path(fa_test_tmpdir(), "mlp.onnx");
    assert_int_equal(fa_onnx_export(ctx, g, path), FA_OK);
    fa_graph_free(g);
    uint8_t *d = NULL;
    size_t n = 0;
    assert_int_equal(fa_read_file(ctx, path, &d, &n), FA_OK);
    fa_pb_budget b;
    fa_pb_budget_init(&b, 4096);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&b.alloc, n, d);
    assert_null(mp);
    assert_true(b.exceeded);
    assert_int_equal((int)b.live, 0); /* everything it took was given back */
    fa_pb_budget_init(&b, fa_pb_unpack_budget(n));
    mp = onnx__model_proto__unpack(&b.alloc, n, d);
    assert_non_null(mp);
    assert_false(b.exceeded);
    onnx__model_proto__free_unpacked(mp, &b.alloc);
    assert_int_equal((int)b.live, 0);
    free(d);
    fa_ctx_free(ctx);
}

/* The checker's bound on every corpus model: never below what protobuf-c takes at its peak (else a
 * crafted file could pass the check and still blow up), and no model of the corpus refused. */
static void test_checker_bound_covers_protobuf_peak_on_the_corpus(void **state)
{
    (void)state;
    const char *corpus = fa_test_corpus();
    if (!corpus) skip();
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "find '%s/onnx' -name '*.onnx' -size -4M | sort", corpus);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    char path[4096];
    int n_models = 0;
    double worst = 0;
    while (fgets(path, sizeof path, f)) {
        path[strcspn(path, "\n")] = 0;
        fa_ctx *ctx = fa_ctx_create();
        uint8_t *d = NULL;
        size_t n = 0;
        if (fa_read_file(ctx, path, &d, &n) || n == 0) { free(d); fa_ctx_free(ctx); continue; }
        size_t bad = 0;
        char why[512];
        uint64_t est = 0;
        fa_pb_verdict pv = fa_pb_check(d, n, FA_PB_MODEL, &bad, why, sizeof why, &est);
        if (pv) {
            /* a corpus file refused: only for being malformed, never for its size */
            if (pv == FA_PB_TOO_BIG) fail_msg("%s refused by the memory bound: %s", path, why);
            free(d);
            fa_ctx_free(ctx);
            continue;
        }
        fa_pb_budget b;
        fa_pb_budget_init(&b, UINT64_MAX);
        Onnx__ModelProto *mp = onnx__model_proto__unpack(&b.alloc, n, d);
        if (mp) {
            if (b.peak > est) fail_msg("%s: protobuf-c took %llu bytes at its peak, the checker bound %llu", path,
                                       (unsigned long long)b.peak, (unsigned long long)est);
            if ((double)b.peak / (double)n > worst) worst = (double)b.peak / (double)n;
            onnx__model_proto__free_unpacked(mp, &b.alloc);
            n_models++;
        }
        free(d);
        fa_ctx_free(ctx);
    }
    pclose(f);
    if (getenv("FA_TEST_VERBOSE")) fprintf(stderr, "  %d corpus models, worst peak %.1fx their size\n", n_models, worst);
    assert_true(n_models > 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_node_messages_refused_before_unpacking),
        cmocka_unit_test(test_empty_repeated_strings_refused_before_unpacking),
        cmocka_unit_test(test_empty_shape_dims_refused_before_unpacking),
        cmocka_unit_test(test_unknown_fields_refused_before_unpacking),
        cmocka_unit_test(test_tensorproto_empty_external_data_refused_before_unpacking),
        cmocka_unit_test(test_unpack_allocator_budget_fails_cleanly),
        cmocka_unit_test(test_checker_bound_covers_protobuf_peak_on_the_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
