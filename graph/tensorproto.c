/* graph/tensorproto — TensorProto decode/encode (initializers, attribute tensors, the corpus
 * test_data_set .pb files), external data, and the protobuf wire-format checker. */
#include "graph/onnx-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------
 * Wire-format checker. Protobuf encoding: https://protobuf.dev/programming-guides/encoding/
 * (tag = field<<3 | wire type; 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32).
 * The schema below mirrors onnx-subset.proto: which fields are sub-messages (walked
 * recursively) and which wire types protobuf-c accepts for each known field. */

/* F_RBYTES, F_RMSG: repeated strings / messages (one array slot per element when unpacked); the
 * packed kinds are repeated too */
enum { F_VARINT, F_I32, F_I64, F_BYTES, F_MSG, F_PVARINT, F_PI32, F_PI64, F_RBYTES, F_RMSG };
enum { M_NONE, M_MODEL, M_OPSET, M_SSE, M_GRAPH, M_NODE, M_ATTR, M_VI, M_TYPE, M_TT, M_TSEQ,
       M_SHAPE, M_DIM, M_TENSOR, M_SEG, M_COUNT };

typedef struct pb_fdesc {
    int field;
    unsigned char kind;
    unsigned char sub; /* M_* for F_MSG */
    const char *name;
} pb_fdesc;

typedef struct pb_mdesc {
    const char *name;
    const pb_fdesc *f;
    int n;
    size_t size; /* sizeof the protobuf-c struct it unpacks into */
} pb_mdesc;

static const pb_fdesc f_model[] = {
    {1, F_VARINT, 0, "ir_version"}, {2, F_BYTES, 0, "producer_name"},
    {3, F_BYTES, 0, "producer_version"}, {4, F_BYTES, 0, "domain"},
    {5, F_VARINT, 0, "model_version"}, {6, F_BYTES, 0, "doc_string"},
    {7, F_MSG, M_GRAPH, "graph"}, {8, F_RMSG, M_OPSET, "opset_import"},
    {14, F_RMSG, M_SSE, "metadata_props"}};
static const pb_fdesc f_opset[] = {{1, F_BYTES, 0, "domain"}, {2, F_VARINT, 0, "version"}};
static const pb_fdesc f_sse[] = {{1, F_BYTES, 0, "key"}, {2, F_BYTES, 0, "value"}};
static const pb_fdesc f_graph[] = {
    {1, F_RMSG, M_NODE, "node"}, {2, F_BYTES, 0, "name"}, {5, F_RMSG, M_TENSOR, "initializer"},
    {10, F_BYTES, 0, "doc_string"}, {11, F_RMSG, M_VI, "input"}, {12, F_RMSG, M_VI, "output"},
    {13, F_RMSG, M_VI, "value_info"}};
static const pb_fdesc f_node[] = {
    {1, F_RBYTES, 0, "input"}, {2, F_RBYTES, 0, "output"}, {3, F_BYTES, 0, "name"},
    {4, F_BYTES, 0, "op_type"}, {5, F_RMSG, M_ATTR, "attribute"}, {6, F_BYTES, 0, "doc_string"},
    {7, F_BYTES, 0, "domain"}, {8, F_BYTES, 0, "overload"}};
static const pb_fdesc f_attr[] = {
    {1, F_BYTES, 0, "name"}, {2, F_I32, 0, "f"}, {3, F_VARINT, 0, "i"}, {4, F_BYTES, 0, "s"},
    {5, F_MSG, M_TENSOR, "t"}, {6, F_MSG, M_GRAPH, "g"}, {7, F_PI32, 0, "floats"},
    {8, F_PVARINT, 0, "ints"}, {9, F_RBYTES, 0, "strings"}, {10, F_RMSG, M_TENSOR, "tensors"},
    {11, F_RMSG, M_GRAPH, "graphs"}, {13, F_BYTES, 0, "doc_string"}, {20, F_VARINT, 0, "type"},
    {21, F_BYTES, 0, "ref_attr_name"}};
static const pb_fdesc f_vi[] = {
    {1, F_BYTES, 0, "name"}, {2, F_MSG, M_TYPE, "type"}, {3, F_BYTES, 0, "doc_string"}};
static const pb_fdesc f_type[] = {
    {1, F_MSG, M_TT, "tensor_type"}, {4, F_MSG, M_TSEQ, "sequence_type"},
    {6, F_BYTES, 0, "denotation"}, {9, F_MSG, M_TSEQ, "optional_type"}};
static const pb_fdesc f_tt[] = {{1, F_VARINT, 0, "elem_type"}, {2, F_MSG, M_SHAPE, "shape"}};
static const pb_fdesc f_tseq[] = {{1, F_MSG, M_TYPE, "elem_type"}};
static const pb_fdesc f_shape[] = {{1, F_RMSG, M_DIM, "dim"}};
static const pb_fdesc f_dim[] = {
    {1, F_VARINT, 0, "dim_value"}, {2, F_BYTES, 0, "dim_param"}, {3, F_BYTES, 0, "denotation"}};
static const pb_fdesc f_tensor[] = {
    {1, F_PVARINT, 0, "dims"}, {2, F_VARINT, 0, "data_type"}, {3, F_MSG, M_SEG, "segment"},
    {4, F_PI32, 0, "float_data"}, {5, F_PVARINT, 0, "int32_data"},
    {6, F_RBYTES, 0, "string_data"}, {7, F_PVARINT, 0, "int64_data"}, {8, F_BYTES, 0, "name"},
    {9, F_BYTES, 0, "raw_data"}, {10, F_PI64, 0, "double_data"},
    {11, F_PVARINT, 0, "uint64_data"}, {12, F_BYTES, 0, "doc_string"},
    {13, F_RMSG, M_SSE, "external_data"}, {14, F_VARINT, 0, "data_location"}};
static const pb_fdesc f_seg[] = {{1, F_VARINT, 0, "begin"}, {2, F_VARINT, 0, "end"}};

