/* roofline/place — kernel placement on the roofline (Williams, Waterman, Patterson, CACM 2009). */
#include "roofline.h"

#include <string.h>

const char *fa_bound_name(fa_bound b)
{
    switch (b) {
    case FA_BOUND_MEMORY: return "memory";
    case FA_BOUND_COMPUTE: return "compute";
    case FA_BOUND_LATENCY: return "latency";
    default: return "unknown";
    }
}

double fa_roofline_mem_roof(const fa_ceilings *c, double ws)
{
    double bw = c->mem_bw_gbs, best_ws = 0;
    for (int i = 0; i < c->n_cache_levels && i < 4; i++) {
        const fa_cache_level *l = &c->cache[i];
        if (l->bandwidth_gbs > 0 && ws > 0 && ws <= (double)l->working_set && (best_ws == 0 || l->working_set < best_ws)) {
            best_ws = (double)l->working_set;
            bw = l->bandwidth_gbs;
        }
    }
    return bw;
}

void fa_roofline_place(const fa_ceilings *c, uint64_t flops, uint64_t bytes, uint64_t dur_ns, fa_placement *out)
{
    fa_placement p;
    memset(&p, 0, sizeof p);
    double d = dur_ns ? (double)dur_ns : 1.0;
    p.intensity = bytes ? (double)flops / (double)bytes : 0.0;
    p.achieved_gbs = (double)bytes / d;    /* bytes/ns = GB/s */
    p.achieved_gflops = (double)flops / d; /* FLOP/ns = GFLOP/s */
    /* a kernel whose bytes fit a measured cache level is held to that level's roof, not DRAM's */
    double bw = fa_roofline_mem_roof(c, (double)bytes);
    double mem_roof = p.intensity * bw;
    p.roof_gflops = mem_roof < c->peak_gflops ? mem_roof : c->peak_gflops;
    double ridge = bw > 0 ? c->peak_gflops / bw : 0;
    if (c->launch_ns > 0 && (double)dur_ns < 2.0 * c->launch_ns) p.bound = FA_BOUND_LATENCY;
    else if (flops == 0 || p.intensity < ridge) p.bound = FA_BOUND_MEMORY;
    else p.bound = FA_BOUND_COMPUTE;
    if (p.bound == FA_BOUND_COMPUTE || (flops > 0 && p.roof_gflops > 0 && p.intensity >= ridge))
        p.pct_of_roof = p.roof_gflops > 0 ? 100.0 * p.achieved_gflops / p.roof_gflops : 0;
    else
        p.pct_of_roof = bw > 0 ? 100.0 * p.achieved_gbs / bw : 0;
    *out = p;
}
