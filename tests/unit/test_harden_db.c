/* tests/unit/test_harden_db — issue 32, run databases and connection strings from elsewhere are
 * untrusted input (docs/hardening.md "Untrusted databases and connection strings"): a file whose
 * schema is not ours (a view over an endless query where a table is expected, a trigger, an extra,
 * missing or retyped column) is refused at open naming the difference, before any verb reads it;
 * NULL and wrong-typed values are refused naming table, row and column (never "out of memory");
 * one value over the length limit is refused the same way, read or written; a step of a statement
 * is bounded in time; a connection string's password is never shown or stored in any of its
 * forms, and a libpq keyword/value string is never taken as a file name. The PostgreSQL side
 * (import-runs into a server, a server's altered schema): tests/cli/harden_db_pg.sh. */
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#include "store/store-impl.h" /* white-box: the raw connection (fa_store_db) */
#include "store/store.h"

/* The CLI with a wall-clock limit: fails the test when it runs past `secs` (a hang). stdout and
 * stderr in malloc'd strings when asked. */
static int cli_within(const char *const *argv, int secs, char **out, char **err)
{
    const char *clip = getenv("FA_CLI");
    assert_non_null(clip);
    char ofile[4200], efile[4200];
    snprintf(ofile, sizeof ofile, "%s/hdb-stdout", fa_test_tmpdir());
    snprintf(efile, sizeof efile, "%s/hdb-stderr", fa_test_tmpdir());
    int argc = 0;
    while (argv[argc]) argc++;
    char **av = calloc((size_t)argc + 2, sizeof *av);
    av[0] = (char *)clip;
    for (int i = 0; i < argc; i++) av[i + 1] = (char *)argv[i];
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        setpgid(0, 0);
        int o = open(ofile, O_WRONLY | O_CREAT | O_TRUNC, 0600), e = open(efile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        execv(clip, av);
        _exit(127);
    }
    free(av);
    int st = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (waitpid(p, &st, WNOHANG) == p) break;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (t1.tv_sec - t0.tv_sec > secs) {
            kill(-p, SIGKILL);
            waitpid(p, &st, 0);
            fail_msg("fuse-advise %s ran past %d s (it hangs)", argv[0], secs);
        }
        usleep(20000);
    }
    fa_ctx *ctx = fa_ctx_create();
    uint8_t *d = NULL;
    size_t n = 0;
    if (out) *out = fa_read_file(ctx, ofile, &d, &n) ? strdup("") : (char *)d;
    d = NULL;
    if (err) *err = fa_read_file(ctx, efile, &d, &n) ? strdup("") : (char *)d;
    fa_ctx_free(ctx);
    if (getenv("FA_TEST_VERBOSE")) fprintf(stderr, "%s: exit %d\n%s", argv[0], WEXITSTATUS(st), err ? *err : "");
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* TEMP/name in one of 64 rotating buffers (testutil's fa_test_path has 8: too few here). */
static const char *tmp_path(const char *name)
{
    static char bufs[64][4200];
    static int slot;
    char *p = bufs[slot++ & 63];
    snprintf(p, 4200, "%s/%s", fa_test_tmpdir(), name);
    return p;
}

/* A real run database with one run (zoo:mlp-tiny, no apply), made by the CLI. */
static const char *make_run_db(const char *name)
{
    const char *db = tmp_path(name);
    unlink(db);
    char w[4300], s[4300];
    snprintf(w, sizeof w, "%s-wal", db);
    snprintf(s, sizeof s, "%s-shm", db);
    unlink(w);
    unlink(s);
    static char keep[8][4200];
    static int slot;
    char *k = keep[slot++ & 7];
    snprintf(k, 4200, "%s", db);
    const char *argv[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "3", "--warmup", "0", "--threads", "1",
                          "--db", k, NULL};
    char *err = NULL;
    int rc = cli_within(argv, 300, NULL, &err);
    if (rc != 0) fail_msg("run into %s: exit %d: %s", k, rc, err);
    free(err);
    return k;
}

/* SQL on the file as another program would write it (no defensive settings). */
static void raw_sql(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    char *e = NULL;
    if (sqlite3_exec(h, sql, NULL, NULL, &e) != SQLITE_OK) fail_msg("%s: %s", sql, e);
    assert_int_equal(sqlite3_close(h), SQLITE_OK);
}

static void copy_file(const char *from, const char *to)
{
    fa_ctx *ctx = fa_ctx_create();
    uint8_t *d = NULL;
    size_t n = 0;
    assert_int_equal(fa_read_file(ctx, from, &d, &n), FA_OK);
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
    free(d);
    fa_ctx_free(ctx);
}

/* Every read verb on db exits 1 within a few seconds, its message naming the file and each of
 * `want` (NULL-terminated). */
static void read_verbs_refuse(const char *db, const char *const *want)
{
    const char *rep = tmp_path("hdb-report");
    const char *verbs[][12] = {
        {"runs", "--db", db, NULL},
        {"show", "1", "--db", db, NULL},
        {"report", "1", "--db", db, "-o", rep, NULL},
        {"gate", "--baseline", "1", "--candidate", "1", "--db", db, NULL},
        {"analyze", "1", "--db", db, NULL},
    };
    for (size_t v = 0; v < sizeof verbs / sizeof verbs[0]; v++) {
        char *err = NULL;
        int rc = cli_within(verbs[v], 60, NULL, &err);
        if (rc != 1 || !strstr(err, db)) fail_msg("%s on %s: exit %d (want 1 naming the file): %s", verbs[v][0], db, rc, err);
        for (int k = 0; want[k]; k++)
            if (!strstr(err, want[k])) fail_msg("%s: the message does not say \"%s\": %s", verbs[v][0], want[k], err);
        free(err);
    }
}

/* The column list of `table` as "NULL AS a, NULL AS b, ..." with `status` set to 'ok' (a view that
 * answers every query of the verbs with rows they read). */
static char *view_columns(const char *db, const char *table)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT name FROM pragma_table_info('%s')", table);
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &q, NULL), SQLITE_OK);
    fa_buf b;
    fa_buf_init(&b);
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(q, 0);
        fa_buf_printf(&b, "%s%s AS %s", b.len ? ", " : "",
                      !strcmp(c, "id") ? "x" : !strcmp(c, "status") ? "'ok'" : !strcmp(c, "kind") ? "'run'" : "1", c);
    }
    sqlite3_finalize(q);
    sqlite3_close(h);
    return b.data;
}

