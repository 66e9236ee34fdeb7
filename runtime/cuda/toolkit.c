/* runtime/cuda/toolkit — the CUDA toolkit libraries (cudart, NVRTC, CUPTI, cuBLAS) opened with
 * dlopen on the first call of one of their functions, so the fuse-advise binary links none of
 * them: `--help`, every read verb and a cpu run never map them (cuBLAS with cuBLASLt alone is
 * over 200 MB resident). Each function this project calls is defined here under the vendor's
 * name with the vendor header's prototype (the compiler checks them against the headers); the
 * definition loads its library once, resolves the real function and forwards the call. When
 * the library cannot be loaded it returns the API's own "not initialized" error, and the
 * API's error-string function returns the loader's message, so every checking macro reports
 * why. Implib.so (github.com/yugr/Implib.so) generates such stubs from a library's exports;
 * we keep the 44 entry points we use by hand, so the set is reviewed. docs/cuda.md. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <link.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda/cuda.h"

#ifndef FA_CUDA_SOVERSION
#define FA_CUDA_SOVERSION "13"
#endif
#ifndef FA_CUDA_TOOLKIT_LIBDIR
#define FA_CUDA_TOOLKIT_LIBDIR ""
#endif

typedef struct toolkit_lib {
    const char *stem; /* "libcudart.so." */
    pthread_once_t once;
    void *handle;
    char path[1024];  /* the file dlopen opened */
    char error[1024]; /* why it could not be opened */
} toolkit_lib;

static toolkit_lib g_libs[] = {
    [FA_CUDA_LIB_CUDART] = {"libcudart.so.", PTHREAD_ONCE_INIT, NULL, "", ""},
    [FA_CUDA_LIB_NVRTC] = {"libnvrtc.so.", PTHREAD_ONCE_INIT, NULL, "", ""},
    [FA_CUDA_LIB_CUPTI] = {"libcupti.so.", PTHREAD_ONCE_INIT, NULL, "", ""},
    [FA_CUDA_LIB_CUBLAS] = {"libcublas.so.", PTHREAD_ONCE_INIT, NULL, "", ""},
};
_Static_assert(sizeof g_libs / sizeof g_libs[0] == FA_CUDA_LIB_COUNT, "g_libs: one row per value");

static void *try_open(toolkit_lib *l, const char *dir, const char *soname)
{
    char file[1024];
    if (dir && *dir) snprintf(file, sizeof file, "%s/%s", dir, soname);
    else snprintf(file, sizeof file, "%s", soname);
    void *h = dlopen(file, RTLD_NOW | RTLD_GLOBAL);
    if (!h && !l->error[0]) snprintf(l->error, sizeof l->error, "%s", dlerror());
    return h;
}

/* Search order: each folder of $FA_CUDA_LIBDIR (':'-separated), then the soname through the
 * loader's own search (LD_LIBRARY_PATH, the executable's RUNPATH, ld.so.cache), then the
 * toolkit this binary was built against, then /usr/local/cuda's lib64, lib and, for CUPTI,
 * extras/CUPTI/lib64 (where the CUDA installer puts it). */
