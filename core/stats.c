/* core/stats — the one statistics unit: quantiles, medians and the robust sample summary every
 * stage uses (gate/, applier/judge.c, the store's iteration medians, the analyzer, reports). */
#include "core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fa_stats_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double fa_stats_quantile_sorted(const double *sorted, size_t n, double q)
{
    if (n == 0) return NAN;
    if (q <= 0) return sorted[0];
    if (q >= 1) return sorted[n - 1];
    double h = (double)(n - 1) * q;
    size_t i = (size_t)floor(h);
    if (i + 1 >= n) return sorted[n - 1];
    return sorted[i] + (h - (double)i) * (sorted[i + 1] - sorted[i]);
}

/* Hoare selection: v[k] holds the k-th smallest, v[0..k) <= v[k] <= v(k..n). */
static void select_kth(double *v, size_t n, size_t kk)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, k = (ptrdiff_t)kk; /* signed: j may step below lo */
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        ptrdiff_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                j--;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return;
    }
}

double fa_stats_median(double *v, size_t n)
{
    if (n == 0) return NAN;
    size_t k = n / 2;
    select_kth(v, n, k);
    double m = v[k];
    if (n % 2 == 0) { /* type 7 at 0.5: the mean of the two middle values; the lower one is the
                         largest of v[0..k) */
        double lo = v[0];
        for (size_t i = 1; i < k; i++)
            if (v[i] > lo) lo = v[i];
        m = 0.5 * (m + lo);
    }
    return m;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

double fa_stats_paired_ratio(const double *num, const double *den, size_t n)
{
    double *r = malloc(sizeof(double) * (n ? n : 1));
    if (!r) return NAN;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (den[i] > 0 && isfinite(den[i]) && isfinite(num[i])) r[m++] = num[i] / den[i];
    double med = fa_stats_median(r, m);
    free(r);
    return med;
}

int64_t fa_stats_median_i64(int64_t *v, size_t n)
{
    if (n == 0) return -1;
    qsort(v, n, sizeof *v, cmp_i64);
    if (n % 2) return v[n / 2];
    /* the mean of the two middle values, rounded half up, without overflowing */
    int64_t a = v[n / 2 - 1], b = v[n / 2];
    return a + (b - a) / 2 + ((b - a) % 2 != 0);
}

void fa_sample_stats_of(const double *samples, int n, fa_sample_stats *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n <= 0) return;
    double *s = malloc(sizeof(double) * (size_t)n);
    if (!s) {
        out->median_ns = out->p25_ns = out->p75_ns = out->min_ns = NAN;
        return;
    }
    memcpy(s, samples, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), fa_stats_cmp_double);
    out->median_ns = fa_stats_quantile_sorted(s, (size_t)n, 0.5);
    out->p25_ns = fa_stats_quantile_sorted(s, (size_t)n, 0.25);
    out->p75_ns = fa_stats_quantile_sorted(s, (size_t)n, 0.75);
    out->min_ns = s[0];
    free(s);
}

void fa_paired_saving_of(const double *a, const double *b, int n, fa_paired_saving *out)
{
    memset(out, 0, sizeof *out);
    out->median_ns = out->iqr_ns = out->ci_lo_ns = out->ci_hi_ns = NAN;
    if (n <= 0) return;
    double *d = malloc(sizeof(double) * (size_t)n);
    if (!d) return;
    for (int i = 0; i < n; i++) d[i] = a[i] - b[i];
    qsort(d, (size_t)n, sizeof *d, fa_stats_cmp_double);
    out->n = n;
    out->median_ns = fa_stats_quantile_sorted(d, (size_t)n, 0.5);
    out->iqr_ns = fa_stats_quantile_sorted(d, (size_t)n, 0.75) - fa_stats_quantile_sorted(d, (size_t)n, 0.25);
    fa_stats_median_interval_sorted(d, (size_t)n, &out->ci_lo_ns, &out->ci_hi_ns, &out->ci_level);
    free(d);
}

bool fa_stats_median_interval_sorted(const double *sorted, size_t n, double *lo, double *hi, double *level)
{
    *lo = *hi = NAN;
    *level = 0;
    /* tail(k) = P(B < k) = sum_{j<k} C(n, j) / 2^n; the largest k with tail(k) <= 0.05 */
    double tail = 0, term = ldexp(1.0, -(int)(n > 4096 ? 4096 : n)); /* C(n, 0) / 2^n */
    size_t k = 0;
    for (size_t j = 0; j < n; j++) {
        if (tail + term > 0.05) break;
        tail += term;
        k = j + 1;
        term = term * (double)(n - j) / (double)(j + 1);
    }
    if (k < 1 || k > n + 1 - k) return false;
    *lo = sorted[k - 1];
    *hi = sorted[n - k];
    *level = 1 - 2 * tail;
    return true;
}

