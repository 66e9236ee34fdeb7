/* graph/registry — op lookup over the per-category tables of ops_*.c, plus shared op helpers. */
#include "ops-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const fa_op *const k_tables[] = {fa_ops_elementwise, fa_ops_nn, fa_ops_reduce, fa_ops_shape,
                                        fa_ops_extra};

static bool same_domain(const char *a, const char *b)
{
    if (!a || strcmp(a, "ai.onnx") == 0) a = "";
    if (!b || strcmp(b, "ai.onnx") == 0) b = "";
    return strcmp(a, b) == 0;
}

const fa_op *fa_op_find(const char *domain, const char *op_type)
{
    for (size_t t = 0; t < sizeof k_tables / sizeof k_tables[0]; t++)
        for (const fa_op *op = k_tables[t]; op->name; op++)
            if (strcmp(op->name, op_type) == 0 && same_domain(op->domain, domain)) return op;
    return NULL;
}

const fa_op *fa_op_at(int i)
{
    for (size_t t = 0; t < sizeof k_tables / sizeof k_tables[0]; t++)
        for (const fa_op *op = k_tables[t]; op->name; op++)
            if (i-- == 0) return op;
    return NULL;
}

/* A node of the applier's own domain (applier/fused_graph.c): FusedConv, FusedConvTranspose,
 * FusedMatMul, FusedGemm — the anchor op with its oneDNN post-ops — and FusedKernel, a generated
 * kernel. None has a registry row, and fa_cost_io alone gave them 0 flops: the cpu executor then
 * took any of them under 256 KiB moved for a small kernel and ran it on one thread
 * (runtime/cpu/exec_cpu.c small_kernel). MobileNetV3-small's 3.8 MFLOP 1x1 convolution with its
 * HardSwish ran 43-47 us there, where the plain convolution ran 25 us on two threads. Bytes: the
 * node's own inputs (post-op operands included) and outputs. Flops: FA_FUSED_FLOPS_ATTR, which the
 * applier writes on every such node (the flops of the cluster's members, by their own formulas),
 * else, for a Fused<Anchor> node (which keeps the anchor's inputs first and its attributes), the
 * anchor op's formula over the node itself; else 0. */
static void fused_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    fa_cost_io(g, n, 0, out);
    int64_t f = fa_node_attr_int(n, FA_FUSED_FLOPS_ATTR, -1);
    if (f >= 0) {
        out->flops = (uint64_t)f;
        return;
    }
    const fa_op *anchor = strncmp(n->op_type, "Fused", 5) ? NULL : fa_op_find("", n->op_type + 5);
    if (anchor && anchor->cost) {
        fa_op_cost c;
        memset(&c, 0, sizeof c);
        anchor->cost(g, n, &c);
        out->flops = c.flops;
    }
}

void fa_node_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    memset(out, 0, sizeof *out);
    if (n->op && n->op->cost) n->op->cost(g, n, out);
    else if (!n->op && !strcmp(n->domain, FA_FUSED_DOMAIN)) fused_cost(g, n, out);
    else fa_cost_io(g, n, 0, out);
}

static fa_status vnode_error(fa_ctx *ctx, fa_status s, const fa_node *n, const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return fa_ctx_error(ctx, s, "node '%s' (%s): %s", n->name, n->op_type, msg);
}

fa_status fa_dim_add(fa_ctx *ctx, const fa_node *n, const char *what, int64_t a, int64_t b, int64_t *out)
{
    if (fa_i64_add(a, b, out)) return FA_OK;
    return fa_node_error(ctx, n, "%s: %lld + %lld overflows int64", what, (long long)a, (long long)b);
}

fa_status fa_dim_sub(fa_ctx *ctx, const fa_node *n, const char *what, int64_t a, int64_t b, int64_t *out)
{
    if (fa_i64_sub(a, b, out)) return FA_OK;
    return fa_node_error(ctx, n, "%s: %lld - %lld overflows int64", what, (long long)a, (long long)b);
}

fa_status fa_dim_mul(fa_ctx *ctx, const fa_node *n, const char *what, int64_t a, int64_t b, int64_t *out)
{
    if (fa_i64_mul(a, b, out)) return FA_OK;
    return fa_node_error(ctx, n, "%s: %lld x %lld overflows int64", what, (long long)a, (long long)b);
}

