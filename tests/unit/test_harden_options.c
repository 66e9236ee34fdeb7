/* tests/unit/test_harden_options — issue 15 "Resources and options": every numeric option is
 * parsed by one checked parser, so a value that overflows, is not finite or lies outside the
 * documented range is refused with a usage error (exit 2) before anything runs — never clamped
 * (--max-memory 1e20 used to become LLONG_MAX) and never turns a check off (--tolerance inf used
 * to accept any fused kernel). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static int cli(const char *const *argv, char **err)
{
    char *o = NULL, *e = NULL;
    int rc = fa_test_run_cli(argv, &o, &e);
    if (getenv("FA_TEST_VERBOSE")) fprintf(stderr, "exit %d\n%s%s", rc, o, e);
    free(o);
    if (err) *err = e;
    else free(e);
    return rc;
}

static const char *db(void) { return fa_test_path(fa_test_tmpdir(), "opts.db"); }

/* A refused option: exit 2, the option named, and no database created (nothing ran). */
static void assert_refused(const char *const *argv, const char *opt)
{
    char *err = NULL;
    int rc = cli(argv, &err);
    if (rc != 2 || !strstr(err, opt)) fail_msg("%s %s: exit %d (want 2), stderr: %s", argv[0], opt, rc, err);
    free(err);
    struct stat sb;
    assert_int_not_equal(stat(db(), &sb), 0);
}

static void test_max_memory_overflow_refused_not_clamped(void **state)
{
    (void)state;
    const char *vals[] = {"99999999999999999999", "9223372036854775808", "-5", "0", "12abc", "1e9"};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        const char *argv[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "1", "--max-memory", vals[i], "--db", db(), NULL};
        assert_refused(argv, "--max-memory");
    }
}

static void test_tolerance_must_be_finite_and_at_most_the_documented_maximum(void **state)
{
    (void)state;
    const char *vals[] = {"inf", "Infinity", "1e308", "1e400", "nan", "0", "-1e-5", "0.5", "1"};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        const char *argv[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "1", "--tolerance", vals[i], "--db", db(), NULL};
        assert_refused(argv, "--tolerance");
        const char *argv2[] = {"apply", "1", "--tolerance", vals[i], "--db", db(), NULL};
        assert_refused(argv2, "--tolerance");
    }
    /* the documented maximum itself is accepted (the run then proceeds) */
    const char *ok[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "1", "--warmup", "0", "--tolerance", "0.1",
                        "--db", db(), NULL};
    char *err = NULL;
    int rc = cli(ok, &err);
    if (rc != 0) fail_msg("--tolerance 0.1: exit %d: %s", rc, err);
    free(err);
    unlink(db());
    char wal[4200], shm[4200];
    snprintf(wal, sizeof wal, "%s-wal", db());
    snprintf(shm, sizeof shm, "%s-shm", db());
    unlink(wal);
    unlink(shm);
}

static void test_zoo_seed_negative_or_overflowing_refused(void **state)
{
    (void)state;
    const char *out = fa_test_path(fa_test_tmpdir(), "seed.onnx");
    const char *vals[] = {"-1", "99999999999999999999999", "0x1ffffffffffffffff", "1.5"};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        const char *argv[] = {"zoo", "mlp-tiny", "--seed", vals[i], "-o", out, NULL};
        assert_refused(argv, "--seed");
        struct stat sb;
        assert_int_not_equal(stat(out, &sb), 0);
    }
}

static void test_run_id_overflow_is_not_a_run_id(void **state)
{
    (void)state;
    const char *rdb = fa_test_path(fa_test_tmpdir(), "ids.db");
    const char *mk[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "1", "--warmup", "0", "--db", rdb, NULL};
    assert_int_equal(cli(mk, NULL), 0);
    const char *verbs[] = {"analyze", "advise", "apply", "report", "show"};
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        const char *argv[] = {verbs[i], "99999999999999999999", "--db", rdb, NULL};
        char *err = NULL;
        int rc = cli(argv, &err);
        /* a usage error (2) naming the value: not run 9223372036854775807 ("no run") */
        if (rc != 2 || !strstr(err, "99999999999999999999")) fail_msg("%s: exit %d: %s", verbs[i], rc, err);
        free(err);
    }
}

/* The line of `VERB --help` that describes opt (its first line), malloc'd; fails when absent. */
static char *help_line(const char *verb, const char *opt)
{
    const char *argv[] = {verb, "--help", NULL};
    char *o = NULL, *e = NULL;
    int rc = fa_test_run_cli(argv, &o, &e);
    if (rc != 0) fail_msg("%s --help: exit %d: %s", verb, rc, e);
    char key[64];
    snprintf(key, sizeof key, "  %s ", opt);
    const char *p = strstr(o, key);
    if (!p) fail_msg("%s --help does not describe %s:\n%s", verb, opt, o);
    const char *end = strchr(p, '\n'); /* the row and its continuation lines (indented further) */
    while (end && !strncmp(end, "\n     ", 7)) end = strchr(end + 1, '\n');
    char *line = strndup(p, end ? (size_t)(end - p) : strlen(p));
    free(o);
    free(e);
    return line;
}

/* Issue 38: the cluster caps and iteration counts are one range and one default in every verb
 * that plans or measures. --max-ops was 1..4096 in advise and 2..1000 in run/apply (a cap of 1
 * refuses every cluster), --max-inputs 1..4096 in advise although a fused node takes at most 64
 * inputs (a plan apply could not build), --iters 1.. in run and 3.. in apply. */
