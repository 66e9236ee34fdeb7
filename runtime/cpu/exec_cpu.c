/* runtime/cpu/exec_cpu — the cpu target's unfused executor: one kernel per live node in
 * topological order, each intermediate in its own buffer, freed after its last consumer (the
 * baseline memory plan). oneDNN for Conv/ConvTranspose/MatMul/Gemm, the registry's reference
 * kernels otherwise. Reached through the cpu target's table (runtime/cpu/target.c). */
#include "runtime/runtime-impl.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct slot {
    fa_value v;
    bool owned;      /* data malloc'd by the executor */
    int last_use;    /* topo index of the last consumer; INT32_MAX for graph outputs */
} slot;

typedef struct cpu_exec {
    const fa_graph *g;
    fa_exec_options opt;
    int threads;
    fa_kernel *kernels; /* by node id; name NULL for folded nodes */
    slot *slots;        /* by tensor id */
    uint64_t live_bytes, peak_bytes;
} cpu_exec;

static fa_status ref_run(fa_ctx *ctx, fa_kernel *k, const fa_node *n, const fa_value *in, int n_in,
                         fa_value *out, int n_out, int threads)
{
    (void)k;
    return n->op->kernel(ctx, n, in, n_in, out, n_out, threads);
}

typedef struct custom_state {
    fa_custom_kernel k;
} custom_state;

static fa_status custom_run(fa_ctx *ctx, fa_kernel *k, const fa_node *n, const fa_value *in, int n_in,
                            fa_value *out, int n_out, int threads)
{
    custom_state *cs = k->state;
    return cs->k.run(cs->k.state, ctx, n, in, n_in, out, n_out, threads);
}

static void custom_destroy(fa_kernel *k)
{
    custom_state *cs = k->state;
    if (cs && cs->k.destroy) cs->k.destroy(cs->k.state);
    free(cs);
    k->state = NULL;
}

static void value_of_tensor(const fa_tensor *t, fa_value *v)
{
    v->dtype = t->dtype;
    v->rank = t->rank;
    memcpy(v->dims, t->dims, sizeof v->dims);
}

/* Bytes of tensor t's buffer; false on overflow or an unknown shape. */
static bool tensor_bytes(const fa_graph *g, int t, uint64_t *out)
{
    fa_value v;
    value_of_tensor(g->tensors[t], &v);
    int64_t ne = fa_value_numel(&v);
    size_t b;
    if (ne < 0 || !fa_mul_size((size_t)ne, fa_dtype_size(v.dtype), &b)) return false;
    *out = b;
    return true;
}

/* The peak of live tensor bytes of one run of the plan, replayed exactly as fa_exec_run
 * allocates and frees them (graph inputs held throughout; each output allocated before its node
 * runs; an input freed after its last consumer, an unread output at once), checked against
 * --max-memory and against what the machine can give (fa_mem_available: MemAvailable and the
 * cgroup's limit). Two 14 GB tensors that each fit but not together are refused here, before
 * either is allocated. */
