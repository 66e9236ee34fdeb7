/* runtime/cpu/dnnl — Conv, ConvTranspose, MatMul and Gemm bodies from oneDNN (docs/runtime.md
 * says why oneDNN): plain NCHW activations for the unfused baseline, weights reordered once
 * into the layout oneDNN prefers (they are constants). */
#include "dnnl-impl.h"
#include "dwconv.h"
#include "pixconv.h"
#include "graph/post_op.h"
#include "graph/vmath.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static dnnl_engine_t g_engine;
static dnnl_stream_t g_stream;

const char *fa_dnnl_version(void)
{
    static char buf[64];
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, sizeof buf, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
    return buf;
}

static bool engine_init(void)
{
    if (g_engine) return true;
    if (dnnl_engine_create(&g_engine, dnnl_cpu, 0) != dnnl_success) return false;
    if (dnnl_stream_create(&g_stream, g_engine, dnnl_stream_default_flags) != dnnl_success) return false;
    return true;
}

bool fa_dnnl_engine(dnnl_engine_t *engine, dnnl_stream_t *stream)
{
    if (!engine_init() || !g_stream) return false;
    *engine = g_engine;
    *stream = g_stream;
    return true;
}

/* ---- constant weights, once per layout (fa_dnnl_const_weights) ---- */

/* The bytes of a blocked memory descriptor that decide where each element lies (oneDNN 2.6
 * dnnl_types.h: dims, data type, padding, offset, strides, inner blocks, extra flags), written
 * field by field so that padding bytes of the struct never enter a key. false for other
 * format kinds (no shared copy then). */
static bool md_key(fa_buf *b, const dnnl_memory_desc_t *md)
{
    if (md->format_kind != dnnl_blocked || md->ndims < 0 || md->ndims > DNNL_MAX_NDIMS) return false;
    const dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
    if (bd->inner_nblks < 0 || bd->inner_nblks > DNNL_MAX_NDIMS) return false;
    int64_t v[8 + 6 * DNNL_MAX_NDIMS];
    int n = 0;
    v[n++] = md->ndims;
    v[n++] = md->data_type;
    v[n++] = md->offset0;
    v[n++] = bd->inner_nblks;
    v[n++] = (int64_t)md->extra.flags;
    v[n++] = md->extra.compensation_mask;
    v[n++] = md->extra.asymm_compensation_mask;
    for (int i = 0; i < md->ndims; i++) {
        v[n++] = md->dims[i];
        v[n++] = md->padded_dims[i];
        v[n++] = md->padded_offsets[i];
        v[n++] = bd->strides[i];
    }
    for (int i = 0; i < bd->inner_nblks; i++) {
        v[n++] = bd->inner_blks[i];
        v[n++] = bd->inner_idxs[i];
    }
    fa_buf_append(b, v, sizeof(int64_t) * (size_t)n);
    return !b->oom;
}

typedef struct wei_reorder {
    const dnnl_memory_desc_t *from, *to;
} wei_reorder;

/* fa_blob_make_fn: src (laid out as from) reordered by oneDNN into dst (laid out as to). */
static fa_status reorder_into(void *user, fa_ctx *ctx, const void *src, void *dst, size_t nbytes)
{
    const wei_reorder *r = user;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_memory_t a = NULL, b = NULL;
    (void)nbytes;
    DNNL_CHECK(ctx, dnnl_memory_create(&a, r->from, g_engine, (void *)src));
    DNNL_CHECK(ctx, dnnl_memory_create(&b, r->to, g_engine, dst));
    DNNL_CHECK(ctx, dnnl_reorder_primitive_desc_create(&rpd, r->from, g_engine, r->to, g_engine, NULL));
    DNNL_CHECK(ctx, dnnl_primitive_create(&reorder, rpd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}};
    DNNL_CHECK(ctx, dnnl_primitive_execute(reorder, g_stream, 2, args));
    DNNL_CHECK(ctx, dnnl_stream_wait(g_stream));
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(a);
    dnnl_memory_destroy(b);
    return FA_OK;
fail:
    if (reorder) dnnl_primitive_destroy(reorder);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (a) dnnl_memory_destroy(a);
    if (b) dnnl_memory_destroy(b);
    return FA_ERR_RUNTIME;
}

fa_status fa_dnnl_const_weights(fa_ctx *ctx, const fa_tensor *W, const dnnl_memory_desc_t *user_md,
                                const dnnl_memory_desc_t *want_md, const void **data, fa_blob **hold, void **owned)
{
    *data = NULL;
    *hold = NULL;
    *owned = NULL;
    if (!engine_init()) return fa_ctx_error(ctx, FA_ERR_RUNTIME, "oneDNN: no CPU engine");
    size_t sz = dnnl_memory_desc_get_size(want_md);
    bool shared = W->blob && W->data && fa_blob_data(W->blob) == W->data;
    if (shared && dnnl_memory_desc_equal(user_md, want_md)) { /* the primitive reads W as it is */
        *data = W->data;
        *hold = fa_blob_ref_reader(W->blob, *data);
        return FA_OK;
    }
    wei_reorder r = {user_md, want_md};
    fa_buf key;
    fa_buf_init(&key);
    fa_buf_puts(&key, "dnnl-weights:");
    if (shared && md_key(&key, user_md) && md_key(&key, want_md)) {
        int before = fa_blob_derived_count(W->blob);
        fa_status s = fa_blob_derived(ctx, W->blob, key.data, key.len, sz, reorder_into, &r, data);
        fa_buf_free(&key);
        if (s) return s;
        /* the executors read the copy from now on: W's plain pages, when they are the file's, leave
         * the resident set (a plain read maps them again) */
        if (fa_blob_derived_count(W->blob) != before) fa_blob_release_pages(W->blob);
        *hold = fa_blob_ref_reader(W->blob, *data); /* dropped with fa_blob_unref_reader(hold, data) */
        return FA_OK;
    }
    fa_buf_free(&key);
    void *p = NULL;
    if (posix_memalign(&p, 64, sz ? sz : 64) != 0) return fa_ctx_error(ctx, FA_ERR_NOMEM, "oneDNN weights: out of memory");
    fa_status s = reorder_into(&r, ctx, W->data, p, sz);
    if (s) {
        free(p);
        return s;
    }
    *data = *owned = p;
    return FA_OK;
}

typedef struct dnnl_state {
    dnnl_primitive_t prim;
    dnnl_memory_t src, wei, bias, dst, scratch;
    const void *wei_data; /* constant weights in the primitive's layout (fa_dnnl_const_weights) */
    fa_blob *wei_hold;    /* ... held while the kernel lives */
    void *wei_buf;        /* ... or a private copy (a W without a blob) */
    void *scratch_buf;
    /* Gemm post-processing */
    float alpha, beta;
    int c_input;     /* input index of C to add in the loop, -1 if none (or fused as bias) */
    float *c_scaled; /* a fused Gemm's beta·C (constant C, beta != 1), the first post-op's operand (owned) */
    int64_t M, N;
    int kind;        /* 0 conv, 1 deconv, 2 matmul, 3 gemm */
    int n_bin;       /* binary post-op operands */
    int bin_input[8];            /* node input index of each operand */
    dnnl_memory_t bin_mem[8];
    int bin_post_index[8];       /* index of the post-op in the chain */
    int bias_input;              /* a fused MatMul's first post-op given to oneDNN as the product's bias
                                    (matmul_bias_operand): its node input index; 0: none */
    char impl[96];               /* the implementation oneDNN chose (dnnl_query_impl_info_str) */
    int wei_packed;              /* constant weights: 1 reordered into a layout oneDNN chose, 0 kept
                                    in the plain one (repacked on every call); -1 not constant */
    /* Blocked activations (fused convolutions only, create_conv): the primitive reads src and
     * writes dst in the layout oneDNN chose for format_tag_any (nChw8c/nChw16c; nhwc for its
     * brgemm convolution), in the calling thread's two scratch buffers (io_scratch, bound on
     * every run); the kernel reorders the plain input in and the blocked output out,
     * and full-shape binary post-op operands in, with oneDNN reorder primitives. */
    bool blocked;
    dnnl_memory_t src_user, dst_user;   /* plain views of the kernel's input 0 / output 0 */
    dnnl_primitive_t r_src, r_dst;      /* plain -> blocked src, blocked -> plain dst */
    size_t src_bytes, dst_bytes;        /* the blocked src and dst (io_scratch) */
    bool bin_full[8];                   /* the operand has the output's shape: read in dst's layout */
    dnnl_memory_t bin_user[8];          /* plain view of a blocked binary operand (else NULL) */
    dnnl_primitive_t r_bin[8];
    void *bin_buf[8];
    bool has_sum;                       /* a full-shape Add as oneDNN's sum post-op: */
    int sum_input;                      /* node input reordered into dst before the primitive */
    dnnl_memory_t sum_user;             /* its plain view */
    dnnl_primitive_t r_sum;
    char name[128];                     /* kernel name naming the layout and the reorders */
    /* A fused convolution's trailing swish, not given to oneDNN (swish_after_conv): applied over
     * dst after the primitive, in place, on the kernel's threads (swish_pass) */
    bool swish_after;
    float swish_alpha;
    int n_lib_post_ops;                 /* the post-ops oneDNN was given, its sum included */
    size_t dst_md_bytes;                /* the primitive's dst, padded blocks included */
    /* A depthwise convolution on nChw16c run by our kernel with its epilogue in registers
     * (runtime/cpu/dwconv.h) instead of the primitive, under FA_CONV_TACTIC_OWN (own_depthwise);
     * the primitive stays built (its memories carry the handles), unused */
    fa_dwconv *dw;
    /* A convolution on one pixel (a squeeze-excitation block's) run as a matrix-vector product
     * (runtime/cpu/pixconv.h; own_pixel): no primitive is built; weights and bias are read from
     * the node's inputs 1 and 2 at each run */
    fa_pixconv *px;
    bool px_bias;
    /* The tactic memo's key of a blocked convolution that FA_CONV_TACTIC_MEASURED reordered inside
     * (blocked_reorder_inside), malloc'd; NULL otherwise. fa_dnnl_kernel_veto_tactic turns that
     * decision into "direct" for the rest of the process. */
    char *tactic_key;
} dnnl_state;

/* Release everything a creation attempt made and zero the state (create_conv retries plain). */
static void state_clear(dnnl_state *s)
{
    if (s->prim) dnnl_primitive_destroy(s->prim);
    if (s->src) dnnl_memory_destroy(s->src);
    if (s->wei) dnnl_memory_destroy(s->wei);
    if (s->bias) dnnl_memory_destroy(s->bias);
    if (s->dst) dnnl_memory_destroy(s->dst);
    if (s->scratch) dnnl_memory_destroy(s->scratch);
    if (s->src_user) dnnl_memory_destroy(s->src_user);
    if (s->dst_user) dnnl_memory_destroy(s->dst_user);
    if (s->r_src) dnnl_primitive_destroy(s->r_src);
    if (s->r_dst) dnnl_primitive_destroy(s->r_dst);
    if (s->sum_user) dnnl_memory_destroy(s->sum_user);
    if (s->r_sum) dnnl_primitive_destroy(s->r_sum);
    for (int i = 0; i < s->n_bin; i++) {
        if (s->bin_mem[i]) dnnl_memory_destroy(s->bin_mem[i]);
        if (s->bin_user[i]) dnnl_memory_destroy(s->bin_user[i]);
        if (s->r_bin[i]) dnnl_primitive_destroy(s->r_bin[i]);
        free(s->bin_buf[i]);
    }
    free(s->wei_buf);
    free(s->c_scaled);
    fa_blob_unref_reader(s->wei_hold, s->wei_data);
    free(s->scratch_buf);
    fa_dwconv_free(s->dw);
    fa_pixconv_free(s->px);
    free(s->tactic_key);
    memset(s, 0, sizeof *s);
}

static void state_destroy(fa_kernel *k)
{
    dnnl_state *s = k->state;
    if (!s) return;
    state_clear(s);
    free(s);
    k->state = NULL;
}

static void plain_strides(int rank, const dnnl_dims_t dims, dnnl_dims_t strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

/* The primitive's arguments from its memories (their handles already bound): the binary
 * post-ops' operands, src, weights, bias, dst, scratchpad. args holds 5 + 8. Returns the count. */
static int prim_args(const dnnl_state *s, dnnl_exec_arg_t *args)
{
    int na = 0;
    for (int b = 0; b < s->n_bin; b++)
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_MULTIPLE_POST_OP(s->bin_post_index[b]) | DNNL_ARG_SRC_1, s->bin_mem[b]};
    args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, s->src};
    args[na++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, s->wei};
    if (s->bias) args[na++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, s->bias};
    args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DST, s->dst};
    if (s->scratch) args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, s->scratch};
    return na;
}

/* The blocked activations of reorder-inside convolutions (blocked_io): a kernel needs its
 * blocked input and output only while it runs, and an executor runs its kernels one after another
 * on the calling thread, so every such kernel on a thread shares two buffers, grown to the largest
 * need, instead of each holding two of its own (about 2 x 23 MiB per convolution of ResNet-50 at
 * batch 8, none of it in the executor's memory plan). oneDNN's reorders write a blocked layout's
 * padding as zeros, so what an earlier kernel left there is never read. Freed at thread exit. */
typedef struct io_scratch {
    void *p[2];
    size_t cap[2];
} io_scratch;
static pthread_key_t g_io_key;
static pthread_once_t g_io_once = PTHREAD_ONCE_INIT;
static bool g_io_key_ok;

static void io_scratch_free(void *v)
{
    io_scratch *b = v;
    if (!b) return;
    free(b->p[0]);
    free(b->p[1]);
    free(b);
}

static void io_key_init(void) { g_io_key_ok = pthread_key_create(&g_io_key, io_scratch_free) == 0; }

/* The calling thread's buffer `which` (0 src, 1 dst) of at least bytes, 64-byte aligned; NULL
 * when out of memory. */
static void *io_scratch_get(int which, size_t bytes)
{
    pthread_once(&g_io_once, io_key_init);
    if (!g_io_key_ok) return NULL;
    io_scratch *b = pthread_getspecific(g_io_key);
    if (!b) {
        if (!(b = calloc(1, sizeof *b))) return NULL;
        if (pthread_setspecific(g_io_key, b) != 0) {
            free(b);
            return NULL;
        }
    }
    if (b->cap[which] < bytes) {
        void *p = NULL;
        if (posix_memalign(&p, 64, bytes) != 0) return NULL;
        free(b->p[which]);
        b->p[which] = p;
        b->cap[which] = bytes;
    }
    return b->p[which];
}

/* Whether a fused convolution's trailing swish is applied after oneDNN's primitive instead of as
 * its eltwise post-op (op: the node's last post-op; n: the node). oneDNN 2.6's swish post-op costs
 * more than the convolution on EfficientNet's early layers (0.11 ms of 0.18 on a depthwise 3x3 over
 * 96 x 112², 0.25 of 0.43 on a 1x1 16 -> 96 at 112²), while fa_vmath512_swishf over the output the
 * primitive has just written, in cache, costs ~0.16 ns per element on 2 threads: on EfficientNet-B0's
 * 20 convolution shapes the pair took 0.67-1.00x the post-op's time, never more
 * (build/bench/bench_conv_swish, bench/README.md "Swish after the convolution"). Only where the CPU
 * has AVX-512F: an 8-lane pass measured slower than the post-op. */
