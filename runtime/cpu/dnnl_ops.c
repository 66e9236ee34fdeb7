/* runtime/cpu/dnnl_ops — oneDNN for the executor's non-GEMM ops where the library is faster than
 * our reference kernels (bench/bench_dnnl_ops decides which): depthwise/grouped Conv, MaxPool,
 * AveragePool, GlobalAveragePool/GlobalMaxPool, Softmax/LogSoftmax, LayerNormalization. Every
 * kernel reads and writes plain (ONNX, row-major) tensors; where oneDNN's fast implementation
 * needs a blocked layout (the depthwise convolution) the reorders in and out are part of the
 * kernel and of its time. Attribute combinations oneDNN cannot express exactly decline, and the
 * registry's reference kernel runs instead. */
#include "../runtime-impl.h"

#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPS_CHECK(ctx, call)                                                                      \
    do {                                                                                          \
        dnnl_status_t s_ = (call);                                                                \
        if (s_ != dnnl_success) {                                                                 \
            fa_ctx_error((ctx), FA_ERR_RUNTIME, "%s:%d: %s failed: oneDNN status %d", __FILE__,    \
                         __LINE__, #call, (int)s_);                                               \
            goto fail;                                                                            \
        }                                                                                         \
    } while (0)

/* One CPU engine and in-order stream for these kernels (oneDNN engines are cheap, thread-safe
 * handles; runtime/cpu/dnnl.c keeps its own the same way). Created on first use. */
static dnnl_engine_t ops_engine;
static dnnl_stream_t ops_stream;

static bool ops_engine_init(void)
{
    if (ops_engine && ops_stream) return true;
    if (!ops_engine && dnnl_engine_create(&ops_engine, dnnl_cpu, 0) != dnnl_success) return false;
    return dnnl_stream_create(&ops_stream, ops_engine, dnnl_stream_default_flags) == dnnl_success;
}

enum { OPS_MAX_ARGS = 6 };

/* Where one primitive argument's data comes from at run time. */
typedef enum { BIND_INPUT, BIND_OUTPUT, BIND_OWNED } bind_kind;

typedef struct ops_arg {
    int arg;            /* DNNL_ARG_* */
    bind_kind kind;
    int index;          /* node input or output index (BIND_INPUT / BIND_OUTPUT) */
    dnnl_memory_t mem;
    void *owned;        /* BIND_OWNED: buffer owned by the state (constant weights, blocked tensors) */
} ops_arg;

typedef struct ops_state {
    dnnl_primitive_t prim;
    int n_args;
    ops_arg args[OPS_MAX_ARGS];
    /* blocked-layout wrapper (depthwise conv): plain input -> src, dst -> plain output */
    dnnl_primitive_t reorder_in, reorder_out;
    dnnl_memory_t user_src, user_dst, blk_src, blk_dst; /* blk_* point into owned args */
    char impl[96];
    char name[48];
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
    }
    free(s);
    k->state = NULL;
}

static fa_status ops_run(fa_ctx *ctx, fa_kernel *k, const fa_node *n, const fa_value *in, int n_in,
                         fa_value *out, int n_out, int threads)
{
    (void)n, (void)n_in, (void)n_out, (void)threads; /* oneDNN uses the OpenMP thread count the executor set */
    ops_state *s = k->state;
    dnnl_exec_arg_t a[OPS_MAX_ARGS];
    for (int i = 0; i < s->n_args; i++) {
        ops_arg *p = &s->args[i];
        if (p->kind == BIND_INPUT) OPS_CHECK(ctx, dnnl_memory_set_data_handle(p->mem, in[p->index].data));
        else if (p->kind == BIND_OUTPUT) OPS_CHECK(ctx, dnnl_memory_set_data_handle(p->mem, out[p->index].data));
        a[i] = (dnnl_exec_arg_t){p->arg, p->mem};
    }
    if (s->reorder_in) {
        OPS_CHECK(ctx, dnnl_memory_set_data_handle(s->user_src, in[0].data));
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, s->user_src}, {DNNL_ARG_TO, s->blk_src}};
        OPS_CHECK(ctx, dnnl_primitive_execute(s->reorder_in, ops_stream, 2, r));
    }
    OPS_CHECK(ctx, dnnl_primitive_execute(s->prim, ops_stream, s->n_args, a));
    if (s->reorder_out) {
        OPS_CHECK(ctx, dnnl_memory_set_data_handle(s->user_dst, out[0].data));
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, s->blk_dst}, {DNNL_ARG_TO, s->user_dst}};
        OPS_CHECK(ctx, dnnl_primitive_execute(s->reorder_out, ops_stream, 2, r));
    }
    OPS_CHECK(ctx, dnnl_stream_wait(ops_stream));
    return FA_OK;
