/* tests/unit/test_store_backends — the run store's typed API against each back end: the same
 * suite on an SQLite file (FA_TEST_STORE unset or "sqlite") and on a real PostgreSQL server
 * (FA_TEST_STORE=postgresql: started from Debian's packages by scripts/pg-test-server.sh; skipped
 * with exit 77 where the server binaries are absent, a failure instead when FA_PG_REQUIRED=1, as
 * in .ci/run). Round trips of the row kinds test_store does not cover, a killed writer, 8
 * writers with readers at once, read-only opens, and (server only) a restart mid-run; the cases
 * test_store runs on both back ends (100k-record traces, failed and rolled-back runs, ceilings)
 * live there only. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "store/store.h"

static bool g_pg; /* the PostgreSQL variant (fa_test_store_backend_init) */

/* ---- runs ---- */

static void test_run_fields_round_trip_and_password_never_stored(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("runs");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_run_info info = {0};
    info.kind = "run";
    info.model_path = "zoo:resnet50";
    info.model_sha256 = "abc123";
    info.target = "cpu";
    info.device_name = "Test CPU";
    info.threads = 2;
    info.iters = 5;
    info.warmup = 1;
    info.command_line = "fuse-advise run zoo:resnet50 --db postgresql://ci:s3cr%40t@db.example:5432/perf?sslmode=require "
                        "--x --db=postgres://u:pw@h/d?password=other&a=b";
    info.tag = "nightly";
    info.dim_defaults = "batch=1";
    info.peak_activation_bytes = 123456789;
    int64_t id = 0;
    fa_test_check_ok(ctx, fa_store_run_begin(ctx, st, &info, &id));
    fa_run_info upd = {0};
    upd.device_name = "Better CPU name";
    upd.peak_activation_bytes = 987654321;
    fa_test_check_ok(ctx, fa_store_run_update(ctx, st, id, &upd));
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, st, id, true, NULL));
    fa_store_close(st);

    st = fa_test_store_open_ok(ctx, path);
    fa_arena *ar = fa_arena_create(0);
    fa_run_info *runs = NULL;
    size_t n = 0;
    fa_test_check_ok(ctx, fa_store_list_runs(ctx, st, ar, &runs, &n));
    assert_int_equal(n, 1);
    assert_int_equal(runs[0].id, id);
    assert_string_equal(runs[0].model_sha256, "abc123");
    assert_string_equal(runs[0].device_name, "Better CPU name");
    assert_string_equal(runs[0].status, "ok");
    assert_string_equal(runs[0].tag, "nightly");
    assert_string_equal(runs[0].dim_defaults, "batch=1");
    assert_string_equal(runs[0].command_line,
                        "fuse-advise run zoo:resnet50 --db postgresql://ci:***@db.example:5432/perf?sslmode=require "
                        "--x --db=postgres://u:***@h/d?...");
    /* the second URI's "a=b" is no libpq parameter: libpq cannot read it, so it keeps its scheme,
     * user and host part only */
    assert_null(strstr(runs[0].command_line, "s3cr"));
    assert_null(strstr(runs[0].command_line, "other"));
    assert_int_equal(runs[0].peak_activation_bytes, 987654321);
    assert_int_equal(runs[0].pid, getpid());
    assert_non_null(runs[0].host);
    assert_null(runs[0].error);
    assert_true(runs[0].ended_at_ns >= runs[0].started_at_ns);
    assert_int_equal(runs[0].iter_median_ns, -1);
    int64_t latest = 0;
    fa_test_check_ok(ctx, fa_store_latest_run(ctx, st, "nightly", &latest));
    assert_int_equal(latest, id);
    assert_int_equal(fa_store_latest_run(ctx, st, "no-such-tag", &latest), FA_ERR_INPUT);
    assert_int_equal(fa_store_get_run(ctx, st, id + 100, ar, &runs[0]), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "no run"));
    fa_arena_free(ar);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* ---- traces ---- */

/* Names that are not valid UTF-8 (a profiler's raw bytes) never fail a run: SQLite keeps the
 * bytes, a UTF8 server gets U+FFFD in place of each bad byte. */
static void test_invalid_utf8_names_stored(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = fa_test_store_open_ok(ctx, fa_test_store_fresh("utf8"));
    fa_trace *t = fa_trace_create("kineto");
    fa_activity a = fa_activity_init(FA_ACT_KERNEL);
    a.name = fa_trace_intern(t, "bad\xff\xc3(name\xe2\x82");
    a.start_ns = 1;
    a.end_ns = 2;
    fa_trace_add(t, &a);
    fa_run_info info = {0};
    info.kind = "import";
    info.model_path = "trace\xfe.json";
    int64_t id = 0;
    fa_test_check_ok(ctx, fa_store_run_begin(ctx, st, &info, &id));
    fa_test_check_ok(ctx, fa_store_put_trace(ctx, st, id, t));
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, st, id, true, NULL));
    fa_trace *back = NULL;
    fa_test_check_ok(ctx, fa_store_load_trace(ctx, st, id, &back));
    assert_string_equal(back->acts[0].name, g_pg ? "bad\xef\xbf\xbd\xef\xbf\xbd(name\xef\xbf\xbd\xef\xbf\xbd" : "bad\xff\xc3(name\xe2\x82");
    fa_arena *ar = fa_arena_create(0);
    fa_run_info r;
    fa_test_check_ok(ctx, fa_store_get_run(ctx, st, id, ar, &r));
    assert_string_equal(r.model_path, g_pg ? "trace\xef\xbf\xbd.json" : "trace\xfe.json");
    fa_arena_free(ar);
    fa_trace_free(back);
    fa_trace_free(t);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* The per-op table and the gate's per-iteration reads agree with a hand count. */
