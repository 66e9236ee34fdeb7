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

/* A payload the filtered copy of a file left out: bytes [off, off + len) of the original. */
typedef struct fa_pb_range {
    size_t off, len;
} fa_pb_range;

/* The protobuf bytes data[0..len) of message `kind` (well formed: fa_pb_check passed) with the
 * payload of every TensorProto.raw_data (field 9, at any depth: initializers, Constant and other
 * attribute tensors) replaced by an 8-byte token, its index (little-endian) in *ranges, which
 * records where the payload lies in data; the enclosing messages' lengths are rewritten to match.
 * protobuf-c copies every bytes field it unpacks (a second copy of the weights beside the file):
 * unpacking the filtered copy instead copies only the graph's structure, and the decoder takes
 * each tensor's bytes from the original (fa_tp_source), mapped where it can. Two passes over the
 * bytes (sizes, then the copy), no copy of a payload. *out NULL and *n_ranges 0 when the bytes
 * hold no raw_data (unpack the original). false when out of memory, or when the bytes are not
 * the well-formed message the checker passed (nothing allocated then). */
bool fa_pb_filter_raw(const uint8_t *data, size_t len, fa_pb_kind kind, uint8_t **out, size_t *out_len,
                      fa_pb_range **ranges, size_t *n_ranges);

/* Where the bytes of a model's tensors come from (graph/onnx_io.c's import): the original bytes
 * base[0..len) and the tokens fa_pb_filter_raw put in place of their raw_data (ranges; NULL:
 * raw_data is in the unpacked message itself); `file` the blob mapping base (NULL: base is the
 * caller's buffer, every tensor copied out of it); the external data files mapped so far (each
 * mapped once, shared by the tensors it holds). A tensor whose bytes sit in a mapping at an
 * address aligned to its element size is a slice of that mapping (never copied); any other is
 * copied once into memory of its own and the mapping's pages it spanned are released
 * (fa_blob_release_pages). Counters say which (tests, inspect). */
typedef struct fa_tp_ext_map {
    char *path;    /* realpath */
    fa_blob *blob; /* the whole file, mapped */
} fa_tp_ext_map;
typedef struct fa_tp_source {
    const uint8_t *base;
    size_t len;
    fa_blob *file;
    const fa_pb_range *ranges;
    size_t n_ranges;
    fa_tp_ext_map *ext;
    int n_ext, cap_ext;
    int mapped, copied;                 /* tensors left in a mapping / copied */
    uint64_t mapped_bytes, copied_bytes;
} fa_tp_source;
/* Drops the external mappings the source holds (the tensors keep theirs). */
void fa_tp_source_clear(fa_tp_source *s);

/* A decoded TensorProto: its bytes in blob (one reference, the caller's; data = its bytes,
 * never NULL, even for 0 bytes). */
typedef struct fa_tp_decoded {
    fa_dtype dtype;
    int rank;
    int64_t dims[FA_MAX_RANK];
    fa_blob *blob;
    size_t nbytes; /* numel * fa_dtype_size(dtype) */
} fa_tp_decoded;

/* Decode dtype, dims and data of `tp` (raw_data, typed *_data fields, or external data
 * read from base_dir; base_dir NULL refuses external data). src (may be NULL: raw_data is in tp,
 * external data mapped for this tensor alone): where raw_data tokens point and external files are
 * mapped. `file` and `what` ("initializer 'w'", "attribute 'value' of node 'c'") start every
 * error message. Errors: FA_ERR_INPUT for negative/overflowing dims, rank > FA_MAX_RANK, data
 * size mismatch, a raw_data token out of range, bad external data; FA_ERR_UNSUPPORTED for
 * string/complex dtypes; FA_ERR_IO when a file cannot be mapped; FA_ERR_NOMEM. */
fa_status fa_tp_decode(fa_ctx *ctx, const char *file, const char *what, const Onnx__TensorProto *tp,
                       const char *base_dir, fa_tp_source *src, fa_tp_decoded *out);

/* Fill `tp` (already initialised with onnx__tensor_proto__init) to hold a tensor as raw_data.
 * No copies: tp points into dims/data/name, which must outlive its packing. */
void fa_tp_encode(Onnx__TensorProto *tp, const char *name, fa_dtype dt, int rank,
                  const int64_t *dims, const void *data, size_t nbytes);

#endif
