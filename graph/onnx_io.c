/* graph/onnx_io — ONNX ModelProto import into the graph IR and export back, with protobuf-c
 * and our subset schema (graph/onnx-subset.proto). Semantics: onnx/onnx docs/IR.md. */
#include "graph/onnx-impl.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ==================================================================================== */
/* Import                                                                               */
/* ==================================================================================== */

typedef struct imp {
    fa_ctx *ctx;
    const char *file;     /* display name that starts every message */
    const char *base_dir; /* model's folder for external data; NULL refuses it */
    fa_graph *g;
    fa_tp_source *src;    /* where tensors' bytes are (the file's mapping, the raw_data tokens) */
    fa_progress_fn progress;
    void *progress_user;
} imp;

static const char *attr_type_name(int t)
{
    switch (t) {
    case 0: return "UNDEFINED";
    case 1: return "FLOAT";
    case 2: return "INT";
    case 3: return "STRING";
    case 4: return "TENSOR";
    case 5: return "GRAPH";
    case 6: return "FLOATS";
    case 7: return "INTS";
    case 8: return "STRINGS";
    case 9: return "TENSORS";
    case 10: return "GRAPHS";
    case 11: return "SPARSE_TENSOR";
    case 12: return "SPARSE_TENSORS";
    case 13: return "TYPE_PROTO";
    case 14: return "TYPE_PROTOS";
    default: return "unknown";
    }
}

static fa_status nomem(imp *im)
{
    return fa_ctx_error(im->ctx, FA_ERR_NOMEM, "%s: out of memory", im->file);
}

/* Type and shape of a ValueInfoProto onto tensor t. `role` names it in messages ("graph input").
 * Non-tensor types (sequence, optional) leave t unknown. */
static fa_status apply_value_info(imp *im, fa_tensor *t, const Onnx__ValueInfoProto *vi,
                                  const char *role)
{
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type)
        return FA_OK;
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    fa_dtype dt = FA_DTYPE_UNDEFINED;
    if (tt->has_elem_type) {
        if (tt->elem_type < 0)
            return fa_ctx_error(im->ctx, FA_ERR_INPUT, "%s: %s '%s': elem_type %d is negative",
                                im->file, role, t->name, (int)tt->elem_type);
        /* an element type no fa_dtype holds (string, complex, float8, 4- and 2-bit types) is
         * refused here, naming it, instead of leaving the tensor's type undefined */
        if (tt->elem_type != 0 && (tt->elem_type >= FA_DTYPE_COUNT || !fa_dtype_size((fa_dtype)tt->elem_type)))
            return fa_ctx_error(im->ctx, FA_ERR_UNSUPPORTED, "%s: %s '%s': element type %s (%d) is not supported",
                                im->file, role, t->name, fa_dtype_name((fa_dtype)tt->elem_type), (int)tt->elem_type);
        dt = (fa_dtype)tt->elem_type;
    }
    if (!tt->shape) {
        t->dtype = dt;
        t->rank = -1;
        return FA_OK;
    }
    const Onnx__TensorShapeProto *sp = tt->shape;
    if (sp->n_dim > FA_MAX_RANK)
        return fa_ctx_error(im->ctx, FA_ERR_INPUT, "%s: %s '%s': rank %zu exceeds the maximum rank %d",
                            im->file, role, t->name, sp->n_dim, FA_MAX_RANK);
    int64_t dims[FA_MAX_RANK];
    const char *params[FA_MAX_RANK] = {0};
    for (size_t i = 0; i < sp->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
        dims[i] = -1;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            /* -1 is how several exporters (TensorRT, Polygraphy) write a dynamic dim */
            if (d->dim_value < -1)
                return fa_ctx_error(im->ctx, FA_ERR_INPUT,
                                    "%s: %s '%s': dim %zu = %" PRId64 " is negative", im->file,
                                    role, t->name, i, d->dim_value);
            dims[i] = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param && *d->dim_param) {
            params[i] = fa_arena_strdup(im->g->arena, d->dim_param);
            if (!params[i]) return nomem(im);
        }
    }
    fa_tensor_set_shape(t, dt, (int)sp->n_dim, dims);
    for (int i = 0; i < FA_MAX_RANK; i++) t->dim_params[i] = params[i];
    return FA_OK;
}

/* Which value fields an AttributeProto carries, as a bit set over attribute types. */
static unsigned attr_fields(const Onnx__AttributeProto *ap)
{
    unsigned m = 0;
    if (ap->has_f) m |= 1u << FA_ATTR_FLOAT;
    if (ap->has_i) m |= 1u << FA_ATTR_INT;
    if (ap->has_s) m |= 1u << FA_ATTR_STRING;
    if (ap->t) m |= 1u << FA_ATTR_TENSOR;
    if (ap->g) m |= 1u << FA_ATTR_GRAPH;
    if (ap->n_floats) m |= 1u << FA_ATTR_FLOATS;
    if (ap->n_ints) m |= 1u << FA_ATTR_INTS;
    if (ap->n_strings) m |= 1u << FA_ATTR_STRINGS;
    if (ap->n_tensors) m |= 1u << 9;
    if (ap->n_graphs) m |= 1u << 10;
    return m;
}

static const char *attr_field_name(int t)
{
    switch (t) {
    case FA_ATTR_FLOAT: return "f";
    case FA_ATTR_INT: return "i";
    case FA_ATTR_STRING: return "s";
    case FA_ATTR_TENSOR: return "t";
    case FA_ATTR_GRAPH: return "g";
    case FA_ATTR_FLOATS: return "floats";
    case FA_ATTR_INTS: return "ints";
    case FA_ATTR_STRINGS: return "strings";
    case 9: return "tensors";
    case 10: return "graphs";
    default: return "?";
    }
}

