/* advisor — from a prepared graph and its analysis to a fusion plan: legal clusters (vertical
 * elementwise chains, conv/gemm epilogues, BN folding, reductions with prologue/epilogue in one
 * reduction domain, horizontal fusion), the cost model, the register/occupancy gate for the
 * cuda target, and a readable reason for every producer→consumer edge that did not fuse. */
#ifndef FA_ADVISOR_H
#define FA_ADVISOR_H

#include "analyzer/analyzer.h"
#include "graph/graph.h"
#include "graph/post_op.h"
#include "runtime/runtime.h"
#include "plan/plan.h"
#include "store/store.h"

struct fa_plan;
/* What a probe of a fused library kernel measured (fa_fused_probe_fn). */
typedef struct fa_fused_probe_result {
    double median_ns;          /* the fused kernel's median time per run, ns */
    double unfused_median_ns;  /* its unfused sub-graph's, timed interleaved with it, ns (0: not
                                  timed: median_ns is used as it is) */
    double paired_ratio;       /* the median of the pairs' fused / unfused ratios
                                  (fa_stats_paired_ratio; 0 or NAN: not paired) */
    double ratio_lo, ratio_hi; /* that median's sign-test interval over the same pairs
                                  (fa_stats_paired_ratio_interval, >= 90% coverage): how far the
                                  ratio moves between the probe's own repetitions (issue 36).
                                  Known only when 0 < ratio_lo <= ratio_hi, both finite (NAN or 0:
                                  under 5 pairs, a stored probe, not paired) */
    int reps;                  /* timed runs (pairs) the medians are of */
    int wins;                  /* pairs in which the fused kernel was faster than the unfused
                                  sub-graph (-1: not paired) */
    /* the fused kernel against its members as the fused plan runs them when the cluster is left
     * unfused (their own layouts on the plan's executor, the fused kernel's boundary layouts),
     * timed only while it is not faster than the plain members (applier/probe.c time_visit): */
    double plan_unfused_median_ns; /* those members' median, ns (0: not timed) */
    double plan_ratio;         /* the median of those pairs' fused / members ratios (0: not timed) */
    double plan_ratio_lo, plan_ratio_hi; /* its sign-test interval, as ratio_lo / ratio_hi */
    int plan_reps, plan_wins;  /* those pairs, and the ones the fused kernel won (-1: not timed) */
    bool cached;               /* an earlier probe of the same signature (this run or stored) */
    char what[360];            /* the basis' sentence: the kernel, its layout and implementation,
                                  repetitions (or why nothing was measured) */
} fa_fused_probe_result;
/* (optional, fa_advise_options.probe) Measure the fused kernel of cluster p->clusters[ci] (a
 * BN_FOLD or EPILOGUE: a library kernel with its folded weights and post-ops) as the target's
 * fused plan will run it: its layout, its implementation. p is the plan being built: clusters
 * [0, ci] are filled (ci's dependency, a BN fold, among them), est_saving_ns not yet. signature:
 * fa_cluster_signature of that cluster. True with out filled when measured (or found measured);
 * false with out->what saying why not (budget spent, the kernel could not be built): the
 * advisor then keeps its profile model. Never fails the plan. applier/probe.c implements it. */
typedef bool (*fa_fused_probe_fn)(void *user, const fa_graph *g, const struct fa_plan *p, int ci, const char *signature,
                                  fa_fused_probe_result *out);

/* When a probe's predicted loss refuses a cluster (`not-beneficial`): only when every one of at
 * least FA_PROBE_LOSS_PAIRS interleaved pairs ran slower fused. With no true difference each pair
 * is a fair coin, so 5 losses in 5 happen by chance with P = 2^-5 = 3 % (the one-sided sign
 * test, Conover, Practical Nonparametric Statistics, sec. 3.2). Fewer pairs, or any pair faster
 * fused: the cluster is proposed with its negative prediction and the applier's adaptive
 * repetitions decide (on the loaded VM, of 57 probe refusals measured in another pass 20 were
 * accepted there: bench/README.md, issue-19e). */
#define FA_PROBE_LOSS_PAIRS 5
bool fa_probe_loss_resolved(int reps, int wins);

