/* runtime/cuda/exec_cuda — the unfused executor on a GPU: one kernel (or library call) per live
 * node in topological order on one stream, an NVTX range per node, each intermediate in its own
 * device buffer (cudaMallocAsync) freed after its last consumer (the baseline memory plan of
 * runtime/exec.c, mirrored). Conv: cuDNN; MatMul/Gemm: cuBLAS; everything else: our kernels
 * (runtime/cuda/kernels.c) compiled by NVRTC. */
#include "runtime/cuda/cuda-impl.h"
#include "graph/op_math.h"

#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the op table ---- */

typedef enum kkind {
    K_UNARY, K_BINARY, K_WHERE, K_ALIAS, K_TRANSPOSE, K_SLICE, K_SPLIT, K_CONCAT, K_EXPAND, K_GATHER,
    K_REDUCE, K_SOFTMAX, K_LAYERNORM, K_BATCHNORM, K_POOL, K_GLOBALPOOL, K_MATMUL, K_GEMM, K_CONV,
    K_FUSED, /* a provider's device kernel (runtime/cuda/fused.c) */
} kkind;

/* sub-op codes: must match the enums of the CUDA source (kernels.c): the unary ops are
 * graph/op_math.h's table (a node's row: fa_unary_math_for_node), the binary ops its binary
 * table (fa_binary_op) */
enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_SUMSQ, R_L2, R_L1 };

typedef struct op_entry {
    const char *op;
    kkind kind;
    int sub;
    const char *kname; /* kernel name recorded by the collector */
} op_entry;

static const op_entry k_ops[] = {
#define UNARY_ROW_(ID, NAME, AA, DA, AB, DB, AG, DG, EXPR, BOUND) {NAME, K_UNARY, FA_UNARY_##ID, "cuda:" NAME},
    FA_UNARY_MATH(UNARY_ROW_)
#undef UNARY_ROW_
#define BINARY_ROW_(ID, NAME, EXPR, BOUND) {NAME, K_BINARY, FA_BINARY_##ID, "cuda:" NAME},
    FA_BINARY_MATH(BINARY_ROW_)
#undef BINARY_ROW_
    {"Where", K_WHERE, 0, "cuda:Where"},
    {"Reshape", K_ALIAS, 0, "cuda:copy"}, {"Flatten", K_ALIAS, 0, "cuda:copy"}, {"Squeeze", K_ALIAS, 0, "cuda:copy"},
    {"Unsqueeze", K_ALIAS, 0, "cuda:copy"}, {"Identity", K_ALIAS, 0, "cuda:copy"}, {"Dropout", K_ALIAS, 0, "cuda:copy"},
    {"Cast", K_ALIAS, 0, "cuda:copy"},
    {"Transpose", K_TRANSPOSE, 0, "cuda:Transpose"}, {"Slice", K_SLICE, 0, "cuda:Slice"}, {"Split", K_SPLIT, 0, "cuda:Split"},
    {"Concat", K_CONCAT, 0, "cuda:Concat"}, {"Expand", K_EXPAND, 0, "cuda:Expand"}, {"Gather", K_GATHER, 0, "cuda:Gather"},
    {"ReduceSum", K_REDUCE, R_SUM, "cuda:ReduceSum"}, {"ReduceMean", K_REDUCE, R_MEAN, "cuda:ReduceMean"},
    {"ReduceMax", K_REDUCE, R_MAX, "cuda:ReduceMax"}, {"ReduceMin", K_REDUCE, R_MIN, "cuda:ReduceMin"},
    {"ReduceSumSquare", K_REDUCE, R_SUMSQ, "cuda:ReduceSumSquare"}, {"ReduceL2", K_REDUCE, R_L2, "cuda:ReduceL2"},
    {"ReduceL1", K_REDUCE, R_L1, "cuda:ReduceL1"},
    {"Softmax", K_SOFTMAX, 0, "cuda:Softmax"}, {"LogSoftmax", K_SOFTMAX, 1, "cuda:LogSoftmax"},
    {"LayerNormalization", K_LAYERNORM, 0, "cuda:LayerNormalization"},
    {"BatchNormalization", K_BATCHNORM, 0, "cuda:BatchNormalization"},
    {"MaxPool", K_POOL, 0, "cuda:MaxPool"}, {"AveragePool", K_POOL, 1, "cuda:AveragePool"},
    {"GlobalAveragePool", K_GLOBALPOOL, R_MEAN, "cuda:GlobalAveragePool"},
    {"GlobalMaxPool", K_GLOBALPOOL, R_MAX, "cuda:GlobalMaxPool"},
    {"MatMul", K_MATMUL, 0, "cublas:sgemm"}, {"Gemm", K_GEMM, 0, "cublas:sgemm"}, {"Conv", K_CONV, 0, "cudnn:conv"},
};

/* kernel entry indices in the loaded module */
enum { F_UNARY, F_BINARY, F_BINARY_FLAT, F_WHERE, F_GATHER1, F_GATHER2, F_GATHER4, F_GATHER8, F_SCATTER1,
       F_SCATTER2, F_SCATTER4, F_SCATTER8, F_TAKE4, F_TAKE8, F_REDUCE, F_SOFTMAX, F_LAYERNORM, F_BATCHNORM,
       F_POOL2D, F_FILL, F_COUNT };
static const char *const k_fnames[] = {
    "fa_unary", "fa_binary", "fa_binary_flat", "fa_where", "fa_gather_1", "fa_gather_2", "fa_gather_4",
    "fa_gather_8", "fa_scatter_1", "fa_scatter_2", "fa_scatter_4", "fa_scatter_8", "fa_take_4", "fa_take_8",
    "fa_reduce", "fa_softmax", "fa_layernorm", "fa_batchnorm", "fa_pool2d", "fa_fill"};
_Static_assert(sizeof k_fnames / sizeof k_fnames[0] == F_COUNT, "k_fnames: one row per value");

/* ---- per-node plan ---- */

typedef struct cnode {
    const op_entry *op;
    float a, b, g;           /* unary parameters (alpha/min, beta/max, gamma) */
    int axis;                /* normalized axis for Softmax/Concat/Split/Gather/LayerNorm */
    int64_t outer, mid, inner;
    int red_op;
    int unary_op;  /* K_UNARY: the node's row of graph/op_math.h's table (fa_unary_op) */
    int perm[8];             /* Transpose */
    int64_t starts[8], steps[8]; /* Slice, per dim */
    bool ta, tb;             /* Gemm */
    float alpha, beta;
    int pool[10];            /* kh kw sh sw ph pw dh dw mode */
    fa_cuda_conv conv;
    bool conv_ready;
    fa_cuda_fused *fused;    /* K_FUSED: owned */
} cnode;

static const op_entry k_fused_op = {"FusedKernel", K_FUSED, 0, "nvrtc:fused"};

typedef struct slot {
    void *d;            /* device buffer */
    bool owned;         /* allocated by the run plan (freed after last use) */
    bool is_const;      /* uploaded constant, freed at executor free */
    int last_use;
    uint64_t bytes;
} slot;

struct fa_cuda_exec {
    const fa_graph *g;
    fa_exec_options opt;
    fa_cuda_device_info dev;
    char arch[16];
    cudaStream_t stream;
    cublasHandle_t cublas;
    cudnnHandle_t cudnn;
    void *workspace;
    size_t workspace_bytes;
    fa_cuda_module *mod;
    void *fn[F_COUNT];
    cnode *nodes;  /* by node id */
    slot *slots;   /* by tensor id */
    fa_value *host_out;
    uint64_t live_bytes, peak_bytes;
    int max_blocks;
    bool emu; /* host emulation (fa_cuda_exec_create_emulated): "device" memory is host memory */
};

