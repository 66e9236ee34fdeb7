/* cli/cmd_trace — `fuse-advise trace [--db PATH] [--tag TAG] [--no-nvtx] -- CMD ARGS`: run any
 * CUDA program with the CUPTI injection tracer, store its activity as a run of kind 'trace' and
 * print a summary. docs/cuda.md. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#ifndef FA_HAVE_CUDA
int fa_cmd_trace(fa_ctx *ctx, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return fa_cli_fail(ctx, fa_ctx_error(ctx, FA_ERR_UNSUPPORTED,
                                         "trace: this build has no CUDA toolkit (CUPTI); rebuild with it"));
}
#else

#include <cupti.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/cupti/cupti.h"
#include "runtime/cuda/cuda.h"
#include "store/store.h"

extern char **environ;

static const char *k_help =
    "usage: fuse-advise trace [--db PATH] [--tag TAG] [--no-nvtx] -- CMD ARGS...\n"
    "  Runs CMD with the CUPTI injection tracer (CUDA_INJECTION64_PATH) and NVTX routed to CUPTI\n"
    "  (NVTX_INJECTION64_PATH), stores kernels, copies, API calls, NVTX ranges and CUPTI overhead\n"
    "  as a run of kind 'trace', and prints a summary. CMD's exit status is reported; what was\n"
    "  collected is stored even when CMD fails. FA_CUPTI_INJECTION overrides the tracer library.\n";

static char *join_argv(int argc, char **argv)
{
    fa_buf b;
    fa_buf_init(&b);
    for (int i = 0; i < argc; i++) {
        if (i) fa_buf_puts(&b, " ");
        fa_buf_puts(&b, argv[i]);
    }
    return b.data ? b.data : strdup("");
}

/* The tracer library: $FA_CUPTI_INJECTION, else libfuse-advise-cupti.so beside this executable. */
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
    snprintf(out, cap, "%s/libfuse-advise-cupti.so", exe);
    if (access(out, R_OK) != 0)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED,
                            "trace: the CUPTI tracer library %s is missing (%s); build target fa_cupti_inject "
                            "or set FA_CUPTI_INJECTION", out, strerror(errno));
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

typedef struct ktot {
    const char *name;
    uint64_t ns, n;
} ktot;

static int cmp_ktot(const void *a, const void *b)
{
    const ktot *x = a, *y = b;
    return x->ns < y->ns ? 1 : (x->ns > y->ns ? -1 : 0);
}

static void print_summary(const fa_trace *t, const fa_cupti_stats *st, int64_t run_id, const char *db)
{
    uint64_t cnt[FA_ACT_KIND_COUNT] = {0}, dur[FA_ACT_KIND_COUNT] = {0};
    uint64_t t0 = UINT64_MAX, t1 = 0;
    ktot *k = calloc(t->n_acts + 1, sizeof *k);
    size_t nk = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        cnt[a->kind]++;
        uint64_t d = a->end_ns > a->start_ns ? a->end_ns - a->start_ns : 0;
        dur[a->kind] += d;
        if (a->kind == FA_ACT_KERNEL && k) {
            if (a->start_ns < t0) t0 = a->start_ns;
            if (a->end_ns > t1) t1 = a->end_ns;
            size_t j = 0;
            while (j < nk && k[j].name != a->name) j++; /* names are interned: pointer equality */
            if (j == nk) k[nk++] = (ktot){a->name, 0, 0};
            k[j].ns += d;
            k[j].n++;
        }
    }
    printf("trace run %lld stored in %s\n", (long long)run_id, db);
    printf("  records:");
    for (int i = 0; i < FA_ACT_KIND_COUNT; i++)
        if (cnt[i]) printf(" %s %llu", fa_activity_kind_name((fa_activity_kind)i), (unsigned long long)cnt[i]);
    printf("\n");
    if (cnt[FA_ACT_KERNEL])
        printf("  kernels: %.3f ms busy over a %.3f ms span\n", dur[FA_ACT_KERNEL] / 1e6, (t1 - t0) / 1e6);
    if (cnt[FA_ACT_OVERHEAD]) printf("  CUPTI overhead: %.3f ms\n", dur[FA_ACT_OVERHEAD] / 1e6);
    if (st->dropped || st->truncated || st->unknown_kind || st->orphans || st->markers_unpaired)
        printf("  dropped %llu, truncated buffers %llu, unknown kinds %llu, orphans %llu, unpaired NVTX %llu\n",
               (unsigned long long)st->dropped, (unsigned long long)st->truncated,
               (unsigned long long)st->unknown_kind, (unsigned long long)st->orphans,
               (unsigned long long)st->markers_unpaired);
    if (k && nk) {
        qsort(k, nk, sizeof *k, cmp_ktot);
        printf("  top kernels by total time:\n");
        for (size_t i = 0; i < nk && i < 10; i++)
            printf("    %10.3f ms  %6llu x  %.100s\n", k[i].ns / 1e6, (unsigned long long)k[i].n, k[i].name);
    }
    free(k);
}

