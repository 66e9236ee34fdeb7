/* reports-impl — the run as the reports see it, loaded once from the database (load.c), and the
 * renderers of each file (html.c, graph.c, trace.c, tables.c). Private to reports/. */
#ifndef FA_REPORTS_IMPL_H
#define FA_REPORTS_IMPL_H

#include <math.h>

#include "applier/applier.h"
#include "reports/reports.h"
#include "roofline/roofline.h"

typedef struct fa_rep_node {
    const char *name;        /* NULL when the id has no row */
    const char *op_type;
    int pattern;             /* fa_pattern, -1 unknown */
    bool folded;
    uint64_t flops;          /* per execution (registry formula) */
    uint64_t bytes;          /* bytes_read + bytes_written per execution */
    int64_t median_ns;       /* per-op median over timed iterations; -1 when it ran no kernel */
    double share;            /* of the sum of per-op medians */
    int64_t kernels;
    fa_placement place;      /* valid when placed */
    bool placed;
    const char *bound;       /* "memory" | "compute" | "latency" | NULL (no ceilings) */
    int cluster;             /* index in rep->clusters of the ACCEPTED cluster holding it, -1 */
} fa_rep_node;

typedef struct fa_rep_tensor {
    const char *name;
    uint64_t bytes;
    int producer;            /* node id, -1 */
    unsigned flags;          /* FA_TENSOR_* (1 input, 2 output, 4 initializer, 8 constant) */
} fa_rep_tensor;

typedef struct fa_rep_edge {
    int producer, consumer, tensor;
    uint64_t bytes;          /* tensor bytes */
} fa_rep_edge;

typedef struct fa_rep_kernel {
    int node;                /* node id in its run, -1 */
    const char *name, *op_type, *node_name;
    int64_t start_ns, end_ns;/* trace clock */
    uint64_t flops, bytes;
    int iter;
    int64_t stream;
} fa_rep_kernel;

/* Kernel records of one run (kind 0, timed iterations), plus the median iteration. */
typedef struct fa_rep_trace {
    int n;
    fa_rep_kernel *k;        /* seq order */
    int median_iter;         /* iteration whose span is the median; -1 none */
    int64_t median_span_ns;
    int n_iters;
    int kernels_in_median;   /* kernel records in the median iteration */
    double *spans;           /* per iteration span ns (n_iters) */
} fa_rep_trace;

/* A stored cluster as the reports show it: the plan's record and its verdict (plan/plan.h, read
 * once by fa_store_get_latest_plan) with what the reports derive from other rows. */
typedef struct fa_rep_cluster {
    const fa_cluster *p;     /* the advisor's proposal (r->plan->clusters[i]) */
    const fa_cluster_verdict *v; /* the applier's verdict on it (r->verdicts[i]) */
    fa_sample_stats unfused, fused; /* benchmarks cluster-unfused / cluster-fused; n = 0 none */
    fa_paired_saving paired; /* the same samples paired per round (calibration); n = 0 none */
    bool accepted;
    /* roofline: combined unfused point and the fused point */
    uint64_t flops, ext_bytes;   /* sum of member FLOPs; bytes of external traffic */
    int64_t unfused_ns;          /* sum of member medians */
    double fused_ns;             /* NAN when unknown */
    const char *fused_source;    /* "fused run" | "cluster benchmark" | "unfused - measured saving" */
    const char *fused_name;      /* node name in the fused run, or NULL */
} fa_rep_cluster;

typedef struct fa_rep {
    fa_arena *ar;
    int64_t run_id;
    fa_run_info run;
    int n_nodes;             /* max node id + 1 */
    fa_rep_node *nodes;
    int n_live;              /* nodes with a row and not folded */
    int n_tensors;
    fa_rep_tensor *tensors;
    int n_edges;
    fa_rep_edge *edges;
    fa_op_row *ops;          /* per-op table, median desc */
    size_t n_ops;
    int n_iters;
    /* ceilings */
    bool have_ceil;
    fa_ceilings ceil;
    const char *ceil_key;
    int64_t ceil_peak_at_ns;    /* when the FP32 peak row was measured or written (unix ns), 0 unknown */
    double ceil_load;           /* the 1-minute load average when the ceilings were measured, < 0 unknown */
    int n_above_peak;           /* placed ops whose achieved GFLOP/s exceed the FP32 peak */
    double max_above_peak;      /* the largest achieved / peak among them */
    const char *above_peak_node;/* that op's node name */
    /* analysis */
    bool have_analysis;
    const char *analysis_text;
    /* traces */
    fa_rep_trace base;
    bool have_fused_run;
    int64_t fused_run_id;
    fa_run_info fused_run;
    fa_rep_trace fused;
    /* fused run's per-op rows (for the fused roofline points) */
    fa_op_row *fused_ops;
    size_t n_fused_ops;
    /* rows of fused_ops that are reorders between layouts (op_type "Reorder"): the fused model
     * ran on blocked layouts, so with no cluster accepted it is still not the baseline */
    int n_fused_reorder_ops;
    /* plan: the newest stored plan and its verdicts (NULL / 0 when the run has none) */
    fa_plan *plan;
    const fa_cluster_verdict *verdicts;
    int plan_id;             /* 0 none */
    int n_clusters;
    fa_rep_cluster *clusters;/* [n_clusters], the plan's order */
    int n_accepted, n_rejected, n_refused, n_proposed;
    /* end-to-end benchmarks (n = 0 when not measured) */
    fa_sample_stats bench_base, bench_fused;
    /* the run's figures (store/figures.c): every iteration time, kernel count and saving the
     * report and summary.json show comes from here */
    fa_run_figures fig;
    /* model outputs fused vs unfused, as the applier stored it on the plan (plans.e2e_max_rel_error,
     * schema v4); NAN unknown */
    double e2e_max_rel_error;
    /* the newest plan's end-to-end verdict (plans.e2e_verdict, schema v6): a LOSS is never shown
     * as a win, whatever the medians' ratio */
    fa_e2e_verdict e2e_verdict;
} fa_rep;

