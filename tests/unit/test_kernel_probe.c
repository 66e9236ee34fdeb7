/* tests/unit/test_kernel_probe — issue 19's probe of fused library kernels: a conv+relu
 * epilogue's saving is predicted by the probe (the applier's fused sub-graph timed in the
 * target's fused-plan layout against its plain unfused one: their ratio, applied to the members'
 * profile time), the basis names the probe, a signature is probed once per plan, and without a
 * probe the profile model stays. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_cases.h"
#include "advisor/advisor.h"
#include "analyzer/analyzer.h"
#include "applier/applier-impl.h"
#include "store/store.h"

/* x[1,16,14,14] -> Conv 3x3 (32, pad 1) -> Relu -> Conv 3x3 (32, pad 1) -> Relu -> y: two
 * conv+relu epilogues of one signature each (the second conv reads 32 channels) */
static tc *conv_relu(void)
{
    tc *t = tc_new(17);
    int64_t xd[4] = {1, 16, 14, 14}, w1d[4] = {32, 16, 3, 3}, w2d[4] = {32, 32, 3, 3}, bd[1] = {32};
    static float w[32 * 32 * 9], b[32];
    for (int i = 0; i < 32 * 32 * 9; i++) w[i] = (float)((i * 7) % 13 - 6) * 0.01f;
    for (int i = 0; i < 32; i++) b[i] = (float)(i % 5) * 0.1f;
    tc_input(t, "x", 4, xd);
    tc_const(t, "w1", 4, w1d, w);
    tc_const(t, "w2", 4, w2d, w);
    tc_const(t, "b", 1, bd, b);
    int64_t pads[4] = {1, 1, 1, 1};
    fa_node *c1 = tc_node(t, "Conv", "x", "w1", "b", "c1");
    fa_node *c2 = NULL;
    assert_non_null(fa_node_add_attr_ints(t->g, c1, "pads", pads, 4));
    tc_node(t, "Relu", "c1", NULL, NULL, "r1");
    c2 = tc_node(t, "Conv", "r1", "w2", "b", "c2");
    assert_non_null(fa_node_add_attr_ints(t->g, c2, "pads", pads, 4));
    tc_node(t, "Relu", "c2", NULL, NULL, "y");
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    return t;
}

/* t's graph run unfused and stored in a fresh database `db`, its analysis returned (*s open). */
static fa_analysis *profiled(tc *t, const char *db, fa_store **s)
{
    remove(db);
    assert_int_equal(fa_store_open(t->ctx, db, s), FA_OK);
    int64_t run;
    assert_int_equal(fa_test_store_graph_run(t->ctx, *s, t->g, 3, &run), FA_OK);
    fa_ceilings c;
    memset(&c, 0, sizeof c);
    c.device_key = "cpu:test:1t";
    c.mem_bw_gbs = 10;
    c.peak_gflops = 100;
    c.launch_ns = 1000;
    fa_analysis *a = NULL;
    assert_int_equal(fa_analyze_run(t->ctx, *s, run, &c, &a), FA_OK);
    return a;
}

/* The probe as the pipeline wires it, with what it returned recorded per cluster. */
typedef struct spy {
    fa_kernel_probe *probe;
    int calls;
    fa_fused_probe_result got[8];
    int anchor[8];          /* the probed cluster's anchor node (ids are renumbered by rank later) */
    bool refuse;            /* answer "not measured" without probing */
} spy;

static bool spy_probe(void *user, const fa_graph *g, const fa_plan *p, int ci, const char *signature,
                      fa_fused_probe_result *out);

/* sp reset with a fresh probe of t's graph (1 thread, the default budget), and advise options
 * (no gate) that call it through spy_probe. */
static fa_advise_options spied(tc *t, spy *sp)
{
    memset(sp, 0, sizeof *sp);
    assert_int_equal(fa_kernel_probe_create(t->ctx, t->g, FA_TARGET_CPU, 1, 0, &sp->probe), FA_OK);
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    o.probe = spy_probe;
    o.probe_user = sp;
    return o;
}

static bool spy_probe(void *user, const fa_graph *g, const fa_plan *p, int ci, const char *signature,
                      fa_fused_probe_result *out)
{
    spy *s = user;
    if (s->refuse) {
        memset(out, 0, sizeof *out);
        snprintf(out->what, sizeof out->what, "the test's probe measures nothing");
        return false;
    }
    bool ok = fa_kernel_probe_fused(s->probe, g, p, ci, signature, out);
    if (ok && s->calls < 8) {
        s->got[s->calls] = *out;
        s->anchor[s->calls] = p->clusters[ci].anchor;
    }
    s->calls++;
    return ok;
}

static const fa_cluster *epilogue_of(const fa_plan *p, int k)
{
    for (int i = 0, seen = 0; i < p->n_clusters; i++)
        if (p->clusters[i].kind == FA_CLUSTER_EPILOGUE && seen++ == k) return &p->clusters[i];
    return NULL;
}

/* "medians X ns + G gap(s) x Y ns" and the anchor's figure from a measured basis */
static void basis_members(const char *basis, double *gone, int *gaps, double *gap, double *anchor)
{
    const char *m = strstr(basis, "medians ");
    assert_non_null(m);
    assert_int_equal(sscanf(m, "medians %lf ns + %d gap(s) x %lf ns", gone, gaps, gap), 3);
    const char *a = strstr(basis, "the anchor's measured ");
    assert_non_null(a);
    assert_int_equal(sscanf(a, "the anchor's measured %lf ns", anchor), 1);
}

