/* tests/unit/test_harden_fs — issue 32's shared-folder kinds: the kernel cache is reachable only
 * through folders nobody else can write (every component from "/": a parent writable by others,
 * or a symbolic link planted in a folder others can write, is refused), every step after the
 * check is relative to the held folder (a cache folder swapped while the compiler runs changes
 * nothing: the planted source is never compiled or loaded), relative and over-long
 * XDG_CACHE_HOME/HOME are ignored, CC is split into words as a shell would; files fuse-advise
 * names itself are never written through a planted symbolic link (exec's output_N.pb); a FIFO
 * (model, exec input, trace, a database's -journal) is refused by name instead of waited on. */
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "harden_util.h"

#include "runtime/fused.h"
#include "store/store.h"

static const char *tmp(const char *name) { return hu_tmp(name); }

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *k_src = "void fs_k(const void *const *in, void *const *out, int t) { (void)in; (void)out; (void)t; }\n";

/* Open the cache at dir (NULL: from the environment); FA_OK or the status, message in *msg. */
static fa_status cache_open(const char *dir, fa_kernel_cache **kc, char *msg, size_t cap)
{
    fa_ctx *ctx = fa_ctx_create();
    *kc = NULL;
    fa_status s = fa_kernel_cache_open(ctx, dir, 0, kc);
    snprintf(msg, cap, "%s", s ? fa_ctx_errmsg(ctx) : "");
    fa_ctx_free(ctx);
    return s;
}

/* ---- the kernel cache: every folder on the way ---- */

static void expect_refused(const char *dir, const char *part1, const char *part2)
{
    fa_kernel_cache *kc = NULL;
    char msg[2048];
    fa_status s = cache_open(dir, &kc, msg, sizeof msg);
    if (s != FA_ERR_IO || !strstr(msg, part1) || (part2 && !strstr(msg, part2)))
        fail_msg("%s: expected a refusal naming '%s' and '%s', got status %d: %s", dir, part1, part2 ? part2 : "", (int)s,
                 msg);
    fa_kernel_cache_free(kc);
}

static void expect_opened(const char *dir)
{
    fa_kernel_cache *kc = NULL;
    char msg[2048];
    if (cache_open(dir, &kc, msg, sizeof msg)) fail_msg("%s: refused: %s", dir, msg);
    fa_kernel_cache_free(kc);
}