static fa_status check_planned_peak(fa_ctx *ctx, cpu_exec *e)
{
    const fa_graph *g = e->g;
    uint64_t live = 0, peak = 0, b, big = 0;
    int peak_node = -1, big_t = -1;
    for (int i = 0; i < g->n_inputs; i++) {
        if (!tensor_bytes(g, g->inputs[i], &b) || live + b < live)
            return fa_ctx_error(ctx, FA_ERR_NOMEM, "input '%s': size overflows", g->tensors[g->inputs[i]]->name);
        live += b;
        if (b > big) big = b, big_t = g->inputs[i];
    }
    peak = live;
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        for (int o = 0; o < n->n_outputs; o++) {
            int t = n->outputs[o];
            if (t < 0 || (g->tensors[t]->flags & FA_TENSOR_CONST)) continue;
            if (!tensor_bytes(g, t, &b) || live + b < live)
                return fa_ctx_error(ctx, FA_ERR_NOMEM, "tensor '%s': size overflows", g->tensors[t]->name);
            live += b;
            if (b > big) big = b, big_t = t;
        }
        if (live > peak) {
            peak = live;
            peak_node = n->id;
        }
        for (int i = 0; i < n->n_inputs; i++) {
            int t = n->inputs[i];
            if (t >= 0 && e->slots[t].last_use == k && !(g->tensors[t]->flags & (FA_TENSOR_GRAPH_INPUT | FA_TENSOR_CONST)) &&
                tensor_bytes(g, t, &b))
                live -= b < live ? b : live;
        }
        for (int o = 0; o < n->n_outputs; o++) {
            int t = n->outputs[o];
            if (t >= 0 && e->slots[t].last_use < 0 && !(g->tensors[t]->flags & FA_TENSOR_CONST) && tensor_bytes(g, t, &b))
                live -= b < live ? b : live;
        }
    }
    char where[1200] = "";
    int w = 0;
    if (peak_node >= 0) w = snprintf(where, sizeof where, " (reached at node '%.400s')", g->nodes[peak_node]->name);
    if (big_t >= 0)
        snprintf(where + w, sizeof where - (size_t)w, "; its largest tensor is '%.400s', %llu bytes", g->tensors[big_t]->name,
                 (unsigned long long)big);
    if (e->opt.max_memory && peak > e->opt.max_memory)
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "the run needs %llu bytes of live tensors at its peak%s, more than --max-memory %llu",
                            (unsigned long long)peak, where, (unsigned long long)e->opt.max_memory);
    char src[1200];
    uint64_t avail = fa_mem_available(src, sizeof src);
    if (peak > avail)
        return fa_ctx_error(ctx, FA_ERR_NOMEM,
                            "the run needs %llu bytes of live tensors at its peak%s, more than the %llu bytes of memory "
                            "available (%s)",
                            (unsigned long long)peak, where, (unsigned long long)avail, src);
    return FA_OK;
}

fa_status fa_cpu_exec_create(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *opt, void **out)
{
    fa_exec_options o = *opt;
    o.target = FA_TARGET_CPU;
    cpu_exec *e = calloc(1, sizeof *e);
    if (!e) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory creating executor");
    e->g = g;
    e->opt = o;
    e->threads = o.threads > 0 ? o.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (e->threads < 1) e->threads = 1;
    omp_set_num_threads(e->threads);
    e->kernels = calloc((size_t)g->n_nodes + 1, sizeof *e->kernels);
    e->slots = calloc((size_t)g->n_tensors + 1, sizeof *e->slots);
    if (!e->kernels || !e->slots) {
        fa_cpu_exec_free(e);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory creating executor");
    }
    for (int t = 0; t < g->n_tensors; t++) {
        const fa_tensor *ten = g->tensors[t];
        value_of_tensor(ten, &e->slots[t].v);
        if ((ten->flags & FA_TENSOR_CONST) && ten->data) e->slots[t].v.data = ten->data;
        e->slots[t].last_use = -1;
    }
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0) e->slots[n->inputs[i]].last_use = k;
    }
    for (int i = 0; i < g->n_outputs; i++) e->slots[g->outputs[i]].last_use = INT32_MAX;
    /* the whole plan's peak, before anything of that size is allocated */
    fa_status pst = check_planned_peak(ctx, e);
    if (pst) {
        fa_cpu_exec_free(e);
        return pst;
    }
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        fa_kernel *kern = &e->kernels[n->id];
        bool handled = false;
        if (o.provider) {
            fa_custom_kernel ck = {0};
            fa_status pst = o.provider(o.provider_user, ctx, g, n, &ck, &handled);
            if (pst) {
                fa_cpu_exec_free(e);
                return pst;
            }
            if (handled) {
                custom_state *cs = calloc(1, sizeof *cs);
                if (!cs) {
                    if (ck.destroy) ck.destroy(ck.state);
                    fa_cpu_exec_free(e);
                    return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
                }
                cs->k = ck;
                kern->state = cs;
                kern->run = custom_run;
                kern->destroy = custom_destroy;
                kern->name = ck.name;
                continue;
            }
        }
        fa_status st = fa_dnnl_kernel_create(ctx, g, n, e->threads, kern, &handled);
        if (st) {
            fa_cpu_exec_free(e);
            return st;
        }
        if (handled) continue;
        if (!n->op || !n->op->kernel) {
            fa_cpu_exec_free(e);
            return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "unsupported op %s at node '%s' on cpu",
                                n->op_type, n->name);
        }
        kern->run = ref_run;
        kern->name = n->op->name;
    }
    *out = e;
    return FA_OK;
}

