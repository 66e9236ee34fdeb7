/* runtime/cpu/compile — the cpu target's fused kernels: generated C to loaded functions, many
 * kernels in one translation unit and one compiler process (started with an argument vector,
 * never a shell), cached in a private folder by the SHA-256 of sources + flags, each entry
 * checked against the SHA-256 of its binary recorded when it was built before it is loaded.
 * The folder is checked from "/" once and held open: every later step (the compile folder, the
 * compiler's working folder, renames, the dlopen of a verified descriptor) is relative to it, so
 * a swap of names during a run changes nothing. docs/codegen.md "Kernel cache". */
#include "runtime/runtime-impl.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
    char *dir;          /* the private folder's path, for messages */
    int fd;             /* that folder, checked from "/" and held: every later step is relative to it */
    int tmp_parent_fd;  /* a temporary folder: the folder it was made in ($TMPDIR), else -1 */
    char tmp_name[64];  /* a temporary folder: its name there (removed by free) */
    uint64_t max_bytes; /* shared objects kept, least recently used evicted beyond it */
};

/* ---- the private folder ---- */

/* The value of an environment variable naming a base folder, or NULL when it is unset, relative
 * or so long that BASE + suffix would not fit PATH_MAX. XDG Base Directory Specification 0.8:
 * "All paths set in these environment variables must be absolute. If an implementation
 * encounters a relative path in any of these variables it should consider the path invalid and
 * ignore it." HOME and TMPDIR are held to the same rule: a cache is never made under the current
 * folder, nor at a cut path. */
static const char *env_base(const char *name, const char *suffix)
{
    const char *v = getenv(name);
    if (!v || v[0] != '/') return NULL;
    if (strlen(v) + strlen(suffix) >= PATH_MAX) return NULL;
    return v;
}

/* Work folders "tmp.<pid>.XXXXXXXXXXXX" of processes that no longer exist. */
static void sweep_work_dirs(const fa_kernel_cache *kc)
{
    int fd = openat(kc->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* its own offset, unlike dup */
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "tmp.", 4)) continue;
        char *end;
        long pid = strtol(e->d_name + 4, &end, 10);
        if (*end != '.' || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        fa_rm_tree_at(kc->fd, e->d_name);
    }
    closedir(d);
}

static const char k_hint[] =
    "(the kernel cache must be reachable only through folders owned by you or root that nobody else can write; "
    "set XDG_CACHE_HOME to such a folder of your own)";

fa_status fa_kernel_cache_open(fa_ctx *ctx, const char *dir, uint64_t max_bytes, fa_kernel_cache **out)
{
    fa_kernel_cache *kc = calloc(1, sizeof *kc);
    if (!kc) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    kc->fd = kc->tmp_parent_fd = -1;
    kc->max_bytes = max_bytes ? max_bytes : FA_KERNEL_CACHE_MAX_BYTES_DEFAULT;
    fa_buf path;
    fa_buf_init(&path);
    bool temporary = false;
    const char *tmpdir = NULL;
    if (!dir) {
        const char *x = env_base("XDG_CACHE_HOME", "/fuse-advise/kernels");
        const char *home = env_base("HOME", "/.cache/fuse-advise/kernels");
        if (x) fa_buf_printf(&path, "%s/fuse-advise/kernels", x);
        else if (home) fa_buf_printf(&path, "%s/.cache/fuse-advise/kernels", home);
        else {
            tmpdir = env_base("TMPDIR", "/fuse-advise-kernels-XXXXXXXXXXXX");
            if (!tmpdir) tmpdir = "/tmp";
            fa_buf_puts(&path, tmpdir);
            temporary = true;
        }
    } else if (dir[0] != '/') { /* a relative folder given by the caller: from the current one */
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            free(kc);
            return fa_ctx_error(ctx, FA_ERR_IO, "%s: kernel cache folder: cannot resolve the current folder: %s", dir,
                                strerror(errno));
        }
        fa_buf_printf(&path, "%s/%s", cwd, dir);
    } else {
        fa_buf_puts(&path, dir);
    }
    fa_status s = path.oom ? fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory") : FA_OK;
    if (!s && temporary) {
        /* a folder of this process under $TMPDIR (sticky, like /tmp, is fine there) */
        s = fa_private_dir_open(ctx, path.data, FA_DIR_STICKY_OK, "folder for temporary kernels", k_hint,
                                &kc->tmp_parent_fd);
        if (!s) s = fa_mkdtemp_at(ctx, kc->tmp_parent_fd, path.data, "fuse-advise-kernels-", kc->tmp_name,
                                  sizeof kc->tmp_name, &kc->fd);
        if (!s) {
            fa_buf_printf(&path, "%s%s", strcmp(path.data, "/") ? "/" : "", kc->tmp_name);
            if (path.oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        }
    } else if (!s) {
        s = fa_private_dir_open(ctx, path.data, FA_DIR_CREATE, "kernel cache folder", k_hint, &kc->fd);
    }
    if (s) {
        fa_buf_free(&path);
        fa_kernel_cache_free(kc);
        return s;
    }
    kc->dir = path.data; /* owned now */
    sweep_work_dirs(kc);
    *out = kc;
    return FA_OK;
}

