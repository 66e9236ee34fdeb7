/* applier/judge — helpers shared by the cpu and cuda appliers: relative error, the robust
 * benchmark statistics, and the one accept/reject rule for a cluster's interleaved samples. */
#include "applier-impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One stretch [lo, hi) of fa_apply_rel_error's scan: the largest ordinary |b|, the largest
 * difference at an ordinary element, the largest relative difference at a sentinel, and whether
 * a NaN or an infinity lies on one side only (then the result is infinite whatever else). */
typedef struct rel_part {
    double md, mb, rs;
    bool bad;
} rel_part;

static rel_part rel_error_part(const fa_value *a, const fa_value *b, int64_t lo, int64_t hi)
{
    const double sentinel = 0x1p100; /* far beyond any activation, far below float32's 3.4e38 */
    rel_part p = {0, 0, 0, false};
    for (int64_t i = lo; i < hi; i++) {
        double x = fa_apply_elem(a, i), y = fa_apply_elem(b, i);
        bool ordinary = fabs(y) < sentinel;
        if (ordinary && fabs(y) > p.mb) p.mb = fabs(y);
        /* equal values, equal infinities (a -inf attention mask) and NaN on both sides agree: the
         * difference of two equal infinities is NaN, not a mismatch */
        if (x == y || (isnan(x) && isnan(y))) continue;
        double d = fabs(x - y);
        if (isnan(d) || isinf(d)) { /* NaN or an infinity on one side only */
            p.bad = true;
            return p;
        }
        if (!ordinary) {
            if (d / fabs(y) > p.rs) p.rs = d / fabs(y); /* a sentinel: its own relative error */
        } else if (d > p.md) p.md = d;
    }
    return p;
}

double fa_apply_rel_error(const fa_value *a, const fa_value *b)
{
    if (!a || !b) return INFINITY;
    int64_t ne = fa_value_numel(b);
    /* in stretches over the calling thread's OpenMP team (the run's --threads once an executor
     * has run), combined in order: the same maxima as one pass, in a fraction of the time on a
     * deep model's hundreds of cluster outputs (issue 39) */
    int64_t n_parts = (ne + FA_APPLY_SCAN_STRETCH - 1) / FA_APPLY_SCAN_STRETCH;
    double md = 0, mb = 0, rs = 0;
    bool bad = false;
#pragma omp parallel for schedule(static) reduction(max : md, mb, rs) reduction(|| : bad) if (n_parts > 1)
    for (int64_t k = 0; k < n_parts; k++) {
        int64_t lo = k * FA_APPLY_SCAN_STRETCH, hi = lo + FA_APPLY_SCAN_STRETCH < ne ? lo + FA_APPLY_SCAN_STRETCH : ne;
        rel_part p = rel_error_part(a, b, lo, hi);
        md = p.md > md ? p.md : md;
        mb = p.mb > mb ? p.mb : mb;
        rs = p.rs > rs ? p.rs : rs;
        bad = bad || p.bad;
    }
    if (bad) return INFINITY;
    double r = md / (mb > 1e-12 ? mb : 1e-12);
    return r > rs ? r : rs;
}

void fa_apply_set_reason(fa_apply_result *r, fa_cluster_verdict *v, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    v->reason = fa_arena_strdup(r->arena, buf);
}

/* gain = median(a - b) of the paired samples; noise = 2 x its standard error,
 * 1.2533 x 1.4826 x MAD / sqrt(n): the normal-consistent MAD and the asymptotic efficiency of
 * the median (Wilcox, "Introduction to Robust Estimation", ch. 3). *faster: the rounds with
 * a[i] > b[i] (b faster), *slower: those with a[i] < b[i]. */
