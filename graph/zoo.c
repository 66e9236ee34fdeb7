/* graph/zoo — built-in models (ResNet-50, MobileNetV2, a BERT-base layer, a GPT-2 block and
 * two tiny CI models), built with the graph API at ONNX opset 17 with seeded random weights. */
#include "graph.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Particles per channel describing a non-normal activation distribution (see act). */
enum { ZP = 128 };

/* ---- builder state ----
 * Every helper is a no-op once b->st holds an error, so model builders read straight
 * through; the first failure is reported at the end. */
typedef struct zb {
    fa_ctx *ctx;
    fa_graph *g;
    uint64_t seed;  /* model seed; each initializer draws from seed ^ fa_hash64(its name) */
    int64_t batch;
    fa_status st;
    fa_arena *scratch; /* per-build temporaries (activation statistics) */
    float q[ZP];       /* standard-normal quantiles Phi^-1((i + 0.5) / ZP) */
    int perm[ZP];      /* a fixed shuffle of 0..ZP-1 pairing the particles of two terms */
    int perm2[ZP];     /* another, pairing particles with normal noise in relu_stats_particles */
} zb;

/* An activation in a CNN: its tensor name, channels, spatial size, and per channel the
 * expected mean and variance (over positions, for a random N(0,1) model input) used to
 * calibrate the BatchNormalization running statistics (see conv_bn). A conv output is a sum
 * of many terms, so normal; the ResNet residual stream, relu(branch + stream), is skewed,
 * and a normal stand-in underestimates the variance after the next Relu by ~5% per block, so
 * there the distribution of channel c is also kept as the mixture over i < ZP of
 * N(pt[c*ZP + i], gvar[c]) (pt NULL: normal). Arrays live in the builder's scratch arena. */
typedef struct act {
    const char *name;
    int64_t c, h, w;
    double *mu, *var;
    float *pt;
    double *gvar;
} act;

static void zfail(zb *b, fa_status s)
{
    if (b->st == FA_OK) b->st = s;
}

static const char *zs(zb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *zs(zb *b, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    const char *s = fa_arena_strdup(b->g->arena, buf);
    if (!s) {
        zfail(b, fa_ctx_error(b->ctx, FA_ERR_NOMEM, "zoo: out of memory"));
        return "";
    }
    return s;
}

/* Seeded stream of one initializer: fa_rng (splitmix64) seeded with seed ^ FNV-1a-64(name),
 * so a tensor's values depend only on the model seed and its own name. Normals come from
 * Box-Muller on two 53-bit uniforms, both outputs used (cos first, then sin). */
typedef struct zrand {
    fa_rng r;
    bool have_spare;
    double spare;
} zrand;

static void zrng(const zb *b, const char *tensor_name, zrand *r)
{
    fa_rng_seed(&r->r, b->seed ^ fa_hash64(tensor_name, strlen(tensor_name)));
    r->have_spare = false;
}

static double znorm(zrand *r)
{
    if (r->have_spare) {
        r->have_spare = false;
        return r->spare;
    }
    double u1 = ((double)(fa_rng_u64(&r->r) >> 11) + 1.0) * (1.0 / 9007199254740992.0); /* (0,1] */
    double u2 = (double)(fa_rng_u64(&r->r) >> 11) * (1.0 / 9007199254740992.0);        /* [0,1) */
    double rad = sqrt(-2.0 * log(u1)), th = 2.0 * M_PI * u2;
    r->spare = rad * sin(th);
    r->have_spare = true;
    return rad * cos(th);
}

static double zunif(zrand *r, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(fa_rng_u64(&r->r) >> 11) * (1.0 / 9007199254740992.0));
}

/* Add an initializer (copies data). Returns its name, or "" after an error. */
static const char *zinit(zb *b, const char *name, fa_dtype dt, int rank, const int64_t *dims,
                         const void *data, size_t nbytes)
{
    if (b->st) return "";
    int tid = fa_graph_tensor(b->g, name);
    if (tid < 0) {
        zfail(b, fa_ctx_error(b->ctx, FA_ERR_NOMEM, "zoo: out of memory adding '%s'", name));
        return "";
    }
    fa_tensor *t = b->g->tensors[tid];
    if (t->flags & FA_TENSOR_INITIALIZER) return t->name; /* shared constant, already there */
    fa_tensor_set_shape(t, dt, rank, dims);
    fa_status s = fa_tensor_set_data(b->ctx, t, data, nbytes);
    if (s) {
        zfail(b, s);
        return "";
    }
    t->flags |= FA_TENSOR_INITIALIZER;
    return t->name;
}

static float *zalloc(zb *b, int64_t n)
{
    if (b->st) return NULL;
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!p) zfail(b, fa_ctx_error(b->ctx, FA_ERR_NOMEM, "zoo: out of memory (%lld floats)", (long long)n));
    return p;
}

static int64_t numel(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}

/* Float initializer filled with N(mean, std^2). */
static const char *znormal(zb *b, const char *name, int rank, const int64_t *dims, double mean, double std)
{
    int64_t n = numel(rank, dims);
    float *w = zalloc(b, n);
    if (!w) return "";
    zrand r;
    zrng(b, name, &r);
    for (int64_t i = 0; i < n; i++) w[i] = (float)(mean + std * znorm(&r));
    const char *s = zinit(b, name, FA_DTYPE_FLOAT, rank, dims, w, sizeof(float) * (size_t)n);
    free(w);
    return s;
}

/* Float initializer filled with U[lo, hi). */
static const char *zuniform(zb *b, const char *name, int rank, const int64_t *dims, double lo, double hi)
{
    int64_t n = numel(rank, dims);
    float *w = zalloc(b, n);
    if (!w) return "";
    zrand r;
    zrng(b, name, &r);
    for (int64_t i = 0; i < n; i++) w[i] = (float)zunif(&r, lo, hi);
    const char *s = zinit(b, name, FA_DTYPE_FLOAT, rank, dims, w, sizeof(float) * (size_t)n);
    free(w);
    return s;
}

/* Scalar (rank-0) float constant, shared by name. */
static const char *zscalar(zb *b, const char *name, float v)
{
    return zinit(b, name, FA_DTYPE_FLOAT, 0, NULL, &v, sizeof v);
}

/* Rank-1 int64 constant (Reshape shapes, Split sizes), shared by name. */
static const char *zints(zb *b, const char *name, int n, const int64_t *v)
{
    int64_t d = n;
    return zinit(b, name, FA_DTYPE_INT64, 1, &d, v, sizeof(int64_t) * (size_t)n);
}

