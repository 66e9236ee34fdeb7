/* test_gate_stats — the gate's statistics on synthetic per-iteration samples: false-alarm rate
 * under A/A noise, detection of a true 10% regression, the 1% pass, the inconclusive
 * suggestion, reproducibility. Noise model: log-normal jitter (sigma 3-5%) plus occasional
 * outliers (2% of iterations 1.2-2x slower), what CPU and GPU timing loops show. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate/gate.h"
#include "testutil.h"

/* n samples around `center` ns: center * exp(sigma * N(0,1)), and with probability p_out an
 * outlier multiplied by U(1.2, 2.0). */
static void gen(fa_rng *r, double *out, int n, double center, double sigma, double p_out)
{
    for (int i = 0; i < n; i++) {
        double x = center * exp(sigma * fa_rng_normal(r));
        if (fa_rng_uniform(r, 0, 1) < p_out) x *= fa_rng_uniform(r, 1.2f, 2.0f);
        out[i] = x;
    }
}

static fa_gate_options opts(void)
{
    fa_gate_options o;
    fa_gate_options_default(&o);
    return o;
}

static void test_median_odd_and_even_counts(void **state)
{
    (void)state;
    double a[] = {5, 1, 4, 2, 3};
    assert_true(fa_stats_median(a, 5) == 3);
    double b[] = {10, 1, 7, 3};
    assert_true(fa_stats_median(b, 4) == 5);
    double c[] = {2, 2, 2, 9, 1, 2};
    assert_true(fa_stats_median(c, 6) == 2);
    assert_true(isnan(fa_stats_median(c, 0)));
    /* one convention (type 7, R's and NumPy's default): quantile(c(1,2,3,4), .25) = 1.75 */
    double s4[] = {1, 2, 3, 4};
    assert_true(fa_stats_quantile_sorted(s4, 4, 0.25) == 1.75);
    assert_true(fa_stats_quantile_sorted(s4, 4, 0.5) == 2.5);
    assert_true(fa_stats_quantile_sorted(s4, 4, 1.0) == 4);
    int64_t i4[] = {40, 10, 30, 20}, i3[] = {7, 1, 4}, i2[] = {1, 2};
    assert_int_equal(fa_stats_median_i64(i4, 4), 25);
    assert_int_equal(fa_stats_median_i64(i3, 3), 4);
    assert_int_equal(fa_stats_median_i64(i2, 2), 2); /* 1.5 rounded half up */
    assert_int_equal(fa_stats_median_i64(i2, 0), -1);
    fa_sample_stats st;
    double s5[] = {5, 1, 4, 2, 3};
    fa_sample_stats_of(s5, 5, &st);
    assert_true(st.median_ns == 3 && st.p25_ns == 2 && st.p75_ns == 4 && st.min_ns == 1);
    assert_true(s5[0] == 5); /* the samples are not reordered */
}

/* Issue 19's calibration: a measured saving counts only where it is resolved. n = 5 pairs: the
 * sign-test interval of the median is [min, max] of the differences at 93.75% (k = 1:
 * P(B(5, 1/2) = 0) = 1/32); n = 4 has no interval at >= 90%. */
static void test_paired_saving_resolution(void **state)
{
    (void)state;
    double a[] = {110, 111, 112, 113, 114}, b[] = {100, 100, 100, 100, 100};
    fa_paired_saving p;
    fa_paired_saving_of(a, b, 5, &p);
    assert_int_equal(p.n, 5);
    assert_true(p.median_ns == 12 && p.iqr_ns == 2 && p.ci_lo_ns == 10 && p.ci_hi_ns == 14);
    assert_true(fabs(p.ci_level - 0.9375) < 1e-12);
    assert_true(fa_paired_saving_resolved(&p, 1)); /* the interval excludes 0, whatever was predicted */
    /* differences of both signs (-10 -5 10 25 30): the interval holds 0; resolved only where
     * the IQR (25 - -5 = 30) is below the predicted magnitude */
    double c[] = {90, 130, 95, 125, 110};
    fa_paired_saving_of(c, b, 5, &p);
    assert_true(p.ci_lo_ns == -10 && p.ci_hi_ns == 30 && p.iqr_ns == 30);
    assert_false(fa_paired_saving_resolved(&p, 5));
    assert_false(fa_paired_saving_resolved(&p, -30));
    assert_true(fa_paired_saving_resolved(&p, -31));
    fa_paired_saving_of(a, b, 4, &p);
    assert_true(isnan(p.ci_lo_ns) && p.ci_level == 0);
    assert_false(fa_paired_saving_resolved(&p, 1)); /* IQR 1.5 is not below 1 */
    assert_true(fa_paired_saving_resolved(&p, 2));
    fa_paired_saving_of(a, b, 0, &p);
    assert_false(fa_paired_saving_resolved(&p, 1e9));
}