/* The critical count k of the signed-rank statistic W+ over n differences: the largest k with
 * P(W+ < k) <= 5% under the null (each difference's sign a fair coin), and *tail that P(W+ < k).
 * Exact for n <= 100 (the probability of each W+ value over the 2^n sign patterns, built one rank
 * at a time); beyond, the normal approximation with its continuity correction, mean n(n+1)/4,
 * variance n(n+1)(2n+1)/24 (Hollander & Wolfe, "Nonparametric Statistical Methods", 2nd ed.,
 * sec. 3.1). 0 when no k exists (n < 5) or out of memory. */
static size_t signed_rank_critical(size_t n, double *tail)
{
    *tail = 0;
    if (n == 0) return 0;
    if (n <= 100) {
        size_t top = n * (n + 1) / 2;
        double *p = calloc(top + 1, sizeof *p);
        if (!p) return 0;
        p[0] = 1;
        for (size_t r = 1; r <= n; r++) /* p[s] = P(W+ = s) over ranks 1..r */
            for (size_t s = top + 1; s-- > 0;) p[s] = 0.5 * (p[s] + (s >= r ? p[s - r] : 0));
        size_t k = 0;
        double t = 0;
        for (size_t s = 0; s <= top && t + p[s] <= 0.05; s++) {
            t += p[s];
            k = s + 1;
        }
        free(p);
        *tail = t;
        return k;
    }
    double mean = (double)n * (double)(n + 1) / 4, sd = sqrt((double)n * (double)(n + 1) * (double)(2 * n + 1) / 24);
    /* P(W+ < k) = P(W+ <= k - 1) ~ Phi((k - 1 + 0.5 - mean) / sd) <= 0.05: k <= mean - 1.6449 sd + 0.5 */
    double kk = floor(mean - 1.6448536269514722 * sd + 0.5);
    if (kk < 1) return 0;
    *tail = 0.5 * erfc(-((kk - 0.5 - mean) / sd) / sqrt(2.0));
    return (size_t)kk;
}

/* How many Walsh averages (d[i] + d[j]) / 2, i <= j, of sorted d[0..n) are <= x: two pointers
 * over the sorted differences, O(n). */
static size_t walsh_count_le(const double *d, size_t n, double x)
{
    size_t c = 0, j = n;
    for (size_t i = 0; i < n; i++) { /* pairs (i, j') with i <= j' < j and d[i] + d[j'] <= 2x */
        while (j > i && d[i] + d[j - 1] > 2 * x) j--;
        if (j <= i) break;
        c += j - i;
    }
    return c;
}

/* The smallest Walsh average of sorted d[0..n) above x (INFINITY when none): for each i the first
 * j >= i with d[i] + d[j] > 2x, by binary search. */
static double walsh_above(const double *d, size_t n, double x)
{
    double best = INFINITY;
    for (size_t i = 0; i < n; i++) {
        size_t a = i, b = n;
        while (a < b) {
            size_t m = a + (b - a) / 2;
            if (d[i] + d[m] > 2 * x) b = m;
            else a = m + 1;
        }
        if (a < n && 0.5 * (d[i] + d[a]) < best) best = 0.5 * (d[i] + d[a]);
    }
    return best;
}

/* The k-th smallest (1-based, 1 <= k <= n(n+1)/2) Walsh average of sorted d[0..n): bisection on
 * the value with walsh_count_le until the bracket (lo, hi] holds few averages, then stepping up
 * from lo one distinct average at a time, exact. */
static double walsh_kth(const double *d, size_t n, size_t k)
{
    double lo = d[0], hi = d[n - 1]; /* every average lies in [d[0], d[n-1]] */
    if (walsh_count_le(d, n, lo) >= k) return lo;
    for (int it = 0; it < 200; it++) { /* count(lo) < k <= count(hi) */
        double mid = lo + 0.5 * (hi - lo);
        if (!(mid > lo && mid < hi)) break;
        if (walsh_count_le(d, n, mid) >= k) hi = mid;
        else lo = mid;
    }
    for (;;) { /* count(lo) < k: the next distinct average above lo, until k are at or below it */
        double w = walsh_above(d, n, lo);
        if (!(w < INFINITY) || walsh_count_le(d, n, w) >= k) return w;
        lo = w;
    }
}

