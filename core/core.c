/* core — status names, error context, arena, buffers, escaping, clocks, hashing, PRNG. */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- status ---- */

static const char *const k_status_names[] = {
    "ok", "bad input", "unsupported", "i/o error", "out of memory",
    "runtime error", "usage error", "gate failure", "internal error",
};
_Static_assert(sizeof k_status_names / sizeof k_status_names[0] == FA_STATUS_COUNT, "k_status_names: one row per value");

const char *fa_status_name(fa_status s)
{
    return (unsigned)s < FA_STATUS_COUNT ? k_status_names[s] : "unknown status";
}

int fa_status_exit_code(fa_status s)
{
    switch (s) {
    case FA_OK: return 0;
    case FA_ERR_USAGE: return 2;
    case FA_ERR_GATE: return 3;
    default: return 1;
    }
}

/* ---- context ---- */

struct fa_ctx {
    fa_status status;
    fa_err_reason reason;
    char msg[4096];
    fa_log_fn log_fn;
    void *log_user;
    int log_max;
};

fa_ctx *fa_ctx_create(void)
{
    fa_ctx *c = calloc(1, sizeof *c);
    if (c) c->log_max = FA_LOG_WARN;
    return c;
}

void fa_ctx_free(fa_ctx *ctx) { free(ctx); }

/* fmt formatted into out (cap bytes) with every %s argument escaped for a terminal
 * (fa_buf_vprintf_term): messages name nodes, tensors, files and database values, and the CLI
 * prints them. Out of memory: plain vsnprintf, then every control byte as '?'. */
static void format_message(char *out, size_t cap, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    fa_buf m;
    fa_buf_init(&m);
    fa_buf_vprintf_term(&m, fmt, ap);
    if (!m.oom) {
        size_t n = m.len < cap - 1 ? m.len : cap - 1;
        memcpy(out, m.data ? m.data : "", n);
        out[n] = 0;
    } else {
        vsnprintf(out, cap, fmt, aq);
        for (char *c = out; *c; c++)
            if ((unsigned char)*c < 0x20 && *c != '\n' && *c != '\t') *c = '?';
            else if ((unsigned char)*c == 0x7f) *c = '?';
    }
    fa_buf_free(&m);
    va_end(aq);
}

fa_status fa_ctx_error(fa_ctx *ctx, fa_status s, const char *fmt, ...)
{
    if (!ctx) return s;
    va_list ap;
    va_start(ap, fmt);
    format_message(ctx->msg, sizeof ctx->msg, fmt, ap);
    va_end(ap);
    ctx->status = s;
    ctx->reason = FA_REASON_NONE;
    return s;
}

