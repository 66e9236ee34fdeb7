/* applier/apply_cuda — the applier on the cuda target: generated clusters compiled by NVRTC for the
 * device and launched through the driver API (runtime/cuda/fused.c), epilogues mapped onto cuBLASLt /
 * cuDNN library epilogues (or refused with a reason), verification and interleaved benchmarks on the GPU.
 * docs/cuda.md "Fused kernels on cuda". */
#include "applier-impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef FA_HAVE_CUDA
#include "runtime/cuda/cuda.h"

#include <cuda_runtime_api.h>
#endif

/* ---- epilogue mapping (pure; built with or without the toolkit) ---- */

const char *fa_cuda_epilogue_name(fa_cuda_epilogue e)
{
    switch (e) {
    case FA_CUDA_EPI_CUBLASLT_BIAS: return "cublaslt:bias";
    case FA_CUDA_EPI_CUBLASLT_RELU_BIAS: return "cublaslt:relu_bias";
    case FA_CUDA_EPI_CUBLASLT_GELU_BIAS: return "cublaslt:gelu_bias";
    case FA_CUDA_EPI_CUDNN_CONV_BIAS_RELU: return "cudnn:conv_bias_relu";
    default: return "none";
    }
}

static fa_cuda_epilogue refuse_epi(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static fa_cuda_epilogue refuse_epi(char *why, size_t cap, const char *fmt, ...)
{
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return FA_CUDA_EPI_NONE;
}

fa_cuda_epilogue fa_cuda_epilogue_map(const fa_cuda_epilogue_query *q, char *why, size_t why_cap)
{
    if (why && why_cap) why[0] = 0;
    const char *op = q->anchor_op ? q->anchor_op : "?";
    bool gemm = !strcmp(op, "MatMul") || !strcmp(op, "Gemm"), conv = !strcmp(op, "Conv");
    const char *first = q->n_post_ops > 0 ? q->post_ops[0] : "(no post-op)";
    if (!gemm && !conv) return refuse_epi(why, why_cap, "no cuda epilogue for %s (anchor %s)", first, op);
    if (q->anchor_bias == FA_CUDA_BIAS_OTHER)
        return refuse_epi(why, why_cap, "no cuda epilogue for %s (the %s bias is not one value per output column)",
                          first, op);
    bool bias = q->anchor_bias == FA_CUDA_BIAS_VECTOR;
    int i = 0;
    if (!bias && i < q->n_post_ops && !strcmp(q->post_ops[i], "binary:add") && q->operand_is_bias_vector &&
        q->operand_is_bias_vector[i]) {
        bias = true;
        i++;
    }
    enum { ACT_NONE, ACT_RELU, ACT_GELU } act = ACT_NONE;
    if (i < q->n_post_ops) {
        const char *po = q->post_ops[i];
        if (!strcmp(po, "eltwise:relu")) act = ACT_RELU;
        else if (gemm && !strcmp(po, "eltwise:gelu_tanh")) act = ACT_GELU;
        else if (gemm && !strcmp(po, "eltwise:gelu_erf"))
            return refuse_epi(why, why_cap, "no cuda epilogue for %s (cuBLASLt's GELU epilogue is the tanh approximation)", po);
        else if (!strcmp(po, "binary:add"))
            return refuse_epi(why, why_cap, "no cuda epilogue for %s (%s)", po,
                              bias ? "a second add after the bias" : "the operand is not a bias vector");
        else return refuse_epi(why, why_cap, "no cuda epilogue for %s", po);
        i++;
    }
    if (i < q->n_post_ops) return refuse_epi(why, why_cap, "no cuda epilogue for %s (after an activation)", q->post_ops[i]);
    if (!bias)
        return refuse_epi(why, why_cap, "no cuda epilogue for %s (%s without a bias vector)", first, op);
    if (conv) {
        if (act != ACT_RELU)
            return refuse_epi(why, why_cap, "no cuda epilogue for %s (cuDNN fuses conv+bias with a Relu only)", first);
        return FA_CUDA_EPI_CUDNN_CONV_BIAS_RELU;
    }
    return act == ACT_RELU ? FA_CUDA_EPI_CUBLASLT_RELU_BIAS
         : act == ACT_GELU ? FA_CUDA_EPI_CUBLASLT_GELU_BIAS
                           : FA_CUDA_EPI_CUBLASLT_BIAS;
}

/* t, right-aligned against y (rank ry), has y->dims[axis] elements at `axis` and 1 elsewhere. */
static bool is_axis_vector(const fa_tensor *t, const fa_tensor *y, int axis)
{
    if (!t || !y || t->rank > y->rank || axis < 0 || axis >= y->rank) return false;
    int off = y->rank - t->rank;
    bool seen = false;
    for (int d = 0; d < t->rank; d++) {
        int yd = d + off;
        if (yd == axis) {
            if (t->dims[d] != y->dims[axis]) return false;
            seen = true;
        } else if (t->dims[d] != 1) {
            return false;
        }
    }
    return seen;
}

void fa_cuda_epilogue_query_of(const fa_graph *g, const fa_cluster *c, bool *scratch, fa_cuda_epilogue_query *q)
{
    memset(q, 0, sizeof *q);
    const fa_node *a = c->anchor >= 0 ? g->nodes[c->anchor] : NULL;
    q->anchor_op = a ? a->op_type : "?";
    q->n_post_ops = c->n_post_ops;
    q->post_ops = c->post_ops;
    q->operand_is_bias_vector = scratch;
    if (!a) return;
    const fa_tensor *y = fa_graph_out(g, a, 0);
    int axis = !strcmp(a->op_type, "Conv") ? 1 : (y ? y->rank - 1 : 0);
    const fa_tensor *b = a->n_inputs > 2 ? fa_graph_in(g, a, 2) : NULL;
    if (b) q->anchor_bias = is_axis_vector(b, y, axis) ? FA_CUDA_BIAS_VECTOR : FA_CUDA_BIAS_OTHER;
    for (int k = 0; k < c->n_post_ops; k++) {
        int tid = c->post_op_inputs ? c->post_op_inputs[k] : -1;
        scratch[k] = tid >= 0 && is_axis_vector(g->tensors[tid], y, axis);
    }
}

#ifndef FA_HAVE_CUDA

fa_status fa_apply_cuda(fa_ctx *ctx, const fa_graph *g, fa_plan *p, const fa_apply_options *opt, const char *arch,
                        fa_apply_result **out)
{
    (void)g;
    (void)p;
    (void)opt;
    (void)arch;
    (void)out;
    return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "no CUDA driver (this build has no CUDA toolkit): cannot apply on cuda");
}