bool fa_stats_signed_rank_interval_sorted(const double *sorted, size_t n, double *lo, double *hi, double *level,
                                          double *estimate)
{
    *lo = *hi = NAN;
    *level = 0;
    if (estimate) *estimate = NAN;
    if (n == 0) return false;
    size_t m = n * (n + 1) / 2; /* Walsh averages */
    if (estimate) /* Hodges-Lehmann: their median (type 7 over the m sorted averages) */
        *estimate = m % 2 ? walsh_kth(sorted, n, m / 2 + 1)
                          : 0.5 * (walsh_kth(sorted, n, m / 2) + walsh_kth(sorted, n, m / 2 + 1));
    double tail;
    size_t k = signed_rank_critical(n, &tail);
    if (k < 1 || k > m + 1 - k) return false;
    *lo = walsh_kth(sorted, n, k);
    *hi = walsh_kth(sorted, n, m + 1 - k);
    *level = 1 - 2 * tail;
    return true;
}

bool fa_stats_paired_ratio_interval(const double *num, const double *den, size_t n, double *lo, double *hi)
{
    *lo = *hi = NAN;
    double *r = malloc(sizeof(double) * (n ? n : 1)), level;
    if (!r) return false;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) /* the pairs fa_stats_paired_ratio takes */
        if (den[i] > 0 && isfinite(den[i]) && isfinite(num[i])) r[m++] = num[i] / den[i];
    qsort(r, m, sizeof *r, fa_stats_cmp_double);
    bool ok = fa_stats_median_interval_sorted(r, m, lo, hi, &level);
    free(r);
    return ok;
}

bool fa_paired_saving_resolved(const fa_paired_saving *p, double predicted_ns)
{
    if (!p || p->n <= 0) return false;
    if (p->ci_lo_ns == p->ci_lo_ns && (p->ci_lo_ns > 0 || p->ci_hi_ns < 0)) return true;
    return p->iqr_ns == p->iqr_ns && predicted_ns == predicted_ns && p->iqr_ns < fabs(predicted_ns);
}

bool fa_paired_saving_settled(const fa_paired_saving *p, double rel, double abs_floor_ns)
{
    if (!p || p->n <= 0 || p->ci_lo_ns != p->ci_lo_ns || p->ci_hi_ns != p->ci_hi_ns) return false;
    double half = fmax(p->median_ns - p->ci_lo_ns, p->ci_hi_ns - p->median_ns);
    if (half <= rel * fabs(p->median_ns)) return true;
    return abs_floor_ns > 0 && half <= abs_floor_ns;
}

/* The unit a duration of magnitude ns reads best in: its divisor and name. */
static double duration_unit(double ns, const char **unit, int *decimals)
{
    ns = fabs(ns);
    if (ns >= 1e6) return *unit = "ms", *decimals = 1, 1e6;
    if (ns >= 1e3) return *unit = "us", *decimals = 1, 1e3;
    return *unit = "ns", *decimals = 0, 1;
}

void fa_duration_text(char *out, size_t cap, double ns)
{
    const char *u;
    int dp;
    double div = duration_unit(ns, &u, &dp);
    snprintf(out, cap, "%.*f %s", dp, ns / div + 0.0, u); /* + 0.0: never "-0" */
}

void fa_saving_phrase(char *out, size_t cap, double saving_ns)
{
    const char *u;
    int dp;
    double div = duration_unit(saving_ns, &u, &dp);
    if (saving_ns == 0) snprintf(out, cap, "no saving");
    else snprintf(out, cap, "%s %.*f %s", saving_ns > 0 ? "saving of" : "loss of", dp, fabs(saving_ns) / div, u);
}

void fa_saving_interval_phrase(char *out, size_t cap, double lo_ns, double hi_ns)
{
    const char *u;
    int dp;
    double div = duration_unit(fmax(fabs(lo_ns), fabs(hi_ns)), &u, &dp);
    if (lo_ns >= 0)
        snprintf(out, cap, "saving %.*f..%.*f %s", dp, lo_ns / div, dp, hi_ns / div, u);
    else if (hi_ns <= 0)
        snprintf(out, cap, "loss %.*f..%.*f %s", dp, -hi_ns / div, dp, -lo_ns / div, u);
    else
        snprintf(out, cap, "from a loss of %.*f %s to a saving of %.*f %s", dp, -lo_ns / div, u, dp, hi_ns / div, u);
}
