/* bench/bench_dispatch — what the cpu executor pays per node when the node's kernel does nearly
 * no work (issue 35, "Dispatch cost of small models"). Builds chains of N tiny nodes with the graph
 * API, runs them on the unfused executor (the baseline: plain tensors, one kernel per node) and on
 * the fused plan's executor (every cluster the advisor proposes applied: generated kernels for the
 * elementwise chains, oneDNN post-ops for the conv/MatMul epilogues, blocked layouts kept between
 * kernels), at each thread count asked, and prints per chain, executor and thread count the median
 * and IQR of whole iterations divided by the kernels one iteration runs: µs per kernel, the
 * figure of merit. The kernels' own work is a few hundred floats, so nearly all of it is dispatch:
 * the executor's loop, argument marshalling, the library call, and any OpenMP team a kernel opens.
 * Chains (each node's work far under the executor's one-thread bounds, runtime/cpu/exec_cpu.c):
 *   ew      X[1,E] -> N x (Relu, Neg, Add(h, X), Abs in turn)     — our reference kernels
 *   matmul  X[1,16] -> N/3 x (MatMul W[16,16], Add b[16], Relu)   — oneDNN matmul + our kernels
 *   conv    X[1,8,4,4] -> N/2 x (Conv 1x1 8->8 with bias, Relu)   — oneDNN convolution + ours
 * Also printed: the thread-CPU time of the calling thread per kernel (median), which moves less
 * than wall time when the machine is shared, and the kernels one iteration runs by name.
 * usage: bench_dispatch [--nodes N] [--elems E] [--iters I] [--threads 1,2] [--chain ew,matmul,conv]
 *                       [--executor unfused,fused] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "advisor/advisor.h"
#include "applier/applier-impl.h"
#include "runtime/runtime-impl.h"

enum { MAX_ITERS = 100000, MAX_NAMES = 32 };

static double now_ns(int clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of v[0..n) (sorted in place; nearest rank). */
static double quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[(int)(q * (n - 1) + 0.5)];
}

static int add_const(fa_ctx *ctx, fa_graph *g, const char *name, int rank, const int64_t *dims, uint64_t seed)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    float *v = malloc(sizeof(float) * (size_t)n);
    if (!v) return -1;
    fa_rng r;
    fa_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) v[i] = fa_rng_uniform(&r, -0.5f, 0.5f);
    int t = fa_graph_tensor(g, name);
    if (t < 0) {
        free(v);
        return -1;
    }
    fa_tensor_set_shape(g->tensors[t], FA_DTYPE_FLOAT, rank, dims);
    fa_status st = fa_tensor_set_data(ctx, g->tensors[t], v, sizeof(float) * (size_t)n);
    g->tensors[t]->flags |= FA_TENSOR_INITIALIZER;
    free(v);
    return st ? -1 : t;
}

static bool node(fa_ctx *ctx, fa_graph *g, const char *name, const char *op, int n_in, const char *a, const char *b,
                 const char *c, const char *out)
{
    const char *ins[3] = {a, b, c}, *outs[1] = {out};
    return fa_graph_add_node(ctx, g, name, op, "", n_in, ins, 1, outs) != NULL;
}