static void paired_gain(const double *sa, const double *sb, int n, double *gain, double *noise, int *faster, int *slower)
{
    double *d = malloc(sizeof(double) * (size_t)n), *dev = malloc(sizeof(double) * (size_t)n);
    *faster = *slower = 0;
    if (!d || !dev) {
        free(d);
        free(dev);
        *gain = 0;
        *noise = INFINITY;
        return;
    }
    for (int i = 0; i < n; i++) {
        d[i] = sa[i] - sb[i];
        *faster += d[i] > 0;
        *slower += d[i] < 0;
    }
    qsort(d, (size_t)n, sizeof(double), fa_stats_cmp_double);
    double med = fa_stats_quantile_sorted(d, (size_t)n, 0.5);
    for (int i = 0; i < n; i++) dev[i] = fabs(d[i] - med);
    qsort(dev, (size_t)n, sizeof(double), fa_stats_cmp_double);
    *gain = med;
    *noise = 2.0 * 1.2533 * 1.4826 * fa_stats_quantile_sorted(dev, (size_t)n, 0.5) / sqrt((double)n);
    free(d);
    free(dev);
}

int fa_apply_paired_verdict(const double *sa, const double *sb, int n, fa_paired_judgement *j)
{
    fa_paired_judgement w = {0};
    if (n <= 0) {
        if (j) *j = w;
        return 0;
    }
    paired_gain(sa, sb, n, &w.gain_ns, &w.noise_ns, &w.faster, &w.slower);
    fa_sample_stats_of(sa, n, &w.unfused);
    fa_sample_stats_of(sb, n, &w.fused);
    w.n = n;
    double diff = w.unfused.median_ns - w.fused.median_ns;
    fa_paired_saving ps;
    fa_paired_saving_of(sa, sb, n, &ps);
    w.ci_lo_ns = ps.ci_lo_ns;
    w.ci_hi_ns = ps.ci_hi_ns;
    w.ci_level = ps.ci_level;
    double floor_ns = FA_APPLY_MIN_GAIN_REL * w.unfused.median_ns;
    bool have_ci = ps.ci_lo_ns == ps.ci_lo_ns && ps.ci_hi_ns == ps.ci_hi_ns;
    if (have_ci && ps.ci_lo_ns > 0 && w.gain_ns > w.noise_ns && w.gain_ns >= floor_ns && diff > 0) w.verdict = 1;
    else if (have_ci && ps.ci_hi_ns < 0 && -w.gain_ns > w.noise_ns && -w.gain_ns >= floor_ns && diff < 0) w.verdict = -1;
    if (j) *j = w;
    return w.verdict;
}

