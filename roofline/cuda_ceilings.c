/* roofline/cuda_ceilings — GPU ceilings measured with our own kernels (triad, FMA chains, empty
 * kernel) and stored per device with its clocks; theoretical per-SM limits without a GPU.
 * Compiled to nothing without the CUDA toolkit (this file sits outside a cuda/ folder). */
#ifdef FA_HAVE_CUDA
#include "roofline/cuda_ceilings.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cuda/cuda.h"

fa_status fa_roofline_cuda_key(fa_ctx *ctx, int ordinal, char *buf, size_t cap)
{
    fa_cuda_device_info di;
    fa_status st = fa_cuda_device_query(ctx, ordinal, &di);
    if (st) return st;
    snprintf(buf, cap, "cuda:%s:sm_%d%d", di.name, di.cc_major, di.cc_minor);
    return FA_OK;
}

typedef struct meas {
    cudaStream_t s;
    cudaEvent_t e0, e1;
    fa_cuda_module *mod;
    void *triad, *fma, *empty;
    float *a, *b, *c;
} meas;

static void meas_free(meas *m)
{
    if (m->s) cudaStreamSynchronize(m->s);
    if (m->a) cudaFree(m->a);
    if (m->b) cudaFree(m->b);
    if (m->c) cudaFree(m->c);
    if (m->e0) cudaEventDestroy(m->e0);
    if (m->e1) cudaEventDestroy(m->e1);
    fa_cuda_module_unload(m->mod);
    if (m->s) cudaStreamDestroy(m->s);
}

/* time one launch of fn (ms) with events */
static fa_status timed(fa_ctx *ctx, meas *m, void *fn, unsigned grid, unsigned block, void **args, float *ms)
{
    unsigned g[3] = {grid, 1, 1}, b[3] = {block, 1, 1};
    fa_status st = FA_CUDA_CHECK(ctx, cudaEventRecord(m->e0, m->s));
    if (!st) st = fa_cuda_launch(ctx, fn, g, b, 0, m->s, args);
    if (!st) st = FA_CUDA_CHECK(ctx, cudaEventRecord(m->e1, m->s));
    if (!st) st = FA_CUDA_CHECK(ctx, cudaEventSynchronize(m->e1));
    if (!st) st = FA_CUDA_CHECK(ctx, cudaEventElapsedTime(ms, m->e0, m->e1));
    return st;
}

