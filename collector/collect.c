/* collector/collect — the trace source of each execution target (a table, as the targets' own):
 * the executor's clock on cpu, CUPTI on cuda; fa_collect runs the one for the executor's target.
 * Adding a target with its own trace source: one row here (docs/architecture.md). */
#include "collector/collector.h"

#ifdef FA_HAVE_CUDA
#include "collector/cupti/cupti.h"
#endif

typedef struct trace_source {
    fa_target target;
    fa_status (*collect)(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int warmup, int iters, fa_progress_fn progress,
                         void *progress_user, fa_trace **out);
} trace_source;

static const trace_source k_sources[] = {
    {FA_TARGET_CPU, fa_collect_cpu},
#ifdef FA_HAVE_CUDA
    {FA_TARGET_CUDA, fa_collect_cupti},
#endif
};

fa_status fa_collect(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int warmup, int iters, fa_progress_fn progress,
                     void *progress_user, fa_trace **out)
{
    for (size_t i = 0; i < sizeof k_sources / sizeof k_sources[0]; i++)
        if (k_sources[i].target == fa_exec_target(e))
            return k_sources[i].collect(ctx, e, g, warmup, iters, progress, progress_user, out);
    /* a target without a trace source of its own: the executor's clock (its run synchronizes) */
    return fa_collect_cpu(ctx, e, g, warmup, iters, progress, progress_user, out);
}

fa_status fa_collect_span(fa_ctx *ctx, fa_exec *e, const fa_graph *g, int warmup, int iters, double min_span_s,
                          fa_progress_fn progress, void *progress_user, fa_trace **out)
{
    for (size_t i = 0; i < sizeof k_sources / sizeof k_sources[0]; i++)
        if (k_sources[i].target == fa_exec_target(e) && k_sources[i].collect != fa_collect_cpu)
            return k_sources[i].collect(ctx, e, g, warmup, iters, progress, progress_user, out);
    return fa_collect_cpu_span(ctx, e, g, warmup, iters, min_span_s, progress, progress_user, out);
}
