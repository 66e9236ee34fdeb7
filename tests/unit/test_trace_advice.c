/* tests/unit/test_trace_advice — op-level advice from kernel traces without a graph: exact
 * figures on a hand-written 3-stream trace, name normalisation and classes, device tables,
 * storage round trip, fault files, and the real A100 / V100 / RTX corpus traces. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/trace_advice.h"
#include "collector/import/import.h"
#include "store/store.h"
#include "testutil.h"

static const char *data(const char *name)
{
    static char buf[4][1024];
    static int k;
    const char *src = getenv("FA_SOURCE_DIR");
    char *b = buf[k++ & 3];
    snprintf(b, sizeof buf[0], "%s/tests/data/import/%s", src ? src : ".", name);
    return b;
}

static int64_t g_corr = 100;

/* a kernel on (device 0, stream) with its cudaLaunchKernel call (pid 1, tid 1) 20 ns before */
static void kernel(fa_trace *t, const char *name, int64_t stream, uint64_t start, uint64_t d, uint64_t launch_d,
                   uint64_t bytes_read)
{
    fa_activity r = fa_activity_init(FA_ACT_RUNTIME);
    r.name = fa_trace_intern(t, "cudaLaunchKernel");
    r.pid = 1;
    r.tid = 1;
    r.start_ns = start - 20;
    r.end_ns = start - 20 + launch_d;
    r.correlation = g_corr;
    assert_non_null(fa_trace_add(t, &r));
    fa_activity k = fa_activity_init(FA_ACT_KERNEL);
    k.name = fa_trace_intern(t, name);
    k.device = 0;
    k.stream = stream;
    k.pid = 1;
    k.tid = 1;
    k.start_ns = start;
    k.end_ns = start + d;
    k.correlation = g_corr++;
    if (bytes_read) {
        k.bytes_read = bytes_read;
        k.flags |= FA_ACTF_ESTIMATED_BYTES;
    }
    if (!strcmp(name, "gemm_kernel")) {
        k.block[0] = 256;
        k.block[1] = k.block[2] = 1;
        k.grid[0] = 108;
        k.grid[1] = k.grid[2] = 1;
        k.registers = 64;
    }
    assert_non_null(fa_trace_add(t, &k));
}

static void cpu_op(fa_trace *t, const char *name, uint64_t start, uint64_t end)
{
    fa_activity c = fa_activity_init(FA_ACT_CPU_OP);
    c.name = fa_trace_intern(t, name);
    c.pid = 1;
    c.tid = 1;
    c.start_ns = start;
    c.end_ns = end;
    assert_non_null(fa_trace_add(t, &c));
}

/* Stream 7: four layers of gemm(50) -> add(10) -> mul(10) -> gelu(10), 5 ns gaps inside a
 *   layer, layers 200 ns apart (105 ns gap gelu -> next gemm); launch calls 4 ns.
 * Stream 8: five tiny kernels of 2 ns every 10 ns (launch calls 8 ns: launch-bound), then a
 *   100 ns kernel at 5100 (launch 8 ns, not launch-bound).
 * Stream 9: [6000,6100], [6050,6150] (overlap: excluded), [6200,6210]; launch calls 4 ns. */
static fa_trace *hand_trace(bool gelu_bytes)
{
    fa_trace *t = fa_trace_create("kineto");
    assert_non_null(t);
    t->device_name = fa_trace_intern(t, "NVIDIA A100-SXM4-80GB");
    cpu_op(t, "ProfilerStep#1", 0, 10000);
    cpu_op(t, "aten::linear", 1100, 1200);
    for (int i = 0; i < 4; i++) {
        uint64_t b = 1000 + 200 * (uint64_t)i;
        kernel(t, "gemm_kernel", 7, b, 50, 4, 0);
        kernel(t, "void add_kernel<float>(float*, float const*)", 7, b + 55, 10, 4, 800);
        kernel(t, "mul_kernel", 7, b + 70, 10, 4, 400);
        kernel(t, "gelu_kernel", 7, b + 85, 10, 4, gelu_bytes || i ? 400 : 0);
    }
    for (int i = 0; i < 5; i++) kernel(t, "tiny_kernel", 8, 5000 + 10 * (uint64_t)i, 2, 8, 0);
    kernel(t, "big_kernel", 8, 5100, 100, 8, 0);
    kernel(t, "my_conv_kernel", 9, 6000, 100, 4, 0);
    kernel(t, "my_conv_kernel", 9, 6050, 100, 4, 0);
    kernel(t, "my_conv_kernel", 9, 6200, 10, 4, 0);
    return t;
}

