/* graph/post_op — an epilogue's post-ops as typed values {kind, alpha, beta, operand}: built once
 * by the advisor (fa_cluster.post_ops), written by the applier onto the fused node as numeric
 * attributes, read back by the targets' library kernels (runtime/cpu/dnnl.c maps each kind to
 * a oneDNN algorithm in one table; runtime/cuda_epilogue.c to a cuBLASLt/cuDNN epilogue). */
#ifndef FA_GRAPH_POST_OP_H
#define FA_GRAPH_POST_OP_H

#include <stdbool.h>
#include <stddef.h>

#include "graph/graph.h"

/* X(ID, NAME, BINARY): FA_POST_OP_##ID, its readable name (plan.json, why-nots), whether it takes
 * an operand. Unary kinds and their parameters (the ONNX op each comes from, onnx/docs/Operators.md):
 *   RELU; LEAKY_RELU alpha (LeakyRelu); SIGMOID; TANH; ELU alpha; HARD_SWISH; MISH; SOFTPLUS;
 *   GELU_ERF (Gelu, or its erf-form subgraph); GELU_TANH (Gelu approximate="tanh", or its
 *   subgraph); CLIP [alpha, beta] = [min, max]; SWISH alpha: x·sigmoid(alpha·x) (SiLU: 1);
 *   LINEAR alpha·x + beta; ABS; EXP; SQRT.
 * Binary kinds: out = out OP operand, the operand numpy-broadcast to the output:
 *   ADD, SUB, MUL, DIV, MAX, MIN.
 * Not stored in the database; plan.json writes the names. */
#define FA_POST_OP_KINDS(X)        \
    X(RELU, "relu", false)           \
    X(LEAKY_RELU, "leaky_relu", false) \
    X(SIGMOID, "sigmoid", false)     \
    X(TANH, "tanh", false)           \
    X(ELU, "elu", false)             \
    X(HARD_SWISH, "hardswish", false) \
    X(MISH, "mish", false)           \
    X(SOFTPLUS, "softplus", false)   \
    X(GELU_ERF, "gelu_erf", false)   \
    X(GELU_TANH, "gelu_tanh", false) \
    X(CLIP, "clip", false)           \
    X(SWISH, "swish", false)         \
    X(LINEAR, "linear", false)       \
    X(ABS, "abs", false)             \
    X(EXP, "exp", false)             \
    X(SQRT, "sqrt", false)           \
    X(ADD, "add", true)              \
    X(SUB, "sub", true)              \
    X(MUL, "mul", true)              \
    X(DIV, "div", true)              \
    X(MAX, "max", true)              \
    X(MIN, "min", true)

typedef enum fa_post_op_kind {
#define FA_POST_OP_ENUM_(ID, NAME, BIN) FA_POST_OP_##ID,
    FA_POST_OP_KINDS(FA_POST_OP_ENUM_)
#undef FA_POST_OP_ENUM_
    FA_POST_OP_COUNT
} fa_post_op_kind;

typedef struct fa_post_op {
    fa_post_op_kind kind;
    float alpha, beta; /* the kind's parameters (above); 0 when unused */
    int operand;       /* binary kinds: the operand — in fa_cluster.post_ops a tensor id of the
                          planned graph; on a fused node (fa_post_ops_of_node) the node's input
                          index. -1 for unary kinds */
} fa_post_op;

/* "relu", "clip", ...; "?" outside the table. */
const char *fa_post_op_name(fa_post_op_kind k);
bool fa_post_op_is_binary(fa_post_op_kind k);
/* The kind named `name` (fa_post_op_name's); false when none is. */
bool fa_post_op_kind_of_name(const char *name, fa_post_op_kind *out);
/* A readable rendering: "relu", "leaky_relu(0.1)", "clip(0,6)", "swish(1)", "linear(1,1)",
 * "add" (the operand is not named: the caller knows its tensor). snprintf's convention. */
int fa_post_op_format(const fa_post_op *op, char *buf, size_t cap);

/* The attribute form on a fused node n of g (ai.fuse-advise Fused{Conv,ConvTranspose,MatMul,
 * Gemm}): post_op_kinds INTS (fa_post_op_kind values), post_op_alpha and post_op_beta FLOATS,
 * post_op_operand INTS (the input index of a binary kind's operand, -1 otherwise), all of n_ops
 * elements. Nothing is written for n_ops 0. false when out of memory. */
bool fa_post_ops_set_node(fa_graph *g, fa_node *n, const fa_post_op *ops, int n_ops);
/* The post-ops of fused node n into out[0..cap): their count (0 when it has none), or -1 with a
 * sentence naming the node and the attribute in why when they are malformed (lengths differ, a
 * kind outside the table, a binary operand that is not one of n's inputs, more than cap). */
int fa_post_ops_of_node(const fa_node *n, fa_post_op *out, int cap, char *why, size_t why_cap);

#endif
