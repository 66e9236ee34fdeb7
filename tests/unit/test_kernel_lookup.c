/* tests/unit/test_kernel_lookup — issue 19's second basis: a cluster whose fused kernel an
 * earlier plan on the same device measured (benchmarks 'cluster-fused') is predicted from that
 * measured median, and its basis says so; a cluster of another shape is not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor/advisor.h"
#include "analyzer/analyzer.h"
#include "store/store.h"
#include "testutil.h"

static const double k_fused_ns = 7777; /* the stored fused kernel's samples: all this value */
/* its members' samples, interleaved with them: every round 2223..2263 ns slower (resolved) */
static const double k_unfused[5] = {10000, 10010, 10020, 10030, 10040};

/* Store a run of zoo:convnet-tiny at `batch` in s; its analysis in *a, graph in *g. */
static int64_t stored_run(fa_ctx *ctx, fa_store *s, int batch, fa_graph **g, fa_analysis **a)
{
    fa_load_options lo = {0};
    lo.batch = batch;
    assert_int_equal(fa_graph_load(ctx, "zoo:convnet-tiny", &lo, g), FA_OK);
    int64_t run;
    assert_int_equal(fa_test_store_graph_run(ctx, s, *g, 2, &run), FA_OK);
    fa_ceilings c;
    memset(&c, 0, sizeof c);
    c.device_key = "cpu:test:2t";
    c.mem_bw_gbs = 10;
    c.peak_gflops = 100;
    c.launch_ns = 1000;
    assert_int_equal(fa_analyze_run(ctx, s, run, &c, a), FA_OK);
    return run;
}

static int count_basis(const fa_plan *p, const char *part)
{
    int n = 0;
    for (int i = 0; i < p->n_clusters; i++) n += p->clusters[i].basis && strstr(p->clusters[i].basis, part) != NULL;
    return n;
}

