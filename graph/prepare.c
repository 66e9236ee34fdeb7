/* graph/prepare — bind symbolic dims, infer shapes and fold constants in one topological
 * pass; fa_graph_load = import (or zoo) + prepare. */
#include "ops-impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fa_status fa_shape_binding_parse(fa_ctx *ctx, const char *text, fa_shape_binding *out)
{
    const char *eq = strrchr(text, '=');
    if (!eq || eq == text)
        return fa_ctx_error(ctx, FA_ERR_USAGE,
                            "--shape '%s': expected NAME=DIMS (e.g. input=1x3x224x224 or batch=8)",
                            text);
    fa_shape_binding b;
    memset(&b, 0, sizeof b);
    b.name = text; /* caller keeps text alive; name ends at '=' — copy below */
    static __thread char namebuf[8][256];
    static __thread int slot;
    size_t nl = (size_t)(eq - text);
    if (nl >= sizeof namebuf[0])
        return fa_ctx_error(ctx, FA_ERR_USAGE, "--shape '%.40s...': name too long", text);
    char *nm = namebuf[slot++ & 7];
    memcpy(nm, text, nl);
    nm[nl] = 0;
    b.name = nm;
    const char *p = eq + 1;
    int rank = 0;
    if (!*p) return fa_ctx_error(ctx, FA_ERR_USAGE, "--shape '%s': no dims after '=' (byte %zu)", text, nl + 1);
    while (*p) {
        if (!isdigit((unsigned char)*p))
            return fa_ctx_error(ctx, FA_ERR_USAGE, "--shape '%s': expected a digit at byte %zu",
                                text, (size_t)(p - text));
        errno = 0;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (errno || v < 0 || v > ((long long)1 << 40))
            return fa_ctx_error(ctx, FA_ERR_USAGE, "--shape '%s': dim out of range at byte %zu",
                                text, (size_t)(p - text));
        if (rank >= FA_MAX_RANK)
            return fa_ctx_error(ctx, FA_ERR_USAGE, "--shape '%s': more than %d dims", text,
                                FA_MAX_RANK);
        b.dims[rank++] = v;
        p = end;
        if (*p == 'x' || *p == 'X' || *p == ',') {
            p++;
            if (!*p)
                return fa_ctx_error(ctx, FA_ERR_USAGE, "--shape '%s': trailing separator at byte %zu",
                                    text, (size_t)(p - text));
        } else if (*p) {
            return fa_ctx_error(ctx, FA_ERR_USAGE, "--shape '%s': unexpected '%c' at byte %zu", text,
                                *p, (size_t)(p - text));
        }
    }
    b.rank = rank;
    *out = b;
    return FA_OK;
}

/* The node that writes tensor tid, or NULL (a graph input, a constant, unknown). */

/* Constant folding's budget for one load (fa_graph_prepare): the floor of the bytes folds write
 * and of those they read and write together (else 4 and 16 times the model's constants), the FLOPs one fold may do (fa_node_cost: 2^32, a
 * 1600^3 MatMul, about a second on one core) and all folds together. */
#define FA_FOLD_BYTES_FLOOR ((uint64_t)256 << 20)
#define FA_FOLD_WRITE_FACTOR 4
#define FA_FOLD_TOUCH_FACTOR 16
#define FA_FOLD_FLOPS_MAX ((uint64_t)1 << 32)
#define FA_FOLD_FLOPS_TOTAL ((uint64_t)1 << 34)
static const fa_node *producer_of(const fa_graph *g, int tid)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const fa_node *n = g->nodes[i];
        for (int o = 0; n && o < n->n_outputs; o++)
            if (n->outputs[o] == tid) return n;
    }
    return NULL;
}

/* Apply bindings: a binding whose name is a graph input replaces the whole shape (rank must
 * match); with keep_unsupported, one that names an output of an unsupported node gives that
 * output its shape; otherwise a rank-1 binding names a dim_param and binds it everywhere. */
