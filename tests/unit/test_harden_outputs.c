/* tests/unit/test_harden_outputs — issue 15 "Output files and folders": the writer of a file the
 * user named (fa_write_user_file) never replaces what is not a regular file (FIFOs, devices,
 * links to them are written through, a link to a file keeps being a link, folders are refused;
 * files fuse-advise names itself never go through a link: test_harden_fs); an output naming the run database or
 * its -wal/-shm is refused before anything runs; --out naming a file is refused before the
 * baseline; the default folder derived from a model's file name cannot leave fuse-advise-out/;
 * a run that fails or is killed while writing leaves its output folder wholly the previous
 * run's, without *.tmp litter (staging folder + swap). */
#include <pthread.h>
#include <sys/sysmacros.h>

#include "harden_util.h"

static const char *tmp(const char *name) { return hu_tmp(name); }

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* ---- the writer ---- */

typedef struct reader {
    const char *fifo;
    char got[256];
} reader;

/* Opens without blocking and polls for at most 10 s, so a writer that replaced the FIFO instead
 * of writing into it makes the test fail, not hang. */
static void *read_fifo(void *arg)
{
    reader *r = arg;
    int fd = open(r->fifo, O_RDONLY | O_NONBLOCK);
    if (fd < 0) return NULL;
    size_t got = 0;
    for (int i = 0; i < 1000 && got < sizeof r->got - 1; i++) {
        ssize_t n = read(fd, r->got + got, sizeof r->got - 1 - got);
        if (n > 0) got += (size_t)n;
        else if (n == 0 && got > 0) break; /* the writer closed */
        else usleep(10000);
    }
    r->got[got] = 0;
    close(fd);
    return NULL;
}

