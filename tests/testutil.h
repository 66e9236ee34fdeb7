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
/* path join into static rotating buffers */
const char *fa_test_path(const char *a, const char *b);

#endif
