/* graph/ir — construction, attribute access, consumer index and topological order. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t fa_dtype_size(fa_dtype t)
{
    switch (t) {
    case FA_DTYPE_FLOAT: case FA_DTYPE_INT32: case FA_DTYPE_UINT32: return 4;
    case FA_DTYPE_UINT8: case FA_DTYPE_INT8: case FA_DTYPE_BOOL: return 1;
    case FA_DTYPE_UINT16: case FA_DTYPE_INT16: case FA_DTYPE_FLOAT16: case FA_DTYPE_BFLOAT16: return 2;
    case FA_DTYPE_INT64: case FA_DTYPE_DOUBLE: case FA_DTYPE_UINT64: return 8;
    default: return 0;
    }
}

const char *fa_dtype_name(fa_dtype t)
{
    switch ((int)t) { /* int: also names the ONNX types outside the enum */
    case FA_DTYPE_FLOAT: return "float32";
    case FA_DTYPE_UINT8: return "uint8";
    case FA_DTYPE_INT8: return "int8";
    case FA_DTYPE_UINT16: return "uint16";
    case FA_DTYPE_INT16: return "int16";
    case FA_DTYPE_INT32: return "int32";
    case FA_DTYPE_INT64: return "int64";
    case FA_DTYPE_STRING: return "string";
    case FA_DTYPE_BOOL: return "bool";
    case FA_DTYPE_FLOAT16: return "float16";
    case FA_DTYPE_DOUBLE: return "float64";
    case FA_DTYPE_UINT32: return "uint32";
    case FA_DTYPE_UINT64: return "uint64";
    case FA_DTYPE_BFLOAT16: return "bfloat16";
    /* ONNX element types without an fa_dtype (onnx.proto TensorProto.DataType), for messages */
    case 14: return "complex64";
    case 15: return "complex128";
    case 17: return "float8e4m3fn";
    case 18: return "float8e4m3fnuz";
    case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz";
    case 21: return "uint4";
    case 22: return "int4";
    case 23: return "float4e2m1";
    case 24: return "float8e8m0";
    case 25: return "uint2";
    case 26: return "int2";
    default: return "undefined";
    }
}

const char *fa_pattern_name(fa_pattern p)
{
    static const char *const names[] = {
        "elementwise", "broadcast", "injective", "reduction", "out-elementwise-fusable", "opaque"};
    _Static_assert(sizeof names / sizeof names[0] == FA_PATTERN_COUNT, "names: one row per value");
    return (unsigned)p < FA_PATTERN_COUNT ? names[p] : "unknown";
}

static const char *const k_reduce_names[] = {
    "none",       "reduce-sum",  "reduce-mean", "reduce-max", "reduce-min",    "reduce-prod",
    "reduce-l1",  "reduce-l2",   "reduce-sum-square", "reduce-log-sum-exp", "softmax", "log-softmax",
    "layer-norm", "rms-norm",    "attention",   "generic"};
_Static_assert(sizeof k_reduce_names / sizeof k_reduce_names[0] == FA_REDUCE_COUNT, "a name per reduce kind");

const char *fa_reduce_kind_name(fa_reduce_kind k) { return (unsigned)k < FA_REDUCE_COUNT ? k_reduce_names[k] : "?"; }

fa_reduce_kind fa_reduce_kind_parse(const char *word)
{
    for (int i = 0; word && i < FA_REDUCE_COUNT; i++)
        if (!strcmp(k_reduce_names[i], word)) return (fa_reduce_kind)i;
    return FA_REDUCE_NONE;
}

fa_graph *fa_graph_create(const char *name)
{
    fa_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->arena = fa_arena_create(1 << 16);
    if (!g->arena) {
        free(g);
        return NULL;
    }
    g->name = fa_arena_strdup(g->arena, name ? name : "graph");
    g->ir_version = 8;
    return g;
}