#else

/* ---- generated kernels: cubins by cluster index, handed to the cuda executor by provide() ---- */

typedef struct cubin_entry {
    uint8_t *cubin;
    size_t size;
    fa_codegen_info info;
    fa_nvrtc_result nv;
    int n_in, n_out;
} cubin_entry;

typedef struct cubin_table {
    const fa_plan *p;
    cubin_entry *e; /* by cluster index; cubin NULL when not compiled */
} cubin_table;

static fa_status kernel_of(fa_ctx *ctx, const cubin_entry *ce, fa_cuda_fused **out)
{
    return fa_cuda_fused_create(ctx, ce->cubin, ce->size, ce->info.name, ce->info.block_size, ce->info.grid, ce->n_in,
                                ce->n_out, ce->nv.registers, ce->nv.spill_stores + ce->nv.spill_loads, out);
}

/* FusedKernel nodes -> a device kernel (fa_cuda_fused_custom_run marker, runtime/cuda/cuda.h). */
static fa_status provide(void *user, fa_ctx *ctx, const fa_graph *g, const fa_node *n, fa_custom_kernel *out,
                         bool *provided)
{
    cubin_table *kt = user;
    (void)g;
    *provided = false;
    if (strcmp(n->domain, "ai.fuse-advise") || strcmp(n->op_type, "FusedKernel")) return FA_OK;
    int64_t cid = fa_node_attr_int(n, "cluster", -1);
    for (int i = 0; i < kt->p->n_clusters; i++) {
        if (kt->p->clusters[i].id != cid) continue;
        if (!kt->e[i].cubin)
            return fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': cluster %lld has no cubin", n->name, (long long)cid);
        fa_cuda_fused *k = NULL;
        fa_status s = kernel_of(ctx, &kt->e[i], &k);
        if (s) return s;
        out->name = "nvrtc:fused";
        out->run = fa_cuda_fused_custom_run;
        out->destroy = fa_cuda_fused_free;
        out->state = k;
        *provided = true;
        return FA_OK;
    }
    return fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': unknown cluster %lld", n->name, (long long)cid);
}

