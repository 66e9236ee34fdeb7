/* plan — the fusion plan's records, described once: clusters (what the advisor proposes and
 * predicts), why-nots, the applier's verdict on each cluster and the plan's end-to-end verdict,
 * with the field table (FA_CLUSTER_FIELDS) that the run database (store/plans.c), the one plan
 * JSON writer (plan.json, `advise --json`) and the reports expand, so a stored cluster field is
 * one row here. The advisor fills a plan, the applier judges it, store keeps both. */
#ifndef FA_PLAN_H
#define FA_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "graph/graph.h"
#include "graph/post_op.h"
#include "runtime/runtime.h"

/* Cluster kinds. Stored in the database by name (fa_cluster_kind_name); only grows at its end. */
typedef enum fa_cluster_kind {
    FA_CLUSTER_ELEMWISE_CHAIN = 0, /* vertical elementwise/broadcast chain -> one kernel */
    FA_CLUSTER_EPILOGUE = 1,       /* Conv/ConvTranspose/MatMul/Gemm + elementwise epilogue
                                      (bias add, activation, residual add) */
    FA_CLUSTER_BN_FOLD = 2,        /* inference BatchNormalization folded into the preceding
                                      Conv/ConvTranspose/Gemm weights and bias */
    FA_CLUSTER_REDUCTION = 3,      /* a reduction with its elementwise prologue/epilogue inside
                                      one reduction domain (softmax, layer norm, RMS norm, ...) */
    FA_CLUSTER_HORIZONTAL = 4,     /* consumers sharing one input, read once */
    FA_CLUSTER_ATTENTION = 5,      /* QKᵀ → scale → masks → softmax → ·V (decomposed, or the Attention
                                      op) with the views around Q, K, V and the output: one kernel
                                      with an online softmax, the scores never written */
    FA_CLUSTER_KIND_COUNT
} fa_cluster_kind;
const char *fa_cluster_kind_name(fa_cluster_kind k); /* "elementwise-chain", "epilogue", ...; "?" out of range */
/* The kind a stored word names; FA_CLUSTER_KIND_COUNT for NULL or a word this build does not know. */
fa_cluster_kind fa_cluster_kind_parse(const char *word);

/* Cluster status. Stored by name; only grows at its end. */
typedef enum fa_cluster_status {
    FA_CLUSTER_PROPOSED = 0,       /* legal, passed the gate, waiting for the applier */
    FA_CLUSTER_REFUSED = 1,        /* refused by the advisor (gate, cost, cap): reason says why */
    FA_CLUSTER_ACCEPTED = 2,       /* applier: verified and measurably faster */
    FA_CLUSTER_REJECTED_VERIFY = 3,/* applier: numerics differ beyond tolerance */
    FA_CLUSTER_REJECTED_NO_GAIN = 4,/* applier: gain within the measured noise */
    FA_CLUSTER_REJECTED_REGRESSION = 5, /* applier: measurably slower */
    FA_CLUSTER_REJECTED_ERROR = 6, /* applier: codegen/compile/run failed */
    FA_CLUSTER_NOT_TRIED = 7,      /* applier: beyond the apply stage's cap or time budget */
    FA_CLUSTER_STATUS_COUNT
} fa_cluster_status;
const char *fa_cluster_status_name(fa_cluster_status s); /* "proposed", "refused", ...; "?" out of range */
/* NULL -> PROPOSED; a word this build does not know -> FA_CLUSTER_STATUS_COUNT (named "?"). */
fa_cluster_status fa_cluster_status_parse(const char *word);
/* The decision in a few words a reader acts on ("no measured gain", "measured slower", "its outputs
 * differ from the unfused ops", ...): what `run` and the report say of a pattern not kept. */
const char *fa_cluster_status_phrase(fa_cluster_status s);
/* True for the REJECTED_* statuses. */
bool fa_cluster_status_rejected(fa_cluster_status s);

/* Why an edge did not fuse or a cluster was refused: a decision's code (after XLA's
 * FusionDecision and TorchInductor's WhyNoFuse: the refusal is a value carrying its code and
 * sentence, so nothing recovers a code from the text). Stored by name (why_not.reason_code,
 * fa_why_code_name); the list only grows at its end. docs/fusion-rules.md explains each. */
