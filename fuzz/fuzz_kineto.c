/* fuzz/fuzz_kineto — libFuzzer main: Kineto / Chrome-trace JSON import, plain or gzip (fa_import_kineto_ex via a temp file).
 * The body is fa_fuzz_kineto in fuzz_targets.h (shared with the regression test). */
#include "fuzz/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fa_ctx *ctx = fa_ctx_create();
    (void)fa_fuzz_kineto(ctx, data, size);
    fa_ctx_free(ctx);
    return 0;
}