/* The adaptive repetitions' stop rule (issue 19) on synthetic paired samples: a saving of 100
 * with +-3 of noise is settled within 10% after one block of 5 rounds; with +-60 of noise it is
 * not after 5 rounds and is after more blocks drawn from the same distribution; a saving near 0
 * never gets within 10% of its own magnitude and settles only through the floor (1% of a
 * 10,000 ns sub-graph) once its interval is that narrow. */
static void test_adaptive_stop_rule_on_synthetic_samples(void **state)
{
    (void)state;
    double u[200], f[200];
    fa_rng r;
    fa_rng_seed(&r, 7);
    for (int i = 0; i < 5; i++) u[i] = 10100 + fa_rng_uniform(&r, -3, 3), f[i] = 10000;
    fa_paired_saving p;
    fa_paired_saving_of(u, f, 5, &p);
    assert_true(fa_paired_saving_settled(&p, 0.10, 0));
    /* noisy: +-60 around 100 */
    int n = 0, settled_at = -1;
    while (n < 200) {
        for (int i = 0; i < 5; i++, n++) u[n] = 10100 + fa_rng_uniform(&r, -60, 60), f[n] = 10000;
        fa_paired_saving_of(u, f, n, &p);
        if (n == 5) assert_false(fa_paired_saving_settled(&p, 0.10, 0));
        if (fa_paired_saving_settled(&p, 0.10, 0)) { settled_at = n; break; }
    }
    assert_true(settled_at > 5);
    assert_true(fabs(p.median_ns - 100) <= 20); /* the settled estimate is near the true saving */
    /* a saving of about 0 (+-20): never within 10% of itself; within 1% of 10,000 ns = 100 */
    for (int i = 0; i < 100; i++) u[i] = 10000 + fa_rng_uniform(&r, -20, 20), f[i] = 10000;
    fa_paired_saving_of(u, f, 100, &p);
    assert_false(fa_paired_saving_settled(&p, 0.10, 0));
    assert_true(fa_paired_saving_settled(&p, 0.10, 100));
    assert_false(fa_paired_saving_settled(&p, 0.10, 1)); /* the floor must cover the interval */
    /* under 5 pairs there is no interval: never settled */
    fa_paired_saving_of(u, f, 4, &p);
    assert_false(fa_paired_saving_settled(&p, 0.10, 1e9));
    assert_false(fa_paired_saving_settled(NULL, 0.10, 1e9));
}

/* The signed-rank interval against first principles, for n = 5 .. 16: every one of the 2^n sign
 * patterns of ranks 1..n summed (W+), the largest k with P(W+ < k) <= 5%, then the k-th smallest
 * and largest of all n(n+1)/2 Walsh averages, sorted by brute force. Ties among the differences
 * (repeated values) included. Textbook check: n = 10 gives k = 11 (P(W+ <= 10) = 43/1024, the
 * one-sided 5% critical value 10 of Wilcoxon's tables). */