#define MD(n, arr, T) {n, arr, (int)(sizeof arr / sizeof arr[0]), sizeof(T)}
static const pb_mdesc g_msgs[] = {
    [M_MODEL] = MD("ModelProto", f_model, Onnx__ModelProto),
    [M_OPSET] = MD("OperatorSetIdProto", f_opset, Onnx__OperatorSetIdProto),
    [M_SSE] = MD("StringStringEntryProto", f_sse, Onnx__StringStringEntryProto),
    [M_GRAPH] = MD("GraphProto", f_graph, Onnx__GraphProto),
    [M_NODE] = MD("NodeProto", f_node, Onnx__NodeProto),
    [M_ATTR] = MD("AttributeProto", f_attr, Onnx__AttributeProto),
    [M_VI] = MD("ValueInfoProto", f_vi, Onnx__ValueInfoProto),
    [M_TYPE] = MD("TypeProto", f_type, Onnx__TypeProto),
    [M_TT] = MD("TypeProto.Tensor", f_tt, Onnx__TypeProto__Tensor),
    [M_TSEQ] = MD("TypeProto.Sequence", f_tseq, Onnx__TypeProto__Sequence),
    [M_SHAPE] = MD("TensorShapeProto", f_shape, Onnx__TensorShapeProto),
    [M_DIM] = MD("TensorShapeProto.Dimension", f_dim, Onnx__TensorShapeProto__Dimension),
    [M_TENSOR] = MD("TensorProto", f_tensor, Onnx__TensorProto),
    [M_SEG] = MD("TensorProto.Segment", f_seg, Onnx__TensorProto__Segment),
};
_Static_assert(sizeof g_msgs / sizeof g_msgs[0] == M_COUNT, "g_msgs: one row per value");

typedef struct pb_err {
    size_t off;
    char *why;
    size_t why_n;
    uint64_t cost;   /* bytes the unpacked messages keep, for what was walked so far */
    uint64_t budget; /* refuse past it; 0: no limit */
    uint64_t big_scan; /* the largest scan-slab total of one message, and where that message starts */
    size_t big_scan_at;
    const char *big_scan_name;
    bool too_big;
} pb_err;

/* What unpacking costs, modelled on protobuf-c 1.4 (protobuf-c.c, protobuf_c_message_unpack). Kept:
 * one malloc per message struct, string (length + 1), bytes field and unknown field (its whole
 * encoding, plus a 24-byte ProtobufCMessageUnknownField), one array slot per element of a repeated
 * field (a pointer, or the scalar: at most 8 bytes). Transient: while a message is unpacked, a
 * 32-byte ScannedMember per field occurrence beyond the first 16 (those live on the stack), in
 * slabs of 32, 64, 128 ... members, freed when the message is done - but only after its
 * sub-messages, so the peak is what is kept plus the slabs of one chain of nested messages.
 * A malloc of n bytes takes max(32, n + 8 rounded up to 16) (glibc's chunk header and alignment).
 * Checked against the corpus: never below protobuf-c's measured peak (tests/unit/
 * test_harden_onnx_limits.c). */
static uint64_t pb_malloc_cost(uint64_t n)
{
    uint64_t c = (n + 8 + 15) & ~(uint64_t)15;
    return c < 32 ? 32 : c;
}

enum { PB_SCANNED_MEMBER = 32, PB_SLOT_COST = 8, PB_UNKNOWN_FIELD_COST = 24 };

/* Bytes of the ScannedMember slabs protobuf-c allocates for a message of k field occurrences. */
static uint64_t pb_scan_slabs(uint64_t k)
{
    uint64_t cap = 16, bytes = 0;
    for (unsigned which = 1; k > cap && which < 40; which++) {
        uint64_t members = (uint64_t)16 << which;
        cap += members;
        bytes += pb_malloc_cost(PB_SCANNED_MEMBER * members);
    }
    return bytes;
}

/* Adds to the running cost; false (with the reason, at `at`) once it passes the budget. */
static bool pb_charge(pb_err *e, size_t at, const char *fname, uint64_t bytes)
{
    e->cost += bytes;
    if (!e->budget || e->cost <= e->budget) return true;
    e->off = at;
    e->too_big = true;
    snprintf(e->why, e->why_n,
             "%s: unpacking would take more than %" PRIu64 " MiB of memory by here, over the limit of %" PRIu64
             " MiB for a file of this size (%d x its size + %d MiB): a file of many small or empty repeated "
             "messages",
             fname, e->cost >> 20, e->budget >> 20, FA_PB_UNPACK_RATIO, FA_PB_UNPACK_SLACK_MIB);
    return false;
}

static bool pb_fail(pb_err *e, size_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool pb_fail(pb_err *e, size_t off, const char *fmt, ...)
{
    e->off = off;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->why, e->why_n, fmt, ap);
    va_end(ap);
    return false;
}

