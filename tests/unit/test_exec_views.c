/* tests/unit/test_exec_views — views on the cpu executor (runtime/cpu/exec_cpu.c merge_views):
 * a Reshape/Flatten/Identity of an activation the run writes shares that activation's bytes and
 * its kernel is the view that moves nothing (FA_VIEW_KERNEL_NAME, still one record per run); a view
 * of a graph input still copies. (A view of a residual beside a FusedConv's sum post-op:
 * test_dnnl_post_ops.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "runtime/runtime.h"
#include "testutil.h"

/* What an observer is shown: kernels in all, and those of the Flatten node named as a view. */
typedef struct seen {
    int total, views;
} seen;

static void on_begin(void *user, const fa_node *n, const char *name)
{
    seen *s = user;
    s->total++;
    if (!strcmp(n->op_type, "Flatten") && !strcmp(name, FA_VIEW_KERNEL_NAME)) s->views++;
}

static int out_of(const fa_graph *g, const char *name)
{
    for (int i = 0; i < g->n_outputs; i++)
        if (!strcmp(g->tensors[g->outputs[i]]->name, name)) return i;
    fail_msg("no graph output %s", name);
    return -1;
}

/* x [2,3,4,5] -> Relu -> r -> Flatten -> v [2,60] -> Neg -> y, with r, v and y graph outputs
 * (view_of_input: x -> Flatten -> v directly, the view reading the graph input). */
static fa_graph *chain_graph(fa_ctx *ctx, bool view_of_input)
{
    fa_graph *g = fa_graph_create("views");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {2, 3, 4, 5};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    const char *i1[] = {"x"}, *o1[] = {"r"}, *i2[] = {view_of_input ? "x" : "r"}, *o2[] = {"v"}, *i3[] = {"v"}, *o3[] = {"y"};
    fa_graph_add_node(ctx, g, "relu", "Relu", "", 1, i1, 1, o1);
    fa_graph_add_node(ctx, g, "flat", "Flatten", "", 1, i2, 1, o2);
    fa_graph_add_node(ctx, g, "neg", "Neg", "", 1, i3, 1, o3);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "r"));
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "v"));
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    return g;
}

static void check_chain(bool view_of_input)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = chain_graph(ctx, view_of_input);
    fa_exec *e = NULL;
    fa_exec_options o = {.target = FA_TARGET_CPU, .threads = 2};
    if (fa_exec_create(ctx, g, &o, &e)) fail_msg("%s", fa_ctx_errmsg(ctx));
    float xv[120];
    for (int i = 0; i < 120; i++) xv[i] = (float)(i % 7) - 3.0f;
    int64_t xd[4] = {2, 3, 4, 5};
    fa_value in = {.dtype = FA_DTYPE_FLOAT, .rank = 4, .data = xv};
    memcpy(in.dims, xd, sizeof xd);
    assert_int_equal(fa_exec_set_input(ctx, e, 0, &in), FA_OK);
    seen s = {0, 0};
    fa_exec_observer obs = {.user = &s, .kernel_begin = on_begin};
    for (int run = 0; run < 2; run++) { /* twice: the second run starts from what the first left */
        s = (seen){0, 0};
        assert_int_equal(fa_exec_run(ctx, e, &obs), FA_OK);
        const fa_value *r = fa_exec_output(e, out_of(g, "r")), *v = fa_exec_output(e, out_of(g, "v")),
                       *y = fa_exec_output(e, out_of(g, "y"));
        assert_non_null(r);
        assert_non_null(v);
        assert_non_null(y);
        assert_int_equal(v->rank, 2);
        assert_int_equal(v->dims[1], 60);
        for (int i = 0; i < 120; i++) {
            float want_v = view_of_input ? xv[i] : fmaxf(xv[i], 0.0f);
            assert_float_equal(((const float *)r->data)[i], fmaxf(xv[i], 0.0f), 0);
            assert_float_equal(((const float *)v->data)[i], want_v, 0);
            assert_float_equal(((const float *)y->data)[i], -want_v, 0);
        }
        assert_int_equal(s.total, 3); /* one record per live node either way */
        if (view_of_input) { /* the view of a graph input copies: bytes of its own, its copying kernel */
            assert_int_equal(s.views, 0);
            assert_ptr_not_equal(v->data, r->data);
        } else { /* the view of r is r's bytes, its kernel the view that moves nothing */
            assert_int_equal(s.views, 1);
            assert_ptr_equal(v->data, r->data);
        }
    }
    /* the arena: x, r and y (v in r's bytes) against x, r, v and y; 480 bytes each, placed at
     * 64-byte multiples */
    assert_int_equal(fa_exec_peak_bytes(e), (view_of_input ? 4 : 3) * 512);
    fa_exec_free(e);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void test_view_of_an_activation_shares_its_bytes_and_runs_nothing(void **st) { (void)st; check_chain(false); }
static void test_view_of_a_graph_input_still_copies(void **st) { (void)st; check_chain(true); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_of_an_activation_shares_its_bytes_and_runs_nothing),
        cmocka_unit_test(test_view_of_a_graph_input_still_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
