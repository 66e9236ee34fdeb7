/* reports/reports — fa_reports_write: load the run once, render every file in memory, then write
 * each atomically (temporary name + rename) into the output folder. */
#include "reports-impl.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const fa_report_files[FA_REPORT_N_FILES] = {
    "summary.json", "kernels.csv", "trace.json", "graph.dot", "graph.svg", "report.html", NULL,
};

/* mkdir -p */
static fa_status make_dir(fa_ctx *ctx, const char *dir)
{
    size_t n = strlen(dir);
    char *p = malloc(n + 1);
    if (!p) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != 0) continue;
        char c = p[i];
        p[i] = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            fa_status s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot create report folder: %s", p, strerror(e));
            free(p);
            return s;
        }
        p[i] = c;
    }
    free(p);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: report folder is not a directory", dir);
    if (access(dir, W_OK | X_OK) != 0)
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: report folder is not writable: %s", dir, strerror(errno));
    return FA_OK;
}

/* graph.dot and graph.svg rendered on a thread of their own while this one renders the other
 * files: the graph's layout (graphviz, serialised by its own lock) is most of a deep model's
 * report time (a 24-layer BERT: ~0.4 of 0.6 s) and needs nothing the others write. */
typedef struct graph_job {
    fa_ctx *ctx;
    const fa_rep *r;
    fa_buf *dot, *svg;
    fa_status s;
} graph_job;

static void *graph_job_run(void *arg)
{
    graph_job *j = arg;
    j->s = fa_rep_graph(j->ctx, j->r, j->dot, j->svg, NULL);
    return NULL;
}

fa_status fa_reports_write(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *out_dir)
{
    if (!out_dir || !*out_dir) return fa_ctx_error(ctx, FA_ERR_USAGE, "reports: empty output folder");
    fa_rep *r = NULL;
    fa_status s = fa_rep_load(ctx, st, run_id, &r);
    if (s) return fa_ctx_wrap(ctx, s, "report of run %" PRId64 ": ", run_id);
    enum { F_SUMMARY, F_CSV, F_TRACE, F_DOT, F_SVG, F_HTML, F_N };
    fa_buf bufs[F_N];
    for (int i = 0; i < F_N; i++) fa_buf_init(&bufs[i]);
    /* an imported trace gets the report made for it, from the advice stored with the run */
    fa_trace_advice *ta = NULL;
    bool trace_run = r->run.kind && (!strcmp(r->run.kind, "import") || !strcmp(r->run.kind, "trace"));
    if (trace_run && fa_trace_advise_run(ctx, st, run_id, NULL, &ta) != FA_OK) {
        fa_ctx_clear(ctx); /* stored before this version: the model-run report, as before */
        ta = NULL;
    }
    graph_job gj = {fa_ctx_create(), r, &bufs[F_DOT], &bufs[F_SVG], FA_OK};
    pthread_t gth;
    bool threaded = gj.ctx && pthread_create(&gth, NULL, graph_job_run, &gj) == 0;
    if (ta) {
        fa_rep_trace_summary_json(r, ta, &bufs[F_SUMMARY]);
        fa_rep_trace_kernels_csv(ta, &bufs[F_CSV]);
        fa_rep_trace_perfetto(r, ta, &bufs[F_TRACE]);
        fa_rep_trace_html(r, ta, &bufs[F_HTML]);
    } else {
        fa_rep_summary_json(r, &bufs[F_SUMMARY]);
        fa_rep_kernels_csv(r, &bufs[F_CSV]);
        fa_rep_trace_json(r, &bufs[F_TRACE]);
        fa_rep_html(r, &bufs[F_HTML]);
    }
    if (threaded) pthread_join(gth, NULL);
    else gj.s = fa_rep_graph(ctx, r, &bufs[F_DOT], &bufs[F_SVG], NULL); /* no thread: here, as before */
    s = gj.s;
    if (s && threaded) fa_ctx_error(ctx, s, "%s", fa_ctx_errmsg(gj.ctx));
    fa_ctx_free(gj.ctx);
    fa_trace_advice_free(ta);
    for (int i = 0; i < F_N && !s; i++)
        if (bufs[i].oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory rendering %s of run %" PRId64, fa_report_files[i], run_id);
    /* every file is rendered before the first one is written */
    if (!s) s = make_dir(ctx, out_dir);
    for (int i = 0; i < F_N && !s; i++) {
        size_t n = strlen(out_dir) + strlen(fa_report_files[i]) + 2;
        char *path = malloc(n);
        if (!path) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); break; }
        snprintf(path, n, "%s/%s", out_dir, fa_report_files[i]);
        s = fa_write_file_atomic(ctx, path, bufs[i].data ? bufs[i].data : "", bufs[i].len);
        free(path);
    }
    for (int i = 0; i < F_N; i++) fa_buf_free(&bufs[i]);
    fa_rep_free(r);
    return s;
}

fa_status fa_reports_summary_json(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_buf *b)
{
    fa_rep *r = NULL;
    fa_status s = fa_rep_load(ctx, st, run_id, &r);
    if (s) return fa_ctx_wrap(ctx, s, "summary of run %" PRId64 ": ", run_id);
    fa_rep_summary_json(r, b);
    fa_rep_free(r);
    return b->oom ? fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory rendering the summary of run %" PRId64, run_id) : FA_OK;
}

fa_status fa_reports_check_peak(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_reports_peak_check *out)
{
    memset(out, 0, sizeof *out);
    fa_rep *r = NULL;
    fa_status s = fa_rep_load(ctx, st, run_id, &r);
    if (s) return fa_ctx_wrap(ctx, s, "ceilings of run %" PRId64 ": ", run_id);
    out->n_above = r->n_above_peak;
    out->max_ratio = r->max_above_peak;
    snprintf(out->node, sizeof out->node, "%s", r->above_peak_node ? r->above_peak_node : "");
    out->peak_at_ns = r->ceil_peak_at_ns;
    out->run_at_ns = r->run.started_at_ns;
    fa_rep_free(r);
    return FA_OK;
}
