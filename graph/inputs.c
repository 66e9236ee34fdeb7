/* graph/inputs — the random values a run feeds a graph input when the user gives none: one
 * rule for the cpu executor, the cuda executor and the applier's captures. */
#include "ops-impl.h"

#include <stdlib.h>
#include <string.h>

/* Ops whose output carries the values of input `slot` unchanged (only moved or repeated), so
 * an index read further down is still one of the input's values. */
static bool passes_values(const fa_node *n, int slot)
{
    static const char *const ops[] = {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Expand",
                                      "Slice", "Concat", "Transpose", "Tile", "Split"};
    if (slot != 0 && strcmp(n->op_type, "Concat")) return false;
    if (!strcmp(n->op_type, "Gather") || !strcmp(n->op_type, "GatherElements")) return slot == 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(n->op_type, ops[i])) return true;
    return false;
}

/* The smallest table size that tensor tid's values index, through value-passing ops; 0 when
 * they index nothing. visited: one byte per tensor. */
static int64_t index_bound(const fa_graph *g, int tid, unsigned char *visited)
{
    if (visited[tid]) return 0;
    visited[tid] = 1;
    int64_t bound = 0;
    const int *cons;
    int nc = fa_graph_consumers(g, tid, &cons);
    for (int c = 0; c < nc; c++) {
        const fa_node *n = g->nodes[cons[c]];
        for (int slot = 0; slot < n->n_inputs; slot++) {
            if (n->inputs[slot] != tid) continue;
            int64_t b = 0;
            const fa_tensor *x = fa_graph_in(g, n, 0);
            bool gather = !strcmp(n->op_type, "Gather") || !strcmp(n->op_type, "GatherElements");
            if (slot == 1 && x && x->rank > 0 && gather) {
                int64_t axis = fa_node_attr_int(n, "axis", 0);
                if (axis < 0) axis += x->rank;
                if (axis >= 0 && axis < x->rank) b = x->dims[axis];
            } else if (slot == 1 && x && x->rank > 0 && !strcmp(n->op_type, "GatherND")) {
                int64_t bd = fa_node_attr_int(n, "batch_dims", 0);
                for (int64_t d = bd; d < x->rank; d++)
                    if (d >= 0 && (b == 0 || x->dims[d] < b)) b = x->dims[d];
            } else if (passes_values(n, slot)) {
                for (int o = 0; o < n->n_outputs; o++)
                    if (n->outputs[o] >= 0) {
                        int64_t ob = index_bound(g, n->outputs[o], visited);
                        if (ob > 0 && (b == 0 || ob < b)) b = ob;
                    }
            }
            if (b > 0 && (bound == 0 || b < bound)) bound = b;
        }
    }
    return bound;
}

int64_t fa_graph_input_index_bound(const fa_graph *g, int tid)
{
    unsigned char *visited = calloc((size_t)g->n_tensors + 1, 1);
    if (!visited) return 1; /* out of memory: 0 is in range of every table */
    int64_t b = index_bound(g, tid, visited);
    free(visited);
    return b;
}

void fa_graph_fill_input(const fa_graph *g, int tid, fa_rng *r, fa_value *v)
{
    int64_t ne = fa_value_numel(v), range = 2;
    bool is_float = v->dtype == FA_DTYPE_FLOAT || v->dtype == FA_DTYPE_DOUBLE || v->dtype == FA_DTYPE_FLOAT16 ||
                    v->dtype == FA_DTYPE_BFLOAT16;
    if (!is_float && v->dtype != FA_DTYPE_BOOL) {
        int64_t b = fa_graph_input_index_bound(g, tid);
        if (b > 0) range = b < 4 ? b : 4;
    }
    for (int64_t k = 0; k < ne; k++) {
        double x;
        if (is_float) x = fa_rng_uniform(r, -1.0f, 1.0f);
        else if (v->dtype == FA_DTYPE_BOOL) x = (double)(fa_rng_u64(r) & 1);
        else x = (double)(fa_rng_u64(r) % (uint64_t)range);
        fa_store_from_double(v->data, v->dtype, k, x);
    }
}
