/* fuzz/fuzz_nsys — libFuzzer main: Nsight Systems SQLite export import (fa_import_nsys via a temp file); seed built by bench/fuzz.sh.
 * The body is fa_fuzz_nsys in fuzz_targets.h (shared with the regression test). */
#include "fuzz/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fa_ctx *ctx = fa_ctx_create();
    (void)fa_fuzz_nsys(ctx, data, size);
    fa_ctx_free(ctx);
    return 0;
}
