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

/* Layouts of the kernel argument structs (FaBc / FaCp in the CUDA source). */
typedef struct fa_bc {
    int32_t rank;
    int32_t pad_;
    int64_t n;
    int64_t dims[8], sa[8], sb[8], sc[8];
} fa_bc;
typedef struct fa_cp {
    int32_t rank;
    int32_t pad_;
    int64_t n, base;
    int64_t dims[8], s[8];
} fa_cp;

/* ---- host emulation (tests without a GPU): C versions of every executor kernel with the same
 *      index arithmetic, and naive GEMM / convolution in the cuBLAS / cuDNN calling conventions.
 *      `args` is the cuLaunchKernel parameter array the executor builds. */
fa_status fa_cuda_emu_launch(fa_ctx *ctx, const char *kernel, void **args);
/* Column-major SGEMM with cublasSgemmStridedBatched's parameters (ops, m, n, k, lda, ldb, ldc,
 * strides); the executor calls it with exactly the arguments it gives cuBLAS. */
void fa_cuda_emu_sgemm_batched(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                               long long sa, const float *b, int ldb, long long sb, float beta, float *c, int ldc,
                               long long sc, int batch);
/* Cross-correlation with the cuDNN descriptor parameters of c (rank 4 only), bias optional. */
fa_status fa_cuda_emu_conv(fa_ctx *ctx, const fa_cuda_conv *c, const float *x, const float *w, const float *b, float *y);

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
/* h NULL: run fa_cuda_emu_sgemm_batched on host memory with the same arguments. */
fa_status fa_cublas_gemm(fa_ctx *ctx, cublasHandle_t h, bool ta, bool tb, int m, int n, int k, float alpha,
                         const float *a, long long sa, const float *b, long long sb, float beta, float *c,
                         long long sc, int batch);

#endif
