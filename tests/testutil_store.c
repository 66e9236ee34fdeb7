/* tests/testutil_store — the run-store tests' shared builders: the back end under test (an SQLite
 * file, or a throw-away PostgreSQL server from scripts/pg-test-server.sh), fresh stores, raw
 * reads behind the typed API, synthetic traces and stored runs. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#ifdef FA_HAVE_LIBPQ
#include <libpq-fe.h>
#endif

static bool g_pg;            /* the PostgreSQL variant */
static char g_pg_dir[4096];  /* the test server's folder */
static char g_pg_base[4096]; /* postgresql://fa@127.0.0.1:PORT/ (database appended) */

static void stop_server(void)
{
    if (!g_pg_dir[0]) return;
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "bash '%s/scripts/pg-test-server.sh' stop '%s'", getenv("FA_SOURCE_DIR"), g_pg_dir);
    if (system(cmd) != 0) fprintf(stderr, "testutil: could not stop the test server in %s\n", g_pg_dir);
}

/* Start the test server; exit 77 when it cannot exist here (skipped), unless FA_PG_REQUIRED. */
static void start_server(const char *who)
{
    const char *req = getenv("FA_PG_REQUIRED");
    bool required = req && !strcmp(req, "1");
#ifndef FA_HAVE_LIBPQ
    fprintf(stderr, "%s: built without libpq: the PostgreSQL store is not tested\n", who);
    exit(required ? 1 : 77);
#endif
    const char *src = getenv("FA_SOURCE_DIR");
    if (!src) {
        fprintf(stderr, "%s: FA_SOURCE_DIR unset\n", who);
        exit(1);
    }
    char cmd[4300], line[8400] = "";
    snprintf(cmd, sizeof cmd, "bash '%s/scripts/pg-test-server.sh' start %d", src, (int)getpid());
    FILE *p = popen(cmd, "r");
    if (!p || !fgets(line, sizeof line, p)) line[0] = 0;
    int rc = p ? pclose(p) : -1;
    int code = rc >= 0 && WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
    char uri[4200];
    if (code != 0 || sscanf(line, "%4095s %4199s", g_pg_dir, uri) != 2) {
        g_pg_dir[0] = 0;
        fprintf(stderr, "%s: no PostgreSQL test server (exit %d)%s\n", who, code, required ? " and FA_PG_REQUIRED=1" : "");
        exit(code == 77 && !required ? 77 : 1);
    }
    atexit(stop_server);
    char *slash = strrchr(uri, '/');
    slash[1] = 0; /* the base: databases are appended */
    snprintf(g_pg_base, sizeof g_pg_base, "%s", uri);
}

bool fa_test_store_backend_init(const char *who)
{
    const char *which = getenv("FA_TEST_STORE");
    g_pg = which && !strcmp(which, "postgresql");
    if (g_pg) start_server(who);
    return g_pg;
}

bool fa_test_store_on_pg(void) { return g_pg; }

const char *fa_test_store_server_dir(void) { return g_pg_dir; }

