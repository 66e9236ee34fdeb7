/* fuzz/fuzz_codegen — libFuzzer main: model strings -> code generation -> compile -> run. The
 * body is fa_fuzz_codegen in fuzz_targets.h (shared with the regression test). */
#include "fuzz/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fa_ctx *ctx = fa_ctx_create();
    (void)fa_fuzz_codegen(ctx, data, size);
    fa_ctx_free(ctx);
    return 0;
}