void fa_apply_judge(fa_apply_result *r, fa_cluster_verdict *v, const double *sa, const double *sb, int n, double err,
                    const char *tag)
{
    fa_paired_judgement j;
    int verdict = fa_apply_paired_verdict(sa, sb, n, &j);
    const fa_sample_stats su = j.unfused, sf = j.fused;
    double gain = j.gain_ns, noise = j.noise_ns;
    fa_paired_saving ps = {.n = n, .median_ns = gain, .ci_lo_ns = j.ci_lo_ns, .ci_hi_ns = j.ci_hi_ns, .ci_level = j.ci_level};
    /* Reported saving: the paired estimate, the median of the per-round differences unfused -
     * fused (issue 19: a difference of two medians mixes two rounds' noise; the paired median
     * is what the sign-test interval printed beside it bounds). The rule is
     * fa_apply_paired_verdict's; the medians and IQRs are quoted for the reader. */
    v->measured_saving_ns = gain;
    v->meas_unfused_ns = n > 0 ? su.median_ns : NAN; /* the prediction's terms' counterparts (issue 36) */
    v->meas_fused_ns = n > 0 ? sf.median_ns : NAN;
    const char *t = tag ? tag : "";
    /* a loss reads as a loss, never as a negative saving (issue 33) */
    char iv[240], med[64], ci[96], gw[64];
    fa_saving_phrase(med, sizeof med, gain);
    fa_saving_phrase(gw, sizeof gw, gain);
    if (ps.ci_lo_ns == ps.ci_lo_ns) {
        fa_saving_interval_phrase(ci, sizeof ci, ps.ci_lo_ns, ps.ci_hi_ns);
        snprintf(iv, sizeof iv, "paired median %s, %.0f%% interval %s, %d rounds", med, 100 * ps.ci_level, ci, n);
    } else {
        snprintf(iv, sizeof iv, "paired median %s, %d rounds", med, n);
    }
    /* the gain and the noise it is compared with, each in the unit it reads in (a 31 ns gain over
     * 9 ns of noise read "0.0 us > noise 0.0 us") */
    char gt[32], nt[32];
    fa_duration_text(gt, sizeof gt, fabs(gain));
    fa_duration_text(nt, sizeof nt, noise);
    if (verdict > 0) {
        v->status = FA_CLUSTER_ACCEPTED;
        fa_apply_set_reason(r, v, "%sverified (error %.2g) and faster: median %.1f -> %.1f us (IQR %.1f-%.1f -> %.1f-%.1f us), "
                            "fused faster in %d of %d rounds, paired gain %s > noise %s (%s)", t, err,
                            su.median_ns / 1e3, sf.median_ns / 1e3, su.p25_ns / 1e3, su.p75_ns / 1e3, sf.p25_ns / 1e3,
                            sf.p75_ns / 1e3, j.faster, n, gt, nt, iv);
    } else if (verdict < 0) {
        v->status = FA_CLUSTER_REJECTED_REGRESSION;
        fa_apply_set_reason(r, v, "%sregression: median %.1f -> %.1f us (IQR %.1f-%.1f -> %.1f-%.1f us), fused slower in %d of "
                            "%d rounds, paired loss %s > noise %s (%s)",
                            t, su.median_ns / 1e3, sf.median_ns / 1e3, su.p25_ns / 1e3, su.p75_ns / 1e3, sf.p25_ns / 1e3,
                            sf.p75_ns / 1e3, j.slower, n, gt, nt, iv);
    } else {
        v->status = FA_CLUSTER_REJECTED_NO_GAIN;
        fa_apply_set_reason(r, v, "%sno measured gain: median %.1f -> %.1f us (IQR %.1f-%.1f -> %.1f-%.1f us), fused faster in "
                            "%d of %d rounds; the paired %s (noise %s) has an interval reaching 0, or is under 1%% of "
                            "the sub-graph (%s)", t,
                            su.median_ns / 1e3, sf.median_ns / 1e3, su.p25_ns / 1e3, su.p75_ns / 1e3, sf.p25_ns / 1e3,
                            sf.p75_ns / 1e3, j.faster, n, gw, nt, iv);
    }
}

bool fa_apply_rounds_settled(const double *sa, const double *sb, int n)
{
    fa_paired_saving ps;
    fa_paired_saving_of(sa, sb, n, &ps);
    fa_sample_stats su;
    fa_sample_stats_of(sa, n, &su);
    return fa_paired_saving_settled(&ps, FA_APPLY_SETTLE_REL, FA_APPLY_SETTLE_FLOOR * su.median_ns);
}

bool fa_apply_e2e_back_to_back(uint64_t check_pair_ns)
{
    return check_pair_ns <= FA_APPLY_E2E_BACK_TO_BACK_NS;
}

unsigned fa_apply_cluster_bench(const fa_exec *e)
{
    const char *env = getenv("FA_COLD_L2");
    if (env && !strcmp(env, "0")) return 0;
    return e && fa_exec_target(e) == FA_TARGET_CPU ? FA_BENCH_COLD_L2 : 0;
}

