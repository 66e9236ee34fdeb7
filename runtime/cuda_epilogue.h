/* runtime/cuda_epilogue — how an epilogue cluster runs on cuda's libraries (runtime/cuda_epilogue.c;
 * pure, built with or without the toolkit). */
#ifndef FA_RUNTIME_CUDA_EPILOGUE_H
#define FA_RUNTIME_CUDA_EPILOGUE_H

#include "graph/graph.h"
#include "graph/post_op.h"

/* How an EPILOGUE cluster runs on cuda. Stored nowhere; grows at its end. */
typedef enum fa_cuda_epilogue {
    FA_CUDA_EPI_NONE = 0,              /* refused: no cuda library epilogue fits */
    FA_CUDA_EPI_CUBLASLT_BIAS = 1,     /* MatMul/Gemm + bias: CUBLASLT_EPILOGUE_BIAS */
    FA_CUDA_EPI_CUBLASLT_RELU_BIAS = 2,/* + Relu: CUBLASLT_EPILOGUE_RELU_BIAS */
    FA_CUDA_EPI_CUBLASLT_GELU_BIAS = 3,/* + tanh-GELU: CUBLASLT_EPILOGUE_GELU_BIAS */
    FA_CUDA_EPI_CUDNN_CONV_BIAS_RELU = 4, /* Conv + bias + Relu: cudnnConvolutionBiasActivationForward */
    FA_CUDA_EPI_COUNT
} fa_cuda_epilogue;
const char *fa_cuda_epilogue_name(fa_cuda_epilogue e); /* "cublaslt:bias", ..., "none" */

/* Where an epilogue cluster's bias comes from (anchor's own Gemm C / Conv B). */
typedef enum fa_cuda_bias_kind {
    FA_CUDA_BIAS_ABSENT = 0,
    FA_CUDA_BIAS_VECTOR = 1,  /* one value per output column (MatMul/Gemm) or channel (Conv) */
    FA_CUDA_BIAS_OTHER = 2    /* present but not such a vector (a full Gemm C matrix) */
} fa_cuda_bias_kind;

/* The facts the mapping needs, taken from a fused node (fa_cuda_epilogue_query_of_node) or
 * written by hand in tests. */
typedef struct fa_cuda_epilogue_query {
    const char *anchor_op;               /* "MatMul", "Gemm", "Conv", ... */
    fa_cuda_bias_kind anchor_bias;
    int n_post_ops;
    const fa_post_op *post_ops;          /* graph/post_op.h (operands are not read here) */
    const bool *operand_is_bias_vector;  /* per post-op: the binary operand is a per-column /
                                            per-channel vector (NULL: none is) */
    fa_post_op post_op_store[8];         /* storage for fa_cuda_epilogue_query_of_node */
} fa_cuda_epilogue_query;
#define FA_CUDA_EPILOGUE_MAX_POST_OPS 8

/* Pure mapping of an epilogue onto a cuda library epilogue. cuBLASLt (cublasLt.h,
 * cublasLtEpilogue_t): BIAS, RELU_BIAS, GELU_BIAS — its GELU is the tanh approximation, so
 * GELU_ERF is refused (differs by up to ~1e-3, beyond the 1e-5 tolerance). cuDNN
 * (cudnnConvolutionBiasActivationForward, cuDNN API reference): y = act(conv(x) + bias) with
 * act = RELU (IDENTITY is restricted to one algorithm, so Conv + bias alone is refused). The bias
 * is the anchor's own vector, or else a first ADD post-op whose operand is such a vector. Any
 * other post-op (a residual add, clip, sigmoid, ...) or a second activation: FA_CUDA_EPI_NONE
 * with `why` = "no cuda epilogue for <post-op name>[ (detail)]". why may be NULL. */
fa_cuda_epilogue fa_cuda_epilogue_map(const fa_cuda_epilogue_query *q, char *why, size_t why_cap);
/* The one builder of a query, which the runtime (a fused node, below) and the advisor (a plan
 * cluster, advisor/gate.c fa_gate_library_kernel) both call: an anchor `anchor_op` ("Conv",
 * "MatMul", ...; a "Fused" prefix is dropped) whose own bias is `bias` (Gemm C, Conv B; NULL
 * none), writing y, with post-ops post_ops[0..n) whose binary operands are the tensors
 * operand[k] (NULL for a unary post-op or an operand not found). The bias and the operands are
 * vectors when they hold one value per index of y's output-channel axis (1 for Conv and
 * ConvTranspose, the last otherwise: fa_cuda_axis_vector). n < 0 (malformed post-ops) or more
 * than FA_CUDA_EPILOGUE_MAX_POST_OPS read as one post-op of kind FA_POST_OP_COUNT, which maps to
 * none. The post-ops are copied into q; operand_is_bias_vector points into `scratch` (one bool
 * per post-op, at least min(n, FA_CUDA_EPILOGUE_MAX_POST_OPS)). */
void fa_cuda_epilogue_query_build(const char *anchor_op, const fa_tensor *bias, const fa_tensor *y,
                                  const fa_post_op *post_ops, int n, const fa_tensor *const *operand, bool *scratch,
                                  fa_cuda_epilogue_query *q);
/* The query for a fused epilogue node n of g (ai.fuse-advise Fused{Conv,ConvTranspose,MatMul,
 * Gemm} with its typed post-ops, fa_post_ops_of_node; input 2 is the anchor's own bias unless a
 * post-op names it as its operand): fa_cuda_epilogue_query_build. */
void fa_cuda_epilogue_query_of_node(const fa_graph *g, const fa_node *n, bool *scratch, fa_cuda_epilogue_query *q);

/* Whether t holds one value per index of y's axis `axis` (aligned right to left, every other
 * dim 1): a bias vector for that axis, as the cuda library epilogues take one. */
bool fa_cuda_axis_vector(const fa_tensor *t, const fa_tensor *y, int axis);

#endif