static void test_signed_rank_interval_by_brute_force(void **state)
{
    (void)state;
    fa_rng r;
    fa_rng_seed(&r, 31);
    for (int n = 5; n <= 16; n++) {
        long long cnt[137] = {0}; /* W+ <= 16 * 17 / 2 = 136 */
        for (unsigned mask = 0; mask < (1u << n); mask++) {
            int w = 0;
            for (int i = 0; i < n; i++)
                if (mask >> i & 1) w += i + 1;
            cnt[w]++;
        }
        int k = 0;
        long long tail = 0;
        while (k < 137 && (double)(tail + cnt[k]) / (double)(1u << n) <= 0.05) tail += cnt[k], k++;
        if (n == 10) assert_int_equal(k, 11);
        double d[16], walsh[136];
        for (int trial = 0; trial < 20; trial++) {
            for (int i = 0; i < n; i++) d[i] = floor(fa_rng_uniform(&r, -50, 150)) * (trial % 2 ? 1 : 0.37);
            if (trial % 5 == 0) d[1] = d[0]; /* a tie */
            qsort(d, (size_t)n, sizeof *d, fa_stats_cmp_double);
            int m = 0;
            for (int i = 0; i < n; i++)
                for (int j = i; j < n; j++) walsh[m++] = 0.5 * (d[i] + d[j]);
            qsort(walsh, (size_t)m, sizeof *walsh, fa_stats_cmp_double);
            double lo, hi, level, est;
            assert_true(fa_stats_signed_rank_interval_sorted(d, (size_t)n, &lo, &hi, &level, &est));
            assert_true(lo == walsh[k - 1] && hi == walsh[m - k]);
            assert_true(fabs(level - (1 - 2 * (double)tail / (double)(1u << n))) < 1e-12);
            double med = m % 2 ? walsh[m / 2] : 0.5 * (walsh[m / 2 - 1] + walsh[m / 2]);
            assert_true(est == med);
        }
    }
    /* beyond the exact table (n > 100): the normal approximation's k, and the bisection's k-th
     * average against all 1,125,750 averages of n = 1500 sorted, with ties */
    {
        size_t n = 1500, m = n * (n + 1) / 2;
        double *d = malloc(n * sizeof *d), *walsh = malloc(m * sizeof *walsh);
        assert_non_null(d);
        assert_non_null(walsh);
        for (size_t i = 0; i < n; i++) d[i] = floor(fa_rng_uniform(&r, -2000, 6000)) * 0.5;
        qsort(d, n, sizeof *d, fa_stats_cmp_double);
        size_t w = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = i; j < n; j++) walsh[w++] = 0.5 * (d[i] + d[j]);
        qsort(walsh, m, sizeof *walsh, fa_stats_cmp_double);
        double mean = (double)n * (double)(n + 1) / 4, sd = sqrt((double)n * (double)(n + 1) * (double)(2 * n + 1) / 24);
        size_t k = (size_t)floor(mean - 1.6448536269514722 * sd + 0.5);
        double lo, hi, level, est;
        assert_true(fa_stats_signed_rank_interval_sorted(d, n, &lo, &hi, &level, &est));
        assert_true(lo == walsh[k - 1] && hi == walsh[m - k]);
        assert_true(est == 0.5 * (walsh[m / 2 - 1] + walsh[m / 2])); /* m even */
        assert_true(level > 0.899 && level < 0.901);
        free(d);
        free(walsh);
    }
    double d4[] = {1, 2, 3, 4}, lo, hi, level;
    assert_false(fa_stats_signed_rank_interval_sorted(d4, 4, &lo, &hi, &level, NULL)); /* 1/16 > 5% */
    assert_true(isnan(lo) && isnan(hi) && level == 0);
}

/* Its coverage and its width, simulated: 2,000 sets of n paired differences, symmetric noise (a
 * normal, and a normal with one round in ten 1.2-2x slower on both sides: a machine's slow
 * spell) around a true difference of 3; the interval holds 3 in 90-95% of the sets at n = 25 (the
 * exact table) and at n = 150 (the normal approximation), as its level says, and on normal noise
 * it is narrower than the sign-test interval of the same rounds, on average by a third at n = 25
 * (the 3/2 asymptotic relative efficiency: widths scale as 1/sqrt(efficiency), 0.82). */
static void test_signed_rank_interval_coverage_and_width(void **state)
{
    (void)state;
    static const int ns[] = {25, 150};
    for (int ni = 0; ni < 2; ni++) {
        int n = ns[ni];
        for (int spells = 0; spells < 2; spells++) {
            fa_rng r;
            fa_rng_seed(&r, 900 + (uint64_t)(ni * 2 + spells));
            int covered = 0, sets = 2000;
            double width_sr = 0, width_sign = 0, lvl = 0;
            double d[150];
            for (int s = 0; s < sets; s++) {
                for (int i = 0; i < n; i++) {
                    double scale = spells && fa_rng_uniform(&r, 0, 1) < 0.1 ? fa_rng_uniform(&r, 1.2f, 2.0f) : 1;
                    d[i] = 3 + scale * 2 * fa_rng_normal(&r);
                }
                qsort(d, (size_t)n, sizeof *d, fa_stats_cmp_double);
                double lo, hi, level, slo, shi, slevel;
                assert_true(fa_stats_signed_rank_interval_sorted(d, (size_t)n, &lo, &hi, &level, NULL));
                assert_true(fa_stats_median_interval_sorted(d, (size_t)n, &slo, &shi, &slevel));
                covered += lo <= 3 && 3 <= hi;
                width_sr += hi - lo;
                width_sign += shi - slo;
                lvl = level;
            }
            double cov = (double)covered / sets;
            assert_true(lvl >= 0.90 && lvl < 0.91);
            assert_true(cov >= 0.88 && cov <= 0.95);
            if (!spells && n == 25) assert_true(width_sr < 0.9 * width_sign);
        }
    }
}

/* A/A: both runs drawn from one distribution, 1000 seeds, n in 20..50, sigma 3..5%: the gate
 * must fail under 1% of the time. */