static void test_probe_predicts_conv_relu_fused_kernel(void **st)
{
    (void)st;
    tc *t = conv_relu();
    fa_ctx *ctx = t->ctx;
    fa_store *s = NULL;
    const char *db = fa_test_path(fa_test_tmpdir(), "kernel_probe.db");
    fa_analysis *a = profiled(t, db, &s);

    spy sp;
    fa_advise_options o = spied(t, &sp);
    fa_plan *p = NULL;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    assert_int_equal(sp.calls, 2); /* one per epilogue */
    int built, reused, over;
    double spent;
    fa_kernel_probe_stats(sp.probe, &built, &reused, &over, &spent);
    assert_int_equal(built, 2); /* 16 and 32 input channels: two signatures */
    assert_int_equal(reused, 0);
    assert_int_equal(over, 0);
    assert_true(spent > 0 && spent < FA_PROBE_BUDGET_S);

    for (int k = 0; k < 2; k++) {
        const fa_cluster *e = epilogue_of(p, k);
        assert_non_null(e);
        assert_non_null(e->basis);
        print_message("cluster %d: %s\n", e->id, e->basis);
        /* the basis names the probe, the fused-plan kernel and its layout */
        assert_non_null(strstr(e->basis, "probe: "));
        /* in the layout the target's fused plan gives the conv (nChw16c on AVX-512, whatever
         * this machine's is), the fused epilogue's oneDNN kernel */
        fa_plan_layouts pl;
        fa_target_plan_layouts(FA_TARGET_CPU, &pl);
        fa_layout l = fa_target_preferred_layout(fa_target_get(FA_TARGET_CPU), t->g, t->g->nodes[e->anchor], pl.deflt);
        char lays[64];
        bool reads_x = t->g->nodes[e->anchor]->inputs[0] == fa_graph_find_tensor(t->g, "x"); /* a graph input: plain */
        snprintf(lays, sizeof lays, "boundary layouts %s,%s", reads_x ? "plain" : fa_layout_name(l), fa_layout_name(l));
        assert_non_null(strstr(e->basis, lays));
        assert_non_null(strstr(e->basis, "interleaved pairs"));
        const fa_fused_probe_result *r = NULL;
        for (int j = 0; j < 2; j++)
            if (sp.anchor[j] == e->anchor) r = &sp.got[j];
        assert_non_null(r);
        assert_true(r->median_ns > 0 && r->unfused_median_ns > 0 && r->reps >= FA_PROBE_MIN_REPS);
        /* the prediction rests on the profile: the members' measured time less the fused
         * kernel predicted as that time x the probe's fused/unfused ratio; the probe's own
         * difference quoted beside it */
        double gone, gap, anchor, members, ratio;
        int gaps;
        basis_members(e->basis, &gone, &gaps, &gap, &anchor);
        assert_true(gone > 0 && anchor > 0);
        const char *m = strstr(e->basis, "fused = that ratio ");
        assert_non_null(m);
        assert_int_equal(sscanf(m, "fused = that ratio %lf x the members' %lf ns in the profile", &ratio, &members), 2);
        /* the median of the pairs' own ratios (fa_probe_pairs_summary), not of the two medians */
        assert_true(r->paired_ratio > 0 && isfinite(r->paired_ratio));
        assert_non_null(strstr(e->basis, "the median of its pairs' fused/unfused ratios"));
        double want_ratio = r->paired_ratio;
        assert_true(fabs(ratio - want_ratio) <= 6e-4);
        assert_true(fabs(members - (gone + anchor)) <= 1.5); /* the removed kernels and the anchor */
        double want = members + gaps * gap - members * want_ratio - e->recompute_ns;
        char says[128];
        snprintf(says, sizeof says, "the probe's own difference %.0f - %.0f ns", r->unfused_median_ns, r->median_ns);
        assert_non_null(strstr(e->basis, says));
        assert_true(fabs(e->est_saving_ns - want) <= 1.0 + 1e-3 * fabs(want));
    }
    fa_plan_free(p);

    /* the same plan again on the same probe: both signatures served from the cache */
    sp.calls = 0;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    fa_kernel_probe_stats(sp.probe, &built, &reused, &over, &spent);
    assert_int_equal(built, 2);
    assert_int_equal(reused, 2);
    assert_non_null(strstr(epilogue_of(p, 0)->basis, "probed earlier in this plan"));
    fa_plan_free(p);

    /* a probe that measures nothing: the profile model, and the basis says why */
    sp.refuse = true;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    const fa_cluster *e = epilogue_of(p, 0);
    assert_null(strstr(e->basis, "probe: "));
    assert_non_null(strstr(e->basis, "probe not used: the test's probe measures nothing"));
    assert_non_null(strstr(e->basis, "the anchor's measured"));
    fa_plan_free(p);

    /* no probe at all (imported traces, another device): the profile model, no probe text */
    o.probe = NULL;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    assert_null(strstr(epilogue_of(p, 0)->basis, "probe"));
    fa_plan_free(p);

    fa_kernel_probe_free(sp.probe);
    fa_analysis_free(a);
    fa_store_close(s);
    remove(db);
    tc_free(t);
}

/* The probe as the pipeline wires its revisits, with the calls counted. */
static int g_revisits, g_revisited;
static int spy_revisit(void *user, const fa_plan *p)
{
    spy *s = user;
    g_revisits++;
    int n = fa_kernel_probe_revisit(s->probe, p);
    g_revisited += n;
    return n;
}

/* Visits (issue 19): with probe_revisit and probe_visits 3, fa_advise probes every epilogue
 * first, revisits twice, then predicts from the medians over the three visits; the basis says
 * so; a fourth revisit has nothing left to do, and a spent budget revisits nothing. */
static void test_probe_visits_spread_the_medians(void **st)
{
    (void)st;
    tc *t = conv_relu();
    fa_ctx *ctx = t->ctx;
    fa_store *s = NULL;
    const char *db = fa_test_path(fa_test_tmpdir(), "kernel_probe_visits.db");
    fa_analysis *a = profiled(t, db, &s);
    spy sp;
    fa_advise_options o = spied(t, &sp);
    o.probe_revisit = spy_revisit;
    o.probe_visits = FA_PROBE_VISITS;
    g_revisits = g_revisited = 0;
    fa_plan *p = NULL;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    assert_int_equal(sp.calls, 4);                        /* the first visits, then the predictions */
    assert_int_equal(g_revisits, FA_PROBE_VISITS - 1);
    assert_int_equal(g_revisited, 2 * (FA_PROBE_VISITS - 1)); /* both signatures each time */
    int built, reused, over;
    fa_kernel_probe_stats(sp.probe, &built, &reused, &over, NULL);
    assert_int_equal(built, 2);
    assert_int_equal(reused, 2); /* the predictions are served from the entries */
    for (int k = 0; k < 2; k++) {
        const fa_cluster *e = epilogue_of(p, k);
        assert_non_null(e);
        print_message("cluster %d: %s\n", e->id, e->basis);
        char says[64];
        snprintf(says, sizeof says, "in %d visit(s)", FA_PROBE_VISITS);
        assert_non_null(strstr(e->basis, says));
        /* the prediction uses the medians over all visits: the result the predicting call got */
        const fa_fused_probe_result *r = NULL;
        for (int j = 2; j < 4; j++)
            if (sp.anchor[j] == e->anchor) r = &sp.got[j];
        assert_non_null(r);
        assert_true(r->cached);
        assert_true(r->reps >= FA_PROBE_VISITS * FA_PROBE_MIN_REPS);
        double ratio;
        const char *m = strstr(e->basis, "fused = that ratio ");
        assert_non_null(m);
        assert_int_equal(sscanf(m, "fused = that ratio %lf", &ratio), 1);
        assert_true(fabs(ratio - r->paired_ratio) <= 6e-4);
    }
    assert_int_equal(fa_kernel_probe_revisit(sp.probe, p), 0); /* every entry has its visits */
    assert_int_equal(fa_kernel_probe_revisit(NULL, p), 0);
    assert_int_equal(fa_kernel_probe_revisit(sp.probe, NULL), 0);
    fa_plan_free(p);
    /* a second plan on the same probe: its clusters are served from the entries, and the
     * entries of the first plan are never revisited for it */
    o.probe_revisit = NULL;
    sp.calls = 0;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    fa_kernel_probe_stats(sp.probe, &built, &reused, &over, NULL);
    assert_int_equal(built, 2);
    assert_int_equal(fa_kernel_probe_revisit(sp.probe, p), 0);
    fa_plan_free(p);
    o.probe_revisit = spy_revisit;
    fa_kernel_probe_free(sp.probe);

    /* a probe whose budget the first visit spends revisits nothing */
    assert_int_equal(fa_kernel_probe_create(ctx, t->g, FA_TARGET_CPU, 1, 1e-9, &sp.probe), FA_OK);
    sp.calls = 0;
    g_revisits = g_revisited = 0;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    assert_int_equal(g_revisited, 0);
    assert_int_equal(g_revisits, 1); /* the first revisit found nothing to do: no second */
    fa_kernel_probe_stats(sp.probe, &built, &reused, &over, NULL);
    assert_int_equal(built, 1);
    assert_true(over >= 1);
    fa_plan_free(p);
    fa_kernel_probe_free(sp.probe);
    fa_analysis_free(a);
    fa_store_close(s);
    remove(db);
    tc_free(t);
}