static void test_op_table_and_gate_reads(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = fa_test_store_open_ok(ctx, fa_test_store_fresh("optable"));
    fa_trace *t = fa_trace_create("cpu-executor");
    uint64_t clock = 1000;
    for (int it = -1; it < 4; it++) {
        for (int node = 0; node < 3; node++) {
            fa_activity a = fa_activity_init(FA_ACT_KERNEL);
            a.node = node;
            a.iter = it;
            a.name = fa_trace_intern(t, node == 0 ? "conv" : node == 1 ? "relu" : "add");
            a.node_name = a.name;
            a.op_type = fa_trace_intern(t, "Op");
            a.start_ns = clock;
            a.end_ns = clock + (uint64_t)(node + 1) * 100 + (uint64_t)(it + 1);
            clock = a.end_ns + 10;
            fa_trace_add(t, &a);
        }
        fa_activity r = fa_activity_init(FA_ACT_RANGE);
        r.iter = it;
        r.name = fa_trace_intern(t, "iteration");
        r.start_ns = clock - 700;
        r.end_ns = clock;
        fa_trace_add(t, &r);
    }
    t->n_iters = 4;
    int64_t id = fa_test_store_trace_run(ctx, st, "ops.onnx", t);
    fa_arena *ar = fa_arena_create(0);
    fa_op_row *rows = NULL;
    size_t n = 0;
    int iters = 0;
    fa_test_check_ok(ctx, fa_store_op_table(ctx, st, id, ar, &rows, &n, &iters));
    assert_int_equal(n, 3);
    assert_int_equal(iters, 4);
    assert_string_equal(rows[0].node_name, "add");
    assert_int_equal(rows[0].median_ns, 303); /* 301..304: mean of the two middles, 302.5, half up (core/stats.c) */
    assert_int_equal(rows[0].kernels, 4);
    double *d = NULL;
    int nd = 0;
    fa_test_check_ok(ctx, fa_store_get_range_durations(ctx, st, id, "iteration", ar, &d, &nd));
    assert_int_equal(nd, 4);
    assert_true(d[0] == 700.0);
    int mn, mx, mode;
    fa_test_check_ok(ctx, fa_store_get_kernels_per_iter(ctx, st, id, &mn, &mx, &mode));
    assert_int_equal(mn, 3);
    assert_int_equal(mx, 3);
    assert_int_equal(mode, 3);
    int *its = NULL, nits = 0;
    fa_test_check_ok(ctx, fa_store_get_timed_iters(ctx, st, id, ar, &its, &nits));
    assert_int_equal(nits, 4);
    assert_int_equal(its[3], 3);
    fa_op_iter_row *oi = NULL;
    size_t noi = 0;
    fa_test_check_ok(ctx, fa_store_get_op_iter_times(ctx, st, id, ar, &oi, &noi));
    assert_int_equal(noi, 12);
    assert_string_equal(oi[0].op, "add");
    assert_int_equal(oi[0].iter, 0);
    assert_true(oi[0].kernel_ns == 301.0);
    fa_arena_free(ar);
    fa_trace_free(t);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* ---- graph rows ---- */

static void test_graph_rows_round_trip(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("edges");
    const char *in_relu[] = {"X"}, *out_relu[] = {"A"};
    const char *in_sig[] = {"A"}, *out_sig[] = {"B"};
    const char *in_add[] = {"A", "B"}, *out_add[] = {"C"};
    assert_non_null(fa_graph_add_node(ctx, g, "relu\t0", "Relu", "", 1, in_relu, 1, out_relu));
    assert_non_null(fa_graph_add_node(ctx, g, "sig0", "Sigmoid", "", 1, in_sig, 1, out_sig));
    assert_non_null(fa_graph_add_node(ctx, g, "add0", "Add", "", 2, in_add, 1, out_add));
    int64_t dims[2] = {2, 8};
    const char *names[] = {"X", "A", "B", "C"};
    for (int i = 0; i < 4; i++) fa_tensor_set_shape(g->tensors[fa_graph_find_tensor(g, names[i])], FA_DTYPE_FLOAT, 2, dims);
    fa_test_check_ok(ctx, fa_graph_add_input(ctx, g, fa_graph_find_tensor(g, "X")));
    fa_test_check_ok(ctx, fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "C")));
    fa_test_check_ok(ctx, fa_graph_index(ctx, g));
    fa_store *st = fa_test_store_open_ok(ctx, fa_test_store_fresh("graph"));
    int64_t id = fa_test_store_begin_run(ctx, st, "graph.onnx", NULL, 4);
    fa_test_check_ok(ctx, fa_store_put_graph(ctx, st, id, g));
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, st, id, true, NULL));
    fa_arena *ar = fa_arena_create(0);
    fa_node_row *nodes;
    size_t nn;
    fa_test_check_ok(ctx, fa_store_get_nodes(ctx, st, id, true, ar, &nodes, &nn));
    assert_int_equal(nn, 3);
    assert_string_equal(nodes[0].name, "relu\t0");
    assert_string_equal(nodes[2].op_type, "Add");
    assert_int_equal(nodes[2].bytes, 64 * 3);
    fa_tensor_row *tens;
    size_t nt;
    fa_test_check_ok(ctx, fa_store_get_tensors(ctx, st, id, ar, &tens, &nt));
    assert_int_equal(nt, 4);
    bool out_seen = false;
    for (size_t i = 0; i < nt; i++) out_seen |= tens[i].graph_output && !strcmp(tens[i].name, "C");
    assert_true(out_seen);
    fa_consumer_row *cons;
    size_t nc;
    fa_test_check_ok(ctx, fa_store_get_consumers(ctx, st, id, ar, &cons, &nc));
    assert_int_equal(nc, 4); /* X->relu, A->sig, A->add, B->add */
    int64_t count = 0;
    fa_test_check_ok(ctx, fa_store_count_nodes(ctx, st, id, &count));
    assert_int_equal(count, 3);
    fa_arena_free(ar);
    fa_store_close(st);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* ---- analysis, plans, benchmarks (ceilings: test_store) ---- */