static fa_status import_attr(imp *im, fa_node *n, const Onnx__AttributeProto *ap, fa_attr *a)
{
    fa_arena *ar = im->g->arena;
    if (!ap->name || !*ap->name)
        return fa_ctx_error(im->ctx, FA_ERR_INPUT, "%s: node '%s' (%s): an attribute has no name",
                            im->file, n->name, n->op_type);
    unsigned have = attr_fields(ap);
    int type;
    if (ap->has_type) {
        type = (int)ap->type;
    } else { /* IR version 1 files may omit `type`: infer it from the field that is set */
        type = FA_ATTR_INTS; /* an empty list */
        for (int k = 1; k <= 10; k++)
            if (have & (1u << k)) {
                type = k;
                break;
            }
    }
    const char *an = ap->name;
    if (type == FA_ATTR_GRAPH || type == 10)
        return fa_ctx_error(im->ctx, FA_ERR_UNSUPPORTED,
                            "%s: node '%s' (%s): attribute '%s' holds a subgraph (%s); control "
                            "flow with subgraphs (If, Loop, Scan) is not supported",
                            im->file, n->name, n->op_type, an, attr_type_name(type));
    if (type == 9 || (type >= 11 && type <= 14))
        return fa_ctx_error(im->ctx, FA_ERR_UNSUPPORTED,
                            "%s: node '%s' (%s): attribute '%s' has type %s, which is not supported",
                            im->file, n->name, n->op_type, an, attr_type_name(type));
    if (type < FA_ATTR_FLOAT || type > FA_ATTR_STRINGS)
        return fa_ctx_error(im->ctx, FA_ERR_INPUT,
                            "%s: node '%s' (%s): attribute '%s' has unknown type %d", im->file,
                            n->name, n->op_type, an, type);
    unsigned other = have & ~(1u << type);
    if (other) {
        int k = 0;
        while (!(other & (1u << k))) k++;
        return fa_ctx_error(im->ctx, FA_ERR_INPUT,
                            "%s: node '%s' (%s): attribute '%s' is declared %s but holds a "
                            "value of type %s (field '%s')",
                            im->file, n->name, n->op_type, an, attr_type_name(type),
                            attr_type_name(k), attr_field_name(k));
    }
    a->name = fa_arena_strdup(ar, an);
    if (!a->name) return nomem(im);
    a->type = (fa_attr_type)type;
    switch (type) {
    case FA_ATTR_FLOAT: a->f = ap->f; break;
    case FA_ATTR_INT: a->i = ap->i; break;
    case FA_ATTR_STRING:
        a->s = fa_arena_strndup(ar, ap->has_s && ap->s.data ? (const char *)ap->s.data : "",
                                ap->has_s ? ap->s.len : 0);
        if (!a->s) return nomem(im);
        a->s_len = ap->has_s ? ap->s.len : 0;
        break;
    case FA_ATTR_FLOATS:
    case FA_ATTR_INTS:
    case FA_ATTR_STRINGS: {
        size_t cnt = type == FA_ATTR_FLOATS ? ap->n_floats
                     : type == FA_ATTR_INTS ? ap->n_ints : ap->n_strings;
        if (cnt > INT_MAX)
            return fa_ctx_error(im->ctx, FA_ERR_INPUT, "%s: node '%s' (%s): attribute '%s' has %zu values",
                                im->file, n->name, n->op_type, an, cnt);
        a->n = (int)cnt;
        size_t alloc = cnt ? cnt : 1;
        if (type == FA_ATTR_FLOATS) {
            a->floats = fa_arena_alloc(ar, alloc * sizeof(float));
            if (!a->floats) return nomem(im);
            if (cnt) memcpy(a->floats, ap->floats, cnt * sizeof(float));
        } else if (type == FA_ATTR_INTS) {
            a->ints = fa_arena_alloc(ar, alloc * sizeof(int64_t));
            if (!a->ints) return nomem(im);
            if (cnt) memcpy(a->ints, ap->ints, cnt * sizeof(int64_t));
        } else {
            a->strings = fa_arena_alloc(ar, alloc * sizeof(char *));
            if (!a->strings) return nomem(im);
            for (size_t k = 0; k < cnt; k++) {
                a->strings[k] = fa_arena_strndup(ar, ap->strings[k].data ? (const char *)ap->strings[k].data : "",
                                                 ap->strings[k].len);
                if (!a->strings[k]) return nomem(im);
            }
        }
        break;
    }
    case FA_ATTR_TENSOR: {
        if (!ap->t)
            return fa_ctx_error(im->ctx, FA_ERR_INPUT,
                                "%s: node '%s' (%s): attribute '%s' is declared TENSOR but has no "
                                "tensor (field 't')",
                                im->file, n->name, n->op_type, an);
        char what[512];
        snprintf(what, sizeof what, "node '%s' (%s): attribute '%s'", n->name, n->op_type, an);
        fa_tp_decoded d;
        fa_status s = fa_tp_decode(im->ctx, im->file, what, ap->t, im->base_dir, im->src, &d);
        if (s != FA_OK) return s;
        fa_tensor *t = fa_arena_alloc(ar, sizeof *t);
        if (!t) {
            fa_blob_unref(d.blob);
            return nomem(im);
        }
        t->id = -1;
        t->name = fa_arena_strdup(ar, ap->t->name && *ap->t->name ? ap->t->name : an);
        t->producer = -1;
        fa_tensor_set_shape(t, d.dtype, d.rank, d.dims);
        fa_tensor_set_blob(t, d.blob); /* the graph's from here: fa_graph_free drops attribute data */
        fa_blob_unref(d.blob);
        t->flags = FA_TENSOR_CONST;
        a->t = t;
        if (!t->name) return nomem(im);
        break;
    }
    }
    return FA_OK;
}

