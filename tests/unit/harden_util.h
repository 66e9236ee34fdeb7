/* tests/unit/harden_util — helpers shared by the issue 15 tests (test_harden_*.c): models built
 * with the graph API and exported, CLI runs with extra environment and a kill switch, direct
 * SQLite reads. Header-only (static functions), included by one test file each. */
#ifndef FA_HARDEN_UTIL_H
#define FA_HARDEN_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "graph/graph.h"

/* TEMP/name in one of 64 rotating static buffers (testutil's fa_test_path has only 8, too few
 * for an argv built from several paths plus the calls below). */
static __attribute__((unused)) const char *hu_tmp(const char *name)
{
    static char bufs[64][4200];
    static int slot;
    char *p = bufs[slot++ & 63];
    snprintf(p, 4200, "%s/%s", fa_test_tmpdir(), name);
    return p;
}

/* A whole file as a string (malloc'd; "" when unreadable). */
static __attribute__((unused)) char *hu_slurp(const char *path)
{
    fa_ctx *ctx = fa_ctx_create();
    uint8_t *d = NULL;
    size_t n = 0;
    if (fa_read_file(ctx, path, &d, &n)) d = (uint8_t *)strdup("");
    fa_ctx_free(ctx);
    return (char *)d;
}

static __attribute__((unused)) bool hu_exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* X[rows, cols] float -> n ops cycling Relu, Neg, Sigmoid, Abs -> Y: one elementwise chain the
 * advisor fuses into generated kernels (max_ops per cluster), clearly faster fused at 1 thread
 * (1.2 against 5.9 us for 6 ops on 16x64), so the probe proposes it and the applier compiles it
 * whatever the load. (Sigmoid, Tanh, Relu, Neg before 2026-12-03: the generated kernel's tanhf
 * was then SLEEF's u10 variant, slower than the unfused op's u35, and on small tensors at 1
 * thread the probe measured the fused kernel slower and refused the chain; codegen/codegen.c
 * k_tanh_u35 has since made the kernels use u35.) Tensor i (0 < i < n) is named
 * names[i % n_names] + its index when names is given (so hostile names can be tried), else
 * "t<i>". Exported to `path`. */
static __attribute__((unused)) void hu_export_chain(const char *path, int64_t rows, int64_t cols, int n, const char *const *names,
                            int n_names)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("chain");
    assert_non_null(g);
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 13), FA_OK);
    const int64_t dims[2] = {rows, cols};
    int x = fa_graph_tensor(g, names ? names[0] : "X");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 2, dims);
    assert_int_equal(fa_graph_add_input(ctx, g, x), FA_OK);
    static const char *const ops[] = {"Relu", "Neg", "Sigmoid", "Abs"};
    char prev[512], next[512], node[512];
    snprintf(prev, sizeof prev, "%s", g->tensors[x]->name);
    for (int i = 0; i < n; i++) {
        if (names) snprintf(next, sizeof next, "%s%d", names[(i + 1) % n_names], i);
        else snprintf(next, sizeof next, "t%d", i);
        if (names) snprintf(node, sizeof node, "%s/node%d", names[i % n_names], i);
        else snprintf(node, sizeof node, "n%d", i);
        const char *in[] = {prev}, *out[] = {next};
        if (!fa_graph_add_node(ctx, g, node, ops[i % 4], "", 1, in, 1, out)) fail_msg("%s", fa_ctx_errmsg(ctx));
        snprintf(prev, sizeof prev, "%s", next);
    }
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, prev)), FA_OK);
    fa_status s = fa_onnx_export(ctx, g, path);
    if (s) fail_msg("export %s: %s", path, fa_ctx_errmsg(ctx));
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* Folder the CLI runs in (hu_cli_env), NULL: the test's own. */
static const char *hu_cwd;
/* Seconds after which the CLI run is killed by SIGALRM (exit 128+14), 0: never. For inputs that
 * used to make it wait forever: the test then fails instead of hanging. */
static int hu_timeout_s;

/* Run the CLI with extra "NAME=VALUE" environment entries (NULL-terminated, may be NULL) in its
 * own process group, stdout/stderr to files under the temp folder. When kill_when is non-NULL,
 * the run is SIGKILLed (whole group) as soon as that path exists (polled every 10 ms); returns
 * 128+9 then. *err: stderr (malloc'd) when non-NULL. */
static __attribute__((unused)) int hu_cli_env(const char *const *argv, const char *const *env, const char *kill_when, char **out, char **err)
{
    const char *clip = getenv("FA_CLI");
    assert_non_null(clip);
    char ofile[4200], efile[4200];
    snprintf(ofile, sizeof ofile, "%s", hu_tmp("hu-stdout"));
    snprintf(efile, sizeof efile, "%s", hu_tmp("hu-stderr"));
    int argc = 0;
    while (argv[argc]) argc++;
    char **av = calloc((size_t)argc + 2, sizeof *av);
    av[0] = (char *)clip;
    for (int i = 0; i < argc; i++) av[i + 1] = (char *)argv[i];
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        setpgid(0, 0);
        for (int i = 0; env && env[i]; i++) putenv((char *)env[i]);
        if (hu_cwd && chdir(hu_cwd) != 0) _exit(126);
        if (hu_timeout_s > 0) alarm((unsigned)hu_timeout_s); /* kept across execv */
        int o = open(ofile, O_WRONLY | O_CREAT | O_TRUNC, 0600), e = open(efile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        execv(clip, av);
        _exit(127);
    }
    setpgid(p, p);
    free(av);
    int st = 0;
    if (kill_when) {
        for (;;) {
            pid_t w = waitpid(p, &st, WNOHANG);
            if (w == p) break;
            if (hu_exists(kill_when)) {
                kill(-p, SIGKILL);
                kill(p, SIGKILL);
                waitpid(p, &st, 0);
                break;
            }
            usleep(10000);
        }
    } else {
        waitpid(p, &st, 0);
    }
    fa_ctx *ctx = fa_ctx_create();
    uint8_t *d = NULL;
    size_t n = 0;
    if (out) *out = fa_read_file(ctx, ofile, &d, &n) ? strdup("") : (char *)d;
    d = NULL;
    if (err) *err = fa_read_file(ctx, efile, &d, &n) ? strdup("") : (char *)d;
    fa_ctx_free(ctx);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (getenv("FA_TEST_VERBOSE")) fprintf(stderr, "[%s: exit %d]\n", argv[0], rc);
    return rc;
}

