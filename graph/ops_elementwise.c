/* graph/ops_elementwise — elementwise (unary) and broadcast (binary, variadic, Where) ops:
 * shape inference, FLOPs/bytes formulas and reference CPU kernels.
 *
 * Semantics follow the ONNX operator spec (docs/Operators.md, docs/Broadcasting.md) for
 * every opset up to 23; the per-op formulas and opset notes are in docs/ops-elementwise.md.
 * FLOP convention: one arithmetic op, comparison or transcendental (exp, log, tanh, erf,
 * sqrt, pow, sin, cos) counts 1 FLOP; bytes are every input read once at its own size plus
 * every output written once (fa_cost_io). */
#include "ops-impl.h"
#include "op_math.h"
#include "vmath.h"

#include <float.h>
#include <pthread.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Parallel loops only pay above this many elements (OpenMP fork/join costs ~µs). */
#define EW_PAR_MIN 32768
/* Elements per parallel task. */
#define EW_CHUNK 16384

/* fn(ctx, i0, len) over [0, ne) in chunks of EW_CHUNK elements: split statically over `threads`
 * from EW_PAR_MIN elements on, in order on the calling thread below it (no team: ops-impl.h). */
typedef void (*ew_chunk_fn)(const void *ctx, int64_t i0, int64_t len);
static void ew_chunks(int64_t ne, int threads, ew_chunk_fn fn, const void *ctx)
{
    int64_t tasks = (ne + EW_CHUNK - 1) / EW_CHUNK;
    if (FA_OMP_TEAM(threads, ne >= EW_PAR_MIN)) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t t = 0; t < tasks; t++) fn(ctx, t * EW_CHUNK, ne - t * EW_CHUNK < EW_CHUNK ? ne - t * EW_CHUNK : EW_CHUNK);
    } else {
        for (int64_t t = 0; t < tasks; t++) fn(ctx, t * EW_CHUNK, ne - t * EW_CHUNK < EW_CHUNK ? ne - t * EW_CHUNK : EW_CHUNK);
    }
}

/* ------------------------------------------------------------------------------------------
 * dtype helpers
 * ---------------------------------------------------------------------------------------- */

/* Opset in force for the node; 0 (a graph built without opset_import) means "latest". */
static int node_opset(const fa_node *n)
{
    return n->opset > 0 ? n->opset : 1000;
}

static bool dt_is_float(fa_dtype t)
{
    return t == FA_DTYPE_FLOAT || t == FA_DTYPE_DOUBLE || t == FA_DTYPE_FLOAT16 ||
           t == FA_DTYPE_BFLOAT16;
}

static bool dt_is_int(fa_dtype t) { return fa_dtype_is_integer(t); } /* integer or bool */

static bool dt_is_numeric(fa_dtype t)
{
    return dt_is_float(t) || dt_is_int(t);
}

/* Store a double into any numeric dtype without undefined behaviour: float→integer
 * truncates toward zero (C and numpy astype), NaN becomes 0 and out-of-range values
 * saturate (ONNX leaves both undefined); bool = (v != 0), so NaN → true as in numpy. */
static void store_d(void *d, fa_dtype dt, int64_t i, double v)
{
    if (dt == FA_DTYPE_BOOL) { ((uint8_t *)d)[i] = v != 0.0; return; }
    if (!dt_is_int(dt)) { fa_store_from_double(d, dt, i, v); return; }
    fa_store_clamped_int(d, dt, i, v);
}

static int64_t numel_of(int rank, const int64_t *dims)
{
    int64_t ne = 1;
    for (int i = 0; i < rank; i++) ne *= dims[i];
    return ne;
}

/* ------------------------------------------------------------------------------------------
 * broadcast iteration plan: the output walked as rows of its (coalesced) innermost dim,
 * each input addressed through per-dim element strides (0 along broadcast dims).
 * ---------------------------------------------------------------------------------------- */

#define BC_MAX_IN 3

typedef struct bc_plan {
    int n_in;
    int rank;                           /* >= 1 after coalescing */
    int64_t dims[FA_MAX_RANK];
    int64_t st[BC_MAX_IN][FA_MAX_RANK]; /* element strides of each input */
    int64_t numel;
} bc_plan;

/* Inputs with (rank[k], dims[k]) broadcast to (rout, dout); size-1 dims dropped and adjacent
 * dims merged where every input is contiguous across them. */
static void bc_plan_make(bc_plan *p, int n_in, const int *ranks, const int64_t *const *dims,
                         int rout, const int64_t *dout)
{
    int64_t st[BC_MAX_IN][FA_MAX_RANK];
    for (int k = 0; k < n_in; k++) fa_bcast_strides(ranks[k], dims[k], rout, dout, st[k]);
    memset(p, 0, sizeof *p);
    p->n_in = n_in;
    p->numel = numel_of(rout, dout);
    /* Build innermost-first, then reverse. */
    int64_t rd[FA_MAX_RANK], rs[BC_MAX_IN][FA_MAX_RANK];
    int r = 0;
    for (int i = rout - 1; i >= 0; i--) {
        if (dout[i] == 1) continue;
        if (r > 0) {
            bool merge = true;
            for (int k = 0; k < n_in; k++)
                if (st[k][i] != rs[k][r - 1] * rd[r - 1]) merge = false;
            if (merge) {
                rd[r - 1] *= dout[i];
                continue;
            }
        }
        rd[r] = dout[i];
        for (int k = 0; k < n_in; k++) rs[k][r] = st[k][i];
        r++;
    }
    if (r == 0) {
        rd[0] = 1;
        for (int k = 0; k < n_in; k++) rs[k][0] = 0;
        r = 1;
    }
    p->rank = r;
    for (int i = 0; i < r; i++) {
        p->dims[i] = rd[r - 1 - i];
        for (int k = 0; k < n_in; k++) p->st[k][i] = rs[k][r - 1 - i];
    }
}

/* One run of `len` output elements starting at flat output index o_off; input k starts at
 * element off[k] and advances by s[k] per element. */
typedef void (*bc_row_fn)(const void *opctx, const fa_value *in, const int64_t *off,
                          const int64_t *s, fa_value *out, int64_t o_off, int64_t len);

/* Task t of bc_run: `chunk` elements (fewer at a row's end) of row t / per_row. */
static inline void bc_task(const bc_plan *p, bc_row_fn fn, const void *opctx, const fa_value *in, fa_value *out, int64_t t,
                           int64_t per_row, int64_t chunk)
{
    int last = p->rank - 1;
    int64_t inner = p->dims[last];
    int64_t row = t / per_row, j0 = (t % per_row) * chunk;
    int64_t len = inner - j0 < chunk ? inner - j0 : chunk;
    int64_t off[BC_MAX_IN], s[BC_MAX_IN];
    for (int k = 0; k < p->n_in; k++) {
        off[k] = j0 * p->st[k][last];
        s[k] = p->st[k][last];
    }
    int64_t rem = row;
    for (int d = last - 1; d >= 0 && rem; d--) {
        int64_t idx = rem % p->dims[d];
        rem /= p->dims[d];
        for (int k = 0; k < p->n_in; k++) off[k] += idx * p->st[k][d];
    }
    fn(opctx, in, off, s, out, row * inner + j0, len);
}

static void bc_run(const bc_plan *p, bc_row_fn fn, const void *opctx, const fa_value *in,
                   fa_value *out, int threads)
{
    if (p->numel <= 0) return;
    int64_t inner = p->dims[p->rank - 1];
    int64_t rows = p->numel / inner;
    int64_t chunk = inner > EW_CHUNK ? EW_CHUNK : inner;
    int64_t per_row = (inner + chunk - 1) / chunk;
    int64_t tasks = rows * per_row;
    if (FA_OMP_TEAM(threads, p->numel >= EW_PAR_MIN)) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t t = 0; t < tasks; t++) bc_task(p, fn, opctx, in, out, t, per_row, chunk);
    } else {
        for (int64_t t = 0; t < tasks; t++) bc_task(p, fn, opctx, in, out, t, per_row, chunk);
    }
}

/* ------------------------------------------------------------------------------------------
 * unary elementwise ops
 * ---------------------------------------------------------------------------------------- */

/* The ops with one scalar expression are graph/op_math.h's table (FA_UNARY_*, Gelu's two forms
 * and Clip among them); these follow it: Round and Sign (no float expression of their own). */
typedef enum uop {
    U_ROUND = FA_UNARY_COUNT, U_SIGN,
    U_COUNT
} uop;

typedef struct uop_desc {
    const char *name;
    int op;          /* fa_unary_op, or uop past the table */
    unsigned flops;  /* FLOPs per output element */
    bool ints;       /* defined on integer dtypes too (ONNX type constraints) */
} uop_desc;

static const uop_desc k_unary[] = {
    {"Relu", FA_UNARY_RELU, 1, true},           {"LeakyRelu", FA_UNARY_LEAKY_RELU, 2, false},
    {"Sigmoid", FA_UNARY_SIGMOID, 3, false},    {"Tanh", FA_UNARY_TANH, 1, false},
    {"HardSigmoid", FA_UNARY_HARD_SIGMOID, 4, false}, {"HardSwish", FA_UNARY_HARD_SWISH, 5, false},
    {"Elu", FA_UNARY_ELU, 3, false},            {"Selu", FA_UNARY_SELU, 4, false},
    {"Softplus", FA_UNARY_SOFTPLUS, 3, false},  {"Softsign", FA_UNARY_SOFTSIGN, 3, false},
    {"Mish", FA_UNARY_MISH, 5, false},          {"Erf", FA_UNARY_ERF, 1, false},
    {"Gelu", FA_UNARY_GELU, 5, false},                 {"Swish", FA_UNARY_SWISH, 5, false},
    {"Sqrt", FA_UNARY_SQRT, 1, false},          {"Exp", FA_UNARY_EXP, 1, false},
    {"Log", FA_UNARY_LOG, 1, false},            {"Neg", FA_UNARY_NEG, 1, true},
    {"Abs", FA_UNARY_ABS, 1, true},             {"Reciprocal", FA_UNARY_RECIPROCAL, 1, false},
    {"Floor", FA_UNARY_FLOOR, 1, false},        {"Ceil", FA_UNARY_CEIL, 1, false},
    {"Round", U_ROUND, 1, false},               {"Sign", U_SIGN, 1, true},
    {"Sin", FA_UNARY_SIN, 1, false},            {"Cos", FA_UNARY_COS, 1, false},
    {"Tan", FA_UNARY_TAN, 1, false},            {"Asin", FA_UNARY_ASIN, 1, false},
    {"Acos", FA_UNARY_ACOS, 1, false},          {"Atan", FA_UNARY_ATAN, 1, false},
    {"Sinh", FA_UNARY_SINH, 1, false},          {"Cosh", FA_UNARY_COSH, 1, false},
    {"Asinh", FA_UNARY_ASINH, 1, false},        {"Acosh", FA_UNARY_ACOSH, 1, false},
    {"Atanh", FA_UNARY_ATANH, 1, false},        {"Celu", FA_UNARY_CELU, 4, false},
    {"ThresholdedRelu", FA_UNARY_THRESHOLDED_RELU, 1, false}, {"Shrink", FA_UNARY_SHRINK, 2, false},
    {"Clip", FA_UNARY_CLIP, 2, true},
};

