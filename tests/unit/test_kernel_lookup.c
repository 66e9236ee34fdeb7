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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measured_fused_kernel_predicts_same_signature_only),
        cmocka_unit_test(test_signature_input_shapes_and_noise_floor_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