/* The path of a MatMul/Gemm epilogue that both the library's post-ops and a generated epilogue
 * express (docs/fusion-rules.md §3 "Generated epilogues", "Both paths"), from the probe's answers
 * for its two fused builds: post (the anchor with its post-ops) and gen (the product in blocks of
 * rows, the generated epilogue over each block), NULL or median_ns <= 0 when that build measured
 * nothing. Each build was timed against the same unfused sub-graph, so each is compared by its
 * fused/unfused figure — the median of its pairs' ratios where paired, else the ratio of its
 * medians (both timed at other moments: the ratio cancels the load each shared with its own
 * pairs, the raw medians do not) — and by its median when either has no ratio. True (generated)
 * when gen measured and post did not, or gen's figure is lower by more than
 * FA_EPILOGUE_PATH_MARGIN; false otherwise, a near-tie included: the post-op path is the default.
 * The margin: the two builds are not paired against each other, so a difference of a few per cent
 * is not resolved, and a plan that flipped path on it between runs would change its clusters'
 * labels and signatures for nothing (a smoke run of zoo:bert-layer chose generated on 0.962
 * against 0.965). */
#define FA_EPILOGUE_PATH_MARGIN 0.05
bool fa_epilogue_generated_faster(const fa_fused_probe_result *post, const fa_fused_probe_result *gen);

/* The cluster caps' defaults and bounds, for every verb that plans (advise, run, apply). A cluster
 * fuses two ops at least (one op under the cap would refuse every candidate: an empty plan that
 * reads as "nothing to fuse"); a fused node takes at most 64 external inputs (the applier's
 * fused-graph builder refuses a wider cluster), so a plan with more could not be applied; 1000
 * ops bounds one generated kernel's source and its compile. */
#define FA_ADVISE_MAX_OPS_DEFAULT 16
#define FA_ADVISE_MAX_OPS_MIN 2
#define FA_ADVISE_MAX_OPS_MAX 1000
#define FA_ADVISE_MAX_INPUTS_DEFAULT 8
#define FA_ADVISE_MAX_INPUTS_MIN 1
#define FA_ADVISE_MAX_INPUTS_MAX 64

typedef struct fa_advise_options {
    fa_target target;          /* cpu or cuda (gate runs for cuda) */
    const char *arch;          /* cuda arch for the gate, default "sm_90" */
    int max_ops;               /* cap on ops per cluster, FA_ADVISE_MAX_OPS_* */
    int max_inputs;            /* cap on distinct external inputs per cluster, FA_ADVISE_MAX_INPUTS_* */
    double occupancy_floor;    /* gate: refuse memory-bound kernels under this, default 0.5 */
    bool no_gate;              /* skip NVRTC compilation (tests that must not need the toolkit) */
    /* (optional) the GPU planned for (fa_gpu_plan_device: data-sheet roofs, launch, limits) when
     * the profile was measured on another kind of device (advise --target cuda on a CPU run), or
     * there is no profile (a model planned without a run) and the target is cuda:
     * every cluster's member kernels and fused kernel are then estimated on its roofs
     * (fa_gpu_plan_kernel_time) instead of the default ceilings, est_saving_pct is a share of
     * the whole graph estimated the same way, and the basis says so. Ignored when the profile is
     * of the target's own kind. Not owned. */
    const fa_gpu_plan_dev *device;
    /* fused kernels measured by earlier plans on the profile's device (fa_store_measured_fused,
     * sorted as it returns; may be NULL): a cluster with the same signature
     * (fa_kernel_signature_*) whose earlier measurement resolved its difference is predicted
     * with that kernel's measured time as its fused time instead of the roofline's: the measured
     * fused / unfused median ratio applied to the members' time in this profile (the earlier
     * pair was timed in isolation, round by round, this profile inside the model); its basis
     * says "fused time measured in run N". Not owned. */
    const fa_measured_fused *measured_fused;
    size_t n_measured_fused;
    /* (optional) the probe of fused library kernels (issue 19): with a measured profile of this
     * device, a BN_FOLD's or EPILOGUE's saving is what probe measures — its unfused sub-graph
     * (plain, as the baseline) less its fused kernel (the library kernel in the fused plan's
     * layout, with its post-ops), timed interleaved — instead of the profile's members less a
     * fused kernel predicted from the anchor the baseline timed in plain NCHW; the fused kernel's
     * time is the probe's; basis says "probe:" and quotes the profile's members. A probe that
     * measures nothing leaves the profile model ("probe not used: ..."). An epilogue that both
     * post-ops and a generated epilogue express is probed in both builds (the generated one a
     * cluster of a copy of the plan's, epilogue_generated 1) and takes the faster
     * (fa_epilogue_generated_faster; docs/fusion-rules.md §3 "Both paths"). NULL: no probe
     * (imported traces, a profile of another device, tests of the profile model). Not owned. */
    fa_fused_probe_fn probe;
    void *probe_user;
    /* (optional, with probe) one more visit of every signature probed so far (applier/probe.c
     * fa_kernel_probe_revisit); fa_advise asks the probe for every BN fold, epilogue and
     * generated kernel first,
     * calls this probe_visits - 1 times, then predicts from the medians over all visits.
     * NULL or probe_visits <= 1: one visit, asked as each cluster is predicted. */
    int (*probe_revisit)(void *user, const struct fa_plan *p);
    int probe_visits;
    /* (optional, with probe) Called once with the plan before any probing: compile every
     * generated kernel (chain, reduction, horizontal group) the probe may time in one batch, one
     * compiler process (fa_kernel_probe_prepare); returns how many it compiled. NULL: a
     * generated kernel is compiled when first probed. */
    int (*probe_prepare)(void *user, const fa_graph *g, const struct fa_plan *p);
} fa_advise_options;

