/* tests/unit/test_dnnl_post_ops — fused Conv/Gemm nodes (domain ai.fuse-advise) with oneDNN
 * post-ops compute exactly what the unfused Conv -> Add -> Relu (and Gemm -> Sigmoid) graphs do. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/post_op.h"
#include "graph/vmath.h"
#include "runtime/runtime-impl.h"
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

/* Build conv (group G) with residual input r and relu; fused or not. */
static fa_graph *conv_graph(fa_ctx *ctx, bool fused, int group, bool full_addend)
{
    fa_graph *g = fa_graph_create(fused ? "fused" : "unfused");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {2, 8, 9, 7}, wd[4] = {8, 8 / group, 3, 3}, bd[1] = {8};
    int64_t rd_full[4] = {2, 8, 9, 7}, rd_ch[4] = {1, 8, 1, 1};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    add_const(ctx, g, "w", 4, wd, 1);
    add_const(ctx, g, "b", 1, bd, 2);
    add_const(ctx, g, "r", 4, full_addend ? rd_full : rd_ch, 3);
    int64_t pads[4] = {1, 1, 1, 1};
    if (fused) {
        const char *ins[] = {"x", "w", "b", "r"}, *outs[] = {"y"};
        fa_node *n = fa_graph_add_node(ctx, g, "fc", "FusedConv", "ai.fuse-advise", 4, ins, 1, outs);
        fa_node_add_attr_ints(g, n, "pads", pads, 4);
        fa_node_add_attr_int(g, n, "group", group);
        const fa_post_op po[] = {{FA_POST_OP_ADD, 0, 0, 3}, {FA_POST_OP_RELU, 0, 0, -1}};
        assert_true(fa_post_ops_set_node(g, n, po, 2));
        int y = fa_graph_find_tensor(g, "y");
        fa_tensor_set_shape(g->tensors[y], FA_DTYPE_FLOAT, 4, xd);
        fa_graph_add_output(ctx, g, y);
        assert_int_equal(fa_graph_index(ctx, g), FA_OK);
    } else {
        const char *i1[] = {"x", "w", "b"}, *o1[] = {"c"}, *i2[] = {"c", "r"}, *o2[] = {"s"}, *i3[] = {"s"}, *o3[] = {"y"};
        fa_node *n = fa_graph_add_node(ctx, g, "conv", "Conv", "", 3, i1, 1, o1);
        fa_node_add_attr_ints(g, n, "pads", pads, 4);
        fa_node_add_attr_int(g, n, "group", group);
        fa_graph_add_node(ctx, g, "add", "Add", "", 2, i2, 1, o2);
        fa_graph_add_node(ctx, g, "relu", "Relu", "", 1, i3, 1, o3);
        fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
        assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    }
    return g;
}

/* max |u - f| / max |u| over n floats (u the unfused ops' output, f the fused one's), asserting u is
 * not all near 0 (an epilogue that zeroed everything would compare equal); a NaN or infinity in f
 * makes it infinite. */
static double rel_error(const float *u, const float *f, int64_t n)
{
    double maxabs = 0, maxdiff = 0;
    for (int64_t i = 0; i < n; i++) {
        maxabs = fmax(maxabs, fabs(u[i]));
        maxdiff = isfinite(f[i]) ? fmax(maxdiff, fabs((double)u[i] - f[i])) : INFINITY;
    }
    assert_true(maxabs > 0.1);
    return maxdiff / maxabs;
}

static float *run_graph(fa_ctx *ctx, fa_graph *g, int64_t *n)
{
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2};
    fa_status s = fa_exec_create(ctx, g, &eo, &e);
    if (s) fail_msg("%s", fa_ctx_errmsg(ctx));
    assert_int_equal(fa_exec_fill_inputs(ctx, e, 42), FA_OK);
    assert_int_equal(fa_exec_run(ctx, e, NULL), FA_OK);
    const fa_value *v = fa_exec_output(e, 0);
    *n = fa_value_numel(v);
    float *out = malloc(sizeof(float) * (size_t)*n);
    memcpy(out, v->data, sizeof(float) * (size_t)*n);
    fa_exec_free(e);
    return out;
}

