/* cli/cmd_run — `fuse-advise run MODEL`: load, execute the unfused baseline with the collector,
 * store the run, and print the per-op summary. Later stages (analyze, advise, apply, report)
 * run when built (see docs/cli.md). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "advisor/advisor.h"
#include "analyzer/analyzer.h"
#include "applier/applier.h"
#include "reports/reports.h"
#include "collector/import/import.h"
#include "cli.h"
#include "collector/collector.h"
#include "roofline/roofline.h"
#include "runtime/runtime.h"
#include "store/store.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>

static const char *k_about =
    "  MODEL is an .onnx file or zoo:NAME: baseline, trace, analysis, plan, fused kernels generated,\n"
    "  verified and benchmarked, outputs and reports. TRACE is a Kineto JSON[.gz] or Nsight Systems\n"
    "  SQLite file: import + op-level advice (as `fuse-advise import`).\n";

/* Progress on stderr (docs/cli.md "Progress"): on a terminal one bar redrawn in place per step;
 * elsewhere (a CI log, --progress into a file) plain lines: a step's start, its quarters and its
 * end, so a log shows where a run is without a line per iteration. */
typedef struct progress {
    int mode;                 /* 0 off, 1 terminal bar, 2 lines */
    char step[32];            /* the step of the last call */
    int quarter;              /* lines: the last quarter printed of that step */
} progress;

static progress progress_for(const fa_cli_output_opts *oo)
{
    progress p = {0};
    int want = oo ? oo->progress : -1;
    const char *ci = getenv("CI");
    bool tty = fa_cli_is_tty();
    if (want < 0) want = tty || (ci && !strcmp(ci, "true"));
    p.mode = !want ? 0 : tty ? 1 : 2;
    return p;
}

static void on_progress(void *user, const char *step, int done, int total)
{
    progress *p = user;
    if (!p || !p->mode) return;
    bool fresh = strncmp(p->step, step, sizeof p->step - 1) != 0;
    if (fresh) {
        snprintf(p->step, sizeof p->step, "%s", step);
        p->quarter = 0;
    }
    if (p->mode == 2) {
        int q = total > 0 ? (int)((int64_t)done * 4 / total) : 4;
        if (fresh && done < total) fa_cli_eprintf("fuse-advise: %s ...\n", step);
        if (total > 1 && q > p->quarter && q < 4) fa_cli_eprintf("fuse-advise: %s %d/%d\n", step, done, total);
        if (done >= total && p->quarter < 4)
            fa_cli_eprintf(total > 1 ? "fuse-advise: %s done (%d/%d)\n" : "fuse-advise: %s done\n", step, done, total);
        if (q > p->quarter) p->quarter = q;
        return;
    }
    int width = 30, fill = total ? done * width / total : width;
    fa_cli_eprintf("\r%-8s [", step);
    for (int i = 0; i < width; i++) fputc(i < fill ? '#' : ' ', stderr);
    fa_cli_eprintf("] %d/%d", done, total);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

static fa_status print_baseline(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *model, const fa_run_info *info,
                                const char *devname, long warmup, const fa_graph *g, const char *db)
{
    fa_arena *ar = fa_arena_create(1 << 16);
    fa_op_row *rows = NULL;
    size_t nrows = 0;
    int nit = 0;
    fa_run_info ri;
    fa_status s = fa_store_get_run(ctx, st, run_id, ar, &ri);
    if (!s) s = fa_store_op_table(ctx, st, run_id, ar, &rows, &nrows, &nit);
    if (!s) {
        fa_cli_printf("run %" PRId64 ": %s on %s (%s, %d threads), %d timed iterations after %ld warm-up\n", run_id, model,
                      info->target, devname, info->threads, nit, warmup);
        fa_cli_printf("baseline latency (median per iteration): %.3f ms; %d kernels per iteration; peak activations %.1f MiB\n",
                      ri.iter_median_ns / 1e6, g->n_topo, info->peak_activation_bytes / 1048576.0);
        size_t show = nrows < 25 ? nrows : 25;
        int wn = 4, wo = 2; /* widths from the content: node names are never cut */
        for (size_t i = 0; i < show; i++) {
            int ln = rows[i].node_name ? (int)strlen(rows[i].node_name) : 0, lo = rows[i].op_type ? (int)strlen(rows[i].op_type) : 0;
            if (ln > wn) wn = ln;
            if (lo > wo) wo = lo;
        }
        fa_cli_printf("\n%-*s %-*s %12s %7s %8s\n", wn, "node", wo, "op", "median us", "share", "kernels");
        for (size_t i = 0; i < show; i++)
            fa_cli_printf("%-*s %-*s %12.1f %6.1f%% %8" PRId64 "\n", wn, rows[i].node_name ? rows[i].node_name : "", wo,
                          rows[i].op_type ? rows[i].op_type : "", rows[i].median_ns / 1e3, 100.0 * rows[i].share,
                          rows[i].kernels);
        if (nrows > show) fa_cli_printf("... %zu more (fuse-advise show %" PRId64 ")\n", nrows - show, run_id);
        fa_cli_printf("\nstored in %s as run %" PRId64 "\n", db, run_id);
    }
    fa_arena_free(ar);
    return s;
}

/* fuse-advise-out/<model or trace file name without its format's suffix (.onnx; a trace's .json,
 * .json.gz, .pt.trace.json(.gz), .sqlite, .db)>, the name sanitised (fa_sanitize_file_name):
 * "...onnx" or "a\nb.onnx" can name nothing but a folder inside fuse-advise-out/. */
void fa_cli_default_out_dir(const char *model, char *buf, size_t cap)
{
    const char *base = strncmp(model, "zoo:", 4) == 0 ? model + 4 : model;
    const char *slash = strrchr(base, '/');
    if (slash) base = slash + 1;
    char name[256], safe[128];
    snprintf(name, sizeof name, "%s", base);
    size_t n = strlen(name);
    static const char *const suffixes[] = {".onnx", ".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json",
                                           ".sqlite", ".db"}; /* longest of a family first */
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && !strcmp(name + n - k, suffixes[i])) {
            name[n - k] = 0;
            break;
        }
    }
    fa_sanitize_file_name(name, safe, sizeof safe);
    snprintf(buf, cap, "fuse-advise-out/%s", safe[0] ? safe : "model");
}