static void test_db_view_over_endless_query_refused_before_any_verb_reads_it(void **state)
{
    (void)state;
    const char *db = make_run_db("view.db");
    /* `runs` becomes a view over an endless recursive query: every verb reading runs would never
     * end (it did on the main of before) */
    char *cols = view_columns(db, "runs");
    char sql[8192];
    snprintf(sql, sizeof sql,
             "PRAGMA foreign_keys = OFF; DROP TABLE runs; CREATE VIEW runs AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
             "SELECT x + 1 FROM c) SELECT %s FROM c;",
             cols);
    free(cols);
    raw_sql(db, sql);
    const char *want[] = {"view 'runs'", "refusing to read it", NULL};
    read_verbs_refuse(db, want);
    /* the same view under a name no verb reads still makes the file not ours */
    const char *db2 = make_run_db("view2.db");
    raw_sql(db2, "CREATE VIEW extra AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c;");
    const char *want2[] = {"view 'extra'", NULL};
    read_verbs_refuse(db2, want2);
}

static void test_db_trigger_or_other_schema_refused_naming_the_difference(void **state)
{
    (void)state;
    const char *base = make_run_db("schema-base.db");
    static const struct {
        const char *sql, *want;
    } cases[] = {
        /* a trigger runs on every write of a verb that recovers runs or stores a result */
        {"CREATE TRIGGER t AFTER UPDATE ON runs BEGIN UPDATE runs SET tag = 'x'; END;", "trigger 't'"},
        /* the import-runs injection: a column name that closes a column list elsewhere */
        {"ALTER TABLE kernels ADD COLUMN \"x) FROM STDIN; UPDATE runs SET tag = 'pwned' --\" TEXT;",
         "table 'kernels' has a column 'x) FROM STDIN; UPDATE runs SET tag = \\x27pwned\\x27 --'"},
        {"ALTER TABLE runs DROP COLUMN dim_defaults;", "table 'runs' lacks column 'dim_defaults'"},
        {"ALTER TABLE runs ADD COLUMN g INTEGER GENERATED ALWAYS AS (1) VIRTUAL;", "table 'runs' has a column 'g'"},
        {"CREATE TABLE extra(x);", "table 'extra'"},
        {"CREATE INDEX kernels_by_name ON kernels(name);", "index 'kernels_by_name'"},
        {"DROP INDEX runs_by_tag;", "lacks index 'runs_by_tag'"},
        /* same name, other declaration: the type a verb relies on */
        {"PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = replace(sql, 'kind TEXT NOT NULL', "
         "'kind BLOB NOT NULL') WHERE name = 'runs';",
         "table 'runs', column 'kind' (its type, NOT NULL, default, key or generation) is declared otherwise"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "schema%zu.db", i);
        const char *db = tmp_path(name);
        copy_file(base, db);
        raw_sql(db, cases[i].sql);
        const char *want[] = {cases[i].want, "schema version", NULL};
        read_verbs_refuse(db, want);
        /* and as the source of import-runs: refused, the destination untouched */
        const char *dst = tmp_path("schema-dst.db");
        copy_file(base, dst);
        const char *argv[] = {"import-runs", db, "--db", dst, NULL};
        char *err = NULL;
        int rc = cli_within(argv, 60, NULL, &err);
        if (rc != 1 || !strstr(err, cases[i].want)) fail_msg("import-runs from case %zu: exit %d: %s", i, rc, err);
        free(err);
        assert_int_equal(fa_test_store_sql_i64(dst, "SELECT count(*) FROM runs"), 1);
    }
}

static void test_db_null_or_wrong_typed_value_named_by_table_row_and_column(void **state)
{
    (void)state;
    const char *base = make_run_db("types-base.db");
    static const struct {
        const char *sql, *want;
    } cases[] = {
        /* text where an integer is declared: INTEGER affinity keeps 'many' as text */
        {"UPDATE runs SET threads = 'many';", "table 'runs', row (id 1), column 'threads': text where the schema has an integer"},
        {"UPDATE runs SET started_at_ns = 1.5;", "column 'started_at_ns': a real number where the schema has an integer"},
        {"UPDATE kernels SET name = x'00ff' WHERE seq = 0;",
         "table 'kernels', row (run_id 1, seq 0), column 'name': a blob where the schema has text"},
        /* NULL in a NOT NULL column (written with the constraint taken off, then put back): was
         * "out of memory" */
        {"PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = replace(sql, 'kind TEXT NOT NULL', 'kind TEXT') "
         "WHERE name = 'runs'; PRAGMA writable_schema = OFF;",
         "table 'runs', row (id 1), column 'kind': NULL where the schema requires a value"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "types%zu.db", i);
        const char *db = tmp_path(name);
        copy_file(base, db);
        raw_sql(db, cases[i].sql);
        if (i == 3) /* the NULL, then the schema as it was */
            raw_sql(db, "UPDATE runs SET kind = NULL; PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = "
                        "replace(sql, 'kind TEXT,', 'kind TEXT NOT NULL,') WHERE name = 'runs';");
        const char *rep = tmp_path("types-report");
        const char *verbs[][10] = {
            {"runs", "--db", db, NULL},
            {"report", "1", "--db", db, "-o", rep, NULL},
        };
        for (int v = 0; v < 2; v++) {
            if (i == 2 && v == 0) continue; /* `runs` reads no kernel */
            char *err = NULL;
            int rc = cli_within(verbs[v], 60, NULL, &err);
            if (rc != 1 || !strstr(err, cases[i].want) || strstr(err, "out of memory"))
                fail_msg("case %zu, %s: exit %d (want 1 saying \"%s\"): %s", i, verbs[v][0], rc, cases[i].want, err);
            free(err);
        }
    }
}

/* A zero-byte file named as the database of a verb that only reads: `runs` wrote a 311 KB schema
 * into it (exit 0) and `show` called it "needing migration"; both refuse it as empty, and the file
 * stays empty. */
static void test_db_empty_file_is_not_a_database_to_a_reading_verb(void **state)
{
    (void)state;
    const char *db = tmp_path("zero.db");
    unlink(db);
    FILE *f = fopen(db, "wb");
    assert_non_null(f);
    fclose(f);
    const char *verbs[][8] = {{"runs", "--db", db, NULL}, {"show", "latest", "--db", db, NULL}};
    for (int v = 0; v < 2; v++) {
        char *err = NULL;
        int rc = cli_within(verbs[v], 60, NULL, &err);
        if (rc != 1 || !strstr(err, db) || !strstr(err, "an empty file, not a run database"))
            fail_msg("%s: exit %d: %s", verbs[v][0], rc, err);
        free(err);
    }
    struct stat sb;
    assert_int_equal(stat(db, &sb), 0);
    assert_int_equal(sb.st_size, 0);
}

