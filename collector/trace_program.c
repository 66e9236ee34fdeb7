/* collector/trace_program — `fuse-advise trace` in a build without the CUDA toolkit: there is no
 * CUPTI tracer to inject (collector/cupti/program.c is the real one). */
#ifndef FA_HAVE_CUDA
#include "collector/cupti/cupti.h"

fa_status fa_cupti_trace_program(fa_ctx *ctx, int cmd_argc, char **cmd, bool no_nvtx, fa_trace **out,
                                 fa_cupti_stats *stats, char **notes, int *n_files, int *cmd_status)
{
    (void)cmd_argc;
    (void)cmd;
    (void)no_nvtx;
    (void)out;
    (void)stats;
    (void)notes;
    (void)n_files;
    (void)cmd_status;
    return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "trace: this build has no CUDA toolkit (CUPTI); rebuild with it");
}
#endif
