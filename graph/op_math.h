/* graph/op_math — the scalar math of the unary elementwise ops, written once.
 *
 * FA_UNARY_MATH(X) expands X(ID, NAME, ATTR_A, DEF_A, ATTR_B, DEF_B, ATTR_G, DEF_G, EXPR, BOUND) once per
 * op, in this order (IDs are never stored):
 *   ID      suffix of the op's code (FA_UNARY_##ID in fa_unary_op)
 *   NAME    the ONNX op type ("HardSigmoid")
 *   ATTR_*  the float attributes bound to `a`, `b`, `g` in EXPR (NULL: unused) and their ONNX
 *           defaults (DEF_*; 0 when unused)
 *   EXPR    y as a float expression of x (the input element) and a, b, g, valid as both C11
 *           (<math.h>) and CUDA C, with float literals written "1.0f". NaN propagates (clamps
 *           are written as compares on the value, never as fminf/fmaxf of it).
 *   BOUND   how a rounding error in x reaches y: one of the FA_BOUND_* rules below, whose
 *           Lipschitz constant may be an expression of a, b, g (double). The applier's
 *           verification bound (applier/bound.c) reads it: an epilogue or attention cluster
 *           holding the op is verified against 2·γ̃·M, M the same ops on magnitudes, and a row
 *           cannot be written without it.
 * Every consumer expands this one table: the cpu elementwise kernels (graph/ops_elementwise.c),
 * the cuda executor's kernel source and its op table (runtime/cuda/kernels.c, exec_cuda.c), the
 * host emulation of those kernels (runtime/cuda/emulate.c) and the code generator's templates
 * (codegen/codegen.c, through fa_unary_math_template: x -> $0, a -> $a, b -> $b, g -> $g).
 * Formulas: the ONNX operator specifications (onnx/docs/Operators.md) of each op; Selu's
 * defaults are ONNX's float32 constants; HardSwish multiplies by alpha = 1/6 rounded to float, as the
 * spec's HardSigmoid form and ONNX Runtime do (a multiply, not a divide: 4x cheaper per lane). Two rows may share an ONNX name when a string attribute
 * picks the expression (Gelu: approximate="none" is GELU, "tanh" GELU_TANH; sqrt(2/pi) and
 * 1/sqrt(2) to 17 digits), and a parameter may come from an input from some opset on (Clip: min
 * and max are attributes until opset 10, inputs 1 and 2 from 11; an absent bound is -inf/+inf;
 * min is applied first, so min > max gives max, as numpy.clip and ONNX's reference):
 * fa_unary_math_for_node and fa_unary_math_param_input say which, for every consumer. Integer
 * Relu/Abs/Neg/Clip stay with the cpu kernels. The binary float ops are FA_BINARY_MATH below.
 *
 * Adding a unary op with an expression: one row here (its bound included) plus its registry entry (shape inference,
 * FLOPs/bytes; graph/ops_elementwise.c k_unary for its FLOPs per element) — every target and the
 * code generator pick it up, and tests/unit/test_op_math.c runs it on each. */
