/* tests/unit/test_op_attrs — every attribute a node carries is checked against its op's
 * declared list (fa_attr_spec) when the graph is prepared: a wrong type, an attribute the op
 * does not read, a value it does not implement, a count the spec fixes, or an attribute its
 * opset no longer has is refused naming the node, the attribute and the value or the expected
 * and found types, never ignored. The first tests go through fa_graph_prepare with models
 * that prepared silently before (each attribute was ignored); the last walk the whole registry. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

/* A one-node graph: float inputs x0.. of the given shapes (NULL names skip a slot), outputs y0... */
typedef struct one {
    fa_ctx *ctx;
    fa_graph *g;
    fa_node *n;
} one;

static one one_new(const char *op, int opset, int nin, const int *ranks, const int64_t dims[][8], int nout)
{
    one o;
    o.ctx = fa_ctx_create();
    o.g = fa_graph_create("t");
    assert_int_equal(fa_graph_set_opset(o.ctx, o.g, "", opset), FA_OK);
    const char *ins[8], *outs[8];
    static const char *const in_names[] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"};
    static const char *const out_names[] = {"y0", "y1", "y2", "y3", "y4", "y5", "y6", "y7"};
    for (int i = 0; i < nin; i++) ins[i] = in_names[i];
    for (int i = 0; i < nout; i++) outs[i] = out_names[i];
    o.n = fa_graph_add_node(o.ctx, o.g, "node_under_test", op, "", nin, ins, nout, outs);
    assert_non_null(o.n);
    for (int i = 0; i < nin; i++) {
        fa_tensor *t = fa_graph_in(o.g, o.n, i);
        fa_tensor_set_shape(t, FA_DTYPE_FLOAT, ranks[i], dims[i]);
        assert_int_equal(fa_graph_add_input(o.ctx, o.g, t->id), FA_OK);
    }
    for (int i = 0; i < nout; i++) assert_int_equal(fa_graph_add_output(o.ctx, o.g, fa_graph_out(o.g, o.n, i)->id), FA_OK);
    return o;
}

static void one_free(one *o)
{
    fa_graph_free(o->g);
    fa_ctx_free(o->ctx);
}

/* Prepare must fail with `want` and a message holding every string in `parts` (NULL-ended). */
static void expect_refused(one *o, fa_status want, const char *const *parts)
{
    fa_status st = fa_graph_prepare(o->ctx, o->g, NULL);
    const char *msg = fa_ctx_errmsg(o->ctx);
    if (st != want) fprintf(stderr, "status %d, message: %s\n", st, msg);
    assert_int_equal(st, want);
    for (const char *const *p = parts; *p; p++) {
        if (!strstr(msg, *p)) fprintf(stderr, "message lacks '%s': %s\n", *p, msg);
        assert_non_null(strstr(msg, *p));
    }
}

static const int r4[] = {4, 4};
static const int64_t conv_dims[][8] = {{1, 2, 5, 5}, {3, 2, 3, 3}};

/* A Conv whose kernel_shape is FLOATS ran as if kernel_shape were absent. */
static void test_attr_wrong_type_conv_kernel_shape_floats_refused(void **state)
{
    (void)state;
    one o = one_new("Conv", 17, 2, r4, conv_dims, 1);
    fa_node_add_attr_floats(o.g, o.n, "kernel_shape", (const float[]){3, 3}, 2);
    expect_refused(&o, FA_ERR_INPUT,
                   (const char *const[]){"node_under_test", "kernel_shape", "FLOATS", "expected INTS", NULL});
    one_free(&o);
}

/* A Gemm whose alpha is an INT (2) computed with alpha = 1. */
static void test_attr_wrong_type_gemm_alpha_int_refused(void **state)
{
    (void)state;
    static const int r2[] = {2, 2};
    static const int64_t d[][8] = {{2, 3}, {3, 4}};
    one o = one_new("Gemm", 13, 2, r2, d, 1);
    fa_node_add_attr_int(o.g, o.n, "alpha", 2);
    expect_refused(&o, FA_ERR_INPUT, (const char *const[]){"node_under_test", "'alpha'", "INT", "expected FLOAT", NULL});
    one_free(&o);
}

/* An attribute the op does not read (Relu has none) was ignored. */
static void test_attr_unknown_refused_with_value(void **state)
{
    (void)state;
    static const int r1[] = {2};
    static const int64_t d[][8] = {{2, 3}};
    one o = one_new("Relu", 14, 1, r1, d, 1);
    fa_node_add_attr_float(o.g, o.n, "alpha", 0.25f);
    expect_refused(&o, FA_ERR_UNSUPPORTED, (const char *const[]){"node_under_test", "'alpha'", "0.25", "not supported", NULL});
    one_free(&o);
}

/* A value the op does not implement: LayerNormalization computes its statistics in float32,
 * stash_type = 11 (double) asked for more and was ignored. */
