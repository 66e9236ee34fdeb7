/* bench/bench_dnnl_ops — ours vs oneDNN, op by op, on the shapes real models give: for every
 * depthwise/grouped Conv, MaxPool, AveragePool, GlobalAveragePool/GlobalMaxPool, Softmax,
 * LogSoftmax and LayerNormalization node of each model (distinct op + shapes + attributes once),
 * times our kernel (the registry's reference kernel; for a grouped Conv the plain-NCHW oneDNN
 * gemm convolution runtime/cpu/dnnl.c gives it) and the oneDNN kernel of runtime/cpu/dnnl_ops.c
 * (forced: its own faster-than-ours choice bypassed), interleaved, and prints medians, the
 * ratio ours / oneDNN (> 1: oneDNN faster), the max relative difference of the two outputs, and
 * a geometric mean of the ratios per op. The executor's choice (dnnl_op_wins in dnnl_ops.c)
 * follows these figures (bench/README.md).
 * Usage: bench_dnnl_ops [--threads N] [--reps R] [--batch B] MODEL...  (zoo:NAME or .onnx;
 *        default zoo:resnet50 zoo:mobilenetv2 zoo:bert-layer zoo:gpt2-block) */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "runtime/runtime-impl.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool wanted(const fa_graph *g, const fa_node *n)
{
    static const char *const ops[] = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Softmax", "LogSoftmax",
                                      "LayerNormalization"};
    if (*n->domain || n->folded) return false;
    if (!strcmp(n->op_type, "Conv")) return fa_node_attr_int(n, "group", 1) > 1;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(n->op_type, ops[i])) return true;
    (void)g;
    return false;
}

/* "Op in-dims -> out-dims [attrs]" as the dedup key and the row label. */
static void node_key(const fa_graph *g, const fa_node *n, char *buf, size_t cap)
{
    size_t w = (size_t)snprintf(buf, cap, "%s", n->op_type);
    const fa_tensor *x = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0);
    char s[128];
    if (x && w < cap) w += (size_t)snprintf(buf + w, cap - w, " [%s]", fa_tensor_shape_str(x, s, sizeof s));
    if (y && w < cap) w += (size_t)snprintf(buf + w, cap - w, "->[%s]", fa_tensor_shape_str(y, s, sizeof s));
    for (int a = 0; a < n->n_attrs && w < cap; a++) {
        const fa_attr *at = &n->attrs[a];
        if (at->type == FA_ATTR_INT) w += (size_t)snprintf(buf + w, cap - w, " %s=%lld", at->name, (long long)at->i);
        else if (at->type == FA_ATTR_INTS) {
            w += (size_t)snprintf(buf + w, cap - w, " %s=", at->name);
            for (int k = 0; k < at->n && w < cap; k++) w += (size_t)snprintf(buf + w, cap - w, "%s%lld", k ? "," : "", (long long)at->ints[k]);
        }
    }
}

typedef struct op_sum {
    const char *op;
    double log_ratio;
    int n, wins;
} op_sum;