int64_t fa_test_pg_sql(const char *db, const char *sql)
{
#ifdef FA_HAVE_LIBPQ
    char uri[4200];
    snprintf(uri, sizeof uri, "%s%s", g_pg_base, db);
    PGconn *c = PQconnectdb(uri);
    if (PQstatus(c) != CONNECTION_OK) fail_msg("connect %s: %s", uri, PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    ExecStatusType k = PQresultStatus(r);
    if (k != PGRES_COMMAND_OK && k != PGRES_TUPLES_OK) fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    int64_t v = k == PGRES_TUPLES_OK && PQntuples(r) > 0 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    PQfinish(c);
    return v;
#else
    (void)db;
    fail_msg("%s: this build has no libpq", sql);
    return 0;
#endif
}

const char *fa_test_store_fresh(const char *name)
{
    static int counter;
    static char keep[16][4200];
    static int slot;
    char *k = keep[slot++ & 15];
    if (g_pg) {
        char db[96], sql[160];
        snprintf(db, sizeof db, "%s_%d", name, counter++);
        for (char *p = db; *p; p++)
            if (*p == '-') *p = '_'; /* a database name without quoting */
        snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
        fa_test_pg_sql("postgres", sql);
        snprintf(k, 4200, "%s%s", g_pg_base, db);
    } else {
        char leaf[128];
        snprintf(leaf, sizeof leaf, "%s-%d.db", name, counter++);
        snprintf(k, 4200, "%s", fa_test_path(fa_test_tmpdir(), leaf));
        unlink(k);
    }
    return k;
}

int64_t fa_test_store_sql_i64(const char *path, const char *sql)
{
    if (fa_store_path_is_pg(path)) {
        char full[4096];
        snprintf(full, sizeof full, "SET search_path TO fuse_advise; %s", sql);
        return fa_test_pg_sql(strrchr(path, '/') + 1, full);
    }
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) fail_msg("open %s", path);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

void fa_test_check_ok(fa_ctx *ctx, fa_status s)
{
    if (s) fprintf(stderr, "unexpected error: %s\n", fa_ctx_errmsg(ctx));
    assert_int_equal(s, FA_OK);
}

fa_store *fa_test_store_open_ok(fa_ctx *ctx, const char *path)
{
    fa_store *st = NULL;
    fa_status s = fa_store_open(ctx, path, &st);
    if (s) fprintf(stderr, "open failed: %s\n", fa_ctx_errmsg(ctx));
    assert_int_equal(s, FA_OK);
    assert_non_null(st);
    assert_string_equal(fa_store_backend_name(st), fa_store_path_is_pg(path) ? "postgresql" : "sqlite");
    return st;
}

fa_trace *fa_test_synth_trace(size_t n, int nodes, int iters, uint64_t seed, bool hard)
{
    fa_trace *t = fa_trace_create("cpu-executor");
    t->device_name = fa_trace_intern(t, "Test CPU \xc3\xa9");
    t->n_iters = iters;
    t->n_orphans = seed % 3;
    fa_rng r;
    fa_rng_seed(&r, seed);
    uint64_t clock = 1000000000000ull + seed;
    static const char *const ops[] = {"Conv", "Relu", "Add", "MatMul", "Softmax"};
    static const char *const hard_ops[] = {"Conv", "Relu", "Add", "MatMul", "Soft\tmax\\n"};
    for (size_t i = 0; i < n; i++) {
        fa_activity_kind kind = i % 17 == 16 ? FA_ACT_MEMCPY : hard && i % 19 == 18 ? FA_ACT_RANGE : FA_ACT_KERNEL;
        fa_activity a = fa_activity_init(kind);
        int node = (int)(i % (size_t)nodes);
        const char *op = (hard ? hard_ops : ops)[node % 5];
        char nm[64];
        snprintf(nm, sizeof nm, "%s_%d", op, node);
        a.name = fa_trace_intern(t, nm);
        a.op_type = (i % 11 == 5) ? NULL : fa_trace_intern(t, op);
        a.node_name = (i % 13 == 7)  ? NULL
                      : node % 7 == 3 ? fa_trace_intern(t, hard ? "n\xe2\x86\x92\"<x>\"\nline2\r" : "n\xe2\x86\x92\"<x>\"")
                                      : fa_trace_intern(t, nm);
        a.node = node;
        a.iter = (int32_t)((i / (size_t)nodes) % (size_t)(iters + 1)) - 1; /* -1 = warm-up */
        a.device = (int32_t)(fa_rng_u64(&r) % 3) - 1;
        a.stream = (int64_t)(fa_rng_u64(&r) % 1000);
        a.pid = 4242;
        a.tid = (int64_t)(fa_rng_u64(&r) % 8) + 100000;
        a.start_ns = clock;
        clock += 1000 + fa_rng_u64(&r) % 100000;
        a.end_ns = clock;
        clock += fa_rng_u64(&r) % 500;
        a.correlation = (int64_t)i * 3 - 1;
        a.external_id = (i % 5) ? (int64_t)i : -1;
        for (int k = 0; k < 3; k++) {
            a.grid[k] = (int32_t)(fa_rng_u64(&r) % 65536);
            a.block[k] = (int32_t)(fa_rng_u64(&r) % 1024);
        }
        a.registers = (int32_t)(fa_rng_u64(&r) % 256);
        a.static_smem = (int32_t)(fa_rng_u64(&r) % 49152);
        a.dynamic_smem = (int32_t)(fa_rng_u64(&r) % 200000);
        a.local_mem = (int32_t)(fa_rng_u64(&r) % 64);
        a.bytes_read = fa_rng_u64(&r) >> 20;
        a.bytes_written = fa_rng_u64(&r) >> 24;
        a.flops = fa_rng_u64(&r) >> 12; /* within FA_STORE_QUANTITY_MAX, as every reader requires */
        a.occupancy = (i % 4) ? fa_rng_uniform(&r, 0.0f, 1.0f) : -1.0f;
        a.flags = (unsigned)(fa_rng_u64(&r) & 7);
        fa_trace_add(t, &a);
    }
    return t;
}

bool fa_test_str_eq(const char *a, const char *b)
{
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

void fa_test_assert_traces_equal(const fa_trace *x, const fa_trace *y)
{
    assert_int_equal(x->n_acts, y->n_acts);
    assert_string_equal(x->source, y->source);
    assert_true(fa_test_str_eq(x->device_name, y->device_name));
    assert_int_equal(x->n_iters, y->n_iters);
    assert_int_equal(x->n_orphans, y->n_orphans);
    for (size_t i = 0; i < x->n_acts; i++) {
        const fa_activity *a = &x->acts[i], *b = &y->acts[i];
        if (!(a->kind == b->kind && fa_test_str_eq(a->name, b->name) && fa_test_str_eq(a->op_type, b->op_type) &&
              fa_test_str_eq(a->node_name, b->node_name) && a->node == b->node && a->iter == b->iter &&
              a->device == b->device && a->stream == b->stream && a->pid == b->pid && a->tid == b->tid &&
              a->start_ns == b->start_ns && a->end_ns == b->end_ns && a->correlation == b->correlation &&
              a->external_id == b->external_id && !memcmp(a->grid, b->grid, sizeof a->grid) &&
              !memcmp(a->block, b->block, sizeof a->block) && a->registers == b->registers &&
              a->static_smem == b->static_smem && a->dynamic_smem == b->dynamic_smem &&
              a->local_mem == b->local_mem && a->bytes_read == b->bytes_read &&
              a->bytes_written == b->bytes_written && a->flops == b->flops && a->occupancy == b->occupancy &&
              a->flags == b->flags))
            fail_msg("activity %zu differs after the round trip", i);
    }
}

int64_t fa_test_store_begin_run(fa_ctx *ctx, fa_store *st, const char *model, const char *tag, int iters)
{
    fa_run_info info = {0};
    info.kind = "run";
    info.model_path = model;
    info.target = "cpu";
    info.threads = 2;
    info.iters = iters;
    info.warmup = 1;
    info.tag = tag;
    info.command_line = "fuse-advise run test";
    int64_t id = 0;
    fa_test_check_ok(ctx, fa_store_run_begin(ctx, st, &info, &id));
    assert_true(id > 0);
    return id;
}

int64_t fa_test_store_trace_run(fa_ctx *ctx, fa_store *st, const char *model, const fa_trace *t)
{
    int64_t id = fa_test_store_begin_run(ctx, st, model, NULL, t ? t->n_iters : 0);
    if (t) fa_test_check_ok(ctx, fa_store_put_trace(ctx, st, id, t));
    fa_test_check_ok(ctx, fa_store_run_finish(ctx, st, id, true, NULL));
    return id;
}
