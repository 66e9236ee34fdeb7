/* tests/unit/test_exec_views — views on the cpu executor (runtime/cpu/exec_cpu.c merge_views):
 * a Reshape/Flatten/Identity of an activation the run writes shares that activation's bytes and
 * its kernel is the view that moves nothing (FA_VIEW_KERNEL_NAME, still one record per run); a view
 * of a graph input still copies; a Transpose that moves only axes of extent 1 is a view. (A view of a residual beside a FusedConv's sum post-op:
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

/* an int64 constant of n values */
static void i64_const(fa_ctx *ctx, fa_graph *g, const char *name, int n, const int64_t *v)
{
    int t = fa_graph_tensor(g, name);
    int64_t d[1] = {n};
    fa_tensor_set_shape(g->tensors[t], FA_DTYPE_INT64, 1, d);
    assert_int_equal(fa_tensor_set_data(ctx, g->tensors[t], v, sizeof(int64_t) * (size_t)n), FA_OK);
    g->tensors[t]->flags |= FA_TENSOR_INITIALIZER;
}

/* Which nodes ran as views (by name, in a list the observer fills). */
typedef struct seen_slices {
    char viewed[8][16];
    int n;
} seen_slices;

static void on_slice(void *user, const fa_node *n, const char *name)
{
    seen_slices *s = user;
    if (!strcmp(n->op_type, "Slice") && !strcmp(name, FA_VIEW_KERNEL_NAME) && s->n < 8)
        snprintf(s->viewed[s->n++], sizeof s->viewed[0], "%s", n->name);
}

static bool viewed(const seen_slices *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->viewed[i], name)) return true;
    return false;
}

/* x [1,C,H,W] -> Relu -> r; then Slices of r, each followed by Neg (so a view is read by a kernel):
 * "hi" channels C/2..C (contiguous, offset C/2*H*W*4 bytes), "lo" channels 0..C/2 (offset 0),
 * "odd" channels 1..C/2+1 (contiguous, offset H*W*4 bytes), "cols" W 0..W/2 (not contiguous). */
