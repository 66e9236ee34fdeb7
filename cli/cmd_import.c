/* cli/cmd_import — `fuse-advise import TRACE`: import a Kineto JSON or Nsight Systems SQLite
 * trace into the run database (a run of kind 'import'), then print op-level fusion advice from
 * the kernels alone (trace/trace.h, docs/trace-advice.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"
#include "cli.h"
#include "collector/import/import.h"
#include "reports/reports.h"
#include "store/store.h"

static const char *k_about =
    "  TRACE is a PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzip, or an Nsight Systems\n"
    "  SQLite export (nsys export --type sqlite); judged by its bytes. Stores the trace as a run of\n"
    "  kind 'import' and prints, from its GPU kernels: per-kernel statistics, repeated memory-bound\n"
    "  kernel sequences with an estimated saving, launch-bound stretches and idle gaps\n"
    "  (docs/trace-advice.md). Then `fuse-advise report RUN` works on it.\n";

/* The device the trace's kernels ran on: the deviceProperties entry of the first GPU kernel's
 * device, else the first entry. */
static const fa_import_device *pick_device(const fa_import_stats *stt, const fa_trace *t)
{
    if (!stt->n_devices) return NULL;
    for (size_t i = 0; i < t->n_acts; i++)
        if (t->acts[i].kind == FA_ACT_KERNEL && t->acts[i].device >= 0) {
            for (int d = 0; d < stt->n_devices; d++)
                if (stt->devices[d].id == t->acts[i].device) return &stt->devices[d];
            break;
        }
    return &stt->devices[0];
}

static void print_stats(const char *path, const fa_import_stats *s)
{
    fa_cli_printf("imported %s (%s, %s, %.1f MB read in %.1f ms)\n", path, fa_import_kind_name(s->kind),
                  s->schema[0] ? s->schema : "schema unknown", s->input_bytes / 1e6, s->elapsed_ns / 1e6);
    fa_cli_printf("  events %" PRIu64 ": kernels %" PRIu64 ", memcpy %" PRIu64 ", memset %" PRIu64 ", runtime %" PRIu64
                  ", driver %" PRIu64 ", cpu ops %" PRIu64 ", ranges %" PRIu64 ", sync %" PRIu64 ", python frames %" PRIu64
                  ", skipped %" PRIu64 ", bad %" PRIu64 "\n",
                  s->n_events, s->n_kernels, s->n_memcpy, s->n_memset, s->n_runtime, s->n_driver, s->n_cpu_ops, s->n_ranges,
                  s->n_sync, s->n_frames, s->n_skipped, s->n_bad_records);
    fa_cli_printf("  attributed to a cpu op/range %" PRIu64 ", sizes from Input Dims %" PRIu64 " (estimated)\n", s->n_attributed,
                  s->n_estimated_bytes);
    fa_cli_printf("  orphans %" PRIu64 " (GPU records whose launch is outside the trace), clock inversions %" PRIu64
                  ", duplicate correlations %" PRIu64 "\n",
                  s->n_orphans, s->n_clock_inversions, s->n_duplicate_correlations);
    if (s->n_extid_mismatch)
        fa_cli_printf("  External ids naming an op away from the launch call %" PRIu64 " (attributed by the launch's time instead)\n",
                      s->n_extid_mismatch);
    if (s->n_negative_durations || s->n_bad_utf8 || s->n_control_chars || s->n_nonfinite || s->n_bad_numbers ||
        s->n_bad_records || s->n_nul_names || s->lenient_pass)
        fa_cli_printf("  input faults: records skipped %" PRIu64 " (a time or id of the wrong type or beyond int64; first near byte %" PRIu64
                      "), negative durations %" PRIu64 ", invalid UTF-8 names %" PRIu64 " (first near byte %" PRIu64
                      "), names with NUL %" PRIu64 ", control characters %" PRIu64 ", non-finite numbers %" PRIu64 ", bad numbers %" PRIu64 "%s\n",
                      s->n_bad_records, s->first_bad_record_offset, s->n_negative_durations, s->n_bad_utf8, s->first_bad_utf8_offset,
                      s->n_nul_names, s->n_control_chars, s->n_nonfinite, s->n_bad_numbers, s->lenient_pass ? "; read in lenient mode" : "");
    if (s->time_shift_ns)
        fa_cli_printf("  %" PRIu64 " records start before time 0: every record moved %.3f us later (durations and gaps kept)\n",
               s->n_negative_times, s->time_shift_ns / 1e3);
    if (s->truncated) fa_cli_printf("  truncated at byte %" PRIu64 ": kept what was parsed (--keep-partial)\n", s->truncated_offset);
    for (int d = 0; d < s->n_devices; d++) {
        /* in the vendor's terms: an AMD part is a gfx architecture with compute units, not an sm_ */
        const fa_import_device *dv = &s->devices[d];
        fa_gpu_vendor v;
        fa_gpu_roofs r;
        fa_gpu_props props = {dv->name, dv->cc_major, dv->cc_minor, dv->sm_count, dv->warp_size, dv->total_mem_bytes};
        fa_gpu_identify(&props, &v, &r);
        if (v == FA_GPU_VENDOR_AMD && r.arch)
            fa_cli_printf("  device %d: %s, %s (%s), %d compute units, %.1f GiB\n", dv->id, dv->name[0] ? dv->name : "(not named)", r.arch, r.family, dv->sm_count,
                   dv->total_mem_bytes / 1073741824.0);
        else if (v == FA_GPU_VENDOR_AMD)
            fa_cli_printf("  device %d: %s, HIP compute capability %d.%d, %d compute units, %.1f GiB\n", dv->id, dv->name,
                   dv->cc_major, dv->cc_minor, dv->sm_count, dv->total_mem_bytes / 1073741824.0);
        else
            fa_cli_printf("  device %d: %s, sm_%d%d, %d SMs, %.1f GiB\n", dv->id, dv->name, dv->cc_major, dv->cc_minor, dv->sm_count,
                   dv->total_mem_bytes / 1073741824.0);
    }
}

