/* roofline — device ceilings (measured on cpu, tabled + measured on cuda), the CUDA occupancy
 * calculator, and roofline placement of kernels (arithmetic intensity, achieved bandwidth and
 * FLOP/s, bound). */
#ifndef FA_ROOFLINE_H
#define FA_ROOFLINE_H

#include "core/core.h"
#include "runtime/ceilings.h"
#include "store/store.h"

/* ---- CUDA per-compute-capability limits (data, with sources) ---- */

typedef struct fa_cuda_limits {
    int cc_major, cc_minor;
    const char *arch;                /* "sm_90" */
    int warp_size;                   /* threads */
    int max_threads_per_block;
    int max_threads_per_sm;
    int max_warps_per_sm;
    int max_blocks_per_sm;
    int regs_per_sm;                 /* 32-bit registers */
    int regs_per_block;
    int max_regs_per_thread;         /* allocation limit (cuda_occupancy.h: 256 for cc >= 7) */
    int reg_alloc_unit;              /* registers per warp allocation granule */
    int sub_partitions;              /* SM sub-partitions (register file banks) */
    int smem_per_sm;                 /* bytes, the largest carve-out */
    int smem_per_block;              /* bytes, default per-block limit (48 KiB) */
    int smem_per_block_optin;        /* bytes, opt-in limit */
    int smem_reserved_per_block;     /* bytes the driver reserves per block (1 KiB from cc 8.0) */
    int smem_alloc_granularity;      /* bytes */
    int n_carveouts;
    int carveout_kib[12];            /* shared-memory carve-out steps, KiB, ascending */
    int barriers_per_block_slot;     /* block barriers per resident block slot (1 or 2) */
    const char *source;              /* where the numbers come from */
} fa_cuda_limits;

/* Limits for cc major.minor (7.0, 7.5, 8.0, 8.6, 8.9, 9.0, 10.0); NULL if not tabled. */
const fa_cuda_limits *fa_cuda_limits_for(int major, int minor);
/* Parse "sm_90" / "90" / "9.0"; NULL if unknown. */
const fa_cuda_limits *fa_cuda_limits_for_arch(const char *arch);
int fa_cuda_limits_count(void);
const fa_cuda_limits *fa_cuda_limits_at(int i);

/* ---- occupancy calculator (a port of the logic of CUDA's cuda_occupancy.h,
 *      cudaOccMaxActiveBlocksPerMultiprocessor, for one kernel launch) ---- */

typedef struct fa_occ_input {
    int block_size;          /* threads per block */
    int regs_per_thread;     /* from ptxas (-v) or cuFuncGetAttribute(NUM_REGS) */
    size_t static_smem;      /* bytes per block */
    size_t dynamic_smem;     /* bytes per block */
    int carveout_percent;    /* preferred shared-memory carve-out 0..100, -1 = default (max shared) */
    bool smem_optin;         /* kernel opted in to > 48 KiB dynamic shared memory */
    int block_barriers;      /* named barriers used per block (cc >= 9 only limits), default 1 */
} fa_occ_input;

enum {
    FA_OCC_LIMIT_WARPS = 1u << 0,
    FA_OCC_LIMIT_REGISTERS = 1u << 1,
    FA_OCC_LIMIT_SHARED_MEMORY = 1u << 2,
    FA_OCC_LIMIT_BLOCKS = 1u << 3,
    FA_OCC_LIMIT_BARRIERS = 1u << 4,
};

typedef struct fa_occ_result {
    int active_blocks;          /* resident blocks per SM */
    int active_warps;           /* per SM */
    double occupancy;           /* active_warps / max_warps_per_sm, 0..1 */
    unsigned limiters;          /* FA_OCC_LIMIT_* bits of every factor equal to the minimum */
    int blocks_by_warps, blocks_by_registers, blocks_by_smem, blocks_by_blocks, blocks_by_barriers;
    int regs_per_block_alloc;   /* registers allocated per block */
    size_t smem_per_block_alloc;/* bytes allocated per block (reserve + granularity included) */
    size_t smem_per_sm_config;  /* carve-out the calculator assumed, bytes */
} fa_occ_result;

/* Active blocks per SM and occupancy. FA_ERR_INPUT for block_size <= 0 or > limits. A
 * configuration that cannot launch (too many registers/threads/shared memory per block)
 * returns FA_OK with active_blocks 0 and the limiter set. */
fa_status fa_occupancy(fa_ctx *ctx, const fa_cuda_limits *lim, const fa_occ_input *in, fa_occ_result *out);
/* Human-readable limiter list, e.g. "registers, shared memory". */
const char *fa_occ_limiters_str(unsigned limiters, char *buf, size_t cap);

/* ---- device ceilings ---- */

