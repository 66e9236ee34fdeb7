/* graph/ops_elementwise — op definitions (placeholder table; filled by the op-coverage work). */
#include "ops-impl.h"

const fa_op fa_ops_elementwise[] = {
    {0},
};
