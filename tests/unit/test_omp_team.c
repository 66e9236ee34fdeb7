/* tests/unit/test_omp_team — a kernel under its work bound, or on one thread, opens no OpenMP team
 * (graph/ops-impl.h FA_OMP_TEAM, docs/runtime.md "What a node costs to dispatch"): with `if(false)`
 * or one thread libgomp still created and freed a one-thread team per call, more than the work of a
 * few-hundred-element node. The test counts the parallel regions a run opens by defining
 * GOMP_parallel (what gcc emits for `#pragma omp parallel [for]`) in this executable, which the
 * kernels linked into it call, and forwarding to libgomp's. fa_host_spread_threads moves a pool
 * whose threads share a CPU apart, leaving each thread's affinity mask as it was, and moves nothing
 * a one-CPU mask holds. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include "codegen_cases.h"
#include "runtime/runtime.h"

static int g_regions;

void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags)
{
    static void (*real)(void (*)(void *), void *, unsigned, unsigned);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "GOMP_parallel");
    assert_non_null(real);
    __atomic_add_fetch(&g_regions, 1, __ATOMIC_RELAXED);
    real(fn, data, num_threads, flags);
}

/* The small ops of small models, each on a few hundred elements: unary and broadcast elementwise
 * ops, a Cast, reductions over the last and a middle axis, a global pool, Transpose and Slice. */
static tc *small_ops(int64_t c)
{
    tc *t = tc_new(11); /* ReduceSum's axes an attribute */
    int64_t xd[4] = {1, c, 4, 4}, bd[3] = {c, 1, 1};
    tc_input(t, "x", 4, xd);
    float *b = calloc((size_t)c, sizeof *b);
    tc_const(t, "b", 3, bd, b);
    free(b);
    int64_t perm[4] = {0, 2, 3, 1}, axes_last[1] = {3}, axes_mid[1] = {1};
    tc_node(t, "Relu", "x", NULL, NULL, "r");
    tc_node(t, "Add", "r", "b", NULL, "a");
    fa_node *cast = tc_node(t, "Cast", "a", NULL, NULL, "h");
    fa_node_add_attr_int(t->g, cast, "to", FA_DTYPE_FLOAT16);
    fa_node *rl = tc_node(t, "ReduceMean", "a", NULL, NULL, "ml");
    fa_node_add_attr_ints(t->g, rl, "axes", axes_last, 1);
    fa_node *rm = tc_node(t, "ReduceSum", "a", NULL, NULL, "mm");
    fa_node_add_attr_ints(t->g, rm, "axes", axes_mid, 1);
    tc_node(t, "GlobalAveragePool", "a", NULL, NULL, "g");
    fa_node *tr = tc_node(t, "Transpose", "a", NULL, NULL, "tr");
    fa_node_add_attr_ints(t->g, tr, "perm", perm, 4);
    const char *outs[] = {"h", "ml", "mm", "g", "tr"};
    for (int i = 0; i < 5; i++) tc_output(t, outs[i]);
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    return t;
}

