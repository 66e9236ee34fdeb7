/* trace private — what the files of the trace-advice module share: the builder's state and the
 * records it holds while they sit in a window, the shapes-and-bytes model, the streaming medians,
 * the renderings' small helpers. Nothing here is seen outside trace/. */
#ifndef FA_TRACE_IMPL_H
#define FA_TRACE_IMPL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/fusion_rule.h"
#include "trace/trace.h"

/* ---- streaming medians (trace/medians.c) ---- */

/* Exact values up to QH_EXACT samples, then a log-scale histogram (bins 3% wide: the median it
 * reports is within 1.5% of the true one) over 1 ns .. 10^13 ns. Bounded memory per series. */
enum { QH_EXACT = 64, QH_BINS = 1020 };

typedef struct qhist {
    int64_t n;
    int64_t *exact;   /* QH_EXACT values while n <= QH_EXACT */
    uint32_t *bins;   /* QH_BINS counts once n > QH_EXACT */
    int64_t zeros;    /* values <= 0 */
} qhist;

bool fa__qh_add(qhist *q, int64_t v);       /* false on OOM */
int64_t fa__qh_median(qhist *q);            /* the lower median; -1 when empty */
void fa__qh_free(qhist *q);
size_t fa__qh_bytes(const qhist *q);

/* ---- the launching cpu op's inputs, and the bytes a kernel moves (trace/shapes.c) ---- */


/* The launching cpu op's inputs, parsed once per distinct shape string. The importers write
 * "TYPE:DIMS;TYPE:DIMS;..." with DIMS "8x512x768" (a 0-d tensor: empty), "L<numel>" for a
 * TensorList, "?" when unreadable; TYPE is the c10 type name ("float", "c10::BFloat16",
 * "Scalar", "TensorList", ...), DIMS after its last ':'. */
enum { SH_MAX_IN = 16, SH_MAX_DIMS = 8 };

/* what kind of number a dtype holds: PyTorch's type promotion goes by it (a 0-d tensor or a Python
 * scalar of the same kind does not widen a dimensioned tensor: bf16 * 0.125 stays bf16) */
enum { DT_UNKNOWN = 0, DT_BOOL, DT_INT, DT_FLOAT, DT_COMPLEX };

typedef struct sh_in {
    bool tensor;        /* a tensor or a tensor list with a known element count */
    uint8_t dsize;      /* bytes per element, 0 unknown */
    uint8_t kind;       /* DT_* */
    uint8_t ndim;       /* plain tensors only */
    bool list;
    int8_t contiguous;  /* its strides are a contiguous tensor's: 1, a view (transposed, sliced,
                           expanded): 0, no strides recorded: -1 */
    double numel;
    int64_t dims[SH_MAX_DIMS];
} sh_in;

typedef struct shape_info {
    const char *text;   /* builder-owned */
    const char *dims_text; /* text without the strides (what the roofline points show), builder-owned */
    int32_t dims_id;    /* the builder's id of dims_text */
    int n;
    sh_in in[SH_MAX_IN];
} shape_info;


/* Parse "TYPE:DIMS[@STRIDES];TYPE:DIMS;..." (the importers' shapes text) into si (text not
 * copied). */
void fa__ta_shape_parse(const char *text, shape_info *si);
/* text without its "@STRIDES" parts into out (cap bytes); returns out */
const char *fa__ta_shape_dims_text(const char *text, char *out, size_t cap);

/* Bytes and FLOPs one kernel moves / does, from its op key and the op's inputs. read/write < 0
 * when unknown; *why says what is missing. Output sizes (Kineto records none): elementwise ops
 * write the broadcast of their inputs (the largest input) in the widest input type; reductions
 * (mean, sum, amax, var) reduce the last dimension; copy_(dst, src) reads src and writes dst;
 * softmax / norms / unary ops keep the input's shape. FLOPs: 1 per output element for
 * elementwise ops, 1 per input element for reductions, 5 per element for softmax, 8 for norms;
 * GEMM 2*M*N*K; attention 4*B*H*L*S*D (QK^T and PV). */