/* The chain `kind` of about n nodes (a whole number of layers), prepared; NULL with the message on ctx. */
static fa_graph *chain(fa_ctx *ctx, const char *kind, int n, int elems)
{
    fa_graph *g = fa_graph_create(kind);
    if (!g || fa_graph_set_opset(ctx, g, "", 17)) goto fail;
    bool ew = !strcmp(kind, "ew"), mm = !strcmp(kind, "matmul");
    int64_t xd[4] = {1, elems}, xm[2] = {1, 16}, xc[4] = {1, 8, 4, 4};
    int x = fa_graph_tensor(g, "X");
    if (x < 0) goto fail;
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, ew ? 2 : mm ? 2 : 4, ew ? xd : mm ? xm : xc);
    if (fa_graph_add_input(ctx, g, x)) goto fail;
    char h[32] = "X", a[32], b[32], nm[48], w[32], bias[32];
    int per = ew ? 1 : mm ? 3 : 2, layers = (n + per - 1) / per;
    for (int k = 0; k < layers; k++) {
        const char *last = k == layers - 1 ? "Y" : NULL;
        if (ew) {
            static const char *const ops[4] = {"Relu", "Neg", "Add", "Abs"};
            const char *op = ops[k % 4];
            if (last) snprintf(a, sizeof a, "%s", last);
            else snprintf(a, sizeof a, "t%d", k);
            snprintf(nm, sizeof nm, "n%d/%s", k, op);
            if (!node(ctx, g, nm, op, k % 4 == 2 ? 2 : 1, h, "X", NULL, a)) goto fail;
        } else if (mm) {
            int64_t wd[2] = {16, 16}, bd[1] = {16};
            snprintf(w, sizeof w, "W%d", k);
            snprintf(bias, sizeof bias, "B%d", k);
            if (add_const(ctx, g, w, 2, wd, 2 * (uint64_t)k + 1) < 0 || add_const(ctx, g, bias, 1, bd, 2 * (uint64_t)k + 2) < 0)
                goto fail;
            snprintf(a, sizeof a, "mm%d", k);
            snprintf(b, sizeof b, "ad%d", k);
            snprintf(nm, sizeof nm, "l%d/MatMul", k);
            if (!node(ctx, g, nm, "MatMul", 2, h, w, NULL, a)) goto fail;
            snprintf(nm, sizeof nm, "l%d/Add", k);
            if (!node(ctx, g, nm, "Add", 2, a, bias, NULL, b)) goto fail;
            snprintf(a, sizeof a, "t%d", k);
            snprintf(nm, sizeof nm, "l%d/Relu", k);
            if (!node(ctx, g, nm, "Relu", 1, b, NULL, NULL, last ? last : a)) goto fail;
        } else {
            int64_t wd[4] = {8, 8, 1, 1}, bd[1] = {8};
            snprintf(w, sizeof w, "W%d", k);
            snprintf(bias, sizeof bias, "B%d", k);
            if (add_const(ctx, g, w, 4, wd, 2 * (uint64_t)k + 1) < 0 || add_const(ctx, g, bias, 1, bd, 2 * (uint64_t)k + 2) < 0)
                goto fail;
            snprintf(b, sizeof b, "cv%d", k);
            snprintf(nm, sizeof nm, "l%d/Conv", k);
            if (!node(ctx, g, nm, "Conv", 3, h, w, bias, b)) goto fail;
            snprintf(a, sizeof a, "t%d", k);
            snprintf(nm, sizeof nm, "l%d/Relu", k);
            if (!node(ctx, g, nm, "Relu", 1, b, NULL, NULL, last ? last : a)) goto fail;
        }
        snprintf(h, sizeof h, "%s", last ? last : a);
    }
    if (fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "Y"))) goto fail;
    fa_load_options lo = {0};
    if (fa_graph_prepare(ctx, g, &lo)) goto fail;
    return g;
fail:
    fa_graph_free(g);
    return NULL;
}

/* ---- the fused plan: every proposed cluster applied, the generated ones compiled ---- */

typedef struct fused {
    const fa_target_iface *t;
    fa_plan *p;
    int *ci;            /* plan indices of the generated clusters */
    fa_generated *gen;  /* [n_gen] */
    int n_gen;
    fa_graph *gf;
} fused;

static fa_status provide(void *user, fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_custom_kernel *out, bool *ok)
{
    const fused *f = user;
    (void)g;
    *ok = false;
    if (strcmp(n->op_type, "FusedKernel")) return FA_OK;
    int64_t cid = fa_node_attr_int(n, "cluster", -1);
    for (int k = 0; k < f->n_gen; k++)
        if (f->p->clusters[f->ci[k]].id == cid && f->gen[k].bin) {
            *ok = true;
            return fa_target_fused_kernel(ctx, f->t, f->gen[k].bin, out);
        }
    return fa_ctx_error(ctx, FA_ERR_INTERNAL, "no kernel for cluster %lld", (long long)cid);
}

