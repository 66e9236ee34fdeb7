/* tests/unit/test_cuda_exec — the cuda target without a GPU: the driver loader refuses cleanly,
 * every executor kernel compiles with NVRTC for sm_80 and sm_90 (registers from the ptxas log,
 * no spills), the op-support check accepts the zoo models and names unsupported ops, and the
 * executor's NVTX range names are what the CUPTI post-pass parses. GPU runs: test_cuda_gpu. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifndef FA_HAVE_CUDA
int main(void)
{
    fprintf(stderr, "test_cuda_exec: built without the CUDA toolkit, skipped\n");
    return 77;
}
#else

#include <cupti.h>

#include "collector/cupti/cupti.h"
#include "roofline/roofline.h"
#include "runtime/cuda/cuda-impl.h"

/* Set in main before any loader call: the loader must then fail on every machine. */
#define MISSING_DRIVER "/nonexistent/fa-test/libcuda.so.1"

static void test_driver_loader_missing_libcuda_is_unsupported_not_fatal(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_cuda_driver_load(ctx), FA_ERR_UNSUPPORTED);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "no CUDA driver"));
    assert_non_null(strstr(fa_ctx_errmsg(ctx), MISSING_DRIVER));
    assert_int_equal(fa_ctx_reason(ctx), FA_REASON_DEVICE_UNAVAILABLE);
    /* remembered, still clean on the second call */
    fa_ctx_clear(ctx);
    assert_int_equal(fa_ctx_reason(ctx), FA_REASON_NONE);
    assert_int_equal(fa_cuda_driver_load(ctx), FA_ERR_UNSUPPORTED);
    assert_int_equal(fa_ctx_reason(ctx), FA_REASON_DEVICE_UNAVAILABLE);
    assert_int_equal(fa_cuda_device_count(), 0);
    fa_cuda_device_info di;
    assert_int_equal(fa_cuda_device_query(ctx, 0, &di), FA_ERR_UNSUPPORTED);
    assert_int_equal(fa_ctx_reason(ctx), FA_REASON_DEVICE_UNAVAILABLE);
    fa_ctx_free(ctx);
}

static void test_exec_create_without_driver_refuses_with_unsupported(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_graph_load(ctx, "zoo:mlp-tiny", NULL, &g), FA_OK);
    fa_cuda_exec *e = NULL;
    fa_exec_options o = {.target = FA_TARGET_CUDA};
    assert_int_equal(fa_cuda_exec_create(ctx, g, &o, &e), FA_ERR_UNSUPPORTED);
    assert_null(e);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "no CUDA driver"));
    assert_int_equal(fa_ctx_reason(ctx), FA_REASON_DEVICE_UNAVAILABLE);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static const fa_cuda_kernel_info *find_info(const fa_cuda_compiled *c, const char *name)
{
    for (int i = 0; i < c->n_kernels; i++)
        if (!strcmp(c->kernels[i].name, name)) return &c->kernels[i];
    return NULL;
}

static void compile_all_for(const char *arch)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_cuda_compiled c;
    fa_status st = fa_cuda_nvrtc_compile(ctx, fa_cuda_kernels_source(), "fa_kernels.cu", arch, &c);
    if (st) fprintf(stderr, "%s\n", fa_ctx_errmsg(ctx));
    assert_int_equal(st, FA_OK);
    assert_true(c.cubin_size > 1000);
    /* the entry table and the source agree: every entry compiled, nothing else */
    assert_int_equal(c.n_kernels, fa_cuda_kernel_count());
    for (int i = 0; i < fa_cuda_kernel_count(); i++) {
        const char *name = fa_cuda_kernel_entry(i);
        const fa_cuda_kernel_info *k = find_info(&c, name);
        if (!k) fail_msg("%s: entry %s missing from the ptxas log", arch, name);
        if (k->spill_stores || k->spill_loads)
            fail_msg("%s: %s spills (%d bytes stores, %d loads)", arch, name, k->spill_stores, k->spill_loads);
        assert_true(k->registers <= 255);
        if (strcmp(name, "fa_empty") != 0 && k->registers <= 0)
            fail_msg("%s: %s reports %d registers", arch, name, k->registers);
        fprintf(stderr, "  %s %-16s %3d registers, %d B stack\n", arch, name, k->registers, k->stack_frame);
    }
    fa_cuda_compiled_free(&c);
    fa_ctx_free(ctx);
}

