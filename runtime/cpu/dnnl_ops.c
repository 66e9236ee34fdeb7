/* runtime/cpu/dnnl_ops — oneDNN for the executor's non-GEMM ops where the library is faster than
 * our reference kernels (bench/bench_dnnl_ops decides which): depthwise/grouped Conv, MaxPool,
 * AveragePool, GlobalAveragePool/GlobalMaxPool, Softmax/LogSoftmax, LayerNormalization. These
 * kernels read and write plain (ONNX, row-major) tensors; where oneDNN's fast implementation
 * needs a blocked layout (the depthwise convolution) the reorders in and out are part of the
 * kernel and of its time. Attribute combinations oneDNN cannot express exactly decline, and the
 * registry's reference kernel runs instead. The fused plan's executor also gets here the
 * kernels on the blocked layout (fa_dnnl_ops_kernel_create_blocked), the cpu target's layout
 * slots and its reorder kernels (docs/runtime.md "Blocked layouts in the fused plan"). */
#include "dnnl-impl.h"
#include "graph/vmath.h"

#include <math.h>
#include <pthread.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most inputs a blocked Concat (own_concat) takes; a wider one runs plain. The blocked Concat
 * was oneDNN's, whose arguments sat in a fixed array of 20: DenseNet-121's third dense block
 * concatenates up to 25 tensors, and its last seven Concats ran plain, with 34 layout reorders
 * around them (406 us of its fused iteration). */
enum { OPS_MAX_CONCAT_INPUTS = 1000 };

/* Where one primitive argument's data comes from at run time. */
typedef enum { BIND_INPUT, BIND_OUTPUT, BIND_OWNED } bind_kind;

typedef struct ops_arg {
    int arg;            /* DNNL_ARG_* */
    bind_kind kind;
    int index;          /* node input or output index (BIND_INPUT / BIND_OUTPUT) */
    dnnl_memory_t mem;
    void *owned;        /* BIND_OWNED: buffer owned by the state (blocked tensors; constant weights
                           without a blob) */
    fa_blob *hold;      /* constant weights: the blob whose (derived) bytes mem reads */
    const void *held;   /* ... those bytes (fa_blob_unref_reader) */
} ops_arg;

typedef struct ops_state {
    dnnl_engine_t eng;  /* fa_dnnl_engine's, borrowed */
    dnnl_stream_t strm;
    dnnl_primitive_t prim;
    int n_args, cap_args;
    ops_arg *args;              /* n_args of cap_args (grow_args) */
    dnnl_exec_arg_t *xargs;     /* cap_args: ops_run's argument list, filled on each run */
    /* blocked-layout wrapper (depthwise conv): plain input -> src, dst -> plain output */
    dnnl_primitive_t reorder_in, reorder_out;
    dnnl_memory_t user_src, user_dst, blk_src, blk_dst; /* blk_* point into owned args */
    char impl[96];
    char name[64];
    /* outer loops around the primitive (an Einsum's fa_einsum_matmul.outer_*): the node's input
     * 0, input 1 and output 0 advanced by outer_str[0..2][l] floats for each index of loop l */
    int outer_rank;
    int64_t outer_dims[FA_MAX_RANK], outer_str[3][FA_MAX_RANK];
    /* a per-channel bias added after the primitive (conv1x1_matmul: a [Cout, 1] bias post-op sends
     * oneDNN 2.6's grouped matmul to its reference loop): y[o][c][i] += bias_after[c] over
     * bias_outer x bias_c x bias_inner floats of output 0; NULL none (owned) */
    float *bias_after;
    int64_t bias_outer, bias_c, bias_inner;
} ops_state;

static void ops_state_destroy(fa_kernel *k)
{
    ops_state *s = k->state;
    if (!s) return;
    if (s->prim) dnnl_primitive_destroy(s->prim);
    if (s->reorder_in) dnnl_primitive_destroy(s->reorder_in);
    if (s->reorder_out) dnnl_primitive_destroy(s->reorder_out);
    if (s->user_src) dnnl_memory_destroy(s->user_src);
    if (s->user_dst) dnnl_memory_destroy(s->user_dst);
    for (int i = 0; i < s->n_args; i++) {
        if (s->args[i].mem) dnnl_memory_destroy(s->args[i].mem);
        free(s->args[i].owned);
        fa_blob_unref_reader(s->args[i].hold, s->args[i].held);
    }
    free(s->args);
    free(s->xargs);
    free(s->bias_after);
    free(s);
    k->state = NULL;
}

/* Point each bound argument of s at its tensor's data, advanced by off[0] (input 0), off[1]
 * (input 1) or off[2] (output 0) floats (all 0 but for an Einsum's outer loops), into s->xargs. */
static fa_status bind_args(fa_ctx *ctx, ops_state *s, const fa_value *in, fa_value *out, const int64_t off[3])
{
    for (int i = 0; i < s->n_args; i++) {
        ops_arg *p = &s->args[i];
        if (p->kind == BIND_INPUT)
            DNNL_CHECK(ctx, dnnl_memory_set_data_handle(p->mem, (char *)in[p->index].data +
                                                                    off[p->index ? 1 : 0] * (int64_t)sizeof(float)));
        else if (p->kind == BIND_OUTPUT)
            DNNL_CHECK(ctx, dnnl_memory_set_data_handle(p->mem, (char *)out[p->index].data + off[2] * (int64_t)sizeof(float)));
        s->xargs[i] = (dnnl_exec_arg_t){p->arg, p->mem};
    }
    return FA_OK;
fail:
    return FA_ERR_RUNTIME;
}

static fa_status ops_run(fa_ctx *ctx, fa_kernel *k, const fa_node *n, const fa_value *in, int n_in,
                         fa_value *out, int n_out, int threads)
{
    (void)n, (void)n_in, (void)n_out, (void)threads; /* oneDNN uses the OpenMP thread count the executor set */
    ops_state *s = k->state;
    const int64_t zero[3] = {0, 0, 0};
    if (s->outer_rank > 0) { /* the primitive once per outer index, its operands at their offsets */
        int64_t total = 1, ix[FA_MAX_RANK] = {0};
        for (int l = 0; l < s->outer_rank; l++) total *= s->outer_dims[l];
        for (int64_t it = 0; it < total; it++) {
            int64_t off[3] = {0, 0, 0};
            for (int l = 0; l < s->outer_rank; l++)
                for (int t = 0; t < 3; t++) off[t] += ix[l] * s->outer_str[t][l];
            if (bind_args(ctx, s, in, out, off)) return FA_ERR_RUNTIME;
            DNNL_CHECK(ctx, dnnl_primitive_execute(s->prim, s->strm, s->n_args, s->xargs));
            for (int l = s->outer_rank - 1; l >= 0 && ++ix[l] == s->outer_dims[l]; l--) ix[l] = 0;
        }
        DNNL_CHECK(ctx, dnnl_stream_wait(s->strm));
        if (s->bias_after) {
            float *y = out[0].data;
            for (int64_t r = 0; r < s->bias_outer * s->bias_c; r++) {
                const float b = s->bias_after[r % s->bias_c];
                float *row = y + r * s->bias_inner;
                for (int64_t i = 0; i < s->bias_inner; i++) row[i] += b;
            }
        }
        return FA_OK;
    }
    if (bind_args(ctx, s, in, out, zero)) return FA_ERR_RUNTIME;
    if (s->reorder_in) {
        DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->user_src, in[0].data));
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, s->user_src}, {DNNL_ARG_TO, s->blk_src}};
        DNNL_CHECK(ctx, dnnl_primitive_execute(s->reorder_in, s->strm, 2, r));
    }
    DNNL_CHECK(ctx, dnnl_primitive_execute(s->prim, s->strm, s->n_args, s->xargs));
    if (s->reorder_out) {
        DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->user_dst, out[0].data));
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, s->blk_dst}, {DNNL_ARG_TO, s->user_dst}};
        DNNL_CHECK(ctx, dnnl_primitive_execute(s->reorder_out, s->strm, 2, r));
    }
    DNNL_CHECK(ctx, dnnl_stream_wait(s->strm));
    return FA_OK;
fail:
    return FA_ERR_RUNTIME;
}

/* Room for one more argument in s (args and xargs grown together). */
static fa_status grow_args(fa_ctx *ctx, ops_state *s)
{
    if (s->n_args < s->cap_args) return FA_OK;
    int cap = s->cap_args ? 2 * s->cap_args : 8;
    ops_arg *a = realloc(s->args, sizeof *a * (size_t)cap);
    if (a) s->args = a;
    dnnl_exec_arg_t *x = a ? realloc(s->xargs, sizeof *x * (size_t)cap) : NULL;
    if (x) s->xargs = x;
    if (!a || !x) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory for a oneDNN op's arguments");
    s->cap_args = cap;
    return FA_OK;
}

/* Add argument `arg` with memory descriptor md, bound as described; BIND_OWNED allocates a
 * 64-byte aligned buffer of the descriptor's size (and copies `init` into it through a reorder
 * from init_md when given: constant weights into the layout the primitive chose). */
static fa_status add_arg(fa_ctx *ctx, ops_state *s, int arg, const dnnl_memory_desc_t *md, bind_kind kind, int index,
                         const dnnl_memory_desc_t *init_md, const void *init)
{
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_memory_t user = NULL;
    if (grow_args(ctx, s)) return FA_ERR_NOMEM;
    ops_arg *p = &s->args[s->n_args++];
    *p = (ops_arg){.arg = arg, .kind = kind, .index = index};
    if (kind == BIND_OWNED) {
        size_t sz = dnnl_memory_desc_get_size(md);
        if (posix_memalign(&p->owned, 64, sz ? sz : 64) != 0) {
            p->owned = NULL;
            return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory for a oneDNN buffer of %zu bytes", sz);
        }
        memset(p->owned, 0, sz ? sz : 64); /* touched now, not in a timed iteration */
    }
    DNNL_CHECK(ctx, dnnl_memory_create(&p->mem, md, s->eng, kind == BIND_OWNED ? p->owned : DNNL_MEMORY_NONE));
    if (init) {
        DNNL_CHECK(ctx, dnnl_memory_create(&user, init_md, s->eng, (void *)init));
        DNNL_CHECK(ctx, dnnl_reorder_primitive_desc_create(&rpd, init_md, s->eng, md, s->eng, NULL));
        DNNL_CHECK(ctx, dnnl_primitive_create(&reorder, rpd));
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, p->mem}};
        DNNL_CHECK(ctx, dnnl_primitive_execute(reorder, s->strm, 2, r));
        DNNL_CHECK(ctx, dnnl_stream_wait(s->strm));
        dnnl_primitive_destroy(reorder);
        dnnl_primitive_desc_destroy(rpd);
        dnnl_memory_destroy(user);
    }
    return FA_OK;
