/* tests/unit/test_exec_views — views on the cpu executor (runtime/cpu/exec_cpu.c merge_views):
 * a Reshape/Flatten/Identity of an activation the run writes shares that activation's bytes and
 * its kernel is the view that moves nothing (FA_VIEW_KERNEL_NAME, still one record per run); a view
 * of a graph input still copies; and a view of a residual that a FusedConv adds through oneDNN's
 * sum post-op keeps the residual's values, on the plain and the blocked executor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/post_op.h"
#include "runtime/runtime.h"
#include "testutil.h"

static void add_const(fa_ctx *ctx, fa_graph *g, const char *name, int rank, const int64_t *dims, uint64_t seed)
{
    int t = fa_graph_tensor(g, name);
    fa_tensor_set_shape(g->tensors[t], FA_DTYPE_FLOAT, rank, dims);
    int64_t n = fa_tensor_numel(g->tensors[t]);
    float *d = malloc(sizeof(float) * (size_t)n);
    fa_rng r;
    fa_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) d[i] = fa_rng_uniform(&r, -0.5f, 0.5f);
    assert_int_equal(fa_tensor_set_data(ctx, g->tensors[t], d, sizeof(float) * (size_t)n), FA_OK);
    g->tensors[t]->flags |= FA_TENSOR_INITIALIZER;
    free(d);
}

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

/* x -> Conv c1 -> a -> Identity -> av (a graph output, read after the FusedConv), a -> Conv c2 -> b,
 * then FusedConv(b, residual a via the sum post-op) -> y. The Identity comes before the FusedConv
 * in topological order, so a's own last reader is the FusedConv, which writes y over a's bytes
 * where it runs in place, while av is still read at the end. unfused: Conv + Add + Relu. */
static fa_graph *block_graph(fa_ctx *ctx, bool fused)
{
    fa_graph *g = fa_graph_create(fused ? "fused" : "unfused");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {1, 16, 6, 5}, wd[4] = {16, 16, 3, 3}, bd[1] = {16}, pads[4] = {1, 1, 1, 1};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    const char *w[] = {"w1", "w2", "w3"}, *b[] = {"b1", "b2", "b3"};
    for (int i = 0; i < 3; i++) {
        add_const(ctx, g, w[i], 4, wd, 10 + (uint64_t)i);
        add_const(ctx, g, b[i], 1, bd, 20 + (uint64_t)i);
    }
    const char *i1[] = {"x", "w1", "b1"}, *o1[] = {"a"}, *iv[] = {"a"}, *ov[] = {"av"}, *i2[] = {"a", "w2", "b2"}, *o2[] = {"b"};
    fa_node_add_attr_ints(g, fa_graph_add_node(ctx, g, "c1", "Conv", "", 3, i1, 1, o1), "pads", pads, 4);
    fa_graph_add_node(ctx, g, "view", "Identity", "", 1, iv, 1, ov);
    fa_node_add_attr_ints(g, fa_graph_add_node(ctx, g, "c2", "Conv", "", 3, i2, 1, o2), "pads", pads, 4);
    if (fused) {
        const char *ins[] = {"b", "w3", "b3", "a"}, *outs[] = {"y"};
        fa_node *n = fa_graph_add_node(ctx, g, "fc", "FusedConv", "ai.fuse-advise", 4, ins, 1, outs);
        fa_node_add_attr_ints(g, n, "pads", pads, 4);
        const fa_post_op po[] = {{FA_POST_OP_ADD, 0, 0, 3}, {FA_POST_OP_RELU, 0, 0, -1}};
        assert_true(fa_post_ops_set_node(g, n, po, 2));
    } else {
        const char *i3[] = {"b", "w3", "b3"}, *o3[] = {"c"}, *i4[] = {"c", "a"}, *o4[] = {"s"}, *i5[] = {"s"}, *o5[] = {"y"};
        fa_node_add_attr_ints(g, fa_graph_add_node(ctx, g, "c3", "Conv", "", 3, i3, 1, o3), "pads", pads, 4);
        fa_graph_add_node(ctx, g, "add", "Add", "", 2, i4, 1, o4);
        fa_graph_add_node(ctx, g, "relu", "Relu", "", 1, i5, 1, o5);
    }
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "av"));
    if (fused) { /* the fused domain has no shape inference: the shapes the unfused graph infers */
        const char *act[] = {"a", "av", "b", "y"};
        for (int i = 0; i < 4; i++) fa_tensor_set_shape(g->tensors[fa_graph_find_tensor(g, act[i])], FA_DTYPE_FLOAT, 4, xd);
        assert_int_equal(fa_graph_index(ctx, g), FA_OK);
    } else {
        assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    }
    return g;
}