fa_status fa_dim_from_double(fa_ctx *ctx, const fa_node *n, const char *what, double v, int64_t *out)
{
    if (!(v >= 0)) return fa_node_error(ctx, n, "%s = %g is negative or not a number", what, v);
    if (!(v <= (double)FA_MAX_TENSOR_ELEMENTS))
        return fa_node_error(ctx, n, "%s = %g is over the 2^48 a tensor may span", what, v);
    *out = (int64_t)v;
    return FA_OK;
}

fa_status fa_node_error(fa_ctx *ctx, const fa_node *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fa_status s = vnode_error(ctx, FA_ERR_INPUT, n, fmt, ap);
    va_end(ap);
    return s;
}

fa_status fa_node_unsupported(fa_ctx *ctx, const fa_node *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fa_status s = vnode_error(ctx, FA_ERR_UNSUPPORTED, n, fmt, ap);
    va_end(ap);
    return s;
}

fa_tensor *fa_req_input(fa_ctx *ctx, fa_graph *g, fa_node *n, int i)
{
    fa_tensor *t = fa_graph_in(g, n, i);
    if (!t) {
        fa_node_error(ctx, n, "required input %d is missing", i);
        return NULL;
    }
    if (t->rank < 0) {
        fa_node_error(ctx, n, "input %d '%s' has unknown shape", i, t->name);
        return NULL;
    }
    return t;
}

int fa_norm_axis(fa_ctx *ctx, const fa_node *n, int64_t axis, int rank)
{
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= (rank ? rank : 1)) {
        fa_node_error(ctx, n, "axis %lld out of range for rank %d", (long long)axis, rank);
        return -1;
    }
    return (int)a;
}

fa_status fa_bcast_shape(fa_ctx *ctx, const fa_node *n, int ra, const int64_t *da, int rb,
                         const int64_t *db, int *rout, int64_t *dout)
{
    int r = ra > rb ? ra : rb;
    int64_t tmp[FA_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t a = ia >= 0 ? da[ia] : 1, b = ib >= 0 ? db[ib] : 1;
        if (a == b || b == 1) tmp[i] = a;
        else if (a == 1) tmp[i] = b;
        else {
            char sa[128] = "", sb[128] = "";
            size_t oa = 0, ob = 0;
            for (int k = 0; k < ra; k++)
                oa += (size_t)snprintf(sa + oa, sizeof sa - oa, "%s%lld", k ? "x" : "", (long long)da[k]);
            for (int k = 0; k < rb; k++)
                ob += (size_t)snprintf(sb + ob, sizeof sb - ob, "%s%lld", k ? "x" : "", (long long)db[k]);
            return fa_node_error(ctx, n, "shapes [%s] and [%s] do not broadcast (dim %d: %lld vs %lld)",
                                 sa, sb, i, (long long)a, (long long)b);
        }
    }
    *rout = r;
    memcpy(dout, tmp, sizeof(int64_t) * (size_t)r);
    return FA_OK;
}

bool fa_input_is_const(const fa_graph *g, const fa_node *n, int idx)
{
    const fa_tensor *t = fa_graph_in(g, n, idx);
    return t && (t->flags & FA_TENSOR_CONST) && t->data;
}

fa_status fa_const_ints(fa_ctx *ctx, const fa_graph *g, const fa_node *n, int idx, int64_t *out,
                        int max, int *count)
{
    const fa_tensor *t = fa_graph_in(g, n, idx);
    if (!t) return fa_node_error(ctx, n, "input %d is missing", idx);
    if (!(t->flags & FA_TENSOR_CONST) || !t->data)
        return fa_node_unsupported(ctx, n, "input %d '%s' must be a constant (computed at run time is not supported)",
                                   idx, t->name);
    size_t es = fa_dtype_size(t->dtype);
    if (t->dtype != FA_DTYPE_INT64 && t->dtype != FA_DTYPE_INT32)
        return fa_node_error(ctx, n, "input %d '%s' must be int64 or int32, is %s", idx, t->name,
                             fa_dtype_name(t->dtype));
    size_t cnt = t->nbytes / es;
    if (cnt > (size_t)max)
        return fa_node_error(ctx, n, "input %d '%s' has %zu elements, at most %d allowed", idx,
                             t->name, cnt, max);
    for (size_t i = 0; i < cnt; i++)
        out[i] = t->dtype == FA_DTYPE_INT64 ? ((const int64_t *)t->data)[i]
                                            : ((const int32_t *)t->data)[i];
    *count = (int)cnt;
    return FA_OK;
}

