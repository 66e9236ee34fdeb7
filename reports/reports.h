/* reports — what an engineer opens after `fuse-advise run`: report.html (self-contained, inline
 * SVG roofline and timeline, sortable tables), graph.dot/graph.svg (libcgraph + libgvc),
 * trace.json (Chrome trace-event format), summary.json and kernels.csv. Everything is rebuilt
 * from the run database alone (docs/schema.md); docs/reports.md documents every file. */
#ifndef FA_REPORTS_H
#define FA_REPORTS_H

#include "core/core.h"
#include "store/store.h"

/* Names of the files fa_reports_write produces, in the order it writes them. */
extern const char *const fa_report_files[];
#define FA_REPORT_N_FILES 7

/* Write every report of run `run_id` into `out_dir` (created, with missing parents, when
 * absent). Reads only the database: the run's nodes, tensors, consumers and kernels; its
 * device ceilings (device_ceilings rows of "cpu:<device_name>:<threads>t", or any key
 * containing the device name); analysis_* rows; the newest plan of the run with its clusters
 * and why_not rows; benchmarks rows (subjects baseline / fused with cluster_id -1,
 * cluster-unfused / cluster-fused with a cluster id); and the newest run of kind 'fused' whose
 * tag is "fused-of:<run_id>" (the fused model's own kernel trace). Whatever is absent is shown
 * as "not measured" — a run without analysis, plan or apply still gets every file.
 * Every file is first rendered in memory, then written to a temporary name in out_dir and
 * renamed (fa_write_file_atomic): on failure no half-written report is left behind (files
 * already renamed before the failure stay complete).
 * Errors: FA_ERR_INPUT "PATH: no run N" when the run is absent; FA_ERR_IO naming out_dir when
 * it cannot be created or written; FA_ERR_RUNTIME when graphviz fails to lay out the graph;
 * FA_ERR_NOMEM. Large graphs: see docs/reports.md ("Large graphs"). */
fa_status fa_reports_write(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *out_dir);

/* summary.json of run_id (docs/reports.md), the document fa_reports_write writes, appended to b
 * (`run --json` prints it). Errors: as fa_reports_write's loading; FA_ERR_NOMEM. */
fa_status fa_reports_summary_json(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_buf *b);

/* The roofline's own check of run_id's ceilings (docs/reports.md "Ceilings"): how many of its
 * measured ops ran above the stored FP32 peak, the largest achieved / peak and that op's node
 * name (copied into node, always terminated), and when the peak was measured (unix ns, 0
 * unknown). n_above 0 when the run has no ceilings. Errors: as fa_reports_write's loading. */
typedef struct fa_reports_peak_check {
    int n_above;
    double max_ratio;
    char node[128];
    int64_t peak_at_ns;
    int64_t run_at_ns;        /* the run's start (unix ns), for the age */
} fa_reports_peak_check;
fa_status fa_reports_check_peak(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_reports_peak_check *out);

#endif
