/* tests/unit/test_cuda_fused — the applier's fused kernels on the cuda target, without a GPU: every
 * generated cluster of zoo:bert-layer / zoo:gpt2-block compiles for sm_90 with registers recorded, gets
 * the launch configuration the codegen asked for, and its CUDA source run on the host (C++ shim, as in
 * test_codegen) matches the unfused cpu graph; the cuBLASLt / cuDNN epilogue mapping case by case;
 * fa_apply on cuda refuses without a driver. The GPU half is test_cuda_fused_gpu. */
#include "testutil.h"

#include "advisor/gate.h"
#include "applier/applier.h"
#include "runtime/cuda_epilogue.h"
#include "graph/graph.h"
#ifdef FA_HAVE_CUDA
#include "runtime/cuda/cuda.h"
#endif

#include <dlfcn.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

/* ---- the epilogue mapping (pure) ---- */

static fa_cuda_epilogue map(const char *anchor, fa_cuda_bias_kind bias, int n, const fa_post_op *ops, const bool *vec,
                            char *why)
{
    fa_cuda_epilogue_query q = {.anchor_op = anchor, .anchor_bias = bias, .n_post_ops = n, .post_ops = ops,
                                .operand_is_bias_vector = vec};
    return fa_cuda_epilogue_map(&q, why, 256);
}

static void test_epilogue_matmul_bias_add_maps_to_cublaslt_bias(void **s)
{
    (void)s;
    char why[256];
    const fa_post_op ops[] = {{FA_POST_OP_ADD, 0, 0, 0}};
    const bool vec[] = {true};
    assert_int_equal(map("MatMul", FA_CUDA_BIAS_ABSENT, 1, ops, vec, why), FA_CUDA_EPI_CUBLASLT_BIAS);
    assert_string_equal(why, "");
    assert_string_equal(fa_cuda_epilogue_name(FA_CUDA_EPI_CUBLASLT_BIAS), "cublaslt:bias");
}

static void test_epilogue_gemm_own_bias_then_relu_maps_to_relu_bias(void **s)
{
    (void)s;
    char why[256];
    const fa_post_op ops[] = {{FA_POST_OP_RELU, 0, 0, -1}};
    assert_int_equal(map("Gemm", FA_CUDA_BIAS_VECTOR, 1, ops, NULL, why), FA_CUDA_EPI_CUBLASLT_RELU_BIAS);
    const fa_post_op ops2[] = {{FA_POST_OP_ADD, 0, 0, 0}, {FA_POST_OP_RELU, 0, 0, -1}};
    const bool vec2[] = {true, false};
    assert_int_equal(map("MatMul", FA_CUDA_BIAS_ABSENT, 2, ops2, vec2, why), FA_CUDA_EPI_CUBLASLT_RELU_BIAS);
}

static void test_epilogue_matmul_bias_gelu_tanh_maps_gelu_erf_refused(void **s)
{
    (void)s;
    char why[256];
    const fa_post_op tanh_ops[] = {{FA_POST_OP_ADD, 0, 0, 0}, {FA_POST_OP_GELU_TANH, 0, 0, -1}};
    const bool vec[] = {true, false};
    assert_int_equal(map("MatMul", FA_CUDA_BIAS_ABSENT, 2, tanh_ops, vec, why), FA_CUDA_EPI_CUBLASLT_GELU_BIAS);
    const fa_post_op erf_ops[] = {{FA_POST_OP_ADD, 0, 0, 0}, {FA_POST_OP_GELU_ERF, 0, 0, -1}};
    assert_int_equal(map("MatMul", FA_CUDA_BIAS_ABSENT, 2, erf_ops, vec, why), FA_CUDA_EPI_NONE);
    assert_non_null(strstr(why, "no cuda epilogue for gelu_erf"));
    assert_non_null(strstr(why, "tanh approximation"));
}

static void test_epilogue_conv_bias_relu_maps_to_cudnn_others_refused(void **s)
{
    (void)s;
    char why[256];
    const fa_post_op relu[] = {{FA_POST_OP_RELU, 0, 0, -1}};
    assert_int_equal(map("Conv", FA_CUDA_BIAS_VECTOR, 1, relu, NULL, why), FA_CUDA_EPI_CUDNN_CONV_BIAS_RELU);
    /* bias given as a per-channel Add */
    const fa_post_op add_relu[] = {{FA_POST_OP_ADD, 0, 0, 0}, {FA_POST_OP_RELU, 0, 0, -1}};
    const bool vec[] = {true, false};
    assert_int_equal(map("Conv", FA_CUDA_BIAS_ABSENT, 2, add_relu, vec, why), FA_CUDA_EPI_CUDNN_CONV_BIAS_RELU);
    /* no bias at all */
    assert_int_equal(map("Conv", FA_CUDA_BIAS_ABSENT, 1, relu, NULL, why), FA_CUDA_EPI_NONE);
    assert_non_null(strstr(why, "no cuda epilogue for relu"));
    assert_non_null(strstr(why, "without a bias vector"));
    /* other activations */
    const fa_post_op sig[] = {{FA_POST_OP_SIGMOID, 0, 0, -1}};
    assert_int_equal(map("Conv", FA_CUDA_BIAS_VECTOR, 1, sig, NULL, why), FA_CUDA_EPI_NONE);
    assert_string_equal(why, "no cuda epilogue for sigmoid");
    const fa_post_op clip[] = {{FA_POST_OP_CLIP, 0, 6, -1}};
    assert_int_equal(map("Conv", FA_CUDA_BIAS_VECTOR, 1, clip, NULL, why), FA_CUDA_EPI_NONE);
    assert_string_equal(why, "no cuda epilogue for clip(0,6)");
    /* conv + bias and nothing else: cuDNN's identity activation is one algorithm only */
    assert_int_equal(map("Conv", FA_CUDA_BIAS_ABSENT, 1, (const fa_post_op[]){{FA_POST_OP_ADD, 0, 0, 0}}, (const bool[]){true}, why),
                     FA_CUDA_EPI_NONE);
    assert_non_null(strstr(why, "no cuda epilogue for add"));
    assert_non_null(strstr(why, "Relu only"));
}

