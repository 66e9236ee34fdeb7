/* cli/main — `fuse-advise VERB ...` dispatch. Verbs live in cmd_<verb>.c; a verb whose file
 * is not built yet is a weak reference left NULL and is not offered. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define FA_VERB(v) extern int fa_cmd_##v(fa_ctx *, int, char **) __attribute__((weak));
FA_VERB(run) FA_VERB(inspect) FA_VERB(exec) FA_VERB(import) FA_VERB(analyze) FA_VERB(advise)
FA_VERB(apply) FA_VERB(report) FA_VERB(gate) FA_VERB(devices) FA_VERB(runs) FA_VERB(show)
FA_VERB(zoo) FA_VERB(trace) FA_VERB(export_runs) FA_VERB(import_runs)

typedef struct verb {
    const char *name;
    fa_cmd_fn fn;
    const char *summary;
} verb;

static int usage(FILE *f, const verb *verbs, int n)
{
    fprintf(f, "fuse-advise %s — profiling-driven operator-fusion advisor\n\n"
               "usage: fuse-advise VERB [options]\n\nverbs:\n", FA_VERSION_STRING);
    for (int i = 0; i < n; i++)
        if (verbs[i].fn) fprintf(f, "  %-9s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f, "\nMODEL is an .onnx file or zoo:NAME (see `fuse-advise zoo`).\n"
               "`fuse-advise VERB --help` describes a verb.\n");
    return f == stderr ? 2 : 0;
}

/* The verbs that execute models run OpenMP kernels (ours, the generated ones, oneDNN's) on
 * libgomp's one pool. Between two parallel regions an idle thread spins GOMP_SPINCOUNT times, then
 * sleeps on a futex; libgomp reads the count once, when it is loaded, before main. Its default
 * (300k spins, ~3 ms) keeps spinning threads on a loaded machine's cores; passive waiting (no
 * spin) pays a futex wake-up per region on a quiet one. A bounded count, FA_GOMP_SPINCOUNT spins
 * (libgomp's own rough scale: 100k spins a millisecond, so ~10 us; ~26 us on the AMD EPYC the
 * figures below come from, whose PAUSE takes ~26 ns), covers the gap between two back-to-back
 * kernels and sleeps through anything longer. Where a sleep let both threads end up on one CPU,
 * the timed runs move them apart first (fa_host_spread_threads, docs/runtime.md). Measured with bench/bench_threads.sh
 * (2 threads, unfused baselines, medians of 2-3 processes; docs/runtime.md "Threads and waiting"):
 * quiet, within 0.5-4% of active waiting on the four zoo models where passive was 11-70% slower
 * (mobilenetv2 8.3 against 14.1 ms); with one busy process per core, slowed 2.3-2.9x on
 * resnet50/mobilenetv2 against ONNX Runtime's own 3.1-3.9x, where libgomp's default count was
 * 4.8x. So when the user has set neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT, these verbs
 * re-execute themselves with GOMP_SPINCOUNT set (an explicit setting is kept). */
#define FA_GOMP_SPINCOUNT "1000"
static void prefer_bounded_omp_spin(const char *verb, char **argv)
{
    if (strcmp(verb, "run") && strcmp(verb, "exec") && strcmp(verb, "apply")) return;
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("GOMP_SPINCOUNT", FA_GOMP_SPINCOUNT, 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv("GOMP_SPINCOUNT"); /* exec failed: carry on under libgomp's default */
}

int main(int argc, char **argv)
{
    const verb verbs[] = {
        {"run", fa_cmd_run, "run MODEL: baseline, trace, analyze, advise, apply, report"},
        {"inspect", fa_cmd_inspect, "inspect MODEL: per-node ops, shapes, FLOPs and bytes"},
        {"exec", fa_cmd_exec, "exec MODEL --inputs DIR --outputs DIR: run on .pb inputs"},
        {"import", fa_cmd_import, "import TRACE: Kineto JSON or Nsight Systems SQLite into the run database"},
        {"analyze", fa_cmd_analyze, "analyze RUN: roofline placement, memory-bound chains, launch overhead"},
        {"advise", fa_cmd_advise, "advise RUN: fusion clusters, cost model, why-not"},
        {"apply", fa_cmd_apply, "apply RUN: generate, verify and benchmark fused kernels"},
        {"report", fa_cmd_report, "report RUN: HTML, Graphviz, JSON and Perfetto reports"},
        {"gate", fa_cmd_gate, "gate: compare two runs, fail on regressions (exit 3)"},
        {"devices", fa_cmd_devices, "devices: device ceilings and where each came from"},
        {"runs", fa_cmd_runs, "runs: list runs in the database"},
        {"show", fa_cmd_show, "show RUN: per-op time table"},
        {"export-runs", fa_cmd_export_runs, "export-runs --to DEST: copy runs into another database (file or server)"},
        {"import-runs", fa_cmd_import_runs, "import-runs SRC: copy runs of another database (file or server) into --db"},
        {"zoo", fa_cmd_zoo, "zoo [NAME -o FILE]: list or write built-in models"},
        {"trace", fa_cmd_trace, "trace -- CMD ARGS: run a CUDA program under the CUPTI collector"},
    };
    int nv = (int)(sizeof verbs / sizeof verbs[0]);
    fa_cli_guard_output();
    if (argc < 2) return usage(stderr, verbs, nv);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
        return usage(stdout, verbs, nv);
    prefer_bounded_omp_spin(argv[1], argv);
    if (!strcmp(argv[1], "--version")) {
        fa_cli_printf("fuse-advise %s\n", FA_VERSION_STRING);
        return 0;
    }
    for (int i = 0; i < nv; i++) {
        if (strcmp(argv[1], verbs[i].name) != 0 || !verbs[i].fn) continue;
        fa_ctx *ctx = fa_ctx_create();
        if (!ctx) {
            fa_cli_eprintf("fuse-advise: out of memory\n");
            return 1;
        }
        fa_ctx_set_log(ctx, fa_cli_log_sink, NULL, getenv("FA_VERBOSE") ? FA_LOG_DEBUG : FA_LOG_WARN);
        fa_cli_warn_uri_passwords(argc, argv);
        int rc = verbs[i].fn(ctx, argc - 1, argv + 1);
        fa_ctx_free(ctx);
        return rc;
    }
    const char *names[sizeof verbs / sizeof verbs[0]];
    int nn = 0;
    for (int i = 0; i < nv; i++)
        if (verbs[i].fn) names[nn++] = verbs[i].name;
    const char *near = fa_cli_nearest(argv[1], names, NULL, nn);
    if (near) fa_cli_eprintf("fuse-advise: unknown verb '%s' (did you mean %s?)\n\n", argv[1], near);
    else fa_cli_eprintf("fuse-advise: unknown verb '%s'\n\n", argv[1]);
    return usage(stderr, verbs, nv);
}
