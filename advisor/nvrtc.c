/* advisor/nvrtc — compile generated CUDA C with NVRTC to a cubin (ptxas runs, no GPU needed)
 * and read registers, spills, shared memory and stack frame from the ptxas info log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"

#ifdef FA_HAVE_CUDA
#include <nvrtc.h>

/* Every NVRTC call goes through this: on failure the call, nvrtcGetErrorString and the source
 * location are recorded on the ctx and `st` is set; never aborts. */
#define NVRTC_CHECK(ctx, st, call)                                                                             \
    do {                                                                                                       \
        nvrtcResult r_ = (call);                                                                               \
        if (r_ != NVRTC_SUCCESS && (st) == FA_OK)                                                              \
            (st) = fa_ctx_error((ctx), FA_ERR_RUNTIME, "%s:%d: %s failed: %s", __FILE__, __LINE__, #call,        \
                                nvrtcGetErrorString(r_));                                                      \
    } while (0)

/* First integer before `key` in the part of the log after `from`; -1 when absent.
 * ptxas -v prints, per entry function (CUDA 11-13):
 *   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
 *   ptxas info    : Function properties for NAME
 *       8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 12 registers, used 1 barriers, 128 bytes smem, 400 bytes cmem[0] */
static int num_before(const char *from, const char *key)
{
    const char *p = strstr(from, key);
    if (!p) return -1;
    const char *q = p;
    while (q > from && q[-1] == ' ') q--;
    const char *e = q;
    while (q > from && q[-1] >= '0' && q[-1] <= '9') q--;
    if (q == e) return -1;
    return atoi(q);
}

static int num_after(const char *from, const char *key)
{
    const char *p = strstr(from, key);
    if (!p) return -1;
    return atoi(p + strlen(key));
}

static void parse_log(const char *log, const char *name, fa_nvrtc_result *r)
{
    const char *from = log;
    char pat[160];
    snprintf(pat, sizeof pat, "entry function '%s'", name);
    const char *p = strstr(log, pat);
    if (p) from = p;
    int regs = num_after(from, "Used ");
    r->registers = regs < 0 ? 0 : regs;
    int v;
    r->spill_stores = (v = num_before(from, " bytes spill stores")) < 0 ? 0 : v;
    r->spill_loads = (v = num_before(from, " bytes spill loads")) < 0 ? 0 : v;
    r->local_mem = (v = num_before(from, " bytes stack frame")) < 0 ? 0 : v;
    /* "N bytes smem" on the Used line (absent when the kernel has none) */
    const char *used = strstr(from, "Used ");
    const char *eol = used ? strchr(used, '\n') : NULL;
    r->static_smem = 0;
    if (used) {
        char line[512];
        size_t n = eol ? (size_t)(eol - used) : strlen(used);
        if (n >= sizeof line) n = sizeof line - 1;
        memcpy(line, used, n);
        line[n] = 0;
        v = num_before(line, " bytes smem");
        r->static_smem = v < 0 ? 0 : v;
    }
}
#endif

fa_status fa_nvrtc_compile(fa_ctx *ctx, const char *src, const char *name, const char *arch, fa_nvrtc_result *out,
                           uint8_t **cubin, size_t *cubin_len)
{
#ifndef FA_HAVE_CUDA
    (void)src;
    (void)name;
    (void)arch;
    (void)out;
    (void)cubin;
    (void)cubin_len;
    return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "NVRTC: this build has no CUDA toolkit");
#else
    if (!src || !name) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "fa_nvrtc_compile: NULL source or name");
    const char *a = arch && arch[0] ? arch : "sm_90";
    char archopt[64];
    if (!strncmp(a, "sm_", 3)) snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", a);
    else if (a[0] >= '0' && a[0] <= '9' && strchr(a, '.')) /* "9.0" */
        snprintf(archopt, sizeof archopt, "--gpu-architecture=sm_%c%c", a[0], strchr(a, '.')[1]);
    else snprintf(archopt, sizeof archopt, "--gpu-architecture=sm_%s", a);
    const char *opts[] = {archopt, "--ptxas-options=-v", "--std=c++17"};
    fa_status st = FA_OK;
    nvrtcProgram prog = NULL;
    NVRTC_CHECK(ctx, st, nvrtcCreateProgram(&prog, src, "fa_fused.cu", 0, NULL, NULL));
    if (st) return st;
    /* checked below, after the log is read: a compile error is reported with its log */
    const int cr_line = __LINE__ + 1;
    nvrtcResult cr = nvrtcCompileProgram(prog, (int)(sizeof opts / sizeof opts[0]), opts);
    size_t log_len = 0;
    char *log = NULL;
    NVRTC_CHECK(ctx, st, nvrtcGetProgramLogSize(prog, &log_len));
    if (!st) {
        log = malloc(log_len + 1);
        if (!log) st = fa_ctx_error(ctx, FA_ERR_NOMEM, "NVRTC: out of memory for a %zu-byte log", log_len);
        else {
            log[0] = 0;
            NVRTC_CHECK(ctx, st, nvrtcGetProgramLog(prog, log));
            log[log_len] = 0;
        }
    }
    if (!st && cr != NVRTC_SUCCESS) {
        /* only NVRTC's diagnostics about the generated source, capped (fa_compiler_diagnostics) */
        fa_buf d;
        fa_buf_init(&d);
        if (fa_compiler_diagnostics(&d, log ? log : "", log ? strlen(log) : 0, "fa_fused.cu", 1500) == 0)
            fa_buf_puts(&d, "no diagnostic about the generated source");
        fa_log(ctx, FA_LOG_DEBUG, "nvrtcCompileProgram at %s:%d", __FILE__, cr_line);
        st = fa_ctx_error(ctx, FA_ERR_RUNTIME, "NVRTC compile of the generated kernel %s (%s) failed: %s: %s", name, archopt,
                          nvrtcGetErrorString(cr), d.data ? d.data : "");
        fa_buf_free(&d);
    }
    uint8_t *bin = NULL;
    size_t bin_len = 0;
    if (!st) {
        NVRTC_CHECK(ctx, st, nvrtcGetCUBINSize(prog, &bin_len));
        if (!st && cubin) {
            bin = malloc(bin_len ? bin_len : 1);
            if (!bin) st = fa_ctx_error(ctx, FA_ERR_NOMEM, "NVRTC: out of memory for a %zu-byte cubin", bin_len);
            else NVRTC_CHECK(ctx, st, nvrtcGetCUBIN(prog, (char *)bin));
        }
    }
    if (!st && !strstr(log ? log : "", "Used "))
        st = fa_ctx_error(ctx, FA_ERR_RUNTIME, "NVRTC: no ptxas info for %s in the log (--ptxas-options=-v ignored?)", name);
    if (!st && out) {
        fa_nvrtc_result r;
        memset(&r, 0, sizeof r);
        parse_log(log, name, &r);
        snprintf(r.log, sizeof r.log, "%s", log);
        *out = r;
    }
    fa_status st2 = FA_OK;
    NVRTC_CHECK(ctx, st2, nvrtcDestroyProgram(&prog));
    if (!st && st2) st = st2;
    free(log);
    if (st) {
        free(bin);
        return st;
    }
    if (cubin) {
        *cubin = bin;
        if (cubin_len) *cubin_len = bin_len;
    } else if (cubin_len) {
        *cubin_len = bin_len;
    }
    return FA_OK;
#endif
}