/* The noise floor of a proposal (issue 19): a generated-kernel cluster (chain, reduction,
 * horizontal) whose predicted saving, resting on the measured profile, is below this fraction of
 * its members' measured time (their medians and gaps in the baseline trace) is refused
 * `below-noise` (a library anchor's BN fold or epilogue only by a measurement of its signature:
 * the target may run the fused anchor in another layout): a saving that small is inside what
 * kernel medians of one traced run move by between runs on a CPU (2-5 %, bench/README.md's A/A
 * rates) and what the applier's adaptive repetitions settle (core/stats.c
 * fa_paired_saving_settled, 1 % of the sub-graph) — it could be neither confirmed nor kept. */
#define FA_ADVISE_NOISE_FLOOR 0.02

/* The signature of cluster c of plan-ready graph g (fa_kernel_signature_*: kind — "epilogue(generated)"
 * for a generated epilogue, another kernel than post-ops on the same members —, then per member
 * in c's member order its op type, input shapes, output shapes, FLOPs and bytes), appended to
 * b: two clusters with the same text cost the same to run (the applier benchmarks one of them
 * per plan; the advisor looks up earlier measurements by it). */
void fa_cluster_signature(const fa_graph *g, const fa_cluster *c, fa_buf *b);

/* An operand of a MatMul as a fused node reads it (ONNX Runtime's FusedMatMul, issue 33): the
 * producers folded into the product — element-moving views (fa_op.view: Transpose, Reshape,
 * Squeeze, ...) read through strides, and Mul / Div by a scalar constant (a scale on an operand is
 * a scale of the product, oneDNN's output scale) — and the tensor it reads instead. */
#define FA_GEMM_PROLOGUE_MAX 8
typedef struct fa_gemm_operand {
    int source;                /* tensor id the fused node reads */
    int n_nodes;
    int nodes[FA_GEMM_PROLOGUE_MAX]; /* node ids folded, nearest the MatMul first */
    bool strided;              /* a view was folded: the operand is `source` read with dims/strides */
    int rank;
    int64_t dims[FA_MAX_RANK];    /* the operand's shape (the MatMul's input) */
    int64_t strides[FA_MAX_RANK]; /* elements of `source` per step of each dim; 0 where dims is 1 */
    double scale;              /* the product of the folded scalar factors (1: none) */
} fa_gemm_operand;
/* Whether node `node` may be folded (the advisor: unclaimed and live; the applier: a member of
 * the cluster). */
typedef bool (*fa_gemm_take_fn)(void *user, const fa_graph *g, int node);
/* Operand `input` (0: A, 1: B) of MatMul node mm, walking back from it through producers that
 * `take` accepts, each output read by the next op only and not a graph output: views whose index
 * map gives every axis one stride (fa_view; no broadcast axis of more than one element) with one
 * of the two matrix axes contiguous (oneDNN's plain and transposed matrices), and scalar scales.
 * The longest such chain from the operand that folds something worth a kernel (a view that moves
 * elements, or a scale; reshapes alone move nothing) is *out; false (out->n_nodes 0, source the
 * operand) when there is none. The same graph, node and take give the same answer: the advisor
 * finds a fold with it, the applier rebuilds it from the cluster's members. */
