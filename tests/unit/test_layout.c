/* tests/unit/test_layout — the layout planner a layout-aware target's executor uses
 * (fa_layout_plan_make / fa_layout_plan_of): where each tensor lives and which reorders run as
 * kernels, for a target whose convs and the elementwise ops between them prefer nChw8c, with a
 * residual Add whose two activations share the layout; and the cpu executor that walks the plan
 * (fa_exec_options.blocked_layouts): a small CNN gives the same outputs with and without blocked
 * layouts, the reorders it runs are exactly the planned ones (kernels of their own, in the trace),
 * a graph of plain consumers gets no blocked tensor, and the baseline executor no reorder; an
 * executor told to keep a graph input and output blocked (fa_exec_options.input_layouts /
 * output_layouts, what the applier gives a cluster's fused sub-graph) runs no reorder at those
 * boundaries and still hands out plain values; a Concat on channels of blocked inputs. */
#include <math.h>

#include "codegen_cases.h"
#include "collector/collector.h"
#include "runtime/runtime-impl.h" /* a stand-in target: a copy of cpu's tables */

static fa_layout blocked_convs(const fa_graph *g, const fa_node *n, fa_layout plan)
{
    (void)g;
    (void)plan;
    return !strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "Relu") || !strcmp(n->op_type, "Add") ? FA_LAYOUT_NCHW8C
                                                                                                      : FA_LAYOUT_PLAIN;
}

static fa_layout out_of_range(const fa_graph *g, const fa_node *n, fa_layout plan)
{
    (void)g;
    (void)plan;
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
    fa_target_exec_i fake_exec = *fake.exec;
    fake.name = "blocked";
    fake.exec = &fake_exec;
    fake_exec.preferred_layout = blocked_convs;
    fa_layout_plan p;
    assert_int_equal(fa_layout_plan_make(t->ctx, &fake, t->g, FA_LAYOUT_NCHW8C, &p), FA_OK);
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

    fake_exec.preferred_layout = out_of_range; /* a broken table is an error, not a silent plain run */
    assert_int_equal(fa_layout_plan_make(t->ctx, &fake, t->g, FA_LAYOUT_NCHW8C, &p), FA_ERR_INTERNAL);
    assert_null(p.layout);
    tc_free(t);
}

/* x -> Conv -> c1 -> Conv -> c2; Add(c2, c1) -> a -> Flatten -> f: the residual's two activations. */
static void test_residual_add_reads_both_activations_blocked(void **s)
{
    (void)s;
    tc *t = tc_new(17);
    int64_t xd[4] = {1, 16, 8, 8}, wd[4] = {16, 16, 1, 1};
    float w[256];
    for (int i = 0; i < 256; i++) w[i] = (float)(i % 5) * 0.01f;
    tc_input(t, "x", 4, xd);
    tc_const(t, "w1", 4, wd, w);
    tc_const(t, "w2", 4, wd, w);
    tc_node(t, "Conv", "x", "w1", NULL, "c1");
    tc_node(t, "Conv", "c1", "w2", NULL, "c2");
    tc_node(t, "Add", "c2", "c1", NULL, "a");
    tc_node(t, "Flatten", "a", NULL, NULL, "f");
    tc_output(t, "f");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    fa_target_iface fake = *fa_target_get(FA_TARGET_CPU);
    fa_target_exec_i fake_exec = *fake.exec;
    fake.exec = &fake_exec;
    fake_exec.preferred_layout = blocked_convs;
    fa_layout_plan p;
    assert_int_equal(fa_layout_plan_make(t->ctx, &fake, t->g, FA_LAYOUT_NCHW8C, &p), FA_OK);
    assert_int_equal(p.layout[tid(t, "a")], FA_LAYOUT_NCHW8C);
    /* x in, a out; c1 is read blocked by both the conv and the Add: no reorder of it */
    assert_int_equal(p.n_reorders, 2);
    assert_int_equal(p.reorders[0].tensor, tid(t, "x"));
    assert_int_equal(p.reorders[1].tensor, tid(t, "a"));
    assert_string_equal(t->g->nodes[p.reorders[1].consumer]->op_type, "Flatten");
    fa_layout_plan_free(&p);
    tc_free(t);
}

static fa_layout blocked_convs_concat(const fa_graph *g, const fa_node *n, fa_layout plan)
{
    return !strcmp(n->op_type, "Concat") ? FA_LAYOUT_NCHW8C : blocked_convs(g, n, plan);
}

/* x[1,16,8,8] -> Conv -> c1; Concat(c1, p) on channels, p a plain graph input [1,16,8,8]; then
 * either Flatten (reads plain only) or a Conv (starts a region) and a Flatten. */
static tc *concat_of_blocked_and_plain(bool conv_after)
{
    tc *t = tc_new(17);
    int64_t xd[4] = {1, 16, 8, 8}, wd[4] = {16, 16, 1, 1}, w3d[4] = {16, 32, 1, 1};
    static float w[512];
    for (int i = 0; i < 512; i++) w[i] = (float)(i % 5) * 0.01f;
    tc_input(t, "x", 4, xd);
    tc_input(t, "p", 4, xd);
    tc_const(t, "w1", 4, wd, w);
    tc_const(t, "w3", 4, w3d, w);
    tc_node(t, "Conv", "x", "w1", NULL, "c1");
    fa_node *cat = tc_node(t, "Concat", "c1", "p", NULL, "y");
    assert_non_null(fa_node_add_attr_int(t->g, cat, "axis", 1));
    if (conv_after) {
        tc_node(t, "Conv", "y", "w3", NULL, "c3");
        tc_node(t, "Flatten", "c3", NULL, NULL, "f");
    } else {
        tc_node(t, "Flatten", "y", NULL, NULL, "f");
    }
    tc_output(t, "f");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    return t;
}