/* Node with one output. out NULL: the output tensor is "<name>_out". Returns the node. */
static fa_node *znode(zb *b, const char *name, const char *op, int nin, const char *const *ins,
                      const char *out)
{
    if (b->st) return NULL;
    if (!out) out = zs(b, "%s_out", name);
    fa_node *n = fa_graph_add_node(b->ctx, b->g, name, op, "", nin, ins, 1, &out);
    if (!n) zfail(b, fa_ctx_status(b->ctx) ? fa_ctx_status(b->ctx) : FA_ERR_NOMEM);
    return n;
}

static const char *zout(const zb *b, const fa_node *n)
{
    return n ? b->g->tensors[n->outputs[0]]->name : "";
}

/* Shorthands: unary / binary node, returning the output tensor name. */
static const char *zop1(zb *b, const char *name, const char *op, const char *x)
{
    return zout(b, znode(b, name, op, 1, (const char *[]){x}, NULL));
}
static const char *zop2(zb *b, const char *name, const char *op, const char *x, const char *y)
{
    return zout(b, znode(b, name, op, 2, (const char *[]){x, y}, NULL));
}

static void zattr_ints(zb *b, fa_node *n, const char *name, int cnt, const int64_t *v)
{
    if (n && !fa_node_add_attr_ints(b->g, n, name, v, cnt))
        zfail(b, fa_ctx_error(b->ctx, FA_ERR_NOMEM, "zoo: out of memory"));
}
static void zattr_int(zb *b, fa_node *n, const char *name, int64_t v)
{
    if (n && !fa_node_add_attr_int(b->g, n, name, v))
        zfail(b, fa_ctx_error(b->ctx, FA_ERR_NOMEM, "zoo: out of memory"));
}
static void zattr_float(zb *b, fa_node *n, const char *name, float v)
{
    if (n && !fa_node_add_attr_float(b->g, n, name, v))
        zfail(b, fa_ctx_error(b->ctx, FA_ERR_NOMEM, "zoo: out of memory"));
}

/* Graph input of dtype float, dim 0 = batch. */
static const char *zinput(zb *b, const char *name, int rank, const int64_t *dims_after_batch)
{
    if (b->st) return "";
    int64_t d[FA_MAX_RANK];
    d[0] = b->batch;
    for (int i = 1; i < rank; i++) d[i] = dims_after_batch[i - 1];
    int tid = fa_graph_tensor(b->g, name);
    if (tid < 0) {
        zfail(b, fa_ctx_error(b->ctx, FA_ERR_NOMEM, "zoo: out of memory"));
        return "";
    }
    fa_tensor_set_shape(b->g->tensors[tid], FA_DTYPE_FLOAT, rank, d);
    fa_status s = fa_graph_add_input(b->ctx, b->g, tid);
    if (s) zfail(b, s);
    return b->g->tensors[tid]->name;
}

/* Mark `name` a graph output of dtype float and shape [batch, dims_after_batch...]
 * (the shape fa_graph_prepare must infer). */
static void zoutput(zb *b, const char *name, int rank, const int64_t *dims_after_batch)
{
    if (b->st) return;
    int tid = fa_graph_find_tensor(b->g, name);
    if (tid < 0) {
        zfail(b, fa_ctx_error(b->ctx, FA_ERR_INTERNAL, "zoo: output '%s' was never produced", name));
        return;
    }
    int64_t d[FA_MAX_RANK];
    d[0] = b->batch;
    for (int i = 1; i < rank; i++) d[i] = dims_after_batch[i - 1];
    fa_tensor_set_shape(b->g->tensors[tid], FA_DTYPE_FLOAT, rank, d);
    fa_status s = fa_graph_add_output(b->ctx, b->g, tid);
    if (s) zfail(b, s);
}

/* ---- CNN pieces ---- */

/* Standard normal pdf/cdf. */
static double phi(double a) { return exp(-0.5 * a * a) / sqrt(2.0 * M_PI); }
static double Phi(double a) { return 0.5 * erfc(-a / sqrt(2.0)); }

static act act_new(zb *b, const char *name, int64_t c, int64_t h, int64_t w)
{
    act y = {name, c, h, w, NULL, NULL, NULL, NULL};
    if (b->st) return y;
    y.mu = fa_arena_alloc(b->scratch, sizeof(double) * (size_t)c);
    y.var = fa_arena_alloc(b->scratch, sizeof(double) * (size_t)c);
    if (!y.mu || !y.var) {
        zfail(b, fa_ctx_error(b->ctx, FA_ERR_NOMEM, "zoo: out of memory"));
        y.mu = y.var = NULL;
    }
    return y;
}

/* Per channel: x ~ N(mu, var) -> max(x, 0), the moments of a rectified normal:
 * E = mu Phi(a) + s phi(a), E[y^2] = (mu^2 + s^2) Phi(a) + mu s phi(a), a = mu/s.
 * Also used for Clip(0, 6): with O(1) inputs the upper bound is rarely reached. */
static void rectified(double mu, double var, double *m1, double *m2)
{
    double s = sqrt(var > 1e-12 ? var : 1e-12), a = mu / s;
    *m1 = mu * Phi(a) + s * phi(a);
    *m2 = (mu * mu + s * s) * Phi(a) + mu * s * phi(a);
}

/* Moments after Relu, per channel; with particles the mixture's moments (exact for the
 * mixture), without them those of a rectified normal. Drops the particles. */
static void relu_stats(act *x)
{
    if (!x->mu) return;
    for (int64_t c = 0; c < x->c; c++) {
        double m1 = 0, m2 = 0;
        if (x->pt) {
            for (int i = 0; i < ZP; i++) {
                double a1, a2;
                rectified(x->pt[c * ZP + i], x->gvar[c], &a1, &a2);
                m1 += a1 / ZP;
                m2 += a2 / ZP;
            }
        } else {
            rectified(x->mu[c], x->var[c], &m1, &m2);
        }
        x->mu[c] = m1;
        x->var[c] = m2 - m1 * m1 > 1e-12 ? m2 - m1 * m1 : 1e-12;
    }
    x->pt = NULL;
    x->gvar = NULL;
}

/* Relu that also keeps the output's distribution as particles, for an activation that is
 * later added to a normal term and rectified again (the residual stream): particle i of
 * channel c is max(p + sqrt(gvar) q[perm2[i]], 0) (p = pt[c*ZP+i], or mu with q[i] when normal).
 * perm2 is independent of perm, which add() used to build p: reusing it would pair large
 * particles with large noise and overstate the variance. */
