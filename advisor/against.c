/* advisor/against — a plan estimated for a GPU from its data sheet set beside a trace of the
 * model measured on that GPU (issue 40): each cluster member matched to the trace's cpu op by
 * its op's kind and its inputs' element counts, never guessed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor/advisor-impl.h"
#include "trace/trace.h"

/* The trace's op key (trace/classify.c's alphabet) of an ONNX op type; -1 for ops no eager
 * PyTorch op corresponds to one for one (views, shape ops). */
static int onnx_key(const char *op_type)
{
    static const struct { const char *onnx, *key; } tab[] = {
        {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}, {"Neg", "neg"}, {"Pow", "pow"},
        {"Sqrt", "sqrt"}, {"Exp", "exp"}, {"Log", "log"}, {"Tanh", "tanh"}, {"Erf", "erf"},
        {"Sigmoid", "sigmoid"}, {"Relu", "relu"}, {"Gelu", "gelu"}, {"FastGelu", "gelu"}, {"Where", "where"},
        {"ReduceMean", "mean"}, {"ReduceSum", "sum"}, {"ReduceMax", "amax"}, {"Softmax", "softmax"},
        {"LogSoftmax", "softmax"}, {"LayerNormalization", "layer_norm"}, {"RMSNormalization", "rms_norm"},
        {"SimplifiedLayerNormalization", "rms_norm"}, {"MatMul", "gemm"}, {"Gemm", "gemm"}, {"Conv", "conv"},
        {"Clip", "clamp"}, {"Cast", "copy"}, {"Concat", "cat"}, {"Gather", "index"},
        {"BatchNormalization", "batch_norm"}, {"Dropout", "dropout"}};
    for (size_t i = 0; op_type && i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(tab[i].onnx, op_type)) return fa_ta_key_parse(tab[i].key, strlen(tab[i].key));
    return -1;
}

/* The key of a cluster's whole function (or its epilogue's) when PyTorch runs it as one op: a
 * layer norm, RMS norm or softmax reduction, a GELU chain or a GELU epilogue (the advisor's own
 * finding, fa_adv_cluster_computes_gelu); -1 otherwise. A norm holding its residual Add
 * (add+layer_norm / add+rms_norm): PyTorch runs the norm as one op and the Add as aten::add, which
 * the member match pairs on its own. */
static int cluster_key(const fa_graph *g, const fa_cluster *c)
{
    const char *k = NULL;
    if (c->kind == FA_CLUSTER_REDUCTION)
        k = c->reduction == FA_REDUCE_LAYER_NORM ? "layer_norm"
          : c->reduction == FA_REDUCE_RMS_NORM ? "rms_norm"
          : c->reduction == FA_REDUCE_SOFTMAX || c->reduction == FA_REDUCE_LOG_SOFTMAX ? "softmax" : NULL;
    else if (fa_adv_cluster_computes_gelu(g, c))
        k = "gelu";
    return k ? fa_ta_key_parse(k, strlen(k)) : -1;
}

enum { MAX_IN = 8 };

/* One (cpu op, input shapes) of the trace: its kernels' time and calls. */
typedef struct op_group {
    const char *op, *shapes;
    int key;
    int n_numel;
    double numel[MAX_IN];      /* of each tensor input, "float:8x512x768" -> 3145728; scalars 1 */
    double total_ns;
    int64_t calls;             /* the most launches of any one of its kernels */
} op_group;

/* Element counts of the trace's shape text ("TYPE:DIMS;TYPE:DIMS", DIMS "8x512x768", empty for
 * a 0-d tensor, "L<numel>" a list, "?" unknown) into g; false when a tensor's size is unknown. */
static bool parse_shapes(const char *s, op_group *g)
{
    g->n_numel = 0;
    for (const char *p = s; p && *p && g->n_numel < MAX_IN;) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *colon = NULL;
        for (const char *q = p; q < p + len; q++)
            if (*q == ':') colon = q;
        if (colon) {
            const char *d = colon + 1, *de = p + len;
            if (d < de && (*d == '?' || *d == 'L')) return false;
            double n = 1;
            while (d < de && *d != '@') {
                char *e;
                double v = strtod(d, &e);
                if (e == d) return false;
                n *= v;
                d = e;
                if (d < de && *d == 'x') d++;
            }
            g->numel[g->n_numel++] = n;
        }
        p = end ? end + 1 : NULL;
    }
    return true;
}

