/* runtime/cpu/ceilings — the cpu target's ceilings: STREAM-triad main-memory bandwidth, a
 * working-set sweep for cache levels, FP32 FMA peak, and the executor's per-node dispatch
 * overhead (roofline/ caches them per device key in the run database). */
#include "runtime/runtime-impl.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <immintrin.h>


#define TRIAD_MIN_FLOATS ((size_t)16 << 20)  /* 16 Mi floats = 64 MiB per array at least */
#define TRIAD_MAX_FLOATS ((size_t)128 << 20) /* 512 MiB per array at most (1.5 GiB in all) */
#define TRIAD_REPS 10

/* The data/unified caches of cpu0 from sysfs: level[i] (1..4) and size[i] bytes; returns how many
 * (0 when sysfs says nothing). */
static int cpu0_data_caches(int *level, uint64_t *size, int cap)
{
    int n = 0;
    for (int i = 0; i < 8 && n < cap; i++) {
        char p[128], buf[64];
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        FILE *f = fopen(p, "r");
        if (!f) break;
        bool data = fgets(buf, sizeof buf, f) && strncmp(buf, "Instruction", 11) != 0;
        fclose(f);
        if (!data) continue;
        int lv = 0;
        uint64_t sz = 0;
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if ((f = fopen(p, "r"))) { if (fscanf(f, "%d", &lv) != 1) lv = 0; fclose(f); }
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if ((f = fopen(p, "r"))) {
            unsigned long long v = 0;
            char unit = 0;
            if (fscanf(f, "%llu%c", &v, &unit) >= 1) sz = v * (unit == 'K' ? 1024ull : unit == 'M' ? 1048576ull : 1ull);
            fclose(f);
        }
        if (lv < 1 || lv > 4 || !sz) continue;
        level[n] = lv;
        size[n] = sz;
        n++;
    }
    return n;
}

/* Bytes of the largest data/unified cache of cpu0 (sysfs), 0 when sysfs says nothing. */
static uint64_t llc_bytes(void)
{
    int lv[8];
    uint64_t sz[8], best = 0;
    int n = cpu0_data_caches(lv, sz, 8);
    for (int i = 0; i < n; i++)
        if (sz[i] > best) best = sz[i];
    return best;
}


/* STREAM triad, best of `reps`; returns GB/s. */
static double triad_gbs(float *a, const float *b, const float *c, size_t n, int threads, int reps)
{
    double best = 0;
    const float s = 3.0f;
    for (int r = 0; r < reps; r++) {
        uint64_t t0 = fa_now_ns();
#pragma omp parallel for num_threads(threads) schedule(static)
        for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        uint64_t t1 = fa_now_ns();
        double gbs = (double)(3 * sizeof(float) * n) / (double)(t1 - t0);
        if (gbs > best) best = gbs;
    }
    return best;
}

/* One thread's read of buf[lo, hi) `passes` times, summed so the loads are live: 8 independent
 * accumulators of the widest vector the CPU has (explicit loads, so the width does not depend on
 * the build's -m flags: compiled for the baseline x86-64, GCC split a 32-byte vector into two SSE
 * loads and the sweep measured the load ports' half). Loads, not the add latency (3-4 cycles), are
 * the limit. lo is a multiple of 128 floats; the tail past the last whole 128 is not read. */
__attribute__((target("avx512f"))) static float read_slice_avx512(const float *buf, size_t lo, size_t hi, size_t passes)
{
    __m512 a[8];
    for (int k = 0; k < 8; k++) a[k] = _mm512_setzero_ps();
    for (size_t p = 0; p < passes; p++)
        for (size_t i = lo; i + 128 <= hi; i += 128)
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) a[k] = _mm512_add_ps(a[k], _mm512_loadu_ps(buf + i + 16 * k));
    for (int k = 1; k < 8; k++) a[0] = _mm512_add_ps(a[0], a[k]);
    return _mm512_reduce_add_ps(a[0]);
}

__attribute__((target("avx2"))) static float read_slice_avx2(const float *buf, size_t lo, size_t hi, size_t passes)
{
    __m256 a[8];
    for (int k = 0; k < 8; k++) a[k] = _mm256_setzero_ps();
    for (size_t p = 0; p < passes; p++)
        for (size_t i = lo; i + 64 <= hi; i += 64)
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) a[k] = _mm256_add_ps(a[k], _mm256_loadu_ps(buf + i + 8 * k));
    for (int k = 1; k < 8; k++) a[0] = _mm256_add_ps(a[0], a[k]);
    float v[8];
    _mm256_storeu_ps(v, a[0]);
    return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