/* Out of memory after the import proper (storing, advising, writing the report): say which
 * trace and which step, so the user knows what was too large. */
static fa_status name_nomem(fa_ctx *ctx, fa_status s, const char *path, const char *step)
{
    if (s == FA_ERR_NOMEM && !strstr(fa_ctx_errmsg(ctx), path)) return fa_ctx_wrap(ctx, s, "%s: %s: ", path, step);
    return s;
}

/* The records the run database keeps of an imported trace: the advice's timeline window (one
 * profiler step of GPU records, at most FA_TA_WINDOW_MAX), with the importer's counters. The
 * statistics of the whole trace are in the stored advice; storing every record would cost more
 * than the import itself on a large trace and hold nothing the advice does not summarise. */
static fa_status window_trace(fa_ctx *ctx, const fa_trace *t, const fa_trace_advice *a, fa_trace **out)
{
    fa_trace *w = fa_trace_create(t->source);
    if (!w) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    w->source_path = fa_trace_intern(w, t->source_path);
    w->device_name = fa_trace_intern(w, t->device_name);
    w->n_orphans = t->n_orphans;
    w->n_clock_inversions = t->n_clock_inversions;
    w->n_parse_errors = t->n_parse_errors;
    for (int i = 0; i < a->n_window; i++) {
        const fa_ta_wrec *r = &a->window[i];
        fa_activity x = fa_activity_init((fa_activity_kind)r->kind);
        x.name = fa_trace_intern(w, r->kernel >= 0 ? a->kernels[r->kernel].full_name
                                                   : r->kind == FA_ACT_MEMCPY ? "Memcpy" : "Memset");
        x.device = r->device;
        x.stream = r->stream;
        x.start_ns = r->start_ns;
        x.end_ns = r->end_ns;
        if (!x.name || !fa_trace_add(w, &x)) {
            fa_trace_free(w);
            return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        }
    }
    *out = w;
    return FA_OK;
}

/* The streaming import's sink: GPU records go straight into the advice builder, so the trace in
 * memory is the cpu side only (a trace of graph replays has millions of kernels and few launches) */
typedef struct advise_sink {
    fa_ta_builder *b;
} advise_sink;

static fa_status sink_gpu(void *user, fa_ctx *ctx, const fa_trace *t, const fa_activity *g, const fa_activity *L)
{
    advise_sink *k = user;
    if (!k->b) {
        fa_status s = fa_ta_builder_create(ctx, NULL, &k->b);
        if (s) return s;
        fa_ta_builder_use_trace(k->b, t);
    }
    return fa_ta_builder_add(ctx, k->b, g, L);
}

static fa_status sink_reset(void *user, fa_ctx *ctx)
{
    (void)ctx;
    advise_sink *k = user;
    fa_ta_builder_free(k->b);
    k->b = NULL;
    return FA_OK;
}