/* ---- device operations, or their host emulation ---- */

static fa_status dev_alloc(fa_ctx *ctx, fa_cuda_exec *e, void **p, size_t bytes, bool async)
{
    if (e->emu) {
        *p = malloc(bytes ? bytes : 16);
        return *p ? FA_OK : fa_ctx_error(ctx, FA_ERR_NOMEM, "cuda emulation: out of memory (%zu bytes)", bytes);
    }
    if (async) return FA_CUDA_CHECK(ctx, cudaMallocAsync(p, bytes ? bytes : 16, e->stream));
    return FA_CUDA_CHECK(ctx, cudaMalloc(p, bytes ? bytes : 16));
}

static void dev_free(fa_cuda_exec *e, void *p, bool async)
{
    if (!p) return;
    if (e->emu) free(p);
    else if (async) cudaFreeAsync(p, e->stream);
    else cudaFree(p);
}

static fa_status dev_copy(fa_ctx *ctx, fa_cuda_exec *e, void *dst, const void *src, size_t bytes, enum cudaMemcpyKind k)
{
    if (!bytes) return FA_OK;
    if (e->emu) {
        memcpy(dst, src, bytes);
        return FA_OK;
    }
    return FA_CUDA_CHECK(ctx, cudaMemcpyAsync(dst, src, bytes, k, e->stream));
}

static fa_status dev_sync(fa_ctx *ctx, fa_cuda_exec *e)
{
    return e->emu ? FA_OK : FA_CUDA_CHECK(ctx, cudaStreamSynchronize(e->stream));
}

static const op_entry *find_op(const char *op_type)
{
    for (size_t i = 0; i < sizeof k_ops / sizeof k_ops[0]; i++)
        if (!strcmp(k_ops[i].op, op_type)) return &k_ops[i];
    return NULL;
}

static int norm_axis(int64_t axis, int rank)
{
    return (int)(axis < 0 ? axis + rank : axis);
}

static int64_t prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= d[i];
    return p;
}

/* constant int64/int32 input i as an int64 array; n = element count, -1 if not constant */
static int const_ints(const fa_graph *g, const fa_node *n, int i, int64_t *out, int cap)
{
    const fa_tensor *t = fa_graph_in(g, n, i);
    if (!t) return 0;
    if (!(t->flags & FA_TENSOR_CONST) || !t->data) return -1;
    int64_t ne = fa_tensor_numel(t);
    if (ne < 0 || ne > cap) return -1;
    for (int64_t k = 0; k < ne; k++) out[k] = fa_f64_to_i64_sat(fa_load_as_double(t->data, t->dtype, k));
    return (int)ne;
}

static float const_float(const fa_graph *g, const fa_node *n, int i, float dflt, bool *ok)
{
    const fa_tensor *t = fa_graph_in(g, n, i);
    if (!t) return dflt;
    if (!(t->flags & FA_TENSOR_CONST) || !t->data || fa_tensor_numel(t) != 1) {
        *ok = false;
        return dflt;
    }
    return (float)fa_load_as_double(t->data, t->dtype, 0);
}

static fa_status refuse(fa_ctx *ctx, const fa_node *n, const char *why)
{
    if (!why) return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "unsupported op %s at node '%s' on cuda", n->op_type, n->name);
    return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "unsupported op %s at node '%s' on cuda: %s", n->op_type, n->name, why);
}

static bool all_float(const fa_graph *g, const fa_node *n, int first_in, int last_in)
{
    for (int i = first_in; i <= last_in && i < n->n_inputs; i++) {
        const fa_tensor *t = fa_graph_in(g, n, i);
        if (t && t->dtype != FA_DTYPE_FLOAT) return false;
    }
    const fa_tensor *o = fa_graph_out(g, n, 0);
    return o && o->dtype == FA_DTYPE_FLOAT;
}

