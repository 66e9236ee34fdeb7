/* trace — fusion advice from a GPU kernel trace alone (an imported Kineto / Nsight Systems run:
 * no model graph). Kernels are read once, in per-stream time order, into statistics bounded by
 * the number of distinct kernels and sequences (never by the number of records): per-kernel
 * statistics, named fusion patterns and repeated sequences of memory-bound kernels (each kernel
 * occurrence in at most one), their predicted savings from bytes and measured times,
 * launch-bound stretches, idle gaps, CUDA-graph replays (docs/trace-advice.md).
 * The module by job: classify.c (kernel names, classes, op keys), patterns.c (named patterns and
 * their matcher), shapes.c (inputs and bytes), medians.c, builder.c (the streaming builder),
 * spool.c (records in any order: an external sort), finish.c, feed.c (a whole trace in memory),
 * text.c, io.c (JSON written and read back from one field list), save.c (the run database). */
#ifndef FA_TRACE_H
#define FA_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/collector.h"
#include "collector/import/import.h"
#include "core/core.h"
#include "roofline/roofline.h"
#include "store/store.h"

/* Kernel class by name pattern (docs/trace-advice.md lists the patterns and their order). */
typedef enum fa_kclass {
    FA_KCLASS_ELEMENTWISE = 0,
    FA_KCLASS_REDUCTION = 1,
    FA_KCLASS_GEMM = 2,
    FA_KCLASS_CONV = 3,
    FA_KCLASS_COPY = 4,
    FA_KCLASS_OTHER = 5,
    FA_KCLASS_ATTENTION = 6,
    FA_KCLASS_COLLECTIVE = 7,   /* NCCL / RCCL / symmetric-memory all-reduce, all-gather, ... */
    FA_KCLASS_MEMCPY = 8,       /* copy-engine transfers and sets (memcpy / memset, ROCm blits) */
    FA_KCLASS_COUNT
} fa_kclass;
const char *fa_kclass_name(fa_kclass c);
/* Classify a kernel by its (raw or normalised) name. */
fa_kclass fa_kernel_classify(const char *name);
/* The same, refined by the cpu op that launched it (may be NULL): a kernel the name says nothing
 * about is a GEMM, a convolution, an attention or a collective when its op is one
 * ("attn_fwd" under aten::_flash_attention_forward is attention, "nvjet_*" under aten::addmm a
 * GEMM), and a collective op's kernels are collectives. */
fa_kclass fa_kernel_classify_op(const char *name, const char *op);
/* The refinement alone: a class by name and the op's key (fa_ta_key_of_op, -1 none). */
fa_kclass fa_kclass_with_op(fa_kclass by_name, int op_key);
/* Light = memory-bound by construction: elementwise, reduction, copy. */
bool fa_kclass_light(fa_kclass c);
/* A backward kernel, by its own name ("*_backward_*", "bwd", "grad", "GradGammaBeta") or its
 * op's ("aten::native_layer_norm_backward", "aten::threshold_backward"). */
bool fa_kernel_is_backward(const char *name, const char *op);
/* What already fused this kernel, or NULL: "attention kernel" (FlashAttention, memory-efficient,
 * CK / aotriton fmha: class attention), "torch.compile (Triton)" (triton_* kernels, or launched
 * inside a compiled graph: op or stack naming CompiledFxGraph / Torch-Compiled Region),
 * "fused optimizer" (fused Adam / SGD multi-tensor kernels). Such kernels are reported, never
 * made members of an opportunity. stack may be NULL. */
const char *fa_kernel_fused_by(const char *name, const char *op, const char *stack, fa_kclass cls);
/* Normalise a kernel name into buf (cap bytes, always NUL-terminated): drop a leading "void ",
 * the parameter list and every template argument list, keep the qualified name; for
 * PyTorch elementwise / reduce kernels keep the functor as "<op>", e.g.
 * "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, ...>(...)"
 * -> "at::native::vectorized_elementwise_kernel<add>". Returns buf. */
const char *fa_kernel_name_normalize(const char *name, char *buf, size_t cap);
/* A short name for people (profilers' convention): the normalised name without namespaces
 * ("at::native::vectorized_elementwise_kernel<add>" -> "vectorized_elementwise_kernel<add>"),
 * at most cap - 1 bytes with "..." when cut. Returns buf. */