static bool has_fused_kernel(const fa_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && !strcmp(g->nodes[i]->op_type, "FusedKernel")) return true;
    return false;
}

/* A cuda executor; the provider only when the graph has FusedKernel nodes (an executor without
 * provider support then refuses with its own message). */
static fa_status make_exec(fa_ctx *ctx, const fa_graph *g, cubin_table *kt, fa_exec **e)
{
    fa_exec_options eo = {.target = FA_TARGET_CUDA};
    if (has_fused_kernel(g)) {
        eo.provider = provide;
        eo.provider_user = kt;
    }
    return fa_exec_create(ctx, g, &eo, e);
}

/* ---- values captured from the unfused run on the GPU, by tensor id of g ---- */

static int out_index(const fa_graph *sub, const char *name)
{
    for (int i = 0; i < sub->n_outputs; i++)
        if (!strcmp(sub->tensors[sub->outputs[i]]->name, name)) return i;
    return -1;
}

/* ---- one generated kernel run on its own: device copies of the cluster's inputs, launch,
 *      outputs back to host (what the executor does per run: its outputs come back too) ---- */

typedef struct standalone {
    fa_cuda_fused *k;
    cudaStream_t stream;
    int n_in, n_out;
    void *din[64], *dout[16];
    fa_value hout[16];
    uint64_t out_bytes[16];
    const fa_node *range; /* NVTX range owner (a node of the fused sub-graph) */
    bool inject;
} standalone;

static void standalone_free(standalone *s)
{
    for (int i = 0; i < s->n_in; i++) cudaFree(s->din[i]);
    for (int i = 0; i < s->n_out; i++) {
        cudaFree(s->dout[i]);
        free(s->hout[i].data);
    }
    if (s->stream) cudaStreamDestroy(s->stream);
    fa_cuda_fused_free(s->k);
    memset(s, 0, sizeof *s);
}

static fa_status standalone_create(fa_ctx *ctx, const fa_graph *g, const fa_cluster *c, const cubin_entry *ce,
                                   const fa_value_map *vm, standalone *s)
{
    memset(s, 0, sizeof *s);
    if (c->n_inputs > 64 || c->n_outputs > 16) return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "cluster %d too wide", c->id);
    fa_status st;
    if ((st = FA_CUDA_CHECK(ctx, cudaSetDevice(0)))) return st;
    if ((st = FA_CUDA_CHECK(ctx, cudaFree(0)))) return st; /* primary context current for the driver API */
    if ((st = FA_CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)))) goto fail;
    if ((st = kernel_of(ctx, ce, &s->k))) goto fail;
    if ((st = fa_cuda_fused_load(ctx, s->k))) goto fail;
    for (int i = 0; i < c->n_inputs; i++, s->n_in++) {
        const fa_tensor *t = g->tensors[c->inputs[i]];
        const void *src = vm->vals[c->inputs[i]].data ? vm->vals[c->inputs[i]].data : t->data;
        uint64_t bytes = fa_tensor_bytes(t);
        if (!src && bytes) {
            st = fa_ctx_error(ctx, FA_ERR_INTERNAL, "cluster %d: no value for input '%s'", c->id, t->name);
            goto fail;
        }
        if ((st = FA_CUDA_CHECK(ctx, cudaMalloc(&s->din[i], bytes ? bytes : 1)))) goto fail;
        if (bytes && (st = FA_CUDA_CHECK(ctx, cudaMemcpy(s->din[i], src, bytes, cudaMemcpyHostToDevice)))) goto fail;
    }
    for (int i = 0; i < c->n_outputs; i++, s->n_out++) {
        const fa_tensor *t = g->tensors[c->outputs[i]];
        uint64_t bytes = fa_tensor_bytes(t);
        s->out_bytes[i] = bytes;
        s->hout[i].dtype = t->dtype;
        s->hout[i].rank = t->rank;
        memcpy(s->hout[i].dims, t->dims, sizeof s->hout[i].dims);
        s->hout[i].data = malloc(bytes ? bytes : 1);
        if (!s->hout[i].data) {
            st = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            goto fail;
        }
        if ((st = FA_CUDA_CHECK(ctx, cudaMalloc(&s->dout[i], bytes ? bytes : 1)))) goto fail;
    }
    return FA_OK;
