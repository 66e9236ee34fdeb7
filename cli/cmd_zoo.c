/* cli/cmd_zoo — `fuse-advise zoo`: list the built-in models, or write one as an ONNX file. */
#include <inttypes.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *k_about =
    "  Without NAME, lists the built-in models (usable as zoo:NAME wherever a model path goes).\n"
    "  With NAME, builds that model (ONNX opset 17, random weights from a fixed seed, default\n"
    "  0x5EED + FNV-1a-64(NAME)) and writes it to FILE.onnx (default NAME.onnx). See docs/zoo.md.\n";

typedef struct seed_opt {
    uint64_t value;
    bool given;
} seed_opt;

/* --seed: an integer in [0, 2^64), decimal or 0x hex */
static int opt_seed(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *v, fa_buf *why)
{
    (void)ctx, (void)verb;
    char *end;
    errno = 0;
    uint64_t x = strtoull(v, &end, 0);
    /* strtoull accepts "-1" (wrapping to 2^64-1) and saturates on overflow: refuse both */
    if (!*v || *end || errno || strchr(v, '-')) {
        fa_buf_printf_term(why, "--seed expects an integer in [0, 2^64) (decimal or 0x hex), got '%s'", v);
        return -1;
    }
    seed_opt *so = o->dest;
    so->value = x;
    so->given = true;
    return 0;
}

static int list(bool json)
{
    int n = fa_zoo_count();
    if (!json) {
        for (int i = 0; i < n; i++) fa_cli_printf("%-13s %s\n", fa_zoo_at(i)->name, fa_zoo_at(i)->description);
        return 0;
    }
    fa_buf b;
    fa_buf_init(&b);
    fa_buf_puts(&b, "{\"models\": [");
    for (int i = 0; i < n; i++) {
        const fa_zoo_info *z = fa_zoo_at(i);
        fa_buf_puts(&b, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
        fa_json_str_or_empty(&b, z->name);
        fa_buf_puts(&b, ", \"model\": ");
        char ref[128];
        snprintf(ref, sizeof ref, "zoo:%s", z->name);
        fa_json_str_or_empty(&b, ref);
        fa_buf_puts(&b, ", \"description\": ");
        fa_json_str_or_empty(&b, z->description);
        fa_buf_printf_term(&b, ", \"default_seed\": \"0x%016" PRIx64 "\"}", fa_zoo_default_seed(z->name));
    }
    fa_buf_puts(&b, "\n]}\n");
    if (b.oom) {
        fa_buf_free(&b);
        fa_cli_eprintf("fuse-advise: error: out of memory\n");
        return 1;
    }
    fputs(b.data, stdout);
    fa_buf_free(&b);
    return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int fa_cmd_zoo(fa_ctx *ctx, int argc, char **argv)
{
    const char *name = NULL, *out_path = NULL;
    bool json = false;
    int batch = 1;
    seed_opt seed = {0, false};
    const fa_cli_opt opts[] = {
        FA_CLI_STRING2("--output", "-o", "FILE.onnx", &out_path, "where the model is written (default NAME.onnx)"),
        FA_CLI_INT("--batch", "N", &batch, 1, 1 << 20, 0, "dim 0 of every input"),
        FA_CLI_CALLBACK("--seed", "S", opt_seed, &seed, 0, 0, FA_CLI_NO_DEFAULT,
                        "the weights' seed (decimal or 0x hex; default 0x5EED + FNV-1a-64(NAME))"),
        FA_CLI_OPT_JSON(&json),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = "zoo", .synopsis = "[--json]\nNAME [-o FILE.onnx] [--batch N] [--seed S] [--json]",
                              .about = k_about, .opts = opts, .max_args = 1};
    fa_cli_args args;
    int prc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (prc >= 0) return prc;
    bool have_seed = seed.given;
    if (args.n) name = strncmp(args.arg[0], "zoo:", 4) == 0 ? args.arg[0] + 4 : args.arg[0];
    if (!name) {
        if (out_path || have_seed) return fa_cli_usage("zoo", "-o/--seed need a model NAME");
        return list(json);
    }

    fa_graph *g = NULL;
    fa_status st = fa_zoo_build_seeded(ctx, name, (int)batch,
                                       have_seed ? seed.value : fa_zoo_default_seed(name), &g);
    if (st) return fa_cli_fail(ctx, st);
    char default_path[300];
    if (!out_path) { /* a name we chose, in the current folder: never through a link there */
        snprintf(default_path, sizeof default_path, "%s.onnx", name);
        out_path = default_path;
        st = fa_onnx_export(ctx, g, out_path);
    } else { /* the file the user named: a link to a file, a FIFO or /dev/stdout is honoured */
        uint8_t *buf = NULL;
        size_t len = 0;
        st = fa_onnx_export_buffer(ctx, g, &buf, &len);
        if (st) fa_ctx_wrap(ctx, st, "%s: ", out_path);
        else st = fa_write_user_file(ctx, out_path, buf, len);
        free(buf);
    }
    if (st) {
        fa_graph_free(g);
        return fa_cli_fail(ctx, st);
    }
    int64_t params = 0;
    uint64_t weight_bytes = fa_graph_initializer_bytes(g);
    for (int i = 0; i < g->n_tensors; i++) {
        const fa_tensor *t = g->tensors[i];
        if ((t->flags & FA_TENSOR_INITIALIZER) && (ends_with(t->name, ".weight") || ends_with(t->name, ".bias")))
            params += fa_tensor_numel(t);
    }
    if (json) {
        fa_buf b;
        fa_buf_init(&b);
        fa_buf_puts(&b, "{\"model\": ");
        char ref[128];
        snprintf(ref, sizeof ref, "zoo:%s", name);
        fa_json_str_or_empty(&b, ref);
        fa_buf_puts(&b, ", \"path\": ");
        fa_json_str_or_empty(&b, out_path);
        fa_buf_printf_term(&b, ", \"batch\": %d, \"seed\": \"0x%016" PRIx64 "\", \"nodes\": %d, "
                               "\"parameters\": %" PRId64 ", \"initializer_bytes\": %" PRIu64 "}\n",
                           batch, have_seed ? seed.value : fa_zoo_default_seed(name), g->n_nodes, params,
                           weight_bytes);
        if (!b.oom) fputs(b.data, stdout);
        fa_buf_free(&b);
    } else {
        fa_cli_printf("wrote %s: zoo:%s, batch %d, %d nodes, %" PRId64 " parameters, %.1f %s of initializers\n",
                      out_path, name, batch, g->n_nodes, params,
                      weight_bytes >= 1000000 ? (double)weight_bytes / 1e6 : (double)weight_bytes / 1e3,
                      weight_bytes >= 1000000 ? "MB" : "kB");
    }
    fa_graph_free(g);
    return 0;
}
