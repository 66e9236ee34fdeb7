/* runtime/cuda/nvrtc — the one NVRTC wrapper: CUDA C to a cubin (no GPU needed) with registers,
 * spills, static shared memory and stack frame per kernel from the ptxas --verbose log. Used by
 * the executor for its own kernels and by the cuda target for generated fused kernels (the
 * advisor's register/occupancy gate reads the same figures through the target table). */
#include "runtime/cuda/cuda.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVRTC_CHECK(ctx, call)                                                                               \
    do {                                                                                                     \
        nvrtcResult r_ = (call);                                                                             \
        if (r_ != NVRTC_SUCCESS) {                                                                           \
            st = fa_ctx_error((ctx), FA_ERR_RUNTIME, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__,    \
                              nvrtcGetErrorString(r_));                                                      \
            goto fail;                                                                                       \
        }                                                                                                    \
    } while (0)

const char *fa_cuda_nvrtc_version(char *buf, size_t cap)
{
    int ma = 0, mi = 0;
    if (nvrtcVersion(&ma, &mi) != NVRTC_SUCCESS) snprintf(buf, cap, "unknown");
    else snprintf(buf, cap, "%d.%d", ma, mi);
    return buf;
}

/* ptxas --verbose (CUDA 11-13) prints per entry:
 *   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
 *   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 14 registers, used 1 barriers, 128 bytes smem, 400 bytes cmem[0] */
/* The integer just before `key` in `line` (spaces skipped); -1 when absent. */
static int num_before(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    if (!p) return -1;
    const char *e = p;
    const char *b = e;
    while (b > line && b[-1] >= '0' && b[-1] <= '9') b--;
    return b < e ? atoi(b) : -1;
}

fa_status fa_cuda_parse_ptxas_log(fa_ctx *ctx, const char *log, fa_cuda_kernel_info **out, int *n)
{
    int cap = 16, cnt = 0;
    fa_cuda_kernel_info *k = calloc((size_t)cap, sizeof *k);
    if (!k) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    const char *p = log;
    fa_cuda_kernel_info *cur = NULL;
    while (p && *p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), p);
        const char *q;
        if ((q = strstr(line, "Compiling entry function '"))) {
            q += strlen("Compiling entry function '");
            const char *e = strchr(q, '\'');
            if (cnt == cap) {
                fa_cuda_kernel_info *nk = realloc(k, (size_t)cap * 2 * sizeof *k);
                if (!nk) {
                    free(k);
                    return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
                }
                k = nk;
                memset(k + cap, 0, (size_t)cap * sizeof *k);
                cap *= 2;
            }
            cur = &k[cnt++];
            snprintf(cur->name, sizeof cur->name, "%.*s", (int)(e ? e - q : (long)strlen(q)), q);
        } else if (cur && (q = strstr(line, "bytes stack frame"))) {
            /* "ptxas . 0 bytes stack frame, ..." (CUDA 13) or "    8 bytes stack frame, ..." (11-12) */
            int v;
            if ((v = num_before(line, " bytes stack frame")) >= 0) cur->stack_frame = v;
            if ((v = num_before(line, " bytes spill stores")) >= 0) cur->spill_stores = v;
            if ((v = num_before(line, " bytes spill loads")) >= 0) cur->spill_loads = v;
        } else if (cur && (q = strstr(line, "Used "))) {
            int r = 0;
            if (sscanf(q, "Used %d registers", &r) == 1) cur->registers = r;
            /* "N bytes smem" on the same line, absent when the kernel has none */
            int v = num_before(q, " bytes smem");
            if (v >= 0) cur->static_smem = v;
        }
        p = eol ? eol + 1 : NULL;
    }
    *out = k;
    *n = cnt;
    return FA_OK;
}

fa_status fa_cuda_nvrtc_compile(fa_ctx *ctx, const char *src, const char *name, const char *arch,
                                fa_cuda_compiled *out)
{
    fa_status st = FA_OK;
    nvrtcProgram prog = NULL;
    if (!src || !name) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "fa_cuda_nvrtc_compile: NULL source or name");
    /* "sm_90", "90" or "9.0" */
    const char *a = arch && arch[0] ? arch : "sm_90";
    char archopt[64];
    if (!strncmp(a, "sm_", 3)) snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", a);
    else if (a[0] >= '0' && a[0] <= '9' && strchr(a, '.'))
        snprintf(archopt, sizeof archopt, "--gpu-architecture=sm_%c%c", a[0], strchr(a, '.')[1]);
    else snprintf(archopt, sizeof archopt, "--gpu-architecture=sm_%s", a);
    arch = archopt + strlen("--gpu-architecture=");
    const char *opts[] = {archopt, "--ptxas-options=--verbose", "-default-device", "--std=c++17"};
    fa_cuda_compiled c = {0};
    NVRTC_CHECK(ctx, nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL));
    nvrtcResult cr = nvrtcCompileProgram(prog, 4, opts);
    size_t log_size = 0;
    NVRTC_CHECK(ctx, nvrtcGetProgramLogSize(prog, &log_size));
    c.log = malloc(log_size + 1);
    if (!c.log) {
        st = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        goto fail;
    }
    NVRTC_CHECK(ctx, nvrtcGetProgramLog(prog, c.log));
    c.log[log_size] = 0;
    if (cr != NVRTC_SUCCESS) {
        /* only NVRTC's diagnostics about our own source, capped (fa_compiler_diagnostics) */
        fa_buf d;
        fa_buf_init(&d);
        if (fa_compiler_diagnostics(&d, c.log, log_size, name, 1500) == 0) fa_buf_puts(&d, "no diagnostic about the source");
        st = fa_ctx_error(ctx, FA_ERR_RUNTIME, "NVRTC compile of %s for %s failed: %s: %s", name, arch,
                          nvrtcGetErrorString(cr), d.data ? d.data : "");
        fa_buf_free(&d);
        goto fail;
    }
    NVRTC_CHECK(ctx, nvrtcGetCUBINSize(prog, &c.cubin_size));
    c.cubin = malloc(c.cubin_size ? c.cubin_size : 1);
    if (!c.cubin) {
        st = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        goto fail;
    }
    NVRTC_CHECK(ctx, nvrtcGetCUBIN(prog, (char *)c.cubin));
    st = fa_cuda_parse_ptxas_log(ctx, c.log, &c.kernels, &c.n_kernels);
    if (st) goto fail;
    if (!strstr(c.log, "Used ")) {
        st = fa_ctx_error(ctx, FA_ERR_RUNTIME, "NVRTC: no ptxas info for %s in the log (--ptxas-options ignored?)", name);
        goto fail;
    }
    nvrtcDestroyProgram(&prog);
    *out = c;
    return FA_OK;
fail:
    if (prog) nvrtcDestroyProgram(&prog);
    fa_cuda_compiled_free(&c);
    return st;
}

const fa_cuda_kernel_info *fa_cuda_compiled_kernel(const fa_cuda_compiled *c, const char *name)
{
    for (int i = 0; i < c->n_kernels; i++)
        if (!strcmp(c->kernels[i].name, name)) return &c->kernels[i];
    return NULL;
}

void fa_cuda_compiled_free(fa_cuda_compiled *c)
{
    if (!c) return;
    free(c->cubin);
    free(c->log);
    free(c->kernels);
    memset(c, 0, sizeof *c);
}