static void test_attr_unimplemented_value_refused(void **state)
{
    (void)state;
    static const int r2[] = {2, 1};
    static const int64_t d[][8] = {{2, 4}, {4}};
    one o = one_new("LayerNormalization", 17, 2, r2, d, 1);
    fa_node_add_attr_int(o.g, o.n, "stash_type", 11);
    expect_refused(&o, FA_ERR_UNSUPPORTED, (const char *const[]){"node_under_test", "'stash_type'", "= 11", "implemented: 1", NULL});
    one_free(&o);
}

/* Clip's min/max became inputs in opset 11: a Clip-11 min attribute was silently unused. */
static void test_attr_removed_in_node_opset_refused(void **state)
{
    (void)state;
    static const int r1[] = {2};
    static const int64_t d[][8] = {{2, 3}};
    one o = one_new("Clip", 13, 1, r1, d, 1);
    fa_node_add_attr_float(o.g, o.n, "min", 0.0f);
    expect_refused(&o, FA_ERR_UNSUPPORTED, (const char *const[]){"node_under_test", "'min'", "Clip-13", NULL});
    one_free(&o);
    /* ... while Clip-6 reads it */
    o = one_new("Clip", 6, 1, r1, d, 1);
    fa_node_add_attr_float(o.g, o.n, "min", 0.0f);
    assert_int_equal(fa_graph_prepare(o.ctx, o.g, NULL), FA_OK);
    one_free(&o);
}

/* A count the spec ties to the input's rank: a 2-D Conv with three strides. */
static void test_attr_count_fixed_by_rank_refused(void **state)
{
    (void)state;
    one o = one_new("Conv", 17, 2, r4, conv_dims, 1);
    fa_node_add_attr_ints(o.g, o.n, "strides", (const int64_t[]){1, 1, 1}, 3);
    expect_refused(&o, FA_ERR_INPUT, (const char *const[]){"node_under_test", "'strides'", "3 values", "expected 2", NULL});
    one_free(&o);
}

/* A string shown in a message is cut and stripped of control bytes. */
static void test_attr_value_in_message_is_sanitized(void **state)
{
    (void)state;
    one o = one_new("Conv", 17, 2, r4, conv_dims, 1);
    fa_node_add_attr_string(o.g, o.n, "auto_pad", "BAD\n#include \"/etc/passwd\" and a long tail of text that goes on");
    expect_refused(&o, FA_ERR_UNSUPPORTED, (const char *const[]){"'auto_pad'", "BAD?#include", "...", NULL});
    assert_null(strchr(fa_ctx_errmsg(o.ctx), '\n'));
    one_free(&o);
}

/* ---- the whole registry: every declared attribute of every op ---- */

static fa_attr_type other_type(fa_attr_type t)
{
    switch (t) {
    case FA_ATTR_INT: return FA_ATTR_FLOAT;
    case FA_ATTR_FLOAT: return FA_ATTR_INT;
    case FA_ATTR_STRING: return FA_ATTR_INTS;
    case FA_ATTR_INTS: return FA_ATTR_FLOATS;
    case FA_ATTR_FLOATS: return FA_ATTR_INTS;
    case FA_ATTR_STRINGS: return FA_ATTR_STRING;
    default: return FA_ATTR_INT;
    }
}

/* Add attribute `name` of type t with a plain value (1 / 1.0 / "x" / [1] ...). */
static void add_attr_of_type(fa_graph *g, fa_node *n, const char *name, fa_attr_type t, const char *sval)
{
    switch (t) {
    case FA_ATTR_INT: fa_node_add_attr_int(g, n, name, 1); break;
    case FA_ATTR_FLOAT: fa_node_add_attr_float(g, n, name, 1.0f); break;
    case FA_ATTR_STRING: fa_node_add_attr_string(g, n, name, sval ? sval : "x"); break;
    case FA_ATTR_INTS: fa_node_add_attr_ints(g, n, name, (const int64_t[]){1}, 1); break;
    case FA_ATTR_FLOATS: fa_node_add_attr_floats(g, n, name, (const float[]){1.0f}, 1); break;
    case FA_ATTR_STRINGS: fa_node_add_attr_strings(g, n, name, (const char *const[]){sval ? sval : "x"}, 1); break;
    default: break;
    }
}

/* A node of op `op` (no inputs: counts tied to input 0's rank are not checked here). */
static fa_node *bare_node(fa_graph *g, fa_ctx *ctx, const fa_op *op, int opset)
{
    char out[32];
    snprintf(out, sizeof out, "y%d", g->n_nodes);
    fa_node *n = fa_graph_add_node(ctx, g, "node_under_test", op->name, op->domain, 0, NULL, 1,
                                   (const char *const[]){out});
    if (!n) fprintf(stderr, "%s: %s\n", op->name, fa_ctx_errmsg(ctx));
    assert_non_null(n);
    n->opset = opset;
    return n;
}

/* Every declared attribute: the other type is refused naming both types, an undeclared name is
 * refused, and a value outside an accept list is refused naming it. */