static fa_status apply_bindings(fa_ctx *ctx, fa_graph *g, const fa_load_options *opt)
{
    for (int b = 0; b < opt->n_bindings; b++) {
        const fa_shape_binding *sb = &opt->bindings[b];
        int tid = fa_graph_find_tensor(g, sb->name);
        bool is_input = false;
        for (int i = 0; i < g->n_inputs; i++) is_input |= g->inputs[i] == tid;
        const fa_node *prod = tid >= 0 && !is_input && opt->keep_unsupported ? producer_of(g, tid) : NULL;
        if (prod && !prod->op && sb->rank >= 0) {
            fa_tensor *t = g->tensors[tid];
            fa_tensor_set_shape(t, t->dtype ? t->dtype : FA_DTYPE_FLOAT, sb->rank, sb->dims);
            continue;
        }
        if (tid >= 0 && is_input) {
            fa_tensor *t = g->tensors[tid];
            if (t->rank >= 0 && t->rank != sb->rank)
                return fa_ctx_error(ctx, FA_ERR_USAGE,
                                    "--shape %s: input '%s' has rank %d, binding gives %d dims",
                                    sb->name, t->name, t->rank, sb->rank);
            for (int d = 0; d < sb->rank; d++) {
                if (t->rank >= 0 && t->dims[d] >= 0 && t->dims[d] != sb->dims[d])
                    return fa_ctx_error(ctx, FA_ERR_USAGE,
                                        "--shape %s: input '%s' dim %d is fixed at %lld, binding gives %lld",
                                        sb->name, t->name, d, (long long)t->dims[d],
                                        (long long)sb->dims[d]);
            }
            fa_dtype dt = t->dtype ? t->dtype : FA_DTYPE_FLOAT;
            fa_tensor_set_shape(t, dt, sb->rank, sb->dims);
            continue;
        }
        if (sb->rank != 1)
            return fa_ctx_error(ctx, FA_ERR_USAGE,
                                "--shape %s: no graph input of that name, and a symbolic dim binding takes one value",
                                sb->name);
        bool used = false;
        for (int i = 0; i < g->n_inputs; i++) {
            fa_tensor *t = g->tensors[g->inputs[i]];
            for (int d = 0; d < t->rank; d++)
                if (t->dim_params[d] && strcmp(t->dim_params[d], sb->name) == 0) {
                    t->dims[d] = sb->dims[0];
                    used = true;
                }
        }
        if (!used)
            return fa_ctx_error(ctx, FA_ERR_USAGE,
                                "--shape %s: no graph input and no symbolic dim of that name", sb->name);
    }
    return FA_OK;
}

/* Bind every input dim still symbolic after the user's bindings to FA_DIM_DEFAULT, recording
 * each distinct dim once in g->dim_defaults (a dim_param shared by several inputs is one dim and
 * takes one value). With `refuse`, nothing is bound and one message lists every unbound dim. */
static fa_status bind_dim_defaults(fa_ctx *ctx, fa_graph *g, bool refuse)
{
    fa_buf unbound;
    fa_buf_init(&unbound);
    int n_unbound = 0;
    const char **names = NULL;
    int n_names = 0;
    /* every input without a shape is named at once, each with the --shape that binds it */
    int n_shapeless = 0;
    const fa_tensor *first = NULL;
    for (int i = 0; i < g->n_inputs; i++) {
        const fa_tensor *t = g->tensors[g->inputs[i]];
        if (t->rank >= 0) continue;
        if (!first) first = t;
        fa_buf_printf(&unbound, "%s--shape %s=DIMS", n_shapeless ? " " : "", t->name);
        n_shapeless++;
    }
    if (n_shapeless == 1) {
        fa_buf_free(&unbound);
        return fa_ctx_error(ctx, FA_ERR_INPUT, "graph input '%s' has no shape; bind it with --shape %s=DIMS",
                            first->name, first->name);
    }
    if (n_shapeless > 1) {
        fa_status st = fa_ctx_error(ctx, FA_ERR_INPUT, "%d graph inputs have no shape; bind each: %s", n_shapeless,
                                    unbound.data ? unbound.data : "");
        fa_buf_free(&unbound);
        return st;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        fa_tensor *t = g->tensors[g->inputs[i]];
        for (int d = 0; d < t->rank; d++) {
            if (t->dims[d] >= 0) continue;
            char item[512];
            const char *param = t->dim_params[d];
            if (param) snprintf(item, sizeof item, "%s", param);
            else snprintf(item, sizeof item, "%s[%d]", t->name, d);
            bool seen = false;
            for (int k = 0; k < n_names && !seen; k++) seen = !strcmp(names[k], item);
            if (!seen) {
                const char **nn = fa_arena_alloc(g->arena, sizeof *nn * (size_t)(n_names + 1));
                char *copy = fa_arena_strdup(g->arena, item);
                if (!nn || !copy) {
                    fa_buf_free(&unbound);
                    return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory binding symbolic dims");
                }
                if (n_names) memcpy(nn, names, sizeof *nn * (size_t)n_names);
                nn[n_names++] = copy;
                names = nn;
                if (param)
                    fa_buf_printf(&unbound, "%s'%s' (input '%s' dim %d; --shape %s=N)", n_unbound ? ", " : "", param,
                                  t->name, d, param);
                else
                    fa_buf_printf(&unbound, "%sinput '%s' dim %d (unnamed; --shape %s=DIMS)", n_unbound ? ", " : "",
                                  t->name, d, t->name);
                n_unbound++;
            }
            if (!refuse) t->dims[d] = FA_DIM_DEFAULT;
        }
    }
    fa_status st = FA_OK;
    if (refuse && n_unbound)
        st = fa_ctx_error(ctx, FA_ERR_INPUT, "%d symbolic input dim%s unbound (--no-dim-defaults): %s", n_unbound,
                          n_unbound == 1 ? " is" : "s are", unbound.data);
    else {
        g->n_dim_defaults = n_names;
        g->dim_defaults = names;
    }
    fa_buf_free(&unbound);
    return st;
}

