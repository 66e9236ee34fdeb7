/* tests/e2e/test_verify_bound — the verification bound of fused kernels that reassociate a
 * reduction (applier/bound.c): on one Conv + BN + residual Add + Relu cluster (K = 64·3·3 = 576),
 * a correct result summed in another order passes — also where a residual add cancels the conv
 * and the old relative-error rule rejected it — while a perturbed weight, a wrong bias and a
 * dropped post-op are rejected, both against the bound directly and through fa_apply with real
 * fused kernels. Equal infinities (a masked attention score) and NaN on both sides agree; a NaN
 * or an infinity on one side only does not. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor/advisor.h"
#include "applier/applier-impl.h"
#include "applier/applier.h"
#include "runtime/runtime-impl.h"
#include "runtime/runtime.h"
#include "testutil.h"

enum { N = 1, CI = 64, H = 10, W_ = 10, CO = 16, KH = 3, KW = 3 };
#define NX (N * CI * H * W_)
#define NY (N * CO * H * W_)
#define NW (CO * CI * KH * KW)

typedef struct params {
    float w[NW], b[CO], scale[CO], shift[CO], mean[CO], var[CO];
} params;

static void make_params(params *p)
{
    fa_rng r;
    fa_rng_seed(&r, 7);
    for (int i = 0; i < NW; i++) p->w[i] = fa_rng_uniform(&r, -0.5f, 0.5f);
    for (int o = 0; o < CO; o++) {
        p->b[o] = fa_rng_uniform(&r, -0.5f, 0.5f);
        p->scale[o] = fa_rng_uniform(&r, 0.5f, 1.5f);
        p->shift[o] = fa_rng_uniform(&r, -0.5f, 0.5f);
        p->mean[o] = fa_rng_uniform(&r, -0.5f, 0.5f);
        p->var[o] = fa_rng_uniform(&r, 0.5f, 1.5f);
    }
}

static void add_const(fa_ctx *ctx, fa_graph *g, const char *name, int rank, const int64_t *dims, const float *data, int n)
{
    int t = fa_graph_tensor(g, name);
    fa_tensor_set_shape(g->tensors[t], FA_DTYPE_FLOAT, rank, dims);
    assert_int_equal(fa_tensor_set_data(ctx, g->tensors[t], data, sizeof(float) * (size_t)n), FA_OK);
    g->tensors[t]->flags |= FA_TENSOR_INITIALIZER;
}

/* x -> Conv(W, b) -> BatchNormalization -> Add(skip) -> Relu -> y */
static fa_graph *conv_bn_add_relu(fa_ctx *ctx, const params *p)
{
    fa_graph *g = fa_graph_create("conv_bn_add_relu");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[4] = {N, CI, H, W_}, yd[4] = {N, CO, H, W_}, wd[4] = {CO, CI, KH, KW}, cd[1] = {CO};
    int x = fa_graph_tensor(g, "x"), skip = fa_graph_tensor(g, "skip");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 4, xd);
    fa_tensor_set_shape(g->tensors[skip], FA_DTYPE_FLOAT, 4, yd);
    fa_graph_add_input(ctx, g, x);
    fa_graph_add_input(ctx, g, skip);
    add_const(ctx, g, "w", 4, wd, p->w, NW);
    add_const(ctx, g, "b", 1, cd, p->b, CO);
    add_const(ctx, g, "scale", 1, cd, p->scale, CO);
    add_const(ctx, g, "shift", 1, cd, p->shift, CO);
    add_const(ctx, g, "mean", 1, cd, p->mean, CO);
    add_const(ctx, g, "var", 1, cd, p->var, CO);
    const char *i1[] = {"x", "w", "b"}, *o1[] = {"c"}, *i2[] = {"c", "scale", "shift", "mean", "var"}, *o2[] = {"n"};
    const char *i3[] = {"n", "skip"}, *o3[] = {"s"}, *i4[] = {"s"}, *o4[] = {"y"};
    int64_t pads[4] = {1, 1, 1, 1};
    fa_node *conv = fa_graph_add_node(ctx, g, "conv", "Conv", "", 3, i1, 1, o1);
    fa_node_add_attr_ints(g, conv, "pads", pads, 4);
    fa_graph_add_node(ctx, g, "bn", "BatchNormalization", "", 5, i2, 1, o2);
    fa_graph_add_node(ctx, g, "add", "Add", "", 2, i3, 1, o3);
    fa_graph_add_node(ctx, g, "relu", "Relu", "", 1, i4, 1, o4);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    fa_status s = fa_graph_prepare(ctx, g, NULL);
    if (s) fail_msg("%s", fa_ctx_errmsg(ctx));
    return g;
}

typedef enum { OK_RESULT, BAD_WEIGHT, BAD_BIAS, NO_RELU } variant;