fa_status fa_ctx_wrap(fa_ctx *ctx, fa_status s, const char *fmt, ...)
{
    if (!ctx) return s;
    char prefix[1024];
    va_list ap;
    va_start(ap, fmt);
    format_message(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[sizeof ctx->msg];
    memcpy(old, ctx->msg, sizeof old);
    snprintf(ctx->msg, sizeof ctx->msg, "%s%s", prefix, old);
    ctx->status = s;
    return s;
}

const char *fa_ctx_errmsg(const fa_ctx *ctx) { return ctx ? ctx->msg : ""; }
fa_status fa_ctx_status(const fa_ctx *ctx) { return ctx ? ctx->status : FA_OK; }

void fa_ctx_clear(fa_ctx *ctx)
{
    if (!ctx) return;
    ctx->status = FA_OK;
    ctx->reason = FA_REASON_NONE;
    ctx->msg[0] = 0;
}

fa_status fa_ctx_reason_set(fa_ctx *ctx, fa_err_reason r)
{
    if (!ctx) return FA_OK;
    ctx->reason = r >= FA_REASON_NONE && r < FA_REASON_COUNT ? r : FA_REASON_NONE;
    return ctx->status;
}

fa_err_reason fa_ctx_reason(const fa_ctx *ctx) { return ctx && ctx->status ? ctx->reason : FA_REASON_NONE; }

void fa_ctx_set_log(fa_ctx *ctx, fa_log_fn fn, void *user, int max_level)
{
    ctx->log_fn = fn;
    ctx->log_user = user;
    ctx->log_max = max_level;
}

void fa_log(fa_ctx *ctx, int level, const char *fmt, ...)
{
    if (!ctx || !ctx->log_fn || level > ctx->log_max) return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    format_message(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ctx->log_fn(ctx->log_user, level, msg);
}

/* ---- arena ---- */

typedef struct fa_arena_block {
    struct fa_arena_block *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
} fa_arena_block;

struct fa_arena {
    fa_arena_block *head;
    size_t block_bytes;
    size_t total;
};

fa_arena *fa_arena_create(size_t block_bytes)
{
    fa_arena *a = calloc(1, sizeof *a);
    if (a) a->block_bytes = block_bytes ? block_bytes : (size_t)1 << 16;
    return a;
}

void fa_arena_free(fa_arena *a)
{
    if (!a) return;
    for (fa_arena_block *b = a->head, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    free(a);
}

void *fa_arena_alloc(fa_arena *a, size_t bytes)
{
    size_t need = (bytes + 15) & ~(size_t)15;
    if (need < bytes) return NULL;
    fa_arena_block *b = a->head;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > a->block_bytes ? need : a->block_bytes;
        if (cap > SIZE_MAX - sizeof *b) return NULL;
        fa_arena_block *nb = malloc(sizeof *nb + cap);
        if (!nb) return NULL;
        nb->cap = cap;
        nb->used = 0;
        /* Keep the partially used head first if the new block is a one-off big one. */
        if (b && need > a->block_bytes) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += need;
    a->total += need;
    memset(p, 0, bytes);
    return p;
}

char *fa_arena_strndup(fa_arena *a, const char *s, size_t n)
{
    char *p = fa_arena_alloc(a, n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *fa_arena_strdup(fa_arena *a, const char *s)
{
    return s ? fa_arena_strndup(a, s, strlen(s)) : NULL;
}

size_t fa_arena_used(const fa_arena *a) { return a->total; }

/* ---- buffer ---- */

void fa_buf_init(fa_buf *b) { memset(b, 0, sizeof *b); }
void fa_buf_free(fa_buf *b) { free(b->data); fa_buf_init(b); }
void fa_buf_reset(fa_buf *b) { b->len = 0; if (b->data) b->data[0] = 0; }

static bool buf_reserve(fa_buf *b, size_t extra)
{
    if (b->oom) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2) { b->oom = true; return false; }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) { b->oom = true; return false; }
    b->data = p;
    b->cap = cap;
    return true;
}

void fa_buf_append(fa_buf *b, const void *p, size_t n)
{
    if (!buf_reserve(b, n)) return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
}

void fa_buf_puts(fa_buf *b, const char *s) { fa_buf_append(b, s, strlen(s)); }

void fa_buf_vprintf(fa_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || !buf_reserve(b, (size_t)n)) return;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void fa_buf_printf(fa_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fa_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

/* ---- escaping ---- */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) { len = 2; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { len = 3; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { len = 4; min = 0x10000; }
    else return 0;
    if (n < len) return 0;
    unsigned cp = c & (0x3F >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

static bool disguising(unsigned cp);
static unsigned utf8_cp(const unsigned char *s, size_t l);
bool fa_utf8_disguising(const char *s, size_t l)
{
    return l && disguising(utf8_cp((const unsigned char *)s, l));
}

size_t fa_utf8_seq_len(const char *s, size_t n)
{
    return n ? utf8_seq_len((const unsigned char *)s, n) : 0;
}

/* The code point of the valid UTF-8 sequence of length l at s. */
static unsigned utf8_cp(const unsigned char *s, size_t l)
{
    if (l == 1) return s[0];
    unsigned cp = s[0] & (0x3F >> (l - 1));
    for (size_t i = 1; i < l; i++) cp = (cp << 6) | (s[i] & 0x3F);
    return cp;
}

/* Characters that reorder text or break a line without being C0/C1: Unicode's bidi controls
 * (the "Trojan Source" list, CVE-2021-42574: ALM U+061C, LRM/RLM, LRE..RLO, LRI..PDI), the line
 * and paragraph separators, and the zero-width no-break space U+FEFF: shown escaped so a name
 * cannot disguise what follows it. */
static bool term_invisible(unsigned cp)
{
    return cp == 0x061C || cp == 0x200E || cp == 0x200F || cp == 0x2028 || cp == 0x2029 ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

/* A code point no text surface shows as itself: the C1 controls and term_invisible's. Every
 * escaper (terminal, CSV, HTML, JSON, DOT) takes them out its own way: the second attack pass
 * found U+202E, U+2028 and raw C1 in report.html, summary.json, trace.json, plan.json and
 * graph.dot. */
static bool disguising(unsigned cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || term_invisible(cp);
}


void fa_escape_json(fa_buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        if (c == '"') { fa_buf_puts(b, "\\\""); i++; }
        else if (c == '\\') { fa_buf_puts(b, "\\\\"); i++; }
        else if (c == '\n') { fa_buf_puts(b, "\\n"); i++; }
        else if (c == '\r') { fa_buf_puts(b, "\\r"); i++; }
        else if (c == '\t') { fa_buf_puts(b, "\\t"); i++; }
        else if (c < 0x20 || c == 0x7f) { fa_buf_printf(b, "\\u%04x", c); i++; }
        else if (c == '<' ) { fa_buf_puts(b, "\\u003c"); i++; } /* safe inside <script> */
        else if (c < 0x80) { fa_buf_append(b, &u[i], 1); i++; }
        else {
            size_t l = utf8_seq_len(u + i, n - i);
            if (l == 0) { fa_buf_puts(b, "\\ufffd"); i++; }
            else if (disguising(utf8_cp(u + i, l))) { fa_buf_printf(b, "\\u%04x", utf8_cp(u + i, l)); i += l; }
            else { fa_buf_append(b, &u[i], l); i += l; }
        }
    }
}

void fa_escape_html(fa_buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        switch (c) {
        case '&': fa_buf_puts(b, "&amp;"); i++; continue;
        case '<': fa_buf_puts(b, "&lt;"); i++; continue;
        case '>': fa_buf_puts(b, "&gt;"); i++; continue;
        case '"': fa_buf_puts(b, "&quot;"); i++; continue;
        case '\'': fa_buf_puts(b, "&#39;"); i++; continue;
        default: break;
        }
        /* C0 controls, DEL and the C1 controls (U+0080-U+009F, C2 80..C2 9F): control characters,
         * never text (a kernel name's raw DEL reached report.html) */
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) { fa_buf_printf(b, "&#xFFFD;"); i++; }
        else if (c < 0x80) { fa_buf_append(b, &u[i], 1); i++; }
        else {
            size_t l = utf8_seq_len(u + i, n - i);
            if (l == 0) { fa_buf_puts(b, "&#xFFFD;"); i++; }
            else if (disguising(utf8_cp(u + i, l))) { fa_buf_puts(b, "&#xFFFD;"); i += l; }
            else { fa_buf_append(b, &u[i], l); i += l; }
        }
    }
}

void fa_escape_dot(fa_buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        if (c == '"') { fa_buf_puts(b, "\\\""); i++; }
        else if (c == '\\') { fa_buf_puts(b, "\\\\"); i++; }
        else if (c == '\n') { fa_buf_puts(b, "\\n"); i++; }
        else if (c < 0x20 || c == 0x7f) { fa_buf_puts(b, " "); i++; }
        else if (c < 0x80) { fa_buf_append(b, &u[i], 1); i++; }
        else {
            size_t l = utf8_seq_len(u + i, n - i);
            if (l == 0 || disguising(utf8_cp(u + i, l))) { fa_buf_puts(b, "\xEF\xBF\xBD"); i += l ? l : 1; }
            else { fa_buf_append(b, &u[i], l); i += l; }
        }
    }
}

static void escape_term(fa_buf *b, const char *s, size_t n, bool keep_lines);

void fa_escape_csv(fa_buf *b, const char *s, size_t n)
{
    /* control, C1 and bidi characters first, as the terminal has them: `cat kernels.csv` is a
     * terminal too (an OSC 52 in a kernel name wrote the clipboard) */
    fa_buf t;
    fa_buf_init(&t);
    escape_term(&t, s, n, false);
    if (t.oom) { /* nothing of the cell rather than its raw bytes */
        fa_buf_free(&t);
        b->oom = true;
        return;
    }
    s = t.data ? t.data : "";
    n = t.len;
    /* OWASP "CSV Injection": a cell a spreadsheet would read as a formula */
    bool formula = n > 0 && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r');
    bool quote = formula;
    for (size_t i = 0; i < n; i++)
        if (s[i] == ',' || s[i] == '"') quote = true;
    if (!quote) {
        fa_buf_append(b, s, n);
        fa_buf_free(&t);
        return;
    }
    fa_buf_puts(b, formula ? "\"'" : "\"");
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') fa_buf_puts(b, "\"\"");
        else fa_buf_append(b, &s[i], 1);
    }
    fa_buf_puts(b, "\"");
    fa_buf_free(&t);
}

static void escape_term(fa_buf *b, const char *s, size_t n, bool keep_lines)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0; /* start of the pending run of bytes kept as they are */
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        size_t l = c < 0x80 ? 1 : utf8_seq_len(u + i, n - i);
        unsigned cp = l ? utf8_cp(u + i, l) : 0;
        bool esc = l == 0 || cp < 0x20 || cp == 0x7f || disguising(cp);
        if (keep_lines && (cp == '\n' || cp == '\t') && l) esc = false;
        if (!esc) { i += l; continue; }
        fa_buf_append(b, u + run, i - run);
        if (l == 0) fa_buf_printf(b, "\\x%02x", c);
        else if (cp == '\n') fa_buf_puts(b, "\\n");
        else if (cp == '\t') fa_buf_puts(b, "\\t");
        else if (cp == '\r') fa_buf_puts(b, "\\r");
        else if (cp < 0x80) fa_buf_printf(b, "\\x%02x", cp);
        else fa_buf_printf(b, "\\u%04x", cp);
        i += l ? l : 1;
        run = i;
    }
    fa_buf_append(b, u + run, n - run);
}