static void test_aa_false_alarm_rate_under_1pct_over_1000_seeds(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_gate_options o = opts();
    int fails = 0, inconclusive = 0, passes = 0;
    const int seeds = 1000;
    double base[64], cand[64];
    for (int s = 0; s < seeds; s++) {
        fa_rng r;
        fa_rng_seed(&r, 1000 + (uint64_t)s);
        int n = 20 + (int)(fa_rng_u64(&r) % 31);
        double sigma = 0.03 + 0.02 * fa_rng_uniform(&r, 0, 1);
        gen(&r, base, n, 1e6, sigma, 0.02);
        gen(&r, cand, n, 1e6, sigma, 0.02);
        fa_gate_stats st;
        assert_int_equal(fa_gate_compare_samples(ctx, base, n, cand, n, &o, 0, (uint64_t)s, &st), FA_OK);
        fails += st.verdict == FA_GATE_FAIL;
        inconclusive += st.verdict == FA_GATE_INCONCLUSIVE;
        passes += st.verdict == FA_GATE_PASS;
    }
    double rate = (double)fails / seeds;
    printf("A/A false-alarm rate: %.2f%% (%d/%d seeds, n 20..50, sigma 3-5%%, 2%% outliers); pass %.1f%%, "
           "inconclusive %.1f%%\n",
           rate * 100, fails, seeds, 100.0 * passes / seeds, 100.0 * inconclusive / seeds);
    assert_true(rate < 0.01);
    /* and the gate is not vacuous: most A/A comparisons decide "pass" */
    assert_true(passes > seeds / 2);
    fa_ctx_free(ctx);
}

/* A true 10% slowdown at n = 20 (sigma 4%, outliers): detected in most seeds. */
static void test_detects_true_10pct_regression_at_n20(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_gate_options o = opts();
    int fails = 0, passes = 0;
    const int seeds = 1000;
    double base[20], cand[20];
    for (int s = 0; s < seeds; s++) {
        fa_rng r;
        fa_rng_seed(&r, 50000 + (uint64_t)s);
        gen(&r, base, 20, 1e6, 0.04, 0.02);
        gen(&r, cand, 20, 1.1e6, 0.04, 0.02);
        fa_gate_stats st;
        assert_int_equal(fa_gate_compare_samples(ctx, base, 20, cand, 20, &o, 0, (uint64_t)s, &st), FA_OK);
        fails += st.verdict == FA_GATE_FAIL;
        passes += st.verdict == FA_GATE_PASS;
    }
    printf("detection rate of a true 10%% regression at n=20 (sigma 4%%, 2%% outliers): %.1f%% (%d/%d); "
           "wrongly passed: %d\n", 100.0 * fails / seeds, fails, seeds, passes);
    assert_true(fails >= seeds * 8 / 10);
    assert_int_equal(passes, 0); /* a 10% regression never passes */
    fa_ctx_free(ctx);
}

/* A 1% slowdown, under the 3% threshold, with n = 50 and sigma 2%: never fails, and passes in at
 * least 90% of seeds (the rest are inconclusive). */
static void test_1pct_change_under_3pct_threshold_passes(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_gate_options o = opts();
    int fails = 0, passes = 0;
    const int seeds = 300;
    double base[50], cand[50];
    for (int s = 0; s < seeds; s++) {
        fa_rng r;
        fa_rng_seed(&r, 90000 + (uint64_t)s);
        gen(&r, base, 50, 1e6, 0.02, 0.02);
        gen(&r, cand, 50, 1.01e6, 0.02, 0.02);
        fa_gate_stats st;
        assert_int_equal(fa_gate_compare_samples(ctx, base, 50, cand, 50, &o, 0, (uint64_t)s, &st), FA_OK);
        fails += st.verdict == FA_GATE_FAIL;
        passes += st.verdict == FA_GATE_PASS;
    }
    printf("1%% change, n=50, sigma 2%%: pass %d/%d, fail %d\n", passes, seeds, fails);
    assert_int_equal(fails, 0);
    assert_true(passes >= seeds * 9 / 10);
    fa_ctx_free(ctx);
}

/* Decision boundaries on near-deterministic samples. */
static void test_fail_needs_ci_lower_bound_above_threshold(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_gate_options o = opts();
    double base[30], c5[30], c2[30];
    fa_rng r;
    fa_rng_seed(&r, 7);
    gen(&r, base, 30, 1000, 0.002, 0);
    for (int i = 0; i < 30; i++) {
        c5[i] = base[(i * 7) % 30] * 1.05;
        c2[i] = base[(i * 7) % 30] * 1.02;
    }
    fa_gate_stats st;
    assert_int_equal(fa_gate_compare_samples(ctx, base, 30, c5, 30, &o, 0, 1, &st), FA_OK);
    assert_int_equal(st.verdict, FA_GATE_FAIL);
    assert_true(st.lo > 1.03 && st.lo <= st.ratio && st.ratio <= st.hi);
    assert_true(fabs(st.ratio - 1.05) < 1e-9);
    assert_int_equal(fa_gate_compare_samples(ctx, base, 30, c2, 30, &o, 0, 1, &st), FA_OK);
    assert_int_equal(st.verdict, FA_GATE_PASS);
    assert_true(st.hi < 1.03);
    /* the same 5% with --max-regression 10% passes */
    o.max_regression = 0.10;
    assert_int_equal(fa_gate_compare_samples(ctx, base, 30, c5, 30, &o, 0, 1, &st), FA_OK);
    assert_int_equal(st.verdict, FA_GATE_PASS);
    fa_ctx_free(ctx);
}