/* BN(conv(x)) in double: the BN input before the residual add. */
static void conv_bn_exact(const params *p, const float *x, variant v, double *n_out)
{
    int wmax = 0;
    for (int i = 1; i < NW; i++)
        if (fabsf(p->w[i]) > fabsf(p->w[wmax])) wmax = i;
    double bmax = 0;
    for (int o = 0; o < CO; o++) bmax = fmax(bmax, fabs(p->b[o]));
    for (int o = 0; o < CO; o++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W_; j++) {
                double acc = p->b[o] + (v == BAD_BIAS && o == 0 ? 0.05 * bmax : 0);
                for (int c = 0; c < CI; c++)
                    for (int ki = 0; ki < KH; ki++)
                        for (int kj = 0; kj < KW; kj++) {
                            int ii = i + ki - 1, jj = j + kj - 1;
                            if (ii < 0 || jj < 0 || ii >= H || jj >= W_) continue;
                            int wi = ((o * CI + c) * KH + ki) * KW + kj;
                            double w = p->w[wi] * (v == BAD_WEIGHT && wi == wmax ? 1.1 : 1.0);
                            acc += w * x[(c * H + ii) * W_ + jj];
                        }
                n_out[(o * H + i) * W_ + j] =
                    (acc - p->mean[o]) / sqrt((double)p->var[o] + 1e-5) * p->scale[o] + p->shift[o];
            }
}

/* The unfused graph on the executor (y) and its magnitude graph's bound for inputs x, skip. */
static void run_unfused(fa_ctx *ctx, fa_graph *g, const float *x, const float *skip, float *y, fa_apply_bound *bd, float *mag)
{
    fa_graph *gm = NULL;
    char why[300];
    assert_int_equal(fa_apply_bound_graph(ctx, g, bd, &gm, why, sizeof why), FA_OK);
    if (!gm) fail_msg("no bound: %s", why);
    assert_true(bd->applies);
    assert_true(bd->depth >= CI * KH * KW); /* the conv's 576 terms at least */
    fa_value vx = {(void *)x, FA_DTYPE_FLOAT, 4, {N, CI, H, W_}}, vs = {(void *)skip, FA_DTYPE_FLOAT, 4, {N, CO, H, W_}};
    const fa_graph *gs[2] = {g, gm};
    for (int k = 0; k < 2; k++) {
        fa_exec *e = NULL;
        fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2};
        assert_int_equal(fa_exec_create(ctx, gs[k], &eo, &e), FA_OK);
        assert_int_equal(fa_exec_set_input(ctx, e, 0, &vx), FA_OK);
        assert_int_equal(fa_exec_set_input(ctx, e, 1, &vs), FA_OK);
        assert_int_equal(fa_exec_run(ctx, e, NULL), FA_OK);
        const fa_value *o = fa_exec_output(e, 0);
        assert_int_equal(fa_value_numel(o), NY);
        memcpy(k ? mag : y, o->data, sizeof(float) * NY);
        fa_exec_free(e);
    }
    fa_graph_free(gm);
}

static double ratio_of(const float *fused, const float *unfused, const float *mag, const fa_apply_bound *bd)
{
    fa_value vf = {(void *)fused, FA_DTYPE_FLOAT, 4, {N, CO, H, W_}}, vu = {(void *)unfused, FA_DTYPE_FLOAT, 4, {N, CO, H, W_}};
    fa_value vm = {(void *)mag, FA_DTYPE_FLOAT, 4, {N, CO, H, W_}};
    int64_t at;
    return fa_apply_bound_ratio(&vf, &vu, &vm, bd, &at);
}

/* The shortcut against |unfused| (no magnitudes run) for the same values: never below the full
 * ratio, so that it accepts only what the full check accepts. */
static double quick_ratio_of(const float *fused, const float *unfused, const fa_apply_bound *bd)
{
    fa_value vf = {(void *)fused, FA_DTYPE_FLOAT, 4, {N, CO, H, W_}}, vu = {(void *)unfused, FA_DTYPE_FLOAT, 4, {N, CO, H, W_}};
    int64_t at;
    return fa_apply_bound_ratio_unfused(&vf, &vu, bd, &at);
}

static double rel_error(const float *a, const float *b)
{
    fa_value va = {(void *)a, FA_DTYPE_FLOAT, 4, {N, CO, H, W_}}, vb = {(void *)b, FA_DTYPE_FLOAT, 4, {N, CO, H, W_}};
    return fa_apply_rel_error(&va, &vb);
}

/* "fused" = the exact result rounded once to float (the most accurate reassociation there is),
 * or the exact result of a defective kernel. */
static void fused_result(const params *p, const float *x, const float *skip, variant v, float *out)
{
    double *n = malloc(sizeof(double) * NY);
    conv_bn_exact(p, x, v, n);
    for (int i = 0; i < NY; i++) {
        double s = n[i] + skip[i];
        out[i] = (float)(v == NO_RELU ? s : (s > 0 ? s : 0));
    }
    free(n);
}

