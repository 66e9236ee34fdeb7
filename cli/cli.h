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

/* ---- Options: each declared once, as a row of a table (after git's parse-options) ----
 * A verb's table lists its rows and the shared groups it takes (FA_CLI_INCLUDE or a group
 * macro); fa_cli_parse reads argv with it and prints `VERB --help` from it, so what a verb
 * parses and what its help says are one description. A row's default is the value its
 * destination holds before parsing (the library's own default, e.g. fa_advise_options_default):
 * help prints it, so a default lives in one place. Every numeric value is checked by one parser
 * (docs/hardening.md "Options"): a value that overflows (strtoll/strtod ERANGE), is not finite
 * (inf, nan), has trailing bytes or lies outside the row's range is a usage error (exit 2),
 * never clamped. */
typedef enum fa_cli_opt_kind {
    FA_CLI_OPT_END = 0, /* ends a table */
    FA_CLI_OPT_GROUP,   /* a heading in --help (help = its title); parses nothing */
    FA_CLI_OPT_INCLUDE, /* the rows of another table (group), in place */
    FA_CLI_OPT_FLAG,    /* bool *dest = true; takes no value */
    FA_CLI_OPT_STRING,  /* const char **dest = the value (argv's storage); never empty */
    FA_CLI_OPT_INT,     /* int *dest: an integer in [lo, hi] */
    FA_CLI_OPT_I64,     /* int64_t *dest: an integer in [lo, hi] */
    FA_CLI_OPT_DOUBLE,  /* double *dest: a finite number in [flo, fhi] (open ends by flags) */
    FA_CLI_OPT_PERCENT, /* double *dest: "3%" or "3" -> 0.03, in [flo, fhi] as fractions */
    FA_CLI_OPT_CALLBACK /* fn parses the value into dest */
} fa_cli_opt_kind;

enum {
    FA_CLI_MIN_OPEN = 1u << 0,   /* flo itself is out of range */
    FA_CLI_MAX_OPEN = 1u << 1,   /* fhi itself is out of range */
    FA_CLI_NO_DEFAULT = 1u << 2, /* help prints no default (the row's help says what unset means) */
    FA_CLI_HIDDEN = 1u << 3      /* parsed, not listed by --help */
};

typedef struct fa_cli_opt fa_cli_opt;
/* A CALLBACK row's parser: 0, or -1 with the sentence saying why in `why` (the parser prints it as
 * a usage error). verb: the verb parsing (NULL when a stored command line is read back). */
typedef int (*fa_cli_opt_fn)(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *value, fa_buf *why);

struct fa_cli_opt {
    fa_cli_opt_kind kind;
    const char *name;         /* "--iters" */
    const char *alias;        /* a second spelling ("-o"), or NULL */
    const char *metavar;      /* the value's placeholder in help ("N"); NULL for a flag */
    void *dest;               /* where the value goes; its type is the kind's */
    int64_t lo, hi;           /* INT, I64 (and a CALLBACK that reads them): the range */
    double flo, fhi;          /* DOUBLE, PERCENT: the range */
    unsigned flags;           /* FA_CLI_MIN_OPEN ... */
    fa_cli_opt_fn fn;         /* CALLBACK */
    const fa_cli_opt *group;  /* INCLUDE */
    const char *help;         /* one sentence for --help; GROUP: the heading */
};

/* Row macros. The destination's type is checked by the compiler: a long * for an INT row warns. */
#define FA_CLI_DEST_(T, p) ((void *)(1 ? (p) : (T *)0))
#define FA_CLI_END {.kind = FA_CLI_OPT_END}
#define FA_CLI_GROUP(title) {.kind = FA_CLI_OPT_GROUP, .help = (title)}
#define FA_CLI_INCLUDE(table) {.kind = FA_CLI_OPT_INCLUDE, .group = (table)}
#define FA_CLI_FLAG(name_, dest_, help_) \
    {.kind = FA_CLI_OPT_FLAG, .name = (name_), .dest = FA_CLI_DEST_(bool, dest_), .help = (help_)}
