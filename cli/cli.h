/* cli — the fuse-advise command: shared helpers for the verb implementations (cmd_*.c).
 * Only cli/ prints or exits. */
#ifndef FA_CLI_H
#define FA_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/core.h"
#include "graph/graph.h"
#include "runtime/runtime.h"

/* Each verb: int fa_cmd_<verb>(fa_ctx *ctx, int argc, char **argv) — argv[0] is the verb.
 * Returns a process exit code (0 ok, 1 bad input/run failure, 2 usage, 3 gate). */
typedef int (*fa_cmd_fn)(fa_ctx *ctx, int argc, char **argv);

/* Print ctx's message as "fuse-advise: error: ..." to stderr and return the exit code for s. */
int fa_cli_fail(fa_ctx *ctx, fa_status s);
/* Print a usage error and return 2. */
int fa_cli_usage(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The run database of every verb without --db: $FUSE_ADVISE_DB when set and not empty (a file or
 * a postgresql:// URI), else FA_STORE_DEFAULT_PATH. */
const char *fa_cli_default_db(void);
/* Warn (stderr) about each PostgreSQL URI in argv or $FUSE_ADVISE_DB that carries a password:
 * other users see a command line (ps), so libpq's PGPASSWORD/~/.pgpass/service file is the way;
 * the store never keeps it (fa_store_redact_uri). */
void fa_cli_warn_uri_passwords(int argc, char **argv);
/* prefix (may be NULL) and argv joined by spaces, each argument that is (or whose --opt=VALUE is) a
 * server connection string without its secrets (fa_store_redact_arg): the command line a run
 * stores. malloc'd; NULL when out of memory. */
char *fa_cli_command_line(const char *prefix, int argc, char **argv);

/* Common model-loading options parsed from argv: --shape (repeatable), --batch, --no-fold,
 * --no-dim-defaults.
 * fa_cli_model_opt consumes argv[*i] (and its value) if it is one of these; returns
 * 1 if consumed, 0 if not, -1 on a usage error (already printed). */
typedef struct fa_cli_model_opts {
    fa_shape_binding bindings[16];
    int n_bindings;
    int batch;
    bool no_fold;
    bool no_dim_defaults;
} fa_cli_model_opts;
int fa_cli_model_opt(fa_ctx *ctx, const char *verb, int argc, char **argv, int *i, fa_cli_model_opts *o);
fa_load_options fa_cli_load_options(const fa_cli_model_opts *o);
/* The one notice after a load that bound symbolic dims to their default (g->dim_defaults):
 * "fuse-advise: notice: 2 symbolic dims bound to the default 1: batch, seq (...)" on stderr.
 * Nothing when none was defaulted. */
void fa_cli_note_dim_defaults(const fa_graph *g);
/* "batch=1,seq=1": the defaulted dims as stored with a run (runs.dim_defaults); NULL when none.
 * malloc'd, caller frees. */
char *fa_cli_dim_defaults_text(const fa_graph *g);

/* Value of "--name VALUE" or "--name=VALUE" at argv[*i]; advances *i; NULL if not this option. */
const char *fa_cli_opt_value(int argc, char **argv, int *i, const char *name);
/* Parse a non-negative integer option value; -1 and a printed usage error on failure. */
long fa_cli_parse_long(const char *verb, const char *opt, const char *v, long min, long max);
/* Every numeric option goes through one of these (docs/hardening.md "Options"): a value that
 * overflows (strtoll/strtod ERANGE), is not finite (inf, nan), has trailing bytes or lies
 * outside [min, max] is refused with a printed usage error (return -1, *out untouched);
 * never clamped. min_open: min itself is excluded. 0 on success. */
int fa_cli_parse_i64(const char *verb, const char *opt, const char *v, int64_t min, int64_t max, int64_t *out);
int fa_cli_parse_double(const char *verb, const char *opt, const char *v, double min, double max, bool min_open,
                        double *out);

/* Reload run_id's model as the run loaded it (path checked by SHA-256, the run's --batch /
 * --shape / --no-fold). ri's strings live in `ar`. *out owned by the caller. Declared with
 * forward types so cli.h stays light. */
struct fa_store;
struct fa_run_info;
fa_status fa_cli_reload_model(fa_ctx *ctx, struct fa_store *st, int64_t run_id, fa_arena *ar, struct fa_run_info *ri,
                              fa_graph **out);
/* `latest` (or NULL) or a run id -> run_id (cli/cmd_analyze.c); returns an exit code (0 ok).
 * latest is the newest run a verb that reads traces works on: a model run, an imported or a
 * traced trace, never a model run's fused twin. fa_cli_resolve_model_run's latest is the newest
 * model run (for verbs that need the model: apply). */
int fa_cli_resolve_run(fa_ctx *ctx, struct fa_store *st, const char *spec, int64_t *run_id);
int fa_cli_resolve_model_run(fa_ctx *ctx, struct fa_store *st, const char *spec, int64_t *run_id);
/* `run`/`apply` output flags (cli/cmd_run.c): --verbose, --json, --progress / --no-progress. */
typedef struct fa_cli_output_opts {
    bool verbose, json;
    int progress;             /* 1 on, 0 off, -1 auto: on when stderr is a terminal or CI=true */
} fa_cli_output_opts;
/* 1 consumed one of them, 0 not one of them. */
int fa_cli_output_opt(const char *arg, fa_cli_output_opts *o);
/* The stages after the baseline (cli/cmd_run.c): ceilings, analysis, plan, apply, outputs, the
 * run finished ('ok', or 'failed' with an end-to-end mismatch) and then the reports into out_dir
 * (NULL: ./fuse-advise-out/<model>) for a stored run of graph g, so they carry its final status. */
struct fa_run_info;
struct fa_pipeline_options;
fa_status fa_cli_apply_pipeline(fa_ctx *ctx, struct fa_store *st, const fa_graph *g, int64_t run_id, const char *model,
                                const struct fa_run_info *info, const char *devname, const char *out_dir,
                                const struct fa_pipeline_options *opt, const fa_cli_output_opts *out_opts);
/* What `run`/`apply` print after the apply stage (cli/result.c), from the run database. */
typedef struct fa_cli_result {
    const char *model, *target, *device;
    int threads;
    const char *out_dir;
    bool verbose;             /* --verbose: every cluster, every pattern */
    bool json;                /* --json: summary.json's document instead */
    bool wrote_kernels, folded; /* kernels/ and model.folded.onnx were written */
    int backed_off;           /* clusters the end-to-end back-off dropped */
    bool layouts_dropped;
    double e2e_tolerance;
} fa_cli_result;
/* The answer first: the plan's patterns ranked by measured saving (at most 8 kept and 3 not
 * kept), the end-to-end verdict with its figures (store/figures.c), kernels, peaks, the analysis,
 * the outputs: 40 lines at most; every cluster with verbose; summary.json with json. */
fa_status fa_cli_print_result(fa_ctx *ctx, struct fa_store *st, int64_t run_id, const fa_cli_result *res);
/* --max-clusters N / --apply-budget SECONDS (run, apply): the apply stage's bounds
 * (fa_apply_options.max_clusters, budget_s). 1 consumed, 0 not this option, -1 usage error. */
int fa_cli_apply_bound_opt(const char *verb, int argc, char **argv, int *i, int *max_clusters, double *budget_s);

/* Trace import + op-level advice (cli/cmd_import.c): returns an exit code. */
int fa_cli_import_and_advise(fa_ctx *ctx, const char *trace_path, const char *db, bool json, const char *out_dir);
int fa_cli_trace_advise_stored(fa_ctx *ctx, struct fa_store *st, int64_t run_id, bool json);

/* Every entry a fuse-advise output folder (run/apply/report --out) may hold, NULL-terminated:
 * an existing folder holding anything else is refused (fa_outdir_check), never replaced. */
extern const char *const fa_cli_output_names[];
/* Refuse (FA_ERR_USAGE naming both, exit 2) an output path that is the run database db or its
 * -wal/-shm/-journal, or - is_dir - a folder that holds the database (it is replaced whole). */
fa_status fa_cli_check_not_db(fa_ctx *ctx, const char *out, bool is_dir, const char *db);
/* ./fuse-advise-out/<model file name, sanitised> (cli/cmd_run.c). */
void fa_cli_default_out_dir(const char *model, char *buf, size_t cap);
/* The checks on an output folder before any work starts: fa_outdir_check + fa_cli_check_not_db. */
fa_status fa_cli_check_out_dir(fa_ctx *ctx, const char *out_dir, const char *db);

/* Terminal output (cli/term.c): printf to stdout / stderr with every %s argument escaped by
 * fa_escape_term (names, paths and messages from models, traces and run databases). Every line
 * that prints a string from an input goes through these (or builds its text with
 * fa_buf_printf_term). */
void fa_cli_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fa_cli_eprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Replace stdout and stderr with streams that pass everything through fa_escape_term_text
 * (newlines and tabs kept, every other control character escaped) to fds 1 and 2: whatever path
 * a string takes to the terminal, no escape sequence reaches it. Called once by main. */
void fa_cli_guard_output(void);

/* True when stderr is a terminal (progress bars allowed). */
bool fa_cli_is_tty(void);
/* A log sink that prints warnings/info to stderr. */
void fa_cli_log_sink(void *user, int level, const char *msg);

#endif