/* An executable script at `path` standing in for the C compiler: it touches `marker` (so a test
 * knows compiling has begun), appends one line to `log` per invocation (NULL: none), sleeps
 * `sleep_s` seconds, then runs the real cc with the same arguments. */
static __attribute__((unused)) void hu_write_cc_wrapper(const char *path, const char *marker, const char *log, int sleep_s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n: > '%s'\n", marker);
    if (log) fprintf(f, "echo \"$*\" >> '%s'\n", log);
    if (sleep_s > 0) fprintf(f, "sleep %d\n", sleep_s);
    fprintf(f, "exec cc \"$@\"\n");
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

/* One integer from a SQL query on db (read-only, busy timeout 10 s); -1 when absent/unreadable. */
static __attribute__((unused)) long long hu_query_int(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    long long n = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(h, 10000);
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW &&
            sqlite3_column_type(q, 0) != SQLITE_NULL)
            n = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
    }
    sqlite3_close(h);
    return n;
}

/* Text of the first column of a query (malloc'd), NULL when none. */
static __attribute__((unused)) char *hu_query_text(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    char *r = NULL;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(h, 10000);
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW &&
            sqlite3_column_text(q, 0))
            r = strdup((const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
    }
    sqlite3_close(h);
    return r;
}

static __attribute__((unused)) void hu_exec_sql(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s: %s", sql, msg);
    sqlite3_close(h);
}

/* A listing of the tree under dir: "relative/path size fnv64\n" per regular file, "path/\n" per
 * folder, sorted (malloc'd). Two snapshots are equal when the trees hold the same files. */
static __attribute__((unused)) int hu_cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static __attribute__((unused)) void hu_walk(const char *root, const char *rel, char ***items, int *n, int *cap)
{
    char path[8192];
    snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char r[4200], p[8192], line[8400];
        snprintf(r, sizeof r, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        snprintf(p, sizeof p, "%s/%s", root, r);
        struct stat sb;
        if (lstat(p, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode)) {
            snprintf(line, sizeof line, "%s/", r);
            hu_walk(root, r, items, n, cap);
        } else if (!S_ISREG(sb.st_mode)) {
            snprintf(line, sizeof line, "%s (mode %o)", r, (unsigned)sb.st_mode);
        } else {
            fa_ctx *ctx = fa_ctx_create();
            uint8_t *data = NULL;
            size_t len = 0;
            uint64_t h = fa_read_file(ctx, p, &data, &len) ? 0 : fa_hash64(data, len);
            free(data);
            fa_ctx_free(ctx);
            snprintf(line, sizeof line, "%s %zu %016llx", r, len, (unsigned long long)h);
        }
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 64;
            *items = realloc(*items, sizeof(char *) * (size_t)*cap);
        }
        (*items)[(*n)++] = strdup(line);
    }
    closedir(d);
}
static __attribute__((unused)) char *hu_snapshot(const char *dir)
{
    char **items = NULL;
    int n = 0, cap = 0;
    hu_walk(dir, "", &items, &n, &cap);
    qsort(items, (size_t)n, sizeof *items, hu_cmp_str);
    fa_buf b;
    fa_buf_init(&b);
    for (int i = 0; i < n; i++) {
        fa_buf_printf(&b, "%s\n", items[i]);
        free(items[i]);
    }
    free(items);
    if (!b.data) fa_buf_puts(&b, "");
    return b.data;
}

/* Entries of dir whose name contains `part` (e.g. ".tmp." or ".fa-staging."), recursively: the
 * first one found (malloc'd) or NULL. */
static __attribute__((unused)) char *hu_find_name(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    if (!d) return NULL;
    struct dirent *e;
    char *found = NULL;
    while (!found && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (strstr(e->d_name, part)) found = strdup(p);
        else if (e->d_type == DT_DIR) found = hu_find_name(p, part);
    }
    closedir(d);
    return found;
}

/* Build tests/bad-input/enospc_shim.c into the temp folder; NULL when no C compiler. */
static __attribute__((unused)) const char *hu_enospc_shim(void)
{
    static char shim[4200];
    if (shim[0]) return shim;
    const char *src = getenv("FA_SOURCE_DIR");
    assert_non_null(src);
    char cmd[9000];
    snprintf(shim, sizeof shim, "%s", hu_tmp("enospc_shim.so"));
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -o '%s' '%s/tests/bad-input/enospc_shim.c' 2>&1", shim, src);
    if (system(cmd) != 0) {
        shim[0] = 0;
        return NULL;
    }
    return shim;
}

#endif
