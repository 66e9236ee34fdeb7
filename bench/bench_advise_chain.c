/* bench/bench_advise_chain — the advisor's time on long elementwise chains: builds X -> N x Relu
 * -> Y with the graph API (N = 1,000 .. 100,000 by default; with --residual every fourth node is
 * an Add of the previous tensor and the one three nodes back, a residual ladder that makes the
 * cycle check and the why-not list work), prepares it and times fa_advise
 * (cpu target, no analysis, gate off) and, with --store, fa_plan_save into a fresh database.
 * Prints per N: wall and CPU seconds, clusters, why-nots, and µs per node, so linear growth reads
 * as a constant last column.
 * With --export PATH N it writes that chain as an ONNX model instead (the input of
 * bench_advise_probe.sh, which times `advise` with its kernel probe on a stored run of it).
 * usage: bench_advise_chain [--store] [--residual] [N ...] | bench_advise_chain [--residual] --export PATH N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "advisor/advisor.h"

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* X[1,4] float -> n x Relu (every fourth an Add with the tensor 3 back when `residual`) -> Y,
 * prepared. NULL with the message on ctx. */
static fa_graph *chain(fa_ctx *ctx, int n, bool residual)
{
    fa_graph *g = fa_graph_create("chain");
    if (!g || fa_graph_set_opset(ctx, g, "", 13)) goto fail;
    static const int64_t dims[2] = {1, 4};
    int x = fa_graph_tensor(g, "X");
    if (x < 0) goto fail;
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 2, dims);
    if (fa_graph_add_input(ctx, g, x)) goto fail;
    char prev[32] = "X", next[32], node[32], back[32];
    for (int i = 0; i < n; i++) {
        snprintf(next, sizeof next, i == n - 1 ? "Y" : "t%d", i);
        snprintf(node, sizeof node, "n%d", i);
        bool add = residual && i >= 3 && i % 4 == 3;
        if (add) snprintf(back, sizeof back, "t%d", i - 3);
        const char *in[] = {prev, back}, *out[] = {next};
        if (!fa_graph_add_node(ctx, g, node, add ? "Add" : "Relu", "", add ? 2 : 1, in, 1, out)) goto fail;
        memcpy(prev, next, sizeof prev);
    }
    if (fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "Y"))) goto fail;
    fa_load_options lo = {0};
    if (fa_graph_prepare(ctx, g, &lo)) goto fail;
    return g;
fail:
    fa_graph_free(g);
    return NULL;
}

int main(int argc, char **argv)
{
    bool store = false, residual = false;
    const char *export_path = NULL;
    int sizes[32], n_sizes = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--store")) store = true;
        else if (!strcmp(argv[i], "--residual")) residual = true;
        else if (!strcmp(argv[i], "--export") && i + 1 < argc) export_path = argv[++i];
        else if (n_sizes < 32 && atoi(argv[i]) > 0) sizes[n_sizes++] = atoi(argv[i]);
        else { fprintf(stderr, "usage: bench_advise_chain [--store] [--residual] [N ...]\n"); return 2; }
    }
    if (!n_sizes) {
        static const int def[] = {1000, 10000, 30000, 100000};
        for (int i = 0; i < 4; i++) sizes[n_sizes++] = def[i];
    }
    fa_ctx *ctx = fa_ctx_create();
    if (export_path) {
        fa_graph *g = n_sizes == 1 ? chain(ctx, sizes[0], residual) : NULL;
        if (n_sizes != 1) fprintf(stderr, "usage: bench_advise_chain [--residual] --export PATH N\n");
        else if (!g || fa_onnx_export(ctx, g, export_path)) fprintf(stderr, "bench_advise_chain: %s\n", fa_ctx_errmsg(ctx));
        int rc = g && !fa_ctx_status(ctx) ? 0 : n_sizes == 1 ? 1 : 2;
        fa_graph_free(g);
        fa_ctx_free(ctx);
        return rc;
    }
    printf("%-8s %10s %10s %9s %9s %12s%s\n", "nodes", "advise_s", "cpu_s", "clusters", "why_not", "us_per_node",
           store ? "   save_s" : "");
    for (int k = 0; k < n_sizes; k++) {
        fa_graph *g = chain(ctx, sizes[k], residual);
        if (!g) { fprintf(stderr, "bench_advise_chain: %s\n", fa_ctx_errmsg(ctx)); return 1; }
        fa_advise_options o = fa_advise_options_default();
        o.no_gate = true;
        fa_plan *p = NULL;
        uint64_t w0 = fa_now_ns(), c0 = cpu_ns();
        if (fa_advise(ctx, g, NULL, &o, &p)) { fprintf(stderr, "bench_advise_chain: %s\n", fa_ctx_errmsg(ctx)); return 1; }
        double wall = (double)(fa_now_ns() - w0) / 1e9, cpu = (double)(cpu_ns() - c0) / 1e9;
        printf("%-8d %10.3f %10.3f %9d %9d %12.2f", sizes[k], wall, cpu, p->n_clusters, p->n_why_not,
               wall * 1e6 / sizes[k]);
        if (store) {
            char path[4096];
            const char *tmp = getenv("TMPDIR");
            snprintf(path, sizeof path, "%s/bench_advise_%d.db", tmp && *tmp ? tmp : "/tmp", (int)getpid());
            fa_store *st = NULL;
            if (fa_store_open(ctx, path, &st)) { fprintf(stderr, "bench_advise_chain: %s\n", fa_ctx_errmsg(ctx)); return 1; }
            fa_run_info ri = {.kind = "run", .model_path = "bench:chain", .target = "cpu"};
            if (fa_store_run_begin(ctx, st, &ri, &p->run_id)) { fprintf(stderr, "bench_advise_chain: %s\n", fa_ctx_errmsg(ctx)); return 1; }
            uint64_t s0 = fa_now_ns();
            if (fa_plan_save(ctx, st, p)) { fprintf(stderr, "bench_advise_chain: %s\n", fa_ctx_errmsg(ctx)); return 1; }
            printf(" %9.3f", (double)(fa_now_ns() - s0) / 1e9);
            fa_store_close(st);
            unlink(path);
            char side[4200];
            snprintf(side, sizeof side, "%s-wal", path);
            unlink(side);
            snprintf(side, sizeof side, "%s-shm", path);
            unlink(side);
        }
        printf("\n");
        fflush(stdout);
        fa_plan_free(p);
        fa_graph_free(g);
    }
    fa_ctx_free(ctx);
    return 0;
}
