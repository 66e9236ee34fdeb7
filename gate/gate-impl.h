/* gate/gate-impl.h — what the gate's files share (private): a run as the gate sees it, the two
 * sides of a comparison, the checks' entry points. */
#ifndef FA_GATE_IMPL_H
#define FA_GATE_IMPL_H

#include "gate/gate.h"
#include "trace/trace.h"

typedef struct gate_cluster {
    int id;
    const char *kind, *label, *status, *reason;
    int n_members;
    const char **members;     /* node names, cluster order */
    const char *key;          /* label|sorted member names */
    const char *display;      /* 'label' (a, b, c) */
    int registers, spill_bytes; /* -1 unknown */
    double max_rel_error;     /* NAN unknown */
    bool accepted;
    double *fused;            /* cluster-fused samples */
    int n_fused;
} gate_cluster;

typedef struct gate_op {
    const char *name;
    double *v;                /* per timed iteration (n_iters), 0 when it ran nothing */
} gate_op;

typedef struct gate_run {
    fa_store *st;
    const char *path;
    fa_run_info info;
    double *iter_ns;          /* "iteration" range durations */
    int n_iter_ns;
    int n_iters;              /* distinct timed iterations of kernel/range records */
    int *iters;               /* their iter values, ascending */
    int n_ops;
    gate_op *ops;
    int kpi_min, kpi_max, kpi_mode; /* kernel records per timed iteration; kpi_mode -1 none */
    int plan_id;              /* 0: no plan */
    const char *plan_target;
    int n_clusters;
    gate_cluster *cl;
    double *bench_fused;      /* benchmarks 'fused', cluster -1 */
    int n_bench_fused;
    double *bench_baseline;   /* benchmarks 'baseline', cluster -1: the figure `runs` and the
                                 report quote as the unfused latency when it exists */
    int n_bench_baseline;
    int64_t fused_run;        /* -1 none */
    int fkpi_min, fkpi_max, fkpi_mode;
    double *fused_iter_ns;
    int n_fused_iter_ns;
    /* an imported trace (kind 'import'): its stored advice's figures (trace/trace.h), read by
     * gate/traces.c; has_advice false for a model run */
    bool is_trace, has_advice;
    int64_t t_kernels, t_outside, t_kernel_ns, t_steps, t_step_ns;
    int64_t t_launch_per_kernel_ns, t_launch_latency_ns; /* the advice's launch_per_kernel_ns (FA_TA_NOT_STORED: an
                                                          older run) and launch_latency_ns (-1 not measured) */
    int64_t t_class_ns[FA_KCLASS_COUNT];
} gate_run;

/* The runs of one side: r[0] is the primary (newest) run; plans, kernel counts and fusion checks
 * read it, latency checks pool every run. */
typedef struct side {
    gate_run *r;
    int n;
} side;

#define CK(call)                                                                                                       \
    do {                                                                                                               \
        fa_status s_ = (call);                                                                                         \
        if (s_) return s_;                                                                                             \
    } while (0)

/* gate/runs.c: load run `id` of st (samples, per-op times, plan, kernel counts, the fused model's
 * trace) into g; strings and arrays in ar. */
fa_status fa_gate_load_run(fa_ctx *ctx, fa_store *st, int64_t id, fa_arena *ar, gate_run *g);
/* Index of the op named `name` in g->ops, -1 when absent. */
int fa_gate_find_op(const gate_run *g, const char *name);

/* gate/traces.c: the checks of two imported traces (their primary runs' stored advice): kernel
 * time per kernel class and in all, kernels and launch overhead, per profiler step. */
fa_status fa_gate_check_traces(fa_ctx *ctx, fa_gate_report *r, const side *sb, const side *sc);
/* gate/checks.c: every check of baseline side sb against candidate side sc, added to r. */
fa_status fa_gate_check_all(fa_ctx *ctx, fa_gate_report *r, const side *sb, const side *sc);
/* A note on the report (at most its notes[] capacity; further ones are dropped). */
void fa_gate_note(fa_gate_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* gate/render.c: a ratio as a change ("+3.1%", "-0.4%"; "x2.15" from 2x on; "n/a" when not finite). */
void fa_gate_pct(char *out, size_t n, double ratio);
/* Appends a check with its verdict and sentence (fmt) to r, strings copied into r->arena; the
 * caller may fill its stats. Out of memory: NULL and r->oom set, so that fa_gate_check_all fails
 * (the checks themselves go on without it). gate/checks.c; the trace rules use it too. */
fa_gate_check *fa_gate_add_check(fa_gate_report *r, const char *id, const char *category, const char *name,
                                 fa_gate_verdict v, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* "12.3 us" / "88.196 ms" / "1.234 s": a time in ns in the unit that reads at its size. */
void fa_gate_fmt_time(char *buf, size_t cap, double ns);

#endif