static void compare_conv(int group, bool full)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *gu = conv_graph(ctx, false, group, full), *gf = conv_graph(ctx, true, group, full);
    int64_t nu, nf;
    float *u = run_graph(ctx, gu, &nu), *f = run_graph(ctx, gf, &nf);
    assert_int_equal(nu, nf);
    double e = rel_error(u, f, nu); /* the relu did not zero everything */
    if (!(e <= 1e-5)) fail_msg("group %d full %d: max rel error %g", group, full, e);
    free(u);
    free(f);
    fa_graph_free(gu);
    fa_graph_free(gf);
    fa_ctx_free(ctx);
}

static void test_fused_conv_residual_add_relu_matches_unfused(void **s) { (void)s; compare_conv(1, true); }
static void test_fused_grouped_conv_per_channel_add_matches_unfused(void **s) { (void)s; compare_conv(2, false); }
static void test_fused_grouped_conv_full_addend_matches_unfused(void **s) { (void)s; compare_conv(4, true); }
static void test_fused_depthwise_conv_add_relu_matches_unfused(void **s) { (void)s; compare_conv(8, true); }

/* x [1, 40, 11, 9] -> Conv (group: 40 depthwise 3x3, 1 dense 3x3; per-channel addend with_add) ->
 * SiLU as x·Sigmoid(x) -> 1x1 Conv 40 -> 24 -> y. Fused: a FusedConv whose last post-op is the
 * swish, which runtime/cpu/dnnl.c applies after oneDNN's primitive on AVX-512 CPUs (swish_after_conv)
 * over the dst as the primitive left it: 40 channels pad to 48 in nChw16c, and the 1x1 convolution
 * after it reads the padding (zero weights times what is there: a NaN or an infinity written into the
 * padding would reach y). */
static fa_graph *swish_graph(fa_ctx *ctx, bool fused, int group, bool with_add)
{
    fa_graph *g = fa_graph_create(fused ? "fused" : "unfused");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {1, 40, 11, 9}, wd[4] = {40, 40 / group, 3, 3}, bd[1] = {40}, rd[4] = {1, 40, 1, 1}, w2d[4] = {24, 40, 1, 1},
            yd[4] = {1, 24, 11, 9}, pads[4] = {1, 1, 1, 1};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    add_const(ctx, g, "w", 4, wd, 5);
    add_const(ctx, g, "b", 1, bd, 6);
    add_const(ctx, g, "r", 4, rd, 7);
    add_const(ctx, g, "w2", 4, w2d, 8);
    const char *i2[] = {"a", "w2"}, *o2[] = {"y"};
    if (fused) {
        const char *ins[] = {"x", "w", "b", "r"}, *outs[] = {"a"};
        fa_node *n = fa_graph_add_node(ctx, g, "fc", "FusedConv", "ai.fuse-advise", with_add ? 4 : 3, ins, 1, outs);
        fa_node_add_attr_ints(g, n, "pads", pads, 4);
        fa_node_add_attr_int(g, n, "group", group);
        const fa_post_op add = {FA_POST_OP_ADD, 0, 0, 3}, sw = {FA_POST_OP_SWISH, 1.0f, 0, -1};
        const fa_post_op po[] = {with_add ? add : sw, sw};
        assert_true(fa_post_ops_set_node(g, n, po, with_add ? 2 : 1));
        fa_graph_add_node(ctx, g, "c2", "Conv", "", 2, i2, 1, o2);
        fa_tensor_set_shape(g->tensors[fa_graph_find_tensor(g, "a")], FA_DTYPE_FLOAT, 4, xd);
        fa_tensor_set_shape(g->tensors[fa_graph_find_tensor(g, "y")], FA_DTYPE_FLOAT, 4, yd);
        fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
        assert_int_equal(fa_graph_index(ctx, g), FA_OK);
    } else {
        const char *i1[] = {"x", "w", "b"}, *o1[] = {"c"}, *ia[] = {"c", "r"}, *oa[] = {"cr"}, *is[] = {"cr"}, *os[] = {"sg"},
                   *im[] = {"cr", "sg"}, *om[] = {"a"};
        fa_node *n = fa_graph_add_node(ctx, g, "conv", "Conv", "", 3, i1, 1, o1);
        fa_node_add_attr_ints(g, n, "pads", pads, 4);
        fa_node_add_attr_int(g, n, "group", group);
        if (with_add) fa_graph_add_node(ctx, g, "add", "Add", "", 2, ia, 1, oa);
        else is[0] = im[0] = "c";
        fa_graph_add_node(ctx, g, "sig", "Sigmoid", "", 1, is, 1, os);
        fa_graph_add_node(ctx, g, "mul", "Mul", "", 2, im, 1, om);
        fa_graph_add_node(ctx, g, "c2", "Conv", "", 2, i2, 1, o2);
        fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
        assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    }
    return g;
}

