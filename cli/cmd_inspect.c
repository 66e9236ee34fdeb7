/* cli/cmd_inspect — `fuse-advise inspect MODEL [--json]`: one row per live node with its pattern
 * class, output shapes, FLOPs and bytes; totals; graph inputs and outputs. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void shapes_of(const fa_graph *g, const fa_node *n, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = 0;
    for (int o = 0; o < n->n_outputs && off < cap; o++) {
        const fa_tensor *t = fa_graph_out(g, n, o);
        if (!t) continue;
        char s[128];
        int w = snprintf(buf + off, cap - off, "%s%s", off ? ", " : "", fa_tensor_shape_str(t, s, sizeof s));
        if (w < 0) break;
        off += (size_t)w;
    }
}

static void json_tensor_list(fa_buf *b, const fa_graph *g, const int *ids, int n)
{
    fa_buf_puts(b, "[");
    for (int i = 0; i < n; i++) {
        const fa_tensor *t = g->tensors[ids[i]];
        fa_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        fa_json_str_or_empty(b, t->name);
        fa_buf_printf_term(b, ",\"dtype\":\"%s\",\"shape\":[", fa_dtype_name(t->dtype));
        for (int d = 0; d < t->rank; d++) fa_buf_printf_term(b, "%s%" PRId64, d ? "," : "", t->dims[d]);
        fa_buf_puts(b, "]}");
    }
    fa_buf_puts(b, "]");
}

int fa_cmd_inspect(fa_ctx *ctx, int argc, char **argv)
{
    fa_cli_model_opts mo = {0};
    const char *model = NULL;
    bool json = false;
    const fa_cli_opt opts[] = {FA_CLI_OPT_JSON(&json), FA_CLI_OPTS_MODEL(&mo), FA_CLI_END};
    const fa_cli_spec spec = {.verb = "inspect", .synopsis = "MODEL [options]",
                              .about = "  MODEL is an .onnx file or zoo:NAME: one row per live node with its op, pattern class,\n"
                                       "  output shapes, FLOPs and bytes; totals; graph inputs and outputs.\n",
                              .opts = opts, .min_args = 1, .max_args = 1, .args_name = "MODEL"};
    fa_cli_args args;
    int prc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (prc >= 0) return prc;
    model = args.arg[0];
    fa_load_options lo = fa_cli_load_options(&mo);
    lo.keep_unsupported = true; /* unsupported ops are listed and kept opaque; the rest is analysed */
    fa_graph *g = NULL;
    fa_status st = fa_graph_load(ctx, model, &lo, &g);
    if (st) return fa_cli_fail(ctx, st);
    fa_cli_note_dim_defaults(g);
    fa_cli_note_opaque(g);

    /* column widths from the content: exporters name nodes by module path
     * (/features/features.0/features.0.0/Conv), so names are never cut */
    int w_name = 4, w_op = 2, w_shape = 12;
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        char shp[512];
        shapes_of(g, n, shp, sizeof shp);
        int ln = (int)strlen(n->name), lo2 = (int)strlen(n->op_type), ls = (int)strlen(shp);
        if (ln > w_name) w_name = ln;
        if (lo2 > w_op) w_op = lo2;
        if (ls > w_shape) w_shape = ls;
    }

    uint64_t tf = 0, tr = 0, tw = 0;
    fa_buf b;
    fa_buf_init(&b);
    if (json) {
        fa_buf_puts(&b, "{\"model\":");
        fa_json_str_or_empty(&b, model);
        fa_buf_puts(&b, ",\"graph\":");
        fa_json_str_or_empty(&b, g->name);
        fa_buf_printf_term(&b, ",\"opset\":%" PRId64 ",\"folded_nodes\":%d,\"unsupported_nodes\":%d,\"dim_defaults\":[",
                           fa_graph_opset(g, ""), g->n_folded, g->n_unsupported);
        for (int i = 0; i < g->n_dim_defaults; i++) {
            if (i) fa_buf_puts(&b, ",");
            fa_json_str_or_empty(&b, g->dim_defaults[i]);
        }
        fa_buf_puts(&b, "],\"inputs\":");
        json_tensor_list(&b, g, g->inputs, g->n_inputs);
        fa_buf_puts(&b, ",\"outputs\":");
        json_tensor_list(&b, g, g->outputs, g->n_outputs);
        fa_buf_puts(&b, ",\"nodes\":[");
    } else {
        fa_cli_printf("model: %s  (graph '%s', opset %" PRId64 ", %d live nodes, %d folded at load)\n", model, g->name,
                      fa_graph_opset(g, ""), g->n_topo, g->n_folded);
        fa_cli_printf("%-*s %-*s %-23s %-*s %14s %14s %14s\n", w_name, "node", w_op, "op", "pattern", w_shape,
                      "output shape", "FLOPs", "bytes read", "bytes written");
    }
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        fa_op_cost c;
        fa_node_cost(g, n, &c);
        tf += c.flops;
        tr += c.bytes_read;
        tw += c.bytes_written;
        char shp[512];
        shapes_of(g, n, shp, sizeof shp);
        const char *pat = fa_cli_node_pattern(n);
        if (json) {
            fa_buf_puts(&b, k ? ",{\"name\":" : "{\"name\":");
            fa_json_str_or_empty(&b, n->name);
            fa_buf_puts(&b, ",\"op\":");
            fa_json_str_or_empty(&b, n->op_type);
            fa_buf_printf_term(&b, ",\"pattern\":\"%s\",\"opaque\":%s,\"output_shapes\":", pat,
                               n->opaque ? "true" : "false");
            fa_json_str_or_empty(&b, shp);
            fa_buf_printf_term(&b, ",\"flops\":%" PRIu64 ",\"bytes_read\":%" PRIu64 ",\"bytes_written\":%" PRIu64 "}",
                               c.flops, c.bytes_read, c.bytes_written);
        } else {
            fa_cli_printf("%-*s %-*s %-23s %-*s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n", w_name, n->name, w_op,
                          n->op_type, pat, w_shape, shp, c.flops, c.bytes_read, c.bytes_written);
        }
    }
    if (json) {
        fa_buf_printf_term(&b, "],\"totals\":{\"nodes\":%d,\"flops\":%" PRIu64 ",\"bytes_read\":%" PRIu64
                           ",\"bytes_written\":%" PRIu64 "}}\n",
                           g->n_topo, tf, tr, tw);
        fwrite(b.data, 1, b.len, stdout);
    } else {
        fa_cli_printf("%-*s %-*s %-23s %-*s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n", w_name, "total", w_op, "", "",
                      w_shape, "", tf, tr, tw);
        fa_cli_printf("\ninputs:\n");
        for (int i = 0; i < g->n_inputs; i++) {
            char s[128];
            const fa_tensor *t = g->tensors[g->inputs[i]];
            fa_cli_printf("  %s  %s [%s]\n", t->name, fa_dtype_name(t->dtype), fa_tensor_shape_str(t, s, sizeof s));
        }
        fa_cli_printf("outputs:\n");
        for (int i = 0; i < g->n_outputs; i++) {
            char s[128];
            const fa_tensor *t = g->tensors[g->outputs[i]];
            fa_cli_printf("  %s  %s [%s]\n", t->name, fa_dtype_name(t->dtype), fa_tensor_shape_str(t, s, sizeof s));
        }
    }
    bool oom = b.oom;
    fa_buf_free(&b);
    fa_graph_free(g);
    if (oom) {
        fa_cli_eprintf("fuse-advise: error: out of memory writing output\n");
        return 1;
    }
    return 0;
}
