/* tests/unit/test_plan_saving — the plan's predicted saving counts each removed kernel once
 * (plan/plan.c fa_plan_accepted_saving): an accepted epilogue whose BN fold (depends_on) is
 * accepted too already holds the fold's saving; a fold whose epilogue was not accepted, or an
 * epilogue whose fold was not, counts on its own; clusters not accepted count nothing. The plan's
 * patterns (fa_plan_groups, what `run`, summary.json and the report open with) sum to the same
 * figures: each group's saving is its kept clusters' own, folds inside kept epilogues add nothing. */
#include <math.h>
#include <string.h>

#include "testutil.h"
#include "advisor/advisor.h"

static void test_accepted_saving_counts_a_folded_bn_once(void **st)
{
    (void)st;
    fa_cluster cl[6];
    memset(cl, 0, sizeof cl);
    /* 0: BN fold of conv A, 1: its epilogue (conv A + BN + Relu), 2: BN fold of conv B, 3: its
     * epilogue (rejected), 4: an epilogue without a fold, 5: a chain (rejected) */
    const fa_cluster_kind kinds[6] = {FA_CLUSTER_BN_FOLD, FA_CLUSTER_EPILOGUE, FA_CLUSTER_BN_FOLD, FA_CLUSTER_EPILOGUE,
                                      FA_CLUSTER_EPILOGUE, FA_CLUSTER_ELEMWISE_CHAIN};
    const int deps[6] = {-1, 0, -1, 2, -1, -1};
    const double est[6] = {100, 250, 40, 90, 30, 1000};
    for (int i = 0; i < 6; i++) {
        cl[i].id = i;
        cl[i].kind = kinds[i];
        cl[i].depends_on = deps[i];
        cl[i].est_saving_ns = est[i];
    }
    fa_plan p;
    memset(&p, 0, sizeof p);
    p.clusters = cl;
    p.n_clusters = 6;
    fa_cluster_verdict v[6];
    memset(v, 0, sizeof v);
    const fa_cluster_status status[6] = {FA_CLUSTER_ACCEPTED, FA_CLUSTER_ACCEPTED, FA_CLUSTER_ACCEPTED,
                                         FA_CLUSTER_REJECTED_NO_GAIN, FA_CLUSTER_ACCEPTED, FA_CLUSTER_REJECTED_REGRESSION};
    for (int i = 0; i < 6; i++) v[i].status = status[i];
    /* 250 (fold 0 inside it) + 40 (its epilogue rejected) + 30 */
    assert_true(fabs(fa_plan_accepted_saving(&p, v) - 320) < 1e-9);
    /* the epilogue dropped (the back-off): its fold counts on its own */
    v[1].status = FA_CLUSTER_REJECTED_NO_GAIN;
    assert_true(fabs(fa_plan_accepted_saving(&p, v) - (100 + 40 + 30)) < 1e-9);
    /* the fold dropped, the epilogue kept: the epilogue alone */
    v[0].status = FA_CLUSTER_REJECTED_NO_GAIN;
    v[1].status = FA_CLUSTER_ACCEPTED;
    assert_true(fabs(fa_plan_accepted_saving(&p, v) - (250 + 40 + 30)) < 1e-9);
    /* nothing accepted: 0 */
    for (int i = 0; i < 6; i++) v[i].status = FA_CLUSTER_REFUSED;
    assert_true(fa_plan_accepted_saving(&p, v) == 0);
}