fail:
    return FA_ERR_RUNTIME;
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
    if (s->n_args >= OPS_MAX_ARGS) return fa_ctx_error(ctx, FA_ERR_RUNTIME, "oneDNN op: too many arguments");
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
    OPS_CHECK(ctx, dnnl_memory_create(&p->mem, md, ops_engine, kind == BIND_OWNED ? p->owned : DNNL_MEMORY_NONE));
    if (init) {
        OPS_CHECK(ctx, dnnl_memory_create(&user, init_md, ops_engine, (void *)init));
        OPS_CHECK(ctx, dnnl_reorder_primitive_desc_create(&rpd, init_md, ops_engine, md, ops_engine, NULL));
        OPS_CHECK(ctx, dnnl_primitive_create(&reorder, rpd));
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, p->mem}};
        OPS_CHECK(ctx, dnnl_primitive_execute(reorder, ops_stream, 2, r));
        OPS_CHECK(ctx, dnnl_stream_wait(ops_stream));
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

/* Create s->prim from op_desc and record the implementation oneDNN chose. The caller owns pd. */
static fa_status make_pd(fa_ctx *ctx, ops_state *s, const void *op_desc, dnnl_primitive_desc_t *pd)
{
    OPS_CHECK(ctx, dnnl_primitive_desc_create(pd, op_desc, NULL, ops_engine, NULL));
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
        snprintf(s->impl, sizeof s->impl, "%s", impl);
    return FA_OK;
fail:
    *pd = NULL;
    return FA_ERR_RUNTIME;
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

/* ---- depthwise and grouped convolution ---------------------------------------------------- */

/* Conv with group > 1 (ONNX Conv: X [N, C, spatial], W [M, C/group, k...], B [M]): oneDNN
 * chooses the activation layout (format_tag_any); a blocked choice (nChw16c, nChw8c: its jit
 * depthwise kernels: jit_dw on nChw16c, brdgmm_dw on NHWC) is wrapped in reorders from and to
 * plain NCHW. Declines (handled false), unless `force` is set, when oneDNN's choice is its gemm
 * or reference implementation or a plain layout — on plain NCHW oneDNN runs grouped convs as gemm, which runtime/cpu/dnnl.c already
 * does. */
static fa_status create_grouped_conv(fa_ctx *ctx, const fa_graph *g, const fa_node *n, ops_state *s, bool force,
                                     bool *handled)
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
    OPS_CHECK(ctx, dnnl_memory_desc_init_by_tag(&xplain, r, xd, dnnl_f32, plain_tag(r)));
    OPS_CHECK(ctx, dnnl_memory_desc_init_by_tag(&yplain, r, yd, dnnl_f32, plain_tag(r)));
    OPS_CHECK(ctx, dnnl_memory_desc_init_by_tag(&xany, r, xd, dnnl_f32, dnnl_format_tag_any));
    OPS_CHECK(ctx, dnnl_memory_desc_init_by_tag(&yany, r, yd, dnnl_f32, dnnl_format_tag_any));
    OPS_CHECK(ctx, dnnl_memory_desc_init_by_tag(&wplain, r + 1, wd, dnnl_f32, wtags[ns - 1]));
    OPS_CHECK(ctx, dnnl_memory_desc_init_by_tag(&wany, r + 1, wd, dnnl_f32, dnnl_format_tag_any));
    if (B) {
        bd[0] = Y->dims[1];
        OPS_CHECK(ctx, dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_a));
    }
    dnnl_convolution_desc_t cd;
    OPS_CHECK(ctx, dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &xany,
                                                              &wany, B ? &bmd : NULL, &yany, sd, dd, pld, prd));
    if (make_pd(ctx, s, &cd, &pd)) goto fail;
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
        OPS_CHECK(ctx, dnnl_memory_create(&s->user_src, &xplain, ops_engine, DNNL_MEMORY_NONE));
        dnnl_primitive_desc_t rpd = NULL;
        OPS_CHECK(ctx, dnnl_reorder_primitive_desc_create(&rpd, &xplain, ops_engine, src_md, ops_engine, NULL));
        dnnl_status_t rs = dnnl_primitive_create(&s->reorder_in, rpd);
        dnnl_primitive_desc_destroy(rpd);
        OPS_CHECK(ctx, rs);
    } else if (add_arg(ctx, s, DNNL_ARG_SRC, src_md, BIND_INPUT, 0, NULL, NULL)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_WEIGHTS, wei_md, BIND_OWNED, 1, &wplain, W->data)) goto fail;
    if (B && add_arg(ctx, s, DNNL_ARG_BIAS, &bmd, BIND_INPUT, 2, NULL, NULL)) goto fail;
    if (blocked_dst) {
        if (add_arg(ctx, s, DNNL_ARG_DST, dst_md, BIND_OWNED, 0, NULL, NULL)) goto fail;
        s->blk_dst = s->args[s->n_args - 1].mem;
        OPS_CHECK(ctx, dnnl_memory_create(&s->user_dst, &yplain, ops_engine, DNNL_MEMORY_NONE));
        dnnl_primitive_desc_t rpd = NULL;
        OPS_CHECK(ctx, dnnl_reorder_primitive_desc_create(&rpd, dst_md, ops_engine, &yplain, ops_engine, NULL));
        dnnl_status_t rs = dnnl_primitive_create(&s->reorder_out, rpd);
        dnnl_primitive_desc_destroy(rpd);
        OPS_CHECK(ctx, rs);
    } else if (add_arg(ctx, s, DNNL_ARG_DST, dst_md, BIND_OUTPUT, 0, NULL, NULL)) goto fail;
    OPS_CHECK(ctx, dnnl_primitive_create(&s->prim, pd));
    dnnl_primitive_desc_destroy(pd);
    snprintf(s->name, sizeof s->name, "%s", blocked_src ? "dnnl:convolution(reordered)" : "dnnl:convolution(grouped)");
    *handled = true;
    return FA_OK;
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
static fa_status create_pool(fa_ctx *ctx, const fa_graph *g, const fa_node *n, ops_state *s, bool global, bool *handled)
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
    for (int i = 0; i < ns; i++) kd[i] = k[i], sd[i] = st[i], dd[i] = dil[i] - 1, pld[i] = pl[i], prd[i] = pr[i];
    dnnl_memory_desc_t xmd, ymd;
    OPS_CHECK(ctx, dnnl_memory_desc_init_by_tag(&xmd, r, xd, dnnl_f32, plain_tag(r)));
    OPS_CHECK(ctx, dnnl_memory_desc_init_by_tag(&ymd, r, yd, dnnl_f32, plain_tag(r)));
    dnnl_alg_kind_t alg = is_max ? dnnl_pooling_max : incl ? dnnl_pooling_avg_include_padding : dnnl_pooling_avg_exclude_padding;
    dnnl_pooling_v2_desc_t pdsc;
    OPS_CHECK(ctx, dnnl_pooling_v2_forward_desc_init(&pdsc, dnnl_forward_inference, alg, &xmd, &ymd, sd, kd, dd, pld, prd));
    if (make_pd(ctx, s, &pdsc, &pd)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_SRC, &xmd, BIND_INPUT, 0, NULL, NULL)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_DST, &ymd, BIND_OUTPUT, 0, NULL, NULL)) goto fail;
    OPS_CHECK(ctx, dnnl_primitive_create(&s->prim, pd));
    dnnl_primitive_desc_destroy(pd);
    snprintf(s->name, sizeof s->name, "dnnl:pooling");
    *handled = true;
    return FA_OK;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return FA_ERR_RUNTIME;
}

