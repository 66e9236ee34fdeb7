/* runtime/cuda/dnn — cuDNN (Conv) loaded at run time and cuBLAS (MatMul/Gemm) glue for the cuda
 * executor. cuDNN 9 is not linked by the build: libcudnn.so.9 is opened with dlopen and the
 * legacy convolution API (cudnn_cnn.h: cudnnConvolutionForward, ..._v7 algorithm query) is used,
 * which cuDNN 9.x still ships. */
#include "runtime/cuda/cuda-impl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define CUDNN_FNS(X)                                                                                         \
    X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnGetVersion)               \
    X(cudnnCreateTensorDescriptor) X(cudnnSetTensorNdDescriptor) X(cudnnDestroyTensorDescriptor)             \
    X(cudnnCreateFilterDescriptor) X(cudnnSetFilterNdDescriptor) X(cudnnDestroyFilterDescriptor)             \
    X(cudnnCreateConvolutionDescriptor) X(cudnnSetConvolutionNdDescriptor)                                   \
    X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType) X(cudnnDestroyConvolutionDescriptor)     \
    X(cudnnGetConvolutionForwardAlgorithm_v7) X(cudnnGetConvolutionForwardWorkspaceSize)                     \
    X(cudnnConvolutionForward) X(cudnnAddTensor)

static struct {
    pthread_once_t once;
    fa_status status;
    char msg[512];
    void *lib;
#define X(f) __typeof__(&f) f;
    CUDNN_FNS(X)
#undef X
} N = {.once = PTHREAD_ONCE_INIT};

static void cudnn_load_once(void)
{
    const char *path = getenv("FA_CUDNN_LIB");
    if (!path || !*path) path = "libcudnn.so.9";
    N.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!N.lib) {
        const char *e = dlerror();
        N.status = FA_ERR_UNSUPPORTED;
        snprintf(N.msg, sizeof N.msg, "cuDNN not available (dlopen %s: %s)", path, e ? e : "not found");
        return;
    }
