/* tests/unit/test_bad_cli_traces — the issue 11 trace bad-input catalog at the command line
 * (`fuse-advise run TRACE` imports a Kineto JSON / Nsight Systems export). Broken files (truncated
 * JSON, truncated gzip, not JSON, empty, an SQLite file that is not an nsys export) exit 1 with a
 * message naming the file and the place, and leave a database that already holds a good run
 * byte-for-byte unchanged; odd but readable files (10-level-deep args, numbers beyond int64,
 * NaN/Infinity, duplicate correlation ids) import with exit 0 and their faults counted in the
 * import summary. Library-level checks: test_import_kineto.c, test_import_nsys.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "testutil.h"

static char g_db[4200], g_db_sha[65];

static const char *tmp(const char *name)
{
    static char p[4][4200];
    static int k;
    k = (k + 1) & 3;
    snprintf(p[k], sizeof p[k], "%s", fa_test_path(fa_test_tmpdir(), name));
    return p[k];
}

static const char *put(const char *name, const void *data, size_t len)
{
    const char *path = tmp(name);
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_write_file_atomic(ctx, path, data, len), FA_OK);
    fa_ctx_free(ctx);
    return path;
}

static int run_trace(const char *path, const char *db, char **out, char **err)
{
    const char *argv[] = {"run", path, "--db", db, "--out", tmp("out"), NULL};
    return fa_test_run_cli(argv, out, err);
}

static int setup_db(void **state)
{
    (void)state;
    snprintf(g_db, sizeof g_db, "%s", tmp("good.db"));
    const char *argv[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "1", "--warmup", "0",
                          "--threads", "1", "--db", g_db, NULL};
    char *err = NULL;
    int rc = fa_test_run_cli(argv, NULL, &err);
    if (rc) fprintf(stderr, "setup: exit %d: %s\n", rc, err);
    free(err);
    if (rc) return -1;
    fa_ctx *ctx = fa_ctx_create();
    fa_status s = fa_sha256_file(ctx, g_db, g_db_sha);
    fa_ctx_free(ctx);
    return s ? -1 : 0;
}

static void expect_refused(const char *path, const char *frag1, const char *frag2)
{
    char *err = NULL;
    int rc = run_trace(path, g_db, NULL, &err);
    if (rc != 1) fail_msg("run %s: exit %d (want 1): %s", path, rc, err);
    if (!strstr(err, path)) fail_msg("message does not name the file: %s", err);
    if (frag1 && !strstr(err, frag1)) fail_msg("message lacks '%s': %s", frag1, err);
    if (frag2 && !strstr(err, frag2)) fail_msg("message lacks '%s': %s", frag2, err);
    free(err);
    char sha[65];
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_sha256_file(ctx, g_db, sha), FA_OK);
    fa_ctx_free(ctx);
    if (strcmp(sha, g_db_sha)) fail_msg("%s: the run database changed", path);
}

static const char k_trace[] =
    "{\"schemaVersion\":1,\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":2,\"args\":{\"correlation\":5}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"relu_kernel\",\"pid\":0,\"tid\":7,\"ts\":13,\"dur\":4,\"args\":{\"correlation\":5}}"
    "]}";

static void test_bad_cli_truncated_json_names_byte_offset(void **state)
{
    (void)state;
    size_t cut = strlen(k_trace) - 20;
    char want[64];
    snprintf(want, sizeof want, "at byte %zu", cut);
    expect_refused(put("cut.json", k_trace, cut), "ends early", want);
}

static void test_bad_cli_truncated_gzip_refused(void **state)
{
    (void)state;
    uLongf zlen = compressBound(sizeof k_trace) + 32;
    uint8_t *z = malloc(zlen);
    /* a gzip member: deflateInit2 with windowBits 16+15 */
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    zs.next_in = (Bytef *)k_trace;
    zs.avail_in = sizeof k_trace - 1;
    zs.next_out = z;
    zs.avail_out = (uInt)zlen;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    size_t n = zs.total_out;
    deflateEnd(&zs);
    /* the whole member imports ... */
    char *out = NULL, *err = NULL;
    const char *whole = put("whole.json.gz", z, n);
    int rc = run_trace(whole, tmp("gz-ok.db"), &out, &err);
    if (rc != 0) fail_msg("complete gzip: exit %d: %s", rc, err);
    free(out);
    free(err);
    /* ... cut anywhere inside the deflate stream it is refused */
    expect_refused(put("cut-head.json.gz", z, 12), "gzip", NULL);
    expect_refused(put("cut-mid.json.gz", z, n / 2), "gzip", NULL);
    expect_refused(put("cut-tail.json.gz", z, n - 4), NULL, NULL);
    free(z);
}

static void test_bad_cli_not_json_empty_and_foreign_sqlite_refused(void **state)
{
    (void)state;
    const char junk[] = "{ this is not json";
    expect_refused(put("junk.json", junk, sizeof junk - 1), "byte", NULL);
    expect_refused(put("empty.json", "", 0), NULL, NULL);
    /* a valid SQLite file that is not an Nsight Systems export: our own run database */
    expect_refused(g_db, NULL, NULL);
}

static void test_bad_cli_odd_but_readable_trace_imports_with_faults_counted(void **state)
{
    (void)state;
    static const char odd[] =
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":1,\"args\":{\"correlation\":5}},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":0.5,\"dur\":1,\"args\":{\"correlation\":5}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":2,"
        "\"args\":{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":{\"f\":{\"g\":{\"h\":{\"i\":{\"j\":1}}}}}}}}},\"correlation\":5}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k2\",\"pid\":0,\"tid\":7,\"ts\":NaN,\"dur\":Infinity,"
        "\"args\":{\"correlation\":99999999999999999999999}}"
        "]}";
    char *out = NULL, *err = NULL;
    const char *db = tmp("odd.db");
    int rc = run_trace(put("odd.json", odd, sizeof odd - 1), db, &out, &err);
    if (rc != 0) fail_msg("odd trace: exit %d: %s", rc, err);
    const char *all[] = {"duplicate correlations 1", "non-finite numbers 2", "bad numbers 1", "kernels 1"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strstr(out, all[i]) && !strstr(err, all[i])) fail_msg("summary lacks '%s':\n%s%s", all[i], out, err);
    free(out);
    free(err);
    const char *runs[] = {"runs", "--db", db, NULL};
    assert_int_equal(fa_test_run_cli(runs, &out, NULL), 0);
    assert_non_null(strstr(out, "import"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_cli_truncated_json_names_byte_offset),
        cmocka_unit_test(test_bad_cli_truncated_gzip_refused),
        cmocka_unit_test(test_bad_cli_not_json_empty_and_foreign_sqlite_refused),
        cmocka_unit_test(test_bad_cli_odd_but_readable_trace_imports_with_faults_counted),
    };
    return cmocka_run_group_tests(tests, setup_db, NULL);
}
