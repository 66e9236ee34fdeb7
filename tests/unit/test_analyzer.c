/* tests/unit/test_analyzer — intermediate traffic per edge on a hand-built graph with known
 * sizes; chains are real producer→consumer edges on every corpus light model and zoo model;
 * Conv→BatchNormalization→Relu chains are found in both ResNet-50s; the idle gaps per iteration
 * do not depend on the order the kernel records were stored in. */
#include <stdio.h>
#include <string.h>

#include "analyzer/analyzer.h"
#include "testutil.h"

static fa_ceilings fake_ceilings(void)
{
    /* fixed ceilings so placement does not depend on this machine's load */
    fa_ceilings c;
    memset(&c, 0, sizeof c);
    c.device_key = "test";
    c.mem_bw_gbs = 10;
    c.peak_gflops = 100;
    c.launch_ns = 0;
    return c;
}

static fa_store *open_tmp_store(fa_ctx *ctx, const char *name)
{
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, fa_test_path(fa_test_tmpdir(), name), &st), FA_OK);
    return st;
}

/* x[1,1000] -> Relu a -> Sigmoid b -> Add(b, x) c ; a also a graph output? no. */
static void test_edge_traffic_is_tensor_bytes_written_plus_read(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("edges");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 17), FA_OK);
    int64_t d[2] = {1, 1000};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 2, d);
    fa_graph_add_input(ctx, g, x);
    const char *i1[] = {"x"}, *o1[] = {"a"}, *i2[] = {"a"}, *o2[] = {"b"}, *i3[] = {"b", "a"}, *o3[] = {"c"};
    assert_non_null(fa_graph_add_node(ctx, g, "relu", "Relu", "", 1, i1, 1, o1));
    assert_non_null(fa_graph_add_node(ctx, g, "sig", "Sigmoid", "", 1, i2, 1, o2));
    assert_non_null(fa_graph_add_node(ctx, g, "add", "Add", "", 2, i3, 1, o3));
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "c"));
    assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    fa_store *st = open_tmp_store(ctx, "edges.db");
    int64_t run;
    assert_int_equal(fa_test_store_graph_run(ctx, st, g, 3, &run), FA_OK);
    fa_ceilings c = fake_ceilings();
    fa_analysis *a = NULL;
    assert_int_equal(fa_analyze_run(ctx, st, run, &c, &a), FA_OK);
    /* edges: a->sig, a->add, b->add: each 4000 bytes written + 4000 read back */
    assert_int_equal(a->n_edges, 3);
    for (int i = 0; i < a->n_edges; i++) {
        assert_int_equal(a->edges[i].tensor_bytes, 4000);
        assert_int_equal(a->edges[i].traffic_bytes, 8000);
        const char *tn = a->edges[i].tensor_name;
        assert_int_equal(a->edges[i].n_consumers, !strcmp(tn, "a") ? 2 : 1);
    }
    assert_int_equal(a->intermediate_bytes, 24000);
    assert_int_equal(fa_analysis_save(ctx, st, a), FA_OK);
    fa_analysis_free(a);
    fa_store_close(st);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* The idle gaps and kernels per iteration do not depend on the order the kernel records were
 * stored in: a cpu run stores them in start order (the in-place check keeps them), a trace of
 * several streams need not (the records reversed here take the in-place heapsort). */
static void test_gaps_do_not_depend_on_record_order(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_zoo_build(ctx, "convnet-tiny", 1, &g), FA_OK);
    assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1};
    assert_int_equal(fa_exec_create(ctx, g, &eo, &e), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(ctx, e, 1), FA_OK);
    fa_trace *t = NULL;
    assert_int_equal(fa_collect_cpu(ctx, e, g, 1, 4, NULL, NULL, &t), FA_OK);
    fa_store *st = open_tmp_store(ctx, "gap_order.db");
    int64_t in_order = 0, reversed = 0;
    assert_int_equal(fa_test_store_graph_trace(ctx, st, g, t, &in_order), FA_OK);
    for (size_t i = 0, j = t->n_acts ? t->n_acts - 1 : 0; i < j; i++, j--) {
        fa_activity x = t->acts[i];
        t->acts[i] = t->acts[j];
        t->acts[j] = x;
    }
    assert_int_equal(fa_test_store_graph_trace(ctx, st, g, t, &reversed), FA_OK);
    fa_ceilings c = fake_ceilings();
    fa_analysis *a = NULL, *b = NULL;
    assert_int_equal(fa_analyze_run(ctx, st, in_order, &c, &a), FA_OK);
    assert_int_equal(fa_analyze_run(ctx, st, reversed, &c, &b), FA_OK);
    assert_true(a->kernels_per_iter > 1);
    assert_true(a->gap_ns >= 0);
    assert_int_equal(a->gap_ns, b->gap_ns);
    assert_int_equal(a->kernels_per_iter, b->kernels_per_iter);
    fa_analysis_free(a);
    fa_analysis_free(b);
    fa_store_close(st);
    fa_trace_free(t);
    fa_exec_free(e);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static bool is_edge(const fa_analysis *a, int p, int c)
{
    for (int i = 0; i < a->n_edges; i++)
        if (a->edges[i].producer == p && a->edges[i].consumer == c) return true;
    return false;
}