/* The conv cluster's case: params and graph, inputs x and skip uniform in [-1, 1) from r (seeded
 * with seed), the unfused result y, its bound bd and the magnitudes mag. Static storage: one case
 * at a time. */
typedef struct conv_case {
    params p;
    fa_graph *g;
    float x[NX], skip[NY], y[NY], mag[NY];
    fa_apply_bound bd;
} conv_case;

static conv_case *conv_case_make(fa_ctx *ctx, uint64_t seed, fa_rng *r)
{
    static conv_case c;
    make_params(&c.p);
    c.g = conv_bn_add_relu(ctx, &c.p);
    fa_rng_seed(r, seed);
    for (int i = 0; i < NX; i++) c.x[i] = fa_rng_uniform(r, -1, 1);
    for (int i = 0; i < NY; i++) c.skip[i] = fa_rng_uniform(r, -1, 1);
    run_unfused(ctx, c.g, c.x, c.skip, c.y, &c.bd, c.mag);
    return &c;
}

static void test_correct_reassociation_passes_and_defects_are_rejected(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_rng r;
    conv_case *cc = conv_case_make(ctx, 11, &r);
    params p = cc->p;
    fa_graph *g = cc->g;
    float *x = cc->x, *skip = cc->skip, *y = cc->y, *mag = cc->mag;
    static float f[NY];
    fa_apply_bound bd = cc->bd;
    printf("depth %lld, lambda %.2f, gamma %.3g (deterministic gamma_n %.3g)\n", (long long)bd.depth, bd.lambda, bd.gamma,
           bd.gamma_det);

    fused_result(&p, x, skip, OK_RESULT, f);
    double ok = ratio_of(f, y, mag, &bd), ok_quick = quick_ratio_of(f, y, &bd);
    printf("correct, other summation order: %.3g of the bound, %.3g of its |unfused| form (relative error %.3g)\n", ok,
           ok_quick, rel_error(f, y));
    assert_true(ok <= 1.0);
    assert_true(ok_quick >= ok);
    static const char *const names[] = {"", "weight of largest magnitude +10%", "bias[0] + 5% of max|bias|", "Relu dropped"};
    for (variant v = BAD_WEIGHT; v <= NO_RELU; v++) {
        fused_result(&p, x, skip, v, f);
        double bad = ratio_of(f, y, mag, &bd), bad_quick = quick_ratio_of(f, y, &bd);
        printf("defect (%s): %.3g times the bound, %.3g times its |unfused| form\n", names[v], bad, bad_quick);
        assert_true(bad > 1.0);
        assert_true(bad_quick >= bad); /* the shortcut lets no defect through */
    }

    /* A residual add that cancels the conv: y is small while the terms are not. The old rule
     * (relative error <= 1e-5) rejected a correct result there; the componentwise bound does not. */
    double *n = malloc(sizeof(double) * NY);
    conv_bn_exact(&p, x, OK_RESULT, n);
    for (int i = 0; i < NY; i++) skip[i] = (float)(-n[i] + 1e-4 * fa_rng_uniform(&r, -1, 1));
    free(n);
    run_unfused(ctx, g, x, skip, y, &bd, mag);
    fused_result(&p, x, skip, OK_RESULT, f);
    double rel = rel_error(f, y), canc = ratio_of(f, y, mag, &bd), canc_quick = quick_ratio_of(f, y, &bd);
    printf("cancelling residual: relative error %.3g, %.3g of the bound, %.3g of its |unfused| form\n", rel, canc,
           canc_quick);
    assert_true(rel > 1e-5);
    assert_true(canc <= 1.0);
    /* near cancellation |unfused| is far below M: the shortcut cannot decide, the magnitudes do */
    assert_true(canc_quick > 1.0);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* g's plan on cpu (no gate) and in *epi the index of its (last) proposed epilogue cluster; fails
 * the test when there is none. */
static fa_plan *advise_epilogue(fa_ctx *ctx, fa_graph *g, int *epi)
{
    fa_advise_options ao = {0};
    ao.target = FA_TARGET_CPU;
    ao.no_gate = true;
    fa_plan *plan = NULL;
    assert_int_equal(fa_advise(ctx, g, NULL, &ao, &plan), FA_OK);
    *epi = -1;
    for (int i = 0; i < plan->n_clusters; i++)
        if (plan->clusters[i].kind == FA_CLUSTER_EPILOGUE && plan->clusters[i].status == FA_CLUSTER_PROPOSED) *epi = i;
    if (*epi < 0) fail_msg("%s: no epilogue cluster proposed", g->name);
    return plan;
}

/* Apply options for a test: 3 iterations after 1 warm-up, 2 threads, the test's kernel cache. */
static void apply_options_small(fa_apply_options *opt)
{
    fa_apply_options_default(opt);
    opt->iters = 3;
    opt->warmup = 1;
    opt->threads = 2;
    opt->cache_dir = fa_test_path(fa_test_tmpdir(), "kcache");
}

/* The same cluster through fa_apply (oneDNN's fused convolution against the unfused ops),
 * correct and with each defect injected; the loosest tolerance does not let a defect through
 * (the bound, not the tolerance, verifies a reduction). */
static void test_apply_rejects_each_defect_on_the_conv_cluster(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    static params p;
    make_params(&p);
    for (int d = FA_APPLY_DEFECT_COUNT; d >= FA_APPLY_DEFECT_ADD_ONE; d--) { /* COUNT: none */
        fa_graph *g = conv_bn_add_relu(ctx, &p);
        int epi;
        fa_plan *plan = advise_epilogue(ctx, g, &epi);
        fa_apply_options opt;
        apply_options_small(&opt);
        opt.tolerance = FA_APPLY_TOLERANCE_MAX;
        opt.inject_wrong_cluster = d == FA_APPLY_DEFECT_COUNT ? -1 : plan->clusters[epi].id;
        opt.inject_defect = d == FA_APPLY_DEFECT_COUNT ? FA_APPLY_DEFECT_ADD_ONE : (fa_apply_defect)d;
        fa_apply_result *res = NULL;
        if (fa_apply(ctx, g, plan, &opt, &res)) fail_msg("apply: %s", fa_ctx_errmsg(ctx));
        const fa_cluster *c = &plan->clusters[epi];
        const fa_cluster_verdict *v = &res->verdicts[epi]; /* the applier's record of it */
        printf("defect %d: %s %s (relative error %.3g): %s\n", d, c->label, fa_cluster_status_name(v->status),
               v->max_rel_error, v->reason);
        if (d == FA_APPLY_DEFECT_COUNT) {
            assert_true(v->status != FA_CLUSTER_REJECTED_VERIFY && v->status != FA_CLUSTER_REJECTED_ERROR);
            /* verified by the bound; a cluster the end-to-end back-off dropped afterwards (a loaded
             * machine can make the one-cluster model not measurably faster) says that instead */
            if (!strstr(v->reason, "end-to-end back-off")) assert_non_null(strstr(v->reason, "within the rounding-error bound"));
        } else {
            assert_int_equal(v->status, FA_CLUSTER_REJECTED_VERIFY);
            assert_non_null(strstr(v->reason, "beyond the rounding error"));
        }
        fa_apply_result_free(res);
        fa_plan_free(plan);
        fa_graph_free(g);
    }
    fa_ctx_free(ctx);
}

/* Equal infinities and NaN on both sides are agreement, in the bound and in the relative error:
 * the difference of two equal infinities is NaN, which rejected every MatMul + attention-mask Add
 * of a Hugging Face BERT ("differs by 0, inf times the bound"). One-sided NaN or infinity is not. */
static void test_equal_infinities_agree_one_sided_ones_do_not(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_rng r;
    conv_case *cc = conv_case_make(ctx, 13, &r);
    params p = cc->p;
    fa_graph *g = cc->g;
    float *x = cc->x, *skip = cc->skip, *y = cc->y, *mag = cc->mag;
    static float f[NY];
    fa_apply_bound bd = cc->bd;
    fused_result(&p, x, skip, OK_RESULT, f);
    assert_true(ratio_of(f, y, mag, &bd) <= 1.0);
    double rel0 = rel_error(f, y);
    for (int i = 0; i < NY; i += 7) { /* masked positions: -inf on both sides, the magnitude +inf */
        f[i] = y[i] = -INFINITY;
        mag[i] = INFINITY;
    }
    f[3] = y[3] = NAN;
    mag[3] = NAN;
    double ok = ratio_of(f, y, mag, &bd), rel = rel_error(f, y);
    printf("equal infinities and NaNs: %.3g of the bound, relative error %.3g (%.3g without them)\n", ok, rel, rel0);
    assert_true(ok <= 1.0);
    assert_true(isfinite(rel) && rel <= 10 * rel0 + 1e-7);
    float keep = f[7];
    f[7] = INFINITY; /* +inf against -inf: no bound (NaN: the magnitude is infinite) or beyond it */
    assert_false(ratio_of(f, y, mag, &bd) <= 1.0);
    assert_true(isinf(rel_error(f, y)));
    f[7] = keep;
    f[1] = NAN; /* NaN against a finite value */
    assert_true(isinf(ratio_of(f, y, mag, &bd)));
    assert_true(isinf(rel_error(f, y)));
    f[1] = -INFINITY; /* -inf against a finite value */
    assert_true(ratio_of(f, y, mag, &bd) > 1.0);
    assert_true(isinf(rel_error(f, y)));
    f[1] = y[1];

    /* float32's lowest as a mask (Hugging Face's finfo.min fill) does not scale the other
     * elements' errors down: a wrong ordinary element still fails the tolerance */
    for (int i = 0; i < NY; i += 7) f[i] = y[i] = -FLT_MAX;
    double rel_mask = rel_error(f, y);
    printf("float32-lowest mask: relative error %.3g\n", rel_mask);
    assert_true(rel_mask <= 10 * rel0 + 1e-7);
    float was = f[2];
    f[2] = y[2] + 0.5f; /* 0.5 off on an ordinary element */
    assert_true(rel_error(f, y) > 1e-3);
    f[2] = was;
    f[14] = -FLT_MAX * 0.5f; /* a sentinel half off */
    assert_true(rel_error(f, y) > 0.4);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* x[1,S,K] -> MatMul(W) -> Add(mask) -> y, the mask -inf on half its keys (an additive attention
 * mask): through fa_apply the MatMul + Add epilogue passes verification (its masked outputs are
 * -inf in both the fused and the unfused result). */
/* The scans split into stretches over the team (FA_APPLY_SCAN_STRETCH) give one pass's answer:
 * the same ratio and the same first worst element wherever the worst, a one-sided NaN or
 * infinity, an overflowed magnitude or a sentinel lies, across stretch boundaries. The one-pass
 * references below are the scans' definitions written out again. */
static double ref_bound(const float *f, const float *g, const float *m, int64_t n, double scale, double floor_abs, int64_t *worst)
{
    double w = 0;
    *worst = -1;
    for (int64_t i = 0; i < n; i++) {
        double a = f[i], b = g[i];
        if (m) {
            if (a == b || (isnan(a) && isnan(b))) continue;
            double d = fabs(a - b);
            if (isnan(d)) { *worst = i; return INFINITY; }
            if (!isfinite((double)m[i])) return NAN;
            double r = d / (scale * m[i] + floor_abs);
            if (r > w) { w = r; *worst = i; }
        } else {
            if (a == b) continue;
            double d = fabs(a - b);
            if (!isfinite(d) || !isfinite(b)) { *worst = i; return INFINITY; }
            double r = d / (scale * fabs(b) + floor_abs);
            if (r > w) { w = r; *worst = i; }
        }
    }
    return w;
}

static void test_stretched_scans_match_one_pass(void **state)
{
    (void)state;
    const int64_t n = 5 * FA_APPLY_SCAN_STRETCH + 777; /* six stretches, the last short */
    float *f = malloc(sizeof(float) * (size_t)n), *g = malloc(sizeof(float) * (size_t)n), *m = malloc(sizeof(float) * (size_t)n);
    assert_non_null(f);
    assert_non_null(g);
    assert_non_null(m);
    fa_apply_bound bd = {.applies = true, .depth = 64, .gamma = 1e-6, .gamma_det = 4e-6};
    const double u = ldexp(1.0, -24);
    double scale_full = 2.0 * bd.gamma / fmax(1.0 - 2.0 * 64 * u, 0.5), scale_quick = 2.0 * bd.gamma / (1.0 + bd.gamma_det);
    double floor_abs = 2.0 * 64 * ldexp(1.0, -149);
    fa_value vf = {f, FA_DTYPE_FLOAT, 1, {n}}, vg = {g, FA_DTYPE_FLOAT, 1, {n}}, vm = {m, FA_DTYPE_FLOAT, 1, {n}};
    /* cases: 0 plain noise; 1 two equal worst elements in stretches 1 and 4 (the first wins);
     * 2 a NaN in stretch 3 after a larger ratio in stretch 1; 3 an overflowed magnitude in
     * stretch 2; 4 an infinity on one side in the last stretch; 5 a sentinel in stretch 4 */
    for (int c = 0; c < 6; c++) {
        uint64_t st = 12345 + (uint64_t)c;
        for (int64_t i = 0; i < n; i++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            float x = (float)((int)(st >> 40) % 2001 - 1000) / 100.0f;
            g[i] = x;
            f[i] = (st >> 20) % 3 == 0 ? x : nextafterf(x, 100.0f);
            m[i] = fabsf(x) + 1.0f;
        }
        int64_t s1 = FA_APPLY_SCAN_STRETCH + 5, s4 = 4 * FA_APPLY_SCAN_STRETCH + 9;
        if (c == 1 || c == 2) g[s1] = 1.0f, f[s1] = 1.5f, m[s1] = 1.0f;
        if (c == 1) g[s4] = 1.0f, f[s4] = 1.5f, m[s4] = 1.0f;
        if (c == 2) f[3 * FA_APPLY_SCAN_STRETCH + 1] = NAN;
        if (c == 3) m[2 * FA_APPLY_SCAN_STRETCH + 3] = INFINITY;
        if (c == 4) f[n - 3] = INFINITY;
        if (c == 5) g[s4] = 0x1p110f, f[s4] = 0x1p110f * 1.25f;
        int64_t w_ref, w;
        double r_ref = ref_bound(f, g, m, n, scale_full, floor_abs, &w_ref);
        double r = fa_apply_bound_ratio(&vf, &vg, &vm, &bd, &w);
        if (isnan(r_ref)) assert_true(isnan(r));
        else {
            assert_true(r == r_ref);
            assert_int_equal(w, w_ref);
        }
        r_ref = ref_bound(f, g, NULL, n, scale_quick, floor_abs, &w_ref);
        r = fa_apply_bound_ratio_unfused(&vf, &vg, &bd, &w);
        assert_true(r == r_ref);
        assert_int_equal(w, w_ref);
        if (c == 1) assert_int_equal(w, s1); /* the first of two equal worst elements */
        /* the relative error: max |f - g| over max ordinary |g|, a sentinel its own */
        double md = 0, mb = 0, rs = 0;
        bool bad = false;
        for (int64_t i = 0; i < n; i++) {
            double a = f[i], b = g[i];
            if (fabs(b) < 0x1p100 && fabs(b) > mb) mb = fabs(b);
            if (a == b || (isnan(a) && isnan(b))) continue;
            double d = fabs(a - b);
            if (!isfinite(d)) { bad = true; break; }
            if (fabs(b) >= 0x1p100) rs = fmax(rs, d / fabs(b));
            else md = fmax(md, d);
        }
        double e_ref = bad ? INFINITY : fmax(md / fmax(mb, 1e-12), rs);
        assert_true(fa_apply_rel_error(&vf, &vg) == e_ref);
        if (c == 5) assert_true(e_ref >= 0.25); /* the sentinel's own relative error decides */
    }
    free(f);
    free(g);
    free(m);
}

static void test_apply_masked_matmul_add_is_verified(void **state)
{
    (void)state;
    enum { S = 8, K = 32, M = 16 };
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("masked_matmul_add");
    fa_graph_set_opset(ctx, g, "", 17);
    int64_t xd[3] = {1, S, K}, wd[2] = {K, M}, md[3] = {1, 1, M};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 3, xd);
    fa_graph_add_input(ctx, g, x);
    static float w[K * M], mask[M];
    fa_rng r;
    fa_rng_seed(&r, 17);
    for (int i = 0; i < K * M; i++) w[i] = fa_rng_uniform(&r, -0.5f, 0.5f);
    for (int j = 0; j < M; j++) mask[j] = j % 2 ? -INFINITY : 0.0f;
    add_const(ctx, g, "w", 2, wd, w, K * M);
    add_const(ctx, g, "mask", 3, md, mask, M);
    const char *i1[] = {"x", "w"}, *o1[] = {"scores"}, *i2[] = {"scores", "mask"}, *o2[] = {"y"};
    fa_graph_add_node(ctx, g, "matmul", "MatMul", "", 2, i1, 1, o1);
    fa_graph_add_node(ctx, g, "add_mask", "Add", "", 2, i2, 1, o2);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    if (fa_graph_prepare(ctx, g, NULL)) fail_msg("%s", fa_ctx_errmsg(ctx));
    int epi;
    fa_plan *plan = advise_epilogue(ctx, g, &epi);
    fa_apply_options opt;
    apply_options_small(&opt);
    fa_apply_result *res = NULL;
    if (fa_apply(ctx, g, plan, &opt, &res)) fail_msg("apply: %s", fa_ctx_errmsg(ctx));
    const fa_cluster_verdict *v = &res->verdicts[epi];
    printf("%s: %s (relative error %.3g): %s\n", plan->clusters[epi].label, fa_cluster_status_name(v->status),
           v->max_rel_error, v->reason);
    assert_true(v->status != FA_CLUSTER_REJECTED_VERIFY && v->status != FA_CLUSTER_REJECTED_ERROR);
    assert_true(isfinite(v->max_rel_error));
    fa_apply_result_free(res);
    fa_plan_free(plan);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* ---- every elementwise op has its rounding-error row (applier/bound.c, graph/op_math.h) ----
 * x[2,4] -> MatMul(w) -> OP(m, x1, ...) -> y for every registered elementwise/broadcast op of the
 * default domain whose output is float32 on float32 inputs: the magnitude graph is built (a rule,
 * or a written reason why the op has no first-order bound), never an error. An op added to the
 * registry without a BOUND in graph/op_math.h or a row in bound.c's k_mag_ops fails here, naming
 * the op. */
static fa_graph *matmul_then(fa_ctx *ctx, const char *op, int n_in)
{
    fa_graph *g = fa_graph_create(op);
    fa_graph_set_opset(ctx, g, "", 18);
    int64_t xd[2] = {2, 4}, wd[2] = {4, 4};
    float w[16];
    for (int i = 0; i < 16; i++) w[i] = 0.125f * (float)(i % 5) - 0.25f;
    char names[4][8] = {"x0", "x1", "x2", "x3"};
    for (int i = 0; i < n_in && i < 4; i++) {
        int t = fa_graph_tensor(g, names[i]);
        fa_tensor_set_shape(g->tensors[t], FA_DTYPE_FLOAT, 2, xd);
        fa_graph_add_input(ctx, g, t);
    }
    add_const(ctx, g, "w", 2, wd, w, 16);
    const char *mi[] = {"x0", "w"}, *mo[] = {"m"}, *oo[] = {"y"};
    const char *oi[4] = {"m", "x1", "x2", "x3"};
    fa_graph_add_node(ctx, g, "mm", "MatMul", "", 2, mi, 1, mo);
    fa_graph_add_node(ctx, g, "op", op, "", n_in, oi, 1, oo);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    return g;
}

static fa_node *node_named(fa_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i]->name, name)) return g->nodes[i];
    return NULL;
}

