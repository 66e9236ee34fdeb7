/* runtime/cpu/exec_cpu — the cpu target's unfused executor: one kernel per live node in
 * topological order. Memory is a static plan: every activation (graph inputs, intermediates,
 * outputs) gets an offset in one arena, computed once when the executor is created from the
 * tensors' lifetimes, allocated and touched (page-faulted in) there, so a timed iteration never
 * calls malloc/free or faults pages. Two tensors share bytes only when their lifetimes (producer
 * .. last consumer, in topological order) are disjoint. oneDNN for Conv/ConvTranspose/MatMul/Gemm
 * (runtime/cpu/dnnl.c) and for depthwise convs, pools, softmax and layer norm where it is faster
 * (runtime/cpu/dnnl_ops.c), the registry's reference kernels otherwise. Reached through the cpu target's table (runtime/cpu/target.c).
 * With fa_exec_options.blocked_layouts (the fused plan) the kernels that can keep oneDNN's
 * blocked layout do, runtime/layout.c plans the reorders between them and the plain ones, and
 * each reorder runs as a kernel of its own into a slot of the memory plan (docs/runtime.md
 * "Blocked layouts in the fused plan"). */
#include "runtime/runtime-impl.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct slot {
    fa_value v;
    bool set;        /* a graph input that fa_exec_set_input / fill_inputs wrote */
    int first_def;   /* topo index of the producer; -1 for graph inputs; INT32_MIN when not planned */
    int last_use;    /* topo index of the last consumer; INT32_MAX for graph outputs */
    uint64_t off, bytes; /* place in the arena (planned tensors only) */
    fa_layout layout; /* how its bytes are laid out (blocked: C padded to the block) */
} slot;

/* One kernel of a run, prepared when the executor is created (plan_dispatch), once every place
 * is final: a node's kernel or a reorder, its argument values already pointing into the arena (or
 * at the constants), and the threads it runs with. fa_cpu_exec_run only walks these. */
typedef struct dispatch_step {
    const fa_node *node;          /* the graph node, or the reorder's (op "Reorder", id -1) */
    fa_kernel *kern;              /* a node's kernel; NULL for a reorder */
    const fa_custom_kernel *rk;   /* a reorder's kernel */
    const char *name;             /* the kernel's name, shown to the observer */
    fa_value *in, *out;           /* n_in / n_out values in cpu_exec.step_vals; an omitted
                                     optional input or output is all zero (data NULL) */
    int n_in, n_out;
    int threads;                  /* node_threads / reorder_threads */
} dispatch_step;

typedef struct cpu_exec {
    const fa_graph *g;
    fa_exec_options opt;
    int threads;
    int *node_threads;  /* by node id: the threads its kernel is created and run with (small_kernel) */
    int *reorder_threads; /* by reorder: the same for reorder kernels (2 x the tensor's bytes moved) */
    bool small_shared;  /* FA_SMALL_KERNELS_SHARED: every kernel gets `threads` */
    fa_kernel *kernels; /* by node id; name NULL for folded nodes */
    slot *slots;        /* by tensor id, then one per reorder (n_tensors + r): the reordered copy */
    int n_slots;
    fa_layout *tlayout; /* by tensor id, while kernels are created: the layout its producer writes */
    fa_layout *node_layout; /* by node id: the layout its kernel reads and writes (PLAIN unless
                               blocked_layouts and its kernel took the target's blocked layout) */
    fa_layout *node_in0;    /* by node id: the layout its input 0 is read in (a first conv: PLAIN) */
    fa_layout_plan lp;  /* runtime/layout.c's plan from node_layout: tensor layouts, reorders */
    fa_custom_kernel *rk; /* by reorder: the target's reorder kernel */
    fa_node *rnode;     /* by reorder: what the observer is shown (op "Reorder", id -1) */
    char **rname;
    int *in_off, *in_slot; /* node id -> in_slot[in_off[id] + i]: the slot input i is read from */
    int *out_slot;      /* by graph output: its slot in the layout it is left in (out_layout) */
    fa_layout *in_layout, *out_layout; /* by graph input / output: the boundary layouts
                                          (fa_exec_options.input_layouts / output_layouts) */
    fa_custom_kernel *in_rk;  /* by graph input: plain -> its layout, run by set_input (run NULL: plain) */
    fa_custom_kernel *out_rk; /* by graph output: its layout -> plain, run by fa_exec_output */
    fa_value *out_plain;      /* by graph output kept blocked: the plain copy fa_exec_output returns */
    bool *out_plain_ok;       /* ... converted since the last run */
    fa_ctx *out_ctx;          /* errors of those conversions (fa_exec_output has no ctx) */
    dispatch_step *steps; /* the run, prepared once by plan_dispatch: n_steps kernels in order */
    int n_steps;
    int *stretch_end;     /* by step: where a stretch of one-thread steps starts that a step on the
                             pool's threads ends, that step's index; else 0 (plan_dispatch) */
    uint64_t *stretch_ns; /* by step: that stretch's duration in the last run (0: not yet run) */
    bool wake_ahead;      /* FA_WAKE_AHEAD unset or not "0": stretches by their durations */
    fa_value *step_vals;  /* every step's argument values, pointing into the arena */
    unsigned char *arena; /* the static memory plan's one buffer, 64-byte aligned */
    uint64_t arena_bytes, live_peak_bytes;
    bool ran;           /* outputs are valid after the first run */
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

/* Bytes of slot i's buffer in its layout: C rounded up to the layout's channel block
 * (fa_layout_channel_block: nChw8c/nChw16c pad to 8/16, the tail zero; plain and nhwc do not
 * pad). false on overflow. */
static bool slot_bytes(const cpu_exec *e, int i, uint64_t *out)
{
    fa_value v = e->slots[i].v;
    int64_t b = fa_layout_channel_block(e->slots[i].layout);
    if (v.rank >= 2 && b > 1) v.dims[1] = (v.dims[1] + b - 1) / b * b;
    int64_t ne = fa_value_numel(&v);
    size_t bytes;
    if (ne < 0 || !fa_mul_size((size_t)ne, fa_dtype_size(v.dtype), &bytes)) return false;
    *out = bytes;
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
    e->live_peak_bytes = peak;
    char where[1200] = "";
    int w = 0;
    if (peak_node >= 0) w = snprintf(where, sizeof where, " (reached at node '%.400s')", g->nodes[peak_node]->name);
    if (big_t >= 0)
        snprintf(where + w, sizeof where - (size_t)w, "; its largest tensor is '%.400s', %llu bytes", g->tensors[big_t]->name,
                 (unsigned long long)big);
    if (e->opt.max_memory && peak > e->opt.max_memory)
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "the run needs %llu bytes of live tensors at its peak%s, more than --max-memory %llu",
                            (unsigned long long)peak, where, (unsigned long long)e->opt.max_memory);
    const char *why = NULL;
    uint64_t dflt = e->opt.max_memory ? 0 : fa_mem_default_limit(&why);
    if (dflt && peak > dflt)
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "the run needs %llu bytes of live tensors at its peak%s, more than the limit of "
                            "%llu bytes %s; a larger limit: --max-memory BYTES",
                            (unsigned long long)peak, where, (unsigned long long)dflt, why);
    char src[1200];
    uint64_t avail = fa_mem_available(src, sizeof src);
    if (peak > avail)
        return fa_ctx_error(ctx, FA_ERR_NOMEM,
                            "the run needs %llu bytes of live tensors at its peak%s, more than the %llu bytes of memory "
                            "available (%s)",
                            (unsigned long long)peak, where, (unsigned long long)avail, src);
    return FA_OK;
}

/* One activation to place: tensor t of `bytes` (64-byte multiple), live over topo indices [a, b]. */
typedef struct plan_item {
    int t;
    int a, b;
    uint64_t bytes;
} plan_item;