int fa_cmd_trace(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = FA_STORE_DEFAULT_PATH, *tag = NULL, *v;
    bool no_nvtx = false;
    int i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(k_help, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--no-nvtx")) no_nvtx = true;
        else if ((v = fa_cli_opt_value(argc, argv, &i, "--db"))) {
            if (!*v) return fa_cli_usage("trace", "--db needs a path");
            db = v;
        } else if ((v = fa_cli_opt_value(argc, argv, &i, "--tag"))) tag = v;
        else return fa_cli_usage("trace", "unexpected argument '%s' (the command goes after --)", argv[i]);
    }
    if (i >= argc) return fa_cli_usage("trace", "missing command: fuse-advise trace [--db PATH] -- CMD ARGS");
    char **cmd = argv + i;
    int cmd_argc = argc - i;

    char inj[PATH_MAX], cupti[PATH_MAX];
    fa_status s = find_injection(ctx, inj, sizeof inj);
    if (s) return fa_cli_fail(ctx, s);
    char dir[] = "/tmp/fa-trace.XXXXXX";
    if (!mkdtemp(dir)) return fa_cli_fail(ctx, fa_ctx_error(ctx, FA_ERR_IO, "trace: mkdtemp: %s", strerror(errno)));
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
        return fa_cli_fail(ctx, fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"));
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

    fflush(stdout);
    fflush(stderr);
    pid_t pid;
    int rc = posix_spawnp(&pid, cmd[0], NULL, NULL, cmd, env);
    free(e_inj);
    free(e_out);
    free(e_nvtx);
    free(env);
    if (rc != 0) {
        rm_dir(dir);
        return fa_cli_fail(ctx, fa_ctx_error(ctx, FA_ERR_INPUT, "trace: cannot start '%s': %s", cmd[0], strerror(rc)));
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
    char *cmdline = join_argv(cmd_argc, cmd);
    fa_store *store = NULL;
    int64_t run_id = -1;
    if (!s) s = fa_store_open(ctx, db, &store);
    if (!s) {
        fa_run_info info = {0};
        info.kind = "trace";
        info.model_path = cmdline;
        info.target = "cuda";
        info.device_name = t->device_name;
        info.command_line = cmdline;
        info.tag = tag;
        s = fa_store_begin(ctx, store);
        if (!s) s = fa_store_run_begin(ctx, store, &info, &run_id);
        if (!s) s = fa_store_put_trace(ctx, store, run_id, t);
        if (!s) s = fa_store_run_finish(ctx, store, run_id, true, NULL);
        if (!s) s = fa_store_commit(ctx, store);
        if (s) fa_store_rollback(store);
    }
    int ret = 0;
    if (s) ret = fa_cli_fail(ctx, s);
    else {
        print_summary(t, &total, run_id, db);
        if (!n_files)
            printf("  no CUDA activity: the command never initialized CUDA, or no NVIDIA driver is present\n");
        if (notes.len) printf("  tracer notes:\n    %s\n", notes.data);
        if (cmd_status != 0) {
            fprintf(stderr, "fuse-advise: traced command exited with status %d (what it ran is stored)\n", cmd_status);
            ret = 1;
        }
    }
    fa_store_close(store);
    fa_buf_free(&notes);
    free(cmdline);
    fa_trace_free(t);
    return ret;
}
#endif
