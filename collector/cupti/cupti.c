/* collector/cupti/cupti — CUPTI activity records -> fa_activity: the pure buffer walker, the
 * post-pass (sort, correlation, NVTX attribution), the compact trace file, and the in-process
 * collector (buffer callbacks + a worker thread that converts completed buffers). */
#include "collector/cupti/cupti.h"

#include <cupti.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The structs this file reads, as the installed cupti_activity.h (CUDA 13) defines them. */
typedef CUpti_ActivityKernel10 fa_rec_kernel;
typedef CUpti_ActivityAPI fa_rec_api;
typedef CUpti_ActivityMemcpy6 fa_rec_memcpy;
typedef CUpti_ActivityMemset4 fa_rec_memset;
typedef CUpti_ActivitySynchronization2 fa_rec_sync;
typedef CUpti_ActivityOverhead3 fa_rec_overhead;
typedef CUpti_ActivityMarker2 fa_rec_marker;

fa_status fa_cupti_check(fa_ctx *ctx, int res, fa_status fail, const char *call, const char *file,
                         int line)
{
    if (res == CUPTI_SUCCESS) return FA_OK;
    const char *s = NULL;
    if (cuptiGetResultString((CUptiResult)res, &s) != CUPTI_SUCCESS || !s) s = "unknown CUPTI error";
    return fa_ctx_error(ctx, fail, "%s failed at %s:%d: %s (%d)", call, file, line, s, res);
}

size_t fa_cupti_record_size(uint32_t kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
    case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(CUpti_ActivityContext3);
    case CUPTI_ACTIVITY_KIND_NAME: return sizeof(CUpti_ActivityName);
    case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: return sizeof(CUpti_ActivityMarkerData2);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_FUNCTION: return sizeof(CUpti_ActivityFunction);
    case CUPTI_ACTIVITY_KIND_MODULE: return sizeof(CUpti_ActivityModule);
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: return sizeof(CUpti_ActivityCudaEvent2);
    case CUPTI_ACTIVITY_KIND_STREAM: return sizeof(CUpti_ActivityStream);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL: return sizeof(CUpti_ActivityMemoryPool3);
    case CUPTI_ACTIVITY_KIND_PREEMPTION: return sizeof(CUpti_ActivityPreemption);
    case CUPTI_ACTIVITY_KIND_ENVIRONMENT: return sizeof(CUpti_ActivityEnvironment);
    default: return 0;
    }
}

static const char *api_name(fa_trace *t, bool driver, uint32_t cbid)
{
    const char *n = NULL;
    CUpti_CallbackDomain dom = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    if (cuptiGetCallbackName(dom, cbid, &n) == CUPTI_SUCCESS && n) return fa_trace_intern(t, n);
    char buf[48];
    snprintf(buf, sizeof buf, "%s_cbid_%u", driver ? "driver" : "runtime", cbid);
    return fa_trace_intern(t, buf);
}

static const char *overhead_name(uint32_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "overhead:driver_compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "overhead:cupti_buffer_flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "overhead:cupti_instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "overhead:cupti_resource";
    default: return "overhead:other";
    }
}

static const char *sync_name(uint32_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "sync:event_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "sync:stream_wait_event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "sync:stream_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "sync:context_synchronize";
    default: return "sync:unknown";
    }
}

static const char *memcpy_name(uint32_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy:HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy:DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy:DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy:HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy:PtoP";
    default: return "memcpy:other";
    }
}

/* An NVTX range whose other half already arrived (any order, any buffer): search back for the
 * FA_ACT_RANGE record with this marker id that is still open on the missing side. */
static fa_activity *find_open_range(fa_trace *t, int64_t id, bool need_end)
{
    for (size_t i = t->n_acts; i-- > 0;) {
        fa_activity *a = &t->acts[i];
        if (a->kind != FA_ACT_RANGE || a->external_id != id) continue;
        if (need_end ? a->end_ns == 0 : a->start_ns == 0) return a;
    }
    return NULL;
}

static fa_status add(fa_ctx *ctx, fa_trace *t, const fa_activity *a, fa_cupti_stats *s)
{
    if (!fa_trace_add(t, a)) return fa_ctx_error(ctx, FA_ERR_NOMEM, "cupti: out of memory adding an activity");
    if (s) {
        s->records++;
        s->by_kind[a->kind]++;
    }
    return FA_OK;
}

