/* graph/vmath — float32 transcendental functions over arrays, vectorised with SLEEF (Debian's
 * libsleef-dev, 3.5): 8 lanes of AVX2+FMA, the u10 variants (maximum error 1.0 ULP per SLEEF's
 * documentation; measured against double-precision libm by tests/unit/test_vmath.c), except erf,
 * which is glibc libmvec's where present (<= 2 ULP, 7x faster; fa_verff), and sigmoid and swish,
 * an exponential and reciprocal of our own (graph/vmath.c, graph/vmath512.c; <= 2e-7). The
 * elementwise kernels call these when fa_vmath_available() says the CPU has AVX2 and FMA, and
 * fall back to scalar libm otherwise. Arrays: n floats, y may equal x (not partially overlap). */
#ifndef FA_VMATH_H
#define FA_VMATH_H

#include <stdbool.h>
#include <stdint.h>

/* true when this CPU runs the AVX2+FMA paths (checked once, cpuid). */
bool fa_vmath_available(void);
/* Tests only (not thread-safe): true makes the functions below take their 8-lane AVX2 forms even
 * where the CPU has AVX-512F, so that both forms are checked on one machine; false restores. */
void fa_vmath_force_avx2(bool on);
void fa_vexpf(const float *x, float *y, int64_t n);
/* tanh: SLEEF u35 (<= 3.5 ULP), the one function here not within 1 ULP (vmath.c says why) */
void fa_vtanhf(const float *x, float *y, int64_t n);
/* erf: glibc libmvec's AVX2 erff (<= 2 ULP) where fa_vmath_mvec_erf(), else SLEEF u10 (vmath.c) */
void fa_verff(const float *x, float *y, int64_t n);
/* true when libmvec's erff (GLIBC_2.35) was found; looked up once, thread-safe */
bool fa_vmath_mvec_erf(void);
/* 1 / (1 + exp(-x)) */
void fa_vsigmoidf(const float *x, float *y, int64_t n);
/* x / (1 + exp(-alpha x)) (Swish; SiLU is alpha = 1) */
void fa_vswishf(const float *x, float *y, int64_t n, float alpha);
/* 0.5 x (1 + erf(x / sqrt 2)) (GELU, ONNX Gelu approximate="none") */
void fa_vgeluf(const float *x, float *y, int64_t n);
/* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (ONNX Gelu approximate="tanh") */
void fa_vgelu_tanhf(const float *x, float *y, int64_t n);
/* graph/vmath512.c: 16 AVX-512F lanes of erf (u10) and tanh (u35); fa_verff/fa_vtanhf use them
 * when fa_vmath512_available() (cpuid, checked once). */
bool fa_vmath512_available(void);
void fa_vmath512_erff(const float *x, float *y, int64_t n);
void fa_vmath512_tanhf(const float *x, float *y, int64_t n);
/* sigmoid and swish (x·sigmoid(alpha·x)) on 16 AVX-512F lanes with an exponential and reciprocal
 * of their own (graph/vmath512.c: graph/expf_poly.h's reduction and Horner polynomial, a
 * reciprocal estimate and one Newton step; within 1e-6 relative of double precision,
 * tests/unit/test_vmath.c); fa_vsigmoidf and
 * fa_vswishf use them when fa_vmath512_available() (the unfused Sigmoid over 262,144 floats, 2
 * threads: 0.110 -> 0.062 ms against the 8-lane SLEEF exp and division, bench_unary_ops.sh), and so
 * does a fused convolution's trailing swish (runtime/cpu/dnnl.c). */
void fa_vmath512_sigmoidf(const float *x, float *y, int64_t n);
/* exp on 16 lanes by the same polynomial over the whole float range (+inf past 88.72, 0 below
 * -103.3, NaN kept); fa_vexpf uses it when fa_vmath512_available() */
void fa_vmath512_expf(const float *x, float *y, int64_t n);
/* one softmax (logsm false) or log-softmax row of n floats on 16 lanes, max subtracted first as
 * the ONNX reference does; y may equal x */
void fa_vmath512_softmax_row(const float *x, float *y, int64_t n, bool logsm);
void fa_vmath512_swishf(const float *x, float *y, int64_t n, float alpha);
/* One instance-normalization plane of n floats: y = (x - mean) / sqrt(var + eps) · scale + bias,
 * mean and population variance accumulated in double on 8-lane vectors (two passes), the output
 * computed in double and rounded once — InstanceNormalization's reference arithmetic, summed in
 * another order; y may equal x. */
void fa_vmath512_norm_plane(const float *x, float *y, int64_t n, double scale, double bias, double eps);
/* y[j] = pow(a[j*sa], b[j*sb]) with sa, sb each 0 (broadcast scalar) or 1. */
void fa_vpowf(const float *a, int64_t sa, const float *b, int64_t sb, float *y, int64_t n);

#endif
