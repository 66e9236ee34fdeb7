/* bench/bench_dwconv — the depthwise convolutions of MobileNetV2 (ReLU6) and EfficientNet-B0
 * (swish) at batch 1 (torchvision's layouts, 224²), each as one FusedConv with its epilogue on the
 * fused plan's blocked executor (nChw16c): our kernel with the epilogue in registers
 * (FA_CONV_TACTIC_OWN, runtime/cpu/dwconv.h) against oneDNN's (FA_CONV_TACTIC_DIRECT: jit_dw, its
 * ReLU6 as a post-op, the swish after it on an AVX-512 CPU as the executor runs it), interleaved
 * round by round, each round one traced iteration whose FusedConv kernel is timed (the graph's
 * boundary reorders left out). Prints per shape the two medians (ms), their ratio (< 1: ours is
 * faster) and the largest relative difference of the two outputs, then the sums.
 * Usage: bench_dwconv [--threads N] [--reps R]   (figures: bench/README.md "Depthwise") */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/collector.h"
#include "graph/graph.h"
#include "graph/post_op.h"
#include "runtime/cpu/dwconv.h"
#include "runtime/runtime.h"
#include "bench_conv_util.h"

typedef struct shape {
    int c, hw, k, stride;
    fa_post_op_kind act;
} shape;

/* MobileNetV2 (Sandler et al. 2018): each inverted residual's depthwise 3x3 + ReLU6;
 * EfficientNet-B0 (Tan and Le 2019): each MBConv's depthwise 3x3 / 5x5 + swish */
static const shape k_shapes[] = {
    {32, 112, 3, 1, FA_POST_OP_CLIP},  {96, 112, 3, 2, FA_POST_OP_CLIP},  {144, 56, 3, 1, FA_POST_OP_CLIP},
    {144, 56, 3, 2, FA_POST_OP_CLIP},  {192, 28, 3, 1, FA_POST_OP_CLIP},  {192, 28, 3, 2, FA_POST_OP_CLIP},
    {384, 14, 3, 1, FA_POST_OP_CLIP},  {576, 14, 3, 1, FA_POST_OP_CLIP},  {576, 14, 3, 2, FA_POST_OP_CLIP},
    {960, 7, 3, 1, FA_POST_OP_CLIP},   {32, 112, 3, 1, FA_POST_OP_SWISH}, {96, 112, 3, 2, FA_POST_OP_SWISH},
    {144, 56, 3, 1, FA_POST_OP_SWISH}, {144, 56, 5, 2, FA_POST_OP_SWISH}, {240, 28, 5, 1, FA_POST_OP_SWISH},
    {240, 28, 3, 2, FA_POST_OP_SWISH}, {480, 14, 3, 1, FA_POST_OP_SWISH}, {480, 14, 5, 1, FA_POST_OP_SWISH},
    {672, 14, 5, 1, FA_POST_OP_SWISH}, {672, 14, 5, 2, FA_POST_OP_SWISH}, {1152, 7, 5, 1, FA_POST_OP_SWISH},
    {1152, 7, 3, 1, FA_POST_OP_SWISH},
};

/* x [1, c, hw, hw] -> FusedConv (depthwise, bias, pads k/2, the shape's stride) + act -> y */
static fa_graph *dw_graph(fa_ctx *ctx, const shape *s)
{
    fa_graph *g = fa_graph_create("dw");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t oh = (s->hw + 2 * (s->k / 2) - s->k) / s->stride + 1;
    int64_t xd[4] = {1, s->c, s->hw, s->hw}, wd[4] = {s->c, 1, s->k, s->k}, bd[1] = {s->c}, yd[4] = {1, s->c, oh, oh},
            pads[4] = {s->k / 2, s->k / 2, s->k / 2, s->k / 2}, strides[2] = {s->stride, s->stride};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    bench_add_const(ctx, g, "w", 4, wd, 1, "bench_dwconv");
    bench_add_const(ctx, g, "b", 1, bd, 2, "bench_dwconv");
    const char *ins[] = {"x", "w", "b"}, *outs[] = {"y"};
    fa_node *n = fa_graph_add_node(ctx, g, "fc", "FusedConv", "ai.fuse-advise", 3, ins, 1, outs);
    fa_node_add_attr_ints(g, n, "pads", pads, 4);
    fa_node_add_attr_ints(g, n, "strides", strides, 2);
    fa_node_add_attr_int(g, n, "group", s->c);
    const fa_post_op po[] = {{s->act, s->act == FA_POST_OP_SWISH ? 1.0f : 0.0f, s->act == FA_POST_OP_CLIP ? 6.0f : 0.0f, -1}};
    fa_post_ops_set_node(g, n, po, 1);
    return bench_finish_graph(ctx, g, "y", 4, yd, "bench_dwconv");
}

static fa_exec *make(fa_ctx *ctx, const fa_graph *g, int threads, fa_conv_tactic t)
{
    fa_exec_options o = {.target = FA_TARGET_CPU, .threads = threads, .blocked_layouts = true,
                         .plan_layout = FA_LAYOUT_NCHW16C, .conv_tactic = t};
    return bench_exec(ctx, g, &o, "bench_dwconv");
}

int main(int argc, char **argv)
{
    int threads = 2, reps = 41;
    if (!bench_args(argc, argv, &threads, &reps, NULL, "bench_dwconv")) return 2;
    if (!fa_dwconv_available()) {
        printf("# no AVX-512F: the depthwise kernel is never used here\n");
        return 0;
    }
    fa_ctx *ctx = fa_ctx_create();
    double sum_a = 0, sum_b = 0;
    printf("| depthwise | epilogue | oneDNN ms | ours ms | ours / oneDNN | max rel diff |\n|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < sizeof k_shapes / sizeof k_shapes[0]; k++) {
        const shape *s = &k_shapes[k];
        fa_graph *g = dw_graph(ctx, s);
        fa_exec *ed = make(ctx, g, threads, FA_CONV_TACTIC_DIRECT), *eo = make(ctx, g, threads, FA_CONV_TACTIC_OWN);
        bench_ab r = bench_ab_node(ctx, ed, eo, g, "fc", reps, "bench_dwconv");
        if (!strstr(r.name_b, "depthwise")) fprintf(stderr, "bench_dwconv: shape %zu: ours not built ('%s')\n", k, r.name_b);
        double ma = r.ma_ns / 1e6, mb = r.mb_ns / 1e6;
        sum_a += ma;
        sum_b += mb;
        printf("| %d, %d², %dx%d s%d | %s | %.3f | %.3f | %.2f | %.1e |\n", s->c, s->hw, s->k, s->k, s->stride,
               s->act == FA_POST_OP_CLIP ? "relu6" : "swish", ma, mb, mb / ma, r.rel_diff);
        fa_exec_free(ed);
        fa_exec_free(eo);
        fa_graph_free(g);
    }
    printf("| sum | | %.3f | %.3f | %.2f | |\n", sum_a, sum_b, sum_b / sum_a);
    fa_ctx_free(ctx);
    return 0;
}
