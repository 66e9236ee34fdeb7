/* applier/probe — the cost model's probe of fused library kernels (issue 19): a BN fold's or an
 * epilogue's fused kernel built as the applier builds it and timed in the layout the target's
 * fused plan gives it, so pass 1 predicts the kernel the plan will run, not the plain one the
 * baseline traced. */
#include "applier-impl.h"

#include "advisor/codegen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct probe_entry {
    char *signature;        /* fa_cluster_signature + "|" + the boundary layouts (malloc'd) */
    double median_ns;       /* <= 0: the kernel could not be built (what says why) */
    double unfused_median_ns;
    double paired_ratio;    /* median of fns[i] / uns[i] (fa_stats_paired_ratio) */
    double ratio_lo, ratio_hi; /* its sign-test interval (fa_stats_paired_ratio_interval); NAN none */
    int reps, wins;
    /* the fused kernel against the members as the fused plan runs them unfused (timed only while
     * it is not faster than the plain ones: time_visit) */
    double pfns[FA_PROBE_REPS * FA_PROBE_VISITS], puns[FA_PROBE_REPS * FA_PROBE_VISITS];
    int preps;
    fa_fused_probe_result plan;  /* their summary (fa_probe_pairs_summary; reps 0: not timed) */
    char what[300];
    /* for the revisits (fa_kernel_probe_revisit): the cluster as first probed, and every pair */
    const fa_cluster *clusters; /* its plan's clusters array: an identity only, never read unless
                                   it is the live plan's that revisit is given */
    int ci;
    const fa_graph *g;
    int visits;
    double fns[FA_PROBE_REPS * FA_PROBE_VISITS], uns[FA_PROBE_REPS * FA_PROBE_VISITS];
    char kname[80], impl[64], lays[160];
    int threads;
    fa_layout gen_layout;       /* the layout that kernel reads and writes (PLAIN for a library one) */
    const fa_fused_binary *bin; /* a generated kernel's compiled binary (chains, reductions,
                               horizontal groups; owned by the probe's compiled table); NULL for
                               a library kernel */
} probe_entry;

struct fa_kernel_probe {
    const fa_target_iface *t;
    int threads;
    fa_layout plan_layout;  /* the plan's layout its executors and kernels take (PLAIN: none) */
    fa_layout *layout;      /* by tensor id of the graph: what its producer writes in the fused plan
                               (fa_layout_plan_make: each node as the executor places it) */
    int n_tensors;
    const fa_graph *g;      /* the graph the layouts are of */
    probe_entry *e;
    int n, cap;
    fa_intern *e_ids;       /* entry key -> index in e (a cluster's lookup is one hash, not a scan) */
    uint64_t spent_ns;      /* creation + warm-up + timed runs, all probes */
    uint64_t budget_ns;
    int built, reused, over_budget;
    char *cache_dir;        /* the generated kernels' compile cache (NULL: the target's default) */
    uint64_t cache_max_bytes;
    struct compiled {       /* generated kernels by fa_cluster_signature (a kernel of another
                               layout than a later cluster's plan gives is still correct: the
                               executor plans reorders around the layout it declares) */
        char *signature;
        fa_fused_binary *bin; /* NULL: could not be built (why says so) */
        fa_layout layout;     /* what it reads and writes (fa_generated.layout) */
        bool shared;          /* bin is an earlier entry's (the same code: fa_generated.same_as) */
        char why[200];
    } *cm;
    int n_cm, cap_cm;
    fa_intern *cm_ids;      /* signature -> index in cm */
};