static bool pb_varint(const uint8_t *p, size_t *pos, size_t end, uint64_t *v)
{
    uint64_t r = 0;
    for (int i = 0; i < 10; i++) {
        if (*pos >= end) return false;
        uint8_t b = p[(*pos)++];
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

static const char *wt_name(unsigned wt)
{
    switch (wt) {
    case 0: return "varint";
    case 1: return "fixed64";
    case 2: return "length-delimited";
    case 5: return "fixed32";
    default: return "invalid";
    }
}

/* *transient: the scan slabs alive at the deepest point of unpacking this message (its own plus
 * the largest of its sub-messages'). */
static bool pb_walk(const uint8_t *p, size_t pos, size_t end, int m, int depth, pb_err *e, uint64_t *transient)
{
    const pb_mdesc *md = &g_msgs[m];
    size_t start = pos;
    uint64_t k = 0, child_transient = 0;
    uint32_t arrays = 0; /* repeated fields seen: one array malloc each */
    *transient = 0;
    if (!pb_charge(e, pos, md->name, pb_malloc_cost(md->size))) return false;
    while (pos < end) {
        size_t tag_at = pos;
        uint64_t tag;
        if (!pb_varint(p, &pos, end, &tag))
            return pb_fail(e, tag_at, "%s: truncated or over-long field tag", md->name);
        uint64_t field = tag >> 3;
        unsigned wt = (unsigned)(tag & 7);
        if (field == 0 || field > 536870911u)
            return pb_fail(e, tag_at, "%s: invalid field number %" PRIu64, md->name, field);
        const pb_fdesc *fd = NULL;
        for (int i = 0; i < md->n; i++)
            if ((uint64_t)md->f[i].field == field) fd = &md->f[i];
        char fname[96];
        if (fd)
            snprintf(fname, sizeof fname, "%s.%s (field %d)", md->name, fd->name, fd->field);
        else
            snprintf(fname, sizeof fname, "%s field %" PRIu64, md->name, field);
        size_t body = pos, blen = 0;
        uint64_t v;
        switch (wt) {
        case 0:
            if (!pb_varint(p, &pos, end, &v))
                return pb_fail(e, tag_at, "%s: truncated varint", fname);
            break;
        case 1:
        case 5: {
            size_t need = wt == 1 ? 8 : 4;
            if (end - pos < need)
                return pb_fail(e, tag_at, "%s: %s value needs %zu bytes, %zu left", fname,
                               wt_name(wt), need, end - pos);
            pos += need;
            break;
        }
        case 2:
            if (!pb_varint(p, &pos, end, &v))
                return pb_fail(e, tag_at, "%s: truncated length", fname);
            if (v > end - pos)
                return pb_fail(e, tag_at,
                               "%s: length %" PRIu64 " runs past the end of its enclosing %s "
                               "(%zu bytes left)",
                               fname, v, md->name, end - pos);
            body = pos;
            blen = (size_t)v;
            pos += blen;
            break;
        default:
            return pb_fail(e, tag_at, "%s: invalid wire type %u", fname, wt);
        }
        k++;
        if (!fd && m == M_GRAPH && field == 15) /* GraphProto.sparse_initializer */
            return pb_fail(e, tag_at, "%s: sparse_initializer (a sparse tensor) is not supported: only dense "
                           "initializers are read", fname);
        if (!fd) { /* unknown field: skipped, as protobuf-c does, which keeps a copy of it */
            if (!pb_charge(e, tag_at, fname, PB_UNKNOWN_FIELD_COST + pb_malloc_cost(pos - tag_at))) return false;
            continue;
        }
        bool repeated = fd->kind >= F_PVARINT;
        uint32_t bit = 1u << ((fd - md->f) & 31);
        if (repeated && !(arrays & bit)) { /* the array's own malloc: header and rounding */
            arrays |= bit;
            if (!pb_charge(e, tag_at, fname, pb_malloc_cost(0))) return false;
        }
        if (repeated && !pb_charge(e, tag_at, fname, PB_SLOT_COST)) return false;
        if (wt == 2 && (fd->kind == F_BYTES || fd->kind == F_RBYTES) &&
            !pb_charge(e, tag_at, fname, pb_malloc_cost((uint64_t)blen + 1)))
            return false;
        bool ok;
        switch (fd->kind) {
        case F_VARINT: ok = wt == 0; break;
        case F_I32: ok = wt == 5; break;
        case F_I64: ok = wt == 1; break;
        case F_BYTES: case F_RBYTES: ok = wt == 2; break;
        case F_MSG: case F_RMSG: ok = wt == 2; break;
        case F_PVARINT: ok = wt == 0 || wt == 2; break;
        case F_PI32: ok = wt == 5 || wt == 2; break;
        case F_PI64: ok = wt == 1 || wt == 2; break;
        default: ok = false;
        }
        if (!ok) {
            static const char *const want[] = {"varint", "fixed32", "fixed64", "length-delimited",
                                               "length-delimited (message)", "varint or packed",
                                               "fixed32 or packed", "fixed64 or packed",
                                               "length-delimited", "length-delimited (message)"};
            return pb_fail(e, tag_at, "%s: wire type %s, expected %s", fname, wt_name(wt),
                           want[fd->kind]);
        }
        if (wt != 2) continue;
        /* a string field (all of ONNX's length-delimited scalars but the bytes ones: raw_data,
         * string_data, an attribute's s and strings) holding a NUL: protobuf-c hands it on as a C
         * string cut there, so a name 'X\0nope' bound to tensor 'X', and two tensors 'a\0one' and
         * 'a\0two' were one */
        if ((fd->kind == F_BYTES || fd->kind == F_RBYTES) && strcmp(fd->name, "raw_data") &&
            strcmp(fd->name, "string_data") && strcmp(fd->name, "s") && strcmp(fd->name, "strings")) {
            const uint8_t *nul = blen ? memchr(p + body, 0, blen) : NULL;
            if (nul)
                return pb_fail(e, (size_t)(nul - p), "%s: a NUL byte inside a string (at its byte %zu of %zu): ONNX "
                               "strings hold none, and the name would be read cut there", fname,
                               (size_t)(nul - (p + body)), blen);
        }
        if (fd->kind == F_MSG || fd->kind == F_RMSG) {
            if (depth + 1 > FA_PB_MAX_DEPTH)
                return pb_fail(e, tag_at, "%s: messages nested deeper than %d levels", fname,
                               FA_PB_MAX_DEPTH);
            uint64_t t = 0;
            if (!pb_walk(p, body, body + blen, fd->sub, depth + 1, e, &t)) return false;
            if (t > child_transient) child_transient = t;
        } else if (fd->kind == F_PI32 && blen % 4) {
            return pb_fail(e, tag_at, "%s: packed fixed32 length %zu is not a multiple of 4",
                           fname, blen);
        } else if (fd->kind == F_PI64 && blen % 8) {
            return pb_fail(e, tag_at, "%s: packed fixed64 length %zu is not a multiple of 8",
                           fname, blen);
        } else if (fd->kind == F_PI32 || fd->kind == F_PI64) {
            if (!pb_charge(e, tag_at, fname, blen)) return false; /* the array: as many bytes as packed */
        } else if (fd->kind == F_PVARINT) {
            size_t q = body;
            uint64_t n_el = 0;
            while (q < body + blen) {
                size_t at = q;
                if (!pb_varint(p, &q, body + blen, &v))
                    return pb_fail(e, at, "%s: truncated varint inside packed field", fname);
                n_el++;
            }
            if (!pb_charge(e, tag_at, fname, PB_SLOT_COST * n_el)) return false;
        }
    }
    uint64_t slabs = pb_scan_slabs(k);
    if (slabs > e->big_scan) {
        e->big_scan = slabs;
        e->big_scan_at = start;
        e->big_scan_name = md->name;
    }
    *transient = slabs + child_transient;
    return true;
}

uint64_t fa_pb_unpack_budget(size_t len)
{
    uint64_t b;
    if (__builtin_mul_overflow((uint64_t)len, (uint64_t)FA_PB_UNPACK_RATIO, &b) ||
        __builtin_add_overflow(b, (uint64_t)FA_PB_UNPACK_SLACK_MIB << 20, &b))
        return UINT64_MAX;
    return b;
}

fa_pb_verdict fa_pb_check(const uint8_t *data, size_t len, fa_pb_kind kind, size_t *bad_offset, char *why,
                          size_t why_n, uint64_t *unpacked_bytes)
{
    pb_err e = {0, why, why_n, 0, fa_pb_unpack_budget(len), 0, 0, "", false};
    if (why_n) why[0] = 0;
    int m = kind == FA_PB_MODEL ? M_MODEL : M_TENSOR;
    uint64_t transient = 0;
    bool ok = pb_walk(data, 0, len, m, 0, &e, &transient);
    if (ok) {
        /* the peak: what is kept, plus the scan slabs of the deepest chain (the scan of a message
         * that is one long list, like a GraphProto of a million nodes, is the largest part) */
        e.cost += transient;
        if (e.cost > e.budget) {
            char at[96];
            snprintf(at, sizeof at, "%s holding the longest list of fields", e.big_scan_name);
            ok = pb_charge(&e, e.big_scan_at, at, 0);
        }
    }
    if (unpacked_bytes) *unpacked_bytes = e.cost;
    if (ok) return FA_PB_OK;
    *bad_offset = e.off;
    return e.too_big ? FA_PB_TOO_BIG : FA_PB_MALFORMED;
}

/* ------------------------------------------------------------------------------------
 * The filtered copy (fa_pb_filter_raw): pass 1 walks the message tree and records each
 * sub-message's filtered size (pre-order) and each raw_data payload's range; pass 2 walks it
 * again and writes the copy, taking the sizes in the same order. */

typedef struct pb_filter {
    const uint8_t *p;
    size_t *sizes;
    size_t n_sizes, cap_sizes, next_size;
    fa_pb_range *ranges;
    size_t n_ranges, cap_ranges, next_token;
    uint8_t *out;
    size_t w;
    bool oom;
} pb_filter;

#define PB_TOKEN_BYTES 8

static const pb_fdesc *pb_field(int m, uint64_t field)
{
    const pb_mdesc *md = &g_msgs[m];
    for (int i = 0; i < md->n; i++)
        if ((uint64_t)md->f[i].field == field) return &md->f[i];
    return NULL;
}

static size_t pb_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void pb_put_varint(pb_filter *f, uint64_t v)
{
    while (v >= 0x80) {
        f->out[f->w++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    f->out[f->w++] = (uint8_t)v;
}

static bool pb_push(void **arr, size_t *n, size_t *cap, size_t elem)
{
    if (*n < *cap) return true;
    size_t nc = *cap ? 2 * *cap : 64;
    void *na = realloc(*arr, nc * elem);
    if (!na) return false;
    *arr = na;
    *cap = nc;
    return true;
}

/* One field at *pos of message m: its tag's end, wire type, descriptor and body; false when the
 * bytes are not what the checker passed. */
typedef struct pb_field_at {
    size_t tag_at, tag_end, body, blen, end;
    unsigned wt;
    const pb_fdesc *fd;
    uint64_t field;
} pb_field_at;

static bool pb_next(const uint8_t *p, size_t pos, size_t end, int m, pb_field_at *o)
{
    uint64_t tag, v;
    o->tag_at = pos;
    if (!pb_varint(p, &pos, end, &tag)) return false;
    o->tag_end = pos;
    o->wt = (unsigned)(tag & 7);
    o->field = tag >> 3;
    o->fd = pb_field(m, o->field);
    o->body = pos;
    o->blen = 0;
    switch (o->wt) {
    case 0:
        if (!pb_varint(p, &pos, end, &v)) return false;
        break;
    case 1:
    case 5:
        if (end - pos < (o->wt == 1 ? 8u : 4u)) return false;
        pos += o->wt == 1 ? 8 : 4;
        break;
    case 2:
        if (!pb_varint(p, &pos, end, &v) || v > end - pos) return false;
        o->body = pos;
        o->blen = (size_t)v;
        pos += o->blen;
        break;
    default:
        return false;
    }
    o->end = pos;
    return true;
}

static bool pb_is_raw(int m, const pb_field_at *a) { return m == M_TENSOR && a->field == 9 && a->wt == 2; }
static bool pb_is_msg(const pb_field_at *a) { return a->wt == 2 && a->fd && (a->fd->kind == F_MSG || a->fd->kind == F_RMSG); }

/* Pass 1: the filtered size of message m in [pos, end) into *out. */
static bool pb_filter_size(pb_filter *f, size_t pos, size_t end, int m, int depth, size_t *out)
{
    size_t total = 0;
    if (depth > FA_PB_MAX_DEPTH) return false;
    while (pos < end) {
        pb_field_at a;
        if (!pb_next(f->p, pos, end, m, &a)) return false;
        size_t tl = a.tag_end - a.tag_at;
        if (pb_is_raw(m, &a)) {
            if (!pb_push((void **)&f->ranges, &f->n_ranges, &f->cap_ranges, sizeof *f->ranges)) return f->oom = true, false;
            f->ranges[f->n_ranges++] = (fa_pb_range){a.body, a.blen};
            total += tl + pb_varint_len(PB_TOKEN_BYTES) + PB_TOKEN_BYTES;
        } else if (pb_is_msg(&a)) {
            if (!pb_push((void **)&f->sizes, &f->n_sizes, &f->cap_sizes, sizeof *f->sizes)) return f->oom = true, false;
            size_t slot = f->n_sizes++, sub = 0;
            if (!pb_filter_size(f, a.body, a.body + a.blen, a.fd->sub, depth + 1, &sub)) return false;
            f->sizes[slot] = sub;
            total += tl + pb_varint_len(sub) + sub;
        } else {
            total += a.end - a.tag_at;
        }
        pos = a.end;
    }
    *out = total;
    return true;
}

/* Pass 2: the filtered bytes of message m in [pos, end), appended at f->out + f->w. */
static bool pb_filter_emit(pb_filter *f, size_t pos, size_t end, int m)
{
    while (pos < end) {
        pb_field_at a;
        if (!pb_next(f->p, pos, end, m, &a)) return false;
        size_t tl = a.tag_end - a.tag_at;
        if (pb_is_raw(m, &a)) {
            memcpy(f->out + f->w, f->p + a.tag_at, tl);
            f->w += tl;
            pb_put_varint(f, PB_TOKEN_BYTES);
            uint64_t tok = f->next_token++;
            for (int k = 0; k < PB_TOKEN_BYTES; k++) f->out[f->w++] = (uint8_t)(tok >> (8 * k));
        } else if (pb_is_msg(&a)) {
            if (f->next_size >= f->n_sizes) return false;
            size_t sub = f->sizes[f->next_size++];
            memcpy(f->out + f->w, f->p + a.tag_at, tl);
            f->w += tl;
            pb_put_varint(f, sub);
            size_t start = f->w;
            if (!pb_filter_emit(f, a.body, a.body + a.blen, a.fd->sub) || f->w - start != sub) return false;
        } else {
            memcpy(f->out + f->w, f->p + a.tag_at, a.end - a.tag_at);
            f->w += a.end - a.tag_at;
        }
        pos = a.end;
    }
    return true;
}

bool fa_pb_filter_raw(const uint8_t *data, size_t len, fa_pb_kind kind, uint8_t **out, size_t *out_len,
                      fa_pb_range **ranges, size_t *n_ranges)
{
    pb_filter f = {.p = data};
    int m = kind == FA_PB_MODEL ? M_MODEL : M_TENSOR;
    size_t total = 0;
    bool ok = pb_filter_size(&f, 0, len, m, 0, &total);
    if (ok && f.n_ranges == 0) { /* nothing to leave out: the original is unpacked */
        free(f.sizes);
        *out = NULL;
        *out_len = 0;
        *ranges = NULL;
        *n_ranges = 0;
        return true;
    }
    if (ok) ok = (f.out = malloc(total ? total : 1)) != NULL;
    if (ok) ok = pb_filter_emit(&f, 0, len, m) && f.w == total && f.next_token == f.n_ranges;
    free(f.sizes);
    if (!ok) {
        free(f.out);
        free(f.ranges);
        return false;
    }
    *out = f.out;
    *out_len = total;
    *ranges = f.ranges;
    *n_ranges = f.n_ranges;
    return true;
}

/* ------------------------------------------------------------------------------------
 * The allocator protobuf-c unpacks with: malloc under a budget of live bytes (each block carries
 * its size in a 16-byte header), so whatever the checker's model missed still fails as a refusal,
 * never as an allocation the machine cannot hold. */

static void *budget_alloc(void *data, size_t size)
{
    fa_pb_budget *b = data;
    uint64_t cost = pb_malloc_cost(size); /* as the checker counts it */
    if (size > SIZE_MAX - 16 || b->live + cost > b->limit || b->live + cost < b->live) {
        b->exceeded = true;
        return NULL;
    }
    unsigned char *p = malloc(size + 16);
    if (!p) return NULL;
    memcpy(p, &size, sizeof size);
    b->live += cost;
    if (b->live > b->peak) b->peak = b->live;
    return p + 16;
}

static void budget_free(void *data, void *ptr)
{
    if (!ptr) return;
    fa_pb_budget *b = data;
    unsigned char *p = (unsigned char *)ptr - 16;
    size_t size;
    memcpy(&size, p, sizeof size);
    b->live -= pb_malloc_cost(size);
    free(p);
}

void fa_pb_budget_init(fa_pb_budget *b, uint64_t limit)
{
    memset(b, 0, sizeof *b);
    b->limit = limit;
    b->alloc.alloc = budget_alloc;
    b->alloc.free = budget_free;
    b->alloc.allocator_data = b;
}

/* ------------------------------------------------------------------------------------
 * TensorProto decode. Typed-field packing follows onnx.proto's comments on TensorProto:
 * float_data for FLOAT; int32_data for INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16 and
 * BFLOAT16 (16-bit types as their bit pattern in the low 16 bits); int64_data for INT64;
 * double_data for DOUBLE; uint64_data for UINT32 and UINT64. raw_data is little-endian. */

static bool dtype_supported(int32_t dt)
{
    return dt > 0 && dt < FA_DTYPE_COUNT && dt != FA_DTYPE_STRING && fa_dtype_size((fa_dtype)dt);
}

static void dims_str(const Onnx__TensorProto *tp, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = 0;
    int w = snprintf(buf, n, "[");
    if (w > 0) off = (size_t)w;
    for (size_t i = 0; i < tp->n_dims && off < n; i++) {
        w = snprintf(buf + off, n - off, "%s%" PRId64, i ? ", " : "", tp->dims[i]);
        if (w < 0) return;
        off += (size_t)w;
    }
    if (off < n) snprintf(buf + off, n - off, "]");
}

/* Parse a decimal string as size_t; false on junk or overflow. */
static bool parse_size(const char *s, size_t *out)
{
    if (!s || !*s) return false;
    size_t v = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9') return false;
        if (!fa_mul_size(v, 10, &v) || !fa_add_size(v, (size_t)(*c - '0'), &v)) return false;
    }
    *out = v;
    return true;
}

/* nbytes at offset in `from` (a file's mapping, or a buffer blob) as a blob of their own in
 * *out: a slice when the address is aligned to the element size esz (the kernels' loads, and
 * C, need that much) and `from` maps a file, else a copy, after which the pages of `from` it
 * read are released. */
static fa_status place_bytes(fa_ctx *ctx, const char *file, const char *what, fa_blob *from, size_t offset,
                             size_t nbytes, size_t esz, fa_tp_source *src, fa_blob **out)
{
    const uint8_t *at = (const uint8_t *)fa_blob_data(from) + offset;
    if (from && fa_blob_mapped(from) && esz && (uintptr_t)at % esz == 0) {
        fa_blob *sl = fa_blob_slice(from, offset, nbytes);
        if (!sl) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: %s: out of memory", file, what);
        if (src) src->mapped++, src->mapped_bytes += nbytes;
        *out = sl;
        return FA_OK;
    }
    fa_blob *b = fa_blob_alloc(nbytes);
    if (!b) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: %s: cannot allocate %zu bytes", file, what, nbytes);
    if (nbytes) memcpy((void *)fa_blob_data(b), at, nbytes);
    if (from && fa_blob_mapped(from)) {
        fa_blob *sl = fa_blob_slice(from, offset, nbytes);
        fa_blob_release_pages(sl);
        fa_blob_unref(sl);
    }
    if (src) src->copied++, src->copied_bytes += nbytes;
    *out = b;
    return FA_OK;
}

void fa_tp_source_clear(fa_tp_source *s)
{
    for (int i = 0; i < s->n_ext; i++) {
        free(s->ext[i].path);
        fa_blob_unref(s->ext[i].blob);
    }
    free(s->ext);
    s->ext = NULL;
    s->n_ext = s->cap_ext = 0;
}

/* External data (onnx/docs/ExternalData.md): keys location, offset, length, checksum. The
 * location is relative to the model's folder; anything that would leave that folder (an
 * absolute path, a '..' component, a symlink resolving outside) or is not a regular file
 * (device, FIFO, directory) is refused. */
static fa_status read_external(fa_ctx *ctx, const char *file, const char *what,
                               const Onnx__TensorProto *tp, const char *base_dir, size_t nbytes,
                               size_t esz, fa_tp_source *src, fa_blob **out)
{
    *out = NULL;
    const char *loc = NULL, *off_s = NULL, *len_s = NULL;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *kv = tp->external_data[i];
        if (!kv->key) continue;
        if (strcmp(kv->key, "location") == 0) loc = kv->value;
        else if (strcmp(kv->key, "offset") == 0) off_s = kv->value;
        else if (strcmp(kv->key, "length") == 0) len_s = kv->value;
    }
    if (!loc || !*loc)
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: %s: data_location is EXTERNAL but external_data has no 'location'",
                            file, what);
    if (!base_dir)
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: %s: external data '%s' cannot be read: the model was loaded from "
                            "memory, so it has no folder",
                            file, what, loc);
    if (loc[0] == '/' || loc[0] == '\\' || (loc[0] && loc[1] == ':'))
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: %s: external data location '%s' is an absolute path; it must be "
                            "relative to the model's folder",
                            file, what, loc);
    for (const char *c = loc; *c;) {
        size_t n = strcspn(c, "/\\");
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return fa_ctx_error(ctx, FA_ERR_INPUT,
                                "%s: %s: external data location '%s' has a '..' component and "
                                "would leave the model's folder",
                                file, what, loc);
        c += n;
        if (*c) c++;
    }
    size_t offset = 0, length = 0;
    bool has_len = len_s != NULL;
    if (off_s && !parse_size(off_s, &offset))
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: %s: external data offset '%s' is not a non-negative integer",
                            file, what, off_s);
    if (has_len && !parse_size(len_s, &length))
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: %s: external data length '%s' is not a non-negative integer",
                            file, what, len_s);

    char full[PATH_MAX], base_real[PATH_MAX], real[PATH_MAX];
    if ((size_t)snprintf(full, sizeof full, "%s/%s", base_dir, loc) >= sizeof full)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s: external data path '%s' is too long", file,
                            what, loc);
    if (!realpath(base_dir, base_real))
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot resolve model folder '%s': %s", file,
                            base_dir, strerror(errno));
    if (!realpath(full, real))
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s: external data file '%s' cannot be opened: %s",
                            file, what, full, strerror(errno));
    size_t bl = strlen(base_real);
    bool inside = strcmp(base_real, "/") == 0 ||
                  (strncmp(real, base_real, bl) == 0 && real[bl] == '/');
    if (!inside)
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: %s: external data location '%s' resolves to '%s', outside the "
                            "model's folder '%s'",
                            file, what, loc, real, base_real);
    struct stat st;
    if (stat(real, &st) != 0)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s: external data file '%s': %s", file, what,
                            full, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: %s: external data location '%s' is not a regular file", file,
                            what, loc);
    int fd = open(real, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s: external data file '%s' cannot be opened: %s",
                            file, what, full, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: %s: external data location '%s' is not a regular file", file,
                            what, loc);
    }
    size_t fsize = (size_t)st.st_size;
    if (offset > fsize) {
        close(fd);
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: %s: external data offset %zu is past the end of '%s' (%zu bytes)",
                            file, what, offset, loc, fsize);
    }
    if (!has_len) length = fsize - offset;
    if (length > fsize - offset) {
        close(fd);
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: %s: external data offset %zu + length %zu runs past the end of "
                            "'%s' (%zu bytes)",
                            file, what, offset, length, loc, fsize);
    }
    if (length != nbytes) {
        close(fd);
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: %s: external data holds %zu bytes, dims and data_type need %zu",
                            file, what, length, nbytes);
    }
    /* The bytes: a slice of the file's mapping (each external file mapped once per model), or a
     * copy of them when their address is not aligned to the element size. Only now: the declared
     * size has been checked against the file's bytes, so a tensor declaring more than the file
     * holds is refused before anything is mapped or allocated. */
    fa_blob *map = NULL;
    for (int i = 0; src && i < src->n_ext && !map; i++)
        if (!strcmp(src->ext[i].path, real)) map = fa_blob_ref(src->ext[i].blob);
    fa_status s = map ? FA_OK : fa_blob_map_file(ctx, fd, full, &map);
    close(fd);
    if (s) return fa_ctx_wrap(ctx, s, "%s: %s: external data: ", file, what);
    if (fa_blob_size(map) != fsize) { /* changed since it was checked */
        fa_blob_unref(map);
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s: external data file '%s' changed while it was read", file, what, loc);
    }
    if (src && src->n_ext < 4096) { /* remembered for the next tensor of this file */
        bool known = false;
        for (int i = 0; i < src->n_ext && !known; i++) known = fa_blob_data(src->ext[i].blob) == fa_blob_data(map);
        if (!known && src->n_ext == src->cap_ext) {
            int nc = src->cap_ext ? 2 * src->cap_ext : 16;
            fa_tp_ext_map *ne = realloc(src->ext, sizeof *ne * (size_t)nc);
            if (ne) {
                src->ext = ne;
                src->cap_ext = nc;
            }
        }
        char *pc = known || src->n_ext == src->cap_ext ? NULL : strdup(real);
        if (pc) src->ext[src->n_ext++] = (fa_tp_ext_map){pc, fa_blob_ref(map)};
    }
    s = place_bytes(ctx, file, what, map, offset, nbytes, esz, src, out);
    fa_blob_unref(map);
    return s;
}