/* A refused database gains no files beside it: a cut copy of a real (WAL-mode) run database
 * given to `runs` left a -wal and -shm that SQLite made, and the message then blamed "the -wal
 * file beside it"; a crafted schema likewise. The files are removed and the message does not
 * blame them; a -wal that was there before is kept. */
static void test_db_refused_file_gains_no_wal_or_shm(void **state)
{
    (void)state;
    const char *base = make_run_db("side-base.db");
    uint8_t *d = NULL;
    size_t n = 0;
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_read_file(ctx, base, &d, &n), FA_OK);
    fa_ctx_free(ctx);
    assert_true(n > 5000);
    char db[4300], wal[4400], shm[4400];
    snprintf(db, sizeof db, "%s", tmp_path("side-cut.db"));
    snprintf(wal, sizeof wal, "%s-wal", db);
    snprintf(shm, sizeof shm, "%s-shm", db);
    unlink(wal);
    unlink(shm);
    FILE *f = fopen(db, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, 5000, f), 5000);
    fclose(f);
    free(d);
    const char *argv[] = {"runs", "--db", db, NULL};
    char *err = NULL;
    int rc = cli_within(argv, 60, NULL, &err);
    if (rc != 1 || !strstr(err, db) || strstr(err, "-wal")) fail_msg("runs on a cut database: exit %d: %s", rc, err);
    free(err);
    struct stat sb;
    if (stat(wal, &sb) == 0 || stat(shm, &sb) == 0) fail_msg("a -wal or -shm was left beside the refused %s", db);
    /* a crafted schema (an extra table) */
    char db2[4300], wal2[4400], shm2[4400];
    snprintf(db2, sizeof db2, "%s", tmp_path("side-extra.db"));
    copy_file(base, db2);
    raw_sql(db2, "CREATE TABLE zzz(x INTEGER);");
    snprintf(wal2, sizeof wal2, "%s-wal", db2);
    snprintf(shm2, sizeof shm2, "%s-shm", db2);
    unlink(wal2);
    unlink(shm2);
    const char *argv2[] = {"runs", "--db", db2, NULL};
    err = NULL;
    rc = cli_within(argv2, 60, NULL, &err);
    if (rc != 1 || !strstr(err, "zzz")) fail_msg("runs on a crafted schema: exit %d: %s", rc, err);
    free(err);
    if (stat(wal2, &sb) == 0 || stat(shm2, &sb) == 0) fail_msg("a -wal or -shm was left beside the refused %s", db2);
}

/* A -shm or -wal hard-linked to another file is that file: SQLite rewrote it in place (a file
 * linked as DB-shm became 32 KiB of shm index on `runs`, one linked as DB-wal WAL frames on `run`;
 * the sixth attack pass). Refused naming the companion; the other file is untouched. */
static void test_db_hard_linked_companion_refused_and_untouched(void **state)
{
    (void)state;
    const char *base = make_run_db("hl-base.db");
    const char *suffix[] = {"-shm", "-wal"};
    for (int i = 0; i < 2; i++) {
        char db[4300], comp[4400], victim[4400];
        snprintf(db, sizeof db, "%s", tmp_path(i ? "hl-wal.db" : "hl-shm.db"));
        copy_file(base, db);
        snprintf(comp, sizeof comp, "%s%s", db, suffix[i]);
        snprintf(victim, sizeof victim, "%s.victim", db);
        FILE *f = fopen(victim, "w");
        assert_non_null(f);
        fputs("precious\n", f);
        fclose(f);
        unlink(comp);
        assert_int_equal(link(victim, comp), 0);
        const char *verbs[][8] = {{"runs", "--db", db, NULL}, {"show", "1", "--db", db, NULL},
                                  {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "2", "--db", db, NULL}};
        for (int v = 0; v < 3; v++) {
            char *err = NULL;
            int rc = cli_within(verbs[v], 120, NULL, &err);
            if (rc != 1 || !strstr(err, comp) || !strstr(err, "hard links"))
                fail_msg("%s with a linked %s: exit %d: %s", verbs[v][0], suffix[i], rc, err);
            free(err);
        }
        struct stat sb;
        assert_int_equal(stat(victim, &sb), 0);
        assert_int_equal(sb.st_size, 9);
        unlink(comp);
        unlink(victim);
    }
}

/* Doctored copies of a run database: each case's SQL applied to a copy of `base`, and each verb
 * its mask names must exit 1 with a message naming the copy and both texts (want2 may be NULL).
 * The verbs read run 1 (gate compares it with itself; export-runs copies into a fresh file). */
enum { V_REPORT = 1, V_RUNS = 2, V_GATE = 4, V_EXPORT = 8, V_SHOW = 16, V_ANALYZE = 32, V_ADVISE = 64, V_COUNT = 7 };
typedef struct doctored_case {
    const char *sql, *want1, *want2;
    unsigned verbs;
} doctored_case;

static void expect_doctored_refused(const char *base, const char *prefix, const doctored_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char name[64], rep[64], to[64];
        snprintf(name, sizeof name, "%s%zu.db", prefix, i);
        snprintf(rep, sizeof rep, "%s-report", prefix);
        snprintf(to, sizeof to, "%s-to.db", prefix);
        char db[4300], repp[4300], top[4300];
        snprintf(db, sizeof db, "%s", tmp_path(name));
        snprintf(repp, sizeof repp, "%s", tmp_path(rep));
        snprintf(top, sizeof top, "%s", tmp_path(to));
        copy_file(base, db);
        raw_sql(db, cases[i].sql);
        const char *verbs[V_COUNT][10] = {
            {"report", "1", "--db", db, "-o", repp, NULL},
            {"runs", "--db", db, NULL},
            {"gate", "--baseline", "1", "--candidate", "1", "--db", db, NULL},
            {"export-runs", "--to", top, "--db", db, NULL},
            {"show", "1", "--db", db, NULL},
            {"analyze", "1", "--db", db, NULL},
            {"advise", "1", "--db", db, NULL},
        };
        for (int v = 0; v < V_COUNT; v++) {
            if (!(cases[i].verbs & (1u << v))) continue;
            unlink(top);
            char *err = NULL;
            int rc = cli_within(verbs[v], 120, NULL, &err);
            if (rc != 1 || !strstr(err, db) || !strstr(err, cases[i].want1) || (cases[i].want2 && !strstr(err, cases[i].want2)))
                fail_msg("%s case %zu (%s), %s: exit %d (want 1 saying \"%s\" and \"%s\"): %s", prefix, i, cases[i].sql,
                         verbs[v][0], rc, cases[i].want1, cases[i].want2 ? cases[i].want2 : "", err);
            free(err);
        }
    }
}

