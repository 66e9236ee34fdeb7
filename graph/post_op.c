/* graph/post_op — typed epilogue post-ops: names, rendering, and their attribute form on a
 * fused node. */
#include "graph/post_op.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    bool binary;
} k_kinds[FA_POST_OP_COUNT] = {
#define FA_POST_OP_ROW_(ID, NAME, BIN) {NAME, BIN},
    FA_POST_OP_KINDS(FA_POST_OP_ROW_)
#undef FA_POST_OP_ROW_
};

const char *fa_post_op_name(fa_post_op_kind k)
{
    return (int)k >= 0 && k < FA_POST_OP_COUNT ? k_kinds[k].name : "?";
}

bool fa_post_op_is_binary(fa_post_op_kind k) { return (int)k >= 0 && k < FA_POST_OP_COUNT && k_kinds[k].binary; }

bool fa_post_op_kind_of_name(const char *name, fa_post_op_kind *out)
{
    for (int k = 0; k < FA_POST_OP_COUNT; k++)
        if (!strcmp(k_kinds[k].name, name)) {
            *out = (fa_post_op_kind)k;
            return true;
        }
    return false;
}

int fa_post_op_format(const fa_post_op *op, char *buf, size_t cap)
{
    const char *nm = fa_post_op_name(op->kind);
    switch (op->kind) {
    case FA_POST_OP_LEAKY_RELU:
    case FA_POST_OP_ELU:
    case FA_POST_OP_SWISH: return snprintf(buf, cap, "%s(%.9g)", nm, op->alpha);
    case FA_POST_OP_CLIP:
    case FA_POST_OP_LINEAR: return snprintf(buf, cap, "%s(%.9g,%.9g)", nm, op->alpha, op->beta);
    default: return snprintf(buf, cap, "%s", nm);
    }
}

bool fa_post_ops_set_node(fa_graph *g, fa_node *n, const fa_post_op *ops, int n_ops)
{
    if (n_ops <= 0) return true;
    int64_t kinds[64], operand[64];
    float alpha[64], beta[64];
    if (n_ops > 64) return false;
    for (int i = 0; i < n_ops; i++) {
        kinds[i] = ops[i].kind;
        alpha[i] = ops[i].alpha;
        beta[i] = ops[i].beta;
        operand[i] = fa_post_op_is_binary(ops[i].kind) ? ops[i].operand : -1;
    }
    return fa_node_add_attr_ints(g, n, "post_op_kinds", kinds, n_ops) && fa_node_add_attr_floats(g, n, "post_op_alpha", alpha, n_ops) &&
           fa_node_add_attr_floats(g, n, "post_op_beta", beta, n_ops) &&
           fa_node_add_attr_ints(g, n, "post_op_operand", operand, n_ops);
}

int fa_post_ops_of_node(const fa_node *n, fa_post_op *out, int cap, char *why, size_t why_cap)
{
    const fa_attr *k = fa_node_attr(n, "post_op_kinds"), *a = fa_node_attr(n, "post_op_alpha"),
                  *b = fa_node_attr(n, "post_op_beta"), *o = fa_node_attr(n, "post_op_operand");
    if (!k && !a && !b && !o) return 0;
    if (!k || !a || !b || !o || k->type != FA_ATTR_INTS || a->type != FA_ATTR_FLOATS || b->type != FA_ATTR_FLOATS ||
        o->type != FA_ATTR_INTS || a->n != k->n || b->n != k->n || o->n != k->n) {
        snprintf(why, why_cap, "node '%s': post_op_kinds, post_op_alpha, post_op_beta and post_op_operand must be "
                 "INTS, FLOATS, FLOATS, INTS of one length", n->name);
        return -1;
    }
    if (k->n > cap) {
        snprintf(why, why_cap, "node '%s': %d post-ops, at most %d", n->name, k->n, cap);
        return -1;
    }
    for (int i = 0; i < k->n; i++) {
        if (k->ints[i] < 0 || k->ints[i] >= FA_POST_OP_COUNT) {
            snprintf(why, why_cap, "node '%s': post_op_kinds[%d] = %lld is no post-op kind", n->name, i, (long long)k->ints[i]);
            return -1;
        }
        fa_post_op p = {(fa_post_op_kind)k->ints[i], a->floats[i], b->floats[i], -1};
        if (fa_post_op_is_binary(p.kind)) {
            if (o->ints[i] < 0 || o->ints[i] >= n->n_inputs || n->inputs[o->ints[i]] < 0) {
                snprintf(why, why_cap, "node '%s': post_op_operand[%d] = %lld is not one of its %d inputs", n->name, i,
                         (long long)o->ints[i], n->n_inputs);
                return -1;
            }
            p.operand = (int)o->ints[i];
        }
        out[i] = p;
    }
    return k->n;
}