static void fused_free(fused *f)
{
    for (int k = 0; f->gen && k < f->n_gen; k++)
        if (f->gen[k].same_as < 0) fa_target_fused_free(f->t, f->gen[k].bin);
    free(f->gen);
    free(f->ci);
    fa_graph_free(f->gf);
    fa_plan_free(f->p);
    memset(f, 0, sizeof *f);
}

static fa_status fused_make(fa_ctx *ctx, const fa_graph *g, fused *f)
{
    memset(f, 0, sizeof *f);
    fa_advise_options ao = fa_advise_options_default();
    ao.target = FA_TARGET_CPU;
    ao.no_gate = true;
    fa_status st = fa_target_resolve(ctx, FA_TARGET_CPU, &f->t);
    if (!st) st = fa_advise(ctx, g, NULL, &ao, &f->p);
    if (st) return st;
    int nc = f->p->n_clusters;
    int *ids = calloc((size_t)nc + 1, sizeof *ids);
    f->ci = calloc((size_t)nc + 1, sizeof *f->ci);
    f->gen = calloc((size_t)nc + 1, sizeof *f->gen);
    if (!ids || !f->ci || !f->gen) {
        free(ids);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < nc; i++)
        if (f->p->clusters[i].status == FA_CLUSTER_PROPOSED && fa_apply_needs_codegen(&f->p->clusters[i])) f->ci[f->n_gen++] = i;
    fa_fused_compile_options co = {0};
    if (f->n_gen) /* the target's default plan layout, as the fused executor below runs it */
        st = fa_apply_generate_batch(ctx, f->t, g, f->p, f->ci, f->n_gen, fa_cpu_blocked_layout(), &co, NULL, f->gen);
    int n_ids = 0;
    for (int i = 0; i < nc && !st; i++) {
        const fa_cluster *c = &f->p->clusters[i];
        if (c->status != FA_CLUSTER_PROPOSED) continue;
        bool ok = !fa_apply_needs_codegen(c);
        for (int k = 0; k < f->n_gen && !ok; k++) ok = f->ci[k] == i && f->gen[k].bin;
        if (ok) ids[n_ids++] = c->id;
    }
    if (!st && n_ids) st = fa_fused_graph(ctx, g, f->p, NULL, ids, n_ids, &f->gf);
    free(ids);
    return st;
}

/* ---- one measurement ---- */

typedef struct census {
    int kernels;
    int n_names;
    const char *name[MAX_NAMES];
    int count[MAX_NAMES];
} census;

static void on_kernel(void *user, const fa_node *n, const char *kernel)
{
    census *c = user;
    (void)n;
    c->kernels++;
    int i = 0;
    while (i < c->n_names && strcmp(c->name[i], kernel)) i++;
    if (i == c->n_names) {
        if (c->n_names == MAX_NAMES) return;
        c->name[c->n_names++] = kernel;
    }
    c->count[i]++;
}

static int measure(fa_ctx *ctx, const char *kind, const char *which, const fa_graph *g, fused *f, int threads, int iters,
                   double *wall, double *cpu)
{
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = threads};
    const fa_graph *run_g = g;
    if (f) {
        eo.blocked_layouts = true;
        eo.provider = provide;
        eo.provider_user = f;
        run_g = f->gf ? f->gf : g;
    }
    fa_exec *e = NULL;
    census c = {0};
    fa_exec_observer obs = {.user = &c, .kernel_begin = on_kernel};
    if (fa_exec_create(ctx, run_g, &eo, &e) || fa_exec_fill_inputs(ctx, e, 1) || fa_exec_run(ctx, e, &obs)) goto fail;
    int warm = iters / 10 > 20 ? iters / 10 : 20;
    for (int w = 0; w < warm; w++)
        if (fa_exec_run(ctx, e, NULL)) goto fail;
    for (int it = 0; it < iters; it++) {
        double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        if (fa_exec_run(ctx, e, NULL)) goto fail;
        cpu[it] = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
        wall[it] = now_ns(CLOCK_MONOTONIC) - w0;
    }
    double k = c.kernels > 0 ? c.kernels : 1;
    double med = quantile(wall, iters, 0.5), q1 = quantile(wall, iters, 0.25), q3 = quantile(wall, iters, 0.75);
    double cmed = quantile(cpu, iters, 0.5);
    printf("%-7s %-8s %7d %5d %7d %9.3f %9.3f %9.3f %9.3f %10.1f\n", kind, which, threads, g->n_topo, c.kernels,
           med / k / 1e3, q1 / k / 1e3, q3 / k / 1e3, cmed / k / 1e3, med / 1e3);
    printf("        kernels:");
    for (int i = 0; i < c.n_names; i++) printf(" %s x%d", c.name[i], c.count[i]);
    printf("\n");
    fflush(stdout);
    fa_exec_free(e);
    return 0;