fa_status fa_apply_bench_pair(fa_ctx *ctx, fa_apply_run_fn run, const void *a, const void *b, int warmup, int round0,
                              int iters, unsigned how, int threads, double *sa, double *sb)
{
    bool back_to_back = how & FA_BENCH_BACK_TO_BACK, cold = how & FA_BENCH_COLD_L2;
    uint64_t w0 = fa_now_ns();
    for (int i = 0; fa_warmup_more(warmup, i, fa_now_ns() - w0); i++) {
        fa_status s = run(ctx, a, false, NULL);
        if (!s) s = run(ctx, b, false, NULL);
        if (s) return s;
    }
    for (int i = 0; i < iters; i++) {
        fa_host_spread_threads(threads); /* the pool's threads on distinct CPUs, outside the timing */
        bool odd = (round0 + i) & 1;
        const void *first = odd ? b : a, *second = odd ? a : b;
        uint64_t own1 = 0, own2 = 0; /* what a recording run fn spent on its records */
        fa_status s = back_to_back ? run(ctx, first, false, NULL) : FA_OK;
        if (cold) fa_host_evict_l2(threads);
        uint64_t t0 = fa_now_ns();
        if (!s) s = run(ctx, first, true, &own1);
        uint64_t t1 = fa_now_ns();
        if (!s && back_to_back) s = run(ctx, second, false, NULL);
        if (cold) fa_host_evict_l2(threads);
        uint64_t t1b = back_to_back || cold ? fa_now_ns() : t1;
        if (!s) s = run(ctx, second, true, &own2);
        uint64_t t2 = fa_now_ns();
        if (s) return s;
        double d1 = (double)(t1 - t0) - (double)own1, d2 = (double)(t2 - t1b) - (double)own2;
        sa[i] = odd ? d2 : d1;
        sb[i] = odd ? d1 : d2;
    }
    return FA_OK;
}

