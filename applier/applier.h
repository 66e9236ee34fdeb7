/* applier — closes the loop: turns proposed clusters into fused kernels (oneDNN post-ops for
 * conv/gemm epilogues, rewritten weights for BN folding, generated C compiled by the system
 * compiler for elementwise chains, reductions and horizontal fusion), verifies each against the
 * unfused ops on the same inputs, benchmarks it, accepts only measured wins, and measures the
 * whole fused model against the unfused baseline. */
#ifndef FA_APPLIER_H
#define FA_APPLIER_H

#include "advisor/advisor.h"
#include "advisor/codegen.h"
#include "runtime/ceilings.h"
#include "runtime/fused.h"
#include "runtime/layout.h"

/* Largest accepted verification tolerance: a relative error of 10% already lets a fused kernel
 * that drops a term of the expression pass; beyond it verification would no longer verify.
 * fa_apply refuses a tolerance that is not finite or outside (0, this]. */
#define FA_APPLY_TOLERANCE_MAX 0.1

/* The apply stage's bounds (docs/codegen.md "Bounded apply"): at most this many clusters are
 * tried, highest predicted saving (est_saving_ns) first, and no new cluster is started once the
 * stage has run this long; the others keep status FA_CLUSTER_NOT_TRIED with the reason. 256
 * clusters: ResNet-50's whole plan fits, a 100,000-node elementwise chain's 6,250 do not;
 * 600 s: about what 256 generated clusters take to compile, verify and benchmark here. */
#define FA_APPLY_MAX_CLUSTERS_DEFAULT 256
#define FA_APPLY_BUDGET_S_DEFAULT 600.0
/* End-to-end verification: the fused model's outputs against the unfused model's on the same
 * inputs, max |fused - unfused| / max|unfused| over every output, must not exceed
 * max(FA_APPLY_E2E_TOLERANCE, fa_apply_options.tolerance). 1e-4: each cluster is already verified
 * (1e-5, or its reduction's rounding-error bound); whole fp32 CNNs and transformer blocks whose
 * convs and GEMMs oneDNN reassociates measured 2e-8 to 6.5e-7 here (zoo, corpus and exporter-survey
 * models, bench/README.md), while a wrong kernel or layout gives 1e-2 to 1. Above it the plan is
 * a MISMATCH: nothing is claimed, `run` exits 1. */
#define FA_APPLY_E2E_TOLERANCE 1e-4
/* The same limit for a model that rounds values to steps on the way to its outputs
 * (QuantizeLinear, DynamicQuantizeLinear, the QLinear and Integer ops, Round: fa_apply_rounding_op).
 * A value on a rounding tie moves a whole step under any other rounding of the sum before it — a
 * blocked layout's, another engine's — so the outputs differ by steps, not by float rounding: an
 * int8 step is 1/255 of a tensor's range (3.9e-3), and on ONNX Runtime's own quantized exports
 * the fused model with no cluster kept (its blocked layouts only) differed from the plain one by
 * 6.9e-3 (SqueezeNet 1.1, QDQ: a step flipped and carried through the convolutions after it) and
 * 7.5e-4 (DistilBERT, dynamic quantization), where each cluster verified within 2.2e-7 and
 * ONNX Runtime itself differs from us by a step on 2 of 387,200 elements. 1e-2 holds them while a
 * wrong kernel or layout still gives 1e-2 to 1 (above). */
#define FA_APPLY_E2E_TOLERANCE_ROUNDING 1e-2

/* Test hook: the defect a deliberately wrong fused kernel carries (fa_apply_options
 * inject_wrong_cluster). Verification must reject every one; the sizes are what the rounding-error
 * bound resolves on a 576-term reduction (docs/runtime.md "Verification bound"). */
typedef enum fa_apply_defect {
    FA_APPLY_DEFECT_ADD_ONE,      /* the first output + 1.0 (a BN fold: its folded bias + 1) */
    FA_APPLY_DEFECT_WEIGHT,       /* Conv/Gemm anchors: the weight of largest magnitude off by 10 % */
    FA_APPLY_DEFECT_DROP_POST_OP, /* epilogues: the last post-op left out */
    FA_APPLY_DEFECT_BIAS,         /* Conv/Gemm anchors: bias element 0 off by 5 % of the largest
                                     |bias| (0.05 when every bias is 0) */
    FA_APPLY_DEFECT_COUNT
} fa_apply_defect;

