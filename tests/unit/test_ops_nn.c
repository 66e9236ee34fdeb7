/* tests/unit/test_ops_nn — the conv/matmul/pool/norm/resize/quantize ops of graph/ops_nn.c:
 * shape inference and reference kernels against values written out by hand (ONNX spec examples)
 * and against small independent reference implementations written here in a different form
 * (output-centric convolution, scatter-form transposed convolution, naive triple loops). */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

/* ---- a one-node graph harness ---- */

#define MAXIO 10
typedef struct tn {
    fa_ctx *ctx;
    fa_graph *g;
    fa_node *n;
    const void *data[MAXIO];
    fa_value out[MAXIO];
} tn;

static tn *tn_new(const char *op, int opset, int nin, const char *const *ins, int nout,
                  const char *const *outs)
{
    tn *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->ctx = fa_ctx_create();
    t->g = fa_graph_create("t");
    assert_int_equal(fa_graph_set_opset(t->ctx, t->g, "", opset), FA_OK);
    t->n = fa_graph_add_node(t->ctx, t->g, "node_under_test", op, "", nin, ins, nout, outs);
    assert_non_null(t->n);
    assert_non_null(t->n->op);
    return t;
}

static void tn_free(tn *t)
{
    for (int i = 0; i < MAXIO; i++) free(t->out[i].data);
    fa_graph_free(t->g);
    fa_ctx_free(t->ctx);
    free(t);
}

/* Input i: shape + data; constant inputs carry their data in the graph (for shape inputs). */
static void tn_in(tn *t, int i, fa_dtype dt, int rank, const int64_t *dims, const void *data, bool as_const)
{
    fa_tensor *x = fa_graph_in(t->g, t->n, i);
    assert_non_null(x);
    fa_tensor_set_shape(x, dt, rank, dims);
    t->data[i] = data;
    if (as_const) {
        int64_t ne = 1;
        for (int k = 0; k < rank; k++) ne *= dims[k];
        assert_int_equal(fa_tensor_set_data(t->ctx, x, data, (size_t)ne * fa_dtype_size(dt)), FA_OK);
    }
}

static void tn_inf(tn *t, int i, int rank, const int64_t *dims, const float *data)
{
    tn_in(t, i, FA_DTYPE_FLOAT, rank, dims, data, false);
}

static fa_status tn_infer(tn *t) { return t->n->op->infer(t->ctx, t->g, t->n); }

/* Infer, allocate the outputs and run the reference kernel with 2 threads. */
static void tn_run(tn *t)
{
    fa_status st = tn_infer(t);
    if (st) fprintf(stderr, "infer: %s\n", fa_ctx_errmsg(t->ctx));
    assert_int_equal(st, FA_OK);
    fa_value in[MAXIO] = {0};
    for (int i = 0; i < t->n->n_inputs; i++) {
        fa_tensor *x = fa_graph_in(t->g, t->n, i);
        if (!x) continue;
        in[i].data = (void *)t->data[i];
        in[i].dtype = x->dtype;
        in[i].rank = x->rank;
        memcpy(in[i].dims, x->dims, sizeof in[i].dims);
    }
    for (int i = 0; i < t->n->n_outputs; i++) {
        fa_tensor *y = fa_graph_out(t->g, t->n, i);
        if (!y) continue;
        assert_true(y->rank >= 0);
        t->out[i].dtype = y->dtype;
        t->out[i].rank = y->rank;
        memcpy(t->out[i].dims, y->dims, sizeof y->dims);
        int64_t ne = fa_tensor_numel(y);
        assert_true(ne >= 0);
        t->out[i].data = calloc((size_t)(ne ? ne : 1), fa_dtype_size(y->dtype));
    }
    st = t->n->op->kernel(t->ctx, t->n, in, t->n->n_inputs, t->out, t->n->n_outputs, 2);
    if (st) fprintf(stderr, "kernel: %s\n", fa_ctx_errmsg(t->ctx));
    assert_int_equal(st, FA_OK);
}

static void expect_dims(const fa_value *v, int rank, const int64_t *dims)
{
    assert_int_equal(v->rank, rank);
    for (int i = 0; i < rank; i++) assert_int_equal(v->dims[i], dims[i]);
}

/* |got - want| <= 1e-5 + 1e-4 |want| everywhere (the conformance tolerance). */
static void expect_close(const float *got, const float *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= 1e-5 + 1e-4 * fabs((double)want[i]))) {
            fprintf(stderr, "%s: element %lld is %.7g, expected %.7g\n", what, (long long)i, got[i], want[i]);
            fail();
        }
}

static float *rnd(int64_t n, uint64_t seed)
{
    fa_rng r;
    fa_rng_seed(&r, seed);
    float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = fa_rng_uniform(&r, -1.0f, 1.0f);
    return v;
}

static int64_t numel(int r, const int64_t *d)
{
    int64_t p = 1;
    for (int i = 0; i < r; i++) p *= d[i];
    return p;
}

/* ================================ Conv ================================ */

static const char *const XWB[] = {"X", "W", "B"};
static const char *const XW[] = {"X", "W"};
static const char *const Y1[] = {"Y"};

/* The ONNX Conv doc examples: 5x5 input 0..24 (7x5 for the strided ones), 3x3 kernel of ones. */
static void test_conv_onnx_doc_examples(void **state)
{
    (void)state;
    float x[35], w[9];
    for (int i = 0; i < 35; i++) x[i] = (float)i;
    for (int i = 0; i < 9; i++) w[i] = 1;
    int64_t xd[4] = {1, 1, 5, 5}, wd[4] = {1, 1, 3, 3}, k[2] = {3, 3}, p1[4] = {1, 1, 1, 1};
    {
        tn *t = tn_new("Conv", 11, 2, XW, 1, Y1);
        tn_inf(t, 0, 4, xd, x);
        tn_inf(t, 1, 4, wd, w);
        fa_node_add_attr_ints(t->g, t->n, "kernel_shape", k, 2);
        fa_node_add_attr_ints(t->g, t->n, "pads", p1, 4);
        tn_run(t);
        const float want[25] = {12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81,
                                93, 144, 153, 162, 111, 72, 111, 117, 123, 84};
        expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 5, 5});
        expect_close(t->out[0].data, want, 25, "conv pads=1");
        tn_free(t);
    }
    {
        tn *t = tn_new("Conv", 11, 2, XW, 1, Y1);
        tn_inf(t, 0, 4, xd, x);
        tn_inf(t, 1, 4, wd, w);
        tn_run(t);
        const float want[9] = {54, 63, 72, 99, 108, 117, 144, 153, 162};
        expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 3, 3});
        expect_close(t->out[0].data, want, 9, "conv no pad");
        tn_free(t);
    }
    int64_t xd7[4] = {1, 1, 7, 5}, s2[2] = {2, 2}, pa[4] = {1, 0, 1, 0};
    {
        tn *t = tn_new("Conv", 11, 2, XW, 1, Y1);
        tn_inf(t, 0, 4, xd7, x);
        tn_inf(t, 1, 4, wd, w);
        fa_node_add_attr_ints(t->g, t->n, "pads", p1, 4);
        fa_node_add_attr_ints(t->g, t->n, "strides", s2, 2);
        tn_run(t);
        const float want[12] = {12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124};
        expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 4, 3});
        expect_close(t->out[0].data, want, 12, "conv strides pads");
        tn_free(t);
    }
    {
        tn *t = tn_new("Conv", 11, 2, XW, 1, Y1);
        tn_inf(t, 0, 4, xd7, x);
        tn_inf(t, 1, 4, wd, w);
        fa_node_add_attr_ints(t->g, t->n, "pads", pa, 4);
        fa_node_add_attr_ints(t->g, t->n, "strides", s2, 2);
        tn_run(t);
        const float want[8] = {21, 33, 99, 117, 189, 207, 171, 183};
        expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 4, 2});
        expect_close(t->out[0].data, want, 8, "conv asymmetric pads");
        tn_free(t);
    }
}

/* Output-centric direct convolution over 3-D (1-D/2-D use leading unit dims). */
typedef struct conv_cfg {
    const char *what;
    int sr;
    int64_t N, C, M, group;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    const char *auto_pad; /* NULL: explicit pads */
    bool bias;
    int64_t want_out[3];
} conv_cfg;

static void ref_conv(const conv_cfg *c, const float *X, const float *W, const float *B, float *Y,
                     const int64_t *out)
{
    int64_t in3[3] = {1, 1, 1}, k3[3] = {1, 1, 1}, s3[3] = {1, 1, 1}, d3[3] = {1, 1, 1}, p3[3] = {0, 0, 0}, o3[3] = {1, 1, 1};
    for (int i = 0; i < c->sr; i++) {
        int j = 3 - c->sr + i;
        in3[j] = c->in[i]; k3[j] = c->k[i]; s3[j] = c->s[i]; d3[j] = c->d[i]; p3[j] = c->pb[i]; o3[j] = out[i];
    }
    int64_t Cg = c->C / c->group, Mg = c->M / c->group;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t a = 0; a < o3[0]; a++)
                for (int64_t b = 0; b < o3[1]; b++)
                    for (int64_t e = 0; e < o3[2]; e++) {
                        double sum = B ? B[m] : 0;
                        for (int64_t ci = 0; ci < Cg; ci++)
                            for (int64_t ka = 0; ka < k3[0]; ka++)
                                for (int64_t kb = 0; kb < k3[1]; kb++)
                                    for (int64_t ke = 0; ke < k3[2]; ke++) {
                                        int64_t ia = a * s3[0] + ka * d3[0] - p3[0];
                                        int64_t ib = b * s3[1] + kb * d3[1] - p3[1];
                                        int64_t ie = e * s3[2] + ke * d3[2] - p3[2];
                                        if (ia < 0 || ib < 0 || ie < 0 || ia >= in3[0] || ib >= in3[1] || ie >= in3[2]) continue;
                                        int64_t cin = (m / Mg) * Cg + ci;
                                        double xv = X[(((n * c->C + cin) * in3[0] + ia) * in3[1] + ib) * in3[2] + ie];
                                        double wv = W[(((m * Cg + ci) * k3[0] + ka) * k3[1] + kb) * k3[2] + ke];
                                        sum += xv * wv;
                                    }
                        Y[(((n * c->M + m) * o3[0] + a) * o3[1] + b) * o3[2] + e] = (float)sum;
                    }
}

static void run_conv_cfg(const conv_cfg *c)
{
    int r = c->sr + 2;
    int64_t xd[5] = {c->N, c->C}, wd[5] = {c->M, c->C / c->group};
    for (int i = 0; i < c->sr; i++) xd[i + 2] = c->in[i], wd[i + 2] = c->k[i];
    float *X = rnd(numel(r, xd), 1), *W = rnd(numel(r, wd), 2), *B = rnd(c->M, 3);
    tn *t = tn_new("Conv", 11, c->bias ? 3 : 2, XWB, 1, Y1);
    tn_inf(t, 0, r, xd, X);
    tn_inf(t, 1, r, wd, W);
    if (c->bias) tn_inf(t, 2, 1, &c->M, B);
    int64_t pads[6];
    for (int i = 0; i < c->sr; i++) pads[i] = c->pb[i], pads[i + c->sr] = c->pe[i];
    if (c->auto_pad) fa_node_add_attr_string(t->g, t->n, "auto_pad", c->auto_pad);
    else fa_node_add_attr_ints(t->g, t->n, "pads", pads, 2 * c->sr);
    fa_node_add_attr_ints(t->g, t->n, "strides", c->s, c->sr);
    fa_node_add_attr_ints(t->g, t->n, "dilations", c->d, c->sr);
    if (c->group != 1) fa_node_add_attr_int(t->g, t->n, "group", c->group);
    tn_run(t);
    int64_t yd[5] = {c->N, c->M};
    for (int i = 0; i < c->sr; i++) yd[i + 2] = c->want_out[i];
    expect_dims(&t->out[0], r, yd);
    float *want = malloc(sizeof(float) * (size_t)numel(r, yd));
    ref_conv(c, X, W, c->bias ? B : NULL, want, c->want_out);
    expect_close(t->out[0].data, want, numel(r, yd), c->what);
    free(want); free(X); free(W); free(B);
    tn_free(t);
}