fa_status fa_kernel_probe_create(fa_ctx *ctx, const fa_graph *g, fa_target target, int threads, double budget_s,
                                 fa_kernel_probe **out)
{
    const fa_target_iface *t = NULL;
    fa_status s = fa_target_resolve(ctx, target, &t);
    if (s) return s;
    if (!fa_target_available(t))
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "target %s: no device to probe fused kernels on", fa_target_name(fa_target_id(t)));
    fa_kernel_probe *p = calloc(1, sizeof *p);
    if (p && (!(p->e_ids = fa_intern_create(NULL)) || !(p->cm_ids = fa_intern_create(NULL)))) {
        fa_intern_free(p->e_ids);
        free(p);
        p = NULL;
    }
    if (!p) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_layout_plan lp;
    fa_plan_layouts pl;
    fa_target_plan_layouts(fa_target_id(t), &pl);
    s = fa_layout_plan_make(ctx, t, g, pl.deflt, &lp);
    if (s) {
        fa_intern_free(p->e_ids);
        fa_intern_free(p->cm_ids);
        free(p);
        return s;
    }
    p->t = t;
    p->threads = threads;
    p->plan_layout = pl.deflt;
    p->g = g;
    p->layout = lp.layout; /* kept; the reorders are not needed */
    lp.layout = NULL;
    p->n_tensors = g->n_tensors;
    fa_layout_plan_free(&lp);
    p->budget_ns = budget_s > 0 ? (uint64_t)(budget_s * 1e9) : (uint64_t)(FA_PROBE_BUDGET_S * 1e9);
    *out = p;
    return FA_OK;
}

fa_status fa_kernel_probe_set_layout(fa_ctx *ctx, fa_kernel_probe *p, fa_layout plan_layout)
{
    if (!p || plan_layout == p->plan_layout) return FA_OK;
    if ((unsigned)plan_layout >= FA_LAYOUT_COUNT) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "plan layout %d out of range", (int)plan_layout);
    fa_layout_plan lp;
    fa_status s = fa_layout_plan_make(ctx, p->t, p->g, plan_layout, &lp);
    if (s) return s;
    free(p->layout);
    p->layout = lp.layout;
    lp.layout = NULL;
    fa_layout_plan_free(&lp);
    p->plan_layout = plan_layout;
    return FA_OK;
}

void fa_kernel_probe_free(fa_kernel_probe *p)
{
    if (!p) return;
    for (int i = 0; i < p->n; i++) free(p->e[i].signature);
    for (int i = 0; i < p->n_cm; i++) {
        free(p->cm[i].signature);
        if (p->cm[i].bin && !p->cm[i].shared) fa_target_fused_free(p->t, p->cm[i].bin);
    }
    free(p->cm);
    free(p->e);
    fa_intern_free(p->cm_ids);
    fa_intern_free(p->e_ids);
    free(p->layout);
    free(p->cache_dir);
    free(p);
}

void fa_kernel_probe_stats(const fa_kernel_probe *p, int *built, int *reused, int *over_budget, double *spent_s)
{
    if (built) *built = p ? p->built : 0;
    if (reused) *reused = p ? p->reused : 0;
    if (over_budget) *over_budget = p ? p->over_budget : 0;
    if (spent_s) *spent_s = p ? (double)p->spent_ns / 1e9 : 0;
}

fa_status fa_kernel_probe_set_cache(fa_ctx *ctx, fa_kernel_probe *p, const char *cache_dir, uint64_t cache_max_bytes)
{
    if (!p) return FA_OK;
    char *d = cache_dir ? strdup(cache_dir) : NULL;
    if (cache_dir && !d) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    free(p->cache_dir);
    p->cache_dir = d;
    p->cache_max_bytes = cache_max_bytes;
    return FA_OK;
}

/* The provider of a probed generated kernel: its one FusedKernel node gets the compiled binary. */
typedef struct probe_provider {
    const fa_target_iface *t;
    const fa_fused_binary *bin;
} probe_provider;

static fa_status provide_probed(void *user, fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_custom_kernel *out,
                                bool *provided)
{
    const probe_provider *pp = user;
    *provided = false;
    if (strcmp(n->domain, FA_FUSED_DOMAIN) || strcmp(n->op_type, "FusedKernel")) return FA_OK;
    fa_status s = fa_target_fused_node_kernel(ctx, pp->t, pp->bin, g, n, out);
    if (!s) *provided = true;
    return s;
}

static struct compiled *compiled_of(const fa_kernel_probe *p, const char *signature)
{
    int32_t i = fa_intern_find(p->cm_ids, signature, strlen(signature));
    return i >= 0 && i < p->n_cm ? &p->cm[i] : NULL;
}

