/* roofline/gpu_roofs — theoretical GPU roofs from the vendors' data sheets, and the fusion cost
 * model both the trace advice and the ONNX advisor predict savings with. */
#include "roofline/roofline.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static bool has(const char *hay, const char *needle)
{
    return strcasestr(hay, needle) != NULL;
}

/* a whole word (not inside a longer alphanumeric run), case-insensitive */
static bool has_word(const char *hay, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = hay; (p = strcasestr(p, w)) != NULL; p++)
        if ((p == hay || !isalnum((unsigned char)p[-1])) && !isalnum((unsigned char)p[n])) return true;
    return false;
}

fa_gpu_vendor fa_gpu_vendor_of(const char *n)
{
    if (!n || !*n) return FA_GPU_VENDOR_UNKNOWN;
    if (has(n, "AMD") || has(n, "Instinct") || has(n, "Radeon") || has_word(n, "MI300X") || has_word(n, "MI250X"))
        return FA_GPU_VENDOR_AMD;
    if (has(n, "NVIDIA") || has(n, "Tesla") || has(n, "GeForce") || has(n, "Quadro") || has_word(n, "H100") ||
        has_word(n, "A100") || has_word(n, "B200"))
        return FA_GPU_VENDOR_NVIDIA;
    return FA_GPU_VENDOR_UNKNOWN;
}

const char *fa_gpu_units_name(fa_gpu_vendor v)
{
    return v == FA_GPU_VENDOR_AMD ? "compute units" : "SMs";
}