static fa_status convert(fa_ctx *ctx, fa_trace *t, uint32_t kind, const uint8_t *p, fa_cupti_stats *s)
{
    fa_activity a;
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        fa_rec_kernel r;
        memcpy(&r, p, sizeof r);
        a = fa_activity_init(FA_ACT_KERNEL);
        a.name = fa_trace_intern(t, r.name ? r.name : "<unnamed kernel>");
        a.device = (int32_t)r.deviceId;
        a.stream = r.streamId;
        a.start_ns = r.start;
        a.end_ns = r.end;
        a.correlation = r.correlationId;
        a.grid[0] = r.gridX; a.grid[1] = r.gridY; a.grid[2] = r.gridZ;
        a.block[0] = r.blockX; a.block[1] = r.blockY; a.block[2] = r.blockZ;
        a.registers = r.registersPerThread;
        a.static_smem = r.staticSharedMemory;
        a.dynamic_smem = r.dynamicSharedMemory;
        a.local_mem = (int32_t)r.localMemoryPerThread;
        if (!a.name) return fa_ctx_error(ctx, FA_ERR_NOMEM, "cupti: out of memory");
        return add(ctx, t, &a, s);
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        fa_rec_api r;
        memcpy(&r, p, sizeof r);
        bool drv = kind == CUPTI_ACTIVITY_KIND_DRIVER;
        a = fa_activity_init(drv ? FA_ACT_DRIVER : FA_ACT_RUNTIME);
        a.name = api_name(t, drv, r.cbid);
        a.device = -1;
        a.pid = r.processId;
        a.tid = r.threadId;
        a.start_ns = r.start;
        a.end_ns = r.end;
        a.correlation = r.correlationId;
        return add(ctx, t, &a, s);
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        fa_rec_memcpy r;
        memcpy(&r, p, sizeof r);
        a = fa_activity_init(FA_ACT_MEMCPY);
        a.name = fa_trace_intern(t, memcpy_name(r.copyKind));
        a.device = (int32_t)r.deviceId;
        a.stream = r.streamId;
        a.start_ns = r.start;
        a.end_ns = r.end;
        a.correlation = r.correlationId;
        if (r.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH) a.bytes_read = r.bytes;
        else if (r.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD) a.bytes_written = r.bytes;
        else a.bytes_read = a.bytes_written = r.bytes;
        return add(ctx, t, &a, s);
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        fa_rec_memset r;
        memcpy(&r, p, sizeof r);
        a = fa_activity_init(FA_ACT_MEMSET);
        a.name = fa_trace_intern(t, "memset");
        a.device = (int32_t)r.deviceId;
        a.stream = r.streamId;
        a.start_ns = r.start;
        a.end_ns = r.end;
        a.correlation = r.correlationId;
        a.bytes_written = r.bytes;
        return add(ctx, t, &a, s);
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        fa_rec_sync r;
        memcpy(&r, p, sizeof r);
        a = fa_activity_init(FA_ACT_SYNC);
        a.name = fa_trace_intern(t, sync_name(r.type));
        a.stream = r.streamId == (uint32_t)CUPTI_SYNCHRONIZATION_INVALID_VALUE ? -1 : (int64_t)r.streamId;
        a.start_ns = r.start;
        a.end_ns = r.end;
        a.correlation = r.correlationId;
        return add(ctx, t, &a, s);
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        fa_rec_overhead r;
        memcpy(&r, p, sizeof r);
        a = fa_activity_init(FA_ACT_OVERHEAD);
        a.name = fa_trace_intern(t, overhead_name(r.overheadKind));
        if (r.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS || r.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) {
            a.pid = r.objectId.pt.processId;
            a.tid = r.objectId.pt.threadId;
        } else if (r.objectKind == CUPTI_ACTIVITY_OBJECT_DEVICE || r.objectKind == CUPTI_ACTIVITY_OBJECT_CONTEXT ||
                   r.objectKind == CUPTI_ACTIVITY_OBJECT_STREAM) {
            a.device = (int32_t)r.objectId.dcs.deviceId;
        }
        a.start_ns = r.start;
        a.end_ns = r.end;
        a.correlation = r.correlationId ? (int64_t)r.correlationId : -1;
        return add(ctx, t, &a, s);
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
        fa_rec_marker r;
        memcpy(&r, p, sizeof r);
        uint32_t pid = 0, tid = 0;
        if (r.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS || r.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) {
            pid = r.objectId.pt.processId;
            tid = r.objectId.pt.threadId;
        }
        if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
            fa_activity *open = find_open_range(t, r.id, true);
            if (open) {
                open->end_ns = r.timestamp;
                return FA_OK;
            }
            a = fa_activity_init(FA_ACT_RANGE); /* end before start: start fills it later */
            a.external_id = r.id;
            a.end_ns = r.timestamp;
            a.pid = pid;
            a.tid = tid;
            return add(ctx, t, &a, s);
        }
        /* START or INSTANTANEOUS: carries the name */
        const char *nm = fa_trace_intern(t, r.name ? r.name : "<unnamed range>");
        if (!nm) return fa_ctx_error(ctx, FA_ERR_NOMEM, "cupti: out of memory");
        if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
            fa_activity *open = find_open_range(t, r.id, false);
            if (open) {
                open->start_ns = r.timestamp;
                open->name = nm;
                return FA_OK;
            }
        }
        a = fa_activity_init(FA_ACT_RANGE);
        a.name = nm;
        a.external_id = r.id;
        a.start_ns = r.timestamp;
        if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) a.end_ns = r.timestamp;
        a.pid = pid;
        a.tid = tid;
        return add(ctx, t, &a, s);
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: { /* not an activity: names the trace's device */
        CUpti_ActivityDevice5 r;
        memcpy(&r, p, sizeof r);
        if (r.name && !t->device_name) t->device_name = fa_trace_intern(t, r.name);
        if (s) s->skipped++;
        return FA_OK;
    }
    default:
        if (s) s->skipped++;
        return FA_OK;
    }
}

