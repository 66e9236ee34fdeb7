/* cli/reload — reload a stored run's model exactly as the run loaded it (same file, checked by
 * SHA-256, same --batch/--shape/--no-fold from its recorded command line). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "store/store.h"

fa_status fa_cli_reload_model(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *ar, fa_run_info *ri, fa_graph **out)
{
    fa_status s = fa_store_get_run(ctx, st, run_id, ar, ri);
    if (s) return s;
    if (!ri->model_path || (ri->kind && strcmp(ri->kind, "run")))
        return fa_ctx_error(ctx, FA_ERR_INPUT, "run %" PRId64 " is of kind '%s', not a model run: there is no graph to work on",
                            run_id, ri->kind ? ri->kind : "?");
    /* The path comes from the database (untrusted): the file is loaded as a model first, with the
     * loader's limits, and hashed only once it is one — a doctored model_path had `apply` read and
     * hash any file (/etc/shadow: an oracle for its hash; a 4 GiB file: 12 s) before the hash
     * comparison refused it (the seventh attack pass). What the file hashes to is never shown. */
    fa_cli_model_opts mo;
    fa_cli_model_opts_from_command_line(ctx, ri->command_line, &mo);
    fa_load_options lo = fa_cli_load_options(&mo);
    s = fa_graph_load(ctx, ri->model_path, &lo, out);
    if (s) return fa_ctx_wrap(ctx, s, "run %" PRId64 ": cannot load its model again: ", run_id);
    if (ri->model_sha256 && ri->model_sha256[0] && strncmp(ri->model_path, "zoo:", 4)) {
        char sha[65];
        s = fa_sha256_file(ctx, ri->model_path, sha);
        if (!s && strcmp(sha, ri->model_sha256))
            s = fa_ctx_error(ctx, FA_ERR_INPUT,
                             "%s changed since run %" PRId64 " (its SHA-256 is no longer the recorded %.12s...): run it "
                             "again",
                             ri->model_path, run_id, ri->model_sha256);
        else if (s)
            s = fa_ctx_wrap(ctx, s, "run %" PRId64 ": cannot read its model again: ", run_id);
        if (s) {
            fa_graph_free(*out);
            *out = NULL;
            return s;
        }
    }
    /* the run's --max-memory, when it had one, stays the limit of what runs it again */
    int64_t max_mem = 0;
    const char *mm = ri->command_line ? strstr(ri->command_line, "--max-memory") : NULL;
    if (mm) {
        mm += strlen("--max-memory");
        if (*mm == '=' || *mm == ' ') max_mem = strtoll(mm + 1, NULL, 10);
        if (max_mem < 0) max_mem = 0;
    }
    if (!s) fa_cli_memory_policy(*out, max_mem);
    return s;
}
