/* graph — the IR (tensors, nodes, attributes), the op registry, ONNX import/export,
 * TensorProto I/O, constant folding, shape inference and the built-in model zoo. */
#ifndef FA_GRAPH_H
#define FA_GRAPH_H

#include "core/core.h"

#define FA_MAX_RANK 8

/* Element types; the numeric values are ONNX TensorProto.DataType's (onnx.proto). */
typedef enum fa_dtype {
    FA_DTYPE_UNDEFINED = 0,
    FA_DTYPE_FLOAT = 1,
    FA_DTYPE_UINT8 = 2,
    FA_DTYPE_INT8 = 3,
    FA_DTYPE_UINT16 = 4,
    FA_DTYPE_INT16 = 5,
    FA_DTYPE_INT32 = 6,
    FA_DTYPE_INT64 = 7,
    FA_DTYPE_STRING = 8,
    FA_DTYPE_BOOL = 9,
    FA_DTYPE_FLOAT16 = 10,
    FA_DTYPE_DOUBLE = 11,
    FA_DTYPE_UINT32 = 12,
    FA_DTYPE_UINT64 = 13,
    FA_DTYPE_BFLOAT16 = 16,
    FA_DTYPE_COUNT = 17
} fa_dtype;

/* Bytes per element; 0 for UNDEFINED/STRING/unknown. */
size_t fa_dtype_size(fa_dtype t);
const char *fa_dtype_name(fa_dtype t); /* "float32", "int64", ... */

/* Pattern classes after TVM's FuseOps (relay/transforms/fuse_ops.cc, OpPatternKind).
 * Stored in the database: only grows at its end. */
typedef enum fa_pattern {
    FA_PATTERN_ELEMWISE = 0,        /* out[i] = f(in[i]) — same shape */
    FA_PATTERN_BROADCAST = 1,       /* out[i] = f(in[bcast(i)]) */
    FA_PATTERN_INJECTIVE = 2,       /* each output element depends on one input element (reshape, transpose, ...) */
    FA_PATTERN_REDUCTION = 3,       /* reduces over a domain (ReduceMean, Softmax, LayerNorm, pooling) */
    FA_PATTERN_OUT_ELEMWISE_FUSABLE = 4, /* Conv, MatMul, Gemm: epilogue can absorb elementwise ops */
    FA_PATTERN_OPAQUE = 5,          /* never fused */
    FA_PATTERN_COUNT
} fa_pattern;
const char *fa_pattern_name(fa_pattern p); /* "elementwise", "broadcast", ... */

/* What a row reduction is, from the op to the kernel: one kind, used by the registry (what a
 * FA_PATTERN_REDUCTION op reduces, as the advisor's row-reduction clusters read it; TVM keeps
 * this in the op's kCommReduce pattern plus its attributes, ours is one more registry field), by
 * the advisor's recognisers (a decomposed softmax or norm is the kind of the op it spells), by the
 * plan (`fa_cluster.reduction`, stored by name in `clusters.reduction` and plan.json's
 * "reduction") and by the code generator's row kernels (`fa_kernel_desc.reduce`). The reduction
 * domain follows from the kind:
 *   FA_REDUCE_SUM .. FA_REDUCE_LOG_SUM_EXP  the Reduce* family: `axes` (attribute, or input 1
 *                                           from ReduceSum-13 / opset 18), keepdims
 *   FA_REDUCE_SOFTMAX, FA_REDUCE_LOG_SOFTMAX  one `axis` (opset >= 13; default -1), before 13 the
 *                                           2-D coercion at `axis` (default 1)
 *   FA_REDUCE_LAYER_NORM, FA_REDUCE_RMS_NORM  normalises axes [axis, rank) (`axis`, default -1)
 *   FA_REDUCE_ATTENTION                     a softmax over the keys of scale·Q·Kᵀ (+ mask) whose
 *                                           weights reduce V (the Attention op): no row domain;
 *                                           the advisor's attention clusters take it whole
 *   FA_REDUCE_NONE                          any other reduction (pooling windows, LRN, instance /
 *                                           group norm, ArgMax/ArgMin, Hardmax): no row kernel
 *                                           of the code generator covers its domain; on a
 *                                           cluster, none at all
 *   FA_REDUCE_GENERIC                       a cluster's only: a row-reduction cluster that is
 *                                           none of the row patterns (a Reduce* with its
 *                                           elementwise prologue/epilogue, or several mixed);
 *                                           no registry op has it and no row kernel is generated.
 * Stored by name (fa_reduce_kind_name), never by value: the words of the plan's kinds never change
 * ("none", "softmax", "log-softmax", "layer-norm", "rms-norm", "generic"). A new row kind goes
 * after FA_REDUCE_RMS_NORM (fa_reduce_is_row is that range). */
typedef enum fa_reduce_kind {
    FA_REDUCE_NONE = 0,
    FA_REDUCE_SUM,
    FA_REDUCE_MEAN,
    FA_REDUCE_MAX,
    FA_REDUCE_MIN,
    FA_REDUCE_PROD,
    FA_REDUCE_L1,
    FA_REDUCE_L2,
    FA_REDUCE_SUM_SQUARE,
    FA_REDUCE_LOG_SUM_EXP,
    FA_REDUCE_SOFTMAX,
    FA_REDUCE_LOG_SOFTMAX,
    FA_REDUCE_LAYER_NORM,
    FA_REDUCE_RMS_NORM,
    FA_REDUCE_ATTENTION,   /* softmax(scale·Q·Kᵀ + bias)·V over the keys (the opset-23 Attention op) */
    FA_REDUCE_GENERIC,     /* a cluster's: none of the row patterns (above) */
    FA_REDUCE_COUNT
} fa_reduce_kind;
/* True for the Reduce* family (a reduction over `axes`). */
static inline int fa_reduce_is_axes(fa_reduce_kind k) { return k >= FA_REDUCE_SUM && k <= FA_REDUCE_LOG_SUM_EXP; }
/* True for the kinds a generated row kernel computes (softmax, log-softmax, layer norm, RMS norm):
 * a reduction op of its own with a row domain the advisor seeds a cluster from by name of kind. */