fa_status fa_cupti_process_buffer(fa_ctx *ctx, fa_trace *t, const uint8_t *buf, size_t valid_size,
                                  fa_cupti_stats *stats)
{
    if (!buf || !valid_size) return FA_OK;
    if ((uintptr_t)buf % ACTIVITY_RECORD_ALIGNMENT)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "cupti buffer %p: not %d-byte aligned", (const void *)buf,
                            ACTIVITY_RECORD_ALIGNMENT);
    if (stats) {
        stats->buffers++;
        stats->bytes += valid_size;
    }
    size_t off = 0;
    while (off < valid_size) {
        if (valid_size - off < sizeof(uint32_t)) {
            if (stats) stats->truncated++;
            break;
        }
        uint32_t kind;
        memcpy(&kind, buf + off, sizeof kind);
        size_t sz = fa_cupti_record_size(kind);
        if (!sz) {
            if (stats) {
                stats->unknown_kind++;
                stats->unknown_bytes += valid_size - off;
            }
            fa_log(ctx, FA_LOG_WARN, "cupti buffer: unknown activity kind %u at byte %zu; %zu bytes skipped",
                   kind, off, valid_size - off);
            break;
        }
        if (sz > valid_size - off) {
            if (stats) stats->truncated++;
            fa_log(ctx, FA_LOG_WARN, "cupti buffer: record of kind %u at byte %zu needs %zu bytes, %zu valid",
                   kind, off, sz, valid_size - off);
            break;
        }
        fa_status st = convert(ctx, t, kind, buf + off, stats);
        if (st) return fa_ctx_wrap(ctx, st, "cupti buffer byte %zu: ", off);
        off += (sz + ACTIVITY_RECORD_ALIGNMENT - 1) / ACTIVITY_RECORD_ALIGNMENT * ACTIVITY_RECORD_ALIGNMENT;
    }
    return FA_OK;
}

const char *fa_cupti_range_name(int node_id, const char *op_type, const char *node_name, char *buf,
                                size_t cap)
{
    snprintf(buf, cap, "fa:%d:%s:%s", node_id, op_type ? op_type : "", node_name ? node_name : "");
    return buf;
}

/* ---- post-pass ---- */

static int cmp_start(const void *a, const void *b)
{
    const fa_activity *x = a, *y = b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    /* API calls before the device work they launched at the same tick */
    bool xd = x->kind == FA_ACT_RUNTIME || x->kind == FA_ACT_DRIVER;
    bool yd = y->kind == FA_ACT_RUNTIME || y->kind == FA_ACT_DRIVER;
    if (xd != yd) return xd ? -1 : 1;
    return (x->end_ns > y->end_ns) ? -1 : (x->end_ns < y->end_ns);
}

typedef struct corr_slot {
    int64_t corr;
    size_t idx;
} corr_slot;

