/* tests/unit/test_advisor — plans for the zoo and corpus models: ResNet-50 gets BN folding,
 * Conv+BN+ReLU epilogues and residual Add+ReLU; bert-layer and gpt2-block get softmax, layer norm
 * (op and decomposed), GELU (erf and tanh forms) and bias-add epilogues; every corpus light model
 * and zoo model gets a plan; the plan round-trips through the store and the advise verb. */
#include <dirent.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor/advisor.h"
#include "store/store-impl.h" /* white-box: the raw connection (fa_store_db) */
#include "testutil.h"

static fa_plan *plan_for(fa_ctx *ctx, fa_graph **gout, const char *model)
{
    fa_graph *g = NULL;
    fa_status s = fa_graph_load(ctx, model, NULL, &g);
    if (s) fail_msg("%s: %s", model, fa_ctx_errmsg(ctx));
    fa_advise_options o = fa_advise_options_default();
    fa_plan *p = NULL;
    s = fa_advise(ctx, g, NULL, &o, &p);
    if (s) fail_msg("%s: %s", model, fa_ctx_errmsg(ctx));
    *gout = g;
    return p;
}

static int count_label(const fa_plan *p, fa_cluster_kind kind, const char *label_part)
{
    int n = 0;
    for (int i = 0; i < p->n_clusters; i++)
        if (p->clusters[i].kind == kind && strstr(p->clusters[i].label, label_part)) n++;
    return n;
}

static bool has_post(const fa_cluster *c, const char *spec)
{
    for (int k = 0; k < c->n_post_ops; k++) {
        char r[64];
        fa_post_op_format(&c->post_ops[k], r, sizeof r);
        if (!strcmp(r, spec)) return true;
    }
    return false;
}

static bool member_op(const fa_graph *g, const fa_cluster *c, const char *op)
{
    for (int k = 0; k < c->n_members; k++)
        if (!strcmp(g->nodes[c->members[k]]->op_type, op)) return true;
    return false;
}

/* ResNet-50: 53 Conv+BN folds; conv+bn+relu epilogues; residual Add+ReLU as the ADD + RELU post-ops
 * post-ops after a BN fold (depends_on set). */