void fa_escape_term(fa_buf *b, const char *s, size_t n) { escape_term(b, s, n, false); }
void fa_escape_term_text(fa_buf *b, const char *s, size_t n) { escape_term(b, s, n, true); }

/* One conversion of fa_buf_vprintf_term other than %s / %c: the spec rebuilt without '*' and
 * formatted by the C library with the argument of the type its length modifier names. */
enum { LEN_NONE, LEN_HH, LEN_H, LEN_L, LEN_LL, LEN_J, LEN_Z, LEN_T, LEN_BIG_L };

void fa_buf_vprintf_term(fa_buf *b, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    const char *p = fmt;
    while (*p) {
        const char *pct = strchr(p, '%');
        if (!pct) { fa_buf_puts(b, p); break; }
        fa_buf_append(b, p, (size_t)(pct - p));
        const char *q = pct + 1;
        if (*q == '%') { fa_buf_append(b, "%", 1); p = q + 1; continue; }
        char flags[8];
        int nf = 0;
        while (*q && strchr("-+ #0", *q)) { if (nf < 7) flags[nf++] = *q; q++; }
        flags[nf] = 0;
        int width = -1, prec = -1;
        if (*q == '*') {
            width = va_arg(aq, int);
            q++;
            if (width < 0) { /* a negative width is the '-' flag */
                if (nf < 7) { flags[nf++] = '-'; flags[nf] = 0; }
                width = width == INT32_MIN ? INT32_MAX : -width;
            }
        } else if (*q >= '0' && *q <= '9') {
            width = 0;
            while (*q >= '0' && *q <= '9') { if (width < 100000) width = width * 10 + (*q - '0'); q++; }
        }
        if (*q == '.') {
            q++;
            prec = 0;
            if (*q == '*') { prec = va_arg(aq, int); q++; if (prec < 0) prec = -1; }
            else while (*q >= '0' && *q <= '9') { if (prec < 100000) prec = prec * 10 + (*q - '0'); q++; }
        }
        int len = LEN_NONE;
        const char *len_at = q;
        if (q[0] == 'h' && q[1] == 'h') { len = LEN_HH; q += 2; }
        else if (q[0] == 'h') { len = LEN_H; q++; }
        else if (q[0] == 'l' && q[1] == 'l') { len = LEN_LL; q += 2; }
        else if (q[0] == 'l') { len = LEN_L; q++; }
        else if (q[0] == 'j') { len = LEN_J; q++; }
        else if (q[0] == 'z') { len = LEN_Z; q++; }
        else if (q[0] == 't') { len = LEN_T; q++; }
        else if (q[0] == 'L') { len = LEN_BIG_L; q++; }
        char conv = *q;
        if (!conv) { fa_buf_puts(b, pct); break; } /* a lone '%' at the end: kept */
        p = q + 1;
        bool left = strchr(flags, '-') != NULL;
        if (conv == 's' || conv == 'c') {
            char ch;
            const char *s;
            size_t sn;
            if (conv == 'c') {
                ch = (char)va_arg(aq, int);
                s = &ch;
                sn = 1;
            } else {
                s = va_arg(aq, const char *);
                if (!s) s = "(null)";
                sn = prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s);
            }
            fa_buf e;
            fa_buf_init(&e);
            fa_escape_term(&e, s, sn);
            size_t el = e.oom ? 0 : e.len;
            if (e.oom) b->oom = true;
            size_t padn = width > 0 && (size_t)width > el ? (size_t)width - el : 0;
            if (!left) for (size_t k = 0; k < padn; k++) fa_buf_append(b, " ", 1);
            if (el) fa_buf_append(b, e.data, el);
            if (left) for (size_t k = 0; k < padn; k++) fa_buf_append(b, " ", 1);
            fa_buf_free(&e);
            continue;
        }
        char spec[64];
        int sl = snprintf(spec, sizeof spec, "%%%s", flags);
        if (width >= 0) sl += snprintf(spec + sl, sizeof spec - (size_t)sl, "%d", width);
        if (prec >= 0) sl += snprintf(spec + sl, sizeof spec - (size_t)sl, ".%d", prec);
        sl += snprintf(spec + sl, sizeof spec - (size_t)sl, "%.*s%c", (int)(q - len_at), len_at, conv);
        switch (conv) {
        case 'd': case 'i':
            switch (len) {
            case LEN_L: fa_buf_printf(b, spec, va_arg(aq, long)); break;
            case LEN_LL: fa_buf_printf(b, spec, va_arg(aq, long long)); break;
            case LEN_J: fa_buf_printf(b, spec, va_arg(aq, intmax_t)); break;
            case LEN_Z: fa_buf_printf(b, spec, va_arg(aq, ptrdiff_t)); break; /* signed size_t */
            case LEN_T: fa_buf_printf(b, spec, va_arg(aq, ptrdiff_t)); break;
            default: fa_buf_printf(b, spec, va_arg(aq, int)); break; /* hh, h: promoted to int */
            }
            break;
        case 'u': case 'o': case 'x': case 'X':
            switch (len) {
            case LEN_L: fa_buf_printf(b, spec, va_arg(aq, unsigned long)); break;
            case LEN_LL: fa_buf_printf(b, spec, va_arg(aq, unsigned long long)); break;
            case LEN_J: fa_buf_printf(b, spec, va_arg(aq, uintmax_t)); break;
            case LEN_Z: fa_buf_printf(b, spec, va_arg(aq, size_t)); break;
            case LEN_T: fa_buf_printf(b, spec, va_arg(aq, ptrdiff_t)); break;
            default: fa_buf_printf(b, spec, va_arg(aq, unsigned)); break;
            }
            break;
        case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case 'a': case 'A':
            if (len == LEN_BIG_L) fa_buf_printf(b, spec, va_arg(aq, long double));
            else fa_buf_printf(b, spec, va_arg(aq, double));
            break;
        case 'p': fa_buf_printf(b, spec, va_arg(aq, void *)); break;
        case 'n': (void)va_arg(aq, void *); break; /* never written through */
        default: fa_buf_append(b, pct, (size_t)(p - pct)); break; /* unknown: shown as written */
        }
    }
    va_end(aq);
}

