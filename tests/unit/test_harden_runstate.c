/* tests/unit/test_harden_runstate — issue 15 "Run state in the database": a run is 'ok' only when
 * every stage it started has stored its results. A run killed in its apply stage is never 'ok'
 * (the gate refuses it by name and never picks it; the next writable open marks it failed); an
 * import is 'ok' only after its advice is stored; a failed run keeps no 'ok' fused twin. */
#include "harden_util.h"

static const char *tmp(const char *name) { return hu_tmp(name); }

static char *run_status(const char *db, int id)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT status FROM runs WHERE id = %d", id);
    return hu_query_text(db, sql);
}

static void baseline(const char *model, const char *db, const char *tag)
{
    const char *argv[] = {"run", model, "--no-apply", "--iters", "5", "--warmup", "1", "--threads", "1", "--tag", tag,
                          "--db", db, NULL};
    char *err = NULL;
    int rc = hu_cli_env(argv, NULL, NULL, NULL, &err);
    if (rc != 0) fail_msg("baseline run: exit %d: %s", rc, err);
    free(err);
}

static void test_run_killed_during_apply_is_unfinished_gate_refuses_it_recovery_fails_it(void **state)
{
    (void)state;
    const char *model = tmp("chain.onnx"), *db = tmp("killed.db");
    char model_buf[4200];
    snprintf(model_buf, sizeof model_buf, "%s", model);
    hu_export_chain(model_buf, 64, 256, 6, NULL, 0);
    baseline(model_buf, db, "nightly");
    baseline(model_buf, db, "nightly");
    /* run 3: the C compiler of its apply stage blocks; killed as soon as it is started. The
     * first compiler process is the probe's batch while planning (fa_kernel_probe_prepare, a
     * fresh cache): it runs; the second, the applier's, marks and blocks. */
    char cc[4200], marker[4200], envcc[4300], envcache[4300], count[4200];
    snprintf(cc, sizeof cc, "%s", tmp("slow-cc.sh"));
    snprintf(marker, sizeof marker, "%s", tmp("cc-started"));
    snprintf(count, sizeof count, "%s", tmp("cc-count"));
    FILE *w = fopen(cc, "w");
    assert_non_null(w);
    fprintf(w, "#!/bin/sh\necho x >> '%s'\nif [ \"$(wc -l < '%s')\" -ge 2 ]; then : > '%s'; sleep 300; fi\n"
               "exec cc \"$@\"\n",
            count, count, marker);
    fclose(w);
    assert_int_equal(chmod(cc, 0755), 0);
    snprintf(envcc, sizeof envcc, "CC=%s", cc);
    snprintf(envcache, sizeof envcache, "XDG_CACHE_HOME=%s", tmp("cache-killed"));
    const char *env[] = {envcc, envcache, NULL};
    const char *argv[] = {"run", model_buf, "--iters", "5", "--warmup", "1", "--threads", "1", "--tag", "nightly",
                          "--db", db, "--out", tmp("out-killed"), NULL};
    char *kerr = NULL;
    int rc = hu_cli_env(argv, env, marker, NULL, &kerr);
    if (rc != 128 + SIGKILL) fail_msg("run 3 was to be killed while compiling: exit %d: %s", rc, kerr);
    free(kerr);
    assert_true(hu_query_int(db, "SELECT count(*) FROM plans WHERE run_id = 3") >= 1); /* it was applying */
    char *st = run_status(db, 3);
    if (!st || strcmp(st, "running")) fail_msg("run 3 killed during apply is '%s', not 'running'", st ? st : "?");
    free(st);

    /* gate names the unfinished run and refuses it (exit 1) ... */
    const char *g1[] = {"gate", "--baseline", "2", "--candidate", "3", "--db", db, NULL};
    char *err = NULL;
    rc = hu_cli_env(g1, NULL, NULL, NULL, &err);
    if (rc != 1 || !strstr(err, "run 3") || !strstr(err, "unfinished")) fail_msg("gate on run 3: exit %d: %s", rc, err);
    free(err);
    /* ... and its default choice (the newest finished run against the one before) skips it */
    const char *g2[] = {"gate", "--json", "--max-regression", "10%", "--db", db, NULL};
    char *out = NULL;
    err = NULL;
    rc = hu_cli_env(g2, NULL, NULL, &out, &err);
    if (rc != 0 && rc != 3) fail_msg("default gate: exit %d: %s", rc, err);
    const char *cand = strstr(out, "\"candidate\":{");
    if (!cand || !strstr(cand, "\"run_id\":2,")) fail_msg("default gate did not pick run 2 as candidate: %.400s", out);
    free(out);
    free(err);

    /* a writable open finds the dead process: run 3 is failed, and not because of our code */
    const char *runs[] = {"runs", "--db", db, NULL};
    assert_int_equal(hu_cli_env(runs, NULL, NULL, NULL, NULL), 0);
    st = run_status(db, 3);
    assert_non_null(st);
    assert_string_equal(st, "failed");
    free(st);
    char *why = hu_query_text(db, "SELECT error FROM runs WHERE id = 3");
    assert_non_null(why);
    assert_string_equal(why, "process died");
    free(why);
    /* `apply` on the failed run finishes what it started: ok again, outputs written */
    const char *ap[] = {"apply", "3", "--iters", "3", "--warmup", "0", "--db", db, "--out", tmp("out-reapplied"), NULL};
    char envcache2[4300];
    snprintf(envcache2, sizeof envcache2, "XDG_CACHE_HOME=%s", tmp("cache-reapply"));
    const char *env2[] = {envcache2, NULL};
    err = NULL;
    rc = hu_cli_env(ap, env2, NULL, NULL, &err);
    if (rc != 0) fail_msg("apply 3: exit %d: %s", rc, err);
    free(err);
    st = run_status(db, 3);
    assert_string_equal(st, "ok");
    free(st);
}

