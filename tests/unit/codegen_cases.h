/* tests/unit/codegen_cases — small graphs + hand-made clusters shared by test_codegen.c and
 * test_gate.c: one per cluster kind the code generator emits, plus edge cases. */
#ifndef FA_CODEGEN_CASES_H
#define FA_CODEGEN_CASES_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor/codegen.h"
#include "graph/graph.h"
#include "testutil.h"

typedef struct tc {
    fa_ctx *ctx;
    fa_graph *g;
    fa_cluster c;
    int mem[2048];
    int ins[128];
    int outs[64];
} tc;

static tc *tc_new(int opset)
{
    tc *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->ctx = fa_ctx_create();
    t->g = fa_graph_create("codegen_case");
    assert_int_equal(fa_graph_set_opset(t->ctx, t->g, "", opset), FA_OK);
    return t;
}

static void tc_free(tc *t)
{
    if (!t) return;
    fa_graph_free(t->g);
    fa_ctx_free(t->ctx);
    free(t);
}

static void tc_input(tc *t, const char *name, int rank, const int64_t *dims)
{
    int id = fa_graph_tensor(t->g, name);
    assert_true(id >= 0);
    fa_tensor_set_shape(t->g->tensors[id], FA_DTYPE_FLOAT, rank, dims);
    assert_int_equal(fa_graph_add_input(t->ctx, t->g, id), FA_OK);
}

static void tc_const(tc *t, const char *name, int rank, const int64_t *dims, const float *v)
{
    int id = fa_graph_tensor(t->g, name);
    assert_true(id >= 0);
    fa_tensor *x = t->g->tensors[id];
    fa_tensor_set_shape(x, FA_DTYPE_FLOAT, rank, dims);
    int64_t n = fa_tensor_numel(x);
    assert_int_equal(fa_tensor_set_data(t->ctx, x, v, (size_t)n * sizeof(float)), FA_OK);
    x->flags |= FA_TENSOR_INITIALIZER;
}

static void tc_scalar(tc *t, const char *name, float v) { tc_const(t, name, 0, NULL, &v); }

static void tc_axes(tc *t, const char *name, int n, const int64_t *axes)
{
    int id = fa_graph_tensor(t->g, name);
    fa_tensor *x = t->g->tensors[id];
    int64_t d[1] = {n};
    fa_tensor_set_shape(x, FA_DTYPE_INT64, 1, d);
    assert_int_equal(fa_tensor_set_data(t->ctx, x, axes, (size_t)n * sizeof(int64_t)), FA_OK);
    x->flags |= FA_TENSOR_INITIALIZER;
}

static fa_node *tc_node(tc *t, const char *op, const char *a, const char *b, const char *c, const char *out)
{
    const char *ins[3] = {a, b, c};
    int n = c ? 3 : b ? 2 : 1;
    const char *outs[1] = {out};
    char name[64];
    snprintf(name, sizeof name, "%s_%d", op, t->g->n_nodes);
    fa_node *nd = fa_graph_add_node(t->ctx, t->g, name, op, "", n, ins, 1, outs);
    assert_non_null(nd);
    return nd;
}

static void tc_output(tc *t, const char *name)
{
    int id = fa_graph_find_tensor(t->g, name);
    assert_true(id >= 0);
    assert_int_equal(fa_graph_add_output(t->ctx, t->g, id), FA_OK);
}

/* Index + prepare, then a cluster of every live node: inputs = tensors read from outside the
 * members (graph inputs and constants), outputs = the graph outputs. */