fa_status fa_const_float(fa_ctx *ctx, const fa_graph *g, const fa_node *n, int idx, float *out)
{
    const fa_tensor *t = fa_graph_in(g, n, idx);
    if (!t) return fa_node_error(ctx, n, "input %d is missing", idx);
    if (!(t->flags & FA_TENSOR_CONST) || !t->data)
        return fa_node_unsupported(ctx, n, "input %d '%s' must be a constant", idx, t->name);
    size_t es = fa_dtype_size(t->dtype);
    if (!es || t->nbytes < es) return fa_node_error(ctx, n, "input %d '%s' is empty", idx, t->name);
    *out = (float)fa_load_as_double(t->data, t->dtype, 0);
    return FA_OK;
}

void fa_set_out(fa_graph *g, fa_node *n, int i, fa_dtype dt, int rank, const int64_t *dims)
{
    fa_tensor *t = fa_graph_out(g, n, i);
    if (t) fa_tensor_set_shape(t, dt, rank, dims);
}

fa_status fa_infer_same(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    fa_set_out(g, n, 0, x->dtype, x->rank, x->dims);
    return FA_OK;
}

void fa_cost_io(const fa_graph *g, const fa_node *n, uint64_t flops_per_elem, fa_op_cost *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n->n_inputs; i++) {
        const fa_tensor *t = fa_graph_in(g, n, i);
        if (t) out->bytes_read = fa_u64_add_sat(out->bytes_read, fa_tensor_bytes(t));
    }
    for (int i = 0; i < n->n_outputs; i++) {
        const fa_tensor *t = fa_graph_out(g, n, i);
        if (t) out->bytes_written = fa_u64_add_sat(out->bytes_written, fa_tensor_bytes(t));
    }
    const fa_tensor *o = fa_graph_out(g, n, 0);
    int64_t ne = o ? fa_tensor_numel(o) : 0;
    if (ne > 0) out->flops = fa_u64_mul_sat(flops_per_elem, (uint64_t)ne);
}

void fa_bcast_strides(int rin, const int64_t *din, int rout, const int64_t *dout, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rout - 1; i >= 0; i--) {
        int k = i - (rout - rin);
        if (k < 0) { strides[i] = 0; continue; }
        strides[i] = (din[k] == 1 && dout[i] != 1) ? 0 : s;
        s *= din[k];
    }
}

float fa_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, f;
    if (exp == 0) {
        if (man == 0) f = sign;
        else {
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) { man <<= 1; exp--; }
            man &= 0x3ff;
            f = sign | (exp << 23) | (man << 13);
        }
    } else if (exp == 31) f = sign | 0x7f800000 | (man << 13);
    else f = sign | ((exp + 127 - 15) << 23) | (man << 13);
    float r;
    memcpy(&r, &f, 4);
    return r;
}