static const uop_desc *unary_desc(const char *op_type)
{
    for (size_t i = 0; i < sizeof k_unary / sizeof k_unary[0]; i++)
        if (strcmp(k_unary[i].name, op_type) == 0) return &k_unary[i];
    return NULL;
}

static const uop_desc *unary_desc_of(const fa_node *n);

typedef struct uparams {
    int op;         /* fa_unary_op, or uop past the table */
    double alpha, beta, gamma;  /* op attributes (defaults from the ONNX spec) */
    double lo, hi;              /* Clip bounds */
} uparams;

/* Attributes → parameters. Clip bounds come from attributes (opset < 11) or from the
 * optional scalar inputs 1 and 2 (opset >= 11); an omitted bound is unbounded. */
static fa_status uparams_make(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                              int op, uparams *p)
{
    memset(p, 0, sizeof *p);
    p->op = op;
    p->lo = -INFINITY;
    p->hi = INFINITY;
    const fa_unary_math *m = fa_unary_math_get((fa_unary_op)op);
    if (!m) return FA_OK;
    const char *sel = NULL;
    if (fa_unary_math_selected(m->op)) m = fa_unary_math_for_node(n, &sel); /* Gelu's `approximate` picks its row */
    if (!m)
        return fa_node_unsupported(ctx, n, "%s='%s' (expected \"none\" or \"tanh\")", sel ? sel : "attribute",
                                   sel ? fa_node_attr_string(n, sel, "") : "");
    p->op = (int)m->op;
    /* the table's parameters: an attribute, or from some opset an input (Clip's bounds); an absent
     * one takes the spec default as written */
    double *v[3] = {&p->alpha, &p->beta, &p->gamma};
    for (int k = 0; k < 3; k++) {
        int ix = fa_unary_math_param_input(n, m, k);
        *v[k] = m->def[k];
        if (ix < 0) {
            if (m->attr[k] && fa_node_attr(n, m->attr[k])) *v[k] = fa_node_attr_float(n, m->attr[k], 0);
        } else if (ix < n_in && in[ix].data) {
            if (fa_value_numel(&in[ix]) < 1) return fa_node_error(ctx, n, "%s input %d (%s) is empty", n->op_type, ix, m->attr[k]);
            *v[k] = fa_load_as_double(in[ix].data, in[ix].dtype, 0);
        }
    }
    if (m->op == FA_UNARY_CLIP) { /* the reference and the integer kernels read the bounds as lo, hi */
        p->lo = p->alpha;
        p->hi = p->beta;
    }
    return FA_OK;
}

static double gelu_d(double x)
{
    return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
}

static double gelu_tanh_d(double x)
{
    /* sqrt(2/pi) = 0.7978845608028654 (ONNX Gelu, approximate="tanh") */
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static double softplus_d(double x)
{
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

/* Reference formula of each unary op in double (ONNX spec definitions). */
static double unary_d(const uparams *p, double x)
{
    switch (p->op) {
    case FA_UNARY_RELU: return x > 0 ? x : (x != x ? x : 0.0);
    case FA_UNARY_LEAKY_RELU: return x < 0 ? p->alpha * x : x;
    case FA_UNARY_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case FA_UNARY_TANH: return tanh(x);
    case FA_UNARY_HARD_SIGMOID: return fmax(0.0, fmin(1.0, p->alpha * x + p->beta));
    case FA_UNARY_HARD_SWISH: return x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5));
    case FA_UNARY_ELU: return x < 0 ? p->alpha * (exp(x) - 1.0) : x;
    case FA_UNARY_SELU: return x > 0 ? p->gamma * x : p->gamma * (p->alpha * exp(x) - p->alpha);
    case FA_UNARY_SOFTPLUS: return softplus_d(x);
    case FA_UNARY_SOFTSIGN: return x / (1.0 + fabs(x));
    case FA_UNARY_MISH: return x * tanh(softplus_d(x));
    case FA_UNARY_ERF: return erf(x);
    case FA_UNARY_GELU: return gelu_d(x);
    case FA_UNARY_GELU_TANH: return gelu_tanh_d(x);
    case FA_UNARY_SWISH: return x / (1.0 + exp(-p->alpha * x));
    case FA_UNARY_SQRT: return sqrt(x);
    case FA_UNARY_EXP: return exp(x);
    case FA_UNARY_LOG: return log(x);
    case FA_UNARY_NEG: return -x;
    case FA_UNARY_ABS: return fabs(x);
    case FA_UNARY_RECIPROCAL: return 1.0 / x;
    case FA_UNARY_FLOOR: return floor(x);
    case FA_UNARY_CEIL: return ceil(x);
    case U_ROUND: return nearbyint(x); /* ties to even, as ONNX Round */
    case U_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
    case FA_UNARY_SIN: return sin(x);
    case FA_UNARY_COS: return cos(x);
    case FA_UNARY_TAN: return tan(x);
    case FA_UNARY_ASIN: return asin(x);
    case FA_UNARY_ACOS: return acos(x);
    case FA_UNARY_ATAN: return atan(x);
    case FA_UNARY_SINH: return sinh(x);
    case FA_UNARY_COSH: return cosh(x);
    case FA_UNARY_ASINH: return asinh(x);
    case FA_UNARY_ACOSH: return acosh(x);
    case FA_UNARY_ATANH: return atanh(x);
    /* Celu-12: max(0, x) + min(0, alpha·(exp(x/alpha) - 1)), for either sign of alpha */
    case FA_UNARY_CELU: return x != x ? x : fmax(0.0, x) + fmin(0.0, p->alpha * (exp(x / p->alpha) - 1.0));
    case FA_UNARY_THRESHOLDED_RELU: return x > p->alpha ? x : 0.0;
    case FA_UNARY_SHRINK: return x < -p->alpha ? x + p->beta : x > p->alpha ? x - p->beta : 0.0;
    case FA_UNARY_CLIP: return fmin(fmax(x, p->lo), p->hi);
    default: return x;
    }
}

/* Integer dtypes (Relu, Neg, Abs, Sign, Clip): exact in int64. */
static int64_t unary_i(const uparams *p, int64_t x, int64_t lo, int64_t hi)
{
    switch (p->op) {
    case FA_UNARY_RELU: return x > 0 ? x : 0;
    case FA_UNARY_NEG: return (int64_t)(0 - (uint64_t)x);
    case FA_UNARY_ABS: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case U_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
    case FA_UNARY_CLIP: x = x < lo ? lo : x; return x > hi ? hi : x;
    default: return x;
    }
}

/* Vector math in the table's loops. The float functions the table's expressions call are declared
 * `omp declare simd`, so gcc vectorises the `omp simd` loops that call them through the vector
 * function ABI names (_ZGVdN8v_expf, ...). The product links SLEEF's GNU-ABI library ahead of
 * libm (CMakeLists.txt), so those names are SLEEF's 1-ULP u10 functions, as in the generated
 * kernels (runtime/cpu/compile.c); without it they are glibc's libmvec (tanhf erff log1pf since
 * glibc 2.35). Before this, every op without a hand-written SLEEF path (graph/vmath.c) called
 * scalar libm per element: Elu, Selu, Softplus, Log, Sin, Cos, Floor, Ceil ran 1.3-3.2x slower
 * than ONNX Runtime with its optimisations disabled, 0.15-0.9x since (bench/bench_unary_ops.sh,
 * bench/README.md). */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(_OPENMP) && !defined(__FAST_MATH__)
#pragma omp declare simd notinbranch
float expf(float);
#pragma omp declare simd notinbranch
float logf(float);
#pragma omp declare simd notinbranch
float sinf(float);
#pragma omp declare simd notinbranch
float cosf(float);
#if __GLIBC_PREREQ(2, 35)
#pragma omp declare simd notinbranch
float log1pf(float);
#pragma omp declare simd notinbranch
float tanhf(float);
#pragma omp declare simd notinbranch
float erff(float);
#pragma omp declare simd notinbranch
float tanf(float);
#pragma omp declare simd notinbranch
float asinf(float);
#pragma omp declare simd notinbranch
float acosf(float);
#pragma omp declare simd notinbranch
float atanf(float);
#pragma omp declare simd notinbranch
float sinhf(float);
#pragma omp declare simd notinbranch
float coshf(float);
#pragma omp declare simd notinbranch
float asinhf(float);
#pragma omp declare simd notinbranch
float acoshf(float);
#pragma omp declare simd notinbranch
float atanhf(float);
#endif
#endif
/* The table's loops in three instruction sets, picked once at load by the CPU (gcc's
 * target_clones, an ifunc): AVX-512 and AVX2 lanes call the matching vector functions
 * (_ZGVeN16v_, _ZGVdN8v_), and Floor/Ceil become one rounding instruction (SSE4.1) instead of a
 * libm call per element; the default clone keeps the project's baseline ISA. gcc on glibc only. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define FA_UNARY_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FA_UNARY_CLONES
#endif

/* float32 fast path over xs[0..len): the op switch sits outside the loops, one loop per op of the
 * graph/op_math.h table (its expression, x the element), then the ops lowered here. */
FA_UNARY_CLONES static void unary_f32(const uparams *p, const float *xs, float *y, int64_t len)
{
    const float a = (float)p->alpha, b = (float)p->beta, g = (float)p->gamma;
    (void)a;
    (void)b;
    (void)g;
    if (fa_vmath_available()) /* SLEEF, 8 AVX2 lanes, <= 1 ULP (graph/vmath.h) */
        switch ((int)p->op) {
        case FA_UNARY_SIGMOID: fa_vsigmoidf(xs, y, len); return;
        case FA_UNARY_TANH: fa_vtanhf(xs, y, len); return;
        case FA_UNARY_EXP: fa_vexpf(xs, y, len); return;
        case FA_UNARY_ERF: fa_verff(xs, y, len); return;
        case FA_UNARY_SWISH: fa_vswishf(xs, y, len, a); return;
        case FA_UNARY_GELU: fa_vgeluf(xs, y, len); return;
        case FA_UNARY_GELU_TANH: fa_vgelu_tanhf(xs, y, len); return;
        default: break;
        }
    switch ((int)p->op) {
    /* Softplus and Mish's inner softplus as max(x, 0) + log1p(exp(-|x|)): the same operations on
     * each element as the table's two-armed form (x + log1p(exp(-x)) for x > 0, else log1p(exp(x)),
     * plus 0), one exp and one log1p per lane where the vectorised two-armed form calls both arms'.
     * The table keeps the two arms: on CUDA a branch is cheap, and the one-armed form made the
     * every-op horizontal kernel spill on sm_90 (tests/unit/test_gate.c). */
    case FA_UNARY_SOFTPLUS:
#pragma omp simd
        for (int64_t i = 0; i < len; i++) { /* SIMD-CHECKED */
            const float x = xs[i];
            y[i] = (x > 0.0f ? x : 0.0f) + log1pf(expf(-fabsf(x)));
        }
        return;
    case FA_UNARY_MISH:
#pragma omp simd
        for (int64_t i = 0; i < len; i++) { /* SIMD-CHECKED */
            const float x = xs[i];
            y[i] = x * tanhf((x > 0.0f ? x : 0.0f) + log1pf(expf(-fabsf(x))));
        }
        return;
    default: break;
    }
    switch ((int)p->op) {
#define F32_CASE_(ID, NAME, AA, DA, AB, DB, AG, DG, EXPR, BOUND)                                                  \
    case FA_UNARY_##ID:                                                                                   \
        _Pragma("omp simd") for (int64_t i = 0; i < len; i++)                                            \
        {                                                                                                 \
            const float x = xs[i];                                                                        \
            y[i] = EXPR;                                                                                  \
        }                                                                                                 \
        break;
        FA_UNARY_MATH(F32_CASE_) /* SIMD-CHECKED: gcc reports each row's loop here */
#undef F32_CASE_
    case U_ROUND: for (int64_t i = 0; i < len; i++) y[i] = nearbyintf(xs[i]); break;
    default: /* Sign: the double formula, float storage */
        for (int64_t i = 0; i < len; i++) y[i] = (float)unary_d(p, xs[i]);
        break;
    }
}

