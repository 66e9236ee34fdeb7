/* runtime/ceilings — a device's ceilings as its target measures them (main-memory bandwidth, FP32
 * peak, per-kernel latency, cache levels, device facts); roofline/ caches them per device key. */
#ifndef FA_RUNTIME_CEILINGS_H
#define FA_RUNTIME_CEILINGS_H

#include "runtime/runtime.h"

typedef struct fa_cache_level {
    uint64_t working_set;       /* bytes of the sweep point that shows the level */
    double bandwidth_gbs;       /* measured read bandwidth at that working set, GB/s (1e9 B/s):
                                   the best kept across re-measurements (roofline/ceilings.c) */
    double bandwidth_new_gbs;   /* this call's own measurement when it measured, else 0 */
    const char *name;           /* "L1".."L3": the smallest cpu0 data cache (sysfs) holding the
                                   working set, "LLC" when sysfs says nothing */
} fa_cache_level;

typedef struct fa_ceilings {
    const char *device_key;     /* "cpu:<model>:<threads>t" or "cuda:<name>:sm_XY" */
    const char *device_name;
    int threads;                /* cpu threads measured with */
    double mem_bw_gbs;          /* main-memory (DRAM/HBM) bandwidth, GB/s: the best measured on
                                   this device key across re-measurements (roofline/ceilings.c) */
    double mem_bw_new_gbs;      /* this call's own measurement when it measured, else 0 */
    const char *mem_bw_source;  /* "measured" | "table" | "theoretical" */
    double peak_gflops;         /* FP32 peak, GFLOP/s: the best measured on this device key across
                                   re-measurements, as the bandwidths (a lower figure is the load) */
    double peak_new_gflops;     /* this call's own measurement when it measured, else 0 */
    const char *peak_source;
    double launch_ns;           /* per-kernel dispatch (cpu executor) / launch latency (cuda), ns */
    const char *launch_source;
    int n_cache_levels;
    fa_cache_level cache[4];
    char detail[512];           /* how each was obtained (sizes, kernels) */
    const char *latency_detail; /* how launch_ns was obtained (static string) */
    /* device facts stored beside the ceilings (cuda: clocks, SM count, L2 size) */
    int n_facts;
    struct fa_ceiling_fact {
        const char *kind;       /* "clock", "limit" */
        const char *name;       /* "sm_clock", ... */
        double value;
        const char *unit;       /* "kHz", "count", "bytes" */
        const char *detail;     /* where it comes from (a driver attribute) */
    } facts[6];
} fa_ceilings;

/* Measure t's ceilings with `threads` host threads (0 = all cores): main-memory bandwidth, FP32
 * peak, per-kernel latency (launch_ns, launch_source, latency_detail), cache levels and device
 * facts where the target has them. device_key / device_name are left NULL (the caller names
 * them). Seconds, not minutes. FA_ERR_UNSUPPORTED when t measures none. */
fa_status fa_target_measure_ceilings(fa_ctx *ctx, const fa_target_iface *t, int threads, fa_ceilings *out);
/* The stored name of launch_ns: "dispatch" (cpu), "launch" (cuda). */
const char *fa_target_latency_ceiling(const fa_target_iface *t);
/* The tag the detail of t's measured ceilings carries for the current measurement method ("method
 * 2" on cpu); NULL when t has none. Stored ceilings without it were measured by an earlier method
 * (roofline/ceilings.c measures them again). */
const char *fa_target_ceilings_method(const fa_target_iface *t);
/* The name of the cache level a working set of ws bytes shows ("L2"); NULL when t names none. */
const char *fa_target_cache_level_name(const fa_target_iface *t, uint64_t working_set);

#endif
