/* tests/unit/test_harden_codegen — issue 15 "Model strings into generated code" and "The kernel
 * cache": no tensor or node name reaches generated C (a name closing a comment used to run its
 * code at every benchmark iteration); compiler output reaching the user holds only diagnostics
 * about our source, never an included file's content; the kernel cache folder is private and
 * refused when it is not, entries are checked against the hash of their binary before dlopen
 * (tampered, planted, zero-byte entries are rebuilt), TMPDIR on another filesystem works, no
 * compile folder is left behind, least-recently-used entries go beyond the size cap; the apply
 * stage compiles its kernels in one compiler process, tries clusters by predicted saving up to
 * a cap and a time budget and reports the rest as not tried. */
#include "harden_util.h"

#include "applier/applier.h"

static const char *tmp(const char *name) { return hu_tmp(name); }

/* `run MODEL` of the chain with full apply into OUT with its own DB; extra env; returns exit code,
 * *err its stderr, *out its stdout. */
static int run_model(const char *model, const char *tag, const char *const *env, const char *const *extra, char **out,
                     char **err)
{
    const char *argv[32] = {"run", model, "--iters", "3", "--warmup", "0", "--threads", "1", "--db", NULL, "--out", NULL};
    int a = 12;
    char db[4300], od[4300];
    snprintf(db, sizeof db, "%s", tmp(tag));
    strcat(db, ".db");
    snprintf(od, sizeof od, "%s", tmp(tag));
    strcat(od, "-out");
    argv[9] = db;
    argv[11] = od;
    for (int i = 0; extra && extra[i] && a < 30; i++) argv[a++] = extra[i];
    argv[a] = NULL;
    return hu_cli_env(argv, env, NULL, out, err);
}

/* Clusters whose kernel could not be built, from the run's database. */
static long long build_failures(const char *tag)
{
    char db[4300];
    snprintf(db, sizeof db, "%s.db", tmp(tag));
    return hu_query_int(db, "SELECT count(*) FROM clusters WHERE reason LIKE 'could not build%'");
}

static long long generated_clusters(const char *tag)
{
    char db[4300];
    snprintf(db, sizeof db, "%s.db", tmp(tag));
    return hu_query_int(db, "SELECT count(*) FROM clusters WHERE kind IN ('elementwise-chain','reduction','horizontal') "
                            "AND status <> 'refused'");
}

/* ---- model strings ---- */

static void test_hostile_tensor_names_never_reach_generated_source(void **state)
{
    (void)state;
    char marker[4300], evil[8192];
    snprintf(marker, sizeof marker, "%s", tmp("INJECTED-CODE-RAN"));
    /* a name that closes the comment it is printed in and runs code at every call */
    snprintf(evil, sizeof evil, "*/ { extern int creat(const char *, unsigned); creat(\"%s\", 0600); } /*", marker);
    const char *names[] = {evil, "a\nb\r\\\"q\"// #define X 1", "\x01\x1b[31mred\x7f", "/* open", "\xff\xfe bytes"};
    char model[4300];
    snprintf(model, sizeof model, "%s", tmp("hostile.onnx"));
    hu_export_chain(model, 16, 64, 8, names, 5);
    char cache[4300];
    snprintf(cache, sizeof cache, "XDG_CACHE_HOME=%s", tmp("hostile-cache"));
    const char *env[] = {cache, NULL};
    char *out = NULL, *err = NULL;
    int rc = run_model(model, "hostile", env, NULL, &out, &err);
    if (rc != 0) fail_msg("run of the hostile-name model: exit %d: %s", rc, err);
    free(out);
    free(err);
    assert_false(hu_exists(marker));
    assert_true(generated_clusters("hostile") >= 1);
    assert_int_equal(build_failures("hostile"), 0);
    /* the kernel sources kept in OUT/kernels hold none of the names */
    char kd[4300];
    snprintf(kd, sizeof kd, "%s-out/kernels", tmp("hostile"));
    DIR *d = opendir(kd);
    assert_non_null(d);
    struct dirent *e;
    int n_src = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", kd, e->d_name);
        char *src = hu_slurp(p);
        n_src++;
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
            char probe[16];
            snprintf(probe, sizeof probe, "%.6s", names[k]);
            if (strstr(src, probe)) fail_msg("%s holds '%s' (from a tensor name)", p, probe);
        }
        for (const unsigned char *c = (const unsigned char *)src; *c; c++)
            if ((*c < 0x20 && *c != '\n') || *c >= 0x7f) fail_msg("%s: byte 0x%02x in generated source", p, *c);
        free(src);
    }
    closedir(d);
    assert_true(n_src >= 1);
}