fa_status fa_tp_decode(fa_ctx *ctx, const char *file, const char *what, const Onnx__TensorProto *tp,
                       const char *base_dir, fa_tp_source *src, fa_tp_decoded *out)
{
    int32_t dt = tp->has_data_type ? tp->data_type : 0;
    if (dt == 0)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s: data_type is missing (UNDEFINED)", file,
                            what);
    if (!dtype_supported(dt))
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "%s: %s: data_type %d (%s) is not supported",
                            file, what, (int)dt, fa_dtype_name((fa_dtype)dt));
    if (tp->segment)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "%s: %s: segmented tensors are not supported",
                            file, what);
    if (tp->n_dims > FA_MAX_RANK)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s: rank %zu exceeds the maximum rank %d",
                            file, what, tp->n_dims, FA_MAX_RANK);
    size_t esz = fa_dtype_size((fa_dtype)dt), numel = 1, nbytes;
    char dbuf[256];
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0) {
            dims_str(tp, dbuf, sizeof dbuf);
            return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s: dims[%zu] = %" PRId64 " is negative (dims %s)",
                                file, what, i, tp->dims[i], dbuf);
        }
        if (!fa_mul_size(numel, (size_t)tp->dims[i], &numel) || numel > (size_t)INT64_MAX) {
            dims_str(tp, dbuf, sizeof dbuf);
            return fa_ctx_error(ctx, FA_ERR_INPUT,
                                "%s: %s: element count of dims %s overflows size_t", file, what,
                                dbuf);
        }
    }
    if (!fa_mul_size(numel, esz, &nbytes)) {
        dims_str(tp, dbuf, sizeof dbuf);
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s: byte size of dims %s x %zu bytes overflows size_t",
                            file, what, dbuf, esz);
    }

    /* which typed field carries this dtype, and how many values each field holds */
    const char *want_name;
    size_t want_n;
    switch (dt) {
    case FA_DTYPE_FLOAT: want_name = "float_data"; want_n = tp->n_float_data; break;
    case FA_DTYPE_INT64: want_name = "int64_data"; want_n = tp->n_int64_data; break;
    case FA_DTYPE_DOUBLE: want_name = "double_data"; want_n = tp->n_double_data; break;
    case FA_DTYPE_UINT32: case FA_DTYPE_UINT64: want_name = "uint64_data"; want_n = tp->n_uint64_data; break;
    default: want_name = "int32_data"; want_n = tp->n_int32_data; break;
    }
    const struct { const char *name; size_t n; } fields[] = {
        {"float_data", tp->n_float_data}, {"int32_data", tp->n_int32_data},
        {"int64_data", tp->n_int64_data}, {"double_data", tp->n_double_data},
        {"uint64_data", tp->n_uint64_data}, {"string_data", tp->n_string_data}};
    bool external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i].n && strcmp(fields[i].name, want_name) != 0)
            return fa_ctx_error(ctx, FA_ERR_INPUT,
                                "%s: %s: holds %zu values in %s, but data_type %s stores its "
                                "values in %s",
                                file, what, fields[i].n, fields[i].name,
                                fa_dtype_name((fa_dtype)dt), want_name);
    if ((external || tp->has_raw_data) && want_n)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s: has both %s and %s", file, what,
                            external ? "external data" : "raw_data", want_name);

    /* raw_data: in the unpacked message, or a token naming where it lies in the file
     * (fa_pb_filter_raw) */
    const uint8_t *raw = tp->raw_data.data;
    size_t raw_len = tp->raw_data.len, raw_off = 0;
    if (tp->has_raw_data && !external && src && src->ranges) {
        uint64_t tok = 0;
        for (int k = 0; k < 8 && raw_len == 8; k++) tok |= (uint64_t)raw[k] << (8 * k);
        if (raw_len != 8 || tok >= src->n_ranges)
            return fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: %s: raw_data token out of range", file, what);
        raw_off = src->ranges[tok].off;
        raw_len = src->ranges[tok].len;
        raw = src->base + raw_off;
    }
    if (tp->has_raw_data && !external && raw_len != nbytes) {
        dims_str(tp, dbuf, sizeof dbuf);
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: %s: raw_data holds %zu bytes, dims %s of %s need %zu", file,
                            what, raw_len, dbuf, fa_dtype_name((fa_dtype)dt), nbytes);
    }
    if (!external && !tp->has_raw_data && want_n != numel) {
        dims_str(tp, dbuf, sizeof dbuf);
        if (want_n == 0)
            return fa_ctx_error(ctx, FA_ERR_INPUT,
                                "%s: %s: has no data: dims %s need %zu %s values but raw_data and "
                                "%s are empty",
                                file, what, dbuf, numel, fa_dtype_name((fa_dtype)dt), want_name);
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s: %s holds %zu values, dims %s need %zu",
                            file, what, want_name, want_n, dbuf, numel);
    }

    fa_blob *blob = NULL;
    uint8_t *data = NULL;
    if (external) {
        /* read_external checks the location and the file's size before it maps anything */
        fa_status s = read_external(ctx, file, what, tp, base_dir, nbytes, esz, src, &blob);
        if (s != FA_OK) return s;
    } else if (tp->has_raw_data && src && src->ranges && src->file) {
        fa_status s = place_bytes(ctx, file, what, src->file, raw_off, nbytes, esz, src, &blob);
        if (s != FA_OK) return s;
    } else if (!(blob = fa_blob_alloc(nbytes))) {
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: %s: cannot allocate %zu bytes", file, what,
                            nbytes);
    } else if (tp->has_raw_data) {
        data = (uint8_t *)fa_blob_data(blob); /* a fresh blob: ours to fill */
        if (nbytes) memcpy(data, raw, nbytes);
        if (src) src->copied++, src->copied_bytes += nbytes;
    } else {
        data = (uint8_t *)fa_blob_data(blob);
        for (size_t i = 0; i < numel; i++) {
            switch (dt) {
            case FA_DTYPE_FLOAT: memcpy(data + 4 * i, &tp->float_data[i], 4); break;
            case FA_DTYPE_INT64: memcpy(data + 8 * i, &tp->int64_data[i], 8); break;
            case FA_DTYPE_DOUBLE: memcpy(data + 8 * i, &tp->double_data[i], 8); break;
            case FA_DTYPE_UINT64: memcpy(data + 8 * i, &tp->uint64_data[i], 8); break;
            case FA_DTYPE_UINT32: {
                uint32_t v = (uint32_t)tp->uint64_data[i];
                memcpy(data + 4 * i, &v, 4);
                break;
            }
            case FA_DTYPE_INT32: memcpy(data + 4 * i, &tp->int32_data[i], 4); break;
            case FA_DTYPE_INT16: case FA_DTYPE_UINT16: case FA_DTYPE_FLOAT16: case FA_DTYPE_BFLOAT16: {
                uint16_t v = (uint16_t)tp->int32_data[i];
                memcpy(data + 2 * i, &v, 2);
                break;
            }
            case FA_DTYPE_BOOL: data[i] = tp->int32_data[i] != 0; break;
            default: data[i] = (uint8_t)tp->int32_data[i]; break; /* INT8, UINT8 */
            }
        }
        if (src) src->copied++, src->copied_bytes += nbytes;
    }
    out->dtype = (fa_dtype)dt;
    out->rank = (int)tp->n_dims;
    for (int i = 0; i < FA_MAX_RANK; i++) out->dims[i] = i < out->rank ? tp->dims[i] : -1;
    out->blob = blob;
    out->nbytes = nbytes;
    return FA_OK;
}

