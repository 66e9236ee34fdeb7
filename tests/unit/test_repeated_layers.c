/* tests/unit/test_repeated_layers — issue 39: a model of N identical blocks (the same kernels on
 * the same shapes, other weights) is measured once per distinct kernel, not once per block: the
 * cost model's probe builds each signature once, the apply stage compiles each distinct generated
 * kernel once and benchmarks each signature once. Counts, not times: the same for 2 blocks and 5,
 * while the clusters tried grow with depth and each is still verified on its own values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_cases.h"
#include "advisor/advisor.h"
#include "analyzer/analyzer.h"
#include "applier/applier-impl.h"
#include "store/store.h"

enum { SEQ = 16, HID = 32 };

/* x[1,SEQ,HID] through n blocks, block i:
 *   m = MatMul(h, W_i) + b_i -> Relu          (an epilogue: a library kernel)
 *   s = Add(r, h); mu = ReduceMean(s); d = s - mu; v = ReduceMean(d*d); y = d / Sqrt(v + eps)
 *                                              (a decomposed layer norm: a generated kernel)
 * Weights differ per block (seeded by i); shapes and ops do not. */
static tc *blocks(int n)
{
    tc *t = tc_new(17);
    int64_t xd[3] = {1, SEQ, HID}, wd[2] = {HID, HID}, bd[1] = {HID};
    static float w[HID * HID], b[HID];
    tc_input(t, "x", 3, xd);
    int64_t ax[1] = {-1};
    tc_axes(t, "axes", 1, ax);
    tc_scalar(t, "eps", 1e-5f);
    char h[32] = "x";
    for (int i = 0; i < n; i++) {
        char W[16], B[16], m[16], a[16], r[16], s[16], mu[16], d[16], dd[16], v[16], ve[16], sd[16], y[16];
        for (int k = 0; k < HID * HID; k++) w[k] = (float)(((k + 3 * i) * 7) % 13 - 6) * 0.02f;
        for (int k = 0; k < HID; k++) b[k] = (float)((k + i) % 5) * 0.1f - 0.2f;
        snprintf(W, sizeof W, "w%d", i);
        snprintf(B, sizeof B, "b%d", i);
        tc_const(t, W, 2, wd, w);
        tc_const(t, B, 1, bd, b);
        snprintf(m, sizeof m, "m%d", i);
        snprintf(a, sizeof a, "a%d", i);
        snprintf(r, sizeof r, "r%d", i);
        snprintf(s, sizeof s, "s%d", i);
        snprintf(mu, sizeof mu, "mu%d", i);
        snprintf(d, sizeof d, "d%d", i);
        snprintf(dd, sizeof dd, "dd%d", i);
        snprintf(v, sizeof v, "v%d", i);
        snprintf(ve, sizeof ve, "ve%d", i);
        snprintf(sd, sizeof sd, "sd%d", i);
        snprintf(y, sizeof y, "y%d", i);
        tc_node(t, "MatMul", h, W, NULL, m);
        tc_node(t, "Add", m, B, NULL, a);
        tc_node(t, "Relu", a, NULL, NULL, r);
        tc_node(t, "Add", r, h, NULL, s);
        tc_node(t, "ReduceMean", s, "axes", NULL, mu);
        tc_node(t, "Sub", s, mu, NULL, d);
        tc_node(t, "Mul", d, d, NULL, dd);
        tc_node(t, "ReduceMean", dd, "axes", NULL, v);
        tc_node(t, "Add", v, "eps", NULL, ve);
        tc_node(t, "Sqrt", ve, NULL, NULL, sd);
        tc_node(t, "Div", d, sd, NULL, y);
        snprintf(h, sizeof h, "%s", y);
    }
    tc_output(t, h);
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    return t;
}

/* the apply stage's progress calls, as "step:done/total" joined by spaces */
static char steps[8192];
static void on_step(void *user, const char *step, int done, int total)
{
    (void)user;
    size_t n = strlen(steps);
    snprintf(steps + n, sizeof steps - n, "%s:%d/%d ", step, done, total);
}

typedef struct counts {
    int tried;            /* clusters the apply stage tried (proposed, verified or not) */
    int generated;        /* of those, generated kernels (chains, reductions, groups) */
    int verified_own;     /* clusters verified (on their own values) and passed */
    int probe_built, probe_reused;
    int benchmarked, bench_rows, compiled;
} counts;

/* The pipeline's stages on a model of n blocks, as fa_pipeline_run wires them: profile stored,
 * analysis, the advisor with the kernel probe, the apply stage. */