static int cmp_corr(const void *a, const void *b)
{
    const corr_slot *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

static void parse_range(fa_trace *t, fa_activity *k, const char *rn)
{
    k->node_name = rn;
    if (strncmp(rn, "fa:", 3) != 0) return;
    char *end;
    long id = strtol(rn + 3, &end, 10);
    if (end == rn + 3 || *end != ':') return;
    const char *op = end + 1;
    const char *colon = strchr(op, ':');
    if (!colon) return;
    k->node = (int32_t)id;
    k->op_type = fa_trace_intern_n(t, op, (size_t)(colon - op));
    k->node_name = fa_trace_intern(t, colon + 1);
}

fa_status fa_cupti_trace_finish(fa_ctx *ctx, fa_trace *t, fa_cupti_stats *stats)
{
    fa_cupti_stats dummy = {0};
    if (!stats) stats = &dummy;
    stats->markers_unpaired = stats->orphans = stats->clock_inversions = 0;
    /* unpaired NVTX halves: keep them as zero-length ranges at the known end */
    for (size_t i = 0; i < t->n_acts; i++) {
        fa_activity *a = &t->acts[i];
        if (a->kind != FA_ACT_RANGE) continue;
        if (!a->start_ns || !a->end_ns) {
            stats->markers_unpaired++;
            if (!a->start_ns) a->start_ns = a->end_ns;
            else if (!a->end_ns) a->end_ns = a->start_ns;
            if (!a->name) a->name = fa_trace_intern(t, "<unnamed range>");
        }
    }
    if (t->n_acts) qsort(t->acts, t->n_acts, sizeof *t->acts, cmp_start);
    /* correlation index of the API calls */
    size_t n_api = 0;
    for (size_t i = 0; i < t->n_acts; i++)
        if ((t->acts[i].kind == FA_ACT_RUNTIME || t->acts[i].kind == FA_ACT_DRIVER) && t->acts[i].correlation >= 0) n_api++;
    corr_slot *idx = calloc(n_api ? n_api : 1, sizeof *idx);
    /* ranges sorted by start; per-kernel search of the innermost containing range */
    size_t n_rng = 0;
    for (size_t i = 0; i < t->n_acts; i++) n_rng += t->acts[i].kind == FA_ACT_RANGE;
    size_t *rng = calloc(n_rng ? n_rng : 1, sizeof *rng);
    if (!idx || !rng) {
        free(idx);
        free(rng);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "cupti: out of memory finishing the trace");
    }
    size_t k = 0, r = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        if ((a->kind == FA_ACT_RUNTIME || a->kind == FA_ACT_DRIVER) && a->correlation >= 0)
            idx[k++] = (corr_slot){a->correlation, i};
        if (a->kind == FA_ACT_RANGE) rng[r++] = i;
    }
    qsort(idx, n_api, sizeof *idx, cmp_corr);
    for (size_t i = 0; i < t->n_acts; i++) {
        fa_activity *a = &t->acts[i];
        if (a->kind != FA_ACT_KERNEL && a->kind != FA_ACT_MEMCPY && a->kind != FA_ACT_MEMSET) continue;
        /* binary search; prefer the runtime call (the driver call under it shares the id) */
        size_t lo = 0, hi = n_api;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (idx[mid].corr < a->correlation) lo = mid + 1;
            else hi = mid;
        }
        const fa_activity *call = NULL;
        for (size_t j = lo; j < n_api && idx[j].corr == a->correlation; j++) {
            const fa_activity *c = &t->acts[idx[j].idx];
            if (!call || (c->kind == FA_ACT_RUNTIME && call->kind != FA_ACT_RUNTIME)) call = c;
        }
        if (!call || a->correlation < 0) {
            a->flags |= FA_ACTF_ORPHAN;
            stats->orphans++;
            continue;
        }
        a->pid = call->pid;
        a->tid = call->tid;
        if (a->start_ns < call->start_ns) {
            a->flags |= FA_ACTF_CLOCK_INVERSION;
            stats->clock_inversions++;
        }
        /* innermost range on the launching thread containing the call's start */
        const fa_activity *best = NULL;
        for (size_t j = 0; j < n_rng; j++) {
            const fa_activity *g = &t->acts[rng[j]];
            if (g->start_ns > call->start_ns) break;
            if (g->tid && call->tid && g->tid != call->tid) continue;
            if (g->end_ns < call->start_ns) continue;
            if (!best || g->start_ns >= best->start_ns) best = g;
        }
        if (best && best->name) parse_range(t, a, best->name);
    }
    free(idx);
    free(rng);
    t->n_orphans = stats->orphans;
    t->n_clock_inversions = stats->clock_inversions;
    return FA_OK;
}

/* ---- compact trace file ---- */

#define FA_CUPTI_MAGIC "FACUPTI1"
#define FA_CUPTI_FILE_VERSION 1u
#define FA_CUPTI_STATS_WORDS 16