/* ---- softmax ---------------------------------------------------------------------------------- */

/* Softmax / LogSoftmax. ONNX opset 1-12 coerces X to 2-D [prod(d[:axis]), prod(d[axis:])]
 * (default axis 1) and normalizes each row; opset >= 13 normalizes along one axis (default -1).
 * Both become oneDNN softmax_v2 over axis 1 of a 3-D view [outer, len, inner]. */
static fa_status create_softmax(fa_ctx *ctx, const fa_graph *g, const fa_node *n, ops_state *s, bool log_sm, bool *handled)
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
    dnnl_dims_t d = {outer, len, inner};
    dnnl_memory_desc_t md;
    OPS_CHECK(ctx, dnnl_memory_desc_init_by_tag(&md, 3, d, dnnl_f32, dnnl_abc));
    dnnl_softmax_v2_desc_t sdsc;
    OPS_CHECK(ctx, dnnl_softmax_v2_forward_desc_init(&sdsc, dnnl_forward_inference, log_sm ? dnnl_softmax_log : dnnl_softmax_accurate,
                                                     &md, &md, 1));
    if (make_pd(ctx, s, &sdsc, &pd)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_SRC, &md, BIND_INPUT, 0, NULL, NULL)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_DST, &md, BIND_OUTPUT, 0, NULL, NULL)) goto fail;
    OPS_CHECK(ctx, dnnl_primitive_create(&s->prim, pd));
    dnnl_primitive_desc_destroy(pd);
    snprintf(s->name, sizeof s->name, "%s", log_sm ? "dnnl:logsoftmax" : "dnnl:softmax");
    *handled = true;
    return FA_OK;
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
    OPS_CHECK(ctx, dnnl_memory_desc_init_by_tag(&xmd, 2, xd, dnnl_f32, dnnl_ab));
    OPS_CHECK(ctx, dnnl_memory_desc_init_by_tag(&pmd, 1, pdim, dnnl_f32, dnnl_a));
    dnnl_layer_normalization_desc_t ld;
    unsigned flags = dnnl_use_scale | (B ? dnnl_use_shift : 0);
    OPS_CHECK(ctx, dnnl_layer_normalization_forward_desc_init(&ld, dnnl_forward_inference, &xmd, NULL, eps, flags));
    if (make_pd(ctx, s, &ld, &pd)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_SRC, &xmd, BIND_INPUT, 0, NULL, NULL)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_SCALE, &pmd, BIND_INPUT, 1, NULL, NULL)) goto fail;
    if (B && add_arg(ctx, s, DNNL_ARG_SHIFT, &pmd, BIND_INPUT, 2, NULL, NULL)) goto fail;
    if (add_arg(ctx, s, DNNL_ARG_DST, &xmd, BIND_OUTPUT, 0, NULL, NULL)) goto fail;
    OPS_CHECK(ctx, dnnl_primitive_create(&s->prim, pd));
    dnnl_primitive_desc_destroy(pd);
    snprintf(s->name, sizeof s->name, "dnnl:layer_normalization");
    *handled = true;
    return FA_OK;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return FA_ERR_RUNTIME;
}