uint16_t fa_float_to_half(float v)
{
    uint32_t x;
    memcpy(&x, &v, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t man = x & 0x7fffff;
    if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = sign | ((uint32_t)exp << 10) | (man >> 13);
    uint32_t rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return (uint16_t)h;
}

float fa_bf16_to_float(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float r;
    memcpy(&r, &x, 4);
    return r;
}

uint16_t fa_float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

int64_t fa_load_as_i64(const void *d, fa_dtype dt, int64_t i)
{
    switch (dt) {
    case FA_DTYPE_INT64: return ((const int64_t *)d)[i];
    case FA_DTYPE_INT32: return ((const int32_t *)d)[i];
    case FA_DTYPE_INT16: return ((const int16_t *)d)[i];
    case FA_DTYPE_INT8: return ((const int8_t *)d)[i];
    case FA_DTYPE_UINT8: return ((const uint8_t *)d)[i];
    case FA_DTYPE_UINT16: return ((const uint16_t *)d)[i];
    case FA_DTYPE_UINT32: return ((const uint32_t *)d)[i];
    case FA_DTYPE_UINT64: return (int64_t)((const uint64_t *)d)[i];
    case FA_DTYPE_BOOL: return ((const uint8_t *)d)[i] != 0;
    default: return fa_f64_to_i64_sat(fa_load_as_double(d, dt, i));
    }
}

/* Store an integer, wrapping to the destination width (two's complement), bool = nonzero. */
void fa_store_from_i64(void *d, fa_dtype dt, int64_t i, int64_t v)
{
    switch (dt) {
    case FA_DTYPE_INT64: ((int64_t *)d)[i] = v; break;
    case FA_DTYPE_INT32: ((int32_t *)d)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case FA_DTYPE_INT16: ((int16_t *)d)[i] = (int16_t)(uint16_t)(uint64_t)v; break;
    case FA_DTYPE_INT8: ((int8_t *)d)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
    case FA_DTYPE_UINT8: ((uint8_t *)d)[i] = (uint8_t)(uint64_t)v; break;
    case FA_DTYPE_UINT16: ((uint16_t *)d)[i] = (uint16_t)(uint64_t)v; break;
    case FA_DTYPE_UINT32: ((uint32_t *)d)[i] = (uint32_t)(uint64_t)v; break;
    case FA_DTYPE_UINT64: ((uint64_t *)d)[i] = (uint64_t)v; break;
    case FA_DTYPE_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    default: fa_store_from_double(d, dt, i, (double)v); break;
    }
}


double fa_load_as_double(const void *d, fa_dtype dt, int64_t i)
{
    switch (dt) {
    case FA_DTYPE_FLOAT: return ((const float *)d)[i];
    case FA_DTYPE_DOUBLE: return ((const double *)d)[i];
    case FA_DTYPE_INT64: return (double)((const int64_t *)d)[i];
    case FA_DTYPE_INT32: return ((const int32_t *)d)[i];
    case FA_DTYPE_INT16: return ((const int16_t *)d)[i];
    case FA_DTYPE_INT8: return ((const int8_t *)d)[i];
    case FA_DTYPE_UINT8: return ((const uint8_t *)d)[i];
    case FA_DTYPE_UINT16: return ((const uint16_t *)d)[i];
    case FA_DTYPE_UINT32: return ((const uint32_t *)d)[i];
    case FA_DTYPE_UINT64: return (double)((const uint64_t *)d)[i];
    case FA_DTYPE_BOOL: return ((const uint8_t *)d)[i] ? 1.0 : 0.0;
    case FA_DTYPE_FLOAT16: return fa_half_to_float(((const uint16_t *)d)[i]);
    case FA_DTYPE_BFLOAT16: return fa_bf16_to_float(((const uint16_t *)d)[i]);
    default: return 0.0;
    }
}

/* v clamped to [lo, hi] and truncated toward zero, NaN -> 0: a conversion C defines for every
 * double (an out-of-range float-to-integer cast is undefined, C11 6.3.1.4p1). ONNX leaves an
 * out-of-range Cast unspecified; saturating is what its saturating casts and QuantizeLinear do. */
static int64_t sat_int(double v, double lo, double hi)
{
    if (v != v) return 0;
    return fa_f64_to_i64_sat(v < lo ? lo : v > hi ? hi : v);
}

void fa_store_from_double(void *d, fa_dtype dt, int64_t i, double v)
{
    switch (dt) {
    case FA_DTYPE_FLOAT: ((float *)d)[i] = (float)v; break;
    case FA_DTYPE_DOUBLE: ((double *)d)[i] = v; break;
    case FA_DTYPE_INT64: ((int64_t *)d)[i] = fa_f64_to_i64_sat(v); break;
    case FA_DTYPE_INT32: ((int32_t *)d)[i] = (int32_t)sat_int(v, INT32_MIN, INT32_MAX); break;
    case FA_DTYPE_INT16: ((int16_t *)d)[i] = (int16_t)sat_int(v, INT16_MIN, INT16_MAX); break;
    case FA_DTYPE_INT8: ((int8_t *)d)[i] = (int8_t)sat_int(v, INT8_MIN, INT8_MAX); break;
    case FA_DTYPE_UINT8: ((uint8_t *)d)[i] = (uint8_t)sat_int(v, 0, UINT8_MAX); break;
    case FA_DTYPE_UINT16: ((uint16_t *)d)[i] = (uint16_t)sat_int(v, 0, UINT16_MAX); break;
    case FA_DTYPE_UINT32: ((uint32_t *)d)[i] = (uint32_t)sat_int(v, 0, UINT32_MAX); break;
    case FA_DTYPE_UINT64:
        ((uint64_t *)d)[i] = v != v || v <= 0 ? 0 : v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
        break;
    case FA_DTYPE_BOOL: ((uint8_t *)d)[i] = v != 0.0; break;
    case FA_DTYPE_FLOAT16: ((uint16_t *)d)[i] = fa_float_to_half((float)v); break;
    case FA_DTYPE_BFLOAT16: ((uint16_t *)d)[i] = fa_float_to_bf16((float)v); break;
    default: break;
    }
}

/* ---- attribute checks against the op's fa_attr_spec list ---- */

const char *fa_attr_type_name(fa_attr_type t)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT",  "INT",     "STRING",
                                        "TENSOR",    "GRAPH",  "FLOATS",  "INTS",
                                        "STRINGS",   "TENSORS", "GRAPHS", "SPARSE_TENSOR",
                                        "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* A model string shown in a message: at most 48 bytes, control bytes as '?'. */
static void show_str(char *buf, size_t cap, const char *s, size_t len)
{
    size_t o = 0;
    if (cap < 8) { buf[0] = 0; return; }
    buf[o++] = '\'';
    for (size_t i = 0; i < len && o + 5 < cap && i < 48; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (len > 48 && o + 5 < cap) { buf[o++] = '.'; buf[o++] = '.'; buf[o++] = '.'; }
    buf[o++] = '\'';
    buf[o] = 0;
}

/* The value of attribute a as text for a message ("3", "[1, 2]", "'linear'"). */
static void attr_value_text(const fa_attr *a, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = 0;
    switch (a->type) {
    case FA_ATTR_INT: snprintf(buf, cap, "%lld", (long long)a->i); return;
    case FA_ATTR_FLOAT: snprintf(buf, cap, "%g", (double)a->f); return;
    case FA_ATTR_STRING: show_str(buf, cap, a->s ? a->s : "", a->s ? a->s_len : 0); return;
    case FA_ATTR_INTS: case FA_ATTR_FLOATS: case FA_ATTR_STRINGS:
        o += (size_t)snprintf(buf + o, cap - o, "[");
        for (int i = 0; i < a->n && o + 24 < cap; i++) {
            if (i == 8) { o += (size_t)snprintf(buf + o, cap - o, ", ..."); break; }
            if (a->type == FA_ATTR_INTS)
                o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? ", " : "", (long long)a->ints[i]);
            else if (a->type == FA_ATTR_FLOATS)
                o += (size_t)snprintf(buf + o, cap - o, "%s%g", i ? ", " : "", (double)a->floats[i]);
            else {
                char s[64];
                const char *v = a->strings[i] ? a->strings[i] : "";
                show_str(s, sizeof s, v, strlen(v));
                o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", s);
            }
        }
        if (o + 2 < cap) snprintf(buf + o, cap - o, "]");
        return;
    case FA_ATTR_TENSOR: snprintf(buf, cap, "a tensor"); return;
    case FA_ATTR_GRAPH: snprintf(buf, cap, "a subgraph"); return;
    default: snprintf(buf, cap, "a %s", fa_attr_type_name(a->type)); return;
    }
}

/* Does one alternative of an accept list (alt[0..len)) match number v? "3", "-1", "0.5",
 * "1..", "..0", "0..3". */
static bool alt_match_number(const char *alt, size_t len, double v)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf) return false;
    memcpy(buf, alt, len);
    buf[len] = 0;
    char *dots = strstr(buf, "..");
    char *end;
    if (!dots) {
        double x = strtod(buf, &end);
        return *end == 0 && x == v;
    }
    *dots = 0;
    double lo = -INFINITY, hi = INFINITY;
    if (buf[0]) { lo = strtod(buf, &end); if (*end) return false; }
    if (dots[2]) { hi = strtod(dots + 2, &end); if (*end) return false; }
    return v >= lo && v <= hi;
}