static int import_and_advise(fa_ctx *ctx, const char *path, const char *db, bool json, bool keep_partial,
                             const char *out_dir, const char *cmdline)
{
    /* a pipe (/dev/stdin, <(zcat trace.json.gz)) is read once into a private copy that the
     * import and the SHA-256 both read */
    fa_import_source src;
    fa_status s = fa_import_source_open(ctx, path, &src);
    if (s) return fa_cli_fail(ctx, s);
    fa_import_stats stt;
    memset(&stt, 0, sizeof stt);
    advise_sink sink = {NULL};
    fa_import_sink snk = {sink_gpu, sink_reset, &sink};
    fa_import_opts opts = {.keep_partial = keep_partial, .name = path, .sink = &snk};
    fa_trace *t = NULL;
    s = fa_import_file(ctx, src.path, &opts, &t, &stt);
    char sha[65] = {0};
    if (!s) s = fa_sha256_file(ctx, src.path, sha);
    if (s && src.spool) s = fa_ctx_wrap(ctx, s, "%s (read from a pipe): ", path);
    /* an error of the advice's sink (too many streams) names the file as the reader's do */
    else if (s && !strstr(fa_ctx_errmsg(ctx), path)) s = fa_ctx_wrap(ctx, s, "%s: ", path);
    fa_import_source_close(&src);
    if (s) {
        fa_ta_builder_free(sink.b);
        fa_trace_free(t);
        return fa_cli_fail(ctx, s);
    }
    const fa_import_device *dv = pick_device(&stt, t);
    fa_ta_device dev = {0};
    if (dv) {
        dev.name = dv->name[0] ? dv->name : NULL;
        dev.cc_major = dv->cc_major;
        dev.cc_minor = dv->cc_minor;
        dev.total_mem_bytes = dv->total_mem_bytes;
        dev.sm_count = dv->sm_count;
        dev.warp_size = dv->warp_size;
        dev.props_source = stt.kind == FA_IMPORT_NSYS_SQLITE ? "TARGET_INFO_GPU"
                           : stt.legacy_props                 ? "computeProperties"
                                                              : "deviceProperties";
    }
    if (!dev.name) dev.name = t->device_name;
    /* the advice first (it needs the op shapes and stacks the store does not keep), then one
     * transaction stores the run, its timeline window and the advice: never a run marked ok
     * without its advice */
    fa_trace_advice *a = NULL;
    fa_trace *win = NULL;
    fa_store *st = NULL;
    int64_t run_id = 0;
    if (sink.b) {
        /* streamed: the builder has every GPU record; the device and counters are known now */
        if (!dev.name) dev.name = t->device_name;
        fa_ta_builder_set_device(sink.b, &dev);
        fa_ta_builder_set_counters(sink.b, t->n_orphans, t->n_clock_inversions, t->n_parse_errors);
        s = fa_ta_builder_finish(ctx, sink.b, &a); /* frees the builder */
        sink.b = NULL;
        s = name_nomem(ctx, s, path, "advising");
    } else {
        /* no GPU record streamed: an nsys export (read whole), or no GPU activity */
        s = name_nomem(ctx, fa_trace_advise(ctx, t, &dev, &a), path, "advising");
    }
    if (!s) s = name_nomem(ctx, window_trace(ctx, t, a, &win), path, "advising");
    if (!s) s = fa_store_open(ctx, db, &st);
    if (!s) {
        fa_run_info info;
        memset(&info, 0, sizeof info);
        info.kind = "import";
        info.model_path = path;
        info.source_sha256 = sha;
        info.device_name = dv && dv->name[0] ? dv->name : t->device_name;
        info.command_line = cmdline;
        s = fa_store_begin(ctx, st);
        if (!s) s = fa_store_run_begin(ctx, st, &info, &run_id);
        if (!s) s = fa_store_put_trace(ctx, st, run_id, win);
        if (!s) {
            a->run_id = run_id;
            s = fa_trace_advice_save(ctx, st, run_id, a);
        }
        /* 'ok' with the advice in this transaction, or - with a report to write - once the
         * report's folder is in place too */
        if (!s && !out_dir) s = fa_store_run_finish(ctx, st, run_id, true, NULL);
        if (!s) s = fa_store_commit(ctx, st);
        if (s) {
            fa_store_rollback(st);
            run_id = 0; /* rolled back with the transaction */
        }
        s = name_nomem(ctx, s, path, "storing the trace and its advice");
    }
    fa_trace_free(win);
    if (!s && out_dir) { /* written whole: a staging folder swapped in (fa_outdir) */
        fa_outdir *od = NULL;
        s = fa_cli_check_input_outside(ctx, out_dir, path);
        if (!s) s = fa_outdir_begin(ctx, out_dir, fa_cli_output_names, false, &od);
        if (!s) s = name_nomem(ctx, fa_reports_write(ctx, st, run_id, fa_outdir_path(od)), path, "writing the report");
        if (!s) s = fa_outdir_commit(ctx, od);
        else fa_outdir_abort(od);
        if (!s) s = fa_store_run_finish(ctx, st, run_id, true, NULL);
    }
    int rc = 0;
    if (s) {
        rc = fa_cli_fail(ctx, s);
        if (st && run_id > 0) {
            fa_ctx *c2 = fa_ctx_create();
            fa_store_run_finish(c2, st, run_id, false, fa_ctx_errmsg(ctx));
            fa_ctx_free(c2);
        }
    } else if (json) {
        fa_buf b;
        fa_buf_init(&b);
        fa_buf_printf_term(&b, "{\"run_id\":%" PRId64 ",\"db\":", run_id);
        fa_buf_puts(&b, "\"");
        fa_escape_json(&b, fa_store_path(st), strlen(fa_store_path(st)));
        fa_buf_puts(&b, "\",\"trace\":\"");
        fa_escape_json(&b, path, strlen(path));
        fa_buf_printf_term(&b, "\",\"source_sha256\":\"%s\",\"import\":", sha);
        fa_import_stats_json(&stt, &b);
        fa_buf_puts(&b, ",\"advice\":");
        fa_trace_advice_json(a, &b);
        if (out_dir) {
            fa_buf_puts(&b, ",\"report_dir\":\"");
            fa_escape_json(&b, out_dir, strlen(out_dir));
            fa_buf_puts(&b, "\"");
        }
        fa_buf_puts(&b, "}\n");
        fwrite(b.data, 1, b.len, stdout);
        fa_buf_free(&b);
    } else {
        print_stats(path, &stt);
        if (a->no_gpu_activity) {
            fa_cli_printf("\nno GPU activity in %s: nothing to fuse\n", path);
        } else {
            fa_buf b;
            fa_buf_init(&b);
            fa_trace_advice_text(a, &b);
            fa_cli_printf("\n");
            fwrite(b.data, 1, b.len, stdout);
            fa_buf_free(&b);
        }
        fa_cli_printf("\nstored in %s as run %" PRId64 " (kind import); `fuse-advise report %" PRId64 " --db %s` renders it\n",
                      fa_store_path(st), run_id, run_id, fa_store_path(st));
        if (out_dir) fa_cli_printf("report written to %s\n", out_dir);
    }
    fa_trace_advice_free(a);
    fa_store_close(st);
    fa_trace_free(t);
    return rc;
}

