/* tests/unit/test_op_math — every op of graph/op_math.h's table, with default and with non-default
 * attributes, on every target that runs it, against its reference (after ggml's test-backend-ops):
 *   reference  the cpu executor on float64 (graph/ops_elementwise.c's double formulas, written from
 *              the ONNX specifications, independently of the table)
 *   cpu        the cpu executor's float32 kernels
 *   cuda-emu   the cuda executor's plan and kernels run on the host (fa_cuda_exec_create_emulated)
 *   C          the code generator's C for a one-op cluster, compiled and loaded by the cpu target's
 *              table (fused_compile / fused_kernel)
 *   CUDA       the code generator's CUDA for that cluster, compiled by the cuda target's table
 *              (NVRTC for sm_90, no GPU needed) with its ptxas figures
 * max |y - ref| / max(max |ref|, 1e-12) must stay under 1e-5 (the applier's fp32 tolerance). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_cases.h"
#include "graph/op_math.h"
#include "runtime/fused.h"
#ifdef FA_HAVE_CUDA
#include "runtime/cuda/cuda.h"
#endif

#define ROWS 3
#define COLS 257
#define TOL 1e-5

/* Inputs inside the op's domain: Log and Sqrt are defined on positive values only. */
static bool positive_domain(const char *op) { return !strcmp(op, "Log") || !strcmp(op, "Sqrt"); }

static void fill(float *x, int64_t n, bool positive, uint64_t seed)
{
    fa_rng r;
    fa_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) {
        float v = fa_rng_uniform(&r, -4.0f, 4.0f);
        x[i] = positive ? fabsf(v) + 0.01f : v;
    }
    x[0] = positive ? 1.0f : 0.0f; /* the kinks of the piecewise ops */
    x[1] = positive ? 0.5f : -0.0f;
    x[2] = positive ? 3.0f : -2.5f;
}

/* A graph x[ROWS,COLS] (dtype) -> op -> y, with the attributes of m set to `attr` (NULL: absent). */
static tc *op_case(const fa_unary_math *m, fa_dtype dtype, const double *attr)
{
    tc *t = tc_new(18);
    int64_t d[2] = {ROWS, COLS};
    tc_input(t, "x", 2, d);
    t->g->tensors[fa_graph_find_tensor(t->g, "x")]->dtype = dtype;
    /* parameters that are inputs at this opset (Clip's bounds): constant scalars p1, p2 */
    fa_node probe = {.opset = 18};
    const char *in[3] = {"x", NULL, NULL};
    static const char *const pname[3] = {"p0", "p1", "p2"};
    for (int k = 0; attr && k < 3; k++) {
        int ix = fa_unary_math_param_input(&probe, m, k);
        if (ix > 0 && ix < 3) {
            tc_scalar(t, pname[ix], (float)attr[k]);
            in[ix] = pname[ix];
        }
    }
    if (in[2] && !in[1]) in[1] = ""; /* an omitted input 1 */
    fa_node *n = tc_node(t, m->name, in[0], in[1], in[2], "y");
    for (int k = 0; attr && k < 3; k++)
        if (m->attr[k] && fa_unary_math_param_input(&probe, m, k) < 0)
            assert_non_null(fa_node_add_attr_float(t->g, n, m->attr[k], (float)attr[k]));
    const char *sel, *val = fa_unary_math_select_value(m, &sel); /* Gelu's tanh row: approximate="tanh" */
    if (val) assert_non_null(fa_node_add_attr_string(t->g, n, sel, val));
    assert_ptr_equal(fa_unary_math_for_node(n, NULL), m);
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_ELEMWISE_CHAIN, FA_REDUCE_NONE, -1, m->name);
    return t;
}

static double rel_err(const float *y, const double *ref, int64_t n, const char *what, const char *op)
{
    double md = 0, mr = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(ref[i]) != isnan(y[i])) fail_msg("%s %s[%lld]: %g, reference %g", op, what, (long long)i, y[i], ref[i]);
        if (isnan(ref[i])) continue;
        double e = fabs((double)y[i] - ref[i]);
        if (e > md) md = e;
        if (fabs(ref[i]) > mr) mr = fabs(ref[i]);
    }
    return md / (mr > 1e-12 ? mr : 1e-12);
}

