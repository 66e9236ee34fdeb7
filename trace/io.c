/* trace/io — the advice as one JSON document (`--json`, and what the run database keeps) and
 * back (fa_trace_advise_run). Every record is one field list, written once as FIELDS(X) rows
 * (member, kind, JSON key, what an absent value reads back as); the writer and the reader both
 * walk that list, so they cannot drift apart and a new field is one row. */
#include "trace/trace-impl.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <yajl/yajl_tree.h>

/* What a field is in C and how it is written. Integer kinds are written exactly; J_NUM as a
 * number that is an integer when integral (|v| < 9e15), else the shortest decimal that reads back
 * exactly, null when not finite. */
typedef enum jkind {
    J_STR,       /* const char *; null when NULL; arg: what an absent one reads back as */
    J_I64,       /* int64_t */
    J_U64,       /* uint64_t */
    J_I32,       /* int32_t (also int) */
    J_U8,        /* uint8_t */
    J_NUM,       /* double; arg: the value when absent */
    J_NULLNEG,   /* double: null when < 0, absent or null reads back as -1 */
    J_IFBYTES,   /* double written only when the record's bytes are known (jrec.bytes_off >= 0) */
    J_STR_IFUNKNOWN, /* const char *, null unless the record's bytes are unknown (jrec.bytes_off < 0) */
    J_BOOL,      /* bool */
    J_KCLASS,    /* fa_kclass, by its name */
    J_I32X3,     /* int32_t[3] as [a,b,c] */
    J_CLASS_OBJ, /* int64_t[FA_KCLASS_COUNT] as {"class name": ns, ...} */
    J_CLASS_ARR, /* int64_t[FA_KCLASS_COUNT] as [ns, ...] */
    J_STRS,      /* const char ** of the record's member count; arg: an absent element */
    J_I64S,      /* int64_t * of the record's member count */
    J_RECS,      /* an array of records: the pointer here, its int count at arg (a count field) */
    J_DERIVED,   /* written from the record by a function (arg), never read back */
} jkind;

typedef struct jrec jrec;

typedef struct jfield {
    const char *key;
    jkind kind;
    size_t off;
    double dflt;                                  /* numbers when absent */
    const char *dstr;                             /* strings when absent */
    const jrec *sub;                              /* J_RECS */
    size_t count_off;                             /* J_RECS: the int count of the array */
    void (*derive)(fa_buf *b, const void *rec);   /* J_DERIVED */
} jfield;

struct jrec {
    const char *name;          /* in messages */
    const jfield *f;
    size_t n;
    size_t size;               /* sizeof one record */
    bool tuple;                /* written as [v, v, ...] in field order, every value an integer */
    size_t count_off;          /* the record's own member count (J_STRS / J_I64S), or SIZE_MAX */
    size_t bytes_off;          /* J_IFBYTES: the double that is >= 0 when the bytes are known */
    /* after reading one record: false drops it (malformed); may fill derived members */
    bool (*check)(void *rec, const fa_trace_advice *a);
};

/* The row kinds, one initialiser each (arg: the default, a sub-list, a count member or a writer). */
#define ROW(T, KIND, m, key, arg) ROW_##KIND(T, m, key, arg)
#define ROW_STR(T, m, key, d) {key, J_STR, offsetof(T, m), 0, d, NULL, 0, NULL},
#define ROW_I64(T, m, key, d) {key, J_I64, offsetof(T, m), d, NULL, NULL, 0, NULL},
#define ROW_U64(T, m, key, d) {key, J_U64, offsetof(T, m), d, NULL, NULL, 0, NULL},
#define ROW_I32(T, m, key, d) {key, J_I32, offsetof(T, m), d, NULL, NULL, 0, NULL},
#define ROW_U8(T, m, key, d) {key, J_U8, offsetof(T, m), d, NULL, NULL, 0, NULL},
#define ROW_NUM(T, m, key, d) {key, J_NUM, offsetof(T, m), d, NULL, NULL, 0, NULL},
#define ROW_NULLNEG(T, m, key, d) {key, J_NULLNEG, offsetof(T, m), -1, NULL, NULL, 0, NULL},
#define ROW_IFBYTES(T, m, key, d) {key, J_IFBYTES, offsetof(T, m), -1, NULL, NULL, 0, NULL},
#define ROW_STR_IFUNKNOWN(T, m, key, d) {key, J_STR_IFUNKNOWN, offsetof(T, m), 0, d, NULL, 0, NULL},
#define ROW_BOOL(T, m, key, d) {key, J_BOOL, offsetof(T, m), 0, NULL, NULL, 0, NULL},
#define ROW_KCLASS(T, m, key, d) {key, J_KCLASS, offsetof(T, m), 0, NULL, NULL, 0, NULL},
#define ROW_I32X3(T, m, key, d) {key, J_I32X3, offsetof(T, m), 0, NULL, NULL, 0, NULL},
#define ROW_CLASS_OBJ(T, m, key, d) {key, J_CLASS_OBJ, offsetof(T, m), 0, NULL, NULL, 0, NULL},
#define ROW_CLASS_ARR(T, m, key, d) {key, J_CLASS_ARR, offsetof(T, m), 0, NULL, NULL, 0, NULL},
#define ROW_STRS(T, m, key, d) {key, J_STRS, offsetof(T, m), 0, d, NULL, 0, NULL},
#define ROW_I64S(T, m, key, d) {key, J_I64S, offsetof(T, m), 0, NULL, NULL, 0, NULL},
#define ROW_RECS(T, m, key, sub) {key, J_RECS, offsetof(T, m), 0, NULL, &sub##_rec, sub##_count, NULL},
#define ROW_DERIVED(T, m, key, fn) {key, J_DERIVED, 0, 0, NULL, NULL, 0, fn},

