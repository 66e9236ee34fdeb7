/* tests/unit/test_cuda_gpu — the cuda target on a real GPU: the executor's outputs against the cpu
 * target's on the zoo models, the memory plan, and the in-process CUPTI collector attributing
 * kernels to nodes. Exits 77 (ctest: skipped, never passed) without a CUDA driver and device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifndef FA_HAVE_CUDA
int main(void)
{
    fprintf(stderr, "test_cuda_gpu: built without the CUDA toolkit, skipped\n");
    return 77;
}
#else

#include <cupti.h>
#include <dlfcn.h>

#include "collector/cupti/cupti.h"
#include "roofline/roofline.h"
#include "runtime/cuda/cuda.h"

/* max |gpu - cpu| <= atol + rtol * |cpu| over every output element */
static void compare_with_cpu(const char *model, int batch, double atol, double rtol)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    fa_load_options lo = {.batch = batch};
    assert_int_equal(fa_graph_load(ctx, model, &lo, &g), FA_OK);
    fa_exec *cpu = NULL;
    fa_exec_options co = {.target = FA_TARGET_CPU};
    assert_int_equal(fa_exec_create(ctx, g, &co, &cpu), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(ctx, cpu, 7), FA_OK);
    assert_int_equal(fa_exec_run(ctx, cpu, NULL), FA_OK);
    fa_cuda_exec *gpu = NULL;
    fa_exec_options go = {.target = FA_TARGET_CUDA};
    fa_status st = fa_cuda_exec_create(ctx, g, &go, &gpu);
    if (st) fail_msg("%s: %s", model, fa_ctx_errmsg(ctx));
    assert_int_equal(fa_cuda_exec_fill_inputs(ctx, gpu, 7), FA_OK);
    st = fa_cuda_exec_run(ctx, gpu, NULL);
    if (st) fail_msg("%s: %s", model, fa_ctx_errmsg(ctx));
    for (int i = 0; i < g->n_outputs; i++) {
        const fa_value *a = fa_exec_output(cpu, i), *b = fa_cuda_exec_output(gpu, i);
        assert_non_null(a);
        assert_non_null(b);
        assert_int_equal(fa_value_numel(a), fa_value_numel(b));
        double worst = 0;
        int64_t at = -1;
        for (int64_t k = 0; k < fa_value_numel(a); k++) {
            double x = fa_load_as_double(a->data, a->dtype, k), y = fa_load_as_double(b->data, b->dtype, k);
            double ex = fabs(x - y) - (atol + rtol * fabs(x));
            if (isnan(x) != isnan(y) || ex > worst) {
                worst = isnan(x) != isnan(y) ? INFINITY : ex;
                at = k;
            }
        }
        if (at >= 0)
            fail_msg("%s output %d element %lld: cpu %g gpu %g", model, i, (long long)at,
                     fa_load_as_double(a->data, a->dtype, at), fa_load_as_double(b->data, b->dtype, at));
    }
    /* the memory plan frees intermediates: peak below the sum of all activations */
    uint64_t all = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (!(g->tensors[t]->flags & FA_TENSOR_CONST)) all += fa_tensor_bytes(g->tensors[t]);
    assert_true(fa_cuda_exec_peak_bytes(gpu) > 0);
    if (g->n_topo > 4) assert_true(fa_cuda_exec_peak_bytes(gpu) < all);
    fprintf(stderr, "  %s on %s: outputs match cpu; peak %llu of %llu activation bytes\n", model,
            fa_cuda_exec_device_name(gpu), (unsigned long long)fa_cuda_exec_peak_bytes(gpu), (unsigned long long)all);
    fa_cuda_exec_free(gpu);
    fa_exec_free(cpu);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void test_mlp_tiny_matches_cpu(void **s) { (void)s; compare_with_cpu("zoo:mlp-tiny", 4, 1e-5, 1e-4); }