static const fa_ta_kernel *kstat(const fa_trace_advice *a, const char *name)
{
    for (int i = 0; i < a->n_kernel_names; i++)
        if (!strcmp(a->kernels[i].name, name)) return &a->kernels[i];
    return NULL;
}

static void test_hand_trace_figures_exact(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = hand_trace(true);
    fa_ta_device dev = {.name = "NVIDIA A100-SXM4-80GB", .cc_major = 8, .cc_minor = 0, .total_mem_bytes = 85899345920ull};
    fa_trace_advice *a = NULL;
    assert_int_equal(fa_trace_advise(ctx, t, &dev, &a), FA_OK);
    assert_false(a->no_gpu_activity);
    assert_int_equal(a->n_kernels, 25);
    assert_int_equal(a->kernel_ns, 640);
    assert_int_equal(a->n_streams, 3);
    /* launch calls: 19 x 4 ns, 6 x 8 ns -> lower median 4; gaps 12x5, 4x8, 50, 58, 3x105 -> 5 */
    assert_int_equal(a->n_launch_calls, 25);
    assert_int_equal(a->launch_call_median_ns, 4);
    assert_int_equal(a->gap_median_ns, 5);
    assert_int_equal(a->launch_overhead_ns, 9);
    /* idle: stream 7 12x5 + 3x105 = 375, stream 8 4x8 + 58 = 90, stream 9 50 (overlap excluded) */
    assert_int_equal(a->idle_ns, 515);
    assert_int_equal(a->n_overlaps, 1);
    for (int i = 0; i < a->n_streams; i++) {
        const fa_ta_stream *s = &a->streams[i];
        assert_true(s->idle_ns >= 0);
        if (s->stream == 7) assert_int_equal(s->idle_ns, 375), assert_int_equal(s->n_gaps, 15);
        if (s->stream == 8) assert_int_equal(s->idle_ns, 90), assert_int_equal(s->n_gaps, 5);
        if (s->stream == 9) assert_int_equal(s->idle_ns, 50), assert_int_equal(s->n_overlaps, 1);
    }
    /* largest gap: 105 ns after the first gelu (1095), next kernel gemm, cpu op aten::linear */
    assert_true(a->n_gaps >= 3);
    assert_int_equal(a->gaps[0].gap_ns, 105);
    assert_int_equal(a->gaps[0].start_ns, 1095);
    assert_string_equal(a->gaps[0].next_kernel, "gemm_kernel");
    assert_non_null(a->gaps[0].cpu_op);
    assert_string_equal(a->gaps[0].cpu_op, "aten::linear");
    /* one repeated sequence: add -> mul -> gelu x4 (pairs dropped: same count, contained) */
    assert_int_equal(a->n_seqs, 1);
    const fa_ta_seq *q = &a->seqs[0];
    assert_int_equal(q->n, 3);
    assert_string_equal(q->names[0], "add_kernel");
    assert_string_equal(q->names[1], "mul_kernel");
    assert_string_equal(q->names[2], "gelu_kernel");
    assert_int_equal(q->count, 4);
    assert_int_equal(q->total_ns, 120);
    assert_int_equal(q->idle_inside_ns, 4 * (5 + 5));
    assert_true(q->bytes_known);
    assert_int_equal(q->intermediate_bytes, 4 * (2 * 400 + 2 * 400));
    assert_true(fabs(q->saving_launch_ns - 4 * 2 * 9) < 1e-9);
    assert_true(fabs(a->hbm_gbs - 2039) < 1e-9);
    assert_true(fabs(q->saving_bytes_ns - 6400.0 / 2039.0) < 1e-9);
    assert_true(fabs(q->saving_ns - (72 + 6400.0 / 2039.0)) < 1e-9);
    /* launch-bound stretch: the five tiny kernels on stream 8 */
    assert_int_equal(a->n_stretches, 1);
    assert_int_equal(a->stretches[0].stream, 8);
    assert_int_equal(a->stretches[0].n_kernels, 5);
    assert_int_equal(a->stretches[0].kernel_ns, 10);
    assert_int_equal(a->stretches[0].launch_ns, 40);
    assert_int_equal(a->stretches[0].start_ns, 5000);
    assert_int_equal(a->stretches[0].end_ns, 5042);
    assert_int_equal(a->launch_bound_kernels, 5);
    assert_int_equal(a->launch_bound_ns, 10);
    /* per-kernel stats, occupancy from the calculator: 64 regs x 256 threads -> 4 blocks, 32/64 warps */
    const fa_ta_kernel *g = kstat(a, "gemm_kernel");
    assert_non_null(g);
    assert_int_equal(g->count, 4);
    assert_int_equal(g->total_ns, 200);
    assert_int_equal(g->median_ns, 50);
    assert_int_equal(g->cls, FA_KCLASS_GEMM);
    assert_string_equal(g->occupancy_source, "calculator");
    assert_true(fabs(g->occupancy - 0.5) < 1e-9);
    const fa_ta_kernel *c = kstat(a, "my_conv_kernel");
    assert_non_null(c);
    assert_int_equal(c->count, 3);
    assert_int_equal(c->total_ns, 210);
    assert_int_equal(c->median_ns, 100);
    assert_true(c->occupancy < 0); /* no launch configuration */
    assert_string_equal(a->cc_source, "deviceProperties");
    fa_buf b;
    fa_buf_init(&b);
    fa_trace_advice_text(a, &b);
    assert_non_null(strstr(b.data, "add_kernel -> mul_kernel -> gelu_kernel"));
    fa_buf_reset(&b);
    fa_trace_advice_json(a, &b);
    assert_non_null(strstr(b.data, "\"kernels\":[\"add_kernel\",\"mul_kernel\",\"gelu_kernel\"],\"count\":4,"
                                   "\"total_ns\":120,\"idle_inside_ns\":40,"));
    fa_buf_free(&b);
    fa_trace_advice_free(a);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

static void test_sequence_bytes_unknown_when_one_occurrence_lacks_sizes(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = hand_trace(false); /* first gelu has no Input Dims */
    fa_trace_advice *a = NULL;
    assert_int_equal(fa_trace_advise(ctx, t, NULL, &a), FA_OK);
    assert_int_equal(a->n_seqs, 1);
    assert_false(a->seqs[0].bytes_known);
    assert_int_equal(a->seqs[0].intermediate_bytes, 0);
    assert_true(a->seqs[0].saving_bytes_ns == 0);
    assert_true(fabs(a->seqs[0].saving_ns - 72) < 1e-9);
    /* no deviceProperties: sm_80 assumed from "A100" in the name */
    assert_int_equal(a->cc_major, 8);
    assert_string_equal(a->cc_source, "assumed from the device name");
    fa_buf b;
    fa_buf_init(&b);
    fa_trace_advice_text(a, &b);
    assert_non_null(strstr(b.data, "bytes unknown"));
    fa_buf_free(&b);
    fa_trace_advice_free(a);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

static void test_unknown_device_has_no_occupancy_and_no_bandwidth(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = hand_trace(true);
    t->device_name = fa_trace_intern(t, "Mystery Accelerator 9000");
    fa_trace_advice *a = NULL;
    assert_int_equal(fa_trace_advise(ctx, t, NULL, &a), FA_OK);
    assert_int_equal(a->cc_major, 0);
    assert_null(a->cc_source);
    assert_true(a->hbm_gbs == 0);
    assert_true(kstat(a, "gemm_kernel")->occupancy < 0);
    assert_true(a->seqs[0].saving_bytes_ns == 0); /* bytes known, bandwidth not */
    fa_buf b;
    fa_buf_init(&b);
    fa_trace_advice_text(a, &b);
    assert_non_null(strstr(b.data, "compute capability unknown"));
    assert_non_null(strstr(b.data, "HBM bandwidth unknown"));
    fa_buf_free(&b);
    fa_trace_advice_free(a);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

static void test_names_normalize_and_classify(void **state)
{
    (void)state;
    char buf[256];
    assert_string_equal(fa_kernel_name_normalize(
                            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                            "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
                            buf, sizeof buf),
                        "at::native::vectorized_elementwise_kernel<add>");
    assert_string_equal(fa_kernel_name_normalize(
                            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, "
                            "float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float>, "
                            "unsigned int, float, 4>)",
                            buf, sizeof buf),
                        "at::native::reduce_kernel<Mean>");
    assert_string_equal(fa_kernel_name_normalize("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 32, true, 1, true>"
                                                 "(cudnnTensorStruct, float const*)",
                                                 buf, sizeof buf),
                        "cudnn::bn_fw_tr_1C11_kernel_NCHW");
    assert_string_equal(fa_kernel_name_normalize("volta_sgemm_64x64_nt", buf, sizeof buf), "volta_sgemm_64x64_nt");
    assert_string_equal(fa_kernel_name_normalize("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10>"
                                                 "(float*, float const*, int)",
                                                 buf, sizeof buf),
                        "(anonymous namespace)::softmax_warp_forward");
    assert_int_equal(fa_kernel_classify("at::native::vectorized_elementwise_kernel<add>"), FA_KCLASS_ELEMENTWISE);
    assert_int_equal(fa_kernel_classify("at::native::unrolled_elementwise_kernel<add>"), FA_KCLASS_ELEMENTWISE);
    assert_int_equal(fa_kernel_classify("at::native::reduce_kernel<sum>"), FA_KCLASS_REDUCTION);
    assert_int_equal(fa_kernel_classify("(anonymous namespace)::softmax_warp_forward"), FA_KCLASS_REDUCTION);
    assert_int_equal(fa_kernel_classify("cuApplyLayerNorm"), FA_KCLASS_REDUCTION);
    assert_int_equal(fa_kernel_classify("at::native::vectorized_layer_norm_kernel"), FA_KCLASS_REDUCTION);
    assert_int_equal(fa_kernel_classify("cudnn::bn_fw_tr_1C11_kernel_NCHW"), FA_KCLASS_REDUCTION);
    assert_int_equal(fa_kernel_classify("volta_sgemm_64x64_nt"), FA_KCLASS_GEMM);
    assert_int_equal(fa_kernel_classify("cutlass::Kernel"), FA_KCLASS_GEMM);
    assert_int_equal(fa_kernel_classify("cudnn_volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1"), FA_KCLASS_CONV);
    assert_int_equal(fa_kernel_classify("implicit_convolve_sgemm"), FA_KCLASS_CONV); /* before "sgemm" */
    assert_int_equal(fa_kernel_classify("cudnn::detail::implicit_convolve"), FA_KCLASS_CONV);
    assert_int_equal(fa_kernel_classify("Memcpy DtoD (Device -> Device)"), FA_KCLASS_COPY);
    assert_int_equal(fa_kernel_classify("fbgemm_gpu::permute_2D_data_kernel"), FA_KCLASS_OTHER);
    assert_int_equal(fa_kernel_classify("ncclKernel_AllReduce_RING_LL_Sum_float"), FA_KCLASS_OTHER);
    assert_int_equal(fa_kernel_classify("fused_bias_gelu"), FA_KCLASS_ELEMENTWISE);
    assert_true(fa_kclass_light(FA_KCLASS_COPY));
    assert_false(fa_kclass_light(FA_KCLASS_GEMM));
}

static void test_device_tables(void **state)
{
    (void)state;
    const char *l = NULL;
    assert_true(fa_gpu_hbm_gbs("NVIDIA A100-SXM4-40GB", 0, &l) == 1555);
    assert_true(fa_gpu_hbm_gbs("NVIDIA A100-SXM4-80GB", 0, &l) == 2039);
    assert_true(fa_gpu_hbm_gbs("NVIDIA A100-PG509-200", 85899345920ull, &l) == 2039);
    assert_true(fa_gpu_hbm_gbs("Tesla V100-SXM2-16GB", 0, &l) == 900);
    assert_true(fa_gpu_hbm_gbs("NVIDIA H100 80GB HBM3", 0, &l) == 3350);
    assert_true(fa_gpu_hbm_gbs("NVIDIA H200", 0, &l) == 4800);
    assert_true(fa_gpu_hbm_gbs("NVIDIA GeForce RTX 2080 Ti", 0, &l) == 616);
    assert_true(fa_gpu_hbm_gbs("Tesla T4", 0, &l) == 320);
    assert_true(fa_gpu_hbm_gbs("NVIDIA GeForce RTX 3090", 0, &l) == 0);
    assert_null(l);
    int ma = 0, mi = 0;
    assert_true(fa_gpu_cc_from_name("Tesla V100-DGXS-32GB", &ma, &mi) && ma == 7 && mi == 0);
    assert_true(fa_gpu_cc_from_name("NVIDIA GeForce RTX 2080 Ti", &ma, &mi) && ma == 7 && mi == 5);
    assert_true(fa_gpu_cc_from_name("Tesla T4", &ma, &mi) && ma == 7 && mi == 5);
    assert_true(fa_gpu_cc_from_name("NVIDIA GeForce RTX 3090", &ma, &mi) && ma == 8 && mi == 6);
    assert_true(fa_gpu_cc_from_name("NVIDIA L4", &ma, &mi) && ma == 8 && mi == 9);
    assert_true(fa_gpu_cc_from_name("NVIDIA H200", &ma, &mi) && ma == 9 && mi == 0);
    assert_false(fa_gpu_cc_from_name("AMD Instinct MI250X", &ma, &mi));
}

static fa_store *temp_store(fa_ctx *ctx, const char *name)
{
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, fa_test_path(fa_test_tmpdir(), name), &st), FA_OK);
    return st;
}

static int64_t store_import(fa_ctx *ctx, fa_store *st, const fa_trace *t, const char *path)
{
    fa_run_info info;
    memset(&info, 0, sizeof info);
    info.kind = "import";
    info.model_path = path;
    info.device_name = t->device_name;
    int64_t id = 0;
    assert_int_equal(fa_store_run_begin(ctx, st, &info, &id), FA_OK);
    assert_int_equal(fa_store_put_trace(ctx, st, id, t), FA_OK);
    assert_int_equal(fa_store_run_finish(ctx, st, id, true, NULL), FA_OK);
    return id;
}

static void test_advice_stored_and_reloaded_from_run(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = temp_store(ctx, "advice.db");
    fa_trace *t = hand_trace(true);
    int64_t id = store_import(ctx, st, t, "hand.json");
    fa_ta_device dev = {.name = "NVIDIA A100-SXM4-80GB", .cc_major = 8, .cc_minor = 0, .total_mem_bytes = 85899345920ull};
    fa_trace_advice *a = NULL;
    assert_int_equal(fa_trace_advise_run(ctx, st, id, &dev, &a), FA_OK);
    assert_int_equal(a->n_seqs, 1);
    assert_int_equal(a->idle_ns, 515);
    assert_int_equal(fa_trace_advice_save(ctx, st, id, a), FA_OK);
    assert_int_equal(fa_trace_advice_save(ctx, st, id, a), FA_OK); /* replaces, no duplicates */
    fa_trace_advice_free(a);
    sqlite3 *db = fa_store_db(st);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT members_json, time_ns, intermediate_bytes, launches FROM analysis_chains "
                                            "WHERE run_id=?1", -1, &q, NULL), SQLITE_OK);
    sqlite3_bind_int64(q, 1, id);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "[\"add_kernel\",\"mul_kernel\",\"gelu_kernel\"]");
    assert_int_equal(sqlite3_column_int64(q, 1), 120);
    assert_int_equal(sqlite3_column_int64(q, 2), 6400);
    assert_int_equal(sqlite3_column_int64(q, 3), 12);
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT value FROM analysis_summary WHERE run_id=?1 AND key='trace.idle_ns'", -1,
                                        &q, NULL), SQLITE_OK);
    sqlite3_bind_int64(q, 1, id);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_true(sqlite3_column_double(q, 0) == 515);
    sqlite3_finalize(q);
    /* a later analysis without device facts reads them back from the summary rows */
    a = NULL;
    assert_int_equal(fa_trace_advise_run(ctx, st, id, NULL, &a), FA_OK);
    assert_int_equal(a->cc_major, 8);
    assert_string_equal(a->cc_source, "deviceProperties");
    assert_true(a->total_mem_bytes == 85899345920ull);
    assert_true(fabs(a->hbm_gbs - 2039) < 1e-9);
    fa_trace_advice_free(a);
    fa_trace_free(t);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

