/* cli/term — what the command prints to the terminal: printf with every string argument escaped
 * (core's fa_buf_printf_term), and a guard on stdout/stderr that escapes any control character
 * that reaches them all the same (docs/hardening.md "Output from stored data"). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void vprint_term(FILE *f, const char *fmt, va_list ap)
{
    fa_buf b;
    fa_buf_init(&b);
    fa_buf_vprintf_term(&b, fmt, ap);
    if (b.oom) fputs("(out of memory formatting output)\n", f);
    else if (b.len) fwrite(b.data, 1, b.len, f);
    fa_buf_free(&b);
}

void fa_cli_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint_term(stdout, fmt, ap);
    va_end(ap);
}

void fa_cli_eprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint_term(stderr, fmt, ap);
    va_end(ap);
}

/* ---- the guard: a stdio stream over fd 1 or 2 that escapes control characters ---- */

typedef struct guard {
    int fd;
    unsigned char tail[4]; /* an unfinished UTF-8 sequence held back from the last write */
    size_t n_tail;
} guard;

static bool write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Bytes at the end of p[0..n) that begin a UTF-8 sequence the next write may finish. */
static size_t unfinished_tail(const unsigned char *p, size_t n)
{
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char c = p[n - k];
        if ((c & 0xC0) == 0x80) continue; /* continuation byte: look further back */
        size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        return need > k ? k : 0;
    }
    return 0;
}

static ssize_t guard_write(void *cookie, const char *buf, size_t size)
{
    guard *g = cookie;
    fa_buf in, out;
    fa_buf_init(&in);
    fa_buf_init(&out);
    fa_buf_append(&in, g->tail, g->n_tail);
    fa_buf_append(&in, buf, size);
    if (in.oom) { fa_buf_free(&in); errno = ENOMEM; return -1; }
    size_t keep = unfinished_tail((const unsigned char *)in.data, in.len);
    fa_escape_term_text(&out, in.data, in.len - keep);
    bool ok = !out.oom && write_all(g->fd, out.data ? out.data : "", out.len);
    memcpy(g->tail, in.data + in.len - keep, keep);
    g->n_tail = keep;
    fa_buf_free(&in);
    fa_buf_free(&out);
    if (!ok) { if (!errno) errno = EIO; return -1; }
    return (ssize_t)size;
}

static int guard_close(void *cookie)
{
    guard *g = cookie;
    if (g->n_tail) { /* the sequence never finished: its bytes are shown escaped */
        fa_buf out;
        fa_buf_init(&out);
        fa_escape_term_text(&out, (const char *)g->tail, g->n_tail);
        if (!out.oom) write_all(g->fd, out.data, out.len);
        fa_buf_free(&out);
        g->n_tail = 0;
    }
    return 0;
}

/* one per stream for the life of the process (exit flushes the streams, it does not close them) */
static guard g_guard_out = {.fd = 1}, g_guard_err = {.fd = 2};

static FILE *guarded(FILE *orig, guard *g, int mode)
{
    cookie_io_functions_t io = {.read = NULL, .write = guard_write, .seek = NULL, .close = guard_close};
    FILE *f = fopencookie(g, "w", io);
    if (!f) return orig;
    setvbuf(f, NULL, mode, mode == _IONBF ? 0 : BUFSIZ);
    fflush(orig);
    return f;
}

/* at exit: what the streams hold is written, and an unfinished UTF-8 sequence at the very end is
 * shown escaped instead of being dropped */
static void guard_flush_tails(void)
{
    fflush(stdout);
    fflush(stderr);
    guard_close(&g_guard_out);
    guard_close(&g_guard_err);
}

void fa_cli_guard_output(void)
{
    atexit(guard_flush_tails);
    stdout = guarded(stdout, &g_guard_out, isatty(1) ? _IOLBF : _IOFBF);
    stderr = guarded(stderr, &g_guard_err, _IONBF); /* unbuffered, as stderr is */
}