static void test_analysis_plans_and_benchmarks_replace_and_read_back(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = fa_test_store_open_ok(ctx, fa_test_store_fresh("results"));
    fa_arena *ar = fa_arena_create(0);

    int64_t id = fa_test_store_begin_run(ctx, st, "plan.onnx", NULL, 4);
    fa_analysis_kernel_row k = {0, 1.5, 20.0, 30.0, 50.0, "memory"};
    int members[] = {0, 1};
    fa_analysis_chain_row ch = {2, members, NULL, 1000, 0.25, 4096, 2, 400};
    fa_analysis_edge_row e = {1, 0, 1, 64, 64, 0, false};
    fa_analysis_summary_row sum[] = {{"iter_ns", 4000, "ns", "it takes 4 us"}, {"bound", 0.5, "fraction", NULL}};
    fa_analysis_rows rows = {&k, 1, &ch, 1, &e, 1, sum, 2};
    fa_test_check_ok(ctx, fa_store_put_analysis(ctx, st, id, &rows));
    sum[0].text = "it takes 4 us, again";
    fa_test_check_ok(ctx, fa_store_put_analysis(ctx, st, id, &rows)); /* replaces */
    const char *text = NULL;
    fa_test_check_ok(ctx, fa_store_get_summary_text(ctx, st, id, "iter_ns", ar, &text));
    assert_string_equal(text, "it takes 4 us, again");
    bool have = false;
    fa_test_check_ok(ctx, fa_store_get_analysis_text(ctx, st, id, ar, &have, &text));
    assert_true(have);

    fa_plan *plan = fa_plan_create();
    assert_non_null(plan);
    plan->run_id = id;
    snprintf(plan->hash, sizeof plan->hash, "hash1");
    plan->opt = (fa_plan_options){FA_TARGET_CPU, NULL, 8, 4, 0.25, false};
    fa_cluster cl[2];
    memset(cl, 0, sizeof cl);
    int m0[] = {0, 1}, m1[] = {2, 3, 4}, ins[] = {7, 8};
    fa_post_op post[] = {{FA_POST_OP_ADD, 0, 0, 9}, {FA_POST_OP_RELU, 0, 0, -1}};
    cl[0] = (fa_cluster){.id = 0, .kind = FA_CLUSTER_EPILOGUE, .members = m0, .n_members = 2, .label = "matmul+add",
                         .anchor = 0, .depends_on = -1, .reduce_axis = -1, .epsilon = NAN, .block_size = -1,
                         .inputs = ins, .n_inputs = 2, .post_ops = post, .n_post_ops = 2, .saved_bytes = 100,
                         .saved_launches = 1, .recompute_ns = 0, .est_saving_ns = 500, .est_saving_pct = 5,
                         .basis = "measured medians\tof 2 kernels", .registers = -1, .spill_bytes = -1,
                         .occupancy = -1, .status = FA_CLUSTER_PROPOSED, .signature = "epilogue|MatMul(2x3;3x4)[2x4]f48r80w32"};
    cl[1] = cl[0];
    cl[1].id = 1;
    cl[1].members = m1;
    cl[1].n_members = 3;
    cl[1].label = "conv+relu";
    cl[1].post_ops = NULL;
    cl[1].n_post_ops = 0;
    cl[1].reduction = FA_REDUCE_SOFTMAX;
    cl[1].epsilon = 1e-5f;
    cl[1].est_saving_ns = 900;
    cl[1].score_bytes = 1572864; /* an attention cluster's score tensors (schema v7) */
    cl[1].signature = NULL;
    fa_why_not wn = {3, 4, 7, FA_WHY_CAP, "too big"};
    plan->clusters = cl;
    plan->n_clusters = 2;
    plan->why_not = &wn;
    plan->n_why_not = 1;
    int plan_id = 0;
    fa_test_check_ok(ctx, fa_store_put_plan(ctx, st, plan, NULL, &plan_id));
    assert_int_equal(plan_id, 1);
    plan->plan_id = plan_id;
    fa_cluster_verdict vs[2] = {fa_cluster_verdict_of(&cl[0]), fa_cluster_verdict_of(&cl[1])};
    vs[0].status = FA_CLUSTER_ACCEPTED;
    vs[0].measured_saving_ns = 420;
    vs[0].max_rel_error = 1e-7;
    vs[0].registers = 32;
    fa_test_check_ok(ctx, fa_store_put_cluster_verdicts(ctx, st, plan, vs));
    plan->clusters = NULL; /* the stack's */
    plan->why_not = NULL;
    fa_plan_free(plan);
    double samples[] = {1000, 1100, 990};
    fa_test_check_ok(ctx, fa_store_put_bench_samples(ctx, st, id, plan_id, FA_BENCH_BASELINE, -1, samples, 3));
    samples[1] = 1050;
    fa_test_check_ok(ctx, fa_store_put_bench_samples(ctx, st, id, plan_id, FA_BENCH_BASELINE, -1, samples, 3)); /* replaces */
    fa_test_check_ok(ctx, fa_store_put_bench_samples(ctx, st, id, plan_id, FA_BENCH_CLUSTER_FUSED, 0, samples, 2));
    fa_plan_e2e_row e2e = {2.5e-7, FA_E2E_LOSS};
    fa_test_check_ok(ctx, fa_store_set_plan_e2e(ctx, st, id, plan_id, &e2e));
    assert_int_equal(fa_store_set_plan_e2e(ctx, st, id, plan_id + 5, &e2e), FA_ERR_INTERNAL);

    fa_plan *rp = NULL;
    fa_cluster_verdict *rv = NULL;
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, id, &rp, &rv));
    assert_int_equal(rp->plan_id, 1);
    assert_string_equal(rp->hash, "hash1");
    assert_int_equal(rp->n_clusters, 2);
    const fa_cluster *rc = rp->clusters;
    assert_int_equal(rc[0].id, 1); /* larger predicted saving first */
    assert_string_equal(rc[0].label, "conv+relu");
    assert_int_equal(rc[0].n_members, 3);
    assert_true(isnan(rv[0].measured_saving_ns));
    assert_int_equal(rv[0].registers, -1);
    assert_int_equal(rc[0].reduction, FA_REDUCE_SOFTMAX);
    assert_true(fabs(rc[0].epsilon - 1e-5) < 1e-12);
    assert_int_equal(rc[0].n_post_ops, 0);
    assert_int_equal(rc[0].score_bytes, 1572864);
    assert_null(rc[0].signature);
    assert_int_equal(rc[1].score_bytes, 0);
    assert_string_equal(rc[1].signature, "epilogue|MatMul(2x3;3x4)[2x4]f48r80w32");
    assert_int_equal(rp->opt.max_ops, 8);
    assert_true(rp->opt.occupancy_floor == 0.25);
    assert_int_equal(rv[1].status, FA_CLUSTER_ACCEPTED);
    assert_string_equal(rc[1].label, "matmul+add");
    assert_string_equal(rc[1].basis, "measured medians\tof 2 kernels");
    assert_int_equal(rc[1].n_inputs, 2);
    assert_int_equal(rc[1].inputs[1], 8);
    assert_int_equal(rc[1].n_post_ops, 2);
    assert_int_equal(rc[1].post_ops[0].kind, FA_POST_OP_ADD);
    assert_int_equal(rc[1].post_ops[0].operand, 9);
    assert_int_equal(rc[1].post_ops[1].operand, -1);
    assert_true(isnan(rc[1].epsilon));
    assert_true(fabs(rv[1].measured_saving_ns - 420) < 1e-6);
    assert_int_equal(rv[1].registers, 32);
    assert_int_equal(rp->n_why_not, 1);
    assert_int_equal(rp->why_not[0].code, FA_WHY_CAP);
    assert_string_equal(rp->why_not[0].reason, "too big");
    fa_plan_free(rp);
    fa_bench_series *bs = NULL;
    size_t nbs = 0;
    fa_test_check_ok(ctx, fa_store_get_bench_series(ctx, st, id, plan_id, ar, &bs, &nbs));
    assert_int_equal(nbs, 2);
    assert_int_equal(bs[0].subject, FA_BENCH_BASELINE);
    assert_int_equal(bs[0].n, 3);
    assert_true(bs[0].samples_ns[1] == 1050);
    fa_plan_e2e_row back;
    fa_test_check_ok(ctx, fa_store_get_plan_e2e(ctx, st, id, &back));
    assert_true(fabs(back.max_rel_error - 2.5e-7) < 1e-15);
    assert_int_equal(back.verdict, FA_E2E_LOSS); /* the loss is kept, `report` and `runs` show it */
    fa_run_info ri;
    fa_test_check_ok(ctx, fa_store_get_run(ctx, st, id, ar, &ri));
    assert_int_equal(ri.e2e_verdict, FA_E2E_LOSS);
    e2e = (fa_plan_e2e_row){NAN, FA_E2E_WIN};
    fa_test_check_ok(ctx, fa_store_set_plan_e2e(ctx, st, id, plan_id, &e2e));
    fa_test_check_ok(ctx, fa_store_get_plan_e2e(ctx, st, id, &back));
    assert_true(isnan(back.max_rel_error));
    assert_int_equal(back.verdict, FA_E2E_WIN);

    /* trace advice replaces only the trace.* summary keys */
    fa_analysis_summary_row adv = {"trace.gaps", 0.1, "fraction", "gaps"};
    fa_analysis_rows arows = {NULL, 0, NULL, 0, NULL, 0, &adv, 1};
    fa_test_check_ok(ctx, fa_store_put_trace_advice(ctx, st, id, &arows));
    fa_test_check_ok(ctx, fa_store_get_summary_text(ctx, st, id, "trace.gaps", ar, &text));
    assert_string_equal(text, "gaps");
    fa_test_check_ok(ctx, fa_store_get_summary_text(ctx, st, id, "iter_ns", ar, &text));
    assert_non_null(text);
    /* a text in parts (one value holds 16 MiB): key, key.1, key.2 joined in order, on both back
     * ends; parts beyond FA_STORE_TEXT_PARTS_MAX refused naming the key */
    fa_analysis_summary_row parts[FA_STORE_TEXT_PARTS_MAX + 1];
    char keys[FA_STORE_TEXT_PARTS_MAX + 1][48];
    static const char *const bits[] = {"{\"a\":", "[1,2", ",3]}"};
    for (int k = 0; k < 3; k++) {
        if (k) snprintf(keys[k], sizeof keys[k], "trace.doc.%d", k);
        else snprintf(keys[k], sizeof keys[k], "trace.doc");
        parts[k] = (fa_analysis_summary_row){keys[k], 1, "json", bits[k]};
    }
    arows = (fa_analysis_rows){NULL, 0, NULL, 0, NULL, 0, parts, 3};
    fa_test_check_ok(ctx, fa_store_put_trace_advice(ctx, st, id, &arows));
    fa_test_check_ok(ctx, fa_store_get_summary_text_parts(ctx, st, id, "trace.doc", ar, &text));
    assert_string_equal(text, "{\"a\":[1,2,3]}");
    fa_test_check_ok(ctx, fa_store_get_summary_text_parts(ctx, st, id, "trace.none", ar, &text));
    assert_null(text);
    for (int k = 0; k <= FA_STORE_TEXT_PARTS_MAX; k++) {
        if (k) snprintf(keys[k], sizeof keys[k], "trace.doc.%d", k);
        else snprintf(keys[k], sizeof keys[k], "trace.doc");
        parts[k] = (fa_analysis_summary_row){keys[k], 1, "json", "x"};
    }
    arows = (fa_analysis_rows){NULL, 0, NULL, 0, NULL, 0, parts, FA_STORE_TEXT_PARTS_MAX + 1};
    fa_test_check_ok(ctx, fa_store_put_trace_advice(ctx, st, id, &arows));
    assert_int_equal(fa_store_get_summary_text_parts(ctx, st, id, "trace.doc", ar, &text), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "key 'trace.doc' is in more than 32 parts"));
    fa_ctx_clear(ctx);
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, st, id, true, NULL));
    fa_arena_free(ar);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* A fused twin finishes with its baseline run, and fails with it. */