/* The generated kernels of clusters ci[0..n) of p, built as the applier builds them
 * (fa_apply_generate_batch: one compiler process, through the probe's kernel cache, sources not
 * written), added to pr's compiled table under sigs[k]; a kernel that cannot be generated or
 * built is added with its reason. Returns FA_ERR_NOMEM only: the compiler's own failure is each
 * kernel's reason. */
static fa_status compile_batch(fa_ctx *cx, fa_kernel_probe *pr, const fa_graph *g, const fa_plan *p, const int *ci,
                               const char *const *sigs, int n)
{
    fa_generated *gen = calloc((size_t)n + 1, sizeof *gen);
    fa_status s = gen ? FA_OK : FA_ERR_NOMEM;
    if (!s && pr->n_cm + n > pr->cap_cm) {
        int nc = pr->n_cm + n + 16;
        struct compiled *cm = realloc(pr->cm, sizeof *cm * (size_t)nc);
        if (!cm) s = FA_ERR_NOMEM;
        else {
            pr->cm = cm;
            pr->cap_cm = nc;
        }
    }
    if (!s) {
        fa_fused_compile_options co = {pr->cache_dir, pr->cache_max_bytes, NULL};
        s = fa_apply_generate_batch(cx, pr->t, g, p, ci, n, pr->plan_layout, &co, NULL, gen) == FA_ERR_NOMEM ? FA_ERR_NOMEM
                                                                                                           : FA_OK;
        fa_ctx_clear(cx);
    }
    for (int k = 0; !s && k < n; k++) {
        struct compiled *c = &pr->cm[pr->n_cm];
        memset(c, 0, sizeof *c);
        bool added = false;
        if (!(c->signature = strdup(sigs[k])) || fa_intern_str(pr->cm_ids, sigs[k], &added, NULL) != pr->n_cm || !added) {
            free(c->signature); /* (a repeated signature is never compiled twice: prepare and
                                   generated_kernel look it up first) */
            s = FA_ERR_NOMEM;
            break;
        }
        pr->n_cm++;
        c->bin = gen[k].bin;
        c->layout = gen[k].layout;
        c->shared = gen[k].same_as >= 0;
        gen[k].bin = NULL;
        if (!c->bin)
            snprintf(c->why, sizeof c->why, "could not be %s (%.160s)", gen[k].generated ? "built" : "generated",
                     gen[k].why);
    }
    for (int k = 0; gen && k < n; k++) /* not taken (out of memory): each binary freed once */
        if (gen[k].bin && gen[k].same_as < 0) fa_target_fused_free(pr->t, gen[k].bin);
    free(gen);
    return s ? fa_ctx_error(cx, FA_ERR_NOMEM, "out of memory") : FA_OK;
}

int fa_kernel_probe_prepare(void *user, const fa_graph *g, const fa_plan *p)
{
    fa_kernel_probe *pr = user;
    if (!pr || !p || !g) return 0;
    int *ci = calloc((size_t)p->n_clusters + 1, sizeof *ci);
    char **sigs = calloc((size_t)p->n_clusters + 1, sizeof *sigs);
    fa_ctx *cx = fa_ctx_create();
    fa_intern *batch = fa_intern_create(NULL); /* this batch's signatures, each once */
    int n = 0, before = pr->n_cm;
    uint64_t t0 = fa_now_ns();
    for (int i = 0; ci && sigs && cx && batch && i < p->n_clusters; i++) {
        if (!fa_apply_needs_codegen(&p->clusters[i])) continue;
        fa_buf b;
        fa_buf_init(&b);
        fa_cluster_signature(g, &p->clusters[i], &b);
        bool added = false;
        bool dup = b.oom || !b.data || compiled_of(pr, b.data) || fa_intern_str(batch, b.data, &added, NULL) < 0 || !added;
        if (dup) {
            fa_buf_free(&b);
            continue;
        }
        ci[n] = i;
        sigs[n++] = b.data;
    }
    if (n > 0 && pr->spent_ns < pr->budget_ns) compile_batch(cx, pr, g, p, ci, (const char *const *)sigs, n);
    pr->spent_ns += fa_now_ns() - t0;
    for (int k = 0; k < n; k++) free(sigs[k]);
    free(sigs);
    free(ci);
    fa_intern_free(batch);
    fa_ctx_free(cx);
    int built = 0;
    for (int i = before; i < pr->n_cm; i++) built += pr->cm[i].bin != NULL;
    return built;
}