static inline int fa_reduce_is_row(fa_reduce_kind k) { return k >= FA_REDUCE_SOFTMAX && k <= FA_REDUCE_RMS_NORM; }
/* The kind's word: "none", "reduce-sum", ..., "softmax", "log-softmax", "layer-norm", "rms-norm",
 * "attention", "generic"; "?" out of range. */
const char *fa_reduce_kind_name(fa_reduce_kind k);
/* The kind a stored word names; FA_REDUCE_NONE for NULL or a word this build does not know. */
fa_reduce_kind fa_reduce_kind_parse(const char *word);

/* Attribute types; numeric values are ONNX AttributeProto.AttributeType's. */
typedef enum fa_attr_type {
    FA_ATTR_UNDEFINED = 0,
    FA_ATTR_FLOAT = 1,
    FA_ATTR_INT = 2,
    FA_ATTR_STRING = 3,
    FA_ATTR_TENSOR = 4,
    FA_ATTR_GRAPH = 5,
    FA_ATTR_FLOATS = 6,
    FA_ATTR_INTS = 7,
    FA_ATTR_STRINGS = 8,
} fa_attr_type;

typedef struct fa_tensor fa_tensor;

typedef struct fa_attr {
    const char *name;
    fa_attr_type type;
    float f;
    int64_t i;
    const char *s;      /* STRING: bytes (NUL-terminated for convenience), length s_len */
    size_t s_len;
    int n;              /* FLOATS/INTS/STRINGS: element count */
    float *floats;
    int64_t *ints;
    const char **strings;
    fa_tensor *t;       /* TENSOR: a detached tensor (not in g->tensors), owned by the graph arena */
} fa_attr;

/* Tensor roles (bit flags). */
enum {
    FA_TENSOR_GRAPH_INPUT = 1u << 0,
    FA_TENSOR_GRAPH_OUTPUT = 1u << 1,
    FA_TENSOR_INITIALIZER = 1u << 2, /* came from graph.initializer */
    FA_TENSOR_CONST = 1u << 3,       /* has data: initializer, Constant or folded */
};

struct fa_tensor {
    int id;               /* index in g->tensors */
    const char *name;     /* arena-owned; "" for an omitted optional input never appears here */
    fa_dtype dtype;
    int rank;             /* -1 while unknown */
    int64_t dims[FA_MAX_RANK];          /* -1 for a symbolic / unknown dim */
    const char *dim_params[FA_MAX_RANK];/* symbolic dim name or NULL */
    unsigned flags;       /* FA_TENSOR_* */
    void *data;           /* constant data, row-major, numel*dtype_size bytes; NULL if not const.
                             Read-only: it may be shared with other graphs or lie in a mapped
                             file (blob). Aligned to the element size at least. */
    size_t nbytes;        /* bytes in data */
    fa_blob *blob;        /* the shared buffer data points into (one reference, dropped by
                             fa_graph_free); NULL: data is malloc'd and owned by this tensor alone */
    int producer;         /* node id or -1 */
    unsigned sym_dims;    /* bit d: dim d follows the model's symbolic input dims (fa_graph_restore_symbolic);
                             an export writes it as its dim_param or unknown, never the bound value */
    /* External data location as read (informational, for export). */
    const char *doc;      /* doc_string, may be NULL */
};

typedef struct fa_op fa_op;

typedef struct fa_node {
    int id;               /* index in g->nodes */
    const char *name;     /* arena-owned; import gives unnamed nodes "<op>_<id>" */
    const char *op_type;
    const char *domain;   /* "" for ai.onnx */
    const fa_op *op;      /* registry entry; NULL for an unknown op, and for an opaque node */
    int n_inputs;
    int *inputs;          /* tensor ids; -1 for an omitted optional input ("" in ONNX) */
    int n_outputs;
    int *outputs;         /* tensor ids; -1 for an omitted optional output */
    int n_attrs;
    fa_attr *attrs;
    bool folded;          /* removed by constant folding; outputs became constants */
    int opset;            /* opset version of node->domain in force for this node */
    /* Kept out of the analysis by fa_graph_prepare with keep_unsupported: its op has no registry
     * entry, or it is a supported op whose input shapes are unknown because they come from such a
     * node (then op is NULL too, and fa_op_find(domain, op_type) still names it). Its outputs
     * have the shapes the model's value_info or a --shape binding gives, else none (rank -1). */
    bool opaque;
} fa_node;

typedef struct fa_opset {
    const char *domain;
    int64_t version;
} fa_opset;

typedef struct fa_graph {
    fa_arena *arena;
    const char *name;
    const char *path;         /* source file or "zoo:NAME", may be NULL */
    int64_t ir_version;
    const char *producer_name;
    const char *producer_version;
    int n_opsets;
    fa_opset *opsets;
    int n_tensors, cap_tensors;
    fa_tensor **tensors;
    int n_nodes, cap_nodes;
    fa_node **nodes;
    int n_inputs, cap_inputs;
    int *inputs;              /* graph inputs (tensor ids), excluding initializers */
    int n_outputs, cap_outputs;
    int *outputs;             /* graph outputs (tensor ids) */
    int n_folded;             /* nodes removed by constant folding */
    /* How fa_onnx_import holds the model's tensors (docs/onnx.md "Weights in place"): read in
     * place from the file's mapping (the model file's or an external data file's), or copied
     * (raw_data at an address not aligned to its element size, typed *_data values). Bytes. */
    uint64_t weights_mapped_bytes, weights_copied_bytes;
    int weights_mapped, weights_copied; /* tensors */
    /* Symbolic input dims fa_graph_prepare bound to the default 1 because no --shape/--batch
     * named them (docs/cli.md "Symbolic dimensions"): one arena string per distinct dim, a
     * dim_param name ("batch_size") or "INPUT[D]" for an unnamed dim. */
    int n_dim_defaults;
    const char **dim_defaults;
    /* Nodes of ops without a registry entry that fa_graph_prepare kept as opaque nodes
     * (fa_load_options.keep_unsupported); the nodes after them it could not shape are opaque too
     * (fa_node.opaque) but not counted here. */
    int n_unsupported;
    /* consumer index, rebuilt by fa_graph_index() */
    int *cons_start;          /* n_tensors+1 offsets into cons */
    int *cons;                /* node ids */
    int *topo;                /* live (non-folded) node ids in topological order */
    int n_topo;
    int *topo_pos;            /* by node id: its index in topo, -1 for a folded node (a scoped
                                 walk orders a few nodes without walking topo) */
    int *name_slots;          /* private: open-addressing hash of tensor names -> id+1 */
    int name_cap;
} fa_graph;

