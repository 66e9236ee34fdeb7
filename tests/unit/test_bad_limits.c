/* tests/unit/test_bad_limits — issue 11 resource limits at the command line: `--max-memory`
 * bounds the executor, a model whose declared sizes exceed the machine's memory is refused
 * before anything that size is allocated, and a 100,000-node chain (built with the graph API,
 * exported with fa_onnx_export) loads, prepares, runs and analyzes: nothing recurses per node. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "graph/graph.h"

static char *slurp_tail(const char *path, size_t *len)
{
    fa_ctx *ctx = fa_ctx_create();
    uint8_t *d = NULL;
    if (fa_read_file(ctx, path, &d, len)) {
        fa_ctx_free(ctx);
        return strdup("");
    }
    fa_ctx_free(ctx);
    if (*len > 2048) memmove(d, d + *len - 2048, 2049);
    return (char *)d;
}

static int cli(const char *const *argv, char **out, char **err, const char *what)
{
    char *o = NULL, *e = NULL;
    int rc = fa_test_run_cli(argv, &o, &e);
    if (getenv("FA_TEST_VERBOSE")) fprintf(stderr, "%s: exit %d\n%s%s", what, rc, o, e);
    if (out) *out = o; else free(o);
    if (err) *err = e; else free(e);
    return rc;
}

/* Run the CLI with a watchdog: SIGALRM (kept across exec) ends it after `secs`; stdout and stderr
 * go to /dev/null and a file whose last 2 KiB come back in *err. Returns the exit code, or
 * 128 + signal (142 = the watchdog fired). */
static int cli_within(const char *const *argv, unsigned secs, char **err, double *took)
{
    const char *clip = getenv("FA_CLI");
    assert_non_null(clip);
    char efile[4200];
    snprintf(efile, sizeof efile, "%s", fa_test_path(fa_test_tmpdir(), "watchdog-stderr"));
    int argc = 0;
    while (argv[argc]) argc++;
    char **av = calloc((size_t)argc + 2, sizeof *av);
    av[0] = (char *)clip;
    for (int i = 0; i < argc; i++) av[i + 1] = (char *)argv[i];
    uint64_t t0 = fa_now_ns();
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        int o = open("/dev/null", O_WRONLY), e = open(efile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        alarm(secs);
        execv(clip, av);
        _exit(127);
    }
    free(av);
    int st = 0;
    waitpid(p, &st, 0);
    *took = (double)(fa_now_ns() - t0) / 1e9;
    size_t len = 0;
    *err = slurp_tail(efile, &len);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* X[dims] float -> n_relu x Relu -> Y, exported to `name` in the temp folder. */
static const char *export_chain(const char *name, int rank, const int64_t *dims, int n_relu)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("chain");
    assert_non_null(g);
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 13), FA_OK);
    int x = fa_graph_tensor(g, "X");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, rank, dims);
    assert_int_equal(fa_graph_add_input(ctx, g, x), FA_OK);
    char prev[32] = "X", next[32], node[32];
    for (int i = 0; i < n_relu; i++) {
        if (i == n_relu - 1) snprintf(next, sizeof next, "Y");
        else snprintf(next, sizeof next, "t%d", i);
        snprintf(node, sizeof node, "relu%d", i);
        const char *in[] = {prev}, *out[] = {next};
        if (!fa_graph_add_node(ctx, g, node, "Relu", "", 1, in, 1, out)) fail_msg("%s", fa_ctx_errmsg(ctx));
        memcpy(prev, next, sizeof prev);
    }
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "Y")), FA_OK);
    static char path[4200];
    snprintf(path, sizeof path, "%s", fa_test_path(fa_test_tmpdir(), name));
    fa_status s = fa_onnx_export(ctx, g, path);
    if (s) fail_msg("export: %s", fa_ctx_errmsg(ctx));
    fa_graph_free(g);
    fa_ctx_free(ctx);
    return path;
}

static void test_bad_max_memory_bounds_the_executor(void **state)
{
    (void)state;
    static const int64_t d[2] = {64, 64}; /* 16 KiB per activation */
    const char *model = export_chain("small-chain.onnx", 2, d, 4);
    const char *db = fa_test_path(fa_test_tmpdir(), "maxmem.db");
    const char *argv[] = {"run", model, "--no-apply", "--iters", "1", "--warmup", "0", "--threads", "1",
                          "--max-memory", "1000", "--db", db, NULL};
    char *err = NULL;
    int rc = cli(argv, NULL, &err, "max-memory 1000");
    if (rc != 1) fail_msg("exit %d (want 1): %s", rc, err);
    if (!strstr(err, "--max-memory 1000")) fail_msg("message does not name the cap: %s", err);
    free(err);
    /* the same run fits in 1 MiB */
    const char *ok[] = {"run", model, "--no-apply", "--iters", "1", "--warmup", "0", "--threads", "1",
                        "--max-memory", "1048576", "--db", db, NULL};
    rc = cli(ok, NULL, &err, "max-memory 1 MiB");
    if (rc != 0) fail_msg("run within the cap: exit %d: %s", rc, err);
    free(err);
}

/* A graph input declared 8x the machine's RAM (at least 64 GiB): the run is refused with a
 * message naming the tensor (exit 1), and the process never grows anywhere near that size. */