static void test_measured_fused_kernel_predicts_same_signature_only(void **st)
{
    (void)st;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *s = NULL;
    const char *db = fa_test_path(fa_test_tmpdir(), "kernel_lookup.db");
    remove(db);
    assert_int_equal(fa_store_open(ctx, db, &s), FA_OK);
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;

    /* run 1: planned, and every cluster's fused sub-graph "measured" at k_fused_ns, its
     * unfused one at k_unfused */
    fa_graph *g1 = NULL;
    fa_analysis *a1 = NULL;
    int64_t run1 = stored_run(ctx, s, 1, &g1, &a1);
    fa_plan *p1 = NULL;
    assert_int_equal(fa_advise(ctx, g1, a1, &o, &p1), FA_OK);
    assert_true(p1->n_clusters > 0);
    assert_int_equal(count_basis(p1, "fused time measured"), 0); /* nothing measured yet */
    assert_int_equal(fa_plan_save(ctx, s, p1), FA_OK);
    double smp[5] = {k_fused_ns, k_fused_ns, k_fused_ns, k_fused_ns, k_fused_ns};
    for (int i = 0; i < p1->n_clusters; i++) {
        assert_int_equal(fa_store_put_bench_samples(ctx, s, run1, p1->plan_id, FA_BENCH_CLUSTER_FUSED, p1->clusters[i].id,
                                                    smp, 5), FA_OK);
        assert_int_equal(fa_store_put_bench_samples(ctx, s, run1, p1->plan_id, FA_BENCH_CLUSTER_UNFUSED, p1->clusters[i].id,
                                                    k_unfused, 5), FA_OK);
    }

    /* run 2, the same model on the same device: every cluster finds its measured kernel */
    fa_graph *g2 = NULL;
    fa_analysis *a2 = NULL;
    int64_t run2 = stored_run(ctx, s, 1, &g2, &a2);
    fa_arena *ar = fa_arena_create(4096);
    fa_measured_fused *mf = NULL;
    size_t nmf = 0;
    assert_int_equal(fa_store_measured_fused(ctx, s, run2, ar, &mf, &nmf), FA_OK);
    assert_int_equal((int)nmf, p1->n_clusters);
    assert_true(mf[0].median_ns == k_fused_ns && mf[0].unfused_median_ns == 10020 && mf[0].n_samples == 5 &&
                mf[0].run_id == run1 && mf[0].resolved);
    assert_true(fabs(mf[0].paired_ratio - k_fused_ns / 10020) < 1e-12);
    fa_plan *p2_roof = NULL; /* the same profile without the lookup, to compare with */
    assert_int_equal(fa_advise(ctx, g2, a2, &o, &p2_roof), FA_OK);
    o.measured_fused = mf;
    o.n_measured_fused = nmf;
    fa_plan *p2 = NULL;
    assert_int_equal(fa_advise(ctx, g2, a2, &o, &p2), FA_OK);
    char want[64];
    snprintf(want, sizeof want, "fused time measured in run %lld", (long long)run1);
    assert_int_equal(p2->n_clusters, p1->n_clusters);
    assert_int_equal(count_basis(p2, want), p2->n_clusters);
    assert_int_equal(count_basis(p2, "ran in 7777 ns against its members' 10020 ns"), p2->n_clusters);
    /* the median of the rounds' own ratios, 7777 / 10020 (the pairs stored by iteration) */
    assert_int_equal(count_basis(p2, "the median of its rounds' fused/unfused ratios 0.776 x"), p2->n_clusters);
    /* the saving is the members' measured time + gaps - the fused time - recompute: against the
     * same cluster predicted without the lookup, it moves by exactly the change of the fused
     * time (each parsed from its basis) */
    for (int i = 0; i < p2->n_clusters; i++) {
        const fa_cluster *c2 = &p2->clusters[i], *c1 = NULL;
        for (int j = 0; j < p2_roof->n_clusters; j++)
            if (p2_roof->clusters[j].n_members == c2->n_members &&
                !memcmp(p2_roof->clusters[j].members, c2->members, sizeof(int) * (size_t)c2->n_members))
                c1 = &p2_roof->clusters[j];
        assert_non_null(c1);
        const char *f1 = strstr(c1->basis, "fused kernel "), *f2 = strstr(c2->basis, "fused kernel ");
        assert_non_null(f1);
        assert_non_null(f2);
        double fused1 = strtod(f1 + strlen("fused kernel "), NULL), fused2 = strtod(f2 + strlen("fused kernel "), NULL);
        assert_true(fabs((c1->est_saving_ns + fused1 - fused2) - c2->est_saving_ns) <= 1.0); /* basis rounds to 1 ns */
    }

    /* run 3, batch 2: other shapes, other signatures: the roofline's prediction */
    fa_graph *g3 = NULL;
    fa_analysis *a3 = NULL;
    int64_t run3 = stored_run(ctx, s, 2, &g3, &a3);
    assert_int_equal(fa_store_measured_fused(ctx, s, run3, ar, &mf, &nmf), FA_OK);
    assert_int_equal((int)nmf, p1->n_clusters); /* the same device's measurements are offered... */
    o.measured_fused = mf;
    o.n_measured_fused = nmf;
    fa_plan *p3 = NULL;
    assert_int_equal(fa_advise(ctx, g3, a3, &o, &p3), FA_OK);
    assert_true(p3->n_clusters > 0);
    assert_int_equal(count_basis(p3, "fused time measured"), 0); /* ...and none matches */

    /* run 1's measurements made unresolved (the unfused rounds straddle the fused ones): they
     * can neither confirm nor replace the roofline's fused time, so run 2 is not predicted
     * from them */
    const double straddle[5] = {7000, 9000, 7000, 9000, 8000};
    for (int i = 0; i < p1->n_clusters; i++)
        assert_int_equal(fa_store_put_bench_samples(ctx, s, run1, p1->plan_id, FA_BENCH_CLUSTER_UNFUSED, p1->clusters[i].id,
                                                    straddle, 5), FA_OK);
    assert_int_equal(fa_store_measured_fused(ctx, s, run2, ar, &mf, &nmf), FA_OK);
    assert_int_equal((int)nmf, p1->n_clusters);
    assert_false(mf[0].resolved);
    o.measured_fused = mf;
    o.n_measured_fused = nmf;
    fa_plan *p4 = NULL;
    assert_int_equal(fa_advise(ctx, g2, a2, &o, &p4), FA_OK);
    assert_int_equal(count_basis(p4, "fused time measured"), 0);
    fa_plan_free(p4);

    /* an unknown run is an error naming it */
    assert_int_equal(fa_store_measured_fused(ctx, s, 999, ar, &mf, &nmf), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "999"));
    fa_ctx_clear(ctx);

    fa_plan_free(p1);
    fa_plan_free(p2);
    fa_plan_free(p2_roof);
    fa_plan_free(p3);
    fa_arena_free(ar);
    fa_analysis_free(a1);
    fa_analysis_free(a2);
    fa_analysis_free(a3);
    fa_graph_free(g1);
    fa_graph_free(g2);
    fa_graph_free(g3);
    fa_store_close(s);
    remove(db);
    fa_ctx_free(ctx);
}