static void tc_cluster(tc *t, fa_cluster_kind kind, fa_reduce_kind red, int axis, const char *label)
{
    fa_status st = fa_graph_index(t->ctx, t->g);
    if (st) fail_msg("index: %s", fa_ctx_errmsg(t->ctx));
    st = fa_graph_prepare(t->ctx, t->g, NULL);
    if (st) fail_msg("prepare: %s", fa_ctx_errmsg(t->ctx));
    st = fa_graph_index(t->ctx, t->g);
    if (st) fail_msg("index: %s", fa_ctx_errmsg(t->ctx));
    fa_cluster *c = &t->c;
    memset(c, 0, sizeof *c);
    c->id = 7;
    c->kind = kind;
    c->reduction = red;
    c->reduce_axis = axis;
    c->anchor = -1;
    c->label = label;
    c->registers = -1;
    c->depends_on = -1;
    c->members = t->mem;
    c->inputs = t->ins;
    c->outputs = t->outs;
    for (int i = 0; i < t->g->n_topo; i++) {
        const fa_node *n = t->g->nodes[t->g->topo[i]];
        t->mem[c->n_members++] = n->id;
        if (c->anchor < 0 && kind == FA_CLUSTER_REDUCTION &&
            (!strncmp(n->op_type, "Reduce", 6) || strstr(n->op_type, "Softmax") || strstr(n->op_type, "Normalization")))
            c->anchor = n->id;
    }
    for (int i = 0; i < c->n_members; i++) {
        const fa_node *n = t->g->nodes[c->members[i]];
        for (int k = 0; k < n->n_inputs; k++) {
            int tid = n->inputs[k];
            if (tid < 0) continue;
            const fa_node *p = fa_graph_producer(t->g, tid);
            bool inside = false;
            for (int m = 0; p && m < c->n_members; m++) inside |= c->members[m] == p->id;
            bool dup = false;
            for (int m = 0; m < c->n_inputs; m++) dup |= c->inputs[m] == tid;
            if (!inside && !dup) t->ins[c->n_inputs++] = tid;
        }
    }
    for (int i = 0; i < t->g->n_outputs; i++) t->outs[c->n_outputs++] = t->g->outputs[i];
}

/* ---- the cases ---- */

/* Elementwise chain with broadcasting: x [2,3,4,5], per-channel bias b [3,1,1] (constant),
 * s [5] (graph input), constant Clip bounds, two outputs (an intermediate leaves too). */
__attribute__((unused)) static tc *case_ew_broadcast(void)
{
    tc *t = tc_new(18);
    int64_t dx[4] = {2, 3, 4, 5}, db[3] = {3, 1, 1}, ds[1] = {5};
    float bv[3] = {0.5f, -0.25f, 1.0f};
    tc_input(t, "x", 4, dx);
    tc_input(t, "s", 1, ds);
    tc_const(t, "b", 3, db, bv);
    tc_scalar(t, "lo", -0.5f);
    tc_scalar(t, "hi", 1.5f);
    tc_scalar(t, "two", 2.0f);
    tc_node(t, "Add", "x", "b", NULL, "t1");
    tc_node(t, "Relu", "t1", NULL, NULL, "t2");
    tc_node(t, "Mul", "t2", "s", NULL, "t3");
    tc_node(t, "Clip", "t3", "lo", "hi", "t4");
    tc_node(t, "Pow", "t4", "two", NULL, "t5");
    fa_node *lr = tc_node(t, "LeakyRelu", "t5", NULL, NULL, "t6");
    fa_node_add_attr_float(t->g, lr, "alpha", 0.2f);
    tc_node(t, "Sigmoid", "t6", NULL, NULL, "y");
    tc_output(t, "y");
    tc_output(t, "t3");
    tc_cluster(t, FA_CLUSTER_ELEMWISE_CHAIN, FA_REDUCE_NONE, 0, "elementwise");
    return t;
}

/* Horizontal pair: two consumers of x [4,1000]. */
__attribute__((unused)) static tc *case_horizontal(void)
{
    tc *t = tc_new(18);
    int64_t dx[2] = {4, 1000};
    tc_input(t, "x", 2, dx);
    tc_scalar(t, "k", 3.0f);
    tc_node(t, "Tanh", "x", NULL, NULL, "a");
    tc_node(t, "Mul", "x", "k", NULL, "m");
    tc_node(t, "Exp", "m", NULL, NULL, "e");
    tc_output(t, "a");
    tc_output(t, "e");
    tc_cluster(t, FA_CLUSTER_HORIZONTAL, FA_REDUCE_NONE, 0, "horizontal(2)");
    return t;
}

/* Softmax over the last axis of x [batch, len] with a scale prologue Mul(x, 0.125). */
__attribute__((unused)) static tc *case_softmax_scale(int64_t batch, int64_t len)
{
    tc *t = tc_new(18);
    int64_t dx[2] = {batch, len};
    tc_input(t, "x", 2, dx);
    tc_scalar(t, "scale", 0.125f);
    tc_node(t, "Mul", "x", "scale", NULL, "xs");
    tc_node(t, "Softmax", "xs", NULL, NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_REDUCTION, FA_REDUCE_SOFTMAX, 1, "softmax");
    return t;
}

