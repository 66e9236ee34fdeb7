/* store/conninfo — PostgreSQL connection strings as the user gives them (`--db`, FUSE_ADVISE_DB,
 * `import-runs SRC`): which strings name a server, and every form of them with the secrets taken
 * out before anything is printed or stored. libpq reads the string (store/pg.c,
 * fa_store_pq_conninfo: PQconninfoParse); this file holds what does not need libpq: the
 * recognition, the fallback rendering of a string libpq cannot or will not read, and the command
 * line's redaction. */
#include "store-impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Length of a postgresql:// or postgres:// scheme prefix, any case (RFC 3986 section 3.1: a
 * scheme is case-insensitive; libpq itself compares it case-sensitively, so the scheme is
 * lowercased before libpq reads the string); 0 when s has neither. */
static size_t scheme_len(const char *s)
{
    if (!strncasecmp(s, "postgresql://", 13)) return 13;
    if (!strncasecmp(s, "postgres://", 11)) return 11;
    return 0;
}

/* libpq's keyword/value form (PostgreSQL docs 34.1.1.1): it opens with `keyword =`. */
static bool keyword_form(const char *s)
{
    while (isspace((unsigned char)*s)) s++;
    if (!isalpha((unsigned char)*s) && *s != '_') return false;
    while (isalnum((unsigned char)*s) || *s == '_') s++;
    while (isspace((unsigned char)*s)) s++;
    return *s == '=';
}

bool fa_store_path_is_pg(const char *path) { return path && (scheme_len(path) > 0 || keyword_form(path)); }

/* A user name shown in a fallback rendering: plain characters only (anything else may be a
 * password that libpq could not separate from it). */
static bool plain_user(const char *p, size_t n)
{
    if (n == 0 || n > 64) return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)p[i]) && !strchr("._-", p[i])) return false;
    return true;
}

/* The rendering of a string libpq cannot read, or that is refused: a URI keeps its scheme, a
 * plain user name, "***" for whatever stood between it and the last '@', and the host, port and
 * database after that '@' without the query; a keyword/value string keeps nothing. */
static char *fallback_display(const char *s, bool *had_password)
{
    fa_buf b;
    fa_buf_init(&b);
    size_t sl = scheme_len(s);
    if (!sl) {
        fa_buf_puts(&b, "(a libpq keyword/value connection string)");
        if (had_password) *had_password = strstr(s, "password") != NULL;
    } else {
        for (size_t i = 0; i < sl; i++) fa_buf_printf(&b, "%c", tolower((unsigned char)s[i]));
        const char *rest = s + sl, *at = strrchr(rest, '@');
        if (at) {
            size_t ul = strcspn(rest, ":@");
            if (plain_user(rest, ul) && (rest + ul == at || rest[ul] == ':')) {
                fa_buf_append(&b, rest, ul);
                if (rest + ul != at) fa_buf_puts(&b, ":***");
            } else {
                fa_buf_puts(&b, "***");
            }
            fa_buf_puts(&b, "@");
            if (had_password) *had_password = rest + ul != at;
            rest = at + 1;
        }
        size_t hl = strcspn(rest, "?#");
        fa_buf_append(&b, rest, hl);
        if (rest[hl]) fa_buf_puts(&b, "?...");
        if (had_password && !*had_password) *had_password = strcasestr(rest, "password") || strcasestr(rest, "%70assword");
    }
    if (b.oom) {
        fa_buf_free(&b);
        return NULL;
    }
    return b.data;
}

void fa_conninfo_free(fa_conninfo *ci)
{
    if (!ci) return;
    free(ci->connect);
    free(ci->display);
    for (int i = 0; i < ci->n_secret; i++) free(ci->secret[i]);
    memset(ci, 0, sizeof *ci);
}

bool fa_conninfo_read(const char *s, fa_conninfo *ci)
{
    memset(ci, 0, sizeof *ci);
    size_t sl = scheme_len(s);
    char *canon = strdup(s);
    if (!canon) return false;
    for (size_t i = 0; i < sl; i++) canon[i] = (char)tolower((unsigned char)canon[i]);
    int rc = fa_store_pq_conninfo(canon, sl > 0, ci);
    if (rc == -2) {
        free(canon);
        fa_conninfo_free(ci);
        return false;
    }
    if (rc == 0) {
        ci->connect = canon;
        return true;
    }
    /* refused (why set) or libpq unavailable (why empty: opening says so): nothing connects */
    free(canon);
    free(ci->display);
    bool had = false;
    ci->display = fallback_display(s, &had);
    ci->had_password = ci->had_password || had;
    if (!ci->display) {
        fa_conninfo_free(ci);
        return false;
    }
    return true;
}

