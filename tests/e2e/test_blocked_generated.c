/* tests/e2e/test_blocked_generated — generated elementwise kernels on the fused plan's blocked
 * layout (docs/runtime.md "Generated kernels on the blocked layout"): a small CNN with a
 * squeeze-excitation gate (conv -> GlobalAveragePool -> conv -> HardSigmoid -> Mul) and a
 * decomposed HardSwish (conv -> x · HardSigmoid(x) -> conv) on 20 channels (a padded tail in
 * nChw8c and nChw16c). The chains are generated for the layout the plan keeps around them
 * (fa_layout_of_generated), so the fused graph's executor plans no reorder around them; its
 * outputs equal the unfused graph's, and the applier verifies every chain. The suite runs once
 * per layout FA_BLOCKED_LAYOUT forces (tests/CMakeLists.txt). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor/advisor.h"
#include "applier/applier-impl.h"
#include "runtime/runtime-impl.h"
#include "testutil.h"


static fa_node *node(fa_ctx *ctx, fa_graph *g, const char *name, const char *op, int n_in, const char *a, const char *b,
                     const char *c, const char *out)
{
    const char *ins[3] = {a, b, c}, *outs[1] = {out};
    fa_node *n = fa_graph_add_node(ctx, g, name, op, "", n_in, ins, 1, outs);
    assert_non_null(n);
    return n;
}

/* x[1,3,12,12] -> conv0 3x3 (20) -> a; SE: GlobalAveragePool(a) -> conv_se 1x1 (20) -> s ->
 * HardSigmoid -> hs; m = a · hs; conv1 3x3 (20) -> b; hb = HardSigmoid(b, 1/6, 1/2);
 * hsw = b · hb (HardSwish); conv2 1x1 (8) -> y. */
static fa_graph *se_cnn(fa_ctx *ctx)
{
    fa_graph *g = fa_graph_create("se_cnn");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {1, 3, 12, 12}, w0[4] = {20, 3, 3, 3}, wse[4] = {20, 20, 1, 1}, w1[4] = {20, 20, 3, 3},
            w2[4] = {8, 20, 1, 1}, b20[1] = {20};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    fa_test_add_const(ctx, g, "w0", 4, w0, -0.4f, 0.4f, 1);
    fa_test_add_const(ctx, g, "wse", 4, wse, -0.5f, 0.5f, 2);
    fa_test_add_const(ctx, g, "bse", 1, b20, -0.5f, 0.5f, 3);
    fa_test_add_const(ctx, g, "w1", 4, w1, -0.2f, 0.2f, 4);
    fa_test_add_const(ctx, g, "w2", 4, w2, -0.3f, 0.3f, 5);
    const int64_t pads[4] = {1, 1, 1, 1};
    fa_node_add_attr_ints(g, node(ctx, g, "conv0", "Conv", 2, "x", "w0", NULL, "a"), "pads", pads, 4);
    node(ctx, g, "gap", "GlobalAveragePool", 1, "a", NULL, NULL, "g");
    node(ctx, g, "conv_se", "Conv", 3, "g", "wse", "bse", "s");
    node(ctx, g, "hsig", "HardSigmoid", 1, "s", NULL, NULL, "hs");
    node(ctx, g, "scale", "Mul", 2, "a", "hs", NULL, "m");
    fa_node_add_attr_ints(g, node(ctx, g, "conv1", "Conv", 2, "m", "w1", NULL, "b"), "pads", pads, 4);
    fa_node *hb = node(ctx, g, "hsig2", "HardSigmoid", 1, "b", NULL, NULL, "hb");
    fa_node_add_attr_float(g, hb, "alpha", 1.0f / 6.0f);
    node(ctx, g, "hswish", "Mul", 2, "b", "hb", NULL, "hsw");
    node(ctx, g, "conv2", "Conv", 2, "hsw", "w2", NULL, "y");
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "b")); /* read by the caller too: no conv1 epilogue */
    if (fa_graph_prepare(ctx, g, NULL)) fail_msg("prepare: %s", fa_ctx_errmsg(ctx));
    return g;
}