/* ---- construction (graph owns everything; ids are stable) ---- */
fa_graph *fa_graph_create(const char *name);
void fa_graph_free(fa_graph *g);
int64_t fa_graph_opset(const fa_graph *g, const char *domain); /* 0 if not imported */
/* Bytes of the model's initializers (its weights as the file holds them; constants folded at
 * load are not counted). */
uint64_t fa_graph_initializer_bytes(const fa_graph *g);
fa_status fa_graph_set_opset(fa_ctx *ctx, fa_graph *g, const char *domain, int64_t version);
/* The newest version of the default (ai.onnx) domain this build implements: ONNX 1.23.2's
 * (onnx.defs.onnx_opset_version(), whose node suite runs in CI: docs/conformance.md). A model
 * importing a newer one is refused: its ops may mean something else there. */
#define FA_ONNX_OPSET_MAX 28
/* The newest ModelProto.ir_version this build reads: ONNX 1.23.2's (onnx.IR_VERSION). A newer
 * one is refused as the newer opsets are (ONNX Runtime refuses past its own); 2^62 was accepted. */
#define FA_ONNX_IR_MAX 14
/* Find or create a tensor by name; returns its id or -1 on OOM. */
int fa_graph_tensor(fa_graph *g, const char *name);
int fa_graph_find_tensor(const fa_graph *g, const char *name); /* -1 if absent */
/* Add a node; inputs/outputs are tensor names (NULL or "" = omitted optional). Returns node. */
fa_node *fa_graph_add_node(fa_ctx *ctx, fa_graph *g, const char *name, const char *op_type,
                           const char *domain, int n_in, const char *const *inputs, int n_out,
                           const char *const *outputs);
/* Tensor t of another graph in g under the same name: found, or created with t's type and shape
 * and, when t is a constant with data, the same data shared (a weight is never copied). Its id, or
 * -1 (ctx holds why: out of memory). */
int fa_graph_copy_tensor(fa_ctx *ctx, fa_graph *g, const fa_tensor *t);
/* How fa_graph_copy_node treats the node's outputs. */
enum {
    FA_COPY_OUTPUT_SHAPES = 1u, /* outputs copied as inputs are (fa_graph_copy_tensor): a whole-graph copy */
    FA_COPY_OUTPUT_UNCONST = 2u /* an output dst holds as a constant stops being one: the node computes it
                                   again (graph/symbolic.c: a value the symbolic dims change) */
};
/* Node n of graph src added to dst with its op type, domain, opset, op and attributes; its inputs
 * by name, each one dst lacks copied (fa_graph_copy_tensor); its outputs by name as `flags` says.
 * Any number of inputs and outputs (a Concat of every earlier feature map: DenseNet-264's third
 * block concatenates 65). The new node, or NULL (ctx holds why). */
fa_node *fa_graph_copy_node(fa_ctx *ctx, fa_graph *dst, const fa_graph *src, const fa_node *n, unsigned flags);
fa_status fa_graph_add_input(fa_ctx *ctx, fa_graph *g, int tensor_id);
fa_status fa_graph_add_output(fa_ctx *ctx, fa_graph *g, int tensor_id);
/* Set tensor type/shape. dims may hold -1 for unknown. */
void fa_tensor_set_shape(fa_tensor *t, fa_dtype dt, int rank, const int64_t *dims);
/* Attach constant data (copied into a new blob). Sets CONST flag. */
fa_status fa_tensor_set_data(fa_ctx *ctx, fa_tensor *t, const void *data, size_t nbytes);
/* Attach constant data held in blob b, data = b's bytes (t takes one reference of its own).
 * Sets CONST flag; what t held before is released. */
void fa_tensor_set_blob(fa_tensor *t, fa_blob *b);
/* t's constant data becomes src's, shared (no copy) when src holds it in a blob, copied
 * otherwise. Sets CONST flag. Errors: FA_ERR_NOMEM. */
fa_status fa_tensor_share_data(fa_ctx *ctx, fa_tensor *t, const fa_tensor *src);
/* Adopt malloc'd data (owned from here, freed with the graph). FA_ERR_NOMEM frees data. */
fa_status fa_tensor_adopt_data(fa_ctx *ctx, fa_tensor *t, void *data, size_t nbytes);
/* Drop t's constant data (data NULL, nbytes 0; flags untouched). */
void fa_tensor_clear_data(fa_tensor *t);
/* Attributes: add (copies arrays into the arena). */
fa_attr *fa_node_add_attr_int(fa_graph *g, fa_node *n, const char *name, int64_t v);
fa_attr *fa_node_add_attr_float(fa_graph *g, fa_node *n, const char *name, float v);
fa_attr *fa_node_add_attr_ints(fa_graph *g, fa_node *n, const char *name, const int64_t *v, int cnt);
fa_attr *fa_node_add_attr_floats(fa_graph *g, fa_node *n, const char *name, const float *v, int cnt);
fa_attr *fa_node_add_attr_string(fa_graph *g, fa_node *n, const char *name, const char *s);
fa_attr *fa_node_add_attr_strings(fa_graph *g, fa_node *n, const char *name, const char *const *v, int cnt);
/* Copy attribute `a` (any type, from any graph) onto n; arrays and strings are copied into g's
 * arena, a TENSOR attribute's data is duplicated. */
