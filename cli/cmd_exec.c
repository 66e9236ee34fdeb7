/* cli/cmd_exec — `fuse-advise exec MODEL --inputs DIR --outputs DIR`: run the unfused executor on
 * input_N.pb files and write output_N.pb (the layout of ONNX test_data_set folders). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "runtime/runtime.h"

static const char *k_about =
    "  reads DIR/input_0.pb ... (ONNX TensorProto, one per graph input in order), runs the\n"
    "  unfused cpu executor and writes output_0.pb ... into the --outputs folder. The files'\n"
    "  shapes bind the model's symbolic dims; --shape/--batch apply as in `run`.\n"
    "  Without --inputs, inputs are random (seed 1) and symbolic dims nothing binds default to 1.\n";

/* Errors name the model file, whichever step failed (load, inputs, execution, outputs). */
static int exec_fail(fa_ctx *ctx, fa_status st, const char *model)
{
    if (strncmp(fa_ctx_errmsg(ctx), model, strlen(model)) != 0) fa_ctx_wrap(ctx, st, "%s: ", model);
    return fa_cli_fail(ctx, st);
}

/* The shape of the value read from `path` against graph input t: a dim the model fixes must
 * agree, and a dim_param bound by an earlier input's file (vals[0..i)) must take the same value.
 * Checked for every input, a shape-parameter input frozen to its file's values too (an integer
 * attention mask of 2 x 12 beside input ids of 2 x 16, both [batch, sequence], failed deep in
 * the graph instead). */
static fa_status dims_agree(fa_ctx *ctx, const fa_graph *g, const fa_tensor *t, const fa_value *v, const char *path,
                            const fa_value *vals, const int *orig, int i, const char *indir, bool shaped)
{
    if (t->rank >= 0 && t->rank != v->rank)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: input '%s' has rank %d in the model, the file holds rank %d", path,
                            t->name, t->rank, v->rank);
    for (int d = 0; d < v->rank && t->rank >= 0; d++) {
        if (t->dims[d] >= 0) {
            if (t->dims[d] != v->dims[d])
                return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: input '%s' dim %d is %lld in the model%s, the file holds %lld",
                                    path, t->name, d, (long long)t->dims[d], shaped ? " with --shape/--batch applied" : "",
                                    (long long)v->dims[d]);
            continue;
        }
        const char *param = t->dim_params[d];
        for (int j = 0; param && j < i; j++) {
            const fa_tensor *u = g->tensors[orig[j]];
            for (int k = 0; k < u->rank && k < vals[j].rank; k++)
                if (u->dim_params[k] && !strcmp(u->dim_params[k], param) && vals[j].dims[k] != v->dims[d])
                    return fa_ctx_error(ctx, FA_ERR_INPUT,
                                        "%s: dim '%s' of input '%s' is %lld, but %s/input_%d.pb gives it %lld", path,
                                        param, t->name, (long long)v->dims[d], indir, j, (long long)vals[j].dims[k]);
        }
    }
    return FA_OK;
}

/* Bind graph input t's symbolic dims to the shape of the value read from `path` (dims_agree
 * first). */
static fa_status bind_from_file(fa_ctx *ctx, fa_graph *g, fa_tensor *t, const fa_value *v, const char *path,
                                const fa_value *vals, const int *orig, int i, const char *indir, bool shaped)
{
    fa_status s = dims_agree(ctx, g, t, v, path, vals, orig, i, indir, shaped);
    if (s) return s;
    if (t->rank < 0) {
        fa_tensor_set_shape(t, t->dtype ? t->dtype : v->dtype, v->rank, v->dims);
        return FA_OK;
    }
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] < 0) t->dims[d] = v->dims[d];
    return FA_OK;
}

