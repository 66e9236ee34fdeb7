/* tests/unit/test_store — the run database: schema and migrations, refusal of foreign/newer
 * files, crash and failure robustness, concurrent writers, read-only files, round trips, the
 * per-op table, and the `runs` / `show` verbs. The cases not about SQLite files run once more on a
 * PostgreSQL server (ctest test_store_pg, FA_TEST_STORE=postgresql; skipped, 77, without one). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "store/store-impl.h"
#include "store/store.h"

static bool g_pg; /* the PostgreSQL variant (test_store_pg): the cases about SQLite files skip */

/* ---- helpers ---- */

static char *raw_text(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    const char *t = (const char *)sqlite3_column_text(q, 0);
    char *r = strdup(t ? t : "(null)");
    sqlite3_finalize(q);
    sqlite3_close(db);
    return r;
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc) fail_msg("raw sql failed: %s", err ? err : "?");
    sqlite3_close(db);
}

static uint8_t *read_all(const char *path, size_t *n)
{
    fa_ctx *ctx = fa_ctx_create();
    uint8_t *d = NULL;
    assert_int_equal(fa_read_file(ctx, path, &d, n), FA_OK);
    fa_ctx_free(ctx);
    return d;
}

/* ---- schema ---- */

static void test_schema_created_at_current_version_and_reopen_keeps_runs(void **state)
{
    (void)state;
    if (g_pg) skip(); /* the SQLite file header and user_version */
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("schema");
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
    info.command_line = "fuse-advise run zoo:resnet50 --no-apply";
    info.tag = "nightly";
    info.peak_activation_bytes = 123456789;
    int64_t id = 0;
    fa_test_check_ok(ctx, fa_store_run_begin(ctx, st, &info, &id));
    assert_true(id > 0);
    fa_run_info upd = {0};
    upd.device_name = "Better CPU name";
    upd.peak_activation_bytes = 987654321;
    fa_test_check_ok(ctx, fa_store_run_update(ctx, st, id, &upd));
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, st, id, true, NULL));
    fa_store_close(st);

    assert_int_equal(fa_test_store_sql_i64(path, "PRAGMA user_version"), FA_STORE_SCHEMA_VERSION);
    assert_int_equal(fa_test_store_sql_i64(path, "PRAGMA application_id"), FA_STORE_APPLICATION_ID);
    assert_int_equal(fa_test_store_sql_i64(path, "PRAGMA page_size"), 16384);
    char *jm = raw_text(path, "PRAGMA journal_mode");
    assert_string_equal(jm, "wal");
    free(jm);
    /* every table of the documented schema exists */
    static const char *const tables[] = {"runs", "nodes", "tensors", "consumers", "kernels",
                                         "device_ceilings", "analysis_kernels", "analysis_chains",
                                         "analysis_edges", "analysis_summary", "plans", "clusters",
                                         "why_not", "fused_kernels", "benchmarks"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM sqlite_schema WHERE type='table' AND name='%s'", tables[i]);
        if (fa_test_store_sql_i64(path, sql) != 1) fail_msg("table %s missing", tables[i]);
    }

    st = fa_test_store_open_ok(ctx, path);
    fa_arena *ar = fa_arena_create(0);
    fa_run_info *runs = NULL;
    size_t n = 0;
    fa_test_check_ok(ctx, fa_store_list_runs(ctx, st, ar, &runs, &n));
    assert_int_equal(n, 1);
    assert_int_equal(runs[0].id, id);
    assert_string_equal(runs[0].kind, "run");
    assert_string_equal(runs[0].model_path, "zoo:resnet50");
    assert_string_equal(runs[0].model_sha256, "abc123");
    assert_string_equal(runs[0].device_name, "Better CPU name");
    assert_string_equal(runs[0].status, "ok");
    assert_string_equal(runs[0].tag, "nightly");
    assert_string_equal(runs[0].command_line, info.command_line);
    assert_int_equal(runs[0].threads, 2);
    assert_int_equal(runs[0].iters, 5);
    assert_int_equal(runs[0].warmup, 1);
    assert_int_equal(runs[0].peak_activation_bytes, 987654321);
    assert_int_equal(runs[0].pid, getpid());
    assert_null(runs[0].error);
    assert_true(runs[0].started_at_ns > 1600000000ll * 1000000000ll);
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

static void test_migration_from_v1_keeps_runs_and_adds_later_tables(void **state)
{
    (void)state;
    if (g_pg) skip(); /* an SQLite file of version 1 (test_store_backends migrates a server) */
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("v1");
    /* A version-1 database as the first release wrote it, with one finished run and kernels. */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, fa_store_migrations[0], NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO runs (id, kind, model_path, target, started_at_ns, "
                                  "ended_at_ns, status, iters, n_kernels, iter_median_ns) VALUES "
                                  "(7, 'run', 'old.onnx', 'cpu', 1, 2, 'ok', 3, 1, 500);"
                                  "INSERT INTO kernels (run_id, seq, kind, name, node, iter, start_ns, end_ns) "
                                  "VALUES (7, 0, 0, 'relu', 0, 0, 100, 600);"
                                  "PRAGMA user_version = 1;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(fa_test_store_sql_i64(path, "PRAGMA user_version"), 1);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT count(*) FROM sqlite_schema WHERE name='clusters'"), 0);

    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_arena *ar = fa_arena_create(0);
    fa_run_info r;
    fa_test_check_ok(ctx, fa_store_get_run(ctx, st, 7, ar, &r));
    assert_string_equal(r.model_path, "old.onnx");
    assert_string_equal(r.status, "ok");
    assert_null(r.tag); /* the column v2 added, defaulted */
    assert_int_equal(r.iter_median_ns, 500);
    fa_trace *t = NULL;
    fa_test_check_ok(ctx, fa_store_load_trace(ctx, st, 7, &t));
    assert_int_equal(t->n_acts, 1);
    assert_string_equal(t->acts[0].name, "relu");
    assert_int_equal(t->acts[0].end_ns, 600);
    fa_trace_free(t);
    /* new runs after the migration can use the tag */
    fa_run_info info = {0};
    info.kind = "run";
    info.tag = "after-migration";
    int64_t id;
    fa_test_check_ok(ctx, fa_store_run_begin(ctx, st, &info, &id));
    assert_true(id > 7);
    fa_store_close(st);
    fa_arena_free(ar);
    assert_int_equal(fa_test_store_sql_i64(path, "PRAGMA user_version"), FA_STORE_SCHEMA_VERSION);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT count(*) FROM sqlite_schema WHERE name='clusters'"), 1);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT count(*) FROM runs WHERE tag='after-migration'"), 1);
    fa_ctx_free(ctx);
}

/* The cluster fields of a plan as both tests below expect them back. */
static void check_cluster_details(const fa_cluster *c, const fa_cluster *r)
{
    assert_int_equal(r->n_post_ops, c->n_post_ops);
    for (int k = 0; k < c->n_post_ops; k++) {
        assert_int_equal(r->post_ops[k].kind, c->post_ops[k].kind);
        assert_int_equal(r->post_ops[k].operand, c->post_ops[k].operand);
    }
    assert_int_equal(r->n_members, c->n_members);
    assert_memory_equal(r->members, c->members, sizeof(int) * (size_t)c->n_members);
    assert_int_equal(r->n_inputs, c->n_inputs);
    assert_memory_equal(r->inputs, c->inputs, sizeof(int) * (size_t)c->n_inputs);
    assert_int_equal(r->n_outputs, c->n_outputs);
    assert_memory_equal(r->outputs, c->outputs, sizeof(int) * (size_t)c->n_outputs);
    assert_int_equal(r->kind, c->kind);
    assert_string_equal(r->label, c->label);
    assert_int_equal(r->anchor, c->anchor);
    assert_int_equal(r->depends_on, c->depends_on);
    assert_int_equal(r->reduction, c->reduction);
    assert_int_equal(r->reduce_axis, c->reduce_axis);
    assert_float_equal(r->epsilon, c->epsilon, 1e-12);
    assert_int_equal(r->block_size, c->block_size);
    assert_float_equal(r->est_saving_ns, c->est_saving_ns, 1e-6);
}