/* Softmax decomposed (ReduceMax, Sub, Exp, ReduceSum, Div) on x [batch, 2, len] over the last axis. */
__attribute__((unused)) static tc *case_softmax_decomposed(int64_t batch, int64_t len)
{
    tc *t = tc_new(18);
    int64_t dx[3] = {batch, 2, len};
    int64_t ax[1] = {-1};
    tc_input(t, "x", 3, dx);
    tc_axes(t, "ax", 1, ax);
    tc_node(t, "ReduceMax", "x", "ax", NULL, "m");
    tc_node(t, "Sub", "x", "m", NULL, "d");
    tc_node(t, "Exp", "d", NULL, NULL, "e");
    tc_node(t, "ReduceSum", "e", "ax", NULL, "s");
    tc_node(t, "Div", "e", "s", NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_REDUCTION, FA_REDUCE_SOFTMAX, 2, "softmax(decomposed)");
    return t;
}

/* Layer norm decomposed as the *_expanded tests write it, on x [batch, 3, len] over the last axis,
 * with gamma/beta [len] constants: the scale/shift after the normalization is the epilogue. */
__attribute__((unused)) static tc *case_layernorm_decomposed(int64_t batch, int64_t len)
{
    tc *t = tc_new(18);
    int64_t dx[3] = {batch, 3, len}, dg[1] = {len};
    int64_t ax[1] = {-1};
    float *gv = malloc((size_t)len * sizeof *gv), *bv = malloc((size_t)len * sizeof *bv);
    for (int64_t i = 0; i < len; i++) {
        gv[i] = 0.5f + (float)(i % 7) * 0.1f;
        bv[i] = -0.3f + (float)(i % 5) * 0.05f;
    }
    tc_input(t, "x", 3, dx);
    tc_axes(t, "ax", 1, ax);
    tc_const(t, "gamma", 1, dg, gv);
    tc_const(t, "beta", 1, dg, bv);
    tc_scalar(t, "two", 2.0f);
    tc_scalar(t, "eps", 1e-5f);
    free(gv);
    free(bv);
    tc_node(t, "ReduceMean", "x", "ax", NULL, "mean");
    tc_node(t, "Sub", "x", "mean", NULL, "d");
    tc_node(t, "Pow", "d", "two", NULL, "d2");
    tc_node(t, "ReduceMean", "d2", "ax", NULL, "var");
    tc_node(t, "Add", "var", "eps", NULL, "ve");
    tc_node(t, "Sqrt", "ve", NULL, NULL, "sd");
    tc_node(t, "Div", "d", "sd", NULL, "nrm");
    tc_node(t, "Mul", "nrm", "gamma", NULL, "sc");
    tc_node(t, "Add", "sc", "beta", NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_REDUCTION, FA_REDUCE_LAYER_NORM, 2, "layer_norm(decomposed)");
    t->c.epsilon = 1e-5f;
    return t;
}

/* RMS norm decomposed: x * Reciprocal(Sqrt(ReduceMean(x*x) + eps)) * gamma, x [batch, len]. */
__attribute__((unused)) static tc *case_rmsnorm(int64_t batch, int64_t len)
{
    tc *t = tc_new(18);
    int64_t dx[2] = {batch, len}, dg[1] = {len};
    int64_t ax[1] = {1};
    float *gv = malloc((size_t)len * sizeof *gv);
    for (int64_t i = 0; i < len; i++) gv[i] = 1.0f + (float)(i % 3) * 0.25f;
    tc_input(t, "x", 2, dx);
    tc_axes(t, "ax", 1, ax);
    tc_const(t, "gamma", 1, dg, gv);
    tc_scalar(t, "eps", 1e-6f);
    free(gv);
    tc_node(t, "Mul", "x", "x", NULL, "x2");
    tc_node(t, "ReduceMean", "x2", "ax", NULL, "ms");
    tc_node(t, "Add", "ms", "eps", NULL, "mse");
    tc_node(t, "Sqrt", "mse", NULL, NULL, "rms");
    tc_node(t, "Reciprocal", "rms", NULL, NULL, "inv");
    tc_node(t, "Mul", "x", "inv", NULL, "nrm");
    tc_node(t, "Mul", "nrm", "gamma", NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_REDUCTION, FA_REDUCE_RMS_NORM, 1, "rms_norm(decomposed)");
    t->c.epsilon = 1e-6f;
    return t;
}