/* Plan one node (no device touched): fill c, or refuse. */
static fa_status plan_node(fa_ctx *ctx, const fa_graph *g, const fa_node *n, cnode *c)
{
    const op_entry *op = find_op(n->op_type);
    if (!op || (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0)) return refuse(ctx, n, NULL);
    memset(c, 0, sizeof *c);
    c->op = op;
    const fa_tensor *x = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0);
    if (!y || y->rank < 0) return refuse(ctx, n, "output shape unknown");
    for (int o = 0; o < n->n_outputs; o++) {
        const fa_tensor *t = fa_graph_out(g, n, o);
        if (!t) continue;
        if (t->rank < 0 || fa_tensor_numel(t) < 0) return refuse(ctx, n, "dynamic output shape");
        size_t es = fa_dtype_size(t->dtype);
        if (es != 1 && es != 2 && es != 4 && es != 8) return refuse(ctx, n, "element type");
    }
    bool ok = true;
    switch (op->kind) {
    case K_FUSED: /* only from a provider, never from the op table */
        return refuse(ctx, n, NULL);
    case K_UNARY:
        if (!all_float(g, n, 0, 0)) return refuse(ctx, n, "only float32");
        { /* the node's row of the table (Gelu's `approximate` picks one) and its parameters, bound to
           * a, b, g: attributes, or inputs that must be constants (Clip's bounds from opset 11) */
            const fa_unary_math *m = fa_unary_math_for_node(n, NULL);
            if (!m) return refuse(ctx, n, "an attribute value without an expression");
            c->unary_op = (int)m->op;
            float *p[3] = {&c->a, &c->b, &c->g};
            for (int k = 0; k < 3; k++) {
                int ix = fa_unary_math_param_input(n, m, k);
                *p[k] = ix < 0 && m->attr[k] ? fa_node_attr_float(n, m->attr[k], (float)m->def[k]) : (float)m->def[k];
                if (ix >= 0) *p[k] = const_float(g, n, ix, *p[k], &ok);
            }
            if (!ok) return refuse(ctx, n, "parameters from inputs (Clip's min/max) must be constant");
        }
        return FA_OK;
    case K_BINARY:
        if (n->n_inputs != 2 || !all_float(g, n, 0, 1)) return refuse(ctx, n, "two float32 inputs only");
        return FA_OK;
    case K_WHERE: {
        const fa_tensor *cnd = fa_graph_in(g, n, 0);
        if (!cnd || cnd->dtype != FA_DTYPE_BOOL || !all_float(g, n, 1, 2)) return refuse(ctx, n, "bool condition, float32 values");
        return FA_OK;
    }
    case K_ALIAS:
        if (!x || fa_tensor_bytes(x) != fa_tensor_bytes(y)) return refuse(ctx, n, "size changes");
        if (!strcmp(n->op_type, "Cast") && x->dtype != y->dtype) return refuse(ctx, n, "converting cast");
        for (int o = 1; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) return refuse(ctx, n, "extra outputs (mask)");
        return FA_OK;
    case K_TRANSPOSE: {
        const int64_t *perm = NULL;
        int np = fa_node_attr_ints(n, "perm", &perm);
        if (np && np != x->rank) return refuse(ctx, n, "perm length");
        for (int d = 0; d < x->rank; d++) c->perm[d] = np ? (int)perm[d] : x->rank - 1 - d;
        return FA_OK;
    }
    case K_SLICE: {
        int r = x->rank;
        int64_t st[8], en[8], ax[8], sp[8];
        int ns, ne, na = 0, nsp = 0;
        if (n->opset < 10) {
            const int64_t *p;
            ns = fa_node_attr_ints(n, "starts", &p);
            memcpy(st, p, sizeof(int64_t) * (size_t)(ns > 8 ? 8 : ns));
            ne = fa_node_attr_ints(n, "ends", &p);
            memcpy(en, p, sizeof(int64_t) * (size_t)(ne > 8 ? 8 : ne));
            na = fa_node_attr_ints(n, "axes", &p);
            if (na > 0) memcpy(ax, p, sizeof(int64_t) * (size_t)(na > 8 ? 8 : na));
        } else {
            ns = const_ints(g, n, 1, st, 8);
            ne = const_ints(g, n, 2, en, 8);
            na = const_ints(g, n, 3, ax, 8);
            nsp = const_ints(g, n, 4, sp, 8);
        }
        if (ns < 0 || ne < 0 || na < 0 || nsp < 0 || ns != ne || ns > 8) return refuse(ctx, n, "starts/ends/axes/steps must be constant");
        for (int d = 0; d < r; d++) {
            c->starts[d] = 0;
            c->steps[d] = 1;
        }
        for (int k = 0; k < ns; k++) {
            int a = na > 0 ? norm_axis(ax[k], r) : k;
            if (a < 0 || a >= r) return refuse(ctx, n, "axis out of range");
            int64_t step = nsp > 0 ? sp[k] : 1, dim = x->dims[a], s0 = st[k];
            if (step == 0) return refuse(ctx, n, "step 0");
            if (s0 < 0) s0 += dim;
            if (step > 0) s0 = s0 < 0 ? 0 : (s0 > dim ? dim : s0);
            else s0 = s0 < 0 ? 0 : (s0 > dim - 1 ? dim - 1 : s0);
            c->starts[a] = s0;
            c->steps[a] = step;
        }
        return FA_OK;
    }
    case K_SPLIT:
    case K_CONCAT:
        c->axis = norm_axis(fa_node_attr_int(n, "axis", 0), (op->kind == K_SPLIT ? x : y)->rank);
        return FA_OK;
    case K_EXPAND:
        if (x->rank > y->rank) return refuse(ctx, n, "rank");
        return FA_OK;
    case K_GATHER: {
        const fa_tensor *idx = fa_graph_in(g, n, 1);
        size_t es = fa_dtype_size(x->dtype);
        if (!idx || (idx->dtype != FA_DTYPE_INT64 && idx->dtype != FA_DTYPE_INT32) || (es != 4 && es != 8))
            return refuse(ctx, n, "int32/int64 indices into 4- or 8-byte elements");
        c->axis = norm_axis(fa_node_attr_int(n, "axis", 0), x->rank);
        c->outer = prod(x->dims, 0, c->axis);
        c->mid = x->dims[c->axis];
        c->inner = prod(x->dims, c->axis + 1, x->rank);
        return FA_OK;
    }
    case K_REDUCE: {
        if (!all_float(g, n, 0, 0)) return refuse(ctx, n, "only float32");
        int64_t axes[8];
        int na;
        if (n->opset >= 18 || (!strcmp(n->op_type, "ReduceSum") && n->opset >= 13)) na = const_ints(g, n, 1, axes, 8);
        else {
            const int64_t *p;
            na = fa_node_attr_ints(n, "axes", &p);
            if (na > 8) na = -1;
            else if (na > 0) memcpy(axes, p, sizeof(int64_t) * (size_t)na);
        }
        if (na < 0) return refuse(ctx, n, "axes must be constant");
        bool red[8] = {0};
        if (na == 0) {
            if (fa_node_attr_int(n, "noop_with_empty_axes", 0)) return refuse(ctx, n, "noop_with_empty_axes");
            for (int d = 0; d < x->rank; d++) red[d] = true;
        }
        for (int k = 0; k < na; k++) {
            int a = norm_axis(axes[k], x->rank);
            if (a < 0 || a >= x->rank) return refuse(ctx, n, "axis out of range");
            red[a] = true;
        }
        int lo = -1, hi = -1;
        for (int d = 0; d < x->rank; d++)
            if (red[d]) {
                if (lo < 0) lo = d;
                hi = d;
            }
        for (int d = lo; d >= 0 && d <= hi; d++)
            if (!red[d] && x->dims[d] != 1) return refuse(ctx, n, "non-contiguous reduction axes");
        if (lo < 0) lo = hi = 0;
        c->outer = prod(x->dims, 0, lo);
        c->mid = prod(x->dims, lo, hi + 1);
        c->inner = prod(x->dims, hi + 1, x->rank);
        c->red_op = op->sub;
        return FA_OK;
    }
    case K_SOFTMAX: {
        if (!all_float(g, n, 0, 0)) return refuse(ctx, n, "only float32");
        int a = norm_axis(fa_node_attr_int(n, "axis", n->opset >= 13 ? -1 : 1), x->rank);
        if (a < 0 || a >= x->rank) return refuse(ctx, n, "axis");
        c->outer = prod(x->dims, 0, a);
        if (n->opset >= 13) {
            c->mid = x->dims[a];
            c->inner = prod(x->dims, a + 1, x->rank);
        } else { /* coerced to 2-D [outer, rest] */
            c->mid = prod(x->dims, a, x->rank);
            c->inner = 1;
        }
        return FA_OK;
    }
    case K_LAYERNORM: {
        if (!all_float(g, n, 0, 2)) return refuse(ctx, n, "only float32");
        for (int o = 1; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) return refuse(ctx, n, "Mean/InvStdDev outputs");
        int a = norm_axis(fa_node_attr_int(n, "axis", -1), x->rank);
        c->outer = prod(x->dims, 0, a);
        c->mid = prod(x->dims, a, x->rank);
        const fa_tensor *sc = fa_graph_in(g, n, 1), *bi = fa_graph_in(g, n, 2);
        if (!sc || fa_tensor_numel(sc) != c->mid || (bi && fa_tensor_numel(bi) != c->mid))
            return refuse(ctx, n, "scale/bias must cover the normalized axes exactly");
        c->a = fa_node_attr_float(n, "epsilon", 1e-5f);
        return FA_OK;
    }
    case K_BATCHNORM:
        if (!all_float(g, n, 0, 4) || x->rank < 2) return refuse(ctx, n, "float32, rank >= 2");
        for (int o = 1; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) return refuse(ctx, n, "training outputs");
        if (fa_node_attr_int(n, "training_mode", 0)) return refuse(ctx, n, "training_mode");
        c->a = fa_node_attr_float(n, "epsilon", 1e-5f);
        c->outer = x->dims[0];
        c->mid = x->dims[1];
        c->inner = prod(x->dims, 2, x->rank);
        return FA_OK;
    case K_POOL: {
        if (!all_float(g, n, 0, 0) || x->rank != 4) return refuse(ctx, n, "2-D float32 NCHW only");
        if (n->n_outputs > 1 && n->outputs[1] >= 0) return refuse(ctx, n, "Indices output");
        const int64_t *k = NULL, *s = NULL, *p = NULL, *dl = NULL;
        if (fa_node_attr_ints(n, "kernel_shape", &k) != 2) return refuse(ctx, n, "kernel_shape");
        int nsd = fa_node_attr_ints(n, "strides", &s), npd = fa_node_attr_ints(n, "pads", &p),
            ndl = fa_node_attr_ints(n, "dilations", &dl);
        int kh = (int)k[0], kw = (int)k[1], sh = nsd ? (int)s[0] : 1, sw = nsd ? (int)s[1] : 1;
        int dh = ndl ? (int)dl[0] : 1, dw = ndl ? (int)dl[1] : 1, ph = 0, pw = 0;
        const char *ap = fa_node_attr_string(n, "auto_pad", "NOTSET");
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            int64_t th = (y->dims[2] - 1) * sh + (kh - 1) * dh + 1 - x->dims[2];
            int64_t tw = (y->dims[3] - 1) * sw + (kw - 1) * dw + 1 - x->dims[3];
            if (th < 0) th = 0;
            if (tw < 0) tw = 0;
            bool up = !strcmp(ap, "SAME_UPPER");
            ph = (int)(up ? th / 2 : (th + 1) / 2);
            pw = (int)(up ? tw / 2 : (tw + 1) / 2);
        } else if (npd == 4) {
            ph = (int)p[0];
            pw = (int)p[1];
        }
        int mode = op->sub == 0 ? 0 : (fa_node_attr_int(n, "count_include_pad", 0) ? 2 : 1);
        int v[] = {kh, kw, sh, sw, ph, pw, dh, dw, mode};
        memcpy(c->pool, v, sizeof v);
        return FA_OK;
    }
    case K_GLOBALPOOL:
        if (!all_float(g, n, 0, 0) || x->rank < 3) return refuse(ctx, n, "float32 NC... only");
        c->outer = x->dims[0] * x->dims[1];
        c->mid = prod(x->dims, 2, x->rank);
        c->inner = 1;
        c->red_op = op->sub;
        return FA_OK;
    case K_MATMUL: {
        const fa_tensor *b = fa_graph_in(g, n, 1);
        if (!all_float(g, n, 0, 1) || x->rank < 1 || b->rank < 1) return refuse(ctx, n, "float32 only");
        int64_t ab = x->rank > 2 ? prod(x->dims, 0, x->rank - 2) : 1, bb = b->rank > 2 ? prod(b->dims, 0, b->rank - 2) : 1;
        /* batch count from the output: a 1-D operand drops its matrix dim from y (ONNX MatMul) */
        int64_t m = x->rank >= 2 ? x->dims[x->rank - 2] : 1, nn = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
        int64_t yb = m * nn > 0 ? fa_tensor_numel(y) / (m * nn) : 0;
        if ((ab != yb && ab != 1) || (bb != yb && bb != 1)) return refuse(ctx, n, "partially broadcast batch dims");
        return FA_OK;
    }
    case K_GEMM: {
        const fa_tensor *b = fa_graph_in(g, n, 1);
        if (!all_float(g, n, 0, 2) || x->rank != 2 || b->rank != 2) return refuse(ctx, n, "2-D float32 only");
        c->ta = fa_node_attr_int(n, "transA", 0) != 0;
        c->tb = fa_node_attr_int(n, "transB", 0) != 0;
        c->alpha = fa_node_attr_float(n, "alpha", 1.f);
        c->beta = fa_node_attr_float(n, "beta", 1.f);
        return FA_OK;
    }
    case K_CONV: {
        const fa_tensor *w = fa_graph_in(g, n, 1), *bias = fa_graph_in(g, n, 2);
        if (!all_float(g, n, 0, 2) || x->rank < 3 || x->rank > 5) return refuse(ctx, n, "1-D..3-D float32 only");
        fa_cuda_conv *cv = &c->conv;
        int sp = x->rank - 2;
        bool one_d = sp == 1;
        cv->rank = one_d ? 4 : x->rank;
        for (int d = 0; d < x->rank; d++) {
            cv->x_dims[d] = x->dims[d];
            cv->w_dims[d] = w->dims[d];
            cv->y_dims[d] = y->dims[d];
        }
        if (one_d) { /* [N,C,L] -> [N,C,1,L] */
            cv->x_dims[3] = cv->x_dims[2], cv->x_dims[2] = 1;
            cv->w_dims[3] = cv->w_dims[2], cv->w_dims[2] = 1;
            cv->y_dims[3] = cv->y_dims[2], cv->y_dims[2] = 1;
        }
        const int64_t *s = NULL, *p = NULL, *dl = NULL;
        int nsd = fa_node_attr_ints(n, "strides", &s), npd = fa_node_attr_ints(n, "pads", &p),
            ndl = fa_node_attr_ints(n, "dilations", &dl);
        const char *ap = fa_node_attr_string(n, "auto_pad", "NOTSET");
        int o = one_d ? 1 : 0;
        if (one_d) {
            cv->strides[0] = cv->dilations[0] = 1;
            cv->pads[0] = 0;
        }
        for (int d = 0; d < sp; d++) {
            int st = nsd ? (int)s[d] : 1, dil = ndl ? (int)dl[d] : 1;
            int64_t kd = w->dims[2 + d];
            int pb = 0, pe = 0;
            if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
                int64_t tot = (y->dims[2 + d] - 1) * st + (kd - 1) * dil + 1 - x->dims[2 + d];
                if (tot < 0) tot = 0;
                pb = (int)(!strcmp(ap, "SAME_UPPER") ? tot / 2 : (tot + 1) / 2);
                pe = (int)tot - pb;
            } else if (npd == 2 * sp) {
                pb = (int)p[d];
                pe = (int)p[d + sp];
            }
            if (pb != pe) return refuse(ctx, n, "asymmetric padding");
            cv->strides[o + d] = st;
            cv->dilations[o + d] = dil;
            cv->pads[o + d] = pb;
        }
        cv->groups = (int)fa_node_attr_int(n, "group", 1);
        cv->has_bias = bias != NULL;
        return FA_OK;
    }
    }
    return refuse(ctx, n, NULL);
}