/* The compiled generated kernel of cluster ci of p (signature sig): from the table, else
 * compiled now on its own. NULL with why set when it cannot be generated or built. */
static const fa_fused_binary *generated_kernel(fa_ctx *cx, fa_kernel_probe *pr, const fa_graph *g, const fa_plan *p, int ci,
                                               const char *sig, const char **why, fa_layout *layout)
{
    struct compiled *c = compiled_of(pr, sig);
    if (!c) {
        const char *sigs[1] = {sig};
        int cis[1] = {ci};
        if (compile_batch(cx, pr, g, p, cis, sigs, 1)) {
            *why = "out of memory";
            return NULL;
        }
        c = compiled_of(pr, sig);
    }
    *why = c ? c->why : "out of memory";
    *layout = c ? c->layout : FA_LAYOUT_PLAIN;
    return c ? c->bin : NULL;
}

static const probe_entry *find(const fa_kernel_probe *p, const char *key)
{
    int32_t i = fa_intern_find(p->e_ids, key, strlen(key));
    return i >= 0 && i < p->n ? &p->e[i] : NULL;
}

void fa_probe_pairs_summary(const double *fns, const double *uns, int n, fa_fused_probe_result *out)
{
    double fs[FA_PROBE_REPS * FA_PROBE_VISITS], us[FA_PROBE_REPS * FA_PROBE_VISITS];
    if (n > FA_PROBE_REPS * FA_PROBE_VISITS) n = FA_PROBE_REPS * FA_PROBE_VISITS;
    if (n < 0) n = 0;
    memcpy(fs, fns, sizeof(double) * (size_t)n);
    memcpy(us, uns, sizeof(double) * (size_t)n);
    out->median_ns = fa_stats_median(fs, (size_t)n);
    out->unfused_median_ns = fa_stats_median(us, (size_t)n);
    out->paired_ratio = fa_stats_paired_ratio(fns, uns, (size_t)n);
    fa_stats_paired_ratio_interval(fns, uns, (size_t)n, &out->ratio_lo, &out->ratio_hi);
    out->reps = n;
    out->wins = 0;
    for (int k = 0; k < n; k++) out->wins += fns[k] < uns[k];
}

/* The entry's figures from all its pairs (fa_probe_pairs_summary) and its sentence. */
static void summarize(probe_entry *e)
{
    fa_fused_probe_result r;
    fa_probe_pairs_summary(e->fns, e->uns, e->reps, &r);
    e->median_ns = r.median_ns;
    e->unfused_median_ns = r.unfused_median_ns;
    e->paired_ratio = r.paired_ratio;
    e->ratio_lo = r.ratio_lo;
    e->ratio_hi = r.ratio_hi;
    e->wins = r.wins;
    memset(&e->plan, 0, sizeof e->plan);
    if (e->preps > 0) fa_probe_pairs_summary(e->pfns, e->puns, e->preps, &e->plan);
    snprintf(e->what, sizeof e->what, "%s (%s) on boundary layouts %s ran in %.0f ns against its unfused sub-graph's %.0f "
             "ns in the baseline's plain layout (medians of %d interleaved pairs in %d visit(s) after %d warm-up each, %d "
             "thread(s))", e->kname[0] ? e->kname : "?", e->impl[0] ? e->impl : "no library implementation reported",
             e->lays, e->median_ns, e->unfused_median_ns, e->reps, e->visits, FA_PROBE_WARMUP, e->threads);
}