typedef struct fa_apply_options {
    fa_target target;       /* the execution target (its table: runtime.h fa_target_iface);
                               AUTO: a GPU when one is present, else cpu. Default cpu. */
    const char *arch;       /* cuda: architecture the fused kernels are compiled for (NULL: the
                               device's own) */
    double tolerance;       /* max |fused-unfused| / max(max|unfused|, 1e-12) of clusters without
                               a reduction to reassociate (those with a Conv/Gemm/MatMul are
                               verified by the rounding-error bound of applier/bound.c,
                               docs/codegen.md "Verification bound"); default 1e-5 (fp32);
                               finite, in (0, FA_APPLY_TOLERANCE_MAX] */
    int iters;              /* timed iterations per benchmark, default 20 */
    int warmup;             /* untimed runs first: W >= 0 exactly, or FA_WARMUP_AUTO (default: by time, core.h) */
    int threads;            /* executor threads, 0 = all cores */
    uint64_t seed;          /* inputs (uniform [-1,1)), default 1 */
    const char *out_dir;    /* where kernels/ are written (NULL: not written) */
    const char *cache_dir;  /* compiled shared objects by source hash; NULL: $XDG_CACHE_HOME or
                               ~/.cache/fuse-advise, falling back to the private temp folder
                               (fa_kernel_cache_open) */
    uint64_t cache_max_bytes; /* 0: FA_KERNEL_CACHE_MAX_BYTES_DEFAULT */
    int max_clusters;       /* clusters tried, highest predicted saving first; 0: FA_APPLY_MAX_CLUSTERS_DEFAULT */
    double budget_s;        /* apply-stage time budget (s); 0: FA_APPLY_BUDGET_S_DEFAULT */
    int inject_wrong_cluster; /* test hook: >= 0 makes that cluster's fused kernel carry the
                                 defect inject_defect (must be rejected by verification); -1 off */
    fa_apply_defect inject_defect; /* default FA_APPLY_DEFECT_ADD_ONE */
    int inject_e2e_cluster; /* test hook: >= 0 puts that cluster, carrying inject_defect, into the
                               end-to-end fused model whatever its verdict (a wrong kernel that
                               reached the whole model: the end-to-end verification must catch
                               it); -1 off */
    fa_progress_fn progress;  /* may be NULL: the stages in order, each from (step, 0 or 1, total)
                                 to (step, total, total): "capture" (the unfused run feeding the
                                 clusters, 1), "compile" (the generated kernels, 1), "verify"
                                 (clusters prepared and verified, tried ones), "apply" (benchmark
                                 visits), "e2e" (the whole fused model, 1); fa_pipeline_run adds
                                 "advise" (the plan and its probe, 1) before them */
    void *progress_user;
} fa_apply_options;
void fa_apply_options_default(fa_apply_options *o);

/* fa_sample_stats (per-iteration sample summary) lives in core/core.h, the statistics unit. */

/* Which plan cluster each node of a fused model stands for, from the build that made it
 * (applier/fused_graph.c): reliable where node names are not (a model may name a node
 * "fused_c3"), and with no attribute on a standard op (a Conv carrying a BN fold stays a valid
 * ONNX Conv). Cluster ids, -1 none. */
typedef struct fa_fused_map {
    int *source;   /* [n_source], by node id of the source graph: the cluster whose fused node
                      replaces it (an epilogue's holds its absorbed BN fold's members) */
    int n_source;
    int *fused;    /* [n_fused], by node id of the fused graph: the cluster whose fused node it is
                      (or another node that cluster's rewrite added); -1 a node copied unchanged */
    int n_fused;
} fa_fused_map;
/* Frees the arrays and zeroes *map; NULL or an empty map: nothing. */
void fa_fused_map_free(fa_fused_map *map);

/* fa_cluster_verdict, the applier's verdict on one cluster, is one of the plan's records (plan/plan.h). */