/* ---- the field lists ---- */

/* one fusion opportunity (fa_ta_opportunity) */
#define OPP_FIELDS(X, T)                                      \
    X(T, STR, pattern, "pattern", NULL)                       \
    X(T, BOOL, backward, "backward", 0)                       \
    X(T, BOOL, recompute, "recompute", 0)                     \
    X(T, STR, module, "module", NULL)                         \
    X(T, STR, source, "source", NULL)                         \
    X(T, STR, fix, "fix", NULL)                               \
    X(T, STRS, members, "kernels", "?")                       \
    X(T, STRS, member_ops, "ops", "other")                    \
    X(T, I64S, member_ns, "member_ns", 0)                     \
    X(T, I64, count, "count", 0)                              \
    X(T, I64, kernel_ns, "kernel_ns", 0)                      \
    X(T, I64, gaps_ns, "gaps_ns", 0)                          \
    X(T, I64, skipped, "skipped", 0)                          \
    X(T, I64, bytes_occurrences, "bytes_occurrences", 0)      \
    X(T, NULLNEG, read_bytes, "read_bytes", 0)                \
    X(T, IFBYTES, write_bytes, "write_bytes", 0)              \
    X(T, IFBYTES, saved_bytes, "saved_bytes", 0)              \
    X(T, NULLNEG, flops, "flops", 0)                          \
    X(T, DERIVED, n, "bytes", put_bytes_word)                 \
    X(T, NUM, est.fused_ns, "fused_ns", 0)                    \
    X(T, NUM, est.saving_ns, "saving_ns", 0)                  \
    X(T, DERIVED, n, "saving", put_estimated)                 \
    X(T, STR, est.basis, "basis", NULL)                       \
    X(T, NUM, share, "share", 0)                              \
    X(T, I32, device, "device", 0)                            \
    X(T, I64, stream, "stream", 0)                            \
    X(T, U64, first_start_ns, "first_start_ns", 0)

/* one kernel name's statistics (fa_ta_kernel) */
#define KERNEL_FIELDS(X, T)                                   \
    X(T, STR, name, "name", "?")                              \
    X(T, STR, full_name, "full_name", NULL)                   \
    X(T, KCLASS, cls, "class", 0)                             \
    X(T, STR, op, "op", NULL)                                 \
    X(T, I64, count, "count", 0)                              \
    X(T, I64, total_ns, "total_ns", 0)                        \
    X(T, I64, median_ns, "median_ns", 0)                      \
    X(T, I32X3, grid, "grid", 0)                              \
    X(T, I32X3, block, "block", 0)                            \
    X(T, I32, registers, "registers", 0)                      \
    X(T, I32, smem, "smem", 0)                                \
    X(T, NULLNEG, occupancy, "occupancy", 0)                  \
    X(T, STR, occupancy_source, "occupancy_source", NULL)     \
    X(T, BOOL, backward, "backward", 0)                       \
    X(T, STR, fused_by, "fused_by", NULL)

/* one roofline point (fa_ta_point) */
#define POINT_FIELDS(X, T)                                    \
    X(T, STR, kernel, "kernel", "?")                          \
    X(T, STR, shapes, "shapes", NULL)                         \
    X(T, STR, op, "op", NULL)                                 \
    X(T, KCLASS, cls, "class", 0)                             \
    X(T, I64, count, "count", 0)                              \
    X(T, I64, total_ns, "total_ns", 0)                        \
    X(T, NUM, bytes, "bytes", -1)                             \
    X(T, NUM, flops, "flops", -1)                             \
    X(T, STR_IFUNKNOWN, why_unknown, "why_unknown", NULL)

