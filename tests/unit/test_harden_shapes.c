/* tests/unit/test_harden_shapes — issue 32, checked arithmetic in every shape rule: Split sizes that
 * overflowed the int64 sum check (undefined behaviour; `inspect` printed 2^62-element outputs), a
 * blocksize whose square wrapped to 0 (a division by zero), ConstantOfShape of 2^62 elements whose
 * byte size wrapped to 0 before folding (a heap overflow), and the same kinds in every other op:
 * each is refused naming the node and the field, and a shape that does not overflow but is absurd
 * (more than 2^48 elements or bytes) is refused before anything is allocated. The registry sweep
 * gives every op hostile dims, attributes and constant inputs; under the sanitizer build
 * (UndefinedBehaviorSanitizer) any unchecked signed overflow in a rule or a cost formula stops it.
 * Risky cases run in a child process, so the main of before fails them instead of dying. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harden_util.h"

#define P62 ((int64_t)1 << 62)

static fa_graph *new_graph(fa_ctx *ctx, int opset)
{
    fa_graph *g = fa_graph_create("shapes");
    assert_non_null(g);
    assert_int_equal(fa_graph_set_opset(ctx, g, "", opset), FA_OK);
    return g;
}

static int input(fa_ctx *ctx, fa_graph *g, const char *name, fa_dtype dt, int rank, const int64_t *dims)
{
    int t = fa_graph_tensor(g, name);
    fa_tensor_set_shape(g->tensors[t], dt, rank, dims);
    assert_int_equal(fa_graph_add_input(ctx, g, t), FA_OK);
    return t;
}

static int const_i64(fa_ctx *ctx, fa_graph *g, const char *name, const int64_t *v, int cnt)
{
    int t = fa_graph_tensor(g, name);
    const int64_t d[1] = {cnt};
    fa_tensor_set_shape(g->tensors[t], FA_DTYPE_INT64, 1, d);
    assert_int_equal(fa_tensor_set_data(ctx, g->tensors[t], v, sizeof(int64_t) * (size_t)cnt), FA_OK);
    g->tensors[t]->flags |= FA_TENSOR_CONST;
    return t;
}

/* Prepare g in a child; returns its exit: 0 refused with FA_ERR_INPUT/UNSUPPORTED and a message
 * holding every fragment, 1 accepted, 2 refused otherwise, 128+signal when it died. */
static int prepare_in_child(fa_graph *g, const char *frag1, const char *frag2, char *msg, size_t cap)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        fa_ctx *ctx = fa_ctx_create();
        fa_load_options o = {0};
        o.max_const_bytes = (uint64_t)1 << 20;
        fa_status s = fa_graph_prepare(ctx, g, &o);
        const char *m = s ? fa_ctx_errmsg(ctx) : "(accepted)";
        if (write(fds[1], m, strlen(m)) < 0) _exit(3);
        if (s == FA_OK) _exit(1);
        if (s != FA_ERR_INPUT && s != FA_ERR_UNSUPPORTED) _exit(2);
        _exit((frag1 && !strstr(m, frag1)) || (frag2 && !strstr(m, frag2)) ? 2 : 0);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < cap && (r = read(fds[0], msg + got, cap - 1 - got)) > 0) got += (size_t)r;
    msg[got] = 0;
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void expect_refused(fa_graph *g, const char *what, const char *frag1, const char *frag2)
{
    char msg[4096];
    int rc = prepare_in_child(g, frag1, frag2, msg, sizeof msg);
    if (getenv("FA_TEST_VERBOSE")) fprintf(stderr, "  %s: %s\n", what, msg);
    if (rc == 1) fail_msg("%s: accepted", what);
    if (rc >= 128) fail_msg("%s: the process died (signal %d)", what, rc - 128);
    if (rc) fail_msg("%s: refused without naming '%s' / '%s': %s", what, frag1 ? frag1 : "", frag2 ? frag2 : "", msg);
}

/* Split of an [8] input into sizes 2^62 x 4 + 8: their int64 sum wrapped to 8 and the outputs
 * were 2^62 elements each. */