/* kernel_unary's float32 chunk: unary_f32 over elements [i0, i0 + len). */
typedef struct unary_job {
    const uparams *p;
    const float *x;
    float *y;
} unary_job;

static void unary_chunk(const void *ctx, int64_t i0, int64_t len)
{
    const unary_job *j = ctx;
    unary_f32(j->p, j->x + i0, j->y + i0, len);
}

static fa_status kernel_unary(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                              fa_value *out, int n_out, int threads)
{
    const uop_desc *d = unary_desc_of(n);
    if (!d) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': %s is not a unary op", n->name, n->op_type);
    uparams p;
    fa_status st = uparams_make(ctx, n, in, n_in, d->op, &p);
    if (st) return st;
    const fa_value *x = &in[0];
    fa_value *y = &out[0];
    int64_t ne = fa_value_numel(y);
    if (!dt_is_numeric(x->dtype) || x->dtype == FA_DTYPE_BOOL || y->dtype != x->dtype)
        return fa_node_unsupported(ctx, n, "dtype %s is not supported", fa_dtype_name(x->dtype));
    if (threads < 1) threads = 1;
    if (x->dtype == FA_DTYPE_FLOAT) {
        unary_job job = {&p, x->data, y->data};
        ew_chunks(ne, threads, unary_chunk, &job);
    } else if (dt_is_int(x->dtype)) {
        if (!d->ints)
            return fa_node_unsupported(ctx, n, "dtype %s is not supported (ONNX allows float types only)",
                                       fa_dtype_name(x->dtype));
        /* Clip bounds rounded into the integer domain (inputs share the tensor's int type). */
        int64_t lo = p.lo <= -9.2e18 ? INT64_MIN : (int64_t)p.lo;
        int64_t hi = p.hi >= 9.2e18 ? INT64_MAX : (int64_t)p.hi;
        if (FA_OMP_TEAM(threads, ne >= EW_PAR_MIN)) {
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t i = 0; i < ne; i++)
                fa_store_from_i64(y->data, y->dtype, i, unary_i(&p, fa_load_as_i64(x->data, x->dtype, i), lo, hi));
        } else {
            for (int64_t i = 0; i < ne; i++)
                fa_store_from_i64(y->data, y->dtype, i, unary_i(&p, fa_load_as_i64(x->data, x->dtype, i), lo, hi));
        }
    } else {
        if (FA_OMP_TEAM(threads, ne >= EW_PAR_MIN)) {
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t i = 0; i < ne; i++)
                store_d(y->data, y->dtype, i, unary_d(&p, fa_load_as_double(x->data, x->dtype, i)));
        } else {
            for (int64_t i = 0; i < ne; i++)
                store_d(y->data, y->dtype, i, unary_d(&p, fa_load_as_double(x->data, x->dtype, i)));
        }
    }
    return FA_OK;
}

static fa_status infer_unary(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    if (x->dtype != FA_DTYPE_UNDEFINED && (!dt_is_numeric(x->dtype) || x->dtype == FA_DTYPE_BOOL))
        return fa_node_error(ctx, n, "input '%s' has dtype %s, expected a numeric type", x->name,
                             fa_dtype_name(x->dtype));
    if (strcmp(n->op_type, "Gelu") == 0) {
        const char *a = fa_node_attr_string(n, "approximate", "none");
        if (strcmp(a, "none") != 0 && strcmp(a, "tanh") != 0)
            return fa_node_unsupported(ctx, n, "approximate='%s' (expected \"none\" or \"tanh\")", a);
    }
    fa_set_out(g, n, 0, x->dtype, x->rank, x->dims);
    return FA_OK;
}

static fa_status infer_clip(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    for (int k = 1; k < n->n_inputs; k++) {
        fa_tensor *b = fa_graph_in(g, n, k);
        if (b && b->rank >= 0 && fa_tensor_numel(b) != 1)
            return fa_node_error(ctx, n, "%s input '%s' must be a scalar, has %lld elements",
                                 k == 1 ? "min" : "max", b->name, (long long)fa_tensor_numel(b));
    }
    return infer_unary(ctx, g, n);
}

/* numel(out) × per-op FLOPs (the table above); bytes = inputs + outputs. */
static void cost_unary(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    const uop_desc *d = unary_desc_of(n);
    fa_cost_io(g, n, d ? d->flops : 1, out);
}

/* Not (bool → bool), IsNaN and IsInf (float → bool). */
static fa_status infer_bool_unary(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    bool is_not = strcmp(n->op_type, "Not") == 0;
    if (x->dtype != FA_DTYPE_UNDEFINED && (is_not ? x->dtype != FA_DTYPE_BOOL : !dt_is_float(x->dtype)))
        return fa_node_error(ctx, n, "input '%s' has dtype %s, expected %s", x->name,
                             fa_dtype_name(x->dtype), is_not ? "bool" : "a float type");
    fa_set_out(g, n, 0, FA_DTYPE_BOOL, x->rank, x->dims);
    return FA_OK;
}

/* Not, IsNaN and IsInf over elements [i0, i0 + len): the float32 and bool forms as loops the
 * vectoriser takes (one byte out per element); the other float types through a double load. */
typedef enum bool_uop { BU_NOT, BU_ISNAN, BU_ISINF } bool_uop;
typedef struct bool_uctx {
    bool_uop op;
    bool pos, neg; /* IsInf's detect_positive, detect_negative (ONNX IsInf-10: both default 1) */
    const fa_value *x;
    uint8_t *y;
} bool_uctx;

static void bool_unary_chunk(const void *ctx, int64_t i0, int64_t len)
{
    const bool_uctx *c = ctx;
    uint8_t *y = c->y + i0;
    if (c->op == BU_NOT) {
        const uint8_t *x = (const uint8_t *)c->x->data + i0;
#pragma omp simd
        for (int64_t i = 0; i < len; i++) y[i] = x[i] == 0; /* SIMD-CHECKED */
        return;
    }
    if (c->x->dtype == FA_DTYPE_FLOAT) {
        const float *x = (const float *)c->x->data + i0;
        if (c->op == BU_ISNAN) {
#pragma omp simd
            for (int64_t i = 0; i < len; i++) y[i] = x[i] != x[i]; /* SIMD-CHECKED */
        } else {
            const float hi = c->pos ? INFINITY : NAN, lo = c->neg ? -INFINITY : NAN; /* NaN matches nothing */
#pragma omp simd
            for (int64_t i = 0; i < len; i++) y[i] = (x[i] == hi) | (x[i] == lo); /* SIMD-CHECKED */
        }
        return;
    }
    for (int64_t i = 0; i < len; i++) {
        double v = fa_load_as_double(c->x->data, c->x->dtype, i0 + i);
        y[i] = c->op == BU_ISNAN ? v != v : (v == INFINITY && c->pos) || (v == -INFINITY && c->neg);
    }
}

static fa_status kernel_bool_unary(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                   fa_value *out, int n_out, int threads)
{
    int64_t ne = fa_value_numel(&out[0]);
    bool_uctx c = {.op = !strcmp(n->op_type, "Not") ? BU_NOT : !strcmp(n->op_type, "IsNaN") ? BU_ISNAN : BU_ISINF,
                   .pos = fa_node_attr_int(n, "detect_positive", 1) != 0,
                   .neg = fa_node_attr_int(n, "detect_negative", 1) != 0,
                   .x = &in[0],
                   .y = out[0].data};
    if (c.op == BU_NOT ? in[0].dtype != FA_DTYPE_BOOL : !dt_is_float(in[0].dtype))
        return fa_node_unsupported(ctx, n, "dtype %s is not supported", fa_dtype_name(in[0].dtype));
    ew_chunks(ne, threads, bool_unary_chunk, &c);
    return FA_OK;
}

/* ------------------------------------------------------------------------------------------
 * binary and variadic broadcasting ops
 * ---------------------------------------------------------------------------------------- */

typedef enum bop {
    B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_MOD, B_MAX, B_MIN, B_PRELU, B_COPY,
    B_EQ, B_LT, B_GT, B_LE, B_GE, B_AND, B_OR, B_XOR,
    B_COUNT
} bop;

static bool bop_is_cmp(bop o) { return o >= B_EQ; } /* output bool */

typedef struct bop_desc {
    const char *name;
    bop op;
    bool variadic;     /* Sum, Max, Min, Mean: 1..N inputs */
} bop_desc;

static const bop_desc k_binary[] = {
    {"Add", B_ADD, false}, {"Sub", B_SUB, false}, {"Mul", B_MUL, false}, {"Div", B_DIV, false},
    {"Pow", B_POW, false}, {"Mod", B_MOD, false}, {"PRelu", B_PRELU, false},
    {"Equal", B_EQ, false}, {"Less", B_LT, false}, {"Greater", B_GT, false},
    {"LessOrEqual", B_LE, false}, {"GreaterOrEqual", B_GE, false},
    {"And", B_AND, false}, {"Or", B_OR, false}, {"Xor", B_XOR, false},
    {"Sum", B_ADD, true}, {"Mean", B_ADD, true}, {"Max", B_MAX, true}, {"Min", B_MIN, true},
};

static const bop_desc *binary_desc(const char *op_type)
{
    for (size_t i = 0; i < sizeof k_binary / sizeof k_binary[0]; i++)
        if (strcmp(k_binary[i].name, op_type) == 0) return &k_binary[i];
    return NULL;
}

/* The k_unary / k_binary entry of node n's op. The kernels found it by strcmp over the names on
 * every call (and the math row again by name), ~500 instructions: as much as a Relu over a few
 * hundred floats. Now found once per op of this file's table, by the op's place in it (filled once,
 * pthread_once), and by name only for a node whose op is not in the table. */
enum { EW_DESC_OPS = 160 };
static const uop_desc *g_unary_of[EW_DESC_OPS];
static const bop_desc *g_binary_of[EW_DESC_OPS];
static int g_desc_ops;
static pthread_once_t g_desc_once = PTHREAD_ONCE_INIT;