/* Inconclusive: the suggested iteration count is larger than n, and drawing that many samples
 * from the same distributions decides far more often than n did. */
static void test_inconclusive_suggestion_decides_when_followed(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_gate_options o = opts();
    const int n = 15;
    int inconc = 0, decided_small = 0, decided_big = 0, total_big = 0;
    for (int s = 0; s < 200; s++) {
        fa_rng r;
        fa_rng_seed(&r, 777000 + (uint64_t)s);
        double base[15], cand[15];
        gen(&r, base, n, 1e6, 0.06, 0);
        gen(&r, cand, n, 1.08e6, 0.06, 0); /* 8%: 5 points above the threshold */
        fa_gate_stats st;
        assert_int_equal(fa_gate_compare_samples(ctx, base, n, cand, n, &o, 0, 1, &st), FA_OK);
        if (st.verdict != FA_GATE_INCONCLUSIVE) {
            decided_small++;
            continue;
        }
        inconc++;
        if (st.suggested_iters <= 0) continue;
        assert_true(st.suggested_iters > n);
        int m = st.suggested_iters > 400 ? 400 : st.suggested_iters;
        double *b2 = malloc(sizeof(double) * (size_t)m), *c2 = malloc(sizeof(double) * (size_t)m);
        gen(&r, b2, m, 1e6, 0.06, 0);
        gen(&r, c2, m, 1.08e6, 0.06, 0);
        fa_gate_stats s2;
        assert_int_equal(fa_gate_compare_samples(ctx, b2, m, c2, m, &o, 0, 1, &s2), FA_OK);
        total_big++;
        decided_big += s2.verdict != FA_GATE_INCONCLUSIVE;
        free(b2);
        free(c2);
    }
    printf("8%% change, sigma 6%%, n=15: decided %d/200; of %d inconclusive, rerun at the suggested count "
           "decided %d/%d\n", decided_small, inconc, decided_big, total_big);
    assert_true(inconc > 0 && total_big > 0);
    assert_true(decided_big * 2 > total_big); /* most reruns decide */
    fa_ctx_free(ctx);
}

static void test_same_seed_same_interval(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_gate_options o = opts();
    double base[25], cand[25];
    fa_rng r;
    fa_rng_seed(&r, 3);
    gen(&r, base, 25, 1e5, 0.05, 0.02);
    gen(&r, cand, 25, 1e5, 0.05, 0.02);
    fa_gate_stats a, b, c;
    assert_int_equal(fa_gate_compare_samples(ctx, base, 25, cand, 25, &o, 0, 42, &a), FA_OK);
    assert_int_equal(fa_gate_compare_samples(ctx, base, 25, cand, 25, &o, 0, 42, &b), FA_OK);
    assert_int_equal(fa_gate_compare_samples(ctx, base, 25, cand, 25, &o, 0, 43, &c), FA_OK);
    assert_true(a.lo == b.lo && a.hi == b.hi && a.verdict == b.verdict);
    assert_true(a.lo != c.lo || a.hi != c.hi); /* the seed is used */
    fa_ctx_free(ctx);
}

static void test_too_few_samples_is_inconclusive_not_pass(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_gate_options o = opts();
    double base[3] = {100, 100, 100}, cand[3] = {200, 200, 200};
    fa_gate_stats st;
    assert_int_equal(fa_gate_compare_samples(ctx, base, 3, cand, 3, &o, 0, 1, &st), FA_OK);
    assert_int_equal(st.verdict, FA_GATE_INCONCLUSIVE);
    assert_true(st.suggested_iters >= 20);
    assert_true(fabs(st.ratio - 2.0) < 1e-12);
    fa_ctx_free(ctx);
}

static void test_nonpositive_sample_is_an_input_error_naming_its_index(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_gate_options o = opts();
    double base[6] = {1, 2, 3, 4, 5, 6}, cand[6] = {1, 2, 3, 0, 5, 6};
    fa_gate_stats st;
    memset(&st, 0x5a, sizeof st);
    assert_int_equal(fa_gate_compare_samples(ctx, base, 6, cand, 6, &o, 0, 1, &st), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "candidate sample 3"));
    assert_int_equal(st.n_base, 0x5a5a5a5a); /* untouched on failure */
    fa_ctx_free(ctx);
}