static float read_slice_sse(const float *buf, size_t lo, size_t hi, size_t passes)
{
    __m128 a[8];
    for (int k = 0; k < 8; k++) a[k] = _mm_setzero_ps();
    for (size_t p = 0; p < passes; p++)
        for (size_t i = lo; i + 32 <= hi; i += 32)
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) a[k] = _mm_add_ps(a[k], _mm_loadu_ps(buf + i + 4 * k));
    for (int k = 1; k < 8; k++) a[0] = _mm_add_ps(a[0], a[k]);
    float v[4];
    _mm_storeu_ps(v, a[0]);
    return v[0] + v[1] + v[2] + v[3];
}

/* Read bandwidth of a working set of `bytes`: each thread sums its own slice repeatedly. */
static double read_gbs(const float *buf, size_t bytes, int threads)
{
    size_t n = bytes / sizeof(float);
    size_t passes = ((size_t)256 << 20) / bytes; /* ~256 MiB touched per measurement */
    if (passes < 2) passes = 2;
    __builtin_cpu_init();
    float (*slice)(const float *, size_t, size_t, size_t) = __builtin_cpu_supports("avx512f") ? read_slice_avx512
                                                          : __builtin_cpu_supports("avx2")    ? read_slice_avx2
                                                                                              : read_slice_sse;
    double best = 0;
    volatile float sink = 0;
    for (int r = 0; r < 3; r++) {
        uint64_t t0 = fa_now_ns();
        float total = 0;
        size_t read = 0; /* the bytes the slices really read (whole 128-float steps) */
#pragma omp parallel num_threads(threads) reduction(+ : total, read)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            size_t lo = (n * (size_t)t / (size_t)nt) & ~(size_t)127, hi = n * (size_t)(t + 1) / (size_t)nt;
            total += slice(buf, lo, hi, passes);
            read += hi > lo ? (hi - lo) / 128 * 128 * sizeof(float) * passes : 0;
        }
        uint64_t t1 = fa_now_ns();
        sink += total;
        double gbs = (double)read / (double)(t1 - t0);
        if (gbs > best) best = gbs;
    }
    (void)sink;
    return best;
}

/* The FP32 peak: independent chains of fused multiply-adds, a = a * x + y, per thread — as many
 * as the FMA latency times the FMA ports needs to keep every port busy, with room to spare (4 x 2
 * on Intel since Skylake-SP and on AMD Zen 4/5, 5 x 2 on Zen 2/3: Agner Fog, "Instruction tables",
 * 2022; AMD, "Software Optimization Guide for the AMD Zen 5 Microarchitecture", 2024). Written
 * with the FMA intrinsics: in ISO C (-std=c11) GCC does not contract a * x + y into one
 * instruction, and the same loop written with vector operators compiled to a vmulps and a
 * dependent vaddps, a chain step of ~6 cycles instead of 4: the peak stored before 2026-12-07
 * (method 1) was 0.6-0.75x the machine's, and ResNet-50's convolutions ran at up to 140 % of it.
 * FA_CPU_PEAK_CHAINS_512 zmm accumulators (of 32 registers), FA_CPU_PEAK_CHAINS_256 ymm (of 16). */
#define FA_CPU_PEAK_CHAINS_512 16
#define FA_CPU_PEAK_CHAINS_256 12

__attribute__((target("avx512f"))) static void fma_chains_avx512(float *acc, float x, float y, uint64_t iters)
{
    __m512 a[FA_CPU_PEAK_CHAINS_512];
    for (int k = 0; k < FA_CPU_PEAK_CHAINS_512; k++) a[k] = _mm512_loadu_ps(acc + 16 * k);
    const __m512 vx = _mm512_set1_ps(x), vy = _mm512_set1_ps(y);
    for (uint64_t i = 0; i < iters; i++)
#pragma GCC unroll 16
        for (int k = 0; k < FA_CPU_PEAK_CHAINS_512; k++) a[k] = _mm512_fmadd_ps(a[k], vx, vy);
    for (int k = 0; k < FA_CPU_PEAK_CHAINS_512; k++) _mm512_storeu_ps(acc + 16 * k, a[k]);
}