static void relu_stats_particles(zb *b, act *x)
{
    if (!x->mu) return;
    float *np = fa_arena_alloc(b->scratch, sizeof(float) * (size_t)(x->c * ZP));
    double *gv = fa_arena_alloc(b->scratch, sizeof(double) * (size_t)x->c);
    if (!np || !gv) {
        zfail(b, fa_ctx_error(b->ctx, FA_ERR_NOMEM, "zoo: out of memory"));
        return;
    }
    for (int64_t c = 0; c < x->c; c++) {
        for (int i = 0; i < ZP; i++) {
            double v = x->pt ? x->pt[c * ZP + i] + sqrt(x->gvar[c]) * b->q[b->perm2[i]]
                             : x->mu[c] + sqrt(x->var[c]) * b->q[i];
            np[c * ZP + i] = (float)(v > 0 ? v : 0);
        }
        gv[c] = 0.0;
    }
    relu_stats(x);
    x->pt = np;
    x->gvar = gv;
}

/* Output positions along one spatial axis grouped by the range of kernel taps that land
 * inside the input (zero padding removes the rest): cls[i] = {first tap, end tap, count}.
 * Returns the number of classes (at most k + 1 ranges arise for the odd, same-padded
 * kernels used here; capped at 16). */
typedef struct tap_class {
    int t0, t1;
    int64_t count;
} tap_class;

static int tap_classes(int64_t n_in, int64_t n_out, int k, int stride, int pad, tap_class cls[16])
{
    int n = 0;
    for (int64_t o = 0; o < n_out; o++) {
        int t0 = k, t1 = 0;
        for (int t = 0; t < k; t++) {
            int64_t i = o * stride - pad + t;
            if (i >= 0 && i < n_in) {
                t0 = t < t0 ? t : t0;
                t1 = t + 1;
            }
        }
        int c = 0;
        while (c < n && !(cls[c].t0 == t0 && cls[c].t1 == t1)) c++;
        if (c == n) {
            if (n == 16) c = 15; /* not reached for k <= 7 */
            else cls[n++] = (tap_class){t0, t1, 0};
        }
        cls[c].count++;
    }
    return n;
}

/* Conv (no bias) + BatchNormalization, as torchvision exports Conv2d(bias=False) + BatchNorm2d.
 *   conv weight [cout, cin/group, k, k] ~ N(0, 2/fan_in), fan_in = cin/group*k*k
 *     (He et al. 2015, "Delving Deep into Rectifiers", eq. 10, forward mode);
 *   bn weight (gamma) ~ U[0.5, 1.5), bn bias (beta) ~ N(0, 0.1^2);
 *   running_var[c]  = Var[y_c] * u_c, u_c ~ U[0.8, 1.25)
 *   running_mean[c] = E[y_c] + 0.05 * sqrt(running_var[c]) * N(0,1)
 * where E[y_c] and Var[y_c] are the conv output's per-channel moments over positions for
 * independent inputs with the tracked per-channel moments of x: sum_{j,t} w[c,j,t] E[x_j] and
 * sum_{j,t} w[c,j,t]^2 Var[x_j] over the taps inside the zero padding, averaged over output
 * positions, plus the variance of the per-position mean. So every BN sees about the
 * statistics it stores — the state of a trained network — perturbed so that it is not an
 * exact whitening, and activations keep an O(1) scale through ResNet-50's 53 convolutions.
 * pads = k/2 on every side (same padding for odd k), dilations 1, epsilon 1e-5, momentum 0.9. */
static act conv_bn(zb *b, const char *conv_name, const char *bn_name, act x, int64_t cout, int k,
                   int stride, int64_t group)
{
    int pad = k / 2;
    int64_t ho = (x.h + 2 * pad - k) / stride + 1, wo = (x.w + 2 * pad - k) / stride + 1;
    act y = act_new(b, "", cout, ho, wo);
    if (b->st) return y;
    int64_t cin_g = x.c / group, cout_g = cout / group;
    int64_t wd[4] = {cout, cin_g, k, k};
    int64_t fan_in = cin_g * k * k;
    const char *wname = zs(b, "%s.weight", conv_name);
    int64_t n = numel(4, wd);
    float *w = zalloc(b, n);
    float *bn = zalloc(b, 4 * cout); /* gamma | beta | mean | var */
    if (!w || !bn) {
        free(w);
        free(bn);
        return y;
    }
    tap_class ch[16], cw[16];
    int nch = tap_classes(x.h, ho, k, stride, pad, ch), ncw = tap_classes(x.w, wo, k, stride, pad, cw);
    double *am = fa_arena_alloc(b->scratch, sizeof(double) * 2 * (size_t)(k * k));
    if (!am) {
        zfail(b, fa_ctx_error(b->ctx, FA_ERR_NOMEM, "zoo: out of memory"));
        free(w);
        free(bn);
        return y;
    }
    double *av = am + k * k;
    zrand r;
    zrng(b, wname, &r);
    double std = sqrt(2.0 / (double)fan_in);
    for (int64_t c = 0; c < cout; c++) {
        /* per tap t: am[t] = sum_j w[c,j,t] E[x_j], av[t] = sum_j w[c,j,t]^2 Var[x_j] */
        for (int t = 0; t < k * k; t++) am[t] = av[t] = 0.0;
        for (int64_t i = 0; i < fan_in; i++) {
            float wi = (float)(std * znorm(&r));
            w[c * fan_in + i] = wi;
            int64_t j = (c / cout_g) * cin_g + i / (k * k); /* input channel of this tap */
            am[i % (k * k)] += wi * x.mu[j];
            av[i % (k * k)] += (double)wi * wi * x.var[j];
        }
        /* Over output positions, the mean m(pos) and variance v(pos) sum the taps inside the
         * input; the channel's moments are E[m], E[v] + Var_pos[m] (border positions see
         * fewer taps, which shifts their mean: part of what BN measures as variance). */
        double em = 0, em2 = 0, ev = 0;
        for (int a = 0; a < nch; a++)
            for (int bb = 0; bb < ncw; bb++) {
                double m = 0, v = 0;
                for (int th = ch[a].t0; th < ch[a].t1; th++)
                    for (int tw = cw[bb].t0; tw < cw[bb].t1; tw++) {
                        m += am[th * k + tw];
                        v += av[th * k + tw];
                    }
                double p = (double)(ch[a].count * cw[bb].count) / (double)(ho * wo);
                em += p * m;
                em2 += p * m * m;
                ev += p * v;
            }
        y.mu[c] = em;
        y.var[c] = ev + (em2 - em * em > 0 ? em2 - em * em : 0);
    }
    zinit(b, wname, FA_DTYPE_FLOAT, 4, wd, w, sizeof(float) * (size_t)n);
    free(w);

    const char *cin[2] = {x.name, wname};
    fa_node *cn = znode(b, conv_name, "Conv", 2, cin, NULL);
    zattr_ints(b, cn, "dilations", 2, (const int64_t[]){1, 1});
    zattr_int(b, cn, "group", group);
    zattr_ints(b, cn, "kernel_shape", 2, (const int64_t[]){k, k});
    zattr_ints(b, cn, "pads", 4, (const int64_t[]){pad, pad, pad, pad});
    zattr_ints(b, cn, "strides", 2, (const int64_t[]){stride, stride});

    const char *pn[4] = {zs(b, "%s.weight", bn_name), zs(b, "%s.bias", bn_name),
                         zs(b, "%s.running_mean", bn_name), zs(b, "%s.running_var", bn_name)};
    float *gamma = bn, *beta = bn + cout, *mean = bn + 2 * cout, *var = bn + 3 * cout;
    zrand rg, rb, rm, rv;
    zrng(b, pn[0], &rg);
    zrng(b, pn[1], &rb);
    zrng(b, pn[2], &rm);
    zrng(b, pn[3], &rv);
    for (int64_t c = 0; c < cout; c++) {
        gamma[c] = (float)zunif(&rg, 0.5, 1.5);
        beta[c] = (float)(0.1 * znorm(&rb));
        double yv = y.var[c] > 1e-12 ? y.var[c] : 1e-12;
        var[c] = (float)(yv * zunif(&rv, 0.8, 1.25));
        mean[c] = (float)(y.mu[c] + 0.05 * sqrt(var[c]) * znorm(&rm));
        /* BN output moments: gamma (y - mean) / sqrt(var + eps) + beta */
        double inv = gamma[c] / sqrt((double)var[c] + 1e-5);
        y.mu[c] = beta[c] + inv * (y.mu[c] - mean[c]);
        y.var[c] = inv * inv * yv;
    }
    int64_t cd = cout;
    for (int i = 0; i < 4; i++)
        zinit(b, pn[i], FA_DTYPE_FLOAT, 1, &cd, bn + i * cout, sizeof(float) * (size_t)cout);
    free(bn);

    const char *bin[5] = {zout(b, cn), pn[0], pn[1], pn[2], pn[3]};
    fa_node *bnn = znode(b, bn_name, "BatchNormalization", 5, bin, NULL);
    zattr_float(b, bnn, "epsilon", 1e-5f);
    zattr_float(b, bnn, "momentum", 0.9f);
    y.name = zout(b, bnn);
    return y;
}

