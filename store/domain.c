/* domain — the values each numeric column of the run database may hold.
 *
 * A run database is input from elsewhere (docs/hardening.md): a type check lets through a real
 * column holding 9e999 (+inf in SQLite, 'Infinity' in PostgreSQL), -1 bytes or a NaN, and the
 * readers then show "inf µs" or a negative traffic as a measurement. Each column whose value the
 * readers use as a quantity has a domain here, checked by both back ends on every row they return
 * (store/sqlite.c sq_row_check, store/pg.c pg_row_check), so a doctored value is refused naming
 * the table, row and column instead of shown. A column not listed (ids, node indices with -1 for
 * none, bit flags, wall-clock timestamps, spans checked by fa_store_check_kernel_times, the run's
 * threads/iters/warmup checked against the CLI's ranges by read_run_row) is not checked here. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "store-impl.h"

#include "../collector/collector.h"
#include "../graph/graph.h"

typedef struct col_domain {
    const char *table, *column;
    char dom;
} col_domain;

/* The writers' own ranges (plan/plan.h FA_CLUSTER_FIELDS, store/schema.c): counts, sizes and
 * times are never negative; a saving and its interval ends may be (a slower fused kernel); a
 * relative error is +inf when the reference is 0 and the result is not (fa_max_rel_error); an
 * occupancy is 0..1 or negative for "not computed". */
