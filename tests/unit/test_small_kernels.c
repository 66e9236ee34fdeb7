/* tests/unit/test_small_kernels — the cpu executor runs a kernel too small to share on one thread
 * (runtime/cpu/exec_cpu.c small_kernel: under 1 MFLOP and 256 KiB moved): its kernel is created
 * and run with OpenMP's thread count at 1 (what oneDNN 2.6 sizes its work split from) and is
 * handed threads = 1, while a large kernel of the same op gets the executor's threads; the
 * squeeze-excitation ops of a MobileNetV3 block ([1, C, 1, 1]) are small, its 56x56 activation
 * is not. FA_SMALL_KERNELS_SHARED=1 gives every kernel the executor's threads. The prepared run
 * (plan_dispatch) is the graph's kernels in order, and runs a node of 70 inputs. */
#include <omp.h>

#include "codegen_cases.h"
#include "runtime/runtime-impl.h"
#include "runtime/runtime.h"

typedef struct seen {
    int created_omp[8], run_omp[8], run_threads[8]; /* by node id */
} seen;

typedef struct probe {
    seen *s;
    int id;
} probe;

static fa_status probe_run(void *state, fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in, fa_value *out,
                           int n_out, int threads)
{
    (void)ctx;
    (void)n_in;
    (void)n_out;
    probe *p = state;
    p->s->run_omp[p->id] = omp_get_max_threads();
    p->s->run_threads[p->id] = threads;
    int64_t ne = fa_value_numel(&out[0]);
    const float *x = in[0].data;
    float *y = out[0].data;
    for (int64_t i = 0; i < ne; i++) y[i] = x[i] < 0 ? 0 : x[i];
    return FA_OK;
}

/* Takes every Relu, noting OpenMP's thread count while the executor creates its kernel. */
static fa_status probe_provider(void *user, fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_custom_kernel *out,
                                bool *provided)
{
    (void)ctx;
    (void)g;
    if ((strcmp(n->op_type, "Relu") && strcmp(n->op_type, "FusedKernel")) || n->id >= 8) return FA_OK;
    seen *s = user;
    probe *p = calloc(1, sizeof *p);
    if (!p) return FA_ERR_NOMEM;
    p->s = s;
    p->id = n->id;
    s->created_omp[n->id] = omp_get_max_threads();
    out->name = "probe";
    out->run = probe_run;
    out->destroy = free;
    out->state = p;
    *provided = true;
    return FA_OK;
}

/* se[1,96,1,1] -> Relu (small: 384 bytes); act[1,16,56,56] -> Relu (large: 2 x 200 KiB);
 * pooled = GlobalAveragePool(act) (small output, large input). */
static tc *se_block(void)
{
    tc *t = tc_new(17);
    int64_t sd[4] = {1, 96, 1, 1}, ad[4] = {1, 16, 56, 56};
    tc_input(t, "se", 4, sd);
    tc_input(t, "act", 4, ad);
    tc_node(t, "Relu", "se", NULL, NULL, "se_r");
    tc_node(t, "Relu", "act", NULL, NULL, "act_r");
    tc_node(t, "GlobalAveragePool", "act_r", NULL, NULL, "pooled");
    tc_output(t, "se_r");
    tc_output(t, "pooled");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    return t;
}

static int node_of(const fa_graph *g, const char *out)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && g->nodes[i]->n_outputs > 0 && !strcmp(g->tensors[g->nodes[i]->outputs[0]]->name, out))
            return g->nodes[i]->id;
    fail_msg("no node writes %s", out);
    return -1;
}