static act relu(zb *b, const char *name, act x)
{
    x.name = zop1(b, name, "Relu", x.name);
    relu_stats(&x);
    return x;
}

/* Relu whose output is the residual stream (keeps particles, see act). */
static act relu_stream(zb *b, const char *name, act x)
{
    x.name = zop1(b, name, "Relu", x.name);
    relu_stats_particles(b, &x);
    return x;
}

/* ReLU then MaxPool 3x3 / 2, pad 1 (the ResNet stem). Statistics: max commutes with ReLU, so
 * take the max of 9 draws of N(mu, var) first — approximated as iid, whose max has mean
 * mu + 1.4850 s and variance 0.3574 s^2 (order statistics of 9 standard normals, computed by
 * numerical integration of 9 phi(x) Phi(x)^8) — then rectify. */
static act relu_maxpool(zb *b, const char *relu_name, const char *pool_name, act x)
{
    x.name = zop1(b, relu_name, "Relu", x.name);
    fa_node *mp = znode(b, pool_name, "MaxPool", 1, (const char *[]){x.name}, NULL);
    zattr_int(b, mp, "ceil_mode", 0);
    zattr_ints(b, mp, "kernel_shape", 2, (const int64_t[]){3, 3});
    zattr_ints(b, mp, "pads", 4, (const int64_t[]){1, 1, 1, 1});
    zattr_ints(b, mp, "strides", 2, (const int64_t[]){2, 2});
    x.name = zout(b, mp);
    x.h = (x.h - 1) / 2 + 1;
    x.w = (x.w - 1) / 2 + 1;
    if (x.mu)
        for (int64_t c = 0; c < x.c; c++) {
            double s = sqrt(x.var[c]);
            x.mu[c] += 1.4850 * s;
            x.var[c] *= 0.3574;
        }
    relu_stats(&x);
    return x;
}

/* ReLU6 as torch exports it at opset >= 11: Clip(x, min=0, max=6) with scalar inputs. */
static act relu6(zb *b, const char *name, act x)
{
    const char *lo = zscalar(b, "const.clip_min", 0.0f);
    const char *hi = zscalar(b, "const.clip_max", 6.0f);
    x.name = zout(b, znode(b, name, "Clip", 3, (const char *[]){x.name, lo, hi}, NULL));
    relu_stats(&x);
    return x;
}

/* Residual Add of two activations taken as independent: means and variances add; when
 * either term has particles, the sum's particle i is x's particle i plus y's particle
 * perm[i] (a normal term contributes its mean) and the normal parts' variances add. */
static act add(zb *b, const char *name, act x, act y)
{
    act o = act_new(b, "", x.c, x.h, x.w);
    o.name = zop2(b, name, "Add", x.name, y.name);
    if (!o.mu || !x.mu || !y.mu) return o;
    for (int64_t c = 0; c < x.c; c++) {
        o.mu[c] = x.mu[c] + y.mu[c];
        o.var[c] = x.var[c] + y.var[c];
    }
    if (!x.pt && !y.pt) return o;
    o.pt = fa_arena_alloc(b->scratch, sizeof(float) * (size_t)(x.c * ZP));
    o.gvar = fa_arena_alloc(b->scratch, sizeof(double) * (size_t)x.c);
    if (!o.pt || !o.gvar) {
        zfail(b, fa_ctx_error(b->ctx, FA_ERR_NOMEM, "zoo: out of memory"));
        o.pt = NULL;
        o.gvar = NULL;
        return o;
    }
    for (int64_t c = 0; c < x.c; c++) {
        for (int i = 0; i < ZP; i++) {
            double px = x.pt ? x.pt[c * ZP + i] : x.mu[c];
            double py = y.pt ? y.pt[c * ZP + b->perm[i]] : y.mu[c];
            o.pt[c * ZP + i] = (float)(px + py);
        }
        o.gvar[c] = (x.pt ? x.gvar[c] : x.var[c]) + (y.pt ? y.gvar[c] : y.var[c]);
    }
    return o;
}