static bool g_swish_post_op_forced; /* fa_dnnl_swish_post_op_force */
void fa_dnnl_swish_post_op_force(bool on) { g_swish_post_op_forced = on; }

static bool swish_after_conv(const fa_node *n, const fa_post_op *op, bool last)
{
    return last && op->kind == FA_POST_OP_SWISH && !g_swish_post_op_forced && fa_vmath512_available() &&
           !strcmp(n->domain, FA_FUSED_DOMAIN) && (!strcmp(n->op_type, "FusedConv") || !strcmp(n->op_type, "FusedConvTranspose"));
}

/* Elements a thread takes at least before the swish pass splits over threads: a few microseconds
 * of work at ~0.3 ns per element, more than a parallel region's entry on threads the primitive has
 * just released (docs/runtime.md "Threads and waiting"). */
enum { SWISH_PASS_PER_THREAD_MIN = 8192 };

/* y[0..n) = y·sigmoid(alpha·y) in place, on up to `threads` threads in 16-float-aligned ranges. */
static void swish_pass(float *y, int64_t n, float alpha, int threads)
{
    int t = threads;
    while (t > 1 && n / t < SWISH_PASS_PER_THREAD_MIN) t--;
    if (t <= 1) {
        fa_vmath512_swishf(y, y, n, alpha);
        return;
    }
#pragma omp parallel num_threads(t)
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int64_t per = ((n + nt - 1) / nt + 15) / 16 * 16, a = (int64_t)id * per, b = a + per < n ? a + per : n;
        if (a < b) fa_vmath512_swishf(y + a, y + a, b - a, alpha);
    }
}

/* The part of a kernel's name that says what epilogue it runs: "+post-ops" when oneDNN was given
 * any beyond the residual's sum (named apart), "+swish" when the swish runs after the primitive. */
static const char *epilogue_label(const dnnl_state *s)
{
    bool lib = s->n_lib_post_ops > (s->has_sum ? 1 : 0);
    return lib && s->swish_after ? "+post-ops+swish" : lib ? "+post-ops" : s->swish_after ? "+swish" : "";
}

/* fa_dnnl_test_tactic_defect (tests only): every kernel whose algorithm a tactic chose adds 1 to
 * its first output element. */
static _Atomic bool g_test_tactic_defect;

void fa_dnnl_test_tactic_defect(bool on)
{
    g_test_tactic_defect = on;
}

static fa_status run_prim(fa_ctx *ctx, fa_kernel *k, const fa_node *n, const fa_value *in, int n_in,
                          fa_value *out, int n_out, int threads)
{
    dnnl_state *s = k->state;
    const fa_value *A = &in[0];
    if (s->px) { /* a convolution on one pixel: no primitive (own_pixel) */
        fa_pixconv_run(s->px, A->data, in[1].data, s->px_bias ? in[2].data : NULL, out[0].data, threads);
        return FA_OK;
    }
    if (s->blocked) { /* the thread's scratch buffers for the blocked src and dst */
        void *bs = io_scratch_get(0, s->src_bytes), *bd = io_scratch_get(1, s->dst_bytes);
        if (!bs || !bd) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory for node '%s''s blocked activations", n->name);
        DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->src, bs));
        DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->dst, bd));
    }
    if (s->blocked) { /* plain input 0 -> the primitive's blocked src */
        DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->src_user, A->data));
        dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, s->src_user}, {DNNL_ARG_TO, s->src}};
        DNNL_CHECK(ctx, dnnl_primitive_execute(s->r_src, g_stream, 2, ra));
    } else {
        DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->src, A->data));
    }
    if (s->kind == 2 || s->kind == 3) /* weights are the second operand, may be non-constant */
        if (!s->wei_data) DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->wei, in[1].data));
    if (s->bias && s->kind <= 1) DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->bias, in[2].data));
    if (s->bias && s->kind == 3) DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->bias, in[2].data));
    if (s->bias && s->kind == 2 && s->bias_input > 0)
        DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->bias, in[s->bias_input].data));
    if (!s->blocked) DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->dst, out[0].data));
    if (s->has_sum && in[s->sum_input].data != out[0].data) { /* the residual into dst: the sum post-op adds the convolution to it */
        DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->sum_user, in[s->sum_input].data));
        dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, s->sum_user}, {DNNL_ARG_TO, s->dst}};
        DNNL_CHECK(ctx, dnnl_primitive_execute(s->r_sum, g_stream, 2, ra));
    }
    for (int b = 0; b < s->n_bin; b++) {
        if (s->r_bin[b]) { /* a full-shape operand in the dst's blocked layout */
            DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->bin_user[b], in[s->bin_input[b]].data));
            dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, s->bin_user[b]}, {DNNL_ARG_TO, s->bin_mem[b]}};
            DNNL_CHECK(ctx, dnnl_primitive_execute(s->r_bin[b], g_stream, 2, ra));
        } else {
            void *d = s->bin_input[b] < 0 ? (void *)s->c_scaled : in[s->bin_input[b]].data;
            DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->bin_mem[b], d));
        }
    }
    if (s->dw) { /* our depthwise kernel, its epilogue included, from input 0 to output 0 as laid out */
        fa_dwconv_run(s->dw, A->data, out[0].data, threads);
        return FA_OK;
    }
    dnnl_exec_arg_t args[5 + 8];
    int na = prim_args(s, args);
    DNNL_CHECK(ctx, dnnl_primitive_execute(s->prim, g_stream, na, args));
    if (s->swish_after) { /* over dst as the primitive left it (blocked: its zero padding stays zero) */
        DNNL_CHECK(ctx, dnnl_stream_wait(g_stream));
        void *d = NULL;
        DNNL_CHECK(ctx, dnnl_memory_get_data_handle(s->dst, &d));
        swish_pass(d, (int64_t)(s->dst_md_bytes / sizeof(float)), s->swish_alpha, threads);
    }
    if (s->blocked) { /* the primitive's blocked dst -> plain output 0 */
        DNNL_CHECK(ctx, dnnl_memory_set_data_handle(s->dst_user, out[0].data));
        dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, s->dst}, {DNNL_ARG_TO, s->dst_user}};
        DNNL_CHECK(ctx, dnnl_primitive_execute(s->r_dst, g_stream, 2, ra));
    }
    DNNL_CHECK(ctx, dnnl_stream_wait(g_stream));
    if (g_test_tactic_defect && s->tactic_key) ((float *)out[0].data)[0] += 1.0f; /* test hook: a tactic's wrong result */
    if (s->kind == 3 && (s->alpha != 1.0f || s->c_input >= 0)) {
        /* Y = alpha * (A B) + beta * C, C unidirectionally broadcast to [M, N] (ONNX Gemm). */
        float *y = out[0].data;
        const fa_value *C = s->c_input >= 0 ? &in[s->c_input] : NULL;
        int64_t cs_m = 0, cs_n = 0;
        if (C && C->data) {
            int64_t cd[2] = {1, 1};
            if (C->rank == 2) { cd[0] = C->dims[0]; cd[1] = C->dims[1]; }
            else if (C->rank == 1) cd[1] = C->dims[0];
            cs_n = cd[1] == 1 ? 0 : 1;
            cs_m = cd[0] == 1 ? 0 : cd[1];
        }
        const float *c = (C && C->data) ? C->data : NULL;
        float alpha = s->alpha, beta = s->beta;
        int64_t M = s->M, N = s->N;
#pragma omp parallel for num_threads(threads) if (M * N > 65536)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                float v = alpha * y[i * N + j];
                if (c) v += beta * c[i * cs_m + j * cs_n];
                y[i * N + j] = v;
            }
    }
    return FA_OK;
fail:
    return FA_ERR_RUNTIME;
}

/* Create prim from op desc; constant weights W (NULL: the weights are an input read at run
 * time) in the chosen layout, shared by the run (fa_dnnl_const_weights). */
static fa_status finish_prim(fa_ctx *ctx, dnnl_state *s, const void *op_desc, const dnnl_memory_desc_t *user_wei_md,
                             const fa_tensor *W, dnnl_primitive_attr_t attr)
{
    dnnl_primitive_desc_t pd = NULL;
    DNNL_CHECK(ctx, dnnl_primitive_desc_create(&pd, op_desc, attr, g_engine, NULL));
    {   /* which implementation oneDNN picked: "jit:avx512_core", "gemm:jit", "ref:any", ... */
        const char *impl = NULL;
        if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
            snprintf(s->impl, sizeof s->impl, "%s", impl);
    }
    const dnnl_memory_desc_t *src_md = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *wei_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *dst_md = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    const dnnl_memory_desc_t *bia_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
    const dnnl_memory_desc_t *scr_md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    for (int b = 0; b < s->n_bin; b++) {
        const dnnl_memory_desc_t *bmd =
            dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, DNNL_ARG_ATTR_MULTIPLE_POST_OP(s->bin_post_index[b]) | DNNL_ARG_SRC_1);
        if (!bmd) { fa_ctx_error(ctx, FA_ERR_RUNTIME, "oneDNN: no binary post-op descriptor"); goto fail; }
        DNNL_CHECK(ctx, dnnl_memory_create(&s->bin_mem[b], bmd, g_engine, DNNL_MEMORY_NONE));
    }
    DNNL_CHECK(ctx, dnnl_memory_create(&s->src, src_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(ctx, dnnl_memory_create(&s->dst, dst_md, g_engine, DNNL_MEMORY_NONE));
    s->dst_md_bytes = dnnl_memory_desc_get_size(dst_md);
    if (bia_md && bia_md->ndims > 0)
        DNNL_CHECK(ctx, dnnl_memory_create(&s->bias, bia_md, g_engine, DNNL_MEMORY_NONE));
    if (scr_md && dnnl_memory_desc_get_size(scr_md) > 0) {
        size_t sz = dnnl_memory_desc_get_size(scr_md);
        if (posix_memalign(&s->scratch_buf, 64, sz) != 0) { fa_ctx_error(ctx, FA_ERR_NOMEM, "oneDNN scratchpad"); goto fail; }
        DNNL_CHECK(ctx, dnnl_memory_create(&s->scratch, scr_md, g_engine, s->scratch_buf));
    }
    s->wei_packed = W ? !dnnl_memory_desc_equal(wei_md, user_wei_md) : -1;
    if (W) {
        if (fa_dnnl_const_weights(ctx, W, user_wei_md, wei_md, &s->wei_data, &s->wei_hold, &s->wei_buf)) goto fail;
        /* oneDNN reads constant weights only (a primitive never writes its weights argument) */
        DNNL_CHECK(ctx, dnnl_memory_create(&s->wei, wei_md, g_engine, (void *)s->wei_data));
    } else {
        DNNL_CHECK(ctx, dnnl_memory_create(&s->wei, wei_md, g_engine, DNNL_MEMORY_NONE));
    }
    DNNL_CHECK(ctx, dnnl_primitive_create(&s->prim, pd));
    dnnl_primitive_desc_destroy(pd);
    return FA_OK;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return FA_ERR_RUNTIME;
}

/* The one map from a post-op kind (graph/post_op.h) to oneDNN's algorithm (dnnl_types.h,
 * oneDNN 2.6 "Primitive Attributes: Post-ops"): eltwise kinds take (alpha, beta) as the
 * algorithm's own: relu's alpha is the negative slope (LeakyRelu), clip's [alpha, beta] the
 * bounds, swish's alpha the sigmoid's scale, linear alpha·x + beta; binary kinds their
 * dnnl_binary_* algorithm. */
static const dnnl_alg_kind_t k_post_op_alg[] = {
    [FA_POST_OP_RELU] = dnnl_eltwise_relu,
    [FA_POST_OP_LEAKY_RELU] = dnnl_eltwise_relu,
    [FA_POST_OP_SIGMOID] = dnnl_eltwise_logistic,
    [FA_POST_OP_TANH] = dnnl_eltwise_tanh,
    [FA_POST_OP_ELU] = dnnl_eltwise_elu,
    [FA_POST_OP_HARD_SWISH] = dnnl_eltwise_hardswish,
    [FA_POST_OP_MISH] = dnnl_eltwise_mish,
    [FA_POST_OP_SOFTPLUS] = dnnl_eltwise_soft_relu,
    [FA_POST_OP_GELU_ERF] = dnnl_eltwise_gelu_erf,
    [FA_POST_OP_GELU_TANH] = dnnl_eltwise_gelu_tanh,
    [FA_POST_OP_CLIP] = dnnl_eltwise_clip,
    [FA_POST_OP_SWISH] = dnnl_eltwise_swish,
    [FA_POST_OP_LINEAR] = dnnl_eltwise_linear,
    [FA_POST_OP_ABS] = dnnl_eltwise_abs,
    [FA_POST_OP_EXP] = dnnl_eltwise_exp,
    [FA_POST_OP_SQRT] = dnnl_eltwise_sqrt,
    [FA_POST_OP_ADD] = dnnl_binary_add,
    [FA_POST_OP_SUB] = dnnl_binary_sub,
    [FA_POST_OP_MUL] = dnnl_binary_mul,
    [FA_POST_OP_DIV] = dnnl_binary_div,
    [FA_POST_OP_MAX] = dnnl_binary_max,
    [FA_POST_OP_MIN] = dnnl_binary_min,
};
_Static_assert(sizeof k_post_op_alg / sizeof k_post_op_alg[0] == FA_POST_OP_COUNT, "k_post_op_alg: one row per value");

/* Fused nodes (domain "ai.fuse-advise": FusedConv, FusedConvTranspose, FusedMatMul, FusedGemm)
 * carry their epilogue as typed post-ops (fa_post_ops_of_node), applied in order by oneDNN
 * post-ops (k_post_op_alg); a binary kind's operand is node input `operand`, numpy-broadcast
 * to the output. Returns NULL attr (and no error) when the node has none. full_md (NULL:
 * plain): the layout of a binary operand of the output's full shape (the blocked dst's layout,
 * so oneDNN's jit post-op reads it like dst; the kernel reorders it in). pre[0..npre) (at most
 * 4) run before the node's own: a fused Gemm's beta·C (create_gemm). */
static fa_status build_post_ops_pre(fa_ctx *ctx, const fa_graph *g, const fa_node *n, const fa_tensor *Y, dnnl_state *s,
                                    const dnnl_memory_desc_t *full_md, const fa_post_op *pre, int npre, int skip,
                                    dnnl_primitive_attr_t *out_attr)
{
    *out_attr = NULL;
    fa_post_op ops[20];
    char why[300];
    for (int i = 0; i < npre && i < 4; i++) ops[i] = pre[i];
    if (npre > 4) npre = 4;
    int nops = fa_post_ops_of_node(n, ops + npre, 16, why, sizeof why);
    if (nops < 0) return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "%s", why);
    nops += npre;
    if (skip > 0 && skip <= nops) { /* the first `skip` ops are the primitive's own (a matmul's bias) */
        memmove(ops, ops + skip, sizeof *ops * (size_t)(nops - skip));
        nops -= skip;
    }
    if (nops == 0) return FA_OK;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_attr_t attr = NULL;
    DNNL_CHECK(ctx, dnnl_post_ops_create(&po));
    s->swish_after = false;
    s->n_lib_post_ops = 0;
    for (int i = 0; i < nops; i++) {
        const fa_post_op *op = &ops[i];
        dnnl_alg_kind_t alg = k_post_op_alg[op->kind];
        if (swish_after_conv(n, op, i == nops - 1)) { /* applied after the primitive (run_prim) */
            s->swish_after = true;
            s->swish_alpha = op->alpha;
            continue;
        }
        s->n_lib_post_ops++;
        if (!fa_post_op_is_binary(op->kind)) {
            DNNL_CHECK(ctx, dnnl_post_ops_append_eltwise(po, 1.0f, alg, op->alpha, op->beta));
        } else {
            int k = op->operand;
            if (s->n_bin >= 8) {
                fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "node '%s': more than 8 binary post-ops", n->name);
                goto fail;
            }
            const fa_tensor *B = fa_graph_in(g, n, k);
            /* Y is the shape the primitive computes; a Gemm/MatMul epilogue after a view of its
             * output (advisor: view-only reshapes keeping the last dimension) has operands shaped
             * like the view: a full one is read in the same element order, a per-column or scalar
             * one loses its leading 1s */
            int brank = B ? B->rank : 0, boff = 0;
            bool full_numel = B && fa_tensor_numel(B) == fa_tensor_numel(Y);
            while (B && !full_numel && brank > Y->rank && B->dims[boff] == 1) boff++, brank--;
            if (!B || B->dtype != FA_DTYPE_FLOAT || (!full_numel && brank > Y->rank)) {
                fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "node '%s': post-op operand %d must be float32 of rank <= %d", n->name, k, Y->rank);
                goto fail;
            }
            dnnl_dims_t bd;
            for (int d = 0; d < Y->rank; d++) {
                int kb = d - (Y->rank - brank);
                bd[d] = full_numel ? Y->dims[d] : kb >= 0 ? B->dims[boff + kb] : 1;
                if (bd[d] != 1 && bd[d] != Y->dims[d]) {
                    fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "node '%s': post-op operand %d does not broadcast to the output", n->name, k);
                    goto fail;
                }
            }
            dnnl_memory_desc_t bmd;
            bool full = true;
            for (int d = 0; d < Y->rank; d++) full = full && bd[d] == Y->dims[d];
            if (full && full_md && alg == dnnl_binary_add && !s->has_sum) {
                /* the residual add on blocked activations: oneDNN's sum post-op (dst += the
                 * operand, reordered into dst before the primitive runs), which its jit and
                 * brgemm convolutions keep in the fast path; a binary post-op with a blocked
                 * full-shape operand sends oneDNN 2.6 back to its gemm convolution */
                DNNL_CHECK(ctx, dnnl_post_ops_append_sum(po, 1.0f));
                s->has_sum = true;
                s->sum_input = k;
                continue;
            }
            if (full && full_md) bmd = *full_md;
            else DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&bmd, Y->rank, bd, dnnl_f32, NULL));
            s->bin_full[s->n_bin] = full && full_md;
            DNNL_CHECK(ctx, dnnl_post_ops_append_binary(po, alg, &bmd));
            s->bin_input[s->n_bin] = k;
            s->bin_post_index[s->n_bin] = i;
            s->n_bin++;
        }
    }
    DNNL_CHECK(ctx, dnnl_primitive_attr_create(&attr));
    DNNL_CHECK(ctx, dnnl_primitive_attr_set_post_ops(attr, po));
    dnnl_post_ops_destroy(po);
    *out_attr = attr;
    return FA_OK;