static void check_slices(int64_t C, int64_t H, int64_t W, bool odd_aligned)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("slices");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {1, C, H, W};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    int64_t ax1[1] = {1}, ax3[1] = {3}, hs[1] = {C / 2}, he[1] = {C}, ls[1] = {0}, os_[1] = {1}, oe[1] = {C / 2 + 1},
            cs[1] = {0}, ce[1] = {W / 2};
    i64_const(ctx, g, "ax1", 1, ax1);
    i64_const(ctx, g, "ax3", 1, ax3);
    i64_const(ctx, g, "hs", 1, hs);
    i64_const(ctx, g, "he", 1, he);
    i64_const(ctx, g, "ls", 1, ls);
    i64_const(ctx, g, "le", 1, hs);
    i64_const(ctx, g, "os", 1, os_);
    i64_const(ctx, g, "oe", 1, oe);
    i64_const(ctx, g, "cs", 1, cs);
    i64_const(ctx, g, "ce", 1, ce);
    const char *ir[] = {"x"}, *or_[] = {"r"};
    fa_graph_add_node(ctx, g, "relu", "Relu", "", 1, ir, 1, or_);
    const char *names[4] = {"hi", "lo", "odd", "cols"}, *st[4] = {"hs", "ls", "os", "cs"}, *en[4] = {"he", "le", "oe", "ce"},
               *ax[4] = {"ax1", "ax1", "ax1", "ax3"};
    for (int k = 0; k < 4; k++) {
        char sn[16], yn[16], nn[16];
        snprintf(sn, sizeof sn, "%s_s", names[k]);
        snprintf(yn, sizeof yn, "%s_y", names[k]);
        snprintf(nn, sizeof nn, "%s_neg", names[k]);
        const char *si[] = {"r", st[k], en[k], ax[k]}, *so[] = {sn}, *ni[] = {sn}, *no[] = {yn};
        fa_graph_add_node(ctx, g, names[k], "Slice", "", 4, si, 1, so);
        fa_graph_add_node(ctx, g, nn, "Neg", "", 1, ni, 1, no);
        fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, yn));
    }
    assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    uint64_t off = 0;
    assert_true(fa_slice_contiguous(g, g->nodes[1], &off)); /* hi */
    assert_int_equal(off, (uint64_t)(C / 2 * H * W * 4));
    assert_false(fa_slice_contiguous(g, g->nodes[7], &off)); /* cols */
    fa_exec *e = NULL;
    fa_exec_options o = {.target = FA_TARGET_CPU, .threads = 2};
    if (fa_exec_create(ctx, g, &o, &e)) fail_msg("%s", fa_ctx_errmsg(ctx));
    int64_t n = C * H * W;
    float *xv = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) xv[i] = (float)(i % 11) - 5.0f;
    fa_value in = {.dtype = FA_DTYPE_FLOAT, .rank = 4, .data = xv};
    memcpy(in.dims, xd, sizeof xd);
    assert_int_equal(fa_exec_set_input(ctx, e, 0, &in), FA_OK);
    seen_slices s = {0};
    fa_exec_observer obs = {.user = &s, .kernel_begin = on_slice};
    for (int run = 0; run < 2; run++) {
        s.n = 0;
        assert_int_equal(fa_exec_run(ctx, e, &obs), FA_OK);
        int64_t c0[4] = {C / 2, 0, 1, 0}, nc[4] = {C - C / 2, C / 2, C / 2, C}, nw[4] = {W, W, W, W / 2};
        for (int k = 0; k < 4; k++) {
            char yn[16];
            snprintf(yn, sizeof yn, "%s_y", names[k]);
            const fa_value *y = fa_exec_output(e, out_of(g, yn));
            assert_non_null(y);
            for (int64_t c = 0; c < nc[k]; c++)
                for (int64_t h = 0; h < H; h++)
                    for (int64_t w = 0; w < nw[k]; w++) {
                        float want = -fmaxf(xv[((c0[k] + c) * H + h) * W + w], 0.0f);
                        assert_float_equal(((const float *)y->data)[(c * H + h) * nw[k] + w], want, 0);
                    }
        }
        assert_true(viewed(&s, "hi"));  /* contiguous, aligned offset: r's bytes */
        assert_true(viewed(&s, "lo"));  /* offset 0 */
        assert_false(viewed(&s, "cols")); /* not one run of r's bytes: copied */
        assert_int_equal(viewed(&s, "odd"), odd_aligned); /* one channel in: a view only where that keeps 64-byte alignment */
    }
    free(xv);
    fa_exec_free(e);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* A Slice selecting one contiguous run of an activation's bytes at an offset that keeps the
 * arena's alignment is a view into them (a batch-1 channel split: ShuffleNetV2's 26 a run);
 * one that is not a single run, or starts off the alignment, still copies. Values match either way. */
static void test_contiguous_slice_is_a_view_at_its_offset(void **st)
{
    (void)st;
    check_slices(32, 4, 4, true);  /* a channel is 64 bytes: every channel offset aligned */
    check_slices(32, 3, 3, false); /* a channel is 36 bytes: channel 1 is not, channel 16 is (576) */
}

static int g_split_views;
static void on_split(void *user, const fa_node *n, const char *name)
{
    (void)user;
    if (!strcmp(n->op_type, "Split") && !strcmp(name, FA_VIEW_KERNEL_NAME)) g_split_views++;
}

/* x [1,32,4,4] -> Relu -> r -> Split on axis (halves) -> a, b -> Neg each: on axis 1 every output
 * is one run of r's bytes (a view, fa_split_contiguous); on axis 2 (C > 1 before it) it copies. */
