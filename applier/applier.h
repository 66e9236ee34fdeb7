/* applier — closes the loop: turns proposed clusters into fused kernels (oneDNN post-ops for
 * conv/gemm epilogues, rewritten weights for BN folding, generated C compiled by the system
 * compiler for elementwise chains, reductions and horizontal fusion), verifies each against the
 * unfused ops on the same inputs, benchmarks it, accepts only measured wins, and measures the
 * whole fused model against the unfused baseline. */
#ifndef FA_APPLIER_H
#define FA_APPLIER_H

#include "advisor/advisor.h"
#include "advisor/codegen.h"
#include "runtime/runtime.h"

/* Largest accepted verification tolerance: a relative error of 10% already lets a fused kernel
 * that drops a term of the expression pass; beyond it verification would no longer verify.
 * fa_apply / fa_apply_cuda refuse a tolerance that is not finite or outside (0, this]. */
#define FA_APPLY_TOLERANCE_MAX 0.1

/* The apply stage's bounds (docs/codegen.md "Bounded apply"): at most this many clusters are
 * tried, highest predicted saving (est_saving_ns) first, and no new cluster is started once the
 * stage has run this long; the others keep status FA_CLUSTER_NOT_TRIED with the reason. 256
 * clusters: ResNet-50's whole plan fits, a 100,000-node elementwise chain's 6,250 do not;
 * 600 s: about what 256 generated clusters take to compile, verify and benchmark here. */
#define FA_APPLY_MAX_CLUSTERS_DEFAULT 256
#define FA_APPLY_BUDGET_S_DEFAULT 600.0

typedef struct fa_apply_options {
    double tolerance;       /* max |fused-unfused| / max(max|unfused|, 1e-12); default 1e-5 (fp32);
                               finite, in (0, FA_APPLY_TOLERANCE_MAX] */
    int iters;              /* timed iterations per benchmark, default 20 */
    int warmup;             /* default 3 */
    int threads;            /* executor threads, 0 = all cores */
    uint64_t seed;          /* inputs (uniform [-1,1)), default 1 */
    const char *out_dir;    /* where kernels/ are written (NULL: not written) */
    const char *cache_dir;  /* compiled shared objects by source hash; NULL: $XDG_CACHE_HOME or
                               ~/.cache/fuse-advise, falling back to the private temp folder
                               (fa_kernel_cache_open) */
    uint64_t cache_max_bytes; /* 0: FA_KERNEL_CACHE_MAX_BYTES_DEFAULT */
    int max_clusters;       /* clusters tried, highest predicted saving first; 0: FA_APPLY_MAX_CLUSTERS_DEFAULT */
    double budget_s;        /* apply-stage time budget (s); 0: FA_APPLY_BUDGET_S_DEFAULT */
    int inject_wrong_cluster; /* test hook: >= 0 makes that cluster's fused kernel add 1.0 to
                                 its first output (must be rejected by verification); -1 off */
    fa_progress_fn progress;
    void *progress_user;
} fa_apply_options;
void fa_apply_options_default(fa_apply_options *o);

/* ---- compiled kernels and their cache (applier/compile.c, docs/codegen.md "Kernel cache") ---- */

/* Shared objects the cache keeps before evicting the least recently used (256 MiB: about 4,000
 * batches of typical generated kernels, 20-200 KiB each as built here). */
#define FA_KERNEL_CACHE_MAX_BYTES_DEFAULT (256ull << 20)

/* The folder compiled kernels are cached in. dir NULL: $XDG_CACHE_HOME/fuse-advise/kernels, else
 * ~/.cache/fuse-advise/kernels, else a folder made for this process under $TMPDIR (removed by
 * fa_kernel_cache_free). Missing folders are created 0700. Refused (FA_ERR_IO naming the folder
 * and what to do) when the folder is not owned by the effective user or is writable by its
 * group or others: whoever can write there could make us load their code. Work folders of dead
 * processes are removed. max_bytes 0: FA_KERNEL_CACHE_MAX_BYTES_DEFAULT. */