static void test_resnet50_plan_has_bn_fold_conv_relu_and_residual_add_relu(void **st)
{
    (void)st;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g;
    fa_plan *p = plan_for(ctx, &g, "zoo:resnet50");
    int bn = 0, conv_relu = 0, resid = 0;
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        if (c->kind == FA_CLUSTER_BN_FOLD) {
            bn++;
            assert_int_equal(c->n_members, 2);
            assert_string_equal(g->nodes[c->anchor]->op_type, "Conv");
            assert_string_equal(g->nodes[c->members[1]]->op_type, "BatchNormalization");
            assert_true(c->saved_bytes > 0);
        }
        if (c->kind == FA_CLUSTER_EPILOGUE && c->n_post_ops == 1 && has_post(c, "relu")) {
            conv_relu++;
            assert_true(c->depends_on >= 0);
            assert_int_equal(p->clusters[c->depends_on].kind, FA_CLUSTER_BN_FOLD);
            assert_int_equal(p->clusters[c->depends_on].anchor, c->anchor);
        }
        if (c->kind == FA_CLUSTER_EPILOGUE && c->n_post_ops == 2 && c->post_ops[0].kind == FA_POST_OP_ADD &&
            c->post_ops[1].kind == FA_POST_OP_RELU) {
            resid++;
            assert_true(c->post_ops[0].operand >= 0);
            assert_int_equal(c->post_ops[1].operand, -1);
            assert_true(member_op(g, c, "Add") && member_op(g, c, "Relu"));
        }
    }
    assert_int_equal(bn, 53);
    assert_true(conv_relu >= 32); /* 16 blocks x 2 inner convs + the stem */
    assert_int_equal(resid, 16);  /* every bottleneck's residual Add+ReLU */
    /* ranked by estimated saving */
    for (int i = 1; i < p->n_clusters; i++) assert_true(p->clusters[i - 1].est_saving_ns >= p->clusters[i].est_saving_ns);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void check_transformer(const char *model, const char *gelu, bool named_ln)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g;
    fa_plan *p = plan_for(ctx, &g, model);
    assert_int_equal(count_label(p, FA_CLUSTER_REDUCTION, "layer_norm(decomposed)"), 1);
    if (named_ln) assert_true(count_label(p, FA_CLUSTER_REDUCTION, "layer_norm") >= 2);
    int gelu_ep = 0, bias = 0, ln = 0, sm = 0;
    char want[48];
    snprintf(want, sizeof want, "%s", gelu);
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        if (c->kind == FA_CLUSTER_EPILOGUE && has_post(c, want)) gelu_ep++;
        if (c->kind == FA_CLUSTER_EPILOGUE && c->n_post_ops >= 1 && c->post_ops[0].kind == FA_POST_OP_ADD) {
            const fa_tensor *b = g->tensors[c->post_ops[0].operand];
            if ((b->flags & FA_TENSOR_CONST) && b->rank == 1) bias++;
        }
        if (c->kind == FA_CLUSTER_REDUCTION && c->reduction == FA_REDUCE_LAYER_NORM) {
            ln++;
            assert_int_equal(c->reduce_axis, 2);
            assert_true(c->epsilon > 0 && c->epsilon < 1e-3f);
        }
        if (c->kind == FA_CLUSTER_ATTENTION) { /* the softmax with its scale, mask and both products */
            sm++;
            assert_string_equal(g->nodes[c->anchor]->op_type, "Softmax");
            assert_true(member_op(g, c, "MatMul") && member_op(g, c, "Softmax") && member_op(g, c, "Transpose"));
            assert_true(c->score_bytes >= 2u * 12 * 128 * 128 * 4); /* scores in and probabilities out, 12 heads */
            assert_int_equal(c->n_outputs, 1);
        }
        assert_false(c->kind == FA_CLUSTER_REDUCTION && c->reduction == FA_REDUCE_SOFTMAX); /* inside the attention */
        assert_int_equal(c->status, FA_CLUSTER_PROPOSED);
    }
    assert_int_equal(gelu_ep, 1);
    assert_true(bias >= 4);
    assert_true(ln >= 1 && sm == 1);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void test_bert_plan_has_attention_layer_norms_gelu_erf_and_bias_epilogues(void **st)
{
    (void)st;
    check_transformer("zoo:bert-layer", "gelu_erf", true);
}

static void test_gpt2_plan_has_causal_attention_decomposed_layer_norm_gelu_tanh_and_bias_epilogues(void **st)
{
    (void)st;
    check_transformer("zoo:gpt2-block", "gelu_tanh", false);
}

/* Every zoo model and every corpus light model gets a plan; every why-not names a live edge
 * (or a graph input) with a code and a sentence; members are live nodes in topological order. */
static void check_plan_sane(const fa_graph *g, const fa_plan *p)
{
    int *pos = malloc(sizeof(int) * (size_t)g->n_nodes);
    for (int i = 0; i < g->n_nodes; i++) pos[i] = -1;
    for (int i = 0; i < g->n_topo; i++) pos[g->topo[i]] = i;
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        assert_true(c->n_members >= 2);
        assert_non_null(c->label);
        for (int k = 0; k < c->n_members; k++) {
            assert_true(pos[c->members[k]] >= 0);
            if (k && c->kind != FA_CLUSTER_HORIZONTAL) assert_true(pos[c->members[k]] > pos[c->members[k - 1]]);
        }
        assert_true(c->n_members <= p->opt.max_ops + 1);
    }
    for (int i = 0; i < p->n_why_not; i++) {
        assert_true(p->why_not[i].code > FA_WHY_NONE && p->why_not[i].code < FA_WHY_CODE_COUNT);
        assert_true(p->why_not[i].code != FA_WHY_NOT_A_POST_OP); /* never recorded */
        assert_true(strlen(p->why_not[i].reason) > 10);
    }
    /* every live producer->consumer edge not inside one proposed cluster group has a why-not */
    int *root = malloc(sizeof(int) * (size_t)(p->n_clusters + 1));
    for (int i = 0; i < p->n_clusters; i++) {
        int r = i;
        while (p->clusters[r].depends_on >= 0) r = p->clusters[r].depends_on;
        root[i] = p->clusters[i].status == FA_CLUSTER_REFUSED ? -2 - i : r;
    }
    for (int q = 0; q < g->n_topo; q++) {
        const fa_node *cn = g->nodes[g->topo[q]];
        for (int k = 0; k < cn->n_inputs; k++) {
            int t = cn->inputs[k];
            if (t < 0 || g->tensors[t]->producer < 0 || pos[g->tensors[t]->producer] < 0) continue;
            int pid = g->tensors[t]->producer;
            bool together = false;
            for (int i = 0; i < p->n_clusters && !together; i++)
                for (int j = 0; j < p->n_clusters && !together; j++) {
                    if (root[i] != root[j]) continue;
                    bool hp = false, hc = false;
                    for (int m = 0; m < p->clusters[i].n_members; m++) hp |= p->clusters[i].members[m] == pid;
                    for (int m = 0; m < p->clusters[j].n_members; m++) hc |= p->clusters[j].members[m] == cn->id;
                    together = hp && hc;
                }
            if (together) continue;
            bool has = false;
            for (int i = 0; i < p->n_why_not && !has; i++)
                has = p->why_not[i].producer == pid && p->why_not[i].consumer == cn->id && p->why_not[i].tensor == t;
            if (!has) fail_msg("%s: edge %s -> %s (%s) has no why-not", g->name, g->nodes[pid]->name, cn->name,
                               g->tensors[t]->name);
        }
    }
    free(root);
    free(pos);
}