bool fa_gpu_roofs_for(const char *n, uint64_t mem, fa_gpu_roofs *out)
{
    /* GB/s, FP32 GFLOP/s, dense BF16/FP16 tensor GFLOP/s, architecture, SMs / CUs. Sources: NVIDIA
     * A100 Tensor Core GPU data sheet (40GB 1555 GB/s, 80GB SXM 2039 GB/s, 80GB PCIe 1935; FP32
     * 19.5 TF, BF16 312 TF; 108 SMs); H100 data sheet (SXM 3.35 TB/s, 67 TF FP32, 989 TF BF16, 132
     * SMs; PCIe 2 TB/s, 51 TF, 756 TF, 114 SMs; NVL 3.9 TB/s, 60 TF, 835 TF, 132 SMs); H200 data
     * sheet (4.8 TB/s, 67 TF, 989 TF); HGX B200 data sheet, per GPU (7.7 TB/s HBM3E, 75 TF FP32, 4.5 PF
     * FP16/BF16 with 2:4 sparsity = 2.25 PF dense; 148 SMs, Blackwell architecture technical brief); V100 data sheet (SXM2 900 GB/s, 15.7 TF, 125 TF; PCIe 900
     * GB/s, 14 TF, 112 TF; 80 SMs); T4 (320 GB/s, 8.1 TF, 65 TF, 40 SMs); L4 (300 GB/s, 30.3 TF,
     * 121 TF, 58 SMs); A10 (600 GB/s, 31.2 TF, 125 TF, 72 SMs); L40S (864 GB/s, 91.6 TF, 362 TF,
     * 142 SMs); GeForce RTX 2080 Ti (616 GB/s, 13.4 TF, 68 SMs); AMD Instinct MI325X data sheet
     * (6 TB/s HBM3E, 163.4 TF FP32 vector, 1307.4 TF BF16 dense, 304 CUs, CDNA3 gfx942), MI300X
     * (5.3 TB/s, 163.4 TF, 1307.4 TF, 304 CUs, CDNA3 gfx942), MI250X (3.2768 TB/s, 47.9 TF,
     * 383 TF, 220 CUs, CDNA2 gfx90a, two GCDs of 110 CUs and 64 GB), MI250 (3.2768 TB/s, 45.3 TF,
     * 362.1 TF, 208 CUs, two GCDs of 104), MI210 (1.6384 TB/s, 22.6 TF, 181 TF, 104 CUs, CDNA2 gfx90a).
     * Dense (no sparsity) figures throughout. Last-level cache (llc_mb): L2 of A100 40 MB, H100 / H200
     * 50 MB, V100 6 MB, T4 4 MB, RTX 2080 Ti 5.5 MB, A10 6 MB, L4 48 MB, L40S 96 MB (NVIDIA's
     * architecture whitepapers and data sheets); CDNA3's 256 MB Infinity Cache (MI300X / MI325X),
     * CDNA2's 8 MB L2 per GCD (AMD's CDNA white papers). B200: unknown (0) — NVIDIA's HGX B200 data
     * sheet, Blackwell architecture technical brief and Blackwell tuning guide ("Increased L2
     * Capacity") give no size; what uses llc_mb says it is unknown (trace/finish.c). */
    fa_gpu_roofs r = {0, 0, 0, NULL, NULL, NULL, 0};
    if (!n) n = "";
    if (has(n, "A100")) {
        bool big = has(n, "80GB") || mem > (uint64_t)48 << 30;
        bool pcie = has(n, "PCIe");
        r = (fa_gpu_roofs){big ? (pcie ? 1935 : 2039) : 1555, 19500, 312000,
                           big ? (pcie ? "A100 80GB PCIe" : "A100 80GB SXM") : "A100 40GB", "sm_80", "Ampere", 108, 40};
    } else if (has(n, "B200")) {
        r = (fa_gpu_roofs){7700, 75000, 2250000, "B200 (HGX)", "sm_100", "Blackwell", 148};
    } else if (has(n, "H200")) {
        r = (fa_gpu_roofs){4800, 67000, 989000, "H200", "sm_90", "Hopper", 132, 50};
    } else if (has(n, "H100")) {
        if (has(n, "PCIe")) r = (fa_gpu_roofs){2000, 51000, 756000, "H100 PCIe", "sm_90", "Hopper", 114, 50};
        else if (has(n, "NVL")) r = (fa_gpu_roofs){3900, 60000, 835000, "H100 NVL", "sm_90", "Hopper", 132, 50};
        else r = (fa_gpu_roofs){3350, 67000, 989000, "H100 SXM", "sm_90", "Hopper", 132, 50};
    } else if (has(n, "V100")) {
        r = has(n, "PCIe") ? (fa_gpu_roofs){900, 14000, 112000, "V100 PCIe", "sm_70", "Volta", 80, 6}
                           : (fa_gpu_roofs){900, 15700, 125000, "V100 SXM2", "sm_70", "Volta", 80, 6};
    } else if (has(n, "2080 Ti")) {
        r = (fa_gpu_roofs){616, 13400, 0, "RTX 2080 Ti", "sm_75", "Turing", 68, 5.5};
    } else if (has_word(n, "T4")) {
        r = (fa_gpu_roofs){320, 8100, 65000, "T4", "sm_75", "Turing", 40, 4};
    } else if (has_word(n, "L4")) {
        r = (fa_gpu_roofs){300, 30300, 121000, "L4", "sm_89", "Ada", 58, 48};
    } else if (has_word(n, "A10")) {
        r = (fa_gpu_roofs){600, 31200, 125000, "A10", "sm_86", "Ampere", 72, 6};
    } else if (has(n, "L40S")) {
        r = (fa_gpu_roofs){864, 91600, 362000, "L40S", "sm_89", "Ada", 142, 96};
    } else if (has(n, "MI325X")) {
        r = (fa_gpu_roofs){6000, 163400, 1307400, "MI325X", "gfx942", "CDNA3", 304, 256};
    } else if (has(n, "MI300X")) {
        r = (fa_gpu_roofs){5300, 163400, 1307400, "MI300X", "gfx942", "CDNA3", 304, 256};
    } else if (has(n, "MI250")) {
        /* ROCm shows each of the package's two GCDs as a device of its own (64 GB, 110 / 104 CUs):
         * a device with at most 64 GiB is one GCD, half the package's figures */
        bool x = has(n, "MI250X");
        if (mem && mem <= (uint64_t)64 << 30)
            r = x ? (fa_gpu_roofs){1638.4, 23950, 191500, "MI250X (one GCD)", "gfx90a", "CDNA2", 110, 8}
                  : (fa_gpu_roofs){1638.4, 22650, 181050, "MI250 (one GCD)", "gfx90a", "CDNA2", 104, 8};
        else
            r = x ? (fa_gpu_roofs){3276.8, 47900, 383000, "MI250X", "gfx90a", "CDNA2", 220, 16}
                  : (fa_gpu_roofs){3276.8, 45300, 362100, "MI250", "gfx90a", "CDNA2", 208, 16};
    } else if (has(n, "MI210")) {
        r = (fa_gpu_roofs){1638.4, 22600, 181000, "MI210", "gfx90a", "CDNA2", 104, 8};
    }
    if (out) *out = r;
    return r.label != NULL;
}