/* A new entry for key (NULL when out of memory: the next cluster of this signature probes again). */
static probe_entry *remember(fa_kernel_probe *p, const char *key)
{
    if (p->n == p->cap) {
        int nc = p->cap ? 2 * p->cap : 32;
        probe_entry *e = realloc(p->e, sizeof *e * (size_t)nc);
        if (!e) return NULL;
        p->e = e;
        p->cap = nc;
    }
    char *k = strdup(key);
    bool added = false;
    if (!k || fa_intern_str(p->e_ids, key, &added, NULL) != p->n || !added) {
        free(k);
        return NULL;
    }
    probe_entry *e = &p->e[p->n++];
    memset(e, 0, sizeof *e);
    e->signature = k;
    return e;
}

/* Cluster ci of p's fused sub-graph (fa_fused_graph_scoped: its BN fold applied) with its boundary
 * layouts from pr->layout (*in_l, *out_l; lays their names, the cache key's second half). */
static fa_status build_fused(fa_ctx *cx, fa_kernel_probe *pr, const fa_graph *g, const fa_plan *p, int ci, fa_layout gen_layout,
                             fa_graph **gf, fa_layout **in_l, fa_layout **out_l, char *lays, size_t lays_cap)
{
    const fa_cluster *c = &p->clusters[ci];
    int ids[1] = {c->id};
    bool unknown = false;
    char judged[8];
    fa_status s = fa_fused_graph_scoped(cx, g, p, ids, 1, true, true, -1, 0, c->outputs, c->n_outputs, gf);
    if (!s) s = fa_apply_boundary_layouts(cx, g, *gf, g == pr->g ? pr->layout : NULL, NULL, in_l, out_l, &unknown, judged,
                                          sizeof judged);
    /* a generated kernel writes its output in the layout it was generated for (gen_layout:
     * fa_layout_of_generated, PLAIN where it reads plain tensors), and the fused plan keeps it
     * there (the applier's plan layouts: its consumers read it from there), where the unfused
     * graph's plan would have the members' last op write it */
    for (int k = 0; !s && fa_apply_needs_codegen(c) && k < (*gf)->n_outputs; k++) (*out_l)[k] = gen_layout;
    size_t lw = 0;
    lays[0] = 0;
    for (int k = 0; !s && k < (*gf)->n_inputs + (*gf)->n_outputs && lw < lays_cap; k++)
        lw += (size_t)snprintf(lays + lw, lays_cap - lw, "%s%s", lw ? "," : "",
                               fa_layout_name(k < (*gf)->n_inputs ? (*in_l)[k] : (*out_l)[k - (*gf)->n_inputs]));
    return s;
}

/* One visit's pairs of executor eu (unfused) against ef (fused), the order alternating:
 * FA_PROBE_WARMUP untimed pairs first, then pairs until FA_PROBE_MIN_REPS of them took
 * FA_PROBE_SLICE_MS or FA_PROBE_REPS were taken, written to uns[0..) and fns[0..). *taken: the
 * pairs timed (set on failure too). */
static fa_status time_pairs(fa_ctx *cx, fa_exec *eu, fa_exec *ef, double *uns, double *fns, int *taken)
{
    double t_timed = 0;
    int j = 0;
    unsigned how = fa_apply_cluster_bench(eu);
    fa_status s = FA_OK;
    while (!s && j < FA_PROBE_REPS && (j < FA_PROBE_MIN_REPS || t_timed < FA_PROBE_SLICE_MS * 1e6)) {
        int w = j ? 0 : FA_PROBE_WARMUP;
        s = j % 2 ? fa_apply_bench_pair(cx, fa_apply_exec_once, ef, eu, w, 0, 1, how, fa_exec_threads(eu), fns + j, uns + j)
                  : fa_apply_bench_pair(cx, fa_apply_exec_once, eu, ef, w, 0, 1, how, fa_exec_threads(eu), uns + j, fns + j);
        if (!s) t_timed += fns[j] + uns[j], j++;
    }
    *taken = j;
    return s;
}

/* One visit of entry e: the fused sub-graph gf (build_fused, boundary layouts in_l / out_l) and
 * cluster ci's unfused one (plain, as the baseline ran it), fed deterministic values, timed
 * interleaved, the order alternating (A B, then B A, ...) so drift hits both sides:
 * FA_PROBE_WARMUP untimed pairs, then pairs until FA_PROBE_MIN_REPS of them took
 * FA_PROBE_SLICE_MS or FA_PROBE_REPS were taken, appended to e->fns / e->uns from *n (updated);
 * e->kname, impl and threads set from the fused executor. */