static int k_mem0[] = {4, 5, 6}, k_in0[] = {10, 11, 9}, k_out0[] = {14};
static int k_mem1[] = {7, 8}, k_in1[] = {14, 15, 16}, k_out1[] = {18, 19};
static fa_post_op k_post0[] = {{FA_POST_OP_RELU, 0, 0, -1}, {FA_POST_OP_ADD, 0, 0, 9}};

static void test_migration_from_v4_moves_cluster_details_into_columns(void **state)
{
    (void)state;
    if (g_pg) skip(); /* an SQLite file of version 4 (test_store_backends migrates a server) */
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("v4");
    /* A version-4 database as the v4 advisor wrote it: the cluster details (label, anchor,
     * reduction, inputs, outputs, post-ops, ...) only inside plans.options_json; a second run's
     * plan has a damaged document. */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), SQLITE_OK);
    for (int v = 0; v < 4; v++) assert_int_equal(sqlite3_exec(db, fa_store_migrations[v], NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "INSERT INTO runs (id, kind, model_path, target, started_at_ns, ended_at_ns, status) VALUES "
                     "(3, 'run', 'm.onnx', 'cpu', 1, 2, 'ok'), (4, 'run', 'm.onnx', 'cpu', 1, 2, 'ok');"
                     "INSERT INTO plans (run_id, plan_id, created_at_ns, plan_hash, target, arch, options_json, status, "
                     "e2e_max_rel_error) VALUES (3, 1, 5, 'h1', 'cpu', NULL, '{\"target\":\"cpu\",\"arch\":\"\","
                     "\"max_ops\":12,\"max_inputs\":6,\"occupancy_floor\":0.5000,\"no_gate\":true,\"clusters\":["
                     "{\"id\":0,\"label\":\"conv+relu+add\",\"anchor\":4,\"depends_on\":-1,\"reduction\":\"none\","
                     "\"reduce_axis\":-1,\"epsilon\":0,\"block_size\":0,\"inputs\":[10,11,9],\"outputs\":[14],"
                     "\"post_ops\":[\"eltwise:relu\",\"binary:add\"],\"post_op_inputs\":[-1,9]},"
                     "{\"id\":1,\"label\":\"layer_norm(decomposed)\",\"anchor\":7,\"depends_on\":0,\"reduction\":"
                     "\"layer_norm\",\"reduce_axis\":2,\"epsilon\":9.99999975e-06,\"block_size\":256,\"inputs\":[14,15,16],"
                     "\"outputs\":[18,19],\"post_ops\":[],\"post_op_inputs\":[]}]}', 'applied', 1e-7),"
                     "(4, 1, 5, 'h2', 'cpu', NULL, '{\"clusters\":[{\"id\":0,', 'proposed', NULL);"
                     "INSERT INTO clusters (run_id, plan_id, cluster_id, kind, members_json, est_saving_us, status) VALUES "
                     "(3, 1, 0, 'epilogue', '[4,5,6]', 2.5, 'accepted'), (3, 1, 1, 'reduction', '[7,8]', 1.5, 'proposed'),"
                     "(4, 1, 0, 'elementwise-chain', '[1,2]', 1, 'proposed');"
                     "PRAGMA user_version = 4;",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);

    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_plan *p = NULL;
    fa_cluster_verdict *v = NULL;
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, 3, &p, &v));
    assert_non_null(p);
    assert_int_equal(p->plan_id, 1);
    assert_int_equal(p->opt.max_ops, 12);
    assert_int_equal(p->opt.max_inputs, 6);
    assert_float_equal(p->opt.occupancy_floor, 0.5, 1e-12);
    assert_true(p->opt.no_gate);
    assert_int_equal(p->n_clusters, 2);
    fa_cluster want0 = {.kind = FA_CLUSTER_EPILOGUE, .members = k_mem0, .n_members = 3, .label = "conv+relu+add",
                        .anchor = 4, .depends_on = -1, .reduction = FA_REDUCE_NONE, .reduce_axis = -1, .epsilon = 0,
                        .block_size = 0, .inputs = k_in0, .n_inputs = 3, .outputs = k_out0, .n_outputs = 1,
                        .post_ops = k_post0, .n_post_ops = 2, .est_saving_ns = 2500};
    /* v4 wrote the reduction as "layer_norm", a word this build's names ("layer-norm") do not know:
     * it reads as none */
    fa_cluster want1 = {.kind = FA_CLUSTER_REDUCTION, .members = k_mem1, .n_members = 2, .label = "layer_norm(decomposed)",
                        .anchor = 7, .depends_on = 0, .reduction = FA_REDUCE_NONE, .reduce_axis = 2,
                        .epsilon = 9.99999975e-06f, .block_size = 256, .inputs = k_in1, .n_inputs = 3,
                        .outputs = k_out1, .n_outputs = 2, .est_saving_ns = 1500};
    check_cluster_details(&want0, &p->clusters[0]);
    check_cluster_details(&want1, &p->clusters[1]);
    assert_null(p->clusters[0].basis); /* v4 never stored the basis */
    assert_null(p->clusters[0].signature); /* nor the signature (v8) */
    assert_int_equal(v[0].status, FA_CLUSTER_ACCEPTED);
    assert_int_equal(v[1].status, FA_CLUSTER_PROPOSED);
    fa_plan_free(p);
    fa_plan_e2e_row e2e;
    fa_test_check_ok(ctx, fa_store_get_plan_e2e(ctx, st, 3, &e2e));
    assert_float_equal(e2e.max_rel_error, 1e-7, 1e-15);
    assert_int_equal(e2e.verdict, FA_E2E_NOT_APPLIED); /* never recorded before v6 */
    /* the damaged document: the plan and its cluster survive, the moved fields read as unknown */
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, 4, &p, &v));
    assert_int_equal(p->plan_id, 1);
    assert_int_equal(p->n_clusters, 1);
    assert_int_equal(p->opt.max_ops, -1);
    assert_null(p->clusters[0].label);
    assert_int_equal(p->clusters[0].reduction, FA_REDUCE_NONE);
    assert_int_equal(p->clusters[0].anchor, -1);
    assert_int_equal(p->clusters[0].n_inputs, 0);
    assert_int_equal(p->clusters[0].n_post_ops, 0);
    assert_true(isnan(p->clusters[0].epsilon));
    fa_plan_free(p);
    fa_store_close(st);
    assert_int_equal(fa_test_store_sql_i64(path, "PRAGMA user_version"), FA_STORE_SCHEMA_VERSION);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT count(*) FROM pragma_table_info('plans') WHERE name='options_json'"), 0);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT count(*) FROM cluster_post_ops"), 2);
    fa_ctx_free(ctx);
}

/* A version-5 database (every applied plan's verdict unrecorded) migrates to 6: its plans and
 * end-to-end errors stay, their verdict reads "not applied", and a new verdict is stored and
 * listed with the run. */
static void test_migration_from_v5_adds_the_e2e_verdict_and_keeps_plans(void **state)
{
    (void)state;
    if (g_pg) skip(); /* an SQLite file of version 5 (test_store_backends migrates a server) */
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("v5");
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), SQLITE_OK);
    for (int v = 0; v < 5; v++) assert_int_equal(sqlite3_exec(db, fa_store_migrations[v], NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO runs (id, kind, model_path, target, started_at_ns, ended_at_ns, status) "
                                  "VALUES (7, 'run', 'm.onnx', 'cpu', 1, 2, 'ok');"
                                  "INSERT INTO plans (run_id, plan_id, created_at_ns, plan_hash, target, status, "
                                  "e2e_max_rel_error, max_ops) VALUES (7, 1, 5, 'h5', 'cpu', 'applied', 3e-7, 9);"
                                  "PRAGMA user_version = 5;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);

    fa_store *st = fa_test_store_open_ok(ctx, path);
    assert_int_equal(fa_test_store_sql_i64(path, "PRAGMA user_version"), FA_STORE_SCHEMA_VERSION);
    fa_plan_e2e_row e2e;
    fa_test_check_ok(ctx, fa_store_get_plan_e2e(ctx, st, 7, &e2e));
    assert_float_equal(e2e.max_rel_error, 3e-7, 1e-15);
    assert_int_equal(e2e.verdict, FA_E2E_NOT_APPLIED);
    fa_arena *ar = fa_arena_create(0);
    fa_run_info ri;
    fa_test_check_ok(ctx, fa_store_get_run(ctx, st, 7, ar, &ri));
    assert_int_equal(ri.e2e_verdict, FA_E2E_NOT_APPLIED);
    fa_plan_e2e_row loss = {4e-7, FA_E2E_LOSS};
    fa_test_check_ok(ctx, fa_store_set_plan_e2e(ctx, st, 7, 1, &loss));
    fa_run_info *runs = NULL;
    size_t n = 0;
    fa_test_check_ok(ctx, fa_store_list_runs(ctx, st, ar, &runs, &n));
    assert_int_equal(n, 1);
    assert_int_equal(runs[0].e2e_verdict, FA_E2E_LOSS);
    fa_test_check_ok(ctx, fa_store_get_plan_e2e(ctx, st, 7, &e2e));
    assert_int_equal(e2e.verdict, FA_E2E_LOSS);
    fa_plan *p = NULL;
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, 7, &p, NULL));
    assert_int_equal(p->plan_id, 1);
    assert_int_equal(p->opt.max_ops, 9);
    assert_int_equal(p->n_clusters, 0);
    fa_plan_free(p);
    fa_arena_free(ar);
    fa_store_close(st);
    char *word = raw_text(path, "SELECT e2e_verdict FROM plans WHERE run_id = 7");
    assert_string_equal(word, "loss");
    free(word);
    fa_ctx_free(ctx);
}