static void test_compiler_output_never_quotes_included_content(void **state)
{
    (void)state;
    /* through a model: a name that would include a file if it reached the source */
    char secret[4300], inc[8192];
    snprintf(secret, sizeof secret, "%s", tmp("secret.h"));
    FILE *f = fopen(secret, "w");
    assert_non_null(f);
    fputs("root:x:0:0:SECRET-LINE-4711:/root:/bin/bash\n", f);
    fclose(f);
    snprintf(inc, sizeof inc, "*/\n#include \"%s\"\n/*", secret);
    const char *names[] = {inc, "y"};
    char model[4300];
    snprintf(model, sizeof model, "%s", tmp("include.onnx"));
    hu_export_chain(model, 16, 64, 8, names, 2);
    char cache[4300];
    snprintf(cache, sizeof cache, "XDG_CACHE_HOME=%s", tmp("include-cache"));
    const char *env[] = {cache, NULL};
    char *out = NULL, *err = NULL;
    int rc = run_model(model, "include", env, NULL, &out, &err);
    if (strstr(out, "SECRET-LINE") || strstr(err, "SECRET-LINE")) fail_msg("the terminal shows the included file");
    free(out);
    free(err);
    (void)rc;
    char p[4300];
    snprintf(p, sizeof p, "%s-out/plan.json", tmp("include"));
    char *t = hu_slurp(p);
    assert_null(strstr(t, "SECRET-LINE"));
    free(t);
    snprintf(p, sizeof p, "%s.db", tmp("include"));
    assert_int_equal(hu_query_int(p, "SELECT count(*) FROM clusters WHERE reason LIKE '%SECRET-LINE%'"), 0);

    /* straight at the compiler: an include of that file, and a real error of our own */
    fa_ctx *ctx = fa_ctx_create();
    fa_kernel_cache *kc = NULL;
    assert_int_equal(fa_kernel_cache_open(ctx, tmp("direct-cache"), 0, &kc), FA_OK);
    char src1[8192];
    snprintf(src1, sizeof src1, "#include \"%s\"\nvoid k1(const void *const *in, void *const *out, int t) {}\n", secret);
    const char *src2 = "void k2(const void *const *in, void *const *out, int t) { undefined_symbol_xyz(); }\n";
    const char *src3 = "void k3(const void *const *in, void *const *out, int t) { (void)in; (void)out; (void)t; }\n";
    fa_kernel_source ks[3] = {{src1, strlen(src1), "k1"}, {src2, strlen(src2), "k2"}, {src3, strlen(src3), "k3"}};
    fa_compiled *got[3];
    char *errs[3];
    assert_int_equal(fa_compile_kernels(ctx, kc, 3, ks, got, errs), FA_OK);
    assert_null(got[0]);
    assert_null(got[1]);
    assert_non_null(got[2]); /* the good one still builds, with the others dropped */
    assert_non_null(errs[0]);
    assert_non_null(errs[1]);
    assert_null(strstr(errs[0], "SECRET-LINE"));
    assert_null(strstr(errs[0], "root:x"));
    assert_non_null(strstr(errs[1], "undefined_symbol_xyz")); /* our own source's diagnostics are kept */
    assert_true(strlen(errs[0]) < 1600 && strlen(errs[1]) < 1600);
    for (int i = 0; i < 3; i++) {
        fa_compiled_free(got[i]);
        free(errs[i]);
    }
    fa_kernel_cache_free(kc);
    fa_ctx_free(ctx);
}

