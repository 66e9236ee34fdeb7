/* runtime/exec — the executor over the target tables: fa_exec_* forward to the table of the
 * target the executor was created on; the list of the targets this build registers, each
 * target value's name and capabilities, and the wrappers over the device and fused-kernel
 * tables (runtime.h, runtime/fused.h, runtime/ceilings.h). */
#include "runtime-impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- the registered targets, in preference order (cpu first: always built) ----
 * Adding a target: its folder defines one fa_target_iface (see runtime/cpu/target.c), declared in
 * runtime-impl.h and listed here (docs/architecture.md "Adding an execution target"). */
static const fa_target_iface *const k_targets[] = {
    &fa_target_cpu_iface,
#ifdef FA_HAVE_CUDA
    &fa_target_cuda_iface,
#endif
};

/* Every fa_target value's name and capabilities, registered in this build or not (stored runs
 * name targets; a gate on a cpu-only build compares runs of cuda). One row per value, in the
 * enum's order (the static assert below). */
#define TARGET_ROW(value, name, caps) [FA_TARGET_##value] = {name, caps}
static const struct {
    const char *name;
    unsigned caps;
} k_target_rows[] = {
    TARGET_ROW(AUTO, "auto", 0),
    TARGET_ROW(CPU, "cpu", FA_TARGET_CAP_LAYOUTS),
    TARGET_ROW(CUDA, "cuda", FA_TARGET_CAP_ACCELERATOR | FA_TARGET_CAP_KERNEL_REPORT),
};
#undef TARGET_ROW
_Static_assert(sizeof k_target_rows / sizeof k_target_rows[0] == FA_TARGET_COUNT, "a row per fa_target value");

const char *fa_target_name(fa_target t)
{
    return (unsigned)t < FA_TARGET_COUNT ? k_target_rows[t].name : "unknown";
}

bool fa_target_has(fa_target t, fa_target_cap cap)
{
    return (unsigned)t < FA_TARGET_COUNT && (k_target_rows[t].caps & cap) == (unsigned)cap;
}

fa_status fa_target_parse(fa_ctx *ctx, const char *s, fa_target *out)
{
    for (int t = 0; t < FA_TARGET_COUNT; t++)
        if (!strcmp(s, k_target_rows[t].name)) {
            *out = (fa_target)t;
            return FA_OK;
        }
    return fa_ctx_error(ctx, FA_ERR_USAGE, "--target '%s': expected auto, cpu or cuda", s);
}

const fa_target_iface *fa_target_at(int i)
{
    return i >= 0 && (size_t)i < sizeof k_targets / sizeof k_targets[0] ? k_targets[i] : NULL;
}

const fa_target_iface *fa_target_get(fa_target t)
{
    for (int i = 0; fa_target_at(i); i++)
        if (fa_target_at(i)->id == t) return fa_target_at(i);
    return NULL;
}

fa_status fa_target_resolve(fa_ctx *ctx, fa_target t, const fa_target_iface **out)
{
    if (t == FA_TARGET_AUTO) {
        const fa_target_iface *pick = fa_target_get(FA_TARGET_CPU);
        for (int i = 0; fa_target_at(i); i++)
            if (fa_target_has(fa_target_at(i)->id, FA_TARGET_CAP_ACCELERATOR) && fa_target_at(i)->device->available()) {
                pick = fa_target_at(i);
                break;
            }
        *out = pick;
        return FA_OK;
    }
    const fa_target_iface *ti = fa_target_get(t);
    if (!ti) {
        fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "target %s: this build has no executor for it (use --target cpu)",
                     fa_target_name(t));
        return fa_ctx_reason_set(ctx, FA_REASON_NO_EXECUTOR);
    }
    *out = ti;
    return FA_OK;
}

const char *fa_layout_name(fa_layout l)
{
    switch (l) {
    case FA_LAYOUT_PLAIN: return "plain";
    case FA_LAYOUT_NCHW8C: return "nChw8c";
    case FA_LAYOUT_NCHW16C: return "nChw16c";
    case FA_LAYOUT_NHWC: return "nhwc";
    default: return "unknown";
    }
}

