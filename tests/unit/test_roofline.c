/* tests/unit/test_roofline — occupancy calculator vectors, limits table, placement rules. */
#include <stdio.h>
#include <string.h>

#include "roofline/roofline.h"
#include "runtime/runtime-impl.h"
#include "store/store.h"
#include "testutil.h"

static fa_occ_result occ(const char *arch, int threads, int regs, size_t dyn_smem)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_occ_input in = {.block_size = threads, .regs_per_thread = regs, .dynamic_smem = dyn_smem, .carveout_percent = -1};
    fa_occ_result r;
    assert_int_equal(fa_occupancy(ctx, fa_cuda_limits_for_arch(arch), &in, &r), FA_OK);
    fa_ctx_free(ctx);
    return r;
}

static void test_occupancy_sm90_256x64_regs_is_4_blocks_50pct(void **s)
{
    (void)s;
    fa_occ_result r = occ("sm_90", 256, 64, 0);
    assert_int_equal(r.active_blocks, 4);
    assert_true(r.occupancy > 0.499 && r.occupancy < 0.501);
    assert_true(r.limiters & FA_OCC_LIMIT_REGISTERS);
}

static void test_occupancy_sm90_256x40_regs_is_6_blocks_75pct(void **s)
{
    (void)s;
    fa_occ_result r = occ("sm_90", 256, 40, 0);
    assert_int_equal(r.active_blocks, 6);
    assert_true(r.occupancy > 0.749 && r.occupancy < 0.751);
    assert_true(r.limiters & FA_OCC_LIMIT_REGISTERS);
}

static void test_occupancy_sm90_128t_48k_smem_is_4_blocks_25pct_smem_limited(void **s)
{
    (void)s;
    fa_occ_result r = occ("sm_90", 128, 32, 48 * 1024);
    assert_int_equal(r.active_blocks, 4);
    assert_true(r.occupancy > 0.249 && r.occupancy < 0.251);
    assert_int_equal(r.limiters, FA_OCC_LIMIT_SHARED_MEMORY);
    assert_int_equal(r.smem_per_block_alloc, 48 * 1024 + 1024); /* the 1 KiB driver reserve */
}

static void test_occupancy_small_blocks_hit_block_cap(void **s)
{
    (void)s;
    /* 32 threads x 16 regs on sm_80: warps allow 64 blocks, the cap is 32 */
    fa_occ_result r = occ("sm_80", 32, 16, 0);
    assert_int_equal(r.active_blocks, 32);
    assert_true(r.limiters & FA_OCC_LIMIT_BLOCKS);
    /* sm_75: 1024 threads/SM -> 32 warps, cap 16 blocks */
    r = occ("sm_75", 64, 16, 0);
    assert_int_equal(r.active_blocks, 16);
}

static void test_occupancy_too_many_registers_cannot_launch(void **s)
{
    (void)s;
    /* 1024 threads x 128 regs = 131072 > 65536 registers per block */
    fa_occ_result r = occ("sm_90", 1024, 128, 0);
    assert_int_equal(r.active_blocks, 0);
    assert_true(r.limiters & FA_OCC_LIMIT_REGISTERS);
    /* 48 KiB + 1 byte dynamic without opt-in exceeds the default per-block limit */
    r = occ("sm_90", 128, 32, 48 * 1024 + 1);
    assert_int_equal(r.active_blocks, 0);
}

static void test_occupancy_register_granularity_rounds_per_warp(void **s)
{
    (void)s;
    /* 33 regs -> 33*32 = 1056 -> rounded to 1280 per warp: 16384/1280 = 12 warps per sub-partition */
    fa_occ_result r = occ("sm_90", 128, 33, 0);
    assert_int_equal(r.regs_per_block_alloc, 1280 * 4);
    assert_int_equal(r.active_blocks, 12);
}

static void test_occupancy_sm86_has_48_warps(void **s)
{
    (void)s;
    fa_occ_result r = occ("sm_86", 256, 32, 0);
    assert_int_equal(r.active_blocks, 6); /* 48 warps / 8 */
    assert_true(r.occupancy > 0.999);
}

static void test_occupancy_rejects_bad_block_size(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_occ_input in = {.block_size = 0, .regs_per_thread = 32, .carveout_percent = -1};
    fa_occ_result r;
    assert_int_equal(fa_occupancy(ctx, fa_cuda_limits_for(9, 0), &in, &r), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "block size"));
    fa_ctx_free(ctx);
}