fail:
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_RUNTIME;
}

/* build_post_ops_pre without a prefix: the node's own post-ops. */
static fa_status build_post_ops(fa_ctx *ctx, const fa_graph *g, const fa_node *n, const fa_tensor *Y, dnnl_state *s,
                                const dnnl_memory_desc_t *full_md, dnnl_primitive_attr_t *out_attr)
{
    return build_post_ops_pre(ctx, g, n, Y, s, full_md, NULL, 0, 0, out_attr);
}

static bool all_float(const fa_graph *g, const fa_node *n)
{
    for (int i = 0; i < n->n_inputs; i++) {
        const fa_tensor *t = fa_graph_in(g, n, i);
        if (t && t->dtype != FA_DTYPE_FLOAT) return false;
    }
    const fa_tensor *y = fa_graph_out(g, n, 0);
    return y && y->dtype == FA_DTYPE_FLOAT;
}

/* Pads per spatial dim from ONNX attributes (Conv spec: auto_pad, pads [x1_begin.., x1_end..]). */
static void conv_pads(const fa_node *n, int ns, const int64_t *in_sp, const int64_t *out_sp,
                      const int64_t *k, const int64_t *st, const int64_t *dil, int64_t *pl, int64_t *pr,
                      bool transposed)
{
    const char *ap = fa_node_attr_string(n, "auto_pad", "NOTSET");
    const int64_t *pads = NULL;
    int np = fa_node_attr_ints(n, "pads", &pads);
    for (int i = 0; i < ns; i++) {
        pl[i] = pr[i] = 0;
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            int64_t total;
            if (!transposed)
                total = (out_sp[i] - 1) * st[i] + (k[i] - 1) * dil[i] + 1 - in_sp[i];
            else
                total = st[i] * (in_sp[i] - 1) + ((k[i] - 1) * dil[i] + 1) - out_sp[i];
            if (total < 0) total = 0;
            bool upper = !strcmp(ap, "SAME_UPPER");
            if (transposed) upper = !upper; /* ConvTranspose: SAME_UPPER puts extra padding at the start */
            pl[i] = upper ? total / 2 : total - total / 2;
            pr[i] = total - pl[i];
        } else if (!strcmp(ap, "VALID")) {
        } else if (np == 2 * ns) {
            pl[i] = pads[i];
            pr[i] = pads[i + ns];
        }
    }
}

/* A oneDNN reorder primitive from one layout of a tensor to another. */
static fa_status make_reorder(fa_ctx *ctx, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to, dnnl_primitive_t *out)
{
    dnnl_primitive_desc_t rpd = NULL;
    DNNL_CHECK(ctx, dnnl_reorder_primitive_desc_create(&rpd, from, g_engine, to, g_engine, NULL));
    DNNL_CHECK(ctx, dnnl_primitive_create(out, rpd));
    dnnl_primitive_desc_destroy(rpd);
    return FA_OK;
fail:
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    return FA_ERR_RUNTIME;
}

/* Give memory m a zeroed buffer of its own (owned by *buf): the blocked layout's channel padding
 * stays zero, and its pages are touched at creation, not in a timed iteration. */
static fa_status own_buffer(fa_ctx *ctx, dnnl_memory_t m, void **buf)
{
    const dnnl_memory_desc_t *md = NULL;
    DNNL_CHECK(ctx, dnnl_memory_get_memory_desc(m, &md));
    size_t sz = dnnl_memory_desc_get_size(md);
    if (posix_memalign(buf, 64, sz ? sz : 64) != 0) return fa_ctx_error(ctx, FA_ERR_NOMEM, "oneDNN blocked activation buffer");
    memset(*buf, 0, sz ? sz : 64);
    DNNL_CHECK(ctx, dnnl_memory_set_data_handle(m, *buf));
    return FA_OK;
fail:
    return FA_ERR_RUNTIME;
}

/* The activation layout's name: "nChw16c" (channel-blocked), "nhwc" (channels last), "nchw",
 * "blocked" for another one. */
static void layout_name(const dnnl_memory_desc_t *md, char *buf, size_t cap)
{
    static const char *sp[] = {"w", "hw", "dhw"};
    static const dnnl_format_tag_t last[] = {dnnl_acb, dnnl_acdb, dnnl_acdeb}, first[] = {dnnl_abc, dnnl_abcd, dnnl_abcde};
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    int r = md->ndims;
    dnnl_memory_desc_t t;
    if (r < 3 || r > 5 || md->format_kind != dnnl_blocked) snprintf(buf, cap, "blocked");
    else if (b->inner_nblks == 1 && b->inner_idxs[0] == 1) snprintf(buf, cap, "nC%s%dc", sp[r - 3], (int)b->inner_blks[0]);
    else if (dnnl_memory_desc_init_by_tag(&t, r, md->dims, dnnl_f32, last[r - 3]) == dnnl_success && dnnl_memory_desc_equal(&t, md))
        snprintf(buf, cap, "n%sc", sp[r - 3]);
    else if (dnnl_memory_desc_init_by_tag(&t, r, md->dims, dnnl_f32, first[r - 3]) == dnnl_success && dnnl_memory_desc_equal(&t, md))
        snprintf(buf, cap, "nc%s", sp[r - 3]);
    else snprintf(buf, cap, "blocked");
}

/* After finish_prim made s->prim on format_tag_any activations: buffers for its blocked src
 * and dst, plain views (xmd, ymd) of the kernel's input 0 and output 0, and the reorders between
 * them; the same for every full-shape binary operand (which build_post_ops gave the layout
 * want_dst). FA_ERR_UNSUPPORTED when oneDNN's dst layout is not want_dst (the caller then
 * builds the plain kernel). */
static fa_status blocked_io(fa_ctx *ctx, dnnl_state *s, const dnnl_memory_desc_t *xmd, const dnnl_memory_desc_t *ymd,
                            const dnnl_memory_desc_t *want_dst)
{
    const dnnl_memory_desc_t *src_md = NULL, *dst_md = NULL;
    DNNL_CHECK(ctx, dnnl_memory_get_memory_desc(s->src, &src_md));
    DNNL_CHECK(ctx, dnnl_memory_get_memory_desc(s->dst, &dst_md));
    bool any_full = false;
    for (int b = 0; b < s->n_bin; b++) any_full = any_full || s->bin_full[b];
    if (any_full && !dnnl_memory_desc_equal(dst_md, want_dst))
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "oneDNN changed the dst layout once post-ops were attached");
    s->src_bytes = dnnl_memory_desc_get_size(src_md);
    s->dst_bytes = dnnl_memory_desc_get_size(dst_md);
    if (!s->src_bytes) s->src_bytes = 64;
    if (!s->dst_bytes) s->dst_bytes = 64;
    DNNL_CHECK(ctx, dnnl_memory_create(&s->src_user, xmd, g_engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(ctx, dnnl_memory_create(&s->dst_user, ymd, g_engine, DNNL_MEMORY_NONE));
    if (make_reorder(ctx, xmd, src_md, &s->r_src) || make_reorder(ctx, dst_md, ymd, &s->r_dst)) return fa_ctx_status(ctx);
    for (int b = 0; b < s->n_bin; b++) {
        if (!s->bin_full[b]) continue;
        const dnnl_memory_desc_t *bmd = NULL;
        DNNL_CHECK(ctx, dnnl_memory_get_memory_desc(s->bin_mem[b], &bmd));
        if (own_buffer(ctx, s->bin_mem[b], &s->bin_buf[b])) return fa_ctx_status(ctx);
        DNNL_CHECK(ctx, dnnl_memory_create(&s->bin_user[b], ymd, g_engine, DNNL_MEMORY_NONE));
        if (make_reorder(ctx, ymd, bmd, &s->r_bin[b])) return fa_ctx_status(ctx);
    }
    if (s->has_sum) {
        DNNL_CHECK(ctx, dnnl_memory_create(&s->sum_user, ymd, g_engine, DNNL_MEMORY_NONE));
        if (make_reorder(ctx, ymd, dst_md, &s->r_sum)) return fa_ctx_status(ctx);
    }
    char x_l[32], src_l[32], dst_l[32], y_l[32]; /* the user layouts too: plain NCHW, or a blocked executor's */
    layout_name(xmd, x_l, sizeof x_l);
    layout_name(src_md, src_l, sizeof src_l);
    layout_name(dst_md, dst_l, sizeof dst_l);
    layout_name(ymd, y_l, sizeof y_l);
    snprintf(s->name, sizeof s->name, "dnnl:reorder(%s>%s)%s+convolution%s+reorder(%s>%s)", x_l, src_l,
             s->has_sum ? "+reorder(residual>dst)" : "", epilogue_label(s), dst_l, y_l);
    s->blocked = true;
    return FA_OK;
fail:
    return FA_ERR_RUNTIME;
}

/* ---- convolution tactics: direct or Winograd (fa_conv_tactic) ---- */

fa_conv_tactic fa_conv_tactic_effective(fa_conv_tactic asked)
{
    const char *e = getenv("FA_CONV_TACTIC");
    if (!e) return asked;
    if (!strcmp(e, "direct")) return FA_CONV_TACTIC_DIRECT;
    if (!strcmp(e, "measured")) return FA_CONV_TACTIC_MEASURED;
    if (!strcmp(e, "winograd")) return FA_CONV_TACTIC_WINOGRAD;
    if (!strcmp(e, "reorder")) return FA_CONV_TACTIC_REORDER;
    if (!strcmp(e, "own")) return FA_CONV_TACTIC_OWN;
    return asked;
}

/* One decision per convolution signature per process (FA_CONV_TACTIC_MEASURED): the key
 * (tactic_key: "W ..." Winograd, "R ..." reordered inside) names the threads, shapes, kernel,
 * strides, dilations, pads, layouts and post-ops; the value 1
 * Winograd or reordered inside, 0 direct, TACTIC_VETOED direct because a kernel of the other
 * algorithm failed the applier's verification (fa_dnnl_kernel_veto_tactic), which even
 * FA_CONV_TACTIC_REORDER honours. A full table decides again (a measurement, never a wrong
 * result) — except that a veto is not forgotten for want of room: it overwrites its entry, or
 * slot 0. */
enum { TACTIC_MEMO_CAP = 512, TACTIC_KEY_MAX = 320, TACTIC_VETOED = 2 };
/* A blocked convolution is reordered inside (blocked_reorder_inside) only when that build ran
 * under this share of the direct kernel's time: it was timed alone, warm, where in the model its
 * two extra reorders write and read buffers the model's other kernels have evicted. ResNet-18's
 * stride-2 3x3 convolutions measured 1-5 % faster reordered inside, and the fused model took
 * 1.02-1.21x as long with them in four alternated rounds; ResNet-50's layer4.0.conv2 measured
 * 0.82x (bench/README.md, "Convolutions reordered inside"). */
#define TACTIC_REORDER_MARGIN 0.9
static struct {
    char key[TACTIC_KEY_MAX];
    int winograd; /* 1: Winograd / reordered inside, 0: direct, TACTIC_VETOED */
} g_tactic_memo[TACTIC_MEMO_CAP];
static int g_tactic_memo_n;
static pthread_mutex_t g_tactic_lock = PTHREAD_MUTEX_INITIALIZER;

static int tactic_memo_get(const char *key)
{
    int v = -1;
    pthread_mutex_lock(&g_tactic_lock);
    for (int i = 0; i < g_tactic_memo_n && v < 0; i++)
        if (!strcmp(g_tactic_memo[i].key, key)) v = g_tactic_memo[i].winograd;
    pthread_mutex_unlock(&g_tactic_lock);
    return v;
}

/* key -> value: an existing entry is overwritten; a new one appended while there is room, else
 * (force: a veto) written over slot 0 — a measured decision forgotten is measured again, a veto
 * forgotten could bring back the kernel that failed verification. */
static void tactic_memo_set(const char *key, int winograd, bool force)
{
    pthread_mutex_lock(&g_tactic_lock);
    int at = -1;
    for (int i = 0; i < g_tactic_memo_n && at < 0; i++)
        if (!strcmp(g_tactic_memo[i].key, key)) at = i;
    if (at < 0 && g_tactic_memo_n < TACTIC_MEMO_CAP) at = g_tactic_memo_n++;
    if (at < 0 && force) at = 0;
    if (at >= 0) {
        snprintf(g_tactic_memo[at].key, TACTIC_KEY_MAX, "%s", key);
        g_tactic_memo[at].winograd = winograd;
    }
    pthread_mutex_unlock(&g_tactic_lock);
}

static void tactic_memo_put(const char *key, int winograd)
{
    tactic_memo_set(key, winograd, false);
}

/* The memo's key of a 2-D convolution's tactic (prefix 'W' Winograd, 'R' reordered inside): the
 * threads the executor set before creating its kernels, the input shape, the output's channels
 * and size, the kernel, strides, dilations and pads (oneDNN's descriptors of them), the layouts
 * and the post-op kinds. */
static void tactic_key(char *key, size_t cap, char prefix, const fa_node *n, const dnnl_dims_t xd, const dnnl_dims_t yd,
                       const dnnl_memory_desc_t *wmd, const dnnl_dims_t std_, const dnnl_dims_t dd, const dnnl_dims_t pld,
                       const dnnl_dims_t prd, fa_layout l, fa_layout in0)
{
    const fa_attr *po = fa_node_attr(n, "post_op_kinds");
    snprintf(key, cap, "%c t%d x%lldx%lldx%lldx%lld y%lldx%lldx%lld k%lldx%lld s%lld,%lld d%lld,%lld p%lld,%lld,%lld,%lld "
             "l%d,%d in%d po%d",
             prefix, omp_get_max_threads(), (long long)xd[0], (long long)xd[1], (long long)xd[2], (long long)xd[3],
             (long long)yd[1], (long long)yd[2], (long long)yd[3], (long long)wmd->dims[2], (long long)wmd->dims[3],
             (long long)std_[0], (long long)std_[1], (long long)dd[0], (long long)dd[1], (long long)pld[0], (long long)pld[1],
             (long long)prd[0], (long long)prd[1], (int)l, (int)in0, n->n_inputs, po ? po->n : -1);
    for (int i = 0; po && po->ints && i < po->n && strlen(key) + 24 < cap; i++)
        snprintf(key + strlen(key), cap - strlen(key), ",%lld", (long long)po->ints[i]);
}

/* Buffers of a state's primitive arguments for timing it at creation (zeros: a convolution's
 * time does not depend on its values, and zeros are never denormal). */
typedef struct tactic_bufs {
    void *p[16];
    int n;
} tactic_bufs;

static bool bind_zeros(tactic_bufs *b, dnnl_memory_t m)
{
    const dnnl_memory_desc_t *md = NULL;
    if (!m || dnnl_memory_get_memory_desc(m, &md) != dnnl_success || b->n >= 16) return false;
    size_t sz = dnnl_memory_desc_get_size(md);
    void *p = NULL;
    if (posix_memalign(&p, 64, sz ? sz : 64) != 0) return false;
    memset(p, 0, sz);
    b->p[b->n++] = p;
    return dnnl_memory_set_data_handle(m, p) == dnnl_success;
}

/* Run a created convolution state once on the bound buffers — with its reorders when it keeps
 * blocked activations inside (s->blocked: plain input in, plain output out, as run_prim) — its
 * wall time in ns, or a negative value when oneDNN refused. */
static double tactic_run_once(dnnl_state *s)
{
    dnnl_exec_arg_t args[5 + 8];
    int na = prim_args(s, args);
    dnnl_exec_arg_t rin[2] = {{DNNL_ARG_FROM, s->src_user}, {DNNL_ARG_TO, s->src}};
    dnnl_exec_arg_t rout[2] = {{DNNL_ARG_FROM, s->dst}, {DNNL_ARG_TO, s->dst_user}};
    uint64_t t0 = fa_now_ns();
    if ((s->blocked && dnnl_primitive_execute(s->r_src, g_stream, 2, rin) != dnnl_success) ||
        dnnl_primitive_execute(s->prim, g_stream, na, args) != dnnl_success ||
        (s->blocked && dnnl_primitive_execute(s->r_dst, g_stream, 2, rout) != dnnl_success) ||
        dnnl_stream_wait(g_stream) != dnnl_success)
        return -1;
    return (double)(fa_now_ns() - t0);
}

/* The memories a timing run binds zeros to: src and dst, and their plain views where the state
 * keeps blocked activations inside (s->blocked); bias and binary operands. */
static int tactic_mems(dnnl_state *s, dnnl_memory_t *m)
{
    int n = 0;
    m[n++] = s->src;
    m[n++] = s->dst;
    if (s->blocked) m[n++] = s->src_user;
    if (s->blocked) m[n++] = s->dst_user;
    if (s->bias) m[n++] = s->bias;
    for (int b = 0; b < s->n_bin; b++) m[n++] = s->bin_mem[b];
    return n;
}

/* Whether the first of two builds of one convolution (w: Winograd, or the plain convolution with
 * its reorders inside) ran faster than the second (d: direct, or plain NCHW) on the same shapes,
 * each with the reorders it runs (tactic_run_once): one warm-up run each, then
 * TACTIC_ROUNDS interleaved rounds (the order alternating, as the applier's paired rounds), the
 * medians compared; fewer rounds past TACTIC_BUDGET_NS of measuring. false when either could not
 * run. Zeros in every argument; the handles are unbound again afterwards (the executor binds its
 * own on every run). */
enum { TACTIC_ROUNDS = 7 };
#define TACTIC_BUDGET_NS 200e6
static bool tactic_first_faster(dnnl_state *w, dnnl_state *d, double *w_ns, double *d_ns)
{
    tactic_bufs bw = {0}, bd = {0};
    tactic_bufs *bb[2] = {&bw, &bd};
    dnnl_memory_t mems[2][16]; /* 4 + bias + 8 binary operands at most */
    int nm[2] = {tactic_mems(w, mems[0]), tactic_mems(d, mems[1])};
    bool ok = true;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < nm[k] && ok; i++) ok = bind_zeros(bb[k], mems[k][i]);
    double tw[TACTIC_ROUNDS], td[TACTIC_ROUNDS];
    int n = 0;
    if (ok) ok = tactic_run_once(w) >= 0 && tactic_run_once(d) >= 0; /* warm-up: first touch, caches */
    double spent = 0;
    for (int r = 0; ok && r < TACTIC_ROUNDS && (r < 3 || spent < TACTIC_BUDGET_NS); r++) {
        double a = r % 2 ? tactic_run_once(d) : tactic_run_once(w);
        double b = r % 2 ? tactic_run_once(w) : tactic_run_once(d);
        if (a < 0 || b < 0) {
            ok = false;
            break;
        }
        tw[n] = r % 2 ? b : a;
        td[n] = r % 2 ? a : b;
        spent += a + b;
        n++;
    }
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < nm[k]; i++) dnnl_memory_set_data_handle(mems[k][i], NULL);
        for (int i = 0; i < bb[k]->n; i++) free(bb[k]->p[i]);
    }
    if (!ok || n == 0) return false;
    *w_ns = fa_stats_median(tw, (size_t)n);
    *d_ns = fa_stats_median(td, (size_t)n);
    return *w_ns < *d_ns;
}