/* A version-6 file (before attention clusters) opens migrated to 7: its clusters keep their rows,
 * the new score_bytes column reads back as 0 (NULL: no score tensors recorded). */
static void test_migration_from_v6_adds_score_bytes_and_keeps_clusters(void **state)
{
    (void)state;
    if (g_pg) skip(); /* an SQLite file of version 6 (test_store_backends migrates a server) */
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("v6");
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), SQLITE_OK);
    for (int v = 0; v < 6; v++) assert_int_equal(sqlite3_exec(db, fa_store_migrations[v], NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO runs (id, kind, model_path, target, started_at_ns, ended_at_ns, status) "
                                  "VALUES (7, 'run', 'm.onnx', 'cpu', 1, 2, 'ok');"
                                  "INSERT INTO plans (run_id, plan_id, created_at_ns, plan_hash, target, status) "
                                  "VALUES (7, 1, 5, 'h6', 'cpu', 'applied');"
                                  "INSERT INTO clusters (run_id, plan_id, cluster_id, kind, members_json, saved_bytes, "
                                  "saved_launches, est_saving_us, status, label) VALUES (7, 1, 0, 'reduction', '[1,2]', 64, "
                                  "1, 3.5, 'proposed', 'softmax');"
                                  "PRAGMA user_version = 6;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    fa_store *st = fa_test_store_open_ok(ctx, path);
    assert_int_equal(fa_test_store_sql_i64(path, "PRAGMA user_version"), FA_STORE_SCHEMA_VERSION);
    fa_plan *p = NULL;
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, 7, &p, NULL));
    assert_int_equal(p->n_clusters, 1);
    assert_string_equal(p->clusters[0].label, "softmax");
    assert_int_equal(p->clusters[0].saved_bytes, 64);
    assert_int_equal(p->clusters[0].score_bytes, 0);
    assert_null(p->clusters[0].signature);
    fa_plan_free(p);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* The plan's layout (schema v11) round-trips with its figures, on every backend; an undecided one
 * stores NULL and reads back undecided. */
static void test_plan_layout_round_trips(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("layout");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    int64_t run = fa_test_store_begin_run(ctx, st, "layout.onnx", NULL, 4);
    fa_plan *plan = fa_plan_create();
    plan->run_id = run;
    snprintf(plan->hash, sizeof plan->hash, "h");
    int id = 0;
    fa_test_check_ok(ctx, fa_store_put_plan(ctx, st, plan, NULL, &id)); /* undecided */
    fa_plan *p = NULL;
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, run, &p, NULL));
    assert_int_equal(p->layout.source, FA_LAYOUT_SRC_UNKNOWN);
    fa_plan_free(p);
    fa_plan_layout l = {FA_LAYOUT_SRC_MEASURED, FA_LAYOUT_NHWC, FA_LAYOUT_NCHW16C, FA_LAYOUT_NHWC, 12, 1,
                        9450123, 8120456, 1330789, 1100000, -25};
    plan->layout = l;
    fa_test_check_ok(ctx, fa_store_put_plan(ctx, st, plan, NULL, &id));
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, run, &p, NULL));
    assert_int_equal(p->plan_id, id);
    assert_int_equal(p->layout.source, FA_LAYOUT_SRC_MEASURED);
    assert_int_equal(p->layout.layout, FA_LAYOUT_NHWC);
    assert_int_equal(p->layout.deflt, FA_LAYOUT_NCHW16C);
    assert_int_equal(p->layout.rival, FA_LAYOUT_NHWC);
    assert_int_equal(p->layout.rounds, 12);
    assert_int_equal(p->layout.verdict, 1);
    assert_float_equal(p->layout.default_median_ns, 9450123, 0);
    assert_float_equal(p->layout.rival_median_ns, 8120456, 0);
    assert_float_equal(p->layout.gain_ns, 1330789, 0);
    assert_float_equal(p->layout.gain_lo_ns, 1100000, 0);
    assert_float_equal(p->layout.gain_hi_ns, -25, 0);
    fa_plan_free(p);
    /* named by --layout: the layout and the default, no figures */
    plan->layout = fa_plan_layout_unknown();
    plan->layout.source = FA_LAYOUT_SRC_OPTION;
    plan->layout.layout = FA_LAYOUT_PLAIN;
    plan->layout.deflt = FA_LAYOUT_NCHW8C;
    fa_test_check_ok(ctx, fa_store_put_plan(ctx, st, plan, NULL, &id));
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, run, &p, NULL));
    assert_int_equal(p->layout.source, FA_LAYOUT_SRC_OPTION);
    assert_int_equal(p->layout.layout, FA_LAYOUT_PLAIN);
    assert_int_equal(p->layout.deflt, FA_LAYOUT_NCHW8C);
    assert_int_equal(p->layout.rounds, 0);
    assert_true(isnan(p->layout.gain_ns));
    fa_plan_free(p);
    fa_plan_free(plan);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* A version-9 file opens migrated to the current version (v11 adds the layout): its plans stay and read an undecided layout (the
 * target's default when applied); a stored word this build does not know reads undecided too. */
static void test_migration_from_v9_adds_the_plan_layout(void **state)
{
    (void)state;
    if (g_pg) skip(); /* an SQLite file of version 9 */
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("v9");
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), SQLITE_OK);
    for (int v = 0; v < 9; v++) assert_int_equal(sqlite3_exec(db, fa_store_migrations[v], NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO runs (id, kind, model_path, target, started_at_ns, ended_at_ns, status) "
                                  "VALUES (7, 'run', 'm.onnx', 'cpu', 1, 2, 'ok');"
                                  "INSERT INTO plans (run_id, plan_id, created_at_ns, plan_hash, target, status, max_ops) "
                                  "VALUES (7, 1, 5, 'h9', 'cpu', 'applied', 9);"
                                  "PRAGMA user_version = 9;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    fa_store *st = fa_test_store_open_ok(ctx, path);
    assert_int_equal(fa_test_store_sql_i64(path, "PRAGMA user_version"), FA_STORE_SCHEMA_VERSION);
    fa_plan *p = NULL;
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, 7, &p, NULL));
    assert_int_equal(p->plan_id, 1);
    assert_int_equal(p->opt.max_ops, 9);
    assert_int_equal(p->layout.source, FA_LAYOUT_SRC_UNKNOWN);
    fa_plan_free(p);
    fa_store_close(st);
    raw_exec(path, "UPDATE plans SET layout = 'nChw32c', layout_source = 'measured', layout_rounds = 3 WHERE run_id = 7");
    st = fa_test_store_open_ok(ctx, path);
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, 7, &p, NULL));
    assert_int_equal(p->layout.source, FA_LAYOUT_SRC_UNKNOWN);
    fa_plan_free(p);
    fa_store_close(st);
    raw_exec(path, "UPDATE plans SET layout = 'nhwc', layout_source = 'guessed' WHERE run_id = 7");
    st = fa_test_store_open_ok(ctx, path);
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, 7, &p, NULL));
    assert_int_equal(p->layout.source, FA_LAYOUT_SRC_UNKNOWN);
    fa_plan_free(p);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* The prediction's interval (schema v13, issue 36) round-trips; a version-12 file opens migrated,
 * its clusters' interval NULL, read back as NAN: no interval, one figure quoted as before. */