static counts measure(int n)
{
    tc *t = blocks(n);
    fa_ctx *ctx = t->ctx;
    char name[64];
    snprintf(name, sizeof name, "repeated_%d.db", n);
    const char *db = fa_test_path(fa_test_tmpdir(), name);
    remove(db);
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, db, &st), FA_OK);
    int64_t run;
    assert_int_equal(fa_test_store_graph_run(ctx, st, t->g, 3, &run), FA_OK);
    fa_ceilings c;
    memset(&c, 0, sizeof c);
    c.device_key = "cpu:test:1t";
    c.mem_bw_gbs = 10;
    c.peak_gflops = 100;
    c.launch_ns = 1000;
    fa_analysis *a = NULL;
    assert_int_equal(fa_analyze_run(ctx, st, run, &c, &a), FA_OK);

    fa_kernel_probe *probe = NULL;
    assert_int_equal(fa_kernel_probe_create(ctx, t->g, FA_TARGET_CPU, 1, 0, &probe), FA_OK);
    assert_int_equal(fa_kernel_probe_set_cache(ctx, probe, fa_test_path(fa_test_tmpdir(), "kcache"), 0), FA_OK);
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    o.probe = fa_kernel_probe_fused;
    o.probe_user = probe;
    o.probe_revisit = fa_kernel_probe_revisit;
    o.probe_visits = FA_PROBE_VISITS;
    o.probe_prepare = fa_kernel_probe_prepare;
    fa_plan *p = NULL;
    if (fa_advise(ctx, t->g, a, &o, &p)) fail_msg("advise: %s", fa_ctx_errmsg(ctx));
    counts k;
    memset(&k, 0, sizeof k);
    fa_kernel_probe_stats(probe, &k.probe_built, &k.probe_reused, NULL, NULL);
    fa_kernel_probe_free(probe);

    fa_apply_options opt;
    fa_apply_options_default(&opt);
    opt.iters = 3;
    opt.warmup = 1;
    opt.threads = 1;
    opt.cache_dir = fa_test_path(fa_test_tmpdir(), "kcache");
    opt.progress = on_step;
    steps[0] = 0;
    fa_apply_result *r = NULL;
    if (fa_apply(ctx, t->g, p, &opt, &r)) fail_msg("apply: %s", fa_ctx_errmsg(ctx));
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster_verdict *v = &r->verdicts[i];
        if (p->clusters[i].status != FA_CLUSTER_PROPOSED || v->status == FA_CLUSTER_NOT_TRIED) continue;
        k.tried++;
        k.generated += fa_apply_needs_codegen(&p->clusters[i]);
        k.verified_own += v->max_rel_error >= 0 && v->status != FA_CLUSTER_REJECTED_VERIFY &&
                          v->status != FA_CLUSTER_REJECTED_ERROR;
        printf("  %d blocks: cluster %d %s (%s): %s\n", n, p->clusters[i].id, fa_cluster_kind_name(p->clusters[i].kind),
               fa_cluster_status_name(v->status), v->reason ? v->reason : "");
    }
    /* progress shown through every stage, in order, each one finished */
    const char *cap = strstr(steps, "capture:0/1 capture:1/1 "), *cmp = strstr(steps, "compile:0/1 compile:1/1 ");
    char vdone[32];
    snprintf(vdone, sizeof vdone, "verify:%d/%d ", k.tried, k.tried);
    const char *ver = strstr(steps, vdone), *app = strstr(steps, "apply:"), *e2e = strstr(steps, "e2e:1/1 ");
    if (!cap || !cmp || !ver || !app || !e2e || !(cap < cmp && cmp < ver && ver < app && app < e2e))
        fail_msg("progress steps out of order: %s", steps);
    k.benchmarked = r->n_benchmarked;
    k.bench_rows = r->n_cluster_bench;
    k.compiled = r->kernels_compiled;
    printf("%d blocks: %d tried (%d generated), probe %d built / %d reused, %d benchmarks for %d rows, %d kernels "
           "compiled\n", n, k.tried, k.generated, k.probe_built, k.probe_reused, k.benchmarked, k.bench_rows, k.compiled);
    fa_apply_result_free(r);
    fa_plan_free(p);
    fa_analysis_free(a);
    fa_store_close(st);
    tc_free(t);
    return k;
}

static void test_repeated_blocks_measured_once_per_signature(void **state)
{
    (void)state;
    counts k2 = measure(2), k5 = measure(5);
    /* the clusters grow with depth: at least one generated and one more per block */
    assert_true(k2.generated >= 2);
    assert_true(k5.tried >= k2.tried + 3);
    assert_true(k5.generated >= k2.generated + 3);
    /* every tried cluster has a row of samples (its own or the one it shares) */
    assert_int_equal(k5.bench_rows, k5.tried);
    /* ... but what is built, compiled and timed does not */
    assert_true(k2.probe_built >= 1);
    assert_int_equal(k5.probe_built, k2.probe_built);
    assert_true(k5.probe_reused > k2.probe_reused);
    assert_true(k2.compiled >= 1);
    assert_int_equal(k5.compiled, k2.compiled);
    assert_true(k2.benchmarked >= 1);
    assert_int_equal(k5.benchmarked, k2.benchmarked);
    assert_true(k5.benchmarked < k5.tried);
    /* the shared ones are still verified, each on its own values */
    assert_int_equal(k5.verified_own, k5.tried);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repeated_blocks_measured_once_per_signature),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