static void desc_init(void)
{
    int i = 0;
    for (; i < EW_DESC_OPS && fa_ops_elementwise[i].name; i++) {
        g_unary_of[i] = unary_desc(fa_ops_elementwise[i].name);
        g_binary_of[i] = binary_desc(fa_ops_elementwise[i].name);
    }
    g_desc_ops = i;
}

/* n's op's index in fa_ops_elementwise, or -1 (an op of another table, or none). */
static int ew_op_index(const fa_node *n)
{
    pthread_once(&g_desc_once, desc_init);
    uintptr_t a = (uintptr_t)n->op, b = (uintptr_t)fa_ops_elementwise;
    if (!n->op || a < b || (a - b) % sizeof(fa_op) || (a - b) / sizeof(fa_op) >= (uintptr_t)g_desc_ops) return -1;
    return (int)((a - b) / sizeof(fa_op));
}

static const uop_desc *unary_desc_of(const fa_node *n)
{
    int i = ew_op_index(n);
    return i >= 0 ? g_unary_of[i] : unary_desc(n->op_type);
}

static const bop_desc *binary_desc_of(const fa_node *n)
{
    int i = ew_op_index(n);
    return i >= 0 ? g_binary_of[i] : binary_desc(n->op_type);
}

typedef struct bctx {
    bop op;
    bool fmod;  /* Mod: fmod=1 → C fmod (sign of dividend); 0 → sign of divisor */
    bool u64;   /* integer operands are uint64: unsigned division, remainder and order */
} bctx;

static double bin_d(const bctx *c, double x, double y)
{
    switch (c->op) {
    case B_ADD: return x + y;
    case B_SUB: return x - y;
    case B_MUL: return x * y;
    case B_DIV: return x / y;
    case B_POW: return pow(x, y);
    case B_MOD: {
        double r = fmod(x, y);
        if (!c->fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
        return r;
    }
    case B_MAX: return (x > y || x != x) ? x : y;  /* NaN propagates (numpy maximum) */
    case B_MIN: return (x < y || x != x) ? x : y;
    case B_PRELU: return x < 0 ? x * y : x;
    case B_COPY: return x;
    case B_EQ: return x == y;
    case B_LT: return x < y;
    case B_GT: return x > y;
    case B_LE: return x <= y;
    case B_GE: return x >= y;
    case B_AND: return (x != 0) && (y != 0);
    case B_OR: return (x != 0) || (y != 0);
    case B_XOR: return (x != 0) != (y != 0);
    default: return 0;
    }
}

/* Integer semantics: wrap-around add/sub/mul, Div truncates toward zero (C, and numpy's
 * float-divide-then-astype used by the ONNX reference), Mod per `fmod`. Division by zero is
 * undefined in ONNX; it gives 0 here. */
/* x^y in integers, wrapping as numpy's power on int types; a negative exponent gives the
 * truncated 1/x^|y| (0 unless |x| = 1; numpy refuses it). */
static int64_t ipow_wrap(int64_t x, int64_t y)
{
    if (y < 0) return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)x;
    for (uint64_t e = (uint64_t)y; e; e >>= 1, b *= b)
        if (e & 1) r *= b;
    return (int64_t)r;
}

static int64_t bin_u64(const bctx *c, uint64_t x, uint64_t y)
{
    switch (c->op) {
    case B_DIV: return y ? (int64_t)(x / y) : 0;
    case B_MOD: return y ? (int64_t)(x % y) : 0;
    case B_MAX: return (int64_t)(x > y ? x : y);
    case B_MIN: return (int64_t)(x < y ? x : y);
    case B_LT: return x < y;
    case B_GT: return x > y;
    case B_LE: return x <= y;
    case B_GE: return x >= y;
    default: return 0;
    }
}

