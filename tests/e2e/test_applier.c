/* tests/e2e/test_applier — the closed loop on the zoo models: every proposed cluster of every
 * kind builds, compiles and verifies against the unfused ops (fused-vs-unfused equivalence over
 * every fusion pattern the advisor proposes, as ggml's test-backend-ops covers every op); a
 * deliberately wrong fused kernel is rejected while the run goes on; the fused model's outputs
 * equal the unfused model's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor/advisor.h"
#include "applier/applier-impl.h"
#include "runtime/runtime-impl.h"
#include "testutil.h"

/* x[8,4096] -> a = x*2 -> b = Sigmoid(a) -> c = a*b (swish-like chain) ; d = Relu(x) ;
 * e = Tanh(x) ; y = c + d ; outputs y, e. Elementwise chains and horizontal siblings. */
static fa_graph *elementwise_graph(fa_ctx *ctx)
{
    fa_graph *g = fa_graph_create("ew");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t d[2] = {8, 4096};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 2, d);
    fa_graph_add_input(ctx, g, x);
    int two = fa_graph_tensor(g, "two");
    float v = 2.0f;
    fa_tensor_set_shape(g->tensors[two], FA_DTYPE_FLOAT, 0, NULL);
    fa_tensor_set_data(ctx, g->tensors[two], &v, sizeof v);
    g->tensors[two]->flags |= FA_TENSOR_INITIALIZER;
    const char *i1[] = {"x", "two"}, *o1[] = {"a"}, *i2[] = {"a"}, *o2[] = {"b"}, *i3[] = {"a", "b"}, *o3[] = {"c"};
    const char *i4[] = {"x"}, *o4[] = {"d"}, *o5[] = {"e"}, *i6[] = {"c", "d"}, *o6[] = {"y"};
    fa_graph_add_node(ctx, g, "scale", "Mul", "", 2, i1, 1, o1);
    fa_graph_add_node(ctx, g, "sig", "Sigmoid", "", 1, i2, 1, o2);
    fa_graph_add_node(ctx, g, "gate", "Mul", "", 2, i3, 1, o3);
    fa_graph_add_node(ctx, g, "relu", "Relu", "", 1, i4, 1, o4);
    fa_graph_add_node(ctx, g, "tanh", "Tanh", "", 1, i4, 1, o5);
    fa_graph_add_node(ctx, g, "sum", "Add", "", 2, i6, 1, o6);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "e"));
    return g;
}

/* The apply options these tests run with: 3 rounds per block, 1 warm-up, 2 threads, the test's
 * kernel cache. */
static fa_apply_options quick_apply_options(void)
{
    fa_apply_options opt;
    fa_apply_options_default(&opt);
    opt.iters = 3;
    opt.warmup = 1;
    opt.threads = 2;
    opt.cache_dir = fa_test_path(fa_test_tmpdir(), "kcache");
    return opt;
}


/* The cpu advisor's plan of g (no register/occupancy gate); fails the test on an error. */
static fa_plan *advise_cpu(fa_ctx *ctx, const fa_graph *g)
{
    fa_advise_options ao = {0};
    ao.target = FA_TARGET_CPU;
    ao.no_gate = true;
    fa_plan *p = NULL;
    if (fa_advise(ctx, g, NULL, &ao, &p)) fail_msg("advise: %s", fa_ctx_errmsg(ctx));
    return p;
}

/* Returns whether the injected wrong kernel reached verification (a library epilogue refused
 * before it for running off the library's fast path cannot be checked). */
