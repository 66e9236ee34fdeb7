/* collector/cupti/program — trace any CUDA program: run it with the CUPTI injection tracer
 * (CUDA_INJECTION64_PATH) and NVTX routed to CUPTI, then read and merge the trace file every
 * process of it wrote. The library half of `fuse-advise trace`. docs/cuda.md. */
#include "collector/cupti/cupti.h"
#include "runtime/cuda/cuda.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Where an install puts the tracer library relative to the binary's folder: bin/ ->
 * lib/<multiarch>/fuse-advise (CMakeLists.txt, FA_INSTALL_PKGLIBDIR; GNUInstallDirs). */
#ifndef FA_PKGLIBDIR_REL
#define FA_PKGLIBDIR_REL "../lib/fuse-advise"
#endif

/* The tracer library: $FA_CUPTI_INJECTION, else libfuse-advise-cupti.so beside this executable
 * (a build tree), else in the install's private library folder FA_PKGLIBDIR_REL from the
 * executable's folder (an installed binary, found through /proc/self/exe, never the source
 * tree or the current folder). */
static fa_status find_injection(fa_ctx *ctx, char *out, size_t cap)
{
    const char *env = getenv("FA_CUPTI_INJECTION");
    if (env && *env) {
        if (access(env, R_OK) != 0)
            return fa_ctx_error(ctx, FA_ERR_IO, "FA_CUPTI_INJECTION=%s: %s", env, strerror(errno));
        snprintf(out, cap, "%s", env);
        return FA_OK;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return fa_ctx_error(ctx, FA_ERR_IO, "trace: cannot find this executable: %s", strerror(errno));
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    char beside[PATH_MAX], installed[PATH_MAX];
    snprintf(beside, sizeof beside, "%s/libfuse-advise-cupti.so", exe);
    snprintf(installed, sizeof installed, "%s/" FA_PKGLIBDIR_REL "/libfuse-advise-cupti.so", exe);
    const char *found = access(beside, R_OK) == 0 ? beside : access(installed, R_OK) == 0 ? installed : NULL;
    if (!found)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED,
                            "trace: the CUPTI tracer library is missing (looked for %s and %s); build target "
                            "fa_cupti_inject, install the package, or set FA_CUPTI_INJECTION", beside, installed);
    snprintf(out, cap, "%s", found);
    return FA_OK;
}

/* libcupti's own path: NVTX_INJECTION64_PATH points at it so NVTX calls become MARKER records. */
static bool find_libcupti(char *out, size_t cap)
{
    const char *lib = fa_cuda_lib_path(FA_CUDA_LIB_CUPTI);
    if (!lib) return false;
    snprintf(out, cap, "%s", lib);
    return true;
}

static fa_status merge(fa_ctx *ctx, fa_trace *dst, const fa_trace *src)
{
    for (size_t i = 0; i < src->n_acts; i++) {
        fa_activity a = src->acts[i];
        a.name = fa_trace_intern(dst, a.name);
        a.op_type = fa_trace_intern(dst, a.op_type);
        a.node_name = fa_trace_intern(dst, a.node_name);
        if (!fa_trace_add(dst, &a)) return fa_ctx_error(ctx, FA_ERR_NOMEM, "trace: out of memory merging records");
    }
    return FA_OK;
}

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