static const col_domain domains[] = {
    {"runs", "peak_activation_bytes", FA_DOM_QUANTITY},
    {"runs", "trace_n_iters", FA_DOM_QUANTITY},
    {"runs", "n_orphans", FA_DOM_QUANTITY},
    {"runs", "n_clock_inversions", FA_DOM_QUANTITY},
    {"runs", "n_parse_errors", FA_DOM_QUANTITY},
    {"runs", "n_kernels", FA_DOM_QUANTITY},
    {"runs", "iter_median_ns", FA_DOM_QUANTITY},
    {"nodes", "n_inputs", FA_DOM_QUANTITY},
    {"nodes", "n_outputs", FA_DOM_QUANTITY},
    {"nodes", "flops", FA_DOM_QUANTITY},
    {"nodes", "bytes_read", FA_DOM_QUANTITY},
    {"nodes", "bytes_written", FA_DOM_QUANTITY},
    {"tensors", "bytes", FA_DOM_QUANTITY},
    {"kernels", "grid_x", FA_DOM_QUANTITY},
    {"kernels", "grid_y", FA_DOM_QUANTITY},
    {"kernels", "grid_z", FA_DOM_QUANTITY},
    {"kernels", "block_x", FA_DOM_QUANTITY},
    {"kernels", "block_y", FA_DOM_QUANTITY},
    {"kernels", "block_z", FA_DOM_QUANTITY},
    {"kernels", "registers", FA_DOM_QUANTITY},
    {"kernels", "static_smem", FA_DOM_QUANTITY},
    {"kernels", "dynamic_smem", FA_DOM_QUANTITY},
    {"kernels", "local_mem", FA_DOM_QUANTITY},
    {"kernels", "bytes_read", FA_DOM_QUANTITY},
    {"kernels", "bytes_written", FA_DOM_QUANTITY},
    {"kernels", "flops", FA_DOM_QUANTITY},
    {"kernels", "occupancy", FA_DOM_OCCUPANCY},
    {"device_ceilings", "value", FA_DOM_QUANTITY},
    {"analysis_kernels", "arithmetic_intensity", FA_DOM_QUANTITY},
    {"analysis_kernels", "achieved_gbs", FA_DOM_QUANTITY},
    {"analysis_kernels", "achieved_gflops", FA_DOM_QUANTITY},
    {"analysis_kernels", "roof_pct", FA_DOM_QUANTITY},
    {"analysis_chains", "time_ns", FA_DOM_QUANTITY},
    {"analysis_chains", "share", FA_DOM_QUANTITY},
    {"analysis_chains", "intermediate_bytes", FA_DOM_QUANTITY},
    {"analysis_chains", "launches", FA_DOM_QUANTITY},
    {"analysis_chains", "max_saving_ns", FA_DOM_FINITE},
    {"analysis_edges", "bytes_written", FA_DOM_QUANTITY},
    {"analysis_edges", "bytes_read", FA_DOM_QUANTITY},
    {"analysis_edges", "other_consumers", FA_DOM_QUANTITY},
    {"analysis_summary", "value", FA_DOM_FINITE},
    {"plans", "max_ops", FA_DOM_QUANTITY},
    {"plans", "max_inputs", FA_DOM_QUANTITY},
    {"plans", "occupancy_floor", FA_DOM_FRACTION},
    {"plans", "e2e_max_rel_error", FA_DOM_ERROR},
    {"plans", "layout_rounds", FA_DOM_QUANTITY},
    {"plans", "layout_default_median_ns", FA_DOM_QUANTITY},
    {"plans", "layout_rival_median_ns", FA_DOM_QUANTITY},
    {"plans", "layout_gain_ns", FA_DOM_FINITE},
    {"plans", "layout_gain_lo_ns", FA_DOM_FINITE},
    {"plans", "layout_gain_hi_ns", FA_DOM_FINITE},
    {"clusters", "saved_bytes", FA_DOM_QUANTITY},
    {"clusters", "score_bytes", FA_DOM_QUANTITY},
    {"clusters", "saved_launches", FA_DOM_QUANTITY},
    {"clusters", "recompute_us", FA_DOM_QUANTITY},
    {"clusters", "est_saving_us", FA_DOM_FINITE},
    {"clusters", "est_saving_pct", FA_DOM_FINITE},
    {"clusters", "pred_members_us", FA_DOM_QUANTITY},
    {"clusters", "pred_dispatch_us", FA_DOM_QUANTITY},
    {"clusters", "pred_fused_us", FA_DOM_QUANTITY},
    {"clusters", "pred_ratio", FA_DOM_QUANTITY},
    {"clusters", "est_spread_pct", FA_DOM_QUANTITY},
    {"clusters", "est_spread_n", FA_DOM_QUANTITY},
    {"clusters", "est_lo_us", FA_DOM_FINITE},
    {"clusters", "est_hi_us", FA_DOM_FINITE},
    {"clusters", "registers", FA_DOM_QUANTITY},
    {"clusters", "spill_bytes", FA_DOM_QUANTITY},
    {"clusters", "occupancy", FA_DOM_OCCUPANCY},
    {"clusters", "measured_saving_us", FA_DOM_FINITE},
    {"clusters", "meas_unfused_us", FA_DOM_QUANTITY},
    {"clusters", "meas_fused_us", FA_DOM_QUANTITY},
    {"clusters", "inmodel_saving_us", FA_DOM_FINITE},
    {"clusters", "inmodel_spread_us", FA_DOM_QUANTITY},
    {"clusters", "max_rel_error", FA_DOM_ERROR},
    {"clusters", "epsilon", FA_DOM_QUANTITY},
    {"clusters", "block_size", FA_DOM_QUANTITY},
    {"clusters", "epilogue_generated", FA_DOM_FLAG},
    {"clusters", "reduce_axis", FA_DOM_AXIS},
    {"kernels", "kind", FA_DOM_ACT_KIND},
    {"tensors", "dtype", FA_DOM_DTYPE},
    {"tensors", "rank", FA_DOM_RANK},
    {"consumers", "input_index", FA_DOM_QUANTITY},
    {"nodes", "pattern", FA_DOM_PATTERN},
    {"nodes", "folded", FA_DOM_FLAG},
    {"tensors", "is_const", FA_DOM_FLAG},
    {"tensors", "is_initializer", FA_DOM_FLAG},
    {"tensors", "is_graph_input", FA_DOM_FLAG},
    {"tensors", "is_graph_output", FA_DOM_FLAG},
    {"analysis_edges", "is_graph_output", FA_DOM_FLAG},
    {"plans", "gate", FA_DOM_FLAG},
    {"plans", "layout_verdict", FA_DOM_SIGN},
    {"plans", "plan_id", FA_DOM_ID32},
    {"clusters", "plan_id", FA_DOM_ID32},
    {"clusters", "cluster_id", FA_DOM_ID32},
    {"why_not", "plan_id", FA_DOM_ID32},
    {"fused_kernels", "plan_id", FA_DOM_ID32},
    {"cluster_post_ops", "plan_id", FA_DOM_ID32},
    {"benchmarks", "plan_id", FA_DOM_ID32},
    {"fused_kernels", "registers", FA_DOM_QUANTITY},
    {"fused_kernels", "spill_bytes", FA_DOM_QUANTITY},
    {"fused_kernels", "static_smem", FA_DOM_QUANTITY},
    {"fused_kernels", "local_mem", FA_DOM_QUANTITY},
    {"fused_kernels", "compile_ns", FA_DOM_QUANTITY},
};