static fa_status import_node(imp *im, const Onnx__NodeProto *np, size_t idx)
{
    if (!np->op_type || !*np->op_type)
        return fa_ctx_error(im->ctx, FA_ERR_INPUT, "%s: node %zu ('%s') has no op_type", im->file,
                            idx, np->name ? np->name : "");
    if (np->n_input > INT_MAX || np->n_output > INT_MAX)
        return fa_ctx_error(im->ctx, FA_ERR_INPUT, "%s: node %zu: too many inputs/outputs", im->file, idx);
    fa_node *n = fa_graph_add_node(im->ctx, im->g, np->name, np->op_type, np->domain,
                                   (int)np->n_input, (const char *const *)np->input,
                                   (int)np->n_output, (const char *const *)np->output);
    if (!n) return fa_ctx_wrap(im->ctx, fa_ctx_status(im->ctx), "%s: ", im->file);
    if (np->n_attribute) {
        if (np->n_attribute > INT_MAX) return nomem(im);
        fa_attr *attrs = fa_arena_alloc(im->g->arena, sizeof *attrs * np->n_attribute);
        if (!attrs) return nomem(im);
        n->attrs = attrs;
        for (size_t k = 0; k < np->n_attribute; k++) {
            fa_status s = import_attr(im, n, np->attribute[k], &attrs[k]);
            if (s != FA_OK) return s;
            n->n_attrs = (int)k + 1; /* counted as they land, so fa_graph_free sees each tensor */
            for (size_t j = 0; j < k; j++)
                if (strcmp(attrs[j].name, attrs[k].name) == 0)
                    return fa_ctx_error(im->ctx, FA_ERR_INPUT,
                                        "%s: node '%s' (%s): attribute '%s' appears twice",
                                        im->file, n->name, n->op_type, attrs[k].name);
        }
    }
    return FA_OK;
}

static fa_status import_graph(imp *im, const Onnx__ModelProto *mp)
{
    fa_ctx *ctx = im->ctx;
    fa_graph *g = im->g;
    const Onnx__GraphProto *gp = mp->graph;
    fa_status s;

    g->ir_version = mp->has_ir_version ? mp->ir_version : 0;
    if (g->ir_version < 0)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: ir_version %" PRId64 " is not a version", im->file, (int64_t)g->ir_version);
    /* ONNX's checker: ir_version is required, and opset_import came with IR 3 (a model that has
     * one and says an earlier IR, or none, is not a model the spec defines) */
    if (g->ir_version < 3 && mp->n_opset_import > 0)
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: ir_version %" PRId64 "%s, but the model has opset_import, which came with IR version 3",
                            im->file, (int64_t)g->ir_version, mp->has_ir_version ? "" : " (the field is absent)");
    if (g->ir_version > FA_ONNX_IR_MAX)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED,
                            "%s: ir_version %" PRId64 " is newer than %d, the newest this build reads (ONNX 1.23.2): "
                            "its format may mean something else there",
                            im->file, (int64_t)g->ir_version, FA_ONNX_IR_MAX);
    if (mp->producer_name) g->producer_name = fa_arena_strdup(g->arena, mp->producer_name);
    if (mp->producer_version) g->producer_version = fa_arena_strdup(g->arena, mp->producer_version);
    g->path = fa_arena_strdup(g->arena, im->file);

    /* opsets first: fa_graph_add_node reads them into node->opset */
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *op = mp->opset_import[i];
        const char *dom = op->domain ? op->domain : "";
        if (strcmp(dom, "ai.onnx") == 0) dom = "";
        if (!op->has_version || op->version < 1)
            return fa_ctx_error(ctx, FA_ERR_INPUT,
                                "%s: opset_import %zu (domain '%s'): version %" PRId64 " is not positive",
                                im->file, i, dom, op->has_version ? op->version : 0);
        /* one version per domain: a second was taken over the first, silently */
        for (int k = 0; k < g->n_opsets; k++)
            if (!strcmp(g->opsets[k].domain, dom))
                return fa_ctx_error(ctx, FA_ERR_INPUT,
                                    "%s: opset_import %zu (domain '%s'): the domain is imported twice (versions %" PRId64
                                    " and %" PRId64 ")",
                                    im->file, i, dom, g->opsets[k].version, op->version);
        if (!*dom && op->version > FA_ONNX_OPSET_MAX)
            return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED,
                                "%s: opset_import %zu: the default domain's version %" PRId64 " is newer than %d, the "
                                "newest this build implements (ONNX 1.23.2): its ops may mean something else there",
                                im->file, i, op->version, FA_ONNX_OPSET_MAX);
        if ((s = fa_graph_set_opset(ctx, g, dom, op->version)) != FA_OK) return s;
    }
    /* a node of the default domain needs its version: with none imported every op was read at
     * "opset 0" */
    for (size_t i = 0; gp && fa_graph_opset(g, "") == 0 && i < gp->n_node; i++) {
        const char *nd = gp->node[i] && gp->node[i]->domain ? gp->node[i]->domain : "";
        if (!*nd || !strcmp(nd, "ai.onnx"))
            return fa_ctx_error(ctx, FA_ERR_INPUT,
                                "%s: node %zu ('%s', %s) is of the default domain, but opset_import names no version "
                                "of it",
                                im->file, i, gp->node[i] && gp->node[i]->name ? gp->node[i]->name : "",
                                gp->node[i] && gp->node[i]->op_type ? gp->node[i]->op_type : "?");
    }

    /* initializers: constant tensors, names unique */
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !*tp->name)
            return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: initializer %zu has no name", im->file, i);
        int tid = fa_graph_tensor(g, tp->name);
        if (tid < 0) return nomem(im);
        fa_tensor *t = g->tensors[tid];
        if (t->flags & FA_TENSOR_INITIALIZER)
            return fa_ctx_error(ctx, FA_ERR_INPUT,
                                "%s: duplicate tensor name: initializer %zu '%s' is already an "
                                "initializer",
                                im->file, i, tp->name);
        char what[400];
        snprintf(what, sizeof what, "initializer '%s'", tp->name);
        fa_tp_decoded d;
        if ((s = fa_tp_decode(ctx, im->file, what, tp, im->base_dir, im->src, &d)) != FA_OK) return s;
        fa_tensor_set_shape(t, d.dtype, d.rank, d.dims);
        fa_tensor_set_blob(t, d.blob);
        fa_blob_unref(d.blob);
        t->flags |= FA_TENSOR_INITIALIZER | FA_TENSOR_CONST;
        if (im->progress && (i + 1 == gp->n_initializer || (i & 15) == 15))
            im->progress(im->progress_user, "load", (int)(i + 1 > INT_MAX ? INT_MAX : i + 1),
                         (int)(gp->n_initializer > INT_MAX ? INT_MAX : gp->n_initializer));
        if (tp->doc_string) t->doc = fa_arena_strdup(g->arena, tp->doc_string);
    }

    /* graph inputs; one that is also an initializer is a constant, not an input (IR.md:
     * "inputs ... may also be initialized", the initializer is its default value) */
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name)
            return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: graph input %zu has no name", im->file, i);
        int tid = fa_graph_tensor(g, vi->name);
        if (tid < 0) return nomem(im);
        fa_tensor *t = g->tensors[tid];
        if (t->flags & FA_TENSOR_INITIALIZER) {
            /* its declared shape, where it fixes one, is the initializer's: a [4] input whose
             * initializer held [7] ran with the 7 values, silently */
            const Onnx__TypeProto__Tensor *tt = vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE
                                                    ? vi->type->tensor_type : NULL;
            const Onnx__TensorShapeProto *sp = tt ? tt->shape : NULL;
            bool differs = sp && (int)sp->n_dim != t->rank;
            for (size_t d = 0; sp && !differs && d < sp->n_dim; d++)
                differs = sp->dim[d]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                          sp->dim[d]->dim_value >= 0 && sp->dim[d]->dim_value != t->dims[d];
            if (differs) {
                char have[200] = "[";
                size_t w = 1;
                for (int d = 0; d < t->rank && w < sizeof have - 24; d++)
                    w += (size_t)snprintf(have + w, sizeof have - w, "%s%lld", d ? "x" : "", (long long)t->dims[d]);
                snprintf(have + w, sizeof have - w, "]");
                return fa_ctx_error(ctx, FA_ERR_INPUT,
                                    "%s: graph input %zu '%s': its declared shape (%zu dims) is not its initializer's %s",
                                    im->file, i, vi->name, sp->n_dim, have);
            }
            continue;
        }
        if (t->flags & FA_TENSOR_GRAPH_INPUT)
            return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: duplicate tensor name: graph input '%s' is listed twice",
                                im->file, vi->name);
        if ((s = apply_value_info(im, t, vi, "graph input")) != FA_OK) return s;
        if ((s = fa_graph_add_input(ctx, g, tid)) != FA_OK) return s;
    }

    for (size_t i = 0; i < gp->n_node; i++)
        if ((s = import_node(im, gp->node[i], i)) != FA_OK) return s;

    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        if (!vi->name || !*vi->name)
            return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: graph output %zu has no name", im->file, i);
        int tid = fa_graph_tensor(g, vi->name);
        if (tid < 0) return nomem(im);
        fa_tensor *t = g->tensors[tid];
        if (t->flags & FA_TENSOR_GRAPH_OUTPUT)
            return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: duplicate tensor name: graph output '%s' is listed twice",
                                im->file, vi->name);
        if (t->rank < 0 && !(t->flags & (FA_TENSOR_CONST | FA_TENSOR_GRAPH_INPUT)))
            if ((s = apply_value_info(im, t, vi, "graph output")) != FA_OK) return s;
        if ((s = fa_graph_add_output(ctx, g, tid)) != FA_OK) return s;
    }

    /* value_info: type/shape hints for intermediate tensors (shape inference overrides) */
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        if (!vi->name || !*vi->name) continue;
        int tid = fa_graph_find_tensor(g, vi->name);
        if (tid < 0) continue;
        fa_tensor *t = g->tensors[tid];
        if (t->rank >= 0 || (t->flags & (FA_TENSOR_CONST | FA_TENSOR_GRAPH_INPUT))) continue;
        if ((s = apply_value_info(im, t, vi, "value_info")) != FA_OK) return s;
    }

    if ((s = fa_graph_index(ctx, g)) != FA_OK) return fa_ctx_wrap(ctx, s, "%s: ", im->file);
    return FA_OK;
}

