/* runtime/cpu/compile — the cpu target's fused kernels: generated C to loaded functions, many
 * kernels in one translation unit and one compiler process (started with an argument vector,
 * never a shell), cached in a private folder by the SHA-256 of sources + flags, each entry
 * checked against the SHA-256 of its binary recorded when it was built before it is loaded.
 * docs/codegen.md "Kernel cache". */
#include "runtime/runtime-impl.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

extern char **environ;

/* -fno-trapping-math -fno-math-errno: the op kernels' flags (CMakeLists.txt FA_KERNEL_MATH_FLAGS,
 * docs/runtime.md "Vectorised elementwise loops"). Without them gcc keeps a select whose arm holds
 * a multiply (a masked, scaled softmax: `mask ? x * scale : fill`) as a branch and calls scalar
 * expf (errno), so the generated row kernel ran scalar: GPT-2's masked softmax took 966 us fused
 * against 319 us for oneDNN's unfused softmax (bench/README.md, "Visits and the trace's span");
 * with them the same source calls the 16-lane vector expf. Neither changes a result: no kernel
 * reads errno or enables FP traps. tests/unit/test_generated_vectorised.c checks it. */
/* -DFA_SLEEF_GNUABI: tells the sources that SLEEF's GNU-ABI library is linked (k_libs), so a
 * generated kernel may send tanhf's vector lanes to its u35 variant (codegen/codegen.c k_tanh_u35). */
static const char *const k_cflags[] = {"-O3", "-march=native", "-fopenmp", "-fno-trapping-math", "-fno-math-errno",
                                       "-DFA_SLEEF_GNUABI", "-fPIC", "-shared", "-std=gnu11", NULL};
/* Libraries the kernels link, in order. SLEEF's GNU-ABI library (libsleef-dev) exports the same
 * vector-function names as glibc's libmvec (_ZGVdN8v_expf, ...) and comes first, so the loops the
 * compiler vectorises call SLEEF: libmvec sends lanes outside its fast range (a softmax row with
 * Hugging Face's -1e4 .. -3.4e38 mask values) to scalar expf, 10x slower per row (bench/README.md);
 * SLEEF has no such path. The unfused kernels use the same SLEEF functions (graph/vmath.c). */
static const char *const k_libs[] = {"-lsleefgnuabi", "-lm", NULL};

struct fa_kernel_cache {
    char *dir;          /* the private folder */
    bool temporary;     /* made under $TMPDIR for this process only: removed by free */
    uint64_t max_bytes; /* shared objects kept, least recently used evicted beyond it */
};

/* ---- the private folder ---- */

static bool mkdir_p(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return false;
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0700) != 0 && errno != EEXIST) return false;
            *p = '/';
        }
    return mkdir(buf, 0700) == 0 || errno == EEXIST;
}

/* The folder must be ours and writable by nobody else: anyone who can write there can make us
 * load their code. */
static fa_status check_private(fa_ctx *ctx, const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) != 0) return fa_ctx_error(ctx, FA_ERR_IO, "%s: kernel cache folder: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return fa_ctx_error(ctx, FA_ERR_IO, "%s: kernel cache folder is not a folder", dir);
    if (sb.st_uid != geteuid())
        return fa_ctx_error(ctx, FA_ERR_IO,
                            "%s: kernel cache folder is owned by uid %u, not by you (uid %u): refusing to load shared "
                            "objects from it (remove it, or set XDG_CACHE_HOME to a folder of your own)",
                            dir, (unsigned)sb.st_uid, (unsigned)geteuid());
    if (sb.st_mode & (S_IWGRP | S_IWOTH))
        return fa_ctx_error(ctx, FA_ERR_IO,
                            "%s: kernel cache folder is writable by %s (mode %04o): refusing to load shared objects "
                            "from it (chmod 700 it, or remove it)",
                            dir, (sb.st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(sb.st_mode & 07777));
    return FA_OK;
}

/* Work folders "tmp.<pid>.XXXXXX" of processes that no longer exist. */
static void sweep_work_dirs(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "tmp.", 4)) continue;
        char *end;
        long pid = strtol(e->d_name + 4, &end, 10);
        if (*end != '.' || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        fa_rm_tree(p);
    }
    closedir(d);
}

