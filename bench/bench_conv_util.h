/* bench/bench_conv_util.h — what the single-kernel benchmarks share (bench_conv_swish,
 * bench_dwconv, bench_matmul_bias): a random constant, one traced iteration's time of one node's
 * kernel, the interleaved A/B of one node on two executors, and the comparison qsort takes for
 * medians. Header-only: each benchmark is one program. */
#ifndef FA_BENCH_CONV_UTIL_H
#define FA_BENCH_CONV_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/collector.h"
#include "graph/graph.h"
#include "runtime/runtime.h"

/* initializer `name` of dims, uniform in [-0.3, 0.3) from seed; exits naming `prog` on failure */
static void bench_add_const(fa_ctx *ctx, fa_graph *g, const char *name, int rank, const int64_t *dims, uint64_t seed,
                            const char *prog)
{
    int t = fa_graph_tensor(g, name);
    fa_tensor_set_shape(g->tensors[t], FA_DTYPE_FLOAT, rank, dims);
    int64_t n = fa_tensor_numel(g->tensors[t]);
    float *d = malloc(sizeof(float) * (size_t)n);
    fa_rng r;
    fa_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) d[i] = fa_rng_uniform(&r, -0.3f, 0.3f);
    if (fa_tensor_set_data(ctx, g->tensors[t], d, sizeof(float) * (size_t)n)) {
        fprintf(stderr, "%s: %s\n", prog, fa_ctx_errmsg(ctx));
        exit(1);
    }
    g->tensors[t]->flags |= FA_TENSOR_INITIALIZER;
    free(d);
}

/* The graph's output `name` (float, rank dims) added and the graph indexed: the last step of
 * building a single-kernel graph; exits naming `prog` on failure. */
static fa_graph *bench_finish_graph(fa_ctx *ctx, fa_graph *g, const char *name, int rank, const int64_t *dims,
                                    const char *prog)
{
    int y = fa_graph_find_tensor(g, name);
    if (y < 0) {
        fprintf(stderr, "%s: the graph has no tensor '%s'\n", prog, name);
        exit(1);
    }
    fa_tensor_set_shape(g->tensors[y], FA_DTYPE_FLOAT, rank, dims);
    if (fa_graph_add_output(ctx, g, y) || fa_graph_index(ctx, g)) {
        fprintf(stderr, "%s: %s\n", prog, fa_ctx_errmsg(ctx));
        exit(1);
    }
    return g;
}

/* one traced iteration of e: the ns of node `node`'s kernel (NAN when it ran none); *name its
 * kernel's name when name is not NULL; exits naming `prog` on failure */
static double bench_node_ns(fa_ctx *ctx, fa_exec *e, const fa_graph *g, const char *node, const char **name, const char *prog)
{
    fa_trace *t = NULL;
    if (fa_collect(ctx, e, g, 0, 1, NULL, NULL, &t)) {
        fprintf(stderr, "%s: %s\n", prog, fa_ctx_errmsg(ctx));
        exit(1);
    }
    double ns = NAN;
    for (size_t i = 0; i < t->n_acts; i++)
        if (t->acts[i].kind == FA_ACT_KERNEL && t->acts[i].node_name && !strcmp(t->acts[i].node_name, node)) {
            ns = (double)(t->acts[i].end_ns - t->acts[i].start_ns);
            if (name) *name = fa_exec_kernel_name(e, g->nodes[t->acts[i].node]);
        }
    fa_trace_free(t);
    return ns;
}

static int bench_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* An executor for g with options o, its inputs filled (seed 7); exits naming `prog` on failure. */
static fa_exec *bench_exec(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *o, const char *prog)
{
    fa_exec *e = NULL;
    fa_status s = fa_exec_create(ctx, g, o, &e);
    if (!s) s = fa_exec_fill_inputs(ctx, e, 7);
    if (s) {
        fprintf(stderr, "%s: %s\n", prog, fa_ctx_errmsg(ctx));
        exit(1);
    }
    return e;
}

/* --threads N, --reps R (at least 3) and, where batch is not NULL, --batch B into the given
 * defaults; false (after printing the usage) on anything else. */
static bool bench_args(int argc, char **argv, int *threads, int *reps, int *batch, const char *prog)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) *threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) *reps = atoi(argv[++i]);
        else if (batch && !strcmp(argv[i], "--batch") && i + 1 < argc) *batch = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--threads N] [--reps R]%s\n", prog, batch ? " [--batch B]" : "");
            return false;
        }
    }
    return *threads >= 1 && *reps >= 3 && (!batch || *batch >= 1);
}

/* The A/B of node `node` of g on executors ea and eb (the same graph built two ways): 5 untimed
 * pairs, then `reps` rounds alternating which goes first, one traced iteration each; *ma_ns and
 * *mb_ns the medians of the node's kernel time, *rel_diff the largest |a - b| of output 0 over
 * the largest |a|, *name_a / *name_b the kernels' names (either may be NULL). Exits naming
 * `prog` on failure. */
typedef struct bench_ab {
    double ma_ns, mb_ns, rel_diff;
    const char *name_a, *name_b;
} bench_ab;

static bench_ab bench_ab_node(fa_ctx *ctx, fa_exec *ea, fa_exec *eb, const fa_graph *g, const char *node, int reps,
                              const char *prog)
{
    bench_ab r = {0, 0, 0, "?", "?"};
    double *a = malloc(sizeof(double) * (size_t)reps), *b = malloc(sizeof(double) * (size_t)reps);
    if (!a || !b) {
        fprintf(stderr, "%s: out of memory\n", prog);
        exit(1);
    }
    for (int w = 0; w < 5; w++) bench_node_ns(ctx, ea, g, node, NULL, prog), bench_node_ns(ctx, eb, g, node, NULL, prog);
    for (int i = 0; i < reps; i++) { /* alternating which goes first */
        if (i & 1) b[i] = bench_node_ns(ctx, eb, g, node, &r.name_b, prog), a[i] = bench_node_ns(ctx, ea, g, node, &r.name_a, prog);
        else a[i] = bench_node_ns(ctx, ea, g, node, &r.name_a, prog), b[i] = bench_node_ns(ctx, eb, g, node, &r.name_b, prog);
    }
    const fa_value *va = fa_exec_output(ea, 0), *vb = fa_exec_output(eb, 0);
    double diff = 0, mag = 0;
    for (int64_t i = 0; va && vb && i < fa_value_numel(va); i++) {
        double p = ((const float *)va->data)[i], q = ((const float *)vb->data)[i];
        mag = fmax(mag, fabs(p));
        diff = fmax(diff, fabs(p - q));
    }
    r.rel_diff = mag > 0 ? diff / mag : diff;
    qsort(a, (size_t)reps, sizeof *a, bench_cmp_d);
    qsort(b, (size_t)reps, sizeof *b, bench_cmp_d);
    r.ma_ns = a[reps / 2];
    r.mb_ns = b[reps / 2];
    free(a);
    free(b);
    return r;
}

#endif
