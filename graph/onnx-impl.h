/* graph/onnx-impl — private helpers shared by onnx_io.c (ModelProto) and tensorproto.c
 * (TensorProto): tensor decode/encode and the protobuf wire-format checker. */
#ifndef FA_ONNX_IMPL_H
#define FA_ONNX_IMPL_H

#include "graph/graph.h"
#include "graph/onnx-subset.pb-c.h"

/* Nesting limit for messages (GraphProto inside AttributeProto inside NodeProto ...);
 * protobuf-c's unpacker recurses without a bound, so the checker refuses deeper input
 * before it runs. 100 is protobuf C++'s default recursion limit (CodedInputStream). */
#define FA_PB_MAX_DEPTH 100

/* Top-level message kinds the wire checker knows. */
typedef enum fa_pb_kind {
    FA_PB_MODEL = 1,
    FA_PB_TENSOR,
} fa_pb_kind;

/* Walk the protobuf wire format of `data` as message `kind` (schema: onnx-subset.proto,
 * fields ONNX has that the subset lacks are skipped as unknown). Returns true when the
 * bytes are well formed; otherwise false with *bad_offset = byte offset of the first bad
 * tag/length/value and a one-line reason in why[] (naming message and field). */
bool fa_pb_check(const uint8_t *data, size_t len, fa_pb_kind kind, size_t *bad_offset, char *why,
                 size_t why_n);

/* A decoded TensorProto. data is malloc'd (never NULL on success, even for 0 bytes). */
typedef struct fa_tp_decoded {
    fa_dtype dtype;
    int rank;
    int64_t dims[FA_MAX_RANK];
    void *data;
    size_t nbytes; /* numel * fa_dtype_size(dtype) */
} fa_tp_decoded;

/* Decode dtype, dims and data of `tp` (raw_data, typed *_data fields, or external data
 * read from base_dir; base_dir NULL refuses external data). `file` and `what` ("initializer
 * 'w'", "attribute 'value' of node 'c'") start every error message. Errors: FA_ERR_INPUT for
 * negative/overflowing dims, rank > FA_MAX_RANK, data size mismatch, bad external data;
 * FA_ERR_UNSUPPORTED for string/complex dtypes; FA_ERR_NOMEM. */
fa_status fa_tp_decode(fa_ctx *ctx, const char *file, const char *what, const Onnx__TensorProto *tp,
                       const char *base_dir, fa_tp_decoded *out);

/* Fill `tp` (already initialised with onnx__tensor_proto__init) to hold a tensor as raw_data.
 * No copies: tp points into dims/data/name, which must outlive its packing. */
void fa_tp_encode(Onnx__TensorProto *tp, const char *name, fa_dtype dt, int rank,
                  const int64_t *dims, const void *data, size_t nbytes);

#endif