static int64_t bin_i(const bctx *c, int64_t x, int64_t y)
{
    if (c->u64 && (c->op == B_DIV || c->op == B_MOD || c->op == B_MAX || c->op == B_MIN ||
                   (c->op >= B_LT && c->op <= B_GE)))
        return bin_u64(c, (uint64_t)x, (uint64_t)y);
    switch (c->op) {
    case B_POW: return ipow_wrap(x, y);
    case B_ADD: return (int64_t)((uint64_t)x + (uint64_t)y);
    case B_SUB: return (int64_t)((uint64_t)x - (uint64_t)y);
    case B_MUL: return (int64_t)((uint64_t)x * (uint64_t)y);
    case B_DIV:
        if (y == 0) return 0;
        if (y == -1) return (int64_t)(0 - (uint64_t)x);
        return x / y;
    case B_MOD: {
        if (y == 0) return 0;
        if (y == -1) return 0;
        int64_t r = x % y;
        if (!c->fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
        return r;
    }
    case B_MAX: return x > y ? x : y;
    case B_MIN: return x < y ? x : y;
    case B_PRELU: return x < 0 ? (int64_t)((uint64_t)x * (uint64_t)y) : x;
    case B_COPY: return x;
    case B_EQ: return x == y;
    case B_LT: return x < y;
    case B_GT: return x > y;
    case B_LE: return x <= y;
    case B_GE: return x >= y;
    case B_AND: return x && y;
    case B_OR: return x || y;
    case B_XOR: return !x != !y;
    default: return 0;
    }
}

static void row_bin_f32(const void *opctx, const fa_value *in, const int64_t *off,
                        const int64_t *s, fa_value *out, int64_t o_off, int64_t len)
{
    const bctx *c = opctx;
    const float *a = (const float *)in[0].data + off[0], *b = (const float *)in[1].data + off[1];
    float *o = (float *)out->data + o_off;
    int64_t sa = s[0], sb = s[1];
    /* The float math of every case is graph/op_math.h's binary table (fa_binary_math_eval with a
     * constant op folds to the expression). The contiguous and scalar-operand forms of every op
     * but Pow are written out, with `omp simd` because GCC's -O2 "very-cheap" cost model does not
     * vectorize loops of unknown length; the selects of Max/Min/PRelu (NaN kept as op_math.h
     * says) vectorise because the op kernels are compiled with -fno-trapping-math
     * (CMakeLists.txt FA_KERNEL_MATH_FLAGS; tests/source/check_vectorised.sh checks each). */
#define ROW_BIN_CASE_(OP, X, Y)                                                                   \
    case B_##OP:                                                                                  \
        _Pragma("omp simd") for (int64_t j = 0; j < len; j++) o[j] = fa_binary_math_eval(FA_BINARY_##OP, X, Y); \
        return;
#define ROW_BIN_CASES_(X, Y)                                                                      \
    ROW_BIN_CASE_(ADD, X, Y) ROW_BIN_CASE_(SUB, X, Y) ROW_BIN_CASE_(MUL, X, Y) ROW_BIN_CASE_(DIV, X, Y) \
    ROW_BIN_CASE_(MAX, X, Y) ROW_BIN_CASE_(MIN, X, Y) ROW_BIN_CASE_(PRELU, X, Y)
    if (sa == 1 && sb == 1) {
        switch (c->op) {
            ROW_BIN_CASES_(a[j], b[j]) /* SIMD-CHECKED */
        default: break;
        }
    } else if (sa == 1 && sb == 0) {
        const float y = b[0];
        switch (c->op) {
            ROW_BIN_CASES_(a[j], y) /* SIMD-CHECKED */
        default: break;
        }
    } else if (sa == 0 && sb == 1) {
        const float x = a[0];
        switch (c->op) {
            ROW_BIN_CASES_(x, b[j]) /* SIMD-CHECKED */
        default: break;
        }
    }
#undef ROW_BIN_CASES_
#undef ROW_BIN_CASE_
    switch (c->op) {
    case B_ADD: for (int64_t j = 0; j < len; j++) o[j] = fa_binary_math_eval(FA_BINARY_ADD, a[j * sa], b[j * sb]); break;
    case B_SUB: for (int64_t j = 0; j < len; j++) o[j] = fa_binary_math_eval(FA_BINARY_SUB, a[j * sa], b[j * sb]); break;
    case B_MUL: for (int64_t j = 0; j < len; j++) o[j] = fa_binary_math_eval(FA_BINARY_MUL, a[j * sa], b[j * sb]); break;
    case B_DIV: for (int64_t j = 0; j < len; j++) o[j] = fa_binary_math_eval(FA_BINARY_DIV, a[j * sa], b[j * sb]); break;
    case B_POW:
        /* A constant exponent of 2 or 3 (LayerNorm's variance, GELU's tanh form) is a product, as
         * ONNX Runtime's Pow computes it: x*x is powf(x, 2) correctly rounded; x*x*x is within
         * 1 ulp of powf(x, 3) (two roundings), NaN/Inf as powf. */
        if (sb == 0 && sa == 1 && (b[0] == 2.0f || b[0] == 3.0f)) {
            if (b[0] == 2.0f) {
#pragma omp simd
                for (int64_t j = 0; j < len; j++) o[j] = a[j] * a[j];
            } else {
#pragma omp simd
                for (int64_t j = 0; j < len; j++) o[j] = a[j] * a[j] * a[j];
            }
        } else if ((sa == 0 || sa == 1) && (sb == 0 || sb == 1) && fa_vmath_available()) fa_vpowf(a, sa, b, sb, o, len);
        else for (int64_t j = 0; j < len; j++) o[j] = fa_binary_math_eval(FA_BINARY_POW, a[j * sa], b[j * sb]);
        break;
    case B_COPY: for (int64_t j = 0; j < len; j++) o[j] = a[j * sa]; break;
    case B_PRELU:
        for (int64_t j = 0; j < len; j++) o[j] = fa_binary_math_eval(FA_BINARY_PRELU, a[j * sa], b[j * sb]);
        break;
    case B_MAX:
        for (int64_t j = 0; j < len; j++) o[j] = fa_binary_math_eval(FA_BINARY_MAX, a[j * sa], b[j * sb]);
        break;
    case B_MIN:
        for (int64_t j = 0; j < len; j++) o[j] = fa_binary_math_eval(FA_BINARY_MIN, a[j * sa], b[j * sb]);
        break;
    default:
        for (int64_t j = 0; j < len; j++) o[j] = (float)bin_d(c, a[j * sa], b[j * sb]);
        break;
    }
}

static void row_bin_d(const void *opctx, const fa_value *in, const int64_t *off,
                      const int64_t *s, fa_value *out, int64_t o_off, int64_t len)
{
    const bctx *c = opctx;
    for (int64_t j = 0; j < len; j++) {
        double x = fa_load_as_double(in[0].data, in[0].dtype, off[0] + j * s[0]);
        double y = fa_load_as_double(in[1].data, in[1].dtype, off[1] + j * s[1]);
        store_d(out->data, out->dtype, o_off + j, bin_d(c, x, y));
    }
}

/* Equal, Less, Greater, LessOrEqual and GreaterOrEqual of two float32, int64 or int32 operands
 * into bool bytes (the masks of transformer exports: BERT's attention mask, GPT-2's and LLaMA's
 * causal masks over [1, 1, S, S] or [1, H, S, S]), which row_bin_d and row_bin_i ran through a
 * double or int64 load, a switch and a store per element: 0.65 ms for 196,608 float elements where
 * ONNX Runtime with its optimisations disabled takes 0.03 ms (bench/bench_mask_ops.sh). The
 * contiguous and scalar-operand forms are written out for the vectoriser; a NaN compares false
 * (Equal too), as bin_d's double comparisons; int64 and int32 compare signed (uint64 stays on
 * row_bin_i). Cloned per instruction set as the unary loops (FA_UNARY_CLONES). */
#define ROW_CMP_LOOP_(OPR, X, Y) _Pragma("omp simd") for (int64_t j = 0; j < len; j++) o[j] = (X)OPR(Y)
#define ROW_CMP_FORMS_(OPR)                                                                         \
    do {                                                                                            \
        if (sa == 1 && sb == 1) ROW_CMP_LOOP_(OPR, a[j], b[j]);                 \
        else if (sa == 1 && sb == 0) ROW_CMP_LOOP_(OPR, a[j], b[0]);            \
        else if (sa == 0 && sb == 1) ROW_CMP_LOOP_(OPR, a[0], b[j]);            \
        else for (int64_t j = 0; j < len; j++) o[j] = a[j * sa] OPR b[j * sb];                     \
    } while (0)
#define ROW_CMP_FN_(NAME, T)                                                                        \
    FA_UNARY_CLONES static void NAME(const void *opctx, const fa_value *in, const int64_t *off, const int64_t *s,    \
                     fa_value *out, int64_t o_off, int64_t len)                                     \
    {                                                                                               \
        const bctx *c = opctx;                                                                      \
        const T *a = (const T *)in[0].data + off[0], *b = (const T *)in[1].data + off[1];          \
        uint8_t *o = (uint8_t *)out->data + o_off;                                                  \
        const int64_t sa = s[0], sb = s[1];                                                         \
        switch (c->op) {                                                                            \
        case B_EQ: ROW_CMP_FORMS_(==); break;                                                       \
        case B_LT: ROW_CMP_FORMS_(<); break;                                                        \
        case B_GT: ROW_CMP_FORMS_(>); break;                                                        \
        case B_LE: ROW_CMP_FORMS_(<=); break;                                                       \
        default: ROW_CMP_FORMS_(>=); break; /* B_GE: run_binary picks these rows for comparisons only */ \
        }                                                                                           \
    }
ROW_CMP_FN_(row_cmp_f32, float) /* SIMD-CHECKED */
ROW_CMP_FN_(row_cmp_i64, int64_t) /* int64 compares need SSE4.2: vector in the AVX2 and AVX-512 clones only */
ROW_CMP_FN_(row_cmp_i32, int32_t) /* SIMD-CHECKED */
#undef ROW_CMP_FN_
#undef ROW_CMP_FORMS_
#undef ROW_CMP_LOOP_

/* And, Or, Xor and Equal on bool operands (one byte each, 0 or 1 as ONNX writes them; any
 * non-zero byte read as true): the causal and padding masks of transformer exports (GPT-2's
 * legacy export ANDs a [1, 1, S, S] mask per run), which row_bin_i ran through an int64 load,
 * a switch and a store per element (34 us for 4,096 elements at sequence 64). */
static void row_bin_bool(const void *opctx, const fa_value *in, const int64_t *off,
                         const int64_t *s, fa_value *out, int64_t o_off, int64_t len)
{
    const bctx *c = opctx;
    const uint8_t *a = (const uint8_t *)in[0].data + off[0], *b = (const uint8_t *)in[1].data + off[1];
    uint8_t *o = (uint8_t *)out->data + o_off;
    int64_t sa = s[0], sb = s[1];
    switch (c->op) {
    case B_AND: for (int64_t j = 0; j < len; j++) o[j] = (a[j * sa] != 0) & (b[j * sb] != 0); break;
    case B_OR: for (int64_t j = 0; j < len; j++) o[j] = (a[j * sa] != 0) | (b[j * sb] != 0); break;
    case B_XOR: for (int64_t j = 0; j < len; j++) o[j] = (a[j * sa] != 0) ^ (b[j * sb] != 0); break;
    default: for (int64_t j = 0; j < len; j++) o[j] = (a[j * sa] != 0) == (b[j * sb] != 0); break; /* B_EQ */
    }
}

static void row_bin_i(const void *opctx, const fa_value *in, const int64_t *off,
                      const int64_t *s, fa_value *out, int64_t o_off, int64_t len)
{
    const bctx *c = opctx;
    for (int64_t j = 0; j < len; j++) {
        int64_t x = fa_load_as_i64(in[0].data, in[0].dtype, off[0] + j * s[0]);
        int64_t y = fa_load_as_i64(in[1].data, in[1].dtype, off[1] + j * s[1]);
        fa_store_from_i64(out->data, out->dtype, o_off + j, bin_i(c, x, y));
    }
}

/* Legacy broadcasting of opset < 7 (Add/Sub/Mul/Div-6, Pow-1, Equal/Less/Greater/And/Or/Xor-1):
 * without broadcast=1 both shapes must be equal; with it, B's dims line up with A's starting
 * at `axis` (default: suffix alignment), dims of 1 in B broadcast, and the output is A's shape.
 * PRelu < 7 lines the slope up with the channel axis 1 (a one-element slope is shared).
 * Writes B's effective shape at A's rank into (rb_out, db_out). */
static fa_status legacy_align(fa_ctx *ctx, const fa_node *n, bop op, int ra, const int64_t *da,
                              int rb, const int64_t *db, int *rb_out, int64_t *db_out)
{
    int64_t axis;
    if (op == B_PRELU) {
        if (numel_of(rb, db) == 1) { *rb_out = 0; return FA_OK; }
        axis = 1;
    } else if (fa_node_attr_int(n, "broadcast", 0)) {
        axis = fa_node_attr_int(n, "axis", ra - rb);
        if (axis < 0) axis += ra;
    } else {
        bool same = ra == rb;
        for (int i = 0; same && i < ra; i++) same = da[i] == db[i];
        if (!same)
            return fa_node_error(ctx, n, "opset %d without broadcast=1 needs equal input shapes (ranks %d and %d)",
                                 n->opset, ra, rb);
        *rb_out = rb;
        memcpy(db_out, db, sizeof(int64_t) * (size_t)rb);
        return FA_OK;
    }
    if (axis < 0 || axis > ra - rb) /* axis + rb > ra, without overflowing for a huge axis */
        return fa_node_error(ctx, n, "legacy broadcast: input B of rank %d does not fit input A of rank %d at axis %lld",
                             rb, ra, (long long)axis);
    for (int i = 0; i < ra; i++) db_out[i] = 1;
    for (int i = 0; i < rb; i++) {
        if (db[i] != 1 && db[i] != da[axis + i])
            return fa_node_error(ctx, n, "legacy broadcast: B dim %d (%lld) does not match A dim %lld (%lld) at axis %lld",
                                 i, (long long)db[i], (long long)(axis + i), (long long)da[axis + i], (long long)axis);
        db_out[axis + i] = db[i];
    }
    *rb_out = ra;
    return FA_OK;
}

static bool uses_legacy_bcast(const fa_node *n, const bop_desc *d)
{
    return !d->variadic && node_opset(n) < 7;
}

/* Shape of input `k`'s contribution after legacy alignment (only input 1 is ever realigned). */
static fa_status binary_shapes(fa_ctx *ctx, const fa_node *n, const bop_desc *d, int ra,
                               const int64_t *da, int rb, const int64_t *db, int *rb_eff,
                               int64_t *db_eff, int *rout, int64_t *dout)
{
    if (uses_legacy_bcast(n, d)) {
        fa_status st = legacy_align(ctx, n, d->op, ra, da, rb, db, rb_eff, db_eff);
        if (st) return st;
    } else {
        *rb_eff = rb;
        memcpy(db_eff, db, sizeof(int64_t) * (size_t)rb);
    }
    fa_status st = fa_bcast_shape(ctx, n, ra, da, *rb_eff, db_eff, rout, dout);
    if (st) return st;
    if (d->op == B_PRELU) { /* unidirectional: the slope broadcasts to X, never the reverse */
        bool same = *rout == ra;
        for (int i = 0; same && i < ra; i++) same = dout[i] == da[i];
        if (!same) return fa_node_error(ctx, n, "slope does not broadcast to the shape of X");
    }
    return FA_OK;
}

static fa_status infer_binary(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    const bop_desc *d = binary_desc_of(n);
    if (!d) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': %s is not a broadcast op", n->name, n->op_type);
    fa_tensor *a = fa_req_input(ctx, g, n, 0);
    if (!a) return fa_ctx_status(ctx);
    int r = a->rank;
    int64_t dims[FA_MAX_RANK];
    memcpy(dims, a->dims, sizeof dims);
    for (int k = 1; k < n->n_inputs; k++) {
        fa_tensor *b = fa_req_input(ctx, g, n, k);
        if (!b) return fa_ctx_status(ctx);
        if (d->op != B_POW && a->dtype && b->dtype && a->dtype != b->dtype)
            return fa_node_error(ctx, n, "input '%s' is %s but input '%s' is %s (types must match)",
                                 a->name, fa_dtype_name(a->dtype), b->name, fa_dtype_name(b->dtype));
        int rb;
        int64_t db[FA_MAX_RANK];
        fa_status st = binary_shapes(ctx, n, d, r, dims, b->rank, b->dims, &rb, db, &r, dims);
        if (st) return st;
    }
    if ((d->op == B_AND || d->op == B_OR || d->op == B_XOR) && a->dtype && a->dtype != FA_DTYPE_BOOL)
        return fa_node_error(ctx, n, "input '%s' is %s, expected bool", a->name, fa_dtype_name(a->dtype));
    if (a->dtype && !dt_is_numeric(a->dtype))
        return fa_node_error(ctx, n, "input '%s' has dtype %s, expected a numeric type", a->name,
                             fa_dtype_name(a->dtype));
    fa_set_out(g, n, 0, bop_is_cmp(d->op) ? FA_DTYPE_BOOL : a->dtype, r, dims);
    return FA_OK;
}

/* out = op(a, b) with broadcasting; `a` may alias `out` (same shape, stride 1). */
static fa_status run_binary(fa_ctx *ctx, const fa_node *n, const bop_desc *d, const bctx *c,
                            const fa_value *a, const fa_value *b, fa_value *out, int threads)
{
    int rb;
    int64_t db[FA_MAX_RANK], dout[FA_MAX_RANK];
    int rout;
    fa_status st = binary_shapes(ctx, n, d, a->rank, a->dims, b->rank, b->dims, &rb, db, &rout, dout);
    if (st) return st;
    if (rout != out->rank || numel_of(rout, dout) != fa_value_numel(out))
        return fa_node_error(ctx, n, "output buffer shape does not match the broadcast shape");
    fa_value ins[2] = {*a, *b};
    ins[1].rank = rb;
    memcpy(ins[1].dims, db, sizeof(int64_t) * (size_t)rb);
    int ranks[2] = {a->rank, rb};
    const int64_t *dims[2] = {a->dims, db};
    bc_plan p;
    bc_plan_make(&p, 2, ranks, dims, out->rank, out->dims);
    bc_row_fn fn;
    if (a->dtype == FA_DTYPE_FLOAT && b->dtype == FA_DTYPE_FLOAT && out->dtype == FA_DTYPE_FLOAT)
        fn = row_bin_f32;
    else if (bop_is_cmp(c->op) && c->op <= B_GE && a->dtype == b->dtype && out->dtype == FA_DTYPE_BOOL &&
             (a->dtype == FA_DTYPE_FLOAT || a->dtype == FA_DTYPE_INT64 || a->dtype == FA_DTYPE_INT32))
        fn = a->dtype == FA_DTYPE_FLOAT ? row_cmp_f32 : a->dtype == FA_DTYPE_INT64 ? row_cmp_i64 : row_cmp_i32;
    else if (a->dtype == FA_DTYPE_BOOL && b->dtype == FA_DTYPE_BOOL && out->dtype == FA_DTYPE_BOOL &&
             (c->op == B_AND || c->op == B_OR || c->op == B_XOR || c->op == B_EQ))
        fn = row_bin_bool;
    else if (dt_is_int(a->dtype) && dt_is_int(b->dtype) && (c->op != B_POW || dt_is_int(out->dtype)))
        fn = row_bin_i;
    else
        fn = row_bin_d;
    bc_run(&p, fn, c, ins, out, threads);
    return FA_OK;
}

static fa_status kernel_binary(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                               fa_value *out, int n_out, int threads)
{
    const bop_desc *d = binary_desc_of(n);
    if (!d) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "node '%s': %s is not a broadcast op", n->name, n->op_type);
    for (int k = 0; k < n_in; k++)
        if ((!in[k].data && fa_value_numel(&in[k]) > 0) || !dt_is_numeric(in[k].dtype))
            return fa_node_unsupported(ctx, n, "input %d is missing or has unsupported dtype %s", k,
                                       fa_dtype_name(in[k].dtype));
    bctx c = {d->op, fa_node_attr_int(n, "fmod", 0) != 0, in[0].dtype == FA_DTYPE_UINT64};
    if (!d->variadic) return run_binary(ctx, n, d, &c, &in[0], &in[1], &out[0], threads);
    /* Variadic: out = in0 (broadcast copy), then out = op(out, in_k) for each further input. */
    int ranks[2] = {in[0].rank, in[0].rank};
    const int64_t *dims[2] = {in[0].dims, in[0].dims};
    bc_plan p;
    bc_plan_make(&p, 2, ranks, dims, out[0].rank, out[0].dims);
    fa_value ins[2] = {in[0], in[0]};
    bc_row_fn fn = (in[0].dtype == FA_DTYPE_FLOAT && out[0].dtype == FA_DTYPE_FLOAT) ? row_bin_f32
                   : dt_is_int(in[0].dtype) ? row_bin_i : row_bin_d;
    bctx copy = {B_COPY, false, false};
    bc_run(&p, fn, &copy, ins, &out[0], threads);
    fa_status st;
    for (int k = 1; k < n_in; k++) {
        st = run_binary(ctx, n, d, &c, &out[0], &in[k], &out[0], threads);
        if (st) return st;
    }
    if (strcmp(n->op_type, "Mean") == 0 && n_in > 1) {
        int64_t ne = fa_value_numel(&out[0]);
        if (out[0].dtype == FA_DTYPE_FLOAT) {
            float *o = out[0].data, inv = 1.0f / (float)n_in;
            for (int64_t i = 0; i < ne; i++) o[i] *= inv;
        } else {
            for (int64_t i = 0; i < ne; i++)
                store_d(out[0].data, out[0].dtype, i, fa_load_as_double(out[0].data, out[0].dtype, i) / n_in);
        }
    }
    return FA_OK;
}

/* Binary: 1 FLOP per output element. Variadic Sum/Max/Min: (inputs − 1) per output element;
 * Mean: one more for the scaling. */
static void cost_binary(const fa_graph *g, const fa_node *n, fa_op_cost *out)
{
    const bop_desc *d = binary_desc_of(n);
    uint64_t f = 1;
    if (d && d->variadic) f = n->n_inputs > 1 ? (uint64_t)(n->n_inputs - 1) : 0;
    if (strcmp(n->op_type, "Mean") == 0) f++;
    fa_cost_io(g, n, f, out);
}

/* ------------------------------------------------------------------------------------------
 * Where
 * ---------------------------------------------------------------------------------------- */

static fa_status infer_where(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *c = fa_req_input(ctx, g, n, 0), *x = c ? fa_req_input(ctx, g, n, 1) : NULL,
              *y = x ? fa_req_input(ctx, g, n, 2) : NULL;
    if (!y) return fa_ctx_status(ctx);
    if (c->dtype && c->dtype != FA_DTYPE_BOOL)
        return fa_node_error(ctx, n, "condition '%s' is %s, expected bool", c->name, fa_dtype_name(c->dtype));
    if (x->dtype && y->dtype && x->dtype != y->dtype)
        return fa_node_error(ctx, n, "X '%s' is %s but Y '%s' is %s (types must match)", x->name,
                             fa_dtype_name(x->dtype), y->name, fa_dtype_name(y->dtype));
    int r;
    int64_t d[FA_MAX_RANK];
    fa_status st = fa_bcast_shape(ctx, n, c->rank, c->dims, x->rank, x->dims, &r, d);
    if (!st) st = fa_bcast_shape(ctx, n, r, d, y->rank, y->dims, &r, d);
    if (st) return st;
    fa_set_out(g, n, 0, x->dtype, r, d);
    return FA_OK;
}

static void row_where(const void *opctx, const fa_value *in, const int64_t *off,
                      const int64_t *s, fa_value *out, int64_t o_off, int64_t len)
{
    size_t es = fa_dtype_size(out->dtype);
    const uint8_t *c = (const uint8_t *)in[0].data + off[0];
    const char *x = in[1].data, *y = in[2].data;
    char *o = (char *)out->data + (size_t)o_off * es;
    if (es == 4) {
        const float *xf = (const float *)x + off[1], *yf = (const float *)y + off[2];
        float *of = (float *)o;
        for (int64_t j = 0; j < len; j++) memcpy(&of[j], c[j * s[0]] ? &xf[j * s[1]] : &yf[j * s[2]], 4);
        return;
    }
    for (int64_t j = 0; j < len; j++) {
        const char *src = c[j * s[0]] ? x + (size_t)(off[1] + j * s[1]) * es
                                      : y + (size_t)(off[2] + j * s[2]) * es;
        memcpy(o + (size_t)j * es, src, es);
    }
}

static fa_status kernel_where(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                              fa_value *out, int n_out, int threads)
{
    if (in[0].dtype != FA_DTYPE_BOOL || in[1].dtype != out[0].dtype || in[2].dtype != out[0].dtype ||
        !fa_dtype_size(out[0].dtype))
        return fa_node_unsupported(ctx, n, "unsupported dtypes (condition %s, X %s, Y %s)",
                                   fa_dtype_name(in[0].dtype), fa_dtype_name(in[1].dtype),
                                   fa_dtype_name(in[2].dtype));
    int ranks[3] = {in[0].rank, in[1].rank, in[2].rank};
    const int64_t *dims[3] = {in[0].dims, in[1].dims, in[2].dims};
    bc_plan p;
    bc_plan_make(&p, 3, ranks, dims, out[0].rank, out[0].dims);
    bc_run(&p, row_where, NULL, in, &out[0], threads);
    return FA_OK;
}

/* ------------------------------------------------------------------------------------------
 * Cast, CastLike
 * ---------------------------------------------------------------------------------------- */

static bool dt_castable(int64_t t)
{
    return t > 0 && t < FA_DTYPE_COUNT && t != FA_DTYPE_STRING && fa_dtype_size((fa_dtype)t) > 0;
}

static fa_status infer_cast(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    int64_t to;
    if (strcmp(n->op_type, "CastLike") == 0) {
        fa_tensor *like = fa_req_input(ctx, g, n, 1);
        if (!like) return fa_ctx_status(ctx);
        to = like->dtype;
    } else {
        const fa_attr *a = fa_node_attr(n, "to");
        if (!a) return fa_node_error(ctx, n, "missing attribute 'to'");
        to = a->i;
    }
    if (!dt_castable(to))
        return fa_node_unsupported(ctx, n, "cast to element type %lld is not supported", (long long)to);
    if (x->dtype && !dt_castable(x->dtype))
        return fa_node_unsupported(ctx, n, "cast from %s is not supported", fa_dtype_name(x->dtype));
    fa_set_out(g, n, 0, (fa_dtype)to, x->rank, x->dims);
    return FA_OK;
}

/* The casts of transformer exports' index and mask paths (float <-> int64/int32, bool <-> float,
 * int64 <-> int32, to bool) over elements [i0, i0 + len), each written out for the compiler: the
 * generic path below loads and stores every element through a double and a switch, 0.8 ms for
 * 196,608 elements where ONNX Runtime takes 0.03-0.1 ms (bench/bench_mask_ops.sh). Each case
 * computes what that path does: float to integer truncated toward zero, saturated at the
 * target's range ([lo, hi] of fa_dtype_int_range) and NaN to 0; int64 to float rounded through
 * double; to bool v != 0 (NaN true); int64 to int32 wrapped. Cloned per instruction set as the
 * unary loops (FA_UNARY_CLONES: AVX-512 converts float to int64 in vector). false: not one of
 * these pairs. */
typedef struct cast_job {
    fa_dtype from, to;
    const void *x;
    void *y;
} cast_job;

#define CAST_LOOP_(TF, TT, EXPR)                                                                    \
    do {                                                                                            \
        const TF *x = (const TF *)j->x + i0;                                                       \
        TT *y = (TT *)j->y + i0;                                                                    \
        _Pragma("omp simd") for (int64_t i = 0; i < len; i++)                                       \
        {                                                                                           \
            const TF v = x[i];                                                                      \
            y[i] = (TT)(EXPR);                                                                      \
        }                                                                                           \
        return true;                                                                                \
    } while (0)
#define CAST_PAIR_(F, T) ((unsigned)(F) * FA_DTYPE_COUNT + (unsigned)(T))
FA_UNARY_CLONES static bool cast_fast(const cast_job *j, int64_t i0, int64_t len)
{
    switch (CAST_PAIR_(j->from, j->to)) {
    case CAST_PAIR_(FA_DTYPE_FLOAT, FA_DTYPE_INT64):
        CAST_LOOP_(float, int64_t, v != v ? 0 : (double)v <= -9223372036854775808.0 ? INT64_MIN
                                   : (double)v >= 9223372036854774784.0 ? (int64_t)9223372036854774784.0 : (int64_t)v);
    case CAST_PAIR_(FA_DTYPE_FLOAT, FA_DTYPE_INT32):
        CAST_LOOP_(float, int32_t, v != v ? 0 : v <= -2147483648.0f ? INT32_MIN : v >= 2147483648.0f ? INT32_MAX : (int32_t)v);
    case CAST_PAIR_(FA_DTYPE_INT64, FA_DTYPE_FLOAT): CAST_LOOP_(int64_t, float, (float)(double)v);
    case CAST_PAIR_(FA_DTYPE_INT32, FA_DTYPE_FLOAT): CAST_LOOP_(int32_t, float, v); /* SIMD-CHECKED */
    case CAST_PAIR_(FA_DTYPE_BOOL, FA_DTYPE_FLOAT): CAST_LOOP_(uint8_t, float, v != 0); /* SIMD-CHECKED */
    case CAST_PAIR_(FA_DTYPE_FLOAT, FA_DTYPE_BOOL): CAST_LOOP_(float, uint8_t, v != 0); /* SIMD-CHECKED */
    case CAST_PAIR_(FA_DTYPE_INT64, FA_DTYPE_BOOL): CAST_LOOP_(int64_t, uint8_t, v != 0);
    case CAST_PAIR_(FA_DTYPE_INT32, FA_DTYPE_BOOL): CAST_LOOP_(int32_t, uint8_t, v != 0); /* SIMD-CHECKED */
    case CAST_PAIR_(FA_DTYPE_BOOL, FA_DTYPE_INT64): CAST_LOOP_(uint8_t, int64_t, v != 0);
    case CAST_PAIR_(FA_DTYPE_BOOL, FA_DTYPE_INT32): CAST_LOOP_(uint8_t, int32_t, v != 0); /* SIMD-CHECKED */
    case CAST_PAIR_(FA_DTYPE_INT64, FA_DTYPE_INT32): CAST_LOOP_(int64_t, int32_t, (uint32_t)(uint64_t)v);
    case CAST_PAIR_(FA_DTYPE_INT32, FA_DTYPE_INT64): CAST_LOOP_(int32_t, int64_t, v);
    case CAST_PAIR_(FA_DTYPE_FLOAT, FA_DTYPE_DOUBLE): CAST_LOOP_(float, double, v); /* SIMD-CHECKED */
    case CAST_PAIR_(FA_DTYPE_DOUBLE, FA_DTYPE_FLOAT): CAST_LOOP_(double, float, v); /* SIMD-CHECKED */
    default: return false;
    }
}
#undef CAST_PAIR_
#undef CAST_LOOP_

static void cast_chunk(const void *ctx, int64_t i0, int64_t len) { (void)cast_fast(ctx, i0, len); }

/* Cast semantics: float→int truncates toward zero (NaN → 0, out of range saturates),
 * int→narrower int wraps, anything→bool is (v != 0), float→float16/bfloat16 rounds to nearest
 * even. `saturate` (opset 19) only concerns float8 types, which are not supported. */
static fa_status kernel_cast(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                             fa_value *out, int n_out, int threads)
{
    fa_dtype from = in[0].dtype, to = out[0].dtype;
    if (!dt_castable(from) || !dt_castable(to))
        return fa_node_unsupported(ctx, n, "cast %s → %s is not supported", fa_dtype_name(from), fa_dtype_name(to));
    int64_t ne = fa_value_numel(&out[0]);
    if (from == to) {
        if (ne > 0) memcpy(out[0].data, in[0].data, (size_t)ne * fa_dtype_size(to));
        return FA_OK;
    }
    if (threads < 1) threads = 1;
    cast_job job = {from, to, in[0].data, out[0].data};
    if (cast_fast(&job, 0, 0)) { /* a pair cast_fast writes out (asked with no elements): its loop over chunks */
        ew_chunks(ne, threads, cast_chunk, &job);
        return FA_OK;
    }
    if (from == FA_DTYPE_FLOAT && to == FA_DTYPE_FLOAT16) {
        const float *x = in[0].data;
        uint16_t *y = out[0].data;
        if (FA_OMP_TEAM(threads, ne >= EW_PAR_MIN)) {
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t i = 0; i < ne; i++) y[i] = fa_float_to_half(x[i]);
        } else {
            for (int64_t i = 0; i < ne; i++) y[i] = fa_float_to_half(x[i]);
        }
    } else if (from == FA_DTYPE_FLOAT16 && to == FA_DTYPE_FLOAT) {
        const uint16_t *x = in[0].data;
        float *y = out[0].data;
        if (FA_OMP_TEAM(threads, ne >= EW_PAR_MIN)) {
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t i = 0; i < ne; i++) y[i] = fa_half_to_float(x[i]);
        } else {
            for (int64_t i = 0; i < ne; i++) y[i] = fa_half_to_float(x[i]);
        }
    } else if (dt_is_int(from) && dt_is_int(to)) {
        if (FA_OMP_TEAM(threads, ne >= EW_PAR_MIN)) {
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t i = 0; i < ne; i++) fa_store_from_i64(out[0].data, to, i, fa_load_as_i64(in[0].data, from, i));
        } else {
            for (int64_t i = 0; i < ne; i++) fa_store_from_i64(out[0].data, to, i, fa_load_as_i64(in[0].data, from, i));
        }
    } else if (from == FA_DTYPE_DOUBLE && (to == FA_DTYPE_FLOAT16 || to == FA_DTYPE_BFLOAT16)) {
        /* via float: double rounding can differ from a direct rounding by one ulp of half */
        if (FA_OMP_TEAM(threads, ne >= EW_PAR_MIN)) {
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t i = 0; i < ne; i++) store_d(out[0].data, to, i, ((const double *)in[0].data)[i]);
        } else {
            for (int64_t i = 0; i < ne; i++) store_d(out[0].data, to, i, ((const double *)in[0].data)[i]);
        }
    } else {
        if (FA_OMP_TEAM(threads, ne >= EW_PAR_MIN)) {
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t i = 0; i < ne; i++) store_d(out[0].data, to, i, fa_load_as_double(in[0].data, from, i));
        } else {
            for (int64_t i = 0; i < ne; i++) store_d(out[0].data, to, i, fa_load_as_double(in[0].data, from, i));
        }
    }
    return FA_OK;
}