fa_attr *fa_node_copy_attr(fa_graph *g, fa_node *n, const fa_attr *a);

/* ---- queries ---- */
static inline fa_tensor *fa_graph_in(const fa_graph *g, const fa_node *n, int i)
{
    return (i < n->n_inputs && n->inputs[i] >= 0) ? g->tensors[n->inputs[i]] : NULL;
}
static inline fa_tensor *fa_graph_out(const fa_graph *g, const fa_node *n, int i)
{
    return (i < n->n_outputs && n->outputs[i] >= 0) ? g->tensors[n->outputs[i]] : NULL;
}
const fa_attr *fa_node_attr(const fa_node *n, const char *name); /* NULL if absent */
int64_t fa_node_attr_int(const fa_node *n, const char *name, int64_t dflt);
float fa_node_attr_float(const fa_node *n, const char *name, float dflt);
const char *fa_node_attr_string(const fa_node *n, const char *name, const char *dflt);
/* INTS attribute: returns count (0 if absent) and *out (borrowed, valid until fa_graph_free). */
int fa_node_attr_ints(const fa_node *n, const char *name, const int64_t **out);

/* Number of elements; -1 if rank/dims unknown; saturates on overflow to -1 as well. */
int64_t fa_tensor_numel(const fa_tensor *t);
/* numel * dtype size, 0 if unknown, UINT64_MAX when it overflows (never wraps to a small size). */
uint64_t fa_tensor_bytes(const fa_tensor *t);
/* Whether node n, a Slice (default domain) with constant starts/ends/axes/steps, selects one
 * contiguous run of its input's row-major elements: every axis before the one it cuts has extent
 * 1, that axis taken with step 1, every axis after it whole (a channel split of a batch-1 NCHW
 * tensor). True with *offset_bytes the run's start from the input's first byte (its length is the
 * output's bytes); false for any other Slice, a Slice whose parameters are not constant, or
 * another op. graph/ops_shape.c (the Slice kernel's own parameter rule). */
bool fa_slice_contiguous(const fa_graph *g, const fa_node *n, uint64_t *offset_bytes);
/* The same for output o of a Split (default domain): true with *offset_bytes its start when every
 * axis before the split one has extent 1 and every output has the input's dims but on that axis
 * (their inferred shapes: ONNX's rule for split sizes already applied). */
bool fa_split_contiguous(const fa_graph *g, const fa_node *n, int o, uint64_t *offset_bytes);
/* An Einsum of two inputs that is one batched matrix product: every label is a batch label (in
 * both inputs and the output), M (the first input and the output), N (the second and the
 * output) or K (both inputs, summed), at most one label each of M, N and K, no label repeated in
 * a term, no ellipsis, the batch labels' extents equal. Its product in canonical order — A
 * [batch..., M, K], B [batch..., K, N], Y [batch..., M, N], the batch dims in the output's order —
 * read through each tensor's own row-major strides (in elements); a missing role is an extent-1
 * dim; a label of extent 1 has no role. Attention written with einsum ("bhid,bhjd->bhij",
 * "bhij,bhjd->bhid"; MaxViT's 44) is such a product. */
typedef struct fa_einsum_matmul {
    int rank; /* batch dims + 2, at most FA_MAX_RANK */
    int64_t dims_a[FA_MAX_RANK], strides_a[FA_MAX_RANK];
    int64_t dims_b[FA_MAX_RANK], strides_b[FA_MAX_RANK];
    int64_t dims_y[FA_MAX_RANK], strides_y[FA_MAX_RANK];
    /* Outer loops around the product: M or N labels outside their role's innermost contiguous
     * run (Funnel's "binh,tnh->bnit": b and i not adjacent in the output). Loop l runs
     * outer_dims[l] times, advancing A, B and Y by outer_sa/outer_sb/outer_sy[l] elements (0 in
     * the input without the label). oneDNN 2.6 ran such a label as a broadcast batch dim on its
     * reference matmul ("ref:any"): 80 ms for one of Funnel's einsums at batch 8. */
    int outer_rank;
    int64_t outer_dims[FA_MAX_RANK], outer_sa[FA_MAX_RANK], outer_sb[FA_MAX_RANK], outer_sy[FA_MAX_RANK];
} fa_einsum_matmul;
bool fa_einsum_as_matmul(const fa_graph *g, const fa_node *n, fa_einsum_matmul *mm);
/* Whether n is a Pad (default domain) whose constant pads are all zero, in any mode: its output is
 * its input, element for element (swin_t's Pads to a window multiple, zero at 224x224). False for
 * any other node, and for pads that are not constants of the graph. graph/ops_shape.c. */
bool fa_pad_identity(const fa_graph *g, const fa_node *n);
/* Whether n is a Transpose (default domain) that moves only axes of extent 1 (the axes longer than
 * 1 keep their order): its output holds its input's elements in the same order, a reshape.
 * ConvBERT's unfold exports one per layer ([1, 128, 9, 64, 1, 64], perm 0 1 2 4 3 5), 0.31 ms of
 * copying each. False for any other node or an unknown shape. graph/ops_shape.c. */
bool fa_transpose_identity(const fa_graph *g, const fa_node *n);

/* The largest tensor fuse-advise loads, infers, folds, plans or runs: 2^48 bytes (256 TiB, more
 * than any machine holds), and the product of its dims - a 0 dim counted as 1 - at most 2^48, so
 * no element count, stride, offset or byte size derived from a shape can overflow int64 (kernels,
 * the executor's memory plan, constant folding and the cost formulas rely on it). */
#define FA_MAX_TENSOR_BYTES ((uint64_t)1 << 48)
#define FA_MAX_TENSOR_ELEMENTS ((int64_t)1 << 48)
/* FA_OK when t's known shape is within those limits (a tensor of unknown rank or with unknown dims
 * passes); otherwise FA_ERR_INPUT with a message naming `what` ("graph input 'x'", "node 'n'
 * (Conv): output 'y'"), the shape and the limit. Called by fa_graph_prepare on every graph input,
 * constant and inferred output. */
