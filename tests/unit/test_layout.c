/* tests/unit/test_layout — the layout planner a layout-aware target's executor uses
 * (fa_layout_plan_make): where each tensor lives and which reorders run as kernels, for a target
 * whose convs and the elementwise ops between them prefer nChw8c (a stand-in for issue 18's cpu
 * target), and for the registered targets (no preferred layout: nothing to reorder). */
#include "codegen_cases.h"
#include "runtime/runtime.h"

static fa_layout blocked_convs(const fa_graph *g, const fa_node *n)
{
    (void)g;
    return !strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "Relu") ? FA_LAYOUT_NCHW8C : FA_LAYOUT_PLAIN;
}

static fa_layout out_of_range(const fa_graph *g, const fa_node *n)
{
    (void)g;
    (void)n;
    return FA_LAYOUT_COUNT;
}

/* x[1,16,8,8] -> Conv -> Relu -> Conv -> c2 -> Flatten -> f; outputs f and c2. */
static tc *conv_chain(void)
{
    tc *t = tc_new(17);
    int64_t xd[4] = {1, 16, 8, 8}, wd[4] = {16, 16, 1, 1};
    tc_input(t, "x", 4, xd);
    float w[256];
    for (int i = 0; i < 256; i++) w[i] = (float)(i % 7) * 0.01f;
    tc_const(t, "w1", 4, wd, w);
    tc_const(t, "w2", 4, wd, w);
    tc_node(t, "Conv", "x", "w1", NULL, "c1");
    tc_node(t, "Relu", "c1", NULL, NULL, "r1");
    tc_node(t, "Conv", "r1", "w2", NULL, "c2");
    tc_node(t, "Flatten", "c2", NULL, NULL, "f");
    tc_output(t, "f");
    tc_output(t, "c2");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    return t;
}

static int tid(tc *t, const char *name) { return fa_graph_find_tensor(t->g, name); }

static void test_blocked_target_reorders_only_at_the_boundaries(void **s)
{
    (void)s;
    tc *t = conv_chain();
    fa_target_iface fake = *fa_target_get(FA_TARGET_CPU);
    fake.name = "blocked";
    fake.preferred_layout = blocked_convs;
    fa_layout_plan p;
    assert_int_equal(fa_layout_plan_make(t->ctx, &fake, t->g, &p), FA_OK);
    assert_int_equal(p.layout[tid(t, "x")], FA_LAYOUT_PLAIN);
    assert_int_equal(p.layout[tid(t, "w1")], FA_LAYOUT_PLAIN);
    assert_int_equal(p.layout[tid(t, "c1")], FA_LAYOUT_NCHW8C);
    assert_int_equal(p.layout[tid(t, "r1")], FA_LAYOUT_NCHW8C); /* kept between the convs */
    assert_int_equal(p.layout[tid(t, "c2")], FA_LAYOUT_NCHW8C);
    assert_int_equal(p.layout[tid(t, "f")], FA_LAYOUT_PLAIN);
    /* x into the first conv; c2 back to plain once, shared by Flatten and the graph output */
    assert_int_equal(p.n_reorders, 2);
    assert_int_equal(p.reorders[0].tensor, tid(t, "x"));
    assert_int_equal(p.reorders[0].from, FA_LAYOUT_PLAIN);
    assert_int_equal(p.reorders[0].to, FA_LAYOUT_NCHW8C);
    assert_int_equal(p.reorders[0].input, 0);
    assert_string_equal(t->g->nodes[p.reorders[0].consumer]->op_type, "Conv");
    assert_int_equal(p.reorders[1].tensor, tid(t, "c2"));
    assert_int_equal(p.reorders[1].to, FA_LAYOUT_PLAIN);
    assert_string_equal(t->g->nodes[p.reorders[1].consumer]->op_type, "Flatten");
    print_message("blocked: %d reorders (%s -> %s of x, %s -> %s of c2)\n", p.n_reorders,
                  fa_layout_name(p.reorders[0].from), fa_layout_name(p.reorders[0].to), fa_layout_name(p.reorders[1].from),
                  fa_layout_name(p.reorders[1].to));
    fa_layout_plan_free(&p);

    fake.preferred_layout = out_of_range; /* a broken table is an error, not a silent plain run */
    assert_int_equal(fa_layout_plan_make(t->ctx, &fake, t->g, &p), FA_ERR_INTERNAL);
    assert_null(p.layout);
    tc_free(t);
}

static void test_registered_targets_keep_everything_plain(void **s)
{
    (void)s;
    tc *t = conv_chain();
    for (int i = 0; fa_target_at(i); i++) {
        fa_layout_plan p;
        assert_int_equal(fa_layout_plan_make(t->ctx, fa_target_at(i), t->g, &p), FA_OK);
        assert_int_equal(p.n_reorders, 0);
        for (int k = 0; k < t->g->n_tensors; k++) assert_int_equal(p.layout[k], FA_LAYOUT_PLAIN);
        fa_layout_plan_free(&p);
    }
    tc_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocked_target_reorders_only_at_the_boundaries),
        cmocka_unit_test(test_registered_targets_keep_everything_plain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