fa_status fa_rep_load(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_rep **out);
void fa_rep_free(fa_rep *r);
const char *fa_rep_node_name(const fa_rep *r, int id); /* "" when unknown */

/* Renderers: append the whole file to b. */
void fa_rep_html(const fa_rep *r, fa_buf *b);
void fa_rep_trace_json(const fa_rep *r, fa_buf *b);
void fa_rep_summary_json(const fa_rep *r, fa_buf *b);
void fa_rep_kernels_csv(const fa_rep *r, fa_buf *b);
/* What fa_rep_graph drew and the work its layout did (counts, not times: tests/unit/test_reports
 * checks that the work grows linearly with a model's depth). All 0 without graphviz. */
typedef struct fa_rep_graph_stats {
    int drawn_nodes;      /* nodes laid out, reference boxes included */
    int drawn_edges;
    int fanout_refs;      /* "from NAME" boxes drawn in place of a fan-out node's edges */
    int ranks;            /* ranks of dot's layout (edge labels take a rank of their own) */
    long virtual_nodes;   /* sum over edges of (rank span - 1): the virtual nodes dot placed and
                           * positioned with its network simplex */
    long layout_work_estimate; /* drawn nodes + edges + virtual nodes, estimated before layout */
    bool layout_skipped;  /* the estimate exceeded FA_REP_LAYOUT_WORK_MAX: graph.svg is a notice */
} fa_rep_graph_stats;

/* graph.dot into dot, graph.svg into svg (libcgraph/libgvc; a DOT-only fallback without them).
 * stats (may be NULL) receives what was drawn and the layout's work. */
fa_status fa_rep_graph(fa_ctx *ctx, const fa_rep *r, fa_buf *dot, fa_buf *svg, fa_rep_graph_stats *stats);

/* Shared formatting */
/* "2026-12-02 10:04 UTC, 3.1 days before this run" for a ceiling written at at_ns (unix ns)
 * against the run's start; "" when at_ns is 0. */
void fa_rep_fmt_age(char *buf, size_t cap, int64_t at_ns, int64_t run_ns);
void fa_rep_fmt_ns(char *buf, size_t cap, double ns);   /* "12.3 µs", "4.56 ms", "not measured" for NAN/<0 */
void fa_rep_fmt_bytes(char *buf, size_t cap, double bytes);

/* the report's stylesheet and its one script (sortable tables), shared by the model and trace
 * reports (html.c) */
extern const char *const fa_rep_css;
extern const char *const fa_rep_js;
/* The page's Content-Security-Policy <meta>: nothing fetched, and only the stylesheet and the
 * script above may apply or run, each allowed by its SHA-256 hash (CSP Level 2 hash sources,
 * computed here from the very strings the page carries), never 'unsafe-inline': markup that
 * reached the page from a database could neither run a script nor style it (docs/reports.md). */
void fa_rep_csp(fa_buf *b);
/* A 10x10 colour swatch for legends, as SVG (a presentation attribute, not an inline style the
 * policy would refuse). color: one of our palette's constants. */
void fa_rep_swatch(fa_buf *b, const char *color);

/* The report of an imported trace (trace_report.c): what the trace can tell, from the advice
 * stored with the run (trace/trace.h) — nothing that only a model run can fill. */
#include "trace/trace.h"
void fa_rep_trace_html(const fa_rep *r, const fa_trace_advice *a, fa_buf *b);
void fa_rep_trace_kernels_csv(const fa_trace_advice *a, fa_buf *b);
void fa_rep_trace_summary_json(const fa_rep *r, const fa_trace_advice *a, fa_buf *b);
void fa_rep_trace_perfetto(const fa_rep *r, const fa_trace_advice *a, fa_buf *b);

#endif