typedef struct kbytes {
    double read, write, flops;
    double out_numel;
    uint8_t out_dsize;
    uint8_t out_kind;   /* DT_* of the output, DT_UNKNOWN when not known */
    const char *why;
} kbytes;
void fa__ta_kernel_bytes(const shape_info *si, int key, bool inplace, kbytes *kb);

/* One member of a group, as the bytes model sees it. */
typedef struct ta_member {
    const shape_info *si;   /* its cpu op's inputs, NULL unknown */
    int key;                /* op key */
    bool inplace;
} ta_member;

/* The fused kernel's traffic for one occurrence (estimated): the group's first member reads its
 * inputs; a later member's input that an earlier member produced (fa__ta_reads_output) is an
 * intermediate held on chip; one equal to the group's own first input is that tensor again (read
 * once, with same_x); anything else is an external input (a weight, a residual). Written: the
 * last member's output, every member output no later member reads (someone outside the group
 * does), and the first member's when keep_first (a residual stream that stays live).
 * saved = unfused traffic - fused traffic. False when a member's sizes are unknown. */
bool fa__ta_group_bytes(const ta_member *m, int n, bool keep_first, bool same_x, double *rd, double *wr,
                        double *saved);
/* The fused kernel's lower bound from its members' own bandwidth, one occurrence: for each member
 * j, the part of its traffic the fused kernel still moves (its reads of tensors no earlier member
 * wrote; its write when no later member reads it, or it is the last, or keep_first and j is 0) at
 * the bandwidth j reached (its bytes / dur_ns[j]); the largest over the members, ns. -1 when a
 * member's sizes are unknown. (A reduction that reached 200 GB/s on a 5,300 GB/s data sheet is not
 * 16x faster inside a fused kernel: the audit's MI300X relu_backward -> batch_norm_backward.) */
double fa__ta_member_bound(const ta_member *m, int n, bool keep_first, const int64_t *dur_ns);
/* Does member r read what one of earlier[0..n) wrote? True when a size is unknown (the trace
 * cannot tell: the members are taken as a chain of kernels in a row). */
bool fa__ta_reads_output(const ta_member *earlier, int n, const ta_member *r);
/* Attention members m[0..n) (QK^T GEMM first, .V GEMM last, the softmax among them): per
 * occurrence the fused kernel's reads (Q, K, V and a mask), writes (O), the bytes no longer moved
 * (the scores), the GEMMs' FLOPs, and whether the operands are 16-bit. 1 when known, 0 when a size
 * is unknown, -1 when the sizes say it is not attention (the scores the first GEMM writes are not
 * what the softmax and the second GEMM read). */
int fa__ta_attention_bytes(const ta_member *m, int n, double *rd, double *wr, double *saved, double *flops, bool *half);
/* A GEMM / convolution m[0] with its epilogue m[1..n): the epilogue's extra traffic (its other
 * operands read, outputs written beyond the GEMM's own) and the bytes no longer moved. 1 known,
 * 0 unknown, -1 when the first epilogue op does not read the GEMM's output. */
int fa__ta_epilogue_bytes(const ta_member *m, int n, double *extra_rd, double *extra_wr, double *saved);

/* ---- the builder (trace/builder.c; records in any order: trace/spool.c; finish: trace/finish.c) ---- */

enum {
    WIN = 24,          /* look-ahead window per stream for the patterns (kernels) */
    ROOF_BUCKETS = 8,  /* measured-roof size classes: 8 MiB .. 1 GiB, doubling */
    OPEN_REPLAYS = 64, /* graph replays followed at once */
    SEG_MAX = 256,     /* a run of memory-bound kernels is held up to this long before it is cut */
    NAME_SLOTS = 4096, /* kernel-name cache */
    MAX_STRETCHES = 64 /* launch-bound stretches kept (the longest) */
};

enum {
    RF_ORPHAN = 1, RF_INVERTED = 2, RF_GRAPH = 4,
    RF_BWD = 8,          /* a backward kernel (its name or op says so) */
    RF_BWDPASS = 16,     /* launched in the backward pass (autograd frames on its stack) */
    RF_FUSED = 32,       /* already fused by a compiler or a library (fa_kernel_fused_by) */
    RF_BARRIER = 64,     /* a memcpy / memset record: no kernel, no group across it */
    RF_INTDATA = 128     /* its name's template arguments name an integer element type and no
                            floating one (CUDAFunctorOnSelf_add<long>: a step counter) */
};

