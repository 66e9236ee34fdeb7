/* advisor/codegen — a cluster of the advisor's plan as a kernel description for codegen/, and the
 * cluster-level calls of the code generator (the gate, the applier and the tests use these). */
#ifndef FA_ADVISOR_CODEGEN_H
#define FA_ADVISOR_CODEGEN_H

#include "advisor.h"
#include "codegen/codegen.h"

/* The description of cluster c (borrows its arrays): ELEMWISE_CHAIN -> ELEMENTWISE, HORIZONTAL
 * -> HORIZONTAL, REDUCTION -> ROWS with its reduction kind, EPILOGUE / BN_FOLD -> library kinds;
 * an EPILOGUE with epilogue_generated -> ELEMENTWISE with gemm_epilogue (codegen.h: the members
 * after the anchor over blocks of the product's rows). */
void fa_cluster_kernel_desc(const fa_cluster *c, fa_kernel_desc *out);

/* Whether the code generator of language lang can build cluster c (fa_codegen_kernel_supported on
 * its description): {FA_WHY_NONE, NULL}, or {FA_WHY_CODEGEN_UNSUPPORTED, a static sentence}. */
fa_decision fa_codegen_decide(const fa_graph *g, const fa_cluster *c, fa_kernel_lang lang);
/* Append the C source for cluster c to out. FA_ERR_UNSUPPORTED naming the op without an emitter. */
fa_status fa_codegen_c(fa_ctx *ctx, const fa_graph *g, const fa_cluster *c, const char *plan_hash, fa_buf *out,
                       fa_codegen_info *info);
/* Append the CUDA C source for cluster c to out. */
fa_status fa_codegen_cuda(fa_ctx *ctx, const fa_graph *g, const fa_cluster *c, const char *plan_hash, fa_buf *out,
                          fa_codegen_info *info);
/* The source of cluster c in language lang (the target's kernel_lang). */
fa_status fa_codegen(fa_ctx *ctx, const fa_graph *g, const fa_cluster *c, fa_kernel_lang lang, const char *plan_hash,
                     fa_buf *out, fa_codegen_info *info);

#endif
