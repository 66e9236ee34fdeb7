/* roofline/occupancy — active blocks per SM for one launch configuration: the limits by warps,
 * registers (per sub-partition, allocation unit per warp), shared memory (reserve, granularity,
 * carve-out step) and the blocks-per-SM cap, plus block barriers on cc >= 9. The arithmetic
 * follows cuda_occupancy.h (CUDA toolkit): cudaOccMaxBlocksPerSMWarpsLimit, ...RegsLimit,
 * ...SmemLimit, ...BlockBarrierLimit, with partitioned global caching off. */
#include "roofline.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static int div_up(int x, int y) { return (x + y - 1) / y; }
static int round_up(int x, int y) { return div_up(x, y) * y; }

/* Smallest carve-out step >= bytes; -1 if none fits. */
static long carveout_align_up(const fa_cuda_limits *l, size_t bytes)
{
    for (int i = 0; i < l->n_carveouts; i++)
        if ((size_t)l->carveout_kib[i] * 1024 >= bytes) return (long)l->carveout_kib[i] * 1024;
    return -1;
}

fa_status fa_occupancy(fa_ctx *ctx, const fa_cuda_limits *l, const fa_occ_input *in, fa_occ_result *out)
{
    if (!l) return fa_ctx_error(ctx, FA_ERR_INPUT, "occupancy: no limits for this architecture");
    if (in->block_size <= 0)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "occupancy: block size %d must be positive", in->block_size);
    if (in->regs_per_thread < 0)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "occupancy: negative register count %d", in->regs_per_thread);
    if (in->carveout_percent > 100)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "occupancy: carve-out %d%% over 100", in->carveout_percent);
    fa_occ_result r;
    memset(&r, 0, sizeof r);

    /* warps */
    int warps_per_block = div_up(in->block_size, l->warp_size);
    int by_warps = in->block_size > l->max_threads_per_block ? 0 : l->max_warps_per_sm / warps_per_block;

    /* registers: allocated per warp in units of reg_alloc_unit, per sub-partition */
    int by_regs;
    int regs_per_warp = round_up(in->regs_per_thread * l->warp_size, l->reg_alloc_unit);
    r.regs_per_block_alloc = regs_per_warp * warps_per_block;
    int regs_assumed = regs_per_warp * round_up(warps_per_block, l->sub_partitions);
    if (l->regs_per_block < regs_assumed || l->regs_per_block < r.regs_per_block_alloc ||
        in->regs_per_thread > l->max_regs_per_thread)
        by_regs = 0;
    else if (regs_per_warp == 0)
        by_regs = INT_MAX;
    else {
        int warps_per_sub = (l->regs_per_sm / l->sub_partitions) / regs_per_warp;
        by_regs = warps_per_sub * l->sub_partitions / warps_per_block;
    }

    /* shared memory */
    int by_smem;
    size_t static_smem = in->static_smem + (size_t)l->smem_reserved_per_block;
    size_t total = static_smem + in->dynamic_smem;
    size_t alloc = (size_t)round_up((int)total, l->smem_alloc_granularity);
    r.smem_per_block_alloc = alloc;
    size_t per_block_limit = (size_t)((in->smem_optin && in->dynamic_smem + in->static_smem > (size_t)l->smem_per_block)
                                          ? l->smem_per_block_optin
                                          : l->smem_per_block) +
                             (size_t)l->smem_reserved_per_block;
    long pref;
    if (in->carveout_percent < 0) pref = carveout_align_up(l, (size_t)l->smem_per_sm);
    else pref = carveout_align_up(l, (size_t)in->carveout_percent * (size_t)l->smem_per_sm / 100);
    if (pref < 0) pref = l->smem_per_sm;
    if (alloc > per_block_limit) {
        by_smem = 0;
    } else {
        size_t sm_cfg = (size_t)pref;
        if (sm_cfg < alloc) { /* the driver raises the carve-out so at least one block fits */
            long up = carveout_align_up(l, alloc);
            sm_cfg = up < 0 ? (size_t)l->smem_per_sm : (size_t)up;
        }
        r.smem_per_sm_config = sm_cfg;
        by_smem = alloc > 0 ? (int)(sm_cfg / alloc) : INT_MAX;
    }

    int by_blocks = l->max_blocks_per_sm;
    int m = by_warps;
    if (by_regs < m) m = by_regs;
    if (by_smem < m) m = by_smem;
    if (by_blocks < m) m = by_blocks;

    int by_bar = INT_MAX;
    int barriers = in->block_barriers > 0 ? in->block_barriers : 1;
    if (l->cc_major >= 9 && barriers > 0) {
        by_bar = l->max_blocks_per_sm * l->barriers_per_block_slot / barriers;
        if (by_bar < m) m = by_bar;
    }
    r.blocks_by_warps = by_warps;
    r.blocks_by_registers = by_regs;
    r.blocks_by_smem = by_smem;
    r.blocks_by_blocks = by_blocks;
    r.blocks_by_barriers = by_bar;
    r.active_blocks = m;
    r.active_warps = m * warps_per_block;
    r.occupancy = (double)r.active_warps / l->max_warps_per_sm;
    if (by_warps == m) r.limiters |= FA_OCC_LIMIT_WARPS;
    if (by_regs == m) r.limiters |= FA_OCC_LIMIT_REGISTERS;
    if (by_smem == m) r.limiters |= FA_OCC_LIMIT_SHARED_MEMORY;
    if (by_blocks == m) r.limiters |= FA_OCC_LIMIT_BLOCKS;
    if (by_bar == m) r.limiters |= FA_OCC_LIMIT_BARRIERS;
    *out = r;
    return FA_OK;
}

const char *fa_occ_limiters_str(unsigned lim, char *buf, size_t cap)
{
    static const char *const names[] = {"warps", "registers", "shared memory", "blocks per SM", "barriers"};
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < 5; i++)
        if (lim & (1u << i)) {
            int w = snprintf(buf + off, cap - off, "%s%s", off ? ", " : "", names[i]);
            if (w < 0 || (size_t)w >= cap - off) break;
            off += (size_t)w;
        }
    return buf;
}
