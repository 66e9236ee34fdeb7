/* applier/probe — the cost model's probe of fused library kernels (issue 19): a BN fold's or an
 * epilogue's fused kernel built as the applier builds it and timed in the layout the target's
 * fused plan gives it, so pass 1 predicts the kernel the plan will run, not the plain one the
 * baseline traced. */
#include "applier-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct probe_entry {
    char *signature;        /* fa_cluster_signature + "|" + the boundary layouts (malloc'd) */
    double median_ns;       /* <= 0: the kernel could not be built (what says why) */
    double unfused_median_ns;
    int reps, wins;
    char what[300];
} probe_entry;

struct fa_kernel_probe {
    const fa_target_iface *t;
    int threads;
    fa_layout *layout;      /* by tensor id of the graph: what its producer writes in the fused plan
                               (fa_layout_plan_make: every node in its preferred layout) */
    int n_tensors;
    const fa_graph *g;      /* the graph the layouts are of */
    probe_entry *e;
    int n, cap;
    uint64_t spent_ns;      /* creation + warm-up + timed runs, all probes */
    uint64_t budget_ns;
    int built, reused, over_budget;
};

fa_status fa_kernel_probe_create(fa_ctx *ctx, const fa_graph *g, fa_target target, int threads, double budget_s,
                                 fa_kernel_probe **out)
{
    const fa_target_iface *t = NULL;
    fa_status s = fa_target_resolve(ctx, target, &t);
    if (s) return s;
    if (t->available && !t->available())
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "target %s: no device to probe fused kernels on", t->name);
    fa_kernel_probe *p = calloc(1, sizeof *p);
    if (!p) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_layout_plan lp;
    s = fa_layout_plan_make(ctx, t, g, &lp);
    if (s) {
        free(p);
        return s;
    }
    p->t = t;
    p->threads = threads;
    p->g = g;
    p->layout = lp.layout; /* kept; the reorders are not needed */
    lp.layout = NULL;
    p->n_tensors = g->n_tensors;
    fa_layout_plan_free(&lp);
    p->budget_ns = budget_s > 0 ? (uint64_t)(budget_s * 1e9) : (uint64_t)(FA_PROBE_BUDGET_S * 1e9);
    *out = p;
    return FA_OK;
}

void fa_kernel_probe_free(fa_kernel_probe *p)
{
    if (!p) return;
    for (int i = 0; i < p->n; i++) free(p->e[i].signature);
    free(p->e);
    free(p->layout);
    free(p);
}

void fa_kernel_probe_stats(const fa_kernel_probe *p, int *built, int *reused, int *over_budget, double *spent_s)
{
    if (built) *built = p ? p->built : 0;
    if (reused) *reused = p ? p->reused : 0;
    if (over_budget) *over_budget = p ? p->over_budget : 0;
    if (spent_s) *spent_s = p ? (double)p->spent_ns / 1e9 : 0;
}

static const probe_entry *find(const fa_kernel_probe *p, const char *key)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->e[i].signature, key)) return &p->e[i];
    return NULL;
}

static void remember(fa_kernel_probe *p, const char *key, double ns, double uns, int reps, int wins, const char *what)
{
    if (p->n == p->cap) {
        int nc = p->cap ? 2 * p->cap : 32;
        probe_entry *e = realloc(p->e, sizeof *e * (size_t)nc);
        if (!e) return; /* not cached: the next cluster of this signature probes again */
        p->e = e;
        p->cap = nc;
    }
    char *k = strdup(key);
    if (!k) return;
    probe_entry *e = &p->e[p->n++];
    e->signature = k;
    e->median_ns = ns;
    e->unfused_median_ns = uns;
    e->reps = reps;
    e->wins = wins;
    snprintf(e->what, sizeof e->what, "%s", what);
}

/* The unfused and fused sub-graphs of cluster ci of p, as the applier builds and judges them
 * (fa_fused_graph_scoped: the fused one with its BN fold applied, its boundary tensors in the
 * plan's layouts pr->layout; the unfused one plain, as the baseline ran it), timed interleaved:
 * FA_PROBE_WARMUP untimed pairs, then pairs until FA_PROBE_MIN_REPS of them took
 * FA_PROBE_SLICE_MS or FA_PROBE_REPS were taken. */