fa_status fa_roofline_measure_cuda(fa_ctx *ctx, int ordinal, fa_ceilings *out)
{
    fa_cuda_device_info di;
    fa_status st = fa_cuda_device_query(ctx, ordinal, &di);
    if (st) return st;
    meas m = {0};
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d", di.cc_major, di.cc_minor);
    if ((st = FA_CUDA_CHECK(ctx, cudaSetDevice(ordinal)))) return st;
    if ((st = FA_CUDA_CHECK(ctx, cudaFree(0)))) return st;
    if ((st = FA_CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&m.s, cudaStreamNonBlocking)))) goto done;
    if ((st = FA_CUDA_CHECK(ctx, cudaEventCreate(&m.e0)))) goto done;
    if ((st = FA_CUDA_CHECK(ctx, cudaEventCreate(&m.e1)))) goto done;
    if ((st = fa_cuda_kernels_module(ctx, arch, &m.mod))) goto done;
    if ((st = fa_cuda_module_function(ctx, m.mod, "fa_triad", &m.triad))) goto done;
    if ((st = fa_cuda_module_function(ctx, m.mod, "fa_fma_peak", &m.fma))) goto done;
    if ((st = fa_cuda_module_function(ctx, m.mod, "fa_empty", &m.empty))) goto done;

    /* HBM triad over arrays far larger than L2 */
    size_t bytes = (size_t)256 << 20;
    if (di.l2_bytes > 0 && (size_t)di.l2_bytes * 8 > bytes) bytes = (size_t)di.l2_bytes * 8;
    long long n = (long long)(bytes / sizeof(float));
    if ((st = FA_CUDA_CHECK(ctx, cudaMalloc((void **)&m.a, bytes)))) goto done;
    if ((st = FA_CUDA_CHECK(ctx, cudaMalloc((void **)&m.b, bytes)))) goto done;
    if ((st = FA_CUDA_CHECK(ctx, cudaMalloc((void **)&m.c, bytes)))) goto done;
    if ((st = FA_CUDA_CHECK(ctx, cudaMemsetAsync(m.b, 0, bytes, m.s)))) goto done;
    if ((st = FA_CUDA_CHECK(ctx, cudaMemsetAsync(m.c, 0, bytes, m.s)))) goto done;
    float sc = 3.f, best = 1e30f, ms;
    void *targs[] = {&m.a, &m.b, &m.c, &sc, &n};
    unsigned tgrid = (unsigned)(di.sm_count > 0 ? di.sm_count * 8 : 1024);
    for (int r = 0; r < 12; r++) {
        if ((st = timed(ctx, &m, m.triad, tgrid, 256, targs, &ms))) goto done;
        if (r >= 2 && ms < best) best = ms; /* first two warm up */
    }
    double bw = 12.0 * (double)n / (best * 1e6); /* bytes / (ms * 1e6) = GB/s */

    /* FP32 FMA peak */
    int iters = 4096;
    float seed = 1.f;
    void *fargs[] = {&m.a, &iters, &seed};
    unsigned fgrid = (unsigned)(di.sm_count > 0 ? di.sm_count * 8 : 1024);
    float fbest = 1e30f;
    for (int r = 0; r < 6; r++) {
        if ((st = timed(ctx, &m, m.fma, fgrid, 256, fargs, &ms))) goto done;
        if (r >= 1 && ms < fbest) fbest = ms;
    }
    double flops = (double)fgrid * 256.0 * iters * 16 * 8 * 2;
    double gflops = flops / (fbest * 1e6);

    /* launch latency: back-to-back, then synchronized round trips */
    unsigned one[3] = {1, 1, 1}, th[3] = {1, 1, 1};
    for (int i = 0; i < 50; i++)
        if ((st = fa_cuda_launch(ctx, m.empty, one, th, 0, m.s, NULL))) goto done;
    if ((st = FA_CUDA_CHECK(ctx, cudaStreamSynchronize(m.s)))) goto done;
    uint64_t t0 = fa_now_ns();
    for (int i = 0; i < 2000; i++)
        if ((st = fa_cuda_launch(ctx, m.empty, one, th, 0, m.s, NULL))) goto done;
    if ((st = FA_CUDA_CHECK(ctx, cudaStreamSynchronize(m.s)))) goto done;
    double launch_ns = (double)(fa_now_ns() - t0) / 2000.0;
    t0 = fa_now_ns();
    for (int i = 0; i < 200; i++) {
        if ((st = fa_cuda_launch(ctx, m.empty, one, th, 0, m.s, NULL))) goto done;
        if ((st = FA_CUDA_CHECK(ctx, cudaStreamSynchronize(m.s)))) goto done;
    }
    double sync_ns = (double)(fa_now_ns() - t0) / 200.0;

    fa_ceilings c;
    memset(&c, 0, sizeof c);
    c.device_name = NULL; /* the caller keeps the name (di is local) */
    c.mem_bw_gbs = bw;
    c.mem_bw_source = "measured";
    c.peak_gflops = gflops;
    c.peak_source = "measured";
    c.launch_ns = launch_ns;
    c.launch_source = "measured";
    snprintf(c.detail, sizeof c.detail,
             "%s (%s, %d SMs, sm clock %d kHz, mem clock %d kHz, %d-bit bus, L2 %d B): triad on 3 x %zu MiB, "
             "best of 10; FMA peak %u blocks x 256 threads x 8 chains; launch %.0f ns back-to-back, %.0f ns "
             "launch+sync",
             di.name, arch, di.sm_count, di.sm_clock_khz, di.mem_clock_khz, di.mem_bus_bits, di.l2_bytes,
             bytes >> 20, fgrid, launch_ns, sync_ns);
    *out = c;
done:
    meas_free(&m);
    return st;
}

static double find(const fa_ceiling *cs, size_t n, const char *name, bool *ok)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cs[i].name, name)) return cs[i].value;
    *ok = false;
    return 0;
}

