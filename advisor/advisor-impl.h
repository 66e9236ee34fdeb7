/* advisor-impl — private helpers shared by advisor.c (planning, cost, why-not, store) and
 * patterns.c (BN folding math, post-op mapping, decomposed GELU recognition). */
#ifndef FA_ADVISOR_IMPL_H
#define FA_ADVISOR_IMPL_H

#include "advisor.h"

/* Value of a scalar (numel 1) float constant tensor, or of a scalar computed from constants by
 * CastLike/Cast/Sqrt/Mul/Div/Add/Sub/Reciprocal/Neg nodes (the corpus *_expanded GELU builds its
 * constants that way). False when not such a value. */
bool fa_adv_scalar_value(const fa_graph *g, int tid, double *out);

/* Min-heap of ints (topological positions; duplicates allowed), growing on push; oom set when a
 * push could not grow it. Free v when done. */
typedef struct fa_adv_heap {
    int *v, n, cap;
    bool oom;
} fa_adv_heap;
void fa_adv_heap_push(fa_adv_heap *h, int v);
int fa_adv_heap_pop(fa_adv_heap *h); /* smallest; h->n > 0 */

/* An activation written as a subgraph of elementwise ops on tensor x, as exporters write them:
 * GELU (erf form 0.5·x·(1+erf(x/√2)), tanh form 0.5·x·(1+tanh(√(2/π)·(x+0.044715·x³)))), SiLU
 * x·sigmoid(x) (also x/(1+exp(−x))), HardSwish x·min(max(x+3,0),6)/6 (x·HardSigmoid(x) with
 * alpha 1/6, x·Clip(x+3,0,6)/6, x·Relu6(x+3)·(1/6), ...). Recognised by evaluating the candidate
 * subgraph (elementwise ops whose other operands are scalar constants) at sample points on both
 * sides of every kink against each function: |f−ref| ≤ 1e-4·(|ref|+1e-2) at every point, so every
 * association and multiplication order, Pow(x,3) or x·x·x, and constants off by more than 1e-4
 * relative are told apart (the GELU forms also by their Erf/Tanh node). All consumers of x and of
 * every inner tensor must be in the set and no inner tensor may be a graph output. `pos`: node
 * id -> topological position, -1 for a folded node (n_nodes entries). `taken` (may be NULL):
 * node id -> claimed when >= 0. */
typedef struct fa_adv_activation {
    int n;
    int nodes[24];       /* node ids, topological order */
    int output;          /* tensor id */
    fa_post_op_kind kind; /* GELU_ERF, GELU_TANH, SWISH (alpha 1), HARD_SWISH */
} fa_adv_activation;
/* kinds: the accepted kinds, bit (1u << kind) each. */
bool fa_adv_match_activation(const fa_graph *g, const int *pos, int x, const int *taken, unsigned kinds,
                             fa_adv_activation *out);

/* Whether members m[0..n) (node ids) hold a residual Add: two computed (non-constant) operands
 * of its own shape, neither produced by a member (the x + r of a pre- or post-LN residual
 * stream, as opposed to a norm's epsilon or bias add). The add+layer_norm / add+rms_norm label
 * and `advise --against`'s "the residual add apart" both ask this. */
bool fa_adv_residual_add_in(const fa_graph *g, const int *m, int n);

/* Whether cluster c of graph g computes a GELU (either form): an epilogue with a GELU post-op, or
 * an elementwise chain holding a Gelu node or a decomposed GELU the activation matcher
 * (fa_adv_match_activation) finds wholly among its members. False on out of memory. */
bool fa_adv_cluster_computes_gelu(const fa_graph *g, const fa_cluster *c);

/* Post-op for consumer node c of tensor t (the epilogue's current tensor): *out = {kind, alpha,
 * beta, operand} with operand the binary operand's tensor id (-1 for a unary kind). False with
 * *why (the decision's code) and a sentence in why_buf when not expressible. */
bool fa_adv_post_op(const fa_graph *g, const fa_node *c, int t, fa_post_op *out, fa_why_code *why, char *why_buf,
                    size_t why_cap);

/* BN folding legality: true when bn can fold into its input's producer; otherwise *code and a
 * sentence. *producer set to the producer node id (or -1). */
bool fa_adv_bn_foldable(const fa_graph *g, const fa_node *bn, int *producer, fa_why_code *code, char *why,
                        size_t why_cap);

/* The attention pattern around reduction node `seed` (advisor/attention.c; docs/fusion-rules.md
 * "Attention"), in the registry's terms:
 *   - seed of reduce kind FA_REDUCE_ATTENTION (the Attention op): the one member;
 *   - seed of reduce kind FA_REDUCE_SOFTMAX over the last axis (the keys): backward from its
 *     input, a chain of elementwise/broadcast ops and element-moving views (fa_op.view), each
 *     output read only by the next, up to a node flagged FA_OPF_MATMUL (the scores Q·Kᵀ); forward
 *     from its output the same kind of chain into operand A of another FA_OPF_MATMUL node (·V).
 *     Those are the core members (which ops the kernel lowers — scales, additive and boolean
 *     masks, the row guard — is the code generator's decision, fa_codegen_decide). Optional
 *     members: the views (and, on Q and K, scalar Mul/Div scales) producing the products'
 *     operands Q, K, V and read by nothing else, and the bijective views after ·V.
 * Only unclaimed live nodes (owner < 0, pos >= 0) join. False when seed is not such a pattern. */
#define FA_ADV_ATTENTION_MAX 48
typedef struct fa_adv_attention {
    int n_core, core[FA_ADV_ATTENTION_MAX];   /* node ids */
    int n_views, views[FA_ADV_ATTENTION_MAX]; /* node ids */
    int qk, pv, softmax;                      /* node ids (qk, pv -1 for the op) */
} fa_adv_attention;
bool fa_adv_match_attention(const fa_graph *g, const int *pos, const int *owner, int seed, fa_adv_attention *out);

/* Ops of the elementwise or broadcast pattern class (the registry's) with float outputs. */
bool fa_adv_is_elementwise(const fa_graph *g, const fa_node *n);
/* Ops of the out-elementwise-fusable class (Conv, ConvTranspose, MatMul, Gemm and their integer
 * forms): an epilogue anchor. */
bool fa_adv_is_complex(const fa_node *n);
/* Whether n's registry pattern class is a reduction, and what it reduces (fa_reduce_kind;
 * FA_REDUCE_NONE for any other op or a reduction no row kernel covers). */
bool fa_adv_is_reduction(const fa_node *n);
fa_reduce_kind fa_adv_reduce_kind(const fa_node *n);

#endif