static void run_block(tc *t, seen *s)
{
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2, .provider = probe_provider, .provider_user = s};
    fa_exec *e = NULL;
    if (fa_exec_create(t->ctx, t->g, &eo, &e)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    assert_int_equal(omp_get_max_threads(), 2); /* restored after each small kernel's creation */
    assert_int_equal(fa_exec_fill_inputs(t->ctx, e, 1), FA_OK);
    if (fa_exec_run(t->ctx, e, NULL)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    assert_int_equal(omp_get_max_threads(), 2); /* ... and after each small kernel's run */
    fa_exec_free(e);
}

static void test_small_kernel_created_and_run_on_one_thread(void **st)
{
    (void)st;
    unsetenv("FA_SMALL_KERNELS_SHARED");
    tc *t = se_block();
    seen s = {0};
    run_block(t, &s);
    int small = node_of(t->g, "se_r"), large = node_of(t->g, "act_r");
    assert_int_equal(s.created_omp[small], 1);
    assert_int_equal(s.run_omp[small], 1);
    assert_int_equal(s.run_threads[small], 1);
    assert_int_equal(s.created_omp[large], 2);
    assert_int_equal(s.run_omp[large], 2);
    assert_int_equal(s.run_threads[large], 2);
    tc_free(t);
}

static void test_shared_when_turned_off(void **st)
{
    (void)st;
    setenv("FA_SMALL_KERNELS_SHARED", "1", 1);
    tc *t = se_block();
    seen s = {0};
    run_block(t, &s);
    int small = node_of(t->g, "se_r");
    assert_int_equal(s.created_omp[small], 2);
    assert_int_equal(s.run_threads[small], 2);
    unsetenv("FA_SMALL_KERNELS_SHARED");
    tc_free(t);
}

/* The executor prepares the run once (runtime/cpu/exec_cpu.c plan_dispatch: every kernel's
 * argument values already in the arena): a node reading more values than the run loop's old
 * stack arrays held (64 inputs: "too many inputs/outputs") runs, and gives the sum. */
static void test_node_with_70_inputs_runs(void **st)
{
    (void)st;
    tc *t = tc_new(13);
    enum { K = 70 };
    const char *ins[K];
    char names[K][8];
    int64_t d[2] = {1, 8};
    for (int k = 0; k < K; k++) {
        snprintf(names[k], sizeof names[k], "x%d", k);
        ins[k] = names[k];
        tc_input(t, names[k], 2, d);
    }
    const char *outs[1] = {"y"};
    assert_non_null(fa_graph_add_node(t->ctx, t->g, "sum", "Sum", "", K, ins, 1, outs));
    tc_output(t, "y");
    assert_int_equal(fa_graph_prepare(t->ctx, t->g, NULL), FA_OK);
    fa_exec_options o = {.target = FA_TARGET_CPU, .threads = 2};
    fa_exec *e = NULL;
    if (fa_exec_create(t->ctx, t->g, &o, &e)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    float x[8];
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < 8; i++) x[i] = (float)(k + i);
        fa_value v = {.data = x, .dtype = FA_DTYPE_FLOAT, .rank = 2, .dims = {1, 8}};
        assert_int_equal(fa_exec_set_input(t->ctx, e, k, &v), FA_OK);
    }
    if (fa_exec_run(t->ctx, e, NULL)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    const float *y = fa_exec_output(e, 0)->data;
    for (int i = 0; i < 8; i++) assert_true(y[i] == (float)(K * (K - 1) / 2 + K * i));
    fa_exec_free(e);
    tc_free(t);
}

/* The prepared run is the graph's: one kernel per live node in topological order, each shown to
 * the observer with its kernel's name; and OpenMP's thread count, set to 1 only around the small
 * kernels, is the executor's again after the run. */
typedef struct order {
    const fa_node *n[16];
    const char *k[16];
    int count;
} order;

static void on_begin(void *user, const fa_node *n, const char *kernel)
{
    order *o = user;
    if (o->count < 16) o->n[o->count] = n, o->k[o->count] = kernel;
    o->count++;
}

static void test_prepared_run_is_the_graph_in_order(void **st)
{
    (void)st;
    tc *t = se_block();
    fa_exec_options o = {.target = FA_TARGET_CPU, .threads = 2};
    fa_exec *e = NULL;
    if (fa_exec_create(t->ctx, t->g, &o, &e)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    assert_int_equal(fa_exec_fill_inputs(t->ctx, e, 3), FA_OK);
    order seen = {0};
    fa_exec_observer obs = {.user = &seen, .kernel_begin = on_begin};
    if (fa_exec_run(t->ctx, e, &obs)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    assert_int_equal(seen.count, t->g->n_topo);
    for (int k = 0; k < t->g->n_topo && k < 16; k++) {
        assert_ptr_equal(seen.n[k], t->g->nodes[t->g->topo[k]]);
        assert_string_equal(seen.k[k], fa_exec_kernel_name(e, seen.n[k]));
    }
    assert_int_equal(omp_get_max_threads(), 2);
    fa_exec_free(e);
    tc_free(t);
}

/* A node of the applier's domain has no registry row: its flops are the FA_FUSED_FLOPS_ATTR the
 * applier writes (graph/registry.c fused_cost). A FusedKernel of 8 KiB moved and 5 MFLOP is not
 * small and runs on the executor's threads; with 1000 flops, or no attribute (0), it is small. */
static int fused_kernel_threads(int64_t flops)
{
    tc *t = tc_new(17);
    int64_t d[4] = {1, 16, 8, 8};
    tc_input(t, "x", 4, d);
    const char *ins[1] = {"x"}, *outs[1] = {"y"};
    fa_node *n = fa_graph_add_node(t->ctx, t->g, "fk", "FusedKernel", FA_FUSED_DOMAIN, 1, ins, 1, outs);
    assert_non_null(n);
    fa_tensor_set_shape(t->g->tensors[fa_graph_find_tensor(t->g, "y")], FA_DTYPE_FLOAT, 4, d);
    if (flops >= 0) assert_non_null(fa_node_add_attr_int(t->g, n, FA_FUSED_FLOPS_ATTR, flops));
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    fa_op_cost c;
    fa_node_cost(t->g, n, &c);
    assert_int_equal(c.flops, flops > 0 ? (uint64_t)flops : 0);
    assert_int_equal(c.bytes_read + c.bytes_written, 2 * 16 * 8 * 8 * sizeof(float));
    seen s = {0};
    run_block(t, &s);
    int th = s.run_threads[n->id];
    assert_int_equal(s.created_omp[n->id], th); /* created with the count it runs with */
    tc_free(t);
    return th;
}

static void test_fused_node_sized_by_its_flops(void **st)
{
    (void)st;
    unsetenv("FA_SMALL_KERNELS_SHARED");
    assert_int_equal(fused_kernel_threads(5000000), 2);
    assert_int_equal(fused_kernel_threads(1000), 1);
    assert_int_equal(fused_kernel_threads(-1), 1);
}

/* Wake-ahead (runtime/cpu/exec_cpu.c run_stretch_awake): a stretch of one-thread kernels that a
 * kernel on the pool's threads ends runs inside a parallel region of the pool, its kernels on the
 * caller's thread with OpenMP's count at 1 as before, the large kernel after it outside; a small
 * kernel that ends the run (no pool kernel after it) is not wrapped. The outputs are the same bits
 * with and without it. Forced on for every stretch (by default a stretch is wrapped only once its
 * last run took 15-200 us) and off. */
typedef struct in_par {
    int in_parallel[8], runs[8]; /* by node id */
} in_par;

static void on_begin_par(void *user, const fa_node *n, const char *kernel)
{
    (void)kernel;
    in_par *p = user;
    if (n->id >= 0 && n->id < 8) {
        p->in_parallel[n->id] += omp_in_parallel() != 0;
        p->runs[n->id]++;
    }
}

static void run_wake_ahead(int mode, float *se_out, float *pooled_out, in_par *p, seen *s)
{
    fa_cpu_wake_ahead_force(mode);
    tc *t = tc_new(17); /* a squeeze-excitation block's tail */
    int64_t sd[4] = {1, 16, 1, 1}, ad[4] = {1, 16, 56, 56};
    tc_input(t, "se", 4, sd);
    tc_input(t, "act", 4, ad);
    tc_node(t, "Relu", "act", NULL, NULL, "act_r");
    tc_node(t, "Relu", "se", NULL, NULL, "se_r");
    tc_node(t, "Sigmoid", "se_r", NULL, NULL, "se_s");
    tc_node(t, "Mul", "act_r", "se_s", NULL, "scaled");
    tc_node(t, "GlobalAveragePool", "scaled", NULL, NULL, "pooled");
    tc_output(t, "se_s");
    tc_output(t, "pooled");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2, .provider = probe_provider, .provider_user = s};
    fa_exec *e = NULL;
    if (fa_exec_create(t->ctx, t->g, &eo, &e)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    assert_int_equal(fa_exec_fill_inputs(t->ctx, e, 5), FA_OK);
    fa_exec_observer obs = {.user = p, .kernel_begin = on_begin_par};
    for (int r = 0; r < 3; r++)
        if (fa_exec_run(t->ctx, e, &obs)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    assert_int_equal(omp_get_max_threads(), 2);
    assert_false(omp_in_parallel());
    memcpy(se_out, fa_exec_output(e, 0)->data, 16 * sizeof(float));
    memcpy(pooled_out, fa_exec_output(e, 1)->data, 16 * sizeof(float));
    int small = node_of(t->g, "se_r"), sig = node_of(t->g, "se_s"), large = node_of(t->g, "act_r"),
        mul = node_of(t->g, "scaled"), pool = node_of(t->g, "pooled");
    assert_int_equal(t->g->n_topo, 5);
    assert_int_equal(t->g->nodes[t->g->topo[4]]->id, pool);
    for (int k = 0; k < 5; k++) assert_int_equal(p->runs[t->g->nodes[t->g->topo[k]]->id], 3);
    assert_int_equal(p->in_parallel[small], mode ? 3 : 0); /* each ended by the large Relu or the Mul */
    assert_int_equal(p->in_parallel[sig], mode ? 3 : 0);
    assert_int_equal(p->in_parallel[large], 0);
    assert_int_equal(p->in_parallel[mul], 0);
    assert_int_equal(p->in_parallel[pool], 0); /* ends the run: nothing to wake the pool for */
    assert_int_equal(s->run_omp[small], 1);     /* OpenMP's count inside the region: 1, as created */
    assert_int_equal(s->run_threads[small], 1);
    assert_int_equal(s->run_omp[large], 2);
    fa_exec_free(e);
    tc_free(t);
    fa_cpu_wake_ahead_force(-1);
}

static void test_wake_ahead_stretch_runs_inside_the_pool(void **st)
{
    (void)st;
    unsetenv("FA_SMALL_KERNELS_SHARED");
    float se_on[16], se_off[16], pool_on[16], pool_off[16];
    in_par p_on = {0}, p_off = {0};
    seen s_on = {0}, s_off = {0};
    run_wake_ahead(1, se_on, pool_on, &p_on, &s_on);
    run_wake_ahead(0, se_off, pool_off, &p_off, &s_off);
    assert_memory_equal(se_on, se_off, sizeof se_on);
    assert_memory_equal(pool_on, pool_off, sizeof pool_on);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_kernel_created_and_run_on_one_thread),
        cmocka_unit_test(test_shared_when_turned_off),
        cmocka_unit_test(test_node_with_70_inputs_runs),
        cmocka_unit_test(test_prepared_run_is_the_graph_in_order),
        cmocka_unit_test(test_fused_node_sized_by_its_flops),
        cmocka_unit_test(test_wake_ahead_stretch_runs_inside_the_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