/* g (matmul_then) and its magnitude graph gm run on three draws of inputs in [-2, 2]: every finite
 * element's magnitude M is at least |y|·(1 - 2·depth·u)/(1 + γ_n), the premise of the shortcut
 * fa_apply_bound_ratio_unfused (its ratio never below fa_apply_bound_ratio's). Returns the
 * elements compared. */
static int magnitudes_dominate(fa_ctx *ctx, const fa_graph *g, const fa_graph *gm, int n_in, const fa_apply_bound *bd,
                               const char *op)
{
    const double u = ldexp(1.0, -24);
    double shrink = (1.0 - 2.0 * (double)bd->depth * u) / (1.0 + bd->gamma_det);
    fa_rng r;
    fa_rng_seed(&r, 7);
    int compared = 0;
    for (int draw = 0; draw < 3; draw++) {
        float x[4][8];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 8; j++) x[i][j] = (float)fa_rng_uniform(&r, -2, 2);
        float y[2][8];
        const fa_graph *gs[2] = {g, gm};
        for (int k = 0; k < 2; k++) {
            fa_exec *e = NULL;
            fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1};
            if (fa_exec_create(ctx, gs[k], &eo, &e)) fail_msg("%s: %s", op, fa_ctx_errmsg(ctx));
            for (int i = 0; i < n_in; i++) {
                fa_value v = {x[i], FA_DTYPE_FLOAT, 2, {2, 4}};
                assert_int_equal(fa_exec_set_input(ctx, e, i, &v), FA_OK);
            }
            if (fa_exec_run(ctx, e, NULL)) fail_msg("%s: %s", op, fa_ctx_errmsg(ctx));
            const fa_value *o = fa_exec_output(e, 0);
            assert_int_equal(fa_value_numel(o), 8);
            for (int j = 0; j < 8; j++) y[k][j] = (float)fa_load_as_double(o->data, o->dtype, j);
            fa_exec_free(e);
        }
        for (int j = 0; j < 8; j++) {
            if (!isfinite(y[0][j]) || !isfinite(y[1][j])) continue;
            if (!(y[1][j] >= fabs(y[0][j]) * shrink)) fail_msg("%s: M = %.9g below |y| = %.9g", op, y[1][j], fabs(y[0][j]));
            compared++;
        }
    }
    return compared;
}