bool fa_layout_of_name(const char *name, fa_layout *out)
{
    for (int i = 0; name && i < FA_LAYOUT_COUNT; i++)
        if (!strcmp(name, fa_layout_name((fa_layout)i))) {
            *out = (fa_layout)i;
            return true;
        }
    return false;
}

void fa_target_plan_layouts(fa_target t, fa_plan_layouts *out)
{
    memset(out, 0, sizeof *out);
    const fa_target_iface *ti = fa_target_get(t);
    if (ti && ti->exec->plan_layouts) ti->exec->plan_layouts(out);
}

int64_t fa_layout_channel_block(fa_layout l)
{
    return l == FA_LAYOUT_NCHW16C ? 16 : l == FA_LAYOUT_NCHW8C ? 8 : 1;
}

/* ---- the executor ---- */

struct fa_exec {
    const fa_target_iface *t;
    void *state; /* the target's executor */
};

fa_exec_options fa_exec_options_measured(fa_target target, int threads)
{
    fa_exec_options o = {.target = target, .threads = threads, .conv_tactic = FA_CONV_TACTIC_MEASURED};
    return o;
}

fa_status fa_exec_create(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *opt, fa_exec **out)
{
    fa_exec_options o = opt ? *opt : (fa_exec_options){0};
    const fa_target_iface *t;
    fa_status st = fa_target_resolve(ctx, o.target, &t);
    if (st) return st;
    o.target = t->id;
    for (int i = 0; i < g->n_inputs + g->n_outputs; i++) { /* boundary layouts: a blocked one needs NCHW floats and reorders */
        bool in = i < g->n_inputs;
        const fa_layout *l = in ? o.input_layouts : o.output_layouts;
        int k = in ? i : i - g->n_inputs, tid = in ? g->inputs[k] : g->outputs[k];
        const fa_tensor *x = g->tensors[tid];
        if (!l || l[k] == FA_LAYOUT_PLAIN || (x->flags & FA_TENSOR_CONST)) continue;
        char shape[128];
        if ((unsigned)l[k] >= FA_LAYOUT_COUNT || x->rank != 4 || x->dtype != FA_DTYPE_FLOAT || !t->exec->reorder_kernel)
            return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "graph %s '%s' (%s [%s]) cannot be kept in layout %s%s", in ? "input" : "output",
                                x->name, fa_dtype_name(x->dtype), fa_tensor_shape_str(x, shape, sizeof shape), fa_layout_name(l[k]),
                                (unsigned)l[k] >= FA_LAYOUT_COUNT ? ""
                                : !t->exec->reorder_kernel     ? " (the target has no reorders)"
                                                               : ": a blocked layout needs a rank-4 float tensor");
    }
    fa_exec *e = calloc(1, sizeof *e);
    if (!e) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory creating executor");
    e->t = t;
    st = t->exec->exec_create(ctx, g, &o, &e->state);
    if (st) {
        free(e);
        return st;
    }
    *out = e;
    return FA_OK;
}

void fa_exec_free(fa_exec *e)
{
    if (!e) return;
    e->t->exec->exec_free(e->state);
    free(e);
}

fa_status fa_exec_set_input(fa_ctx *ctx, fa_exec *e, int i, const fa_value *v)
{
    return e->t->exec->exec_set_input(ctx, e->state, i, v);
}

fa_status fa_exec_fill_inputs(fa_ctx *ctx, fa_exec *e, uint64_t seed)
{
    return e->t->exec->exec_fill_inputs(ctx, e->state, seed);
}

fa_status fa_exec_run(fa_ctx *ctx, fa_exec *e, const fa_exec_observer *obs)
{
    return e->t->exec->exec_run(ctx, e->state, obs);
}

const fa_value *fa_exec_output(const fa_exec *e, int i)
{
    return e->t->exec->exec_output(e->state, i);
}

fa_layout fa_exec_tensor_layout(const fa_exec *e, int tensor)
{
    return e->t->exec->exec_tensor_layout ? e->t->exec->exec_tensor_layout(e->state, tensor) : FA_LAYOUT_PLAIN;
}

uint64_t fa_exec_peak_bytes(const fa_exec *e)
{
    return e->t->exec->exec_peak_bytes(e->state);
}