static void test_fused_twin_follows_its_baseline(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = fa_test_store_open_ok(ctx, fa_test_store_fresh("twins"));
    int64_t base = fa_test_store_begin_run(ctx, st, "m.onnx", NULL, 4);
    char tag[64];
    snprintf(tag, sizeof tag, "fused-of:%lld", (long long)base);
    fa_run_info fi = {0};
    fi.kind = "fused";
    fi.tag = tag;
    int64_t twin = 0;
    fa_test_check_ok(ctx, fa_store_run_begin(ctx, st, &fi, &twin));
    int64_t f = 0;
    fa_test_check_ok(ctx, fa_store_get_fused_run(ctx, st, base, false, &f));
    assert_int_equal(f, twin);
    fa_test_check_ok(ctx, fa_store_get_fused_run(ctx, st, base, true, &f));
    assert_int_equal(f, -1);
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, st, base, true, NULL));
    fa_test_check_ok(ctx, fa_store_get_fused_run(ctx, st, base, true, &f));
    assert_int_equal(f, twin);
    fa_test_check_ok(ctx, fa_store_run_reopen(ctx, st, base));
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, st, base, false, "apply failed"));
    fa_arena *ar = fa_arena_create(0);
    fa_run_info r;
    fa_test_check_ok(ctx, fa_store_get_run(ctx, st, twin, ar, &r));
    assert_string_equal(r.status, "failed");
    assert_non_null(strstr(r.error, "baseline run"));
    fa_arena_free(ar);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* ---- failures ---- */

/* A writer killed (SIGKILL) in the middle of storing a big run: earlier runs intact, the killed
 * run never 'ok' (failed by the next open on this host, "process died"), none of its rows. */
static void test_killed_writer_leaves_earlier_runs_and_is_marked_failed(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("killed");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_trace *t1 = fa_test_synth_trace(2000, 20, 3, 3, true);
    int64_t good = fa_test_store_trace_run(ctx, st, "good.onnx", t1);
    fa_store_close(st);
    int sync[2];
    assert_int_equal(pipe(sync), 0);
    pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid == 0) {
        close(sync[0]);
        fa_ctx *c = fa_ctx_create();
        fa_store *cs = NULL;
        if (fa_store_open(c, path, &cs)) _exit(1);
        fa_run_info info = {0};
        info.kind = "run";
        info.model_path = "killed.onnx";
        int64_t id;
        if (fa_store_run_begin(c, cs, &info, &id)) _exit(2);
        fa_trace *big = fa_test_synth_trace(400000, 100, 10, 4, true);
        if (write(sync[1], "x", 1) != 1) _exit(3);
        for (;;) /* keeps writing until killed */
            if (fa_store_put_trace(c, cs, id, big)) _exit(4);
    }
    close(sync[1]);
    char b;
    assert_int_equal(read(sync[0], &b, 1), 1);
    close(sync[0]);
    usleep(700 * 1000); /* inside a put_trace */
    kill(kid, SIGKILL);
    int wst;
    assert_int_equal(waitpid(kid, &wst, 0), kid);
    assert_true(WIFSIGNALED(wst));

    /* The next open fails the run: a file's at once (the pid is gone), a server's once the
     * server has noticed the closed connection (its backend ends, the liveness lock with it). */
    fa_arena *ar = fa_arena_create(0);
    fa_run_info *runs;
    size_t n;
    st = NULL;
    for (int tries = 0; tries < 100; tries++) {
        fa_store_close(st);
        st = fa_test_store_open_ok(ctx, path);
        fa_test_check_ok(ctx, fa_store_list_runs(ctx, st, ar, &runs, &n));
        if (n && strcmp(runs[0].status, "running")) break;
        usleep(100 * 1000);
    }
    assert_int_equal(n, 2);
    assert_string_equal(runs[0].model_path, "killed.onnx");
    assert_string_equal(runs[0].status, "failed");
    assert_string_equal(runs[0].error, "process died");
    assert_int_equal(runs[0].n_kernels % 400000, 0); /* whole chunks only */
    assert_int_equal(runs[1].id, good);
    assert_string_equal(runs[1].status, "ok");
    fa_trace *back = NULL;
    fa_test_check_ok(ctx, fa_store_load_trace(ctx, st, good, &back));
    fa_test_assert_traces_equal(t1, back);
    fa_trace_free(back);
    fa_test_check_ok(ctx, fa_store_load_trace(ctx, st, runs[0].id, &back));
    assert_int_equal((int64_t)back->n_acts, runs[0].n_kernels);
    fa_trace_free(back);
    fa_arena_free(ar);
    fa_store_close(st);
    fa_trace_free(t1);
    fa_ctx_free(ctx);
}

/* 8 writers (each 3 runs, racing through creation and migration of a store nobody opened
 * before) and 2 readers at once: every write succeeds, readers only ever see whole runs. A
 * server's writers proceed side by side (20k records a run); SQLite's queue behind one write lock
 * for at most its 10 s busy timeout, so its runs are smaller (4k records) to stay inside it on a
 * loaded machine under ASan (with 20k, 8 queued writers there waited more than 10 s). */