static void test_migration_from_v12_adds_the_prediction_interval(void **state)
{
    (void)state;
    if (g_pg) skip(); /* an SQLite file of version 12 */
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("v12");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    int64_t run = fa_test_store_begin_run(ctx, st, "v12.onnx", NULL, 4);
    fa_plan *plan = fa_plan_create();
    assert_non_null(plan);
    plan->run_id = run;
    snprintf(plan->hash, sizeof plan->hash, "v12");
    plan->opt = (fa_plan_options){FA_TARGET_CPU, NULL, 16, 8, 0.5, false};
    fa_cluster in = {.id = 0, .kind = FA_CLUSTER_EPILOGUE, .members = k_mem0, .n_members = 3, .label = "matmul+add",
                     .anchor = 4, .depends_on = -1, .reduction = FA_REDUCE_NONE, .reduce_axis = -1, .inputs = k_in0,
                     .n_inputs = 3, .outputs = k_out0, .n_outputs = 1, .est_saving_ns = -3027.4, .est_lo_ns = -70991,
                     .est_hi_ns = 106631, .est_spread_pct = NAN, .est_spread_n = -1, .registers = -1, .spill_bytes = -1,
                     .occupancy = -1, .status = FA_CLUSTER_PROPOSED};
    plan->clusters = &in;
    plan->n_clusters = 1;
    int plan_id = 0;
    fa_test_check_ok(ctx, fa_store_put_plan(ctx, st, plan, NULL, &plan_id));
    plan->clusters = NULL;
    fa_plan_free(plan);
    fa_plan *p = NULL;
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, run, &p, NULL));
    assert_float_equal(p->clusters[0].est_lo_ns, -70991, 1e-3);
    assert_float_equal(p->clusters[0].est_hi_ns, 106631, 1e-3);
    char b[256];
    assert_non_null(strstr(fa_cluster_spread_phrase(&p->clusters[0], b, sizeof b), " (about 0 by its probe's pairs: "));
    fa_plan_free(p);
    fa_store_close(st);
    /* the same file as a version-12 build left it: no interval columns */
    raw_exec(path, "ALTER TABLE clusters DROP COLUMN est_lo_us; ALTER TABLE clusters DROP COLUMN est_hi_us; "
                   "PRAGMA user_version = 12;");
    st = fa_test_store_open_ok(ctx, path);
    assert_int_equal(fa_test_store_sql_i64(path, "PRAGMA user_version"), FA_STORE_SCHEMA_VERSION);
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, run, &p, NULL));
    assert_int_equal(p->n_clusters, 1);
    assert_float_equal(p->clusters[0].est_saving_ns, -3027.4, 1e-3);
    assert_true(isnan(p->clusters[0].est_lo_ns) && isnan(p->clusters[0].est_hi_ns));
    assert_string_equal(fa_cluster_spread_phrase(&p->clusters[0], b, sizeof b), "");
    fa_plan_free(p);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

static void test_plan_round_trip_keeps_every_cluster_column(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("plan");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    int64_t run = fa_test_store_begin_run(ctx, st, "plan.onnx", NULL, 4);
    fa_plan *plan = fa_plan_create();
    assert_non_null(plan);
    plan->run_id = run;
    snprintf(plan->hash, sizeof plan->hash, "abcd");
    plan->opt = (fa_plan_options){FA_TARGET_CPU, NULL, 16, 8, 0.5, false};
    fa_cluster in[2] = {
        {.id = 0, .kind = FA_CLUSTER_EPILOGUE, .members = k_mem0, .n_members = 3, .label = "conv+relu+add", .anchor = 4,
         .depends_on = -1, .reduction = FA_REDUCE_NONE, .reduce_axis = -1, .epsilon = 0, .block_size = 0, .inputs = k_in0,
         .n_inputs = 3, .outputs = k_out0, .n_outputs = 1, .post_ops = k_post0, .n_post_ops = 2, .est_saving_ns = 2500,
         .basis = "measured medians of 2 kernels (1.2 us) + 1 gap - predicted fused 0.4 us", .registers = -1,
         .spill_bytes = -1, .occupancy = -1, .status = FA_CLUSTER_PROPOSED, .signature = "epilogue|Conv(1x3)[1x8]f1r2w3"},
        {.id = 1, .kind = FA_CLUSTER_REDUCTION, .members = k_mem1, .n_members = 2, .label = "layer_norm(decomposed)",
         .anchor = 7, .depends_on = 0, .reduction = FA_REDUCE_LAYER_NORM, .reduce_axis = 2, .epsilon = 1e-5f,
         .block_size = 256, .inputs = k_in1, .n_inputs = 3, .outputs = k_out1, .n_outputs = 2, .est_saving_ns = 1500,
         .basis = NULL, .registers = 40, .spill_bytes = 0, .occupancy = 0.75, .status = FA_CLUSTER_REFUSED,
         .reason = "occupancy 0.75"},
    };
    plan->clusters = in;
    plan->n_clusters = 2;
    int plan_id = 0;
    fa_test_check_ok(ctx, fa_store_put_plan(ctx, st, plan, NULL, &plan_id));
    plan->clusters = NULL; /* the stack's */
    fa_plan_free(plan);
    fa_plan *p = NULL;
    fa_cluster_verdict *v = NULL;
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, run, &p, &v));
    assert_int_equal(p->plan_id, plan_id);
    assert_string_equal(p->hash, "abcd");
    assert_int_equal(p->opt.target, FA_TARGET_CPU);
    assert_int_equal(p->opt.max_ops, 16);
    assert_int_equal(p->opt.max_inputs, 8);
    assert_false(p->opt.no_gate);
    assert_int_equal(p->n_clusters, 2);
    check_cluster_details(&in[0], &p->clusters[0]);
    check_cluster_details(&in[1], &p->clusters[1]);
    assert_string_equal(p->clusters[0].basis, in[0].basis);
    assert_string_equal(p->clusters[0].signature, in[0].signature);
    assert_null(p->clusters[1].basis);
    assert_null(p->clusters[1].signature);
    assert_true(p->clusters[0].occupancy < 0); /* not computed: read back as none */
    assert_float_equal(p->clusters[1].occupancy, 0.75, 1e-12);
    /* the verdict columns start as the advisor's decision */
    assert_int_equal(v[1].registers, 40);
    assert_int_equal(v[1].status, FA_CLUSTER_REFUSED);
    assert_string_equal(v[1].reason, "occupancy 0.75");
    assert_true(isnan(v[0].measured_saving_ns));
    assert_true(v[0].max_rel_error < 0);
    /* the applier's verdicts rewrite only the verdict columns */
    fa_cluster_verdict nv[2] = {fa_cluster_verdict_of(&p->clusters[0]), fa_cluster_verdict_of(&p->clusters[1])};
    nv[0].status = FA_CLUSTER_ACCEPTED;
    nv[0].reason = "faster";
    nv[0].measured_saving_ns = 2100;
    nv[0].max_rel_error = 3e-7;
    fa_test_check_ok(ctx, fa_store_put_cluster_verdicts(ctx, st, p, nv));
    fa_plan_free(p);
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, run, &p, &v));
    assert_int_equal(v[0].status, FA_CLUSTER_ACCEPTED);
    assert_string_equal(v[0].reason, "faster");
    assert_float_equal(v[0].measured_saving_ns, 2100, 1e-6);
    assert_float_equal(v[0].max_rel_error, 3e-7, 1e-15);
    assert_int_equal(v[1].status, FA_CLUSTER_REFUSED);
    check_cluster_details(&in[0], &p->clusters[0]);
    fa_plan_free(p);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