/* A run of zoo:mlp-tiny with its plan applied (plan, clusters, measurements) at tmp_path(name). */
static const char *make_applied_run_db(const char *name, const char *out)
{
    static char keep[4][4200];
    static int slot;
    char *k = keep[slot++ & 3];
    snprintf(k, 4200, "%s", tmp_path(name));
    unlink(k);
    const char *argv[] = {"run", "zoo:mlp-tiny", "--iters", "3", "--warmup", "0", "--threads", "1", "--db", k,
                          "--out", tmp_path(out), NULL};
    char *err = NULL;
    int rc = cli_within(argv, 300, NULL, &err);
    if (rc != 0) fail_msg("run into %s: exit %d: %s", k, rc, err);
    free(err);
    return k;
}

/* Times a doctored database holds that are no duration: a benchmarks latency of 0 or INT64_MIN was
 * dropped as no sample, so `gate` saw a candidate with no records and passed (exit 0), and `show`
 * printed "-4611686018428.374 ms" from a kernels row whose end_ns - start_ns overflowed. Each is
 * refused naming the file, the table, the row and the column. */
static void test_db_times_that_are_no_duration_refused_naming_the_row(void **state)
{
    (void)state;
    const char *base = make_applied_run_db("times-base.db", "times-out");
    static const doctored_case cases[] = {
        {"UPDATE benchmarks SET latency_ns = 0 WHERE iter = 0;", "table benchmarks", "column latency_ns is 0", V_GATE | V_REPORT},
        {"UPDATE benchmarks SET latency_ns = -9223372036854775808 WHERE iter = 1;", "table benchmarks",
         "column latency_ns is -9223372036854775808", V_GATE | V_REPORT},
        {"UPDATE kernels SET start_ns = -9223372036854775808 WHERE seq = 0;", "table kernels, run 1, seq 0", "not a span",
         V_GATE | V_SHOW | V_REPORT},
        {"UPDATE kernels SET end_ns = start_ns - 12 WHERE seq = 3;", "table kernels, run 1, seq 3", "not a span",
         V_GATE | V_SHOW | V_REPORT},
        /* an iteration number sizes every reader's per-iteration arrays: +50,000,000 took report to
         * 2.95 GB, +10^9 got it killed */
        {"UPDATE kernels SET iter = iter + 50000000 WHERE seq = 5;", "table kernels, run 1, seq 5", "column iter is 5000000",
         V_GATE | V_SHOW | V_REPORT},
    };
    expect_doctored_refused(base, "times", cases, sizeof cases / sizeof cases[0]);
}

/* Numbers a doctored database holds that are of the right type but no value of their column: a
 * cluster's predicted saving of 9e999 (+inf in SQLite) was shown as "inf µs", a device ceiling of -1
 * GB/s and a kernel's -5 bytes read were plotted. Each is refused naming the file, table, row and
 * column, by every verb that reads it (store/domain.c); a relative error of +inf, which
 * fa_max_rel_error gives for a reference of 0, is still read. */
static void test_db_values_outside_their_columns_domain_refused(void **state)
{
    (void)state;
    const char *base = make_applied_run_db("domain-base.db", "domain-out");
    /* masks: 1 report, 2 runs, 4 gate, 8 export-runs, 16 show (V_*) */
    static const doctored_case cases[] = {
        {"UPDATE clusters SET est_saving_us = 9e999;", "table 'clusters', row (", "column 'est_saving_us': +inf where",
         1 | 2 | 4 | 8},
        {"UPDATE clusters SET meas_fused_us = -3.5 WHERE cluster_id = 0;", "table 'clusters', row (",
         "column 'meas_fused_us': -3.5 where", 1 | 8},
        {"UPDATE device_ceilings SET value = -1;", "table 'device_ceilings', row (", "column 'value': -1 where", 1 | 8},
        {"UPDATE kernels SET bytes_read = -5 WHERE seq = 2;", "table 'kernels', row (run_id 1, seq 2)",
         "column 'bytes_read': -5 where", 1 | 8},
        {"UPDATE kernels SET flops = 9007199254740993 WHERE seq = 1;", "table 'kernels', row (run_id 1, seq 1)",
         "column 'flops': 9007199254740993 where", 1 | 8},
        {"UPDATE plans SET occupancy_floor = 2;", "table 'plans', row (", "column 'occupancy_floor': 2 where", 1 | 8},
        {"UPDATE runs SET peak_activation_bytes = -1;", "table 'runs', row (id ", "column 'peak_activation_bytes': -1 where",
         1 | 8 | 16},
        {"UPDATE clusters SET max_rel_error = -0.25;", "table 'clusters', row (", "column 'max_rel_error': -0.25 where",
         1 | 8},
        /* an enumeration or axis outside what this build knows */
        {"UPDATE kernels SET kind = 99 WHERE seq = 1;", "table 'kernels', row (run_id 1, seq 1)", "column 'kind': 99 where",
         1 | 8},
        {"UPDATE clusters SET reduce_axis = 99;", "table 'clusters', row (", "column 'reduce_axis': 99 where", 1 | 8},
        {"UPDATE tensors SET dtype = 9999 WHERE tensor_id = 1;", "table 'tensors', row (", "column 'dtype': 9999 where", 8},
        {"UPDATE nodes SET pattern = 99 WHERE node_id = 1;", "table 'nodes', row (", "column 'pattern': 99 where", 1 | 8},
        {"UPDATE plans SET layout_verdict = 7;", "table 'plans', row (", "column 'layout_verdict': 7 where", 1 | 8},
        /* a cluster's ids that name nothing of the run's graph or plan (gate said "fusion lost") */
        {"UPDATE clusters SET members_json = '[16777216]';", "table clusters, cluster ",
         "members_json: node id 16777216 is not one of the run's", 1 | 4},
        {"UPDATE clusters SET members_json = '[]';", "table clusters, cluster ", "a cluster of no node", 1 | 4},
        {"UPDATE clusters SET members_json = '[0,0,0]';", "table clusters, cluster ", "node id 0 is listed twice", 1 | 4},
        {"UPDATE clusters SET anchor = 99999;", "table clusters, cluster ", "anchor: node id 99999 is not one of", 1 | 4},
        {"UPDATE clusters SET depends_on = 99;", "table clusters, cluster ", "column depends_on: 99 is not another cluster",
         1 | 4},
        {"UPDATE why_not SET producer = 99999;", "table why_not, run 1, column producer: 99999 is not the id", NULL, 1 | 4},
        {"UPDATE why_not SET tensor_id = -5;", "table why_not, run 1, column tensor_id: -5 is not the id", NULL, 1 | 4},
    };
    expect_doctored_refused(base, "domain", cases, sizeof cases / sizeof cases[0]);
    /* +inf is a relative error's own value: read and reported */
    const char *db = tmp_path("domain-inf-error.db");
    copy_file(base, db);
    raw_sql(db, "UPDATE clusters SET max_rel_error = 9e999;");
    const char *argv[] = {"report", "1", "--db", db, "-o", tmp_path("domain-inf-report"), NULL};
    char *err = NULL;
    int rc = cli_within(argv, 60, NULL, &err);
    if (rc != 0) fail_msg("report with a max_rel_error of +inf: exit %d: %s", rc, err);
    free(err);
}