static fa_plan *advise_cpu(fa_ctx *ctx, const fa_graph *g)
{
    fa_advise_options ao = {0};
    ao.target = FA_TARGET_CPU;
    ao.no_gate = true;
    fa_plan *p = NULL;
    if (fa_advise(ctx, g, NULL, &ao, &p)) fail_msg("advise: %s", fa_ctx_errmsg(ctx));
    return p;
}

/* The applier over plan p with a few short rounds on 2 threads (the verdicts, not the timings,
 * are what these tests read). */
static fa_apply_result *apply_short(fa_ctx *ctx, const fa_graph *g, fa_plan *p)
{
    fa_apply_options opt;
    fa_apply_options_default(&opt);
    opt.iters = 3;
    opt.warmup = 1;
    opt.threads = 2;
    opt.cache_dir = fa_test_path(fa_test_tmpdir(), "kcache");
    fa_apply_result *r = NULL;
    if (fa_apply(ctx, g, p, &opt, &r)) fail_msg("apply: %s", fa_ctx_errmsg(ctx));
    return r;
}

/* The provider of the test's fused graph: each FusedKernel node its cluster's compiled kernel. */
typedef struct provided {
    const fa_target_iface *t;
    const fa_plan *p;
    const int *ci;
    const fa_generated *gen;
    int n;
} provided;

static fa_status provide(void *user, fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_custom_kernel *out, bool *ok)
{
    const provided *pv = user;
    (void)g;
    *ok = false;
    if (strcmp(n->op_type, "FusedKernel")) return FA_OK;
    int64_t cid = fa_node_attr_int(n, "cluster", -1);
    for (int k = 0; k < pv->n; k++)
        if (pv->p->clusters[pv->ci[k]].id == cid) {
            assert_non_null(pv->gen[k].bin);
            *ok = true;
            return fa_target_fused_kernel(ctx, pv->t, pv->gen[k].bin, out);
        }
    return fa_ctx_error(ctx, FA_ERR_INTERNAL, "no kernel for cluster %lld", (long long)cid);
}

static double max_rel(const fa_value *a, const fa_value *b)
{
    int64_t n = fa_value_numel(a);
    assert_int_equal(n, fa_value_numel(b));
    double md = 0, mb = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = ((const float *)a->data)[i], y = ((const float *)b->data)[i];
        if (isnan(x) || isnan(y)) return INFINITY;
        md = fmax(md, fabs(x - y));
        mb = fmax(mb, fabs(y));
    }
    return md / fmax(mb, 1e-12);
}

/* The reorders one run executes, by the name the executor gives their node ("reorder(TENSOR)"). */
typedef struct reorders {
    char name[16][64];
    int n;
} reorders;

static void on_kernel(void *user, const fa_node *n, const char *kernel)
{
    reorders *r = user;
    (void)kernel;
    if (strcmp(n->op_type, "Reorder") || r->n >= 16) return;
    snprintf(r->name[r->n++], sizeof r->name[0], "%s", n->name);
}

/* The two chains are generated for the plan's blocked layout, and the fused graph with them runs
 * with no reorder but the graph outputs' (conv2 and conv1 write them blocked; the caller reads them plain), the
 * chains' inputs and outputs in that layout; the outputs equal the unfused graph's. */