#ifndef FA_GRAPH_OP_MATH_H
#define FA_GRAPH_OP_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#define FA_UNARY_MATH(X)                                                                                         \
    X(RELU, "Relu", NULL, 0, NULL, 0, NULL, 0, (x < 0.0f ? 0.0f : x), \
      FA_BOUND_LIPSCHITZ(1.0, 0)) \
    X(LEAKY_RELU, "LeakyRelu", "alpha", 0.01f, NULL, 0, NULL, 0, (x < 0.0f ? a * x : x), \
      FA_BOUND_LIPSCHITZ(fmax(1.0, fabs(a)), 1)) \
    X(SIGMOID, "Sigmoid", NULL, 0, NULL, 0, NULL, 0, (1.0f / (1.0f + expf(-x))), \
      FA_BOUND_LIPSCHITZ(0.25, 4)) \
    X(TANH, "Tanh", NULL, 0, NULL, 0, NULL, 0, tanhf(x), \
      FA_BOUND_LIPSCHITZ(1.0, 4)) \
    X(HARD_SIGMOID, "HardSigmoid", "alpha", 0.2f, "beta", 0.5f, NULL, 0,                                           \
      (a * x + b < 0.0f ? 0.0f : (a * x + b > 1.0f ? 1.0f : a * x + b)), \
      FA_BOUND_LIPSCHITZ(fabs(a), 2)) \
    X(HARD_SWISH, "HardSwish", NULL, 0, NULL, 0, NULL, 0,                                                          \
      (x * (x * 0.16666667f + 0.5f < 0.0f ? 0.0f : (x * 0.16666667f + 0.5f > 1.0f ? 1.0f : x * 0.16666667f + 0.5f))), \
      FA_BOUND_LIPSCHITZ(1.5, 3)) \
    X(ELU, "Elu", "alpha", 1.0f, NULL, 0, NULL, 0, (x < 0.0f ? a * (expf(x) - 1.0f) : x), \
      FA_BOUND_LIPSCHITZ(fmax(1.0, fabs(a)), 2)) \
    X(SELU, "Selu", "alpha", 1.67326319217681884765625, NULL, 0, "gamma", 1.05070102214813232421875,               \
      (x > 0.0f ? g * x : g * (a * expf(x) - a)), \
      FA_BOUND_LIPSCHITZ(fabs(g) * fmax(1.0, fabs(a)), 2)) \
    X(SOFTPLUS, "Softplus", NULL, 0, NULL, 0, NULL, 0, (x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x))), \
      FA_BOUND_LIPSCHITZ(1.0, 4)) \
    X(SOFTSIGN, "Softsign", NULL, 0, NULL, 0, NULL, 0, (x / (1.0f + fabsf(x))), \
      FA_BOUND_LIPSCHITZ(1.0, 2)) \
    X(MISH, "Mish", NULL, 0, NULL, 0, NULL, 0, (x * tanhf((x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x))))), \
      FA_BOUND_LIPSCHITZ(1.09, 4)) \
    X(ERF, "Erf", NULL, 0, NULL, 0, NULL, 0, erff(x), \
      FA_BOUND_LIPSCHITZ(1.1284, 4)) \
    X(SWISH, "Swish", "alpha", 1.0f, NULL, 0, NULL, 0, (x / (1.0f + expf(-a * x))), \
      FA_BOUND_LIPSCHITZ(1.1, 4)) \
    X(SQRT, "Sqrt", NULL, 0, NULL, 0, NULL, 0, sqrtf(x), \
      FA_BOUND_NONE("its derivative is unbounded at 0")) \
    X(EXP, "Exp", NULL, 0, NULL, 0, NULL, 0, expf(x), \
      FA_BOUND_EXP(4)) \
    X(LOG, "Log", NULL, 0, NULL, 0, NULL, 0, logf(x), \
      FA_BOUND_NONE("its derivative is unbounded at 0")) \
    X(NEG, "Neg", NULL, 0, NULL, 0, NULL, 0, (-x), \
      FA_BOUND_LIPSCHITZ(1.0, 0)) \
    X(ABS, "Abs", NULL, 0, NULL, 0, NULL, 0, fabsf(x), \
      FA_BOUND_LIPSCHITZ(1.0, 0)) \
    X(RECIPROCAL, "Reciprocal", NULL, 0, NULL, 0, NULL, 0, (1.0f / x), \
      FA_BOUND_NONE("its derivative is unbounded at 0")) \
    X(FLOOR, "Floor", NULL, 0, NULL, 0, NULL, 0, floorf(x), \
      FA_BOUND_NONE("it jumps at the integers")) \
    X(CEIL, "Ceil", NULL, 0, NULL, 0, NULL, 0, ceilf(x), \
      FA_BOUND_NONE("it jumps at the integers")) \
    X(SIN, "Sin", NULL, 0, NULL, 0, NULL, 0, sinf(x), \
      FA_BOUND_LIPSCHITZ(1.0, 4)) \
    X(COS, "Cos", NULL, 0, NULL, 0, NULL, 0, cosf(x), \
      FA_BOUND_LIPSCHITZ(1.0, 4)) \
    X(TAN, "Tan", NULL, 0, NULL, 0, NULL, 0, tanf(x), \
      FA_BOUND_NONE("it has poles at odd multiples of pi/2")) \
    X(ASIN, "Asin", NULL, 0, NULL, 0, NULL, 0, asinf(x), \
      FA_BOUND_NONE("its derivative is unbounded at -1 and 1")) \
    X(ACOS, "Acos", NULL, 0, NULL, 0, NULL, 0, acosf(x), \
      FA_BOUND_NONE("its derivative is unbounded at -1 and 1")) \
    X(ATAN, "Atan", NULL, 0, NULL, 0, NULL, 0, atanf(x), \
      FA_BOUND_LIPSCHITZ(1.0, 4)) \
    X(SINH, "Sinh", NULL, 0, NULL, 0, NULL, 0, sinhf(x), \
      FA_BOUND_NONE("its derivative grows as exp(|x|)")) \
    X(COSH, "Cosh", NULL, 0, NULL, 0, NULL, 0, coshf(x), \
      FA_BOUND_NONE("its derivative grows as exp(|x|)")) \
    X(ASINH, "Asinh", NULL, 0, NULL, 0, NULL, 0, asinhf(x), \
      FA_BOUND_LIPSCHITZ(1.0, 4)) \
    X(ACOSH, "Acosh", NULL, 0, NULL, 0, NULL, 0, acoshf(x), \
      FA_BOUND_NONE("its derivative is unbounded at 1")) \
    X(ATANH, "Atanh", NULL, 0, NULL, 0, NULL, 0, atanhf(x), \
      FA_BOUND_NONE("its derivative is unbounded at -1 and 1")) \
    X(CELU, "Celu", "alpha", 1.0f, NULL, 0, NULL, 0, (x > 0.0f ? x : a * (expf(x / a) - 1.0f)), \
      FA_BOUND_NONE("for alpha < 0 its derivative grows as exp(x/alpha)")) \
    X(THRESHOLDED_RELU, "ThresholdedRelu", "alpha", 1.0f, NULL, 0, NULL, 0, (x > a ? x : 0.0f), \
      FA_BOUND_NONE("it jumps at alpha")) \
    X(SHRINK, "Shrink", "lambd", 0.5f, "bias", 0.0f, NULL, 0, (x < -a ? x + b : (x > a ? x - b : 0.0f)), \
      FA_BOUND_NONE("it jumps at -lambd and lambd unless bias = lambd")) \
    X(GELU, "Gelu", NULL, 0, NULL, 0, NULL, 0, (0.5f * x * (1.0f + erff(x * 0.70710678118654752f))), \
      FA_BOUND_LIPSCHITZ(1.13, 4)) \
    X(GELU_TANH, "Gelu", NULL, 0, NULL, 0, NULL, 0,                                                                \
      (0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)))), \
      FA_BOUND_LIPSCHITZ(1.13, 4)) \
    X(CLIP, "Clip", "min", -INFINITY, "max", INFINITY, NULL, 0, ((x < a ? a : x) > b ? b : (x < a ? a : x)), \
      FA_BOUND_LIPSCHITZ(1.0, 0))