/* one GPU record (a kernel, or a memcpy / memset as a barrier) as the analysis holds it, only
 * while it is sorted and then sits in a window */
/* A kernel queued before the one before it on its stream ended, that starts more than this
 * after that one ended, was held by a dependency off its stream (an event of another stream):
 * ns. A device's launch latency is 1-5 us (the corpus traces' medians), so 10 us is past it. */
#define FA_TA_HELD_NS 10000

typedef struct rec {
    uint64_t start, end;
    uint64_t launch_start;  /* its launch call's start, 0 none (an orphan: launched before the trace) */
    uint64_t launch_end;    /* its launch call's end (a graph replay's: cudaGraphLaunch's), 0 none: when
                               the kernel was queued, for the gap before it (fa__ta_analyze) */
    int64_t opinst;      /* the launching cpu op instance (Kineto External id), -1 unknown */
    int64_t launch_ns;   /* launch call duration, -1 none (or counted with its graph replay) */
    int64_t pid, tid;    /* launch thread (for the cpu op of a gap) */
    int64_t graph;       /* graph replay key (launch correlation), -1 */
    int32_t tok;         /* kernel name id, -1 for a barrier */
    int32_t shape;       /* shape signature id, -1 none */
    int32_t frame;       /* pattern-naming frame id, -1 none */
    int32_t op;          /* cpu op name id, -1 none */
    int32_t graph_launch_op, graph_capture_op; /* name ids, -1 */
    int32_t wid;         /* index in the timeline window, -2 - index in the fallback window, -1 */
    int32_t module;      /* its innermost nn.Module class (srcs id), -1 */
    int32_t source;      /* its user source line (srcs id), -1 */
    int16_t key;
    int8_t frame_pat;
    uint8_t cls, flags;
    bool inplace;
    bool aot;            /* under AOTAutograd's CompiledFunction with no Inductor graph inside */
    bool optim;          /* launched inside an optimizer's step (Optimizer.step# on its stack) */
} rec;

/* a record of a builder fed in any order: sorted by (device, stream, start, end, arrival) */
typedef struct srec {
    rec r;
    uint64_t seq;
    int32_t sidx; /* stream index */
} srec;

enum { RUN_RECS = 65536, MERGE_BUDGET = 8 << 20 };

typedef struct tokstat {
    /* name: the normalised name; full_name, cls: the earliest record's own (names normalise
     * together across template arguments, and the records come in any order) */
    const char *name, *full_name;
    fa_kclass cls;
    bool bwd;
    const char *fused_by;  /* static string, NULL */
    uint64_t rep_start, rep_end, cfg_start, occ_start;
    int64_t count, total_ns;
    qhist dur;
    int32_t grid[3], block[3], registers, smem;
    double occupancy;
    const char *occ_src;
} tokstat;

typedef struct pointstat {
    int32_t tok, shape, op;
    int64_t count, total_ns;
} pointstat;

typedef struct oppstat {
    int pattern;        /* -1: a repeated sequence */
    int n;
    bool backward;      /* a member is a backward kernel or ran in the backward pass */
    bool aot;           /* a member ran under torch.compile with a backend that does not fuse */
    bool optim;         /* every member of its first occurrence ran in an optimizer's step */
    bool recompute;     /* every member a forward kernel run in the backward pass inside an
                           nn.Module's forward: recomputed (activation checkpointing) */
    bool recompute_seen; /* recompute is decided by the first occurrence */
    uint32_t bwd_mask;  /* members that are backward kernels (their op key reads "<key>_backward") */
    int32_t tok[FA_TA_MAX_SEQ];
    int16_t key[FA_TA_MAX_SEQ];
    int64_t member_ns[FA_TA_MAX_SEQ];
    int64_t count, kernel_ns, gaps_ns, skipped;
    int64_t bytes_occ;
    double read, write, saved;   /* sums over the occurrences with sizes */
    double flops;                /* attention: its GEMMs' FLOPs, over the occurrences with sizes */
    bool tensor16;               /* attention: 16-bit operands (the tensor-core roof) */
    double anchor_ns;            /* epilogue: the anchor GEMM's time; attention: both GEMMs' (all occurrences) */
    double longest_ns;           /* sum over occurrences of the slowest member */
    double member_bound_ns;      /* sum over the occurrences with sizes of fa__ta_member_bound's */
    int32_t module, source;      /* first occurrence's nn.Module class and source line (srcs ids), -1 */
    int32_t device;
    int64_t stream;
    uint64_t first_start;
} oppstat;