static void test_import_ok_only_after_its_advice_is_stored(void **state)
{
    (void)state;
    const char *db = tmp("import.db");
    baseline("zoo:mlp-tiny", db, "x");
    /* the advice insert fails (a CHECK constraint written into the file's schema: a trigger, as
     * before issue 32, makes the file refused at open): the import must not be stored as 'ok' */
    hu_exec_sql(db, "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = replace(sql, 'key TEXT NOT NULL,', "
                    "'key TEXT NOT NULL CONSTRAINT advice_storage_failed CHECK (substr(key, 1, 6) <> ''trace.''),') "
                    "WHERE name = 'analysis_summary';");
    char trace[4200];
    snprintf(trace, sizeof trace, "%s/tests/data/import/current_schema.json", getenv("FA_SOURCE_DIR"));
    const char *argv[] = {"import", trace, "--db", db, NULL};
    char *err = NULL;
    int rc = hu_cli_env(argv, NULL, NULL, NULL, &err);
    if (rc != 1 || !strstr(err, "advice_storage_failed")) fail_msg("import: exit %d: %s", rc, err);
    free(err);
    /* never 'ok': either failed or (the trace, the advice and the run being one transaction)
     * not stored at all */
    assert_int_equal(hu_query_int(db, "SELECT count(*) FROM runs WHERE kind = 'import' AND status = 'ok'"), 0);
    assert_int_equal(hu_query_int(db, "SELECT count(*) FROM runs WHERE kind = 'import' AND status = 'running'"), 0);
    /* `run TRACE` writes a report too: a full disk while writing it leaves no 'ok' import */
    const char *shim = hu_enospc_shim();
    if (shim) {
        char pre[4300], asan[1200];
        snprintf(pre, sizeof pre, "LD_PRELOAD=%s", shim);
        const char *ao = getenv("ASAN_OPTIONS");
        snprintf(asan, sizeof asan, "ASAN_OPTIONS=%s%sverify_asan_link_order=0", ao ? ao : "", ao && *ao ? ":" : "");
        const char *env[] = {pre, "FA_ENOSPC_MATCH=report.html", "FA_ENOSPC_AFTER=0", asan, NULL};
        const char *db2 = tmp("import-report.db");
        const char *rt[] = {"run", trace, "--db", db2, "--out", tmp("import-report-out"), NULL};
        err = NULL;
        rc = hu_cli_env(rt, env, NULL, NULL, &err);
        if (rc != 1 || !strstr(err, "report.html")) fail_msg("run TRACE under a full disk: exit %d: %s", rc, err);
        free(err);
        assert_int_equal(hu_query_int(db2, "SELECT count(*) FROM runs WHERE status = 'ok'"), 0);
        assert_false(hu_exists(tmp("import-report-out")));
    } else {
        print_message("no C compiler for the ENOSPC shim: the report case is not run\n");
    }
    /* without the fault: stored, 'ok' */
    hu_exec_sql(db, "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = replace(sql, ' CONSTRAINT "
                    "advice_storage_failed CHECK (substr(key, 1, 6) <> ''trace.'')', '') WHERE name = 'analysis_summary';");
    rc = hu_cli_env(argv, NULL, NULL, NULL, NULL);
    assert_int_equal(rc, 0);
    assert_int_equal(hu_query_int(db, "SELECT count(*) FROM runs WHERE kind = 'import' AND status = 'ok'"), 1);
}

static void test_failed_run_keeps_no_ok_fused_twin(void **state)
{
    (void)state;
    const char *shim = hu_enospc_shim();
    if (!shim) {
        print_message("no C compiler for the ENOSPC shim\n");
        skip();
    }
    const char *db = tmp("twin.db");
    /* disk full when summary.json is written: after the apply stage stored its results and its
     * fused twin, before the run's outputs are complete */
    char pre[4300], asan[1200];
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s", shim);
    const char *ao = getenv("ASAN_OPTIONS");
    snprintf(asan, sizeof asan, "ASAN_OPTIONS=%s%sverify_asan_link_order=0", ao ? ao : "", ao && *ao ? ":" : "");
    const char *env[] = {pre, "FA_ENOSPC_MATCH=summary.json", "FA_ENOSPC_AFTER=0", asan, NULL};
    const char *argv[] = {"run", "zoo:mlp-tiny", "--iters", "5", "--warmup", "1", "--threads", "1", "--db", db, "--out",
                          tmp("out-twin"), NULL};
    char *err = NULL;
    int rc = hu_cli_env(argv, env, NULL, NULL, &err);
    if (rc != 1 || !strstr(err, "summary.json")) fail_msg("run under a full disk: exit %d: %s", rc, err);
    free(err);
    char *st = run_status(db, 1);
    assert_string_equal(st, "failed");
    free(st);
    assert_int_equal(hu_query_int(db, "SELECT count(*) FROM runs WHERE status = 'ok'"), 0);
    /* whatever twin was stored failed with it */
    assert_int_equal(hu_query_int(db, "SELECT count(*) FROM runs WHERE kind = 'fused' AND status <> 'failed'"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_killed_during_apply_is_unfinished_gate_refuses_it_recovery_fails_it),
        cmocka_unit_test(test_import_ok_only_after_its_advice_is_stored),
        cmocka_unit_test(test_failed_run_keeps_no_ok_fused_twin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
