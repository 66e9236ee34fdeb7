/* cli/options — every verb's options as one table (cli.h fa_cli_opt rows): the same table parses
 * argv, prints `VERB --help` and names the nearest option when one is misspelt. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* ---- did you mean ---- */

/* Optimal string alignment distance (Levenshtein with adjacent transpositions, Damerau 1964):
 * "rnu" -> "run" is 1. Words longer than 63 bytes are never near anything. */
static int osa_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63) return 1000;
    int d[64][64];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

const char *fa_cli_nearest(const char *word, const char *const *cands, const int *owner, int n)
{
    const char *w = word;
    while (*w == '-') w++;
    size_t wl = strlen(w);
    if (wl == 0) return NULL;
    /* a unique candidate the word begins (`--max-o` -> --max-ops) */
    const char *prefix_of = NULL;
    int n_prefix = 0, prefix_owner = -1;
    for (int i = 0; i < n; i++) {
        const char *c = cands[i];
        while (*c == '-') c++;
        int who = owner ? owner[i] : i;
        if (wl >= 3 && strlen(c) > wl && !strncmp(c, w, wl) && who != prefix_owner) {
            if (!prefix_of) prefix_of = cands[i];
            prefix_owner = who;
            n_prefix++;
        }
    }
    if (n_prefix == 1) return prefix_of;
    /* else the nearest by edit distance, when it is close for the word's length: at most 1 edit
     * in a word of up to 4 letters, 2 up to 8, 3 beyond; a tie suggests nothing */
    int best = 1000, n_best = 0, best_owner = -1, limit = wl <= 4 ? 1 : wl <= 8 ? 2 : 3;
    const char *pick = NULL;
    for (int i = 0; i < n; i++) {
        const char *c = cands[i];
        while (*c == '-') c++;
        int d = osa_distance(w, c), who = owner ? owner[i] : i;
        if (d < best) {
            best = d;
            pick = cands[i];
            best_owner = who;
            n_best = 1;
        } else if (d == best && who != best_owner) {
            n_best++;
        }
    }
    return best <= limit && n_best == 1 ? pick : NULL;
}

/* ---- the table ---- */

/* The rows of `opts` with their included groups flattened, in help order (at most cap). */
static int flatten(const fa_cli_opt *opts, const fa_cli_opt **out, int n, int cap)
{
    for (const fa_cli_opt *o = opts; o && o->kind != FA_CLI_OPT_END; o++) {
        if (o->kind == FA_CLI_OPT_INCLUDE) n = flatten(o->group, out, n, cap);
        else if (n < cap) out[n++] = o;
    }
    return n;
}

#define MAX_ROWS 128

static bool takes_value(const fa_cli_opt *o) { return o->kind != FA_CLI_OPT_FLAG && o->kind != FA_CLI_OPT_GROUP; }

/* "3%", "3" -> 0.03; "0.5%" -> 0.005. false on anything else. */
static bool parse_percent(const char *v, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || errno || !isfinite(x)) return false;
    if (*end == '%') end++;
    if (*end) return false;
    *out = x / 100.0;
    return true;
}

static void range_text(const fa_cli_opt *o, char *buf, size_t cap)
{
    buf[0] = 0;
    switch (o->kind) {
    case FA_CLI_OPT_INT:
    case FA_CLI_OPT_I64:
        snprintf(buf, cap, "[%" PRId64 ", %" PRId64 "]", o->lo, o->hi);
        break;
    case FA_CLI_OPT_DOUBLE:
        snprintf(buf, cap, "%s%g, %g%s", o->flags & FA_CLI_MIN_OPEN ? "(" : "[", o->flo, o->fhi,
                 o->flags & FA_CLI_MAX_OPEN ? ")" : "]");
        break;
    case FA_CLI_OPT_PERCENT:
        snprintf(buf, cap, "%s%g%%, %g%%%s", o->flags & FA_CLI_MIN_OPEN ? "(" : "[", 100 * o->flo, 100 * o->fhi,
                 o->flags & FA_CLI_MAX_OPEN ? ")" : "]");
        break;
    case FA_CLI_OPT_CALLBACK: /* an integer range the parser reads (--threads) */
        if (o->hi > o->lo) snprintf(buf, cap, "[%" PRId64 ", %" PRId64 "]", o->lo, o->hi);
        break;
    default:
        break;
    }
}