static void test_every_zoo_model_gets_a_plan(void **st)
{
    (void)st;
    fa_ctx *ctx = fa_ctx_create();
    for (int i = 0; i < fa_zoo_count(); i++) {
        char m[64];
        snprintf(m, sizeof m, "zoo:%s", fa_zoo_at(i)->name);
        fa_graph *g;
        fa_plan *p = plan_for(ctx, &g, m);
        check_plan_sane(g, p);
        assert_true(p->n_clusters > 0);
        assert_int_equal(strlen(p->hash), 64);
        fa_plan_free(p);
        fa_graph_free(g);
    }
    fa_ctx_free(ctx);
}

static void test_every_corpus_light_model_gets_a_plan(void **st)
{
    (void)st;
    fa_test_require_corpus();
    fa_ctx *ctx = fa_ctx_create();
    const char *dir = fa_test_path(fa_test_corpus(), "onnx/light");
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t L = strlen(e->d_name);
        if (L < 5 || strcmp(e->d_name + L - 5, ".onnx")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        fa_graph *g;
        fa_plan *p = plan_for(ctx, &g, path);
        check_plan_sane(g, p);
        assert_true(p->n_clusters > 0);
        if (strstr(e->d_name, "resnet50")) {
            /* the corpus ResNet-50 (opset 9) writes its residual add as a two-input Sum */
            int bn = 0, resid = 0;
            for (int i = 0; i < p->n_clusters; i++) {
                const fa_cluster *c = &p->clusters[i];
                bn += c->kind == FA_CLUSTER_BN_FOLD;
                resid += c->kind == FA_CLUSTER_EPILOGUE && c->n_post_ops == 2 && c->post_ops[0].kind == FA_POST_OP_ADD &&
                         c->post_ops[1].kind == FA_POST_OP_RELU && c->depends_on >= 0;
            }
            assert_int_equal(bn, 53);
            assert_int_equal(resid, 16);
        }
        n++;
        fa_plan_free(p);
        fa_graph_free(g);
    }
    closedir(d);
    assert_true(n >= 5);
    fa_ctx_free(ctx);
}

/* The corpus *_expanded conformance models: layer norm (Flatten + E[x²]−E[x]² form), RMS norm,
 * softmax, log-softmax over the last axis, and both GELU forms are recognised; the epsilon equals
 * the attribute of the same test's non-expanded op. Softmax over a non-last axis (opset 13+) is
 * not a trailing-axes domain and gets no softmax cluster. */