#define FA_CLI_STRING(name_, meta, dest_, help_)                                                                    \
    {.kind = FA_CLI_OPT_STRING, .name = (name_), .metavar = (meta), .dest = FA_CLI_DEST_(const char *, dest_),     \
     .help = (help_)}
#define FA_CLI_STRING2(name_, alias_, meta, dest_, help_)                                                           \
    {.kind = FA_CLI_OPT_STRING, .name = (name_), .alias = (alias_), .metavar = (meta),                             \
     .dest = FA_CLI_DEST_(const char *, dest_), .help = (help_)}
#define FA_CLI_INT(name_, meta, dest_, lo_, hi_, flags_, help_)                                                    \
    {.kind = FA_CLI_OPT_INT, .name = (name_), .metavar = (meta), .dest = FA_CLI_DEST_(int, dest_), .lo = (lo_),   \
     .hi = (hi_), .flags = (flags_), .help = (help_)}
#define FA_CLI_I64(name_, meta, dest_, lo_, hi_, flags_, help_)                                                    \
    {.kind = FA_CLI_OPT_I64, .name = (name_), .metavar = (meta), .dest = FA_CLI_DEST_(int64_t, dest_),            \
     .lo = (lo_), .hi = (hi_), .flags = (flags_), .help = (help_)}
#define FA_CLI_DOUBLE(name_, meta, dest_, lo_, hi_, flags_, help_)                                                 \
    {.kind = FA_CLI_OPT_DOUBLE, .name = (name_), .metavar = (meta), .dest = FA_CLI_DEST_(double, dest_),          \
     .flo = (lo_), .fhi = (hi_), .flags = (flags_), .help = (help_)}
#define FA_CLI_PERCENT(name_, meta, dest_, lo_, hi_, flags_, help_)                                                \
    {.kind = FA_CLI_OPT_PERCENT, .name = (name_), .metavar = (meta), .dest = FA_CLI_DEST_(double, dest_),         \
     .flo = (lo_), .fhi = (hi_), .flags = (flags_), .help = (help_)}
#define FA_CLI_CALLBACK(name_, meta, fn_, dest_, lo_, hi_, flags_, help_)                                          \
    {.kind = FA_CLI_OPT_CALLBACK, .name = (name_), .metavar = (meta), .fn = (fn_), .dest = (dest_), .lo = (lo_), \
     .hi = (hi_), .flags = (flags_), .help = (help_)}

/* A verb's command line: its synopsis, text, table and positional arguments. */
typedef struct fa_cli_spec {
    const char *verb;            /* "run" */
    const char *synopsis;        /* after "usage: fuse-advise VERB ": "MODEL [options]"; '\n' between forms */
    const char *about;           /* text after the synopsis (its own line breaks), or NULL */
    const char *epilogue;        /* text after the options, or NULL */
    const fa_cli_opt *opts;      /* FA_CLI_END-terminated */
    int min_args, max_args;      /* positional arguments */
    const char *args_name;       /* named in "missing MODEL" */
    bool command_after_dashdash; /* what follows "--" is a command (args.rest) */
} fa_cli_spec;

#define FA_CLI_MAX_ARGS 4100
typedef struct fa_cli_args {
    const char *arg[FA_CLI_MAX_ARGS]; /* positional arguments in order (argv's storage) */
    int n;
    int rest; /* command_after_dashdash: argv index after "--" (argc when there is none) */
} fa_cli_args;

/* Parse argv[1..argc) (argv[0] is the verb) with spec: options in any order, `--name VALUE` or
 * `--name=VALUE`, "--" ends the options, "-" alone is an argument. Returns -1 to go on, or the
 * exit code the verb returns at once: 0 after printing --help / -h, 2 after a usage error on
 * stderr (an unknown option names the nearest one: "did you mean --iters?"). */