void fa_graph_free(fa_graph *g)
{
    if (!g) return;
    for (int i = 0; i < g->n_tensors; i++) fa_tensor_clear_data(g->tensors[i]);
    /* attribute tensors are detached: free their data too */
    for (int i = 0; i < g->n_nodes; i++)
        for (int a = 0; a < g->nodes[i]->n_attrs; a++)
            if (g->nodes[i]->attrs[a].t) fa_tensor_clear_data(g->nodes[i]->attrs[a].t);
    free(g->tensors);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->cons_start);
    free(g->cons);
    free(g->topo);
    free(g->topo_pos);
    free(g->name_slots);
    fa_arena_free(g->arena);
    free(g);
}

uint64_t fa_graph_initializer_bytes(const fa_graph *g)
{
    uint64_t b = 0;
    for (int i = 0; g && i < g->n_tensors; i++)
        if (g->tensors[i] && (g->tensors[i]->flags & FA_TENSOR_INITIALIZER)) b = fa_u64_add_sat(b, g->tensors[i]->nbytes);
    return b;
}

int64_t fa_graph_opset(const fa_graph *g, const char *domain)
{
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    for (int i = 0; i < g->n_opsets; i++) {
        const char *d = g->opsets[i].domain;
        if (strcmp(d, "ai.onnx") == 0) d = "";
        if (strcmp(d, domain) == 0) return g->opsets[i].version;
    }
    return 0;
}

fa_status fa_graph_set_opset(fa_ctx *ctx, fa_graph *g, const char *domain, int64_t version)
{
    if (!domain) domain = "";
    for (int i = 0; i < g->n_opsets; i++)
        if (strcmp(g->opsets[i].domain, domain) == 0) {
            g->opsets[i].version = version;
            return FA_OK;
        }
    fa_opset *ns = fa_arena_alloc(g->arena, sizeof *ns * (size_t)(g->n_opsets + 1));
    if (!ns) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory adding opset");
    if (g->n_opsets) memcpy(ns, g->opsets, sizeof *ns * (size_t)g->n_opsets);
    ns[g->n_opsets].domain = fa_arena_strdup(g->arena, domain);
    ns[g->n_opsets].version = version;
    g->opsets = ns;
    g->n_opsets++;
    return FA_OK;
}

static bool grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap) return true;
    int nc = *cap ? *cap : 16;
    while (nc < need) nc *= 2;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) return false;
    *arr = p;
    *cap = nc;
    return true;
}

/* Tensor-name hash (open addressing, linear probing, load <= 1/2): keeps import of
 * 100k-node graphs linear instead of quadratic. */
static bool name_hash_insert(fa_graph *g, const char *name, int id)
{
    if ((g->n_tensors + 1) * 2 > g->name_cap) {
        int nc = g->name_cap ? g->name_cap * 2 : 64;
        int *slots = calloc((size_t)nc, sizeof(int));
        if (!slots) return false;
        for (int i = 0; i < g->n_tensors; i++) {
            size_t h = fa_hash64(g->tensors[i]->name, strlen(g->tensors[i]->name)) & (size_t)(nc - 1);
            while (slots[h]) h = (h + 1) & (size_t)(nc - 1);
            slots[h] = i + 1;
        }
        free(g->name_slots);
        g->name_slots = slots;
        g->name_cap = nc;
    }
    size_t h = fa_hash64(name, strlen(name)) & (size_t)(g->name_cap - 1);
    while (g->name_slots[h]) h = (h + 1) & (size_t)(g->name_cap - 1);
    g->name_slots[h] = id + 1;
    return true;
}

int fa_graph_find_tensor(const fa_graph *g, const char *name)
{
    if (!g->name_cap) return -1;
    size_t h = fa_hash64(name, strlen(name)) & (size_t)(g->name_cap - 1);
    while (g->name_slots[h]) {
        int id = g->name_slots[h] - 1;
        if (strcmp(g->tensors[id]->name, name) == 0) return id;
        h = (h + 1) & (size_t)(g->name_cap - 1);
    }
    return -1;
}