static void test_every_kernel_compiles_for_sm80_without_spills(void **s)
{
    (void)s;
    compile_all_for("sm_80");
}

static void test_every_kernel_compiles_for_sm90_without_spills(void **s)
{
    (void)s;
    compile_all_for("sm_90");
}

static void test_nvrtc_compile_error_returns_log_not_abort(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_cuda_compiled c;
    assert_int_equal(fa_cuda_nvrtc_compile(ctx, "extern \"C\" __global__ void k(){ undefined_thing(); }", "bad.cu", "sm_90", &c),
                     FA_ERR_RUNTIME);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "bad.cu"));
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "undefined_thing"));
    fa_ctx_free(ctx);
}

static void test_ptxas_log_parser_reads_registers_spills_stack(void **s)
{
    (void)s;
    const char *log =
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'heavy' for 'sm_80'\n"
        "ptxas info    : Function properties for heavy\n"
        "ptxas         .     24 bytes stack frame, 16 bytes spill stores, 12 bytes spill loads\n"
        "ptxas info    : Used 255 registers, used 1 barriers, 24 bytes cumulative stack size\n"
        "ptxas info    : Compiling entry function 'light' for 'sm_80'\n"
        "ptxas info    : Function properties for light\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 10 registers, used 0 barriers\n";
    fa_ctx *ctx = fa_ctx_create();
    fa_cuda_kernel_info *k = NULL;
    int n = 0;
    assert_int_equal(fa_cuda_parse_ptxas_log(ctx, log, &k, &n), FA_OK);
    assert_int_equal(n, 2);
    assert_string_equal(k[0].name, "heavy");
    assert_int_equal(k[0].registers, 255);
    assert_int_equal(k[0].spill_stores, 16);
    assert_int_equal(k[0].spill_loads, 12);
    assert_int_equal(k[0].stack_frame, 24);
    assert_string_equal(k[1].name, "light");
    assert_int_equal(k[1].registers, 10);
    assert_int_equal(k[1].spill_stores, 0);
    free(k);
    fa_ctx_free(ctx);
}

static void check_zoo(const char *model)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_graph_load(ctx, model, NULL, &g), FA_OK);
    fa_status st = fa_cuda_exec_check_graph(ctx, g);
    if (st) fail_msg("%s: %s", model, fa_ctx_errmsg(ctx));
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void test_every_zoo_model_has_a_cuda_kernel_for_each_node(void **s)
{
    (void)s;
    for (int i = 0; i < fa_zoo_count(); i++) {
        char name[128];
        snprintf(name, sizeof name, "zoo:%s", fa_zoo_at(i)->name);
        check_zoo(name);
    }
}

