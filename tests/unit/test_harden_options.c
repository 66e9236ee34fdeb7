/* tests/unit/test_harden_options — issue 15 "Resources and options": every numeric option is
 * parsed by one checked parser, so a value that overflows, is not finite or lies outside the
 * documented range is refused with a usage error (exit 2) before anything runs — never clamped
 * (--max-memory 1e20 used to become LLONG_MAX) and never turns a check off (--tolerance inf used
 * to accept any fused kernel). */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_memory_overflow_refused_not_clamped),
        cmocka_unit_test(test_tolerance_must_be_finite_and_at_most_the_documented_maximum),
        cmocka_unit_test(test_zoo_seed_negative_or_overflowing_refused),
        cmocka_unit_test(test_run_id_overflow_is_not_a_run_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