static int item_by_size_desc(const void *x, const void *y)
{
    const plan_item *p = x, *q = y;
    if (p->bytes != q->bytes) return p->bytes > q->bytes ? -1 : 1;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return p->t < q->t ? -1 : p->t > q->t;
}

static int placed_by_offset(const void *x, const void *y, void *slots)
{
    const slot *s = slots;
    uint64_t a = s[*(const int *)x].off, b = s[*(const int *)y].off;
    return a < b ? -1 : a > b;
}

#define FA_ARENA_ALIGN 64 /* a cache line; AVX-512 loads and oneDNN's preferred alignment */

/* A view's kernel: its output is its input's bytes (merge_views), nothing to move. It stays in the
 * run table, so that a trace keeps one record per live node and iteration (a view's, ~0 long). */
static fa_status view_run(fa_ctx *ctx, fa_kernel *k, const fa_node *n, const fa_value *in, int n_in, fa_value *out,
                          int n_out, int threads)
{
    (void)ctx, (void)k, (void)n, (void)in, (void)n_in, (void)out, (void)n_out, (void)threads;
    return FA_OK;
}

/* Views (ops flagged FA_OPF_ALIAS: Reshape, Flatten, Squeeze, Unsqueeze, Identity; a Pad whose
 * constant pads are all zero, fa_pad_identity; a Transpose that moves only axes of extent 1,
 * fa_transpose_identity; a Slice
 * selecting one contiguous run of its input, and every output of a Split on an axis with only
 * extent-1 axes before it, each at an offset that keeps FA_ARENA_ALIGN — fa_slice_contiguous,
 * fa_split_contiguous: view_off[t] its bytes into root[t]'s): the output
 * takes the bytes of the slot its input 0 is read from, and the node's kernel moves nothing (its
 * kernel becomes view_run, named FA_VIEW_KERNEL_NAME), when
 * both are plain (a blocked buffer's bytes are not the reshaped tensor's), of the same size (a
 * slice: within the input's), and
 * the input is an activation the run itself writes (not a graph input, set once and read by every
 * run, nor a constant). The pair becomes one plan item living from the input's producer to the
 * later of the two tensors' last readers; root[t] names the slot whose bytes slot t uses. ONNX
 * Runtime's CPU Reshape is registered the same way, its output an alias of input 0
 * (KernelDefBuilder().Alias(0, 0), onnxruntime/core/providers/cpu/tensor/reshape.cc). Ours
 * copied: GPT-2's legacy export at sequence 64 spent 41-55 us of a ~0.55 ms fused iteration in its
 * four post-GEMM reshape copies (bench/README.md, "Views"). Nothing writes a view's bytes in place afterwards:
 * merge_inplace refuses bytes that a view still reads. Returns the number of items left. */
static int merge_views(cpu_exec *e, plan_item *it, int n, int *root, uint64_t *view_off)
{
    const fa_graph *g = e->g;
    int *item = malloc(((size_t)e->n_slots + 1) * sizeof *item);
    if (!item) return n; /* no views: every tensor keeps bytes of its own, every node its kernel */
    for (int t = 0; t < e->n_slots; t++) item[t] = -1;
    for (int i = 0; i < n; i++) item[it[i].t] = i;
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *nd = g->nodes[g->topo[k]];
        if (!nd->op || nd->n_inputs < 1 || nd->inputs[0] < 0 || nd->n_outputs < 1 || nd->n_outputs > 64) continue;
        /* its views: output 0 of an alias op at offset 0; a contiguous Slice (fa_slice_contiguous:
         * a channel split at batch 1) or every output of a contiguous Split (fa_split_contiguous)
         * at its offset into the input's bytes, when that keeps the arena's alignment — all of a
         * node's outputs or none (its kernel either moves nothing or runs) */
        int ys[64], nv = 0;
        uint64_t subs[64];
        bool ok = true;
        bool whole = (nd->op->flags & FA_OPF_ALIAS) || fa_pad_identity(g, nd) ||
                     fa_transpose_identity(g, nd); /* the whole input, unchanged */
        if (whole) {
            ys[0] = nd->outputs[0], subs[0] = 0, nv = 1;
        } else if (fa_slice_contiguous(g, nd, &subs[0])) {
            ys[0] = nd->outputs[0], nv = 1;
        } else if (!*nd->domain && !strcmp(nd->op_type, "Split")) {
            for (int o = 0; o < nd->n_outputs && ok; o++) {
                ok = fa_split_contiguous(g, nd, o, &subs[o]);
                ys[o] = nd->outputs[o];
            }
            nv = ok ? nd->n_outputs : 0;
        }
        if (!nv) continue;
        int r = e->in_slot[e->in_off[nd->id]];
        const slot *sr = &e->slots[r], *s0 = &e->slots[root[r]];
        uint64_t br = 0;
        ok = sr->first_def >= 0 && s0->first_def >= 0 && item[root[r]] >= 0 && sr->layout == FA_LAYOUT_PLAIN &&
             slot_bytes(e, r, &br);
        for (int v = 0; v < nv && ok; v++) {
            int y = ys[v];
            const slot *sy = y >= 0 ? &e->slots[y] : NULL;
            uint64_t by;
            ok = sy && !(g->tensors[y]->flags & FA_TENSOR_CONST) && sy->first_def == k && item[y] >= 0 &&
                 sy->layout == FA_LAYOUT_PLAIN && sr->v.dtype == sy->v.dtype && subs[v] % FA_ARENA_ALIGN == 0 &&
                 slot_bytes(e, y, &by) && (whole ? br == by : subs[v] + by <= br);
        }
        if (!ok) continue;
        for (int v = 0; v < nv; v++) {
            int y = ys[v];
            plan_item *pr = &it[item[root[r]]], *py = &it[item[y]];
            if (py->b > pr->b) pr->b = py->b;
            root[y] = root[r];
            view_off[y] = view_off[r] + subs[v];
            py->t = -1; /* dropped below */
            item[y] = -1;
        }
        e->kernels[nd->id].run = view_run; /* its state, if any, still goes with destroy */
        e->kernels[nd->id].name = FA_VIEW_KERNEL_NAME;
        e->kernels[nd->id].impl = NULL;
    }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (it[i].t >= 0) it[m++] = it[i];
    free(item);
    return m;
}

/* In-place outputs (fa_kernel.inplace: oneDNN's sum post-op, dst += conv, with dst holding the
 * residual): output 0 of node k takes the bytes of the slot its input inplace_input is read from
 * when that slot is an activation the run itself writes (not a graph input, which is set once and
 * read by every run), node k is its last reader, no other input of k reads it, and both have the
 * same size and layout. The pair becomes one plan item living from the input's producer to the
 * output's last reader; root[t] names the slot whose bytes slot t uses (t itself when none).
 * Saves the copy of the residual into dst per residual block and that much of the arena (ONNX
 * Runtime's allocation planner reuses an input's buffer for such outputs the same way). Returns
 * the number of items left. */