static bool apply_model(const char *model, int inject_first, int *kinds_seen)
{
    bool injected_checked = false;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    fa_status s;
    if (!strcmp(model, "elementwise")) {
        g = elementwise_graph(ctx);
        s = fa_graph_prepare(ctx, g, NULL);
    } else {
        s = fa_graph_load(ctx, model, NULL, &g);
    }
    if (s) fail_msg("%s: %s", model, fa_ctx_errmsg(ctx));
    fa_plan *p = advise_cpu(ctx, g);
    int injected = -1;
    for (int i = 0; i < p->n_clusters && inject_first; i++)
        if (p->clusters[i].status == FA_CLUSTER_PROPOSED) {
            injected = p->clusters[i].id;
            break;
        }
    fa_apply_options opt = quick_apply_options();
    opt.inject_wrong_cluster = injected;
    fa_apply_result *r = NULL;
    s = fa_apply(ctx, g, p, &opt, &r);
    if (s) fail_msg("%s: apply: %s", model, fa_ctx_errmsg(ctx));
    int proposed = 0;
    assert_int_equal(r->n_verdicts, p->n_clusters);
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        const fa_cluster_verdict *v = &r->verdicts[i];
        /* the plan is the advisor's record: fa_apply leaves it as proposed */
        assert_true(c->status == FA_CLUSTER_PROPOSED || c->status == FA_CLUSTER_REFUSED);
        if (c->status == FA_CLUSTER_REFUSED) {
            assert_int_equal(v->status, FA_CLUSTER_REFUSED);
            continue;
        }
        if (v->status == FA_CLUSTER_REFUSED) { /* the applier's refusal (slow library path) */
            assert_int_equal(v->refusal, FA_WHY_SLOW_LIBRARY_PATH);
            assert_true(v->max_rel_error < 0); /* refused before verification */
            continue;
        }
        proposed++;
        if (kinds_seen) kinds_seen[c->kind]++;
        printf("%s cluster %d %-18s %-30s %s (error %.2g): %s\n", model, c->id, fa_cluster_kind_name(c->kind),
               c->label ? c->label : "", fa_cluster_status_name(v->status), v->max_rel_error, v->reason ? v->reason : "");
        if (c->id == injected) {
            assert_int_equal(v->status, FA_CLUSTER_REJECTED_VERIFY);
            assert_true(v->max_rel_error > opt.tolerance);
            injected_checked = true;
        } else {
            if (v->status == FA_CLUSTER_REJECTED_VERIFY || v->status == FA_CLUSTER_REJECTED_ERROR)
                fail_msg("%s: cluster %d (%s) failed: %s", model, c->id, c->label ? c->label : "", v->reason);
            /* a reassociated reduction is verified by its rounding-error bound (applier/bound.c),
             * every other cluster by the tolerance */
            if (!v->reason || !strstr(v->reason, "within the rounding-error bound")) assert_true(v->max_rel_error <= opt.tolerance);
        }
    }
    assert_true(proposed > 0);
    /* the fused model computes the same function; accepted clusters only */
    assert_true(r->e2e_max_rel_error <= 1e-4);
    assert_true(r->baseline.median_ns > 0 && r->fused.median_ns > 0);
    assert_true(r->kernels_fused <= r->kernels_baseline);
    printf("%s: %d accepted, %d rejected; baseline %.3f ms, fused %.3f ms, speedup %.3f, e2e error %.2g\n", model,
           r->accepted, r->rejected, r->baseline.median_ns / 1e6, r->fused.median_ns / 1e6, r->speedup, r->e2e_max_rel_error);
    fa_apply_result_free(r);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
    return injected_checked;
}

/* A model with no cluster to fuse (one Conv) still differs from the baseline when the target
 * keeps blocked activation layouts (its executor's reorders): the end-to-end check judges that
 * model — a win, or its layouts dropped by the back-off (then it is the baseline) — instead of
 * calling it the baseline outright, which a torchvision EfficientNet with every cluster backed off
 * measured 1.6x faster than the baseline. */