/* fa_ceilings and fa_cache_level: runtime/ceilings.h (each target measures its own). */

/* The ceilings of `target` (AUTO: fa_target_resolve) with `threads` host threads (0 = all
 * cores), from the run database (cached per device key: fa_target_device_key) or measured
 * by the target (fa_target_measure_ceilings, documented per target: cpu STREAM triad on
 * 3 x 64 MiB, cache sweep, FMA peak, executor dispatch; cuda triad beyond 8 x L2, FMA chains,
 * empty-kernel launches) and stored there with the cache levels and device facts when absent or
 * `remeasure`. A re-measurement keeps the higher of the stored and the new main-memory and
 * cache-level bandwidths (the same machine measured 71.4 and 23.5 GB/s minutes apart under
 * load: the lower figure is the load, not the device) and reports the new one in mem_bw_new_gbs
 * / cache[i].bandwidth_new_gbs; peak and dispatch are the new ones. st may be NULL (measure,
 * don't cache). device_key and device_name point at
 * storage that lives as long as the process. Errors: the target's (FA_ERR_UNSUPPORTED "no CUDA
 * driver" ...), the store's. */
fa_status fa_roofline_ceilings(fa_ctx *ctx, fa_store *st, fa_target target, int threads, bool remeasure,
                               fa_ceilings *out);
/* Keep the best bandwidth and FP32 peak (what fa_roofline_ceilings does on a re-measurement): c
 * was just measured, old (may be NULL) is what the database held for the same device key. Sets
 * c->mem_bw_new_gbs, c->peak_new_gflops and each c->cache[i].bandwidth_new_gbs to the new
 * measurement; where old's main-memory bandwidth, its FP32 peak, or its bandwidth of a cache level
 * at the same sweep working set, is higher, c takes old's figure (main memory: also its detail;
 * mem_bw_source / peak_source say so). The dispatch cost and the cache levels found stay the new
 * ones. GB/s, GFLOP/s. */
void fa_roofline_keep_best_bandwidth(const fa_ceilings *old, fa_ceilings *c);
/* fa_roofline_ceilings on the cpu target. */
fa_status fa_roofline_cpu_ceilings(fa_ctx *ctx, fa_store *st, int threads, bool remeasure, fa_ceilings *out);

/* Without a GPU: store the per-SM limits of `arch` ("sm_90") from the limits table as ceilings
 * of kind "limit", source "theoretical", under "cuda:theoretical:<arch>". FA_ERR_INPUT for an
 * arch not tabled. Returns the number stored in *n_stored (may be NULL). st may be NULL. */
fa_status fa_roofline_cuda_theoretical(fa_ctx *ctx, fa_store *st, const char *arch, int *n_stored);

/* ---- kernel placement ---- */

typedef enum fa_bound {
    FA_BOUND_MEMORY = 0,
    FA_BOUND_COMPUTE = 1,
    FA_BOUND_LATENCY = 2,   /* shorter than a few dispatch overheads: fixed cost dominates */
    FA_BOUND_COUNT          /* stored in the database: only grows at its end */
} fa_bound;
const char *fa_bound_name(fa_bound b);

typedef struct fa_placement {
    double intensity;        /* FLOP / byte (bytes = read + written); 0 when no FLOPs */
    double achieved_gbs;     /* bytes / duration, GB/s */
    double achieved_gflops;  /* FLOPs / duration, GFLOP/s */
    double roof_gflops;      /* min(peak, intensity * bandwidth): attainable at this intensity */
    double pct_of_roof;      /* achieved as % of attainable (FLOP/s for compute, bytes/s for memory) */
    fa_bound bound;
} fa_placement;

/* ---- theoretical GPU roofs (data sheets) ---- */

typedef struct fa_gpu_roofs {
    double hbm_gbs;             /* DRAM (HBM/GDDR) bandwidth, GB/s; 0 unknown */
    double fp32_gflops;         /* FP32 peak without tensor cores / matrix cores, GFLOP/s; 0 unknown */
    double tensor_gflops;       /* dense BF16/FP16 tensor-core (matrix-core) peak, GFLOP/s; 0 unknown */
    const char *label;          /* the data-sheet row ("A100 80GB SXM"), NULL when not tabled */
    const char *arch;           /* the vendor's architecture id: "sm_90", "gfx942"; NULL unknown */
    const char *family;         /* "Hopper", "CDNA3", ...; NULL unknown */
    int units;                  /* SMs (NVIDIA) / compute units (AMD) of the data-sheet part, 0 unknown */
    double llc_mb;              /* last-level cache before DRAM, MB (L2; AMD CDNA3's Infinity Cache); 0 unknown */
} fa_gpu_roofs;