/* A spent budget starts no probe: the cluster keeps the profile model and says why. */
static void test_probe_budget_spent_keeps_profile_model(void **st)
{
    (void)st;
    tc *t = conv_relu();
    fa_ctx *ctx = t->ctx;
    fa_store *s = NULL;
    const char *db = fa_test_path(fa_test_tmpdir(), "kernel_probe_budget.db");
    fa_analysis *a = profiled(t, db, &s);
    fa_kernel_probe *pr = NULL;
    assert_int_equal(fa_kernel_probe_create(ctx, t->g, FA_TARGET_CPU, 1, 1e-9, &pr), FA_OK);
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    o.probe = fa_kernel_probe_fused;
    o.probe_user = pr;
    fa_plan *p = NULL;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    int built, reused, over;
    fa_kernel_probe_stats(pr, &built, &reused, &over, NULL);
    assert_int_equal(built, 1); /* the first starts with nothing spent; it spends the budget */
    assert_int_equal(over, 1);
    int unprobed = 0;
    for (int i = 0; i < p->n_clusters; i++)
        unprobed += p->clusters[i].basis && strstr(p->clusters[i].basis, "probe not used: the probes' budget") != NULL;
    assert_int_equal(unprobed, 1);
    fa_plan_free(p);
    fa_kernel_probe_free(pr);
    fa_analysis_free(a);
    fa_store_close(s);
    remove(db);
    tc_free(t);
}

/* A stub probe reporting a loss: `wins` of 7 pairs faster fused. */
static int g_wins;
static bool losing_probe(void *user, const fa_graph *g, const fa_plan *p, int ci, const char *signature,
                         fa_fused_probe_result *out)
{
    (void)user; (void)g; (void)p; (void)ci; (void)signature;
    memset(out, 0, sizeof *out);
    out->median_ns = 2e9; /* far slower than any member here */
    out->unfused_median_ns = 1e9;
    out->reps = 7;
    out->wins = g_wins;
    snprintf(out->what, sizeof out->what, "a stub");
    return true;
}

/* A loss the probe shows in every one of >= FA_PROBE_LOSS_PAIRS pairs refuses the cluster
 * (not-beneficial); one pair faster fused leaves it proposed for the applier to measure. */
static void test_probe_loss_refuses_only_when_resolved(void **st)
{
    (void)st;
    tc *t = conv_relu();
    fa_ctx *ctx = t->ctx;
    fa_store *s = NULL;
    const char *db = fa_test_path(fa_test_tmpdir(), "kernel_probe_loss.db");
    fa_analysis *a = profiled(t, db, &s);
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    o.probe = losing_probe;
    assert_false(fa_probe_loss_resolved(FA_PROBE_LOSS_PAIRS - 1, 0));
    assert_true(fa_probe_loss_resolved(FA_PROBE_LOSS_PAIRS, 0));
    assert_false(fa_probe_loss_resolved(7, 1));

    fa_plan *p = NULL;
    g_wins = 0; /* 7 of 7 pairs slower fused: refused */
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    const fa_cluster *e = epilogue_of(p, 0);
    assert_int_equal(e->status, FA_CLUSTER_REFUSED);
    assert_int_equal(e->refusal, FA_WHY_NOT_BENEFICIAL);
    assert_true(e->est_saving_ns < 0);
    fa_plan_free(p);

    g_wins = 1; /* one pair faster fused: proposed, its negative prediction kept and explained */
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    e = epilogue_of(p, 0);
    assert_int_equal(e->status, FA_CLUSTER_PROPOSED);
    assert_true(e->est_saving_ns < 0);
    assert_non_null(strstr(e->basis, "proposed for measurement all the same: the probe's loss is not resolved (1 of 7"));
    fa_plan_free(p);

    fa_analysis_free(a);
    fa_store_close(s);
    remove(db);
    tc_free(t);
}

/* A probe whose fused kernel is slower than the plain members in every pair (1.2x, 0 of 7: a
 * resolved loss) and, timed against the members as the fused plan runs them unfused, at
 * g_plan_ratio with the interval g_plan_lo..g_plan_hi (plan_reps 0 when g_plan_ratio is 0). */
static double g_plan_ratio, g_plan_lo, g_plan_hi;
static bool plan_layout_probe(void *user, const fa_graph *g, const fa_plan *p, int ci, const char *signature,
                              fa_fused_probe_result *out)
{
    (void)user; (void)g; (void)p; (void)ci; (void)signature;
    memset(out, 0, sizeof *out);
    out->unfused_median_ns = 40000;
    out->median_ns = 48000;
    out->paired_ratio = 1.2;
    out->ratio_lo = 1.15;
    out->ratio_hi = 1.25;
    out->reps = 7;
    out->wins = 0;
    if (g_plan_ratio > 0) {
        out->plan_unfused_median_ns = 48000 / g_plan_ratio;
        out->plan_ratio = g_plan_ratio;
        out->plan_ratio_lo = g_plan_lo;
        out->plan_ratio_hi = g_plan_hi;
        out->plan_reps = 7;
        out->plan_wins = 7;
    }
    snprintf(out->what, sizeof out->what, "a stub");
    return true;
}