/* LayerNormalization op (opset 17) on x [batch, len] with a Relu epilogue. */
__attribute__((unused)) static tc *case_layernorm_op(int64_t batch, int64_t len)
{
    tc *t = tc_new(18);
    int64_t dx[2] = {batch, len}, dg[1] = {len};
    float *gv = malloc((size_t)len * sizeof *gv), *bv = malloc((size_t)len * sizeof *bv);
    for (int64_t i = 0; i < len; i++) {
        gv[i] = 0.75f + (float)(i % 11) * 0.05f;
        bv[i] = (float)(i % 4) * 0.1f - 0.15f;
    }
    tc_input(t, "x", 2, dx);
    tc_const(t, "gamma", 1, dg, gv);
    tc_const(t, "beta", 1, dg, bv);
    free(gv);
    free(bv);
    fa_node *ln = tc_node(t, "LayerNormalization", "x", "gamma", "beta", "n");
    fa_node_add_attr_float(t->g, ln, "epsilon", 1e-5f);
    tc_node(t, "Relu", "n", NULL, NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_REDUCTION, FA_REDUCE_LAYER_NORM, 1, "layer_norm");
    return t;
}

/* RMSNormalization op (opset 23) on x [batch, len]. */
__attribute__((unused)) static tc *case_rmsnorm_op(int64_t batch, int64_t len)
{
    tc *t = tc_new(23);
    int64_t dx[2] = {batch, len}, dg[1] = {len};
    float *gv = malloc((size_t)len * sizeof *gv);
    for (int64_t i = 0; i < len; i++) gv[i] = 0.5f + (float)(i % 9) * 0.1f;
    tc_input(t, "x", 2, dx);
    tc_const(t, "gamma", 1, dg, gv);
    free(gv);
    tc_node(t, "RMSNormalization", "x", "gamma", NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_REDUCTION, FA_REDUCE_RMS_NORM, 1, "rms_norm");
    return t;
}

/* The residual add + layer norm ONNX Runtime fuses as SkipLayerNormalization (issue 33): x and
 * the residual r [batch, len] added, a per-column bias `offset` + (i % 7) / 8 added (a residual
 * stream far from 0: the row kernel's first-sweep sums must not lose its spread to its offset),
 * then LayerNormalization (opset 17, epsilon 1e-6) over the row. */
__attribute__((unused)) static tc *case_skip_layernorm(int64_t batch, int64_t len, float offset)
{
    tc *t = tc_new(18);
    int64_t dx[2] = {batch, len}, dg[1] = {len};
    float *gv = malloc((size_t)len * sizeof *gv), *bv = malloc((size_t)len * sizeof *bv), *ov = malloc((size_t)len * sizeof *ov);
    for (int64_t i = 0; i < len; i++) {
        gv[i] = 0.75f + (float)(i % 11) * 0.05f;
        bv[i] = (float)(i % 4) * 0.1f - 0.15f;
        ov[i] = offset + (float)(i % 7) * 0.125f;
    }
    tc_input(t, "x", 2, dx);
    tc_input(t, "r", 2, dx);
    tc_const(t, "gamma", 1, dg, gv);
    tc_const(t, "beta", 1, dg, bv);
    tc_const(t, "bias", 1, dg, ov);
    free(gv);
    free(bv);
    free(ov);
    tc_node(t, "Add", "x", "r", NULL, "s");
    tc_node(t, "Add", "s", "bias", NULL, "sb");
    fa_node *ln = tc_node(t, "LayerNormalization", "sb", "gamma", "beta", "y");
    fa_node_add_attr_float(t->g, ln, "epsilon", 1e-6f);
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_REDUCTION, FA_REDUCE_LAYER_NORM, 1, "layer_norm");
    return t;
}

/* The pre-LN form (GPT-2, ViT, LLaMA): the sum x + r is the residual stream the next block adds
 * to, so it is a second output of the row kernel beside the norm (ONNX Runtime's
 * SkipLayerNormalization's optional sum output; vLLM's fused_add_rms_norm): x + r [batch, len],
 * LayerNormalization (opset 17) or RMSNormalization (opset 23) over the row; outputs y and s. */