/* True when this pipeline (started at `since`, seconds) wrote a generated kernel source into
 * out_dir/kernels/ (a folder left by an earlier run does not count). */
static bool wrote_kernel_sources(const char *out_dir, time_t since)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/kernels", out_dir);
    DIR *d = opendir(dir);
    if (!d) return false;
    bool any = false;
    struct dirent *de;
    while (!any && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[4600];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        any = stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_mtime >= since;
    }
    closedir(d);
    return any;
}

fa_status fa_cli_apply_pipeline(fa_ctx *ctx, fa_store *st, const fa_graph *g, int64_t run_id, const char *model,
                                const fa_run_info *info, const char *devname, const char *out_dir,
                                const fa_pipeline_options *opt, const fa_cli_output_opts *oo)
{
    progress progv = progress_for(oo), *prog = &progv;
    char outbuf[4096];
    time_t started = time(NULL);
    if (!out_dir) {
        fa_cli_default_out_dir(model, outbuf, sizeof outbuf);
        out_dir = outbuf;
    }
    /* every output goes into a staging folder swapped in whole at the end (fa_outdir) */
    const char *final_dir = out_dir;
    fa_outdir *od = NULL;
    fa_status s0 = fa_cli_check_not_db(ctx, final_dir, true, fa_store_path(st));
    if (!s0) s0 = fa_cli_check_input_outside(ctx, final_dir, model);
    if (!s0) s0 = fa_outdir_begin(ctx, final_dir, fa_cli_output_names, false, &od);
    if (s0) return s0;
    out_dir = fa_outdir_path(od);
    fa_pipeline_options po = *opt;
    po.apply.out_dir = out_dir;
    po.apply.progress = on_progress;
    po.apply.progress_user = prog;
    const char *inj = getenv("FA_TEST_INJECT_WRONG_CLUSTER");
    if (inj && *inj) po.apply.inject_wrong_cluster = atoi(inj);
    fa_pipeline_result *pr = NULL;
    fa_status s = fa_pipeline_run(ctx, st, g, run_id, &po, &pr);
    fa_target target = po.apply.target;
    const fa_apply_result *r = pr ? pr->apply : NULL;
    bool any_fold = pr && pr->folded_model;
    /* the run's final status is stored before the reports are written, so report.html and
     * summary.json carry it: 'ok', or 'failed' with the end-to-end mismatch (the outputs are still
     * written: the report shows the MISMATCH) */
    fa_status run_s = s;
    if (!s && r && r->e2e_mismatch)
        run_s = fa_ctx_error(ctx, FA_ERR_RUNTIME, "end-to-end verification failed: the fused model's outputs differ from the "
                             "unfused model's by a max relative error of %.3g (limit %.3g%s); every cluster passed its own check, "
                             "so composing them (layouts, executor) is at fault: please report it",
                             r->e2e_max_rel_error, r->e2e_tolerance, r->e2e_rounding_op ? ", the limit of a model that rounds to steps" : "");
    if (!s) {
        fa_ctx *c2 = fa_ctx_create();
        s = fa_store_run_finish(c2 ? c2 : ctx, st, run_id, run_s == FA_OK, run_s ? fa_ctx_errmsg(ctx) : NULL);
        if (s && c2) fa_ctx_error(ctx, s, "%s", fa_ctx_errmsg(c2));
        fa_ctx_free(c2);
    }
    char run_err[1024] = "";
    if (run_s) snprintf(run_err, sizeof run_err, "%s", fa_ctx_errmsg(ctx));
    if (!s) on_progress(prog, "reports", 0, 1);
    if (!s) s = fa_reports_write(ctx, st, run_id, out_dir);
    if (!s) on_progress(prog, "reports", 1, 1);
    if (!s) s = fa_outdir_commit(ctx, od);
    else fa_outdir_abort(od);
    out_dir = final_dir;
    if (!s) {
        fa_cli_result res = {model, fa_target_name(target), devname, info->threads, out_dir, oo && oo->verbose, oo && oo->json,
                             wrote_kernel_sources(out_dir, started), any_fold, r->backed_off, r->layouts_dropped,
                             r->e2e_tolerance, r->e2e_rounding_op};
        s = fa_cli_print_result(ctx, st, run_id, &res);
    }
    /* the outputs are written and stored (the report shows the MISMATCH); the run itself failed */
    if (!s && run_s) s = fa_ctx_error(ctx, run_s, "%s", run_err);
    fa_pipeline_result_free(pr);
    return s;
}