fail:
    if (reorder) dnnl_primitive_destroy(reorder);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (user) dnnl_memory_destroy(user);
    return FA_ERR_RUNTIME;
}

/* Add constant weights W (plain bytes described by user_md) as argument `arg` in the layout md
 * the primitive chose: the run's one copy in that layout (fa_dnnl_const_weights). */
static fa_status add_const_arg(fa_ctx *ctx, ops_state *s, int arg, const dnnl_memory_desc_t *md,
                               const dnnl_memory_desc_t *user_md, const fa_tensor *W)
{
    if (grow_args(ctx, s)) return FA_ERR_NOMEM;
    ops_arg *p = &s->args[s->n_args++];
    *p = (ops_arg){.arg = arg, .kind = BIND_OWNED, .index = 1};
    const void *data = NULL;
    fa_status st = fa_dnnl_const_weights(ctx, W, user_md, md, &data, &p->hold, &p->owned);
    if (st) return st;
    p->held = data;
    DNNL_CHECK(ctx, dnnl_memory_create(&p->mem, md, s->eng, (void *)data)); /* read-only: a weights argument */
    return FA_OK;
fail:
    return FA_ERR_RUNTIME;
}

/* Create s->prim from op_desc and record the implementation oneDNN chose. The caller owns pd. */
static fa_status make_pd(fa_ctx *ctx, ops_state *s, const void *op_desc, dnnl_primitive_desc_t *pd)
{
    DNNL_CHECK(ctx, dnnl_primitive_desc_create(pd, op_desc, NULL, s->eng, NULL));
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
        snprintf(s->impl, sizeof s->impl, "%s", impl);
    return FA_OK;
fail:
    *pd = NULL;
    return FA_ERR_RUNTIME;
}

/* Whether the implementation make_pd recorded is oneDNN's reference loop on a blocked layout l
 * ("ref:any": declined there, the node runs plain; see commit_on). */
static bool ref_on_layout(const ops_state *s, fa_layout l)
{
    return l != FA_LAYOUT_PLAIN && !strncmp(s->impl, "ref", 3);
}

/* Create s->prim from pd (consumed: destroyed here, success or not), name the kernel. */
static fa_status commit_prim(fa_ctx *ctx, ops_state *s, dnnl_primitive_desc_t pd, const char *name, bool *handled)
{
    dnnl_status_t st = dnnl_primitive_create(&s->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success)
        return fa_ctx_error(ctx, FA_ERR_RUNTIME, "oneDNN: creating the %s primitive failed: status %d", name, (int)st);
    snprintf(s->name, sizeof s->name, "%s", name);
    *handled = true;
    return FA_OK;
}

/* A primitive reading node input 0 and writing node output 0, both plain: bind them and commit. */
static fa_status commit_src_dst(fa_ctx *ctx, ops_state *s, dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *src,
                                const dnnl_memory_desc_t *dst, const char *name, bool *handled)
{
    if (add_arg(ctx, s, DNNL_ARG_SRC, src, BIND_INPUT, 0, NULL, NULL) || add_arg(ctx, s, DNNL_ARG_DST, dst, BIND_OUTPUT, 0, NULL, NULL)) {
        dnnl_primitive_desc_destroy(pd);
        return FA_ERR_RUNTIME;
    }
    return commit_prim(ctx, s, pd, name, handled);
}

static bool io_float(const fa_graph *g, const fa_node *n, int n_in)
{
    for (int i = 0; i < n_in && i < n->n_inputs; i++) {
        const fa_tensor *t = fa_graph_in(g, n, i);
        if (t && t->dtype != FA_DTYPE_FLOAT) return false;
    }
    const fa_tensor *y = fa_graph_out(g, n, 0);
    return y && y->dtype == FA_DTYPE_FLOAT && fa_tensor_numel(y) > 0;
}

static dnnl_format_tag_t plain_tag(int rank)
{
    static const dnnl_format_tag_t t[] = {dnnl_format_tag_undef, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde, dnnl_abcdef};
    return rank >= 1 && rank <= 6 ? t[rank] : dnnl_format_tag_undef;
}

/* Per spatial dim: ONNX window geometry (Conv and pools share it: the Conv/MaxPool specs'
 * auto_pad rules) as oneDNN wants it — left padding pl, the right padding ONNX declares (pe), and
 * the right padding for oneDNN (pr): pe, or more when ceil_mode lets the last window reach past
 * it, so that out = floor((in + pl + pr - ((k-1)*d+1)) / s) + 1 holds as oneDNN checks. pr > pe
 * only under ceil_mode. Returns false when a value is out of what oneDNN accepts (a padding at
 * least the dilated kernel extent). */
static bool window_pads(const fa_node *n, int ns, const int64_t *in, const int64_t *out, const int64_t *k,
                        const int64_t *st, const int64_t *dil, int64_t *pl, int64_t *pr, int64_t *pe)
{
    const char *ap = fa_node_attr_string(n, "auto_pad", "NOTSET");
    const int64_t *pads = NULL;
    int np = fa_node_attr_ints(n, "pads", &pads);
    bool same_u = !strcmp(ap, "SAME_UPPER"), same_l = !strcmp(ap, "SAME_LOWER"), valid = !strcmp(ap, "VALID");
    for (int i = 0; i < ns; i++) {
        int64_t ek = (k[i] - 1) * dil[i] + 1;
        if (same_u || same_l) {
            int64_t tot = (out[i] - 1) * st[i] + ek - in[i];
            if (tot < 0) tot = 0;
            pl[i] = same_u ? tot / 2 : tot - tot / 2;
            pe[i] = tot - pl[i];
        } else if (valid || np != 2 * ns) {
            pl[i] = pe[i] = 0;
        } else {
            pl[i] = pads[i];
            pe[i] = pads[i + ns];
        }
        int64_t reach = (out[i] - 1) * st[i] + ek - in[i] - pl[i]; /* how far the last window reaches past the input */
        pr[i] = reach > pe[i] ? reach : pe[i];
        if (pl[i] < 0 || pe[i] < 0 || pl[i] >= ek || pr[i] >= ek) return false;
    }
    return true;
}

/* ---- one-tap 1-D convolution as a batched matrix product ------------------------------------- */

/* A Conv over [N, C, W] with a one-tap kernel (kernel 1, stride 1, no padding; any group G) on plain
 * N C W: for each batch item n and group g, Y[n, g] [Cout/G, W] = Wg [Cout/G, C/G] x X[n, g]
 * [C/G, W], which is oneDNN's matmul with the weights as its first operand, the activation as its
 * second and every operand plain — batched over the groups, looped over n (a batch broadcast of
 * the weights sends oneDNN 2.6 to its reference matmul), the bias added after (as a [Cout, 1] post-op
 * it does too). oneDNN's convolution for the same runs gemm on plain N C W or brgconv_1x1 on N W C
 * behind two reorders: SqueezeBERT's grouped 1x1 Conv1d at batch 8 (groups 4, 64 channels a group)
 * 256 -> 1024 0.58 and 1024 -> 256 0.81 ms on nwc without the reorders, its ungrouped 256 -> 256 0.85
 * ms as gemm, against 0.32, 0.31 and 0.31 ms as this product (brg:avx512_core, 2 threads;
 * bench/README.md "A fifth sweep"). Unfused plain nodes only; declines anything else. */
static fa_status create_conv1x1_matmul(fa_ctx *ctx, const fa_graph *g, const fa_node *n, ops_state *s, bool *handled)
{
    dnnl_primitive_desc_t pd = NULL;
    const fa_tensor *X = fa_graph_in(g, n, 0), *W = fa_graph_in(g, n, 1), *B = fa_graph_in(g, n, 2),
                    *Y = fa_graph_out(g, n, 0);
    if (!X || !W || !Y || X->rank != 3 || W->rank != 3 || Y->rank != 3 || W->dims[2] != 1) return FA_OK;
    if (!(W->flags & FA_TENSOR_CONST) || !W->data || (B && (!(B->flags & FA_TENSOR_CONST) || !B->data))) return FA_OK;
    int64_t group = fa_node_attr_int(n, "group", 1), N = X->dims[0], C = X->dims[1], Wd = X->dims[2], Co = Y->dims[1];
    if (group < 1 || C % group || Co % group || W->dims[0] != Co || W->dims[1] != C / group) return FA_OK;
    if (Y->dims[0] != N || Y->dims[2] != Wd || N < 1 || Wd < 1) return FA_OK;
    if (B && (B->rank != 1 || B->dims[0] != Co || B->dtype != FA_DTYPE_FLOAT)) return FA_OK;
    const int64_t *a;
    if (fa_node_attr_ints(n, "strides", &a) == 1 && a[0] != 1) return FA_OK;
    int np = fa_node_attr_ints(n, "pads", &a);
    for (int i = 0; i < np; i++)
        if (a[i] != 0) return FA_OK;
    int64_t Ig = C / group, Og = Co / group;
    dnnl_dims_t wd = {group, Og, Ig}, xd = {group, Ig, Wd}, yd = {group, Og, Wd};
    dnnl_memory_desc_t wmd, xmd, ymd;
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&wmd, 3, wd, dnnl_f32, dnnl_abc));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&xmd, 3, xd, dnnl_f32, dnnl_abc));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&ymd, 3, yd, dnnl_f32, dnnl_abc));
    dnnl_matmul_desc_t md;
    DNNL_CHECK(ctx, dnnl_matmul_desc_init(&md, &wmd, &xmd, NULL, &ymd));
    if (make_pd(ctx, s, &md, &pd)) goto fail;
    if (!strncmp(s->impl, "ref", 3) || !s->impl[0]) { /* no faster than what runs it now */
        dnnl_primitive_desc_destroy(pd);
        return FA_OK;
    }
    if (add_const_arg(ctx, s, DNNL_ARG_SRC, &wmd, &wmd, W) ||
        add_arg(ctx, s, DNNL_ARG_WEIGHTS, &xmd, BIND_INPUT, 0, NULL, NULL) ||
        add_arg(ctx, s, DNNL_ARG_DST, &ymd, BIND_OUTPUT, 0, NULL, NULL))
        goto fail;
    s->outer_rank = 1; /* n: the input and the output advance, the weights (input 1's role) do not */
    s->outer_dims[0] = N;
    s->outer_str[0][0] = C * Wd, s->outer_str[1][0] = 0, s->outer_str[2][0] = Co * Wd;
    if (B) {
        if (!(s->bias_after = malloc(sizeof(float) * (size_t)Co))) {
            dnnl_primitive_desc_destroy(pd);
            return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        }
        memcpy(s->bias_after, B->data, sizeof(float) * (size_t)Co);
        s->bias_outer = N, s->bias_c = Co, s->bias_inner = Wd;
    }
    return commit_prim(ctx, s, pd, group > 1 ? "dnnl:matmul(conv1x1,grouped)" : "dnnl:matmul(conv1x1)", handled);
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return FA_ERR_RUNTIME;
}