static void put_u32(fa_buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    fa_buf_append(b, x, 4);
}
static void put_u64(fa_buf *b, uint64_t v)
{
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}
static void put_str(fa_buf *b, const char *s)
{
    if (!s) {
        put_u32(b, 0xffffffffu);
        return;
    }
    size_t n = strlen(s);
    put_u32(b, (uint32_t)n);
    fa_buf_append(b, s, n);
}

static void stats_words(const fa_cupti_stats *s, uint64_t w[FA_CUPTI_STATS_WORDS])
{
    memset(w, 0, sizeof(uint64_t) * FA_CUPTI_STATS_WORDS);
    w[0] = s->buffers; w[1] = s->bytes; w[2] = s->records; w[3] = s->skipped;
    w[4] = s->unknown_kind; w[5] = s->unknown_bytes; w[6] = s->truncated; w[7] = s->dropped;
    w[8] = s->markers_unpaired; w[9] = s->orphans; w[10] = s->clock_inversions;
}
static void words_stats(const uint64_t w[FA_CUPTI_STATS_WORDS], fa_cupti_stats *s)
{
    s->buffers = w[0]; s->bytes = w[1]; s->records = w[2]; s->skipped = w[3];
    s->unknown_kind = w[4]; s->unknown_bytes = w[5]; s->truncated = w[6]; s->dropped = w[7];
    s->markers_unpaired = w[8]; s->orphans = w[9]; s->clock_inversions = w[10];
}

fa_status fa_cupti_trace_write(fa_ctx *ctx, const char *path, const fa_trace *t,
                               const fa_cupti_stats *stats, const char *const *notes, int n_notes)
{
    fa_buf b;
    fa_buf_init(&b);
    fa_buf_append(&b, FA_CUPTI_MAGIC, 8);
    put_u32(&b, FA_CUPTI_FILE_VERSION);
    put_u32(&b, (uint32_t)n_notes);
    for (int i = 0; i < n_notes; i++) put_str(&b, notes[i]);
    put_str(&b, t->device_name);
    fa_cupti_stats zero = {0};
    uint64_t w[FA_CUPTI_STATS_WORDS];
    stats_words(stats ? stats : &zero, w);
    for (int i = 0; i < FA_CUPTI_STATS_WORDS; i++) put_u64(&b, w[i]);
    put_u64(&b, t->n_acts);
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        put_u32(&b, (uint32_t)a->kind);
        put_u32(&b, (uint32_t)a->node);
        put_u32(&b, (uint32_t)a->iter);
        put_u32(&b, (uint32_t)a->device);
        put_u64(&b, (uint64_t)a->stream);
        put_u64(&b, (uint64_t)a->pid);
        put_u64(&b, (uint64_t)a->tid);
        put_u64(&b, a->start_ns);
        put_u64(&b, a->end_ns);
        put_u64(&b, (uint64_t)a->correlation);
        put_u64(&b, (uint64_t)a->external_id);
        for (int d = 0; d < 3; d++) put_u32(&b, (uint32_t)a->grid[d]);
        for (int d = 0; d < 3; d++) put_u32(&b, (uint32_t)a->block[d]);
        put_u32(&b, (uint32_t)a->registers);
        put_u32(&b, (uint32_t)a->static_smem);
        put_u32(&b, (uint32_t)a->dynamic_smem);
        put_u32(&b, (uint32_t)a->local_mem);
        put_u64(&b, a->bytes_read);
        put_u64(&b, a->bytes_written);
        put_u64(&b, a->flops);
        uint32_t occ;
        memcpy(&occ, &a->occupancy, 4);
        put_u32(&b, occ);
        put_u32(&b, a->flags);
        put_str(&b, a->name);
        put_str(&b, a->op_type);
        put_str(&b, a->node_name);
    }
    if (b.oom) {
        fa_buf_free(&b);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory serializing %zu records", path, t->n_acts);
    }
    fa_status st = fa_write_file_atomic(ctx, path, b.data, b.len);
    fa_buf_free(&b);
    return st;
}

typedef struct rd {
    const uint8_t *p;
    size_t n, off;
    bool bad;
} rd;