/* Run t's graph on inputs xs[0..nx) (each [ROWS,COLS] of dt) into y. */
static void run_exec_n(tc *t, fa_target target, bool emulated, const void *const *xs, int nx, fa_dtype dt, void *y)
{
    fa_exec_options eo = {.target = target, .threads = 2};
    fa_value v[2] = {{0}, {0}};
    for (int i = 0; i < nx; i++) {
        v[i].data = (void *)xs[i];
        v[i].dtype = dt;
        v[i].rank = 2;
        v[i].dims[0] = ROWS;
        v[i].dims[1] = COLS;
    }
    if (!emulated) {
        fa_exec *e = NULL;
        if (fa_exec_create(t->ctx, t->g, &eo, &e)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
        for (int i = 0; i < nx; i++)
            if (fa_exec_set_input(t->ctx, e, i, &v[i])) fail_msg("%s", fa_ctx_errmsg(t->ctx));
        if (fa_exec_run(t->ctx, e, NULL)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
        const fa_value *o = fa_exec_output(e, 0);
        memcpy(y, o->data, (size_t)ROWS * COLS * fa_dtype_size(dt));
        fa_exec_free(e);
        return;
    }
#ifdef FA_HAVE_CUDA
    fa_cuda_exec *e = NULL;
    if (fa_cuda_exec_create_emulated(t->ctx, t->g, &eo, &e)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    for (int i = 0; i < nx; i++)
        if (fa_cuda_exec_set_input(t->ctx, e, i, &v[i])) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    if (fa_cuda_exec_run(t->ctx, e, NULL)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    const fa_value *o = fa_cuda_exec_output(e, 0);
    memcpy(y, o->data, (size_t)ROWS * COLS * sizeof(float));
    fa_cuda_exec_free(e);
#else
    (void)y;
#endif
}

static void run_exec(tc *t, fa_target target, bool emulated, const void *x, fa_dtype dt, void *y)
{
    run_exec_n(t, target, emulated, &x, 1, dt, y);
}

/* The generated kernel of t's one-op cluster in the target's language, compiled by the target. */
static fa_fused_binary *compile_generated(tc *t, const fa_target_iface *ti, const char *cache)
{
    fa_buf src;
    fa_buf_init(&src);
    fa_codegen_info info;
    fa_status s = fa_target_kernel_lang(ti) == FA_KERNEL_LANG_CUDA ? fa_codegen_cuda(t->ctx, t->g, &t->c, "0p", &src, &info)
                                                          : fa_codegen_c(t->ctx, t->g, &t->c, "0p", &src, &info);
    if (s) fail_msg("codegen %s: %s", fa_target_name(fa_target_id(ti)), fa_ctx_errmsg(t->ctx));
    fa_fused_source fs = {src.data, src.len, info.name, t->c.n_inputs, 1, info.block_size, info.grid};
    fa_fused_compile_options co = {cache, 0, "sm_90"};
    fa_fused_binary *b = NULL;
    char *err = NULL;
    if (fa_target_fused_compile(t->ctx, ti, &co, 1, &fs, &b, &err) || !b)
        fail_msg("%s compile of %s: %s\n%s", fa_target_name(fa_target_id(ti)), t->c.label, err ? err : fa_ctx_errmsg(t->ctx), src.data);
    free(err);
    fa_buf_free(&src);
    return b;
}

static void check_op(const fa_unary_math *m, const double *attr, const char *cache, int *n_checked)
{
    const int64_t n = (int64_t)ROWS * COLS;
    float x[ROWS * COLS], y[ROWS * COLS];
    double xd[ROWS * COLS], ref[ROWS * COLS];
    fill(x, n, positive_domain(m->name), 0x0A11 + (uint64_t)m->op);
    /* ops defined on part of the line: their inputs inside it, or the comparison is NaN against NaN */
    bool unit = !strcmp(m->name, "Asin") || !strcmp(m->name, "Acos") || !strcmp(m->name, "Atanh");
    for (int64_t i = 0; i < n; i++) {
        if (unit) x[i] *= 0.24f; /* (-0.96, 0.96) */
        else if (!strcmp(m->name, "Acosh")) x[i] = fabsf(x[i]) + 1.0f;
    }
    for (int64_t i = 0; i < n; i++) xd[i] = x[i];

    tc *td = op_case(m, FA_DTYPE_DOUBLE, attr);
    run_exec(td, FA_TARGET_CPU, false, xd, FA_DTYPE_DOUBLE, ref);
    tc_free(td);

    tc *t = op_case(m, FA_DTYPE_FLOAT, attr);
    char what[128];
    const char *sel, *val = fa_unary_math_select_value(m, &sel);
    char pick[48] = "";
    if (val) snprintf(pick, sizeof pick, " (%s=%s)", sel, val);
    snprintf(what, sizeof what, "%s%s%s", m->name, pick, attr ? " (attributes set)" : "");

    run_exec(t, FA_TARGET_CPU, false, x, FA_DTYPE_FLOAT, y);
    double e_cpu = rel_err(y, ref, n, "cpu", what);

    double e_emu = -1;
#ifdef FA_HAVE_CUDA
    run_exec(t, FA_TARGET_CUDA, true, x, FA_DTYPE_FLOAT, y);
    e_emu = rel_err(y, ref, n, "cuda-emu", what);
#endif

    /* generated C through the cpu target's table */
    const fa_target_iface *cpu = fa_target_get(FA_TARGET_CPU);
    fa_fused_binary *b = compile_generated(t, cpu, cache);
    fa_custom_kernel k;
    if (fa_target_fused_kernel(t->ctx, cpu, b, &k)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    fa_value vin = {0}, vout = {0};
    vin.data = x;
    vin.dtype = vout.dtype = FA_DTYPE_FLOAT;
    vin.rank = vout.rank = 2;
    vin.dims[0] = vout.dims[0] = ROWS;
    vin.dims[1] = vout.dims[1] = COLS;
    for (int64_t i = 0; i < n; i++) y[i] = NAN;
    vout.data = y;
    const fa_node *node = t->g->nodes[t->g->topo[0]];
    if (k.run(k.state, t->ctx, node, &vin, 1, &vout, 1, 2)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    if (k.destroy) k.destroy(k.state);
    fa_target_fused_free(cpu, b);
    double e_c = rel_err(y, ref, n, "generated C", what);

    /* generated CUDA through the cuda target's table: it compiles, with registers */
    int regs = -1;
    const fa_target_iface *cuda = fa_target_get(FA_TARGET_CUDA);
    if (cuda) {
        fa_fused_binary *cb = compile_generated(t, cuda, NULL);
        fa_kernel_resources r;
        assert_true(fa_target_fused_resources(cuda, cb, &r));
        regs = r.registers;
        assert_true(regs > 0);
        fa_target_fused_free(cuda, cb);
    }
    print_message("%-34s cpu %.2g  cuda-emu %.2g  generated C %.2g  generated CUDA %d regs\n", what, e_cpu, e_emu, e_c,
                  regs);
    assert_true(e_cpu < TOL);
    assert_true(e_emu < TOL);
    assert_true(e_c < TOL);
    tc_free(t);
    (*n_checked)++;
}

static void test_every_table_op_on_every_target(void **s)
{
    (void)s;
    char cache[1024];
    snprintf(cache, sizeof cache, "%s/kernels", fa_test_tmpdir());
    int checked = 0;
    for (int op = 0; op < FA_UNARY_COUNT; op++) {
        const fa_unary_math *m = fa_unary_math_get((fa_unary_op)op);
        assert_non_null(m);
        check_op(m, NULL, cache, &checked);
        if (m->attr[0] || m->attr[1] || m->attr[2]) { /* the attributes (or parameter inputs) reach every target */
            double attr[3];
            for (int k = 0; k < 3; k++) /* an unbounded default (Clip's) gets a bound inside the inputs' range */
                attr[k] = isfinite(m->def[k]) ? m->def[k] * 0.75 + 0.125 : m->def[k] < 0 ? -0.5 : 1.25;
            check_op(m, attr, cache, &checked);
        }
    }
    print_message("%d op/attribute cases, %d ops in the table\n", checked, (int)FA_UNARY_COUNT);
    assert_true(checked > FA_UNARY_COUNT);
}

/* A graph x, w [ROWS,COLS] (dtype) -> binary op -> y. */
static tc *binary_case(const fa_binary_math *m, fa_dtype dtype)
{
    tc *t = tc_new(18);
    int64_t d[2] = {ROWS, COLS};
    tc_input(t, "x", 2, d);
    tc_input(t, "w", 2, d);
    t->g->tensors[fa_graph_find_tensor(t->g, "x")]->dtype = dtype;
    t->g->tensors[fa_graph_find_tensor(t->g, "w")]->dtype = dtype;
    tc_node(t, m->name, "x", "w", NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_ELEMWISE_CHAIN, FA_REDUCE_NONE, -1, m->name);
    return t;
}

/* Every row of the binary table on the cpu kernels, the emulated cuda executor and the generated
 * C (the generated CUDA compiles), against the float64 reference; Max/Min see a NaN operand on
 * either side and must return NaN everywhere (the code generator's fmaxf/fminf did not). */
static void test_every_binary_table_op_on_every_target(void **s)
{
    (void)s;
    char cache[1024];
    snprintf(cache, sizeof cache, "%s/kernels", fa_test_tmpdir());
    const char *names[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu"};
    assert_int_equal(sizeof names / sizeof names[0], FA_BINARY_COUNT);
    const int64_t n = (int64_t)ROWS * COLS;
    for (int op = 0; op < FA_BINARY_COUNT; op++) {
        const fa_binary_math *m = fa_binary_math_find(names[op]);
        assert_non_null(m);
        assert_int_equal(m->op, op);
        float x[ROWS * COLS], w[ROWS * COLS], y[ROWS * COLS];
        double xd[ROWS * COLS], wd[ROWS * COLS], ref[ROWS * COLS];
        bool pow_ = m->op == FA_BINARY_POW, div_ = m->op == FA_BINARY_DIV;
        fill(x, n, pow_, 0xB1 + (uint64_t)op);
        fill(w, n, div_, 0xB2 + (uint64_t)op);
        if (pow_) /* exponents in [-2, 2], squares among them */
            for (int64_t i = 0; i < n; i++) w[i] = i % 5 == 0 ? 2.0f : w[i] / 2.0f;
        if (m->op == FA_BINARY_MAX || m->op == FA_BINARY_MIN) {
            x[3] = NAN;
            w[4] = NAN;
        }
        for (int64_t i = 0; i < n; i++) {
            xd[i] = x[i];
            wd[i] = w[i];
        }
        tc *td = binary_case(m, FA_DTYPE_DOUBLE);
        const void *ind[2] = {xd, wd};
        run_exec_n(td, FA_TARGET_CPU, false, ind, 2, FA_DTYPE_DOUBLE, ref);
        tc_free(td);
        if (m->op == FA_BINARY_MAX || m->op == FA_BINARY_MIN) assert_true(isnan(ref[3]) && isnan(ref[4]));
        tc *t = binary_case(m, FA_DTYPE_FLOAT);
        const void *in[2] = {x, w};
        run_exec_n(t, FA_TARGET_CPU, false, in, 2, FA_DTYPE_FLOAT, y);
        double e_cpu = rel_err(y, ref, n, "cpu", m->name);
        double e_emu = -1;
#ifdef FA_HAVE_CUDA
        run_exec_n(t, FA_TARGET_CUDA, true, in, 2, FA_DTYPE_FLOAT, y);
        e_emu = rel_err(y, ref, n, "cuda-emu", m->name);
#endif
        const fa_target_iface *cpu = fa_target_get(FA_TARGET_CPU);
        fa_fused_binary *b = compile_generated(t, cpu, cache);
        fa_custom_kernel k;
        if (fa_target_fused_kernel(t->ctx, cpu, b, &k)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
        fa_value vin[2] = {{0}, {0}}, vout = {0};
        for (int i = 0; i < 2; i++) {
            vin[i].data = (void *)in[i];
            vin[i].dtype = FA_DTYPE_FLOAT;
            vin[i].rank = 2;
            vin[i].dims[0] = ROWS;
            vin[i].dims[1] = COLS;
        }
        vout = vin[0];
        for (int64_t i = 0; i < n; i++) y[i] = -12345.0f;
        vout.data = y;
        /* the generated kernel reads its inputs in the cluster's order */
        fa_value vord[2];
        for (int i = 0; i < 2; i++) vord[i] = vin[t->c.inputs[i] == fa_graph_find_tensor(t->g, "x") ? 0 : 1];
        const fa_node *node = t->g->nodes[t->g->topo[0]];
        if (k.run(k.state, t->ctx, node, vord, 2, &vout, 1, 2)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
        if (k.destroy) k.destroy(k.state);
        fa_target_fused_free(cpu, b);
        double e_c = rel_err(y, ref, n, "generated C", m->name);
        const fa_target_iface *cuda = fa_target_get(FA_TARGET_CUDA);
        if (cuda) fa_target_fused_free(cuda, compile_generated(t, cuda, NULL));
        print_message("%-34s cpu %.2g  cuda-emu %.2g  generated C %.2g\n", m->name, e_cpu, e_emu, e_c);
        assert_true(e_cpu < TOL);
        assert_true(e_emu < TOL);
        assert_true(e_c < TOL);
        tc_free(t);
    }
    char buf[256];
    fa_binary_math_template(fa_binary_math_find("PRelu"), buf, sizeof buf);
    assert_string_equal(buf, "($0 < 0.0f ? $0 * $1 : $0)");
    assert_ptr_equal(fa_binary_math_find("Sum"), fa_binary_math_find("Add"));
    assert_null(fa_binary_math_find("Mod")); /* lowered by hand: fmod and the divisor's sign */
}

/* The code generator's template is the table's expression with x, a, b, g renamed, no more. */
static void test_template_renames_only_the_variables(void **s)
{
    (void)s;
    char buf[512];
    const fa_unary_math *m = fa_unary_math_find("HardSigmoid");
    assert_non_null(m);
    fa_unary_math_template(m, buf, sizeof buf);
    assert_string_equal(buf, "($a * $0 + $b < 0.0f ? 0.0f : ($a * $0 + $b > 1.0f ? 1.0f : $a * $0 + $b))");
    m = fa_unary_math_find("Selu");
    fa_unary_math_template(m, buf, sizeof buf);
    assert_string_equal(buf, "($0 > 0.0f ? $g * $0 : $g * ($a * expf($0) - $a))");
    m = fa_unary_math_find("Mish"); /* expf, log1pf, tanhf and the literals stay */
    fa_unary_math_template(m, buf, sizeof buf);
    assert_string_equal(buf, "($0 * tanhf(($0 > 0.0f ? $0 + log1pf(expf(-$0)) : log1pf(expf($0)))))");
    size_t need = fa_unary_math_template(m, buf, 8); /* truncated: snprintf's convention */
    assert_true(need > 8);
    assert_int_equal(strlen(buf), 7);
    /* Gelu has two rows picked by its `approximate` attribute; the name finds the default one */
    assert_int_equal(fa_unary_math_find("Gelu")->op, FA_UNARY_GELU);
    const char *sel, *val = fa_unary_math_select_value(fa_unary_math_get(FA_UNARY_GELU_TANH), &sel);
    assert_string_equal(sel, "approximate");
    assert_string_equal(val, "tanh");
    assert_null(fa_unary_math_find("Round")); /* no float expression of its own */
    assert_null(fa_unary_math_get(FA_UNARY_COUNT));
}

/* Every registered op carries a pattern class (the advisor reads nothing else to tell an anchor,
 * an elementwise member or a reduction), consistent with its op math: an op with a unary scalar
 * expression is elementwise, a binary one broadcast; a reduction kind only on a reduction; every
 * Reduce* op (ONNX's family over `axes`) has an axes kind and nothing else does. */
/* The one row-reduction kind (graph/graph.h): the words the plan stores (clusters.reduction,
 * plan.json "reduction") are the words stored before the three enums became one, every kind's
 * word parses back to it, and an unknown or missing word (a v4 database's "layer_norm") reads as
 * none. */
static void test_reduce_kind_words_are_stable(void **s)
{
    (void)s;
    static const struct { fa_reduce_kind k; const char *word; } stored[] = {
        {FA_REDUCE_NONE, "none"},         {FA_REDUCE_SOFTMAX, "softmax"},   {FA_REDUCE_LOG_SOFTMAX, "log-softmax"},
        {FA_REDUCE_LAYER_NORM, "layer-norm"}, {FA_REDUCE_RMS_NORM, "rms-norm"}, {FA_REDUCE_GENERIC, "generic"},
    };
    for (size_t i = 0; i < sizeof stored / sizeof stored[0]; i++) {
        assert_string_equal(fa_reduce_kind_name(stored[i].k), stored[i].word);
        assert_int_equal(fa_reduce_kind_parse(stored[i].word), stored[i].k);
    }
    for (int k = 0; k < FA_REDUCE_COUNT; k++) assert_int_equal(fa_reduce_kind_parse(fa_reduce_kind_name((fa_reduce_kind)k)), k);
    assert_int_equal(fa_reduce_kind_parse("layer_norm"), FA_REDUCE_NONE);
    assert_int_equal(fa_reduce_kind_parse(NULL), FA_REDUCE_NONE);
    assert_string_equal(fa_reduce_kind_name(FA_REDUCE_COUNT), "?");
    for (int k = 0; k < FA_REDUCE_COUNT; k++) /* the row kernels' kinds: exactly the named row patterns */
        assert_int_equal(fa_reduce_is_row((fa_reduce_kind)k), k == FA_REDUCE_SOFTMAX || k == FA_REDUCE_LOG_SOFTMAX ||
                                                                 k == FA_REDUCE_LAYER_NORM || k == FA_REDUCE_RMS_NORM);
}

static void test_every_registered_op_has_a_consistent_pattern_class(void **s)
{
    (void)s;
    int n = 0, n_red = 0, n_math = 0;
    for (const fa_op *op; (op = fa_op_at(n)) != NULL; n++) {
        char what[96];
        snprintf(what, sizeof what, "%s (%s)", op->name, op->domain && op->domain[0] ? op->domain : "ai.onnx");
        if (!((int)op->pattern >= 0 && op->pattern < FA_PATTERN_COUNT)) fail_msg("%s: pattern %d", what, (int)op->pattern);
        if (!((int)op->reduce >= 0 && op->reduce < FA_REDUCE_COUNT)) fail_msg("%s: reduce kind %d", what, (int)op->reduce);
        bool dflt = !op->domain || !op->domain[0];
        if (dflt && fa_unary_math_find(op->name)) {
            n_math++;
            if (op->pattern != FA_PATTERN_ELEMWISE) fail_msg("%s has a unary expression but class %s", what, fa_pattern_name(op->pattern));
        }
        if (dflt && fa_binary_math_find(op->name)) {
            n_math++;
            if (op->pattern != FA_PATTERN_BROADCAST)
                fail_msg("%s has a binary expression but class %s", what, fa_pattern_name(op->pattern));
        }
        if (op->reduce != FA_REDUCE_NONE) {
            n_red++;
            if (op->pattern != FA_PATTERN_REDUCTION) fail_msg("%s has reduce kind %d but class %s", what, (int)op->reduce,
                                                             fa_pattern_name(op->pattern));
        }
        bool reduce_family = dflt && !strncmp(op->name, "Reduce", 6);
        if (reduce_family != (bool)fa_reduce_is_axes(op->reduce))
            fail_msg("%s: %s an axes reduction kind", what, reduce_family ? "a Reduce* op without" : "not a Reduce* op but");
    }
    print_message("%d registered ops, %d with a scalar expression, %d with a reduction kind\n", n, n_math, n_red);
    assert_true(n > 100);
    int names = 0; /* distinct names of the unary table (Gelu has two rows) */
    for (int i = 0; i < FA_UNARY_COUNT; i++)
        names += fa_unary_math_find(fa_unary_math_get((fa_unary_op)i)->name) == fa_unary_math_get((fa_unary_op)i);
    assert_int_equal(n_math, names + (int)FA_BINARY_COUNT + 1 /* Sum is Add's row */);
    assert_int_equal(n_red, 14); /* 9 Reduce*, Softmax, LogSoftmax, LayerNormalization, RMSNormalization, Attention */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template_renames_only_the_variables),
        cmocka_unit_test(test_reduce_kind_words_are_stable),
        cmocka_unit_test(test_every_registered_op_has_a_consistent_pattern_class),
        cmocka_unit_test(test_every_table_op_on_every_target),
        cmocka_unit_test(test_every_binary_table_op_on_every_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
