/* reports/trace — trace.json in the Chrome trace-event format ("Trace Event Format", Google,
 * the JSON Object Format with "traceEvents"): ui.perfetto.dev and chrome://tracing open it.
 * pid 1 = baseline run, pid 2 = fused run; one thread per stream plus an "iterations" thread. */
#include "reports-impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void meta(fa_buf *b, bool *first, const char *what, int pid, int64_t tid, const char *name)
{
    fa_buf_printf(b, "%s{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%" PRId64 ",\"args\":{\"name\":", *first ? "" : ",\n",
                  what, pid, tid);
    fa_json_str_or_empty(b, name);
    fa_buf_puts(b, "}}");
    *first = false;
}

static void one_run(fa_buf *b, bool *first, int pid, const char *label, int64_t run_id, const fa_rep_trace *t)
{
    char pname[160];
    snprintf(pname, sizeof pname, "%s (run %" PRId64 ")", label, run_id);
    meta(b, first, "process_name", pid, 0, pname);
    fa_buf_printf(b, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,\"args\":{\"sort_index\":%d}}", pid, pid);
    meta(b, first, "thread_name", pid, 0, "iterations");
    if (t->n == 0) return;
    int64_t t0 = INT64_MAX;
    for (int i = 0; i < t->n; i++)
        if (t->k[i].iter >= 0 && t->k[i].start_ns < t0) t0 = t->k[i].start_ns;
    /* streams -> tids 1.. (stream ids of cpu kernels are host thread ids) */
    int64_t streams[64];
    int n_streams = 0;
    for (int i = 0; i < t->n; i++) {
        const fa_rep_kernel *k = &t->k[i];
        if (k->iter < 0) continue;
        int si = 0;
        while (si < n_streams && streams[si] != k->stream) si++;
        if (si == n_streams && n_streams < 64) {
            streams[n_streams++] = k->stream;
            char tn[64];
            snprintf(tn, sizeof tn, "kernels (stream %" PRId64 ")", k->stream);
            meta(b, first, "thread_name", pid, si + 1, tn);
        }
    }
    /* iteration spans */
    int max_iter = -1;
    for (int i = 0; i < t->n; i++) if (t->k[i].iter > max_iter) max_iter = t->k[i].iter;
    for (int it = 0; it <= max_iter; it++) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (int i = 0; i < t->n; i++)
            if (t->k[i].iter == it) {
                if (t->k[i].start_ns < lo) lo = t->k[i].start_ns;
                if (t->k[i].end_ns > hi) hi = t->k[i].end_ns;
            }
        if (lo == INT64_MAX) continue;
        fa_buf_printf(b, ",\n{\"ph\":\"X\",\"name\":\"iteration %d%s\",\"cat\":\"iteration\",\"pid\":%d,\"tid\":0,"
                         "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"iter\":%d}}",
                      it, it == t->median_iter ? " (median)" : "", pid, (lo - t0) / 1e3, (hi - lo) / 1e3, it);
    }
    for (int i = 0; i < t->n; i++) {
        const fa_rep_kernel *k = &t->k[i];
        if (k->iter < 0) continue;
        int si = 0;
        while (si < n_streams && streams[si] != k->stream) si++;
        if (si == n_streams) si = n_streams - 1;
        const char *nm = k->node_name ? k->node_name : k->name;
        fa_buf_puts(b, ",\n{\"ph\":\"X\",\"name\":");
        fa_json_str_or_empty(b, nm ? nm : "kernel");
        fa_buf_puts(b, ",\"cat\":");
        fa_json_str_or_empty(b, k->op_type ? k->op_type : "kernel");
        fa_buf_printf(b, ",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"node\":", pid, si + 1,
                      (k->start_ns - t0) / 1e3, (k->end_ns - k->start_ns) / 1e3);
        fa_json_str_or_empty(b, k->node_name);
        fa_buf_printf(b, ",\"node_id\":%d,\"op\":", k->node);
        fa_json_str_or_empty(b, k->op_type);
        fa_buf_puts(b, ",\"kernel\":");
        fa_json_str_or_empty(b, k->name);
        fa_buf_printf(b, ",\"bytes\":%" PRIu64 ",\"flops\":%" PRIu64 ",\"iter\":%d}}", k->bytes, k->flops, k->iter);
    }
}

void fa_rep_trace_json(const fa_rep *r, fa_buf *b)
{
    bool first = true;
    fa_buf_puts(b, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"model\":");
    fa_json_str_or_empty(b, r->run.model_path);
    fa_buf_printf(b, ",\"run_id\":%" PRId64 ",\"device\":", r->run_id);
    fa_json_str_or_empty(b, r->run.device_name);
    fa_buf_puts(b, "},\"traceEvents\":[\n");
    one_run(b, &first, 1, "baseline", r->run_id, &r->base);
    if (r->have_fused_run) one_run(b, &first, 2, "fused", r->fused_run_id, &r->fused);
    fa_buf_puts(b, "\n]}\n");
}