/* GlobalAveragePool + Flatten + Gemm(transB=1) classifier, as torchvision exports
 * adaptive_avg_pool2d(1) + flatten(1) + nn.Linear. Linear init as torch.nn.Linear's
 * default: weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)). The output tensor is "output". */
static void classifier(zb *b, const char *pool_name, const char *fc_name, act x, int64_t classes)
{
    const char *p = zop1(b, pool_name, "GlobalAveragePool", x.name);
    fa_node *fl = znode(b, "flatten", "Flatten", 1, (const char *[]){p}, NULL);
    zattr_int(b, fl, "axis", 1);
    double bound = 1.0 / sqrt((double)x.c);
    const char *w = zuniform(b, zs(b, "%s.weight", fc_name), 2, (const int64_t[]){classes, x.c}, -bound, bound);
    const char *bias = zuniform(b, zs(b, "%s.bias", fc_name), 1, (const int64_t[]){classes}, -bound, bound);
    fa_node *fc = znode(b, fc_name, "Gemm", 3, (const char *[]){zout(b, fl), w, bias}, "output");
    zattr_float(b, fc, "alpha", 1.0f);
    zattr_float(b, fc, "beta", 1.0f);
    zattr_int(b, fc, "transB", 1);
    zoutput(b, "output", 2, (const int64_t[]){classes});
}

/* The input of the CNNs: "input" [B, 3, h, w]; statistics assume zero mean, unit variance
 * per channel (normalized images). */
static act image_input(zb *b, int64_t h, int64_t w)
{
    act x = act_new(b, zinput(b, "input", 4, (const int64_t[]){3, h, w}), 3, h, w);
    if (x.mu)
        for (int c = 0; c < 3; c++) {
            x.mu[c] = 0.0;
            x.var[c] = 1.0;
        }
    return x;
}

/* torchvision.models.resnet50 (v1.5: stride on the 3x3 conv of the bottleneck).
 * Names follow torchvision's state_dict ("layer2.0.downsample.1.running_var"). */
static void build_resnet50(zb *b)
{
    act x = image_input(b, 224, 224);
    x = conv_bn(b, "conv1", "bn1", x, 64, 7, 2, 1);
    x = relu_maxpool(b, "relu", "maxpool", x);
    static const int blocks[4] = {3, 4, 6, 3};
    for (int l = 0; l < 4; l++) {
        int64_t planes = (int64_t)64 << l;
        for (int i = 0; i < blocks[l]; i++) {
            int stride = (l > 0 && i == 0) ? 2 : 1;
            const char *p = zs(b, "layer%d.%d", l + 1, i);
            act idn = x;
            act o = conv_bn(b, zs(b, "%s.conv1", p), zs(b, "%s.bn1", p), x, planes, 1, 1, 1);
            o = relu(b, zs(b, "%s.relu", p), o);
            o = conv_bn(b, zs(b, "%s.conv2", p), zs(b, "%s.bn2", p), o, planes, 3, stride, 1);
            o = relu(b, zs(b, "%s.relu_1", p), o);
            o = conv_bn(b, zs(b, "%s.conv3", p), zs(b, "%s.bn3", p), o, planes * 4, 1, 1, 1);
            if (i == 0)
                idn = conv_bn(b, zs(b, "%s.downsample.0", p), zs(b, "%s.downsample.1", p), x,
                              planes * 4, 1, stride, 1);
            o = add(b, zs(b, "%s.add", p), o, idn);
            x = relu_stream(b, zs(b, "%s.relu_2", p), o);
        }
    }
    classifier(b, "avgpool", "fc", x, 1000);
}

/* Conv2dNormActivation(ReLU6) of torchvision: "<p>.0" conv, "<p>.1" BN, "<p>.2" Clip. */
static act conv_bn_relu6(zb *b, const char *p, act x, int64_t cout, int k, int stride, int64_t group)
{
    x = conv_bn(b, zs(b, "%s.0", p), zs(b, "%s.1", p), x, cout, k, stride, group);
    return relu6(b, zs(b, "%s.2", p), x);
}

/* torchvision.models.mobilenet_v2 (width 1.0): inverted residual settings (t, c, n, s) of
 * Sandler et al. 2018, Table 2; names follow torchvision's state_dict. */
