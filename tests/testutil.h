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

#include "graph/graph.h"
#include "store/store.h"
/* Load `model` (path or zoo:NAME), run it unfused on cpu for `iters` timed iterations (1
 * warm-up) with the collector, and store graph + trace as a new run in st. */
fa_status fa_test_store_run(fa_ctx *ctx, fa_store *st, const char *model, int iters, int64_t *run_id);
/* Same for an already prepared graph (caller keeps ownership). */
fa_status fa_test_store_graph_run(fa_ctx *ctx, fa_store *st, const fa_graph *g, int iters, int64_t *run_id);
