/* fuzz/fuzz_targets — one entry point per fuzz target, shared by the libFuzzer mains
 * (fuzz/fuzz_*.c) and the regression test that replays committed crash inputs
 * (tests/unit/test_bad_fuzz_regressions.c), so a regression runs exactly what the fuzzer ran.
 * Each returns the status of the code under test; any status is acceptable, a crash, hang,
 * leak or sanitizer report is the bug. On failure the message is left on ctx. Header-only. */
#ifndef FA_FUZZ_TARGETS_H
#define FA_FUZZ_TARGETS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "collector/import/import.h"
#include "fuzz/fuzz_file.h"
#include "graph/graph.h"
#include "runtime/runtime.h"

/* ONNX import (display name "fuzz.onnx", no base folder: external data is refused without
 * touching the filesystem), then shape inference + folding with a 1 MiB folded-tensor cap. */
static fa_status fa_fuzz_onnx(fa_ctx *ctx, const uint8_t *data, size_t size)
{
    fa_graph *g = NULL;
    fa_status s = fa_onnx_import_buffer(ctx, "fuzz.onnx", NULL, data, size, &g);
    if (s == FA_OK) {
        fa_load_options lo = {0};
        lo.max_const_bytes = 1u << 20;
        s = fa_graph_prepare(ctx, g, &lo);
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

/* Command-line parsers: the input split at NUL bytes is an argv after "run"; the model options
 * loop of `run` (fa_cli_model_opt: --shape, --batch, --no-fold), fa_cli_opt_value,
 * fa_cli_parse_long, fa_target_parse and fa_shape_binding_parse consume it; parsed bindings
 * are then applied by fa_graph_prepare to zoo:mlp-tiny (input "input" [B,64]). cli/common.c
 * prints usage errors to the stderr FILE*. Returns the prepare status (FA_OK if none ran). */
static fa_status fa_fuzz_args(fa_ctx *ctx, const uint8_t *data, size_t size)
{
    enum { MAX_ARGS = 64 };
    char *text = malloc(size + 1);
    if (!text) return FA_ERR_NOMEM;
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
    for (int i = 1; i < argc; i++) {
        int r = fa_cli_model_opt(ctx, "run", argc, argv, &i, &mo);
        if (r < 0) break;
        if (r > 0) continue;
        const char *v;
        fa_target t;
        int j = i;
        if ((v = fa_cli_opt_value(argc, argv, &j, "--iters"))) (void)fa_cli_parse_long("run", "--iters", v, 1, 1000000);
        j = i;
        if ((v = fa_cli_opt_value(argc, argv, &j, "--target"))) (void)fa_target_parse(ctx, v, &t);
        (void)fa_target_parse(ctx, argv[i], &t);
        (void)fa_cli_parse_long("run", "--threads", argv[i], 0, 1024);
        fa_shape_binding b;
        (void)fa_shape_binding_parse(ctx, argv[i], &b);
    }
    fa_status s = FA_OK;
    if (mo.n_bindings > 0 || mo.batch > 0) {
        fa_graph *g = NULL;
        s = fa_zoo_build(ctx, "mlp-tiny", 1, &g);
        if (s == FA_OK) {
            fa_load_options lo = fa_cli_load_options(&mo);
            lo.max_const_bytes = 1u << 20;
            s = fa_graph_prepare(ctx, g, &lo);
        }
        fa_graph_free(g);
    }
    free(text);
    return s;
}

#endif
