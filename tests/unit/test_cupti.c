/* tests/unit/test_cupti — the CUPTI record conversion on synthetic activity buffers built in
 * memory (no CUPTI runtime, no GPU), the post-pass, the trace file, and a clean refusal to start
 * without a driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#ifndef FA_HAVE_CUDA

int main(void)
{
    fprintf(stderr, "test_cupti: built without the CUDA toolkit, skipped\n");
    return 77;
}
#else

#include <cupti.h>

#include "collector/cupti/cupti.h"

/* A synthetic activity buffer: records laid out back to back, 8-byte aligned, as CUPTI does. */
typedef struct sbuf {
    uint8_t *p;
    size_t len, cap;
} sbuf;

static void sb_init(sbuf *b)
{
    b->cap = 1 << 16;
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, 8, b->cap), 0);
    memset(p, 0, b->cap);
    b->p = p;
    b->len = 0;
}

static void sb_put(sbuf *b, const void *rec, size_t n)
{
    assert_int_equal(n % 8, 0);
    assert_true(b->len + n <= b->cap);
    memcpy(b->p + b->len, rec, n);
    b->len += n;
}

static CUpti_ActivityKernel10 kernel_rec(const char *name, uint32_t corr, uint64_t start, uint64_t end)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.name = name;
    k.correlationId = corr;
    k.start = start;
    k.end = end;
    k.deviceId = 1;
    k.streamId = 7;
    k.gridX = 120; k.gridY = 2; k.gridZ = 1;
    k.blockX = 256; k.blockY = 1; k.blockZ = 1;
    k.registersPerThread = 40;
    k.staticSharedMemory = 4096;
    k.dynamicSharedMemory = 8192;
    k.localMemoryPerThread = 16;
    return k;
}

static CUpti_ActivityAPI api_rec(CUpti_ActivityKind kind, uint32_t cbid, uint32_t corr, uint64_t start,
                                 uint64_t end, uint32_t tid)
{
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.cbid = cbid;
    a.correlationId = corr;
    a.start = start;
    a.end = end;
    a.processId = 4242;
    a.threadId = tid;
    return a;
}

static CUpti_ActivityMarker2 marker_rec(CUpti_ActivityFlag flags, uint32_t id, uint64_t ts, const char *name,
                                        uint32_t tid)
{
    CUpti_ActivityMarker2 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = flags;
    m.id = id;
    m.timestamp = ts;
    m.name = name;
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.processId = 4242;
    m.objectId.pt.threadId = tid;
    return m;
}

static const fa_activity *find_kind(const fa_trace *t, fa_activity_kind k, int nth)
{
    for (size_t i = 0; i < t->n_acts; i++)
        if (t->acts[i].kind == k && nth-- == 0) return &t->acts[i];
    return NULL;
}

static void test_record_sizes_match_installed_structs_and_alignment(void **s)
{
    (void)s;
    assert_int_equal(fa_cupti_record_size(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), sizeof(CUpti_ActivityKernel10));
    assert_int_equal(fa_cupti_record_size(CUPTI_ACTIVITY_KIND_RUNTIME), sizeof(CUpti_ActivityAPI));
    assert_int_equal(fa_cupti_record_size(CUPTI_ACTIVITY_KIND_MARKER), sizeof(CUpti_ActivityMarker2));
    assert_int_equal(fa_cupti_record_size(9999), 0);
    for (uint32_t k = 0; k < CUPTI_ACTIVITY_KIND_COUNT; k++) assert_int_equal(fa_cupti_record_size(k) % 8, 0);
}