/* Two builds of one convolution measured (tactic_first_faster): the faster ends in s, the other's
 * resources released (a's struct itself stays the caller's to free); what_a / what_s name them in
 * the debug log. a is kept only when its median is below margin x s's (1: whichever is faster).
 * Returns whether a was kept. */
static bool keep_faster_by(fa_ctx *ctx, const fa_node *n, dnnl_state *s, dnnl_state *a, const char *what_a, const char *what_s,
                           double margin)
{
    double a_ns = 0, s_ns = 0;
    bool keep_a = tactic_first_faster(a, s, &a_ns, &s_ns) && a_ns < margin * s_ns;
    fa_log(ctx, FA_LOG_DEBUG, "node '%s': %s %.1f us, %s %.1f us: %s kept", n->name, what_a, a_ns / 1e3, what_s, s_ns / 1e3,
           keep_a ? what_a : what_s);
    if (keep_a) {
        state_clear(s);
        *s = *a;
    } else {
        state_clear(a);
    }
    return keep_a;
}

static bool keep_faster(fa_ctx *ctx, const fa_node *n, dnnl_state *s, dnnl_state *a, const char *what_a, const char *what_s)
{
    return keep_faster_by(ctx, n, s, a, what_a, what_s, 1.0);
}

/* A depthwise 2-D convolution the executor keeps in nChw16c (s: oneDNN's direct primitive for it,
 * built): our kernel with the node's epilogue in registers (runtime/cpu/dwconv.h) where it applies
 * — group = input = output channels, no dilation, no residual or binary operand, at most one unary
 * post-op of the kinds it has, an AVX-512F CPU — under FA_CONV_TACTIC_OWN (benchmarks and tests:
 * bench/bench_dwconv). Nothing changes where it does not apply. */
static void own_depthwise(const fa_node *n, dnnl_state *s, const fa_tensor *W, const fa_tensor *B,
                          const dnnl_dims_t xd, const dnnl_dims_t yd, int64_t group, const int64_t *k, const int64_t *st,
                          const int64_t *dil, const int64_t *pl, fa_layout l, fa_layout in0, fa_conv_tactic tactic)
{
    /* opt-in (FA_CONV_TACTIC=own): timed alone it beats oneDNN's on the large-image layers, but in
     * the model no gain showed (bench/README.md "Depthwise": EfficientNet-B0's fused model in
     * alternated runs with it and without, 8.97/6.71/6.94 against 6.71/6.88/6.46 ms), so no default
     * takes it: a layer timed alone, its input hot in the cache of whichever core, is not the layer
     * after a convolution whose threads left its input split their own way */
    if (tactic != FA_CONV_TACTIC_OWN) return;
    if (l != FA_LAYOUT_NCHW16C || in0 != l || !fa_dwconv_available()) return;
    if (group != xd[1] || group != yd[1] || dil[0] != 1 || dil[1] != 1 || s->has_sum || s->n_bin) return;
    if (W->dtype != FA_DTYPE_FLOAT || (B && B->dtype != FA_DTYPE_FLOAT)) return;
    fa_post_op ops[16];
    char why[300];
    int nops = fa_post_ops_of_node(n, ops, 16, why, sizeof why);
    if (nops < 0 || !fa_dwconv_epilogue_ok(ops, nops)) return;
    fa_dwconv_shape sh = {xd[0], xd[1], xd[2], xd[3], yd[2], yd[3], (int)k[0], (int)k[1], (int)st[0], (int)st[1], (int)pl[0], (int)pl[1]};
    if (k[0] > FA_DWCONV_KMAX || k[1] > FA_DWCONV_KMAX || st[0] > INT32_MAX || st[1] > INT32_MAX) return;
    fa_dwconv *d = fa_dwconv_create(&sh, W->data, B ? B->data : NULL, ops, nops);
    if (!d) return; /* out of memory or a shape it does not take: oneDNN's */
    s->dw = d;
    s->swish_after = false;
    snprintf(s->impl, sizeof s->impl, "fa:dwconv_avx512");
    snprintf(s->name, sizeof s->name, "depthwise%s(%s)", nops ? "+post-ops" : "", fa_layout_name(l));
}

/* A batch-1 convolution on one pixel — every spatial dim of X 1, a 1 x ... x 1 kernel, no pads, group
 * 1, float32 — with no epilogue or one unary post-op fa_pixconv applies (no residual, no binary
 * operand): a matrix-vector product of our own (runtime/cpu/pixconv.h) on any layout l, in place
 * of oneDNN's 1x1 convolution, whose setup was most of such a layer's time (MobileNetV3-small's
 * squeeze-excitation layers 2.8-8 us, bench/README.md "One-pixel convolutions"). true when built
 * (s->px; nothing of oneDNN's is). FA_PIXEL_CONV=0 in the environment keeps oneDNN's (the A/B). */
static bool own_pixel(const fa_node *n, dnnl_state *s, const fa_tensor *X, const fa_tensor *W,
                      const fa_tensor *B, const fa_tensor *Y, int64_t group, const int64_t *k, const int64_t *pl,
                      const int64_t *pr, int ns, fa_layout l)
{
    const char *env = getenv("FA_PIXEL_CONV");
    if ((env && !strcmp(env, "0")) || !fa_pixconv_available()) return false;
    if (group != 1 || X->dtype != FA_DTYPE_FLOAT || Y->dtype != FA_DTYPE_FLOAT || W->dtype != FA_DTYPE_FLOAT ||
        (B && B->dtype != FA_DTYPE_FLOAT) || X->dims[0] != 1 || Y->dims[0] != 1)
        return false;
    for (int i = 0; i < ns; i++)
        if (X->dims[2 + i] != 1 || Y->dims[2 + i] != 1 || k[i] != 1 || pl[i] != 0 || pr[i] != 0) return false;
    int64_t cin = X->dims[1], cout = Y->dims[1];
    if (W->dims[0] != cout || W->dims[1] != cin || (B && fa_tensor_numel(B) != cout)) return false;
    fa_post_op ops[16];
    char why[300];
    int nops = 0;
    if (!strcmp(n->domain, FA_FUSED_DOMAIN)) {
        nops = fa_post_ops_of_node(n, ops, 16, why, sizeof why);
        if (nops < 0 || !fa_pixconv_epilogue_ok(ops, nops)) return false;
        if (n->n_inputs > 3) return false; /* an operand beyond X, W, B: not this kernel's */
    }
    int64_t blk = fa_layout_channel_block(l), padded = (cout + blk - 1) / blk * blk;
    fa_pixconv *p = fa_pixconv_create(cin, cout, padded, ops, nops);
    if (!p) return false;
    s->px = p;
    s->px_bias = B != NULL;
    snprintf(s->impl, sizeof s->impl, "fa:pixconv_avx512");
    snprintf(s->name, sizeof s->name, "pixel-conv%s(%s)", nops ? "+post-ops" : "", fa_layout_name(l));
    return true;
}

/* What a blocked executor's convolution built in s reads in full shape that the executor does not
 * keep in its layout (fa_layout_input_follows: a constant), named; NULL when nothing: its
 * full-shape binary operands and its residual must be activations in the layout. */
static const char *operand_off_layout(const fa_graph *g, const fa_node *n, const dnnl_state *s)
{
    for (int b = 0; b < s->n_bin; b++)
        if (s->bin_full[b] && !fa_layout_input_follows(g, n, s->bin_input[b])) return "a full-shape constant post-op operand";
    if (s->has_sum && !fa_layout_input_follows(g, n, s->sum_input)) return "a constant residual";
    return NULL;
}

/* A Conv / FusedConv reading its input 0 and writing its output in the executor's blocked layout
 * (descriptors xb, yb), no reorder inside: full-shape post-op operands are read in that layout too
 * (the residual through the sum post-op, copied into dst first: the same layout, so the "reorder"
 * is a copy). Declines (FA_ERR_UNSUPPORTED) when such an operand is not an activation the executor
 * keeps in the layout (fa_layout_input_follows) or when oneDNN's choice on the layout is its gemm
 * or reference convolution (not worth the layout). */