static void test_8_writers_and_2_readers_at_once(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("load");
    enum { WRITERS = 8, READERS = 2, RUNS = 3 };
    const size_t RECS = g_pg ? 20000 : 4000;
    pid_t kids[WRITERS + READERS];
    for (int k = 0; k < WRITERS + READERS; k++) {
        kids[k] = fork();
        assert_true(kids[k] >= 0);
        if (kids[k]) continue;
        fa_ctx *c = fa_ctx_create();
        fa_store *cs = NULL;
        if (k >= WRITERS) { /* reader: wait for the store, then read whole runs until the writers end */
            for (int tries = 0; !cs && tries < 1200; tries++) /* up to 30 s: the writers create the store */
                if (fa_store_open_ex(c, path, FA_STORE_NO_CREATE | FA_STORE_READONLY, &cs)) usleep(25000);
            if (!cs) {
                fprintf(stderr, "reader %d: %s\n", k, fa_ctx_errmsg(c));
                _exit(10);
            }
            int seen_ok = 0;
            for (int round = 0; round < 60 && seen_ok < WRITERS * RUNS; round++) {
                fa_arena *ar = fa_arena_create(0);
                fa_run_info *runs;
                size_t n;
                if (fa_store_list_runs(c, cs, ar, &runs, &n)) {
                    fprintf(stderr, "reader: %s\n", fa_ctx_errmsg(c));
                    _exit(11);
                }
                seen_ok = 0;
                for (size_t i = 0; i < n; i++) {
                    if (strcmp(runs[i].status, "ok")) continue;
                    seen_ok++;
                    if (runs[i].n_kernels != (int64_t)RECS) {
                        fprintf(stderr, "reader %d: run %lld is ok with %lld records\n", k, (long long)runs[i].id,
                                (long long)runs[i].n_kernels);
                        _exit(12);
                    }
                    if (i == 0) {
                        fa_trace *t = NULL;
                        if (fa_store_load_trace(c, cs, runs[i].id, &t) || t->n_acts != RECS) {
                            fprintf(stderr, "reader %d: loading run %lld: %s\n", k, (long long)runs[i].id, fa_ctx_errmsg(c));
                            _exit(13);
                        }
                        fa_trace_free(t);
                    }
                }
                fa_arena_free(ar);
                usleep(50000);
            }
            fa_store_close(cs);
            _exit(0);
        }
        fa_trace *t = fa_test_synth_trace(RECS, 100, 5, 100 + (uint64_t)k, true);
        if (fa_store_open(c, path, &cs)) {
            fprintf(stderr, "writer %d: %s\n", k, fa_ctx_errmsg(c));
            _exit(1);
        }
        for (int r = 0; r < RUNS; r++) {
            char model[32];
            snprintf(model, sizeof model, "writer%d.onnx", k);
            fa_run_info info = {0};
            info.kind = "run";
            info.model_path = model;
            int64_t id;
            fa_status s = fa_store_run_begin(c, cs, &info, &id);
            if (!s) s = fa_store_put_trace(c, cs, id, t);
            if (!s) s = fa_store_run_finish(c, cs, id, true, NULL);
            if (s) {
                fprintf(stderr, "writer %d: %s\n", k, fa_ctx_errmsg(c));
                _exit(2);
            }
        }
        fa_store_close(cs);
        fa_trace_free(t);
        fa_ctx_free(c);
        _exit(0);
    }
    for (int k = 0; k < WRITERS + READERS; k++) {
        int wst = 0;
        assert_int_equal(waitpid(kids[k], &wst, 0), kids[k]);
        if (!WIFEXITED(wst) || WEXITSTATUS(wst)) fail_msg("process %d ended with status %d", k, wst);
    }
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_arena *ar = fa_arena_create(0);
    fa_run_info *runs;
    size_t n;
    fa_test_check_ok(ctx, fa_store_list_runs(ctx, st, ar, &runs, &n));
    assert_int_equal(n, WRITERS * RUNS);
    int ids_ok = 0;
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(runs[i].status, "ok");
        assert_int_equal(runs[i].n_kernels, RECS);
        if (i) ids_ok += runs[i].id < runs[i - 1].id;
    }
    assert_int_equal(ids_ok, (int)n - 1); /* distinct ids */
    fa_arena_free(ar);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

static void test_readonly_open_reads_and_refuses_writes(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("readonly");
    fa_store *st = NULL;
    /* nothing there yet: a read verb does not create the store */
    assert_int_equal(fa_store_open_ex(ctx, path, FA_STORE_NO_CREATE | FA_STORE_READONLY, &st), FA_ERR_INPUT);
    st = fa_test_store_open_ok(ctx, path);
    fa_trace *t = fa_test_synth_trace(1000, 10, 3, 5, true);
    int64_t id = fa_test_store_trace_run(ctx, st, "ro.onnx", t);
    fa_store_close(st);
    fa_test_check_ok(ctx, fa_store_open_ex(ctx, path, FA_STORE_READONLY, &st));
    assert_true(fa_store_readonly(st));
    fa_trace *back = NULL;
    fa_test_check_ok(ctx, fa_store_load_trace(ctx, st, id, &back));
    fa_test_assert_traces_equal(t, back);
    fa_trace_free(back);
    fa_run_info info = {0};
    info.kind = "run";
    int64_t id2;
    assert_int_equal(fa_store_run_begin(ctx, st, &info, &id2), FA_ERR_IO);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "read-only"));
    fa_arena *ar = fa_arena_create(0);
    fa_op_row *rows;
    size_t nr;
    int iters;
    fa_test_check_ok(ctx, fa_store_op_table(ctx, st, id, ar, &rows, &nr, &iters)); /* reads that check the run */
    assert_int_equal(nr, 10);
    fa_arena_free(ar);
    fa_store_close(st);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

/* ---- moving history ---- */

/* Runs copied from this back end into an SQLite file and back into a fresh store of this back
 * end read back equal (traces, plans with labels, fused twin renamed), and a second copy adds
 * nothing. */