int fa_cli_parse(fa_ctx *ctx, const fa_cli_spec *spec, int argc, char **argv, fa_cli_args *args);
/* `VERB --help` from spec: synopsis, about, each row (name, value, help, range and default). */
void fa_cli_help(fa_buf *b, const fa_cli_spec *spec);
/* Parse one value as row o would (an environment variable that stands for an option): 0, or -1
 * after a usage error naming o->name. */
int fa_cli_opt_set(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *value);
/* The same, silent: 0, or -1 when the value is refused (destination untouched). */
int fa_cli_opt_try(fa_ctx *ctx, const fa_cli_opt *o, const char *value);
/* The candidate nearest to word (leading dashes ignored): a unique one that word begins (3
 * letters at least), else the nearest by edit distance with adjacent transpositions when it is
 * at most 1 edit for words up to 4 letters, 2 up to 8, 3 beyond, and not tied; NULL when none is
 * near. owner (NULL: each its own): candidates with the same owner are spellings of one thing and
 * never tie with each other. */
const char *fa_cli_nearest(const char *word, const char *const *cands, const int *owner, int n);

/* Model-loading options: --shape (repeatable), --batch, --no-fold, --no-dim-defaults. */
typedef struct fa_cli_model_opts {
    fa_shape_binding bindings[16];
    int n_bindings;
    int batch;
    bool no_fold;
    bool no_dim_defaults;
} fa_cli_model_opts;
fa_load_options fa_cli_load_options(const fa_cli_model_opts *o);
/* The model-loading options a stored run was loaded with, read back from its command line
 * (runs.command_line, words split at spaces): --shape, --batch, --no-fold; other words are
 * skipped, a malformed value ignored. */
void fa_cli_model_opts_from_command_line(fa_ctx *ctx, const char *command_line, fa_cli_model_opts *mo);
/* The one notice after a load that bound symbolic dims to their default (g->dim_defaults):
 * "fuse-advise: notice: 2 symbolic dims bound to the default 1: batch, seq (...)" on stderr.
 * Nothing when none was defaulted. */
void fa_cli_note_dim_defaults(const fa_graph *g);
/* The activation limit of every executor this process makes for model g
 * (fa_mem_set_default_limit): --max-memory when given (max_memory > 0), else
 * FA_CLI_MEMORY_FLOOR or FA_CLI_MEMORY_PER_WEIGHT x g's initializer bytes (fa_graph_initializer_bytes:
 * the file's weights, not constants folded at load), whichever is larger. A
 * model is untrusted input: a 577-byte Tile of 2 x 2 values by [32768, 32768] took 16.8 GB for
 * its 16 GiB output, as it fit the machine's free memory. Activations grow with the batch and
 * the sequence, weights do not: here the planned peak is 0.7x the weights on MobileNetV2 at batch
 * 1 (9.8 MiB of 14.2 MB), so 64x allows it a batch of about 90, and 0.01x on BERT-base at
 * sequence 128 (5.6 MiB of 415 MB); 4 GiB covers small models at large batches. */
#define FA_CLI_MEMORY_FLOOR ((uint64_t)4 << 30)
#define FA_CLI_MEMORY_PER_WEIGHT 64
void fa_cli_memory_policy(const fa_graph *g, int64_t max_memory);
/* The one notice after a load that kept nodes of unsupported ops opaque (keep_unsupported): every
 * op and its nodes, how many nodes after them have no shape, and where the supported ops are
 * listed, on stderr. Nothing when none was kept. */
void fa_cli_note_opaque(const fa_graph *g);
/* A node's pattern class name, "unsupported" for an op without a registry entry, "not analysed"
 * for a supported op kept opaque (no shape after an unsupported node). */
const char *fa_cli_node_pattern(const fa_node *n);
/* "batch=1,seq=1": the defaulted dims as stored with a run (runs.dim_defaults); NULL when none.
 * malloc'd, caller frees. */