const char *fa_kernel_cache_dir(const fa_kernel_cache *kc) { return kc->dir; }

void fa_kernel_cache_free(fa_kernel_cache *kc)
{
    if (!kc) return;
    if (kc->fd >= 0) close(kc->fd);
    if (kc->tmp_parent_fd >= 0) {
        if (kc->tmp_name[0]) fa_rm_tree_at(kc->tmp_parent_fd, kc->tmp_name);
        close(kc->tmp_parent_fd);
    }
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

/* A file of the entry, opened in the cache folder: regular, not a link, ours, writable by nobody
 * else, not empty. */
static int open_entry_file(int dirfd, const char *name, struct stat *sb)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -1;
    if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode) || sb->st_uid != geteuid() || (sb->st_mode & (S_IWGRP | S_IWOTH)) ||
        sb->st_size == 0) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

static void remove_entry(const fa_kernel_cache *kc, const char *key)
{
    char n[128];
    snprintf(n, sizeof n, "%s.so", key);
    unlinkat(kc->fd, n, 0);
    snprintf(n, sizeof n, "%s.so.sha256", key);
    unlinkat(kc->fd, n, 0);
}

/* The symbol every batch's translation unit defines (build): which library a handle is. */
static void id_symbol(const char *key, char *buf, size_t cap) { snprintf(buf, cap, "fa_kernels_%s", key); }

/* dlopen of what descriptor fd holds, by its name /proc/self/fd/N: the loader maps the inode that
 * was verified, whatever the cache folder's names point to by now. glibc returns an object
 * already loaded under the same name before it opens anything (elf/dl-load.c _dl_map_object),
 * and descriptor numbers are reused once closed, so an earlier batch loaded through
 * /proc/self/fd/N and still held is found under that name: a handle without this batch's
 * id_symbol is such an object, and the descriptor is duplicated to a number not tried yet
 * (the tried ones stay open meanwhile, so each try is a new number; at most one try per
 * library held). Takes fd. *held: the descriptor whose name desc[] is, to close after the last
 * dlopen of desc (-1 on failure, everything closed). */
