/* roofline/cuda_limits — per-compute-capability hardware limits, kept as data.
 * Sources: CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"
 * (threads/warps/blocks per SM, registers, shared memory per SM and per block, opt-in);
 * cuda_occupancy.h shipped with the CUDA toolkit (register allocation unit 256, max registers
 * per thread for allocation 256, 4 sub-partitions, shared-memory allocation granularity 256 B
 * before cc 8.0 and 128 B from it, carve-out steps, block-barrier slots, the 1 KiB per-block
 * reserve from cc 8.0 = cudaDeviceProp::reservedSharedMemPerBlock). */
#include "roofline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SRC "CUDA C++ Programming Guide, Technical Specifications per Compute Capability; cuda_occupancy.h"

static const fa_cuda_limits k_limits[] = {
    /* Volta V100 */
    {7, 0, "sm_70", 32, 1024, 2048, 64, 32, 65536, 65536, 256, 256, 4, 98304, 49152, 98304, 0, 256,
     6, {0, 8, 16, 32, 64, 96}, 2, SRC},
    /* Turing T4 / RTX 20xx */
    {7, 5, "sm_75", 32, 1024, 1024, 32, 16, 65536, 65536, 256, 256, 4, 65536, 49152, 65536, 0, 256,
     2, {32, 64}, 2, SRC},
    /* Ampere A100 */
    {8, 0, "sm_80", 32, 1024, 2048, 64, 32, 65536, 65536, 256, 256, 4, 167936, 49152, 166912, 1024, 128,
     8, {0, 8, 16, 32, 64, 100, 132, 164}, 2, SRC},
    /* Ampere GA10x (RTX 30xx, A10, A40) */
    {8, 6, "sm_86", 32, 1024, 1536, 48, 16, 65536, 65536, 256, 256, 4, 102400, 49152, 101376, 1024, 128,
     6, {0, 8, 16, 32, 64, 100}, 1, SRC},
    /* Ada (L4, L40, RTX 40xx) */
    {8, 9, "sm_89", 32, 1024, 1536, 48, 24, 65536, 65536, 256, 256, 4, 102400, 49152, 101376, 1024, 128,
     6, {0, 8, 16, 32, 64, 100}, 1, SRC},
    /* Hopper H100 / H200 */
    {9, 0, "sm_90", 32, 1024, 2048, 64, 32, 65536, 65536, 256, 256, 4, 233472, 49152, 232448, 1024, 128,
     10, {0, 8, 16, 32, 64, 100, 132, 164, 196, 228}, 2, SRC},
    /* Blackwell B200/GB200 (cc 10.0): the Programming Guide's table gives cc 10.0 the limits of
     * 9.0 (64 warps, 32 blocks, 64 K registers per SM, 228 KB shared memory per SM, 227 KB per
     * block opt-in) */
    {10, 0, "sm_100", 32, 1024, 2048, 64, 32, 65536, 65536, 256, 256, 4, 233472, 49152, 232448, 1024, 128,
     10, {0, 8, 16, 32, 64, 100, 132, 164, 196, 228}, 2, SRC},
};

int fa_cuda_limits_count(void) { return (int)(sizeof k_limits / sizeof k_limits[0]); }

const fa_cuda_limits *fa_cuda_limits_at(int i)
{
    return (i >= 0 && i < fa_cuda_limits_count()) ? &k_limits[i] : NULL;
}

const fa_cuda_limits *fa_cuda_limits_for(int major, int minor)
{
    for (int i = 0; i < fa_cuda_limits_count(); i++)
        if (k_limits[i].cc_major == major && k_limits[i].cc_minor == minor) return &k_limits[i];
    return NULL;
}

const fa_cuda_limits *fa_cuda_limits_for_arch(const char *arch)
{
    if (!arch) return NULL;
    int major = -1, minor = -1;
    if (!strncmp(arch, "sm_", 3) || !strncmp(arch, "compute_", 8)) arch = strchr(arch, '_') + 1;
    if (strchr(arch, '.')) {
        if (sscanf(arch, "%d.%d", &major, &minor) != 2) return NULL;
    } else {
        char *end;
        long v = strtol(arch, &end, 10);
        if (*end || v < 10) return NULL;
        major = (int)(v / 10);
        minor = (int)(v % 10);
    }
    return fa_cuda_limits_for(major, minor);
}

/* The table's per-SM limits of one arch stored as ceilings (no GPU needed). */
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
