/* cli/common — option parsing and error printing shared by the verbs. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "store/store.h"

int fa_cli_fail(fa_ctx *ctx, fa_status s)
{
    const char *m = fa_ctx_errmsg(ctx);
    fa_cli_eprintf("fuse-advise: error: %s\n", m[0] ? m : fa_status_name(s));
    /* every verb that needs a GPU (run/apply on cuda, trace) ends here without one, or in a build
     * without the cuda target: name the two ways to GPU advice that need neither (issue 40). By
     * the error's reason, which the runtime sets, never by its words. */
    fa_err_reason why = fa_ctx_reason(ctx);
    if (why == FA_REASON_DEVICE_UNAVAILABLE || why == FA_REASON_NO_EXECUTOR)
        fa_cli_eprintf("fuse-advise: %s, two ways give GPU advice: run the model on the cpu and plan it "
                       "for the GPU from its data sheet (`fuse-advise run MODEL --no-apply && fuse-advise advise latest "
                       "--target cuda --arch sm_90`), or profile it on the GPU (PyTorch profiler JSON, or `nsys export "
                       "--type sqlite`) and `fuse-advise import TRACE` for advice from its measured kernels\n",
                       why == FA_REASON_NO_EXECUTOR ? "in this build, without the target" : "without a GPU here");
    return fa_status_exit_code(s);
}

int fa_cli_usage(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fa_buf b;
    fa_buf_init(&b);
    fa_buf_printf_term(&b, "fuse-advise %s: ", verb);
    fa_buf_vprintf_term(&b, fmt, ap); /* the values quoted are the user's arguments */
    fa_buf_printf_term(&b, "\n(see `fuse-advise %s --help`)\n", verb);
    fputs(b.oom ? "fuse-advise: usage error\n" : b.data, stderr);
    fa_buf_free(&b);
    va_end(ap);
    return 2;
}

void fa_cli_model_opts_from_command_line(fa_ctx *ctx, const char *command_line, fa_cli_model_opts *mo)
{
    memset(mo, 0, sizeof *mo);
    char *cmd = command_line ? strdup(command_line) : NULL;
    if (!cmd) return;
    /* the stored line's words, with the model-loading rows only: a word of another verb's table
     * is skipped, and so is a value this table refuses (the run accepted it when it ran) */
    const fa_cli_opt rows[] = {FA_CLI_OPTS_MODEL(mo), FA_CLI_END};
    char *words[256], *save = NULL;
    int n = 0;
    for (char *tok = strtok_r(cmd, " ", &save); tok && n < 255; tok = strtok_r(NULL, " ", &save)) words[n++] = tok;
    for (int i = 0; i < n; i++) {
        const char *w = words[i], *eq = strchr(w, '=');
        size_t nl = eq ? (size_t)(eq - w) : strlen(w);
        for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
            const fa_cli_opt *o = &rows[k];
            if (!o->name || strlen(o->name) != nl || strncmp(o->name, w, nl)) continue;
            const char *v = NULL;
            if (o->kind != FA_CLI_OPT_FLAG) {
                if (eq) v = eq + 1;
                else if (i + 1 < n) v = words[++i];
                else break;
            }
            fa_cli_opt_try(ctx, o, v); /* a refused value is ignored here, not reported */
            break;
        }
    }
    free(cmd);
}

fa_load_options fa_cli_load_options(const fa_cli_model_opts *o)
{
    fa_load_options lo = {0};
    lo.bindings = o->bindings;
    lo.n_bindings = o->n_bindings;
    lo.batch = o->batch;
    lo.no_fold = o->no_fold;
    lo.no_dim_defaults = o->no_dim_defaults;
    return lo;
}

const char *const fa_cli_output_names[] = {"report.html", "graph.dot", "graph.svg", "trace.json", "summary.json",
                                           "kernels.csv", "plan.json", "model.folded.onnx",
                                           "model.folded.onnx.data", "kernels", NULL};

fa_status fa_cli_check_not_db(fa_ctx *ctx, const char *out, bool is_dir, const char *db)
{
    static const char *const side[] = {"", "-wal", "-shm", "-journal"};
    if (fa_store_path_is_pg(db)) return FA_OK; /* a server: no file to write over */
    for (int i = 0; i < 4; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s%s", db, side[i]);
        if (fa_path_same_file(out, p))
            return fa_ctx_error(ctx, FA_ERR_USAGE, "%s is the run database%s%s: refusing to write over it", out,
                                i ? "'s " : "", i ? side[i] + 1 : "");
    }
    if (is_dir && fa_path_inside(out, db))
        return fa_ctx_error(ctx, FA_ERR_USAGE,
                            "%s: the output folder holds the run database %s and is replaced as a whole: name "
                            "another folder",
                            out, db);
    return FA_OK;
}

fa_status fa_cli_check_input_outside(fa_ctx *ctx, const char *out_dir, const char *input)
{
    if (!input || !*input || !strncmp(input, "zoo:", 4)) return FA_OK;
    if (fa_path_same_file(out_dir, input) || fa_path_inside(out_dir, input))
        return fa_ctx_error(ctx, FA_ERR_USAGE,
                            "%s: the output folder holds the input %s and is replaced as a whole (its trace.json, "
                            "model.folded.onnx, ... are outputs): name another folder",
                            out_dir, input);
    return FA_OK;
}