const char *fa_kernel_name_short(const char *name, char *buf, size_t cap);

/* GPU device tables by name (fa_gpu_hbm_gbs, fa_gpu_cc_from_name): roofline/roofline.h. */

/* ---- the op alphabet (trace/classify.c) and the named patterns (trace/patterns.c) ---- */

/* What a kernel computes, from its name or its cpu op. Not stored as numbers. */
enum {
    FA_TA_KEY_OTHER, FA_TA_KEY_ADD, FA_TA_KEY_SUB, FA_TA_KEY_MUL, FA_TA_KEY_DIV, FA_TA_KEY_NEG, FA_TA_KEY_POW,
    FA_TA_KEY_SQRT, FA_TA_KEY_RSQRT, FA_TA_KEY_EXP, FA_TA_KEY_LOG, FA_TA_KEY_TANH, FA_TA_KEY_ERF, FA_TA_KEY_SIGMOID,
    FA_TA_KEY_SILU, FA_TA_KEY_GELU, FA_TA_KEY_RELU, FA_TA_KEY_WHERE, FA_TA_KEY_FILL, FA_TA_KEY_COPY, FA_TA_KEY_CAT,
    FA_TA_KEY_MEAN, FA_TA_KEY_SUM, FA_TA_KEY_AMAX, FA_TA_KEY_VAR, FA_TA_KEY_SOFTMAX, FA_TA_KEY_LAYER_NORM,
    FA_TA_KEY_RMS_NORM, FA_TA_KEY_DROPOUT, FA_TA_KEY_CLAMP, FA_TA_KEY_GEMM, FA_TA_KEY_CONV, FA_TA_KEY_ATTENTION,
    FA_TA_KEY_INDEX, FA_TA_KEY_EMBEDDING, FA_TA_KEY_BATCH_NORM, FA_TA_KEY_FOREACH, FA_TA_KEY_OPTIMIZER,
    FA_TA_KEY_COLLECTIVE, FA_TA_KEY_MEMCPY,
    FA_TA_KEY_GATED_ACT, /* act(x) * y in one kernel (SwiGLU, GeGLU: act_and_mul, silu_and_mul) */
    FA_TA_KEY_COUNT
};
const char *fa_ta_key_name(int key);
int fa_ta_key_parse(const char *s, size_t n); /* -1 unknown */
/* Key of a cpu op name ("aten::add_" -> add), -1 when the op says nothing. */
int fa_ta_key_of_op(const char *op);
/* Key of a kernel from its normalised name and class, -1 when the name says nothing. */
int fa_ta_key_of_kernel(const char *token, fa_kclass cls);

enum { FA_TA_MAX_PATTERN = 16 };

/* How a named pattern's fused kernel is costed. */
typedef enum fa_ta_cost {
    FA_TA_COST_MEMORY = 0,  /* a new memory-bound kernel: external traffic on the memory roof */
    FA_TA_COST_ATTENTION,   /* attention: both GEMMs' FLOPs on the tensor roof, Q, K, V, O moved once,
                               the scores never written (FlashAttention) */
    FA_TA_COST_EPILOGUE     /* the GEMM / convolution stays, the ops after it become its epilogue:
                               its measured time plus their extra operands' traffic */
} fa_ta_cost;

/* A named fusion pattern: data, not code (trace/patterns.c holds the table). */
typedef struct fa_ta_pattern_def {
    const char *name;   /* "RMSNorm" */
    const char *steps;  /* op keys: "copy? pow mean add rsqrt mul copy? mul" (a|b, ?, +) */
    const char *skip;   /* keys that may sit between two members without joining, or NULL */
    const char *stack;  /* "|"-separated substrings of a cpu-op / nn.Module frame naming it, or NULL */
    const char *fix;    /* what would fuse it */
    bool same_x;        /* a later member's input shaped like the group's first input is that
                           tensor again (x * rsqrt(mean(x^2)): read once); false: a distinct
                           tensor (SiLU(gate) * up) */
    fa_ta_cost cost;    /* how its fused kernel is costed (FA_TA_COST_MEMORY unless said) */
} fa_ta_pattern_def;
const fa_ta_pattern_def *fa_ta_patterns(int *n);