fail:
    standalone_free(s);
    return st;
}

static fa_status standalone_run(fa_ctx *ctx, standalone *s)
{
    fa_status st = fa_cuda_fused_launch(ctx, s->k, s->range, s->din, s->n_in, s->dout, s->n_out, s->stream);
    for (int i = 0; !st && i < s->n_out; i++)
        if (s->out_bytes[i])
            st = FA_CUDA_CHECK(ctx, cudaMemcpyAsync(s->hout[i].data, s->dout[i], s->out_bytes[i], cudaMemcpyDeviceToHost,
                                                    s->stream));
    if (!st) st = FA_CUDA_CHECK(ctx, cudaStreamSynchronize(s->stream));
    if (!st && s->inject && s->n_out > 0 && s->hout[0].dtype == FA_DTYPE_FLOAT) { /* test hook: a wrong kernel */
        float *y = s->hout[0].data;
        for (int64_t i = 0, ne = fa_value_numel(&s->hout[0]); i < ne; i++) y[i] += 1.0f;
    }
    return st;
}

/* ---- a runner: the subject of fa_apply_bench_pair (applier/judge.c) ---- */

typedef struct runner {
    fa_exec *e;       /* an executor, or */
    standalone *s;    /* a generated kernel on its own */
} runner;

static fa_status run_once(fa_ctx *ctx, const void *subject)
{
    const runner *r = subject;
    return r->e ? fa_exec_run(ctx, r->e, NULL) : standalone_run(ctx, r->s);
}


/* Verified clusters: benchmark, decide, record (the cpu applier's rules). */
static fa_status judge(fa_ctx *cctx, fa_plan *p, fa_cluster *c, const fa_apply_options *opt, const runner *u,
                       const runner *f, double err, fa_apply_result *res, double *sa, double *sb)
{
    fa_status cs = fa_apply_bench_pair(cctx, run_once, u, f, opt->warmup, opt->iters, sa, sb);
    if (cs) {
        c->status = FA_CLUSTER_REJECTED_ERROR;
        fa_apply_set_reason(p, c, "benchmark on cuda failed: %s", fa_ctx_errmsg(cctx));
        return FA_OK;
    }
    int k = res->n_cluster_bench++;
    res->cluster_ids[k] = c->id;
    memcpy(res->cluster_unfused + (size_t)k * (size_t)opt->iters, sa, sizeof(double) * (size_t)opt->iters);
    memcpy(res->cluster_fused + (size_t)k * (size_t)opt->iters, sb, sizeof(double) * (size_t)opt->iters);
    fa_apply_judge(p, c, sa, sb, opt->iters, err, "cuda: ");
    return FA_OK;
}

static void reject_verify(fa_plan *p, fa_cluster *c, double err, double tol)
{
    c->status = FA_CLUSTER_REJECTED_VERIFY;
    fa_apply_set_reason(p, c, "cuda: fused output differs from the unfused ops: max relative error %.3g > tolerance %.3g", err, tol);
}

