/* bench/bench_dw_fusion — whether oneDNN's depthwise post-op pays on this machine: an inverted
 * residual block's expand 1x1 convolution + ReLU6 followed by its 3x3 depthwise convolution + ReLU6
 * (MobileNetV2's blocks at batch 1, nChw16c), run as the two primitives the fused plan runs today
 * against one 1x1 convolution carrying the depthwise one as its dw post-op
 * (dnnl_post_ops_append_dw: the expanded tensor never leaves the caches when oneDNN's 1x1 kernel
 * fuses it; otherwise oneDNN runs the two primitives itself, "ref_fused_convolution").
 * A oneDNN-only program: it measures the library's capability, not one of our kernels, to decide
 * whether the advisor should propose this fusion class (docs/fusion-rules.md). Weights and inputs
 * are fixed patterns (the timing does not depend on them); outputs are not compared.
 * Prints per shape the medians of the two forms (us, interleaved round by round), the
 * implementations oneDNN chose and the ratio (< 1: the fused form is faster), then the sums
 * weighted by how often MobileNetV2 has each block.
 * Usage: OMP_NUM_THREADS=2 bench_dw_fusion [--reps R]   (figures: bench/README.md "Depthwise post-op") */
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        dnnl_status_t s_ = (x);                                                                                        \
        if (s_ != dnnl_success) {                                                                                      \
            fprintf(stderr, "bench_dw_fusion: %s failed (%d)\n", #x, (int)s_);                                       \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

typedef struct block {
    int cin, cexp, hw, stride, count; /* count: how many of MobileNetV2's blocks have this shape */
} block;

/* torchvision's mobilenet_v2 at 224²: features.2 .. features.17's expand + depthwise pairs */
static const block k_blocks[] = {
    {16, 96, 112, 2, 1}, {24, 144, 56, 1, 1}, {24, 144, 56, 2, 1}, {32, 192, 28, 1, 2}, {32, 192, 28, 2, 1},
    {64, 384, 14, 1, 4}, {96, 576, 14, 1, 2}, {96, 576, 14, 2, 1}, {160, 960, 7, 1, 3},
};

static dnnl_engine_t g_eng;
static dnnl_stream_t g_st;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* A memory of md filled with a small repeating pattern (no denormals, no zeros). */
static dnnl_memory_t filled(const dnnl_memory_desc_t *md, float scale)
{
    dnnl_memory_t m;
    void *p;
    CHECK(dnnl_memory_create(&m, md, g_eng, DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_get_data_handle(m, &p));
    size_t n = dnnl_memory_desc_get_size(md) / sizeof(float);
    for (size_t i = 0; i < n; i++) ((float *)p)[i] = scale * (float)(i % 7 + 1) / 7.f;
    return m;
}

static const dnnl_memory_desc_t *arg_md(const_dnnl_primitive_desc_t pd, int arg)
{
    return dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
}

typedef struct prim {
    dnnl_primitive_t p;
    dnnl_exec_arg_t args[6];
    int n;
    const char *impl;
} prim;

static void run(const prim *p)
{
    CHECK(dnnl_primitive_execute(p->p, g_st, p->n, p->args));
    CHECK(dnnl_stream_wait(g_st));
}

static void make(prim *p, dnnl_primitive_desc_t pd)
{
    CHECK(dnnl_primitive_create(&p->p, pd));
    CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &p->impl));
}

static dnnl_primitive_attr_t attr_of(int dw_stride)
{
    dnnl_post_ops_t po;
    dnnl_primitive_attr_t at;
    CHECK(dnnl_post_ops_create(&po));
    CHECK(dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_clip, 0.f, 6.f));
    if (dw_stride > 0) { /* the depthwise 3x3 (padding 1) and its own ReLU6 after the 1x1 */
        CHECK(dnnl_post_ops_append_dw(po, dnnl_f32, dnnl_f32, dnnl_f32, 3, dw_stride, 1, 0, 0, NULL));
        CHECK(dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_clip, 0.f, 6.f));
    }
    CHECK(dnnl_primitive_attr_create(&at));
    CHECK(dnnl_primitive_attr_set_post_ops(at, po));
    CHECK(dnnl_post_ops_destroy(po));
    return at;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Medians (ns) of the two forms of block b over reps interleaved rounds. */