__attribute__((target("avx2,fma"))) static void fma_chains_avx2(float *acc, float x, float y, uint64_t iters)
{
    __m256 a[FA_CPU_PEAK_CHAINS_256];
    for (int k = 0; k < FA_CPU_PEAK_CHAINS_256; k++) a[k] = _mm256_loadu_ps(acc + 8 * k);
    const __m256 vx = _mm256_set1_ps(x), vy = _mm256_set1_ps(y);
    for (uint64_t i = 0; i < iters; i++)
#pragma GCC unroll 16
        for (int k = 0; k < FA_CPU_PEAK_CHAINS_256; k++) a[k] = _mm256_fmadd_ps(a[k], vx, vy);
    for (int k = 0; k < FA_CPU_PEAK_CHAINS_256; k++) _mm256_storeu_ps(acc + 8 * k, a[k]);
}

/* Without FMA: a multiply and an add per step, 2 flops either way, 8 chains. */
static void fma_chains_scalar(float *acc, float x, float y, uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++)
        for (int k = 0; k < 8; k++) acc[k] = acc[k] * x + y;
}

typedef struct peak_kernel {
    void (*fn)(float *acc, float x, float y, uint64_t iters);
    int floats; /* accumulators x lanes: the floats one step updates */
    const char *isa;
} peak_kernel;

static peak_kernel pick_peak_kernel(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return (peak_kernel){fma_chains_avx512, 16 * FA_CPU_PEAK_CHAINS_512, "AVX-512 fused multiply-add (16 chains)"};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return (peak_kernel){fma_chains_avx2, 8 * FA_CPU_PEAK_CHAINS_256, "AVX2 fused multiply-add (12 chains)"};
    return (peak_kernel){fma_chains_scalar, 8, "scalar multiply-add (8 chains)"};
}

int fa_cpu_peak_chain(float *acc, int cap, float x, float y, uint64_t iters)
{
    peak_kernel k = pick_peak_kernel();
    if (!acc || cap < k.floats) return -1;
    k.fn(acc, x, y, iters);
    return k.floats;
}

static double peak_gflops(int threads, const char **isa)
{
    peak_kernel k = pick_peak_kernel();
    *isa = k.isa;
    const uint64_t iters = 10u << 20;
    double best = 0;
    volatile float sink = 0;
    for (int r = 0; r < 3; r++) {
        uint64_t t0 = fa_now_ns();
        float s = 0;
#pragma omp parallel num_threads(threads) reduction(+ : s)
        {
            float acc[16 * FA_CPU_PEAK_CHAINS_512];
            for (int i = 0; i < k.floats; i++) acc[i] = 0.001f * (float)i;
            k.fn(acc, 0.9999f, 0.0001f, iters); /* converges to 1: no overflow, no denormal */
            s += acc[0] + acc[k.floats - 1];
        }
        uint64_t t1 = fa_now_ns();
        sink += s;
        double flops = 2.0 * k.floats * (double)iters * threads;
        double g = flops / (double)(t1 - t0);
        if (g > best) best = g;
    }
    (void)sink;
    return best;
}

/* Executor dispatch cost per node: a chain of 256 Relu nodes on a 16-element tensor, so the
 * kernels do no work and the time is the executor's own per-node overhead. */
static double dispatch_ns(int threads)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("dispatch-probe");
    double result = -1;
    if (!ctx || !g || !fa_op_find("", "Relu")) goto done;
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t dims[1] = {16};
    int in = fa_graph_tensor(g, "x0");
    fa_tensor_set_shape(g->tensors[in], FA_DTYPE_FLOAT, 1, dims);
    fa_graph_add_input(ctx, g, in);
    char a[32], b[32];
    const int chain = 256;
    for (int i = 0; i < chain; i++) {
        snprintf(a, sizeof a, "x%d", i);
        snprintf(b, sizeof b, "x%d", i + 1);
        const char *ins[1] = {a}, *outs[1] = {b};
        if (!fa_graph_add_node(ctx, g, NULL, "Relu", "", 1, ins, 1, outs)) goto done;
    }
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, b));
    if (fa_graph_prepare(ctx, g, NULL)) goto done;
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = threads};
    if (fa_exec_create(ctx, g, &eo, &e)) goto done;
    if (!fa_exec_fill_inputs(ctx, e, 1)) {
        double best = 1e30;
        for (int r = 0; r < 50; r++) {
            uint64_t t0 = fa_now_ns();
            if (fa_exec_run(ctx, e, NULL)) break;
            uint64_t t1 = fa_now_ns();
            double per = (double)(t1 - t0) / chain;
            if (per < best) best = per;
        }
        if (best < 1e30) result = best;
    }
    fa_exec_free(e);
done:
    fa_graph_free(g);
    fa_ctx_free(ctx);
    return result;
}