static void test_epilogue_residual_add_and_second_activation_refused_by_name(void **s)
{
    (void)s;
    char why[256];
    /* residual: the operand is a full tensor, not a bias vector */
    const fa_post_op res[] = {{FA_POST_OP_ADD, 0, 0, 0}};
    const bool full[] = {false};
    assert_int_equal(map("MatMul", FA_CUDA_BIAS_ABSENT, 1, res, full, why), FA_CUDA_EPI_NONE);
    assert_string_equal(why, "no cuda epilogue for add (the operand is not a bias vector)");
    /* bias then residual */
    const fa_post_op two[] = {{FA_POST_OP_ADD, 0, 0, 0}, {FA_POST_OP_ADD, 0, 0, 0}};
    const bool vf[] = {true, false};
    assert_int_equal(map("MatMul", FA_CUDA_BIAS_ABSENT, 2, two, vf, why), FA_CUDA_EPI_NONE);
    assert_non_null(strstr(why, "a second add after the bias"));
    /* relu then another step */
    const fa_post_op after[] = {{FA_POST_OP_RELU, 0, 0, -1}, {FA_POST_OP_MUL, 0, 0, 0}};
    assert_int_equal(map("Gemm", FA_CUDA_BIAS_VECTOR, 2, after, (const bool[]){false, false}, why), FA_CUDA_EPI_NONE);
    assert_string_equal(why, "no cuda epilogue for mul (after an activation)");
    /* Gemm with a full C matrix */
    assert_int_equal(map("Gemm", FA_CUDA_BIAS_OTHER, 1, (const fa_post_op[]){{FA_POST_OP_RELU, 0, 0, -1}}, NULL, why), FA_CUDA_EPI_NONE);
    assert_non_null(strstr(why, "not one value per output column"));
    /* an anchor with no library epilogue */
    assert_int_equal(map("ConvTranspose", FA_CUDA_BIAS_VECTOR, 1, (const fa_post_op[]){{FA_POST_OP_RELU, 0, 0, -1}}, NULL, why),
                     FA_CUDA_EPI_NONE);
    assert_string_equal(why, "no cuda epilogue for relu (anchor ConvTranspose)");
    /* leaky relu on a matmul */
    assert_int_equal(map("MatMul", FA_CUDA_BIAS_ABSENT, 2, (const fa_post_op[]){{FA_POST_OP_ADD, 0, 0, 0}, {FA_POST_OP_LEAKY_RELU, 0.1f, 0, -1}},
                         (const bool[]){true, false}, why),
                     FA_CUDA_EPI_NONE);
    assert_string_equal(why, "no cuda epilogue for leaky_relu(0.100000001)");
}