/* An integer in range for its column but not for what it indexes: a kernel record's node id of
 * 2^31 - 1 sized the per-op table by it (8 GB) and ended in "out of memory"; it is refused naming
 * the table, column and value. */
static void test_db_node_id_beyond_any_graph_refused_not_out_of_memory(void **state)
{
    (void)state;
    const char *db = tmp_path("node-id.db");
    copy_file(make_run_db("node-id-base.db"), db);
    raw_sql(db, "UPDATE kernels SET node = 2147483647 WHERE seq = 0;");
    const char *argv[] = {"show", "1", "--db", db, NULL};
    char *err = NULL;
    int rc = cli_within(argv, 60, NULL, &err);
    if (rc != 1 || !strstr(err, "table kernels, column node: node id 2147483647") || strstr(err, "out of memory"))
        fail_msg("show: exit %d (want 1 naming the node id): %s", rc, err);
    free(err);
}

/* A graph row's id that is no id of the run's graph: a node_id of -5 wrote out of bounds in
 * `analyze` and `advise` (SIGSEGV), 10^8 took `report` to 13.7 GB, 2^32 + 2 was read as node 2
 * (the sixth attack pass); the same for tensor ids, a tensor's producer and a consumer's node.
 * Each refused naming the table, run, column and value, by every verb that reads the graph. */
static void test_db_graph_ids_outside_the_runs_graph_refused(void **state)
{
    (void)state;
    const char *base = make_run_db("gid-base.db");
    enum { GRAPH = V_ANALYZE | V_ADVISE | V_REPORT | V_EXPORT }; /* export-runs: not spread into another store */
    static const doctored_case cases[] = {
        {"UPDATE nodes SET node_id = -5 WHERE run_id = 1 AND node_id = 2;", "table nodes, run 1, column node_id: -5 is not",
         NULL, GRAPH},
        {"UPDATE nodes SET node_id = 100000000 WHERE run_id = 1 AND node_id = 2;", "column node_id: 100000000 is not", NULL,
         GRAPH},
        {"UPDATE nodes SET node_id = 4294967298 WHERE run_id = 1 AND node_id = 3;", "column node_id: 4294967298 is not", NULL,
         GRAPH},
        {"UPDATE tensors SET tensor_id = 100000000 WHERE run_id = 1 AND tensor_id = 2;",
         "table tensors, run 1, column tensor_id: 100000000 is not", NULL, GRAPH},
        {"UPDATE tensors SET producer = 99 WHERE run_id = 1 AND tensor_id = 2;",
         "table tensors, run 1, column producer: 99 is not", NULL, GRAPH},
        {"UPDATE consumers SET node_id = -7 WHERE run_id = 1 AND tensor_id = 0;",
         "table consumers, run 1, column node_id: -7 is not", NULL, GRAPH},
        {"UPDATE kernels SET node = 4294967298 WHERE run_id = 1 AND seq = 0;",
         "table kernels, column node: node id 4294967298", NULL, GRAPH | V_SHOW},
    };
    expect_doctored_refused(base, "gid", cases, sizeof cases / sizeof cases[0]);
}

/* A doctored runs.model_path had `apply RUN` read and hash whatever file it named before the hash
 * comparison refused it (/etc/shadow: an oracle for its hash). The file is loaded as a model
 * first and hashed only once it is one: a file that is no model is refused as such, and nothing
 * is said of its hash. */
static void test_db_model_path_to_a_file_that_is_no_model_not_hashed(void **state)
{
    (void)state;
    const char *base = make_run_db("mp-base.db");
    const char *db = tmp_path("mp.db");
    copy_file(base, db);
    const char *secret = tmp_path("secret.txt");
    FILE *f = fopen(secret, "w");
    assert_non_null(f);
    fputs("root:$6$salt$hash:19000:0:99999:7:::\n", f);
    fclose(f);
    char sql[4500];
    snprintf(sql, sizeof sql, "UPDATE runs SET model_path = '%s', model_sha256 = '%064d' WHERE id = 1;", secret, 0);
    raw_sql(db, sql);
    const char *argv[] = {"apply", "1", "--db", db, NULL};
    char *err = NULL;
    int rc = cli_within(argv, 60, NULL, &err);
    if (rc != 1 || !strstr(err, "cannot load its model again") || strstr(err, "SHA-256"))
        fail_msg("apply with model_path naming a text file: exit %d: %s", rc, err);
    free(err);
}

/* Figures of a run that size what a verb runs again on its terms: a thread count of 5,000 made
 * `analyze` start 5,000 OpenMP threads for its ceilings and spin for minutes, and an int64 beyond
 * int's range wrapped to a small count. Each is refused naming the table, column and value, by
 * every verb that reads the run, before anything runs. */
static void test_db_run_sizes_beyond_the_options_ranges_refused(void **state)
{
    (void)state;
    const char *base = make_run_db("sizes-base.db");
    enum { EVERY = V_ANALYZE | V_RUNS | V_SHOW };
    static const doctored_case cases[] = {
        {"UPDATE runs SET threads = 5000;", "table runs, column threads: 5000 is outside [0, 1024]", NULL, EVERY},
        {"UPDATE runs SET threads = 4294967298;", "column threads: 4294967298 is outside", NULL, EVERY},
        {"UPDATE runs SET iters = 2000000000;", "column iters: 2000000000 is outside [0, 1000000]", NULL, EVERY},
        {"UPDATE runs SET warmup = -7;", "column warmup: -7 is outside [-1, 1000000]", NULL, EVERY},
    };
    expect_doctored_refused(base, "sizes", cases, sizeof cases / sizeof cases[0]);
}