fail:
    fprintf(stderr, "bench_dispatch: %s %s, %d threads: %s\n", kind, which, threads, fa_ctx_errmsg(ctx));
    fa_exec_free(e);
    return 1;
}

static bool listed(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n])) return true;
    return false;
}

int main(int argc, char **argv)
{
    int nodes = 300, elems = 256, iters = 2000, threads[8] = {1, 2}, n_threads = 2;
    const char *chains = "ew,matmul,conv", *execs = "unfused,fused";
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--nodes") && v) nodes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--elems") && v) elems = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && v) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--chain") && v) chains = argv[++i];
        else if (!strcmp(argv[i], "--executor") && v) execs = argv[++i];
        else if (!strcmp(argv[i], "--threads") && v) {
            n_threads = 0;
            for (char *p = argv[++i]; *p && n_threads < 8; p += strspn(p, ","))
                threads[n_threads++] = (int)strtol(p, &p, 10);
        } else {
            nodes = -1;
            break;
        }
    }
    bool bad = nodes < 1 || nodes > 100000 || elems < 1 || elems > (1 << 20) || iters < 10 || iters > MAX_ITERS || !n_threads;
    for (int i = 0; i < n_threads; i++) bad |= threads[i] < 1 || threads[i] > 1024;
    if (bad) {
        fprintf(stderr, "usage: bench_dispatch [--nodes N<=100000] [--elems E] [--iters 10..%d] [--threads 1,2] "
                        "[--chain ew,matmul,conv] [--executor unfused,fused]\n",
                MAX_ITERS);
        return 2;
    }
    double *wall = calloc((size_t)iters, sizeof *wall), *cpu = calloc((size_t)iters, sizeof *cpu);
    fa_ctx *ctx = fa_ctx_create();
    if (!wall || !cpu || !ctx) return 1;
    printf("# us per kernel: an iteration's wall time / the kernels it runs (median, IQR); cpu: the calling thread's\n");
    printf("%-7s %-8s %7s %5s %7s %9s %9s %9s %9s %10s\n", "chain", "executor", "threads", "nodes", "kernels", "us/kernel",
           "q1", "q3", "cpu_us/k", "iter_us");
    static const char *const kinds[3] = {"ew", "matmul", "conv"};
    int rc = 0;
    for (int kk = 0; kk < 3 && !rc; kk++) {
        if (!listed(chains, kinds[kk])) continue;
        fa_graph *g = chain(ctx, kinds[kk], nodes, elems);
        fused f = {0};
        bool want_fused = listed(execs, "fused");
        if (!g || (want_fused && fused_make(ctx, g, &f))) {
            fprintf(stderr, "bench_dispatch: %s: %s\n", kinds[kk], fa_ctx_errmsg(ctx));
            fused_free(&f);
            fa_graph_free(g);
            rc = 1;
            break;
        }
        for (int t = 0; t < n_threads && !rc; t++) {
            if (listed(execs, "unfused")) rc = measure(ctx, kinds[kk], "unfused", g, NULL, threads[t], iters, wall, cpu);
            if (!rc && want_fused) rc = measure(ctx, kinds[kk], "fused", g, &f, threads[t], iters, wall, cpu);
        }
        fused_free(&f);
        fa_graph_free(g);
    }
    free(wall);
    free(cpu);
    fa_ctx_free(ctx);
    return rc;
}