#define FA_WHY_CODES(X)                                                                          \
    X(NONE, "none")                     /* no refusal */                                         \
    X(CAP, "cap")                       /* --max-ops / --max-inputs */                           \
    X(CYCLE, "cycle")                   /* the fused node would depend on itself */              \
    X(DTYPE, "dtype")                   /* not float32 */                                        \
    X(DYNAMIC_SHAPE, "dynamic-shape")                                                            \
    X(NON_TRAILING_AXES, "non-trailing-axes") /* reduction over non-trailing axes */             \
    X(OPAQUE, "opaque")                 /* the op's pattern class is opaque */                   \
    X(REDUCE_KEEPDIMS, "reduce-keepdims")                                                        \
    X(NON_CONSTANT, "non-constant")     /* a parameter that must be a constant is not */         \
    X(TRAINING_MODE, "training-mode")   /* BatchNormalization in training mode */                \
    X(EXTRA_OUTPUTS, "extra-outputs")                                                            \
    X(MULTI_CONSUMER, "multi-consumer")                                                          \
    X(NOT_A_POST_OP, "not-a-post-op")   /* no library post-op for the op (not recorded) */       \
    X(SHAPE_CHANGING_EPILOGUE, "shape-changing-epilogue")                                        \
    X(SAME_OPERAND, "same-operand")                                                              \
    X(OPERAND_ORDER, "operand-order")                                                            \
    X(DIFFERENT_DOMAIN, "different-domain")                                                      \
    X(NON_NORMALIZED_PARAM, "non-normalized-param")                                              \
    X(ANCHOR_UNSUPPORTED, "anchor-unsupported")                                                  \
    X(OPERAND_LATER, "operand-later")                                                            \
    X(BROADCAST_RECOMPUTE, "broadcast-recompute")                                                \
    X(ACCESS_ORDER, "access-order")                                                              \
    X(GATHER_INDEX, "gather-index")                                                              \
    X(VIEW_BOUNDARY, "view-boundary")                                                            \
    X(LAYOUT_CHANGE, "layout-change")                                                            \
    X(TWO_COMPLEX, "two-complex")                                                                \
    X(COMPLEX_CONSUMER, "complex-consumer")                                                      \
    X(TWO_REDUCTIONS, "two-reductions")                                                          \
    X(GRAPH_OUTPUT, "graph-output")                                                              \
    X(MULTI_CONSUMER_RECOMPUTE, "multi-consumer-recompute")                                      \
    X(CLUSTER_BOUNDARY, "cluster-boundary")                                                      \
    X(NO_PATTERN, "no-pattern")                                                                  \
    X(CODEGEN_UNSUPPORTED, "codegen-unsupported") /* the target's code generator cannot build it */ \
    X(REGISTER_GATE, "register-gate")   /* the compiled kernel spills */                         \
    X(OCCUPANCY_GATE, "occupancy-gate") /* under the occupancy floor */                          \
    X(NOT_BENEFICIAL, "not-beneficial") /* predicted saving not positive */                      \
    X(REFUSED, "refused")               /* a refused cluster without a more specific code */       \
    X(SLOW_LIBRARY_PATH, "slow-library-path") /* applier: the library runs the fused epilogue off \
                                                 its fast path */                               \
    X(BELOW_NOISE, "below-noise")       /* predicted saving within the members' timing noise */   \
    X(MEASURED_LOSS, "measured-loss")   /* the same-signature kernel measured slower before */

typedef enum fa_why_code {
#define FA_WHY_ENUM_(id, name) FA_WHY_##id,
    FA_WHY_CODES(FA_WHY_ENUM_)
#undef FA_WHY_ENUM_
    FA_WHY_CODE_COUNT
} fa_why_code;
const char *fa_why_code_name(fa_why_code c); /* the stable word ("cap", "register-gate"); "?" out of range */
/* The code a stored word names; FA_WHY_CODE_COUNT (named "?") for NULL or an unknown word. */
fa_why_code fa_why_code_parse(const char *word);

/* A legality or gate decision: FA_WHY_NONE = may fuse (reason NULL); otherwise the code and a
 * sentence a person can read, with numbers (storage: the producer's arena or a static string). */
typedef struct fa_decision {
    fa_why_code code;
    const char *reason;
} fa_decision;

/* One cluster as the advisor proposes it. Its stored, written and shown fields are the rows of
 * FA_CLUSTER_FIELDS below (owner C); the others are working state of the advisor. */