/* SQLite reads a name "file:..." as a URI and ":memory:" as an in-memory database (Debian
 * builds it with URIs on), while every check before the open looked at the file of that name:
 * a FIFO at "file:fw.db-journal" hung `runs --db file:fw.db` (the companion check saw none), and
 * "file:u.db?mode=memory" stored a run nowhere. The store opens the very file it checked. */
static void test_db_name_that_sqlite_would_read_as_a_uri_is_that_file(void **state)
{
    (void)state;
    char dir[4200], cwd[4200];
    snprintf(dir, sizeof dir, "%s/uri-names", fa_test_tmpdir());
    mkdir(dir, 0700);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    const char *base = make_run_db("uri-base.db");
    copy_file(base, "fw.db");
    unlink("fw.db-journal");
    assert_int_equal(mkfifo("fw.db-journal", 0600), 0); /* what SQLite's URI reading of "file:fw.db" opens */
    const char *v1[] = {"runs", "--db", "file:fw.db", NULL};
    char *err = NULL;
    int rc = cli_within(v1, 30, NULL, &err);
    if (rc != 1 || !strstr(err, "file:fw.db: no run database here"))
        fail_msg("runs --db file:fw.db beside fw.db and a FIFO: exit %d: %s", rc, err);
    free(err);
    const char *v2[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "2", "--threads", "1", "--db", "file:u.db?mode=memory", NULL};
    err = NULL;
    rc = cli_within(v2, 120, NULL, &err);
    if (rc != 0) fail_msg("run --db 'file:u.db?mode=memory': exit %d: %s", rc, err);
    free(err);
    struct stat sb;
    assert_int_equal(stat("file:u.db?mode=memory", &sb), 0); /* the file of that name holds the run */
    assert_true(S_ISREG(sb.st_mode) && sb.st_size > 0);
    const char *v3[] = {"show", "1", "--db", "file:u.db?mode=memory", NULL};
    err = NULL;
    assert_int_equal(cli_within(v3, 60, NULL, &err), 0);
    free(err);
    const char *v4[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "2", "--threads", "1", "--db", ":memory:", NULL};
    err = NULL;
    rc = cli_within(v4, 120, NULL, &err);
    if (rc != 0) fail_msg("run --db :memory:: exit %d: %s", rc, err);
    free(err);
    assert_int_equal(stat(":memory:", &sb), 0);
    assert_int_equal(chdir(cwd), 0);
}

/* A stored id list (a cluster's members, inputs, outputs) or post-op spec is untrusted text:
 * exactly a JSON array of integers in [-1, 2^24], a spec this build reads, else refused naming
 * the file, run, table and column. Before, non-digits were skipped and 2^63-1 read as -1, so a
 * report, gate or apply judged another cluster than the one stored. */
static void test_db_cluster_id_lists_and_specs_parsed_strictly(void **state)
{
    (void)state;
    const char *base = tmp_path("ids-base.db");
    unlink(base);
    const char *argv[] = {"run", "zoo:mlp-tiny", "--iters", "2", "--threads", "1", "--db", base, "--out", tmp_path("ids-out"), NULL};
    char *err = NULL;
    int rc = cli_within(argv, 300, NULL, &err);
    if (rc != 0) fail_msg("applied run: exit %d: %s", rc, err);
    free(err);
    const struct { const char *sql, *want; } cases[] = {
        {"UPDATE clusters SET members_json = '[0,x,1]' WHERE cluster_id = (SELECT min(cluster_id) FROM clusters);",
         "table clusters, column members_json: not a list of integers"},
        {"UPDATE clusters SET members_json = '[9223372036854775807,1]' WHERE cluster_id = (SELECT min(cluster_id) FROM clusters);",
         "column members_json: id 9223372036854775807 is outside [-1, 16777216]"},
        {"UPDATE clusters SET outputs_json = '[-5]' WHERE cluster_id = (SELECT min(cluster_id) FROM clusters);",
         "column outputs_json: id -5 is outside"},
        {"UPDATE clusters SET inputs_json = '[1,2' WHERE cluster_id = (SELECT min(cluster_id) FROM clusters);",
         "column inputs_json: not a list of integers"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "ids%zu.db", i);
        const char *db = tmp_path(name);
        copy_file(base, db);
        raw_sql(db, cases[i].sql);
        const char *verbs[][7] = {{"report", "1", "--db", db, "-o", tmp_path("ids-rep"), NULL}, {"gate", "--baseline", "1", "--candidate", "1", "--db", db}};
        for (int v = 0; v < 2; v++) {
            const char *av[9] = {0};
            for (int k = 0; k < 7 && verbs[v][k]; k++) av[k] = verbs[v][k];
            err = NULL;
            rc = cli_within(av, 60, NULL, &err);
            if (rc != 1 || !strstr(err, cases[i].want))
                fail_msg("case %zu, %s: exit %d (want 1 saying \"%s\"): %s", i, av[0], rc, cases[i].want, err);
            free(err);
        }
    }
    /* a post-op spec this build cannot read (convnet-tiny's plan has conv epilogues with post-ops) */
    const char *pbase = tmp_path("ids-post.db");
    unlink(pbase);
    const char *argp[] = {"run", "zoo:convnet-tiny", "--iters", "2", "--threads", "1", "--db", pbase, "--out", tmp_path("ids-out2"), NULL};
    err = NULL;
    rc = cli_within(argp, 300, NULL, &err);
    if (rc != 0) fail_msg("applied convnet-tiny run: exit %d: %s", rc, err);
    free(err);
    const char *db = tmp_path("ids-spec.db");
    copy_file(pbase, db);
    raw_sql(db, "UPDATE cluster_post_ops SET spec = 'frobnicate';");
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT count(*) FROM cluster_post_ops", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int n_post = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(h);
    assert_true(n_post > 0);
    const char *av[] = {"report", "1", "--db", db, "-o", tmp_path("ids-rep2"), NULL};
    err = NULL;
    rc = cli_within(av, 60, NULL, &err);
    if (rc != 1 || !strstr(err, "table cluster_post_ops, column spec: 'frobnicate' is not a post-op"))
        fail_msg("bad post-op spec: exit %d: %s", rc, err);
    free(err);
}

/* A text of n bytes in a (fresh) raw_sql statement: UPDATE TABLE SET COL = <n x 'a'> WHERE ... */
static void set_long_text(const char *db, const char *table, const char *col, const char *where, size_t n)
{
    char sql[512];
    snprintf(sql, sizeof sql, "UPDATE %s SET %s = replace(hex(zeroblob(%zu)), '00', 'a') WHERE %s", table, col, n, where);
    raw_sql(db, sql);
}

