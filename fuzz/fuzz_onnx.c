/* fuzz/fuzz_onnx — libFuzzer main: ONNX model import (fa_onnx_import_buffer) then fa_graph_prepare.
 * The body is fa_fuzz_onnx in fuzz_targets.h (shared with the regression test). */
#include "fuzz/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fa_ctx *ctx = fa_ctx_create();
    (void)fa_fuzz_onnx(ctx, data, size);
    fa_ctx_free(ctx);
    return 0;
}