fa_status fa_cuda_exec_check_graph(fa_ctx *ctx, const fa_graph *g)
{
    cnode c;
    for (int k = 0; k < g->n_topo; k++) {
        fa_status st = plan_node(ctx, g, g->nodes[g->topo[k]], &c);
        if (st) return st;
    }
    return FA_OK;
}

bool fa_cuda_exec_supports_node(const fa_graph *g, const fa_node *n, char *why, size_t why_cap)
{
    if (n->domain && !strcmp(n->domain, FA_FUSED_DOMAIN)) {
        if (!strcmp(n->op_type, "FusedKernel")) return true; /* a provider's device kernel */
        /* Fused{Conv,ConvTranspose,MatMul,Gemm}: a library epilogue or a refusal naming why */
        bool *scratch = calloc((size_t)n->n_inputs + 16, sizeof(bool));
        fa_cuda_epilogue_query q;
        char w[256] = "";
        fa_cuda_epilogue e = FA_CUDA_EPI_NONE;
        if (scratch) {
            fa_cuda_epilogue_query_of_node(g, n, scratch, &q);
            e = fa_cuda_epilogue_map(&q, w, sizeof w);
        } else {
            snprintf(w, sizeof w, "out of memory");
        }
        free(scratch);
        if (why && why_cap) {
            if (e == FA_CUDA_EPI_NONE) snprintf(why, why_cap, "%s", w);
            else
                snprintf(why, why_cap, "cuda epilogue %s fits but is not executed yet (the cuda executor has no Fused* nodes)",
                         fa_cuda_epilogue_name(e));
        }
        return false;
    }
    fa_ctx *c2 = fa_ctx_create();
    cnode c;
    fa_status st = c2 ? plan_node(c2, g, n, &c) : FA_ERR_NOMEM;
    if (st && why && why_cap) snprintf(why, why_cap, "%s", c2 ? fa_ctx_errmsg(c2) : "out of memory");
    fa_ctx_free(c2);
    return st == FA_OK;
}