typedef struct fa_ta_matcher fa_ta_matcher;
fa_status fa_ta_matcher_create(fa_ctx *ctx, const fa_ta_pattern_def *defs, int n, fa_ta_matcher **out);
void fa_ta_matcher_free(fa_ta_matcher *m);
/* Match every pattern in table order at keys[0..n) (a window of kernels in stream order): the
 * first pattern matching with its first member at 0 wins; *pattern gets its index, members[]
 * the window positions of its members (at most FA_TA_MAX_PATTERN). Returns the member count
 * (>= 2), 0 for none. */
int fa_ta_matcher_match(const fa_ta_matcher *m, const int *keys, int n, int *pattern, int *members);
/* The same, trying the patterns from table index `from` on (a match the caller refused on its
 * sizes: the next pattern may fit). */
int fa_ta_matcher_match_from(const fa_ta_matcher *m, int from, const int *keys, int n, int *pattern, int *members);
/* The pattern a cpu-op / module frame names, -1 none. */
int fa_ta_matcher_stack(const fa_ta_matcher *m, const char *frame);
/* The op keys a pattern's members may have (its steps and skips), as a bit set by key: a frame
 * group whose kernels say otherwise is not that pattern. */
uint64_t fa_ta_matcher_alphabet(const fa_ta_matcher *m, int pattern);

/* ---- results ---- */

/* Per distinct (normalised) kernel name, GPU kernels only. */
typedef struct fa_ta_kernel {
    int32_t id;                 /* the builder's id (internal; kernels[] is sorted by time) */
    const char *name;           /* normalised name (the sequence token) */
    const char *full_name;      /* first raw name seen */
    fa_kclass cls;
    const char *op;             /* op key (fa_ta_key_name) */
    int64_t count;
    int64_t total_ns;
    int64_t median_ns;          /* streaming: exact up to 64 launches, else within 1.5% */
    int32_t grid[3], block[3];  /* launch configuration of the first launch that has one */
    int32_t registers;          /* per thread, 0 unknown */
    int32_t smem;               /* static + dynamic bytes per block */
    double occupancy;           /* 0..1, -1 unknown */
    const char *occupancy_source; /* "trace" (est. achieved), "calculator" or NULL */
    bool backward;              /* a backward kernel (its name or its op says so) */
    const char *fused_by;       /* already fused (fa_kernel_fused_by): never a member, NULL */
} fa_ta_kernel;

/* A roofline point: one kernel name with one input-shape signature of its cpu op. Bytes and
 * FLOPs are estimated from the shapes (Input Dims + dtypes), never measured. */
typedef struct fa_ta_point {
    const char *kernel;         /* normalised name */
    const char *shapes;         /* the op's input shapes ("float[8,512,768],float[768]"), NULL unknown */
    const char *op;             /* cpu op name */
    fa_kclass cls;
    int64_t count, total_ns;
    double bytes;               /* per launch, estimated; < 0 unknown */
    double flops;               /* per launch, estimated; < 0 unknown */
    const char *why_unknown;    /* when bytes < 0: what is missing */
} fa_ta_point;

/* A fusion opportunity: one named pattern or one repeated sequence of memory-bound kernels,
 * with the same member kernels in the same order. Every kernel occurrence belongs to at most one
 * opportunity, so savings never count a kernel twice. */
typedef struct fa_ta_opportunity {
    int32_t id;                 /* the builder's id (internal; opps[] is sorted by saving) */
    const char *pattern;        /* the named pattern, NULL for a repeated sequence */
    bool backward;              /* of the backward pass (a member is a backward kernel or ran there) */
    bool recompute;             /* forward ops recomputed in the backward pass inside an nn.Module's
                                   forward (activation checkpointing) */
    const char *module;         /* where in the user's code (first occurrence): its innermost
                                   nn.Module class ("Qwen2RMSNorm"), NULL when the trace has none */
    const char *source;         /* and the innermost Python line of the user's code around it
                                   ("transformers/models/qwen2/modeling_qwen2.py(68): forward"), NULL */
    double flops;               /* per occurrence, estimated (attention: its GEMMs'), -1 unknown */
    const char *fix;            /* what would fuse it */
    int n;                      /* member kernels per occurrence */
    const char **members;       /* n normalised kernel names, stream order */
    const char **member_ops;    /* n op keys ("layer_norm_backward" for a backward kernel) */
    int64_t *member_ns;         /* n: measured time of each member over all occurrences */
    int64_t count;              /* occurrences */
    int64_t kernel_ns;          /* measured: member kernel time, all occurrences */
    int64_t gaps_ns;            /* measured: idle before each member after the first, each at most
                                   what its launch cost the host (its launch call, at most the
                                   trace's median launch call, launch_cap_ns): removed by fusing */
    int64_t skipped;            /* kernels between members that stay (SwiGLU's GEMM), all occurrences */
    int64_t bytes_occurrences;  /* occurrences whose sizes were all known */
    double read_bytes;          /* fused kernel, per occurrence: external inputs read once (estimated) */
    double write_bytes;         /* fused kernel, per occurrence: outputs written once (estimated) */
    double saved_bytes;         /* per occurrence: intermediates no longer written and read back */
    fa_fusion_estimate est;     /* predicted fused time and saving over all occurrences */
    double share;               /* saving / step wall time (0..1) */
    int32_t device;             /* of the first occurrence */
    int64_t stream;
    uint64_t first_start_ns;    /* first occurrence: start of its first member */
} fa_ta_opportunity;

