/* trace/save — the advice with its run in the run database: analysis_summary sentences (keys
 * trace.*), one analysis_chains row per opportunity, and the whole advice as one JSON document
 * that fa_trace_advise_run reads back. */
#include "trace/trace-impl.h"

#include <inttypes.h>
#include <math.h>

/* the sentences' rows, and the advice document's parts (FA_STORE_TEXT_PARTS_MAX, of ADVICE_PART
 * bytes each: one stored value holds at most 16 MiB, and a trace of 300,000 distinct kernels
 * made a 74 MB document that the store refused) */
enum { MAX_ROWS = 24 + FA_STORE_TEXT_PARTS_MAX, ADVICE_PART = 8 << 20 };

/* The summary rows being written: each row's sentence is composed in `b`. */
typedef struct summary_rows {
    fa_ctx *ctx;
    fa_arena *ar;
    fa_buf b;
    fa_analysis_summary_row rows[MAX_ROWS];
    int n;
    fa_status s; /* the first failure; later rows are skipped */
} summary_rows;

/* One summary row (key k, value v in unit u): the sentence composed in R->b (copied), then R->b
 * is reset for the next. */
static void add_row(summary_rows *R, const char *k, double v, const char *u)
{
    if (!R->s && R->n < MAX_ROWS) {
        const char *text = fa_arena_strdup(R->ar, R->b.data ? R->b.data : "");
        if (!text) R->s = fa_ctx_error(R->ctx, FA_ERR_NOMEM, "out of memory storing the trace advice");
        R->rows[R->n++] = (fa_analysis_summary_row){k, v, u, text};
    }
    fa_buf_reset(&R->b);
}