/* An op continues a blocked region only where that moves no more bytes than running plain
 * (fa_layout_continues): a Concat of a blocked half and a plain half read by a Flatten runs plain
 * (one reorder of the blocked half, where continuing reordered the plain half in and the whole
 * output out: ShuffleNetV2's channel shuffle); the same Concat read by a convolution continues
 * (running plain would reorder its output back in). */
static void test_op_continues_a_region_only_where_it_moves_fewer_bytes(void **s)
{
    (void)s;
    fa_target_iface fake = *fa_target_get(FA_TARGET_CPU);
    fa_target_exec_i fake_exec = *fake.exec;
    fake.exec = &fake_exec;
    fake_exec.preferred_layout = blocked_convs_concat;
    fa_layout_plan p;

    tc *t = concat_of_blocked_and_plain(false);
    assert_int_equal(fa_layout_plan_make(t->ctx, &fake, t->g, FA_LAYOUT_NCHW8C, &p), FA_OK);
    assert_int_equal(p.layout[tid(t, "c1")], FA_LAYOUT_NCHW8C);
    assert_int_equal(p.layout[tid(t, "y")], FA_LAYOUT_PLAIN);
    assert_int_equal(p.n_reorders, 2); /* x in, c1 out; neither p in nor y out */
    for (int i = 0; i < p.n_reorders; i++) assert_int_not_equal(p.reorders[i].tensor, tid(t, "y"));
    fa_layout_plan_free(&p);
    tc_free(t);

    t = concat_of_blocked_and_plain(true);
    assert_int_equal(fa_layout_plan_make(t->ctx, &fake, t->g, FA_LAYOUT_NCHW8C, &p), FA_OK);
    assert_int_equal(p.layout[tid(t, "y")], FA_LAYOUT_NCHW8C);
    assert_int_equal(p.n_reorders, 3); /* x in, p in, c3 out */
    fa_layout_plan_free(&p);
    tc_free(t);
}

static void test_targets_without_the_slot_keep_everything_plain(void **s)
{
    (void)s;
    tc *t = conv_chain();
    for (int i = 0; fa_target_at(i); i++) {
        fa_layout_plan p;
        fa_plan_layouts pl;
        fa_target_plan_layouts(fa_target_id(fa_target_at(i)), &pl);
        assert_int_equal(fa_layout_plan_make(t->ctx, fa_target_at(i), t->g, pl.deflt, &p), FA_OK);
        if (!fa_target_has(fa_target_id(fa_target_at(i)), FA_TARGET_CAP_LAYOUTS)) {
            assert_int_equal(p.n_reorders, 0);
            for (int k = 0; k < t->g->n_tensors; k++) assert_int_equal(p.layout[k], FA_LAYOUT_PLAIN);
        } else { /* the cpu target: its convs blocked, x in and c2 out */
            assert_int_not_equal(p.layout[tid(t, "c1")], FA_LAYOUT_PLAIN);
            assert_int_equal(p.layout[tid(t, "c2")], p.layout[tid(t, "c1")]);
            assert_int_equal(p.n_reorders, 2);
        }
        fa_layout_plan_free(&p);
    }
    tc_free(t);
}

/* Boundary layouts: x handed in nChw8c, c2 left in nChw8c: the first conv reads x with no
 * reorder, c2 needs one only for the Flatten (plain), none for the graph output; a plain
 * consumer of a blocked input gets its reorder. */
static void test_boundary_layouts_remove_the_boundary_reorders(void **s)
{
    (void)s;
    tc *t = conv_chain();
    fa_layout nl[16] = {0};
    for (int i = 0; i < t->g->n_nodes; i++)
        if (t->g->nodes[i]) nl[i] = blocked_convs(t->g, t->g->nodes[i], FA_LAYOUT_NCHW8C);
    const fa_layout in[1] = {FA_LAYOUT_NCHW8C}, out[2] = {FA_LAYOUT_PLAIN, FA_LAYOUT_NCHW8C}; /* outputs f, c2 */
    fa_layout_plan p;
    assert_int_equal(fa_layout_plan_of(t->ctx, t->g, nl, NULL, in, out, &p), FA_OK);
    assert_int_equal(p.layout[tid(t, "x")], FA_LAYOUT_NCHW8C);
    assert_int_equal(p.layout[tid(t, "w1")], FA_LAYOUT_PLAIN); /* constants stay plain */
    assert_int_equal(p.n_reorders, 1);
    assert_int_equal(p.reorders[0].tensor, tid(t, "c2"));
    assert_int_equal(p.reorders[0].to, FA_LAYOUT_PLAIN);
    assert_string_equal(t->g->nodes[p.reorders[0].consumer]->op_type, "Flatten");
    fa_layout_plan_free(&p);
    /* the defaults (NULL): every boundary plain, as before */
    assert_int_equal(fa_layout_plan_of(t->ctx, t->g, nl, NULL, NULL, NULL, &p), FA_OK);
    assert_int_equal(p.layout[tid(t, "x")], FA_LAYOUT_PLAIN);
    assert_int_equal(p.n_reorders, 2);
    fa_layout_plan_free(&p);
    /* all plain nodes, x handed blocked: the first conv (plain) reads it through a reorder */
    fa_layout plain[16] = {0};
    assert_int_equal(fa_layout_plan_of(t->ctx, t->g, plain, NULL, in, NULL, &p), FA_OK);
    assert_int_equal(p.n_reorders, 1);
    assert_int_equal(p.reorders[0].tensor, tid(t, "x"));
    assert_int_equal(p.reorders[0].from, FA_LAYOUT_NCHW8C);
    assert_int_equal(p.reorders[0].to, FA_LAYOUT_PLAIN);
    fa_layout_plan_free(&p);
    const fa_layout bad[1] = {FA_LAYOUT_COUNT};
    assert_int_equal(fa_layout_plan_of(t->ctx, t->g, nl, NULL, bad, NULL, &p), FA_ERR_INTERNAL);
    assert_non_null(strstr(fa_ctx_errmsg(t->ctx), "'x'"));
    tc_free(t);
}

