/* applier/apply — per-cluster codegen/compile, verification against the unfused ops on the same
 * inputs, interleaved benchmarks, accept/reject, and the end-to-end fused-vs-unfused measurement. */
#include "applier-impl.h"

#include "collector/collector.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void fa_apply_options_default(fa_apply_options *o)
{
    memset(o, 0, sizeof *o);
    o->tolerance = 1e-5;
    o->iters = 20;
    o->warmup = 3;
    o->seed = 1;
    o->inject_wrong_cluster = -1;
}

void fa_sample_stats_of(const double *samples, int n, fa_sample_stats *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n <= 0) return;
    double *s = malloc(sizeof(double) * (size_t)n);
    if (!s) return;
    memcpy(s, samples, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), fa_apply_cmp_double);
    out->median_ns = fa_apply_quantile(s, n, 0.5);
    out->p25_ns = fa_apply_quantile(s, n, 0.25);
    out->p75_ns = fa_apply_quantile(s, n, 0.75);
    out->min_ns = s[0];
    free(s);
}

void fa_apply_result_free(fa_apply_result *r)
{
    if (!r) return;
    free(r->baseline_samples);
    free(r->fused_samples);
    free(r->cluster_ids);
    free(r->cluster_unfused);
    free(r->cluster_fused);
    fa_trace_free(r->fused_trace);
    fa_graph_free(r->fused_graph);
    free(r);
}

/* ---- values captured from the unfused run, by tensor name ---- */

/* ---- provider for FusedKernel nodes ---- */

typedef struct kernel_table {
    const fa_plan *p;
    fa_compiled **compiled; /* by cluster index, NULL when not compiled */
} kernel_table;

typedef struct fused_state {
    fa_fused_fn fn;
    bool inject;
} fused_state;

static fa_status fused_run(void *state, fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in, fa_value *out,
                           int n_out, int threads)
{
    fused_state *fs = state;
    const void *ip[64];
    void *op[16];
    for (int i = 0; i < n_in && i < 64; i++) ip[i] = in[i].data;
    for (int i = 0; i < n_out && i < 16; i++) op[i] = out[i].data;
    fs->fn(ip, op, threads);
    if (fs->inject && out[0].dtype == FA_DTYPE_FLOAT) { /* test hook: a deliberately wrong kernel */
        float *y = out[0].data;
        int64_t ne = fa_value_numel(&out[0]);
        for (int64_t i = 0; i < ne; i++) y[i] += 1.0f;
    }
    (void)ctx;
    (void)n;
    return FA_OK;
}

static fa_status provide(void *user, fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_custom_kernel *out, bool *provided)
{
    kernel_table *kt = user;
    *provided = false;
    if (strcmp(n->domain, "ai.fuse-advise") || strcmp(n->op_type, "FusedKernel")) return FA_OK;
    int64_t cid = fa_node_attr_int(n, "cluster", -1);
    for (int i = 0; i < kt->p->n_clusters; i++)
        if (kt->p->clusters[i].id == cid) {
            if (!kt->compiled[i])
                return fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': cluster %lld has no compiled kernel", n->name, (long long)cid);
            fused_state *fs = calloc(1, sizeof *fs);
            if (!fs) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            fs->fn = kt->compiled[i]->fn;
            fs->inject = fa_node_attr_int(n, "inject", 0) != 0;
            out->name = "generated:fused";
            out->run = fused_run;
            out->destroy = free;
            out->state = fs;
            *provided = true;
            return FA_OK;
        }
    (void)g;
    return fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': unknown cluster %lld", n->name, (long long)cid);
}

/* ---- helpers ---- */

static fa_status make_exec(fa_ctx *ctx, const fa_graph *g, kernel_table *kt, int threads, fa_exec **e)
{
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = threads, .provider = provide, .provider_user = kt};
    return fa_exec_create(ctx, g, &eo, e);
}