/* Grouped, depthwise (with channel multiplier), dilated, strided, asymmetric pads, SAME_UPPER /
 * SAME_LOWER / VALID, 1-D, 2-D and 3-D, with and without bias, against ref_conv. The expected
 * output extents are worked out by hand from the spec formulas (comments). */
static void test_conv_attribute_combinations_match_direct_convolution(void **state)
{
    (void)state;
    const conv_cfg cfgs[] = {
        /* 1-D: (11 + 2 + 1 - (2*2+1)) / 2 + 1 = 5 */
        {"1d dilated strided", 1, 2, 3, 4, 1, {11}, {3}, {2}, {2}, {2}, {1}, NULL, true, {5}},
        /* 2-D groups=2: (7+1+0-3)/1+1 = 6, (6+0+2-3)/2+1 = 3 */
        {"2d groups", 2, 1, 4, 6, 2, {7, 6}, {3, 3}, {1, 2}, {1, 1}, {1, 0}, {0, 2}, NULL, true, {6, 3}},
        /* depthwise C=3, M=6 (multiplier 2): (8+2-3)/2+1 = 4 */
        {"depthwise multiplier", 2, 2, 3, 6, 3, {8, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, NULL, false, {4, 4}},
        /* SAME_UPPER in=6 k=3 s=2: out 3, total pad 1 -> (0, 1) */
        {"same_upper", 2, 1, 2, 2, 1, {6, 6}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}, "SAME_UPPER", true, {3, 3}},
        /* SAME_LOWER: the odd pad at the beginning -> (1, 0) */
        {"same_lower", 2, 1, 2, 2, 1, {6, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, "SAME_LOWER", true, {3, 3}},
        /* SAME_UPPER with dilation 2 (effective kernel 5), in=7 s=1: total pad 4 -> (2, 2) */
        {"same_upper dilated", 2, 1, 2, 3, 1, {7, 5}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}, "SAME_UPPER", false, {7, 5}},
        /* VALID: (9-3)/2+1 = 4, (5-2)/1+1 = 4 */
        {"valid", 2, 1, 3, 2, 1, {9, 5}, {3, 2}, {2, 1}, {1, 1}, {0, 0}, {0, 0}, "VALID", true, {4, 4}},
        /* 3-D: (5+1+1-3)/2+1 = 3, (6+0+1-(2*1+1))/1+1 = 5, (4+2+0-2)/2+1 = 3 */
        {"3d", 3, 1, 2, 4, 2, {5, 6, 4}, {3, 2, 2}, {2, 1, 2}, {1, 2, 1}, {1, 0, 2}, {1, 1, 0}, NULL, true, {3, 5, 3}},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) run_conv_cfg(&cfgs[i]);
}

static void expect_input_error(tn *t, const char *needle)
{
    fa_status st = tn_infer(t);
    assert_int_equal(st, FA_ERR_INPUT);
    const char *msg = fa_ctx_errmsg(t->ctx);
    if (!strstr(msg, "node_under_test") || !strstr(msg, needle)) {
        fprintf(stderr, "message '%s' lacks the node name or '%s'\n", msg, needle);
        fail();
    }
}

static void test_bad_shapes_give_input_error_naming_the_node(void **state)
{
    (void)state;
    { /* channel mismatch: X has 3 channels, W expects 4 */
        tn *t = tn_new("Conv", 11, 2, XW, 1, Y1);
        tn_in(t, 0, FA_DTYPE_FLOAT, 4, (int64_t[]){1, 3, 5, 5}, NULL, false);
        tn_in(t, 1, FA_DTYPE_FLOAT, 4, (int64_t[]){2, 4, 3, 3}, NULL, false);
        expect_input_error(t, "channel mismatch");
        tn_free(t);
    }
    { /* group 2 does not divide 3 input channels */
        tn *t = tn_new("Conv", 11, 2, XW, 1, Y1);
        tn_in(t, 0, FA_DTYPE_FLOAT, 4, (int64_t[]){1, 3, 5, 5}, NULL, false);
        tn_in(t, 1, FA_DTYPE_FLOAT, 4, (int64_t[]){4, 1, 3, 3}, NULL, false);
        fa_node_add_attr_int(t->g, t->n, "group", 2);
        expect_input_error(t, "does not divide");
        tn_free(t);
    }
    { /* group 4 does not divide 6 output channels */
        tn *t = tn_new("Conv", 11, 2, XW, 1, Y1);
        tn_in(t, 0, FA_DTYPE_FLOAT, 4, (int64_t[]){1, 8, 5, 5}, NULL, false);
        tn_in(t, 1, FA_DTYPE_FLOAT, 4, (int64_t[]){6, 2, 3, 3}, NULL, false);
        fa_node_add_attr_int(t->g, t->n, "group", 4);
        expect_input_error(t, "does not divide");
        tn_free(t);
    }
    { /* kernel larger than the padded input */
        tn *t = tn_new("Conv", 11, 2, XW, 1, Y1);
        tn_in(t, 0, FA_DTYPE_FLOAT, 4, (int64_t[]){1, 1, 2, 2}, NULL, false);
        tn_in(t, 1, FA_DTYPE_FLOAT, 4, (int64_t[]){1, 1, 3, 3}, NULL, false);
        expect_input_error(t, "smaller than the kernel");
        tn_free(t);
    }
    { /* ConvTranspose: W's first dim must be C_in */
        tn *t = tn_new("ConvTranspose", 11, 2, XW, 1, Y1);
        tn_in(t, 0, FA_DTYPE_FLOAT, 4, (int64_t[]){1, 3, 5, 5}, NULL, false);
        tn_in(t, 1, FA_DTYPE_FLOAT, 4, (int64_t[]){2, 3, 3, 3}, NULL, false);
        expect_input_error(t, "channel mismatch");
        tn_free(t);
    }
    { /* MatMul inner dims */
        tn *t = tn_new("MatMul", 13, 2, (const char *const[]){"A", "B"}, 1, Y1);
        tn_in(t, 0, FA_DTYPE_FLOAT, 3, (int64_t[]){2, 3, 4}, NULL, false);
        tn_in(t, 1, FA_DTYPE_FLOAT, 2, (int64_t[]){5, 6}, NULL, false);
        expect_input_error(t, "inner dims");
        tn_free(t);
    }
    { /* MatMul batch dims that do not broadcast */
        tn *t = tn_new("MatMul", 13, 2, (const char *const[]){"A", "B"}, 1, Y1);
        tn_in(t, 0, FA_DTYPE_FLOAT, 3, (int64_t[]){2, 3, 4}, NULL, false);
        tn_in(t, 1, FA_DTYPE_FLOAT, 3, (int64_t[]){3, 4, 6}, NULL, false);
        expect_input_error(t, "broadcast");
        tn_free(t);
    }
    { /* Gemm with transB: B' is [K=3, N] but A has K=4 */
        tn *t = tn_new("Gemm", 13, 2, (const char *const[]){"A", "B"}, 1, Y1);
        tn_in(t, 0, FA_DTYPE_FLOAT, 2, (int64_t[]){2, 4}, NULL, false);
        tn_in(t, 1, FA_DTYPE_FLOAT, 2, (int64_t[]){5, 3}, NULL, false);
        fa_node_add_attr_int(t->g, t->n, "transB", 1);
        expect_input_error(t, "inner dims");
        tn_free(t);
    }
    { /* BatchNormalization scale with the wrong channel count */
        tn *t = tn_new("BatchNormalization", 15, 5, (const char *const[]){"X", "s", "b", "m", "v"}, 1, Y1);
        tn_in(t, 0, FA_DTYPE_FLOAT, 4, (int64_t[]){1, 3, 2, 2}, NULL, false);
        for (int i = 1; i < 5; i++) tn_in(t, i, FA_DTYPE_FLOAT, 1, (int64_t[]){i == 2 ? 4 : 3}, NULL, false);
        expect_input_error(t, "expected C=3");
        tn_free(t);
    }
}

/* ============================ ConvTranspose ============================ */

/* ONNX ConvTranspose doc example: 3x3 input 0..8, two 3x3 kernels of ones. */
static void test_convtranspose_onnx_doc_example(void **state)
{
    (void)state;
    float x[9], w[18];
    for (int i = 0; i < 9; i++) x[i] = (float)i;
    for (int i = 0; i < 18; i++) w[i] = 1;
    tn *t = tn_new("ConvTranspose", 11, 2, XW, 1, Y1);
    tn_inf(t, 0, 4, (int64_t[]){1, 1, 3, 3}, x);
    tn_inf(t, 1, 4, (int64_t[]){1, 2, 3, 3}, w);
    tn_run(t);
    const float ch[25] = {0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
    expect_dims(&t->out[0], 4, (int64_t[]){1, 2, 5, 5});
    expect_close(t->out[0].data, ch, 25, "convtranspose ch0");
    expect_close((float *)t->out[0].data + 25, ch, 25, "convtranspose ch1");
    tn_free(t);
}

typedef struct convt_cfg {
    const char *what;
    int sr;
    int64_t N, C, M, group;
    int64_t in[3], k[3], s[3], d[3], pads[6], opad[3];
    int64_t out_shape[3]; /* 0: not given */
    const char *auto_pad;
    bool bias;
    int64_t want_out[3], pb[3]; /* expected extents and begin pads (by hand) */
} convt_cfg;

/* Scatter-form transposed convolution: every input pixel adds x * W into the full (uncropped)
 * output, then the window [pb, pb + out) is kept. */
static void ref_convt(const convt_cfg *c, const float *X, const float *W, const float *B, float *Y)
{
    int64_t in3[3] = {1, 1, 1}, k3[3] = {1, 1, 1}, s3[3] = {1, 1, 1}, d3[3] = {1, 1, 1}, p3[3] = {0, 0, 0}, o3[3] = {1, 1, 1};
    for (int i = 0; i < c->sr; i++) {
        int j = 3 - c->sr + i;
        in3[j] = c->in[i]; k3[j] = c->k[i]; s3[j] = c->s[i]; d3[j] = c->d[i]; p3[j] = c->pb[i]; o3[j] = c->want_out[i];
    }
    int64_t Cg = c->C / c->group, Mg = c->M / c->group, osp = o3[0] * o3[1] * o3[2];
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t i = 0; i < osp; i++) Y[(n * c->M + m) * osp + i] = B ? B[m] : 0;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t ci = 0; ci < c->C; ci++)
            for (int64_t a = 0; a < in3[0]; a++)
                for (int64_t b = 0; b < in3[1]; b++)
                    for (int64_t e = 0; e < in3[2]; e++) {
                        double xv = X[(((n * c->C + ci) * in3[0] + a) * in3[1] + b) * in3[2] + e];
                        int64_t grp = ci / Cg;
                        for (int64_t mm = 0; mm < Mg; mm++)
                            for (int64_t ka = 0; ka < k3[0]; ka++)
                                for (int64_t kb = 0; kb < k3[1]; kb++)
                                    for (int64_t ke = 0; ke < k3[2]; ke++) {
                                        int64_t oa = a * s3[0] + ka * d3[0] - p3[0];
                                        int64_t ob = b * s3[1] + kb * d3[1] - p3[1];
                                        int64_t oe = e * s3[2] + ke * d3[2] - p3[2];
                                        if (oa < 0 || ob < 0 || oe < 0 || oa >= o3[0] || ob >= o3[1] || oe >= o3[2]) continue;
                                        double wv = W[(((ci * Mg + mm) * k3[0] + ka) * k3[1] + kb) * k3[2] + ke];
                                        int64_t m = grp * Mg + mm;
                                        Y[(n * c->M + m) * osp + (oa * o3[1] + ob) * o3[2] + oe] += (float)(xv * wv);
                                    }
                    }
}

