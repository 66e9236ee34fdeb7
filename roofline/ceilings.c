/* roofline/ceilings — the device ceilings of any execution target, cached per device key in the
 * run database: read when all three are stored, else measured by the target's table
 * (fa_target_measure_ceilings) and stored with its cache levels and device facts. A
 * re-measurement keeps the best (highest) main-memory and cache-level bandwidth and FP32 peak of
 * the stored and the new one: a figure measured low is the machine's load, not the device (issue
 * 19). */
#include "roofline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double ceiling_value(const fa_ceiling *cs, size_t n, const char *name, bool *found)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cs[i].name, name)) {
            *found = true;
            return cs[i].value;
        }
    *found = false;
    return 0;
}

/* The cached ceilings of `key` when mem_bw, fp32_peak and the target's latency row are stored. */
static fa_status read_cached(fa_ctx *ctx, fa_store *st, const fa_target_iface *t, const char *key, int threads,
                             fa_ceilings *out, bool *found)
{
    *found = false;
    fa_arena *ar = fa_arena_create(4096);
    if (!ar) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_ceiling *cs = NULL;
    size_t n = 0;
    fa_status s = fa_store_get_ceilings(ctx, st, key, ar, &cs, &n);
    if (s) {
        fa_arena_free(ar);
        return s;
    }
    bool f1, f2, f3;
    fa_ceilings c;
    memset(&c, 0, sizeof c);
    c.mem_bw_gbs = ceiling_value(cs, n, "mem_bw", &f1);
    c.peak_gflops = ceiling_value(cs, n, "fp32_peak", &f2);
    c.launch_ns = ceiling_value(cs, n, fa_target_latency_ceiling(t), &f3);
    /* measured by an earlier method (the FP32 peak's detail lacks the current tag): measured again */
    const char *method = fa_target_ceilings_method(t);
    for (size_t i = 0; i < n && method && f2; i++)
        if (!strcmp(cs[i].name, "fp32_peak") && (!cs[i].detail || !strstr(cs[i].detail, method))) f2 = false;
    if (f1 && f2 && f3) {
        c.mem_bw_source = c.peak_source = c.launch_source = "measured (cached)";
        c.threads = threads;
        for (size_t i = 0; i < n && c.n_cache_levels < 4; i++)
            if (!strncmp(cs[i].name, "cache_", 6)) {
                fa_cache_level *cl = &c.cache[c.n_cache_levels++];
                cl->bandwidth_gbs = cs[i].value;
                cl->working_set = cs[i].detail ? strtoull(cs[i].detail, NULL, 10) : 0;
                const char *lv = fa_target_cache_level_name(t, cl->working_set);
                cl->name = lv ? lv : "cache";
            }
        for (size_t i = 0; i < n; i++)
            if (!strcmp(cs[i].name, "mem_bw") && cs[i].detail) snprintf(c.detail, sizeof c.detail, "%s", cs[i].detail);
        *out = c;
        *found = true;
    }
    fa_arena_free(ar);
    return FA_OK;
}

void fa_roofline_keep_best_bandwidth(const fa_ceilings *old, fa_ceilings *c)
{
    c->mem_bw_new_gbs = c->mem_bw_gbs;
    c->peak_new_gflops = c->peak_gflops;
    for (int i = 0; i < c->n_cache_levels; i++) c->cache[i].bandwidth_new_gbs = c->cache[i].bandwidth_gbs;
    if (!old) return;
    /* the FP32 peak the same way: measured low on a busy machine (the first `run` of a fresh
     * database under load warned of ops at 190 % of it); a stored peak of an earlier method is
     * never read back as `old` (read_cached) */
    if (old->peak_gflops > c->peak_gflops) {
        c->peak_gflops = old->peak_gflops;
        c->peak_source = "measured (the best kept across re-measurements)";
    }
    if (old->mem_bw_gbs > c->mem_bw_gbs) {
        c->mem_bw_gbs = old->mem_bw_gbs;
        c->mem_bw_source = "measured (the best kept across re-measurements)";
        snprintf(c->detail, sizeof c->detail, "%s", old->detail);
    }
    for (int i = 0; i < c->n_cache_levels && i < 4; i++)
        for (int j = 0; j < old->n_cache_levels; j++)
            if (old->cache[j].working_set == c->cache[i].working_set && old->cache[j].bandwidth_gbs > c->cache[i].bandwidth_gbs)
                c->cache[i].bandwidth_gbs = old->cache[j].bandwidth_gbs;
}

