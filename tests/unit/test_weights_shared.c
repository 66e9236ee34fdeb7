/* tests/unit/test_weights_shared — issue 39: a model's weights once in memory. Graph copies share
 * the constants' bytes, executors share one reordered copy per (weight, layout) across graphs and
 * visits, external data (and aligned raw_data) is read in place from the mapped file, and a model
 * over the protobuf limit is written with external data (the limit lowered: a 2 GB model is not
 * for CI). Counters and pointers, never RSS or timings. */
#include "testutil.h"

#include "advisor/advisor.h"
#include "applier/applier.h"
#include "graph/graph.h"
#include "runtime/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static fa_graph *load_batch(fa_ctx *ctx, const char *model, int batch)
{
    fa_graph *g = NULL;
    fa_load_options lo = {.batch = batch};
    fa_status s = fa_graph_load(ctx, model, &lo, &g);
    if (s) fprintf(stderr, "%s\n", fa_ctx_errmsg(ctx));
    assert_int_equal(s, FA_OK);
    return g;
}

static fa_graph *load(fa_ctx *ctx, const char *model) { return load_batch(ctx, model, 0); }

/* The weight of the first MatMul: input 1, a constant. */
static const fa_tensor *first_weight(const fa_graph *g, int skip)
{
    for (int k = 0; k < g->n_topo; k++) {
        const fa_node *n = g->nodes[g->topo[k]];
        if (strstr(n->op_type, "MatMul") && skip-- == 0) {
            const fa_tensor *w = fa_graph_in(g, n, 1);
            assert_non_null(w);
            assert_true(w->flags & FA_TENSOR_CONST);
            return w;
        }
    }
    fail_msg("no MatMul");
    return NULL;
}

static fa_exec *make_exec(fa_ctx *ctx, const fa_graph *g, bool blocked)
{
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1, .blocked_layouts = blocked};
    fa_exec *e = NULL;
    fa_status s = fa_exec_create(ctx, g, &eo, &e);
    if (s) fprintf(stderr, "%s\n", fa_ctx_errmsg(ctx));
    assert_int_equal(s, FA_OK);
    assert_int_equal(fa_exec_fill_inputs(ctx, e, 1), FA_OK);
    assert_int_equal(fa_exec_run(ctx, e, NULL), FA_OK);
    return e;
}

/* The fused plan's graph (every cluster the advisor proposes applied) reads the original's
 * weights where it did not rewrite them: the same bytes, not a copy (before issue 39 every
 * constant was copied into every fused and scoped graph). */
static void test_fused_graph_shares_the_weights_bytes(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = load(ctx, "zoo:mlp-tiny");
    fa_advise_options ao = fa_advise_options_default();
    ao.target = FA_TARGET_CPU;
    fa_plan *p = NULL;
    assert_int_equal(fa_advise(ctx, g, NULL, &ao, &p), FA_OK);
    fa_graph *gf = NULL;
    assert_int_equal(fa_fused_graph(ctx, g, p, NULL, NULL, 0, &gf), FA_OK);
    int shared = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        const fa_tensor *t = g->tensors[i];
        if (!(t->flags & FA_TENSOR_CONST) || !t->data || t->nbytes < 64) continue;
        int j = fa_graph_find_tensor(gf, t->name);
        if (j < 0 || !gf->tensors[j]->data) continue;
        assert_ptr_equal(gf->tensors[j]->data, t->data);
        shared++;
    }
    assert_true(shared >= 2); /* both layers' weights */
    fa_graph_free(gf);
    fa_plan_free(p);
    /* the shared bytes outlive the copy: the original still runs */
    fa_exec *e = make_exec(ctx, g, false);
    fa_exec_free(e);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* Two executors of one graph, an executor of a copy of it, and the same executor rebuilt three
 * times (the apply stage's and the probe's visits): one reordered copy of each weight per layout
 * for all of them, held by the weight's blob and freed with it. */