const char *fa_exec_kernel_name(const fa_exec *e, const fa_node *n)
{
    return e->t->exec->exec_kernel_name(e->state, n);
}

const char *fa_exec_kernel_impl(const fa_exec *e, const fa_node *n)
{
    return e->t->exec->exec_kernel_impl ? e->t->exec->exec_kernel_impl(e->state, n) : NULL;
}

int fa_exec_veto_measured_tactics(fa_exec *e)
{
    return e && e->t->exec->exec_veto_tactics ? e->t->exec->exec_veto_tactics(e->state) : 0;
}

int fa_exec_reorders(const fa_exec *e)
{
    return e->t->exec->exec_reorders ? e->t->exec->exec_reorders(e->state) : 0;
}

fa_target fa_exec_target(const fa_exec *e)
{
    return e->t->id;
}

const fa_target_iface *fa_exec_target_iface(const fa_exec *e)
{
    return e->t;
}

int fa_exec_threads(const fa_exec *e)
{
    return e->t->exec->exec_threads(e->state);
}

/* ---- the target wrappers: each owns its slot's NULL check ---- */

fa_target fa_target_id(const fa_target_iface *t) { return t->id; }

bool fa_target_available(const fa_target_iface *t) { return t->device->available(); }

fa_status fa_target_device_open(fa_ctx *ctx, const fa_target_iface *t, fa_target_device *out)
{
    return t->device->device_open(ctx, out);
}

fa_status fa_target_device_key(fa_ctx *ctx, const fa_target_iface *t, int threads, char *buf, size_t cap)
{
    return t->device->device_key(ctx, threads, buf, cap);
}

fa_status fa_target_measure_ceilings(fa_ctx *ctx, const fa_target_iface *t, int threads, fa_ceilings *out)
{
    if (!t->device->measure_ceilings)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "target %s measures no ceilings", t->name);
    return t->device->measure_ceilings(ctx, threads, out);
}

const char *fa_target_latency_ceiling(const fa_target_iface *t) { return t->device->latency_ceiling; }

const char *fa_target_ceilings_method(const fa_target_iface *t) { return t->device->ceilings_method; }

const char *fa_target_cache_level_name(const fa_target_iface *t, uint64_t working_set)
{
    return t->device->cache_level_name ? t->device->cache_level_name(working_set) : NULL;
}

bool fa_target_supports_node(const fa_target_iface *t, const fa_graph *g, const fa_node *n, char *why, size_t why_cap)
{
    return t->exec->supports_node(g, n, why, why_cap);
}

fa_kernel_lang fa_target_kernel_lang(const fa_target_iface *t) { return t->fused->kernel_lang; }

fa_status fa_target_fused_compile(fa_ctx *ctx, const fa_target_iface *t, const fa_fused_compile_options *o, int n,
                                  const fa_fused_source *src, fa_fused_binary **out, char **errs)
{
    if (!t->fused->fused_compile)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "target %s compiles no generated kernels", t->name);
    return t->fused->fused_compile(ctx, o, n, src, out, errs);
}

fa_status fa_target_fused_kernel(fa_ctx *ctx, const fa_target_iface *t, const fa_fused_binary *b, fa_custom_kernel *out)
{
    return t->fused->fused_kernel(ctx, b, out);
}

fa_status fa_target_fused_node_kernel(fa_ctx *ctx, const fa_target_iface *t, const fa_fused_binary *b, const fa_graph *g,
                                      const fa_node *n, fa_custom_kernel *out)
{
    if (!fa_node_attr(n, "gemm")) return t->fused->fused_kernel(ctx, b, out);
    if (!t->fused->fused_gemm_kernel)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "node '%s': the %s target has no GEMM with a generated epilogue", n->name,
                            t->name);
    return t->fused->fused_gemm_kernel(ctx, b, g, n, out);
}

bool fa_target_fused_resources(const fa_target_iface *t, const fa_fused_binary *b, fa_kernel_resources *out)
{
    return t->fused->fused_resources && t->fused->fused_resources(b, out);
}

void fa_target_fused_free(const fa_target_iface *t, fa_fused_binary *b)
{
    if (b) t->fused->fused_free(b);
}