/* The fused graph on a plain executor (the convolution reorders inside) and on a blocked one (the
 * plan's nChw16c between the two convolutions) against the unfused ops, in both forms: on AVX-512
 * the kernel is named for the swish it applies after the primitive (any other post-op stays
 * oneDNN's), and with fa_dnnl_swish_post_op_force the swish is oneDNN's post-op again. */
static void check_swish(int group, bool with_add)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *gu = swish_graph(ctx, false, group, with_add), *gf = swish_graph(ctx, true, group, with_add);
    for (int form = 0; form < 4; form++) {
        bool blocked = form & 1, post_op = form >= 2;
        fa_dnnl_swish_post_op_force(post_op);
        fa_exec *eu = NULL, *ef = NULL;
        fa_exec_options ou = {.target = FA_TARGET_CPU, .threads = 2}, of = ou;
        of.blocked_layouts = blocked;
        if (fa_exec_create(ctx, gu, &ou, &eu) || fa_exec_create(ctx, gf, &of, &ef)) fail_msg("%s", fa_ctx_errmsg(ctx));
        const fa_node *fc = NULL;
        for (int i = 0; i < gf->n_nodes; i++)
            if (!strcmp(gf->nodes[i]->name, "fc")) fc = gf->nodes[i];
        const char *name = fa_exec_kernel_name(ef, fc);
        fa_dnnl_swish_post_op_force(false);
        printf("group %d%s, %s executor: %s\n", group, with_add ? ", add" : "", blocked ? "blocked" : "plain", name);
        if (fa_vmath512_available() && !post_op) {
            assert_non_null(strstr(name, "+swish"));
            assert_true((strstr(name, "+post-ops") != NULL) == with_add);
        } else {
            assert_null(strstr(name, "+swish"));
            assert_non_null(strstr(name, "+post-ops"));
        }
        assert_int_equal(fa_exec_fill_inputs(ctx, eu, 42), FA_OK);
        assert_int_equal(fa_exec_fill_inputs(ctx, ef, 42), FA_OK);
        assert_int_equal(fa_exec_run(ctx, eu, NULL), FA_OK);
        assert_int_equal(fa_exec_run(ctx, ef, NULL), FA_OK);
        const fa_value *u = fa_exec_output(eu, 0), *f = fa_exec_output(ef, 0);
        int64_t n = fa_value_numel(u);
        assert_int_equal(n, 24 * 11 * 9);
        double e = rel_error(u->data, f->data, n);
        if (!(e <= 1e-5))
            fail_msg("group %d, %s%s: max rel error %g", group, blocked ? "blocked" : "plain", post_op ? ", post-op" : "", e);
        fa_exec_free(eu);
        fa_exec_free(ef);
    }
    fa_graph_free(gu);
    fa_graph_free(gf);
    fa_ctx_free(ctx);
}

static void test_fused_depthwise_conv_swish_matches_unfused(void **s) { (void)s; check_swish(40, false); }
static void test_fused_conv_add_swish_matches_unfused(void **s) { (void)s; check_swish(1, true); }

/* A residual block x -> Conv -> a -> Conv -> b, then conv(b) + a -> Relu -> y, all 16 channels:
 * fused as one FusedConv whose residual `a` goes through oneDNN's sum post-op. In the blocked
 * executor y takes a's bytes (a's last reader is the FusedConv), so the arena holds x, a(=y), b:
 * three tensors, not four. With `a` also a graph output it must keep its own bytes and values.
 * a_viewed: an Identity a -> av before the second Conv, av a graph output read after the
 * FusedConv (a view of the residual: runtime/cpu/exec_cpu.c merge_views). */
