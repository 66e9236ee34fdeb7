/* bench/bench_graph_depth — writes a synthetic model of N layers as ONNX, the input of
 * bench_graph_depth.sh (graph.svg's time against depth). X[1,64] -> mask = Sigmoid(X); each
 * layer: Relu -> Tanh -> Relu of the running tensor, Neg of the mask, Add of both. The mask is
 * read by every layer, as a transformer's attention mask is: the shape that made graph.svg's
 * layout quadratic in depth (docs/reports.md "Large graphs").
 * usage: bench_graph_depth PATH N */
#include <stdio.h>
#include <stdlib.h>

#include "graph/graph.h"

static fa_graph *deep(fa_ctx *ctx, int n)
{
    fa_graph *g = fa_graph_create("deep");
    if (!g || fa_graph_set_opset(ctx, g, "", 13)) goto fail;
    static const int64_t dims[2] = {1, 64};
    int x = fa_graph_tensor(g, "X");
    if (x < 0) goto fail;
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 2, dims);
    if (fa_graph_add_input(ctx, g, x)) goto fail;
    {
        const char *in[] = {"X"}, *out[] = {"mask"};
        if (!fa_graph_add_node(ctx, g, "mask", "Sigmoid", "", 1, in, 1, out)) goto fail;
    }
    char h[32] = "X", a[32], b[32], c[32], m[32], nm[32], next[32];
    for (int k = 0; k < n; k++) {
        snprintf(a, sizeof a, "a%d", k);
        snprintf(b, sizeof b, "b%d", k);
        snprintf(c, sizeof c, "c%d", k);
        snprintf(m, sizeof m, "m%d", k);
        snprintf(next, sizeof next, k == n - 1 ? "Y" : "h%d", k + 1);
        const char *ih[] = {h}, *oa[] = {a}, *ia[] = {a}, *ob[] = {b}, *ib[] = {b}, *oc[] = {c};
        const char *im[] = {"mask"}, *om[] = {m}, *iadd[] = {c, m}, *on[] = {next};
        snprintf(nm, sizeof nm, "l%d/relu_a", k);
        if (!fa_graph_add_node(ctx, g, nm, "Relu", "", 1, ih, 1, oa)) goto fail;
        snprintf(nm, sizeof nm, "l%d/tanh", k);
        if (!fa_graph_add_node(ctx, g, nm, "Tanh", "", 1, ia, 1, ob)) goto fail;
        snprintf(nm, sizeof nm, "l%d/relu_c", k);
        if (!fa_graph_add_node(ctx, g, nm, "Relu", "", 1, ib, 1, oc)) goto fail;
        snprintf(nm, sizeof nm, "l%d/neg", k);
        if (!fa_graph_add_node(ctx, g, nm, "Neg", "", 1, im, 1, om)) goto fail;
        snprintf(nm, sizeof nm, "l%d/add", k);
        if (!fa_graph_add_node(ctx, g, nm, "Add", "", 2, iadd, 1, on)) goto fail;
        snprintf(h, sizeof h, "%s", next);
    }
    if (fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "Y"))) goto fail;
    fa_load_options lo = {0};
    if (fa_graph_prepare(ctx, g, &lo)) goto fail;
    return g;
fail:
    fa_graph_free(g);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc == 3 ? atoi(argv[2]) : 0;
    if (n < 1 || n > 100000) {
        fprintf(stderr, "usage: bench_graph_depth PATH N (1 <= N <= 100000)\n");
        return 2;
    }
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = deep(ctx, n);
    int rc = 0;
    if (!g || fa_onnx_export(ctx, g, argv[1])) {
        fprintf(stderr, "bench_graph_depth: %s\n", fa_ctx_errmsg(ctx));
        rc = 1;
    }
    fa_graph_free(g);
    fa_ctx_free(ctx);
    return rc;
}