int fa_graph_unsupported_text(const fa_graph *g, fa_buf *b)
{
    int total = 0;
    bool *done = calloc((size_t)g->n_nodes + 1, 1);
    if (!done) return 0;
    size_t start = b->len;
    for (int i = 0; i < g->n_nodes; i++) {
        const fa_node *n = g->nodes[i];
        if (!n || n->folded || done[i] || fa_op_find(n->domain, n->op_type)) continue;
        /* every node of this op, in file order */
        int count = 0;
        for (int j = i; j < g->n_nodes; j++) {
            const fa_node *m = g->nodes[j];
            if (!m || m->folded || done[j] || strcmp(m->op_type, n->op_type) || strcmp(m->domain, n->domain)) continue;
            done[j] = true;
            count++;
        }
        fa_buf_printf(b, "%s%s%s%s at node%s ", b->len > start ? "; " : "", *n->domain ? n->domain : "",
                      *n->domain ? "." : "", n->op_type, count == 1 ? "" : "s");
        int shown = 0;
        for (int j = i; j < g->n_nodes && shown < 4; j++) {
            const fa_node *m = g->nodes[j];
            if (!m || m->folded || strcmp(m->op_type, n->op_type) || strcmp(m->domain, n->domain)) continue;
            fa_buf_printf(b, "%s'%s'", shown ? ", " : "", m->name);
            shown++;
        }
        if (count > shown) fa_buf_printf(b, " and %d more", count - shown);
        total += count;
    }
    free(done);
    return total;
}

/* The refusal of a graph with nodes of unsupported ops: every op and its nodes at once. */
static fa_status refuse_unsupported(fa_ctx *ctx, const fa_graph *g, int n_unsupported)
{
    fa_buf b;
    fa_buf_init(&b);
    fa_graph_unsupported_text(g, &b);
    fa_status st;
    if (n_unsupported == 1)
        st = fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "unsupported op %s (the ops fuse-advise runs: %s)",
                          b.data ? b.data : "?", FA_SUPPORTED_OPS_DOC);
    else
        st = fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "%d nodes of unsupported ops: %s (the ops fuse-advise runs: %s)",
                          n_unsupported, b.data ? b.data : "?", FA_SUPPORTED_OPS_DOC);
    fa_buf_free(&b);
    return st;
}

/* The value of symbolic dim `param` as the graph inputs were bound, or -1. */
static int64_t bound_dim_param(const fa_graph *g, const char *param)
{
    for (int i = 0; i < g->n_inputs; i++) {
        const fa_tensor *t = g->tensors[g->inputs[i]];
        for (int d = 0; d < t->rank; d++)
            if (t->dim_params[d] && !strcmp(t->dim_params[d], param) && t->dims[d] >= 0) return t->dims[d];
    }
    return -1;
}

static bool shape_known(const fa_tensor *t)
{
    if (t->rank < 0) return false;
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] < 0) return false;
    return true;
}

/* With keep_unsupported: an unsupported node, or one whose inputs have no shape because they
 * come from one, is kept out of the analysis (fa_node.opaque, op NULL). Its outputs keep the
 * shape the model's value_info gives (symbolic dims resolved as the inputs were bound) or a
 * --shape binding gave; any other output has no shape (rank -1). */
static bool make_opaque(fa_ctx *ctx, fa_graph *g, fa_node *n, fa_status *st)
{
    bool unknown_input = false;
    for (int i = 0; i < n->n_inputs; i++) {
        const fa_tensor *t = fa_graph_in(g, n, i);
        if (t && !shape_known(t)) unknown_input = true;
    }
    if (n->op && !unknown_input) return false;
    n->opaque = true;
    n->op = NULL;
    *st = FA_OK;
    for (int o = 0; o < n->n_outputs; o++) {
        fa_tensor *t = fa_graph_out(g, n, o);
        if (!t || t->rank < 0) continue;
        for (int d = 0; d < t->rank; d++)
            if (t->dims[d] < 0 && t->dim_params[d]) t->dims[d] = bound_dim_param(g, t->dim_params[d]);
        if (!shape_known(t)) {
            t->rank = -1;
            continue;
        }
        char what[600];
        snprintf(what, sizeof what, "node '%s' (%s): output '%s'", n->name, n->op_type, t->name);
        if ((*st = fa_tensor_check_size(ctx, t, what))) return true;
    }
    return true;
}