/* Is one element (number v, or string s of length slen when s != NULL) in the accept list? */
static bool accepted(const char *accept, double v, const char *s, size_t slen)
{
    for (const char *p = accept;;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (s ? (len == slen && memcmp(p, s, len) == 0) : alt_match_number(p, len, v)) return true;
        if (!bar) return false;
        p = bar + 1;
    }
}

static bool attr_accepted(const fa_attr *a, const char *accept)
{
    switch (a->type) {
    case FA_ATTR_INT: return accepted(accept, (double)a->i, NULL, 0);
    case FA_ATTR_FLOAT: return accepted(accept, (double)a->f, NULL, 0);
    case FA_ATTR_STRING: return accepted(accept, 0, a->s ? a->s : "", a->s ? a->s_len : 0);
    case FA_ATTR_INTS:
        for (int i = 0; i < a->n; i++)
            if (!accepted(accept, (double)a->ints[i], NULL, 0)) return false;
        return true;
    case FA_ATTR_FLOATS:
        for (int i = 0; i < a->n; i++)
            if (!accepted(accept, (double)a->floats[i], NULL, 0)) return false;
        return true;
    case FA_ATTR_STRINGS:
        for (int i = 0; i < a->n; i++) {
            const char *v = a->strings[i] ? a->strings[i] : "";
            if (!accepted(accept, 0, v, strlen(v))) return false;
        }
        return true;
    default: return false; /* a TENSOR/GRAPH value cannot be listed */
    }
}