/* Does group gr hold every non-scalar input of node n by element count (each input its own)? */
static bool inputs_fit(const fa_graph *g, const fa_node *n, const op_group *gr)
{
    bool used[MAX_IN] = {0};
    int want = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0) continue;
        int64_t ne = fa_tensor_numel(g->tensors[n->inputs[i]]);
        if (ne < 0) return false;
        if (ne <= 1) continue;
        want++;
        bool found = false;
        for (int k = 0; k < gr->n_numel && !found; k++)
            if (!used[k] && gr->numel[k] == (double)ne) used[k] = found = true;
        if (!found) return false;
    }
    return want > 0;
}

/* The trace's op groups from its roofline points (one per kernel and op shapes). */
static int op_groups(const fa_trace_advice *ta, op_group *out)
{
    int n = 0;
    for (int i = 0; i < ta->n_points; i++) {
        const fa_ta_point *pt = &ta->points[i];
        if (!pt->op || !pt->shapes) continue;
        int k = 0;
        while (k < n && (strcmp(out[k].op, pt->op) || strcmp(out[k].shapes, pt->shapes))) k++;
        if (k == n) {
            memset(&out[n], 0, sizeof out[n]);
            out[n].op = pt->op;
            out[n].shapes = pt->shapes;
            out[n].key = fa_ta_key_of_op(pt->op);
            if (out[n].key < 0 || !parse_shapes(pt->shapes, &out[n])) continue;
            n++;
        }
        out[k].total_ns += (double)pt->total_ns;
        if (pt->count > out[k].calls) out[k].calls = pt->count;
    }
    return n;
}

/* The one group of key `key` holding node n's inputs: its index, -1 none, -2 several. */
static int find_group(const fa_graph *g, const fa_node *n, int key, const op_group *gr, int ng, int *n_fit)
{
    int hit = -1;
    *n_fit = 0;
    for (int k = 0; k < ng; k++)
        if (gr[k].key == key && gr[k].calls > 0 && inputs_fit(g, n, &gr[k])) {
            (*n_fit)++;
            hit = k;
        }
    return *n_fit > 1 ? -2 : hit;
}

/* The one group of key `key` with an input of `numel` elements: its index, -1 none, -2 several. */
static int find_group_numel(double numel, int key, const op_group *gr, int ng)
{
    int hit = -1, n = 0;
    for (int k = 0; k < ng; k++) {
        if (gr[k].key != key || gr[k].calls <= 0) continue;
        bool has = false;
        for (int i = 0; i < gr[k].n_numel; i++) has |= gr[k].numel[i] == numel;
        if (has) {
            n++;
            hit = k;
        }
    }
    return n > 1 ? -2 : hit;
}