static bool reaches_shape_slot(const fa_graph *g, int tid, unsigned char *visited);

/* Whether an output of node n reaches a slot whose value sets a shape (reaches_shape_slot); true
 * when that cannot be worked out (out of memory: folding is then the safe side). */
static bool feeds_a_shape(const fa_graph *g, const fa_node *n)
{
    unsigned char *visited = calloc((size_t)g->n_tensors + 1, 1);
    if (!visited) return true;
    bool r = false;
    for (int o = 0; o < n->n_outputs && !r; o++)
        if (n->outputs[o] >= 0) r = reaches_shape_slot(g, n->outputs[o], visited);
    free(visited);
    return r;
}

static fa_status fold_node(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_value in[64], out[16];
    if (n->n_inputs > 64 || n->n_outputs > 16) return FA_OK;
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    for (int i = 0; i < n->n_inputs; i++) {
        fa_tensor *t = fa_graph_in(g, n, i);
        if (!t) continue;
        in[i].data = t->data;
        in[i].dtype = t->dtype;
        in[i].rank = t->rank;
        memcpy(in[i].dims, t->dims, sizeof t->dims);
    }
    fa_status st = FA_OK;
    int k;
    for (k = 0; k < n->n_outputs; k++) {
        fa_tensor *t = fa_graph_out(g, n, k);
        if (!t) continue;
        size_t bytes = fa_tensor_bytes(t);
        out[k].data = malloc(bytes ? bytes : 1);
        if (!out[k].data) { st = fa_ctx_error(ctx, FA_ERR_NOMEM, "folding node '%s': out of memory", n->name); break; }
        out[k].dtype = t->dtype;
        out[k].rank = t->rank;
        memcpy(out[k].dims, t->dims, sizeof t->dims);
    }
    if (st == FA_OK) st = n->op->kernel(ctx, n, in, n->n_inputs, out, n->n_outputs, 1);
    if (st == FA_OK) {
        for (int i = 0; i < n->n_outputs; i++) {
            fa_tensor *t = fa_graph_out(g, n, i);
            if (!t) continue;
            void *d = out[i].data;
            out[i].data = NULL;
            if ((st = fa_tensor_adopt_data(ctx, t, d, (size_t)fa_tensor_bytes(t))) != FA_OK) break;
        }
        if (st == FA_OK) {
            n->folded = true;
            g->n_folded++;
        }
    }
    for (int i = 0; i < n->n_outputs; i++) free(out[i].data);
    return st;
}

static bool can_fold(const fa_graph *g, const fa_node *n, uint64_t max_bytes)
{
    if (!n->op || !n->op->kernel || (n->op->flags & FA_OPF_NO_FOLD)) return false;
    bool any_output_is_graph_output = false;
    uint64_t out_bytes = 0;
    for (int i = 0; i < n->n_outputs; i++) {
        const fa_tensor *t = fa_graph_out(g, n, i);
        if (!t) continue;
        if (fa_tensor_numel(t) < 0) return false;
        out_bytes += fa_tensor_bytes(t);
        any_output_is_graph_output |= (t->flags & FA_TENSOR_GRAPH_OUTPUT) != 0;
    }
    /* A graph output stays computed by a node so the model keeps its interface. */
    if (any_output_is_graph_output) return false;
    if (out_bytes > max_bytes) return false;
    if (n->op->flags & FA_OPF_SHAPE_ONLY) {
        const fa_tensor *x = fa_graph_in(g, n, 0);
        return x && fa_tensor_numel(x) >= 0;
    }
    /* CastLike reads only input 1's element type, never its values (ONNX CastLike-15). */
    if (strcmp(n->op_type, "CastLike") == 0) {
        const fa_tensor *x = fa_graph_in(g, n, 0);
        return x && (x->flags & FA_TENSOR_CONST) && x->data;
    }
    for (int i = 0; i < n->n_inputs; i++) {
        const fa_tensor *t = fa_graph_in(g, n, i);
        if (t && !((t->flags & FA_TENSOR_CONST) && t->data)) return false;
    }
    return true;
}

fa_status fa_graph_apply_shape_options(fa_ctx *ctx, fa_graph *g, const fa_load_options *opt)
{
    if (!opt) return FA_OK;
    fa_status st = apply_bindings(ctx, g, opt);
    if (st) return st;
    if (opt->batch > 0)
        for (int i = 0; i < g->n_inputs; i++) {
            fa_tensor *t = g->tensors[g->inputs[i]];
            if (t->rank > 0) t->dims[0] = opt->batch;
        }
    return FA_OK;
}

