/* gate — the CI gate: per-iteration samples of two runs, a bootstrap confidence
 * interval of the ratio of medians per latency check, exact checks on kernel counts, accepted
 * clusters, verification and cuda registers/spills, and the four renderings (docs/ci.md). */
#include "gate/gate.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_verdict_names[FA_GATE_VERDICT_COUNT] = {"pass", "skipped", "inconclusive", "warn", "fail"};

const char *fa_gate_verdict_name(fa_gate_verdict v)
{
    return (unsigned)v < FA_GATE_VERDICT_COUNT ? k_verdict_names[v] : "?";
}

void fa_gate_options_default(fa_gate_options *o)
{
    memset(o, 0, sizeof *o);
    o->max_regression = 0.03;
    o->confidence = 0.95;
    o->resamples = 2000;
    o->seed = 1;
    o->min_share = 0.01;
    o->register_warn = 0.10;
    o->min_samples = 5;
    o->strict = false;
}

/* ---- statistics ---- */

/* Medians and quantiles are core's (core/stats.c: type 7, one convention for every stage). */

/* Unbiased enough index in [0, n): Lemire's multiply-shift on the top 32 bits. */
static int rand_index(fa_rng *r, int n)
{
    return (int)(((fa_rng_u64(r) >> 32) * (uint64_t)n) >> 32);
}

static void suggest(fa_gate_stats *st, double thr, int n)
{
    double half, gap;
    if (st->ratio < thr) {
        half = st->hi - st->ratio;
        gap = thr - st->ratio;
    } else {
        half = st->ratio - st->lo;
        gap = st->ratio - thr;
    }
    if (gap < 0.002 || half <= 0) { /* within 0.2% of the threshold: nothing reasonable decides */
        st->suggested_iters = -1;
        return;
    }
    double need = ceil((double)n * (half / gap) * (half / gap) * 1.1); /* 10% margin */
    st->suggested_iters = need > 1e6 ? -1 : (int)need;
    if (st->suggested_iters >= 0 && st->suggested_iters <= n) st->suggested_iters = n + 1;
}

/* Non-empty groups of one side: sizes and offsets (heap, caller frees). */
static int groups_of(const int *sz, int ng, int n, int **gsz, int **goff)
{
    int one = n;
    if (!sz || ng <= 0) {
        sz = &one;
        ng = 1;
    }
    *gsz = malloc(sizeof(int) * (size_t)ng);
    *goff = malloc(sizeof(int) * (size_t)ng);
    if (!*gsz || !*goff) return -1;
    int k = 0, off = 0;
    for (int g = 0; g < ng; g++) {
        if (sz[g] > 0) {
            (*gsz)[k] = sz[g];
            (*goff)[k] = off;
            k++;
        }
        off += sz[g] > 0 ? sz[g] : 0;
    }
    return k;
}

/* Block length for resampling one run's samples v[0..n) (in iteration order). Iterations timed
 * on a busy machine are not independent: a burst of load slows several consecutive iterations
 * (lag-1 autocorrelation 0.5-0.65 measured on squeezenet at load 11, bench/bench_gate_aa.sh),
 * and resampling them one by one then understates the variance of the median by about
 * (1 + rho) / (1 - rho), 3-5x: an A/A pair fails. When the lag-1 autocorrelation rho is above the
 * 95% bound of white noise (2 / sqrt(n)), resample blocks of b consecutive iterations (circular
 * block bootstrap, Politis & Romano 1992) with b from the AR(1) plug-in of the variance-optimal
 * block length, b = (6 rho^2 / (1 - rho^2)^2)^(1/3) n^(1/3) (Politis & White 2004, section 3,
 * with G = 2 rho / (1 - rho)^2 and D = 4/3 g(0)^2 for the circular block bootstrap), at most
 * n / 3. Independent samples (a quiet machine) keep b = 1: the plain bootstrap. */
static int block_length(const double *v, int n)
{
    if (n < 8) return 1;
    double mean = 0, c0 = 0, c1 = 0;
    for (int i = 0; i < n; i++) mean += v[i];
    mean /= n;
    for (int i = 0; i < n; i++) c0 += (v[i] - mean) * (v[i] - mean);
    for (int i = 1; i < n; i++) c1 += (v[i] - mean) * (v[i - 1] - mean);
    if (!(c0 > 0)) return 1;
    double rho = c1 / c0;
    if (!(rho > 2.0 / sqrt((double)n))) return 1;
    if (rho > 0.95) rho = 0.95;
    double b = ceil(cbrt(6.0 * rho * rho / ((1 - rho * rho) * (1 - rho * rho))) * cbrt((double)n));
    int cap = n / 3;
    return b < 2 ? 2 : b > cap ? cap : (int)b;
}

/* One resample of a side into tmp (returns its size): with one group, n draws with replacement
 * (blocks of blk[g] consecutive samples, wrapping around, where the run's samples are
 * autocorrelated: block_length); with several, a two-stage draw — ng groups with replacement,
 * then each drawn group's own size of draws within it (Davison & Hinkley, Bootstrap Methods and
 * their Application, 1997, section 3.8: resampling the top stage keeps the between-run variance
 * in the interval). */
static int resample(fa_rng *r, const double *v, const int *gsz, const int *goff, const int *blk, int ng, double *tmp)
{
    int k = 0;
    for (int g = 0; g < ng; g++) {
        int pick = ng == 1 ? 0 : rand_index(r, ng);
        int n = gsz[pick], off = goff[pick], b = blk[pick], end = k + n;
        if (b <= 1) {
            for (int i = 0; i < n; i++) tmp[k++] = v[off + rand_index(r, n)];
            continue;
        }
        while (k < end) {
            int start = rand_index(r, n);
            for (int j = 0; j < b && k < end; j++) tmp[k++] = v[off + (start + j) % n];
        }
    }
    return k;
}

fa_status fa_gate_compare_samples(fa_ctx *ctx, const double *base, int nb, const double *cand, int nc,
                                  const fa_gate_options *o, double confidence, uint64_t seed,
                                  fa_gate_stats *out)
{
    return fa_gate_compare_grouped(ctx, base, nb, NULL, 0, cand, nc, NULL, 0, o, confidence, seed, out);
}