bool fa_gemm_operand_fold(const fa_graph *g, const fa_node *mm, int input, fa_gemm_take_fn take, void *user,
                          fa_gemm_operand *out);

/* Build a plan for prepared graph g. `a` (may be NULL) supplies measured times and ceilings;
 * without it, costs use the registry's bytes with default ceilings. The graph must outlive the
 * plan (ids refer to it). *out owned by caller (fa_plan_free). */
fa_status fa_advise(fa_ctx *ctx, const fa_graph *g, const fa_analysis *a, const fa_advise_options *opt,
                    fa_plan **out);
/* How far the predicted savings of one cluster kind have missed on this machine (issue 36): over
 * the clusters of `kind` in v[0..n) (fa_store_measured_fused: earlier plans' clusters benchmarked
 * on the same device and threads) whose paired measurement resolved its saving
 * (measured_fused.resolved) and whose predicted saving is known and non-zero, each benchmark once
 * (clusters of one plan with one signature share the first one's rounds: only the smallest
 * cluster id of them counts, with its own prediction):
 *   spread_pct = the 80th percentile (type 7) of |measured - predicted| / |predicted| x 100, the
 *                measured saving being the paired median of the applier's rounds; 0 for a
 *                cluster "about 0, within repeatability" (|predicted| and |measured| both within
 *                the IQR of its paired per-round differences: agreement, as
 *                bench/calibration.py counts it);
 *   repeat_pct = the 80th percentile of the measurement's own half-interval (the paired
 *                differences' sign-test interval, (hi - lo) / 2) / |predicted| x 100: how far
 *                the measurement itself could move the same ratio;
 *   quote      = n >= FA_ADVISE_SPREAD_MIN_PAST and spread_pct > repeat_pct: the kind cannot be
 *                predicted within the machine's own repeatability, so its predictions are quoted
 *                with "± spread_pct%".
 * The 80th percentile: the target is 80% of clusters within ±25%, so a kind meets it
 * exactly when spread_pct <= 25. n 0: no history (spread_pct and repeat_pct NAN). */
#define FA_ADVISE_SPREAD_MIN_PAST 5
typedef struct fa_kind_spread {
    int n;
    double spread_pct, repeat_pct;
    bool quote;
} fa_kind_spread;
void fa_advise_kind_spread(const fa_measured_fused *v, size_t n, fa_cluster_kind kind, fa_kind_spread *out);

/* Defaults: cpu target, arch "sm_90", max_ops FA_ADVISE_MAX_OPS_DEFAULT, max_inputs
 * FA_ADVISE_MAX_INPUTS_DEFAULT, occupancy_floor 0.5, gate on. */
fa_advise_options fa_advise_options_default(void);

/* BatchNormalization folding (inference): with s = gamma / sqrt(var + eps) (eps = the BN
 * node's own `epsilon`, default 1e-5; ONNX BatchNormalization spec):
 * - Conv, weight [C_out, C_in/group, k...]: W'[o,...] = W[o,...]·s[o] (grouped and depthwise
 *   alike); b'[o] = (b[o] − mean[o])·s[o] + beta[o] (b = 0 when the Conv has no bias).
 * - ConvTranspose, weight [C_in, C_out/group, k...]: output channel o = grp·(C_out/group) + j
 *   lives at W[grp·(C_in/group) .. (grp+1)·(C_in/group) − 1, j, ...]: scaled by s[o] along
 *   axis 1 within each group; bias as for Conv.
 * - Gemm Y = alpha·A'·B' + beta·C (BN over Y's axis 1, N = C_out): column n of B' is scaled by
 *   s[n] (rows of B when transB=1); alpha is unchanged; the new C is
 *   C'[r,n] = beta·C[r,n]·s[n] + (beta_bn[n] − mean[n]·s[n]) and the folded Gemm must use
 *   beta = 1. *b_count is N (C' of shape [N]) unless C varies along rows ([M,N] or [M,1]),
 *   then M·N (C' of shape [M,N]).
 * Outputs are malloc'd (caller frees); *w_count = numel of W. FA_ERR_INPUT naming the node
 * when a parameter is not a float32 constant or the shapes disagree; outputs untouched then. */
