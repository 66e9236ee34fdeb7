/* fuzz/fuzz_targets — one entry point per fuzz target, shared by the libFuzzer mains
 * (fuzz/fuzz_*.c) and the regression test that replays committed crash inputs
 * (tests/unit/test_bad_fuzz_regressions.c), so a regression runs exactly what the fuzzer ran.
 * Each returns the status of the code under test; any status is acceptable, a crash, hang,
 * leak or sanitizer report is the bug. On failure the message is left on ctx. Header-only. */
#ifndef FA_FUZZ_TARGETS_H
#define FA_FUZZ_TARGETS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "advisor/codegen.h"
#include "applier/applier.h"
#include "cli/cli.h"
#include "collector/import/import.h"
#include "fuzz/fuzz_file.h"
#include "graph/graph.h"
#include "runtime/runtime.h"
#include "trace/trace.h"

/* ONNX import (display name "fuzz.onnx", no base folder: external data is refused without
 * touching the filesystem), then shape inference + folding with a 1 MiB folded-tensor cap; a
 * refusal there is prefixed with the display name, as fa_graph_load prefixes the model's path. */
static fa_status fa_fuzz_onnx(fa_ctx *ctx, const uint8_t *data, size_t size)
{
    fa_graph *g = NULL;
    fa_status s = fa_onnx_import_buffer(ctx, "fuzz.onnx", NULL, data, size, &g);
    if (s == FA_OK) {
        fa_load_options lo = {0};
        lo.max_const_bytes = 1u << 20;
        s = fa_graph_prepare(ctx, g, &lo);
        if (s) fa_ctx_wrap(ctx, s, "fuzz.onnx: ");
    }
    fa_graph_free(g);
    return s;
}

/* One TensorProto; every byte the reader claims to return is read (ASan: short buffers). */
static fa_status fa_fuzz_tensorproto(fa_ctx *ctx, const uint8_t *data, size_t size)
{
    fa_value v;
    memset(&v, 0, sizeof v);
    char *name = NULL;
    fa_status s = fa_tensorproto_read_buffer(ctx, "fuzz.pb", data, size, &v, &name);
    if (s == FA_OK) {
        size_t n = (size_t)fa_value_numel(&v) * fa_dtype_size(v.dtype);
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < n; i++) sink ^= ((const uint8_t *)v.data)[i];
        (void)sink;
        free(v.data);
        free(name);
    }
    return s;
}

/* Kineto JSON (plain or gzip by magic) through a temp file, strict then keep_partial. */
static fa_status fa_fuzz_kineto(fa_ctx *ctx, const uint8_t *data, size_t size)
{
    const char *path = fuzz_file_write(data, size, ".json");
    fa_status first = FA_OK;
    for (int partial = 0; partial < 2; partial++) {
        fa_trace *t = NULL;
        fa_import_stats st;
        fa_import_opts o = {.keep_partial = partial != 0};
        fa_status s = fa_import_kineto_ex(ctx, path, &o, &t, &st);
        if (partial == 0) first = s;
        /* every imported kernel name through what trace advice reads from it: the Itanium-name
         * reader, the normalized and short names, the class (trace/classify.c) */
        for (size_t i = 0; t && i < t->n_acts; i++) {
            const char *nm = t->acts[i].name;
            if (!nm) continue;
            char b1[512], b2[512];
            (void)fa_kernel_name_normalize(nm, b1, sizeof b1);
            (void)fa_kernel_name_short(nm, b2, sizeof b2);
            (void)fa_kernel_classify_op(nm, t->acts[i].op_type);
        }
        fa_trace_free(t);
    }
    return first;
}

/* Nsight Systems SQLite export through a temp file. */
static fa_status fa_fuzz_nsys(fa_ctx *ctx, const uint8_t *data, size_t size)
{
    const char *path = fuzz_file_write(data, size, ".sqlite");
    fa_trace *t = NULL;
    fa_import_stats st;
    fa_status s = fa_import_nsys(ctx, path, &t, &st);
    fa_trace_free(t);
    return s;
}

/* Command-line parsers: the input split at NUL bytes is an argv after "run", parsed by the CLI's
 * one option parser (cli/options.c fa_cli_parse) over a table with a row of every kind and the
 * shared groups (model loading with --shape through fa_shape_binding_parse, iterations, cluster
 * caps, --threads, --target through fa_target_parse); parsed bindings are then applied by
 * fa_graph_prepare to zoo:mlp-tiny (input "input" [B,64]). The parser prints usage errors to the
 * stderr FILE* and --help to stdout. Returns the prepare status (FA_OK if none ran). */