static void test_groups_sum_to_the_plan(void **st)
{
    (void)st;
    fa_cluster cl[7];
    memset(cl, 0, sizeof cl);
    /* 0,2: BN folds "conv+bn"; 1,3: epilogues "conv+bn+relu" on them; 4: epilogue "conv+relu";
     * 5,6: chains "elementwise(3)" */
    const fa_cluster_kind kinds[7] = {FA_CLUSTER_BN_FOLD, FA_CLUSTER_EPILOGUE, FA_CLUSTER_BN_FOLD, FA_CLUSTER_EPILOGUE,
                                      FA_CLUSTER_EPILOGUE, FA_CLUSTER_ELEMWISE_CHAIN, FA_CLUSTER_ELEMWISE_CHAIN};
    const char *labels[7] = {"conv+bn", "conv+bn+relu", "conv+bn", "conv+bn+relu", "conv+relu", "elementwise(3)",
                             "elementwise(3)"};
    const int deps[7] = {-1, 0, -1, 2, -1, -1, -1};
    const double est[7] = {100, 250, 40, 90, 30, 1000, 5};
    const double meas[7] = {80, 200, 35, 70, 10, NAN, NAN};
    const fa_cluster_status status[7] = {FA_CLUSTER_ACCEPTED, FA_CLUSTER_ACCEPTED, FA_CLUSTER_ACCEPTED, FA_CLUSTER_ACCEPTED,
                                         FA_CLUSTER_ACCEPTED, FA_CLUSTER_REJECTED_REGRESSION, FA_CLUSTER_NOT_TRIED};
    fa_cluster_verdict v[7];
    memset(v, 0, sizeof v);
    for (int i = 0; i < 7; i++) {
        cl[i].id = i;
        cl[i].kind = kinds[i];
        cl[i].label = (char *)labels[i];
        cl[i].depends_on = deps[i];
        cl[i].est_saving_ns = est[i];
        v[i].status = status[i];
        v[i].measured_saving_ns = meas[i];
        v[i].max_rel_error = status[i] == FA_CLUSTER_ACCEPTED ? 1e-7 * (i + 1) : -1;
    }
    fa_plan p;
    memset(&p, 0, sizeof p);
    p.clusters = cl;
    p.n_clusters = 7;
    fa_plan_group g[7];
    int n = fa_plan_groups(&p, v, g);
    assert_int_equal(n, 4);
    /* ranked: kept patterns by measured saving (270, 10), then the folds held by their epilogues,
     * then the pattern not kept */
    assert_string_equal(g[0].label, "conv+bn+relu");
    assert_int_equal(g[0].n_clusters, 2);
    assert_int_equal(g[0].n_accepted, 2);
    assert_true(fabs(g[0].measured_saving_ns - 270) < 1e-9);
    assert_true(fabs(g[0].max_rel_error - 4e-7) < 1e-15);
    assert_string_equal(g[1].label, "conv+relu");
    assert_string_equal(g[2].label, "conv+bn");
    assert_int_equal(g[2].n_inside, 2);
    assert_true(g[2].measured_saving_ns == 0 && g[2].predicted_saving_ns == 0);
    assert_string_equal(g[3].label, "elementwise(3)");
    assert_int_equal(g[3].n_accepted, 0);
    assert_int_equal(g[3].decision, FA_CLUSTER_REJECTED_REGRESSION); /* a tie: the first decision class */
    assert_true(g[3].best_predicted_ns == 1000);
    char mix[64];
    assert_string_equal(fa_plan_group_mix(&g[3], mix, sizeof mix), "(1 rejected, 1 not tried)");
    assert_string_equal(fa_plan_group_mix(&g[0], mix, sizeof mix), "");
    /* the groups' predictions sum to the plan's predicted saving, each removed kernel once */
    double pred = 0;
    for (int i = 0; i < n; i++) pred += g[i].predicted_saving_ns;
    assert_true(fabs(pred - fa_plan_accepted_saving(&p, v)) < 1e-9);
    /* the epilogue on fold 2 dropped: that fold counts on its own, in its own group */
    v[3].status = FA_CLUSTER_REJECTED_NO_GAIN;
    n = fa_plan_groups(&p, v, g);
    pred = 0;
    for (int i = 0; i < n; i++) {
        pred += g[i].predicted_saving_ns;
        if (!strcmp(g[i].label, "conv+bn")) {
            assert_int_equal(g[i].n_inside, 1);
            assert_true(fabs(g[i].measured_saving_ns - 35) < 1e-9);
        }
    }
    assert_true(fabs(pred - fa_plan_accepted_saving(&p, v)) < 1e-9);
}

/* A pattern's decision is its clusters' commonest way of being rejected, not its first cluster's:
 * one "slower" then three "no gain" read "measured slower" on every surface (a new user's LeViT
 * run, 21 no-gain and 1 regression). The reason quoted is one of the commonest kind. */
