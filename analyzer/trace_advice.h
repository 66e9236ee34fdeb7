/* analyzer/trace_advice — op-level fusion advice from a GPU kernel trace alone (an imported
 * Kineto / Nsight Systems run: no model graph). Per-kernel statistics, repeated sequences of
 * memory-bound kernels on a stream, launch-bound stretches and idle gaps (docs/trace-advice.md). */
#ifndef FA_TRACE_ADVICE_H
#define FA_TRACE_ADVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/collector.h"
#include "collector/import/import.h"
#include "core/core.h"
#include "store/store.h"

/* Kernel class by name pattern (docs/trace-advice.md lists the patterns and their order). */
typedef enum fa_kclass {
    FA_KCLASS_ELEMENTWISE = 0,
    FA_KCLASS_REDUCTION = 1,
    FA_KCLASS_GEMM = 2,
    FA_KCLASS_CONV = 3,
    FA_KCLASS_COPY = 4,
    FA_KCLASS_OTHER = 5,
    FA_KCLASS_COUNT
} fa_kclass;
const char *fa_kclass_name(fa_kclass c);
/* Classify a kernel by its (raw or normalised) name. */
fa_kclass fa_kernel_classify(const char *name);
/* Light = memory-bound by construction: elementwise, reduction, copy. */
bool fa_kclass_light(fa_kclass c);
/* Normalise a kernel name into buf (cap bytes, always NUL-terminated): drop a leading "void ",
 * the parameter list and every template argument list, keep the qualified name; for
 * PyTorch elementwise / reduce kernels keep the functor as "<op>", e.g.
 * "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, ...>(...)"
 * -> "at::native::vectorized_elementwise_kernel<add>". Returns buf. */
const char *fa_kernel_name_normalize(const char *name, char *buf, size_t cap);

/* Theoretical HBM bandwidth of a GPU by name (and memory size for A100 40/80 GB), GB/s
 * (1e9 B/s); 0 when not tabled. *label gets the table row ("A100 80GB", ...). Vendor data
 * sheets; see docs/trace-advice.md. */
double fa_gpu_hbm_gbs(const char *device_name, uint64_t total_mem_bytes, const char **label);
/* Compute capability guessed from a device name (A100 8.0, V100 7.0, RTX 20xx/T4 7.5,
 * RTX 30xx 8.6, RTX 40xx/L4 8.9, H100/H200 9.0); false when unknown. */
bool fa_gpu_cc_from_name(const char *device_name, int *major, int *minor);

/* Per distinct (normalised) kernel name, GPU kernels only. */
typedef struct fa_ta_kernel {
    const char *name;           /* normalised name (the sequence token) */
    const char *full_name;      /* first raw name seen */
    fa_kclass cls;
    int64_t count;
    int64_t total_ns, median_ns;
    int32_t grid[3], block[3];  /* launch configuration of the first launch that has one */
    int32_t registers;          /* per thread, 0 unknown */
    int32_t smem;               /* static + dynamic bytes per block */
    double occupancy;           /* 0..1, -1 unknown */
    const char *occupancy_source; /* "trace" (est. achieved), "calculator" or NULL */
} fa_ta_kernel;

/* A repeated sequence of light kernels on a stream. */
typedef struct fa_ta_seq {
    int n;                      /* kernels in the sequence, 2..6 */
    const char **names;         /* n normalised names in stream order */
    int64_t count;              /* non-overlapping occurrences over all streams */
    int64_t total_ns;           /* summed kernel time of all occurrences */
    uint64_t intermediate_bytes;/* all occurrences: 2 x bytes_read of kernels 2..n (estimated
                                   from Input Dims, an upper bound); 0 when unknown */
    bool bytes_known;           /* every occurrence had sizes for kernels 2..n */
    int64_t idle_inside_ns;     /* measured: summed idle gaps between the kernels of every
                                   occurrence (GPU waiting inside the sequence) */
    double saving_launch_ns;    /* count x (n-1) x launch_overhead_ns */
    double saving_bytes_ns;     /* intermediate_bytes / hbm bandwidth; 0 when unknown */
    double saving_ns;           /* sum of the two (an estimate) */
} fa_ta_seq;

/* Consecutive kernels on a stream each shorter than its own launch call. */
typedef struct fa_ta_stretch {
    int32_t device;
    int64_t stream;
    int n_kernels;
    uint64_t start_ns, end_ns;  /* first kernel start .. last kernel end */
    int64_t kernel_ns;          /* summed kernel durations */
    int64_t launch_ns;          /* summed launch-call durations */
    const char *first_name;     /* normalised name of the first kernel */
} fa_ta_stretch;