static void test_every_elementwise_op_has_a_bound_row(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    int checked = 0, no_bound = 0, dominated = 0;
    for (int i = 0; fa_op_at(i); i++) {
        const fa_op *op = fa_op_at(i);
        if ((op->domain && op->domain[0]) || (op->pattern != FA_PATTERN_ELEMWISE && op->pattern != FA_PATTERN_BROADCAST))
            continue;
        int n_in = op->min_inputs < 1 ? 1 : op->min_inputs;
        if (n_in > 4) continue;
        fa_graph *g = matmul_then(ctx, op->name, n_in);
        if (fa_graph_prepare(ctx, g, NULL) || !fa_graph_out(g, node_named(g, "op"), 0) ||
            fa_graph_out(g, node_named(g, "op"), 0)->dtype != FA_DTYPE_FLOAT) {
            printf("  %s: skipped (%s)\n", op->name, fa_ctx_errmsg(ctx));
            fa_ctx_clear(ctx); /* not float32 on float32 inputs (or needs attributes): not a fusable member */
            fa_graph_free(g);
            continue;
        }
        fa_apply_bound bd;
        fa_graph *gm = NULL;
        char why[400];
        if (fa_apply_bound_graph(ctx, g, &bd, &gm, why, sizeof why))
            fail_msg("%s: %s", op->name, fa_ctx_errmsg(ctx));
        /* the dry build (the shortcut's) says the same of it, without the magnitudes */
        fa_apply_bound dry;
        char why_dry[400];
        if (fa_apply_bound_of(ctx, g, &dry, why_dry, sizeof why_dry)) fail_msg("%s: %s", op->name, fa_ctx_errmsg(ctx));
        assert_int_equal(dry.applies, bd.applies);
        assert_int_equal(dry.applies, gm != NULL);
        assert_int_equal(dry.depth, bd.depth);
        assert_true(dry.gamma == bd.gamma);
        assert_string_equal(why_dry, why);
        if (!gm) {
            no_bound++;
            printf("  %s: no bound (%s)\n", op->name, why);
            assert_non_null(strstr(why, op->name)); /* the reason names the op */
        } else {
            dominated += magnitudes_dominate(ctx, g, gm, n_in, &bd, op->name);
        }
        checked++;
        fa_graph_free(gm);
        fa_graph_free(g);
    }
    printf("%d elementwise ops checked, %d verified by relative error (no first-order bound), %d elements' magnitudes "
           "compared with |unfused|\n", checked, no_bound, dominated);
    assert_true(checked >= 40);
    assert_true(dominated >= 8 * (checked - no_bound)); /* 3 draws of 8 elements, most of them finite */
    assert_true(no_bound < checked / 2);
    fa_ctx_free(ctx);
}