static void bench_block(const block *b, int reps, double *sep_ns, double *fused_ns, const char **impl_sep,
                        const char **impl_dw, const char **impl_fused)
{
    int ho = (b->hw + 2 - 3) / b->stride + 1, pad_r = (ho - 1) * b->stride + 3 - b->hw - 1;
    dnnl_dims_t sd = {1, b->cin, b->hw, b->hw}, w1d = {b->cexp, b->cin, 1, 1}, ed = {1, b->cexp, b->hw, b->hw};
    dnnl_dims_t wdd = {b->cexp, 1, 1, 3, 3}, od = {1, b->cexp, ho, ho}, bd = {b->cexp};
    dnnl_dims_t one = {1, 1}, zero = {0, 0}, stride = {b->stride, b->stride}, pad_l = {1, 1}, pad_rr = {pad_r, pad_r};
    dnnl_memory_desc_t src_md, w1_md, e_md, wd_md, o_md, b_md;
    CHECK(dnnl_memory_desc_init_by_tag(&src_md, 4, sd, dnnl_f32, dnnl_nChw16c));
    CHECK(dnnl_memory_desc_init_by_tag(&w1_md, 4, w1d, dnnl_f32, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&e_md, 4, ed, dnnl_f32, dnnl_nChw16c));
    CHECK(dnnl_memory_desc_init_by_tag(&wd_md, 5, wdd, dnnl_f32, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&o_md, 4, od, dnnl_f32, dnnl_nChw16c));
    CHECK(dnnl_memory_desc_init_by_tag(&b_md, 1, bd, dnnl_f32, dnnl_x));
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd1, pd2, pdf;
    dnnl_primitive_attr_t a_plain = attr_of(0), a_dw = attr_of(b->stride);
    CHECK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &src_md, &w1_md, &b_md,
                                             &e_md, one, zero, zero));
    CHECK(dnnl_primitive_desc_create(&pd1, &cd, a_plain, g_eng, NULL));
    CHECK(dnnl_primitive_desc_create(&pdf, &cd, a_dw, g_eng, NULL));
    CHECK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &e_md, &wd_md, &b_md,
                                             &o_md, stride, pad_l, pad_rr));
    CHECK(dnnl_primitive_desc_create(&pd2, &cd, a_plain, g_eng, NULL));
    CHECK(dnnl_primitive_attr_destroy(a_plain));
    CHECK(dnnl_primitive_attr_destroy(a_dw));
    prim p1, p2, pf;
    make(&p1, pd1);
    make(&p2, pd2);
    make(&pf, pdf);
    dnnl_memory_t src = filled(&src_md, 0.5f), e = filled(arg_md(pd1, DNNL_ARG_DST), 0.f);
    dnnl_memory_t o = filled(arg_md(pd2, DNNL_ARG_DST), 0.f), of = filled(arg_md(pdf, DNNL_ARG_DST), 0.f);
    dnnl_memory_t w1 = filled(arg_md(pd1, DNNL_ARG_WEIGHTS), 0.01f), bias1 = filled(&b_md, 0.1f);
    dnnl_memory_t wd = filled(arg_md(pd2, DNNL_ARG_WEIGHTS), 0.1f), biasd = filled(&b_md, 0.1f);
    dnnl_memory_t w1f = filled(arg_md(pdf, DNNL_ARG_WEIGHTS), 0.01f);
    dnnl_memory_t wdf = filled(arg_md(pdf, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS), 0.1f);
    dnnl_memory_t bdf = filled(arg_md(pdf, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS), 0.1f);
    p1.n = p2.n = 4;
    p1.args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, src};
    p1.args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, w1};
    p1.args[2] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, bias1};
    p1.args[3] = (dnnl_exec_arg_t){DNNL_ARG_DST, e};
    p2.args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, e};
    p2.args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, wd};
    p2.args[2] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, biasd};
    p2.args[3] = (dnnl_exec_arg_t){DNNL_ARG_DST, o};
    pf.n = 6;
    pf.args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, src};
    pf.args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, w1f};
    pf.args[2] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, bias1};
    pf.args[3] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, wdf};
    pf.args[4] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, bdf};
    pf.args[5] = (dnnl_exec_arg_t){DNNL_ARG_DST, of};
    double *ts = malloc(sizeof(double) * (size_t)reps), *tf = malloc(sizeof(double) * (size_t)reps);
    if (!ts || !tf) exit(1);
    for (int i = 0; i < 20; i++) { /* warm-up */
        run(&p1);
        run(&p2);
        run(&pf);
    }
    for (int i = 0; i < reps; i++) { /* the order alternating, so drift hits both */
        double t0 = now_ns();
        if (i & 1) run(&pf);
        else run(&p1), run(&p2);
        double t1 = now_ns();
        if (i & 1) run(&p1), run(&p2);
        else run(&pf);
        double t2 = now_ns();
        ts[i] = i & 1 ? t2 - t1 : t1 - t0;
        tf[i] = i & 1 ? t1 - t0 : t2 - t1;
    }
    qsort(ts, (size_t)reps, sizeof *ts, cmp_double);
    qsort(tf, (size_t)reps, sizeof *tf, cmp_double);
    *sep_ns = ts[reps / 2];
    *fused_ns = tf[reps / 2];
    *impl_sep = p1.impl;
    *impl_dw = p2.impl;
    *impl_fused = pf.impl;
    free(ts);
    free(tf);
    /* the primitives and memories live to the process's end: their impl strings are printed */
}

int main(int argc, char **argv)
{
    int reps = 301;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_dw_fusion [--reps R]\n");
            return 2;
        }
    }
    if (reps < 3) reps = 3;
    CHECK(dnnl_engine_create(&g_eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&g_st, g_eng, dnnl_stream_default_flags));
    printf("%-28s %10s %10s %6s  %s\n", "1x1 -> depthwise 3x3", "two (us)", "dw op (us)", "ratio", "oneDNN's implementations");
    double sum_sep = 0, sum_fused = 0;
    for (size_t k = 0; k < sizeof k_blocks / sizeof k_blocks[0]; k++) {
        const block *b = &k_blocks[k];
        double s, f;
        const char *i1, *i2, *iff;
        bench_block(b, reps, &s, &f, &i1, &i2, &iff);
        char name[64];
        snprintf(name, sizeof name, "%d->%d @%d², s%d (x%d)", b->cin, b->cexp, b->hw, b->stride, b->count);
        printf("%-28s %10.1f %10.1f %6.2f  %s + %s | %s\n", name, s / 1e3, f / 1e3, f / s, i1, i2, iff);
        sum_sep += s * b->count;
        sum_fused += f * b->count;
    }
    printf("%-28s %10.1f %10.1f %6.2f\n", "MobileNetV2's 16 blocks", sum_sep / 1e3, sum_fused / 1e3, sum_fused / sum_sep);
    return 0;
}
