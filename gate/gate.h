/* gate — the CI gate: compares a candidate run with a baseline run from the run
 * database (docs/schema.md) and decides, on per-iteration samples, whether latency or fusion
 * regressed. docs/ci.md explains every decision rule and exit code. */
#ifndef FA_GATE_H
#define FA_GATE_H

#include "core/core.h"
#include "store/store.h"

/* Verdict of one check, and of the whole gate. */
typedef enum fa_gate_verdict {
    FA_GATE_PASS = 0,         /* no regression shown (for a latency check: the CI's upper bound
                                 is below the threshold) */
    FA_GATE_SKIPPED,          /* not measured in one of the runs; the message says which */
    FA_GATE_INCONCLUSIVE,     /* the samples cannot decide; suggested_iters says what would */
    FA_GATE_WARN,             /* worth a look, never fails the build (registers +10%, a
                                 regression of a component under --min-share) */
    FA_GATE_FAIL,             /* a regression: the build fails (exit 3) */
    FA_GATE_VERDICT_COUNT
} fa_gate_verdict;
/* "pass", "skipped", "inconclusive", "warn", "fail". */
const char *fa_gate_verdict_name(fa_gate_verdict v);

typedef struct fa_gate_options {
    double max_regression;  /* fraction: 0.03 = fail when the candidate is confidently more than
                               3% slower (CI lower bound of the median ratio > 1.03) */
    double confidence;      /* two-sided confidence of the bootstrap interval, default 0.95 */
    int resamples;          /* bootstrap resamples per check, default 2000 */
    uint64_t seed;          /* bootstrap seed (fixed: the gate is reproducible), default 1 */
    double min_share;       /* a component check (per cluster / per op) fails only when its
                               slowdown at the CI's lower bound, (lo - 1) * component median,
                               is at least this fraction of the baseline iteration median;
                               otherwise it warns. Default 0.01 */
    double register_warn;   /* fraction of register growth per fused kernel that warns (cuda),
                               default 0.10 */
    int min_samples;        /* fewer samples than this in either run: inconclusive, default 5 */
    bool strict;            /* an INCONCLUSIVE gate fails the build (exit 3); renderers show
                               inconclusive checks as failures. Default false */
} fa_gate_options;
void fa_gate_options_default(fa_gate_options *o);

/* Result of comparing two sets of per-iteration latency samples. */
typedef struct fa_gate_stats {
    int n_base, n_cand;       /* samples used */
    double base_median_ns;    /* median of the baseline samples */
    double cand_median_ns;
    double ratio;             /* cand_median / base_median */
    double lo, hi;            /* percentile-bootstrap CI of the ratio at `confidence` */
    double confidence;        /* the level actually used (Bonferroni-corrected for families) */
    fa_gate_verdict verdict;  /* PASS, FAIL or INCONCLUSIVE */
    int runs_base, runs_cand; /* runs (sample groups) on each side, 1 for plain samples */
    int suggested_iters;      /* INCONCLUSIVE: iterations per run that would bring the CI's
                                 relevant half-width under the gap to the threshold, assuming the
                                 observed spread; -1 when the ratio sits on the threshold (no
                                 count would decide); 0 otherwise */
} fa_gate_stats;

/* Compare candidate samples cand[0..nc) with baseline samples base[0..nb) (ns, > 0).
 * Method (docs/ci.md): ratio of medians; its CI from `resamples` (at least 20/alpha, so the
 * tails are resolved) paired resamples drawn with replacement from each sample set
 * independently (percentile bootstrap, Efron & Tibshirani 1993, ch. 13), with the xoshiro-
 * like fa_rng seeded from `seed`. Decision: lo > 1 + max_regression → FAIL; hi < 1 +
 * max_regression → PASS; otherwise INCONCLUSIVE with the suggested iteration count
 * n' = n · (half-width / gap)², half-width measured on the side facing the threshold
 * (the CI width shrinks as 1/√n). `confidence` overrides o->confidence when > 0.
 * Fewer than o->min_samples samples on either side: INCONCLUSIVE with suggested_iters =
 * max(20, min_samples). Errors: FA_ERR_NOMEM; FA_ERR_INPUT for a non-positive or non-finite
 * sample (names its index). *out untouched on failure. */