static void test_convtranspose_group_output_padding_output_shape_match_scatter(void **state)
{
    (void)state;
    const convt_cfg cfgs[] = {
        /* groups=2, stride 2, output_padding 1: 2*(4-1)+1+3-1-1 = 8, 2*(3-1)+1+3-0-0 = 8 */
        {"group output_padding", 2, 2, 4, 6, 2, {4, 3}, {3, 3}, {2, 2}, {1, 1}, {1, 0, 1, 0}, {1, 1}, {0}, NULL, true, {8, 8}, {1, 0}},
        /* dilation 2, stride 3: 3*(3-1)+0+(2*2+1)-1-2 = 8 (1-D) */
        {"1d dilated", 1, 1, 2, 3, 1, {3}, {3}, {3}, {2}, {1, 2}, {0}, {0}, NULL, false, {8}, {1}},
        /* output_shape 10x8, s=3 k=3, in 4x3: full h = 3*3+3 = 12, total 2 -> (1, 1);
         * full w = 3*2+3 = 9, total 1 -> NOTSET puts the odd pad first: (1, 0) */
        {"output_shape", 2, 1, 1, 2, 1, {4, 3}, {3, 3}, {3, 3}, {1, 1}, {0}, {0, 0}, {10, 8}, NULL, true, {10, 8}, {1, 1}},
        /* SAME_UPPER: out = in*s = 6, full = 2*2+1+3 = 8 (output_padding 1), total 2 -> (1, 1) */
        {"same_upper", 2, 1, 2, 2, 1, {3, 3}, {3, 3}, {2, 2}, {1, 1}, {0}, {1, 1}, {0}, "SAME_UPPER", false, {6, 6}, {1, 1}},
        /* 3-D depthwise-style group=C: 2*(2-1)+2-0-0 = 4, 1*(3-1)+2 = 4, 2*(2-1)+2-1-0 = 3 */
        {"3d group", 3, 1, 2, 4, 2, {2, 3, 2}, {2, 2, 2}, {2, 1, 2}, {1, 1, 1}, {0, 0, 1, 0, 0, 0}, {0, 0, 0}, {0}, NULL, true, {4, 4, 3}, {0, 0, 1}},
    };
    for (size_t ci = 0; ci < sizeof cfgs / sizeof cfgs[0]; ci++) {
        const convt_cfg *c = &cfgs[ci];
        int r = c->sr + 2;
        int64_t xd[5] = {c->N, c->C}, wd[5] = {c->C, c->M / c->group};
        for (int i = 0; i < c->sr; i++) xd[i + 2] = c->in[i], wd[i + 2] = c->k[i];
        float *X = rnd(numel(r, xd), 11), *W = rnd(numel(r, wd), 12), *B = rnd(c->M, 13);
        tn *t = tn_new("ConvTranspose", 11, c->bias ? 3 : 2, XWB, 1, Y1);
        tn_inf(t, 0, r, xd, X);
        tn_inf(t, 1, r, wd, W);
        if (c->bias) tn_inf(t, 2, 1, &c->M, B);
        if (c->auto_pad) fa_node_add_attr_string(t->g, t->n, "auto_pad", c->auto_pad);
        else if (!c->out_shape[0]) fa_node_add_attr_ints(t->g, t->n, "pads", c->pads, 2 * c->sr);
        if (c->out_shape[0]) fa_node_add_attr_ints(t->g, t->n, "output_shape", c->out_shape, c->sr);
        fa_node_add_attr_ints(t->g, t->n, "strides", c->s, c->sr);
        fa_node_add_attr_ints(t->g, t->n, "dilations", c->d, c->sr);
        fa_node_add_attr_ints(t->g, t->n, "output_padding", c->opad, c->sr);
        if (c->group != 1) fa_node_add_attr_int(t->g, t->n, "group", c->group);
        tn_run(t);
        int64_t yd[5] = {c->N, c->M};
        for (int i = 0; i < c->sr; i++) yd[i + 2] = c->want_out[i];
        expect_dims(&t->out[0], r, yd);
        float *want = malloc(sizeof(float) * (size_t)numel(r, yd));
        ref_convt(c, X, W, c->bias ? B : NULL, want);
        expect_close(t->out[0].data, want, numel(r, yd), c->what);
        free(want); free(X); free(W); free(B);
        tn_free(t);
    }
}

/* ================================ MatMul / Gemm ================================ */

static void test_matmul_numpy_broadcasting_and_1d_operands(void **state)
{
    (void)state;
    struct { int ra; int64_t ad[4]; int rb; int64_t bd[4]; int ry; int64_t yd[4]; } cs[] = {
        {4, {2, 1, 3, 4}, 3, {3, 4, 5}, 4, {2, 3, 3, 5}},
        {1, {4}, 3, {2, 4, 3}, 2, {2, 3}},
        {3, {2, 3, 4}, 1, {4}, 2, {2, 3}},
        {1, {4}, 1, {4}, 0, {0}},
        {2, {3, 4}, 2, {4, 70}, 2, {3, 70}},
        {3, {1, 2, 3}, 4, {2, 2, 3, 2}, 4, {2, 2, 2, 2}},
        {2, {20, 70}, 2, {70, 300}, 2, {20, 300}}, /* several row, column and K blocks */
    };
    for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
        float *A = rnd(numel(cs[ci].ra, cs[ci].ad), 21), *B = rnd(numel(cs[ci].rb, cs[ci].bd), 22);
        tn *t = tn_new("MatMul", 13, 2, (const char *const[]){"A", "B"}, 1, Y1);
        tn_inf(t, 0, cs[ci].ra, cs[ci].ad, A);
        tn_inf(t, 1, cs[ci].rb, cs[ci].bd, B);
        tn_run(t);
        expect_dims(&t->out[0], cs[ci].ry, cs[ci].yd);
        /* reference: promote to 4-D [b0, b1, M, K] x [b0, b1, K, N] with explicit broadcasting */
        int ra = cs[ci].ra, rb = cs[ci].rb;
        int64_t M = ra >= 2 ? cs[ci].ad[ra - 2] : 1, K = cs[ci].ad[ra - 1], N = rb >= 2 ? cs[ci].bd[rb - 1] : 1;
        int64_t ab[2] = {1, 1}, bb[2] = {1, 1};
        for (int i = 0; i < ra - 2; i++) ab[2 - (ra - 2) + i] = cs[ci].ad[i];
        for (int i = 0; i < rb - 2; i++) bb[2 - (rb - 2) + i] = cs[ci].bd[i];
        int64_t y0 = ab[0] > bb[0] ? ab[0] : bb[0], y1 = ab[1] > bb[1] ? ab[1] : bb[1];
        float *want = malloc(sizeof(float) * (size_t)(y0 * y1 * M * N));
        for (int64_t p = 0; p < y0; p++)
            for (int64_t q = 0; q < y1; q++)
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++) {
                        double s = 0;
                        int64_t pa = ab[0] == 1 ? 0 : p, qa = ab[1] == 1 ? 0 : q, pb = bb[0] == 1 ? 0 : p, qb = bb[1] == 1 ? 0 : q;
                        for (int64_t k = 0; k < K; k++)
                            s += (double)A[((pa * ab[1] + qa) * M + i) * K + k] * B[((pb * bb[1] + qb) * K + k) * N + j];
                        want[((p * y1 + q) * M + i) * N + j] = (float)s;
                    }
        expect_close(t->out[0].data, want, y0 * y1 * M * N, "matmul");
        free(want); free(A); free(B);
        tn_free(t);
    }
}

static void test_gemm_every_transpose_alpha_beta_and_bias_form(void **state)
{
    (void)state;
    const int64_t M = 3, K = 5, N = 4;
    struct { int r; int64_t d[2]; } cforms[] = {{-1, {0}}, {1, {1}}, {1, {N}}, {2, {M, 1}}, {2, {1, N}}, {2, {M, N}}, {0, {0}}};
    float *A = rnd(M * K, 31), *B = rnd(K * N, 32), *C = rnd(M * N, 33);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (size_t cf = 0; cf < sizeof cforms / sizeof cforms[0]; cf++) {
                float alpha = ta ? 0.5f : 1.0f, beta = tb ? 1.0f : -2.0f;
                bool hc = cforms[cf].r >= 0;
                tn *t = tn_new("Gemm", 13, hc ? 3 : 2, (const char *const[]){"A", "B", "C"}, 1, Y1);
                tn_inf(t, 0, 2, ta ? (int64_t[]){K, M} : (int64_t[]){M, K}, A);
                tn_inf(t, 1, 2, tb ? (int64_t[]){N, K} : (int64_t[]){K, N}, B);
                if (hc) tn_inf(t, 2, cforms[cf].r, cforms[cf].d, C);
                fa_node_add_attr_int(t->g, t->n, "transA", ta);
                fa_node_add_attr_int(t->g, t->n, "transB", tb);
                fa_node_add_attr_float(t->g, t->n, "alpha", alpha);
                fa_node_add_attr_float(t->g, t->n, "beta", beta);
                tn_run(t);
                expect_dims(&t->out[0], 2, (int64_t[]){M, N});
                float want[12];
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++) {
                        double s = 0;
                        for (int64_t k = 0; k < K; k++)
                            s += (double)(ta ? A[k * M + i] : A[i * K + k]) * (tb ? B[j * K + k] : B[k * N + j]);
                        double c = 0;
                        if (hc) {
                            int r = cforms[cf].r;
                            int64_t c0 = r == 2 ? cforms[cf].d[0] : 1, c1 = r >= 1 ? cforms[cf].d[r - 1] : 1;
                            c = C[(c0 == 1 ? 0 : i) * c1 + (c1 == 1 ? 0 : j)];
                        }
                        want[i * N + j] = (float)(alpha * s + beta * c);
                    }
                char what[64];
                snprintf(what, sizeof what, "gemm transA=%d transB=%d C form %zu", ta, tb, cf);
                expect_close(t->out[0].data, want, M * N, what);
                tn_free(t);
            }
    free(A); free(B); free(C);
}

/* ================================ pools ================================ */

static const char *const X1[] = {"X"};

/* ONNX MaxPool ceil_mode example: 4x4 input 1..16, kernel 3, stride 2 -> 2x2 [[11,12],[15,16]];
 * floor mode gives 1x1 [[11]]. */
static void test_maxpool_ceil_mode_onnx_example(void **state)
{
    (void)state;
    float x[16];
    for (int i = 0; i < 16; i++) x[i] = (float)(i + 1);
    for (int ceil_mode = 0; ceil_mode < 2; ceil_mode++) {
        tn *t = tn_new("MaxPool", 12, 1, X1, 1, Y1);
        tn_inf(t, 0, 4, (int64_t[]){1, 1, 4, 4}, x);
        fa_node_add_attr_ints(t->g, t->n, "kernel_shape", (int64_t[]){3, 3}, 2);
        fa_node_add_attr_ints(t->g, t->n, "strides", (int64_t[]){2, 2}, 2);
        fa_node_add_attr_int(t->g, t->n, "ceil_mode", ceil_mode);
        tn_run(t);
        if (ceil_mode) {
            expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 2, 2});
            expect_close(t->out[0].data, (float[]){11, 12, 15, 16}, 4, "maxpool ceil");
        } else {
            expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 1, 1});
            expect_close(t->out[0].data, (float[]){11}, 1, "maxpool floor");
        }
        tn_free(t);
    }
    /* ceil_mode window that would start inside the end padding is dropped: in 5, k 2, s 2,
     * pads (0,1): ceil((5+1-2)/2)+1 = 3, last start 4 < 5 kept; in 4, pads (0,1), k 2, s 2:
     * ceil(3/2)+1 = 3 but start 4 >= 4 -> 2 */
    tn *t = tn_new("MaxPool", 12, 1, X1, 1, Y1);
    tn_inf(t, 0, 3, (int64_t[]){1, 1, 4}, x);
    fa_node_add_attr_ints(t->g, t->n, "kernel_shape", (int64_t[]){2}, 1);
    fa_node_add_attr_ints(t->g, t->n, "strides", (int64_t[]){2}, 1);
    fa_node_add_attr_ints(t->g, t->n, "pads", (int64_t[]){0, 1}, 2);
    fa_node_add_attr_int(t->g, t->n, "ceil_mode", 1);
    tn_run(t);
    expect_dims(&t->out[0], 3, (int64_t[]){1, 1, 2});
    expect_close(t->out[0].data, (float[]){2, 4}, 2, "maxpool ceil end pad");
    tn_free(t);
}