static void test_attr_registry_every_declared_attribute_checked(void **state)
{
    (void)state;
    int ops = 0, attrs = 0, lists = 0;
    for (int i = 0; fa_op_at(i); i++) {
        const fa_op *op = fa_op_at(i);
        ops++;
        for (const fa_attr_spec *a = op->attrs; a && a->name; a++) {
            if (a->type == FA_ATTR_TENSOR) continue;
            int opset = a->until ? a->until : 30;
            fa_ctx *ctx = fa_ctx_create();
            fa_graph *g = fa_graph_create("t");
            /* wrong type (unless the op also lists that type under the name) */
            fa_attr_type ot = other_type(a->type);
            bool also = false;
            for (const fa_attr_spec *b = op->attrs; b->name; b++) also |= !strcmp(b->name, a->name) && b->type == ot;
            if (!also) {
                fa_node *n = bare_node(g, ctx, op, opset);
                add_attr_of_type(g, n, a->name, ot, NULL);
                fa_status st = fa_node_check_attrs(ctx, g, n);
                if (st != FA_ERR_INPUT)
                    fprintf(stderr, "%s.%s as %s: status %d (%s)\n", op->name, a->name, fa_attr_type_name(ot), st,
                            fa_ctx_errmsg(ctx));
                assert_int_equal(st, FA_ERR_INPUT);
                assert_non_null(strstr(fa_ctx_errmsg(ctx), a->name));
                assert_non_null(strstr(fa_ctx_errmsg(ctx), fa_attr_type_name(a->type)));
                assert_non_null(strstr(fa_ctx_errmsg(ctx), fa_attr_type_name(ot)));
                attrs++;
            }
            /* beyond its last opset it is refused like an unknown attribute */
            if (a->until) {
                bool later = false; /* another entry of the name valid later (none today) */
                for (const fa_attr_spec *b = op->attrs; b->name; b++)
                    later |= !strcmp(b->name, a->name) && (!b->until || b->until > a->until);
                if (!later) {
                    fa_node *n = bare_node(g, ctx, op, a->until + 1);
                    add_attr_of_type(g, n, a->name, a->type, NULL);
                    assert_int_equal(fa_node_check_attrs(ctx, g, n), FA_ERR_UNSUPPORTED);
                }
            }
            /* a value outside the accept list */
            if (a->accept && (a->type == FA_ATTR_STRING || a->type == FA_ATTR_STRINGS)) {
                fa_node *n = bare_node(g, ctx, op, opset);
                add_attr_of_type(g, n, a->name, a->type, "no_such_mode");
                assert_int_equal(fa_node_check_attrs(ctx, g, n), FA_ERR_UNSUPPORTED);
                assert_non_null(strstr(fa_ctx_errmsg(ctx), "no_such_mode"));
                /* and its first alternative accepted */
                char first[64];
                size_t len = strcspn(a->accept, "|");
                snprintf(first, sizeof first, "%.*s", (int)len, a->accept);
                n = bare_node(g, ctx, op, opset);
                add_attr_of_type(g, n, a->name, a->type, first);
                assert_int_equal(fa_node_check_attrs(ctx, g, n), FA_OK);
                lists++;
            } else if (a->accept && a->type == FA_ATTR_INT) {
                /* every INT accept list has a bound on one side: one of these lies outside */
                int refused = 0;
                for (int sgn = -1; sgn <= 1; sgn += 2) {
                    fa_node *n = bare_node(g, ctx, op, opset);
                    fa_node_add_attr_int(g, n, a->name, sgn * 987654321LL);
                    if (fa_node_check_attrs(ctx, g, n) == FA_ERR_UNSUPPORTED) {
                        assert_non_null(strstr(fa_ctx_errmsg(ctx), "987654321"));
                        refused++;
                    }
                }
                assert_true(refused >= 1);
                lists++;
            }
            fa_graph_free(g);
            fa_ctx_free(ctx);
        }
        /* a name no op reads */
        fa_ctx *ctx = fa_ctx_create();
        fa_graph *g = fa_graph_create("t");
        fa_node *n = bare_node(g, ctx, op, 30);
        fa_node_add_attr_int(g, n, "no_such_attribute", 7);
        assert_int_equal(fa_node_check_attrs(ctx, g, n), FA_ERR_UNSUPPORTED);
        assert_non_null(strstr(fa_ctx_errmsg(ctx), "no_such_attribute"));
        fa_graph_free(g);
        fa_ctx_free(ctx);
    }
    printf("registry: %d ops, %d attributes refused with the wrong type, %d accept lists checked\n", ops, attrs, lists);
    assert_true(ops > 100);
    assert_true(attrs > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attr_wrong_type_conv_kernel_shape_floats_refused),
        cmocka_unit_test(test_attr_wrong_type_gemm_alpha_int_refused),
        cmocka_unit_test(test_attr_unknown_refused_with_value),
        cmocka_unit_test(test_attr_unimplemented_value_refused),
        cmocka_unit_test(test_attr_removed_in_node_opset_refused),
        cmocka_unit_test(test_attr_count_fixed_by_rank_refused),
        cmocka_unit_test(test_attr_value_in_message_is_sanitized),
        cmocka_unit_test(test_attr_registry_every_declared_attribute_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