typedef struct fa_kernel_cache fa_kernel_cache;
fa_status fa_kernel_cache_open(fa_ctx *ctx, const char *dir, uint64_t max_bytes, fa_kernel_cache **out);
const char *fa_kernel_cache_dir(const fa_kernel_cache *kc);
void fa_kernel_cache_free(fa_kernel_cache *kc);

typedef void (*fa_fused_fn)(const void *const *in, void *const *out, int threads);
/* One generated C kernel: a whole translation unit defining fn_name (fa_codegen_c's output). */
typedef struct fa_kernel_source {
    const char *src;
    size_t len;
    const char *fn_name;
} fa_kernel_source;
/* A loaded kernel: holds one reference to its shared object (fa_compiled_free drops it). */
typedef struct fa_compiled {
    void *handle;
    fa_fused_fn fn;
    char hash[65];  /* the cache entry (SHA-256 of flags + every source of its batch) */
    bool cached;    /* loaded from the cache, not compiled now */
} fa_compiled;
void fa_compiled_free(fa_compiled *c);

/* Compile n kernels into one shared object with one compiler process ($CC or cc, started with an
 * argument vector, -O3 -march=native -fopenmp -shared), each source marked "#line 1
 * \"kernel-K.c\"" so diagnostics name their kernel; kernels that fail are dropped and the rest go
 * again together (one kernel per process only where the diagnostics name none). The compile
 * folder lives inside the cache folder (same filesystem as the entries: $TMPDIR is never used)
 * and is removed. Entries are KEY.so plus KEY.so.sha256, the SHA-256 of the binary written when
 * it was built; before dlopen an entry must be a regular file owned by us, writable by nobody
 * else, non-empty and match that hash, else it is removed and rebuilt (zero-byte, corrupt,
 * tampered or planted entries never load). A use refreshes its mtime; after adding one, least
 * recently used entries are removed until the shared objects fit the cache's max_bytes.
 * Per kernel: out[i] (owned by the caller) or errs[i] (malloc'd, the compiler's diagnostics
 * about that kernel only, fa_compiler_diagnostics, never the content of an included file).
 * Returns FA_OK unless the cache itself failed (folder, compiler not startable). */
fa_status fa_compile_kernels(fa_ctx *ctx, fa_kernel_cache *kc, int n, const fa_kernel_source *srcs, fa_compiled **out,
                             char **errs);

/* Robust summary of per-iteration samples (ns). */
typedef struct fa_sample_stats {
    int n;
    double median_ns;
    double p25_ns, p75_ns;  /* spread = p75 - p25 */
    double min_ns;
} fa_sample_stats;
void fa_sample_stats_of(const double *samples, int n, fa_sample_stats *out);

typedef struct fa_apply_result {
    fa_sample_stats baseline, fused;   /* end-to-end per iteration */
    double *baseline_samples, *fused_samples; /* iters each (owned) */
    int n_samples;
    double speedup;                    /* baseline median / fused median */
    uint64_t peak_bytes_baseline, peak_bytes_fused;
    int kernels_baseline, kernels_fused; /* per iteration */
    double e2e_max_rel_error;          /* model outputs, fused vs unfused */
    int accepted, rejected;
    double predicted_saving_ns;        /* sum of accepted clusters' est_saving_ns */
    double measured_saving_ns;         /* baseline median - fused median */
    /* end to end (applier/judge.c fa_apply_e2e_wins): true when the fused model with the kept
     * clusters is measurably faster; e2e_loss when clusters were kept but the model is not
     * (after backed_off clusters were dropped by the back-off): the plan is a loss */
    bool e2e_wins, e2e_loss;
    int backed_off;
    /* per-cluster benchmark samples (ns per run of the cluster's sub-graph), owned */
    int n_cluster_samples;             /* samples per cluster (= iters) */
    int n_cluster_bench;
    int *cluster_ids;                  /* [n_cluster_bench] */
    double *cluster_unfused;           /* [n_cluster_bench * n_cluster_samples] */
    double *cluster_fused;
    /* the fused model and its kernel trace (one record per kernel per timed iteration), owned;
     * stored as a run of kind 'fused' tagged "fused-of:<baseline run id>" */
    fa_graph *fused_graph;
    fa_trace *fused_trace;
} fa_apply_result;
void fa_apply_result_free(fa_apply_result *r);