fa_status fa_cli_check_out_dir(fa_ctx *ctx, const char *out_dir, const char *db, const char *input)
{
    fa_status s = fa_cli_check_not_db(ctx, out_dir, true, db);
    if (!s) s = fa_cli_check_input_outside(ctx, out_dir, input);
    if (!s) s = fa_outdir_check(ctx, out_dir, fa_cli_output_names);
    return s;
}

void fa_cli_note_dim_defaults(const fa_graph *g)
{
    if (!g || g->n_dim_defaults == 0) return;
    fa_cli_eprintf("fuse-advise: notice: %d symbolic dim%s bound to the default %d:", g->n_dim_defaults,
                   g->n_dim_defaults == 1 ? "" : "s", FA_DIM_DEFAULT);
    for (int i = 0; i < g->n_dim_defaults; i++) fa_cli_eprintf("%s %s", i ? "," : "", g->dim_defaults[i]);
    fa_cli_eprintf(" (choose with --shape NAME=N, --shape INPUT=DIMS or --batch N; refuse with --no-dim-defaults)\n");
}

void fa_cli_memory_policy(const fa_graph *g, int64_t max_memory)
{
    static char why[256];
    if (max_memory > 0) {
        snprintf(why, sizeof why, "(--max-memory)");
        fa_mem_set_default_limit((uint64_t)max_memory, why);
        return;
    }
    /* the file's initializers, not the constants folded at load: a small model's folded
     * ConstantOfShape must not raise its own limit */
    uint64_t weights = fa_graph_initializer_bytes(g);
    uint64_t lim = fa_u64_mul_sat(weights, FA_CLI_MEMORY_PER_WEIGHT);
    if (lim < FA_CLI_MEMORY_FLOOR) lim = FA_CLI_MEMORY_FLOOR;
    snprintf(why, sizeof why, "for a model of %llu bytes of weights (the larger of 4 GiB and %d x its weights: a small model "
             "that asks for more is taken as hostile input)", (unsigned long long)weights, FA_CLI_MEMORY_PER_WEIGHT);
    fa_mem_set_default_limit(lim, why);
}

void fa_cli_note_opaque(const fa_graph *g)
{
    if (!g || g->n_unsupported == 0) return;
    fa_buf b;
    fa_buf_init(&b);
    fa_graph_unsupported_text(g, &b);
    int after = 0;
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        after += n->opaque && fa_op_find(n->domain, n->op_type) != NULL;
    }
    fa_cli_eprintf("fuse-advise: notice: %d node%s of unsupported ops kept opaque (not analysed): %s", g->n_unsupported,
                   g->n_unsupported == 1 ? "" : "s", b.data ? b.data : "");
    if (after)
        fa_cli_eprintf("; %d node%s after them read%s a tensor without a shape (the model gives none: bind it with --shape "
                       "NAME=DIMS) and %s not analysed either", after, after == 1 ? "" : "s", after == 1 ? "s" : "",
                       after == 1 ? "is" : "are");
    fa_cli_eprintf(" (the ops fuse-advise runs: %s)\n", FA_SUPPORTED_OPS_DOC);
    fa_buf_free(&b);
}

const char *fa_cli_node_pattern(const fa_node *n)
{
    if (n->op) return fa_pattern_name(n->op->pattern);
    return fa_op_find(n->domain, n->op_type) ? "not analysed" : "unsupported";
}

char *fa_cli_dim_defaults_text(const fa_graph *g)
{
    if (!g || g->n_dim_defaults == 0) return NULL;
    fa_buf b;
    fa_buf_init(&b);
    for (int i = 0; i < g->n_dim_defaults; i++) fa_buf_printf(&b, "%s%s=%d", i ? "," : "", g->dim_defaults[i], FA_DIM_DEFAULT);
    return b.data;
}

bool fa_cli_is_tty(void) { return isatty(2) && !getenv("CI"); }

void fa_cli_log_sink(void *user, int level, const char *msg)
{
    (void)user;
    static const char *const lv[] = {"error", "warning", "info", "debug"};
    fa_cli_eprintf("fuse-advise: %s: %s\n", lv[level & 3], msg);
}

const char *fa_cli_default_db(void)
{
    const char *e = getenv("FUSE_ADVISE_DB");
    return e && *e ? e : FA_STORE_DEFAULT_PATH;
}

static void warn_uri_password(const char *where, const char *v)
{
    bool had = false;
    char *r = fa_store_redact_arg(v, &had);
    if (had)
        fprintf(stderr,
                "fuse-advise: warning: %s holds a password (%s): other users of this machine can read a command "
                "line; give it through PGPASSWORD, ~/.pgpass (PGPASSFILE) or a service file instead. It is not "
                "stored in the run database.\n",
                where, r ? r : "postgresql://...");
    free(r);
}

void fa_cli_warn_uri_passwords(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) warn_uri_password("the command line", argv[i]);
    const char *e = getenv("FUSE_ADVISE_DB");
    if (e) warn_uri_password("FUSE_ADVISE_DB", e);
}

char *fa_cli_command_line(const char *prefix, int argc, char **argv)
{
    fa_buf b;
    fa_buf_init(&b);
    if (prefix) fa_buf_puts(&b, prefix);
    for (int i = 0; i < argc; i++) {
        char *r = fa_store_redact_arg(argv[i], NULL);
        if (!r) b.oom = true;
        if (b.len) fa_buf_puts(&b, " ");
        if (r) fa_buf_puts(&b, r);
        free(r);
    }
    if (b.oom) {
        fa_buf_free(&b);
        return NULL;
    }
    return b.data ? b.data : strdup("");
}