int fa_graph_tensor(fa_graph *g, const char *name)
{
    int id = fa_graph_find_tensor(g, name);
    if (id >= 0) return id;
    if (!grow((void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1, sizeof *g->tensors))
        return -1;
    fa_tensor *t = fa_arena_alloc(g->arena, sizeof *t);
    if (!t) return -1;
    t->id = g->n_tensors;
    t->name = fa_arena_strdup(g->arena, name);
    if (!t->name || !name_hash_insert(g, t->name, t->id)) return -1;
    t->rank = -1;
    t->producer = -1;
    for (int i = 0; i < FA_MAX_RANK; i++) t->dims[i] = -1;
    g->tensors[g->n_tensors++] = t;
    return t->id;
}

fa_node *fa_graph_add_node(fa_ctx *ctx, fa_graph *g, const char *name, const char *op_type,
                           const char *domain, int n_in, const char *const *inputs, int n_out,
                           const char *const *outputs)
{
    if (!grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes)) {
        fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory adding node");
        return NULL;
    }
    fa_node *n = fa_arena_alloc(g->arena, sizeof *n);
    if (!n) {
        fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory adding node");
        return NULL;
    }
    n->id = g->n_nodes;
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    char auto_name[96];
    if (!name || !*name) {
        snprintf(auto_name, sizeof auto_name, "%s_%d", op_type, n->id);
        name = auto_name;
    }
    n->name = fa_arena_strdup(g->arena, name);
    n->op_type = fa_arena_strdup(g->arena, op_type);
    n->domain = fa_arena_strdup(g->arena, domain);
    n->op = fa_op_find(domain, op_type);
    n->opset = (int)fa_graph_opset(g, domain);
    n->n_inputs = n_in;
    n->n_outputs = n_out;
    n->inputs = fa_arena_alloc(g->arena, sizeof(int) * (size_t)(n_in ? n_in : 1));
    n->outputs = fa_arena_alloc(g->arena, sizeof(int) * (size_t)(n_out ? n_out : 1));
    if (!n->name || !n->inputs || !n->outputs) {
        fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory adding node");
        return NULL;
    }
    for (int i = 0; i < n_in; i++) {
        if (!inputs[i] || !*inputs[i]) { n->inputs[i] = -1; continue; }
        n->inputs[i] = fa_graph_tensor(g, inputs[i]);
        if (n->inputs[i] < 0) { fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); return NULL; }
    }
    for (int i = 0; i < n_out; i++) {
        if (!outputs[i] || !*outputs[i]) { n->outputs[i] = -1; continue; }
        int tid = fa_graph_tensor(g, outputs[i]);
        if (tid < 0) { fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); return NULL; }
        fa_tensor *t = g->tensors[tid];
        if (t->producer >= 0) {
            fa_ctx_error(ctx, FA_ERR_INPUT,
                         "node '%s' (%s): output '%s' is already produced by node '%s'", n->name,
                         op_type, t->name, t->producer == n->id ? n->name : g->nodes[t->producer]->name);
            return NULL;
        }
        if (t->flags & (FA_TENSOR_INITIALIZER | FA_TENSOR_GRAPH_INPUT)) {
            fa_ctx_error(ctx, FA_ERR_INPUT,
                         "node '%s' (%s): output '%s' is also a graph input or initializer",
                         n->name, op_type, t->name);
            return NULL;
        }
        t->producer = n->id;
        n->outputs[i] = tid;
    }
    g->nodes[g->n_nodes++] = n;
    return n;
}

fa_status fa_graph_add_input(fa_ctx *ctx, fa_graph *g, int tid)
{
    if (!grow((void **)&g->inputs, &g->cap_inputs, g->n_inputs + 1, sizeof(int)))
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    g->inputs[g->n_inputs++] = tid;
    g->tensors[tid]->flags |= FA_TENSOR_GRAPH_INPUT;
    return FA_OK;
}