static fa_status blocked_conv(fa_ctx *ctx, const fa_graph *g, const fa_node *n, dnnl_state *s, const dnnl_convolution_desc_t *cd,
                              const dnnl_memory_desc_t *wmd, const fa_tensor *W, const fa_tensor *Y, const dnnl_memory_desc_t *yb,
                              fa_layout l, fa_layout in0)
{
    dnnl_primitive_attr_t attr = NULL;
    fa_status fs = build_post_ops(ctx, g, n, Y, s, yb, &attr);
    const char *stray = fs ? NULL : operand_off_layout(g, n, s);
    if (stray) fs = fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "node '%s': %s", n->name, stray);
    if (!fs) fs = finish_prim(ctx, s, cd, wmd, W, attr);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (fs) return fs;
    if (!strncmp(s->impl, "gemm", 4) || !strncmp(s->impl, "ref", 3))
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "node '%s': oneDNN picks %s on %s", n->name, s->impl, fa_layout_name(l));
    const dnnl_memory_desc_t *dst_md = NULL;
    DNNL_CHECK(ctx, dnnl_memory_get_memory_desc(s->dst, &dst_md));
    if (!dnnl_memory_desc_equal(dst_md, yb))
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "node '%s': oneDNN changed the dst layout", n->name);
    if (s->has_sum) {
        DNNL_CHECK(ctx, dnnl_memory_create(&s->sum_user, yb, g_engine, DNNL_MEMORY_NONE));
        if (make_reorder(ctx, yb, dst_md, &s->r_sum)) return fa_ctx_status(ctx);
    }
    snprintf(s->name, sizeof s->name, "dnnl:convolution%s%s(%s%s%s)", s->has_sum ? "+sum" : "", epilogue_label(s),
             in0 == FA_LAYOUT_PLAIN ? "nchw>" : "", fa_layout_name(l), strstr(s->impl, "wino") ? ", winograd" : "");
    s->kind = 0;
    return FA_OK;
fail:
    return FA_ERR_RUNTIME;
}

/* A Conv / FusedConv on plain NCHW input and output with the activations kept inside in the
 * layout oneDNN prefers for it (format_tag_any: nChw8c/nChw16c for its jit convolution, nhwc for
 * its brgemm one) and reordered in and out by oneDNN reorders (blocked_io). A probe without
 * post-ops names the layout, so that full-shape binary operands (the residual add) are declared
 * in it too. *built false (FA_OK) when oneDNN's preferred layout is plain NCHW itself; an error
 * when it declined (s then holds a partial build for state_clear). */
static fa_status conv_reorder_inside(fa_ctx *ctx, const fa_graph *g, const fa_node *n, dnnl_state *s, int r,
                                     const dnnl_dims_t xd, const dnnl_dims_t yd, const dnnl_memory_desc_t *xmd,
                                     const dnnl_memory_desc_t *ymd, const dnnl_memory_desc_t *wmd,
                                     const dnnl_memory_desc_t *wany, const dnnl_memory_desc_t *bptr, const dnnl_dims_t std_,
                                     const dnnl_dims_t dd, const dnnl_dims_t pld, const dnnl_dims_t prd, const fa_tensor *W,
                                     const fa_tensor *Y, bool *built)
{
    *built = false;
    dnnl_memory_desc_t xany, yany, want_dst;
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t probe = NULL;
    bool blocked = false;
    if (dnnl_memory_desc_init_by_tag(&xany, r, xd, dnnl_f32, dnnl_format_tag_any) == dnnl_success &&
        dnnl_memory_desc_init_by_tag(&yany, r, yd, dnnl_f32, dnnl_format_tag_any) == dnnl_success &&
        dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &xany, wany, bptr,
                                                   &yany, std_, dd, pld, prd) == dnnl_success &&
        dnnl_primitive_desc_create(&probe, &cd, NULL, g_engine, NULL) == dnnl_success) {
        want_dst = *dnnl_primitive_desc_query_md(probe, dnnl_query_dst_md, 0);
        blocked = !dnnl_memory_desc_equal(&want_dst, ymd) ||
                  !dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(probe, dnnl_query_src_md, 0), xmd);
    }
    if (probe) dnnl_primitive_desc_destroy(probe);
    if (!blocked) return FA_OK;
    dnnl_primitive_attr_t attr = NULL;
    fa_status fs = build_post_ops(ctx, g, n, Y, s, &want_dst, &attr);
    if (!fs) fs = finish_prim(ctx, s, &cd, wmd, W, attr);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!fs) fs = blocked_io(ctx, s, xmd, ymd, &want_dst);
    if (fs) return fs;
    s->kind = 0;
    *built = true;
    return FA_OK;
}

/* A convolution of a blocked executor (input 0 in layout in0, output in l: descriptors xb, yb; s
 * holds oneDNN's direct kernel on them, built): the same convolution with its activations
 * reordered inside, from xb and back to yb, to the layout oneDNN prefers for it (format_tag_any:
 * its brgemm convolution on nhwc where AVX-512 has it), as conv_reorder_inside does for a plain
 * executor. Why it exists: oneDNN 2.6's direct kernel on nChw16c ran ResNet-50's stride-2 3x3
 * convolutions far from the machine's peak (layer4.0.conv2, 256 channels 14x14 -> 7x7: 1.20 ms in
 * the fused model, 175 GFLOP/s) where the reordered build took 0.79-0.85 ms.
 * Under FA_CONV_TACTIC_REORDER it replaces the direct kernel wherever it is built. Under
 * FA_CONV_TACTIC_MEASURED both are timed on the convolution's own shapes and post-ops
 * (keep_faster), once per signature per process (the tactic memo, key "R ..."), and the faster
 * kept; a reordered-inside kernel kept so carries its key (s->tactic_key), so that the applier can
 * veto it when a cluster using it fails verification (fa_dnnl_kernel_veto_tactic): on
 * light_resnet50 the brgemm kernel's summation order on BN-folded weights put one element of a
 * stride-2 conv+bn 1.05x past the probabilistic verification bound (applier/bound.c: 52.6 on
 * 1.06e6, a 2308-deep reduction) where the direct kernel's stays within it; the applier then
 * rebuilds that cluster with the direct kernel and verifies it again (docs/runtime.md
 * "Convolution tactics"). Declines (s unchanged) where oneDNN prefers the executor's own layout,
 * where a full-shape operand or the residual is not an activation the executor keeps in l (as
 * blocked_conv), and for grouped convolutions. */
static fa_status blocked_reorder_inside(fa_ctx *ctx, const fa_graph *g, const fa_node *n, dnnl_state *s, int r,
                                        const dnnl_dims_t xd, const dnnl_dims_t yd, const dnnl_memory_desc_t *xb,
                                        const dnnl_memory_desc_t *yb, const dnnl_memory_desc_t *wmd,
                                        const dnnl_memory_desc_t *wany, const dnnl_memory_desc_t *bptr,
                                        const dnnl_dims_t std_, const dnnl_dims_t dd, const dnnl_dims_t pld,
                                        const dnnl_dims_t prd, const fa_tensor *W, const fa_tensor *Y, int64_t group,
                                        fa_layout l, fa_layout in0, fa_conv_tactic tactic)
{
    if ((tactic != FA_CONV_TACTIC_REORDER && tactic != FA_CONV_TACTIC_MEASURED) || r != 4 || group != 1) return FA_OK;
    char key[TACTIC_KEY_MAX];
    tactic_key(key, sizeof key, 'R', n, xd, yd, wmd, std_, dd, pld, prd, l, in0);
    int memo = tactic_memo_get(key);
    if (memo == TACTIC_VETOED || (memo == 0 && tactic == FA_CONV_TACTIC_MEASURED)) return FA_OK; /* direct */
    if (tactic == FA_CONV_TACTIC_REORDER) memo = 1; /* asked for: built without a measurement */
    dnnl_state *a = calloc(1, sizeof *a);
    if (!a) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    bool built = false;
    fa_status fs = conv_reorder_inside(ctx, g, n, a, r, xd, yd, xb, yb, wmd, wany, bptr, std_, dd, pld, prd, W, Y, &built);
    if (fs || !built || operand_off_layout(g, n, a)) { /* declined: direct stays */
        state_clear(a);
        free(a);
        if (fs == FA_ERR_NOMEM) return fs;
        fa_ctx_clear(ctx);
        if (memo < 0) tactic_memo_put(key, 0);
        return FA_OK;
    }
    a->tactic_key = strdup(key);
    if (!a->tactic_key) {
        state_clear(a);
        free(a);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    if (memo < 0) { /* measured: the faster of the two kept, decided once */
        bool keep = keep_faster_by(ctx, n, s, a, "reordered inside", "direct", TACTIC_REORDER_MARGIN);
        tactic_memo_put(key, keep);
        free(a);
        return FA_OK;
    }
    state_clear(s);
    *s = *a; /* named by blocked_io from xb and yb */
    free(a);
    return FA_OK;
}

static fa_status create_conv(fa_ctx *ctx, const fa_graph *g, const fa_node *n, dnnl_state *s, bool *handled, bool transposed,
                             fa_layout l, fa_layout in0, fa_conv_tactic tactic)
{
    const fa_tensor *X = fa_graph_in(g, n, 0), *W = fa_graph_in(g, n, 1), *B = fa_graph_in(g, n, 2),
                    *Y = fa_graph_out(g, n, 0);
    dnnl_state *alt = NULL; /* the reorder-inside build an unfused plain convolution is measured against */
    if (!W || !(W->flags & FA_TENSOR_CONST) || !W->data) return FA_OK; /* weights must be constant */
    if (B && (!(B->flags & FA_TENSOR_CONST) || !B->data)) return FA_OK;
    int r = X->rank, ns = r - 2;
    if (ns < 1 || ns > 3) return FA_OK;
    bool fused = !strcmp(n->domain, FA_FUSED_DOMAIN);
    int64_t group = fa_node_attr_int(n, "group", 1);
    int64_t k[3], st[3], dil[3], pl[3], pr[3], in_sp[3], out_sp[3];
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
    if (transposed) {
        /* output_padding / output_shape handled by the reference kernel */
        if (fa_node_attr(n, "output_padding") || fa_node_attr(n, "output_shape")) return FA_OK;
    }
    conv_pads(n, ns, in_sp, out_sp, k, st, dil, pl, pr, transposed);
    for (int i = 0; i < ns; i++) if (pl[i] < 0 || pr[i] < 0) return FA_OK;
    if (!transposed && own_pixel(n, s, X, W, B, Y, group, k, pl, pr, ns, l)) {
        *handled = true;
        return FA_OK;
    }
    dnnl_dims_t xd, yd, wd, bd, dd, std_, pld, prd;
    for (int i = 0; i < r; i++) { xd[i] = X->dims[i]; yd[i] = Y->dims[i]; }
    int64_t cout = Y->dims[1], cin = X->dims[1];
    int wr;
    if (group == 1) {
        wr = r;
        for (int i = 0; i < r; i++) wd[i] = W->dims[i];
        if (transposed) { wd[0] = W->dims[1]; wd[1] = W->dims[0]; } /* oneDNN deconv weights are [O, I, k] */
    } else {
        wr = r + 1;
        wd[0] = group;
        wd[1] = cout / group;
        wd[2] = cin / group;
        for (int i = 0; i < ns; i++) wd[3 + i] = k[i];
    }
    for (int i = 0; i < ns; i++) { std_[i] = st[i]; dd[i] = dil[i] - 1; pld[i] = pl[i]; prd[i] = pr[i]; }
    dnnl_memory_desc_t xmd, ymd, wmd, wany, bmd, *bptr = NULL;
    dnnl_format_tag_t act_tag = r == 3 ? dnnl_abc : r == 4 ? dnnl_abcd : dnnl_abcde;
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&xmd, r, xd, dnnl_f32, act_tag));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&ymd, r, yd, dnnl_f32, act_tag));
    /* user weights, plain ONNX layout expressed with strides */
    dnnl_dims_t wstr;
    if (!transposed) {
        plain_strides(wr, wd, wstr);
    } else {
        /* ONNX ConvTranspose W: [C_in, C_out/group, k...]; oneDNN wants [g, O/g, I/g, k]. */
        int64_t ksz = 1;
        for (int i = 0; i < ns; i++) ksz *= k[i];
        int64_t opg = W->dims[1], ipg = cin / group;
        if (group == 1) {
            /* wd = [O, I, k..]: O stride ksz, I stride O*ksz */
            wstr[0] = ksz;
            wstr[1] = opg * ksz;
            int64_t s2 = 1;
            for (int i = ns - 1; i >= 0; i--) { wstr[2 + i] = s2; s2 *= k[i]; }
        } else {
            wstr[0] = ipg * opg * ksz;
            wstr[1] = ksz;
            wstr[2] = opg * ksz;
            int64_t s2 = 1;
            for (int i = ns - 1; i >= 0; i--) { wstr[3 + i] = s2; s2 *= k[i]; }
        }
    }
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&wmd, wr, wd, dnnl_f32, wstr));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&wany, wr, wd, dnnl_f32, dnnl_format_tag_any));
    if (B) {
        bd[0] = cout;
        DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_a));
        bptr = &bmd;
    }
    if (l != FA_LAYOUT_PLAIN) { /* the fused plan's executor keeps the blocked layout: no reorder inside */
        dnnl_memory_desc_t xb, yb;
        dnnl_convolution_desc_t cd;
        if (transposed) return FA_OK;
        DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&xb, r, xd, dnnl_f32, fa_dnnl_layout_tag(in0, r)));
        DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&yb, r, yd, dnnl_f32, fa_dnnl_layout_tag(l, r)));
        /* Winograd where the tactic allows it and oneDNN has it for this convolution on l with
         * these post-ops (fa_conv_tactic); direct otherwise, or where measured slower */
        bool wino = tactic != FA_CONV_TACTIC_DIRECT && ns == 2 && group == 1 && k[0] == 3 && k[1] == 3 && st[0] == 1 &&
                    st[1] == 1 && dil[0] == 1 && dil[1] == 1;
        char key[TACTIC_KEY_MAX] = "";
        int memo = -1;
        if (wino) { /* the signature: measured once, or vetoed (fa_dnnl_kernel_veto_tactic) */
            tactic_key(key, sizeof key, 'W', n, xd, yd, &wmd, std_, dd, pld, prd, l, in0);
            memo = tactic_memo_get(key);
            wino = memo != TACTIC_VETOED && (memo != 0 || tactic != FA_CONV_TACTIC_MEASURED);
            if (tactic != FA_CONV_TACTIC_MEASURED && memo != TACTIC_VETOED) memo = 1; /* asked for: no measurement */
        }
        if (wino) {
            fa_status ws = FA_OK;
            if (dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_winograd, &xb, &wany,
                                                           bptr, &yb, std_, dd, pld, prd) != dnnl_success)
                ws = FA_ERR_UNSUPPORTED;
            if (!ws) ws = blocked_conv(ctx, g, n, s, &cd, &wmd, W, Y, &yb, l, in0);
            if (!ws && !strstr(s->impl, "wino")) ws = FA_ERR_UNSUPPORTED; /* not what was asked for */
            if (ws == FA_ERR_NOMEM) return ws;
            if (ws) { /* no Winograd here: direct, decided once */
                fa_ctx_clear(ctx);
                state_clear(s);
                wino = false;
                if (key[0] && tactic == FA_CONV_TACTIC_MEASURED) tactic_memo_put(key, 0);
            }
            if (wino && !(s->tactic_key = strdup(key))) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        }
        if (wino && memo < 0) { /* measured: direct beside it, both timed, the faster kept */
            dnnl_state *d = calloc(1, sizeof *d);
            if (!d) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            bool keep_wino = true;
            if (dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &xb, &wany,
                                                           bptr, &yb, std_, dd, pld, prd) == dnnl_success &&
                !blocked_conv(ctx, g, n, d, &cd, &wmd, W, Y, &yb, l, in0))
                keep_wino = !keep_faster(ctx, n, s, d, "direct", "winograd");
            else
                state_clear(d);
            free(d);
            fa_ctx_clear(ctx); /* a direct kernel that could not be built leaves Winograd */
            tactic_memo_put(key, keep_wino);
        }
        if (wino) {
            *handled = true;
            return FA_OK;
        }
        DNNL_CHECK(ctx, dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &xb, &wany,
                                                                   bptr, &yb, std_, dd, pld, prd));
        if (blocked_conv(ctx, g, n, s, &cd, &wmd, W, Y, &yb, l, in0)) goto fail;
        fa_status rs = blocked_reorder_inside(ctx, g, n, s, r, xd, yd, &xb, &yb, &wmd, &wany, bptr, std_, dd, pld, prd, W, Y,
                                              group, l, in0, tactic);
        if (rs) return rs;
        if (ns == 2) own_depthwise(n, s, W, B, xd, yd, group, k, st, dil, pl, l, in0, tactic);
        *handled = true;
        return FA_OK;
    }
    if (!transposed && fused) {
        /* The fused plan's convolution on the activation layout oneDNN prefers (format_tag_any):
         * on plain NCHW oneDNN 2.6 picks its gemm convolution, whose post-ops are slow; on
         * nChw8c/nChw16c its jit convolution, on nhwc its brgemm one. */
        bool built = false;
        fa_status fs = conv_reorder_inside(ctx, g, n, s, r, xd, yd, &xmd, &ymd, &wmd, &wany, bptr, std_, dd, pld, prd, W, Y,
                                           &built);
        if (fs == FA_ERR_NOMEM) return fs;
        if (!fs && built) {
            *handled = true;
            return FA_OK;
        }
        if (fs) {
            fa_log(ctx, FA_LOG_DEBUG, "node '%s': blocked activations declined (%s); plain NCHW", n->name, fa_ctx_errmsg(ctx));
            fa_ctx_clear(ctx);
            state_clear(s); /* and build the plain kernel below */
        }
    }
    /* An unfused convolution of a plain executor (the baseline, the clusters' unfused sub-graphs)
     * under FA_CONV_TACTIC_MEASURED: oneDNN's kernel on plain NCHW (its gemm convolution, below)
     * or the same convolution with its input reordered into the layout oneDNN prefers and its
     * output back (reorder-inside), both timed on the convolution's own shapes and the faster
     * kept, decided once per signature per process. Neither is always faster: reorder-inside ran
     * ResNet-18's unfused model in 21.5-21.9 ms against 24-31 ms, while MobileNetV2's 1x1 and
     * depthwise convolutions were slower with it (bench/README.md, "Convolution tactics"). */
    char pkey[TACTIC_KEY_MAX] = "";
    int pmemo = -1;
    if (!transposed && !fused && tactic == FA_CONV_TACTIC_REORDER) pmemo = 1; /* forced: no key */
    if (!transposed && !fused && tactic == FA_CONV_TACTIC_MEASURED) {
        /* 1-D, 2-D and 3-D alike: oneDNN 2.6 runs a plain NCDHW 3x3x3 convolution (R3D-18) as its
         * gemm convolution, and its jit one on nCdhw16c */
        int64_t ysp = 1;
        for (int i = 0; i < ns; i++) ysp *= yd[2 + i];
        int o = snprintf(pkey, sizeof pkey, "plain t%d r%d x", omp_get_max_threads(), r);
        for (int i = 0; i < r && o > 0 && (size_t)o < sizeof pkey; i++)
            o += snprintf(pkey + o, sizeof pkey - (size_t)o, "%s%lld", i ? "x" : "", (long long)xd[i]);
        for (int i = 0; i < ns && o > 0 && (size_t)o < sizeof pkey; i++)
            o += snprintf(pkey + o, sizeof pkey - (size_t)o, " a%d:k%lld,s%lld,d%lld,p%lld,%lld", i, (long long)k[i],
                          (long long)st[i], (long long)dil[i], (long long)pl[i], (long long)pr[i]);
        if (o > 0 && (size_t)o < sizeof pkey)
            o += snprintf(pkey + o, sizeof pkey - (size_t)o, " w%lldx%lld g%lld b%d", (long long)cout, (long long)ysp,
                          (long long)group, B != NULL);
        if (o <= 0 || (size_t)o >= sizeof pkey) pkey[0] = 0; /* no key: the plain kernel, unmeasured */
        else pmemo = tactic_memo_get(pkey);
    }
    /* reorder-inside built: to compare with the plain kernel below (not measured yet), or kept
     * (decided before, or forced) */
    if (pmemo == 1 || (pmemo == -1 && pkey[0])) {
        alt = calloc(1, sizeof *alt);
        if (!alt) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        bool built = false;
        fa_status fs = conv_reorder_inside(ctx, g, n, alt, r, xd, yd, &xmd, &ymd, &wmd, &wany, bptr, std_, dd, pld, prd, W,
                                           Y, &built);
        if (fs == FA_ERR_NOMEM) {
            state_clear(alt);
            free(alt);
            return fs;
        }
        fa_ctx_clear(ctx);
        if (fs || !built) { /* oneDNN prefers plain NCHW here, or declined: plain, decided once */
            state_clear(alt);
            free(alt);
            alt = NULL;
            if (pkey[0]) tactic_memo_put(pkey, 0);
        } else if (pmemo == 1) { /* decided before: reorder-inside */
            state_clear(s);
            *s = *alt;
            free(alt);
            s->kind = 0;
            *handled = true;
            return FA_OK;
        }
    }
    if (!transposed) {
        dnnl_convolution_desc_t cd;
        DNNL_CHECK(ctx, dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct,
                                                                   &xmd, &wany, bptr, &ymd, std_, dd, pld, prd));
        dnnl_primitive_attr_t attr = NULL;
        fa_status fs = build_post_ops(ctx, g, n, Y, s, NULL, &attr);
        if (!fs) fs = finish_prim(ctx, s, &cd, &wmd, W, attr);
        if (attr) dnnl_primitive_attr_destroy(attr);
        if (fs && alt) { /* no plain kernel: reorder-inside, not a reference kernel */
            fa_ctx_clear(ctx);
            state_clear(s);
            *s = *alt;
            free(alt);
            alt = NULL;
            fs = FA_OK;
        } else if (!fs && alt) { /* measured: the faster kept */
            bool keep_alt = keep_faster(ctx, n, s, alt, "reorder-inside", "plain");
            free(alt);
            alt = NULL;
            tactic_memo_put(pkey, keep_alt);
        }
        if (fs) goto fail;
        s->kind = 0;
    } else {
        dnnl_deconvolution_desc_t cd;
        DNNL_CHECK(ctx, dnnl_dilated_deconvolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_deconvolution_direct,
                                                                     &xmd, &wany, bptr, &ymd, std_, dd, pld, prd));
        dnnl_primitive_attr_t attr = NULL;
        if (build_post_ops(ctx, g, n, Y, s, NULL, &attr)) return fa_ctx_status(ctx);
        fa_status fs = finish_prim(ctx, s, &cd, &wmd, W, attr);
        if (attr) dnnl_primitive_attr_destroy(attr);
        if (fs) goto fail;
        s->kind = 1;
    }
    *handled = true;
    return FA_OK;