static fa_status time_visit(fa_ctx *cx, fa_kernel_probe *pr, const fa_graph *g, const fa_plan *p, int ci,
                            const fa_graph *gf, const fa_layout *in_l, const fa_layout *out_l, probe_entry *e, int *n)
{
    const fa_cluster *c = &p->clusters[ci];
    int ids[1] = {c->id};
    fa_graph *gu = NULL;
    fa_exec *ef = NULL, *eu = NULL;
    probe_provider pp = {pr->t, e->bin};
    fa_exec_options eo = fa_exec_options_measured(fa_target_id(pr->t), pr->threads);
    eo.blocked_layouts = pr->plan_layout != FA_LAYOUT_PLAIN;
    eo.plan_layout = pr->plan_layout;
    eo.input_layouts = in_l;
    eo.output_layouts = out_l;
    eo.provider = e->bin ? provide_probed : NULL;
    eo.provider_user = e->bin ? &pp : NULL;
    /* the unfused side as the baseline ran it: each convolution plain or reordered inside, by the
     * same process-wide measurement (fa_exec_options_measured) */
    fa_exec_options uo = fa_exec_options_measured(fa_target_id(pr->t), pr->threads);
    fa_status s = fa_fused_graph_scoped(cx, g, p, ids, 1, true, false, -1, 0, c->outputs, c->n_outputs, &gu);
    if (!s) s = fa_exec_create(cx, gf, &eo, &ef);
    if (!s) s = fa_exec_create(cx, gu, &uo, &eu);
    if (!s) s = fa_exec_fill_inputs(cx, ef, 1);
    if (!s) s = fa_exec_fill_inputs(cx, eu, 1);
    int j = 0;
    if (!s) s = time_pairs(cx, eu, ef, e->uns + *n, e->fns + *n, &j);
    *n += j;
    /* While the fused kernel is not faster than the members as the baseline runs them, it is timed
     * against them as the fused plan would run them if this cluster were left unfused too: the same
     * unfused sub-graph on the plan's executor, its boundaries in the fused one's layouts (the
     * applier's judge_in_plan_layout, applier/apply.c, says why that is the alternative the plan
     * has; the advisor proposes such a cluster on this ratio: advisor/advisor.c) */
    fa_exec *ep = NULL;
    fa_layout *u_in = NULL, *u_out = NULL;
    double r_plain = s || *n <= 0 ? 0 : fa_stats_paired_ratio(e->fns, e->uns, (size_t)*n);
    if (!s && eo.blocked_layouts && r_plain >= 1 && e->preps + FA_PROBE_REPS <= FA_PROBE_REPS * FA_PROBE_VISITS) {
        /* a failure here is this comparison's, not the probe's: the plain figures stand */
        fa_exec_options po = eo;
        po.provider = NULL;
        po.provider_user = NULL;
        fa_status ps = fa_apply_member_layouts(cx, gf, in_l, out_l, gu, &u_in, &u_out);
        po.input_layouts = u_in;
        po.output_layouts = u_out;
        if (!ps) ps = fa_exec_create(cx, gu, &po, &ep);
        if (!ps) ps = fa_exec_fill_inputs(cx, ep, 1);
        int k = 0;
        if (!ps) ps = time_pairs(cx, ep, ef, e->puns + e->preps, e->pfns + e->preps, &k);
        if (ps == FA_ERR_NOMEM) s = ps;
        else if (ps) fa_ctx_clear(cx);
        else e->preps += k;
    }
    fa_exec_free(ep);
    free(u_in);
    free(u_out);
    const char *im = NULL, *kn = NULL;
    for (int k = 0; !s && k < gf->n_topo; k++) {
        const fa_node *fn = gf->nodes[gf->topo[k]];
        if (!kn || strncmp(fn->op_type, "Fused", 5) == 0 || fa_exec_kernel_impl(ef, fn)) {
            kn = fa_exec_kernel_name(ef, fn);
            im = fa_exec_kernel_impl(ef, fn);
            if (im) break;
        }
    }
    if (!s) {
        snprintf(e->kname, sizeof e->kname, "%s", kn ? kn : "");
        snprintf(e->impl, sizeof e->impl, "%s", im ? im : e->bin ? "generated, compiled by the target" : "");
        e->threads = fa_exec_threads(ef);
    }
    fa_exec_free(ef);
    fa_exec_free(eu);
    fa_graph_free(gu);
    return s;
}