static void *dlopen_fd(int fd, const char *key, char *desc, size_t desc_cap, int *held, char *why, size_t why_cap)
{
    char sym[96];
    id_symbol(key, sym, sizeof sym);
    int *tried = NULL, n_tried = 0, cap = 0, cur = fd;
    void *h = NULL;
    for (;;) {
        snprintf(desc, desc_cap, "/proc/self/fd/%d", cur);
        /* a name an object is already loaded under gives that object back: this batch itself
         * (loaded before and still held: used as it is), else an earlier batch whose descriptor
         * number was since reused: another number. A fresh load is tried once: an object of that
         * hash without the batch's symbol is not ours, and loading it again would run its
         * constructors again */
        void *old = dlopen(desc, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (old && dlsym(old, sym)) {
            h = old;
            break;
        }
        if (!old) {
            h = dlopen(desc, RTLD_NOW | RTLD_LOCAL);
            if (!h) {
                const char *e = dlerror();
                snprintf(why, why_cap, "dlopen: %s", e ? e : "?");
                break;
            }
            if (dlsym(h, sym)) break;
            dlclose(h);
            h = NULL;
            snprintf(why, why_cap, "the loaded object is not this batch (no %s)", sym);
            break;
        }
        dlclose(old);
        if (n_tried == cap) {
            int *nt = cap < 65536 ? realloc(tried, sizeof *tried * (size_t)(cap = cap ? 2 * cap : 16)) : NULL;
            if (!nt) {
                snprintf(why, why_cap, "every descriptor name tried is an earlier batch's (no %s)", sym);
                break;
            }
            tried = nt;
        }
        int next = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* the lowest free number: none of those held */
        if (next < 0) {
            snprintf(why, why_cap, "the name is an earlier batch's (no %s), and no other descriptor: %s", sym, strerror(errno));
            break;
        }
        tried[n_tried++] = cur;
        cur = next;
    }
    for (int i = 0; i < n_tried; i++) close(tried[i]);
    free(tried);
    if (!h) {
        close(cur);
        cur = -1;
    }
    *held = cur;
    return h;
}

/* Load entry `key` if its binary matches the recorded hash (checked before dlopen runs any of
 * its code, on the descriptor dlopen then maps). NULL when absent, tampered, truncated or not
 * loadable (why in why[]); else the handle, desc[] the name it was loaded by and *held the
 * descriptor behind that name (close it after binding). */
static void *load_verified(const fa_kernel_cache *kc, const char *key, char *desc, size_t desc_cap, int *held, char *why,
                           size_t why_cap)
{
    char so[128], rec[128];
    snprintf(so, sizeof so, "%s.so", key);
    snprintf(rec, sizeof rec, "%s.so.sha256", key);
    struct stat sb, rb;
    why[0] = 0;
    *held = -1;
    int fd = open_entry_file(kc->fd, so, &sb);
    if (fd < 0) {
        snprintf(why, why_cap, "%s", errno == ENOENT ? "absent" : "not a private, non-empty regular file");
        return NULL;
    }
    char want[80] = {0}, have[65] = {0};
    int rfd = open_entry_file(kc->fd, rec, &rb);
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
    return dlopen_fd(fd, key, desc, desc_cap, held, why, why_cap);
}

/* Mark an entry used now (its .so mtime is the least-recently-used clock). */
static void touch_entry(const fa_kernel_cache *kc, const char *key)
{
    char so[128];
    snprintf(so, sizeof so, "%s.so", key);
    utimensat(kc->fd, so, NULL, AT_SYMLINK_NOFOLLOW);
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
    int dfd = openat(kc->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* its own offset, unlike dup */
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0) close(dfd);
        return;
    }
    entry_info *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || l >= sizeof v->name || strcmp(e->d_name + l - 3, ".so")) continue;
        struct stat sb;
        if (fstatat(kc->fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode)) continue;
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
    if (n) qsort(v, n, sizeof *v, cmp_used);
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
    char desc[64];
    int held = -1;
    void *h = load_verified(kc, key, desc, sizeof desc, &held, why, why_cap);
    if (!h) return false;
    bool ok = bind_all(h, desc, key, n, srcs, idx, cached, out);
    if (!ok && !why[0]) snprintf(why, why_cap, "a kernel symbol is missing");
    dlclose(h);
    close(held);
    return ok;
}