typedef struct fa_cluster {
    int id;                    /* index in the plan's ranked clusters */
    fa_cluster_kind kind;
    int n_members;
    int *members;              /* node ids, topological order */
    int anchor;                /* EPILOGUE/BN_FOLD: the Conv/Gemm node; REDUCTION: the (first)
                                  reduction node; -1 otherwise */
    int n_inputs;
    int *inputs;               /* tensor ids read from outside the cluster (incl. constants) */
    int n_outputs;
    int *outputs;              /* tensor ids that leave the cluster (consumed outside or graph outputs) */
    fa_reduce_kind reduction;
    int reduce_axis;           /* REDUCTION: the domain is axes [reduce_axis, rank) of the anchor's input */
    uint64_t score_bytes;      /* ATTENTION: bytes of the Sq×Sk score tensors (scores, masked scores,
                                  probabilities) the unfused ops hold at once — the most that one
                                  member reads and writes of them — which the fused kernel never
                                  materialises: the peak-memory drop it brings; 0 otherwise */
    float epsilon;             /* LAYER_NORM / RMS_NORM; NAN read back from a NULL column */
    /* cost model (units inline) */
    uint64_t saved_bytes;      /* intermediate round trips removed + repeated reads removed, bytes per iteration */
    int saved_launches;        /* kernels removed */
    double recompute_ns;       /* extra work from recomputing a multi-consumer producer, ns per iteration */
    double est_saving_ns;      /* with a measured baseline: the disappearing members' measured
                                  medians + their dispatch gaps - the fused kernel's predicted time
                                  - recompute (fa_fusion_predict, issue 19); without one: saved_bytes
                                  / bandwidth + saved_launches x dispatch - recompute; ns per iteration */
    double est_saving_pct;     /* of the measured iteration (or the data-sheet estimate's), %; NAN
                                  when there is none (advise on a bare model): no share is shown */
    const char *basis;         /* what est_saving_ns rests on, with its figures (arena); NULL none */
    /* the terms of est_saving_ns (issue 36), each stored once so a prediction that misses can be
     * diagnosed term by term against the applier's measured counterparts (fa_cluster_verdict
     * meas_unfused_ns, meas_fused_ns). With a measured profile: est_saving_ns = pred_members_ns +
     * pred_dispatch_ns - pred_fused_ns - recompute_ns, the recompute not subtracted again where
     * the fused time was measured (pred_ratio set). NAN where a term is not part of the basis. */
    double pred_members_ns;    /* the members' medians in the baseline profile, the anchor of an
                                  epilogue / BN fold included (it runs in both sides); ns; a
                                  data-sheet estimate: the removed members' estimated time on the
                                  planned device (each at least one launch); NAN: analytic */
    double pred_dispatch_ns;   /* the launch/dispatch term: kernels removed x the baseline's
                                  measured gap per kernel (or the dispatch ceiling); ns; NAN: a
                                  data-sheet estimate (the launch is inside each kernel's time) */
    double pred_fused_ns;      /* the fused kernel's predicted time, ns (a horizontal group: the
                                  members' kernels less the shared input's repeated reads); NAN:
                                  analytic */
    double pred_ratio;         /* the fused/unfused ratio the fused time was taken from (the probe's,
                                  or an earlier run's measured kernel of the same signature) x
                                  pred_members_ns; NAN: the fused time is the roofline's */
    /* how far predictions of this kind have missed on this machine (issue 36; the advisor's
     * fa_advise_kind_spread over the run database's measured clusters of the same device) */
    double est_spread_pct;     /* the ±X% to quote with est_saving_ns: set only where this kind's
                                  past |measured - predicted| / |predicted| (80th percentile)
                                  exceeds the measurements' own repeatability; NAN otherwise */
    int est_spread_n;          /* past measured clusters of this kind on this machine the spread is
                                  over; 0 none (not yet calibrated); -1 not looked up */
    /* the prediction's own interval (issue 36): est_saving_ns recomputed at the two ends of the
     * probe's ratio interval (fa_fused_probe_result ratio_lo..ratio_hi, the sign-test interval of
     * its pairs' fused/unfused ratios): est_lo_ns = pred_members_ns + pred_dispatch_ns -
     * pred_members_ns x ratio_hi, est_hi_ns the same at ratio_lo; ns. How far the fused side's
     * term moves between the probe's own repetitions, times the members' time it multiplies. NAN
     * where the fused time does not rest on a paired probe of at least 5 pairs. */
    double est_lo_ns, est_hi_ns;
    const char *signature;     /* the fused kernel's shape-class signature (fa_cluster_signature,
                                  advisor/advisor.h): two clusters with the same text cost the
                                  same; composed once by the advisor and stored with the plan, so
                                  later plans find this cluster's measurements by it (arena) */
    /* register/occupancy gate (cuda target; -1 when not compiled: null in the JSON) */
    int registers;             /* per thread, from ptxas */
    int spill_bytes;           /* spill stores + loads, bytes */
    double occupancy;          /* 0..1 from the occupancy calculator; < 0 not computed */
    int block_size;            /* threads per block used for the gate; -1 none */
    /* the advisor's decision: PROPOSED, or REFUSED by the gate or the cost model. What the
     * applier then verified, measured and decided is its own record (fa_cluster_verdict); the
     * applier never writes the plan. */
    fa_cluster_status status;
    const char *reason;        /* why refused (arena) */
    fa_why_code refusal;       /* REFUSED: the code of the decision that refused it (gate,
                                  cost); FA_WHY_NONE otherwise (not stored: NONE read back) */
    const char *label;         /* what the cluster computes: "conv+bn", "conv+relu",
                                  "matmul+add+gelu_erf", "layer_norm(decomposed)", "softmax",
                                  "gelu_tanh", "elementwise", "horizontal(3)" ... (arena) */
    int depends_on;            /* index in plan->clusters of a cluster that must be applied
                                  first (EPILOGUE after the BN_FOLD of its anchor), -1 none */
    /* EPILOGUE: the post-ops to append to the anchor, in order (graph/post_op.h): {RELU},
     * {CLIP, 0, 6}, {GELU_ERF}, {ADD, operand = the tensor id of the addend}, ... The applier
     * appends each binary operand to the fused node's inputs and writes the list onto it with
     * the operand as that input index (fa_post_ops_set_node). */
    int n_post_ops;
    fa_post_op *post_ops;      /* arena */
    /* EPILOGUE of a MatMul/Gemm: 1 when the epilogue is generated code instead of library
     * post-ops (docs/fusion-rules.md §3 "Generated epilogues"): the library computes the product
     * alone (n_post_ops 0) in blocks of rows, and the members after the anchor run as one
     * generated elementwise kernel over each block while it is in cache
     * (fa_cluster_epilogue_desc); 0 otherwise. */
    int epilogue_generated;
    /* an estimated plan (fa_plan.estimated): each member's kernel time on the planned GPU, ns,
     * in members' order (fa_gpu_plan_kernel_time; an aliasing view 0: no kernel), the figures
     * est_saving_ns and its basis are made of (the fused kernel's is pred_fused_ns);
     * member_est_ns NULL otherwise. Not stored (arena). */
    double *member_est_ns;
} fa_cluster;