static void test_cache_refused_when_a_parent_is_writable_by_others_or_foreign(void **state)
{
    (void)state;
    char base[4300], mid[4400], dir[4500];
    snprintf(base, sizeof base, "%s", tmp("parents"));
    snprintf(mid, sizeof mid, "%s/fuse-advise", base);
    snprintf(dir, sizeof dir, "%s/kernels", mid);
    assert_int_equal(mkdir(base, 0755), 0);
    expect_opened(dir); /* creates mid and dir 0700 */
    struct stat sb;
    assert_int_equal(stat(dir, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    /* the grandparent, then the parent, writable by others: whoever can write there can swap
     * the cache folder for their own between the check and the load */
    assert_int_equal(chmod(base, 0777), 0);
    expect_refused(dir, base, "writable by others (mode 0777)");
    assert_int_equal(chmod(base, 0775), 0);
    expect_refused(dir, base, "writable by its group");
    assert_int_equal(chmod(base, 0755), 0);
    assert_int_equal(chmod(mid, 0757), 0);
    expect_refused(dir, mid, "writable by others");
    assert_int_equal(chmod(mid, 0700), 0);
    /* sticky and writable by all, like /tmp: others cannot rename or remove what is ours */
    assert_int_equal(chmod(base, 01777), 0);
    expect_opened(dir);
    assert_int_equal(chmod(base, 0755), 0);
    /* a parent owned by another user (neither us nor root) */
    if (geteuid() == 0) {
        assert_int_equal(chown(base, 65534, 65534), 0);
        expect_refused(dir, base, "owned by uid 65534");
        assert_int_equal(chown(base, 0, 0), 0);
    } else {
        print_message("not root: the foreign-owner case is not run\n");
    }
    expect_opened(dir);
}

static void test_cache_link_followed_only_where_nobody_else_can_write(void **state)
{
    (void)state;
    char priv[4300], real[4400], link[4400], shared[4300], slink[4400], dir[4500];
    snprintf(priv, sizeof priv, "%s", tmp("link-private"));
    snprintf(real, sizeof real, "%s/real", priv);
    snprintf(link, sizeof link, "%s/link", priv);
    assert_int_equal(mkdir(priv, 0700), 0);
    assert_int_equal(mkdir(real, 0700), 0);
    assert_int_equal(symlink(real, link), 0);
    /* a link in a folder only we can write (a ~/.cache pointing to another disk): followed */
    snprintf(dir, sizeof dir, "%s/kernels", link);
    expect_opened(dir);
    struct stat sb;
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    char k2[4500];
    snprintf(k2, sizeof k2, "%s/kernels", real);
    assert_int_equal(stat(k2, &sb), 0);
    /* the same link planted in a folder others can write, sticky like /tmp or not: refused,
     * though its target is ours */
    snprintf(shared, sizeof shared, "%s", tmp("link-shared"));
    snprintf(slink, sizeof slink, "%s/cache", shared);
    assert_int_equal(mkdir(shared, 0755), 0);
    assert_int_equal(chmod(shared, 01777), 0);
    assert_int_equal(symlink(real, slink), 0);
    snprintf(dir, sizeof dir, "%s/kernels", slink);
    expect_refused(dir, slink, "lies in a folder others can write");
    assert_int_equal(chmod(shared, 0777), 0);
    expect_refused(dir, shared, "writable by others");
    /* the cache folder itself a link (in a private folder) to a folder writable by others */
    char open_dir[4400], l2[4400];
    snprintf(open_dir, sizeof open_dir, "%s/open", priv);
    snprintf(l2, sizeof l2, "%s/to-open", priv);
    assert_int_equal(mkdir(open_dir, 0700), 0);
    assert_int_equal(chmod(open_dir, 0777), 0);
    assert_int_equal(symlink(open_dir, l2), 0);
    expect_refused(l2, open_dir, "writable by others");
}

/* The attacker's move, made by the compiler wrapper while the compiler runs (so the race is
 * deterministic): the cache folder is renamed away and a folder of the attacker's takes its
 * name, holding a kernels.c of theirs under the compile folder's name. */
static void write_swapping_cc(const char *path, const char *cache, const char *planted_c)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "#!/bin/sh\n"
            "K='%s'\n"
            "if [ ! -e \"$K.moved\" ]; then\n"
            "  src=; for a in \"$@\"; do case \"$a\" in *kernels.c) src=$a;; esac; done\n"
            "  case \"$src\" in /*) w=$(basename \"$(dirname \"$src\")\");; *) w=$(basename \"$(pwd -P)\");; esac\n"
            "  mv \"$K\" \"$K.moved\" && mkdir -p \"$K/$w\" && cp '%s' \"$K/$w/kernels.c\"\n"
            "fi\n"
            "exec cc \"$@\"\n",
            cache, planted_c);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

static void test_cache_swapped_while_compiling_never_builds_or_loads_the_plant(void **state)
{
    (void)state;
    char cache[4300], cc[4300], planted[4300], marker[4300];
    snprintf(cache, sizeof cache, "%s", tmp("swap-cache"));
    snprintf(cc, sizeof cc, "%s", tmp("swapping-cc.sh"));
    snprintf(planted, sizeof planted, "%s", tmp("planted-kernels.c"));
    snprintf(marker, sizeof marker, "%s", tmp("PLANTED-SOURCE-RAN"));
    FILE *f = fopen(planted, "w");
    assert_non_null(f);
    fprintf(f,
            "#include <fcntl.h>\n"
            "__attribute__((constructor)) static void planted(void) { creat(\"%s\", 0600); }\n"
            "void fs_k(const void *const *in, void *const *out, int t) { (void)in; (void)out; (void)t; }\n",
            marker);
    fclose(f);
    write_swapping_cc(cc, cache, planted);
    fa_ctx *ctx = fa_ctx_create();
    fa_kernel_cache *kc = NULL;
    assert_int_equal(fa_kernel_cache_open(ctx, cache, 0, &kc), FA_OK);
    const char *old_cc = getenv("CC");
    char *saved = old_cc ? strdup(old_cc) : NULL;
    setenv("CC", cc, 1);
    fa_kernel_source ks = {k_src, strlen(k_src), "fs_k"};
    fa_compiled *c = NULL;
    char *err = NULL;
    fa_status s = fa_compile_kernels(ctx, kc, 1, &ks, &c, &err);
    if (saved) setenv("CC", saved, 1);
    else unsetenv("CC");
    free(saved);
    char moved[4400];
    snprintf(moved, sizeof moved, "%s.moved", cache);
    assert_true(hu_exists(moved)); /* the swap did happen */
    assert_false(hu_exists(marker)); /* the plant was neither compiled into what was loaded nor loaded */
    if (s || !c) fail_msg("compile after the swap: %s %s", fa_ctx_errmsg(ctx), err ? err : "");
    /* the entry went into the folder that was checked (now under its new name), nothing into
     * the attacker's folder but their own file */
    char *so = hu_find_name(moved, ".so.sha256");
    if (!so) fail_msg("no entry in the checked folder %s", moved);
    free(so);
    char *theirs = hu_find_name(cache, ".so");
    if (theirs) fail_msg("written into the swapped-in folder: %s", theirs);
    fa_compiled_free(c);
    free(err);
    fa_kernel_cache_free(kc);
    fa_ctx_free(ctx);
    assert_false(hu_exists(marker));
}

/* Loading by /proc/self/fd/N: a batch loaded while an earlier one, loaded under the same
 * descriptor number since closed, is still held gets its own library, not the earlier one. */
static void test_cache_batches_loaded_through_reused_descriptor_numbers_stay_apart(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_kernel_cache *kc = NULL;
    assert_int_equal(fa_kernel_cache_open(ctx, tmp("reuse-cache"), 0, &kc), FA_OK);
    /* more batches held at once than any small retry bound */
    enum { N = 12 };
    char srcs[N][256], names[N][16];
    fa_compiled *c[N] = {NULL};
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "fs_%d", i);
        snprintf(srcs[i], sizeof srcs[i],
                 "int fs_v(void) { return %d; }\nvoid fs_%d(const void *const *in, void *const *out, int t) "
                 "{ (void)in; (void)out; (void)t; }\n",
                 i + 1, i);
    }
    for (int pass = 0; pass < 2; pass++) /* compiled, then from the cache */
        for (int i = 0; i < N; i++) {
            fa_kernel_source ks = {srcs[i], strlen(srcs[i]), names[i]};
            char *err = NULL;
            fa_compiled_free(c[i]);
            c[i] = NULL;
            assert_int_equal(fa_compile_kernels(ctx, kc, 1, &ks, &c[i], &err), FA_OK);
            if (!c[i]) fail_msg("%s: %s", names[i], err ? err : "?");
            assert_int_equal(c[i]->cached, pass == 1);
            int (*v)(void) = (int (*)(void))dlsym(c[i]->handle, "fs_v");
            assert_non_null(v);
            assert_int_equal(v(), i + 1);
        }
    for (int i = 0; i < N; i++) fa_compiled_free(c[i]);
    /* one batch loaded again while its first load is still held (the probe's and the applier's):
     * the object already loaded is this batch, and is used */
    fa_kernel_source ks = {srcs[0], strlen(srcs[0]), names[0]};
    fa_compiled *c1 = NULL, *c2 = NULL;
    char *err = NULL;
    assert_int_equal(fa_compile_kernels(ctx, kc, 1, &ks, &c1, &err), FA_OK);
    assert_non_null(c1);
    assert_int_equal(fa_compile_kernels(ctx, kc, 1, &ks, &c2, &err), FA_OK);
    if (!c2) fail_msg("the batch loaded a second time: %s", err ? err : "?");
    assert_non_null(dlsym(c2->handle, "fs_v"));
    fa_compiled_free(c1);
    fa_compiled_free(c2);
    free(err);
    fa_kernel_cache_free(kc);
    fa_ctx_free(ctx);
}