/* Import the ModelProto in data[0..len). `file_blob` (may be NULL: data is the caller's, every
 * tensor copied out of it): the blob holding data, a mapping of the model file; tensors aligned in
 * it stay there (fa_tp_source). The file is walked by the checker (fa_pb_check: well formed, and
 * what unpacking it takes within fa_pb_unpack_budget), then a copy without the raw_data payloads
 * (fa_pb_filter_raw) is unpacked by protobuf-c under that budget, so neither the walk nor the
 * unpack holds a second copy of the weights; each tensor then takes its bytes from the file. */
static fa_status import_impl(fa_ctx *ctx, const char *file, const char *base_dir, const uint8_t *data, size_t len,
                             fa_blob *file_blob, fa_progress_fn progress, void *progress_user, fa_graph **out)
{
    size_t bad = 0;
    char why[512];
    if (len == 0) return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: empty file, not an ONNX model", file);
    fa_pb_verdict pv = fa_pb_check(data, len, FA_PB_MODEL, &bad, why, sizeof why, NULL);
    if (pv == FA_PB_TOO_BIG)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: refused before unpacking: byte %zu of %zu: %s", file, bad, len,
                            why);
    if (pv)
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: not a valid ONNX protobuf (truncated or corrupt): byte %zu of %zu: %s",
                            file, bad, len, why);
    uint8_t *filtered = NULL;
    size_t flen = 0;
    fa_tp_source src = {.base = data, .len = len, .file = file_blob};
    fa_pb_range *ranges = NULL;
    if (!fa_pb_filter_raw(data, len, FA_PB_MODEL, &filtered, &flen, &ranges, &src.n_ranges))
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory reading the model's structure", file);
    src.ranges = ranges;
    /* the budget stays the whole file's: the filtered copy unpacks to less than the file would */
    fa_pb_budget budget;
    fa_pb_budget_init(&budget, fa_pb_unpack_budget(len));
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&budget.alloc, filtered ? flen : len, filtered ? filtered : data);
    free(filtered);
    fa_status s = FA_OK;
    if (!mp && budget.exceeded)
        s = fa_ctx_error(ctx, FA_ERR_INPUT,
                         "%s: unpacking the model would take more than %" PRIu64 " MiB of memory (the limit for "
                         "a file of %zu bytes)", file, budget.limit >> 20, len);
    else if (!mp)
        s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: not a valid ONNX protobuf (truncated or corrupt)", file);
    else if (!mp->graph)
        s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: not an ONNX model: ModelProto.graph (field 7) is missing", file);
    fa_graph *g = s ? NULL : fa_graph_create(mp->graph->name);
    if (!s && !g) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", file);
    if (!s) {
        imp im = {ctx, file, base_dir, g, &src, progress, progress_user};
        s = import_graph(&im, mp);
    }
    if (mp) onnx__model_proto__free_unpacked(mp, &budget.alloc);
    free(ranges);
    fa_tp_source_clear(&src);
    /* the pages the walk and the copies read: the tensors left in the file fault theirs in again
     * when they are read */
    if (file_blob) fa_blob_release_pages(file_blob);
    if (!s) {
        g->weights_mapped_bytes = src.mapped_bytes;
        g->weights_copied_bytes = src.copied_bytes;
        g->weights_mapped = src.mapped;
        g->weights_copied = src.copied;
        fa_log(ctx, FA_LOG_INFO, "%s: %d tensor(s), %.1f MiB, read in place from the file's mapping; %d, %.1f MiB, "
               "copied (in the model at an address not aligned to their element size, or stored as typed values)",
               file, src.mapped, src.mapped_bytes / 1048576.0, src.copied, src.copied_bytes / 1048576.0);
    }
    if (s) {
        fa_graph_free(g);
        return s;
    }
    *out = g;
    return FA_OK;
}

