/* applier/apply — the apply stage over the execution target's table (runtime.h fa_target_iface):
 * per-cluster codegen in the target's language and compile by the target, verification against
 * the unfused ops on the same inputs, interleaved benchmarks, accept/reject, and the end-to-end
 * fused-vs-unfused measurement. One function for every target. */
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
    o->target = FA_TARGET_CPU;
    o->tolerance = 1e-5;
    o->iters = 20;
    o->warmup = FA_WARMUP_AUTO;
    o->seed = 1;
    o->inject_wrong_cluster = -1;
    o->inject_e2e_cluster = -1;
}

void fa_apply_result_free(fa_apply_result *r)
{
    if (!r) return;
    free(r->baseline_samples);
    free(r->fused_samples);
    free(r->cluster_ids);
    free(r->cluster_n_samples);
    free(r->cluster_unfused);
    free(r->cluster_fused);
    free(r->verdicts);
    fa_arena_free(r->arena);
    fa_trace_free(r->fused_trace);
    fa_trace_free(r->baseline_rounds_trace);
    fa_fused_map_free(&r->fused_map);
    fa_graph_free(r->fused_graph);
    free(r);
}

/* ---- kernel provider for FusedKernel nodes: the target's compiled fused kernels ---- */

typedef struct kernel_table {
    const fa_target_iface *t;
    const fa_plan *p;
    fa_fused_binary **bin; /* by cluster index, NULL when not compiled */
    unsigned char *bin_shared; /* by cluster index: bin[i] is another cluster's (not freed here) */
    fa_layout plan_layout;  /* the fused plan's layout (fa_apply_plan_layout; PLAIN: none) */
} kernel_table;

static fa_status provide(void *user, fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_custom_kernel *out, bool *provided)
{
    kernel_table *kt = user;
    *provided = false;
    if (strcmp(n->domain, FA_FUSED_DOMAIN) || strcmp(n->op_type, "FusedKernel")) return FA_OK;
    int64_t cid = fa_node_attr_int(n, "cluster", -1);
    for (int i = 0; i < kt->p->n_clusters; i++)
        if (kt->p->clusters[i].id == cid) {
            if (!kt->bin[i])
                return fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': cluster %lld has no compiled kernel", n->name, (long long)cid);
            fa_status s = fa_target_fused_node_kernel(ctx, kt->t, kt->bin[i], g, n, out);
            if (!s) *provided = true;
            return s;
        }
    return fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': unknown cluster %lld", n->name, (long long)cid);
}

/* ---- helpers ---- */

/* An executor on the apply target; the provider only when the graph has FusedKernel nodes.
 * fused: a fused plan's graph, run with the target's blocked layouts kept between kernels (the
 * unfused graphs keep plain tensors: the baseline). in_l / out_l: the boundary layouts of g's
 * inputs and outputs (fa_exec_options.input_layouts / output_layouts; NULL: plain). */
static fa_status make_exec(fa_ctx *ctx, const fa_graph *g, kernel_table *kt, int threads, bool fused, const fa_layout *in_l,
                           const fa_layout *out_l, fa_exec **e)
{
    fa_exec_options eo = fa_exec_options_measured(fa_target_id(kt->t), threads);
    eo.blocked_layouts = fused && kt->plan_layout != FA_LAYOUT_PLAIN;
    eo.plan_layout = kt->plan_layout;
    eo.input_layouts = in_l;
    eo.output_layouts = out_l;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && !strcmp(g->nodes[i]->op_type, "FusedKernel")) {
            eo.provider = provide;
            eo.provider_user = kt;
            break;
        }
    return fa_exec_create(ctx, g, &eo, e);
}

/* False with the target's sentence in why when it cannot run some live node of g. */
static bool target_runs(const fa_target_iface *t, const fa_graph *g, char *why, size_t cap)
{
    for (int k = 0; k < g->n_topo; k++)
        if (!fa_target_supports_node(t, g, g->nodes[g->topo[k]], why, cap)) return false;
    return true;
}

static int out_index(const fa_graph *sub, const char *name)
{
    for (int i = 0; i < sub->n_outputs; i++)
        if (!strcmp(sub->tensors[sub->outputs[i]]->name, name)) return i;
    return -1;
}

fa_status fa_apply_exec_once(fa_ctx *ctx, const void *e, bool timed, uint64_t *own_ns)
{
    (void)timed;
    if (own_ns) *own_ns = 0;
    return fa_exec_run(ctx, (fa_exec *)e, NULL);
}

/* The end-to-end rounds' fused side on cpu: its timed runs recorded as the fused model's trace
 * (fa_cpu_recorder), so no runs are added for it; the recorder's own time is taken out of each
 * run's, as out of the trace's stamps. */
typedef struct recorded_exec {
    fa_cpu_recorder *rec; /* NULL: a plain run (the baseline's side) */
    fa_exec *e;
} recorded_exec;

static fa_status exec_recorded(fa_ctx *ctx, const void *subject, bool timed, uint64_t *own_ns)
{
    const recorded_exec *re = subject;
    if (!re->rec) return fa_apply_exec_once(ctx, re->e, timed, own_ns);
    return fa_cpu_recorder_run(ctx, re->rec, re->e, timed, own_ns);
}

/* The text of a generated kernel that decides what it computes: src with its comments left out
 * and every occurrence of its own name replaced by '@' (malloc'd; NULL on OOM). Two clusters of
 * repeated layers get kernels that differ only in their name and in comments naming their
 * cluster and tensor ids; their code is the same. The only literals our generator writes are
 * fixed ones (extern "C", the tanhf_u35 symbol's asm text) with no comment opener inside, so a
 * comment is never taken from inside a literal. */
static char *kernel_text_key(const char *src, size_t len, const char *name)
{
    char *k = malloc(len + 1);
    if (!k) return NULL;
    size_t nl = strlen(name), o = 0;
    for (size_t i = 0; i < len;) {
        if (src[i] == '/' && i + 1 < len && src[i + 1] == '*') {
            const char *e = strstr(src + i + 2, "*/");
            i = e && (size_t)(e - src) + 2 <= len ? (size_t)(e - src) + 2 : len;
        } else if (src[i] == '/' && i + 1 < len && src[i + 1] == '/') {
            while (i < len && src[i] != '\n') i++;
        } else if (nl && i + nl <= len && !memcmp(src + i, name, nl)) {
            k[o++] = '@';
            i += nl;
        } else k[o++] = src[i++];
    }
    k[o] = 0;
    return k;
}