fa_status fa_gate_compare_samples(fa_ctx *ctx, const double *base, int nb, const double *cand, int nc,
                                  const fa_gate_options *o, double confidence, uint64_t seed,
                                  fa_gate_stats *out);

/* The same decision for samples from several runs per side: gb[0..ngb) (gc[0..ngc)) are the
 * sample counts of each run, in order, adding up to nb (nc); NULL/0 = one run. The bootstrap
 * is two-stage (runs with replacement, then iterations within each drawn run; Davison &
 * Hinkley 1997, section 3.8), so run-to-run variation (another process, another moment on the
 * machine) widens the interval instead of passing for a regression. With one run per side it
 * is exactly fa_gate_compare_samples. Errors as above; FA_ERR_INTERNAL when the group sizes do
 * not add up. */
fa_status fa_gate_compare_grouped(fa_ctx *ctx, const double *base, int nb, const int *gb, int ngb, const double *cand,
                                  int nc, const int *gc, int ngc, const fa_gate_options *o, double confidence,
                                  uint64_t seed, fa_gate_stats *out);

/* One check of the gate. Strings live in the report's arena. */
typedef struct fa_gate_check {
    const char *id;          /* stable machine id: "latency.e2e.unfused", "latency.e2e.fused",
                                "latency.component:<key>", "latency.cluster-fused:<key>",
                                "kernels.unfused", "kernels.fused", "fusion.accepted:<key>",
                                "fusion.verify", "cuda.spills:<key>", "cuda.registers:<key>";
                                two imported traces: "trace.kernel_time", "trace.kernel_time:<class>",
                                "trace.kernels", "trace.launch_overhead" */
    const char *category;    /* "latency" | "kernels" | "fusion" | "verification" | "registers" |
                                "trace" (two imported traces) */
    const char *name;        /* what a person reads: "end-to-end latency (unfused)",
                                "cluster 'MatMul+Add+Relu' (fc1, add1, relu1) [unfused]" */
    fa_gate_verdict verdict;
    const char *message;     /* one or two sentences: the evidence, the reason, what to do */
    bool has_stats;
    fa_gate_stats stats;     /* valid when has_stats */
} fa_gate_check;

typedef struct fa_gate_report {
    fa_arena *arena;
    fa_gate_options opt;
    const char *baseline_db, *candidate_db;
    fa_run_info baseline, candidate;   /* the primary (first given, newest picked) run of each side */
    int n_baseline_runs, n_candidate_runs;
    int64_t *baseline_runs, *candidate_runs; /* every run of each side, primary first (arena) */
    int n_checks;
    fa_gate_check *checks;   /* in report order (heap, owned) */
    int cap_checks;
    bool oom;                /* a check could not be recorded (fa_gate_check_all then fails) */
    int counts[FA_GATE_VERDICT_COUNT];
    fa_gate_verdict verdict; /* FAIL if any check fails, else INCONCLUSIVE if any is, else PASS */
    bool traces;             /* two imported traces: the "trace.*" checks (gate/traces.c) */
    int n_notes;
    const char *notes[16];   /* run-level remarks (different device, no plan, ...) */
} fa_gate_report;
void fa_gate_report_free(fa_gate_report *r);

/* Pick a run in st for the gate: the run `run_id` when > 0 (FA_ERR_INPUT "PATH: no run N");
 * otherwise the newest run (highest id) with status 'ok' and kind other than 'fused' that
 * matches: tag == `tag` when tag is non-NULL; tag different from `exclude_tag` (NULL tags
 * count as different) when exclude_tag is non-NULL; id != exclude_id; and the same model as
 * `same_model` when non-NULL (fa_gate_same_model). FA_ERR_INPUT naming the file and the
 * criteria when none matches. */
fa_status fa_gate_pick_run(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *tag, const char *exclude_tag,
                           int64_t exclude_id, const fa_run_info *same_model, int64_t *out);

/* Up to `max` runs for one side, newest first, with the criteria of fa_gate_pick_run (no
 * explicit id; exclude_ids[0..n_exclude) skipped). *n_out >= 1 on success; FA_ERR_INPUT naming
 * the file and the criteria when none matches. out[] holds max ids. */
fa_status fa_gate_pick_runs(fa_ctx *ctx, fa_store *st, const char *tag, const char *exclude_tag,
                            const int64_t *exclude_ids, int n_exclude, const fa_run_info *same_model, int max,
                            int64_t *out, int *n_out);