/* ---- the kernel cache ---- */

static char *kernels_dir(const char *xdg)
{
    static char p[4400];
    snprintf(p, sizeof p, "%s/fuse-advise/kernels", xdg);
    return p;
}

static int count_suffix(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    size_t sl = strlen(suffix);
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > sl && !strcmp(e->d_name + l - sl, suffix)) n++;
    }
    closedir(d);
    return n;
}

static void test_cache_folder_private_refused_when_shared(void **state)
{
    (void)state;
    char model[4300], xdg[4300], env0[4400];
    snprintf(model, sizeof model, "%s", tmp("cache-chain.onnx"));
    hu_export_chain(model, 16, 64, 6, NULL, 0);
    snprintf(xdg, sizeof xdg, "%s", tmp("xdg-private"));
    snprintf(env0, sizeof env0, "XDG_CACHE_HOME=%s", xdg);
    const char *env[] = {env0, NULL};
    char *err = NULL;
    int rc = run_model(model, "private1", env, NULL, NULL, &err);
    if (rc) fail_msg("run: %d %s", rc, err);
    free(err);
    struct stat sb;
    assert_int_equal(stat(kernels_dir(xdg), &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    assert_true(count_suffix(kernels_dir(xdg), ".so") >= 1);
    /* writable by others: refused with a message naming the folder */
    assert_int_equal(chmod(kernels_dir(xdg), 0777), 0);
    err = NULL;
    rc = run_model(model, "private2", env, NULL, NULL, &err);
    if (rc != 1 || !strstr(err, kernels_dir(xdg)) || !strstr(err, "writable")) fail_msg("0777 cache: exit %d: %s", rc, err);
    free(err);
    assert_int_equal(chmod(kernels_dir(xdg), 0755), 0); /* group/others may read, not write: fine */
    err = NULL;
    rc = run_model(model, "private3", env, NULL, NULL, &err);
    if (rc) fail_msg("0755 cache: exit %d: %s", rc, err);
    free(err);
    /* owned by another user (root can hand it over; others cannot make this case) */
    if (geteuid() == 0) {
        assert_int_equal(chown(kernels_dir(xdg), 65534, 65534), 0);
        err = NULL;
        rc = run_model(model, "private4", env, NULL, NULL, &err);
        if (rc != 1 || !strstr(err, "owned by uid 65534")) fail_msg("foreign cache: exit %d: %s", rc, err);
        free(err);
        assert_int_equal(chown(kernels_dir(xdg), 0, 0), 0);
    } else {
        print_message("not root: the foreign-owner case is not run\n");
    }
}

/* A shared object whose constructor creates `marker`. */
static void build_planted_so(const char *path, const char *marker)
{
    char c[4400], cmd[9000];
    snprintf(c, sizeof c, "%s.c", path);
    FILE *f = fopen(c, "w");
    assert_non_null(f);
    fprintf(f, "#include <fcntl.h>\n__attribute__((constructor)) static void planted(void) { creat(\"%s\", 0600); }\n",
            marker);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o '%s' '%s'", path, c);
    assert_int_equal(system(cmd), 0);
}

static void test_cache_entries_checked_against_their_hash_before_dlopen(void **state)
{
    (void)state;
    char model[4300], xdg[4300], env0[4400], marker[4300];
    snprintf(model, sizeof model, "%s", tmp("hash-chain.onnx"));
    hu_export_chain(model, 16, 64, 6, NULL, 0);
    snprintf(xdg, sizeof xdg, "%s", tmp("xdg-hash"));
    snprintf(env0, sizeof env0, "XDG_CACHE_HOME=%s", xdg);
    snprintf(marker, sizeof marker, "%s", tmp("PLANTED-CONSTRUCTOR-RAN"));
    const char *env[] = {env0, NULL};
    char *err = NULL;
    int rc = run_model(model, "hash1", env, NULL, NULL, &err);
    if (rc) fail_msg("run: %d %s", rc, err);
    free(err);
    const char *kd = kernels_dir(xdg);
    char kdir[4400];
    snprintf(kdir, sizeof kdir, "%s", kd);
    /* every entry replaced by a shared object with a constructor (same name, same owner, 0600) */
    char planted[4400];
    snprintf(planted, sizeof planted, "%s", tmp("planted.so"));
    build_planted_so(planted, marker);
    DIR *d = opendir(kdir);
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".so")) continue;
        char p[8192], cmd[17000];
        snprintf(p, sizeof p, "%s/%s", kdir, e->d_name);
        snprintf(cmd, sizeof cmd, "cp '%s' '%s'", planted, p);
        assert_int_equal(system(cmd), 0);
        n++;
    }
    closedir(d);
    assert_true(n >= 1);
    err = NULL;
    rc = run_model(model, "hash2", env, NULL, NULL, &err);
    if (rc) fail_msg("run over planted entries: %d %s", rc, err);
    free(err);
    assert_false(hu_exists(marker)); /* never loaded */
    assert_int_equal(build_failures("hash2"), 0); /* rebuilt */

    /* zero-byte entries: rebuilt, not a cluster rejected in every later run */
    d = opendir(kdir);
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".so")) continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", kdir, e->d_name);
        assert_int_equal(truncate(p, 0), 0);
    }
    closedir(d);
    err = NULL;
    rc = run_model(model, "hash3", env, NULL, NULL, &err);
    if (rc) fail_msg("run over zero-byte entries: %d %s", rc, err);
    free(err);
    assert_int_equal(build_failures("hash3"), 0);
    assert_true(generated_clusters("hash3") >= 1);
}