/* MaxPool with pads, dilation and the Indices output (row-major and storage_order=1). */
static void test_maxpool_pads_dilation_and_indices(void **state)
{
    (void)state;
    /* 1x2x4x5 input with distinct values */
    float x[40];
    for (int i = 0; i < 40; i++) x[i] = (float)((i * 17) % 41);
    for (int order = 0; order < 2; order++) {
        tn *t = tn_new("MaxPool", 12, 1, X1, 2, (const char *const[]){"Y", "I"});
        tn_inf(t, 0, 4, (int64_t[]){1, 2, 4, 5}, x);
        fa_node_add_attr_ints(t->g, t->n, "kernel_shape", (int64_t[]){2, 2}, 2);
        fa_node_add_attr_ints(t->g, t->n, "pads", (int64_t[]){1, 0, 0, 1}, 4);
        fa_node_add_attr_ints(t->g, t->n, "dilations", (int64_t[]){1, 2}, 2);
        fa_node_add_attr_int(t->g, t->n, "storage_order", order);
        tn_run(t);
        /* out: (4+1-2)/1+1 = 4, (5+1-3)/1+1 = 4 */
        expect_dims(&t->out[0], 4, (int64_t[]){1, 2, 4, 4});
        assert_int_equal(t->out[1].dtype, FA_DTYPE_INT64);
        const float *y = t->out[0].data;
        const int64_t *ix = t->out[1].data;
        for (int c = 0; c < 2; c++)
            for (int oh = 0; oh < 4; oh++)
                for (int ow = 0; ow < 4; ow++) {
                    float best = -INFINITY;
                    int bh = -1, bw = -1;
                    for (int kh = 0; kh < 2; kh++)
                        for (int kw = 0; kw < 2; kw++) {
                            int ih = oh - 1 + kh, iw = ow + 2 * kw;
                            if (ih < 0 || ih >= 4 || iw >= 5) continue;
                            if (x[c * 20 + ih * 5 + iw] > best) best = x[c * 20 + ih * 5 + iw], bh = ih, bw = iw;
                        }
                    int o = c * 16 + oh * 4 + ow;
                    assert_true(y[o] == best);
                    int64_t want = order ? c * 20 + bw * 4 + bh : c * 20 + bh * 5 + bw;
                    assert_int_equal(ix[o], want);
                }
        tn_free(t);
    }
}

/* AveragePool: 3x3 input 1..9, kernel 3, pads 1: corner windows hold 4 real values.
 * count_include_pad=0: (1+2+4+5)/4 = 3; =1: 12/9. Centre: 45/9 = 5 either way. */
static void test_averagepool_count_include_pad(void **state)
{
    (void)state;
    float x[9];
    for (int i = 0; i < 9; i++) x[i] = (float)(i + 1);
    for (int incl = 0; incl < 2; incl++) {
        tn *t = tn_new("AveragePool", 19, 1, X1, 1, Y1);
        tn_inf(t, 0, 4, (int64_t[]){1, 1, 3, 3}, x);
        fa_node_add_attr_ints(t->g, t->n, "kernel_shape", (int64_t[]){3, 3}, 2);
        fa_node_add_attr_ints(t->g, t->n, "pads", (int64_t[]){1, 1, 1, 1}, 4);
        fa_node_add_attr_int(t->g, t->n, "count_include_pad", incl);
        tn_run(t);
        expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 3, 3});
        const float *y = t->out[0].data;
        expect_close(&y[0], (float[]){incl ? 12.0f / 9 : 3.0f}, 1, "avgpool corner");
        expect_close(&y[4], (float[]){5.0f}, 1, "avgpool centre");
        expect_close(&y[1], (float[]){incl ? 21.0f / 9 : 3.5f}, 1, "avgpool edge"); /* 1+2+3+4+5+6 */
        tn_free(t);
    }
    /* ceil_mode + SAME_UPPER shapes: in 5, k 2, s 2 -> ceil: 3 (last window [4,5] has 1 value);
     * SAME_UPPER: ceil(5/2) = 3 with pad (0, 1) */
    for (int mode = 0; mode < 2; mode++) {
        tn *t = tn_new("AveragePool", 11, 1, X1, 1, Y1);
        tn_inf(t, 0, 3, (int64_t[]){1, 1, 5}, x);
        fa_node_add_attr_ints(t->g, t->n, "kernel_shape", (int64_t[]){2}, 1);
        fa_node_add_attr_ints(t->g, t->n, "strides", (int64_t[]){2}, 1);
        if (mode == 0) fa_node_add_attr_int(t->g, t->n, "ceil_mode", 1);
        else fa_node_add_attr_string(t->g, t->n, "auto_pad", "SAME_UPPER");
        tn_run(t);
        expect_dims(&t->out[0], 3, (int64_t[]){1, 1, 3});
        expect_close(t->out[0].data, (float[]){1.5f, 3.5f, 5.0f}, 3, "avgpool ceil/same");
        tn_free(t);
    }
}

static void test_global_pools_reduce_spatial_dims(void **state)
{
    (void)state;
    float *x = rnd(2 * 3 * 4 * 5, 41);
    for (int mx = 0; mx < 2; mx++) {
        tn *t = tn_new(mx ? "GlobalMaxPool" : "GlobalAveragePool", 13, 1, X1, 1, Y1);
        tn_inf(t, 0, 4, (int64_t[]){2, 3, 4, 5}, x);
        tn_run(t);
        expect_dims(&t->out[0], 4, (int64_t[]){2, 3, 1, 1});
        float want[6];
        for (int p = 0; p < 6; p++) {
            double s = 0, m = -1e30;
            for (int i = 0; i < 20; i++) s += x[p * 20 + i], m = x[p * 20 + i] > m ? x[p * 20 + i] : m;
            want[p] = (float)(mx ? m : s / 20);
        }
        expect_close(t->out[0].data, want, 6, mx ? "globalmax" : "globalavg");
        tn_free(t);
    }
    free(x);
}

/* LpPool: x = [3, 4, -12], kernel 2: p=2 -> [5, sqrt(160)], p=1 -> [7, 16]; GlobalLpPool p=2 of
 * [3, 4] -> 5. */
static void test_lppool_and_global_lppool_norms(void **state)
{
    (void)state;
    const float x[3] = {3, 4, -12};
    for (int p = 1; p <= 2; p++) {
        tn *t = tn_new("LpPool", 11, 1, X1, 1, Y1);
        tn_inf(t, 0, 3, (int64_t[]){1, 1, 3}, x);
        fa_node_add_attr_ints(t->g, t->n, "kernel_shape", (int64_t[]){2}, 1);
        fa_node_add_attr_int(t->g, t->n, "p", p);
        tn_run(t);
        expect_dims(&t->out[0], 3, (int64_t[]){1, 1, 2});
        expect_close(t->out[0].data, p == 2 ? (float[]){5, sqrtf(160)} : (float[]){7, 16}, 2, "lppool");
        tn_free(t);
    }
    tn *t = tn_new("GlobalLpPool", 2, 1, X1, 1, Y1);
    tn_inf(t, 0, 3, (int64_t[]){1, 1, 2}, x);
    tn_run(t);
    expect_dims(&t->out[0], 3, (int64_t[]){1, 1, 1});
    expect_close(t->out[0].data, (float[]){5}, 1, "globallppool");
    tn_free(t);
}

/* ================================ normalization ================================ */

static void test_lrn_matches_spec_formula(void **state)
{
    (void)state;
    int64_t d[4] = {1, 5, 2, 3};
    float *x = rnd(30, 51);
    tn *t = tn_new("LRN", 13, 1, X1, 1, Y1);
    tn_inf(t, 0, 4, d, x);
    fa_node_add_attr_int(t->g, t->n, "size", 4);
    fa_node_add_attr_float(t->g, t->n, "alpha", 0.02f);
    fa_node_add_attr_float(t->g, t->n, "beta", 0.5f);
    fa_node_add_attr_float(t->g, t->n, "bias", 2.0f);
    tn_run(t);
    float want[30];
    for (int c = 0; c < 5; c++)
        for (int i = 0; i < 6; i++) {
            double ss = 0; /* window c-1 .. c+2 for size 4 */
            for (int k = c - 1; k <= c + 2; k++)
                if (k >= 0 && k < 5) ss += (double)x[k * 6 + i] * x[k * 6 + i];
            want[c * 6 + i] = (float)(x[c * 6 + i] / pow(2.0 + 0.02 / 4 * ss, 0.5));
        }
    expect_close(t->out[0].data, want, 30, "lrn");
    tn_free(t);
    free(x);
}

static void test_instancenorm_per_plane_statistics(void **state)
{
    (void)state;
    int64_t d[4] = {2, 3, 2, 4};
    float *x = rnd(48, 61), s[3] = {1.0f, 1.5f, -2.0f}, b[3] = {0.0f, 0.5f, 1.0f};
    tn *t = tn_new("InstanceNormalization", 6, 3, (const char *const[]){"X", "s", "b"}, 1, Y1);
    tn_inf(t, 0, 4, d, x);
    tn_inf(t, 1, 1, (int64_t[]){3}, s);
    tn_inf(t, 2, 1, (int64_t[]){3}, b);
    fa_node_add_attr_float(t->g, t->n, "epsilon", 1e-2f);
    tn_run(t);
    float want[48];
    for (int p = 0; p < 6; p++) {
        double m = 0, v = 0;
        for (int i = 0; i < 8; i++) m += x[p * 8 + i] / 8.0;
        for (int i = 0; i < 8; i++) v += (x[p * 8 + i] - m) * (x[p * 8 + i] - m) / 8.0;
        for (int i = 0; i < 8; i++) want[p * 8 + i] = (float)(s[p % 3] * (x[p * 8 + i] - m) / sqrt(v + 1e-2) + b[p % 3]);
    }
    expect_close(t->out[0].data, want, 48, "instancenorm");
    tn_free(t);
    free(x);
}

static const char *const BN_IN[] = {"X", "s", "b", "m", "v"};

