/* gate — the CI gate's entry points: options, verdict names, and fa_gate_run, which loads the
 * runs of both sides (gate/runs.c), refuses runs that cannot be compared, runs every check
 * (gate/checks.c; the statistic is gate/bootstrap.c) and totals the verdicts. The renderings are
 * gate/render.c (docs/ci.md). */
#include "gate/gate-impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_verdict_names[] = {"pass", "skipped", "inconclusive", "warn", "fail"};
_Static_assert(sizeof k_verdict_names / sizeof k_verdict_names[0] == FA_GATE_VERDICT_COUNT, "k_verdict_names: one row per value");

const char *fa_gate_verdict_name(fa_gate_verdict v)
{
    return (unsigned)v < FA_GATE_VERDICT_COUNT ? k_verdict_names[v] : "?";
}

void fa_gate_options_default(fa_gate_options *o)
{
    memset(o, 0, sizeof *o);
    o->max_regression = 0.03;
    o->confidence = 0.95;
    o->resamples = 2000;
    o->seed = 1;
    o->min_share = 0.01;
    o->register_warn = 0.10;
    o->min_samples = 5;
    o->strict = false;
}

void fa_gate_report_free(fa_gate_report *r)
{
    if (!r) return;
    free(r->checks);
    fa_arena_free(r->arena);
    free(r);
}

fa_status fa_gate_run(fa_ctx *ctx, fa_store *bst, int64_t base_id, fa_store *cst, int64_t cand_id,
                      const fa_gate_options *o, fa_gate_report **out)
{
    return fa_gate_run_multi(ctx, bst, &base_id, 1, cst, &cand_id, 1, o, out);
}

