/* runtime/layout — where a target that prefers a blocked activation layout keeps each tensor, and
 * which reorders its executor runs as kernels of their own (fa_layout_plan_make). */
#include "runtime-impl.h"

#include <stdlib.h>
#include <string.h>

static fa_status add_reorder(fa_ctx *ctx, fa_layout_plan *p, int *cap, int tensor, int consumer, int input, fa_layout from,
                             fa_layout to)
{
    for (int i = 0; i < p->n_reorders; i++) /* one reorder per (tensor, layout): consumers share it */
        if (p->reorders[i].tensor == tensor && p->reorders[i].to == to) return FA_OK;
    if (p->n_reorders == *cap) {
        int nc = *cap ? 2 * *cap : 8;
        fa_reorder *r = realloc(p->reorders, sizeof *r * (size_t)nc);
        if (!r) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory planning layouts");
        p->reorders = r;
        *cap = nc;
    }
    p->reorders[p->n_reorders++] = (fa_reorder){tensor, consumer, input, from, to};
    return FA_OK;
}

fa_status fa_layout_plan_make(fa_ctx *ctx, const fa_target_iface *t, const fa_graph *g, fa_layout_plan *out)
{
    memset(out, 0, sizeof *out);
    out->layout = calloc((size_t)g->n_tensors + 1, sizeof *out->layout); /* all FA_LAYOUT_PLAIN (0) */
    if (!out->layout) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory planning layouts");
    if (!t->preferred_layout) return FA_OK; /* every kernel reads and writes PLAIN: nothing to do */
    int cap = 0;
    fa_status s = FA_OK;
    for (int k = 0; k < g->n_topo && !s; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        fa_layout want = t->preferred_layout(g, n);
        if ((unsigned)want >= FA_LAYOUT_COUNT) {
            s = fa_ctx_error(ctx, FA_ERR_INTERNAL, "target %s: node '%s': layout %d out of range", t->name, n->name, (int)want);
            break;
        }
        for (int i = 0; i < n->n_inputs && !s; i++) { /* activation input 0 in `want`, the rest PLAIN */
            int x = n->inputs[i];
            if (x < 0) continue;
            fa_layout need = i == 0 ? want : FA_LAYOUT_PLAIN;
            if (out->layout[x] != need) s = add_reorder(ctx, out, &cap, x, n->id, i, out->layout[x], need);
        }
        if (n->n_outputs > 0 && n->outputs[0] >= 0) out->layout[n->outputs[0]] = want;
    }
    for (int i = 0; i < g->n_outputs && !s; i++) { /* a graph boundary is always PLAIN */
        int y = g->outputs[i];
        if (out->layout[y] != FA_LAYOUT_PLAIN) s = add_reorder(ctx, out, &cap, y, -1, i, out->layout[y], FA_LAYOUT_PLAIN);
    }
    if (s) fa_layout_plan_free(out);
    return s;
}

void fa_layout_plan_free(fa_layout_plan *p)
{
    if (!p) return;
    free(p->layout);
    free(p->reorders);
    memset(p, 0, sizeof *p);
}
