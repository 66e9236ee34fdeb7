/* runtime — the unfused executor: runs a prepared graph op by op, one kernel per live node,
 * on a target (cpu always; cuda when built with the toolkit and a device is present). */
#ifndef FA_RUNTIME_H
#define FA_RUNTIME_H

#include "core/core.h"
#include "graph/graph.h"

typedef enum fa_target {
    FA_TARGET_AUTO = 0,
    FA_TARGET_CPU = 1,
    FA_TARGET_CUDA = 2,
    FA_TARGET_COUNT
} fa_target;
const char *fa_target_name(fa_target t);
/* "auto" | "cpu" | "cuda"; FA_ERR_USAGE otherwise. */
fa_status fa_target_parse(fa_ctx *ctx, const char *s, fa_target *out);

/* Called around every kernel launch (the cpu collector's hook). node = graph node id. */
typedef struct fa_exec_observer {
    void *user;
    void (*kernel_begin)(void *user, const fa_node *n, const char *kernel_name);
    void (*kernel_end)(void *user, const fa_node *n, const char *kernel_name);
} fa_exec_observer;

/* A kernel supplied from outside the registry (the applier's fused kernels). */
typedef struct fa_custom_kernel {
    const char *name;      /* kernel name recorded by the collector; must outlive the executor */
    fa_status (*run)(void *state, fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                     fa_value *out, int n_out, int threads);
    void (*destroy)(void *state); /* may be NULL */
    void *state;
} fa_custom_kernel;

/* Asked once per live node at executor creation, before the built-in kernels: set *provided and
 * fill *out to take the node. Errors abort executor creation. */
typedef fa_status (*fa_kernel_provider)(void *user, fa_ctx *ctx, const fa_graph *g, const fa_node *n,
                                        fa_custom_kernel *out, bool *provided);

typedef struct fa_exec_options {
    fa_target target;
    int threads;           /* 0 = all cores */
    uint64_t max_memory;   /* activation bytes cap (--max-memory), 0 = none */
    fa_kernel_provider provider; /* optional */
    void *provider_user;
} fa_exec_options;

typedef struct fa_exec fa_exec;

/* Create an executor for a prepared graph (fa_graph_prepare done). The graph must outlive it.
 * Refuses ops without a kernel for the target ("unsupported op X at node Y on cpu"). */
fa_status fa_exec_create(fa_ctx *ctx, const fa_graph *g, const fa_exec_options *opt, fa_exec **out);
void fa_exec_free(fa_exec *e);
/* Set graph input i (index into g->inputs); data copied. Shape and dtype must match. */
fa_status fa_exec_set_input(fa_ctx *ctx, fa_exec *e, int i, const fa_value *v);
/* Fill every graph input with deterministic values from `seed` (uniform [-1,1) floats,
 * small non-negative ints). */
fa_status fa_exec_fill_inputs(fa_ctx *ctx, fa_exec *e, uint64_t seed);
/* Execute once. obs may be NULL. On cpu every activation lives at its offset in one arena
 * planned, allocated and touched by fa_exec_create (the static memory plan): a run allocates
 * nothing and page-faults nothing. */
fa_status fa_exec_run(fa_ctx *ctx, fa_exec *e, const fa_exec_observer *obs);
/* Graph output i after a run; borrowed until the next run / fa_exec_free. */
const fa_value *fa_exec_output(const fa_exec *e, int i);
/* Bytes of activations (graph inputs + intermediates + outputs) the executor holds at its peak:
 * on cpu the static plan's arena, known from fa_exec_create on (read from the plan, not measured);
 * on cuda the peak of live device buffers in the last run. */
uint64_t fa_exec_peak_bytes(const fa_exec *e);
/* Kernel name used for node n on this executor ("dnnl:conv", "ref:Relu", ...). */
const char *fa_exec_kernel_name(const fa_exec *e, const fa_node *n);
/* The implementation a library chose for node n's kernel on this executor (oneDNN's
 * dnnl_query_impl_info_str: "jit:avx512_core", "gemm:jit", "ref:any", ...); NULL for our own and
 * generated kernels and on cuda. Borrowed until fa_exec_free. */
const char *fa_exec_kernel_impl(const fa_exec *e, const fa_node *n);
fa_target fa_exec_target(const fa_exec *e);
int fa_exec_threads(const fa_exec *e);

#endif