/* Same model: both SHA-256 known → equal hashes; otherwise equal model paths. */
bool fa_gate_same_model(const fa_run_info *a, const fa_run_info *b);

/* Run every check of candidate run `cand_id` (in cst) against baseline run `base_id` (in bst;
 * bst may equal cst). Reads: runs, nodes, kernels (FA_ACT_KERNEL records and FA_ACT_RANGE
 * "iteration" records with iter >= 0), the newest plan of each run (clusters.label labels,
 * clusters, fused_kernels), benchmarks of that plan, and the run of kind 'fused' tagged
 * "fused-of:<id>". Whatever one run lacks becomes a SKIPPED check that says so. Two imported
 * traces (kind 'import') are compared by what they hold instead: their stored advice's kernel
 * time per kernel class and in all, kernels and launch overhead, per profiler step ("trace.*"
 * checks, docs/ci.md "Imported traces").
 * Errors: FA_ERR_INPUT when a run is absent, not finished ('ok'), a 'fused' run, the runs are
 * of different models or targets (the message names both), one side is a trace and the other a
 * model run, a trace holds no GPU kernel, or every check lacks its data (a gate that measured
 * nothing never passes); FA_ERR_IO/FA_ERR_NOMEM. *out owned by the
 * caller (fa_gate_report_free). */
fa_status fa_gate_run(fa_ctx *ctx, fa_store *bst, int64_t base_id, fa_store *cst, int64_t cand_id,
                      const fa_gate_options *o, fa_gate_report **out);

/* fa_gate_run over several runs per side (base_ids[0] and cand_ids[0] are the primary runs:
 * plans, kernel counts, fusion and registers come from them). Latency checks pool the
 * per-iteration samples of every run of a side, grouped by run, and decide with the two-stage
 * bootstrap of fa_gate_compare_grouped. Every run must be finished ('ok') and of the primary
 * baseline's model and target (FA_ERR_INPUT otherwise). */
fa_status fa_gate_run_multi(fa_ctx *ctx, fa_store *bst, const int64_t *base_ids, int n_base, fa_store *cst,
                            const int64_t *cand_ids, int n_cand, const fa_gate_options *o, fa_gate_report **out);

/* Renderers; each appends to b.
 * text: a terminal table (verdict, check, ratio and CI, message) and the overall verdict.
 * junit: JUnit XML (one <testsuite name="fuse-advise gate">, one <testcase> per check with
 *   classname = category; <failure> for FAIL, <skipped> for SKIPPED and INCONCLUSIVE,
 *   <system-out> for the message), XML-escaped, as Jenkins/GitLab/GitHub reporters read it.
 * markdown: a pull-request comment: headline verdict, the runs, the rule, the counts, the notes;
 *   failing, inconclusive and warning checks first in a table (details cut at 600 bytes of
 *   source text); passing and not-measured ones in a collapsed <details> block (details cut at
 *   160). Rows stop, with a count of those left out, once the text passes FA_GATE_MD_MAX -
 *   FA_GATE_MD_RESERVE bytes, so the whole comment stays under FA_GATE_MD_MAX whatever the
 *   model (GitHub refuses a comment body over 65,536 characters; docs/ci.md). Every string is
 *   escaped as docs/ci.md says.
 * json: {"schema":"fuse-advise.gate/1", ...} (keys in docs/ci.md). */
enum {
    FA_GATE_MD_MAX = 60000,    /* bytes of gate.md at most (a GitHub comment: 65,536 characters) */
    FA_GATE_MD_RESERVE = 6000  /* kept for the last row (name and detail cut, escaped: under 4.5 KB)
                                  and the closing lines */
};
void fa_gate_render_text(const fa_gate_report *r, fa_buf *b);
void fa_gate_render_junit(const fa_gate_report *r, fa_buf *b);
void fa_gate_render_markdown(const fa_gate_report *r, fa_buf *b);
void fa_gate_render_json(const fa_gate_report *r, fa_buf *b);

/* Append s[0..n) XML-escaped (& < > " ' as entities; control characters other than tab, CR
 * and LF, which XML 1.0 forbids, become U+FFFD; invalid UTF-8 bytes become U+FFFD). */
void fa_gate_escape_xml(fa_buf *b, const char *s, size_t n);

#endif
