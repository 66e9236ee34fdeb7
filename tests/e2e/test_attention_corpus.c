/* tests/e2e/test_attention_corpus — the ONNX conformance models of the opset-23 Attention op
 * (../shared/corpus/onnx/node/test_attention_*: 3-D, 4-D, an additive mask, causal) and their
 * `_expanded` decompositions (the op's function body: Q and Kᵀ each scaled by sqrt(scale), the
 * grouped-heads machinery of Unsqueeze + Expand + Reshape, casts around the softmax, the bias,
 * the row guard Where after it): each is one attention cluster holding every live node, and its
 * generated kernel is verified against the unfused ops within the rounding-error bound.
 * Skipped (exit 77) when the corpus is absent; the fp16 model is left out (kernels are float32). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor/advisor.h"
#include "applier/applier.h"
#include "testutil.h"

static void check_model(const char *test)
{
    fa_ctx *ctx = fa_ctx_create();
    char path[1024];
    snprintf(path, sizeof path, "%s/onnx/node/%s/model.onnx", fa_test_corpus(), test);
    fa_graph *g = NULL;
    if (fa_graph_load(ctx, path, NULL, &g)) fail_msg("%s: %s", test, fa_ctx_errmsg(ctx));
    fa_advise_options ao = fa_advise_options_default();
    ao.no_gate = true;
    fa_plan *p = NULL;
    if (fa_advise(ctx, g, NULL, &ao, &p)) fail_msg("%s: advise: %s", test, fa_ctx_errmsg(ctx));
    fa_cluster *c = NULL;
    for (int i = 0; i < p->n_clusters; i++)
        if (p->clusters[i].kind == FA_CLUSTER_ATTENTION) {
            assert_null(c);
            c = &p->clusters[i];
        }
    if (!c) fail_msg("%s: no attention cluster", test);
    printf("%s: %s, %d of %d live nodes\n", test, c->label, c->n_members, g->n_topo);
    /* every product, the softmax (or the op) and the graph output's producer are inside; what is
     * left outside computes the mask from the attn_mask input (its bias and row guard) */
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        bool core = !strcmp(n->op_type, "MatMul") || !strcmp(n->op_type, "Softmax") || !strcmp(n->op_type, "Attention");
        for (int o = 0; o < n->n_outputs; o++) core |= n->outputs[o] == g->outputs[0];
        bool in = false;
        for (int m = 0; m < c->n_members; m++) in |= c->members[m] == n->id;
        if (!in) printf("  outside: %s (%s)\n", n->name, n->op_type);
        if (core) assert_true(in);
    }
    if (c->n_members == 1 && c->status == FA_CLUSTER_REFUSED) {
        /* the op alone, planned without a profile: no saving the analytic estimate can see (the
         * kernel replaces the op's); the verification is what this tests */
        assert_int_equal(c->refusal, FA_WHY_NOT_BENEFICIAL);
        c->status = FA_CLUSTER_PROPOSED;
    }
    assert_int_equal(c->status, FA_CLUSTER_PROPOSED);
    fa_apply_options opt;
    fa_apply_options_default(&opt);
    opt.iters = 3;
    opt.warmup = 1;
    opt.threads = 2;
    opt.cache_dir = fa_test_path(fa_test_tmpdir(), "kcache");
    fa_apply_result *r = NULL;
    if (fa_apply(ctx, g, p, &opt, &r)) fail_msg("%s: apply: %s", test, fa_ctx_errmsg(ctx));
    const fa_cluster_verdict *v = &r->verdicts[c->id];
    printf("  %s (relative error %.2g): %s\n", fa_cluster_status_name(v->status), v->max_rel_error, v->reason);
    assert_true(v->status == FA_CLUSTER_ACCEPTED || v->status == FA_CLUSTER_REJECTED_NO_GAIN ||
                v->status == FA_CLUSTER_REJECTED_REGRESSION);
    if (!strstr(v->reason, "end-to-end back-off")) assert_non_null(strstr(v->reason, "within the rounding-error bound"));
    fa_apply_result_free(r);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void test_attention_op_models(void **s)
{
    (void)s;
    check_model("test_attention_4d");
    check_model("test_attention_3d");
    check_model("test_attention_4d_attn_mask");
    check_model("test_attention_4d_causal");
}

static void test_attention_expanded_models(void **s)
{
    (void)s;
    check_model("test_attention_4d_expanded");
    check_model("test_attention_4d_attn_mask_expanded");
    check_model("test_attention_4d_causal_expanded");
}

int main(void)
{
    fa_test_require_corpus();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention_op_models),
        cmocka_unit_test(test_attention_expanded_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