fa_status fa_graph_prepare(fa_ctx *ctx, fa_graph *g, const fa_load_options *opt)
{
    fa_load_options dflt = {0};
    if (!opt) opt = &dflt;
    /* every node of an unsupported op is named at once, before any shape is inferred */
    int n_unsupported = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && !g->nodes[i]->folded && !g->nodes[i]->op) n_unsupported++;
    if (n_unsupported && !opt->keep_unsupported) return refuse_unsupported(ctx, g, n_unsupported);
    g->n_unsupported = n_unsupported;
    fa_status st = fa_graph_apply_shape_options(ctx, g, opt);
    if (st) return st;
    st = bind_dim_defaults(ctx, g, opt->no_dim_defaults);
    if (st) return st;
    st = fa_graph_index(ctx, g);
    if (st) return st;
    /* every shape a node's rule starts from is within the limits (graph/graph.h): inputs as bound,
     * initializers and constants */
    for (int i = 0; i < g->n_tensors; i++) {
        const fa_tensor *t = g->tensors[i];
        if (!(t->flags & (FA_TENSOR_GRAPH_INPUT | FA_TENSOR_CONST))) continue;
        char what[600];
        snprintf(what, sizeof what, "%s '%s'", t->flags & FA_TENSOR_GRAPH_INPUT ? "graph input" : "initializer", t->name);
        if ((st = fa_tensor_check_size(ctx, t, what))) return st;
    }
    uint64_t max_bytes = opt->max_const_bytes ? opt->max_const_bytes : ((uint64_t)1 << 30);
    /* The whole load's folding budget, two byte counts and two work counts: the bytes folds
     * write (held as new constants) at most FA_FOLD_WRITE_FACTOR times the model's own constants,
     * the bytes they read and write together (their time) at most FA_FOLD_TOUCH_FACTOR times,
     * each with the floor FA_FOLD_BYTES_FLOOR; FA_FOLD_FLOPS_MAX of work for one fold,
     * FA_FOLD_FLOPS_TOTAL for all (a shape value included). A 337-byte model whose
     * ConstantOfShape fed 8 Negs of 1 GiB each held 10.5 GB at load, a 156-byte one whose MatMul
     * multiplied two 4096 x 4096 constants took 16 s (the sixth attack pass); a real model's
     * weight standardization (BiT: ReduceMean, Sub, Mul, ReduceMean, BatchNormalization, Reshape
     * over each convolution's weights, the weights stored three times) touches about 11 times
     * its weights and writes 4 times them: under one budget of four times the constants for both,
     * five of its convolutions kept computed weights and ran 20x slower than ONNX Runtime's. A
     * node past the budget is not folded: it runs with the model, under the executor's memory
     * limit (--max-memory). */
    uint64_t const_bytes = 0, written_bytes = 0, touched_bytes = 0, folded_flops = 0;
    for (int i = 0; i < g->n_tensors; i++)
        if ((g->tensors[i]->flags & FA_TENSOR_CONST) && g->tensors[i]->data) const_bytes += fa_tensor_bytes(g->tensors[i]);
    uint64_t write_budget = fa_u64_mul_sat(FA_FOLD_WRITE_FACTOR, const_bytes),
             touch_budget = fa_u64_mul_sat(FA_FOLD_TOUCH_FACTOR, const_bytes);
    if (write_budget < FA_FOLD_BYTES_FLOOR) write_budget = FA_FOLD_BYTES_FLOOR;
    if (touch_budget < FA_FOLD_BYTES_FLOOR) touch_budget = FA_FOLD_BYTES_FLOOR;
    for (int k = 0; k < g->n_topo; k++) {
        fa_node *n = g->nodes[g->topo[k]];
        if (opt->keep_unsupported && make_opaque(ctx, g, n, &st)) {
            if (st) return st;
            continue;
        }
        if (n->n_inputs < n->op->min_inputs ||
            (n->op->max_inputs >= 0 && n->n_inputs > n->op->max_inputs))
            return fa_node_error(ctx, n, "has %d inputs, expected %d..%d", n->n_inputs,
                                 n->op->min_inputs, n->op->max_inputs);
        if (n->n_outputs < n->op->min_outputs ||
            (n->op->max_outputs >= 0 && n->n_outputs > n->op->max_outputs))
            return fa_node_error(ctx, n, "has %d outputs, expected %d..%d", n->n_outputs,
                                 n->op->min_outputs, n->op->max_outputs);
        if ((st = fa_node_check_attrs(ctx, g, n))) return st;
        st = n->op->infer(ctx, g, n);
        if (st) return st;
        for (int o = 0; o < n->n_outputs; o++) {
            fa_tensor *t = fa_graph_out(g, n, o);
            if (!t) continue;
            for (int d = 0; d < t->rank; d++)
                if (t->dims[d] < 0)
                    return fa_node_error(ctx, n, "output '%s' dim %d could not be inferred", t->name, d);
            char what[600];
            snprintf(what, sizeof what, "node '%s' (%s): output '%s'", n->name, n->op_type, t->name);
            if ((st = fa_tensor_check_size(ctx, t, what))) return st; /* before anything is allocated */
        }
        /* --no-fold keeps constant subgraphs as nodes, but a value a shape rule reads (Reshape's
         * shape, ConstantOfShape's, Slice's starts ...) is folded all the same: every real export
         * computes some shapes from constants, and none loaded with the option */
        if (can_fold(g, n, max_bytes) && (!opt->no_fold || feeds_a_shape(g, n))) {
            /* bytes a fold touches (its inputs read and outputs written: what a sort or a gather
             * over a large constant costs beyond its FLOPs formula) and its FLOPs */
            uint64_t ob = 0, ib = 0;
            for (int o = 0; o < n->n_outputs; o++)
                if (fa_graph_out(g, n, o)) ob += fa_tensor_bytes(fa_graph_out(g, n, o));
            for (int i = 0; i < n->n_inputs; i++)
                if (fa_graph_in(g, n, i)) ib += fa_tensor_bytes(fa_graph_in(g, n, i));
            fa_op_cost c = {0};
            fa_node_cost(g, n, &c);
            bool work_ok = c.flops <= FA_FOLD_FLOPS_MAX && folded_flops + c.flops <= FA_FOLD_FLOPS_TOTAL;
            /* a small shape value is folded past the byte budget (every export computes shapes from
             * constants), never past the work one: a MatMul of 2^34 FLOPs feeding a Reshape's shape
             * took 12 s a copy at load (the seventh attack pass) */
            bool bytes_ok = (written_bytes + ob <= write_budget && touched_bytes + ob + ib <= touch_budget) ||
                            (ob <= ((uint64_t)1 << 20) && feeds_a_shape(g, n));
            if (work_ok && bytes_ok) {
                st = fold_node(ctx, g, n);
                if (st) return st;
                written_bytes += ob;
                touched_bytes += ob + ib;
                folded_flops += c.flops;
            }
        }
        if (opt->progress && (k + 1 == g->n_topo || (k & 255) == 255))
            opt->progress(opt->progress_user, "prepare", k + 1, g->n_topo);
    }
    return fa_graph_index(ctx, g);
}