static fa_graph *block_graph(fa_ctx *ctx, bool fused, bool a_is_output, bool a_viewed)
{
    fa_graph *g = fa_graph_create(fused ? "fused" : "unfused");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {2, 16, 9, 7}, wd[4] = {16, 16, 3, 3}, bd[1] = {16}, pads[4] = {1, 1, 1, 1};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    const char *w[] = {"w1", "w2", "w3"}, *b[] = {"b1", "b2", "b3"};
    for (int i = 0; i < 3; i++) {
        add_const(ctx, g, w[i], 4, wd, 10 + (uint64_t)i);
        add_const(ctx, g, b[i], 1, bd, 20 + (uint64_t)i);
    }
    const char *i1[] = {"x", "w1", "b1"}, *o1[] = {"a"}, *i2[] = {"a", "w2", "b2"}, *o2[] = {"b"};
    fa_node_add_attr_ints(g, fa_graph_add_node(ctx, g, "c1", "Conv", "", 3, i1, 1, o1), "pads", pads, 4);
    if (a_viewed) {
        const char *iv[] = {"a"}, *ov[] = {"av"};
        fa_graph_add_node(ctx, g, "view", "Identity", "", 1, iv, 1, ov);
    }
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
    if (a_is_output) fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "a"));
    if (a_viewed) fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "av"));
    if (fused) { /* the fused domain has no shape inference: the shapes the unfused graph infers */
        const char *act[] = {"a", "b", "y", "av"};
        for (int i = 0; i < (a_viewed ? 4 : 3); i++)
            fa_tensor_set_shape(g->tensors[fa_graph_find_tensor(g, act[i])], FA_DTYPE_FLOAT, 4, xd);
        assert_int_equal(fa_graph_index(ctx, g), FA_OK);
    } else {
        assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    }
    return g;
}

/* a_viewed: the residual's view keeps the residual's values beside the sum post-op, as a view (no
 * copy of its own) on both executors: the plain one (the conv reorders inside, its dst a buffer of
 * its own; av is a's bytes) and the blocked one (a blocked, y written over a's bytes in place; the
 * Identity's input is the plain copy of a that the layout plan reorders for it, and av is that
 * copy's bytes: merge_views never places a view on blocked bytes). */
static void check_block_on(bool a_is_output, bool a_viewed, bool blocked)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *gu = block_graph(ctx, false, a_is_output, a_viewed), *gf = block_graph(ctx, true, a_is_output, a_viewed);
    fa_exec *eu = NULL, *ef = NULL;
    fa_exec_options ou = {.target = FA_TARGET_CPU, .threads = 2}, of = ou;
    of.blocked_layouts = blocked;
    if (fa_exec_create(ctx, gu, &ou, &eu) || fa_exec_create(ctx, gf, &of, &ef)) fail_msg("%s", fa_ctx_errmsg(ctx));
    if (a_viewed) {
        const fa_node *view = NULL;
        for (int i = 0; i < gf->n_nodes; i++)
            if (!strcmp(gf->nodes[i]->name, "view")) view = gf->nodes[i];
        assert_non_null(view);
        assert_string_equal(fa_exec_kernel_name(ef, view), FA_VIEW_KERNEL_NAME);
    }
    for (int r = 0; r < 2; r++) { /* twice: a second run starts from what the first left in the arena */
        assert_int_equal(fa_exec_fill_inputs(ctx, eu, 42), FA_OK);
        assert_int_equal(fa_exec_fill_inputs(ctx, ef, 42), FA_OK);
        assert_int_equal(fa_exec_run(ctx, eu, NULL), FA_OK);
        assert_int_equal(fa_exec_run(ctx, ef, NULL), FA_OK);
        for (int o = 0; o < gu->n_outputs; o++) {
            const fa_value *u = fa_exec_output(eu, o), *f = fa_exec_output(ef, o);
            assert_non_null(u);
            assert_non_null(f);
            int64_t n = fa_value_numel(u);
            double e = rel_error(u->data, f->data, n);
            if (!(e <= 1e-5)) fail_msg("output %d, run %d: max rel error %g", o, r, e);
        }
    }
    if (blocked && !a_viewed) { /* the blocked residual block's arena */
        uint64_t t = 2 * 16 * 9 * 7 * sizeof(float); /* 16 channels: no padding to the block */
        assert_int_not_equal(fa_exec_tensor_layout(ef, fa_graph_find_tensor(gf, "a")), FA_LAYOUT_PLAIN);
        /* live at the FusedConv: x (a graph input), b, a and y: y in a's bytes makes it three (four
         * without the in-place plan). With `a` a graph output, a and y are both kept, and both are
         * reordered to plain copies at the end: x, a, y and the two copies, five. */
        assert_int_equal(fa_exec_peak_bytes(ef), (a_is_output ? 5 : 3) * t);
    }
    fa_exec_free(eu);
    fa_exec_free(ef);
    fa_graph_free(gu);
    fa_graph_free(gf);
    fa_ctx_free(ctx);
}

