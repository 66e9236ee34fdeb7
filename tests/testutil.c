/* tests/testutil — see testutil.h. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char *fa_test_corpus(void)
{
    const char *c = getenv("FA_CORPUS");
    struct stat st;
    if (c && stat(c, &st) == 0 && S_ISDIR(st.st_mode)) return c;
    return NULL;
}

void fa_test_require_corpus(void)
{
    if (!fa_test_corpus()) {
        fprintf(stderr, "SKIP: ../shared/corpus not found (FA_CORPUS=%s)\n",
                getenv("FA_CORPUS") ? getenv("FA_CORPUS") : "(unset)");
        exit(77);
    }
}

static char g_tmp[4096];

static void rm_tmp(void)
{
    if (!g_tmp[0]) return;
    pid_t p = fork();
    if (p == 0) {
        execlp("rm", "rm", "-rf", g_tmp, (char *)NULL);
        _exit(127);
    }
    if (p > 0) waitpid(p, NULL, 0);
}

int fa_test_pipe_file(const char *path)
{
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        int in = open(path, O_RDONLY);
        char buf[65536];
        ssize_t r;
        while (in >= 0 && (r = read(in, buf, sizeof buf)) > 0)
            for (ssize_t o = 0; o < r;) {
                ssize_t w = write(fds[1], buf + o, (size_t)(r - o));
                if (w <= 0) _exit(1);
                o += w;
            }
        _exit(0);
    }
    close(fds[1]);
    return fds[0];
}

void fa_test_pipe_reap(void)
{
    while (waitpid(-1, NULL, 0) > 0) {
    }
}

const char *fa_test_tmpdir(void)
{
    if (g_tmp[0]) return g_tmp;
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(g_tmp, sizeof g_tmp, "%s/fa-test-XXXXXX", base);
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        exit(1);
    }
    atexit(rm_tmp);
    return g_tmp;
}

const char *fa_test_path(const char *a, const char *b)
{
    static char bufs[8][4096];
    static int slot;
    char *p = bufs[slot++ & 7];
    snprintf(p, 4096, "%s/%s", a, b);
    return p;
}

static char *slurp_fd(int fd)
{
    fa_buf b;
    fa_buf_init(&b);
    char tmp[65536];
    ssize_t r;
    while ((r = read(fd, tmp, sizeof tmp)) > 0) fa_buf_append(&b, tmp, (size_t)r);
    if (!b.data) fa_buf_puts(&b, "");
    return b.data;
}

int fa_test_run_cli(const char *const *argv, char **out, char **err)
{
    const char *cli = getenv("FA_CLI");
    if (!cli) {
        fprintf(stderr, "FA_CLI not set\n");
        return -1;
    }
    char ofile[4200], efile[4200];
    snprintf(ofile, sizeof ofile, "%s/cli-out-%d", fa_test_tmpdir(), (int)getpid());
    snprintf(efile, sizeof efile, "%s/cli-err-%d", fa_test_tmpdir(), (int)getpid());
    int argc = 0;
    while (argv[argc]) argc++;
    char **av = calloc((size_t)argc + 2, sizeof *av);
    av[0] = (char *)cli;
    for (int i = 0; i < argc; i++) av[i + 1] = (char *)argv[i];
    pid_t p = fork();
    if (p == 0) {
        int o = open(ofile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(efile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        execv(cli, av);
        _exit(127);
    }
    free(av);
    int status = 0;
    waitpid(p, &status, 0);
    if (out) {
        int fd = open(ofile, O_RDONLY);
        *out = slurp_fd(fd);
        close(fd);
    }
    if (err) {
        int fd = open(efile, O_RDONLY);
        *err = slurp_fd(fd);
        close(fd);
    }
    unlink(ofile);
    unlink(efile);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#include "collector/collector.h"
#include "runtime/runtime.h"

fa_status fa_test_store_graph_trace(fa_ctx *ctx, fa_store *st, const fa_graph *g, const fa_trace *t, int64_t *run_id)
{
    fa_run_info info = {0};
    info.kind = "run";
    info.model_path = g->path ? g->path : g->name;
    info.target = "cpu";
    info.iters = t->n_iters;
    info.warmup = 1;
    fa_status s = fa_store_run_begin(ctx, st, &info, run_id);
    if (!s) s = fa_store_put_graph(ctx, st, *run_id, g);
    if (!s) s = fa_store_put_trace(ctx, st, *run_id, t);
    if (!s) s = fa_store_run_finish(ctx, st, *run_id, true, NULL);
    return s;
}

fa_status fa_test_store_graph_run(fa_ctx *ctx, fa_store *st, const fa_graph *g, int iters, int64_t *run_id)
{
    fa_exec *e = NULL;
    fa_trace *t = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2};
    fa_status s = fa_exec_create(ctx, g, &eo, &e);
    if (!s) s = fa_exec_fill_inputs(ctx, e, 1);
    if (!s) s = fa_collect_cpu(ctx, e, g, 1, iters, NULL, NULL, &t);
    if (!s) s = fa_test_store_graph_trace(ctx, st, g, t, run_id);
    fa_trace_free(t);
    fa_exec_free(e);
    return s;
}

void fa_test_add_const(fa_ctx *ctx, fa_graph *g, const char *name, int rank, const int64_t *dims, float lo, float hi,
                       int seed)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    float *v = malloc(sizeof(float) * (size_t)n);
    assert_non_null(v);
    fa_rng r;
    fa_rng_seed(&r, (uint64_t)seed);
    for (int64_t i = 0; i < n; i++) v[i] = fa_rng_uniform(&r, lo, hi);
    int t = fa_graph_tensor(g, name);
    fa_tensor_set_shape(g->tensors[t], FA_DTYPE_FLOAT, rank, dims);
    assert_int_equal(fa_tensor_set_data(ctx, g->tensors[t], v, sizeof(float) * (size_t)n), FA_OK);
    g->tensors[t]->flags |= FA_TENSOR_INITIALIZER;
    free(v);
}

fa_status fa_test_store_run(fa_ctx *ctx, fa_store *st, const char *model, int iters, int64_t *run_id)
{
    fa_graph *g = NULL;
    fa_status s = fa_graph_load(ctx, model, NULL, &g);
    if (s) return s;
    if (!g->path) g->path = fa_arena_strdup(g->arena, model);
    s = fa_test_store_graph_run(ctx, st, g, iters, run_id);
    fa_graph_free(g);
    return s;
}
