/* runtime/layout — where a target that keeps blocked activation layouts puts each tensor, and
 * the reorders its executor runs as kernels of their own (runtime/layout.c). */
#ifndef FA_RUNTIME_LAYOUT_H
#define FA_RUNTIME_LAYOUT_H

#include "runtime/runtime.h"

/* How a reorder kernel shows in a trace, no graph node of its own (node id -1): op type
 * FA_REORDER_OP, named FA_REORDER_NAME_FMT of the tensor it moves ("reorder(conv1_out)"); the
 * applier finds the reorders of a fused node's outputs by it (applier/inmodel.c). */
#define FA_REORDER_OP "Reorder"
#define FA_REORDER_NAME_FMT "reorder(%s)"

/* One reorder the executor runs as a kernel of its own (the target's reorder_kernel): tensor
 * `tensor` from layout `from` to `to`, before node `consumer` reads it as input `input`
 * (consumer -1: graph output `input`). */
typedef struct fa_reorder {
    int tensor;
    int consumer;
    int input;
    fa_layout from, to;
} fa_reorder;

typedef struct fa_layout_plan {
    fa_layout *layout;       /* by tensor id: the layout its producer writes (for a graph input
                                the layout it is handed in; PLAIN for constants) */
    fa_reorder *reorders;    /* one per (tensor, target layout), in topological order */
    int n_reorders;
} fa_layout_plan;

/* Whether node n reads its input i in the node's own layout (the rest are read PLAIN): input 0,
 * and every other non-constant input with the output's rank and dims (a residual Add's second
 * operand, a fused conv's residual) — for Concat, dims equal but on axis 1. Weights, biases and
 * broadcast operands are PLAIN. */
bool fa_layout_input_follows(const fa_graph *g, const fa_node *n, int i);
/* The broadcast rule of fa_layout_input_follows: operand x of an elementwise kernel writing y is
 * read in the kernel's layout when it is a non-constant activation of y's rank (>= 3) with y's
 * channels (dim 1) and every other dim y's or 1 (the [N, C, 1, 1] scale of a squeeze-excitation
 * Mul: a channel-blocked layout blocks its channels as y's); else it is read PLAIN. Broadcast ops
 * and generated kernels (FusedKernel nodes, codegen/'s blocked emitter) both use it. */
bool fa_layout_operand_follows(const fa_tensor *x, const fa_tensor *y);
/* The layout a generated elementwise kernel reading tensors inputs[0..n_inputs) and writing
 * outputs[0..n_outputs) of g is emitted for (fa_kernel_desc.layout), given the layouts the
 * target's plan gives g's tensors (tensor_layout by tensor id, fa_layout_plan_make's; NULL: a
 * target without layouts): the layout of its first following input (fa_layout_operand_follows)
 * that the plan keeps blocked, so that the kernel sits between the oneDNN primitives around it
 * with no reorder (a chain continues its producer's layout whatever it weighs: the executor's
 * byte rule, fa_layout_continues, places library and reference kernels); PLAIN when none is, or
 * when the kernel writes more than one output or one that is not a rank-4 float tensor. */
fa_layout fa_layout_of_generated(const fa_graph *g, const fa_layout *tensor_layout, const int *inputs, int n_inputs,
                                 const int *outputs, int n_outputs);
/* The layouts of prepared graph g given each node's layout (node_layout, by node id): node n's
 * kernel reads its following inputs (fa_layout_input_follows) and writes its output 0 in
 * node_layout[n->id], every other input and output PLAIN — but input 0 in node_in0[n->id] when
 * node_in0 is given (a first convolution reading a plain image and writing the blocked layout).
 * Boundaries: graph input i is handed in in_layout[i] and graph output i is left in
 * out_layout[i] (by index into g->inputs / g->outputs; either NULL: all PLAIN, the whole-model
 * default); constants are PLAIN. Where a tensor's layout differs from what a consumer (or the
 * graph boundary) reads, a reorder; consumers wanting the same layout share one. Free with
 * fa_layout_plan_free. FA_ERR_NOMEM; FA_ERR_INTERNAL for a layout out of range. */
fa_status fa_layout_plan_of(fa_ctx *ctx, const fa_graph *g, const fa_layout *node_layout, const fa_layout *node_in0,
                            const fa_layout *in_layout, const fa_layout *out_layout, fa_layout_plan *out);
/* Whether node n starts a blocked region (a convolution: Conv, FusedConv — the layout is what
 * makes it fast); every other node takes its preferred layout only when an activation it reads
 * (fa_layout_input_follows) is already in it, so a plain op between plain ops never pays two
 * reorders. The cpu executor and fa_layout_plan_make both place nodes so. */
bool fa_layout_starts_region(const fa_node *n);
/* Whether node n, which does not start a region and whose kernel takes layout l (its preferred,
 * not PLAIN), continues l — the rule the cpu executor and fa_layout_plan_make share. It continues
 * when an activation it reads (fa_layout_input_follows) is already in l (tensor_layout, by tensor
 * id: what each producer writes so far) and the reorders that costs are no more than running
 * plain costs, in bytes moved: continuing reorders its plain following inputs into l, and its
 * output back to PLAIN when a consumer reads it plain (preferred(g, consumer, plan) PLAIN, a
 * position that does not follow, or a graph output left in another layout: out_layout by index into
 * g->outputs, NULL all PLAIN); running plain reorders its inputs held in l
 * to PLAIN, and its output into l when a consumer starts a region. Before 2026-12-07 an op
 * continued whenever one input was in l: ShuffleNetV2's channel-shuffle Concat, reading one half
 * plain (a Slice) and one in nhwc (a convolution) with a Reshape after it, reordered the plain
 * half in and the whole output out (1.5 C) where running plain reorders one half (0.5 C). */
bool fa_layout_continues(const fa_graph *g, const fa_node *n, fa_layout l, fa_layout plan, const fa_layout *tensor_layout,
                         const fa_layout *out_layout, fa_layout (*preferred)(const fa_graph *g, const fa_node *n, fa_layout plan));
/* fa_layout_plan_of with node_layout[n] = fa_target_preferred_layout(t, g, n, plan) where n starts
 * a region or continues one (fa_layout_starts_region), PLAIN otherwise — the placement of an
 * executor with fa_exec_options.plan_layout `plan` (resolved: the target's default is the caller's
 * to look up, fa_target_plan_layouts), short of a kernel that declines its layout at creation (a
 * target without layouts, or plan PLAIN: every tensor PLAIN, no reorder). */
fa_status fa_layout_plan_make(fa_ctx *ctx, const fa_target_iface *t, const fa_graph *g, fa_layout plan,
                              fa_layout_plan *out);
void fa_layout_plan_free(fa_layout_plan *p);

/* The layout t's kernel for node n reads its following inputs and writes its output 0 in, when
 * the executor keeps layouts with plan layout `plan`; PLAIN for a target without layouts
 * (FA_TARGET_CAP_LAYOUTS) or plan PLAIN. */
fa_layout fa_target_preferred_layout(const fa_target_iface *t, const fa_graph *g, const fa_node *n, fa_layout plan);

#endif