fa_status fa_gate_compare_grouped(fa_ctx *ctx, const double *base, int nb, const int *gb, int ngb, const double *cand,
                                  int nc, const int *gc, int ngc, const fa_gate_options *o, double confidence,
                                  uint64_t seed, fa_gate_stats *out)
{
    for (int i = 0; i < nb; i++)
        if (!(base[i] > 0) || !isfinite(base[i]))
            return fa_ctx_error(ctx, FA_ERR_INPUT, "baseline sample %d is %g: latencies must be positive and finite", i,
                                base[i]);
    for (int i = 0; i < nc; i++)
        if (!(cand[i] > 0) || !isfinite(cand[i]))
            return fa_ctx_error(ctx, FA_ERR_INPUT, "candidate sample %d is %g: latencies must be positive and finite", i,
                                cand[i]);
    long sum_b = 0, sum_c = 0;
    for (int g = 0; gb && g < ngb; g++) sum_b += gb[g] > 0 ? gb[g] : 0;
    for (int g = 0; gc && g < ngc; g++) sum_c += gc[g] > 0 ? gc[g] : 0;
    if ((gb && ngb > 0 && sum_b != nb) || (gc && ngc > 0 && sum_c != nc))
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "group sizes (%ld, %ld) do not add up to the sample counts (%d, %d)",
                            sum_b, sum_c, nb, nc);
    int *bsz = NULL, *boff = NULL, *csz = NULL, *coff = NULL;
    int nbg = groups_of(gb, ngb, nb, &bsz, &boff), ncg = groups_of(gc, ngc, nc, &csz, &coff);
    int maxg = 1;
    for (int g = 0; g < nbg; g++) maxg = bsz[g] > maxg ? bsz[g] : maxg;
    for (int g = 0; g < ncg; g++) maxg = csz[g] > maxg ? csz[g] : maxg;
    size_t cap = (size_t)maxg * (size_t)(nbg > ncg ? (nbg > 1 ? nbg : 1) : (ncg > 1 ? ncg : 1));
    if ((size_t)nb > cap) cap = (size_t)nb;
    if ((size_t)nc > cap) cap = (size_t)nc;
    double *tmp = nbg >= 0 && ncg >= 0 ? malloc(sizeof(double) * (cap + 1)) : NULL;
    if (!tmp) {
        free(bsz), free(boff), free(csz), free(coff);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory comparing samples");
    }
    fa_gate_stats st;
    memset(&st, 0, sizeof st);
    st.n_base = nb;
    st.n_cand = nc;
    st.runs_base = nbg;
    st.runs_cand = ncg;
    st.confidence = confidence > 0 && confidence < 1 ? confidence : o->confidence;
    double thr = 1.0 + o->max_regression;
    int min_n = o->min_samples > 1 ? o->min_samples : 2;
    if (nb > 0) {
        memcpy(tmp, base, sizeof(double) * (size_t)nb);
        st.base_median_ns = fa_stats_median(tmp, nb);
    } else st.base_median_ns = NAN;
    if (nc > 0) {
        memcpy(tmp, cand, sizeof(double) * (size_t)nc);
        st.cand_median_ns = fa_stats_median(tmp, nc);
    } else st.cand_median_ns = NAN;
    st.ratio = nb > 0 && nc > 0 ? st.cand_median_ns / st.base_median_ns : NAN;
    double *ratios = NULL;
    long B = 0;
    if (nb < min_n || nc < min_n) {
        st.lo = st.hi = NAN;
        st.verdict = FA_GATE_INCONCLUSIVE;
        st.suggested_iters = min_n > 20 ? min_n : 20;
        goto done;
    }
    double alpha = 1.0 - st.confidence;
    B = o->resamples > 0 ? o->resamples : 2000;
    long need = (long)ceil(20.0 / alpha); /* >= 10 resamples beyond each percentile */
    if (B < need) B = need;
    if (B > 200000) B = 200000;
    ratios = malloc(sizeof(double) * (size_t)B);
    if (!ratios) {
        free(tmp), free(bsz), free(boff), free(csz), free(coff);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory for %ld bootstrap resamples", B);
    }
    int *bblk = malloc(sizeof(int) * (size_t)(nbg > 0 ? nbg : 1)), *cblk = malloc(sizeof(int) * (size_t)(ncg > 0 ? ncg : 1));
    if (!bblk || !cblk) {
        free(bblk), free(cblk), free(ratios), free(tmp), free(bsz), free(boff), free(csz), free(coff);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory comparing samples");
    }
    for (int g = 0; g < nbg; g++) bblk[g] = block_length(base + boff[g], bsz[g]);
    for (int g = 0; g < ncg; g++) cblk[g] = block_length(cand + coff[g], csz[g]);
    fa_rng rng;
    fa_rng_seed(&rng, seed ^ 0x6761746500000000ull);
    for (long b = 0; b < B; b++) {
        int k = resample(&rng, base, bsz, boff, bblk, nbg, tmp);
        double mb = fa_stats_median(tmp, k);
        k = resample(&rng, cand, csz, coff, cblk, ncg, tmp);
        double mc = fa_stats_median(tmp, k);
        ratios[b] = mc / mb;
    }
    free(bblk), free(cblk);
    qsort(ratios, (size_t)B, sizeof(double), fa_stats_cmp_double);
    st.lo = fa_stats_quantile_sorted(ratios, (size_t)B, alpha / 2);
    st.hi = fa_stats_quantile_sorted(ratios, (size_t)B, 1 - alpha / 2);
    if (nbg > 1 || ncg > 1) {
        /* Resampling G runs estimates their variance with divisor G instead of G - 1 (Davison &
         * Hinkley 1997, section 3.8): widen the interval (in log space, around the ratio) by
         * sqrt(G / (G - 1)), G the smaller run count above 1. With 3 runs per side and 5%
         * run-to-run drift this brings A/A false alarms from 2.3% to 0.7% (test_gate_stats). */
        int g = nbg < ncg ? (nbg > 1 ? nbg : ncg) : (ncg > 1 ? ncg : nbg);
        double f = sqrt((double)g / (g - 1));
        st.lo = st.ratio * exp((log(st.lo) - log(st.ratio)) * f);
        st.hi = st.ratio * exp((log(st.hi) - log(st.ratio)) * f);
    }
    if (st.lo > thr) st.verdict = FA_GATE_FAIL;
    else if (st.hi < thr) st.verdict = FA_GATE_PASS;
    else {
        st.verdict = FA_GATE_INCONCLUSIVE;
        suggest(&st, thr, nb < nc ? nb : nc);
    }
done:
    free(ratios);
    free(tmp), free(bsz), free(boff), free(csz), free(coff);
    *out = st;
    return FA_OK;
}

/* ---- the run as the gate sees it ---- */

typedef struct gate_cluster {
    int id;
    const char *kind, *label, *status, *reason;
    int n_members;
    const char **members;     /* node names, cluster order */
    const char *key;          /* label|sorted member names */
    const char *display;      /* 'label' (a, b, c) */
    int registers, spill_bytes; /* -1 unknown */
    double max_rel_error;     /* NAN unknown */
    bool accepted;
    double *fused;            /* cluster-fused samples */
    int n_fused;
} gate_cluster;

typedef struct gate_op {
    const char *name;
    double *v;                /* per timed iteration (n_iters), 0 when it ran nothing */
} gate_op;

typedef struct gate_run {
    fa_store *st;
    const char *path;
    fa_run_info info;
    double *iter_ns;          /* "iteration" range durations */
    int n_iter_ns;
    int n_iters;              /* distinct timed iterations of kernel/range records */
    int *iters;               /* their iter values, ascending */
    int n_ops;
    gate_op *ops;
    int kpi_min, kpi_max, kpi_mode; /* kernel records per timed iteration; kpi_mode -1 none */
    int plan_id;              /* 0: no plan */
    const char *plan_target;
    int n_clusters;
    gate_cluster *cl;
    double *bench_fused;      /* benchmarks 'fused', cluster -1 */
    int n_bench_fused;
    int64_t fused_run;        /* -1 none */
    int fkpi_min, fkpi_max, fkpi_mode;
    double *fused_iter_ns;
    int n_fused_iter_ns;
} gate_run;

#define CK(call)                                                                                                       \
    do {                                                                                                               \
        fa_status s_ = (call);                                                                                         \
        if (s_) return s_;                                                                                             \
    } while (0)

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

static int find_op(const gate_run *g, const char *name)
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

static int cmp_cluster_id(const void *a, const void *b)
{
    int x = ((const fa_cluster_row *)a)->id, y = ((const fa_cluster_row *)b)->id;
    return x < y ? -1 : x > y;
}

/* The newest plan's clusters with labels (clusters.label), member names (nodes) and
 * cluster-fused samples. */