fa_status fa_kernel_cache_open(fa_ctx *ctx, const char *dir, uint64_t max_bytes, fa_kernel_cache **out)
{
    fa_kernel_cache *kc = calloc(1, sizeof *kc);
    if (!kc) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    kc->max_bytes = max_bytes ? max_bytes : FA_KERNEL_CACHE_MAX_BYTES_DEFAULT;
    char buf[4096];
    if (!dir) {
        const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (x && *x) snprintf(buf, sizeof buf, "%s/fuse-advise/kernels", x);
        else if (home && *home) snprintf(buf, sizeof buf, "%s/.cache/fuse-advise/kernels", home);
        else {
            const char *t = getenv("TMPDIR");
            snprintf(buf, sizeof buf, "%s/fuse-advise-kernels-XXXXXX", t && *t ? t : "/tmp");
            if (!mkdtemp(buf)) { /* mkdtemp creates it 0700 */
                free(kc);
                return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot create a private kernel folder: %s", buf, strerror(errno));
            }
            kc->temporary = true;
        }
        dir = buf;
    }
    kc->dir = strdup(dir);
    fa_status s = kc->dir ? FA_OK : fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    if (!s && !kc->temporary && !mkdir_p(dir))
        s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot create the kernel cache folder: %s", dir, strerror(errno));
    if (!s) s = check_private(ctx, dir);
    if (s) {
        kc->temporary = false; /* never remove a folder we refused */
        fa_kernel_cache_free(kc);
        return s;
    }
    sweep_work_dirs(kc->dir);
    *out = kc;
    return FA_OK;
}

const char *fa_kernel_cache_dir(const fa_kernel_cache *kc) { return kc->dir; }

void fa_kernel_cache_free(fa_kernel_cache *kc)
{
    if (!kc) return;
    if (kc->temporary) fa_rm_tree(kc->dir);
    free(kc->dir);
    free(kc);
}

/* ---- entries: KEY.so + KEY.so.sha256 (hex SHA-256 of the .so, written when it was built) ---- */

/* SHA-256 of what fd holds (from its start). */
static bool sha256_fd(int fd, char hex[65])
{
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    if (!m || EVP_DigestInit_ex(m, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(m);
        return false;
    }
    unsigned char buf[65536];
    ssize_t r;
    off_t off = 0;
    while ((r = pread(fd, buf, sizeof buf, off)) > 0) {
        EVP_DigestUpdate(m, buf, (size_t)r);
        off += r;
    }
    unsigned char md[32];
    unsigned len = 0;
    bool ok = r == 0 && EVP_DigestFinal_ex(m, md, &len) == 1 && len == 32;
    EVP_MD_CTX_free(m);
    for (unsigned i = 0; ok && i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return ok;
}

/* A file of the entry: regular, not a link, ours, writable by nobody else, not empty. */
static int open_entry_file(const char *path, struct stat *sb)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode) || sb->st_uid != geteuid() || (sb->st_mode & (S_IWGRP | S_IWOTH)) ||
        sb->st_size == 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void remove_entry(const fa_kernel_cache *kc, const char *key)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s.so", kc->dir, key);
    unlink(p);
    snprintf(p, sizeof p, "%s/%s.so.sha256", kc->dir, key);
    unlink(p);
}

/* Load entry `key` if its binary matches the recorded hash (checked before dlopen runs any of
 * its code). NULL when absent, tampered, truncated or not loadable (why in why[]). */