static uint32_t get_u32(rd *r)
{
    if (r->bad || r->n - r->off < 4) {
        r->bad = true;
        return 0;
    }
    const uint8_t *x = r->p + r->off;
    r->off += 4;
    return (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 | (uint32_t)x[3] << 24;
}
static uint64_t get_u64(rd *r)
{
    uint64_t lo = get_u32(r);
    return lo | (uint64_t)get_u32(r) << 32;
}
static const char *get_str(rd *r, fa_trace *t)
{
    uint32_t n = get_u32(r);
    if (r->bad || n == 0xffffffffu) return NULL;
    if (r->n - r->off < n) {
        r->bad = true;
        return NULL;
    }
    const char *s = fa_trace_intern_n(t, (const char *)r->p + r->off, n);
    r->off += n;
    return s;
}

fa_status fa_cupti_trace_read(fa_ctx *ctx, const char *path, fa_trace **out, fa_cupti_stats *stats,
                              char **notes_out)
{
    uint8_t *data = NULL;
    size_t len = 0;
    fa_status st = fa_read_file(ctx, path, &data, &len);
    if (st) return st;
    if (len < 16 || memcmp(data, FA_CUPTI_MAGIC, 8) != 0) {
        free(data);
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: not a fuse-advise CUPTI trace (magic at byte 0)", path);
    }
    rd r = {data, len, 8, false};
    uint32_t ver = get_u32(&r);
    if (ver != FA_CUPTI_FILE_VERSION) {
        free(data);
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: CUPTI trace format version %u, expected %u (byte 8)", path,
                            ver, FA_CUPTI_FILE_VERSION);
    }
    fa_trace *t = fa_trace_create("cupti");
    if (!t) {
        free(data);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    fa_buf notes;
    fa_buf_init(&notes);
    uint32_t n_notes = get_u32(&r);
    for (uint32_t i = 0; i < n_notes && !r.bad; i++) {
        const char *s = get_str(&r, t);
        if (s) {
            if (notes.len) fa_buf_puts(&notes, "\n");
            fa_buf_puts(&notes, s);
        }
    }
    t->device_name = get_str(&r, t);
    uint64_t w[FA_CUPTI_STATS_WORDS];
    for (int i = 0; i < FA_CUPTI_STATS_WORDS; i++) w[i] = get_u64(&r);
    uint64_t n = get_u64(&r);
    for (uint64_t i = 0; i < n && !r.bad; i++) {
        size_t at = r.off;
        fa_activity a = fa_activity_init(FA_ACT_KERNEL);
        uint32_t kind = get_u32(&r);
        a.kind = kind < FA_ACT_KIND_COUNT ? (fa_activity_kind)kind : FA_ACT_KERNEL;
        a.node = (int32_t)get_u32(&r);
        a.iter = (int32_t)get_u32(&r);
        a.device = (int32_t)get_u32(&r);
        a.stream = (int64_t)get_u64(&r);
        a.pid = (int64_t)get_u64(&r);
        a.tid = (int64_t)get_u64(&r);
        a.start_ns = get_u64(&r);
        a.end_ns = get_u64(&r);
        a.correlation = (int64_t)get_u64(&r);
        a.external_id = (int64_t)get_u64(&r);
        for (int d = 0; d < 3; d++) a.grid[d] = (int32_t)get_u32(&r);
        for (int d = 0; d < 3; d++) a.block[d] = (int32_t)get_u32(&r);
        a.registers = (int32_t)get_u32(&r);
        a.static_smem = (int32_t)get_u32(&r);
        a.dynamic_smem = (int32_t)get_u32(&r);
        a.local_mem = (int32_t)get_u32(&r);
        a.bytes_read = get_u64(&r);
        a.bytes_written = get_u64(&r);
        a.flops = get_u64(&r);
        uint32_t occ = get_u32(&r);
        memcpy(&a.occupancy, &occ, 4);
        a.flags = get_u32(&r);
        a.name = get_str(&r, t);
        a.op_type = get_str(&r, t);
        a.node_name = get_str(&r, t);
        if (r.bad || kind >= FA_ACT_KIND_COUNT) {
            fa_buf_free(&notes);
            fa_trace_free(t);
            free(data);
            return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: record %llu at byte %zu: %s", path, (unsigned long long)i, at,
                                r.bad ? "truncated" : "bad activity kind");
        }
        if (!fa_trace_add(t, &a)) {
            fa_buf_free(&notes);
            fa_trace_free(t);
            free(data);
            return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", path);
        }
    }
    if (r.bad) {
        fa_buf_free(&notes);
        fa_trace_free(t);
        free(data);
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: truncated header at byte %zu", path, r.off);
    }
    free(data);
    t->n_orphans = w[9];
    t->n_clock_inversions = w[10];
    t->source_path = fa_trace_intern(t, path);
    if (stats) words_stats(w, stats);
    if (notes_out) *notes_out = notes.len ? notes.data : NULL;
    if (!notes_out || !notes.len) fa_buf_free(&notes);
    *out = t;
    return FA_OK;
}