static void test_tmpdir_elsewhere_works_and_no_compile_folder_is_left(void **state)
{
    (void)state;
    char model[4300], xdg[4300], env0[4400], env1[4400], td[4300];
    snprintf(model, sizeof model, "%s", tmp("tmpdir-chain.onnx"));
    hu_export_chain(model, 16, 64, 6, NULL, 0);
    snprintf(xdg, sizeof xdg, "%s", tmp("xdg-tmpdir"));
    /* a tmpfs TMPDIR where there is one on another filesystem than the cache */
    struct stat a, b;
    bool other_fs = stat("/dev/shm", &a) == 0 && stat(fa_test_tmpdir(), &b) == 0 && a.st_dev != b.st_dev &&
                    access("/dev/shm", W_OK) == 0;
    if (other_fs) snprintf(td, sizeof td, "/dev/shm/fa-harden-tmpdir-%d", (int)getpid());
    else snprintf(td, sizeof td, "%s", tmp("tmpdir"));
    if (!other_fs) print_message("no writable /dev/shm on another filesystem: TMPDIR on the same one\n");
    assert_int_equal(mkdir(td, 0700), 0);
    snprintf(env0, sizeof env0, "XDG_CACHE_HOME=%s", xdg);
    snprintf(env1, sizeof env1, "TMPDIR=%s", td);
    const char *env[] = {env0, env1, NULL};
    char *err = NULL;
    int rc = run_model(model, "tmpdir", env, NULL, NULL, &err);
    if (rc) fail_msg("run: %d %s", rc, err);
    free(err);
    assert_int_equal(build_failures("tmpdir"), 0);
    assert_true(generated_clusters("tmpdir") >= 1);
    /* nothing left in TMPDIR, only entries in the cache */
    int left = 0;
    DIR *d = opendir(td);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            print_message("left in TMPDIR: %s\n", e->d_name);
            left++;
        }
    closedir(d);
    rmdir(td);
    assert_int_equal(left, 0);
    char *w = hu_find_name(kernels_dir(xdg), "tmp.");
    if (w) fail_msg("compile folder left: %s", w);
    assert_int_equal(count_suffix(kernels_dir(xdg), ".so"), count_suffix(kernels_dir(xdg), ".so.sha256"));
}