/* A fused kernel slower than its members as the baseline runs them (plain) but faster than the
 * members as the fused plan runs them when the cluster is left unfused (MobileNetV2's 24-channel
 * conv+BN folds: padded to 32 channels in nChw16c, the BN a pass of its own there) is proposed
 * with the saving in the plan: the plan's members predicted at the fused time / the plan ratio,
 * the basis saying against what it was judged. An interval reaching 1, or no such timing, leaves
 * the resolved loss refused as before. */
static void test_probe_judges_against_members_in_plan_layout(void **st)
{
    (void)st;
    tc *t = conv_relu();
    fa_ctx *ctx = t->ctx;
    fa_store *s = NULL;
    const char *db = fa_test_path(fa_test_tmpdir(), "kernel_probe_plan_layout.db");
    fa_analysis *a = profiled(t, db, &s);
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    o.probe = plan_layout_probe;
    fa_plan *p = NULL;

    g_plan_ratio = 0.8, g_plan_lo = 0.75, g_plan_hi = 0.85;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    const fa_cluster *e = epilogue_of(p, 0);
    assert_non_null(e);
    assert_int_equal(e->status, FA_CLUSTER_PROPOSED);
    assert_true(e->est_saving_ns > 0);
    /* the terms: members in the plan = fused / 0.8, the saving = members + dispatch - fused */
    assert_true(fabs(e->pred_members_ns - e->pred_fused_ns / 0.8) <= 1e-6 * e->pred_members_ns);
    assert_true(fabs(e->est_saving_ns - (e->pred_members_ns + e->pred_dispatch_ns - e->pred_fused_ns)) <= 1e-6 * e->pred_members_ns);
    /* its interval from the plan ratio's: members x (1 - 0.85) .. members x (1 - 0.75), plus dispatch */
    assert_true(e->est_lo_ns > 0 && e->est_lo_ns < e->est_saving_ns && e->est_saving_ns < e->est_hi_ns);
    assert_non_null(strstr(e->basis, "judged against its members as the fused plan runs them when it is left unfused"));
    assert_non_null(strstr(e->basis, "ran 0.800 x those members'"));
    fa_plan_free(p);

    g_plan_ratio = 0.8, g_plan_lo = 0.7, g_plan_hi = 1.05; /* not resolved under 1: the loss stands */
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    e = epilogue_of(p, 0);
    assert_int_equal(e->status, FA_CLUSTER_REFUSED);
    assert_int_equal(e->refusal, FA_WHY_NOT_BENEFICIAL);
    assert_true(e->est_saving_ns < 0);
    assert_null(strstr(e->basis, "judged against its members as the fused plan"));
    fa_plan_free(p);

    g_plan_ratio = 0; /* not timed (a plain plan, or the kernel faster than the plain members) */
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    e = epilogue_of(p, 0);
    assert_int_equal(e->status, FA_CLUSTER_REFUSED);
    fa_plan_free(p);

    fa_analysis_free(a);
    fa_store_close(s);
    remove(db);
    tc_free(t);
}

/* The members' boundary layouts (fa_apply_member_layouts): each input and output of the unfused
 * sub-graph in the layout of the fused sub-graph's boundary of the same name, whatever its
 * position; plain where the fused one has no such name (a BN's parameters folded away) */
static void test_member_layouts_by_name(void **st)
{
    (void)st;
    int64_t d[4] = {1, 16, 4, 4};
    tc *f = tc_new(17), *u = tc_new(17);
    tc_input(f, "x", 4, d);
    tc_input(f, "r", 4, d);
    tc_node(f, "Add", "x", "r", NULL, "y");
    tc_output(f, "y");
    tc_input(u, "r", 4, d);
    tc_input(u, "x", 4, d);
    tc_input(u, "z", 4, d);
    tc_node(u, "Add", "x", "r", NULL, "y0");
    tc_node(u, "Mul", "y0", "z", NULL, "y");
    tc_node(u, "Relu", "y", NULL, NULL, "q");
    tc_output(u, "y");
    tc_output(u, "q");
    fa_layout f_in[2] = {FA_LAYOUT_NCHW16C, FA_LAYOUT_NHWC}, f_out[1] = {FA_LAYOUT_NCHW16C};
    fa_layout *u_in = NULL, *u_out = NULL;
    assert_int_equal(fa_apply_member_layouts(f->ctx, f->g, f_in, f_out, u->g, &u_in, &u_out), FA_OK);
    assert_int_equal(u_in[0], FA_LAYOUT_NHWC);    /* r */
    assert_int_equal(u_in[1], FA_LAYOUT_NCHW16C); /* x */
    assert_int_equal(u_in[2], FA_LAYOUT_PLAIN);   /* z: not a boundary of the fused one */
    assert_int_equal(u_out[0], FA_LAYOUT_NCHW16C);
    assert_int_equal(u_out[1], FA_LAYOUT_PLAIN);
    free(u_in);
    free(u_out);
    tc_free(f);
    tc_free(u);
}

/* A probe answering recorded figures with a chosen interval of its ratio (issue 36). */
static double g_ratio, g_ratio_lo, g_ratio_hi;
static bool interval_probe(void *user, const fa_graph *g, const fa_plan *p, int ci, const char *signature,
                           fa_fused_probe_result *out)
{
    (void)user; (void)g; (void)p; (void)ci; (void)signature;
    memset(out, 0, sizeof *out);
    out->unfused_median_ns = 3133330; /* ViT-B/16's GEMM + bias add as probed (bench_calibration.sh, */
    out->median_ns = 3125734;         /* 2026-12-05 17:41 UTC: 12 pairs, 5 faster fused, ratio 1.001) */
    out->paired_ratio = g_ratio;
    out->ratio_lo = g_ratio_lo;
    out->ratio_hi = g_ratio_hi;
    out->reps = 12;
    out->wins = 5;
    snprintf(out->what, sizeof out->what, "a stub");
    return true;
}

/* The prediction's own interval (issue 36): the advisor recomputes the saving at both ends of the
 * probe's ratio interval (est_lo_ns, est_hi_ns, from the stored terms: M + D - M x ratio_hi and
 * ratio_lo), and the advice quotes it where one figure would mislead. ViT-B/16's GEMM + bias
 * epilogues were predicted from a ratio of 1.001 (12 pairs, 5 faster fused: an interval that
 * reaches past 1 on both sides) as a loss of 3 us and measured a saving of 94-128 us, 23 wrong
 * signs quoted as bare figures; such a ratio is now "about 0" with its interval. A tight interval
 * (0.49..0.51 around 0.5) quotes one figure; a wide one (0.3..0.8) quotes "± 60%". The interval's
 * ends here are set, the ratio, medians and wins recorded. */