fa_status fa_onnx_import_buffer(fa_ctx *ctx, const char *display_name, const char *base_dir,
                                const uint8_t *data, size_t len, fa_graph **out)
{
    return import_impl(ctx, display_name ? display_name : "<buffer>", base_dir, data, len, NULL, NULL, NULL, out);
}

fa_status fa_onnx_import_progress(fa_ctx *ctx, const char *path, fa_progress_fn progress, void *progress_user,
                                  fa_graph **out)
{
    int fd = -1;
    fa_status s = fa_open_input(ctx, path, 0, &fd);
    if (s != FA_OK) return s;
    fa_blob *fb = NULL;
    s = fa_blob_map_file(ctx, fd, path, &fb);
    close(fd);
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
    s = import_impl(ctx, path, dir, fa_blob_data(fb), fa_blob_size(fb), fb, progress, progress_user, out);
    fa_blob_unref(fb); /* the tensors read in place hold their own references */
    return s;
}

fa_status fa_onnx_import(fa_ctx *ctx, const char *path, fa_graph **out)
{
    return fa_onnx_import_progress(ctx, path, NULL, NULL, out);
}

/* ==================================================================================== */
/* Export                                                                               */
/* ==================================================================================== */

typedef struct exporter {
    fa_ctx *ctx;
    const fa_graph *g;
    fa_arena *a; /* every protobuf-c struct and array lives here; freed after packing */
    bool oom;
} exporter;

static void *ealloc(exporter *e, size_t n)
{
    void *p = fa_arena_alloc(e->a, n ? n : 1);
    if (!p) e->oom = true;
    return p;
}

static Onnx__TensorProto *mk_tensor(exporter *e, const fa_tensor *t, const char *name)
{
    Onnx__TensorProto *tp = ealloc(e, sizeof *tp);
    if (!tp) return NULL;
    onnx__tensor_proto__init(tp);
    fa_tp_encode(tp, name, t->dtype, t->rank, t->dims, t->data, t->nbytes);
    if (t->doc) tp->doc_string = (char *)t->doc;
    return tp;
}

static Onnx__ValueInfoProto *mk_value_info(exporter *e, const fa_tensor *t)
{
    Onnx__ValueInfoProto *vi = ealloc(e, sizeof *vi);
    Onnx__TypeProto *ty = ealloc(e, sizeof *ty);
    Onnx__TypeProto__Tensor *tt = ealloc(e, sizeof *tt);
    if (!vi || !ty || !tt) return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(ty);
    onnx__type_proto__tensor__init(tt);
    vi->name = (char *)t->name;
    vi->type = ty;
    ty->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    ty->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = (int32_t)t->dtype;
    if (t->rank >= 0) {
        Onnx__TensorShapeProto *sp = ealloc(e, sizeof *sp);
        Onnx__TensorShapeProto__Dimension **dims = ealloc(e, sizeof *dims * (size_t)t->rank);
        if (!sp || !dims) return NULL;
        onnx__tensor_shape_proto__init(sp);
        sp->n_dim = (size_t)t->rank;
        sp->dim = dims;
        for (int i = 0; i < t->rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = ealloc(e, sizeof *d);
            if (!d) return NULL;
            onnx__tensor_shape_proto__dimension__init(d);
            bool sym = i < 32 && (t->sym_dims >> i & 1u);
            if (t->dims[i] >= 0 && !sym) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = t->dims[i];
            } else if (t->dim_params[i]) { /* symbolic; unknown (neither field) without a name */
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = (char *)t->dim_params[i];
            }
            dims[i] = d;
        }
        tt->shape = sp;
    }
    return vi;
}

static Onnx__AttributeProto *mk_attr(exporter *e, const fa_attr *a)
{
    Onnx__AttributeProto *ap = ealloc(e, sizeof *ap);
    if (!ap) return NULL;
    onnx__attribute_proto__init(ap);
    ap->name = (char *)a->name;
    ap->has_type = 1;
    ap->type = (Onnx__AttributeProto__AttributeType)a->type;
    switch (a->type) {
    case FA_ATTR_FLOAT: ap->has_f = 1; ap->f = a->f; break;
    case FA_ATTR_INT: ap->has_i = 1; ap->i = a->i; break;
    case FA_ATTR_STRING:
        ap->has_s = 1;
        ap->s.data = (uint8_t *)(a->s ? a->s : "");
        ap->s.len = a->s ? a->s_len : 0;
        break;
    case FA_ATTR_TENSOR:
        if (!a->t) return NULL;
        ap->t = mk_tensor(e, a->t, a->t->name);
        if (!ap->t) return NULL;
        break;
    case FA_ATTR_FLOATS: ap->n_floats = (size_t)a->n; ap->floats = a->floats; break;
    case FA_ATTR_INTS: ap->n_ints = (size_t)a->n; ap->ints = a->ints; break;
    case FA_ATTR_STRINGS: {
        ProtobufCBinaryData *ss = ealloc(e, sizeof *ss * (size_t)(a->n ? a->n : 1));
        if (!ss) return NULL;
        for (int k = 0; k < a->n; k++) {
            ss[k].data = (uint8_t *)a->strings[k];
            ss[k].len = strlen(a->strings[k]);
        }
        ap->n_strings = (size_t)a->n;
        ap->strings = ss;
        break;
    }
    default:
        return NULL;
    }
    return ap;
}