/* A family of 20 component checks at the Bonferroni level: A/A family-wise false alarms < 1%. */
static void test_bonferroni_family_of_20_checks_false_alarm_under_1pct(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_gate_options o = opts();
    o.resamples = 500; /* raised internally to resolve the corrected tails */
    int family_fail = 0;
    const int seeds = 150, k = 20;
    double conf = 1 - (1 - o.confidence) / k;
    for (int s = 0; s < seeds; s++) {
        fa_rng r;
        fa_rng_seed(&r, 424242 + (uint64_t)s);
        bool any = false;
        for (int j = 0; j < k; j++) {
            double base[20], cand[20];
            double sigma = 0.05 + 0.05 * fa_rng_uniform(&r, 0, 1); /* small kernels: noisier */
            gen(&r, base, 20, 1e4, sigma, 0.03);
            gen(&r, cand, 20, 1e4, sigma, 0.03);
            fa_gate_stats st;
            assert_int_equal(fa_gate_compare_samples(ctx, base, 20, cand, 20, &o, conf, (uint64_t)(s * k + j), &st),
                             FA_OK);
            any |= st.verdict == FA_GATE_FAIL;
        }
        family_fail += any;
    }
    printf("family of %d A/A component checks (sigma 5-10%%): family-wise false alarms %d/%d\n", k, family_fail, seeds);
    assert_true(family_fail * 100 < seeds); /* < 1% */
    fa_ctx_free(ctx);
}


/* One group per side is exactly the plain comparison (same seed, same interval). */
static void test_grouped_with_one_run_equals_plain(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_gate_options o = opts();
    double base[30], cand[30];
    fa_rng r;
    fa_rng_seed(&r, 5);
    gen(&r, base, 30, 1e5, 0.05, 0.02);
    gen(&r, cand, 30, 1.03e5, 0.05, 0.02);
    fa_gate_stats a, b;
    int g1 = 30;
    assert_int_equal(fa_gate_compare_samples(ctx, base, 30, cand, 30, &o, 0, 9, &a), FA_OK);
    assert_int_equal(fa_gate_compare_grouped(ctx, base, 30, &g1, 1, cand, 30, &g1, 1, &o, 0, 9, &b), FA_OK);
    assert_true(a.lo == b.lo && a.hi == b.hi && a.verdict == b.verdict && a.ratio == b.ratio);
    assert_int_equal(b.runs_base, 1);
    int bad[2] = {10, 10};
    assert_int_equal(fa_gate_compare_grouped(ctx, base, 30, bad, 2, cand, 30, NULL, 0, &o, 0, 9, &b), FA_ERR_INTERNAL);
    fa_ctx_free(ctx);
}

/* Run-to-run variation: every run (process) has its own offset, log-normal sigma_between 5%,
 * on top of 3% jitter within it; 3 runs of 20 iterations per side, A/A. Pooling the 60 samples
 * as if they were one run ignores the offsets and cries wolf; the two-stage bootstrap keeps the
 * false-alarm rate under 1%. */
static void test_two_stage_bootstrap_absorbs_run_to_run_drift(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_gate_options o = opts();
    o.resamples = 1000;
    const int seeds = 300, runs = 3, n = 20;
    int flat_fail = 0, grouped_fail = 0, grouped_detect = 0;
    int g[3] = {n, n, n};
    double base[60], cand[60];
    for (int s = 0; s < seeds; s++) {
        fa_rng r;
        fa_rng_seed(&r, 31337 + (uint64_t)s);
        for (int k = 0; k < runs; k++) {
            gen(&r, base + k * n, n, 1e6 * exp(0.05 * fa_rng_normal(&r)), 0.03, 0.02);
            gen(&r, cand + k * n, n, 1e6 * exp(0.05 * fa_rng_normal(&r)), 0.03, 0.02);
        }
        fa_gate_stats a, b;
        assert_int_equal(fa_gate_compare_samples(ctx, base, 60, cand, 60, &o, 0, (uint64_t)s, &a), FA_OK);
        assert_int_equal(fa_gate_compare_grouped(ctx, base, 60, g, 3, cand, 60, g, 3, &o, 0, (uint64_t)s, &b), FA_OK);
        flat_fail += a.verdict == FA_GATE_FAIL;
        grouped_fail += b.verdict == FA_GATE_FAIL;
        assert_int_equal(b.runs_base, 3);
        /* and a real 25% regression on every candidate run is still caught */
        for (int i = 0; i < 60; i++) cand[i] *= 1.25;
        assert_int_equal(fa_gate_compare_grouped(ctx, base, 60, g, 3, cand, 60, g, 3, &o, 0, (uint64_t)s, &b), FA_OK);
        grouped_detect += b.verdict == FA_GATE_FAIL;
    }
    printf("run-to-run drift 5%% (3 runs x 20 iterations per side, A/A): false alarms flat %d/%d, two-stage %d/%d; "
           "+25%% detected by two-stage %d/%d\n", flat_fail, seeds, grouped_fail, seeds, grouped_detect, seeds);
    assert_true(grouped_fail * 100 < seeds);
    assert_true(flat_fail >= 5 * (grouped_fail + 1)); /* the grouping is what keeps it quiet */
    assert_true(grouped_detect * 10 >= seeds * 7);
    fa_ctx_free(ctx);
}

