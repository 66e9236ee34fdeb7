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

/* Read bandwidth of a working set of `bytes`: each thread sums its own slice repeatedly. */
static double read_gbs(const float *buf, size_t bytes, int threads)
{
    size_t n = bytes / sizeof(float);
    size_t passes = ((size_t)256 << 20) / bytes; /* ~256 MiB touched per measurement */
    if (passes < 2) passes = 2;
    double best = 0;
    volatile float sink = 0;
    for (int r = 0; r < 3; r++) {
        uint64_t t0 = fa_now_ns();
        float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            size_t lo = n * (size_t)t / (size_t)nt, hi = n * (size_t)(t + 1) / (size_t)nt;
            /* 4 independent 8-lane accumulators: loads, not the add latency, are the limit */
            typedef float v8 __attribute__((vector_size(32), aligned(4)));
            v8 a0 = {0}, a1 = a0, a2 = a0, a3 = a0;
            lo &= ~(size_t)31;
            for (size_t p = 0; p < passes; p++)
                for (size_t i = lo; i + 32 <= hi; i += 32) {
                    a0 += *(const v8 *)(buf + i);
                    a1 += *(const v8 *)(buf + i + 8);
                    a2 += *(const v8 *)(buf + i + 16);
                    a3 += *(const v8 *)(buf + i + 24);
                }
            v8 sum = a0 + a1 + a2 + a3;
            for (int k = 0; k < 8; k++) total += sum[k];
        }
        uint64_t t1 = fa_now_ns();
        sink += total;
        double gbs = (double)(bytes * passes) / (double)(t1 - t0);
        if (gbs > best) best = gbs;
    }
    (void)sink;
    return best;
}

typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));

/* 8 independent FMA chains so the FMA pipes never wait on a dependency (latency 4, 2 ports). */
__attribute__((target("avx2,fma"))) static double fma_avx2(uint64_t iters)
{
    v8f a0 = {0}, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    v8f x = {1.0001f, 1.0001f, 1.0001f, 1.0001f, 1.0001f, 1.0001f, 1.0001f, 1.0001f}, y = x * 0.9999f;
    for (uint64_t i = 0; i < iters; i++) {
        a0 = a0 * x + y; a1 = a1 * x + y; a2 = a2 * x + y; a3 = a3 * x + y;
        a4 = a4 * x + y; a5 = a5 * x + y; a6 = a6 * x + y; a7 = a7 * x + y;
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7));
    }
    v8f s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    return (double)s[0];
}

__attribute__((target("avx512f"))) static double fma_avx512(uint64_t iters)
{
    v16f a0 = {0}, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    v16f x = a0 + 1.0001f, y = a0 + 0.9999f;
    for (uint64_t i = 0; i < iters; i++) {
        a0 = a0 * x + y; a1 = a1 * x + y; a2 = a2 * x + y; a3 = a3 * x + y;
        a4 = a4 * x + y; a5 = a5 * x + y; a6 = a6 * x + y; a7 = a7 * x + y;
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7));
    }
    v16f s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    return (double)s[0];
}

static double fma_scalar(uint64_t iters)
{
    float a[8] = {0}, x = 1.0001f, y = 0.9999f;
    for (uint64_t i = 0; i < iters; i++)
        for (int k = 0; k < 8; k++) a[k] = a[k] * x + y;
    return a[0] + a[7];
}

static double peak_gflops(int threads, const char **isa)
{
    int lanes;
    double (*fn)(uint64_t);
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) { fn = fma_avx512; lanes = 16; *isa = "AVX-512 FMA"; }
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) { fn = fma_avx2; lanes = 8; *isa = "AVX2 FMA"; }
    else { fn = fma_scalar; lanes = 1; *isa = "scalar"; }
    const uint64_t iters = 20u << 20;
    double best = 0;
    volatile double sink = 0;
    for (int r = 0; r < 3; r++) {
        uint64_t t0 = fa_now_ns();
        double s = 0;
#pragma omp parallel num_threads(threads) reduction(+ : s)
        s += fn(iters);
        uint64_t t1 = fa_now_ns();
        sink += s;
        double flops = 2.0 * 8 * lanes * (double)iters * threads;
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
             "%s peak with 8 independent chains per thread; dispatch from a 256-node Relu chain; %d threads",
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
