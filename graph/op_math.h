/* graph/op_math — the scalar math of the unary elementwise ops, written once.
 *
 * FA_UNARY_MATH(X) expands X(ID, NAME, ATTR_A, DEF_A, ATTR_B, DEF_B, ATTR_G, DEF_G, EXPR) once per
 * op, in this order (IDs are never stored):
 *   ID      suffix of the op's code (FA_UNARY_##ID in fa_unary_op)
 *   NAME    the ONNX op type ("HardSigmoid")
 *   ATTR_*  the float attributes bound to `a`, `b`, `g` in EXPR (NULL: unused) and their ONNX
 *           defaults (DEF_*; 0 when unused)
 *   EXPR    y as a float expression of x (the input element) and a, b, g, valid as both C11
 *           (<math.h>) and CUDA C, with float literals written "1.0f". NaN propagates (clamps
 *           are written as compares on the value, never as fminf/fmaxf of it).
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
 * Adding a unary op with an expression: one row here plus its registry entry (shape inference,
 * FLOPs/bytes; graph/ops_elementwise.c k_unary for its FLOPs per element) — every target and the
 * code generator pick it up, and tests/unit/test_op_math.c runs it on each. */
#ifndef FA_GRAPH_OP_MATH_H
#define FA_GRAPH_OP_MATH_H

#include <math.h>
#include <stddef.h>

#define FA_UNARY_MATH(X)                                                                                         \
    X(RELU, "Relu", NULL, 0, NULL, 0, NULL, 0, (x < 0.0f ? 0.0f : x))                                              \
    X(LEAKY_RELU, "LeakyRelu", "alpha", 0.01f, NULL, 0, NULL, 0, (x < 0.0f ? a * x : x))                           \
    X(SIGMOID, "Sigmoid", NULL, 0, NULL, 0, NULL, 0, (1.0f / (1.0f + expf(-x))))                                   \
    X(TANH, "Tanh", NULL, 0, NULL, 0, NULL, 0, tanhf(x))                                                           \
    X(HARD_SIGMOID, "HardSigmoid", "alpha", 0.2f, "beta", 0.5f, NULL, 0,                                           \
      (a * x + b < 0.0f ? 0.0f : (a * x + b > 1.0f ? 1.0f : a * x + b)))                                          \
    X(HARD_SWISH, "HardSwish", NULL, 0, NULL, 0, NULL, 0,                                                          \
      (x * (x * 0.16666667f + 0.5f < 0.0f ? 0.0f : (x * 0.16666667f + 0.5f > 1.0f ? 1.0f : x * 0.16666667f + 0.5f))))                  \
    X(ELU, "Elu", "alpha", 1.0f, NULL, 0, NULL, 0, (x < 0.0f ? a * (expf(x) - 1.0f) : x))                         \
    X(SELU, "Selu", "alpha", 1.67326319217681884765625, NULL, 0, "gamma", 1.05070102214813232421875,               \
      (x > 0.0f ? g * x : g * (a * expf(x) - a)))                                                                  \
    X(SOFTPLUS, "Softplus", NULL, 0, NULL, 0, NULL, 0, (x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x))))       \
    X(SOFTSIGN, "Softsign", NULL, 0, NULL, 0, NULL, 0, (x / (1.0f + fabsf(x))))                                    \
    X(MISH, "Mish", NULL, 0, NULL, 0, NULL, 0, (x * tanhf((x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x))))))  \
    X(ERF, "Erf", NULL, 0, NULL, 0, NULL, 0, erff(x))                                                              \
    X(SWISH, "Swish", "alpha", 1.0f, NULL, 0, NULL, 0, (x / (1.0f + expf(-a * x))))                                \
    X(SQRT, "Sqrt", NULL, 0, NULL, 0, NULL, 0, sqrtf(x))                                                           \
    X(EXP, "Exp", NULL, 0, NULL, 0, NULL, 0, expf(x))                                                              \
    X(LOG, "Log", NULL, 0, NULL, 0, NULL, 0, logf(x))                                                              \
    X(NEG, "Neg", NULL, 0, NULL, 0, NULL, 0, (-x))                                                                 \
    X(ABS, "Abs", NULL, 0, NULL, 0, NULL, 0, fabsf(x))                                                             \
    X(RECIPROCAL, "Reciprocal", NULL, 0, NULL, 0, NULL, 0, (1.0f / x))                                             \
    X(FLOOR, "Floor", NULL, 0, NULL, 0, NULL, 0, floorf(x))                                                        \
    X(CEIL, "Ceil", NULL, 0, NULL, 0, NULL, 0, ceilf(x))                                                           \
    X(SIN, "Sin", NULL, 0, NULL, 0, NULL, 0, sinf(x))                                                              \
    X(COS, "Cos", NULL, 0, NULL, 0, NULL, 0, cosf(x))                                                              \
    X(GELU, "Gelu", NULL, 0, NULL, 0, NULL, 0, (0.5f * x * (1.0f + erff(x * 0.70710678118654752f))))              \
    X(GELU_TANH, "Gelu", NULL, 0, NULL, 0, NULL, 0,                                                                \
      (0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)))))                            \
    X(CLIP, "Clip", "min", -INFINITY, "max", INFINITY, NULL, 0, ((x < a ? a : x) > b ? b : (x < a ? a : x)))