/* The query read off real clusters: the bias Add of a transformer MatMul is a per-column vector. */
static int query_zoo_epilogues(const char *model, int *mapped)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    if (fa_zoo_build(ctx, model, 2, &g)) fail_msg("%s", fa_ctx_errmsg(ctx));
    if (fa_graph_prepare(ctx, g, NULL) || fa_graph_index(ctx, g)) fail_msg("%s", fa_ctx_errmsg(ctx));
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    o.target = FA_TARGET_CUDA;
    fa_plan *p = NULL;
    if (fa_advise(ctx, g, NULL, &o, &p)) fail_msg("%s", fa_ctx_errmsg(ctx));
    int epis = 0;
    *mapped = 0;
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        if (c->kind != FA_CLUSTER_EPILOGUE) continue;
        /* the query the cuda target reads off the cluster's fused node (supports_node) */
        fa_graph *fg = NULL;
        if (fa_fused_graph(ctx, g, p, NULL, &c->id, 1, &fg)) fail_msg("%s", fa_ctx_errmsg(ctx));
        const fa_node *fnode = NULL;
        for (int k = 0; k < fg->n_topo; k++)
            if (!strncmp(fg->nodes[fg->topo[k]]->op_type, "Fused", 5)) fnode = fg->nodes[fg->topo[k]];
        assert_non_null(fnode);
        bool scratch[64] = {0};
        assert_true(c->n_post_ops < FA_CUDA_EPILOGUE_MAX_POST_OPS);
        fa_cuda_epilogue_query q;
        fa_cuda_epilogue_query_of_node(fg, fnode, scratch, &q);
        char why[256];
        fa_cuda_epilogue e = fa_cuda_epilogue_map(&q, why, sizeof why);
        print_message("%s cluster %d %s (%s): %s %s\n", model, c->id, c->label ? c->label : "", q.anchor_op,
                      fa_cuda_epilogue_name(e), why);
        epis++;
        if (e != FA_CUDA_EPI_NONE) (*mapped)++;
        else assert_non_null(strstr(why, "no cuda epilogue for "));
        /* a MatMul followed by an Add of a [hidden] constant: the operand is recognised as a bias vector */
        if (!strcmp(q.anchor_op, "MatMul") && c->n_post_ops >= 1 && c->post_ops[0].kind == FA_POST_OP_ADD &&
            c->post_ops[0].operand >= 0) {
            const fa_tensor *t = g->tensors[c->post_ops[0].operand];
            const fa_tensor *y = fa_graph_out(g, g->nodes[c->anchor], 0);
            if (t->rank == 1 && t->dims[0] == y->dims[y->rank - 1]) assert_true(scratch[0]);
        }
        /* the label names the activation: gelu_tanh after a bias maps to GELU_BIAS, gelu_erf never does */
        if (c->label && strstr(c->label, "gelu_erf")) assert_int_equal(e, FA_CUDA_EPI_NONE);
        if (c->label && !strcmp(c->label, "matmul+add+gelu_tanh") && scratch[0])
            assert_int_equal(e, FA_CUDA_EPI_CUBLASLT_GELU_BIAS);
        /* the advisor's label of the cluster (fa_gate_library_kernel: what `advise --target cuda`
         * shows) comes from the same query, built by the same function from the plan's cluster */
        static const char *k_label[FA_CUDA_EPI_COUNT] = {
            [FA_CUDA_EPI_CUBLASLT_BIAS] = "cuBLASLt epilogue BIAS", [FA_CUDA_EPI_CUBLASLT_RELU_BIAS] = "cuBLASLt epilogue RELU_BIAS",
            [FA_CUDA_EPI_CUBLASLT_GELU_BIAS] = "cuBLASLt epilogue GELU_BIAS",
            [FA_CUDA_EPI_CUDNN_CONV_BIAS_RELU] = "cuDNN fusion conv + bias + ReLU"};
        char lab[400];
        const char *lk = fa_gate_library_kernel(g, c, lab, sizeof lab);
        assert_non_null(lk);
        if (e != FA_CUDA_EPI_NONE) assert_non_null(strstr(lk, k_label[e]));
        else if (!strstr(lk, why)) fail_msg("cluster %d: the advisor says \"%s\", the runtime \"%s\"", c->id, lk, why);
        fa_graph_free(fg);
    }
    print_message("%s: %d epilogue clusters, %d map onto cuBLASLt/cuDNN\n", model, epis, *mapped);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
    return epis;
}

/* The one builder: more post-ops than any library takes, or malformed ones (n < 0), read as one
 * post-op no epilogue has; a post-op operand is a vector along y's channel axis (Conv: 1) by
 * broadcasting, a Conv's own B by the ONNX spec (1-D of C_out: read right-aligned, as before the
 * one builder, it was never a vector and a Conv + own bias + Relu never mapped to cuDNN). */