static void test_kernel_record_fields_copied_one_by_one(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = fa_trace_create("cupti");
    sbuf b;
    sb_init(&b);
    CUpti_ActivityKernel10 k = kernel_rec("void gemm_kernel<128>(float*)", 77, 1000, 5000);
    sb_put(&b, &k, sizeof k);
    fa_cupti_stats st = {0};
    assert_int_equal(fa_cupti_process_buffer(ctx, t, b.p, b.len, &st), FA_OK);
    assert_int_equal(t->n_acts, 1);
    const fa_activity *a = &t->acts[0];
    assert_int_equal(a->kind, FA_ACT_KERNEL);
    assert_string_equal(a->name, "void gemm_kernel<128>(float*)");
    assert_ptr_not_equal(a->name, k.name); /* interned copy: CUPTI's string dies with the buffer */
    assert_int_equal(a->grid[0], 120);
    assert_int_equal(a->grid[1], 2);
    assert_int_equal(a->grid[2], 1);
    assert_int_equal(a->block[0], 256);
    assert_int_equal(a->block[1], 1);
    assert_int_equal(a->registers, 40);
    assert_int_equal(a->static_smem, 4096);
    assert_int_equal(a->dynamic_smem, 8192);
    assert_int_equal(a->local_mem, 16);
    assert_int_equal(a->stream, 7);
    assert_int_equal(a->correlation, 77);
    assert_int_equal(a->device, 1);
    assert_int_equal(a->start_ns, 1000);
    assert_int_equal(a->end_ns, 5000);
    assert_int_equal(a->node, -1);
    assert_int_equal(st.records, 1);
    assert_int_equal(st.by_kind[FA_ACT_KERNEL], 1);
    assert_int_equal(st.buffers, 1);
    assert_int_equal(st.bytes, sizeof k);
    free(b.p);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

static void test_every_kind_converted_with_its_fields(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = fa_trace_create("cupti");
    sbuf b;
    sb_init(&b);
    CUpti_ActivityAPI rt = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 5, 100, 200, 11);
    CUpti_ActivityAPI dr = api_rec(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 6, 110, 190, 11);
    CUpti_ActivityMemcpy6 mc;
    memset(&mc, 0, sizeof mc);
    mc.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    mc.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    mc.bytes = 1 << 20;
    mc.start = 300; mc.end = 400; mc.deviceId = 0; mc.streamId = 3; mc.correlationId = 8;
    CUpti_ActivityMemset4 ms;
    memset(&ms, 0, sizeof ms);
    ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    ms.bytes = 4096; ms.start = 500; ms.end = 550; ms.streamId = 3; ms.correlationId = 9;
    CUpti_ActivitySynchronization2 sy;
    memset(&sy, 0, sizeof sy);
    sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    sy.start = 600; sy.end = 700; sy.streamId = 3; sy.correlationId = 10;
    CUpti_ActivityOverhead3 ov;
    memset(&ov, 0, sizeof ov);
    ov.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    ov.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    ov.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    ov.objectId.pt.processId = 4242; ov.objectId.pt.threadId = 12;
    ov.start = 800; ov.end = 900;
    CUpti_ActivityMarker2 m0 = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 50, "fa:3:Relu:relu_1", 11);
    CUpti_ActivityMarker2 m1 = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 950, NULL, 11);
    sb_put(&b, &rt, sizeof rt);
    sb_put(&b, &dr, sizeof dr);
    sb_put(&b, &mc, sizeof mc);
    sb_put(&b, &ms, sizeof ms);
    sb_put(&b, &sy, sizeof sy);
    sb_put(&b, &ov, sizeof ov);
    sb_put(&b, &m0, sizeof m0);
    sb_put(&b, &m1, sizeof m1);
    fa_cupti_stats st = {0};
    assert_int_equal(fa_cupti_process_buffer(ctx, t, b.p, b.len, &st), FA_OK);
    assert_int_equal(t->n_acts, 7); /* start+end marker -> one range */
    const fa_activity *a = find_kind(t, FA_ACT_RUNTIME, 0);
    assert_non_null(a);
    assert_string_equal(a->name, "cudaLaunchKernel_v7000");
    assert_int_equal(a->pid, 4242);
    assert_int_equal(a->tid, 11);
    assert_int_equal(a->correlation, 5);
    assert_int_equal(a->start_ns, 100);
    assert_int_equal(a->end_ns, 200);
    a = find_kind(t, FA_ACT_DRIVER, 0);
    assert_non_null(a);
    assert_string_equal(a->name, "cuLaunchKernel");
    assert_int_equal(a->correlation, 6);
    a = find_kind(t, FA_ACT_MEMCPY, 0);
    assert_non_null(a);
    assert_string_equal(a->name, "memcpy:HtoD");
    assert_int_equal(a->bytes_written, 1 << 20);
    assert_int_equal(a->bytes_read, 0);
    assert_int_equal(a->stream, 3);
    assert_int_equal(a->correlation, 8);
    a = find_kind(t, FA_ACT_MEMSET, 0);
    assert_non_null(a);
    assert_int_equal(a->bytes_written, 4096);
    assert_int_equal(a->start_ns, 500);
    assert_int_equal(a->correlation, 9);
    a = find_kind(t, FA_ACT_SYNC, 0);
    assert_non_null(a);
    assert_string_equal(a->name, "sync:stream_synchronize");
    assert_int_equal(a->end_ns, 700);
    assert_int_equal(a->stream, 3);
    a = find_kind(t, FA_ACT_OVERHEAD, 0);
    assert_non_null(a);
    assert_string_equal(a->name, "overhead:cupti_buffer_flush");
    assert_int_equal(a->tid, 12);
    assert_int_equal(a->start_ns, 800);
    assert_int_equal(a->end_ns, 900);
    a = find_kind(t, FA_ACT_RANGE, 0);
    assert_non_null(a);
    assert_string_equal(a->name, "fa:3:Relu:relu_1");
    assert_int_equal(a->start_ns, 50);
    assert_int_equal(a->end_ns, 950);
    assert_int_equal(a->tid, 11);
    for (int k = 0; k < FA_ACT_KIND_COUNT; k++)
        if (k != FA_ACT_KERNEL && k != FA_ACT_CPU_OP && k != FA_ACT_MODULE &&
            k != FA_ACT_PYFRAME) /* modules and python frames: Kineto imports only */
            assert_int_equal(st.by_kind[k], 1);
    free(b.p);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