/* ---- the cpu executor on the plan ---- */

typedef struct seen {
    int n;
    char kernel[64][96];
    char node[64][64];
} seen;

static void on_begin(void *user, const fa_node *n, const char *k)
{
    seen *v = user;
    if (v->n >= 64) return;
    snprintf(v->kernel[v->n], sizeof v->kernel[0], "%s", k);
    snprintf(v->node[v->n], sizeof v->node[0], "%s", n->op_type);
    v->n++;
}

static void filled(float *w, int n, float scale, int seed)
{
    fa_rng r;
    fa_rng_seed(&r, (uint64_t)seed);
    for (int i = 0; i < n; i++) w[i] = fa_rng_uniform(&r, -scale, scale);
}

/* x[2,16,12,12] -> Conv 3x3 (24) -> Relu -> Conv 1x1 -> BatchNormalization -> Add residual -> MaxPool 2x2 -> depthwise
 * Conv 3x3 (C = 24, group 24) -> Sigmoid -> GlobalAveragePool -> Flatten -> Gemm (10) -> y.
 * C = 24 is not a multiple of 16: nChw16c pads it, and the Sigmoid (0 -> 0.5) must keep that
 * tail zero for the pool after it. (16 input channels: with 3 or 8, oneDNN 2.6 has no fast
 * convolution reading nChw16c, and the first conv runs plain, its output reordered.) */
static tc *small_cnn(void)
{
    tc *t = tc_new(17);
    int64_t xd[4] = {2, 16, 12, 12}, w1d[4] = {24, 16, 3, 3}, w2d[4] = {24, 24, 1, 1}, w3d[4] = {24, 1, 3, 3}, bd[1] = {24},
            gd[2] = {24, 10}, gb[1] = {10};
    static float w1[24 * 16 * 9], w2[24 * 24], w3[24 * 9], b[24], wg[240], bg[10];
    filled(w1, 24 * 16 * 9, 0.3f, 1);
    filled(w2, 24 * 24, 0.3f, 2);
    filled(w3, 24 * 9, 0.5f, 3);
    filled(b, 24, 0.2f, 4);
    filled(wg, 240, 0.5f, 5);
    filled(bg, 10, 0.1f, 6);
    tc_input(t, "x", 4, xd);
    tc_const(t, "w1", 4, w1d, w1);
    tc_const(t, "b1", 1, bd, b);
    tc_const(t, "w2", 4, w2d, w2);
    tc_const(t, "w3", 4, w3d, w3);
    tc_const(t, "wg", 2, gd, wg);
    tc_const(t, "bg", 1, gb, bg);
    const int64_t p1[4] = {1, 1, 1, 1}, k2[2] = {2, 2};
    fa_node *c1 = tc_node(t, "Conv", "x", "w1", "b1", "c1");
    fa_node_add_attr_ints(t->g, c1, "pads", p1, 4);
    tc_node(t, "Relu", "c1", NULL, NULL, "r1");
    tc_node(t, "Conv", "r1", "w2", NULL, "c2");
    static float sc[24], sh[24], mu[24], var[24];
    filled(sc, 24, 0.5f, 7);
    filled(sh, 24, 0.5f, 8);
    filled(mu, 24, 0.5f, 9);
    filled(var, 24, 0.4f, 10);
    for (int i = 0; i < 24; i++) var[i] += 0.5f, sc[i] += 1.0f;
    tc_const(t, "sc", 1, bd, sc);
    tc_const(t, "sh", 1, bd, sh);
    tc_const(t, "mu", 1, bd, mu);
    tc_const(t, "var", 1, bd, var);
    const char *bn_in[5] = {"c2", "sc", "sh", "mu", "var"}, *bn_out[1] = {"n2"};
    assert_non_null(fa_graph_add_node(t->ctx, t->g, "bn", "BatchNormalization", "", 5, bn_in, 1, bn_out));
    tc_node(t, "Add", "n2", "r1", NULL, "a");
    fa_node *mp = tc_node(t, "MaxPool", "a", NULL, NULL, "p");
    fa_node_add_attr_ints(t->g, mp, "kernel_shape", k2, 2);
    fa_node_add_attr_ints(t->g, mp, "strides", k2, 2);
    fa_node *dw = tc_node(t, "Conv", "p", "w3", NULL, "d");
    fa_node_add_attr_ints(t->g, dw, "pads", p1, 4);
    fa_node_add_attr_int(t->g, dw, "group", 24);
    tc_node(t, "Sigmoid", "d", NULL, NULL, "sg");
    tc_node(t, "GlobalAveragePool", "sg", NULL, NULL, "gp");
    tc_node(t, "Flatten", "gp", NULL, NULL, "f");
    tc_node(t, "Gemm", "f", "wg", "bg", "y");
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    return t;
}