static void test_convnet_tiny_matches_cpu(void **s) { (void)s; compare_with_cpu("zoo:convnet-tiny", 2, 1e-4, 1e-3); }
static void test_bert_layer_matches_cpu(void **s) { (void)s; compare_with_cpu("zoo:bert-layer", 1, 1e-4, 1e-3); }
static void test_gpt2_block_matches_cpu(void **s) { (void)s; compare_with_cpu("zoo:gpt2-block", 1, 1e-4, 1e-3); }
static void test_mobilenetv2_matches_cpu(void **s) { (void)s; compare_with_cpu("zoo:mobilenetv2", 1, 1e-3, 1e-3); }
static void test_resnet50_matches_cpu(void **s) { (void)s; compare_with_cpu("zoo:resnet50", 1, 1e-3, 1e-3); }

/* In-process CUPTI over one executor run: every node's kernels appear, attributed to it. */
static void test_cupti_attributes_executor_kernels_to_nodes(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    fa_load_options lo = {.batch = 2};
    assert_int_equal(fa_graph_load(ctx, "zoo:convnet-tiny", &lo, &g), FA_OK);
    fa_cuda_exec *gpu = NULL;
    assert_int_equal(fa_cuda_exec_create(ctx, g, NULL, &gpu), FA_OK);
    assert_int_equal(fa_cuda_exec_fill_inputs(ctx, gpu, 1), FA_OK);
    fa_status st = fa_cupti_start(ctx, 0);
    if (st) fail_msg("%s", fa_ctx_errmsg(ctx));
    assert_int_equal(fa_cuda_exec_run(ctx, gpu, NULL), FA_OK);
    fa_trace *t = NULL;
    fa_cupti_stats stats;
    char *notes = NULL;
    assert_int_equal(fa_cupti_stop(ctx, &t, &stats, &notes), FA_OK);
    if (notes) fprintf(stderr, "  cupti notes: %s\n", notes);
    assert_true(stats.by_kind[FA_ACT_KERNEL] >= (uint64_t)g->n_topo / 2);
    assert_true(stats.by_kind[FA_ACT_RUNTIME] + stats.by_kind[FA_ACT_DRIVER] > 0);
    int attributed = 0, kernels = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        if (a->kind != FA_ACT_KERNEL) continue;
        kernels++;
        assert_true(a->end_ns >= a->start_ns);
        assert_true(a->block[0] > 0);
        if (a->node >= 0) attributed++;
    }
    fprintf(stderr, "  %d kernels, %d attributed through NVTX (%llu ranges)\n", kernels, attributed,
            (unsigned long long)stats.by_kind[FA_ACT_RANGE]);
    if (stats.by_kind[FA_ACT_RANGE]) assert_true(attributed * 2 >= kernels);
    free(notes);
    fa_trace_free(t);
    fa_cuda_exec_free(gpu);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* Plausibility bounds only (any GPU since Volta): HBM/GDDR 100 GB/s..20 TB/s, FP32 1..500 TFLOP/s,
 * launch 0.1..100 us. */
static void test_ceilings_measured_and_stored_with_clocks(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, fa_test_path(fa_test_tmpdir(), "gpu-ceil.db"), &st), FA_OK);
    fa_ceilings c;
    fa_status r = fa_roofline_ceilings(ctx, st, FA_TARGET_CUDA, 0, true, &c);
    if (r) fail_msg("%s", fa_ctx_errmsg(ctx));
    fprintf(stderr, "  %s: %.0f GB/s, %.0f GFLOP/s, launch %.0f ns\n  %s\n", c.device_key, c.mem_bw_gbs, c.peak_gflops,
            c.launch_ns, c.detail);
    assert_true(c.mem_bw_gbs > 100 && c.mem_bw_gbs < 20000);
    assert_true(c.peak_gflops > 1000 && c.peak_gflops < 500000);
    assert_true(c.launch_ns > 100 && c.launch_ns < 100000);
    fa_ceilings cached;
    assert_int_equal(fa_roofline_ceilings(ctx, st, FA_TARGET_CUDA, 0, false, &cached), FA_OK);
    assert_true(cached.mem_bw_gbs == c.mem_bw_gbs);
    assert_string_equal(cached.mem_bw_source, "measured (cached)");
    fa_arena *ar = fa_arena_create(4096);
    fa_ceiling *cs = NULL;
    size_t n = 0;
    assert_int_equal(fa_store_get_ceilings(ctx, st, c.device_key, ar, &cs, &n), FA_OK);
    assert_int_equal(n, 7);
    fa_arena_free(ar);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* fa_collect_cupti through the generic executor API (needs runtime/exec.c to dispatch
 * FA_TARGET_CUDA; skipped until it does): iterations labelled, kernels attributed, costs once. */