/* ---- module cache: one cubin per (source hash, arch) per process ---- */

typedef struct mod_cache {
    uint64_t hash;
    char arch[16];
    uint8_t *cubin;
    struct mod_cache *next;
} mod_cache;
static pthread_mutex_t g_cache_mu = PTHREAD_MUTEX_INITIALIZER;
static mod_cache *g_cache;

static fa_status get_cubin(fa_ctx *ctx, const char *arch, const uint8_t **out)
{
    const char *src = fa_cuda_kernels_source();
    uint64_t h = fa_hash64(src, strlen(src));
    pthread_mutex_lock(&g_cache_mu);
    for (mod_cache *m = g_cache; m; m = m->next)
        if (m->hash == h && !strcmp(m->arch, arch)) {
            *out = m->cubin;
            pthread_mutex_unlock(&g_cache_mu);
            return FA_OK;
        }
    fa_cuda_compiled cc;
    fa_status st = fa_cuda_nvrtc_compile(ctx, src, "fa_kernels.cu", arch, &cc);
    if (!st) {
        mod_cache *m = calloc(1, sizeof *m);
        if (!m) st = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        else {
            m->hash = h;
            snprintf(m->arch, sizeof m->arch, "%s", arch);
            m->cubin = cc.cubin;
            cc.cubin = NULL;
            m->next = g_cache;
            g_cache = m;
            *out = m->cubin;
        }
        fa_cuda_compiled_free(&cc);
    }
    pthread_mutex_unlock(&g_cache_mu);
    return st;
}

fa_status fa_cuda_kernels_module(fa_ctx *ctx, const char *arch, fa_cuda_module **out)
{
    const uint8_t *cubin = NULL;
    fa_status st = get_cubin(ctx, arch, &cubin);
    if (st) return st;
    return fa_cuda_module_load(ctx, cubin, out);
}

/* ---- executor ---- */

const char *fa_cuda_range_name(const fa_node *n, char *buf, size_t cap)
{
    snprintf(buf, cap, "fa:%d:%s:%s", n->id, n->op_type ? n->op_type : "", n->name ? n->name : "");
    return buf;
}

static uint64_t tensor_bytes(const fa_tensor *t)
{
    return (uint64_t)fa_tensor_numel(t) * fa_dtype_size(t->dtype);
}

void fa_cuda_exec_free(fa_cuda_exec *e)
{
    if (!e) return;
    if (e->stream) cudaStreamSynchronize(e->stream);
    if (e->slots)
        for (int t = 0; t < e->g->n_tensors; t++) dev_free(e, e->slots[t].d, false);
    if (e->nodes)
        for (int i = 0; i < e->g->n_nodes; i++)
            if (e->nodes[i].conv_ready) fa_cudnn_conv_free(&e->nodes[i].conv);
    if (e->nodes)
        for (int i = 0; i < e->g->n_nodes; i++) fa_cuda_fused_free(e->nodes[i].fused);
    if (e->host_out)
        for (int i = 0; i < e->g->n_outputs; i++) free(e->host_out[i].data);
    dev_free(e, e->workspace, false);
    if (e->cudnn) fa_cudnn_handle_free(e->cudnn);
    if (e->cublas) cublasDestroy(e->cublas);
    fa_cuda_module_unload(e->mod);
    if (e->stream) cudaStreamDestroy(e->stream);
    free(e->nodes);
    free(e->slots);
    free(e->host_out);
    free(e);
}

static fa_status exec_create(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *opt, bool emu, fa_cuda_exec **out)
{
    fa_exec_options o = opt ? *opt : (fa_exec_options){0};
    fa_cuda_exec *e = calloc(1, sizeof *e);
    if (!e) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory creating the cuda executor");
    e->g = g;
    e->opt = o;
    e->opt.target = FA_TARGET_CUDA;
    e->nodes = calloc((size_t)g->n_nodes + 1, sizeof *e->nodes);
    e->slots = calloc((size_t)g->n_tensors + 1, sizeof *e->slots);
    e->host_out = calloc((size_t)g->n_outputs + 1, sizeof *e->host_out);
    fa_status st = (!e->nodes || !e->slots || !e->host_out) ? fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory") : FA_OK;
    bool need_dnn = false;
    for (int k = 0; !st && k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        if (o.provider) { /* fused kernels: only device kernels (fa_cuda_fused_custom_run marker) */
            fa_custom_kernel ck = {0};
            bool prov = false;
            st = o.provider(o.provider_user, ctx, g, n, &ck, &prov);
            if (!st && prov && (!fa_cuda_fused_is_device_kernel(&ck) || emu)) {
                if (ck.destroy) ck.destroy(ck.state);
                st = refuse(ctx, n, emu ? "a device kernel in host emulation" : "a host kernel from the provider");
            } else if (!st && prov) {
                e->nodes[n->id].fused = ck.state;
                e->nodes[n->id].op = &k_fused_op;
                continue;
            }
            if (st) break;
        }
        st = plan_node(ctx, g, n, &e->nodes[n->id]);
        if (!st && e->nodes[n->id].op->kind == K_CONV) need_dnn = true;
    }
    e->emu = emu;
    if (emu) {
        if (st) goto fail;
        snprintf(e->dev.name, sizeof e->dev.name, "host emulation of the cuda executor");
        e->max_blocks = 1024;
        goto plan_memory;
    }
    if (!st) st = fa_cuda_device_query(ctx, 0, &e->dev);
    if (st) goto fail;
    snprintf(e->arch, sizeof e->arch, "sm_%d%d", e->dev.cc_major, e->dev.cc_minor);
    e->max_blocks = e->dev.sm_count > 0 ? e->dev.sm_count * 16 : 1024;
    if ((st = FA_CUDA_CHECK(ctx, cudaSetDevice(0)))) goto fail;
    if ((st = FA_CUDA_CHECK(ctx, cudaFree(0)))) goto fail; /* primary context current for the driver API */
    if ((st = FA_CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&e->stream, cudaStreamNonBlocking)))) goto fail;
    if ((st = fa_cuda_kernels_module(ctx, e->arch, &e->mod))) goto fail;
    for (int f = 0; f < F_COUNT; f++)
        if ((st = fa_cuda_module_function(ctx, e->mod, k_fnames[f], &e->fn[f]))) goto fail;
    for (int k = 0; k < g->n_topo; k++) {
        cnode *c = &e->nodes[g->topo[k]];
        if (c->fused && (st = fa_cuda_fused_load(ctx, c->fused))) {
            fa_ctx_wrap(ctx, st, "node '%s': ", g->nodes[g->topo[k]]->name);
            goto fail;
        }
    }
    if ((st = FA_CUBLAS_CHECK(ctx, cublasCreate(&e->cublas)))) goto fail;
    if ((st = FA_CUBLAS_CHECK(ctx, cublasSetStream(e->cublas, e->stream)))) goto fail;
    /* CUBLAS_DEFAULT_MATH: FP32 SGEMM without TF32 (TF32 needs CUBLAS_TF32_TENSOR_OP_MATH), so results compare with the cpu target */
    if ((st = FA_CUBLAS_CHECK(ctx, cublasSetMathMode(e->cublas, CUBLAS_DEFAULT_MATH)))) goto fail;
    if (need_dnn) {
        if ((st = fa_cudnn_handle_create(ctx, e->stream, &e->cudnn))) goto fail;
        for (int k = 0; k < g->n_topo; k++) {
            cnode *c = &e->nodes[g->topo[k]];
            if (c->op->kind != K_CONV) continue;
            if ((st = fa_cudnn_conv_prepare(ctx, e->cudnn, &c->conv))) {
                fa_ctx_wrap(ctx, st, "node '%s': ", g->nodes[g->topo[k]]->name);
                goto fail;
            }
            c->conv_ready = true;
            if (c->conv.workspace_bytes > e->workspace_bytes) e->workspace_bytes = c->conv.workspace_bytes;
        }
        if (e->workspace_bytes && (st = FA_CUDA_CHECK(ctx, cudaMalloc(&e->workspace, e->workspace_bytes)))) goto fail;
    }