static int merge_inplace(const cpu_exec *e, plan_item *it, int n, int *root, uint64_t *view_off)
{
    const fa_graph *g = e->g;
    int *item = malloc(((size_t)e->n_slots + 1) * sizeof *item);
    if (!item) return n; /* no merging: every tensor keeps bytes of its own */
    for (int t = 0; t < e->n_slots; t++) item[t] = -1;
    for (int i = 0; i < n; i++) item[it[i].t] = i;
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *nd = g->nodes[g->topo[k]];
        const fa_kernel *kern = &e->kernels[nd->id];
        if (!kern->inplace || nd->n_outputs < 1 || nd->outputs[0] < 0 || kern->inplace_input < 0 ||
            kern->inplace_input >= nd->n_inputs || nd->inputs[kern->inplace_input] < 0)
            continue;
        int y = nd->outputs[0], r = e->in_slot[e->in_off[nd->id] + kern->inplace_input];
        const slot *sr = &e->slots[r], *sy = &e->slots[y];
        /* the bytes are written over only when no view of them (merge_views) is read after k */
        if (sr->first_def < 0 || sr->last_use != k || sy->first_def != k || item[y] < 0 || item[root[r]] < 0 ||
            it[item[root[r]]].b > k || sr->layout != sy->layout)
            continue;
        bool other = false;
        for (int i = 0; i < nd->n_inputs; i++)
            if (i != kern->inplace_input && nd->inputs[i] >= 0 && e->in_slot[e->in_off[nd->id] + i] == r) other = true;
        uint64_t br, by;
        if (other || !slot_bytes(e, r, &br) || !slot_bytes(e, y, &by) || br != by) continue;
        plan_item *pr = &it[item[root[r]]], *py = &it[item[y]];
        if (py->b > pr->b) pr->b = py->b;
        root[y] = root[r];
        view_off[y] = view_off[r];
        py->t = -1; /* dropped below */
        item[y] = -1;
    }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (it[i].t >= 0) it[m++] = it[i];
    free(item);
    return m;
}

/* The static memory plan: an offset in one arena for every planned activation — graph inputs
 * (live throughout), and each non-constant output of a live node from its producer to its last
 * consumer (graph outputs to the end, unread outputs only during their node). A node's outputs
 * never share bytes with its inputs (both are live at its index), except an in-place output
 * (merge_inplace: a kernel that reads that input only as the output's initial value).
 * Placement is "greedy by size" (largest tensor first, at the lowest offset that does not overlap
 * a placed tensor whose lifetime intersects; Pisarchyk & Lee, "Efficient Memory Management for
 * Deep Neural Net Inference", 2020, the TensorFlow Lite arena planner): the arena is at least the
 * live peak computed by check_planned_peak and usually equal to it. O(n^2 log n) in tensors. */
static fa_status plan_memory(fa_ctx *ctx, cpu_exec *e)
{
    const fa_graph *g = e->g;
    plan_item *it = calloc((size_t)e->n_slots + 1, sizeof *it);
    int *near = calloc((size_t)e->n_slots + 1, sizeof *near);
    int *root = malloc(((size_t)e->n_slots + 1) * sizeof *root);
    uint64_t *view_off = calloc((size_t)e->n_slots + 1, sizeof *view_off); /* bytes into root's: a slice view */
    if (!it || !near || !root || !view_off) {
        free(it);
        free(near);
        free(root);
        free(view_off);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory planning activations");
    }
    for (int t = 0; t < g->n_tensors; t++) e->slots[t].first_def = INT32_MIN;
    int n = 0;
    uint64_t b;
    for (int i = 0; i < g->n_inputs; i++) {
        int t = g->inputs[i];
        if ((g->tensors[t]->flags & FA_TENSOR_CONST) || e->slots[t].first_def != INT32_MIN) continue;
        if (!slot_bytes(e, t, &b)) b = 0; /* refused earlier by check_planned_peak */
        e->slots[t].first_def = -1;
        it[n++] = (plan_item){t, -1, INT32_MAX, b};
    }
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *nd = g->nodes[g->topo[k]];
        for (int o = 0; o < nd->n_outputs; o++) {
            int t = nd->outputs[o];
            if (t < 0 || (g->tensors[t]->flags & FA_TENSOR_CONST) || e->slots[t].first_def != INT32_MIN) continue;
            if (!slot_bytes(e, t, &b)) b = 0;
            e->slots[t].first_def = k;
            int last = e->slots[t].last_use;
            it[n++] = (plan_item){t, k, last < k ? k : last, b};
        }
    }
    for (int r = g->n_tensors; r < e->n_slots; r++) { /* reordered copies: first_def/last_use set by plan_layouts */
        if (!slot_bytes(e, r, &b)) b = 0;
        it[n++] = (plan_item){r, e->slots[r].first_def, e->slots[r].last_use, b};
    }
    for (int t = 0; t < e->n_slots; t++) root[t] = t;
    n = merge_views(e, it, n, root, view_off);
    n = merge_inplace(e, it, n, root, view_off);
    for (int i = 0; i < n; i++) {
        uint64_t r = it[i].bytes ? it[i].bytes : 1;
        it[i].bytes = (r + FA_ARENA_ALIGN - 1) / FA_ARENA_ALIGN * FA_ARENA_ALIGN;
        if (it[i].bytes < r) it[i].bytes = UINT64_MAX - FA_ARENA_ALIGN + 1; /* overflow: refused below */
    }
    qsort(it, (size_t)n, sizeof *it, item_by_size_desc);
    uint64_t top = 0;
    fa_status st = FA_OK;
    for (int i = 0; i < n && !st; i++) {
        int m = 0;
        for (int j = 0; j < i; j++)
            if (it[j].a <= it[i].b && it[i].a <= it[j].b) near[m++] = it[j].t;
        qsort_r(near, (size_t)m, sizeof *near, placed_by_offset, e->slots);
        uint64_t off = 0;
        for (int j = 0; j < m; j++) {
            const slot *q = &e->slots[near[j]];
            if (q->off >= off && q->off - off >= it[i].bytes) break; /* the gap before q fits */
            if (q->off + q->bytes > off) off = q->off + q->bytes;
        }
        slot *s = &e->slots[it[i].t];
        s->off = off;
        s->bytes = it[i].bytes;
        if (off + it[i].bytes < off)
            st = fa_ctx_error(ctx, FA_ERR_NOMEM, "tensor '%s': the activation arena's size overflows",
                              g->tensors[it[i].t < g->n_tensors ? it[i].t : e->lp.reorders[it[i].t - g->n_tensors].tensor]->name);
        else if (off + it[i].bytes > top) top = off + it[i].bytes;
    }
    for (int t = 0; t < e->n_slots; t++) /* in-place outputs: the bytes of the tensor they took over */
        if (root[t] != t) {
            e->slots[t].off = e->slots[root[t]].off + view_off[t];
            e->slots[t].bytes = e->slots[root[t]].bytes - view_off[t];
        }
    free(it);
    free(near);
    free(root);
    free(view_off);
    e->arena_bytes = top;
    return st;
}

/* Check the planned arena against --max-memory and the memory available, allocate it and write
 * every page once, so that no timed iteration page-faults. */
static fa_status alloc_arena(fa_ctx *ctx, cpu_exec *e)
{
    uint64_t bytes = e->arena_bytes;
    if (e->opt.max_memory && bytes > e->opt.max_memory)
        return fa_ctx_error(ctx, FA_ERR_NOMEM,
                            "the run's static memory plan needs an arena of %llu bytes (live tensors peak at %llu), more than "
                            "--max-memory %llu",
                            (unsigned long long)bytes, (unsigned long long)e->live_peak_bytes, (unsigned long long)e->opt.max_memory);
    const char *why = NULL;
    uint64_t dflt = e->opt.max_memory ? 0 : fa_mem_default_limit(&why);
    if (dflt && bytes > dflt)
        return fa_ctx_error(ctx, FA_ERR_NOMEM,
                            "the run's static memory plan needs an arena of %llu bytes (live tensors peak at %llu), more than "
                            "the limit of %llu bytes %s; a larger limit: --max-memory BYTES",
                            (unsigned long long)bytes, (unsigned long long)e->live_peak_bytes, (unsigned long long)dflt, why);
    char src[1200];
    uint64_t avail = fa_mem_available(src, sizeof src);
    if (bytes > avail || bytes > SIZE_MAX - FA_ARENA_ALIGN)
        return fa_ctx_error(ctx, FA_ERR_NOMEM,
                            "the run's static memory plan needs an arena of %llu bytes (live tensors peak at %llu), more than "
                            "the %llu bytes of memory available (%s)",
                            (unsigned long long)bytes, (unsigned long long)e->live_peak_bytes, (unsigned long long)avail, src);
    void *p = NULL;
    if (posix_memalign(&p, FA_ARENA_ALIGN, bytes ? (size_t)bytes : FA_ARENA_ALIGN) != 0)
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "cannot allocate the %llu-byte activation arena", (unsigned long long)bytes);
    memset(p, 0, bytes ? (size_t)bytes : FA_ARENA_ALIGN); /* touch every page now, not in a timed iteration */
    e->arena = p;
    for (int t = 0; t < e->n_slots; t++)
        if (e->slots[t].first_def != INT32_MIN) e->slots[t].v.data = e->arena + e->slots[t].off;
    return FA_OK;
}