static void test_copy_runs_there_and_back_equal_and_idempotent(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *a = fa_test_store_open_ok(ctx, fa_test_store_fresh("copy_a"));
    fa_trace *t = fa_test_synth_trace(30000, 60, 4, 21, true);
    int64_t first = fa_test_store_trace_run(ctx, a, "first.onnx", t); /* an id the copies will not reuse */
    int64_t base = fa_test_store_begin_run(ctx, a, "model.onnx", "main", 4);
    fa_test_check_ok(ctx, fa_store_put_trace(ctx, a, base, t));
    int m0[] = {0, 1};
    fa_post_op post[] = {{FA_POST_OP_RELU, 0, 0, -1}};
    fa_cluster cl = {.id = 0, .kind = FA_CLUSTER_EPILOGUE, .members = m0, .n_members = 2, .label = "matmul+add",
                     .anchor = 0, .depends_on = -1, .reduce_axis = -1, .epsilon = NAN, .block_size = 128,
                     .post_ops = post, .n_post_ops = 1, .est_saving_ns = 500, .basis = "b",
                     .registers = 40, .spill_bytes = 0, .occupancy = 0.5, .status = FA_CLUSTER_ACCEPTED};
    fa_cluster_verdict clv = fa_cluster_verdict_of(&cl);
    clv.measured_saving_ns = 420;
    clv.max_rel_error = 1e-6;
    fa_plan *plan = fa_plan_create();
    assert_non_null(plan);
    plan->run_id = base;
    snprintf(plan->hash, sizeof plan->hash, "h");
    plan->opt = (fa_plan_options){FA_TARGET_CPU, NULL, 8, 4, 0.25, true};
    plan->clusters = &cl;
    plan->n_clusters = 1;
    int pid = 0;
    fa_test_check_ok(ctx, fa_store_put_plan(ctx, a, plan, &clv, &pid));
    plan->clusters = NULL;
    fa_plan_free(plan);
    double smp[] = {10, 11, 12};
    fa_test_check_ok(ctx, fa_store_put_bench_samples(ctx, a, base, pid, FA_BENCH_FUSED, -1, smp, 3));
    char tag[64];
    snprintf(tag, sizeof tag, "fused-of:%lld", (long long)base);
    fa_run_info fi = {0};
    fi.kind = "fused";
    fi.tag = tag;
    int64_t twin = 0;
    fa_test_check_ok(ctx, fa_store_run_begin(ctx, a, &fi, &twin));
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, a, base, true, NULL));
    (void)fa_test_store_begin_run(ctx, a, "unfinished.onnx", NULL, 4); /* still running: never copied */
    fa_ceiling c = {"cpu:x:2", "bandwidth", "dram_bw", 12.5, "GB/s", "measured", 0, "triad"};
    fa_test_check_ok(ctx, fa_store_put_ceiling(ctx, a, &c));

    /* to a file, only the run tagged main (its twin comes along) */
    char file[4200];
    snprintf(file, sizeof file, "%s", fa_test_path(fa_test_tmpdir(), g_pg ? "copy-pg.db" : "copy-sq.db"));
    unlink(file);
    fa_store *f = NULL;
    fa_test_check_ok(ctx, fa_store_open(ctx, file, &f));
    fa_store_copy_result res;
    int64_t pick[] = {base};
    fa_test_check_ok(ctx, fa_store_copy_runs(ctx, a, f, pick, 1, &res));
    assert_int_equal(res.copied, 2);
    fa_test_check_ok(ctx, fa_store_copy_runs(ctx, a, f, NULL, 0, &res)); /* everything: only `first` is new */
    assert_int_equal(res.copied, 1);
    assert_int_equal(res.skipped_present, 2);
    assert_int_equal(res.skipped_running, 1);
    /* back into a fresh store of this back end */
    fa_store *b = fa_test_store_open_ok(ctx, fa_test_store_fresh("copy_b"));
    fa_test_check_ok(ctx, fa_store_copy_runs(ctx, f, b, NULL, 0, &res));
    assert_int_equal(res.copied, 3);
    fa_test_check_ok(ctx, fa_store_copy_runs(ctx, f, b, NULL, 0, &res));
    assert_int_equal(res.copied, 0);
    assert_int_equal(res.skipped_present, 3);
    assert_int_equal(fa_store_copy_runs(ctx, b, b, NULL, 0, &res), FA_ERR_USAGE);

    fa_arena *ar = fa_arena_create(0);
    int64_t nb = 0;
    fa_test_check_ok(ctx, fa_store_latest_run(ctx, b, "main", &nb));
    fa_trace *back = NULL;
    fa_test_check_ok(ctx, fa_store_load_trace(ctx, b, nb, &back));
    fa_test_assert_traces_equal(t, back);
    fa_trace_free(back);
    fa_plan *rp = NULL;
    fa_cluster_verdict *rv = NULL;
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, b, nb, &rp, &rv));
    int got_plan = rp->plan_id;
    assert_int_equal(rp->n_clusters, 1);
    assert_string_equal(rp->clusters[0].label, "matmul+add");
    assert_int_equal(rv[0].registers, 40);
    assert_int_equal(rp->clusters[0].block_size, 128);
    assert_int_equal(rp->clusters[0].n_post_ops, 1);
    assert_int_equal(rp->clusters[0].post_ops[0].kind, FA_POST_OP_RELU);
    assert_true(rp->opt.no_gate);
    assert_true(fabs(rv[0].max_rel_error - 1e-6) < 1e-18);
    fa_plan_free(rp);
    fa_bench_series *bs;
    size_t nbs;
    fa_test_check_ok(ctx, fa_store_get_bench_series(ctx, b, nb, got_plan, ar, &bs, &nbs));
    assert_int_equal(nbs, 1);
    assert_true(bs[0].samples_ns[2] == 12);
    int64_t ntwin = 0;
    fa_test_check_ok(ctx, fa_store_get_fused_run(ctx, b, nb, true, &ntwin));
    assert_true(ntwin > 0);
    fa_ceiling *cs;
    size_t ncs;
    fa_test_check_ok(ctx, fa_store_get_ceilings(ctx, b, "cpu:x:2", ar, &cs, &ncs));
    assert_int_equal(ncs, 1);
    assert_string_equal(cs[0].detail, "triad");
    (void)first;
    fa_arena_free(ar);
    fa_store_close(b);
    fa_store_close(f);
    fa_store_close(a);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

/* ---- the server only ---- */

/* The server restarts while a run is being stored: the write in flight fails with a message
 * that says the connection was lost, the next unit of work reconnects (the run is marked
 * failed, never ok), and every run stored before is intact. */
static void test_server_restart_mid_run_fails_clearly_and_keeps_earlier_runs(void **state)
{
    (void)state;
    if (!g_pg) skip();
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("restart");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_trace *t = fa_test_synth_trace(5000, 50, 4, 11, true);
    int64_t good = fa_test_store_trace_run(ctx, st, "before.onnx", t);
    int64_t id = fa_test_store_begin_run(ctx, st, "during.onnx", NULL, 4);
    fa_test_check_ok(ctx, fa_store_put_trace(ctx, st, id, t));
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "bash '%s/scripts/pg-test-server.sh' restart '%s'", getenv("FA_SOURCE_DIR"), fa_test_store_server_dir());
    assert_int_equal(system(cmd), 0);
    fa_status s = fa_store_put_trace(ctx, st, id, t);
    assert_int_equal(s, FA_ERR_IO);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "connection"));
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "127.0.0.1"));
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, st, id, false, fa_ctx_errmsg(ctx))); /* reconnects */
    fa_store_close(st);
    st = fa_test_store_open_ok(ctx, path);
    fa_arena *ar = fa_arena_create(0);
    fa_run_info r;
    fa_test_check_ok(ctx, fa_store_get_run(ctx, st, id, ar, &r));
    assert_string_equal(r.status, "failed");
    assert_int_equal(r.n_kernels, 5000); /* the chunk committed before the restart */
    fa_test_check_ok(ctx, fa_store_get_run(ctx, st, good, ar, &r));
    assert_string_equal(r.status, "ok");
    fa_trace *back = NULL;
    fa_test_check_ok(ctx, fa_store_load_trace(ctx, st, good, &back));
    fa_test_assert_traces_equal(t, back);
    fa_trace_free(back);
    fa_arena_free(ar);
    fa_store_close(st);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

/* A server whose schema is newer than this build is refused untouched; an unreachable server
 * is a clear error without the password. */