/* ---- in-process collector ----
 * The CUPTI buffer callbacks carry no user pointer, so the collector state is one process-wide
 * object (the documented exception of STYLE.md). CUPTI's own threads call buf_requested /
 * buf_completed; completed buffers are queued to the worker, which converts them. */

#define FA_CUPTI_BUF_BYTES (8u << 20) /* 8 MiB per activity buffer */

typedef struct qbuf {
    uint8_t *buf;
    size_t valid;
    struct qbuf *next;
} qbuf;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool active, stopping, worker_started;
    pthread_t worker;
    qbuf *head, *tail;
    fa_trace *trace;
    fa_ctx *wctx;            /* worker's context (errors become notes) */
    fa_cupti_stats stats;
    fa_buf notes;
    fa_status worker_status;
    unsigned n_enabled;
    CUpti_ActivityKind enabled[16];
} G = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void note_locked(const char *msg)
{
    if (G.notes.len) fa_buf_puts(&G.notes, "\n");
    fa_buf_puts(&G.notes, msg);
}

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    void *p = NULL;
    if (posix_memalign(&p, ACTIVITY_RECORD_ALIGNMENT, FA_CUPTI_BUF_BYTES) != 0) p = NULL;
    *buffer = p; /* NULL: CUPTI drops records and counts them */
    *size = p ? FA_CUPTI_BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buf_completed(CUcontext cctx, uint32_t stream_id, uint8_t *buffer, size_t size,
                                   size_t valid)
{
    (void)cctx;
    (void)stream_id;
    (void)size;
    if (!buffer) return;
    qbuf *q = malloc(sizeof *q);
    pthread_mutex_lock(&G.mu);
    if (!q || !G.active) {
        if (!q) G.stats.dropped++;
        pthread_mutex_unlock(&G.mu);
        free(q);
        free(buffer);
        return;
    }
    *q = (qbuf){buffer, valid, NULL};
    if (G.tail) G.tail->next = q;
    else G.head = q;
    G.tail = q;
    pthread_cond_signal(&G.cv);
    pthread_mutex_unlock(&G.mu);
}

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&G.mu);
    for (;;) {
        while (!G.head && !G.stopping) pthread_cond_wait(&G.cv, &G.mu);
        if (!G.head && G.stopping) break;
        qbuf *q = G.head;
        G.head = q->next;
        if (!G.head) G.tail = NULL;
        /* the trace is only touched here and, after the join, by fa_cupti_stop */
        pthread_mutex_unlock(&G.mu);
        fa_cupti_stats local = {0};
        fa_status st = fa_cupti_process_buffer(G.wctx, G.trace, q->buf, q->valid, &local);
        free(q->buf);
        free(q);
        pthread_mutex_lock(&G.mu);
        G.stats.buffers += local.buffers;
        G.stats.bytes += local.bytes;
        G.stats.records += local.records;
        for (int k = 0; k < FA_ACT_KIND_COUNT; k++) G.stats.by_kind[k] += local.by_kind[k];
        G.stats.skipped += local.skipped;
        G.stats.unknown_kind += local.unknown_kind;
        G.stats.unknown_bytes += local.unknown_bytes;
        G.stats.truncated += local.truncated;
        if (st && !G.worker_status) {
            G.worker_status = st;
            note_locked(fa_ctx_errmsg(G.wctx));
        }
    }
    pthread_mutex_unlock(&G.mu);
    return NULL;
}

bool fa_cupti_active(void)
{
    pthread_mutex_lock(&G.mu);
    bool a = G.active;
    pthread_mutex_unlock(&G.mu);
    return a;
}

static void disable_all(void)
{
    for (unsigned i = 0; i < G.n_enabled; i++) cuptiActivityDisable(G.enabled[i]);
    G.n_enabled = 0;
}

static void drain_queue(void)
{
    while (G.head) {
        qbuf *q = G.head;
        G.head = q->next;
        free(q->buf);
        free(q);
    }
    G.tail = NULL;
}

