/* applier/applier-impl — private to applier/. */
#ifndef FA_APPLIER_IMPL_H
#define FA_APPLIER_IMPL_H

#include "applier.h"

typedef void (*fa_fused_fn)(const void *const *in, void *const *out, int threads);

typedef struct fa_compiled {
    void *handle;
    fa_fused_fn fn;
    char hash[65];
    char path[4400];
    bool cached;
} fa_compiled;

/* Compile generated C (see compile.c). *out owned by caller (fa_compiled_free). */
fa_status fa_compile_c(fa_ctx *ctx, const char *src, size_t len, const char *fn_name, const char *cache_dir,
                       fa_compiled **out);
void fa_compiled_free(fa_compiled *c);

#endif