__attribute__((unused)) static tc *case_skip_norm_sum_out(int64_t batch, int64_t len, bool rms)
{
    tc *t = tc_new(rms ? 23 : 17);
    int64_t dx[2] = {batch, len}, dg[1] = {len};
    float *gv = malloc((size_t)len * sizeof *gv), *bv = malloc((size_t)len * sizeof *bv);
    for (int64_t i = 0; i < len; i++) {
        gv[i] = 0.75f + (float)(i % 11) * 0.05f;
        bv[i] = (float)(i % 4) * 0.1f - 0.15f;
    }
    tc_input(t, "x", 2, dx);
    tc_input(t, "r", 2, dx);
    tc_const(t, "gamma", 1, dg, gv);
    if (!rms) tc_const(t, "beta", 1, dg, bv);
    free(gv);
    free(bv);
    tc_node(t, "Add", "x", "r", NULL, "s");
    tc_node(t, rms ? "RMSNormalization" : "LayerNormalization", "s", "gamma", rms ? NULL : "beta", "y");
    tc_output(t, "y");
    tc_output(t, "s");
    tc_cluster(t, FA_CLUSTER_REDUCTION, rms ? FA_REDUCE_RMS_NORM : FA_REDUCE_LAYER_NORM, 1, rms ? "rms_norm" : "layer_norm");
    return t;
}

/* The residual add + RMS norm ONNX Runtime fuses as SkipSimplifiedLayerNormalization: x + r
 * [batch, len], then RMSNormalization (opset 23) over the row. */
__attribute__((unused)) static tc *case_skip_rmsnorm(int64_t batch, int64_t len)
{
    tc *t = tc_new(23);
    int64_t dx[2] = {batch, len}, dg[1] = {len};
    float *gv = malloc((size_t)len * sizeof *gv);
    for (int64_t i = 0; i < len; i++) gv[i] = 0.5f + (float)(i % 9) * 0.1f;
    tc_input(t, "x", 2, dx);
    tc_input(t, "r", 2, dx);
    tc_const(t, "gamma", 1, dg, gv);
    free(gv);
    tc_node(t, "Add", "x", "r", NULL, "s");
    tc_node(t, "RMSNormalization", "s", "gamma", NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_REDUCTION, FA_REDUCE_RMS_NORM, 1, "rms_norm");
    return t;
}

/* Every op of the emitter table as one branch off x [3, 517] (a horizontal cluster with one
 * output per op), plus Where(Less(x, 0), ...), PRelu with a per-column slope, Pow 3 / 0.5 / 1.7. */
__attribute__((unused)) static tc *case_all_ops(void)
{
    tc *t = tc_new(18);
    int64_t dx[2] = {3, 517}, dsl[1] = {517};
    float *sl = malloc(517 * sizeof *sl);
    for (int i = 0; i < 517; i++) sl[i] = 0.01f * (float)(i % 13);
    tc_input(t, "x", 2, dx);
    tc_input(t, "z", 2, dx);
    tc_const(t, "slope", 1, dsl, sl);
    free(sl);
    tc_scalar(t, "three", 3.0f);
    tc_scalar(t, "half", 0.5f);
    tc_scalar(t, "e17", 1.7f);
    tc_scalar(t, "zero", 0.0f);
    tc_scalar(t, "one", 1.0f);
    static const char *unary[] = {"Relu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Selu", "Softplus",
                                  "Softsign", "Mish", "Erf", "Swish", "Exp", "Neg", "Abs", "Floor", "Ceil",
                                  "Identity", "Sin", "Cos"};
    char out[64];
    int k = 0;
    for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++) {
        snprintf(out, sizeof out, "u%d", k++);
        tc_node(t, unary[i], "x", NULL, NULL, out);
        tc_output(t, out);
    }
    /* positive-domain ops on |x| + 1 */
    tc_node(t, "Abs", "x", NULL, NULL, "ax");
    tc_node(t, "Add", "ax", "one", NULL, "pos");
    static const char *posu[] = {"Sqrt", "Log", "Reciprocal"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(out, sizeof out, "p%d", (int)i);
        tc_node(t, posu[i], "pos", NULL, NULL, out);
        tc_output(t, out);
    }
    tc_node(t, "Pow", "pos", "three", NULL, "pw3");
    tc_node(t, "Pow", "pos", "half", NULL, "pwh");
    tc_node(t, "Pow", "pos", "e17", NULL, "pwe");
    tc_node(t, "Div", "x", "pos", NULL, "dv");
    static const char *bin[] = {"Add", "Sub", "Mul", "Max", "Min", "Sum", "Mean"};
    for (size_t i = 0; i < sizeof bin / sizeof bin[0]; i++) {
        snprintf(out, sizeof out, "b%d", (int)i);
        tc_node(t, bin[i], "x", "z", NULL, out);
        tc_output(t, out);
    }
    fa_node *g1 = tc_node(t, "Gelu", "x", NULL, NULL, "gelu");
    (void)g1;
    fa_node *g2 = tc_node(t, "Gelu", "x", NULL, NULL, "gelut");
    fa_node_add_attr_string(t->g, g2, "approximate", "tanh");
    tc_node(t, "PRelu", "x", "slope", NULL, "prelu");
    tc_node(t, "Less", "x", "zero", NULL, "neg");
    tc_node(t, "Where", "neg", "z", "x", "wh");
    tc_node(t, "Greater", "x", "z", NULL, "gt");
    tc_node(t, "Where", "gt", "x", "z", "wh2");
    tc_node(t, "Equal", "x", "x", NULL, "eq");
    tc_node(t, "Where", "eq", "x", "z", "wh3");
    fa_node *cl = tc_node(t, "Clip", "x", "zero", NULL, "clip0");
    (void)cl;
    static const char *more[] = {"pw3", "pwh", "pwe", "dv", "gelu", "gelut", "prelu", "wh", "wh2", "wh3", "clip0"};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) tc_output(t, more[i]);
    tc_cluster(t, FA_CLUSTER_HORIZONTAL, FA_REDUCE_NONE, 0, "horizontal(all ops)");
    return t;
}