typedef struct replay {
    int64_t key;          /* launch correlation, -1 free */
    uint64_t hash;
    int64_t n, ns;
    int64_t launch_ns;    /* its one launch call's duration, -1 none: its kernels' share goes into
                             the launch-call median when the replay closes */
    int32_t launch_op, capture_op;
} replay;

typedef struct graphstat {
    int64_t replays, kernels, kernel_ns;
    int32_t launch_op, capture_op;
    int id;
} graphstat;

typedef struct strm {
    fa_ta_stream st;
    bool any;
    uint64_t last_end, busy_end;
    uint64_t xfer_end;    /* the end of the latest memcpy / memset on the stream, 0 none */
    int64_t last_graph;   /* the graph replay (rec.graph) of the kernel that ends at last_end, -1 */
    int32_t last_tok;
    int64_t host_idle_ns; /* this stream's host-bound idle (its gaps are disjoint in time) */
    rec win[WIN];
    int wn;
    int32_t refused_frame; /* the frame whose kernels did not fit its pattern, while it lasts; -2 none */
    rec *seg;             /* the run of memory-bound kernels held (grown to SEG_MAX as it fills: a
                             stream that never holds one costs no 32 KiB) */
    int seg_n, seg_cap;
    int str_n;            /* launch-bound stretch in progress */
    uint64_t str_start, str_end;
    int64_t str_kns, str_lns;
    int32_t str_first;
} strm;

typedef struct cpu_ix cpu_ix; /* feed.c: an index over a trace's cpu side */