static void test_probe_interval_quoted_with_the_prediction(void **st)
{
    (void)st;
    tc *t = conv_relu();
    fa_ctx *ctx = t->ctx;
    fa_store *s = NULL;
    const char *db = fa_test_path(fa_test_tmpdir(), "kernel_probe_interval.db");
    fa_analysis *a = profiled(t, db, &s);
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    o.probe = interval_probe;
    char ph[256];

    fa_plan *p = NULL;
    /* the members' time M and the dispatch term D are the profile's (measured), so the interval
     * that straddles 0 is placed from them: a median ratio just under 1 (a median of 1 or more sends
     * the cluster to the judgement against its members as the plan runs them, which measures M
     * again), the upper end past 1 + D / M (fixed at 0.97..1.02 around 1.001, a run whose live
     * members were half the profile's put both ends above 0 under ASan) */
    g_ratio = 0.9, g_ratio_lo = 0.89, g_ratio_hi = 0.91;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    const fa_cluster *e = epilogue_of(p, 0);
    double M = e->pred_members_ns, D = e->pred_dispatch_ns;
    assert_true(M > 0 && D >= 0);
    fa_plan_free(p);
    g_ratio = 0.999, g_ratio_lo = 0.97, g_ratio_hi = 1.0 + D / M + 0.02;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    e = epilogue_of(p, 0);
    if (!(fabs(e->pred_members_ns - M) < 1e-9 * M && fabs(e->pred_dispatch_ns - D) <= 1e-9 * M))
        fail_msg("the profile's terms moved: M %g D %g -> %g %g", M, D, e->pred_members_ns, e->pred_dispatch_ns);
    assert_true(fabs(e->est_saving_ns - (M + D - M * g_ratio)) < 1e-6 * M);
    assert_true(fabs(e->est_lo_ns - (M + D - M * g_ratio_hi)) < 1e-6 * M);
    assert_true(fabs(e->est_hi_ns - (M + D - M * g_ratio_lo)) < 1e-6 * M);
    assert_true(e->est_lo_ns < 0 && e->est_hi_ns > 0);
    fa_cluster_spread_phrase(e, ph, sizeof ph);
    assert_non_null(strstr(ph, " (about 0 by its probe's pairs: from a loss of "));
    fa_plan_free(p);

    g_ratio = 0.5, g_ratio_lo = 0.49, g_ratio_hi = 0.51; /* tight: one figure */
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    e = epilogue_of(p, 0);
    assert_true(e->est_lo_ns > 0 && e->est_lo_ns < e->est_saving_ns && e->est_saving_ns < e->est_hi_ns);
    assert_string_equal(fa_cluster_spread_phrase(e, ph, sizeof ph), "");
    fa_plan_free(p);

    g_ratio = 0.5, g_ratio_lo = 0.3, g_ratio_hi = 0.8; /* wide: (0.5 - 0.3) x M of 0.5 x M + D, about 60 % */
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    e = epilogue_of(p, 0);
    fa_cluster_spread_phrase(e, ph, sizeof ph);
    assert_non_null(strstr(ph, "% (its probe's pairs: saving "));
    int pct = 0;
    assert_int_equal(sscanf(ph, " \xc2\xb1 %d%%", &pct), 1);
    assert_true(pct >= 59 && pct <= 60);
    fa_plan_free(p);

    g_ratio = 0.5, g_ratio_lo = NAN, g_ratio_hi = NAN; /* under 5 pairs: no interval, one figure */
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    e = epilogue_of(p, 0);
    assert_true(isnan(e->est_lo_ns) && isnan(e->est_hi_ns));
    assert_string_equal(fa_cluster_spread_phrase(e, ph, sizeof ph), "");
    fa_plan_free(p);

    fa_analysis_free(a);
    fa_store_close(s);
    remove(db);
    tc_free(t);
}

/* Whether folder dir holds a file named *.so (the kernel cache's compiled objects). */
static bool has_shared_object(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        found = n > 3 && !strcmp(e->d_name + n - 3, ".so");
    }
    closedir(d);
    return found;
}

/* x[4,128,256] + b -> Relu -> * d -> y: one elementwise chain, a generated kernel. The probe
 * compiles it (into the test's own kernel cache) and times it against its members, as it times
 * a library kernel: the prediction is the members' profile time x the pairs' median ratio, and
 * the basis names the generated kernel, not the roofline. Before 2026-12-03 a chain was predicted
 * from its traffic on the members' achieved bandwidth. */
static void test_probe_times_generated_chain(void **st)
{
    (void)st;
    tc *t = tc_new(17);
    int64_t xd[3] = {4, 128, 256};
    tc_input(t, "x", 3, xd);
    tc_scalar(t, "b", 0.25f);
    tc_scalar(t, "d", 1.5f);
    tc_node(t, "Add", "x", "b", NULL, "t1");
    tc_node(t, "Relu", "t1", NULL, NULL, "t2");
    tc_node(t, "Mul", "t2", "d", NULL, "y");
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    fa_store *s = NULL;
    fa_analysis *a = profiled(t, fa_test_path(fa_test_tmpdir(), "kernel_probe_chain.db"), &s);
    spy sp;
    fa_advise_options o = spied(t, &sp);
    const char *cache = fa_test_path(fa_test_tmpdir(), "probe_kcache");
    assert_int_equal(fa_kernel_probe_set_cache(t->ctx, sp.probe, cache, 0), FA_OK);
    fa_plan *p = NULL;
    assert_int_equal(fa_advise(t->ctx, t->g, a, &o, &p), FA_OK);
    const fa_cluster *c = NULL;
    for (int i = 0; i < p->n_clusters; i++)
        if (p->clusters[i].kind == FA_CLUSTER_ELEMWISE_CHAIN) c = &p->clusters[i];
    assert_non_null(c);
    print_message("chain %d: %s\n", c->id, c->basis);
    assert_true(sp.calls >= 1);
    assert_non_null(strstr(c->basis, "probe: "));
    assert_non_null(strstr(c->basis, "generated, compiled by the target"));
    assert_null(strstr(c->basis, "a new kernel: ")); /* not the roofline's prediction */
    const fa_fused_probe_result *r = &sp.got[0];
    assert_true(r->median_ns > 0 && r->unfused_median_ns > 0 && r->paired_ratio > 0);
    double ratio, members;
    const char *m = strstr(c->basis, "fused = that ratio ");
    assert_non_null(m);
    assert_int_equal(sscanf(m, "fused = that ratio %lf x the members' %lf ns in the profile", &ratio, &members), 2);
    assert_true(fabs(ratio - r->paired_ratio) <= 6e-4);
    int built;
    fa_kernel_probe_stats(sp.probe, &built, NULL, NULL, NULL);
    assert_true(built >= 1);
    /* compiled into the cache it was given: a shared object there */
    assert_true(has_shared_object(cache));
    fa_plan_free(p);
    fa_analysis_free(a);
    fa_store_close(s);
    fa_kernel_probe_free(sp.probe);
    tc_free(t);
}