/* one launch-bound stretch (fa_ta_stretch) */
#define STRETCH_FIELDS(X, T)                                  \
    X(T, I32, device, "device", 0)                            \
    X(T, I64, stream, "stream", 0)                            \
    X(T, I32, n_kernels, "kernels", 0)                        \
    X(T, U64, start_ns, "start_ns", 0)                        \
    X(T, U64, end_ns, "end_ns", 0)                            \
    X(T, I64, kernel_ns, "kernel_ns", 0)                      \
    X(T, I64, launch_ns, "launch_ns", 0)                      \
    X(T, STR, first_name, "first", NULL)

/* one stream (fa_ta_stream) */
#define STREAM_FIELDS(X, T)                                   \
    X(T, I32, device, "device", 0)                            \
    X(T, I64, stream, "stream", 0)                            \
    X(T, I64, n_kernels, "kernels", 0)                        \
    X(T, I64, kernel_ns, "kernel_ns", 0)                      \
    X(T, I64, busy_ns, "busy_ns", 0)                          \
    X(T, I64, idle_ns, "idle_ns", 0)                          \
    X(T, I64, n_gaps, "gaps", 0)                              \
    X(T, I64, n_overlaps, "overlaps", 0)                      \
    X(T, U64, first_ns, "first_ns", 0)                        \
    X(T, U64, last_ns, "last_ns", 0)                          \
    X(T, CLASS_ARR, class_ns, "class_ns", 0)

/* one of the largest idle gaps (fa_ta_gap) */
#define GAP_FIELDS(X, T)                                      \
    X(T, I32, device, "device", 0)                            \
    X(T, I64, stream, "stream", 0)                            \
    X(T, U64, start_ns, "start_ns", 0)                        \
    X(T, I64, gap_ns, "gap_ns", 0)                            \
    X(T, STR, next_kernel, "next_kernel", NULL)               \
    X(T, STR, cpu_op, "cpu_op", NULL)

/* one GPU record of the timeline window (fa_ta_wrec), written as an 8-tuple */
#define WREC_FIELDS(X, T)                                     \
    X(T, U64, start_ns, "start_ns", 0)                        \
    X(T, U64, end_ns, "end_ns", 0)                            \
    X(T, I32, kernel, "kernel", 0)                            \
    X(T, I32, device, "device", 0)                            \
    X(T, I64, stream, "stream", 0)                            \
    X(T, I32, opp, "opp", 0)                                  \
    X(T, I32, occ, "occ", 0)                                  \
    X(T, U8, kind, "kind", 0)

/* one CUDA graph (fa_ta_graph) */
#define GRAPH_FIELDS(X, T)                                    \
    X(T, I32, id, "id", 0)                                    \
    X(T, I64, replays, "replays", 0)                          \
    X(T, I64, kernels, "kernels", 0)                          \
    X(T, I64, kernel_ns, "kernel_ns", 0)                      \
    X(T, STR, launch_op, "launch_op", NULL)                   \
    X(T, STR, capture_op, "capture_op", NULL)