fa_status fa_trace_advice_save(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_trace_advice *a)
{
    summary_rows R = {.ctx = ctx, .ar = fa_arena_create(1 << 14)};
    fa_buf_init(&R.b);
    fa_arena *ar = R.ar;
    R.s = ar ? FA_OK : fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory storing the trace advice");
    char t1[32], t2[32];
    if (a->cc_major) {
        fa_buf_printf(&R.b, "Compute capability %d.%d (%s).", a->cc_major, a->cc_minor, a->cc_source);
        add_row(&R, "trace.device.cc", a->cc_major + a->cc_minor / 10.0, "cc");
    }
    if (a->total_mem_bytes) add_row(&R, "trace.device.mem_bytes", (double)a->total_mem_bytes, "bytes");
    if (a->no_gpu_activity) {
        fa_buf_puts(&R.b, "No GPU activity in the trace: nothing to fuse.");
        add_row(&R, "trace.no_gpu_activity", 1, "bool");
    }
    fa_buf_printf(&R.b, "%" PRId64 " GPU kernels (%d distinct names), %s of kernel time over a %s span on %d streams.",
                  a->n_kernels, a->n_kernel_names, fa__ta_ms((double)a->kernel_ns, t1, sizeof t1), fa__ta_ms((double)a->span_ns, t2, sizeof t2),
                  a->n_streams);
    add_row(&R, "trace.kernels", a->n_kernels, "count");
    /* launch overhead per kernel (host launch call + device launch latency), under its own key: the
     * trace.launch_overhead_ns rows of older runs added the median gap of any cause. NULL (NAN)
     * when not measured */
    fa__ta_launch_words(&R.b, a);
    fa_buf_puts(&R.b, ".");
    add_row(&R, "trace.launch_per_kernel_ns", a->launch_per_kernel_ns >= 0 ? (double)a->launch_per_kernel_ns : NAN, "ns");
    fa__ta_idle_words(&R.b, a);
    fa_buf_puts(&R.b, ".");
    add_row(&R, "trace.host_bound_idle_ns", (double)a->host_bound_idle_ns, "ns");
    if (a->hbm_gbs > 0) fa_buf_printf(&R.b, "HBM bandwidth %.0f GB/s (theoretical, %s data sheet).", a->hbm_gbs, a->hbm_label);
    else fa_buf_printf(&R.b, "HBM bandwidth unknown for this device.");
    add_row(&R, "trace.hbm_gbs", a->hbm_gbs, "GB/s");
    if (a->n_opps) {
        const fa_ta_opportunity *o = &a->opps[0];
        fa_buf_printf(&R.b, "%" PRId64 " fusion opportunities; the largest: %s x%" PRId64 " (", a->n_opps_total,
                      o->pattern ? o->pattern : "repeated sequence", o->count);
        fa__ta_opp_members(&R.b, o, true);
        fa_buf_printf(&R.b, "), estimated saving %s (%.1f%% of the span).", fa__ta_ms(o->est.saving_ns, t1, sizeof t1), 100 * o->share);
    } else {
        fa_buf_printf(&R.b, "No fusion opportunity found (no named pattern, no repeated sequence of memory-bound kernels).");
    }
    add_row(&R, "trace.opportunities", a->n_opps_total, "count");
    fa_buf_printf(&R.b, "Estimated saving of all fusion opportunities: %s (%.1f%% of the span; each kernel counted at most once).",
                  fa__ta_ms(a->saving_ns, t1, sizeof t1), a->span_ns ? 100.0 * a->saving_ns / (double)a->span_ns : 0.0);
    add_row(&R, "trace.saving_ns", a->saving_ns, "ns");
    fa_buf_printf(&R.b, "%d launch-bound stretches (>= %d consecutive kernels each shorter than its launch call): %" PRId64
                      " kernels, %.1f us of kernel time.",
                  a->n_stretches, FA_TA_MIN_STRETCH, a->launch_bound_kernels, a->launch_bound_ns / 1e3);
    add_row(&R, "trace.launch_bound_ns", a->launch_bound_ns, "ns");
    fa_buf_printf(&R.b, "GPU idle between kernels: %.3f ms summed over streams", a->idle_ns / 1e6);
    if (a->n_gaps)
        fa_buf_printf(&R.b, "; largest gap %.1f us before %s (cpu op then: %s)", a->gaps[0].gap_ns / 1e3, a->gaps[0].next_kernel,
                      a->gaps[0].cpu_op ? a->gaps[0].cpu_op : "unknown");
    fa_buf_puts(&R.b, ".");
    add_row(&R, "trace.idle_ns", a->idle_ns, "ns");
    fa_buf_printf(&R.b, "%" PRIu64 " GPU records without a launch call in the trace (orphans).", a->n_orphans);
    add_row(&R, "trace.orphans", a->n_orphans, "count");
    fa_buf_printf(&R.b, "%" PRIu64 " GPU records starting before their launch call (clock inversions; linked, not fixed).",
                  a->n_clock_inversions);
    add_row(&R, "trace.clock_inversions", a->n_clock_inversions, "count");
    fa_buf_printf(&R.b, "%" PRIu64 " recoverable parse errors in the trace file.", a->n_parse_errors);
    add_row(&R, "trace.parse_errors", a->n_parse_errors, "count");
    fa_buf_printf(&R.b, "%" PRId64 " kernels started before the previous kernel on their stream ended (gap excluded).",
                  a->n_overlaps);
    add_row(&R, "trace.overlaps", a->n_overlaps, "count");
    fa_trace_advice_json(a, &R.b);
    if (R.b.oom && !R.s) R.s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory storing the trace advice");
    /* in parts of ADVICE_PART bytes: trace.advice_json, trace.advice_json.1, ... (read back joined by
     * fa_store_get_summary_text_parts) */
    size_t len = R.b.len, parts = len ? (len + ADVICE_PART - 1) / ADVICE_PART : 1;
    if (!R.s && parts > FA_STORE_TEXT_PARTS_MAX)
        R.s = fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "the trace's advice is a %zu-byte document (%d distinct kernels), over the "
                           "%d MiB it may be stored in", len, a->n_kernel_names, (FA_STORE_TEXT_PARTS_MAX * ADVICE_PART) >> 20);
    const char *doc = R.b.data ? R.b.data : "";
    for (size_t k = 0; !R.s && k < parts; k++) {
        size_t at = k * ADVICE_PART, n = len - at < ADVICE_PART ? len - at : ADVICE_PART;
        char *key = fa_arena_alloc(ar, 64), *text = fa_arena_alloc(ar, n + 1);
        if (!key || !text || R.n >= MAX_ROWS) {
            R.s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory storing the trace advice");
            break;
        }
        if (k) snprintf(key, 64, "trace.advice_json.%zu", k);
        else snprintf(key, 64, "trace.advice_json");
        memcpy(text, doc + at, n);
        text[n] = 0;
        R.rows[R.n++] = (fa_analysis_summary_row){key, 1, "json", text};
    }
    fa_buf_reset(&R.b);
    fa_status s = R.s;
    fa_analysis_chain_row *chains = ar ? fa_arena_alloc(ar, sizeof *chains * (size_t)(a->n_opps + 1)) : NULL;
    if (!s && !chains) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory storing the trace advice");
    for (int i = 0; i < a->n_opps && !s; i++) {
        const fa_ta_opportunity *c = &a->opps[i];
        chains[i] = (fa_analysis_chain_row){
            .n_members = c->n,
            .member_names = (const char *const *)c->members,
            .time_ns = c->kernel_ns,
            .share = a->kernel_ns > 0 ? (double)c->kernel_ns / (double)a->kernel_ns : 0.0,
            .intermediate_bytes = c->saved_bytes >= 0 ? (uint64_t)(c->saved_bytes * (double)c->count) : 0,
            .launches = (int)(c->count * c->n),
            .max_saving_ns = (int64_t)c->est.saving_ns,
        };
    }
    fa_analysis_rows r = {.summary = R.rows, .n_summary = (size_t)R.n, .chains = chains, .n_chains = (size_t)a->n_opps};
    if (!s) s = fa_store_put_trace_advice(ctx, st, run_id, &r);
    fa_buf_free(&R.b);
    fa_arena_free(ar);
    return s;
}

fa_status fa_trace_advise_run(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_ta_device *dev, fa_trace_advice **out)
{
    (void)dev;
    fa_arena *ar = fa_arena_create(1 << 12);
    if (!ar) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory reading the stored trace advice");
    const char *json = NULL;
    fa_status s = fa_store_get_summary_text_parts(ctx, st, run_id, "trace.advice_json", ar, &json);
    if (!s && json) {
        s = fa_trace_advice_from_json(ctx, json, strlen(json), out);
        if (!s) (*out)->run_id = run_id;
    } else if (!s) {
        s = fa_ctx_error(ctx, FA_ERR_INPUT,
                         "run %" PRId64 " holds no trace advice (import it again with this version: `fuse-advise import TRACE`)",
                         run_id);
    }
    fa_arena_free(ar);
    return s;
}