char *fa_conninfo_scrub(const fa_conninfo *ci, const char *msg)
{
    fa_buf b;
    fa_buf_init(&b);
    const char *p = msg ? msg : "";
    while (*p) {
        size_t best = 0;
        for (int i = 0; i < ci->n_secret; i++) {
            size_t n = strlen(ci->secret[i]);
            if (n > best && !strncmp(p, ci->secret[i], n)) best = n;
        }
        if (best) {
            fa_buf_puts(&b, "***");
            p += best;
        } else {
            fa_buf_append(&b, p++, 1);
        }
    }
    if (b.oom) {
        fa_buf_free(&b);
        return NULL;
    }
    return b.data ? b.data : strdup("");
}

char *fa_store_redact_uri(const char *uri, bool *had_password)
{
    if (had_password) *had_password = false;
    if (!fa_store_path_is_pg(uri)) return strdup(uri);
    fa_conninfo ci;
    if (!fa_conninfo_read(uri, &ci)) return NULL;
    /* "batch=4" (a --shape value) is no connection string libpq reads and holds no secret: shown
     * as it is */
    if (!scheme_len(uri) && !ci.connect && !ci.had_password) {
        fa_conninfo_free(&ci);
        return strdup(uri);
    }
    char *d = ci.display;
    if (had_password) *had_password = ci.had_password;
    ci.display = NULL;
    fa_conninfo_free(&ci);
    return d;
}

char *fa_store_redact_arg(const char *arg, bool *had_password)
{
    if (had_password) *had_password = false;
    if (fa_store_path_is_pg(arg)) return fa_store_redact_uri(arg, had_password);
    /* "--db=VALUE", "--to=VALUE" */
    const char *eq = arg[0] == '-' ? strchr(arg, '=') : NULL;
    if (!eq || !fa_store_path_is_pg(eq + 1)) return strdup(arg);
    char *r = fa_store_redact_uri(eq + 1, had_password);
    char *out = r ? malloc((size_t)(eq + 1 - arg) + strlen(r) + 1) : NULL;
    if (out) {
        memcpy(out, arg, (size_t)(eq + 1 - arg));
        strcpy(out + (eq + 1 - arg), r);
    }
    free(r);
    return out;
}

/* A stored command line is argv joined by spaces (the CLI redacts each argument before it joins
 * them, fa_store_redact_arg). This is the store's own pass over whatever text it is given: every
 * word that is, or ends in `=`, a connection string is rendered without its secrets, and the value
 * of a word `password=` / `sslpassword=` (a keyword/value string split at its spaces) is replaced.
 * malloc'd; NULL when out of memory. */
char *fa_store_redact_command_line(const char *cmd)
{
    fa_buf b;
    fa_buf_init(&b);
    const char *p = cmd;
    while (*p) {
        size_t sp = strspn(p, " \t\n");
        fa_buf_append(&b, p, sp);
        p += sp;
        size_t w = strcspn(p, " \t\n");
        if (!w) continue;
        /* a quoted keyword value ("password='a b'") is one word with its spaces */
        const char *kq = memmem(p, w, "password='", 10);
        if (kq) {
            const char *e = kq + 10;
            while (*e && *e != '\'') e += e[0] == '\\' && e[1] ? 2 : 1;
            if ((size_t)(e - p) >= w) w = (size_t)(e - p) + (*e ? 1 : 0);
        }
        char *word = strndup(p, w);
        char *r = word ? fa_store_redact_arg(word, NULL) : NULL;
        if (!r) b.oom = true;
        else {
            /* a keyword/value string's secret words are caught above (keyword form); one written
             * inside another word ("x,password=...") is cut here */
            char *k = strstr(r, "password=");
            if (k && !strstr(k, "password=***")) {
                fa_buf_append(&b, r, (size_t)(k - r) + 9);
                fa_buf_puts(&b, "***");
            } else {
                fa_buf_puts(&b, r);
            }
        }
        free(r);
        free(word);
        p += w;
    }
    if (b.oom) {
        fa_buf_free(&b);
        return NULL;
    }
    return b.data ? b.data : strdup("");
}
