/* cli/cmd_copy_runs — `fuse-advise export-runs --to DEST` and `fuse-advise import-runs SRC`: move
 * run history between run databases (an SQLite file and a team's PostgreSQL server, either way)
 * through fa_store_copy_runs. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "store/store.h"

static const char *k_about_export =
    "  Copy runs of SRC (--db; default $FUSE_ADVISE_DB, else ./" FA_STORE_DEFAULT_PATH ") into DEST:\n"
    "  a file path or a postgresql:// URI (created when missing).\n";
static const char *k_about_import =
    "  Copy runs of SRC (a file path or a postgresql:// URI) into DEST (--db; default\n"
    "  $FUSE_ADVISE_DB, else ./" FA_STORE_DEFAULT_PATH ").\n";
static const char *k_epilogue =
    "Selection: RUN ids of the source, else every run; --model M: runs whose model path contains\n"
    "M; --tag T: runs tagged T. A run brings its fused twin (a twin selected without its run is\n"
    "not copied). Each run gets a new id in the destination (one line counts what was copied);\n"
    "runs the destination already holds, and runs still running, are not copied, so repeating a\n"
    "copy adds nothing. Device ceilings are merged. Details: docs/ci.md.\n";

#define MAX_IDS 4096

static int copy_runs(fa_ctx *ctx, int argc, char **argv, bool export_verb)
{
    const char *verb = export_verb ? "export-runs" : "import-runs";
    const char *src = NULL, *dst = NULL, *model = NULL, *tag = NULL;
    const fa_cli_opt export_opts[] = {
        FA_CLI_STRING("--to", "DEST", &dst, "the database the runs go to: a file or a postgresql:// URI"),
        FA_CLI_STRING("--db", "SRC", &src, "the database the runs come from"),
        FA_CLI_STRING("--model", "M", &model, "runs whose model path contains M"),
        FA_CLI_STRING("--tag", "T", &tag, "runs tagged T"),
        FA_CLI_END,
    };
    const fa_cli_opt import_opts[] = {
        FA_CLI_STRING("--db", "DEST", &dst, "the database the runs go to"),
        FA_CLI_STRING("--model", "M", &model, "runs whose model path contains M"),
        FA_CLI_STRING("--tag", "T", &tag, "runs tagged T"),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = verb,
                              .synopsis = export_verb ? "--to DEST [options] [RUN ...]" : "SRC [options] [RUN ...]",
                              .about = export_verb ? k_about_export : k_about_import, .epilogue = k_epilogue,
                              .opts = export_verb ? export_opts : import_opts, .min_args = export_verb ? 0 : 1,
                              .max_args = MAX_IDS + (export_verb ? 0 : 1),
                              .args_name = "SRC (the run database to import from)"};
    fa_cli_args *args = malloc(sizeof *args); /* 32 KiB of argument slots: not on the stack */
    int rc = args ? fa_cli_parse(ctx, &spec, argc, argv, args) : fa_cli_fail(ctx, fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"));
    if (rc < 0 && export_verb && !dst) rc = fa_cli_usage(verb, "--to DEST names where the runs go");
    if (rc >= 0) {
        free(args);
        return rc;
    }
    int64_t *ids = calloc(MAX_IDS, sizeof *ids);
    size_t n_ids = 0;
    if (!ids) {
        free(args);
        return fa_cli_fail(ctx, fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"));
    }
    int first = 0;
    if (!export_verb) src = args->arg[first++];
    for (int k = first; k < args->n && rc < 0; k++) {
        char *end;
        errno = 0;
        long long id = strtoll(args->arg[k], &end, 10);
        if (!*args->arg[k] || *end || errno || id <= 0) rc = fa_cli_usage(verb, "'%s' is not a run id", args->arg[k]);
        else ids[n_ids++] = id;
    }
    free(args);
    if (rc >= 0) {
        free(ids);
        return rc;
    }
    if (!src) src = fa_cli_default_db();
    if (!dst) dst = fa_cli_default_db();
    fa_store *s_st = NULL, *d_st = NULL;
    fa_status s = fa_store_open_ex(ctx, src, FA_STORE_NO_CREATE | FA_STORE_READONLY, &s_st);
    if (!s) s = fa_store_open(ctx, dst, &d_st);
    fa_arena *ar = s ? NULL : fa_arena_create(0);
    if (!s && !ar) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    if (!s && (model || tag)) { /* the filter picks ids among the source's runs */
        fa_run_info *runs = NULL;
        size_t n = 0;
        s = fa_store_list_runs(ctx, s_st, ar, &runs, &n);
        size_t given = n_ids;
        for (size_t i = 0; !s && i < n; i++) {
            bool in = !given;
            for (size_t k = 0; k < given; k++) in |= ids[k] == runs[i].id;
            if (!in || (model && !(runs[i].model_path && strstr(runs[i].model_path, model))) ||
                (tag && !(runs[i].tag && !strcmp(runs[i].tag, tag))))
                continue;
            if (n_ids < MAX_IDS) ids[n_ids++] = runs[i].id;
        }
        memmove(ids, ids + given, (n_ids - given) * sizeof *ids);
        n_ids -= given;
        if (!s && n_ids == 0) s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: no run matches the selection", fa_store_path(s_st));
    }
    fa_store_copy_result res = {0};
    if (!s) s = fa_store_copy_runs(ctx, s_st, d_st, ids, n_ids, &res);
    if (s_st && d_st)
        printf("%s: %zu run%s copied from %s to %s; %zu already there, %zu still running, %zu fused twins without "
               "their baseline not copied\n",
               verb, res.copied, res.copied == 1 ? "" : "s", fa_store_path(s_st), fa_store_path(d_st),
               res.skipped_present, res.skipped_running, res.skipped_orphan_twins);
    fa_arena_free(ar);
    fa_store_close(d_st);
    fa_store_close(s_st);
    free(ids);
    return s ? fa_cli_fail(ctx, s) : 0;
}

int fa_cmd_export_runs(fa_ctx *ctx, int argc, char **argv);
int fa_cmd_export_runs(fa_ctx *ctx, int argc, char **argv) { return copy_runs(ctx, argc, argv, true); }
int fa_cmd_import_runs(fa_ctx *ctx, int argc, char **argv);
int fa_cmd_import_runs(fa_ctx *ctx, int argc, char **argv) { return copy_runs(ctx, argc, argv, false); }