static void test_limits_table_covers_required_arches(void **s)
{
    (void)s;
    static const int cc[][2] = {{7, 0}, {7, 5}, {8, 0}, {8, 6}, {8, 9}, {9, 0}};
    for (size_t i = 0; i < sizeof cc / sizeof cc[0]; i++) {
        const fa_cuda_limits *l = fa_cuda_limits_for(cc[i][0], cc[i][1]);
        assert_non_null(l);
        assert_non_null(l->source);
        assert_int_equal(l->max_warps_per_sm * l->warp_size, l->max_threads_per_sm);
        assert_true(l->carveout_kib[l->n_carveouts - 1] * 1024 == l->smem_per_sm);
    }
    assert_ptr_equal(fa_cuda_limits_for_arch("sm_90"), fa_cuda_limits_for(9, 0));
    assert_ptr_equal(fa_cuda_limits_for_arch("86"), fa_cuda_limits_for(8, 6));
    assert_null(fa_cuda_limits_for_arch("sm_61"));
}

static void test_place_memory_compute_latency(void **s)
{
    (void)s;
    fa_ceilings c = {0};
    c.mem_bw_gbs = 10;      /* 10 B/ns */
    c.peak_gflops = 100;    /* ridge at 10 FLOP/B */
    c.launch_ns = 1000;
    fa_placement p;
    fa_roofline_place(&c, 1000000, 1000000, 200000, &p); /* intensity 1, 200 us */
    assert_int_equal(p.bound, FA_BOUND_MEMORY);
    assert_true(p.achieved_gbs > 4.99 && p.achieved_gbs < 5.01);
    assert_true(p.pct_of_roof > 49.9 && p.pct_of_roof < 50.1);
    fa_roofline_place(&c, 100000000, 1000000, 2000000, &p); /* intensity 100 */
    assert_int_equal(p.bound, FA_BOUND_COMPUTE);
    assert_true(p.roof_gflops > 99.9 && p.roof_gflops < 100.1);
    fa_roofline_place(&c, 100, 100, 1500, &p); /* shorter than 2 launches */
    assert_int_equal(p.bound, FA_BOUND_LATENCY);
    /* a measured cache level (64 KiB at 40 GB/s): a kernel moving 32 KiB is held to 40 GB/s, one
     * moving 1 MB (beyond it) to DRAM's 10 GB/s */
    c.n_cache_levels = 1;
    c.cache[0].working_set = 65536;
    c.cache[0].bandwidth_gbs = 40;
    assert_true(fa_roofline_mem_roof(&c, 32768) == 40);
    assert_true(fa_roofline_mem_roof(&c, 1e6) == 10);
    fa_roofline_place(&c, 0, 32768, 16384, &p); /* 2 B/ns achieved, 8 us: above 2 launches */
    assert_true(p.pct_of_roof > 4.99 && p.pct_of_roof < 5.01);
    fa_roofline_place(&c, 1000000, 1000000, 200000, &p);
    assert_true(p.pct_of_roof > 49.9 && p.pct_of_roof < 50.1);
}

/* Issue 19: a re-measurement keeps the higher bandwidth; the lower one does not replace it, a
 * higher one does (per cache level matched by its sweep working set). */
static void test_keep_best_bandwidth_lower_does_not_replace_higher(void **s)
{
    (void)s;
    fa_ceilings old = {.mem_bw_gbs = 71.4, .n_cache_levels = 2}, c = {.mem_bw_gbs = 23.5, .n_cache_levels = 2};
    old.cache[0] = (fa_cache_level){.working_set = 65536, .bandwidth_gbs = 200};
    old.cache[1] = (fa_cache_level){.working_set = 4 << 20, .bandwidth_gbs = 50};
    c.cache[0] = (fa_cache_level){.working_set = 65536, .bandwidth_gbs = 150};
    c.cache[1] = (fa_cache_level){.working_set = 4 << 20, .bandwidth_gbs = 90};
    snprintf(old.detail, sizeof old.detail, "old triad");
    snprintf(c.detail, sizeof c.detail, "new triad");
    fa_roofline_keep_best_bandwidth(&old, &c);
    assert_true(c.mem_bw_gbs == 71.4 && c.mem_bw_new_gbs == 23.5);
    assert_string_equal(c.detail, "old triad");
    assert_true(c.cache[0].bandwidth_gbs == 200 && c.cache[0].bandwidth_new_gbs == 150);
    assert_true(c.cache[1].bandwidth_gbs == 90 && c.cache[1].bandwidth_new_gbs == 90); /* higher new one replaces */
    fa_ceilings first = {.mem_bw_gbs = 10};
    fa_roofline_keep_best_bandwidth(NULL, &first); /* nothing stored: the measurement as it is */
    assert_true(first.mem_bw_gbs == 10 && first.mem_bw_new_gbs == 10);
    /* the FP32 peak the same way: a busy re-measurement does not lower it, a higher one raises it */
    fa_ceilings po = {.peak_gflops = 508.6}, pc = {.peak_gflops = 212.0, .peak_source = "measured"};
    fa_roofline_keep_best_bandwidth(&po, &pc);
    assert_true(pc.peak_gflops == 508.6 && pc.peak_new_gflops == 212.0);
    assert_string_equal(pc.peak_source, "measured (the best kept across re-measurements)");
    fa_ceilings ph = {.peak_gflops = 600.0, .peak_source = "measured"};
    fa_roofline_keep_best_bandwidth(&po, &ph);
    assert_true(ph.peak_gflops == 600.0 && ph.peak_new_gflops == 600.0);
    assert_string_equal(ph.peak_source, "measured");
}