static void test_bad_declared_size_beyond_memory_refused_before_allocation(void **state)
{
    (void)state;
    struct sysinfo si;
    assert_int_equal(sysinfo(&si), 0);
    uint64_t ram = (uint64_t)si.totalram * si.mem_unit;
    uint64_t want = ram * 8 > (64ull << 30) ? ram * 8 : (64ull << 30);
    int64_t rows = (int64_t)(want / (4096 * 4)) + 1;
    const int64_t d[2] = {rows, 4096};
    const char *model = export_chain("huge-input.onnx", 2, d, 2);
    const char *db = fa_test_path(fa_test_tmpdir(), "huge.db");
    const char *argv[] = {"run", model, "--no-apply", "--iters", "1", "--warmup", "0", "--threads", "1",
                          "--db", db, NULL};
    char *err = NULL;
    uint64_t t0 = fa_now_ns();
    int rc = cli(argv, NULL, &err, "huge input");
    double secs = (double)(fa_now_ns() - t0) / 1e9;
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", err);
    free(err);
    if (rc != 1) fail_msg("exit %d (want 1) after %.1f s: %s", rc, secs, msg);
    if (!strstr(msg, "'X'") && !strstr(msg, "'t0'")) fail_msg("message does not name the tensor: %s", msg);
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_CHILDREN, &ru), 0);
    /* ru_maxrss (KiB) of the largest child so far: far below the declared size */
    if ((uint64_t)ru.ru_maxrss * 1024 > want / 8)
        fail_msg("the child grew to %ld KiB for a refused model", ru.ru_maxrss);
}

/* A model that fits the machine's free memory but asks for far more than its weights: a graph
 * input of 5 GiB and no weights is refused before anything is allocated, by the default limit
 * (the larger of 4 GiB and 64x the weights), the message saying how to allow it; a 577-byte Tile
 * had taken 16.8 GB so. */
static void test_bad_small_model_over_the_default_limit_refused(void **state)
{
    (void)state;
    const int64_t d[2] = {((int64_t)5 << 30) / (4096 * 4), 4096};
    const char *model = export_chain("five-gib.onnx", 2, d, 1);
    const char *db = fa_test_path(fa_test_tmpdir(), "five.db");
    const char *argv[] = {"run", model, "--no-apply", "--iters", "1", "--warmup", "0", "--threads", "1", "--db", db, NULL};
    char *err = NULL;
    int rc = cli(argv, NULL, &err, "5 GiB input, no weights");
    if (rc != 1 || !strstr(err, "more than the limit of 4294967296 bytes for a model of 0 bytes of weights") ||
        !strstr(err, "--max-memory BYTES") || !strstr(err, "five-gib.onnx"))
        fail_msg("exit %d (want 1 naming the default limit and --max-memory): %s", rc, err);
    free(err);
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_CHILDREN, &ru), 0);
    if ((uint64_t)ru.ru_maxrss * 1024 > ((uint64_t)1 << 30)) fail_msg("the child grew to %ld KiB for a refused model", ru.ru_maxrss);
}

/* 100,000 Relu nodes in one chain: inspect, run (1 iteration), analyze and advise each complete within
 * a generous watchdog (a per-node recursion would overflow the stack, an O(n^2) step would take
 * hours at this size). The time of each step is printed. */
static void test_bad_hundred_thousand_node_chain_loads_runs_analyzes_and_advises(void **state)
{
    (void)state;
    static const int64_t d[2] = {1, 4};
    uint64_t t0 = fa_now_ns();
    const char *model = export_chain("chain-100k.onnx", 2, d, 100000);
    print_message("build + export of 100,000 nodes: %.1f s\n", (double)(fa_now_ns() - t0) / 1e9);
    const char *db = fa_test_path(fa_test_tmpdir(), "chain.db");
    const char *inspect[] = {"inspect", model, "--json", NULL};
    const char *run[] = {"run", model, "--no-apply", "--iters", "1", "--warmup", "0", "--threads", "1",
                         "--db", db, NULL};
    const char *analyze[] = {"analyze", "latest", "--db", db, NULL};
    const char *advise[] = {"advise", "latest", "--db", db, NULL};
    const char *const *steps[] = {inspect, run, analyze, advise};
    for (int k = 0; k < 4; k++) {
        char *err = NULL;
        double took = 0;
        int rc = cli_within(steps[k], 300, &err, &took);
        print_message("%s on 100,000 nodes: exit %d, %.1f s\n", steps[k][0], rc, took);
        char msg[2200];
        snprintf(msg, sizeof msg, "%s", err);
        free(err);
        if (rc == 128 + SIGALRM) fail_msg("%s on a 100,000-node chain did not finish in 300 s", steps[k][0]);
        if (rc != 0) fail_msg("%s on a 100,000-node chain: exit %d: %s", steps[k][0], rc, msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_max_memory_bounds_the_executor),
        cmocka_unit_test(test_bad_declared_size_beyond_memory_refused_before_allocation),
        cmocka_unit_test(test_bad_small_model_over_the_default_limit_refused),
        cmocka_unit_test(test_bad_hundred_thousand_node_chain_loads_runs_analyzes_and_advises),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
