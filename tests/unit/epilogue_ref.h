/* tests/unit/epilogue_ref.h — one unary post-op in double (graph/post_op.h's definitions) and how
 * far it stretches an error of its input, for the tests of the kernels that apply their epilogue
 * in registers (test_dwconv, test_pixconv). */
#ifndef FA_TEST_EPILOGUE_REF_H
#define FA_TEST_EPILOGUE_REF_H

#include <math.h>

#include "graph/post_op.h"
#include "testutil.h"

/* op (NULL: none) on v, in double */
static inline double epilogue_ref(const fa_post_op *op, double v)
{
    if (!op) return v;
    switch (op->kind) {
    case FA_POST_OP_RELU: return v > 0 ? v : 0;
    case FA_POST_OP_LEAKY_RELU: return v < 0 ? op->alpha * v : v;
    case FA_POST_OP_CLIP: return fmin(fmax(v, op->alpha), op->beta);
    case FA_POST_OP_HARD_SWISH: return v * fmin(fmax(v / 6 + 0.5, 0), 1);
    case FA_POST_OP_SWISH: return v / (1 + exp(-op->alpha * v));
    case FA_POST_OP_SIGMOID: return 1 / (1 + exp(-v));
    default: fail_msg("unexpected post-op"); return 0;
    }
}

/* How far op can stretch an error e of its input v (its Lipschitz constant near the values), plus
 * the error of its own float evaluation relative to the result. */
static inline double epilogue_tol(const fa_post_op *op, double v, double e)
{
    if (!op) return e;
    switch (op->kind) {
    case FA_POST_OP_LEAKY_RELU: return e * fmax(1, fabs(op->alpha));
    case FA_POST_OP_HARD_SWISH: return e * 1.5 + 2e-7 * fabs(epilogue_ref(op, v));
    case FA_POST_OP_SWISH: return e * 1.1 * fmax(1, fabs(op->alpha)) + 4e-7 * fabs(epilogue_ref(op, v)) + 1e-30;
    case FA_POST_OP_SIGMOID: return e * 0.25 + 4e-7 * fabs(epilogue_ref(op, v));
    default: return e;
    }
}

#endif
