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

/* Memory protobuf-c may take to unpack a file of len bytes: FA_PB_UNPACK_RATIO x len +
 * FA_PB_UNPACK_SLACK_MIB MiB. Weights (raw_data, float_data) unpack to about their own size and
 * int64 varints to 8x; measured with this checker's model on the corpus' 396 models, the graphs
 * over 4 KiB need at most 13.2x their size (light_bvlc_alexnet, weights stored elsewhere), the
 * tiny ones at most 20x (within the slack). A file of empty repeated messages needs about 100x
 * (2 bytes on disk; a struct, an array slot and a scan record in memory): refused before the
 * unpacker runs (docs/hardening.md "Limits before allocation"). */
#define FA_PB_UNPACK_RATIO 24
#define FA_PB_UNPACK_SLACK_MIB 64
uint64_t fa_pb_unpack_budget(size_t len);

/* Walk the protobuf wire format of `data` as message `kind` (schema: onnx-subset.proto,
 * fields ONNX has that the subset lacks are skipped as unknown). Returns true when the
 * bytes are well formed and unpacking them fits fa_pb_unpack_budget(len); otherwise false with
 * *bad_offset = byte offset of the first bad tag/length/value (or of the field where the memory
 * unpacking would need passed the budget) and a one-line reason in why[] (naming message and
 * field). *unpacked_bytes (may be NULL): the checker's upper bound of what protobuf-c allocates,
 * for what was walked. */
typedef enum fa_pb_verdict {
    FA_PB_OK = 0,
    FA_PB_MALFORMED, /* not well-formed protobuf of that message */
    FA_PB_TOO_BIG,   /* well formed so far, but unpacking would pass fa_pb_unpack_budget(len) */
} fa_pb_verdict;
fa_pb_verdict fa_pb_check(const uint8_t *data, size_t len, fa_pb_kind kind, size_t *bad_offset, char *why,
                          size_t why_n, uint64_t *unpacked_bytes);

/* A protobuf-c allocator under a budget of live bytes: an allocation past `limit` fails (the
 * unpacker then frees what it had and returns NULL) and sets `exceeded`. Unpack and free with
 * &b->alloc. */
#include <protobuf-c/protobuf-c.h>
typedef struct fa_pb_budget {
    ProtobufCAllocator alloc;
    uint64_t limit, live, peak; /* bytes, as malloc takes them (header and rounding) */
    bool exceeded;
} fa_pb_budget;
void fa_pb_budget_init(fa_pb_budget *b, uint64_t limit);

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