static bool measure(fa_kernel_probe *pr, const fa_graph *g, const fa_plan *p, int ci, char *key, size_t key_cap,
                    const char *signature, fa_fused_probe_result *out)
{
    const fa_cluster *c = &p->clusters[ci];
    fa_ctx *cx = fa_ctx_create();
    fa_graph *gf = NULL, *gu = NULL;
    fa_exec *ef = NULL, *eu = NULL;
    fa_layout *in_l = NULL, *out_l = NULL;
    bool ok = false;
    uint64_t t0 = fa_now_ns();
    int ids[1] = {c->id};
    fa_status s = cx ? fa_fused_graph_scoped(cx, g, p, ids, 1, true, true, -1, 0, c->outputs, c->n_outputs, &gf)
                     : FA_ERR_NOMEM;
    bool unknown = false;
    char judged[8];
    if (!s) s = fa_apply_boundary_layouts(cx, g, gf, g == pr->g ? pr->layout : NULL, NULL, &in_l, &out_l, &unknown, judged,
                                          sizeof judged);
    char lays[160] = "";
    size_t lw = 0;
    for (int k = 0; !s && k < gf->n_inputs + gf->n_outputs && lw < sizeof lays; k++)
        lw += (size_t)snprintf(lays + lw, sizeof lays - lw, "%s%s", lw ? "," : "",
                               fa_layout_name(k < gf->n_inputs ? in_l[k] : out_l[k - gf->n_inputs]));
    snprintf(key, key_cap, "%s|%s", signature, lays);
    const probe_entry *hit = s ? NULL : find(pr, key);
    if (hit) {
        pr->reused++;
        out->cached = true;
        out->median_ns = hit->median_ns;
        out->unfused_median_ns = hit->unfused_median_ns;
        out->reps = hit->reps;
        out->wins = hit->wins;
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
    fa_exec_options eo = {.target = pr->t->id, .threads = pr->threads, .blocked_layouts = true, .input_layouts = in_l,
                          .output_layouts = out_l};
    fa_exec_options uo = {.target = pr->t->id, .threads = pr->threads};
    if (!s) s = fa_fused_graph_scoped(cx, g, p, ids, 1, true, false, -1, 0, c->outputs, c->n_outputs, &gu);
    if (!s) s = fa_exec_create(cx, gf, &eo, &ef);
    if (!s) s = fa_exec_create(cx, gu, &uo, &eu);
    if (!s) s = fa_exec_fill_inputs(cx, ef, 1);
    if (!s) s = fa_exec_fill_inputs(cx, eu, 1);
    double fns[FA_PROBE_REPS], uns[FA_PROBE_REPS], t_timed = 0;
    int n = 0;
    /* interleaved pairs, the order alternating (A B, then B A, ...) so drift hits both sides */
    while (!s && n < FA_PROBE_REPS && (n < FA_PROBE_MIN_REPS || t_timed < FA_PROBE_SLICE_MS * 1e6)) {
        int w = n ? 0 : FA_PROBE_WARMUP;
        s = n % 2 ? fa_apply_bench_pair(cx, fa_apply_exec_once, ef, eu, w, 1, fns + n, uns + n)
                  : fa_apply_bench_pair(cx, fa_apply_exec_once, eu, ef, w, 1, uns + n, fns + n);
        if (!s) t_timed += fns[n] + uns[n];
        if (!s) n++;
    }
    pr->spent_ns += fa_now_ns() - t0;
    const char *impl = NULL, *kname = NULL;
    for (int k = 0; !s && k < gf->n_topo; k++) {
        const fa_node *fn = gf->nodes[gf->topo[k]];
        if (!kname || strncmp(fn->op_type, "Fused", 5) == 0 || fa_exec_kernel_impl(ef, fn)) {
            kname = fa_exec_kernel_name(ef, fn);
            impl = fa_exec_kernel_impl(ef, fn);
            if (impl) break;
        }
    }
    if (s) {
        snprintf(out->what, sizeof out->what, "the fused kernel could not be run (%.200s)", fa_ctx_errmsg(cx));
        remember(pr, key, -1, -1, 0, -1, out->what);
        goto done;
    }
    pr->built++;
    double med = fa_stats_median(fns, (size_t)n), umed = fa_stats_median(uns, (size_t)n);
    out->median_ns = med;
    out->unfused_median_ns = umed;
    out->reps = n;
    out->wins = 0;
    for (int k = 0; k < n; k++) out->wins += fns[k] < uns[k];
    out->cached = false;
    snprintf(out->what, sizeof out->what, "%s (%s) on boundary layouts %s ran in %.0f ns against its unfused "
             "sub-graph's %.0f ns in the baseline's plain layout (medians of %d interleaved pairs after %d warm-up, %d "
             "thread(s))", kname ? kname : "?", impl ? impl : "no library implementation reported", lays, med, umed, n,
             FA_PROBE_WARMUP, fa_exec_threads(ef));
    remember(pr, key, med, umed, n, out->wins, out->what);
    ok = true;
done:
    fa_exec_free(ef);
    fa_exec_free(eu);
    fa_graph_free(gf);
    fa_graph_free(gu);
    free(in_l);
    free(out_l);
    fa_ctx_free(cx);
    return ok;
}

bool fa_kernel_probe_fused(void *user, const fa_graph *g, const fa_plan *p, int ci, const char *signature,
                           fa_fused_probe_result *out)
{
    fa_kernel_probe *pr = user;
    memset(out, 0, sizeof *out);
    if (!pr || !p || ci < 0 || ci >= p->n_clusters || !signature) return false;
    const fa_cluster *c = &p->clusters[ci];
    if (c->kind != FA_CLUSTER_BN_FOLD && c->kind != FA_CLUSTER_EPILOGUE) return false;
    size_t cap = strlen(signature) + 200;
    char *key = malloc(cap);
    if (!key) return false;
    bool ok = measure(pr, g, p, ci, key, cap, signature, out);
    free(key);
    return ok;
}