char *fa_cli_dim_defaults_text(const fa_graph *g);

/* CALLBACK parsers of shared rows: --shape into a fa_cli_model_opts; --threads into an int in
 * [lo, hi], warning (not refusing) when it is more than the machine's online cores; --target into
 * a fa_target. */
int fa_cli_opt_shape(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *value, fa_buf *why);
int fa_cli_opt_threads(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *value, fa_buf *why);
int fa_cli_opt_target(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *value, fa_buf *why);

/* The shared groups, written once: each expands to its rows over the destinations it is given. */
#define FA_CLI_OPTS_MODEL(mo)                                                                                     \
    FA_CLI_GROUP("model loading"),                                                                                \
        FA_CLI_CALLBACK("--shape", "NAME=DIMS", fa_cli_opt_shape, FA_CLI_DEST_(fa_cli_model_opts, mo), 0, 0, 0,   \
                        "bind a whole input (input=1x3x224x224) or a symbolic dim by name (batch=8); repeatable. "   \
                        "Symbolic dims nothing binds default to 1 (one notice lists them)"),                       \
        FA_CLI_INT("--batch", "N", &(mo)->batch, 1, 1 << 20, FA_CLI_NO_DEFAULT, "set dim 0 of every graph input"), \
        FA_CLI_FLAG("--no-dim-defaults", &(mo)->no_dim_defaults,                                                  \
                    "refuse symbolic dims nothing binds, listing every one"),                                     \
        FA_CLI_FLAG("--no-fold", &(mo)->no_fold, "keep constant subgraphs as nodes (but those whose values set a shape)")
#define FA_CLI_OPT_DB(db)                                                                                         \
    FA_CLI_STRING("--db", "PATH|URI", db,                                                                         \
                  "run database (default $FUSE_ADVISE_DB, else ./" FA_STORE_DEFAULT_PATH                          \
                  "), or a PostgreSQL server: postgresql://[user@]host[:port]/dbname (docs/ci.md)")
/* cluster caps: fa_advise_options' bounds (advisor/advisor.h FA_ADVISE_MAX_*) */
#define FA_CLI_OPTS_CLUSTER_CAPS(max_ops, max_inputs)                                                             \
    FA_CLI_GROUP("cluster caps"),                                                                                 \
        FA_CLI_INT("--max-ops", "N", max_ops, FA_ADVISE_MAX_OPS_MIN, FA_ADVISE_MAX_OPS_MAX, 0, "ops per cluster"), \
        FA_CLI_INT("--max-inputs", "N", max_inputs, FA_ADVISE_MAX_INPUTS_MIN, FA_ADVISE_MAX_INPUTS_MAX, 0,        \
                   "distinct external inputs per cluster")
/* iterations of a measurement: fa_apply_options' iters and warmup */
#define FA_CLI_OPTS_ITERATIONS(iters, warmup)                                                                     \
    FA_CLI_GROUP("iterations"), FA_CLI_INT("--iters", "N", iters, 1, 1000000, 0, "timed iterations"),             \
        FA_CLI_INT("--warmup", "W", warmup, 0, 1000000, FA_CLI_NO_DEFAULT,                     \
                   "untimed iterations first (default: 1, more while they took under 0.25 s, 3 at most)")
/* the apply stage (fa_apply_options): tolerance, clusters tried, time budget */
#define FA_CLI_OPTS_APPLY(tolerance, max_clusters, budget_s)                                                      \
    FA_CLI_GROUP("apply stage"),                                                                                  \
        FA_CLI_DOUBLE("--tolerance", "T", tolerance, 0, FA_APPLY_TOLERANCE_MAX, FA_CLI_MIN_OPEN,                  \
                      "max relative error of a fused kernel (clusters with a Conv/Gemm/MatMul are verified by a "   \
                      "rounding-error bound instead)"),                                                           \
        FA_CLI_INT("--max-clusters", "N", max_clusters, 1, 1000000, 0,                                            \
                   "clusters the apply stage tries, highest predicted saving first"),                             \
        FA_CLI_DOUBLE("--apply-budget", "S", budget_s, 0, 604800, FA_CLI_MIN_OPEN,                                \
                      "seconds: no cluster is started after the apply stage ran this long; the others are "        \
                      "reported as not tried")