/* Register-heavy chain: a_k = Tanh(a_{k-1}) for k = 1..n, then y = (((a_n + a_{n-1}) + ...) + a_1):
 * every a_k stays live until the reverse sum reaches it (float adds cannot be reassociated). */
__attribute__((unused)) static tc *case_heavy(int n)
{
    tc *t = tc_new(18);
    int64_t dx[1] = {1 << 16};
    tc_input(t, "a0", 1, dx);
    char a[32], b[32], o[32];
    for (int k = 1; k <= n; k++) {
        snprintf(a, sizeof a, "a%d", k - 1);
        snprintf(b, sizeof b, "a%d", k);
        tc_node(t, "Tanh", a, NULL, NULL, b);
    }
    snprintf(o, sizeof o, "a%d", n);
    for (int k = n - 1; k >= 1; k--) {
        snprintf(a, sizeof a, "a%d", k);
        snprintf(b, sizeof b, "s%d", k);
        tc_node(t, "Add", o, a, NULL, b);
        snprintf(o, sizeof o, "%s", b);
    }
    tc_output(t, o);
    tc_cluster(t, FA_CLUSTER_ELEMWISE_CHAIN, FA_REDUCE_NONE, 0, "elementwise(heavy)");
    return t;
}

/* ---- attention (FA_CLUSTER_ATTENTION: codegen/attention.c) ---- */

static void tc_perm(tc *t, const char *in, const char *out, int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t perm[4] = {a, b, c, d};
    fa_node *n = tc_node(t, "Transpose", in, NULL, NULL, out);
    assert_non_null(fa_node_add_attr_ints(t->g, n, "perm", perm, 4));
}

static void tc_bool(tc *t, const char *name, int rank, const int64_t *dims, const unsigned char *v)
{
    int id = fa_graph_tensor(t->g, name);
    fa_tensor *x = t->g->tensors[id];
    fa_tensor_set_shape(x, FA_DTYPE_BOOL, rank, dims);
    assert_int_equal(fa_tensor_set_data(t->ctx, x, v, (size_t)fa_tensor_numel(x)), FA_OK);
    x->flags |= FA_TENSOR_INITIALIZER;
}

/* BERT's self-attention core as the legacy exporter writes it: xq, xk, xv [1, s, h·d] ->
 * Reshape [1, s, h, d] -> Transpose to [1, h, s, d] (K to [1, h, d, s]) -> MatMul -> Div by
 * sqrt(d) -> Softmax -> MatMul -> Transpose -> Reshape [1, s, h·d]. */