/* The applier's verdict on one cluster of the plan: a record of its own next to the advisor's
 * proposal, which the applier never writes. Starts as the advisor's decision
 * (fa_cluster_verdict_of) and becomes what the apply stage found. */
typedef struct fa_cluster_verdict {
    fa_cluster_status status;  /* ACCEPTED, REJECTED_*, NOT_TRIED, REFUSED (the advisor's, or the
                                  applier's slow-library-path), PROPOSED when never reached */
    fa_why_code refusal;       /* REFUSED: the decision's code; FA_WHY_NONE otherwise (not stored) */
    const char *reason;        /* why accepted / rejected / refused, with the numbers */
    double measured_saving_ns; /* paired median of the interleaved rounds (unfused - fused), ns; NAN not measured */
    double max_rel_error;      /* fused vs unfused outputs; < 0 not verified */
    int registers;             /* per thread of the kernel compiled for the device it ran on
                                  (else the advisor's gate figure); -1 none */
    int spill_bytes;           /* spill stores + loads, bytes; -1 none */
    int block_size;            /* threads per block; -1 none (not stored: the cluster's is) */
    /* the measured counterparts of the prediction's terms (issue 36): the applier's paired
     * benchmark, medians of its interleaved rounds; NAN not measured */
    double meas_unfused_ns;    /* the cluster's unfused sub-graph in isolation (members + their
                                  dispatch as the runtime runs them), ns */
    double meas_fused_ns;      /* the fused kernel (its sub-graph), ns */
    /* the saving as the whole model sees it (issue 36; applier/inmodel.c fa_apply_inmodel_savings):
     * from the end-to-end rounds' records of both models, not from a benchmark of the cluster
     * alone. Per round, the nodes the cluster's fused node replaces (its members, and the BN an
     * epilogue absorbs with its fold) take their kernels' time plus the idle time before each
     * kernel in the baseline's run; the fused node, and the reorders of the tensors it writes, the
     * same in the fused model's run; the saving is the median of the per-round differences (where
     * no baseline record of the rounds matches: the difference of the two traces' medians, the
     * baseline's from its own run). NAN: not measured (not accepted, no fused node of its own, a
     * node without records, no fused trace) */
    double inmodel_saving_ns;  /* ns per iteration */
    double inmodel_spread_ns;  /* the IQR of the per-round differences, ns (unpaired: the two
                                  sides' IQRs in quadrature); the spread of one round's
                                  difference, not the median's uncertainty; NAN with the saving */
} fa_cluster_verdict;
/* The verdict before the applier: the advisor's decision on c (status, refusal, reason, its gate
 * figures), nothing measured (NAN, -1). Strings borrowed from c. */
fa_cluster_verdict fa_cluster_verdict_of(const fa_cluster *c);

/* ---- the field table ----
 * X(OWNER, name, C type, KIND, JSON key, column): one row per field a cluster's record stores,
 * writes or shows, in the order of plan.json's keys. OWNER C: a member of fa_cluster; V: of
 * fa_cluster_verdict. JSON key NULL: not in the JSON; column NULL: not a column of table
 * `clusters` (post-ops have their own table, cluster_post_ops). KIND says how each consumer
 * converts it (FA_PF_*, below); arrays (IDS kinds) carry their count in n_<name>.
 * Adding a field: a member of the owner's struct and a row here (plan/plan.h), a migration adding
 * its column (store/schema.c, FA_STORE_SCHEMA_VERSION in store/store.h), the producer filling it,
 * docs/schema.md. The store's statements, the JSON writer and the reports' readers expand it. */