/* the advice (fa_trace_advice) */
#define ADVICE_FIELDS(X, T)                                                   \
    X(T, STR, device_name, "device", NULL)                                    \
    X(T, STR, vendor, "vendor", NULL)                                         \
    X(T, STR, arch, "arch", NULL)                                             \
    X(T, STR, arch_family, "arch_family", NULL)                               \
    X(T, I32, cc_major, "cc_major", 0)                                        \
    X(T, I32, cc_minor, "cc_minor", 0)                                        \
    X(T, STR, cc_source, "arch_source", NULL)                                 \
    X(T, U64, total_mem_bytes, "total_mem_bytes", 0)                          \
    X(T, I32, sm_count, "sm_count", 0)                                        \
    X(T, STR, units_name, "units_name", NULL)                                 \
    X(T, NUM, hbm_gbs, "hbm_gbs", 0)                                          \
    X(T, DERIVED, hbm_gbs, "hbm_source", put_hbm_source)                      \
    X(T, STR, roofs.label, "roofs_label", NULL)                               \
    X(T, NUM, roofs.fp32_gflops, "fp32_gflops", 0)                            \
    X(T, NUM, roofs.tensor_gflops, "tensor_gflops", 0)                        \
    X(T, NUM, mem_roof_gbs, "mem_roof_gbs", 0)                                \
    X(T, STR, mem_roof_source, "mem_roof_source", NULL)                       \
    X(T, BOOL, no_gpu_activity, "no_gpu_activity", 0)                         \
    X(T, I64, n_kernels, "kernels", 0)                                        \
    X(T, I64, kernel_ns, "kernel_ns", 0)                                      \
    X(T, I64, span_ns, "span_ns", 0)                                          \
    X(T, I64, n_steps, "steps", 0)                                            \
    X(T, I64, step_ns, "step_ns", 0)                                          \
    X(T, I32, n_streams, "streams", 0)                                        \
    X(T, I64, n_memcpy, "memcpy", 0)                                          \
    X(T, I64, memcpy_ns, "memcpy_ns", 0)                                      \
    X(T, I64, n_memset, "memset", 0)                                          \
    X(T, I64, memset_ns, "memset_ns", 0)                                      \
    X(T, I64, n_launch_calls, "launch_calls", 0)                              \
    X(T, I64, launch_call_ns, "launch_call_ns", 0)                            \
    X(T, I64, launch_call_median_ns, "launch_call_median_ns", -1)             \
    X(T, I64, launch_latency_ns, "launch_latency_ns", -1)                     \
    X(T, I64, n_latency_gaps, "launch_latency_gaps", 0)                       \
    X(T, I64, n_held_gaps, "held_gaps", 0)                                    \
    X(T, I64, held_ns, "held_ns", 0)                                          \
    X(T, I64, n_host_bound_gaps, "host_bound_gaps", 0)                        \
    X(T, I64, host_bound_idle_ns, "host_bound_idle_ns", 0)                    \
    X(T, I32, host_bound_device, "host_bound_device", FA_TA_NOT_STORED)       \
    X(T, I64, host_bound_stream, "host_bound_stream", FA_TA_NOT_STORED)       \
    X(T, I64, host_bound_idle_sum_ns, "host_bound_idle_sum_ns", 0)            \
    X(T, I32, host_bound_streams, "host_bound_streams", 0)                    \
    X(T, I64, host_bound_gap_median_ns, "host_bound_gap_median_ns", -1)       \
    X(T, I64, n_unclassed_gaps, "unclassed_gaps", 0)                          \
    X(T, I64, unclassed_idle_ns, "unclassed_idle_ns", 0)                      \
    X(T, I64, launch_per_kernel_ns, "launch_per_kernel_ns", FA_TA_NOT_STORED) \
    X(T, I64, idle_ns, "idle_ns", 0)                                          \
    X(T, I64, n_overlaps, "overlaps", 0)                                      \
    X(T, I64, n_outside_steps, "outside_steps", 0)                            \
    X(T, I64, outside_steps_ns, "outside_steps_ns", 0)                        \
    X(T, I64, launch_cap_ns, "launch_cap_ns", -1)                             \
    X(T, I64, n_fused_kernels, "fused_kernels", 0)                            \
    X(T, I64, fused_kernel_ns, "fused_kernel_ns", 0)                          \
    X(T, I64, split_second_domain, "split_second_domain", 0)                  \
    X(T, I64, split_host_boundary, "split_host_boundary", 0)                  \
    X(T, I64, split_not_connected, "split_not_connected", 0)                  \
    X(T, U64, n_orphans, "orphans", 0)                                        \
    X(T, U64, n_clock_inversions, "clock_inversions", 0)                      \
    X(T, U64, n_parse_errors, "parse_errors", 0)                              \
    X(T, I64, n_estimated_bytes, "estimated_bytes", 0)                        \
    X(T, I64, launch_bound_kernels, "launch_bound_kernels", 0)                \
    X(T, I64, launch_bound_ns, "launch_bound_ns", 0)                          \
    X(T, NUM, saving_ns, "saving_ns", 0)                                      \
    X(T, I64, saving_kernel_ns, "saving_kernel_ns", 0)                        \
    X(T, I64, n_opps_total, "opportunities_total", 0)                         \
    X(T, I64, graph_kernels, "graph_kernels", 0)                              \
    X(T, U64, peak_state_bytes, "peak_state_bytes", 0)                        \
    X(T, CLASS_OBJ, class_ns, "class_ns", 0)                                  \
    X(T, RECS, opps, "opportunities", opps)                                   \
    X(T, RECS, kernels, "kernel_stats", kernels)                              \
    X(T, RECS, points, "points", points)                                      \
    X(T, RECS, stretches, "launch_bound_stretches", stretches)                \
    X(T, RECS, streams, "stream_stats", streams)                              \
    X(T, RECS, gaps, "largest_gaps", gaps)                                    \
    X(T, STR, window_what, "window_what", NULL)                               \
    X(T, RECS, window, "window", window)                                      \
    X(T, RECS, graphs, "graphs", graphs)