plan_memory:
    /* last uses and constants */
    for (int t = 0; t < g->n_tensors; t++) e->slots[t].last_use = -1;
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0) e->slots[n->inputs[i]].last_use = k;
    }
    for (int i = 0; i < g->n_outputs; i++) e->slots[g->outputs[i]].last_use = INT32_MAX;
    for (int t = 0; t < g->n_tensors; t++) {
        const fa_tensor *ten = g->tensors[t];
        if (!(ten->flags & FA_TENSOR_CONST) || !ten->data || e->slots[t].last_use < 0) continue;
        slot *s = &e->slots[t];
        s->bytes = tensor_bytes(ten);
        if ((st = dev_alloc(ctx, e, &s->d, s->bytes, false))) goto fail;
        if ((st = dev_copy(ctx, e, s->d, ten->data, s->bytes, cudaMemcpyHostToDevice))) goto fail;
        if ((st = dev_sync(ctx, e))) goto fail;
        s->is_const = true;
    }
    *out = e;
    return FA_OK;
fail:
    fa_cuda_exec_free(e);
    return st;
}

static void release(fa_cuda_exec *e, int tid)
{
    slot *s = &e->slots[tid];
    if (!s->owned) return;
    dev_free(e, s->d, true);
    e->live_bytes -= s->bytes;
    s->d = NULL;
    s->owned = false;
}

static fa_status alloc_slot(fa_ctx *ctx, fa_cuda_exec *e, int tid)
{
    slot *s = &e->slots[tid];
    release(e, tid);
    const fa_tensor *t = e->g->tensors[tid];
    uint64_t bytes = tensor_bytes(t);
    if (e->opt.max_memory && e->live_bytes + bytes > e->opt.max_memory)
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "tensor '%s': %llu bytes would exceed --max-memory %llu (live %llu)",
                            t->name, (unsigned long long)bytes, (unsigned long long)e->opt.max_memory,
                            (unsigned long long)e->live_bytes);
    fa_status st = dev_alloc(ctx, e, &s->d, bytes, true);
    if (st) return fa_ctx_wrap(ctx, st, "tensor '%s' (%llu bytes): ", t->name, (unsigned long long)bytes);
    s->owned = true;
    s->bytes = bytes;
    e->live_bytes += bytes;
    if (e->live_bytes > e->peak_bytes) e->peak_bytes = e->live_bytes;
    return FA_OK;
}

fa_status fa_cuda_exec_set_input(fa_ctx *ctx, fa_cuda_exec *e, int i, const fa_value *v)
{
    if (i < 0 || i >= e->g->n_inputs)
        return fa_ctx_error(ctx, FA_ERR_USAGE, "input index %d out of range (%d inputs)", i, e->g->n_inputs);
    int tid = e->g->inputs[i];
    const fa_tensor *t = e->g->tensors[tid];
    bool same = v->dtype == t->dtype && v->rank == t->rank;
    for (int d = 0; same && d < t->rank; d++) same = v->dims[d] == t->dims[d];
    if (!same) return fa_ctx_error(ctx, FA_ERR_INPUT, "input '%s': dtype/shape differ from the model's", t->name);
    fa_status st = alloc_slot(ctx, e, tid);
    if (!st) st = dev_copy(ctx, e, e->slots[tid].d, v->data, e->slots[tid].bytes, cudaMemcpyHostToDevice);
    if (!st) st = dev_sync(ctx, e);
    return st;
}

/* Same values as fa_exec_fill_inputs (runtime/exec.c) for the same seed. */
fa_status fa_cuda_exec_fill_inputs(fa_ctx *ctx, fa_cuda_exec *e, uint64_t seed)
{
    fa_rng r;
    fa_rng_seed(&r, seed);
    for (int i = 0; i < e->g->n_inputs; i++) {
        const fa_tensor *t = e->g->tensors[e->g->inputs[i]];
        fa_value v = {.dtype = t->dtype, .rank = t->rank};
        memcpy(v.dims, t->dims, sizeof v.dims);
        int64_t ne = fa_value_numel(&v);
        v.data = malloc((size_t)(ne > 0 ? ne : 1) * fa_dtype_size(t->dtype));
        if (!v.data) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        fa_graph_fill_input(e->g, e->g->inputs[i], &r, &v);
        fa_status st = fa_cuda_exec_set_input(ctx, e, i, &v);
        free(v.data);
        if (st) return st;
    }
    return FA_OK;
}

static unsigned blocks_for(const fa_cuda_exec *e, int64_t n, unsigned bs)
{
    int64_t b = (n + bs - 1) / bs;
    if (b > e->max_blocks) b = e->max_blocks;
    return (unsigned)(b < 1 ? 1 : b);
}

static fa_status launch(fa_ctx *ctx, fa_cuda_exec *e, int f, unsigned grid, unsigned block, void **args)
{
    if (e->emu) return fa_cuda_emu_launch(ctx, k_fnames[f], args);
    unsigned gr[3] = {grid, 1, 1}, bl[3] = {block, 1, 1};
    return fa_cuda_launch(ctx, e->fn[f], gr, bl, 0, e->stream, args);
}

/* broadcast strides of tensor t (right-aligned) against output dims */
static void bc_strides(const fa_tensor *t, const fa_tensor *y, int64_t *s)
{
    int off = y->rank - t->rank;
    int64_t st = 1;
    for (int d = y->rank - 1; d >= 0; d--) {
        int td = d - off;
        if (td < 0) s[d] = 0;
        else {
            s[d] = t->dims[td] == 1 ? 0 : st;
            st *= t->dims[td];
        }
    }
}

static void contig_strides(const int64_t *dims, int rank, int64_t *s)
{
    int64_t st = 1;
    for (int d = rank - 1; d >= 0; d--) {
        s[d] = st;
        st *= dims[d];
    }
}

static int copy_fn(bool scatter, size_t es)
{
    int base = scatter ? F_SCATTER1 : F_GATHER1;
    return base + (es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3);
}

static fa_status run_copy(fa_ctx *ctx, fa_cuda_exec *e, bool scatter, size_t es, const void *in, void *out, fa_cp *cp)
{
    if (cp->n == 0) return FA_OK;
    void *args[] = {&in, &out, cp};
    return launch(ctx, e, copy_fn(scatter, es), blocks_for(e, cp->n, 256), 256, args);
}