/* Run g once with or without layouts, the kernels it launched in *v, output 0 copied to y. */
static void run_once(tc *t, bool blocked, seen *v, float *y, int64_t ny)
{
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2, .blocked_layouts = blocked};
    fa_exec *e = NULL;
    if (fa_exec_create(t->ctx, t->g, &eo, &e)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    assert_int_equal(fa_exec_fill_inputs(t->ctx, e, 11), FA_OK);
    memset(v, 0, sizeof *v);
    fa_exec_observer obs = {.user = v, .kernel_begin = on_begin};
    if (fa_exec_run(t->ctx, e, &obs)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    const fa_value *o = fa_exec_output(e, 0);
    assert_non_null(o);
    assert_int_equal(fa_value_numel(o), ny);
    memcpy(y, o->data, sizeof(float) * (size_t)ny);
    fa_exec_free(e);
}

/* This machine's blocked layout, as the cpu executor picks it: the layout a 16-channel 1x1 conv
 * writes with blocked layouts on (PLAIN when FA_BLOCKED_LAYOUT=plain turns them off). */
static fa_layout machine_layout(void)
{
    tc *t = tc_new(17);
    int64_t xd[4] = {1, 16, 4, 4}, wd[4] = {16, 16, 1, 1};
    float w[256] = {0};
    tc_input(t, "x", 4, xd);
    tc_const(t, "w", 4, wd, w);
    tc_node(t, "Conv", "x", "w", NULL, "c");
    tc_node(t, "Relu", "c", NULL, NULL, "y");
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2, .blocked_layouts = true};
    fa_exec *e = NULL;
    if (fa_exec_create(t->ctx, t->g, &eo, &e)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    fa_layout l = fa_exec_tensor_layout(e, tid(t, "c"));
    fa_exec_free(e);
    tc_free(t);
    return l;
}

/* Whether kernel name k runs on a plan layout (names one: "…(nChw16c)", "…(nhwc)", "nchw>nChw8c"). */
static bool on_a_layout(const char *k)
{
    for (int l = FA_LAYOUT_PLAIN + 1; l < FA_LAYOUT_COUNT; l++)
        if (strstr(k, fa_layout_name((fa_layout)l))) return true;
    return false;
}

static int count_reorders(const seen *v)
{
    int r = 0;
    for (int i = 0; i < v->n; i++) r += !strncmp(v->kernel[i], "dnnl:reorder(", 13);
    return r;
}

static void test_small_cnn_same_outputs_and_the_planned_reorders(void **s)
{
    (void)s;
    tc *t = small_cnn();
    float yp[20], yb[20];
    seen vp, vb;
    run_once(t, false, &vp, yp, 20);
    run_once(t, true, &vb, yb, 20);
    double worst = 0, mag = 0;
    for (int i = 0; i < 20; i++) {
        worst = fmax(worst, fabs((double)yp[i] - yb[i]));
        mag = fmax(mag, fabs((double)yp[i]));
    }
    print_message("small CNN: max |plain - blocked| %.3g (max |y| %.3g), %d kernels plain, %d blocked\n", worst, mag, vp.n, vb.n);
    assert_true(mag > 0.01);
    assert_true(worst <= 1e-5 * mag); /* the same ops on the same values; only the summation order may differ */
    /* the baseline (plain) executor: no reorder, no blocked kernel */
    assert_int_equal(count_reorders(&vp), 0);
    for (int i = 0; i < vp.n; i++) assert_false(on_a_layout(vp.kernel[i]));
    /* blocked: x into the first conv, gp out before Flatten, nothing else (the residual Add, the
     * pool, the depthwise conv, the Sigmoid and the global pool read and write the layout) */
    char into[64];
    snprintf(into, sizeof into, "dnnl:reorder(nchw>%s)", fa_layout_name(machine_layout()));
    assert_int_equal(count_reorders(&vb), 2);
    assert_string_equal(vb.node[0], "Reorder");
    assert_string_equal(vb.kernel[0], into);
    assert_string_equal(vb.node[1], "Conv");
    int fl = -1;
    for (int i = 0; i < vb.n; i++)
        if (!strcmp(vb.node[i], "Flatten")) fl = i;
    assert_true(fl > 0);
    assert_string_equal(vb.node[fl - 1], "Reorder");
    assert_true(strstr(vb.kernel[fl - 1], ">nchw)") != NULL);
    const char *blocked_ops[] = {"Conv", "Relu", "BatchNormalization", "Add", "MaxPool", "Sigmoid", "GlobalAveragePool"};
    for (int i = 0; i < vb.n; i++)
        for (size_t k = 0; k < sizeof blocked_ops / sizeof *blocked_ops; k++)
            if (!strcmp(vb.node[i], blocked_ops[k]) && !strstr(vb.kernel[i], fa_layout_name(machine_layout())))
                fail_msg("%s ran %s, not on the blocked layout", vb.node[i], vb.kernel[i]);

    /* the collected trace names the reorders as kernels of their own (op Reorder, no graph node) */
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2, .blocked_layouts = true};
    fa_exec *e = NULL;
    fa_trace *tr = NULL;
    assert_int_equal(fa_exec_create(t->ctx, t->g, &eo, &e), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(t->ctx, e, 11), FA_OK);
    if (fa_collect(t->ctx, e, t->g, 0, 2, NULL, NULL, &tr)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    int reorders = 0;
    for (size_t i = 0; i < tr->n_acts; i++)
        if (tr->acts[i].op_type && !strcmp(tr->acts[i].op_type, "Reorder")) {
            reorders++;
            assert_int_equal(tr->acts[i].node, -1);
            assert_true(!strncmp(tr->acts[i].name, "dnnl:reorder(", 13));
            assert_true(tr->acts[i].bytes_read > 0);
        }
    assert_int_equal(reorders, 2 * 2);
    fa_trace_free(tr);
    fa_exec_free(e);
    tc_free(t);
}

/* A first conv on a 3-channel image: where oneDNN has no fast convolution reading 3 channels in
 * the layout (nChw8c/nChw16c: its jit convolution wants whole blocks) it reads the image plain
 * and writes the layout, one reorder only, the pooled result back to plain; where it has one
 * (nhwc: its brgemm convolution reads 3 channels last) the image is reordered in — a 3-channel
 * copy — and the conv reads the layout: two reorders. x[1,3,16,16] -> Conv -> Relu ->
 * GlobalAveragePool -> Flatten. */
static void test_first_conv_reads_the_plain_image(void **s)
{
    (void)s;
    tc *t = tc_new(17);
    int64_t xd[4] = {1, 3, 16, 16}, wd[4] = {32, 3, 3, 3};
    static float w[32 * 27];
    filled(w, 32 * 27, 0.4f, 12);
    tc_input(t, "x", 4, xd);
    tc_const(t, "w", 4, wd, w);
    tc_node(t, "Conv", "x", "w", NULL, "c");
    tc_node(t, "Relu", "c", NULL, NULL, "r");
    tc_node(t, "GlobalAveragePool", "r", NULL, NULL, "gp");
    tc_node(t, "Flatten", "gp", NULL, NULL, "y");
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    float yp[32], yb[32];
    seen vp, vb;
    run_once(t, false, &vp, yp, 32);
    run_once(t, true, &vb, yb, 32);
    for (int i = 0; i < 32; i++) assert_true(fabs((double)yp[i] - yb[i]) <= 1e-5 * (1 + fabs((double)yp[i])));
    print_message("first conv: %s, %s\n", vb.kernel[0], vb.kernel[1]);
    fa_layout L = machine_layout();
    char from_plain[32], on_l[32], into[64];
    snprintf(from_plain, sizeof from_plain, "(nchw>%s)", fa_layout_name(L));
    snprintf(on_l, sizeof on_l, "(%s)", fa_layout_name(L));
    snprintf(into, sizeof into, "dnnl:reorder(nchw>%s)", fa_layout_name(L));
    if (!strcmp(vb.node[0], "Conv")) { /* reads the plain image */
        assert_non_null(strstr(vb.kernel[0], from_plain));
        assert_int_equal(count_reorders(&vb), 1);
    } else { /* reads the image in the layout, reordered just before */
        assert_string_equal(vb.kernel[0], into);
        assert_string_equal(vb.node[1], "Conv");
        assert_non_null(strstr(vb.kernel[1], on_l));
        assert_int_equal(count_reorders(&vb), 2);
    }
    tc_free(t);
}

/* x -> Relu -> Softmax -> Flatten: no convolution starts a blocked region, so nothing is blocked
 * even with layouts on (a Relu alone would pay two reorders). */
static void test_plain_consumers_get_no_blocked_tensor(void **s)
{
    (void)s;
    tc *t = tc_new(17);
    int64_t xd[4] = {1, 16, 4, 4};
    tc_input(t, "x", 4, xd);
    tc_node(t, "Relu", "x", NULL, NULL, "r");
    tc_node(t, "Softmax", "r", NULL, NULL, "sm");
    tc_node(t, "Flatten", "sm", NULL, NULL, "y");
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    float y[256];
    seen v;
    run_once(t, true, &v, y, 256);
    assert_int_equal(v.n, 3);
    assert_int_equal(count_reorders(&v), 0);
    for (int i = 0; i < v.n; i++) assert_false(on_a_layout(v.kernel[i]));
    tc_free(t);
}

static double max_rel_diff(const fa_value *a, const fa_value *b)
{
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(fa_value_numel(a), fa_value_numel(b));
    double d = 0, m = 0;
    for (int64_t i = 0; i < fa_value_numel(a); i++) {
        d = fmax(d, fabs((double)((const float *)a->data)[i] - ((const float *)b->data)[i]));
        m = fmax(m, fabs((double)((const float *)b->data)[i]));
    }
    assert_true(m > 1e-3); /* a test on zeros proves nothing */
    return d / m;
}

/* x[1,16,8,8] -> Conv 3x3 (32) -> Relu -> Conv 1x1 (16) -> Add x -> y: with x handed blocked
 * and y left blocked, the run launches no reorder at all (the first conv and the residual Add
 * read x blocked, y stays blocked), and fa_exec_output gives the plain values of the plain
 * executor, converted once per run. */
static void test_blocked_input_and_output_no_reorder_plain_values(void **s)
{
    (void)s;
    fa_layout L = machine_layout();
    if (L == FA_LAYOUT_PLAIN) skip(); /* FA_BLOCKED_LAYOUT=plain: nothing to keep blocked */
    tc *t = tc_new(17);
    int64_t xd[4] = {1, 16, 8, 8}, w1d[4] = {32, 16, 3, 3}, w2d[4] = {16, 32, 1, 1};
    static float w1[32 * 16 * 9], w2[16 * 32];
    filled(w1, 32 * 16 * 9, 0.2f, 21);
    filled(w2, 16 * 32, 0.3f, 22);
    const int64_t p1[4] = {1, 1, 1, 1};
    tc_input(t, "x", 4, xd);
    tc_const(t, "w1", 4, w1d, w1);
    tc_const(t, "w2", 4, w2d, w2);
    fa_node *c1 = tc_node(t, "Conv", "x", "w1", NULL, "c1");
    fa_node_add_attr_ints(t->g, c1, "pads", p1, 4);
    tc_node(t, "Relu", "c1", NULL, NULL, "r1");
    tc_node(t, "Conv", "r1", "w2", NULL, "c2");
    tc_node(t, "Add", "c2", "x", NULL, "y");
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    const fa_layout in[1] = {L}, out[1] = {L};
    fa_exec_options po = {.target = FA_TARGET_CPU, .threads = 2}, bo = po;
    bo.blocked_layouts = true;
    bo.input_layouts = in;
    bo.output_layouts = out;
    fa_exec *ep = NULL, *eb = NULL;
    if (fa_exec_create(t->ctx, t->g, &po, &ep) || fa_exec_create(t->ctx, t->g, &bo, &eb)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    assert_int_equal(fa_exec_tensor_layout(eb, tid(t, "x")), L);
    assert_int_equal(fa_exec_tensor_layout(eb, tid(t, "y")), L);
    assert_int_equal(fa_exec_tensor_layout(ep, tid(t, "y")), FA_LAYOUT_PLAIN);
    assert_int_equal(fa_exec_tensor_layout(eb, tid(t, "w1")), FA_LAYOUT_PLAIN);
    /* the same plain values handed to both (fa_exec_set_input reorders x once for eb) */
    static float xv[16 * 64];
    filled(xv, 16 * 64, 1.0f, 23);
    fa_value x = {.dtype = FA_DTYPE_FLOAT, .rank = 4, .dims = {1, 16, 8, 8}, .data = xv};
    assert_int_equal(fa_exec_set_input(t->ctx, ep, 0, &x), FA_OK);
    assert_int_equal(fa_exec_set_input(t->ctx, eb, 0, &x), FA_OK);
    seen v;
    memset(&v, 0, sizeof v);
    fa_exec_observer obs = {.user = &v, .kernel_begin = on_begin};
    if (fa_exec_run(t->ctx, ep, NULL) || fa_exec_run(t->ctx, eb, &obs)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    print_message("blocked boundaries: %d kernels:", v.n);
    for (int i = 0; i < v.n; i++) print_message(" %s", v.kernel[i]);
    print_message("\n");
    assert_int_equal(v.n, 4); /* conv, relu, conv, add: no reorder kernel */
    assert_int_equal(count_reorders(&v), 0);
    for (int i = 0; i < v.n; i++) assert_non_null(strstr(v.kernel[i], fa_layout_name(L)));
    const fa_value *yb = fa_exec_output(eb, 0), *yp = fa_exec_output(ep, 0);
    assert_true(max_rel_diff(yb, yp) <= 1e-5);
    assert_ptr_equal(fa_exec_output(eb, 0), yb); /* converted once, cached until the next run */
    /* new input values: the next run's output is converted again, not the cached one */
    for (int i = 0; i < 16 * 64; i++) xv[i] = -0.5f * xv[i] + 0.25f;
    assert_int_equal(fa_exec_set_input(t->ctx, ep, 0, &x), FA_OK);
    assert_int_equal(fa_exec_set_input(t->ctx, eb, 0, &x), FA_OK);
    if (fa_exec_run(t->ctx, ep, NULL) || fa_exec_run(t->ctx, eb, NULL)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    assert_true(max_rel_diff(fa_exec_output(eb, 0), fa_exec_output(ep, 0)) <= 1e-5);
    /* fill_inputs fills plain values and reorders them the same way */
    assert_int_equal(fa_exec_fill_inputs(t->ctx, ep, 5), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(t->ctx, eb, 5), FA_OK);
    if (fa_exec_run(t->ctx, ep, NULL) || fa_exec_run(t->ctx, eb, NULL)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    assert_true(max_rel_diff(fa_exec_output(eb, 0), fa_exec_output(ep, 0)) <= 1e-5);
    fa_exec_free(ep);
    fa_exec_free(eb);
    tc_free(t);
}

/* A blocked boundary on a tensor no blocked layout describes (rank 2) is refused, naming it. */
static void test_blocked_boundary_on_a_matrix_is_refused(void **s)
{
    (void)s;
    tc *t = conv_chain(); /* outputs f [1,1024] and c2 */
    const fa_layout out[2] = {FA_LAYOUT_NCHW16C, FA_LAYOUT_PLAIN};
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2, .blocked_layouts = true, .output_layouts = out};
    fa_exec *e = NULL;
    assert_int_not_equal(fa_exec_create(t->ctx, t->g, &eo, &e), FA_OK);
    assert_null(e);
    print_message("refused: %s\n", fa_ctx_errmsg(t->ctx));
    assert_non_null(strstr(fa_ctx_errmsg(t->ctx), "graph output 'f'"));
    tc_free(t);
}

/* t's graph on a plain executor (*ep) and a blocked one (*eb), both run once on the same random
 * inputs, the blocked run's kernels recorded in *v; returns the kernel the blocked run gave node
 * `node`. */
static const char *run_plain_and_blocked(tc *t, seen *v, fa_exec **ep, fa_exec **eb, const char *node)
{
    fa_exec_options po = {.target = FA_TARGET_CPU, .threads = 2}, bo = po;
    bo.blocked_layouts = true;
    if (fa_exec_create(t->ctx, t->g, &po, ep) || fa_exec_create(t->ctx, t->g, &bo, eb)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    assert_int_equal(fa_exec_fill_inputs(t->ctx, *ep, 3), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(t->ctx, *eb, 3), FA_OK);
    memset(v, 0, sizeof *v);
    fa_exec_observer obs = {.user = v, .kernel_begin = on_begin};
    if (fa_exec_run(t->ctx, *ep, NULL) || fa_exec_run(t->ctx, *eb, &obs)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    const char *k = NULL;
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->node[i], node)) k = v->kernel[i];
    assert_non_null(k);
    return k;
}

/* x[1,16,8,8] -> Conv (ca channels) and Conv (cb channels) -> Concat on channels -> Relu -> y:
 * with both branches blocked and every C a multiple of the block, the Concat runs on the blocked
 * layout (oneDNN concat) and y equals the plain run's; with a C off the block the Concat reads
 * plain copies, same values. */
static void concat_case(int64_t ca, int64_t cb, fa_layout L, bool expect_blocked)
{
    tc *t = tc_new(17);
    int64_t xd[4] = {1, 16, 8, 8}, wad[4] = {ca, 16, 1, 1}, wbd[4] = {cb, 16, 1, 1};
    static float wa[64 * 16], wb[64 * 16];
    filled(wa, (int)(ca * 16), 0.3f, 31);
    filled(wb, (int)(cb * 16), 0.3f, 32);
    tc_input(t, "x", 4, xd);
    tc_const(t, "wa", 4, wad, wa);
    tc_const(t, "wb", 4, wbd, wb);
    tc_node(t, "Conv", "x", "wa", NULL, "a");
    tc_node(t, "Conv", "x", "wb", NULL, "b");
    fa_node *cat = tc_node(t, "Concat", "a", "b", NULL, "cat");
    fa_node_add_attr_int(t->g, cat, "axis", 1);
    tc_node(t, "Relu", "cat", NULL, NULL, "y");
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    fa_exec *ep = NULL, *eb = NULL;
    seen v;
    const char *ck = run_plain_and_blocked(t, &v, &ep, &eb, "Concat");
    print_message("concat %lld+%lld channels: %s, %d reorders\n", (long long)ca, (long long)cb, ck, count_reorders(&v));
    assert_int_equal(fa_exec_tensor_layout(eb, tid(t, "a")), L);
    if (expect_blocked) {
        assert_non_null(strstr(ck, fa_layout_name(L)));
        assert_int_equal(fa_exec_tensor_layout(eb, tid(t, "cat")), L);
        assert_int_equal(count_reorders(&v), 2); /* x into the convs, y out */
    } else {
        assert_false(on_a_layout(ck));
        assert_int_equal(fa_exec_tensor_layout(eb, tid(t, "cat")), FA_LAYOUT_PLAIN);
    }
    assert_true(max_rel_diff(fa_exec_output(eb, 0), fa_exec_output(ep, 0)) <= 1e-5);
    fa_exec_free(ep);
    fa_exec_free(eb);
    tc_free(t);
}

static void test_concat_on_channels_of_blocked_inputs(void **s)
{
    (void)s;
    fa_layout L = machine_layout();
    if (L == FA_LAYOUT_PLAIN) skip();
    concat_case(32, 16, L, true);
    /* 20 channels: a multiple of neither block — plain copies; nhwc pads nothing, so on it too */
    concat_case(20, 16, L, 20 % fa_layout_channel_block(L) == 0);
}

/* A Concat of 25 blocked activations (DenseNet-121's third block concatenates up to 25): x[2,16,6,6]
 * -> 25 convolutions of 16 channels -> Concat -> Relu -> y runs the Concat on the blocked layout
 * (our copy of each input's batch slab, or per pixel in nhwc) like a two-input one, and y equals
 * the plain run's. The blocked Concat took at
 * most 18 inputs (a fixed argument array), and DenseNet's last seven ran plain between 34
 * reorders. */
static void test_concat_of_many_blocked_inputs(void **s)
{
    (void)s;
    fa_layout L = machine_layout();
    if (L == FA_LAYOUT_PLAIN) skip();
    enum { K = 25 };
    tc *t = tc_new(17);
    int64_t xd[4] = {2, 16, 6, 6}, wd[4] = {16, 16, 1, 1}; /* batch 2: each input's slab per batch */
    static float w[K][16 * 16];
    tc_input(t, "x", 4, xd);
    const char *ins[K];
    static char names[K][2][16];
    for (int k = 0; k < K; k++) {
        snprintf(names[k][0], sizeof names[k][0], "w%d", k);
        snprintf(names[k][1], sizeof names[k][1], "c%d", k);
        filled(w[k], 16 * 16, 0.3f, 40 + k);
        tc_const(t, names[k][0], 4, wd, w[k]);
        tc_node(t, "Conv", "x", names[k][0], NULL, names[k][1]);
        ins[k] = names[k][1];
    }
    const char *outs[1] = {"cat"};
    fa_node *cat = fa_graph_add_node(t->ctx, t->g, "Concat", "Concat", "", K, ins, 1, outs);
    assert_non_null(cat);
    fa_node_add_attr_int(t->g, cat, "axis", 1);
    tc_node(t, "Relu", "cat", NULL, NULL, "y");
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    fa_exec *ep = NULL, *eb = NULL;
    seen v;
    const char *ck = run_plain_and_blocked(t, &v, &ep, &eb, "Concat");
    print_message("concat of %d: %s, %d reorders\n", K, ck, count_reorders(&v));
    assert_non_null(strstr(ck, fa_layout_name(L)));
    assert_int_equal(fa_exec_tensor_layout(eb, tid(t, "cat")), L);
    assert_true(max_rel_diff(fa_exec_output(eb, 0), fa_exec_output(ep, 0)) <= 1e-5);
    fa_exec_free(ep);
    fa_exec_free(eb);
    tc_free(t);
}

/* x[1,16,8,8] -> Conv (24) -> Sigmoid -> sg; squeeze-excitation: GlobalAveragePool -> Conv 1x1 ->
 * Sigmoid -> s[1,24,1,1], Mul(s, sg) with the broadcast scale as input 0 (as torchvision writes
 * `scale * input`); then two 1x1 convs c2, c3 (c3 with bias 4, so far from 0), Div(c2, c3), a last
 * conv, GlobalAveragePool -> Flatten -> y. C = 24 pads to 32 under nChw16c: a Div on the layout
 * would compute 0/0 = NaN in the padded tail, which the last conv multiplies by its zero-padded
 * weights into every output, so it runs plain; the Mul runs on the layout with the [1,24,1,1]
 * scale broadcast from the layout too (read as a [1,24,8,8] tensor it gave 0.198 of 0.201 wrong),
 * oneDNN's jit binary, with no reorder around it. The outputs equal the plain executor's. */
static void test_broadcast_operand_plain_and_division_on_padded_tail_plain(void **s)
{
    (void)s;
    tc *t = tc_new(17);
    int64_t xd[4] = {1, 16, 8, 8}, w1d[4] = {24, 16, 1, 1}, wd[4] = {24, 24, 1, 1}, bd[1] = {24};
    static float w1[24 * 16], we[24 * 24], w2[24 * 24], w3[24 * 24], w4[24 * 24], b3[24];
    filled(w1, 24 * 16, 0.4f, 21);
    filled(we, 24 * 24, 0.4f, 22);
    filled(w2, 24 * 24, 0.4f, 23);
    filled(w3, 24 * 24, 0.1f, 24);
    filled(w4, 24 * 24, 0.4f, 25);
    for (int i = 0; i < 24; i++) b3[i] = 4.0f;
    tc_input(t, "x", 4, xd);
    tc_const(t, "w1", 4, w1d, w1);
    tc_const(t, "we", 4, wd, we);
    tc_const(t, "w2", 4, wd, w2);
    tc_const(t, "w3", 4, wd, w3);
    tc_const(t, "b3", 1, bd, b3);
    tc_const(t, "w4", 4, wd, w4);
    tc_node(t, "Conv", "x", "w1", NULL, "c1");
    tc_node(t, "Sigmoid", "c1", NULL, NULL, "sg");
    tc_node(t, "GlobalAveragePool", "sg", NULL, NULL, "gp");
    tc_node(t, "Conv", "gp", "we", NULL, "e");
    tc_node(t, "Sigmoid", "e", NULL, NULL, "sc");
    tc_node(t, "Mul", "sc", "sg", NULL, "m");
    tc_node(t, "Conv", "m", "w2", NULL, "c2");
    tc_node(t, "Conv", "m", "w3", "b3", "c3");
    tc_node(t, "Div", "c2", "c3", NULL, "q");
    tc_node(t, "Conv", "q", "w4", NULL, "c4");
    tc_node(t, "GlobalAveragePool", "c4", NULL, NULL, "gp2");
    tc_node(t, "Flatten", "gp2", NULL, NULL, "y");
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    float yp[24], yb[24];
    seen vp, vb;
    run_once(t, false, &vp, yp, 24);
    run_once(t, true, &vb, yb, 24);
    double worst = 0, mag = 0;
    for (int i = 0; i < 24; i++) {
        assert_true(isfinite(yb[i]));
        worst = fmax(worst, fabs((double)yp[i] - yb[i]));
        mag = fmax(mag, fabs((double)yp[i]));
    }
    print_message("squeeze-excitation + Div: max |plain - blocked| %.3g (max |y| %.3g)\n", worst, mag);
    assert_true(mag > 1e-3);
    assert_true(worst <= 1e-5 * mag);
    fa_layout L = machine_layout();
    int64_t block = fa_layout_channel_block(L); /* 1 (nhwc): no padded tail, the Div runs on the layout too */
    char bin[32];
    snprintf(bin, sizeof bin, "binary(%s)", fa_layout_name(L));
    /* nChw8c (forced on an AVX-512 cpu): oneDNN 2.6 offers only its reference binary for the
     * per-channel broadcast there, declined (commit_on), so the Mul may run plain */
    bool mul_on_layout = L != FA_LAYOUT_NCHW8C;
    for (int i = 0; i < vb.n; i++) {
        if (!strcmp(vb.node[i], "Mul") && mul_on_layout && !strstr(vb.kernel[i], bin))
            fail_msg("the squeeze-excitation Mul ran %s, not oneDNN binary on the blocked layout", vb.kernel[i]);
        if (!strcmp(vb.node[i], "Div") && (24 % block ? on_a_layout(vb.kernel[i]) : !strstr(vb.kernel[i], bin)))
            fail_msg("the Div ran %s (a padded channel tail: plain; none: on the layout)", vb.kernel[i]);
        if (!strcmp(vb.node[i], "Sigmoid") && i < 3 && !on_a_layout(vb.kernel[i]))
            fail_msg("the Sigmoid after the first conv ran %s, not on the blocked layout", vb.kernel[i]);
    }
    /* reorders: x in and the final pool out; with a padded tail also c2 and c3 out for the plain
     * Div and its result back in (a Mul run plain pays its own: not counted) */
    if (mul_on_layout) assert_int_equal(count_reorders(&vb), 24 % block ? 5 : 2);
    tc_free(t);
}

/* Capabilities are asked (fa_target_has), never read from a target's name: every registered
 * target's optional slots are set exactly for the capabilities its row declares. */
static void test_target_capabilities_agree_with_their_tables(void **s)
{
    (void)s;
    for (int i = 0; fa_target_at(i); i++) {
        const fa_target_iface *t = fa_target_at(i);
        fa_target id = fa_target_id(t);
        assert_int_equal(fa_target_has(id, FA_TARGET_CAP_LAYOUTS), t->exec->preferred_layout != NULL);
        assert_int_equal(fa_target_has(id, FA_TARGET_CAP_LAYOUTS), t->exec->reorder_kernel != NULL);
        assert_int_equal(fa_target_has(id, FA_TARGET_CAP_KERNEL_REPORT), t->fused->fused_resources != NULL);
        assert_string_equal(t->name, fa_target_name(id));
    }
    assert_false(fa_target_has(FA_TARGET_CPU, FA_TARGET_CAP_ACCELERATOR));
    assert_false(fa_target_has(FA_TARGET_COUNT, FA_TARGET_CAP_LAYOUTS));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocked_target_reorders_only_at_the_boundaries),
        cmocka_unit_test(test_residual_add_reads_both_activations_blocked),
        cmocka_unit_test(test_op_continues_a_region_only_where_it_moves_fewer_bytes),
        cmocka_unit_test(test_targets_without_the_slot_keep_everything_plain),
        cmocka_unit_test(test_target_capabilities_agree_with_their_tables),
        cmocka_unit_test(test_small_cnn_same_outputs_and_the_planned_reorders),
        cmocka_unit_test(test_first_conv_reads_the_plain_image),
        cmocka_unit_test(test_plain_consumers_get_no_blocked_tensor),
        cmocka_unit_test(test_boundary_layouts_remove_the_boundary_reorders),
        cmocka_unit_test(test_blocked_input_and_output_no_reorder_plain_values),
        cmocka_unit_test(test_blocked_boundary_on_a_matrix_is_refused),
        cmocka_unit_test(test_concat_on_channels_of_blocked_inputs),
        cmocka_unit_test(test_concat_of_many_blocked_inputs),
        cmocka_unit_test(test_broadcast_operand_plain_and_division_on_padded_tail_plain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