/* For `fuse-advise run TRACE` (cli/cmd_run.c): import -> analyze -> advise -> report. out_dir
 * may be NULL (no report files). Returns a process exit code. */
int fa_cli_import_and_advise(fa_ctx *ctx, const char *trace_path, const char *db, bool json, const char *out_dir)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "fuse-advise run %s", trace_path);
    return import_and_advise(ctx, trace_path, db ? db : fa_cli_default_db(), json, false, out_dir, cmd);
}

/* For `analyze RUN` / `advise RUN` on a run of kind 'import' (cli/cmd_analyze.c,
 * cli/cmd_advise.c): recompute the trace advice from the stored kernels (device facts from the
 * trace.* rows written at import), store it again, print it (text or one JSON object).
 * st is the caller's open database. Returns a process exit code. */
int fa_cli_trace_advise_stored(fa_ctx *ctx, fa_store *st, int64_t run_id, bool json)
{
    fa_trace_advice *a = NULL;
    fa_status s = fa_trace_advise_run(ctx, st, run_id, NULL, &a);
    if (s) {
        fa_trace_advice_free(a);
        return fa_cli_fail(ctx, s);
    }
    fa_buf b;
    fa_buf_init(&b);
    if (json) {
        fa_buf_printf_term(&b, "{\"run_id\":%" PRId64 ",\"advice\":", run_id);
        fa_trace_advice_json(a, &b);
        fa_buf_puts(&b, "}\n");
    } else {
        fa_buf_printf_term(&b, "run %" PRId64 " (import): trace-only advice, no model graph (docs/trace-advice.md)\n", run_id);
        fa_trace_advice_text(a, &b);
    }
    fwrite(b.data, 1, b.len, stdout);
    fa_buf_free(&b);
    fa_trace_advice_free(a);
    return 0;
}

int fa_cmd_import(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = fa_cli_default_db(), *path = NULL;
    bool json = false, keep_partial = false;
    const fa_cli_opt opts[] = {
        FA_CLI_OPT_DB(&db),
        FA_CLI_FLAG("--json", &json, "print one JSON document: {\"run_id\", \"import\": stats, \"advice\": ...}"),
        FA_CLI_FLAG("--keep-partial", &keep_partial, "a truncated trace is imported up to where it ends (default: refused)"),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = "import", .synopsis = "TRACE [options]", .about = k_about, .opts = opts,
                              .min_args = 1, .max_args = 1, .args_name = "TRACE"};
    fa_cli_args args;
    int prc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (prc >= 0) return prc;
    path = args.arg[0];

    char *cmd = fa_cli_command_line("fuse-advise", argc, argv);
    int rc = import_and_advise(ctx, path, db, json, keep_partial, NULL, cmd ? cmd : "fuse-advise import");
    free(cmd);
    return rc;
}
