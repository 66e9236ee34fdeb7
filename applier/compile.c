/* applier/compile — generated C to a loaded function: written into a private temporary folder,
 * compiled by the system C compiler started with an argument vector (posix_spawnp, never a
 * shell), cached by the SHA-256 of source + flags, loaded with dlopen. */
#include "applier-impl.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *const k_cflags[] = {"-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-std=gnu11", NULL};

static const char *private_tmp(void)
{
    static char dir[256];
    if (dir[0]) return dir;
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/fuse-advise-XXXXXX", base);
    if (!mkdtemp(dir)) dir[0] = 0; /* mkdtemp creates it 0700: private to this user */
    return dir;
}

static bool mkdir_p(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0700) != 0 && errno != EEXIST) return false;
            *p = '/';
        }
    return mkdir(buf, 0700) == 0 || errno == EEXIST;
}

static const char *cache_dir_default(char *buf, size_t cap)
{
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (x && *x) snprintf(buf, cap, "%s/fuse-advise/kernels", x);
    else if (home && *home) snprintf(buf, cap, "%s/.cache/fuse-advise/kernels", home);
    else return NULL;
    return buf;
}

void fa_compiled_free(fa_compiled *c)
{
    if (!c) return;
    if (c->handle) dlclose(c->handle);
    free(c);
}

fa_status fa_compile_c(fa_ctx *ctx, const char *src, size_t len, const char *fn_name, const char *cache_dir,
                       fa_compiled **out)
{
    /* key = source + compiler flags */
    fa_buf key;
    fa_buf_init(&key);
    fa_buf_append(&key, src, len);
    for (int i = 0; k_cflags[i]; i++) fa_buf_printf(&key, "\n%s", k_cflags[i]);
    char hash[65];
    fa_sha256_hex(key.data, key.len, hash);
    fa_buf_free(&key);

    char cbuf[4096];
    if (!cache_dir) cache_dir = cache_dir_default(cbuf, sizeof cbuf);
    const char *tmp = private_tmp();
    if (!tmp[0]) return fa_ctx_error(ctx, FA_ERR_IO, "cannot create a private temporary folder: %s", strerror(errno));
    if (cache_dir && !mkdir_p(cache_dir)) cache_dir = NULL;
    char so_path[4400];
    snprintf(so_path, sizeof so_path, "%s/%s.so", cache_dir ? cache_dir : tmp, hash);
    fa_compiled *c = calloc(1, sizeof *c);
    if (!c) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    snprintf(c->hash, sizeof c->hash, "%s", hash);
    struct stat sb;
    if (stat(so_path, &sb) == 0 && S_ISREG(sb.st_mode)) {
        c->cached = true;
    } else {
        char src_path[4400], tmp_so[4400], log_path[4400];
        snprintf(src_path, sizeof src_path, "%s/%s.c", tmp, hash);
        snprintf(tmp_so, sizeof tmp_so, "%s/%s.so.tmp", tmp, hash);
        snprintf(log_path, sizeof log_path, "%s/%s.log", tmp, hash);
        fa_status s = fa_write_file_atomic(ctx, src_path, src, len);
        if (s) { free(c); return s; }
        const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
        const char *argv[32];
        int a = 0;
        argv[a++] = cc;
        for (int i = 0; k_cflags[i]; i++) argv[a++] = k_cflags[i];
        argv[a++] = "-o";
        argv[a++] = tmp_so;
        argv[a++] = src_path;
        argv[a++] = "-lm";
        argv[a] = NULL;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        pid_t pid;
        int rc = posix_spawnp(&pid, cc, &fa, NULL, (char *const *)argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) {
            free(c);
            return fa_ctx_error(ctx, FA_ERR_RUNTIME, "cannot start the C compiler '%s': %s", cc, strerror(rc));
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            uint8_t *log = NULL;
            size_t ll = 0;
            fa_ctx *tmpctx = fa_ctx_create();
            fa_read_file(tmpctx, log_path, &log, &ll);
            fa_ctx_free(tmpctx);
            fa_status e = fa_ctx_error(ctx, FA_ERR_RUNTIME, "compiling %s (%s) failed: %.1500s", fn_name, src_path,
                                       log ? (const char *)log : "(no log)");
            free(log);
            free(c);
            return e;
        }
        unlink(log_path);
        if (rename(tmp_so, so_path) != 0) {
            int e = errno;
            free(c);
            return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot move compiled kernel into place: %s", so_path, strerror(e));
        }
    }
    c->handle = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!c->handle) {
        fa_status e = fa_ctx_error(ctx, FA_ERR_RUNTIME, "dlopen %s: %s", so_path, dlerror());
        free(c);
        return e;
    }
    c->fn = (fa_fused_fn)dlsym(c->handle, fn_name);
    if (!c->fn) {
        fa_status e = fa_ctx_error(ctx, FA_ERR_RUNTIME, "%s: no symbol %s", so_path, fn_name);
        fa_compiled_free(c);
        return e;
    }
    snprintf(c->path, sizeof c->path, "%s", so_path);
    *out = c;
    return FA_OK;
}