static void test_reordered_weights_made_once_per_layout(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    /* at batch 1 the products are matrix-vector ones (runtime/cpu/gemv.c), which read the weights
     * as the model holds them: no derived copy at all */
    fa_graph *g1 = load(ctx, "zoo:mlp-tiny");
    fa_exec *e1 = make_exec(ctx, g1, false);
    assert_int_equal(fa_blob_derived_count(first_weight(g1, 0)->blob), 0);
    fa_exec_free(e1);
    fa_graph_free(g1);
    /* batch 4: oneDNN's matmul */
    fa_graph *g = load_batch(ctx, "zoo:mlp-tiny", 4);
    const fa_tensor *w = first_weight(g, 0);
    assert_non_null(w->blob);
    fa_exec *a = make_exec(ctx, g, false), *b = make_exec(ctx, g, false);
    int made = fa_blob_derived_count(w->blob);
    printf("  derived copies of '%s': %d\n", w->name, made);
    /* oneDNN 2.6 keeps a MatMul's constant weights blocked for its brgemm kernels (AVX-512); its
     * gemm kernels elsewhere read them plain, as they are (no copy) */
    assert_int_equal(made, __builtin_cpu_supports("avx512f") ? 1 : 0);
    fa_advise_options ao = fa_advise_options_default();
    fa_plan *p = NULL;
    assert_int_equal(fa_advise(ctx, g, NULL, &ao, &p), FA_OK);
    for (int visit = 0; visit < 3; visit++) {
        fa_graph *gu = NULL;
        assert_int_equal(fa_fused_graph(ctx, g, p, NULL, NULL, 0, &gu), FA_OK);
        fa_exec *u = make_exec(ctx, gu, false);
        const fa_tensor *wu = gu->tensors[fa_graph_find_tensor(gu, w->name)];
        assert_ptr_equal(wu->blob, w->blob); /* the copy's weight is the original's */
        fa_exec_free(u);
        fa_graph_free(gu);
        assert_int_equal(fa_blob_derived_count(w->blob), made);
    }
    /* the same outputs from each (they read the same weights) */
    const fa_value *oa = fa_exec_output(a, 0), *ob = fa_exec_output(b, 0);
    assert_memory_equal(oa->data, ob->data, (size_t)fa_value_numel(oa) * sizeof(float));
    fa_exec_free(a);
    fa_exec_free(b);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* A blob's derived copy: made by the first request for its key, shared after, one per key. */
static int made_calls;
static fa_status fill_twice(void *user, fa_ctx *ctx, const void *src, void *dst, size_t n)
{
    (void)user, (void)ctx;
    made_calls++;
    const unsigned char *s = src;
    unsigned char *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = (unsigned char)(2 * s[i % 8]);
    return FA_OK;
}

static void test_blob_derived_copy_once_per_key(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_blob *b = fa_blob_alloc(8);
    memcpy((void *)fa_blob_data(b), "\1\2\3\4\5\6\7\10", 8);
    const void *x = NULL, *y = NULL, *z = NULL;
    made_calls = 0;
    assert_int_equal(fa_blob_derived(ctx, b, "k1", 2, 16, fill_twice, NULL, &x), FA_OK);
    assert_int_equal(fa_blob_derived(ctx, b, "k1", 2, 16, fill_twice, NULL, &y), FA_OK);
    assert_ptr_equal(x, y);
    assert_int_equal(made_calls, 1);
    assert_int_equal(fa_blob_derived(ctx, b, "k2", 2, 16, fill_twice, NULL, &z), FA_OK);
    assert_ptr_not_equal(x, z);
    assert_int_equal(made_calls, 2);
    assert_int_equal(fa_blob_derived_count(b), 2);
    assert_int_equal(((const unsigned char *)x)[9], 4);
    /* a slice keeps its parent alive */
    fa_blob *sl = fa_blob_slice(b, 4, 4);
    fa_blob_unref(b);
    assert_int_equal(((const unsigned char *)fa_blob_data(sl))[0], 5);
    assert_null(fa_blob_slice(sl, 2, 3)); /* past its end */
    fa_blob_unref(sl);
    fa_ctx_free(ctx);
}

/* mlp-tiny written with external data (the limit lowered to 1 byte: every initializer of
 * FA_ONNX_EXTERNAL_MIN_BYTES or more goes to MODEL.data), read back: those initializers are
 * slices of the data file's mapping, page aligned, never copied; the model runs as the original. */
static void test_external_data_written_and_read_in_place(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = load(ctx, "zoo:mlp-tiny");
    char dir[4096], path[4200], data[4300];
    snprintf(dir, sizeof dir, "%s/ext", fa_test_tmpdir());
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/mlp.onnx", dir);
    snprintf(data, sizeof data, "%s.data", path);
    fa_onnx_export_options eo = {.external_above = 1};
    assert_int_equal(fa_onnx_export_with(ctx, g, path, &eo), FA_OK);
    struct stat st;
    assert_int_equal(stat(data, &st), 0);
    fa_graph *r = NULL;
    assert_int_equal(fa_onnx_import(ctx, path, &r), FA_OK);
    int ext = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        const fa_tensor *t = g->tensors[i];
        if (!(t->flags & FA_TENSOR_INITIALIZER) || t->nbytes < FA_ONNX_EXTERNAL_MIN_BYTES) continue;
        int j = fa_graph_find_tensor(r, t->name);
        assert_true(j >= 0);
        const fa_tensor *u = r->tensors[j];
        assert_non_null(u->blob);
        assert_true(fa_blob_mapped(u->blob));
        assert_int_equal((uintptr_t)u->data % FA_ONNX_EXTERNAL_ALIGN, 0);
        assert_memory_equal(u->data, t->data, t->nbytes);
        ext++;
    }
    assert_true(ext >= 2);
    assert_int_equal(r->weights_mapped, ext);
    assert_true(r->weights_mapped_bytes >= (uint64_t)ext * FA_ONNX_EXTERNAL_MIN_BYTES);
    fa_load_options lo = {0};
    assert_int_equal(fa_graph_prepare(ctx, r, &lo), FA_OK);
    fa_exec *a = make_exec(ctx, g, false), *b = make_exec(ctx, r, false);
    const fa_value *oa = fa_exec_output(a, 0), *ob = fa_exec_output(b, 0);
    assert_memory_equal(oa->data, ob->data, (size_t)fa_value_numel(oa) * sizeof(float));
    fa_exec_free(a);
    fa_exec_free(b);
    /* the default limit (2 GB) keeps a small model in one file: no data file written */
    char path2[4200], data2[4300];
    snprintf(path2, sizeof path2, "%s/small.onnx", dir);
    snprintf(data2, sizeof data2, "%s.data", path2);
    assert_int_equal(fa_onnx_export(ctx, g, path2), FA_OK);
    assert_int_not_equal(stat(data2, &st), 0);
    fa_graph_free(r);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* Embedded raw_data: every tensor either read in place (its address aligned to its element size)
 * or copied once, and the counts add up to the initializers holding data; the values are the
 * file's. */
static void test_embedded_raw_data_read_in_place_or_copied_once(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = load(ctx, "zoo:mlp-tiny");
    char path[4200];
    snprintf(path, sizeof path, "%s/embedded.onnx", fa_test_tmpdir());
    assert_int_equal(fa_onnx_export(ctx, g, path), FA_OK);
    fa_graph *r = NULL;
    assert_int_equal(fa_onnx_import(ctx, path, &r), FA_OK);
    int inits = 0;
    for (int i = 0; i < r->n_tensors; i++) {
        const fa_tensor *u = r->tensors[i];
        if (!(u->flags & FA_TENSOR_INITIALIZER)) continue;
        inits++;
        assert_non_null(u->blob);
        size_t esz = fa_dtype_size(u->dtype);
        assert_int_equal((uintptr_t)u->data % esz, 0); /* never handed out misaligned */
        const fa_tensor *t = g->tensors[fa_graph_find_tensor(g, u->name)];
        assert_memory_equal(u->data, t->data, t->nbytes);
    }
    assert_int_equal(r->weights_mapped + r->weights_copied, inits);
    fa_graph_free(r);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* exec's release_plain_weights: a weight whose every consumer reads oneDNN's reordered copy keeps
 * only that copy (its plain bytes freed, data NULL), the outputs unchanged; a weight read plain,
 * or whose blob another reader still holds, keeps its bytes. Without AVX-512 oneDNN reads the
 * MatMul weights plain (no derived copy): nothing may be freed then. */
static void test_exec_releases_plain_weights_read_reordered(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    /* batch 4: oneDNN's matmul, which reads a reordered copy (batch 1 runs gemv on the plain bytes) */
    fa_graph *ref = load_batch(ctx, "zoo:mlp-tiny", 4), *g = load_batch(ctx, "zoo:mlp-tiny", 4);
    fa_exec *er = make_exec(ctx, ref, false);
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1, .release_plain_weights = true};
    fa_exec *e = NULL;
    assert_int_equal(fa_exec_create(ctx, g, &eo, &e), FA_OK);
    int freed = 0, kept_derived = 0, consts = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        const fa_tensor *t = g->tensors[i];
        if (!(t->flags & FA_TENSOR_CONST) || !t->blob) continue;
        consts++;
        if (!t->data) freed++;
        else if (fa_blob_derived_count(t->blob)) kept_derived++;
    }
    printf("  %d constants: %d plain copies freed, %d kept beside a derived copy\n", consts, freed, kept_derived);
    bool reordered = __builtin_cpu_supports("avx512f");
    if (reordered) assert_true(freed >= 1);
    else assert_int_equal(freed, 0);
    assert_int_equal(kept_derived, 0);
    assert_true(freed < consts); /* the biases, read plain, stay */
    assert_int_equal(fa_exec_fill_inputs(ctx, e, 1), FA_OK);
    assert_int_equal(fa_exec_run(ctx, e, NULL), FA_OK);
    const fa_value *o = fa_exec_output(e, 0), *orf = fa_exec_output(er, 0);
    assert_memory_equal(o->data, orf->data, (size_t)fa_value_numel(o) * sizeof(float));
    fa_exec_free(e);
    fa_exec_free(er);
    fa_graph_free(g);
    /* another executor still reading the same blob's derived copy: nothing is freed */
    fa_graph *h = load(ctx, "zoo:mlp-tiny");
    fa_exec *first = make_exec(ctx, h, false), *second = NULL;
    assert_int_equal(fa_exec_create(ctx, h, &eo, &second), FA_OK);
    for (int i = 0; i < h->n_tensors; i++)
        if ((h->tensors[i]->flags & FA_TENSOR_CONST) && h->tensors[i]->blob) assert_non_null(h->tensors[i]->data);
    fa_exec_free(second);
    fa_exec_free(first);
    fa_graph_free(h);
    fa_graph_free(ref);
    fa_ctx_free(ctx);
}