void fa_tp_encode(Onnx__TensorProto *tp, const char *name, fa_dtype dt, int rank,
                  const int64_t *dims, const void *data, size_t nbytes)
{
    tp->n_dims = (size_t)(rank > 0 ? rank : 0);
    tp->dims = (int64_t *)dims;
    tp->has_data_type = 1;
    tp->data_type = (int32_t)dt;
    tp->name = (char *)name;
    tp->has_raw_data = 1;
    tp->raw_data.len = nbytes;
    tp->raw_data.data = (uint8_t *)data;
}

/* ------------------------------------------------------------------------------------
 * .pb files: one serialized TensorProto (onnx backend test data, test_data_set_N/input_M.pb). */

static fa_status tp_read(fa_ctx *ctx, const char *file, const char *base_dir, const uint8_t *data,
                         size_t len, fa_value *out, char **out_name)
{
    size_t bad = 0;
    char why[512];
    fa_pb_verdict pv = fa_pb_check(data, len, FA_PB_TENSOR, &bad, why, sizeof why, NULL);
    if (pv == FA_PB_TOO_BIG)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: refused before unpacking: byte %zu: %s", file, bad, why);
    if (pv)
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: not a valid TensorProto (truncated or corrupt): byte %zu: %s",
                            file, bad, why);
    fa_pb_budget budget;
    fa_pb_budget_init(&budget, fa_pb_unpack_budget(len));
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&budget.alloc, len, data);
    if (!tp && budget.exceeded)
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: unpacking the TensorProto would take more than %" PRIu64 " MiB of memory (the limit "
                            "for a file of %zu bytes)", file, budget.limit >> 20, len);
    if (!tp)
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: not a valid TensorProto (truncated or corrupt)", file);
    char what[300];
    snprintf(what, sizeof what, "tensor '%s'", tp->name ? tp->name : "");
    fa_tp_decoded d;
    fa_status s = fa_tp_decode(ctx, file, what, tp, base_dir, NULL, &d);
    void *vdata = NULL;
    if (s == FA_OK && !(vdata = fa_blob_take(d.blob))) { /* a mapped slice (external data): copied out */
        vdata = malloc(d.nbytes ? d.nbytes : 1);
        if (vdata && d.nbytes) memcpy(vdata, fa_blob_data(d.blob), d.nbytes);
        fa_blob_unref(d.blob);
        if (!vdata) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", file);
    }
    if (s == FA_OK && out_name) {
        *out_name = strdup(tp->name ? tp->name : "");
        if (!*out_name) {
            free(vdata);
            s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", file);
        }
    }
    onnx__tensor_proto__free_unpacked(tp, &budget.alloc);
    if (s != FA_OK) return s;
    memset(out, 0, sizeof *out);
    out->data = vdata;
    out->dtype = d.dtype;
    out->rank = d.rank;
    for (int i = 0; i < FA_MAX_RANK; i++) out->dims[i] = i < d.rank ? d.dims[i] : 0;
    return FA_OK;
}