/* Kernels too small to share: a node whose whole work is under FA_CPU_SMALL_FLOPS floating-point
 * operations and FA_CPU_SMALL_BYTES bytes moved (fa_node_cost: inputs incl. weights + outputs) is
 * created and run on one thread — our kernels get threads = 1, and oneDNN's primitives are
 * created and executed with omp_get_max_threads() == 1 (oneDNN 2.6 with the OpenMP runtime sizes
 * its jit kernels' work split from omp_get_max_threads() when the primitive is created and runs
 * parallel(1, f) inline, with no parallel region; src/common/dnnl_thread.hpp). Why: once the
 * other threads sleep (docs/runtime.md) every parallel region wakes them through a futex, and on a
 * loaded machine waits for one that is descheduled — oneDNN's GlobalAveragePool over
 * [1, 96, 14, 14] measured 0.024 ms on one thread and 8 ms with two at load 5 (bench_dnnl_ops).
 * The bounds are ~20 us of one core here (1 MFLOP at ~50 GFLOP/s a conv reaches on one AVX-512
 * core; 256 KiB at ~15 GB/s), the order of a futex wake-up on an idle machine: under them a second
 * thread cannot save what waking it costs. They cover MobileNetV3/EfficientNet/RegNetY's
 * squeeze-excitation ops ([N, C, 1, 1] pools, 1x1 convs, activations, the per-channel Mul's
 * operand) and the 7x7 tail. A reorder kernel of the fused plan is small when it moves (reads and
 * writes) under FA_CPU_SMALL_BYTES. FA_SMALL_KERNELS_SHARED=1 in the environment turns this off
 * (measured against it in bench/README.md). */
#define FA_CPU_SMALL_FLOPS 1000000ull
#define FA_CPU_SMALL_BYTES 262144ull

static bool small_kernel(const cpu_exec *e, const fa_graph *g, const fa_node *n)
{
    if (e->small_shared) return false;
    fa_op_cost c;
    fa_node_cost(g, n, &c);
    return c.flops < FA_CPU_SMALL_FLOPS && c.bytes_read + c.bytes_written < FA_CPU_SMALL_BYTES;
}


/* Node n's kernel into *kern: the kernel provider's, else (blocked_layouts) a kernel on the
 * target's blocked layout where one takes the node, else oneDNN's or the registry's on plain
 * tensors. *layout: the layout the chosen kernel reads and writes. */
static fa_status create_kernel(fa_ctx *ctx, cpu_exec *e, const fa_node *n, fa_kernel *kern, fa_layout *layout, fa_layout *in0)
{
    const fa_graph *g = e->g;
    bool handled = false;
    *layout = *in0 = FA_LAYOUT_PLAIN;
    if (e->opt.provider) {
        fa_custom_kernel ck = {0};
        fa_status pst = e->opt.provider(e->opt.provider_user, ctx, g, n, &ck, &handled);
        if (pst) return pst;
        if (handled) {
            custom_state *cs = calloc(1, sizeof *cs);
            if (!cs) {
                if (ck.destroy) ck.destroy(ck.state);
                return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            }
            cs->k = ck;
            kern->state = cs;
            kern->run = custom_run;
            kern->destroy = custom_destroy;
            kern->name = ck.name;
            /* the layout its code was generated for (fa_custom_kernel.layout): its following
             * inputs are read and its output written there, the reorders planned around it */
            if ((unsigned)ck.layout < FA_LAYOUT_COUNT) *layout = *in0 = ck.layout;
            return FA_OK;
        }
    }
    fa_layout want = e->opt.blocked_layouts ? fa_cpu_preferred_layout(g, n, e->opt.plan_layout) : FA_LAYOUT_PLAIN;
    /* A convolution starts a blocked region (the layout is what makes it fast); every other op
     * only continues one: when an activation it reads already is in it, so that a plain Relu
     * between plain ops never pays two reorders, and when that moves no more bytes than running
     * plain (fa_layout_continues; fa_layout_plan_make places alike) */
    if (want != FA_LAYOUT_PLAIN && !fa_layout_starts_region(n) &&
        !fa_layout_continues(g, n, want, e->opt.plan_layout, e->tlayout, e->out_layout, fa_cpu_preferred_layout))
        want = FA_LAYOUT_PLAIN;
    if (want != FA_LAYOUT_PLAIN) {
        fa_layout first = want;
        fa_status st = fa_dnnl_ops_kernel_create_blocked(ctx, g, n, want, kern, &handled);
        if (!st && !handled) st = fa_dnnl_kernel_create_blocked(ctx, g, n, want, e->opt.conv_tactic, kern, &first, &handled);
        if (st) return st;
        if (handled) {
            *layout = want;
            *in0 = first;
            return FA_OK;
        }
    }
    fa_status st = fa_dnnl_ops_kernel_create(ctx, g, n, false, kern, &handled);
    if (!st && !handled) st = fa_cpu_gemv_kernel_create(ctx, g, n, kern, &handled); /* batch-1 products */
    if (!st && !handled) st = fa_dnnl_kernel_create(ctx, g, n, e->node_threads[n->id], e->opt.conv_tactic, kern, &handled);
    if (st || handled) return st;
    if (!n->op || !n->op->kernel)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "unsupported op %s at node '%s' on cpu", n->op_type, n->name);
    kern->run = ref_run;
    kern->name = n->op->name;
    return FA_OK;
}

/* From the nodes' layouts: runtime/layout.c's plan, a slot (the reordered copy) and a reorder
 * kernel per reorder, the slot each node input is read from, the plain slot of each graph
 * output. A reorder runs just before its first consumer (after the last node for a graph
 * output), so its copy lives from that consumer's topo index to the last one reading it. */