static void test_collect_cupti_over_cuda_target_labels_iterations_and_nodes(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    fa_load_options lo = {.batch = 1};
    assert_int_equal(fa_graph_load(ctx, "zoo:bert-layer", &lo, &g), FA_OK);
    fa_exec *e = NULL;
    fa_exec_options o = {.target = FA_TARGET_CUDA};
    fa_status st = fa_exec_create(ctx, g, &o, &e);
    if (st && strstr(fa_ctx_errmsg(ctx), "no executor")) {
        fa_graph_free(g);
        fa_ctx_free(ctx);
        skip();
    }
    if (st) fail_msg("%s", fa_ctx_errmsg(ctx));
    assert_int_equal(fa_exec_fill_inputs(ctx, e, 3), FA_OK);
    fa_trace *t = NULL;
    st = fa_collect_cupti(ctx, e, g, 2, 3, NULL, NULL, &t);
    if (st) fail_msg("%s", fa_ctx_errmsg(ctx));
    int per_iter[3] = {0}, attributed = 0, ranges = 0, nvtx = 0;
    uint64_t flops = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        if (a->kind == FA_ACT_RANGE && a->name && !strcmp(a->name, "iteration")) ranges++;
        else if (a->kind == FA_ACT_RANGE) nvtx++;
        if (a->kind != FA_ACT_KERNEL || a->iter < 0) continue;
        assert_true(a->iter < 3);
        per_iter[a->iter]++;
        if (a->node >= 0) attributed++;
        if (a->iter == 0) flops += a->flops;
    }
    fprintf(stderr, "  bert-layer on cuda: %d/%d/%d kernels per iteration, %d attributed, %.3g FLOP in iteration 0\n",
            per_iter[0], per_iter[1], per_iter[2], attributed, (double)flops);
    assert_int_equal(ranges, 3);
    assert_true(per_iter[0] > 0 && per_iter[0] == per_iter[1] && per_iter[1] == per_iter[2]);
    if (nvtx) assert_true(attributed * 2 >= per_iter[0] * 3);
    else fprintf(stderr, "  no NVTX ranges reached CUPTI: kernels not attributed to nodes\n");
    fa_trace_free(t);
    fa_exec_free(e);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

int main(void)
{
    if (fa_cuda_device_count() < 1) {
        fprintf(stderr, "test_cuda_gpu: no CUDA driver or device, skipped\n");
        return 77;
    }
    /* route NVTX to CUPTI before the first NVTX call (the executor's ranges) */
    if (!getenv("NVTX_INJECTION64_PATH") && fa_cuda_lib_path(FA_CUDA_LIB_CUPTI))
        setenv("NVTX_INJECTION64_PATH", fa_cuda_lib_path(FA_CUDA_LIB_CUPTI), 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp_tiny_matches_cpu),
        cmocka_unit_test(test_convnet_tiny_matches_cpu),
        cmocka_unit_test(test_bert_layer_matches_cpu),
        cmocka_unit_test(test_gpt2_block_matches_cpu),
        cmocka_unit_test(test_mobilenetv2_matches_cpu),
        cmocka_unit_test(test_resnet50_matches_cpu),
        cmocka_unit_test(test_cupti_attributes_executor_kernels_to_nodes),
        cmocka_unit_test(test_ceilings_measured_and_stored_with_clocks),
        cmocka_unit_test(test_collect_cupti_over_cuda_target_labels_iterations_and_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