fa_status fa_graph_add_output(fa_ctx *ctx, fa_graph *g, int tid)
{
    if (!grow((void **)&g->outputs, &g->cap_outputs, g->n_outputs + 1, sizeof(int)))
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    g->outputs[g->n_outputs++] = tid;
    g->tensors[tid]->flags |= FA_TENSOR_GRAPH_OUTPUT;
    return FA_OK;
}

void fa_tensor_set_shape(fa_tensor *t, fa_dtype dt, int rank, const int64_t *dims)
{
    t->dtype = dt;
    t->rank = rank;
    for (int i = 0; i < FA_MAX_RANK; i++) t->dims[i] = (i < rank && dims) ? dims[i] : -1;
}

void fa_tensor_clear_data(fa_tensor *t)
{
    if (t->blob) fa_blob_unref(t->blob);
    else free(t->data);
    t->blob = NULL;
    t->data = NULL;
    t->nbytes = 0;
}

fa_status fa_tensor_set_data(fa_ctx *ctx, fa_tensor *t, const void *data, size_t nbytes)
{
    fa_blob *b = fa_blob_alloc(nbytes);
    if (!b)
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "tensor '%s': cannot allocate %zu bytes", t->name,
                            nbytes);
    if (nbytes) memcpy((void *)fa_blob_data(b), data, nbytes); /* a fresh blob: ours to fill */
    fa_tensor_set_blob(t, b);
    fa_blob_unref(b);
    return FA_OK;
}

void fa_tensor_set_blob(fa_tensor *t, fa_blob *b)
{
    fa_blob_ref(b); /* first: b may be the blob t holds now */
    fa_tensor_clear_data(t);
    t->blob = b;
    t->data = (void *)fa_blob_data(b); /* read-only by contract (graph.h) */
    t->nbytes = fa_blob_size(b);
    t->flags |= FA_TENSOR_CONST;
}

fa_status fa_tensor_share_data(fa_ctx *ctx, fa_tensor *t, const fa_tensor *src)
{
    if (src->blob && fa_blob_data(src->blob) == src->data && fa_blob_size(src->blob) == src->nbytes) {
        fa_tensor_set_blob(t, src->blob);
        return FA_OK;
    }
    return fa_tensor_set_data(ctx, t, src->data, src->nbytes);
}

fa_status fa_tensor_adopt_data(fa_ctx *ctx, fa_tensor *t, void *data, size_t nbytes)
{
    fa_blob *b = fa_blob_adopt(data, nbytes);
    if (!b) return fa_ctx_error(ctx, FA_ERR_NOMEM, "tensor '%s': out of memory", t->name);
    fa_tensor_set_blob(t, b);
    fa_blob_unref(b);
    return FA_OK;
}

static fa_attr *add_attr(fa_graph *g, fa_node *n, const char *name, fa_attr_type type)
{
    fa_attr *na = fa_arena_alloc(g->arena, sizeof *na * (size_t)(n->n_attrs + 1));
    if (!na) return NULL;
    if (n->n_attrs) memcpy(na, n->attrs, sizeof *na * (size_t)n->n_attrs);
    n->attrs = na;
    fa_attr *a = &na[n->n_attrs++];
    a->name = fa_arena_strdup(g->arena, name);
    a->type = type;
    return a;
}

fa_attr *fa_node_add_attr_int(fa_graph *g, fa_node *n, const char *name, int64_t v)
{
    fa_attr *a = add_attr(g, n, name, FA_ATTR_INT);
    if (a) a->i = v;
    return a;
}

fa_attr *fa_node_add_attr_float(fa_graph *g, fa_node *n, const char *name, float v)
{
    fa_attr *a = add_attr(g, n, name, FA_ATTR_FLOAT);
    if (a) a->f = v;
    return a;
}

fa_attr *fa_node_add_attr_ints(fa_graph *g, fa_node *n, const char *name, const int64_t *v, int cnt)
{
    fa_attr *a = add_attr(g, n, name, FA_ATTR_INTS);
    if (!a) return NULL;
    a->n = cnt;
    a->ints = fa_arena_alloc(g->arena, sizeof(int64_t) * (size_t)(cnt ? cnt : 1));
    if (!a->ints) return NULL;
    if (cnt) memcpy(a->ints, v, sizeof(int64_t) * (size_t)cnt);
    return a;
}