static fa_status plan_layouts(fa_ctx *ctx, cpu_exec *e)
{
    const fa_graph *g = e->g;
    fa_status st = fa_layout_plan_of(ctx, g, e->node_layout, e->node_in0, e->in_layout, e->out_layout, &e->lp);
    if (st) return st;
    int nr = e->lp.n_reorders, nin = 0;
    for (int i = 0; i < g->n_nodes; i++) nin += g->nodes[i] ? g->nodes[i]->n_inputs : 0;
    slot *ns = realloc(e->slots, sizeof *ns * (size_t)(g->n_tensors + nr + 1));
    if (ns) e->slots = ns;
    e->rk = calloc((size_t)nr + 1, sizeof *e->rk);
    e->rnode = calloc((size_t)nr + 1, sizeof *e->rnode);
    e->rname = calloc((size_t)nr + 1, sizeof *e->rname);
    e->reorder_threads = calloc((size_t)nr + 1, sizeof *e->reorder_threads);
    e->in_off = calloc((size_t)g->n_nodes + 1, sizeof *e->in_off);
    e->in_slot = calloc((size_t)nin + 1, sizeof *e->in_slot);
    e->out_slot = calloc((size_t)g->n_outputs + 1, sizeof *e->out_slot);
    int *topo_of = calloc((size_t)g->n_nodes + 1, sizeof *topo_of);
    if (!ns || !e->rk || !e->rnode || !e->rname || !e->reorder_threads || !e->in_off || !e->in_slot || !e->out_slot || !topo_of) {
        free(topo_of);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory planning layouts");
    }
    e->n_slots = g->n_tensors + nr;
    for (int t = 0; t < g->n_tensors; t++) e->slots[t].layout = e->lp.layout[t];
    for (int k = 0; k < g->n_topo; k++) topo_of[g->topo[k]] = k;
    for (int i = 0, off = 0; i < g->n_nodes; i++) {
        e->in_off[i] = off;
        off += g->nodes[i] ? g->nodes[i]->n_inputs : 0;
    }
    for (int r = 0; r < nr && !st; r++) {
        const fa_reorder *ro = &e->lp.reorders[r];
        slot *sl = &e->slots[g->n_tensors + r];
        memset(sl, 0, sizeof *sl);
        value_of_tensor(g->tensors[ro->tensor], &sl->v);
        sl->layout = ro->to;
        sl->first_def = ro->consumer >= 0 ? topo_of[ro->consumer] : g->n_topo;
        sl->last_use = ro->consumer >= 0 ? sl->first_def : INT32_MAX;
        uint64_t rb;
        int nt = e->reorder_threads[r] =
            !e->small_shared && tensor_bytes(g, ro->tensor, &rb) && 2 * rb < FA_CPU_SMALL_BYTES ? 1 : e->threads;
        if (nt != e->threads) omp_set_num_threads(nt);
        st = fa_cpu_reorder_kernel(ctx, &sl->v, ro->from, ro->to, &e->rk[r]);
        if (nt != e->threads) omp_set_num_threads(e->threads);
        if (st) break;
        size_t len = strlen(g->tensors[ro->tensor]->name) + 16;
        e->rname[r] = malloc(len);
        if (!e->rname[r]) {
            st = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            break;
        }
        snprintf(e->rname[r], len, FA_REORDER_NAME_FMT, g->tensors[ro->tensor]->name);
        e->rnode[r] = (fa_node){.id = -1, .name = e->rname[r], .op_type = FA_REORDER_OP, .domain = "", .n_inputs = 1,
                                .inputs = (int *)&ro->tensor, .opset = 0};
    }
    for (int k = 0; k < g->n_topo && !st; k++) { /* each input: the tensor itself, or its copy in the layout read */
        const fa_node *n = g->nodes[g->topo[k]];
        for (int i = 0; i < n->n_inputs; i++) {
            int x = n->inputs[i], at = x;
            bool follows = fa_layout_input_follows(g, n, i);
            fa_layout need = i == 0 && follows                                      ? e->node_in0[n->id]
                             : i > 0 && e->node_layout[n->id] != FA_LAYOUT_PLAIN && follows ? e->node_layout[n->id]
                                                                                            : FA_LAYOUT_PLAIN;
            if (x >= 0 && e->lp.layout[x] != need) {
                for (int r = 0; r < nr && at == x; r++)
                    if (e->lp.reorders[r].tensor == x && e->lp.reorders[r].to == need) {
                        at = g->n_tensors + r;
                        if (e->slots[at].last_use < k) e->slots[at].last_use = k;
                    }
                if (at == x) {
                    free(topo_of);
                    return fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': input %d has no planned reorder to %s", n->name, i,
                                        fa_layout_name(need));
                }
            }
            e->in_slot[e->in_off[n->id] + i] = at;
        }
    }
    for (int i = 0; i < g->n_outputs && !st; i++) {
        int y = g->outputs[i];
        e->out_slot[i] = y;
        for (int r = 0; r < nr && e->lp.layout[y] != e->out_layout[i]; r++)
            if (e->lp.reorders[r].tensor == y && e->lp.reorders[r].to == e->out_layout[i]) {
                /* the copy a consumer in that layout shares with the graph output (one reorder per
                 * tensor and layout): it lives past the run, as a graph output does, or a later
                 * tensor takes its bytes before the caller reads them */
                e->out_slot[i] = g->n_tensors + r;
                e->slots[g->n_tensors + r].last_use = INT32_MAX;
            }
    }
    free(topo_of);
    return st;
}

/* The boundary conversions, outside the timed run: a reorder plain -> layout per graph input kept
 * blocked (run by set_input / fill_inputs) and layout -> plain per graph output left blocked (run
 * by fa_exec_output into a plain buffer allocated here). */