static void test_db_value_over_the_length_limit_refused_read_or_written(void **state)
{
    (void)state;
    const char *base = make_run_db("long-base.db");
    /* over FA_STORE_VALUE_MAX: the column named */
    const char *db = tmp_path("long1.db");
    copy_file(base, db);
    set_long_text(db, "runs", "tag", "id = 1", FA_STORE_VALUE_MAX + 2);
    const char *want[] = {"table 'runs', row (id 1), column 'tag': a value of", "over the 16 MiB limit", NULL};
    read_verbs_refuse(db, want);
    /* over FA_STORE_VALUE_HARD_MAX (the 200 MB strings took `report` past 4 GB): SQLite
     * never loads it; the table named */
    const char *db2 = tmp_path("long2.db");
    copy_file(base, db2);
    set_long_text(db2, "kernels", "name", "seq = 0", FA_STORE_VALUE_HARD_MAX + 2);
    const char *rep = tmp_path("long-report");
    const char *argv[] = {"report", "1", "--db", db2, "-o", rep, NULL};
    char *err = NULL;
    int rc = cli_within(argv, 60, NULL, &err);
    if (rc != 1 || !strstr(err, "table 'kernels'") || !strstr(err, "longer than 64 MiB"))
        fail_msg("report with a 64 MiB name: exit %d: %s", rc, err);
    free(err);
    unlink(db2);
    /* written: what could not be read back is refused before it is stored */
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    fa_test_check_ok(ctx, fa_store_open(ctx, base, &st));
    char *big = malloc(FA_STORE_VALUE_MAX + 2);
    memset(big, 'b', FA_STORE_VALUE_MAX + 1);
    big[FA_STORE_VALUE_MAX + 1] = 0;
    fa_run_info info = {0};
    info.kind = "run";
    info.tag = big;
    int64_t id = 0;
    fa_status s = fa_store_run_begin(ctx, st, &info, &id);
    assert_int_equal(s, FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "over the 16 MiB limit"));
    free(big);
    fa_store_close(st);
    fa_ctx_free(ctx);
    assert_int_equal(fa_test_store_sql_i64(base, "SELECT count(*) FROM runs"), 1);
}

static void test_db_step_time_limit_stops_an_endless_statement(void **state)
{
    (void)state;
    const char *db = make_run_db("step.db");
    /* the mechanism itself, on the store's own connection (a crafted schema can no longer reach it:
     * views and triggers are refused above): a recursive query that never ends, stopped by the
     * progress handler within the limit */
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        alarm(60);
        setenv("FA_DB_STEP_LIMIT_S", "1", 1);
        fa_ctx *ctx = fa_ctx_create();
        fa_store *st = NULL;
        if (fa_store_open_ex(ctx, db, FA_STORE_READONLY, &st)) _exit(2);
        int rc = sqlite3_exec(fa_store_db(st), "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                                               "SELECT count(*) FROM c", NULL, NULL, NULL);
        fa_store_close(st);
        fa_ctx_free(ctx);
        _exit(rc == SQLITE_INTERRUPT ? 0 : 3);
    }
    int st = 0;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("the endless statement was not stopped (%s %d)", WIFEXITED(st) ? "exit" : "signal",
                 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/* ---- connection strings ---- */

static const char *const k_secret = "Zq9sEcr3t";

/* The forms of issue 32: a password holding '?', '#', '/', a bad '%' escape or an '@'; given as
 * "?%70assword=" (libpq decodes keys); a keyword/value string; sslpassword; the scheme in capitals. */
static const char *const k_forms[] = {
    "postgresql://ci:Zq9s?Ecr3t@127.0.0.1:1/perf?connect_timeout=3",
    "postgresql://ci:Zq9s#Ecr3t@127.0.0.1:1/perf?connect_timeout=3",
    "postgresql://ci:Zq9s/Ecr3t@127.0.0.1:1/perf?connect_timeout=3",
    "postgresql://ci:Zq9s%zzEcr3t@127.0.0.1:1/perf?connect_timeout=3",
    "postgresql://ci:Zq9s@Ecr3t@127.0.0.1:1/perf?connect_timeout=3",
    "postgresql://ci@127.0.0.1:1/perf?%70assword=Zq9sEcr3t&connect_timeout=3",
    "postgresql://ci@127.0.0.1:1/perf?connect_timeout=3&password=Zq9sEcr3t",
    "host=127.0.0.1 port=1 dbname=perf user=ci password=Zq9sEcr3t connect_timeout=3",
    "host=127.0.0.1 port=1 dbname=perf password='Zq9s Ecr3t' connect_timeout=3",
    "host=127.0.0.1 port=1 dbname=perf sslpassword=Zq9sEcr3t connect_timeout=3",
    "POSTGRESQL://ci:Zq9sEcr3t@127.0.0.1:1/perf?connect_timeout=3",
    "Postgres://ci:Zq9sEcr3t@127.0.0.1:1/perf?connect_timeout=3",
    "dbname='postgresql://ci:Zq9sEcr3t@127.0.0.1:1/perf' port=1 connect_timeout=3",
};

/* Whether text holds the secret, or a piece of it of 4 or more characters around a separator
 * ("Zq9s", "Ecr3t"). */
static bool leaks(const char *text)
{
    return strstr(text, k_secret) || strstr(text, "Zq9s") || strstr(text, "Ecr3t");
}

static void test_conninfo_password_never_shown_or_stored_in_any_form(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof k_forms / sizeof k_forms[0]; i++) {
        const char *f = k_forms[i];
        if (!fa_store_path_is_pg(f)) fail_msg("form %zu is not taken as a server: %s", i, f);
        bool had = false;
        char *r = fa_store_redact_uri(f, &had);
        assert_non_null(r);
        if (leaks(r) || !had) fail_msg("form %zu rendered as \"%s\" (had_password %d)", i, r, had);
        free(r);
        char arg[512];
        snprintf(arg, sizeof arg, "--db=%s", f);
        r = fa_store_redact_arg(arg, &had);
        if (leaks(r) || !had || strncmp(r, "--db=", 5)) fail_msg("--db=form %zu rendered as \"%s\"", i, r);
        free(r);
        /* opening it: an unreachable server or a refused string, never the secret in the message */
        fa_ctx *ctx = fa_ctx_create();
        fa_store *st = NULL;
        fa_status s = fa_store_open(ctx, f, &st);
        if (s == FA_OK || leaks(fa_ctx_errmsg(ctx))) fail_msg("form %zu: open gave %d: %s", i, s, fa_ctx_errmsg(ctx));
        fa_ctx_free(ctx);
    }
    /* a command line holding every form, stored in a run and read back */
    const char *db = tmp_path("cmdline.db");
    unlink(db);
    fa_buf cmd;
    fa_buf_init(&cmd);
    fa_buf_puts(&cmd, "fuse-advise run zoo:mlp-tiny --shape batch=4 --shape X=1x3");
    for (size_t i = 0; i < sizeof k_forms / sizeof k_forms[0]; i++) fa_buf_printf(&cmd, " --db %s --to=%s", k_forms[i], k_forms[i]);
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    fa_test_check_ok(ctx, fa_store_open(ctx, db, &st));
    fa_run_info info = {0};
    info.kind = "run";
    info.command_line = cmd.data;
    int64_t id = 0;
    fa_test_check_ok(ctx, fa_store_run_begin(ctx, st, &info, &id));
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, st, id, true, NULL));
    fa_arena *ar = fa_arena_create(0);
    fa_run_info ri;
    fa_test_check_ok(ctx, fa_store_get_run(ctx, st, id, ar, &ri));
    if (leaks(ri.command_line)) fail_msg("stored command line: %s", ri.command_line);
    /* words that only look like keyword/value strings stay as they were (advise RUN reads them) */
    assert_non_null(strstr(ri.command_line, "fuse-advise run zoo:mlp-tiny --shape batch=4 --shape X=1x3 --db "));
    fa_arena_free(ar);
    fa_store_close(st);
    fa_ctx_free(ctx);
    fa_buf_free(&cmd);
    /* straight from the file, as another tool reads it */
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT command_line FROM runs", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    if (leaks((const char *)sqlite3_column_text(q, 0))) fail_msg("in the file: %s", sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(h);
}

