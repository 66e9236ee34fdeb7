/* tests/unit/test_bad_fuzz_regressions — every input a fuzz target ever crashed on, committed
 * under tests/bad-input/regressions/<target>/, is replayed through the very entry point the
 * fuzzer ran (fuzz/fuzz_targets.h): it must return (the sanitizer build turns any memory or UB
 * error into a failure) and, when refused, name the input in the message. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
/* The argument-parser target uses the CLI's helpers, which live in cli/ (not a module library). */
#include "cli/common.c"
#include "cli/options.c"
#include "cli/term.c"
#include "fuzz/fuzz_targets.h"

typedef fa_status (*target_fn)(fa_ctx *, const uint8_t *, size_t);

static const struct {
    const char *name;
    target_fn fn;
    const char *display; /* what a refusal message must name; NULL: no check */
} k_targets[] = {
    {"onnx", fa_fuzz_onnx, "fuzz.onnx"},
    {"tensorproto", fa_fuzz_tensorproto, "fuzz.pb"},
    {"kineto", fa_fuzz_kineto, "input.json"},
    {"nsys", fa_fuzz_nsys, "input.sqlite"},
    {"args", fa_fuzz_args, NULL},
    {"codegen", fa_fuzz_codegen, NULL},
};

static uint8_t *slurp(const char *path, size_t *len)
{
    fa_ctx *ctx = fa_ctx_create();
    uint8_t *data = NULL;
    fa_status s = fa_read_file(ctx, path, &data, len);
    if (s) fail_msg("%s", fa_ctx_errmsg(ctx));
    fa_ctx_free(ctx);
    return data;
}

static const char *regressions_dir(void)
{
    const char *src = getenv("FA_SOURCE_DIR");
    if (!src) fail_msg("FA_SOURCE_DIR not set (run through ctest)");
    static char d[4096];
    snprintf(d, sizeof d, "%s/tests/bad-input/regressions", src);
    return d;
}

/* The bytes of the committed regression input REL (relative to tests/bad-input/regressions). */
static uint8_t *regression(const char *rel, size_t *len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", regressions_dir(), rel);
    return slurp(path, len);
}

static void test_bad_every_committed_fuzz_crash_input_is_handled(void **state)
{
    (void)state;
    int replayed = 0;
    for (size_t t = 0; t < sizeof k_targets / sizeof k_targets[0]; t++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", regressions_dir(), k_targets[t].name);
        DIR *d = opendir(dir);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char path[4500];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            size_t len;
            uint8_t *data = slurp(path, &len);
            fa_ctx *ctx = fa_ctx_create();
            fa_status s = k_targets[t].fn(ctx, data, len);
            if (s != FA_OK && k_targets[t].display && !strstr(fa_ctx_errmsg(ctx), k_targets[t].display))
                fail_msg("%s: refused (%s) without naming the input: %s", path, fa_status_name(s),
                         fa_ctx_errmsg(ctx));
            fa_ctx_free(ctx);
            free(data);
            replayed++;
        }
        closedir(d);
    }
    print_message("replayed %d committed fuzz inputs\n", replayed);
    assert_true(replayed >= 1);
}

/* fuzz_onnx, 10 s in: a Split node listing output "1" twice read an unset g->nodes slot while
 * naming the earlier producer (graph/ir.c fa_graph_add_node). Now a clear refusal. */
static void test_bad_node_listing_one_output_twice_refused_by_name(void **state)
{
    (void)state;
    size_t len;
    uint8_t *data = regression("onnx/split-duplicate-output.onnx", &len);
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_onnx_import_buffer(ctx, "dup-out.onnx", NULL, data, len, &g), FA_ERR_INPUT);
    assert_null(g);
    const char *msg = fa_ctx_errmsg(ctx);
    if (!strstr(msg, "dup-out.onnx") || !strstr(msg, "output '1' is already produced"))
        fail_msg("unexpected message: %s", msg);
    fa_ctx_free(ctx);
    free(data);
}

/* fuzz_onnx (CI, seed 1, 112,105 executions in): a DequantizeLinear whose output took a uint8
 * scale's type stored (100 - 0) * 200 = 20000 into a uint8, a float-to-integer conversion out of
 * range (undefined, C11 6.3.1.4; UBSan's float-cast-overflow). The committed input is the smallest
 * such model (made with onnx.helper: Constant int8 [100, 120, -128, 127], Constant uint8 scale
 * 200, DequantizeLinear folded at load, an Add to keep it live). Every conversion now saturates:
 * checked here without the sanitizer too. */