/* Two buffers completing out of order; a kernel's launch call in the other buffer; an NVTX range
 * whose END arrives (in the first completed buffer) before its START. */
static void test_out_of_order_buffers_sorted_correlated_and_attributed(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = fa_trace_create("cupti");
    sbuf late, early;
    sb_init(&late);
    sb_init(&early);
    /* early in time, but completed second */
    CUpti_ActivityMarker2 ms = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_START, 9, 100, "fa:12:Conv:conv_3", 21);
    CUpti_ActivityAPI call = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 31, 150, 170, 21);
    sb_put(&early, &ms, sizeof ms);
    sb_put(&early, &call, sizeof call);
    /* late in time, completed first: the kernel and the range's end */
    CUpti_ActivityKernel10 k = kernel_rec("conv_kernel", 31, 400, 900);
    CUpti_ActivityMarker2 me = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_END, 9, 300, NULL, 21);
    CUpti_ActivityKernel10 orphan = kernel_rec("orphan_kernel", 99, 950, 990);
    sb_put(&late, &k, sizeof k);
    sb_put(&late, &me, sizeof me);
    sb_put(&late, &orphan, sizeof orphan);
    fa_cupti_stats st = {0};
    assert_int_equal(fa_cupti_process_buffer(ctx, t, late.p, late.len, &st), FA_OK);
    assert_int_equal(fa_cupti_process_buffer(ctx, t, early.p, early.len, &st), FA_OK);
    assert_int_equal(st.buffers, 2);
    assert_int_equal(fa_cupti_trace_finish(ctx, t, &st), FA_OK);
    assert_int_equal(t->n_acts, 4);
    for (size_t i = 1; i < t->n_acts; i++) assert_true(t->acts[i - 1].start_ns <= t->acts[i].start_ns);
    assert_int_equal(t->acts[0].kind, FA_ACT_RANGE);
    assert_int_equal(t->acts[0].start_ns, 100);
    assert_int_equal(t->acts[0].end_ns, 300);
    assert_string_equal(t->acts[0].name, "fa:12:Conv:conv_3");
    const fa_activity *kk = find_kind(t, FA_ACT_KERNEL, 0);
    assert_string_equal(kk->name, "conv_kernel");
    assert_int_equal(kk->node, 12);
    assert_string_equal(kk->op_type, "Conv");
    assert_string_equal(kk->node_name, "conv_3");
    assert_int_equal(kk->tid, 21);
    assert_int_equal(kk->pid, 4242);
    assert_int_equal(kk->flags & FA_ACTF_ORPHAN, 0);
    const fa_activity *ko = find_kind(t, FA_ACT_KERNEL, 1);
    assert_string_equal(ko->name, "orphan_kernel");
    assert_true(ko->flags & FA_ACTF_ORPHAN);
    assert_int_equal(ko->node, -1);
    assert_int_equal(st.orphans, 1);
    assert_int_equal(t->n_orphans, 1);
    assert_int_equal(st.markers_unpaired, 0);
    free(late.p);
    free(early.p);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