static int count_refusal(const fa_plan *p, fa_why_code code, const char *part)
{
    int n = 0;
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        n += c->status == FA_CLUSTER_REFUSED && c->refusal == code && c->reason && strstr(c->reason, part) != NULL;
    }
    return n;
}

/* Store samples for every cluster of p1 (run1): fused and unfused, 5 rounds each. */
static void put_samples(fa_ctx *ctx, fa_store *s, int64_t run1, const fa_plan *p1, const double *u, const double *f)
{
    for (int i = 0; i < p1->n_clusters; i++) {
        assert_int_equal(fa_store_put_bench_samples(ctx, s, run1, p1->plan_id, FA_BENCH_CLUSTER_FUSED, p1->clusters[i].id,
                                                    f, 5), FA_OK);
        assert_int_equal(fa_store_put_bench_samples(ctx, s, run1, p1->plan_id, FA_BENCH_CLUSTER_UNFUSED, p1->clusters[i].id,
                                                    u, 5), FA_OK);
    }
}

/* The signature names each member's input shapes (one per input slot), so two clusters with the
 * same outputs, FLOPs and bytes but other inputs differ; and the refusals of the noise floor: a
 * resolved loss of the same signature is `measured-loss`, an earlier measurement whose interval
 * sits within 1% of its members around 0 is `below-noise`, and so is a positive saving predicted
 * under 2% of the members' measured time. */
