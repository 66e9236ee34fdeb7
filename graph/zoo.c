/* graph/zoo — built-in models (placeholder until the zoo lands). */
#include "graph.h"
int fa_zoo_count(void) { return 0; }
const fa_zoo_info *fa_zoo_at(int i) { (void)i; return 0; }
fa_status fa_zoo_build(fa_ctx *ctx, const char *name, int batch, fa_graph **out)
{ (void)batch; (void)out; return fa_ctx_error(ctx, FA_ERR_INPUT, "zoo:%s: unknown zoo model", name); }
