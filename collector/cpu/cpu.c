/* collector/cpu — activity records from the executor's own clock (CLOCK_MONOTONIC), one per
 * kernel per timed iteration, with the collector's own bookkeeping taken out of the timeline
 * (overhead compensation, below). */
#include "collector/collector.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct cpu_rec {
    fa_trace *trace;
    const fa_graph *g;
    fa_op_cost *costs;          /* by node id */
    const char **node_names;    /* interned, by node id */
    const char **op_types;
    const char **kernel_seen;   /* by node id: the kernel name pointer last recorded ... */
    const char **kernel_names;  /* ... and its interned copy (interned once, not per kernel run) */
    int iter;
    int64_t pid;                /* getpid() once: it is a system call in glibc >= 2.25 */
    int64_t tid;
    uint64_t t0;
    uint64_t own_ns;            /* the collector's own time so far in this iteration (on_end) */
    fa_clock_fn clock;          /* fa_now_ns unless a test gives its own */
    void *clock_user;
    bool oom;
} cpu_rec;

static uint64_t real_clock(void *user)
{
    (void)user;
    return fa_now_ns();
}

static void on_begin(void *user, const fa_node *n, const char *kernel)
{
    (void)n;
    (void)kernel;
    cpu_rec *r = user;
    r->t0 = r->clock(r->clock_user);
}

/* Overhead compensation: every stamp of a timed iteration is moved back by the time the
 * collector itself spent recording the kernels before it (r->own_ns: from each kernel's end
 * stamp to the end of its record, fa_trace_add and the interning included), as a profiler
 * removes its own measured cost from the timeline it reports (A. D. Malony and S. S. Shende,
 * "Overhead Compensation in Performance Profiling", Euro-Par 2004, LNCS 3149). The kernels'
 * own spans (begin to end stamp) hold none of it and keep their length; what moves is the idle
 * time between kernels and the iteration's span. Why: the advisor's dispatch term is that idle
 * time per kernel (advisor/advisor.c predict_cluster), and the applier measures a cluster's
 * unfused sub-graph and the end-to-end model with no collector attached — the executor's own
 * per-kernel dispatch (setting the thread count, the kernel call) already lies inside each
 * kernel's span. Uncompensated, the quiet pass of 2026-12-05 (main 5a2422f,
 * bench_calibration.sh over every family) traced T5's and LLaMA's decomposed RMSNorm with
 * 6-8 gaps of 430 ns (2.6-3.5 us a cluster) that the isolated unfused sub-graph did not show:
 * its members' spans 10.2 us against 9.7 us measured, the saving predicted 10.9 against 7.9 us
 * measured; and the tiny transformers' traced iteration was 6-11 % longer than the same model
 * benchmarked, while the sum of its kernels' spans was within 3 % of it. */
static void on_end(void *user, const fa_node *n, const char *kernel)
{
    cpu_rec *r = user;
    uint64_t t1 = r->clock(r->clock_user);
    if (r->iter < 0) return; /* warm-up: not recorded */
    fa_activity a = fa_activity_init(FA_ACT_KERNEL);
    a.node = n->id;
    if (n->id < 0 || n->id >= r->g->n_nodes) {
        a.name = fa_trace_intern(r->trace, kernel);
        /* a kernel of the executor's own, no graph node: a reorder between layouts (op
         * "Reorder", named after its tensor); it reads and writes the tensor once (logical bytes) */
        a.op_type = fa_trace_intern(r->trace, n->op_type);
        a.node_name = fa_trace_intern(r->trace, n->name);
        a.node = -1;
        if (n->n_inputs == 1 && n->inputs[0] >= 0) {
            const fa_tensor *t = r->g->tensors[n->inputs[0]];
            a.bytes_read = a.bytes_written = (uint64_t)fa_tensor_numel(t) * fa_dtype_size(t->dtype);
        }
        if (!a.name || !a.op_type || !a.node_name) r->oom = true;
    } else {
        if (r->kernel_seen[n->id] != kernel) { /* the executor's names are fixed for its life */
            r->kernel_names[n->id] = fa_trace_intern(r->trace, kernel);
            r->kernel_seen[n->id] = r->kernel_names[n->id] ? kernel : NULL;
        }
        a.name = r->kernel_names[n->id];
        a.op_type = r->op_types[n->id];
        a.node_name = r->node_names[n->id];
        a.bytes_read = r->costs[n->id].bytes_read;
        a.bytes_written = r->costs[n->id].bytes_written;
        a.flops = r->costs[n->id].flops;
    }
    a.iter = r->iter;
    a.stream = r->tid;
    a.tid = r->tid;
    a.pid = r->pid;
    a.start_ns = r->t0 - r->own_ns;
    a.end_ns = t1 - r->own_ns;
    if (!a.name || !fa_trace_add(r->trace, &a)) r->oom = true;
    r->own_ns += r->clock(r->clock_user) - t1;
}