/* fa_blob_drop_plain frees only when the derived readers are all the references but the owner's,
 * and a derived copy asked for afterwards is refused, not made from freed bytes. */
static void test_blob_drop_plain_only_when_all_readers_read_derived(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_blob *b = fa_blob_alloc(64);
    memset((void *)fa_blob_data(b), 3, 64);
    assert_false(fa_blob_drop_plain(b, 1)); /* no derived copy */
    const void *d = NULL;
    assert_int_equal(fa_blob_derived(ctx, b, "k", 1, 64, fill_twice, NULL, &d), FA_OK);
    fa_blob *plain_reader = fa_blob_ref_reader(b, fa_blob_data(b)); /* reads the plain bytes */
    fa_blob *derived_reader = fa_blob_ref_reader(b, d);
    assert_false(fa_blob_drop_plain(b, 1)); /* the plain reader holds it */
    fa_blob_unref_reader(plain_reader, fa_blob_data(b));
    assert_false(fa_blob_drop_plain(b, 2)); /* two consumers, one reader: one reads plain */
    assert_true(fa_blob_drop_plain(b, 1));
    assert_null(fa_blob_data(b));
    assert_memory_equal(d, (unsigned char[64]){[0 ... 63] = 6}, 64); /* the copy lives on */
    const void *d2 = NULL;
    assert_int_not_equal(fa_blob_derived(ctx, b, "other", 5, 64, fill_twice, NULL, &d2), FA_OK);
    fa_ctx_clear(ctx);
    fa_blob_unref_reader(derived_reader, d);
    fa_blob_unref(b);
    fa_ctx_free(ctx);
}

