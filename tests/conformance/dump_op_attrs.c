/* tests/conformance/dump_op_attrs — print the op registry's attribute lists (fa_attr_spec), one
 * line per attribute: DOMAIN OP NAME TYPE ACCEPT COUNT UNTIL (tab-separated; "-" for an op that
 * reads none, and for an empty field), for op_attrs_vs_onnx.py to check against onnx.defs. */
#include <stdio.h>

#include "graph/graph.h"

int main(void)
{
    for (int i = 0; fa_op_at(i); i++) {
        const fa_op *op = fa_op_at(i);
        const char *dom = op->domain && *op->domain ? op->domain : "ai.onnx";
        if (!op->attrs || !op->attrs[0].name) {
            printf("%s\t%s\t-\t-\t-\t0\t0\n", dom, op->name);
            continue;
        }
        for (const fa_attr_spec *a = op->attrs; a->name; a++)
            printf("%s\t%s\t%s\t%s\t%s\t%d\t%d\n", dom, op->name, a->name, fa_attr_type_name(a->type),
                   a->accept ? a->accept : "-", (int)a->count, a->until);
    }
    return 0;
}