/* The probe builds each cluster's sub-graphs from the cluster alone (issue 38 item 6): on a chain
 * of 4,000 Relus (250 clusters of 16, each probed; the budget spent after the first), the
 * builds walk a bounded number of source nodes, tensors and clusters per member
 * (fa_fused_graph_walked), not the whole graph per cluster (250 x 4,000 and more). Counted, not
 * timed. */
static void test_probe_builds_each_cluster_from_its_scope(void **st)
{
    (void)st;
    enum { N = 4000 };
    tc *t = tc_new(17);
    int64_t xd[2] = {1, 4};
    tc_input(t, "x", 2, xd);
    char prev[16] = "x", next[16];
    for (int i = 0; i < N; i++) {
        snprintf(next, sizeof next, i == N - 1 ? "y" : "t%d", i);
        tc_node(t, "Relu", prev, NULL, NULL, next);
        memcpy(prev, next, sizeof prev);
    }
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    fa_store *s = NULL;
    const char *db = fa_test_path(fa_test_tmpdir(), "kernel_probe_scope.db");
    fa_analysis *a = profiled(t, db, &s);
    fa_kernel_probe *pr = NULL;
    assert_int_equal(fa_kernel_probe_create(t->ctx, t->g, FA_TARGET_CPU, 1, 1e-9, &pr), FA_OK);
    assert_int_equal(fa_kernel_probe_set_cache(t->ctx, pr, fa_test_path(fa_test_tmpdir(), "probe_kcache"), 0), FA_OK);
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    o.probe = fa_kernel_probe_fused;
    o.probe_user = pr;
    uint64_t w0 = fa_fused_graph_walked();
    fa_plan *p = NULL;
    assert_int_equal(fa_advise(t->ctx, t->g, a, &o, &p), FA_OK);
    uint64_t walked = fa_fused_graph_walked() - w0;
    int built, reused, over;
    fa_kernel_probe_stats(pr, &built, &reused, &over, NULL);
    int probed = built + reused + over;
    print_message("%d clusters, %d probed (%d built, %d reused, %d over budget); %llu walked by the builds\n",
                  p->n_clusters, probed, built, reused, over, (unsigned long long)walked);
    assert_true(p->n_clusters >= N / 16);
    assert_true(probed >= p->n_clusters - 1); /* every cluster reached the builder */
    if (walked > 16ull * N)
        fail_msg("the probe's builds walked %llu nodes/tensors/clusters for %d clusters of a %d-node graph: "
                 "the whole graph per cluster", (unsigned long long)walked, p->n_clusters, N);
    fa_plan_free(p);
    fa_kernel_probe_free(pr);
    fa_analysis_free(a);
    fa_store_close(s);
    remove(db);
    tc_free(t);
}

/* The probe's figures from its pairs keep the pairs: the medians are of copies, the wins and the
 * ratio are per pair. Three phases of a drifting machine, the fused run 0.5x its unfused partner
 * in each pair: the paired ratio is 0.5 exactly, the ratio of the two medians is not, every pair
 * is a win though the sorted arrays would make only some f[k] < u[k]; a second summary over the
 * same arrays (what a revisit does before appending) gives the same figures. */
static void test_pairs_summary_keeps_pairs(void **st)
{
    (void)st;
    double u[9] = {100, 300, 200, 110, 290, 210, 95, 310, 190}, f[9], u0[9], f0[9];
    for (int i = 0; i < 9; i++) f[i] = 0.5 * u[i];
    f[2] = 0.9 * u[2]; /* one pair less favourable */
    memcpy(u0, u, sizeof u);
    memcpy(f0, f, sizeof f);
    fa_fused_probe_result r, r2;
    memset(&r, 0, sizeof r);
    fa_probe_pairs_summary(f, u, 9, &r);
    assert_memory_equal(u, u0, sizeof u); /* untouched: still the pairs */
    assert_memory_equal(f, f0, sizeof f);
    assert_int_equal(r.reps, 9);
    assert_int_equal(r.wins, 9);
    assert_true(fabs(r.paired_ratio - 0.5) < 1e-12);
    assert_true(fabs(r.unfused_median_ns - 200) < 1e-12);
    assert_true(fabs(r.median_ns - 105) < 1e-12); /* f sorted: 47.5 50 55 95 105 145 150 155 180 */
    assert_true(fabs(r.median_ns / r.unfused_median_ns - 0.525) < 1e-12);
    /* the ratio's interval (issue 36): ratios eight 0.5 and one 0.9; n = 9, k = 2 (P(B(9, 1/2) < 2)
     * = 10/512): the 2nd and 8th sorted, both 0.5 */
    assert_true(r.ratio_lo == 0.5 && r.ratio_hi == 0.5);
    fa_probe_pairs_summary(f, u, 4, &r2); /* 4 pairs: no interval */
    assert_true(isnan(r2.ratio_lo) && isnan(r2.ratio_hi));
    fa_probe_pairs_summary(f, u, 9, &r2);
    assert_true(r2.paired_ratio == r.paired_ratio && r2.median_ns == r.median_ns && r2.wins == r.wins);
    /* a pair with no unfused time is left out of the ratio, not divided by */
    u[0] = 0;
    fa_probe_pairs_summary(f, u, 9, &r2);
    assert_true(fabs(r2.paired_ratio - 0.5) < 1e-12);
    /* no pairs: NAN figures, no wins */
    fa_probe_pairs_summary(f, u, 0, &r2);
    assert_true(isnan(r2.paired_ratio) && isnan(r2.median_ns) && r2.wins == 0);
}

/* ---- both paths (issue 33): an epilogue the library's post-ops and a generated epilogue both
 * express is probed in both builds, the faster taken ---- */

/* x[64,96] -> MatMul W[96,128] -> Add bias[128] -> Relu -> y: the post-ops {add, relu}, and a
 * product of A's rows with one matrix, which the generated path also takes */