static void test_foreign_nvtx_range_names_kernel_and_clock_inversion_flagged(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = fa_trace_create("cupti");
    sbuf b;
    sb_init(&b);
    CUpti_ActivityMarker2 outer = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 10, "forward", 5);
    CUpti_ActivityMarker2 inner = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, 20, "attention", 5);
    CUpti_ActivityMarker2 other = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_START, 3, 15, "other_thread", 6);
    CUpti_ActivityAPI call = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 4, 30, 40, 5);
    CUpti_ActivityKernel10 k = kernel_rec("softmax", 4, 25, 60); /* starts before its launch */
    CUpti_ActivityMarker2 e2 = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 50, NULL, 5);
    CUpti_ActivityMarker2 e1 = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 100, NULL, 5);
    CUpti_ActivityMarker2 e3 = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_END, 3, 100, NULL, 6);
    CUpti_ActivityMarker2 dangling = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_START, 4, 70, "never_ended", 5);
    CUpti_ActivityMarker2 inst = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 5, 80, "tick", 5);
    const CUpti_ActivityMarker2 *ms[] = {&outer, &inner, &other};
    for (int i = 0; i < 3; i++) sb_put(&b, ms[i], sizeof *ms[i]);
    sb_put(&b, &call, sizeof call);
    sb_put(&b, &k, sizeof k);
    sb_put(&b, &e2, sizeof e2);
    sb_put(&b, &e1, sizeof e1);
    sb_put(&b, &e3, sizeof e3);
    sb_put(&b, &dangling, sizeof dangling);
    sb_put(&b, &inst, sizeof inst);
    fa_cupti_stats st = {0};
    assert_int_equal(fa_cupti_process_buffer(ctx, t, b.p, b.len, &st), FA_OK);
    assert_int_equal(fa_cupti_trace_finish(ctx, t, &st), FA_OK);
    const fa_activity *kk = find_kind(t, FA_ACT_KERNEL, 0);
    assert_non_null(kk);
    assert_string_equal(kk->node_name, "attention"); /* innermost, same thread */
    assert_int_equal(kk->node, -1);
    assert_null(kk->op_type);
    assert_true(kk->flags & FA_ACTF_CLOCK_INVERSION);
    assert_int_equal(st.clock_inversions, 1);
    assert_int_equal(st.markers_unpaired, 1);
    int tick = 0;
    for (size_t i = 0; i < t->n_acts; i++)
        if (t->acts[i].kind == FA_ACT_RANGE && !strcmp(t->acts[i].name, "tick")) {
            tick++;
            assert_int_equal(t->acts[i].start_ns, 80);
            assert_int_equal(t->acts[i].end_ns, 80);
        }
    assert_int_equal(tick, 1);
    free(b.p);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