/* The op codes, in table order. */
typedef enum fa_unary_op {
#define FA_UNARY_MATH_ENUM_(ID, NAME, AA, DA, AB, DB, AG, DG, EXPR, BOUND) FA_UNARY_##ID,
    FA_UNARY_MATH(FA_UNARY_MATH_ENUM_)
#undef FA_UNARY_MATH_ENUM_
    FA_UNARY_COUNT
} fa_unary_op;

/* One row of the table as data. expr is EXPR's text (C and CUDA). */
typedef struct fa_unary_math {
    fa_unary_op op;
    const char *name;
    const char *attr[3];   /* bound to a, b, g; NULL when unused */
    double def[3];         /* ONNX defaults */
    const char *expr;
} fa_unary_math;

/* The row of ONNX op type `name` (default domain); NULL when the op has no expression here. For
 * a name with several rows, the one of the selecting attribute's default (Gelu: GELU). */
const fa_unary_math *fa_unary_math_find(const char *name);
struct fa_node;
/* The row of node n: its op type, and the row its selecting string attribute names (Gelu's
 * `approximate`, default "none"). NULL when the op has no row or the attribute names none
 * (approximate="exact"); *select_attr (may be NULL) is then the attribute's name, or NULL. */
const fa_unary_math *fa_unary_math_for_node(const struct fa_node *n, const char **select_attr);
/* Whether row op is one of those a node attribute picks between (Gelu's `approximate`): only then
 * does fa_unary_math_for_node read more than the node's op_type. The kernels, which know their
 * row by op, look it up by name for those only. */
bool fa_unary_math_selected(fa_unary_op op);
/* The input of node n that supplies parameter k (0..2: a, b, g) of row m at n's opset (Clip from
 * opset 11: min is input 1, max input 2; opset 0 is the latest), or -1 when the parameter is the
 * attribute m->attr[k].
 * An absent input (index past n_inputs or omitted) leaves the parameter at m->def[k]. */