/* ---- depthwise and grouped convolution ---------------------------------------------------- */

/* Conv with group > 1 (ONNX Conv: X [N, C, spatial], W [M, C/group, k...], B [M]): oneDNN
 * chooses the activation layout (format_tag_any); a blocked choice (nChw16c, nChw8c: its jit
 * depthwise kernels: jit_dw on nChw16c, brdgmm_dw on NHWC) is wrapped in reorders from and to
 * plain NCHW. Declines (handled false), unless `force` is set, when oneDNN's choice is its gemm
 * or reference implementation or a plain layout — on plain NCHW oneDNN runs grouped convs as gemm, which runtime/cpu/dnnl.c already
 * does. */
static fa_status create_grouped_conv(fa_ctx *ctx, const fa_graph *g, const fa_node *n, ops_state *s, bool force,
                                     fa_layout l, bool *handled)
{
    dnnl_primitive_desc_t pd = NULL;
    const fa_tensor *X = fa_graph_in(g, n, 0), *W = fa_graph_in(g, n, 1), *B = fa_graph_in(g, n, 2),
                    *Y = fa_graph_out(g, n, 0);
    int64_t group = fa_node_attr_int(n, "group", 1);
    if (group <= 1 || !X || !W || !Y || !(W->flags & FA_TENSOR_CONST) || !W->data) return FA_OK;
    if (B && (!(B->flags & FA_TENSOR_CONST) || !B->data)) return FA_OK;
    int r = X->rank, ns = r - 2;
    if (ns < 1 || ns > 3 || W->rank != r || X->dims[1] % group || Y->dims[1] % group) return FA_OK;
    int64_t k[3], st[3], dil[3], pl[3], pr[3], pe[3], in_sp[3], out_sp[3];
    const int64_t *a;
    int na = fa_node_attr_ints(n, "strides", &a);
    for (int i = 0; i < ns; i++) st[i] = na == ns ? a[i] : 1;
    na = fa_node_attr_ints(n, "dilations", &a);
    for (int i = 0; i < ns; i++) dil[i] = na == ns ? a[i] : 1;
    for (int i = 0; i < ns; i++) {
        k[i] = W->dims[2 + i];
        in_sp[i] = X->dims[2 + i];
        out_sp[i] = Y->dims[2 + i];
    }
    if (!window_pads(n, ns, in_sp, out_sp, k, st, dil, pl, pr, pe)) return FA_OK;
    for (int i = 0; i < ns; i++)
        if (pr[i] != pe[i]) return FA_OK; /* Conv has no ceil_mode: the shapes must agree */
    dnnl_dims_t xd, yd, wd, bd, sd, dd, pld, prd;
    for (int i = 0; i < r; i++) xd[i] = X->dims[i], yd[i] = Y->dims[i];
    /* A 1-D grouped convolution as the 2-D one over [N, C, 1, W] (kernel 1 x k): the same bytes in
     * every layout (plain N C W is N C 1 W; nCw16c is nCh16c with h = 1), and oneDNN 2.6 has jit
     * depthwise/grouped kernels for 2-D but runs the 1-D form as gemm: ConvBERT's depthwise 1x9
     * over [1, 256, 64] took 133-164 us (x64:gemm:jit) per layer (bench/README.md "A fifth sweep"). */
    if (ns == 1) {
        xd[3] = xd[2], yd[3] = yd[2], xd[2] = yd[2] = 1;
        k[1] = k[0], st[1] = st[0], dil[1] = dil[0], pl[1] = pl[0], pr[1] = pr[0];
        k[0] = st[0] = dil[0] = 1, pl[0] = pr[0] = 0;
        ns = 2, r = 4;
    }
    wd[0] = group;
    wd[1] = Y->dims[1] / group;
    wd[2] = X->dims[1] / group;
    for (int i = 0; i < ns; i++) {
        wd[3 + i] = k[i];
        sd[i] = st[i];
        dd[i] = dil[i] - 1; /* oneDNN counts dilation from 0 */
        pld[i] = pl[i];
        prd[i] = pr[i];
    }
    dnnl_memory_desc_t xplain, yplain, xany, yany, wplain, wany, bmd;
    static const dnnl_format_tag_t wtags[] = {dnnl_abcd, dnnl_abcde, dnnl_abcdef}; /* goi + spatial */
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&xplain, r, xd, dnnl_f32, plain_tag(r)));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&yplain, r, yd, dnnl_f32, plain_tag(r)));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&xany, r, xd, dnnl_f32, dnnl_format_tag_any));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&yany, r, yd, dnnl_f32, dnnl_format_tag_any));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&wplain, r + 1, wd, dnnl_f32, wtags[ns - 1]));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&wany, r + 1, wd, dnnl_f32, dnnl_format_tag_any));
    if (B) {
        bd[0] = Y->dims[1];
        DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_a));
    }
    dnnl_convolution_desc_t cd;
    if (l != FA_LAYOUT_PLAIN) { /* the fused plan's blocked layout, read and written in place */
        DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&xany, r, xd, dnnl_f32, fa_dnnl_layout_tag(l, r)));
        DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&yany, r, yd, dnnl_f32, fa_dnnl_layout_tag(l, r)));
    }
    DNNL_CHECK(ctx, dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &xany,
                                                              &wany, B ? &bmd : NULL, &yany, sd, dd, pld, prd));
    if (make_pd(ctx, s, &cd, &pd)) goto fail;
    if (l != FA_LAYOUT_PLAIN) {
        const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        if (!strncmp(s->impl, "gemm", 4) || !strncmp(s->impl, "ref", 3) || !s->impl[0]) { /* not worth the layout */
            dnnl_primitive_desc_destroy(pd);
            return FA_OK;
        }
        if (add_arg(ctx, s, DNNL_ARG_SRC, &xany, BIND_INPUT, 0, NULL, NULL) ||
            add_const_arg(ctx, s, DNNL_ARG_WEIGHTS, wmd, &wplain, W) ||
            (B && add_arg(ctx, s, DNNL_ARG_BIAS, &bmd, BIND_INPUT, 2, NULL, NULL)) ||
            add_arg(ctx, s, DNNL_ARG_DST, &yany, BIND_OUTPUT, 0, NULL, NULL))
            goto fail;
        char nm[64];
        snprintf(nm, sizeof nm, "dnnl:convolution(grouped,%s)", fa_layout_name(l));
        return commit_prim(ctx, s, pd, nm, handled);
    }
    const dnnl_memory_desc_t *src_md = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *dst_md = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    const dnnl_memory_desc_t *wei_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    bool blocked_src = !dnnl_memory_desc_equal(src_md, &xplain), blocked_dst = !dnnl_memory_desc_equal(dst_md, &yplain);
    bool slow = !strncmp(s->impl, "gemm", 4) || !strncmp(s->impl, "ref", 3) || !s->impl[0];
    if (!force && (slow || !blocked_src)) { /* gemm/ref on plain layouts: runtime/cpu/dnnl.c's kernel */
        dnnl_primitive_desc_destroy(pd);
        return FA_OK;
    }
    if (blocked_src) {
        if (add_arg(ctx, s, DNNL_ARG_SRC, src_md, BIND_OWNED, 0, NULL, NULL)) goto fail;
        s->blk_src = s->args[s->n_args - 1].mem;
        DNNL_CHECK(ctx, dnnl_memory_create(&s->user_src, &xplain, s->eng, DNNL_MEMORY_NONE));
        dnnl_primitive_desc_t rpd = NULL;
        DNNL_CHECK(ctx, dnnl_reorder_primitive_desc_create(&rpd, &xplain, s->eng, src_md, s->eng, NULL));
        dnnl_status_t rs = dnnl_primitive_create(&s->reorder_in, rpd);
        dnnl_primitive_desc_destroy(rpd);
        DNNL_CHECK(ctx, rs);
    } else if (add_arg(ctx, s, DNNL_ARG_SRC, src_md, BIND_INPUT, 0, NULL, NULL)) goto fail;
    if (add_const_arg(ctx, s, DNNL_ARG_WEIGHTS, wei_md, &wplain, W)) goto fail;
    if (B && add_arg(ctx, s, DNNL_ARG_BIAS, &bmd, BIND_INPUT, 2, NULL, NULL)) goto fail;
    if (blocked_dst) {
        if (add_arg(ctx, s, DNNL_ARG_DST, dst_md, BIND_OWNED, 0, NULL, NULL)) goto fail;
        s->blk_dst = s->args[s->n_args - 1].mem;
        DNNL_CHECK(ctx, dnnl_memory_create(&s->user_dst, &yplain, s->eng, DNNL_MEMORY_NONE));
        dnnl_primitive_desc_t rpd = NULL;
        DNNL_CHECK(ctx, dnnl_reorder_primitive_desc_create(&rpd, dst_md, s->eng, &yplain, s->eng, NULL));
        dnnl_status_t rs = dnnl_primitive_create(&s->reorder_out, rpd);
        dnnl_primitive_desc_destroy(rpd);
        DNNL_CHECK(ctx, rs);
    } else if (add_arg(ctx, s, DNNL_ARG_DST, dst_md, BIND_OUTPUT, 0, NULL, NULL)) goto fail;
    return commit_prim(ctx, s, pd, blocked_src ? "dnnl:convolution(reordered)" : "dnnl:convolution(grouped)", handled);
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return FA_ERR_RUNTIME;
}