fa_status fa_cupti_trace_program(fa_ctx *ctx, int cmd_argc, char **cmd, bool no_nvtx, fa_trace **out,
                                 fa_cupti_stats *stats, char **notes_out, int *n_files_out, int *cmd_status_out)
{
    (void)cmd_argc;
    char inj[PATH_MAX], cupti[PATH_MAX];
    fa_status s = find_injection(ctx, inj, sizeof inj);
    if (s) return s;
    char dir[] = "/tmp/fa-trace.XXXXXX";
    if (!mkdtemp(dir)) return fa_ctx_error(ctx, FA_ERR_IO, "trace: mkdtemp: %s", strerror(errno));
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s/trace", dir);

    /* environment: ours first, then the parent's minus the variables we set */
    size_t n_env = 0;
    while (environ[n_env]) n_env++;
    char **env = calloc(n_env + 6, sizeof *env);
    char *e_inj = NULL, *e_out = NULL, *e_nvtx = NULL;
    if (!env || asprintf(&e_inj, "CUDA_INJECTION64_PATH=%s", inj) < 0 ||
        asprintf(&e_out, "%s=%s", FA_CUPTI_OUT_ENV, prefix) < 0) {
        free(env);
        rm_dir(dir);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    size_t k = 0;
    env[k++] = e_inj;
    env[k++] = e_out;
    if (!no_nvtx && find_libcupti(cupti, sizeof cupti) && asprintf(&e_nvtx, "NVTX_INJECTION64_PATH=%s", cupti) >= 0)
        env[k++] = e_nvtx;
    static char no_nvtx_env[] = "FA_CUPTI_NO_NVTX=1";
    if (no_nvtx) env[k++] = no_nvtx_env;
    for (size_t j = 0; j < n_env; j++) {
        if (!strncmp(environ[j], "CUDA_INJECTION64_PATH=", 22) || !strncmp(environ[j], "NVTX_INJECTION64_PATH=", 22) ||
            !strncmp(environ[j], FA_CUPTI_OUT_ENV "=", strlen(FA_CUPTI_OUT_ENV) + 1))
            continue;
        env[k++] = environ[j];
    }
    env[k] = NULL;

    pid_t pid;
    int rc = posix_spawnp(&pid, cmd[0], NULL, NULL, cmd, env);
    free(e_inj);
    free(e_out);
    free(e_nvtx);
    free(env);
    if (rc != 0) {
        rm_dir(dir);
        return fa_ctx_error(ctx, FA_ERR_INPUT, "trace: cannot start '%s': %s", cmd[0], strerror(rc));
    }
    int wst = 0;
    while (waitpid(pid, &wst, 0) < 0 && errno == EINTR) {}
    int cmd_status = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + (WIFSIGNALED(wst) ? WTERMSIG(wst) : 0);

    /* every process of CMD that initialized CUDA wrote trace.<pid> */
    fa_trace *t = fa_trace_create("cupti");
    fa_cupti_stats total = {0};
    fa_buf notes;
    fa_buf_init(&notes);
    int n_files = 0;
    s = t ? FA_OK : fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    DIR *d = s ? NULL : opendir(dir);
    if (d) {
        struct dirent *e;
        while (!s && (e = readdir(d))) {
            if (strncmp(e->d_name, "trace.", 6) != 0) continue;
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            fa_trace *one = NULL;
            fa_cupti_stats st = {0};
            char *nt = NULL;
            s = fa_cupti_trace_read(ctx, p, &one, &st, &nt);
            if (!s) s = merge(ctx, t, one);
            if (!s && one->device_name && !t->device_name) t->device_name = fa_trace_intern(t, one->device_name);
            if (nt) {
                if (notes.len) fa_buf_puts(&notes, "\n");
                fa_buf_printf(&notes, "[pid %s] %s", e->d_name + 6, nt);
            }
            total.buffers += st.buffers;
            total.bytes += st.bytes;
            total.records += st.records;
            total.skipped += st.skipped;
            total.unknown_kind += st.unknown_kind;
            total.truncated += st.truncated;
            total.dropped += st.dropped;
            free(nt);
            fa_trace_free(one);
            n_files++;
        }
        closedir(d);
    }
    rm_dir(dir);
    if (!s && n_files > 1) s = fa_cupti_trace_finish(ctx, t, &total);
    else if (!s && n_files == 1) {
        total.orphans = t->n_orphans;
        total.clock_inversions = t->n_clock_inversions;
    }
    if (s) {
        fa_trace_free(t);
        fa_buf_free(&notes);
        return s;
    }
    *out = t;
    if (stats) *stats = total;
    if (notes_out && notes.len) {
        *notes_out = notes.data; /* handed over */
    } else {
        if (notes_out) *notes_out = NULL;
        fa_buf_free(&notes);
    }
    *n_files_out = n_files;
    *cmd_status_out = cmd_status;
    return FA_OK;
}