int fa_unary_math_param_input(const struct fa_node *n, const fa_unary_math *m, int k);
/* The string attribute and value that pick row m among rows of its name (Gelu tanh:
 * "approximate", "tanh"); NULL (and *attr NULL) when its name has one row. */
const char *fa_unary_math_select_value(const fa_unary_math *m, const char **attr);
/* The row of op (FA_UNARY_COUNT or beyond: NULL). */
const fa_unary_math *fa_unary_math_get(fa_unary_op op);
/* EXPR rewritten for the code generator: the identifiers x, a, b, g become $0, $a, $b, $g (every
 * other token is copied). Returns the length written, or the length needed when it is >= cap
 * (snprintf's convention). */
size_t fa_unary_math_template(const fa_unary_math *m, char *buf, size_t cap);

/* FA_BINARY_MATH(X) expands X(ID, NAME, EXPR, BOUND) once per binary float op whose math is one
 * expression of x (input 0) and y (input 1), in this order (IDs are never stored), with the same
 * rules as FA_UNARY_MATH's EXPR (C11 and CUDA C, float literals, NaN propagates: Max/Min return
 * NaN when either operand is NaN, as ONNX's Max/Min and numpy's maximum/minimum). Pow squares
 * exactly for y == 2 (the common x^2 of norms), else powf (ONNX Pow). Consumers: the cuda
 * executor's kernel source and op table (FA_BINARY_MATH_CUDA), its host emulation
 * (fa_binary_math_eval), the cpu float32 kernels (graph/ops_elementwise.c) and the code
 * generator (fa_binary_math_template: x -> $0, y -> $1; Sum is Add, and variadic Max/Min/Sum
 * chain the expression). The double-precision reference (bin_d in graph/ops_elementwise.c, from
 * the ONNX specifications) is what tests/unit/test_op_math.c checks every row against. BOUND is
 * FA_UNARY_MATH's column: how a rounding error in x and y reaches the result. */
#define FA_BINARY_MATH(X)                                                                          \
    X(ADD, "Add", (x + y), FA_BOUND_LINEAR(1)) \
    X(SUB, "Sub", (x - y), FA_BOUND_SUM_MAGS(1)) \
    X(MUL, "Mul", (x * y), FA_BOUND_LINEAR(1)) \
    X(DIV, "Div", (x / y), FA_BOUND_DIV(1)) \
    X(POW, "Pow", (y == 2.0f ? x * x : powf(x, y)), FA_BOUND_POW(4)) \
    X(MAX, "Max", ((x > y || x != x) ? x : y), FA_BOUND_MAX_MAGS(0)) \
    X(MIN, "Min", ((x < y || x != x) ? x : y), FA_BOUND_MAX_MAGS(0)) \
    X(PRELU, "PRelu", (x < 0.0f ? x * y : x), FA_BOUND_NONE("no rule written for its slope operand yet"))
typedef enum fa_binary_op {
#define FA_BINARY_MATH_ENUM_(ID, NAME, EXPR, BOUND) FA_BINARY_##ID,
    FA_BINARY_MATH(FA_BINARY_MATH_ENUM_)
#undef FA_BINARY_MATH_ENUM_
    FA_BINARY_COUNT
} fa_binary_op;

typedef struct fa_binary_math {
    fa_binary_op op;
    const char *name;
    const char *expr;      /* EXPR's text (C and CUDA) */
} fa_binary_math;

/* The row of ONNX op type `name` (default domain; "Sum" is Add's row); NULL when none. */
const fa_binary_math *fa_binary_math_find(const char *name);
/* EXPR for the code generator: x -> $0, y -> $1 (snprintf's return convention). */
size_t fa_binary_math_template(const fa_binary_math *m, char *buf, size_t cap);

/* FA_STR(EXPR) is EXPR's text (two levels so a macro argument is expanded first). */
#define FA_STR_(...) #__VA_ARGS__
#define FA_STR(...) FA_STR_(__VA_ARGS__)

/* The table as CUDA C, a string literal to paste into a kernel module (runtime/cuda/kernels.c):
 * `enum { FA_UNARY_RELU, ..., FA_UNARY_COUNT };` and
 * `__device__ __forceinline__ float fa_unary_math(int op, float x, float a, float b, float g)`. */
