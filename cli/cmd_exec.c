/* cli/cmd_exec — `fuse-advise exec MODEL --inputs DIR --outputs DIR`: run the unfused executor on
 * input_N.pb files and write output_N.pb (the layout of ONNX test_data_set folders). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "runtime/runtime.h"

static const char *k_help =
    "usage: fuse-advise exec MODEL --inputs DIR --outputs DIR [--threads N] [--shape ...] [--batch N]\n"
    "  reads DIR/input_0.pb ... (ONNX TensorProto, one per graph input in order), runs the\n"
    "  unfused cpu executor and writes output_0.pb ... into the --outputs folder.\n"
    "  Without --inputs, inputs are random (seed 1).\n";

int fa_cmd_exec(fa_ctx *ctx, int argc, char **argv)
{
    fa_cli_model_opts mo = {0};
    const char *model = NULL, *indir = NULL, *outdir = NULL, *v;
    long threads = 0;
    for (int i = 1; i < argc; i++) {
        int r = fa_cli_model_opt(ctx, "exec", argc, argv, &i, &mo);
        if (r < 0) return 2;
        if (r > 0) continue;
        if ((v = fa_cli_opt_value(argc, argv, &i, "--inputs"))) indir = v;
        else if ((v = fa_cli_opt_value(argc, argv, &i, "--outputs"))) outdir = v;
        else if ((v = fa_cli_opt_value(argc, argv, &i, "--threads"))) {
            if ((threads = fa_cli_parse_long("exec", "--threads", v, 0, 1024)) < 0) return 2;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { fputs(k_help, stdout); return 0; }
        else if (argv[i][0] == '-') return fa_cli_usage("exec", "unknown option '%s'", argv[i]);
        else if (!model) model = argv[i];
        else return fa_cli_usage("exec", "unexpected argument '%s'", argv[i]);
    }
    if (!model) return fa_cli_usage("exec", "missing MODEL");
    if (!outdir) return fa_cli_usage("exec", "missing --outputs DIR");
    fa_load_options lo = fa_cli_load_options(&mo);
    fa_graph *g = NULL;
    fa_exec *e = NULL;
    /* With --inputs, shape-parameter inputs (integer inputs, Resize scales) are frozen to the
     * given values before preparation so shapes stay static (docs/cli.md). */
    int orig[64], n_orig = 0;
    fa_status st;
    if (indir && strncmp(model, "zoo:", 4) != 0) {
        st = fa_onnx_import(ctx, model, &g);
        if (!st) {
            n_orig = g->n_inputs < 64 ? g->n_inputs : 64;
            if (n_orig > 0) memcpy(orig, g->inputs, sizeof(int) * (size_t)n_orig);
        }
        for (int i = 0; !st && i < n_orig; i++) {
            if (!fa_graph_input_is_shape_param(g, orig[i])) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/input_%d.pb", indir, i);
            fa_value val;
            st = fa_tensorproto_read(ctx, path, &val, NULL);
            if (!st) {
                st = fa_graph_freeze_input(ctx, g, g->tensors[orig[i]]->name, &val);
                free(val.data);
            }
        }
        if (!st) st = fa_graph_prepare(ctx, g, &lo);
    } else {
        st = fa_graph_load(ctx, model, &lo, &g);
        if (!st) {
            n_orig = g->n_inputs < 64 ? g->n_inputs : 64;
            if (n_orig > 0) memcpy(orig, g->inputs, sizeof(int) * (size_t)n_orig);
        }
    }
    if (st) {
        fa_graph_free(g);
        return fa_cli_fail(ctx, st);
    }
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = (int)threads};
    st = fa_exec_create(ctx, g, &eo, &e);
    if (!st && !indir) st = fa_exec_fill_inputs(ctx, e, 1);
    for (int i = 0; !st && indir && i < n_orig; i++) {
        int live = -1;
        for (int k = 0; k < g->n_inputs; k++)
            if (g->inputs[k] == orig[i]) live = k;
        if (live < 0) continue; /* frozen shape parameter */
        char path[4096];
        snprintf(path, sizeof path, "%s/input_%d.pb", indir, i);
        fa_value val;
        st = fa_tensorproto_read(ctx, path, &val, NULL);
        if (st) break;
        st = fa_exec_set_input(ctx, e, live, &val);
        if (st) fa_ctx_wrap(ctx, st, "%s: ", path);
        free(val.data);
    }
    if (!st) st = fa_exec_run(ctx, e, NULL);
    if (!st && mkdir(outdir, 0755) != 0) {
        struct stat sb;
        if (stat(outdir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            st = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot create output folder", outdir);
    }
    for (int i = 0; !st && i < g->n_outputs; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/output_%d.pb", outdir, i);
        const fa_value *ov = fa_exec_output(e, i);
        if (!ov) { st = fa_ctx_error(ctx, FA_ERR_RUNTIME, "output %d was not produced", i); break; }
        st = fa_tensorproto_write(ctx, path, ov, g->tensors[g->outputs[i]]->name);
    }
    int rc = st ? fa_cli_fail(ctx, st) : 0;
    if (!st) fprintf(stderr, "fuse-advise exec: wrote %d output(s) to %s\n", g->n_outputs, outdir);
    fa_exec_free(e);
    fa_graph_free(g);
    return rc;
}