fa_status fa_node_check_attrs(fa_ctx *ctx, const fa_graph *g, const fa_node *n)
{
    if (!n->op) return FA_OK; /* unknown ops are refused by name elsewhere */
    const fa_attr_spec *specs = n->op->attrs;
    for (int k = 0; k < n->n_attrs; k++) {
        const fa_attr *a = &n->attrs[k];
        const fa_attr_spec *name_match = NULL, *sp = NULL;
        for (const fa_attr_spec *s = specs; s && s->name; s++) {
            if (strcmp(s->name, a->name) != 0) continue;
            if (s->until > 0 && n->opset > s->until) continue;
            if (!name_match) name_match = s;
            if (s->type == a->type) { sp = s; break; }
        }
        char val[256];
        attr_value_text(a, val, sizeof val);
        if (!name_match)
            return fa_node_unsupported(ctx, n, "attribute '%s' = %s is not supported (%s%s%s-%d reads no such attribute)",
                                       a->name, val, *n->domain ? n->domain : "", *n->domain ? "." : "",
                                       n->op_type, n->opset);
        if (!sp) {
            const char *second = NULL;
            for (const fa_attr_spec *s = name_match + 1; s->name; s++)
                if (strcmp(s->name, a->name) == 0 && !(s->until > 0 && n->opset > s->until))
                    second = fa_attr_type_name(s->type);
            return fa_node_error(ctx, n, "attribute '%s' has type %s, expected %s%s%s", a->name,
                                 fa_attr_type_name(a->type), fa_attr_type_name(name_match->type),
                                 second ? " or " : "", second ? second : "");
        }
        if (sp->accept && !attr_accepted(a, sp->accept))
            return fa_node_unsupported(ctx, n, "attribute '%s' = %s is not supported (implemented: %s)", a->name,
                                       val, sp->accept);
        if (sp->count != FA_ACOUNT_ANY) {
            const fa_tensor *x = fa_graph_in(g, n, 0);
            if (!x || x->rank < 0) continue;
            int want = sp->count == FA_ACOUNT_SPATIAL    ? x->rank - 2
                       : sp->count == FA_ACOUNT_2SPATIAL ? 2 * (x->rank - 2)
                       : sp->count == FA_ACOUNT_RANK     ? x->rank
                                                         : 2 * x->rank;
            if (a->n != want)
                return fa_node_error(ctx, n, "attribute '%s' has %d values, expected %d for input '%s' of rank %d",
                                     a->name, a->n, want, x->name, x->rank);
        }
    }
    return FA_OK;
}

bool fa_dtype_is_integer(fa_dtype t)
{
    switch (t) {
    case FA_DTYPE_UINT8: case FA_DTYPE_INT8: case FA_DTYPE_UINT16: case FA_DTYPE_INT16:
    case FA_DTYPE_INT32: case FA_DTYPE_INT64: case FA_DTYPE_UINT32: case FA_DTYPE_UINT64:
    case FA_DTYPE_BOOL:
        return true;
    default:
        return false;
    }
}

void fa_dtype_int_range(fa_dtype t, double *lo, double *hi)
{
    switch (t) {
    case FA_DTYPE_INT8: *lo = INT8_MIN; *hi = INT8_MAX; break;
    case FA_DTYPE_UINT8: *lo = 0; *hi = UINT8_MAX; break;
    case FA_DTYPE_INT16: *lo = INT16_MIN; *hi = INT16_MAX; break;
    case FA_DTYPE_UINT16: *lo = 0; *hi = UINT16_MAX; break;
    case FA_DTYPE_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    case FA_DTYPE_UINT32: *lo = 0; *hi = UINT32_MAX; break;
    case FA_DTYPE_UINT64: *lo = 0; *hi = 18446744073709549568.0; break;
    case FA_DTYPE_BOOL: *lo = 0; *hi = 1; break;
    default: *lo = -9223372036854775808.0; *hi = 9223372036854774784.0; break;
    }
}

void fa_store_clamped_int(void *d, fa_dtype dt, int64_t i, double v)
{
    double lo, hi;
    fa_dtype_int_range(dt, &lo, &hi);
    if (v != v) v = 0;
    v = v < lo ? lo : v > hi ? hi : v;
    if (dt == FA_DTYPE_UINT64) ((uint64_t *)d)[i] = (uint64_t)v;
    else fa_store_from_i64(d, dt, i, (int64_t)v);
}