static void test_unsupported_op_named_with_node_and_target(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("t");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 17), FA_OK);
    int x = fa_graph_tensor(g, "x");
    int64_t dims[2] = {2, 3};
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 2, dims);
    assert_int_equal(fa_graph_add_input(ctx, g, x), FA_OK);
    const char *in[] = {"x"}, *mid[] = {"r"}, *out[] = {"y"};
    assert_non_null(fa_graph_add_node(ctx, g, "relu_0", "Relu", "", 1, in, 1, mid));
    assert_non_null(fa_graph_add_node(ctx, g, "sign_1", "Sign", "", 1, mid, 1, out));
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y")), FA_OK);
    assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    assert_int_equal(fa_cuda_exec_check_graph(ctx, g), FA_ERR_UNSUPPORTED);
    assert_string_equal(fa_ctx_errmsg(ctx), "unsupported op Sign at node 'sign_1' on cuda");
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* The executor's NVTX range name round-trips through the CUPTI post-pass into node attribution. */
static void test_executor_range_name_attributes_kernel_to_node(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_node n = {.id = 17, .name = "blk.0/attn:qkv", .op_type = "MatMul"};
    char rn[256];
    fa_cuda_range_name(&n, rn, sizeof rn);
    char rn2[256];
    assert_string_equal(rn, fa_cupti_range_name(17, "MatMul", "blk.0/attn:qkv", rn2, sizeof rn2));
    uint8_t *buf = NULL;
    assert_int_equal(posix_memalign((void **)&buf, 8, 4096), 0);
    memset(buf, 0, 4096);
    size_t off = 0;
    CUpti_ActivityMarker2 m = {.kind = CUPTI_ACTIVITY_KIND_MARKER, .flags = CUPTI_ACTIVITY_FLAG_MARKER_START,
                               .timestamp = 10, .id = 1, .name = rn, .objectKind = CUPTI_ACTIVITY_OBJECT_THREAD};
    m.objectId.pt.threadId = 3;
    memcpy(buf + off, &m, sizeof m);
    off += sizeof m;
    CUpti_ActivityAPI a = {.kind = CUPTI_ACTIVITY_KIND_RUNTIME, .start = 11, .end = 12, .threadId = 3, .correlationId = 5};
    memcpy(buf + off, &a, sizeof a);
    off += sizeof a;
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.name = "ampere_sgemm_128x64_nn";
    k.start = 13;
    k.end = 20;
    k.correlationId = 5;
    memcpy(buf + off, &k, sizeof k);
    off += sizeof k;
    m.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
    m.timestamp = 21;
    m.name = NULL;
    memcpy(buf + off, &m, sizeof m);
    off += sizeof m;
    fa_trace *t = fa_trace_create("cupti");
    assert_int_equal(fa_cupti_process_buffer(ctx, t, buf, off, NULL), FA_OK);
    assert_int_equal(fa_cupti_trace_finish(ctx, t, NULL), FA_OK);
    const fa_activity *ka = NULL;
    for (size_t i = 0; i < t->n_acts; i++)
        if (t->acts[i].kind == FA_ACT_KERNEL) ka = &t->acts[i];
    assert_non_null(ka);
    assert_int_equal(ka->node, 17);
    assert_string_equal(ka->op_type, "MatMul");
    assert_string_equal(ka->node_name, "blk.0/attn:qkv");
    fa_trace_free(t);
    free(buf);
    fa_ctx_free(ctx);
}