static void result_of(const probe_entry *e, fa_fused_probe_result *out)
{
    out->median_ns = e->median_ns;
    out->unfused_median_ns = e->unfused_median_ns;
    out->paired_ratio = e->paired_ratio;
    out->ratio_lo = e->ratio_lo;
    out->ratio_hi = e->ratio_hi;
    out->reps = e->reps;
    out->wins = e->wins;
    out->plan_unfused_median_ns = e->plan.reps > 0 ? e->plan.unfused_median_ns : 0;
    out->plan_ratio = e->plan.reps > 0 ? e->plan.paired_ratio : 0;
    out->plan_ratio_lo = e->plan.reps > 0 ? e->plan.ratio_lo : NAN;
    out->plan_ratio_hi = e->plan.reps > 0 ? e->plan.ratio_hi : NAN;
    out->plan_reps = e->plan.reps;
    out->plan_wins = e->plan.reps > 0 ? e->plan.wins : -1;
}

/* The unfused and fused sub-graphs of cluster ci of p, as the applier builds and judges them
 * (fa_fused_graph_scoped: the fused one with its BN fold applied, its boundary tensors in the
 * plan's layouts pr->layout; the unfused one plain, as the baseline ran it), fed deterministic
 * values, timed interleaved (time_visit): the first visit, FA_PROBE_MIN_REPS to FA_PROBE_REPS
 * pairs. A signature and layout set probed before is served from its entry. */
static bool measure(fa_kernel_probe *pr, const fa_graph *g, const fa_plan *p, int ci, char *key, size_t key_cap,
                    const char *signature, fa_fused_probe_result *out)
{
    fa_ctx *cx = fa_ctx_create();
    fa_graph *gf = NULL;
    fa_layout *in_l = NULL, *out_l = NULL;
    bool ok = false;
    uint64_t t0 = fa_now_ns();
    char lays[160] = "";
    /* a generated kernel first: its layout is its output's boundary layout, part of the key */
    fa_layout gl = FA_LAYOUT_PLAIN;
    const fa_fused_binary *gbin = NULL;
    const char *why = NULL;
    bool gen_needed = fa_apply_needs_codegen(&p->clusters[ci]);
    if (cx && gen_needed && (compiled_of(pr, signature) || pr->spent_ns < pr->budget_ns))
        gbin = generated_kernel(cx, pr, g, p, ci, signature, &why, &gl);
    fa_status s = cx ? build_fused(cx, pr, g, p, ci, gl, &gf, &in_l, &out_l, lays, sizeof lays) : FA_ERR_NOMEM;
    snprintf(key, key_cap, "%s|%s", signature, lays);
    const probe_entry *hit = s ? NULL : find(pr, key);
    if (hit) {
        pr->reused++;
        out->cached = true;
        result_of(hit, out);
        snprintf(out->what, sizeof out->what, "%s; the same signature and layouts probed earlier in this plan",
                 hit->what);
        ok = hit->median_ns > 0;
        goto done;
    }
    if (!s && pr->spent_ns >= pr->budget_ns) {
        pr->over_budget++;
        snprintf(out->what, sizeof out->what, "the probes' budget of %.0f s for this plan is spent",
                 (double)pr->budget_ns / 1e9);
        goto done;
    }
    probe_entry tmp;
    memset(&tmp, 0, sizeof tmp);
    int n = 0;
    tmp.gen_layout = gl;
    if (!s && gen_needed && !(tmp.bin = gbin)) s = fa_ctx_error(cx, FA_ERR_INPUT, "its generated kernel %s", why ? why : "was not built");
    if (!s) s = time_visit(cx, pr, g, p, ci, gf, in_l, out_l, &tmp, &n);
    pr->spent_ns += fa_now_ns() - t0;
    probe_entry *e = remember(pr, key);
    if (s) {
        snprintf(out->what, sizeof out->what, "the fused kernel could not be run (%.200s)", fa_ctx_errmsg(cx));
        if (e) {
            e->median_ns = e->unfused_median_ns = -1;
            e->wins = -1;
            snprintf(e->what, sizeof e->what, "%s", out->what);
        }
        goto done;
    }
    pr->built++;
    snprintf(tmp.lays, sizeof tmp.lays, "%s", lays);
    tmp.clusters = p->clusters;
    tmp.ci = ci;
    tmp.g = g;
    tmp.reps = n;
    tmp.visits = 1;
    if (e) { /* cached; else served once */
        tmp.signature = e->signature;
        *e = tmp;
    } else {
        e = &tmp;
    }
    summarize(e);
    result_of(e, out);
    out->cached = false;
    snprintf(out->what, sizeof out->what, "%s", e->what);
    ok = true;
done:
    fa_graph_free(gf);
    free(in_l);
    free(out_l);
    fa_ctx_free(cx);
    return ok;
}