/* Consecutive kernels on a stream each shorter than its own launch call. */
typedef struct fa_ta_stretch {
    int32_t device;
    int64_t stream;
    int n_kernels;
    uint64_t start_ns, end_ns;  /* first kernel start .. last kernel end */
    int64_t kernel_ns;          /* summed kernel durations */
    int64_t launch_ns;          /* summed launch-call durations, each up to launch_cap_ns */
    const char *first_name;     /* normalised name of the first kernel */
} fa_ta_stretch;

/* An idle gap between consecutive kernels of a stream. */
typedef struct fa_ta_gap {
    int32_t device;
    int64_t stream;
    uint64_t start_ns;          /* end of the kernel before */
    int64_t gap_ns;             /* > 0 */
    const char *cpu_op;         /* innermost cpu op (or host range) containing the gap's midpoint on
                                   the next kernel's launch thread, else any thread of its process;
                                   NULL if none, or the kernel is an orphan or clock-inverted */
    const char *next_kernel;    /* normalised name */
} fa_ta_gap;

typedef struct fa_ta_stream {
    int32_t device;
    int64_t stream;
    int64_t n_kernels;
    int64_t kernel_ns;          /* summed durations */
    int64_t busy_ns;            /* union of kernel intervals (overlaps counted once) */
    int64_t idle_ns;            /* summed positive gaps between consecutive kernels */
    int64_t n_gaps;             /* positive gaps */
    int64_t n_overlaps;         /* next kernel started before the previous ended (excluded) */
    uint64_t first_ns, last_ns; /* first kernel start, last kernel end */
    int64_t class_ns[FA_KCLASS_COUNT];
} fa_ta_stream;

/* A CUDA / HIP graph: kernels launched by one cudaGraphLaunch call are one replay. Replays with
 * the same kernel sequence are one graph. */
typedef struct fa_ta_graph {
    int id;                     /* 1.. in order of first replay */
    int64_t replays;
    int64_t kernels;            /* per replay */
    int64_t kernel_ns;          /* all replays */
    const char *launch_op;      /* the cpu op around cudaGraphLaunch (e.g. CUDAGraph::replay) */
    const char *capture_op;     /* the cpu op the captured launches ran under, NULL when the
                                   capture is not in the trace */
} fa_ta_graph;

/* One GPU record of the timeline window the report draws (one profiler step). */
typedef struct fa_ta_wrec {
    uint64_t start_ns, end_ns;  /* trace clock */
    int32_t kernel;             /* index in kernels[]; -1 for a memcpy / memset */
    int32_t device;
    int64_t stream;
    int32_t opp;                /* index in opps[] of the opportunity it is a member of, -1 */
    int32_t occ;                /* occurrence id (members of one occurrence share it), -1 */
    uint8_t kind;               /* fa_activity_kind */
} fa_ta_wrec;