static void test_epilogue_query_builder_bounds_and_axis(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("builder");
    assert_non_null(g);
    int64_t yd[4] = {2, 8, 4, 4}, bd[1] = {8}, rd[4] = {2, 8, 4, 4};
    int64_t cd[3] = {8, 1, 1};
    int iy = fa_graph_tensor(g, "y"), ib = fa_graph_tensor(g, "b"), ir = fa_graph_tensor(g, "r"),
        ic = fa_graph_tensor(g, "c");
    assert_true(iy >= 0 && ib >= 0 && ir >= 0 && ic >= 0);
    fa_tensor *y = g->tensors[iy], *b = g->tensors[ib], *r = g->tensors[ir], *cv = g->tensors[ic];
    fa_tensor_set_shape(cv, FA_DTYPE_FLOAT, 3, cd);
    fa_tensor_set_shape(y, FA_DTYPE_FLOAT, 4, yd);
    fa_tensor_set_shape(b, FA_DTYPE_FLOAT, 1, bd);
    fa_tensor_set_shape(r, FA_DTYPE_FLOAT, 4, rd);
    fa_post_op ops[FA_CUDA_EPILOGUE_MAX_POST_OPS + 1];
    const fa_tensor *operand[FA_CUDA_EPILOGUE_MAX_POST_OPS + 1] = {0};
    for (int k = 0; k <= FA_CUDA_EPILOGUE_MAX_POST_OPS; k++) ops[k] = (fa_post_op){FA_POST_OP_RELU, 0, 0, -1};
    bool vec[FA_CUDA_EPILOGUE_MAX_POST_OPS + 1];
    fa_cuda_epilogue_query q;
    char why[200];
    fa_cuda_epilogue_query_build("FusedConv", b, y, ops, 1, operand, vec, &q);
    assert_string_equal(q.anchor_op, "Conv");
    assert_int_equal(q.anchor_bias, FA_CUDA_BIAS_VECTOR); /* [8] along Conv's channel axis 1 */
    assert_int_equal(fa_cuda_epilogue_map(&q, why, sizeof why), FA_CUDA_EPI_CUDNN_CONV_BIAS_RELU);
    fa_cuda_epilogue_query_build("MatMul", b, y, ops, 1, operand, vec, &q);
    assert_int_equal(q.anchor_bias, FA_CUDA_BIAS_OTHER); /* [8] is not y's last axis (4) */
    ops[0] = (fa_post_op){FA_POST_OP_ADD, 0, 0, 3};
    operand[0] = r; /* a residual, not a vector */
    fa_cuda_epilogue_query_build("Conv", NULL, y, ops, 2, operand, vec, &q);
    assert_false(vec[0]);
    operand[0] = b; /* [8] added to [2,8,4,4] aligns with W: not a channel vector */
    fa_cuda_epilogue_query_build("Conv", NULL, y, ops, 2, operand, vec, &q);
    assert_false(vec[0]);
    operand[0] = cv; /* [8,1,1]: one value per channel */
    fa_cuda_epilogue_query_build("Conv", NULL, y, ops, 2, operand, vec, &q);
    assert_true(vec[0]);
    assert_int_equal(fa_cuda_epilogue_map(&q, why, sizeof why), FA_CUDA_EPI_CUDNN_CONV_BIAS_RELU);
    for (int n = -1; n <= FA_CUDA_EPILOGUE_MAX_POST_OPS + 1; n += FA_CUDA_EPILOGUE_MAX_POST_OPS + 2) {
        fa_cuda_epilogue_query_build("Conv", b, y, ops, n, operand, vec, &q);
        assert_int_equal(q.n_post_ops, 1);
        assert_int_equal(q.post_ops[0].kind, FA_POST_OP_COUNT);
        assert_int_equal(fa_cuda_epilogue_map(&q, why, sizeof why), FA_CUDA_EPI_NONE);
    }
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

static void test_epilogue_query_of_zoo_transformer_clusters(void **s)
{
    (void)s;
    int mapped = 0;
    assert_true(query_zoo_epilogues("bert-layer", &mapped) >= 1);
    assert_true(mapped >= 1);
    assert_true(query_zoo_epilogues("gpt2-block", &mapped) >= 1);
    assert_true(mapped >= 1); /* matmul+add+gelu_tanh -> GELU_BIAS */
}

/* ---- fa_apply on cuda without a driver ---- */

static void test_apply_cuda_without_driver_refuses_before_touching_the_plan(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    if (fa_zoo_build(ctx, "gpt2-block", 1, &g)) fail_msg("%s", fa_ctx_errmsg(ctx));
    if (fa_graph_prepare(ctx, g, NULL) || fa_graph_index(ctx, g)) fail_msg("%s", fa_ctx_errmsg(ctx));
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    o.target = FA_TARGET_CUDA;
    fa_plan *p = NULL;
    if (fa_advise(ctx, g, NULL, &o, &p)) fail_msg("%s", fa_ctx_errmsg(ctx));
    int proposed = 0;
    for (int i = 0; i < p->n_clusters; i++) proposed += p->clusters[i].status == FA_CLUSTER_PROPOSED;
    assert_true(proposed > 0);
    fa_apply_result *res = (fa_apply_result *)(uintptr_t)0x1;
    fa_apply_options ao;
    fa_apply_options_default(&ao);
    ao.target = FA_TARGET_CUDA;
    assert_int_equal(fa_apply(ctx, g, p, &ao, &res), FA_ERR_UNSUPPORTED);
    print_message("fa_apply on cuda: %s\n", fa_ctx_errmsg(ctx));
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "cannot apply on cuda: "));
    /* no driver here (a toolkit build), or no cuda target at all (a build without the toolkit):
     * the reason says which, whatever the words (cli/ chooses its hint by it) */
#ifdef FA_HAVE_CUDA
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "no CUDA driver"));
    assert_int_equal(fa_ctx_reason(ctx), FA_REASON_DEVICE_UNAVAILABLE);
#else
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "no executor for it"));
    assert_int_equal(fa_ctx_reason(ctx), FA_REASON_NO_EXECUTOR);
#endif
    /* a later error of another kind carries no reason */
    fa_ctx_error(ctx, FA_ERR_INPUT, "no CUDA driver.onnx: cannot open");
    assert_int_equal(fa_ctx_reason(ctx), FA_REASON_NONE);
    assert_true(res == (fa_apply_result *)(uintptr_t)0x1); /* out untouched */
    int still = 0;
    for (int i = 0; i < p->n_clusters; i++) still += p->clusters[i].status == FA_CLUSTER_PROPOSED;
    assert_int_equal(still, proposed);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

#ifdef FA_HAVE_CUDA

/* ---- runtime/cuda/fused.c without a device ---- */