/* n samples of AR(1) log-noise around center: x_i = rho x_{i-1} + sqrt(1 - rho^2) sigma N(0,1),
 * sample = center * exp(x_i): a busy machine, where a burst of load slows consecutive iterations. */
static void gen_ar1(fa_rng *r, double *out, int n, double center, double sigma, double rho)
{
    double x = sigma * fa_rng_normal(r);
    for (int i = 0; i < n; i++) {
        out[i] = center * exp(x);
        x = rho * x + sqrt(1 - rho * rho) * sigma * fa_rng_normal(r);
    }
}

/* Autocorrelated iterations (rho 0.6, the lag-1 autocorrelation measured on real runs at load
 * 11): resampling single iterations makes the interval too narrow and A/A pairs fail; the
 * circular block bootstrap keeps them under 2%. The same values shuffled (no autocorrelation
 * left, so the plain bootstrap runs) fail twice as often: the blocks are what helps. */
static void test_block_bootstrap_keeps_autocorrelated_aa_quiet(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_gate_options o = opts();
    o.resamples = 1000;
    const int seeds = 300, n = 40;
    int block_fail = 0, shuffled_fail = 0, detect = 0;
    double base[40], cand[40];
    for (int s = 0; s < seeds; s++) {
        fa_rng r;
        fa_rng_seed(&r, 4242 + (uint64_t)s);
        gen_ar1(&r, base, n, 1e6, 0.08, 0.6);
        gen_ar1(&r, cand, n, 1e6, 0.08, 0.6);
        fa_gate_stats st;
        assert_int_equal(fa_gate_compare_samples(ctx, base, n, cand, n, &o, 0, (uint64_t)s, &st), FA_OK);
        block_fail += st.verdict == FA_GATE_FAIL;
        for (int i = n - 1; i > 0; i--) { /* Fisher-Yates: same values, no order */
            int j = (int)(fa_rng_u64(&r) % (uint64_t)(i + 1));
            double t = base[i]; base[i] = base[j]; base[j] = t;
            j = (int)(fa_rng_u64(&r) % (uint64_t)(i + 1));
            t = cand[i]; cand[i] = cand[j]; cand[j] = t;
        }
        assert_int_equal(fa_gate_compare_samples(ctx, base, n, cand, n, &o, 0, (uint64_t)s, &st), FA_OK);
        shuffled_fail += st.verdict == FA_GATE_FAIL;
        gen_ar1(&r, base, n, 1e6, 0.08, 0.6);
        gen_ar1(&r, cand, n, 1.3e6, 0.08, 0.6);
        assert_int_equal(fa_gate_compare_samples(ctx, base, n, cand, n, &o, 0, (uint64_t)s, &st), FA_OK);
        detect += st.verdict == FA_GATE_FAIL;
    }
    printf("AR(1) rho 0.6, sigma 8%%, n %d, A/A: false alarms with blocks %d/%d, shuffled (plain bootstrap) %d/%d; "
           "+30%% detected %d/%d\n", n, block_fail, seeds, shuffled_fail, seeds, detect, seeds);
    assert_true(block_fail * 50 < seeds);           /* under 2% */
    assert_true(shuffled_fail >= 2 * block_fail && shuffled_fail > block_fail); /* 8 vs 4 of 300 here */
    assert_true(detect * 10 >= seeds * 7);
    fa_ctx_free(ctx);
}

/* fa_stats_paired_ratio: the median of the per-pair ratios, pairs with a non-positive or
 * non-finite denominator left out, the arrays untouched, NAN when no pair qualifies. */
static void test_paired_ratio(void **st)
{
    (void)st;
    double num[5] = {50, 160, 90, 30, 400}, den[5] = {100, 200, 100, 0, 800};
    /* ratios 0.5, 0.8, 0.9, (left out), 0.5: median of 4 = (0.5 + 0.8) / 2 */
    assert_true(fabs(fa_stats_paired_ratio(num, den, 5) - 0.65) < 1e-12);
    assert_true(num[0] == 50 && den[4] == 800); /* untouched */
    den[1] = NAN;
    assert_true(fabs(fa_stats_paired_ratio(num, den, 5) - 0.5) < 1e-12); /* 0.5 0.9 0.5 */
    assert_true(isnan(fa_stats_paired_ratio(num, den, 0)));
    double z[2] = {0, -1};
    assert_true(isnan(fa_stats_paired_ratio(num, z, 2)));
}

