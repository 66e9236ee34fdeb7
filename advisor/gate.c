/* advisor/gate — register/occupancy gate: NVRTC + ptxas numbers + the occupancy calculator
 * decide whether a generated cuda kernel may be proposed (DESIGN.md "Cost model and checks");
 * and a cluster as the code generator's kernel description with the cluster-level calls of the
 * code generator (advisor/codegen.h), which the gate, the applier and the tests use. */
#include <stdio.h>
#include <string.h>

#include "advisor/codegen.h"
#include "advisor/gate.h"
#include "roofline/roofline.h"
#include "runtime/cuda_epilogue.h"

#include <stdlib.h>

static bool gated_kind(fa_cluster_kind k)
{
    return k == FA_CLUSTER_ELEMWISE_CHAIN || k == FA_CLUSTER_HORIZONTAL || k == FA_CLUSTER_REDUCTION ||
           k == FA_CLUSTER_ATTENTION;
}

fa_status fa_gate_cluster_ex(fa_ctx *ctx, const fa_graph *g, fa_cluster *c, const fa_advise_options *opt,
                             fa_arena *arena, bool *refused, fa_gate_numbers *nums)
{
    if (refused) *refused = false;
    fa_target target = opt ? opt->target : FA_TARGET_AUTO;
    const fa_target_iface *t = fa_target_get(target);
    for (int i = 0; target == FA_TARGET_AUTO && !t && fa_target_at(i); i++) /* AUTO: the first target with a gate */
        if (fa_target_has(fa_target_id(fa_target_at(i)), FA_TARGET_CAP_KERNEL_REPORT)) t = fa_target_at(i);
    if (target == FA_TARGET_AUTO && !t) t = fa_target_get(FA_TARGET_CPU);
    if (!t) return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "gate: this build has no %s target", fa_target_name(target));
    if (!gated_kind(c->kind) || !fa_target_has(fa_target_id(t), FA_TARGET_CAP_KERNEL_REPORT)) { /* library kernels, or a target without a gate */
        c->registers = -1;
        return FA_OK;
    }
    if (fa_codegen_decide(g, c, fa_target_kernel_lang(t)).code != FA_WHY_NONE) {
        c->registers = -1;
        return FA_OK;
    }
    const char *arch = opt && opt->arch && opt->arch[0] ? opt->arch : "sm_90";
    double floor = opt && opt->occupancy_floor > 0 ? opt->occupancy_floor : 0.5;
    const fa_cuda_limits *lim = fa_cuda_limits_for_arch(arch);
    if (!lim) return fa_ctx_error(ctx, FA_ERR_INPUT, "gate: no occupancy limits tabled for arch '%s'", arch);
    fa_buf src;
    fa_buf_init(&src);
    fa_codegen_info info;
    fa_status st = fa_codegen(ctx, g, c, fa_target_kernel_lang(t), "gate", &src, &info);
    if (st) {
        fa_buf_free(&src);
        return st;
    }
    /* the target compiles it for `arch` (no device needed) and reports what ptxas used */
    fa_fused_source fs = {src.data, src.len, info.name, c->n_inputs, c->n_outputs, info.block_size, info.grid};
    fa_fused_compile_options co = {NULL, 0, arch};
    fa_fused_binary *bin = NULL;
    char *err = NULL;
    st = fa_target_fused_compile(ctx, t, &co, 1, &fs, &bin, &err);
    fa_buf_free(&src);
    if (!st && !bin) st = fa_ctx_error(ctx, FA_ERR_RUNTIME, "%s", err ? err : "compile failed");
    free(err);
    if (st) return fa_ctx_wrap(ctx, st, "gate cluster %d: ", c->id);
    fa_kernel_resources nr;
    bool have = fa_target_fused_resources(t, bin, &nr);
    fa_target_fused_free(t, bin);
    if (!have)
        return fa_ctx_error(ctx, FA_ERR_RUNTIME, "gate cluster %d: the %s compiler reported no figures", c->id,
                            fa_target_name(fa_target_id(t)));
    fa_occ_input oi;
    memset(&oi, 0, sizeof oi);
    oi.block_size = info.block_size;
    oi.regs_per_thread = nr.registers;
    oi.static_smem = (size_t)nr.static_smem;
    oi.carveout_percent = -1;
    oi.block_barriers = 1;
    fa_occ_result occ;
    st = fa_occupancy(ctx, lim, &oi, &occ);
    if (st) return fa_ctx_wrap(ctx, st, "gate cluster %d: ", c->id);
    int spill = nr.spill_stores + nr.spill_loads;
    c->registers = nr.registers;
    c->spill_bytes = spill;
    c->block_size = info.block_size;
    c->occupancy = occ.occupancy;
    char lims[96];
    fa_occ_limiters_str(occ.limiters, lims, sizeof lims);
    if (nums) {
        memset(nums, 0, sizeof *nums);
        nums->registers = nr.registers;
        nums->spill_stores = nr.spill_stores;
        nums->spill_loads = nr.spill_loads;
        nums->static_smem = nr.static_smem;
        nums->local_mem = nr.local_mem;
        nums->block_size = info.block_size;
        nums->active_blocks = occ.active_blocks;
        nums->active_warps = occ.active_warps;
        nums->occupancy = occ.occupancy;
        nums->floor = floor;
        snprintf(nums->limiters, sizeof nums->limiters, "%s", lims);
        snprintf(nums->arch, sizeof nums->arch, "%s", arch);
    }
    /* The occupancy floor is for memory-bound kernels (enough resident warps to keep loads in
     * flight); the attention kernel is compute-bound (2·D FLOP per score read from shared memory)
     * and, like FlashAttention's, trades occupancy for shared-memory tiles: its occupancy is
     * recorded, not gated. A spill is refused for every kind. */
    bool spills = spill > 0, low = occ.occupancy < floor && c->kind != FA_CLUSTER_ATTENTION;
    if (!spills && !low) return FA_OK;
    char why[512];
    int n = 0;
    if (spills)
        n += snprintf(why + n, sizeof why - n,
                      "register gate: the %s kernel uses %d registers per thread and spills %d bytes (%d stored, %d "
                      "loaded; stack frame %d bytes); %s",
                      arch, nr.registers, spill, nr.spill_stores, nr.spill_loads, nr.local_mem,
                      c->kind == FA_CLUSTER_ATTENTION ? "a spill adds local-memory traffic to every key tile"
                                                      : "a memory-bound kernel must not spill");
    if (low)
        n += snprintf(why + n, sizeof why - n,
                      "%soccupancy gate: %d registers per thread x %d threads per block, %d bytes static shared memory "
                      "-> %d blocks (%d warps) per SM on %s = %.1f%% occupancy, under the %.0f%% floor (limited by %s)",
                      spills ? "; " : "", nr.registers, info.block_size, nr.static_smem, occ.active_blocks,
                      occ.active_warps, arch, 100.0 * occ.occupancy, 100.0 * floor, lims);
    fa_arena *ar = arena ? arena : g->arena;
    const char *r = ar ? fa_arena_strdup(ar, why) : NULL;
    if (!r) return fa_ctx_error(ctx, FA_ERR_NOMEM, "gate cluster %d: out of memory for the reason", c->id);
    c->reason = r;
    c->status = FA_CLUSTER_REFUSED;
    c->refusal = spills ? FA_WHY_REGISTER_GATE : FA_WHY_OCCUPANCY_GATE; /* the first sentence's gate */
    if (refused) *refused = true;
    return FA_OK;
}