/* Prepare path's model again with one more binding; the failure's message (malloc'd), or NULL
 * when it prepares. *ok: it ran at all (import and memory). */
static char *prepare_with(const char *path, const fa_load_options *o, const fa_shape_binding *extra, bool *ok)
{
    fa_ctx *c = fa_ctx_create();
    fa_shape_binding *b = malloc(sizeof *b * (size_t)(o->n_bindings + 1));
    fa_graph *g = NULL;
    char *msg = NULL;
    *ok = c && b;
    if (*ok) {
        if (o->n_bindings) memcpy(b, o->bindings, sizeof *b * (size_t)o->n_bindings);
        b[o->n_bindings] = *extra;
        fa_load_options p = *o;
        p.bindings = b;
        p.n_bindings = o->n_bindings + 1;
        if (fa_onnx_import(c, path, &g)) *ok = false;
        else if (fa_graph_prepare(c, g, &p)) msg = strdup(fa_ctx_errmsg(c));
    }
    fa_graph_free(g);
    free(b);
    fa_ctx_free(c);
    return msg;
}

/* Whether failure messages a and b are the same failure: the same node ("node 'NAME' (OP): ",
 * compared whole: 'mm1' and 'mm2' are two nodes) and the same words after it once every run of
 * digits is taken as one mark (the shapes in it may carry the dim's other value). */
static bool same_failure(const char *a, const char *b)
{
    const char *ea = strstr(a, "): "), *eb = strstr(b, "): ");
    if (!ea != !eb || (ea && (ea - a != eb - b || strncmp(a, b, (size_t)(ea - a))))) return false;
    for (;;) {
        bool da = *a >= '0' && *a <= '9', db = *b >= '0' && *b <= '9';
        if (da != db) return false;
        if (da) {
            while (*a >= '0' && *a <= '9') a++;
            while (*b >= '0' && *b <= '9') b++;
            continue;
        }
        if (*a != *b) return false;
        if (!*a) return true;
        a++, b++;
    }
}

/* A failed prepare of a model whose symbolic dims were bound to FA_DIM_DEFAULT: each defaulted
 * dim is bound, one at a time, to 2 and to each size the failure's message names (at most 4,
 * 2..2^24): a dim for which one of them removes the failure or moves it (another node, other
 * words) is one the failing shapes depend on (polygraphy's attention_head: 'batch' is a MatMul's
 * K, fixed at batch 100, a size the message names); one whose values only change the numbers of
 * the same failure is not (DistilBERT at sequence 200 over its 128 positions failed the same way
 * at any batch, and the hint had named 'batch'). Those named in ctx's message with the --shape
 * that binds them. g: the failed graph (its inputs as bound). */