static void test_bad_float_to_integer_conversions_saturate(void **state)
{
    (void)state;
    assert_true(fa_f64_to_i64_sat(NAN) == 0);
    assert_true(fa_f64_to_i64_sat(1e300) == INT64_MAX);
    assert_true(fa_f64_to_i64_sat(-INFINITY) == INT64_MIN);
    assert_true(fa_f64_to_i64_sat(9223372036854775808.0) == INT64_MAX);
    assert_true(fa_f64_to_i64_sat(-9223372036854775808.0) == INT64_MIN);
    assert_true(fa_f64_to_i64_sat(-2.9) == -2);
    static const struct {
        fa_dtype dt;
        double v, want;
    } cases[] = {
        {FA_DTYPE_UINT8, 20000, 255}, {FA_DTYPE_UINT8, -3, 0},         {FA_DTYPE_UINT8, NAN, 0},
        {FA_DTYPE_INT8, 300, 127},    {FA_DTYPE_INT8, -300, -128},     {FA_DTYPE_INT16, 1e9, 32767},
        {FA_DTYPE_UINT16, -1, 0},     {FA_DTYPE_INT32, 1e12, INT32_MAX}, {FA_DTYPE_UINT32, 1e12, UINT32_MAX},
        {FA_DTYPE_INT64, 1e30, 9223372036854775807.0}, {FA_DTYPE_UINT64, 1e30, 18446744073709551615.0},
        {FA_DTYPE_UINT64, -5, 0},     {FA_DTYPE_INT32, INFINITY, INT32_MAX}, {FA_DTYPE_INT32, 7.9, 7},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t buf = 0;
        fa_store_from_double(&buf, cases[i].dt, 0, cases[i].v);
        double got = cases[i].dt == FA_DTYPE_UINT64 ? (double)buf : fa_load_as_double(&buf, cases[i].dt, 0);
        if (got != cases[i].want)
            fail_msg("case %zu: %s of %g stored %.17g, want %.17g", i, fa_dtype_name(cases[i].dt), cases[i].v, got,
                     cases[i].want);
    }
    /* the committed model folds its DequantizeLinear to the saturated values */
    size_t len;
    uint8_t *data = regression("onnx/dequantize-uint8-scale-out-of-range.onnx", &len);
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    fa_test_check_ok(ctx, fa_onnx_import_buffer(ctx, "dql.onnx", NULL, data, len, &g));
    fa_load_options lo = {0};
    fa_test_check_ok(ctx, fa_graph_prepare(ctx, g, &lo));
    int y = fa_graph_find_tensor(g, "y");
    assert_true(y >= 0);
    const fa_tensor *t = g->tensors[y];
    assert_true(t->dtype == FA_DTYPE_UINT8 && t->data);
    const uint8_t *q = t->data;
    assert_int_equal(q[0], 255); /* 100 x 200 */
    assert_int_equal(q[2], 0);   /* -128 x 200 */
    fa_graph_free(g);
    fa_ctx_free(ctx);
    free(data);
}

/* fuzz_tensorproto: dims [60, 2^53-ish, 20, 0] have 0 elements, but their running product passes
 * INT64_MAX before the 0, and fa_value_numel (int64) overflowed. Now refused like any dims
 * product that does not fit. */
static void test_bad_tensorproto_dims_product_beyond_int64_refused(void **state)
{
    (void)state;
    size_t len;
    uint8_t *data = regression("tensorproto/dims-product-beyond-int64-times-zero.pb", &len);
    fa_ctx *ctx = fa_ctx_create();
    fa_value v;
    memset(&v, 0, sizeof v);
    assert_int_equal(fa_tensorproto_read_buffer(ctx, "dims.pb", data, len, &v, NULL), FA_ERR_INPUT);
    if (!strstr(fa_ctx_errmsg(ctx), "dims.pb") || !strstr(fa_ctx_errmsg(ctx), "overflows"))
        fail_msg("unexpected message: %s", fa_ctx_errmsg(ctx));
    fa_ctx_free(ctx);
    free(data);
}

