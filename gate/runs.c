/* gate/runs — run selection (which runs a gate compares) and loading a run as the gate sees
 * it: per-iteration samples, per-op times, the plan's clusters, kernel counts. */
#include "gate/gate-impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static int find_iter(const gate_run *g, int it)
{
    int lo = 0, hi = g->n_iters - 1;
    while (lo <= hi) {
        int m = (lo + hi) / 2;
        if (g->iters[m] == it) return m;
        if (g->iters[m] < it) lo = m + 1;
        else hi = m - 1;
    }
    return -1;
}

int fa_gate_find_op(const gate_run *g, const char *name)
{
    for (int i = 0; i < g->n_ops; i++)
        if (!strcmp(g->ops[i].name, name)) return i;
    return -1;
}

static fa_status load_ops(fa_ctx *ctx, gate_run *g, fa_arena *ar)
{
    CK(fa_store_get_timed_iters(ctx, g->st, g->info.id, ar, &g->iters, &g->n_iters));
    fa_op_iter_row *rows = NULL;
    size_t n = 0;
    CK(fa_store_get_op_iter_times(ctx, g->st, g->info.id, ar, &rows, &n));
    int ocap = 0;
    g->n_ops = 0;
    for (size_t i = 0; i < n; i++) {
        int it = find_iter(g, rows[i].iter);
        if (it < 0) continue;
        if (!g->n_ops || strcmp(g->ops[g->n_ops - 1].name, rows[i].op)) {
            if (g->n_ops == ocap) {
                int ncap = ocap ? ocap * 2 : 64;
                gate_op *no = fa_arena_alloc(ar, sizeof(gate_op) * (size_t)ncap);
                if (!no) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
                if (g->n_ops) memcpy(no, g->ops, sizeof(gate_op) * (size_t)g->n_ops);
                g->ops = no;
                ocap = ncap;
            }
            gate_op *op = &g->ops[g->n_ops++];
            op->name = rows[i].op;
            op->v = fa_arena_alloc(ar, sizeof(double) * (size_t)(g->n_iters ? g->n_iters : 1));
            if (!op->v) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            memset(op->v, 0, sizeof(double) * (size_t)(g->n_iters ? g->n_iters : 1));
        }
        g->ops[g->n_ops - 1].v[it] = rows[i].kernel_ns;
    }
    return FA_OK;
}

static int cmp_cluster_at(const void *a, const void *b)
{
    int x = (*(const fa_cluster *const *)a)->id, y = (*(const fa_cluster *const *)b)->id;
    return x < y ? -1 : x > y;
}