static void test_record_split_at_buffer_end_counts_truncated_and_keeps_earlier(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = fa_trace_create("cupti");
    sbuf b;
    sb_init(&b);
    CUpti_ActivityKernel10 k1 = kernel_rec("k1", 1, 10, 20);
    CUpti_ActivityKernel10 k2 = kernel_rec("k2", 2, 30, 40);
    sb_put(&b, &k1, sizeof k1);
    sb_put(&b, &k2, sizeof k2);
    fa_cupti_stats st = {0};
    /* valid size ends in the middle of k2 */
    assert_int_equal(fa_cupti_process_buffer(ctx, t, b.p, sizeof k1 + sizeof k2 / 2, &st), FA_OK);
    assert_int_equal(t->n_acts, 1);
    assert_string_equal(t->acts[0].name, "k1");
    assert_int_equal(st.truncated, 1);
    /* valid size ends inside k2's kind field */
    fa_cupti_stats st2 = {0};
    assert_int_equal(fa_cupti_process_buffer(ctx, t, b.p, sizeof k1 + 2, &st2), FA_OK);
    assert_int_equal(t->n_acts, 2);
    assert_int_equal(st2.truncated, 1);
    free(b.p);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

static void test_unknown_and_unconverted_kinds_skipped_with_counts(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = fa_trace_create("cupti");
    sbuf b;
    sb_init(&b);
    CUpti_ActivityKernel10 k1 = kernel_rec("k1", 1, 10, 20);
    CUpti_ActivityExternalCorrelation ec;
    memset(&ec, 0, sizeof ec);
    ec.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    CUpti_ActivityName nm;
    memset(&nm, 0, sizeof nm);
    nm.kind = CUPTI_ACTIVITY_KIND_NAME;
    CUpti_ActivityDevice5 dev;
    memset(&dev, 0, sizeof dev);
    dev.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    dev.name = "NVIDIA H200";
    CUpti_ActivityKernel10 k2 = kernel_rec("k2", 2, 30, 40);
    uint64_t bogus[4] = {0};
    uint32_t bogus_kind = 0x7777;
    memcpy(bogus, &bogus_kind, 4);
    CUpti_ActivityKernel10 k3 = kernel_rec("k3_after_unknown", 3, 50, 60);
    sb_put(&b, &k1, sizeof k1);
    sb_put(&b, &ec, sizeof ec);
    sb_put(&b, &nm, sizeof nm);
    sb_put(&b, &dev, sizeof dev);
    sb_put(&b, &k2, sizeof k2);
    size_t at = b.len;
    sb_put(&b, bogus, sizeof bogus);
    sb_put(&b, &k3, sizeof k3);
    fa_cupti_stats st = {0};
    assert_int_equal(fa_cupti_process_buffer(ctx, t, b.p, b.len, &st), FA_OK);
    assert_int_equal(t->n_acts, 2);
    assert_string_equal(t->acts[1].name, "k2");
    assert_int_equal(st.skipped, 3);
    assert_string_equal(t->device_name, "NVIDIA H200");
    assert_int_equal(st.unknown_kind, 1);
    assert_int_equal(st.unknown_bytes, b.len - at);
    assert_int_equal(st.records, 2);
    free(b.p);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

static void test_misaligned_buffer_refused_empty_buffer_ok(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = fa_trace_create("cupti");
    sbuf b;
    sb_init(&b);
    assert_int_equal(fa_cupti_process_buffer(ctx, t, b.p + 4, 64, NULL), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "aligned"));
    assert_int_equal(fa_cupti_process_buffer(ctx, t, b.p, 0, NULL), FA_OK);
    assert_int_equal(t->n_acts, 0);
    free(b.p);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

static void test_trace_file_round_trips_records_stats_and_notes(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = fa_trace_create("cupti");
    sbuf b;
    sb_init(&b);
    CUpti_ActivityMarker2 m0 = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 5, "fa:1:Add:add_0", 3);
    CUpti_ActivityAPI call = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 2, 6, 8, 3);
    CUpti_ActivityKernel10 k = kernel_rec("add_kernel", 2, 10, 20);
    CUpti_ActivityMarker2 m1 = marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 30, NULL, 3);
    sb_put(&b, &m0, sizeof m0);
    sb_put(&b, &call, sizeof call);
    sb_put(&b, &k, sizeof k);
    sb_put(&b, &m1, sizeof m1);
    fa_cupti_stats st = {0};
    assert_int_equal(fa_cupti_process_buffer(ctx, t, b.p, b.len, &st), FA_OK);
    assert_int_equal(fa_cupti_trace_finish(ctx, t, &st), FA_OK);
    st.dropped = 3;
    t->device_name = fa_trace_intern(t, "NVIDIA H200");
    const char *notes[] = {"NVTX not traced", "second note"};
    const char *path = fa_test_path(fa_test_tmpdir(), "t.facupti");
    assert_int_equal(fa_cupti_trace_write(ctx, path, t, &st, notes, 2), FA_OK);
    fa_trace *r = NULL;
    fa_cupti_stats rs = {0};
    char *rn = NULL;
    assert_int_equal(fa_cupti_trace_read(ctx, path, &r, &rs, &rn), FA_OK);
    assert_int_equal(r->n_acts, t->n_acts);
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *x = &t->acts[i], *y = &r->acts[i];
        assert_int_equal(x->kind, y->kind);
        assert_int_equal(x->start_ns, y->start_ns);
        assert_int_equal(x->end_ns, y->end_ns);
        assert_int_equal(x->correlation, y->correlation);
        assert_int_equal(x->node, y->node);
        assert_int_equal(x->registers, y->registers);
        assert_int_equal(x->grid[0], y->grid[0]);
        assert_int_equal(x->local_mem, y->local_mem);
        assert_int_equal(x->tid, y->tid);
        assert_true(x->occupancy == y->occupancy);
        if (x->name) assert_string_equal(x->name, y->name);
        else assert_null(y->name);
        if (x->op_type) assert_string_equal(x->op_type, y->op_type);
        else assert_null(y->op_type);
    }
    assert_int_equal(rs.dropped, 3);
    assert_int_equal(rs.records, st.records);
    assert_string_equal(rn, "NVTX not traced\nsecond note");
    assert_string_equal(r->source, "cupti");
    assert_string_equal(r->device_name, "NVIDIA H200");
    free(rn);
    fa_trace_free(r);
    /* truncated file: error names the byte offset */
    uint8_t *data;
    size_t len;
    assert_int_equal(fa_read_file(ctx, path, &data, &len), FA_OK);
    assert_int_equal(fa_write_file_atomic(ctx, path, data, len - 5), FA_OK);
    assert_int_equal(fa_cupti_trace_read(ctx, path, &r, NULL, NULL), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "byte"));
    assert_int_equal(fa_write_file_atomic(ctx, path, "garbage garbage", 15), FA_OK);
    assert_int_equal(fa_cupti_trace_read(ctx, path, &r, NULL, NULL), FA_ERR_INPUT);
    free(data);
    free(b.p);
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