/* ------------------------------------------------------------------------------------------
 * Dropout (inference)
 * ---------------------------------------------------------------------------------------- */

/* Mask dtype: bool since opset 10, the data type T before. */
static fa_dtype dropout_mask_dtype(const fa_node *n, fa_dtype x)
{
    return node_opset(n) >= 10 ? FA_DTYPE_BOOL : x;
}

static fa_status infer_dropout(fa_ctx *ctx, fa_graph *g, fa_node *n)
{
    fa_tensor *x = fa_req_input(ctx, g, n, 0);
    if (!x) return fa_ctx_status(ctx);
    /* training_mode (opset >= 12) known at load time: refuse real dropout early. */
    if (fa_input_is_const(g, n, 2)) {
        const fa_tensor *tm = fa_graph_in(g, n, 2);
        float ratio = 0.5f;
        if (fa_input_is_const(g, n, 1)) {
            fa_status st = fa_const_float(ctx, g, n, 1, &ratio);
            if (st) return st;
        } else if (fa_graph_in(g, n, 1)) {
            ratio = 1; /* unknown at load time: assume it drops */
        }
        if (fa_load_as_double(tm->data, tm->dtype, 0) != 0 && ratio > 0)
            return fa_node_unsupported(ctx, n, "training_mode=true with ratio %g (only inference dropout is supported)",
                                       ratio);
    }
    fa_set_out(g, n, 0, x->dtype, x->rank, x->dims);
    fa_set_out(g, n, 1, dropout_mask_dtype(n, x->dtype), x->rank, x->dims);
    return FA_OK;
}