static fa_status store_measured(fa_ctx *ctx, fa_store *st, const fa_target_iface *t, const char *key, const fa_ceilings *c)
{
    int64_t now = (int64_t)time(NULL) * 1000000000LL;
    /* the peak's row carries the method tag even where the detail is a kept bandwidth's, measured
     * before (fa_roofline_keep_best_bandwidth): the peak is the current method's, now or kept */
    const char *method = fa_target_ceilings_method(t);
    char peak_detail[sizeof c->detail + 32];
    if (method && !strstr(c->detail, method)) snprintf(peak_detail, sizeof peak_detail, "%s (%s)", c->detail, method);
    else snprintf(peak_detail, sizeof peak_detail, "%s", c->detail);
    fa_ceiling rows[3] = {
        {key, "bandwidth", "mem_bw", c->mem_bw_gbs, "GB/s", "measured", now, c->detail},
        {key, "compute", "fp32_peak", c->peak_gflops, "GFLOP/s", "measured", now, peak_detail},
        {key, "latency", fa_target_latency_ceiling(t), c->launch_ns, "ns", c->launch_source, now, c->latency_detail},
    };
    /* one transaction: the cache levels are replaced as a set (a sweep that finds fewer levels
     * than an earlier one must not leave the earlier cache_N rows to be read back) */
    fa_status s = fa_store_begin(ctx, st);
    if (s) return s;
    s = fa_store_delete_ceilings(ctx, st, key, "cache_");
    for (int i = 0; i < 3 && !s; i++) s = fa_store_put_ceiling(ctx, st, &rows[i]);
    for (int i = 0; i < c->n_cache_levels && !s; i++) {
        char nm[32], det[64];
        snprintf(nm, sizeof nm, "cache_%d", i + 1);
        snprintf(det, sizeof det, "%llu", (unsigned long long)c->cache[i].working_set);
        fa_ceiling r = {key, "bandwidth", nm, c->cache[i].bandwidth_gbs, "GB/s", "measured", now, det};
        s = fa_store_put_ceiling(ctx, st, &r);
    }
    /* the machine's load when these were measured (issue 37: a peak cached from a busy moment
     * should say so): the 1-minute load average, getloadavg(3) */
    double load[1];
    if (!s && getloadavg(load, 1) == 1) {
        fa_ceiling r = {key, "context", "load_1min", load[0], "load", "measured", now, NULL};
        s = fa_store_put_ceiling(ctx, st, &r);
    }
    for (int i = 0; i < c->n_facts && !s; i++) {
        const struct fa_ceiling_fact *f = &c->facts[i];
        fa_ceiling r = {key, f->kind, f->name, f->value, f->unit, "device", now, f->detail};
        s = fa_store_put_ceiling(ctx, st, &r);
    }
    if (s) {
        fa_store_rollback(st);
        return s;
    }
    return fa_store_commit(ctx, st);
}

fa_status fa_roofline_ceilings(fa_ctx *ctx, fa_store *st, fa_target target, int threads, bool remeasure,
                               fa_ceilings *out)
{
    const fa_target_iface *t;
    fa_status s = fa_target_resolve(ctx, target, &t);
    if (s) return s;
    if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads <= 0) threads = 1;
    /* process-lifetime storage the returned key and name point at, one per target */
    static char keybuf[FA_TARGET_COUNT][300], namebuf[FA_TARGET_COUNT][256];
    char *key = keybuf[fa_target_id(t)], *name = namebuf[fa_target_id(t)];
    if ((s = fa_target_device_key(ctx, t, threads, key, sizeof keybuf[0]))) return s;
    fa_target_device dev;
    if ((s = fa_target_device_open(ctx, t, &dev))) return s;
    snprintf(name, sizeof namebuf[0], "%s", dev.name);
    fa_ceilings c, old;
    bool found = false, had = false;
    if (st && !remeasure && (s = read_cached(ctx, st, t, key, threads, &c, &found))) return s;
    if (!found) {
        /* a re-measurement: what is stored competes with what is measured now */
        if (st && remeasure && (s = read_cached(ctx, st, t, key, threads, &old, &had))) return s;
        if ((s = fa_target_measure_ceilings(ctx, t, threads, &c))) return s;
        c.threads = threads;
        fa_roofline_keep_best_bandwidth(had ? &old : NULL, &c);
        if (st && !fa_store_readonly(st) && (s = store_measured(ctx, st, t, key, &c))) return s;
    }
    c.device_key = key;
    c.device_name = name;
    *out = c;
    return FA_OK;
}

fa_status fa_roofline_cpu_ceilings(fa_ctx *ctx, fa_store *st, int threads, bool remeasure, fa_ceilings *out)
{
    return fa_roofline_ceilings(ctx, st, FA_TARGET_CPU, threads, remeasure, out);
}