static void release(cpu_exec *e, int tid)
{
    slot *s = &e->slots[tid];
    if (!s->owned) return;
    e->live_bytes -= (uint64_t)fa_value_numel(&s->v) * fa_dtype_size(s->v.dtype);
    free(s->v.data);
    s->v.data = NULL;
    s->owned = false;
}

void fa_cpu_exec_free(void *state)
{
    cpu_exec *e = state;
    if (!e) return;
    if (e->slots)
        for (int t = 0; t < e->g->n_tensors; t++) release(e, t);
    if (e->kernels)
        for (int n = 0; n < e->g->n_nodes; n++)
            if (e->kernels[n].destroy) e->kernels[n].destroy(&e->kernels[n]);
    free(e->kernels);
    free(e->slots);
    free(e);
}

static fa_status alloc_slot(fa_ctx *ctx, cpu_exec *e, int tid)
{
    slot *s = &e->slots[tid];
    release(e, tid);
    size_t bytes;
    int64_t ne = fa_value_numel(&s->v);
    if (ne < 0 || !fa_mul_size((size_t)ne, fa_dtype_size(s->v.dtype), &bytes))
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "tensor '%s': size overflows", e->g->tensors[tid]->name);
    /* Refuse before allocating what the machine cannot hold at all (a model or trace that
     * declares sizes beyond physical memory), instead of relying on malloc failing. */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && (uint64_t)bytes > (uint64_t)pages * (uint64_t)page)
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "tensor '%s': %zu bytes is more than this machine's %llu bytes of memory",
                            e->g->tensors[tid]->name, bytes, (unsigned long long)pages * (unsigned long long)page);
    if (e->opt.max_memory && e->live_bytes + bytes > e->opt.max_memory)
        return fa_ctx_error(ctx, FA_ERR_NOMEM,
                            "tensor '%s': %zu bytes would exceed --max-memory %llu (live %llu)",
                            e->g->tensors[tid]->name, bytes, (unsigned long long)e->opt.max_memory,
                            (unsigned long long)e->live_bytes);
    /* 64-byte alignment suits AVX-512 loads and oneDNN */
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "tensor '%s': cannot allocate %zu bytes",
                            e->g->tensors[tid]->name, bytes);
    s->v.data = p;
    s->owned = true;
    e->live_bytes += bytes;
    if (e->live_bytes > e->peak_bytes) e->peak_bytes = e->live_bytes;
    return FA_OK;
}

fa_status fa_cpu_exec_set_input(fa_ctx *ctx, void *state, int i, const fa_value *v)
{
    cpu_exec *e = state;
    if (i < 0 || i >= e->g->n_inputs)
        return fa_ctx_error(ctx, FA_ERR_USAGE, "input index %d out of range (%d inputs)", i, e->g->n_inputs);
    int tid = e->g->inputs[i];
    const fa_tensor *t = e->g->tensors[tid];
    bool same = v->dtype == t->dtype && v->rank == t->rank;
    for (int d = 0; same && d < t->rank; d++) same = v->dims[d] == t->dims[d];
    if (!same) {
        char want[128];
        return fa_ctx_error(ctx, FA_ERR_INPUT, "input '%s': expected %s [%s], got %s of rank %d",
                            t->name, fa_dtype_name(t->dtype), fa_tensor_shape_str(t, want, sizeof want),
                            fa_dtype_name(v->dtype), v->rank);
    }
    fa_status st = alloc_slot(ctx, e, tid);
    if (st) return st;
    memcpy(e->slots[tid].v.data, v->data, (size_t)fa_value_numel(v) * fa_dtype_size(v->dtype));
    return FA_OK;
}