fa_attr *fa_node_add_attr_floats(fa_graph *g, fa_node *n, const char *name, const float *v, int cnt)
{
    fa_attr *a = add_attr(g, n, name, FA_ATTR_FLOATS);
    if (!a) return NULL;
    a->n = cnt;
    a->floats = fa_arena_alloc(g->arena, sizeof(float) * (size_t)(cnt ? cnt : 1));
    if (!a->floats) return NULL;
    if (cnt) memcpy(a->floats, v, sizeof(float) * (size_t)cnt);
    return a;
}

fa_attr *fa_node_add_attr_string(fa_graph *g, fa_node *n, const char *name, const char *s)
{
    fa_attr *a = add_attr(g, n, name, FA_ATTR_STRING);
    if (!a) return NULL;
    a->s = fa_arena_strdup(g->arena, s);
    a->s_len = strlen(s);
    return a;
}

const fa_attr *fa_node_attr(const fa_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

int64_t fa_node_attr_int(const fa_node *n, const char *name, int64_t dflt)
{
    const fa_attr *a = fa_node_attr(n, name);
    return (a && a->type == FA_ATTR_INT) ? a->i : dflt;
}

float fa_node_attr_float(const fa_node *n, const char *name, float dflt)
{
    const fa_attr *a = fa_node_attr(n, name);
    return (a && a->type == FA_ATTR_FLOAT) ? a->f : dflt;
}

const char *fa_node_attr_string(const fa_node *n, const char *name, const char *dflt)
{
    const fa_attr *a = fa_node_attr(n, name);
    return (a && a->type == FA_ATTR_STRING) ? a->s : dflt;
}

int fa_node_attr_ints(const fa_node *n, const char *name, const int64_t **out)
{
    const fa_attr *a = fa_node_attr(n, name);
    if (!a || a->type != FA_ATTR_INTS) return 0;
    *out = a->ints;
    return a->n;
}

int64_t fa_tensor_numel(const fa_tensor *t)
{
    if (t->rank < 0) return -1;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0) return -1;
        if (t->dims[i] && n > INT64_MAX / t->dims[i]) return -1;
        n *= t->dims[i];
    }
    return n;
}

uint64_t fa_tensor_bytes(const fa_tensor *t)
{
    int64_t n = fa_tensor_numel(t);
    if (n < 0) return 0;
    return fa_u64_mul_sat((uint64_t)n, fa_dtype_size(t->dtype));
}

fa_status fa_tensor_check_size(fa_ctx *ctx, const fa_tensor *t, const char *what)
{
    if (t->rank < 0) return FA_OK;
    int64_t spread = 1; /* product of the dims, 0 counted as 1 */
    bool overflow = false;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0) return FA_OK; /* unknown: checked once bound */
        if (!overflow && !fa_i64_mul(spread, t->dims[i] ? t->dims[i] : 1, &spread)) overflow = true;
    }
    int64_t numel = fa_tensor_numel(t);
    uint64_t bytes = fa_tensor_bytes(t);
    if (!overflow && spread <= FA_MAX_TENSOR_ELEMENTS && bytes <= FA_MAX_TENSOR_BYTES) return FA_OK;
    char shp[256];
    fa_tensor_shape_str(t, shp, sizeof shp);
    if (overflow || numel < 0)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: shape [%s] has more elements than int64 can count", what, shp);
    if (spread > FA_MAX_TENSOR_ELEMENTS && bytes <= FA_MAX_TENSOR_BYTES)
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: shape [%s]: its dims multiply to %lld (a 0 dim counted as 1), over the 2^48 a "
                            "tensor may span",
                            what, shp, (long long)spread);
    return fa_ctx_error(ctx, FA_ERR_INPUT,
                        "%s: shape [%s] is %lld elements of %zu bytes: over the 256 TiB (2^48 bytes) the largest "
                        "tensor may hold",
                        what, shp, (long long)numel, fa_dtype_size(t->dtype));
}