/* An idle gap between consecutive kernels of a stream. */
typedef struct fa_ta_gap {
    int32_t device;
    int64_t stream;
    uint64_t start_ns;          /* end of the kernel before */
    int64_t gap_ns;             /* > 0 */
    const char *cpu_op;         /* innermost cpu op (or host NVTX range) containing the gap's
                                   midpoint, on the next kernel's launch thread, else on any thread
                                   of its process; NULL if none, or the kernel is an orphan or
                                   clock-inverted */
    const char *next_kernel;    /* normalised name */
} fa_ta_gap;

typedef struct fa_ta_stream {
    int32_t device;
    int64_t stream;
    int64_t n_kernels;
    int64_t kernel_ns;          /* summed durations */
    int64_t idle_ns;            /* summed positive gaps between consecutive kernels */
    int64_t n_gaps;             /* positive gaps */
    int64_t n_overlaps;         /* next kernel started before the previous ended (excluded) */
} fa_ta_stream;

enum { FA_TA_MIN_STRETCH = 3, FA_TA_MAX_NGRAM = 6, FA_TA_TOP_GAPS = 10, FA_TA_MAX_SEQS = 50 };

typedef struct fa_trace_advice {
    fa_arena *arena;
    int64_t run_id;             /* 0 when built from an in-memory trace */
    const char *device_name;
    int cc_major, cc_minor;     /* 0 when unknown */
    const char *cc_source;      /* "deviceProperties", "assumed from the device name", NULL */
    uint64_t total_mem_bytes;   /* device memory, 0 unknown */
    double hbm_gbs;             /* 0 when unknown */
    const char *hbm_label;      /* table row, NULL when unknown */
    bool no_gpu_activity;
    int64_t n_kernels;          /* GPU kernel records (device >= 0) */
    int64_t kernel_ns;          /* their summed durations */
    int64_t n_launch_calls;     /* runtime/driver calls linked to a kernel */
    int64_t launch_call_median_ns; /* median duration of those calls, -1 none */
    int64_t gap_median_ns;      /* median positive gap between consecutive kernels on a stream, -1 none */
    int64_t launch_overhead_ns; /* launch_call_median_ns + gap_median_ns (missing parts count 0) */
    int64_t idle_ns;            /* summed over streams */
    int64_t n_overlaps;
    uint64_t n_orphans, n_clock_inversions, n_parse_errors;
    int64_t n_estimated_bytes;  /* kernels with bytes from Input Dims */
    int n_kernel_names;
    fa_ta_kernel *kernels;      /* by total_ns, largest first */
    int n_seqs;
    fa_ta_seq *seqs;            /* by saving_ns, largest first (at most FA_TA_MAX_SEQS) */
    int n_stretches;
    fa_ta_stretch *stretches;   /* by kernel count, largest first */
    int64_t launch_bound_kernels, launch_bound_ns; /* over all stretches */
    int n_gaps;
    fa_ta_gap *gaps;            /* the FA_TA_TOP_GAPS largest, largest first */
    int n_streams;
    fa_ta_stream *streams;
    double saving_ns;           /* sum over seqs */
} fa_trace_advice;

/* Device facts the advice uses; from fa_import_stats.devices or the run's stored summary. */
typedef struct fa_ta_device {
    const char *name;           /* may be NULL */
    int cc_major, cc_minor;     /* 0 unknown */
    uint64_t total_mem_bytes;   /* 0 unknown */
} fa_ta_device;

/* Advice from an in-memory trace. dev may be NULL (name from t->device_name, cc guessed).
 * Times in the trace's ns. *out owned by the caller (fa_trace_advice_free). FA_ERR_NOMEM. */
fa_status fa_trace_advise(fa_ctx *ctx, const fa_trace *t, const fa_ta_device *dev, fa_trace_advice **out);
/* Advice from stored run `run_id` (fa_store_load_trace): dev NULL reads the trace.device.*
 * rows an earlier fa_trace_advice_save wrote, else the run's device_name. */
fa_status fa_trace_advise_run(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_ta_device *dev,
                              fa_trace_advice **out);
/* Replace the run's analysis_summary rows with key trace.* and its analysis_chains rows
 * with the sequences (members_json = JSON array of kernel names; time_ns = total over the
 * trace; share = of GPU kernel time; launches = count x n; max_saving_ns = saving_ns).
 * One transaction (or the caller's). */
fa_status fa_trace_advice_save(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_trace_advice *a);
/* Human-readable text (what `import` prints) / one JSON object. Append to out. */
void fa_trace_advice_text(const fa_trace_advice *a, fa_buf *out);
void fa_trace_advice_json(const fa_trace_advice *a, fa_buf *out);
void fa_trace_advice_free(fa_trace_advice *a);

#endif