enum {
    FA_TA_MIN_STRETCH = 3, FA_TA_MAX_SEQ = 32, FA_TA_TOP_GAPS = 10, FA_TA_MAX_OPPS = 50, FA_TA_MAX_POINTS = 400,
    FA_TA_WINDOW_MAX = 20000, /* GPU records kept for the report's timeline */
    /* distinct (device, stream) pairs a trace may have (more is refused as input): one program's
     * trace has tens to hundreds (8 GPUs x NCCL's and the user's streams); a crafted one with
     * 200,000 took 8.8 GB when each stream held a fixed pattern window and kernel hold */
    FA_TA_MAX_STREAMS = 4096,
    /* the fewest bytes a kernel moves for its bandwidth to count towards the measured memory roof:
     * 8 MiB, over the L2 cache of a T4 (4 MB), V100 (6 MB) or RTX 2080 Ti (5.5 MB) (NVIDIA's data
     * sheets); a kernel that moves less measures latency or cache, not the memory */
    FA_TA_ROOF_MIN_BYTES = 8 << 20,
    /* a figure absent from a stored advice: it was imported by a version that did not store it */
    FA_TA_NOT_STORED = -2
};

typedef struct fa_trace_advice {
    fa_arena *arena;
    int64_t run_id;             /* 0 when built from an in-memory trace */
    const char *device_name;
    const char *vendor;         /* "NVIDIA", "AMD", NULL unknown */
    const char *arch;           /* in the vendor's terms: "sm_90", "gfx942"; NULL unknown */
    const char *arch_family;    /* "Hopper", "CDNA3", NULL unknown */
    const char *units_name;     /* what sm_count counts: "SMs", "compute units" */
    int cc_major, cc_minor;     /* 0 when unknown (AMD: HIP's gcnArch major.minor) */
    const char *cc_source;      /* the trace's record that gave it ("deviceProperties", "TARGET_INFO_GPU"),
                                   "assumed from the device name", NULL */
    uint64_t total_mem_bytes;   /* device memory, 0 unknown */
    int32_t sm_count;           /* 0 unknown */
    fa_gpu_roofs roofs;         /* theoretical, data sheet (0 = unknown) */
    double hbm_gbs;             /* = roofs.hbm_gbs (0 unknown) */
    const char *hbm_label;
    double mem_roof_gbs;        /* the memory roof savings use: the best bandwidth a memory-bound
                                   kernel reached in this trace when known, else hbm_gbs */
    const char *mem_roof_source;
    bool no_gpu_activity;
    int64_t n_kernels;          /* GPU kernel records (device >= 0) */
    int64_t kernel_ns;          /* their summed durations */
    int64_t span_ns;            /* first kernel start .. last kernel end, over all streams */
    int64_t n_steps;            /* ProfilerStep# ranges, 0 when the trace has none */
    int64_t step_ns;            /* one step's wall time: the span of the kernels launched inside the
                                   steps over n_steps, else span_ns */
    int64_t class_ns[FA_KCLASS_COUNT];
    int64_t n_memcpy, memcpy_ns, n_memset, memset_ns;
    int64_t n_launch_calls;     /* runtime/driver calls linked to a kernel */
    int64_t launch_call_ns;     /* their summed durations */
    int64_t launch_call_median_ns; /* -1 none */
    /* The gaps between consecutive kernels of a stream, by what the GPU waited for
     * (docs/trace-advice.md "Launch overhead"): */
    int64_t launch_latency_ns;  /* median gap before a kernel already queued (its launch call had
                                   ended before the previous kernel ended): the device's own launch
                                   latency; -1 not measured (no such gap) */
    int64_t n_latency_gaps;     /* those gaps (a zero gap included) */
    int64_t n_held_gaps;        /* gaps before a queued kernel that started over FA_TA_HELD_NS (10 us)
                                   after the kernel ahead of it: it waited on another stream's work,
                                   so these are not launch latency (not in its median) */
    int64_t held_ns;            /* their sum */
    int64_t n_host_bound_gaps;  /* gaps before a kernel whose launch call ended at or after the
                                   previous kernel's end, on every stream: the stream waited for the
                                   host */
    int64_t host_bound_idle_ns; /* the host-bound idle of the busiest stream (the most kernel time;
                                   one stream's gaps are disjoint in time, so this is within the span,
                                   where a sum over streams that wait at once is not) */
    int32_t host_bound_device;  /* that stream's device and id; FA_TA_NOT_STORED read back from an
                                   advice stored before: host_bound_idle_ns is then the sum */
    int64_t host_bound_stream;
    int64_t host_bound_idle_sum_ns; /* summed over the streams (can pass the span) */
    int host_bound_streams;     /* streams with a host-bound gap */
    int64_t host_bound_gap_median_ns; /* the median of all those gaps, -1 none */
    int64_t n_unclassed_gaps;   /* gaps neither can be told of: the next kernel has no launch call in
                                   the trace or starts before it, or a memcpy / memset ran between */
    int64_t unclassed_idle_ns;
    int64_t launch_per_kernel_ns; /* launch overhead per kernel: launch_call_median_ns (host) +
                                   launch_latency_ns (device), each where measured; -1 neither
                                   measured; FA_TA_NOT_STORED read back from an advice stored before
                                   this figure (its old launch_overhead_ns meant median launch call
                                   + median gap of any kind, and is not read) */
    int64_t idle_ns;            /* summed over streams */
    int64_t n_overlaps;
    int64_t n_outside_steps;    /* kernels launched outside the profiler steps (before the trace,
                                   or before the first / after the last ProfilerStep#): counted in
                                   the kernel figures, not in the opportunities or per-step ones */
    int64_t outside_steps_ns;
    int64_t launch_cap_ns;      /* the most one removed launch gives back: the median launch call
                                   of individually launched kernels (-1 none) */
    int64_t n_fused_kernels, fused_kernel_ns; /* already fused (attention, compiled, fused optimizer) */
    int64_t split_second_domain, split_not_connected; /* kernel runs cut by the fusion rule */
    int64_t split_host_boundary; /* cut where two kernels were launched by different host threads,
                                    or the second waited on another stream (builder.c host_boundary) */
    uint64_t n_orphans, n_clock_inversions, n_parse_errors;
    int64_t n_estimated_bytes;  /* kernels with bytes from Input Dims */
    int n_kernel_names;
    fa_ta_kernel *kernels;      /* by total_ns, largest first */
    int n_opps;
    fa_ta_opportunity *opps;    /* by predicted saving, largest first (at most FA_TA_MAX_OPPS) */
    int64_t n_opps_total;       /* before the cut */
    double saving_ns;           /* sum over all opportunities (each kernel counted at most once) */
    int64_t saving_kernel_ns;   /* the member kernel time those savings come from */
    int n_points;
    fa_ta_point *points;        /* roofline points by total time (at most FA_TA_MAX_POINTS) */
    int n_stretches;
    fa_ta_stretch *stretches;   /* by kernel count, largest first */
    int64_t launch_bound_kernels, launch_bound_ns; /* over all stretches */
    int n_gaps;
    fa_ta_gap *gaps;            /* the FA_TA_TOP_GAPS largest, largest first */
    int n_streams;
    fa_ta_stream *streams;
    int n_graphs;
    fa_ta_graph *graphs;
    int64_t graph_kernels;      /* kernels launched by graph replays */
    uint64_t peak_state_bytes;  /* the advice's own memory at its peak (bounded by distinct
                                   kernels, shapes and sequences, not by records) */
    int n_window;
    fa_ta_wrec *window;         /* the timeline window (fa_ta_builder_set_window), start order */
    const char *window_what;    /* what it is ("ProfilerStep#3", "the first 12.0 ms") */
} fa_trace_advice;