static void test_launch_dims_one_d_and_limits(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    unsigned b[3], gr[3];
    assert_int_equal(fa_cuda_fused_launch_dims(ctx, "k", 256, 4097, b, gr), FA_OK);
    assert_true(b[0] == 256 && b[1] == 1 && b[2] == 1 && gr[0] == 4097 && gr[1] == 1 && gr[2] == 1);
    assert_int_equal(fa_cuda_fused_launch_dims(ctx, "k", 0, 1, b, gr), FA_ERR_UNSUPPORTED);
    assert_int_equal(fa_cuda_fused_launch_dims(ctx, "k", 2048, 1, b, gr), FA_ERR_UNSUPPORTED);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "block of 2048 threads"));
    assert_int_equal(fa_cuda_fused_launch_dims(ctx, "k", 128, 0, b, gr), FA_ERR_UNSUPPORTED);
    assert_int_equal(fa_cuda_fused_launch_dims(ctx, "k", 128, (int64_t)1 << 31, b, gr), FA_ERR_UNSUPPORTED);
    assert_int_equal(fa_cuda_fused_launch_dims(ctx, "k", 1024, INT32_MAX, b, gr), FA_OK);
    fa_ctx_free(ctx);
}

static void test_fused_kernel_without_driver_refuses_to_load_and_marker_refuses_on_host(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    const uint8_t fake[16] = {0x7f, 'E', 'L', 'F'};
    fa_cuda_fused *k = NULL;
    assert_int_equal(fa_cuda_fused_create(ctx, fake, sizeof fake, "fa_fused_c1_x", 128, 10, 2, 1, 12, 0, &k), FA_OK);
    const fa_cuda_fused_stats *st = fa_cuda_fused_stats_of(k);
    assert_string_equal(st->name, "fa_fused_c1_x");
    assert_true(st->block[0] == 128 && st->grid[0] == 10 && st->n_in == 2 && st->n_out == 1);
    assert_int_equal(st->ptxas_registers, 12);
    assert_int_equal(st->registers, -1); /* not loaded */
    assert_int_equal(fa_cuda_fused_load(ctx, k), FA_ERR_UNSUPPORTED);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "no CUDA driver"));
    void *din[2] = {0}, *dout[1] = {0};
    assert_int_equal(fa_cuda_fused_launch(ctx, k, NULL, din, 2, dout, 1, NULL), FA_ERR_INTERNAL);
    fa_custom_kernel ck = {.name = "nvrtc:fused", .run = fa_cuda_fused_custom_run, .state = k};
    assert_true(fa_cuda_fused_is_device_kernel(&ck));
    assert_int_equal(ck.run(ck.state, ctx, NULL, NULL, 0, NULL, 0, 1), FA_ERR_UNSUPPORTED);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "host executor"));
    fa_custom_kernel host = {.name = "generated:fused"};
    assert_false(fa_cuda_fused_is_device_kernel(&host));
    fa_cuda_fused_free(k);
    fa_cuda_fused_free(NULL);
    /* too many parameters, empty cubin */
    assert_int_equal(fa_cuda_fused_create(ctx, fake, sizeof fake, "k", 128, 1, 70, 16, -1, -1, &k), FA_ERR_UNSUPPORTED);
    assert_int_equal(fa_cuda_fused_create(ctx, fake, 0, "k", 128, 1, 1, 1, -1, -1, &k), FA_ERR_INTERNAL);
    fa_ctx_free(ctx);
}

/* ---- generated clusters of the zoo transformers: sm_90 cubins, launch config, host shim ---- */

static int spawn_wait(char *const argv[])
{
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0) return -1;
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The CUDA built-ins the generated kernels use, mapped onto the host (copied from test_codegen:
 * one POSIX thread per CUDA thread with a block barrier for row kernels, a plain (block, thread)
 * loop for grid-stride elementwise kernels). Checks index arithmetic and block decomposition,
 * not the device compiler or timing. */
static const char CUDA_SHIM[] =
    "#include <math.h>\n#include <pthread.h>\n#include <stdint.h>\n#include <string.h>\n"
    "struct fa_dim3 { unsigned x, y, z; };\n"
    "static thread_local fa_dim3 threadIdx, blockIdx;\n"
    "static fa_dim3 blockDim, gridDim;\n"
    "static pthread_barrier_t fa_bar;\n"
    "static float fa_shfl_buf[1024];\n"
    "#define __global__\n#define __device__\n#define __forceinline__ inline\n#define __restrict__ __restrict\n"
    "#define __launch_bounds__(x)\n#define __shared__ static\n"
    "static inline void __syncthreads(void) { pthread_barrier_wait(&fa_bar); }\n"
    "static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }\n"
    "static inline float __shfl_sync(unsigned, float v, int src)\n"
    "{\n"
    "    unsigned t = threadIdx.x;\n"
    "    fa_shfl_buf[t] = v;\n"
    "    pthread_barrier_wait(&fa_bar);\n"
    "    float r = fa_shfl_buf[(t & ~31u) + (unsigned)src];\n"
    "    pthread_barrier_wait(&fa_bar);\n"
    "    return r;\n"
    "}\n"
    "static inline float __shfl_xor_sync(unsigned, float v, int o)\n"
    "{\n"
    "    unsigned t = threadIdx.x;\n"
    "    fa_shfl_buf[t] = v;\n"
    "    pthread_barrier_wait(&fa_bar);\n"
    "    float r = fa_shfl_buf[t ^ (unsigned)o];\n"
    "    pthread_barrier_wait(&fa_bar);\n"
    "    return r;\n"
    "}\n";