/* An elementwise op the bound has no row for (Relu's registry entry under a name no table holds)
 * is an error naming it, not a cluster silently verified by its relative error. */
static void test_an_elementwise_op_without_a_row_is_an_error(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = matmul_then(ctx, "Relu", 1);
    assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    node_named(g, "op")->op_type = "NewActivation";
    fa_apply_bound bd;
    fa_graph *gm = NULL;
    char why[400];
    assert_int_equal(fa_apply_bound_graph(ctx, g, &bd, &gm, why, sizeof why), FA_ERR_INTERNAL);
    assert_null(gm);
    assert_false(bd.applies);
    fa_ctx_clear(ctx);
    assert_int_equal(fa_apply_bound_of(ctx, g, &bd, why, sizeof why), FA_ERR_INTERNAL); /* the dry build too */
    assert_false(bd.applies);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "NewActivation 'op'"));
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "no rounding-error row"));
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* A fused convolution whose algorithm a tactic chose (Winograd, or reordered inside to the brgemm
 * kernel: FA_CONV_TACTIC=reorder asks for both, Winograd first) and that fails verification —
 * the test hook makes every such kernel add 1 to its first output element — is not rejected as
 * wrong while the direct kernel verifies: the applier vetoes the tactic for that signature,
 * rebuilds the cluster (twice here: Winograd vetoed, then the reordered build) and verifies it
 * by the same bound, and the reason says so. Where the CPU has neither alternative (no AVX-512),
 * the direct kernel verifies at once. Runs last: the veto lasts the process. */