static tc *matmul_bias_relu(void)
{
    tc *t = tc_new(17);
    int64_t xd[2] = {64, 96}, wd[2] = {96, 128}, bd[1] = {128};
    static float w[96 * 128], b[128];
    for (int i = 0; i < 96 * 128; i++) w[i] = (float)((i * 7) % 13 - 6) * 0.01f;
    for (int i = 0; i < 128; i++) b[i] = (float)(i % 5) * 0.1f - 0.2f;
    tc_input(t, "x", 2, xd);
    tc_const(t, "w", 2, wd, w);
    tc_const(t, "b", 1, bd, b);
    tc_node(t, "MatMul", "x", "w", NULL, "m");
    tc_node(t, "Add", "m", "b", NULL, "a");
    tc_node(t, "Relu", "a", NULL, NULL, "y");
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    return t;
}

/* A probe answer with median f ns against an unfused u ns, paired at ratio pr (0: not paired). */
static fa_fused_probe_result answer(double f, double u, double pr)
{
    fa_fused_probe_result r;
    memset(&r, 0, sizeof r);
    r.median_ns = f;
    r.unfused_median_ns = u;
    r.paired_ratio = pr;
    r.reps = 7;
    return r;
}

/* The rule alone, on answers the test writes: each build by its fused/unfused figure (the paired
 * ratio, else the ratio of medians), by its median when either has none; the post-op path on a
 * tie and when the generated build measured nothing. */
static void test_epilogue_path_rule(void **st)
{
    (void)st;
    fa_fused_probe_result post = answer(1000, 2000, 0.5), gen = answer(800, 2000, 0.4);
    assert_true(fa_epilogue_generated_faster(&post, &gen));
    assert_false(fa_epilogue_generated_faster(&gen, &post));
    gen.paired_ratio = 0.5; /* a tie: the default */
    assert_false(fa_epilogue_generated_faster(&post, &gen));
    gen.paired_ratio = 0.48; /* 4 % lower: within the margin, a near-tie keeps post-ops */
    assert_false(fa_epilogue_generated_faster(&post, &gen));
    gen.paired_ratio = 0.47; /* 6 % lower: beyond it */
    assert_true(fa_epilogue_generated_faster(&post, &gen));
    /* the ratios decide, not the raw medians: the generated build timed in a slower moment */
    post = answer(1000, 2000, 0.5);
    gen = answer(1200, 4000, 0.3);
    assert_true(fa_epilogue_generated_faster(&post, &gen));
    /* unpaired: the ratio of the medians */
    post = answer(1000, 2000, NAN);
    gen = answer(1100, 2400, 0);
    assert_true(fa_epilogue_generated_faster(&post, &gen)); /* 0.458 < 0.5 */
    gen = answer(1100, 2000, 0);
    assert_false(fa_epilogue_generated_faster(&post, &gen));
    /* no ratio on one side: the medians */
    post = answer(1000, 0, 0);
    gen = answer(900, 2000, 0.45);
    assert_true(fa_epilogue_generated_faster(&post, &gen));
    gen.median_ns = 1000;
    assert_false(fa_epilogue_generated_faster(&post, &gen));
    gen.median_ns = 960; /* 4 % faster by the medians: within the margin */
    assert_false(fa_epilogue_generated_faster(&post, &gen));
    /* one build measured nothing */
    gen = answer(900, 2000, 0.45);
    assert_true(fa_epilogue_generated_faster(NULL, &gen));
    assert_false(fa_epilogue_generated_faster(&post, NULL));
    assert_false(fa_epilogue_generated_faster(NULL, NULL));
    gen.median_ns = 0;
    assert_false(fa_epilogue_generated_faster(&post, &gen));
    gen.median_ns = NAN;
    assert_false(fa_epilogue_generated_faster(&post, &gen));
}

/* A stub probe for epilogues: post-ops g_post_ns, the generated build g_gen_ns (<= 0: measures
 * nothing), each against an unfused 4000 ns; the builds asked counted. */
static double g_post_ns, g_gen_ns;
static int g_post_asked, g_gen_asked;
static bool path_probe(void *user, const fa_graph *g, const fa_plan *p, int ci, const char *signature,
                       fa_fused_probe_result *out)
{
    (void)user;
    (void)g;
    const fa_cluster *c = &p->clusters[ci];
    memset(out, 0, sizeof *out);
    if (c->kind != FA_CLUSTER_EPILOGUE) return false;
    /* the generated build is a cluster of its own: its signature, no post-ops */
    assert_true((strncmp(signature, "epilogue(generated)", 19) == 0) == (c->epilogue_generated != 0));
    if (c->epilogue_generated) assert_int_equal(c->n_post_ops, 0);
    else assert_int_equal(c->n_post_ops, 2);
    *(c->epilogue_generated ? &g_gen_asked : &g_post_asked) += 1;
    double f = c->epilogue_generated ? g_gen_ns : g_post_ns;
    if (f <= 0) {
        snprintf(out->what, sizeof out->what, "the stub builds no such kernel");
        return false;
    }
    *out = answer(f, 4000, f / 4000);
    out->wins = 7;
    snprintf(out->what, sizeof out->what, "the test's stub");
    return true;
}

/* The advisor's choice between the two builds, on probe times the test injects: the faster
 * taken, the label says which path and why, the basis quotes both probed times, plan.json
 * carries it; without a probe nothing changes (the post-ops, no note, the probe never asked for
 * a generated build). Before, the probe was asked for the post-op build alone. */