/* ---- derived values (written, not read back) ---- */

static void put_bytes_word(fa_buf *b, const void *rec)
{
    fa_json_str(b, ((const fa_ta_opportunity *)rec)->read_bytes >= 0 ? "estimated" : "unknown");
}

static void put_estimated(fa_buf *b, const void *rec)
{
    (void)rec;
    fa_json_str(b, "estimated");
}

static void put_hbm_source(fa_buf *b, const void *rec)
{
    fa_json_str(b, ((const fa_trace_advice *)rec)->hbm_gbs > 0 ? "theoretical" : NULL);
}

/* ---- read-back checks ---- */

static bool kernel_check(void *rec, const fa_trace_advice *a)
{
    (void)a;
    fa_ta_kernel *k = rec;
    if (!k->full_name) k->full_name = k->name;
    return true;
}

static bool wrec_check(void *rec, const fa_trace_advice *a)
{
    const fa_ta_wrec *w = rec;
    return w->kernel >= -1 && w->kernel < a->n_kernel_names && w->opp >= -1 && w->opp < a->n_opps;
}

/* ---- the tables ---- */

static const jfield k_opp_fields[] = {OPP_FIELDS(ROW, fa_ta_opportunity)};
static const jfield k_kernel_fields[] = {KERNEL_FIELDS(ROW, fa_ta_kernel)};
static const jfield k_point_fields[] = {POINT_FIELDS(ROW, fa_ta_point)};
static const jfield k_stretch_fields[] = {STRETCH_FIELDS(ROW, fa_ta_stretch)};
static const jfield k_stream_fields[] = {STREAM_FIELDS(ROW, fa_ta_stream)};
static const jfield k_gap_fields[] = {GAP_FIELDS(ROW, fa_ta_gap)};
static const jfield k_wrec_fields[] = {WREC_FIELDS(ROW, fa_ta_wrec)};
static const jfield k_graph_fields[] = {GRAPH_FIELDS(ROW, fa_ta_graph)};

#define NF(t) (sizeof t / sizeof t[0])
static const jrec opps_rec = {"opportunity", k_opp_fields, NF(k_opp_fields), sizeof(fa_ta_opportunity), false,
                              offsetof(fa_ta_opportunity, n), offsetof(fa_ta_opportunity, read_bytes), NULL};
static const jrec kernels_rec = {"kernel", k_kernel_fields, NF(k_kernel_fields), sizeof(fa_ta_kernel), false, SIZE_MAX, 0,
                                 kernel_check};
static const jrec points_rec = {"point", k_point_fields, NF(k_point_fields), sizeof(fa_ta_point), false, SIZE_MAX,
                                offsetof(fa_ta_point, bytes), NULL};
static const jrec stretches_rec = {"stretch", k_stretch_fields, NF(k_stretch_fields), sizeof(fa_ta_stretch), false, SIZE_MAX,
                                   0, NULL};
static const jrec streams_rec = {"stream", k_stream_fields, NF(k_stream_fields), sizeof(fa_ta_stream), false, SIZE_MAX, 0,
                                 NULL};
static const jrec gaps_rec = {"gap", k_gap_fields, NF(k_gap_fields), sizeof(fa_ta_gap), false, SIZE_MAX, 0, NULL};
static const jrec window_rec = {"window record", k_wrec_fields, NF(k_wrec_fields), sizeof(fa_ta_wrec), true, SIZE_MAX, 0,
                                wrec_check};
static const jrec graphs_rec = {"graph", k_graph_fields, NF(k_graph_fields), sizeof(fa_ta_graph), false, SIZE_MAX, 0, NULL};

/* the counts of the advice's arrays, named <array>_count for the RECS rows */
enum {
    opps_count = offsetof(fa_trace_advice, n_opps),
    kernels_count = offsetof(fa_trace_advice, n_kernel_names),
    points_count = offsetof(fa_trace_advice, n_points),
    stretches_count = offsetof(fa_trace_advice, n_stretches),
    streams_count = offsetof(fa_trace_advice, n_streams),
    gaps_count = offsetof(fa_trace_advice, n_gaps),
    window_count = offsetof(fa_trace_advice, n_window),
    graphs_count = offsetof(fa_trace_advice, n_graphs),
};
static const jfield k_advice_fields[] = {ADVICE_FIELDS(ROW, fa_trace_advice)};
static const jrec advice_rec = {"advice", k_advice_fields, NF(k_advice_fields), sizeof(fa_trace_advice), false, SIZE_MAX, 0,
                                NULL};

