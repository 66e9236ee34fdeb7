/* cli/cmd_trace — `fuse-advise trace [--db PATH] [--tag TAG] [--no-nvtx] -- CMD ARGS`: run any
 * CUDA program with the CUPTI injection tracer, store its activity as a run of kind 'trace' and
 * print a summary. docs/cuda.md. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/cupti/cupti.h"
#include "store/store.h"

static const char *k_about =
    "  Runs CMD with the CUPTI injection tracer (CUDA_INJECTION64_PATH) and NVTX routed to CUPTI\n"
    "  (NVTX_INJECTION64_PATH), stores kernels, copies, API calls, NVTX ranges and CUPTI overhead\n"
    "  as a run of kind 'trace', and prints a summary. CMD's exit status is reported; what was\n"
    "  collected is stored even when CMD fails. FA_CUPTI_INJECTION overrides the tracer library.\n";

typedef struct ktot {
    const char *name;
    uint64_t ns, n;
} ktot;

static int cmp_ktot(const void *a, const void *b)
{
    const ktot *x = a, *y = b;
    return x->ns < y->ns ? 1 : (x->ns > y->ns ? -1 : 0);
}

static void print_summary(const fa_trace *t, const fa_cupti_stats *st, int64_t run_id, const char *db)
{
    uint64_t cnt[FA_ACT_KIND_COUNT] = {0}, dur[FA_ACT_KIND_COUNT] = {0};
    uint64_t t0 = UINT64_MAX, t1 = 0;
    ktot *k = calloc(t->n_acts + 1, sizeof *k);
    size_t nk = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        cnt[a->kind]++;
        uint64_t d = a->end_ns > a->start_ns ? a->end_ns - a->start_ns : 0;
        dur[a->kind] += d;
        if (a->kind == FA_ACT_KERNEL && k) {
            if (a->start_ns < t0) t0 = a->start_ns;
            if (a->end_ns > t1) t1 = a->end_ns;
            size_t j = 0;
            while (j < nk && k[j].name != a->name) j++; /* names are interned: pointer equality */
            if (j == nk) k[nk++] = (ktot){a->name, 0, 0};
            k[j].ns += d;
            k[j].n++;
        }
    }
    fa_cli_printf("trace run %lld stored in %s\n", (long long)run_id, db);
    fa_cli_printf("  records:");
    for (int i = 0; i < FA_ACT_KIND_COUNT; i++)
        if (cnt[i]) fa_cli_printf(" %s %llu", fa_activity_kind_name((fa_activity_kind)i), (unsigned long long)cnt[i]);
    fa_cli_printf("\n");
    if (cnt[FA_ACT_KERNEL])
        fa_cli_printf("  kernels: %.3f ms busy over a %.3f ms span\n", dur[FA_ACT_KERNEL] / 1e6, (t1 - t0) / 1e6);
    if (cnt[FA_ACT_OVERHEAD]) fa_cli_printf("  CUPTI overhead: %.3f ms\n", dur[FA_ACT_OVERHEAD] / 1e6);
    if (st->dropped || st->truncated || st->unknown_kind || st->orphans || st->markers_unpaired)
        fa_cli_printf("  dropped %llu, truncated buffers %llu, unknown kinds %llu, orphans %llu, unpaired NVTX %llu\n",
                      (unsigned long long)st->dropped, (unsigned long long)st->truncated,
                      (unsigned long long)st->unknown_kind, (unsigned long long)st->orphans,
                      (unsigned long long)st->markers_unpaired);
    if (k && nk) {
        qsort(k, nk, sizeof *k, cmp_ktot);
        fa_cli_printf("  top kernels by total time:\n");
        for (size_t i = 0; i < nk && i < 10; i++)
            fa_cli_printf("    %10.3f ms  %6llu x  %.100s\n", k[i].ns / 1e6, (unsigned long long)k[i].n, k[i].name);
    }
    free(k);
}

int fa_cmd_trace(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = fa_cli_default_db(), *tag = NULL;
    bool no_nvtx = false;
    const fa_cli_opt opts[] = {
        FA_CLI_OPT_DB(&db),
        FA_CLI_STRING("--tag", "TAG", &tag, "name the run for `gate` and `runs`"),
        FA_CLI_FLAG("--no-nvtx", &no_nvtx, "leave NVTX alone (no ranges per op)"),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = "trace", .synopsis = "[options] -- CMD ARGS...", .about = k_about, .opts = opts,
                              .command_after_dashdash = true};
    fa_cli_args args;
    int prc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (prc >= 0) return prc;
    int i = args.rest;
    if (i >= argc) return fa_cli_usage("trace", "missing command: fuse-advise trace [--db PATH] -- CMD ARGS");
    char **cmd = argv + i;
    int cmd_argc = argc - i;

    fa_trace *t = NULL;
    fa_cupti_stats total = {0};
    char *notes = NULL;
    int n_files = 0, cmd_status = 0;
    fflush(stdout);
    fflush(stderr);
    fa_status s = fa_cupti_trace_program(ctx, cmd_argc, cmd, no_nvtx, &t, &total, &notes, &n_files, &cmd_status);
    if (s) return fa_cli_fail(ctx, s);
    char *cmdline = fa_cli_command_line(NULL, cmd_argc, cmd);
    fa_store *store = NULL;
    int64_t run_id = -1;
    if (!s) s = fa_store_open(ctx, db, &store);
    if (!s) {
        fa_run_info info = {0};
        info.kind = "trace";
        info.model_path = cmdline;
        info.target = "cuda";
        info.device_name = t->device_name;
        info.command_line = cmdline;
        info.tag = tag;
        s = fa_store_begin(ctx, store);
        if (!s) s = fa_store_run_begin(ctx, store, &info, &run_id);
        if (!s) s = fa_store_put_trace(ctx, store, run_id, t);
        if (!s) s = fa_store_run_finish(ctx, store, run_id, true, NULL);
        if (!s) s = fa_store_commit(ctx, store);
        if (s) fa_store_rollback(store);
    }
    int ret = 0;
    if (s) ret = fa_cli_fail(ctx, s);
    else {
        print_summary(t, &total, run_id, fa_store_path(store));
        if (!n_files)
            fa_cli_printf("  no CUDA activity: the command never initialized CUDA, or no NVIDIA driver is present\n");
        if (notes) fa_cli_printf("  tracer notes:\n    %s\n", notes);
        if (cmd_status != 0) {
            fa_cli_eprintf("fuse-advise: traced command exited with status %d (what it ran is stored)\n", cmd_status);
            ret = 1;
        }
    }
    fa_store_close(store);
    free(notes);
    free(cmdline);
    fa_trace_free(t);
    return ret;
}