static void test_layout_only_fused_model_is_judged_end_to_end(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("conv_only");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {1, 16, 14, 14}, wd[4] = {32, 16, 3, 3}, pads[4] = {1, 1, 1, 1};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    fa_test_add_const(ctx, g, "w", 4, wd, -0.3f, 0.3f, 7);
    const char *in[] = {"x", "w"}, *out[] = {"y"};
    fa_node *conv = fa_graph_add_node(ctx, g, "conv", "Conv", "", 2, in, 1, out);
    fa_node_add_attr_ints(g, conv, "pads", pads, 4);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    if (fa_graph_prepare(ctx, g, NULL)) fail_msg("%s", fa_ctx_errmsg(ctx));
    fa_plan *p = advise_cpu(ctx, g);
    fa_apply_options opt = quick_apply_options();
    opt.iters = 5;
    fa_apply_result *r = NULL;
    if (fa_apply(ctx, g, p, &opt, &r)) fail_msg("apply: %s", fa_ctx_errmsg(ctx));
    printf("conv only: %d clusters, %d accepted, %d reorders, win %d loss %d, layouts dropped %d (%.3f -> %.3f ms)\n",
           p->n_clusters, r->accepted, r->e2e_reorders, r->e2e_wins, r->e2e_loss, r->layouts_dropped,
           r->baseline.median_ns / 1e6, r->fused.median_ns / 1e6);
    assert_int_equal(r->accepted, 0);
    assert_false(r->e2e_loss); /* nothing is left to drop after the layouts */
    if (fa_cpu_blocked_layout() == FA_LAYOUT_PLAIN) { /* no blocked layout on this cpu: the fused model is the baseline */
        assert_int_equal(r->e2e_reorders, 0);
        assert_false(r->e2e_wins || r->layouts_dropped);
    } else if (r->e2e_wins) {
        assert_true(r->e2e_reorders >= 1); /* back to plain for the graph output at least */
        assert_false(r->layouts_dropped);
    } else { /* judged not faster: run plain in the end, the baseline */
        assert_true(r->layouts_dropped);
        assert_int_equal(r->e2e_reorders, 0);
    }
    assert_true(r->e2e_max_rel_error <= 1e-4);
    /* the whole model's rounds: whole blocks of --iters until settled, at most
     * FA_APPLY_REPEAT_MAX of them (the last one's rounds stored) */
    assert_true(r->n_samples >= opt.iters && r->n_samples <= opt.iters * FA_APPLY_REPEAT_MAX);
    assert_int_equal(r->n_samples % opt.iters, 0);
    /* the fused model's trace is its rounds' own record (issue 39: no runs added for it): one
     * iteration per round, every one of them, its iteration ranges beside the kernels */
    assert_non_null(r->fused_trace);
    assert_int_equal(r->fused_trace->n_iters, r->n_samples);
    int ranges = 0;
    for (size_t i = 0; i < r->fused_trace->n_acts; i++)
        ranges += r->fused_trace->acts[i].kind == FA_ACT_RANGE;
    assert_int_equal(ranges, r->n_samples);
    fa_apply_result_free(r);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* x[1,16,20,20] -> Conv(w0) -> Conv(w1, b1) -> Relu -> Conv(w2, b2) -> Relu -> Conv(w3) -> y: two
 * conv+relu clusters of one signature (same shapes, other weights) between two plain convs, so
 * that the whole fused plan gives both the same boundary layouts (a clusters judged in other
 * boundary layouts is another measurement and shares nothing). The second reuses the first's benchmark (issue 19)
 * and is still verified on its own values: with its fused kernel made wrong it is rejected by
 * verification, not given the first one's verdict. */
static void test_identical_clusters_share_one_benchmark_and_verify_each(void **st)
{
    (void)st;
    for (int wrong = 0; wrong < 2; wrong++) {
        fa_ctx *ctx = fa_ctx_create();
        fa_graph *g = fa_graph_create("twin");
        fa_graph_set_opset(ctx, g, "", 17);
        int64_t xd[4] = {1, 16, 20, 20}, wd[4] = {16, 16, 3, 3}, bd[1] = {16}, pads[4] = {1, 1, 1, 1};
        int x = fa_graph_tensor(g, "x");
        fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
        fa_graph_add_input(ctx, g, x);
        fa_test_add_const(ctx, g, "w1", 4, wd, -0.5f, 0.5f, 1);
        fa_test_add_const(ctx, g, "b1", 1, bd, -0.5f, 0.5f, 2);
        fa_test_add_const(ctx, g, "w2", 4, wd, -0.5f, 0.5f, 3);
        fa_test_add_const(ctx, g, "b2", 1, bd, -0.5f, 0.5f, 4);
        fa_test_add_const(ctx, g, "w0", 4, wd, -0.5f, 0.5f, 5);
        fa_test_add_const(ctx, g, "w3", 4, wd, -0.5f, 0.5f, 6);
        const char *i0[] = {"x", "w0"}, *o0[] = {"c0"};
        const char *i1[] = {"c0", "w1", "b1"}, *o1[] = {"c1"}, *i2[] = {"c1"}, *o2[] = {"r1"};
        const char *i3[] = {"r1", "w2", "b2"}, *o3[] = {"c2"}, *i4[] = {"c2"}, *o4[] = {"r2"};
        const char *i5[] = {"r2", "w3"}, *o5[] = {"y"};
        fa_node_add_attr_ints(g, fa_graph_add_node(ctx, g, "conv0", "Conv", "", 2, i0, 1, o0), "pads", pads, 4);
        fa_node_add_attr_ints(g, fa_graph_add_node(ctx, g, "conv1", "Conv", "", 3, i1, 1, o1), "pads", pads, 4);
        fa_graph_add_node(ctx, g, "relu1", "Relu", "", 1, i2, 1, o2);
        fa_node_add_attr_ints(g, fa_graph_add_node(ctx, g, "conv2", "Conv", "", 3, i3, 1, o3), "pads", pads, 4);
        fa_graph_add_node(ctx, g, "relu2", "Relu", "", 1, i4, 1, o4);
        fa_node_add_attr_ints(g, fa_graph_add_node(ctx, g, "conv3", "Conv", "", 2, i5, 1, o5), "pads", pads, 4);
        fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
        assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
        fa_plan *p = advise_cpu(ctx, g);
        int ids[2], n = 0;
        for (int i = 0; i < p->n_clusters && n < 2; i++)
            if (p->clusters[i].status == FA_CLUSTER_PROPOSED) ids[n++] = i;
        assert_int_equal(n, 2);
        fa_buf s1, s2;
        fa_buf_init(&s1);
        fa_buf_init(&s2);
        fa_cluster_signature(g, &p->clusters[ids[0]], &s1);
        fa_cluster_signature(g, &p->clusters[ids[1]], &s2);
        assert_string_equal(s1.data, s2.data);
        fa_buf_free(&s1);
        fa_buf_free(&s2);
        fa_apply_options opt = quick_apply_options();
        /* the one tried second (ranked by predicted saving, ties by id) reuses the first's */
        int order[2];
        order[0] = p->clusters[ids[0]].est_saving_ns >= p->clusters[ids[1]].est_saving_ns ? ids[0] : ids[1];
        order[1] = order[0] == ids[0] ? ids[1] : ids[0];
        if (wrong) opt.inject_wrong_cluster = p->clusters[order[1]].id;
        fa_apply_result *r = NULL;
        assert_int_equal(fa_apply(ctx, g, p, &opt, &r), FA_OK);
        const fa_cluster_verdict *v0 = &r->verdicts[order[0]], *v1 = &r->verdicts[order[1]];
        printf("twin%s: cluster %d %s: %s\ncluster %d %s: %s\n", wrong ? " (second wrong)" : "", p->clusters[order[0]].id,
               fa_cluster_status_name(v0->status), v0->reason, p->clusters[order[1]].id, fa_cluster_status_name(v1->status),
               v1->reason);
        assert_null(strstr(v0->reason, "benchmark shared"));
        if (!wrong) {
            char want[80];
            snprintf(want, sizeof want, "benchmark shared with cluster %d, same signature", p->clusters[order[0]].id);
            assert_non_null(strstr(v1->reason, want));
            assert_non_null(strstr(v1->reason, "verified on its own values"));
            /* the same verdict, unless the end-to-end back-off (the whole model, 3 noisy
             * iterations: it happened under ASan in CI) dropped one twin afterwards */
            if (!strstr(v0->reason, "end-to-end back-off") && !strstr(v1->reason, "end-to-end back-off"))
                assert_int_equal(v1->status, v0->status);
            assert_true(v1->measured_saving_ns == v0->measured_saving_ns);
            /* its own verification: an error of its own (equal to the first's where both are
             * exact, as a Relu epilogue on the same convolution is; the wrong twin below is the
             * proof that its verdict is not the first one's) */
            assert_true(v1->max_rel_error >= 0 && v1->max_rel_error <= opt.tolerance);
            /* both have the rounds the verdict rests on, the same ones */
            assert_int_equal(r->n_cluster_bench, 2);
            assert_int_equal(r->cluster_n_samples[0], r->cluster_n_samples[1]);
            assert_true(r->cluster_n_samples[0] >= opt.iters && r->cluster_n_samples[0] <= r->n_cluster_samples);
            /* taken in visits (docs/codegen.md "Visits"): at least FA_APPLY_VISITS of them, each
             * a block of at least FA_APPLY_VISIT_MIN_ROUNDS rounds, the reason saying how many */
            const char *at = strstr(v0->reason, "rounds taken in ");
            assert_non_null(at);
            int visits = atoi(at + strlen("rounds taken in "));
            assert_true(visits >= FA_APPLY_VISITS);
            assert_true(r->cluster_n_samples[0] >= (visits - 1) * FA_APPLY_VISIT_MIN_ROUNDS + 1); /* the last may be cut by the cap */
        } else {
            assert_int_equal(v1->status, FA_CLUSTER_REJECTED_VERIFY);
            assert_null(strstr(v1->reason, "benchmark shared"));
            assert_int_equal(r->n_cluster_bench, 1);
        }
        fa_apply_result_free(r);
        fa_plan_free(p);
        fa_graph_free(g);
        fa_ctx_free(ctx);
    }
}

/* x[1,16,28,28] -> Conv 3x3 (32) -> BN -> Relu -> r1 -> Conv 1x1 (32) -> BN -> Relu -> y. */
static fa_graph *conv_bn_relu_chain(fa_ctx *ctx)
{
    fa_graph *g = fa_graph_create("chain");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {1, 16, 28, 28}, w1[4] = {32, 16, 3, 3}, w2[4] = {32, 32, 1, 1}, c[1] = {32};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    fa_test_add_const(ctx, g, "w1", 4, w1, -0.2f, 0.2f, 1);
    fa_test_add_const(ctx, g, "w2", 4, w2, -0.3f, 0.3f, 2);
    for (int k = 1; k <= 2; k++) {
        char nm[4][16];
        const char *what[4] = {"sc", "sh", "mu", "var"};
        for (int j = 0; j < 4; j++) {
            snprintf(nm[j], sizeof nm[j], "%s%d", what[j], k);
            fa_test_add_const(ctx, g, nm[j], 1, c, j == 3 ? 0.5f : -0.5f, j == 3 ? 1.5f : 0.5f, 10 * k + j);
        }
        const char *conv_in[2] = {k == 1 ? "x" : "r1", k == 1 ? "w1" : "w2"}, *conv_out[1] = {k == 1 ? "c1" : "c2"};
        const char *bn_in[5] = {conv_out[0], nm[0], nm[1], nm[2], nm[3]}, *bn_out[1] = {k == 1 ? "n1" : "n2"};
        const char *relu_out[1] = {k == 1 ? "r1" : "y"};
        fa_node *cv = fa_graph_add_node(ctx, g, k == 1 ? "conv1" : "conv2", "Conv", "", 2, conv_in, 1, conv_out);
        const int64_t pads[4] = {1, 1, 1, 1};
        if (k == 1) fa_node_add_attr_ints(g, cv, "pads", pads, 4);
        fa_graph_add_node(ctx, g, k == 1 ? "bn1" : "bn2", "BatchNormalization", "", 5, bn_in, 1, bn_out);
        fa_graph_add_node(ctx, g, k == 1 ? "relu1" : "relu2", "Relu", "", 1, bn_out, 1, relu_out);
    }
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    return g;
}

/* The chain's clusters (conv+bn folds, conv+bn+relu epilogues) are judged with r1 — blocked
 * between the two convs in the whole fused plan — blocked on both sides: the first conv's
 * clusters leave it blocked, the second's read it blocked, and the reason says so; verification
 * still compares plain values. */
static void test_conv_chain_clusters_judged_in_the_plans_layout(void **s)
{
    (void)s;
    const char *bl = getenv("FA_BLOCKED_LAYOUT");
    if (bl && !strcmp(bl, "plain")) skip(); /* no blocked layout to judge in */
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = conv_bn_relu_chain(ctx);
    if (fa_graph_prepare(ctx, g, NULL)) fail_msg("%s", fa_ctx_errmsg(ctx));
    fa_plan *p = advise_cpu(ctx, g);
    fa_apply_options opt = quick_apply_options();
    fa_apply_result *r = NULL;
    if (fa_apply(ctx, g, p, &opt, &r)) fail_msg("apply: %s", fa_ctx_errmsg(ctx));
    int first = 0, second = 0;
    const char *L = fa_layout_name(fa_cpu_blocked_layout()); /* this machine's plan layout (nhwc, nChw16c, ...) */
    char out_r1[64], out_n1[64], in_x[64], in_r1[64];
    snprintf(out_r1, sizeof out_r1, "output 'r1' %s", L);
    snprintf(out_n1, sizeof out_n1, "output 'n1' %s", L);
    snprintf(in_x, sizeof in_x, "input 'x' %s", L);
    snprintf(in_r1, sizeof in_r1, "input 'r1' %s", L);
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        const fa_cluster_verdict *v = &r->verdicts[i];
        printf("chain cluster %d %-10s %-14s %s: %s\n", c->id, fa_cluster_kind_name(c->kind), c->label ? c->label : "",
               fa_cluster_status_name(v->status), v->reason ? v->reason : "");
        if (c->status != FA_CLUSTER_PROPOSED || v->status == FA_CLUSTER_NOT_TRIED) continue;
        assert_true(v->status != FA_CLUSTER_REJECTED_VERIFY && v->status != FA_CLUSTER_REJECTED_ERROR);
        if (v->status == FA_CLUSTER_REFUSED) continue; /* a slow library path, asked before any benchmark */
        const char *anchor = g->nodes[c->anchor]->name;
        assert_non_null(v->reason);
        assert_non_null(strstr(v->reason, "judged in the plan's layout: "));
        if (!strcmp(anchor, "conv1")) { /* its output (r1, or n1 for the fold alone) stays blocked */
            assert_true(strstr(v->reason, out_r1) || strstr(v->reason, out_n1));
            assert_null(strstr(v->reason, in_x)); /* the graph input is plain in the plan too */
            first++;
        } else if (!strcmp(anchor, "conv2")) {
            assert_non_null(strstr(v->reason, in_r1));
            second++;
        }
    }
    assert_true(first > 0 && second > 0);
    assert_true(r->e2e_max_rel_error <= 1e-4);
    fa_apply_result_free(r);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static int g_kinds[FA_CLUSTER_KIND_COUNT];

static void test_convnet_tiny_clusters_verify(void **s) { (void)s; apply_model("zoo:convnet-tiny", 0, g_kinds); }
static void test_elementwise_chain_and_horizontal_clusters_verify(void **s) { (void)s; apply_model("elementwise", 0, g_kinds); }
static void test_mlp_tiny_clusters_verify(void **s) { (void)s; apply_model("zoo:mlp-tiny", 0, g_kinds); }
static void test_bert_layer_clusters_verify(void **s) { (void)s; apply_model("zoo:bert-layer", 0, g_kinds); }
static void test_gpt2_block_clusters_verify(void **s) { (void)s; apply_model("zoo:gpt2-block", 0, g_kinds); }
static void test_mobilenetv2_clusters_verify(void **s) { (void)s; apply_model("zoo:mobilenetv2", 0, g_kinds); }

static void test_every_cluster_kind_was_verified(void **s)
{
    (void)s;
    assert_true(g_kinds[FA_CLUSTER_BN_FOLD] > 0);
    assert_true(g_kinds[FA_CLUSTER_EPILOGUE] > 0);
    assert_true(g_kinds[FA_CLUSTER_REDUCTION] > 0);
    assert_true(g_kinds[FA_CLUSTER_ELEMWISE_CHAIN] + g_kinds[FA_CLUSTER_HORIZONTAL] > 0);
}

static void test_wrong_fused_kernel_is_rejected_and_run_goes_on(void **s)
{
    (void)s;
    int checked = apply_model("zoo:convnet-tiny", 1, NULL);
    checked += apply_model("zoo:bert-layer", 1, NULL);
    checked += apply_model("elementwise", 1, NULL);
    assert_true(checked >= 2); /* the wrong kernel was caught by verification, not skipped */
}

/* A wrong kernel that reached the whole fused model (inject_e2e_cluster: the first proposed
 * cluster, carrying +1 on its output, whatever its own verdict) makes the plan a MISMATCH: the
 * end-to-end check compares every model output, claims neither a win nor a loss, and backs off
 * nothing (dropping clusters by saving would not find the culprit). */
static void test_wrong_whole_model_is_a_mismatch(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = elementwise_graph(ctx);
    if (fa_graph_prepare(ctx, g, NULL)) fail_msg("%s", fa_ctx_errmsg(ctx));
    fa_plan *p = advise_cpu(ctx, g);
    fa_apply_options opt = quick_apply_options();
    for (int i = 0; i < p->n_clusters && opt.inject_e2e_cluster < 0; i++)
        if (p->clusters[i].status == FA_CLUSTER_PROPOSED) opt.inject_e2e_cluster = p->clusters[i].id;
    assert_true(opt.inject_e2e_cluster >= 0);
    fa_apply_result *r = NULL;
    if (fa_apply(ctx, g, p, &opt, &r)) fail_msg("apply: %s", fa_ctx_errmsg(ctx));
    printf("injected cluster %d into the whole model: e2e error %.3g (limit %.3g), mismatch %d\n", opt.inject_e2e_cluster,
           r->e2e_max_rel_error, r->e2e_tolerance, r->e2e_mismatch);
    assert_true(r->e2e_tolerance >= FA_APPLY_E2E_TOLERANCE);
    assert_true(r->e2e_max_rel_error > r->e2e_tolerance);
    assert_true(r->e2e_mismatch);
    assert_false(r->e2e_wins);
    assert_false(r->e2e_loss);
    assert_int_equal(r->backed_off, 0);
    fa_apply_result_free(r);
    /* the same plan without the injection matches */
    opt.inject_e2e_cluster = -1;
    if (fa_apply(ctx, g, p, &opt, &r)) fail_msg("apply: %s", fa_ctx_errmsg(ctx));
    assert_true(r->e2e_max_rel_error <= r->e2e_tolerance);
    assert_false(r->e2e_mismatch);
    fa_apply_result_free(r);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convnet_tiny_clusters_verify),
        cmocka_unit_test(test_elementwise_chain_and_horizontal_clusters_verify),
        cmocka_unit_test(test_mlp_tiny_clusters_verify),
        cmocka_unit_test(test_bert_layer_clusters_verify),
        cmocka_unit_test(test_gpt2_block_clusters_verify),
        cmocka_unit_test(test_mobilenetv2_clusters_verify),
        cmocka_unit_test(test_every_cluster_kind_was_verified),
        cmocka_unit_test(test_wrong_fused_kernel_is_rejected_and_run_goes_on),
        cmocka_unit_test(test_layout_only_fused_model_is_judged_end_to_end),
        cmocka_unit_test(test_conv_chain_clusters_judged_in_the_plans_layout),
        cmocka_unit_test(test_identical_clusters_share_one_benchmark_and_verify_each),
        cmocka_unit_test(test_wrong_whole_model_is_a_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