#define AT(rec, off, T) ((T *)((char *)(rec) + (off)))
#define CAT(rec, off, T) ((const T *)((const char *)(rec) + (off)))

/* ---- writing ---- */

/* the shortest decimal that reads back as v exactly (15 to 17 significant digits): what the run
 * database keeps is what was computed, so a figure read back prints as it did */
static void put_num(fa_buf *b, double v)
{
    if (!isfinite(v)) {
        fa_buf_puts(b, "null");
        return;
    }
    if (fabs(v) < 9e15 && v == (double)(int64_t)v) {
        fa_buf_printf(b, "%" PRId64, (int64_t)v);
        return;
    }
    char t[40];
    for (int p = 15; p <= 17; p++) {
        snprintf(t, sizeof t, "%.*g", p, v);
        if (strtod(t, NULL) == v) break;
    }
    fa_buf_puts(b, t);
}

static void put_rec(fa_buf *b, const jrec *r, const void *rec);

/* one value of field f of record rec (its key already written) */
static void put_value(fa_buf *b, const jrec *r, const jfield *f, const void *rec)
{
    int n = r->count_off != SIZE_MAX ? *CAT(rec, r->count_off, int) : 0;
    switch (f->kind) {
    case J_STR: fa_json_str(b, *CAT(rec, f->off, const char *)); break;
    case J_STR_IFUNKNOWN: fa_json_str(b, *CAT(rec, r->bytes_off, double) < 0 ? *CAT(rec, f->off, const char *) : NULL); break;
    case J_I64: fa_buf_printf(b, "%" PRId64, *CAT(rec, f->off, int64_t)); break;
    case J_U64: fa_buf_printf(b, "%" PRIu64, *CAT(rec, f->off, uint64_t)); break;
    case J_I32: fa_buf_printf(b, "%" PRId32, *CAT(rec, f->off, int32_t)); break;
    case J_U8: fa_buf_printf(b, "%d", *CAT(rec, f->off, uint8_t)); break;
    case J_NUM:
    case J_IFBYTES: put_num(b, *CAT(rec, f->off, double)); break;
    case J_NULLNEG: {
        double v = *CAT(rec, f->off, double);
        if (v >= 0) put_num(b, v);
        else fa_buf_puts(b, "null");
        break;
    }
    case J_BOOL: fa_buf_puts(b, *CAT(rec, f->off, bool) ? "true" : "false"); break;
    case J_KCLASS: fa_json_str(b, fa_kclass_name(*CAT(rec, f->off, fa_kclass))); break;
    case J_I32X3: {
        const int32_t *v = CAT(rec, f->off, int32_t);
        fa_buf_printf(b, "[%d,%d,%d]", v[0], v[1], v[2]);
        break;
    }
    case J_CLASS_OBJ:
    case J_CLASS_ARR: {
        const int64_t *v = CAT(rec, f->off, int64_t);
        fa_buf_puts(b, f->kind == J_CLASS_OBJ ? "{" : "[");
        for (int c = 0; c < FA_KCLASS_COUNT; c++) {
            if (c) fa_buf_puts(b, ",");
            if (f->kind == J_CLASS_OBJ) fa_buf_printf(b, "\"%s\":", fa_kclass_name((fa_kclass)c));
            fa_buf_printf(b, "%" PRId64, v[c]);
        }
        fa_buf_puts(b, f->kind == J_CLASS_OBJ ? "}" : "]");
        break;
    }
    case J_STRS:
    case J_I64S: {
        fa_buf_puts(b, "[");
        for (int i = 0; i < n; i++) {
            if (i) fa_buf_puts(b, ",");
            if (f->kind == J_STRS) fa_json_str(b, (*CAT(rec, f->off, const char **))[i]);
            else fa_buf_printf(b, "%" PRId64, (*CAT(rec, f->off, int64_t *))[i]);
        }
        fa_buf_puts(b, "]");
        break;
    }
    case J_RECS: {
        const char *arr = *CAT(rec, f->off, const char *);
        int cnt = *CAT(rec, f->count_off, int);
        fa_buf_puts(b, "[");
        for (int i = 0; i < cnt; i++) {
            if (i) fa_buf_puts(b, ",");
            put_rec(b, f->sub, arr + (size_t)i * f->sub->size);
        }
        fa_buf_puts(b, "]");
        break;
    }
    case J_DERIVED: f->derive(b, rec); break;
    }
}