/* Cluster indices by predicted saving, highest first, then by id (qsort_r's context: the plan). */
static int cmp_saving(const void *a, const void *b, void *plan)
{
    const fa_plan *p = plan;
    const fa_cluster *x = &p->clusters[*(const int *)a], *y = &p->clusters[*(const int *)b];
    if (x->est_saving_ns != y->est_saving_ns) return x->est_saving_ns > y->est_saving_ns ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

int fa_apply_select(const fa_plan *p, fa_apply_result *r, const fa_apply_options *o, int *order)
{
    int n = 0;
    for (int i = 0; i < p->n_clusters; i++)
        if (r->verdicts[i].status == FA_CLUSTER_PROPOSED) order[n++] = i;
    qsort_r(order, (size_t)n, sizeof *order, cmp_saving, (void *)p);
    int cap = o->max_clusters > 0 ? o->max_clusters : FA_APPLY_MAX_CLUSTERS_DEFAULT;
    for (int k = cap; k < n; k++) {
        fa_cluster_verdict *v = &r->verdicts[order[k]];
        v->status = FA_CLUSTER_NOT_TRIED;
        fa_apply_set_reason(r, v, "not tried: the apply stage tries at most %d clusters, highest predicted saving first "
                            "(this one ranks %d of %d; --max-clusters)", cap, k + 1, n);
    }
    return n < cap ? n : cap;
}

bool fa_apply_budget_spent(fa_apply_result *r, fa_cluster_verdict *v, const fa_apply_options *o, uint64_t t0_ns)
{
    double budget = o->budget_s > 0 ? o->budget_s : FA_APPLY_BUDGET_S_DEFAULT;
    double spent = (double)(fa_now_ns() - t0_ns) / 1e9;
    if (spent <= budget) return false;
    v->status = FA_CLUSTER_NOT_TRIED;
    fa_apply_set_reason(r, v, "not tried: the apply stage's time budget of %.0f s was spent (%.0f s; --apply-budget)", budget,
                        spent);
    return true;
}

fa_status fa_apply_options_check(fa_ctx *ctx, const fa_apply_options *o)
{
    if (!(isfinite(o->tolerance) && o->tolerance > 0 && o->tolerance <= FA_APPLY_TOLERANCE_MAX))
        return fa_ctx_error(ctx, FA_ERR_USAGE, "verification tolerance %g: expected a finite number in (0, %g]", o->tolerance,
                            FA_APPLY_TOLERANCE_MAX);
    if (o->max_clusters < 0 || !(isfinite(o->budget_s) && o->budget_s >= 0))
        return fa_ctx_error(ctx, FA_ERR_USAGE, "apply bounds: max_clusters %d, budget %g s", o->max_clusters, o->budget_s);
    return FA_OK;
}

bool fa_apply_needs_codegen(const fa_cluster *c)
{
    return c->kind == FA_CLUSTER_ELEMWISE_CHAIN || c->kind == FA_CLUSTER_REDUCTION || c->kind == FA_CLUSTER_HORIZONTAL ||
           c->kind == FA_CLUSTER_ATTENTION || (c->kind == FA_CLUSTER_EPILOGUE && c->epilogue_generated);
}

fa_status fa_apply_write_kernel_source(fa_ctx *ctx, const char *out_dir, const char *name, const char *ext, const fa_buf *src)
{
    if (!out_dir) return FA_OK;
    char dir[4096], path[4400];
    snprintf(dir, sizeof dir, "%s/kernels", out_dir);
    mkdir(out_dir, 0755);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    return fa_write_file_atomic(ctx, path, src->data, src->len);
}

void fa_value_map_free(fa_value_map *m)
{
    if (!m->vals) return;
    fa_value_map_drop_borrowed(m);
    for (int i = 0; i < m->g->n_tensors; i++) free(m->vals[i].data);
    free(m->vals);
    free(m->borrowed);
    m->vals = NULL;
    m->borrowed = NULL;
}

fa_status fa_value_map_borrow(fa_ctx *ctx, fa_value_map *m, int id, const fa_value *v)
{
    if (!m->borrowed && !(m->borrowed = calloc((size_t)m->g->n_tensors + 1, 1)))
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    m->vals[id] = *v;
    m->borrowed[id] = 1;
    return FA_OK;
}

void fa_value_map_drop_borrowed(fa_value_map *m)
{
    for (int i = 0; m->borrowed && i < m->g->n_tensors; i++)
        if (m->borrowed[i]) {
            memset(&m->vals[i], 0, sizeof m->vals[i]);
            m->borrowed[i] = 0;
        }
}

fa_status fa_value_map_set_inputs(fa_ctx *ctx, fa_exec *e, const fa_graph *sub, const fa_value_map *m)
{
    for (int i = 0; i < sub->n_inputs; i++) {
        const fa_tensor *t = sub->tensors[sub->inputs[i]];
        int id = fa_graph_find_tensor(m->g, t->name);
        if (id < 0 || !m->vals[id].data)
            return fa_ctx_error(ctx, FA_ERR_INTERNAL, "no captured value for input '%s'", t->name);
        fa_status s = fa_exec_set_input(ctx, e, i, &m->vals[id]);
        if (s) return s;
    }
    return FA_OK;
}

int fa_apply_boundary_tensors(const fa_graph *g, const fa_plan *p, const int *ci, int n_ci, int *out)
{
    bool *want = calloc((size_t)g->n_tensors + 1, sizeof(bool));
    bool *member = calloc((size_t)g->n_nodes + 1, sizeof(bool));
    if (!want || !member) {
        free(want);
        free(member);
        return -1;
    }
    int nc = ci ? n_ci : p->n_clusters;
    for (int j = 0; j < nc; j++) {
        const fa_cluster *c = &p->clusters[ci ? ci[j] : j];
        if (!ci && c->status != FA_CLUSTER_PROPOSED) continue;
        for (int k = 0; k < c->n_inputs; k++) want[c->inputs[k]] = true;
        for (int k = 0; k < c->n_post_ops; k++)
            if (c->post_ops[k].operand >= 0) want[c->post_ops[k].operand] = true;
        for (int m = 0; m < c->n_members; m++) member[c->members[m]] = true;
        for (int m = 0; m < c->n_members; m++) { /* every tensor a member reads from outside */
            const fa_node *nd = g->nodes[c->members[m]];
            for (int k = 0; k < nd->n_inputs; k++) {
                int t = nd->inputs[k];
                if (t >= 0 && !(g->tensors[t]->producer >= 0 && member[g->tensors[t]->producer])) want[t] = true;
            }
        }
        for (int m = 0; m < c->n_members; m++) member[c->members[m]] = false;
    }
    int n = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const fa_tensor *ten = g->tensors[t];
        if (!want[t] || (ten->flags & FA_TENSOR_CONST) || ten->producer < 0 || g->nodes[ten->producer]->folded) continue;
        out[n++] = t;
    }
    free(want);
    free(member);
    return n;
}