typedef int (*emul_fn)(const void *const *, void *const *, unsigned, unsigned, int);

static emul_fn build_shim(const fa_graph *g, const fa_cluster *c, const fa_buf *src, const fa_codegen_info *info,
                          void **h)
{
    fa_buf cpp;
    fa_buf_init(&cpp);
    fa_buf_puts(&cpp, CUDA_SHIM);
    fa_buf_append(&cpp, src->data, src->len);
    fa_buf_puts(&cpp, "\nstatic const void *const *fa_in;\nstatic void *const *fa_out;\nstatic unsigned fa_blk;\n");
    fa_buf_puts(&cpp, "static void fa_call(void)\n{\n");
    fa_buf_printf(&cpp, "    %s(", info->name);
    for (int k = 0; k < c->n_inputs; k++)
        fa_buf_printf(&cpp, "%s(const %s *)fa_in[%d]", k ? ", " : "",
                      g->tensors[c->inputs[k]]->dtype == FA_DTYPE_BOOL ? "unsigned char" : "float", k);
    for (int k = 0; k < c->n_outputs; k++) fa_buf_printf(&cpp, ", (float *)fa_out[%d]", k);
    fa_buf_puts(&cpp, ");\n}\n"
                      "static void *fa_thread(void *arg)\n{\n"
                      "    threadIdx.x = (unsigned)(uintptr_t)arg;\n    blockIdx.x = fa_blk;\n    fa_call();\n    return 0;\n}\n"
                      "extern \"C\" int fa_emul_launch(const void *const *in, void *const *out, unsigned grid, unsigned block, int sync)\n"
                      "{\n"
                      "    fa_in = in;\n    fa_out = out;\n    blockDim.x = block;\n    gridDim.x = grid;\n"
                      "    pthread_t th[1024];\n    pthread_attr_t at;\n    pthread_attr_init(&at);\n"
                      "    pthread_attr_setstacksize(&at, 1 << 18);\n"
                      "    for (unsigned b = 0; b < grid; b++) {\n"
                      "        fa_blk = b;\n"
                      "        if (!sync) {\n"
                      "            for (unsigned t = 0; t < block; t++) { threadIdx.x = t; blockIdx.x = b; fa_call(); }\n"
                      "            continue;\n"
                      "        }\n"
                      "        pthread_barrier_init(&fa_bar, 0, block);\n"
                      "        for (unsigned t = 0; t < block; t++)\n"
                      "            if (pthread_create(&th[t], &at, fa_thread, (void *)(uintptr_t)t)) return -1;\n"
                      "        for (unsigned t = 0; t < block; t++) pthread_join(th[t], 0);\n"
                      "        pthread_barrier_destroy(&fa_bar);\n"
                      "    }\n"
                      "    return 0;\n"
                      "}\n");
    static int seq;
    char cpath[1024], sopath[1024];
    snprintf(cpath, sizeof cpath, "%s/cf%d_%s.cpp", fa_test_tmpdir(), seq, info->name);
    snprintf(sopath, sizeof sopath, "%s/cf%d_%s.so", fa_test_tmpdir(), seq, info->name);
    seq++;
    FILE *f = fopen(cpath, "wb");
    assert_non_null(f);
    fwrite(cpp.data, 1, cpp.len, f);
    fclose(f);
    fa_buf_free(&cpp);
    char *argv[] = {"c++", "-O1", "-std=c++17", "-pthread", "-shared", "-fPIC", "-o", sopath, cpath, NULL};
    if (spawn_wait(argv) != 0) fail_msg("c++ failed on %s", cpath);
    *h = dlopen(sopath, RTLD_NOW | RTLD_LOCAL);
    if (!*h) fail_msg("dlopen %s: %s", sopath, dlerror());
    emul_fn fn = (emul_fn)dlsym(*h, "fa_emul_launch");
    assert_non_null(fn);
    return fn;
}

static bool needs_codegen(const fa_cluster *c)
{
    return c->kind == FA_CLUSTER_ELEMWISE_CHAIN || c->kind == FA_CLUSTER_REDUCTION || c->kind == FA_CLUSTER_HORIZONTAL ||
           c->kind == FA_CLUSTER_ATTENTION;
}

/* Every generated cluster the advisor proposes for the cuda target on zoo model `name`. Returns the
 * number checked. */