int fa_cmd_exec(fa_ctx *ctx, int argc, char **argv)
{
    fa_cli_model_opts mo = {0};
    const char *model = NULL, *indir = NULL, *outdir = NULL;
    int threads = 0, layout = -1;
    int64_t max_mem = 0;
    const fa_cli_opt opts[] = {
        FA_CLI_STRING("--inputs", "DIR", &indir, "the folder of input_N.pb files (default: random inputs)"),
        FA_CLI_STRING("--outputs", "DIR", &outdir, "the folder output_N.pb files are written to (required)"),
        FA_CLI_OPT_THREADS(&threads),
        FA_CLI_I64("--max-memory", "BYTES", &max_mem, 1, INT64_MAX, FA_CLI_NO_DEFAULT,
                   "refuse a model whose activations need more (default: the larger of 4 GiB and 64x its weights)"),
        FA_CLI_CALLBACK("--layout", "auto|nhwc|nChw8c|nChw16c|plain", fa_cli_opt_layout, &layout, 0, 0, 0,
                        "the plan layout of a model with fused (ai.fuse-advise) nodes: the one its plan chose "
                        "(plan.json \"layout\"); auto: the target's default"),
        FA_CLI_OPTS_MODEL(&mo),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = "exec", .synopsis = "MODEL --outputs DIR [--inputs DIR] [options]",
                              .about = k_about, .opts = opts, .min_args = 1, .max_args = 1, .args_name = "MODEL"};
    fa_cli_args args;
    int prc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (prc >= 0) return prc;
    model = args.arg[0];
    if (!outdir) return fa_cli_usage("exec", "missing --outputs DIR");
    struct stat osb; /* refused before the model runs, not after */
    if (stat(outdir, &osb) == 0 && !S_ISDIR(osb.st_mode)) {
        fprintf(stderr, "fuse-advise: error: %s: exists and is not a folder (--outputs names a folder)\n", outdir);
        return 1;
    }
    fa_load_options lo = fa_cli_load_options(&mo);
    fa_graph *g = NULL;
    fa_exec *e = NULL;
    /* With --inputs, every input_N.pb is read first: shape-parameter inputs (integer inputs,
     * Resize scales) are frozen to the given values, and the files' shapes bind the other
     * inputs' symbolic dims, so a dynamic-axes export runs at the files' shapes (docs/cli.md).
     * --shape bindings still apply on top. */
    int orig[64], n_orig = 0;
    fa_value vals[64];
    memset(vals, 0, sizeof vals);
    fa_status st;
    if (indir) {
        st = strncmp(model, "zoo:", 4) != 0 ? fa_onnx_import(ctx, model, &g) : FA_OK;
        /* --shape/--batch first: the files are checked against the shapes the run will have
         * (before, a fixed batch-1 dim refused a batch-3 file that --batch 3 asked for) */
        bool shaped = lo.n_bindings > 0 || lo.batch > 0;
        if (!st && g) st = fa_graph_apply_shape_options(ctx, g, &lo);
        if (!st && g) {
            if (g->n_inputs > 64) st = fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "%d graph inputs (exec reads at most 64)", g->n_inputs);
            n_orig = g->n_inputs < 64 ? g->n_inputs : 64;
            if (n_orig > 0) memcpy(orig, g->inputs, sizeof(int) * (size_t)n_orig);
        }
        for (int i = 0; !st && i < n_orig; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/input_%d.pb", indir, i);
            st = fa_tensorproto_read(ctx, path, &vals[i], NULL);
            if (st) break;
            fa_tensor *t = g->tensors[orig[i]];
            if (fa_graph_input_is_shape_param(g, orig[i])) {
                st = dims_agree(ctx, g, t, &vals[i], path, vals, orig, i, indir, shaped);
                if (st) break;
                st = fa_graph_freeze_input(ctx, g, t->name, &vals[i]);
                if (st) fa_ctx_wrap(ctx, st, "%s: ", path);
                continue;
            }
            st = bind_from_file(ctx, g, t, &vals[i], path, vals, orig, i, indir, shaped);
        }
        if (!st && g) st = fa_graph_prepare(ctx, g, &lo);
        else if (!st) st = fa_graph_load(ctx, model, &lo, &g);
        if (!st && strncmp(model, "zoo:", 4) == 0) {
            n_orig = g->n_inputs < 64 ? g->n_inputs : 64;
            memcpy(orig, g->inputs, sizeof(int) * (size_t)n_orig);
        }
    } else {
        st = fa_graph_load(ctx, model, &lo, &g);
        if (!st) {
            n_orig = g->n_inputs < 64 ? g->n_inputs : 64;
            if (n_orig > 0) memcpy(orig, g->inputs, sizeof(int) * (size_t)n_orig);
        }
    }
    if (!st) fa_cli_note_dim_defaults(g);
    if (!st) fa_cli_memory_policy(g, max_mem);
    if (st) {
        for (int i = 0; i < 64; i++) free(vals[i].data);
        fa_graph_free(g);
        return exec_fail(ctx, st, model);
    }
    /* what sits at an output's name is checked before the model runs: a symbolic link (never
     * written through: whoever planted it would choose what is overwritten), a FIFO, a folder */
    for (int i = 0; i < g->n_outputs; i++) {
        char path[4096];
        struct stat sb;
        snprintf(path, sizeof path, "%s/output_%d.pb", outdir, i);
        if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
            fa_ctx_error(ctx, FA_ERR_IO, "%s: is %s, not a file fuse-advise wrote: refusing to write %s (remove it)", path,
                         S_ISLNK(sb.st_mode) ? "a symbolic link" : "not a regular file",
                         S_ISLNK(sb.st_mode) ? "through it" : "over it");
            fa_graph_free(g);
            return fa_cli_fail(ctx, FA_ERR_IO);
        }
    }
    /* exec reads no weight after the executor is built: a weight every consumer reads reordered
     * keeps only its reordered copy (docs/runtime.md "Weights once in memory") */
    fa_exec_options eo = fa_exec_options_measured(FA_TARGET_CPU, (int)threads); /* as the applier ran it */
    eo.release_plain_weights = true;
    for (int i = 0; i < g->n_nodes; i++) /* an applied plan (fused nodes): its layouts, as the applier ran it */
        if (g->nodes[i] && !strcmp(g->nodes[i]->domain, FA_FUSED_DOMAIN)) eo.blocked_layouts = true;
    if (eo.blocked_layouts && layout >= 0) { /* --layout: the plan's layout */
        eo.plan_layout = (fa_layout)layout;
        eo.blocked_layouts = layout != FA_LAYOUT_PLAIN;
    }
    st = fa_exec_create(ctx, g, &eo, &e);
    if (!st && !indir) st = fa_exec_fill_inputs(ctx, e, 1);
    for (int i = 0; !st && indir && i < n_orig; i++) {
        int live = -1;
        for (int k = 0; k < g->n_inputs; k++)
            if (g->inputs[k] == orig[i]) live = k;
        if (live < 0) continue; /* frozen shape parameter */
        char path[4096];
        snprintf(path, sizeof path, "%s/input_%d.pb", indir, i);
        if (!vals[i].data) { /* zoo models: the files are read here */
            st = fa_tensorproto_read(ctx, path, &vals[i], NULL);
            if (st) break;
        }
        st = fa_exec_set_input(ctx, e, live, &vals[i]);
        if (st) fa_ctx_wrap(ctx, st, "%s: ", path);
    }
    for (int i = 0; i < 64; i++) free(vals[i].data);
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
    int rc = st ? exec_fail(ctx, st, model) : 0;
    if (!st) fprintf(stderr, "fuse-advise exec: wrote %d output(s) to %s\n", g->n_outputs, outdir);
    fa_exec_free(e);
    fa_graph_free(g);
    return rc;
}