/* The GPU's vendor by its name: AMD (Instinct, Radeon, "AMD ..."), NVIDIA, or unknown. */
typedef enum fa_gpu_vendor { FA_GPU_VENDOR_UNKNOWN = 0, FA_GPU_VENDOR_NVIDIA, FA_GPU_VENDOR_AMD } fa_gpu_vendor;
fa_gpu_vendor fa_gpu_vendor_of(const char *device_name);
/* What the vendor calls its multiprocessors: "SMs" (NVIDIA, unknown) or "compute units" (AMD). */
const char *fa_gpu_units_name(fa_gpu_vendor v);

/* Theoretical roofs of a GPU by its name (memory size tells A100 40/80 GB apart), from the
 * vendors' data sheets (NVIDIA A100/H100/H200/B200/V100/T4/L4/A10/L40S/RTX 2080 Ti, AMD Instinct
 * MI325X/MI300X/MI250X/MI210: see roofline/gpu_roofs.c for each figure), with the part's
 * architecture in the vendor's own terms. False and zeros when the device is not tabled. Never
 * measured: label them theoretical. */
bool fa_gpu_roofs_for(const char *device_name, uint64_t total_mem_bytes, fa_gpu_roofs *out);
/* What a trace says of a device (Kineto deviceProperties, nsys TARGET_INFO_GPU); 0 / NULL unknown. */
typedef struct fa_gpu_props {
    const char *name;
    int cc_major, cc_minor;     /* CUDA compute capability, or HIP's (9.4 for gfx942) */
    int units;                  /* SMs / compute units */
    int warp_size;              /* 32 NVIDIA, 64 AMD CDNA */
    uint64_t total_mem_bytes;
} fa_gpu_props;
/* The vendor and data-sheet row of a device from all of that: by name (fa_gpu_vendor_of,
 * fa_gpu_roofs_for), and where ROCm does not name the part ("", "AMD Radeon Graphics") by its
 * wavefront of 64 (AMD) and its HIP compute capability, compute units and memory when exactly one
 * tabled part has them (gfx942 with 304 CUs: MI300X at 192 GB, MI325X at 256 GB; gfx90a with
 * 104 / 110 CUs and 64 GB: an MI210 or MI250 GCD, an MI250X GCD), else the architecture alone
 * (gfx942, gfx950, gfx90a) with no roofs. *out as fa_gpu_roofs_for's (label NULL: not tabled). */
void fa_gpu_identify(const fa_gpu_props *device, fa_gpu_vendor *vendor, fa_gpu_roofs *out);
/* Theoretical HBM bandwidth of a GPU by name (and memory size for A100 40/80 GB), GB/s; 0 when
 * not tabled (fa_gpu_roofs_for's table). */
double fa_gpu_hbm_gbs(const char *device_name, uint64_t total_mem_bytes, const char **label);
/* Compute capability guessed from a device name (A100 8.0, V100 7.0, RTX 20xx/T4 7.5,
 * RTX 30xx 8.6, RTX 40xx/L4 8.9, H100/H200 9.0); false when unknown (or not NVIDIA). */
bool fa_gpu_cc_from_name(const char *device_name, int *major, int *minor);


/* ---- a GPU to plan for without one (issue 40) ---- */

/* What one kernel launch costs on a GPU when no device is measured, ns: the median
 * cudaLaunchKernel call of real PyTorch-profiler traces on A100 and H100 (HolisticTraceAnalysis'
 * and TraceLens' test traces: 4.0, 4.6, 4.7, 6.0 and 9.7 us; the lowest taken). A kernel whose
 * work on the roofs is shorter than this leaves the GPU idle until the host launches the next:
 * on the timeline it lasts one launch. */
#define FA_GPU_LAUNCH_NS 4000.0

/* A GPU planned for from its data sheet: its roofs and its architecture's occupancy limits. */
typedef struct fa_gpu_plan_dev {
    fa_gpu_roofs roofs;               /* label, arch, HBM GB/s, FP32 GFLOP/s, SMs */
    const fa_cuda_limits *limits;     /* the architecture's per-SM limits (static) */
    double launch_ns;                 /* FA_GPU_LAUNCH_NS */
} fa_gpu_plan_dev;

/* The device named by `spec`: an architecture ("sm_90", "90", "9.0": the data-center part of that
 * generation, e.g. sm_80 A100 80GB SXM, sm_90 H100 SXM, sm_100 B200) or an NVIDIA part's name
 * ("H100 PCIe", "A100 40GB", "L4": fa_gpu_roofs_for's table). NULL or "" = sm_90. FA_ERR_INPUT
 * naming the accepted values for anything else (AMD parts included: no CUDA target there). */
fa_status fa_gpu_plan_device(fa_ctx *ctx, const char *spec, fa_gpu_plan_dev *out);

