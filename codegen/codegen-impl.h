/* codegen/codegen-impl — private to codegen/: what the emitters share (codegen.c: the value IR,
 * elementwise and row kernels; attention.c: the fused attention kernel). */
#ifndef FA_CODEGEN_IMPL_H
#define FA_CODEGEN_IMPL_H

#include "codegen/codegen.h"

/* The first line of every generated source (generator, version, plan hash, cluster id and kind;
 * no model string) and the kernel's name in info->name, "fa_fused_c<id>_<hash8>". */
void fa_cg_header(fa_buf *out, const fa_kernel_desc *c, const char *plan_hash, fa_codegen_info *info);
/* A float literal C and CUDA read back to the same float ("%.9g" + 'f'; NAN / INFINITY spelled
 * for each language). */
void fa_cg_flit(char *out, size_t cap, double v, bool cuda);

/* The attention kernel (codegen/attention.c): whether description d (FA_KERNEL_ATTENTION) can be
 * generated — *why a static sentence and msg the detailed one when not — and its source. */
bool fa_cg_attention_supported(const fa_graph *g, const fa_kernel_desc *d, bool cuda, const char **why, char *msg,
                               size_t cap);
fa_status fa_cg_attention(fa_ctx *ctx, const fa_graph *g, const fa_kernel_desc *d, bool cuda, const char *plan_hash,
                          fa_buf *out, fa_codegen_info *info);

#endif