/* Device facts the advice uses; from fa_import_stats.devices or the run's stored summary. */
typedef struct fa_ta_device {
    const char *name;           /* may be NULL */
    int cc_major, cc_minor;     /* 0 unknown */
    uint64_t total_mem_bytes;   /* 0 unknown */
    int32_t sm_count;           /* 0 unknown */
    int32_t warp_size;          /* 0 unknown; 64 tells an AMD device ROCm does not name */
    const char *props_source;   /* the trace's record that gave cc_major/minor: "deviceProperties"
                                   (Kineto), "TARGET_INFO_GPU" (Nsight Systems); NULL: "the trace" */
} fa_ta_device;

/* ---- streaming: the builder the importers feed ---- */

typedef struct fa_ta_builder fa_ta_builder;

/* Innermost cpu op (or host range) containing ts on thread (pid, tid), else on any thread of
 * pid; NULL when none. Used only for the few largest idle gaps. */
typedef const char *(*fa_ta_cpu_lookup)(void *user, int64_t pid, int64_t tid, uint64_t ts);

fa_status fa_ta_builder_create(fa_ctx *ctx, const fa_ta_device *dev, fa_ta_builder **out);
void fa_ta_builder_set_lookup(fa_ta_builder *b, fa_ta_cpu_lookup fn, void *user);
/* The device, when it is known only after the records (a streaming import); before finish. */
void fa_ta_builder_set_device(fa_ta_builder *b, const fa_ta_device *dev);
/* For a builder fed by a streaming import (fa_import_opts.sink): take the steps and the timeline
 * window from t's ProfilerStep# ranges (the second step — the first when the second launched no GPU
 * record —, else the first 20,000 GPU records), and
 * look the largest gaps' cpu ops up in t and count its steps at finish. Call on the first GPU
 * record (the window is taken from the steps read by then); t must live until finish. */
