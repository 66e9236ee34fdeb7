/* bench/bench_conv_swish — a fused convolution whose last post-op is a swish (SiLU), on
 * EfficientNet-B0's convolution shapes (torchvision's B0 at 224², batch 1 unless --batch): the
 * kernel as the cpu target builds it on an AVX-512 CPU (oneDNN's convolution, then the swish over
 * its output in place: runtime/cpu/dnnl.c swish_after_conv) against the same node with the swish
 * as oneDNN's eltwise post-op (fa_dnnl_swish_post_op_force), both on the fused plan's blocked
 * executor (nChw16c), interleaved round by round, each round one traced iteration whose
 * FusedConv kernel is timed (the graph's boundary reorders left out). Prints per shape the two
 * medians (ms), their ratio (< 1: the swish after the convolution is faster) and the largest
 * relative difference of the two outputs, then the sums.
 * Usage: bench_conv_swish [--threads N] [--reps R] [--batch B]   (figures: bench/README.md
 *        "Swish after the convolution") */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/collector.h"
#include "graph/graph.h"
#include "graph/post_op.h"
#include "graph/vmath.h"
#include "runtime/runtime-impl.h"
#include "runtime/runtime.h"
#include "bench_conv_util.h"

typedef struct shape {
    int cin, cout, hw, k, stride, depthwise;
} shape;

/* EfficientNet-B0 (Tan and Le 2019, torchvision's layout): the stem, each MBConv's depthwise
 * convolution and its 1x1 expansion, and the head, one row per distinct shape */
static const shape k_shapes[] = {
    {3, 32, 224, 3, 2, 0},      {32, 32, 112, 3, 1, 1},    {16, 96, 112, 1, 1, 0},   {96, 96, 112, 3, 2, 1},
    {24, 144, 56, 1, 1, 0},     {144, 144, 56, 3, 1, 1},   {144, 144, 56, 5, 2, 1},  {40, 240, 28, 1, 1, 0},
    {240, 240, 28, 5, 1, 1},    {240, 240, 28, 3, 2, 1},   {80, 480, 14, 1, 1, 0},   {480, 480, 14, 3, 1, 1},
    {480, 480, 14, 5, 1, 1},    {112, 672, 14, 1, 1, 0},   {672, 672, 14, 5, 1, 1},  {672, 672, 14, 5, 2, 1},
    {192, 1152, 7, 1, 1, 0},    {1152, 1152, 7, 5, 1, 1},  {1152, 1152, 7, 3, 1, 1}, {320, 1280, 7, 1, 1, 0},
};

/* x [B, cin, hw, hw] -> FusedConv (bias, pads k/2, the shape's stride and group) + swish -> y */
static fa_graph *conv_swish(fa_ctx *ctx, const shape *s, int batch)
{
    fa_graph *g = fa_graph_create("conv_swish");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t oh = (s->hw + 2 * (s->k / 2) - s->k) / s->stride + 1;
    int64_t xd[4] = {batch, s->cin, s->hw, s->hw}, wd[4] = {s->cout, s->depthwise ? 1 : s->cin, s->k, s->k},
            bd[1] = {s->cout}, yd[4] = {batch, s->cout, oh, oh}, pads[4] = {s->k / 2, s->k / 2, s->k / 2, s->k / 2},
            strides[2] = {s->stride, s->stride};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    bench_add_const(ctx, g, "w", 4, wd, 1, "bench_conv_swish");
    bench_add_const(ctx, g, "b", 1, bd, 2, "bench_conv_swish");
    const char *ins[] = {"x", "w", "b"}, *outs[] = {"y"};
    fa_node *n = fa_graph_add_node(ctx, g, "fc", "FusedConv", "ai.fuse-advise", 3, ins, 1, outs);
    fa_node_add_attr_ints(g, n, "pads", pads, 4);
    fa_node_add_attr_ints(g, n, "strides", strides, 2);
    fa_node_add_attr_int(g, n, "group", s->depthwise ? s->cin : 1);
    const fa_post_op po[] = {{FA_POST_OP_SWISH, 1.0f, 0, -1}};
    fa_post_ops_set_node(g, n, po, 1);
    return bench_finish_graph(ctx, g, "y", 4, yd, "bench_conv_swish");
}

static fa_exec *make(fa_ctx *ctx, const fa_graph *g, int threads, bool post_op)
{
    fa_exec_options o = {.target = FA_TARGET_CPU, .threads = threads, .blocked_layouts = true};
    fa_dnnl_swish_post_op_force(post_op);
    fa_exec *e = bench_exec(ctx, g, &o, "bench_conv_swish");
    fa_dnnl_swish_post_op_force(false);
    return e;
}

int main(int argc, char **argv)
{
    int threads = 2, reps = 41, batch = 1;
    if (!bench_args(argc, argv, &threads, &reps, &batch, "bench_conv_swish")) return 2;
    if (!fa_vmath512_available()) printf("# no AVX-512F: both columns are oneDNN's post-op\n");
    fa_ctx *ctx = fa_ctx_create();
    double sum_a = 0, sum_b = 0;
    printf("| convolution | post-op ms | after ms | after / post-op | max rel diff | kernel |\n|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < sizeof k_shapes / sizeof k_shapes[0]; k++) {
        const shape *s = &k_shapes[k];
        fa_graph *g = conv_swish(ctx, s, batch);
        fa_exec *ep = make(ctx, g, threads, true), *ea = make(ctx, g, threads, false);
        bench_ab r = bench_ab_node(ctx, ep, ea, g, "fc", reps, "bench_conv_swish");
        double ma = r.ma_ns / 1e6, mb = r.mb_ns / 1e6;
        sum_a += ma;
        sum_b += mb;
        printf("| %s %d -> %d, %d², k%d s%d | %.3f | %.3f | %.2f | %.1e | %s |\n", s->depthwise ? "depthwise" : s->k == 1 ? "1x1" : "dense",
               s->cin, s->cout, s->hw, s->k, s->stride, ma, mb, mb / ma, r.rel_diff, r.name_b);
        fa_exec_free(ep);
        fa_exec_free(ea);
        fa_graph_free(g);
    }
    printf("| sum | %.3f | %.3f | %.2f | | |\n", sum_a, sum_b, sum_b / sum_a);
    fa_ctx_free(ctx);
    return 0;
}
