/* collector/import private — helpers shared by the Kineto and Nsight Systems importers. */
#ifndef FA_COLLECTOR_IMPORT_IMPL_H
#define FA_COLLECTOR_IMPORT_IMPL_H

#include "collector/import/import.h"

/* Validate UTF-8 of s[0..n). Returns true if valid. Otherwise writes a repaired copy (each
 * invalid byte -> U+FFFD) to *b (reset first) and returns false. Rules: RFC 3629 (no
 * overlongs, no surrogates, max U+10FFFF). */
bool fa__utf8_repair(const char *s, size_t n, fa_buf *b);

/* Link GPU records (kernel, memcpy, memset) to their launch call (runtime/driver record with
 * the same correlation id; pid-local when pid_local, else per file), then the launch to an
 * enclosing record of kind encl_kind (FA_ACT_CPU_OP for Kineto, FA_ACT_RANGE for nsys): by
 * External id first when use_external_id, else the innermost one on the launch's pid/tid whose
 * [start, end] contains the launch start. Sets flags, pid/tid (from the launch), op_type and
 * node_name, propagates estimated bytes when the op launched exactly one GPU record, and fills
 * the orphan / inversion / duplicate / attributed counters of st and t. */
fa_status fa__import_attribute(fa_ctx *ctx, fa_trace *t, fa_import_stats *st, bool pid_local,
                               fa_activity_kind encl_kind, bool use_external_id);

/* Count kinds into st and set no_gpu_activity. */
void fa__import_count(const fa_trace *t, fa_import_stats *st);

#endif
