/* tests/unit/test_bad_db — the issue 11 database bad-input catalog at the command line: a run
 * database that is read-only, locked by another writer beyond the busy timeout, not SQLite,
 * from a newer schema version, truncated, or at a path that cannot be a file. Each makes
 * `fuse-advise run` exit 1 with a message naming the database, and nothing already stored is
 * lost (the earlier run is still listed by `runs`, the file passes integrity_check). */
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

static const char *db_path(const char *name)
{
    static char p[4200];
    snprintf(p, sizeof p, "%s", fa_test_path(fa_test_tmpdir(), name));
    return p;
}

/* `fuse-advise run zoo:mlp-tiny --db DB` (1 timed iteration); returns exit code, *err stderr. */
static int run_into(const char *db, const char *tag, char **err)
{
    const char *argv[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "1", "--warmup", "0",
                          "--threads", "1", "--tag", tag, "--db", db, NULL};
    char *out = NULL;
    int rc = fa_test_run_cli(argv, &out, err);
    free(out);
    return rc;
}

static void make_good_db(const char *db)
{
    char *err = NULL;
    int rc = run_into(db, "good", &err);
    if (rc != 0) fail_msg("good run failed (%d): %s", rc, err);
    free(err);
}

/* Number of runs with tag `tag` read straight from the file (read-only), -1 if unreadable. */
static int count_runs(const char *db, const char *tag)
{
    sqlite3 *h = NULL;
    int n = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(h, "SELECT count(*) FROM runs WHERE tag = ?1", -1, &q, NULL) == SQLITE_OK) {
            sqlite3_bind_text(q, 1, tag, -1, SQLITE_STATIC);
            if (sqlite3_step(q) == SQLITE_ROW) n = sqlite3_column_int(q, 0);
        }
        sqlite3_finalize(q);
    }
    sqlite3_close(h);
    return n;
}

static int query_int(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    int n = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
            n = sqlite3_column_int(q, 0);
        sqlite3_finalize(q);
    }
    sqlite3_close(h);
    return n;
}

static void assert_integrity_ok(const char *db)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "ok");
    sqlite3_finalize(q);
    sqlite3_close(h);
}

static void sha_of(const char *path, char out[65])
{
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_sha256_file(ctx, path, out), FA_OK);
    fa_ctx_free(ctx);
}

/* run exits 1 and stderr names `db` and contains frag. */
static void expect_run_refused(const char *db, const char *frag)
{
    char *err = NULL;
    int rc = run_into(db, "bad", &err);
    if (rc != 1) fail_msg("run --db %s: exit %d (want 1): %s", db, rc, err);
    if (!strstr(err, db)) fail_msg("message does not name the database: %s", err);
    if (frag && !strstr(err, frag)) fail_msg("message lacks '%s': %s", frag, err);
    free(err);
}

static void test_bad_db_not_sqlite_refused_and_untouched(void **state)
{
    (void)state;
    const char *db = db_path("notes.db");
    const char text[] = "these are my notes, not a database\n";
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_write_file_atomic(ctx, db, text, sizeof text - 1), FA_OK);
    fa_ctx_free(ctx);
    char before[65], after[65];
    sha_of(db, before);
    expect_run_refused(db, NULL);
    const char *argv[] = {"runs", "--db", db, NULL};
    char *err = NULL;
    assert_int_equal(fa_test_run_cli(argv, NULL, &err), 1);
    assert_non_null(strstr(err, db));
    free(err);
    sha_of(db, after);
    assert_string_equal(before, after);
    struct stat sb;
    char side[4300];
    snprintf(side, sizeof side, "%s-wal", db);
    assert_int_not_equal(stat(side, &sb), 0); /* no WAL created next to someone else's file */
}

static void test_bad_db_newer_schema_refused_no_downgrade(void **state)
{
    (void)state;
    const char *db = db_path("newer.db");
    make_good_db(db);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "PRAGMA user_version = 999", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    char before[65], after[65];
    sha_of(db, before);
    expect_run_refused(db, "newer");
    sha_of(db, after);
    assert_string_equal(before, after);
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), 999); /* not downgraded */
    sqlite3_finalize(q);
    sqlite3_close(h);
    assert_int_equal(count_runs(db, "good"), 1);
}

static void test_bad_db_read_only_file_write_refused_reads_work(void **state)
{
    (void)state;
    const char *db = db_path("ro.db");
    make_good_db(db);
    assert_int_equal(chmod(db, 0444), 0);
    expect_run_refused(db, "read-only");
    const char *argv[] = {"runs", "--db", db, NULL};
    char *out = NULL, *err = NULL;
    int rc = fa_test_run_cli(argv, &out, &err);
    if (rc != 0) fail_msg("runs on a read-only database: exit %d: %s", rc, err);
    assert_non_null(strstr(out, "good"));
    free(out);
    free(err);
    assert_int_equal(chmod(db, 0644), 0);
    assert_int_equal(count_runs(db, "good"), 1);
    assert_int_equal(count_runs(db, "bad"), 0);
    assert_integrity_ok(db);
}