fa_status fa_tensor_check_size(fa_ctx *ctx, const fa_tensor *t, const char *what);
/* "1x3x224x224" (or "?" for unknown dims, "scalar" for rank 0) into buf. */
const char *fa_tensor_shape_str(const fa_tensor *t, char *buf, size_t n);

/* Build consumer lists and the topological order of live nodes. Detects cycles
 * (error names a node on the cycle) and inputs with no producer that are neither
 * graph inputs nor constants (error names node and input). Must be called after
 * any structural change and before the queries below. */
fa_status fa_graph_index(fa_ctx *ctx, fa_graph *g);
/* Consumers of tensor `tid` among live nodes; returns count, *out borrowed until next index. */
int fa_graph_consumers(const fa_graph *g, int tid, const int **out);
/* Producer node of a tensor, NULL for inputs/constants/folded producers. */
fa_node *fa_graph_producer(const fa_graph *g, int tid);

/* ---- values: a buffer with a shape, the unit of execution ---- */
typedef struct fa_value {
    void *data;           /* row-major; borrowed by kernels */
    fa_dtype dtype;
    int rank;
    int64_t dims[FA_MAX_RANK];
} fa_value;
int64_t fa_value_numel(const fa_value *v);
/* Element i of a buffer of dtype dt as double / stored from double (converting). */
double fa_load_as_double(const void *data, fa_dtype dt, int64_t i);
void fa_store_from_double(void *data, fa_dtype dt, int64_t i, double v);

/* ---- op registry ---- */

/* Cost of one execution of a node (formulas documented per op in ops_*.c and docs/ops.md). */
typedef struct fa_op_cost {
    uint64_t flops;          /* floating-point operations (an FMA counts 2) */
    uint64_t bytes_read;     /* every input tensor read once, incl. weights */
    uint64_t bytes_written;  /* every output tensor written once */
} fa_op_cost;

/* Shape inference for one node: reads input tensors' dtype/shape (and constant data
 * where the op needs values, e.g. Reshape's shape), writes the outputs' dtype/shape.
 * Returns FA_ERR_INPUT with a message naming the node for inconsistent shapes. */
typedef fa_status (*fa_infer_fn)(fa_ctx *ctx, fa_graph *g, fa_node *n);
typedef void (*fa_cost_fn)(const fa_graph *g, const fa_node *n, fa_op_cost *out);
/* Reference CPU kernel: inputs (NULL data for omitted optional inputs, n_in = node->n_inputs),
 * outputs preallocated with the inferred shapes. `threads` is the OpenMP thread budget. */
typedef fa_status (*fa_kernel_fn)(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                  fa_value *out, int n_out, int threads);

/* Op flags. */
enum {
    FA_OPF_SHAPE_ONLY = 1u << 0, /* output depends only on input shapes (Shape, Size): foldable on static shapes */
    FA_OPF_NO_FOLD = 1u << 1,    /* never constant-fold (random ops, huge outputs) */
    FA_OPF_ALIAS = 1u << 2,      /* output is a view/copy of input 0 (Reshape, Identity, Flatten...) */
    FA_OPF_MATMUL = 1u << 3,     /* a batched matrix product Y[..., M, N] = A[..., M, K]·B[..., K, N] with
                                    numpy broadcasting of the batch dims (ONNX MatMul): the attention
                                    pattern's QKᵀ and PV products */
};

/* ---- index maps of ops that only move elements (graph/view.c) ----
 * A strided accessor of a tensor: the element at coordinates c (axes of `dims`) lives at
 *     offset + Σ_axis Σ_term ((c[axis] / div) % mod) · stride
 * in the source buffer (elements, not bytes). A plain row-major tensor has one term per axis
 * (div 1, mod = the dim, the row-major stride); a broadcast axis none; an axis a reshape merged
 * from a broadcast one and a real one (grouped key/value heads: [B, Hkv, rep, S, D] expanded
 * and reshaped to [B, Hkv·rep, S, D]) a term with div = rep. Invariant: div·mod divides the
 * axis' dim, so every term reads the axis' coordinate only; terms with mod 1 are dropped. What a
 * view op does to the accessor of its input (fa_op.view) gives the accessor of its output: a
 * chain of views (Transpose, Reshape, Expand, ...) from a source tensor composes into one
 * accessor of it, which the code generator reads with strides instead of copying (the
 * attention kernel's Q, K, V and output). Splitting an axis whose term straddles the split
 * without dividing it (a reshape of 12 elements read as 3 x 4 into 2 x 6) has no accessor of
 * this form: the functions then return false and leave *v undefined. */
#define FA_VIEW_TERMS 4
typedef struct fa_view_term {
    int64_t div, mod, stride;  /* ((c / div) % mod) * stride; elements */
} fa_view_term;
typedef struct fa_view {
    int rank;
    int64_t dims[FA_MAX_RANK];
    int n_terms[FA_MAX_RANK];
    fa_view_term terms[FA_MAX_RANK][FA_VIEW_TERMS];
    int64_t offset;            /* elements */
} fa_view;
/* The row-major accessor of a tensor of shape (rank, dims) (every dim >= 1). */
void fa_view_contiguous(fa_view *v, int rank, const int64_t *dims);
/* Reshape v (same element count) to (rank, dims): the linear order is kept. */
bool fa_view_reshape(fa_view *v, int rank, const int64_t *dims);
/* Transpose v: new axis i is old axis perm[i] (perm a permutation of [0, rank)). */
bool fa_view_permute(fa_view *v, const int64_t *perm);
/* Broadcast v to (rank, dims) (numpy, right-aligned; v's rank <= rank): new and size-1 axes
 * read coordinate 0. False when a dim is neither equal nor 1. */
bool fa_view_expand(fa_view *v, int rank, const int64_t *dims);
/* The accessor of node n's output 0 from v, the accessor of its input 0, when n's op only moves
 * elements (fa_op.view); false when it does not or the map has no accessor of this form. */
bool fa_view_through(const fa_graph *g, const fa_node *n, fa_view *v);
/* The axis read with one constant stride (at most one term, div 1, covering the whole axis);
 * *stride 0 for a broadcast axis. False when the axis is not affine. */