fa_status fa_tensorproto_read_buffer(fa_ctx *ctx, const char *display_name, const uint8_t *data,
                                     size_t len, fa_value *out, char **out_name)
{
    return tp_read(ctx, display_name ? display_name : "<buffer>", NULL, data, len, out, out_name);
}

fa_status fa_tensorproto_read(fa_ctx *ctx, const char *path, fa_value *out, char **out_name)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    /* a TensorProto is one protobuf message, at most 2 GiB (protobuf's limit; larger tensors are
     * external data): an 8 GB file was read whole (8.4 GB resident) before its first byte was
     * found invalid */
    fa_status s = fa_read_file_max(ctx, path, (size_t)INT32_MAX, "a TensorProto (one protobuf message: 2 GiB)", &buf, &len);
    if (s != FA_OK) return s;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        if (slash == dir) slash[1] = 0;
        else *slash = 0;
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    s = tp_read(ctx, path, dir, buf, len, out, out_name);
    free(buf);
    return s;
}

fa_status fa_tensorproto_write(fa_ctx *ctx, const char *path, const fa_value *v, const char *name)
{
    if (v->rank < 0 || v->rank > FA_MAX_RANK)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: tensor rank %d out of range 0..%d", path,
                            v->rank, FA_MAX_RANK);
    size_t esz = fa_dtype_size(v->dtype), numel = 1, nbytes;
    if (!esz)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "%s: cannot write dtype %s", path,
                            fa_dtype_name(v->dtype));
    for (int i = 0; i < v->rank; i++) {
        if (v->dims[i] < 0 || !fa_mul_size(numel, (size_t)v->dims[i], &numel))
            return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: dim %d = %" PRId64 " is negative or overflows",
                                path, i, v->dims[i]);
    }
    if (!fa_mul_size(numel, esz, &nbytes))
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: tensor byte size overflows", path);
    if (nbytes && !v->data)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: tensor has no data", path);
    Onnx__TensorProto tp;
    onnx__tensor_proto__init(&tp);
    fa_tp_encode(&tp, name, v->dtype, v->rank, v->dims, v->data, nbytes);
    size_t sz = onnx__tensor_proto__get_packed_size(&tp);
    uint8_t *buf = malloc(sz ? sz : 1);
    if (!buf) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: cannot allocate %zu bytes", path, sz);
    onnx__tensor_proto__pack(&tp, buf);
    fa_status s = fa_write_file_atomic(ctx, path, buf, sz);
    free(buf);
    return s;
}