int main(int argc, char **argv)
{
    int threads = 2, reps = 31, batch = 0;
    const char *models[32];
    int n_models = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (n_models < 32) models[n_models++] = argv[i];
    }
    if (!n_models) {
        static const char *const d[] = {"zoo:resnet50", "zoo:mobilenetv2", "zoo:bert-layer", "zoo:gpt2-block"};
        for (int i = 0; i < 4; i++) models[n_models++] = d[i];
    }
    if (reps < 3) reps = 3;
    omp_set_num_threads(threads);
    fa_ctx *ctx = fa_ctx_create();
    char keys[512][256];
    int n_keys = 0;
    op_sum sums[16] = {0};
    int n_sums = 0;
    uint64_t *t_ours = malloc(sizeof(uint64_t) * (size_t)reps), *t_dnnl = malloc(sizeof(uint64_t) * (size_t)reps);
    printf("# bench_dnnl_ops: %s, threads %d, %d interleaved repetitions per kernel, medians in ms\n", fa_dnnl_version(), threads, reps);
    printf("%-16s %-84s %9s %9s %7s %9s %s\n", "model", "op [in]->[out] attrs", "ours", "oneDNN", "ratio", "max rel", "oneDNN impl");
    for (int m = 0; m < n_models; m++) {
        fa_load_options lo = {.batch = batch};
        fa_graph *g = NULL;
        if (fa_graph_load(ctx, models[m], &lo, &g)) {
            fprintf(stderr, "bench_dnnl_ops: %s\n", fa_ctx_errmsg(ctx));
            return 1;
        }
        fa_rng rng;
        fa_rng_seed(&rng, 1234);
        for (int k = 0; k < g->n_topo; k++) {
            const fa_node *n = g->nodes[g->topo[k]];
            if (!wanted(g, n)) continue;
            char key[256];
            node_key(g, n, key, sizeof key);
            bool seen = false;
            for (int i = 0; i < n_keys && !seen; i++) seen = !strcmp(keys[i], key);
            if (seen || n_keys >= 512) continue;
            snprintf(keys[n_keys++], sizeof keys[0], "%s", key);
            fa_kernel ours = {0}, lib = {0};
            bool h1 = false, h2 = false;
            bool conv = !strcmp(n->op_type, "Conv");
            if (fa_dnnl_ops_kernel_create(ctx, g, n, true, &lib, &h2) || !h2) {
                printf("%-16s %-84.84s  oneDNN declines (our kernel runs)\n", models[m], key);
                fa_ctx_clear(ctx);
                continue;
            }
            if (conv && (fa_dnnl_kernel_create(ctx, g, n, threads, FA_CONV_TACTIC_DIRECT, &ours, &h1) || !h1)) {
                fa_ctx_clear(ctx);
                if (lib.destroy) lib.destroy(&lib);
                continue;
            }
            fa_value in[8] = {0}, o1[4] = {0}, o2[4] = {0};
            int n_in = n->n_inputs < 8 ? n->n_inputs : 8, n_out = n->n_outputs < 4 ? n->n_outputs : 4;
            for (int i = 0; i < n_in; i++) {
                const fa_tensor *t = fa_graph_in(g, n, i);
                if (!t) continue;
                in[i].dtype = t->dtype;
                in[i].rank = t->rank;
                memcpy(in[i].dims, t->dims, sizeof in[i].dims);
                if ((t->flags & FA_TENSOR_CONST) && t->data) {
                    in[i].data = t->data;
                    continue;
                }
                int64_t ne = fa_value_numel(&in[i]);
                float *p = aligned_alloc(64, ((size_t)ne * 4 + 63) / 64 * 64);
                for (int64_t e = 0; e < ne; e++) p[e] = fa_rng_uniform(&rng, -4, 4);
                in[i].data = p;
            }
            for (int o = 0; o < n_out; o++) {
                const fa_tensor *t = fa_graph_out(g, n, o);
                if (!t) continue;
                fa_value v = {.dtype = t->dtype, .rank = t->rank};
                memcpy(v.dims, t->dims, sizeof v.dims);
                size_t b = ((size_t)fa_value_numel(&v) * fa_dtype_size(t->dtype) + 63) / 64 * 64;
                o1[o] = o2[o] = v;
                o1[o].data = aligned_alloc(64, b ? b : 64);
                o2[o].data = aligned_alloc(64, b ? b : 64);
                memset(o1[o].data, 0, b);
                memset(o2[o].data, 0, b);
            }
            fa_status st = FA_OK;
            for (int r = -3; r < reps && !st; r++) { /* 3 warm-up rounds, then interleaved pairs */
                uint64_t t0 = fa_now_ns();
                st = conv ? ours.run(ctx, &ours, n, in, n_in, o1, n_out, threads) : n->op->kernel(ctx, n, in, n_in, o1, n_out, threads);
                uint64_t t1 = fa_now_ns();
                if (!st) st = lib.run(ctx, &lib, n, in, n_in, o2, n_out, threads);
                uint64_t t2 = fa_now_ns();
                if (r >= 0) t_ours[r] = t1 - t0, t_dnnl[r] = t2 - t1;
            }
            if (st) {
                printf("%-16s %-84.84s  failed: %s\n", models[m], key, fa_ctx_errmsg(ctx));
                fa_ctx_clear(ctx);
            } else {
                qsort(t_ours, (size_t)reps, sizeof *t_ours, cmp_u64);
                qsort(t_dnnl, (size_t)reps, sizeof *t_dnnl, cmp_u64);
                double mo = t_ours[reps / 2] / 1e6, md = t_dnnl[reps / 2] / 1e6, ratio = mo / md;
                const float *a = o1[0].data, *b = o2[0].data;
                double mx = 0, ref = 0;
                for (int64_t e = 0; e < fa_value_numel(&o1[0]); e++) {
                    double d = fabs((double)a[e] - b[e]);
                    if (d > mx || isnan(d)) mx = d;
                    if (fabs(a[e]) > ref) ref = fabs(a[e]);
                }
                printf("%-16s %-84.84s %9.4f %9.4f %7.2f %9.2e %s\n", models[m], key, mo, md, ratio, mx / (ref > 1e-12 ? ref : 1e-12),
                       lib.impl ? lib.impl : "?");
                int si = 0;
                while (si < n_sums && strcmp(sums[si].op, n->op_type)) si++;
                if (si == n_sums && n_sums < 16) sums[n_sums++] = (op_sum){n->op_type, 0, 0, 0};
                if (si < n_sums) {
                    sums[si].log_ratio += log(ratio);
                    sums[si].n++;
                    sums[si].wins += ratio > 1.0;
                }
            }
            fflush(stdout);
            for (int i = 0; i < n_in; i++)
                if (in[i].data && !(fa_graph_in(g, n, i)->flags & FA_TENSOR_CONST)) free(in[i].data);
            for (int o = 0; o < n_out; o++) free(o1[o].data), free(o2[o].data);
            if (ours.destroy) ours.destroy(&ours);
            if (lib.destroy) lib.destroy(&lib);
        }
        /* keep g: op_sum.op points into it until the summary is printed */
    }
    printf("\n%-20s %6s %10s %s\n", "op", "shapes", "geomean", "oneDNN faster in");
    for (int i = 0; i < n_sums; i++)
        printf("%-20s %6d %10.2f %d of %d\n", sums[i].op, sums[i].n, exp(sums[i].log_ratio / sums[i].n), sums[i].wins, sums[i].n);
    free(t_ours);
    free(t_dnnl);
    fa_ctx_free(ctx);
    return 0;
}