/* One kernel's time on d from its bytes moved (read + written) and FLOPs: the longer of
 * bytes / HBM bandwidth and FLOPs / FP32 peak (Williams et al., "Roofline", CACM 2009; FP32
 * without tensor cores: an fp32 model's MatMul runs on CUDA cores unless TF32 is allowed), in
 * *roof_ns; and that time but at least one launch (d->launch_ns) in *ns. Either may be NULL. */
void fa_gpu_plan_kernel_time(const fa_gpu_plan_dev *d, double bytes, double flops, double *roof_ns, double *ns);

/* ---- the fusion cost model (shared by trace advice and, from issue 19, the ONNX advisor) ---- */

/* A group of kernels that one fused kernel would replace, over all its occurrences. */
typedef struct fa_fusion_input {
    int64_t occurrences;        /* >= 1 */
    int n_members;              /* kernels per occurrence */
    double member_ns;           /* measured: the members' kernel time, all occurrences */
    double gaps_ns;             /* measured: idle between the members, all occurrences (the GPU
                                   waited: launch overhead the fusion removes) */
    double read_bytes;          /* fused kernel, all occurrences: external inputs read once;
                                   < 0 unknown */
    double write_bytes;         /* outputs written once; < 0 unknown */
    double flops;               /* < 0 unknown (elementwise chains: negligible) */
    double member_bound_ns;     /* per occurrence, > 0: the longest any member's own traffic that
                                   the fused kernel still moves (its reads from and writes to
                                   outside the group) takes at the bandwidth that member reached
                                   in the trace; the fused kernel is not faster (0: none known) */
    double floor_ns;            /* per occurrence, the shortest a real kernel here takes (the
                                   fastest member's median): the fused kernel is not faster */
    double longest_member_ns;   /* per occurrence, the slowest member (when bytes are unknown) */
    double anchor_ns;           /* per occurrence, > 0: the fused kernel is this measured kernel
                                   (a Conv/Gemm that stays) extended by the absorbed ops, so
                                   fused = anchor_ns + their extra traffic and FLOPs on the roofs
                                   (read_bytes/write_bytes/flops are then the extra only); member_ns
                                   then includes the anchor's measured time. 0: a new kernel */
    double recompute_ns;        /* all occurrences: extra work the fusion adds (a multi-consumer
                                   producer recomputed); subtracted from the saving */
} fa_fusion_input;

typedef struct fa_fusion_estimate {
    double fused_ns;            /* predicted time of the fused kernel, all occurrences */
    double saving_ns;           /* member_ns + gaps_ns - fused_ns - recompute_ns, clamped to
                                   [0, member_ns + gaps_ns] (what a trace can at most give back) */
    double net_ns;              /* the same, unclamped: negative when the fusion loses (the
                                   advisor refuses those) */
    const char *basis;          /* what the prediction rests on (static string) */
} fa_fusion_estimate;

/* Predict a fusion: saving = measured member time - predicted fused time + measured gaps removed
 * - recompute. The one cost model of the project: trace advice (imported traces) and the ONNX
 * advisor (its own measured baseline run, issue 19) both call it.
 * The fused kernel's time is its traffic on the memory roof (external inputs read once, outputs
 * written once: bytes / mem_gbs, GB/s = bytes per ns), or its FLOPs on the compute roof when
 * that is longer (Williams et al., "Roofline", CACM 2009), never under floor_ns per occurrence.
 * Without bytes (or mem_gbs <= 0) the fused kernel is taken to last as long as the slowest member
 * (a conservative guess: it does at least that member's work), labelled so. Every figure is an
 * estimate; basis says from what. */
void fa_fusion_predict(const fa_fusion_input *in, double mem_gbs, double peak_gflops, fa_fusion_estimate *out);

/* The memory roof for a kernel that moves `working_set` bytes: the bandwidth of the smallest
 * measured cache level whose sweep working set holds it (a cache-resident roof), else the
 * main-memory bandwidth (mem_bw_gbs). GB/s; 0 when nothing is measured. */
double fa_roofline_mem_roof(const fa_ceilings *c, double working_set);

/* Place one kernel: Williams, Waterman, Patterson, "Roofline", CACM 2009. The memory roof is
 * fa_roofline_mem_roof(c, bytes): a kernel whose bytes fit a measured cache level is placed
 * against that level's bandwidth (so cache-resident kernels do not show > 100% of DRAM's roof);
 * pct_of_roof is against that roof. bound = latency when
 * duration < 2 x launch_ns (the fixed per-launch cost is at least half of it); otherwise memory
 * when intensity < ridge point (peak / bandwidth), else compute. */
void fa_roofline_place(const fa_ceilings *c, uint64_t flops, uint64_t bytes, uint64_t duration_ns,
                       fa_placement *out);

#endif