int64_t fa_value_numel(const fa_value *v)
{
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++)
        if (!fa_i64_mul(n, v->dims[i], &n)) return -1; /* shapes are checked before values exist */
    return n;
}

const char *fa_tensor_shape_str(const fa_tensor *t, char *buf, size_t n)
{
    if (t->rank < 0) {
        snprintf(buf, n, "?");
        return buf;
    }
    if (t->rank == 0) {
        snprintf(buf, n, "scalar");
        return buf;
    }
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < t->rank && off < n; i++) {
        int w;
        if (t->dims[i] >= 0)
            w = snprintf(buf + off, n - off, "%s%lld", i ? "x" : "", (long long)t->dims[i]);
        else
            w = snprintf(buf + off, n - off, "%s%s", i ? "x" : "",
                         t->dim_params[i] ? t->dim_params[i] : "?");
        if (w < 0) break;
        off += (size_t)w;
    }
    return buf;
}

/* Kahn's algorithm over live nodes, iterative (no recursion: 100k-node chains are fine).
 * Ties keep file order so the topological order is deterministic. */
fa_status fa_graph_index(fa_ctx *ctx, fa_graph *g)
{
    int nt = g->n_tensors, nn = g->n_nodes;
    int *start = calloc((size_t)nt + 1, sizeof(int));
    int *indeg = calloc((size_t)nn + 1, sizeof(int));
    int *topo = malloc(sizeof(int) * (size_t)(nn + 1));
    int *queue = malloc(sizeof(int) * (size_t)(nn + 1));
    if (!start || !indeg || !topo || !queue) {
        free(start); free(indeg); free(topo); free(queue);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory indexing graph");
    }
    size_t ncons = 0;
    for (int i = 0; i < nn; i++) {
        fa_node *n = g->nodes[i];
        if (n->folded) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            int tid = n->inputs[k];
            if (tid < 0) continue;
            /* count each (tensor,node) pair once per occurrence; duplicates are fine */
            start[tid + 1]++;
            ncons++;
        }
    }
    for (int i = 0; i < nt; i++) start[i + 1] += start[i];
    int *cons = malloc(sizeof(int) * (ncons + 1));
    int *fill = calloc((size_t)nt + 1, sizeof(int));
    if (!cons || !fill) {
        free(start); free(indeg); free(topo); free(queue); free(cons); free(fill);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory indexing graph");
    }
    fa_status st = FA_OK;
    for (int i = 0; i < nn && st == FA_OK; i++) {
        fa_node *n = g->nodes[i];
        if (n->folded) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            int tid = n->inputs[k];
            if (tid < 0) continue;
            cons[start[tid] + fill[tid]++] = i;
            fa_tensor *t = g->tensors[tid];
            int p = t->producer;
            if (p >= 0 && !g->nodes[p]->folded) {
                indeg[i]++;
            } else if (!(t->flags & (FA_TENSOR_GRAPH_INPUT | FA_TENSOR_CONST))) {
                st = fa_ctx_error(ctx, FA_ERR_INPUT,
                                  "node '%s' (%s): input %d '%s' is not produced by any node and "
                                  "is neither a graph input nor an initializer",
                                  n->name, n->op_type, k, t->name);
            }
        }
    }
    /* sort each consumer list (already ascending by construction) — dedupe not needed */
    int qh = 0, qt = 0, nt_out = 0;
    if (st == FA_OK) {
        for (int i = 0; i < nn; i++)
            if (!g->nodes[i]->folded && indeg[i] == 0) queue[qt++] = i;
        while (qh < qt) {
            int i = queue[qh++];
            topo[nt_out++] = i;
            fa_node *n = g->nodes[i];
            for (int o = 0; o < n->n_outputs; o++) {
                int tid = n->outputs[o];
                if (tid < 0) continue;
                for (int c = start[tid]; c < start[tid + 1]; c++)
                    if (--indeg[cons[c]] == 0) queue[qt++] = cons[c];
            }
        }
        int live = 0;
        for (int i = 0; i < nn; i++) live += !g->nodes[i]->folded;
        if (nt_out != live) {
            for (int i = 0; i < nn; i++)
                if (!g->nodes[i]->folded && indeg[i] > 0) {
                    st = fa_ctx_error(ctx, FA_ERR_INPUT,
                                      "graph has a cycle through node '%s' (%s)",
                                      g->nodes[i]->name, g->nodes[i]->op_type);
                    break;
                }
        }
    }
    /* graph outputs must be produced or be inputs/constants */
    for (int i = 0; i < g->n_outputs && st == FA_OK; i++) {
        fa_tensor *t = g->tensors[g->outputs[i]];
        if (t->producer < 0 && !(t->flags & (FA_TENSOR_GRAPH_INPUT | FA_TENSOR_CONST)))
            st = fa_ctx_error(ctx, FA_ERR_INPUT, "graph output '%s' is not produced by any node",
                              t->name);
    }
    free(indeg);
    free(queue);
    free(fill);
    if (st != FA_OK) {
        free(start); free(cons); free(topo);
        return st;
    }
    int *pos = malloc(sizeof(int) * (size_t)(nn + 1));
    if (!pos) {
        free(start); free(cons); free(topo);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory indexing graph");
    }
    for (int i = 0; i < nn; i++) pos[i] = -1;
    for (int k = 0; k < nt_out; k++) pos[topo[k]] = k;
    free(g->cons_start);
    free(g->cons);
    free(g->topo);
    free(g->topo_pos);
    g->cons_start = start;
    g->cons = cons;
    g->topo = topo;
    g->topo_pos = pos;
    g->n_topo = nt_out;
    return FA_OK;
}

