/* tests/unit/test_bad_fs — issue 11 filesystem bad-input catalog: an output folder that cannot
 * be written (even by root: under /proc, or below a regular file) and a full disk while writing
 * outputs. Each gives exit 1 (library: FA_ERR_IO) with a message naming the path, and nothing
 * half-written is left behind as if complete: fa_write_file_atomic writes PATH.tmp.<pid> and
 * renames, so PATH keeps its previous content (or stays absent) and no temp file remains.
 * The full disk is simulated two ways: in this process by overriding write(2) (the libraries are
 * linked statically, so their calls land here), and for the CLI by an LD_PRELOAD shim
 * (tests/bad-input/enospc_shim.c, compiled here with the system C compiler). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "testutil.h"

#include "graph/graph.h"

/* ---- write(2) override: after g_limit bytes to fds > 2, ENOSPC (g_limit < 0: off) ---- */
static long long g_limit = -1;
static long long g_written;

ssize_t write(int fd, const void *buf, size_t n)
{
    if (g_limit >= 0 && fd > 2) {
        if (g_written >= g_limit) {
            errno = ENOSPC;
            return -1;
        }
        if ((long long)n > g_limit - g_written) n = (size_t)(g_limit - g_written);
        ssize_t w = syscall(SYS_write, fd, buf, n);
        if (w > 0) g_written += w;
        return w;
    }
    return syscall(SYS_write, fd, buf, n);
}

static void disk_full_after(long long bytes)
{
    g_limit = bytes;
    g_written = 0;
}

static void disk_ok(void) { g_limit = -1; }

static char *slurp(const char *path, size_t *len)
{
    fa_ctx *ctx = fa_ctx_create();
    uint8_t *d = NULL;
    fa_status s = fa_read_file(ctx, path, &d, len);
    fa_ctx_free(ctx);
    return s ? NULL : (char *)d;
}

/* No file in dir whose name contains ".tmp." */
static void assert_no_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) fail_msg("temp file left behind: %s/%s", dir, e->d_name);
    closedir(d);
}

static const char *subdir(const char *name)
{
    static char p[4200];
    snprintf(p, sizeof p, "%s", fa_test_path(fa_test_tmpdir(), name));
    mkdir(p, 0700);
    return p;
}

static fa_graph *zoo(const char *name)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_zoo_build(ctx, name, 1, &g), FA_OK);
    fa_ctx_free(ctx);
    return g;
}

/* Exporting a model onto a full disk, at several fill points (nothing written, one byte, one
 * page, all but the last byte): FA_ERR_IO naming the path and the cause; the earlier file is
 * intact, no temp file remains; with no earlier file, none appears. */
static void test_bad_disk_full_export_keeps_previous_file_and_no_temp(void **state)
{
    (void)state;
    const char *dir = subdir("export");
    char path[4300], fresh[4300];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    snprintf(fresh, sizeof fresh, "%s/new.onnx", dir);
    fa_graph *g = zoo("mlp-tiny");
    fa_ctx *ctx = fa_ctx_create();
    const char old[] = "previous complete file";
    assert_int_equal(fa_write_file_atomic(ctx, path, old, sizeof old - 1), FA_OK);
    uint8_t *full;
    size_t full_len;
    assert_int_equal(fa_onnx_export_buffer(ctx, g, &full, &full_len), FA_OK);
    free(full);
    const long long cuts[] = {0, 1, 4096, (long long)full_len - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        disk_full_after(cuts[k]);
        fa_status s = fa_onnx_export(ctx, g, path);
        fa_status s2 = fa_onnx_export(ctx, g, fresh);
        disk_ok();
        assert_int_equal(s, FA_ERR_IO);
        assert_int_equal(s2, FA_ERR_IO);
        const char *msg = fa_ctx_errmsg(ctx);
        if (!strstr(msg, fresh) || !strstr(msg, strerror(ENOSPC)))
            fail_msg("cut %lld: message: %s", cuts[k], msg);
        size_t len;
        char *now = slurp(path, &len);
        assert_non_null(now);
        assert_int_equal(len, sizeof old - 1);
        assert_memory_equal(now, old, len);
        free(now);
        assert_int_equal(access(fresh, F_OK), -1);
        assert_no_temp_files(dir);
    }
    /* with room again the same call succeeds: the failure was the disk, not the model */
    assert_int_equal(fa_onnx_export(ctx, g, path), FA_OK);
    fa_ctx_free(ctx);
    fa_graph_free(g);
}

static void test_bad_disk_full_tensorproto_write_leaves_nothing(void **state)
{
    (void)state;
    const char *dir = subdir("pb");
    char path[4300];
    snprintf(path, sizeof path, "%s/output_0.pb", dir);
    float data[256] = {0};
    fa_value v = {.data = data, .dtype = FA_DTYPE_FLOAT, .rank = 2, .dims = {16, 16}};
    fa_ctx *ctx = fa_ctx_create();
    disk_full_after(100);
    fa_status s = fa_tensorproto_write(ctx, path, &v, "y");
    disk_ok();
    assert_int_equal(s, FA_ERR_IO);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), path));
    assert_int_equal(access(path, F_OK), -1);
    assert_no_temp_files(dir);
    fa_ctx_free(ctx);
}

/* ---- CLI ---- */

static int cli(const char *const *argv, char **err)
{
    char *out = NULL;
    int rc = fa_test_run_cli(argv, &out, err);
    free(out);
    return rc;
}

static void expect_exit1_naming(const char *const *argv, const char *path, const char *frag)
{
    char *err = NULL;
    int rc = cli(argv, &err);
    if (rc != 1) fail_msg("%s ... %s: exit %d (want 1): %s", argv[0], path, rc, err);
    if (!strstr(err, path)) fail_msg("message does not name %s: %s", path, err);
    if (frag && !strstr(err, frag)) fail_msg("message lacks '%s': %s", frag, err);
    free(err);
}