static fa_trace_advice *advise_file(const char *path, fa_import_stats *stt)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = NULL;
    fa_status s = fa_import_file(ctx, path, NULL, &t, stt);
    if (s) fprintf(stderr, "%s: %s\n", path, fa_ctx_errmsg(ctx));
    assert_int_equal(s, FA_OK);
    fa_ta_device dev = {0};
    if (stt->n_devices) {
        dev.name = stt->devices[0].name;
        dev.cc_major = stt->devices[0].cc_major;
        dev.cc_minor = stt->devices[0].cc_minor;
        dev.total_mem_bytes = stt->devices[0].total_mem_bytes;
    }
    fa_trace_advice *a = NULL;
    assert_int_equal(fa_trace_advise(ctx, t, stt->n_devices ? &dev : NULL, &a), FA_OK);
    fa_trace_free(t);
    fa_ctx_free(ctx);
    return a;
}

static void test_fault_files_no_gpu_activity_and_orphans(void **state)
{
    (void)state;
    static const char *const none[] = {"cpu_only.json", "metadata_only.json", "runtime_no_kernels.json"};
    for (size_t i = 0; i < 3; i++) {
        fa_import_stats stt;
        memset(&stt, 0, sizeof stt);
        fa_trace_advice *a = advise_file(data(none[i]), &stt);
        assert_true(stt.no_gpu_activity);
        assert_true(a->no_gpu_activity);
        assert_int_equal(a->n_kernels, 0);
        assert_int_equal(a->n_seqs, 0);
        fa_buf b;
        fa_buf_init(&b);
        fa_trace_advice_text(a, &b);
        assert_non_null(strstr(b.data, "no GPU activity"));
        fa_buf_free(&b);
        fa_trace_advice_free(a);
    }
    fa_import_stats stt;
    memset(&stt, 0, sizeof stt);
    fa_trace_advice *a = advise_file(data("orphans_skew.json"), &stt);
    assert_true(stt.n_orphans > 0);
    assert_true(stt.n_clock_inversions > 0);
    assert_int_equal(a->n_orphans, stt.n_orphans);
    assert_int_equal(a->n_clock_inversions, stt.n_clock_inversions);
    assert_true(a->idle_ns >= 0);
    for (int i = 0; i < a->n_gaps; i++) assert_true(a->gaps[i].gap_ns > 0);
    fa_buf b;
    fa_buf_init(&b);
    fa_trace_advice_text(a, &b);
    char want[64];
    snprintf(want, sizeof want, "orphans %llu, clock inversions %llu", (unsigned long long)stt.n_orphans,
             (unsigned long long)stt.n_clock_inversions);
    assert_non_null(strstr(b.data, want));
    fa_buf_free(&b);
    fa_trace_advice_free(a);
}