static void test_group_decision_is_the_commonest_rejection(void **st)
{
    (void)st;
    fa_cluster cl[4];
    fa_cluster_verdict v[4];
    memset(cl, 0, sizeof cl);
    memset(v, 0, sizeof v);
    for (int i = 0; i < 4; i++) {
        cl[i].id = i;
        cl[i].kind = FA_CLUSTER_EPILOGUE;
        cl[i].label = (char *)"matmul";
        cl[i].depends_on = -1;
        cl[i].est_saving_ns = 10;
        v[i].status = i == 0 ? FA_CLUSTER_REJECTED_REGRESSION : FA_CLUSTER_REJECTED_NO_GAIN;
        v[i].reason = (char *)(i == 0 ? "slower" : "no gain");
        v[i].measured_saving_ns = NAN;
        v[i].max_rel_error = -1;
    }
    fa_plan p;
    memset(&p, 0, sizeof p);
    p.clusters = cl;
    p.n_clusters = 4;
    fa_plan_group g[4];
    assert_int_equal(fa_plan_groups(&p, v, g), 1);
    assert_int_equal(g[0].decision, FA_CLUSTER_REJECTED_NO_GAIN);
    assert_string_equal(g[0].reason, "no gain");
}

/* The term that explains a miss (issue 36, fa_cluster_miss_term), from the stored terms and the
 * applier's medians: the fused kernel mispredicted; the probe's ratio not holding; the dispatch
 * term overpredicting an isolated sub-graph; the members' time moved; nothing without terms. */
static void set_terms(fa_cluster *c, fa_cluster_verdict *v, double M, double D, double F, double r, double U, double Fm,
                      double meas)
{
    memset(c, 0, sizeof *c);
    memset(v, 0, sizeof *v);
    c->pred_members_ns = M, c->pred_dispatch_ns = D, c->pred_fused_ns = F, c->pred_ratio = r;
    c->est_saving_ns = M + D - F;
    v->meas_unfused_ns = U, v->meas_fused_ns = Fm, v->measured_saving_ns = meas;
}

static void test_miss_term_names_the_term(void **st)
{
    (void)st;
    fa_cluster c;
    fa_cluster_verdict v;
    /* predicted 10000 + 500 - 4000 = 6500; the fused kernel took 7000, the members as predicted */
    set_terms(&c, &v, 10000, 500, 4000, NAN, 10500, 7000, 3500);
    assert_int_equal(fa_cluster_miss_term(&c, &v), FA_MISS_FUSED);
    assert_string_equal(fa_miss_term_name(FA_MISS_FUSED), "fused");
    /* the same with the fused time a ratio 0.4 x the members: measured ratio 7000 / 10500 */
    set_terms(&c, &v, 10000, 500, 4000, 0.4, 10500, 7000, 3500);
    assert_int_equal(fa_cluster_miss_term(&c, &v), FA_MISS_RATIO);
    /* the members drifted 10000 -> 6000 in isolation, the ratio held (0.4 x 6000): the ratio's
     * error is 0, the unfused side's is the miss */
    set_terms(&c, &v, 10000, 500, 4000, 0.4, 6000, 2400, 3600);
    assert_int_equal(fa_cluster_miss_term(&c, &v), FA_MISS_MEMBERS);
    /* a tiny kernel: members 1000 as predicted, the 700 ns dispatch term never shows in the
     * isolated sub-graph: predicted 1000 + 700 - 400 = 1300, measured 1000 - 400 = 600 */
    set_terms(&c, &v, 1000, 700, 400, NAN, 1000, 400, 600);
    assert_int_equal(fa_cluster_miss_term(&c, &v), FA_MISS_DISPATCH);
    /* the unfused side underpredicted (members slower in isolation): not the dispatch term */
    set_terms(&c, &v, 1000, 700, 400, NAN, 2500, 400, 2100);
    assert_int_equal(fa_cluster_miss_term(&c, &v), FA_MISS_MEMBERS);
    /* no stored terms (analytic, or a plan before schema v9), or not measured */
    set_terms(&c, &v, NAN, 700, NAN, NAN, 1000, 400, 600);
    assert_int_equal(fa_cluster_miss_term(&c, &v), FA_MISS_NONE);
    set_terms(&c, &v, 1000, 700, 400, NAN, NAN, NAN, NAN);
    assert_int_equal(fa_cluster_miss_term(&c, &v), FA_MISS_NONE);
    assert_string_equal(fa_miss_term_name(FA_MISS_NONE), "");
}