#define FA_CLUSTER_FIELDS(X)                                                                     \
    X(C, id, int, INT, "id", "cluster_id")                                                       \
    X(C, kind, fa_cluster_kind, KIND, "kind", "kind")                                            \
    X(C, label, const char *, STR, "label", "label")                                             \
    X(C, members, int *, NODE_IDS, "members", "members_json") /* JSON: node names */             \
    X(C, members, int *, NODE_OPS, "ops", NULL)              /* JSON: the members' op types */   \
    X(C, saved_bytes, uint64_t, U64, "saved_bytes", "saved_bytes")                               \
    X(C, score_bytes, uint64_t, U64, "score_bytes", "score_bytes")                               \
    X(C, saved_launches, int, INT, "saved_launches", "saved_launches")                           \
    X(C, recompute_ns, double, NS, "recompute_ns", "recompute_us")                               \
    X(C, est_saving_ns, double, NS, "est_saving_ns", "est_saving_us")                            \
    X(C, est_saving_pct, double, REAL, "est_saving_pct", "est_saving_pct")                       \
    X(C, basis, const char *, STR, "basis", "basis")                                             \
    X(C, pred_members_ns, double, NS, "pred_members_ns", "pred_members_us")                      \
    X(C, pred_dispatch_ns, double, NS, "pred_dispatch_ns", "pred_dispatch_us")                   \
    X(C, pred_fused_ns, double, NS, "pred_fused_ns", "pred_fused_us")                            \
    X(C, pred_ratio, double, REAL, "pred_ratio", "pred_ratio")                                   \
    X(C, est_spread_pct, double, REAL, "est_spread_pct", "est_spread_pct")                       \
    X(C, est_spread_n, int, INT_OPT, "est_spread_n", "est_spread_n")                             \
    X(C, est_lo_ns, double, NS, "est_lo_ns", "est_lo_us")                                        \
    X(C, est_hi_ns, double, NS, "est_hi_ns", "est_hi_us")                                        \
    X(V, registers, int, INT_OPT, "registers", "registers")                                      \
    X(V, spill_bytes, int, INT_OPT, "spill_bytes", "spill_bytes")                                \
    X(C, occupancy, double, REAL_OPT, "occupancy", "occupancy")                                  \
    X(V, status, fa_cluster_status, STATUS, "status", "status")                                  \
    X(V, reason, const char *, STR, "reason", "reason")                                          \
    X(V, measured_saving_ns, double, NS, "measured_saving_ns", "measured_saving_us")             \
    X(V, meas_unfused_ns, double, NS, "meas_unfused_ns", "meas_unfused_us")                      \
    X(V, meas_fused_ns, double, NS, "meas_fused_ns", "meas_fused_us")                            \
    X(V, inmodel_saving_ns, double, NS, "inmodel_saving_ns", "inmodel_saving_us")                \
    X(V, inmodel_spread_ns, double, NS, "inmodel_spread_ns", "inmodel_spread_us")                \
    X(V, max_rel_error, double, REAL_OPT, "max_rel_error", "max_rel_error")                      \
    X(C, anchor, int, INT_OPT, "anchor", "anchor")                                               \
    X(C, depends_on, int, INT_OPT, "depends_on", "depends_on")                                   \
    X(C, reduction, fa_reduce_kind, REDUCTION, "reduction", "reduction")                      \
    X(C, reduce_axis, int, INT_OPT, "reduce_axis", "reduce_axis")                                \
    X(C, epsilon, float, FLOAT, "epsilon", "epsilon")                                            \
    X(C, block_size, int, INT_OPT, "block_size", "block_size")                                   \
    X(C, members, int *, IDS, "member_ids", NULL)            /* JSON: the node ids */            \
    X(C, inputs, int *, TENSOR_IDS, "inputs", "inputs_json") /* JSON: tensor names */            \
    X(C, outputs, int *, TENSOR_IDS, "outputs", "outputs_json")                                  \
    X(C, post_ops, fa_post_op *, POST_OPS, "post_ops", NULL) /* table cluster_post_ops */        \
    X(C, epilogue_generated, int, INT, "epilogue_generated", "epilogue_generated")               \
    X(C, signature, const char *, STR, "signature", "signature")

/* How a field converts (the KIND column). "none" is how a field says absent: NULL in the
 * database, null in JSON unless said otherwise. */
typedef enum fa_plan_field_kind {
    FA_PF_INT,        /* int, always present */
    FA_PF_INT_OPT,    /* int, < 0 none (JSON null; -1 in the struct) */
    FA_PF_U64,        /* uint64_t */
    FA_PF_NS,         /* double ns, NAN none; the column holds µs (value / 1e3) */
    FA_PF_REAL,       /* double, NAN none */
    FA_PF_REAL_OPT,   /* double, < 0 or NAN none; read back as -1 (JSON null) */
    FA_PF_FLOAT,      /* float, NAN none */
    FA_PF_STR,        /* const char *, NULL none (JSON writes "" for NULL) */
    FA_PF_KIND,       /* fa_cluster_kind by fa_cluster_kind_name */
    FA_PF_REDUCTION,  /* fa_reduce_kind by fa_reduce_kind_name */
    FA_PF_STATUS,     /* fa_cluster_status by fa_cluster_status_name */
    FA_PF_IDS,        /* int[n_<name>], JSON an array of the ids */
    FA_PF_NODE_IDS,   /* int[n_<name>] node ids: the column a JSON array of ids, the JSON the names */
    FA_PF_NODE_OPS,   /* int[n_<name>] node ids: JSON their op types */
    FA_PF_TENSOR_IDS, /* int[n_<name>] tensor ids: the column a JSON array of ids, the JSON the names */
    FA_PF_POST_OPS,   /* fa_post_op[n_<name>]: JSON [{"op": fa_post_op_format, "operand": tensor
                         name or null}], rows of cluster_post_ops */
    FA_PF_KIND_COUNT
} fa_plan_field_kind;

typedef enum fa_plan_field_owner { FA_PF_OWNER_C, FA_PF_OWNER_V } fa_plan_field_owner;

/* One row of FA_CLUSTER_FIELDS as data. */
typedef struct fa_plan_field {
    const char *name;          /* the struct member */
    fa_plan_field_owner owner;
    fa_plan_field_kind kind;
    size_t offset;             /* offsetof the member in its owner's struct */
    size_t count_offset;       /* array kinds: offsetof n_<name> in fa_cluster; 0 otherwise */
    const char *json_key;      /* NULL: not written */
    const char *column;        /* NULL: not a column of `clusters` */
} fa_plan_field;
extern const fa_plan_field fa_cluster_fields[];
extern const int fa_cluster_n_fields;