typedef struct fa_apply_result {
    fa_arena *arena;                   /* the verdicts' reasons */
    fa_cluster_verdict *verdicts;      /* [n_verdicts], one per plan cluster, in plan order */
    int n_verdicts;
    fa_sample_stats baseline, fused;   /* end-to-end per iteration */
    double *baseline_samples, *fused_samples; /* iters each (owned) */
    int n_samples;
    double speedup;                    /* baseline median / fused median */
    uint64_t peak_bytes_baseline, peak_bytes_fused;
    int kernels_baseline, kernels_fused; /* per iteration */
    double e2e_max_rel_error;          /* model outputs, fused vs unfused */
    int accepted, rejected;
    double predicted_saving_ns;        /* accepted clusters' est_saving_ns, each removed kernel
                                          once (fa_plan_accepted_saving: a BN fold inside an
                                          accepted epilogue not added again) */
    double measured_saving_ns;         /* baseline median - fused median */
    /* end to end (applier/judge.c fa_apply_e2e_wins): true when the fused model with the kept
     * clusters is measurably faster; e2e_loss when clusters were kept but the model is not
     * (after backed_off clusters were dropped by the back-off): the plan is a loss */
    bool e2e_wins, e2e_loss;
    /* the fused model's outputs differ from the unfused model's beyond FA_APPLY_E2E_TOLERANCE:
     * neither a win nor a loss, no back-off (each cluster passed its own verification, so the
     * fault is in composing them: the layouts or the executor); e2e_tolerance the limit used */
    bool e2e_mismatch;
    double e2e_tolerance;
    /* the op type that made it FA_APPLY_E2E_TOLERANCE_ROUNDING (fa_apply_rounding_op: a static
     * string), NULL when the model rounds nothing */
    const char *e2e_rounding_op;
    /* reorder kernels per run of the fused model (fa_exec_reorders): > 0 when it runs on the
     * target's blocked layouts, so it differs from the baseline even with no cluster kept;
     * layouts_dropped when the back-off ran it plain in the end (then it is the baseline) */
    int e2e_reorders;
    /* the end-to-end rounds timed each model back to back, each timed run after an untimed run of
     * the same model (fa_apply_e2e_back_to_back: a pair of runs under 50 ms), not right after the
     * other model's run */
    bool e2e_back_to_back;
    bool layouts_dropped;
    int backed_off;
    /* per-cluster benchmark samples (ns per run of the cluster's sub-graph), owned */
    int n_cluster_samples;             /* room per cluster (the stride below): iters x
                                          FA_APPLY_REPEAT_MAX, the adaptive repetitions' cap */
    int n_cluster_bench;
    int n_benchmarked;                 /* of those rows, the benchmarks taken: a cluster sharing an
                                          earlier one's (the same signature, repeated layers) has a
                                          row of the same samples and is not counted again */
    int kernels_compiled;              /* generated kernels compiled: one per distinct code
                                          (fa_generated.same_as), not one per cluster */
    int *cluster_ids;                  /* [n_cluster_bench] */
    int *cluster_n_samples;            /* [n_cluster_bench]: rounds taken (iters .. the cap) */
    double *cluster_unfused;           /* [n_cluster_bench * n_cluster_samples], the first
                                          cluster_n_samples[k] of row k used */
    double *cluster_fused;
    /* the fused model and its kernel trace (one record per kernel per timed iteration), owned;
     * stored as a run of kind 'fused' tagged "fused-of:<baseline run id>" */
    fa_graph *fused_graph;
    fa_trace *fused_trace;
    /* the baseline's side of the same end-to-end rounds, recorded as fused_trace is (cpu; NULL
     * elsewhere), owned, not stored: timed iteration k of each is round k, which pairs each
     * cluster's saving in the model round by round (fa_apply_inmodel_savings) */
    fa_trace *baseline_rounds_trace;
    fa_fused_map fused_map;            /* fused_graph's nodes and g's by cluster (owned) */
} fa_apply_result;
void fa_apply_result_free(fa_apply_result *r);