/* The spread phrase (fa_cluster_spread_phrase) quotes a stored figure only when it is finite and
 * non-negative with a past count (a run database is untrusted input); else nothing. */
static void test_spread_phrase_only_for_a_stored_figure(void **st)
{
    (void)st;
    fa_cluster c;
    memset(&c, 0, sizeof c);
    c.kind = FA_CLUSTER_REDUCTION;
    char b[128];
    c.est_spread_pct = 35.2, c.est_spread_n = 12;
    assert_string_equal(fa_cluster_spread_phrase(&c, b, sizeof b), " \xc2\xb1 35% (12 past reduction clusters on this machine)");
    c.est_spread_n = 1;
    assert_string_equal(fa_cluster_spread_phrase(&c, b, sizeof b), " \xc2\xb1 35% (1 past reduction cluster on this machine)");
    const double bad[] = {NAN, INFINITY, -5};
    for (int i = 0; i < 3; i++) {
        c.est_spread_pct = bad[i], c.est_spread_n = 12;
        assert_string_equal(fa_cluster_spread_phrase(&c, b, sizeof b), "");
    }
    c.est_spread_pct = 35, c.est_spread_n = 0; /* not calibrated: nothing */
    assert_string_equal(fa_cluster_spread_phrase(&c, b, sizeof b), "");
}

/* The prediction's own interval in the phrase (issue 36), from the stored est_lo_ns..est_hi_ns:
 * ViT-B/16's GEMM + bias add as stored (est_saving_ns -3027 ns from a probe ratio of 1.001 over
 * M = 3552446 ns) with an interval reaching both sides of 0 reads "about 0" with the interval in
 * the words of a saving, never a bare "loses 3.0 us"; an interval whose farther end is beyond
 * +-25 % of the prediction reads "± X%"; a tight one adds nothing; beside a kind's spread both are
 * quoted; figures read back that are not finite, or lo >= hi, are not quoted. */
static void test_spread_phrase_quotes_the_prediction_interval(void **st)
{
    (void)st;
    fa_cluster c;
    memset(&c, 0, sizeof c);
    c.kind = FA_CLUSTER_EPILOGUE;
    c.est_spread_pct = NAN, c.est_spread_n = -1;
    char b[256];
    c.est_saving_ns = -3027.4, c.est_lo_ns = 3552446 + 58 - 3552446 * 1.02, c.est_hi_ns = 3552446 + 58 - 3552446 * 0.97;
    assert_string_equal(fa_cluster_spread_phrase(&c, b, sizeof b),
                        " (about 0 by its probe's pairs: from a loss of 71.0 us to a saving of 106.6 us)");
    c.est_saving_ns = 10000, c.est_lo_ns = 4000, c.est_hi_ns = 16000; /* 60 % either side */
    assert_string_equal(fa_cluster_spread_phrase(&c, b, sizeof b), " \xc2\xb1 60% (its probe's pairs: saving 4.0..16.0 us)");
    c.est_lo_ns = 8000, c.est_hi_ns = 12500; /* the farther end 25 % away: within, one figure */
    assert_string_equal(fa_cluster_spread_phrase(&c, b, sizeof b), "");
    c.est_lo_ns = 7000; /* 30 % */
    assert_string_equal(fa_cluster_spread_phrase(&c, b, sizeof b), " \xc2\xb1 30% (its probe's pairs: saving 7.0..12.5 us)");
    c.est_spread_pct = 35, c.est_spread_n = 12; /* and the kind's past misses */
    assert_string_equal(fa_cluster_spread_phrase(&c, b, sizeof b),
                        " \xc2\xb1 35% (12 past epilogue clusters on this machine); \xc2\xb1 30% (its probe's pairs: "
                        "saving 7.0..12.5 us)");
    c.est_spread_pct = NAN, c.est_spread_n = -1;
    const double bad[][2] = {{NAN, 12500}, {7000, INFINITY}, {12500, 7000}, {7000, 7000}};
    for (int i = 0; i < 4; i++) {
        c.est_lo_ns = bad[i][0], c.est_hi_ns = bad[i][1];
        assert_string_equal(fa_cluster_spread_phrase(&c, b, sizeof b), "");
    }
    c.est_lo_ns = 7000, c.est_hi_ns = 12500, c.est_saving_ns = NAN; /* no prediction: nothing */
    assert_string_equal(fa_cluster_spread_phrase(&c, b, sizeof b), "");
    c.est_saving_ns = 0; /* outside its own interval (a damaged database): no "± inf%" */
    assert_string_equal(fa_cluster_spread_phrase(&c, b, sizeof b), "");
}