/* The compiler runs with TMPDIR its own compile folder (gcc's temporaries: the assembly, the
 * object file collect2 links) and without the variables that point it at files elsewhere: another
 * user who can write $TMPDIR swapped the object file between the assembler and the linker and had
 * their constructor loaded (the attack pass's tmpdir-race). The CC wrapper records what it got. */
static void test_compiler_environment_keeps_temporaries_in_the_compile_folder(void **state)
{
    (void)state;
    char cc[4300], seen[4300], shared[4300];
    snprintf(cc, sizeof cc, "%s", tmp("env-cc.sh"));
    snprintf(seen, sizeof seen, "%s", tmp("env-seen.txt"));
    snprintf(shared, sizeof shared, "%s", tmp("shared-tmpdir"));
    assert_int_equal(mkdir(shared, 0777), 0);
    FILE *f = fopen(cc, "w");
    assert_non_null(f);
    fprintf(f,
            "#!/bin/sh\n"
            "{ echo \"TMPDIR=${TMPDIR-unset}\"; echo \"CPATH=${CPATH-unset}\"; echo \"LIBRARY_PATH=${LIBRARY_PATH-unset}\";"
            " echo \"GCC_EXEC_PREFIX=${GCC_EXEC_PREFIX-unset}\"; echo \"DEPENDENCIES_OUTPUT=${DEPENDENCIES_OUTPUT-unset}\";"
            " echo \"LD_PRELOAD=${LD_PRELOAD-unset}\"; echo \"KEEP=${FA_TEST_KEEP-unset}\"; } > '%s'\n"
            "exec cc \"$@\"\n",
            seen);
    fclose(f);
    assert_int_equal(chmod(cc, 0755), 0);
    const char *names[] = {"CC", "TMPDIR", "CPATH", "LIBRARY_PATH", "GCC_EXEC_PREFIX", "DEPENDENCIES_OUTPUT", "FA_TEST_KEEP"};
    char *saved[7];
    for (int i = 0; i < 7; i++) saved[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
    setenv("CC", cc, 1);
    setenv("TMPDIR", shared, 1);
    setenv("CPATH", tmp("their-headers"), 1);
    setenv("LIBRARY_PATH", tmp("their-libs"), 1);
    setenv("GCC_EXEC_PREFIX", tmp("their-gcc/"), 1);
    setenv("DEPENDENCIES_OUTPUT", tmp("their-deps"), 1);
    setenv("FA_TEST_KEEP", "kept", 1);
    fa_ctx *ctx = fa_ctx_create();
    fa_kernel_cache *kc = NULL;
    assert_int_equal(fa_kernel_cache_open(ctx, tmp("env-cache"), 0, &kc), FA_OK);
    fa_kernel_source ks = {k_src, strlen(k_src), "fs_k"};
    fa_compiled *c = NULL;
    char *err = NULL;
    fa_status st = fa_compile_kernels(ctx, kc, 1, &ks, &c, &err);
    for (int i = 0; i < 7; i++) {
        if (saved[i]) setenv(names[i], saved[i], 1);
        else unsetenv(names[i]);
        free(saved[i]);
    }
    if (st || !c) fail_msg("compile: %s %s", fa_ctx_errmsg(ctx), err ? err : "");
    char *t = hu_slurp(seen);
    assert_non_null(t);
    assert_non_null(strstr(t, "TMPDIR=.\n"));
    assert_non_null(strstr(t, "CPATH=unset\n"));
    assert_non_null(strstr(t, "LIBRARY_PATH=unset\n"));
    assert_non_null(strstr(t, "GCC_EXEC_PREFIX=unset\n"));
    assert_non_null(strstr(t, "DEPENDENCIES_OUTPUT=unset\n"));
    assert_non_null(strstr(t, "KEEP=kept\n")); /* the rest of the environment is the user's */
    free(t);
    char *litter = hu_find_name(shared, "cc");
    if (litter) fail_msg("a compiler temporary in the shared TMPDIR: %s", litter);
    fa_compiled_free(c);
    free(err);
    fa_kernel_cache_free(kc);
    fa_ctx_free(ctx);
}

/* A compiled object that is not the batch (no fa_kernels_KEY symbol: a compiler that built
 * something else) is loaded once and refused: it was loaded again through every free descriptor
 * number, its constructors running each time (19,990 times in the attack pass). */
static void test_foreign_object_loaded_once_and_refused(void **state)
{
    (void)state;
    char cc[4300], count[4300], other[4300];
    snprintf(cc, sizeof cc, "%s", tmp("foreign-cc.sh"));
    snprintf(count, sizeof count, "%s", tmp("FOREIGN-RUNS"));
    snprintf(other, sizeof other, "%s", tmp("foreign.c"));
    FILE *f = fopen(other, "w");
    assert_non_null(f);
    fprintf(f,
            "#include <fcntl.h>\n#include <unistd.h>\n"
            "__attribute__((constructor)) static void ran(void) { int fd = open(\"%s\", O_WRONLY | O_CREAT | O_APPEND, 0600);"
            " if (fd >= 0) { write(fd, \"x\", 1); close(fd); } }\n"
            "void fs_k(const void *const *in, void *const *out, int t) { (void)in; (void)out; (void)t; }\n",
            count);
    fclose(f);
    f = fopen(cc, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\nexec cc -shared -fPIC -o out.so '%s'\n", other);
    fclose(f);
    assert_int_equal(chmod(cc, 0755), 0);
    const char *old_cc = getenv("CC");
    char *saved = old_cc ? strdup(old_cc) : NULL;
    setenv("CC", cc, 1);
    fa_ctx *ctx = fa_ctx_create();
    fa_kernel_cache *kc = NULL;
    assert_int_equal(fa_kernel_cache_open(ctx, tmp("foreign-cache"), 0, &kc), FA_OK);
    fa_kernel_source ks = {k_src, strlen(k_src), "fs_k"};
    fa_compiled *c = NULL;
    char *err = NULL;
    fa_status st = fa_compile_kernels(ctx, kc, 1, &ks, &c, &err);
    if (saved) setenv("CC", saved, 1);
    else unsetenv("CC");
    free(saved);
    assert_true(st != FA_OK || c == NULL); /* not this batch: refused */
    char *t = hu_slurp(count);
    assert_non_null(t);
    if (strlen(t) != 1) fail_msg("the foreign object's constructor ran %zu times", strlen(t));
    free(t);
    fa_compiled_free(c);
    free(err);
    fa_kernel_cache_free(kc);
    fa_ctx_free(ctx);
}

/* ---- the cache's location from the environment ---- */

typedef struct saved_env {
    char *v[3];
} saved_env;
static const char *const k_vars[3] = {"XDG_CACHE_HOME", "HOME", "TMPDIR"};

static saved_env env_save(void)
{
    saved_env e;
    for (int i = 0; i < 3; i++) e.v[i] = getenv(k_vars[i]) ? strdup(getenv(k_vars[i])) : NULL;
    return e;
}

static void env_restore(saved_env *e)
{
    for (int i = 0; i < 3; i++) {
        if (e->v[i]) setenv(k_vars[i], e->v[i], 1);
        else unsetenv(k_vars[i]);
        free(e->v[i]);
        e->v[i] = NULL;
    }
}

/* Open the cache from the environment with the current folder at cwd; its path (static). */
static const char *cache_from_env(const char *cwd)
{
    static char got[8192];
    char old[4096];
    assert_non_null(getcwd(old, sizeof old));
    assert_int_equal(chdir(cwd), 0);
    fa_kernel_cache *kc = NULL;
    char msg[2048];
    fa_status s = cache_open(NULL, &kc, msg, sizeof msg);
    assert_int_equal(chdir(old), 0);
    if (s) fail_msg("cache from the environment refused: %s", msg);
    snprintf(got, sizeof got, "%s", fa_kernel_cache_dir(kc));
    fa_kernel_cache_free(kc);
    return got;
}

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static saved_env g_saved;

/* The environment back as it was, also when the test failed half-way. */
static int restore_env(void **state)
{
    (void)state;
    env_restore(&g_saved);
    return 0;
}

static void test_cache_ignores_relative_and_overlong_xdg_cache_home_and_home(void **state)
{
    (void)state;
    g_saved = env_save();
    char cwd[4300], home[4300], td[4300], want[4500];
    snprintf(cwd, sizeof cwd, "%s", tmp("env-cwd"));
    snprintf(home, sizeof home, "%s", tmp("env-home"));
    snprintf(td, sizeof td, "%s", tmp("env-tmpdir"));
    assert_int_equal(mkdir(cwd, 0700), 0);
    assert_int_equal(mkdir(home, 0700), 0);
    assert_int_equal(mkdir(td, 0700), 0);
    snprintf(want, sizeof want, "%s/.cache/fuse-advise/kernels", home);
    /* a relative XDG_CACHE_HOME is invalid (XDG Base Directory spec): HOME is used */
    setenv("XDG_CACHE_HOME", "rel-cache", 1);
    setenv("HOME", home, 1);
    assert_string_equal(cache_from_env(cwd), want);
    /* an over-long one (its cache path would not fit PATH_MAX): ignored, never cut */
    char longp[4400], comp[201];
    memset(comp, 'd', 200);
    comp[200] = 0;
    int n = snprintf(longp, sizeof longp, "%s", tmp("long"));
    while (n < 4080) n += snprintf(longp + n, sizeof longp - (size_t)n, "/%s", comp);
    longp[4080] = 0; /* + "/fuse-advise/kernels" is over PATH_MAX (4096) */
    setenv("XDG_CACHE_HOME", longp, 1);
    assert_string_equal(cache_from_env(cwd), want);
    assert_false(hu_exists(tmp("long")));
    /* HOME relative too: a folder of this process under TMPDIR, removed at the end */
    setenv("XDG_CACHE_HOME", "rel-cache", 1);
    setenv("HOME", "rel-home", 1);
    setenv("TMPDIR", td, 1);
    const char *got = cache_from_env(cwd);
    char prefix[4400];
    snprintf(prefix, sizeof prefix, "%s/fuse-advise-kernels-", td);
    if (strncmp(got, prefix, strlen(prefix))) fail_msg("temporary cache at %s, expected under %s", got, td);
    assert_int_equal(entries(td), 0); /* removed when freed */
    /* TMPDIR relative as well: /tmp */
    setenv("TMPDIR", "rel-tmp", 1);
    got = cache_from_env(cwd);
    if (strncmp(got, "/tmp/fuse-advise-kernels-", 25)) fail_msg("temporary cache at %s, expected under /tmp", got);
    /* nothing was ever made under the current folder */
    assert_int_equal(entries(cwd), 0);
}

/* ---- CC split into words ---- */

static void test_cc_split_into_words_as_a_shell_would(void **state)
{
    (void)state;
    /* the splitter: blanks, quotes, backslashes; nothing expanded */
    static const struct {
        const char *line;
        int n;
        const char *w[4];
    } cases[] = {
        {"ccache gcc", 2, {"ccache", "gcc"}},
        {"  gcc\t-m64 \n", 2, {"gcc", "-m64"}},
        {"'/opt/my cc/bin/gcc' -DX=\"a b\"", 2, {"/opt/my cc/bin/gcc", "-DX=a b"}},
        {"a\\ b \"c \\\"d\\\" \\x\" 'e\\f'", 3, {"a b", "c \"d\" \\x", "e\\f"}},
        {"$HOME `id` ~ *", 4, {"$HOME", "`id`", "~", "*"}},
        {"''", 1, {""}},
        {"", 0, {NULL}},
        {"cc\\", 1, {"cc"}},
    };
    fa_ctx *ctx = fa_ctx_create();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char **v = NULL;
        int n = -1;
        assert_int_equal(fa_split_words(ctx, cases[i].line, "CC", &v, &n), FA_OK);
        if (n != cases[i].n) fail_msg("'%s': %d words, expected %d", cases[i].line, n, cases[i].n);
        for (int k = 0; k < n; k++) assert_string_equal(v[k], cases[i].w[k]);
        assert_null(v[n]);
        fa_words_free(v);
    }
    char **v = NULL;
    int n = 0;
    assert_int_equal(fa_split_words(ctx, "gcc 'open", "CC", &v, &n), FA_ERR_USAGE);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "CC"));
    assert_int_equal(fa_split_words(ctx, "gcc \"open", "CC", &v, &n), FA_ERR_USAGE);

    /* the compiler started from such a CC: a program in a folder with a blank, and a flag */
    char bin[4300], prog[4400], log[4300];
    snprintf(bin, sizeof bin, "%s", tmp("my cc"));
    snprintf(prog, sizeof prog, "%s/wrap", bin);
    snprintf(log, sizeof log, "%s", tmp("cc-args.log"));
    assert_int_equal(mkdir(bin, 0755), 0);
    FILE *f = fopen(prog, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\nfor a in \"$@\"; do echo \"[$a]\" >> '%s'; done\nexec cc \"$@\"\n", log);
    fclose(f);
    assert_int_equal(chmod(prog, 0755), 0);
    char ccv[9000];
    snprintf(ccv, sizeof ccv, "'%s' -DFA_FROM_CC=\"1 2\"", prog);
    fa_kernel_cache *kc = NULL;
    assert_int_equal(fa_kernel_cache_open(ctx, tmp("cc-words-cache"), 0, &kc), FA_OK);
    const char *old_cc = getenv("CC");
    char *saved = old_cc ? strdup(old_cc) : NULL;
    setenv("CC", ccv, 1);
    fa_kernel_source ks = {k_src, strlen(k_src), "fs_k"};
    fa_compiled *c = NULL;
    char *err = NULL;
    fa_status s = fa_compile_kernels(ctx, kc, 1, &ks, &c, &err);
    if (saved) setenv("CC", saved, 1);
    else unsetenv("CC");
    free(saved);
    if (s || !c) fail_msg("CC=%s: %s %s", ccv, fa_ctx_errmsg(ctx), err ? err : "");
    char *args = hu_slurp(log);
    if (!strstr(args, "[-DFA_FROM_CC=1 2]")) fail_msg("the compiler got: %s", args);
    free(args);
    fa_compiled_free(c);
    free(err);
    fa_kernel_cache_free(kc);
    fa_ctx_free(ctx);
}

