/* tests/unit/test_harden_limits — issue 15 "Resources and options", memory: the whole plan's
 * peak of live tensors is checked against the memory available (MemAvailable, lowered to the
 * cgroup's limit where one is set) before anything is allocated. Two tensors that each fit but
 * not together are refused at fa_exec_create; inside a small memory cgroup a run whose peak
 * exceeds the cgroup's limit is refused naming that limit, not killed by the OOM killer. */
#include <sys/sysinfo.h>

#include "harden_util.h"

#include "runtime/runtime.h"

static const char *tmp(const char *name) { return hu_tmp(name); }

/* X[n] -> Relu -> Y -> Neg -> Z: X, Y and Z all live at the end (X input, Z output, Y until Neg). */
static fa_graph *two_big(int64_t n)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("big");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 13), FA_OK);
    int x = fa_graph_tensor(g, "X");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 1, &n);
    assert_int_equal(fa_graph_add_input(ctx, g, x), FA_OK);
    const char *i1[] = {"X"}, *o1[] = {"Y"}, *i2[] = {"Y"}, *o2[] = {"Z"};
    assert_non_null(fa_graph_add_node(ctx, g, "relu", "Relu", "", 1, i1, 1, o1));
    assert_non_null(fa_graph_add_node(ctx, g, "neg", "Neg", "", 1, i2, 1, o2));
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "Z")), FA_OK);
    fa_load_options lo = {0};
    assert_int_equal(fa_graph_prepare(ctx, g, &lo), FA_OK);
    fa_ctx_free(ctx);
    return g;
}

static void test_two_tensors_that_fit_alone_but_not_together_refused_at_create(void **state)
{
    (void)state;
    struct sysinfo si;
    assert_int_equal(sysinfo(&si), 0);
    uint64_t phys = (uint64_t)si.totalram * si.mem_unit;
    /* each tensor 0.45 x physical memory: alone it fits the per-tensor check, the plan's peak of
     * three (X, Y, Z) is 1.35 x physical memory, beyond anything available */
    int64_t n = (int64_t)(phys * 0.45 / 4);
    fa_graph *g = two_big(n);
    fa_ctx *ctx = fa_ctx_create();
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1};
    fa_status s = fa_exec_create(ctx, g, &eo, &e);
    /* nothing was run or allocated either way: only the create */
    fa_exec_free(e);
    if (s != FA_ERR_NOMEM) fail_msg("a plan needing %.1f GB was accepted (status %d)", 3.0 * n * 4 / 1e9, s);
    const char *m = fa_ctx_errmsg(ctx);
    if (!strstr(m, "available") || !strstr(m, "peak")) fail_msg("message: %s", m);
    /* --max-memory is checked against the same planned peak, before running */
    fa_ctx_clear(ctx);
    fa_graph_free(g);
    g = two_big(1024); /* 4 KiB each, 12 KiB peak */
    eo.max_memory = 10000;
    assert_int_equal(fa_exec_create(ctx, g, &eo, &e), FA_ERR_NOMEM);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "--max-memory"));
    eo.max_memory = 12288;
    assert_int_equal(fa_exec_create(ctx, g, &eo, &e), FA_OK);
    fa_exec_free(e);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* A memory cgroup of `limit` bytes under the v2 or v1 hierarchy; its folder in out, false when
 * this machine does not let us create one. */
static bool make_cgroup(uint64_t limit, char *out, size_t cap)
{
    const char *bases[][2] = {{"/sys/fs/cgroup", "memory.max"}, {"/sys/fs/cgroup/memory", "memory.limit_in_bytes"}};
    for (int b = 0; b < 2; b++) {
        char file[4400];
        snprintf(file, sizeof file, "%s/%s", bases[b][0], b == 0 ? "cgroup.controllers" : "memory.limit_in_bytes");
        if (!hu_exists(file)) continue;
        snprintf(out, cap, "%s/fa-harden-%d", bases[b][0], (int)getpid());
        if (mkdir(out, 0755) != 0) continue;
        snprintf(file, sizeof file, "%s/%s", out, bases[b][1]);
        FILE *f = fopen(file, "w");
        bool ok = f && fprintf(f, "%llu\n", (unsigned long long)limit) > 0;
        if (f && fclose(f) != 0) ok = false;
        if (ok) return true;
        rmdir(out);
    }
    return false;
}

static void test_run_refused_when_its_peak_exceeds_the_cgroup_limit(void **state)
{
    (void)state;
    char cg[4400];
    const uint64_t limit = 192ull << 20;
    if (!make_cgroup(limit, cg, sizeof cg)) {
        print_message("cannot create a memory cgroup here: the cgroup case is not run\n");
        skip();
    }
    /* peak 3 x 96 MiB = 288 MiB > 192 MiB, each tensor far below it and below MemAvailable */
    char model[4400];
    snprintf(model, sizeof model, "%s", tmp("cg.onnx"));
    fa_graph *g = two_big((96ll << 20) / 4);
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_onnx_export(ctx, g, model), FA_OK);
    fa_ctx_free(ctx);
    fa_graph_free(g);
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        char procs[4500], pid[32];
        snprintf(procs, sizeof procs, "%s/cgroup.procs", cg);
        snprintf(pid, sizeof pid, "%d\n", (int)getpid());
        int fd = open(procs, O_WRONLY);
        if (fd < 0 || write(fd, pid, strlen(pid)) < 0) _exit(125);
        close(fd);
        int e = open(tmp("cg-stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0600), o = open("/dev/null", O_WRONLY);
        dup2(o, 1);
        dup2(e, 2);
        const char *db = tmp("cg.db");
        execl(getenv("FA_CLI"), getenv("FA_CLI"), "run", model, "--no-apply", "--iters", "1", "--warmup", "0", "--threads",
              "1", "--db", db, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(p, &st, 0);
    rmdir(cg);
    fa_ctx *c2 = fa_ctx_create();
    uint8_t *d = NULL;
    size_t n = 0;
    char *err = fa_read_file(c2, tmp("cg-stderr"), &d, &n) ? strdup("") : (char *)d;
    fa_ctx_free(c2);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (rc == 125) {
        free(err);
        print_message("cannot move a process into the cgroup here\n");
        skip();
    }
    if (rc != 1 || !strstr(err, "cgroup")) fail_msg("run in a %llu-byte cgroup: exit %d: %s", (unsigned long long)limit, rc, err);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_tensors_that_fit_alone_but_not_together_refused_at_create),
        cmocka_unit_test(test_run_refused_when_its_peak_exceeds_the_cgroup_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