/* Apply plan p (clusters with status PROPOSED) to prepared graph g on opt->target, through the
 * target's table: every tried cluster's generated kernel in the target's language
 * (fa_codegen), compiled by the target (cpu: the system compiler into the kernel cache; cuda:
 * NVRTC for opt->arch or the device's own), run by the target's executor through a kernel
 * provider; BN folds and epilogues as rewritten graphs (a fused node the target cannot run is
 * rejected with the target's sentence: cuda has no Fused* nodes and names the library epilogue
 * that would fit). Each cluster is verified against its unfused sub-graph on the same inputs
 * and benchmarked interleaved; it is accepted only beyond the paired noise; then the whole
 * fused model is measured against the unfused one and its kernel trace collected by the
 * target's trace source (fa_collect). The plan is read only: each cluster's status, reason,
 * measured saving and error are its verdict in (*out)->verdicts; a cluster that fails codegen, compile, verification or
 * shows no gain is rejected and the run goes on without it. Errors before anything is done:
 * "cannot apply on cuda: no CUDA driver (...)" / "no CUDA device" / "this build has no executor
 * for it". *out owned by caller. */
fa_status fa_apply(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const fa_apply_options *opt,
                   fa_apply_result **out);

/* A copy of g with the given clusters applied (ids; NULL/0 = every cluster whose verdict in v
 * [p->n_clusters] is ACCEPTED, or with v NULL every cluster the plan proposes): BN folds rewrite
 * weights, post-op epilogues become Fused* nodes, generated-kernel clusters become
 * ai.fuse-advise.FusedKernel nodes (a generated epilogue's with its product described: `gemm`,
 * `gemm_inputs` and the Gemm's transB/alpha/beta, run by fa_target_fused_node_kernel). The result is prepared and indexed; it shares g's constants
 * (their blobs: no weight is copied, and the derived copies executors make of them are shared
 * too), and owns the constants a fold made. */
fa_status fa_fused_graph(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const fa_cluster_verdict *v,
                         const int *cluster_ids, int n_ids, fa_graph **out);
/* g with only its BN_FOLD clusters applied, as standard ONNX ops (exportable, what
 * model.folded.onnx holds): those the plan proposes, or refuses for their speed alone
 * (not-beneficial, below-noise, measured-loss: still legal folds), and the verdicts v (NULL: none
 * yet) did not reject for their numerics or an error. */
fa_status fa_bn_folded_graph(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const fa_cluster_verdict *v,
                             fa_graph **out);

/* ---- the fused plan's layout (applier/layout_choice.c, docs/runtime.md "The plan's layout") ----
 * Rounds of the whole-model measurement, per rival layout: FA_LAYOUT_ROUNDS paired rounds, then
 * FA_LAYOUT_ROUNDS_STEP more at a time until the rounds settle (fa_apply_rounds_settled, the
 * clusters' stop rule) or FA_LAYOUT_ROUNDS_MAX are taken. 6: the paired verdict needs 5 rounds
 * for an interval; 18: three blocks, so that a 35 ms ResNet-50 adds about 1.3 s per rival at most
 * (2 x 18 runs), the run time the issue allows for "a few rounds". */
#define FA_LAYOUT_ROUNDS 6
#define FA_LAYOUT_ROUNDS_STEP 6
#define FA_LAYOUT_ROUNDS_MAX 18
/* The plan's layout for prepared graph g on `target` with `threads` into *out:
 *  - request >= 0 (an fa_layout: --layout): that one, source OPTION (FA_ERR_USAGE when the
 *    target cannot run convolutions on it here; PLAIN is always allowed: no blocked layout);
 *  - else FA_BLOCKED_LAYOUT set: the target's default, which it named, source ENV;
 *  - else, when g has a convolution (fa_layout_starts_region) and the target offers at least two
 *    layouts (fa_target_plan_layouts), MEASURED: g (unfused) on a plan executor in the default
 *    layout against one in each other candidate, interleaved paired whole-model rounds
 *    (fa_apply_bench_pair; FA_LAYOUT_ROUNDS..FA_LAYOUT_ROUNDS_MAX, fa_apply_rounds_settled),
 *    one rival's executor alive at a time (weights shared: docs/runtime.md "Weights once in
 *    memory"), judged by fa_layout_judge;
 *  - else the default, source DEFAULT, no figures.
 * request: -1 for auto. Errors: fa_target_resolve's (a target this build lacks), the executors'
 * (a model the target cannot run), out of memory. */
fa_status fa_layout_choose(fa_ctx *ctx, const fa_graph *g, fa_target target, int threads, int request,
                           fa_plan_layout *out);