static void test_corpus_expanded_reductions_and_gelu_recognised_with_op_epsilon(void **st)
{
    (void)st;
    fa_test_require_corpus();
    fa_ctx *ctx = fa_ctx_create();
    const char *dir = fa_test_path(fa_test_corpus(), "onnx/node");
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int n_ln = 0, n_rms = 0, n_sm = 0, n_lsm = 0, n_gelu = 0, n_not = 0;
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        if (!strstr(nm, "_expanded")) continue;
        const char *label = NULL, *op = NULL;
        fa_reduce_kind rk = FA_REDUCE_NONE;
        if (!strncmp(nm, "test_layer_normalization_", 25)) { label = "layer_norm(decomposed)"; op = "LayerNormalization"; rk = FA_REDUCE_LAYER_NORM; }
        else if (!strncmp(nm, "test_rms_normalization_", 23)) { label = "rms_norm(decomposed)"; op = "RMSNormalization"; rk = FA_REDUCE_RMS_NORM; }
        else if (!strncmp(nm, "test_softmax_", 13)) { label = "softmax(decomposed)"; rk = FA_REDUCE_SOFTMAX; }
        else if (!strncmp(nm, "test_logsoftmax_", 16)) { label = "log_softmax(decomposed)"; rk = FA_REDUCE_LOG_SOFTMAX; }
        else if (!strncmp(nm, "test_gelu_tanh", 14)) label = "gelu_tanh";
        else if (!strncmp(nm, "test_gelu_default", 17)) label = "gelu_erf";
        else continue;
        bool non_last = strstr(nm, "softmax_axis_0") || strstr(nm, "softmax_axis_1");
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/model.onnx", dir, nm);
        fa_graph *g;
        fa_plan *p = plan_for(ctx, &g, path);
        const fa_cluster *hit = NULL;
        for (int i = 0; i < p->n_clusters; i++)
            if (!strcmp(p->clusters[i].label, label)) hit = &p->clusters[i];
        if (non_last) {
            assert_null(hit);
            n_not++;
        } else {
            if (!hit) fail_msg("%s: no '%s' cluster", nm, label);
            if (rk != FA_REDUCE_NONE) {
                assert_int_equal(hit->kind, FA_CLUSTER_REDUCTION);
                assert_int_equal(hit->reduction, rk);
            }
            if (op) {
                /* the same test without _expanded holds the op with its epsilon */
                char base[512];
                size_t L = (size_t)(strstr(nm, "_expanded") - nm);
                snprintf(base, sizeof base, "%s/%.*s/model.onnx", dir, (int)L, nm);
                fa_graph *o = NULL;
                assert_int_equal(fa_onnx_import(ctx, base, &o), FA_OK);
                float eps = -1;
                for (int k = 0; k < o->n_nodes; k++)
                    if (!strcmp(o->nodes[k]->op_type, op)) eps = fa_node_attr_float(o->nodes[k], "epsilon", 1e-5f);
                fa_graph_free(o);
                if (!(fabsf(hit->epsilon - eps) <= 1e-6f * fmaxf(1.0f, eps) + 1e-9f))
                    fail_msg("%s: epsilon %g, op says %g", nm, hit->epsilon, eps);
                if (rk == FA_REDUCE_LAYER_NORM) n_ln++; else n_rms++;
            } else if (rk == FA_REDUCE_SOFTMAX) n_sm++;
            else if (rk == FA_REDUCE_LOG_SOFTMAX) n_lsm++;
            else n_gelu++;
        }
        fa_plan_free(p);
        fa_graph_free(g);
    }
    closedir(d);
    assert_true(n_ln >= 30 && n_rms >= 4 && n_sm >= 8 && n_lsm >= 4 && n_gelu >= 4 && n_not >= 4);
    fa_ctx_free(ctx);
}

/* cuda target: the gate compiles the reduction clusters with NVRTC (no GPU needed) and reads
 * registers/occupancy; a floor above the softmax kernel's occupancy refuses it with the numbers,
 * and the edges inside it get the occupancy-gate why-not. --no-gate leaves registers at -1. */