/* Inference: y = (x - mean) / sqrt(var + eps) * scale + B, hand-computed for 2 channels. */
static void test_batchnorm_inference_per_channel_affine(void **state)
{
    (void)state;
    float x[8] = {1, 2, 3, 4, -1, 0, 1, 2}, s[2] = {2, 0.5f}, b[2] = {1, -1}, m[2] = {2, 0}, v[2] = {4, 1};
    for (int os = 0; os < 3; os++) {
        int opset = os == 0 ? 7 : os == 1 ? 9 : 15;
        tn *t = tn_new("BatchNormalization", opset, 5, BN_IN, 1, Y1);
        tn_inf(t, 0, 4, (int64_t[]){1, 2, 2, 2}, x);
        tn_inf(t, 1, 1, (int64_t[]){2}, s);
        tn_inf(t, 2, 1, (int64_t[]){2}, b);
        tn_inf(t, 3, 1, (int64_t[]){2}, m);
        tn_inf(t, 4, 1, (int64_t[]){2}, v);
        fa_node_add_attr_float(t->g, t->n, "epsilon", 0.0f);
        if (opset == 7) fa_node_add_attr_int(t->g, t->n, "spatial", 1);
        tn_run(t);
        /* ch0: (x-2)/2*2+1 = x-1; ch1: x*0.5-1 */
        expect_close(t->out[0].data, (float[]){0, 1, 2, 3, -1.5f, -1, -0.5f, 0}, 8, "bn inference");
        tn_free(t);
    }
    /* one value per channel, [N, C] (BatchNorm1d after a Linear): the rows-of-channels path */
    tn *t = tn_new("BatchNormalization", 15, 5, BN_IN, 1, Y1);
    tn_inf(t, 0, 2, (int64_t[]){4, 2}, x); /* rows (1,2) (3,4) (-1,0) (1,2) */
    tn_inf(t, 1, 1, (int64_t[]){2}, s);
    tn_inf(t, 2, 1, (int64_t[]){2}, b);
    tn_inf(t, 3, 1, (int64_t[]){2}, m);
    tn_inf(t, 4, 1, (int64_t[]){2}, v);
    fa_node_add_attr_float(t->g, t->n, "epsilon", 0.0f);
    tn_run(t);
    /* column 0: x - 1; column 1: x * 0.5 - 1 */
    expect_close(t->out[0].data, (float[]){0, 0, 2, 1, -2, -1, 0, 0}, 8, "bn inference [N, C]");
    tn_free(t);
}

/* opset 7 spatial=0: parameters hold one value per activation (C x spatial), not per channel. */
static void test_batchnorm_spatial0_per_activation_parameters(void **state)
{
    (void)state;
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, s[4] = {1, 2, 3, 4}, b[4] = {0, 1, 0, -1}, m[4] = {1, 1, 2, 2}, v[4] = {1, 4, 1, 4};
    tn *t = tn_new("BatchNormalization", 7, 5, BN_IN, 1, Y1);
    tn_inf(t, 0, 4, (int64_t[]){2, 2, 1, 2}, x);
    for (int i = 1; i < 5; i++) tn_inf(t, i, 3, (int64_t[]){2, 1, 2}, i == 1 ? s : i == 2 ? b : i == 3 ? m : v);
    fa_node_add_attr_int(t->g, t->n, "spatial", 0);
    fa_node_add_attr_float(t->g, t->n, "epsilon", 0.0f);
    tn_run(t);
    float want[8];
    for (int i = 0; i < 8; i++) {
        int q = i % 4; /* (c, w) within a sample */
        want[i] = (x[i] - m[q]) / sqrtf(v[q]) * s[q] + b[q];
    }
    expect_close(t->out[0].data, want, 8, "bn spatial=0");
    tn_free(t);
}

/* training_mode=1 (opset 15): batch statistics over N and spatial, population variance;
 * running_mean = mean*momentum + batch_mean*(1-momentum) (onnx reference). */
static void test_batchnorm_training_mode_batch_statistics(void **state)
{
    (void)state;
    int64_t d[4] = {2, 3, 2, 2};
    float *x = rnd(24, 71), s[3] = {1, 2, 3}, b[3] = {0, 1, 2}, m[3] = {0.1f, 0.2f, 0.3f}, v[3] = {1, 2, 3};
    tn *t = tn_new("BatchNormalization", 15, 5, BN_IN, 3, (const char *const[]){"Y", "rm", "rv"});
    tn_inf(t, 0, 4, d, x);
    tn_inf(t, 1, 1, (int64_t[]){3}, s);
    tn_inf(t, 2, 1, (int64_t[]){3}, b);
    tn_inf(t, 3, 1, (int64_t[]){3}, m);
    tn_inf(t, 4, 1, (int64_t[]){3}, v);
    fa_node_add_attr_int(t->g, t->n, "training_mode", 1);
    fa_node_add_attr_float(t->g, t->n, "momentum", 0.8f);
    tn_run(t);
    float want[24], wm[3], wv[3];
    for (int c = 0; c < 3; c++) {
        double mean = 0, var = 0;
        for (int n = 0; n < 2; n++)
            for (int i = 0; i < 4; i++) mean += x[(n * 3 + c) * 4 + i] / 8.0;
        for (int n = 0; n < 2; n++)
            for (int i = 0; i < 4; i++) var += pow(x[(n * 3 + c) * 4 + i] - mean, 2) / 8.0;
        for (int n = 0; n < 2; n++)
            for (int i = 0; i < 4; i++)
                want[(n * 3 + c) * 4 + i] = (float)((x[(n * 3 + c) * 4 + i] - mean) / sqrt(var + 1e-5) * s[c] + b[c]);
        wm[c] = (float)(m[c] * 0.8 + mean * 0.2);
        wv[c] = (float)(v[c] * 0.8 + var * 0.2);
    }
    expect_close(t->out[0].data, want, 24, "bn training y");
    expect_close(t->out[1].data, wm, 3, "bn running mean");
    expect_close(t->out[2].data, wv, 3, "bn running var");
    tn_free(t);
    free(x);
}

/* ================================ Resize / Upsample ================================ */


static tn *resize_node(int opset, int64_t h, int64_t w, const float *x, const float *scales, const int64_t *sizes)
{
    tn *t = tn_new("Resize", opset, 4, (const char *const[]){"X", "", scales ? "scales" : "", sizes ? "sizes" : ""}, 1, Y1);
    tn_inf(t, 0, 4, (int64_t[]){1, 1, h, w}, x);
    if (scales) tn_in(t, 2, FA_DTYPE_FLOAT, 1, (int64_t[]){4}, scales, true);
    if (sizes) tn_in(t, 3, FA_DTYPE_INT64, 1, (int64_t[]){4}, sizes, true);
    return t;
}

/* ONNX Resize examples (onnx/backend/test/case/node/resize.py), values written out. */
static void test_resize_nearest_and_linear_onnx_examples(void **state)
{
    (void)state;
    const float x[4] = {1, 2, 3, 4};
    { /* upsample_scales_nearest: scales [1,1,2,3] */
        tn *t = resize_node(19, 2, 2, x, (float[]){1, 1, 2, 3}, NULL);
        fa_node_add_attr_string(t->g, t->n, "mode", "nearest");
        tn_run(t);
        expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 4, 6});
        const float want[24] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
        expect_close(t->out[0].data, want, 24, "resize nearest up");
        tn_free(t);
    }
    { /* upsample_scales_linear (half_pixel) */
        tn *t = resize_node(19, 2, 2, x, (float[]){1, 1, 2, 2}, NULL);
        fa_node_add_attr_string(t->g, t->n, "mode", "linear");
        tn_run(t);
        const float want[16] = {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4};
        expect_close(t->out[0].data, want, 16, "resize linear half_pixel");
        tn_free(t);
    }
    { /* upsample_scales_linear_align_corners */
        tn *t = resize_node(19, 2, 2, x, (float[]){1, 1, 2, 2}, NULL);
        fa_node_add_attr_string(t->g, t->n, "mode", "linear");
        fa_node_add_attr_string(t->g, t->n, "coordinate_transformation_mode", "align_corners");
        tn_run(t);
        const float a = 1.0f / 3, want[16] = {1, 1 + a, 1 + 2 * a, 2, 1 + 2 * a, 2, 2 + a, 2 + 2 * a,
                                              2 + a, 2 + 2 * a, 3, 3 + a, 3, 3 + a, 3 + 2 * a, 4};
        expect_close(t->out[0].data, want, 16, "resize linear align_corners");
        tn_free(t);
    }
    const float x8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    { /* downsample_scales_linear: [[2.6666665, 4.3333331]] */
        tn *t = resize_node(19, 2, 4, x8, (float[]){1, 1, 0.6f, 0.6f}, NULL);
        fa_node_add_attr_string(t->g, t->n, "mode", "linear");
        tn_run(t);
        expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 1, 2});
        expect_close(t->out[0].data, (float[]){2.6666665f, 4.3333331f}, 2, "resize linear down");
        tn_free(t);
    }
    { /* downsample_scales_nearest: [[1, 3]] */
        tn *t = resize_node(19, 2, 4, x8, (float[]){1, 1, 0.6f, 0.6f}, NULL);
        tn_run(t);
        expect_close(t->out[0].data, (float[]){1, 3}, 2, "resize nearest down");
        tn_free(t);
    }
    { /* sizes input, nearest with asymmetric + floor, 2x2 -> 3x5 */
        tn *t = resize_node(13, 2, 2, x, NULL, (int64_t[]){1, 1, 3, 5});
        fa_node_add_attr_string(t->g, t->n, "coordinate_transformation_mode", "asymmetric");
        fa_node_add_attr_string(t->g, t->n, "nearest_mode", "floor");
        tn_run(t);
        expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 3, 5});
        /* rows: floor(o*2/3) = 0,0,1; cols: floor(o*2/5) = 0,0,0,1,1 */
        const float want[15] = {1, 1, 1, 2, 2, 1, 1, 1, 2, 2, 3, 3, 3, 4, 4};
        expect_close(t->out[0].data, want, 15, "resize sizes nearest floor");
        tn_free(t);
    }
}

/* tf_crop_and_resize examples (resize.py): X 4x4 = 1..16, sizes 3x3, linear. The values are
 * exact for a bilinear ramp: 1 + 4*row + col at row = 1.2 + 0.3*o, col = 1.8 + 0.3*o, etc. */
static void test_resize_tf_crop_and_resize_roi_and_extrapolation(void **state)
{
    (void)state;
    float x[16];
    for (int i = 0; i < 16; i++) x[i] = (float)(i + 1);
    const float roi_in[8] = {0, 0, 0.4f, 0.6f, 1, 1, 0.6f, 0.8f}, roi_out[8] = {0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f};
    for (int ex = 0; ex < 2; ex++) {
        tn *t = tn_new("Resize", 13, 4, (const char *const[]){"X", "roi", "", "sizes"}, 1, Y1);
        tn_inf(t, 0, 4, (int64_t[]){1, 1, 4, 4}, x);
        tn_in(t, 1, FA_DTYPE_FLOAT, 1, (int64_t[]){8}, ex ? roi_out : roi_in, true);
        tn_in(t, 3, FA_DTYPE_INT64, 1, (int64_t[]){4}, (int64_t[]){1, 1, 3, 3}, true);
        fa_node_add_attr_string(t->g, t->n, "mode", "linear");
        fa_node_add_attr_string(t->g, t->n, "coordinate_transformation_mode", "tf_crop_and_resize");
        if (ex) fa_node_add_attr_float(t->g, t->n, "extrapolation_value", 10.0f);
        tn_run(t);
        expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 3, 3});
        const float in_roi[9] = {7.6f, 7.9f, 8.2f, 8.8f, 9.1f, 9.4f, 10.0f, 10.3f, 10.6f};
        const float extrap[9] = {7.6f, 10, 10, 12.4f, 10, 10, 10, 10, 10};
        expect_close(t->out[0].data, ex ? extrap : in_roi, 9, ex ? "tf_crop extrapolation" : "tf_crop");
        tn_free(t);
    }
    /* scales with tf_crop_and_resize: out = floor(in * (roi_end - roi_start) * scale) = floor(4*0.5*3) = 6 */
    tn *t = tn_new("Resize", 13, 3, (const char *const[]){"X", "roi", "scales"}, 1, Y1);
    tn_inf(t, 0, 4, (int64_t[]){1, 1, 4, 4}, x);
    tn_in(t, 1, FA_DTYPE_FLOAT, 1, (int64_t[]){8}, (float[]){0, 0, 0.25f, 0, 1, 1, 0.75f, 1}, true);
    tn_in(t, 2, FA_DTYPE_FLOAT, 1, (int64_t[]){4}, (float[]){1, 1, 3, 1}, true);
    fa_node_add_attr_string(t->g, t->n, "coordinate_transformation_mode", "tf_crop_and_resize");
    assert_int_equal(tn_infer(t), FA_OK);
    fa_tensor *y = fa_graph_out(t->g, t->n, 0);
    assert_int_equal(y->dims[2], 6);
    assert_int_equal(y->dims[3], 4);
    tn_free(t);
}