fail:
    if (alt) {
        state_clear(alt);
        free(alt);
    }
    if (!strcmp(n->domain, FA_FUSED_DOMAIN)) /* a fused node has no reference kernel to fall back to */
        return fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_RUNTIME;
    fa_log(ctx, FA_LOG_DEBUG, "node '%s': oneDNN declined (%s); using reference kernel", n->name, fa_ctx_errmsg(ctx));
    fa_ctx_clear(ctx);
    return FA_OK;
}

/* The shape a Gemm/MatMul primitive computes (rank r, dims) as a tensor for the post-ops: Yv
 * itself when it has that shape; else Yv is a view of it (the same number of elements, the same
 * last dimension: a fused node whose epilogue crossed a view-only reshape, or a MatMul computed as
 * one 2-D product) and the computed shape is returned in *tmp. NULL with an error otherwise. */
static const fa_tensor *computed_shape(fa_ctx *ctx, const fa_node *n, const fa_tensor *Yv, int r, const int64_t *dims,
                                       fa_tensor *tmp)
{
    bool same = Yv->rank == r;
    int64_t numel = 1;
    for (int i = 0; i < r; i++) {
        same = same && Yv->dims[i] == dims[i];
        numel *= dims[i];
    }
    if (same) return Yv;
    if (Yv->rank < 1 || fa_tensor_numel(Yv) != numel || Yv->dims[Yv->rank - 1] != dims[r - 1]) {
        fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "node '%s': output '%s' is neither the product's shape nor a view of it keeping "
                     "its last dimension", n->name, Yv->name);
        return NULL;
    }
    *tmp = *Yv;
    tmp->rank = r;
    for (int i = 0; i < r; i++) tmp->dims[i] = dims[i];
    return tmp;
}

/* Whether every binary post-op operand of node n (none for an unfused MatMul) reads the same on
 * the product computed as one [rows, N] matrix: the output's full shape (the same element order),
 * one value per column (numel N, every dim but the last 1) or a scalar. An operand varying along
 * a batch dim only ([B, 1, N] on [B, S, N]) does not: the product then keeps its batch dims. */
static bool rows_operands(const fa_graph *g, const fa_node *n, int64_t N)
{
    fa_post_op ops[16];
    char why[300];
    int nops = fa_post_ops_of_node(n, ops, 16, why, sizeof why);
    if (nops < 0) return false;
    const fa_tensor *Y = fa_graph_out(g, n, 0);
    for (int i = 0; i < nops; i++) {
        if (!fa_post_op_is_binary(ops[i].kind)) continue;
        const fa_tensor *O = fa_graph_in(g, n, ops[i].operand);
        if (!O || O->rank < 0) return false;
        int64_t on = fa_tensor_numel(O);
        bool per_col = O->rank >= 1 && O->dims[O->rank - 1] == N && on == N;
        if (!(on == 1 || per_col || on == fa_tensor_numel(Y))) return false;
    }
    return true;
}

/* A fused MatMul's operand k (0: A, 1: B) as the node reads it from its input k (applier/
 * fused_graph.c fold_operands): `a_shape` / `a_strides` (`b_...`), the operand's shape and its
 * element strides in the input's buffer, when the advisor folded a view (a Transpose) into the
 * product; otherwise the input's own shape, row-major. False (with an error) when the attributes
 * are malformed: ranks that differ, a stride reaching past the input's elements. */
static bool matmul_operand(fa_ctx *ctx, const fa_node *n, int k, const fa_tensor *T, int *rank, int64_t *dims, int64_t *strides,
                           bool *strided)
{
    const int64_t *sh = NULL, *st = NULL;
    int ns = fa_node_attr_ints(n, k ? "b_shape" : "a_shape", &sh), nt = fa_node_attr_ints(n, k ? "b_strides" : "a_strides", &st);
    *strided = ns > 0 || nt > 0;
    if (!*strided) {
        *rank = T->rank;
        int64_t m = 1;
        for (int i = T->rank - 1; i >= 0; i--) {
            dims[i] = T->dims[i];
            strides[i] = m;
            m *= T->dims[i];
        }
        return true;
    }
    int64_t last = 0, step;
    bool ok = ns == nt && ns >= 2 && ns <= 12;
    for (int i = 0; ok && i < ns; i++) /* the attributes may come from a model file: checked arithmetic */
        ok = sh[i] >= 1 && st[i] >= 0 && !__builtin_mul_overflow(sh[i] - 1, st[i], &step) &&
             !__builtin_add_overflow(last, step, &last);
    if (!ok || last >= fa_tensor_numel(T)) {
        fa_ctx_error(ctx, FA_ERR_INPUT, "node '%s': %s_shape / %s_strides do not describe a view of input %d", n->name,
                     k ? "b" : "a", k ? "b" : "a", k);
        return false;
    }
    *rank = ns;
    memcpy(dims, sh, sizeof(int64_t) * (size_t)ns);
    memcpy(strides, st, sizeof(int64_t) * (size_t)ns);
    return true;
}

/* A fused MatMul whose first post-op adds a constant float32 per-column vector (every dim 1 but
 * the last, which is the product's N: a Linear layer's bias): that operand's node input index,
 * given to oneDNN as the product's own bias (its brgemm kernel adds it in the tile's epilogue, as
 * ONNX Runtime's MLAS and oneDNN's own examples do) instead of a binary post-op broadcast per
 * column — which cost oneDNN 2.6 more than the separate Add it replaced on ViT-B/16's
 * projections (197 x 768 x 2304: the fused product 1424.5 us against 1415.5 us for the product
 * and the Add, bench/README.md "MatMul bias"). 0 when the node has no such first post-op. */
static int matmul_bias_operand(const fa_graph *g, const fa_node *n, int64_t N)
{
    const char *env = getenv("FA_MATMUL_BIAS_POST_OP"); /* 1: the binary post-op, for the A/B */
    if (strcmp(n->domain, FA_FUSED_DOMAIN) || (env && strcmp(env, "0"))) return 0;
    fa_post_op ops[16];
    char why[200];
    int nops = fa_post_ops_of_node(n, ops, 16, why, sizeof why);
    if (nops < 1 || ops[0].kind != FA_POST_OP_ADD) return 0;
    const fa_tensor *B = fa_graph_in(g, n, ops[0].operand);
    if (!B || B->dtype != FA_DTYPE_FLOAT || !(B->flags & FA_TENSOR_CONST) || !B->data || B->rank < 1 ||
        B->dims[B->rank - 1] != N)
        return 0;
    for (int d = 0; d < B->rank - 1; d++)
        if (B->dims[d] != 1) return 0;
    return ops[0].operand;
}