static void test_cuda_gate_refuses_under_occupancy_floor_with_numbers(void **st)
{
    (void)st;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_graph_load(ctx, "zoo:gpt2-block", NULL, &g), FA_OK);
    fa_advise_options o = fa_advise_options_default();
    o.target = FA_TARGET_CUDA;
    o.no_gate = true;
    fa_plan *p = NULL;
    assert_int_equal(fa_advise(ctx, g, NULL, &o, &p), FA_OK);
    for (int i = 0; i < p->n_clusters; i++) assert_int_equal(p->clusters[i].registers, -1);
    fa_plan_free(p);
    o.no_gate = false;
    o.occupancy_floor = 0.01;
    assert_int_equal(fa_advise(ctx, g, NULL, &o, &p), FA_OK);
    double lowest = 2;
    int gated = 0;
    char label[128] = "";
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        if (c->reason && strstr(c->reason, "gate not run")) {
            fa_plan_free(p);
            fa_graph_free(g);
            fa_ctx_free(ctx);
            skip(); /* no CUDA toolkit in this build */
        }
        if (c->registers > 0) {
            gated++;
            assert_true(c->occupancy > 0 && c->occupancy <= 1.0);
            assert_true(c->block_size > 0);
            /* the attention kernel's occupancy is recorded, not gated (compute-bound: advisor/gate.c) */
            if (c->kind != FA_CLUSTER_ATTENTION && c->occupancy < lowest) {
                lowest = c->occupancy;
                snprintf(label, sizeof label, "%s", c->label);
            }
        }
        assert_int_equal(c->status, FA_CLUSTER_PROPOSED);
    }
    assert_true(gated >= 2); /* the softmax and layer-norm reductions */
    fa_plan_free(p);
    if (lowest >= 1.0) { /* every generated kernel reaches full occupancy: nothing to refuse */
        fa_graph_free(g);
        fa_ctx_free(ctx);
        skip();
    }
    o.occupancy_floor = lowest + 0.001;
    assert_int_equal(fa_advise(ctx, g, NULL, &o, &p), FA_OK);
    const fa_cluster *sm = NULL;
    for (int i = 0; i < p->n_clusters; i++)
        if (!strcmp(p->clusters[i].label, label)) sm = &p->clusters[i];
    assert_non_null(sm);
    assert_int_equal(sm->status, FA_CLUSTER_REFUSED);
    assert_non_null(strstr(sm->reason, "occupancy gate"));
    bool found = false;
    for (int i = 0; i < p->n_why_not; i++)
        if (p->why_not[i].code == FA_WHY_OCCUPANCY_GATE && p->why_not[i].consumer == sm->anchor) found = true;
    assert_true(found);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* mobilenetv2: ReLU6 as Clip(0,6) becomes a CLIP post-op after the BN fold. */