__attribute__((unused)) static tc *case_attention_bert(int s, int h, int d)
{
    tc *t = tc_new(17);
    int64_t dx[3] = {1, s, h * d};
    tc_input(t, "xq", 3, dx);
    tc_input(t, "xk", 3, dx);
    tc_input(t, "xv", 3, dx);
    int64_t heads[4] = {-1, s, h, d}, hidden[3] = {-1, s, h * d};
    tc_axes(t, "heads", 4, heads);
    tc_axes(t, "hidden", 3, hidden);
    tc_node(t, "Reshape", "xq", "heads", NULL, "q4");
    tc_node(t, "Reshape", "xk", "heads", NULL, "k4");
    tc_node(t, "Reshape", "xv", "heads", NULL, "v4");
    tc_perm(t, "q4", "q", 0, 2, 1, 3);
    tc_perm(t, "k4", "kt", 0, 2, 3, 1);
    tc_perm(t, "v4", "v", 0, 2, 1, 3);
    tc_node(t, "MatMul", "q", "kt", NULL, "sc");
    tc_scalar(t, "sqrt_d", sqrtf((float)d));
    tc_node(t, "Div", "sc", "sqrt_d", NULL, "ss");
    fa_node *sm = tc_node(t, "Softmax", "ss", NULL, NULL, "p");
    fa_node_add_attr_int(t->g, sm, "axis", -1);
    tc_node(t, "MatMul", "p", "v", NULL, "o");
    tc_perm(t, "o", "om", 0, 2, 1, 3);
    tc_node(t, "Reshape", "om", "hidden", NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_ATTENTION, FA_REDUCE_NONE, -1, "attention(bert)");
    return t;
}

/* PyTorch's SDPA decomposition as the Hugging Face BERT / GPT-2 exports write it: q, k, v
 * [2, 2, s, 8], scores scaled, an additive mask [2, 1, s, s] (-inf on every key of query row 1
 * of the second sequence, float32's lowest on the first's last 4 keys), softmax, then
 * Where(IsNaN(p), 0, p): the NaN row 0. */
__attribute__((unused)) static tc *case_attention_sdpa_nan_guard(int s)
{
    tc *t = tc_new(17);
    int64_t dq[4] = {2, 2, s, 8}, dm[4] = {2, 1, s, s};
    tc_input(t, "q", 4, dq);
    tc_input(t, "k", 4, dq);
    tc_input(t, "v", 4, dq);
    float *m = calloc((size_t)(2 * s * s), sizeof *m);
    for (int i = 0; i < s; i++)
        for (int j = s - 4; j < s; j++) m[i * s + j] = -3.4028234663852886e38f;
    for (int j = 0; j < s; j++) m[s * s + 1 * s + j] = -INFINITY;
    tc_const(t, "mask", 4, dm, m);
    free(m);
    tc_perm(t, "k", "kt", 0, 1, 3, 2);
    tc_node(t, "MatMul", "q", "kt", NULL, "sc");
    tc_scalar(t, "scale", 0.35355339f);
    tc_scalar(t, "zero", 0.0f);
    tc_node(t, "Mul", "sc", "scale", NULL, "ss");
    tc_node(t, "Add", "ss", "mask", NULL, "sm");
    fa_node *sm = tc_node(t, "Softmax", "sm", NULL, NULL, "p");
    fa_node_add_attr_int(t->g, sm, "axis", -1);
    tc_node(t, "IsNaN", "p", NULL, NULL, "nan");
    tc_node(t, "Where", "nan", "zero", "p", "pg");
    tc_node(t, "MatMul", "pg", "v", NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_ATTENTION, FA_REDUCE_NONE, -1, "attention(sdpa nan guard)");
    return t;
}

/* LLaMA-style grouped heads and GPT-2's causal mask: q [2, 4, s, 8], k and v [2, 1, s, 8] ->
 * Unsqueeze -> Expand [2, 1, 4, s, 8] -> Reshape [2, 4, s, 8]; scores scaled by a Mul, masked by
 * Where(tril, x, -inf) plus a padding mask [2, 1, 1, s] (float32's lowest on the second
 * sequence's last 5 keys), the row guard Where(rows, 0, p) after the softmax (a fully masked row
 * 0 instead of NaN: query row 1 of the first sequence has its keys masked by the padding). */