/* One cluster; its failures become its status and reason, never the run's. */
static void apply_cluster(fa_ctx *cctx, const fa_graph *g, fa_plan *p, int ci, const fa_apply_options *opt,
                          const char *arch, cubin_table *kt, const fa_value_map *vm, fa_apply_result *res, double *sa,
                          double *sb)
{
    fa_cluster *c = &p->clusters[ci];
    if (c->kind == FA_CLUSTER_EPILOGUE) {
        bool *scratch = calloc((size_t)c->n_post_ops + 1, sizeof(bool));
        fa_cuda_epilogue_query q;
        char why[256];
        fa_cuda_epilogue e = FA_CUDA_EPI_NONE;
        if (scratch) {
            fa_cuda_epilogue_query_of(g, c, scratch, &q);
            e = fa_cuda_epilogue_map(&q, why, sizeof why);
        } else {
            snprintf(why, sizeof why, "out of memory");
        }
        free(scratch);
        c->status = FA_CLUSTER_REJECTED_ERROR;
        if (e == FA_CUDA_EPI_NONE) fa_apply_set_reason(p, c, "%s", why);
        else
            fa_apply_set_reason(p, c, "cuda epilogue %s fits but is not executed yet (the cuda executor has no Fused* nodes)",
                       fa_cuda_epilogue_name(e));
        return;
    }
    fa_status cs = FA_OK;
    int ids[1] = {c->id};
    fa_graph *gu = NULL, *gf = NULL;
    fa_exec *eu = NULL, *ef = NULL;
    standalone sk;
    memset(&sk, 0, sizeof sk);
    bool have_sk = false;
    if (fa_apply_needs_codegen(c)) {
        const char *why = NULL;
        if (!fa_codegen_supported(g, c, true, &why)) {
            c->status = FA_CLUSTER_REJECTED_ERROR;
            fa_apply_set_reason(p, c, "no CUDA emitter: %s", why ? why : "unsupported");
            return;
        }
        fa_buf src;
        fa_buf_init(&src);
        cubin_entry *ce = &kt->e[ci];
        memset(ce, 0, sizeof *ce);
        ce->n_in = c->n_inputs;
        ce->n_out = c->n_outputs;
        cs = fa_codegen_cuda(cctx, g, c, p->hash, &src, &ce->info);
        if (!cs) cs = fa_apply_write_kernel_source(cctx, opt->out_dir, ce->info.name, "cu", &src);
        if (!cs) cs = fa_nvrtc_compile(cctx, src.data, ce->info.name, arch, &ce->nv, &ce->cubin, &ce->size);
        fa_buf_free(&src);
        if (!cs) { /* the figures for the arch it will run on (the gate's may be for another) */
            c->registers = ce->nv.registers;
            c->spill_bytes = ce->nv.spill_stores + ce->nv.spill_loads;
            c->block_size = ce->info.block_size;
        }
        if (!cs) cs = standalone_create(cctx, g, c, ce, vm, &sk);
        if (!cs) {
            have_sk = true;
            sk.inject = opt->inject_wrong_cluster == c->id;
        }
        if (!cs) cs = fa_fused_graph_scoped(cctx, g, p, ids, 1, true, false, -1, c->outputs, c->n_outputs, &gu);
        if (!cs) cs = make_exec(cctx, gu, kt, &eu);
        if (!cs) cs = fa_value_map_set_inputs(cctx, eu, gu, vm);
        if (!cs) cs = fa_exec_run(cctx, eu, NULL);
        if (!cs) cs = standalone_run(cctx, &sk);
    } else { /* BN fold: rewritten weights, standard ops on the cuda executor */
        cs = fa_fused_graph_scoped(cctx, g, p, ids, 1, true, false, -1, c->outputs, c->n_outputs, &gu);
        if (!cs) cs = fa_fused_graph_scoped(cctx, g, p, ids, 1, true, true, opt->inject_wrong_cluster, c->outputs,
                                            c->n_outputs, &gf);
        if (!cs) cs = make_exec(cctx, gu, kt, &eu);
        if (!cs) cs = make_exec(cctx, gf, kt, &ef);
        if (!cs) cs = fa_value_map_set_inputs(cctx, eu, gu, vm);
        if (!cs) cs = fa_value_map_set_inputs(cctx, ef, gf, vm);
        if (!cs) cs = fa_exec_run(cctx, eu, NULL);
        if (!cs) cs = fa_exec_run(cctx, ef, NULL);
    }
    if (cs) {
        c->status = FA_CLUSTER_REJECTED_ERROR;
        fa_apply_set_reason(p, c, "could not build or run the fused kernel on cuda: %s", fa_ctx_errmsg(cctx));
        goto done;
    }
    double err = 0;
    for (int k = 0; k < c->n_outputs; k++) {
        const char *nm = g->tensors[c->outputs[k]]->name;
        int iu = out_index(gu, nm);
        const fa_value *fv = have_sk ? &sk.hout[k] : (gf && out_index(gf, nm) >= 0 ? fa_exec_output(ef, out_index(gf, nm)) : NULL);
        double e = iu < 0 ? INFINITY : fa_apply_rel_error(fv, fa_exec_output(eu, iu));
        if (e > err) err = e;
    }
    c->max_rel_error = err;
    if (!(err <= opt->tolerance)) {
        reject_verify(p, c, err, opt->tolerance);
        goto done;
    }
    runner ru = {.e = eu}, rf = {.e = ef, .s = have_sk ? &sk : NULL};
    judge(cctx, p, c, opt, &ru, &rf, err, res, sa, sb);
done:
    if (have_sk) standalone_free(&sk);
    fa_exec_free(eu);
    fa_exec_free(ef);
    fa_graph_free(gu);
    fa_graph_free(gf);
}