/* Inference: output = input, mask all true (ONNX Dropout with training_mode false). Opsets < 7
 * are treated as inference whatever is_test says (as ONNX Runtime does, which has no
 * training kernel for them). */
static fa_status kernel_dropout(fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                fa_value *out, int n_out, int threads)
{
    double ratio = node_opset(n) >= 12 ? 0.5 : fa_node_attr_float(n, "ratio", 0.5f);
    if (n_in > 1 && in[1].data) ratio = fa_load_as_double(in[1].data, in[1].dtype, 0);
    bool training = n_in > 2 && in[2].data && fa_load_as_double(in[2].data, in[2].dtype, 0) != 0;
    if (training && ratio > 0)
        return fa_node_unsupported(ctx, n, "training_mode=true with ratio %g (only inference dropout is supported)",
                                   ratio);
    int64_t ne = fa_value_numel(&out[0]);
    size_t es = fa_dtype_size(out[0].dtype);
    if (ne > 0 && out[0].data != in[0].data) memcpy(out[0].data, in[0].data, (size_t)ne * es);
    if (n_out > 1 && out[1].data) {
        if (out[1].dtype == FA_DTYPE_BOOL) memset(out[1].data, 1, (size_t)ne);
        else
            for (int64_t i = 0; i < ne; i++) store_d(out[1].data, out[1].dtype, i, 1.0);
    }
    return FA_OK;
}

/* ------------------------------------------------------------------------------------------
 * the table
 * ---------------------------------------------------------------------------------------- */

#define UNARY(NAME, ATTRS, DOC)                                                                              \
    {.name = NAME, .domain = "", .pattern = FA_PATTERN_ELEMWISE, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, \
     .max_outputs = 1, .infer = infer_unary, .cost = cost_unary, .kernel = kernel_unary, .doc = DOC, .attrs = ATTRS}
#define BINARY(NAME, ATTRS, DOC)                                                                             \
    {.name = NAME, .domain = "", .pattern = FA_PATTERN_BROADCAST, .min_inputs = 2, .max_inputs = 2,          \
     .min_outputs = 1, .max_outputs = 1, .infer = infer_binary, .cost = cost_binary, .kernel = kernel_binary, \
     .doc = DOC, .attrs = ATTRS}
#define VARIADIC(NAME, ATTRS, DOC)                                                                           \
    {.name = NAME, .domain = "", .pattern = FA_PATTERN_BROADCAST, .min_inputs = 1, .max_inputs = -1,         \
     .min_outputs = 1, .max_outputs = 1, .infer = infer_binary, .cost = cost_binary, .kernel = kernel_binary, \
     .doc = DOC, .attrs = ATTRS}

/* Attributes each op reads (fa_attr_spec; ONNX operator spec, every opset). consumed_inputs
 * (opset 1-5) was an in-place hint without effect on the values. */
static const fa_attr_spec a_legacy[] = {{"consumed_inputs", FA_ATTR_INTS, NULL, 0, 5}, {0}};
static const fa_attr_spec a_alpha[] = {{"alpha", FA_ATTR_FLOAT}, {"consumed_inputs", FA_ATTR_INTS, NULL, 0, 5}, {0}};
static const fa_attr_spec a_shrink[] = {{"lambd", FA_ATTR_FLOAT}, {"bias", FA_ATTR_FLOAT}, {0}};
static const fa_attr_spec a_alpha_only[] = {{"alpha", FA_ATTR_FLOAT}, {0}}; /* ops born after opset 5 */
static const fa_attr_spec a_hardsigmoid[] = {
    {"alpha", FA_ATTR_FLOAT}, {"beta", FA_ATTR_FLOAT}, {"consumed_inputs", FA_ATTR_INTS, NULL, 0, 5}, {0}};
static const fa_attr_spec a_selu[] = {
    {"alpha", FA_ATTR_FLOAT}, {"gamma", FA_ATTR_FLOAT}, {"consumed_inputs", FA_ATTR_INTS, NULL, 0, 5}, {0}};