/* fa_blob_trim_derived frees the copies no reader holds (a layout the plan's choice measured and
 * did not keep) and keeps the held ones; a trimmed key is made again on request; nothing is
 * trimmed once the plain bytes were dropped. */
static void test_blob_trim_frees_unread_copies_only(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_blob *b = fa_blob_alloc(8);
    memcpy((void *)fa_blob_data(b), "\1\2\3\4\5\6\7\10", 8);
    const void *held = NULL, *unread = NULL, *again = NULL;
    made_calls = 0;
    assert_int_equal(fa_blob_derived(ctx, b, "kept", 4, 32, fill_twice, NULL, &held), FA_OK);
    assert_int_equal(fa_blob_derived(ctx, b, "gone", 4, 48, fill_twice, NULL, &unread), FA_OK);
    fa_blob *reader = fa_blob_ref_reader(b, held);
    fa_blob *was = fa_blob_ref_reader(b, unread);
    fa_blob_unref_reader(was, unread); /* its executor freed */
    assert_int_equal(fa_blob_trim_derived(b), 48);
    assert_int_equal(fa_blob_trim_derived(b), 0);
    assert_int_equal(fa_blob_derived(ctx, b, "kept", 4, 32, fill_twice, NULL, &again), FA_OK);
    assert_ptr_equal(again, held); /* the held copy stayed */
    assert_int_equal(made_calls, 2);
    assert_int_equal(fa_blob_derived(ctx, b, "gone", 4, 48, fill_twice, NULL, &again), FA_OK);
    assert_int_equal(made_calls, 3); /* made again */
    assert_int_equal(((const unsigned char *)again)[10], 6);
    fa_blob_unref_reader(reader, held);
    assert_int_equal(fa_blob_trim_derived(b), 32 + 48);
    assert_int_equal(fa_blob_trim_derived(NULL), 0);
    fa_blob_unref(b);
    /* the plain bytes dropped: the copy is all there is, kept with no reader */
    b = fa_blob_alloc(8);
    memset((void *)fa_blob_data(b), 1, 8);
    assert_int_equal(fa_blob_derived(ctx, b, "only", 4, 16, fill_twice, NULL, &held), FA_OK);
    reader = fa_blob_ref_reader(b, held);
    assert_true(fa_blob_drop_plain(b, 1));
    fa_blob_unref_reader(reader, held);
    assert_int_equal(fa_blob_trim_derived(b), 0);
    assert_memory_equal(held, (unsigned char[16]){[0 ... 15] = 2}, 16);
    fa_blob_unref(b);
    fa_ctx_free(ctx);
}

