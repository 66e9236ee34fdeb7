/* bench/bench_conv_util.h — what the single-convolution benchmarks share (bench_conv_swish,
 * bench_dwconv): a random constant, one traced iteration's time of one node's kernel, and the
 * comparison qsort takes for medians. Header-only: each benchmark is one program. */
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

#endif