/* load_plan's body over the stored plan (its strings copied into ar: the plan is freed after). */
static fa_status load_plan_rows(fa_ctx *ctx, gate_run *g, fa_arena *ar, const fa_plan *plan, const fa_cluster_verdict *verdicts)
{
    g->plan_id = plan->plan_id;
    g->plan_target = fa_target_name(plan->opt.target);
    int n_crs = plan->n_clusters;
    /* the gate reports clusters in id order */
    const fa_cluster **order = fa_arena_alloc(ar, sizeof *order * (size_t)(n_crs + 1));
    if (!order) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n_crs; i++) order[i] = &plan->clusters[i];
    qsort(order, (size_t)n_crs, sizeof *order, cmp_cluster_at);
    /* node names */
    fa_node_row *nrows = NULL;
    size_t n_nrows = 0;
    CK(fa_store_get_nodes(ctx, g->st, g->info.id, false, ar, &nrows, &n_nrows));
    int n_nodes = 0;
    for (size_t i = 0; i < n_nrows; i++)
        if (nrows[i].id + 1 > n_nodes) n_nodes = nrows[i].id + 1;
    const char **names = fa_arena_alloc(ar, sizeof(char *) * (size_t)(n_nodes + 1));
    if (!names) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    memset(names, 0, sizeof(char *) * (size_t)(n_nodes + 1));
    for (size_t i = 0; i < n_nrows; i++)
        if (nrows[i].id >= 0) names[nrows[i].id] = nrows[i].name;
    /* clusters */
    g->cl = fa_arena_alloc(ar, sizeof(gate_cluster) * (size_t)(n_crs + 1));
    if (!g->cl) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    memset(g->cl, 0, sizeof(gate_cluster) * (size_t)(n_crs + 1));
    fa_buf b;
    fa_buf_init(&b);
    for (int ci = 0; ci < n_crs; ci++) {
        const fa_cluster *cr = order[ci];
        const fa_cluster_verdict *cv = &verdicts[cr - plan->clusters];
        gate_cluster *c = &g->cl[g->n_clusters++];
        c->id = cr->id;
        c->kind = fa_cluster_kind_name(cr->kind);
        c->status = fa_cluster_status_name(cv->status);
        c->reason = cv->reason ? fa_arena_strdup(ar, cv->reason) : NULL;
        c->registers = cv->registers;
        c->spill_bytes = cv->spill_bytes;
        c->max_rel_error = cv->max_rel_error < 0 ? NAN : cv->max_rel_error;
        c->label = cr->label ? fa_arena_strdup(ar, cr->label) : c->kind;
        c->accepted = cv->status == FA_CLUSTER_ACCEPTED;
        if ((cv->reason && !c->reason) || !c->label) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        /* member node names (an id without a stored node reads "#ID") */
        int nm = cr->n_members;
        const char **mem = fa_arena_alloc(ar, sizeof(char *) * (size_t)(nm + 1));
        if (!mem) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        for (int i = 0; i < nm; i++) {
            int id = cr->members[i];
            char tmp[32];
            snprintf(tmp, sizeof tmp, "#%d", id);
            mem[i] = id >= 0 && id < n_nodes && names[id] ? names[id] : fa_arena_strdup(ar, tmp);
        }
        c->members = mem;
        c->n_members = nm;
        const char **sorted = fa_arena_alloc(ar, sizeof(char *) * (size_t)(nm + 1));
        if (sorted && nm) {
            memcpy(sorted, mem, sizeof(char *) * (size_t)nm);
            qsort(sorted, (size_t)nm, sizeof(char *), cmp_str);
        }
        fa_buf_reset(&b);
        fa_buf_printf(&b, "%s|", c->label);
        for (int i = 0; i < nm && sorted; i++) fa_buf_printf(&b, "%s%s", i ? "," : "", sorted[i]);
        c->key = fa_arena_strdup(ar, b.data ? b.data : "");
        fa_buf_reset(&b);
        fa_buf_printf(&b, "'%s' (", c->label);
        for (int i = 0; i < nm; i++) {
            if (i == 6 && nm > 8) {
                fa_buf_printf(&b, ", ... %d more", nm - 6);
                break;
            }
            fa_buf_printf(&b, "%s%s", i ? ", " : "", mem[i]);
        }
        fa_buf_puts(&b, ")");
        c->display = fa_arena_strdup(ar, b.data ? b.data : "");
        if (b.oom || !c->key || !c->display || !c->label) {
            fa_buf_free(&b);
            return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        }
    }
    fa_buf_free(&b);
    /* benchmark samples of this plan */
    fa_bench_series *bs = NULL;
    size_t n_bs = 0;
    CK(fa_store_get_bench_series(ctx, g->st, g->info.id, g->plan_id, ar, &bs, &n_bs));
    g->bench_fused = g->bench_baseline = NULL;
    g->n_bench_fused = g->n_bench_baseline = 0;
    for (size_t i = 0; i < n_bs; i++) {
        if (bs[i].subject == FA_BENCH_BASELINE && bs[i].cluster_id == -1) {
            g->bench_baseline = bs[i].samples_ns;
            g->n_bench_baseline = bs[i].n;
        }
        if (bs[i].subject == FA_BENCH_FUSED && bs[i].cluster_id == -1) {
            g->bench_fused = bs[i].samples_ns;
            g->n_bench_fused = bs[i].n;
        }
        if (bs[i].subject != FA_BENCH_CLUSTER_FUSED) continue;
        for (int k = 0; k < g->n_clusters; k++)
            if (g->cl[k].id == bs[i].cluster_id) {
                g->cl[k].fused = bs[i].samples_ns;
                g->cl[k].n_fused = bs[i].n;
            }
    }
    return FA_OK;
}

/* The newest plan's clusters with labels (clusters.label), member names (nodes) and
 * cluster-fused samples. */
static fa_status load_plan(fa_ctx *ctx, gate_run *g, fa_arena *ar)
{
    g->plan_id = 0;
    fa_plan *plan = NULL;
    fa_cluster_verdict *verdicts = NULL;
    CK(fa_store_get_latest_plan(ctx, g->st, g->info.id, &plan, &verdicts));
    if (!plan) return FA_OK;
    fa_status s = load_plan_rows(ctx, g, ar, plan, verdicts);
    fa_plan_free(plan);
    return s;
}