/* ---- files fuse-advise names itself: never through a planted link ---- */

static void test_writer_never_writes_through_a_link_it_did_not_create(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    const char *victim = tmp("victim.txt"), *planted = tmp("plan.json");
    put(victim, "precious\n");
    assert_int_equal(symlink(victim, planted), 0);
    fa_status s = fa_write_file_atomic(ctx, planted, "overwritten", 11);
    assert_int_equal(s, FA_ERR_IO);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), planted));
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "symbolic link"));
    char *t = hu_slurp(victim);
    assert_string_equal(t, "precious\n");
    free(t);
    struct stat sb;
    assert_int_equal(lstat(planted, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    /* the same through the tensor writer exec uses, and to a link whose target is missing */
    fa_value v = {0};
    float x = 1.5f;
    v.dtype = FA_DTYPE_FLOAT;
    v.rank = 1;
    v.dims[0] = 1;
    v.data = &x;
    const char *pb = tmp("output_0.pb"), *gone = tmp("not-there");
    assert_int_equal(symlink(gone, pb), 0);
    assert_int_equal(fa_tensorproto_write(ctx, pb, &v, "y"), FA_ERR_IO);
    assert_false(hu_exists(gone));
    /* a hard link to another file: the name gets a new file, the other name keeps its bytes */
    const char *other = tmp("other.txt"), *hard = tmp("summary.json");
    put(other, "keep\n");
    assert_int_equal(link(other, hard), 0);
    assert_int_equal(fa_write_file_atomic(ctx, hard, "new\n", 4), FA_OK);
    t = hu_slurp(other);
    assert_string_equal(t, "keep\n");
    free(t);
    t = hu_slurp(hard);
    assert_string_equal(t, "new\n");
    free(t);
    /* a file the user names exactly (gate --junit, zoo -o) follows a link of theirs or root's
     * (/dev/stdout), never one another user planted */
    if (geteuid() == 0) {
        const char *junit = tmp("junit.xml");
        assert_int_equal(symlink(victim, junit), 0);
        assert_int_equal(lchown(junit, 65534, 65534), 0);
        assert_int_equal(fa_write_user_file(ctx, junit, "<x/>", 4), FA_ERR_IO);
        assert_non_null(strstr(fa_ctx_errmsg(ctx), "owned by uid 65534"));
        t = hu_slurp(victim);
        assert_string_equal(t, "precious\n");
        free(t);
    } else {
        print_message("not root: the planted-link case of a named file is not run\n");
    }
    char *litter = hu_find_name(fa_test_tmpdir(), ".tmp.");
    if (litter) fail_msg("temp file left: %s", litter);
    fa_ctx_free(ctx);
}

static void test_exec_outputs_refuse_a_planted_link_before_running(void **state)
{
    (void)state;
    char model[4300], outdir[4300], planted[4400], victim[4300];
    snprintf(model, sizeof model, "%s", tmp("exec-chain.onnx"));
    hu_export_chain(model, 4, 8, 2, NULL, 0);
    snprintf(outdir, sizeof outdir, "%s", tmp("exec-out"));
    snprintf(victim, sizeof victim, "%s", tmp("dot-profile"));
    snprintf(planted, sizeof planted, "%s/output_0.pb", outdir);
    assert_int_equal(mkdir(outdir, 0755), 0);
    put(victim, "# a shell start-up file\n");
    assert_int_equal(symlink(victim, planted), 0);
    const char *argv[] = {"exec", model, "--outputs", outdir, NULL};
    char *err = NULL;
    hu_timeout_s = 60;
    int rc = hu_cli_env(argv, NULL, NULL, NULL, &err);
    hu_timeout_s = 0;
    if (rc != 1 || !strstr(err, planted) || !strstr(err, "symbolic link")) fail_msg("exit %d: %s", rc, err);
    free(err);
    char *t = hu_slurp(victim);
    assert_string_equal(t, "# a shell start-up file\n");
    free(t);
    struct stat sb;
    assert_int_equal(lstat(planted, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    /* without the link the same command writes its output */
    assert_int_equal(unlink(planted), 0);
    err = NULL;
    rc = hu_cli_env(argv, NULL, NULL, NULL, &err);
    if (rc != 0) fail_msg("exit %d: %s", rc, err);
    free(err);
    assert_int_equal(lstat(planted, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
}

/* ---- inputs that are not files: refused, never waited on ---- */

/* Runs argv (killed after 20 s: before, each of these waited forever) and expects exit 1 with a
 * message naming `named` and `what`. */
static void expect_cli_refusal(const char *const *argv, const char *named, const char *what)
{
    char *err = NULL;
    hu_timeout_s = 20;
    int rc = hu_cli_env(argv, NULL, NULL, NULL, &err);
    hu_timeout_s = 0;
    if (rc == 128 + SIGALRM) fail_msg("%s %s: still waiting after 20 s", argv[0], argv[1]);
    if (rc != 1 || !strstr(err, named) || !strstr(err, what)) fail_msg("%s %s: exit %d: %s", argv[0], argv[1], rc, err);
    free(err);
}

static void test_fifo_or_socket_as_model_trace_or_input_refused_not_waited_on(void **state)
{
    (void)state;
    const char *fifo = tmp("model.onnx");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *db = tmp("fifo-runs.db");
    const char *inspect[] = {"inspect", fifo, NULL};
    expect_cli_refusal(inspect, fifo, "FIFO");
    const char *exec[] = {"exec", fifo, "--outputs", tmp("fifo-exec-out"), NULL};
    expect_cli_refusal(exec, fifo, "FIFO");
    const char *run[] = {"run", fifo, "--db", db, "--out", tmp("fifo-run-out"), NULL};
    expect_cli_refusal(run, fifo, "FIFO");
    const char *import[] = {"import", fifo, "--db", db, NULL};
    expect_cli_refusal(import, fifo, "FIFO");
    assert_false(hu_exists(db)); /* refused before the database was made */
    /* a socket: refused by what it is */
    const char *sock = tmp("model.sock");
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (fd >= 0 && strlen(sock) < sizeof sa.sun_path) {
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        const char *isock[] = {"inspect", sock, NULL};
        expect_cli_refusal(isock, sock, "socket");
        close(fd);
    }
    /* exec's input_0.pb a FIFO */
    char model[4300], in[4300], pb[4400];
    snprintf(model, sizeof model, "%s", tmp("fifo-input-chain.onnx"));
    hu_export_chain(model, 4, 8, 2, NULL, 0);
    snprintf(in, sizeof in, "%s", tmp("fifo-inputs"));
    snprintf(pb, sizeof pb, "%s/input_0.pb", in);
    assert_int_equal(mkdir(in, 0755), 0);
    assert_int_equal(mkfifo(pb, 0600), 0);
    const char *execin[] = {"exec", model, "--inputs", in, "--outputs", tmp("fifo-input-out"), NULL};
    expect_cli_refusal(execin, pb, "FIFO");
    /* an input_0.pb over protobuf's 2 GiB (a sparse file: no disk used): refused by its size
     * before a byte is read; it was read whole (8 GB resident) and then found invalid */
    assert_int_equal(unlink(pb), 0);
    int big = open(pb, O_CREAT | O_WRONLY, 0600);
    assert_true(big >= 0);
    assert_int_equal(ftruncate(big, (off_t)3 << 30), 0);
    close(big);
    expect_cli_refusal(execin, pb, "over the 2147483647-byte limit of a TensorProto");
    unlink(pb);
}

/* `run` takes the model's digest on a thread of its own (fa_sha256_file_start) while the model
 * loads: the same digest as the file read in line, held and let go between chunks, and the same
 * refusal of a FIFO (never a thread waiting on a writer) or a missing file, named. */
static void test_model_digest_on_its_thread_matches_and_refuses_as_the_file_read_does(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    const char *path = tmp("digest.bin");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < (3 << 16) + 123; i++) fputc((i * 131) & 0xff, f); /* several chunks and a tail */
    fclose(f);
    char want[65], got[65];
    assert_int_equal(fa_sha256_file(ctx, path, want), FA_OK);
    fa_sha256_job *j = fa_sha256_file_start(path);
    assert_non_null(j);
    fa_sha256_file_hold(j, true);
    fa_sha256_file_hold(j, false);
    fa_sha256_file_hold(j, true);
    assert_int_equal(fa_sha256_file_finish(ctx, j, got), FA_OK); /* finishing lets a held job go */
    assert_string_equal(got, want);

    const char *fifo = tmp("digest.fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    j = fa_sha256_file_start(fifo);
    assert_non_null(j);
    assert_int_not_equal(fa_sha256_file_finish(ctx, j, got), FA_OK);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), fifo));
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "FIFO"));
    fa_ctx_clear(ctx);
    j = fa_sha256_file_start(tmp("digest-missing.bin"));
    assert_non_null(j);
    assert_int_equal(fa_sha256_file_finish(NULL, j, got), FA_OK); /* the caller failed already: only joined */
    j = fa_sha256_file_start(tmp("digest-missing.bin"));
    assert_int_not_equal(fa_sha256_file_finish(ctx, j, got), FA_OK);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "digest-missing.bin"));
    fa_ctx_free(ctx);
}