static void test_apply_vetoes_a_tactic_that_fails_verification(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    static params p;
    make_params(&p);
    fa_graph *g = conv_bn_add_relu(ctx, &p);
    int epi;
    fa_plan *plan = advise_epilogue(ctx, g, &epi);
    fa_apply_options opt;
    apply_options_small(&opt);
    assert_int_equal(setenv("FA_CONV_TACTIC", "reorder", 1), 0);
    fa_dnnl_test_tactic_defect(true);
    fa_apply_result *res = NULL;
    fa_status st = fa_apply(ctx, g, plan, &opt, &res);
    fa_dnnl_test_tactic_defect(false);
    assert_int_equal(unsetenv("FA_CONV_TACTIC"), 0);
    if (st) fail_msg("apply: %s", fa_ctx_errmsg(ctx));
    const fa_cluster_verdict *v = &res->verdicts[epi];
    printf("%s: %s\n", fa_cluster_status_name(v->status), v->reason);
    assert_true(v->status != FA_CLUSTER_REJECTED_VERIFY && v->status != FA_CLUSTER_REJECTED_ERROR);
    if (!strstr(v->reason, "end-to-end back-off")) assert_non_null(strstr(v->reason, "within the rounding-error bound"));
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx512f")) assert_non_null(strstr(v->reason, "was vetoed"));
#endif
    fa_apply_result_free(res);
    fa_plan_free(plan);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_correct_reassociation_passes_and_defects_are_rejected),
        cmocka_unit_test(test_apply_rejects_each_defect_on_the_conv_cluster),
        cmocka_unit_test(test_equal_infinities_agree_one_sided_ones_do_not),
        cmocka_unit_test(test_stretched_scans_match_one_pass),
        cmocka_unit_test(test_apply_masked_matmul_add_is_verified),
        cmocka_unit_test(test_every_elementwise_op_has_a_bound_row),
        cmocka_unit_test(test_an_elementwise_op_without_a_row_is_an_error),
        cmocka_unit_test(test_apply_vetoes_a_tactic_that_fails_verification),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