static fa_status run_node(fa_ctx *ctx, fa_cuda_exec *e, const fa_node *n, cnode *c)
{
    const fa_graph *g = e->g;
    const fa_tensor *x = fa_graph_in(g, n, 0), *y = fa_graph_out(g, n, 0);
    void *in[8] = {0};
    for (int i = 0; i < n->n_inputs && i < 8; i++) in[i] = n->inputs[i] >= 0 ? e->slots[n->inputs[i]].d : NULL;
    void *out = y ? e->slots[n->outputs[0]].d : NULL;
    int64_t ny = fa_tensor_numel(y);
    switch (c->op->kind) {
    case K_FUSED: { /* device pointers of every input then every output */
        void *fin[64], *fout[16];
        if (n->n_inputs > 64 || n->n_outputs > 16) return refuse(ctx, n, "a fused kernel wider than 64 inputs / 16 outputs");
        for (int i = 0; i < n->n_inputs; i++) fin[i] = n->inputs[i] >= 0 ? e->slots[n->inputs[i]].d : NULL;
        for (int i = 0; i < n->n_outputs; i++) fout[i] = n->outputs[i] >= 0 ? e->slots[n->outputs[i]].d : NULL;
        return fa_cuda_fused_launch(ctx, c->fused, NULL, fin, n->n_inputs, fout, n->n_outputs, e->stream);
    }
    case K_UNARY: {
        int op = c->unary_op;
        void *args[] = {&in[0], &out, &ny, &op, &c->a, &c->b, &c->g};
        return ny ? launch(ctx, e, F_UNARY, blocks_for(e, ny, 256), 256, args) : FA_OK;
    }
    case K_BINARY: {
        const fa_tensor *b = fa_graph_in(g, n, 1);
        int op = c->op->sub;
        if (!ny) return FA_OK;
        if (fa_tensor_numel(x) == ny && fa_tensor_numel(b) == ny) {
            void *args[] = {&in[0], &in[1], &out, &ny, &op};
            return launch(ctx, e, F_BINARY_FLAT, blocks_for(e, ny, 256), 256, args);
        }
        fa_bc s = {.rank = y->rank, .n = ny};
        memcpy(s.dims, y->dims, sizeof(int64_t) * (size_t)y->rank);
        bc_strides(x, y, s.sa);
        bc_strides(b, y, s.sb);
        void *args[] = {&in[0], &in[1], &out, &s, &op};
        return launch(ctx, e, F_BINARY, blocks_for(e, ny, 256), 256, args);
    }
    case K_WHERE: {
        if (!ny) return FA_OK;
        fa_bc s = {.rank = y->rank, .n = ny};
        memcpy(s.dims, y->dims, sizeof(int64_t) * (size_t)y->rank);
        bc_strides(fa_graph_in(g, n, 1), y, s.sa);
        bc_strides(fa_graph_in(g, n, 2), y, s.sb);
        bc_strides(x, y, s.sc);
        void *args[] = {&in[0], &in[1], &in[2], &out, &s};
        return launch(ctx, e, F_WHERE, blocks_for(e, ny, 256), 256, args);
    }
    case K_ALIAS:
        return dev_copy(ctx, e, out, in[0], tensor_bytes(y), cudaMemcpyDeviceToDevice);
    case K_TRANSPOSE: {
        fa_cp cp = {.rank = y->rank, .n = ny};
        int64_t xs[8];
        contig_strides(x->dims, x->rank, xs);
        for (int d = 0; d < y->rank; d++) {
            cp.dims[d] = y->dims[d];
            cp.s[d] = xs[c->perm[d]];
        }
        return run_copy(ctx, e, false, fa_dtype_size(y->dtype), in[0], out, &cp);
    }
    case K_SLICE: {
        fa_cp cp = {.rank = y->rank, .n = ny};
        int64_t xs[8];
        contig_strides(x->dims, x->rank, xs);
        for (int d = 0; d < y->rank; d++) {
            cp.dims[d] = y->dims[d];
            cp.s[d] = c->steps[d] * xs[d];
            cp.base += c->starts[d] * xs[d];
        }
        return run_copy(ctx, e, false, fa_dtype_size(y->dtype), in[0], out, &cp);
    }
    case K_EXPAND: {
        fa_cp cp = {.rank = y->rank, .n = ny};
        memcpy(cp.dims, y->dims, sizeof(int64_t) * (size_t)y->rank);
        bc_strides(x, y, cp.s);
        return run_copy(ctx, e, false, fa_dtype_size(y->dtype), in[0], out, &cp);
    }
    case K_SPLIT: {
        int64_t xs[8], off = 0;
        contig_strides(x->dims, x->rank, xs);
        for (int o = 0; o < n->n_outputs; o++) {
            const fa_tensor *yo = fa_graph_out(g, n, o);
            if (!yo) continue; /* omitted outputs still advance: their size is unknown, so refuse below */
            fa_cp cp = {.rank = yo->rank, .n = fa_tensor_numel(yo), .base = off * xs[c->axis]};
            memcpy(cp.dims, yo->dims, sizeof(int64_t) * (size_t)yo->rank);
            memcpy(cp.s, xs, sizeof xs);
            fa_status st = run_copy(ctx, e, false, fa_dtype_size(yo->dtype), in[0], e->slots[n->outputs[o]].d, &cp);
            if (st) return st;
            off += yo->dims[c->axis];
        }
        return FA_OK;
    }
    case K_CONCAT: {
        int64_t ys[8], off = 0;
        contig_strides(y->dims, y->rank, ys);
        for (int i = 0; i < n->n_inputs; i++) {
            const fa_tensor *xi = fa_graph_in(g, n, i);
            if (!xi) continue;
            fa_cp cp = {.rank = xi->rank, .n = fa_tensor_numel(xi), .base = off * ys[c->axis]};
            memcpy(cp.dims, xi->dims, sizeof(int64_t) * (size_t)xi->rank);
            memcpy(cp.s, ys, sizeof ys);
            fa_status st = run_copy(ctx, e, true, fa_dtype_size(y->dtype), e->slots[n->inputs[i]].d, out, &cp);
            if (st) return st;
            off += xi->dims[c->axis];
        }
        return FA_OK;
    }
    case K_GATHER: {
        const fa_tensor *idx = fa_graph_in(g, n, 1);
        int64_t nidx = fa_tensor_numel(idx);
        int idx64 = idx->dtype == FA_DTYPE_INT64;
        if (!ny) return FA_OK;
        void *args[] = {&in[0], &in[1], &idx64, &out, &c->outer, &c->mid, &c->inner, &nidx};
        return launch(ctx, e, fa_dtype_size(y->dtype) == 4 ? F_TAKE4 : F_TAKE8, blocks_for(e, ny, 256), 256, args);
    }
    case K_REDUCE:
    case K_GLOBALPOOL: {
        int64_t no = c->outer * c->inner;
        void *args[] = {&in[0], &out, &c->outer, &c->mid, &c->inner, &c->red_op};
        return no ? launch(ctx, e, F_REDUCE, (unsigned)(no < e->max_blocks * 4 ? no : e->max_blocks * 4), 256, args) : FA_OK;
    }
    case K_SOFTMAX: {
        int64_t no = c->outer * c->inner;
        int lg = c->op->sub;
        void *args[] = {&in[0], &out, &c->outer, &c->mid, &c->inner, &lg};
        return no ? launch(ctx, e, F_SOFTMAX, (unsigned)(no < e->max_blocks * 4 ? no : e->max_blocks * 4), 256, args) : FA_OK;
    }
    case K_LAYERNORM: {
        void *args[] = {&in[0], &in[1], &in[2], &out, &c->outer, &c->mid, &c->a};
        return c->outer ? launch(ctx, e, F_LAYERNORM, (unsigned)(c->outer < e->max_blocks * 4 ? c->outer : e->max_blocks * 4), 256, args) : FA_OK;
    }
    case K_BATCHNORM: {
        void *args[] = {&in[0], &in[1], &in[2], &in[3], &in[4], &out, &c->outer, &c->mid, &c->inner, &c->a};
        return ny ? launch(ctx, e, F_BATCHNORM, blocks_for(e, ny, 256), 256, args) : FA_OK;
    }
    case K_POOL: {
        int64_t nc = x->dims[0] * x->dims[1];
        int h = (int)x->dims[2], w = (int)x->dims[3], oh = (int)y->dims[2], ow = (int)y->dims[3];
        int *p = c->pool;
        void *args[] = {&in[0], &out, &nc, &h, &w, &oh, &ow, &p[0], &p[1], &p[2], &p[3], &p[4], &p[5], &p[6], &p[7], &p[8]};
        return ny ? launch(ctx, e, F_POOL2D, blocks_for(e, ny, 256), 256, args) : FA_OK;
    }
    case K_MATMUL: {
        const fa_tensor *b = fa_graph_in(g, n, 1);
        int64_t m = x->rank >= 2 ? x->dims[x->rank - 2] : 1, k = x->dims[x->rank - 1];
        int64_t nn = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
        int64_t ab = x->rank > 2 ? prod(x->dims, 0, x->rank - 2) : 1, bb = b->rank > 2 ? prod(b->dims, 0, b->rank - 2) : 1;
        int64_t yb = ny / (m * nn > 0 ? m * nn : 1);
        if (!ny) return FA_OK;
        if (b->rank == 1) { /* [.., K] x [K] -> treat B as [K, 1] */
            nn = 1;
        }
        return fa_cublas_gemm(ctx, e->cublas, false, false, (int)m, (int)nn, (int)k, 1.f, in[0], ab == 1 ? 0 : m * k,
                              in[1], bb == 1 ? 0 : k * nn, 0.f, out, m * nn, (int)yb);
    }
    case K_GEMM: {
        const fa_tensor *b = fa_graph_in(g, n, 1), *cc = fa_graph_in(g, n, 2);
        int64_t m = c->ta ? x->dims[1] : x->dims[0], k = c->ta ? x->dims[0] : x->dims[1];
        int64_t nn = c->tb ? b->dims[0] : b->dims[1];
        float beta = 0.f;
        if (cc && c->beta != 0.f) { /* Y = broadcast(C), then Y = alpha AB + beta Y */
            fa_cp cp = {.rank = 2, .n = ny, .dims = {m, nn}};
            bc_strides(cc, y, cp.s);
            fa_status st = run_copy(ctx, e, false, 4, in[2], out, &cp);
            if (st) return st;
            beta = c->beta;
        }
        return ny ? fa_cublas_gemm(ctx, e->cublas, c->ta, c->tb, (int)m, (int)nn, (int)k, c->alpha, in[0], 0, in[1], 0,
                                   beta, out, 0, 1) : FA_OK;
    }
    case K_CONV:
        if (e->emu) return fa_cuda_emu_conv(ctx, &c->conv, in[0], in[1], c->conv.has_bias ? in[2] : NULL, out);
        return fa_cudnn_conv_run(ctx, e->cudnn, &c->conv, in[0], in[1], in[2], out, e->workspace);
    }
    return refuse(ctx, n, NULL);
}