static void test_signature_input_shapes_and_noise_floor_refusals(void **st)
{
    (void)st;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *s = NULL;
    const char *db = fa_test_path(fa_test_tmpdir(), "kernel_lookup_floor.db");
    remove(db);
    assert_int_equal(fa_store_open(ctx, db, &s), FA_OK);
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    fa_graph *g1 = NULL;
    fa_analysis *a1 = NULL;
    int64_t run1 = stored_run(ctx, s, 1, &g1, &a1);
    fa_plan *p1 = NULL;
    assert_int_equal(fa_advise(ctx, g1, a1, &o, &p1), FA_OK);
    assert_true(p1->n_clusters > 0);
    assert_int_equal(fa_plan_save(ctx, s, p1), FA_OK);

    /* every member's input shapes are in the text, in slot order */
    const fa_cluster *c0 = &p1->clusters[0];
    fa_buf b;
    fa_buf_init(&b);
    fa_cluster_signature(g1, c0, &b);
    const fa_node *m0 = g1->nodes[c0->members[0]];
    char sh[256], want[600];
    snprintf(want, sizeof want, "|%s(%s", m0->op_type, fa_tensor_shape_str(g1->tensors[m0->inputs[0]], sh, sizeof sh));
    assert_non_null(strstr(b.data, want));
    /* the same cluster with its first input seen at another shape (same element count, so the
     * bytes and FLOPs are unchanged): another signature */
    fa_tensor *t0 = g1->tensors[m0->inputs[0]];
    int64_t d0 = t0->dims[0], d1 = t0->dims[1];
    t0->dims[0] = d1;
    t0->dims[1] = d0;
    fa_buf b2;
    fa_buf_init(&b2);
    fa_cluster_signature(g1, c0, &b2);
    t0->dims[0] = d0;
    t0->dims[1] = d1;
    if (d0 != d1) assert_string_not_equal(b.data, b2.data);
    fa_buf_free(&b2);
    fa_buf_free(&b);

    fa_arena *ar = fa_arena_create(4096);
    fa_measured_fused *mf = NULL;
    size_t nmf = 0;
    fa_graph *g2 = NULL;
    fa_analysis *a2 = NULL;
    int64_t run2 = stored_run(ctx, s, 1, &g2, &a2);
    /* a resolved loss: every fused round 2000 ns slower */
    const double u[5] = {10000, 10010, 10020, 10030, 10040}, slow[5] = {12000, 12010, 12020, 12030, 12040};
    put_samples(ctx, s, run1, p1, u, slow);
    assert_int_equal(fa_store_measured_fused(ctx, s, run2, ar, &mf, &nmf), FA_OK);
    assert_true(nmf > 0 && mf[0].resolved && mf[0].paired.median_ns == -2000);
    o.measured_fused = mf;
    o.n_measured_fused = nmf;
    fa_plan *p2 = NULL;
    assert_int_equal(fa_advise(ctx, g2, a2, &o, &p2), FA_OK);
    assert_int_equal(count_refusal(p2, FA_WHY_MEASURED_LOSS, "measured-loss: the same fused kernel"), p2->n_clusters);
    fa_plan_free(p2);
    /* about 0, within 1% of 10,000 ns either way: below-noise */
    const double same[5] = {10030, 9990, 10050, 10000, 10020};
    put_samples(ctx, s, run1, p1, u, same);
    assert_int_equal(fa_store_measured_fused(ctx, s, run2, ar, &mf, &nmf), FA_OK);
    assert_false(mf[0].resolved);
    o.measured_fused = mf;
    o.n_measured_fused = nmf;
    assert_int_equal(fa_advise(ctx, g2, a2, &o, &p2), FA_OK);
    assert_int_equal(count_refusal(p2, FA_WHY_BELOW_NOISE, "not distinguishable from 0"), p2->n_clusters);
    fa_plan_free(p2);
    /* a wide unresolved interval is no evidence: nothing refused by it */
    const double wide[5] = {7000, 13000, 7000, 13000, 10000};
    put_samples(ctx, s, run1, p1, u, wide);
    assert_int_equal(fa_store_measured_fused(ctx, s, run2, ar, &mf, &nmf), FA_OK);
    o.measured_fused = mf;
    o.n_measured_fused = nmf;
    assert_int_equal(fa_advise(ctx, g2, a2, &o, &p2), FA_OK);
    assert_int_equal(count_refusal(p2, FA_WHY_BELOW_NOISE, "not distinguishable from 0"), 0);
    assert_int_equal(count_refusal(p2, FA_WHY_MEASURED_LOSS, ""), 0);
    /* the profile's floor: every positive prediction under 2% of its members' measured time is
     * refused below-noise, every one at or above it is not */
    int checked = 0;
    for (int i = 0; i < p2->n_clusters; i++) {
        const fa_cluster *c = &p2->clusters[i];
        if (!c->basis || strncmp(c->basis, "measured:", 9)) continue;
        checked++;
        bool floor = c->status == FA_CLUSTER_REFUSED && c->refusal == FA_WHY_BELOW_NOISE;
        if (floor) assert_non_null(strstr(c->reason, "of its members' measured"));
        if (c->est_saving_ns <= 0) assert_false(floor);
    }
    assert_true(checked > 0);
    fa_plan_free(p2);

    fa_plan_free(p1);
    fa_arena_free(ar);
    fa_analysis_free(a1);
    fa_analysis_free(a2);
    fa_graph_free(g1);
    fa_graph_free(g2);
    fa_store_close(s);
    remove(db);
    fa_ctx_free(ctx);
}