static void load_lib(toolkit_lib *l)
{
    char soname[128];
    snprintf(soname, sizeof soname, "%s%s", l->stem, FA_CUDA_SOVERSION);
    const char *env = getenv("FA_CUDA_LIBDIR");
    if (env && *env) {
        char dirs[4096];
        snprintf(dirs, sizeof dirs, "%s", env);
        char *save = NULL;
        for (char *d = strtok_r(dirs, ":", &save); d && !l->handle; d = strtok_r(NULL, ":", &save))
            if (*d) l->handle = try_open(l, d, soname);
    }
    const char *fixed[] = {"", FA_CUDA_TOOLKIT_LIBDIR, "/usr/local/cuda/lib64", "/usr/local/cuda/lib",
                           "/usr/local/cuda/extras/CUPTI/lib64"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && !l->handle; i++)
        if (i == 0 || *fixed[i]) l->handle = try_open(l, fixed[i], soname);
    struct link_map *lm = NULL;
    if (l->handle && dlinfo(l->handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
        snprintf(l->path, sizeof l->path, "%s", lm->l_name);
    if (!l->handle) {
        char e[1024];
        snprintf(e, sizeof e, "%s", l->error);
        snprintf(l->error, sizeof l->error, "cannot load %s (set FA_CUDA_LIBDIR or LD_LIBRARY_PATH): %s", soname, e);
    }
}

#define LOAD_FN(IDX) \
    static void load_##IDX(void) { load_lib(&g_libs[IDX]); }
LOAD_FN(FA_CUDA_LIB_CUDART)
LOAD_FN(FA_CUDA_LIB_NVRTC)
LOAD_FN(FA_CUDA_LIB_CUPTI)
LOAD_FN(FA_CUDA_LIB_CUBLAS)

static void (*const g_load[FA_CUDA_LIB_COUNT])(void) = {
    [FA_CUDA_LIB_CUDART] = load_FA_CUDA_LIB_CUDART,
    [FA_CUDA_LIB_NVRTC] = load_FA_CUDA_LIB_NVRTC,
    [FA_CUDA_LIB_CUPTI] = load_FA_CUDA_LIB_CUPTI,
    [FA_CUDA_LIB_CUBLAS] = load_FA_CUDA_LIB_CUBLAS,
};

static toolkit_lib *lib_open(fa_cuda_lib lib)
{
    toolkit_lib *l = &g_libs[lib];
    pthread_once(&l->once, g_load[lib]);
    return l;
}

const char *fa_cuda_lib_path(fa_cuda_lib lib)
{
    if ((unsigned)lib >= FA_CUDA_LIB_COUNT) return NULL;
    toolkit_lib *l = lib_open(lib);
    return l->handle ? l->path : NULL;
}

const char *fa_cuda_lib_error(fa_cuda_lib lib)
{
    if ((unsigned)lib >= FA_CUDA_LIB_COUNT) return "no such library";
    toolkit_lib *l = lib_open(lib);
    return l->handle ? "" : l->error;
}

/* The real function `name` of `lib`, or NULL (its library could not be loaded, or it lacks
 * the symbol: then the error says so). */
static void *toolkit_sym(fa_cuda_lib lib, const char *name)
{
    toolkit_lib *l = lib_open(lib);
    if (!l->handle) return NULL;
    void *p = dlsym(l->handle, name);
    if (!p) {
        char file[sizeof l->path];
        memcpy(file, l->path, sizeof file);
        snprintf(l->error, sizeof l->error, "%s has no %s: %s", file, name, dlerror());
    }
    return p;
}

/* One forwarding definition: the real pointer is resolved once (a benign race: every thread
 * stores the same value, through atomics). */
#define FORWARD(LIB, RET, NAME, PARAMS, ARGS, FAIL)                                                                    \
    RET NAME PARAMS                                                                                                    \
    {                                                                                                                  \
        static RET(*fn) PARAMS;                                                                                        \
        RET(*f) PARAMS = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);                                                       \
        if (!f) {                                                                                                      \
            f = (RET(*) PARAMS)toolkit_sym(LIB, #NAME);                                                                \
            if (!f) return FAIL;                                                                                       \
            __atomic_store_n(&fn, f, __ATOMIC_RELEASE);                                                                \
        }                                                                                                              \
        return f ARGS;                                                                                                 \
    }

/* ---- cudart (cuda_runtime_api.h) ---- */
#define RT(NAME, PARAMS, ARGS) FORWARD(FA_CUDA_LIB_CUDART, cudaError_t, NAME, PARAMS, ARGS, cudaErrorSharedObjectInitFailed)
RT(cudaDeviceSynchronize, (void), ())
RT(cudaEventCreate, (cudaEvent_t * event), (event))
RT(cudaEventDestroy, (cudaEvent_t event), (event))
RT(cudaEventElapsedTime, (float *ms, cudaEvent_t start, cudaEvent_t end), (ms, start, end))
RT(cudaEventRecord, (cudaEvent_t event, cudaStream_t stream), (event, stream))
RT(cudaEventSynchronize, (cudaEvent_t event), (event))
RT(cudaFree, (void *devPtr), (devPtr))
RT(cudaFreeAsync, (void *devPtr, cudaStream_t hStream), (devPtr, hStream))
RT(cudaMalloc, (void **devPtr, size_t size), (devPtr, size))
RT(cudaMallocAsync, (void **devPtr, size_t size, cudaStream_t hStream), (devPtr, size, hStream))
RT(cudaMemcpy, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind), (dst, src, count, kind))
RT(cudaMemcpyAsync, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream),
   (dst, src, count, kind, stream))
RT(cudaMemsetAsync, (void *devPtr, int value, size_t count, cudaStream_t stream), (devPtr, value, count, stream))
RT(cudaSetDevice, (int device), (device))
RT(cudaStreamCreateWithFlags, (cudaStream_t * pStream, unsigned int flags), (pStream, flags))
RT(cudaStreamDestroy, (cudaStream_t stream), (stream))
RT(cudaStreamSynchronize, (cudaStream_t stream), (stream))
FORWARD(FA_CUDA_LIB_CUDART, const char *, cudaGetErrorName, (cudaError_t error), (error),
        fa_cuda_lib_error(FA_CUDA_LIB_CUDART))
