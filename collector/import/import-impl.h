/* collector/import private — helpers shared by the Kineto and Nsight Systems importers. */
#ifndef FA_COLLECTOR_IMPORT_IMPL_H
#define FA_COLLECTOR_IMPORT_IMPL_H

#include "collector/import/import.h"

/* The importers behind the public entry points, on a readable path (the file, or the spool of
 * a pipe: fa_import_source_open) of `bytes` bytes; messages and trace->source_path say name. */
fa_status fa__import_kineto_src(fa_ctx *ctx, const char *path, const char *name, uint64_t bytes,
                                const fa_import_opts *opts, fa_trace **out, fa_import_stats *stats);
fa_status fa__import_nsys_src(fa_ctx *ctx, const char *path, const char *name, uint64_t bytes, fa_trace **out,
                              fa_import_stats *stats);

/* Names (kernels, ops, ranges, devices) become valid, NUL-free UTF-8 C strings without merging
 * distinct inputs: U+FFFD is the escape character. A NUL byte (raw, or JSON "\u0000") becomes
 * U+FFFD "00", each byte of an invalid UTF-8 sequence (RFC 3629: no overlongs, surrogates or
 * code points past U+10FFFF) U+FFFD and its two upper-case hex digits ("\xFF" -> U+FFFD "FF"),
 * and a U+FFFD already in the name U+FFFD U+FFFD. The mapping is one-to-one, so two kernels whose
 * names differ in the file keep different names (a NUL used to truncate "k\0A" and "k\0B" into
 * one "k"). Returns 0 when s[0..n) needs no change (b untouched), else FA_NAME_* flags saying
 * what was found, the cleaned name in b (reset first; b->oom on allocation failure). */
enum { FA_NAME_NUL = 1, FA_NAME_BAD_UTF8 = 2, FA_NAME_FFFD = 4 };
int fa__name_clean(const char *s, size_t n, fa_buf *b);
/* The same into a fixed buffer of cap bytes (NUL-terminated, cut at a character boundary). */
void fa__name_to_cbuf(const char *s, size_t n, char *out, size_t cap);

/* Link GPU records (kernel, memcpy, memset) to their launch call (runtime/driver record with
 * the same correlation id; pid-local when pid_local, else per file), then the launch to an
 * enclosing record of kind encl_kind (FA_ACT_CPU_OP for Kineto, FA_ACT_RANGE for nsys): by
 * External id first when use_external_id, else the innermost one on the launch's pid/tid whose
 * [start, end] contains the launch start. Sets flags, pid/tid (from the launch), op_type and
 * node_name, propagates estimated bytes when the op launched exactly one GPU record, and fills
 * the orphan / inversion / duplicate / attributed counters of st and t. */
fa_status fa__import_attribute(fa_ctx *ctx, fa_trace *t, fa_import_stats *st, bool pid_local,
                               fa_activity_kind encl_kind, bool use_external_id);

/* Place every record on one clock: start/end hold signed int64 ns (cast to uint64) as the
 * importer read them; base (ns, >= 0) is added. Records whose time overflows int64 are dropped
 * and counted in n_bad_records. When any record then starts before 0, every record moves later
 * by the same amount (st->time_shift_ns; st->n_negative_times counts those records), so no time
 * is clamped and durations, gaps and order are kept. */
void fa__import_place_times(fa_trace *t, fa_import_stats *st, int64_t base);

/* The same on GPU records at index >= gpu_from only (the records before are the cpu side; a
 * streaming importer appends one block of GPU records at a time), counting duplicate
 * correlations only when count_dups; *launch_out (may be NULL) gets a malloc'd array, per record
 * index, of its launch call's index (-1 none) — the caller frees it. */
fa_status fa__import_attribute_ex(fa_ctx *ctx, fa_trace *t, fa_import_stats *st, bool pid_local,
                                  fa_activity_kind encl_kind, bool use_external_id, size_t gpu_from, bool count_dups,
                                  int32_t **launch_out);

/* Count kinds into st and set no_gpu_activity. */
void fa__import_count(const fa_trace *t, fa_import_stats *st);

#endif