/* x_original and taps of one axis as the ONNX reference defines them (half_pixel or align_corners;
 * linear 2 taps, cubic 4 with A = -0.75), edge-clamped: the oracle of the test below. */
static int resize_taps(int cubic, int align, int64_t o, int64_t in, int64_t out, int64_t *idx, double *w)
{
    double x = align ? (out > 1 ? (double)o * (double)(in - 1) / (double)(out - 1) : 0)
                     : ((double)o + 0.5) * (double)in / (double)out - 0.5;
    double f = floor(x), r = x - f;
    int64_t x0 = (int64_t)f;
    int n = cubic ? 4 : 2;
    if (!cubic) {
        idx[0] = x0, idx[1] = x0 + 1, w[0] = 1 - r, w[1] = r;
    } else {
        double A = -0.75, q = 1 - r;
        for (int t = 0; t < 4; t++) idx[t] = x0 - 1 + t;
        w[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
        w[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
        w[2] = ((A + 2) * q - (A + 3)) * q * q + 1;
        w[3] = ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A;
    }
    for (int t = 0; t < n; t++) idx[t] = idx[t] < 0 ? 0 : idx[t] >= in ? in - 1 : idx[t];
    return n;
}

/* A Resize of only H and W runs separably over bands of output rows (graph/ops_nn.c
 * rz_planes_f32): several planes, more rows than one band, upsampling one axis and downsampling
 * the other, linear and cubic, against the per-element formula in double. A tap of weight 0 is
 * skipped as the reference loop skips it: an infinite input there leaves the output finite. */
static void test_resize_separable_planes_match_the_per_element_formula(void **state)
{
    (void)state;
    const int64_t C = 3, H = 45, W = 37;
    float *x = rnd(C * H * W, 11);
    const struct { int cubic, align; int64_t ho, wo; } cases[] = {{0, 0, 90, 23}, {1, 1, 70, 80}, {0, 1, 20, 111}, {1, 0, 33, 37}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tn *t = tn_new("Resize", 19, 4, (const char *const[]){"X", "", "", "sizes"}, 1, Y1);
        tn_inf(t, 0, 4, (int64_t[]){1, C, H, W}, x);
        tn_in(t, 3, FA_DTYPE_INT64, 1, (int64_t[]){4}, (int64_t[]){1, C, cases[c].ho, cases[c].wo}, true);
        fa_node_add_attr_string(t->g, t->n, "mode", cases[c].cubic ? "cubic" : "linear");
        if (cases[c].align) fa_node_add_attr_string(t->g, t->n, "coordinate_transformation_mode", "align_corners");
        tn_run(t);
        const int64_t ho = cases[c].ho, wo = cases[c].wo;
        expect_dims(&t->out[0], 4, (int64_t[]){1, C, ho, wo});
        float *want = malloc(sizeof(float) * (size_t)(C * ho * wo));
        assert_non_null(want);
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t i = 0; i < ho; i++)
                for (int64_t j = 0; j < wo; j++) {
                    int64_t ih[4], iw[4];
                    double wh[4], ww[4], acc = 0;
                    int nh = resize_taps(cases[c].cubic, cases[c].align, i, H, ho, ih, wh);
                    int nw = resize_taps(cases[c].cubic, cases[c].align, j, W, wo, iw, ww);
                    for (int a = 0; a < nh; a++)
                        for (int b = 0; b < nw; b++) acc += wh[a] * ww[b] * x[(ch * H + ih[a]) * W + iw[b]];
                    want[(ch * ho + i) * wo + j] = (float)acc;
                }
        char what[64];
        snprintf(what, sizeof what, "separable resize case %zu", c);
        expect_close(t->out[0].data, want, C * ho * wo, what);
        free(want);
        tn_free(t);
    }
    free(x);
    /* align_corners 3 -> 5: output 2 sits on input 1 exactly (the tap of input 2 has weight 0) */
    float xi[9] = {1, 2, 3, 4, 5, 6, 7, 8, INFINITY};
    tn *t = tn_new("Resize", 19, 4, (const char *const[]){"X", "", "", "sizes"}, 1, Y1);
    tn_inf(t, 0, 4, (int64_t[]){1, 1, 3, 3}, xi);
    tn_in(t, 3, FA_DTYPE_INT64, 1, (int64_t[]){4}, (int64_t[]){1, 1, 5, 5}, true);
    fa_node_add_attr_string(t->g, t->n, "mode", "linear");
    fa_node_add_attr_string(t->g, t->n, "coordinate_transformation_mode", "align_corners");
    tn_run(t);
    const float *y = t->out[0].data;
    assert_true(y[2 * 5 + 2] == 5.0f);
    assert_true(isfinite(y[3 * 5 + 2]) && isfinite(y[2 * 5 + 3]));
    assert_true(isinf(y[4 * 5 + 4]));
    tn_free(t);
}

/* Resize-10 (inputs X, scales): asymmetric coordinates; nearest floors when upsampling and
 * ceils when downsampling (the opset-10 backend tests: x3 repeats; 0.6 on [1,2,3,4] -> [1,3]). */
static void test_resize_opset10_nearest_up_and_down(void **state)
{
    (void)state;
    const float x8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int down = 0; down < 2; down++) {
        tn *t = tn_new("Resize", 10, 2, (const char *const[]){"X", "scales"}, 1, Y1);
        tn_inf(t, 0, 4, (int64_t[]){1, 1, 2, down ? 4 : 2}, x8);
        const float sc[2][4] = {{1, 1, 2, 3}, {1, 1, 0.6f, 0.6f}};
        tn_in(t, 1, FA_DTYPE_FLOAT, 1, (int64_t[]){4}, sc[down], true);
        tn_run(t);
        if (down) {
            expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 1, 2});
            expect_close(t->out[0].data, (float[]){1, 3}, 2, "resize-10 nearest down");
        } else {
            expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 4, 6});
            const float want[24] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
            expect_close(t->out[0].data, want, 24, "resize-10 nearest up");
        }
        tn_free(t);
    }
    /* Resize-10 linear (asymmetric, edge-clamped): up x2 [[1,1.5,2,2],[2,2.5,3,3],[3,3.5,4,4],[3,3.5,4,4]];
     * down 0.6 on the 2x4 ramp: [[1, 2.6666665]] (onnx/backend/test/case/node/resize.py, opset 10) */
    for (int down = 0; down < 2; down++) {
        tn *t = tn_new("Resize", 10, 2, (const char *const[]){"X", "scales"}, 1, Y1);
        tn_inf(t, 0, 4, (int64_t[]){1, 1, 2, down ? 4 : 2}, x8);
        const float sc[2][4] = {{1, 1, 2, 2}, {1, 1, 0.6f, 0.6f}};
        tn_in(t, 1, FA_DTYPE_FLOAT, 1, (int64_t[]){4}, sc[down], true);
        fa_node_add_attr_string(t->g, t->n, "mode", "linear");
        tn_run(t);
        if (down) expect_close(t->out[0].data, (float[]){1, 2.6666665f}, 2, "resize-10 linear down");
        else {
            const float want[16] = {1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 3, 3.5f, 4, 4, 3, 3.5f, 4, 4};
            expect_close(t->out[0].data, want, 16, "resize-10 linear up");
        }
        tn_free(t);
    }
}

/* Keys cubic kernel written from its textbook form (|t| <= 1: (a+2)|t|^3 - (a+3)|t|^2 + 1;
 * 1 < |t| < 2: a|t|^3 - 5a|t|^2 + 8a|t| - 4a), edge-clamped neighbours, half_pixel. */
static double keys(double t, double a)
{
    t = fabs(t);
    if (t <= 1) return (a + 2) * t * t * t - (a + 3) * t * t + 1;
    if (t < 2) return a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a;
    return 0;
}

static void test_resize_cubic_matches_keys_kernel(void **state)
{
    (void)state;
    float *x = rnd(16, 81);
    tn *t = resize_node(19, 4, 4, x, (float[]){1, 1, 1.5f, 2}, NULL);
    fa_node_add_attr_string(t->g, t->n, "mode", "cubic");
    tn_run(t);
    expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 6, 8});
    float want[48];
    double sc[2] = {1.5, 2.0};
    for (int oy = 0; oy < 6; oy++)
        for (int ox = 0; ox < 8; ox++) {
            double cy = (oy + 0.5) / sc[0] - 0.5, cx = (ox + 0.5) / sc[1] - 0.5, s = 0;
            for (int iy = (int)floor(cy) - 1; iy <= (int)floor(cy) + 2; iy++)
                for (int ix = (int)floor(cx) - 1; ix <= (int)floor(cx) + 2; ix++) {
                    int cyi = iy < 0 ? 0 : iy > 3 ? 3 : iy, cxi = ix < 0 ? 0 : ix > 3 ? 3 : ix;
                    s += keys(cy - iy, -0.75) * keys(cx - ix, -0.75) * x[cyi * 4 + cxi];
                }
            want[oy * 8 + ox] = (float)s;
        }
    expect_close(t->out[0].data, want, 48, "resize cubic");
    tn_free(t);
    free(x);
}

/* Upsample-9 (scales input) and Upsample-7 (scales attribute): nearest = floor(x / scale). */
static void test_upsample_nearest_opset7_and_9(void **state)
{
    (void)state;
    const float x[4] = {1, 2, 3, 4};
    const float want[24] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
    for (int v = 0; v < 2; v++) {
        tn *t = v ? tn_new("Upsample", 9, 2, (const char *const[]){"X", "scales"}, 1, Y1)
                  : tn_new("Upsample", 7, 1, X1, 1, Y1);
        tn_inf(t, 0, 4, (int64_t[]){1, 1, 2, 2}, x);
        const float sc[4] = {1, 1, 2, 3};
        if (v) tn_in(t, 1, FA_DTYPE_FLOAT, 1, (int64_t[]){4}, sc, true);
        else fa_node_add_attr_floats(t->g, t->n, "scales", sc, 4);
        tn_run(t);
        expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 4, 6});
        expect_close(t->out[0].data, want, 24, "upsample");
        tn_free(t);
    }
}

/* ================================ quantization ================================ */

/* ONNX examples: QuantizeLinear x=[0,2,3,1000,-254,-1000], scale 2, zp 128 -> [128,129,130,255,1,0]
 * (3/2 = 1.5 rounds half to even: 2). DequantizeLinear [0,3,128,255] -> [-256,-250,0,254]. */