struct fa_ta_builder {
    fa_arena *ar;
    fa_ta_device dev;
    const char *dev_name;
    fa_ta_matcher *matcher;
    int n_patterns;
    const fa_ta_pattern_def *patterns;
    fa_ta_cpu_lookup lookup;
    void *lookup_user;
    fa_intern *tok_map, *shape_map, *frame_map, *op_map, *stream_map, *graph_map; /* keys in ar */
    fa_intern *dims_map;   /* shapes texts without strides (roofline points) */
    fa_intern *src_map;    /* module classes and source lines (opportunities' places), as srcs */
    const char **srcs;
    size_t n_srcs, cap_srcs;
    fa_intern *opp_map, *point_map; /* keys: (pattern, n, tokens), (token, shape) in their own arenas */
    tokstat *toks;
    size_t n_toks, cap_toks;
    shape_info **shapes;
    size_t n_shapes, cap_shapes;
    const char **frames, **ops;
    size_t n_frames, cap_frames, n_ops, cap_ops;
    pointstat *points;
    size_t n_points, cap_points;
    oppstat *opps;
    size_t n_opps, cap_opps;
    strm *streams;
    size_t n_streams, cap_streams;
    graphstat *graphs;
    size_t n_graphs, cap_graphs;
    replay replays[OPEN_REPLAYS];
    int replay_next;
    fa_ta_gap gaps[FA_TA_TOP_GAPS];
    struct { int64_t pid, tid; bool ok; } gap_who[FA_TA_TOP_GAPS]; /* the next kernel's launch thread */
    int n_gaps;
    fa_ta_stretch stretches[MAX_STRETCHES];
    int n_stretches;
    int64_t launch_bound_kernels, launch_bound_ns;
    qhist launch_q;
    qhist latency_q;      /* gaps before a kernel already queued: the device's launch latency */
    qhist host_q;         /* gaps before a kernel launched after the previous one ended: host-bound idle */
    int64_t n_latency_gaps, latency_gap_ns, n_host_gaps, host_idle_ns, n_unclassed_gaps, unclassed_idle_ns;
    int64_t n_held_gaps, held_ns; /* queued kernels that started over FA_TA_HELD_NS late: another stream's work */
    int64_t n_kernels, kernel_ns, class_ns[FA_KCLASS_COUNT], n_launch_calls, launch_call_ns;
    int64_t n_memcpy, memcpy_ns, n_memset, memset_ns, n_estimated_bytes, graph_kernels;
    int64_t launch_cap_ns;  /* the median launch call of individually launched kernels: the most one
                               removed launch gives back (set before the analysis), -1 none */
    int64_t n_outside, outside_ns; /* kernels launched outside the profiler steps (not analysed) */
    bool an_any;
    uint64_t an_first, an_last;    /* span of the analysed kernels */
    int64_t n_split[FA_FUSE_WHY_COUNT]; /* runs cut by the legality rule, by reason */
    int64_t n_split_host;               /* runs cut at a host boundary (host_boundary, builder.c) */
    int64_t n_fused_kernels, fused_kernel_ns; /* kernels already fused (RF_FUSED) */
    bool any_gpu;
    uint64_t first_ns, last_ns;
    int64_t n_steps;
    uint64_t step_first, step_last;
    /* profiler steps' starts (host time), sorted at finish: a sequence never spans one
     * (host_boundary) */
    uint64_t *step_starts;
    size_t n_step_starts, cap_step_starts;
    /* events another stream or the host waited on (Kineto cuda_sync records naming the
     * cudaEventRecord): where on which stream each was recorded (its call's host time), sorted at
     * finish; a sequence on that stream is cut where one was recorded between two of its
     * kernels' launches (host_boundary) */
    struct ta_wait { int32_t device; int64_t stream; uint64_t ts; } *waits;
    size_t n_waits, cap_waits;
    uint64_t n_orphans, n_clock_inversions, n_parse_errors;
    /* best achieved bandwidth of a memory-bound kernel with known bytes, among kernels moving at
     * least FA_TA_ROOF_MIN_BYTES << k (k < ROOF_BUCKETS): finish takes the bucket past the device's
     * last-level cache */
    double best_gbs[ROOF_BUCKETS];
    const char *best_gbs_kernel[ROOF_BUCKETS];
    bool win_set, win_by_launch;
    uint64_t win_lo, win_hi;
    const char *win_what;
    /* the fallback window (the first profiler step when the window is the second): its records
     * are kept too, and it is the window at finish when the window got none (a trailing step cut
     * short by the profiler launches nothing) */
    bool fb_set;
    uint64_t fb_lo, fb_hi;
    const char *fb_what;
    fa_ta_wrec *fb_window;
    size_t n_fb_window;
    const char *opk_ptr[1024];  /* cpu op name address -> (name id, key, in place, flags) (cache) */
    int32_t opk_id[1024];
    int16_t opk_key[1024];
    bool opk_inplace[1024];
    uint8_t opk_flags[1024];    /* OPF_* */
    const char *opk_fused[1024];/* fa_kernel_fused_by of the op alone */
    const char *shp_ptr[1024];  /* shapes address -> shape id (cache) */
    int32_t shp_id[1024];
    const char *stk_ptr[1024];  /* stack address -> (frame id, pattern, flags) (cache) */
    int32_t stk_frame[1024];
    int8_t stk_pat[1024];
    uint8_t stk_flags[1024];    /* STF_* */
    int32_t stk_module[1024];   /* the stack's innermost nn.Module class (srcs id), -1 */
    const char *src_ptr[1024];  /* source line address -> srcs id (cache) */
    int32_t src_id[1024];
    const char *name_ptr[4096]; /* raw kernel name address -> token id, class, key, flags (cache) */
    int32_t name_tok[4096];
    uint8_t name_cls[4096];
    int16_t name_key[4096];
    uint8_t name_flags[4096];   /* NMF_* */
    const char *name_fused[4096]; /* fa_kernel_fused_by of the name alone */
    const char *last_launch_name;
    bool last_launch_graph;
    fa_ta_wrec *window;    /* kernel = token id, opp = internal opportunity id until finish */
    /* every record is sorted through runs in a temporary file (spool.c) and analysed at finish */
    struct srec *run;      /* the current run, RUN_RECS at most */
    size_t nrun;
    FILE *sf;              /* the sorted runs (unlinked at creation) */
    uint64_t *run_len;     /* records per run written */
    size_t n_runs, cap_runs;
    uint64_t spool_seq;
    size_t merge_bytes;    /* the merge's buffers */
    size_t last_sid;       /* stream_of's last answer */
    struct cpu_ix *own_cx; /* fa_ta_builder_use_trace: the cpu index over own_trace */
    const fa_trace *own_trace;
    size_t n_window;
    int32_t n_occ;
    fa_status fail;
};