static fa_status create_matmul(fa_ctx *ctx, const fa_graph *g, const fa_node *n, dnnl_state *s, bool *handled)
{
    const fa_tensor *A = fa_graph_in(g, n, 0), *B = fa_graph_in(g, n, 1), *Yv = fa_graph_out(g, n, 0);
    int arank, brank;
    int64_t adims[12], astr[12], bdims[12], bstr0[12];
    bool a_strided, b_strided;
    if (A->rank > 12 || B->rank > 12) return FA_OK;
    if (!matmul_operand(ctx, n, 0, A, &arank, adims, astr, &a_strided) || !matmul_operand(ctx, n, 1, B, &brank, bdims, bstr0, &b_strided))
        goto fail;
    if (arank < 2 || brank < 2) return FA_OK; /* 1-D operands: reference kernel */
    /* the product's own shape (broadcast batch dims, M, N); a fused node's output may be a view
     * of it keeping N (computed_shape) */
    int r = arank > brank ? arank : brank;
    dnnl_dims_t ad, bd, yd, as, bs;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - arank), ib = i - (r - brank);
        ad[i] = ia >= 0 ? adims[ia] : 1;
        bd[i] = ib >= 0 ? bdims[ib] : 1;
        as[i] = ia >= 0 ? astr[ia] : 0;
        bs[i] = ib >= 0 ? bstr0[ib] : 0;
        yd[i] = i < r - 2 ? (ad[i] > bd[i] ? ad[i] : bd[i]) : i == r - 2 ? ad[i] : bd[i];
    }
    /* a broadcast (size-1) dim's stride is immaterial: oneDNN wants one it accepts for a dense
     * layout, the product of the strides and dims inside it */
    for (int i = r - 1; i >= 0; i--) {
        if (ad[i] == 1 || as[i] == 0) as[i] = i == r - 1 ? 1 : as[i + 1] * ad[i + 1] > 0 ? as[i + 1] * ad[i + 1] : 1;
        if (bd[i] == 1 || bs[i] == 0) bs[i] = i == r - 1 ? 1 : bs[i + 1] * bd[i + 1] > 0 ? bs[i + 1] * bd[i + 1] : 1;
    }
    float alpha = fa_node_attr_float(n, "alpha", 1.0f);
    if (!a_strided && !b_strided && B->rank == 2 && r > 2 && (B->flags & FA_TENSOR_CONST) && rows_operands(g, n, yd[r - 1])) {
        /* A [..., M, K] x B [K, N]: one [prod(...)*M, K] x [K, N] product (the same bytes), so
         * oneDNN's brgemm gets 2-D weights it can keep pre-blocked (format_tag_any); with a
         * batch dim it keeps them plain and repacks them on every call (3x slower, BERT's
         * 768x3072 FFN weights, oneDNN 2.6). A fused node too, when each binary post-op operand
         * reads the same on the [rows, N] product (rows_operands): before, fused nodes kept the
         * batch dim, and BERT's MatMul + bias + GELU ran on plain weights, 1.6x slower than the
         * unfused pair whose MatMul had them packed (issue 33). */
        int64_t rows = 1;
        for (int i = 0; i < r - 1; i++) rows *= ad[i];
        ad[0] = rows, ad[1] = ad[r - 1];
        bd[0] = bd[r - 2], bd[1] = bd[r - 1];
        yd[0] = rows, yd[1] = yd[r - 1];
        r = 2;
        plain_strides(r, ad, as);
        plain_strides(r, bd, bs);
    }
    fa_tensor Yc;
    const fa_tensor *Y = computed_shape(ctx, n, Yv, r, yd, &Yc);
    if (!Y) goto fail;
    dnnl_memory_desc_t amd, bmd, bany, ymd;
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&amd, r, ad, dnnl_f32, as));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&bmd, r, bd, dnnl_f32, bs));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&ymd, r, yd, dnnl_f32, NULL));
    bool bconst = (B->flags & FA_TENSOR_CONST) && B->data;
    if (bconst) DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&bany, r, bd, dnnl_f32, dnnl_format_tag_any));
    dnnl_matmul_desc_t md;
    dnnl_memory_desc_t cmd;
    /* not with a folded scale: oneDNN's output scale multiplies the bias too (dst = scale · (A·B +
     * bias)), where the node adds it after the scaled product */
    int bias_in = r <= 4 && alpha == 1.0f ? matmul_bias_operand(g, n, yd[r - 1]) : 0;
    if (bias_in > 0) { /* [1, ..., 1, N]: the product's bias */
        dnnl_dims_t cd;
        for (int i = 0; i < r; i++) cd[i] = i == r - 1 ? yd[r - 1] : 1;
        DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&cmd, r, cd, dnnl_f32, r == 2 ? dnnl_ab : r == 3 ? dnnl_abc : dnnl_abcd));
    }
    DNNL_CHECK(ctx, dnnl_matmul_desc_init(&md, &amd, bconst ? &bany : &bmd, bias_in > 0 ? &cmd : NULL, &ymd));
    s->bias_input = bias_in;
    {
        dnnl_primitive_attr_t attr = NULL;
        if (build_post_ops_pre(ctx, g, n, Y, s, NULL, NULL, 0, bias_in > 0 ? 1 : 0, &attr)) return fa_ctx_status(ctx);
        if (alpha != 1.0f) { /* a folded scale of an operand (ONNX Runtime's FusedMatMul alpha): oneDNN's output
                                scale, applied to the product before the post-ops */
            if ((!attr && dnnl_primitive_attr_create(&attr) != dnnl_success) ||
                dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha) != dnnl_success) {
                if (attr) dnnl_primitive_attr_destroy(attr);
                fa_ctx_error(ctx, FA_ERR_RUNTIME, "node '%s': oneDNN refused the output scale %g", n->name, alpha);
                goto fail;
            }
        }
        fa_status fs = finish_prim(ctx, s, &md, &bmd, bconst ? B : NULL, attr);
        if (attr) dnnl_primitive_attr_destroy(attr);
        if (fs) goto fail;
    }
    s->kind = 2;
    *handled = true;
    return FA_OK;
fail:
    if (!strcmp(n->domain, FA_FUSED_DOMAIN)) /* a fused node has no reference kernel to fall back to */
        return fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_RUNTIME;
    fa_log(ctx, FA_LOG_DEBUG, "node '%s': oneDNN declined (%s); using reference kernel", n->name, fa_ctx_errmsg(ctx));
    fa_ctx_clear(ctx);
    return FA_OK;
}

static fa_status create_gemm(fa_ctx *ctx, const fa_graph *g, const fa_node *n, dnnl_state *s, bool *handled)
{
    const fa_tensor *A = fa_graph_in(g, n, 0), *B = fa_graph_in(g, n, 1), *C = fa_graph_in(g, n, 2),
                    *Yv = fa_graph_out(g, n, 0);
    if (A->rank != 2 || B->rank != 2 || (Yv->rank != 2 && strcmp(n->domain, FA_FUSED_DOMAIN))) return FA_OK;
    if (fa_graph_opset(g, "") < 7 && fa_node_attr(n, "broadcast")) { /* legacy form: reference */ }
    int64_t ta = fa_node_attr_int(n, "transA", 0), tb = fa_node_attr_int(n, "transB", 0);
    int64_t M = ta ? A->dims[1] : A->dims[0], N = tb ? B->dims[0] : B->dims[1], K = ta ? A->dims[0] : A->dims[1];
    int64_t mn[2] = {M, N};
    fa_tensor Yc;
    const fa_tensor *Y = computed_shape(ctx, n, Yv, 2, mn, &Yc);
    if (!Y) goto fail;
    dnnl_dims_t ad = {M, K}, bd = {K, N}, yd = {M, N}, astr, bstr, biasd = {1, N};
    astr[0] = ta ? 1 : K; astr[1] = ta ? M : 1;
    bstr[0] = tb ? 1 : N; bstr[1] = tb ? K : 1;
    dnnl_memory_desc_t amd, bmd, bany, ymd, biasmd, *bptr = NULL;
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&amd, 2, ad, dnnl_f32, astr));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&bmd, 2, bd, dnnl_f32, bstr));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&ymd, 2, yd, dnnl_f32, NULL));
    bool bconst = (B->flags & FA_TENSOR_CONST) && B->data;
    if (bconst) DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&bany, 2, bd, dnnl_f32, dnnl_format_tag_any));
    s->alpha = fa_node_attr_float(n, "alpha", 1.0f);
    s->beta = fa_node_attr_float(n, "beta", 1.0f);
    s->c_input = -1;
    s->M = M;
    s->N = N;
    bool row_bias = C && ((C->rank == 1 && C->dims[0] == N) || (C->rank == 2 && C->dims[0] == 1 && C->dims[1] == N));
    if (C && row_bias && s->alpha == 1.0f && s->beta == 1.0f) {
        DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&biasmd, 2, biasd, dnnl_f32, NULL));
        bptr = &biasmd;
    } else if (C) {
        s->c_input = 2;
    }
    /* A fused Gemm's epilogue runs after alpha·AB + beta·C (ONNX Gemm), so both go inside the
     * primitive: alpha as oneDNN's output scale (applied to the product, before the post-ops;
     * no bias then, whose place relative to the scale oneDNN 2.6 leaves to the implementation)
     * and beta·C as the first post-op, a binary add of C broadcast to [M, N]: beta·C computed
     * once here when C is constant (as the unfused Gemm rounds it), else the output scale is
     * alpha/beta and an eltwise linear(beta) follows the add. beta = 0 reads no C. Before, such
     * a node failed to build and its cluster was rejected with an error (issue 33). */
    fa_post_op pre[2];
    int npre = 0;
    float oscale = 1.0f;
    bool fused_post = !strcmp(n->domain, FA_FUSED_DOMAIN) && fa_node_attr(n, "post_op_kinds");
    if (fused_post && (s->alpha != 1.0f || s->c_input >= 0)) {
        oscale = s->alpha;
        if (s->c_input >= 0 && s->beta != 0.0f) {
            pre[npre++] = (fa_post_op){FA_POST_OP_ADD, 0, 0, 2};
            if (s->beta != 1.0f && (C->flags & FA_TENSOR_CONST) && C->data) {
                int64_t cn = fa_tensor_numel(C);
                s->c_scaled = malloc(sizeof(float) * (size_t)(cn > 0 ? cn : 1));
                if (!s->c_scaled) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
                const float *cv = C->data;
                for (int64_t i = 0; i < cn; i++) s->c_scaled[i] = s->beta * cv[i];
            } else if (s->beta != 1.0f) {
                oscale = s->alpha / s->beta;
                pre[npre++] = (fa_post_op){FA_POST_OP_LINEAR, s->beta, 0, -1};
            }
        }
        s->alpha = 1.0f; /* nothing left for run_prim to apply */
        s->c_input = -1;
    }
    dnnl_matmul_desc_t md;
    DNNL_CHECK(ctx, dnnl_matmul_desc_init(&md, &amd, bconst ? &bany : &bmd, bptr, &ymd));
    {
        dnnl_primitive_attr_t attr = NULL;
        if (build_post_ops_pre(ctx, g, n, Y, s, NULL, pre, npre, 0, &attr)) return fa_ctx_status(ctx);
        if (s->c_scaled) /* the beta·C add reads the state's copy */
            for (int b = 0; b < s->n_bin; b++)
                if (s->bin_post_index[b] == 0) s->bin_input[b] = -1;
        if (oscale != 1.0f &&
            ((!attr && dnnl_primitive_attr_create(&attr) != dnnl_success) || dnnl_primitive_attr_set_output_scales(attr, 1, 0, &oscale) != dnnl_success)) {
            if (attr) dnnl_primitive_attr_destroy(attr);
            fa_ctx_error(ctx, FA_ERR_RUNTIME, "node '%s': oneDNN refused the output scale %g", n->name, oscale);
            goto fail;
        }
        fa_status fs = finish_prim(ctx, s, &md, &bmd, bconst ? B : NULL, attr);
        if (attr) dnnl_primitive_attr_destroy(attr);
        if (fs) goto fail;
    }
    s->kind = 3;
    *handled = true;
    return FA_OK;
fail:
    if (!strcmp(n->domain, FA_FUSED_DOMAIN)) /* a fused node has no reference kernel to fall back to */
        return fa_ctx_status(ctx) ? fa_ctx_status(ctx) : FA_ERR_RUNTIME;
    fa_log(ctx, FA_LOG_DEBUG, "node '%s': oneDNN declined (%s); using reference kernel", n->name, fa_ctx_errmsg(ctx));
    fa_ctx_clear(ctx);
    return FA_OK;
}

static fa_status kernel_create(fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_layout l, fa_layout in0,
                               fa_conv_tactic tactic, fa_kernel *out, bool *handled)
{
    *handled = false;
    bool fused = !strcmp(n->domain, FA_FUSED_DOMAIN);
    if (*n->domain && !fused) return FA_OK;
    const char *op = n->op_type;
    if (fused && !strncmp(op, "Fused", 5)) op += 5;
    bool conv = !strcmp(op, "Conv"), deconv = !strcmp(op, "ConvTranspose"), mm = !strcmp(op, "MatMul"),
         gemm = !strcmp(op, "Gemm");
    if (!(conv || deconv || mm || gemm) || !all_float(g, n)) return FA_OK;
    if (getenv("FA_NO_DNNL")) return FA_OK;
    if (!engine_init()) return FA_OK;
    dnnl_state *s = calloc(1, sizeof *s);
    if (!s) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_status st;
    if (l != FA_LAYOUT_PLAIN && !conv) st = FA_OK; /* only convolutions keep a blocked layout here */
    else if (conv || deconv) st = create_conv(ctx, g, n, s, handled, deconv, l, in0, tactic);
    else if (mm) st = create_matmul(ctx, g, n, s, handled);
    else st = create_gemm(ctx, g, n, s, handled);
    fa_kernel k = {0};
    k.state = s;
    if (st || !*handled) {
        state_destroy(&k);
        *handled = false;
        return st;
    }
    k.run = run_prim;
    k.destroy = state_destroy;
    k.impl = s->impl[0] ? s->impl : NULL;
    /* dst is the node's output itself (not a buffer of the kernel's own): the residual may be
     * computed in place (the executor's memory plan decides; run_prim skips the copy then) */
    k.inplace = s->has_sum && !s->blocked && s->kind == 0;
    k.inplace_input = s->sum_input;
    if (fused && (mm || gemm) && s->wei_packed >= 0) /* whether the weights stay packed, as the unfused product's */
        snprintf(s->name, sizeof s->name, "dnnl:%s%s(weights %s)", mm ? "matmul" : "gemm",
                 s->bias_input > 0 ? (s->n_lib_post_ops > 0 ? "+bias+post-ops" : "+bias") : "+post-ops",
                 s->wei_packed ? "packed" : "plain, repacked per call");
    if (!s->name[0] && fused && s->swish_after) /* the plain-layout fused convolution, its swish after it */
        snprintf(s->name, sizeof s->name, "dnnl:%s%s%s", deconv ? "deconvolution" : "convolution", s->has_sum ? "+sum" : "",
                 epilogue_label(s));
    if (s->name[0])
        k.name = s->name;
    else if (fused)
        k.name = conv ? "dnnl:convolution+post-ops" : deconv ? "dnnl:deconvolution+post-ops" : mm ? "dnnl:matmul+post-ops" : "dnnl:gemm+post-ops";
    else
        k.name = conv ? "dnnl:convolution" : deconv ? "dnnl:deconvolution" : mm ? "dnnl:matmul" : "dnnl:gemm";
    *out = k;
    return FA_OK;
}

int fa_dnnl_kernel_veto_tactic(fa_kernel *k)
{
    if (!k || k->destroy != state_destroy || !k->state) return 0;
    dnnl_state *s = k->state;
    if (!s->tactic_key) return 0;
    tactic_memo_set(s->tactic_key, TACTIC_VETOED, true);
    return 1;
}

fa_status fa_dnnl_kernel_create(fa_ctx *ctx, const fa_graph *g, const fa_node *n, int threads, fa_conv_tactic tactic,
                                fa_kernel *out, bool *handled)
{
    (void)threads;
    return kernel_create(ctx, g, n, FA_LAYOUT_PLAIN, FA_LAYOUT_PLAIN, tactic, out, handled);
}

fa_status fa_dnnl_kernel_create_blocked(fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_layout l, fa_conv_tactic tactic,
                                        fa_kernel *out, fa_layout *in0, bool *handled)
{
    *handled = false;
    *in0 = l;
    if (l == FA_LAYOUT_PLAIN || fa_dnnl_layout_tag(l, 4) == dnnl_format_tag_undef) return FA_OK;
    fa_status st = kernel_create(ctx, g, n, l, l, tactic, out, handled);
    if (st != FA_ERR_NOMEM && (st || !*handled)) { /* no fast conv reading l: one reading a plain image, writing l */
        fa_log(ctx, FA_LOG_DEBUG, "node '%s': no %s kernel (%s); trying plain input", n->name, fa_layout_name(l), fa_ctx_errmsg(ctx));
        fa_ctx_clear(ctx);
        *in0 = FA_LAYOUT_PLAIN;
        st = kernel_create(ctx, g, n, l, FA_LAYOUT_PLAIN, tactic, out, handled);
    }
    if (st && st != FA_ERR_NOMEM) { /* declined on the layout: the executor runs the node plain */
        fa_log(ctx, FA_LOG_DEBUG, "node '%s': no %s kernel (%s); plain", n->name, fa_layout_name(l), fa_ctx_errmsg(ctx));
        fa_ctx_clear(ctx);
        *handled = false;
        return FA_OK;
    }
    return st;
}