/* Apply plan p (clusters with status PROPOSED) to prepared graph g on the cpu target. Updates
 * every cluster's status, reason, measured_saving_ns and max_rel_error; a cluster that fails
 * codegen, compile, verification or shows no gain is rejected and the run goes on without it.
 * *out owned by caller. */
fa_status fa_apply(fa_ctx *ctx, const fa_graph *g, fa_plan *p, const fa_apply_options *opt, fa_apply_result **out);

/* A copy of g with the given clusters applied (ids; NULL/0 = every ACCEPTED cluster, or every
 * PROPOSED one when `proposed`): BN folds rewrite weights, epilogues become Fused* nodes,
 * generated-kernel clusters become ai.fuse-advise.FusedKernel nodes. The result is prepared
 * and indexed; it owns copies of all constants. */
fa_status fa_fused_graph(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const int *cluster_ids, int n_ids,
                         fa_graph **out);
/* g with only its BN_FOLD clusters applied, as standard ONNX ops (exportable, what
 * model.folded.onnx holds). */
fa_status fa_bn_folded_graph(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, fa_graph **out);

#endif

/* ---- outputs (applier/outputs.c) ---- */

/* What a run measured, for summary.json and the reports. */
typedef struct fa_run_summary {
    const char *model;
    const char *device;
    int threads;
    double mem_bw_gbs, peak_gflops, dispatch_ns; /* ceilings used */
    const fa_apply_result *result;
    const fa_plan *plan;
    const fa_graph *graph;
    int64_t run_id;
} fa_run_summary;

/* plan.json: every cluster (members by node name, kind, label, cost model, gate, status, reason,
 * measured saving, error) and the why-not list. Written atomically (temp name + rename). */
fa_status fa_write_plan_json(fa_ctx *ctx, const fa_graph *g, const fa_plan *p, const char *path);
/* summary.json: stable keys, documented in docs/outputs.md. Written atomically. */
fa_status fa_write_summary_json(fa_ctx *ctx, const fa_run_summary *s, const char *path);
/* Per-iteration baseline/fused samples and the plan's cluster results into the run database
 * (benchmarks table; clusters via fa_plan_update). */
fa_status fa_store_apply_result(fa_ctx *ctx, fa_store *st, const fa_plan *p, const fa_apply_result *r);

/* ---- the cuda target (applier/apply_cuda.c, docs/cuda.md "Fused kernels on cuda") ---- */

/* How an EPILOGUE cluster runs on cuda. Stored nowhere; grows at its end. */
typedef enum fa_cuda_epilogue {
    FA_CUDA_EPI_NONE = 0,              /* refused: no cuda library epilogue fits */
    FA_CUDA_EPI_CUBLASLT_BIAS = 1,     /* MatMul/Gemm + bias: CUBLASLT_EPILOGUE_BIAS */
    FA_CUDA_EPI_CUBLASLT_RELU_BIAS = 2,/* + Relu: CUBLASLT_EPILOGUE_RELU_BIAS */
    FA_CUDA_EPI_CUBLASLT_GELU_BIAS = 3,/* + tanh-GELU: CUBLASLT_EPILOGUE_GELU_BIAS */
    FA_CUDA_EPI_CUDNN_CONV_BIAS_RELU = 4, /* Conv + bias + Relu: cudnnConvolutionBiasActivationForward */
    FA_CUDA_EPI_COUNT
} fa_cuda_epilogue;
const char *fa_cuda_epilogue_name(fa_cuda_epilogue e); /* "cublaslt:bias", ..., "none" */

