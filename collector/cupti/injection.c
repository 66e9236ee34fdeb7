/* collector/cupti/injection — the CUPTI injection tracer (libfuse-advise-cupti.so): loaded by
 * the CUDA driver into any CUDA program through CUDA_INJECTION64_PATH, it starts the activity
 * collector at cuInit and writes the converted records at exit to "$FA_CUPTI_OUT.<pid>"
 * (fa_cupti_trace_write), which `fuse-advise trace` reads. It never aborts or exits the host
 * program: a failure becomes a note in the file. docs/cuda.md, "Injection protocol". */
#include "collector/cupti/cupti.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FA_EXPORT __attribute__((visibility("default")))

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static char g_start_error[1024];
static bool g_started;
static char g_out[4096];

static void write_out(void)
{
    fa_ctx *ctx = fa_ctx_create();
    if (!ctx) return;
    fa_trace *t = NULL;
    fa_cupti_stats st = {0};
    char *notes = NULL;
    const char *nv[2];
    int nn = 0;
    if (g_started && fa_cupti_stop(ctx, &t, &st, &notes) != FA_OK) {
        snprintf(g_start_error, sizeof g_start_error, "stopping the collector: %s", fa_ctx_errmsg(ctx));
        t = NULL;
    }
    if (g_start_error[0]) nv[nn++] = g_start_error;
    if (notes) nv[nn++] = notes;
    fa_trace *empty = t ? NULL : fa_trace_create("cupti");
    if (t || empty) {
        char path[4200];
        snprintf(path, sizeof path, "%s.%ld", g_out, (long)getpid());
        fa_cupti_trace_write(ctx, path, t ? t : empty, &st, nv, nn); /* nobody to tell on failure */
    }
    fa_trace_free(t);
    fa_trace_free(empty);
    free(notes);
    fa_ctx_free(ctx);
}

static void at_exit(void)
{
    write_out();
}

static void init_once(void)
{
    const char *out = getenv(FA_CUPTI_OUT_ENV);
    if (!out || !*out || strlen(out) >= sizeof g_out) return; /* not under `fuse-advise trace` */
    snprintf(g_out, sizeof g_out, "%s", out);
    fa_ctx *ctx = fa_ctx_create();
    if (!ctx) return;
    unsigned flags = getenv("FA_CUPTI_NO_NVTX") ? FA_CUPTI_NO_NVTX : 0;
    if (fa_cupti_start(ctx, flags) == FA_OK) g_started = true;
    else snprintf(g_start_error, sizeof g_start_error, "%s", fa_ctx_errmsg(ctx));
    fa_ctx_free(ctx);
    atexit(at_exit);
}

/* CUDA injection entry point (CUDA_INJECTION64_PATH): called once by the driver during cuInit.
 * Returns 1 (success) in every case so the host program always continues. */
FA_EXPORT int InitializeInjection(void)
{
    pthread_once(&g_once, init_once);
    return 1;
}