/* A connection string that names a local file for libpq to open (passfile, sslkey, sslrootcert,
 * revocation lists): passfile=/etc/shadow was opened, and libpq printed its own warning with the
 * path's escapes and newline raw on stderr. Refused before libpq connects, naming the keyword and
 * the environment variable that may name it; nothing raw on the terminal. */
static void test_conninfo_file_keywords_refused_before_libpq_opens_them(void **state)
{
    (void)state;
    const char *forms[] = {"postgresql://u@127.0.0.1:1/db?passfile=%2Ftmp%2Fpf%1B%5B31mRED%0A%20%20forged",
                           "postgresql://u@127.0.0.1:1/db?sslrootcert=/etc/passwd",
                           "host=127.0.0.1 port=1 sslkey=/etc/shadow", "host=127.0.0.1 port=1 sslcrl=/etc/passwd"};
    const char *keys[] = {"'passfile'", "'sslrootcert'", "'sslkey'", "'sslcrl'"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        const char *argv[] = {"runs", "--db", forms[i], NULL};
        char *out = NULL, *err = NULL;
        int rc = cli_within(argv, 60, &out, &err);
        if (rc != 1 || !strstr(err, keys[i]) || !strstr(err, "a file on this machine") || strstr(err, "WARNING") ||
            strchr(err, 0x1b) || strstr(err, "\n  forged"))
            fail_msg("form %zu: exit %d: %s", i, rc, err);
        free(out);
        free(err);
    }
}

static void test_conninfo_keyword_string_never_a_file_and_no_secret_printed(void **state)
{
    (void)state;
    /* run in an empty folder: the keyword/value string must reach libpq (an unreachable server
     * here) or be refused, and leave no file behind (on the main of before: a file named with the
     * password, exit 0) */
    const char *dir = tmp_path("kv-cwd");
    mkdir(dir, 0700);
    char old[4200];
    assert_non_null(getcwd(old, sizeof old));
    assert_int_equal(chdir(dir), 0);
    const char *forms[] = {"host=127.0.0.1 port=1 dbname=perf password=Zq9sEcr3t connect_timeout=3",
                           "hots=127.0.0.1 password=Zq9sEcr3t", "POSTGRESQL://ci:Zq9sEcr3t@127.0.0.1:1/perf",
                           "postgresql://ci:Zq9s/Ecr3t@127.0.0.1:1/perf?connect_timeout=3"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        const char *verbs[][8] = {{"runs", "--db", forms[i], NULL},
                                  {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "1", "--db", forms[i], NULL},
                                  {"import-runs", forms[i], "--db", "dst.db", NULL}};
        for (int v = 0; v < 3; v++) {
            char *out = NULL, *err = NULL;
            int rc = cli_within(verbs[v], 120, &out, &err);
            if (rc != 1 || leaks(err) || leaks(out))
                fail_msg("%s --db form %zu: exit %d (want 1, no secret): %s%s", verbs[v][0], i, rc, out, err);
            free(out);
            free(err);
        }
        /* nothing was created under a name made of the string */
        struct stat sb;
        if (stat(forms[i], &sb) == 0) fail_msg("a local file named \"%s\" was created", forms[i]);
    }
    assert_int_equal(chdir(old), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_db_view_over_endless_query_refused_before_any_verb_reads_it),
        cmocka_unit_test(test_db_trigger_or_other_schema_refused_naming_the_difference),
        cmocka_unit_test(test_db_null_or_wrong_typed_value_named_by_table_row_and_column),
        cmocka_unit_test(test_db_node_id_beyond_any_graph_refused_not_out_of_memory),
        cmocka_unit_test(test_db_times_that_are_no_duration_refused_naming_the_row),
        cmocka_unit_test(test_db_values_outside_their_columns_domain_refused),
        cmocka_unit_test(test_db_hard_linked_companion_refused_and_untouched),
        cmocka_unit_test(test_db_graph_ids_outside_the_runs_graph_refused),
        cmocka_unit_test(test_db_model_path_to_a_file_that_is_no_model_not_hashed),
        cmocka_unit_test(test_db_empty_file_is_not_a_database_to_a_reading_verb),
        cmocka_unit_test(test_db_refused_file_gains_no_wal_or_shm),
        cmocka_unit_test(test_db_run_sizes_beyond_the_options_ranges_refused),
        cmocka_unit_test(test_db_name_that_sqlite_would_read_as_a_uri_is_that_file),
        cmocka_unit_test(test_db_cluster_id_lists_and_specs_parsed_strictly),
        cmocka_unit_test(test_db_value_over_the_length_limit_refused_read_or_written),
        cmocka_unit_test(test_db_step_time_limit_stops_an_endless_statement),
        cmocka_unit_test(test_conninfo_password_never_shown_or_stored_in_any_form),
        cmocka_unit_test(test_conninfo_keyword_string_never_a_file_and_no_secret_printed),
        cmocka_unit_test(test_conninfo_file_keywords_refused_before_libpq_opens_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