fa_status fa_cuda_exec_run(fa_ctx *ctx, fa_cuda_exec *e, const fa_exec_observer *obs)
{
    const fa_graph *g = e->g;
    for (int i = 0; i < g->n_inputs; i++)
        if (!e->slots[g->inputs[i]].d)
            return fa_ctx_error(ctx, FA_ERR_USAGE, "input '%s' was not set", g->tensors[g->inputs[i]]->name);
    for (int i = 0; i < g->n_outputs; i++) {
        int tid = g->outputs[i];
        if (!(g->tensors[tid]->flags & (FA_TENSOR_CONST | FA_TENSOR_GRAPH_INPUT))) release(e, tid);
    }
    e->peak_bytes = e->live_bytes;
    char rname[256];
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        cnode *c = &e->nodes[n->id];
        for (int o = 0; o < n->n_outputs; o++) {
            if (n->outputs[o] < 0) {
                if (c->op->kind == K_SPLIT) return refuse(ctx, n, "omitted Split output");
                continue;
            }
            fa_status st = alloc_slot(ctx, e, n->outputs[o]);
            if (st) return st;
        }
        if (obs && obs->kernel_begin) {
            fa_status st = dev_sync(ctx, e);
            if (st) return st;
            obs->kernel_begin(obs->user, n, c->op->kname);
        }
        nvtxRangePushA(fa_cuda_range_name(n, rname, sizeof rname));
        fa_status st = run_node(ctx, e, n, c);
        nvtxRangePop();
        if (!st && obs) st = dev_sync(ctx, e);
        if (obs && obs->kernel_end) obs->kernel_end(obs->user, n, c->op->kname);
        if (st) return fa_ctx_wrap(ctx, st, "executing node '%s' (%s) on cuda: ", n->name, n->op_type);
        for (int i = 0; i < n->n_inputs; i++) {
            int tid = n->inputs[i];
            if (tid >= 0 && e->slots[tid].last_use == k && !(g->tensors[tid]->flags & FA_TENSOR_GRAPH_INPUT)) release(e, tid);
        }
        for (int o = 0; o < n->n_outputs; o++) {
            int tid = n->outputs[o];
            if (tid >= 0 && e->slots[tid].last_use < 0) release(e, tid);
        }
    }
    /* outputs to host */
    for (int i = 0; i < g->n_outputs; i++) {
        const fa_tensor *t = g->tensors[g->outputs[i]];
        fa_value *v = &e->host_out[i];
        uint64_t bytes = tensor_bytes(t);
        void *p = realloc(v->data, bytes ? bytes : 1);
        if (!p) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory copying output '%s'", t->name);
        v->data = p;
        v->dtype = t->dtype;
        v->rank = t->rank;
        memcpy(v->dims, t->dims, sizeof v->dims);
        const void *src = e->slots[g->outputs[i]].d;
        if (!src && bytes) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "output '%s' has no device buffer", t->name);
        if (bytes) {
            fa_status st = dev_copy(ctx, e, v->data, src, bytes, cudaMemcpyDeviceToHost);
            if (st) return st;
        }
    }
    return dev_sync(ctx, e);
}

fa_status fa_cuda_exec_create(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *opt, fa_cuda_exec **out)
{
    return exec_create(ctx, g, opt, false, out);
}

fa_status fa_cuda_exec_create_emulated(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *opt, fa_cuda_exec **out)
{
    return exec_create(ctx, g, opt, true, out);
}

const fa_value *fa_cuda_exec_output(const fa_cuda_exec *e, int i)
{
    if (i < 0 || i >= e->g->n_outputs || !e->host_out[i].data) return NULL;
    return &e->host_out[i];
}

uint64_t fa_cuda_exec_peak_bytes(const fa_cuda_exec *e) { return e->peak_bytes; }
const char *fa_cuda_exec_kernel_name(const fa_cuda_exec *e, const fa_node *n)
{
    return e->nodes[n->id].op ? e->nodes[n->id].op->kname : NULL;
}
const char *fa_cuda_exec_device_name(const fa_cuda_exec *e) { return e->dev.name; }