static void test_newer_schema_version_refused_and_file_unchanged(void **state)
{
    (void)state;
    if (g_pg) skip(); /* the bytes of an SQLite file */
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("newer");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_test_store_trace_run(ctx, st, "m.onnx", NULL);
    fa_store_close(st);
    /* A newer fuse-advise wrote version 99 and left it in the WAL, not yet checkpointed:
     * refusing must not checkpoint it into the main file either. */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99; CREATE TABLE future_stuff(x);", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", path);
    struct stat ws;
    assert_int_equal(stat(wal, &ws), 0);
    assert_true(ws.st_size > 0);
    size_t n0, n1;
    uint8_t *before = read_all(path, &n0);
    st = NULL;
    fa_status s = fa_store_open(ctx, path, &st);
    assert_int_equal(s, FA_ERR_UNSUPPORTED);
    assert_null(st);
    const char *msg = fa_ctx_errmsg(ctx);
    assert_non_null(strstr(msg, path));
    assert_non_null(strstr(msg, "99"));
    char ours[32];
    snprintf(ours, sizeof ours, "version %d", FA_STORE_SCHEMA_VERSION);
    assert_non_null(strstr(msg, ours));
    uint8_t *after = read_all(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
    assert_int_equal(fa_test_store_sql_i64(path, "PRAGMA user_version"), 99); /* still there, in the WAL */
    fa_ctx_free(ctx);
}

static void test_not_sqlite_file_refused_and_untouched(void **state)
{
    (void)state;
    if (g_pg) skip(); /* files that are not SQLite */
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("notsqlite");
    const char junk[] = "{\"traceEvents\": []}\nthis is not a database at all, not even close\n";
    fa_test_check_ok(ctx, fa_write_file_atomic(ctx, path, junk, sizeof junk - 1));
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, path, &st), FA_ERR_INPUT);
    assert_null(st);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), path));
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "not an SQLite database"));
    size_t n;
    uint8_t *d = read_all(path, &n);
    assert_int_equal(n, sizeof junk - 1);
    assert_memory_equal(d, junk, n);
    free(d);

    /* an SQLite file written by another program (e.g. an Nsight Systems export) */
    const char *foreign = fa_test_store_fresh("foreign");
    raw_exec(foreign, "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER)");
    size_t n0;
    uint8_t *before = read_all(foreign, &n0);
    assert_int_equal(fa_store_open(ctx, foreign, &st), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "not a fuse-advise run database"));
    size_t n1;
    uint8_t *after = read_all(foreign, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);

    /* a missing file with NO_CREATE is an error naming it, and nothing is created */
    const char *missing = fa_test_store_fresh("missing");
    assert_int_equal(fa_store_open_ex(ctx, missing, FA_STORE_NO_CREATE, &st), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), missing));
    assert_int_equal(access(missing, F_OK), -1);
    fa_ctx_free(ctx);
}

/* ---- robustness ---- */

static void test_failed_run_is_marked_and_earlier_runs_stay_intact(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("failed");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_trace *t1 = fa_test_synth_trace(5000, 50, 4, 1, false);
    int64_t good = fa_test_store_trace_run(ctx, st, "good.onnx", t1);

    /* second run: begins, stores part of its trace, then fails */
    fa_run_info info = {0};
    info.kind = "run";
    info.model_path = "bad.onnx";
    int64_t bad = 0;
    fa_test_check_ok(ctx, fa_store_run_begin(ctx, st, &info, &bad));
    fa_trace *t2 = fa_test_synth_trace(300, 10, 2, 2, false);
    fa_test_check_ok(ctx, fa_store_put_trace(ctx, st, bad, t2));
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, st, bad, false, "node 'conv_3' (Conv): kernel failed"));

    /* third run: a whole-run transaction that is rolled back leaves no trace of itself */
    fa_test_check_ok(ctx, fa_store_begin(ctx, st));
    int64_t rolled = 0;
    info.model_path = "rolled.onnx";
    fa_test_check_ok(ctx, fa_store_run_begin(ctx, st, &info, &rolled));
    fa_test_check_ok(ctx, fa_store_put_trace(ctx, st, rolled, t2));
    assert_int_equal(fa_store_begin(ctx, st), FA_ERR_INTERNAL); /* no nesting */
    fa_store_rollback(st);
    /* fourth run: a write that fails inside the caller's transaction undoes only itself */
    fa_test_check_ok(ctx, fa_store_begin(ctx, st));
    int64_t inner = fa_test_store_begin_run(ctx, st, "inner.onnx", NULL, 4);
    assert_int_not_equal(fa_store_put_trace(ctx, st, inner + 1000, t2), FA_OK); /* no such run */
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, st, inner, true, NULL));
    fa_test_check_ok(ctx, fa_store_commit(ctx, st));
    fa_store_close(st);

    st = fa_test_store_open_ok(ctx, path);
    fa_arena *ar = fa_arena_create(0);
    fa_run_info *runs;
    size_t n;
    fa_test_check_ok(ctx, fa_store_list_runs(ctx, st, ar, &runs, &n));
    assert_int_equal(n, 3); /* the rolled-back run is absent */
    assert_int_equal(runs[0].id, inner);
    assert_string_equal(runs[0].status, "ok");
    assert_int_equal(runs[1].id, bad);
    assert_string_equal(runs[1].status, "failed");
    assert_string_equal(runs[1].error, "node 'conv_3' (Conv): kernel failed");
    assert_int_equal(runs[2].id, good);
    assert_string_equal(runs[2].status, "ok");
    assert_int_equal(runs[2].n_kernels, 5000);
    fa_trace *back = NULL;
    fa_test_check_ok(ctx, fa_store_load_trace(ctx, st, good, &back));
    fa_test_assert_traces_equal(t1, back);
    fa_trace_free(back);
    /* SQLite may give the rolled-back id to the next run; a server's sequence does not */
    for (size_t i = 0; i < n; i++) assert_string_not_equal(runs[i].model_path, "rolled.onnx");
    if (rolled != inner) assert_int_equal(fa_store_load_trace(ctx, st, rolled, &back), FA_ERR_INPUT);
    fa_arena_free(ar);
    fa_store_close(st);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT count(*) FROM kernels WHERE run_id NOT IN (SELECT id FROM runs)"), 0);
    fa_trace_free(t1);
    fa_trace_free(t2);
    fa_ctx_free(ctx);
}

static void assert_integrity_ok(const char *path)
{
    char *r = raw_text(path, "PRAGMA integrity_check");
    assert_string_equal(r, "ok");
    free(r);
}

static void test_process_killed_mid_transaction_leaves_earlier_runs_and_marks_it_failed(void **state)
{
    (void)state;
    if (g_pg) skip(); /* SQLite WAL recovery and integrity_check (test_store_backends kills a server writer) */
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("killed");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_trace *t1 = fa_test_synth_trace(20000, 100, 5, 3, false);
    int64_t good = fa_test_store_trace_run(ctx, st, "good.onnx", t1);
    fa_store_close(st);

    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        fa_ctx *c = fa_ctx_create();
        fa_store *cs = NULL;
        if (fa_store_open(c, path, &cs)) _exit(1);
        fa_run_info info = {0};
        info.kind = "run";
        info.model_path = "doomed.onnx";
        int64_t id;
        if (fa_store_run_begin(c, cs, &info, &id)) _exit(2);
        fa_trace *t = fa_test_synth_trace(50000, 100, 5, 4, false);
        if (fa_store_begin(c, cs)) _exit(3);
        if (fa_store_put_trace(c, cs, id, t)) _exit(4);
        raise(SIGKILL); /* dies holding the write transaction, 50k rows uncommitted */
        _exit(5);
    }
    int wst = 0;
    assert_int_equal(waitpid(child, &wst, 0), child);
    assert_true(WIFSIGNALED(wst));
    assert_int_equal(WTERMSIG(wst), SIGKILL);

    st = fa_test_store_open_ok(ctx, path); /* reopening recovers the WAL and marks the dead run */
    fa_arena *ar = fa_arena_create(0);
    fa_run_info *runs;
    size_t n;
    fa_test_check_ok(ctx, fa_store_list_runs(ctx, st, ar, &runs, &n));
    assert_int_equal(n, 2);
    assert_string_equal(runs[0].model_path, "doomed.onnx");
    assert_string_equal(runs[0].status, "failed");
    assert_string_equal(runs[0].error, "process died");
    assert_int_equal(runs[0].n_kernels, 0);
    assert_int_equal(runs[0].pid, child);
    assert_int_equal(runs[1].id, good);
    assert_string_equal(runs[1].status, "ok");
    fa_trace *back = NULL;
    fa_test_check_ok(ctx, fa_store_load_trace(ctx, st, good, &back));
    fa_test_assert_traces_equal(t1, back);
    fa_trace_free(back);
    fa_arena_free(ar);
    fa_store_close(st);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT count(*) FROM kernels"), 20000);
    assert_integrity_ok(path);
    fa_trace_free(t1);
    fa_ctx_free(ctx);
}