/* Parallel regions one run of t opens on an executor of `threads` (after a first run). */
static int regions_of_a_run(tc *t, int threads)
{
    setenv("FA_NO_DNNL", "1", 1); /* our kernels only: oneDNN's pools and reorders open their own */
    fa_exec_options o = {.target = FA_TARGET_CPU, .threads = threads};
    fa_exec *e = NULL;
    if (fa_exec_create(t->ctx, t->g, &o, &e)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    assert_int_equal(fa_exec_fill_inputs(t->ctx, e, 5), FA_OK);
    if (fa_exec_run(t->ctx, e, NULL)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    int before = __atomic_load_n(&g_regions, __ATOMIC_RELAXED);
    if (fa_exec_run(t->ctx, e, NULL)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    int n = __atomic_load_n(&g_regions, __ATOMIC_RELAXED) - before;
    fa_exec_free(e);
    unsetenv("FA_NO_DNNL");
    return n;
}

static void test_small_kernels_open_no_team(void **st)
{
    (void)st;
    tc *t = small_ops(16); /* 256 floats a tensor */
    int one = regions_of_a_run(t, 1), two = regions_of_a_run(t, 2);
    printf("parallel regions per run: %d on 1 thread, %d on 2 (%d kernels)\n", one, two, t->g->n_topo);
    assert_int_equal(one, 0);
    assert_int_equal(two, 0); /* every kernel is under the executor's one-thread bounds */
    tc_free(t);
}

/* The count is real: the same ops on 2 x 64 x 64 x 64 floats with two threads open teams. */
static void test_large_kernels_share_the_work(void **st)
{
    (void)st;
    tc *t = small_ops(4096);
    int one = regions_of_a_run(t, 1), two = regions_of_a_run(t, 2);
    printf("parallel regions per run: %d on 1 thread, %d on 2 (%d kernels)\n", one, two, t->g->n_topo);
    assert_int_equal(one, 0);
    assert_true(two >= 4);
    tc_free(t);
}

/* Each pool thread of a 2-thread team: its affinity set to `mask` (when not NULL), and where it runs
 * and its mask afterwards. */
typedef struct placed {
    int cpu[2];
    cpu_set_t mask[2];
} placed;

static void place_team(const cpu_set_t *mask, placed *out)
{
#pragma omp parallel num_threads(2)
    {
        int t = omp_get_thread_num() & 1;
        if (mask) assert_int_equal(pthread_setaffinity_np(pthread_self(), sizeof *mask, mask), 0);
#pragma omp barrier
        out->cpu[t] = sched_getcpu();
        pthread_getaffinity_np(pthread_self(), sizeof out->mask[t], &out->mask[t]);
    }
}

/* Both pool threads pinned to one CPU (a one-CPU mask: nothing to move them to) stay there, masks
 * untouched; given back two CPUs while still sharing one, the call leaves them on distinct CPUs
 * with the two-CPU mask each had. Skipped with fewer than 2 CPUs. */
static void test_spread_moves_threads_sharing_a_cpu(void **state)
{
    (void)state;
    cpu_set_t all, one, two;
    assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
    int c0 = -1, c1 = -1;
    for (int c = 0; c < CPU_SETSIZE && c1 < 0; c++)
        if (CPU_ISSET(c, &all)) {
            if (c0 < 0) c0 = c;
            else c1 = c;
        }
    if (c1 < 0 || omp_get_max_threads() < 2) skip();
    CPU_ZERO(&one);
    CPU_SET(c0, &one);
    two = one;
    CPU_SET(c1, &two);
    placed p;
    place_team(&one, &p);
    assert_int_equal(p.cpu[0], c0);
    assert_int_equal(p.cpu[1], c0);
    assert_false(fa_host_spread_threads(2)); /* one CPU in each mask: nowhere to go */
    place_team(NULL, &p);
    assert_int_equal(p.cpu[0], c0);
    assert_int_equal(p.cpu[1], c0);
    for (int t = 0; t < 2; t++) assert_true(CPU_EQUAL(&p.mask[t], &one));
    /* two CPUs allowed, both threads still on c0 until the scheduler moves one */
    place_team(&two, &p);
    fa_host_spread_threads(2);
    place_team(NULL, &p);
    assert_int_not_equal(p.cpu[0], p.cpu[1]);
    for (int t = 0; t < 2; t++) assert_true(CPU_EQUAL(&p.mask[t], &two));
    assert_false(fa_host_spread_threads(2)); /* apart already: nothing moved */
    place_team(&all, &p); /* the masks the test started from */
    assert_false(fa_host_spread_threads(1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_kernels_open_no_team),
        cmocka_unit_test(test_large_kernels_share_the_work),
        cmocka_unit_test(test_spread_moves_threads_sharing_a_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