/* ---- pooling --------------------------------------------------------------------------------- */

/* MaxPool / AveragePool (opset 1-22) and GlobalAveragePool / GlobalMaxPool on plain NCHW.
 * Declines: MaxPool's Indices output requested; AveragePool with dilations (opset 19) or with
 * count_include_pad=1 where ceil_mode adds right padding beyond the declared pads (ONNX divides
 * by the taps inside [-pb, in+pe), oneDNN by the whole kernel); pads oneDNN cannot take
 * (>= the dilated kernel extent). */
static fa_status create_pool(fa_ctx *ctx, const fa_graph *g, const fa_node *n, ops_state *s, bool global, fa_layout l,
                             bool *handled)
{
    dnnl_primitive_desc_t pd = NULL;
    const fa_tensor *X = fa_graph_in(g, n, 0), *Y = fa_graph_out(g, n, 0);
    if (!X || !Y) return FA_OK;
    int r = X->rank, ns = r - 2;
    if (ns < 1 || ns > 3) return FA_OK;
    bool is_max = !strcmp(n->op_type, "MaxPool") || !strcmp(n->op_type, "GlobalMaxPool");
    if (is_max && n->n_outputs > 1 && n->outputs[1] >= 0) return FA_OK; /* Indices */
    int64_t k[3], st[3], dil[3], pl[3], pr[3], pe[3], in_sp[3], out_sp[3];
    for (int i = 0; i < ns; i++) {
        in_sp[i] = X->dims[2 + i];
        out_sp[i] = Y->dims[2 + i];
        k[i] = global ? in_sp[i] : 1;
        st[i] = dil[i] = 1;
    }
    bool incl = false;
    if (!global) {
        const int64_t *a;
        if (fa_node_attr_ints(n, "kernel_shape", &a) != ns) return FA_OK;
        for (int i = 0; i < ns; i++) k[i] = a[i];
        int na = fa_node_attr_ints(n, "strides", &a);
        for (int i = 0; i < ns; i++) st[i] = na == ns ? a[i] : 1;
        na = fa_node_attr_ints(n, "dilations", &a);
        for (int i = 0; i < ns; i++) dil[i] = na == ns ? a[i] : 1;
        incl = !is_max && fa_node_attr_int(n, "count_include_pad", 0) != 0;
        if (!window_pads(n, ns, in_sp, out_sp, k, st, dil, pl, pr, pe)) return FA_OK;
        for (int i = 0; i < ns; i++) {
            if (!is_max && dil[i] != 1) return FA_OK;
            if (incl && pr[i] != pe[i]) return FA_OK;
        }
    } else {
        for (int i = 0; i < ns; i++) pl[i] = pr[i] = 0;
    }
    dnnl_dims_t xd, yd, kd, sd, dd, pld, prd;
    for (int i = 0; i < r; i++) xd[i] = X->dims[i], yd[i] = Y->dims[i];
    /* On plain N C D H W, a leading spatial dim whose window is one tap (kernel 1, stride 1, no
     * padding: a video net's 1x3x3 pool) is part of the channels: each (c, d) plane is contiguous,
     * so the pool is the same one over [N, C·D, H, W]. oneDNN 2.6 runs that on its jit kernel, and
     * the 3-D form on its simple_nchw reference loop: S3D's 1x3x3 MaxPools 31 and 53 ms against 1.7
     * and 3.4 (ONNX Runtime's whole MaxPool 7 ms; bench/README.md "A fifth sweep"). */
    int lead = 0;
    if (l == FA_LAYOUT_PLAIN && !global)
        while (ns - lead > 1 && k[lead] == 1 && st[lead] == 1 && dil[lead] == 1 && pl[lead] == 0 && pr[lead] == 0 &&
               in_sp[lead] == out_sp[lead])
            lead++;
    if (lead) {
        for (int i = 0; i < lead; i++) xd[1] *= in_sp[i], yd[1] *= out_sp[i];
        for (int i = 2; i + lead < r; i++) xd[i] = xd[i + lead], yd[i] = yd[i + lead];
        for (int i = 0; i + lead < ns; i++)
            k[i] = k[i + lead], st[i] = st[i + lead], dil[i] = dil[i + lead], pl[i] = pl[i + lead], pr[i] = pr[i + lead];
        r -= lead;
        ns -= lead;
    }
    for (int i = 0; i < ns; i++) kd[i] = k[i], sd[i] = st[i], dd[i] = dil[i] - 1, pld[i] = pl[i], prd[i] = pr[i];
    dnnl_memory_desc_t xmd, ymd;
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&xmd, r, xd, dnnl_f32, fa_dnnl_layout_tag(l, r)));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&ymd, r, yd, dnnl_f32, fa_dnnl_layout_tag(l, r)));
    dnnl_alg_kind_t alg = is_max ? dnnl_pooling_max : incl ? dnnl_pooling_avg_include_padding : dnnl_pooling_avg_exclude_padding;
    dnnl_pooling_v2_desc_t pdsc;
    DNNL_CHECK(ctx, dnnl_pooling_v2_forward_desc_init(&pdsc, dnnl_forward_inference, alg, &xmd, &ymd, sd, kd, dd, pld, prd));
    if (make_pd(ctx, s, &pdsc, &pd)) goto fail;
    if (ref_on_layout(s, l)) { /* as commit_on: not on the reference loop */
        dnnl_primitive_desc_destroy(pd);
        return FA_OK;
    }
    char nm[64];
    snprintf(nm, sizeof nm, l == FA_LAYOUT_PLAIN ? "dnnl:pooling" : "dnnl:pooling(%s)", fa_layout_name(l));
    return commit_src_dst(ctx, s, pd, &xmd, &ymd, nm, handled);
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return FA_ERR_RUNTIME;
}

/* ---- Einsum as a batched product --------------------------------------------------------------- */

/* An Einsum that is one batched matrix product (fa_einsum_as_matmul): oneDNN's matmul reading
 * both inputs and writing the output through their own strides, no copy. The reference kernel
 * walked every point of the full index space in double per output element: MaxViT-T's 44
 * attention einsums took 311 of its 373 ms unfused iteration, against ONNX Runtime's 5-8 ms
 * (its Einsum transposes and calls a GEMM). */
static fa_status create_einsum(fa_ctx *ctx, const fa_graph *g, const fa_node *n, ops_state *s, bool *handled)
{
    fa_einsum_matmul mm;
    if (!fa_einsum_as_matmul(g, n, &mm)) return FA_OK;
    dnnl_dims_t da, db, dy, sa, sb, sy;
    for (int i = 0; i < mm.rank; i++) {
        da[i] = mm.dims_a[i], sa[i] = mm.strides_a[i];
        db[i] = mm.dims_b[i], sb[i] = mm.strides_b[i];
        dy[i] = mm.dims_y[i], sy[i] = mm.strides_y[i];
    }
    dnnl_memory_desc_t amd, bmd, ymd;
    dnnl_primitive_desc_t pd = NULL;
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&amd, mm.rank, da, dnnl_f32, sa));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&bmd, mm.rank, db, dnnl_f32, sb));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&ymd, mm.rank, dy, dnnl_f32, sy));
    dnnl_matmul_desc_t md;
    DNNL_CHECK(ctx, dnnl_matmul_desc_init(&md, &amd, &bmd, NULL, &ymd));
    if (make_pd(ctx, s, &md, &pd)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_SRC, &amd, BIND_INPUT, 0, NULL, NULL) ||
        add_arg(ctx, s, DNNL_ARG_WEIGHTS, &bmd, BIND_INPUT, 1, NULL, NULL) ||
        add_arg(ctx, s, DNNL_ARG_DST, &ymd, BIND_OUTPUT, 0, NULL, NULL))
        goto fail;
    s->outer_rank = mm.outer_rank;
    for (int l = 0; l < mm.outer_rank; l++) {
        s->outer_dims[l] = mm.outer_dims[l];
        s->outer_str[0][l] = mm.outer_sa[l], s->outer_str[1][l] = mm.outer_sb[l], s->outer_str[2][l] = mm.outer_sy[l];
    }
    return commit_prim(ctx, s, pd, "dnnl:matmul(einsum)", handled);
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return FA_ERR_RUNTIME;
}

/* ---- softmax ---------------------------------------------------------------------------------- */

/* Softmax / LogSoftmax. ONNX opset 1-12 coerces X to 2-D [prod(d[:axis]), prod(d[axis:])]
 * (default axis 1) and normalizes each row; opset >= 13 normalizes along one axis (default -1).
 * Both become oneDNN softmax_v2 over axis 1 of a 3-D view [outer, len, inner]. */