/* The terms of each prediction (issue 36): stored once per cluster, they add up to its predicted
 * saving (members + dispatch - fused - recompute from the roofline; members + dispatch - fused
 * where the fused time is a measured ratio x the members, pred_ratio set), survive the run
 * database (schema v9 columns) and reach the plan's JSON. */
static void test_prediction_terms_add_up_and_are_stored(void **st)
{
    (void)st;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *s = NULL;
    const char *db = fa_test_path(fa_test_tmpdir(), "kernel_lookup_terms.db");
    remove(db);
    assert_int_equal(fa_store_open(ctx, db, &s), FA_OK);
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    fa_graph *g1 = NULL;
    fa_analysis *a1 = NULL;
    int64_t run1 = stored_run(ctx, s, 1, &g1, &a1);
    fa_plan *p1 = NULL;
    assert_int_equal(fa_advise(ctx, g1, a1, &o, &p1), FA_OK);
    int measured = 0;
    for (int i = 0; i < p1->n_clusters; i++) {
        const fa_cluster *c = &p1->clusters[i];
        assert_non_null(c->basis);
        if (strncmp(c->basis, "measured:", 9)) continue;
        measured++;
        assert_true(c->pred_members_ns > 0 && c->pred_dispatch_ns >= 0 && c->pred_fused_ns >= 0);
        assert_true(isnan(c->pred_ratio)); /* the roofline's fused time */
        assert_true(fabs(c->pred_members_ns + c->pred_dispatch_ns - c->pred_fused_ns - c->recompute_ns - c->est_saving_ns) <=
                    1e-6 * fabs(c->pred_members_ns));
    }
    assert_true(measured > 0);
    assert_int_equal(fa_plan_save(ctx, s, p1), FA_OK);
    /* read back from the database: every term as the advisor wrote it */
    fa_plan *back = NULL;
    fa_cluster_verdict *bv = NULL;
    assert_int_equal(fa_store_get_latest_plan(ctx, s, run1, &back, &bv), FA_OK);
    assert_int_equal(back->n_clusters, p1->n_clusters);
    for (int i = 0; i < back->n_clusters; i++) {
        const fa_cluster *b = &back->clusters[i], *c = NULL;
        for (int j = 0; j < p1->n_clusters; j++)
            if (p1->clusters[j].id == b->id) c = &p1->clusters[j];
        assert_non_null(c);
        assert_true(fabs(b->pred_members_ns - c->pred_members_ns) < 1e-3 && fabs(b->pred_fused_ns - c->pred_fused_ns) < 1e-3 &&
                    fabs(b->pred_dispatch_ns - c->pred_dispatch_ns) < 1e-3);
        assert_true(isnan(b->pred_ratio) && isnan(bv[i].meas_unfused_ns) && isnan(bv[i].meas_fused_ns));
        assert_int_equal(b->est_spread_n, c->est_spread_n);
    }
    fa_buf js;
    fa_buf_init(&js);
    fa_plan_json(&js, g1, p1, NULL, NULL);
    assert_non_null(strstr(js.data, "\"pred_members_ns\":"));
    assert_non_null(strstr(js.data, "\"pred_dispatch_ns\":"));
    assert_non_null(strstr(js.data, "\"meas_fused_ns\":"));
    fa_buf_free(&js);

    /* the fused time from an earlier measurement: the ratio is stored, and the terms still add up */
    double smp[5] = {k_fused_ns, k_fused_ns, k_fused_ns, k_fused_ns, k_fused_ns};
    for (int i = 0; i < p1->n_clusters; i++) {
        assert_int_equal(fa_store_put_bench_samples(ctx, s, run1, p1->plan_id, FA_BENCH_CLUSTER_FUSED, p1->clusters[i].id,
                                                    smp, 5), FA_OK);
        assert_int_equal(fa_store_put_bench_samples(ctx, s, run1, p1->plan_id, FA_BENCH_CLUSTER_UNFUSED, p1->clusters[i].id,
                                                    k_unfused, 5), FA_OK);
    }
    fa_graph *g2 = NULL;
    fa_analysis *a2 = NULL;
    int64_t run2 = stored_run(ctx, s, 1, &g2, &a2);
    fa_arena *ar = fa_arena_create(4096);
    fa_measured_fused *mf = NULL;
    size_t nmf = 0;
    assert_int_equal(fa_store_measured_fused(ctx, s, run2, ar, &mf, &nmf), FA_OK);
    o.measured_fused = mf;
    o.n_measured_fused = nmf;
    fa_plan *p2 = NULL;
    assert_int_equal(fa_advise(ctx, g2, a2, &o, &p2), FA_OK);
    int looked_up = 0;
    for (int i = 0; i < p2->n_clusters; i++) {
        const fa_cluster *c = &p2->clusters[i];
        if (!strstr(c->basis, "fused time measured in run")) continue;
        looked_up++;
        assert_true(fabs(c->pred_ratio - k_fused_ns / 10020) < 1e-9);
        assert_true(fabs(c->pred_fused_ns - c->pred_ratio * c->pred_members_ns) < 1e-6 * c->pred_members_ns);
        assert_true(fabs(c->pred_members_ns + c->pred_dispatch_ns - c->pred_fused_ns - c->est_saving_ns) <=
                    1e-6 * c->pred_members_ns);
    }
    assert_true(looked_up > 0);
    fa_plan_free(p2);
    fa_plan_free(back);
    fa_plan_free(p1);
    fa_arena_free(ar);
    fa_analysis_free(a1);
    fa_analysis_free(a2);
    fa_graph_free(g1);
    fa_graph_free(g2);
    fa_store_close(s);
    remove(db);
    fa_ctx_free(ctx);
}