static void batch_key(int n, const fa_kernel_source *srcs, const int *idx, char key[65])
{
    fa_buf b;
    fa_buf_init(&b);
    fa_buf_puts(&b, "id symbol fa_kernels_KEY\n"); /* entries define it (build); older ones do not */
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

/* The compiler's log: what it wrote to the descriptor (at most 4 MiB; the diagnostics kept
 * from it are capped far below). */
static void read_log(int fd, uint8_t **log, size_t *len)
{
    *log = NULL;
    *len = 0;
    struct stat sb;
    if (fstat(fd, &sb) != 0) return;
    size_t n = sb.st_size > (4 << 20) ? (size_t)(4 << 20) : (size_t)sb.st_size;
    uint8_t *b = malloc(n + 1);
    if (!b) return;
    ssize_t r = pread(fd, b, n, 0);
    if (r < 0) r = 0;
    b[r] = 0;
    *log = b;
    *len = (size_t)r;
}

/* Run the compiler in the compile folder wfd (its working folder, set with fchdir by the
 * spawn: kernels.c -> out.so are names in that held folder, never paths a swap could
 * redirect); its output goes to the descriptor logfd. $CC is split into words as a shell would
 * (fa_split_words: `ccache gcc` works, nothing expanded, no shell). Exit status, or -1 when it
 * could not start (message in ctx). */
/* The compiler's environment: ours, less what would make it read or write files outside the
 * compile folder, and with TMPDIR the compile folder itself ("." : its working directory,
 * posix_spawn_file_actions_addfchdir_np below). gcc writes its temporaries (the assembly, the
 * object file, collect2's constructor table) under $TMPDIR and then reads them back by name:
 * in a $TMPDIR others can write, another user swapped the object file between the assembler and
 * the linker, and the library we load ran their code (docs/hardening.md "The compiler's
 * temporaries"). GCC reads these variables (GCC manual, "Environment Variables Affecting GCC"):
 * TMPDIR (and TMP/TEMP on some hosts) for temporaries; GCC_EXEC_PREFIX and COMPILER_PATH for its
 * own programs; LIBRARY_PATH, CPATH, C_INCLUDE_PATH, CPLUS_INCLUDE_PATH, OBJC_INCLUDE_PATH for
 * what it links and includes; DEPENDENCIES_OUTPUT and SUNPRO_DEPENDENCIES name a file it writes;
 * GCC_COMPARE_DEBUG runs it twice; LD_PRELOAD and LD_AUDIT load code into each of its processes.
 * The array is malloc'd (its strings are environ's, and one static); NULL when out of memory. */
static char **compiler_environment(void)
{
    static const char *const drop[] = {"TMPDIR",        "TMP",          "TEMP",
                                       "GCC_EXEC_PREFIX", "COMPILER_PATH", "LIBRARY_PATH",
                                       "CPATH",         "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
                                       "OBJC_INCLUDE_PATH", "DEPENDENCIES_OUTPUT", "SUNPRO_DEPENDENCIES",
                                       "GCC_COMPARE_DEBUG", "LD_PRELOAD",   "LD_AUDIT"};
    static char tmpdir[] = "TMPDIR=.";
    size_t n = 0;
    while (environ && environ[n]) n++;
    char **e = malloc((n + 2) * sizeof *e);
    if (!e) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        bool dropped = false;
        for (size_t d = 0; d < sizeof drop / sizeof drop[0] && !dropped; d++)
            dropped = strlen(drop[d]) == nl && !strncmp(drop[d], environ[i], nl);
        if (!dropped) e[k++] = environ[i];
    }
    e[k++] = tmpdir;
    e[k] = NULL;
    return e;
}