void fa_buf_printf_term(fa_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fa_buf_vprintf_term(b, fmt, ap);
    va_end(ap);
}

/* ---- arithmetic, clocks ---- */

bool fa_mul_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

bool fa_add_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_add_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

bool fa_i64_add(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

bool fa_i64_sub(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

bool fa_i64_mul(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

uint64_t fa_u64_add_sat(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

uint64_t fa_u64_mul_sat(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

int64_t fa_f64_to_i64_sat(double v)
{
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX; /* 2^63, exact in a double */
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

bool fa_warmup_more(int warmup, int done, uint64_t spent_ns)
{
    if (warmup >= 0) return done < warmup;
    return done < 1 || (done < FA_WARMUP_AUTO_MAX && (double)spent_ns < FA_WARMUP_AUTO_MIN_S * 1e9);
}

uint64_t fa_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- files ---- */

fa_status fa_read_file(fa_ctx *ctx, const char *path, uint8_t **out_data, size_t *out_len)
{
    return fa_read_file_max(ctx, path, SIZE_MAX, NULL, out_data, out_len);
}

fa_status fa_read_file_max(fa_ctx *ctx, const char *path, size_t max, const char *what, uint8_t **out_data,
                           size_t *out_len)
{
    int fd = -1;
    fa_status os = fa_open_input(ctx, path, 0, &fd);
    if (os) return os;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    }
    if ((uint64_t)st.st_size > (uint64_t)max) { /* refused before a byte is read or allocated */
        close(fd);
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: %lld bytes, over the %zu-byte limit of %s", path, (long long)st.st_size,
                            max, what ? what : "a file read whole");
    }
    size_t cap = (size_t)st.st_size;
    uint8_t *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: cannot allocate %zu bytes", path, cap + 1);
    }
    size_t len = 0;
    while (len < cap) {
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            fa_status s = fa_ctx_error(ctx, FA_ERR_IO, "%s: read failed at byte %zu: %s", path, len,
                                       strerror(errno));
            free(buf);
            close(fd);
            return s;
        }
        if (r == 0) break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = 0;
    *out_data = buf;
    *out_len = len;
    return FA_OK;
}

/* ---- hashing ---- */

uint64_t fa_hash64(const void *data, size_t n)
{
    /* FNV-1a 64-bit (Fowler–Noll–Vo, offset basis 14695981039346656037, prime 1099511628211). */
    const unsigned char *p = data;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* SipHash-1-3 (Aumasson & Bernstein, "SipHash: a fast short-input PRF", 2012; one compression
 * and three finalization rounds, the variant Python and Rust use for hash tables). */
#define SIP_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define SIP_ROUND(v0, v1, v2, v3)                                                                  \
    do {                                                                                           \
        v0 += v1; v1 = SIP_ROTL(v1, 13); v1 ^= v0; v0 = SIP_ROTL(v0, 32);                         \
        v2 += v3; v3 = SIP_ROTL(v3, 16); v3 ^= v2;                                                 \
        v0 += v3; v3 = SIP_ROTL(v3, 21); v3 ^= v0;                                                 \
        v2 += v1; v1 = SIP_ROTL(v1, 17); v1 ^= v2; v2 = SIP_ROTL(v2, 32);                         \
    } while (0)

uint64_t fa_hash64_keyed(const uint64_t key[2], const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t v0 = key[0] ^ 0x736f6d6570736575ull, v1 = key[1] ^ 0x646f72616e646f6dull;
    uint64_t v2 = key[0] ^ 0x6c7967656e657261ull, v3 = key[1] ^ 0x7465646279746573ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t m;
        memcpy(&m, p + i, 8); /* little-endian hosts (x86-64, aarch64) */
        v3 ^= m;
        SIP_ROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    uint64_t b = (uint64_t)n << 56;
    for (size_t k = 0; i + k < n; k++) b |= (uint64_t)p[i + k] << (8 * k);
    v3 ^= b;
    SIP_ROUND(v0, v1, v2, v3);
    v0 ^= b;
    v2 ^= 0xff;
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

void fa_hash_key_random(uint64_t key[2])
{
    uint64_t k[2] = {0, 0};
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(k, sizeof k, 1, f) != 1) {
        /* no /dev/urandom: still differs per process and call */
        k[0] = fa_now_ns() ^ ((uint64_t)(uintptr_t)key << 17);
        k[1] = fa_hash64(k, sizeof k[0]) ^ (uint64_t)getpid();
    }
    if (f) fclose(f);
    key[0] = k[0];
    key[1] = k[1];
}

static void hex_digest(const unsigned char *md, unsigned len, char *out)
{
    static const char hx[] = "0123456789abcdef";
    for (unsigned i = 0; i < len; i++) {
        out[2 * i] = hx[md[i] >> 4];
        out[2 * i + 1] = hx[md[i] & 15];
    }
    out[2 * len] = 0;
}

void fa_sha256_hex(const void *data, size_t n, char out_hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_Digest(data, n, md, &len, EVP_sha256(), NULL);
    hex_digest(md, len, out_hex);
}

void fa_sha256_base64(const void *data, size_t n, char out_b64[45])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_Digest(data, n, md, &len, EVP_sha256(), NULL);
    EVP_EncodeBlock((unsigned char *)out_b64, md, (int)len); /* 32 bytes -> 44 characters + NUL */
}

struct fa_sha256_job {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool hold, held, done; /* fa_sha256_file_hold's request, the reader's answer, the end */
    fa_ctx *ctx;
    char *path;
    fa_status status;
    char hex[65];
};

/* Between two chunks: wait while the job is held (j NULL: never). */
static void sha256_job_step(fa_sha256_job *j)
{
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    while (j->hold) {
        if (!j->held) {
            j->held = true;
            pthread_cond_broadcast(&j->cv);
        }
        pthread_cond_wait(&j->cv, &j->mu);
    }
    j->held = false;
    pthread_mutex_unlock(&j->mu);
}

static fa_status sha256_file_stepped(fa_ctx *ctx, const char *path, char out_hex[65], fa_sha256_job *job)
{
    int fd = -1;
    fa_status os = fa_open_input(ctx, path, 0, &fd);
    if (os) return os;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: cannot open: %s", path, strerror(errno));
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md) {
        fclose(f);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: cannot allocate digest", path);
    }
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    unsigned char buf[1 << 16];
    size_t r;
    for (sha256_job_step(job); (r = fread(buf, 1, sizeof buf, f)) > 0; sha256_job_step(job)) EVP_DigestUpdate(md, buf, r);
    bool err = ferror(f);
    fclose(f);
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_DigestFinal_ex(md, out, &len);
    EVP_MD_CTX_free(md);
    if (err) return fa_ctx_error(ctx, FA_ERR_IO, "%s: read error", path);
    hex_digest(out, len, out_hex);
    return FA_OK;
}

fa_status fa_sha256_file(fa_ctx *ctx, const char *path, char out_hex[65])
{
    return sha256_file_stepped(ctx, path, out_hex, NULL);
}

static void *sha256_job_run(void *user)
{
    fa_sha256_job *j = user;
    fa_status s = sha256_file_stepped(j->ctx, j->path, j->hex, j);
    pthread_mutex_lock(&j->mu);
    j->status = s;
    j->done = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

fa_sha256_job *fa_sha256_file_start(const char *path)
{
    fa_sha256_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->ctx = fa_ctx_create();
    j->path = strdup(path);
    if (j->ctx && j->path && !pthread_mutex_init(&j->mu, NULL)) {
        if (!pthread_cond_init(&j->cv, NULL)) {
            if (!pthread_create(&j->thread, NULL, sha256_job_run, j)) return j;
            pthread_cond_destroy(&j->cv);
        }
        pthread_mutex_destroy(&j->mu);
    }
    fa_ctx_free(j->ctx);
    free(j->path);
    free(j);
    return NULL;
}

void fa_sha256_file_hold(fa_sha256_job *j, bool hold)
{
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    j->hold = hold;
    if (hold)
        while (!j->held && !j->done) pthread_cond_wait(&j->cv, &j->mu);
    else
        pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

fa_status fa_sha256_file_finish(fa_ctx *ctx, fa_sha256_job *j, char out_hex[65])
{
    fa_sha256_file_hold(j, false);
    pthread_join(j->thread, NULL);
    fa_status s = j->status;
    if (ctx && s) fa_ctx_error(ctx, s, "%s", fa_ctx_errmsg(j->ctx));
    else if (ctx) memcpy(out_hex, j->hex, sizeof j->hex);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    fa_ctx_free(j->ctx);
    free(j->path);
    free(j);
    return ctx ? s : FA_OK;
}

/* ---- command lines from the environment ---- */

void fa_words_free(char **argv)
{
    if (!argv) return;
    for (char **w = argv; *w; w++) free(*w);
    free(argv);
}

fa_status fa_split_words(fa_ctx *ctx, const char *line, const char *what, char ***out_argv, int *out_n)
{
    size_t cap = 8, n = 0, len = strlen(line);
    char **v = calloc(cap, sizeof *v);
    char *word = malloc(len + 1); /* a word is never longer than the line */
    if (!v || !word) {
        free(v);
        free(word);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", what);
    }
    const char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n') p++;
        if (!*p) break;
        size_t wl = 0;
        char quote = 0;
        for (; *p; p++) {
            char c = *p;
            if (quote == '\'') {
                if (c == '\'') quote = 0;
                else word[wl++] = c;
            } else if (quote == '"') {
                if (c == '"') quote = 0;
                else if (c == '\\' && (p[1] == '$' || p[1] == '`' || p[1] == '"' || p[1] == '\\' || p[1] == '\n')) {
                    if (*++p != '\n') word[wl++] = *p; /* backslash-newline: a line continuation */
                } else word[wl++] = c;
            } else if (c == ' ' || c == '\t' || c == '\n') {
                break;
            } else if (c == '\'' || c == '"') {
                quote = c;
            } else if (c == '\\') {
                if (!p[1]) continue; /* a trailing backslash: nothing to quote, dropped */
                if (*++p != '\n') word[wl++] = *p;
            } else {
                word[wl++] = c;
            }
        }
        if (quote) {
            fa_words_free(v);
            free(word);
            return fa_ctx_error(ctx, FA_ERR_USAGE, "%s: unterminated %s quote", what, quote == '"' ? "double" : "single");
        }
        word[wl] = 0;
        bool grow = n + 2 > cap;
        char **nv = grow ? realloc(v, 2 * cap * sizeof *v) : v;
        char *copy = nv ? strdup(word) : NULL;
        if (nv && grow) cap *= 2;
        if (nv) v = nv;
        if (!copy) {
            v[n] = NULL;
            fa_words_free(v);
            free(word);
            return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", what);
        }
        v[n++] = copy;
        v[n] = NULL;
        if (!*p) break;
    }
    free(word);
    *out_argv = v;
    *out_n = (int)n;
    return FA_OK;
}

/* ---- PRNG: splitmix64 (Steele, Lea, Flood 2014) ---- */

void fa_rng_seed(fa_rng *r, uint64_t seed) { r->s = seed; }

uint64_t fa_rng_u64(fa_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float fa_rng_uniform(fa_rng *r, float lo, float hi)
{
    double u = (double)(fa_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(lo + (hi - lo) * u);
}

float fa_rng_normal(fa_rng *r)
{
    double u1 = ((double)(fa_rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (double)(fa_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* ---- JSON values ---- */

void fa_json_str(fa_buf *b, const char *s)
{
    if (!s) {
        fa_buf_puts(b, "null");
        return;
    }
    fa_buf_puts(b, "\"");
    fa_escape_json(b, s, strlen(s));
    fa_buf_puts(b, "\"");
}

void fa_json_str_or_empty(fa_buf *b, const char *s) { fa_json_str(b, s ? s : ""); }

void fa_json_num(fa_buf *b, double v, int sig_digits)
{
    if (v != v || v > 1e300 || v < -1e300) fa_buf_puts(b, "null");
    else fa_buf_printf(b, "%.*g", sig_digits, v);
}