static void test_residual_sum_in_place_of_its_last_reader(void **s) { (void)s; check_block_on(false, false, true); }
static void test_residual_still_read_later_keeps_its_bytes(void **s) { (void)s; check_block_on(true, false, true); }
static void test_residual_view_keeps_its_values_plain(void **s) { (void)s; check_block_on(false, true, false); }
static void test_residual_view_keeps_its_values_blocked(void **s) { (void)s; check_block_on(false, true, true); }

/* x [2,5,32] -> MatMul w [32,48] -> Add `addend` -> Gelu (erf) (or no Gelu: `gelu` false),
 * unfused or as one FusedMatMul with post-ops {add, gelu_erf}; the addend a per-column bias [48]
 * or one row per batch [2,1,48]. */
static fa_graph *linear_graph_g(fa_ctx *ctx, bool fused, bool per_batch, bool rows, bool gelu)
{
    fa_graph *g = fa_graph_create(fused ? "fused" : "unfused");
    fa_graph_set_opset(ctx, g, "", 20);
    int64_t xd[3] = {2, 5, 32}, wd[2] = {32, 48}, bd[1] = {48}, bb[3] = {2, 1, 48}, yd[3] = {2, 5, 48};
    if (rows) xd[0] = yd[0] = 10, xd[1] = 32, yd[1] = 48; /* x [10,32]: the 2-D product itself */
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, rows ? 2 : 3, xd);
    fa_graph_add_input(ctx, g, x);
    add_const(ctx, g, "w", 2, wd, 1);
    add_const(ctx, g, "b", per_batch ? 3 : 1, per_batch ? bb : bd, 2);
    if (fused) {
        const char *ins[] = {"x", "w", "b"}, *outs[] = {"y"};
        fa_node *n = fa_graph_add_node(ctx, g, "fm", "FusedMatMul", "ai.fuse-advise", 3, ins, 1, outs);
        const fa_post_op po[] = {{FA_POST_OP_ADD, 0, 0, 2}, {FA_POST_OP_GELU_ERF, 0, 0, -1}};
        assert_true(fa_post_ops_set_node(g, n, po, gelu ? 2 : 1));
        int y = fa_graph_find_tensor(g, "y");
        fa_tensor_set_shape(g->tensors[y], FA_DTYPE_FLOAT, rows ? 2 : 3, yd);
        fa_graph_add_output(ctx, g, y);
        assert_int_equal(fa_graph_index(ctx, g), FA_OK);
    } else {
        const char *i1[] = {"x", "w"}, *o1[] = {"m"}, *i2[] = {"m", "b"}, *o2[] = {gelu ? "a" : "y"}, *i3[] = {"a"},
                   *o3[] = {"y"};
        fa_graph_add_node(ctx, g, "mm", "MatMul", "", 2, i1, 1, o1);
        fa_graph_add_node(ctx, g, "add", "Add", "", 2, i2, 1, o2);
        if (gelu) fa_graph_add_node(ctx, g, "gelu", "Gelu", "", 1, i3, 1, o3);
        fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
        assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    }
    return g;
}

static fa_graph *linear_graph(fa_ctx *ctx, bool fused, bool per_batch, bool rows)
{
    return linear_graph_g(ctx, fused, per_batch, rows, true);
}

