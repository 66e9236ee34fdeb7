/* graph/op_math — the unary and binary op tables of graph/op_math.h as data, and their
 * code-generator form. */
#include "op_math.h"

#include "graph/graph.h"

#include <stdbool.h>
#include <string.h>

static const fa_unary_math k_math[] = {
#define ROW_(ID, NAME, AA, DA, AB, DB, AG, DG, EXPR, BOUND) {FA_UNARY_##ID, NAME, {AA, AB, AG}, {DA, DB, DG}, FA_STR(EXPR)},
    FA_UNARY_MATH(ROW_)
#undef ROW_
};
_Static_assert(sizeof k_math / sizeof k_math[0] == FA_UNARY_COUNT, "k_math: one row per value");

const fa_unary_math *fa_unary_math_get(fa_unary_op op)
{
    return (unsigned)op < FA_UNARY_COUNT ? &k_math[op] : NULL;
}

const fa_unary_math *fa_unary_math_find(const char *name)
{
    for (int i = 0; name && i < FA_UNARY_COUNT; i++)
        if (!strcmp(k_math[i].name, name)) return &k_math[i];
    return NULL;
}

/* Rows picked by a string attribute of the node (the first listed value is the default). */
static const struct {
    fa_unary_op op;
    const char *attr, *value;
} k_select[] = {
    {FA_UNARY_GELU, "approximate", "none"},
    {FA_UNARY_GELU_TANH, "approximate", "tanh"},
};

/* Parameters that are inputs from an opset on (ONNX Clip-11 moved min/max to inputs 1 and 2). */
static const struct {
    fa_unary_op op;
    int from_opset;
    int input[3];
} k_param_inputs[] = {
    {FA_UNARY_CLIP, 11, {1, 2, -1}},
};

const fa_unary_math *fa_unary_math_for_node(const struct fa_node *n, const char **select_attr)
{
    if (select_attr) *select_attr = NULL;
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx")) return NULL;
    const fa_unary_math *m = fa_unary_math_find(n->op_type);
    if (!m) return NULL;
    for (size_t i = 0; i < sizeof k_select / sizeof k_select[0]; i++) {
        if (strcmp(k_math[k_select[i].op].name, m->name)) continue;
        /* the first row listed for this name holds the default value */
        const char *v = fa_node_attr_string(n, k_select[i].attr, k_select[i].value);
        if (select_attr) *select_attr = k_select[i].attr;
        for (size_t j = i; j < sizeof k_select / sizeof k_select[0]; j++)
            if (!strcmp(k_math[k_select[j].op].name, m->name) && !strcmp(k_select[j].value, v))
                return &k_math[k_select[j].op];
        return NULL;
    }
    return m;
}

bool fa_unary_math_selected(fa_unary_op op)
{
    for (size_t i = 0; i < sizeof k_select / sizeof k_select[0]; i++)
        if (k_select[i].op == op) return true;
    return false;
}

int fa_unary_math_param_input(const struct fa_node *n, const fa_unary_math *m, int k)
{
    if (k < 0 || k > 2) return -1;
    for (size_t i = 0; i < sizeof k_param_inputs / sizeof k_param_inputs[0]; i++)
        if (k_param_inputs[i].op == m->op && (n->opset <= 0 || n->opset >= k_param_inputs[i].from_opset))
            return k_param_inputs[i].input[k]; /* opset 0: a graph without opset_import, the latest */
    return -1;
}

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* expr with its one-letter names replaced: x -> $0, then y -> $1 (binary) or a, b, g -> $a, $b,
 * $g (unary); every other token copied. snprintf's return convention. */
static size_t expr_template(const char *expr, bool binary, char *buf, size_t cap)
{
    size_t n = 0;
    const char *s = expr;
    while (*s) {
        const char *tok = s;
        const char *rep = NULL;
        if ((*s >= '0' && *s <= '9') || (*s == '.' && s[1] >= '0' && s[1] <= '9')) {
            /* a pp-number ("1.0f", "1e-5f"): copied whole, so its letters are never names */
            while (ident_char(*s) || *s == '.' || ((*s == '-' || *s == '+') && (s[-1] == 'e' || s[-1] == 'E'))) s++;
        } else if (ident_char(*s)) {
            while (ident_char(*s)) s++;
            if (s - tok == 1 && binary) rep = *tok == 'x' ? "$0" : *tok == 'y' ? "$1" : NULL;
            else if (s - tok == 1) rep = *tok == 'x' ? "$0" : *tok == 'a' ? "$a" : *tok == 'b' ? "$b" : *tok == 'g' ? "$g" : NULL;
        } else {
            s++;
        }
        size_t len = rep ? strlen(rep) : (size_t)(s - tok);
        for (size_t i = 0; i < len; i++, n++)
            if (n + 1 < cap) buf[n] = rep ? rep[i] : tok[i];
    }
    if (cap) buf[n < cap ? n : cap - 1] = 0;
    return n;
}

size_t fa_unary_math_template(const fa_unary_math *m, char *buf, size_t cap)
{
    return expr_template(m->expr, false, buf, cap);
}

static const fa_binary_math k_binary[] = {
#define BROW_(ID, NAME, EXPR, BOUND) {FA_BINARY_##ID, NAME, FA_STR(EXPR)},
    FA_BINARY_MATH(BROW_)
#undef BROW_
};
_Static_assert(sizeof k_binary / sizeof k_binary[0] == FA_BINARY_COUNT, "k_binary: one row per value");

const fa_binary_math *fa_binary_math_find(const char *name)
{
    if (name && !strcmp(name, "Sum")) return &k_binary[FA_BINARY_ADD]; /* variadic Add */
    for (int i = 0; name && i < FA_BINARY_COUNT; i++)
        if (!strcmp(k_binary[i].name, name)) return &k_binary[i];
    return NULL;
}

size_t fa_binary_math_template(const fa_binary_math *m, char *buf, size_t cap)
{
    return expr_template(m->expr, true, buf, cap);
}

const char *fa_unary_math_select_value(const fa_unary_math *m, const char **attr)
{
    *attr = NULL;
    for (size_t i = 0; i < sizeof k_select / sizeof k_select[0]; i++)
        if (k_select[i].op == m->op) {
            *attr = k_select[i].attr;
            return k_select[i].value;
        }
    return NULL;
}