/* The layout plan p runs in on `target`: its decided layout (fa_plan.layout), or the target's
 * default when p's is UNKNOWN (`advise`, a plan stored before schema v10). */
fa_layout fa_apply_plan_layout(const fa_plan *p, fa_target target);

/* ---- the cost model's probe of fused library kernels (applier/probe.c, issue 19) ---- */

/* A probe times a BN fold's or an epilogue's fused kernel (the folded Conv/Gemm with its
 * post-ops) against its unfused sub-graph, both built by fa_fused_graph_scoped exactly as the
 * applier builds them, on the target's executor: the fused one with blocked layouts on and its
 * boundary tensors in the layouts the fused plan gives them (fa_layout_plan_make over the graph:
 * every node in the target's preferred layout, whatever that is on this machine: nChw16c,
 * nChw8c, plain), the unfused one plain (the baseline's), fed deterministic values, interleaved
 * (the order alternating): FA_PROBE_WARMUP untimed pairs, then pairs until FA_PROBE_MIN_REPS of
 * them took FA_PROBE_SLICE_MS or FA_PROBE_REPS were taken; medians (core/stats.c). One probe per
 * signature (fa_cluster_signature + boundary layouts) per plan: ResNet-50's repeated blocks
 * share theirs. All probes of one plan together stop starting after budget_s seconds (graph
 * building, executor creation, warm-up and timed runs counted): later clusters keep the profile
 * model, and say so. Measured with 2 threads on the shared VM at load 6.6 (bench/README.md,
 * issue-19e): ResNet-50 b1's 102 library clusters took 43 probes (59 served from the cache) in
 * 1.8 s, MobileNetV2's 97 took 53 in 0.8 s — against a 20 s budget. */
#define FA_PROBE_WARMUP 1
#define FA_PROBE_MIN_REPS 3
#define FA_PROBE_REPS 7
#define FA_PROBE_SLICE_MS 20.0
#define FA_PROBE_BUDGET_S 20.0
/* Visits per probed signature (issue 19): the first when the advisor asks, then one more per
 * fa_kernel_probe_revisit, each FA_PROBE_MIN_REPS..FA_PROBE_REPS pairs on executors built afresh,
 * the medians over all of them. Spread over the advisor's probing (seconds), the ratio stops
 * resting on one phase of the machine's memory bandwidth (bench/README.md, "Calibration"). */
#define FA_PROBE_VISITS 3
typedef struct fa_kernel_probe fa_kernel_probe;
/* A probe for prepared graph g (which must outlive it) on `target` with `threads` threads (the
 * baseline's: 0 = all cores); budget_s <= 0: FA_PROBE_BUDGET_S. FA_ERR_UNSUPPORTED when the
 * target is not built or has no device (cuda without a GPU: the advisor keeps its profile
 * model); FA_ERR_NOMEM. */
fa_status fa_kernel_probe_create(fa_ctx *ctx, const fa_graph *g, fa_target target, int threads, double budget_s,
                                 fa_kernel_probe **out);
void fa_kernel_probe_free(fa_kernel_probe *p);
/* The plan layout p's fused executors and generated kernels take (fa_exec_options.plan_layout,
 * resolved; the plan's fa_apply_plan_layout), so that the probe times what the applier will run;
 * the target's default until set. Set it before the first probe. Errors: FA_ERR_NOMEM. p NULL:
 * nothing. */
fa_status fa_kernel_probe_set_layout(fa_ctx *ctx, fa_kernel_probe *p, fa_layout plan_layout);
/* The compile cache for the generated kernels p probes (chains, reductions, horizontal groups:
 * fa_codegen, then the target's fused_compile with fa_fused_compile_options{cache_dir,
 * cache_max_bytes}, as the applier compiles them; cache_dir NULL: the target's default). The
 * string is copied. Errors: FA_ERR_NOMEM. p NULL: nothing. */
fa_status fa_kernel_probe_set_cache(fa_ctx *ctx, fa_kernel_probe *p, const char *cache_dir, uint64_t cache_max_bytes);
/* The fa_fused_probe_fn of fa_advise_options (user = an fa_kernel_probe made for the same g). A
 * kernel that cannot be built or run gives false with the reason in out->what (the applier then
 * rejects the cluster with its own reason); nothing is printed, the plan never fails. */