/* Why a pattern was not kept, one phrase for the first screen and report.html: a refusal as not
 * beneficial says so without repeating the prediction (the row quotes it) or pasting the basis
 * (swin_t's layer_norm read "not-beneficial: predicted loss of 71.4 us (measured: 2 kernel(s)
 * removed, medians 298576 ns..." before its prediction in parentheses again); another refusal its
 * first clause, cut before its details and at a word when long; the back-off and the applier's
 * decisions their phrases. */
static void test_group_why_is_one_short_phrase(void **st)
{
    (void)st;
    fa_plan_group g;
    char b[96];
    memset(&g, 0, sizeof g);
    g.decision = FA_CLUSTER_REFUSED;
    g.best_predicted_ns = -71400;
    g.reason = "not-beneficial: predicted loss of 71.4 us (measured: 2 kernel(s) removed, medians 298576 ns + 1 gap(s) x "
               "400 ns; fused kernel 369976 ns)";
    assert_string_equal(fa_plan_group_why(&g, b, sizeof b), "refused, predicted slower");
    g.best_predicted_ns = 0;
    g.reason = "not-beneficial: no predicted saving (measured: 1 kernel(s) removed)";
    assert_string_equal(fa_plan_group_why(&g, b, sizeof b), "refused, no predicted saving");
    g.reason = "illegal: the producer's output is read outside the cluster (by 'x'); it must be written anyway";
    assert_string_equal(fa_plan_group_why(&g, b, sizeof b), "illegal: the producer's output is read outside the cluster");
    g.reason = "below-noise: predicted 0.2 us; the noise floor is 3.1 us";
    assert_string_equal(fa_plan_group_why(&g, b, sizeof b), "below-noise: predicted 0.2 us");
    char small[24];
    g.reason = "register-limit: the fused kernel needs 255 registers";
    fa_plan_group_why(&g, small, sizeof small);
    assert_string_equal(small, "register-limit: the...");
    g.decision = FA_CLUSTER_REJECTED_REGRESSION;
    g.reason = "dropped by the end-to-end back-off: the whole fused model was slower";
    assert_string_equal(fa_plan_group_why(&g, b, sizeof b), "dropped by the end-to-end back-off");
    g.reason = "slower: median 1.0 -> 1.2 us";
    assert_string_equal(fa_plan_group_why(&g, b, sizeof b), fa_cluster_status_phrase(FA_CLUSTER_REJECTED_REGRESSION));
    g.reason = NULL;
    assert_string_equal(fa_plan_group_why(&g, b, sizeof b), fa_cluster_status_phrase(FA_CLUSTER_REJECTED_REGRESSION));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_decision_is_the_commonest_rejection),
        cmocka_unit_test(test_group_why_is_one_short_phrase),
        cmocka_unit_test(test_accepted_saving_counts_a_folded_bn_once),
        cmocka_unit_test(test_groups_sum_to_the_plan),
        cmocka_unit_test(test_miss_term_names_the_term),
        cmocka_unit_test(test_spread_phrase_quotes_the_prediction_interval),
        cmocka_unit_test(test_spread_phrase_only_for_a_stored_figure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