static int run_cc(fa_ctx *ctx, int wfd, int logfd)
{
    const char *env = getenv("CC");
    char **cc = NULL;
    int n_cc = 0;
    if (fa_split_words(ctx, env && *env ? env : "cc", "CC", &cc, &n_cc)) return -1;
    if (n_cc == 0) { /* CC of blanks only: the default */
        fa_words_free(cc);
        if (fa_split_words(ctx, "cc", "CC", &cc, &n_cc)) return -1;
    }
    /* a relative program path (CC=./mycc) names a file from our folder, not the compile one */
    char *prog = NULL;
    if (strchr(cc[0], '/') && cc[0][0] != '/') {
        char cwd[PATH_MAX];
        size_t n = 0;
        if (getcwd(cwd, sizeof cwd) && (prog = malloc((n = strlen(cwd) + strlen(cc[0]) + 2))))
            snprintf(prog, n, "%s/%s", cwd, cc[0]);
    }
    size_t n_flags = 0, n_libs = 0;
    while (k_cflags[n_flags]) n_flags++;
    while (k_libs[n_libs]) n_libs++;
    const char **argv = calloc((size_t)n_cc + n_flags + n_libs + 4, sizeof *argv);
    if (!argv) {
        free(prog);
        fa_words_free(cc);
        fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        return -1;
    }
    size_t a = 0;
    for (int i = 0; i < n_cc; i++) argv[a++] = cc[i];
    if (prog) argv[0] = prog;
    for (size_t i = 0; i < n_flags; i++) argv[a++] = k_cflags[i];
    argv[a++] = "-o";
    argv[a++] = "out.so";
    argv[a++] = "kernels.c";
    for (size_t i = 0; i < n_libs; i++) argv[a++] = k_libs[i];
    argv[a] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addfchdir_np(&fa, wfd);
    posix_spawn_file_actions_adddup2(&fa, logfd, 1);
    posix_spawn_file_actions_adddup2(&fa, logfd, 2);
    pid_t pid;
    char **envp = compiler_environment();
    int rc = envp ? posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, envp) : ENOMEM;
    free(envp);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        fa_ctx_error(ctx, FA_ERR_RUNTIME, "cannot start the C compiler '%s' (CC='%s'): %s", argv[0], env && *env ? env : "cc",
                     strerror(rc));
    free(argv);
    free(prog);
    fa_words_free(cc);
    if (rc != 0) return -1;
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
    /* the compile folder: made in the held cache folder, held itself */
    char wname[64], prefix[40];
    snprintf(prefix, sizeof prefix, "tmp.%ld.", (long)getpid());
    int wfd = -1;
    fa_status s = fa_mkdtemp_at(ctx, kc->fd, kc->dir, prefix, wname, sizeof wname, &wfd);
    if (s) return fa_ctx_wrap(ctx, s, "cannot create a compile folder: ");
    char shown[PATH_MAX];
    fa_buf tu;
    fa_buf_init(&tu);
    for (int k = 0; k < n; k++) {
        char un[64];
        unit_name(un, sizeof un, k);
        fa_buf_printf(&tu, "#line 1 \"%s\"\n", un);
        fa_buf_append(&tu, srcs[idx[k]].src, srcs[idx[k]].len);
        fa_buf_puts(&tu, "\n");
    }
    char sym[96];
    id_symbol(key, sym, sizeof sym);
    fa_buf_printf(&tu, "#line 1 \"kernels-id.c\"\n__attribute__((visibility(\"default\"))) const char %s[] = \"%s\";\n", sym,
                  key);
    snprintf(shown, sizeof shown, "%s/%s/kernels.c", kc->dir, wname);
    s = tu.oom ? fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory") : fa_write_file_at(ctx, wfd, "kernels.c", shown, tu.data, tu.len);
    fa_buf_free(&tu);
    int logfd = -1;
    if (!s && (logfd = openat(wfd, "log", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
        s = fa_ctx_error(ctx, FA_ERR_IO, "%s/%s/log: cannot create: %s", kc->dir, wname, strerror(errno));
    int rc = s ? -1 : run_cc(ctx, wfd, logfd);
    if (rc < 0) {
        if (logfd >= 0) close(logfd);
        close(wfd);
        fa_rm_tree_at(kc->fd, wname);
        return s ? s : fa_ctx_status(ctx);
    }
    if (rc != 0) {
        /* the log, sanitised: only diagnostics located in our kernels, capped (never what an
         * included file holds) */
        uint8_t *log = NULL;
        size_t ll = 0;
        read_log(logfd, &log, &ll);
        close(logfd);
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
        close(wfd);
        fa_rm_tree_at(kc->fd, wname);
        if (!any) *n_failed = -1; /* not attributed: the caller compiles one by one */
        return FA_OK;
    }
    close(logfd);
    /* record the binary's hash next to it, then move both into place: renames between the two
     * held folders (the compile folder lives inside the cache, so TMPDIR's filesystem never
     * matters) */
    char dst[128], dstrec[128], hex[65];
    snprintf(dst, sizeof dst, "%s.so", key);
    snprintf(dstrec, sizeof dstrec, "%s.so.sha256", key);
    struct stat sb;
    int fd = openat(wfd, "out.so", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    bool hashed = fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sha256_fd(fd, hex);
    if (fd >= 0) close(fd);
    snprintf(shown, sizeof shown, "%s/%s/out.so", kc->dir, wname);
    if (!hashed) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot read the compiled kernels", shown);
    snprintf(shown, sizeof shown, "%s/%s/out.so.sha256", kc->dir, wname);
    if (!s) s = fa_write_file_at(ctx, wfd, "out.so.sha256", shown, hex, 64);
    if (!s && renameat(wfd, "out.so", kc->fd, dst) != 0)
        s = fa_ctx_error(ctx, FA_ERR_IO, "%s/%s: cannot move the compiled kernels into place: %s", kc->dir, dst, strerror(errno));
    if (!s && renameat(wfd, "out.so.sha256", kc->fd, dstrec) != 0)
        s = fa_ctx_error(ctx, FA_ERR_IO, "%s/%s: cannot record the kernels' hash: %s", kc->dir, dstrec, strerror(errno));
    close(wfd);
    fa_rm_tree_at(kc->fd, wname);
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
