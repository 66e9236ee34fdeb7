/* tests/testutil — helpers shared by the cmocka tests: corpus location, temp dirs, CLI runs. */
#ifndef FA_TESTUTIL_H
#define FA_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/core.h"

/* Path of ../shared/corpus (env FA_CORPUS), or NULL if it does not exist. */
const char *fa_test_corpus(void);
/* Exit 77 (ctest: skipped) with a message when the corpus is absent. */
void fa_test_require_corpus(void);
/* Fresh private temp dir (mkdtemp), removed at exit. Returned string is static storage. */
const char *fa_test_tmpdir(void);
/* Run the fuse-advise CLI with argv (NULL-terminated, without argv[0]); returns exit code;
 * stdout/stderr captured into malloc'd strings if non-NULL (caller frees). */
int fa_test_run_cli(const char *const *argv, char **out, char **err);
/* A pipe whose write end a child process fills with the bytes of the file at path, then
 * closes: returns the read end (caller closes it; the child is reaped by fa_test_pipe_reap),
 * -1 on failure. For tests of input read from pipes, /dev/stdin, /dev/fd/N. */
int fa_test_pipe_file(const char *path);
/* Reap every child fa_test_pipe_file started. */
void fa_test_pipe_reap(void);
/* path join into static rotating buffers */
const char *fa_test_path(const char *a, const char *b);

#endif

#include <stdbool.h>

#include "graph/graph.h"
#include "store/store.h"
/* Load `model` (path or zoo:NAME), run it unfused on cpu for `iters` timed iterations (1
 * warm-up) with the collector, and store graph + trace as a new run in st. */
fa_status fa_test_store_run(fa_ctx *ctx, fa_store *st, const char *model, int iters, int64_t *run_id);
/* Same for an already prepared graph (caller keeps ownership). */
fa_status fa_test_store_graph_run(fa_ctx *ctx, fa_store *st, const fa_graph *g, int iters, int64_t *run_id);
/* Store g and the given trace t (t->n_iters timed iterations, 1 warm-up) as a new finished cpu
 * run in st; both stay the caller's. */
fa_status fa_test_store_graph_trace(fa_ctx *ctx, fa_store *st, const fa_graph *g, const fa_trace *t, int64_t *run_id);
/* A constant float initializer `name` of the given shape in g, values uniform in [lo, hi) from
 * seed (fa_rng); asserts on failure. */
void fa_test_add_const(fa_ctx *ctx, fa_graph *g, const char *name, int rank, const int64_t *dims, float lo, float hi,
                       int seed);

/* ---- run-store tests on either back end (tests/testutil_store.c) ---- */
/* The back end a store test runs on, chosen once from main: FA_TEST_STORE=postgresql starts a
 * throw-away server (scripts/pg-test-server.sh, stopped at exit) and returns true; where it cannot
 * exist (no server binaries, a build without libpq) the process exits 77 (ctest: skipped), or 1
 * under FA_PG_REQUIRED=1 (.ci/run). Unset or "sqlite": SQLite files, false. `who` names the test
 * in messages. */
bool fa_test_store_backend_init(const char *who);
bool fa_test_store_on_pg(void);
/* The test server's folder (for scripts/pg-test-server.sh restart/kill); "" on SQLite. */
const char *fa_test_store_server_dir(void);
/* A store nobody used yet: a new SQLite file in the temp dir, or a new database on the test
 * server (its URI). Static storage, 16 kept at once. */
const char *fa_test_store_fresh(const char *name);
/* SQL on the test server's database `db` ("postgres" for CREATE DATABASE), behind the typed API;
 * fails the test on error; the first value of the first row as an integer (0 when none). */
int64_t fa_test_pg_sql(const char *db, const char *sql);
/* One integer read behind the typed API from the store at path (an SQLite file opened read-only,
 * or the server database with search_path fuse_advise); 0 when no row. */
int64_t fa_test_store_sql_i64(const char *path, const char *sql);
/* Fail the test with ctx's message unless s is FA_OK. */
void fa_test_check_ok(fa_ctx *ctx, fa_status s);
/* fa_store_open that must succeed, on the back end path names. */
fa_store *fa_test_store_open_ok(fa_ctx *ctx, const char *path);
/* Deterministic trace: n records over `iters` iterations of `nodes` nodes, every field populated
 * (some strings NULL, some non-ASCII, values past 2^32); `hard` adds range records and names
 * with tabs, newlines, backslashes. Caller frees. */
fa_trace *fa_test_synth_trace(size_t n, int nodes, int iters, uint64_t seed, bool hard);
bool fa_test_str_eq(const char *a, const char *b); /* both NULL, or equal strings */
/* Fail the test unless x and y hold the same activities, field by field. */
void fa_test_assert_traces_equal(const fa_trace *x, const fa_trace *y);
/* A run of kind 'run' on cpu begun (status 'running'): its id. */
int64_t fa_test_store_begin_run(fa_ctx *ctx, fa_store *st, const char *model, const char *tag, int iters);
/* A complete run ('ok') holding trace t (NULL: no trace): its id. */
int64_t fa_test_store_trace_run(fa_ctx *ctx, fa_store *st, const char *model, const fa_trace *t);