fa_status fa_apply_cuda(fa_ctx *ctx, const fa_graph *g, fa_plan *p, const fa_apply_options *opt_in, const char *arch,
                        fa_apply_result **out)
{
    fa_status s = fa_cuda_driver_load(ctx);
    if (s) return fa_ctx_wrap(ctx, s, "cannot apply on cuda: ");
    fa_cuda_device_info dev;
    if ((s = fa_cuda_device_query(ctx, 0, &dev))) return fa_ctx_wrap(ctx, s, "cannot apply on cuda: ");
    char archbuf[16];
    if (!arch || !*arch) {
        snprintf(archbuf, sizeof archbuf, "sm_%d%d", dev.cc_major, dev.cc_minor);
        arch = archbuf;
    }
    uint64_t t0 = fa_now_ns();
    fa_apply_options opt;
    if (opt_in) opt = *opt_in;
    else fa_apply_options_default(&opt);
    if (opt.iters < 3) opt.iters = 3;
    if ((s = fa_apply_options_check(ctx, &opt))) return s;
    int *order = malloc(sizeof(int) * (size_t)(p->n_clusters + 1));
    if (!order) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    fa_value_map vm = {g, NULL};
    cubin_table kt = {p, NULL};
    fa_exec *cap = NULL;
    fa_graph *capg = NULL;
    fa_apply_result *res = calloc(1, sizeof *res);
    kt.e = calloc((size_t)p->n_clusters + 1, sizeof *kt.e);
    vm.vals = calloc((size_t)g->n_tensors + 1, sizeof *vm.vals);
    double *sa = malloc(sizeof(double) * (size_t)opt.iters), *sb = malloc(sizeof(double) * (size_t)opt.iters);
    int *extra = malloc(sizeof(int) * (size_t)(g->n_tensors + 1));
    if (!res || !kt.e || !vm.vals || !sa || !sb || !extra) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        goto done;
    }

    /* 1. Capture on the GPU: the unfused graph with every cluster boundary tensor as an output
     *    (as apply.c), inputs filled as the cpu applier fills them (same seed, same values). */
    int n_prop = fa_apply_select(p, &opt, order), done_n = 0; /* ranked, capped (judge.c) */
    int ne2 = fa_apply_boundary_tensors(g, p, extra);
    if (ne2 < 0) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        goto done;
    }
    s = fa_fused_graph_scoped(ctx, g, p, NULL, 0, false, false, -1, extra, ne2, &capg);
    if (!s) s = make_exec(ctx, capg, &kt, &cap);
    if (s) goto done;
    {
        s = fa_value_map_fill_inputs(ctx, &vm, opt.seed);
        for (int i = 0; i < g->n_inputs && !s; i++) s = fa_exec_set_input(ctx, cap, i, &vm.vals[g->inputs[i]]);
        if (!s) s = fa_exec_run(ctx, cap, NULL);
        for (int i = 0; i < capg->n_outputs && !s; i++) {
            int id = fa_graph_find_tensor(g, capg->tensors[capg->outputs[i]]->name);
            const fa_value *v = fa_exec_output(cap, i);
            if (id >= 0 && v && !vm.vals[id].data) s = fa_value_map_copy(ctx, &vm.vals[id], v);
        }
        if (s) goto done;
    }
    fa_exec_free(cap);
    cap = NULL;

    /* 2. Per cluster. */
    res->n_cluster_samples = opt.iters;
    res->cluster_ids = calloc((size_t)n_prop + 1, sizeof(int));
    res->cluster_unfused = calloc((size_t)(n_prop + 1) * (size_t)opt.iters, sizeof(double));
    res->cluster_fused = calloc((size_t)(n_prop + 1) * (size_t)opt.iters, sizeof(double));
    if (!res->cluster_ids || !res->cluster_unfused || !res->cluster_fused) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int k = 0; k < n_prop; k++) {
        int i = order[k];
        fa_cluster *c = &p->clusters[i];
        if (opt.progress) opt.progress(opt.progress_user, "apply", ++done_n, n_prop);
        if (fa_apply_budget_spent(p, c, &opt, t0)) continue;
        fa_ctx *cctx = fa_ctx_create();
        if (!cctx) {
            s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            goto done;
        }
        apply_cluster(cctx, g, p, i, &opt, arch, &kt, &vm, res, sa, sb);
        fa_ctx_free(cctx);
        if (c->status == FA_CLUSTER_ACCEPTED) {
            res->accepted++;
            res->predicted_saving_ns += c->est_saving_ns;
        } else {
            res->rejected++;
        }
    }

    /* 3. End to end on the GPU: every accepted cluster at once vs the unfused graph. */
    {
        fa_graph *gfull = NULL;
        fa_exec *eb = NULL, *efz = NULL;
        s = fa_fused_graph(ctx, g, p, NULL, 0, &gfull);
        if (!s) s = make_exec(ctx, g, &kt, &eb);
        if (!s) s = make_exec(ctx, gfull, &kt, &efz);
        for (int i = 0; i < g->n_inputs && !s; i++) s = fa_exec_set_input(ctx, eb, i, &vm.vals[g->inputs[i]]);
        if (!s) s = fa_value_map_set_inputs(ctx, efz, gfull, &vm);
        if (!s) s = fa_exec_run(ctx, eb, NULL);
        if (!s) s = fa_exec_run(ctx, efz, NULL);
        if (!s) {
            for (int o = 0; o < g->n_outputs; o++) {
                int k = out_index(gfull, g->tensors[g->outputs[o]]->name);
                if (k < 0) continue;
                double e = fa_apply_rel_error(fa_exec_output(efz, k), fa_exec_output(eb, o));
                if (e > res->e2e_max_rel_error) res->e2e_max_rel_error = e;
            }
            res->baseline_samples = malloc(sizeof(double) * (size_t)opt.iters);
            res->fused_samples = malloc(sizeof(double) * (size_t)opt.iters);
            if (!res->baseline_samples || !res->fused_samples) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        }
        if (!s) {
            runner rb = {.e = eb}, rf = {.e = efz};
            if (opt.progress) opt.progress(opt.progress_user, "e2e", 0, 1);
            s = fa_apply_bench_pair(ctx, run_once, &rb, &rf, opt.warmup, opt.iters, res->baseline_samples, res->fused_samples);
            if (opt.progress) opt.progress(opt.progress_user, "e2e", 1, 1);
        }
        if (!s) {
            res->n_samples = opt.iters;
            fa_sample_stats_of(res->baseline_samples, opt.iters, &res->baseline);
            fa_sample_stats_of(res->fused_samples, opt.iters, &res->fused);
            res->speedup = res->fused.median_ns > 0 ? res->baseline.median_ns / res->fused.median_ns : 0;
            res->measured_saving_ns = res->baseline.median_ns - res->fused.median_ns;
            res->peak_bytes_baseline = fa_exec_peak_bytes(eb);
            res->peak_bytes_fused = fa_exec_peak_bytes(efz);
            res->kernels_baseline = g->n_topo;
            res->kernels_fused = gfull->n_topo;
        } else {
            fa_ctx_wrap(ctx, s, "end-to-end fused model on cuda: ");
        }
        fa_exec_free(eb);
        fa_exec_free(efz);
        if (!s) res->fused_graph = gfull;
        else fa_graph_free(gfull);
    }
done:
    fa_exec_free(cap);
    fa_graph_free(capg);
    fa_value_map_free(&vm);
    if (kt.e)
        for (int i = 0; i < p->n_clusters; i++) free(kt.e[i].cubin);
    free(kt.e);
    free(sa);
    free(sb);
    free(extra);
    free(order);
    if (s) {
        fa_apply_result_free(res);
        return s;
    }
    *out = res;
    return FA_OK;
}

#endif