static void name_defaulted_dims(fa_ctx *ctx, const char *path, const fa_load_options *o, const fa_graph *g)
{
    char *failure = strdup(fa_ctx_errmsg(ctx));
    fa_buf named;
    fa_buf_init(&named);
    int n_named = 0;
    /* the values tried: 2, then the sizes the message names */
    int64_t tries[5] = {2};
    int n_tries = 1;
    for (const char *q = failure; q && *q && n_tries < 5;) {
        if (*q < '0' || *q > '9') { q++; continue; }
        int64_t v = 0;
        while (*q >= '0' && *q <= '9') { if (v <= (1 << 24)) v = v * 10 + (*q - '0'); q++; }
        bool seen = v < 2 || v > (1 << 24);
        for (int t = 0; t < n_tries && !seen; t++) seen = tries[t] == v;
        if (!seen) tries[n_tries++] = v;
    }
    for (int k = 0; failure && k < g->n_dim_defaults && k < 8; k++) {
        const char *dim = g->dim_defaults[k];
        fa_shape_binding extra;
        memset(&extra, 0, sizeof extra);
        const char *br = strrchr(dim, '[');
        char hint[600];
        int d = 0; /* the dim bound: 0 of a dim_param's one-value binding, D of an INPUT[D] */
        if (!br) { /* a dim_param: bound by name */
            extra.name = dim;
            extra.rank = 1;
            snprintf(hint, sizeof hint, "'%s' (--shape %s=N)", dim, dim);
        } else { /* "INPUT[D]": the input's whole shape as bound, dim D set */
            char input[512];
            snprintf(input, sizeof input, "%.*s", (int)(br - dim), dim);
            int tid = fa_graph_find_tensor(g, input);
            d = atoi(br + 1);
            if (tid < 0 || d < 0 || d >= g->tensors[tid]->rank) continue;
            const fa_tensor *t = g->tensors[tid];
            extra.name = t->name;
            extra.rank = t->rank;
            memcpy(extra.dims, t->dims, sizeof extra.dims);
            snprintf(hint, sizeof hint, "input '%s' dim %d (--shape %s=DIMS)", input, d, input);
        }
        bool depends = false;
        for (int t = 0; t < n_tries && !depends; t++) {
            extra.dims[d] = tries[t];
            bool ran;
            char *other = prepare_with(path, o, &extra, &ran);
            depends = ran && (!other || !same_failure(other, failure));
            free(other);
        }
        if (depends) {
            fa_buf_printf(&named, "%s%s", n_named ? ", " : "", hint);
            n_named++;
        }
    }
    if (n_named)
        fa_ctx_error(ctx, fa_ctx_status(ctx),
                     "%s; these shapes depend on the symbolic dim%s %s, bound to the default %d because no --shape "
                     "named %s: bind %s to the model's real size",
                     failure, n_named == 1 ? "" : "s", named.data, FA_DIM_DEFAULT, n_named == 1 ? "it" : "them",
                     n_named == 1 ? "it" : "them");
    fa_buf_free(&named);
    free(failure);
}

fa_status fa_graph_load(fa_ctx *ctx, const char *model, const fa_load_options *opt, fa_graph **out)
{
    fa_graph *g = NULL;
    fa_status st;
    if (strncmp(model, "zoo:", 4) == 0)
        st = fa_zoo_build(ctx, model + 4, (opt && opt->batch > 0) ? opt->batch : 1, &g);
    else
        st = fa_onnx_import_progress(ctx, model, opt ? opt->progress : NULL, opt ? opt->progress_user : NULL, &g);
    if (st) return st;
    fa_load_options o = opt ? *opt : (fa_load_options){0};
    if (strncmp(model, "zoo:", 4) == 0) o.batch = 0; /* zoo applied the batch itself */
    st = fa_graph_prepare(ctx, g, &o);
    if (st) {
        if (strncmp(model, "zoo:", 4) != 0) {
            if (g->n_dim_defaults > 0 && st != FA_ERR_NOMEM) name_defaulted_dims(ctx, model, &o, g);
            fa_ctx_wrap(ctx, st, "%s: ", model);
        }
        fa_graph_free(g);
        return st;
    }
    *out = g;
    return FA_OK;
}