static fa_status fa_fuzz_args(fa_ctx *ctx, const uint8_t *data, size_t size)
{
    enum { MAX_ARGS = 64 };
    char *text = malloc(size + 1);
    fa_cli_args *args = malloc(sizeof *args);
    if (!text || !args) {
        free(text);
        free(args);
        return FA_ERR_NOMEM;
    }
    memcpy(text, data, size);
    text[size] = 0;
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    argv[argc++] = "run";
    for (size_t i = 0; i <= size && argc < MAX_ARGS;) {
        argv[argc++] = text + i;
        i += strlen(text + i) + 1;
    }
    argv[argc] = NULL;
    fa_cli_model_opts mo;
    memset(&mo, 0, sizeof mo);
    int iters = 20, warmup = 3, threads = 0, max_ops = 16, max_inputs = 8;
    int64_t max_mem = 0;
    double tolerance = 1e-5, share = 0.01;
    bool flag = false;
    const char *db = NULL;
    fa_target target = FA_TARGET_AUTO;
    const fa_cli_opt opts[] = {
        FA_CLI_FLAG("--no-apply", &flag, "a flag"),
        FA_CLI_STRING2("--db", "-d", "PATH", &db, "a string"),
        FA_CLI_OPT_THREADS(&threads),
        FA_CLI_CALLBACK("--target", "T", fa_cli_opt_target, &target, 0, 0, 0, "a callback"),
        FA_CLI_I64("--max-memory", "BYTES", &max_mem, 1, INT64_MAX, 0, "an int64"),
        FA_CLI_DOUBLE("--tolerance", "T", &tolerance, 0, 0.1, FA_CLI_MIN_OPEN, "a double"),
        FA_CLI_PERCENT("--min-share", "X", &share, 0, 1, FA_CLI_MAX_OPEN, "a percentage"),
        FA_CLI_OPTS_ITERATIONS(&iters, &warmup),
        FA_CLI_OPTS_MODEL(&mo),
        FA_CLI_INT("--max-ops", "N", &max_ops, 2, 1000, 0, "an int"),
        FA_CLI_INT("--max-inputs", "N", &max_inputs, 1, 64, 0, "an int"),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = "run", .synopsis = "MODEL [options]", .opts = opts, .max_args = 2};
    int rc = fa_cli_parse(ctx, &spec, argc, argv, args);
    fa_status s = FA_OK;
    if (rc < 0 && (mo.n_bindings > 0 || mo.batch > 0)) {
        fa_graph *g = NULL;
        s = fa_zoo_build(ctx, "mlp-tiny", 1, &g);
        if (s == FA_OK) {
            fa_load_options lo = fa_cli_load_options(&mo);
            lo.max_const_bytes = 1u << 20;
            s = fa_graph_prepare(ctx, g, &lo);
        }
        fa_graph_free(g);
    }
    free(args);
    free(text);
    return s;
}

/* ---- model strings -> codegen -> compile ---- */

/* X[2,8] -> n elementwise ops -> Y, tensor i named names[i] (NULL: "t<i>"), node i named
 * nnames[i]; prepared and indexed, with one ELEMWISE_CHAIN cluster of every node in *c
 * (arrays in mem). NULL when the graph refuses a name (duplicates, empty). */
static fa_graph *fa_fuzz_chain(fa_ctx *ctx, int n, const uint8_t *ops, char **names, char **nnames, fa_cluster *c,
                               int *mem, int *io)
{
    static const char *const k_ops[] = {"Sigmoid", "Tanh", "Relu", "Neg", "Exp", "Abs", "Softplus", "Elu"};
    fa_graph *g = fa_graph_create("fuzz_codegen");
    if (!g) return NULL;
    char tn[32], nn[32];
    const char *tname[9];
    for (int i = 0; i <= n; i++) {
        snprintf(tn, sizeof tn, "t%d", i);
        const char *want = names ? names[i] : tn;
        if (fa_graph_find_tensor(g, want) >= 0) want = tn; /* a repeated name: the graph would merge them */
        if (fa_graph_find_tensor(g, want) >= 0) goto fail;
        int id = fa_graph_tensor(g, want);
        if (id < 0) goto fail;
        tname[i] = g->tensors[id]->name;
    }
    int64_t dims[2] = {2, 8};
    if (fa_graph_set_opset(ctx, g, "", 13)) goto fail;
    fa_tensor_set_shape(g->tensors[fa_graph_find_tensor(g, tname[0])], FA_DTYPE_FLOAT, 2, dims);
    if (fa_graph_add_input(ctx, g, fa_graph_find_tensor(g, tname[0]))) goto fail;
    for (int i = 0; i < n; i++) {
        snprintf(nn, sizeof nn, "n%d", i);
        const char *in[1] = {tname[i]}, *out[1] = {tname[i + 1]};
        if (!fa_graph_add_node(ctx, g, nnames ? nnames[i] : nn, k_ops[ops[i] % 8], "", 1, in, 1, out)) goto fail;
    }
    if (fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, tname[n]))) goto fail;
    fa_load_options lo = {0};
    if (fa_graph_index(ctx, g) || fa_graph_prepare(ctx, g, &lo) || fa_graph_index(ctx, g)) goto fail;
    memset(c, 0, sizeof *c);
    c->id = 3;
    c->kind = FA_CLUSTER_ELEMWISE_CHAIN;
    c->anchor = -1;
    c->registers = -1;
    c->depends_on = -1;
    c->members = mem;
    for (int i = 0; i < g->n_topo; i++) mem[c->n_members++] = g->topo[i];
    c->inputs = io;
    c->outputs = io + 1;
    io[0] = g->inputs[0];
    io[1] = g->outputs[0];
    c->n_inputs = c->n_outputs = 1;
    /* the label the advisor would give it may hold names: codegen must not print it */
    c->label = tname[0];
    return g;