fa_status fa_gate_run_multi(fa_ctx *ctx, fa_store *bst, const int64_t *base_ids, int n_base, fa_store *cst,
                            const int64_t *cand_ids, int n_cand, const fa_gate_options *o, fa_gate_report **out)
{
    if (n_base < 1 || n_cand < 1) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "gate: no baseline or candidate run");
    fa_gate_report *r = calloc(1, sizeof *r);
    if (!r || !(r->arena = fa_arena_create(1 << 16))) {
        free(r);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    if (o) r->opt = *o;
    else fa_gate_options_default(&r->opt);
    side sb = {fa_arena_alloc(r->arena, sizeof(gate_run) * (size_t)n_base), n_base};
    side sc = {fa_arena_alloc(r->arena, sizeof(gate_run) * (size_t)n_cand), n_cand};
    r->baseline_runs = fa_arena_alloc(r->arena, sizeof(int64_t) * (size_t)n_base);
    r->candidate_runs = fa_arena_alloc(r->arena, sizeof(int64_t) * (size_t)n_cand);
    fa_status s = sb.r && sc.r && r->baseline_runs && r->candidate_runs ? FA_OK
                                                                         : fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n_base && !s; i++) s = fa_gate_load_run(ctx, bst, base_ids[i], r->arena, &sb.r[i]);
    for (int i = 0; i < n_cand && !s; i++) s = fa_gate_load_run(ctx, cst, cand_ids[i], r->arena, &sc.r[i]);
    const gate_run *b = &sb.r[0], *c = &sc.r[0];
    for (int k = 0; k < n_base + n_cand && !s; k++) {
        const gate_run *g = k < n_base ? &sb.r[k] : &sc.r[k - n_base];
        const char *role = k < n_base ? "baseline" : "candidate";
        if (g->info.status && strcmp(g->info.status, "ok"))
            s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %s run %" PRId64 " is %s'%s'%s%s: gate finished runs", g->path, role,
                             g->info.id, strcmp(g->info.status, "running") ? "" : "unfinished ", g->info.status,
                             g->info.error ? ": " : "", g->info.error ? g->info.error : "");
        else if (g->is_trace != b->is_trace)
            s = fa_ctx_error(ctx, FA_ERR_INPUT,
                             "baseline run %" PRId64 " (%s) is %s, %s run %" PRId64 " (%s) %s: the gate compares two "
                             "model runs or two imported traces",
                             b->info.id, b->path, b->is_trace ? "an imported trace" : "a model run", role, g->info.id, g->path,
                             g->is_trace ? "an imported trace" : "a model run");
        else if (g->is_trace && !g->has_advice)
            s = fa_ctx_error(ctx, FA_ERR_INPUT,
                             "%s: %s run %" PRId64 " is an imported trace without GPU kernels: nothing to compare", g->path,
                             role, g->info.id);
        else if (!g->is_trace && !fa_gate_same_model(&b->info, &g->info))
            s = fa_ctx_error(ctx, FA_ERR_INPUT,
                             "runs of different models: baseline run %" PRId64 " (%s) is %s%s%s, %s run %" PRId64
                             " (%s) is %s%s%s; the gate compares runs of one model",
                             b->info.id, b->path, b->info.model_path ? b->info.model_path : "?",
                             b->info.model_sha256 ? " sha256 " : "", b->info.model_sha256 ? b->info.model_sha256 : "",
                             role, g->info.id, g->path, g->info.model_path ? g->info.model_path : "?",
                             g->info.model_sha256 ? " sha256 " : "", g->info.model_sha256 ? g->info.model_sha256 : "");
        else if (b->info.target && g->info.target && strcmp(b->info.target, g->info.target))
            s = fa_ctx_error(ctx, FA_ERR_INPUT,
                             "runs on different targets: baseline run %" PRId64 " ran on %s, %s run %" PRId64
                             " on %s; latencies are not comparable",
                             b->info.id, b->info.target, role, g->info.id, g->info.target);
    }
    if (s) {
        fa_gate_report_free(r);
        return s;
    }
    r->baseline = b->info;
    r->candidate = c->info;
    r->n_baseline_runs = n_base;
    r->n_candidate_runs = n_cand;
    memcpy(r->baseline_runs, base_ids, sizeof(int64_t) * (size_t)n_base);
    memcpy(r->candidate_runs, cand_ids, sizeof(int64_t) * (size_t)n_cand);
    r->baseline_db = fa_arena_strdup(r->arena, b->path);
    r->candidate_db = fa_arena_strdup(r->arena, c->path);
    if (b->info.device_name && c->info.device_name && strcmp(b->info.device_name, c->info.device_name))
        fa_gate_note(r, "different devices: baseline on %s, candidate on %s; latency changes may be the machine's",
             b->info.device_name, c->info.device_name);
    if (b->info.threads && c->info.threads && b->info.threads != c->info.threads)
        fa_gate_note(r, "different thread counts: baseline %d, candidate %d", b->info.threads, c->info.threads);
    if (b->kpi_min != b->kpi_max && b->kpi_mode >= 0)
        fa_gate_note(r, "the baseline's iterations ran %d..%d kernels", b->kpi_min, b->kpi_max);
    if (base_ids[0] == cand_ids[0] && !strcmp(b->path, c->path)) fa_gate_note(r, "baseline and candidate are the same run");
    if (n_base > 1 || n_cand > 1)
        fa_gate_note(r, "latency pools %d baseline and %d candidate runs (two-stage bootstrap: runs, then iterations); "
                "accepted clusters and kernel counts are decided by majority / median over the runs; verification and "
                "registers come from the newest run of each side", n_base, n_cand);
    if (b->is_trace && (!b->info.model_path || !c->info.model_path || strcmp(b->info.model_path, c->info.model_path)))
        fa_gate_note(r, "imported traces of two files: the gate cannot tell whether they profile the same workload");
    r->traces = b->is_trace;
    s = b->is_trace ? fa_gate_check_traces(ctx, r, &sb, &sc) : fa_gate_check_all(ctx, r, &sb, &sc);
    if (s) {
        fa_gate_report_free(r);
        return s;
    }
    for (int i = 0; i < r->n_checks; i++) r->counts[r->checks[i].verdict]++;
    /* a gate that measured nothing does not pass: it says what is missing */
    if (r->counts[FA_GATE_SKIPPED] == r->n_checks) {
        s = fa_ctx_error(ctx, FA_ERR_INPUT,
                         "nothing to compare between baseline run %" PRId64 " (%s) and candidate run %" PRId64
                         " (%s): every check lacks its data%s%s",
                         b->info.id, b->path, c->info.id, c->path, r->n_checks ? "; the first: " : "",
                         r->n_checks ? r->checks[0].message : "");
        fa_gate_report_free(r);
        return s;
    }
    r->verdict = r->counts[FA_GATE_FAIL] ? FA_GATE_FAIL : r->counts[FA_GATE_INCONCLUSIVE] ? FA_GATE_INCONCLUSIVE
                                                                                           : FA_GATE_PASS;
    *out = r;
    return FA_OK;
}