bool fa_kernel_probe_fused(void *user, const fa_graph *g, const fa_plan *p, int ci, const char *signature,
                           fa_fused_probe_result *out);
/* One more visit of every signature probed so far for plan p (fewer than FA_PROBE_VISITS visits,
 * measured, within the budget): its sub-graphs built again from p (the cluster it was first
 * probed for, checked to have the same signature and layouts), FA_PROBE_MIN_REPS..FA_PROBE_REPS
 * more interleaved pairs, the entry's medians over all its pairs. Entries of another plan are
 * served as they are, never revisited. fa_advise calls it through
 * fa_advise_options.probe_revisit between its probing sweeps, with the plan being built. Returns
 * the entries revisited; a revisit that fails keeps the earlier pairs. user: an fa_kernel_probe
 * (NULL, or p NULL: 0). */
int fa_kernel_probe_revisit(void *user, const fa_plan *p);
/* The probe_prepare of fa_advise_options (user = an fa_kernel_probe made for g): every generated
 * kernel of p (chains, reductions, horizontal groups, one per fa_cluster_signature) not compiled
 * yet is generated and compiled in one batch — one compiler process, as the applier's batch —
 * within the probes' budget. A kernel that cannot be generated or built is remembered with its
 * reason (its probe then says so; the applier rejects the cluster with its own). Returns the
 * kernels compiled. */
int fa_kernel_probe_prepare(void *user, const fa_graph *g, const fa_plan *p);
/* Counters of p (NULL: zeros): kernels built and timed, clusters served from an earlier probe of
 * their signature, clusters left unprobed by the budget, seconds spent. */
void fa_kernel_probe_stats(const fa_kernel_probe *p, int *built, int *reused, int *over_budget, double *spent_s);

/* ---- the pipeline `run` and `apply` share (applier/pipeline.c) ---- */

typedef struct fa_pipeline_options {
    fa_apply_options apply;   /* the apply stage: target, threads (the run's: its baseline was
                                 measured with them), tolerance, iterations, bounds, progress;
                                 apply.out_dir is the existing folder every output is written into
                                 (the caller stages it: a failed pipeline leaves partial files) */
    int max_ops, max_inputs;  /* fa_advise_options: cluster bounds */
    int layout;               /* the plan's layout (--layout): -1 auto (fa_layout_choose measures),
                                 else the fa_layout to take */
    const fa_plan_layout *layout_reuse; /* (may be NULL) a decided layout to keep instead of
                                 choosing again (`apply` of a stored plan); ignored when layout >= 0 */
    const char *command_line; /* (may be NULL) the command that applies it, for the fused twin's
                                 row (`apply RUN`); NULL: the baseline run's own (`run`) */
} fa_pipeline_options;
/* fa_apply_options_default, the advisor's caps (fa_advise_options_default), layout auto. */
void fa_pipeline_options_default(fa_pipeline_options *o);

typedef struct fa_pipeline_result {
    fa_ceilings ceilings;     /* the target's, from the run database or measured and stored */
    fa_analysis *analysis;
    fa_plan *plan;
    fa_apply_result *apply;
    bool folded_model;        /* out_dir/model.folded.onnx was written (a BN fold in the plan) */
} fa_pipeline_result;
void fa_pipeline_result_free(fa_pipeline_result *r);

/* Everything after the baseline of run run_id (stored, with its trace) on prepared graph g: the
 * target's ceilings (fa_roofline_ceilings), the analysis (stored), the plan's layout
 * (fa_layout_choose, or o->layout_reuse; the probe, the plan and the apply stage all take it), the
 * plan (fa_advise with the target's gate; stored with its layout), fa_apply (results stored), then in o->apply.out_dir model.folded.onnx (when
 * the plan folds a BatchNormalization; the original's symbolic dims kept where they can be, else
 * a warning on the ctx's log) and plan.json. summary.json and the other reports are the caller's
 * (reports/ comes after the applier and writes them from the database). *out owned by the caller;
 * untouched on error. */
fa_status fa_pipeline_run(fa_ctx *ctx, fa_store *st, const fa_graph *g, int64_t run_id, const fa_pipeline_options *o,
                          fa_pipeline_result **out);