fail:
    fa_graph_free(g);
    return NULL;
}

/* Model strings into generated code: the input is [n, op bytes..., then NUL-separated names]
 * for a chain of 1..8 elementwise ops whose tensors and nodes carry those names. The C source
 * generated for it must be byte-identical to the one generated with plain names ("t0", "n0",
 * ...): no name reaches generated code, whatever its bytes (comment closers, newlines, '#',
 * quotes, control bytes). Then it is compiled through a private kernel cache (the same source
 * every time: one compile per op sequence) and run on 16 values, which must match the unfused
 * executor. A violation aborts (a fuzzer finding). */
static fa_status fa_fuzz_codegen(fa_ctx *ctx, const uint8_t *data, size_t size)
{
    if (size < 2) return FA_OK;
    int n = 1 + data[0] % 8;
    if (size < (size_t)n + 1) return FA_OK;
    const uint8_t *ops = data + 1;
    size_t off = (size_t)n + 1;
    char *text = malloc(size - off + 1);
    if (!text) return FA_ERR_NOMEM;
    memcpy(text, data + off, size - off);
    text[size - off] = 0;
    char *names[9], *nnames[8], *p = text, *end = text + (size - off);
    char fallback[] = "x";
    for (int i = 0; i < 9 + n; i++) {
        char *nm = p <= end ? p : fallback;
        if (p <= end) p += strlen(p) + 1;
        if (i < 9) names[i] = nm;
        else nnames[i - 9] = nm;
    }
    for (int i = 0; i < 9; i++)
        if (!names[i][0]) names[i] = fallback; /* an empty name is the graph's "omitted" */
    fa_cluster c1, c2;
    int mem1[16], mem2[16], io1[2], io2[2];
    fa_graph *g1 = fa_fuzz_chain(ctx, n, ops, names, nnames, &c1, mem1, io1);
    fa_graph *g2 = fa_fuzz_chain(ctx, n, ops, NULL, NULL, &c2, mem2, io2);
    fa_status s = FA_OK;
    fa_buf a, b;
    fa_buf_init(&a);
    fa_buf_init(&b);
    fa_codegen_info ia, ib;
    if (!g1 || !g2) goto out; /* a name the graph refuses */
    s = fa_codegen_c(ctx, g1, &c1, "fuzz", &a, &ia);
    fa_status s2 = fa_codegen_c(ctx, g2, &c2, "fuzz", &b, &ib);
    if (s != s2 || (!s && (a.len != b.len || memcmp(a.data, b.data, a.len) != 0))) abort(); /* a name reached the source */
    if (s) goto out;
    static fa_kernel_cache *kc; /* one per process, reachable until exit */
    if (!kc) {
        char dir[4096];
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/fa-fuzz-codegen-cache-%d", t && *t ? t : "/tmp", (int)getuid());
        if ((s = fa_kernel_cache_open(ctx, dir, 0, &kc))) goto out;
    }
    fa_kernel_source ks = {a.data, a.len, ia.name};
    fa_compiled *k = NULL;
    char *err = NULL;
    if ((s = fa_compile_kernels(ctx, kc, 1, &ks, &k, &err))) goto out;
    if (!k) {
        s = fa_ctx_error(ctx, FA_ERR_RUNTIME, "%s", err ? err : "?");
        free(err);
        goto out;
    }
    /* run it against the unfused executor */
    float x[16], y[16];
    for (int i = 0; i < 16; i++) x[i] = (float)(i - 8) * 0.37f;
    const void *in[1] = {x};
    void *outp[1] = {y};
    k->fn(in, outp, 1);
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1};
    fa_value v = {0};
    v.dtype = FA_DTYPE_FLOAT;
    v.rank = 2;
    v.dims[0] = 2;
    v.dims[1] = 8;
    v.data = x;
    s = fa_exec_create(ctx, g1, &eo, &e);
    if (!s) s = fa_exec_set_input(ctx, e, 0, &v);
    if (!s) s = fa_exec_run(ctx, e, NULL);
    const fa_value *r = s ? NULL : fa_exec_output(e, 0);
    for (int i = 0; r && i < 16; i++) {
        /* where both are finite and not near overflow (chained Exp overflows; a vectorised expf
         * and the scalar one differ by an ulp, which chains of up to 8 ops amplify), the fused
         * kernel computes what the unfused ops compute */
        double w = ((const float *)r->data)[i], f = y[i];
        if (!isfinite(w) || !isfinite(f) || fabs(w) > 1e30 || fabs(f) > 1e30) continue;
        if (fabs(w - f) > 1e-3 * (1 + fabs(w))) abort(); /* fused differs from unfused */
    }
    fa_exec_free(e);
    fa_compiled_free(k);
out:
    fa_buf_free(&a);
    fa_buf_free(&b);
    fa_graph_free(g1);
    fa_graph_free(g2);
    free(text);
    return s;
}

#endif
