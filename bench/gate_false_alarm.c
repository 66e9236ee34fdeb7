/* bench/gate_false_alarm — how often the gate's bootstrap rule (reports/gate.h) fails a build
 * that did not regress (A/A false alarms) and catches one that did (detection), on synthetic
 * per-iteration samples: log-normal jitter of sigma 2/5/10% plus 2% outliers 1.2-2x slower,
 * for n = 10, 20, 50 iterations per run and true changes of 0, +1, +5, +10%.
 * Usage: bench_gate_false_alarm [SEEDS (default 1000)] [MAX_REGRESSION% (default 3)] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gate/gate.h"

static void gen(fa_rng *r, double *out, int n, double center, double sigma, double p_out)
{
    for (int i = 0; i < n; i++) {
        double x = center * exp(sigma * fa_rng_normal(r));
        if (fa_rng_uniform(r, 0, 1) < p_out) x *= fa_rng_uniform(r, 1.2f, 2.0f);
        out[i] = x;
    }
}

int main(int argc, char **argv)
{
    int seeds = argc > 1 ? atoi(argv[1]) : 1000;
    double thr = argc > 2 ? atof(argv[2]) / 100 : 0.03;
    if (seeds < 1) seeds = 1000;
    fa_ctx *ctx = fa_ctx_create();
    fa_gate_options o;
    fa_gate_options_default(&o);
    o.max_regression = thr;
    const int ns[] = {10, 20, 50};
    const double sigmas[] = {0.02, 0.05, 0.10};
    const double changes[] = {0.0, 0.01, 0.05, 0.10};
    printf("gate decision rates over %d seeds; threshold +%.3g%%, %.0f%% bootstrap CI of the median ratio, %d "
           "resamples; noise: log-normal sigma + 2%% outliers (x1.2-2.0)\n\n", seeds, thr * 100, o.confidence * 100,
           o.resamples);
    printf("%4s %6s %7s | %7s %13s %7s | %s\n", "n", "sigma", "change", "fail", "inconclusive", "pass",
           "median suggested --iters when inconclusive");
    uint64_t t0 = fa_now_ns();
    double base[64], cand[64];
    int64_t *sugg = malloc(sizeof(int64_t) * (size_t)seeds);
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof sigmas / sizeof sigmas[0]; b++)
            for (size_t c = 0; c < sizeof changes / sizeof changes[0]; c++) {
                int n = ns[a], fail = 0, inc = 0, pass = 0, ns_ = 0;
                for (int s = 0; s < seeds; s++) {
                    fa_rng r;
                    fa_rng_seed(&r, 0x9a7e0000ull + (uint64_t)s * 7919 + a * 131 + b * 17 + c);
                    gen(&r, base, n, 1e6, sigmas[b], 0.02);
                    gen(&r, cand, n, 1e6 * (1 + changes[c]), sigmas[b], 0.02);
                    fa_gate_stats st;
                    if (fa_gate_compare_samples(ctx, base, n, cand, n, &o, 0, (uint64_t)s, &st)) {
                        fprintf(stderr, "error: %s\n", fa_ctx_errmsg(ctx));
                        return 1;
                    }
                    fail += st.verdict == FA_GATE_FAIL;
                    pass += st.verdict == FA_GATE_PASS;
                    if (st.verdict == FA_GATE_INCONCLUSIVE) {
                        inc++;
                        if (st.suggested_iters > 0) sugg[ns_++] = st.suggested_iters;
                    }
                }
                /* median of the suggestions, core's convention (core/stats.c) */
                char sg[32] = "-";
                if (ns_) snprintf(sg, sizeof sg, "%lld", (long long)fa_stats_median_i64(sugg, (size_t)ns_));
                printf("%4d %5.0f%% %+6.0f%% | %6.2f%% %12.2f%% %6.2f%% | %s%s\n", n, sigmas[b] * 100, changes[c] * 100,
                       100.0 * fail / seeds, 100.0 * inc / seeds, 100.0 * pass / seeds, sg,
                       changes[c] == 0 ? "   <- A/A: fail = false-alarm rate" : changes[c] >= 0.05 ? "   <- fail = detection rate" : "");
            }
    printf("\n%.1f s\n", (double)(fa_now_ns() - t0) / 1e9);
    free(sugg);
    fa_ctx_free(ctx);
    return 0;
}