static void test_quantize_dequantize_per_tensor_onnx_examples(void **state)
{
    (void)state;
    {
        const float x[6] = {0, 2, 3, 1000, -254, -1000}, s = 2;
        const uint8_t z = 128;
        tn *t = tn_new("QuantizeLinear", 13, 3, (const char *const[]){"x", "s", "z"}, 1, Y1);
        tn_inf(t, 0, 1, (int64_t[]){6}, x);
        tn_in(t, 1, FA_DTYPE_FLOAT, 0, NULL, &s, false);
        tn_in(t, 2, FA_DTYPE_UINT8, 0, NULL, &z, false);
        tn_run(t);
        assert_int_equal(t->out[0].dtype, FA_DTYPE_UINT8);
        const uint8_t want[6] = {128, 129, 130, 255, 1, 0};
        assert_memory_equal(t->out[0].data, want, 6);
        tn_free(t);
    }
    { /* int8 zero point: int8 output, saturating at 127; round half even: 2.5 -> 2, -2.5 -> -2, 3.5 -> 4 */
        const float x[4] = {2.5f, -2.5f, 3.5f, 300};
        const float s = 1;
        const int8_t z = 0;
        tn *t = tn_new("QuantizeLinear", 13, 3, (const char *const[]){"x", "s", "z"}, 1, Y1);
        tn_inf(t, 0, 1, (int64_t[]){4}, x);
        tn_in(t, 1, FA_DTYPE_FLOAT, 0, NULL, &s, false);
        tn_in(t, 2, FA_DTYPE_INT8, 0, NULL, &z, false);
        tn_run(t);
        assert_int_equal(t->out[0].dtype, FA_DTYPE_INT8);
        const int8_t want[4] = {2, -2, 4, 127};
        assert_memory_equal(t->out[0].data, want, 4);
        tn_free(t);
    }
    {
        const uint8_t x[4] = {0, 3, 128, 255};
        const float s = 2;
        const uint8_t z = 128;
        tn *t = tn_new("DequantizeLinear", 13, 3, (const char *const[]){"x", "s", "z"}, 1, Y1);
        tn_in(t, 0, FA_DTYPE_UINT8, 1, (int64_t[]){4}, x, false);
        tn_in(t, 1, FA_DTYPE_FLOAT, 0, NULL, &s, false);
        tn_in(t, 2, FA_DTYPE_UINT8, 0, NULL, &z, false);
        tn_run(t);
        assert_int_equal(t->out[0].dtype, FA_DTYPE_FLOAT);
        expect_close(t->out[0].data, (float[]){-256, -250, 0, 254}, 4, "dequantize");
        tn_free(t);
    }
}

/* Per-axis: x [2, 3], axis 1, scales [1, 2, 4], zero points [0, 10, -10] (int8). */
static void test_quantize_dequantize_per_axis(void **state)
{
    (void)state;
    const float x[6] = {1, 2, 8, -3, 5, -40}, s[3] = {1, 2, 4};
    const int8_t z[3] = {0, 10, -10};
    tn *t = tn_new("QuantizeLinear", 13, 3, (const char *const[]){"x", "s", "z"}, 1, Y1);
    tn_inf(t, 0, 2, (int64_t[]){2, 3}, x);
    tn_in(t, 1, FA_DTYPE_FLOAT, 1, (int64_t[]){3}, s, false);
    tn_in(t, 2, FA_DTYPE_INT8, 1, (int64_t[]){3}, z, false);
    tn_run(t);
    /* 1/1+0 = 1; 2/2+10 = 11; 8/4-10 = -8; -3; 5/2 = 2.5 -> 2, +10 = 12; -40/4 - 10 = -20 */
    const int8_t want[6] = {1, 11, -8, -3, 12, -20};
    assert_memory_equal(t->out[0].data, want, 6);
    tn *d = tn_new("DequantizeLinear", 13, 3, (const char *const[]){"q", "s", "z"}, 1, Y1);
    tn_in(d, 0, FA_DTYPE_INT8, 2, (int64_t[]){2, 3}, want, false);
    tn_in(d, 1, FA_DTYPE_FLOAT, 1, (int64_t[]){3}, s, false);
    tn_in(d, 2, FA_DTYPE_INT8, 1, (int64_t[]){3}, z, false);
    tn_run(d);
    expect_close(d->out[0].data, (float[]){1, 2, 8, -3, 4, -40}, 6, "dequantize per-axis");
    tn_free(d);
    /* per-axis scale whose length differs from the axis: input error */
    tn *e = tn_new("QuantizeLinear", 13, 2, (const char *const[]){"x", "s"}, 1, Y1);
    tn_inf(e, 0, 2, (int64_t[]){2, 3}, x);
    tn_in(e, 1, FA_DTYPE_FLOAT, 1, (int64_t[]){2}, s, false);
    expect_input_error(e, "per-axis scale");
    tn_free(e);
    tn_free(t);
}

/* ================================ integer / QLinear ops ================================ */

/* ONNX ConvInteger examples: x = 2..10 (3x3 uint8), x_zero_point 1, w = 2x2 ones. */
static void test_convinteger_onnx_examples(void **state)
{
    (void)state;
    const uint8_t x[9] = {2, 3, 4, 5, 6, 7, 8, 9, 10}, w[4] = {1, 1, 1, 1}, xz = 1;
    for (int pad = 0; pad < 2; pad++) {
        tn *t = tn_new("ConvInteger", 10, 3, (const char *const[]){"x", "w", "xz"}, 1, Y1);
        tn_in(t, 0, FA_DTYPE_UINT8, 4, (int64_t[]){1, 1, 3, 3}, x, false);
        tn_in(t, 1, FA_DTYPE_UINT8, 4, (int64_t[]){1, 1, 2, 2}, w, false);
        tn_in(t, 2, FA_DTYPE_UINT8, 0, NULL, &xz, false);
        if (pad) fa_node_add_attr_ints(t->g, t->n, "pads", (int64_t[]){1, 1, 1, 1}, 4);
        tn_run(t);
        assert_int_equal(t->out[0].dtype, FA_DTYPE_INT32);
        if (pad) {
            const int32_t want[16] = {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9};
            expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 4, 4});
            assert_memory_equal(t->out[0].data, want, sizeof want);
        } else {
            const int32_t want[4] = {12, 16, 24, 28};
            expect_dims(&t->out[0], 4, (int64_t[]){1, 1, 2, 2});
            assert_memory_equal(t->out[0].data, want, sizeof want);
        }
        tn_free(t);
    }
}

/* QLinearConv with per-channel w scale / zero point, int32 bias and saturation, against the
 * float reference convolution of the zero-point-shifted integers and the spec's requantize. */