char fa_store_column_domain(const char *table, const char *column)
{
    if (!table || !column) return FA_DOM_NONE;
    for (size_t i = 0; i < sizeof domains / sizeof *domains; i++)
        if (!strcmp(domains[i].table, table) && !strcmp(domains[i].column, column)) return domains[i].dom;
    return FA_DOM_NONE;
}

static const char *domain_words(char dom)
{
    switch (dom) {
    case FA_DOM_QUANTITY: return "a count, size, time or rate (0 or more, finite)";
    case FA_DOM_FINITE: return "a finite number";
    case FA_DOM_ERROR: return "a relative error (0 or more, or +inf)";
    case FA_DOM_OCCUPANCY: return "an occupancy (0 to 1, negative when not computed)";
    case FA_DOM_FRACTION: return "a fraction (0 to 1)";
    case FA_DOM_FLAG: return "a flag (0 or 1)";
    case FA_DOM_AXIS: return "an axis (0 to 7, or -1 for none)";
    case FA_DOM_RANK: return "a rank (0 to 8)";
    case FA_DOM_ACT_KIND: return "a record kind this build knows (collector/collector.h fa_activity_kind)";
    case FA_DOM_DTYPE: return "an ONNX element type this build knows (graph/graph.h fa_dtype)";
    case FA_DOM_PATTERN: return "a pattern class this build knows (graph/graph.h fa_pattern)";
    case FA_DOM_SIGN: return "a verdict (-1, 0 or 1)";
    case FA_DOM_ID32: return "an id (0 to 2^31 - 1)";
    default: return "?";
    }
}

const char *fa_store_domain_fault(char dom, bool is_int, int64_t i, double d, char *buf, size_t cap)
{
    bool ok = true;
    if (is_int) {
        switch (dom) {
        case FA_DOM_QUANTITY: ok = i >= 0 && i <= FA_STORE_QUANTITY_MAX; break;
        case FA_DOM_FINITE: ok = i >= -FA_STORE_QUANTITY_MAX && i <= FA_STORE_QUANTITY_MAX; break;
        case FA_DOM_ERROR: ok = i >= 0; break;
        case FA_DOM_OCCUPANCY: ok = i <= 1; break;
        case FA_DOM_FRACTION: case FA_DOM_FLAG: ok = i == 0 || i == 1; break;
        case FA_DOM_AXIS: ok = i >= -1 && i < FA_MAX_RANK; break;
        case FA_DOM_RANK: ok = i >= 0 && i <= FA_MAX_RANK; break;
        case FA_DOM_ACT_KIND: ok = i >= 0 && i < FA_ACT_KIND_COUNT; break;
        case FA_DOM_DTYPE: ok = i >= 0 && i < FA_DTYPE_COUNT; break;
        case FA_DOM_PATTERN: ok = i >= 0 && i < FA_PATTERN_COUNT; break;
        case FA_DOM_SIGN: ok = i >= -1 && i <= 1; break;
        case FA_DOM_ID32: ok = i >= 0 && i <= INT32_MAX; break;
        default: break;
        }
        if (ok) return NULL;
        snprintf(buf, cap, "%lld where the column holds %s", (long long)i, domain_words(dom));
        return buf;
    }
    switch (dom) {
    case FA_DOM_QUANTITY: ok = isfinite(d) && d >= 0; break;
    case FA_DOM_FINITE: ok = isfinite(d); break;
    case FA_DOM_ERROR: ok = !isnan(d) && d >= 0; break;
    case FA_DOM_OCCUPANCY: ok = isfinite(d) && d <= 1; break;
    case FA_DOM_FRACTION: ok = isfinite(d) && d >= 0 && d <= 1; break;
    case FA_DOM_FLAG: ok = d == 0 || d == 1; break;
    case FA_DOM_AXIS: case FA_DOM_RANK: case FA_DOM_ACT_KIND: case FA_DOM_DTYPE: case FA_DOM_PATTERN: case FA_DOM_SIGN:
    case FA_DOM_ID32: ok = false; break; /* integers */
    default: break;
    }
    if (ok) return NULL;
    snprintf(buf, cap, "%s where the column holds %s",
             isnan(d) ? "NaN" : isinf(d) ? (d > 0 ? "+inf" : "-inf") : "", domain_words(dom));
    if (isfinite(d)) snprintf(buf, cap, "%.17g where the column holds %s", d, domain_words(dom));
    return buf;
}