fa_status fa_gate_load_run(fa_ctx *ctx, fa_store *st, int64_t id, fa_arena *ar, gate_run *g)
{
    memset(g, 0, sizeof *g);
    g->st = st;
    g->path = fa_store_path(st);
    g->fused_run = -1;
    CK(fa_store_get_run(ctx, st, id, ar, &g->info));
    if (g->info.kind && !strcmp(g->info.kind, "fused"))
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: run %" PRId64 " is the fused model's trace (%s); gate its baseline run instead", g->path,
                            id, g->info.tag ? g->info.tag : "kind 'fused'");
    g->is_trace = g->info.kind && !strcmp(g->info.kind, "import");
    if (g->is_trace) { /* what an imported trace holds: its advice (docs/ci.md "Imported traces") */
        fa_trace_advice *a = NULL;
        fa_status s = fa_trace_advise_run(ctx, st, id, NULL, &a);
        if (s) return fa_ctx_wrap(ctx, s, "%s: imported trace run %" PRId64 ": ", g->path, id);
        g->has_advice = !a->no_gpu_activity && a->n_kernels > 0;
        g->t_kernels = a->n_kernels;
        g->t_outside = a->n_outside_steps;
        g->t_kernel_ns = a->kernel_ns;
        g->t_steps = a->n_steps;
        g->t_step_ns = a->step_ns;
        g->t_launch_per_kernel_ns = a->launch_per_kernel_ns;
        g->t_launch_latency_ns = a->launch_latency_ns;
        memcpy(g->t_class_ns, a->class_ns, sizeof g->t_class_ns);
        fa_trace_advice_free(a);
    }
    CK(fa_store_get_range_durations(ctx, st, id, "iteration", ar, &g->iter_ns, &g->n_iter_ns));
    CK(load_ops(ctx, g, ar));
    CK(fa_store_get_kernels_per_iter(ctx, st, id, &g->kpi_min, &g->kpi_max, &g->kpi_mode));
    CK(load_plan(ctx, g, ar));
    /* the fused model's own trace (finished 'ok') */
    CK(fa_store_get_fused_run(ctx, st, id, true, &g->fused_run));
    g->fkpi_mode = -1;
    if (g->fused_run >= 0) {
        CK(fa_store_get_kernels_per_iter(ctx, st, g->fused_run, &g->fkpi_min, &g->fkpi_max, &g->fkpi_mode));
        CK(fa_store_get_range_durations(ctx, st, g->fused_run, "iteration", ar, &g->fused_iter_ns, &g->n_fused_iter_ns));
    }
    return FA_OK;
}

bool fa_gate_same_model(const fa_run_info *a, const fa_run_info *b)
{
    if (a->model_sha256 && b->model_sha256 && *a->model_sha256 && *b->model_sha256)
        return !strcmp(a->model_sha256, b->model_sha256);
    return a->model_path && b->model_path && !strcmp(a->model_path, b->model_path);
}

fa_status fa_gate_pick_runs(fa_ctx *ctx, fa_store *st, const char *tag, const char *exclude_tag,
                            const int64_t *exclude_ids, int n_exclude, const fa_run_info *same_model, int max,
                            int64_t *out, int *n_out)
{
    fa_arena *ar = fa_arena_create(4096);
    if (!ar) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_run_info *runs = NULL;
    size_t n_runs = 0;
    fa_status s = fa_store_list_runs(ctx, st, ar, &runs, &n_runs); /* newest first */
    int found = 0;
    for (size_t k = 0; !s && k < n_runs && found < max; k++) {
        const fa_run_info *ri = &runs[k];
        if (!ri->status || strcmp(ri->status, "ok") || (ri->kind && !strcmp(ri->kind, "fused"))) continue;
        bool skip = false;
        for (int i = 0; i < n_exclude && !skip; i++) skip = exclude_ids[i] == ri->id;
        if (skip) continue;
        if (tag && !(ri->tag && !strcmp(ri->tag, tag))) continue;
        if (exclude_tag && ri->tag && !strcmp(ri->tag, exclude_tag)) continue;
        if (same_model && !fa_gate_same_model(ri, same_model)) continue;
        out[found++] = ri->id;
    }
    fa_arena_free(ar);
    if (s) return s;
    if (!found) {
        fa_buf b;
        fa_buf_init(&b);
        fa_buf_printf(&b, "%s: no finished run", fa_store_path(st));
        if (tag) fa_buf_printf(&b, " with tag '%s'", tag);
        if (exclude_tag) fa_buf_printf(&b, " without tag '%s'", exclude_tag);
        for (int i = 0; i < n_exclude; i++)
            fa_buf_printf(&b, "%s%" PRId64, i ? ", " : " other than run ", exclude_ids[i]);
        if (same_model) fa_buf_printf(&b, " of model %s", same_model->model_path ? same_model->model_path : "?");
        s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s", b.data ? b.data : "no matching run");
        fa_buf_free(&b);
        return s;
    }
    *n_out = found;
    return FA_OK;
}

fa_status fa_gate_pick_run(fa_ctx *ctx, fa_store *st, int64_t run_id, const char *tag, const char *exclude_tag,
                           int64_t exclude_id, const fa_run_info *same_model, int64_t *out)
{
    if (run_id > 0) {
        fa_arena *ar = fa_arena_create(4096);
        if (!ar) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        fa_run_info ri;
        fa_status s = fa_store_get_run(ctx, st, run_id, ar, &ri);
        fa_arena_free(ar);
        if (!s) *out = run_id;
        return s;
    }
    int n = 0;
    return fa_gate_pick_runs(ctx, st, tag, exclude_tag, exclude_id > 0 ? &exclude_id : NULL, exclude_id > 0, same_model,
                             1, out, &n);
}