static void put_rec(fa_buf *b, const jrec *r, const void *rec)
{
    fa_buf_puts(b, r->tuple ? "[" : "{");
    bool first = true;
    for (size_t i = 0; i < r->n; i++) {
        const jfield *f = &r->f[i];
        if (f->kind == J_IFBYTES && !(*CAT(rec, r->bytes_off, double) >= 0)) continue;
        if (!first) fa_buf_puts(b, ",");
        first = false;
        if (!r->tuple) {
            fa_json_str(b, f->key);
            fa_buf_puts(b, ":");
        }
        put_value(b, r, f, rec);
    }
    fa_buf_puts(b, r->tuple ? "]" : "}");
}

void fa_trace_advice_json(const fa_trace_advice *a, fa_buf *b)
{
    put_rec(b, &advice_rec, a);
}

/* ---- reading ---- */

static yajl_val jget(yajl_val o, const char *k)
{
    if (!o || !YAJL_IS_OBJECT(o)) return NULL;
    for (size_t i = 0; i < o->u.object.len; i++)
        if (!strcmp(o->u.object.keys[i], k)) return o->u.object.values[i];
    return NULL;
}

static int64_t num_i64(yajl_val v, int64_t dflt)
{
    if (!v || !YAJL_IS_NUMBER(v)) return dflt;
    return YAJL_IS_INTEGER(v) ? YAJL_GET_INTEGER(v) : fa_f64_to_i64_sat(YAJL_GET_DOUBLE(v));
}

static fa_kclass class_parse(yajl_val v)
{
    const char *s = v && YAJL_IS_STRING(v) ? YAJL_GET_STRING(v) : NULL;
    for (int c = 0; c < FA_KCLASS_COUNT; c++)
        if (s && !strcmp(s, fa_kclass_name((fa_kclass)c))) return (fa_kclass)c;
    return FA_KCLASS_OTHER;
}

typedef struct rd {
    fa_ctx *ctx;
    fa_arena *ar;
    const fa_trace_advice *a; /* for the checks */
    fa_status s;
} rd;

static const char *str_dup(rd *x, yajl_val v, const char *dflt)
{
    if (!v || !YAJL_IS_STRING(v)) return dflt;
    const char *c = fa_arena_strdup(x->ar, YAJL_GET_STRING(v));
    if (!c && !x->s) x->s = FA_ERR_NOMEM;
    return c;
}

static size_t arr_len(yajl_val v)
{
    return v && YAJL_IS_ARRAY(v) ? v->u.array.len : 0;
}

static bool get_rec(rd *x, const jrec *r, yajl_val v, void *rec, size_t index);

/* the first member list of r (it sets the record's member count) */
static const jfield *first_list(const jrec *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->f[i].kind == J_STRS || r->f[i].kind == J_I64S) return &r->f[i];
    return NULL;
}