static fa_status plan_boundaries(fa_ctx *ctx, cpu_exec *e)
{
    const fa_graph *g = e->g;
    e->in_rk = calloc((size_t)g->n_inputs + 1, sizeof *e->in_rk);
    e->out_rk = calloc((size_t)g->n_outputs + 1, sizeof *e->out_rk);
    e->out_plain = calloc((size_t)g->n_outputs + 1, sizeof *e->out_plain);
    e->out_plain_ok = calloc((size_t)g->n_outputs + 1, sizeof *e->out_plain_ok);
    if (!e->in_rk || !e->out_rk || !e->out_plain || !e->out_plain_ok)
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory planning layouts");
    for (int i = 0; i < g->n_inputs; i++) {
        int x = g->inputs[i];
        if (e->lp.layout[x] == FA_LAYOUT_PLAIN) continue;
        fa_status st = fa_cpu_reorder_kernel(ctx, &e->slots[x].v, FA_LAYOUT_PLAIN, e->lp.layout[x], &e->in_rk[i]);
        if (st) return fa_ctx_wrap(ctx, st, "graph input '%s' kept in %s: ", g->tensors[x]->name, fa_layout_name(e->lp.layout[x]));
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const slot *sl = &e->slots[e->out_slot[i]];
        if (sl->layout == FA_LAYOUT_PLAIN) continue;
        const char *nm = g->tensors[g->outputs[i]]->name;
        fa_status st = fa_cpu_reorder_kernel(ctx, &sl->v, sl->layout, FA_LAYOUT_PLAIN, &e->out_rk[i]);
        if (st) return fa_ctx_wrap(ctx, st, "graph output '%s' left in %s: ", nm, fa_layout_name(sl->layout));
        uint64_t b;
        void *p = NULL;
        if (!tensor_bytes(g, g->outputs[i], &b) || posix_memalign(&p, FA_ARENA_ALIGN, b ? (size_t)b : FA_ARENA_ALIGN))
            return fa_ctx_error(ctx, FA_ERR_NOMEM, "graph output '%s': no memory for its plain copy", nm);
        e->out_plain[i] = sl->v;
        e->out_plain[i].data = p;
        if (!e->out_ctx && !(e->out_ctx = fa_ctx_create())) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    return FA_OK;
}

/* The run as a table (dispatch_step), in the order fa_cpu_exec_run executes it: each reorder
 * just before its first consumer, in the order of the layout plan, then the node; the graph
 * outputs' reorders after the last node. Built once the arena is placed, so every value is final:
 * a run copies no argument and looks nothing up. */
static fa_status plan_dispatch(fa_ctx *ctx, cpu_exec *e)
{
    const fa_graph *g = e->g;
    int nr = e->lp.n_reorders;
    size_t nv = 2 * (size_t)nr;
    for (int k = 0; k < g->n_topo; k++) nv += (size_t)g->nodes[g->topo[k]]->n_inputs + (size_t)g->nodes[g->topo[k]]->n_outputs;
    e->steps = calloc((size_t)g->n_topo + (size_t)nr + 1, sizeof *e->steps);
    e->step_vals = calloc(nv + 1, sizeof *e->step_vals);
    if (!e->steps || !e->step_vals) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory preparing the run");
    fa_value *v = e->step_vals;
    int ri = 0, m = 0;
    for (int k = 0; k <= g->n_topo; k++) {
        const fa_node *n = k < g->n_topo ? g->nodes[g->topo[k]] : NULL;
        for (; ri < nr && (!n || e->lp.reorders[ri].consumer == n->id); ri++) {
            dispatch_step *d = &e->steps[m++];
            *d = (dispatch_step){.node = &e->rnode[ri], .rk = &e->rk[ri], .name = e->rk[ri].name, .in = v, .out = v + 1,
                                 .n_in = 1, .n_out = 1, .threads = e->reorder_threads[ri]};
            v[0] = e->slots[e->lp.reorders[ri].tensor].v;
            v[1] = e->slots[g->n_tensors + ri].v;
            v += 2;
        }
        if (!n) break;
        dispatch_step *d = &e->steps[m++];
        *d = (dispatch_step){.node = n, .kern = &e->kernels[n->id], .name = e->kernels[n->id].name, .in = v,
                             .out = v + n->n_inputs, .n_in = n->n_inputs, .n_out = n->n_outputs, .threads = e->node_threads[n->id]};
        for (int i = 0; i < n->n_inputs; i++) /* the tensor itself, or its copy in the layout read */
            if (n->inputs[i] >= 0) d->in[i] = e->slots[e->in_slot[e->in_off[n->id] + i]].v;
        for (int o = 0; o < n->n_outputs; o++) /* its place in the arena (static plan) */
            if (n->outputs[o] >= 0) d->out[o] = e->slots[n->outputs[o]].v;
        v += n->n_inputs + n->n_outputs;
    }
    e->n_steps = m;
    /* the stretches of one-thread steps (small kernels) that a step on the pool's threads ends */
    e->stretch_end = calloc((size_t)m + 1, sizeof *e->stretch_end);
    e->stretch_ns = calloc((size_t)m + 1, sizeof *e->stretch_ns);
    if (!e->stretch_end || !e->stretch_ns) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory preparing the run");
    for (int k = 0; k < m && e->threads > 1; k++) {
        if (e->steps[k].threads != 1 || (k > 0 && e->steps[k - 1].threads == 1)) continue;
        int t = k;
        while (t < m && e->steps[t].threads == 1) t++;
        if (t < m) e->stretch_end[k] = t;
    }
    return FA_OK;
}

/* A copy of the caller's boundary layouts (NULL: all PLAIN) into *out, n entries. */
static fa_layout *copy_layouts(const fa_layout *src, int n)
{
    fa_layout *l = calloc((size_t)n + 1, sizeof *l);
    if (l && src) memcpy(l, src, sizeof *l * (size_t)n);
    return l;
}

fa_status fa_cpu_exec_create(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *opt, void **out)
{
    fa_exec_options o = *opt;
    o.target = FA_TARGET_CPU;
    if ((unsigned)o.plan_layout >= FA_LAYOUT_COUNT)
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "plan layout %d out of range", (int)o.plan_layout);
    if (o.blocked_layouts && o.plan_layout == FA_LAYOUT_PLAIN) o.plan_layout = fa_cpu_blocked_layout(); /* the default */
    if (!o.blocked_layouts) o.plan_layout = FA_LAYOUT_PLAIN;
    /* the algorithm of the plan's 3x3 convolutions on blocked executors, of the unfused ones on
     * plain executors (fa_conv_tactic) */
    o.conv_tactic = fa_conv_tactic_effective(o.conv_tactic);
    cpu_exec *e = calloc(1, sizeof *e);
    if (!e) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory creating executor");
    e->g = g;
    e->opt = o;
    e->threads = o.threads > 0 ? o.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (e->threads < 1) e->threads = 1;
    omp_set_num_threads(e->threads);
    e->small_shared = getenv("FA_SMALL_KERNELS_SHARED") != NULL;
    const char *wa = getenv("FA_WAKE_AHEAD");
    e->wake_ahead = !(wa && !strcmp(wa, "0"));
    e->kernels = calloc((size_t)g->n_nodes + 1, sizeof *e->kernels);
    e->node_threads = calloc((size_t)g->n_nodes + 1, sizeof *e->node_threads);
    e->slots = calloc((size_t)g->n_tensors + 1, sizeof *e->slots);
    e->node_layout = calloc((size_t)g->n_nodes + 1, sizeof *e->node_layout);
    e->node_in0 = calloc((size_t)g->n_nodes + 1, sizeof *e->node_in0);
    e->tlayout = calloc((size_t)g->n_tensors + 1, sizeof *e->tlayout);
    e->in_layout = copy_layouts(o.input_layouts, g->n_inputs);
    e->out_layout = copy_layouts(o.output_layouts, g->n_outputs);
    e->opt.input_layouts = e->opt.output_layouts = NULL; /* borrowed during create only */
    if (!e->kernels || !e->node_threads || !e->slots || !e->node_layout || !e->node_in0 || !e->tlayout || !e->in_layout || !e->out_layout) {
        fa_cpu_exec_free(e);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory creating executor");
    }
    e->n_slots = g->n_tensors;
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
    for (int i = 0; i < g->n_inputs; i++) /* an input handed blocked: its consumers may continue the layout */
        if (!(g->tensors[g->inputs[i]]->flags & FA_TENSOR_CONST)) e->tlayout[g->inputs[i]] = e->in_layout[i];
    /* the whole plan's peak (plain sizes), before anything of that size is allocated */
    fa_status st = check_planned_peak(ctx, e);
    /* release_plain_weights: input slots of each constant, to match against its derived readers */
    int *const_uses = o.release_plain_weights && !o.blocked_layouts ? calloc((size_t)g->n_tensors + 1, sizeof(int)) : NULL;
    for (int k = 0; const_uses && k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0) const_uses[n->inputs[i]]++;
    }
    for (int k = 0; k < g->n_topo && !st; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        int nt = e->node_threads[n->id] = small_kernel(e, g, n) ? 1 : e->threads;
        if (nt != e->threads) omp_set_num_threads(nt); /* oneDNN sizes its split at creation */
        st = create_kernel(ctx, e, n, &e->kernels[n->id], &e->node_layout[n->id], &e->node_in0[n->id]);
        if (nt != e->threads) omp_set_num_threads(e->threads);
        if (!st && n->n_outputs > 0 && n->outputs[0] >= 0) e->tlayout[n->outputs[0]] = e->node_layout[n->id];
        for (int i = 0; !st && const_uses && i < n->n_inputs; i++) {
            /* the constant's last consumer has its kernel: if every consumer reads a derived copy,
             * the plain bytes go (fa_blob_drop_plain checks that nothing else holds them) */
            int t = n->inputs[i];
            fa_tensor *W = t >= 0 ? g->tensors[t] : NULL;
            if (!W || !(W->flags & FA_TENSOR_CONST) || (W->flags & (FA_TENSOR_GRAPH_INPUT | FA_TENSOR_GRAPH_OUTPUT)) ||
                e->slots[t].last_use != k || !W->blob || !W->data)
                continue;
            if (fa_blob_drop_plain(W->blob, const_uses[t])) {
                W->data = NULL; /* the caller reads no constant data after create (the option's promise) */
                e->slots[t].v.data = NULL;
            }
        }
    }
    free(const_uses);
    if (!st) st = plan_layouts(ctx, e);
    if (!st) st = plan_boundaries(ctx, e);
    if (!st) st = plan_memory(ctx, e);
    if (!st) st = alloc_arena(ctx, e);
    if (!st) st = plan_dispatch(ctx, e);
    if (st) {
        fa_cpu_exec_free(e);
        return st;
    }
    *out = e;
    return FA_OK;
}