int fa_cmd_run(fa_ctx *ctx, int argc, char **argv)
{
    fa_cli_model_opts mo = {0};
    const char *model = NULL, *db = fa_cli_default_db(), *tag = NULL, *out_dir = NULL;
    int threads = 0, seed = 1;
    int64_t max_mem = 0;
    bool no_apply = false;
    fa_target target = FA_TARGET_AUTO;
    /* every default is the library's: the pipeline's (the advisor's caps, the applier's
     * iterations, tolerance and bounds), the collector's span */
    fa_pipeline_options po;
    fa_pipeline_options_default(&po);
    po.apply.max_clusters = FA_APPLY_MAX_CLUSTERS_DEFAULT;
    po.apply.budget_s = FA_APPLY_BUDGET_S_DEFAULT;
    double span_s = FA_TRACE_SPAN_S_DEFAULT;
    fa_cli_output_opts oo = {false, false, -1};
    bool prog_on = false, prog_off = false;
    const fa_cli_opt span_row = FA_CLI_DOUBLE("--trace-span", "S", &span_s, 0, FA_TRACE_SPAN_MAX_S, 0,
                                              "on cpu the baseline trace keeps iterating past --iters until its timed "
                                              "iterations span S seconds ($FA_TRACE_SPAN_S when set; 0: exactly --iters; "
                                              "at most 200 iterations unless --iters is more), so its kernel medians are "
                                              "not one moment of a shared machine");
    const char *span_env = getenv("FA_TRACE_SPAN_S");
    if (span_env && *span_env) {
        fa_cli_opt env_row = span_row;
        env_row.name = "FA_TRACE_SPAN_S";
        if (fa_cli_opt_set(ctx, "run", &env_row, span_env) < 0) return 2;
    }
    const fa_cli_opt opts[] = {
        FA_CLI_FLAG("--no-apply", &no_apply, "stop after the baseline: execute, collect, store, summarize"),
        span_row,
        FA_CLI_OPT_THREADS(&threads),
        FA_CLI_CALLBACK("--target", "auto|cpu|cuda", fa_cli_opt_target, &target, 0, 0, 0,
                        "where the model runs (auto: a GPU when one is present)"),
        FA_CLI_OPT_DB(&db),
        FA_CLI_STRING("--tag", "TAG", &tag, "name the run for `gate` and `runs`"),
        FA_CLI_INT("--seed", "S", &seed, 0, 0x7fffffff, 0, "seed of the random inputs"),
        FA_CLI_I64("--max-memory", "BYTES", &max_mem, 1, INT64_MAX, FA_CLI_NO_DEFAULT,
                   "refuse a model whose activations need more (default: the larger of 4 GiB and 64x its weights)"),
        FA_CLI_STRING("--out", "DIR", &out_dir,
                      "outputs (default ./fuse-advise-out/<model>): report.html, graph.svg, trace.json, plan.json, "
                      "summary.json, kernels.csv; kernels/ when kernels were generated, model.folded.onnx when a "
                      "BN fold was kept"),
        FA_CLI_OPTS_ITERATIONS(&po.apply.iters, &po.apply.warmup),
        FA_CLI_OPTS_MODEL(&mo),
        FA_CLI_OPTS_CLUSTER_CAPS(&po.max_ops, &po.max_inputs),
        FA_CLI_OPTS_APPLY(&po.apply.tolerance, &po.apply.max_clusters, &po.apply.budget_s),
        FA_CLI_OPT_LAYOUT(&po.layout),
        FA_CLI_OPTS_OUTPUT(&oo.verbose, &oo.json, &prog_on, &prog_off),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = "run", .synopsis = "MODEL [options]\nTRACE [--db PATH|URI] [--out DIR]",
                              .about = k_about, .opts = opts, .min_args = 1, .max_args = 1, .args_name = "MODEL"};
    fa_cli_args args;
    int prc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (prc >= 0) return prc;
    model = args.arg[0];
    oo.progress = prog_off ? 0 : prog_on ? 1 : -1;
    int iters = po.apply.iters, warmup = po.apply.warmup;

    /* A trace instead of a model: import -> trace analysis -> advice -> reports. */
    if (strncmp(model, "zoo:", 4) != 0) {
        fa_import_kind k = fa_import_detect(model);
        struct stat msb;
        /* a pipe (/dev/stdin, <(zcat trace.json.gz)) can only be read once: it is taken as a trace
         * (the import judges it by its first bytes and refuses anything else) */
        bool piped = stat(model, &msb) == 0 && !S_ISREG(msb.st_mode) && !S_ISDIR(msb.st_mode);
        if (piped || k == FA_IMPORT_KINETO_JSON || k == FA_IMPORT_KINETO_JSON_GZ || k == FA_IMPORT_NSYS_SQLITE) {
            char ob[4096];
            if (!out_dir) {
                fa_cli_default_out_dir(model, ob, sizeof ob);
                out_dir = ob;
            }
            if (oo.json || oo.verbose) /* the trace's advice is its report's and advise's */
                return fa_cli_usage("run", "--verbose and --json are for a model run; for a trace: `advise latest --json`");
            fa_status so = fa_cli_check_out_dir(ctx, out_dir, db, model);
            if (so) return fa_cli_fail(ctx, so);
            return fa_cli_import_and_advise(ctx, model, db, false, out_dir);
        }
    }

    /* the output folder is checked before anything runs: a file there, a foreign folder, or
     * the database inside it is refused now, not after the baseline and the apply stage */
    if (!no_apply) {
        char ob[4096];
        if (!out_dir) fa_cli_default_out_dir(model, ob, sizeof ob);
        fa_status so = fa_cli_check_out_dir(ctx, out_dir ? out_dir : ob, db, model);
        if (so) return fa_cli_fail(ctx, so);
    }
    progress prog = progress_for(&oo);
    fa_load_options lo = fa_cli_load_options(&mo);
    lo.progress = on_progress; /* "load" per initializer, "prepare" per node (a terminal only) */
    lo.progress_user = &prog;
    fa_graph *g = NULL;
    fa_exec *e = NULL;
    fa_trace *trace = NULL;
    fa_store *st = NULL;
    int64_t run_id = -1;
    char *cmdline = fa_cli_command_line("fuse-advise", argc, argv), *dim_defaults = NULL;
    char sha[65] = "", devname[256];
    /* the model's digest (the run's identity in the store) is taken on a thread of its own
     * while the model loads and its executor is built, held while the ceilings are measured,
     * and joined before the first timed run */
    bool from_file = strncmp(model, "zoo:", 4) != 0;
    fa_sha256_job *sha_job = from_file ? fa_sha256_file_start(model) : NULL;
    fa_status s = fa_graph_load(ctx, model, &lo, &g);
    if (!s) fa_cli_note_dim_defaults(g);
    if (!s) fa_cli_memory_policy(g, max_mem);
    if (!s && from_file && !sha_job) s = fa_sha256_file(ctx, model, sha); /* no thread */
    if (s) {
        if (sha_job) fa_sha256_file_finish(NULL, sha_job, sha);
        free(cmdline);
        fa_graph_free(g);
        return fa_cli_fail(ctx, s);
    }
    /* a --layout the target cannot run convolutions on is refused before anything runs (the
     * layout choice refuses it too, fa_layout_choose) */
    const fa_target_iface *lti = NULL;
    if (!no_apply && po.layout > FA_LAYOUT_PLAIN && !fa_target_resolve(ctx, target, &lti)) {
        fa_plan_layouts pl;
        fa_target_plan_layouts(fa_target_id(lti), &pl);
        bool ok = false;
        for (int i = 0; i < pl.n; i++) ok |= pl.cand[i] == (fa_layout)po.layout;
        if (!ok) {
            if (sha_job) fa_sha256_file_finish(NULL, sha_job, sha);
            free(cmdline);
            fa_graph_free(g);
            return fa_cli_usage("run", "--layout %s: %s cannot run convolutions on it on this machine",
                                fa_layout_name((fa_layout)po.layout), fa_target_name(fa_target_id(lti)));
        }
    }
    fa_ctx_clear(ctx);
    /* Open the database only after the model loaded: bad input never creates or touches it. */
    s = fa_store_open(ctx, db, &st);
    if (s) goto out;
    const fa_target_iface *ti = NULL;
    s = fa_target_resolve(ctx, target, &ti);
    if (s) goto out;
    fa_target_device dev;
    fa_ctx *dctx = fa_ctx_create(); /* a device that cannot open fails the executor below, named */
    if (fa_target_device_open(dctx, ti, &dev)) snprintf(dev.name, sizeof dev.name, "%s", fa_target_name(fa_target_id(ti)));
    fa_ctx_free(dctx);
    snprintf(devname, sizeof devname, "%s", dev.name);
    fa_exec_options eo = fa_exec_options_measured(fa_target_id(ti), (int)threads); /* as the apply stage's */
    eo.max_memory = (uint64_t)max_mem;
    fa_run_info info = {0};
    info.kind = "run";
    info.model_path = model;
    info.model_sha256 = sha[0] ? sha : NULL;
    info.target = fa_target_name(fa_target_id(ti));
    info.device_name = devname;
    info.iters = (int)iters;
    info.warmup = warmup >= 0 ? (int)warmup : 0; /* by time (FA_WARMUP_AUTO): what ran, once it has */
    info.command_line = cmdline;
    info.tag = tag;
    dim_defaults = fa_cli_dim_defaults_text(g);
    info.dim_defaults = dim_defaults;
    s = fa_store_run_begin(ctx, st, &info, &run_id);
    if (s) goto out;
    if (!no_apply) {
        /* the device's ceilings (measured once per device and thread count, then read from the
         * database) are taken before any executor exists: their STREAM triad's 3 x 64 MiB then
         * never adds to the weights' reordered copies and the executors at the run's peak (the
         * apply stage reads them back). A failure is the apply stage's to report, as before. */
        fa_ctx *cctx = fa_ctx_create();
        fa_ceilings ceil;
        fa_sha256_file_hold(sha_job, true); /* nothing of ours beside the measured bandwidth */
        if (cctx) fa_roofline_ceilings(cctx, st, fa_target_id(ti), (int)threads, false, &ceil);
        fa_sha256_file_hold(sha_job, false);
        fa_ctx_free(cctx);
    }
    s = fa_exec_create(ctx, g, &eo, &e);
    if (!s) s = fa_exec_fill_inputs(ctx, e, (uint64_t)seed);
    if (sha_job) { /* before the first timed run: it reads the whole file */
        fa_status hs = fa_sha256_file_finish(s ? NULL : ctx, sha_job, sha);
        sha_job = NULL;
        if (!s) s = hs;
        if (!s) info.model_sha256 = sha; /* stored by the update below */
    }
    if (!s) s = fa_collect_span(ctx, e, g, (int)warmup, (int)iters, span_s, on_progress, &prog, &trace);
    /* an error of the model's own execution (a node's, the memory its activations need) names
     * the model file first, as exec's and inspect's do */
    if (s && strncmp(fa_ctx_errmsg(ctx), model, strlen(model)) != 0) fa_ctx_wrap(ctx, s, "%s: ", model);
    if (!s) {
        info.iters = trace->n_iters; /* what the trace holds: --iters or more (--trace-span) */
        info.warmup = trace->n_warmup; /* what ran: --warmup W, or by time (FA_WARMUP_AUTO) */
        warmup = trace->n_warmup;
        info.threads = fa_exec_threads(e);
        info.peak_activation_bytes = fa_exec_peak_bytes(e);
        info.target = fa_target_name(fa_exec_target(e));
        trace->device_name = fa_trace_intern(trace, devname);
        s = fa_store_begin(ctx, st);
        if (!s) s = fa_store_run_update(ctx, st, run_id, &info);
        if (!s) s = fa_store_put_graph(ctx, st, run_id, g);
        if (!s) s = fa_store_put_trace(ctx, st, run_id, trace);
        /* 'ok' only once every stage this run starts has stored its results: here when the
         * baseline is all it does, else after the apply stage and the outputs (below) */
        if (!s && no_apply) s = fa_store_run_finish(ctx, st, run_id, true, NULL);
        if (!s) s = fa_store_commit(ctx, st);
        if (s) fa_store_rollback(st);
    }
    if (s) goto out;

    if (no_apply) {
        if (oo.json) {
            fa_buf jb;
            fa_buf_init(&jb);
            s = fa_reports_summary_json(ctx, st, run_id, &jb);
            if (!s && jb.data) fwrite(jb.data, 1, jb.len, stdout); /* JSON: every string already escaped */
            fa_buf_free(&jb);
        } else s = print_baseline(ctx, st, run_id, model, &info, devname, warmup, g, fa_store_path(st));
        goto out;
    }
    po.apply.target = fa_exec_target(e);
    /* the baseline's executor has done its work: its activations and kernels go before the apply
     * stage builds its own (the weights' reordered copies stay with the weights, shared) */
    fa_exec_free(e);
    e = NULL;
    po.apply.threads = info.threads;
    s = fa_cli_apply_pipeline(ctx, st, g, run_id, model, &info, devname, out_dir, &po, &oo); /* finishes the run */
out:;
    if (sha_job) fa_sha256_file_finish(NULL, sha_job, sha);
    int rc = 0;
    if (s) {
        rc = fa_cli_fail(ctx, s);
        if (st && run_id >= 0) {
            fa_ctx *c2 = fa_ctx_create();
            fa_store_run_finish(c2, st, run_id, false, fa_ctx_errmsg(ctx));
            fa_ctx_free(c2);
        }
    }
    fa_trace_free(trace);
    fa_exec_free(e);
    fa_store_close(st);
    fa_graph_free(g);
    free(cmdline);
    free(dim_defaults);
    return rc;
}