/* An SQLite file next to which SQLite finds NAME-journal: with a FIFO there it waited forever. */
static void make_sqlite(const char *path)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
}

static void test_fifo_beside_a_database_or_export_refused_not_waited_on(void **state)
{
    (void)state;
    char db[4300], journal[4400], exp[4300], ejournal[4400];
    snprintf(db, sizeof db, "%s", tmp("journal-fifo.db"));
    snprintf(journal, sizeof journal, "%s-journal", db);
    make_sqlite(db);
    assert_int_equal(mkfifo(journal, 0600), 0);
    const char *runs[] = {"runs", "--db", db, NULL};
    expect_cli_refusal(runs, journal, "FIFO");
    const char *report[] = {"report", "--db", db, "--out", tmp("journal-fifo-report"), NULL};
    expect_cli_refusal(report, journal, "FIFO");
    struct stat sb;
    assert_int_equal(lstat(journal, &sb), 0); /* left where it was */
    assert_true(S_ISFIFO(sb.st_mode));
    /* an Nsight Systems export (any SQLite file reaches SQLite's open) */
    snprintf(exp, sizeof exp, "%s", tmp("export.sqlite"));
    snprintf(ejournal, sizeof ejournal, "%s-journal", exp);
    make_sqlite(exp);
    assert_int_equal(mkfifo(ejournal, 0600), 0);
    const char *import[] = {"import", exp, "--db", tmp("journal-fifo-import.db"), NULL};
    expect_cli_refusal(import, ejournal, "FIFO");
}