/* Live nodes in a topological order that keeps node-id (file) order wherever the graph
 * allows: Kahn's algorithm with a min-heap on node id. Returns count, or -1 on a cycle /
 * OOM (message set). */
static int export_order(exporter *e, int **out)
{
    const fa_graph *g = e->g;
    int nn = g->n_nodes;
    int *indeg = calloc((size_t)nn + 1, sizeof(int));
    int *heap = malloc(sizeof(int) * ((size_t)nn + 1));
    int *order = malloc(sizeof(int) * ((size_t)nn + 1));
    int *cstart = calloc((size_t)g->n_tensors + 1, sizeof(int));
    size_t ncons = 0;
    for (int i = 0; i < nn; i++)
        if (!g->nodes[i]->folded) ncons += (size_t)g->nodes[i]->n_inputs;
    int *cons = malloc(sizeof(int) * (ncons + 1));
    int *fill = calloc((size_t)g->n_tensors + 1, sizeof(int));
    int cnt = -1;
    if (!indeg || !heap || !order || !cstart || !cons || !fill) {
        fa_ctx_error(e->ctx, FA_ERR_NOMEM, "out of memory ordering nodes for export");
        goto done;
    }
    for (int i = 0; i < nn; i++) {
        const fa_node *n = g->nodes[i];
        if (n->folded) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) cstart[n->inputs[k] + 1]++;
    }
    for (int t = 0; t < g->n_tensors; t++) cstart[t + 1] += cstart[t];
    for (int i = 0; i < nn; i++) {
        const fa_node *n = g->nodes[i];
        if (n->folded) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            int tid = n->inputs[k];
            if (tid < 0) continue;
            cons[cstart[tid] + fill[tid]++] = i;
            int p = g->tensors[tid]->producer;
            if (p >= 0 && !g->nodes[p]->folded) indeg[i]++;
        }
    }
    int hn = 0, live = 0;
    cnt = 0;
    for (int i = 0; i < nn; i++) {
        if (g->nodes[i]->folded) continue;
        live++;
        if (indeg[i] == 0) heap[hn++] = i; /* ascending ids: already a valid min-heap */
    }
    while (hn > 0) {
        int top = heap[0];
        heap[0] = heap[--hn];
        for (int i = 0;;) { /* sift down */
            int l = 2 * i + 1, r = l + 1, m = i;
            if (l < hn && heap[l] < heap[m]) m = l;
            if (r < hn && heap[r] < heap[m]) m = r;
            if (m == i) break;
            int tmp = heap[i]; heap[i] = heap[m]; heap[m] = tmp;
            i = m;
        }
        order[cnt++] = top;
        const fa_node *n = g->nodes[top];
        for (int o = 0; o < n->n_outputs; o++) {
            int tid = n->outputs[o];
            if (tid < 0) continue;
            for (int c = cstart[tid]; c < cstart[tid + 1]; c++)
                if (--indeg[cons[c]] == 0) {
                    int i = hn++;
                    heap[i] = cons[c];
                    while (i > 0 && heap[(i - 1) / 2] > heap[i]) { /* sift up */
                        int p = (i - 1) / 2, tmp = heap[p];
                        heap[p] = heap[i];
                        heap[i] = tmp;
                        i = p;
                    }
                }
        }
    }
    if (cnt != live) {
        for (int i = 0; i < nn; i++)
            if (!g->nodes[i]->folded && indeg[i] > 0) {
                fa_ctx_error(e->ctx, FA_ERR_INPUT, "export: graph has a cycle through node '%s' (%s)",
                             g->nodes[i]->name, g->nodes[i]->op_type);
                break;
            }
        cnt = -1;
    }
done:
    free(indeg);
    free(heap);
    free(cstart);
    free(cons);
    free(fill);
    if (cnt < 0) {
        free(order);
        return -1;
    }
    *out = order;
    return cnt;
}

/* True when tensor t is a constant no live node produces: exported as an initializer. */
static bool is_exported_const(const fa_graph *g, const fa_tensor *t)
{
    if (!(t->flags & FA_TENSOR_CONST) || !t->data) return false;
    return t->producer < 0 || g->nodes[t->producer]->folded;
}