/* The same through the database: a stored main-memory bandwidth no machine reaches survives
 * `devices --measure` (fa_roofline_ceilings with remeasure), the new figure is reported beside
 * it, and the stored row still holds the higher one. One real cpu measurement (seconds). */
static void test_remeasure_keeps_stored_higher_bandwidth(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    const char *path = fa_test_path(fa_test_tmpdir(), "ceil_best.db");
    remove(path);
    assert_int_equal(fa_store_open(ctx, path, &st), FA_OK);
    fa_ceilings c;
    assert_int_equal(fa_roofline_cpu_ceilings(ctx, st, 1, false, &c), FA_OK); /* first use: measured, stored */
    const double high = 1e6; /* GB/s: above any memory system */
    fa_ceiling row = {c.device_key, "bandwidth", "mem_bw", high, "GB/s", "measured", 1, "a stored earlier measurement"};
    assert_int_equal(fa_store_put_ceiling(ctx, st, &row), FA_OK);
    /* an earlier sweep that found one cache level more than any this machine has: its row must
     * not survive the re-measurement (stale cache_N rows, read back as a level of this device);
     * (the sweep itself finds 1 or 2 levels here from one measurement to the next); a row whose
     * name only looks like a cache level under LIKE ('_' a wildcard) stays */
    const char *stale_name = "cache_5"; /* fa_ceilings holds 4 levels: never one measured now */
    fa_ceiling stale = {c.device_key, "bandwidth", stale_name, 1.0, "GB/s", "measured", 1, "64"};
    fa_ceiling other = {c.device_key, "bandwidth", "cacheX9", 2.0, "GB/s", "measured", 1, "64"};
    assert_int_equal(fa_store_put_ceiling(ctx, st, &stale), FA_OK);
    assert_int_equal(fa_store_put_ceiling(ctx, st, &other), FA_OK);
    fa_ceilings again;
    assert_int_equal(fa_roofline_cpu_ceilings(ctx, st, 1, true, &again), FA_OK);
    fa_arena *ar = fa_arena_create(4096);
    fa_ceiling *rows = NULL;
    size_t nrows = 0;
    assert_int_equal(fa_store_get_ceilings(ctx, st, c.device_key, ar, &rows, &nrows), FA_OK);
    int caches = 0, others = 0;
    for (size_t i = 0; i < nrows; i++) {
        assert_string_not_equal(rows[i].name, stale_name);
        caches += !strncmp(rows[i].name, "cache_", 6);
        others += !strcmp(rows[i].name, "cacheX9");
    }
    assert_int_equal(caches, again.n_cache_levels);
    assert_int_equal(others, 1);
    fa_arena_free(ar);
    assert_true(again.mem_bw_gbs == high);
    assert_true(again.mem_bw_new_gbs > 0 && again.mem_bw_new_gbs < high);
    fa_ceilings cached;
    assert_int_equal(fa_roofline_cpu_ceilings(ctx, st, 1, false, &cached), FA_OK);
    assert_true(cached.mem_bw_gbs == high);
    assert_true(cached.mem_bw_new_gbs == 0); /* read from the database, not measured */
    fa_store_close(st);
    remove(path);
    fa_ctx_free(ctx);
}

/* The FP32 peak is measured with fused multiply-adds: one rounding per step. With a = x = 1 + 2^-12
 * and y = -1, a * x = 1 + 2^-11 + 2^-24 exactly; rounded to float first (a multiply, then an add:
 * what GCC compiled the earlier kernel's a * x + y to under -std=c11) it is 1 + 2^-11 and the step
 * gives 2^-11; fused it gives 2^-11 + 2^-24. */
