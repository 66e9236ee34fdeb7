/* runtime/cuda/cuda-impl — private: cuDNN / cuBLAS glue shared by exec_cuda.c and dnn.c. */
#ifndef FA_RUNTIME_CUDA_IMPL_H
#define FA_RUNTIME_CUDA_IMPL_H

#include "runtime/cuda/cuda.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

/* One Conv node's cuDNN state (NCHW fp32, rank 3..5 tensors; 1-D convs are given as rank 4 with
 * H = 1 by the caller). */
typedef struct fa_cuda_conv {
    int rank;
    int64_t x_dims[8], w_dims[8], y_dims[8];
    int pads[6], strides[6], dilations[6]; /* per spatial dim; pads symmetric (asymmetric refused) */
    int groups;
    bool has_bias;
    cudnnTensorDescriptor_t xdesc, ydesc, bdesc;
    cudnnFilterDescriptor_t wdesc;
    cudnnConvolutionDescriptor_t cdesc;
    cudnnConvolutionFwdAlgo_t algo;
    size_t workspace_bytes;
} fa_cuda_conv;

fa_status fa_cudnn_load(fa_ctx *ctx);
size_t fa_cudnn_version(void);
fa_status fa_cudnn_handle_create(fa_ctx *ctx, cudaStream_t stream, cudnnHandle_t *out);
void fa_cudnn_handle_free(cudnnHandle_t h);
fa_status fa_cudnn_conv_prepare(fa_ctx *ctx, cudnnHandle_t h, fa_cuda_conv *c);
fa_status fa_cudnn_conv_run(fa_ctx *ctx, cudnnHandle_t h, const fa_cuda_conv *c, const void *x, const void *w,
                            const void *b, void *y, void *workspace);
void fa_cudnn_conv_free(fa_cuda_conv *c);

fa_status fa_cublas_check(fa_ctx *ctx, cublasStatus_t s, const char *call, const char *file, int line);
#define FA_CUBLAS_CHECK(ctx, call) fa_cublas_check((ctx), (call), #call, __FILE__, __LINE__)
fa_status fa_cublas_gemm(fa_ctx *ctx, cublasHandle_t h, bool ta, bool tb, int m, int n, int k, float alpha,
                         const float *a, long long sa, const float *b, long long sb, float beta, float *c,
                         long long sc, int batch);

#endif