static const fa_attr_spec a_swish[] = {{"alpha", FA_ATTR_FLOAT}, {0}};
static const fa_attr_spec a_gelu[] = {{"approximate", FA_ATTR_STRING, "none|tanh"}, {0}};
/* Clip-1/6 bounds are attributes; from opset 11 they are inputs and the kernel ignores attributes. */
static const fa_attr_spec a_clip[] = {{"min", FA_ATTR_FLOAT, NULL, 0, 10}, {"max", FA_ATTR_FLOAT, NULL, 0, 10},
                                      {"consumed_inputs", FA_ATTR_INTS, NULL, 0, 5}, {0}};
/* Cast-19+ saturate and Cast-24+ round_mode only concern float8/float4 targets, which are refused. */
static const fa_attr_spec a_cast[] = {{"to", FA_ATTR_INT}, {"saturate", FA_ATTR_INT, "0|1"},
                                      {"round_mode", FA_ATTR_STRING, "up|down"}, {0}};
static const fa_attr_spec a_castlike[] = {{"saturate", FA_ATTR_INT, "0|1"}, {"round_mode", FA_ATTR_STRING, "up|down"}, {0}};
/* Dropout: ratio is an attribute until opset 10 (an input from 12); is_test (opset 1-6) is
 * read as inference whatever its value, as ONNX Runtime does; seed only matters in training. */
static const fa_attr_spec a_dropout[] = {{"ratio", FA_ATTR_FLOAT, NULL, 0, 11}, {"is_test", FA_ATTR_INT, "0|1", 0, 6},
                                         {"seed", FA_ATTR_INT}, {"consumed_inputs", FA_ATTR_INTS, NULL, 0, 5}, {0}};
/* Legacy broadcasting (opset < 7): broadcast=1 with an alignment axis. */
static const fa_attr_spec a_bcast_legacy[] = {{"broadcast", FA_ATTR_INT, "0|1", 0, 6}, {"axis", FA_ATTR_INT, NULL, 0, 6}, {0}};
static const fa_attr_spec a_arith_legacy[] = {{"broadcast", FA_ATTR_INT, "0|1", 0, 6}, {"axis", FA_ATTR_INT, NULL, 0, 6},
                                              {"consumed_inputs", FA_ATTR_INTS, NULL, 0, 5}, {0}};
static const fa_attr_spec a_mod[] = {{"fmod", FA_ATTR_INT, "0|1"}, {0}};
/* IsInf-10: which infinities count (both by default). */
static const fa_attr_spec a_isinf[] = {{"detect_positive", FA_ATTR_INT, "0|1"}, {"detect_negative", FA_ATTR_INT, "0|1"}, {0}};

const fa_op fa_ops_elementwise[] = {
    UNARY("Relu", a_legacy, "max(x,0); FLOPs = N; bytes = 2N·es"),
    UNARY("LeakyRelu", a_alpha, "x<0 ? alpha·x : x; FLOPs = 2N; bytes = 2N·es"),
    UNARY("Sigmoid", a_legacy, "1/(1+exp(-x)); FLOPs = 3N; bytes = 2N·es"),
    UNARY("Tanh", a_legacy, "tanh(x); FLOPs = N; bytes = 2N·es"),
    UNARY("HardSigmoid", a_hardsigmoid, "max(0,min(1,alpha·x+beta)); FLOPs = 4N; bytes = 2N·es"),
    UNARY("HardSwish", NULL, "x·max(0,min(1,x/6+1/2)); FLOPs = 5N; bytes = 2N·es"),
    UNARY("Elu", a_alpha, "x<0 ? alpha·(exp(x)-1) : x; FLOPs = 3N; bytes = 2N·es"),
    UNARY("Selu", a_selu, "gamma·(x>0 ? x : alpha·exp(x)-alpha); FLOPs = 4N; bytes = 2N·es"),
    UNARY("Softplus", NULL, "log(1+exp(x)); FLOPs = 3N; bytes = 2N·es"),
    UNARY("Softsign", NULL, "x/(1+|x|); FLOPs = 3N; bytes = 2N·es"),
    UNARY("Mish", NULL, "x·tanh(softplus(x)); FLOPs = 5N; bytes = 2N·es"),
    UNARY("Erf", NULL, "erf(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Gelu", a_gelu, "0.5x(1+erf(x/√2)) or tanh form; FLOPs = 5N; bytes = 2N·es"),
    UNARY("Swish", a_swish, "x·sigmoid(alpha·x); FLOPs = 5N; bytes = 2N·es"),
    UNARY("Sqrt", a_legacy, "sqrt(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Exp", a_legacy, "exp(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Log", a_legacy, "log(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Neg", a_legacy, "-x; FLOPs = N; bytes = 2N·es"),
    UNARY("Abs", a_legacy, "|x|; FLOPs = N; bytes = 2N·es"),
    UNARY("Reciprocal", a_legacy, "1/x; FLOPs = N; bytes = 2N·es"),
    UNARY("Floor", a_legacy, "floor(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Ceil", a_legacy, "ceil(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Round", NULL, "round half to even; FLOPs = N; bytes = 2N·es"),
    UNARY("Sign", NULL, "sign(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Sin", NULL, "sin(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Cos", NULL, "cos(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Tan", NULL, "tan(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Asin", NULL, "asin(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Acos", NULL, "acos(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Atan", NULL, "atan(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Sinh", NULL, "sinh(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Cosh", NULL, "cosh(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Asinh", NULL, "asinh(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Acosh", NULL, "acosh(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Atanh", NULL, "atanh(x); FLOPs = N; bytes = 2N·es"),
    UNARY("Celu", a_alpha_only, "x>0 ? x : alpha·(exp(x/alpha)-1); FLOPs = 4N; bytes = 2N·es"),
    UNARY("ThresholdedRelu", a_alpha_only, "x>alpha ? x : 0; FLOPs = N; bytes = 2N·es"),
    UNARY("Shrink", a_shrink, "x<-lambd ? x+bias : x>lambd ? x-bias : 0; FLOPs = 2N; bytes = 2N·es"),
    {.name = "Clip", .domain = "", .pattern = FA_PATTERN_ELEMWISE,
     .min_inputs = 1, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_clip, .cost = cost_unary, .kernel = kernel_unary,
     .doc = "min(max(x,lo),hi); FLOPs = 2N; bytes = 2N·es (+ bounds)",
     .attrs = a_clip},
    {.name = "Not", .domain = "", .pattern = FA_PATTERN_ELEMWISE,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_bool_unary, .cost = cost_unary, .kernel = kernel_bool_unary,
     .doc = "!x; FLOPs = N; bytes = 2N"},
    {.name = "IsNaN", .domain = "", .pattern = FA_PATTERN_ELEMWISE,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_bool_unary, .cost = cost_unary, .kernel = kernel_bool_unary,
     .doc = "x != x; FLOPs = N; bytes = N·es + N"},
    {.name = "IsInf", .domain = "", .pattern = FA_PATTERN_ELEMWISE,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_bool_unary, .cost = cost_unary, .kernel = kernel_bool_unary,
     .doc = "x = +inf (detect_positive) or -inf (detect_negative) → bool; FLOPs = N; bytes = N·es + N",
     .attrs = a_isinf},
    {.name = "Cast", .domain = "", .pattern = FA_PATTERN_ELEMWISE,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_cast, .kernel = kernel_cast,
     .doc = "convert element type; FLOPs = 0; bytes = N·es_in + N·es_out",
     .attrs = a_cast, .view = fa_view_op_cast},
    {.name = "CastLike", .domain = "", .pattern = FA_PATTERN_ELEMWISE,
     .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_cast, .kernel = kernel_cast,
     .doc = "convert to input 1's type; FLOPs = 0; bytes = N·es_in + bytes(like) + N·es_out",
     .attrs = a_castlike},
    {.name = "Dropout", .domain = "", .pattern = FA_PATTERN_OPAQUE,
     .min_inputs = 1, .max_inputs = 3, .min_outputs = 1, .max_outputs = 2,
     .infer = infer_dropout, .kernel = kernel_dropout,
     .doc = "inference identity; FLOPs = 0; bytes = 2N·es (+ N mask)",
     .attrs = a_dropout, .view = fa_view_op_dropout},
    BINARY("Add", a_arith_legacy, "a+b broadcast; FLOPs = N_out; bytes = Σ inputs + N_out·es"),
    BINARY("Sub", a_arith_legacy, "a-b broadcast; FLOPs = N_out; bytes = Σ inputs + N_out·es"),
    BINARY("Mul", a_arith_legacy, "a·b broadcast; FLOPs = N_out; bytes = Σ inputs + N_out·es"),
    BINARY("Div", a_arith_legacy, "a/b broadcast; FLOPs = N_out; bytes = Σ inputs + N_out·es"),
    BINARY("Pow", a_bcast_legacy, "a^b broadcast; FLOPs = N_out; bytes = Σ inputs + N_out·es"),
    BINARY("Mod", a_mod, "a mod b (fmod attr) broadcast; FLOPs = N_out; bytes = Σ inputs + N_out·es"),
    {.name = "PRelu", .domain = "", .pattern = FA_PATTERN_BROADCAST,
     .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_binary, .cost = cost_binary, .kernel = kernel_binary,
     .doc = "x<0 ? slope·x : x, slope → X; FLOPs = N; bytes = 2N·es + slope",
     .attrs = a_legacy},
    BINARY("Equal", a_bcast_legacy, "a==b → bool; FLOPs = N_out; bytes = Σ inputs + N_out"),
    BINARY("Less", a_bcast_legacy, "a<b → bool; FLOPs = N_out; bytes = Σ inputs + N_out"),
    BINARY("Greater", a_bcast_legacy, "a>b → bool; FLOPs = N_out; bytes = Σ inputs + N_out"),
    BINARY("LessOrEqual", NULL, "a<=b → bool; FLOPs = N_out; bytes = Σ inputs + N_out"),
    BINARY("GreaterOrEqual", NULL, "a>=b → bool; FLOPs = N_out; bytes = Σ inputs + N_out"),
    BINARY("And", a_bcast_legacy, "a&&b bool; FLOPs = N_out; bytes = Σ inputs + N_out"),
    BINARY("Or", a_bcast_legacy, "a||b bool; FLOPs = N_out; bytes = Σ inputs + N_out"),
    BINARY("Xor", a_bcast_legacy, "a^b bool; FLOPs = N_out; bytes = Σ inputs + N_out"),
    VARIADIC("Sum", a_legacy, "Σ inputs broadcast; FLOPs = (k-1)·N_out; bytes = Σ inputs + N_out·es"),
    VARIADIC("Mean", a_legacy, "Σ inputs / k; FLOPs = k·N_out; bytes = Σ inputs + N_out·es"),
    VARIADIC("Max", a_legacy, "elementwise max of k inputs; FLOPs = (k-1)·N_out; bytes = Σ inputs + N_out·es"),
    VARIADIC("Min", a_legacy, "elementwise min of k inputs; FLOPs = (k-1)·N_out; bytes = Σ inputs + N_out·es"),
    {.name = "Where", .domain = "", .pattern = FA_PATTERN_BROADCAST,
     .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
     .infer = infer_where, .kernel = kernel_where,
     .doc = "c ? x : y broadcast; FLOPs = 0; bytes = Σ inputs + N_out·es"},
    {0},
};
