/* graph/ops_shape — op definitions (placeholder table; filled by the op-coverage work). */
#include "ops-impl.h"

const fa_op fa_ops_shape[] = {
    {0},
};