void fa_cpu_exec_free(void *state)
{
    cpu_exec *e = state;
    if (!e) return;
    if (e->kernels)
        for (int n = 0; n < e->g->n_nodes; n++)
            if (e->kernels[n].destroy) e->kernels[n].destroy(&e->kernels[n]);
    for (int r = 0; e->rk && r < e->lp.n_reorders; r++)
        if (e->rk[r].destroy) e->rk[r].destroy(e->rk[r].state);
    for (int r = 0; e->rname && r < e->lp.n_reorders; r++) free(e->rname[r]);
    for (int i = 0; e->in_rk && i < e->g->n_inputs; i++)
        if (e->in_rk[i].destroy) e->in_rk[i].destroy(e->in_rk[i].state);
    for (int i = 0; e->out_rk && i < e->g->n_outputs; i++)
        if (e->out_rk[i].destroy) e->out_rk[i].destroy(e->out_rk[i].state);
    for (int i = 0; e->out_plain && i < e->g->n_outputs; i++) free(e->out_plain[i].data);
    free(e->in_rk);
    free(e->out_rk);
    free(e->out_plain);
    free(e->out_plain_ok);
    free(e->in_layout);
    free(e->out_layout);
    fa_ctx_free(e->out_ctx);
    fa_layout_plan_free(&e->lp);
    free(e->rk);
    free(e->rnode);
    free(e->rname);
    free(e->in_off);
    free(e->in_slot);
    free(e->out_slot);
    free(e->node_layout);
    free(e->node_in0);
    free(e->tlayout);
    free(e->kernels);
    free(e->node_threads);
    free(e->reorder_threads);
    free(e->slots);
    free(e->steps);
    free(e->stretch_end);
    free(e->stretch_ns);
    free(e->step_vals);
    free(e->arena);
    free(e);
}

/* One boundary conversion of tensor t (in -> out) with reorder kernel rk. */
static fa_status run_boundary_reorder(fa_ctx *ctx, const cpu_exec *e, const fa_custom_kernel *rk, int t, const fa_value *in,
                                      fa_value *out)
{
    fa_node rn = {.id = -1, .name = e->g->tensors[t]->name, .op_type = FA_REORDER_OP, .domain = "", .n_inputs = 1,
                  .inputs = &t};
    fa_status st = rk->run(rk->state, ctx, &rn, in, 1, out, 1, e->threads);
    return st ? fa_ctx_wrap(ctx, st, "reordering '%s' (%s): ", e->g->tensors[t]->name, rk->name) : FA_OK;
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
        char want[128], got[160];
        size_t o = 0;
        for (int d = 0; d < v->rank && o + 24 < sizeof got; d++)
            o += (size_t)snprintf(got + o, sizeof got - o, "%s%lld", d ? "x" : "", (long long)v->dims[d]);
        if (!v->rank) snprintf(got, sizeof got, "a scalar");
        return fa_ctx_error(ctx, FA_ERR_INPUT, "input '%s': expected %s [%s], got %s [%s]", t->name, fa_dtype_name(t->dtype),
                            fa_tensor_shape_str(t, want, sizeof want), fa_dtype_name(v->dtype), got);
    }
    slot *s = &e->slots[tid];
    if (!s->v.data) /* a constant graph input: its data is the initializer */
        return fa_ctx_error(ctx, FA_ERR_USAGE, "input '%s' is a constant of the graph", t->name);
    if (e->in_rk[i].run) { /* kept blocked: reordered once here, outside the timed run */
        fa_value vin = s->v, vout = s->v;
        vin.data = v->data;
        fa_status st = run_boundary_reorder(ctx, e, &e->in_rk[i], tid, &vin, &vout);
        if (st) return st;
    } else {
        memcpy(s->v.data, v->data, (size_t)fa_value_numel(v) * fa_dtype_size(v->dtype));
    }
    s->set = true;
    return FA_OK;
}

fa_status fa_cpu_exec_fill_inputs(fa_ctx *ctx, void *state, uint64_t seed)
{
    cpu_exec *e = state;
    fa_rng r;
    fa_rng_seed(&r, seed);
    for (int i = 0; i < e->g->n_inputs; i++) {
        int tid = e->g->inputs[i];
        if (e->slots[tid].first_def == INT32_MIN) continue; /* a constant input */
        if (!e->in_rk[i].run) {
            fa_graph_fill_input(e->g, tid, &r, &e->slots[tid].v);
            e->slots[tid].set = true;
            continue;
        }
        fa_value pv = e->slots[tid].v; /* kept blocked: filled plain, then set as any input */
        uint64_t b;
        if (!tensor_bytes(e->g, tid, &b) || !(pv.data = malloc(b ? (size_t)b : 1)))
            return fa_ctx_error(ctx, FA_ERR_NOMEM, "input '%s': no memory to fill it", e->g->tensors[tid]->name);
        fa_graph_fill_input(e->g, tid, &r, &pv);
        fa_status st = fa_cpu_exec_set_input(ctx, e, i, &pv);
        free(pv.data);
        if (st) return st;
    }
    return FA_OK;
}

/* One step of the run (its kernel, or a reorder), the observer told before and after. */
static fa_status run_step(fa_ctx *ctx, const dispatch_step *d, const fa_exec_observer *obs)
{
    if (obs && obs->kernel_begin) obs->kernel_begin(obs->user, d->node, d->name);
    fa_status st = d->kern ? d->kern->run(ctx, d->kern, d->node, d->in, d->n_in, d->out, d->n_out, d->threads)
                           : d->rk->run(d->rk->state, ctx, d->node, d->in, 1, d->out, 1, d->threads);
    if (obs && obs->kernel_end) obs->kernel_end(obs->user, d->node, d->name);
    if (st && d->kern) { /* the node named once: a kernel's own message may already start with it */
        char own[512];
        snprintf(own, sizeof own, "node '%s' (%s): ", d->node->name, d->node->op_type);
        if (!strncmp(fa_ctx_errmsg(ctx), own, strlen(own))) st = fa_ctx_wrap(ctx, st, "executing ");
        else st = fa_ctx_wrap(ctx, st, "executing %s", own);
    }
    else if (st) st = fa_ctx_wrap(ctx, st, "executing %s: ", d->node->name);
    return st;
}

/* Wake-ahead (issue 35): a stretch of one-thread steps (small kernels: a squeeze-excitation
 * block's pool, 1x1 convolutions on [1, C, 1, 1] and activations) leaves the pool's other threads
 * idle; past GOMP_SPINCOUNT's spins (~26 us here, cli/main.c) they sleep, and the step on the
 * pool's threads that ends the stretch pays their futex wake-up: EfficientNet-B0's per-channel
 * Mul after its SE block measured 50-99 us in the model against 14 us alone, half of it gone with
 * 20,000 spins (docs/runtime.md "Threads and waiting"). So a stretch that took at least
 * FA_WAKE_AHEAD_MIN_NS in the last run, and at most FA_WAKE_AHEAD_MAX_NS, runs inside a parallel
 * region of the pool's threads: thread 0 (the caller's thread) runs its steps, one thread each as
 * before (oneDNN runs parallel(1, f) inline, and our small kernels open no region), while the
 * others wait on a flag, spinning at most 2x the stretch's last duration, and leave with it; the
 * step after finds them spinning in libgomp, not asleep. The bounds: under ~15 us the pool's own
 * spin still covers the stretch; beyond 200 us a wake-up is a small share of what spinning would
 * cost a loaded machine's other processes. FA_WAKE_AHEAD=0 in the environment turns it off. */
#define FA_WAKE_AHEAD_MIN_NS 15000ull
#define FA_WAKE_AHEAD_MAX_NS 200000ull

static int wake_ahead_forced = -1; /* fa_cpu_wake_ahead_force */

void fa_cpu_wake_ahead_force(int mode) { wake_ahead_forced = mode < 0 ? -1 : mode > 0; }

/* Whether stretch s runs with the pool awake (see above). */
static bool stretch_awake(const cpu_exec *e, int s)
{
    if (wake_ahead_forced >= 0) return wake_ahead_forced;
    uint64_t last = e->stretch_ns[s];
    return e->wake_ahead && last >= FA_WAKE_AHEAD_MIN_NS && last <= FA_WAKE_AHEAD_MAX_NS;
}

