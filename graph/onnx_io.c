/* graph/onnx_io — placeholder until the importer lands. */
#include "graph.h"
fa_status fa_onnx_import(fa_ctx *ctx, const char *path, fa_graph **out) { (void)out; return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "%s: import not built", path); }