void fa_ta_builder_use_trace(fa_ta_builder *b, const fa_trace *t);
/* One attributed GPU record (kernel, memcpy, memset; other kinds are ignored), in any order: records
 * are sorted through runs of 65,536 in a temporary file ($TMPDIR, unlinked at once, about 120 bytes
 * a record) and analysed in (device, stream, time) order at finish, when the whole trace's
 * profiler steps and median launch call are known; memory stays bounded (Kineto files are often
 * far out of time order, one CUPTI buffer after another). launch: its launch call or NULL. The
 * record's shapes and stack are its cpu op's input shapes and frame chain (may be NULL). The
 * record is not kept; its strings are copied as needed, but g->name must stay valid (same
 * address, same text) until finish: it is cached by address. FA_ERR_NOMEM, FA_ERR_IO (the
 * temporary file). */
fa_status fa_ta_builder_add(fa_ctx *ctx, fa_ta_builder *b, const fa_activity *gpu, const fa_activity *launch);
/* An event recorded on (device, stream) by a host call at host_ns that another stream or the host
 * waited on: no sequence of that stream spans it (the fused kernel would delay the wait). */
void fa_ta_builder_add_event_wait(fa_ta_builder *b, int32_t device, int64_t stream, uint64_t host_ns);
/* A ProfilerStep#N range (step time for the savings' share). */
void fa_ta_builder_add_step(fa_ta_builder *b, uint64_t start_ns, uint64_t end_ns);
/* Keep the GPU records (at most FA_TA_WINDOW_MAX) whose launch call starts in [lo, hi] (by_launch)
 * or that start in it as the timeline window; what (copied) names it. Call before the first add. */
void fa_ta_builder_set_window(fa_ta_builder *b, uint64_t lo, uint64_t hi, bool by_launch, const char *what);
/* Importer counters (orphans, inversions, parse errors). */
void fa_ta_builder_set_counters(fa_ta_builder *b, uint64_t orphans, uint64_t inversions, uint64_t parse_errors);
/* Flush the windows, rank, and hand over the advice (builder freed; *out owned by the caller). */
fa_status fa_ta_builder_finish(fa_ctx *ctx, fa_ta_builder *b, fa_trace_advice **out);
void fa_ta_builder_free(fa_ta_builder *b);

/* Advice from an in-memory trace (feeds a builder with every GPU record). dev may be NULL (name
 * from t->device_name, cc guessed). *out owned by the caller (fa_trace_advice_free). */
fa_status fa_trace_advise(fa_ctx *ctx, const fa_trace *t, const fa_ta_device *dev, fa_trace_advice **out);
/* Advice of stored run `run_id`: the advice stored at import (fa_trace_advice_save) read back —
 * the records themselves are not all stored (docs/trace-advice.md). FA_ERR_INPUT when the run
 * holds no stored trace advice. */
fa_status fa_trace_advise_run(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_ta_device *dev,
                              fa_trace_advice **out);
/* Store the advice with run run_id: analysis_summary rows with key trace.*, analysis_chains rows
 * (one per opportunity), and the whole advice as one JSON document (key trace.advice_json) that
 * fa_trace_advise_run reads back. One transaction (or the caller's). */
fa_status fa_trace_advice_save(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_trace_advice *a);
/* Human-readable text (what `import` prints) / one JSON object. Append to out. */
void fa_trace_advice_text(const fa_trace_advice *a, fa_buf *out);
void fa_trace_advice_json(const fa_trace_advice *a, fa_buf *out);
/* Read back what fa_trace_advice_json wrote. FA_ERR_INPUT on a malformed document. */
fa_status fa_trace_advice_from_json(fa_ctx *ctx, const char *json, size_t n, fa_trace_advice **out);
void fa_trace_advice_free(fa_trace_advice *a);

#endif
