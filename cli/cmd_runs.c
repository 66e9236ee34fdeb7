/* cli/cmd_runs — `fuse-advise runs [--db PATH] [--model M] [--device D] [--tag T] [--json]`: the
 * runs stored in the run database (a file, or a team's PostgreSQL server holding the runs of many
 * machines), newest first, with their status, host and median iteration latency. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "store/store.h"

static const char *k_about =
    "  Lists every run: id, kind, status, start time, model, target, device, timed iterations and its\n"
    "  iteration latency as `run` and the report show it (OF bench: the end-to-end benchmark median,\n"
    "  the fused model's on a fused twin's row; OF trace: the traced iteration median, first kernel\n"
    "  start to last kernel end). --json adds every figure (\"figures\").\n";

/* The run's figures as JSON (store/figures.c: what `run`, report.html and summary.json show). */
static void figures_json(fa_buf *b, const fa_run_figures *f)
{
    const char *wb, *wf;
    double lb = fa_run_figures_latency(f, false, &wb), lf = fa_run_figures_latency(f, true, &wf);
    fa_buf_puts(b, "{\"baseline_ns\":");
    fa_json_num(b, lb, 9);
    fa_buf_puts(b, ",\"baseline_measure\":");
    fa_json_str(b, wb);
    fa_buf_puts(b, ",\"fused_ns\":");
    fa_json_num(b, lf, 9);
    fa_buf_puts(b, ",\"fused_measure\":");
    fa_json_str(b, wf);
    fa_buf_puts(b, ",\"traced_iteration_ns\":{\"baseline\":");
    fa_json_num(b, f->traced_iter_ns, 9);
    fa_buf_puts(b, ",\"fused\":");
    fa_json_num(b, f->fused_traced_iter_ns, 9);
    fa_buf_puts(b, "},\"kernels_per_iteration\":{\"baseline\":");
    if (f->kernels_baseline >= 0) fa_buf_printf(b, "%d", f->kernels_baseline); else fa_buf_puts(b, "null");
    fa_buf_puts(b, ",\"fused\":");
    if (f->kernels_fused >= 0) fa_buf_printf(b, "%d", f->kernels_fused); else fa_buf_puts(b, "null");
    fa_buf_printf(b, ",\"fused_reorders\":%d,\"fused_winograd\":%d},\"predicted_saving_ns\":", f->reorders_fused,
                  f->winograd_fused);
    fa_json_num(b, f->predicted_saving_ns, 9);
    fa_buf_puts(b, ",\"measured_saving_ns\":");
    fa_json_num(b, f->measured_saving_ns, 9);
    fa_buf_printf(b, ",\"clusters_accepted\":%d}", f->n_accepted);
}

/* One run as a JSON object (also used by `show`), with its figures when f is given. Times: unix
 * epoch ns; latency: ns. */
