/* graph/ops-impl — helpers shared by the op definitions (ops_*.c); private to graph/. */
#ifndef FA_OPS_IMPL_H
#define FA_OPS_IMPL_H

#include "graph.h"

/* Each ops_*.c file exports one table; registry.c concatenates them.
 * A table ends with an entry whose name is NULL. */
extern const fa_op fa_ops_elementwise[];
extern const fa_op fa_ops_nn[];
extern const fa_op fa_ops_reduce[];
extern const fa_op fa_ops_shape[];
extern const fa_op fa_ops_extra[];

/* The index maps of the ops that only move elements (fa_op.view; graph/view.c). */
bool fa_view_op_reshape(const fa_graph *g, const fa_node *n, fa_view *v);   /* Identity Reshape Flatten Squeeze Unsqueeze */
bool fa_view_op_transpose(const fa_graph *g, const fa_node *n, fa_view *v);
/* dst[o] = src[sum_k o_k * st[k]] over an output of rank r and dims od, elements of es bytes,
 * strides in elements (0: broadcast; negative: reversed): Transpose's, Expand's and Slice's copy
 * (graph/ops_shape.c), rows by memcpy, tiles where the innermost axis is strided; up to `threads`
 * OpenMP threads for a megabyte or more. */
void fa_strided_copy(void *dst, const void *srcp, size_t es, int r, const int64_t *od, const int64_t *st, int threads);
bool fa_view_op_expand(const fa_graph *g, const fa_node *n, fa_view *v);
bool fa_view_op_cast(const fa_graph *g, const fa_node *n, fa_view *v);      /* to the same type */
bool fa_view_op_dropout(const fa_graph *g, const fa_node *n, fa_view *v);   /* inference */

/* Whether a kernel's loop opens an OpenMP team: only with more than one thread and work enough
 * (`cond`, the loop's own bound). With one thread, or an `if` clause that is false, libgomp still
 * creates and frees a one-thread team per parallel region (GOMP_parallel: gomp_new_team mallocs it
 * unless the pool's last team has that size), ~1,500 instructions and 0.3-1 µs a call here
 * (valgrind; bench/bench_dispatch), more than a few-hundred-element Relu or Add costs. A kernel
 * runs the same loop, in the same order, without a team instead:
 *     if (FA_OMP_TEAM(threads, ne >= MIN)) { #pragma omp parallel for ...  LOOP } else LOOP
 * The executor gives a kernel under its one-thread bounds threads = 1 (docs/runtime.md "Small
 * kernels on one thread"), so those never open a team. */
#define FA_OMP_TEAM(threads, cond) ((threads) > 1 && (cond))