static fa_status run_stretch_awake(fa_ctx *ctx, const cpu_exec *e, int s, int t, const fa_exec_observer *obs)
{
    fa_status st = FA_OK;
    int done = 0;
    uint64_t spin_ns = 2 * e->stretch_ns[s] + FA_WAKE_AHEAD_MIN_NS;
#pragma omp parallel num_threads(e->threads) shared(st, done)
    {
        if (omp_get_thread_num() == 0) {
            omp_set_num_threads(1); /* this task's count: the small kernels' (created with it) */
            for (int k = s; k < t && !st; k++) st = run_step(ctx, &e->steps[k], obs);
            __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
        } else {
            uint64_t t0 = fa_now_ns();
            for (unsigned i = 1; !__atomic_load_n(&done, __ATOMIC_ACQUIRE); i++) {
                __builtin_ia32_pause();
                if (!(i & 63) && fa_now_ns() - t0 > spin_ns) break;
            }
        }
    }
    return st;
}

fa_status fa_cpu_exec_run(fa_ctx *ctx, void *state, const fa_exec_observer *obs)
{
    cpu_exec *e = state;
    const fa_graph *g = e->g;
    for (int i = 0; i < g->n_inputs; i++) {
        const slot *s = &e->slots[g->inputs[i]];
        if (s->first_def != INT32_MIN && !s->set)
            return fa_ctx_error(ctx, FA_ERR_USAGE, "input '%s' was not set", g->tensors[g->inputs[i]]->name);
    }
    e->ran = false;
    memset(e->out_plain_ok, 0, sizeof *e->out_plain_ok * (size_t)g->n_outputs);
    int cur = e->threads; /* OpenMP's thread count, set only where it changes between two kernels */
    fa_status st = FA_OK;
    for (int s = 0; s < e->n_steps && !st;) {
        int t = e->stretch_end[s];
        if (t > s) { /* a stretch of one-thread steps that a step on the pool's threads ends */
            uint64_t t0 = fa_now_ns();
            if (stretch_awake(e, s)) {
                if (cur != e->threads) omp_set_num_threads(cur = e->threads);
                st = run_stretch_awake(ctx, e, s, t, obs);
            } else {
                if (cur != 1) omp_set_num_threads(cur = 1);
                for (int k = s; k < t && !st; k++) st = run_step(ctx, &e->steps[k], obs);
            }
            e->stretch_ns[s] = fa_now_ns() - t0;
            s = t;
            continue;
        }
        const dispatch_step *d = &e->steps[s++];
        if (d->threads != cur) omp_set_num_threads(cur = d->threads);
        st = run_step(ctx, d, obs);
    }
    if (cur != e->threads) omp_set_num_threads(e->threads);
    if (st) return st;
    e->ran = true;
    return FA_OK;
}

const fa_value *fa_cpu_exec_output(const void *state, int i)
{
    cpu_exec *e = (cpu_exec *)state; /* our own allocation: the plain copy is cached in it */
    if (i < 0 || i >= e->g->n_outputs) return NULL;
    const fa_value *v = &e->slots[e->out_slot[i]].v; /* in out_layout[i]: reordered after the last node if needed */
    if (!e->ran || !v->data) return NULL;
    if (!e->out_rk[i].run) return v;
    if (!e->out_plain_ok[i]) { /* left blocked by the run: converted now, outside it */
        if (run_boundary_reorder(e->out_ctx, e, &e->out_rk[i], e->g->outputs[i], v, &e->out_plain[i])) return NULL;
        e->out_plain_ok[i] = true;
    }
    return &e->out_plain[i];
}

fa_layout fa_cpu_exec_tensor_layout(const void *state, int tensor)
{
    const cpu_exec *e = state;
    return tensor >= 0 && tensor < e->g->n_tensors && e->lp.layout ? e->lp.layout[tensor] : FA_LAYOUT_PLAIN;
}

uint64_t fa_cpu_exec_peak_bytes(const void *state)
{
    return ((const cpu_exec *)state)->arena_bytes; /* read from the static plan */
}

const char *fa_cpu_exec_kernel_name(const void *state, const fa_node *n)
{
    return ((const cpu_exec *)state)->kernels[n->id].name;
}

const char *fa_cpu_exec_kernel_impl(const void *state, const fa_node *n)
{
    return ((const cpu_exec *)state)->kernels[n->id].impl;
}

int fa_cpu_exec_veto_tactics(void *state)
{
    cpu_exec *e = state;
    int n = 0;
    for (int i = 0; e && e->kernels && i < e->g->n_nodes; i++) n += fa_dnnl_kernel_veto_tactic(&e->kernels[i]);
    return n;
}

int fa_cpu_exec_reorders(const void *state)
{
    return ((const cpu_exec *)state)->lp.n_reorders;
}

int fa_cpu_exec_threads(const void *state)
{
    return ((const cpu_exec *)state)->threads;
}

/* The `k`-th CPU (mod its count) of mask m; -1 for an empty mask. */
static int nth_cpu(const cpu_set_t *m, int k)
{
    int n = CPU_COUNT(m);
    if (n < 1) return -1;
    k %= n;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, m) && k-- == 0) return c;
    return -1;
}

enum { EVICT_MAX_THREADS = 256 };
static pthread_mutex_t evict_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *evict_buf[EVICT_MAX_THREADS];
static size_t evict_bytes;
static uint64_t evict_count;

uint64_t fa_host_evict_l2(int threads)
{
    if (threads <= 0) threads = omp_get_max_threads();
    if (threads > EVICT_MAX_THREADS) threads = EVICT_MAX_THREADS;
    pthread_mutex_lock(&evict_lock);
    if (!evict_bytes) {
        long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        evict_bytes = (size_t)(l2 > 0 ? l2 : 1L << 20) * FA_HOST_EVICT_L2_FACTOR;
    }
    bool ok = true;
    for (int t = 0; t < threads && ok; t++)
        if (!evict_buf[t]) {
            evict_buf[t] = aligned_alloc(64, evict_bytes);
            if (evict_buf[t]) memset(evict_buf[t], t + 1, evict_bytes);
            ok = evict_buf[t] != NULL;
        }
    pthread_mutex_unlock(&evict_lock);
    if (!ok) return 0;
    unsigned long sum = 0;
    size_t n = evict_bytes;
#pragma omp parallel num_threads(threads) reduction(+ : sum)
    {
        const volatile unsigned char *b = evict_buf[omp_get_thread_num()];
        for (size_t i = 0; i < n; i += 64) sum += b[i];
    }
    __atomic_fetch_add(&evict_count, 1, __ATOMIC_RELAXED);
    return sum ? (uint64_t)n : 0;
}

uint64_t fa_host_l2_evictions(void)
{
    return __atomic_load_n(&evict_count, __ATOMIC_RELAXED);
}

bool fa_host_spread_threads(int threads)
{
    enum { MAX_SPREAD = 256 };
    if (threads <= 0) threads = omp_get_max_threads();
    if (threads < 2 || threads > MAX_SPREAD || omp_get_proc_bind() != omp_proc_bind_false) return false;
    int cpu[MAX_SPREAD], team = 0;
#pragma omp parallel num_threads(threads)
    {
        cpu[omp_get_thread_num()] = sched_getcpu();
#pragma omp single
        team = omp_get_num_threads();
    }
    bool shared = false;
    for (int i = 0; i < team && !shared; i++)
        for (int j = i + 1; j < team && !shared; j++) shared = cpu[i] >= 0 && cpu[i] == cpu[j];
    if (!shared) return false;
    int moved = 0;
#pragma omp parallel num_threads(team) reduction(+ : moved)
    {
        cpu_set_t own, one;
        bool pinned = false;
        if (pthread_getaffinity_np(pthread_self(), sizeof own, &own) == 0 && CPU_COUNT(&own) >= 2) {
            int c = nth_cpu(&own, omp_get_thread_num());
            CPU_ZERO(&one);
            if (c >= 0) CPU_SET(c, &one);
            pinned = c >= 0 && pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0; /* migrates now */
        }
#pragma omp barrier
        if (pinned) { /* the mask it had: the scheduler keeps it where it now is until it has reason to move it */
            pthread_setaffinity_np(pthread_self(), sizeof own, &own);
            moved++;
        }
    }
    return moved > 0;
}