fa_status fa_gate_cluster(fa_ctx *ctx, const fa_graph *g, fa_cluster *c, const fa_advise_options *opt, bool *refused)
{
    return fa_gate_cluster_ex(ctx, g, c, opt, NULL, refused, NULL);
}

const char *fa_gate_library_kernel(const fa_graph *g, const fa_cluster *c, char *buf, size_t cap)
{
    if (c->kind == FA_CLUSTER_BN_FOLD) {
        snprintf(buf, cap, "BatchNormalization folded into the anchor's weights (no new kernel)");
        return buf;
    }
    if (c->kind != FA_CLUSTER_EPILOGUE || c->anchor < 0 || c->anchor >= g->n_nodes) return NULL;
    const fa_node *an = g->nodes[c->anchor];
    if (c->n_post_ops > FA_CUDA_EPILOGUE_MAX_POST_OPS) { /* more post-ops than any library takes */
        snprintf(buf, cap, "no cuda library epilogue: %d post-ops", c->n_post_ops);
        return buf;
    }
    /* the query the runtime builds from the fused node, built from the cluster by the same
     * function: the anchor, its own bias (input 2: Gemm C, Conv B), the post-ops' operand tensors */
    const fa_tensor *operand[FA_CUDA_EPILOGUE_MAX_POST_OPS] = {0};
    for (int k = 0; k < c->n_post_ops; k++) {
        int t = c->post_ops[k].operand;
        operand[k] = fa_post_op_is_binary(c->post_ops[k].kind) && t >= 0 && t < g->n_tensors ? g->tensors[t] : NULL;
    }
    bool vec[FA_CUDA_EPILOGUE_MAX_POST_OPS];
    fa_cuda_epilogue_query q;
    fa_cuda_epilogue_query_build(an->op_type, an->n_inputs > 2 ? fa_graph_in(g, an, 2) : NULL,
                                 c->n_outputs > 0 ? g->tensors[c->outputs[0]] : NULL, c->post_ops, c->n_post_ops,
                                 operand, vec, &q);
    char why[200] = "";
    fa_cuda_epilogue e = fa_cuda_epilogue_map(&q, why, sizeof why);
    switch (e) {
    case FA_CUDA_EPI_CUBLASLT_BIAS: snprintf(buf, cap, "cuBLASLt epilogue BIAS"); break;
    case FA_CUDA_EPI_CUBLASLT_RELU_BIAS: snprintf(buf, cap, "cuBLASLt epilogue RELU_BIAS"); break;
    case FA_CUDA_EPI_CUBLASLT_GELU_BIAS: snprintf(buf, cap, "cuBLASLt epilogue GELU_BIAS"); break;
    case FA_CUDA_EPI_CUDNN_CONV_BIAS_RELU:
        snprintf(buf, cap, "cuDNN fusion conv + bias + ReLU (cudnnConvolutionBiasActivationForward)");
        break;
    default: snprintf(buf, cap, "no cuda library epilogue: %s", why[0] ? why : "none fits"); break;
    }
    return buf;
}