fa_status fa_cpu_measure_ceilings(fa_ctx *ctx, int threads, fa_ceilings *out)
{
    if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads <= 0) threads = 1;
    fa_ceilings c;
    memset(&c, 0, sizeof c);
    c.threads = threads;
    /* the triad's working set is at least 4 x the last-level cache (STREAM's rule: each array
     * well beyond the caches; McCalpin, "STREAM", README), so the figure is DRAM's, not a slice
     * of a large shared L3 that other tenants happen to leave free */
    uint64_t llc = llc_bytes();
    size_t nf = TRIAD_MIN_FLOATS;
    while (nf < TRIAD_MAX_FLOATS && (uint64_t)nf * 3 * sizeof(float) < 4 * llc) nf *= 2;
    float *a = NULL, *b = NULL, *cc = NULL;
    for (;;) {
        if (!posix_memalign((void **)&a, 64, nf * sizeof(float)) && !posix_memalign((void **)&b, 64, nf * sizeof(float)) &&
            !posix_memalign((void **)&cc, 64, nf * sizeof(float)))
            break;
        free(a); free(b); free(cc);
        a = b = cc = NULL;
        if (nf <= TRIAD_MIN_FLOATS)
            return fa_ctx_error(ctx, FA_ERR_NOMEM, "roofline: cannot allocate 192 MiB for the STREAM triad");
        nf /= 2;
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < nf; i++) { a[i] = 0; b[i] = 1.0f; cc[i] = 2.0f; } /* first touch per thread */
    c.mem_bw_gbs = triad_gbs(a, b, cc, nf, threads, TRIAD_REPS);
    c.mem_bw_source = "measured";

    /* working-set sweep: 16 KiB .. one triad array, read-only: the cache-resident roofs */
    double prev_plateau = 0;
    int nl = 0;
    double bws[16];
    size_t sizes[16];
    int ns = 0;
    for (size_t ws = 16 << 10; ws <= nf * sizeof(float) && ns < 16; ws *= 4) {
        sizes[ns] = ws;
        bws[ns] = read_gbs(b, ws, threads);
        ns++;
    }
    /* a level = the last point of a plateau before a >30% drop; it is named after the smallest
     * data/unified cache (sysfs, per thread: the per-core size times the threads sharing the
     * sweep for private levels is not modelled) whose size holds the working set */
    for (int i = 0; i + 1 < ns && nl < 4; i++) {
        if (bws[i + 1] < 0.7 * bws[i] && bws[i] > 1.3 * c.mem_bw_gbs) {
            if (prev_plateau == 0 || bws[i] < 0.9 * prev_plateau) {
                c.cache[nl].working_set = sizes[i];
                c.cache[nl].bandwidth_gbs = bws[i];
                c.cache[nl].name = fa_cpu_cache_level_name(sizes[i]);
                prev_plateau = bws[i];
                nl++;
            }
        }
    }
    c.n_cache_levels = nl;
    free(a); free(b); free(cc);

    const char *isa = "";
    c.peak_gflops = peak_gflops(threads, &isa);
    c.peak_source = "measured";
    c.launch_ns = dispatch_ns(threads);
    c.launch_source = c.launch_ns >= 0 ? "measured" : "unavailable";
    if (c.launch_ns < 0) c.launch_ns = 0;
    c.latency_detail = "executor time per node, 256-node Relu chain";
    c.device_key = NULL; /* filled by the caller from its own storage */
    snprintf(c.detail, sizeof c.detail,
             "STREAM triad on 3 x %zu MiB float arrays (LLC %llu MiB), best of %d; read sweep 16 KiB..%zu MiB; "
             "%s peak per thread (" FA_CPU_CEILINGS_METHOD "); dispatch from a 256-node Relu chain; %d threads",
             nf * sizeof(float) >> 20, (unsigned long long)(llc >> 20), TRIAD_REPS, nf * sizeof(float) >> 20, isa,
             threads);
    *out = c;
    return FA_OK;
}

/* "L1".."L3" for the smallest data/unified cache of cpu0 (sysfs) whose size, times the threads
 * of the sweep for levels private to a core, holds `ws` bytes; "LLC" when sysfs says nothing. */
const char *fa_cpu_cache_level_name(uint64_t ws)
{
    static const char *const names[] = {"L1", "L2", "L3", "L4"};
    int lv[8], best = -1;
    uint64_t sz[8], best_size = 0;
    int n = cpu0_data_caches(lv, sz, 8);
    for (int i = 0; i < n; i++)
        if (sz[i] >= ws && (best < 0 || sz[i] < best_size)) {
            best = lv[i];
            best_size = sz[i];
        }
    return best > 0 ? names[best - 1] : "LLC";
}