/* The residual's view keeps the residual's values beside a FusedConv's sum post-op, as a view (no
 * copy of its own) on both executors: the plain one (the conv reorders inside, its dst a buffer of
 * its own; av is a's bytes) and the blocked one (a blocked, y written over a's bytes in place; the
 * Identity's input is the plain copy of a that the layout plan reorders for it, and av is that
 * copy's bytes — merge_views never places a view on blocked bytes). */
static void check_residual_view(bool blocked)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *gu = block_graph(ctx, false), *gf = block_graph(ctx, true);
    fa_exec *eu = NULL, *ef = NULL;
    fa_exec_options o = {.target = FA_TARGET_CPU, .threads = 2}, of = o;
    of.blocked_layouts = blocked;
    if (fa_exec_create(ctx, gu, &o, &eu) || fa_exec_create(ctx, gf, &of, &ef)) fail_msg("%s", fa_ctx_errmsg(ctx));
    const fa_node *view = NULL;
    for (int i = 0; i < gf->n_nodes; i++)
        if (!strcmp(gf->nodes[i]->name, "view")) view = gf->nodes[i];
    assert_non_null(view);
    assert_string_equal(fa_exec_kernel_name(ef, view), FA_VIEW_KERNEL_NAME);
    for (int run = 0; run < 2; run++) {
        assert_int_equal(fa_exec_fill_inputs(ctx, eu, 42), FA_OK);
        assert_int_equal(fa_exec_fill_inputs(ctx, ef, 42), FA_OK);
        assert_int_equal(fa_exec_run(ctx, eu, NULL), FA_OK);
        assert_int_equal(fa_exec_run(ctx, ef, NULL), FA_OK);
        for (int k = 0; k < 2; k++) {
            const char *name = k ? "av" : "y";
            const fa_value *u = fa_exec_output(eu, out_of(gu, name)), *f = fa_exec_output(ef, out_of(gf, name));
            assert_non_null(u);
            assert_non_null(f);
            double maxabs = 0, maxdiff = 0;
            for (int64_t i = 0; i < fa_value_numel(u); i++) {
                maxabs = fmax(maxabs, fabs(((const float *)u->data)[i]));
                maxdiff = fmax(maxdiff, fabs(((const float *)u->data)[i] - ((const float *)f->data)[i]));
            }
            assert_true(maxabs > 0.1);
            if (maxdiff > 1e-5 * maxabs) fail_msg("%s, run %d: max rel error %g", name, run, maxdiff / maxabs);
        }
    }
    fa_exec_free(eu);
    fa_exec_free(ef);
    fa_graph_free(gu);
    fa_graph_free(gf);
    fa_ctx_free(ctx);
}

static void test_view_of_a_residual_keeps_its_values_plain(void **st) { (void)st; check_residual_view(false); }
static void test_view_of_a_residual_keeps_its_values_blocked(void **st) { (void)st; check_residual_view(true); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_of_an_activation_shares_its_bytes_and_runs_nothing),
        cmocka_unit_test(test_view_of_a_graph_input_still_copies),
        cmocka_unit_test(test_view_of_a_residual_keeps_its_values_plain),
        cmocka_unit_test(test_view_of_a_residual_keeps_its_values_blocked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