static fa_status create_softmax(fa_ctx *ctx, const fa_graph *g, const fa_node *n, ops_state *s, bool log_sm, bool force,
                                bool *handled)
{
    dnnl_primitive_desc_t pd = NULL;
    const fa_tensor *X = fa_graph_in(g, n, 0);
    if (!X || X->rank < 1) return FA_OK;
    int opset = n->opset > 0 ? n->opset : 13; /* no opset import: the latest semantics (graph/ops_extra.c) */
    int64_t ax = fa_node_attr_int(n, "axis", opset >= 13 ? -1 : 1);
    if (ax < -X->rank || ax >= X->rank) return FA_OK; /* the reference kernel reports it */
    int a = (int)(ax < 0 ? ax + X->rank : ax);
    int64_t outer = 1, len = 1, inner = 1;
    for (int i = 0; i < a; i++) outer *= X->dims[i];
    if (opset < 13)
        for (int i = a; i < X->rank; i++) len *= X->dims[i];
    else {
        len = X->dims[a];
        for (int i = a + 1; i < X->rank; i++) inner *= X->dims[i];
    }
    /* rows (inner 1) on a CPU with AVX-512F are ours: graph/vmath512.c's row softmax took 0.46-0.67x
     * oneDNN's time on BERT's [1, 12, 128, 128], [1, 256, 1024], [1, 12, 64, 64], a LogSoftmax over
     * 32,000 and tiny rows (bench_dnnl_ops, bench/README.md "bench_dnnl_ops"); unless forced */
    if (inner == 1 && !force && fa_vmath512_available()) return FA_OK;
    dnnl_dims_t d = {outer, len, inner};
    dnnl_memory_desc_t md;
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&md, 3, d, dnnl_f32, dnnl_abc));
    dnnl_softmax_v2_desc_t sdsc;
    DNNL_CHECK(ctx, dnnl_softmax_v2_forward_desc_init(&sdsc, dnnl_forward_inference, log_sm ? dnnl_softmax_log : dnnl_softmax_accurate,
                                                     &md, &md, 1));
    if (make_pd(ctx, s, &sdsc, &pd)) goto fail;
    return commit_src_dst(ctx, s, pd, &md, &md, log_sm ? "dnnl:logsoftmax" : "dnnl:softmax", handled);
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return FA_ERR_RUNTIME;
}

/* ---- layer normalization ---------------------------------------------------------------------- */

/* LayerNormalization (opset 17): X viewed as [prod(d[:axis]), prod(d[axis:])], each row
 * normalized with the node's epsilon, Scale and B with exactly the row's element count (the
 * normalized shape, leading 1s allowed). Declines when Mean or InvStdDev is requested, for a
 * stash_type other than float, or for a Scale/B that broadcasts along the normalized dims. */
static fa_status create_layernorm(fa_ctx *ctx, const fa_graph *g, const fa_node *n, ops_state *s, bool *handled)
{
    dnnl_primitive_desc_t pd = NULL;
    const fa_tensor *X = fa_graph_in(g, n, 0), *S = fa_graph_in(g, n, 1), *B = fa_graph_in(g, n, 2);
    if (!X || !S || X->rank < 1) return FA_OK;
    for (int o = 1; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0) return FA_OK;
    if (fa_node_attr_int(n, "stash_type", 1) != 1) return FA_OK;
    int64_t ax = fa_node_attr_int(n, "axis", -1);
    if (ax < -X->rank || ax >= X->rank) return FA_OK;
    int a = (int)(ax < 0 ? ax + X->rank : ax);
    int64_t rows = 1, D = 1;
    for (int i = 0; i < a; i++) rows *= X->dims[i];
    for (int i = a; i < X->rank; i++) D *= X->dims[i];
    /* Scale/B must be the normalized shape itself: their trailing dims equal X's, leading ones 1 */
    const fa_tensor *pp[2] = {S, B};
    for (int p = 0; p < 2; p++) {
        const fa_tensor *t = pp[p];
        if (!t) continue;
        if (fa_tensor_numel(t) != D || t->rank > X->rank) return FA_OK;
        for (int i = 0; i < t->rank; i++) {
            int xi = X->rank - t->rank + i;
            if (xi < a ? t->dims[i] != 1 : t->dims[i] != X->dims[xi]) return FA_OK;
        }
    }
    float eps = fa_node_attr_float(n, "epsilon", 1e-5f);
    dnnl_dims_t xd = {rows, D}, pdim = {D};
    dnnl_memory_desc_t xmd, pmd;
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&xmd, 2, xd, dnnl_f32, dnnl_ab));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&pmd, 1, pdim, dnnl_f32, dnnl_a));
    dnnl_layer_normalization_desc_t ld;
    unsigned flags = dnnl_use_scale | (B ? dnnl_use_shift : 0);
    DNNL_CHECK(ctx, dnnl_layer_normalization_forward_desc_init(&ld, dnnl_forward_inference, &xmd, NULL, eps, flags));
    if (make_pd(ctx, s, &ld, &pd)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_SRC, &xmd, BIND_INPUT, 0, NULL, NULL)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_SCALE, &pmd, BIND_INPUT, 1, NULL, NULL)) goto fail;
    if (B && add_arg(ctx, s, DNNL_ARG_SHIFT, &pmd, BIND_INPUT, 2, NULL, NULL)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_DST, &xmd, BIND_OUTPUT, 0, NULL, NULL)) goto fail;
    return commit_prim(ctx, s, pd, "dnnl:layer_normalization", handled);
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return FA_ERR_RUNTIME;
}

/* ---- dispatch --------------------------------------------------------------------------------- */

/* Where oneDNN is faster than our kernels, measured by bench/bench_dnnl_ops on the zoo models'
 * shapes (figures in bench/README.md); `force` bypasses this choice (the bench itself, tests).
 * GlobalAveragePool on plain NCHW is ours since issue 18's small-CNN survey: a vectorised plane
 * sum on one thread (graph/ops_nn.c) beat oneDNN 2.6's jit pooling on 15 of 18 shapes of
 * EfficientNet-B0, MobileNetV3-small and ResNet-50 (geomean 0.16 under load, where oneDNN's
 * parallel region waits for a descheduled second thread); the blocked layout's stays oneDNN's. */
static bool dnnl_op_wins(const char *op)
{
    static const char *const wins[] = {"Conv", "MaxPool", "AveragePool", "GlobalMaxPool",
                                       "Softmax", "LogSoftmax", "LayerNormalization", "Einsum"};
    for (size_t i = 0; i < sizeof wins / sizeof wins[0]; i++)
        if (!strcmp(op, wins[i])) return true;
    return false;
}

/* The state of a creation attempt into a kernel (out), or its release: declined (a non-NOMEM error
 * or not handled) leaves out untouched and *handled false. */
static fa_status finish_kernel(fa_ctx *ctx, const fa_node *n, ops_state *s, fa_status st, bool *handled, fa_kernel *out)
{
    fa_kernel k = {.state = s};
    if (st == FA_ERR_NOMEM) {
        ops_state_destroy(&k);
        *handled = false;
        return st;
    }
    if (st || !*handled) {
        /* oneDNN declined this shape or attribute combination: the reference kernel runs */
        if (st) fa_log(ctx, FA_LOG_DEBUG, "node '%s': oneDNN declined (%s); using our kernel", n->name, fa_ctx_errmsg(ctx));
        fa_ctx_clear(ctx);
        ops_state_destroy(&k);
        *handled = false;
        return FA_OK;
    }
    k.run = ops_run;
    k.destroy = ops_state_destroy;
    k.impl = s->impl[0] ? s->impl : NULL;
    k.name = s->name;
    *out = k;
    return FA_OK;
}

