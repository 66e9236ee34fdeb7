/* advisor/codegen — clusters as kernel descriptions (codegen/codegen.h) and the cluster-level
 * calls of the code generator. */
#include "advisor/codegen.h"

#include <string.h>

void fa_cluster_kernel_desc(const fa_cluster *c, fa_kernel_desc *out)
{
    memset(out, 0, sizeof *out);
    out->id = c->id;
    switch (c->kind) {
    case FA_CLUSTER_ELEMWISE_CHAIN: out->kind = FA_KERNEL_ELEMENTWISE; break;
    case FA_CLUSTER_HORIZONTAL: out->kind = FA_KERNEL_HORIZONTAL; break;
    case FA_CLUSTER_REDUCTION: out->kind = FA_KERNEL_ROWS; break;
    case FA_CLUSTER_EPILOGUE: out->kind = FA_KERNEL_EPILOGUE; break;
    case FA_CLUSTER_BN_FOLD: out->kind = FA_KERNEL_BN_FOLD; break;
    case FA_CLUSTER_ATTENTION: out->kind = FA_KERNEL_ATTENTION; break;
    default: out->kind = FA_KERNEL_KIND_COUNT; break; /* refused by the generator as unknown */
    }
    switch (c->reduction) {
    case FA_RED_SOFTMAX: out->rows = FA_ROWS_SOFTMAX; break;
    case FA_RED_LOG_SOFTMAX: out->rows = FA_ROWS_LOG_SOFTMAX; break;
    case FA_RED_LAYER_NORM: out->rows = FA_ROWS_LAYER_NORM; break;
    case FA_RED_RMS_NORM: out->rows = FA_ROWS_RMS_NORM; break;
    case FA_RED_NONE: out->rows = FA_ROWS_NONE; break;
    default: out->rows = FA_ROWS_GENERIC; break;
    }
    out->reduce_axis = c->reduce_axis;
    out->anchor = c->anchor;
    out->members = c->members;
    out->n_members = c->n_members;
    out->inputs = c->inputs;
    out->n_inputs = c->n_inputs;
    out->outputs = c->outputs;
    out->n_outputs = c->n_outputs;
}

fa_decision fa_codegen_decide(const fa_graph *g, const fa_cluster *c, fa_kernel_lang lang)
{
    fa_kernel_desc d;
    fa_cluster_kernel_desc(c, &d);
    const char *why = NULL;
    if (fa_codegen_kernel_supported(g, &d, lang, &why)) return (fa_decision){FA_WHY_NONE, NULL};
    return (fa_decision){FA_WHY_CODEGEN_UNSUPPORTED, why ? why : "no emitter"};
}

fa_status fa_codegen(fa_ctx *ctx, const fa_graph *g, const fa_cluster *c, fa_kernel_lang lang, const char *plan_hash,
                     fa_buf *out, fa_codegen_info *info)
{
    fa_kernel_desc d;
    fa_cluster_kernel_desc(c, &d);
    return fa_codegen_kernel(ctx, g, &d, lang, plan_hash, out, info);
}

fa_status fa_codegen_c(fa_ctx *ctx, const fa_graph *g, const fa_cluster *c, const char *plan_hash, fa_buf *out,
                       fa_codegen_info *info)
{
    return fa_codegen(ctx, g, c, FA_KERNEL_LANG_C, plan_hash, out, info);
}

fa_status fa_codegen_cuda(fa_ctx *ctx, const fa_graph *g, const fa_cluster *c, const char *plan_hash, fa_buf *out,
                          fa_codegen_info *info)
{
    return fa_codegen(ctx, g, c, FA_KERNEL_LANG_CUDA, plan_hash, out, info);
}