static void build_mobilenetv2(zb *b)
{
    static const int cfg[7][4] = {{1, 16, 1, 1},  {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                  {6, 96, 3, 1},  {6, 160, 3, 2}, {6, 320, 1, 1}};
    act x = image_input(b, 224, 224);
    x = conv_bn_relu6(b, "features.0", x, 32, 3, 2, 1);
    int64_t inp = 32;
    int idx = 1;
    for (int s = 0; s < 7; s++) {
        for (int i = 0; i < cfg[s][2]; i++, idx++) {
            int stride = i == 0 ? cfg[s][3] : 1;
            int64_t oup = cfg[s][1], hidden = inp * cfg[s][0];
            const char *p = zs(b, "features.%d.conv", idx);
            act o = x;
            int j = 0;
            if (cfg[s][0] != 1) o = conv_bn_relu6(b, zs(b, "%s.%d", p, j++), o, hidden, 1, 1, 1);
            o = conv_bn_relu6(b, zs(b, "%s.%d", p, j++), o, hidden, 3, stride, hidden);
            o = conv_bn(b, zs(b, "%s.%d", p, j), zs(b, "%s.%d", p, j + 1), o, oup, 1, 1, 1);
            if (stride == 1 && inp == oup) o = add(b, zs(b, "features.%d.add", idx), x, o);
            x = o;
            inp = oup;
        }
    }
    x = conv_bn_relu6(b, "features.18", x, 1280, 1, 1, 1);
    classifier(b, "avgpool", "classifier.1", x, 1000);
}

/* Two Conv+BN+Relu blocks with a residual Add, then the classifier: [B,3,32,32] -> [B,10]. */
static void build_convnet_tiny(zb *b)
{
    act x = image_input(b, 32, 32);
    act a = relu(b, "relu1", conv_bn(b, "conv1", "bn1", x, 16, 3, 1, 1));
    act c = relu(b, "relu2", conv_bn(b, "conv2", "bn2", a, 16, 3, 1, 1));
    classifier(b, "avgpool", "fc", add(b, "add", c, a), 10);
}

/* ---- transformer pieces ---- */

/* y = x @ W + bias, as exporters emit nn.Linear / GPT-2 Conv1D: MatMul with W [in, out]
 * then Add; nodes "<p>.matmul" and "<p>.add", initializers "<p>.weight", "<p>.bias".
 * W ~ N(0, std^2) (BERT/GPT-2 initializer_range 0.02); bias ~ N(0, std^2) so the bias Add
 * is not a no-op. `out` names the Add's output (NULL: "<p>.add_out"). */
static const char *linear(zb *b, const char *p, const char *x, int64_t in, int64_t out_features,
                          double std, const char *out)
{
    const char *w = znormal(b, zs(b, "%s.weight", p), 2, (const int64_t[]){in, out_features}, 0.0, std);
    const char *bias = znormal(b, zs(b, "%s.bias", p), 1, (const int64_t[]){out_features}, 0.0, std);
    const char *mm = zop2(b, zs(b, "%s.matmul", p), "MatMul", x, w);
    return zout(b, znode(b, zs(b, "%s.add", p), "Add", 2, (const char *[]){mm, bias}, out));
}

/* LayerNormalization params: gamma ~ U[0.8, 1.2), beta ~ N(0, 0.05^2). */
static void ln_params(zb *b, const char *p, int64_t hidden, const char **gamma, const char **beta)
{
    *gamma = zuniform(b, zs(b, "%s.weight", p), 1, (const int64_t[]){hidden}, 0.8, 1.2);
    *beta = znormal(b, zs(b, "%s.bias", p), 1, (const int64_t[]){hidden}, 0.0, 0.05);
}

/* The opset-17 LayerNormalization op over the last axis. */
static const char *layernorm_op(zb *b, const char *p, const char *x, int64_t hidden, float eps)
{
    const char *gamma, *beta;
    ln_params(b, p, hidden, &gamma, &beta);
    fa_node *n = znode(b, p, "LayerNormalization", 3, (const char *[]){x, gamma, beta}, NULL);
    zattr_int(b, n, "axis", -1);
    zattr_float(b, n, "epsilon", eps);
    return zout(b, n);
}

/* LayerNorm decomposed as pre-opset-17 exporters emit it:
 * m = ReduceMean(x), d = x - m, v = ReduceMean(d^2), y = d / Sqrt(v + eps) * gamma + beta
 * (ReduceMean axes=[-1] as attribute, keepdims=1). */
static const char *layernorm_decomposed(zb *b, const char *p, const char *x, int64_t hidden,
                                        const char *eps_const, const char *out)
{
    const char *gamma, *beta;
    ln_params(b, p, hidden, &gamma, &beta);
    fa_node *m = znode(b, zs(b, "%s.mean", p), "ReduceMean", 1, (const char *[]){x}, NULL);
    zattr_ints(b, m, "axes", 1, (const int64_t[]){-1});
    zattr_int(b, m, "keepdims", 1);
    const char *d = zop2(b, zs(b, "%s.sub", p), "Sub", x, zout(b, m));
    const char *sq = zop2(b, zs(b, "%s.pow", p), "Pow", d, zscalar(b, "const.two", 2.0f));
    fa_node *v = znode(b, zs(b, "%s.var", p), "ReduceMean", 1, (const char *[]){sq}, NULL);
    zattr_ints(b, v, "axes", 1, (const int64_t[]){-1});
    zattr_int(b, v, "keepdims", 1);
    const char *ve = zop2(b, zs(b, "%s.add_eps", p), "Add", zout(b, v), eps_const);
    const char *sd = zop1(b, zs(b, "%s.sqrt", p), "Sqrt", ve);
    const char *nrm = zop2(b, zs(b, "%s.div", p), "Div", d, sd);
    const char *sc = zop2(b, zs(b, "%s.mul", p), "Mul", nrm, gamma);
    return zout(b, znode(b, zs(b, "%s.add", p), "Add", 2, (const char *[]){sc, beta}, out));
}

static const char *transpose(zb *b, const char *name, const char *x, const int64_t perm[4])
{
    fa_node *n = znode(b, name, "Transpose", 1, (const char *[]){x}, NULL);
    zattr_ints(b, n, "perm", 4, perm);
    return zout(b, n);
}

enum { SEQ = 128, HIDDEN = 768, HEADS = 12, HEAD_DIM = 64, FFN = 3072 };
static const int64_t k_perm_heads[4] = {0, 2, 1, 3};  /* [B,S,H,D] -> [B,H,S,D] and back */
static const int64_t k_perm_keys[4] = {0, 2, 3, 1};   /* [B,S,H,D] -> [B,H,D,S] (K^T) */

/* [B,S,768] -> [B,H,S,D] (or [B,H,D,S] for keys): Reshape with the int64 constant
 * [-1, 128, 12, 64] (-1 keeps the batch free) then Transpose. */
static const char *split_heads(zb *b, const char *p, const char *x, bool key)
{
    const char *shape = zints(b, "const.shape_heads", 4, (const int64_t[]){-1, SEQ, HEADS, HEAD_DIM});
    const char *r = zop2(b, zs(b, "%s.reshape", p), "Reshape", x, shape);
    return transpose(b, zs(b, "%s.transpose", p), r, key ? k_perm_keys : k_perm_heads);
}

/* Attention core: softmax(scale(Q K^T) [+mask]) V, heads merged back to [B,S,768].
 * BERT divides by sqrt(64) (Div); GPT-2 multiplies by 1/8 (Mul) and masks causally with
 * Where(mask, scores, -1e4) (HF GPT-2's masked_bias). */
static const char *attention(zb *b, const char *p, const char *q, const char *k, const char *v, bool gpt2)
{
    q = split_heads(b, zs(b, "%s.q", p), q, false);
    k = split_heads(b, zs(b, "%s.k", p), k, true);
    v = split_heads(b, zs(b, "%s.v", p), v, false);
    const char *s = zop2(b, zs(b, "%s.qk", p), "MatMul", q, k);
    if (!gpt2) {
        s = zop2(b, zs(b, "%s.scale", p), "Div", s, zscalar(b, "const.sqrt_head_dim", 8.0f));
    } else {
        s = zop2(b, zs(b, "%s.scale", p), "Mul", s, zscalar(b, "const.inv_sqrt_head_dim", 0.125f));
        uint8_t *mask = b->st ? NULL : malloc(SEQ * SEQ);
        if (!mask && !b->st) zfail(b, fa_ctx_error(b->ctx, FA_ERR_NOMEM, "zoo: out of memory"));
        if (mask) {
            for (int i = 0; i < SEQ; i++)
                for (int j = 0; j < SEQ; j++) mask[i * SEQ + j] = j <= i; /* lower triangle */
            const char *m = zinit(b, zs(b, "%s.causal_mask", p), FA_DTYPE_BOOL, 2,
                                  (const int64_t[]){SEQ, SEQ}, mask, SEQ * SEQ);
            free(mask);
            const char *neg = zscalar(b, "const.masked_bias", -1e4f);
            s = zout(b, znode(b, zs(b, "%s.mask", p), "Where", 3, (const char *[]){m, s, neg}, NULL));
        }
    }
    fa_node *sm = znode(b, zs(b, "%s.softmax", p), "Softmax", 1, (const char *[]){s}, NULL);
    zattr_int(b, sm, "axis", -1);
    const char *c = zop2(b, zs(b, "%s.context", p), "MatMul", zout(b, sm), v);
    c = transpose(b, zs(b, "%s.merge.transpose", p), c, k_perm_heads);
    const char *shape = zints(b, "const.shape_hidden", 3, (const int64_t[]){-1, SEQ, HIDDEN});
    return zop2(b, zs(b, "%s.merge.reshape", p), "Reshape", c, shape);
}

/* One BERT-base encoder layer (Devlin et al. 2019; HF BertLayer), post-LN, no attention mask:
 * "hidden" [B,128,768] -> "output" [B,128,768]. */
static void build_bert_layer(zb *b)
{
    const double std = 0.02;
    const char *x = zinput(b, "hidden", 3, (const int64_t[]){SEQ, HIDDEN});
    const char *q = linear(b, "attention.self.query", x, HIDDEN, HIDDEN, std, NULL);
    const char *k = linear(b, "attention.self.key", x, HIDDEN, HIDDEN, std, NULL);
    const char *v = linear(b, "attention.self.value", x, HIDDEN, HIDDEN, std, NULL);
    const char *a = attention(b, "attention.self", q, k, v, false);
    a = linear(b, "attention.output.dense", a, HIDDEN, HIDDEN, std, NULL);
    a = zop2(b, "attention.output.residual", "Add", a, x);
    a = layernorm_op(b, "attention.output.LayerNorm", a, HIDDEN, 1e-12f);
    /* FFN with exact GELU as torch exports it: x * 0.5 * (1 + Erf(x / sqrt(2))) */
    const char *h = linear(b, "intermediate.dense", a, HIDDEN, FFN, std, NULL);
    const char *g = zop2(b, "intermediate.gelu.div", "Div", h, zscalar(b, "const.sqrt2", 1.4142135381698608f));
    g = zop1(b, "intermediate.gelu.erf", "Erf", g);
    g = zop2(b, "intermediate.gelu.add", "Add", g, zscalar(b, "const.one", 1.0f));
    g = zop2(b, "intermediate.gelu.mul", "Mul", h, g);
    g = zop2(b, "intermediate.gelu.mul_half", "Mul", g, zscalar(b, "const.half", 0.5f));
    const char *o = linear(b, "output.dense", g, FFN, HIDDEN, std, NULL);
    o = zop2(b, "output.residual", "Add", o, a);
    const char *eps = zscalar(b, "const.ln_eps", 1e-12f);
    layernorm_decomposed(b, "output.LayerNorm", o, HIDDEN, eps, "output");
    zoutput(b, "output", 3, (const int64_t[]){SEQ, HIDDEN});
}

/* One GPT-2 small block (Radford et al. 2019; HF GPT2Block), pre-LN, causal self-attention:
 * "hidden" [B,128,768] -> "output" [B,128,768]. */
static void build_gpt2_block(zb *b)
{
    const double std = 0.02;
    const char *x = zinput(b, "hidden", 3, (const int64_t[]){SEQ, HIDDEN});
    const char *h = layernorm_op(b, "ln_1", x, HIDDEN, 1e-5f);
    const char *qkv = linear(b, "attn.c_attn", h, HIDDEN, 3 * HIDDEN, std, NULL);
    const char *split = zints(b, "const.split_qkv", 3, (const int64_t[]){HIDDEN, HIDDEN, HIDDEN});
    const char *outs[3] = {"attn.q", "attn.k", "attn.v"};
    fa_node *sp = NULL;
    if (!b->st) {
        sp = fa_graph_add_node(b->ctx, b->g, "attn.split", "Split", "", 2,
                               (const char *[]){qkv, split}, 3, outs);
        if (!sp) zfail(b, fa_ctx_status(b->ctx) ? fa_ctx_status(b->ctx) : FA_ERR_NOMEM);
    }
    zattr_int(b, sp, "axis", 2);
    const char *a = attention(b, "attn", outs[0], outs[1], outs[2], true);
    a = linear(b, "attn.c_proj", a, HIDDEN, HIDDEN, std, NULL);
    a = zop2(b, "attn.residual", "Add", a, x);
    const char *eps = zscalar(b, "const.ln_eps", 1e-5f);
    h = layernorm_decomposed(b, "ln_2", a, HIDDEN, eps, NULL);
    h = linear(b, "mlp.c_fc", h, HIDDEN, FFN, std, NULL);
    /* gelu_new: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) */
    const char *half = zop2(b, "mlp.gelu.mul_half", "Mul", h, zscalar(b, "const.half", 0.5f));
    const char *cube = zop2(b, "mlp.gelu.pow", "Pow", h, zscalar(b, "const.three", 3.0f));
    const char *t = zop2(b, "mlp.gelu.mul_coef", "Mul", cube, zscalar(b, "const.gelu_coef", 0.044715f));
    t = zop2(b, "mlp.gelu.add", "Add", h, t);
    t = zop2(b, "mlp.gelu.mul_sqrt_2_over_pi", "Mul", t,
             zscalar(b, "const.sqrt_2_over_pi", 0.7978845608028654f));
    t = zop1(b, "mlp.gelu.tanh", "Tanh", t);
    t = zop2(b, "mlp.gelu.add_one", "Add", t, zscalar(b, "const.one", 1.0f));
    const char *g = zop2(b, "mlp.gelu.mul", "Mul", half, t);
    const char *o = linear(b, "mlp.c_proj", g, FFN, HIDDEN, std, NULL);
    znode(b, "residual", "Add", 2, (const char *[]){o, a}, "output");
    zoutput(b, "output", 3, (const int64_t[]){SEQ, HIDDEN});
}

/* Two MatMul+Add+Relu layers: "input" [B,64] -> [B,128] -> "output" [B,32].
 * W ~ N(0, 2/fan_in) (He), bias ~ N(0, 0.1^2). */
static void build_mlp_tiny(zb *b)
{
    const char *x = zinput(b, "input", 2, (const int64_t[]){64});
    const char *w1 = znormal(b, "fc1.weight", 2, (const int64_t[]){64, 128}, 0.0, sqrt(2.0 / 64));
    const char *b1 = znormal(b, "fc1.bias", 1, (const int64_t[]){128}, 0.0, 0.1);
    const char *w2 = znormal(b, "fc2.weight", 2, (const int64_t[]){128, 32}, 0.0, sqrt(2.0 / 128));
    const char *b2 = znormal(b, "fc2.bias", 1, (const int64_t[]){32}, 0.0, 0.1);
    x = zop2(b, "fc1.matmul", "MatMul", x, w1);
    x = zop2(b, "fc1.add", "Add", x, b1);
    x = zop1(b, "relu1", "Relu", x);
    x = zop2(b, "fc2.matmul", "MatMul", x, w2);
    x = zop2(b, "fc2.add", "Add", x, b2);
    znode(b, "relu2", "Relu", 1, (const char *[]){x}, "output");
    zoutput(b, "output", 2, (const int64_t[]){32});
}

/* Normal quantiles by bisection on Phi (ZP values, once per build) and a fixed shuffle
 * pair (Fisher-Yates on fa_rng seeded with 0x5EED: part of the calibration, not of the weights). */
static void zparticles_init(zb *b)
{
    for (int i = 0; i < ZP; i++) {
        double p = (i + 0.5) / ZP, lo = -10, hi = 10;
        for (int it = 0; it < 64; it++) {
            double mid = 0.5 * (lo + hi);
            if (Phi(mid) < p) lo = mid;
            else hi = mid;
        }
        b->q[i] = (float)(0.5 * (lo + hi));
        b->perm[i] = b->perm2[i] = i;
    }
    fa_rng r;
    fa_rng_seed(&r, 0x5EED);
    for (int k = 0; k < 2; k++) {
        int *p = k ? b->perm2 : b->perm;
        for (int i = ZP - 1; i > 0; i--) {
            int j = (int)(fa_rng_u64(&r) % (uint64_t)(i + 1));
            int t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
    }
}

/* ---- registry of models ---- */

typedef struct zoo_entry {
    fa_zoo_info info;
    void (*build)(zb *b);
} zoo_entry;

static const zoo_entry k_zoo[] = {
    {{"resnet50", "torchvision ResNet-50 v1.5: input [B,3,224,224] -> output [B,1000]; "
                  "53 Conv(no bias)+BatchNormalization, 25,557,032 parameters"},
     build_resnet50},
    {{"mobilenetv2", "torchvision MobileNetV2 (width 1.0): input [B,3,224,224] -> output [B,1000]; "
                     "depthwise convs, ReLU6 as Clip, 3,504,872 parameters"},
     build_mobilenetv2},
    {{"bert-layer", "one BERT-base encoder layer (12 heads, no mask): hidden [B,128,768] -> "
                    "output [B,128,768]; Erf GELU, LayerNormalization op + decomposed LayerNorm"},
     build_bert_layer},
    {{"gpt2-block", "one GPT-2 small block (12 heads, causal Where mask): hidden [B,128,768] -> "
                    "output [B,128,768]; Split qkv, tanh GELU, decomposed LayerNorm"},
     build_gpt2_block},
    {{"mlp-tiny", "two MatMul+Add+Relu layers: input [B,64] -> output [B,32] (CI-sized)"},
     build_mlp_tiny},
    {{"convnet-tiny", "two Conv+BN+Relu blocks, residual Add, pool, Gemm: input [B,3,32,32] -> "
                      "output [B,10] (CI-sized)"},
     build_convnet_tiny},
};
#define ZOO_N ((int)(sizeof k_zoo / sizeof k_zoo[0]))

int fa_zoo_count(void) { return ZOO_N; }

const fa_zoo_info *fa_zoo_at(int i)
{
    return (i >= 0 && i < ZOO_N) ? &k_zoo[i].info : NULL;
}

uint64_t fa_zoo_default_seed(const char *name)
{
    return 0x5EEDull + fa_hash64(name, strlen(name));
}

fa_status fa_zoo_build_seeded(fa_ctx *ctx, const char *name, int batch, uint64_t seed, fa_graph **out)
{
    const zoo_entry *e = NULL;
    for (int i = 0; i < ZOO_N; i++)
        if (strcmp(k_zoo[i].info.name, name) == 0) e = &k_zoo[i];
    if (!e) {
        fa_buf known;
        fa_buf_init(&known);
        for (int i = 0; i < ZOO_N; i++) fa_buf_printf(&known, "%s%s", i ? ", " : "", k_zoo[i].info.name);
        fa_status s = fa_ctx_error(ctx, FA_ERR_INPUT, "zoo:%s: unknown zoo model (known: %s)", name,
                                   known.data ? known.data : "");
        fa_buf_free(&known);
        return s;
    }
    if (batch < 1)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "zoo:%s: batch must be >= 1, got %d", name, batch);
    zb b = {ctx, fa_graph_create(name), seed, batch, FA_OK, fa_arena_create(1 << 16)};
    if (!b.g || !b.scratch) {
        fa_graph_free(b.g);
        fa_arena_free(b.scratch);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "zoo:%s: out of memory", name);
    }
    fa_status st = fa_graph_set_opset(ctx, b.g, "", 17); /* first: nodes record their opset */
    if (st == FA_OK) {
        b.g->path = zs(&b, "zoo:%s", name);
        b.g->producer_name = "fuse-advise";
        b.g->producer_version = FA_VERSION_STRING;
        zparticles_init(&b);
        e->build(&b);
        st = b.st;
    }
    fa_arena_free(b.scratch);
    if (st == FA_OK) st = fa_graph_index(ctx, b.g);
    if (st) {
        fa_ctx_wrap(ctx, st, "zoo:%s: ", name);
        fa_graph_free(b.g);
        return st;
    }
    *out = b.g;
    return FA_OK;
}

fa_status fa_zoo_build(fa_ctx *ctx, const char *name, int batch, fa_graph **out)
{
    return fa_zoo_build_seeded(ctx, name, batch, fa_zoo_default_seed(name), out);
}