#define X(f)                                                                                                 \
    if (!(N.f = (__typeof__(&f))dlsym(N.lib, #f))) {                                                         \
        N.status = FA_ERR_UNSUPPORTED;                                                                       \
        snprintf(N.msg, sizeof N.msg, "cuDNN %s: symbol %s missing", path, #f);                              \
        return;                                                                                              \
    }
    CUDNN_FNS(X)
#undef X
    N.status = FA_OK;
}

fa_status fa_cudnn_load(fa_ctx *ctx)
{
    pthread_once(&N.once, cudnn_load_once);
    if (N.status) return fa_ctx_error(ctx, N.status, "%s", N.msg);
    return FA_OK;
}

static fa_status dnn_check(fa_ctx *ctx, cudnnStatus_t s, const char *call, const char *file, int line)
{
    if (s == CUDNN_STATUS_SUCCESS) return FA_OK;
    return fa_ctx_error(ctx, FA_ERR_RUNTIME, "%s failed at %s:%d: %s", call, file, line,
                        N.cudnnGetErrorString ? N.cudnnGetErrorString(s) : "cuDNN error");
}
#define DNN_CHECK(ctx, call)                                                                                 \
    do {                                                                                                     \
        fa_status st_ = dnn_check((ctx), (call), #call, __FILE__, __LINE__);                                 \
        if (st_) return st_;                                                                                 \
    } while (0)

fa_status fa_cudnn_handle_create(fa_ctx *ctx, cudaStream_t stream, cudnnHandle_t *out)
{
    fa_status st = fa_cudnn_load(ctx);
    if (st) return st;
    DNN_CHECK(ctx, N.cudnnCreate(out));
    DNN_CHECK(ctx, N.cudnnSetStream(*out, stream));
    return FA_OK;
}

void fa_cudnn_handle_free(cudnnHandle_t h)
{
    if (h && N.cudnnDestroy) N.cudnnDestroy(h);
}

size_t fa_cudnn_version(void)
{
    return N.cudnnGetVersion ? N.cudnnGetVersion() : 0;
}

static void set_nchw(int rank, const int64_t *dims, int *d, int *s)
{
    for (int i = 0; i < rank; i++) d[i] = (int)dims[i];
    s[rank - 1] = 1;
    for (int i = rank - 2; i >= 0; i--) s[i] = s[i + 1] * d[i + 1];
}

fa_status fa_cudnn_conv_prepare(fa_ctx *ctx, cudnnHandle_t h, fa_cuda_conv *c)
{
    int xd[8], xs[8], wd[8], ws[8], yd[8], ys[8];
    int r = c->rank;
    set_nchw(r, c->x_dims, xd, xs);
    set_nchw(r, c->w_dims, wd, ws);
    set_nchw(r, c->y_dims, yd, ys);
    DNN_CHECK(ctx, N.cudnnCreateTensorDescriptor(&c->xdesc));
    DNN_CHECK(ctx, N.cudnnCreateTensorDescriptor(&c->ydesc));
    DNN_CHECK(ctx, N.cudnnCreateFilterDescriptor(&c->wdesc));
    DNN_CHECK(ctx, N.cudnnCreateConvolutionDescriptor(&c->cdesc));
    DNN_CHECK(ctx, N.cudnnSetTensorNdDescriptor(c->xdesc, CUDNN_DATA_FLOAT, r, xd, xs));
    DNN_CHECK(ctx, N.cudnnSetTensorNdDescriptor(c->ydesc, CUDNN_DATA_FLOAT, r, yd, ys));
    DNN_CHECK(ctx, N.cudnnSetFilterNdDescriptor(c->wdesc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, r, wd));
    DNN_CHECK(ctx, N.cudnnSetConvolutionNdDescriptor(c->cdesc, r - 2, c->pads, c->strides, c->dilations,
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    DNN_CHECK(ctx, N.cudnnSetConvolutionGroupCount(c->cdesc, c->groups));
    /* FMA math: no TF32, so results match the cpu target's fp32 within fp32 rounding */
    DNN_CHECK(ctx, N.cudnnSetConvolutionMathType(c->cdesc, CUDNN_FMA_MATH));
    if (c->has_bias) {
        int bd[8] = {1, (int)c->y_dims[1]}, bs[8];
        for (int i = 2; i < r; i++) bd[i] = 1;
        set_nchw(r, (int64_t[8]){1, c->y_dims[1], 1, 1, 1, 1, 1, 1}, bd, bs);
        DNN_CHECK(ctx, N.cudnnCreateTensorDescriptor(&c->bdesc));
        DNN_CHECK(ctx, N.cudnnSetTensorNdDescriptor(c->bdesc, CUDNN_DATA_FLOAT, r, bd, bs));
    }
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    DNN_CHECK(ctx, N.cudnnGetConvolutionForwardAlgorithm_v7(h, c->xdesc, c->wdesc, c->cdesc, c->ydesc,
                                                            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));
    c->algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    for (int i = 0; i < got; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= (size_t)1 << 30) {
            c->algo = perf[i].algo;
            break;
        }
    DNN_CHECK(ctx, N.cudnnGetConvolutionForwardWorkspaceSize(h, c->xdesc, c->wdesc, c->cdesc, c->ydesc, c->algo,
                                                             &c->workspace_bytes));
    return FA_OK;
}

fa_status fa_cudnn_conv_run(fa_ctx *ctx, cudnnHandle_t h, const fa_cuda_conv *c, const void *x, const void *w,
                            const void *b, void *y, void *workspace)
{
    const float one = 1.f, zero = 0.f;
    DNN_CHECK(ctx, N.cudnnConvolutionForward(h, &one, c->xdesc, x, c->wdesc, w, c->cdesc, c->algo, workspace,
                                             c->workspace_bytes, &zero, c->ydesc, y));
    if (c->has_bias && b) DNN_CHECK(ctx, N.cudnnAddTensor(h, &one, c->bdesc, b, &one, c->ydesc, y));
    return FA_OK;
}

void fa_cudnn_conv_free(fa_cuda_conv *c)
{
    if (!N.lib || N.status) return;
    if (c->xdesc) N.cudnnDestroyTensorDescriptor(c->xdesc);
    if (c->ydesc) N.cudnnDestroyTensorDescriptor(c->ydesc);
    if (c->bdesc) N.cudnnDestroyTensorDescriptor(c->bdesc);
    if (c->wdesc) N.cudnnDestroyFilterDescriptor(c->wdesc);
    if (c->cdesc) N.cudnnDestroyConvolutionDescriptor(c->cdesc);
    memset(c, 0, sizeof *c);
}

/* ---- cuBLAS ---- */

fa_status fa_cublas_check(fa_ctx *ctx, cublasStatus_t s, const char *call, const char *file, int line)
{
    if (s == CUBLAS_STATUS_SUCCESS) return FA_OK;
    return fa_ctx_error(ctx, FA_ERR_RUNTIME, "%s failed at %s:%d: %s", call, file, line, cublasGetStatusString(s));
}

/* Row-major C[M,N] (+)= op(A) op(B) for `batch` matrices, A/B/C strides in elements (0 =
 * broadcast). Row-major X is column-major X^T, so this computes C^T = op(B)^T op(A)^T:
 * cublasSgemmStridedBatched(opB, opA, N, M, K, B, ldb, A, lda, C, ldc = N). */
fa_status fa_cublas_gemm(fa_ctx *ctx, cublasHandle_t h, bool ta, bool tb, int m, int n, int k, float alpha,
                         const float *a, long long sa, const float *b, long long sb, float beta, float *c,
                         long long sc, int batch)
{
    int lda = ta ? m : k, ldb = tb ? k : n;
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (!h) {
        fa_cuda_emu_sgemm_batched(tb, ta, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, c, n, sc, batch);
        return FA_OK;
    }
    if (batch == 1)
        return FA_CUBLAS_CHECK(ctx, cublasSgemm(h, opb, opa, n, m, k, &alpha, b, ldb, a, lda, &beta, c, n));
    return FA_CUBLAS_CHECK(ctx, cublasSgemmStridedBatched(h, opb, opa, n, m, k, &alpha, b, ldb, sb, a, lda, sa,
                                                          &beta, c, n, sc, batch));
}