/* With executors on one graph: trimming while one executor lives keeps the weights it reads (a
 * new executor in its layout makes no copy), and frees those of a freed executor's layout. */
/* A mapped weights file truncated by another process while in use: the read of a lost page ends
 * the process with one line naming the file and the byte and exit status 1, not a bare "Bus
 * error" (signal 7, exit 135). Run in a child, whose stderr is a file here. */
static void test_mapped_file_truncated_in_use_named_not_bus_error(void **state)
{
    (void)state;
    const char *path = fa_test_path(fa_test_tmpdir(), "weights-truncated.bin"), *errf = fa_test_path(fa_test_tmpdir(), "bus.err");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    static unsigned char page[1 << 16];
    memset(page, 7, sizeof page);
    for (int i = 0; i < 4; i++) assert_int_equal(fwrite(page, 1, sizeof page, f), sizeof page);
    fclose(f);
    pid_t pid = fork();
    if (pid == 0) {
        int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(e, 2);
        fa_ctx *ctx = fa_ctx_create();
        int fd = open(path, O_RDONLY);
        fa_blob *b = NULL;
        if (fd < 0 || fa_blob_map_file(ctx, fd, path, &b)) _exit(3);
        const volatile unsigned char *d = fa_blob_data(b);
        if (d[100] != 7) _exit(4);
        if (truncate(path, 0) != 0) _exit(5);
        volatile unsigned char x = d[3 * 65536 + 5]; /* a page now past the end */
        (void)x;
        _exit(6); /* not reached */
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    if (!WIFEXITED(ws)) fail_msg("the child ended by signal %d", WTERMSIG(ws));
    assert_int_equal(WEXITSTATUS(ws), 1);
    char *t = NULL;
    size_t n = 0;
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_read_file(ctx, errf, (uint8_t **)&t, &n), FA_OK);
    fa_ctx_free(ctx);
    t = realloc(t, n + 1);
    t[n] = 0;
    assert_non_null(strstr(t, path));
    assert_non_null(strstr(t, "byte 196613 of its 262144 mapped bytes"));
    free(t);
}