/* field f of rec from value v (NULL when absent); false: the record is malformed */
static bool get_value(rd *x, const jrec *r, const jfield *f, yajl_val v, void *rec)
{
    switch (f->kind) {
    case J_STR:
    case J_STR_IFUNKNOWN: *AT(rec, f->off, const char *) = str_dup(x, v, f->dstr); break;
    case J_I64: *AT(rec, f->off, int64_t) = num_i64(v, (int64_t)f->dflt); break;
    case J_U64: *AT(rec, f->off, uint64_t) = (uint64_t)num_i64(v, (int64_t)f->dflt); break;
    case J_I32: *AT(rec, f->off, int32_t) = (int32_t)num_i64(v, (int64_t)f->dflt); break;
    case J_U8: *AT(rec, f->off, uint8_t) = (uint8_t)num_i64(v, (int64_t)f->dflt); break;
    case J_NUM:
    case J_NULLNEG:
    case J_IFBYTES: *AT(rec, f->off, double) = v && YAJL_IS_NUMBER(v) ? YAJL_GET_DOUBLE(v) : f->dflt; break;
    case J_BOOL: *AT(rec, f->off, bool) = v && YAJL_IS_TRUE(v); break;
    case J_KCLASS: *AT(rec, f->off, fa_kclass) = class_parse(v); break;
    case J_I32X3:
        for (int d = 0; d < 3; d++)
            AT(rec, f->off, int32_t)[d] = arr_len(v) == 3 ? (int32_t)YAJL_GET_INTEGER(v->u.array.values[d]) : 0;
        break;
    case J_CLASS_OBJ:
        for (int c = 0; c < FA_KCLASS_COUNT; c++)
            AT(rec, f->off, int64_t)[c] = num_i64(jget(v, fa_kclass_name((fa_kclass)c)), 0);
        break;
    case J_CLASS_ARR:
        for (int c = 0; c < FA_KCLASS_COUNT && (size_t)c < arr_len(v); c++)
            AT(rec, f->off, int64_t)[c] = YAJL_GET_INTEGER(v->u.array.values[c]);
        break;
    case J_STRS:
    case J_I64S: {
        /* the first member list sets the record's member count; the others must agree */
        int *n = AT(rec, r->count_off, int);
        size_t len = arr_len(v);
        if (f == first_list(r)) {
            if (len > FA_TA_MAX_SEQ) return false;
            *n = (int)len;
        } else if (len != (size_t)*n) {
            return false;
        }
        size_t elem = f->kind == J_STRS ? sizeof(const char *) : sizeof(int64_t);
        void *arr = fa_arena_alloc(x->ar, (len ? len : 1) * elem);
        if (!arr) {
            x->s = FA_ERR_NOMEM;
            return true;
        }
        for (size_t i = 0; i < len; i++) {
            yajl_val e = v->u.array.values[i];
            if (f->kind == J_I64S) {
                ((int64_t *)arr)[i] = YAJL_IS_INTEGER(e) ? YAJL_GET_INTEGER(e) : 0;
            } else if (!(((const char **)arr)[i] = fa_arena_strdup(x->ar, YAJL_IS_STRING(e) ? YAJL_GET_STRING(e) : f->dstr))) {
                x->s = FA_ERR_NOMEM;
                return true;
            }
        }
        *AT(rec, f->off, void *) = arr;
        break;
    }
    case J_RECS: {
        size_t len = arr_len(v);
        char *arr = fa_arena_alloc(x->ar, (len ? len : 1) * f->sub->size);
        if (!arr) {
            x->s = FA_ERR_NOMEM;
            return true;
        }
        memset(arr, 0, (len ? len : 1) * f->sub->size);
        *AT(rec, f->off, char *) = arr;
        int *cnt = AT(rec, f->count_off, int);
        *cnt = 0;
        for (size_t i = 0; i < len && !x->s; i++)
            if (get_rec(x, f->sub, v->u.array.values[i], arr + (size_t)*cnt * f->sub->size, i)) (*cnt)++;
        break;
    }
    case J_DERIVED: break;
    }
    return true;
}

/* one record from v into rec (zeroed): true when it is kept; a malformed record with a member
 * list sets x->s (the whole document is refused), a malformed tuple is dropped */
static bool get_rec(rd *x, const jrec *r, yajl_val v, void *rec, size_t index)
{
    if (r->tuple) {
        if (arr_len(v) != r->n) return false;
        for (size_t i = 0; i < r->n; i++)
            if (!YAJL_IS_INTEGER(v->u.array.values[i])) return false;
    }
    for (size_t i = 0; i < r->n && !x->s; i++) {
        const jfield *f = &r->f[i];
        yajl_val fv = r->tuple ? v->u.array.values[i] : jget(v, f->key);
        if (!get_value(x, r, f, fv, rec)) {
            x->s = fa_ctx_error(x->ctx, FA_ERR_INPUT, "stored trace advice: %s %zu is malformed", r->name, index);
            return false;
        }
    }
    if (x->s) return false;
    return !r->check || r->check(rec, x->a);
}

fa_status fa_trace_advice_from_json(fa_ctx *ctx, const char *json, size_t n, fa_trace_advice **out)
{
    char *txt = malloc(n + 1), err[200];
    if (!txt) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory reading the stored trace advice");
    memcpy(txt, json, n);
    txt[n] = 0;
    yajl_val root = yajl_tree_parse(txt, err, sizeof err);
    free(txt);
    if (!root || !YAJL_IS_OBJECT(root)) {
        if (root) yajl_tree_free(root);
        return fa_ctx_error(ctx, FA_ERR_INPUT, "stored trace advice is not valid JSON: %s", err);
    }
    fa_trace_advice *a = calloc(1, sizeof *a);
    if (!a || !(a->arena = fa_arena_create(1 << 16))) {
        free(a);
        yajl_tree_free(root);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory reading the stored trace advice");
    }
    fa_arena *ar = a->arena;
    rd x = {ctx, ar, a, FA_OK};
    get_rec(&x, &advice_rec, root, a, 0);
    a->arena = ar;
    a->roofs.hbm_gbs = a->hbm_gbs;
    a->hbm_label = a->roofs.label;
    yajl_tree_free(root);
    if (x.s) {
        fa_trace_advice_free(a);
        if (x.s == FA_ERR_NOMEM) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory reading the stored trace advice");
        return x.s;
    }
    *out = a;
    return FA_OK;
}