#define FA_UNARY_MATH_CUDA_ENUM_(ID, NAME, AA, DA, AB, DB, AG, DG, EXPR, BOUND) "FA_UNARY_" #ID ", "
#define FA_UNARY_MATH_CUDA_CASE_(ID, NAME, AA, DA, AB, DB, AG, DG, EXPR, BOUND) \
    "    case FA_UNARY_" #ID ": return " FA_STR(EXPR) ";\n"
#define FA_UNARY_MATH_CUDA                                                                              \
    "enum { " FA_UNARY_MATH(FA_UNARY_MATH_CUDA_ENUM_) "FA_UNARY_COUNT };\n"                              \
    "__device__ __forceinline__ float fa_unary_math(int op, float x, float a, float b, float g)\n"       \
    "{\n"                                                                                              \
    "    switch (op) {\n" FA_UNARY_MATH(FA_UNARY_MATH_CUDA_CASE_) "    }\n"                            \
    "    return x;\n"                                                                                  \
    "}\n"

/* The binary table as CUDA C: `enum { FA_BINARY_ADD, ..., FA_BINARY_COUNT };` and
 * `__device__ __forceinline__ float fa_binary_math(int op, float x, float y)`. */
#define FA_BINARY_MATH_CUDA_ENUM_(ID, NAME, EXPR, BOUND) "FA_BINARY_" #ID ", "
#define FA_BINARY_MATH_CUDA_CASE_(ID, NAME, EXPR, BOUND) "    case FA_BINARY_" #ID ": return " FA_STR(EXPR) ";\n"
#define FA_BINARY_MATH_CUDA                                                                             \
    "enum { " FA_BINARY_MATH(FA_BINARY_MATH_CUDA_ENUM_) "FA_BINARY_COUNT };\n"                          \
    "__device__ __forceinline__ float fa_binary_math(int op, float x, float y)\n"                       \
    "{\n"                                                                                              \
    "    switch (op) {\n" FA_BINARY_MATH(FA_BINARY_MATH_CUDA_CASE_) "    }\n"                          \
    "    return 0.0f;\n"                                                                               \
    "}\n"

/* The binary table on the host (C): op of x and y (the cpu kernels, the cuda host emulation);
 * op outside the table: 0. */
static inline float fa_binary_math_eval(fa_binary_op op, float x, float y)
{
    switch (op) {
#define FA_BINARY_MATH_EVAL_(ID, NAME, EXPR, BOUND) \
    case FA_BINARY_##ID:                       \
        return EXPR;
        FA_BINARY_MATH(FA_BINARY_MATH_EVAL_)
#undef FA_BINARY_MATH_EVAL_
    default: return 0.0f;
    }
}

/* The table on the host (C): y of op for x with parameters a, b, g (the cpu kernels and the
 * cuda host emulation). op outside the table: x. Needs <math.h>. */
static inline float fa_unary_math_eval(fa_unary_op op, float x, float a, float b, float g)
{
    (void)a;
    (void)b;
    (void)g;
    switch (op) {
#define FA_UNARY_MATH_EVAL_(ID, NAME, AA, DA, AB, DB, AG, DG, EXPR, BOUND) \
    case FA_UNARY_##ID:                                               \
        return EXPR;
        FA_UNARY_MATH(FA_UNARY_MATH_EVAL_)
#undef FA_UNARY_MATH_EVAL_
    default: return x;
    }
}

/* ---- how an op's rounding error propagates (the BOUND column) ----
 * First-order forward error analysis (Higham, "Accuracy and Stability of Numerical Algorithms",
 * 2nd ed., §3.1-3.5): when every input carries |x̂ - x| <= c·M(x), the op's output carries
 * |ŷ - y| <= c·M(y) with M(y) by the rule below (the op's own rounding counted in c through
 * `roundings`, its accuracy in ulps: SLEEF u10 and libm <= 1 ulp, oneDNN's eltwise
 * approximations a few). applier/bound.c builds M's graph from these rules. */