/* "prediction ± X%" (issue 36), from a database seeded with recorded samples: five earlier runs
 * whose BN folds were measured at 1.55-1.65 x their prediction (a wide miss, each measurement
 * tight: half-interval 5% of the prediction) and whose other clusters at 0.9-1.1 x (no miss
 * beyond the measurement's own 10%). The next plan quotes "± 60%" on its BN folds only; with no
 * history nothing is quoted. */
/* One past measurement of recorded figures (bench_calibration.sh pass of 2026-12-05 17:41 UTC):
 * its plan's prediction, the paired median, IQR and sign-test interval of its rounds, ns. */
static fa_measured_fused past(int64_t run, int cluster, const char *sig, double pred, double med, double iqr, double lo,
                              double hi)
{
    fa_measured_fused m = {.run_id = run, .plan_id = 1, .cluster_id = cluster, .signature = sig, .n_samples = 18,
                           .resolved = true, .kind = FA_CLUSTER_EPILOGUE, .est_saving_ns = pred};
    m.paired = (fa_paired_saving){.n = 18, .median_ns = med, .iqr_ns = iqr, .ci_lo_ns = lo, .ci_hi_ns = hi, .ci_level = 0.9};
    return m;
}

/* The kind's spread counts each benchmark once and a measurement about 0 as agreement (issue 36),
 * as bench/calibration.py does. Recorded history: four ResNet-50 conv epilogues predicted within
 * 4 %, and ViT-B/16's GEMM + bias + residual epilogue, one benchmark (94 us saved, rounds' IQR
 * 143 us) its plan shared among 11 clusters of one signature, each predicted a 3 us loss. Counted
 * per cluster with their relative error, 11 entries of 3000 % made the kind's 80th percentile
 * "± 600 %"; counted once and about 0 (both figures within the IQR), the kind is within its
 * repeatability and quoted as one figure. The GEMM + bias epilogue measured at 128 us with an IQR
 * of 54 us (12 clusters of one benchmark) is a miss, counted once: still quoted. */