bool fa_view_axis_stride(const fa_view *v, int axis, int64_t *stride);
/* The offset of coordinates c (v->rank of them). */
int64_t fa_view_offset_at(const fa_view *v, const int64_t *c);
typedef bool (*fa_view_fn)(const fa_graph *g, const fa_node *n, fa_view *v);

/* One attribute an op reads, as the ONNX operator spec (onnx/docs/Operators.md) defines it,
 * and the values this op implements. Every op lists every attribute it reads in fa_op.attrs;
 * fa_graph_prepare checks each node against that list before shape inference
 * (fa_node_check_attrs), so a kernel or a later stage that reads an attribute through the
 * typed accessors (fa_node_attr_int, ...) can trust its type and value:
 *   - an attribute the op does not list is refused (FA_ERR_UNSUPPORTED) naming the node, the
 *     attribute and its value: nothing a model sets is silently ignored;
 *   - an attribute of another type than listed is refused (FA_ERR_INPUT) naming the node, the
 *     attribute, the expected and the found type (a Conv kernel_shape given as FLOATS);
 *   - `accept`, when set, lists the values the op implements; any other value is refused
 *     (FA_ERR_UNSUPPORTED) naming the node, the attribute and the value. Syntax: alternatives
 *     separated by '|'; an INT/FLOAT alternative is a number or an inclusive range "lo..hi"
 *     (either end may be omitted); a STRING alternative is the exact string. For INTS, FLOATS
 *     and STRINGS every element must be accepted. An attribute of the spec that the op does
 *     not implement at all is listed with its default as the only accepted value;
 *   - `count` fixes the element count of an INTS/FLOATS/STRINGS attribute where the spec does
 *     (FA_ACOUNT_*), refused (FA_ERR_INPUT) with the expected and found count;
 *   - `until`, when > 0, is the last opset whose version of the op has the attribute (Clip's
 *     min/max until 10: Clip-6 holds through opset 10, Clip-11 takes them as inputs): on a
 *     later opset the attribute is refused like an unknown one, since the op's code no longer
 *     reads it there.
 * An op may list one name twice with different types where the spec changed the type across
 * opsets (LpPool p: FLOAT in opset 1, INT later); the list ends with an entry whose name is
 * NULL. */
typedef enum fa_attr_count {
    FA_ACOUNT_ANY = 0,     /* no fixed count */
    FA_ACOUNT_SPATIAL,     /* rank(input 0) - 2 (kernel_shape, strides, dilations) */
    FA_ACOUNT_2SPATIAL,    /* 2 * (rank(input 0) - 2) (pads of Conv and the pools) */
    FA_ACOUNT_RANK,        /* rank(input 0) (Transpose perm) */
    FA_ACOUNT_2RANK,       /* 2 * rank(input 0) (Pad-2 pads) */
} fa_attr_count;

typedef struct fa_attr_spec {
    const char *name;
    fa_attr_type type;
    const char *accept;    /* NULL: every value of the type; else the implemented values (above) */
    fa_attr_count count;
    int until;             /* last opset with the attribute; 0: every opset since it appeared */
} fa_attr_spec;

/* "INT", "FLOATS", ... (ONNX AttributeProto.AttributeType names). */
const char *fa_attr_type_name(fa_attr_type t);

struct fa_op {
    const char *name;      /* ONNX op_type */
    const char *domain;    /* "" for ai.onnx, "com.microsoft" ... */
    fa_pattern pattern;
    int min_inputs, max_inputs;   /* max -1 = variadic */
    int min_outputs, max_outputs;
    unsigned flags;
    fa_infer_fn infer;
    fa_cost_fn cost;       /* NULL: default (bytes of inputs/outputs, flops = 0) */
    fa_kernel_fn kernel;   /* reference CPU kernel; NULL if the runtime supplies it (Conv...) */
    const char *doc;       /* one line: formula for FLOPs and bytes */
    const fa_attr_spec *attrs; /* every attribute the op reads (fa_attr_spec); NULL: none */
    fa_reduce_kind reduce; /* FA_PATTERN_REDUCTION: what it reduces (fa_reduce_kind); else FA_REDUCE_NONE */
    fa_view_fn view;       /* ops that only move elements (views, transposes, broadcasts, value
                              copies): the index map on an accessor of input 0 (graph/view.c);
                              NULL otherwise */
};

/* Registry lookup by (domain, op_type); domain "" and "ai.onnx" are the same. NULL if unknown. */
const fa_op *fa_op_find(const char *domain, const char *op_type);
/* Iterate: returns the i-th registered op or NULL past the end. */
const fa_op *fa_op_at(int i);
/* The domain of the nodes the applier writes (Fused<Anchor> with oneDNN post-ops, FusedKernel),
 * and the attribute on each that holds its flops: the sum of the replaced ops' own formulas
 * (applier/fused_graph.c), an int64 >= 0. */
#define FA_FUSED_DOMAIN "ai.fuse-advise"
#define FA_FUSED_FLOPS_ATTR "flops"
/* Cost of a node (after shape inference). A node of FA_FUSED_DOMAIN has no registry row: its
 * bytes are its own inputs and outputs, its flops FA_FUSED_FLOPS_ATTR, else (a Fused<Anchor>
 * node) the anchor op's formula over the node, else 0 (graph/registry.c fused_cost). */
void fa_node_cost(const fa_graph *g, const fa_node *n, fa_op_cost *out);
/* Check node n's attributes against its op's list (fa_attr_spec above); input 0's rank must be
 * known where a count depends on it. FA_OK, or FA_ERR_UNSUPPORTED / FA_ERR_INPUT with a message
 * naming the node, the attribute and the value or the expected and found type. */
fa_status fa_node_check_attrs(fa_ctx *ctx, const fa_graph *g, const fa_node *n);

/* ---- load pipeline ---- */

/* Bind a symbolic input dim: "name=1x3x224x224" (whole input shape) or "dimparam=8"
 * (a dim_param name). */