static void test_newer_schema_and_unreachable_server_refused(void **state)
{
    (void)state;
    if (!g_pg) skip();
#ifdef FA_HAVE_LIBPQ
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("newer");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_store_close(st);
    const char *db = strrchr(path, '/') + 1;
    fa_test_pg_sql(db, "UPDATE fuse_advise.schema_version SET version = 99");
    assert_int_equal(fa_store_open(ctx, path, &st), FA_ERR_UNSUPPORTED);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "newer"));
    assert_int_equal(fa_test_pg_sql(db, "SELECT version FROM fuse_advise.schema_version"), 99);
    assert_int_equal(fa_store_open(ctx, "postgresql://u:hunter2@127.0.0.1:1/nowhere?connect_timeout=2", &st), FA_ERR_IO);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "cannot connect"));
    assert_null(strstr(fa_ctx_errmsg(ctx), "hunter2"));
    fa_ctx_free(ctx);
#endif
}

/* On a server any machine's open fails a run whose writer is gone, and never one whose writer is
 * alive: liveness is the writer's connection (its advisory lock), not a pid on this host. */
static void test_server_fails_runs_of_gone_writers_of_any_host_only(void **state)
{
    (void)state;
    if (!g_pg) skip();
#ifdef FA_HAVE_LIBPQ
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("liveness");
    fa_store_close(fa_test_store_open_ok(ctx, path));
    const char *db = strrchr(path, '/') + 1;
    int go[2], ready[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(ready), 0);
    pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid == 0) { /* a writer "on another machine": begins a run, then waits */
        fa_ctx *c = fa_ctx_create();
        fa_store *cs = NULL;
        if (fa_store_open(c, path, &cs)) _exit(1);
        fa_run_info info = {0};
        info.kind = "run";
        info.model_path = "remote.onnx";
        int64_t id;
        if (fa_store_run_begin(c, cs, &info, &id)) _exit(2);
        if (write(ready[1], "x", 1) != 1) _exit(3);
        char b;
        if (read(go[0], &b, 1) != 1) _exit(4); /* until told to finish or killed */
        _exit(fa_store_run_finish(c, cs, id, true, NULL) ? 5 : 0);
    }
    char b;
    assert_int_equal(read(ready[0], &b, 1), 1);
    fa_test_pg_sql(db, "UPDATE fuse_advise.runs SET host = 'another-host', pid = 999999999 WHERE model_path = 'remote.onnx'");
    /* a live writer elsewhere: its run stays running through another process's open */
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_store_close(st);
    assert_int_equal(fa_test_pg_sql(db, "SELECT count(*) FROM fuse_advise.runs WHERE status = 'running'"), 1);
    /* a process of this host with a fake pid of this host is not judged by pid on a server either */
    assert_int_equal(write(go[1], "x", 1), 1);
    int wst;
    assert_int_equal(waitpid(kid, &wst, 0), kid);
    assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    assert_int_equal(fa_test_pg_sql(db, "SELECT count(*) FROM fuse_advise.runs WHERE status = 'ok'"), 1);

    /* the same, killed: the next open from anywhere fails its run */
    kid = fork();
    assert_true(kid >= 0);
    if (kid == 0) {
        fa_ctx *c = fa_ctx_create();
        fa_store *cs = NULL;
        if (fa_store_open(c, path, &cs)) _exit(1);
        fa_run_info info = {0};
        info.kind = "run";
        info.model_path = "remote2.onnx";
        int64_t id;
        if (fa_store_run_begin(c, cs, &info, &id)) _exit(2);
        if (write(ready[1], "x", 1) != 1) _exit(3);
        pause();
        _exit(0);
    }
    assert_int_equal(read(ready[0], &b, 1), 1);
    fa_test_pg_sql(db, "UPDATE fuse_advise.runs SET host = 'another-host' WHERE model_path = 'remote2.onnx'");
    kill(kid, SIGKILL);
    assert_int_equal(waitpid(kid, &wst, 0), kid);
    int left = 1;
    for (int tries = 0; tries < 50 && left; tries++) { /* the server notices the closed connection */
        st = fa_test_store_open_ok(ctx, path);
        fa_store_close(st);
        left = (int)fa_test_pg_sql(db, "SELECT count(*) FROM fuse_advise.runs WHERE status = 'running'");
        if (left) usleep(100000);
    }
    assert_int_equal(left, 0);
    assert_int_equal(fa_test_pg_sql(db, "SELECT count(*) FROM fuse_advise.runs WHERE model_path = 'remote2.onnx' AND "
                                "status = 'failed' AND error = 'process died'"), 1);
    close(go[0]);
    close(go[1]);
    close(ready[0]);
    close(ready[1]);
    fa_ctx_free(ctx);
#endif
}

/* A server store written by a version-4 build (options_json documents) migrates to version 5 with
 * the documents moved into columns by jsonb, as SQLite's JSON1 does for files. */
/* The clusters columns schemas v9, v10, v12 and v13 added (issue 36: the prediction's terms, its
 * spread, the measured medians, the saving in the model, the prediction's interval; issue 33:
 * whether an epilogue is generated), as
 * DROP clauses to append to an ALTER TABLE clusters that takes a store back to an older shape. */
#define V9_CLUSTER_DROPS                                                                                     \
    ", DROP COLUMN pred_members_us, DROP COLUMN pred_dispatch_us, DROP COLUMN pred_fused_us, DROP COLUMN "  \
    "pred_ratio, DROP COLUMN est_spread_pct, DROP COLUMN est_spread_n, DROP COLUMN meas_unfused_us, DROP "    \
    "COLUMN meas_fused_us, DROP COLUMN epilogue_generated, DROP COLUMN inmodel_saving_us, DROP COLUMN "      \
    "inmodel_spread_us, DROP COLUMN est_lo_us, DROP COLUMN est_hi_us"

/* The plans columns schema v11 added (issue 35: the plan's layout and its figures), as DROP clauses
 * to append to an ALTER TABLE plans. */
#define V11_PLAN_DROPS                                                                                       \
    ", DROP COLUMN layout, DROP COLUMN layout_source, DROP COLUMN layout_default, DROP COLUMN layout_rival, " \
    "DROP COLUMN layout_rounds, DROP COLUMN layout_verdict, DROP COLUMN layout_default_median_ns, DROP COLUMN " \
    "layout_rival_median_ns, DROP COLUMN layout_gain_ns, DROP COLUMN layout_gain_lo_ns, DROP COLUMN layout_gain_hi_ns"