static void test_split_sizes_overflowing_int64_refused_naming_node_and_field(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = new_graph(ctx, 13);
    const int64_t d[1] = {8}, sp[5] = {P62, P62, P62, P62, 8};
    input(ctx, g, "x", FA_DTYPE_FLOAT, 1, d);
    const_i64(ctx, g, "split", sp, 5);
    const char *in[] = {"x", "split"}, *out[] = {"a", "b", "c", "d", "e"};
    assert_non_null(fa_graph_add_node(ctx, g, "the_split", "Split", "", 2, in, 5, out));
    for (int i = 0; i < 5; i++) fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, out[i]));
    expect_refused(g, "Split", "node 'the_split' (Split)", "split");
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* ConstantOfShape [2^31, 2^31] of float: 2^62 elements whose byte size wrapped to 0, so folding
 * allocated one byte and wrote 2^64; and [2^20, 2^20, 2^10]: 2^50 elements, no overflow, absurd. */
static void test_constant_of_shape_absurd_sizes_refused_before_folding(void **state)
{
    (void)state;
    static const int64_t shapes[][3] = {{(int64_t)1 << 31, (int64_t)1 << 31, 0}, {1 << 20, 1 << 20, 1 << 10}};
    static const int ranks[] = {2, 3};
    for (int k = 0; k < 2; k++) {
        fa_ctx *ctx = fa_ctx_create();
        fa_graph *g = new_graph(ctx, 13);
        const_i64(ctx, g, "shape", shapes[k], ranks[k]);
        const int64_t one[1] = {1};
        int x = input(ctx, g, "x", FA_DTYPE_FLOAT, 1, one);
        (void)x;
        const char *in[] = {"shape"}, *out[] = {"big"}, *in2[] = {"big", "x"}, *out2[] = {"y"};
        assert_non_null(fa_graph_add_node(ctx, g, "huge_fill", "ConstantOfShape", "", 1, in, 1, out));
        assert_non_null(fa_graph_add_node(ctx, g, "use", "Add", "", 2, in2, 1, out2));
        fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
        expect_refused(g, k ? "ConstantOfShape 2^50" : "ConstantOfShape 2^62", "node 'huge_fill' (ConstantOfShape)",
                       "output 'big'");
        fa_graph_free(g);
        fa_ctx_free(ctx);
    }
}

/* DepthToSpace / SpaceToDepth with blocksize 2^32: the square wrapped to 0 (division by zero). */
static void test_blocksize_square_overflow_refused(void **state)
{
    (void)state;
    static const char *const ops[] = {"DepthToSpace", "SpaceToDepth"};
    for (int k = 0; k < 2; k++) {
        fa_ctx *ctx = fa_ctx_create();
        fa_graph *g = new_graph(ctx, 13);
        const int64_t d[4] = {1, 4, 4, 4};
        input(ctx, g, "x", FA_DTYPE_FLOAT, 4, d);
        const char *in[] = {"x"}, *out[] = {"y"};
        fa_node *n = fa_graph_add_node(ctx, g, "blocks", ops[k], "", 1, in, 1, out);
        assert_non_null(n);
        fa_node_add_attr_int(g, n, "blocksize", (int64_t)1 << 32);
        fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
        expect_refused(g, ops[k], "node 'blocks'", "blocksize");
        fa_graph_free(g);
        fa_ctx_free(ctx);
    }
}

/* Conv / MaxPool geometry: a dilation times a kernel extent past int64, a pad of 2^62. */
static void test_window_geometry_overflow_refused(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = new_graph(ctx, 13);
    const int64_t xd[4] = {1, 1, 8, 8};
    input(ctx, g, "x", FA_DTYPE_FLOAT, 4, xd);
    const char *in[] = {"x"}, *out[] = {"y"};
    fa_node *n = fa_graph_add_node(ctx, g, "pool", "MaxPool", "", 1, in, 1, out);
    const int64_t ks[2] = {(int64_t)1 << 40, 2}, dil[2] = {(int64_t)1 << 40, 1}, pads[4] = {P62, 0, P62, 0};
    fa_node_add_attr_ints(g, n, "kernel_shape", ks, 2);
    fa_node_add_attr_ints(g, n, "dilations", dil, 2);
    fa_node_add_attr_ints(g, n, "pads", pads, 4);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    expect_refused(g, "MaxPool", "node 'pool' (MaxPool)", NULL);
    fa_graph_free(g);
    fa_ctx_free(ctx);
    /* Conv and ConvTranspose with group 2^62: W's channels x group wrapped to 0, accepted */
    static const char *const ops[] = {"Conv", "ConvTranspose"};
    for (int k = 0; k < 2; k++) {
        ctx = fa_ctx_create();
        g = new_graph(ctx, 13);
        const int64_t x0[4] = {1, 0, 8, 8}, w0[4] = {0, 4, 1, 1};
        input(ctx, g, "x", FA_DTYPE_FLOAT, 4, x0);
        input(ctx, g, "w", FA_DTYPE_FLOAT, 4, w0);
        const char *in2[] = {"x", "w"};
        n = fa_graph_add_node(ctx, g, "grouped", ops[k], "", 2, in2, 1, out);
        fa_node_add_attr_int(g, n, "group", P62);
        fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
        expect_refused(g, ops[k], "node 'grouped'", NULL);
        fa_graph_free(g);
        fa_ctx_free(ctx);
    }
}