/* Field access by row (the owner's struct chosen by f->owner). */
static inline void *fa_plan_field_ptr(const fa_plan_field *f, const fa_cluster *c, const fa_cluster_verdict *v)
{
    return f->owner == FA_PF_OWNER_C ? (void *)((char *)(uintptr_t)c + f->offset)
                                     : (void *)((char *)(uintptr_t)v + f->offset);
}
static inline int *fa_plan_field_count(const fa_plan_field *f, const fa_cluster *c)
{
    return (int *)(void *)((char *)(uintptr_t)c + f->count_offset);
}

/* An edge that could have fused and did not. */
typedef struct fa_why_not {
    int producer, consumer;    /* node ids (-1 if not applicable) */
    int tensor;                /* tensor id of the edge (-1 none) */
    fa_why_code code;          /* the decision's code (fa_why_code_name: "complex-consumer", ...) */
    const char *reason;        /* a sentence a person can read, with numbers */
} fa_why_not;

/* The options a plan was made with (stored in `plans`). */
typedef struct fa_plan_options {
    fa_target target;          /* cpu or cuda */
    const char *arch;          /* cuda arch of the gate, e.g. "sm_90"; NULL for cpu */
    int max_ops;               /* cap on ops per cluster; -1 unknown (a plan stored before v5) */
    int max_inputs;            /* cap on distinct external inputs per cluster; -1 unknown */
    double occupancy_floor;    /* the gate's floor, 0..1; NAN unknown */
    bool no_gate;              /* the register/occupancy gate was skipped */
} fa_plan_options;

/* How the plan's layout was decided (stored as the word of fa_layout_source_name in
 * plans.layout_source, schema v10; NULL = UNKNOWN). Only grows at its end. */
typedef enum fa_layout_source {
    FA_LAYOUT_SRC_UNKNOWN,  /* not decided (`advise`, a plan stored before v10): the target's
                               default when applied (fa_target_plan_layouts .deflt) */
    FA_LAYOUT_SRC_DEFAULT,  /* "default": nothing to choose — no convolution, fewer than two
                               candidate layouts, a target without layouts */
    FA_LAYOUT_SRC_MEASURED, /* "measured": candidates timed against the default on the whole model */
    FA_LAYOUT_SRC_ENV,      /* "env": FA_BLOCKED_LAYOUT named it */
    FA_LAYOUT_SRC_OPTION,   /* "option": --layout named it */
    FA_LAYOUT_SRC_COUNT
} fa_layout_source;
const char *fa_layout_source_name(fa_layout_source s); /* NULL for UNKNOWN and out-of-range values */
fa_layout_source fa_layout_source_parse(const char *word); /* NULL or an unknown word -> UNKNOWN */

/* The fused plan's layout (fa_exec_options.plan_layout) and, when measured, the figures that
 * decided it (applier/layout.c fa_layout_choose): the default's whole-model runs against a rival
 * layout's, paired rounds judged by fa_apply_paired_verdict. The rival is the candidate whose
 * figures are kept: the one chosen when one won, else the one nearest to winning (largest paired
 * median gain). Times in ns per whole-model run (the unfused graph on the plan's executor). */
typedef struct fa_plan_layout {
    fa_layout_source source;
    fa_layout layout;        /* the plan's layout (PLAIN: no blocked layout) */
    fa_layout deflt;         /* the target's default when decided */
    fa_layout rival;         /* measured: the rival layout; else PLAIN */
    int rounds;              /* measured: paired rounds default vs rival; else 0 */
    int verdict;             /* measured: fa_apply_paired_verdict's 1 (rival faster), 0, -1 */
    double default_median_ns, rival_median_ns; /* NAN unless measured */
    double gain_ns;          /* paired median of default - rival; NAN unless measured */
    double gain_lo_ns, gain_hi_ns; /* its sign-test interval (NAN unless measured, or n < 5) */
} fa_plan_layout;
/* An undecided layout: UNKNOWN, every figure NAN. */
fa_plan_layout fa_plan_layout_unknown(void);
/* The one sentence `run`'s answer and report.html give about the plan's layout (cap bytes,
 * snprintf's truncation; plain ASCII built from our own words and numbers), e.g. "plan layout
 * nhwc, measured: 8.120 ms per run against the default nChw16c's 9.450 ms, paired median gain
 * 1.330 ms (interval 1.100 to 1.520 ms) over 12 rounds: kept"; "" for UNKNOWN. Times in ms with
 * 3 decimals, as plan.json's ns round to. */
void fa_plan_layout_text(const fa_plan_layout *l, char *out, size_t cap);
/* fa_plan_layout as plan.json's "layout" object (null for UNKNOWN): {"layout", "source",
 * "default", "rival", "rounds", "verdict", "default_median_ns", "rival_median_ns", "gain_ns",
 * "gain_lo_ns", "gain_hi_ns"} — the measured figures null unless measured. */
void fa_plan_layout_json(fa_buf *b, const fa_plan_layout *l);

typedef struct fa_plan {
    fa_arena *arena;           /* every array and string of the plan (and of verdicts read with it) */
    int64_t run_id;            /* -1 when not from a stored run */
    int plan_id;               /* 0 until stored */
    char hash[65];             /* SHA-256 of the plan's canonical text (clusters, members, options) */
    fa_plan_options opt;
    bool estimated;            /* estimated for a GPU from its data sheet (advise --target cuda on a
                                  profile of another kind of device or none: fa_advise_options.device);
                                  not stored */
    double device_iter_ns;     /* when estimated: every kernel of the graph estimated on it, ns */
    int n_clusters;
    fa_cluster *clusters;      /* ranked by est_saving_ns, largest first */
    int n_why_not;
    fa_why_not *why_not;
    fa_plan_layout layout;     /* the fused plan's layout; UNKNOWN from fa_plan_create */
} fa_plan;
/* An empty plan with its arena (NULL when out of memory); run_id -1. */
fa_plan *fa_plan_create(void);
void fa_plan_free(fa_plan *p);