static void test_server_v4_store_migrates_plan_documents_to_columns(void **state)
{
    (void)state;
    if (!g_pg) skip();
#ifdef FA_HAVE_LIBPQ
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("v4");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    int64_t id = fa_test_store_begin_run(ctx, st, "m.onnx", NULL, 4);
    fa_store_close(st);
    const char *db = strrchr(path, '/') + 1;
    char sql[2048];
    /* back to the version-4 shape (v5's to v9's columns dropped), one plan with one cluster
     * described in options_json */
    fa_test_pg_sql(db, "SET search_path TO fuse_advise; DROP TABLE cluster_post_ops; "
               "ALTER TABLE plans DROP COLUMN max_ops, DROP COLUMN max_inputs, DROP COLUMN occupancy_floor, DROP COLUMN gate, "
               "DROP COLUMN e2e_verdict" V11_PLAN_DROPS "; "
               "ALTER TABLE clusters DROP COLUMN label, DROP COLUMN anchor, DROP COLUMN depends_on, DROP COLUMN reduction, "
               "DROP COLUMN reduce_axis, DROP COLUMN epsilon, DROP COLUMN block_size, DROP COLUMN inputs_json, "
               "DROP COLUMN outputs_json, DROP COLUMN basis, DROP COLUMN score_bytes, DROP COLUMN signature"
               V9_CLUSTER_DROPS "; "
               "ALTER TABLE plans ADD COLUMN options_json TEXT; "
               "UPDATE schema_version SET version = 4");
    snprintf(sql, sizeof sql,
             "SET search_path TO fuse_advise; "
             "INSERT INTO plans (run_id, plan_id, created_at_ns, plan_hash, target, options_json) VALUES (%lld, 1, 1, 'h', 'cpu', "
             "'{\"max_ops\":6,\"no_gate\":true,\"clusters\":[{\"id\":0,\"label\":\"conv+relu\",\"anchor\":3,\"epsilon\":0.001,"
             "\"inputs\":[4,5],\"post_ops\":[\"eltwise:relu\",\"binary:add\"],\"post_op_inputs\":[-1,11]}]}'); "
             "INSERT INTO plans (run_id, plan_id, created_at_ns, plan_hash, target, options_json) VALUES (%lld, 2, 2, 'h2', 'cpu', 'not json'); "
             "INSERT INTO clusters (run_id, plan_id, cluster_id, kind, members_json, status) VALUES (%lld, 1, 0, 'epilogue', '[3,4]', 'proposed'); "
             "INSERT INTO clusters (run_id, plan_id, cluster_id, kind, members_json, status) VALUES (%lld, 2, 0, 'epilogue', '[3]', 'proposed')",
             (long long)id, (long long)id, (long long)id, (long long)id);
    fa_test_pg_sql(db, sql);
    st = fa_test_store_open_ok(ctx, path); /* migrates 4 -> 5 -> ... -> 8 */
    assert_int_equal(fa_test_pg_sql(db, "SELECT version FROM fuse_advise.schema_version"), FA_STORE_SCHEMA_VERSION);
    assert_int_equal(fa_test_pg_sql(db, "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'fuse_advise' "
                                "AND table_name = 'plans' AND column_name = 'options_json'"), 0);
    snprintf(sql, sizeof sql, "SELECT max_ops FROM fuse_advise.plans WHERE run_id = %lld AND plan_id = 1", (long long)id);
    assert_int_equal(fa_test_pg_sql(db, sql), 6);
    snprintf(sql, sizeof sql, "SELECT gate FROM fuse_advise.plans WHERE run_id = %lld AND plan_id = 1", (long long)id);
    assert_int_equal(fa_test_pg_sql(db, sql), 0);
    snprintf(sql, sizeof sql, "SELECT anchor FROM fuse_advise.clusters WHERE run_id = %lld AND plan_id = 1", (long long)id);
    assert_int_equal(fa_test_pg_sql(db, sql), 3);
    snprintf(sql, sizeof sql, "SELECT operand_tensor FROM fuse_advise.cluster_post_ops WHERE run_id = %lld AND seq = 1", (long long)id);
    assert_int_equal(fa_test_pg_sql(db, sql), 11);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM fuse_advise.clusters WHERE run_id = %lld AND plan_id = 2 AND label IS NULL", (long long)id);
    assert_int_equal(fa_test_pg_sql(db, sql), 1); /* a document that is not JSON moved nothing */
    fa_store_close(st);
    fa_ctx_free(ctx);
#endif
}

/* A version-5 schema on the server (no end-to-end verdict column) migrates to 6 keeping its
 * plans; their verdict reads "not applied" until one is stored. */
static void test_server_v5_store_gains_the_e2e_verdict(void **state)
{
    (void)state;
    if (!g_pg) skip();
#ifdef FA_HAVE_LIBPQ
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("v5");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    int64_t id = fa_test_store_begin_run(ctx, st, "m.onnx", NULL, 4);
    fa_store_close(st);
    const char *db = strrchr(path, '/') + 1;
    char sql[2048];
    snprintf(sql, sizeof sql,
             "SET search_path TO fuse_advise; ALTER TABLE plans DROP COLUMN e2e_verdict" V11_PLAN_DROPS "; ALTER TABLE "
             "clusters DROP COLUMN "
             "score_bytes, DROP COLUMN signature" V9_CLUSTER_DROPS "; UPDATE schema_version SET "
             "version = 5; INSERT INTO plans (run_id, plan_id, created_at_ns, plan_hash, target, status, "
             "e2e_max_rel_error) VALUES (%lld, 1, 1, 'h', 'cpu', 'applied', 3e-7)",
             (long long)id);
    fa_test_pg_sql(db, sql);
    st = fa_test_store_open_ok(ctx, path); /* migrates 5 -> 6 -> 7 -> 8 */
    assert_int_equal(fa_test_pg_sql(db, "SELECT version FROM fuse_advise.schema_version"), FA_STORE_SCHEMA_VERSION);
    fa_plan_e2e_row e2e;
    fa_test_check_ok(ctx, fa_store_get_plan_e2e(ctx, st, id, &e2e));
    assert_true(fabs(e2e.max_rel_error - 3e-7) < 1e-15);
    assert_int_equal(e2e.verdict, FA_E2E_NOT_APPLIED);
    e2e.verdict = FA_E2E_LOSS;
    fa_test_check_ok(ctx, fa_store_set_plan_e2e(ctx, st, id, 1, &e2e));
    fa_arena *ar = fa_arena_create(0);
    fa_run_info *runs = NULL;
    size_t n = 0;
    fa_test_check_ok(ctx, fa_store_list_runs(ctx, st, ar, &runs, &n));
    assert_int_equal(n, 1);
    assert_int_equal(runs[0].e2e_verdict, FA_E2E_LOSS);
    fa_arena_free(ar);
    fa_store_close(st);
    fa_ctx_free(ctx);
#endif
}

/* ---- main ---- */

int main(void)
{
    g_pg = fa_test_store_backend_init("test_store_backends");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_fields_round_trip_and_password_never_stored),
        cmocka_unit_test(test_op_table_and_gate_reads),
        cmocka_unit_test(test_invalid_utf8_names_stored),
        cmocka_unit_test(test_graph_rows_round_trip),
        cmocka_unit_test(test_analysis_plans_and_benchmarks_replace_and_read_back),
        cmocka_unit_test(test_fused_twin_follows_its_baseline),
        cmocka_unit_test(test_killed_writer_leaves_earlier_runs_and_is_marked_failed),
        cmocka_unit_test(test_8_writers_and_2_readers_at_once),
        cmocka_unit_test(test_readonly_open_reads_and_refuses_writes),
        cmocka_unit_test(test_copy_runs_there_and_back_equal_and_idempotent),
        cmocka_unit_test(test_server_restart_mid_run_fails_clearly_and_keeps_earlier_runs),
        cmocka_unit_test(test_newer_schema_and_unreachable_server_refused),
        cmocka_unit_test(test_server_v4_store_migrates_plan_documents_to_columns),
        cmocka_unit_test(test_server_v5_store_gains_the_e2e_verdict),
        cmocka_unit_test(test_server_fails_runs_of_gone_writers_of_any_host_only),
    };
    return cmocka_run_group_tests_name(g_pg ? "store on postgresql" : "store on sqlite", tests, NULL, NULL);
}