/* fuzz_tensorproto: EXTERNAL data with dims of 3.4 GB read from memory (no folder): the reader
 * allocated the 3.4 GB before finding it could not read external data (libFuzzer: malloc over
 * the 2 GiB limit). Now refused first. */
static void test_bad_tensorproto_external_huge_dims_refused_before_allocating(void **state)
{
    (void)state;
    size_t len;
    uint8_t *data = regression("tensorproto/external-huge-dims-no-folder.pb", &len);
    assert_true(len < 16);
    fa_ctx *ctx = fa_ctx_create();
    fa_value v;
    memset(&v, 0, sizeof v);
    assert_int_equal(fa_tensorproto_read_buffer(ctx, "ext.pb", data, len, &v, NULL), FA_ERR_INPUT);
    if (!strstr(fa_ctx_errmsg(ctx), "ext.pb") || !strstr(fa_ctx_errmsg(ctx), "EXTERNAL"))
        fail_msg("unexpected message: %s", fa_ctx_errmsg(ctx));
    fa_ctx_free(ctx);
    free(data);
}

/* fuzz_kineto: a kernel with a negative ts (-1.6e18 ns) made the end-time overflow guard itself
 * overflow (INT64_MAX - ts); a negative baseTimeNanoseconds did the same in the rebase loop.
 * Now both import; times still negative after the rebase move the whole trace later (common.c,
 * fa__import_place_times). */
static void test_bad_kineto_negative_timestamp_imports_without_overflow(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/kineto/negative-ts-small.json", regressions_dir());
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = NULL;
    fa_import_stats st;
    fa_status s = fa_import_kineto(ctx, path, &t, &st);
    if (s) fail_msg("%s", fa_ctx_errmsg(ctx));
    assert_int_equal(t->n_acts, 1);
    /* issue 15: no longer clamped to 0 (which lost the duration): the trace moves as a whole */
    assert_int_equal(t->acts[0].start_ns, 0);
    assert_int_equal(t->acts[0].end_ns, 5000);
    assert_int_equal(st.time_shift_ns, 1621401187225367000ull);
    assert_int_equal(st.n_negative_times, 1);
    fa_trace_free(t);
    snprintf(path, sizeof path, "%s/kineto/negative-base-time.json", regressions_dir());
    t = NULL;
    s = fa_import_kineto(ctx, path, &t, &st);
    if (s) fail_msg("%s", fa_ctx_errmsg(ctx));
    assert_int_equal(t->n_acts, 1);
    assert_int_equal(t->acts[0].end_ns - t->acts[0].start_ns, 5000);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

/* fuzz_codegen seeds (issue 15): chains whose tensors and nodes carry a comment closer with code
 * after it, an #include of /etc/passwd, control bytes, quotes, invalid UTF-8 and repeated names.
 * The target aborts when a name changes the generated source or the kernel's result; here each
 * must also generate, compile and run (FA_OK), and the injected code must never have run. */
static void test_codegen_hostile_names_generate_compile_and_run_unchanged(void **state)
{
    (void)state;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/codegen", regressions_dir());
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4500];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len;
        uint8_t *data = slurp(path, &len);
        fa_ctx *ctx = fa_ctx_create();
        fa_status s = fa_fuzz_codegen(ctx, data, len);
        if (s) fail_msg("%s: %s", path, fa_ctx_errmsg(ctx));
        fa_ctx_free(ctx);
        free(data);
        n++;
    }
    closedir(d);
    assert_true(n >= 2);
    FILE *f = fopen("/tmp/fa-codegen-injected", "r");
    if (f) {
        fclose(f);
        fail_msg("code from a tensor name ran");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_every_committed_fuzz_crash_input_is_handled),
        cmocka_unit_test(test_bad_node_listing_one_output_twice_refused_by_name),
        cmocka_unit_test(test_bad_float_to_integer_conversions_saturate),
        cmocka_unit_test(test_bad_tensorproto_dims_product_beyond_int64_refused),
        cmocka_unit_test(test_bad_tensorproto_external_huge_dims_refused_before_allocating),
        cmocka_unit_test(test_bad_kineto_negative_timestamp_imports_without_overflow),
        cmocka_unit_test(test_codegen_hostile_names_generate_compile_and_run_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