static void test_writer_writes_through_fifo_device_and_links_never_replaces_them(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    struct stat sb;
    /* a FIFO: written through to its reader, still a FIFO */
    const char *fifo = tmp("a.fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    reader r = {fifo, ""};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, read_fifo, &r), 0);
    usleep(100000);
    assert_int_equal(fa_write_user_file(ctx, fifo, "through the fifo", 16), FA_OK);
    pthread_join(th, NULL);
    assert_string_equal(r.got, "through the fifo");
    assert_int_equal(lstat(fifo, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));

    /* a character device (a /dev/null node of our own; needs root) and a link to /dev/null */
    const char *dev = tmp("null-node");
    if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        assert_int_equal(fa_write_user_file(ctx, dev, "x", 1), FA_OK);
        assert_int_equal(lstat(dev, &sb), 0);
        assert_true(S_ISCHR(sb.st_mode));
    } else {
        print_message("mknod not permitted: the device node case runs through the link below only\n");
    }
    const char *nlink = tmp("null-link");
    assert_int_equal(symlink("/dev/null", nlink), 0);
    assert_int_equal(fa_write_user_file(ctx, nlink, "x", 1), FA_OK);
    assert_int_equal(lstat(nlink, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));

    /* a link to a pipe (what /dev/stdout is when stdout is piped) */
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    char target[64];
    snprintf(target, sizeof target, "/proc/%d/fd/%d", (int)getpid(), pfd[1]);
    const char *plink = tmp("stdout-link");
    assert_int_equal(symlink(target, plink), 0);
    assert_int_equal(fa_write_user_file(ctx, plink, "piped", 5), FA_OK);
    char got[16] = {0};
    assert_int_equal(read(pfd[0], got, sizeof got - 1), 5);
    assert_string_equal(got, "piped");
    close(pfd[0]);
    close(pfd[1]);
    assert_int_equal(lstat(plink, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));

    /* a link to a regular file: the target gets the bytes, the link stays a link */
    const char *file = tmp("real.txt"), *flink = tmp("link.txt");
    put(file, "old");
    assert_int_equal(symlink(file, flink), 0);
    assert_int_equal(fa_write_user_file(ctx, flink, "new", 3), FA_OK);
    assert_int_equal(lstat(flink, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    char *t = hu_slurp(file);
    assert_string_equal(t, "new");
    free(t);

    /* a folder and a dangling link: refused, untouched */
    const char *dir = tmp("a-folder");
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(fa_write_user_file(ctx, dir, "x", 1), FA_ERR_IO);
    assert_int_equal(lstat(dir, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    const char *dang = tmp("dangling");
    assert_int_equal(symlink(tmp("nowhere"), dang), 0);
    assert_int_equal(fa_write_user_file(ctx, dang, "x", 1), FA_ERR_IO);
    assert_int_equal(lstat(dang, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_false(hu_exists(tmp("nowhere")));
    char *litter = hu_find_name(fa_test_tmpdir(), ".tmp.");
    if (litter) fail_msg("temp file left: %s", litter);
    fa_ctx_free(ctx);
}

static void test_zoo_o_fifo_written_through(void **state)
{
    (void)state;
    const char *fifo = tmp("zoo.fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* a reader that drains the FIFO into a file */
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        alarm(30); /* a CLI that replaced the FIFO never opens it: fail, do not hang */
        int in = open(fifo, O_RDONLY), out = open(tmp("zoo-from-fifo.onnx"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        char buf[65536];
        ssize_t n;
        while ((n = read(in, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)n) != n) _exit(1);
        _exit(0);
    }
    const char *argv[] = {"zoo", "mlp-tiny", "-o", fifo, NULL};
    char *err = NULL;
    int rc = hu_cli_env(argv, NULL, NULL, NULL, &err);
    int st = 0;
    waitpid(p, &st, 0);
    if (rc != 0) fail_msg("zoo -o FIFO: exit %d: %s", rc, err);
    free(err);
    struct stat sb;
    assert_int_equal(lstat(fifo, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    assert_int_equal(stat(tmp("zoo-from-fifo.onnx"), &sb), 0);
    assert_true(sb.st_size > 1000);
}

/* ---- the database is never an output ---- */

static void test_gate_outputs_naming_the_database_refused_before_anything_runs(void **state)
{
    (void)state;
    const char *db = tmp("gate.db");
    for (int i = 0; i < 2; i++) {
        const char *argv[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "3", "--warmup", "0", "--db", db, NULL};
        assert_int_equal(hu_cli_env(argv, NULL, NULL, NULL, NULL), 0);
    }
    char wal[4300], shm[4300], dotdb[4300];
    snprintf(wal, sizeof wal, "%s-wal", db);
    snprintf(shm, sizeof shm, "%s-shm", db);
    snprintf(dotdb, sizeof dotdb, "%s/./gate.db", fa_test_tmpdir());
    char *before = hu_snapshot(fa_test_tmpdir());
    const char *targets[] = {db, wal, shm, dotdb};
    const char *opts[] = {"--junit", "--markdown"};
    for (int o = 0; o < 2; o++)
        for (int t = 0; t < 4; t++) {
            const char *argv[] = {"gate", "--baseline", "1", "--candidate", "2", "--db", db, opts[o], targets[t], NULL};
            char *err = NULL;
            int rc = hu_cli_env(argv, NULL, NULL, NULL, &err);
            if (rc != 2 || !strstr(err, "run database")) fail_msg("gate %s %s: exit %d: %s", opts[o], targets[t], rc, err);
            free(err);
        }
    char *after = hu_snapshot(fa_test_tmpdir());
    /* the database file is byte for byte what it was (other files there are the CLI's logs) */
    assert_false(hu_exists(wal));
    assert_int_equal(hu_query_int(db, "SELECT count(*) FROM runs WHERE status = 'ok'"), 2);
    char *bl = strstr(before, "gate.db "), *al = strstr(after, "gate.db ");
    assert_non_null(bl);
    assert_non_null(al);
    assert_int_equal(strcspn(bl, "\n"), strcspn(al, "\n"));
    assert_memory_equal(bl, al, strcspn(bl, "\n"));
    free(before);
    free(after);
}

/* ---- --out ---- */

/* A trace of many distinct kernel names: report's kernels table looked each row's full name up
 * among all of them (200,000 names: 91 s). The table holds the FA_REP_KERNEL_ROWS kernels with the
 * most time and says how many more kernels.csv holds. */
static void test_trace_report_kernels_table_is_bounded(void **state)
{
    (void)state;
    const char *trace = tmp("many-names.json");
    FILE *f = fopen(trace, "w");
    assert_non_null(f);
    fputs("{\"traceEvents\": [", f);
    for (int i = 0; i < 2100; i++)
        fprintf(f,
                "%s{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, "
                "\"ts\": %d, \"dur\": 1, \"args\": {\"correlation\": %d}},"
                "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"kern_%d\", \"pid\": 0, \"tid\": 7, \"ts\": %d, "
                "\"dur\": %d, \"args\": {\"correlation\": %d, \"stream\": 7, \"device\": 0}}",
                i ? "," : "", i * 10, i + 1, i, i * 10 + 2, 1 + i % 5, i + 1);
    fputs("]}", f);
    fclose(f);
    const char *db = tmp("many-names.db"), *out = tmp("many-names-rep");
    const char *imp[] = {"import", trace, "--db", db, NULL};
    char *err = NULL;
    int rc = hu_cli_env(imp, NULL, NULL, NULL, &err);
    if (rc != 0) fail_msg("import: exit %d: %s", rc, err);
    free(err);
    const char *rep[] = {"report", "latest", "--db", db, "--out", out, NULL};
    err = NULL;
    rc = hu_cli_env(rep, NULL, NULL, NULL, &err);
    if (rc != 0) fail_msg("report: exit %d: %s", rc, err);
    free(err);
    char *html = hu_slurp(fa_test_path(out, "report.html"));
    assert_non_null(html);
    assert_non_null(strstr(html, "The 2000 kernels with the most time; 100 more are in <code>kernels.csv</code>."));
    free(html);
}

/* What a marker authorises, and what a stale sweep may remove (the second attack pass): a folder
 * holding a `.fuse-advise-out` that fuse-advise did not write (a folder, an empty file) was wiped
 * whole with the user's thesis.tex in it; a real output folder with the user's notes.txt, a
 * symbolic link or a hand-written kernels/my.c added lost them; a user's folder named like a dead
 * process's staging folder next to DIR was deleted. Each is refused or left alone now. */
static void test_marker_and_stale_sweep_never_lose_a_users_files(void **state)
{
    (void)state;
    const char *db = tmp("marker.db");
    char d1[4300], d2[4300], d3[4300], f[4400];
    /* 1. a marker that is a folder, then one that is an empty file */
    snprintf(d1, sizeof d1, "%s", tmp("fake-marker"));
    assert_int_equal(mkdir(d1, 0755), 0);
    snprintf(f, sizeof f, "%s/.fuse-advise-out", d1);
    assert_int_equal(mkdir(f, 0755), 0);
    snprintf(f, sizeof f, "%s/thesis.tex", d1);
    put(f, "mine");
    const char *argv1[] = {"run", "zoo:mlp-tiny", "--iters", "3", "--db", db, "--out", d1, NULL};
    char *err = NULL;
    int rc = hu_cli_env(argv1, NULL, NULL, NULL, &err);
    if ((rc != 1 && rc != 2) || !strstr(err, "thesis.tex")) fail_msg("a folder as the marker: exit %d: %s", rc, err);
    free(err);
    assert_true(hu_exists(f));
    /* 2. a real output folder, then the user's files added to it */
    snprintf(d2, sizeof d2, "%s", tmp("real-out"));
    const char *argv2[] = {"run", "zoo:mlp-tiny", "--iters", "3", "--db", db, "--out", d2, NULL};
    err = NULL;
    rc = hu_cli_env(argv2, NULL, NULL, NULL, &err);
    if (rc != 0) fail_msg("first run: exit %d: %s", rc, err);
    free(err);
    const char *added[] = {"notes.txt", "kernels/my.c"};
    for (int i = 0; i < 2; i++) {
        char k[4400];
        snprintf(k, sizeof k, "%s/kernels", d2);
        mkdir(k, 0755);
        snprintf(f, sizeof f, "%s/%s", d2, added[i]);
        put(f, "mine");
        err = NULL;
        rc = hu_cli_env(argv2, NULL, NULL, NULL, &err);
        if ((rc != 1 && rc != 2) || !strstr(err, added[i])) fail_msg("%s added: exit %d: %s", added[i], rc, err);
        free(err);
        assert_true(hu_exists(f));
        unlink(f);
    }
    snprintf(f, sizeof f, "%s/mylink", d2);
    assert_int_equal(symlink("/tmp", f), 0);
    err = NULL;
    rc = hu_cli_env(argv2, NULL, NULL, NULL, &err);
    if ((rc != 1 && rc != 2) || !strstr(err, "mylink")) fail_msg("a link added: exit %d: %s", rc, err);
    free(err);
    unlink(f);
    /* 3. a user's folder named like a dead process's staging folder beside DIR */
    snprintf(d3, sizeof d3, "%s/.real-out.fa-staging.999999", fa_test_tmpdir());
    assert_int_equal(mkdir(d3, 0755), 0);
    snprintf(f, sizeof f, "%s/u.txt", d3);
    put(f, "mine");
    err = NULL;
    rc = hu_cli_env(argv2, NULL, NULL, NULL, &err);
    if (rc != 0) fail_msg("run beside a look-alike staging folder: exit %d: %s", rc, err);
    free(err);
    assert_true(hu_exists(f));
    unlink(f); /* the user's, kept: tidied here for the later tests' check that no staging folder is left */
    rmdir(d3);
    /* 4. a marked one another user planted there (owned by them: theirs, not a stale one of ours;
     * the seventh pass swapped its subfolder for a link mid-sweep and had another folder emptied) */
    if (geteuid() == 0) {
        assert_int_equal(mkdir(d3, 0755), 0);
        char m[4400];
        snprintf(m, sizeof m, "%s/.fuse-advise-out", d3);
        put(m, "written by fuse-advise\n");
        snprintf(f, sizeof f, "%s/theirs.txt", d3);
        put(f, "theirs");
        assert_int_equal(lchown(d3, 65534, 65534), 0);
        err = NULL;
        rc = hu_cli_env(argv2, NULL, NULL, NULL, &err);
        if (rc != 0) fail_msg("run beside another user's marked staging folder: exit %d: %s", rc, err);
        free(err);
        assert_true(hu_exists(f));
        unlink(f);
        unlink(m);
        rmdir(d3);
    } else {
        print_message("not root: another user's planted staging folder is not tried\n");
    }
}

static void test_out_naming_a_file_or_foreign_folder_refused_before_the_baseline(void **state)
{
    (void)state;
    const char *db = tmp("out.db"), *file = tmp("a-file");
    put(file, "mine");
    const char *foreign = tmp("my-folder");
    assert_int_equal(mkdir(foreign, 0755), 0);
    put(fa_test_path(foreign, "notes.txt"), "mine too");
    const char *holds_db = tmp("holds-db");
    assert_int_equal(mkdir(holds_db, 0755), 0);
    const char *db_inside = fa_test_path(holds_db, "in.db");
    char dbi[4300];
    snprintf(dbi, sizeof dbi, "%s", db_inside);
    /* a folder of the user's own files that only carry our names, with no marker: its hand-written
     * kernels/ and summary.json were replaced with the run's and lost */
    const char *lookalike = tmp("lookalike");
    assert_int_equal(mkdir(lookalike, 0755), 0);
    char kdir[4300], kfile[4400], sfile[4400];
    snprintf(kdir, sizeof kdir, "%s", fa_test_path(lookalike, "kernels"));
    assert_int_equal(mkdir(kdir, 0755), 0);
    snprintf(kfile, sizeof kfile, "%s/my_kernel.c", kdir);
    put(kfile, "int my_hand_tuned(void) { return 42; }\n");
    snprintf(sfile, sizeof sfile, "%s", fa_test_path(lookalike, "summary.json"));
    put(sfile, "{\"mine\": 1}\n");
    struct {
        const char *out, *db, *want;
    } cases[] = {{file, db, "not an output folder"},
                 {foreign, db, "notes.txt"},
                 {holds_db, dbi, "run database"},
                 {lookalike, db, "no .fuse-advise-out marker"}};
    for (int k = 0; k < 4; k++) {
        const char *argv[] = {"run", "zoo:mlp-tiny", "--iters", "3", "--db", cases[k].db, "--out", cases[k].out, NULL};
        char *err = NULL;
        int rc = hu_cli_env(argv, NULL, NULL, NULL, &err);
        if ((rc != 1 && rc != 2) || !strstr(err, cases[k].want)) fail_msg("--out %s: exit %d: %s", cases[k].out, rc, err);
        free(err);
        /* before the baseline: no database was created */
        assert_false(hu_exists(cases[k].db));
    }
    char *t = hu_slurp(file);
    assert_string_equal(t, "mine");
    free(t);
    t = hu_slurp(fa_test_path(foreign, "notes.txt"));
    assert_string_equal(t, "mine too");
    free(t);
    t = hu_slurp(kfile);
    assert_string_equal(t, "int my_hand_tuned(void) { return 42; }\n");
    free(t);
    t = hu_slurp(sfile);
    assert_string_equal(t, "{\"mine\": 1}\n");
    free(t);
    /* exec --outputs naming a file: refused before the model runs */
    const char *ex[] = {"exec", "zoo:mlp-tiny", "--outputs", file, NULL};
    char *err = NULL;
    int rc = hu_cli_env(ex, NULL, NULL, NULL, &err);
    if (rc != 1 || !strstr(err, "not a folder")) fail_msg("exec --outputs FILE: exit %d: %s", rc, err);
    free(err);
}

static void test_default_folder_from_hostile_model_file_name_stays_inside(void **state)
{
    (void)state;
    const char *w = tmp("w");
    assert_int_equal(mkdir(w, 0755), 0);
    const char *names[] = {"...onnx", "..onnx", ".onnx"};
    char own[4300];
    snprintf(own, sizeof own, "%s/report.html", w);
    put(own, "the user's own report");
    for (int k = 0; k < 3; k++) {
        char model[4300];
        snprintf(model, sizeof model, "%s/%s", w, names[k]);
        hu_export_chain(model, 8, 16, 2, NULL, 0);
        hu_cwd = w;
        const char *argv[] = {"run", names[k], "--iters", "3", "--warmup", "0", "--threads", "1", "--db", "x.db", NULL};
        char *err = NULL;
        int rc = hu_cli_env(argv, NULL, NULL, NULL, &err);
        hu_cwd = NULL;
        if (rc != 0) fail_msg("run %s: exit %d: %s", names[k], rc, err);
        free(err);
        char *t = hu_slurp(own);
        if (strcmp(t, "the user's own report")) fail_msg("run %s overwrote %s", names[k], own);
        free(t);
        /* its outputs landed below fuse-advise-out/ */
        char *found = hu_find_name(fa_test_path(w, "fuse-advise-out"), "report.html");
        assert_non_null(found);
        free(found);
        assert_false(hu_exists(fa_test_path(w, "plan.json")));
    }
}

/* ---- whole folders ---- */

static void full_run(const char *model, const char *db, const char *out, const char *const *env, int *rc, char **err)
{
    const char *argv[] = {"run", model, "--iters", "3", "--warmup", "0", "--threads", "1", "--db", db, "--out", out, NULL};
    *rc = hu_cli_env(argv, env, NULL, NULL, err);
}

static void assert_no_litter(const char *out)
{
    char *t = hu_find_name(out, ".tmp.");
    if (t) fail_msg("temp file left in the output folder: %s", t);
    char parent[4300];
    snprintf(parent, sizeof parent, "%s", out);
    *strrchr(parent, '/') = 0;
    t = hu_find_name(parent, ".fa-staging.");
    if (t) fail_msg("staging folder left: %s", t);
}

static void test_failing_run_leaves_the_output_folder_wholly_previous(void **state)
{
    (void)state;
    const char *shim = hu_enospc_shim();
    if (!shim) {
        print_message("no C compiler for the ENOSPC shim\n");
        skip();
    }
    const char *db = tmp("whole.db"), *out = tmp("whole-out");
    char model[4300];
    snprintf(model, sizeof model, "%s", tmp("whole-chain.onnx"));
    hu_export_chain(model, 32, 64, 6, NULL, 0);
    int rc;
    char *err = NULL;
    full_run("zoo:mlp-tiny", db, out, NULL, &rc, &err);
    if (rc) fail_msg("first run: %d %s", rc, err);
    free(err);
    char *before = hu_snapshot(out);
    /* another model into the same folder, the disk full when its summary.json is written */
    char pre[4300], asan[1200], cache[4300];
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s", shim);
    const char *ao = getenv("ASAN_OPTIONS");
    snprintf(asan, sizeof asan, "ASAN_OPTIONS=%s%sverify_asan_link_order=0", ao ? ao : "", ao && *ao ? ":" : "");
    snprintf(cache, sizeof cache, "XDG_CACHE_HOME=%s", tmp("whole-cache"));
    const char *env[] = {pre, "FA_ENOSPC_MATCH=summary.json", "FA_ENOSPC_AFTER=10", asan, cache, NULL};
    err = NULL;
    full_run(model, db, out, env, &rc, &err);
    if (rc != 1) fail_msg("run under a full disk: exit %d: %s", rc, err);
    free(err);
    char *after = hu_snapshot(out);
    if (strcmp(before, after)) fail_msg("the folder changed:\n--- before\n%s--- after\n%s", before, after);
    assert_no_litter(out);
    free(after);
    /* the same run with room: the folder is the new run's as a whole */
    const char *env2[] = {cache, NULL};
    err = NULL;
    full_run(model, db, out, env2, &rc, &err);
    if (rc) fail_msg("run: %d %s", rc, err);
    free(err);
    after = hu_snapshot(out);
    assert_true(strcmp(before, after) != 0);
    assert_non_null(strstr(after, "kernels/"));
    assert_no_litter(out);
    free(before);
    free(after);
}

static void test_killed_run_leaves_the_output_folder_wholly_previous(void **state)
{
    (void)state;
    const char *db = tmp("kill.db"), *out = tmp("kill-out");
    char model[4300];
    snprintf(model, sizeof model, "%s", tmp("kill-chain.onnx"));
    hu_export_chain(model, 32, 64, 6, NULL, 0);
    int rc;
    char *err = NULL;
    full_run("zoo:mlp-tiny", db, out, NULL, &rc, &err);
    if (rc) fail_msg("first run: %d %s", rc, err);
    free(err);
    char *before = hu_snapshot(out);
    char cc[4300], marker[4300], envcc[4400], cache[4300];
    snprintf(cc, sizeof cc, "%s", tmp("kill-cc.sh"));
    snprintf(marker, sizeof marker, "%s", tmp("kill-cc-started"));
    hu_write_cc_wrapper(cc, marker, NULL, 300);
    snprintf(envcc, sizeof envcc, "CC=%s", cc);
    snprintf(cache, sizeof cache, "XDG_CACHE_HOME=%s", tmp("kill-cache"));
    const char *env[] = {envcc, cache, NULL};
    const char *argv[] = {"run", model, "--iters", "3", "--warmup", "0", "--threads", "1", "--db", db, "--out", out, NULL};
    rc = hu_cli_env(argv, env, marker, NULL, NULL);
    assert_int_equal(rc, 128 + SIGKILL);
    char *after = hu_snapshot(out);
    if (strcmp(before, after)) fail_msg("the folder changed:\n--- before\n%s--- after\n%s", before, after);
    free(after);
    /* the next run replaces it whole and sweeps the dead run's staging folder */
    const char *env2[] = {cache, NULL};
    err = NULL;
    full_run(model, db, out, env2, &rc, &err);
    if (rc) fail_msg("run: %d %s", rc, err);
    free(err);
    assert_no_litter(out);
    free(before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_writes_through_fifo_device_and_links_never_replaces_them),
        cmocka_unit_test(test_zoo_o_fifo_written_through),
        cmocka_unit_test(test_gate_outputs_naming_the_database_refused_before_anything_runs),
        cmocka_unit_test(test_out_naming_a_file_or_foreign_folder_refused_before_the_baseline),
        cmocka_unit_test(test_marker_and_stale_sweep_never_lose_a_users_files),
        cmocka_unit_test(test_trace_report_kernels_table_is_bounded),
        cmocka_unit_test(test_default_folder_from_hostile_model_file_name_stays_inside),
        cmocka_unit_test(test_failing_run_leaves_the_output_folder_wholly_previous),
        cmocka_unit_test(test_killed_run_leaves_the_output_folder_wholly_previous),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
