/* applier/applier-impl — private to applier/. */
#ifndef FA_APPLIER_IMPL_H
#define FA_APPLIER_IMPL_H

#include "applier.h"


/* Shared by the cpu and cuda appliers (applier/judge.c, applier/fused_graph.c). */
/* max|a-b| / max(max|b|, 1e-12) over b's ordinary values; INFINITY on NaN or a missing value.
 * Equal values (equal infinities, NaN on both sides) agree. Values of b of magnitude >= 2^100
 * (mask sentinels: Hugging Face fills masked attention scores with float32's lowest, -3.4e38)
 * are compared one by one, |a-b| / |b|, and left out of max|b|: one sentinel would otherwise
 * scale every other element's error down by 1e38 and let any value pass. */
double fa_apply_rel_error(const fa_value *a, const fa_value *b);
/* v->reason = the formatted sentence, in r's arena. */
void fa_apply_set_reason(fa_apply_result *r, fa_cluster_verdict *v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The accept/reject rule on n paired rounds (sa[i] unfused and sb[i] fused, ns, timed back to
 * back in round i, their order alternating). A win needs all of:
 *  - the sign-test confidence interval of the paired median gain, median(sa[i] - sb[i]), above 0
 *    (core/stats.c fa_paired_saving_of: distribution-free, coverage >= 90%, Conover, "Practical
 *    Nonparametric Statistics", 3rd ed., sec. 3.2), so the verdict comes when the evidence does,
 *    at whatever number of rounds: 15 of 20 rounds won decides, and so do 132 of 204 with a
 *    tight interval, where a fixed "3 rounds in 4" (this rule before issue 36) called a clear
 *    saving "no gain" whenever the unfused side ran bimodally;
 *  - that gain beyond twice its standard error (noise_ns: 2 x 1.2533 x 1.4826 x MAD / sqrt(n), the
 *    normal-consistent MAD and the median's asymptotic efficiency, Wilcox, "Introduction to
 *    Robust Estimation", ch. 3);
 *  - that gain at least FA_APPLY_MIN_GAIN_REL of the unfused median: a difference under 1% of the
 *    sub-graph is within what a process's placement or a drift the alternation does not cancel
 *    moves, and is no reason to ship a change;
 *  - the fused median below the unfused one.
 * A regression mirrors it; anything else is no measured gain (verdict 0; also with n < 5, which
 * has no interval). Pairs taken back to back cancel a machine's bandwidth phases, which widen
 * both unpaired IQRs. Returns 1, -1 or 0; j (may be NULL) gets the figures. */
#define FA_APPLY_MIN_GAIN_REL 0.01
typedef struct fa_paired_judgement {
    int verdict; /* 1 win, -1 regression, 0 no measured gain */
    int n, faster, slower; /* rounds; those where the fused run was faster / slower */
    double gain_ns, noise_ns;
    double ci_lo_ns, ci_hi_ns, ci_level; /* the gain's sign-test interval (NAN when n < 5) */
    fa_sample_stats unfused, fused; /* unpaired summaries, quoted in the reason */
} fa_paired_judgement;
int fa_apply_paired_verdict(const double *sa, const double *sb, int n, fa_paired_judgement *j);
/* fa_apply_paired_verdict on a cluster's rounds: sets v->status, v->reason (prefixed by tag, may
 * be NULL; it quotes the medians and IQRs, the rounds the fused run won, the paired median, its
 * sign-test interval and n) and v->measured_saving_ns (the paired median gain). */
void fa_apply_judge(fa_apply_result *r, fa_cluster_verdict *v, const double *sa, const double *sb, int n, double err,
                    const char *tag);
/* Interleaved benchmark (A B, B A, ...) so drift hits both: run(ctx, subject) once per sample;
 * ns per run into sa / sb (iters each), after `warmup` untimed pairs. */
/* timed: false for a warm-up run. *own_ns (NULL on warm-up runs): what the run fn spent on its
 * own bookkeeping inside the call (a recording run fn's records: fa_cpu_recorder_run), taken out
 * of the run's time; 0 for a plain run. */
typedef fa_status (*fa_apply_run_fn)(fa_ctx *ctx, const void *subject, bool timed, uint64_t *own_ns);
/* An fa_apply_run_fn running the executor `e` (an fa_exec) once with no observer. */
fa_status fa_apply_exec_once(fa_ctx *ctx, const void *e, bool timed, uint64_t *own_ns);
/* The layouts of sub-graph gf's boundary tensors (in_l by graph input, out_l by graph output,
 * malloc'd when NULL) that plan_layout (by tensor id of g, the graph gf was cut from; NULL: all
 * plain) gives them, constants plain; FA_LAYOUT_COUNT (a tensor inside another cluster's fused
 * node) plain as an input, as an output gf's own producer's layout on `probe` (an executor of
 * gf) or plain with *unknown set when probe is NULL. judged gets the verdict's prefix naming the
 * non-plain ones ("" when all are plain; cap bytes). Errors: out of memory. (applier/apply.c) */
fa_status fa_apply_boundary_layouts(fa_ctx *ctx, const fa_graph *g, const fa_graph *gf, const fa_layout *plan_layout,
                                    const fa_exec *probe, fa_layout **in_l, fa_layout **out_l, bool *unknown,
                                    char *judged, size_t cap);
/* The boundary layouts of a cluster's unfused sub-graph gu as the fused plan would run its members
 * if the cluster were left unfused: each input and output of gu in the layout the fused sub-graph
 * gf's boundary of the same name has (f_in by gf input, f_out by gf output: fa_apply_boundary_layouts),
 * plain where gf has none of that name (a BN's parameters, folded away in gf) or the tensor is
 * constant. *u_in (by gu input) and *u_out (by gu output) are malloc'd. Errors: out of memory. */
fa_status fa_apply_member_layouts(fa_ctx *ctx, const fa_graph *gf, const fa_layout *f_in, const fa_layout *f_out,
                                  const fa_graph *gu, fa_layout **u_in, fa_layout **u_out);
/* Interleaved pairs: `warmup` untimed pairs (FA_WARMUP_AUTO: by time, fa_warmup_more), then `iters` timed rounds into sa[0..iters) (a,
 * unfused) and sb (b, fused), ns by fa_now_ns; round i runs a first when round0 + i is even and b
 * first when odd, so rounds appended across calls keep alternating (round0: the rounds already
 * taken). back_to_back: each timed run follows an untimed run of the same side (a, a timed, b,
 * b timed), so that each side is timed as a model deployed alone runs, right after itself, not
 * right after the other side (fa_apply_e2e_back_to_back says where the end-to-end rounds take it).
 * how: FA_BENCH_* flags. FA_BENCH_BACK_TO_BACK as above; FA_BENCH_COLD_L2: each timed run is
 * preceded, outside its timing, by an eviction of every pool thread's L2 (fa_host_evict_l2), so
 * a cluster's sub-graph starts as it does inside the model, not with its own previous run's data
 * in L2 (fa_apply_cluster_bench says when).
 * threads: the executors' thread count; before each round, outside its timing, the OpenMP pool's
 * threads are moved apart where two share a CPU (fa_host_spread_threads; nothing for 1). Returns
 * the first run's failure. */
enum { FA_BENCH_BACK_TO_BACK = 1u, FA_BENCH_COLD_L2 = 2u };
fa_status fa_apply_bench_pair(fa_ctx *ctx, fa_apply_run_fn run, const void *a, const void *b, int warmup, int round0,
                              int iters, unsigned how, int threads, double *sa, double *sb);
/* The FA_BENCH_* flags of a cluster's benchmark (the probe's pairs and the applier's rounds) on
 * executor e: FA_BENCH_COLD_L2 on the cpu target, unless FA_COLD_L2=0 is in the environment (for
 * A/B measurements: bench/README.md "Cold L2"); 0 on other targets (their caches are the
 * device's, not the host's). */
unsigned fa_apply_cluster_bench(const fa_exec *e);
/* Whether the end-to-end rounds time each model back to back (fa_apply_bench_pair): when the check's
 * own pair of runs took at most FA_APPLY_E2E_BACK_TO_BACK_NS. Timed right after the other model,
 * whose run leaves its weights and activations in the caches, a small model measured slower than
 * it runs deployed, where the peers' benchmarks (ONNX Runtime's, bench/peer.py) time consecutive
 * runs: MobileNetV3-small's fused model 1.33-1.51 ms after a baseline run against 0.95-1.07 ms
 * after a run of its own, MobileNetV2's 4.6-5.0 against 4.1 ms, ResNet-18's (45 MB of weights,
 * past the 32 MB last-level cache) no change resolvable (bench/README.md "End-to-end rounds back
 * to back"). The untimed run doubles the rounds' time, so it is taken only where a pair of runs is
 * short: there it costs at most a second over FA_APPLY_REPEAT_MAX blocks, while a model whose
 * pair takes longer streams most of its weights from memory on every run anyway. */
#define FA_APPLY_E2E_BACK_TO_BACK_NS 50000000ull
bool fa_apply_e2e_back_to_back(uint64_t check_pair_ns);
/* Adaptive repetitions (issue 19): a cluster's saving is settled when the sign-test interval of
 * its paired median (core/stats.c) lies within +-FA_APPLY_SETTLE_REL of the median, or within
 * +-FA_APPLY_SETTLE_FLOOR of the unfused sub-graph's median time (a saving that small is known
 * to be small); the rounds stop at FA_APPLY_REPEAT_MAX x the base iterations. 10 %: a measured
 * saving reproducible to well inside the +-25 % calibration target; 1 %: below what end-to-end
 * timings on this class of machine resolve (bench/README.md, the A/A rates); 5x: the issue's
 * cap. */
#define FA_APPLY_SETTLE_REL 0.10
#define FA_APPLY_SETTLE_FLOOR 0.01
#define FA_APPLY_REPEAT_MAX 5
/* Whether the n paired rounds (sa unfused, sb fused, ns) have settled by that rule. */
bool fa_apply_rounds_settled(const double *sa, const double *sb, int n);
/* The apply stage takes each cluster's rounds in visits (applier/apply.c, docs/codegen.md
 * "Visits"): a block of ceil(iters / FA_APPLY_VISITS) rounds (FA_APPLY_VISIT_MIN_ROUNDS at least) per cluster per visit, every
 * cluster visited in turn, at least FA_APPLY_VISITS times before its saving may settle. 3: as
 * the probe (FA_PROBE_VISITS, applier.h); the machine's memory bandwidth moves in phases of
 * seconds (bench/README.md "Visits and the trace's span"), and three visits spread a cluster's
 * rounds over the whole stage while keeping its base rounds at --iters. */
#define FA_APPLY_VISITS 3
/* A visit's rounds at least: each visit pays one warm-up pair (its data left the caches while
 * the other clusters ran), which 3 timed rounds keep to a quarter of the visit's runs. */
#define FA_APPLY_VISIT_MIN_ROUNDS 3
/* The clusters the apply stage tries (applier/judge.c, docs/codegen.md "Bounded apply"): every
 * PROPOSED cluster ranked by est_saving_ns (highest first, ties by id), the first max_clusters
 * kept, the others' verdicts (r->verdicts) set FA_CLUSTER_NOT_TRIED with the reason. order[]
 * (room for n_clusters) gets the kept ones' indices in rank order; returns their count. */
int fa_apply_select(const fa_plan *p, fa_apply_result *r, const fa_apply_options *o, int *order);
/* Before starting a cluster: once the stage has run past its budget (since t0_ns, fa_now_ns),
 * its verdict v is set FA_CLUSTER_NOT_TRIED with the reason and true returned. */
bool fa_apply_budget_spent(fa_apply_result *r, fa_cluster_verdict *v, const fa_apply_options *o, uint64_t t0_ns);
/* The option bounds both appliers enforce (tolerance finite, in (0, FA_APPLY_TOLERANCE_MAX]). */
fa_status fa_apply_options_check(fa_ctx *ctx, const fa_apply_options *o);
/* Clusters whose kernel is generated (elementwise chains, reductions, horizontal). */
bool fa_apply_needs_codegen(const fa_cluster *c);
/* OUT_DIR/kernels/NAME.EXT, atomically; nothing when out_dir is NULL. */
fa_status fa_apply_write_kernel_source(fa_ctx *ctx, const char *out_dir, const char *name, const char *ext, const fa_buf *src);

/* One cluster's kernel from fa_apply_generate_batch. */
typedef struct fa_generated {
    fa_fused_binary *bin;  /* the compiled kernel, owned by the caller (fa_target_fused_free) unless same_as
                              >= 0; NULL on failure */
    int same_as;           /* -1, or the index k' < k in out[] of a kernel whose source is this one's
                              but for its name and comments (a repeated layer): compiled once, bin
                              is out[k'].bin (owned there: free it once) and why its reason */
    fa_codegen_info info;  /* name, block size, grid (valid when generated) */
    fa_layout layout;      /* the layout it was generated for (fa_layout_of_generated on the target's
                              plan of g; PLAIN where the generator cannot emit that one) */
    bool generated;        /* the source was generated (and written, with an out_dir) */
    char why[256];         /* on failure: fa_codegen's or the write's message when !generated, else the
                              compiler's diagnostics about this kernel */
} fa_generated;
/* The generated kernels of clusters ci[0..n) of p: fa_codegen in t's language, each source written
 * to OUT_DIR/kernels/ when out_dir is set, then all of them compiled by fa_target_fused_compile with co in
 * one compiler process (one batch), each distinct code once (fa_generated.same_as: the clusters of
 * repeated layers share one binary, so the compile grows with the distinct kernels, not with the
 * model's depth). Used by the applier (compile_generated) and by the kernel probe
 * (applier/probe.c), so the two build a plan's kernels alike. out[k] gets cluster ci[k]'s result.
 * Each kernel is generated for the layout the target's plan of g (fa_layout_plan_make: each node
 * placed as the executor places it, where a convolution's layout is decided) gives its inputs
 * (fa_layout_of_generated): a chain between blocked oneDNN primitives reads and writes their
 * layout, with no reorder around it. plan_layout: the plan's layout (fa_apply_plan_layout; PLAIN:
 * none, every kernel plain).
 * Returns FA_OK, FA_ERR_NOMEM, or the compiler's own failure (no compiler, a cache folder another
 * user can write: fa_target_fused_compile's status, message in ctx); then no out[k] holds a binary. */
fa_status fa_apply_generate_batch(fa_ctx *ctx, const fa_target_iface *t, const fa_graph *g, const fa_plan *p,
                                  const int *ci, int n, fa_layout plan_layout, const fa_fused_compile_options *co,
                                  const char *out_dir, fa_generated *out);
/* Rebuilds of a cluster whose fused kernel failed verification on an algorithm a convolution
 * tactic chose (fa_exec_veto_measured_tactics): two, for the two alternatives a blocked
 * convolution has to its direct kernel (Winograd, then the build reordered inside). */
#define FA_APPLY_TACTIC_RETRIES 2
/* Tensors captured from the unfused run, by tensor id of the original graph g (judge.c). */
typedef struct fa_value_map {
    const fa_graph *g;  /* names/ids of the original graph */
    fa_value *vals;     /* by tensor id of g; data malloc'd, borrowed, or NULL */
    unsigned char *borrowed; /* by tensor id (NULL: none): vals[id].data is an executor's output,
                                valid while that executor lives and does not run again */
} fa_value_map;
void fa_value_map_free(fa_value_map *m);
/* vals[id] = *v, borrowed (no copy; m->borrowed allocated on first use). FA_ERR_NOMEM. */
fa_status fa_value_map_borrow(fa_ctx *ctx, fa_value_map *m, int id, const fa_value *v);
/* Forget every borrowed value (before the executor that holds them is freed). */
void fa_value_map_drop_borrowed(fa_value_map *m);
/* Set every input of executor e (over graph sub) from the map, by tensor name. */
fa_status fa_value_map_set_inputs(fa_ctx *ctx, fa_exec *e, const fa_graph *sub, const fa_value_map *m);
/* Fill every graph input of m->g in the map with deterministic values from `seed` (uniform
 * [-1,1) for floats, 0..3 for integers). */
fa_status fa_value_map_fill_inputs(fa_ctx *ctx, fa_value_map *m, uint64_t seed);
/* Tensor ids (into out[], room for g->n_tensors) that the sub-graphs of clusters ci[0..n) of p
 * (ci NULL: every PROPOSED cluster) read from outside the cluster and that an unfused run
 * produces: what the capture run must keep to feed them (their inputs, epilogue operands and
 * every tensor a member reads from outside; not their outputs, which the sub-graphs compute).
 * -1 on OOM. */
int fa_apply_boundary_tensors(const fa_graph *g, const fa_plan *p, const int *ci, int n, int *out);
/* A copy of g restricted to / with the given clusters (fused_graph.c); cluster id `inject`
 * (-1 none) carries `defect` (test hook). */
fa_status fa_fused_graph_scoped(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const int *ids, int n_ids,
                                bool scope_to_clusters, bool apply, int inject, fa_apply_defect defect, const int *extra,
                                int n_extra, fa_graph **out);
/* fa_fused_graph_scoped, and into *map (may be NULL; fa_fused_map, applier.h) which cluster each
 * node of the result and of g stands for. map is untouched on error (and *out NULL). */
fa_status fa_fused_graph_mapped(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const int *ids, int n_ids,
                                bool scope_to_clusters, bool apply, int inject, fa_apply_defect defect, const int *extra,
                                int n_extra, fa_graph **out, fa_fused_map *map);
/* Nodes, tensors and clusters of the source graph and plan that fa_fused_graph_scoped's builds
 * have walked in this process, all threads together: how a test checks that a scoped build walks
 * its scope (its clusters' members and their edges), never the whole graph per cluster. */
uint64_t fa_fused_graph_walked(void);

/* Elements per stretch of the verification scans (fa_apply_rel_error, the bound ratios) handed
 * to one thread of the team: 64 KiB of each float32 operand, large enough that the team's
 * start (~1 µs) is a small share, small enough that a 128 x 768 output splits into six. */
#define FA_APPLY_SCAN_STRETCH 16384
/* Element i of v as double: float32 read in line (the verification loops run over every output
 * element of every cluster: fa_load_as_double's call per element was ~3 ms a 128x3072 output),
 * any other dtype through fa_load_as_double. */
static inline double fa_apply_elem(const fa_value *v, int64_t i)
{
    return v->dtype == FA_DTYPE_FLOAT ? (double)((const float *)v->data)[i] : fa_load_as_double(v->data, v->dtype, i);
}

/* The verification bound of a cluster whose unfused sub-graph reassociates a reduction
 * (applier/bound.c, docs/runtime.md "Verification bound"). */
typedef struct fa_apply_bound {
    bool applies;       /* gu has a Conv/ConvTranspose/Gemm/MatMul and a rule for every op */
    int64_t depth;      /* n: the most rounding errors on a path (reduction terms + op roundings) */
    double lambda;      /* Higham & Mary's lambda for a 1e-6 failure probability over the outputs */
    double gamma;       /* probabilistic γ̃_n(λ) = exp(λ·sqrt(n)·u + n·u²/(1-u)) - 1, u = 2^-24 */
    double gamma_det;   /* deterministic γ_n = n·u/(1-n·u) (Higham §3.1), for the report only */
} fa_apply_bound;
/* The magnitude graph of the unfused sub-graph gu: gu's nodes plus, per node, the rule that
 * carries |.|-magnitudes forward (a Conv on |x| and |W|, BN with |scale|, |B|, -|mean|, L·M + |y|
 * for a unary op with sup|f'| <= L, ...); its outputs are the magnitudes M of gu's outputs in
 * gu's order, its inputs gu's (fed the same values). *gm owned by the caller; NULL with the
 * reason in why (and out->applies false) when gu reassociates no reduction or has an op whose
 * rule is that it has no first-order bound (an op-math row's FA_BOUND_NONE, a k_mag_ops row of
 * MAG_NONE, or a non-elementwise op without a rule): the caller then verifies with the user's
 * tolerance. Rules: an elementwise op's from its op-math row (graph/op_math.h, BOUND), the others'
 * from bound.c's k_mag_ops. Errors: FA_ERR_INTERNAL naming the op for an elementwise op (float32
 * output) with neither (an op added without its row: never a bound silently lost); out of memory. */
fa_status fa_apply_bound_graph(fa_ctx *ctx, const fa_graph *gu, fa_apply_bound *out, fa_graph **gm, char *why, size_t cap);
/* What fa_apply_bound_graph would say of gu — *out, out->applies, why, its errors — with the
 * magnitude graph built without its constants' magnitudes (|W| not computed, the weights not
 * read) and freed: for the check against |unfused| (fa_apply_bound_ratio_unfused), which needs
 * only out. */
fa_status fa_apply_bound_of(fa_ctx *ctx, const fa_graph *gu, fa_apply_bound *out, char *why, size_t cap);
/* max_i |fused_i - unfused_i| / (2·γ̃·M_i) over one output (a fused kernel within its bound
 * has <= 1); *worst the element (-1 none). INFINITY on NaN on one side only or a size mismatch;
 * NAN when some M_i overflowed (no bound: verify by the tolerance). */
double fa_apply_bound_ratio(const fa_value *fused, const fa_value *unfused, const fa_value *mag, const fa_apply_bound *bd,
                            int64_t *worst);
/* The same check with M_i replaced by what |unfused_i| guarantees of it: max_i |fused_i - unfused_i|
 * / (2·γ̃·|unfused_i|/(1 + γ_n)), so that a result <= 1 implies fa_apply_bound_ratio <= 1 without
 * running the magnitude graph (every rule's M dominates |y|; the derivation is in bound.c). A
 * result > 1 says nothing: run the magnitudes. INFINITY when the bound does not apply (bd from
 * fa_apply_bound_graph with no graph), for a size mismatch, a NaN or an infinity on either side,
 * or a depth too large for the shortcut (1 - 2·depth·u <= 1/2, or γ_n infinite). */
double fa_apply_bound_ratio_unfused(const fa_value *fused, const fa_value *unfused, const fa_apply_bound *bd, int64_t *worst);

/* Whether a library epilogue in the fused sub-graph gf runs on an implementation whose
 * post-ops are slow: oneDNN's reference kernels ("ref:*", any op) and its gemm-based convolution
 * ("x64:gemm:jit" and other "gemm:*" for FusedConv/FusedConvTranspose: post-ops applied as a separate pass over the
 * output, measured 0.026 -> 0.51 ms for a 1x1 conv + ReLU in issue 18), asked of the executor ef
 * (fa_exec_kernel_impl). true with a why-not naming the node and the implementation in why. */
bool fa_apply_slow_library_epilogue(const fa_graph *gf, const fa_exec *ef, char *why, size_t cap);
/* The library kernels of fused sub-graph gf as its executor ef runs them, for a verdict's reason:
 * "the library ran FusedMatMul 'x' as oneDNN's 'brg:avx512_core' (dnnl:matmul+post-ops(weights
 * packed))" per fused node with a known implementation (fa_exec_kernel_impl, _name); "" when none
 * has one (a generated kernel). snprintf's truncation. */
void fa_apply_library_kernels_text(const fa_graph *gf, const fa_exec *ef, char *out, size_t cap);

/* The probe's figures from its n interleaved pairs (fns[i] fused and uns[i] unfused, ns, timed
 * together; n at most FA_PROBE_REPS x FA_PROBE_VISITS): out's median_ns and unfused_median_ns
 * (type-7 medians), paired_ratio (the median of fns[i] / uns[i], fa_stats_paired_ratio) and its
 * sign-test interval ratio_lo..ratio_hi (fa_stats_paired_ratio_interval; NAN under 5 pairs), reps
 * (n) and wins (pairs with the fused run faster); what untouched. Neither array is modified:
 * the pairs must stay pairs for the revisits that append to them (applier/probe.c once sorted
 * them in place for its medians, so its wins compared order statistics, not pairs). */
void fa_probe_pairs_summary(const double *fns, const double *uns, int n, fa_fused_probe_result *out);

/* One rival layout's paired whole-model rounds: sa[i] the default layout's run, sb[i] the
 * rival's, ns, n rounds (applier/layout_choice.c). */
typedef struct fa_layout_samples {
    fa_layout rival;
    const double *sa, *sb;
    int n;
} fa_layout_samples;
/* The choice on recorded rounds: each rival judged against the default by
 * fa_apply_paired_verdict; the rival with the largest paired median gain among those it calls
 * faster (verdict 1) becomes out->layout, else deflt stays. out (source MEASURED) keeps the
 * figures of that winner, or with none of the rival nearest to winning (largest gain); with no
 * rival, deflt and no figures. */
void fa_layout_judge(fa_layout deflt, const fa_layout_samples *s, int n_rivals, fa_plan_layout *out);

/* The end-to-end rule on n paired whole-model samples (sa baseline, sb fused, ns): a win when the
 * test a cluster passes (fa_apply_paired_verdict) says so, or when the paired differences'
 * signed-rank interval (core/stats.c fa_stats_signed_rank_interval_sorted) lies wholly above
 * FA_APPLY_MIN_GAIN_REL of the baseline's median and the fused median is the lower: a saving of at
 * least 1 % of the model is then established — the rule the rounds stop on
 * (fa_apply_e2e_concluded), so rounds that stop on it end in a win. */
bool fa_apply_e2e_wins(const double *sa, const double *sb, int n);

/* The first op type of g that rounds values to steps (QuantizeLinear, DynamicQuantizeLinear,
 * QLinearConv, QLinearMatMul and the other QLinear ops, MatMulInteger, ConvInteger, Round), as
 * a static string; NULL when none. The end-to-end check's limit for such a model is
 * FA_APPLY_E2E_TOLERANCE_ROUNDING (applier.h: why). */
const char *fa_apply_rounding_op(const fa_graph *g);
/* The end-to-end limit for g: max(FA_APPLY_E2E_TOLERANCE, opt_tolerance), and at least
 * FA_APPLY_E2E_TOLERANCE_ROUNDING when g rounds (*rounding_op then names the op, else NULL). */
double fa_apply_e2e_tolerance(const fa_graph *g, double opt_tolerance, const char **rounding_op);
/* The end-to-end rounds' stop rule (issue 39): the n paired whole-model rounds (sa baseline, sb
 * fused, ns) conclude when their saving has settled (fa_apply_rounds_settled) or when the signed-
 * rank interval of their differences (core/stats.c fa_stats_signed_rank_interval_sorted) lies
 * wholly beyond +-FA_APPLY_MIN_GAIN_REL of the baseline's median: a win (or a loss) of at least
 * 1 % of the model is then established, and more rounds would only narrow a figure the verdict no
 * longer needs — on a deep model each round runs every layer twice. The signed-rank interval, not
 * the sign test's: it uses the differences' magnitudes, so a deep model, whose rounds differ by a
 * steady amount (each run sums many kernels' noise), concludes in fewer rounds — BERT-base at 24
 * layers after 15 rounds where the sign test took the cap of 25 on the same recorded rounds
 * (tests/unit/test_judge.c). The margin is the verdict's own floor, not 0: stopping only once the
 * whole interval clears 1 % keeps the repeated looks (one per block of --iters) from turning
 * noise around 0 into a win. False for n < 5 (no interval). */
bool fa_apply_e2e_concluded(const double *sa, const double *sb, int n);
/* One back-off step after a losing end-to-end measurement (round 0, 1, ...): the 2^round
 * ACCEPTED verdicts with the smallest measured saving are set REJECTED_NO_GAIN with a reason
 * quoting the end-to-end medians; r->accepted, r->rejected, r->predicted_saving_ns and
 * r->backed_off follow. */
void fa_apply_back_off(const fa_plan *p, fa_apply_result *r, int round);

#endif