/* Parse v into o's destination; false with the sentence in why (nothing printed). */
static bool set_value(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *v, fa_buf *why)
{
    char range[96];
    range_text(o, range, sizeof range);
    switch (o->kind) {
    case FA_CLI_OPT_FLAG:
        *(bool *)o->dest = true;
        return true;
    case FA_CLI_OPT_STRING:
        if (!*v) {
            fa_buf_printf(why, "%s needs %s", o->name, o->metavar ? o->metavar : "a value");
            return false;
        }
        *(const char **)o->dest = v;
        return true;
    case FA_CLI_OPT_INT:
    case FA_CLI_OPT_I64: {
        char *end;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        /* ERANGE: strtoll saturates at LLONG_MIN/MAX; that is a refusal, never a value */
        if (!*v || *end || errno || x < o->lo || x > o->hi) {
            fa_buf_printf_term(why, "%s expects an integer in %s, got '%s'", o->name, range, v);
            return false;
        }
        if (o->kind == FA_CLI_OPT_INT) *(int *)o->dest = (int)x;
        else *(int64_t *)o->dest = (int64_t)x;
        return true;
    }
    case FA_CLI_OPT_DOUBLE:
    case FA_CLI_OPT_PERCENT: {
        double x = 0;
        bool ok;
        if (o->kind == FA_CLI_OPT_PERCENT) {
            ok = parse_percent(v, &x);
        } else {
            char *end;
            errno = 0;
            x = strtod(v, &end);
            /* isfinite: "inf", "nan", and 1e400 (ERANGE, HUGE_VAL) are refused, never clamped */
            ok = *v && !*end && !errno && isfinite(x);
        }
        ok = ok && x >= o->flo && x <= o->fhi && !((o->flags & FA_CLI_MIN_OPEN) && x == o->flo) &&
             !((o->flags & FA_CLI_MAX_OPEN) && x == o->fhi);
        if (!ok) {
            fa_buf_printf_term(why, "%s expects %s in %s, got '%s'", o->name,
                               o->kind == FA_CLI_OPT_PERCENT ? "a percentage like 3%" : "a finite number", range, v);
            return false;
        }
        *(double *)o->dest = x;
        return true;
    }
    case FA_CLI_OPT_CALLBACK:
        return o->fn(ctx, verb, o, v, why) == 0;
    default:
        return true;
    }
}

int fa_cli_opt_set(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *v)
{
    fa_buf why;
    fa_buf_init(&why);
    bool ok = set_value(ctx, verb, o, v, &why);
    if (!ok) fa_cli_usage(verb, "%s", why.data ? why.data : "bad value");
    fa_buf_free(&why);
    return ok ? 0 : -1;
}

int fa_cli_opt_try(fa_ctx *ctx, const fa_cli_opt *o, const char *v)
{
    fa_buf why;
    fa_buf_init(&why);
    bool ok = set_value(ctx, NULL, o, v, &why);
    fa_buf_free(&why);
    return ok ? 0 : -1;
}

static void print_wrapped(fa_buf *b, const char *text, int col, int indent, int width)
{
    /* words of text after column col, lines broken before `width`, continued at `indent` */
    const char *p = text;
    while (*p) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ' ' && *e != '\n') e++;
        int wl = (int)(e - p);
        if (!wl && *e != '\n') break;
        if (col > indent && col + 1 + wl > width) {
            fa_buf_printf(b, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fa_buf_puts(b, " ");
            col++;
        }
        fa_buf_printf(b, "%.*s", wl, p);
        col += wl;
        p = e;
        if (*p == '\n') { /* an explicit break inside a row's help */
            fa_buf_printf(b, "\n%*s", indent, "");
            col = indent;
            p++;
        }
    }
}

static void default_text(const fa_cli_opt *o, char *buf, size_t cap)
{
    buf[0] = 0;
    if (o->flags & FA_CLI_NO_DEFAULT || !o->dest) return;
    switch (o->kind) {
    case FA_CLI_OPT_INT:
        snprintf(buf, cap, "%d", *(const int *)o->dest);
        break;
    case FA_CLI_OPT_I64:
        snprintf(buf, cap, "%" PRId64, *(const int64_t *)o->dest);
        break;
    case FA_CLI_OPT_DOUBLE:
        snprintf(buf, cap, "%g", *(const double *)o->dest);
        break;
    case FA_CLI_OPT_PERCENT:
        snprintf(buf, cap, "%g%%", 100 * *(const double *)o->dest);
        break;
    default:
        break;
    }
}