/* Another process holds the write lock longer than the 10 s busy timeout: the run fails with a
 * message naming the database and the lock, and once the holder is gone the earlier run is
 * intact and a new run succeeds. */
static void test_bad_db_locked_by_other_writer_beyond_busy_timeout(void **state)
{
    (void)state;
    const char *db = db_path("locked.db");
    make_good_db(db);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t holder = fork();
    assert_true(holder >= 0);
    if (holder == 0) {
        sqlite3 *h = NULL;
        if (sqlite3_open(db, &h) != SQLITE_OK) _exit(2);
        if (sqlite3_exec(h, "BEGIN EXCLUSIVE; CREATE TABLE holder_scratch(x); INSERT INTO holder_scratch VALUES (1);",
                         NULL, NULL, NULL) != SQLITE_OK)
            _exit(3);
        if (write(ready[1], "x", 1) != 1) _exit(4);
        sleep(60); /* killed by the parent; never commits */
        _exit(0);
    }
    close(ready[1]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    uint64_t t0 = fa_now_ns();
    char *err = NULL;
    int rc = run_into(db, "bad", &err);
    double waited = (double)(fa_now_ns() - t0) / 1e9;
    kill(holder, SIGKILL);
    int st;
    waitpid(holder, &st, 0);
    if (rc != 1) fail_msg("run while locked: exit %d (want 1): %s", rc, err);
    if (!strstr(err, db)) fail_msg("message does not name the database: %s", err);
    if (!strstr(err, "lock") && !strstr(err, "busy")) fail_msg("message does not say it is locked: %s", err);
    free(err);
    assert_true(waited >= 9.0); /* it waited for the busy timeout, did not give up at once */
    assert_int_equal(count_runs(db, "good"), 1);
    /* the killed holder's uncommitted transaction is gone */
    assert_int_equal(query_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'holder_scratch'"), 0);
    assert_integrity_ok(db);
    /* the database works again */
    err = NULL;
    rc = run_into(db, "after", &err);
    if (rc != 0) fail_msg("run after the lock: exit %d: %s", rc, err);
    free(err);
    assert_int_equal(count_runs(db, "good"), 1);
    assert_int_equal(count_runs(db, "after"), 1);
}

/* A database cut in half (a copy interrupted mid-way): refused or read as far as SQLite can,
 * never a crash; the message names the file. */
static void test_bad_db_truncated_file_refused_by_name(void **state)
{
    (void)state;
    const char *db = db_path("cut.db");
    make_good_db(db);
    /* checkpoint so the whole database is in the main file, then cut it */
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    struct stat sb;
    assert_int_equal(stat(db, &sb), 0);
    assert_int_equal(truncate(db, sb.st_size / 2), 0);
    const char *argv[] = {"runs", "--db", db, NULL};
    char *out = NULL, *err = NULL;
    int rc = fa_test_run_cli(argv, &out, &err);
    if (rc != 0 && !(rc == 1 && strstr(err, db))) fail_msg("runs on a cut database: exit %d: %s", rc, err);
    free(out);
    free(err);
    err = NULL;
    rc = run_into(db, "bad", &err);
    if (rc != 0 && !(rc == 1 && strstr(err, db))) fail_msg("run on a cut database: exit %d: %s", rc, err);
    free(err);
}

/* Paths that cannot hold a database even for root: under /proc, below a regular file, a folder. */
static void test_bad_db_path_not_creatable(void **state)
{
    (void)state;
    expect_run_refused("/proc/fuse-advise-forbidden/x.db", NULL);
    const char *file = db_path("plain-file");
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_write_file_atomic(ctx, file, "x", 1), FA_OK);
    fa_ctx_free(ctx);
    char below[4300];
    snprintf(below, sizeof below, "%s/x.db", file);
    expect_run_refused(below, NULL);
    expect_run_refused(fa_test_tmpdir(), NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_db_not_sqlite_refused_and_untouched),
        cmocka_unit_test(test_bad_db_newer_schema_refused_no_downgrade),
        cmocka_unit_test(test_bad_db_read_only_file_write_refused_reads_work),
        cmocka_unit_test(test_bad_db_locked_by_other_writer_beyond_busy_timeout),
        cmocka_unit_test(test_bad_db_truncated_file_refused_by_name),
        cmocka_unit_test(test_bad_db_path_not_creatable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