/* The op codes, in table order. */
typedef enum fa_unary_op {
#define FA_UNARY_MATH_ENUM_(ID, NAME, AA, DA, AB, DB, AG, DG, EXPR) FA_UNARY_##ID,
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

/* FA_BINARY_MATH(X) expands X(ID, NAME, EXPR) once per binary float op whose math is one
 * expression of x (input 0) and y (input 1), in this order (IDs are never stored), with the same
 * rules as FA_UNARY_MATH's EXPR (C11 and CUDA C, float literals, NaN propagates: Max/Min return
 * NaN when either operand is NaN, as ONNX's Max/Min and numpy's maximum/minimum). Pow squares
 * exactly for y == 2 (the common x^2 of norms), else powf (ONNX Pow). Consumers: the cuda
 * executor's kernel source and op table (FA_BINARY_MATH_CUDA), its host emulation
 * (fa_binary_math_eval), the cpu float32 kernels (graph/ops_elementwise.c) and the code
 * generator (fa_binary_math_template: x -> $0, y -> $1; Sum is Add, and variadic Max/Min/Sum
 * chain the expression). The double-precision reference (bin_d in graph/ops_elementwise.c, from
 * the ONNX specifications) is what tests/unit/test_op_math.c checks every row against. */
#define FA_BINARY_MATH(X)                                                                          \
    X(ADD, "Add", (x + y))                                                                         \
    X(SUB, "Sub", (x - y))                                                                         \
    X(MUL, "Mul", (x * y))                                                                         \
    X(DIV, "Div", (x / y))                                                                         \
    X(POW, "Pow", (y == 2.0f ? x * x : powf(x, y)))                                               \
    X(MAX, "Max", ((x > y || x != x) ? x : y))                                                  \
    X(MIN, "Min", ((x < y || x != x) ? x : y))                                                  \
    X(PRELU, "PRelu", (x < 0.0f ? x * y : x))

typedef enum fa_binary_op {
#define FA_BINARY_MATH_ENUM_(ID, NAME, EXPR) FA_BINARY_##ID,
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
#define FA_UNARY_MATH_CUDA_ENUM_(ID, NAME, AA, DA, AB, DB, AG, DG, EXPR) "FA_UNARY_" #ID ", "
#define FA_UNARY_MATH_CUDA_CASE_(ID, NAME, AA, DA, AB, DB, AG, DG, EXPR) \
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
#define FA_BINARY_MATH_CUDA_ENUM_(ID, NAME, EXPR) "FA_BINARY_" #ID ", "
#define FA_BINARY_MATH_CUDA_CASE_(ID, NAME, EXPR) "    case FA_BINARY_" #ID ": return " FA_STR(EXPR) ";\n"
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
#define FA_BINARY_MATH_EVAL_(ID, NAME, EXPR) \
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
#define FA_UNARY_MATH_EVAL_(ID, NAME, AA, DA, AB, DB, AG, DG, EXPR) \
    case FA_UNARY_##ID:                                               \
        return EXPR;
        FA_UNARY_MATH(FA_UNARY_MATH_EVAL_)
#undef FA_UNARY_MATH_EVAL_
    default: return x;
    }
}

#endif