static int check_zoo_model(const char *name)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    if (fa_zoo_build(ctx, name, 1, &g)) fail_msg("%s", fa_ctx_errmsg(ctx));
    if (fa_graph_prepare(ctx, g, NULL) || fa_graph_index(ctx, g)) fail_msg("%s", fa_ctx_errmsg(ctx));
    fa_advise_options o = fa_advise_options_default();
    o.target = FA_TARGET_CUDA;
    o.arch = "sm_90";
    fa_plan *p = NULL;
    if (fa_advise(ctx, g, NULL, &o, &p)) fail_msg("%s: advise: %s", name, fa_ctx_errmsg(ctx));
    /* cluster boundary tensors become graph outputs so the unfused run exposes them */
    bool *sel = calloc((size_t)p->n_clusters + 1, 1);
    for (int i = 0; i < p->n_clusters; i++) {
        fa_cluster *c = &p->clusters[i];
        if (!needs_codegen(c) || c->status != FA_CLUSTER_PROPOSED) continue;
        sel[i] = true;
        int *lists[2] = {c->inputs, c->outputs};
        int counts[2] = {c->n_inputs, c->n_outputs};
        for (int l = 0; l < 2; l++)
            for (int k = 0; k < counts[l]; k++) {
                int tid = lists[l][k];
                const fa_tensor *t = g->tensors[tid];
                if ((t->flags & FA_TENSOR_CONST) || (t->flags & FA_TENSOR_GRAPH_INPUT)) continue;
                bool is_out = false;
                for (int q = 0; q < g->n_outputs; q++) is_out |= g->outputs[q] == tid;
                if (!is_out) assert_int_equal(fa_graph_add_output(ctx, g, tid), FA_OK);
            }
    }
    assert_int_equal(fa_graph_index(ctx, g), FA_OK);
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2};
    fa_exec *e = NULL;
    if (fa_exec_create(ctx, g, &eo, &e)) fail_msg("%s: exec: %s", name, fa_ctx_errmsg(ctx));
    float **gin = calloc((size_t)g->n_inputs + 1, sizeof *gin);
    fa_rng r;
    fa_rng_seed(&r, 7);
    for (int i = 0; i < g->n_inputs; i++) {
        const fa_tensor *x = g->tensors[g->inputs[i]];
        assert_int_equal(x->dtype, FA_DTYPE_FLOAT);
        int64_t n = fa_tensor_numel(x);
        gin[i] = malloc((size_t)(n ? n : 1) * sizeof(float));
        for (int64_t k = 0; k < n; k++) gin[i][k] = fa_rng_uniform(&r, -2.0f, 2.0f) + 0.25f * (float)(k % 7);
        fa_value v = {.data = gin[i], .dtype = FA_DTYPE_FLOAT, .rank = x->rank};
        memcpy(v.dims, x->dims, sizeof v.dims);
        if (fa_exec_set_input(ctx, e, i, &v)) fail_msg("%s: set input: %s", name, fa_ctx_errmsg(ctx));
    }
    if (fa_exec_run(ctx, e, NULL)) fail_msg("%s: run: %s", name, fa_ctx_errmsg(ctx));
    int checked = 0;
    for (int i = 0; i < p->n_clusters; i++) {
        if (!sel[i]) continue;
        fa_cluster *c = &p->clusters[i];
        fa_buf src;
        fa_buf_init(&src);
        fa_codegen_info info;
        if (fa_codegen_cuda(ctx, g, c, p->hash, &src, &info)) fail_msg("%s: %s", name, fa_ctx_errmsg(ctx));
        /* NVRTC for sm_90: a cubin and the register count ptxas reported */
        fa_cuda_compiled cc;
        if (fa_cuda_nvrtc_compile(ctx, src.data, info.name, "sm_90", &cc))
            fail_msg("%s: cluster %d: %s", name, c->id, fa_ctx_errmsg(ctx));
        const fa_cuda_kernel_info *ki = fa_cuda_compiled_kernel(&cc, info.name);
        assert_non_null(ki);
        fa_cuda_kernel_info nv = *ki;
        uint8_t *cubin = cc.cubin;
        size_t cubin_len = cc.cubin_size;
        cc.cubin = NULL; /* freed below with the test's own free(cubin) */
        fa_cuda_compiled_free(&cc);
        assert_non_null(cubin);
        assert_true(cubin_len > 64);
        assert_memory_equal(cubin, "\x7f" "ELF", 4);
        assert_true(nv.registers > 0);
        /* the launch configuration the executor would use = the codegen's */
        fa_cuda_fused *k = NULL;
        if (fa_cuda_fused_create(ctx, cubin, cubin_len, info.name, info.block_size, info.grid, c->n_inputs, c->n_outputs,
                                 nv.registers, nv.spill_stores + nv.spill_loads, &k))
            fail_msg("%s: cluster %d: %s", name, c->id, fa_ctx_errmsg(ctx));
        const fa_cuda_fused_stats *st = fa_cuda_fused_stats_of(k);
        assert_int_equal(st->block[0], (unsigned)info.block_size);
        assert_int_equal(st->grid[0], (unsigned)info.grid);
        assert_true(st->block[1] == 1 && st->block[2] == 1 && st->grid[1] == 1 && st->grid[2] == 1);
        assert_string_equal(st->name, info.name);
        assert_int_equal(st->ptxas_registers, nv.registers);
        /* the .cu run on the host with that configuration vs the unfused cpu graph */
        void *h = NULL;
        emul_fn launch = build_shim(g, c, &src, &info, &h);
        const void **in = calloc((size_t)c->n_inputs + 1, sizeof *in);
        for (int q = 0; q < c->n_inputs; q++) {
            int tid = c->inputs[q];
            in[q] = g->tensors[tid]->data;
            for (int j = 0; j < g->n_inputs; j++)
                if (g->inputs[j] == tid) in[q] = gin[j];
            for (int j = 0; j < g->n_outputs; j++)
                if (g->outputs[j] == tid && !in[q]) in[q] = fa_exec_output(e, j)->data;
            if (!in[q] && fa_tensor_numel(g->tensors[tid]) > 0)
                fail_msg("%s: no value for cluster input '%s'", name, g->tensors[tid]->name);
        }
        void **out = calloc((size_t)c->n_outputs + 1, sizeof *out);
        for (int q = 0; q < c->n_outputs; q++) {
            int64_t n = fa_tensor_numel(g->tensors[c->outputs[q]]);
            out[q] = malloc((size_t)(n ? n : 1) * sizeof(float));
            for (int64_t j = 0; j < n; j++) ((float *)out[q])[j] = NAN;
        }
        assert_int_equal(launch((const void *const *)in, (void *const *)out, st->grid[0], st->block[0],
                                c->kind == FA_CLUSTER_REDUCTION || c->kind == FA_CLUSTER_ATTENTION),
                         0);
        double worst = 0;
        for (int q = 0; q < c->n_outputs; q++) {
            const fa_value *u = NULL;
            for (int j = 0; j < g->n_outputs; j++)
                if (g->outputs[j] == c->outputs[q]) u = fa_exec_output(e, j);
            assert_non_null(u);
            int64_t n = fa_value_numel(u);
            double md = 0, mu = 0;
            for (int64_t j = 0; j < n; j++) {
                double a = ((float *)out[q])[j], b = ((const float *)u->data)[j];
                if (isnan(a) != isnan(b))
                    fail_msg("%s: cluster %d output %s[%lld]: cuda (host) %g unfused %g", name, c->id,
                             g->tensors[c->outputs[q]]->name, (long long)j, a, b);
                if (isnan(a)) continue;
                if (fabs(a - b) > md) md = fabs(a - b);
                if (fabs(b) > mu) mu = fabs(b);
            }
            double err = md / (mu > 1e-12 ? mu : 1e-12);
            if (err > worst) worst = err;
            free(out[q]);
        }
        print_message("%s cluster %d %-24s sm_90: %3d registers, %d spill bytes, block %u x grid %u, max rel error %.2g\n",
                      name, c->id, c->label ? c->label : "", nv.registers, nv.spill_stores + nv.spill_loads, st->block[0],
                      st->grid[0], worst);
        if (!(worst < 1e-5)) fail_msg("%s: cluster %d (%s): max rel error %.3g", name, c->id, c->label, worst);
        checked++;
        free(out);
        free(in);
        dlclose(h);
        fa_cuda_fused_free(k);
        free(cubin);
        fa_buf_free(&src);
    }
    for (int i = 0; i < g->n_inputs; i++) free(gin[i]);
    free(gin);
    free(sel);
    fa_exec_free(e);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
    return checked;
}