static void test_mobilenetv2_relu6_becomes_clip_post_op(void **st)
{
    (void)st;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g;
    fa_plan *p = plan_for(ctx, &g, "zoo:mobilenetv2");
    int clip = 0;
    for (int i = 0; i < p->n_clusters; i++)
        if (p->clusters[i].kind == FA_CLUSTER_EPILOGUE && has_post(&p->clusters[i], "clip(0,6)")) clip++;
    assert_true(clip >= 30);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* The same graph and options give the same hash; other options give another. */
static void test_plan_hash_is_stable_and_depends_on_options(void **st)
{
    (void)st;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_graph_load(ctx, "zoo:convnet-tiny", NULL, &g), FA_OK);
    fa_advise_options o = fa_advise_options_default();
    fa_plan *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(fa_advise(ctx, g, NULL, &o, &a), FA_OK);
    assert_int_equal(fa_advise(ctx, g, NULL, &o, &b), FA_OK);
    o.max_ops = 2;
    assert_int_equal(fa_advise(ctx, g, NULL, &o, &c), FA_OK);
    assert_string_equal(a->hash, b->hash);
    assert_string_not_equal(a->hash, c->hash);
    fa_plan_free(a);
    fa_plan_free(b);
    fa_plan_free(c);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* A CPU run's kernel medians and ceilings do not predict a CUDA kernel: advising the cuda
 * target on a CPU-measured profile falls back to the analytic estimate and says why; the cpu
 * target on the same profile uses the measured medians. */
/* A stored run of zoo:convnet-tiny (2 timed iterations on cpu) in a new store `db_name`, analysed
 * against fixed ceilings (10 GB/s, 100 GFLOP/s, 1 us dispatch) under `device_key`, and its graph
 * reloaded: what an `advise` of a stored run starts from. */
typedef struct analysed_run {
    const char *db;  /* the store's path */
    fa_store *store;
    int64_t run;
    fa_analysis *analysis;
    fa_graph *graph;
} analysed_run;

static analysed_run analysed_convnet(fa_ctx *ctx, const char *db_name, const char *device_key)
{
    analysed_run f = {fa_test_path(fa_test_tmpdir(), db_name), NULL, 0, NULL, NULL};
    assert_int_equal(fa_store_open(ctx, f.db, &f.store), FA_OK);
    assert_int_equal(fa_test_store_run(ctx, f.store, "zoo:convnet-tiny", 2, &f.run), FA_OK);
    fa_ceilings c;
    memset(&c, 0, sizeof c);
    c.device_key = device_key;
    c.mem_bw_gbs = 10;
    c.peak_gflops = 100;
    c.launch_ns = 1000;
    assert_int_equal(fa_analyze_run(ctx, f.store, f.run, &c, &f.analysis), FA_OK);
    assert_int_equal(fa_graph_load(ctx, "zoo:convnet-tiny", NULL, &f.graph), FA_OK);
    return f;
}

static void analysed_run_free(analysed_run *f)
{
    fa_graph_free(f->graph);
    fa_analysis_free(f->analysis);
    fa_store_close(f->store);
}

static void test_profile_of_another_device_kind_is_not_used(void **st)
{
    (void)st;
    fa_ctx *ctx = fa_ctx_create();
    analysed_run f = analysed_convnet(ctx, "foreign.db", "cpu:test-model:2t");
    fa_graph *g = f.graph;
    fa_analysis *a = f.analysis;
    for (int t = FA_TARGET_CPU; t <= FA_TARGET_CUDA; t++) {
        fa_advise_options o = fa_advise_options_default();
        o.target = (fa_target)t;
        o.no_gate = true;
        fa_plan *p = NULL;
        assert_int_equal(fa_advise(ctx, g, a, &o, &p), FA_OK);
        int foreign = 0, measured = 0;
        for (int i = 0; i < p->n_clusters; i++) {
            const char *b = p->clusters[i].basis ? p->clusters[i].basis : "";
            foreign += strstr(b, "measured on another kind of device") != NULL;
            measured += strncmp(b, "measured:", 9) == 0;
        }
        assert_true(p->n_clusters > 0);
        if (t == FA_TARGET_CUDA) {
            assert_int_equal(foreign, p->n_clusters);
            assert_int_equal(measured, 0);
        } else {
            assert_int_equal(foreign, 0);
            assert_true(measured > 0);
        }
        fa_plan_free(p);
    }
    analysed_run_free(&f);
    fa_ctx_free(ctx);
}

/* Stored run -> analysis -> plan saved to plans/clusters/why_not; update changes status. */
static void test_plan_saved_and_updated_in_store(void **st)
{
    (void)st;
    fa_ctx *ctx = fa_ctx_create();
    analysed_run f = analysed_convnet(ctx, "plan.db", "test");
    fa_store *s = f.store;
    const char *db = f.db;
    int64_t run = f.run;
    fa_plan *p = NULL;
    assert_int_equal(fa_advise(ctx, f.graph, f.analysis, NULL, &p), FA_OK);
    assert_int_equal(p->run_id, run);
    assert_int_equal(fa_plan_save(ctx, s, p), FA_OK);
    assert_int_equal(p->plan_id, 1);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(fa_store_db(s), "SELECT count(*), sum(saved_bytes) FROM clusters WHERE run_id=?1 AND plan_id=1", -1, &q, NULL), SQLITE_OK);
    sqlite3_bind_int64(q, 1, run);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), p->n_clusters);
    uint64_t sum = 0;
    for (int i = 0; i < p->n_clusters; i++) sum += p->clusters[i].saved_bytes;
    assert_int_equal((uint64_t)sqlite3_column_int64(q, 1), sum);
    sqlite3_finalize(q);
    assert_int_equal(sqlite3_prepare_v2(fa_store_db(s), "SELECT count(*) FROM why_not WHERE run_id=?1 AND plan_id=1", -1, &q, NULL), SQLITE_OK);
    sqlite3_bind_int64(q, 1, run);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), p->n_why_not);
    sqlite3_finalize(q);
    /* the applier's verdict is its own record, written over the plan's row by id */
    fa_cluster_verdict *verdicts = calloc((size_t)p->n_clusters, sizeof *verdicts);
    assert_non_null(verdicts);
    for (int i = 0; i < p->n_clusters; i++) verdicts[i] = fa_cluster_verdict_of(&p->clusters[i]);
    verdicts[0].status = FA_CLUSTER_ACCEPTED;
    verdicts[0].measured_saving_ns = 1500;
    assert_int_equal(fa_store_put_cluster_verdicts(ctx, s, p, verdicts), FA_OK);
    free(verdicts);
    assert_int_equal(sqlite3_prepare_v2(fa_store_db(s), "SELECT status, measured_saving_us FROM clusters WHERE run_id=?1 AND plan_id=1 AND cluster_id=0", -1, &q, NULL), SQLITE_OK);
    sqlite3_bind_int64(q, 1, run);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "accepted");
    assert_true(sqlite3_column_double(q, 1) > 1.49 && sqlite3_column_double(q, 1) < 1.51);
    sqlite3_finalize(q);
    /* a second save is plan 2 */
    assert_int_equal(fa_plan_save(ctx, s, p), FA_OK);
    assert_int_equal(p->plan_id, 2);
    fa_plan_free(p);
    analysed_run_free(&f);

    /* the verb: reloads zoo:convnet-tiny, prints clusters and why-not as JSON */
    char *out = NULL, *err = NULL;
    const char *argv[] = {"advise", "latest", "--json", "--db", db, NULL};
    int rc = fa_test_run_cli(argv, &out, &err);
    if (rc) fail_msg("advise failed: %s", err);
    assert_non_null(strstr(out, "\"kind\":\"bn-fold\""));
    assert_non_null(strstr(out, "\"why_not\":["));
    assert_non_null(strstr(out, "\"plan_id\":3"));
    free(out);
    free(err);
    const char *argv2[] = {"advise", "99", "--db", db, NULL};
    rc = fa_test_run_cli(argv2, &out, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "99"));
    free(out);
    free(err);

    /* a model file: advise checks its SHA-256 against the run's */
    fa_graph *m = NULL;
    assert_int_equal(fa_zoo_build(ctx, "mlp-tiny", 1, &m), FA_OK);
    const char *mp = fa_test_path(fa_test_tmpdir(), "mlp.onnx");
    assert_int_equal(fa_onnx_export(ctx, m, mp), FA_OK);
    fa_graph_free(m);
    assert_int_equal(fa_store_open(ctx, db, &s), FA_OK);
    assert_int_equal(fa_test_store_run(ctx, s, mp, 1, &run), FA_OK);
    char sha[65], sql[256];
    assert_int_equal(fa_sha256_file(ctx, mp, sha), FA_OK);
    snprintf(sql, sizeof sql, "UPDATE runs SET model_sha256='%s' WHERE id=%lld", sha, (long long)run);
    assert_int_equal(sqlite3_exec(fa_store_db(s), sql, NULL, NULL, NULL), SQLITE_OK);
    fa_store_close(s);
    char rs[32];
    snprintf(rs, sizeof rs, "%lld", (long long)run);
    const char *argv3[] = {"advise", rs, "--db", db, NULL};
    rc = fa_test_run_cli(argv3, &out, &err);
    if (rc) fail_msg("advise of a model file failed: %s", err);
    assert_non_null(strstr(out, "matmul+add+relu"));
    free(out);
    free(err);
    assert_int_equal(fa_store_open(ctx, db, &s), FA_OK);
    snprintf(sql, sizeof sql, "UPDATE runs SET model_sha256='%064d' WHERE id=%lld", 0, (long long)run);
    assert_int_equal(sqlite3_exec(fa_store_db(s), sql, NULL, NULL, NULL), SQLITE_OK);
    fa_store_close(s);
    rc = fa_test_run_cli(argv3, &out, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "changed since run"));
    free(out);
    free(err);
    fa_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resnet50_plan_has_bn_fold_conv_relu_and_residual_add_relu),
        cmocka_unit_test(test_bert_plan_has_attention_layer_norms_gelu_erf_and_bias_epilogues),
        cmocka_unit_test(test_gpt2_plan_has_causal_attention_decomposed_layer_norm_gelu_tanh_and_bias_epilogues),
        cmocka_unit_test(test_corpus_expanded_reductions_and_gelu_recognised_with_op_epsilon),
        cmocka_unit_test(test_cuda_gate_refuses_under_occupancy_floor_with_numbers),
        cmocka_unit_test(test_mobilenetv2_relu6_becomes_clip_post_op),
        cmocka_unit_test(test_every_zoo_model_gets_a_plan),
        cmocka_unit_test(test_every_corpus_light_model_gets_a_plan),
        cmocka_unit_test(test_plan_hash_is_stable_and_depends_on_options),
        cmocka_unit_test(test_plan_saved_and_updated_in_store),
        cmocka_unit_test(test_profile_of_another_device_kind_is_not_used),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