static void *load_verified(const fa_kernel_cache *kc, const char *key, char *why, size_t why_cap)
{
    char so[4400], rec[4400];
    snprintf(so, sizeof so, "%s/%s.so", kc->dir, key);
    snprintf(rec, sizeof rec, "%s/%s.so.sha256", kc->dir, key);
    struct stat sb, rb;
    why[0] = 0;
    int fd = open_entry_file(so, &sb);
    if (fd < 0) {
        snprintf(why, why_cap, "%s", errno == ENOENT ? "absent" : "not a private, non-empty regular file");
        return NULL;
    }
    char want[80] = {0}, have[65] = {0};
    int rfd = open_entry_file(rec, &rb);
    ssize_t got = rfd >= 0 ? pread(rfd, want, 64, 0) : -1;
    if (rfd >= 0) close(rfd);
    if (got != 64) {
        close(fd);
        snprintf(why, why_cap, "no recorded hash");
        return NULL;
    }
    if (!sha256_fd(fd, have) || memcmp(want, have, 64) != 0) {
        close(fd);
        snprintf(why, why_cap, "the binary does not match the hash recorded when it was built");
        return NULL;
    }
    /* The folder is private (check_private), so nobody but us can swap the file between the
     * check and the load; the inode is compared once more after loading all the same. */
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    struct stat after;
    if (!h) {
        const char *e = dlerror();
        snprintf(why, why_cap, "dlopen: %s", e ? e : "?");
    } else if (stat(so, &after) != 0 || after.st_ino != sb.st_ino || after.st_dev != sb.st_dev) {
        dlclose(h);
        h = NULL;
        snprintf(why, why_cap, "the file changed while it was loaded");
    }
    close(fd);
    return h;
}

/* Mark an entry used now (its .so mtime is the least-recently-used clock). */
static void touch_entry(const fa_kernel_cache *kc, const char *key)
{
    char so[4400];
    snprintf(so, sizeof so, "%s/%s.so", kc->dir, key);
    utimensat(AT_FDCWD, so, NULL, AT_SYMLINK_NOFOLLOW);
}

typedef struct entry_info {
    char name[128];
    off_t size;
    struct timespec used;
} entry_info;

static int cmp_used(const void *a, const void *b)
{
    const entry_info *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

/* Least recently used entries go until the shared objects fit max_bytes; `keep` stays. */
static void evict(const fa_kernel_cache *kc, const char *keep)
{
    DIR *d = opendir(kc->dir);
    if (!d) return;
    entry_info *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || l >= sizeof v->name || strcmp(e->d_name + l - 3, ".so")) continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", kc->dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            entry_info *nv = realloc(v, cap * sizeof *v);
            if (!nv) break;
            v = nv;
        }
        snprintf(v[n].name, sizeof v[n].name, "%.*s", (int)(l - 3), e->d_name);
        v[n].size = sb.st_size;
        v[n].used = sb.st_mtim;
        total += (uint64_t)sb.st_size;
        n++;
    }
    closedir(d);
    qsort(v, n, sizeof *v, cmp_used);
    for (size_t i = 0; i < n && total > kc->max_bytes; i++) {
        if (!strcmp(v[i].name, keep)) continue;
        remove_entry(kc, v[i].name);
        total -= (uint64_t)v[i].size;
    }
    free(v);
}

/* ---- compiling ---- */

void fa_compiled_free(fa_compiled *c)
{
    if (!c) return;
    if (c->handle) dlclose(c->handle);
    free(c);
}

/* fn_name of each source from one loaded handle; false when any is missing. */
static bool bind_all(void *h, const char *so_desc, const char *key, int n, const fa_kernel_source *srcs,
                     const int *idx, bool cached, fa_compiled **out)
{
    for (int k = 0; k < n; k++)
        if (!dlsym(h, srcs[idx[k]].fn_name)) return false;
    for (int k = 0; k < n; k++) {
        fa_compiled *c = calloc(1, sizeof *c);
        /* one reference to the shared object per kernel: dlopen counts them */
        void *h2 = c ? dlopen(so_desc, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD) : NULL;
        if (!c || !h2) {
            free(c);
            for (int j = 0; j < k; j++) {
                fa_compiled_free(out[idx[j]]);
                out[idx[j]] = NULL;
            }
            return false;
        }
        c->handle = h2;
        c->fn = (fa_fused_fn)dlsym(h2, srcs[idx[k]].fn_name);
        c->cached = cached;
        snprintf(c->hash, sizeof c->hash, "%s", key);
        out[idx[k]] = c;
    }
    return true;
}

static bool load_and_bind(const fa_kernel_cache *kc, const char *key, int n, const fa_kernel_source *srcs, const int *idx,
                          bool cached, fa_compiled **out, char *why, size_t why_cap)
{
    void *h = load_verified(kc, key, why, why_cap);
    if (!h) return false;
    char desc[4400];
    snprintf(desc, sizeof desc, "%s/%s.so", kc->dir, key);
    bool ok = bind_all(h, desc, key, n, srcs, idx, cached, out);
    if (!ok && !why[0]) snprintf(why, why_cap, "a kernel symbol is missing");
    dlclose(h);
    return ok;
}