/* ---- clusters as kernel descriptions (advisor/codegen.h) ---- */

void fa_cluster_kernel_desc(const fa_cluster *c, fa_kernel_desc *out)
{
    memset(out, 0, sizeof *out);
    out->id = c->id;
    switch (c->kind) {
    case FA_CLUSTER_ELEMWISE_CHAIN: out->kind = FA_KERNEL_ELEMENTWISE; break;
    case FA_CLUSTER_HORIZONTAL: out->kind = FA_KERNEL_HORIZONTAL; break;
    case FA_CLUSTER_REDUCTION: out->kind = FA_KERNEL_ROWS; break;
    case FA_CLUSTER_EPILOGUE: /* generated: the members after the GEMM as one elementwise kernel over its rows */
        out->kind = c->epilogue_generated ? FA_KERNEL_ELEMENTWISE : FA_KERNEL_EPILOGUE;
        out->gemm_epilogue = c->epilogue_generated != 0;
        break;
    case FA_CLUSTER_BN_FOLD: out->kind = FA_KERNEL_BN_FOLD; break;
    case FA_CLUSTER_ATTENTION: out->kind = FA_KERNEL_ATTENTION; break;
    default: out->kind = FA_KERNEL_KIND_COUNT; break; /* refused by the generator as unknown */
    }
    out->reduce = c->reduction; /* one kind from the plan to the kernel (graph/graph.h) */
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