/* ---- a GEMM with a generated epilogue (docs/runtime.md "Generated GEMM epilogues") ---- */

/* One oneDNN product of m rows of A: a block's (every block but the last) or the last block's. */
typedef struct gemm_part {
    dnnl_state s;           /* the primitive, its weights (packed once, shared) and bias */
    int64_t m;              /* rows of A it multiplies; 0: unused */
    dnnl_memory_t *src, *dst, *scr; /* per thread: the block's rows of A and Y, its scratchpad */
    void **scr_buf;
} gemm_part;

typedef struct gemm_epi {
    fa_fused_fn epi;        /* the generated epilogue (codegen.h, fa_kernel_desc.gemm_epilogue) */
    int ia, ib, ic;         /* the node's inputs A, B, C (-1: no C) */
    bool wei_const;
    int64_t rows, K, N, blk, nblk;
    int nthr;               /* per-thread objects made */
    dnnl_stream_t *streams;
    gemm_part full, tail;
    /* one row of A and constant weights where fa_cpu_gemv_available (AVX-512F or AVX2 + FMA): the
     * product is runtime/cpu/gemv.c's matrix-vector product, alpha and C included (no oneDNN
     * primitive, no packed copy) */
    bool gemv;
    fa_cpu_gemv gv;
    char name[160];
} gemm_epi;

static void gemm_part_free(gemm_part *p, int nthr)
{
    for (int t = 0; t < nthr; t++) {
        if (p->src && p->src[t]) dnnl_memory_destroy(p->src[t]);
        if (p->dst && p->dst[t]) dnnl_memory_destroy(p->dst[t]);
        if (p->scr && p->scr[t]) dnnl_memory_destroy(p->scr[t]);
        if (p->scr_buf) free(p->scr_buf[t]);
    }
    free(p->src);
    free(p->dst);
    free(p->scr);
    free(p->scr_buf);
    state_clear(&p->s);
}

static void gemm_epi_destroy(void *state)
{
    gemm_epi *e = state;
    if (!e) return;
    gemm_part_free(&e->full, e->nthr);
    gemm_part_free(&e->tail, e->nthr);
    for (int t = 0; e->streams && t < e->nthr; t++)
        if (e->streams[t]) dnnl_stream_destroy(e->streams[t]);
    free(e->streams);
    fa_cpu_gemv_release(&e->gv);
    free(e);
}

/* The primitive for m rows: A [m, K] row-major (rows of the node's A), B [K, N] (transposed when
 * transB), Y [m, N]; the bias as oneDNN's, alpha as its output scale; the scratchpad the caller's
 * (one per thread, user mode), per-thread memory objects for A's and Y's rows. */
static fa_status gemm_part_make(fa_ctx *ctx, gemm_epi *e, gemm_part *p, int64_t m, const fa_tensor *B, const fa_tensor *C,
                                bool transB, float alpha, const char *node)
{
    p->m = m;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_dims_t ad = {m, e->K}, bd = {e->K, e->N}, yd = {m, e->N}, biasd = {1, e->N}, bstr = {transB ? 1 : e->N, transB ? e->K : 1};
    dnnl_memory_desc_t amd, bmd, bany, ymd, biasmd;
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&amd, 2, ad, dnnl_f32, NULL));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&bmd, 2, bd, dnnl_f32, bstr));
    DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&ymd, 2, yd, dnnl_f32, NULL));
    if (C) DNNL_CHECK(ctx, dnnl_memory_desc_init_by_strides(&biasmd, 2, biasd, dnnl_f32, NULL));
    if (e->wei_const) DNNL_CHECK(ctx, dnnl_memory_desc_init_by_tag(&bany, 2, bd, dnnl_f32, dnnl_format_tag_any));
    dnnl_matmul_desc_t md;
    DNNL_CHECK(ctx, dnnl_matmul_desc_init(&md, &amd, e->wei_const ? &bany : &bmd, C ? &biasmd : NULL, &ymd));
    DNNL_CHECK(ctx, dnnl_primitive_attr_create(&attr));
    DNNL_CHECK(ctx, dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    if (alpha != 1.0f) DNNL_CHECK(ctx, dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha));
    if (finish_prim(ctx, &p->s, &md, &bmd, e->wei_const ? B : NULL, attr)) goto fail;
    dnnl_primitive_attr_destroy(attr);
    attr = NULL;
    p->src = calloc((size_t)e->nthr, sizeof *p->src);
    p->dst = calloc((size_t)e->nthr, sizeof *p->dst);
    p->scr = calloc((size_t)e->nthr, sizeof *p->scr);
    p->scr_buf = calloc((size_t)e->nthr, sizeof *p->scr_buf);
    if (!p->src || !p->dst || !p->scr || !p->scr_buf) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    const dnnl_memory_desc_t *smd, *dmd, *cmd = NULL;
    DNNL_CHECK(ctx, dnnl_memory_get_memory_desc(p->s.src, &smd));
    DNNL_CHECK(ctx, dnnl_memory_get_memory_desc(p->s.dst, &dmd));
    if (p->s.scratch) DNNL_CHECK(ctx, dnnl_memory_get_memory_desc(p->s.scratch, &cmd));
    for (int t = 0; t < e->nthr; t++) {
        DNNL_CHECK(ctx, dnnl_memory_create(&p->src[t], smd, g_engine, DNNL_MEMORY_NONE));
        DNNL_CHECK(ctx, dnnl_memory_create(&p->dst[t], dmd, g_engine, DNNL_MEMORY_NONE));
        if (cmd) {
            size_t sz = dnnl_memory_desc_get_size(cmd);
            if (posix_memalign(&p->scr_buf[t], 64, sz ? sz : 64) != 0) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            DNNL_CHECK(ctx, dnnl_memory_create(&p->scr[t], cmd, g_engine, p->scr_buf[t]));
        }
    }
    return FA_OK;
fail:
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!fa_ctx_status(ctx)) fa_ctx_error(ctx, FA_ERR_RUNTIME, "node '%s': oneDNN declined the product", node);
    return fa_ctx_status(ctx);
}

/* The generated epilogue on rows [r0, r1) of the product Y: the node's inputs, then Y and the
 * range (codegen.h fa_kernel_desc.gemm_epilogue), one thread. n_in <= 62 (gemm_epi_run checks). */
static void run_epilogue(const gemm_epi *e, const fa_value *in, int n_in, float *Y, int64_t r0, int64_t r1)
{
    const void *ip[64];
    void *op[1] = {Y};
    int64_t range[2] = {r0, r1};
    for (int i = 0; i < n_in; i++) ip[i] = in[i].data;
    ip[n_in] = Y;
    ip[n_in + 1] = range;
    e->epi(ip, op, 1);
}

static fa_status gemm_epi_run(void *state, fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in, fa_value *out,
                              int n_out, int threads)
{
    gemm_epi *e = state;
    if (n_in > 62 || n_out != 1)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "node '%s': a GEMM epilogue with %d inputs, %d outputs", n->name, n_in, n_out);
    if (e->gemv) { /* the one row: the product over the team, then the epilogue on it */
        float *Y = out[0].data;
        if (!fa_cpu_gemv_run(&e->gv, in[e->ia].data, in[e->ib].data, e->ic >= 0 ? in[e->ic].data : NULL, e->N,
                             threads > 0 ? threads : 1, Y))
            return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory for node '%s''s partial sums", n->name);
        run_epilogue(e, in, n_in, Y, 0, 1);
        return FA_OK;
    }
    gemm_part *parts[2] = {&e->full, &e->tail};
    for (int k = 0; k < 2; k++) { /* what every block reads whole: set once, read by every thread */
        if (!parts[k]->m) continue;
        if (!e->wei_const) DNNL_CHECK(ctx, dnnl_memory_set_data_handle(parts[k]->s.wei, in[e->ib].data));
        if (parts[k]->s.bias) DNNL_CHECK(ctx, dnnl_memory_set_data_handle(parts[k]->s.bias, in[e->ic].data));
    }
    const float *A = in[e->ia].data;
    float *Y = out[0].data;
    int nt = threads > 0 && threads < e->nthr ? threads : e->nthr;
    int failed = 0;
    /* blocks of rows over the team: each thread multiplies its block with oneDNN (sequential
     * inside a parallel region) and runs the epilogue on it while it is in its cache */
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : failed)
    for (int64_t b = 0; b < e->nblk; b++) {
        int t = omp_get_thread_num();
        int64_t r0 = b * e->blk, m = e->rows - r0 < e->blk ? e->rows - r0 : e->blk;
        gemm_part *p = m == e->full.m ? &e->full : &e->tail;
        bool ok = dnnl_memory_set_data_handle(p->src[t], (void *)(A + r0 * e->K)) == dnnl_success &&
                  dnnl_memory_set_data_handle(p->dst[t], Y + r0 * e->N) == dnnl_success;
        dnnl_exec_arg_t args[5];
        int na = 0;
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, p->src[t]};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, p->s.wei};
        if (p->s.bias) args[na++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, p->s.bias};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DST, p->dst[t]};
        if (p->scr[t]) args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, p->scr[t]};
        ok = ok && dnnl_primitive_execute(p->s.prim, e->streams[t], na, args) == dnnl_success &&
             dnnl_stream_wait(e->streams[t]) == dnnl_success;
        if (!ok) {
            failed |= 1;
            continue;
        }
        run_epilogue(e, in, n_in, Y, r0, r0 + m);
    }
    if (failed) return fa_ctx_error(ctx, FA_ERR_RUNTIME, "node '%s': oneDNN failed on a block of rows", n->name);
    return FA_OK;
fail:
    return FA_ERR_RUNTIME;
}

/* Rows per block: one block's rows of A and of the product in half of one core's L2 (the other
 * half for the weights' panels streaming through), at least one row, and no more than an even
 * share of the rows per thread, so every thread has a block. L2 from glibc's
 * sysconf(_SC_LEVEL2_CACHE_SIZE) (the CPUID cache descriptors); 1 MiB where it says nothing. */
static int64_t block_rows(int64_t rows, int64_t K, int64_t N, int nthr)
{
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    int64_t budget = (l2 > 0 ? l2 : 1 << 20) / 2;
    int64_t blk = budget / (int64_t)(sizeof(float) * (size_t)(K + N));
    if (blk < 1) blk = 1;
    int64_t share = (rows + nthr - 1) / nthr;
    if (blk > share) blk = share;
    return blk < 1 ? 1 : blk;
}

/* The kernel of state e (named already) for the executor. */
static void epi_kernel(gemm_epi *e, fa_custom_kernel *out)
{
    memset(out, 0, sizeof *out);
    out->name = e->name;
    out->run = gemm_epi_run;
    out->destroy = gemm_epi_destroy;
    out->state = e;
}

fa_status fa_dnnl_gemm_epilogue_kernel(fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_fused_fn epi, fa_custom_kernel *out)
{
    const int64_t *gi = NULL;
    const char *op = fa_node_attr_string(n, "gemm", "");
    bool mm = !strcmp(op, "MatMul"), gemm = !strcmp(op, "Gemm");
    if ((!mm && !gemm) || fa_node_attr_ints(n, "gemm_inputs", &gi) != 3 || gi[0] < 0 || gi[0] >= n->n_inputs || gi[1] < 0 ||
        gi[1] >= n->n_inputs || gi[2] >= n->n_inputs || n->n_outputs != 1)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "node '%s': no product described (gemm, gemm_inputs)", n->name);
    const fa_tensor *A = fa_graph_in(g, n, (int)gi[0]), *B = fa_graph_in(g, n, (int)gi[1]),
                    *C = gi[2] >= 0 ? fa_graph_in(g, n, (int)gi[2]) : NULL, *Y = fa_graph_out(g, n, 0);
    bool transB = gemm && fa_node_attr_int(n, "transB", 0);
    float alpha = gemm ? fa_node_attr_float(n, "alpha", 1.0f) : 1.0f, beta = gemm ? fa_node_attr_float(n, "beta", 1.0f) : 1.0f;
    if (C && beta == 0.0f) C = NULL; /* beta 0 reads no C */
    if (!A || !B || !Y || A->rank < 2 || B->rank != 2 || A->dtype != FA_DTYPE_FLOAT || B->dtype != FA_DTYPE_FLOAT ||
        (C && (alpha != 1.0f || beta != 1.0f || C->dtype != FA_DTYPE_FLOAT)) || (gemm && A->rank != 2))
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "node '%s': the product is not rows of A times one matrix", n->name);
    if (!engine_init()) return fa_ctx_error(ctx, FA_ERR_RUNTIME, "node '%s': no oneDNN CPU engine", n->name);
    int64_t K = A->dims[A->rank - 1], N = transB ? B->dims[0] : B->dims[1];
    if ((transB ? B->dims[1] : B->dims[0]) != K || K <= 0 || N <= 0 || (C && fa_tensor_numel(C) != N))
        return fa_ctx_error(ctx, FA_ERR_INPUT, "node '%s': operand shapes do not multiply", n->name);
    int64_t rows = fa_tensor_numel(A) / K;
    if (rows <= 0 || fa_tensor_numel(Y) != rows * N)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "node '%s': output '%s' is not the product's %lld x %lld elements", n->name,
                            Y->name, (long long)rows, (long long)N);
    gemm_epi *e = calloc(1, sizeof *e);
    if (!e) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    e->epi = epi;
    e->ia = (int)gi[0], e->ib = (int)gi[1], e->ic = C ? (int)gi[2] : -1;
    e->wei_const = (B->flags & FA_TENSOR_CONST) && B->data;
    e->rows = rows, e->K = K, e->N = N;
    if (rows == 1 && e->wei_const && fa_cpu_gemv_available()) { /* C only with alpha = beta = 1 (above) */
        e->gemv = true;
        e->gv = (fa_cpu_gemv){.K = K, .N = N, .rows = transB, .alpha = alpha, .beta = 1.0f};
        snprintf(e->name, sizeof e->name, "gemv(%s)+generated epilogue", transB ? "rows" : "cols");
        epi_kernel(e, out);
        return FA_OK;
    }
    e->nthr = omp_get_max_threads();
    if (e->nthr < 1) e->nthr = 1;
    e->blk = block_rows(rows, K, N, e->nthr);
    e->nblk = (rows + e->blk - 1) / e->blk;
    fa_status st = FA_OK;
    e->streams = calloc((size_t)e->nthr, sizeof *e->streams);
    if (!e->streams) st = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    for (int t = 0; !st && t < e->nthr; t++)
        if (dnnl_stream_create(&e->streams[t], g_engine, dnnl_stream_default_flags) != dnnl_success)
            st = fa_ctx_error(ctx, FA_ERR_RUNTIME, "node '%s': oneDNN stream", n->name);
    if (!st) st = gemm_part_make(ctx, e, &e->full, e->blk, B, C, transB, alpha, n->name);
    if (!st && rows % e->blk) st = gemm_part_make(ctx, e, &e->tail, rows % e->blk, B, C, transB, alpha, n->name);
    if (st) {
        gemm_epi_destroy(e);
        return st;
    }
    snprintf(e->name, sizeof e->name, "dnnl:%s+generated epilogue(weights %s, %lld-row blocks)", mm ? "matmul" : "gemm",
             e->full.s.wei_packed > 0 ? "packed" : e->full.s.wei_packed == 0 ? "plain" : "an input", (long long)e->blk);
    epi_kernel(e, out);
    return FA_OK;
}