typedef enum fa_op_bound_rule {
    FA_BOUND_RULE_NONE = 0,    /* no first-order bound (derivative unbounded, or a jump): a cluster
                                  holding the op is verified by its relative error; `why` says so */
    FA_BOUND_RULE_LINEAR,      /* linear with non-negative structure: the op itself on the
                                  magnitudes (Add, Mul; Sum folds with Add) */
    FA_BOUND_RULE_SUM_MAGS,    /* Sub: M(a) + M(b) */
    FA_BOUND_RULE_MAX_MAGS,    /* Max, Min: max(M(a), M(b)) (1-Lipschitz in the max norm) */
    FA_BOUND_RULE_DIV,         /* Div: (M(a) + |y|·M(b)) / |b| */
    FA_BOUND_RULE_POW,         /* Pow(x, p), constant scalar p >= 1: |p|·M(x)^p + |y| */
    FA_BOUND_RULE_LIPSCHITZ,   /* unary f with sup|f'| <= L: L·M(x) + |y| */
    FA_BOUND_RULE_EXP,         /* Exp: |y|·(M(x) + 1) */
} fa_op_bound_rule;

typedef struct fa_op_bound {
    fa_op_bound_rule rule;
    double lipschitz;      /* LIPSCHITZ: sup|f'| over the reals at the node's a, b, g */
    int roundings;         /* relative errors of size u the op adds along a path through it */
    const char *why;       /* NONE: why there is no rule (a static sentence) */
} fa_op_bound;

/* The BOUND column's words. Lipschitz constants (sup|f'|): Relu, Clip, Abs, Neg, Tanh, Softplus,
 * Softsign, Sin, Cos 1; Sigmoid 1/4; Erf 2/sqrt(pi); Gelu (erf and tanh forms) 1.1290, Swish/SiLU
 * 1.0999 (any alpha: substitute t = alpha·x), Mish 1.0885, HardSwish 1.5 (at x -> 3): maxima of
 * the derivatives, evaluated on a 1e-5 grid over [-20, 20] and rounded up; LeakyRelu
 * max(1, |alpha|), Elu max(1, |alpha|), Selu |gamma|·max(1, |alpha|), HardSigmoid |alpha|. */
#define FA_BOUND_LIPSCHITZ(L, R) ((fa_op_bound){FA_BOUND_RULE_LIPSCHITZ, (L), (R), NULL})
#define FA_BOUND_EXP(R) ((fa_op_bound){FA_BOUND_RULE_EXP, 0, (R), NULL})
#define FA_BOUND_LINEAR(R) ((fa_op_bound){FA_BOUND_RULE_LINEAR, 0, (R), NULL})
#define FA_BOUND_SUM_MAGS(R) ((fa_op_bound){FA_BOUND_RULE_SUM_MAGS, 0, (R), NULL})
#define FA_BOUND_MAX_MAGS(R) ((fa_op_bound){FA_BOUND_RULE_MAX_MAGS, 0, (R), NULL})
#define FA_BOUND_DIV(R) ((fa_op_bound){FA_BOUND_RULE_DIV, 0, (R), NULL})
#define FA_BOUND_POW(R) ((fa_op_bound){FA_BOUND_RULE_POW, 0, (R), NULL})
#define FA_BOUND_NONE(WHY) ((fa_op_bound){FA_BOUND_RULE_NONE, 0, 0, (WHY)})

/* The BOUND of unary op `op` with parameters a, b, g (the node's attributes or their defaults);
 * op outside the table: rule NONE. Needs <math.h>. */
static inline fa_op_bound fa_unary_math_bound(fa_unary_op op, double a, double b, double g)
{
    (void)a;
    (void)b;
    (void)g;
    switch (op) {
#define FA_UNARY_MATH_BOUND_(ID, NAME, AA, DA, AB, DB, AG, DG, EXPR, BOUND) \
    case FA_UNARY_##ID:                                                      \
        return BOUND;
        FA_UNARY_MATH(FA_UNARY_MATH_BOUND_)
#undef FA_UNARY_MATH_BOUND_
    default: return FA_BOUND_NONE("no op-math row");
    }
}

/* The BOUND of binary op `op`; outside the table: rule NONE. */
static inline fa_op_bound fa_binary_math_bound(fa_binary_op op)
{
    switch (op) {
#define FA_BINARY_MATH_BOUND_(ID, NAME, EXPR, BOUND) \
    case FA_BINARY_##ID:                               \
        return BOUND;
        FA_BINARY_MATH(FA_BINARY_MATH_BOUND_)
#undef FA_BINARY_MATH_BOUND_
    default: return FA_BOUND_NONE("no op-math row");
    }
}

#endif