static void test_kind_spread_counts_a_benchmark_once_and_about_0_as_agreement(void **st)
{
    (void)st;
    fa_measured_fused v[20];
    int n = 0;
    v[n++] = past(1, 3, "a", 1060440, 1081153, 103855, 1031801, 1171688);
    v[n++] = past(1, 5, "b", 981366, 964831, 58268, 959423, 1051281);
    v[n++] = past(1, 7, "c", 879828, 866646, 65287, 845976, 920316);
    v[n++] = past(1, 9, "d", 731307, 742832, 104706, 693159, 806617);
    int base = n;
    for (int k = 0; k < 11; k++) /* cluster 51 was benchmarked; 52-61 share its rounds */
        v[n++] = past(2, 51 + (k + 5) % 11, "vit-gemm-bias-add", -3166.67, 93569, 142652, 35552, 165436);
    fa_kind_spread ks;
    fa_advise_kind_spread(v, (size_t)n, FA_CLUSTER_EPILOGUE, &ks);
    assert_int_equal(ks.n, 5);
    assert_true(ks.spread_pct < 4 && !ks.quote);
    n = base; /* the GEMM + bias epilogue instead: a miss beyond its IQR, one benchmark of 12 clusters */
    for (int k = 0; k < 12; k++) v[n++] = past(2, 39 + k, "vit-gemm-bias", -3027.4, 128260, 54211, 103795, 145565);
    fa_advise_kind_spread(v, (size_t)n, FA_CLUSTER_EPILOGUE, &ks);
    assert_int_equal(ks.n, 5);
    assert_true(ks.spread_pct > 25 && ks.quote);
    /* the same signature in another plan is another measurement: it counts */
    v[n] = past(3, 39, "vit-gemm-bias", -3027.4, 128260, 54211, 103795, 145565);
    fa_advise_kind_spread(v, (size_t)n + 1, FA_CLUSTER_EPILOGUE, &ks);
    assert_int_equal(ks.n, 6);
}

