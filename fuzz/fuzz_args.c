/* fuzz/fuzz_args — libFuzzer main: the CLI argument parsers (--shape, --batch, --target, integers) and binding application.
 * The body is fa_fuzz_args in fuzz_targets.h (shared with the regression test). */
#include "fuzz/fuzz_targets.h"

#include <stdio.h>

/* cli/common.c prints usage errors to the stderr FILE*: point that (not fd 2, where sanitizer
 * reports go) at /dev/null. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    FILE *null = fopen("/dev/null", "w");
    if (null) stderr = null;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fa_ctx *ctx = fa_ctx_create();
    (void)fa_fuzz_args(ctx, data, size);
    fa_ctx_free(ctx);
    return 0;
}