fa_status fa_apply_generate_batch(fa_ctx *ctx, const fa_target_iface *t, const fa_graph *g, const fa_plan *p,
                                  const int *ci, int n, fa_layout plan_layout, const fa_fused_compile_options *co,
                                  const char *out_dir, fa_generated *out)
{
    const char *ext = fa_target_kernel_lang(t) == FA_KERNEL_LANG_CUDA ? "cu" : "c";
    fa_fused_source *srcs = calloc((size_t)n + 1, sizeof *srcs);
    fa_buf *bufs = calloc((size_t)n + 1, sizeof *bufs);
    int *which = calloc((size_t)n + 1, sizeof *which);
    fa_fused_binary **got = calloc((size_t)n + 1, sizeof *got);
    char **errs = calloc((size_t)n + 1, sizeof *errs);
    char **keys = calloc((size_t)n + 1, sizeof *keys); /* by compiled source j: kernel_text_key */
    fa_status s = srcs && bufs && which && got && errs && keys ? FA_OK : fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_layout_plan lp = {0}; /* where the target's plan keeps g's tensors (all PLAIN without layouts) */
    if (!s && n > 0) s = fa_layout_plan_make(ctx, t, g, plan_layout, &lp);
    int m = 0;
    for (int k = 0; k < n; k++) {
        memset(&out[k], 0, sizeof out[k]);
        out[k].same_as = -1;
    }
    for (int k = 0; k < n && !s; k++) {
        const fa_cluster *c = &p->clusters[ci[k]];
        fa_ctx *cctx = fa_ctx_create();
        if (!cctx) {
            s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            break;
        }
        fa_buf_init(&bufs[m]);
        fa_kernel_desc d;
        fa_cluster_kernel_desc(c, &d);
        d.layout = fa_layout_of_generated(g, lp.layout, c->inputs, c->n_inputs, c->outputs, c->n_outputs);
        const char *lwhy = NULL;
        if (d.layout != FA_LAYOUT_PLAIN && !fa_codegen_kernel_supported(g, &d, fa_target_kernel_lang(t), &lwhy))
            d.layout = FA_LAYOUT_PLAIN; /* not generated in that layout: plain, its reorders planned around it */
        out[k].layout = d.layout;
        fa_status cs = fa_codegen_kernel(cctx, g, &d, fa_target_kernel_lang(t), p->hash, &bufs[m], &out[k].info);
        if (!cs) cs = fa_apply_write_kernel_source(cctx, out_dir, out[k].info.name, ext, &bufs[m]);
        if (cs) {
            snprintf(out[k].why, sizeof out[k].why, "%s", fa_ctx_errmsg(cctx));
            fa_buf_free(&bufs[m]);
            fa_ctx_free(cctx);
            continue;
        }
        fa_ctx_free(cctx);
        out[k].generated = true;
        if (!(keys[m] = kernel_text_key(bufs[m].data, bufs[m].len, out[k].info.name))) {
            fa_buf_free(&bufs[m]);
            s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            break;
        }
        /* the same code as a kernel already in the batch (a repeated layer): compiled once */
        int same = -1;
        for (int j = 0; j < m && same < 0; j++) {
            const fa_generated *o = &out[which[j]];
            if (o->info.block_size == out[k].info.block_size && o->info.grid == out[k].info.grid &&
                srcs[j].n_in == c->n_inputs && srcs[j].n_out == c->n_outputs && !strcmp(keys[j], keys[m]))
                same = j;
        }
        if (same >= 0) {
            out[k].same_as = which[same];
            free(keys[m]);
            keys[m] = NULL;
            fa_buf_free(&bufs[m]);
            continue;
        }
        srcs[m] = (fa_fused_source){bufs[m].data, bufs[m].len, out[k].info.name, c->n_inputs, c->n_outputs,
                                    out[k].info.block_size, out[k].info.grid, d.layout};
        which[m++] = k;
    }
    if (!s && m > 0)
        s = fa_target_fused_compile(ctx, t, co, m, srcs, got, errs);
    for (int j = 0; j < m; j++) {
        fa_generated *o = &out[which[j]];
        if (!s && got[j]) o->bin = got[j];
        else {
            if (got[j]) fa_target_fused_free(t, got[j]);
            snprintf(o->why, sizeof o->why, "%s", errs[j] ? errs[j] : s ? fa_ctx_errmsg(ctx) : "the compiler gave no kernel");
        }
        free(errs[j]);
        free(keys[j]);
        fa_buf_free(&bufs[j]);
    }
    for (int k = 0; k < n; k++) /* a kernel compiled once: the same binary, or the same reason */
        if (out[k].same_as >= 0) {
            out[k].bin = out[out[k].same_as].bin;
            if (!out[k].bin) snprintf(out[k].why, sizeof out[k].why, "%s", out[out[k].same_as].why);
        }
    fa_layout_plan_free(&lp);
    free(srcs);
    free(bufs);
    free(which);
    free(got);
    free(errs);
    free(keys);
    return s;
}

/* The generated kernels of the tried clusters order[0..n) (fa_apply_generate_batch, sources kept
 * in OUT_DIR/kernels/). A cluster whose kernel cannot be generated or built is rejected with the
 * reason; the run fails only when the compiler itself cannot be used (a cache folder another user
 * can write, no toolkit). */