static ops_state *new_state(fa_ctx *ctx)
{
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    if (!fa_dnnl_engine(&eng, &strm)) return NULL;
    ops_state *s = calloc(1, sizeof *s);
    if (!s) {
        fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->eng = eng;
    s->strm = strm;
    return s;
}

fa_status fa_dnnl_ops_kernel_create(fa_ctx *ctx, const fa_graph *g, const fa_node *n, bool force, fa_kernel *out,
                                    bool *handled)
{
    *handled = false;
    if (*n->domain || getenv("FA_NO_DNNL") || (!force && getenv("FA_NO_DNNL_OPS"))) return FA_OK;
    const char *op = n->op_type;
    bool conv = !strcmp(op, "Conv"), pool = !strcmp(op, "MaxPool") || !strcmp(op, "AveragePool"),
         gpool = !strcmp(op, "GlobalAveragePool") || !strcmp(op, "GlobalMaxPool"), sm = !strcmp(op, "Softmax"),
         lsm = !strcmp(op, "LogSoftmax"), ln = !strcmp(op, "LayerNormalization"), es = !strcmp(op, "Einsum");
    if (!(conv || pool || gpool || sm || lsm || ln || es)) return FA_OK;
    if (!force && !dnnl_op_wins(op)) return FA_OK;
    if (!io_float(g, n, ln ? 3 : conv ? 3 : es ? 2 : 1)) return FA_OK;
    ops_state *s = new_state(ctx);
    if (!s) return fa_ctx_status(ctx);
    fa_status st;
    if (conv) {
        st = create_conv1x1_matmul(ctx, g, n, s, handled);
        if (!st && !*handled) st = create_grouped_conv(ctx, g, n, s, force, FA_LAYOUT_PLAIN, handled);
    } else if (pool || gpool) st = create_pool(ctx, g, n, s, gpool, FA_LAYOUT_PLAIN, handled);
    else if (sm || lsm) st = create_softmax(ctx, g, n, s, lsm, force, handled);
    else if (es) st = create_einsum(ctx, g, n, s, handled);
    else st = create_layernorm(ctx, g, n, s, handled);
    return finish_kernel(ctx, n, s, st, handled, out);
}

/* ---- blocked layouts (the fused plan's executor) ------------------------------------------------ */

dnnl_format_tag_t fa_dnnl_layout_tag(fa_layout l, int rank)
{
    if (l == FA_LAYOUT_PLAIN) return plain_tag(rank);
    if (rank != 4) return dnnl_format_tag_undef;
    return l == FA_LAYOUT_NCHW8C ? dnnl_nChw8c : l == FA_LAYOUT_NCHW16C ? dnnl_nChw16c : l == FA_LAYOUT_NHWC ? dnnl_nhwc
                                                                                                       : dnnl_format_tag_undef;
}

static fa_layout g_blocked = FA_LAYOUT_PLAIN;
static pthread_once_t g_blocked_once = PTHREAD_ONCE_INIT;

/* The plan layout FA_BLOCKED_LAYOUT names ("nChw16c", "nChw8c", "nhwc", "plain"); false for
 * another value. */
static bool layout_of_env(const char *env, fa_layout *l)
{
    for (int i = 0; i < FA_LAYOUT_COUNT; i++)
        if (!strcmp(env, fa_layout_name((fa_layout)i))) {
            *l = (fa_layout)i;
            return true;
        }
    return false;
}

/* The fused plan's layout on this CPU, from what oneDNN's convolution picks for format_tag_any
 * activations: a 64-channel 3x3 convolution of a 28x28 image (a ResNet stage) asked for its src
 * layout. A channel block of 8 or 16 (its jit convolutions, nChw8c / nChw16c) is taken as is.
 * Channels last (nhwc: oneDNN 2.6 ranks its brgemm convolution first on AVX-512 cores with
 * AVX512_FP16 or AMX) is not: measured on whole models in both layouts (bench/README.md
 * "bench_plan_layout.sh"), nChw16c ran the zoo's ResNet-50 and MobileNetV2 5-20 % faster at
 * batch 1 and 8 and nhwc won only on some exports (ResNet-18, RegNetY 11-28 %), so the block of
 * the ISA stays — 16 for AVX-512 (dnnl_cpu_isa_avx512_core), 8 below it — as it does with no
 * answer. FA_BLOCKED_LAYOUT=nhwc follows oneDNN instead. */
static void probe_blocked_layout(void)
{
    const char *env = getenv("FA_BLOCKED_LAYOUT");
    if (env) { /* an override; a value naming no layout turns the layouts off, as "plain" does */
        if (!layout_of_env(env, &g_blocked)) g_blocked = FA_LAYOUT_PLAIN;
        return;
    }
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    if (getenv("FA_NO_DNNL") || !fa_dnnl_engine(&eng, &strm)) return; /* no oneDNN kernels: nothing reads blocked */
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    g_blocked = (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core ? FA_LAYOUT_NCHW16C : FA_LAYOUT_NCHW8C;
    dnnl_dims_t xd = {1, 64, 28, 28}, wd = {64, 64, 3, 3}, st = {1, 1}, dil = {0, 0}, pad = {1, 1};
    dnnl_memory_desc_t x, w, y;
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_memory_desc_init_by_tag(&x, 4, xd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&w, 4, wd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&y, 4, xd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
        dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &x, &w, NULL, &y, st, dil,
                                                   pad, pad) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &cd, NULL, eng, NULL) != dnnl_success)
        return;
    const dnnl_memory_desc_t *src = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    if (src && src->format_kind == dnnl_blocked && src->format_desc.blocking.inner_nblks == 1 &&
        src->format_desc.blocking.inner_idxs[0] == 1) {
        int64_t b = src->format_desc.blocking.inner_blks[0];
        if (b == 16) g_blocked = FA_LAYOUT_NCHW16C;
        else if (b == 8) g_blocked = FA_LAYOUT_NCHW8C;
    } /* else channels last: the ISA's block, measured faster on the zoo models (above) */
    dnnl_primitive_desc_destroy(pd);
}

fa_layout fa_cpu_blocked_layout(void)
{
    pthread_once(&g_blocked_once, probe_blocked_layout);
    return g_blocked;
}

/* The candidates: oneDNN 2.6 has jit convolutions on nhwc and nChw8c from SSE4.1 up and on
 * nChw16c from AVX-512 (src/cpu/x64/jit_*_conv_kernel_f32, jit_avx512_common_conv_kernel); the
 * default first, then nChw16c, nChw8c, nhwc. None without oneDNN (FA_NO_DNNL, no engine). */
void fa_cpu_plan_layouts(fa_plan_layouts *out)
{
    memset(out, 0, sizeof *out);
    out->deflt = fa_cpu_blocked_layout();
    out->from_env = getenv("FA_BLOCKED_LAYOUT") != NULL;
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    if (getenv("FA_NO_DNNL") || !fa_dnnl_engine(&eng, &strm)) return;
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    if ((isa & dnnl_cpu_isa_sse41) != dnnl_cpu_isa_sse41) return;
    const fa_layout order[] = {FA_LAYOUT_NCHW16C, FA_LAYOUT_NCHW8C, FA_LAYOUT_NHWC};
    if (out->deflt != FA_LAYOUT_PLAIN) out->cand[out->n++] = out->deflt;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        if (order[k] == out->deflt) continue;
        if (order[k] == FA_LAYOUT_NCHW16C && (isa & dnnl_cpu_isa_avx512_core) != dnnl_cpu_isa_avx512_core) continue;
        out->cand[out->n++] = order[k];
    }
}

/* A constant float scalar input i of n (Clip's min/max); *present false when omitted. */
static bool const_scalar(const fa_graph *g, const fa_node *n, int i, float *v, bool *present)
{
    *present = false;
    if (i >= n->n_inputs || n->inputs[i] < 0) return true;
    const fa_tensor *t = g->tensors[n->inputs[i]];
    if (!(t->flags & FA_TENSOR_CONST) || !t->data || t->dtype != FA_DTYPE_FLOAT || fa_tensor_numel(t) != 1) return false;
    *v = *(const float *)t->data;
    *present = true;
    return true;
}

/* The oneDNN eltwise algorithm computing unary node n exactly as ONNX defines it (Operators.md;
 * oneDNN 2.6 "Eltwise" formulas): Relu, LeakyRelu (alpha, default 0.01), Sigmoid (logistic),
 * Tanh, Elu (alpha, default 1), HardSwish (x·min(max(x+3,0),6)/6 = ONNX's x·max(0,min(1,x/6+1/2))),
 * Abs, Exp, Clip (constant min/max inputs, opset >= 11, or attributes; clip(x) =
 * min(max(x, lo), hi)). false for anything else (HardSigmoid: no such algorithm in 2.6). */
static bool eltwise_of_node(const fa_graph *g, const fa_node *n, dnnl_alg_kind_t *alg, float *alpha, float *beta)
{
    const char *op = n->op_type;
    *alpha = *beta = 0.0f;
    if (!strcmp(op, "Relu")) *alg = dnnl_eltwise_relu;
    else if (!strcmp(op, "LeakyRelu")) *alg = dnnl_eltwise_relu, *alpha = fa_node_attr_float(n, "alpha", 0.01f);
    else if (!strcmp(op, "Sigmoid")) *alg = dnnl_eltwise_logistic;
    else if (!strcmp(op, "Tanh")) *alg = dnnl_eltwise_tanh;
    else if (!strcmp(op, "Elu")) *alg = dnnl_eltwise_elu, *alpha = fa_node_attr_float(n, "alpha", 1.0f);
    else if (!strcmp(op, "HardSwish")) *alg = dnnl_eltwise_hardswish;
    else if (!strcmp(op, "Abs")) *alg = dnnl_eltwise_abs;
    else if (!strcmp(op, "Exp")) *alg = dnnl_eltwise_exp;
    else if (!strcmp(op, "Clip")) {
        *alg = dnnl_eltwise_clip;
        *alpha = -INFINITY;
        *beta = INFINITY;
        if (n->opset > 0 && n->opset < 11) {
            *alpha = fa_node_attr_float(n, "min", -INFINITY);
            *beta = fa_node_attr_float(n, "max", INFINITY);
        } else {
            float v;
            bool have;
            if (!const_scalar(g, n, 1, &v, &have)) return false;
            if (have) *alpha = v;
            if (!const_scalar(g, n, 2, &v, &have)) return false;
            if (have) *beta = v;
        }
    } else
        return false;
    return true;
}

static bool binary_of_node(const fa_node *n, dnnl_alg_kind_t *alg)
{
    static const struct { const char *op; dnnl_alg_kind_t alg; } t[] = {
        {"Add", dnnl_binary_add}, {"Sub", dnnl_binary_sub}, {"Mul", dnnl_binary_mul},
        {"Div", dnnl_binary_div}, {"Max", dnnl_binary_max}, {"Min", dnnl_binary_min}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(n->op_type, t[i].op)) {
            *alg = t[i].alg;
            return n->n_inputs == 2;
        }
    return false;
}

/* How binary node n (alg) runs on a blocked layout of block channels: returns the input index
 * read in the layout (oneDNN's src0; -1: the node runs plain) and *bcast the other one's: -1 when
 * both inputs are activations of the output's dims (both in the layout), else the index of a
 * per-channel activation [1 or N, C, 1, 1] (the scale of a squeeze-excitation Mul), which oneDNN
 * binary broadcasts from the same blocked layout (src1; from plain memory oneDNN 2.6 falls back
 * to its reference binary, ref:any, measured 5 ms for one MobileNetV3 Mul). The full input must be
 * a float activation of the output's dims; for Sub and Div it must be input 0 (src0 − src1 is not
 * commutative). Div runs blocked only without a padded channel tail: the tail of a blocked tensor
 * is zero, so a Div there writes 0/0 = NaN, which a later convolution multiplies by its
 * zero-padded weights into every output (oneDNN 2.6 "Understanding Memory Formats": padded areas
 * hold zeros). */
static int blocked_binary(const fa_graph *g, const fa_node *n, dnnl_alg_kind_t alg, int64_t block, int *bcast)
{
    const fa_tensor *y = g->tensors[n->outputs[0]];
    *bcast = -1;
    if (n->inputs[0] < 0 || n->inputs[1] < 0 || y->rank != 4) return -1;
    if (alg == dnnl_binary_div && y->dims[1] % block) return -1;
    bool full[2], chan[2];
    for (int i = 0; i < 2; i++) {
        const fa_tensor *x = g->tensors[n->inputs[i]];
        full[i] = chan[i] = x->dtype == FA_DTYPE_FLOAT && x->rank == 4;
        for (int d = 0; d < 4 && full[i]; d++) full[i] = x->dims[d] == y->dims[d];
        full[i] = full[i] && !(x->flags & FA_TENSOR_CONST);
        chan[i] = chan[i] && !(x->flags & FA_TENSOR_CONST) && (x->dims[0] == 1 || x->dims[0] == y->dims[0]) && x->dims[1] == y->dims[1] && x->dims[2] == 1 &&
                  x->dims[3] == 1 && !full[i];
    }
    if (full[0] && full[1]) return 0;
    bool commutes = alg == dnnl_binary_add || alg == dnnl_binary_mul || alg == dnnl_binary_max || alg == dnnl_binary_min;
    if (full[0] && chan[1]) return *bcast = 1, 0;
    if (full[1] && chan[0] && commutes) return *bcast = 0, 1;
    return -1;
}