static void test_cluster_caps_and_iterations_one_range_in_every_verb(void **state)
{
    (void)state;
    static const struct {
        const char *opt, *value, *range;
    } bad[] = {{"--max-ops", "1", "[2, 1000]"},   {"--max-ops", "1001", "[2, 1000]"}, {"--max-ops", "4096", "[2, 1000]"},
               {"--max-inputs", "0", "[1, 64]"}, {"--max-inputs", "65", "[1, 64]"}};
    const char *verbs[] = {"advise", "apply", "run"};
    for (size_t v = 0; v < 3; v++)
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            bool run = !strcmp(verbs[v], "run");
            const char *argv[] = {verbs[v], run ? "zoo:mlp-tiny" : "1", bad[k].opt, bad[k].value, "--db", db(),
                                  run ? "--no-apply" : NULL, NULL};
            char *err = NULL;
            int rc = cli(argv, &err);
            if (rc != 2 || !strstr(err, bad[k].opt) || !strstr(err, bad[k].range))
                fail_msg("%s %s %s: exit %d (want 2 naming %s): %s", verbs[v], bad[k].opt, bad[k].value, rc,
                         bad[k].range, err);
            free(err);
            struct stat sb;
            assert_int_not_equal(stat(db(), &sb), 0);
        }
    /* one description: the same help text (range and default) wherever the option is parsed */
    const char *shared[][4] = {{"--max-ops", "advise", "apply", "run"},
                               {"--max-inputs", "advise", "apply", "run"},
                               {"--iters", "apply", "run", NULL},
                               {"--warmup", "apply", "run", NULL},
                               {"--tolerance", "apply", "run", NULL},
                               {"--shape", "inspect", "exec", "run"}};
    for (size_t k = 0; k < sizeof shared / sizeof shared[0]; k++) {
        char *first = help_line(shared[k][1], shared[k][0]);
        for (int v = 2; v < 4 && shared[k][v]; v++) {
            char *other = help_line(shared[k][v], shared[k][0]);
            if (strcmp(first, other))
                fail_msg("%s: `%s --help` says\n%s\nbut `%s --help` says\n%s", shared[k][0], shared[k][1], first,
                         shared[k][v], other);
            free(other);
        }
        free(first);
    }
    char *ops = help_line("advise", "--max-ops");
    if (!strstr(ops, "default 16") || !strstr(ops, "[2, 1000]")) fail_msg("advise --help: %s", ops);
    free(ops);
}

/* Issue 37: a misspelt verb or option names the nearest one (edit distance over the verbs and
 * the verb's option table); the exit code stays 2 (usage). */
static void test_misspelt_verb_or_option_suggests_the_nearest(void **state)
{
    (void)state;
    static const struct {
        const char *argv[6];
        const char *want;
    } cases[] = {
        {{"rnu", "zoo:mlp-tiny", NULL}, "did you mean run?"},
        {{"analyse", NULL}, "did you mean analyze?"},
        {{"run", "zoo:mlp-tiny", "--iter", "3", NULL}, "did you mean --iters?"},
        {{"run", "zoo:mlp-tiny", "--iter=3", NULL}, "did you mean --iters?"},
        {{"advise", "--max-op", "4", NULL}, "did you mean --max-ops?"},
        {{"gate", "--stirct", NULL}, "did you mean --strict?"},
        {{"inspect", "zoo:mlp-tiny", "--jsno", NULL}, "did you mean --json?"},
        {{"report", "--ou", "x", NULL}, "did you mean --out?"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *err = NULL;
        int rc = cli(cases[k].argv, &err);
        if (rc != 2 || !strstr(err, cases[k].want))
            fail_msg("%s %s: exit %d (want 2 and '%s'): %s", cases[k].argv[0], cases[k].argv[1] ? cases[k].argv[1] : "",
                     rc, cases[k].want, err);
        free(err);
    }
    /* nothing near: no suggestion, still a usage error */
    const char *far[] = {"run", "zoo:mlp-tiny", "--frobnicate", NULL};
    char *err = NULL;
    int rc = cli(far, &err);
    if (rc != 2 || strstr(err, "did you mean")) fail_msg("--frobnicate: exit %d: %s", rc, err);
    free(err);
}

/* Issue 37: --threads over the machine's cores is accepted (it may be deliberate) but warned,
 * before anything runs; within the cores, no warning. */
static void test_threads_over_the_cores_warned(void **state)
{
    (void)state;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores >= 1024) skip();
    char over[32], within[32];
    snprintf(over, sizeof over, "%ld", cores + 1);
    snprintf(within, sizeof within, "%ld", cores);
    /* exec parses --threads, then stops at the missing --outputs (exit 2): nothing runs */
    const char *a1[] = {"exec", "zoo:mlp-tiny", "--threads", over, NULL};
    char *err = NULL;
    int rc = cli(a1, &err);
    if (rc != 2 || !strstr(err, "warning: --threads") || !strstr(err, "cores")) fail_msg("--threads %s: exit %d: %s", over, rc, err);
    free(err);
    const char *a2[] = {"exec", "zoo:mlp-tiny", "--threads", within, NULL};
    rc = cli(a2, &err);
    if (rc != 2 || strstr(err, "warning")) fail_msg("--threads %s: exit %d: %s", within, rc, err);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_memory_overflow_refused_not_clamped),
        cmocka_unit_test(test_tolerance_must_be_finite_and_at_most_the_documented_maximum),
        cmocka_unit_test(test_zoo_seed_negative_or_overflowing_refused),
        cmocka_unit_test(test_run_id_overflow_is_not_a_run_id),
        cmocka_unit_test(test_cluster_caps_and_iterations_one_range_in_every_verb),
        cmocka_unit_test(test_misspelt_verb_or_option_suggests_the_nearest),
        cmocka_unit_test(test_threads_over_the_cores_warned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