fa_status fa_bn_fold(fa_ctx *ctx, const fa_graph *g, const fa_node *producer, const fa_node *bn, float **new_w,
                     size_t *w_count, float **new_b, size_t *b_count);
/* ---- an estimated plan beside a trace measured on that GPU (advisor/against.c) ---- */

/* One member of a cluster against the trace. */
typedef struct fa_against_member {
    int node;                  /* node id */
    double est_ns;             /* its kernel on the planned GPU (fa_cluster.member_est_ns); 0: no kernel */
    const char *op;            /* the trace's cpu op it matched ("aten::addmm"); NULL unmatched */
    const char *shapes;        /* that op's input shapes as the trace stores them (NULL unknown) */
    int64_t calls;             /* the op's calls with those shapes in the trace */
    double measured_ns;        /* their kernels' time per call, ns; NAN unmatched */
    const char *why;           /* unmatched: why, a sentence (arena); NULL matched */
} fa_against_member;

/* One cluster against the trace. */
typedef struct fa_against_cluster {
    int cluster;               /* index in the plan's clusters */
    int n_members;             /* the cluster's members, in its order */
    fa_against_member *members;
    int n_kernels;             /* members that are a kernel on the GPU (est_ns > 0) */
    int n_matched;             /* of them matched */
    double est_ns, measured_ns;/* sums over the matched members, ns */
    const char *one_op;        /* a reduction or GELU chain whose whole function the trace ran as
                                  one op ("aten::layer_norm" over the cluster's input): NULL none */
    int64_t one_op_calls;
    double one_op_ns;          /* that op's kernels per call, ns: set beside the cluster's pred_fused_ns */
    bool residual_apart;       /* one_op is a norm and the cluster also holds its residual Add
                                  (fa_adv_residual_add_in), which PyTorch ran apart as aten::add */
} fa_against_cluster;

/* An estimated plan (fa_plan.estimated) beside an imported trace's measured kernels. */
typedef struct fa_against {
    int64_t trace_run;
    const char *trace_device;  /* the trace's device name; NULL unknown */
    const char *trace_part;    /* its row of the device table ("A100 80GB SXM"); NULL not tabled */
    const char *plan_part, *plan_arch; /* the part and arch the plan was estimated for */
    bool compared;             /* false: the trace ran on another part or an unknown one (why says
                                  which), and no member is matched */
    bool few;                  /* fewer than half the member kernels matched: the trace may be of
                                  another model or other shapes (why says so); no overall ratio */
    const char *why;           /* when !compared or few: the sentence; else NULL (arena) */
    int n_kernels, n_matched;  /* over all clusters */
    int n_explained;           /* matched, or members of a cluster the trace ran as one op */
    double est_ns, measured_ns;/* over the matched members, ns */
    double ratio;              /* measured_ns / est_ns; NAN when not compared, few or none matched */
    int n_clusters;
    fa_against_cluster *clusters; /* one per plan cluster, the plan's order */
} fa_against;

/* Set plan p (estimated for dev; made for g) beside trace advice ta (stored as run trace_run):
 * when ta's device is dev's part (the same row of the device table), each cluster member is
 * matched to the trace's cpu ops: an op whose key (fa_ta_key_of_op: aten::addmm -> gemm) is the
 * member's ONNX op type's and whose inputs hold every non-scalar input's element count of the
 * member (layouts differ: [1,128,768] is aten's [128,768]) — exactly one such (op, shapes) in the
 * trace, else unmatched with the reason (none, or several that fit: no pairing is guessed). The
 * measured time per call is the op's kernels' time with those shapes over its calls (the trace's
 * roofline points). A reduction (layer_norm, softmax, RMS norm), GELU chain or GELU epilogue the
 * trace ran as one op (the op of that kind reading a tensor of the cluster's output size, one
 * such in the trace) is matched whole (one_op). Fewer than half the member kernels matched or
 * in such a cluster: `few`. Arrays and strings from ar. FA_ERR_INPUT when p is not
 * estimated (member_est_ns absent); FA_ERR_NOMEM. */
struct fa_trace_advice;
fa_status fa_plan_against_trace(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const fa_gpu_plan_dev *dev,
                                const struct fa_trace_advice *ta, int64_t trace_run, fa_arena *ar, fa_against *out);

/* Store the plan (plans, clusters, why_not tables); sets p->plan_id. */
fa_status fa_plan_save(fa_ctx *ctx, fa_store *st, fa_plan *p);

#endif