/* Where an epilogue cluster's bias comes from (anchor's own Gemm C / Conv B). */
typedef enum fa_cuda_bias_kind {
    FA_CUDA_BIAS_ABSENT = 0,
    FA_CUDA_BIAS_VECTOR = 1,  /* one value per output column (MatMul/Gemm) or channel (Conv) */
    FA_CUDA_BIAS_OTHER = 2    /* present but not such a vector (a full Gemm C matrix) */
} fa_cuda_bias_kind;

/* The facts the mapping needs, taken from a cluster (fa_cuda_epilogue_query_of) or written by
 * hand in tests. post_ops use the advisor's syntax ("eltwise:relu", "binary:add", ...). */
typedef struct fa_cuda_epilogue_query {
    const char *anchor_op;               /* "MatMul", "Gemm", "Conv", ... */
    fa_cuda_bias_kind anchor_bias;
    int n_post_ops;
    const char *const *post_ops;
    const bool *operand_is_bias_vector;  /* per post-op: the binary operand is a per-column /
                                            per-channel vector (NULL: none is) */
} fa_cuda_epilogue_query;

/* Pure mapping of an epilogue onto a cuda library epilogue. cuBLASLt (cublasLt.h,
 * cublasLtEpilogue_t): BIAS, RELU_BIAS, GELU_BIAS — its GELU is the tanh approximation, so
 * "eltwise:gelu_erf" is refused (differs by up to ~1e-3, beyond the 1e-5 tolerance). cuDNN
 * (cudnnConvolutionBiasActivationForward, cuDNN API reference): y = act(conv(x) + bias) with
 * act = RELU (IDENTITY is restricted to one algorithm, so Conv + bias alone is refused). The bias
 * is the anchor's own vector, or else a first "binary:add" whose operand is such a vector. Any
 * other post-op (a residual add, clip, sigmoid, ...) or a second activation: FA_CUDA_EPI_NONE
 * with `why` = "no cuda epilogue for <post-op>[ (detail)]". why may be NULL. */
fa_cuda_epilogue fa_cuda_epilogue_map(const fa_cuda_epilogue_query *q, char *why, size_t why_cap);
/* The query for EPILOGUE cluster c of graph g: anchor op, bias kind of the anchor's own bias, and
 * for each binary post-op whether its operand (c->post_op_inputs) has one element per output
 * column / channel broadcast along every other dim. Arrays point into `scratch` (n_post_ops
 * entries). */
void fa_cuda_epilogue_query_of(const fa_graph *g, const fa_cluster *c, bool *scratch, fa_cuda_epilogue_query *q);

/* fa_apply on the cuda target (device 0): the same decisions as the cpu applier — each cluster
 * verified against its unfused sub-graph on the same inputs, both on the GPU; interleaved
 * benchmark; accepted only beyond the paired noise; then the whole fused model against the
 * unfused one. Generated clusters: fa_codegen_cuda, NVRTC for `arch` (NULL: the device's sm_XY),
 * run by runtime/cuda/fused.c. BN folds: rewritten weights, run by the cuda executor. Epilogues:
 * fa_cuda_epilogue_map; a refused one is rejected with its reason, a mapped one is rejected with
 * "cuda epilogue X is not executed yet" (the cuda executor has no Fused* nodes). Errors:
 * FA_ERR_UNSUPPORTED "no CUDA driver (...)" before anything is done when libcuda.so.1 cannot be
 * loaded (or the build has no CUDA toolkit) or "no CUDA device"; the end-to-end step needs a cuda
 * executor that accepts providers (docs/cuda.md) and fails with its message otherwise.
 * result->fused_trace is NULL on cuda (no cuda collector yet). *out owned by caller. */
fa_status fa_apply_cuda(fa_ctx *ctx, const fa_graph *g, fa_plan *p, const fa_apply_options *opt, const char *arch,
                        fa_apply_result **out);