typedef struct fa_shape_binding {
    const char *name;
    int rank;          /* -1 for a dim_param binding */
    int64_t dims[FA_MAX_RANK];
} fa_shape_binding;
/* Parse "--shape" text; error names the text and the byte offset. */
fa_status fa_shape_binding_parse(fa_ctx *ctx, const char *text, fa_shape_binding *out);

typedef struct fa_load_options {
    const fa_shape_binding *bindings;
    int n_bindings;
    int batch;                 /* >0: override dim 0 of every graph input (zoo --batch) */
    bool no_fold;              /* skip constant folding */
    uint64_t max_const_bytes;  /* cap for one folded tensor (default 1 GiB when 0) */
    bool no_dim_defaults;      /* refuse unbound symbolic dims instead of binding them to 1 */
    fa_progress_fn progress;   /* may be NULL: ("load", initializers decoded, all of them), then
                                  ("prepare", nodes inferred and folded, all of them) */
    void *progress_user;
    /* Keep nodes of unsupported ops as opaque nodes (fa_node.opaque) and analyse the rest, for
     * the verbs that only read a model (inspect, advise MODEL); without it every unsupported op is
     * refused at once (fa_graph_unsupported_text). An opaque graph is never executed. */
    bool keep_unsupported;
} fa_load_options;

/* The value an unbound symbolic input dim takes when no binding names it: 1, what
 * onnxruntime_perf_test does for free dimensions and trtexec for dynamic shapes without
 * --shapes (both bind the smallest valid shape). */
#define FA_DIM_DEFAULT 1

/* Every node of an op without a registry entry, by op: "com.microsoft.BiasGelu at nodes 'a',
 * 'b'; Foo at node 'c'" (at most 4 node names per op, then "and N more"), appended to b. Returns
 * how many such nodes there are (0: nothing appended). */
int fa_graph_unsupported_text(const fa_graph *g, fa_buf *b);
/* Where the list of supported ops is (docs/supported-ops.md, generated from the registry). */
#define FA_SUPPORTED_OPS_DOC "docs/supported-ops.md"

/* Import an ONNX model file (protobuf). Unknown ops import with node->op NULL and are refused
 * by fa_graph_prepare, every one at once ("unsupported op X at node Y", or "3 unsupported ops:
 * ..." naming each op and its nodes and FA_SUPPORTED_OPS_DOC) unless keep_unsupported; import
 * itself refuses corrupt protobuf
 * (with the byte offset), missing initializers, dangling inputs, cycles, bad dims, and external
 * data outside the model's folder (docs/onnx.md). *out owned by caller (fa_graph_free). */
fa_status fa_onnx_import(fa_ctx *ctx, const char *path, fa_graph **out);
/* fa_onnx_import reporting ("load", initializers decoded, all of them) to progress (may be NULL).
 * The file is mapped read-only (fa_blob_map_file) and never copied whole: the tensors whose bytes
 * lie at an address aligned to their element size are read in place from it, the others are
 * copied once; external data files are mapped the same way (docs/onnx.md "Weights in place"). */
fa_status fa_onnx_import_progress(fa_ctx *ctx, const char *path, fa_progress_fn progress, void *progress_user,
                                  fa_graph **out);
fa_status fa_onnx_import_buffer(fa_ctx *ctx, const char *display_name, const char *base_dir,
                                const uint8_t *data, size_t len, fa_graph **out);
/* Export the live graph (folded nodes dropped, their outputs as initializers). */
fa_status fa_onnx_export(fa_ctx *ctx, const fa_graph *g, const char *path);
/* Protobuf refuses a message over 2 GB (2^31 - 1 bytes: its sizes are int32); ONNX keeps a larger
 * model's weights in external data files (onnx/docs/ExternalData.md). */
#define FA_ONNX_PROTOBUF_LIMIT ((uint64_t)INT32_MAX)
/* What moves out: initializers of at least this many bytes (onnx's size_threshold default). */
#define FA_ONNX_EXTERNAL_MIN_BYTES 1024
/* Each at an offset that is a multiple of this: a page, so a reader maps it in place (ours,
 * ONNX Runtime's); within the 64 KiB of padding onnx's own reader accepts. */
#define FA_ONNX_EXTERNAL_ALIGN 4096
typedef struct fa_onnx_export_options {
    uint64_t external_above;     /* bytes: the model packs to more than this -> external data
                                    (0: FA_ONNX_PROTOBUF_LIMIT; tests lower it) */
    uint64_t external_min_bytes; /* 0: FA_ONNX_EXTERNAL_MIN_BYTES */
} fa_onnx_export_options;
/* fa_onnx_export, with external data when the model would pack to more than o->external_above:
 * every initializer of at least external_min_bytes goes to PATH.data (basename PATH.data as the
 * location, relative to the model's folder, so the pair moves together), page-aligned, written
 * part by part (never one buffer), atomically, before PATH; attribute tensors stay in the model.
 * o NULL: the defaults. Errors: the writers', FA_ERR_UNSUPPORTED when even the model without its
 * initializers is over the protobuf limit. */
fa_status fa_onnx_export_with(fa_ctx *ctx, const fa_graph *g, const char *path, const fa_onnx_export_options *o);
fa_status fa_onnx_export_buffer(fa_ctx *ctx, const fa_graph *g, uint8_t **out_data, size_t *out_len);

/* Shape inference + constant folding in one topological pass (folding evaluates nodes whose
 * inputs are all constant, and SHAPE_ONLY nodes whose input shapes are static, with the
 * reference kernels). Applies bindings first (opt->bindings, then opt->batch); every input dim
 * still symbolic after that is bound to FA_DIM_DEFAULT and listed in g->dim_defaults, or, with
 * opt->no_dim_defaults, refused with one FA_ERR_INPUT message that lists every unbound dim.
 * An input without any shape is always refused (its rank is unknown; every such input is named,
 * with the --shape that binds it). Every graph input and
 * constant, and every output a rule infers, is checked by fa_tensor_check_size before anything
 * is folded or allocated; the rules' own arithmetic is checked (fa_dim_add/sub/mul), so a model
 * whose shapes overflow or pass FA_MAX_TENSOR_BYTES gets FA_ERR_INPUT naming the node and field. */