void fa_cli_run_json(fa_buf *b, const fa_run_info *r, const fa_run_figures *f);
void fa_cli_run_json(fa_buf *b, const fa_run_info *r, const fa_run_figures *f)
{
    fa_buf_printf_term(b, "{\"id\":%" PRId64 ",\"kind\":", r->id);
    fa_json_str(b, r->kind);
    fa_buf_puts(b, ",\"status\":");
    fa_json_str(b, r->status);
    fa_buf_puts(b, ",\"error\":");
    fa_json_str(b, r->error);
    fa_buf_puts(b, ",\"model_path\":");
    fa_json_str(b, r->model_path);
    fa_buf_puts(b, ",\"model_sha256\":");
    fa_json_str(b, r->model_sha256);
    fa_buf_puts(b, ",\"target\":");
    fa_json_str(b, r->target);
    fa_buf_puts(b, ",\"device_name\":");
    fa_json_str(b, r->device_name);
    fa_buf_puts(b, ",\"tag\":");
    fa_json_str(b, r->tag);
    fa_buf_puts(b, ",\"dim_defaults\":"); /* symbolic input dims bound to their default */
    fa_json_str(b, r->dim_defaults);
    fa_buf_puts(b, ",\"command_line\":");
    fa_json_str(b, r->command_line);
    fa_buf_puts(b, ",\"trace_source\":");
    fa_json_str(b, r->trace_source);
    fa_buf_puts(b, ",\"source_sha256\":");
    fa_json_str(b, r->source_sha256);
    fa_buf_printf_term(b, ",\"threads\":%d,\"iters\":%d,\"warmup\":%d", r->threads, r->iters, r->warmup);
    fa_buf_printf_term(b, ",\"started_at_ns\":%" PRId64 ",\"ended_at_ns\":", r->started_at_ns);
    if (r->ended_at_ns) fa_buf_printf_term(b, "%" PRId64, r->ended_at_ns);
    else fa_buf_puts(b, "null");
    fa_buf_printf_term(b, ",\"n_kernels\":%" PRId64 ",\"iter_median_ns\":", r->n_kernels);
    if (r->iter_median_ns >= 0) fa_buf_printf_term(b, "%" PRId64, r->iter_median_ns);
    else fa_buf_puts(b, "null");
    fa_buf_printf_term(b, ",\"peak_activation_bytes\":%" PRIu64 ",\"pid\":%" PRId64, r->peak_activation_bytes, r->pid);
    fa_buf_puts(b, ",\"host\":");
    fa_json_str(b, r->host);
    fa_buf_puts(b, ",\"e2e_verdict\":"); /* the newest plan's; null when not applied */
    fa_json_str(b, fa_e2e_verdict_name(r->e2e_verdict));
    if (f) {
        fa_buf_puts(b, ",\"figures\":");
        figures_json(b, f);
    }
    fa_buf_puts(b, "}");
}