/* ---- each accepted cluster's saving as the whole model sees it (applier/inmodel.c, issue 36) ----
 * The applier's per-cluster benchmark runs the cluster's sub-graph alone (measured_saving_ns); the
 * profile the prediction rests on timed the members inside the model, with the model's cache
 * state and load around them. This is the saving measured the second way, from the two traces
 * `run` takes anyway: the baseline run's and its fused twin's (the fused model with the kept
 * clusters). For each accepted cluster c with a fused node of its own in the fused model
 * (map->fused; an accepted BN fold that an accepted epilogue took over has none and stays NAN,
 * its saving inside the epilogue's, as fa_plan_accepted_saving counts it):
 *  - baseline side, per traced iteration: over the source nodes c's fused node replaces
 *    (map->source: c's members, and the BN of the fold an epilogue absorbed), each node's kernel
 *    time plus the idle time before its kernels (fa_store_op_table's iter_ns + idle_ns: the same
 *    per-node samples whose medians are the profile's member times, pred_members_ns, and the
 *    iteration's dispatch gaps the prediction's pred_dispatch_ns models);
 *  - fused side, per traced iteration of the fused trace: the same over the fused graph's nodes of
 *    c, plus the reorder kernels (FA_REORDER_NAME_FMT) of the tensors those nodes write: the layout
 *    conversions the fused node brought where the baseline ran plain;
 *  - paired, when base_rounds (the baseline's side of the end-to-end rounds the fused trace was
 *    recorded in, fa_apply_result.baseline_rounds_trace) holds as many timed iterations as the
 *    fused run: its iteration k and the fused run's iteration k ran back to back in round k, so
 *    inmodel_saving_ns = the median over rounds of (baseline side - fused side) and
 *    inmodel_spread_ns = the IQR of those differences. Both sides then share each round's moment
 *    of the machine, where the baseline run's own trace (taken seconds to minutes earlier, before
 *    the apply stage) can sit in another state of a shared machine's memory bandwidth (1.7-2x
 *    apart on the 2-core VM from one minute to the next: bench/README.md);
 *  - unpaired otherwise (base_rounds NULL, or its iterations do not match): the baseline side
 *    from the run's own trace; inmodel_saving_ns = median(baseline side) - median(fused side)
 *    (core/stats.c medians); inmodel_spread_ns = sqrt(IQR_baseline^2 + IQR_fused^2): no iteration
 *    pairs a baseline sample with a fused one; for independent sides the spreads of a difference
 *    add in quadrature (exact for normal samples, whose IQR is 1.349 sigma).
 *    Either way the spread is that of one iteration's difference, not the median's uncertainty: a
 *    |saving| under it says the cluster's share of the model is within the iterations' own noise.
 * Every other cluster, and an accepted one whose nodes have no records in either trace (a node
 * missing from the op table, no timed iteration), gets NAN: not measured, never a made-up figure.
 * Units ns per model iteration. st: the run database holding both runs' traces; p: the plan (its
 * clusters in the order of v, p->n_clusters); fused: the fused model whose nodes map describes
 * (fa_apply_result.fused_graph / fused_map). Errors: the store's. */
fa_status fa_apply_inmodel_savings(fa_ctx *ctx, fa_store *st, int64_t baseline_run, int64_t fused_run, const fa_plan *p,
                                   const fa_graph *fused, const fa_fused_map *map, const fa_trace *base_rounds,
                                   fa_cluster_verdict *v);

/* ---- outputs (applier/outputs.c) ---- */

/* plan.json: fa_plan_json (plan/plan.h: every cluster's fields, its verdict from v [p->n_clusters]
 * or the advisor's decision when v is NULL, the why-nots, the options). Written atomically (temp
 * name + rename). */
fa_status fa_write_plan_json(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const fa_cluster_verdict *v,
                             const char *path);
/* Per-iteration baseline/fused samples and the clusters' verdicts into the run database
 * (benchmarks table; clusters via fa_store_put_cluster_verdicts). */
/* command_line (may be NULL): the fused twin's, else the baseline run's. */
fa_status fa_store_apply_result(fa_ctx *ctx, fa_store *st, const fa_plan *p, const fa_apply_result *r,
                                const char *command_line);

#endif