/* Concat along an axis whose sum passes 2^48 (each input within it): refused as absurd. */
static void test_concat_sum_over_the_limit_refused(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = new_graph(ctx, 13);
    const int64_t d[1] = {(int64_t)1 << 47};
    const char *in[4] = {"a", "b", "c", "d"}, *out[] = {"y"};
    for (int i = 0; i < 4; i++) input(ctx, g, in[i], FA_DTYPE_BOOL, 1, d);
    fa_node *n = fa_graph_add_node(ctx, g, "cat", "Concat", "", 4, in, 1, out);
    fa_node_add_attr_int(g, n, "axis", 0);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    expect_refused(g, "Concat", "node 'cat' (Concat)", "output 'y'");
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* A graph input of 2^62 elements (no overflow): refused before any rule or plan sees it. */
static void test_absurd_graph_input_refused(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = new_graph(ctx, 13);
    const int64_t d[2] = {(int64_t)1 << 31, (int64_t)1 << 31};
    input(ctx, g, "x", FA_DTYPE_FLOAT, 2, d);
    const char *in[] = {"x"}, *out[] = {"y"};
    assert_non_null(fa_graph_add_node(ctx, g, "r", "Relu", "", 1, in, 1, out));
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    expect_refused(g, "input", "graph input 'x'", "256 TiB");
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* `inspect` of a model with the Split above exits 1 naming the node; before, it printed the
 * 2^62-element outputs and exited 0. */
static void test_cli_inspect_refuses_overflowing_split(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = new_graph(ctx, 13);
    const int64_t d[1] = {8}, sp[5] = {P62, P62, P62, P62, 8};
    input(ctx, g, "x", FA_DTYPE_FLOAT, 1, d);
    const_i64(ctx, g, "split", sp, 5);
    const char *in[] = {"x", "split"}, *out[] = {"a", "b", "c", "d", "e"};
    assert_non_null(fa_graph_add_node(ctx, g, "the_split", "Split", "", 2, in, 5, out));
    for (int i = 0; i < 5; i++) fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, out[i]));
    const char *path = hu_tmp("split.onnx");
    assert_int_equal(fa_onnx_export(ctx, g, path), FA_OK);
    fa_graph_free(g);
    fa_ctx_free(ctx);
    const char *argv[] = {"inspect", path, NULL};
    char *o = NULL, *e = NULL;
    int rc = hu_cli_env(argv, NULL, NULL, &o, &e);
    if (rc != 1 || !strstr(e, "the_split") || !strstr(e, "split"))
        fail_msg("inspect: exit %d (want 1 naming the node): %s%s", rc, o, e);
    free(o);
    free(e);
}

/* ---- the registry sweep ---- */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static const int64_t k_hostile[] = {0, 1, -1, 2, 3, 4, 7, -2, (int64_t)1 << 31, (int64_t)1 << 32, (int64_t)1 << 40,
                                    (int64_t)1 << 48, ((int64_t)1 << 48) + 1, P62, INT64_MAX, INT64_MIN, INT64_MIN + 1,
                                    -P62, INT64_MAX / 3, -((int64_t)1 << 40)};
#define N_HOSTILE (int)(sizeof k_hostile / sizeof k_hostile[0])

static int64_t hostile(void) { return rnd() % 3 == 0 ? (int64_t)(rnd() % 5) : k_hostile[rnd() % N_HOSTILE]; }