static fa_status build_model(exporter *e, Onnx__ModelProto *mp, int *order, int n_order)
{
    const fa_graph *g = e->g;
    Onnx__GraphProto *gp = ealloc(e, sizeof *gp);
    if (!gp) goto oom;
    onnx__graph_proto__init(gp);
    mp->graph = gp;
    mp->has_ir_version = 1;
    mp->ir_version = g->ir_version > 0 ? g->ir_version : 8;
    mp->producer_name = (char *)(g->producer_name ? g->producer_name : "fuse-advise");
    mp->producer_version = (char *)(g->producer_version ? g->producer_version : FA_VERSION_STRING);
    gp->name = (char *)(g->name ? g->name : "graph");

    mp->n_opset_import = (size_t)g->n_opsets;
    mp->opset_import = ealloc(e, sizeof *mp->opset_import * (size_t)(g->n_opsets + 1));
    if (!mp->opset_import) goto oom;
    for (int i = 0; i < g->n_opsets; i++) {
        Onnx__OperatorSetIdProto *op = ealloc(e, sizeof *op);
        if (!op) goto oom;
        onnx__operator_set_id_proto__init(op);
        op->domain = (char *)g->opsets[i].domain;
        op->has_version = 1;
        op->version = g->opsets[i].version;
        mp->opset_import[i] = op;
    }

    /* which tensors the exported graph uses: read by a live node, or a graph output */
    unsigned char *used = ealloc(e, (size_t)g->n_tensors + 1);
    if (!used) goto oom;
    for (int k = 0; k < n_order; k++) {
        const fa_node *n = g->nodes[order[k]];
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0) used[n->inputs[i]] = 1;
        for (int i = 0; i < n->n_outputs; i++)
            if (n->outputs[i] >= 0) used[n->outputs[i]] = 1;
    }
    for (int i = 0; i < g->n_outputs; i++) used[g->outputs[i]] = 1;

    gp->node = ealloc(e, sizeof *gp->node * (size_t)(n_order + 1));
    if (!gp->node) goto oom;
    gp->n_node = (size_t)n_order;
    for (int k = 0; k < n_order; k++) {
        const fa_node *n = g->nodes[order[k]];
        Onnx__NodeProto *np = ealloc(e, sizeof *np);
        if (!np) goto oom;
        onnx__node_proto__init(np);
        np->name = (char *)n->name;
        np->op_type = (char *)n->op_type;
        if (n->domain && *n->domain) np->domain = (char *)n->domain;
        np->n_input = (size_t)n->n_inputs;
        np->input = ealloc(e, sizeof(char *) * (size_t)(n->n_inputs + 1));
        np->n_output = (size_t)n->n_outputs;
        np->output = ealloc(e, sizeof(char *) * (size_t)(n->n_outputs + 1));
        np->n_attribute = (size_t)n->n_attrs;
        np->attribute = ealloc(e, sizeof *np->attribute * (size_t)(n->n_attrs + 1));
        if (!np->input || !np->output || !np->attribute) goto oom;
        for (int i = 0; i < n->n_inputs; i++)
            np->input[i] = (char *)(n->inputs[i] >= 0 ? g->tensors[n->inputs[i]]->name : "");
        for (int i = 0; i < n->n_outputs; i++)
            np->output[i] = (char *)(n->outputs[i] >= 0 ? g->tensors[n->outputs[i]]->name : "");
        for (int i = 0; i < n->n_attrs; i++) {
            np->attribute[i] = mk_attr(e, &n->attrs[i]);
            if (!np->attribute[i]) {
                if (e->oom) goto oom;
                return fa_ctx_error(e->ctx, FA_ERR_UNSUPPORTED,
                                    "export: node '%s' (%s): attribute '%s' of type %s cannot be "
                                    "written",
                                    n->name, n->op_type, n->attrs[i].name,
                                    attr_type_name(n->attrs[i].type));
            }
        }
        gp->node[k] = np;
    }

    /* initializers (tensor-id order) and graph inputs */
    gp->initializer = ealloc(e, sizeof *gp->initializer * (size_t)(g->n_tensors + 1));
    gp->input = ealloc(e, sizeof *gp->input * (size_t)(g->n_inputs + g->n_tensors + 1));
    gp->output = ealloc(e, sizeof *gp->output * (size_t)(g->n_outputs + 1));
    gp->value_info = ealloc(e, sizeof *gp->value_info * (size_t)(g->n_tensors + 1));
    if (!gp->initializer || !gp->input || !gp->output || !gp->value_info) goto oom;
    for (int tid = 0; tid < g->n_tensors; tid++) {
        const fa_tensor *t = g->tensors[tid];
        if (!used[tid] || !is_exported_const(g, t) || (t->flags & FA_TENSOR_GRAPH_INPUT)) continue;
        if (t->rank < 0 || !fa_dtype_size(t->dtype) || t->nbytes != fa_tensor_bytes(t))
            return fa_ctx_error(e->ctx, FA_ERR_INTERNAL,
                                "export: constant tensor '%s' has %zu bytes of data but shape/dtype "
                                "say %" PRIu64,
                                t->name, t->nbytes, fa_tensor_bytes(t));
        Onnx__TensorProto *tp = mk_tensor(e, t, t->name);
        if (!tp) goto oom;
        gp->initializer[gp->n_initializer++] = tp;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        Onnx__ValueInfoProto *vi = mk_value_info(e, g->tensors[g->inputs[i]]);
        if (!vi) goto oom;
        gp->input[gp->n_input++] = vi;
    }
    /* IR version < 4 (onnx/IR.md, "Graphs"): every initializer must also be a graph input. */
    if (g->ir_version > 0 && g->ir_version < 4)
        for (size_t k = 0; k < gp->n_initializer; k++) {
            int tid = fa_graph_find_tensor(g, gp->initializer[k]->name);
            if (tid < 0) continue;
            Onnx__ValueInfoProto *vi = mk_value_info(e, g->tensors[tid]);
            if (!vi) goto oom;
            gp->input[gp->n_input++] = vi;
        }
    for (int i = 0; i < g->n_outputs; i++) {
        Onnx__ValueInfoProto *vi = mk_value_info(e, g->tensors[g->outputs[i]]);
        if (!vi) goto oom;
        gp->output[gp->n_output++] = vi;
    }
    /* value_info: known types/shapes of intermediate tensors */
    for (int tid = 0; tid < g->n_tensors; tid++) {
        const fa_tensor *t = g->tensors[tid];
        if (!used[tid] || t->rank < 0 || t->dtype == FA_DTYPE_UNDEFINED) continue;
        if (t->flags & (FA_TENSOR_GRAPH_INPUT | FA_TENSOR_GRAPH_OUTPUT)) continue;
        if (is_exported_const(g, t)) continue;
        Onnx__ValueInfoProto *vi = mk_value_info(e, t);
        if (!vi) goto oom;
        gp->value_info[gp->n_value_info++] = vi;
    }
    return FA_OK;
oom:
    return fa_ctx_error(e->ctx, FA_ERR_NOMEM, "export: out of memory");
}

fa_status fa_onnx_export_buffer(fa_ctx *ctx, const fa_graph *g, uint8_t **out_data, size_t *out_len)
{
    exporter e = {ctx, g, fa_arena_create(1 << 16), false};
    if (!e.a) return fa_ctx_error(ctx, FA_ERR_NOMEM, "export: out of memory");
    int *order = NULL;
    int n_order = export_order(&e, &order);
    if (n_order < 0) {
        fa_arena_free(e.a);
        return fa_ctx_status(ctx) != FA_OK ? fa_ctx_status(ctx) : FA_ERR_INTERNAL;
    }
    Onnx__ModelProto mp;
    onnx__model_proto__init(&mp);
    fa_status s = build_model(&e, &mp, order, n_order);
    free(order);
    if (s == FA_OK) {
        size_t sz = onnx__model_proto__get_packed_size(&mp);
        uint8_t *buf = malloc(sz ? sz : 1);
        if (!buf) {
            s = fa_ctx_error(ctx, FA_ERR_NOMEM, "export: cannot allocate %zu bytes", sz);
        } else {
            onnx__model_proto__pack(&mp, buf);
            *out_data = buf;
            *out_len = sz;
        }
    }
    fa_arena_free(e.a);
    return s;
}