fa_status fa_roofline_cuda_ceilings(fa_ctx *ctx, fa_store *st, int ordinal, bool remeasure, fa_ceilings *out)
{
    static char keybuf[300], namebuf[256];
    fa_cuda_device_info di;
    fa_status s = fa_cuda_device_query(ctx, ordinal, &di);
    if (s) return s;
    snprintf(keybuf, sizeof keybuf, "cuda:%s:sm_%d%d", di.name, di.cc_major, di.cc_minor);
    snprintf(namebuf, sizeof namebuf, "%s", di.name);
    if (st && !remeasure) {
        fa_arena *ar = fa_arena_create(4096);
        fa_ceiling *cs = NULL;
        size_t n = 0;
        if (!ar) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        s = fa_store_get_ceilings(ctx, st, keybuf, ar, &cs, &n);
        if (s) {
            fa_arena_free(ar);
            return s;
        }
        bool ok = true;
        fa_ceilings c;
        memset(&c, 0, sizeof c);
        c.mem_bw_gbs = find(cs, n, "mem_bw", &ok);
        c.peak_gflops = find(cs, n, "fp32_peak", &ok);
        c.launch_ns = find(cs, n, "launch", &ok);
        if (ok) {
            c.device_key = keybuf;
            c.device_name = namebuf;
            c.mem_bw_source = c.peak_source = c.launch_source = "measured (cached)";
            for (size_t i = 0; i < n; i++)
                if (!strcmp(cs[i].name, "mem_bw") && cs[i].detail) snprintf(c.detail, sizeof c.detail, "%s", cs[i].detail);
            fa_arena_free(ar);
            *out = c;
            return FA_OK;
        }
        fa_arena_free(ar);
    }
    fa_ceilings c;
    s = fa_roofline_measure_cuda(ctx, ordinal, &c);
    if (s) return s;
    c.device_key = keybuf;
    c.device_name = namebuf;
    if (st && !fa_store_readonly(st)) {
        int64_t now = (int64_t)time(NULL) * 1000000000LL;
        fa_ceiling rows[] = {
            {keybuf, "bandwidth", "mem_bw", c.mem_bw_gbs, "GB/s", "measured", now, c.detail},
            {keybuf, "compute", "fp32_peak", c.peak_gflops, "GFLOP/s", "measured", now, c.detail},
            {keybuf, "latency", "launch", c.launch_ns, "ns", "measured", now, "2000 back-to-back empty-kernel launches"},
            {keybuf, "clock", "sm_clock", di.sm_clock_khz, "kHz", "device", now, "CU_DEVICE_ATTRIBUTE_CLOCK_RATE"},
            {keybuf, "clock", "mem_clock", di.mem_clock_khz, "kHz", "device", now, "CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE"},
            {keybuf, "limit", "sm_count", di.sm_count, "count", "device", now, "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"},
            {keybuf, "limit", "l2_bytes", di.l2_bytes, "bytes", "device", now, "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE"},
        };
        for (size_t i = 0; i < sizeof rows / sizeof rows[0] && !s; i++) s = fa_store_put_ceiling(ctx, st, &rows[i]);
        if (s) return s;
    }
    *out = c;
    return FA_OK;
}

fa_status fa_roofline_cuda_theoretical(fa_ctx *ctx, fa_store *st, const char *arch, int *n_stored)
{
    const fa_cuda_limits *l = fa_cuda_limits_for_arch(arch);
    if (!l) return fa_ctx_error(ctx, FA_ERR_INPUT, "arch '%s' is not in the CUDA limits table", arch);
    char key[64];
    snprintf(key, sizeof key, "cuda:theoretical:%s", l->arch);
    int64_t now = (int64_t)time(NULL) * 1000000000LL;
    struct {
        const char *name;
        double v;
        const char *unit;
    } rows[] = {
        {"max_threads_per_sm", l->max_threads_per_sm, "count"}, {"max_warps_per_sm", l->max_warps_per_sm, "count"},
        {"max_blocks_per_sm", l->max_blocks_per_sm, "count"},   {"regs_per_sm", l->regs_per_sm, "count"},
        {"max_regs_per_thread", l->max_regs_per_thread, "count"}, {"smem_per_sm", l->smem_per_sm, "bytes"},
        {"smem_per_block_optin", l->smem_per_block_optin, "bytes"},
    };
    int k = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        fa_ceiling c = {key, "limit", rows[i].name, rows[i].v, rows[i].unit, "theoretical", now, l->source};
        if (st) {
            fa_status s = fa_store_put_ceiling(ctx, st, &c);
            if (s) return s;
        }
        k++;
    }
    if (n_stored) *n_stored = k;
    return FA_OK;
}
#endif