static fa_analysis *analyze_model(fa_ctx *ctx, fa_store *st, const char *model)
{
    int64_t run;
    fa_status s = fa_test_store_run(ctx, st, model, 2, &run);
    if (s) fail_msg("%s: %s", model, fa_ctx_errmsg(ctx));
    fa_ceilings c = fake_ceilings();
    fa_analysis *a = NULL;
    assert_int_equal(fa_analyze_run(ctx, st, run, &c, &a), FA_OK);
    for (int k = 0; k < a->n_chains; k++) {
        const fa_an_chain *ch = &a->chains[k];
        assert_true(ch->n_members >= 2);
        for (int m = 0; m + 1 < ch->n_members; m++)
            if (!is_edge(a, ch->members[m], ch->members[m + 1]))
                fail_msg("%s: chain %d members %d -> %d are not a producer->consumer edge", model, k, ch->members[m],
                         ch->members[m + 1]);
        /* the bound never claims the chain's arithmetic: a fused kernel still computes every
         * FLOP at best at the peak (a compute-bound conv head keeps its time) */
        double flops = 0;
        for (int m = 0; m < ch->n_members; m++)
            for (int i = 0; i < a->n_nodes; i++)
                if (a->nodes[i].id == ch->members[m]) flops += (double)a->nodes[i].flops;
        double room = (double)ch->time_ns - flops / c.peak_gflops;
        if (ch->max_saving_ns > (room > 0 ? room : 0) + 1e-6)
            fail_msg("%s: chain %d claims %.1f ns of %lld ns whose arithmetic alone takes %.1f ns at the peak", model, k,
                     ch->max_saving_ns, (long long)ch->time_ns, flops / c.peak_gflops);
    }
    return a;
}

static int count_conv_bn_relu(const fa_analysis *a)
{
    int found = 0;
    for (int k = 0; k < a->n_chains; k++) {
        const fa_an_chain *ch = &a->chains[k];
        for (int m = 0; m + 2 < ch->n_members; m++) {
            const char *o0 = a->nodes[fa_analysis_node_index(a, ch->members[m])].op_type;
            const char *o1 = a->nodes[fa_analysis_node_index(a, ch->members[m + 1])].op_type;
            const char *o2 = a->nodes[fa_analysis_node_index(a, ch->members[m + 2])].op_type;
            if (!strcmp(o0, "Conv") && !strcmp(o1, "BatchNormalization") && !strcmp(o2, "Relu")) found++;
        }
    }
    return found;
}

static void test_chains_are_real_edges_on_light_models(void **s)
{
    (void)s;
    if (!fa_test_corpus()) skip();
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = open_tmp_store(ctx, "light.db");
    static const char *const m[] = {"bvlc_alexnet", "inception_v1", "resnet50", "squeezenet", "vgg19"};
    for (size_t i = 0; i < 5; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/onnx/light/light_%s.onnx", fa_test_corpus(), m[i]);
        fa_analysis *a = analyze_model(ctx, st, p);
        assert_true(a->n_chains > 0);
        if (!strcmp(m[i], "resnet50")) assert_true(count_conv_bn_relu(a) >= 16);
        fa_analysis_free(a);
    }
    fa_store_close(st);
    fa_ctx_free(ctx);
}

static void test_conv_bn_relu_chains_found_in_zoo_resnet50(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    if (!fa_zoo_count()) skip();
    fa_store *st = open_tmp_store(ctx, "zoo.db");
    fa_analysis *a = analyze_model(ctx, st, "zoo:resnet50");
    /* 53 conv+BN pairs; 33 are followed directly by a Relu (the rest feed the residual Add) */
    assert_true(count_conv_bn_relu(a) >= 16);
    fa_analysis_free(a);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edge_traffic_is_tensor_bytes_written_plus_read),
        cmocka_unit_test(test_gaps_do_not_depend_on_record_order),
        cmocka_unit_test(test_chains_are_real_edges_on_light_models),
        cmocka_unit_test(test_conv_bn_relu_chains_found_in_zoo_resnet50),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