fa_status fa_graph_prepare(fa_ctx *ctx, fa_graph *g, const fa_load_options *opt);
/* Only the first step of fa_graph_prepare: opt's bindings (--shape), then opt->batch, on g's input
 * dims; nothing inferred. For callers that check values against the inputs' shapes before
 * preparing (`exec --inputs`), so those shapes are the ones the run will have. Applying it again in
 * fa_graph_prepare sets the same dims. Errors as fa_graph_prepare's bindings. */
fa_status fa_graph_apply_shape_options(fa_ctx *ctx, fa_graph *g, const fa_load_options *opt);

/* Give dst (a graph derived from src, e.g. the BN-folded model) the symbolic dims of src's
 * model back, so fa_onnx_export writes a model that runs at any value of them. src was
 * prepared from src->path; the model is imported and prepared again (opt: no_fold,
 * max_const_bytes) with each dim the file leaves symbolic bound to src's value + 1. A tensor
 * dim that differs between the two follows the symbolic dims: dst's tensor of that name gets
 * its bit in sym_dims and src's dim_params. A folded node whose outputs differ (shape or
 * value: Shape -> Gather -> Concat -> Reshape) is copied into dst again wherever dst reads its
 * output as a constant (transitively). A model without symbolic dims, or a zoo model, leaves
 * dst as it is. Re-indexes dst. Errors: the probe failing to import or prepare (a model valid
 * only at the bound values), out of memory. */
fa_status fa_graph_restore_symbolic(fa_ctx *ctx, fa_graph *dst, const fa_graph *src, const fa_load_options *opt);

/* Turn graph input `name` into a constant with the given value (copied): it leaves g->inputs
 * and becomes an initializer. For shape-parameter inputs (Reshape shape, Slice starts, Resize
 * scales, ...) whose values a test or `exec --inputs` supplies, so shapes stay static.
 * Call between import and fa_graph_prepare. FA_ERR_INPUT if not a graph input or the value's
 * dtype/shape disagree with a declared one. */
fa_status fa_graph_freeze_input(fa_ctx *ctx, fa_graph *g, const char *name, const fa_value *v);
/* True when graph input tensor `tid` feeds a slot that must be constant for static shapes: an
 * integer input whose values reach, through value-carrying ops, a slot that sets a shape
 * (Reshape's shape, Slice's starts, a reduction's axes, Range, ConstantOfShape, ... — any slot
 * but the data of a non-elementwise op), or the scales/sizes/roi inputs of Resize/Upsample.
 * Token ids that only index an embedding and attention masks are not. Needs the consumer
 * index fa_onnx_import builds (without it every integer input counts). */
bool fa_graph_input_is_shape_param(const fa_graph *g, int tid);

/* Random values for graph input tid when the user gives none (run, the applier's captures, the
 * cuda executor), into v (dtype/rank/dims set, data allocated by the caller): floats uniform in
 * [-1, 1) (one draw per element, so a seed gives the same floats on every target), bools 0/1,
 * integers in [0, min(4, bound)) where bound = fa_graph_input_index_bound, or 0/1 when they
 * index nothing (attention masks, flags). Needs an indexed graph. */
void fa_graph_fill_input(const fa_graph *g, int tid, fa_rng *r, fa_value *v);
/* The smallest table size that integer input tid's values index: the indexed axis of every
 * Gather/GatherElements (and the indexed dims of GatherND) they reach as indices, directly or
 * through ops that only move values (Cast, Reshape, Unsqueeze, Expand, Slice, Concat, ...,
 * Gather's data); 0 when they index nothing. (An embedding with 2 token types needs ids 0..1.) */
int64_t fa_graph_input_index_bound(const fa_graph *g, int tid);

/* Everything: "zoo:NAME" or a path; import + prepare. When prepare fails after symbolic dims were
 * bound to FA_DIM_DEFAULT, the model is prepared again with each such dim bound to 2 instead (at
 * most 8 dims, one at a time): a dim whose other value changes the failure (or removes it) is
 * named in the message as the dim the failing shapes depend on, with the --shape that binds it
 * ("... depends on the symbolic dim 'batch', bound to the default 1: bind it with --shape
 * batch=N"). A failure no defaulted dim changes is reported as it is. */
fa_status fa_graph_load(fa_ctx *ctx, const char *model, const fa_load_options *opt, fa_graph **out);

/* ---- TensorProto (.pb) I/O, the format of corpus test_data_set folders ---- */
/* Read one TensorProto; *out->data is malloc'd (caller frees), name (malloc'd) optional. */
fa_status fa_tensorproto_read(fa_ctx *ctx, const char *path, fa_value *out, char **out_name);
fa_status fa_tensorproto_read_buffer(fa_ctx *ctx, const char *display_name, const uint8_t *data,
                                     size_t len, fa_value *out, char **out_name);
fa_status fa_tensorproto_write(fa_ctx *ctx, const char *path, const fa_value *v, const char *name);

/* ---- model zoo ---- */
typedef struct fa_zoo_info {
    const char *name;
    const char *description;
} fa_zoo_info;
int fa_zoo_count(void);
const fa_zoo_info *fa_zoo_at(int i);
/* Build zoo model NAME (random weights from fixed seed 0x5EED + name hash), batch>=1.
 * Unknown name: FA_ERR_INPUT listing the known names. */
fa_status fa_zoo_build(fa_ctx *ctx, const char *name, int batch, fa_graph **out);
/* The default weight seed of zoo model NAME: 0x5EED + fa_hash64(NAME) (FNV-1a 64). */
uint64_t fa_zoo_default_seed(const char *name);
/* fa_zoo_build with an explicit weight seed (tests: weights differ per seed). */
fa_status fa_zoo_build_seeded(fa_ctx *ctx, const char *name, int batch, uint64_t seed,
                              fa_graph **out);

#endif