fa_status fa_cpu_exec_fill_inputs(fa_ctx *ctx, void *state, uint64_t seed)
{
    cpu_exec *e = state;
    fa_rng r;
    fa_rng_seed(&r, seed);
    for (int i = 0; i < e->g->n_inputs; i++) {
        int tid = e->g->inputs[i];
        fa_status st = alloc_slot(ctx, e, tid);
        if (st) return st;
        fa_graph_fill_input(e->g, tid, &r, &e->slots[tid].v);
    }
    return FA_OK;
}

fa_status fa_cpu_exec_run(fa_ctx *ctx, void *state, const fa_exec_observer *obs)
{
    cpu_exec *e = state;
    const fa_graph *g = e->g;
    for (int i = 0; i < g->n_inputs; i++)
        if (!e->slots[g->inputs[i]].v.data)
            return fa_ctx_error(ctx, FA_ERR_USAGE, "input '%s' was not set",
                                g->tensors[g->inputs[i]]->name);
    /* outputs of the previous run */
    for (int i = 0; i < g->n_outputs; i++) {
        int tid = g->outputs[i];
        if (!(g->tensors[tid]->flags & (FA_TENSOR_CONST | FA_TENSOR_GRAPH_INPUT))) release(e, tid);
    }
    e->peak_bytes = e->live_bytes;
    fa_value in[64], out[16];
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        if (n->n_inputs > 64 || n->n_outputs > 16)
            return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "node '%s': too many inputs/outputs", n->name);
        for (int i = 0; i < n->n_inputs; i++) {
            if (n->inputs[i] < 0) { memset(&in[i], 0, sizeof in[i]); continue; }
            in[i] = e->slots[n->inputs[i]].v;
        }
        for (int o = 0; o < n->n_outputs; o++) {
            if (n->outputs[o] < 0) {
                /* omitted optional output: give the kernel a scratch-free NULL buffer */
                memset(&out[o], 0, sizeof out[o]);
                continue;
            }
            fa_status st = alloc_slot(ctx, e, n->outputs[o]);
            if (st) return st;
            out[o] = e->slots[n->outputs[o]].v;
        }
        fa_kernel *kern = &e->kernels[n->id];
        if (obs && obs->kernel_begin) obs->kernel_begin(obs->user, n, kern->name);
        fa_status st = kern->run(ctx, kern, n, in, n->n_inputs, out, n->n_outputs, e->threads);
        if (obs && obs->kernel_end) obs->kernel_end(obs->user, n, kern->name);
        if (st) return fa_ctx_wrap(ctx, st, "executing node '%s' (%s): ", n->name, n->op_type);
        /* free inputs whose last consumer this was, and outputs nobody reads */
        for (int i = 0; i < n->n_inputs; i++) {
            int tid = n->inputs[i];
            if (tid >= 0 && e->slots[tid].last_use == k && !(g->tensors[tid]->flags & FA_TENSOR_GRAPH_INPUT))
                release(e, tid);
        }
        for (int o = 0; o < n->n_outputs; o++) {
            int tid = n->outputs[o];
            if (tid >= 0 && e->slots[tid].last_use < 0) release(e, tid);
        }
    }
    return FA_OK;
}

const fa_value *fa_cpu_exec_output(const void *state, int i)
{
    const cpu_exec *e = state;
    if (i < 0 || i >= e->g->n_outputs) return NULL;
    const fa_value *v = &e->slots[e->g->outputs[i]].v;
    return v->data ? v : NULL;
}

uint64_t fa_cpu_exec_peak_bytes(const void *state)
{
    return ((const cpu_exec *)state)->peak_bytes;
}

const char *fa_cpu_exec_kernel_name(const void *state, const fa_node *n)
{
    return ((const cpu_exec *)state)->kernels[n->id].name;
}

int fa_cpu_exec_threads(const void *state)
{
    return ((const cpu_exec *)state)->threads;
}