static void check_split(int axis)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("split");
    fa_graph_set_opset(ctx, g, "", 18); /* Split's num_outputs */
    int64_t xd[4] = {1, 32, 4, 4};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    const char *ir[] = {"x"}, *or_[] = {"r"}, *si[] = {"r"}, *so[] = {"a", "b"}, *ai[] = {"a"}, *ao[] = {"ya"}, *bi[] = {"b"},
               *bo[] = {"yb"};
    fa_graph_add_node(ctx, g, "relu", "Relu", "", 1, ir, 1, or_);
    fa_node *sp = fa_graph_add_node(ctx, g, "split", "Split", "", 1, si, 2, so);
    assert_non_null(fa_node_add_attr_int(g, sp, "axis", axis));
    assert_non_null(fa_node_add_attr_int(g, sp, "num_outputs", 2));
    fa_graph_add_node(ctx, g, "nega", "Neg", "", 1, ai, 1, ao);
    fa_graph_add_node(ctx, g, "negb", "Neg", "", 1, bi, 1, bo);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "ya"));
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "yb"));
    if (fa_graph_prepare(ctx, g, NULL)) fail_msg("%s", fa_ctx_errmsg(ctx));
    fa_exec *e = NULL;
    fa_exec_options o = {.target = FA_TARGET_CPU, .threads = 2};
    if (fa_exec_create(ctx, g, &o, &e)) fail_msg("%s", fa_ctx_errmsg(ctx));
    float xv[512];
    for (int i = 0; i < 512; i++) xv[i] = (float)(i % 13) - 6.0f;
    fa_value in = {.dtype = FA_DTYPE_FLOAT, .rank = 4, .data = xv};
    memcpy(in.dims, xd, sizeof xd);
    assert_int_equal(fa_exec_set_input(ctx, e, 0, &in), FA_OK);
    fa_exec_observer obs = {.kernel_begin = on_split};
    g_split_views = 0;
    assert_int_equal(fa_exec_run(ctx, e, &obs), FA_OK);
    assert_int_equal(g_split_views, axis == 1 ? 1 : 0);
    const fa_value *ya = fa_exec_output(e, out_of(g, "ya")), *yb = fa_exec_output(e, out_of(g, "yb"));
    for (int c = 0; c < 32; c++)
        for (int h = 0; h < 4; h++)
            for (int w = 0; w < 4; w++) {
                float want = -fmaxf(xv[(c * 4 + h) * 4 + w], 0.0f);
                bool first = axis == 1 ? c < 16 : h < 2;
                const fa_value *y = first ? ya : yb;
                int64_t cc = axis == 1 ? (first ? c : c - 16) : c, hh = axis == 1 ? h : (first ? h : h - 2), hn = axis == 1 ? 4 : 2;
                assert_float_equal(((const float *)y->data)[(cc * hn + hh) * 4 + w], want, 0);
            }
    fa_exec_free(e);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void test_contiguous_split_outputs_are_views(void **st)
{
    (void)st;
    check_split(1);
    check_split(2);
}

static int g_pad_views;
static void on_pad(void *user, const fa_node *n, const char *name)
{
    (void)user;
    if (!strcmp(n->op_type, "Pad") && !strcmp(name, FA_VIEW_KERNEL_NAME)) g_pad_views++;
}

/* The input coordinate a Pad of mode m reads for output coordinate o on an axis of size dim with
 * begin pad b, or -1 (the constant); ONNX Pad's definition, written out independently. */
static int64_t pad_src(const char *m, int64_t o, int64_t b, int64_t dim)
{
    int64_t c = o - b;
    if (c >= 0 && c < dim) return c;
    if (!strcmp(m, "constant")) return -1;
    if (!strcmp(m, "edge")) return c < 0 ? 0 : dim - 1;
    if (!strcmp(m, "wrap")) return ((c % dim) + dim) % dim;
    while (c < 0 || c >= dim) c = c < 0 ? -c : 2 * (dim - 1) - c; /* reflect */
    return c;
}

/* x [1,3,5,7] -> Relu -> r -> Pad(pads, mode, 0.5) -> p -> Neg -> y (or x -> Pad directly: a graph
 * input, copied): all-zero pads are a view of r
 * (fa_pad_identity: the kernel moves nothing); other pads copy, row by row of the innermost axis
 * (runs of padding filled, runs of consecutive source columns one memcpy), in every mode and on
 * outer and inner axes alike; Tile through the same copy. Values exact against the definitions. */