/* The initializers of gp of at least min_bytes moved to the data file `location` (ExternalData.md:
 * data_location EXTERNAL, external_data location/offset/length), each at an offset that is a
 * multiple of FA_ONNX_EXTERNAL_ALIGN so a reader can map it in place; parts (room for 2 per
 * initializer) gets the file's bytes: zero padding, then the tensor's bytes. Returns the number
 * of parts, -1 when out of memory. */
static int to_external(exporter *e, Onnx__GraphProto *gp, const char *location, uint64_t min_bytes, fa_write_part *parts,
                       const fa_tensor **moved)
{
    int np = 0, nm = 0;
    uint64_t off = 0;
    for (size_t k = 0; k < gp->n_initializer; k++) {
        Onnx__TensorProto *tp = gp->initializer[k];
        if (!tp->has_raw_data || tp->raw_data.len < min_bytes) continue;
        uint64_t at = (off + FA_ONNX_EXTERNAL_ALIGN - 1) / FA_ONNX_EXTERNAL_ALIGN * FA_ONNX_EXTERNAL_ALIGN;
        Onnx__StringStringEntryProto **kv = ealloc(e, sizeof *kv * 3);
        char *os = ealloc(e, 24), *ls = ealloc(e, 24);
        if (!kv || !os || !ls) return -1;
        snprintf(os, 24, "%" PRIu64, at);
        snprintf(ls, 24, "%zu", tp->raw_data.len);
        const char *keys[3] = {"location", "offset", "length"}, *vals[3] = {location, os, ls};
        for (int i = 0; i < 3; i++) {
            if (!(kv[i] = ealloc(e, sizeof *kv[i]))) return -1;
            onnx__string_string_entry_proto__init(kv[i]);
            kv[i]->key = (char *)keys[i];
            kv[i]->value = (char *)vals[i];
        }
        if (at > off) parts[np++] = (fa_write_part){NULL, (size_t)(at - off)};
        parts[np++] = (fa_write_part){tp->raw_data.data, tp->raw_data.len};
        moved[nm++] = fa_graph_find_tensor(e->g, tp->name) >= 0 ? e->g->tensors[fa_graph_find_tensor(e->g, tp->name)] : NULL;
        off = at + tp->raw_data.len;
        tp->has_raw_data = 0;
        tp->raw_data.data = NULL;
        tp->raw_data.len = 0;
        tp->has_data_location = 1;
        tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        tp->n_external_data = 3;
        tp->external_data = kv;
    }
    moved[nm] = NULL;
    return np;
}

fa_status fa_onnx_export_with(fa_ctx *ctx, const fa_graph *g, const char *path, const fa_onnx_export_options *o)
{
    uint64_t above = o && o->external_above ? o->external_above : FA_ONNX_PROTOBUF_LIMIT;
    uint64_t min_bytes = o && o->external_min_bytes ? o->external_min_bytes : FA_ONNX_EXTERNAL_MIN_BYTES;
    exporter e = {ctx, g, fa_arena_create(1 << 16), false};
    if (!e.a) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: export: out of memory", path);
    int *order = NULL;
    int n_order = export_order(&e, &order);
    if (n_order < 0) {
        fa_arena_free(e.a);
        fa_status s = fa_ctx_status(ctx) != FA_OK ? fa_ctx_status(ctx) : FA_ERR_INTERNAL;
        return fa_ctx_wrap(ctx, s, "%s: ", path);
    }
    Onnx__ModelProto mp;
    onnx__model_proto__init(&mp);
    fa_status s = build_model(&e, &mp, order, n_order);
    free(order);
    fa_write_part *parts = NULL;
    const fa_tensor **moved = NULL;
    int np = 0;
    char data_path[PATH_MAX] = "";
    if (!s && onnx__model_proto__get_packed_size(&mp) > above) {
        /* over protobuf's 2 GB (or the caller's bound): the weights go to PATH.data beside it */
        const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
        char *location = ealloc(&e, strlen(base) + 8);
        size_t ni = mp.graph->n_initializer;
        parts = calloc(2 * ni + 1, sizeof *parts);
        moved = calloc(ni + 1, sizeof *moved);
        if (!location || !parts || !moved) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: export: out of memory", path);
        else if ((size_t)snprintf(data_path, sizeof data_path, "%s.data", path) >= sizeof data_path)
            s = fa_ctx_error(ctx, FA_ERR_IO, "%s: path too long for its external data file", path);
        if (!s) {
            sprintf(location, "%s.data", base);
            np = to_external(&e, mp.graph, location, min_bytes, parts, moved);
            if (np < 0) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: export: out of memory", path);
        }
        if (!s) s = fa_write_file_parts_atomic(ctx, data_path, parts, np);
        /* written: the pages of weights read in place from a mapped model leave the resident set */
        for (int k = 0; !s && moved[k]; k++)
            if (moved[k]->blob) fa_blob_release_pages(moved[k]->blob);
    }
    if (!s) {
        size_t sz = onnx__model_proto__get_packed_size(&mp);
        if (sz > FA_ONNX_PROTOBUF_LIMIT)
            s = fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "%s: the model's structure alone packs to %zu bytes, over protobuf's "
                             "limit of %" PRIu64, path, sz, (uint64_t)FA_ONNX_PROTOBUF_LIMIT);
        uint8_t *buf = s ? NULL : malloc(sz ? sz : 1);
        if (!s && !buf) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: export: cannot allocate %zu bytes", path, sz);
        if (!s) {
            onnx__model_proto__pack(&mp, buf);
            s = fa_write_file_atomic(ctx, path, buf, sz);
        }
        free(buf);
    }
    free(parts);
    free(moved);
    fa_arena_free(e.a);
    return s;
}

fa_status fa_onnx_export(fa_ctx *ctx, const fa_graph *g, const char *path)
{
    return fa_onnx_export_with(ctx, g, path, NULL);
}