/* ---- shared by the builder's files ---- */

fa_status fa__ta_nomem(fa_ctx *ctx, fa_ta_builder *b);
/* growable array of fixed-size elements: p with room for `need`, new elements zeroed; NULL on OOM
 * (p untouched) */
void *fa__ta_grow(void *p, size_t *cap, size_t need, size_t elem);
static inline int64_t fa__ta_dur(const rec *r)
{
    return r->end > r->start ? (int64_t)(r->end - r->start) : 0;
}
/* the per-stream analysis of one record in time order (builder.c) */
fa_status fa__ta_analyze(fa_ctx *ctx, fa_ta_builder *b, strm *s, const rec *r);
/* a graph-replayed kernel joins its replay (its launch call is counted once per replay) */
void fa__ta_graph_take(fa_ta_builder *b, rec *r);
/* flush the streams' windows and runs, end their stretches; close the open replays */
fa_status fa__ta_drain_streams(fa_ctx *ctx, fa_ta_builder *b);
/* records in any order (spool.c): hold r (run full: sorted into the temporary file) / analyse
 * every held record in (device, stream, start, end, arrival) order */
fa_status fa__ta_spool_add(fa_ctx *ctx, fa_ta_builder *b, strm *s, const rec *r);
fa_status fa__ta_spool_drain(fa_ctx *ctx, fa_ta_builder *b);
void fa__ta_spool_free(fa_ta_builder *b);
/* the cpu side of a trace (feed.c): the ProfilerStep# ranges into b; the index behind the
 * largest gaps' cpu ops */
void fa__ta_count_steps(fa_ta_builder *b, const fa_trace *t);
/* sort the step starts and waited events (finish, before the per-stream analysis) */
void fa__ta_sort_cuts(fa_ta_builder *b);
/* the events t's cuda_sync records waited on, into b (fa_ta_builder_add_event_wait) */
void fa__ta_collect_waits(fa_ta_builder *b, const fa_trace *t);
/* the fallback timeline window, by launch time (see fb_set); before the first add */
void fa__ta_set_window_fallback(fa_ta_builder *b, uint64_t lo, uint64_t hi, const char *what);
void fa__ta_cpu_ix_free(cpu_ix *x);

/* ---- renderings (text.c, save.c) ---- */

/* "12.3 us" / "4.56 ms" into buf */
const char *fa__ta_ms(double ns, char *buf, size_t cap);
/* The launch overhead per kernel in words (the text and the stored sentence alike): fa_trace_advice's
 * launch_per_kernel_ns with its parts, or why it is not measured / not stored. */
void fa__ta_launch_words(fa_buf *b, const fa_trace_advice *a);
/* The host-bound idle (and the gaps not told apart) in words; nothing for an advice stored before
 * the gaps were classified. */
void fa__ta_idle_words(fa_buf *b, const fa_trace_advice *a);
/* the members of o, " -> " between them: op keys (ops) or short kernel names */
void fa__ta_opp_members(fa_buf *b, const fa_ta_opportunity *o, bool ops);
/* ", gfx942 (CDNA3), 304 compute units; ..." / ", sm_90 (deviceProperties), 132 SMs": the device
 * in its vendor's terms, appended after its name */
void fa__ta_device_terms(fa_buf *b, const fa_trace_advice *a);

#endif