/* Without a driver CUPTI cannot enable kernel tracing: a status with CUPTI's error string, never
 * an abort; the collector stays startable. On a GPU machine it starts and stops cleanly. */
static void test_start_without_driver_fails_cleanly_or_runs_on_gpu(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_status st = fa_cupti_start(ctx, 0);
    if (st) {
        assert_int_equal(st, FA_ERR_UNSUPPORTED);
        assert_non_null(strstr(fa_ctx_errmsg(ctx), "cuptiActivity"));
        assert_non_null(strstr(fa_ctx_errmsg(ctx), "CUPTI_ERROR"));
        assert_false(fa_cupti_active());
        assert_int_equal(fa_cupti_stop(ctx, NULL, NULL, NULL), FA_ERR_USAGE);
    } else {
        assert_true(fa_cupti_active());
        fa_trace *t = NULL;
        char *notes = NULL;
        assert_int_equal(fa_cupti_stop(ctx, &t, NULL, &notes), FA_OK);
        assert_non_null(t);
        free(notes);
        fa_trace_free(t);
    }
    fa_ctx_free(ctx);
}

/* `fuse-advise trace -- CMD`: a command that never touches CUDA still gives a stored (empty)
 * 'trace' run and its non-zero exit status is reported; without the tracer library the verb
 * refuses with a message naming it. */
static void test_trace_verb_stores_run_and_reports_command_exit_status(void **s)
{
    (void)s;
    const char *build = getenv("FA_BUILD_DIR");
    if (!build || !getenv("FA_CLI")) skip();
    const char *lib = fa_test_path(build, "libfuse-advise-cupti.so");
    const char *db = fa_test_path(fa_test_tmpdir(), "trace.db");
    char *out = NULL, *err = NULL;
    const char *argv[] = {"trace", "--db", db, "--", "sh", "-c", "exit 3", NULL};
    int rc = fa_test_run_cli(argv, &out, &err);
    if (access(lib, R_OK) == 0) {
        assert_int_equal(rc, 1);
        assert_non_null(strstr(err, "exited with status 3"));
        assert_non_null(strstr(out, "trace run 1 stored"));
        free(out);
        free(err);
        const char *argv2[] = {"runs", "--db", db, NULL};
        assert_int_equal(fa_test_run_cli(argv2, &out, &err), 0);
        assert_non_null(strstr(out, "trace"));
        assert_non_null(strstr(out, "sh -c exit 3"));
    } else {
        assert_int_equal(rc, 1);
        assert_non_null(strstr(err, "fa_cupti_inject"));
    }
    free(out);
    free(err);
}

