/* runtime/cuda/target — the cuda target's function table: the cuda executor (exec_cuda.c),
 * generated CUDA C fused kernels compiled by NVRTC (nvrtc.c) and launched as device kernels
 * (fused.c), the ptxas figures the advisor's register/occupancy gate reads, and the device's
 * measured ceilings (ceilings.c). Built only with the CUDA toolkit. docs/cuda.md. */
#include "runtime/cuda/cuda.h"
#include "runtime/runtime-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool cuda_available(void)
{
    return fa_cuda_device_count() > 0;
}

static fa_status cuda_device_open(fa_ctx *ctx, fa_target_device *out)
{
    fa_status s = fa_cuda_driver_load(ctx);
    fa_cuda_device_info di;
    if (!s) s = fa_cuda_device_query(ctx, 0, &di);
    if (s) return s;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", di.name);
    snprintf(out->arch, sizeof out->arch, "sm_%d%d", di.cc_major, di.cc_minor);
    return FA_OK;
}

static fa_status cuda_device_key(fa_ctx *ctx, int threads, char *buf, size_t cap)
{
    (void)threads;
    fa_cuda_device_info di;
    fa_status st = fa_cuda_device_query(ctx, 0, &di);
    if (st) return st;
    snprintf(buf, cap, "cuda:%s:sm_%d%d", di.name, di.cc_major, di.cc_minor);
    return FA_OK;
}

/* ---- the executor slots: fa_cuda_exec_* with the table's void * state ---- */

static fa_status cuda_exec_create(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *opt, void **out)
{
    fa_cuda_exec *e = NULL;
    fa_status s = fa_cuda_exec_create(ctx, g, opt, &e);
    if (!s) *out = e;
    return s;
}
static void cuda_exec_free(void *e) { fa_cuda_exec_free(e); }
static fa_status cuda_exec_set_input(fa_ctx *ctx, void *e, int i, const fa_value *v) { return fa_cuda_exec_set_input(ctx, e, i, v); }
static fa_status cuda_exec_fill_inputs(fa_ctx *ctx, void *e, uint64_t seed) { return fa_cuda_exec_fill_inputs(ctx, e, seed); }
static fa_status cuda_exec_run(fa_ctx *ctx, void *e, const fa_exec_observer *obs) { return fa_cuda_exec_run(ctx, e, obs); }
static const fa_value *cuda_exec_output(const void *e, int i) { return fa_cuda_exec_output(e, i); }
static uint64_t cuda_exec_peak_bytes(const void *e) { return fa_cuda_exec_peak_bytes(e); }
static const char *cuda_exec_kernel_name(const void *e, const fa_node *n) { return fa_cuda_exec_kernel_name(e, n); }
static int cuda_exec_threads(const void *e) { (void)e; return 1; }

/* ---- generated CUDA kernels ---- */

struct fa_fused_binary {
    fa_cuda_compiled c;
    fa_fused_source info;  /* name (owned), parameter counts, launch shape */
    char name[128];
    fa_kernel_resources res;
};

static fa_status cuda_fused_compile(fa_ctx *ctx, const fa_fused_compile_options *o, int n, const fa_fused_source *src,
                                    fa_fused_binary **out, char **errs)
{
    const char *arch = o && o->arch ? o->arch : NULL;
    char devarch[16];
    if (!arch) {
        fa_target_device d;
        fa_status s = cuda_device_open(ctx, &d);
        if (s) return s;
        snprintf(devarch, sizeof devarch, "%s", d.arch);
        arch = devarch;
    }
    for (int i = 0; i < n; i++) {
        fa_ctx *kc = fa_ctx_create();
        if (!kc) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        fa_fused_binary *b = calloc(1, sizeof *b);
        fa_status s = b ? fa_cuda_nvrtc_compile(kc, src[i].src, src[i].name, arch, &b->c) : FA_ERR_NOMEM;
        const fa_cuda_kernel_info *ki = s ? NULL : fa_cuda_compiled_kernel(&b->c, src[i].name);
        if (!s && !ki) s = fa_ctx_error(kc, FA_ERR_RUNTIME, "NVRTC: no ptxas figures for entry %s", src[i].name);
        if (s) {
            if (errs) errs[i] = strdup(b ? fa_ctx_errmsg(kc) : "out of memory");
            if (b) fa_cuda_compiled_free(&b->c);
            free(b);
        } else {
            b->info = src[i];
            b->info.src = NULL;
            b->info.len = 0;
            snprintf(b->name, sizeof b->name, "%s", src[i].name);
            b->info.name = b->name;
            snprintf(b->res.arch, sizeof b->res.arch, "%s", arch);
            b->res.registers = ki->registers;
            b->res.spill_stores = ki->spill_stores;
            b->res.spill_loads = ki->spill_loads;
            b->res.static_smem = ki->static_smem;
            b->res.local_mem = ki->stack_frame;
            out[i] = b;
        }
        fa_ctx_free(kc);
    }
    return FA_OK;
}

/* A device kernel (fa_cuda_fused_custom_run marker) the cuda executor loads and launches. */
static fa_status cuda_fused_kernel(fa_ctx *ctx, const fa_fused_binary *b, fa_custom_kernel *out)
{
    fa_cuda_fused *k = NULL;
    fa_status s = fa_cuda_fused_create(ctx, b->c.cubin, b->c.cubin_size, b->info.name, b->info.block_size, b->info.grid,
                                       b->info.n_in, b->info.n_out, b->res.registers,
                                       b->res.spill_stores + b->res.spill_loads, &k);
    if (s) return s;
    memset(out, 0, sizeof *out);
    out->name = "nvrtc:fused";
    out->run = fa_cuda_fused_custom_run;
    out->destroy = fa_cuda_fused_free;
    out->state = k;
    return FA_OK;
}

static bool cuda_fused_resources(const fa_fused_binary *b, fa_kernel_resources *out)
{
    *out = b->res;
    return true;
}

static void cuda_fused_free(fa_fused_binary *b)
{
    if (!b) return;
    fa_cuda_compiled_free(&b->c);
    free(b);
}

static const fa_target_device_i cuda_device = {
    .available = cuda_available,
    .device_open = cuda_device_open,
    .device_key = cuda_device_key,
    .measure_ceilings = fa_cuda_measure_ceilings,
    .latency_ceiling = "launch",
    .cache_level_name = NULL,
};

static const fa_target_exec_i cuda_exec = {
    .exec_create = cuda_exec_create,
    .exec_free = cuda_exec_free,
    .exec_set_input = cuda_exec_set_input,
    .exec_fill_inputs = cuda_exec_fill_inputs,
    .exec_run = cuda_exec_run,
    .exec_output = cuda_exec_output,
    .exec_peak_bytes = cuda_exec_peak_bytes,
    .exec_kernel_name = cuda_exec_kernel_name,
    .exec_threads = cuda_exec_threads,
    .supports_node = fa_cuda_exec_supports_node,
    .preferred_layout = NULL,
    .reorder_kernel = NULL,
};

static const fa_target_fused_i cuda_fused = {
    .kernel_lang = FA_KERNEL_LANG_CUDA,
    .fused_compile = cuda_fused_compile,
    .fused_kernel = cuda_fused_kernel,
    .fused_resources = cuda_fused_resources,
    .fused_free = cuda_fused_free,
};

const fa_target_iface fa_target_cuda_iface = {
    .id = FA_TARGET_CUDA,
    .name = "cuda",
    .device = &cuda_device,
    .exec = &cuda_exec,
    .fused = &cuda_fused,
};