static fa_status load_plan(fa_ctx *ctx, gate_run *g, fa_arena *ar)
{
    g->plan_id = 0;
    fa_plan_row plan;
    fa_cluster_row *crs = NULL;
    fa_why_not_row *wrs = NULL;
    int n_crs = 0, n_wrs = 0;
    CK(fa_store_get_latest_plan(ctx, g->st, g->info.id, ar, &g->plan_id, &plan, &crs, &n_crs, &wrs, &n_wrs));
    if (!g->plan_id) return FA_OK;
    g->plan_target = plan.target;
    qsort(crs, (size_t)n_crs, sizeof *crs, cmp_cluster_id); /* the gate reports clusters in id order */
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
        const fa_cluster_row *cr = &crs[ci];
        gate_cluster *c = &g->cl[g->n_clusters++];
        c->id = cr->id;
        c->kind = cr->kind ? cr->kind : "?";
        c->status = cr->status ? cr->status : "?";
        c->reason = cr->reason;
        c->registers = cr->registers;
        c->spill_bytes = cr->spill_bytes;
        c->max_rel_error = cr->max_rel_error < 0 ? NAN : cr->max_rel_error;
        c->label = cr->label ? cr->label : c->kind;
        c->accepted = !strcmp(c->status, "accepted");
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
    g->bench_fused = NULL;
    g->n_bench_fused = 0;
    for (size_t i = 0; i < n_bs; i++) {
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

static fa_status load_run(fa_ctx *ctx, fa_store *st, int64_t id, fa_arena *ar, gate_run *g)
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

/* ---- checks ---- */

static fa_gate_check *add_check(fa_gate_report *r, const char *id, const char *category, const char *name,
                                fa_gate_verdict v, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static fa_gate_check *add_check(fa_gate_report *r, const char *id, const char *category, const char *name,
                                fa_gate_verdict v, const char *fmt, ...)
{
    if (r->n_checks == r->cap_checks) {
        int ncap = r->cap_checks ? r->cap_checks * 2 : 32;
        fa_gate_check *nc = realloc(r->checks, sizeof(fa_gate_check) * (size_t)ncap);
        if (!nc) return NULL;
        r->checks = nc;
        r->cap_checks = ncap;
    }
    fa_buf b;
    fa_buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    fa_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    fa_gate_check *c = &r->checks[r->n_checks];
    memset(c, 0, sizeof *c);
    c->id = fa_arena_strdup(r->arena, id);
    c->category = category;
    c->name = fa_arena_strdup(r->arena, name);
    c->verdict = v;
    c->message = fa_arena_strdup(r->arena, b.data ? b.data : "");
    fa_buf_free(&b);
    if (!c->id || !c->name || !c->message) return NULL;
    r->n_checks++;
    return c;
}

static void note(fa_gate_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(fa_gate_report *r, const char *fmt, ...)
{
    if (r->n_notes >= (int)(sizeof r->notes / sizeof r->notes[0])) return;
    fa_buf b;
    fa_buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    fa_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    const char *s = b.data ? fa_arena_strdup(r->arena, b.data) : NULL;
    fa_buf_free(&b);
    if (s) r->notes[r->n_notes++] = s;
}

static uint64_t check_seed(const fa_gate_options *o, const char *id) { return o->seed ^ fa_hash64(id, strlen(id)); }

static void pct(char *out, size_t n, double ratio)
{
    if (!isfinite(ratio)) snprintf(out, n, "n/a");
    else if (ratio >= 2 || ratio <= 0.5) /* 2x and beyond read better as factors */
        snprintf(out, n, ratio < 10 ? "x%.2f" : "x%.0f", ratio);
    else snprintf(out, n, "%+.1f%%", (ratio - 1) * 100);
}

/* Sentence describing a latency comparison: change, CI and what decides it. */
static void describe(fa_buf *b, const fa_gate_stats *s, const fa_gate_options *o)
{
    char r[32], lo[32], hi[32];
    pct(r, sizeof r, s->ratio);
    pct(lo, sizeof lo, s->lo);
    pct(hi, sizeof hi, s->hi);
    fa_buf_printf(b, "median %.1f us -> %.1f us (%s", s->base_median_ns / 1e3, s->cand_median_ns / 1e3, r);
    if (isfinite(s->lo))
        fa_buf_printf(b, ", %.4g%% CI %s..%s", s->confidence * 100, lo, hi);
    if (s->runs_base > 1 || s->runs_cand > 1)
        fa_buf_printf(b, "; %d vs %d iterations in %d vs %d runs)", s->n_base, s->n_cand, s->runs_base, s->runs_cand);
    else fa_buf_printf(b, "; %d vs %d iterations)", s->n_base, s->n_cand);
    double thr = o->max_regression * 100;
    switch (s->verdict) {
    case FA_GATE_FAIL:
        fa_buf_printf(b, ": confidently more than %.3g%% slower", thr);
        break;
    case FA_GATE_PASS:
        fa_buf_printf(b, ": confidently under the %.3g%% threshold", thr);
        break;
    default:
        if (!isfinite(s->lo))
            fa_buf_printf(b, ": too few samples; rerun with --iters %d or more", s->suggested_iters);
        else if (s->suggested_iters > 0)
            fa_buf_printf(b, ": the interval straddles +%.3g%%; about %d iterations per run would decide (--iters %d)",
                          thr, s->suggested_iters, s->suggested_iters);
        else
            fa_buf_printf(b, ": the change sits on the +%.3g%% threshold; no practical iteration count decides", thr);
    }
}

/* Samples of one side of a check, grouped by run (heap). */
typedef struct pool {
    double *v;
    int n, cap;
    int *g;                   /* samples per run */
    int ng, gcap;
    bool oom;
} pool;

/* Append one run's samples as a group; zero and negative values (a component that ran nothing
 * in that iteration) are no latency samples and are dropped. */
static void pool_add(pool *p, const double *v, int n)
{
    int kept = 0;
    for (int i = 0; i < n && !p->oom; i++) {
        if (!(v[i] > 0)) continue;
        if (p->n == p->cap) {
            int ncap = p->cap ? p->cap * 2 : 256;
            double *nv = realloc(p->v, sizeof(double) * (size_t)ncap);
            if (!nv) { p->oom = true; break; }
            p->v = nv;
            p->cap = ncap;
        }
        p->v[p->n++] = v[i];
        kept++;
    }
    if (!kept || p->oom) return;
    if (p->ng == p->gcap) {
        int ncap = p->gcap ? p->gcap * 2 : 8;
        int *ng = realloc(p->g, sizeof(int) * (size_t)ncap);
        if (!ng) { p->oom = true; return; }
        p->g = ng;
        p->gcap = ncap;
    }
    p->g[p->ng++] = kept;
}

static void pool_free(pool *p)
{
    free(p->v);
    free(p->g);
    memset(p, 0, sizeof *p);
}

/* The runs of one side: r[0] is the primary (newest) run; plans, kernel counts and fusion checks
 * read it, latency checks pool every run. */
typedef struct side {
    gate_run *r;
    int n;
} side;

/* Compare two sample sets and add the check. For a component check (a cluster or op, a part of
 * an iteration whose baseline median is ref_ns > 0) a confident slowdown fails the build only
 * when it costs at least --min-share of the iteration at the interval's lower bound
 * ((lo - 1) * component median / iteration median); a smaller one warns. An inconclusive
 * component that could not cost --min-share even at the upper bound passes. */
static fa_status latency_check(fa_ctx *ctx, fa_gate_report *r, const char *id, const char *name, const pool *pb,
                               const pool *pc, double confidence, double ref_ns, const char *extra)
{
    fa_gate_stats s;
    if (pb->oom || pc->oom) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory collecting samples");
    CK(fa_gate_compare_grouped(ctx, pb->v, pb->n, pb->g, pb->ng, pc->v, pc->n, pc->g, pc->ng, &r->opt, confidence,
                               check_seed(&r->opt, id), &s));
    fa_buf b;
    fa_buf_init(&b);
    describe(&b, &s, &r->opt);
    fa_gate_verdict v = s.verdict;
    if (ref_ns > 0 && isfinite(s.lo)) {
        double cost_lo = (s.lo - 1) * s.base_median_ns / ref_ns, cost_hi = (s.hi - 1) * s.base_median_ns / ref_ns;
        if (v == FA_GATE_FAIL && cost_lo < r->opt.min_share) {
            v = FA_GATE_WARN;
            fa_buf_printf(&b, " (the slowdown costs at least %.2g%% of the iteration, under --min-share %.3g%%: not gating)",
                          cost_lo * 100, r->opt.min_share * 100);
        } else if (v == FA_GATE_FAIL) {
            fa_buf_printf(&b, " (costs at least %.2g%% of the iteration)", cost_lo * 100);
        } else if (v == FA_GATE_INCONCLUSIVE && cost_hi < r->opt.min_share) {
            v = FA_GATE_PASS;
            fa_buf_printf(&b, " (even at the upper bound it costs under --min-share %.3g%% of the iteration)",
                          r->opt.min_share * 100);
        }
    }
    if (extra) fa_buf_printf(&b, "%s", extra);
    fa_gate_check *c = add_check(r, id, "latency", name, v, "%s", b.data ? b.data : "");
    fa_buf_free(&b);
    if (!c) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    c->has_stats = true;
    c->stats = s;
    return FA_OK;
}

static const char *which_missing(const gate_run *b, const gate_run *c, bool in_b, bool in_c, char *buf, size_t n)
{
    if (!in_b && !in_c)
        snprintf(buf, n, "the baseline run %" PRId64 " and the candidate run %" PRId64 " have", b->info.id, c->info.id);
    else if (!in_b) snprintf(buf, n, "the baseline run %" PRId64 " has", b->info.id);
    else snprintf(buf, n, "the candidate run %" PRId64 " has", c->info.id);
    return buf;
}

#define ADD(...)                                                                                                       \
    do {                                                                                                               \
        if (!add_check(__VA_ARGS__)) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");                          \
    } while (0)

static fa_status check_e2e(fa_ctx *ctx, fa_gate_report *r, const side *sb, const side *sc)
{
    char w[160];
    const gate_run *b = &sb->r[0], *c = &sc->r[0];
    pool pb = {0}, pc = {0};
    for (int i = 0; i < sb->n; i++) pool_add(&pb, sb->r[i].iter_ns, sb->r[i].n_iter_ns);
    for (int i = 0; i < sc->n; i++) pool_add(&pc, sc->r[i].iter_ns, sc->r[i].n_iter_ns);
    fa_status s = FA_OK;
    if (pb.n && pc.n)
        s = latency_check(ctx, r, "latency.e2e.unfused", "end-to-end latency (unfused)", &pb, &pc, 0, 0, NULL);
    else if (!add_check(r, "latency.e2e.unfused", "latency", "end-to-end latency (unfused)", FA_GATE_SKIPPED,
                        "not measured in one of the runs: %s no per-iteration \"iteration\" records",
                        which_missing(b, c, pb.n > 0, pc.n > 0, w, sizeof w)))
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    pool_free(&pb);
    pool_free(&pc);
    if (s) return s;
    bool all_bench = true;
    for (int k = 0; k < 2; k++) {
        const side *sd = k ? sc : sb;
        pool *p = k ? &pc : &pb;
        for (int i = 0; i < sd->n; i++) {
            const gate_run *g = &sd->r[i];
            if (g->n_bench_fused) pool_add(p, g->bench_fused, g->n_bench_fused);
            else if (g->n_fused_iter_ns) {
                pool_add(p, g->fused_iter_ns, g->n_fused_iter_ns);
                all_bench = false;
            }
        }
    }
    if (pb.n && pc.n)
        s = latency_check(ctx, r, "latency.e2e.fused", "end-to-end latency (fused)", &pb, &pc, 0, 0,
                          all_bench ? NULL : " (partly from the fused runs' iteration records)");
    else if (!add_check(r, "latency.e2e.fused", "latency", "end-to-end latency (fused)", FA_GATE_SKIPPED,
                        "not measured in one of the runs: %s no fused benchmark (run without --no-apply)",
                        which_missing(b, c, pb.n > 0, pc.n > 0, w, sizeof w)))
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    pool_free(&pb);
    pool_free(&pc);
    /* the candidate's own plan judged end to end by the applier (plans.e2e_verdict, schema v6): a
     * LOSS warns (the latency checks above judge the change between the runs) */
    fa_e2e_verdict ev = c->info.e2e_verdict;
    if (!s && ev == FA_E2E_LOSS)
        ADD(r, "fusion.e2e", "fusion", "end-to-end verdict of the candidate's plan", FA_GATE_WARN,
            "run %" PRId64 "'s fused plan is a LOSS end to end: with its clusters kept it is not measurably faster than "
            "its unfused baseline; deploy the baseline", c->info.id);
    else if (!s && ev != FA_E2E_NOT_APPLIED)
        ADD(r, "fusion.e2e", "fusion", "end-to-end verdict of the candidate's plan", FA_GATE_PASS,
            "run %" PRId64 "'s fused plan end to end: %s", c->info.id, fa_e2e_verdict_name(ev));
    return s;
}

/* Lower median of the per-run kernel counts (fused or not) of a side; -1 when a run has none. */
static int side_kpi(const side *sd, bool fused)
{
    int v[64], n = 0;
    for (int i = 0; i < sd->n && n < 64; i++) {
        int m = fused ? sd->r[i].fkpi_mode : sd->r[i].kpi_mode;
        if (m < 0 && i == 0) return -1; /* the primary has none: not measured */
        if (m >= 0) v[n++] = m;         /* other runs without the data are left out */
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[(n - 1) / 2];
}

static fa_status check_kernels(fa_ctx *ctx, fa_gate_report *r, const side *sb, const side *sc)
{
    char w[160];
    const gate_run *b = &sb->r[0], *c = &sc->r[0];
    for (int k = 0; k < 2; k++) {
        const char *id = k ? "kernels.fused" : "kernels.unfused";
        const char *name = k ? "kernels per iteration (fused)" : "kernels per iteration (unfused)";
        int bm = side_kpi(sb, k), cm = side_kpi(sc, k); /* the primary's count with one run per side */
        if (bm < 0 || cm < 0) {
            ADD(r, id, "kernels", name, FA_GATE_SKIPPED, "not measured in one of the runs: %s no %s",
                which_missing(b, c, bm >= 0, cm >= 0, w, sizeof w),
                k ? "fused-model trace (a run of kind 'fused' tagged fused-of:<run>)" : "timed kernel records");
            continue;
        }
        int cmin = k ? c->fkpi_min : c->kpi_min, cmax = k ? c->fkpi_max : c->kpi_max;
        char vary[96] = "";
        if (cmin != cmax) snprintf(vary, sizeof vary, " (the candidate's iterations ran %d..%d kernels)", cmin, cmax);
        if (cm > bm)
            ADD(r, id, "kernels", name, FA_GATE_FAIL, "%d -> %d kernels per iteration (+%d launches)%s", bm, cm, cm - bm,
                vary);
        else if (cm < bm)
            ADD(r, id, "kernels", name, FA_GATE_PASS, "%d -> %d kernels per iteration (%d fewer)%s", bm, cm, bm - cm, vary);
        else
            ADD(r, id, "kernels", name, FA_GATE_PASS, "%d kernels per iteration in both runs%s", bm, vary);
    }
    return FA_OK;
}

static const gate_cluster *find_cluster(const gate_run *g, const char *key)
{
    for (int i = 0; i < g->n_clusters; i++)
        if (!strcmp(g->cl[i].key, key)) return &g->cl[i];
    return NULL;
}

/* An accepted cluster of g holding every member of c, or NULL. */
static const gate_cluster *absorbing_cluster(const gate_run *g, const gate_cluster *c)
{
    for (int i = 0; i < g->n_clusters; i++) {
        const gate_cluster *o = &g->cl[i];
        if (!o->accepted || o->n_members < c->n_members) continue;
        bool all = true;
        for (int m = 0; m < c->n_members && all; m++) {
            bool found = false;
            for (int k = 0; k < o->n_members && !found; k++) found = !strcmp(c->members[m], o->members[k]);
            all = found;
        }
        if (all) return o;
    }
    return NULL;
}

/* 1 when run g accepts cluster `key` (or an accepted cluster of g holds all of bc's members). */
static bool kept_in(const gate_run *g, const gate_cluster *bc)
{
    const gate_cluster *m = find_cluster(g, bc->key);
    return (m && m->accepted) || (!m && absorbing_cluster(g, bc));
}

static fa_status check_fusion(fa_ctx *ctx, fa_gate_report *r, const side *sb, const side *sc)
{
    char w[160];
    const gate_run *b = &sb->r[0], *c = &sc->r[0];
    if (!b->plan_id || !c->plan_id) {
        ADD(r, "fusion.accepted", "fusion", "accepted clusters", FA_GATE_SKIPPED,
            "not measured in one of the runs: %s no fusion plan (run without --no-apply)",
            which_missing(b, c, b->plan_id > 0, c->plan_id > 0, w, sizeof w));
    } else {
        int n_acc = 0;
        for (int i = 0; i < b->n_clusters; i++) {
            const gate_cluster *bc = &b->cl[i];
            if (!bc->accepted) continue;
            n_acc++;
            char id[600], name[600];
            snprintf(id, sizeof id, "fusion.accepted:%s", bc->key);
            snprintf(name, sizeof name, "fusion of cluster %s", bc->display);
            const gate_cluster *cc = find_cluster(c, bc->key);
            if (sb->n > 1 || sc->n > 1) {
                /* several runs per side: acceptance by majority, so one noisy accept/reject
                 * decision of the applier does not decide the build */
                int kb = 0, kc = 0, lost_at = -1;
                for (int k = 0; k < sb->n; k++) kb += kept_in(&sb->r[k], bc);
                for (int k = 0; k < sc->n; k++) {
                    bool kept = kept_in(&sc->r[k], bc);
                    kc += kept;
                    if (!kept && lost_at < 0) lost_at = k;
                }
                const gate_cluster *lc = lost_at >= 0 ? find_cluster(&sc->r[lost_at], bc->key) : NULL;
                char why[512] = "";
                if (lost_at >= 0)
                    snprintf(why, sizeof why, "; in run %" PRId64 " it is %s: %s", sc->r[lost_at].info.id,
                             lc ? lc->status : "not proposed", lc && lc->reason ? lc->reason : "(no reason recorded)");
                if (kb * 2 <= sb->n)
                    ADD(r, id, "fusion", name, FA_GATE_WARN,
                        "accepted in only %d of %d baseline runs: a marginal fusion, not gating (candidate: %d of %d)%s",
                        kb, sb->n, kc, sc->n, why);
                else if (kc == sc->n)
                    ADD(r, id, "fusion", name, FA_GATE_PASS, "accepted in %d of %d baseline and all %d candidate runs", kb,
                        sb->n, sc->n);
                else if (kc * 2 > sc->n)
                    ADD(r, id, "fusion", name, FA_GATE_WARN,
                        "accepted in %d of %d candidate runs (flaky acceptance, not gating)%s", kc, sc->n, why);
                else
                    ADD(r, id, "fusion", name, FA_GATE_FAIL,
                        "fusion lost: accepted in %d of %d baseline runs, %d of %d candidate runs%s", kb, sb->n, kc, sc->n,
                        why);
            } else if (cc && cc->accepted) {
                ADD(r, id, "fusion", name, FA_GATE_PASS, "accepted in both runs");
            } else if (cc) {
                ADD(r, id, "fusion", name, FA_GATE_FAIL, "fusion lost: accepted in the baseline, %s in the candidate: %s",
                    cc->status, cc->reason ? cc->reason : "(no reason recorded)");
            } else {
                const gate_cluster *ab = absorbing_cluster(c, bc);
                if (ab)
                    ADD(r, id, "fusion", name, FA_GATE_PASS, "its members are now fused in the larger cluster %s",
                        ab->display);
                else
                    ADD(r, id, "fusion", name, FA_GATE_FAIL,
                        "fusion lost: accepted in the baseline, not proposed by the candidate's plan (no cluster with "
                        "this label and these members)");
            }
        }
        int n_new = 0;
        for (int i = 0; i < c->n_clusters; i++) {
            const gate_cluster *cc = &c->cl[i];
            const gate_cluster *bc = find_cluster(b, cc->key);
            if (cc->accepted && !(bc && bc->accepted)) n_new++;
        }
        if (!n_acc)
            ADD(r, "fusion.accepted", "fusion", "accepted clusters", FA_GATE_PASS,
                "the baseline accepted no cluster; nothing to lose%s", n_new ? " (the candidate accepts new ones)" : "");
        if (n_new) note(r, "the candidate accepts %d cluster(s) the baseline did not", n_new);
    }
    /* verification */
    if (!c->plan_id) {
        ADD(r, "fusion.verify", "verification", "numerical verification of fused kernels", FA_GATE_SKIPPED,
            "not measured in one of the runs: the candidate run %" PRId64 " has no fusion plan", c->info.id);
    } else {
        fa_buf m;
        fa_buf_init(&m);
        int bad = 0;
        for (int i = 0; i < c->n_clusters; i++) {
            const gate_cluster *cc = &c->cl[i];
            if (strcmp(cc->status, "rejected-verify")) continue;
            fa_buf_printf(&m, "%scluster %s failed verification", bad ? "; " : "", cc->display);
            if (isfinite(cc->max_rel_error)) fa_buf_printf(&m, " (max relative error %.3g)", cc->max_rel_error);
            if (cc->reason) fa_buf_printf(&m, ": %s", cc->reason);
            bad++;
        }
        if (bad)
            ADD(r, "fusion.verify", "verification", "numerical verification of fused kernels", FA_GATE_FAIL, "%s",
                m.data ? m.data : "");
        else
            ADD(r, "fusion.verify", "verification", "numerical verification of fused kernels", FA_GATE_PASS,
                "no cluster of the candidate failed verification");
        fa_buf_free(&m);
    }
    /* registers and spills (cuda) */
    const char *tgt = c->info.target ? c->info.target : "?";
    if (strcmp(tgt, "cuda")) {
        ADD(r, "cuda.registers", "registers", "registers and spills of fused kernels", FA_GATE_SKIPPED,
            "not measured in one of the runs: target %s (registers and spills exist on cuda only)", tgt);
    } else if (!b->plan_id || !c->plan_id) {
        ADD(r, "cuda.registers", "registers", "registers and spills of fused kernels", FA_GATE_SKIPPED,
            "not measured in one of the runs: %s no fusion plan",
            which_missing(b, c, b->plan_id > 0, c->plan_id > 0, w, sizeof w));
    } else {
        int compared = 0;
        for (int i = 0; i < b->n_clusters; i++) {
            const gate_cluster *bc = &b->cl[i];
            const gate_cluster *cc = find_cluster(c, bc->key);
            if (!bc->accepted || !cc || !cc->accepted) continue;
            char id[600], name[600];
            if (bc->spill_bytes >= 0 && cc->spill_bytes >= 0) {
                snprintf(id, sizeof id, "cuda.spills:%s", bc->key);
                snprintf(name, sizeof name, "spills of cluster %s", bc->display);
                if (cc->spill_bytes > bc->spill_bytes)
                    ADD(r, id, "registers", name, FA_GATE_FAIL, "spill stores grew from %d to %d bytes", bc->spill_bytes,
                        cc->spill_bytes);
                else
                    ADD(r, id, "registers", name, FA_GATE_PASS, "%d -> %d bytes of spill stores", bc->spill_bytes,
                        cc->spill_bytes);
                compared++;
            }
            if (bc->registers > 0 && cc->registers >= 0) {
                snprintf(id, sizeof id, "cuda.registers:%s", bc->key);
                snprintf(name, sizeof name, "registers of cluster %s", bc->display);
                double grow = (double)cc->registers / bc->registers - 1;
                ADD(r, id, "registers", name, grow > r->opt.register_warn ? FA_GATE_WARN : FA_GATE_PASS,
                    "%d -> %d registers per thread (%+.0f%%; warns above +%.0f%%)", bc->registers, cc->registers,
                    grow * 100, r->opt.register_warn * 100);
                compared++;
            }
        }
        if (!compared)
            ADD(r, "cuda.registers", "registers", "registers and spills of fused kernels", FA_GATE_SKIPPED,
                "not measured in one of the runs: no cluster accepted in both runs has registers/spills recorded");
    }
    return FA_OK;
}

/* Per-component latency from the unfused kernel records: every cluster of the baseline plan
 * is one component (the sum of its members' kernel time per iteration), every op outside
 * them another. A slowed kernel is named by its cluster. */
typedef struct component {
    const char *key, *name;
    const char **ops;
    int n_ops;
} component;

static void component_samples(const gate_run *g, const component *k, double *out, int *n_present)
{
    *n_present = 0;
    for (int i = 0; i < g->n_iters; i++) out[i] = 0;
    for (int m = 0; m < k->n_ops; m++) {
        int o = find_op(g, k->ops[m]);
        if (o < 0) continue;
        (*n_present)++;
        for (int i = 0; i < g->n_iters; i++) out[i] += g->ops[o].v[i];
    }
}

static fa_status check_components(fa_ctx *ctx, fa_gate_report *r, const side *sb, const side *sc)
{
    char w[160];
    const gate_run *b = &sb->r[0], *c = &sc->r[0];
    int max_iters = 1;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < (k ? sc->n : sb->n); i++) {
            const gate_run *g = k ? &sc->r[i] : &sb->r[i];
            if (g->n_iters > max_iters) max_iters = g->n_iters;
        }
    if (!b->n_ops || !c->n_ops) {
        ADD(r, "latency.component", "latency", "per-cluster / per-op latency (unfused kernels)", FA_GATE_SKIPPED,
            "not measured in one of the runs: %s no timed kernel records",
            which_missing(b, c, b->n_ops > 0, c->n_ops > 0, w, sizeof w));
        return FA_OK;
    }
    fa_arena *ar = r->arena;
    component *comp = fa_arena_alloc(ar, sizeof(component) * (size_t)(b->n_ops + b->n_clusters + 1));
    bool *used = fa_arena_alloc(ar, sizeof(bool) * (size_t)(b->n_ops + 1));
    double *bs = fa_arena_alloc(ar, sizeof(double) * (size_t)(max_iters + 1));
    double *cs = fa_arena_alloc(ar, sizeof(double) * (size_t)(max_iters + 1));
    if (!comp || !used || !bs || !cs) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    int nc = 0;
    /* accepted clusters first, then the others; a node belongs to the first cluster naming it */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < b->n_clusters; i++) {
            const gate_cluster *cl = &b->cl[i];
            if (cl->accepted != (pass == 0)) continue;
            component *k = &comp[nc];
            k->ops = fa_arena_alloc(ar, sizeof(char *) * (size_t)(cl->n_members + 1));
            if (!k->ops) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            k->n_ops = 0;
            for (int m = 0; m < cl->n_members; m++) {
                int o = find_op(b, cl->members[m]);
                if (o < 0 || used[o]) continue;
                used[o] = true;
                k->ops[k->n_ops++] = cl->members[m];
            }
            if (!k->n_ops) continue;
            char key[600], name[700];
            snprintf(key, sizeof key, "latency.component:%s", cl->key);
            snprintf(name, sizeof name, "cluster %s [unfused]", cl->display);
            k->key = fa_arena_strdup(ar, key);
            k->name = fa_arena_strdup(ar, name);
            nc++;
        }
    for (int o = 0; o < b->n_ops; o++) {
        if (used[o]) continue;
        component *k = &comp[nc++];
        k->ops = fa_arena_alloc(ar, sizeof(char *));
        if (!k->ops) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        k->ops[0] = b->ops[o].name;
        k->n_ops = 1;
        char key[600], name[600];
        snprintf(key, sizeof key, "latency.op:%s", b->ops[o].name);
        snprintf(name, sizeof name, "op '%s'%s", b->ops[o].name, b->plan_id ? " (in no cluster)" : "");
        k->key = fa_arena_strdup(ar, key);
        k->name = fa_arena_strdup(ar, name);
    }
    /* reference for --min-share: the baseline iteration median, else the sum of component medians */
    double ref = 0;
    double *tmp = fa_arena_alloc(ar, sizeof(double) * (size_t)(b->n_iter_ns + b->n_iters + 1));
    if (!tmp) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    double *shares = fa_arena_alloc(ar, sizeof(double) * (size_t)(nc + 1));
    if (!shares) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    double sum_med = 0;
    for (int i = 0; i < nc; i++) {
        int np;
        component_samples(b, &comp[i], bs, &np);
        memcpy(tmp, bs, sizeof(double) * (size_t)b->n_iters);
        shares[i] = fa_stats_median(tmp, b->n_iters);
        sum_med += shares[i];
    }
    if (b->n_iter_ns) {
        memcpy(tmp, b->iter_ns, sizeof(double) * (size_t)b->n_iter_ns);
        ref = fa_stats_median(tmp, b->n_iter_ns);
    }
    if (!(ref > 0)) ref = sum_med;
    int k_gating = 0;
    for (int i = 0; i < nc; i++) {
        shares[i] = ref > 0 ? shares[i] / ref : 0;
        k_gating += shares[i] >= r->opt.min_share;
    }
    /* Bonferroni over the gating components keeps the family's false-alarm rate at alpha */
    double conf = 1.0 - (1.0 - r->opt.confidence) / (k_gating > 1 ? k_gating : 1);
    for (int i = 0; i < nc; i++) {
        int npc, np;
        component_samples(c, &comp[i], cs, &npc);
        if (!npc) {
            ADD(r, comp[i].key, "latency", comp[i].name, FA_GATE_SKIPPED,
                "not measured in one of the runs: the candidate run %" PRId64 " ran no kernel of it", c->info.id);
            continue;
        }
        pool pb = {0}, pc = {0};
        for (int k = 0; k < sb->n; k++) {
            component_samples(&sb->r[k], &comp[i], bs, &np);
            pool_add(&pb, bs, sb->r[k].n_iters);
        }
        for (int k = 0; k < sc->n; k++) {
            component_samples(&sc->r[k], &comp[i], cs, &np);
            pool_add(&pc, cs, sc->r[k].n_iters);
        }
        char extra[200] = "";
        if (npc < comp[i].n_ops)
            snprintf(extra, sizeof extra, " (the candidate ran kernels of %d of its %d ops)", npc, comp[i].n_ops);
        fa_status s = latency_check(ctx, r, comp[i].key, comp[i].name, &pb, &pc, conf, ref, extra[0] ? extra : NULL);
        pool_free(&pb);
        pool_free(&pc);
        if (s) return s;
    }
    /* fused clusters' own benchmarks, matched by label and members */
    int n_pairs = 0;
    for (int i = 0; i < b->n_clusters; i++) {
        const gate_cluster *cc = find_cluster(c, b->cl[i].key);
        n_pairs += b->cl[i].n_fused > 0 && cc && cc->n_fused > 0;
    }
    double ref_f = 0;
    if (b->n_bench_fused) {
        double *t3 = fa_arena_alloc(ar, sizeof(double) * (size_t)b->n_bench_fused);
        if (!t3) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        memcpy(t3, b->bench_fused, sizeof(double) * (size_t)b->n_bench_fused);
        ref_f = fa_stats_median(t3, b->n_bench_fused);
    }
    if (!(ref_f > 0)) ref_f = ref;
    double conf_f = 1.0 - (1.0 - r->opt.confidence) / (n_pairs > 1 ? n_pairs : 1);
    for (int i = 0; i < b->n_clusters; i++) {
        const gate_cluster *bc = &b->cl[i];
        const gate_cluster *cc = find_cluster(c, bc->key);
        if (!bc->n_fused || !cc || !cc->n_fused) continue;
        char id[600], name[700];
        snprintf(id, sizeof id, "latency.cluster-fused:%s", bc->key);
        snprintf(name, sizeof name, "cluster %s [fused]", bc->display);
        pool pb = {0}, pc = {0};
        for (int k = 0; k < 2; k++) {
            const side *sd = k ? sc : sb;
            for (int j = 0; j < sd->n; j++) {
                const gate_cluster *m = find_cluster(&sd->r[j], bc->key);
                if (m && m->n_fused) pool_add(k ? &pc : &pb, m->fused, m->n_fused);
            }
        }
        fa_status s = latency_check(ctx, r, id, name, &pb, &pc, conf_f, ref_f, NULL);
        pool_free(&pb);
        pool_free(&pc);
        if (s) return s;
    }
    if (b->plan_id && c->plan_id && !n_pairs)
        ADD(r, "latency.cluster-fused", "latency", "per-cluster fused benchmarks", FA_GATE_SKIPPED,
            "not measured in one of the runs: no cluster has cluster-fused benchmark samples in both runs");
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

void fa_gate_report_free(fa_gate_report *r)
{
    if (!r) return;
    free(r->checks);
    fa_arena_free(r->arena);
    free(r);
}

fa_status fa_gate_run(fa_ctx *ctx, fa_store *bst, int64_t base_id, fa_store *cst, int64_t cand_id,
                      const fa_gate_options *o, fa_gate_report **out)
{
    return fa_gate_run_multi(ctx, bst, &base_id, 1, cst, &cand_id, 1, o, out);
}

fa_status fa_gate_run_multi(fa_ctx *ctx, fa_store *bst, const int64_t *base_ids, int n_base, fa_store *cst,
                            const int64_t *cand_ids, int n_cand, const fa_gate_options *o, fa_gate_report **out)
{
    if (n_base < 1 || n_cand < 1) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "gate: no baseline or candidate run");
    fa_gate_report *r = calloc(1, sizeof *r);
    if (!r || !(r->arena = fa_arena_create(1 << 16))) {
        free(r);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    if (o) r->opt = *o;
    else fa_gate_options_default(&r->opt);
    side sb = {fa_arena_alloc(r->arena, sizeof(gate_run) * (size_t)n_base), n_base};
    side sc = {fa_arena_alloc(r->arena, sizeof(gate_run) * (size_t)n_cand), n_cand};
    r->baseline_runs = fa_arena_alloc(r->arena, sizeof(int64_t) * (size_t)n_base);
    r->candidate_runs = fa_arena_alloc(r->arena, sizeof(int64_t) * (size_t)n_cand);
    fa_status s = sb.r && sc.r && r->baseline_runs && r->candidate_runs ? FA_OK
                                                                         : fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n_base && !s; i++) s = load_run(ctx, bst, base_ids[i], r->arena, &sb.r[i]);
    for (int i = 0; i < n_cand && !s; i++) s = load_run(ctx, cst, cand_ids[i], r->arena, &sc.r[i]);
    const gate_run *b = &sb.r[0], *c = &sc.r[0];
    for (int k = 0; k < n_base + n_cand && !s; k++) {
        const gate_run *g = k < n_base ? &sb.r[k] : &sc.r[k - n_base];
        const char *role = k < n_base ? "baseline" : "candidate";
        if (g->info.status && strcmp(g->info.status, "ok"))
            s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s run %" PRId64 " is %s'%s'%s%s: gate finished runs", g->path, role,
                             g->info.id, strcmp(g->info.status, "running") ? "" : "unfinished ", g->info.status,
                             g->info.error ? ": " : "", g->info.error ? g->info.error : "");
        else if (!fa_gate_same_model(&b->info, &g->info))
            s = fa_ctx_error(ctx, FA_ERR_INPUT,
                             "runs of different models: baseline run %" PRId64 " (%s) is %s%s%s, %s run %" PRId64
                             " (%s) is %s%s%s; the gate compares runs of one model",
                             b->info.id, b->path, b->info.model_path ? b->info.model_path : "?",
                             b->info.model_sha256 ? " sha256 " : "", b->info.model_sha256 ? b->info.model_sha256 : "",
                             role, g->info.id, g->path, g->info.model_path ? g->info.model_path : "?",
                             g->info.model_sha256 ? " sha256 " : "", g->info.model_sha256 ? g->info.model_sha256 : "");
        else if (b->info.target && g->info.target && strcmp(b->info.target, g->info.target))
            s = fa_ctx_error(ctx, FA_ERR_INPUT,
                             "runs on different targets: baseline run %" PRId64 " ran on %s, %s run %" PRId64
                             " on %s; latencies are not comparable",
                             b->info.id, b->info.target, role, g->info.id, g->info.target);
    }
    if (s) {
        fa_gate_report_free(r);
        return s;
    }
    r->baseline = b->info;
    r->candidate = c->info;
    r->n_baseline_runs = n_base;
    r->n_candidate_runs = n_cand;
    memcpy(r->baseline_runs, base_ids, sizeof(int64_t) * (size_t)n_base);
    memcpy(r->candidate_runs, cand_ids, sizeof(int64_t) * (size_t)n_cand);
    r->baseline_db = fa_arena_strdup(r->arena, b->path);
    r->candidate_db = fa_arena_strdup(r->arena, c->path);
    if (b->info.device_name && c->info.device_name && strcmp(b->info.device_name, c->info.device_name))
        note(r, "different devices: baseline on %s, candidate on %s; latency changes may be the machine's",
             b->info.device_name, c->info.device_name);
    if (b->info.threads && c->info.threads && b->info.threads != c->info.threads)
        note(r, "different thread counts: baseline %d, candidate %d", b->info.threads, c->info.threads);
    if (b->kpi_min != b->kpi_max && b->kpi_mode >= 0)
        note(r, "the baseline's iterations ran %d..%d kernels", b->kpi_min, b->kpi_max);
    if (base_ids[0] == cand_ids[0] && !strcmp(b->path, c->path)) note(r, "baseline and candidate are the same run");
    if (n_base > 1 || n_cand > 1)
        note(r, "latency pools %d baseline and %d candidate runs (two-stage bootstrap: runs, then iterations); "
                "accepted clusters and kernel counts are decided by majority / median over the runs; verification and "
                "registers come from the newest run of each side", n_base, n_cand);
    s = check_e2e(ctx, r, &sb, &sc);
    if (!s) s = check_kernels(ctx, r, &sb, &sc);
    if (!s) s = check_fusion(ctx, r, &sb, &sc);
    if (!s) s = check_components(ctx, r, &sb, &sc);
    if (s) {
        fa_gate_report_free(r);
        return s;
    }
    for (int i = 0; i < r->n_checks; i++) r->counts[r->checks[i].verdict]++;
    r->verdict = r->counts[FA_GATE_FAIL] ? FA_GATE_FAIL : r->counts[FA_GATE_INCONCLUSIVE] ? FA_GATE_INCONCLUSIVE
                                                                                           : FA_GATE_PASS;
    *out = r;
    return FA_OK;
}

/* ---- renderers ---- */

void fa_gate_escape_xml(fa_buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned char ch = p[i];
        switch (ch) {
        case '&': fa_buf_puts(b, "&amp;"); i++; continue;
        case '<': fa_buf_puts(b, "&lt;"); i++; continue;
        case '>': fa_buf_puts(b, "&gt;"); i++; continue;
        case '"': fa_buf_puts(b, "&quot;"); i++; continue;
        case '\'': fa_buf_puts(b, "&apos;"); i++; continue;
        default: break;
        }
        if (ch < 0x20) {
            if (ch == '\t' || ch == '\n' || ch == '\r') fa_buf_append(b, &p[i], 1);
            else fa_buf_puts(b, "\xEF\xBF\xBD");
            i++;
            continue;
        }
        if (ch < 0x80) {
            fa_buf_append(b, &p[i], 1);
            i++;
            continue;
        }
        /* validate one UTF-8 sequence */
        int len = ch >= 0xF0 && ch <= 0xF4 ? 4 : ch >= 0xE0 ? 3 : ch >= 0xC2 && ch <= 0xDF ? 2 : 0;
        bool ok = len > 0 && i + (size_t)len <= n;
        for (int k = 1; ok && k < len; k++) ok = (p[i + k] & 0xC0) == 0x80;
        if (ok && len == 3 && ch == 0xE0 && p[i + 1] < 0xA0) ok = false; /* overlong */
        if (ok && len == 3 && ch == 0xED && p[i + 1] >= 0xA0) ok = false; /* surrogates */
        if (ok && len == 3 && ch == 0xEF && p[i + 1] == 0xBF && p[i + 2] >= 0xBE) ok = false; /* U+FFFE/FFFF */
        if (ok && len == 4 && ch == 0xF0 && p[i + 1] < 0x90) ok = false;
        if (ok && len == 4 && ch == 0xF4 && p[i + 1] >= 0x90) ok = false;
        if (ok) {
            fa_buf_append(b, &p[i], (size_t)len);
            i += (size_t)len;
        } else {
            fa_buf_puts(b, "\xEF\xBF\xBD");
            i++;
        }
    }
}

static void xml(fa_buf *b, const char *s) { if (s) fa_gate_escape_xml(b, s, strlen(s)); }

static fa_gate_verdict effective(const fa_gate_report *r, fa_gate_verdict v)
{
    return v == FA_GATE_INCONCLUSIVE && r->opt.strict ? FA_GATE_FAIL : v;
}

static void change_cols(const fa_gate_check *c, char *chg, size_t n1, char *ci, size_t n2)
{
    snprintf(chg, n1, "-");
    snprintf(ci, n2, "-");
    if (!c->has_stats) return;
    pct(chg, n1, c->stats.ratio);
    if (isfinite(c->stats.lo)) {
        char lo[32], hi[32];
        pct(lo, sizeof lo, c->stats.lo);
        pct(hi, sizeof hi, c->stats.hi);
        snprintf(ci, n2, "%s..%s", lo, hi);
    }
}

/* ", with runs 4, 3" when a side pools several runs. */
static void more_runs(fa_buf *b, const int64_t *ids, int n)
{
    for (int i = 1; i < n; i++) fa_buf_printf(b, "%s%" PRId64, i == 1 ? " (pooled with run " : ", ", ids[i]);
    if (n > 1) fa_buf_puts(b, ")");
}

static void run_line(fa_buf *b, const char *role, const fa_run_info *ri, const char *db, const int64_t *ids, int n)
{
    fa_buf_printf(b, "%s: run %" PRId64, role, ri->id);
    more_runs(b, ids, n);
    fa_buf_printf(b, " of %s", ri->model_path ? ri->model_path : "?");
    if (ri->tag) fa_buf_printf(b, " (tag %s)", ri->tag);
    fa_buf_printf(b, " on %s/%s in %s\n", ri->target ? ri->target : "?", ri->device_name ? ri->device_name : "?", db);
}

static const char *overall_word(const fa_gate_report *r)
{
    fa_gate_verdict v = effective(r, r->verdict);
    return v == FA_GATE_FAIL ? (r->verdict == FA_GATE_FAIL ? "REGRESSION" : "INCONCLUSIVE (--strict: fails)")
                             : v == FA_GATE_INCONCLUSIVE ? "INCONCLUSIVE" : "PASS";
}

void fa_gate_render_text(const fa_gate_report *r, fa_buf *b)
{
    fa_buf_puts(b, "fuse-advise gate\n");
    run_line(b, "  baseline ", &r->baseline, r->baseline_db, r->baseline_runs, r->n_baseline_runs);
    run_line(b, "  candidate", &r->candidate, r->candidate_db, r->candidate_runs, r->n_candidate_runs);
    fa_buf_printf(b, "  rule: fail when the %.4g%% bootstrap CI of the median ratio lies above +%.3g%% (%d resamples)\n\n",
                  r->opt.confidence * 100, r->opt.max_regression * 100, r->opt.resamples);
    int wname = 5;
    for (int i = 0; i < r->n_checks; i++) {
        int l = (int)strlen(r->checks[i].name);
        if (l > wname) wname = l;
    }
    if (wname > 72) wname = 72;
    fa_buf_printf(b, "%-12s  %-*s  %8s  %-17s  %s\n", "VERDICT", wname, "CHECK", "CHANGE", "CI", "DETAIL");
    for (int i = 0; i < r->n_checks; i++) {
        const fa_gate_check *c = &r->checks[i];
        char chg[32], ci[64];
        change_cols(c, chg, sizeof chg, ci, sizeof ci);
        fa_buf_printf(b, "%-12s  %-*.*s  %8s  %-17s  %s\n", fa_gate_verdict_name(c->verdict), wname, wname, c->name, chg,
                      ci, c->message);
    }
    for (int i = 0; i < r->n_notes; i++) fa_buf_printf(b, "note: %s\n", r->notes[i]);
    fa_buf_printf(b, "\n%s: %d failed, %d inconclusive, %d warnings, %d passed, %d skipped (not measured)\n",
                  overall_word(r), r->counts[FA_GATE_FAIL], r->counts[FA_GATE_INCONCLUSIVE], r->counts[FA_GATE_WARN],
                  r->counts[FA_GATE_PASS], r->counts[FA_GATE_SKIPPED]);
}

void fa_gate_render_junit(const fa_gate_report *r, fa_buf *b)
{
    int failures = 0, skipped = 0;
    for (int i = 0; i < r->n_checks; i++) {
        fa_gate_verdict v = effective(r, r->checks[i].verdict);
        failures += v == FA_GATE_FAIL;
        skipped += v == FA_GATE_SKIPPED || v == FA_GATE_INCONCLUSIVE;
    }
    fa_buf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fa_buf_printf(b, "<testsuites name=\"fuse-advise gate\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\">\n",
                  r->n_checks, failures, skipped);
    fa_buf_printf(b, "  <testsuite name=\"fuse-advise gate\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" "
                     "time=\"0\">\n    <properties>\n",
                  r->n_checks, failures, skipped);
    const struct { const char *k; const fa_run_info *ri; const char *db; } runs[2] = {
        {"baseline", &r->baseline, r->baseline_db}, {"candidate", &r->candidate, r->candidate_db}};
    for (int k = 0; k < 2; k++) {
        fa_buf_printf(b, "      <property name=\"%s_run\" value=\"%" PRId64 "\"/>\n", runs[k].k, runs[k].ri->id);
        fa_buf_printf(b, "      <property name=\"%s_db\" value=\"", runs[k].k);
        xml(b, runs[k].db);
        fa_buf_puts(b, "\"/>\n");
        fa_buf_printf(b, "      <property name=\"%s_model\" value=\"", runs[k].k);
        xml(b, runs[k].ri->model_path);
        fa_buf_puts(b, "\"/>\n");
    }
    fa_buf_printf(b, "      <property name=\"max_regression\" value=\"%.6g\"/>\n", r->opt.max_regression);
    fa_buf_puts(b, "    </properties>\n");
    for (int i = 0; i < r->n_checks; i++) {
        const fa_gate_check *c = &r->checks[i];
        fa_gate_verdict v = effective(r, c->verdict);
        fa_buf_puts(b, "    <testcase classname=\"fuse-advise.gate.");
        xml(b, c->category);
        fa_buf_puts(b, "\" name=\"");
        xml(b, c->name);
        fa_buf_puts(b, "\" time=\"0\">\n");
        if (v == FA_GATE_FAIL) {
            fa_buf_printf(b, "      <failure type=\"%s\" message=\"", c->verdict == FA_GATE_INCONCLUSIVE ? "inconclusive"
                                                                                                           : "regression");
            xml(b, c->message);
            fa_buf_puts(b, "\">");
            xml(b, c->id);
            fa_buf_puts(b, ": ");
            xml(b, c->message);
            fa_buf_puts(b, "</failure>\n");
        } else if (v == FA_GATE_SKIPPED || v == FA_GATE_INCONCLUSIVE) {
            fa_buf_printf(b, "      <skipped message=\"%s: ", fa_gate_verdict_name(v));
            xml(b, c->message);
            fa_buf_puts(b, "\"/>\n");
        }
        fa_buf_printf(b, "      <system-out>%s: ", fa_gate_verdict_name(c->verdict));
        xml(b, c->message);
        fa_buf_puts(b, "</system-out>\n    </testcase>\n");
    }
    fa_buf_puts(b, "    <system-out>");
    for (int i = 0; i < r->n_notes; i++) {
        fa_buf_puts(b, "note: ");
        xml(b, r->notes[i]);
        fa_buf_puts(b, "\n");
    }
    fa_buf_printf(b, "%s</system-out>\n  </testsuite>\n</testsuites>\n", overall_word(r));
}

/* A Markdown table cell: pipes escaped, newlines folded, < > & as entities (GitHub renders
 * inline HTML). */
static void md(fa_buf *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '|': fa_buf_puts(b, "\\|"); break;
        case '\n': case '\r': fa_buf_puts(b, " "); break;
        case '<': fa_buf_puts(b, "&lt;"); break;
        case '>': fa_buf_puts(b, "&gt;"); break;
        case '&': fa_buf_puts(b, "&amp;"); break;
        case '`': fa_buf_puts(b, "'"); break;
        default: fa_buf_append(b, s, 1);
        }
    }
}