__attribute__((unused)) static tc *case_attention_gqa_causal(int s)
{
    tc *t = tc_new(17);
    int64_t dq[4] = {2, 4, s, 8}, dk[4] = {2, 1, s, 8};
    tc_input(t, "q", 4, dq);
    tc_input(t, "k", 4, dk);
    tc_input(t, "v", 4, dk);
    int64_t ax2[1] = {2}, ex[5] = {2, 1, 4, s, 8}, hd[4] = {2, 4, s, 8};
    tc_axes(t, "ax2", 1, ax2);
    tc_axes(t, "ex", 5, ex);
    tc_axes(t, "hd", 4, hd);
    tc_node(t, "Unsqueeze", "k", "ax2", NULL, "ku");
    tc_node(t, "Expand", "ku", "ex", NULL, "ke");
    tc_node(t, "Reshape", "ke", "hd", NULL, "kr");
    tc_node(t, "Unsqueeze", "v", "ax2", NULL, "vu");
    tc_node(t, "Expand", "vu", "ex", NULL, "ve");
    tc_node(t, "Reshape", "ve", "hd", NULL, "vr");
    tc_perm(t, "kr", "kt", 0, 1, 3, 2);
    tc_node(t, "MatMul", "q", "kt", NULL, "sc");
    tc_scalar(t, "scale", 0.35355339f);
    tc_node(t, "Mul", "sc", "scale", NULL, "ss");
    int64_t dm[2] = {s, s}, dp[4] = {2, 1, 1, s}, dr[4] = {2, 1, s, 1};
    unsigned char *tril = malloc((size_t)(s * s)), *rows = calloc((size_t)(2 * s), 1);
    float *pad = malloc(sizeof(float) * (size_t)(2 * s));
    for (int i = 0; i < s; i++)
        for (int j = 0; j < s; j++) tril[i * s + j] = j <= i;
    for (int b = 0; b < 2; b++)
        for (int j = 0; j < s; j++) pad[b * s + j] = (b == 1 && j >= s - 5) || (b == 0 && j < 2) ? -3.4028234663852886e38f : 0.0f;
    rows[0] = rows[1] = 1; /* sequence 0, queries 0 and 1: every key they may see is padded */
    tc_bool(t, "tril", 2, dm, tril);
    tc_const(t, "pad", 4, dp, pad);
    tc_bool(t, "rows", 4, dr, rows);
    free(tril);
    free(rows);
    free(pad);
    tc_scalar(t, "ninf", -INFINITY);
    tc_scalar(t, "zero", 0.0f);
    tc_node(t, "Where", "tril", "ss", "ninf", "sm1");
    tc_node(t, "Add", "sm1", "pad", NULL, "sm2");
    fa_node *sm = tc_node(t, "Softmax", "sm2", NULL, NULL, "p");
    fa_node_add_attr_int(t->g, sm, "axis", -1);
    tc_node(t, "Where", "rows", "zero", "p", "pg");
    tc_node(t, "MatMul", "pg", "vr", NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_ATTENTION, FA_REDUCE_NONE, -1, "attention(gqa, causal)");
    return t;
}

/* The opset-23 Attention op, 3-D ([2, s, 4·8] queries, 2 key/value heads), causal, softcap 4,
 * a float mask over the first s - 3 keys (the rest masked by the op's rule). */
__attribute__((unused)) static tc *case_attention_op(int s)
{
    tc *t = tc_new(23);
    int64_t dq[3] = {2, s, 32}, dk[3] = {2, s, 16}, dm[2] = {s, s - 3};
    tc_input(t, "q", 3, dq);
    tc_input(t, "k", 3, dk);
    tc_input(t, "v", 3, dk);
    float *m = malloc(sizeof(float) * (size_t)(s * (s - 3)));
    for (int i = 0; i < s * (s - 3); i++) m[i] = 0.2f * sinf(0.7f * (float)i);
    tc_const(t, "m", 2, dm, m);
    free(m);
    const char *ins[4] = {"q", "k", "v", "m"}, *outs[1] = {"y"};
    fa_node *n = fa_graph_add_node(t->ctx, t->g, "attention", "Attention", "", 4, ins, 1, outs);
    assert_non_null(n);
    fa_node_add_attr_int(t->g, n, "q_num_heads", 4);
    fa_node_add_attr_int(t->g, n, "kv_num_heads", 2);
    fa_node_add_attr_int(t->g, n, "is_causal", 1);
    fa_node_add_attr_float(t->g, n, "softcap", 4.0f);
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_ATTENTION, FA_REDUCE_NONE, -1, "attention(op)");
    return t;
}

#endif