static void check_pad(const char *mode, const int64_t *pads, const char *op, bool direct)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("pad");
    fa_graph_set_opset(ctx, g, "", 18);
    const int64_t xd[4] = {1, 3, 5, 7};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_graph_add_input(ctx, g, x);
    i64_const(ctx, g, "pads", !strcmp(op, "Pad") ? 8 : 4, pads);
    int cv = fa_graph_tensor(g, "cv");
    const float half = 0.5f;
    fa_tensor_set_shape(g->tensors[cv], FA_DTYPE_FLOAT, 0, NULL);
    assert_int_equal(fa_tensor_set_data(ctx, g->tensors[cv], &half, sizeof half), FA_OK);
    g->tensors[cv]->flags |= FA_TENSOR_INITIALIZER;
    const char *ir[] = {"x"}, *or_[] = {"r"}, *pi[] = {direct ? "x" : "r", "pads", "cv"}, *po[] = {"p"}, *ni[] = {"p"},
               *no[] = {"y"};
    fa_graph_add_node(ctx, g, "relu", "Relu", "", 1, ir, 1, or_);
    fa_node *pn = fa_graph_add_node(ctx, g, "pad", op, "", !strcmp(op, "Pad") ? 3 : 2, pi, 1, po);
    if (!strcmp(op, "Pad")) assert_non_null(fa_node_add_attr_string(g, pn, "mode", mode));
    fa_graph_add_node(ctx, g, "neg", "Neg", "", 1, ni, 1, no);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    if (fa_graph_prepare(ctx, g, NULL)) fail_msg("%s", fa_ctx_errmsg(ctx));
    bool zero = !strcmp(op, "Pad");
    for (int k = 0; k < 8 && zero; k++) zero = pads[k] == 0;
    assert_int_equal(fa_pad_identity(g, pn), zero);
    fa_exec *e = NULL;
    fa_exec_options o = {.target = FA_TARGET_CPU, .threads = 2};
    if (fa_exec_create(ctx, g, &o, &e)) fail_msg("%s", fa_ctx_errmsg(ctx));
    float xv[105];
    for (int i = 0; i < 105; i++) xv[i] = (float)(i % 17) - 4.0f;
    fa_value in = {.dtype = FA_DTYPE_FLOAT, .rank = 4, .data = xv};
    memcpy(in.dims, xd, sizeof xd);
    assert_int_equal(fa_exec_set_input(ctx, e, 0, &in), FA_OK);
    fa_exec_observer obs = {.kernel_begin = on_pad};
    g_pad_views = 0;
    assert_int_equal(fa_exec_run(ctx, e, &obs), FA_OK);
    assert_int_equal(g_pad_views, zero && !direct ? 1 : 0); /* a graph input's Pad copies (its bytes are the caller's) */
    const fa_value *y = fa_exec_output(e, out_of(g, "y"));
    assert_non_null(y);
    int64_t od[4], n = 1;
    for (int k = 0; k < 4; k++) {
        od[k] = !strcmp(op, "Pad") ? xd[k] + pads[k] + pads[k + 4] : xd[k] * pads[k];
        assert_int_equal(y->dims[k], od[k]);
        n *= od[k];
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, src = 0, stride = 1;
        bool fill = false;
        int64_t c[4];
        for (int k = 3; k >= 0; k--) c[k] = rem % od[k], rem /= od[k];
        for (int k = 3; k >= 0; k--) {
            int64_t s_ = !strcmp(op, "Pad") ? pad_src(mode, c[k], pads[k], xd[k]) : c[k] % xd[k];
            if (s_ < 0) fill = true;
            src += s_ * stride;
            stride *= xd[k];
        }
        float want = fill ? -0.5f : direct ? -xv[src] : -fmaxf(xv[src], 0.0f);
        assert_float_equal(((const float *)y->data)[i], want, 0);
    }
    fa_exec_free(e);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void test_zero_pad_is_a_view_and_pads_copy_by_rows(void **st)
{
    (void)st;
    const int64_t zero[8] = {0}, inner[8] = {0, 0, 0, 2, 0, 0, 0, 3}, outer[8] = {0, 1, 2, 0, 0, 2, 1, 0},
                  both[8] = {0, 1, 1, 4, 0, 0, 2, 5}, crop[8] = {0, -1, 0, -2, 0, 1, -1, 3}, tile[4] = {1, 2, 3, 2};
    const char *modes[4] = {"constant", "reflect", "edge", "wrap"};
    const int64_t crop_tail[8] = {0, 0, 0, 0, 0, 0, -1, 0}; /* H cropped at its end, W whole */
    check_pad("constant", zero, "Pad", false);
    check_pad("reflect", zero, "Pad", false);
    check_pad("constant", zero, "Pad", true); /* copied: one run per row of the outer axes */
    for (int m = 0; m < 4; m++)
        for (int direct = 0; direct < 2; direct++) {
            check_pad(modes[m], inner, "Pad", direct);
            check_pad(modes[m], outer, "Pad", direct);
            check_pad(modes[m], both, "Pad", direct);
        }
    check_pad("constant", crop, "Pad", false);
    check_pad("constant", crop_tail, "Pad", true);
    check_pad("", tile, "Tile", false);
}