/* A Linear on batched activations with its epilogue as post-ops runs as the unfused MatMul does:
 * one [rows, N] product whose constant weights oneDNN keeps packed (issue 33: the fused node kept
 * the batch dim, oneDNN then kept the weights plain and repacked them on every call, and BERT's
 * MatMul + bias + GELU ran 1.6x slower than the pair). An addend that varies along the batch only
 * cannot be read on the [rows, N] product: that node keeps the batch dim, says so in its kernel's
 * name, and still computes the same values. */
static void check_linear(bool per_batch)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *gu = linear_graph(ctx, false, per_batch, false), *gf = linear_graph(ctx, true, per_batch, false);
    fa_graph *g2 = linear_graph(ctx, true, false, true);
    fa_exec *e = NULL, *e2 = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2};
    if (fa_exec_create(ctx, gf, &eo, &e) || fa_exec_create(ctx, g2, &eo, &e2)) fail_msg("%s", fa_ctx_errmsg(ctx));
    /* what this machine's oneDNN does with the weights of the 2-D product (the unfused MatMul's,
     * runtime/cpu/dnnl.c): packed where it picks brgemm (AVX-512), maybe plain elsewhere */
    const char *name = fa_exec_kernel_name(e, gf->nodes[0]), *name2 = fa_exec_kernel_name(e2, g2->nodes[0]);
    printf("per_batch %d: %s (%s); the 2-D product: %s\n", per_batch, name ? name : "?", fa_exec_kernel_impl(e, gf->nodes[0]),
           name2 ? name2 : "?");
    assert_non_null(name);
    assert_non_null(name2);
    assert_non_null(strstr(name2, "(weights "));
    if (!per_batch) assert_string_equal(name, name2);
    else if (strstr(name2, "weights packed")) assert_non_null(strstr(name, "weights plain, repacked per call"));
    /* a per-column bias is the product's own bias, the Gelu a post-op; a per-batch addend cannot be */
    if (!per_batch) assert_non_null(strstr(name, "dnnl:matmul+bias+post-ops("));
    else assert_null(strstr(name, "+bias"));
    fa_exec_free(e);
    fa_exec_free(e2);
    fa_graph_free(g2);
    int64_t nu, nf;
    float *u = run_graph(ctx, gu, &nu), *f = run_graph(ctx, gf, &nf);
    assert_int_equal(nu, nf);
    double err = rel_error(u, f, nu);
    if (!(err <= 1e-5)) fail_msg("per_batch %d: max rel error %g", per_batch, err);
    free(u);
    free(f);
    fa_graph_free(gu);
    fa_graph_free(gf);
    fa_ctx_free(ctx);
}

static void test_fused_linear_on_batched_activations_keeps_weights_packed(void **s) { (void)s; check_linear(false); }

/* MatMul + a per-column bias alone: the product's own bias (oneDNN's bias argument, no post-op
 * left), the same values as the pair; FA_MATMUL_BIAS_POST_OP=1 keeps it a binary post-op. */
static void test_fused_linear_bias_is_the_products_bias(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *gu = linear_graph_g(ctx, false, false, false, false), *gf = linear_graph_g(ctx, true, false, false, false);
    for (int env = 0; env < 2; env++) {
        if (env) assert_int_equal(setenv("FA_MATMUL_BIAS_POST_OP", "1", 1), 0);
        fa_exec *e = NULL;
        fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2};
        if (fa_exec_create(ctx, gf, &eo, &e)) fail_msg("%s", fa_ctx_errmsg(ctx));
        const char *name = fa_exec_kernel_name(e, gf->nodes[0]);
        assert_non_null(name);
        assert_non_null(strstr(name, env ? "dnnl:matmul+post-ops(" : "dnnl:matmul+bias("));
        fa_exec_free(e);
        int64_t nu, nf;
        float *u = run_graph(ctx, gu, &nu), *f = run_graph(ctx, gf, &nf);
        assert_int_equal(nu, nf);
        double err = rel_error(u, f, nu);
        if (!(err <= 1e-6)) fail_msg("bias %s: max rel error %g", env ? "as a post-op" : "native", err);
        free(u);
        free(f);
    }
    assert_int_equal(unsetenv("FA_MATMUL_BIAS_POST_OP"), 0);
    fa_graph_free(gu);
    fa_graph_free(gf);
    fa_ctx_free(ctx);
}
static void test_fused_linear_with_per_batch_addend_keeps_batch_dims(void **s) { (void)s; check_linear(true); }