static void test_probe_chooses_epilogue_path(void **st)
{
    (void)st;
    tc *t = matmul_bias_relu();
    fa_ctx *ctx = t->ctx;
    fa_store *s = NULL;
    const char *db = fa_test_path(fa_test_tmpdir(), "kernel_probe_paths.db");
    fa_analysis *a = profiled(t, db, &s);
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    o.probe = path_probe;
    fa_plan *p = NULL;

    /* the generated build faster: taken */
    g_post_ns = 2000;
    g_gen_ns = 1000;
    g_post_asked = g_gen_asked = 0;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    const fa_cluster *e = epilogue_of(p, 0);
    assert_non_null(e);
    print_message("%s: %s\n", e->label, e->basis);
    assert_int_equal(g_post_asked, 1);
    assert_int_equal(g_gen_asked, 1);
    assert_int_equal(e->epilogue_generated, 1);
    assert_int_equal(e->n_post_ops, 0);
    assert_int_equal(e->n_members, 3);
    assert_string_equal(e->label, "matmul+add+relu (generated epilogue: faster than post-ops)");
    assert_int_equal(strncmp(e->signature, "epilogue(generated)", 19), 0);
    assert_non_null(strstr(e->basis, "generated epilogue: probe 1.0 us, fused/unfused 0.250 against post-ops 2.0 us, "
                                     "fused/unfused 0.500"));
    /* its prediction is the generated build's: the members' time x 0.25 */
    assert_true(fabs(e->pred_ratio - 0.25) < 1e-9);
    assert_true(fabs(e->pred_fused_ns - 0.25 * e->pred_members_ns) < 1e-6 * e->pred_members_ns);
    assert_int_equal(e->status, FA_CLUSTER_PROPOSED);
    fa_buf j;
    fa_buf_init(&j);
    fa_plan_json(&j, t->g, p, NULL, NULL);
    assert_false(j.oom);
    assert_non_null(strstr(j.data, "\"epilogue_generated\":1"));
    assert_non_null(strstr(j.data, "(generated epilogue: faster than post-ops)"));
    assert_non_null(strstr(j.data, "generated epilogue: probe 1.0 us"));
    assert_non_null(strstr(j.data, "\"post_ops\":[]"));
    fa_buf_free(&j);
    fa_plan_free(p);

    /* the post-ops faster: kept, the basis says both */
    g_post_ns = 1000;
    g_gen_ns = 3000;
    g_post_asked = g_gen_asked = 0;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    e = epilogue_of(p, 0);
    print_message("%s: %s\n", e->label, e->basis);
    assert_int_equal(g_post_asked, 1);
    assert_int_equal(g_gen_asked, 1);
    assert_int_equal(e->epilogue_generated, 0);
    assert_int_equal(e->n_post_ops, 2);
    assert_string_equal(e->label, "matmul+add+relu");
    assert_int_equal(strncmp(e->signature, "epilogue|", 9), 0);
    assert_non_null(strstr(e->basis, "post-op epilogue: probe 1.0 us, fused/unfused 0.250 against the generated "
                                     "epilogue's 3.0 us, fused/unfused 0.750"));
    assert_true(fabs(e->pred_ratio - 0.25) < 1e-9);
    fa_plan_free(p);

    /* the generated build measures nothing: the post-ops, and the basis says why */
    g_post_ns = 1000;
    g_gen_ns = 0;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    e = epilogue_of(p, 0);
    assert_int_equal(e->epilogue_generated, 0);
    assert_string_equal(e->label, "matmul+add+relu");
    assert_non_null(strstr(e->basis, "post-op epilogue: the generated build, which also expresses it, measured nothing "
                                     "(the stub builds no such kernel)"));
    fa_plan_free(p);

    /* without a probe: nothing changes */
    o.probe = NULL;
    g_post_asked = g_gen_asked = 0;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    e = epilogue_of(p, 0);
    assert_int_equal(e->epilogue_generated, 0);
    assert_int_equal(e->n_post_ops, 2);
    assert_string_equal(e->label, "matmul+add+relu");
    assert_null(strstr(e->basis, "epilogue:"));
    assert_int_equal(g_post_asked + g_gen_asked, 0);
    fa_plan_free(p);

    fa_analysis_free(a);
    fa_store_close(s);
    remove(db);
    tc_free(t);
}

/* fa_kernel_probe_prepare, its calls and the kernels it compiled counted */
static int g_prepare_calls, g_prepared;
static int counting_prepare(void *user, const fa_graph *g, const fa_plan *p)
{
    g_prepare_calls++;
    int n = fa_kernel_probe_prepare(user, g, p);
    g_prepared += n;
    return n;
}

/* The real probe on both builds, with its revisits (the generated build's entry is revisited
 * through the alternatives' view): both measured, the choice recorded, the plan's cluster the
 * build the basis names. Which one is faster is not asserted (no timing in tests). */
static void test_real_probe_times_both_epilogue_builds(void **st)
{
    (void)st;
    tc *t = matmul_bias_relu();
    fa_ctx *ctx = t->ctx;
    fa_store *s = NULL;
    const char *db = fa_test_path(fa_test_tmpdir(), "kernel_probe_both.db");
    fa_analysis *a = profiled(t, db, &s);
    fa_kernel_probe *pr = NULL;
    assert_int_equal(fa_kernel_probe_create(ctx, t->g, FA_TARGET_CPU, 1, 0, &pr), FA_OK);
    assert_int_equal(fa_kernel_probe_set_cache(ctx, pr, fa_test_path(fa_test_tmpdir(), "probe_both_kcache"), 0), FA_OK);
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    o.probe = fa_kernel_probe_fused;
    o.probe_user = pr;
    o.probe_revisit = fa_kernel_probe_revisit;
    o.probe_prepare = counting_prepare;
    o.probe_visits = 2;
    fa_plan *p = NULL;
    g_prepare_calls = g_prepared = 0;
    assert_int_equal(fa_advise(ctx, t->g, a, &o, &p), FA_OK);
    /* the generated build compiled in the plan's one batch (one compiler process), before probing */
    assert_int_equal(g_prepare_calls, 1);
    assert_int_equal(g_prepared, 1);
    const fa_cluster *e = epilogue_of(p, 0);
    assert_non_null(e);
    print_message("%s: %s\n", e->label, e->basis);
    int built, reused, over;
    fa_kernel_probe_stats(pr, &built, &reused, &over, NULL);
    assert_int_equal(built, 2); /* the post-op build and the generated one */
    assert_int_equal(over, 0);
    const char *gen = strstr(e->basis, "generated epilogue: probe "), *post = strstr(e->basis, "post-op epilogue: probe ");
    assert_true((gen != NULL) != (post != NULL));
    assert_int_equal(e->epilogue_generated, gen != NULL);
    assert_int_equal(e->n_post_ops, gen ? 0 : 2);
    assert_string_equal(e->label, gen ? "matmul+add+relu (generated epilogue: faster than post-ops)" : "matmul+add+relu");
    /* the generated build's kernel is the one the applier runs */
    if (gen) assert_non_null(strstr(e->basis, "generated epilogue(weights packed"));
    assert_non_null(strstr(e->basis, "in 2 visit(s)"));
    fa_plan_free(p);
    fa_kernel_probe_free(pr);
    fa_analysis_free(a);
    fa_store_close(s);
    remove(db);
    tc_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_predicts_conv_relu_fused_kernel),
        cmocka_unit_test(test_probe_budget_spent_keeps_profile_model),
        cmocka_unit_test(test_probe_visits_spread_the_medians),
        cmocka_unit_test(test_probe_loss_refuses_only_when_resolved),
        cmocka_unit_test(test_probe_judges_against_members_in_plan_layout),
        cmocka_unit_test(test_member_layouts_by_name),
        cmocka_unit_test(test_pairs_summary_keeps_pairs),
        cmocka_unit_test(test_probe_interval_quoted_with_the_prediction),
        cmocka_unit_test(test_probe_times_generated_chain),
        cmocka_unit_test(test_probe_builds_each_cluster_from_its_scope),
        cmocka_unit_test(test_epilogue_path_rule),
        cmocka_unit_test(test_probe_chooses_epilogue_path),
        cmocka_unit_test(test_real_probe_times_both_epilogue_builds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