fa_status fa_collect_cpu(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int warmup, int iters,
                         fa_progress_fn progress, void *progress_user, fa_trace **out)
{
    return fa_collect_cpu_span(ctx, e, g, warmup, iters, 0, progress, progress_user, out);
}

fa_status fa_collect_cpu_span(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int warmup, int iters, double min_span_s,
                              fa_progress_fn progress, void *progress_user, fa_trace **out)
{
    return fa_collect_cpu_clocked(ctx, e, g, warmup, iters, min_span_s, NULL, NULL, progress, progress_user, out);
}

/* ---- the recorder: the collector's observer, for iterations run by the caller or by
 * fa_collect_cpu_clocked below ---- */
struct fa_cpu_recorder {
    cpu_rec r;
    fa_exec_observer obs;
};

void fa_cpu_recorder_free(fa_cpu_recorder *rec)
{
    if (!rec) return;
    fa_trace_free(rec->r.trace);
    free(rec->r.costs);
    free(rec->r.node_names);
    free(rec->r.op_types);
    free(rec->r.kernel_seen);
    free(rec->r.kernel_names);
    free(rec);
}

fa_status fa_cpu_recorder_create(fa_ctx *ctx, const fa_graph *g, fa_clock_fn clock, void *clock_user,
                                 fa_cpu_recorder **out)
{
    *out = NULL;
    fa_cpu_recorder *rec = calloc(1, sizeof *rec);
    if (!rec) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory creating the cpu trace");
    cpu_rec *r = &rec->r;
    r->clock = clock ? clock : real_clock;
    r->clock_user = clock ? clock_user : NULL;
    r->trace = fa_trace_create("cpu-executor");
    r->g = g;
    r->costs = calloc((size_t)g->n_nodes + 1, sizeof *r->costs);
    r->node_names = calloc((size_t)g->n_nodes + 1, sizeof *r->node_names);
    r->op_types = calloc((size_t)g->n_nodes + 1, sizeof *r->op_types);
    r->kernel_seen = calloc((size_t)g->n_nodes + 1, sizeof *r->kernel_seen);
    r->kernel_names = calloc((size_t)g->n_nodes + 1, sizeof *r->kernel_names);
    r->pid = getpid();
    r->tid = (int64_t)syscall(SYS_gettid);
    if (!r->trace || !r->costs || !r->node_names || !r->op_types || !r->kernel_seen || !r->kernel_names) {
        fa_cpu_recorder_free(rec);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory creating the cpu trace");
    }
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        fa_node_cost(g, n, &r->costs[n->id]);
        r->node_names[n->id] = fa_trace_intern(r->trace, n->name);
        r->op_types[n->id] = fa_trace_intern(r->trace, n->op_type);
    }
    rec->obs = (fa_exec_observer){.user = r, .kernel_begin = on_begin, .kernel_end = on_end};
    *out = rec;
    return FA_OK;
}