static void test_cache_size_cap_evicts_least_recently_used(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    const char *dir = tmp("lru-cache");
    char srcs[3][256], names[3][16];
    fa_kernel_source ks[3];
    for (int i = 0; i < 3; i++) {
        snprintf(names[i], sizeof names[i], "lru%d", i);
        snprintf(srcs[i], sizeof srcs[i], "void lru%d(const void *const *in, void *const *out, int t) { (void)in; (void)out; (void)t; }\n", i);
        ks[i] = (fa_kernel_source){srcs[i], strlen(srcs[i]), names[i]};
    }
    /* the size of one entry decides the cap: room for two */
    fa_kernel_cache *kc = NULL;
    assert_int_equal(fa_kernel_cache_open(ctx, dir, 1ull << 40, &kc), FA_OK);
    fa_compiled *c = NULL;
    char *e = NULL;
    assert_int_equal(fa_compile_kernels(ctx, kc, 1, &ks[0], &c, &e), FA_OK);
    assert_non_null(c);
    fa_compiled_free(c);
    fa_kernel_cache_free(kc);
    struct stat sb;
    DIR *d = opendir(dir);
    struct dirent *de;
    off_t one = 0;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (l > 3 && !strcmp(de->d_name + l - 3, ".so") && stat(p, &sb) == 0) one = sb.st_size;
    }
    closedir(d);
    assert_true(one > 0);
    assert_int_equal(fa_kernel_cache_open(ctx, dir, (uint64_t)(2 * one + one / 2), &kc), FA_OK);
    assert_int_equal(fa_compile_kernels(ctx, kc, 1, &ks[1], &c, &e), FA_OK); /* entries: 0, 1 */
    fa_compiled_free(c);
    sleep(1); /* mtime granularity of some filesystems */
    assert_int_equal(fa_compile_kernels(ctx, kc, 1, &ks[0], &c, &e), FA_OK); /* 0 used again */
    assert_true(c->cached);
    fa_compiled_free(c);
    sleep(1);
    assert_int_equal(fa_compile_kernels(ctx, kc, 1, &ks[2], &c, &e), FA_OK); /* 2 added: 1 is evicted */
    fa_compiled_free(c);
    assert_int_equal(count_suffix(dir, ".so"), 2);
    assert_int_equal(fa_compile_kernels(ctx, kc, 1, &ks[0], &c, &e), FA_OK);
    assert_true(c->cached);
    fa_compiled_free(c);
    assert_int_equal(fa_compile_kernels(ctx, kc, 1, &ks[2], &c, &e), FA_OK);
    assert_true(c->cached);
    fa_compiled_free(c);
    fa_kernel_cache_free(kc);
    fa_ctx_free(ctx);
}

/* ---- bounded apply ---- */

static void test_apply_one_compiler_process_for_many_clusters(void **state)
{
    (void)state;
    char model[4300], cc[4300], marker[4300], log[4300], envcc[4400], env0[4400];
    snprintf(model, sizeof model, "%s", tmp("many-chain.onnx"));
    hu_export_chain(model, 16, 64, 24, NULL, 0);
    snprintf(cc, sizeof cc, "%s", tmp("count-cc.sh"));
    snprintf(marker, sizeof marker, "%s", tmp("count-cc-ran"));
    snprintf(log, sizeof log, "%s", tmp("cc-invocations.log"));
    hu_write_cc_wrapper(cc, marker, log, 0);
    snprintf(envcc, sizeof envcc, "CC=%s", cc);
    snprintf(env0, sizeof env0, "XDG_CACHE_HOME=%s", tmp("xdg-many"));
    const char *env[] = {envcc, env0, NULL};
    const char *extra[] = {"--max-ops", "3", NULL};
    char *err = NULL;
    int rc = run_model(model, "many", env, extra, NULL, &err);
    if (rc) fail_msg("run: %d %s", rc, err);
    free(err);
    long long n = generated_clusters("many");
    assert_true(n >= 4);
    assert_int_equal(build_failures("many"), 0);
    char *l = hu_slurp(log);
    int lines = 0;
    for (char *c = l; *c; c++) lines += *c == '\n';
    free(l);
    /* one batch for the probe (fa_kernel_probe_prepare, while planning: a fresh cache) and one for
     * the applier (its kernels carry the plan's hash and ids): never one process per cluster */
    if (lines != 2) fail_msg("%lld generated clusters took %d compiler processes (want 2)", n, lines);
}

