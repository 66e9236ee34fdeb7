/* gate/bootstrap — the gate's statistic: the ratio of medians of two sample sets and its
 * bootstrap confidence interval (two-stage over runs, then moving blocks of iterations), the
 * verdict against the threshold and the suggested iteration count (docs/ci.md). Medians and
 * quantiles are core's (core/stats.c: type 7, one convention for every stage). */
#include "gate/gate.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


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