static void test_spread_quoted_where_a_kind_misses_beyond_repeatability(void **st)
{
    (void)st;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *s = NULL;
    const char *db = fa_test_path(fa_test_tmpdir(), "kernel_lookup_spread.db");
    remove(db);
    assert_int_equal(fa_store_open(ctx, db, &s), FA_OK);
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    fa_arena *ar = fa_arena_create(4096);
    int folds = 0, others = 0;
    for (int r = 0; r < FA_ADVISE_SPREAD_MIN_PAST; r++) {
        fa_graph *g = NULL;
        fa_analysis *a = NULL;
        int64_t run = stored_run(ctx, s, 1, &g, &a);
        fa_measured_fused *mf = NULL;
        size_t nmf = 0;
        assert_int_equal(fa_store_measured_fused(ctx, s, run, ar, &mf, &nmf), FA_OK);
        o.measured_fused = NULL; /* each seeded run predicted from the roofline alone */
        o.n_measured_fused = 0;
        fa_plan *p = NULL;
        assert_int_equal(fa_advise(ctx, g, a, &o, &p), FA_OK);
        if (r == 0)
            for (int i = 0; i < p->n_clusters; i++) { /* no history: nothing quoted */
                assert_int_equal(p->clusters[i].est_spread_n, 0);
                assert_true(isnan(p->clusters[i].est_spread_pct));
            }
        assert_int_equal(fa_plan_save(ctx, s, p), FA_OK);
        for (int i = 0; i < p->n_clusters; i++) {
            const fa_cluster *c = &p->clusters[i];
            double e = c->est_saving_ns;
            if (!(e > 100)) continue;
            bool fold = c->kind == FA_CLUSTER_BN_FOLD;
            folds += fold;
            others += !fold;
            const double wide[5] = {1.55, 1.58, 1.6, 1.62, 1.65}, tight[5] = {0.9, 0.95, 1.0, 1.05, 1.1};
            double f[5], u[5];
            for (int k = 0; k < 5; k++) f[k] = 10000, u[k] = 10000 + e * (fold ? wide[k] : tight[k]);
            assert_int_equal(fa_store_put_bench_samples(ctx, s, run, p->plan_id, FA_BENCH_CLUSTER_FUSED, c->id, f, 5), FA_OK);
            assert_int_equal(fa_store_put_bench_samples(ctx, s, run, p->plan_id, FA_BENCH_CLUSTER_UNFUSED, c->id, u, 5), FA_OK);
        }
        fa_plan_free(p);
        fa_analysis_free(a);
        fa_graph_free(g);
    }
    assert_true(folds >= FA_ADVISE_SPREAD_MIN_PAST && others >= FA_ADVISE_SPREAD_MIN_PAST);

    fa_graph *g = NULL;
    fa_analysis *a = NULL;
    int64_t run = stored_run(ctx, s, 1, &g, &a);
    fa_measured_fused *mf = NULL;
    size_t nmf = 0;
    assert_int_equal(fa_store_measured_fused(ctx, s, run, ar, &mf, &nmf), FA_OK);
    fa_kind_spread ks;
    fa_advise_kind_spread(mf, nmf, FA_CLUSTER_BN_FOLD, &ks);
    assert_int_equal(ks.n, folds);
    assert_true(fabs(ks.spread_pct - 60) < 1 && fabs(ks.repeat_pct - 5) < 1 && ks.quote);
    fa_advise_kind_spread(mf, nmf, FA_CLUSTER_EPILOGUE, &ks);
    assert_true(ks.n > 0 && ks.spread_pct < 1 && fabs(ks.repeat_pct - 10) < 1 && !ks.quote);
    fa_advise_kind_spread(mf, FA_ADVISE_SPREAD_MIN_PAST - 1, FA_CLUSTER_BN_FOLD, &ks); /* too few: not quoted */
    assert_false(ks.quote);
    o.measured_fused = mf;
    o.n_measured_fused = nmf;
    fa_plan *p = NULL;
    assert_int_equal(fa_advise(ctx, g, a, &o, &p), FA_OK);
    int quoted = 0;
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        char phrase[128];
        fa_cluster_spread_phrase(c, phrase, sizeof phrase);
        if (c->kind == FA_CLUSTER_BN_FOLD) {
            quoted++;
            assert_true(fabs(c->est_spread_pct - 60) < 1);
            assert_int_equal(c->est_spread_n, folds);
            char want[96];
            snprintf(want, sizeof want, " \xc2\xb1 60%% (%d past bn-fold clusters on this machine)", folds);
            assert_string_equal(phrase, want);
        } else {
            assert_true(isnan(c->est_spread_pct));
            assert_string_equal(phrase, "");
        }
    }
    assert_true(quoted > 0);
    /* one stored value: the database gives back the figure the phrase quotes */
    assert_int_equal(fa_plan_save(ctx, s, p), FA_OK);
    fa_plan *back = NULL;
    assert_int_equal(fa_store_get_latest_plan(ctx, s, run, &back, NULL), FA_OK);
    for (int i = 0; i < back->n_clusters; i++)
        if (back->clusters[i].kind == FA_CLUSTER_BN_FOLD) assert_true(fabs(back->clusters[i].est_spread_pct - 60) < 1);
    fa_plan_free(back);
    fa_plan_free(p);
    fa_analysis_free(a);
    fa_graph_free(g);
    fa_arena_free(ar);
    fa_store_close(s);
    remove(db);
    fa_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measured_fused_kernel_predicts_same_signature_only),
        cmocka_unit_test(test_signature_input_shapes_and_noise_floor_refusals),
        cmocka_unit_test(test_prediction_terms_add_up_and_are_stored),
        cmocka_unit_test(test_spread_quoted_where_a_kind_misses_beyond_repeatability),
        cmocka_unit_test(test_kind_spread_counts_a_benchmark_once_and_about_0_as_agreement),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