/* ---- dispatch --------------------------------------------------------------------------------- */

/* Where oneDNN is faster than our kernels, measured by bench/bench_dnnl_ops on the zoo models'
 * shapes (figures in bench/README.md); `force` bypasses this choice (the bench itself, tests). */
static bool dnnl_op_wins(const char *op)
{
    static const char *const wins[] = {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
                                       "Softmax", "LogSoftmax", "LayerNormalization"};
    for (size_t i = 0; i < sizeof wins / sizeof wins[0]; i++)
        if (!strcmp(op, wins[i])) return true;
    return false;
}

fa_status fa_dnnl_ops_kernel_create(fa_ctx *ctx, const fa_graph *g, const fa_node *n, bool force, fa_kernel *out,
                                    bool *handled)
{
    *handled = false;
    if (*n->domain || getenv("FA_NO_DNNL") || (!force && getenv("FA_NO_DNNL_OPS"))) return FA_OK;
    const char *op = n->op_type;
    bool conv = !strcmp(op, "Conv"), pool = !strcmp(op, "MaxPool") || !strcmp(op, "AveragePool"),
         gpool = !strcmp(op, "GlobalAveragePool") || !strcmp(op, "GlobalMaxPool"), sm = !strcmp(op, "Softmax"),
         lsm = !strcmp(op, "LogSoftmax"), ln = !strcmp(op, "LayerNormalization");
    if (!(conv || pool || gpool || sm || lsm || ln)) return FA_OK;
    if (!force && !dnnl_op_wins(op)) return FA_OK;
    if (!io_float(g, n, ln ? 3 : conv ? 3 : 1) || !ops_engine_init()) return FA_OK;
    ops_state *s = calloc(1, sizeof *s);
    if (!s) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_status st;
    if (conv) st = create_grouped_conv(ctx, g, n, s, force, handled);
    else if (pool || gpool) st = create_pool(ctx, g, n, s, gpool, handled);
    else if (sm || lsm) st = create_softmax(ctx, g, n, s, lsm, handled);
    else st = create_layernorm(ctx, g, n, s, handled);
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