/* --layout auto|nhwc|nChw8c|nChw16c|plain into an int (-1 auto, else the fa_layout):
 * fa_pipeline_options.layout */
int fa_cli_opt_layout(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *v, fa_buf *why);
#define FA_CLI_OPT_LAYOUT(layout)                                                                                 \
    FA_CLI_CALLBACK("--layout", "auto|nhwc|nChw8c|nChw16c|plain", fa_cli_opt_layout, FA_CLI_DEST_(int, layout), 0, 0, \
                    0, "the fused plan's layout (auto: the target's default against each other layout its "        \
                       "convolutions run on here, measured on the whole model; a rival kept only when measurably " \
                       "faster); a name overrides the measurement, as FA_BLOCKED_LAYOUT does")
#define FA_CLI_OPT_THREADS(threads)                                                                               \
    FA_CLI_CALLBACK("--threads", "N", fa_cli_opt_threads, FA_CLI_DEST_(int, threads), 0, 1024, 0,                 \
                    "executor threads (0: every core; more than the cores is warned)")
#define FA_CLI_OPT_JSON(json) FA_CLI_FLAG("--json", json, "one JSON document instead of the text")
/* run / apply output: --verbose, --json (summary.json's document), --progress / --no-progress */
#define FA_CLI_OPTS_OUTPUT(verbose, json, prog_on, prog_off)                                                    \
    FA_CLI_GROUP("output"),                                                                                     \
        FA_CLI_FLAG("--verbose", verbose, "every cluster with its decision and reason (default: the plan's "       \
                                          "patterns ranked by measured saving and the end-to-end verdict, 40 lines at most)"), \
        FA_CLI_FLAG("--json", json, "summary.json's document on stdout instead of the text"),                    \
        FA_CLI_FLAG("--progress", prog_on, "stage lines on stderr (default: a bar on a terminal, lines with CI=true, " \
                                           "nothing otherwise)"),                                               \
        FA_CLI_FLAG("--no-progress", prog_off, "no progress on stderr")

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
/* `run`/`apply` output flags, parsed by their tables' FA_CLI_OPTS_OUTPUT rows: --verbose, --json,
 * --progress / --no-progress. */
typedef struct fa_cli_output_opts {
    bool verbose, json;
    int progress;             /* 1 on, 0 off, -1 auto: on when stderr is a terminal or CI=true */
} fa_cli_output_opts;
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
    const char *e2e_rounding_op; /* fa_apply_result's: why the limit is the rounding one, NULL */
} fa_cli_result;
/* The answer first: the plan's patterns ranked by measured saving (at most 8 kept and 3 not
 * kept), the end-to-end verdict with its figures (store/figures.c), kernels, peaks, the analysis,
 * the outputs: 40 lines at most; every cluster with verbose; summary.json with json. */
fa_status fa_cli_print_result(fa_ctx *ctx, struct fa_store *st, int64_t run_id, const fa_cli_result *res);
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
/* out_dir (a folder replaced as a whole) neither is nor holds input (a model, a trace; NULL or
 * "zoo:..." none): FA_ERR_USAGE naming both otherwise. A trace saved as DIR/trace.json or a model
 * as DIR/model.folded.onnx would otherwise be swapped out with the old outputs. */
fa_status fa_cli_check_input_outside(fa_ctx *ctx, const char *out_dir, const char *input);
/* The checks on an output folder before any work starts: fa_cli_check_not_db,
 * fa_cli_check_input_outside (input may be NULL) and fa_outdir_check. */
fa_status fa_cli_check_out_dir(fa_ctx *ctx, const char *out_dir, const char *db, const char *input);

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