/* Local time "YYYY-MM-DD HH:MM:SS" of a unix-epoch ns timestamp. */
static const char *fmt_time(int64_t ns, char *buf, size_t n)
{
    time_t sec = (time_t)(ns / 1000000000);
    struct tm tm;
    if (ns <= 0 || !localtime_r(&sec, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, n, "-");
    return buf;
}

/* Parse the options shared by the read verbs; returns -1 to continue, else an exit code. */
typedef struct runs_filter {
    const char *model, *device, *tag; /* NULL: any */
} runs_filter;

static bool runs_match(const runs_filter *f, const fa_run_info *r)
{
    if (f->model && !(r->model_path && strstr(r->model_path, f->model))) return false;
    if (f->device && !((r->device_name && strstr(r->device_name, f->device)) || (r->host && strstr(r->host, f->device))))
        return false;
    if (f->tag && !(r->tag && !strcmp(r->tag, f->tag))) return false;
    return true;
}

int fa_cmd_runs(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = fa_cli_default_db();
    bool json = false;
    runs_filter filter = {0};
    const fa_cli_opt opts[] = {
        FA_CLI_OPT_DB(&db),
        FA_CLI_STRING("--model", "M", &filter.model, "only runs whose model path contains M"),
        FA_CLI_STRING("--device", "D", &filter.device, "only runs whose device name or host contains D"),
        FA_CLI_STRING("--tag", "T", &filter.tag, "only runs tagged T"),
        FA_CLI_OPT_JSON(&json),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = "runs", .synopsis = "[options]", .about = k_about, .opts = opts};
    fa_cli_args args;
    int rc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (rc >= 0) return rc;
    fa_store *st = NULL;
    fa_status s = fa_store_open_ex(ctx, db, FA_STORE_NO_CREATE, &st);
    if (s) return fa_cli_fail(ctx, s);
    fa_arena *ar = fa_arena_create(0);
    fa_run_info *runs = NULL;
    size_t n = 0;
    s = ar ? fa_store_list_runs(ctx, st, ar, &runs, &n) : fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    if (s) {
        fa_arena_free(ar);
        fa_store_close(st);
        return fa_cli_fail(ctx, s);
    }
    size_t kept = 0, n_all = n;
    for (size_t i = 0; i < n; i++)
        if (runs_match(&filter, &runs[i])) runs[kept++] = runs[i];
    n = kept;
    db = fa_store_path(st); /* a server URI without its password */
    fa_buf b;
    fa_buf_init(&b);
    if (json) {
        fa_buf_puts(&b, "{\"db\":");
        fa_json_str(&b, db);
        fa_buf_puts(&b, ",\"runs\":[");
        for (size_t i = 0; i < n && !s; i++) {
            fa_run_figures f;
            s = fa_store_get_run_figures(ctx, st, runs[i].id, &f);
            if (s) break;
            if (i) fa_buf_puts(&b, ",");
            fa_cli_run_json(&b, &runs[i], &f);
        }
        fa_buf_puts(&b, "]}\n");
    } else if (n == 0) {
        if (n_all) fa_buf_printf_term(&b, "none of the %zu runs in %s match the filters\n", n_all, db);
        else fa_buf_printf_term(&b, "no runs in %s\n", db);
    } else {
        static const fa_table_col cols[] = {{"ID", 5, 0, true},    {"KIND", 6, 0, false},  {"STATUS", 7, 0, false},
                                            {"STARTED", 19, 0, false}, {"TARGET", 6, 0, false}, {"ITERS", 5, 0, true},
                                            {"LATENCY", 12, 0, true}, {"OF", 5, 0, false}, {"MODEL / DEVICE", 0, 0, false}};
        fa_table *t = fa_table_create(cols, 9);
        fa_buf last;
        fa_buf_init(&last);
        for (size_t i = 0; i < n && !s; i++) {
            const fa_run_info *r = &runs[i];
            char id[24], when[32], iters[16], lat[32];
            snprintf(id, sizeof id, "%" PRId64, r->id);
            snprintf(iters, sizeof iters, "%d", r->iters);
            /* the figure every surface shows: a model run's benchmark median (its fused twin's: the
             * fused model's), else the traced iteration median; OF says which */
            fa_run_figures f;
            s = fa_store_get_run_figures(ctx, st, r->id, &f);
            if (s) break;
            const char *what;
            double v = fa_run_figures_latency(&f, f.twin_of >= 0, &what);
            if (what) snprintf(lat, sizeof lat, "%.3f ms", v / 1e6);
            else snprintf(lat, sizeof lat, "-");
            const char *of = !what ? "" : !strcmp(what, "benchmark median") ? "bench" : "trace";
            fa_buf_reset(&last);
            fa_buf_puts(&last, r->model_path ? r->model_path : "-");
            if (r->device_name) fa_buf_printf_term(&last, " on %s", r->device_name);
            if (r->host && fa_store_path_is_pg(db)) fa_buf_printf_term(&last, " @%s", r->host); /* a shared store: which machine */
            if (r->tag) fa_buf_printf_term(&last, " [tag %s]", r->tag);
            if (r->e2e_verdict == FA_E2E_LOSS) fa_buf_puts(&last, " [LOSS end to end: deploy the baseline]");
            else if (r->e2e_verdict == FA_E2E_MISMATCH)
                fa_buf_puts(&last, " [MISMATCH end to end: the fused outputs differ, not deployable]");
            else if (r->e2e_verdict != FA_E2E_NOT_APPLIED) fa_buf_printf_term(&last, " [e2e %s]", fa_e2e_verdict_name(r->e2e_verdict));
            const char *cells[] = {id, r->kind, r->status, fmt_time(r->started_at_ns, when, sizeof when), r->target,
                                   iters, lat, of, last.data ? last.data : "-"};
            fa_table_add_row(t, cells);
            if (r->error) {
                fa_buf_reset(&last);
                fa_buf_printf_term(&last, "%5s  error: %s", "", r->error);
                fa_table_add_line(t, last.data);
            }
        }
        if (last.oom) b.oom = true;
        fa_buf_free(&last);
        fa_table_render(t, &b);
        fa_table_free(t);
    }
    if (!s && b.oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory formatting %zu runs", n);
    else if (!s) fputs(b.data ? b.data : "", stdout);
    fa_buf_free(&b);
    fa_arena_free(ar);
    fa_store_close(st);
    return s ? fa_cli_fail(ctx, s) : 0;
}
