/* runtime/cpu/target — the cpu target's function table: the host executor (exec_cpu.c), generated
 * C fused kernels compiled by the system compiler into the private kernel cache (compile.c),
 * and the host's ceilings (ceilings.c). Always built; the default where no GPU is present. */
#include "runtime/runtime-impl.h"
#include "dnnl-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool cpu_available(void)
{
    return true;
}

/* "model name" of /proc/cpuinfo, "cpu" when unreadable. */
static void cpu_model(char *buf, size_t cap)
{
    snprintf(buf, cap, "cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ') c++;
                c[strcspn(c, "\n")] = 0;
                snprintf(buf, cap, "%s", c);
            }
            break;
        }
    fclose(f);
}

static fa_status cpu_device_open(fa_ctx *ctx, fa_target_device *out)
{
    (void)ctx;
    memset(out, 0, sizeof *out);
    cpu_model(out->name, sizeof out->name);
    return FA_OK;
}

static fa_status cpu_device_key(fa_ctx *ctx, int threads, char *buf, size_t cap)
{
    (void)ctx;
    char model[200];
    cpu_model(model, sizeof model);
    snprintf(buf, cap, "cpu:%s:%dt", model, threads);
    return FA_OK;
}

static bool cpu_supports_node(const fa_graph *g, const fa_node *n, char *why, size_t why_cap)
{
    (void)g;
    if (n->op && n->op->kernel) return true;
    bool fused = n->domain && !strcmp(n->domain, FA_FUSED_DOMAIN);
    const char *op = fused && !strncmp(n->op_type, "Fused", 5) ? n->op_type + 5 : n->op_type;
    /* oneDNN's primitives (Fused*: with post-ops); FusedKernel comes from a kernel provider */
    if ((!*n->domain || fused) && (!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") || !strcmp(op, "MatMul") ||
                                   !strcmp(op, "Gemm")))
        return true;
    if (fused && !strcmp(n->op_type, "FusedKernel")) return true;
    if (why && why_cap) snprintf(why, why_cap, "unsupported op %s at node '%s' on cpu", n->op_type, n->name);
    return false;
}

/* ---- generated C kernels ---- */

struct fa_fused_binary {
    fa_compiled *compiled;
    fa_layout layout; /* the source's (fa_fused_source.layout): what its kernel reads and writes */
};

static fa_status cpu_fused_compile(fa_ctx *ctx, const fa_fused_compile_options *o, int n, const fa_fused_source *src,
                                   fa_fused_binary **out, char **errs)
{
    if (n <= 0) return FA_OK;
    fa_kernel_source *ks = calloc((size_t)n, sizeof *ks);
    fa_compiled **got = calloc((size_t)n, sizeof *got);
    fa_kernel_cache *kc = NULL;
    fa_status s = ks && got ? FA_OK : fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n && !s; i++) ks[i] = (fa_kernel_source){src[i].src, src[i].len, src[i].name};
    if (!s) s = fa_kernel_cache_open(ctx, o ? o->cache_dir : NULL, o ? o->cache_max_bytes : 0, &kc);
    if (!s) s = fa_compile_kernels(ctx, kc, n, ks, got, errs);
    for (int i = 0; i < n && !s; i++) {
        if (!got[i]) continue;
        out[i] = calloc(1, sizeof *out[i]);
        if (!out[i]) {
            fa_compiled_free(got[i]);
            if (errs) errs[i] = strdup("out of memory");
            continue;
        }
        out[i]->compiled = got[i];
        out[i]->layout = (unsigned)src[i].layout < FA_LAYOUT_COUNT ? src[i].layout : FA_LAYOUT_PLAIN;
    }
    if (s && got)
        for (int i = 0; i < n; i++) fa_compiled_free(got[i]);
    fa_kernel_cache_free(kc);
    free(ks);
    free(got);
    return s;
}

static fa_status fused_run(void *state, fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in, fa_value *out,
                           int n_out, int threads)
{
    const fa_compiled *c = state;
    const void *ip[64];
    void *op[16];
    if (n_in > 64 || n_out > 16)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "node '%s': fused kernel with %d inputs, %d outputs", n->name, n_in,
                            n_out);
    for (int i = 0; i < n_in; i++) ip[i] = in[i].data;
    for (int i = 0; i < n_out; i++) op[i] = out[i].data;
    c->fn(ip, op, threads);
    return FA_OK;
}

static fa_status cpu_fused_kernel(fa_ctx *ctx, const fa_fused_binary *b, fa_custom_kernel *out)
{
    (void)ctx;
    memset(out, 0, sizeof *out);
    out->name = "generated:fused";
    out->run = fused_run;
    out->state = b->compiled; /* borrowed: the binary outlives the executor */
    out->layout = b->layout;
    return FA_OK;
}

static fa_status cpu_fused_gemm_kernel(fa_ctx *ctx, const fa_fused_binary *b, const fa_graph *g, const fa_node *n,
                                      fa_custom_kernel *out)
{
    if (b->layout != FA_LAYOUT_PLAIN)
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': a GEMM epilogue generated for a blocked layout", n->name);
    return fa_dnnl_gemm_epilogue_kernel(ctx, g, n, b->compiled->fn, out);
}

static void cpu_fused_free(fa_fused_binary *b)
{
    if (!b) return;
    fa_compiled_free(b->compiled);
    free(b);
}

static const fa_target_device_i cpu_device = {
    .available = cpu_available,
    .device_open = cpu_device_open,
    .device_key = cpu_device_key,
    .measure_ceilings = fa_cpu_measure_ceilings,
    .latency_ceiling = "dispatch",
    .ceilings_method = FA_CPU_CEILINGS_METHOD,
    .cache_level_name = fa_cpu_cache_level_name,
};

static const fa_target_exec_i cpu_exec = {
    .exec_create = fa_cpu_exec_create,
    .exec_free = fa_cpu_exec_free,
    .exec_set_input = fa_cpu_exec_set_input,
    .exec_fill_inputs = fa_cpu_exec_fill_inputs,
    .exec_run = fa_cpu_exec_run,
    .exec_output = fa_cpu_exec_output,
    .exec_tensor_layout = fa_cpu_exec_tensor_layout,
    .exec_peak_bytes = fa_cpu_exec_peak_bytes,
    .exec_kernel_name = fa_cpu_exec_kernel_name,
    .exec_kernel_impl = fa_cpu_exec_kernel_impl,
    .exec_reorders = fa_cpu_exec_reorders,
    .exec_veto_tactics = fa_cpu_exec_veto_tactics,
    .exec_threads = fa_cpu_exec_threads,
    .supports_node = cpu_supports_node,
    .preferred_layout = fa_cpu_preferred_layout, /* read only when fa_exec_options.blocked_layouts */
    .plan_layouts = fa_cpu_plan_layouts,
    .reorder_kernel = fa_cpu_reorder_kernel,
};

static const fa_target_fused_i cpu_fused = {
    .kernel_lang = FA_KERNEL_LANG_C,
    .fused_compile = cpu_fused_compile,
    .fused_kernel = cpu_fused_kernel,
    .fused_gemm_kernel = cpu_fused_gemm_kernel,
    .fused_resources = NULL, /* no register/occupancy gate on the cpu */
    .fused_free = cpu_fused_free,
};

const fa_target_iface fa_target_cpu_iface = {
    .id = FA_TARGET_CPU,
    .name = "cpu",
    .device = &cpu_device,
    .exec = &cpu_exec,
    .fused = &cpu_fused,
};
