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
    /* every verb that needs a GPU (run/apply on cuda, trace) ends here without one: name the two
     * ways to GPU advice that need none (issue 40) */
    if (strstr(m, "no CUDA driver"))
        fa_cli_eprintf("fuse-advise: without a GPU here, two ways give GPU advice: run the model on the cpu and plan it "
                       "for the GPU from its data sheet (`fuse-advise run MODEL --no-apply && fuse-advise advise latest "
                       "--target cuda --arch sm_90`), or profile it on the GPU (PyTorch profiler JSON, or `nsys export "
                       "--type sqlite`) and `fuse-advise import TRACE` for advice from its measured kernels\n");
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

const char *fa_cli_opt_value(int argc, char **argv, int *i, const char *name)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] != 0) return NULL;
    if (*i + 1 >= argc) return "";
    (*i)++;
    return argv[*i];
}

long fa_cli_parse_long(const char *verb, const char *opt, const char *v, long min, long max)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < min || x > max) {
        fa_cli_usage(verb, "%s expects an integer in [%ld, %ld], got '%s'", opt, min, max, v);
        return -1;
    }
    return x;
}

int fa_cli_parse_i64(const char *verb, const char *opt, const char *v, int64_t min, int64_t max, int64_t *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    /* ERANGE: strtoll saturates at LLONG_MIN/MAX; that is a refusal, never a value */
    if (!*v || *end || errno || x < min || x > max) {
        fa_cli_usage(verb, "%s expects an integer in [%" PRId64 ", %" PRId64 "], got '%s'", opt, min, max, v);
        return -1;
    }
    *out = (int64_t)x;
    return 0;
}

int fa_cli_parse_double(const char *verb, const char *opt, const char *v, double min, double max, bool min_open,
                        double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    /* isfinite: "inf", "nan", and 1e400 (ERANGE, HUGE_VAL) are refused, never clamped */
    if (!*v || *end || errno || !isfinite(x) || x < min || (min_open && x == min) || x > max) {
        fa_cli_usage(verb, "%s expects a finite number in %s%g, %g], got '%s'", opt, min_open ? "(" : "[", min, max, v);
        return -1;
    }
    *out = x;
    return 0;
}

int fa_cli_apply_bound_opt(const char *verb, int argc, char **argv, int *i, int *max_clusters, double *budget_s)
{
    const char *v;
    int save = *i;
    if ((v = fa_cli_opt_value(argc, argv, i, "--max-clusters"))) {
        long x = fa_cli_parse_long(verb, "--max-clusters", v, 1, 1000000);
        if (x < 0) return -1;
        *max_clusters = (int)x;
        return 1;
    }
    *i = save;
    if ((v = fa_cli_opt_value(argc, argv, i, "--apply-budget"))) {
        /* seconds; at most a week */
        if (fa_cli_parse_double(verb, "--apply-budget", v, 0, 604800, true, budget_s) < 0) return -1;
        return 1;
    }
    *i = save;
    return 0;
}

int fa_cli_model_opt(fa_ctx *ctx, const char *verb, int argc, char **argv, int *i, fa_cli_model_opts *o)
{
    const char *v;
    int save = *i;
    if ((v = fa_cli_opt_value(argc, argv, i, "--shape"))) {
        if (!*v) { fa_cli_usage(verb, "--shape needs NAME=DIMS"); return -1; }
        if (o->n_bindings >= 16) { fa_cli_usage(verb, "at most 16 --shape bindings"); return -1; }
        fa_status s = fa_shape_binding_parse(ctx, v, &o->bindings[o->n_bindings]);
        if (s) { fa_cli_eprintf("fuse-advise %s: %s\n", verb, fa_ctx_errmsg(ctx)); return -1; }
        o->n_bindings++;
        return 1;
    }
    *i = save;
    if ((v = fa_cli_opt_value(argc, argv, i, "--batch"))) {
        long b = fa_cli_parse_long(verb, "--batch", v, 1, 1 << 20);
        if (b < 0) return -1;
        o->batch = (int)b;
        return 1;
    }
    *i = save;
    if (!strcmp(argv[*i], "--no-fold")) {
        o->no_fold = true;
        return 1;
    }
    if (!strcmp(argv[*i], "--no-dim-defaults")) {
        o->no_dim_defaults = true;
        return 1;
    }
    return 0;
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
                                           "kernels.csv", "plan.json", "model.folded.onnx", "kernels", NULL};

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

fa_status fa_cli_check_out_dir(fa_ctx *ctx, const char *out_dir, const char *db)
{
    fa_status s = fa_cli_check_not_db(ctx, out_dir, true, db);
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