static const char *md_mark(fa_gate_verdict v)
{
    switch (v) {
    case FA_GATE_FAIL: return ":x:";
    case FA_GATE_WARN: return ":warning:";
    case FA_GATE_INCONCLUSIVE: return ":grey_question:";
    case FA_GATE_SKIPPED: return ":heavy_minus_sign:";
    default: return ":white_check_mark:";
    }
}

void fa_gate_render_markdown(const fa_gate_report *r, fa_buf *b)
{
    fa_gate_verdict ov = effective(r, r->verdict);
    fa_buf_printf(b, "### %s fuse-advise gate: %s\n\n", md_mark(ov == FA_GATE_FAIL ? FA_GATE_FAIL : r->verdict),
                  overall_word(r));
    for (int k = 0; k < 2; k++) {
        const fa_run_info *ri = k ? &r->candidate : &r->baseline;
        fa_buf_printf(b, "- **%s**: run %" PRId64, k ? "Candidate" : "Baseline", ri->id);
        more_runs(b, k ? r->candidate_runs : r->baseline_runs, k ? r->n_candidate_runs : r->n_baseline_runs);
        fa_buf_puts(b, " of ");
        md(b, ri->model_path);
        if (ri->tag) {
            fa_buf_puts(b, " (tag ");
            md(b, ri->tag);
            fa_buf_puts(b, ")");
        }
        fa_buf_puts(b, " on ");
        md(b, ri->device_name ? ri->device_name : ri->target);
        fa_buf_puts(b, "\n");
    }
    fa_buf_printf(b, "- **Rule**: fail when the %.4g%% bootstrap confidence interval of the ratio of medians "
                     "(candidate / baseline, per-iteration samples) lies above +%.3g%%\n",
                  r->opt.confidence * 100, r->opt.max_regression * 100);
    fa_buf_printf(b, "- **Result**: %d failed, %d inconclusive, %d warnings, %d passed, %d not measured\n\n",
                  r->counts[FA_GATE_FAIL], r->counts[FA_GATE_INCONCLUSIVE], r->counts[FA_GATE_WARN],
                  r->counts[FA_GATE_PASS], r->counts[FA_GATE_SKIPPED]);
    fa_buf_puts(b, "| | Check | Change | CI | Detail |\n|---|---|---:|---|---|\n");
    /* failing first, then the rest in order */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < r->n_checks; i++) {
            const fa_gate_check *c = &r->checks[i];
            bool bad = c->verdict == FA_GATE_FAIL || c->verdict == FA_GATE_WARN || c->verdict == FA_GATE_INCONCLUSIVE;
            if (bad != (pass == 0)) continue;
            char chg[32], ci[64];
            change_cols(c, chg, sizeof chg, ci, sizeof ci);
            fa_buf_printf(b, "| %s %s | ", md_mark(c->verdict), fa_gate_verdict_name(c->verdict));
            md(b, c->name);
            fa_buf_printf(b, " | %s | %s | ", chg, ci);
            md(b, c->message);
            fa_buf_puts(b, " |\n");
        }
    if (r->n_notes) {
        fa_buf_puts(b, "\n");
        for (int i = 0; i < r->n_notes; i++) {
            fa_buf_puts(b, "> ");
            md(b, r->notes[i]);
            fa_buf_puts(b, "\n");
        }
    }
}

