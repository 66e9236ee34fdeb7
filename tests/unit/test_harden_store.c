/* tests/unit/test_harden_store — issue 15 "Run state in the database", the file-level kinds:
 * a schema version outside what this build knows (negative ones index no migration table) is
 * refused without touching the file; read verbs on a read-only database file work and leave no
 * -wal/-shm behind; database errors name the file and SQLite's reason, never our source files.
 * (A read-only filesystem: tests/cli/harden_readonly_fs.sh.) */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "store/store.h"

static int cli(const char *const *argv, char **out, char **err)
{
    char *o = NULL, *e = NULL;
    int rc = fa_test_run_cli(argv, &o, &e);
    if (getenv("FA_TEST_VERBOSE")) fprintf(stderr, "%s: exit %d\n%s%s", argv[0], rc, o, e);
    if (out) *out = o;
    else free(o);
    if (err) *err = e;
    else free(e);
    return rc;
}

static void make_run(const char *db, const char *tag)
{
    const char *argv[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "3", "--warmup", "0", "--threads", "1",
                          "--tag", tag, "--db", db, NULL};
    char *err = NULL;
    int rc = cli(argv, NULL, &err);
    if (rc != 0) fail_msg("run into %s: exit %d: %s", db, rc, err);
    free(err);
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static bool side_files_absent(const char *db)
{
    char p[4200];
    snprintf(p, sizeof p, "%s-wal", db);
    if (exists(p)) return false;
    snprintf(p, sizeof p, "%s-shm", db);
    return !exists(p);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    fa_ctx *ctx = fa_ctx_create();
    uint8_t *d = NULL;
    assert_int_equal(fa_read_file(ctx, path, &d, n), FA_OK);
    fa_ctx_free(ctx);
    return d;
}

static void set_user_version(const char *db, long long v)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %lld", v);
    assert_int_equal(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_close(h), SQLITE_OK);
}

static void test_schema_version_outside_known_range_refused_file_untouched(void **state)
{
    (void)state;
    const long long versions[] = {-1, -2, -2147483648LL, FA_STORE_SCHEMA_VERSION + 1, 2147483647LL};
    for (size_t k = 0; k < sizeof versions / sizeof versions[0]; k++) {
        char name[64];
        snprintf(name, sizeof name, "ver%zu.db", k);
        const char *db = fa_test_path(fa_test_tmpdir(), name);
        make_run(db, "good");
        set_user_version(db, versions[k]);
        assert_true(side_files_absent(db));
        size_t n0, n1;
        uint8_t *before = slurp(db, &n0);
        const char *verbs[][8] = {
            {"runs", "--db", db, NULL},
            {"show", "1", "--db", db, NULL},
            {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "1", "--db", db, NULL},
        };
        for (int v = 0; v < 3; v++) {
            char *err = NULL;
            int rc = cli(verbs[v], NULL, &err);
            char want[64];
            snprintf(want, sizeof want, "schema version %lld", versions[k]);
            if (rc != 1 || !strstr(err, db) || !strstr(err, want))
                fail_msg("user_version %lld, %s: exit %d (want 1 naming the file and the version): %s", versions[k],
                         verbs[v][0], rc, err);
            free(err);
        }
        uint8_t *after = slurp(db, &n1);
        assert_int_equal(n0, n1);
        assert_memory_equal(before, after, n0);
        assert_true(side_files_absent(db));
        free(before);
        free(after);
    }
}

static void test_read_verbs_on_read_only_file_work_and_leave_nothing_behind(void **state)
{
    (void)state;
    const char *db = fa_test_path(fa_test_tmpdir(), "ro.db");
    make_run(db, "base");
    make_run(db, "cand");
    assert_true(side_files_absent(db));
    assert_int_equal(chmod(db, 0444), 0);
    const char *rep = fa_test_path(fa_test_tmpdir(), "ro-report");
    const char *verbs[][12] = {
        {"runs", "--db", db, NULL},
        {"runs", "--db", db, "--json", NULL},
        {"show", "1", "--db", db, NULL},
        {"gate", "--baseline", "1", "--candidate", "2", "--db", db, "--max-regression", "10%", NULL},
        {"report", "2", "--db", db, "-o", rep, NULL},
    };
    for (size_t v = 0; v < sizeof verbs / sizeof verbs[0]; v++) {
        char *err = NULL;
        int rc = cli(verbs[v], NULL, &err);
        if (rc != 0 && rc != 3) fail_msg("%s on a 0444 database: exit %d: %s", verbs[v][0], rc, err);
        free(err);
        if (!side_files_absent(db)) fail_msg("%s on a 0444 database left -wal/-shm behind", verbs[v][0]);
    }
    /* the owner makes it writable again: writes work (no stale 0444 -shm in the way) */
    assert_int_equal(chmod(db, 0644), 0);
    make_run(db, "after");
}

static void test_database_errors_name_the_file_not_our_sources(void **state)
{
    (void)state;
    const char *db = fa_test_path(fa_test_tmpdir(), "corrupt.db");
    make_run(db, "good");
    /* keep page 1 (header + schema), wreck every other page: the tables are unreadable */
    size_t n;
    uint8_t *d = slurp(db, &n);
    assert_true(n > 16384 * 2);
    for (size_t i = 16384; i < n; i++) d[i] = (uint8_t)(0xA5 ^ (i * 131));
    int fd = open(db, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, d, n), (ssize_t)n);
    close(fd);
    free(d);
    const char *verbs[][10] = {
        {"runs", "--db", db, NULL},
        {"show", "1", "--db", db, NULL},
        {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "1", "--db", db, NULL},
    };
    for (int v = 0; v < 3; v++) {
        char *err = NULL;
        int rc = cli(verbs[v], NULL, &err);
        if (rc != 1 || !strstr(err, db)) fail_msg("%s on a corrupt database: exit %d: %s", verbs[v][0], rc, err);
        if (strstr(err, ".c:") || strstr(err, "sqlite3_"))
            fail_msg("%s: the message names our source, not what the user can act on: %s", verbs[v][0], err);
        free(err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_version_outside_known_range_refused_file_untouched),
        cmocka_unit_test(test_read_verbs_on_read_only_file_work_and_leave_nothing_behind),
        cmocka_unit_test(test_database_errors_name_the_file_not_our_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