/* The real traces: each names at least one repeated memory-bound sequence (n >= 2, count >= 2). */
static void test_corpus_traces_name_memory_bound_sequences(void **state)
{
    (void)state;
    fa_test_require_corpus();
    static const char *const files[] = {
        "traces/kineto/param/resnet_kineto.json.gz",                                                  /* RTX 2080 Ti */
        "traces/kineto/hta/trace_diff__control__control.json.gz",                                     /* A100 */
        "traces/kineto/hta/negative_queue_length_values_check__rank0.json.gz",                        /* A100 80GB */
        "traces/kineto/hta/critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz", /* A100 */
        "traces/kineto/hta/trace_diff__test__test.json.gz",                                           /* V100 */
    };
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        fa_import_stats stt;
        memset(&stt, 0, sizeof stt);
        fa_trace_advice *a = advise_file(fa_test_path(fa_test_corpus(), files[f]), &stt);
        printf("%s (%s): %lld kernels, %d repeated sequences, launch overhead %lld ns, idle %.3f ms\n", files[f],
               a->device_name ? a->device_name : "?", (long long)a->n_kernels, a->n_seqs, (long long)a->launch_overhead_ns,
               a->idle_ns / 1e6);
        bool found = false;
        for (int i = 0; i < a->n_seqs; i++) {
            const fa_ta_seq *q = &a->seqs[i];
            assert_true(q->n >= 2 && q->count >= 2);
            for (int m = 0; m < q->n; m++) assert_true(fa_kclass_light(fa_kernel_classify(q->names[m])));
            found = true;
            if (i < 3) {
                printf("  %d. x%lld, %.1f us, saving %.1f us (est.), bytes %s:", i + 1, (long long)q->count, q->total_ns / 1e3,
                       q->saving_ns / 1e3, q->bytes_known ? "estimated" : "unknown");
                for (int m = 0; m < q->n; m++) printf("%s %s", m ? " ->" : "", q->names[m]);
                printf("\n");
            }
        }
        assert_true(found);
        assert_true(a->idle_ns >= 0);
        assert_true(a->cc_major > 0);
        fa_trace_advice_free(a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_trace_figures_exact),
        cmocka_unit_test(test_sequence_bytes_unknown_when_one_occurrence_lacks_sizes),
        cmocka_unit_test(test_unknown_device_has_no_occupancy_and_no_bandwidth),
        cmocka_unit_test(test_names_normalize_and_classify),
        cmocka_unit_test(test_device_tables),
        cmocka_unit_test(test_advice_stored_and_reloaded_from_run),
        cmocka_unit_test(test_fault_files_no_gpu_activity_and_orphans),
        cmocka_unit_test(test_corpus_traces_name_memory_bound_sequences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
