/* advisor/gate — the register/occupancy gate: the target compiles a cluster's generated kernel for
 * the target architecture (cuda: NVRTC) and reports registers/spills (ptxas); the occupancy
 * calculator decides; memory-bound kernels that spill or fall under the occupancy floor are
 * refused. */
#ifndef FA_ADVISOR_GATE_H
#define FA_ADVISOR_GATE_H

#include "advisor.h"
#include "advisor/codegen.h"

/* Gate one cluster on the target opt->target (AUTO or opt NULL: the first registered target that
 * has a gate, cuda where built). The gate
 * is the target table's: a target whose table reports no compiler figures (fused_resources
 * NULL, the cpu) gates nothing (registers -1, FA_OK). For ELEMWISE_CHAIN, HORIZONTAL and
 * REDUCTION clusters: emit the target's language (fa_codegen), have the target compile it for
 * opt->arch (default "sm_90"; no device needed) and set c->registers (per thread),
 * c->spill_bytes (spill stores + loads, bytes), c->block_size (threads per block of the
 * generated launch) and c->occupancy (fa_occupancy with fa_cuda_limits_for_arch(arch), default
 * carve-out, the kernel's static shared memory from ptxas). Refuse — c->status =
 * FA_CLUSTER_REFUSED, c->refusal = FA_WHY_REGISTER_GATE (spills) or FA_WHY_OCCUPANCY_GATE, c->reason with the numbers (allocated in g->arena: the graph outlives the
 * plan), *refused = true — when the kernel spills (spill_bytes > 0: a memory-bound kernel must
 * not spill) or occupancy < opt->occupancy_floor (0.5 when opt is NULL or the floor is <= 0).
 * Otherwise *refused = false and c->status is left as it was. EPILOGUE / BN_FOLD clusters run
 * library kernels: registers stay -1, never refused. A cluster whose ops have no emitter is left
 * ungated (registers -1, not refused, FA_OK). Errors (cluster untouched): FA_ERR_UNSUPPORTED when
 * this build lacks the target, FA_ERR_INPUT for an arch without tabled limits, FA_ERR_RUNTIME
 * when the compiler fails. */
fa_status fa_gate_cluster(fa_ctx *ctx, const fa_graph *g, fa_cluster *c, const fa_advise_options *opt, bool *refused);

/* Last gate measurement (for reports/tests): the numbers behind the decision. */
typedef struct fa_gate_numbers {
    int registers, spill_stores, spill_loads, static_smem, local_mem;
    int block_size;
    int active_blocks, active_warps;
    double occupancy, floor;
    char limiters[96];
    char arch[16];
} fa_gate_numbers;
/* Like fa_gate_cluster, with the arena that receives c->reason (NULL: g->arena) and the
 * numbers behind the decision (nums may be NULL). */
fa_status fa_gate_cluster_ex(fa_ctx *ctx, const fa_graph *g, fa_cluster *c, const fa_advise_options *opt,
                             fa_arena *arena, bool *refused, fa_gate_numbers *nums);

/* How a library cluster runs on cuda, for what the output shows instead of register counts
 * (a library kernel has no generated source to compile): "BatchNormalization folded into the
 * anchor's weights (no new kernel)" for a BN fold; for an epilogue its cuda library mapping
 * (fa_cuda_epilogue_map: "cuBLASLt epilogue GELU_BIAS", "cuDNN fusion conv + bias + ReLU
 * (cudnnConvolutionBiasActivationForward)") or "no cuda library epilogue: <why>". Written to buf
 * (cap bytes) and returned; NULL for a generated-kernel cluster (chain, reduction, horizontal,
 * attention), whose registers the gate measures. */
const char *fa_gate_library_kernel(const fa_graph *g, const fa_cluster *c, char *buf, size_t cap);

#endif
