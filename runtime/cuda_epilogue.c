/* runtime/cuda_epilogue — which cuda library epilogue (cuBLASLt, cuDNN) can run a fused
 * Conv/MatMul/Gemm epilogue, or why none can. Pure: built with or without the toolkit, so the
 * mapping is tested everywhere; the cuda target's supports_node reads it (runtime/cuda/). */
#include "runtime/cuda_epilogue.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fa_cuda_epilogue_name(fa_cuda_epilogue e)
{
    switch (e) {
    case FA_CUDA_EPI_CUBLASLT_BIAS: return "cublaslt:bias";
    case FA_CUDA_EPI_CUBLASLT_RELU_BIAS: return "cublaslt:relu_bias";
    case FA_CUDA_EPI_CUBLASLT_GELU_BIAS: return "cublaslt:gelu_bias";
    case FA_CUDA_EPI_CUDNN_CONV_BIAS_RELU: return "cudnn:conv_bias_relu";
    default: return "none";
    }
}

static fa_cuda_epilogue refuse_epi(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static fa_cuda_epilogue refuse_epi(char *why, size_t cap, const char *fmt, ...)
{
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return FA_CUDA_EPI_NONE;
}

fa_cuda_epilogue fa_cuda_epilogue_map(const fa_cuda_epilogue_query *q, char *why, size_t why_cap)
{
    if (why && why_cap) why[0] = 0;
    const char *op = q->anchor_op ? q->anchor_op : "?";
    bool gemm = !strcmp(op, "MatMul") || !strcmp(op, "Gemm"), conv = !strcmp(op, "Conv");
    char first[64] = "(no post-op)";
    if (q->n_post_ops > 0) fa_post_op_format(&q->post_ops[0], first, sizeof first);
    if (!gemm && !conv) return refuse_epi(why, why_cap, "no cuda epilogue for %s (anchor %s)", first, op);
    if (q->anchor_bias == FA_CUDA_BIAS_OTHER)
        return refuse_epi(why, why_cap, "no cuda epilogue for %s (the %s bias is not one value per output column)",
                          first, op);
    bool bias = q->anchor_bias == FA_CUDA_BIAS_VECTOR;
    int i = 0;
    if (!bias && i < q->n_post_ops && q->post_ops[i].kind == FA_POST_OP_ADD && q->operand_is_bias_vector &&
        q->operand_is_bias_vector[i]) {
        bias = true;
        i++;
    }
    enum { ACT_NONE, ACT_RELU, ACT_GELU } act = ACT_NONE;
    if (i < q->n_post_ops) {
        fa_post_op_kind k = q->post_ops[i].kind;
        char po[64];
        fa_post_op_format(&q->post_ops[i], po, sizeof po);
        if (k == FA_POST_OP_RELU) act = ACT_RELU;
        else if (gemm && k == FA_POST_OP_GELU_TANH) act = ACT_GELU;
        else if (gemm && k == FA_POST_OP_GELU_ERF)
            return refuse_epi(why, why_cap, "no cuda epilogue for %s (cuBLASLt's GELU epilogue is the tanh approximation)", po);
        else if (k == FA_POST_OP_ADD)
            return refuse_epi(why, why_cap, "no cuda epilogue for %s (%s)", po,
                              bias ? "a second add after the bias" : "the operand is not a bias vector");
        else return refuse_epi(why, why_cap, "no cuda epilogue for %s", po);
        i++;
    }
    if (i < q->n_post_ops) {
        char po[64];
        fa_post_op_format(&q->post_ops[i], po, sizeof po);
        return refuse_epi(why, why_cap, "no cuda epilogue for %s (after an activation)", po);
    }
    if (!bias)
        return refuse_epi(why, why_cap, "no cuda epilogue for %s (%s without a bias vector)", first, op);
    if (conv) {
        if (act != ACT_RELU)
            return refuse_epi(why, why_cap, "no cuda epilogue for %s (cuDNN fuses conv+bias with a Relu only)", first);
        return FA_CUDA_EPI_CUDNN_CONV_BIAS_RELU;
    }
    return act == ACT_RELU ? FA_CUDA_EPI_CUBLASLT_RELU_BIAS
         : act == ACT_GELU ? FA_CUDA_EPI_CUBLASLT_GELU_BIAS
                           : FA_CUDA_EPI_CUBLASLT_BIAS;
}

/* t, right-aligned against y (rank ry), has y->dims[axis] elements at `axis` and 1 elsewhere. */
bool fa_cuda_axis_vector(const fa_tensor *t, const fa_tensor *y, int axis)
{
    if (!t || !y || t->rank > y->rank || axis < 0 || axis >= y->rank) return false;
    int off = y->rank - t->rank;
    bool seen = false;
    for (int d = 0; d < t->rank; d++) {
        int yd = d + off;
        if (yd == axis) {
            if (t->dims[d] != y->dims[axis]) return false;
            seen = true;
        } else if (t->dims[d] != 1) {
            return false;
        }
    }
    return seen;
}

void fa_cuda_epilogue_query_build(const char *anchor_op, const fa_tensor *bias, const fa_tensor *y,
                                  const fa_post_op *post_ops, int n, const fa_tensor *const *operand, bool *scratch,
                                  fa_cuda_epilogue_query *q)
{
    memset(q, 0, sizeof *q);
    q->anchor_op = anchor_op && !strncmp(anchor_op, "Fused", 5) ? anchor_op + 5 : anchor_op ? anchor_op : "";
    q->post_ops = q->post_op_store;
    q->operand_is_bias_vector = scratch;
    if (n < 0 || n > FA_CUDA_EPILOGUE_MAX_POST_OPS) { /* malformed or too many: one kind no epilogue has */
        q->post_op_store[0] = (fa_post_op){FA_POST_OP_COUNT, 0, 0, -1};
        q->n_post_ops = 1;
        scratch[0] = false;
        return;
    }
    q->n_post_ops = n;
    if (n) memcpy(q->post_op_store, post_ops, sizeof(fa_post_op) * (size_t)n);
    bool conv = !strcmp(q->anchor_op, "Conv") || !strcmp(q->anchor_op, "ConvTranspose");
    int axis = conv ? 1 : (y ? y->rank - 1 : 0);
    /* a Conv's own B is 1-D of C_out by the ONNX spec (not broadcast right-aligned: a [C] tensor
     * added to [N, C, H, W] would align with W), Gemm's C broadcasts unidirectionally */
    bool own_vector = conv ? bias && y && bias->rank == 1 && y->rank >= 2 && bias->dims[0] == y->dims[1]
                           : fa_cuda_axis_vector(bias, y, axis);
    if (bias) q->anchor_bias = own_vector ? FA_CUDA_BIAS_VECTOR : FA_CUDA_BIAS_OTHER;
    for (int k = 0; k < n; k++)
        scratch[k] = fa_post_op_is_binary(post_ops[k].kind) && operand && operand[k] &&
                     fa_cuda_axis_vector(operand[k], y, axis);
}

void fa_cuda_epilogue_query_of_node(const fa_graph *g, const fa_node *n, bool *scratch, fa_cuda_epilogue_query *q)
{
    fa_post_op ops[FA_CUDA_EPILOGUE_MAX_POST_OPS];
    const fa_tensor *operand[FA_CUDA_EPILOGUE_MAX_POST_OPS] = {0};
    char why[300];
    int np = fa_post_ops_of_node(n, ops, FA_CUDA_EPILOGUE_MAX_POST_OPS, why, sizeof why);
    /* input 2 is the anchor's own bias (Gemm C, Conv B) unless a post-op names it as its operand
     * (a MatMul, or a Conv without bias, has its first post-op operand there) */
    bool input2_is_operand = false;
    for (int k = 0; k < np; k++) {
        if (!fa_post_op_is_binary(ops[k].kind)) continue;
        if (ops[k].operand == 2) input2_is_operand = true;
        operand[k] = fa_graph_in(g, n, ops[k].operand);
    }
    const fa_tensor *b = n->n_inputs > 2 && !input2_is_operand ? fa_graph_in(g, n, 2) : NULL;
    fa_cuda_epilogue_query_build(n->op_type, b, fa_graph_out(g, n, 0), ops, np, operand, scratch, q);
}