/* report --out keeps what an earlier run left in the folder (kernels/): a marked folder holding a
 * chain of folders far deeper than anything fuse-advise writes (1,500 levels crashed the copy's
 * recursion) is refused naming it, and the folder is left as it was. */
static void test_output_folder_with_a_deep_chain_refused_not_crashed(void **state)
{
    (void)state;
    char out[4300], m[4400];
    snprintf(out, sizeof out, "%s", tmp("deep-out"));
    assert_int_equal(mkdir(out, 0755), 0);
    snprintf(m, sizeof m, "%s/.fuse-advise-out", out);
    put(m, "written by fuse-advise\n");
    int fd = open(out, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    for (int i = 0; i < 200; i++) { /* one level at a time, relative to the last: no long path */
        assert_int_equal(mkdirat(fd, "x", 0755), 0);
        int nfd = openat(fd, "x", O_RDONLY | O_DIRECTORY);
        assert_true(nfd >= 0);
        close(fd);
        fd = nfd;
    }
    close(fd);
    fa_ctx *ctx = fa_ctx_create();
    fa_outdir *o = NULL;
    assert_int_equal(fa_outdir_begin(ctx, out, NULL, true, &o), FA_ERR_INPUT);
    assert_null(o);
    /* refused before any copy: a folder fuse-advise does not write, named (the copy's own depth
     * limit, "nested more than", stays behind it) */
    assert_true(strstr(fa_ctx_errmsg(ctx), "nested more than") || strstr(fa_ctx_errmsg(ctx), "holds 'x'"));
    assert_true(hu_exists(m)); /* left as it was */
    fa_ctx_free(ctx);
}

/* A file put into a marked output folder while the run works went with the old folder at the swap
 * (the sixth attack pass: a note written during the run, exit 0, gone). The commit checks the folder
 * again: refused naming it and where the new outputs are kept, the note stays. And an output
 * folder reached through a link another user planted is refused, as --db's is. */
static void test_output_folder_changed_during_the_run_or_planted_link_refused(void **state)
{
    (void)state;
    char out[4300], m[4400], note[4400];
    snprintf(out, sizeof out, "%s", tmp("race-out"));
    assert_int_equal(mkdir(out, 0755), 0);
    snprintf(m, sizeof m, "%s/.fuse-advise-out", out);
    put(m, "written by fuse-advise\n");
    fa_ctx *ctx = fa_ctx_create();
    fa_outdir *o = NULL;
    static const char *const names[] = {"report.html", NULL};
    assert_int_equal(fa_outdir_begin(ctx, out, names, false, &o), FA_OK);
    char stage[4400];
    snprintf(stage, sizeof stage, "%s", fa_outdir_path(o));
    snprintf(note, sizeof note, "%s/notes.txt", out);
    put(note, "mine\n");
    assert_int_equal(fa_outdir_commit(ctx, o), FA_ERR_INPUT);
    if (!strstr(fa_ctx_errmsg(ctx), "notes.txt") || !strstr(fa_ctx_errmsg(ctx), stage))
        fail_msg("commit after a foreign file appeared: %s", fa_ctx_errmsg(ctx));
    assert_true(hu_exists(note));
    assert_true(hu_exists(stage));
    fa_ctx_free(ctx);
    if (geteuid() != 0) {
        print_message("not root: the planted-link case of an output folder is not run\n");
        return;
    }
    char link_out[4300], target[4300];
    snprintf(link_out, sizeof link_out, "%s", tmp("shared-out"));
    snprintf(target, sizeof target, "%s", tmp("other-run-out"));
    assert_int_equal(mkdir(target, 0755), 0);
    assert_int_equal(symlink(target, link_out), 0);
    assert_int_equal(lchown(link_out, 65534, 65534), 0);
    const char *run[] = {"run", "zoo:mlp-tiny", "--iters", "1", "--db", tmp("planted-out.db"), "--out", link_out, NULL};
    expect_cli_refusal(run, link_out, "owned by uid 65534");
    char slash[4400];
    snprintf(slash, sizeof slash, "%s/", link_out);
    const char *run2[] = {"run", "zoo:mlp-tiny", "--iters", "1", "--db", tmp("planted-out.db"), "--out", slash, NULL};
    expect_cli_refusal(run2, link_out, "owned by uid 65534");
    /* a planted link in the middle of a path: `shared/l/out` with `shared/l -> victim/` (the seventh
     * pass replaced the victim's output folder, overwrote its file and wrote into its database) */
    char mid[4300], victim[4300], vfile[4400], p1[4400], p2[4400], p3[4400];
    snprintf(victim, sizeof victim, "%s", tmp("victim-dir"));
    assert_int_equal(mkdir(victim, 0755), 0);
    snprintf(vfile, sizeof vfile, "%s/notes.txt", victim);
    put(vfile, "mine\n");
    snprintf(mid, sizeof mid, "%s", tmp("shared-l"));
    assert_int_equal(symlink(victim, mid), 0);
    assert_int_equal(lchown(mid, 65534, 65534), 0);
    snprintf(p1, sizeof p1, "%s/notes.txt", mid);
    snprintf(p2, sizeof p2, "%s/runs.db", mid);
    snprintf(p3, sizeof p3, "%s/out", mid);
    const char *zoo[] = {"zoo", "mlp-tiny", "-o", p1, NULL};
    expect_cli_refusal(zoo, mid, "owned by uid 65534");
    const char *db[] = {"runs", "--db", p2, NULL};
    expect_cli_refusal(db, mid, "owned by uid 65534");
    const char *runmid[] = {"run", "zoo:mlp-tiny", "--iters", "1", "--db", tmp("planted-mid.db"), "--out", p3, NULL};
    expect_cli_refusal(runmid, mid, "owned by uid 65534");
    struct stat sb;
    assert_int_equal(stat(vfile, &sb), 0);
    assert_int_equal(sb.st_size, 5);
    assert_true(stat(p2, &sb) != 0 && stat(p3, &sb) != 0);
}

/* A run database reached through a link another user planted in a folder they can write (the
 * attack pass's dblink: root created the database at the link's target) is refused, naming the
 * link's owner; the target is not created. Links of your own or root's are followed. */
static void test_db_through_a_link_another_user_planted_refused(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        print_message("not root: the planted-link case of a run database is not run\n");
        return;
    }
    char link_db[4300], target[4300];
    snprintf(link_db, sizeof link_db, "%s", tmp("shared-runs.db"));
    snprintf(target, sizeof target, "%s", tmp("planted-target.db"));
    assert_int_equal(symlink(target, link_db), 0);
    assert_int_equal(lchown(link_db, 65534, 65534), 0);
    const char *runs[] = {"runs", "--db", link_db, NULL};
    expect_cli_refusal(runs, link_db, "owned by uid 65534");
    const char *run[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "1", "--db", link_db, "--out", tmp("planted-out"), NULL};
    expect_cli_refusal(run, link_db, "owned by uid 65534");
    assert_false(hu_exists(target));
    /* your own link is followed */
    assert_int_equal(lchown(link_db, 0, 0), 0);
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, link_db, &st), FA_OK);
    fa_store_close(st);
    fa_ctx_free(ctx);
    assert_true(hu_exists(target));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_refused_when_a_parent_is_writable_by_others_or_foreign),
        cmocka_unit_test(test_cache_link_followed_only_where_nobody_else_can_write),
        cmocka_unit_test(test_cache_swapped_while_compiling_never_builds_or_loads_the_plant),
        cmocka_unit_test(test_cache_batches_loaded_through_reused_descriptor_numbers_stay_apart),
        cmocka_unit_test(test_compiler_environment_keeps_temporaries_in_the_compile_folder),
        cmocka_unit_test(test_foreign_object_loaded_once_and_refused),
        cmocka_unit_test(test_db_through_a_link_another_user_planted_refused),
        cmocka_unit_test(test_output_folder_with_a_deep_chain_refused_not_crashed),
        cmocka_unit_test(test_output_folder_changed_during_the_run_or_planted_link_refused),
        cmocka_unit_test_teardown(test_cache_ignores_relative_and_overlong_xdg_cache_home_and_home, restore_env),
        cmocka_unit_test(test_cc_split_into_words_as_a_shell_would),
        cmocka_unit_test(test_writer_never_writes_through_a_link_it_did_not_create),
        cmocka_unit_test(test_exec_outputs_refuse_a_planted_link_before_running),
        cmocka_unit_test(test_fifo_or_socket_as_model_trace_or_input_refused_not_waited_on),
        cmocka_unit_test(test_fifo_beside_a_database_or_export_refused_not_waited_on),
        cmocka_unit_test(test_model_digest_on_its_thread_matches_and_refuses_as_the_file_read_does),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
