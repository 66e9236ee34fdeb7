/* fuzz/fuzz_tensorproto — libFuzzer main: one TensorProto .pb (fa_tensorproto_read_buffer).
 * The body is fa_fuzz_tensorproto in fuzz_targets.h (shared with the regression test). */
#include "fuzz/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fa_ctx *ctx = fa_ctx_create();
    (void)fa_fuzz_tensorproto(ctx, data, size);
    fa_ctx_free(ctx);
    return 0;
}