void fa_gpu_identify(const fa_gpu_props *d, fa_gpu_vendor *vendor, fa_gpu_roofs *out)
{
    fa_gpu_vendor v = fa_gpu_vendor_of(d->name);
    /* ROCm reports Instinct parts as "" or "AMD Radeon Graphics": a wavefront of 64 is AMD's
     * (CDNA); NVIDIA's warps are 32 */
    if (v == FA_GPU_VENDOR_UNKNOWN && d->warp_size == 64) v = FA_GPU_VENDOR_AMD;
    fa_gpu_roofs r;
    fa_gpu_roofs_for(d->name, d->total_mem_bytes, &r);
    if (v == FA_GPU_VENDOR_AMD && !r.label) {
        /* the part from HIP's compute capability (gfx942 reports 9.4, gfx90a and gfx908 9.0), its
         * compute units and memory, where only one data-sheet row has them: 304 CUs on gfx942 are an
         * MI300X (192 GB) or an MI325X (256 GB); 104 / 110 CUs with 64 GB on 9.0 one GCD of an
         * MI250 / MI250X, or an MI210 (104 CUs, the same per-die figures as an MI250 GCD) */
        const uint64_t gib = (uint64_t)1 << 30, mem = d->total_mem_bytes;
        int cu = d->units;
        if (d->cc_major == 9 && d->cc_minor == 4 && cu == 304 && mem > 160 * gib)
            r = mem > 224 * gib ? (fa_gpu_roofs){6000, 163400, 1307400, "MI325X (by its gfx942, 304 CUs, 256 GB)", "gfx942", "CDNA3", 304, 256}
                                : (fa_gpu_roofs){5300, 163400, 1307400, "MI300X (by its gfx942, 304 CUs, 192 GB)", "gfx942", "CDNA3", 304, 256};
        else if (d->cc_major == 9 && d->cc_minor == 0 && cu == 110 && mem > 48 * gib && mem <= 64 * gib)
            r = (fa_gpu_roofs){1638.4, 23950, 191500, "MI250X, one GCD (by its 110 CUs, 64 GB)", "gfx90a", "CDNA2", 110, 8};
        else if (d->cc_major == 9 && d->cc_minor == 0 && cu == 104 && mem > 48 * gib && mem <= 64 * gib)
            r = (fa_gpu_roofs){1638.4, 22600, 181000, "MI210 or one MI250 GCD (by their 104 CUs, 64 GB)", "gfx90a", "CDNA2", 104, 8};
        else if (d->cc_major == 9 && d->cc_minor == 4)
            r.arch = "gfx942", r.family = "CDNA3";
        else if (d->cc_major == 9 && d->cc_minor == 5)
            r.arch = "gfx950", r.family = "CDNA4";
        else if (d->cc_major == 9 && d->cc_minor == 0 && (cu == 104 || cu == 110))
            r.arch = "gfx90a", r.family = "CDNA2";
    }
    if (vendor) *vendor = v;
    if (out) *out = r;
}

void fa_fusion_predict(const fa_fusion_input *in, double mem_gbs, double peak_gflops, fa_fusion_estimate *out)
{
    double occ = in->occurrences > 0 ? (double)in->occurrences : 1.0;
    double floor_total = in->floor_ns > 0 ? in->floor_ns * occ : 0;
    double fused;
    const char *basis;
    if (in->anchor_ns > 0) {
        /* the anchor kernel stays (measured); the absorbed ops add their extra traffic and FLOPs */
        double t_mem = in->read_bytes > 0 && mem_gbs > 0 ? (in->read_bytes + (in->write_bytes > 0 ? in->write_bytes : 0)) / mem_gbs : 0;
        double t_cmp = in->flops > 0 && peak_gflops > 0 ? in->flops / peak_gflops : 0;
        fused = in->anchor_ns * occ + t_mem + t_cmp;
        basis = "the anchor's measured median plus the absorbed ops' extra operand traffic and FLOPs on the roofs";
    } else if (in->read_bytes >= 0 && in->write_bytes >= 0 && mem_gbs > 0) {
        double t_mem = (in->read_bytes + in->write_bytes) / mem_gbs; /* GB/s = bytes per ns */
        double t_cmp = in->flops > 0 && peak_gflops > 0 ? in->flops / peak_gflops : 0; /* GFLOP/s = FLOP per ns */
        fused = t_mem;
        basis = "memory roof: external inputs read once and outputs written once, bytes estimated from the cpu ops' "
                "Input Dims and dtypes";
        if (t_cmp > fused) {
            fused = t_cmp;
            basis = "compute roof: FLOPs estimated from the cpu ops' Input Dims";
        }
        if (fused < floor_total) {
            fused = floor_total;
            basis = "the fastest member's median time (a fused kernel is not faster than the shortest kernel here); "
                    "bytes estimated from Input Dims";
        }
        if (in->member_bound_ns > 0 && fused < in->member_bound_ns * occ) {
            fused = in->member_bound_ns * occ;
            basis = "the members' own bandwidth: the fused kernel still moves what each member reads from and writes to "
                    "outside the group, at the bandwidth that member reached in the trace (the slowest bounds it); "
                    "bytes estimated from Input Dims";
        }
    } else {
        fused = in->longest_member_ns * occ;
        basis = "bytes unknown (no Input Dims): the members are joined by their order on the stream, with no sizes to show "
                "that each reads an earlier one's output, and the fused kernel is taken to last as long as the slowest member";
    }
    double total = in->member_ns + in->gaps_ns;
    double net = total - fused - (in->recompute_ns > 0 ? in->recompute_ns : 0);
    double saving = net;
    if (saving < 0) saving = 0;
    if (saving > total) saving = total;
    out->fused_ns = fused;
    out->saving_ns = saving;
    out->net_ns = net;
    out->basis = basis;
}