fa_status fa_value_map_fill_inputs(fa_ctx *ctx, fa_value_map *m, uint64_t seed)
{
    const fa_graph *g = m->g;
    fa_rng r;
    fa_rng_seed(&r, seed);
    for (int i = 0; i < g->n_inputs; i++) {
        const fa_tensor *t = g->tensors[g->inputs[i]];
        fa_value v = {0};
        v.dtype = t->dtype;
        v.rank = t->rank;
        memcpy(v.dims, t->dims, sizeof v.dims);
        int64_t n = fa_value_numel(&v);
        v.data = malloc((size_t)n * fa_dtype_size(t->dtype) + 1);
        if (!v.data) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory filling input '%s'", t->name);
        fa_graph_fill_input(g, g->inputs[i], &r, &v);
        free(m->vals[g->inputs[i]].data);
        m->vals[g->inputs[i]] = v;
    }
    return FA_OK;
}

bool fa_apply_slow_library_epilogue(const fa_graph *gf, const fa_exec *ef, char *why, size_t cap)
{
    for (int k = 0; k < gf->n_topo; k++) {
        const fa_node *n = gf->nodes[gf->topo[k]];
        if (strcmp(n->domain, FA_FUSED_DOMAIN) || strncmp(n->op_type, "Fused", 5)) continue;
        /* a library epilogue: post-ops, or operands folded into a product (views, a scale) */
        if (!fa_node_attr(n, "post_op_kinds") && !fa_node_attr(n, "a_strides") && !fa_node_attr(n, "b_strides") &&
            !fa_node_attr(n, "alpha"))
            continue;
        const char *impl = fa_exec_kernel_impl(ef, n);
        if (!impl) continue;
        bool conv = !strcmp(n->op_type, "FusedConv") || !strcmp(n->op_type, "FusedConvTranspose");
        const char *name = impl; /* oneDNN 2.6 names carry the ISA family first: "x64:gemm:jit" */
        if (!strncmp(name, "x64:", 4)) name += 4;
        if (!strncmp(name, "ref", 3) || (conv && !strncmp(name, "gemm", 4))) {
            snprintf(why, cap,
                     "oneDNN chose its '%s' implementation for %s '%s' (%s): its post-ops are not in the fast path, so the "
                     "epilogue is slower than the unfused ops; not proposed",
                     impl, n->op_type, n->name,
                     !strncmp(name, "ref", 3) ? "reference kernel" : "gemm convolution on plain NCHW activations");
            return true;
        }
    }
    return false;
}

void fa_apply_library_kernels_text(const fa_graph *gf, const fa_exec *ef, char *out, size_t cap)
{
    size_t w = 0;
    if (cap) out[0] = 0;
    for (int k = 0; k < gf->n_topo && w < cap; k++) {
        const fa_node *n = gf->nodes[gf->topo[k]];
        if (strcmp(n->domain, FA_FUSED_DOMAIN) || strncmp(n->op_type, "Fused", 5) || !strcmp(n->op_type, "FusedKernel")) continue;
        const char *impl = fa_exec_kernel_impl(ef, n), *name = fa_exec_kernel_name(ef, n);
        if (!impl) continue;
        w += (size_t)snprintf(out + w, cap - w, "%s%s '%.80s' as oneDNN's '%s' (%s)", w ? ", " : "the library ran ",
                              n->op_type, n->name, impl, name ? name : "?");
    }
}

/* Where the signed-rank interval of the paired whole-model differences sa[i] - sb[i] lies against
 * +-FA_APPLY_MIN_GAIN_REL of the baseline's median: 1 wholly above it, -1 wholly below, 0
 * otherwise (or n < 5, or out of memory). */
static int e2e_signed_rank_side(const double *sa, const double *sb, int n)
{
    if (n < 5) return 0;
    double *d = malloc(sizeof(double) * (size_t)n);
    if (!d) return 0;
    for (int i = 0; i < n; i++) d[i] = sa[i] - sb[i];
    qsort(d, (size_t)n, sizeof *d, fa_stats_cmp_double);
    double lo, hi, level;
    bool ok = fa_stats_signed_rank_interval_sorted(d, (size_t)n, &lo, &hi, &level, NULL);
    free(d);
    fa_sample_stats su;
    fa_sample_stats_of(sa, n, &su);
    double margin = FA_APPLY_MIN_GAIN_REL * su.median_ns;
    if (!ok || !(margin > 0)) return 0;
    return lo > margin ? 1 : hi < -margin ? -1 : 0;
}