#define HELP_COL 26
#define HELP_WIDTH 100

void fa_cli_help(fa_buf *b, const fa_cli_spec *spec)
{
    const char *syn = spec->synopsis ? spec->synopsis : "[options]";
    for (int first = 1; *syn; first = 0) {
        const char *nl = strchr(syn, '\n');
        int len = nl ? (int)(nl - syn) : (int)strlen(syn);
        fa_buf_printf(b, "%s fuse-advise %s %.*s\n", first ? "usage:" : "      ", spec->verb, len, syn);
        syn += len + (nl ? 1 : 0);
    }
    if (spec->about) fa_buf_puts(b, spec->about);
    const fa_cli_opt *rows[MAX_ROWS];
    int n = flatten(spec->opts, rows, 0, MAX_ROWS);
    bool heading = false;
    for (int i = 0; i < n; i++) {
        const fa_cli_opt *o = rows[i];
        if (o->kind == FA_CLI_OPT_GROUP) {
            fa_buf_printf(b, "\n%s:\n", o->help);
            heading = true;
            continue;
        }
        if (o->flags & FA_CLI_HIDDEN) continue;
        if (!heading) {
            fa_buf_puts(b, "\noptions:\n");
            heading = true;
        }
        size_t start = b->len;
        fa_buf_printf(b, "  %s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "", o->name);
        if (takes_value(o)) fa_buf_printf(b, " %s", o->metavar ? o->metavar : "VALUE");
        int col = (int)(b->len - start);
        if (col + 2 > HELP_COL) {
            fa_buf_printf(b, "\n%*s", HELP_COL, "");
        } else {
            fa_buf_printf(b, "%*s", HELP_COL - col, "");
        }
        char range[96], dflt[64], tail[200];
        range_text(o, range, sizeof range);
        default_text(o, dflt, sizeof dflt);
        tail[0] = 0;
        if (range[0] && dflt[0]) snprintf(tail, sizeof tail, " (%s in %s, default %s)", o->metavar ? o->metavar : "value", range, dflt);
        else if (range[0]) snprintf(tail, sizeof tail, " (%s in %s)", o->metavar ? o->metavar : "value", range);
        fa_buf t;
        fa_buf_init(&t);
        fa_buf_printf(&t, "%s%s", o->help ? o->help : "", tail);
        print_wrapped(b, t.data ? t.data : "", HELP_COL, HELP_COL, HELP_WIDTH);
        fa_buf_free(&t);
        fa_buf_puts(b, "\n");
    }
    if (spec->epilogue) {
        fa_buf_puts(b, "\n");
        fa_buf_puts(b, spec->epilogue);
    }
}

static int unknown_option(const char *verb, const char *arg, const fa_cli_opt *const *rows, int n)
{
    const char *names[2 * MAX_ROWS + 1];
    int owner[2 * MAX_ROWS + 1], k = 0;
    for (int i = 0; i < n; i++) {
        if (rows[i]->kind == FA_CLI_OPT_GROUP) continue;
        owner[k] = i;
        names[k++] = rows[i]->name;
        if (rows[i]->alias) {
            owner[k] = i;
            names[k++] = rows[i]->alias;
        }
    }
    owner[k] = n;
    names[k++] = "--help";
    char word[128];
    const char *eq = strchr(arg, '=');
    snprintf(word, sizeof word, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
    const char *near = fa_cli_nearest(word, names, owner, k);
    if (near) return fa_cli_usage(verb, "unknown option '%s' (did you mean %s?)", arg, near);
    return fa_cli_usage(verb, "unknown option '%s'", arg);
}

int fa_cli_parse(fa_ctx *ctx, const fa_cli_spec *spec, int argc, char **argv, fa_cli_args *args)
{
    const char *verb = spec->verb;
    const fa_cli_opt *rows[MAX_ROWS];
    int n = flatten(spec->opts, rows, 0, MAX_ROWS);
    memset(args, 0, sizeof *args);
    args->rest = argc;
    bool options_done = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!options_done && !strcmp(a, "--")) {
            if (spec->command_after_dashdash) {
                args->rest = i + 1;
                break;
            }
            options_done = true;
            continue;
        }
        if (!options_done && a[0] == '-' && a[1]) {
            if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                fa_buf b;
                fa_buf_init(&b);
                fa_cli_help(&b, spec);
                fputs(b.oom ? "out of memory\n" : b.data, stdout);
                fa_buf_free(&b);
                return 0;
            }
            const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
            size_t nl = eq ? (size_t)(eq - a) : strlen(a);
            const fa_cli_opt *o = NULL;
            for (int k = 0; k < n && !o; k++) {
                const fa_cli_opt *r = rows[k];
                if (r->kind == FA_CLI_OPT_GROUP) continue;
                if ((strlen(r->name) == nl && !strncmp(r->name, a, nl)) ||
                    (r->alias && strlen(r->alias) == nl && !strncmp(r->alias, a, nl)))
                    o = r;
            }
            if (!o) return unknown_option(verb, a, rows, n);
            const char *v = NULL;
            if (takes_value(o)) {
                if (eq) v = eq + 1;
                else if (i + 1 < argc) v = argv[++i];
                else return fa_cli_usage(verb, "%.*s needs %s", (int)nl, a, o->metavar ? o->metavar : "a value");
            } else if (eq) {
                return fa_cli_usage(verb, "%s takes no value (got '%s')", o->name, a);
            }
            if (fa_cli_opt_set(ctx, verb, o, v) < 0) return 2;
            continue;
        }
        if (args->n >= spec->max_args || args->n >= FA_CLI_MAX_ARGS) {
            if (spec->max_args == 0 && spec->command_after_dashdash)
                return fa_cli_usage(verb, "unexpected argument '%s' (the command goes after --)", a);
            return fa_cli_usage(verb, "unexpected argument '%s'", a);
        }
        args->arg[args->n++] = a;
    }
    if (args->n < spec->min_args)
        return fa_cli_usage(verb, "missing %s", spec->args_name ? spec->args_name : "an argument");
    return -1;
}