static void test_fused_conv_unknown_post_op_is_an_error(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = conv_graph(ctx, true, 1, true);
    fa_node *n = g->nodes[0];
    for (int i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, "post_op_kinds")) n->attrs[i].ints[1] = 999; /* no such kind */
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1};
    assert_int_not_equal(fa_exec_create(ctx, g, &eo, &e), FA_OK);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "post_op_kinds[1] = 999 is no post-op kind"));
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* A FusedMatMul's a_shape / a_strides (the view of input 0 it reads, applier/fused_graph.c) may
 * come from a model file: a view reaching past the input, ranks that differ, or strides whose
 * reach overflows int64 (it wrapped negative and passed the bound check, and oneDNN then read far
 * outside the input) are refused at exec creation, naming the node. */
static void test_fused_matmul_operand_view_out_of_bounds_is_an_error(void **s)
{
    (void)s;
    /* x is [10, 32] (320 elements); each view below claims [10, 32] of it */
    static const struct {
        int64_t shape[2], strides[2];
        int ns;
    } bad[] = {
        {{10, 32}, {32, 1}, 2},                         /* last element 9*32 + 31 = 319: fine, control */
        {{10, 32}, {33, 1}, 2},                         /* 297 + 31 = 328 >= 320 */
        {{10, 32}, {1, 0}, 1},                          /* ranks differ */
        {{10, 32}, {INT64_MAX / 8 + 1, 1}, 2},          /* 9 * 2^60 wraps to a negative reach */
        {{10, 32}, {INT64_MAX / 9, INT64_MAX / 31}, 2}, /* each product fits, their sum does not */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fa_ctx *ctx = fa_ctx_create();
        fa_graph *g = linear_graph(ctx, true, false, true);
        fa_node *n = g->nodes[0];
        assert_true(fa_node_add_attr_ints(g, n, "a_shape", bad[i].shape, 2));
        assert_true(fa_node_add_attr_ints(g, n, "a_strides", bad[i].strides, bad[i].ns));
        fa_exec *e = NULL;
        fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1};
        fa_status st = fa_exec_create(ctx, g, &eo, &e);
        if (i == 0) {
            if (st) fail_msg("case 0: %s", fa_ctx_errmsg(ctx));
            fa_exec_free(e);
        } else {
            if (st == FA_OK) fail_msg("case %zu: a bad view of input 0 was accepted", i);
            assert_non_null(strstr(fa_ctx_errmsg(ctx), "node 'fm': a_shape / a_strides do not describe a view of input 0"));
        }
        fa_graph_free(g);
        fa_ctx_free(ctx);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_conv_residual_add_relu_matches_unfused),
        cmocka_unit_test(test_fused_grouped_conv_per_channel_add_matches_unfused),
        cmocka_unit_test(test_fused_grouped_conv_full_addend_matches_unfused),
        cmocka_unit_test(test_fused_depthwise_conv_add_relu_matches_unfused),
        cmocka_unit_test(test_fused_depthwise_conv_swish_matches_unfused),
        cmocka_unit_test(test_fused_conv_add_swish_matches_unfused),
        cmocka_unit_test(test_fused_conv_unknown_post_op_is_an_error),
        cmocka_unit_test(test_fused_matmul_operand_view_out_of_bounds_is_an_error),
        cmocka_unit_test(test_fused_linear_bias_is_the_products_bias),
        cmocka_unit_test(test_fused_linear_on_batched_activations_keeps_weights_packed),
        cmocka_unit_test(test_fused_linear_with_per_batch_addend_keeps_batch_dims),
        cmocka_unit_test(test_residual_sum_in_place_of_its_last_reader),
        cmocka_unit_test(test_residual_still_read_later_keeps_its_bytes),
        cmocka_unit_test(test_residual_view_keeps_its_values_plain),
        cmocka_unit_test(test_residual_view_keeps_its_values_blocked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