static void test_qlinearconv_per_channel_matches_requantized_reference(void **state)
{
    (void)state;
    enum { C = 2, M = 3, H = 5 };
    uint8_t x[C * H * H];
    int8_t w[M * C * 9];
    for (int i = 0; i < C * H * H; i++) x[i] = (uint8_t)((i * 37) % 256);
    for (int i = 0; i < M * C * 9; i++) w[i] = (int8_t)((i * 53) % 256 - 128);
    const float xs = 0.2f, ws[M] = {0.01f, 0.002f, 0.05f}, ys = 0.5f;
    const uint8_t xz = 120, yz = 100;
    const int8_t wz[M] = {0, 3, -2};
    const int32_t bias[M] = {100, -2000, 50};
    tn *t = tn_new("QLinearConv", 10, 9, (const char *const[]){"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"}, 1, Y1);
    tn_in(t, 0, FA_DTYPE_UINT8, 4, (int64_t[]){1, C, H, H}, x, false);
    tn_in(t, 1, FA_DTYPE_FLOAT, 0, NULL, &xs, false);
    tn_in(t, 2, FA_DTYPE_UINT8, 0, NULL, &xz, false);
    tn_in(t, 3, FA_DTYPE_INT8, 4, (int64_t[]){M, C, 3, 3}, w, false);
    tn_in(t, 4, FA_DTYPE_FLOAT, 1, (int64_t[]){M}, ws, false);
    tn_in(t, 5, FA_DTYPE_INT8, 1, (int64_t[]){M}, wz, false);
    tn_in(t, 6, FA_DTYPE_FLOAT, 0, NULL, &ys, false);
    tn_in(t, 7, FA_DTYPE_UINT8, 0, NULL, &yz, false);
    tn_in(t, 8, FA_DTYPE_INT32, 1, (int64_t[]){M}, bias, false);
    fa_node_add_attr_ints(t->g, t->n, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    tn_run(t);
    assert_int_equal(t->out[0].dtype, FA_DTYPE_UINT8);
    expect_dims(&t->out[0], 4, (int64_t[]){1, M, H, H});
    float xf[C * H * H], wf[M * C * 9], acc[M * H * H];
    for (int i = 0; i < C * H * H; i++) xf[i] = (float)(x[i] - xz);
    for (int i = 0; i < M * C * 9; i++) wf[i] = (float)(w[i] - wz[i / (C * 9)]);
    const conv_cfg c = {"q", 2, 1, C, M, 1, {H, H}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, NULL, false, {H, H}};
    ref_conv(&c, xf, wf, NULL, acc, c.want_out);
    const uint8_t *y = t->out[0].data;
    int saturated = 0;
    for (int i = 0; i < M * H * H; i++) {
        int m = i / (H * H);
        double r = nearbyint((acc[i] + bias[m]) * (double)(xs * ws[m] / ys) + yz);
        r = r < 0 ? 0 : r > 255 ? 255 : r;
        saturated += r == 0 || r == 255;
        assert_int_equal(y[i], (int)r);
    }
    if (!(saturated > 0 && saturated < M * H * H)) fprintf(stderr, "saturated %d of %d\n", saturated, M * H * H);
    assert_true(saturated > 0 && saturated < M * H * H); /* both regimes exercised */
    tn_free(t);
}

/* ONNX MatMulInteger example (a_zero_point 12) and QLinearMatMul example (values from the spec). */
static void test_matmulinteger_and_qlinearmatmul_onnx_examples(void **state)
{
    (void)state;
    {
        const uint8_t a[12] = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}, b[6] = {1, 4, 2, 5, 3, 6}, az = 12, bz = 0;
        tn *t = tn_new("MatMulInteger", 10, 4, (const char *const[]){"a", "b", "az", "bz"}, 1, Y1);
        tn_in(t, 0, FA_DTYPE_UINT8, 2, (int64_t[]){4, 3}, a, false);
        tn_in(t, 1, FA_DTYPE_UINT8, 2, (int64_t[]){3, 2}, b, false);
        tn_in(t, 2, FA_DTYPE_UINT8, 0, NULL, &az, false);
        tn_in(t, 3, FA_DTYPE_UINT8, 0, NULL, &bz, false);
        tn_run(t);
        assert_int_equal(t->out[0].dtype, FA_DTYPE_INT32);
        const int32_t want[8] = {-38, -83, -44, -98, -50, -113, -56, -128};
        assert_memory_equal(t->out[0].data, want, sizeof want);
        tn_free(t);
    }
    { /* per-row a_zero_point [1, 2] and per-column b_zero_point [0, 1] */
        const int8_t a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, az[2] = {1, 2}, bz[2] = {0, 1};
        tn *t = tn_new("MatMulInteger", 10, 4, (const char *const[]){"a", "b", "az", "bz"}, 1, Y1);
        tn_in(t, 0, FA_DTYPE_INT8, 2, (int64_t[]){2, 2}, a, false);
        tn_in(t, 1, FA_DTYPE_INT8, 2, (int64_t[]){2, 2}, b, false);
        tn_in(t, 2, FA_DTYPE_INT8, 1, (int64_t[]){2}, az, false);
        tn_in(t, 3, FA_DTYPE_INT8, 1, (int64_t[]){2}, bz, false);
        tn_run(t);
        /* A' = [[0,1],[1,2]], B' = [[5,5],[7,7]] */
        const int32_t want[4] = {7, 7, 19, 19};
        assert_memory_equal(t->out[0].data, want, sizeof want);
        tn_free(t);
    }
    {
        const uint8_t a[8] = {208, 236, 0, 238, 3, 214, 255, 29};
        const uint8_t b[12] = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};
        const float as = 0.0066f, bs = 0.00705f, ys = 0.0107f;
        const uint8_t az = 113, bz = 114, yz = 118;
        tn *t = tn_new("QLinearMatMul", 10, 8, (const char *const[]){"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, 1, Y1);
        tn_in(t, 0, FA_DTYPE_UINT8, 2, (int64_t[]){2, 4}, a, false);
        tn_in(t, 1, FA_DTYPE_FLOAT, 0, NULL, &as, false);
        tn_in(t, 2, FA_DTYPE_UINT8, 0, NULL, &az, false);
        tn_in(t, 3, FA_DTYPE_UINT8, 2, (int64_t[]){4, 3}, b, false);
        tn_in(t, 4, FA_DTYPE_FLOAT, 0, NULL, &bs, false);
        tn_in(t, 5, FA_DTYPE_UINT8, 0, NULL, &bz, false);
        tn_in(t, 6, FA_DTYPE_FLOAT, 0, NULL, &ys, false);
        tn_in(t, 7, FA_DTYPE_UINT8, 0, NULL, &yz, false);
        tn_run(t);
        const uint8_t want[6] = {168, 115, 255, 1, 66, 151};
        assert_memory_equal(t->out[0].data, want, sizeof want);
        tn_free(t);
    }
}

/* ONNX DynamicQuantizeLinear example: x = [0, 2, -3, -2.5, 1.34, 0.5] -> scale 5/255, zp 153,
 * y = [153, 255, 0, 26, 221, 179]. */
static void test_dynamicquantizelinear_onnx_example(void **state)
{
    (void)state;
    const float x[6] = {0, 2, -3, -2.5f, 1.34f, 0.5f};
    tn *t = tn_new("DynamicQuantizeLinear", 11, 1, X1, 3, (const char *const[]){"y", "s", "z"});
    tn_inf(t, 0, 1, (int64_t[]){6}, x);
    tn_run(t);
    const uint8_t want[6] = {153, 255, 0, 26, 221, 179};
    assert_memory_equal(t->out[0].data, want, 6);
    expect_close(t->out[1].data, (float[]){5.0f / 255.0f}, 1, "dynamic scale");
    assert_int_equal(((uint8_t *)t->out[2].data)[0], 153);
    tn_free(t);
}

/* ================================ registry entries and costs ================================ */

static void test_pattern_classes_and_cost_formulas(void **state)
{
    (void)state;
    struct { const char *op; fa_pattern p; } pc[] = {
        {"Conv", FA_PATTERN_OUT_ELEMWISE_FUSABLE}, {"ConvTranspose", FA_PATTERN_OUT_ELEMWISE_FUSABLE},
        {"MatMul", FA_PATTERN_OUT_ELEMWISE_FUSABLE}, {"Gemm", FA_PATTERN_OUT_ELEMWISE_FUSABLE},
        {"MaxPool", FA_PATTERN_REDUCTION}, {"AveragePool", FA_PATTERN_REDUCTION},
        {"GlobalAveragePool", FA_PATTERN_REDUCTION}, {"GlobalMaxPool", FA_PATTERN_REDUCTION},
        {"LRN", FA_PATTERN_REDUCTION}, {"InstanceNormalization", FA_PATTERN_REDUCTION},
        {"BatchNormalization", FA_PATTERN_BROADCAST}, {"Resize", FA_PATTERN_INJECTIVE},
        {"QuantizeLinear", FA_PATTERN_BROADCAST}, {"DequantizeLinear", FA_PATTERN_BROADCAST},
        {"LpPool", FA_PATTERN_REDUCTION}, {"GlobalLpPool", FA_PATTERN_REDUCTION},
        {"Upsample", FA_PATTERN_INJECTIVE}, {"ConvInteger", FA_PATTERN_OUT_ELEMWISE_FUSABLE},
        {"QLinearConv", FA_PATTERN_OUT_ELEMWISE_FUSABLE}, {"MatMulInteger", FA_PATTERN_OUT_ELEMWISE_FUSABLE},
        {"QLinearMatMul", FA_PATTERN_OUT_ELEMWISE_FUSABLE}, {"DynamicQuantizeLinear", FA_PATTERN_REDUCTION},
    };
    for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++) {
        const fa_op *op = fa_op_find("", pc[i].op);
        assert_non_null(op);
        assert_int_equal(op->pattern, pc[i].p);
        assert_non_null(op->kernel);
        assert_non_null(op->doc);
    }
    /* Conv 1x8x10x10, W 16x4x3x3 (group 2), pads 1, bias: out 1x16x10x10; the taps inside the
     * input per dim: 9 + 10 + 9 = 28 of the 30 (output, tap) pairs (the padding's are skipped):
     * FLOPs = 2*1*16*4*28*28 + 16*100 = 101952 (all nine taps: 116800);
     * bytes = 4*(800 + 576 + 16) read, 4*1600 written */
    tn *t = tn_new("Conv", 11, 3, XWB, 1, Y1);
    tn_in(t, 0, FA_DTYPE_FLOAT, 4, (int64_t[]){1, 8, 10, 10}, NULL, false);
    tn_in(t, 1, FA_DTYPE_FLOAT, 4, (int64_t[]){16, 4, 3, 3}, NULL, false);
    tn_in(t, 2, FA_DTYPE_FLOAT, 1, (int64_t[]){16}, NULL, false);
    fa_node_add_attr_int(t->g, t->n, "group", 2);
    fa_node_add_attr_ints(t->g, t->n, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    assert_int_equal(tn_infer(t), FA_OK);
    fa_op_cost c;
    fa_node_cost(t->g, t->n, &c);
    assert_int_equal(c.flops, 101952);
    assert_int_equal(c.bytes_read, 4 * (800 + 576 + 16));
    assert_int_equal(c.bytes_written, 4 * 1600);
    tn_free(t);
    /* 3x3 dilated by 12 with pads 12 on 10x10 (DeepLabV3's ASPP): only the centre tap lands in
     * the input: 2*1*1*1*10*10 = 200, not 2*100*9 */
    t = tn_new("Conv", 11, 2, XWB, 1, Y1);
    tn_in(t, 0, FA_DTYPE_FLOAT, 4, (int64_t[]){1, 1, 10, 10}, NULL, false);
    tn_in(t, 1, FA_DTYPE_FLOAT, 4, (int64_t[]){1, 1, 3, 3}, NULL, false);
    fa_node_add_attr_ints(t->g, t->n, "dilations", (int64_t[]){12, 12}, 2);
    fa_node_add_attr_ints(t->g, t->n, "pads", (int64_t[]){12, 12, 12, 12}, 4);
    assert_int_equal(tn_infer(t), FA_OK);
    fa_node_cost(t->g, t->n, &c);
    assert_int_equal(c.flops, 200);
    tn_free(t);
    /* no padding: the textbook count, 1x2x6x6 by 3x2x3x3 stride 1 -> 1x3x4x4: 2*48*2*9 = 1728 */
    t = tn_new("Conv", 11, 2, XWB, 1, Y1);
    tn_in(t, 0, FA_DTYPE_FLOAT, 4, (int64_t[]){1, 2, 6, 6}, NULL, false);
    tn_in(t, 1, FA_DTYPE_FLOAT, 4, (int64_t[]){3, 2, 3, 3}, NULL, false);
    assert_int_equal(tn_infer(t), FA_OK);
    fa_node_cost(t->g, t->n, &c);
    assert_int_equal(c.flops, 1728);
    tn_free(t);
    /* MatMul [3,4,5] x [5,6]: 2*3*4*6*5 = 720 */
    t = tn_new("MatMul", 13, 2, (const char *const[]){"A", "B"}, 1, Y1);
    tn_in(t, 0, FA_DTYPE_FLOAT, 3, (int64_t[]){3, 4, 5}, NULL, false);
    tn_in(t, 1, FA_DTYPE_FLOAT, 2, (int64_t[]){5, 6}, NULL, false);
    assert_int_equal(tn_infer(t), FA_OK);
    fa_node_cost(t->g, t->n, &c);
    assert_int_equal(c.flops, 720);
    tn_free(t);
    /* Gemm M=2 K=3 N=4, alpha 2, with C: 2*8*3 + 8 + 16 = 72 */
    t = tn_new("Gemm", 13, 3, (const char *const[]){"A", "B", "C"}, 1, Y1);
    tn_in(t, 0, FA_DTYPE_FLOAT, 2, (int64_t[]){2, 3}, NULL, false);
    tn_in(t, 1, FA_DTYPE_FLOAT, 2, (int64_t[]){3, 4}, NULL, false);
    tn_in(t, 2, FA_DTYPE_FLOAT, 1, (int64_t[]){4}, NULL, false);
    fa_node_add_attr_float(t->g, t->n, "alpha", 2.0f);
    assert_int_equal(tn_infer(t), FA_OK);
    fa_node_cost(t->g, t->n, &c);
    assert_int_equal(c.flops, 72);
    tn_free(t);
    /* ConvTranspose X 1x2x3x3, W 2x3x2x2, no bias: 2*18*(3*4) = 432 */
    t = tn_new("ConvTranspose", 11, 2, XW, 1, Y1);
    tn_in(t, 0, FA_DTYPE_FLOAT, 4, (int64_t[]){1, 2, 3, 3}, NULL, false);
    tn_in(t, 1, FA_DTYPE_FLOAT, 4, (int64_t[]){2, 3, 2, 2}, NULL, false);
    assert_int_equal(tn_infer(t), FA_OK);
    fa_node_cost(t->g, t->n, &c);
    assert_int_equal(c.flops, 432);
    tn_free(t);
}

/* Symbolic (unknown) batch dims propagate as -1 instead of failing. */
static void test_unknown_batch_dim_propagates(void **state)
{
    (void)state;
    tn *t = tn_new("Conv", 11, 2, XW, 1, Y1);
    tn_in(t, 0, FA_DTYPE_FLOAT, 4, (int64_t[]){-1, 3, 8, 8}, NULL, false);
    tn_in(t, 1, FA_DTYPE_FLOAT, 4, (int64_t[]){4, 3, 3, 3}, NULL, false);
    assert_int_equal(tn_infer(t), FA_OK);
    fa_tensor *y = fa_graph_out(t->g, t->n, 0);
    assert_int_equal(y->dims[0], -1);
    assert_int_equal(y->dims[1], 4);
    assert_int_equal(y->dims[2], 6);
    tn_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_onnx_doc_examples),
        cmocka_unit_test(test_conv_attribute_combinations_match_direct_convolution),
        cmocka_unit_test(test_bad_shapes_give_input_error_naming_the_node),
        cmocka_unit_test(test_convtranspose_onnx_doc_example),
        cmocka_unit_test(test_convtranspose_group_output_padding_output_shape_match_scatter),
        cmocka_unit_test(test_matmul_numpy_broadcasting_and_1d_operands),
        cmocka_unit_test(test_gemm_every_transpose_alpha_beta_and_bias_form),
        cmocka_unit_test(test_maxpool_ceil_mode_onnx_example),
        cmocka_unit_test(test_maxpool_pads_dilation_and_indices),
        cmocka_unit_test(test_averagepool_count_include_pad),
        cmocka_unit_test(test_global_pools_reduce_spatial_dims),
        cmocka_unit_test(test_lppool_and_global_lppool_norms),
        cmocka_unit_test(test_lrn_matches_spec_formula),
        cmocka_unit_test(test_instancenorm_per_plane_statistics),
        cmocka_unit_test(test_batchnorm_inference_per_channel_affine),
        cmocka_unit_test(test_batchnorm_spatial0_per_activation_parameters),
        cmocka_unit_test(test_batchnorm_training_mode_batch_statistics),
        cmocka_unit_test(test_resize_nearest_and_linear_onnx_examples),
        cmocka_unit_test(test_resize_tf_crop_and_resize_roi_and_extrapolation),
        cmocka_unit_test(test_resize_opset10_nearest_up_and_down),
        cmocka_unit_test(test_resize_separable_planes_match_the_per_element_formula),
        cmocka_unit_test(test_resize_cubic_matches_keys_kernel),
        cmocka_unit_test(test_upsample_nearest_opset7_and_9),
        cmocka_unit_test(test_quantize_dequantize_per_tensor_onnx_examples),
        cmocka_unit_test(test_quantize_dequantize_per_axis),
        cmocka_unit_test(test_convinteger_onnx_examples),
        cmocka_unit_test(test_qlinearconv_per_channel_matches_requantized_reference),
        cmocka_unit_test(test_matmulinteger_and_qlinearmatmul_onnx_examples),
        cmocka_unit_test(test_dynamicquantizelinear_onnx_example),
        cmocka_unit_test(test_pattern_classes_and_cost_formulas),
        cmocka_unit_test(test_unknown_batch_dim_propagates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