static void test_process_killed_at_random_point_never_corrupts(void **state)
{
    (void)state;
    if (g_pg) skip(); /* SQLite WAL recovery and integrity_check */
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("killed-random");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_store_close(st);
    /* A writer storing runs in a loop, killed from outside at three different moments. */
    for (int round = 0; round < 3; round++) {
        /* The child reports its first finished run through a pipe, so the kill always lands
         * after at least one complete run however slow the machine (ASan, load) is. */
        int pfd[2];
        assert_int_equal(pipe(pfd), 0);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
            close(pfd[0]);
            fa_ctx *c = fa_ctx_create();
            fa_store *cs = NULL;
            if (fa_store_open(c, path, &cs)) _exit(1);
            fa_trace *t = fa_test_synth_trace(20000, 100, 5, 10 + (uint64_t)round, false);
            bool told = false;
            for (;;) {
                fa_run_info info = {0};
                info.kind = "run";
                info.model_path = "loop.onnx";
                int64_t id;
                if (fa_store_run_begin(c, cs, &info, &id)) _exit(2);
                if (fa_store_put_trace(c, cs, id, t)) _exit(3);
                if (fa_store_run_finish(c, cs, id, true, NULL)) _exit(4);
                if (!told) {
                    told = true;
                    if (write(pfd[1], "r", 1) != 1) _exit(5);
                    close(pfd[1]);
                }
            }
        }
        close(pfd[1]);
        char b;
        assert_int_equal(read(pfd[0], &b, 1), 1); /* blocks until the first run is stored */
        close(pfd[0]);
        usleep(50000 + 150000 * (useconds_t)round); /* then kill at different points of later runs */
        kill(child, SIGKILL);
        int wst;
        assert_int_equal(waitpid(child, &wst, 0), child);
        assert_true(WIFSIGNALED(wst));
    }
    st = fa_test_store_open_ok(ctx, path);
    fa_arena *ar = fa_arena_create(0);
    fa_run_info *runs;
    size_t n;
    fa_test_check_ok(ctx, fa_store_list_runs(ctx, st, ar, &runs, &n));
    assert_true(n >= 1);
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(runs[i].status, "ok")) {
            ok++;
            assert_int_equal(runs[i].n_kernels, 20000);
        } else {
            /* the run in flight at the kill: failed, with all or none of its records */
            assert_string_equal(runs[i].status, "failed");
            assert_string_equal(runs[i].error, "process died");
            assert_true(runs[i].n_kernels == 0 || runs[i].n_kernels == 20000);
        }
    }
    assert_true(ok >= 1);
    fa_arena_free(ar);
    fa_store_close(st);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT count(*) FROM kernels"),
                     fa_test_store_sql_i64(path, "SELECT sum(n_kernels) FROM runs"));
    assert_integrity_ok(path);
    fa_ctx_free(ctx);
}

static void test_two_processes_writing_at_once_both_succeed(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("concurrent");
    /* Neither process creates the file first: both race through creation and migration too. */
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        assert_true(kids[k] >= 0);
        if (kids[k] == 0) {
            fa_ctx *c = fa_ctx_create();
            fa_store *cs = NULL;
            fa_trace *t = fa_test_synth_trace(50000, 100, 5, 100 + (uint64_t)k, false);
            for (int r = 0; r < 3; r++) {
                if (!cs && fa_store_open(c, path, &cs)) {
                    fprintf(stderr, "writer %d: %s\n", k, fa_ctx_errmsg(c));
                    _exit(1);
                }
                fa_run_info info = {0};
                info.kind = "run";
                info.model_path = k ? "writer1.onnx" : "writer0.onnx";
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
    }
    for (int k = 0; k < 2; k++) {
        int wst = 0;
        assert_int_equal(waitpid(kids[k], &wst, 0), kids[k]);
        assert_true(WIFEXITED(wst));
        assert_int_equal(WEXITSTATUS(wst), 0);
    }
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT count(*) FROM runs WHERE status='ok'"), 6);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT count(*) FROM runs WHERE model_path='writer0.onnx'"), 3);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT count(*) FROM runs WHERE model_path='writer1.onnx'"), 3);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT count(*) FROM kernels"), 6 * 50000);
    if (!g_pg) assert_integrity_ok(path); /* the SQLite file's own check */
    fa_ctx_free(ctx);
}