fa_status fa_cpu_recorder_run(fa_ctx *ctx, fa_cpu_recorder *rec, fa_exec *e, bool timed, uint64_t *own_ns)
{
    cpu_rec *r = &rec->r;
    if (own_ns) *own_ns = 0;
    if (!timed) {
        r->iter = -1;
        return fa_exec_run(ctx, e, &rec->obs);
    }
    fa_trace *t = r->trace;
    r->iter = t->n_iters;
    r->own_ns = 0;
    uint64_t s0 = r->clock(r->clock_user);
    fa_status st = fa_exec_run(ctx, e, &rec->obs);
    uint64_t s1 = r->clock(r->clock_user) - r->own_ns; /* compensated, as its kernels' stamps */
    if (!st) {
        fa_activity a = fa_activity_init(FA_ACT_RANGE);
        a.name = fa_trace_intern(t, "iteration");
        a.iter = r->iter;
        a.tid = r->tid;
        a.stream = r->tid;
        a.pid = r->pid;
        a.start_ns = s0;
        a.end_ns = s1;
        if (!fa_trace_add(t, &a)) r->oom = true;
        t->n_iters++;
    }
    if (own_ns) *own_ns = r->own_ns;
    if (r->oom && !st) st = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory recording the trace");
    return st;
}

fa_trace *fa_cpu_recorder_take(fa_cpu_recorder *rec)
{
    fa_trace *t = rec->r.trace;
    rec->r.trace = NULL;
    return t;
}

fa_status fa_collect_cpu_clocked(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int warmup, int iters, double min_span_s,
                                 fa_clock_fn clock, void *clock_user, fa_progress_fn progress, void *progress_user,
                                 fa_trace **out)
{
    if (iters < 1 || warmup < FA_WARMUP_AUTO)
        return fa_ctx_error(ctx, FA_ERR_USAGE, "--iters must be >= 1 and --warmup >= 0");
    if (!(min_span_s >= 0 && min_span_s <= FA_TRACE_SPAN_MAX_S))
        return fa_ctx_error(ctx, FA_ERR_USAGE, "--trace-span %g: expected seconds in [0, %g]", min_span_s,
                            FA_TRACE_SPAN_MAX_S);
    fa_cpu_recorder *rec = NULL;
    fa_status st = fa_cpu_recorder_create(ctx, g, clock, clock_user, &rec);
    if (st) return st;
    cpu_rec *r = &rec->r;
    /* progress against one stable denominator: the most warm-up iterations it may take, then
     * with a span the most timed ones (cap), and the last call says done against it */
    int wmax = warmup >= 0 ? warmup : FA_WARMUP_AUTO_MAX;
    int cap = iters > FA_TRACE_SPAN_MAX_ITERS ? iters : FA_TRACE_SPAN_MAX_ITERS;
    int shown = wmax + (min_span_s > 0 ? cap : iters);
    /* warm-up: unrecorded (fa_warmup_more: W exactly, or by time) */
    int nw = 0;
    uint64_t w0 = r->clock(r->clock_user);
    while (!st && fa_warmup_more(warmup, nw, r->clock(r->clock_user) - w0)) {
        st = fa_cpu_recorder_run(ctx, rec, e, false, NULL);
        nw++;
        if (progress) progress(progress_user, "warm-up", nw, shown);
    }
    /* timed: past the iters asked, one more while the timed ones span less than min_span_s and
     * fewer than cap were taken; the span is read after each run, so the last one is the first
     * to reach it (read before it, the trace ran one iteration past the span: a 0.25 s iteration
     * of GPT-2 at 24 layers) */
    int total = iters;
    uint64_t tstart = r->clock(r->clock_user);
    for (int it = 0; it < total && !st; it++) {
        fa_host_spread_threads(fa_exec_threads(e)); /* the pool's threads on distinct CPUs, outside the iteration's stamps */
        st = fa_cpu_recorder_run(ctx, rec, e, true, NULL);
        if (!st && it == total - 1 && min_span_s > 0 && total < cap &&
            (double)(r->clock(r->clock_user) - tstart) / 1e9 < min_span_s)
            total++;
        int done = it + 1 < total ? (wmax + it + 1 < shown ? wmax + it + 1 : shown - 1) : shown;
        if (progress) progress(progress_user, "timed", done, shown);
    }
    if (!st) {
        fa_trace *t = fa_cpu_recorder_take(rec);
        t->n_warmup = nw;
        *out = t;
    }
    fa_cpu_recorder_free(rec);
    return st;
}