bool fa_apply_e2e_wins(const double *sa, const double *sb, int n)
{
    if (fa_apply_paired_verdict(sa, sb, n, NULL) > 0) return true;
    fa_sample_stats su, sf;
    fa_sample_stats_of(sa, n, &su);
    fa_sample_stats_of(sb, n, &sf);
    return e2e_signed_rank_side(sa, sb, n) > 0 && sf.median_ns < su.median_ns;
}

const char *fa_apply_rounding_op(const fa_graph *g)
{
    /* whole names, then prefixes (QLinearConv, QLinearMatMul, ONNX Runtime's QLinearAdd and
     * MatMulIntegerToFloat ...): the name returned is ours, not the model's text */
    static const char *const exact[] = {"QuantizeLinear", "DynamicQuantizeLinear", "Round"};
    static const char *const prefix[] = {"QLinear", "MatMulInteger", "ConvInteger", "DynamicQuantize"};
    static const char *const prefix_name[] = {"QLinear*", "MatMulInteger", "ConvInteger", "DynamicQuantize*"};
    for (int i = 0; g && i < g->n_nodes; i++) {
        const fa_node *n = g->nodes[i];
        if (!n || !n->op_type) continue;
        for (size_t k = 0; k < sizeof exact / sizeof exact[0]; k++)
            if (!strcmp(n->op_type, exact[k])) return exact[k];
        for (size_t k = 0; k < sizeof prefix / sizeof prefix[0]; k++)
            if (!strncmp(n->op_type, prefix[k], strlen(prefix[k]))) return prefix_name[k];
    }
    return NULL;
}

double fa_apply_e2e_tolerance(const fa_graph *g, double opt_tolerance, const char **rounding_op)
{
    double tol = fmax(FA_APPLY_E2E_TOLERANCE, opt_tolerance);
    const char *op = fa_apply_rounding_op(g);
    if (rounding_op) *rounding_op = op;
    return op ? fmax(tol, FA_APPLY_E2E_TOLERANCE_ROUNDING) : tol;
}

bool fa_apply_e2e_concluded(const double *sa, const double *sb, int n)
{
    return fa_apply_rounds_settled(sa, sb, n) || e2e_signed_rank_side(sa, sb, n) != 0;
}

void fa_apply_back_off(const fa_plan *p, fa_apply_result *r, int round)
{
    int drop = round < 20 ? 1 << round : 1 << 20;
    for (int k = 0; k < drop; k++) {
        int wi = -1;
        for (int i = 0; i < p->n_clusters; i++) {
            const fa_cluster_verdict *v = &r->verdicts[i];
            if (v->status == FA_CLUSTER_ACCEPTED && (wi < 0 || v->measured_saving_ns < r->verdicts[wi].measured_saving_ns)) wi = i;
        }
        if (wi < 0) return;
        fa_cluster_verdict *worst = &r->verdicts[wi];
        worst->status = FA_CLUSTER_REJECTED_NO_GAIN;
        /* the cluster's own evidence (how it was judged alone) stays after the back-off's sentence */
        fa_apply_set_reason(r, worst,
                            "dropped by the end-to-end back-off: the whole fused model with %d clusters was not measurably "
                            "faster (median %.3f -> %.3f ms); this cluster's measured saving %.1f us was among the smallest; "
                            "alone: %s",
                            r->accepted, r->baseline.median_ns / 1e6, r->fused.median_ns / 1e6, worst->measured_saving_ns / 1e3,
                            worst->reason ? worst->reason : "accepted");
        r->accepted--;
        r->rejected++;
        r->predicted_saving_ns -= p->clusters[wi].est_saving_ns;
        r->backed_off++;
    }
}