static void test_readonly_file_reads_work_and_writes_fail_clearly(void **state)
{
    (void)state;
    if (g_pg) skip(); /* file permissions (test_store_backends opens a server read-only) */
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("readonly");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_trace *t = fa_test_synth_trace(1000, 10, 3, 5, false);
    int64_t id = fa_test_store_trace_run(ctx, st, "ro.onnx", t);
    fa_store_close(st);
    assert_int_equal(chmod(path, 0444), 0);
    size_t n0;
    uint8_t *before = read_all(path, &n0);

    st = fa_test_store_open_ok(ctx, path);
    assert_true(fa_store_readonly(st));
    fa_arena *ar = fa_arena_create(0);
    fa_run_info *runs;
    size_t n;
    fa_test_check_ok(ctx, fa_store_list_runs(ctx, st, ar, &runs, &n));
    assert_int_equal(n, 1);
    fa_trace *back = NULL;
    fa_test_check_ok(ctx, fa_store_load_trace(ctx, st, id, &back));
    fa_test_assert_traces_equal(t, back);
    fa_trace_free(back);
    fa_op_row *rows;
    size_t nr;
    int iters;
    fa_test_check_ok(ctx, fa_store_op_table(ctx, st, id, ar, &rows, &nr, &iters));
    assert_int_equal(nr, 10);

    fa_run_info info = {0};
    info.kind = "run";
    int64_t nid;
    assert_int_equal(fa_store_run_begin(ctx, st, &info, &nid), FA_ERR_IO);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), path));
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "read-only"));
    assert_int_equal(fa_store_put_trace(ctx, st, id, t), FA_ERR_IO);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "read-only"));
    fa_ceiling c = {"cpu:x", "bandwidth", "dram_bw", 10.0, "GB/s", "measured", 0, NULL};
    assert_int_equal(fa_store_put_ceiling(ctx, st, &c), FA_ERR_IO);
    fa_arena_free(ar);
    fa_store_close(st);

    size_t n1;
    uint8_t *after = read_all(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
    chmod(path, 0644);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

/* ---- round trips ---- */

static void test_100k_kernel_records_round_trip_equal(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("roundtrip");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_trace *t = fa_test_synth_trace(100000, 250, 10, 6, true); /* names with tabs, backslashes, ranges */
    t->source_path = fa_trace_intern(t, "/traces/x.json");
    t->n_clock_inversions = 3;
    t->n_parse_errors = 4;
    uint64_t t0 = fa_now_ns();
    int64_t id = fa_test_store_trace_run(ctx, st, "rt.onnx", t);
    uint64_t t1 = fa_now_ns();
    fprintf(stderr, "# stored 100000 records in %.3f s\n", (double)(t1 - t0) / 1e9);
    fa_store_close(st);
    st = fa_test_store_open_ok(ctx, path);
    fa_trace *back = NULL;
    fa_test_check_ok(ctx, fa_store_load_trace(ctx, st, id, &back));
    fa_test_assert_traces_equal(t, back);
    assert_string_equal(back->source_path, "/traces/x.json");
    assert_int_equal(back->n_clock_inversions, 3);
    assert_int_equal(back->n_parse_errors, 4);
    fa_arena *ar = fa_arena_create(0);
    fa_run_info r;
    fa_test_check_ok(ctx, fa_store_get_run(ctx, st, id, ar, &r));
    assert_int_equal(r.n_kernels, 100000);
    assert_true(r.iter_median_ns > 0);
    assert_string_equal(r.trace_source, "cpu-executor");
    fa_arena_free(ar);
    /* appending a second chunk continues the seq numbering */
    fa_trace *more = fa_test_synth_trace(10, 5, 1, 7, false);
    fa_test_check_ok(ctx, fa_store_put_trace(ctx, st, id, more));
    fa_trace *back2 = NULL;
    fa_test_check_ok(ctx, fa_store_load_trace(ctx, st, id, &back2));
    assert_int_equal(back2->n_acts, 100010);
    assert_true(fa_test_str_eq(back2->acts[100000].name, more->acts[0].name));
    assert_int_equal(back2->acts[100009].start_ns, more->acts[9].start_ns);
    fa_trace_free(back2);
    fa_trace_free(more);
    fa_trace_free(back);
    fa_store_close(st);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

static void test_graph_edges_rebuild_from_database_alone(void **state)
{
    (void)state;
    if (g_pg) skip(); /* raw SQLite reads of the graph rows */
    fa_ctx *ctx = fa_ctx_create();
    /* X -> Relu -> A ; A -> Sigmoid -> B ; (A, B) -> Add -> C (graph output) */
    fa_graph *g = fa_graph_create("edges");
    const char *in_relu[] = {"X"}, *out_relu[] = {"A"};
    const char *in_sig[] = {"A"}, *out_sig[] = {"B"};
    const char *in_add[] = {"A", "B"}, *out_add[] = {"C"};
    assert_non_null(fa_graph_add_node(ctx, g, "relu0", "Relu", "", 1, in_relu, 1, out_relu));
    assert_non_null(fa_graph_add_node(ctx, g, "sig0", "Sigmoid", "", 1, in_sig, 1, out_sig));
    assert_non_null(fa_graph_add_node(ctx, g, "add0", "Add", "", 2, in_add, 1, out_add));
    int64_t dims[2] = {2, 8};
    const char *names[] = {"X", "A", "B", "C"};
    for (int i = 0; i < 4; i++) fa_tensor_set_shape(g->tensors[fa_graph_find_tensor(g, names[i])], FA_DTYPE_FLOAT, 2, dims);
    fa_test_check_ok(ctx, fa_graph_add_input(ctx, g, fa_graph_find_tensor(g, "X")));
    fa_test_check_ok(ctx, fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "C")));
    fa_test_check_ok(ctx, fa_graph_index(ctx, g));

    const char *path = fa_test_store_fresh("graph");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_run_info info = {0};
    info.kind = "run";
    int64_t id;
    fa_test_check_ok(ctx, fa_store_run_begin(ctx, st, &info, &id));
    fa_test_check_ok(ctx, fa_store_put_graph(ctx, st, id, g));
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, st, id, true, NULL));
    fa_store_close(st);

    /* producer -> consumer edges by SQL alone, compared with the graph's own */
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT p.name, t.name, c.name FROM consumers e "
                                        "JOIN tensors t ON t.run_id = e.run_id AND t.tensor_id = e.tensor_id "
                                        "JOIN nodes p ON p.run_id = t.run_id AND p.node_id = t.producer "
                                        "JOIN nodes c ON c.run_id = e.run_id AND c.node_id = e.node_id "
                                        "WHERE e.run_id = ? ORDER BY p.node_id, c.node_id, e.input_index",
                                        -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(q, 1, id);
    const char *want[][3] = {{"relu0", "A", "sig0"}, {"relu0", "A", "add0"}, {"sig0", "B", "add0"}};
    int k = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        assert_true(k < 3);
        assert_string_equal((const char *)sqlite3_column_text(q, 0), want[k][0]);
        assert_string_equal((const char *)sqlite3_column_text(q, 1), want[k][1]);
        assert_string_equal((const char *)sqlite3_column_text(q, 2), want[k][2]);
        k++;
    }
    assert_int_equal(k, 3);
    sqlite3_finalize(q);
    /* node costs and tensor facts as the registry computes them */
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT node_id, flops, bytes_read, bytes_written, output_shapes, pattern "
                                            "FROM nodes WHERE run_id = ? ORDER BY node_id", -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(q, 1, id);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        fa_op_cost cost;
        fa_node_cost(g, g->nodes[i], &cost);
        assert_int_equal(sqlite3_column_int64(q, 1), (int64_t)cost.flops);
        assert_int_equal(sqlite3_column_int64(q, 2), (int64_t)cost.bytes_read);
        assert_int_equal(sqlite3_column_int64(q, 3), (int64_t)cost.bytes_written);
        assert_int_equal(sqlite3_column_int64(q, 3), 64); /* 2x8 fp32 */
        assert_string_equal((const char *)sqlite3_column_text(q, 4), "2x8");
        if (g->nodes[i]->op) assert_int_equal(sqlite3_column_int(q, 5), g->nodes[i]->op->pattern);
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT is_graph_input FROM tensors WHERE name='X'"), 1);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT is_graph_output FROM tensors WHERE name='C'"), 1);
    assert_int_equal(fa_test_store_sql_i64(path, "SELECT bytes FROM tensors WHERE name='A'"), 64);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* ---- op table ---- */

static void add_kernel(fa_trace *t, int node, const char *name, const char *op, int iter, uint64_t start, uint64_t dur)
{
    fa_activity a = fa_activity_init(FA_ACT_KERNEL);
    a.node = node;
    a.node_name = fa_trace_intern(t, name);
    a.name = fa_trace_intern(t, name);
    a.op_type = fa_trace_intern(t, op);
    a.iter = iter;
    a.start_ns = start;
    a.end_ns = start + dur;
    fa_trace_add(t, &a);
}