static void test_zoo_transformer_clusters_compile_for_sm90_launch_as_generated_and_match_unfused(void **s)
{
    (void)s;
    int bert = check_zoo_model("bert-layer");
    int gpt2 = check_zoo_model("gpt2-block");
    print_message("generated clusters checked: bert-layer %d, gpt2-block %d\n", bert, gpt2);
    assert_true(bert >= 3); /* the attention and the layer norms at least */
    assert_true(gpt2 >= 2); /* the attention and the decomposed layer norm */
}

#endif /* FA_HAVE_CUDA */

int main(void)
{
    /* a driver that cannot exist: the no-driver behaviour is tested even where a GPU is present */
    setenv("FA_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_epilogue_matmul_bias_add_maps_to_cublaslt_bias),
        cmocka_unit_test(test_epilogue_gemm_own_bias_then_relu_maps_to_relu_bias),
        cmocka_unit_test(test_epilogue_matmul_bias_gelu_tanh_maps_gelu_erf_refused),
        cmocka_unit_test(test_epilogue_conv_bias_relu_maps_to_cudnn_others_refused),
        cmocka_unit_test(test_epilogue_residual_add_and_second_activation_refused_by_name),
        cmocka_unit_test(test_epilogue_query_builder_bounds_and_axis),
        cmocka_unit_test(test_epilogue_query_of_zoo_transformer_clusters),
        cmocka_unit_test(test_apply_cuda_without_driver_refuses_before_touching_the_plan),
#ifdef FA_HAVE_CUDA
        cmocka_unit_test(test_launch_dims_one_d_and_limits),
        cmocka_unit_test(test_fused_kernel_without_driver_refuses_to_load_and_marker_refuses_on_host),
        cmocka_unit_test(test_zoo_transformer_clusters_compile_for_sm90_launch_as_generated_and_match_unfused),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