static const float k_hostile_f[] = {0.0f, 1.0f, -1.0f, 0.5f, 2.0f, 1e30f, -1e30f, 1e-30f, 3.4e38f};

/* A random input dims within the limits: small dims, at most one large one. */
static int random_dims(int64_t *d)
{
    static const int64_t big[] = {(int64_t)1 << 20, (int64_t)1 << 31, (int64_t)1 << 40, (int64_t)1 << 47};
    int r = (int)(rnd() % 5);
    for (int i = 0; i < r; i++) d[i] = (int64_t)(rnd() % 5) + (rnd() % 4 == 0 ? 0 : 1);
    if (r && rnd() % 3 == 0) d[rnd() % (unsigned)r] = big[rnd() % 4];
    return r;
}

static void sweep_op(const fa_op *op, int trials, int *accepted, int *refused)
{
    static const fa_dtype dts[] = {FA_DTYPE_FLOAT, FA_DTYPE_INT64, FA_DTYPE_INT32, FA_DTYPE_BOOL, FA_DTYPE_FLOAT16,
                                   FA_DTYPE_UINT8};
    for (int tr = 0; tr < trials; tr++) {
        fa_ctx *ctx = fa_ctx_create();
        static const int opsets[] = {1, 6, 7, 10, 11, 13, 17, 18, 21};
        fa_graph *g = new_graph(ctx, opsets[rnd() % 9]);
        if (op->domain && *op->domain) fa_graph_set_opset(ctx, g, op->domain, 1);
        int max_in = op->max_inputs < 0 ? op->min_inputs + 3 : op->max_inputs;
        int n_in = op->min_inputs + (max_in > op->min_inputs ? (int)(rnd() % (unsigned)(max_in - op->min_inputs + 1)) : 0);
        int max_out = op->max_outputs < 0 ? op->min_outputs + 3 : op->max_outputs;
        int n_out = op->min_outputs + (max_out > op->min_outputs ? (int)(rnd() % (unsigned)(max_out - op->min_outputs + 1)) : 0);
        if (n_in > 8) n_in = 8;
        if (n_out > 8) n_out = 8;
        char names[16][16];
        const char *in[8], *out[8];
        for (int i = 0; i < n_in; i++) {
            snprintf(names[i], sizeof names[i], "i%d", i);
            in[i] = names[i];
            int kind = (int)(rnd() % 4);
            if (i > 0 && kind == 0) { /* a constant int64 list: shapes, sizes, pads, axes, repeats */
                int64_t v[8];
                int cnt = 1 + (int)(rnd() % 6);
                for (int k = 0; k < cnt; k++) v[k] = hostile();
                const_i64(ctx, g, names[i], v, cnt);
            } else if (i > 0 && kind == 1) { /* a constant float or int scalar/list: scales, depth, range */
                int t = fa_graph_tensor(g, names[i]);
                int cnt = 1 + (int)(rnd() % 4);
                const int64_t d[1] = {cnt};
                bool f = rnd() % 2;
                fa_tensor_set_shape(g->tensors[t], f ? FA_DTYPE_FLOAT : FA_DTYPE_INT64, rnd() % 2 && cnt == 1 ? 0 : 1, d);
                float fv[8];
                int64_t iv[8];
                for (int k = 0; k < cnt; k++) fv[k] = k_hostile_f[rnd() % 9], iv[k] = hostile();
                assert_int_equal(fa_tensor_set_data(ctx, g->tensors[t], f ? (const void *)fv : (const void *)iv,
                                                    (f ? sizeof(float) : sizeof(int64_t)) * (size_t)cnt), FA_OK);
                g->tensors[t]->flags |= FA_TENSOR_CONST;
            } else {
                int64_t d[FA_MAX_RANK];
                int r = random_dims(d);
                input(ctx, g, names[i], i == 0 || rnd() % 2 ? FA_DTYPE_FLOAT : dts[rnd() % 6], r, d);
            }
        }
        for (int o = 0; o < n_out; o++) {
            snprintf(names[8 + o], sizeof names[8 + o], "o%d", o);
            out[o] = names[8 + o];
        }
        fa_node *n = fa_graph_add_node(ctx, g, "under_test", op->name, op->domain, n_in, in, n_out, out);
        if (!n) { fa_graph_free(g); fa_ctx_free(ctx); continue; }
        for (const fa_attr_spec *a = op->attrs; a && a->name; a++) {
            if (rnd() % 3 == 0) continue;
            if (a->type == FA_ATTR_INT) fa_node_add_attr_int(g, n, a->name, hostile());
            else if (a->type == FA_ATTR_INTS) {
                int64_t v[8];
                int cnt = 1 + (int)(rnd() % 6);
                for (int k = 0; k < cnt; k++) v[k] = hostile();
                fa_node_add_attr_ints(g, n, a->name, v, cnt);
            } else if (a->type == FA_ATTR_FLOAT) fa_node_add_attr_float(g, n, a->name, k_hostile_f[rnd() % 9]);
            else if (a->type == FA_ATTR_FLOATS) {
                float v[4] = {k_hostile_f[rnd() % 9], k_hostile_f[rnd() % 9], k_hostile_f[rnd() % 9], k_hostile_f[rnd() % 9]};
                fa_node_add_attr_floats(g, n, a->name, v, 1 + (int)(rnd() % 4));
            } else if (a->type == FA_ATTR_STRING && a->accept) {
                char first[64];
                size_t len = strcspn(a->accept, "|");
                snprintf(first, sizeof first, "%.*s", (int)len, a->accept);
                fa_node_add_attr_string(g, n, a->name, first);
            }
        }
        for (int o = 0; o < n_out; o++) fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, out[o]));
        fa_load_options lo = {0};
        lo.max_const_bytes = (uint64_t)1 << 16; /* folding of what passes, within reason */
        fa_status s = fa_graph_prepare(ctx, g, &lo);
        if (s == FA_OK) {
            (*accepted)++;
            /* every output within the limits, and its cost computed without wrapping into nonsense */
            for (int o = 0; o < n_out; o++) {
                const fa_tensor *t = g->tensors[fa_graph_find_tensor(g, out[o])];
                if (t->rank >= 0 && fa_tensor_check_size(ctx, t, "sweep") != FA_OK)
                    fail_msg("%s: an output passed prepare out of limits: %s", op->name, fa_ctx_errmsg(ctx));
            }
            for (int k = 0; k < g->n_topo; k++) {
                fa_op_cost c;
                fa_node_cost(g, g->nodes[g->topo[k]], &c);
            }
        } else {
            (*refused)++;
            if (!fa_ctx_errmsg(ctx)[0]) fail_msg("%s: refused without a message", op->name);
        }
        fa_graph_free(g);
        fa_ctx_free(ctx);
    }
}