/* ---- shared rows' value parsers ---- */

int fa_cli_opt_shape(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *v, fa_buf *why)
{
    (void)verb;
    fa_cli_model_opts *mo = o->dest;
    int cap = (int)(sizeof mo->bindings / sizeof mo->bindings[0]);
    if (!*v) {
        fa_buf_puts(why, "--shape needs NAME=DIMS");
        return -1;
    }
    if (mo->n_bindings >= cap) {
        fa_buf_printf(why, "at most %d --shape bindings", cap);
        return -1;
    }
    fa_status s = fa_shape_binding_parse(ctx, v, &mo->bindings[mo->n_bindings]);
    if (s) {
        fa_buf_puts(why, fa_ctx_errmsg(ctx));
        fa_ctx_clear(ctx);
        return -1;
    }
    mo->n_bindings++;
    return 0;
}

int fa_cli_opt_threads(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *v, fa_buf *why)
{
    fa_cli_opt row = *o;
    row.kind = FA_CLI_OPT_INT;
    if (!set_value(ctx, verb, &row, v, why)) return -1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int t = *(int *)o->dest;
    if (verb && cores > 0 && t > cores)
        fa_cli_eprintf("fuse-advise %s: warning: --threads %d is more than the %ld cores of this machine: threads that "
                       "share a core wait for each other, so the timings measure the sharing (0 uses every core)\n",
                       verb, t, cores);
    return 0;
}

int fa_cli_opt_layout(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *v, fa_buf *why)
{
    (void)ctx;
    (void)verb;
    fa_layout l;
    if (!strcmp(v, "auto")) *(int *)o->dest = -1;
    else if (fa_layout_of_name(v, &l)) *(int *)o->dest = (int)l;
    else {
        fa_buf_puts(why, "expected auto, nhwc, nChw8c, nChw16c or plain");
        return -1;
    }
    return 0;
}

int fa_cli_opt_target(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *v, fa_buf *why)
{
    (void)verb;
    if (fa_target_parse(ctx, v, (fa_target *)o->dest)) {
        fa_buf_puts(why, fa_ctx_errmsg(ctx));
        fa_ctx_clear(ctx);
        return -1;
    }
    return 0;
}