static void batch_key(int n, const fa_kernel_source *srcs, const int *idx, char key[65])
{
    fa_buf b;
    fa_buf_init(&b);
    for (int i = 0; k_cflags[i]; i++) fa_buf_printf(&b, "%s\n", k_cflags[i]);
    for (int i = 0; k_libs[i]; i++) fa_buf_printf(&b, "%s\n", k_libs[i]);
    fa_buf_printf(&b, "%d kernels\n", n);
    for (int k = 0; k < n; k++) {
        fa_buf_printf(&b, "%s\n%zu\n", srcs[idx[k]].fn_name, srcs[idx[k]].len);
        fa_buf_append(&b, srcs[idx[k]].src, srcs[idx[k]].len);
    }
    fa_sha256_hex(b.data ? b.data : "", b.len, key);
    fa_buf_free(&b);
}

/* Run the compiler on work/kernels.c -> work/out.so; exit status (or -1 when it could not start,
 * message in ctx); the log in work/log. */
static int run_cc(fa_ctx *ctx, const char *work)
{
    char src[4400], so[4400], log[4400];
    snprintf(src, sizeof src, "%s/kernels.c", work);
    snprintf(so, sizeof so, "%s/out.so", work);
    snprintf(log, sizeof log, "%s/log", work);
    const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
    const char *argv[32];
    int a = 0;
    argv[a++] = cc;
    for (int i = 0; k_cflags[i]; i++) argv[a++] = k_cflags[i];
    argv[a++] = "-o";
    argv[a++] = so;
    argv[a++] = src;
    for (int i = 0; k_libs[i]; i++) argv[a++] = k_libs[i];
    argv[a] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, cc, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fa_ctx_error(ctx, FA_ERR_RUNTIME, "cannot start the C compiler '%s': %s", cc, strerror(rc));
        return -1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* "cluster-<k>.c": the name each source carries in the translation unit (#line), so the
 * compiler's diagnostics say which kernel they are about. */
static void unit_name(char *buf, size_t cap, int k) { snprintf(buf, cap, "kernel-%d.c", k); }

/* Compile sources idx[0..n) into one shared object and load it. Kernels that fail get errs[];
 * *attributed: every failure was traced to its kernels (the rest may be retried together). */
static fa_status build(fa_ctx *ctx, const fa_kernel_cache *kc, int n, const fa_kernel_source *srcs, const int *idx,
                       fa_compiled **out, char **errs, int *n_failed)
{
    *n_failed = 0;
    char key[65], why[512];
    batch_key(n, srcs, idx, key);
    if (load_and_bind(kc, key, n, srcs, idx, true, out, why, sizeof why)) {
        touch_entry(kc, key);
        return FA_OK;
    }
    if (strcmp(why, "absent")) remove_entry(kc, key); /* zero-byte, corrupt, tampered: rebuilt */
    char work[4400];
    snprintf(work, sizeof work, "%s/tmp.%ld.XXXXXX", kc->dir, (long)getpid());
    if (!mkdtemp(work)) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot create a compile folder: %s", kc->dir, strerror(errno));
    fa_buf tu;
    fa_buf_init(&tu);
    for (int k = 0; k < n; k++) {
        char un[64];
        unit_name(un, sizeof un, k);
        fa_buf_printf(&tu, "#line 1 \"%s\"\n", un);
        fa_buf_append(&tu, srcs[idx[k]].src, srcs[idx[k]].len);
        fa_buf_puts(&tu, "\n");
    }
    char path[4400];
    snprintf(path, sizeof path, "%s/kernels.c", work);
    fa_status s = tu.oom ? fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory") : fa_write_file_atomic(ctx, path, tu.data, tu.len);
    fa_buf_free(&tu);
    int rc = s ? -1 : run_cc(ctx, work);
    if (rc < 0) {
        fa_rm_tree(work);
        return s ? s : fa_ctx_status(ctx);
    }
    if (rc != 0) {
        /* the log, sanitised: only diagnostics located in our kernels, capped (never what an
         * included file holds) */
        uint8_t *log = NULL;
        size_t ll = 0;
        fa_ctx *lc = fa_ctx_create();
        snprintf(path, sizeof path, "%s/log", work);
        fa_read_file(lc, path, &log, &ll);
        fa_ctx_free(lc);
        bool any = false;
        for (int k = 0; k < n; k++) {
            char un[64];
            unit_name(un, sizeof un, k);
            fa_buf m;
            fa_buf_init(&m);
            int lines = fa_compiler_diagnostics(&m, log ? (const char *)log : "", ll, un, 1200);
            if (lines > 0 || n == 1) {
                fa_buf e;
                fa_buf_init(&e);
                fa_buf_printf(&e, "the C compiler failed (exit %d) on the generated kernel %s: %s", rc, srcs[idx[k]].fn_name,
                              lines > 0 ? m.data : "no diagnostic about the generated source (the compiler's output "
                                                   "about other files is not shown)");
                errs[idx[k]] = e.data;
                (*n_failed)++;
                any = true;
            }
            fa_buf_free(&m);
        }
        free(log);
        fa_rm_tree(work);
        if (!any) *n_failed = -1; /* not attributed: the caller compiles one by one */
        return FA_OK;
    }
    /* record the binary's hash next to it, then move both into place (same folder: the work
     * folder lives inside the cache, so TMPDIR's filesystem never matters) */
    char so[4400], rec[4400], dst[4400], dstrec[4400], hex[65];
    snprintf(so, sizeof so, "%s/out.so", work);
    snprintf(rec, sizeof rec, "%s/out.so.sha256", work);
    snprintf(dst, sizeof dst, "%s/%s.so", kc->dir, key);
    snprintf(dstrec, sizeof dstrec, "%s/%s.so.sha256", kc->dir, key);
    int fd = open(so, O_RDONLY | O_CLOEXEC);
    bool hashed = fd >= 0 && sha256_fd(fd, hex);
    if (fd >= 0) close(fd);
    if (!hashed) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot read the compiled kernels", so);
    if (!s) s = fa_write_file_atomic(ctx, rec, hex, 64);
    if (!s && rename(so, dst) != 0) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot move the compiled kernels into place: %s", dst, strerror(errno));
    if (!s && rename(rec, dstrec) != 0) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot record the kernels' hash: %s", dstrec, strerror(errno));
    fa_rm_tree(work);
    if (s) return s;
    evict(kc, key);
    if (!load_and_bind(kc, key, n, srcs, idx, false, out, why, sizeof why)) {
        remove_entry(kc, key);
        for (int k = 0; k < n; k++) {
            fa_buf e;
            fa_buf_init(&e);
            fa_buf_printf(&e, "the compiled kernel %s cannot be loaded: %s", srcs[idx[k]].fn_name, why);
            errs[idx[k]] = e.data;
        }
        *n_failed = n;
    }
    return FA_OK;
}

fa_status fa_compile_kernels(fa_ctx *ctx, fa_kernel_cache *kc, int n, const fa_kernel_source *srcs, fa_compiled **out,
                             char **errs)
{
    for (int i = 0; i < n; i++) {
        out[i] = NULL;
        errs[i] = NULL;
    }
    if (n <= 0) return FA_OK;
    int *idx = malloc(sizeof(int) * (size_t)n);
    if (!idx) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) idx[i] = i;
    /* One compiler process for all; when some kernels fail (their diagnostics name them), the
     * others go again together - at most three rounds; whatever is left then, or a failure the
     * diagnostics do not attribute, is compiled one kernel per process. */
    fa_status s = FA_OK;
    for (int round = 0; round < 3 && !s; round++) {
        int m = 0, failed = 0;
        for (int i = 0; i < n; i++)
            if (!out[i] && !errs[i]) idx[m++] = i;
        if (m == 0) break;
        s = build(ctx, kc, m, srcs, idx, out, errs, &failed);
        if (s || failed <= 0 || failed == m) break;
    }
    for (int i = 0; i < n && !s; i++) {
        if (out[i] || errs[i]) continue;
        int one = i, f1 = 0;
        s = build(ctx, kc, 1, srcs, &one, out, errs, &f1);
    }
    free(idx);
    return s;
}