static void test_ceilings_without_gpu_unsupported_and_theoretical_limits_stored(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_ceilings c;
    assert_int_equal(fa_target_measure_ceilings(ctx, fa_target_get(FA_TARGET_CUDA), 0, &c), FA_ERR_UNSUPPORTED);
    assert_int_equal(fa_roofline_ceilings(ctx, NULL, FA_TARGET_CUDA, 0, false, &c), FA_ERR_UNSUPPORTED);
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, fa_test_path(fa_test_tmpdir(), "ceil.db"), &st), FA_OK);
    int n = 0;
    assert_int_equal(fa_roofline_cuda_theoretical(ctx, st, "sm_90", &n), FA_OK);
    assert_int_equal(n, 7);
    fa_arena *ar = fa_arena_create(4096);
    fa_ceiling *cs = NULL;
    size_t nc = 0;
    assert_int_equal(fa_store_get_ceilings(ctx, st, "cuda:theoretical:sm_90", ar, &cs, &nc), FA_OK);
    assert_int_equal(nc, 7);
    bool saw_smem = false;
    for (size_t i = 0; i < nc; i++) {
        assert_string_equal(cs[i].source, "theoretical");
        if (!strcmp(cs[i].name, "smem_per_sm")) {
            saw_smem = true;
            assert_true(cs[i].value == 228.0 * 1024);
        }
    }
    assert_true(saw_smem);
    assert_int_equal(fa_roofline_cuda_theoretical(ctx, st, "sm_12", NULL), FA_ERR_INPUT);
    fa_arena_free(ar);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* The whole cuda execution plan (op planning, strides, broadcast, memory plan, the cuBLAS
 * argument mapping, the cuDNN descriptor parameters, each kernel's index arithmetic) run on the
 * host by the emulation, against the cpu target: max |emu - cpu| <= atol + rtol |cpu|. */
static void emulate_vs_cpu(const char *model, int batch, double atol, double rtol)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    fa_load_options lo = {.batch = batch};
    assert_int_equal(fa_graph_load(ctx, model, &lo, &g), FA_OK);
    fa_exec *cpu = NULL;
    fa_exec_options co = {.target = FA_TARGET_CPU};
    assert_int_equal(fa_exec_create(ctx, g, &co, &cpu), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(ctx, cpu, 11), FA_OK);
    assert_int_equal(fa_exec_run(ctx, cpu, NULL), FA_OK);
    fa_cuda_exec *emu = NULL;
    fa_status st = fa_cuda_exec_create_emulated(ctx, g, NULL, &emu);
    if (st) fail_msg("%s: %s", model, fa_ctx_errmsg(ctx));
    assert_int_equal(fa_cuda_exec_fill_inputs(ctx, emu, 11), FA_OK);
    st = fa_cuda_exec_run(ctx, emu, NULL);
    if (st) fail_msg("%s: %s", model, fa_ctx_errmsg(ctx));
    double worst_rel = 0;
    for (int i = 0; i < g->n_outputs; i++) {
        const fa_value *a = fa_exec_output(cpu, i), *b = fa_cuda_exec_output(emu, i);
        assert_non_null(a);
        assert_non_null(b);
        assert_int_equal(fa_value_numel(a), fa_value_numel(b));
        for (int64_t k = 0; k < fa_value_numel(a); k++) {
            double x = fa_load_as_double(a->data, a->dtype, k), y = fa_load_as_double(b->data, b->dtype, k);
            if (isnan(x) != isnan(y) || fabs(x - y) > atol + rtol * fabs(x))
                fail_msg("%s output %d element %lld: cpu %.7g emulated cuda %.7g", model, i, (long long)k, x, y);
            if (fabs(x) > 1e-3 && fabs(x - y) / fabs(x) > worst_rel) worst_rel = fabs(x - y) / fabs(x);
        }
    }
    uint64_t all = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (!(g->tensors[t]->flags & FA_TENSOR_CONST)) all += fa_tensor_bytes(g->tensors[t]);
    if (g->n_topo > 4) assert_true(fa_cuda_exec_peak_bytes(emu) < all);
    fprintf(stderr, "  %s: emulated cuda plan matches cpu (worst rel %.2g), peak %llu of %llu bytes\n", model,
            worst_rel, (unsigned long long)fa_cuda_exec_peak_bytes(emu), (unsigned long long)all);
    fa_cuda_exec_free(emu);
    fa_exec_free(cpu);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void test_emulated_plan_mlp_tiny_matches_cpu(void **s) { (void)s; emulate_vs_cpu("zoo:mlp-tiny", 3, 1e-5, 1e-4); }
static void test_emulated_plan_convnet_tiny_matches_cpu(void **s) { (void)s; emulate_vs_cpu("zoo:convnet-tiny", 2, 1e-4, 1e-3); }
static void test_emulated_plan_bert_layer_matches_cpu(void **s) { (void)s; emulate_vs_cpu("zoo:bert-layer", 1, 1e-4, 1e-3); }
static void test_emulated_plan_gpt2_block_matches_cpu(void **s) { (void)s; emulate_vs_cpu("zoo:gpt2-block", 1, 1e-4, 1e-3); }
static void test_emulated_plan_mobilenetv2_matches_cpu(void **s) { (void)s; emulate_vs_cpu("zoo:mobilenetv2", 1, 1e-3, 1e-3); }

/* ---- single-op graphs: emulated cuda plan vs cpu on ops and attributes the zoo lacks ---- */

typedef struct gin {
    const char *name;
    fa_dtype dt;
    int rank;
    int64_t dims[4];
    const void *data; /* NULL: graph input (filled from the seed); else a constant */
} gin;

typedef struct opg {
    fa_ctx *ctx;
    fa_graph *g;
    fa_node *n;
} opg;

static opg op_graph(const char *op, int opset, const gin *in, int n_in)
{
    opg t = {fa_ctx_create(), fa_graph_create("op"), NULL};
    assert_int_equal(fa_graph_set_opset(t.ctx, t.g, "", opset), FA_OK);
    const char *names[8];
    for (int i = 0; i < n_in; i++) {
        names[i] = in[i].name;
        int tid = fa_graph_tensor(t.g, in[i].name);
        fa_tensor *x = t.g->tensors[tid];
        fa_tensor_set_shape(x, in[i].dt, in[i].rank, in[i].dims);
        if (in[i].data) {
            int64_t ne = 1;
            for (int d = 0; d < in[i].rank; d++) ne *= in[i].dims[d];
            assert_int_equal(fa_tensor_set_data(t.ctx, x, in[i].data, (size_t)ne * fa_dtype_size(in[i].dt)), FA_OK);
        } else {
            assert_int_equal(fa_graph_add_input(t.ctx, t.g, tid), FA_OK);
        }
    }
    const char *outs[] = {"y"};
    t.n = fa_graph_add_node(t.ctx, t.g, "node_under_test", op, "", n_in, names, 1, outs);
    assert_non_null(t.n);
    assert_int_equal(fa_graph_add_output(t.ctx, t.g, fa_graph_find_tensor(t.g, "y")), FA_OK);
    return t;
}

static void op_check(opg *t)
{
    fa_load_options lo = {.no_fold = true};
    fa_status st = fa_graph_prepare(t->ctx, t->g, &lo);
    if (st) fail_msg("prepare: %s", fa_ctx_errmsg(t->ctx));
    fa_exec *cpu = NULL;
    assert_int_equal(fa_exec_create(t->ctx, t->g, NULL, &cpu), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(t->ctx, cpu, 5), FA_OK);
    assert_int_equal(fa_exec_run(t->ctx, cpu, NULL), FA_OK);
    fa_cuda_exec *emu = NULL;
    st = fa_cuda_exec_create_emulated(t->ctx, t->g, NULL, &emu);
    if (st) fail_msg("%s: %s", t->n->op_type, fa_ctx_errmsg(t->ctx));
    assert_int_equal(fa_cuda_exec_fill_inputs(t->ctx, emu, 5), FA_OK);
    st = fa_cuda_exec_run(t->ctx, emu, NULL);
    if (st) fail_msg("%s: %s", t->n->op_type, fa_ctx_errmsg(t->ctx));
    const fa_value *a = fa_exec_output(cpu, 0), *b = fa_cuda_exec_output(emu, 0);
    assert_int_equal(fa_value_numel(a), fa_value_numel(b));
    assert_true(fa_value_numel(a) > 0);
    for (int64_t k = 0; k < fa_value_numel(a); k++) {
        double x = fa_load_as_double(a->data, a->dtype, k), y = fa_load_as_double(b->data, b->dtype, k);
        if (fabs(x - y) > 1e-5 + 1e-4 * fabs(x))
            fail_msg("%s element %lld: cpu %.7g emulated cuda %.7g", t->n->op_type, (long long)k, x, y);
    }
    fa_cuda_exec_free(emu);
    fa_exec_free(cpu);
    fa_graph_free(t->g);
    fa_ctx_free(t->ctx);
}

static void test_emulated_slice_negative_step_and_axes(void **s)
{
    (void)s;
    int64_t st[] = {1, 4}, en[] = {3, -6}, ax[] = {0, 2}, sp[] = {1, -2};
    gin in[] = {{"x", FA_DTYPE_FLOAT, 3, {4, 6, 5}, NULL}, {"st", FA_DTYPE_INT64, 1, {2}, st},
                {"en", FA_DTYPE_INT64, 1, {2}, en}, {"ax", FA_DTYPE_INT64, 1, {2}, ax}, {"sp", FA_DTYPE_INT64, 1, {2}, sp}};
    opg t = op_graph("Slice", 13, in, 5);
    op_check(&t);
}

static void test_emulated_concat_transpose_expand(void **s)
{
    (void)s;
    float c[2 * 2 * 4];
    for (int i = 0; i < 16; i++) c[i] = (float)i * 0.25f;
    gin ci[] = {{"x", FA_DTYPE_FLOAT, 3, {2, 3, 4}, NULL}, {"c", FA_DTYPE_FLOAT, 3, {2, 2, 4}, c}};
    opg t = op_graph("Concat", 13, ci, 2);
    fa_node_add_attr_int(t.g, t.n, "axis", 1);
    op_check(&t);
    gin ti[] = {{"x", FA_DTYPE_FLOAT, 3, {2, 3, 4}, NULL}};
    t = op_graph("Transpose", 13, ti, 1);
    int64_t perm[] = {2, 0, 1};
    fa_node_add_attr_ints(t.g, t.n, "perm", perm, 3);
    op_check(&t);
    int64_t shape[] = {2, 3, 4};
    gin ei[] = {{"x", FA_DTYPE_FLOAT, 2, {3, 1}, NULL}, {"shape", FA_DTYPE_INT64, 1, {3}, shape}};
    t = op_graph("Expand", 13, ei, 2);
    op_check(&t);
}

static void test_emulated_gather_negative_indices(void **s)
{
    (void)s;
    int64_t idx[] = {0, 4, -1, 2};
    gin in[] = {{"x", FA_DTYPE_FLOAT, 3, {3, 5, 2}, NULL}, {"i", FA_DTYPE_INT64, 2, {2, 2}, idx}};
    opg t = op_graph("Gather", 13, in, 2);
    fa_node_add_attr_int(t.g, t.n, "axis", 1);
    op_check(&t);
}

static void test_emulated_gemm_transposes_alpha_beta_broadcast_c(void **s)
{
    (void)s;
    float b[5 * 4], c[5];
    for (int i = 0; i < 20; i++) b[i] = (float)(i % 7) * 0.1f - 0.3f;
    for (int i = 0; i < 5; i++) c[i] = (float)i;
    gin in[] = {{"a", FA_DTYPE_FLOAT, 2, {4, 3}, NULL}, {"b", FA_DTYPE_FLOAT, 2, {5, 4}, b}, {"c", FA_DTYPE_FLOAT, 1, {5}, c}};
    opg t = op_graph("Gemm", 13, in, 3);
    fa_node_add_attr_int(t.g, t.n, "transA", 1);
    fa_node_add_attr_int(t.g, t.n, "transB", 1);
    fa_node_add_attr_float(t.g, t.n, "alpha", 0.5f);
    fa_node_add_attr_float(t.g, t.n, "beta", 2.0f);
    op_check(&t);
}

static void test_emulated_matmul_batch_broadcast_both_sides_and_vector(void **s)
{
    (void)s;
    static float b[2 * 3 * 4 * 5];
    for (int i = 0; i < 120; i++) b[i] = (float)((i * 37) % 11) * 0.1f - 0.5f;
    gin in1[] = {{"a", FA_DTYPE_FLOAT, 4, {2, 3, 3, 4}, NULL}, {"b", FA_DTYPE_FLOAT, 2, {4, 5}, b}};
    opg t = op_graph("MatMul", 13, in1, 2);
    op_check(&t);
    gin in2[] = {{"a", FA_DTYPE_FLOAT, 2, {3, 4}, NULL}, {"b", FA_DTYPE_FLOAT, 4, {2, 3, 4, 5}, b}};
    t = op_graph("MatMul", 13, in2, 2);
    op_check(&t);
    gin in3[] = {{"a", FA_DTYPE_FLOAT, 3, {2, 3, 4}, NULL}, {"b", FA_DTYPE_FLOAT, 1, {4}, b}};
    t = op_graph("MatMul", 13, in3, 2);
    op_check(&t);
}

static void test_emulated_softmax_opset11_reduce_max_and_sum(void **s)
{
    (void)s;
    gin in[] = {{"x", FA_DTYPE_FLOAT, 3, {2, 3, 4}, NULL}};
    opg t = op_graph("Softmax", 11, in, 1);
    fa_node_add_attr_int(t.g, t.n, "axis", 1);
    op_check(&t);
    t = op_graph("LogSoftmax", 13, in, 1);
    fa_node_add_attr_int(t.g, t.n, "axis", 1);
    op_check(&t);
    t = op_graph("ReduceMax", 13, in, 1);
    int64_t axes[] = {1};
    fa_node_add_attr_ints(t.g, t.n, "axes", axes, 1);
    fa_node_add_attr_int(t.g, t.n, "keepdims", 0);
    op_check(&t);
    int64_t ax2[] = {0, 1};
    gin rs[] = {{"x", FA_DTYPE_FLOAT, 3, {2, 3, 4}, NULL}, {"axes", FA_DTYPE_INT64, 1, {2}, ax2}};
    t = op_graph("ReduceSum", 13, rs, 2);
    op_check(&t);
}

static void test_emulated_pools_with_pads_dilations_and_clip(void **s)
{
    (void)s;
    gin in[] = {{"x", FA_DTYPE_FLOAT, 4, {1, 2, 7, 7}, NULL}};
    int64_t k[] = {3, 3}, st[] = {2, 2}, p[] = {1, 1, 1, 1}, d[] = {2, 2};
    opg t = op_graph("AveragePool", 13, in, 1);
    fa_node_add_attr_ints(t.g, t.n, "kernel_shape", k, 2);
    fa_node_add_attr_ints(t.g, t.n, "strides", st, 2);
    fa_node_add_attr_ints(t.g, t.n, "pads", p, 4);
    op_check(&t);
    t = op_graph("MaxPool", 13, in, 1);
    fa_node_add_attr_ints(t.g, t.n, "kernel_shape", k, 2);
    fa_node_add_attr_ints(t.g, t.n, "pads", p, 4);
    fa_node_add_attr_ints(t.g, t.n, "dilations", d, 2);
    op_check(&t);
    float lo = -0.25f, hi = 0.5f;
    gin ci[] = {{"x", FA_DTYPE_FLOAT, 2, {3, 4}, NULL}, {"lo", FA_DTYPE_FLOAT, 0, {0}, &lo}, {"hi", FA_DTYPE_FLOAT, 0, {0}, &hi}};
    t = op_graph("Clip", 13, ci, 3);
    op_check(&t);
}

static void test_emulated_where_broadcast_condition(void **s)
{
    (void)s;
    uint8_t cond[4] = {1, 0, 0, 1};
    float other[1] = {-7.f};
    gin in[] = {{"c", FA_DTYPE_BOOL, 2, {1, 4}, cond}, {"x", FA_DTYPE_FLOAT, 2, {3, 4}, NULL}, {"o", FA_DTYPE_FLOAT, 0, {0}, other}};
    opg t = op_graph("Where", 13, in, 3);
    op_check(&t);
}

static void test_emulated_conv_groups_stride_pads_bias(void **s)
{
    (void)s;
    static float w[4 * 2 * 3 * 3], b[4];
    for (int i = 0; i < 72; i++) w[i] = (float)((i * 13) % 9) * 0.1f - 0.4f;
    for (int i = 0; i < 4; i++) b[i] = (float)i - 1.5f;
    gin in[] = {{"x", FA_DTYPE_FLOAT, 4, {2, 4, 9, 8}, NULL}, {"w", FA_DTYPE_FLOAT, 4, {4, 2, 3, 3}, w}, {"b", FA_DTYPE_FLOAT, 1, {4}, b}};
    opg t = op_graph("Conv", 13, in, 3);
    int64_t st[] = {2, 1}, p[] = {1, 2, 1, 2}, d[] = {1, 2};
    fa_node_add_attr_int(t.g, t.n, "group", 2);
    fa_node_add_attr_ints(t.g, t.n, "strides", st, 2);
    fa_node_add_attr_ints(t.g, t.n, "pads", p, 4);
    fa_node_add_attr_ints(t.g, t.n, "dilations", d, 2);
    op_check(&t);
}

/* cuDNN is loaded at run time; its library is part of the toolkit, so loading works without a
 * GPU (creating a handle would not). */
static void test_cudnn_loads_by_dlopen_without_gpu(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_status st = fa_cudnn_load(ctx);
    if (st) fail_msg("%s", fa_ctx_errmsg(ctx));
    assert_true(fa_cudnn_version() >= 90000);
    fprintf(stderr, "  cuDNN %zu loaded\n", fa_cudnn_version());
    fa_ctx_free(ctx);
}

int main(void)
{
    setenv("FA_CUDA_DRIVER", MISSING_DRIVER, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_loader_missing_libcuda_is_unsupported_not_fatal),
        cmocka_unit_test(test_exec_create_without_driver_refuses_with_unsupported),
        cmocka_unit_test(test_every_kernel_compiles_for_sm80_without_spills),
        cmocka_unit_test(test_every_kernel_compiles_for_sm90_without_spills),
        cmocka_unit_test(test_nvrtc_compile_error_returns_log_not_abort),
        cmocka_unit_test(test_ptxas_log_parser_reads_registers_spills_stack),
        cmocka_unit_test(test_every_zoo_model_has_a_cuda_kernel_for_each_node),
        cmocka_unit_test(test_unsupported_op_named_with_node_and_target),
        cmocka_unit_test(test_executor_range_name_attributes_kernel_to_node),
        cmocka_unit_test(test_ceilings_without_gpu_unsupported_and_theoretical_limits_stored),
        cmocka_unit_test(test_cudnn_loads_by_dlopen_without_gpu),
        cmocka_unit_test(test_emulated_plan_mlp_tiny_matches_cpu),
        cmocka_unit_test(test_emulated_plan_convnet_tiny_matches_cpu),
        cmocka_unit_test(test_emulated_plan_bert_layer_matches_cpu),
        cmocka_unit_test(test_emulated_plan_gpt2_block_matches_cpu),
        cmocka_unit_test(test_emulated_plan_mobilenetv2_matches_cpu),
        cmocka_unit_test(test_emulated_slice_negative_step_and_axes),
        cmocka_unit_test(test_emulated_concat_transpose_expand),
        cmocka_unit_test(test_emulated_gather_negative_indices),
        cmocka_unit_test(test_emulated_gemm_transposes_alpha_beta_broadcast_c),
        cmocka_unit_test(test_emulated_matmul_batch_broadcast_both_sides_and_vector),
        cmocka_unit_test(test_emulated_softmax_opset11_reduce_max_and_sum),
        cmocka_unit_test(test_emulated_pools_with_pads_dilations_and_clip),
        cmocka_unit_test(test_emulated_where_broadcast_condition),
        cmocka_unit_test(test_emulated_conv_groups_stride_pads_bias),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