fa_status fa_plan_against_trace(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const fa_gpu_plan_dev *dev,
                                const fa_trace_advice *ta, int64_t trace_run, fa_arena *ar, fa_against *out)
{
    memset(out, 0, sizeof *out);
    out->trace_run = trace_run;
    out->ratio = NAN;
    if (!p->estimated || !dev)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "the plan is not estimated from a GPU's data sheet: a trace is set "
                            "beside a plan made with --target cuda on a run of another device or on a model");
    out->trace_device = ta->device_name;
    out->trace_part = ta->roofs.label;
    out->plan_part = dev->roofs.label;
    out->plan_arch = dev->roofs.arch;
    out->n_clusters = p->n_clusters;
    out->clusters = fa_arena_alloc(ar, sizeof(fa_against_cluster) * (size_t)(p->n_clusters + 1));
    op_group *gr = malloc(sizeof(op_group) * (size_t)(ta->n_points + 1));
    if (!out->clusters || !gr) {
        free(gr);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory setting the plan beside trace %lld", (long long)trace_run);
    }
    char buf[600];
    out->compared = ta->roofs.label && dev->roofs.label && !strcmp(ta->roofs.label, dev->roofs.label);
    if (!out->compared) {
        if (ta->roofs.label)
            snprintf(buf, sizeof buf, "trace %lld ran on %s (%s, %s) and this plan is estimated for %s (%s): not "
                     "compared (plan with --arch '%s' to set it beside this trace)", (long long)trace_run,
                     ta->device_name ? ta->device_name : "?", ta->roofs.label, ta->arch ? ta->arch : "arch unknown",
                     dev->roofs.label, dev->roofs.arch, ta->roofs.label);
        else
            snprintf(buf, sizeof buf, "trace %lld ran on %s, which the device table does not know, and this plan is "
                     "estimated for %s (%s): not compared", (long long)trace_run,
                     ta->device_name ? ta->device_name : "an unnamed device", dev->roofs.label, dev->roofs.arch);
        out->why = fa_arena_strdup(ar, buf);
    }
    int ng = out->compared ? op_groups(ta, gr) : 0;
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        fa_against_cluster *ac = &out->clusters[i];
        ac->cluster = i;
        ac->n_members = c->n_members;
        ac->members = fa_arena_alloc(ar, sizeof(fa_against_member) * (size_t)(c->n_members + 1));
        if (!ac->members || !c->member_est_ns) {
            free(gr);
            return ac->members ? fa_ctx_error(ctx, FA_ERR_INPUT, "cluster %d has no estimated member times", c->id)
                               : fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory setting the plan beside a trace");
        }
        for (int m = 0; m < c->n_members; m++) {
            const fa_node *n = g->nodes[c->members[m]];
            fa_against_member *am = &ac->members[m];
            am->node = c->members[m];
            am->est_ns = c->member_est_ns[m];
            am->measured_ns = NAN;
            if (am->est_ns <= 0) {
                am->why = "no kernel on the GPU (a view)";
                continue;
            }
            ac->n_kernels++;
            if (!out->compared) {
                am->why = "not compared";
                continue;
            }
            int key = onnx_key(n->op_type), fit = 0;
            int k = key < 0 ? -1 : find_group(g, n, key, gr, ng, &fit);
            if (k < 0) {
                if (key < 0)
                    snprintf(buf, sizeof buf, "no PyTorch op is a %s one for one", n->op_type);
                else if (k == -2)
                    snprintf(buf, sizeof buf, "%d of the trace's %s ops fit its input sizes: not paired", fit,
                             fa_ta_key_name(key));
                else
                    snprintf(buf, sizeof buf, "no %s op with inputs of its sizes", fa_ta_key_name(key));
                am->why = fa_arena_strdup(ar, buf);
                continue;
            }
            am->op = gr[k].op;
            am->shapes = gr[k].shapes;
            am->calls = gr[k].calls;
            am->measured_ns = gr[k].total_ns / (double)gr[k].calls;
            ac->n_matched++;
            ac->est_ns += am->est_ns;
            ac->measured_ns += am->measured_ns;
        }
        /* a function PyTorch runs as one op (layer norm, softmax, GELU): elementwise on its rows, so
         * the op reads a tensor of the cluster's output size */
        int ck = out->compared ? cluster_key(g, c) : -1;
        int64_t on = c->n_outputs ? fa_tensor_numel(g->tensors[c->outputs[0]]) : -1;
        int k = ck >= 0 && on > 1 ? find_group_numel((double)on, ck, gr, ng) : -1;
        if (k >= 0) {
            ac->one_op = gr[k].op;
            ac->one_op_calls = gr[k].calls;
            ac->one_op_ns = gr[k].total_ns / (double)gr[k].calls;
            ac->residual_apart = c->kind == FA_CLUSTER_REDUCTION && fa_adv_residual_add_in(g, c->members, c->n_members);
        }
        out->n_kernels += ac->n_kernels;
        out->n_matched += ac->n_matched;
        out->n_explained += ac->one_op ? ac->n_kernels : ac->n_matched;
        out->est_ns += ac->est_ns;
        out->measured_ns += ac->measured_ns;
    }
    free(gr);
    if (out->compared && 2 * out->n_explained < out->n_kernels) {
        out->few = true;
        snprintf(buf, sizeof buf, "only %d of the plan's %d member kernels match an op of trace %lld (%d in clusters the "
                 "trace ran as one op): is it a trace of this model with the same shapes? No overall ratio",
                 out->n_matched, out->n_kernels, (long long)trace_run, out->n_explained - out->n_matched);
        out->why = fa_arena_strdup(ar, buf);
    }
    if (out->compared && !out->few && out->est_ns > 0) out->ratio = out->measured_ns / out->est_ns;
    return FA_OK;
}