int fa_graph_consumers(const fa_graph *g, int tid, const int **out)
{
    if (!g->cons_start || tid < 0 || tid >= g->n_tensors) {
        *out = NULL;
        return 0;
    }
    *out = g->cons + g->cons_start[tid];
    return g->cons_start[tid + 1] - g->cons_start[tid];
}

fa_node *fa_graph_producer(const fa_graph *g, int tid)
{
    if (tid < 0 || tid >= g->n_tensors) return NULL;
    int p = g->tensors[tid]->producer;
    if (p < 0 || g->nodes[p]->folded) return NULL;
    return g->nodes[p];
}

fa_attr *fa_node_add_attr_strings(fa_graph *g, fa_node *n, const char *name, const char *const *v, int cnt)
{
    fa_attr *a = add_attr(g, n, name, FA_ATTR_STRINGS);
    if (!a) return NULL;
    a->n = cnt;
    a->strings = fa_arena_alloc(g->arena, sizeof(char *) * (size_t)(cnt ? cnt : 1));
    if (!a->strings) return NULL;
    for (int i = 0; i < cnt; i++)
        if (!(a->strings[i] = fa_arena_strdup(g->arena, v[i]))) return NULL;
    return a;
}

fa_attr *fa_node_copy_attr(fa_graph *g, fa_node *n, const fa_attr *src)
{
    fa_attr *a = add_attr(g, n, src->name, src->type);
    if (!a) return NULL;
    a->f = src->f;
    a->i = src->i;
    a->n = src->n;
    if (src->s) {
        a->s = fa_arena_strndup(g->arena, src->s, src->s_len);
        a->s_len = src->s_len;
    }
    if (src->floats) {
        a->floats = fa_arena_alloc(g->arena, sizeof(float) * (size_t)(src->n ? src->n : 1));
        if (!a->floats) return NULL;
        memcpy(a->floats, src->floats, sizeof(float) * (size_t)src->n);
    }
    if (src->ints) {
        a->ints = fa_arena_alloc(g->arena, sizeof(int64_t) * (size_t)(src->n ? src->n : 1));
        if (!a->ints) return NULL;
        memcpy(a->ints, src->ints, sizeof(int64_t) * (size_t)src->n);
    }
    if (src->strings) {
        a->strings = fa_arena_alloc(g->arena, sizeof(char *) * (size_t)(src->n ? src->n : 1));
        if (!a->strings) return NULL;
        for (int i = 0; i < src->n; i++) a->strings[i] = fa_arena_strdup(g->arena, src->strings[i]);
    }
    if (src->t) {
        fa_tensor *t = fa_arena_alloc(g->arena, sizeof *t);
        if (!t) return NULL;
        *t = *src->t;
        t->name = fa_arena_strdup(g->arena, src->t->name ? src->t->name : "");
        t->data = NULL;
        t->blob = NULL;
        t->nbytes = 0;
        if (src->t->data) { /* shared when src holds it in a blob */
            fa_ctx *c = fa_ctx_create();
            fa_status st = c ? fa_tensor_share_data(c, t, src->t) : FA_ERR_NOMEM;
            fa_ctx_free(c);
            if (st) return NULL;
            t->flags = src->t->flags;
        }
        a->t = t;
    }
    return a;
}