FORWARD(FA_CUDA_LIB_CUDART, const char *, cudaGetErrorString, (cudaError_t error), (error),
        fa_cuda_lib_error(FA_CUDA_LIB_CUDART))

/* ---- NVRTC (nvrtc.h) ---- */
#define NV(NAME, PARAMS, ARGS) FORWARD(FA_CUDA_LIB_NVRTC, nvrtcResult, NAME, PARAMS, ARGS, NVRTC_ERROR_INTERNAL_ERROR)
NV(nvrtcCompileProgram, (nvrtcProgram prog, int numOptions, const char *const *options), (prog, numOptions, options))
NV(nvrtcCreateProgram,
   (nvrtcProgram * prog, const char *src, const char *name, int numHeaders, const char *const *headers,
    const char *const *includeNames),
   (prog, src, name, numHeaders, headers, includeNames))
NV(nvrtcDestroyProgram, (nvrtcProgram * prog), (prog))
NV(nvrtcGetCUBIN, (nvrtcProgram prog, char *cubin), (prog, cubin))
NV(nvrtcGetCUBINSize, (nvrtcProgram prog, size_t *cubinSizeRet), (prog, cubinSizeRet))
NV(nvrtcGetProgramLog, (nvrtcProgram prog, char *log), (prog, log))
NV(nvrtcGetProgramLogSize, (nvrtcProgram prog, size_t *logSizeRet), (prog, logSizeRet))
NV(nvrtcVersion, (int *major, int *minor), (major, minor))
FORWARD(FA_CUDA_LIB_NVRTC, const char *, nvrtcGetErrorString, (nvrtcResult result), (result),
        fa_cuda_lib_error(FA_CUDA_LIB_NVRTC))

/* ---- CUPTI (cupti.h) ---- */
#define CP(NAME, PARAMS, ARGS) FORWARD(FA_CUDA_LIB_CUPTI, CUptiResult, NAME, PARAMS, ARGS, CUPTI_ERROR_NOT_INITIALIZED)
CP(cuptiActivityDisable, (CUpti_ActivityKind kind), (kind))
CP(cuptiActivityEnable, (CUpti_ActivityKind kind), (kind))
CP(cuptiActivityFlushAll, (uint32_t flag), (flag))
CP(cuptiActivityGetNumDroppedRecords, (CUcontext context, uint32_t streamId, size_t *dropped),
   (context, streamId, dropped))
CP(cuptiActivityRegisterCallbacks,
   (CUpti_BuffersCallbackRequestFunc funcBufferRequested, CUpti_BuffersCallbackCompleteFunc funcBufferCompleted),
   (funcBufferRequested, funcBufferCompleted))
CP(cuptiGetCallbackName, (CUpti_CallbackDomain domain, uint32_t cbid, const char **name), (domain, cbid, name))
CP(cuptiGetTimestamp, (uint64_t * timestamp), (timestamp))
CP(cuptiGetVersion, (uint32_t * version), (version))

/* The result string, or the loader's message when CUPTI could not be loaded. */
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
    static CUptiResult (*fn)(CUptiResult, const char **);
    CUptiResult (*f)(CUptiResult, const char **) = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (CUptiResult(*)(CUptiResult, const char **))toolkit_sym(FA_CUDA_LIB_CUPTI, "cuptiGetResultString");
        if (!f) {
            if (str) *str = fa_cuda_lib_error(FA_CUDA_LIB_CUPTI);
            return CUPTI_SUCCESS;
        }
        __atomic_store_n(&fn, f, __ATOMIC_RELEASE);
    }
    return f(result, str);
}

/* ---- cuBLAS (cublas_api.h; cublas_v2.h maps cublasCreate etc. to the _v2 symbols) ---- */
#define BL(NAME, PARAMS, ARGS) FORWARD(FA_CUDA_LIB_CUBLAS, cublasStatus_t, NAME, PARAMS, ARGS, CUBLAS_STATUS_NOT_INITIALIZED)
BL(cublasCreate_v2, (cublasHandle_t * handle), (handle))
BL(cublasDestroy_v2, (cublasHandle_t handle), (handle))
BL(cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode))
BL(cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t streamId), (handle, streamId))
BL(cublasSgemm_v2,
   (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const float *alpha,
    const float *A, int lda, const float *B, int ldb, const float *beta, float *C, int ldc),
   (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
BL(cublasSgemmStridedBatched,
   (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const float *alpha,
    const float *A, int lda, long long int strideA, const float *B, int ldb, long long int strideB, const float *beta,
    float *C, int ldc, long long int strideC, int batchCount),
   (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batchCount))
FORWARD(FA_CUDA_LIB_CUBLAS, const char *, cublasGetStatusString, (cublasStatus_t status), (status),
        fa_cuda_lib_error(FA_CUDA_LIB_CUBLAS))
