/* tests/source/supported_ops — docs/supported-ops.md from the op registry: every registered op
 * with its domain, pattern class, input/output counts and cost formula. `supported_ops FILE`
 * compares FILE with what the registry gives now (exit 1 with the first differing line when
 * it is stale); without FILE it prints the page (regenerate: build/tests/supported_ops >
 * docs/supported-ops.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "graph/graph.h"

static int cmp_op(const void *a, const void *b)
{
    const fa_op *x = *(const fa_op *const *)a, *y = *(const fa_op *const *)b;
    int d = strcmp(x->domain ? x->domain : "", y->domain ? y->domain : "");
    return d ? d : strcmp(x->name, y->name);
}

static void arity(fa_buf *b, int lo, int hi)
{
    if (hi < 0) fa_buf_printf(b, "%d+", lo);
    else if (lo == hi) fa_buf_printf(b, "%d", lo);
    else fa_buf_printf(b, "%d-%d", lo, hi);
}

static void page(fa_buf *b)
{
    int n = 0;
    while (fa_op_at(n)) n++;
    const fa_op **ops = malloc(sizeof *ops * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) ops[i] = fa_op_at(i);
    qsort(ops, (size_t)n, sizeof *ops, cmp_op);
    fa_buf_printf(b, "# Supported ops\n\n"
                     "Generated from the op registry by `tests/source/supported_ops.c` (ctest `supported_ops_doc` fails\n"
                     "when this page is stale; regenerate with `build/tests/supported_ops > docs/supported-ops.md`).\n"
                     "A model with any other op is refused by `run`, `exec` and `apply`, naming every such op and\n"
                     "node at once; `inspect` and `advise MODEL` keep those nodes opaque and analyse the rest\n"
                     "(docs/cli.md \"Unsupported ops\"). %d ops. Attributes and element types each op accepts:\n"
                     "docs/ops-*.md and docs/conformance.md.\n",
                  n);
    const char *dom = NULL;
    for (int i = 0; i < n; i++) {
        const char *d = ops[i]->domain && *ops[i]->domain ? ops[i]->domain : "ai.onnx";
        if (!dom || strcmp(dom, d)) {
            dom = d;
            fa_buf_printf(b, "\n## %s\n\n| op | pattern | inputs | outputs | cost |\n|---|---|---|---|---|\n", d);
        }
        fa_buf_printf(b, "| %s | %s | ", ops[i]->name, fa_pattern_name(ops[i]->pattern));
        arity(b, ops[i]->min_inputs, ops[i]->max_inputs);
        fa_buf_puts(b, " | ");
        arity(b, ops[i]->min_outputs, ops[i]->max_outputs);
        fa_buf_puts(b, " | ");
        for (const char *p = ops[i]->doc ? ops[i]->doc : ""; *p; p++) fa_buf_printf(b, "%s", *p == '|' ? "\\|" : (char[]){*p, 0});
        fa_buf_puts(b, " |\n");
    }
    free(ops);
}

int main(int argc, char **argv)
{
    fa_buf b;
    fa_buf_init(&b);
    page(&b);
    if (b.oom) return 2;
    if (argc < 2) {
        fwrite(b.data, 1, b.len, stdout);
        fa_buf_free(&b);
        return 0;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "%s: cannot read\n", argv[1]);
        return 1;
    }
    char line[4096];
    const char *p = b.data;
    int ln = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        const char *nl = strchr(p, '\n');
        size_t want = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (strlen(line) != want || strncmp(line, p, want)) {
            fprintf(stderr, "%s:%d is stale: it says\n  %sthe registry gives\n  %.*s(regenerate: %s > %s)\n", argv[1], ln,
                    line, (int)want, p, argv[0], argv[1]);
            rc = 1;
            break;
        }
        p += want;
    }
    if (!rc && *p) {
        fprintf(stderr, "%s ends at line %d; the registry gives more (regenerate: %s > %s)\n", argv[1], ln, argv[0], argv[1]);
        rc = 1;
    }
    fclose(f);
    fa_buf_free(&b);
    return rc;
}
