/* runtime/cuda/libcuda — the driver API loaded at run time: dlopen("libcuda.so.1") and dlsym of
 * the few cu* entry points we use, so binaries start on machines without an NVIDIA driver. */
#include "runtime/cuda/cuda.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult (*pfn_cuInit)(unsigned);
typedef CUresult (*pfn_cuDriverGetVersion)(int *);
typedef CUresult (*pfn_cuDeviceGetCount)(int *);
typedef CUresult (*pfn_cuDeviceGet)(CUdevice *, int);
typedef CUresult (*pfn_cuDeviceGetName)(char *, int, CUdevice);
typedef CUresult (*pfn_cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*pfn_cuModuleLoadData)(CUmodule *, const void *);
typedef CUresult (*pfn_cuModuleUnload)(CUmodule);
typedef CUresult (*pfn_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
typedef CUresult (*pfn_cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                       unsigned, CUstream, void **, void **);
typedef CUresult (*pfn_cuFuncGetAttribute)(int *, CUfunction_attribute, CUfunction);
typedef CUresult (*pfn_cuGetErrorString)(CUresult, const char **);

static struct {
    pthread_once_t once;
    fa_status status;
    char msg[512];
    void *lib;
    pfn_cuInit cuInit;
    pfn_cuDriverGetVersion cuDriverGetVersion;
    pfn_cuDeviceGetCount cuDeviceGetCount;
    pfn_cuDeviceGet cuDeviceGet;
    pfn_cuDeviceGetName cuDeviceGetName;
    pfn_cuDeviceGetAttribute cuDeviceGetAttribute;
    pfn_cuModuleLoadData cuModuleLoadData;
    pfn_cuModuleUnload cuModuleUnload;
    pfn_cuModuleGetFunction cuModuleGetFunction;
    pfn_cuLaunchKernel cuLaunchKernel;
    pfn_cuFuncGetAttribute cuFuncGetAttribute;
    pfn_cuGetErrorString cuGetErrorString;
} D = {.once = PTHREAD_ONCE_INIT};

static const char *cu_err(CUresult r)
{
    const char *s = NULL;
    if (D.cuGetErrorString && D.cuGetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
    return "unknown CUDA driver error";
}

static void load_once(void)
{
    /* FA_CUDA_DRIVER overrides the library (tests point it at a missing file) */
    const char *path = getenv("FA_CUDA_DRIVER");
    if (!path || !*path) path = "libcuda.so.1";
    D.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!D.lib) {
        const char *e = dlerror();
        D.status = FA_ERR_UNSUPPORTED;
        snprintf(D.msg, sizeof D.msg, "no CUDA driver (dlopen %s: %s)", path, e ? e : "not found");
        return;
    }
    struct {
        const char *name;
        void **slot;
    } syms[] = {
        {"cuInit", (void **)&D.cuInit},
        {"cuDriverGetVersion", (void **)&D.cuDriverGetVersion},
        {"cuDeviceGetCount", (void **)&D.cuDeviceGetCount},
        {"cuDeviceGet", (void **)&D.cuDeviceGet},
        {"cuDeviceGetName", (void **)&D.cuDeviceGetName},
        {"cuDeviceGetAttribute", (void **)&D.cuDeviceGetAttribute},
        {"cuModuleLoadData", (void **)&D.cuModuleLoadData},
        {"cuModuleUnload", (void **)&D.cuModuleUnload},
        {"cuModuleGetFunction", (void **)&D.cuModuleGetFunction},
        {"cuLaunchKernel", (void **)&D.cuLaunchKernel},
        {"cuFuncGetAttribute", (void **)&D.cuFuncGetAttribute},
        {"cuGetErrorString", (void **)&D.cuGetErrorString},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(D.lib, syms[i].name);
        if (!*syms[i].slot) {
            D.status = FA_ERR_UNSUPPORTED;
            snprintf(D.msg, sizeof D.msg, "no CUDA driver (%s: symbol %s missing)", path, syms[i].name);
            return;
        }
    }
    CUresult r = D.cuInit(0);
    if (r != CUDA_SUCCESS) {
        D.status = FA_ERR_UNSUPPORTED;
        snprintf(D.msg, sizeof D.msg, "no CUDA driver usable (cuInit failed: %s (%d))", cu_err(r), (int)r);
        return;
    }
    D.status = FA_OK;
}

fa_status fa_cuda_driver_load(fa_ctx *ctx)
{
    pthread_once(&D.once, load_once);
    if (D.status) {
        fa_ctx_error(ctx, D.status, "%s", D.msg);
        return fa_ctx_reason_set(ctx, FA_REASON_DEVICE_UNAVAILABLE);
    }
    return FA_OK;
}

#define DRV_CHECK(ctx, fail, call)                                                                           \
    do {                                                                                                     \
        CUresult r_ = (call);                                                                                \
        if (r_ != CUDA_SUCCESS)                                                                              \
            return fa_ctx_error((ctx), (fail), "%s failed at %s:%d: %s (%d)", #call, __FILE__, __LINE__,     \
                                cu_err(r_), (int)r_);                                                        \
    } while (0)

int fa_cuda_device_count(void)
{
    fa_ctx *ctx = fa_ctx_create();
    int n = 0;
    if (ctx && fa_cuda_driver_load(ctx) == FA_OK && D.cuDeviceGetCount(&n) != CUDA_SUCCESS) n = 0;
    fa_ctx_free(ctx);
    return n;
}

fa_status fa_cuda_device_query(fa_ctx *ctx, int ordinal, fa_cuda_device_info *out)
{
    fa_status st = fa_cuda_driver_load(ctx);
    if (st) return st;
    int n = 0;
    CUresult r = D.cuDeviceGetCount(&n);
    if (r != CUDA_SUCCESS) n = 0; /* the driver loads but sees no device: as none present */
    if (ordinal < 0 || ordinal >= n) {
        fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "no CUDA device %d (%d present%s%s)", ordinal, n,
                     r != CUDA_SUCCESS ? "; cuDeviceGetCount: " : "", r != CUDA_SUCCESS ? cu_err(r) : "");
        return fa_ctx_reason_set(ctx, FA_REASON_DEVICE_UNAVAILABLE);
    }
    CUdevice dev;
    fa_cuda_device_info info = {.ordinal = ordinal};
    DRV_CHECK(ctx, FA_ERR_RUNTIME, D.cuDeviceGet(&dev, ordinal));
    DRV_CHECK(ctx, FA_ERR_RUNTIME, D.cuDeviceGetName(info.name, (int)sizeof info.name, dev));
    DRV_CHECK(ctx, FA_ERR_RUNTIME, D.cuDeviceGetAttribute(&info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    DRV_CHECK(ctx, FA_ERR_RUNTIME, D.cuDeviceGetAttribute(&info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    DRV_CHECK(ctx, FA_ERR_RUNTIME, D.cuDeviceGetAttribute(&info.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    /* clock attributes are deprecated on new drivers and may fail: 0 = unknown */
    if (D.cuDeviceGetAttribute(&info.sm_clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev) != CUDA_SUCCESS) info.sm_clock_khz = 0;
    if (D.cuDeviceGetAttribute(&info.mem_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev) != CUDA_SUCCESS) info.mem_clock_khz = 0;
    if (D.cuDeviceGetAttribute(&info.mem_bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev) != CUDA_SUCCESS) info.mem_bus_bits = 0;
    if (D.cuDeviceGetAttribute(&info.l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev) != CUDA_SUCCESS) info.l2_bytes = 0;
    if (D.cuDriverGetVersion(&info.driver_version) != CUDA_SUCCESS) info.driver_version = 0;
    *out = info;
    return FA_OK;
}

struct fa_cuda_module {
    CUmodule mod;
};

fa_status fa_cuda_module_load(fa_ctx *ctx, const void *cubin, fa_cuda_module **out)
{
    fa_status st = fa_cuda_driver_load(ctx);
    if (st) return st;
    fa_cuda_module *m = calloc(1, sizeof *m);
    if (!m) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    CUresult r = D.cuModuleLoadData(&m->mod, cubin);
    if (r != CUDA_SUCCESS) {
        free(m);
        return fa_ctx_error(ctx, FA_ERR_RUNTIME, "cuModuleLoadData failed: %s (%d)", cu_err(r), (int)r);
    }
    *out = m;
    return FA_OK;
}

void fa_cuda_module_unload(fa_cuda_module *m)
{
    if (!m) return;
    if (D.cuModuleUnload) D.cuModuleUnload(m->mod);
    free(m);
}

fa_status fa_cuda_module_function(fa_ctx *ctx, fa_cuda_module *m, const char *name, void **fn)
{
    CUfunction f;
    CUresult r = D.cuModuleGetFunction(&f, m->mod, name);
    if (r != CUDA_SUCCESS)
        return fa_ctx_error(ctx, FA_ERR_RUNTIME, "cuModuleGetFunction(%s) failed: %s (%d)", name, cu_err(r), (int)r);
    *fn = (void *)f;
    return FA_OK;
}

fa_status fa_cuda_launch(fa_ctx *ctx, void *fn, const unsigned grid[3], const unsigned block[3],
                         unsigned dyn_smem, void *stream, void **args)
{
    DRV_CHECK(ctx, FA_ERR_RUNTIME,
              D.cuLaunchKernel((CUfunction)fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], dyn_smem,
                               (CUstream)stream, args, NULL));
    return FA_OK;
}

int fa_cuda_function_regs(void *fn)
{
    int v = -1;
    if (!D.cuFuncGetAttribute || D.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)fn) != CUDA_SUCCESS)
        return -1;
    return v;
}

fa_status fa_cuda_rt_check(fa_ctx *ctx, int err, fa_status fail, const char *call, const char *file, int line)
{
    if (err == cudaSuccess) return FA_OK;
    return fa_ctx_error(ctx, fail, "%s failed at %s:%d: %s: %s", call, file, line,
                        cudaGetErrorName((cudaError_t)err), cudaGetErrorString((cudaError_t)err));
}