static void test_op_table_median_share_and_kernel_count(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = fa_trace_create("cpu-executor");
    t->n_iters = 3;
    /* warm-up (iter -1) records must not count */
    add_kernel(t, 0, "conv0", "Conv", -1, 0, 999999);
    /* conv0: 10, 30, 20 -> median 20 ; relu1: two kernels per iter: 5+5, 5+5, 100+0 -> 10 ;
     * add2: only in iteration 2, 60 -> samples 0, 0, 60 -> median 0 */
    uint64_t c = 1000000;
    uint64_t conv[3] = {10, 30, 20}, relu_a[3] = {5, 5, 100}, relu_b[3] = {5, 5, 0};
    for (int it = 0; it < 3; it++) {
        add_kernel(t, 0, "conv0", "Conv", it, c, conv[it]);
        c += 1000;
        add_kernel(t, 1, "relu1", "Relu", it, c, relu_a[it]);
        c += 1000;
        add_kernel(t, 1, "relu1", "Relu", it, c, relu_b[it]);
        c += 1000;
        if (it == 2) add_kernel(t, 2, "add2", "Add", it, c, 60);
        c += 1000;
    }
    /* a memcpy is not a kernel */
    fa_activity m = fa_activity_init(FA_ACT_MEMCPY);
    m.iter = 0;
    m.start_ns = c;
    m.end_ns = c + 100000;
    fa_trace_add(t, &m);

    const char *path = fa_test_store_fresh("optable");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    int64_t id = fa_test_store_trace_run(ctx, st, "ops.onnx", t);
    fa_arena *ar = fa_arena_create(0);
    fa_op_row *rows;
    size_t n;
    int iters = 0;
    fa_test_check_ok(ctx, fa_store_op_table(ctx, st, id, ar, &rows, &n, &iters));
    assert_int_equal(iters, 3);
    assert_int_equal(n, 3);
    assert_string_equal(rows[0].node_name, "conv0");
    assert_int_equal(rows[0].node, 0);
    assert_string_equal(rows[0].op_type, "Conv");
    assert_int_equal(rows[0].median_ns, 20);
    assert_int_equal(rows[0].kernels, 3);
    assert_string_equal(rows[1].node_name, "relu1");
    assert_int_equal(rows[1].median_ns, 10);
    assert_int_equal(rows[1].kernels, 6);
    assert_string_equal(rows[2].node_name, "add2");
    assert_int_equal(rows[2].median_ns, 0);
    assert_int_equal(rows[2].kernels, 1);
    assert_float_equal(rows[0].share, 20.0 / 30.0, 1e-12);
    assert_float_equal(rows[1].share, 10.0 / 30.0, 1e-12);
    /* iteration latency: last end - first start per timed iteration, median */
    fa_run_info r;
    fa_test_check_ok(ctx, fa_store_get_run(ctx, st, id, ar, &r));
    assert_int_equal(r.iter_median_ns, 2005); /* it0: 2005, it1: 2005, it2: 3060 */
    fa_arena_free(ar);
    fa_store_close(st);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

/* ---- ceilings ---- */

static void test_ceilings_put_replace_and_get_per_device(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("ceil");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_ceiling a = {"cpu:test:2", "bandwidth", "dram_bw", 20.5, "GB/s", "measured", 111, "triad 3x256 MiB"};
    fa_ceiling b = {"cpu:test:2", "compute", "fp32_peak", 300.0, "GFLOP/s", "measured", 112, NULL};
    fa_ceiling c = {"cuda:H200:sm_90", "limit", "max_warps_per_sm", 64, "count", "table", 113, "CUDA C Programming Guide, table 21"};
    fa_test_check_ok(ctx, fa_store_put_ceiling(ctx, st, &a));
    fa_test_check_ok(ctx, fa_store_put_ceiling(ctx, st, &b));
    fa_test_check_ok(ctx, fa_store_put_ceiling(ctx, st, &c));
    a.value = 21.0;
    a.measured_at_ns = 222;
    fa_test_check_ok(ctx, fa_store_put_ceiling(ctx, st, &a)); /* re-measure replaces */
    fa_arena *ar = fa_arena_create(0);
    fa_ceiling *v;
    size_t n;
    fa_test_check_ok(ctx, fa_store_get_ceilings(ctx, st, "cpu:test:2", ar, &v, &n));
    assert_int_equal(n, 2);
    assert_string_equal(v[0].name, "dram_bw");
    assert_float_equal(v[0].value, 21.0, 0);
    assert_int_equal(v[0].measured_at_ns, 222);
    assert_string_equal(v[0].detail, "triad 3x256 MiB");
    assert_string_equal(v[1].name, "fp32_peak");
    assert_null(v[1].detail);
    fa_test_check_ok(ctx, fa_store_get_ceilings(ctx, st, NULL, ar, &v, &n));
    assert_int_equal(n, 3);
    assert_string_equal(v[2].source, "table");
    a.detail = NULL; /* a re-measure without a detail clears the old one */
    fa_test_check_ok(ctx, fa_store_put_ceiling(ctx, st, &a));
    fa_test_check_ok(ctx, fa_store_get_ceilings(ctx, st, "cpu:test:2", ar, &v, &n));
    assert_int_equal(n, 2);
    assert_null(v[0].detail);
    fa_arena_free(ar);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* ---- verbs ---- */

static bool cli_available(void)
{
    const char *cli = getenv("FA_CLI");
    return cli && access(cli, X_OK) == 0;
}

static void test_runs_and_show_verbs_print_tables_and_json(void **state)
{
    (void)state;
    if (!cli_available()) skip();
    fa_ctx *ctx = fa_ctx_create();
    const char *path = fa_test_store_fresh("verbs");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    fa_trace *t = fa_trace_create("cpu-executor");
    t->n_iters = 2;
    add_kernel(t, 0, "conv \"<0>\"", "Conv", 0, 1000, 3000000);
    add_kernel(t, 1, "relu1", "Relu", 0, 4000000, 1000000);
    add_kernel(t, 0, "conv \"<0>\"", "Conv", 1, 6000000, 3000000);
    add_kernel(t, 1, "relu1", "Relu", 1, 9000000, 1000000);
    int64_t id = fa_test_store_trace_run(ctx, st, "zoo:tiny", t);
    fa_store_close(st);
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", (long long)id);

    char *out = NULL, *err = NULL;
    const char *runs_argv[] = {"runs", "--db", path, NULL};
    assert_int_equal(fa_test_run_cli(runs_argv, &out, &err), 0);
    assert_non_null(strstr(out, "zoo:tiny"));
    assert_non_null(strstr(out, "ok"));
    /* iteration spans 4.999 ms and 4.000 ms: core's median (type 7) is their mean, 4.4995 ms */
    assert_non_null(strstr(out, "4.500 ms"));
    free(out);
    free(err);
    const char *runs_json[] = {"runs", "--db", path, "--json", NULL};
    assert_int_equal(fa_test_run_cli(runs_json, &out, &err), 0);
    assert_non_null(strstr(out, "\"model_path\":\"zoo:tiny\""));
    assert_non_null(strstr(out, "\"status\":\"ok\""));
    free(out);
    free(err);
    const char *show_argv[] = {"show", ids, "--db", path, NULL};
    assert_int_equal(fa_test_run_cli(show_argv, &out, &err), 0);
    assert_non_null(strstr(out, "relu1"));
    assert_non_null(strstr(out, "75.0")); /* conv: 3 of 4 ms */
    free(out);
    free(err);
    const char *show_json[] = {"show", ids, "--db", path, "--json", NULL};
    assert_int_equal(fa_test_run_cli(show_json, &out, &err), 0);
    assert_non_null(strstr(out, "\"node_name\":\"conv \\\"\\u003c0>\\\"\""));
    assert_non_null(strstr(out, "\"median_ns\":3000000"));
    free(out);
    free(err);
    /* a run that does not exist, and a database that does not exist */
    const char *show_missing[] = {"show", "999", "--db", path, NULL};
    assert_int_equal(fa_test_run_cli(show_missing, &out, &err), 1);
    assert_non_null(strstr(err, "no run 999"));
    free(out);
    free(err);
    const char *nodb = fa_test_path(fa_test_tmpdir(), "nope.db");
    const char *runs_nodb[] = {"runs", "--db", nodb, NULL};
    assert_int_equal(fa_test_run_cli(runs_nodb, &out, &err), 1);
    assert_non_null(strstr(err, "nope.db"));
    assert_int_equal(access(nodb, F_OK), -1);
    free(out);
    free(err);
    const char *show_bad[] = {"show", "abc", "--db", path, NULL};
    assert_int_equal(fa_test_run_cli(show_bad, &out, &err), 2);
    free(out);
    free(err);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

int main(void)
{
    g_pg = fa_test_store_backend_init("test_store");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_created_at_current_version_and_reopen_keeps_runs),
        cmocka_unit_test(test_migration_from_v1_keeps_runs_and_adds_later_tables),
        cmocka_unit_test(test_migration_from_v4_moves_cluster_details_into_columns),
        cmocka_unit_test(test_migration_from_v5_adds_the_e2e_verdict_and_keeps_plans),
        cmocka_unit_test(test_migration_from_v6_adds_score_bytes_and_keeps_clusters),
        cmocka_unit_test(test_plan_round_trip_keeps_every_cluster_column),
        cmocka_unit_test(test_plan_layout_round_trips),
        cmocka_unit_test(test_migration_from_v9_adds_the_plan_layout),
        cmocka_unit_test(test_migration_from_v12_adds_the_prediction_interval),
        cmocka_unit_test(test_newer_schema_version_refused_and_file_unchanged),
        cmocka_unit_test(test_not_sqlite_file_refused_and_untouched),
        cmocka_unit_test(test_failed_run_is_marked_and_earlier_runs_stay_intact),
        cmocka_unit_test(test_process_killed_mid_transaction_leaves_earlier_runs_and_marks_it_failed),
        cmocka_unit_test(test_process_killed_at_random_point_never_corrupts),
        cmocka_unit_test(test_two_processes_writing_at_once_both_succeed),
        cmocka_unit_test(test_readonly_file_reads_work_and_writes_fail_clearly),
        cmocka_unit_test(test_100k_kernel_records_round_trip_equal),
        cmocka_unit_test(test_graph_edges_rebuild_from_database_alone),
        cmocka_unit_test(test_op_table_median_share_and_kernel_count),
        cmocka_unit_test(test_ceilings_put_replace_and_get_per_device),
        cmocka_unit_test(test_runs_and_show_verbs_print_tables_and_json),
    };
    return cmocka_run_group_tests_name(g_pg ? "test_store on postgresql" : "test_store on sqlite", tests, NULL, NULL);
}