/* Concat's axis when it is the channel axis (1) of rank-4 tensors, each input's and the output's
 * channel count a multiple of the block (so that every input's channel blocks sit whole in the
 * output). */
static bool channel_concat(const fa_graph *g, const fa_node *n, int64_t block)
{
    if (strcmp(n->op_type, "Concat") || n->n_inputs < 1 || n->n_inputs > OPS_MAX_CONCAT_INPUTS) return false;
    int64_t ax = fa_node_attr_int(n, "axis", 1);
    if (ax != 1 && ax != -3) return false;
    for (int i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0 || !fa_layout_input_follows(g, n, i)) return false;
        const fa_tensor *x = g->tensors[n->inputs[i]];
        if (x->rank != 4 || x->dtype != FA_DTYPE_FLOAT || x->dims[1] % block) return false;
    }
    return true;
}

fa_layout fa_cpu_preferred_layout(const fa_graph *g, const fa_node *n, fa_layout l)
{
    if (l == FA_LAYOUT_PLAIN || (unsigned)l >= FA_LAYOUT_COUNT || n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs < 1 || n->outputs[0] < 0)
        return FA_LAYOUT_PLAIN;
    for (int o = 1; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0) return FA_LAYOUT_PLAIN; /* MaxPool's Indices, ...: plain */
    const fa_tensor *x = g->tensors[n->inputs[0]], *y = g->tensors[n->outputs[0]];
    if (x->rank != 4 || y->rank != 4 || x->dtype != FA_DTYPE_FLOAT || y->dtype != FA_DTYPE_FLOAT || (x->flags & FA_TENSOR_CONST))
        return FA_LAYOUT_PLAIN;
    if (!strcmp(n->domain, FA_FUSED_DOMAIN)) return !strcmp(n->op_type, "FusedConv") ? l : FA_LAYOUT_PLAIN;
    if (*n->domain) return FA_LAYOUT_PLAIN;
    const char *op = n->op_type;
    dnnl_alg_kind_t alg;
    float a, b;
    if (!strcmp(op, "Conv") || !strcmp(op, "MaxPool") || !strcmp(op, "AveragePool") || !strcmp(op, "GlobalAveragePool") ||
        !strcmp(op, "GlobalMaxPool") || !strcmp(op, "BatchNormalization") || eltwise_of_node(g, n, &alg, &a, &b))
        return l;
    int bcast;
    if (binary_of_node(n, &alg)) /* activations of the output's shape in the layout, a per-channel operand plain */
        return blocked_binary(g, n, alg, fa_layout_channel_block(l), &bcast) >= 0 ? l : FA_LAYOUT_PLAIN;
    if (channel_concat(g, n, fa_layout_channel_block(l)) && y->dims[1] % fa_layout_channel_block(l) == 0) return l;
    return FA_LAYOUT_PLAIN;
}

/* The descriptor of activation t (float, its logical dims) in layout l. */
static fa_status layout_md(fa_ctx *ctx, const fa_tensor *t, fa_layout l, dnnl_memory_desc_t *md)
{
    dnnl_dims_t d;
    for (int i = 0; i < t->rank; i++) d[i] = t->dims[i];
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(md, t->rank, d, dnnl_f32, fa_dnnl_layout_tag(l, t->rank)));
    return FA_OK;
fail:
    return FA_ERR_RUNTIME;
}

/* commit_prim naming the kernel "dnnl:WHAT(LAYOUT)". oneDNN's reference implementation on the
 * blocked layout ("ref:any": a scalar loop over the blocked offsets; a per-channel binary from
 * plain memory took 5 ms on MobileNetV3's 24x56x56 where the jit one takes 20 us) is declined:
 * the node runs plain with our kernel, its reorders planned around it. */
static fa_status commit_on(fa_ctx *ctx, ops_state *s, dnnl_primitive_desc_t pd, const char *what, fa_layout l, bool *handled)
{
    if (ref_on_layout(s, l)) {
        fa_log(ctx, FA_LOG_DEBUG, "%s on %s: oneDNN offers only %s; running plain", what, fa_layout_name(l), s->impl);
        dnnl_primitive_desc_destroy(pd);
        return FA_OK;
    }
    char nm[64];
    snprintf(nm, sizeof nm, "dnnl:%s(%s)", what, fa_layout_name(l));
    return commit_prim(ctx, s, pd, nm, handled);
}

/* Unary activation on l: oneDNN eltwise over the blocked buffer taken as one dense vector of its
 * padded size (an elementwise op does not care where an element sits; on the blocked descriptor
 * itself oneDNN 2.6 runs its reference loop, ref:any, whenever C is not a multiple of the block).
 * The padded channel tail gets f(0), finite for every op eltwise_of_node accepts (Sigmoid 0.5,
 * Exp 1, the others 0): a convolution multiplies it by its zero-padded weights, a pool or a
 * reorder to plain drops it, and a Div never runs on a padded tail (blocked_binary). */
static fa_status create_eltwise(fa_ctx *ctx, const fa_graph *g, const fa_node *n, ops_state *s, fa_layout l, bool *handled)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_alg_kind_t alg;
    float alpha, beta;
    const fa_tensor *X = fa_graph_in(g, n, 0);
    if (!eltwise_of_node(g, n, &alg, &alpha, &beta)) return FA_OK;
    dnnl_memory_desc_t bmd, md;
    if (layout_md(ctx, X, l, &bmd)) goto fail;
    dnnl_dims_t flat = {(dnnl_dim_t)(dnnl_memory_desc_get_size(&bmd) / sizeof(float))};
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&md, 1, flat, dnnl_f32, dnnl_a));
    dnnl_eltwise_desc_t ed;
    DNNL_CHECK(ctx, dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, &md, alpha, beta));
    if (make_pd(ctx, s, &ed, &pd)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_SRC, &md, BIND_INPUT, 0, NULL, NULL) || add_arg(ctx, s, DNNL_ARG_DST, &md, BIND_OUTPUT, 0, NULL, NULL))
        goto fail;
    return commit_on(ctx, s, pd, "eltwise", l, handled);
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return FA_ERR_RUNTIME;
}

/* Add/Sub/Mul/Div/Max/Min on l: oneDNN binary, src0 the activation of the output's dims, src1 the
 * other one or a per-channel activation broadcast, both in the layout (blocked_binary; for
 * Add/Mul/Max/Min either input may be the per-channel one). */
static fa_status create_binary(fa_ctx *ctx, const fa_graph *g, const fa_node *n, ops_state *s, fa_layout l, bool *handled)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_alg_kind_t alg;
    int bcast;
    const fa_tensor *Y = fa_graph_out(g, n, 0);
    if (!binary_of_node(n, &alg)) return FA_OK;
    int full = blocked_binary(g, n, alg, fa_layout_channel_block(l), &bcast);
    if (full < 0) return FA_OK;
    dnnl_memory_desc_t md, md1;
    if (layout_md(ctx, Y, l, &md)) goto fail;
    if (bcast < 0) md1 = md;
    else if (layout_md(ctx, fa_graph_in(g, n, bcast), l, &md1)) goto fail;
    dnnl_binary_desc_t bd;
    DNNL_CHECK(ctx, dnnl_binary_desc_init(&bd, alg, &md, &md1, &md));
    if (make_pd(ctx, s, &bd, &pd)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_SRC_0, &md, BIND_INPUT, full, NULL, NULL) ||
        add_arg(ctx, s, DNNL_ARG_SRC_1, &md1, BIND_INPUT, bcast < 0 ? 1 - full : bcast, NULL, NULL) ||
        add_arg(ctx, s, DNNL_ARG_DST, &md, BIND_OUTPUT, 0, NULL, NULL))
        goto fail;
    return commit_on(ctx, s, pd, "binary", l, handled);
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return FA_ERR_RUNTIME;
}

/* BatchNormalization in inference (ONNX: training_mode 0, one output; X, scale, B, mean, var, the
 * last four constant [C]) on l: oneDNN batch normalization with global statistics,
 * y = scale·(x − mean)/sqrt(var + epsilon) + B (oneDNN 2.6 "Batch Normalization", flags
 * use_global_stats | use_scale | use_shift). */
static fa_status create_batchnorm(fa_ctx *ctx, const fa_graph *g, const fa_node *n, ops_state *s, fa_layout l, bool *handled)
{
    dnnl_primitive_desc_t pd = NULL;
    const fa_tensor *X = fa_graph_in(g, n, 0);
    if (n->n_inputs != 5 || fa_node_attr_int(n, "training_mode", 0) != 0) return FA_OK;
    for (int i = 1; i < 5; i++) {
        const fa_tensor *t = fa_graph_in(g, n, i);
        if (!t || !(t->flags & FA_TENSOR_CONST) || !t->data || t->dtype != FA_DTYPE_FLOAT || fa_tensor_numel(t) != X->dims[1])
            return FA_OK;
    }
    dnnl_dims_t cd = {X->dims[1]};
    dnnl_memory_desc_t md, cmd;
    if (layout_md(ctx, X, l, &md)) goto fail;
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&cmd, 1, cd, dnnl_f32, dnnl_a));
    dnnl_batch_normalization_desc_t bd;
    DNNL_CHECK(ctx, dnnl_batch_normalization_forward_desc_init(&bd, dnnl_forward_inference, &md,
                                                               fa_node_attr_float(n, "epsilon", 1e-5f),
                                                               dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift));
    if (make_pd(ctx, s, &bd, &pd)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_SRC, &md, BIND_INPUT, 0, NULL, NULL) || add_arg(ctx, s, DNNL_ARG_SCALE, &cmd, BIND_INPUT, 1, NULL, NULL) ||
        add_arg(ctx, s, DNNL_ARG_SHIFT, &cmd, BIND_INPUT, 2, NULL, NULL) || add_arg(ctx, s, DNNL_ARG_MEAN, &cmd, BIND_INPUT, 3, NULL, NULL) ||
        add_arg(ctx, s, DNNL_ARG_VARIANCE, &cmd, BIND_INPUT, 4, NULL, NULL) || add_arg(ctx, s, DNNL_ARG_DST, &md, BIND_OUTPUT, 0, NULL, NULL))
        goto fail;
    return commit_on(ctx, s, pd, "batch_normalization", l, handled);
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return FA_ERR_RUNTIME;
}