static void test_iterations_labelled_and_node_cost_on_first_kernel_only(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = fa_trace_create("cupti");
    struct { uint64_t start; int node; } ks[] = {{50, 0}, {110, 0}, {120, 0}, {130, 1}, {210, 0}, {220, 1}, {400, 1}};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        fa_activity a = fa_activity_init(FA_ACT_KERNEL);
        a.name = fa_trace_intern(t, "k");
        a.node = ks[i].node;
        a.start_ns = ks[i].start;
        a.end_ns = ks[i].start + 5;
        assert_non_null(fa_trace_add(t, &a));
    }
    uint64_t ws[] = {100, 200}, we[] = {190, 290};
    fa_op_cost costs[2] = {{.flops = 1000, .bytes_read = 64, .bytes_written = 32}, {.flops = 7, .bytes_read = 8, .bytes_written = 4}};
    assert_int_equal(fa_cupti_label_iterations(ctx, t, ws, we, 2, costs, 2), FA_OK);
    assert_int_equal(t->n_acts, 9);
    int want_iter[] = {-1, 0, 0, 0, 1, 1, -1};
    uint64_t want_flops[] = {0, 1000, 0, 7, 1000, 7, 0};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(t->acts[i].iter, want_iter[i]);
        assert_int_equal(t->acts[i].flops, want_flops[i]);
    }
    assert_int_equal(t->acts[1].bytes_read, 64);
    assert_int_equal(t->acts[2].bytes_read, 0);
    for (int w = 0; w < 2; w++) {
        const fa_activity *r = &t->acts[7 + w];
        assert_int_equal(r->kind, FA_ACT_RANGE);
        assert_string_equal(r->name, "iteration");
        assert_int_equal(r->iter, w);
        assert_int_equal(r->start_ns, ws[w]);
        assert_int_equal(r->end_ns, we[w]);
    }
    fa_trace_free(t);
    fa_ctx_free(ctx);
}

/* The CUPTI collection over an executor refuses cleanly without a driver, after routing NVTX. */
static void test_collect_cupti_without_driver_is_unsupported(void **s)
{
    (void)s;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    assert_int_equal(fa_graph_load(ctx, "zoo:mlp-tiny", NULL, &g), FA_OK);
    fa_exec *e = NULL;
    assert_int_equal(fa_exec_create(ctx, g, NULL, &e), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(ctx, e, 1), FA_OK);
    fa_trace *t = NULL;
    fa_status st = fa_collect_cupti(ctx, e, g, 1, 2, NULL, NULL, &t);
    if (st == FA_OK) { /* a GPU machine: CUPTI started; a cpu executor launches no kernels */
        assert_non_null(t);
        assert_int_equal(t->n_iters, 2);
        fa_trace_free(t);
    } else {
        assert_int_equal(st, FA_ERR_UNSUPPORTED);
        assert_null(t);
        assert_false(fa_cupti_active());
    }
    assert_non_null(getenv("NVTX_INJECTION64_PATH")); /* ours, or a profiler's set before us */
    fa_exec_free(e);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_sizes_match_installed_structs_and_alignment),
        cmocka_unit_test(test_kernel_record_fields_copied_one_by_one),
        cmocka_unit_test(test_every_kind_converted_with_its_fields),
        cmocka_unit_test(test_out_of_order_buffers_sorted_correlated_and_attributed),
        cmocka_unit_test(test_foreign_nvtx_range_names_kernel_and_clock_inversion_flagged),
        cmocka_unit_test(test_record_split_at_buffer_end_counts_truncated_and_keeps_earlier),
        cmocka_unit_test(test_unknown_and_unconverted_kinds_skipped_with_counts),
        cmocka_unit_test(test_misaligned_buffer_refused_empty_buffer_ok),
        cmocka_unit_test(test_trace_file_round_trips_records_stats_and_notes),
        cmocka_unit_test(test_start_without_driver_fails_cleanly_or_runs_on_gpu),
        cmocka_unit_test(test_trace_verb_stores_run_and_reports_command_exit_status),
        cmocka_unit_test(test_iterations_labelled_and_node_cost_on_first_kernel_only),
        cmocka_unit_test(test_collect_cupti_without_driver_is_unsupported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
