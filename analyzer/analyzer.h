/* analyzer — turns a stored run into the measured facts a fusion decision needs: roofline
 * placement per kernel, memory-bound producer→consumer chains, intermediate traffic per edge,
 * launch/dispatch overhead, and an upper bound of what fusion could save per chain. */
#ifndef FA_ANALYZER_H
#define FA_ANALYZER_H

#include "graph/graph.h"
#include "roofline/roofline.h"
#include "store/store.h"

/* One live graph node of the run with its measured time and placement. */
typedef struct fa_an_node {
    int id;                   /* graph node id */
    const char *name;
    const char *op_type;
    int pattern;              /* fa_pattern, -1 when unknown (op not in the registry) */
    uint64_t flops;           /* per execution, from the op registry's formula */
    uint64_t bytes;           /* bytes_read + bytes_written per execution */
    int64_t median_ns;        /* median over timed iterations of this node's kernel time */
    int64_t kernels;          /* kernel records over all timed iterations */
    fa_placement place;       /* from median_ns and the ceilings */
} fa_an_node;

/* One producer→consumer edge through an intermediate tensor. */
typedef struct fa_an_edge {
    int tensor;               /* tensor id */
    const char *tensor_name;
    int producer, consumer;   /* node ids */
    uint64_t tensor_bytes;    /* size of the tensor */
    uint64_t traffic_bytes;   /* bytes written by the producer + read back by this consumer
                                 = 2 x tensor_bytes (the unfused round trip) */
    int n_consumers;          /* live consumers of the tensor */
    bool graph_output;        /* the tensor is also a graph output (must be written anyway) */
} fa_an_edge;

/* A maximal producer→consumer path of memory- or latency-bound kernels, optionally headed by
 * one out-elementwise-fusable op (Conv/MatMul/Gemm) whose epilogue would absorb the rest. */
typedef struct fa_an_chain {
    int n_members;
    int *members;             /* node ids in producer→consumer order */
    int64_t time_ns;          /* sum of the members' median times */
    double share;             /* time_ns / median iteration time */
    uint64_t intermediate_bytes; /* traffic that fusing the chain removes (see max_saving_ns) */
    int launches;             /* kernels in the chain (n_members) */
    double max_saving_ns;     /* intermediate_bytes / bandwidth + (n_members-1) x dispatch, at
                                 most time_ns less the members' FLOPs at the peak (what a fused
                                 kernel still computes) */
} fa_an_chain;

typedef struct fa_analysis {
    fa_arena *arena;
    int64_t run_id;
    fa_ceilings ceilings;
    int64_t iter_ns;          /* median iteration time (first kernel start .. last kernel end) */
    int n_iters;
    int n_nodes;
    fa_an_node *nodes;        /* live nodes in topological (store) order */
    int n_edges;
    fa_an_edge *edges;
    int n_chains;
    fa_an_chain *chains;      /* ranked by max_saving_ns, largest first */
    int64_t gap_ns;           /* median per iteration of the idle gaps between consecutive kernels */
    int64_t kernels_per_iter;
    double launch_share;      /* gap_ns / iter_ns */
    double mem_bound_elementwise_share; /* share of iteration in memory/latency-bound kernels of
                                           elementwise, broadcast or injective ops */
    uint64_t intermediate_bytes; /* sum of traffic_bytes over edges whose tensor is not a graph
                                    output: what round-trips memory per iteration */
    double fusion_bound_ns;   /* sum of the chains' max_saving_ns */
    char summary[1024];       /* the findings in sentences a person can act on */
    int *node_index;          /* private: node id -> index in nodes (-1), for O(1) lookups */
    int max_node_id;
} fa_analysis;

/* Analyze run `run_id` of the database with the given ceilings. Needs the run's graph (nodes,
 * tensors, consumers) and kernel records; FA_ERR_INPUT naming the run when it has none.
 * *out owned by the caller (fa_analysis_free). */
fa_status fa_analyze_run(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_ceilings *ceil, fa_analysis **out);
/* Persist the analysis into analysis_kernels/_chains/_edges/_summary (replacing earlier rows
 * of the run) in one transaction (or the caller's). */
fa_status fa_analysis_save(fa_ctx *ctx, fa_store *st, const fa_analysis *a);
void fa_analysis_free(fa_analysis *a);
/* Index of node id in a->nodes, -1 if absent. */
int fa_analysis_node_index(const fa_analysis *a, int node_id);

#endif