int fa_kernel_probe_revisit(void *user, const fa_plan *p)
{
    fa_kernel_probe *pr = user;
    int done = 0;
    for (int i = 0; pr && p && i < pr->n; i++) {
        probe_entry *e = &pr->e[i];
        if (e->median_ns <= 0 || e->visits >= FA_PROBE_VISITS || e->reps + FA_PROBE_REPS > FA_PROBE_REPS * FA_PROBE_VISITS)
            continue;
        /* an entry of this plan only, rebuilt from the live plan (an earlier plan's is served, not revisited) */
        if (e->clusters != p->clusters || e->ci >= p->n_clusters || !e->g) continue;
        if (pr->spent_ns >= pr->budget_ns) {
            pr->over_budget++;
            break;
        }
        uint64_t t0 = fa_now_ns();
        fa_ctx *cx = fa_ctx_create();
        fa_graph *gf = NULL;
        fa_layout *in_l = NULL, *out_l = NULL;
        char lays[160];
        int n = e->reps;
        fa_plan view = *p;
        view.n_clusters = e->ci + 1;
        fa_buf key;
        fa_buf_init(&key);
        fa_status s = cx ? build_fused(cx, pr, e->g, &view, e->ci, e->gen_layout, &gf, &in_l, &out_l, lays, sizeof lays)
                         : FA_ERR_NOMEM;
        /* the same signature and layouts as when first probed (the array could be a new plan's at
         * the old address): else it is not this entry's cluster */
        if (!s) {
            fa_cluster_signature(e->g, &p->clusters[e->ci], &key);
            fa_buf_printf(&key, "|%s", lays);
        }
        bool same = !s && !key.oom && key.data && !strcmp(key.data, e->signature);
        fa_buf_free(&key);
        if (same) s = time_visit(cx, pr, e->g, &view, e->ci, gf, in_l, out_l, e, &n);
        pr->spent_ns += fa_now_ns() - t0;
        if (same && !s) { /* a revisit that fails keeps the pairs of the earlier visits */
            e->reps = n;
            e->visits++;
            summarize(e);
            done++;
        }
        fa_graph_free(gf);
        free(in_l);
        free(out_l);
        fa_ctx_free(cx);
    }
    return done;
}

bool fa_kernel_probe_fused(void *user, const fa_graph *g, const fa_plan *p, int ci, const char *signature,
                           fa_fused_probe_result *out)
{
    fa_kernel_probe *pr = user;
    memset(out, 0, sizeof *out);
    if (!pr || !p || ci < 0 || ci >= p->n_clusters || !signature) return false;
    size_t cap = strlen(signature) + 200;
    char *key = malloc(cap);
    if (!key) return false;
    bool ok = measure(pr, g, p, ci, key, cap, signature, out);
    free(key);
    return ok;
}