int fa_graph_copy_tensor(fa_ctx *ctx, fa_graph *g, const fa_tensor *t)
{
    int id = fa_graph_find_tensor(g, t->name);
    if (id >= 0) return id;
    id = fa_graph_tensor(g, t->name);
    if (id < 0) {
        fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory copying tensor '%s'", t->name);
        return -1;
    }
    fa_tensor *d = g->tensors[id];
    fa_tensor_set_shape(d, t->dtype, t->rank, t->dims);
    if ((t->flags & FA_TENSOR_CONST) && t->data) {
        if (fa_tensor_share_data(ctx, d, t)) return -1;
        d->flags |= FA_TENSOR_INITIALIZER | FA_TENSOR_CONST;
    }
    return id;
}

fa_node *fa_graph_copy_node(fa_ctx *ctx, fa_graph *dst, const fa_graph *src, const fa_node *n, unsigned flags)
{
    const char **ins = malloc(sizeof *ins * (size_t)(n->n_inputs + 1)), **outs = malloc(sizeof *outs * (size_t)(n->n_outputs + 1));
    fa_node *c = NULL;
    if (!ins || !outs) {
        fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory copying node '%s'", n->name);
        goto done;
    }
    for (int i = 0; i < n->n_inputs; i++) {
        const fa_tensor *t = fa_graph_in(src, n, i);
        ins[i] = t ? t->name : "";
        if (t && fa_graph_copy_tensor(ctx, dst, t) < 0) goto done;
    }
    for (int i = 0; i < n->n_outputs; i++) {
        const fa_tensor *t = fa_graph_out(src, n, i);
        outs[i] = t ? t->name : "";
        if (!t) continue;
        if ((flags & FA_COPY_OUTPUT_SHAPES) && fa_graph_copy_tensor(ctx, dst, t) < 0) goto done;
        int id = (flags & FA_COPY_OUTPUT_UNCONST) ? fa_graph_find_tensor(dst, t->name) : -1;
        if (id >= 0) {
            fa_tensor *d = dst->tensors[id];
            fa_tensor_clear_data(d);
            d->flags &= ~(unsigned)(FA_TENSOR_CONST | FA_TENSOR_INITIALIZER);
        }
    }
    c = fa_graph_add_node(ctx, dst, n->name, n->op_type, n->domain, n->n_inputs, ins, n->n_outputs, outs);
    if (!c && !fa_ctx_status(ctx)) fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory copying node '%s'", n->name);
done:
    free(ins);
    free(outs);
    if (!c) return NULL;
    c->opset = n->opset;
    c->op = n->op;
    for (int a = 0; a < n->n_attrs; a++)
        if (!fa_node_copy_attr(dst, c, &n->attrs[a])) {
            fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory copying attributes");
            return NULL;
        }
    return c;
}