static void test_apply_tries_clusters_by_predicted_saving_up_to_cap_and_budget(void **state)
{
    (void)state;
    char model[4300], env0[4400], db[4300];
    snprintf(model, sizeof model, "%s", tmp("cap-chain.onnx"));
    hu_export_chain(model, 16, 64, 24, NULL, 0);
    snprintf(env0, sizeof env0, "XDG_CACHE_HOME=%s", tmp("xdg-cap"));
    const char *env[] = {env0, NULL};
    const char *extra[] = {"--max-ops", "3", "--max-clusters", "2", NULL};
    char *err = NULL;
    int rc = run_model(model, "cap", env, extra, NULL, &err);
    if (rc) fail_msg("run --max-clusters 2: %d %s", rc, err);
    free(err);
    snprintf(db, sizeof db, "%s.db", tmp("cap"));
    long long tried = hu_query_int(db, "SELECT count(*) FROM clusters WHERE status NOT IN ('not-tried','refused','proposed')");
    long long not_tried = hu_query_int(db, "SELECT count(*) FROM clusters WHERE status = 'not-tried' AND reason LIKE "
                                           "'not tried: the apply stage tries at most 2 clusters%'");
    assert_int_equal(tried, 2);
    assert_true(not_tried >= 2);
    /* the tried ones are those with the highest predicted saving */
    long long worse = hu_query_int(db, "SELECT count(*) FROM clusters t, clusters n WHERE t.status NOT IN "
                                       "('not-tried','refused','proposed') AND n.status = 'not-tried' AND "
                                       "n.est_saving_us > t.est_saving_us");
    assert_int_equal(worse, 0);
    /* a budget spent before the first cluster: every cluster reported, none tried */
    const char *extra2[] = {"--max-ops", "3", "--apply-budget", "0.000001", NULL};
    err = NULL;
    rc = run_model(model, "budget", env, extra2, NULL, &err);
    if (rc) fail_msg("run --apply-budget: %d %s", rc, err);
    free(err);
    snprintf(db, sizeof db, "%s.db", tmp("budget"));
    assert_int_equal(hu_query_int(db, "SELECT count(*) FROM clusters WHERE status NOT IN ('not-tried','refused')"), 0);
    assert_true(hu_query_int(db, "SELECT count(*) FROM clusters WHERE reason LIKE '%time budget%'") >= 4);
    /* options out of range */
    const char *bad[][3] = {{"--max-clusters", "0", NULL}, {"--apply-budget", "inf", NULL}, {"--apply-budget", "-1", NULL}};
    for (int k = 0; k < 3; k++) {
        err = NULL;
        rc = run_model(model, "badopt", env, bad[k], NULL, &err);
        if (rc != 2) fail_msg("%s %s: exit %d: %s", bad[k][0], bad[k][1], rc, err);
        free(err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_tensor_names_never_reach_generated_source),
        cmocka_unit_test(test_compiler_output_never_quotes_included_content),
        cmocka_unit_test(test_cache_folder_private_refused_when_shared),
        cmocka_unit_test(test_cache_entries_checked_against_their_hash_before_dlopen),
        cmocka_unit_test(test_tmpdir_elsewhere_works_and_no_compile_folder_is_left),
        cmocka_unit_test(test_cache_size_cap_evicts_least_recently_used),
        cmocka_unit_test(test_apply_one_compiler_process_for_many_clusters),
        cmocka_unit_test(test_apply_tries_clusters_by_predicted_saving_up_to_cap_and_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