/* x [2,1,3,1,4] -> Relu -> r -> Transpose(perm) -> v -> Neg -> y: a Transpose that moves only
 * axes of extent 1 is a view of r (fa_transpose_identity); one that reorders longer axes copies.
 * Either way v holds r transposed by the spec's rule, checked element by element. */
static int transposes_viewed;
static void on_begin_transpose(void *user, const fa_node *n, const char *name)
{
    (void)user;
    if (!strcmp(n->op_type, "Transpose") && !strcmp(name, FA_VIEW_KERNEL_NAME)) transposes_viewed++;
}

static void check_transpose(const int64_t *perm, bool view)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("transpose-view");
    fa_graph_set_opset(ctx, g, "", 17);
    const int64_t xd[5] = {2, 1, 3, 1, 4};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 5, xd);
    fa_graph_add_input(ctx, g, x);
    const char *i1[] = {"x"}, *o1[] = {"r"}, *i2[] = {"r"}, *o2[] = {"v"}, *i3[] = {"v"}, *o3[] = {"y"};
    fa_graph_add_node(ctx, g, "relu", "Relu", "", 1, i1, 1, o1);
    fa_node *t = fa_graph_add_node(ctx, g, "tr", "Transpose", "", 1, i2, 1, o2);
    fa_node_add_attr_ints(g, t, "perm", perm, 5);
    fa_graph_add_node(ctx, g, "neg", "Neg", "", 1, i3, 1, o3);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    assert_int_equal(fa_transpose_identity(g, t), view);
    fa_exec *e = NULL;
    fa_exec_options o = {.target = FA_TARGET_CPU, .threads = 2};
    if (fa_exec_create(ctx, g, &o, &e)) fail_msg("%s", fa_ctx_errmsg(ctx));
    float xv[24];
    for (int i = 0; i < 24; i++) xv[i] = (float)((i * 5) % 11) - 2.0f;
    fa_value in = {.dtype = FA_DTYPE_FLOAT, .rank = 5, .data = xv};
    memcpy(in.dims, xd, sizeof xd);
    assert_int_equal(fa_exec_set_input(ctx, e, 0, &in), FA_OK);
    transposes_viewed = 0;
    fa_exec_observer obs = {.kernel_begin = on_begin_transpose};
    assert_int_equal(fa_exec_run(ctx, e, &obs), FA_OK);
    assert_int_equal(transposes_viewed, view ? 1 : 0);
    const fa_value *y = fa_exec_output(e, 0);
    int64_t od[5], ist[5], s1 = 1;
    for (int a = 4; a >= 0; a--) ist[a] = s1, s1 *= xd[a];
    for (int a = 0; a < 5; a++) od[a] = xd[perm[a]];
    for (int a = 0; a < 5; a++) assert_int_equal(y->dims[a], od[a]);
    for (int64_t i = 0; i < 24; i++) { /* output index i -> its coordinates -> the input element */
        int64_t rem = i, src = 0;
        for (int a = 4; a >= 0; a--) src += (rem % od[a]) * ist[perm[a]], rem /= od[a];
        assert_float_equal(((const float *)y->data)[i], -fmaxf(xv[src], 0.0f), 0);
    }
    fa_exec_free(e);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void test_transpose_of_unit_axes_is_a_view(void **st)
{
    (void)st;
    check_transpose((const int64_t[]){0, 3, 2, 1, 4}, true);  /* the two unit axes swap */
    check_transpose((const int64_t[]){1, 0, 2, 3, 4}, true);  /* a unit axis moves to the front */
    check_transpose((const int64_t[]){0, 1, 4, 3, 2}, false); /* 3 and 4 swap: a real transpose */
    check_transpose((const int64_t[]){2, 1, 0, 3, 4}, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_of_an_activation_shares_its_bytes_and_runs_nothing),
        cmocka_unit_test(test_view_of_a_graph_input_still_copies),
        cmocka_unit_test(test_contiguous_slice_is_a_view_at_its_offset),
        cmocka_unit_test(test_contiguous_split_outputs_are_views),
        cmocka_unit_test(test_zero_pad_is_a_view_and_pads_copy_by_rows),
        cmocka_unit_test(test_transpose_of_unit_axes_is_a_view),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