static void test_trim_keeps_a_live_executors_weights(void **state)
{
    (void)state;
    fa_plan_layouts pl;
    fa_target_plan_layouts(FA_TARGET_CPU, &pl);
    if (pl.n < 2) skip(); /* one layout here: nothing to trim between */
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = load(ctx, "zoo:convnet-tiny");
    const fa_tensor *w = NULL;
    for (int i = 0; i < g->n_nodes && !w; i++)
        if (g->nodes[i] && !strcmp(g->nodes[i]->op_type, "Conv")) w = g->tensors[g->nodes[i]->inputs[1]];
    assert_non_null(w);
    assert_non_null(w->blob);
    fa_exec *e[2];
    for (int k = 0; k < 2; k++) {
        fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1, .blocked_layouts = true, .plan_layout = pl.cand[k]};
        assert_int_equal(fa_exec_create(ctx, g, &eo, &e[k]), FA_OK);
    }
    int made = fa_blob_derived_count(w->blob);
    fa_exec_free(e[1]);
    size_t freed = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t] && (g->tensors[t]->flags & FA_TENSOR_CONST)) freed += fa_blob_trim_derived(g->tensors[t]->blob);
    printf("  %s and %s: %d copies of '%s', %zu bytes trimmed\n", fa_layout_name(pl.cand[0]), fa_layout_name(pl.cand[1]), made,
           w->name, freed);
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1, .blocked_layouts = true, .plan_layout = pl.cand[0]};
    fa_exec *again = NULL;
    assert_int_equal(fa_exec_create(ctx, g, &eo, &again), FA_OK);
    assert_int_equal(fa_blob_derived_count(w->blob), made); /* the live executor's copies stayed */
    assert_int_equal(fa_exec_fill_inputs(ctx, again, 1), FA_OK);
    assert_int_equal(fa_exec_run(ctx, again, NULL), FA_OK);
    fa_exec_free(again);
    fa_exec_free(e[0]);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* fa_load_options.progress hears the load and the preparation, ending at their totals. */
typedef struct heard {
    int load_done, load_total, prep_done, prep_total;
} heard;
static void on_progress(void *user, const char *step, int done, int total)
{
    heard *h = user;
    if (!strcmp(step, "load")) h->load_done = done, h->load_total = total;
    if (!strcmp(step, "prepare")) h->prep_done = done, h->prep_total = total;
}

static void test_load_reports_progress(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = load(ctx, "zoo:mlp-tiny");
    char path[4200];
    snprintf(path, sizeof path, "%s/progress.onnx", fa_test_tmpdir());
    assert_int_equal(fa_onnx_export(ctx, g, path), FA_OK);
    heard h = {0};
    fa_load_options lo = {.progress = on_progress, .progress_user = &h};
    fa_graph *r = NULL;
    assert_int_equal(fa_graph_load(ctx, path, &lo, &r), FA_OK);
    assert_true(h.load_total >= 4);
    assert_int_equal(h.load_done, h.load_total);
    assert_int_equal(h.prep_done, r->n_topo);
    assert_int_equal(h.prep_total, r->n_topo);
    fa_graph_free(r);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_graph_shares_the_weights_bytes),
        cmocka_unit_test(test_reordered_weights_made_once_per_layout),
        cmocka_unit_test(test_blob_derived_copy_once_per_key),
        cmocka_unit_test(test_blob_trim_frees_unread_copies_only),
        cmocka_unit_test(test_mapped_file_truncated_in_use_named_not_bus_error),
        cmocka_unit_test(test_trim_keeps_a_live_executors_weights),
        cmocka_unit_test(test_external_data_written_and_read_in_place),
        cmocka_unit_test(test_embedded_raw_data_read_in_place_or_copied_once),
        cmocka_unit_test(test_load_reports_progress),
        cmocka_unit_test(test_exec_releases_plain_weights_read_reordered),
        cmocka_unit_test(test_blob_drop_plain_only_when_all_readers_read_derived),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