fa_status fa_cupti_start(fa_ctx *ctx, unsigned flags)
{
    pthread_mutex_lock(&G.mu);
    if (G.active) {
        pthread_mutex_unlock(&G.mu);
        return fa_ctx_error(ctx, FA_ERR_USAGE, "cupti collector already started");
    }
    pthread_mutex_unlock(&G.mu);
    G.trace = fa_trace_create("cupti");
    G.wctx = fa_ctx_create();
    fa_buf_init(&G.notes);
    memset(&G.stats, 0, sizeof G.stats);
    G.worker_status = FA_OK;
    G.stopping = false;
    if (!G.trace || !G.wctx) {
        fa_trace_free(G.trace);
        fa_ctx_free(G.wctx);
        G.trace = NULL;
        G.wctx = NULL;
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "cupti: out of memory");
    }
    fa_status st = FA_CUPTI_CHECK(ctx, FA_ERR_UNSUPPORTED,
                                  cuptiActivityRegisterCallbacks(buf_requested, buf_completed));
    /* CONCURRENT_KERNEL first: without it there is nothing to trace */
    if (!st) st = FA_CUPTI_CHECK(ctx, FA_ERR_UNSUPPORTED, cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    if (st) {
        fa_ctx_wrap(ctx, st, "cupti: cannot start tracing (no CUDA driver or device?): ");
        fa_trace_free(G.trace);
        fa_ctx_free(G.wctx);
        fa_buf_free(&G.notes);
        G.trace = NULL;
        G.wctx = NULL;
        return st;
    }
    G.n_enabled = 0;
    G.enabled[G.n_enabled++] = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    CUpti_ActivityKind rest[] = {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
                                 CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                 CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD,
                                 CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_DEVICE};
    fa_ctx *tmp = fa_ctx_create();
    for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) {
        CUpti_ActivityKind k = rest[i];
        if ((flags & FA_CUPTI_NO_API) && (k == CUPTI_ACTIVITY_KIND_RUNTIME || k == CUPTI_ACTIVITY_KIND_DRIVER)) continue;
        if ((flags & FA_CUPTI_NO_NVTX) && k == CUPTI_ACTIVITY_KIND_MARKER) continue;
        if (FA_CUPTI_CHECK(tmp, FA_ERR_UNSUPPORTED, cuptiActivityEnable(k))) {
            char msg[600];
            snprintf(msg, sizeof msg, "activity kind %d not traced (degraded): %s", (int)k, fa_ctx_errmsg(tmp));
            note_locked(msg);
            continue;
        }
        G.enabled[G.n_enabled++] = k;
    }
    fa_ctx_free(tmp);
    pthread_mutex_lock(&G.mu);
    G.active = true;
    G.worker_started = pthread_create(&G.worker, NULL, worker_main, NULL) == 0;
    pthread_mutex_unlock(&G.mu);
    if (!G.worker_started) {
        disable_all();
        pthread_mutex_lock(&G.mu);
        G.active = false;
        pthread_mutex_unlock(&G.mu);
        fa_trace_free(G.trace);
        fa_ctx_free(G.wctx);
        fa_buf_free(&G.notes);
        G.trace = NULL;
        G.wctx = NULL;
        return fa_ctx_error(ctx, FA_ERR_RUNTIME, "cupti: cannot start the worker thread: %s", strerror(errno));
    }
    return FA_OK;
}

fa_status fa_cupti_stop(fa_ctx *ctx, fa_trace **out, fa_cupti_stats *stats, char **notes)
{
    if (!fa_cupti_active()) return fa_ctx_error(ctx, FA_ERR_USAGE, "cupti collector not started");
    fa_ctx *tmp = fa_ctx_create();
    if (FA_CUPTI_CHECK(tmp, FA_ERR_RUNTIME, cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED))) {
        pthread_mutex_lock(&G.mu);
        note_locked(fa_ctx_errmsg(tmp));
        pthread_mutex_unlock(&G.mu);
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS) G.stats.dropped += dropped;
    fa_ctx_free(tmp);
    disable_all();
    pthread_mutex_lock(&G.mu);
    G.stopping = true;
    pthread_cond_signal(&G.cv);
    pthread_mutex_unlock(&G.mu);
    pthread_join(G.worker, NULL);
    pthread_mutex_lock(&G.mu);
    G.active = false;
    drain_queue();
    pthread_mutex_unlock(&G.mu);
    fa_trace *t = G.trace;
    G.trace = NULL;
    fa_status st = G.worker_status ? fa_ctx_error(ctx, G.worker_status, "%s", fa_ctx_errmsg(G.wctx)) : FA_OK;
    if (st) fa_ctx_reason_set(ctx, fa_ctx_reason(G.wctx)); /* the worker's error, with its reason */
    fa_ctx_free(G.wctx);
    G.wctx = NULL;
    if (!st) st = fa_cupti_trace_finish(ctx, t, &G.stats);
    if (stats) *stats = G.stats;
    if (notes) *notes = G.notes.len ? G.notes.data : NULL;
    if (!notes || !G.notes.len) fa_buf_free(&G.notes);
    else fa_buf_init(&G.notes); /* ownership moved */
    if (st) {
        fa_trace_free(t);
        return st;
    }
    *out = t;
    return FA_OK;
}