/* Output paths that fail even for root: under /proc, and below a regular file. */
static void test_bad_output_folder_not_writable(void **state)
{
    (void)state;
    const char *a1[] = {"zoo", "mlp-tiny", "-o", "/proc/fuse-advise-forbidden/m.onnx", NULL};
    expect_exit1_naming(a1, "/proc/fuse-advise-forbidden/m.onnx", NULL);
    char file[4300], below[4400];
    snprintf(file, sizeof file, "%s", fa_test_path(fa_test_tmpdir(), "a-file"));
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_write_file_atomic(ctx, file, "x", 1), FA_OK);
    fa_ctx_free(ctx);
    snprintf(below, sizeof below, "%s/m.onnx", file);
    const char *a2[] = {"zoo", "mlp-tiny", "-o", below, NULL};
    expect_exit1_naming(a2, below, NULL);
    /* exec writes output_<i>.pb into --outputs */
    const char *a3[] = {"exec", "zoo:mlp-tiny", "--outputs", "/proc/fuse-advise-forbidden", "--threads", "1", NULL};
    expect_exit1_naming(a3, "/proc/fuse-advise-forbidden", NULL);
    const char *a4[] = {"exec", "zoo:mlp-tiny", "--outputs", file, "--threads", "1", NULL};
    expect_exit1_naming(a4, file, NULL);
}

/* `run --out` into a folder that cannot exist: exit 1 naming it; a database that already held a
 * run keeps it. */
static void test_bad_run_out_folder_not_writable_keeps_database(void **state)
{
    (void)state;
    const char *db = fa_test_path(fa_test_tmpdir(), "runout.db");
    char dbp[4300];
    snprintf(dbp, sizeof dbp, "%s", db);
    const char *good[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "1", "--warmup", "0", "--threads", "1",
                          "--tag", "good", "--db", dbp, NULL};
    char *err = NULL;
    int rc = cli(good, &err);
    if (rc != 0) fail_msg("good run: exit %d: %s", rc, err);
    free(err);
    const char *bad[] = {"run", "zoo:mlp-tiny", "--iters", "1", "--warmup", "0", "--threads", "1",
                         "--db", dbp, "--out", "/proc/fuse-advise-forbidden/out", NULL};
    expect_exit1_naming(bad, "/proc/fuse-advise-forbidden/out", NULL);
    const char *runs[] = {"runs", "--db", dbp, NULL};
    char *out = NULL;
    assert_int_equal(fa_test_run_cli(runs, &out, NULL), 0);
    assert_non_null(strstr(out, "good"));
    free(out);
}

/* The CLI on a full disk (LD_PRELOAD shim): `zoo -o` exits 1 naming the file and the cause, the
 * previous file is intact, no temp file remains. */
static void test_bad_cli_disk_full_keeps_previous_output(void **state)
{
    (void)state;
    const char *src = getenv("FA_SOURCE_DIR");
    assert_non_null(src);
    char shim_c[4200], shim[4300], cmd[9000];
    snprintf(shim_c, sizeof shim_c, "%s/tests/bad-input/enospc_shim.c", src);
    snprintf(shim, sizeof shim, "%s", fa_test_path(fa_test_tmpdir(), "enospc_shim.so"));
    const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
    snprintf(cmd, sizeof cmd, "%s -shared -fPIC -O1 -o '%s' '%s' 2>&1", cc, shim, shim_c);
    if (system(cmd) != 0) {
        print_message("no C compiler (%s) to build the ENOSPC shim: CLI disk-full case not run\n", cc);
        skip();
    }
    const char *dir = subdir("cli-full");
    char path[4300];
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    const char old[] = "previous complete model";
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_write_file_atomic(ctx, path, old, sizeof old - 1), FA_OK);
    fa_ctx_free(ctx);
    setenv("LD_PRELOAD", shim, 1);
    setenv("FA_ENOSPC_MATCH", "/cli-full/", 1);
    setenv("FA_ENOSPC_AFTER", "1000", 1);
    /* the shim cannot come before an ASan runtime; tell ASan that is fine */
    const char *asan = getenv("ASAN_OPTIONS");
    char asan_opts[1024];
    snprintf(asan_opts, sizeof asan_opts, "%s%sverify_asan_link_order=0", asan ? asan : "", asan && *asan ? ":" : "");
    setenv("ASAN_OPTIONS", asan_opts, 1);
    const char *argv[] = {"zoo", "mlp-tiny", "-o", path, NULL};
    char *err = NULL;
    int rc = cli(argv, &err);
    unsetenv("LD_PRELOAD");
    unsetenv("FA_ENOSPC_MATCH");
    unsetenv("FA_ENOSPC_AFTER");
    if (asan) setenv("ASAN_OPTIONS", asan, 1); else unsetenv("ASAN_OPTIONS");
    if (rc != 1) fail_msg("zoo -o on a full disk: exit %d (want 1): %s", rc, err);
    if (!strstr(err, path) || !strstr(err, strerror(ENOSPC))) fail_msg("message: %s", err);
    free(err);
    size_t len;
    char *now = slurp(path, &len);
    assert_non_null(now);
    assert_int_equal(len, sizeof old - 1);
    assert_memory_equal(now, old, len);
    free(now);
    assert_no_temp_files(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_disk_full_export_keeps_previous_file_and_no_temp),
        cmocka_unit_test(test_bad_disk_full_tensorproto_write_leaves_nothing),
        cmocka_unit_test(test_bad_output_folder_not_writable),
        cmocka_unit_test(test_bad_run_out_folder_not_writable_keeps_database),
        cmocka_unit_test(test_bad_cli_disk_full_keeps_previous_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
