/* bench/bench_matmul_bias — a fused MatMul whose first post-op adds a per-column bias (a Linear
 * layer's), on the products of ViT-B/16 (sequence 197) and BERT-base (sequence 128): the kernel as
 * the cpu target builds it (the bias as oneDNN's own bias argument: runtime/cpu/dnnl.c
 * matmul_bias_operand) against the same node with the bias as a binary post-op broadcast per
 * column (FA_MATMUL_BIAS_POST_OP=1, how it ran before), each with and without a GELU after it,
 * interleaved round by round, each round one traced iteration whose FusedMatMul kernel is timed.
 * Prints per shape the two medians (us), their ratio (< 1: the product's own bias is faster) and
 * the largest relative difference of the two outputs, then the sums.
 * Usage: bench_matmul_bias [--threads N] [--reps R]   (figures: bench/README.md "MatMul bias") */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/post_op.h"
#include "runtime/runtime.h"
#include "bench_conv_util.h"

typedef struct shape {
    int m, k, n, gelu;
} shape;

/* ViT-B/16 at 224² (197 tokens: the QKV projection, the MLP's two products) and BERT-base at
 * sequence 128 (its Q/K/V and output projections, the FFN's two products) */
static const shape k_shapes[] = {
    {197, 768, 2304, 0}, {197, 768, 3072, 1}, {197, 3072, 768, 0},
    {128, 768, 768, 0},  {128, 768, 3072, 1}, {128, 3072, 768, 0},
};

/* x [m, k] -> FusedMatMul w [k, n] with post-ops {add b [n]} (+ gelu_erf) -> y [m, n] */
static fa_graph *linear(fa_ctx *ctx, const shape *s)
{
    fa_graph *g = fa_graph_create("linear");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[2] = {s->m, s->k}, wd[2] = {s->k, s->n}, bd[1] = {s->n}, yd[2] = {s->m, s->n};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 2, xd);
    fa_graph_add_input(ctx, g, x);
    bench_add_const(ctx, g, "w", 2, wd, 1, "bench_matmul_bias");
    bench_add_const(ctx, g, "b", 1, bd, 2, "bench_matmul_bias");
    const char *ins[] = {"x", "w", "b"}, *outs[] = {"y"};
    fa_node *n = fa_graph_add_node(ctx, g, "fm", "FusedMatMul", "ai.fuse-advise", 3, ins, 1, outs);
    const fa_post_op po[] = {{FA_POST_OP_ADD, 0, 0, 2}, {FA_POST_OP_GELU_ERF, 0, 0, -1}};
    fa_post_ops_set_node(g, n, po, s->gelu ? 2 : 1);
    return bench_finish_graph(ctx, g, "y", 2, yd, "bench_matmul_bias");
}

static fa_exec *make(fa_ctx *ctx, const fa_graph *g, int threads, bool post_op)
{
    fa_exec_options o = {.target = FA_TARGET_CPU, .threads = threads};
    if (post_op) setenv("FA_MATMUL_BIAS_POST_OP", "1", 1);
    fa_exec *e = bench_exec(ctx, g, &o, "bench_matmul_bias");
    unsetenv("FA_MATMUL_BIAS_POST_OP");
    return e;
}

int main(int argc, char **argv)
{
    int threads = 2, reps = 41;
    if (!bench_args(argc, argv, &threads, &reps, NULL, "bench_matmul_bias")) return 2;
    unsetenv("FA_MATMUL_BIAS_POST_OP");
    fa_ctx *ctx = fa_ctx_create();
    double sum_a = 0, sum_b = 0;
    printf("| product | post-op bias us | own bias us | own / post-op | max rel diff | kernel |\n|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < sizeof k_shapes / sizeof k_shapes[0]; k++) {
        const shape *s = &k_shapes[k];
        fa_graph *g = linear(ctx, s);
        fa_exec *ep = make(ctx, g, threads, true), *eb = make(ctx, g, threads, false);
        bench_ab r = bench_ab_node(ctx, ep, eb, g, "fm", reps, "bench_matmul_bias");
        double ma = r.ma_ns / 1e3, mb = r.mb_ns / 1e3;
        sum_a += ma;
        sum_b += mb;
        printf("| %d x %d x %d%s | %.1f | %.1f | %.3f | %.1e | %s |\n", s->m, s->k, s->n, s->gelu ? " + gelu" : "", ma, mb,
               mb / ma, r.rel_diff, r.name_b);
        fa_exec_free(ep);
        fa_exec_free(eb);
        fa_graph_free(g);
    }
    printf("| sum | %.1f | %.1f | %.3f | | |\n", sum_a, sum_b, sum_b / sum_a);
    fa_ctx_free(ctx);
    return 0;
}