/* A Concat on channels of activations in a blocked layout, ours: in nChw<B>c (every C a multiple
 * of B) each input's batch-n slab is one contiguous run of the output, a memcpy; in nhwc each
 * pixel's channels are the inputs' runs one after another. oneDNN 2.6's concat ("simple:any") took
 * 0.33 ms for Inception-v3's [1, 1280, 8, 8] (327 KB: ~1 GB/s) and 1.2 ms over its 11 Concats
 * where ONNX Runtime took 0.29. */
typedef struct own_concat {
    bool nhwc;
    int n_in;
    int64_t N, HW, C; /* the output's batch, pixels and channels */
    char name[48];
    int64_t c[]; /* each input's channels */
} own_concat;

static void own_concat_destroy(fa_kernel *k)
{
    free(k->state);
    k->state = NULL;
}

/* Below this many bytes a concat copies on one thread (a team's wake-up costs more). */
#define OWN_CONCAT_PAR_BYTES ((int64_t)256 << 10)

static fa_status own_concat_run(fa_ctx *ctx, fa_kernel *k, const fa_node *n, const fa_value *in, int n_in, fa_value *out,
                                int n_out, int threads)
{
    (void)ctx, (void)n, (void)n_out;
    const own_concat *c = k->state;
    float *y = out[0].data;
    int nt = c->N * c->HW * c->C * (int64_t)sizeof(float) >= OWN_CONCAT_PAR_BYTES ? threads : 1;
    if (c->nhwc) {
        const int64_t P = c->N * c->HW;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
        for (int64_t p = 0; p < P; p++) {
            float *yp = y + p * c->C;
            for (int i = 0; i < n_in; i++) {
                memcpy(yp, (const float *)in[i].data + p * c->c[i], sizeof(float) * (size_t)c->c[i]);
                yp += c->c[i];
            }
        }
        return FA_OK;
    }
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = omp_get_thread_num(), tn = omp_get_num_threads();
        for (int64_t b = 0; b < c->N; b++) {
            int64_t off = b * c->C * c->HW; /* the output's batch-b slab, in floats */
            for (int i = 0; i < n_in; i++) {
                int64_t len = c->c[i] * c->HW, lo = len * t / tn, hi = len * (t + 1) / tn; /* this thread's share */
                memcpy(y + off + lo, (const float *)in[i].data + b * len + lo, sizeof(float) * (size_t)(hi - lo));
                off += len;
            }
        }
    }
    return FA_OK;
}

static fa_status own_concat_create(fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_layout l, fa_kernel *out, bool *handled)
{
    const fa_tensor *Y = fa_graph_out(g, n, 0);
    int64_t B = fa_layout_channel_block(l);
    if (!Y || Y->rank != 4 || !channel_concat(g, n, l == FA_LAYOUT_NHWC ? 1 : B) || (l != FA_LAYOUT_NHWC && Y->dims[1] % B))
        return FA_OK;
    own_concat *c = calloc(1, sizeof *c + sizeof(int64_t) * (size_t)n->n_inputs);
    if (!c) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    c->nhwc = l == FA_LAYOUT_NHWC;
    c->n_in = n->n_inputs;
    c->N = Y->dims[0], c->HW = Y->dims[2] * Y->dims[3], c->C = Y->dims[1];
    for (int i = 0; i < n->n_inputs; i++) c->c[i] = g->tensors[n->inputs[i]]->dims[1];
    snprintf(c->name, sizeof c->name, "concat(%s)", fa_layout_name(l));
    *out = (fa_kernel){.name = c->name, .run = own_concat_run, .destroy = own_concat_destroy, .state = c};
    *handled = true;
    return FA_OK;
}

fa_status fa_dnnl_ops_kernel_create_blocked(fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_layout l, fa_kernel *out,
                                            bool *handled)
{
    *handled = false;
    if (*n->domain || l == FA_LAYOUT_PLAIN || getenv("FA_NO_DNNL") || fa_dnnl_layout_tag(l, 4) == dnnl_format_tag_undef)
        return FA_OK;
    const char *op = n->op_type;
    bool conv = !strcmp(op, "Conv"), pool = !strcmp(op, "MaxPool") || !strcmp(op, "AveragePool"),
         gpool = !strcmp(op, "GlobalAveragePool") || !strcmp(op, "GlobalMaxPool");
    dnnl_alg_kind_t alg;
    float a, b;
    bool elt = eltwise_of_node(g, n, &alg, &a, &b), bin = binary_of_node(n, &alg), cat = !strcmp(op, "Concat"),
         bn = !strcmp(op, "BatchNormalization");
    if (!(conv || pool || gpool || elt || bin || cat || bn)) return FA_OK;
    if (!io_float(g, n, conv ? 3 : elt ? 1 : n->n_inputs)) return FA_OK;
    if (conv && fa_node_attr_int(n, "group", 1) <= 1) return FA_OK; /* runtime/cpu/dnnl.c's blocked convolution */
    if (cat) return own_concat_create(ctx, g, n, l, out, handled);
    ops_state *s = new_state(ctx);
    if (!s) return fa_ctx_status(ctx);
    fa_status st;
    if (conv) st = create_grouped_conv(ctx, g, n, s, false, l, handled);
    else if (pool || gpool) st = create_pool(ctx, g, n, s, gpool, l, handled);
    else if (elt) st = create_eltwise(ctx, g, n, s, l, handled);
    else if (bin) st = create_binary(ctx, g, n, s, l, handled);
    else st = create_batchnorm(ctx, g, n, s, l, handled);
    return finish_kernel(ctx, n, s, st, handled, out);
}

/* ---- reorders between layouts, kernels of their own ------------------------------------------- */

typedef struct reorder_state {
    dnnl_stream_t strm;
    dnnl_primitive_t prim;
    dnnl_memory_t from, to;
    char name[64];
} reorder_state;

static fa_status reorder_run(void *state, fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in, fa_value *out,
                             int n_out, int threads)
{
    (void)n, (void)n_in, (void)n_out, (void)threads;
    reorder_state *r = state;
    DNNL_CHECK(ctx, dnnl_memory_set_data_handle(r->from, in[0].data));
    DNNL_CHECK(ctx, dnnl_memory_set_data_handle(r->to, out[0].data));
    dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, r->from}, {DNNL_ARG_TO, r->to}};
    DNNL_CHECK(ctx, dnnl_primitive_execute(r->prim, r->strm, 2, a));
    DNNL_CHECK(ctx, dnnl_stream_wait(r->strm));
    return FA_OK;
fail:
    return FA_ERR_RUNTIME;
}

static void reorder_destroy(void *state)
{
    reorder_state *r = state;
    if (!r) return;
    if (r->prim) dnnl_primitive_destroy(r->prim);
    if (r->from) dnnl_memory_destroy(r->from);
    if (r->to) dnnl_memory_destroy(r->to);
    free(r);
}

fa_status fa_cpu_reorder_kernel(fa_ctx *ctx, const fa_value *v, fa_layout from, fa_layout to, fa_custom_kernel *out)
{
    memset(out, 0, sizeof *out);
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    dnnl_format_tag_t tf = fa_dnnl_layout_tag(from, v->rank), tt = fa_dnnl_layout_tag(to, v->rank);
    if (v->dtype != FA_DTYPE_FLOAT || tf == dnnl_format_tag_undef || tt == dnnl_format_tag_undef)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "no reorder from %s to %s for a %s tensor of rank %d", fa_layout_name(from),
                            fa_layout_name(to), fa_dtype_name(v->dtype), v->rank);
    if (!fa_dnnl_engine(&eng, &strm)) return fa_ctx_error(ctx, FA_ERR_RUNTIME, "oneDNN: no CPU engine for a reorder");
    reorder_state *r = calloc(1, sizeof *r);
    dnnl_primitive_desc_t pd = NULL;
    if (!r) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    r->strm = strm;
    dnnl_dims_t d;
    for (int i = 0; i < v->rank; i++) d[i] = v->dims[i];
    dnnl_memory_desc_t mf, mt;
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&mf, v->rank, d, dnnl_f32, tf));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&mt, v->rank, d, dnnl_f32, tt));
    DNNL_CHECK(ctx, dnnl_memory_create(&r->from, &mf, eng, DNNL_MEMORY_NONE));
    DNNL_CHECK(ctx, dnnl_memory_create(&r->to, &mt, eng, DNNL_MEMORY_NONE));
    DNNL_CHECK(ctx, dnnl_reorder_primitive_desc_create(&pd, &mf, eng, &mt, eng, NULL));
    DNNL_CHECK(ctx, dnnl_primitive_create(&r->prim, pd));
    dnnl_primitive_desc_destroy(pd);
    snprintf(r->name, sizeof r->name, "dnnl:reorder(%s>%s)", from == FA_LAYOUT_PLAIN ? "nchw" : fa_layout_name(from),
             to == FA_LAYOUT_PLAIN ? "nchw" : fa_layout_name(to));
    out->name = r->name;
    out->run = reorder_run;
    out->destroy = reorder_destroy;
    out->state = r;
    return FA_OK;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    reorder_destroy(r);
    return FA_ERR_RUNTIME;
}