/* The interval of a paired ratio (issue 36: how far the probe's fused/unfused ratio moves between
 * its own pairs), on recorded rounds: the 18 interleaved rounds of a ViT-B/16 GEMM + bias add
 * (matmul 197x768 x 768x2304, survey export, 2 threads; bench_calibration.sh pass of 2026-12-05
 * 17:41 UTC, tests/data/calibration/vit_b_16_epilogues.json cluster 39). n = 18: k = 6
 * (P(B(18, 1/2) < 6) = 4.8%), so the 6th and 13th of the sorted ratios, 0.9565..0.9681 at 90.4%:
 * the fused kernel faster in every round by 3-4%, an interval that excludes 1. Under 5 pairs, or
 * none usable: no interval. The saving's sign-test interval (fa_paired_saving_of) uses the same
 * order statistics. */
static void test_paired_ratio_interval_on_recorded_rounds(void **st)
{
    (void)st;
    double u[18] = {3282891, 3310232, 3304353, 3253578, 3234220, 3308880, 3373476, 3337893, 3289922,
                    3327157, 3256983, 3298504, 3272056, 3345464, 3274759, 3334739, 3257864, 3334999};
    double f[18] = {3178327, 3115783, 3164126, 3122964, 3130425, 3220940, 3216012, 3211987, 3225997,
                    3136574, 3193138, 3184516, 3140951, 3199899, 3214811, 3188441, 3211285, 3130585};
    double lo, hi;
    assert_true(fa_stats_paired_ratio_interval(f, u, 18, &lo, &hi));
    assert_true(fabs(lo - 3199899.0 / 3345464) < 1e-12); /* the 6th smallest ratio, 0.95649 */
    assert_true(fabs(hi - 3178327.0 / 3282891) < 1e-12); /* the 13th, 0.96815 */
    double med = fa_stats_paired_ratio(f, u, 18);
    assert_true(lo <= med && med <= hi);
    assert_true(u[0] == 3282891 && f[17] == 3130585); /* untouched */
    /* the same rule as the saving's interval: sorted differences, the 6th and the 13th */
    double s[18], level, slo, shi;
    for (int i = 0; i < 18; i++) s[i] = u[i] - f[i];
    qsort(s, 18, sizeof *s, fa_stats_cmp_double);
    assert_true(fa_stats_median_interval_sorted(s, 18, &slo, &shi, &level));
    assert_true(slo == s[5] && shi == s[12] && fabs(level - (1 - 2 * 0.048126220703125)) < 1e-12);
    fa_paired_saving ps;
    fa_paired_saving_of(u, f, 18, &ps);
    assert_true(ps.ci_lo_ns == slo && ps.ci_hi_ns == shi && ps.ci_level == level);
    /* four pairs: no interval at >= 90% */
    assert_false(fa_stats_paired_ratio_interval(f, u, 4, &lo, &hi));
    assert_true(isnan(lo) && isnan(hi));
    double z[6] = {0, 0, 0, 0, 0, 0};
    assert_false(fa_stats_paired_ratio_interval(f, z, 6, &lo, &hi)); /* no unfused time: no ratio */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median_odd_and_even_counts),
        cmocka_unit_test(test_aa_false_alarm_rate_under_1pct_over_1000_seeds),
        cmocka_unit_test(test_detects_true_10pct_regression_at_n20),
        cmocka_unit_test(test_1pct_change_under_3pct_threshold_passes),
        cmocka_unit_test(test_fail_needs_ci_lower_bound_above_threshold),
        cmocka_unit_test(test_inconclusive_suggestion_decides_when_followed),
        cmocka_unit_test(test_same_seed_same_interval),
        cmocka_unit_test(test_too_few_samples_is_inconclusive_not_pass),
        cmocka_unit_test(test_nonpositive_sample_is_an_input_error_naming_its_index),
        cmocka_unit_test(test_bonferroni_family_of_20_checks_false_alarm_under_1pct),
        cmocka_unit_test(test_grouped_with_one_run_equals_plain),
        cmocka_unit_test(test_two_stage_bootstrap_absorbs_run_to_run_drift),
        cmocka_unit_test(test_block_bootstrap_keeps_autocorrelated_aa_quiet),
        cmocka_unit_test(test_paired_saving_resolution),
        cmocka_unit_test(test_adaptive_stop_rule_on_synthetic_samples),
        cmocka_unit_test(test_paired_ratio),
        cmocka_unit_test(test_signed_rank_interval_by_brute_force),
        cmocka_unit_test(test_signed_rank_interval_coverage_and_width),
        cmocka_unit_test(test_paired_ratio_interval_on_recorded_rounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