/* End-to-end verdict of an applied plan: the fused model with the clusters the applier kept
 * against the unfused one on the same inputs, after the back-off (applier/judge.c
 * fa_apply_e2e_wins, the clusters' paired-noise rule on the end-to-end samples). Stored as the
 * lowercase word of fa_e2e_verdict_name in plans.e2e_verdict (schema v6; NULL = not applied).
 * Only grows at its end. */
typedef enum fa_e2e_verdict {
    FA_E2E_NOT_APPLIED,       /* not measured end to end (no apply, or stored before v6) */
    FA_E2E_WIN,               /* "win": clusters kept, the fused model measurably faster */
    FA_E2E_LOSS,              /* "loss": clusters kept, the fused model not measurably faster
                                 even after the back-off: deploy the baseline */
    FA_E2E_NO_CLUSTERS,       /* "no-clusters": nothing kept, the fused model is the baseline */
    FA_E2E_MISMATCH,          /* "mismatch": the fused model's outputs differ from the unfused
                                 model's beyond FA_APPLY_E2E_TOLERANCE (applier.h): not deployable,
                                 no speedup claimed */
    FA_E2E_VERDICT_COUNT
} fa_e2e_verdict;
/* "win" | "loss" | "no-clusters" | "mismatch"; NULL for FA_E2E_NOT_APPLIED and out-of-range values. */
const char *fa_e2e_verdict_name(fa_e2e_verdict v);
/* The verdict a stored word names; NULL or an unknown word (a newer build's) -> NOT_APPLIED. */
fa_e2e_verdict fa_e2e_verdict_parse(const char *word);

/* The plan's predicted saving over its accepted clusters (v[i].status ACCEPTED; v has
 * p->n_clusters entries): the sum of their est_saving_ns, each removed kernel counted once — an
 * accepted EPILOGUE whose depends_on is an accepted BN_FOLD on the same anchor has that fold's
 * saving inside its own (its unfused sub-graph holds the BN and its fused kernel the folded conv:
 * docs/fusion-rules.md §8, applier/fused_graph.c), so the fold's est_saving_ns is not added again.
 * Counting every such BN twice made zoo ResNet-50 predict 35 ms against 27 ms measured end to end
 * (bench/README.md, "Visits and the trace's span"). ns; a cluster not accepted counts nothing. The
 * applier's result, `run`, summary.json and the report all take it from here. */
double fa_plan_accepted_saving(const fa_plan *p, const fa_cluster_verdict *v);

/* The spread quoted with c's predicted saving (issue 36), from its stored figures:
 *  - est_spread_pct and est_spread_n: " ± 35% (12 past epilogue clusters on this machine)" where
 *    the kind's past predictions missed by more than the measurements' own repeatability;
 *  - est_lo_ns..est_hi_ns, the prediction's own interval from its probe's pairs, where that
 *    interval reaches 0: " (about 0 by its probe's pairs: from a loss of 4.0 us to a saving of
 *    8.0 us)", or where its farther end lies more than FA_PREDICTION_TRUST_REL of |est_saving_ns|
 *    away: " ± 60% (its probe's pairs: saving 4.0..16.0 us)";
 * both, "; " apart, when both apply; "" otherwise (no history and a tight or no interval: one
 * figure is honest). Figures read back from a run database are untrusted: only finite ones, an
 * interval with lo < hi, are quoted. Into buf (cap bytes, always terminated); returns buf. The
 * advise text, `run`'s answer and the report all word it here. */
#define FA_PREDICTION_TRUST_REL 0.25 /* issue 36's target: a prediction within ±25 % of the saving */
const char *fa_cluster_spread_phrase(const fa_cluster *c, char *buf, size_t cap);

/* Which term of a prediction explains most of its miss (issue 36; docs/fusion-rules.md §8, "The
 * terms of a prediction"), from c's stored terms (M pred_members_ns, D pred_dispatch_ns, F
 * pred_fused_ns, r pred_ratio) and v's measured counterparts (U meas_unfused_ns, Fm meas_fused_ns),
 * the miss being v->measured_saving_ns - c->est_saving_ns:
 *   the fused side's error is F - Fm (FUSED), or with a ratio (r - Fm / U) x U (RATIO: the rest of
 *   F's error follows the members, F = r x M);
 *   the unfused side's error is the rest of the miss: DISPATCH when the unfused side was
 *   overpredicted (error < 0) and D is at least half of that error, else MEMBERS (the members'
 *   time moved between the profile and the benchmark);
 * the larger side names the term. NONE when a term or a measurement is missing (an analytic or
 * data-sheet prediction, a cluster not measured, a plan stored before schema v9).
 * bench/calibration.py (miss_term) applies the same rule over many runs. */