static fa_status compile_generated(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, fa_apply_result *res,
                                   const fa_apply_options *opt, const fa_target_device *dev, const int *order, int n,
                                   kernel_table *kt)
{
    const fa_target_iface *t = kt->t;
    int *ci = calloc((size_t)n + 1, sizeof *ci);
    fa_generated *gen = calloc((size_t)n + 1, sizeof *gen);
    if (!ci || !gen) {
        free(ci);
        free(gen);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    int m = 0;
    for (int k = 0; k < n; k++)
        if (fa_apply_needs_codegen(&p->clusters[order[k]])) ci[m++] = order[k];
    fa_fused_compile_options co = {opt->cache_dir, opt->cache_max_bytes,
                                   opt->arch && opt->arch[0] ? opt->arch : dev->arch[0] ? dev->arch : NULL};
    fa_status s = m > 0 ? fa_apply_generate_batch(ctx, t, g, p, ci, m, kt->plan_layout, &co, opt->out_dir, gen) : FA_OK;
    for (int j = 0; j < m && s != FA_ERR_NOMEM; j++) {
        fa_cluster_verdict *v = &res->verdicts[ci[j]];
        if (gen[j].bin) {
            kt->bin[ci[j]] = gen[j].bin;
            kt->bin_shared[ci[j]] = gen[j].same_as >= 0;
            if (gen[j].same_as < 0) res->kernels_compiled++;
            fa_kernel_resources r;
            if (fa_target_fused_resources(t, gen[j].bin, &r)) {
                /* the figures for the arch it runs on (the advisor's gate may have used another) */
                v->registers = r.registers;
                v->spill_bytes = r.spill_stores + r.spill_loads;
                v->block_size = gen[j].info.block_size;
            }
        } else if (!s || !gen[j].generated) {
            v->status = FA_CLUSTER_REJECTED_ERROR;
            fa_apply_set_reason(res, v, "could not build the fused kernel: %s", gen[j].why);
        }
    }
    free(ci);
    free(gen);
    return s;
}

/* Verification of cluster c (fused gf/ef against unfused gu/eu, both already run): v->max_rel_error
 * gets the relative error max|f-u| / max|u| over its outputs. A cluster that reassociates a
 * reduction (a Conv/Gemm/MatMul in gu with a rounding rule for every op: applier/bound.c) passes
 * when every element is within the componentwise rounding-error bound 2·γ̃_n(λ)·M, M the same ops
 * on magnitudes (run only when the check against |unfused|, which M dominates, does not already
 * pass: fa_apply_bound_ratio_unfused); any other cluster when the relative error is within
 * opt->tolerance. False with its verdict v rejected and the reason set when it fails; *cs set
 * when the check itself could not run. tag gets the accepted reason's prefix. */
static bool verify_cluster(fa_ctx *cctx, const fa_graph *g, fa_apply_result *res, const fa_cluster *c,
                           fa_cluster_verdict *v, const fa_apply_options *opt, const fa_value_map *vm, const fa_graph *gu,
                           const fa_value *const *ref, const fa_graph *gf, fa_exec *ef, char *tag, size_t tag_cap,
                           fa_status *cs)
{
    double err = 0;
    for (int k = 0; k < c->n_outputs; k++) {
        const char *nm = g->tensors[c->outputs[k]]->name;
        int iu = out_index(gu, nm), iff = out_index(gf, nm);
        if (iu < 0 || iff < 0 || !ref[k]) {
            err = INFINITY;
            break;
        }
        double e = fa_apply_rel_error(fa_exec_output(ef, iff), ref[k]);
        if (e > err) err = e;
    }
    v->max_rel_error = err;
    fa_apply_bound bd;
    fa_graph *gm = NULL;
    fa_exec *em = NULL;
    char why[400];
    /* first against |unfused|, which every element's M dominates: within that, the cluster is
     * within its bound and the magnitudes need not be built or run (each layer's cluster of a
     * deep model would otherwise make its |W| and run a magnitude executor of its own: issue 39) */
    *cs = fa_apply_bound_of(cctx, gu, &bd, why, sizeof why);
    double quick = !*cs && bd.applies ? 0 : INFINITY;
    for (int k = 0; k < c->n_outputs && quick <= 1.0; k++) {
        int iff = out_index(gf, g->tensors[c->outputs[k]]->name);
        int64_t w;
        double r = iff >= 0 ? fa_apply_bound_ratio_unfused(fa_exec_output(ef, iff), ref[k], &bd, &w) : INFINITY;
        if (r > quick) quick = r;
    }
    if (quick <= 1.0) {
        snprintf(tag, tag_cap, "within the rounding-error bound of its %lld-deep reduction (worst element at %.2g of "
                 "2·γ̃·|unfused|/(1 + γ_n), which 2·γ̃·M exceeds; relative error %.2g); ", (long long)bd.depth, quick, err);
        return true;
    }
    if (!*cs && bd.applies) *cs = fa_apply_bound_graph(cctx, gu, &bd, &gm, why, sizeof why);
    /* the magnitudes on the cpu executor whatever the target: standard ops only, host values */
    fa_exec_options mo = {.target = FA_TARGET_CPU, .threads = opt->threads};
    if (!*cs && gm) *cs = fa_exec_create(cctx, gm, &mo, &em);
    if (!*cs && em) *cs = fa_value_map_set_inputs(cctx, em, gm, vm);
    if (!*cs && em) *cs = fa_exec_run(cctx, em, NULL);
    double ratio = gm && !*cs ? 0 : NAN;
    int64_t at = -1;
    const char *at_name = "";
    double at_diff = 0, at_bound = 0, at_f = 0, at_u = 0;
    for (int k = 0; k < c->n_outputs && !isnan(ratio); k++) {
        const char *nm = g->tensors[c->outputs[k]]->name;
        int iu = out_index(gu, nm), iff = out_index(gf, nm);
        if (iu < 0 || iff < 0) {
            ratio = INFINITY;
            break;
        }
        const fa_value *vf = fa_exec_output(ef, iff), *vu = ref[k], *vmag = fa_exec_output(em, iu);
        int64_t w;
        double r = fa_apply_bound_ratio(vf, vu, vmag, &bd, &w);
        if (isnan(r)) ratio = NAN; /* the magnitude overflowed */
        else if (r > ratio) {
            ratio = r;
            at = w;
            at_name = nm;
            if (w >= 0) { /* the difference even where the ratio is infinite (a NaN or an infinity on one side) */
                at_f = fa_load_as_double(vf->data, vf->dtype, w);
                at_u = fa_load_as_double(vu->data, vu->dtype, w);
                at_diff = fabs(at_f - at_u);
                at_bound = r > 0 && isfinite(r) ? at_diff / r : 0;
            }
        }
    }
    fa_exec_free(em);
    fa_graph_free(gm);
    if (*cs) return false;
    if (!isnan(ratio)) {
        if (ratio <= 1.0) {
            snprintf(tag, tag_cap, "within the rounding-error bound of its %lld-deep reduction (worst element at %.2g of "
                     "%s, relative error %.2g); ", (long long)bd.depth, ratio,
                     c->kind == FA_CLUSTER_ATTENTION ? "2·γ̃·M, M the scores' and the softmax's first-order magnitudes"
                                                     : "2·γ̃·|W|·|x|", err);
            return true;
        }
        v->status = FA_CLUSTER_REJECTED_VERIFY;
        fa_apply_set_reason(res, v, "fused output differs from the unfused ops beyond the rounding error of its %lld-deep "
                            "reduction: element %lld of '%s' differs by %.3g (fused %.9g, unfused %.9g), %.3g times the bound 2·γ̃·M = %.3g "
                            "(γ̃ = %.3g for λ = %.2f, M: the same ops on |inputs| and |weights|; relative error %.3g)",
                            (long long)bd.depth, (long long)at, at_name, at_diff, at_f, at_u, ratio, at_bound, bd.gamma, bd.lambda, err);
        return false;
    }
    if (err <= opt->tolerance) {
        snprintf(tag, tag_cap, "%s", "");
        return true;
    }
    v->status = FA_CLUSTER_REJECTED_VERIFY;
    fa_apply_set_reason(res, v, "fused output differs from the unfused ops: max relative error %.3g > tolerance %.3g", err,
                        opt->tolerance);
    return false;
}

/* The layout the whole fused plan gives each tensor of g (*out by tensor id of g, malloc'd),
 * planned as if every cluster tried (order[0..n), still PROPOSED: its kernel built) were
 * accepted: the fused graph of those clusters on a fused-plan executor (blocked layouts, plain
 * graph boundaries, as the end-to-end check runs it), asked where each tensor lives
 * (fa_exec_tensor_layout). *out NULL — every boundary judged plain, as before — when the target
 * keeps no layouts, or with the reason in note when that executor cannot be made (the run goes
 * on). Errors: out of memory only. */
static fa_status plan_layouts_of_tried(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const fa_apply_result *res,
                                       const int *order, int n, kernel_table *kt, int threads, fa_layout **out, char *note,
                                       size_t note_cap)
{
    *out = NULL;
    note[0] = 0;
    if (!fa_target_has(fa_target_id(kt->t), FA_TARGET_CAP_LAYOUTS)) return FA_OK;
    int *ids = malloc(sizeof(int) * (size_t)(n + 1));
    fa_layout *l = calloc((size_t)g->n_tensors + 1, sizeof *l);
    fa_ctx *wctx = fa_ctx_create(); /* the whole plan failing is a note, not the run's error */
    if (!ids || !l || !wctx) {
        free(ids);
        free(l);
        fa_ctx_free(wctx);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    int m = 0;
    for (int k = 0; k < n; k++)
        if (res->verdicts[order[k]].status == FA_CLUSTER_PROPOSED) ids[m++] = p->clusters[order[k]].id;
    fa_graph *gw = NULL;
    fa_exec *ew = NULL;
    fa_status s = fa_fused_graph(wctx, g, p, NULL, ids, m, &gw);
    if (!s) s = make_exec(wctx, gw, kt, threads, true, NULL, NULL, &ew);
    if (s == FA_ERR_NOMEM) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s", fa_ctx_errmsg(wctx));
    else if (s) snprintf(note, note_cap, "judged with plain boundaries: the whole plan's layouts could not be planned (%s); ",
                         fa_ctx_errmsg(wctx));
    for (int t = 0; !s && t < g->n_tensors; t++) {
        int w = g->tensors[t] ? fa_graph_find_tensor(gw, g->tensors[t]->name) : -1;
        l[t] = w >= 0 ? fa_exec_tensor_layout(ew, w) : FA_LAYOUT_COUNT; /* inside a fused node of the plan */
    }
    fa_exec_free(ew);
    fa_graph_free(gw);
    fa_ctx_free(wctx);
    free(ids);
    if (s || note[0]) {
        free(l);
        return s == FA_ERR_NOMEM ? s : FA_OK;
    }
    *out = l;
    return FA_OK;
}

/* The boundary layouts of a cluster's fused sub-graph gf (*in_l by gf input, *out_l by gf
 * output, malloc'd when NULL): the layout plan_layout (by tensor id of g; NULL: all plain) gives
 * each — its inputs and epilogue operands as their producers in the whole fused plan write them,
 * its outputs as the plan's fused node leaves them. A tensor the plan has inside a fused node of
 * another cluster (FA_LAYOUT_COUNT: a BN fold's output where the plan applies the epilogue that
 * absorbs it) is plain as an input; as an output it is left where gf's own producer writes it
 * when probe (an executor of gf) is given — its neighbours assumed to keep that layout, as for
 * every other boundary — and plain with *unknown set otherwise. judged gets the reason's prefix
 * naming the blocked ones ("" when all are plain). Errors: out of memory. */
fa_status fa_apply_boundary_layouts(fa_ctx *ctx, const fa_graph *g, const fa_graph *gf, const fa_layout *plan_layout,
                                    const fa_exec *probe, fa_layout **in_l, fa_layout **out_l, bool *unknown, char *judged,
                                    size_t cap)
{
    if (!*in_l) *in_l = calloc((size_t)gf->n_inputs + 1, sizeof **in_l);
    if (!*out_l) *out_l = calloc((size_t)gf->n_outputs + 1, sizeof **out_l);
    if (!*in_l || !*out_l) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    judged[0] = 0;
    *unknown = false;
    size_t w = 0;
    int listed = 0;
    for (int k = 0; k < gf->n_inputs + gf->n_outputs && plan_layout; k++) {
        bool in = k < gf->n_inputs;
        int x = in ? gf->inputs[k] : gf->outputs[k - gf->n_inputs], id = fa_graph_find_tensor(g, gf->tensors[x]->name);
        fa_layout l = id >= 0 ? plan_layout[id] : FA_LAYOUT_PLAIN;
        if (l == FA_LAYOUT_COUNT) {
            *unknown |= !in && !probe;
            l = !in && probe ? fa_exec_tensor_layout(probe, x) : FA_LAYOUT_PLAIN;
        }
        if (gf->tensors[x]->flags & FA_TENSOR_CONST) l = FA_LAYOUT_PLAIN;
        if (in) (*in_l)[k] = l;
        else (*out_l)[k - gf->n_inputs] = l;
        if (l == FA_LAYOUT_PLAIN || w >= cap) continue;
        w += (size_t)snprintf(judged + w, cap - w, "%s%s '%.80s' %s", listed++ ? ", " : "judged in the plan's layout: ",
                              in ? "input" : "output", gf->tensors[x]->name, fa_layout_name(l));
    }
    if (listed && w < cap) snprintf(judged + w, cap - w, "; ");
    return FA_OK;
}

fa_status fa_apply_member_layouts(fa_ctx *ctx, const fa_graph *gf, const fa_layout *f_in, const fa_layout *f_out,
                                  const fa_graph *gu, fa_layout **u_in, fa_layout **u_out)
{
    *u_in = calloc((size_t)gu->n_inputs + 1, sizeof **u_in);
    *u_out = calloc((size_t)gu->n_outputs + 1, sizeof **u_out);
    if (!*u_in || !*u_out) {
        free(*u_in);
        free(*u_out);
        *u_in = *u_out = NULL;
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < gu->n_inputs + gu->n_outputs; k++) {
        bool in = k < gu->n_inputs;
        const fa_tensor *ut = gu->tensors[in ? gu->inputs[k] : gu->outputs[k - gu->n_inputs]];
        fa_layout l = FA_LAYOUT_PLAIN;
        for (int j = 0; !(ut->flags & FA_TENSOR_CONST) && j < (in ? gf->n_inputs : gf->n_outputs); j++)
            if (!strcmp(gf->tensors[in ? gf->inputs[j] : gf->outputs[j]]->name, ut->name)) {
                l = in ? (f_in ? f_in[j] : FA_LAYOUT_PLAIN) : (f_out ? f_out[j] : FA_LAYOUT_PLAIN);
                break;
            }
        if (in) (*u_in)[k] = l;
        else (*u_out)[k - gu->n_inputs] = l;
    }
    return FA_OK;
}

/* One tried cluster between its preparation and its verdict: its unfused and fused sub-graphs
 * on the target, kept across the apply stage's visits (docs/codegen.md "Visits"). */
typedef struct tried_cluster {
    fa_ctx *cctx;            /* its own context: a cluster's failure must not poison the run's */
    fa_graph *gu, *gf;
    fa_exec *eu, *ef;
    fa_layout *in_l, *out_l;
    char tags[900];          /* the accepted reason's prefix: plan note, layouts, verification */
    char tag[400];           /* the verification's part alone (a shared benchmark quotes it) */
    int share;               /* the index in the stage's order of the same-signature cluster whose
                                benchmark it reuses; -1: benchmarked here */
    int row, n, visits;      /* its row in res->cluster_*, rounds taken, visits made */
    bool settled, benched;   /* benched: no more visits (settled, capped, out of budget, failed) */
} tried_cluster;

/* Frees what t holds to run (its executors, graphs, layouts, context); its figures stay. */
static void tried_release(tried_cluster *t)
{
    free(t->in_l);
    free(t->out_l);
    fa_exec_free(t->eu);
    fa_exec_free(t->ef);
    fa_graph_free(t->gu);
    fa_graph_free(t->gf);
    fa_ctx_free(t->cctx);
    t->in_l = t->out_l = NULL;
    t->eu = t->ef = NULL;
    t->gu = t->gf = NULL;
    t->cctx = NULL;
}

/* extra[0..n) (tensor ids of g, no repeats) with the outputs of clusters order[0..n_ci) that
 * a whole-model run produces (not constant, not folded away) appended; extra has room for every
 * tensor of g. Returns the new count, -1 when out of memory. */
static int with_cluster_outputs(const fa_graph *g, const fa_plan *p, const int *order, int n_ci, int *extra, int n)
{
    bool *seen = calloc((size_t)g->n_tensors + 1, sizeof *seen);
    if (!seen) return -1;
    for (int i = 0; i < n; i++) seen[extra[i]] = true;
    for (int j = 0; j < n_ci; j++) {
        const fa_cluster *c = &p->clusters[order[j]];
        for (int k = 0; k < c->n_outputs; k++) {
            int t = c->outputs[k];
            const fa_tensor *ten = t >= 0 && t < g->n_tensors ? g->tensors[t] : NULL;
            if (!ten || seen[t] || (ten->flags & FA_TENSOR_CONST) || ten->producer < 0 || g->nodes[ten->producer]->folded)
                continue;
            seen[t] = true;
            extra[n++] = t;
        }
    }
    free(seen);
    return n;
}

/* Prepares tried cluster t (t->cctx set): its unfused and fused sub-graphs on the target,
 * fed the captured values, and every output verified. The fused sub-graph keeps its boundary
 * tensors in the layout the whole fused plan gives them (plan_layout, by tensor id of g; NULL:
 * plain), so it pays the reorders the plan pays and no others; the unfused one is plain (the
 * baseline is). True when the cluster is ready to benchmark; false with its verdict set (a
 * cluster's failures become its status and reason, never the run's). */
static bool prepare_cluster(const fa_graph *g, const fa_plan *p, const fa_cluster *c, fa_cluster_verdict *v,
                            const fa_apply_options *opt, kernel_table *kt, const fa_value_map *vm, const fa_layout *plan_layout,
                            const char *plan_note, bool shared, fa_apply_result *res, tried_cluster *t)
{
    fa_ctx *cctx = t->cctx;
    char judged[400] = "";
    int ids[1] = {c->id};
    char why[512];
    fa_status cs = fa_fused_graph_scoped(cctx, g, p, ids, 1, true, false, -1, 0, c->outputs, c->n_outputs, &t->gu);
    if (!cs) cs = fa_fused_graph_scoped(cctx, g, p, ids, 1, true, true, opt->inject_wrong_cluster, opt->inject_defect,
                                          c->outputs, c->n_outputs, &t->gf);
    if (!cs && !target_runs(kt->t, t->gf, why, sizeof why)) { /* e.g. an epilogue no library of the target has */
        v->status = FA_CLUSTER_REJECTED_ERROR;
        fa_apply_set_reason(res, v, "%s", why);
        return false;
    }
    /* a cluster whose benchmark is an earlier one's (shared) needs no unfused executor: its
     * reference values are the capture's, the whole unfused model's own (the same ops on the same
     * inputs) */
    if (!cs && !shared) cs = make_exec(cctx, t->gu, kt, opt->threads, false, NULL, NULL, &t->eu);
    bool unknown = false;
    if (!cs) cs = fa_apply_boundary_layouts(cctx, g, t->gf, plan_layout, NULL, &t->in_l, &t->out_l, &unknown, judged, sizeof judged);
    if (!cs) cs = make_exec(cctx, t->gf, kt, opt->threads, true, t->in_l, t->out_l, &t->ef);
    if (!cs && unknown) { /* an output the plan fuses further: left where this cluster writes it */
        cs = fa_apply_boundary_layouts(cctx, g, t->gf, plan_layout, t->ef, &t->in_l, &t->out_l, &unknown, judged, sizeof judged);
        bool moved = false;
        for (int i = 0; i < t->gf->n_outputs; i++) moved |= t->out_l[i] != FA_LAYOUT_PLAIN;
        if (!cs && moved) {
            fa_exec_free(t->ef);
            t->ef = NULL;
            cs = make_exec(cctx, t->gf, kt, opt->threads, true, t->in_l, t->out_l, &t->ef);
        }
    }
    char slow[600];
    if (!cs && fa_apply_slow_library_epilogue(t->gf, t->ef, slow, sizeof slow)) {
        /* asked before any benchmark: a library epilogue off oneDNN's fast path is not proposed */
        v->status = FA_CLUSTER_REFUSED;
        v->refusal = FA_WHY_SLOW_LIBRARY_PATH;
        fa_apply_set_reason(res, v, "%s", slow);
        return false;
    }
    if (!cs && t->eu) cs = fa_value_map_set_inputs(cctx, t->eu, t->gu, vm);
    if (!cs) cs = fa_value_map_set_inputs(cctx, t->ef, t->gf, vm);
    if (!cs && t->eu) cs = fa_exec_run(cctx, t->eu, NULL);
    if (!cs) cs = fa_exec_run(cctx, t->ef, NULL);
    if (cs) {
        v->status = FA_CLUSTER_REJECTED_ERROR;
        fa_apply_set_reason(res, v, "could not build the fused kernel: %s", fa_ctx_errmsg(cctx));
        return false;
    }
    /* verify every cluster output against the unfused sub-graph's, or the capture's (plain
     * values: fa_exec_output converts an output the fused sub-graph left blocked) */
    const fa_value **ref = calloc((size_t)c->n_outputs + 1, sizeof *ref);
    if (!ref) cs = fa_ctx_error(cctx, FA_ERR_NOMEM, "out of memory");
    for (int k = 0; k < c->n_outputs && ref; k++) {
        if (!t->eu) {
            ref[k] = vm->vals[c->outputs[k]].data ? &vm->vals[c->outputs[k]] : NULL;
            continue;
        }
        int iu = out_index(t->gu, g->tensors[c->outputs[k]]->name);
        ref[k] = iu >= 0 ? fa_exec_output(t->eu, iu) : NULL;
    }
    fa_cluster_status st0 = v->status;
    const char *reason0 = v->reason;
    bool verified = ref && verify_cluster(cctx, g, res, c, v, opt, vm, t->gu, ref, t->gf, t->ef, t->tag, sizeof t->tag, &cs);
    /* A kernel whose algorithm a tactic chose among equivalent ones that round differently
     * (Winograd, or a convolution reordered inside to oneDNN's brgemm kernel: docs/runtime.md
     * "Convolution tactics") put the fused result past the bound: that choice is vetoed for its
     * signature (the whole fused model built later takes the direct kernel too) and the cluster
     * rebuilt and verified again by the same rule — the bound is not loosened, the kernel the
     * check has always accepted is used instead. A rebuilt executor may take another tactic
     * (Winograd vetoed, the reordered build measured next): at most FA_APPLY_TACTIC_RETRIES. */
    char first[700] = "";
    for (int retry = 0; ref && !verified && !cs && retry < FA_APPLY_TACTIC_RETRIES &&
                        v->status == FA_CLUSTER_REJECTED_VERIFY && fa_exec_veto_measured_tactics(t->ef) > 0;
         retry++) {
        if (!first[0]) snprintf(first, sizeof first, "%s", v->reason ? v->reason : "");
        v->status = st0;
        v->reason = reason0;
        fa_exec_free(t->ef);
        t->ef = NULL;
        cs = make_exec(cctx, t->gf, kt, opt->threads, true, t->in_l, t->out_l, &t->ef);
        if (!cs) cs = fa_value_map_set_inputs(cctx, t->ef, t->gf, vm);
        if (!cs) cs = fa_exec_run(cctx, t->ef, NULL);
        char tag2[sizeof t->tag] = "";
        verified = !cs && verify_cluster(cctx, g, res, c, v, opt, vm, t->gu, ref, t->gf, t->ef, tag2, sizeof tag2, &cs);
        size_t n2 = strlen(tag2);
        if (n2 >= 2 && !strcmp(tag2 + n2 - 2, "; ")) tag2[n2 - 2] = 0; /* the sentence goes on below */
        if (verified)
            snprintf(t->tag, sizeof t->tag, "%s (with oneDNN's direct convolution: the algorithm a tactic chose for it was "
                     "not within the bound and was vetoed); ", tag2[0] ? tag2 : "verified");
    }
    if (first[0] && !verified && !cs)
        fa_apply_set_reason(res, v, "%s; also with oneDNN's direct convolution, after the algorithm a tactic chose failed first: "
                            "%.600s", v->reason ? v->reason : "", first);
    free(ref);
    if (!verified || cs) {
        if (cs) {
            v->status = FA_CLUSTER_REJECTED_ERROR;
            fa_apply_set_reason(res, v, "could not verify the fused kernel: %s", fa_ctx_errmsg(cctx));
        }
        return false;
    }
    snprintf(t->tags, sizeof t->tags, "%s%s%s", plan_note, judged, t->tag);
    return true;
}

/* The untimed pairs the end-to-end rounds still need after the check's own pair of runs (which
 * took check_ns, and is the first warm-up): W - 1 for a --warmup W, else by time
 * (fa_warmup_more), each further pair taken to last as long as the check's. */
static int e2e_warm_pairs(int warmup, uint64_t check_ns)
{
    if (warmup >= 0) return warmup > 0 ? warmup - 1 : 0;
    int n = 1;
    while (fa_warmup_more(FA_WARMUP_AUTO, n, (uint64_t)n * check_ns)) n++;
    return n - 1;
}

/* One visit to tried cluster t: a warm-up pair (opt->warmup on the first visit, 1 after: its
 * data left the caches while the others ran), then `block` interleaved rounds appended to its
 * row (the unfused/fused order alternating across visits too); after FA_APPLY_VISITS visits its
 * saving may settle (fa_apply_rounds_settled). A failed run rejects it with the reason. */
static void visit_cluster(fa_apply_result *res, fa_cluster_verdict *v, const fa_apply_options *opt, tried_cluster *t,
                          int block)
{
    int max_n = res->n_cluster_samples, m = block < max_n - t->n ? block : max_n - t->n;
    double *sa = res->cluster_unfused + (size_t)t->row * (size_t)max_n + t->n;
    double *sb = res->cluster_fused + (size_t)t->row * (size_t)max_n + t->n;
    fa_status cs = fa_apply_bench_pair(t->cctx, fa_apply_exec_once, t->eu, t->ef, t->visits ? 1 : opt->warmup, t->n, m,
                                        fa_apply_cluster_bench(t->eu),
                                        fa_exec_threads(t->eu), sa, sb);
    if (cs) {
        v->status = FA_CLUSTER_REJECTED_ERROR;
        fa_apply_set_reason(res, v, "benchmark failed: %s", fa_ctx_errmsg(t->cctx));
        t->benched = true;
        return;
    }
    t->n += m;
    res->cluster_n_samples[t->row] = t->n;
    t->visits++;
    if (t->visits >= FA_APPLY_VISITS) t->settled = fa_apply_rounds_settled(res->cluster_unfused + (size_t)t->row * (size_t)max_n,
                                                                            res->cluster_fused + (size_t)t->row * (size_t)max_n, t->n);
    t->benched = t->settled || t->n >= max_n;
}

/* How a cluster's rounds stopped, for its reason: settled, at the cap of max_n, or by the budget. */
static const char *rounds_stop_phrase(bool settled, int n, int max_n)
{
    return settled ? "repetitions stopped once the interval was within 10% of the saving or 1% of the sub-graph's time"
         : n >= max_n ? "repetitions stopped at their cap before the interval was within 10%"
                      : "repetitions stopped by the apply budget before the interval was within 10%";
}

/* Cluster t, judged not faster than its members as the baseline ran them (plain), judged again
 * against its members as the fused plan runs them when it leaves the cluster unfused: the same
 * unfused sub-graph on a fused-plan executor (kt's blocked layout), its boundaries in the layouts
 * the fused sub-graph's have (fa_apply_member_layouts). The baseline may run a cluster's members
 * faster than the plan's layout does — MobileNetV2's 24-channel 1x1 convolutions plain against
 * nChw16c padded to 32 channels: conv+BN 37.6 us plain, 40.0 us fused in nChw16c — but the fused
 * model does not run them plain: left unfused, its convolution runs blocked anyway and its BN,
 * add or activation after it as passes of their own (~11 us each there). So not fusing is the
 * plan's layout's members, and a fused kernel faster than those is a saving in the model the user
 * deploys, which the end-to-end check then measures whole. Rounds as the visits take them (block
 * per visit, FA_APPLY_VISITS at least, until settled, max_n, or the deadline), judged by the same
 * rule (fa_apply_paired_verdict). When that judgement is a win, the cluster's row holds these
 * rounds and its verdict is fa_apply_judge's on them, the reason saying against what it was
 * judged and quoting the plain comparison; else the plain verdict stays and its reason adds the
 * in-plan medians. Nothing is done for a plain plan (the members already run as the baseline
 * does) or a verdict other than no-gain / regression. A failure to build or run leaves the plain
 * verdict with the failure in its reason. */
static void judge_in_plan_layout(fa_apply_result *res, fa_cluster_verdict *v, const fa_apply_options *opt, kernel_table *kt,
                                 tried_cluster *t, int max_n, int block, uint64_t deadline)
{
    if (kt->plan_layout == FA_LAYOUT_PLAIN || !t->eu || !t->ef || !t->gu || t->row < 0) return;
    if (v->status != FA_CLUSTER_REJECTED_NO_GAIN && v->status != FA_CLUSTER_REJECTED_REGRESSION) return;
    fa_layout *u_in = NULL, *u_out = NULL;
    fa_exec *ep = NULL;
    double *sa = malloc(sizeof(double) * (size_t)(max_n + 1)), *sb = malloc(sizeof(double) * (size_t)(max_n + 1));
    fa_status s = sa && sb ? fa_apply_member_layouts(t->cctx, t->gf, t->in_l, t->out_l, t->gu, &u_in, &u_out)
                           : fa_ctx_error(t->cctx, FA_ERR_NOMEM, "out of memory");
    if (!s) s = make_exec(t->cctx, t->gu, kt, opt->threads, true, u_in, u_out, &ep);
    if (!s) s = fa_exec_fill_inputs(t->cctx, ep, 1);
    int n = 0, visits = 0;
    bool settled = false;
    while (!s && n < max_n && !settled && (visits < 1 || fa_now_ns() <= deadline)) {
        int m = block < max_n - n ? block : max_n - n;
        s = fa_apply_bench_pair(t->cctx, fa_apply_exec_once, ep, t->ef, visits ? 1 : opt->warmup, n, m, fa_apply_cluster_bench(ep),
                                fa_exec_threads(ep), sa + n, sb + n);
        if (s) break;
        n += m;
        if (++visits >= FA_APPLY_VISITS) settled = fa_apply_rounds_settled(sa, sb, n);
    }
    fa_paired_judgement j = {0};
    int verdict = !s && n > 0 ? fa_apply_paired_verdict(sa, sb, n, &j) : 0;
    if (s) {
        fa_apply_set_reason(res, v, "%s; not judged against its members in the plan's layout: %s", v->reason ? v->reason : "",
                            fa_ctx_errmsg(t->cctx));
    } else if (verdict > 0) {
        /* the plain comparison, quoted before the judgement replaces the figures */
        char tags[sizeof t->tags + 600], was[64];
        fa_saving_phrase(was, sizeof was, v->measured_saving_ns);
        snprintf(tags, sizeof tags, "%sjudged against its members as the fused plan runs them when it is left unfused (%s "
                 "boundaries, the members' own layouts inside: the baseline's plain members ran in %.1f us against the fused "
                 "kernel's %.1f us, a paired %s over %d rounds, but the fused model does not run them plain); ", t->tags,
                 fa_layout_name(kt->plan_layout), v->meas_unfused_ns / 1e3, v->meas_fused_ns / 1e3, was, t->n);
        memcpy(res->cluster_unfused + (size_t)t->row * (size_t)max_n, sa, sizeof(double) * (size_t)n);
        memcpy(res->cluster_fused + (size_t)t->row * (size_t)max_n, sb, sizeof(double) * (size_t)n);
        res->cluster_n_samples[t->row] = n;
        t->n = n;
        fa_apply_judge(res, v, sa, sb, n, v->max_rel_error, tags);
        fa_apply_set_reason(res, v, "%s; rounds taken in %d visit(s); %s", v->reason, visits,
                            rounds_stop_phrase(settled, n, max_n));
    } else {
        fa_apply_set_reason(res, v, "%s; against its members as the fused plan runs them unfused (%s) too, not measurably "
                            "faster: median %.1f -> %.1f us over %d rounds", v->reason ? v->reason : "",
                            fa_layout_name(kt->plan_layout), n ? j.unfused.median_ns / 1e3 : 0.0,
                            n ? j.fused.median_ns / 1e3 : 0.0, n);
    }
    fa_exec_free(ep);
    free(u_in);
    free(u_out);
    free(sa);
    free(sb);
}

/* Every cluster's verdict starts as the advisor's decision, with its gate figures. */
static bool verdicts_init(const fa_plan *p, fa_apply_result *res)
{
    res->arena = fa_arena_create(0);
    res->verdicts = calloc((size_t)p->n_clusters + 1, sizeof *res->verdicts);
    if (!res->arena || !res->verdicts) return false;
    res->n_verdicts = p->n_clusters;
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        res->verdicts[i] = fa_cluster_verdict_of(c);
    }
    return true;
}

fa_status fa_apply(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const fa_apply_options *opt_in,
                   fa_apply_result **out)
{
    uint64_t t0 = fa_now_ns();
    fa_apply_options opt;
    if (opt_in) opt = *opt_in;
    else fa_apply_options_default(&opt);
    if (opt.iters < 3) opt.iters = 3;
    kernel_table kt = {NULL, p, NULL, NULL, FA_LAYOUT_PLAIN};
    fa_target_device dev;
    fa_status s = fa_target_resolve(ctx, opt.target, &kt.t);
    if (!s) kt.plan_layout = fa_apply_plan_layout(p, fa_target_id(kt.t)); /* the plan's measured or named layout */
    if (!s) s = fa_target_device_open(ctx, kt.t, &dev);
    if (s) return fa_ctx_wrap(ctx, s, "cannot apply on %s: ", kt.t ? fa_target_name(fa_target_id(kt.t)) : fa_target_name(opt.target));
    s = fa_apply_options_check(ctx, &opt);
    if (s) return s;
    int *order = malloc(sizeof(int) * (size_t)(p->n_clusters + 1));
    if (!order) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_value_map vm = {g, NULL};
    fa_exec *cap = NULL;
    fa_graph *capg = NULL;
    fa_apply_result *res = calloc(1, sizeof *res);
    kt.bin = calloc((size_t)p->n_clusters + 1, sizeof *kt.bin);
    kt.bin_shared = calloc((size_t)p->n_clusters + 1, 1);
    vm.vals = calloc((size_t)g->n_tensors + 1, sizeof *vm.vals);
    int max_rounds = opt.iters * FA_APPLY_REPEAT_MAX; /* a cluster's rounds at most (adaptive) */
    int *extra = malloc(sizeof(int) * (size_t)(g->n_tensors + 1));
    fa_layout *plan_layout = NULL; /* by tensor id of g: the whole fused plan's layouts */
    if (!res || !verdicts_init(p, res) || !kt.bin || !kt.bin_shared || !vm.vals || !extra) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        goto done;
    }

    /* 1. Capture: the unfused graph with every tensor a tried cluster's sub-graph reads from
     *    outside (inputs, epilogue operands) as an output, so every cluster's sub-graph can be fed
     *    the values it sees in the whole model. Graph inputs are our own fill (the same values on
     *    every target); constants live in the graph. The clusters beyond the stage's cap are set
     *    NOT_TRIED first: nothing is kept for them. The values stay in the capture executor's
     *    outputs (borrowed, not copied) until every cluster is prepared, then go with it. */
    int n_prop = fa_apply_select(p, res, &opt, order);
    int ne2 = fa_apply_boundary_tensors(g, p, order, n_prop, extra);
    if (ne2 < 0) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* and every tried cluster's outputs: the reference values of a cluster that shares an
     * earlier one's benchmark (prepare_cluster), so that repeated layers are not each run unfused
     * once more (issue 39). Most are the next cluster's inputs already. */
    if (ne2 >= 0) ne2 = with_cluster_outputs(g, p, order, n_prop, extra, ne2);
    if (ne2 < 0) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (opt.progress) opt.progress(opt.progress_user, "capture", 0, 1);
    s = fa_fused_graph_scoped(ctx, g, p, NULL, 0, false, false, -1, 0, extra, ne2, &capg);
    if (!s) s = make_exec(ctx, capg, &kt, opt.threads, false, NULL, NULL, &cap);
    if (s) goto done;
    s = fa_value_map_fill_inputs(ctx, &vm, opt.seed);
    for (int i = 0; i < g->n_inputs && !s; i++) s = fa_exec_set_input(ctx, cap, i, &vm.vals[g->inputs[i]]);
    if (!s) s = fa_exec_run(ctx, cap, NULL);
    for (int i = 0; i < capg->n_outputs && !s; i++) {
        int id = fa_graph_find_tensor(g, capg->tensors[capg->outputs[i]]->name);
        const fa_value *v = fa_exec_output(cap, i);
        if (id >= 0 && v && !vm.vals[id].data) s = fa_value_map_borrow(ctx, &vm, id, v);
    }
    if (s) goto done;

    /* 2. The clusters tried (ranked by predicted saving, capped), their generated kernels in one
     *    batch, then per cluster within the time budget: verify, benchmark, decide. */
    if (opt.progress) opt.progress(opt.progress_user, "capture", 1, 1);
    if (opt.progress) opt.progress(opt.progress_user, "compile", 0, 1);
    s = compile_generated(ctx, g, p, res, &opt, &dev, order, n_prop, &kt);
    if (!s && opt.progress) opt.progress(opt.progress_user, "compile", 1, 1);
    if (s) goto done;
    res->n_cluster_samples = max_rounds;
    res->cluster_ids = calloc((size_t)n_prop + 1, sizeof(int));
    res->cluster_n_samples = calloc((size_t)n_prop + 1, sizeof(int));
    res->cluster_unfused = calloc((size_t)(n_prop + 1) * (size_t)max_rounds, sizeof(double));
    res->cluster_fused = calloc((size_t)(n_prop + 1) * (size_t)max_rounds, sizeof(double));
    if (!res->cluster_ids || !res->cluster_n_samples || !res->cluster_unfused || !res->cluster_fused) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* the whole fused plan's layouts, every tried cluster assumed accepted: each cluster is judged
     * with its boundary tensors where that plan keeps them (the end-to-end check below decides
     * whether the optimism holds) */
    char plan_note[400];
    s = plan_layouts_of_tried(ctx, g, p, res, order, n_prop, &kt, opt.threads, &plan_layout, plan_note, sizeof plan_note);
    if (s) goto done;
    /* one benchmark per signature: a later cluster of the same kernel on the same shapes reuses
     * the first one's (ResNet-50's repeated bottleneck blocks) */
    char **sigs = calloc((size_t)n_prop + 1, sizeof *sigs);
    if (!sigs) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int k = 0; k < n_prop; k++) {
        fa_buf sb_;
        fa_buf_init(&sb_);
        const fa_cluster *ck = &p->clusters[order[k]];
        fa_cluster_signature(g, ck, &sb_);
        /* the same kernel judged in other boundary layouts is another measurement */
        for (int i = 0; i < ck->n_inputs + ck->n_outputs && plan_layout; i++) {
            int t = i < ck->n_inputs ? ck->inputs[i] : ck->outputs[i - ck->n_inputs];
            fa_buf_printf(&sb_, "|%d", t >= 0 ? (int)plan_layout[t] : -1);
        }
        sigs[k] = sb_.oom ? NULL : sb_.data; /* NULL: never shared */
        if (sb_.oom) fa_buf_free(&sb_);
    }
    /* Prepared, then benchmarked in visits: every cluster ready to benchmark gets a block of
     * rounds per visit, in rank order, FA_APPLY_VISITS visits at least, so that its rounds are
     * taken at moments spread over the stage as the trace's and the probe's are, not in one
     * phase of the machine's memory bandwidth (issue 19; docs/codegen.md "Visits"); then more
     * visits for the ones whose saving has not settled, up to the cap or the budget. */
    tried_cluster *tc = calloc((size_t)n_prop + 1, sizeof *tc);
    if (!tc) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    double budget = opt.budget_s > 0 ? opt.budget_s : FA_APPLY_BUDGET_S_DEFAULT;
    uint64_t deadline = t0 + (uint64_t)(budget * 1e9);
    int n_ready = 0, steps_done = 0;
    for (int k = 0; k < n_prop && !s; k++) {
        const fa_cluster *c = &p->clusters[order[k]];
        fa_cluster_verdict *v = &res->verdicts[order[k]];
        tried_cluster *t = &tc[k];
        t->share = t->row = -1;
        t->benched = true;
        if (opt.progress) opt.progress(opt.progress_user, "verify", k + 1, n_prop);
        if (v->status != FA_CLUSTER_PROPOSED || fa_apply_budget_spent(res, v, &opt, t0)) continue; /* kernel not built */
        if (!(t->cctx = fa_ctx_create())) {
            s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            break;
        }
        int share = -1;
        for (int j = 0; j < k && sigs[k]; j++)
            if (tc[j].row >= 0 && sigs[j] && !strcmp(sigs[j], sigs[k])) { /* the same kernel on the same shapes */
                share = j;
                break;
            }
        bool ready = prepare_cluster(g, p, c, v, &opt, &kt, &vm, plan_layout, plan_note, share >= 0, res, t);
        if (ready) t->share = share;
        if (!ready || t->share >= 0) { /* nothing left to run: its executors go now */
            tried_release(t);
            continue;
        }
        t->row = res->n_cluster_bench++;
        res->n_benchmarked++;
        res->cluster_ids[t->row] = c->id;
        t->benched = false;
        n_ready++;
    }
    /* every cluster prepared: the captured values (only graph inputs, ours, are read after) go */
    fa_value_map_drop_borrowed(&vm);
    fa_exec_free(cap);
    cap = NULL;
    fa_graph_free(capg);
    capg = NULL;
    int block = (opt.iters + FA_APPLY_VISITS - 1) / FA_APPLY_VISITS;
    if (block < FA_APPLY_VISIT_MIN_ROUNDS) block = FA_APPLY_VISIT_MIN_ROUNDS;
    int n_steps = n_ready * FA_APPLY_VISITS;
    for (int visit = 0; !s; visit++) {
        bool more = false;
        for (int k = 0; k < n_prop; k++) {
            tried_cluster *t = &tc[k];
            fa_cluster_verdict *v = &res->verdicts[order[k]];
            if (t->benched) continue;
            if (fa_now_ns() > deadline) { /* the budget: what was measured is judged */
                if (t->n == 0) fa_apply_budget_spent(res, v, &opt, t0);
                t->benched = true;
                continue;
            }
            visit_cluster(res, v, &opt, t, block);
            if (opt.progress && visit < FA_APPLY_VISITS) opt.progress(opt.progress_user, "apply", ++steps_done, n_steps);
            more |= !t->benched;
        }
        if (!more) break;
    }
    if (opt.progress && steps_done < n_steps) opt.progress(opt.progress_user, "apply", n_steps, n_steps);
    /* the verdicts: the benchmarked ones first, then the clusters that share their benchmark */
    for (int pass = 0; pass < 2 && !s; pass++)
        for (int k = 0; k < n_prop; k++) {
            tried_cluster *t = &tc[k];
            const fa_cluster *c = &p->clusters[order[k]];
            fa_cluster_verdict *v = &res->verdicts[order[k]];
            if (pass == 0 && t->row >= 0 && v->status == FA_CLUSTER_PROPOSED && t->n > 0) {
                fa_apply_judge(res, v, res->cluster_unfused + (size_t)t->row * (size_t)max_rounds,
                               res->cluster_fused + (size_t)t->row * (size_t)max_rounds, t->n, v->max_rel_error, t->tags);
                char lib[400] = "";
                if (v->status == FA_CLUSTER_REJECTED_REGRESSION && t->gf && t->ef) /* a library path measured slower names it */
                    fa_apply_library_kernels_text(t->gf, t->ef, lib, sizeof lib);
                if (lib[0]) fa_apply_set_reason(res, v, "%s; %s", v->reason, lib);
                fa_apply_set_reason(res, v, "%s; rounds taken in %d visit(s); %s", v->reason, t->visits,
                                    rounds_stop_phrase(t->settled, t->n, max_rounds));
                judge_in_plan_layout(res, v, &opt, &kt, t, max_rounds, block, deadline);
            } else if (pass == 1 && t->share >= 0 && v->status == FA_CLUSTER_PROPOSED) {
                const tried_cluster *o = &tc[t->share];
                const fa_cluster_verdict *ov = &res->verdicts[order[t->share]];
                int row = res->n_cluster_bench++, n = res->cluster_n_samples[o->row];
                res->cluster_ids[row] = c->id;
                res->cluster_n_samples[row] = n;
                memcpy(res->cluster_unfused + (size_t)row * (size_t)max_rounds,
                       res->cluster_unfused + (size_t)o->row * (size_t)max_rounds, sizeof(double) * (size_t)n);
                memcpy(res->cluster_fused + (size_t)row * (size_t)max_rounds,
                       res->cluster_fused + (size_t)o->row * (size_t)max_rounds, sizeof(double) * (size_t)n);
                v->status = ov->status;
                v->measured_saving_ns = ov->measured_saving_ns;
                v->meas_unfused_ns = ov->meas_unfused_ns;
                v->meas_fused_ns = ov->meas_fused_ns;
                fa_apply_set_reason(res, v, "%sverified on its own values (error %.2g); benchmark shared with cluster %d, same "
                                    "signature: %s", t->tag, v->max_rel_error, p->clusters[order[t->share]].id,
                                    ov->reason ? ov->reason : "");
            }
        }
    for (int k = 0; k < n_prop && tc; k++) {
        const fa_cluster *c = &p->clusters[order[k]];
        fa_cluster_verdict *v = &res->verdicts[order[k]];
        tried_release(&tc[k]);
        if (v->status == FA_CLUSTER_NOT_TRIED) continue;
        if (v->status == FA_CLUSTER_ACCEPTED) {
            res->accepted++;
            res->predicted_saving_ns += c->est_saving_ns;
        } else {
            res->rejected++;
        }
    }
    free(tc);

    for (int k = 0; k < n_prop; k++) free(sigs[k]);
    free(sigs);
    if (s) goto done;

    /* 3. End to end: every accepted cluster at once vs the unfused graph, same inputs. What the
     *    user deploys is the whole model: when it is not measurably faster (the clusters' judge
     *    rule on the paired end-to-end samples), back off — drop the accepted clusters with the
     *    smallest measured saving (1, then 2, 4, ... at a time) and measure again, until the
     *    fused model wins or no cluster is left; then the plan is reported as a loss. The fused
     *    model runs on the target's blocked layouts, a transformation of its own even with no
     *    cluster kept (its reorders are kernels in the trace): with no cluster left and the
     *    model still not faster, one last round drops the layouts, and the fused model is then
     *    exactly the baseline (verdict no-clusters). */
    bool layouts = true;
    for (int round = 0;; round++) {
        fa_graph *gfull = NULL;
        fa_exec *eb = NULL, *efz = NULL;
        res->e2e_max_rel_error = 0;
        free(res->baseline_samples);
        free(res->fused_samples);
        res->baseline_samples = res->fused_samples = NULL;
        fa_trace_free(res->fused_trace);
        fa_trace_free(res->baseline_rounds_trace);
        res->fused_trace = res->baseline_rounds_trace = NULL;
        fa_fused_map_free(&res->fused_map);
        /* the accepted clusters (the test hook adds a wrong one), mapped node by node to their
         * clusters for the savings in the model (fa_apply_inmodel_savings) */
        int n_ids = 0;
        for (int i = 0; i < p->n_clusters; i++)
            if (res->verdicts[i].status == FA_CLUSTER_ACCEPTED || p->clusters[i].id == opt.inject_e2e_cluster)
                order[n_ids++] = p->clusters[i].id;
        s = fa_fused_graph_mapped(ctx, g, p, order, n_ids, false, true, opt.inject_e2e_cluster, opt.inject_defect, NULL, 0,
                                  &gfull, &res->fused_map);
        if (!s) s = make_exec(ctx, g, &kt, opt.threads, false, NULL, NULL, &eb);
        if (!s) s = make_exec(ctx, gfull, &kt, opt.threads, layouts, NULL, NULL, &efz);
        res->e2e_reorders = !s ? fa_exec_reorders(efz) : 0;
        for (int i = 0; i < g->n_inputs && !s; i++) s = fa_exec_set_input(ctx, eb, i, &vm.vals[g->inputs[i]]);
        if (!s) s = fa_value_map_set_inputs(ctx, efz, gfull, &vm);
        uint64_t check0 = fa_now_ns();
        if (!s) s = fa_exec_run(ctx, eb, NULL);
        if (!s) s = fa_exec_run(ctx, efz, NULL);
        uint64_t check_ns = fa_now_ns() - check0;
        int warm = e2e_warm_pairs(opt.warmup, check_ns);
        res->e2e_back_to_back = fa_apply_e2e_back_to_back(check_ns);
        if (!s) {
            for (int o = 0; o < g->n_outputs; o++) {
                int k = out_index(gfull, g->tensors[g->outputs[o]]->name);
                if (k < 0) continue;
                double e = fa_apply_rel_error(fa_exec_output(efz, k), fa_exec_output(eb, o));
                if (!(e <= res->e2e_max_rel_error)) res->e2e_max_rel_error = e; /* a NaN sticks */
            }
            res->baseline_samples = malloc(sizeof(double) * (size_t)max_rounds);
            res->fused_samples = malloc(sizeof(double) * (size_t)max_rounds);
            if (!res->baseline_samples || !res->fused_samples) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        }
        /* the whole model's rounds in blocks of --iters until they conclude
         * (fa_apply_e2e_concluded: the saving settled as a cluster's does, or its interval clear
         * of 1 % of the model either way), at most FA_APPLY_REPEAT_MAX blocks: one block of 5
         * noisy rounds judged gpt2-block's fused model not measurably faster and backed off three
         * clusters whose savings were measured and predicted within 10 % (bench/README.md, "The
         * applier in visits") */
        int ne = 0;
        /* on cpu the fused side's timed rounds are recorded as the fused model's trace (for the
         * timeline and the roofline); a target with a trace source of its own traces it after.
         * The baseline's side is recorded the same way: both sides then carry the recorder's
         * (compensated) bookkeeping alike, and each accepted cluster's saving in the model pairs
         * its members' time and its fused node's round by round (fa_apply_inmodel_savings) */
        bool on_cpu = fa_target_id(kt.t) == FA_TARGET_CPU;
        recorded_exec rb = {NULL, eb}, rf = {NULL, efz};
        if (!s && on_cpu) s = fa_cpu_recorder_create(ctx, gfull, NULL, NULL, &rf.rec);
        if (!s && on_cpu) s = fa_cpu_recorder_create(ctx, g, NULL, NULL, &rb.rec);
        if (!s) {
            if (opt.progress) opt.progress(opt.progress_user, "e2e", 0, 1);
            while (!s && ne < max_rounds) {
                int m = opt.iters < max_rounds - ne ? opt.iters : max_rounds - ne;
                s = fa_apply_bench_pair(ctx, exec_recorded, &rb, &rf, ne ? 0 : warm, ne, m,
                                        res->e2e_back_to_back ? FA_BENCH_BACK_TO_BACK : 0, fa_exec_threads(eb),
                                        res->baseline_samples + ne, res->fused_samples + ne);
                if (!s) ne += m;
                if (!s && fa_apply_e2e_concluded(res->baseline_samples, res->fused_samples, ne)) break;
            }
            if (opt.progress) opt.progress(opt.progress_user, "e2e", 1, 1);
        }
        bool again = false;
        if (!s) {
            res->n_samples = ne;
            fa_sample_stats_of(res->baseline_samples, ne, &res->baseline);
            fa_sample_stats_of(res->fused_samples, ne, &res->fused);
            res->speedup = res->fused.median_ns > 0 ? res->baseline.median_ns / res->fused.median_ns : 0;
            res->measured_saving_ns = res->baseline.median_ns - res->fused.median_ns;
            res->peak_bytes_baseline = fa_exec_peak_bytes(eb);
            res->peak_bytes_fused = fa_exec_peak_bytes(efz);
            res->kernels_baseline = g->n_topo;
            res->kernels_fused = gfull->n_topo;
            res->e2e_tolerance = fa_apply_e2e_tolerance(g, opt.tolerance, &res->e2e_rounding_op);
            res->e2e_mismatch = !(res->e2e_max_rel_error <= res->e2e_tolerance); /* NaN too */
            bool changed = res->accepted > 0 || res->e2e_reorders > 0; /* else the fused model is the baseline */
            res->e2e_wins = !res->e2e_mismatch && changed &&
                            fa_apply_e2e_wins(res->baseline_samples, res->fused_samples, ne);
            res->e2e_loss = !res->e2e_mismatch && changed && !res->e2e_wins;
            if (res->e2e_loss && res->accepted > 0 && round < 8) {
                fa_apply_back_off(p, res, round);
                again = true;
            } else if (res->e2e_loss && res->accepted == 0) { /* only the layouts left: drop them */
                layouts = false;
                res->layouts_dropped = true;
                again = true;
            }
            /* the fused model's own kernel trace, for the timeline and the roofline: its rounds'
             * records on cpu, else traced now (no warm-up: efz has just run its rounds) */
            if (!again && rf.rec) res->fused_trace = fa_cpu_recorder_take(rf.rec);
            if (!again && rb.rec) res->baseline_rounds_trace = fa_cpu_recorder_take(rb.rec);
            else if (!again) s = fa_collect(ctx, efz, gfull, 0, opt.iters, NULL, NULL, &res->fused_trace);
        }
        fa_cpu_recorder_free(rf.rec);
        fa_cpu_recorder_free(rb.rec);
        if (s) fa_ctx_wrap(ctx, s, "end-to-end fused model on %s: ", fa_target_name(fa_target_id(kt.t)));
        fa_exec_free(eb);
        fa_exec_free(efz);
        if (!s && !again) res->fused_graph = gfull;
        else fa_graph_free(gfull);
        if (s || !again) break;
    }
    res->predicted_saving_ns = fa_plan_accepted_saving(p, res->verdicts);
done:
    fa_value_map_drop_borrowed(&vm);
    fa_exec_free(cap);
    fa_graph_free(capg);
    fa_value_map_free(&vm);
    if (kt.bin)
        for (int i = 0; i < p->n_clusters; i++)
            if (!kt.bin_shared || !kt.bin_shared[i]) fa_target_fused_free(kt.t, kt.bin[i]);
    free(kt.bin);
    free(kt.bin_shared);
    free(extra);
    free(plan_layout);
    free(order);
    if (s) {
        fa_apply_result_free(res);
        return s;
    }
    *out = res;
    return FA_OK;
}