/* Every op of the registry with hostile dims, attributes and constant inputs: each attempt is
 * accepted within the limits or refused with a message; nothing crashes, and under UBSan no rule
 * or cost formula overflows. */
static void test_registry_sweep_hostile_shapes_and_values(void **state)
{
    (void)state;
    int ops = 0, accepted = 0, refused = 0;
    /* FA_SWEEP_TRIALS (default 120 per op, about a second under the sanitizers) for longer hunts */
    int trials = getenv("FA_SWEEP_TRIALS") ? atoi(getenv("FA_SWEEP_TRIALS")) : 120;
    if (getenv("FA_SWEEP_SEED")) g_rng = strtoull(getenv("FA_SWEEP_SEED"), NULL, 0);
    for (int i = 0; fa_op_at(i); i++) {
        sweep_op(fa_op_at(i), trials > 0 ? trials : 120, &accepted, &refused);
        ops++;
    }
    if (getenv("FA_TEST_VERBOSE")) fprintf(stderr, "  %d ops: %d accepted, %d refused\n", ops, accepted, refused);
    assert_true(ops > 100);
    assert_true(accepted > 0 && refused > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_sizes_overflowing_int64_refused_naming_node_and_field),
        cmocka_unit_test(test_constant_of_shape_absurd_sizes_refused_before_folding),
        cmocka_unit_test(test_blocksize_square_overflow_refused),
        cmocka_unit_test(test_window_geometry_overflow_refused),
        cmocka_unit_test(test_concat_sum_over_the_limit_refused),
        cmocka_unit_test(test_absurd_graph_input_refused),
        cmocka_unit_test(test_cli_inspect_refuses_overflowing_split),
        cmocka_unit_test(test_registry_sweep_hostile_shapes_and_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
