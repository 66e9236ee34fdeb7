/* bench/bench_plan_layout — one model on the fused plan's executor (fa_exec_options.blocked_layouts)
 * in the plan layout this process has (FA_BLOCKED_LAYOUT, else oneDNN's own answer), to compare
 * layouts with bench_plan_layout.sh, which alternates processes between them. The model runs as
 * loaded (no cluster fused: its convolutions, BN, activations, pools and adds each on the layout),
 * so the figures are the kernel library's in each layout. Prints the median and IQR of whole
 * iterations and, per op type, the median time per iteration (ms).
 * --per-node prints one row per node (its name's last 40 characters and its kernel) instead.
 * Usage: bench_plan_layout [--threads N] [--iters I] [--batch B] [--per-node] MODEL  (zoo:NAME or .onnx) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/graph.h"
#include "runtime/runtime-impl.h"

enum { MAX_OPS = 256, MAX_ITERS = 1000 };

typedef struct op_times {
    int n_ops;
    char op[MAX_OPS][96];
    int per_node; /* --per-node: one row per node (its kernel's name beside it) instead of per op type */
    double ms[MAX_OPS][MAX_ITERS]; /* per iteration */
    int it;
    double t0;
} op_times;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static void on_begin(void *user, const fa_node *n, const char *k)
{
    (void)n, (void)k;
    ((op_times *)user)->t0 = now_ms();
}

static void on_end(void *user, const fa_node *n, const char *k)
{
    op_times *o = user;
    double dt = now_ms() - o->t0;
    char key[96];
    const char *op = !strncmp(k, "dnnl:reorder(", 13) ? "Reorder" : n ? n->op_type : "?";
    if (o->per_node && n) {
        size_t nl = strlen(n->name);
        snprintf(key, sizeof key, "%-40s %s", nl > 40 ? n->name + nl - 40 : n->name, k);
        op = key;
    }
    int i = 0;
    while (i < o->n_ops && strcmp(o->op[i], op)) i++;
    if (i == o->n_ops) {
        if (o->n_ops == MAX_OPS) return;
        snprintf(o->op[o->n_ops++], sizeof o->op[0], "%s", op);
    }
    o->ms[i][o->it] += dt;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[(int)(q * (n - 1) + 0.5)];
}

int main(int argc, char **argv)
{
    int threads = 2, iters = 20, batch = 0, per_node = 0;
    const char *model = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--per-node")) per_node = 1;
        else model = argv[i];
    }
    if (!model || iters < 1 || iters > MAX_ITERS) {
        fprintf(stderr, "usage: bench_plan_layout [--threads N] [--iters I<=%d] [--batch B] [--per-node] MODEL\n", MAX_ITERS);
        return 2;
    }
    omp_set_num_threads(threads);
    fa_ctx *ctx = fa_ctx_create();
    fa_load_options lo = {.batch = batch};
    fa_graph *g = NULL;
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = threads, .blocked_layouts = true};
    if (fa_graph_load(ctx, model, &lo, &g) || fa_exec_create(ctx, g, &eo, &e) || fa_exec_fill_inputs(ctx, e, 1)) {
        fprintf(stderr, "bench_plan_layout: %s\n", fa_ctx_errmsg(ctx));
        return 1;
    }
    static op_times o;
    o.per_node = per_node;
    fa_exec_observer obs = {.user = &o, .kernel_begin = on_begin, .kernel_end = on_end};
    double *total = calloc((size_t)iters, sizeof *total);
    for (int w = 0; w < 3; w++)
        if (fa_exec_run(ctx, e, NULL)) goto fail;
    for (o.it = 0; o.it < iters; o.it++) {
        double t0 = now_ms();
        if (fa_exec_run(ctx, e, &obs)) goto fail;
        total[o.it] = now_ms() - t0;
    }
    printf("layout %s model %s batch %d threads %d iters %d: median %.3f ms (IQR %.3f-%.3f), %d reorder kernels\n",
           fa_layout_name(fa_cpu_blocked_layout()), model, batch, threads, iters, quantile(total, iters, 0.5),
           quantile(total, iters, 0.25), quantile(total, iters, 0.75), fa_exec_reorders(e));
    for (int i = 0; i < o.n_ops; i++)
        printf(per_node ? "  %s %9.4f ms\n" : "  op %-20s %9.3f ms\n", o.op[i], quantile(o.ms[i], iters, 0.5));
    fa_exec_free(e);
    fa_graph_free(g);
    fa_ctx_free(ctx);
    free(total);
    return 0;
fail:
    fprintf(stderr, "bench_plan_layout: %s\n", fa_ctx_errmsg(ctx));
    return 1;
}