/* ---- lookups by device name (trace import, where only the name is known) ---- */

double fa_gpu_hbm_gbs(const char *n, uint64_t mem, const char **label)
{
    fa_gpu_roofs r;
    fa_gpu_roofs_for(n, mem, &r);
    if (label) *label = r.label;
    return r.hbm_gbs;
}

bool fa_gpu_cc_from_name(const char *n, int *major, int *minor)
{
    int ma = 0, mi = 0;
    if (!n) return false;
    if (has(n, "A100")) ma = 8, mi = 0;
    else if (has(n, "B200")) ma = 10, mi = 0;
    else if (has(n, "V100")) ma = 7, mi = 0;
    else if (has(n, "H100") || has(n, "H200")) ma = 9, mi = 0;
    else if (has(n, "RTX 20") || has_word(n, "T4")) ma = 7, mi = 5;
    else if (has(n, "RTX 30")) ma = 8, mi = 6;
    else if (has(n, "RTX 40") || has_word(n, "L4")) ma = 8, mi = 9;
    else return false;
    *major = ma;
    *minor = mi;
    return true;
}

/* ---- a GPU to plan for, by architecture or by name (advise --target cuda --arch) ---- */

/* The data-sheet part planned for when only an architecture is named: the data-center part of
 * that generation (sm_80 A100 80GB SXM, sm_90 H100 SXM, sm_100 B200; sm_75 T4, sm_86 A10,
 * sm_89 L4, sm_70 V100 SXM2). */
static const struct {
    const char *arch, *part;
} k_arch_part[] = {
    {"sm_70", "V100 SXM2"}, {"sm_75", "T4"}, {"sm_80", "A100 80GB SXM"}, {"sm_86", "A10"},
    {"sm_89", "L4"},        {"sm_90", "H100 SXM"}, {"sm_100", "B200"},
};

fa_status fa_gpu_plan_device(fa_ctx *ctx, const char *spec, fa_gpu_plan_dev *out)
{
    memset(out, 0, sizeof *out);
    if (!spec || !*spec) spec = "sm_90";
    const char *part = NULL;
    const fa_cuda_limits *lim = fa_cuda_limits_for_arch(spec);
    if (lim) {
        for (size_t i = 0; i < sizeof k_arch_part / sizeof k_arch_part[0]; i++)
            if (!strcmp(k_arch_part[i].arch, lim->arch)) part = k_arch_part[i].part;
        if (!part)
            return fa_ctx_error(ctx, FA_ERR_INPUT, "--arch %s: no data-sheet part of that architecture is tabled "
                                "(sm_70, sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, or a device name such as 'H100 PCIe')",
                                lim->arch);
    } else {
        part = spec;
    }
    fa_gpu_roofs r;
    if (!fa_gpu_roofs_for(part, 0, &r) || fa_gpu_vendor_of(part) == FA_GPU_VENDOR_AMD)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "--arch '%s' is neither a CUDA architecture with occupancy limits "
                            "tabled (sm_70, sm_75, sm_80, sm_86, sm_89, sm_90, sm_100) nor an NVIDIA part in the "
                            "data-sheet table (A100, H100, H200, B200, V100, T4, L4, A10, L40S, RTX 2080 Ti)", spec);
    if (!lim) lim = fa_cuda_limits_for_arch(r.arch);
    if (!lim) return fa_ctx_error(ctx, FA_ERR_INPUT, "--arch '%s': %s has no occupancy limits tabled", spec, r.arch);
    out->roofs = r;
    out->limits = lim;
    out->launch_ns = FA_GPU_LAUNCH_NS;
    return FA_OK;
}

void fa_gpu_plan_kernel_time(const fa_gpu_plan_dev *d, double bytes, double flops, double *roof_ns, double *ns)
{
    double t_mem = bytes > 0 && d->roofs.hbm_gbs > 0 ? bytes / d->roofs.hbm_gbs : 0; /* GB/s = bytes per ns */
    double t_cmp = flops > 0 && d->roofs.fp32_gflops > 0 ? flops / d->roofs.fp32_gflops : 0;
    double t = t_mem > t_cmp ? t_mem : t_cmp;
    if (roof_ns) *roof_ns = t;
    if (ns) *ns = t > d->launch_ns ? t : d->launch_ns;
}
