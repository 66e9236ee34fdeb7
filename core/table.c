/* core/table — column tables for the terminal: the gate's checks and `runs` print through it. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

struct fa_table {
    const fa_table_col *cols;
    int n_cols;
    int n_rows, cap_rows;
    char **cells;  /* n_rows x n_cols, owned; a NULL row's first cell marks a free line */
    char **lines;  /* per row: the free line after it (owned) or NULL */
    bool oom;
};

fa_table *fa_table_create(const fa_table_col *cols, int n_cols)
{
    fa_table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->cols = cols;
    t->n_cols = n_cols;
    return t;
}

void fa_table_free(fa_table *t)
{
    if (!t) return;
    for (int i = 0; i < t->n_rows * t->n_cols; i++) free(t->cells[i]);
    for (int i = 0; i < t->n_rows; i++) free(t->lines[i]);
    free(t->cells);
    free(t->lines);
    free(t);
}

/* A cell as the terminal shows it: control characters escaped (fa_escape_term), since cells
 * hold names and messages from models and run databases. */
static char *dup_or_dash(const char *s, bool *oom)
{
    if (!s) s = "-";
    fa_buf b;
    fa_buf_init(&b);
    fa_escape_term(&b, s, strlen(s));
    fa_buf_append(&b, "", 0);
    if (b.oom || !b.data) {
        fa_buf_free(&b);
        *oom = true;
        return NULL;
    }
    return b.data;
}

void fa_table_add_row(fa_table *t, const char *const *cells)
{
    if (!t || t->oom) return;
    if (t->n_rows == t->cap_rows) {
        int nc = t->cap_rows ? 2 * t->cap_rows : 16;
        char **c = realloc(t->cells, sizeof *c * (size_t)nc * (size_t)t->n_cols);
        if (!c) { t->oom = true; return; }
        t->cells = c;
        char **l = realloc(t->lines, sizeof *l * (size_t)nc);
        if (!l) { t->oom = true; return; }
        t->lines = l;
        t->cap_rows = nc;
    }
    char **row = t->cells + (size_t)t->n_rows * (size_t)t->n_cols;
    for (int k = 0; k < t->n_cols; k++) row[k] = dup_or_dash(cells[k], &t->oom);
    t->lines[t->n_rows++] = NULL;
}

void fa_table_add_line(fa_table *t, const char *text)
{
    if (!t || t->oom || t->n_rows == 0 || !text) return;
    char **l = &t->lines[t->n_rows - 1];
    char *esc = dup_or_dash(text, &t->oom);
    if (!esc) return;
    size_t old = *l ? strlen(*l) : 0, add = strlen(esc);
    char *n = realloc(*l, old + add + 2);
    if (!n) { free(esc); t->oom = true; return; }
    if (old) n[old++] = '\n';
    memcpy(n + old, esc, add + 1);
    free(esc);
    *l = n;
}

static void pad(fa_buf *b, int n)
{
    for (; n > 0; n--) fa_buf_puts(b, " ");
}

static void cell(fa_buf *b, const char *s, int w, bool right, bool last)
{
    int len = (int)strlen(s);
    if (len > w && !last) len = w; /* a column with a max width truncates */
    if (right && !last) pad(b, w - len);
    fa_buf_append(b, s, (size_t)len);
    if (!right && !last) pad(b, w - len);
}

void fa_table_render(const fa_table *t, fa_buf *out)
{
    if (!t || t->oom) { out->oom = true; return; }
    int w[64];
    int nc = t->n_cols < 64 ? t->n_cols : 64;
    for (int k = 0; k < nc; k++) {
        const fa_table_col *c = &t->cols[k];
        int m = (int)strlen(c->header);
        if (m < c->min_width) m = c->min_width;
        for (int i = 0; i < t->n_rows; i++) {
            int l = (int)strlen(t->cells[(size_t)i * (size_t)t->n_cols + (size_t)k]);
            if (l > m) m = l;
        }
        if (c->max_width > 0 && m > c->max_width) m = c->max_width;
        w[k] = m;
    }
    for (int i = -1; i < t->n_rows; i++) {
        for (int k = 0; k < nc; k++) {
            if (k) fa_buf_puts(out, "  ");
            const char *s = i < 0 ? t->cols[k].header : t->cells[(size_t)i * (size_t)t->n_cols + (size_t)k];
            cell(out, s, w[k], t->cols[k].align_right, k == nc - 1);
        }
        fa_buf_puts(out, "\n");
        if (i >= 0 && t->lines[i]) {
            fa_buf_puts(out, t->lines[i]);
            fa_buf_puts(out, "\n");
        }
    }
}