/* Set every input of executor e (graph sub) from the map by name. */
static int out_index(const fa_graph *sub, const char *name)
{
    for (int i = 0; i < sub->n_outputs; i++)
        if (!strcmp(sub->tensors[sub->outputs[i]]->name, name)) return i;
    return -1;
}

static fa_status exec_once(fa_ctx *ctx, const void *e) { return fa_exec_run(ctx, (fa_exec *)e, NULL); }

/* The generated kernels of the tried clusters order[0..n): C source each (kept in
 * OUT_DIR/kernels/), all compiled by one compiler process into the private kernel cache. A
 * cluster whose kernel cannot be generated or built is rejected with the reason; the run fails
 * only when the cache itself is refused (a folder another user can write) or unusable. */
static fa_status compile_generated(fa_ctx *ctx, const fa_graph *g, fa_plan *p, const fa_apply_options *opt,
                                   const int *order, int n, kernel_table *kt)
{
    fa_kernel_source *srcs = calloc((size_t)n + 1, sizeof *srcs);
    fa_buf *bufs = calloc((size_t)n + 1, sizeof *bufs);
    fa_codegen_info *infos = calloc((size_t)n + 1, sizeof *infos);
    int *which = calloc((size_t)n + 1, sizeof *which);
    fa_compiled **got = calloc((size_t)n + 1, sizeof *got);
    char **errs = calloc((size_t)n + 1, sizeof *errs);
    fa_status s = srcs && bufs && infos && which && got && errs ? FA_OK : fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    int m = 0;
    for (int k = 0; k < n && !s; k++) {
        fa_cluster *c = &p->clusters[order[k]];
        if (!fa_apply_needs_codegen(c)) continue;
        fa_ctx *cctx = fa_ctx_create();
        fa_buf_init(&bufs[m]);
        fa_status cs = fa_codegen_c(cctx, g, c, p->hash, &bufs[m], &infos[m]);
        if (!cs) cs = fa_apply_write_kernel_source(cctx, opt->out_dir, infos[m].name, "c", &bufs[m]);
        if (cs) {
            c->status = FA_CLUSTER_REJECTED_ERROR;
            fa_apply_set_reason(p, c, "could not build the fused kernel: %s", fa_ctx_errmsg(cctx));
            fa_buf_free(&bufs[m]);
        } else {
            srcs[m] = (fa_kernel_source){bufs[m].data, bufs[m].len, infos[m].name};
            which[m++] = order[k];
        }
        fa_ctx_free(cctx);
    }
    fa_kernel_cache *kc = NULL;
    if (!s && m > 0) s = fa_kernel_cache_open(ctx, opt->cache_dir, opt->cache_max_bytes, &kc);
    if (!s && m > 0) s = fa_compile_kernels(ctx, kc, m, srcs, got, errs);
    for (int j = 0; j < m; j++) {
        fa_cluster *c = &p->clusters[which[j]];
        if (!s && got[j]) kt->compiled[which[j]] = got[j];
        else if (!s) {
            c->status = FA_CLUSTER_REJECTED_ERROR;
            fa_apply_set_reason(p, c, "could not build the fused kernel: %s", errs[j] ? errs[j] : "?");
        } else fa_compiled_free(got[j]);
        free(errs[j]);
        fa_buf_free(&bufs[j]);
    }
    fa_kernel_cache_free(kc);
    free(srcs);
    free(bufs);
    free(infos);
    free(which);
    free(got);
    free(errs);
    return s;
}