typedef enum fa_miss_term { FA_MISS_NONE, FA_MISS_MEMBERS, FA_MISS_DISPATCH, FA_MISS_FUSED, FA_MISS_RATIO } fa_miss_term;
fa_miss_term fa_cluster_miss_term(const fa_cluster *c, const fa_cluster_verdict *v);
/* "members", "dispatch", "fused", "ratio"; "" for NONE or out of range. */
const char *fa_miss_term_name(fa_miss_term t);

/* The plan's opportunities grouped by pattern (issue 37 "the answer first"): clusters that compute
 * the same thing (kind and label: "conv+bn+relu" epilogues, "layer_norm(decomposed)" reductions)
 * are one row, so a model with 38 conv+BN+ReLU epilogues reads as one line. */
typedef struct fa_plan_group {
    fa_cluster_kind kind;
    const char *label;         /* borrowed from the plan ("" when a cluster has none) */
    int n_clusters;            /* clusters of this pattern */
    int n_accepted;            /* of them accepted (verified and measured faster) */
    int n_inside;              /* accepted BN folds whose saving an accepted epilogue on the same
                                  conv already holds (their epilogue's group counts it) */
    int n_rejected, n_refused, n_other; /* the others by decision (other: proposed, not tried) */
    double measured_saving_ns; /* the accepted clusters' paired median savings, each removed kernel
                                  once (a fold inside an accepted epilogue adds nothing), ns per
                                  iteration; 0 when none accepted */
    double predicted_saving_ns;/* the same over their predictions (est_saving_ns) */
    double best_predicted_ns;  /* the largest prediction of any cluster of the group */
    const fa_cluster *best;    /* that cluster (borrowed from the plan): its est_spread_pct is the
                                  "±" quoted with best_predicted_ns */
    double max_rel_error;      /* the largest verified error of the accepted ones; < 0 none */
    fa_cluster_status decision;/* the commonest decision among the group's clusters (accepted,
                                  rejected, refused, other); rejected: the commonest rejection
                                  status among them (ties: the status table's order); other: the
                                  status of its first such cluster */
    const char *reason;        /* the reason of one cluster with that decision (the plan's or v's) */
} fa_plan_group;
/* The groups of plan p with verdicts v (p->n_clusters each; v NULL: the advisor's decisions) into
 * out (room for p->n_clusters), ranked: groups with an accepted cluster of their own saving by
 * measured saving, then groups kept only inside kept epilogues, then the others by best
 * prediction; returns how many. Pure: nothing allocated. */
int fa_plan_groups(const fa_plan *p, const fa_cluster_verdict *v, fa_plan_group *out);
/* When a group's clusters had more than one kind of decision, "(39 not tried, 1 rejected)" into
 * buf (cap bytes, always terminated); else "". Returns buf. */
const char *fa_plan_group_mix(const fa_plan_group *g, char *buf, size_t cap);
/* Why a group with no accepted cluster was not kept, in a few words, into buf (cap bytes, always
 * terminated; returns buf) — the first screen's and report.html's one phrase: "dropped by the
 * end-to-end back-off"; a refusal as predicted not beneficial, "refused, predicted slower" or
 * "refused, no predicted saving" (the row quotes the prediction beside it); another refusal, its
 * reason's first clause — up to its first ';' or the " (" that opens its details, cut at a word
 * with "..." past cap; else the decision's phrase (fa_cluster_status_phrase). */
const char *fa_plan_group_why(const fa_plan_group *g, char *buf, size_t cap);

/* A post-op back from its stored rendering (fa_post_op_format: "relu", "clip(0,6)",
 * "leaky_relu(0.1)"; the older "eltwise:relu" / "binary:add" too) with its operand tensor id.
 * False when the text names no kind (out untouched). */
bool fa_post_op_parse(const char *spec, int operand, fa_post_op *out);

/* plan.json's format: 2 since an absent optional figure (FA_PF_INT_OPT / FA_PF_REAL_OPT: a
 * cluster's registers, spills and occupancy when no kernel was compiled, anchor, depends_on,
 * reduce_axis, block_size, max_rel_error; the options' unknown caps; the run_id of a plan of no
 * run and the plan_id of one not stored) is written null; the documents before had no "format"
 * key and wrote -1 (plan_id 0). */
#define FA_PLAN_JSON_FORMAT 2

/* The plan as one JSON document, the one writer of plan.json and `advise --json`:
 *   {"format": FA_PLAN_JSON_FORMAT, "plan_hash", "run_id", "plan_id", "clusters": [one object per cluster, keys in
 *    FA_CLUSTER_FIELDS order], "why_not": [{"producer", "consumer", "tensor", "code", "reason"}],
 *    "options": {"target", "arch", "max_ops", "max_inputs", "occupancy_floor", "gate"},
 *    "layout": fa_plan_layout_json}
 * Node and tensor ids are written as g's names (g: the graph the plan was made for). v: the
 * applier's verdicts [p->n_clusters], or NULL for the advisor's decisions (fa_cluster_verdict_of).
 * `extra` (may be NULL): members written verbatim before the closing brace, each
 * `,"key":value` (the caller escapes them). Every string through fa_json_str. Appends to b
 * (b->oom on out of memory), ending with a newline. */
void fa_plan_json(fa_buf *b, const fa_graph *g, const fa_plan *p, const fa_cluster_verdict *v, const char *extra);

#endif