fa_status fa_graph_freeze_input(fa_ctx *ctx, fa_graph *g, const char *name, const fa_value *v)
{
    int tid = fa_graph_find_tensor(g, name);
    int pos = -1;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == tid) pos = i;
    if (tid < 0 || pos < 0) return fa_ctx_error(ctx, FA_ERR_INPUT, "'%s' is not a graph input", name);
    fa_tensor *t = g->tensors[tid];
    /* worded as the executor's own check of an input (runtime/cpu/exec_cpu.c): "expected WHAT [SHAPE],
     * got WHAT [SHAPE]", the model's declared shape with its symbolic dims by name */
    bool same = (!t->dtype || t->dtype == v->dtype) && (t->rank < 0 || t->rank == v->rank);
    for (int d = 0; same && d < v->rank && t->rank >= 0; d++) same = t->dims[d] < 0 || t->dims[d] == v->dims[d];
    if (!same) {
        char want[128], got[160];
        size_t o = 0;
        got[0] = '\0';
        for (int d = 0; d < v->rank && o + 24 < sizeof got; d++)
            o += (size_t)snprintf(got + o, sizeof got - o, "%s%lld", d ? "x" : "", (long long)v->dims[d]);
        if (!v->rank) snprintf(got, sizeof got, "a scalar");
        return fa_ctx_error(ctx, FA_ERR_INPUT, "input '%s': expected %s [%s], got %s [%s]", name,
                            t->dtype ? fa_dtype_name(t->dtype) : fa_dtype_name(v->dtype),
                            t->rank >= 0 ? fa_tensor_shape_str(t, want, sizeof want) : "any shape", fa_dtype_name(v->dtype), got);
    }
    fa_tensor_set_shape(t, v->dtype, v->rank, v->dims);
    fa_status st = fa_tensor_set_data(ctx, t, v->data, (size_t)fa_value_numel(v) * fa_dtype_size(v->dtype));
    if (st) return st;
    t->flags = (t->flags & ~(unsigned)FA_TENSOR_GRAPH_INPUT) | FA_TENSOR_INITIALIZER | FA_TENSOR_CONST;
    memmove(&g->inputs[pos], &g->inputs[pos + 1], sizeof(int) * (size_t)(g->n_inputs - pos - 1));
    g->n_inputs--;
    return FA_OK;
}

/* Does the value of tensor tid reach a slot whose value sets a shape (Reshape's shape,
 * Slice's starts, Unsqueeze's axes, Range's bounds, ConstantOfShape's shape, a reduction's
 * axes, TopK's k, ...)? Values flow through every slot of elementwise and broadcast ops, the
 * index slot of the Gather family, every input of Concat and slot 0 (the data) of any other
 * op; any other slot of a known op is taken as a shape slot, and a slot of an unknown op too
 * (freezing an input that did not need it costs nothing but folding). Shape and Size read only
 * their input's shape. (Expand is a broadcast op whose input 1 is a shape.) visited: one byte
 * per tensor. */
static bool reaches_shape_slot(const fa_graph *g, int tid, unsigned char *visited)
{
    if (visited[tid]) return false;
    visited[tid] = 1;
    const int *cons;
    int nc = fa_graph_consumers(g, tid, &cons);
    for (int c = 0; c < nc; c++) {
        const fa_node *n = g->nodes[cons[c]];
        if (n->op && (n->op->flags & FA_OPF_SHAPE_ONLY)) continue;
        for (int slot = 0; slot < n->n_inputs; slot++) {
            if (n->inputs[slot] != tid) continue;
            bool value_slot;
            if (!n->op) value_slot = false;
            else if (!strcmp(n->op_type, "ConstantOfShape") || !strcmp(n->op_type, "Range")) value_slot = false;
            else if (!strcmp(n->op_type, "Expand")) value_slot = slot == 0; /* broadcast, but input 1 is a shape */
            else if (n->op->pattern == FA_PATTERN_ELEMWISE || n->op->pattern == FA_PATTERN_BROADCAST) value_slot = true;
            else if (!strcmp(n->op_type, "Concat")) value_slot = true;
            else if (!strncmp(n->op_type, "Gather", 6) || !strncmp(n->op_type, "Scatter", 7)) value_slot = slot <= 1;
            else value_slot = slot == 0;
            if (!value_slot) return true;
            for (int o = 0; o < n->n_outputs; o++)
                if (n->outputs[o] >= 0 && reaches_shape_slot(g, n->outputs[o], visited)) return true;
        }
    }
    return false;
}

bool fa_graph_input_is_shape_param(const fa_graph *g, int tid)
{
    const fa_tensor *t = g->tensors[tid];
    bool integer = t->dtype == FA_DTYPE_INT64 || t->dtype == FA_DTYPE_INT32;
    if (integer) {
        if (!g->cons_start) return true; /* not indexed: assume it sets a shape */
        unsigned char *visited = calloc((size_t)g->n_tensors + 1, 1);
        if (!visited) return true;
        bool r = reaches_shape_slot(g, tid, visited);
        free(visited);
        if (r) return true;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const fa_node *n = g->nodes[i];
        if (strcmp(n->op_type, "Resize") && strcmp(n->op_type, "Upsample")) continue;
        for (int k = 1; k < n->n_inputs; k++)
            if (n->inputs[k] == tid) return true;
    }
    return false;
}