static void test_peak_kernel_uses_fused_multiply_add(void **s)
{
    (void)s;
    float acc[256];
    const float a = 1.0f + 0x1p-12f;
    for (int i = 0; i < 256; i++) acc[i] = a;
    assert_int_equal(fa_cpu_peak_chain(NULL, 256, a, -1.0f, 1), -1);
    assert_int_equal(fa_cpu_peak_chain(acc, 0, a, -1.0f, 1), -1); /* too small */
    volatile float va = a, vx = a; /* the unfused step, as the check that the two differ */
    float prod = va * vx;
    float unfused = prod - 1.0f;
    assert_true(unfused == 0x1p-11f);
    int n = fa_cpu_peak_chain(acc, 256, a, -1.0f, 1);
    assert_true(n > 0 && n <= 256);
    __builtin_cpu_init();
    float want = __builtin_cpu_supports("avx512f") || (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
                     ? 0x1p-11f + 0x1p-24f
                     : unfused; /* no FMA on this CPU: a multiply and an add are its peak */
    for (int i = 0; i < n; i++) assert_true(acc[i] == want);
}

/* Ceilings stored by an earlier measurement method (the FP32 peak's detail without the current
 * tag, as every peak stored before the fused multiply-add kernel) are measured again on first use;
 * the new peak's row carries the tag, so the next use reads it from the database. */
static void test_ceilings_of_an_earlier_method_are_measured_again(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    const char *path = fa_test_path(fa_test_tmpdir(), "ceil_method.db");
    remove(path);
    assert_int_equal(fa_store_open(ctx, path, &st), FA_OK);
    fa_ceilings c;
    assert_int_equal(fa_roofline_cpu_ceilings(ctx, st, 1, false, &c), FA_OK);
    fa_ceiling old = {c.device_key, "compute", "fp32_peak", 1.0, "GFLOP/s", "measured", 1,
                      "AVX-512 FMA peak with 8 independent chains per thread"};
    assert_int_equal(fa_store_put_ceiling(ctx, st, &old), FA_OK);
    fa_ceilings again;
    assert_int_equal(fa_roofline_cpu_ceilings(ctx, st, 1, false, &again), FA_OK);
    assert_true(again.peak_gflops > 1.0);
    assert_string_equal(again.peak_source, "measured");
    fa_arena *ar = fa_arena_create(4096);
    fa_ceiling *rows = NULL;
    size_t nrows = 0;
    assert_int_equal(fa_store_get_ceilings(ctx, st, c.device_key, ar, &rows, &nrows), FA_OK);
    int peaks = 0;
    for (size_t i = 0; i < nrows; i++)
        if (!strcmp(rows[i].name, "fp32_peak")) {
            peaks++;
            assert_non_null(rows[i].detail);
            assert_non_null(strstr(rows[i].detail, FA_CPU_CEILINGS_METHOD));
            assert_true(rows[i].value == again.peak_gflops);
        }
    assert_int_equal(peaks, 1);
    fa_arena_free(ar);
    fa_ceilings cached;
    assert_int_equal(fa_roofline_cpu_ceilings(ctx, st, 1, false, &cached), FA_OK);
    assert_string_equal(cached.peak_source, "measured (cached)");
    assert_true(cached.peak_gflops == again.peak_gflops);
    fa_store_close(st);
    remove(path);
    fa_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_occupancy_sm90_256x64_regs_is_4_blocks_50pct),
        cmocka_unit_test(test_occupancy_sm90_256x40_regs_is_6_blocks_75pct),
        cmocka_unit_test(test_occupancy_sm90_128t_48k_smem_is_4_blocks_25pct_smem_limited),
        cmocka_unit_test(test_occupancy_small_blocks_hit_block_cap),
        cmocka_unit_test(test_occupancy_too_many_registers_cannot_launch),
        cmocka_unit_test(test_occupancy_register_granularity_rounds_per_warp),
        cmocka_unit_test(test_occupancy_sm86_has_48_warps),
        cmocka_unit_test(test_occupancy_rejects_bad_block_size),
        cmocka_unit_test(test_limits_table_covers_required_arches),
        cmocka_unit_test(test_place_memory_compute_latency),
        cmocka_unit_test(test_keep_best_bandwidth_lower_does_not_replace_higher),
        cmocka_unit_test(test_remeasure_keeps_stored_higher_bandwidth),
        cmocka_unit_test(test_peak_kernel_uses_fused_multiply_add),
        cmocka_unit_test(test_ceilings_of_an_earlier_method_are_measured_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