fa_status fa_apply(fa_ctx *ctx, const fa_graph *g, fa_plan *p, const fa_apply_options *opt_in, fa_apply_result **out)
{
    uint64_t t0 = fa_now_ns();
    fa_apply_options opt;
    if (opt_in) opt = *opt_in;
    else fa_apply_options_default(&opt);
    if (opt.iters < 3) opt.iters = 3;
    fa_status s = fa_apply_options_check(ctx, &opt);
    if (s) return s;
    int *order = malloc(sizeof(int) * (size_t)(p->n_clusters + 1));
    if (!order) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_value_map vm = {g, NULL};
    kernel_table kt = {p, NULL};
    fa_exec *cap = NULL;
    fa_graph *capg = NULL;
    fa_apply_result *res = calloc(1, sizeof *res);
    kt.compiled = calloc((size_t)p->n_clusters + 1, sizeof *kt.compiled);
    vm.vals = calloc((size_t)g->n_tensors + 1, sizeof *vm.vals);
    double *sa = malloc(sizeof(double) * (size_t)opt.iters), *sb = malloc(sizeof(double) * (size_t)opt.iters);
    int *extra = malloc(sizeof(int) * (size_t)(g->n_tensors + 1));
    if (!res || !kt.compiled || !vm.vals || !sa || !sb || !extra) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        goto done;
    }

    /* 1. Capture: the unfused graph with every cluster boundary tensor (inputs, outputs, epilogue
     *    operands) as an output, so every cluster's sub-graph can be fed the values it sees in
     *    the whole model. Graph inputs are our own fill; constants live in the graph. */
    /*    (the clusters beyond the stage's cap are set NOT_TRIED first: nothing is kept for them) */
    int n_prop = fa_apply_select(p, &opt, order);
    int ne2 = fa_apply_boundary_tensors(g, p, extra);
    if (ne2 < 0) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        goto done;
    }
    s = fa_fused_graph_scoped(ctx, g, p, NULL, 0, false, false, -1, extra, ne2, &capg);
    if (!s) s = make_exec(ctx, capg, &kt, opt.threads, &cap);
    if (s) goto done;
    {
        s = fa_value_map_fill_inputs(ctx, &vm, opt.seed);
        for (int i = 0; i < g->n_inputs && !s; i++) s = fa_exec_set_input(ctx, cap, i, &vm.vals[g->inputs[i]]);
        if (!s) s = fa_exec_run(ctx, cap, NULL);
        for (int i = 0; i < capg->n_outputs && !s; i++) {
            int id = fa_graph_find_tensor(g, capg->tensors[capg->outputs[i]]->name);
            const fa_value *v = fa_exec_output(cap, i);
            if (id >= 0 && v && !vm.vals[id].data) s = fa_value_map_copy(ctx, &vm.vals[id], v);
        }
        if (s) goto done;
    }
    fa_exec_free(cap);
    cap = NULL;

    /* 2. The clusters tried (ranked by predicted saving, capped), their generated kernels in one
     *    compiler process, then per cluster within the time budget: verify, benchmark, decide. */
    s = compile_generated(ctx, g, p, &opt, order, n_prop, &kt);
    if (s) goto done;
    res->n_cluster_samples = opt.iters;
    res->cluster_ids = calloc((size_t)n_prop + 1, sizeof(int));
    res->cluster_unfused = calloc((size_t)(n_prop + 1) * (size_t)opt.iters, sizeof(double));
    res->cluster_fused = calloc((size_t)(n_prop + 1) * (size_t)opt.iters, sizeof(double));
    if (!res->cluster_ids || !res->cluster_unfused || !res->cluster_fused) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        goto done;
    }
    int done_n = 0;
    for (int k = 0; k < n_prop; k++) {
        int i = order[k];
        fa_cluster *c = &p->clusters[i];
        if (opt.progress) opt.progress(opt.progress_user, "apply", ++done_n, n_prop);
        if (c->status != FA_CLUSTER_PROPOSED) { /* its kernel failed to build */
            res->rejected++;
            continue;
        }
        if (fa_apply_budget_spent(p, c, &opt, t0)) continue;
        fa_ctx *cctx = fa_ctx_create(); /* a cluster's failure must not poison the run's context */
        fa_status cs = FA_OK;
        fa_graph *gu = NULL, *gf = NULL;
        fa_exec *eu = NULL, *ef = NULL;
        int ids[1] = {c->id};
        if (!cs) cs = fa_fused_graph_scoped(cctx, g, p, ids, 1, true, false, -1, c->outputs, c->n_outputs, &gu);
        if (!cs) cs = fa_fused_graph_scoped(cctx, g, p, ids, 1, true, true, opt.inject_wrong_cluster, c->outputs, c->n_outputs, &gf);
        if (!cs) cs = make_exec(cctx, gu, &kt, opt.threads, &eu);
        if (!cs) cs = make_exec(cctx, gf, &kt, opt.threads, &ef);
        char slow[600];
        if (!cs && fa_apply_slow_library_epilogue(gf, ef, slow, sizeof slow)) {
            /* asked before any benchmark: a library epilogue off oneDNN's fast path is not proposed */
            c->status = FA_CLUSTER_REFUSED;
            fa_apply_set_reason(p, c, "%s", slow);
            fa_exec_free(eu);
            fa_exec_free(ef);
            fa_graph_free(gu);
            fa_graph_free(gf);
            fa_ctx_free(cctx);
            res->rejected++;
            continue;
        }
        if (!cs) cs = fa_value_map_set_inputs(cctx, eu, gu, &vm);
        if (!cs) cs = fa_value_map_set_inputs(cctx, ef, gf, &vm);
        if (!cs) cs = fa_exec_run(cctx, eu, NULL);
        if (!cs) cs = fa_exec_run(cctx, ef, NULL);
        if (cs) {
            c->status = FA_CLUSTER_REJECTED_ERROR;
            fa_apply_set_reason(p, c, "could not build the fused kernel: %s", fa_ctx_errmsg(cctx));
        } else {
            /* verify every cluster output against the unfused sub-graph */
            double err = 0;
            for (int k = 0; k < c->n_outputs; k++) {
                const char *nm = g->tensors[c->outputs[k]]->name;
                int iu = out_index(gu, nm), iff = out_index(gf, nm);
                if (iu < 0 || iff < 0) { err = INFINITY; break; }
                double e = fa_apply_rel_error(fa_exec_output(ef, iff), fa_exec_output(eu, iu));
                if (e > err) err = e;
            }
            c->max_rel_error = err;
            if (!(err <= opt.tolerance)) {
                c->status = FA_CLUSTER_REJECTED_VERIFY;
                fa_apply_set_reason(p, c, "fused output differs from the unfused ops: max relative error %.3g > tolerance %.3g", err,
                           opt.tolerance);
            } else {
                cs = fa_apply_bench_pair(cctx, exec_once, eu, ef, opt.warmup, opt.iters, sa, sb);
                if (cs) {
                    c->status = FA_CLUSTER_REJECTED_ERROR;
                    fa_apply_set_reason(p, c, "benchmark failed: %s", fa_ctx_errmsg(cctx));
                } else {
                    int k = res->n_cluster_bench++;
                    res->cluster_ids[k] = c->id;
                    memcpy(res->cluster_unfused + (size_t)k * (size_t)opt.iters, sa, sizeof(double) * (size_t)opt.iters);
                    memcpy(res->cluster_fused + (size_t)k * (size_t)opt.iters, sb, sizeof(double) * (size_t)opt.iters);
                    fa_apply_judge(p, c, sa, sb, opt.iters, err, NULL);
                }
            }
        }
        fa_exec_free(eu);
        fa_exec_free(ef);
        fa_graph_free(gu);
        fa_graph_free(gf);
        fa_ctx_free(cctx);
        if (c->status == FA_CLUSTER_ACCEPTED) res->accepted++;
        else res->rejected++;
        if (c->status == FA_CLUSTER_ACCEPTED) res->predicted_saving_ns += c->est_saving_ns;
    }

    /* 3. End to end: every accepted cluster at once vs the unfused graph, same inputs. What the
     *    user deploys is the whole model: when it is not measurably faster (the clusters' judge
     *    rule on the paired end-to-end samples), back off — drop the accepted clusters with the
     *    smallest measured saving (1, then 2, 4, ... at a time) and measure again, until the
     *    fused model wins or no cluster is left; then the plan is reported as a loss. */
    for (int round = 0;; round++) {
        fa_graph *gfull = NULL;
        fa_exec *eb = NULL, *efz = NULL;
        res->e2e_max_rel_error = 0;
        free(res->baseline_samples);
        free(res->fused_samples);
        res->baseline_samples = res->fused_samples = NULL;
        fa_trace_free(res->fused_trace);
        res->fused_trace = NULL;
        s = fa_fused_graph(ctx, g, p, NULL, 0, &gfull);
        if (!s) s = make_exec(ctx, g, &kt, opt.threads, &eb);
        if (!s) s = make_exec(ctx, gfull, &kt, opt.threads, &efz);
        for (int i = 0; i < g->n_inputs && !s; i++) s = fa_exec_set_input(ctx, eb, i, &vm.vals[g->inputs[i]]);
        if (!s) s = fa_value_map_set_inputs(ctx, efz, gfull, &vm);
        if (!s) s = fa_exec_run(ctx, eb, NULL);
        if (!s) s = fa_exec_run(ctx, efz, NULL);
        if (!s) {
            for (int o = 0; o < g->n_outputs; o++) {
                int k = out_index(gfull, g->tensors[g->outputs[o]]->name);
                if (k < 0) continue;
                double e = fa_apply_rel_error(fa_exec_output(efz, k), fa_exec_output(eb, o));
                if (e > res->e2e_max_rel_error) res->e2e_max_rel_error = e;
            }
            res->baseline_samples = malloc(sizeof(double) * (size_t)opt.iters);
            res->fused_samples = malloc(sizeof(double) * (size_t)opt.iters);
            if (!res->baseline_samples || !res->fused_samples) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        }
        if (!s) {
            if (opt.progress) opt.progress(opt.progress_user, "e2e", 0, 1);
            s = fa_apply_bench_pair(ctx, exec_once, eb, efz, opt.warmup, opt.iters, res->baseline_samples, res->fused_samples);
            if (opt.progress) opt.progress(opt.progress_user, "e2e", 1, 1);
        }
        bool again = false;
        if (!s) {
            res->n_samples = opt.iters;
            fa_sample_stats_of(res->baseline_samples, opt.iters, &res->baseline);
            fa_sample_stats_of(res->fused_samples, opt.iters, &res->fused);
            res->speedup = res->fused.median_ns > 0 ? res->baseline.median_ns / res->fused.median_ns : 0;
            res->measured_saving_ns = res->baseline.median_ns - res->fused.median_ns;
            res->peak_bytes_baseline = fa_exec_peak_bytes(eb);
            res->peak_bytes_fused = fa_exec_peak_bytes(efz);
            res->kernels_baseline = g->n_topo;
            res->kernels_fused = gfull->n_topo;
            res->e2e_wins = res->accepted > 0 && fa_apply_e2e_wins(res->baseline_samples, res->fused_samples, opt.iters);
            res->e2e_loss = res->accepted > 0 && !res->e2e_wins;
            if (res->e2e_loss && round < 8) {
                fa_apply_back_off(p, res, round);
                again = true;
            }
            /* the fused model's own kernel trace, for the timeline and the roofline */
            if (!again) s = fa_collect_cpu(ctx, efz, gfull, 1, opt.iters, NULL, NULL, &res->fused_trace);
        }
        fa_exec_free(eb);
        fa_exec_free(efz);
        if (!s && !again) res->fused_graph = gfull;
        else fa_graph_free(gfull);
        if (s || !again) break;
    }
done:
    fa_exec_free(cap);
    fa_graph_free(capg);
    fa_value_map_free(&vm);
    if (kt.compiled)
        for (int i = 0; i < p->n_clusters; i++) fa_compiled_free(kt.compiled[i]);
    free(kt.compiled);
    free(sa);
    free(sb);
    free(extra);
    free(order);
    if (s) {
        fa_apply_result_free(res);
        return s;
    }
    *out = res;
    return FA_OK;
}