void fa_gate_render_json(const fa_gate_report *r, fa_buf *b)
{
    fa_buf_printf(b, "{\"schema\":\"fuse-advise.gate/1\",\"verdict\":\"%s\",\"strict\":%s,\"fails_build\":%s,",
                  fa_gate_verdict_name(r->verdict), r->opt.strict ? "true" : "false",
                  effective(r, r->verdict) == FA_GATE_FAIL ? "true" : "false");
    fa_buf_puts(b, "\"options\":{\"max_regression\":");
    fa_json_num(b, r->opt.max_regression, 9);
    fa_buf_puts(b, ",\"confidence\":");
    fa_json_num(b, r->opt.confidence, 9);
    fa_buf_printf(b, ",\"resamples\":%d,\"seed\":%" PRIu64 ",\"min_share\":", r->opt.resamples, r->opt.seed);
    fa_json_num(b, r->opt.min_share, 9);
    fa_buf_puts(b, ",\"register_warn\":");
    fa_json_num(b, r->opt.register_warn, 9);
    fa_buf_puts(b, "}");
    for (int k = 0; k < 2; k++) {
        const fa_run_info *ri = k ? &r->candidate : &r->baseline;
        fa_buf_printf(b, ",\"%s\":{\"db\":", k ? "candidate" : "baseline");
        fa_json_str(b, k ? r->candidate_db : r->baseline_db);
        fa_buf_printf(b, ",\"run_id\":%" PRId64 ",\"model_path\":", ri->id);
        fa_json_str(b, ri->model_path);
        fa_buf_puts(b, ",\"model_sha256\":");
        fa_json_str(b, ri->model_sha256);
        fa_buf_puts(b, ",\"tag\":");
        fa_json_str(b, ri->tag);
        fa_buf_puts(b, ",\"target\":");
        fa_json_str(b, ri->target);
        fa_buf_puts(b, ",\"device_name\":");
        fa_json_str(b, ri->device_name);
        fa_buf_printf(b, ",\"iters\":%d,\"runs\":[", ri->iters);
        int nr = k ? r->n_candidate_runs : r->n_baseline_runs;
        const int64_t *ids = k ? r->candidate_runs : r->baseline_runs;
        for (int i = 0; i < nr; i++) fa_buf_printf(b, "%s%" PRId64, i ? "," : "", ids[i]);
        fa_buf_puts(b, "]}");
    }
    fa_buf_puts(b, ",\"counts\":{");
    for (int v = 0; v < FA_GATE_VERDICT_COUNT; v++)
        fa_buf_printf(b, "%s\"%s\":%d", v ? "," : "", fa_gate_verdict_name((fa_gate_verdict)v), r->counts[v]);
    fa_buf_puts(b, "},\"notes\":[");
    for (int i = 0; i < r->n_notes; i++) {
        if (i) fa_buf_puts(b, ",");
        fa_json_str(b, r->notes[i]);
    }
    fa_buf_puts(b, "],\"checks\":[");
    for (int i = 0; i < r->n_checks; i++) {
        const fa_gate_check *c = &r->checks[i];
        fa_buf_puts(b, i ? ",\n{\"id\":" : "\n{\"id\":");
        fa_json_str(b, c->id);
        fa_buf_puts(b, ",\"category\":");
        fa_json_str(b, c->category);
        fa_buf_puts(b, ",\"name\":");
        fa_json_str(b, c->name);
        fa_buf_printf(b, ",\"verdict\":\"%s\",\"message\":", fa_gate_verdict_name(c->verdict));
        fa_json_str(b, c->message);
        fa_buf_puts(b, ",\"stats\":");
        if (!c->has_stats) fa_buf_puts(b, "null");
        else {
            const fa_gate_stats *s = &c->stats;
            fa_buf_printf(b, "{\"n_base\":%d,\"n_cand\":%d,\"base_median_ns\":", s->n_base, s->n_cand);
            fa_json_num(b, s->base_median_ns, 9);
            fa_buf_puts(b, ",\"cand_median_ns\":");
            fa_json_num(b, s->cand_median_ns, 9);
            fa_buf_puts(b, ",\"ratio\":");
            fa_json_num(b, s->ratio, 9);
            fa_buf_puts(b, ",\"ci_lo\":");
            fa_json_num(b, s->lo, 9);
            fa_buf_puts(b, ",\"ci_hi\":");
            fa_json_num(b, s->hi, 9);
            fa_buf_puts(b, ",\"confidence\":");
            fa_json_num(b, s->confidence, 9);
            fa_buf_printf(b, ",\"runs_base\":%d,\"runs_cand\":%d,\"suggested_iters\":%d}", s->runs_base, s->runs_cand,
                          s->suggested_iters);
        }
        fa_buf_puts(b, "}");
    }
    fa_buf_puts(b, "]}\n");
}