static void test_chains_sit_between_blocked_convs_without_reorders(void **s)
{
    (void)s;
    fa_layout L = fa_cpu_blocked_layout();
    if (L == FA_LAYOUT_PLAIN) skip(); /* FA_BLOCKED_LAYOUT=plain or no oneDNN: nothing is blocked */
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = se_cnn(ctx);
    fa_plan *p = advise_cpu(ctx, g);
    int ci[8], n = 0;
    for (int i = 0; i < p->n_clusters && n < 8; i++) {
        const fa_cluster *c = &p->clusters[i];
        printf("cluster %d %s %s: %s\n", c->id, fa_cluster_kind_name(c->kind), c->label ? c->label : "",
               fa_cluster_status_name(c->status));
        if (c->kind == FA_CLUSTER_ELEMWISE_CHAIN && c->status == FA_CLUSTER_PROPOSED) ci[n++] = i;
    }
    assert_int_equal(n, 2); /* HardSigmoid -> Mul twice */
    const fa_target_iface *t = NULL;
    assert_int_equal(fa_target_resolve(ctx, FA_TARGET_CPU, &t), FA_OK);
    fa_generated gen[8];
    fa_fused_compile_options co = {fa_test_path(fa_test_tmpdir(), "kcache"), 0, NULL};
    assert_int_equal(fa_apply_generate_batch(ctx, t, g, p, ci, n, fa_cpu_blocked_layout(), &co, NULL, gen), FA_OK);
    int ids[8];
    for (int k = 0; k < n; k++) {
        if (!gen[k].bin) fail_msg("cluster %d: %s", p->clusters[ci[k]].id, gen[k].why);
        assert_int_equal(gen[k].layout, L);
        ids[k] = p->clusters[ci[k]].id;
    }
    fa_graph *gf = NULL;
    assert_int_equal(fa_fused_graph(ctx, g, p, NULL, ids, n, &gf), FA_OK);
    provided pv = {t, p, ci, gen, n};
    fa_exec_options fo = {.target = FA_TARGET_CPU, .threads = 2, .blocked_layouts = true, .provider = provide, .provider_user = &pv};
    fa_exec_options uo = {.target = FA_TARGET_CPU, .threads = 2};
    fa_exec *ef = NULL, *eu = NULL;
    if (fa_exec_create(ctx, gf, &fo, &ef)) fail_msg("fused exec: %s", fa_ctx_errmsg(ctx));
    if (fa_exec_create(ctx, g, &uo, &eu)) fail_msg("unfused exec: %s", fa_ctx_errmsg(ctx));
    int fk = 0;
    for (int k = 0; k < gf->n_topo; k++) {
        const fa_node *fn = gf->nodes[gf->topo[k]];
        if (strcmp(fn->op_type, "FusedKernel")) continue;
        fk++;
        for (int i = 0; i < fn->n_inputs; i++) /* the activations it reads (a, hs's source s; b) in L */
            if (!(gf->tensors[fn->inputs[i]]->flags & FA_TENSOR_CONST))
                assert_int_equal(fa_exec_tensor_layout(ef, fn->inputs[i]), L);
        assert_int_equal(fa_exec_tensor_layout(ef, fn->outputs[0]), L);
    }
    assert_int_equal(fk, 2);
    /* the only reorders: y and b back to plain for the caller, and x into the layout where the
     * first convolution reads it so (nhwc); a chain on plain tensors took two or three more (its
     * blocked inputs a, s or b to plain, its output m or hsw back for the next conv) */
    assert_int_equal(fa_exec_fill_inputs(ctx, ef, 7), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(ctx, eu, 7), FA_OK);
    reorders seen = {0};
    fa_exec_observer obs = {&seen, on_kernel, NULL};
    assert_int_equal(fa_exec_run(ctx, ef, &obs), FA_OK);
    assert_int_equal(seen.n, fa_exec_reorders(ef));
    for (int k = 0; k < seen.n; k++) {
        printf("%s\n", seen.name[k]);
        assert_true(!strcmp(seen.name[k], "reorder(y)") || !strcmp(seen.name[k], "reorder(b)") ||
                    !strcmp(seen.name[k], "reorder(x)"));
    }
    assert_int_equal(fa_exec_run(ctx, eu, NULL), FA_OK);
    double err = max_rel(fa_exec_output(ef, 0), fa_exec_output(eu, 0));
    printf("%s: fused vs unfused max rel error %.3g, %d reorder(s)\n", fa_layout_name(L), err, seen.n);
    assert_true(err <= 1e-5);
    fa_exec_free(ef);
    fa_exec_free(eu);
    fa_graph_free(gf);
    for (int k = 0; k < n; k++)
        if (gen[k].same_as < 0) fa_target_fused_free(t, gen[k].bin);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* Through the applier: both chains are verified against the unfused ops (whatever the judge
 * then decides on this loaded machine) and judged with their boundaries in the plan's layout. */
static void test_applier_verifies_the_blocked_chains(void **s)
{
    (void)s;
    fa_layout L = fa_cpu_blocked_layout();
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = se_cnn(ctx);
    fa_plan *p = advise_cpu(ctx, g);
    fa_apply_result *r = apply_short(ctx, g, p);
    int chains = 0;
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        const fa_cluster_verdict *v = &r->verdicts[i];
        if (c->kind != FA_CLUSTER_ELEMWISE_CHAIN || c->status != FA_CLUSTER_PROPOSED) continue;
        printf("chain %d %s: %s: %s\n", c->id, c->label ? c->label : "", fa_cluster_status_name(v->status),
               v->reason ? v->reason : "");
        assert_true(v->status != FA_CLUSTER_REJECTED_VERIFY && v->status != FA_CLUSTER_REJECTED_ERROR &&
                    v->status != FA_CLUSTER_NOT_TRIED && v->status != FA_CLUSTER_REFUSED);
        const char *out = g->tensors[c->outputs[0]]->name;
        char want[64];
        snprintf(want, sizeof want, "output '%s' %s", out, fa_layout_name(L));
        if (L != FA_LAYOUT_PLAIN) /* the gate's output (m, hsw) judged where the kernel leaves it: blocked */
            assert_non_null(strstr(v->reason, want));
        chains++;
    }
    assert_int_equal(chains, 2);
    printf("accepted %d, end to end max rel error %.3g, %d reorder(s)\n", r->accepted, r->e2e_max_rel_error, r->e2e_reorders);
    assert_false(r->e2e_mismatch);
    fa_apply_result_free(r);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* The unfused graph on the blocked layouts (the fused plan with no cluster kept): b, conv1's
 * blocked output, is read plain by HardSigmoid and returned plain to the caller — one shared
 * reorder — and the caller's copy must survive the rest of the run (it was given to later
 * tensors' bytes: b differed by 119 %). */
static void test_blocked_tensor_read_plain_and_returned_keeps_its_copy(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = se_cnn(ctx);
    fa_exec_options fo = {.target = FA_TARGET_CPU, .threads = 2, .blocked_layouts = true};
    fa_exec_options uo = {.target = FA_TARGET_CPU, .threads = 2};
    fa_exec *ef = NULL, *eu = NULL;
    assert_int_equal(fa_exec_create(ctx, g, &fo, &ef), FA_OK);
    assert_int_equal(fa_exec_create(ctx, g, &uo, &eu), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(ctx, ef, 7), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(ctx, eu, 7), FA_OK);
    assert_int_equal(fa_exec_run(ctx, ef, NULL), FA_OK);
    assert_int_equal(fa_exec_run(ctx, eu, NULL), FA_OK);
    for (int o = 0; o < g->n_outputs; o++) {
        double err = max_rel(fa_exec_output(ef, o), fa_exec_output(eu, o));
        printf("output %s: blocked vs plain max rel error %.3g (%d reorders)\n", g->tensors[g->outputs[o]]->name, err,
               fa_exec_reorders(ef));
        assert_true(err <= 1e-5);
    }
    fa_exec_free(ef);
    fa_exec_free(eu);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* The advisor's probe times each chain as the plan will run it: its inputs and its output in
 * the plan's layout (no reorder inside its fused sub-graph), so a gate between blocked convs is
 * not predicted a loss for reorders the plan no longer has. */
static void test_probe_times_the_chains_in_the_plans_layout(void **s)
{
    (void)s;
    fa_layout L = fa_cpu_blocked_layout();
    if (L == FA_LAYOUT_PLAIN) skip();
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = se_cnn(ctx);
    fa_plan *p = advise_cpu(ctx, g);
    fa_kernel_probe *pr = NULL;
    assert_int_equal(fa_kernel_probe_create(ctx, g, FA_TARGET_CPU, 2, 0, &pr), FA_OK);
    assert_int_equal(fa_kernel_probe_set_cache(ctx, pr, fa_test_path(fa_test_tmpdir(), "kcache"), 0), FA_OK);
    int probed = 0;
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        if (c->kind != FA_CLUSTER_ELEMWISE_CHAIN) continue;
        fa_buf sig;
        fa_buf_init(&sig);
        fa_cluster_signature(g, c, &sig);
        fa_fused_probe_result r;
        memset(&r, 0, sizeof r);
        assert_true(fa_kernel_probe_fused(pr, g, p, i, sig.data, &r));
        printf("cluster %d: %s\n", c->id, r.what);
        char want[96];
        int n_act = 0;
        for (int k = 0; k < c->n_inputs; k++) n_act += !(g->tensors[c->inputs[k]]->flags & FA_TENSOR_CONST);
        want[0] = 0;
        for (int k = 0; k <= n_act; k++) /* every activation it reads, then its output */
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", k ? "," : "", fa_layout_name(L));
        char lays[128];
        snprintf(lays, sizeof lays, "on boundary layouts %s ran", want);
        assert_non_null(strstr(r.what, lays));
        fa_buf_free(&sig);
        probed++;
    }
    assert_int_equal(probed, 2);
    fa_kernel_probe_free(pr);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* No convolution, no blocked region: q = MaxPool(x) (a pool the cpu target could run blocked) ->
 * HardSigmoid -> Mul(q, ·) is generated plain, as the executor runs the pool plain — a chain
 * generated blocked there would add the reorders it exists to remove. */
static void test_chain_without_a_convolution_stays_plain(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("no_conv");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t d[4] = {1, 20, 6, 6};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, d);
    fa_graph_add_input(ctx, g, x);
    const int64_t k2[2] = {2, 2};
    fa_node_add_attr_ints(g, node(ctx, g, "pool", "MaxPool", 1, "x", NULL, NULL, "q"), "kernel_shape", k2, 2);
    node(ctx, g, "hsig", "HardSigmoid", 1, "q", NULL, NULL, "hq");
    node(ctx, g, "gate", "Mul", 2, "q", "hq", NULL, "y");
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    if (fa_graph_prepare(ctx, g, NULL)) fail_msg("prepare: %s", fa_ctx_errmsg(ctx));
    fa_plan *p = advise_cpu(ctx, g);
    int ci[4], n = 0;
    for (int i = 0; i < p->n_clusters && n < 4; i++)
        if (p->clusters[i].kind == FA_CLUSTER_ELEMWISE_CHAIN && p->clusters[i].status == FA_CLUSTER_PROPOSED) ci[n++] = i;
    assert_true(n >= 1);
    const fa_target_iface *t = NULL;
    assert_int_equal(fa_target_resolve(ctx, FA_TARGET_CPU, &t), FA_OK);
    fa_generated gen[4];
    fa_fused_compile_options co = {fa_test_path(fa_test_tmpdir(), "kcache"), 0, NULL};
    assert_int_equal(fa_apply_generate_batch(ctx, t, g, p, ci, n, fa_cpu_blocked_layout(), &co, NULL, gen), FA_OK);
    for (int k = 0; k < n; k++) {
        assert_non_null(gen[k].bin);
        assert_int_equal(gen[k].layout, FA_LAYOUT_PLAIN);
        if (gen[k].same_as < 0) fa_target_fused_free(t, gen[k].bin);
    }
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* A BatchNormalization no convolution can take (after an Add, as after DenseNet's Concats: a
 * pre-activation BN + ReLU) and a BatchNorm1d on [N, C]: x[1,3,12,12] -> conv0 3x3 (24) -> a,
 * conv1 3x3 (24) -> c; Add(a, c) -> k (24 channels: a padded tail in nChw16c) -> BN -> ReLU ->
 * conv2 1x1 (8) -> y;
 * v[5, 6] -> BN -> ReLU -> z. Both BN + ReLU chains are generated (codegen lower_bn: the [C]
 * parameters read per channel) — the first in the plan's layout — and verified against the
 * unfused ops; the fused model's outputs match. Before, "BatchNormalization has no expression
 * emitter" left them unfused. */
static void test_batchnorm_chains_are_generated_and_verified(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("bn_chain");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {1, 3, 12, 12}, w0[4] = {24, 3, 3, 3}, w1[4] = {24, 3, 3, 3}, w2[4] = {8, 24, 1, 1}, c24[1] = {24},
            vd[2] = {5, 6}, c6[1] = {6};
    int x = fa_graph_tensor(g, "x"), v = fa_graph_tensor(g, "v");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_tensor_set_shape(g->tensors[v], FA_DTYPE_FLOAT, 2, vd);
    fa_graph_add_input(ctx, g, x);
    fa_graph_add_input(ctx, g, v);
    fa_test_add_const(ctx, g, "w0", 4, w0, -0.4f, 0.4f, 11);
    fa_test_add_const(ctx, g, "w1", 4, w1, -0.4f, 0.4f, 12);
    fa_test_add_const(ctx, g, "w2", 4, w2, -0.3f, 0.3f, 13);
    fa_test_add_const(ctx, g, "sc", 1, c24, 0.5f, 1.5f, 14);
    fa_test_add_const(ctx, g, "sh", 1, c24, -0.5f, 0.5f, 15);
    fa_test_add_const(ctx, g, "mu", 1, c24, -0.3f, 0.3f, 16);
    fa_test_add_const(ctx, g, "var", 1, c24, 0.2f, 2.0f, 17);
    fa_test_add_const(ctx, g, "sc6", 1, c6, 0.5f, 1.5f, 18);
    fa_test_add_const(ctx, g, "sh6", 1, c6, -0.5f, 0.5f, 19);
    fa_test_add_const(ctx, g, "mu6", 1, c6, -0.3f, 0.3f, 20);
    fa_test_add_const(ctx, g, "var6", 1, c6, 0.2f, 2.0f, 21);
    const int64_t pads[4] = {1, 1, 1, 1};
    fa_node_add_attr_ints(g, node(ctx, g, "conv0", "Conv", 2, "x", "w0", NULL, "a"), "pads", pads, 4);
    fa_node_add_attr_ints(g, node(ctx, g, "conv1", "Conv", 2, "x", "w1", NULL, "c"), "pads", pads, 4);
    node(ctx, g, "add", "Add", 2, "a", "c", NULL, "k");
    const char *bi[5] = {"k", "sc", "sh", "mu", "var"}, *bo[1] = {"kb"}, *b6i[5] = {"v", "sc6", "sh6", "mu6", "var6"},
               *b6o[1] = {"vb"};
    fa_node *bn = fa_graph_add_node(ctx, g, "bn", "BatchNormalization", "", 5, bi, 1, bo);
    assert_non_null(bn);
    fa_node_add_attr_float(g, bn, "epsilon", 1e-3f);
    assert_non_null(fa_graph_add_node(ctx, g, "bn1d", "BatchNormalization", "", 5, b6i, 1, b6o));
    node(ctx, g, "relu", "Relu", 1, "kb", NULL, NULL, "kr");
    node(ctx, g, "relu1d", "Relu", 1, "vb", NULL, NULL, "z");
    node(ctx, g, "conv2", "Conv", 2, "kr", "w2", NULL, "y");
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "z"));
    if (fa_graph_prepare(ctx, g, NULL)) fail_msg("prepare: %s", fa_ctx_errmsg(ctx));
    fa_plan *p = advise_cpu(ctx, g);
    fa_apply_result *r = apply_short(ctx, g, p);
    int chains = 0;
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        const fa_cluster_verdict *vd_ = &r->verdicts[i];
        printf("cluster %d %s %s: %s: %s\n", c->id, fa_cluster_kind_name(c->kind), c->label ? c->label : "",
               fa_cluster_status_name(vd_->status), vd_->reason ? vd_->reason : "");
        bool has_bn = false;
        for (int m = 0; m < c->n_members; m++) has_bn |= !strcmp(g->nodes[c->members[m]]->op_type, "BatchNormalization");
        if (c->kind != FA_CLUSTER_ELEMWISE_CHAIN || !has_bn) continue;
        assert_true(vd_->status != FA_CLUSTER_REJECTED_VERIFY && vd_->status != FA_CLUSTER_REJECTED_ERROR &&
                    vd_->status != FA_CLUSTER_NOT_TRIED && vd_->status != FA_CLUSTER_REFUSED);
        assert_true(vd_->max_rel_error >= 0 && vd_->max_rel_error <= 1e-5);
        /* the 4-D chain reads the convolutions' blocked outputs: generated for the plan's layout */
        if (g->tensors[c->outputs[0]]->rank == 4 && fa_cpu_blocked_layout() != FA_LAYOUT_PLAIN)
            assert_non_null(strstr(vd_->reason, fa_layout_name(fa_cpu_blocked_layout())));
        chains++;
    }
    assert_int_equal(chains, 2);
    assert_false(r->e2e_mismatch);
    fa_apply_result_free(r);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* A node with more inputs than the copies' old fixed arrays held (64): x[1,1,4,4] -> 70 Negs ->
 * Concat of 70 -> Relu -> Sigmoid -> y. The applier builds the fused graph around the Relu ->
 * Sigmoid chain, copying the 70-input Concat as it is; before, it refused ("too many
 * inputs/outputs to copy") and the plan could not be applied. */
static void test_wide_concat_is_copied_into_the_fused_graph(void **s)
{
    (void)s;
    enum { K = 70 };
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("wide_concat");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {1, 1, 4, 4};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    static char names[K][16];
    const char *ins[K];
    for (int k = 0; k < K; k++) {
        snprintf(names[k], sizeof names[k], "n%d", k);
        char nn[24];
        snprintf(nn, sizeof nn, "neg%d", k);
        node(ctx, g, nn, k % 2 ? "Neg" : "Abs", 1, "x", NULL, NULL, names[k]);
        ins[k] = names[k];
    }
    const char *outs[1] = {"cat"};
    fa_node *cat = fa_graph_add_node(ctx, g, "cat", "Concat", "", K, ins, 1, outs);
    assert_non_null(cat);
    fa_node_add_attr_int(g, cat, "axis", 1);
    node(ctx, g, "relu", "Relu", 1, "cat", NULL, NULL, "r");
    node(ctx, g, "sig", "Sigmoid", 1, "r", NULL, NULL, "y");
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    if (fa_graph_prepare(ctx, g, NULL)) fail_msg("prepare: %s", fa_ctx_errmsg(ctx));
    fa_plan *p = advise_cpu(ctx, g);
    int chains = 0;
    for (int i = 0; i < p->n_clusters; i++) chains += p->clusters[i].kind == FA_CLUSTER_ELEMWISE_CHAIN;
    assert_true(chains >= 1);
    fa_apply_result *r = apply_short(ctx, g, p);
    for (int i = 0; i < p->n_clusters; i++)
        assert_int_not_equal(r->verdicts[i].status, FA_CLUSTER_REJECTED_ERROR);
    assert_false(r->e2e_mismatch);
    fa_apply_result_free(r);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocked_tensor_read_plain_and_returned_keeps_its_copy),
        cmocka_unit_test(test_chains_sit_between_blocked_convs_without_reorders),
        cmocka_unit_test(test_applier_verifies_the_blocked_chains),
        cmocka_unit_test(test_probe_times_the_chains_in_the_plans_layout),
        cmocka_unit_test(test_chain_without_a_convolution_stays_plain),
        cmocka_unit_test(test_batchnorm_chains_are_generated_and_verified),
        cmocka_unit_test(test_wide_concat_is_copied_into_the_fused_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