/* Error naming the node: "node 'NAME' (OP): <message>", status FA_ERR_INPUT. */
fa_status fa_node_error(fa_ctx *ctx, const fa_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same with FA_ERR_UNSUPPORTED (valid ONNX we do not implement, e.g. an attribute value). */
fa_status fa_node_unsupported(fa_ctx *ctx, const fa_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Checked shape arithmetic for the shape rules (core's fa_i64_*): a + b, a - b, a * b into *out, or
 * FA_ERR_INPUT "node 'NAME' (OP): <what>: A x B overflows int64" (what names the field, as
 * "kernel_shape[1] x dilations[1]"), *out untouched. Every sum or product of dims and values a
 * model gives (attributes, constant inputs) goes through these; the shapes a rule starts from are
 * within FA_MAX_TENSOR_ELEMENTS (fa_graph_prepare checks them), so a rule needs these only where
 * a model's value can be anything. */
fa_status fa_dim_add(fa_ctx *ctx, const fa_node *n, const char *what, int64_t a, int64_t b, int64_t *out);
fa_status fa_dim_sub(fa_ctx *ctx, const fa_node *n, const char *what, int64_t a, int64_t b, int64_t *out);
fa_status fa_dim_mul(fa_ctx *ctx, const fa_node *n, const char *what, int64_t a, int64_t b, int64_t *out);
/* A dim computed in floating point (Resize's scales, Range's count): v truncated toward zero into
 * *out when it is a number in [0, FA_MAX_TENSOR_ELEMENTS], else FA_ERR_INPUT naming `what` (a
 * double outside int64 converted to int64 is undefined behaviour in C). */
fa_status fa_dim_from_double(fa_ctx *ctx, const fa_node *n, const char *what, double v, int64_t *out);

/* Require input i to be present with known rank; returns it or sets an error. */
fa_tensor *fa_req_input(fa_ctx *ctx, fa_graph *g, fa_node *n, int i);
/* Normalize an axis in [-rank, rank) to [0, rank); returns -1 and sets an error if out of range. */
int fa_norm_axis(fa_ctx *ctx, const fa_node *n, int64_t axis, int rank);

/* numpy-style multidirectional broadcasting of (ra,da) and (rb,db) into (rout,dout).
 * ONNX Broadcasting.md. Error names the node and both shapes. */
fa_status fa_bcast_shape(fa_ctx *ctx, const fa_node *n, int ra, const int64_t *da, int rb,
                         const int64_t *db, int *rout, int64_t *dout);

/* Read a constant integer input (int64 or int32 data) into out[0..max). *count gets the
 * element count. Errors if the input is absent, not constant, not integer, or too long.
 * Constant-ness is what makes Reshape/Slice/... shapes static after folding. */
fa_status fa_const_ints(fa_ctx *ctx, const fa_graph *g, const fa_node *n, int idx, int64_t *out,
                        int max, int *count);
/* Read a constant scalar float input (float/double/int data), for Clip min/max etc. */
fa_status fa_const_float(fa_ctx *ctx, const fa_graph *g, const fa_node *n, int idx, float *out);
bool fa_input_is_const(const fa_graph *g, const fa_node *n, int idx);

/* Output i gets dtype + shape. */
void fa_set_out(fa_graph *g, fa_node *n, int i, fa_dtype dt, int rank, const int64_t *dims);
/* Output 0 = input 0's dtype and shape (elementwise unary ops). */
fa_status fa_infer_same(fa_ctx *ctx, fa_graph *g, fa_node *n);

/* Default cost: bytes_read = sum of input tensor bytes, bytes_written = sum of output bytes,
 * flops = flops_per_elem * numel(output 0). */
void fa_cost_io(const fa_graph *g, const fa_node *n, uint64_t flops_per_elem, fa_op_cost *out);

/* Strides (in elements) of input dims broadcast to an output of rank `rout`, dims `dout`:
 * stride 0 along broadcast axes. */
void fa_bcast_strides(int rin, const int64_t *din, int rout, const int64_t *dout, int64_t *strides);

/* Convert an element of any numeric dtype to double / store double into dtype. */
double fa_load_as_double(const void *data, fa_dtype dt, int64_t i);
void fa_store_from_double(void *data, fa_dtype dt, int64_t i, double v);

/* Integer element i of a buffer of dtype dt (bool as 0/1; float types truncated) / stored
 * wrapping to the destination width (two's complement), bool = nonzero. Exact for every
 * integer dtype, where fa_load_as_double is not beyond 2^53. */
int64_t fa_load_as_i64(const void *data, fa_dtype dt, int64_t i);
void fa_store_from_i64(void *data, fa_dtype dt, int64_t i, int64_t v);
/* uint8..uint64, int8..int64 and bool. */
bool fa_dtype_is_integer(fa_dtype t);
/* The value range of an integer dtype as doubles a conversion may clamp to: exact for the
 * narrow types, the largest doubles below 2^63 / 2^64 for int64 / uint64 (bool: 0..1). */
void fa_dtype_int_range(fa_dtype t, double *lo, double *hi);
/* Store v into element i of an integer (not bool) dtype without undefined behaviour: truncated
 * toward zero (C and numpy astype), NaN as 0, out-of-range values clamped to the type. */
void fa_store_clamped_int(void *data, fa_dtype dt, int64_t i, double v);

/* IEEE half <-> float. */
float fa_half_to_float(uint16_t h);
uint16_t fa_float_to_half(float f);
float fa_bf16_to_float(uint16_t h);
uint16_t fa_float_to_bf16(float f);

#endif
