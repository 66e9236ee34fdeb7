/* collector/import/kineto — stream a PyTorch profiler (Kineto) Chrome-trace JSON file, plain or
 * gzip, through yajl's event parser into an fa_trace; the document is never held whole. */
#include "collector/import/import-impl.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* The longest record a trace may hold, ns: a day (a profiler captures seconds to minutes). */
#define FA_KINETO_DUR_MAX_NS (86400LL * 1000000000LL)

enum { CHUNK = 256 * 1024, MAX_INPUTS = 32, MAX_DIMS = 8, TNAME = 24, NAME_CACHE = 1024 };
/* The longest single JSON token (string with its escapes, or number) accepted. The feeder below
 * hands yajl whole tokens, so a long one costs linear time, but it is held in memory (about four
 * copies: our buffer, yajl's decoded string, the event's name, the interned name); no trace field
 * comes near this. */
#define MAX_TOKEN_BYTES ((size_t)64 << 20)
/* A trace is untrusted input (docs/hardening.md, issue 32): bytes of one event name (a kernel, op,
 * module or python frame) at most, as the nsys reader's NSYS_NAME_MAX; a longer one refuses the
 * trace naming its byte offset. Every distinct name is interned for the whole import, so without a
 * cap a gzip of a few KiB could hold names of tens of MiB each. The longest demangled kernel names
 * of real traces are a few KiB. */
#define KINETO_NAME_MAX ((size_t)64 << 10)
/* The most the distinct names and input-shape texts of one trace may hold, each kept once. Real
 * traces hold a few MiB (the corpus's largest, with stacks and shapes, under 8 MiB); a crafted
 * one of distinct 60 KiB kernel names (135:1 under gzip, under the bomb ratio) held 4x its
 * inflated size in memory and a 420 MB database from a 1.45 MB upload (the attack pass). */
#define KINETO_NAMES_TOTAL_MAX ((size_t)64 << 20)

/* keys we look at, per depth */
enum { TK_OTHER, TK_EVENTS, TK_DEVPROPS, TK_BASETIME, TK_SCHEMA };
enum {
    EK_OTHER, EK_PH, EK_CAT, EK_NAME, EK_PID, EK_TID, EK_TS, EK_DUR, EK_ARGS,
    /* args keys */
    AK_CORR, AK_EXTID, AK_GRID, AK_BLOCK, AK_REGS, AK_SMEM, AK_DEVICE, AK_STREAM, AK_DIMS, AK_TYPES, AK_STRIDES,
    AK_OCC, AK_BYTES, AK_WAIT_CORR, AK_WAIT_STREAM,
    /* deviceProperties keys */
    DK_ID, DK_NAME, DK_SMS, DK_CCMAJ, DK_CCMIN, DK_MEM, DK_THR_SM, DK_REGS_SM, DK_SMEM_SM,
    DK_SMEM_BLK, DK_WARP
};

typedef struct kev {
    fa_buf name, cat;
    char ph;
    bool has_ts, has_dur;
    bool bad;                         /* a field the record needs had the wrong JSON type or
                                       * overflowed: the record is skipped and counted */
    bool bad_place;                   /* device or stream unusable: fatal to a GPU record only
                                       * (ROCm launch calls carry "stream": "0x0", a pointer) */
    int64_t ts_ns, dur_ns;
    /* ts/dur number text, converted only for events that are kept (flows and instants are
     * not); a text too long for these buffers is converted at once */
    char ts_txt[40], dur_txt[40];
    uint8_t ts_len, dur_len;
    int64_t pid, tid;
    int64_t corr, ext, device, stream;
    int64_t wait_corr, wait_stream; /* cuda_sync: wait_on_cuda_event_record_corr_id, wait_on_stream */
    int32_t grid[3], block[3], regs, smem;
    uint64_t bytes;
    float occ;
    int n_dims, n_types;              /* inputs seen in Input Dims / Input type */
    uint64_t numel[MAX_INPUTS];       /* elements per input (a TensorList: all its tensors) */
    bool numel_ok[MAX_INPUTS];        /* false: not a dims list (or list of them) or overflow */
    uint8_t dsize[MAX_INPUTS];        /* bytes per element, 0 = not a tensor / unknown */
    uint8_t ndim[MAX_INPUTS];         /* dims kept (at most MAX_DIMS) */
    bool is_list[MAX_INPUTS];         /* a TensorList: a list of dims lists */
    int64_t dims[MAX_INPUTS][MAX_DIMS];
    uint64_t list_cur;                /* elements of the TensorList member being read */
    char tname[MAX_INPUTS][TNAME];    /* "Input type" names, cut at TNAME - 1 bytes */
    bool stride_ok[MAX_INPUTS];       /* Input Strides: a list of numbers for this input */
    uint8_t nstride[MAX_INPUTS];
    int64_t strides[MAX_INPUTS][MAX_DIMS];
} kev;

typedef struct kparse {
    fa_ctx *ctx;
    const char *path;         /* what is read (the file, or the spool of a pipe) */
    const char *name;         /* what messages name (the path the user gave) */
    jmp_buf jmp;              /* yajl allocation failure lands here (see yajl_parse_guarded) */
    bool jmp_armed;
    fa_trace *t;
    fa_import_stats *st;
    yajl_handle h;
    uint64_t chunk_base;      /* offset of the current chunk in the (uncompressed) stream */
    int depth;                /* open containers */
    int top_key;
    int ev_depth;             /* depth of an event map (2 under traceEvents, 1 for a bare array) */
    int ev_key, args_key, dev_key;
    int idx5, idx6;           /* element index in arrays at ev_depth+2 / +3 */
    bool in_event, in_args, in_dev;
    unsigned ev_seen;         /* the event's keys read so far (1 << EK_*): a second one is refused */
    bool seen_events;         /* a top-level traceEvents was read */
    bool top_map, top_array;  /* the document is an object / a bare array of events */
    bool events_array;        /* the top-level traceEvents' value is an array */
    bool kineto_keys;         /* a top-level key only Kineto writes (schemaVersion, deviceProperties, ...) */
    uint64_t n_ph;            /* event objects with a 'ph' (a bare array's evidence of being a trace) */
    kev ev;
    fa_import_device *dev;
    fa_buf tmp;               /* repaired strings */
    fa_buf tmp2;              /* shapes text */
    uint64_t n_mtia;          /* non-CUDA accelerator events (MTIA) */
    const fa_import_sink *sink; /* streaming: GPU records go there in blocks */
    fa_activity *blk;         /* GPU records read, not yet attributed */
    size_t nblk, capblk;
    uint64_t s_kernels, s_memcpy, s_memset, s_est; /* GPU records handed to the sink */
    fa_status fail;           /* set by a callback to abort (NOMEM) */
    const char *ncache[NAME_CACHE]; /* interned valid names, by a cheap hash */
    size_t ncache_len[NAME_CACHE];
} kparse;

static uint64_t cur_offset(kparse *p)
{
    return p->chunk_base + yajl_get_bytes_consumed(p->h);
}

/* literal-only key compare (sizeof, no strlen per call: keys are the hot path) */
#define key_is(k, n, lit) ((n) == sizeof(lit) - 1 && memcmp((k), (lit), sizeof(lit) - 1) == 0)

/* ---- numbers -------------------------------------------------------------------------- */

/* Decimal text -> value * 10^scale rounded half away from zero, exactly (no binary floating
 * point). Accepts JSON number syntax. Returns 0 ok, -1 malformed, -2 out of int64 range. */
static int dec_scaled(const char *s, size_t n, int scale, int64_t *out)
{
    /* 128-bit mantissa: a µs timestamp with ns digits has ~20 significant digits, more than
     * uint64 holds; digits past 36 are dropped (they are far below the ns digit). */
    typedef unsigned __int128 u128;
    const u128 cap = (u128)1000000000000000000ull * 1000000000000000000ull; /* 1e36 */
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    /* fast path: plain digits with an optional fraction, at most 19 digits in all */
    {
        size_t j = i;
        uint64_t v = 0;
        while (j < n && j - i < 19 && (unsigned)(s[j] - '0') < 10u) v = v * 10 + (uint64_t)(s[j++] - '0');
        int nd = (int)(j - i), fd = 0;
        if (j < n && s[j] == '.') {
            j++;
            while (j < n && nd < 19 && (unsigned)(s[j] - '0') < 10u) v = v * 10 + (uint64_t)(s[j++] - '0'), nd++, fd++;
            if (fd == 0) nd = 0; /* "5." is not JSON: slow path decides */
        }
        if (j == n && nd > 0 && fd <= scale && scale - fd <= 3) {
            static const uint64_t p10[] = {1, 10, 100, 1000};
            int e = scale - fd;
            if (v <= (uint64_t)INT64_MAX / p10[e]) {
                v *= p10[e];
                *out = neg ? -(int64_t)v : (int64_t)v;
                return 0;
            }
        }
    }
    u128 mant = 0;
    int exp10 = 0;
    bool any = false;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, any = true) {
        if (mant < cap) mant = mant * 10 + (unsigned)(s[i] - '0');
        else exp10++;
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, any = true)
            if (mant < cap) mant = mant * 10 + (unsigned)(s[i] - '0'), exp10--;
    }
    if (!any) return -1;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        bool eneg = false;
        if (i < n && (s[i] == '-' || s[i] == '+')) eneg = s[i++] == '-';
        long e = 0;
        bool ed = false;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, ed = true)
            if (e < 100000) e = e * 10 + (s[i] - '0');
        if (!ed) return -1;
        exp10 += (int)(eneg ? -e : e);
    }
    if (i != n) return -1;
    exp10 += scale;
    if (mant == 0) { *out = 0; return 0; }
    const u128 lim = (u128)INT64_MAX + 1;
    if (exp10 >= 0) {
        for (int k = 0; k < exp10; k++) {
            if (mant > lim) return -2;
            mant *= 10;
        }
    } else {
        int k = -exp10;
        if (k > 38) mant = 0;
        else {
            u128 p10 = 1;
            for (int j = 0; j < k; j++) p10 *= 10;
            u128 q = mant / p10, r = mant % p10;
            mant = q + (r >= p10 - r ? 1 : 0); /* 2r >= p10: half rounds away from zero */
        }
    }
    if (neg ? mant > lim : mant > lim - 1) return -2;
    *out = neg ? (int64_t)(0 - (uint64_t)mant) : (int64_t)(uint64_t)mant;
    return 0;
}

static void bad_number(kparse *p)
{
    if (!p->st->n_bad_numbers++) p->st->first_bad_number_offset = cur_offset(p);
}

/* Integer field: decimal text to int64; a fraction rounds half away from zero. */
static bool num_i64(kparse *p, const char *s, size_t n, int64_t *out)
{
    int r = dec_scaled(s, n, 0, out);
    if (r == 0) return true;
    bad_number(p);
    return false;
}

/* ---- dtype sizes (c10 ScalarType names as Kineto's "Input type" spells them) ----------- */
static uint8_t dtype_size(const unsigned char *s, size_t n)
{
#define DT(lit, sz) {lit, sizeof(lit) - 1, sz}
    static const struct { const char *name; size_t len; uint8_t size; } tab[] = {
        DT("float", 4), DT("double", 8), DT("c10::Half", 2), DT("c10::BFloat16", 2), DT("long int", 8),
        DT("long", 8), DT("int64_t", 8), DT("int", 4), DT("short int", 2), DT("short", 2),
        DT("signed char", 1), DT("unsigned char", 1), DT("bool", 1), DT("c10::complex<float>", 8),
        DT("c10::complex<double>", 16), DT("c10::complex<c10::Half>", 4),
        DT("c10::Float8_e4m3fn", 1), DT("c10::Float8_e5m2", 1), DT("c10::Float8_e4m3fnuz", 1),
        DT("c10::Float8_e5m2fnuz", 1), DT("unsigned int", 4), DT("unsigned short", 2),
        DT("unsigned long", 8), DT("c10::qint8", 1), DT("c10::quint8", 1), DT("c10::qint32", 4),
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (tab[i].len == n && memcmp(s, tab[i].name, n) == 0) return tab[i].size;
#undef DT
    return 0;
}

/* ---- event assembly ------------------------------------------------------------------- */

static void ev_reset(kev *e)
{
    fa_buf_reset(&e->name);
    fa_buf_reset(&e->cat);
    e->ph = 0;
    e->has_ts = e->has_dur = e->bad = e->bad_place = false;
    e->ts_ns = e->dur_ns = 0;
    e->ts_len = e->dur_len = 0;
    e->pid = e->tid = 0;
    e->corr = e->ext = e->device = e->stream = -1;
    e->wait_corr = e->wait_stream = -1;
    memset(e->grid, 0, sizeof e->grid);
    memset(e->block, 0, sizeof e->block);
    e->regs = e->smem = 0;
    e->bytes = 0;
    e->occ = -1.0f;
    e->n_dims = e->n_types = 0;
    memset(e->numel_ok, 0, sizeof e->numel_ok);
    memset(e->dsize, 0, sizeof e->dsize);
    memset(e->ndim, 0, sizeof e->ndim);
    memset(e->is_list, 0, sizeof e->is_list);
    memset(e->stride_ok, 0, sizeof e->stride_ok);
    memset(e->nstride, 0, sizeof e->nstride);
    for (int i = 0; i < MAX_INPUTS; i++) e->tname[i][0] = 0;
}

#define cat_is(c, lit) ((c)->len == sizeof(lit) - 1 && strcasecmp((c)->data, (lit)) == 0)

/* Map a Kineto category (current and pre-2022 spellings) to an activity kind; -1 = skip. */
static int cat_kind(kparse *p, const fa_buf *c)
{
    if (c->len == 0) return -1;
    if (cat_is(c, "kernel")) return FA_ACT_KERNEL;
    if (cat_is(c, "gpu_memcpy") || cat_is(c, "memcpy")) return FA_ACT_MEMCPY;
    if (cat_is(c, "gpu_memset") || cat_is(c, "memset")) return FA_ACT_MEMSET;
    if (cat_is(c, "cuda_runtime") || cat_is(c, "runtime")) return FA_ACT_RUNTIME;
    if (cat_is(c, "cuda_driver") || cat_is(c, "driver")) return FA_ACT_DRIVER;
    if (cat_is(c, "cpu_op") || cat_is(c, "operator")) return FA_ACT_CPU_OP;
    if (cat_is(c, "user_annotation") || cat_is(c, "gpu_user_annotation")) return FA_ACT_RANGE;
    if (cat_is(c, "cuda_sync")) return FA_ACT_SYNC;
    if (c->len >= 5 && strncasecmp(c->data, "mtia_", 5) == 0) p->n_mtia++;
    return -1;
}

/* "7" -> 7, "stream 7" -> 7, other strings -> a stable hash (ids only need to be distinct) */
static int64_t id_from_string(const unsigned char *s, size_t n)
{
    size_t i = n;
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') i--;
    if (i < n && n - i <= 18) {
        int64_t v = 0;
        for (size_t k = i; k < n; k++) v = v * 10 + (s[k] - '0');
        return v;
    }
    return (int64_t)(fa_hash64(s, n) & 0x3fffffffffffffffull);
}

/* Intern a name, through a small direct-mapped cache of recent valid names: the same kernel
 * and op names repeat thousands of times, and memcmp is cheaper than hashing every byte. */
static const char *intern_checked(kparse *p, const char *s, size_t n)
{
    uint64_t h = n * 0x9E3779B97F4A7C15ull;
    if (n >= 8) {
        uint64_t a, b, c;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(&c, s + (n - 8) / 2, 8);
        h ^= a * 0xC2B2AE3D27D4EB4Full ^ b * 0x165667B19E3779F9ull ^ c * 0x27D4EB2F165667C5ull;
    } else {
        for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001B3ull;
    }
    size_t slot = (size_t)((h ^ (h >> 31)) & (NAME_CACHE - 1));
    if (p->ncache[slot] && p->ncache_len[slot] == n && memcmp(p->ncache[slot], s, n) == 0)
        return p->ncache[slot];
    int f = fa__name_clean(s, n, &p->tmp);
    const char *r;
    if (f) {
        if (f & FA_NAME_BAD_UTF8 && !p->st->n_bad_utf8++) p->st->first_bad_utf8_offset = cur_offset(p);
        if (f & FA_NAME_NUL) p->st->n_nul_names++;
        if (p->tmp.oom) return NULL;
        r = fa_trace_intern_n(p->t, p->tmp.data, p->tmp.len);
    } else {
        r = fa_trace_intern_n(p->t, s, n);
        if (r) {
            p->ncache[slot] = r;
            p->ncache_len[slot] = n;
        }
    }
    return r;
}

/* A complete event of a kind we import whose fields cannot be trusted (wrong JSON type, a
 * number that overflows, no usable time): skipped, counted, first byte offset kept. */
static void bad_record(kparse *p)
{
    if (!p->st->n_bad_records++) p->st->first_bad_record_offset = cur_offset(p);
}

/* ---- streaming: GPU records in blocks -------------------------------------------------
 * A block of GPU records is attributed against the cpu side read so far (Kineto writes the cpu
 * ops first and each launch call right after its kernel), handed to the sink and dropped. A block
 * is at least STREAM_BLOCK records and a quarter of the cpu side (so re-sorting the cpu side per
 * block costs O(n) in all); the last STREAM_HOLD records wait for the next block (their launch
 * calls may follow them), and a block never ends between two records of one op (External id) or
 * one launch (a graph replay's correlation) unless it has grown 16 times past its size. */
enum { STREAM_BLOCK = 65536, STREAM_HOLD = 512 };

static fa_status stream_flush(kparse *p, bool final)
{
    size_t n = p->nblk, cut = n;
    if (!final) {
        if (n <= STREAM_HOLD) return FA_OK;
        cut = n - STREAM_HOLD;
        bool forced = n > 16 * (STREAM_BLOCK + STREAM_HOLD) && n > 16 * (p->t->n_acts / 4);
        while (!forced && cut < n &&
               ((p->blk[cut].external_id > 0 && p->blk[cut].external_id == p->blk[cut - 1].external_id) ||
                (p->blk[cut].correlation >= 0 && p->blk[cut].correlation == p->blk[cut - 1].correlation)))
            cut++;
        if (cut == n) return FA_OK; /* wait for more */
    }
    if (!cut) return FA_OK;
    fa_trace *t = p->t;
    size_t m = t->n_acts;
    for (size_t i = 0; i < cut; i++)
        if (!fa_trace_add(t, &p->blk[i])) {
            t->n_acts = m;
            return fa_ctx_error(p->ctx, FA_ERR_NOMEM, "%s: out of memory near byte %llu", p->name,
                                (unsigned long long)cur_offset(p));
        }
    int32_t *launch = NULL;
    fa_status s = fa__import_attribute_ex(p->ctx, t, p->st, false, FA_ACT_CPU_OP, true, m, false, &launch);
    if (s) s = fa_ctx_wrap(p->ctx, s, "%s: ", p->name);
    for (size_t i = m; i < t->n_acts && !s; i++) {
        const fa_activity *g = &t->acts[i];
        if (g->kind == FA_ACT_KERNEL) p->s_kernels++;
        else if (g->kind == FA_ACT_MEMCPY) p->s_memcpy++;
        else p->s_memset++;
        if (g->flags & FA_ACTF_ESTIMATED_BYTES) p->s_est++;
        s = p->sink->gpu(p->sink->user, p->ctx, t, g, launch && launch[i] >= 0 ? &t->acts[launch[i]] : NULL);
    }
    free(launch);
    t->n_acts = m;
    memmove(p->blk, p->blk + cut, (n - cut) * sizeof *p->blk);
    p->nblk = n - cut;
    return s;
}

/* decimal digits of v (printf is a tenth of the import's time on shapes-heavy traces) */
static void put_u64(fa_buf *b, uint64_t v)
{
    char d[24];
    int n = 0;
    do d[n++] = (char)('0' + v % 10); while ((v /= 10) > 0);
    char o[24];
    for (int i = 0; i < n; i++) o[i] = d[n - 1 - i];
    fa_buf_append(b, o, (size_t)n);
}

static void ev_emit(kparse *p)
{
    kev *e = &p->ev;
    p->st->n_events++;
    if (e->ph) p->n_ph++;
    if (e->ph != 'X') { p->st->n_skipped++; if (e->cat.len) cat_kind(p, &e->cat); return; }
    int k = cat_kind(p, &e->cat);
    /* nn.Module scopes (profiler with_modules=True): frames of the cpu-op stack */
    if (k < 0 && cat_is(&e->cat, "python_function") && e->name.len > 11 && !memcmp(e->name.data, "nn.Module: ", 11))
        k = FA_ACT_MODULE;
    /* Python source frames (with_stack=True): "path/file.py(68): forward"; built-ins are not */
    if (k < 0 && cat_is(&e->cat, "python_function") && e->name.len > 5 && e->name.data[0] != '<' &&
        memmem(e->name.data, e->name.len, ".py(", 4))
        k = FA_ACT_PYFRAME;
    if (k < 0) { p->st->n_skipped++; return; }
    if (e->bad || !e->has_ts) { bad_record(p); return; }
    if (e->bad_place && (k == FA_ACT_KERNEL || k == FA_ACT_MEMCPY || k == FA_ACT_MEMSET || k == FA_ACT_SYNC)) {
        bad_record(p);
        return;
    }
    /* deferred ts/dur text -> ns (µs with scale 3) */
    if (e->ts_len && dec_scaled(e->ts_txt, e->ts_len, 3, &e->ts_ns)) {
        bad_number(p);
        bad_record(p);
        return;
    }
    if (e->dur_len && dec_scaled(e->dur_txt, e->dur_len, 3, &e->dur_ns)) {
        bad_number(p);
        bad_record(p);
        return;
    }
    int64_t dur = e->dur_ns;
    if (dur < 0) { p->st->n_negative_durations++; dur = 0; }
    /* no profiler trace spans a day: a longer record (a "dur" of 9.2e12 µs, 106 days, made the
     * report's kernel time 20x the trace's span) is a bad record, counted and skipped */
    if (dur > FA_KINETO_DUR_MAX_NS) { bad_record(p); return; }
    /* ts may be negative (relative to baseTimeNanoseconds, or a writer's own origin): kept signed
     * until the whole trace is read, then every record is shifted by the same amount */
    if (e->ts_ns > 0 && dur > INT64_MAX - e->ts_ns) { bad_record(p); return; }
    if (e->name.oom || e->cat.oom) { p->fail = FA_ERR_NOMEM; return; }
    if (e->name.len > KINETO_NAME_MAX) {
        p->fail = fa_ctx_error(p->ctx, FA_ERR_INPUT, "%s: an event name of %zu bytes near byte %llu, over the %zu KiB limit on one name",
                               p->name, e->name.len, (unsigned long long)cur_offset(p), KINETO_NAME_MAX >> 10);
        return;
    }
    fa_activity a = fa_activity_init((fa_activity_kind)k);
    a.name = intern_checked(p, e->name.data ? e->name.data : "", e->name.len);
    if (!a.name) { p->fail = FA_ERR_NOMEM; return; }
    if (fa_trace_names_bytes(p->t) > KINETO_NAMES_TOTAL_MAX) {
        p->fail = fa_ctx_error(p->ctx, FA_ERR_INPUT,
                               "%s: the trace's distinct event names and input shapes passed %zu MiB near byte %llu (real traces "
                               "hold a few MiB): refusing it",
                               p->name, KINETO_NAMES_TOTAL_MAX >> 20, (unsigned long long)cur_offset(p));
        return;
    }
    if (p->sink) {
        /* streaming: the file's own times, biased so that negative ones keep their order */
        if (e->ts_ns < -(int64_t)FA_IMPORT_TIME_BIAS) { bad_record(p); return; }
        if (e->ts_ns < 0) p->st->n_negative_times++;
        a.start_ns = (uint64_t)(e->ts_ns + (int64_t)FA_IMPORT_TIME_BIAS);
        a.end_ns = a.start_ns + (uint64_t)dur;
    } else {
        a.start_ns = (uint64_t)e->ts_ns;
        a.end_ns = (uint64_t)(e->ts_ns + dur);
    }
    a.correlation = e->corr;
    a.external_id = e->ext > 0 ? e->ext : -1;
    if (k == FA_ACT_SYNC && e->wait_corr >= 0) {
        a.wait_record = e->wait_corr;
        a.wait_stream = e->wait_stream;
    }
    bool gpu = k == FA_ACT_KERNEL || k == FA_ACT_MEMCPY || k == FA_ACT_MEMSET;
    if (gpu || k == FA_ACT_SYNC) {
        /* GPU lanes: pid is the device, tid the stream; the host pid/tid come from the launch */
        int64_t dev = e->device >= 0 ? e->device : e->pid; /* Kineto: GPU pid = device */
        a.device = dev >= 0 && dev <= INT32_MAX ? (int32_t)dev : -1;
        a.stream = e->stream >= 0 ? e->stream : e->tid;
        a.pid = a.tid = 0;
    } else {
        a.pid = e->pid;
        a.tid = e->tid;
        a.stream = e->stream;
        if (k == FA_ACT_RANGE && cat_is(&e->cat, "gpu_user_annotation")) {
            a.device = e->pid >= 0 && e->pid <= INT32_MAX ? (int32_t)e->pid : -1;
            a.stream = e->tid;
        }
    }
    memcpy(a.grid, e->grid, sizeof a.grid);
    memcpy(a.block, e->block, sizeof a.block);
    a.registers = e->regs;
    a.static_smem = e->smem; /* Kineto "shared memory" = static + dynamic, per block */
    a.occupancy = e->occ;
    if (k == FA_ACT_MEMCPY) a.bytes_read = a.bytes_written = e->bytes;
    if (k == FA_ACT_MEMSET) a.bytes_written = e->bytes;
    if (k == FA_ACT_CPU_OP && e->n_dims > 0 && e->n_types > 0) {
        uint64_t sum = 0;
        bool any = false;
        int ni = e->n_dims < e->n_types ? e->n_dims : e->n_types;
        for (int i = 0; i < ni && i < MAX_INPUTS; i++) {
            if (!e->numel_ok[i] || !e->dsize[i]) continue;
            if (e->numel[i] > UINT64_MAX / e->dsize[i]) continue;
            uint64_t b = e->numel[i] * e->dsize[i];
            if (sum > UINT64_MAX - b) continue;
            sum += b;
            any = true;
        }
        if (any) {
            a.bytes_read = sum;
            a.flags |= FA_ACTF_ESTIMATED_BYTES;
        }
        /* the inputs as text for the advice's cost model: "TYPE:8x512x768;TYPE:L1024;Scalar:" */
        fa_buf *sb = &p->tmp2;
        fa_buf_reset(sb);
        for (int i = 0; i < ni && i < MAX_INPUTS; i++) {
            if (i) fa_buf_puts(sb, ";");
            fa_buf_puts(sb, e->tname[i][0] ? e->tname[i] : "?");
            fa_buf_puts(sb, ":");
            if (!e->numel_ok[i]) fa_buf_puts(sb, "?");
            else if (e->is_list[i]) fa_buf_puts(sb, "L"), put_u64(sb, e->numel[i]);
            else if (e->ndim[i] > MAX_DIMS) fa_buf_puts(sb, "?");
            else {
                for (int k = 0; k < e->ndim[i]; k++) {
                    if (k) fa_buf_append(sb, "x", 1);
                    put_u64(sb, (uint64_t)e->dims[i][k]); /* dims are >= 0 (checked when read) */
                }
                /* the input's strides (in elements), when recorded for every dim: how it lies in
                 * memory (a transposed view is not the contiguous tensor of its shape) */
                if (e->ndim[i] > 0 && e->stride_ok[i] && e->nstride[i] == e->ndim[i]) {
                    fa_buf_append(sb, "@", 1);
                    for (int k = 0; k < e->ndim[i]; k++) {
                        if (k) fa_buf_append(sb, "x", 1);
                        put_u64(sb, (uint64_t)e->strides[i][k]);
                    }
                }
            }
        }
        if (sb->oom) { p->fail = FA_ERR_NOMEM; return; }
        a.shapes = fa_trace_intern_n(p->t, sb->data ? sb->data : "", sb->len);
        if (!a.shapes) { p->fail = FA_ERR_NOMEM; return; }
    }
    if (p->sink && gpu) {
        if (p->nblk == p->capblk) {
            size_t nc = p->capblk ? p->capblk * 2 : 4096;
            fa_activity *nb = realloc(p->blk, nc * sizeof *nb);
            if (!nb) { p->fail = FA_ERR_NOMEM; return; }
            p->blk = nb;
            p->capblk = nc;
        }
        p->blk[p->nblk++] = a;
        size_t want = p->t->n_acts / 4 > STREAM_BLOCK ? p->t->n_acts / 4 : STREAM_BLOCK;
        if (p->nblk >= want + STREAM_HOLD && stream_flush(p, false) != FA_OK) p->fail = fa_ctx_status(p->ctx);
        return;
    }
    if (!fa_trace_add(p->t, &a)) p->fail = FA_ERR_NOMEM;
}

/* ---- yajl callbacks --------------------------------------------------------------------- */

/* JSON types of a value, for the type checks below */
enum { V_NULL, V_BOOL, V_NUM, V_STR, V_CONTAINER };

/* A value of type vt under an event key that makes the record unusable: ph/cat/name must be
 * strings; pid/tid numbers or strings (Kineto names some lanes); ts/dur numbers (a quoted
 * "ts":"123" is not a time). */
static bool ev_type_bad(int key, int vt)
{
    switch (key) {
    case EK_PH: case EK_CAT: case EK_NAME: return vt != V_STR && vt != V_NULL;
    case EK_PID: case EK_TID: return vt == V_BOOL || vt == V_CONTAINER;
    case EK_TS: case EK_DUR: return vt != V_NUM;
    default: return false;
    }
}

/* The same for args keys that link records (correlation, External id): numbers or null.
 * Descriptive args (grid, registers, occupancy, Input Dims, ...) of another type are left
 * unknown: Triton cpu ops carry "grid": "grid(100,)", for one. */
static bool args_type_bad(int key, int vt)
{
    switch (key) {
    case AK_CORR: case AK_EXTID: return vt != V_NUM && vt != V_NULL;
    default: return false;
    }
}

/* Args that place a record (device, stream): needed by GPU records (the lane they ran on), only
 * descriptive on the host side, where ROCm's Kineto writes the launch call's stream as a pointer
 * string ("stream": "0x0"). Of another type they set bad_place: ev_emit skips a GPU record for it
 * and leaves the field unknown on any other. */
static bool args_place_bad(int key, int vt)
{
    return (key == AK_DEVICE || key == AK_STREAM) && vt != V_NUM && vt != V_NULL;
}

static int on_scalar(kparse *p, int vt, const char *s, size_t n);

static int cb_null(void *ctx) { return on_scalar(ctx, V_NULL, NULL, 0); }
static int cb_bool(void *ctx, int b) { (void)b; return on_scalar(ctx, V_BOOL, NULL, 0); }
static int cb_number(void *ctx, const char *s, size_t n) { return on_scalar(ctx, V_NUM, s, n); }

static int on_scalar(kparse *p, int vt, const char *s, size_t n)
{
    int d = p->depth;
    bool is_null = vt != V_NUM;
    if (p->in_event) {
        kev *e = &p->ev;
        if (d == p->ev_depth) {
            if (ev_type_bad(p->ev_key, vt)) { e->bad = true; return 1; }
            if (is_null) return 1;
            int64_t v;
            switch (p->ev_key) {
            case EK_TS:
            case EK_DUR: {
                if (n < sizeof e->ts_txt) { /* deferred to ev_emit */
                    bool ts = p->ev_key == EK_TS;
                    memcpy(ts ? e->ts_txt : e->dur_txt, s, n);
                    if (ts) e->ts_len = (uint8_t)n, e->has_ts = true;
                    else e->dur_len = (uint8_t)n, e->has_dur = true;
                    break;
                }
                int r = dec_scaled(s, n, 3, &v); /* µs -> ns */
                if (r) { bad_number(p); e->bad = true; break; }
                if (p->ev_key == EK_TS) e->ts_ns = v, e->has_ts = true, e->ts_len = 0;
                else e->dur_ns = v, e->has_dur = true, e->dur_len = 0;
                break;
            }
            case EK_PID: if (num_i64(p, s, n, &v)) e->pid = v; else e->bad = true; break;
            case EK_TID: if (num_i64(p, s, n, &v)) e->tid = v; else e->bad = true; break;
            default: break;
            }
        } else if (p->in_args && d == p->ev_depth + 1) {
            if (args_type_bad(p->args_key, vt)) { e->bad = true; return 1; }
            if (args_place_bad(p->args_key, vt)) { e->bad_place = true; return 1; }
            if (is_null) return 1;
            int64_t v;
            switch (p->args_key) {
            case AK_CORR: if (num_i64(p, s, n, &v)) e->corr = v; else e->bad = true; break;
            case AK_EXTID: if (num_i64(p, s, n, &v)) e->ext = v; else e->bad = true; break;
            case AK_DEVICE: if (num_i64(p, s, n, &v)) e->device = v; else e->bad_place = true; break;
            case AK_STREAM: if (num_i64(p, s, n, &v)) e->stream = v; else e->bad_place = true; break;
            case AK_REGS: if (num_i64(p, s, n, &v) && v >= 0 && v <= INT32_MAX) e->regs = (int32_t)v; break;
            case AK_SMEM: if (num_i64(p, s, n, &v) && v >= 0 && v <= INT32_MAX) e->smem = (int32_t)v; break;
            case AK_BYTES: if (num_i64(p, s, n, &v) && v >= 0) e->bytes = (uint64_t)v; break;
            case AK_WAIT_CORR: if (num_i64(p, s, n, &v) && v >= 0) e->wait_corr = v; break;
            case AK_WAIT_STREAM: if (num_i64(p, s, n, &v) && v >= 0) e->wait_stream = v; break;
            case AK_OCC: {
                char tmp[64];
                if (n >= sizeof tmp) break;
                memcpy(tmp, s, n);
                tmp[n] = 0;
                double o = strtod(tmp, NULL);
                if (isfinite(o) && o >= 0) e->occ = (float)(o / 100.0);
                break;
            }
            default: break;
            }
        } else if (p->in_args && d == p->ev_depth + 2) {
            int i = p->idx5++;
            if (is_null) return 1;
            int64_t v;
            if ((p->args_key == AK_GRID || p->args_key == AK_BLOCK) && i < 3) {
                if (num_i64(p, s, n, &v) && v >= 0 && v <= INT32_MAX)
                    (p->args_key == AK_GRID ? e->grid : e->block)[i] = (int32_t)v;
            } else if (p->args_key == AK_DIMS && i < MAX_INPUTS) {
                e->numel_ok[i] = false; /* a bare number where a dims list belongs */
                if (e->n_dims < i + 1) e->n_dims = i + 1;
            } else if (p->args_key == AK_TYPES && i < MAX_INPUTS) {
                e->dsize[i] = 0; /* a number where a type name belongs */
                if (e->n_types < i + 1) e->n_types = i + 1;
            } else if (p->args_key == AK_STRIDES && i < MAX_INPUTS) {
                e->stride_ok[i] = false; /* a bare number where a list belongs */
            }
        } else if (p->in_args && d == p->ev_depth + 3 && p->args_key == AK_STRIDES) {
            int i = p->idx5 - 1;
            if (i < 0 || i >= MAX_INPUTS || !e->stride_ok[i]) return 1;
            int64_t v;
            if (is_null || dec_scaled(s, n, 0, &v) || v < 0 || e->nstride[i] >= MAX_DIMS) { e->stride_ok[i] = false; return 1; }
            e->strides[i][e->nstride[i]++] = v;
        } else if (p->in_args && d == p->ev_depth + 3 && p->args_key == AK_DIMS) {
            int i = p->idx5 - 1;
            p->idx6++;
            if (i < 0 || i >= MAX_INPUTS || !e->numel_ok[i]) return 1;
            int64_t v;
            if (is_null || e->is_list[i] || dec_scaled(s, n, 0, &v) || v < 0) { e->numel_ok[i] = false; return 1; }
            if (v != 0 && e->numel[i] > UINT64_MAX / (uint64_t)v) e->numel_ok[i] = false;
            else e->numel[i] *= (uint64_t)v;
            if (e->ndim[i] < MAX_DIMS) e->dims[i][e->ndim[i]] = v;
            if (e->ndim[i] < 255) e->ndim[i]++;
        } else if (p->in_args && d == p->ev_depth + 4 && p->args_key == AK_DIMS) {
            /* a dim of one tensor of a TensorList */
            int i = p->idx5 - 1;
            if (i < 0 || i >= MAX_INPUTS || !e->numel_ok[i]) return 1;
            int64_t v;
            if (is_null || dec_scaled(s, n, 0, &v) || v < 0) { e->numel_ok[i] = false; return 1; }
            if (v != 0 && e->list_cur > UINT64_MAX / (uint64_t)v) e->numel_ok[i] = false;
            else e->list_cur *= (uint64_t)v;
        }
        return 1;
    }
    if (p->in_dev && d == 3) {
        if (is_null) return 1;
        int64_t v;
        fa_import_device *dv = p->dev;
        if (!dv || !num_i64(p, s, n, &v)) return 1;
        int32_t v32 = v >= INT32_MIN && v <= INT32_MAX ? (int32_t)v : 0;
        /* a device's counts and sizes are >= 0 and a compute capability two small numbers: a value
         * outside reads as unknown (0), never as "sm_-9-1, -5 SMs" (the sixth attack pass) */
        int32_t c32 = v >= 0 && v <= INT32_MAX ? (int32_t)v : 0;
        if ((p->dev_key == DK_CCMAJ || p->dev_key == DK_CCMIN) && c32 > 99) c32 = 0;
        if (p->dev_key != DK_ID) v32 = c32;
        switch (p->dev_key) {
        case DK_ID: dv->id = v32; break;
        case DK_SMS: dv->sm_count = v32; break;
        case DK_CCMAJ: dv->cc_major = v32; break;
        case DK_CCMIN: dv->cc_minor = v32; break;
        case DK_MEM: dv->total_mem_bytes = v > 0 ? (uint64_t)v : 0; break;
        case DK_THR_SM: dv->max_threads_per_sm = v32; break;
        case DK_REGS_SM: dv->regs_per_sm = v32; break;
        case DK_SMEM_SM: dv->smem_per_sm = v32; break;
        case DK_SMEM_BLK: dv->smem_per_block = v32; break;
        case DK_WARP: dv->warp_size = v32; break;
        default: break;
        }
        return 1;
    }
    if (d == 1 && p->top_key == TK_BASETIME && !is_null) {
        int64_t v;
        if (num_i64(p, s, n, &v)) p->st->base_time_ns = v;
    }
    if (d == 1 && p->top_key == TK_SCHEMA && !is_null && n < 12)
        snprintf(p->st->schema, sizeof p->st->schema, "kineto schemaVersion %.*s", (int)n, s);
    return 1;
}

static int cb_string(void *ctx, const unsigned char *s, size_t n)
{
    kparse *p = ctx;
    int d = p->depth;
    if (p->in_event) {
        kev *e = &p->ev;
        if (d == p->ev_depth) {
            if (ev_type_bad(p->ev_key, V_STR)) { e->bad = true; return 1; }
            switch (p->ev_key) {
            case EK_PH: e->ph = n == 1 ? (char)s[0] : '?'; break;
            case EK_CAT: fa_buf_reset(&e->cat); fa_buf_append(&e->cat, s, n); break;
            case EK_NAME: fa_buf_reset(&e->name); fa_buf_append(&e->name, s, n); break;
            case EK_PID: e->pid = id_from_string(s, n); break;
            case EK_TID: e->tid = id_from_string(s, n); break;
            default: break;
            }
        } else if (p->in_args && d == p->ev_depth + 1) {
            if (args_type_bad(p->args_key, V_STR)) e->bad = true;
            if (args_place_bad(p->args_key, V_STR)) e->bad_place = true;
        } else if (p->in_args && d == p->ev_depth + 2) {
            int i = p->idx5++;
            if (p->args_key == AK_TYPES && i < MAX_INPUTS) {
                e->dsize[i] = dtype_size(s, n);
                size_t tl = n < TNAME - 1 ? n : TNAME - 1;
                /* a type name goes into the shapes text: no ';' (the separator), no control or
                 * non-ASCII bytes ("c10::BFloat16" keeps its colons: the dims follow the last) */
                for (size_t k = 0; k < tl; k++) {
                    unsigned char c = s[k];
                    e->tname[i][k] = c == ';' || c < 0x20 || c >= 0x7f ? '_' : (char)c;
                }
                e->tname[i][tl] = 0;
                if (e->n_types < i + 1) e->n_types = i + 1;
            } else if (p->args_key == AK_DIMS && i < MAX_INPUTS) {
                e->numel_ok[i] = false;
                if (e->n_dims < i + 1) e->n_dims = i + 1;
            } else if (p->args_key == AK_STRIDES && i < MAX_INPUTS) {
                e->stride_ok[i] = false;
            }
        } else if (p->in_args && d == p->ev_depth + 3 && p->args_key == AK_DIMS) {
            int i = p->idx5 - 1;
            if (i >= 0 && i < MAX_INPUTS) e->numel_ok[i] = false;
        } else if (p->in_args && d == p->ev_depth + 3 && p->args_key == AK_STRIDES) {
            int i = p->idx5 - 1;
            if (i >= 0 && i < MAX_INPUTS) e->stride_ok[i] = false;
        }
        return 1;
    }
    if (p->in_dev && d == 3 && p->dev_key == DK_NAME && p->dev) {
        fa__name_to_cbuf((const char *)s, n, p->dev->name, sizeof p->dev->name);
    }
    return 1;
}

static int cb_map_key(void *ctx, const unsigned char *k, size_t n)
{
    kparse *p = ctx;
    int d = p->depth;
    if (p->in_event && d == p->ev_depth) {
        int key = EK_OTHER;
        switch (n) {
        case 2: if (k[0] == 'p' && k[1] == 'h') key = EK_PH; else if (k[0] == 't' && k[1] == 's') key = EK_TS; break;
        case 3:
            if (!memcmp(k, "cat", 3)) key = EK_CAT;
            else if (!memcmp(k, "pid", 3)) key = EK_PID;
            else if (!memcmp(k, "tid", 3)) key = EK_TID;
            else if (!memcmp(k, "dur", 3)) key = EK_DUR;
            break;
        case 4: if (!memcmp(k, "name", 4)) key = EK_NAME; else if (!memcmp(k, "args", 4)) key = EK_ARGS; break;
        default: break;
        }
        /* a key this reader uses given twice in one event: JSON leaves which one counts to the
         * reader (yajl hands both; the last was taken, a "dur" of 1e11 behind a real one) */
        if (key != EK_OTHER && (p->ev_seen & (1u << key))) {
            p->fail = fa_ctx_error(p->ctx, FA_ERR_INPUT, "%s: an event gives its key '%.*s' twice, near byte %llu: which one "
                                   "counts is not defined", p->name, (int)n, (const char *)k, (unsigned long long)cur_offset(p));
            return 0;
        }
        p->ev_seen |= 1u << key;
        p->ev_key = key;
    } else if (p->in_args && d == p->ev_depth + 1) {
        int key = EK_OTHER;
        if (key_is(k, n, "correlation")) key = AK_CORR;
        else if (key_is(k, n, "External id") || key_is(k, n, "external id")) key = AK_EXTID;
        else if (key_is(k, n, "grid")) key = AK_GRID;
        else if (key_is(k, n, "block")) key = AK_BLOCK;
        else if (key_is(k, n, "registers per thread")) key = AK_REGS;
        else if (key_is(k, n, "shared memory")) key = AK_SMEM;
        else if (key_is(k, n, "device")) key = AK_DEVICE;
        else if (key_is(k, n, "stream")) key = AK_STREAM;
        else if (key_is(k, n, "Input Dims") || key_is(k, n, "Input dims")) key = AK_DIMS;
        else if (key_is(k, n, "Input type")) key = AK_TYPES;
        else if (key_is(k, n, "Input Strides")) key = AK_STRIDES;
        else if (key_is(k, n, "est. achieved occupancy %")) key = AK_OCC;
        else if (key_is(k, n, "bytes")) key = AK_BYTES;
        else if (key_is(k, n, "wait_on_cuda_event_record_corr_id")) key = AK_WAIT_CORR;
        else if (key_is(k, n, "wait_on_stream")) key = AK_WAIT_STREAM;
        p->args_key = key;
    } else if (p->in_dev && d == 3) {
        int key = EK_OTHER;
        if (key_is(k, n, "id")) key = DK_ID;
        else if (key_is(k, n, "name")) key = DK_NAME;
        else if (key_is(k, n, "numSms") || key_is(k, n, "multiProcessorCount")) key = DK_SMS;
        else if (key_is(k, n, "computeMajor") || key_is(k, n, "major")) key = DK_CCMAJ;
        else if (key_is(k, n, "computeMinor") || key_is(k, n, "minor")) key = DK_CCMIN;
        else if (key_is(k, n, "totalGlobalMem")) key = DK_MEM;
        else if (key_is(k, n, "maxThreadsPerMultiprocessor") || key_is(k, n, "maxThreadsPerMultiProcessor")) key = DK_THR_SM;
        else if (key_is(k, n, "regsPerMultiprocessor")) key = DK_REGS_SM;
        else if (key_is(k, n, "sharedMemPerMultiprocessor")) key = DK_SMEM_SM;
        else if (key_is(k, n, "sharedMemPerBlock")) key = DK_SMEM_BLK;
        else if (key_is(k, n, "warpSize")) key = DK_WARP;
        p->dev_key = key;
    } else if (d == 1) {
        if (key_is(k, n, "traceEvents") && p->seen_events) {
            p->fail = fa_ctx_error(p->ctx, FA_ERR_INPUT, "%s: a second 'traceEvents' near byte %llu: one trace holds one",
                                   p->name, (unsigned long long)cur_offset(p));
            return 0;
        }
        if (key_is(k, n, "traceEvents")) p->top_key = TK_EVENTS, p->seen_events = true;
        /* "computeProperties": an older Kineto's name for the same list (torch-tb-profiler's 2021
         * traces), with "major", "minor" and "multiProcessorCount" for its fields */
        else if (key_is(k, n, "deviceProperties") || key_is(k, n, "computeProperties")) {
            p->top_key = TK_DEVPROPS;
            if (key_is(k, n, "computeProperties")) p->st->legacy_props = true;
        }
        else if (key_is(k, n, "baseTimeNanoseconds")) p->top_key = TK_BASETIME;
        else if (key_is(k, n, "schemaVersion")) p->top_key = TK_SCHEMA;
        else p->top_key = TK_OTHER;
        if (p->top_key == TK_DEVPROPS || p->top_key == TK_BASETIME || p->top_key == TK_SCHEMA) p->kineto_keys = true;
    }
    return 1;
}

static int cb_start_map(void *ctx)
{
    kparse *p = ctx;
    int d = ++p->depth;
    if (d == 1) p->top_map = true;
    if (p->ev_depth && d == p->ev_depth && !p->in_event) {
        p->in_event = true;
        p->ev_key = EK_OTHER;
        p->ev_seen = 0;
        ev_reset(&p->ev);
    } else if (p->in_event && d == p->ev_depth + 1 && p->ev_key == EK_ARGS) {
        p->in_args = true;
        p->args_key = EK_OTHER;
    } else if (p->in_event && d == p->ev_depth + 1) {
        if (ev_type_bad(p->ev_key, V_CONTAINER)) p->ev.bad = true;
    } else if (p->in_args && d == p->ev_depth + 2 && args_type_bad(p->args_key, V_CONTAINER)) {
        p->ev.bad = true;
    } else if (p->in_args && d == p->ev_depth + 2 && args_place_bad(p->args_key, V_CONTAINER)) {
        p->ev.bad_place = true;
    } else if (p->in_args && d == p->ev_depth + 3) {
        p->idx5++; /* a map as an element of an args array */
    } else if (d == 3 && p->top_key == TK_DEVPROPS && !p->ev_depth) {
        p->in_dev = true;
        p->dev_key = EK_OTHER;
        p->dev = p->st->n_devices < FA_IMPORT_MAX_DEVICES ? &p->st->devices[p->st->n_devices++] : NULL;
        if (p->dev) memset(p->dev, 0, sizeof *p->dev);
    }
    return 1;
}

static int cb_end_map(void *ctx)
{
    kparse *p = ctx;
    int d = p->depth--;
    if (p->in_event && d == p->ev_depth) {
        p->in_event = p->in_args = false;
        ev_emit(p);
        if (p->fail) return 0;
    } else if (p->in_args && d == p->ev_depth + 1) {
        p->in_args = false;
    } else if (p->in_dev && d == 3) {
        p->in_dev = false;
    }
    return 1;
}

static int cb_start_array(void *ctx)
{
    kparse *p = ctx;
    int d = ++p->depth;
    if (d == 1) p->ev_depth = 2, p->top_array = true; /* bare array of events (Chrome "JSON Array Format") */
    else if (d == 2 && p->top_key == TK_EVENTS && !p->in_event) p->ev_depth = 3, p->events_array = true;
    else if (p->ev_depth && d == p->ev_depth && !p->in_event && (p->ev_depth == 2 || p->top_key == TK_EVENTS)) {
        /* the events' array holds event objects: an array there (200,000 nested ones once) was
         * read as a trace with no event at all */
        p->fail = fa_ctx_error(p->ctx, FA_ERR_INPUT, "%s: an array where an event object belongs (in the events' array), "
                               "near byte %llu", p->name, (unsigned long long)cur_offset(p));
        return 0;
    }
    else if (p->in_event && d == p->ev_depth + 1) {
        if (ev_type_bad(p->ev_key, V_CONTAINER)) p->ev.bad = true;
    } else if (p->in_args && d == p->ev_depth + 2) {
        if (args_type_bad(p->args_key, V_CONTAINER)) p->ev.bad = true;
        if (args_place_bad(p->args_key, V_CONTAINER)) p->ev.bad_place = true;
        p->idx5 = 0;
    } else if (p->in_args && d == p->ev_depth + 3 && p->args_key == AK_DIMS) {
        int i = p->idx5++;
        p->idx6 = 0;
        if (i < MAX_INPUTS) {
            p->ev.numel[i] = 1;
            p->ev.numel_ok[i] = true;
            p->ev.ndim[i] = 0;
            p->ev.is_list[i] = false;
            if (p->ev.n_dims < i + 1) p->ev.n_dims = i + 1;
        }
    } else if (p->in_args && d == p->ev_depth + 3 && p->args_key == AK_STRIDES) {
        int i = p->idx5++;
        if (i < MAX_INPUTS) {
            p->ev.stride_ok[i] = true;
            p->ev.nstride[i] = 0;
        }
    } else if (p->in_args && d == p->ev_depth + 3) {
        p->idx5++;
    } else if (p->in_args && d == p->ev_depth + 4 && p->args_key == AK_STRIDES) {
        int i = p->idx5 - 1; /* a TensorList's strides: per tensor, not kept */
        if (i >= 0 && i < MAX_INPUTS) p->ev.stride_ok[i] = false;
    } else if (p->in_args && d == p->ev_depth + 4 && p->args_key == AK_DIMS) {
        int i = p->idx5 - 1; /* a list of lists: a TensorList, its element count summed */
        if (i >= 0 && i < MAX_INPUTS && p->ev.numel_ok[i]) {
            if (!p->ev.is_list[i]) {
                if (p->ev.ndim[i]) p->ev.numel_ok[i] = false; /* dims and lists mixed */
                p->ev.is_list[i] = true;
                p->ev.numel[i] = 0;
            }
            p->ev.list_cur = 1;
        }
    } else if (p->in_args && d == p->ev_depth + 5 && p->args_key == AK_DIMS) {
        int i = p->idx5 - 1;
        if (i >= 0 && i < MAX_INPUTS) p->ev.numel_ok[i] = false; /* deeper: not a TensorList */
    }
    return 1;
}

static int cb_end_array(void *ctx)
{
    kparse *p = ctx;
    int d = p->depth--;
    if (p->in_args && d == p->ev_depth + 4 && p->args_key == AK_DIMS) {
        int i = p->idx5 - 1;
        if (i >= 0 && i < MAX_INPUTS && p->ev.numel_ok[i] && p->ev.is_list[i]) {
            if (p->ev.numel[i] > UINT64_MAX - p->ev.list_cur) p->ev.numel_ok[i] = false;
            else p->ev.numel[i] += p->ev.list_cur;
        }
    }
    if (!p->in_event && p->ev_depth && d == p->ev_depth - 1) p->ev_depth = 0; /* events done */
    return 1;
}

static const yajl_callbacks k_callbacks = {
    cb_null, cb_bool, NULL, NULL, cb_number, cb_string,
    cb_start_map, cb_map_key, cb_end_map, cb_start_array, cb_end_array,
};

/* ---- lenient pre-filter ----------------------------------------------------------------- */

/* Rewrites what strict JSON refuses but trace writers emit: raw control bytes inside strings
 * become \u00XX escapes; NaN / Infinity / -Infinity outside strings become null. */
typedef struct lfilter {
    bool in_str, esc;
    const char *lit; /* literal being matched, or NULL */
    size_t lit_pos;
} lfilter;

static void lf_flush_lit(lfilter *f, fa_buf *o)
{
    if (f->lit) fa_buf_append(o, f->lit, f->lit_pos);
    f->lit = NULL;
    f->lit_pos = 0;
}

static void lf_run(lfilter *f, const unsigned char *s, size_t n, fa_buf *o, kparse *p, uint64_t base)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (f->in_str) {
            if (f->esc) f->esc = false;
            else if (c == '\\') f->esc = true;
            else if (c == '"') f->in_str = false;
            else if (c < 0x20) {
                char esc[8];
                snprintf(esc, sizeof esc, "\\u%04x", c);
                fa_buf_append(o, esc, 6);
                p->st->n_control_chars++;
                (void)base;
                continue;
            }
            fa_buf_append(o, &c, 1);
            continue;
        }
        if (f->lit) {
            if ((unsigned char)f->lit[f->lit_pos] == c) {
                f->lit_pos++;
                if (f->lit[f->lit_pos] == 0) {
                    fa_buf_append(o, "null", 4);
                    p->st->n_nonfinite++;
                    f->lit = NULL;
                    f->lit_pos = 0;
                }
                continue;
            }
            if (f->lit[0] == '-' && f->lit_pos == 1) { /* an ordinary negative number */
                fa_buf_append(o, "-", 1);
                f->lit = NULL;
                f->lit_pos = 0;
            } else {
                lf_flush_lit(f, o);
            }
        }
        if (c == '"') f->in_str = true;
        else if (c == 'N') { f->lit = "NaN"; f->lit_pos = 1; continue; }
        else if (c == 'I') { f->lit = "Infinity"; f->lit_pos = 1; continue; }
        else if (c == '-') { f->lit = "-Infinity"; f->lit_pos = 1; continue; }
        fa_buf_append(o, &c, 1);
    }
}

/* The most a Kineto gzip stream may inflate, uncompressed : compressed bytes, once more than
 * FA_KINETO_GZ_RATIO_AFTER bytes came out (a small file may be mostly one repeated run). JSON
 * traces compress 10-30:1 (the corpus: 16:1); deflate's own limit is about 1032:1. */
#define FA_KINETO_GZ_RATIO_MAX 200

#define FA_KINETO_GZ_RATIO_AFTER ((uint64_t)64 << 20)

/* ---- read-ahead -------------------------------------------------------------------------- */

/* A second thread reads (and for gzip inflates) the next chunk while this one parses: two
 * buffers, handed over under a mutex. Falls back to reading inline if the thread cannot
 * start. The thread lives only inside one import call. */
typedef struct rchunk {
    unsigned char *data;
    int n;            /* bytes read, -1 after an error (those decoded before it are lost to n) */
    int zerr;         /* Z_OK, Z_STREAM_END (the end, clean), Z_BUF_ERROR (the input ends inside a
                         gzip member), Z_DATA_ERROR, Z_MEM_ERROR, Z_ERRNO (a read error) */
    char zmsg[160];   /* what failed: zlib's message, or ours */
    int64_t tell;     /* the uncompressed bytes decoded so far, those of a read that failed midway
                         included */
    int64_t zoff;     /* the file's bytes consumed (compressed) */
    bool full;
} rchunk;

/* The trace file as a stream of bytes: gzip members inflated one after another (RFC 1952 §2.2:
 * a file may hold several), or the file itself when its first two bytes are not gzip's magic.
 * zlib's gzread is not used: it ignores whatever follows a member when that is not another member
 * (a valid trace with bytes appended imported with exit 0), and a failed read tells nothing of
 * where it failed (a checksum error said "uncompressed byte 0"). */
typedef struct zsrc {
    int fd;
    bool gzip;          /* decided by the first two bytes */
    bool decided;
    bool between;       /* at the start of the file or after a member's end: a member or the end next */
    bool eof;           /* read() returned 0 */
    bool done;          /* ended (cleanly, truncated or failed): every later read repeats done_err */
    int done_err;
    char done_msg[160];
    bool zinit;
    z_stream zs;
    unsigned char *in;  /* CHUNK bytes of the file */
    size_t in_len, in_pos;
    uint64_t in_off;    /* file bytes consumed */
    uint64_t out_off;   /* bytes produced */
} zsrc;

/* Keep in[in_pos..] and read more behind it; false (errno set) on a read error. */
static bool zsrc_fill(zsrc *z)
{
    if (z->in_pos > 0) {
        memmove(z->in, z->in + z->in_pos, z->in_len - z->in_pos);
        z->in_len -= z->in_pos;
        z->in_pos = 0;
    }
    while (z->in_len < CHUNK && !z->eof) {
        ssize_t r = read(z->fd, z->in + z->in_len, CHUNK - z->in_len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return false;
        if (r == 0) z->eof = true;
        z->in_len += (size_t)r;
        if (r > 0) break;
    }
    return true;
}

static void zsrc_end(zsrc *z, int err, const char *msg)
{
    z->done = true;
    z->done_err = err;
    snprintf(z->done_msg, sizeof z->done_msg, "%s", msg ? msg : "");
}

static void chunk_read(zsrc *z, rchunk *c)
{
    size_t got = 0;
    while (!z->done && got < CHUNK) {
        if ((z->in_len - z->in_pos < 2 || !z->decided) && !z->eof && !zsrc_fill(z)) {
            zsrc_end(z, Z_ERRNO, strerror(errno));
            break;
        }
        size_t avail = z->in_len - z->in_pos;
        const unsigned char *in = z->in + z->in_pos;
        if (!z->decided) {
            if (avail < 2 && !z->eof) continue;
            z->decided = true;
            z->gzip = z->between = avail >= 2 && in[0] == 0x1f && in[1] == 0x8b;
        }
        if (!z->gzip) { /* the file itself */
            if (avail == 0) {
                if (z->eof) zsrc_end(z, Z_STREAM_END, NULL);
                continue;
            }
            size_t k = avail < CHUNK - got ? avail : CHUNK - got;
            memcpy(c->data + got, in, k);
            got += k, z->in_pos += k, z->in_off += k, z->out_off += k;
            continue;
        }
        if (z->between) {
            if (avail < 2 && !z->eof) continue;
            if (avail == 0) { /* the last member ended with the file */
                zsrc_end(z, Z_STREAM_END, NULL);
                break;
            }
            if (avail < 2 || in[0] != 0x1f || in[1] != 0x8b) {
                char m[160];
                snprintf(m, sizeof m, "bytes after the end of the gzip stream (from compressed byte %llu) that are not another gzip member",
                         (unsigned long long)z->in_off);
                zsrc_end(z, Z_DATA_ERROR, m);
                break;
            }
            int rc = z->zinit ? inflateReset(&z->zs) : inflateInit2(&z->zs, 16 + MAX_WBITS); /* gzip wrapper only */
            if (rc != Z_OK) {
                zsrc_end(z, rc == Z_MEM_ERROR ? Z_MEM_ERROR : Z_DATA_ERROR, z->zs.msg ? z->zs.msg : "inflateInit2 failed");
                break;
            }
            z->zinit = true;
            z->between = false;
        }
        z->zs.next_in = (Bytef *)(uintptr_t)in;
        z->zs.avail_in = (uInt)avail;
        z->zs.next_out = c->data + got;
        z->zs.avail_out = (uInt)(CHUNK - got);
        int rc = inflate(&z->zs, Z_NO_FLUSH);
        size_t used = avail - z->zs.avail_in, made = (CHUNK - got) - z->zs.avail_out;
        z->in_pos += used, z->in_off += used;
        got += made, z->out_off += made;
        if (rc == Z_STREAM_END) z->between = true;
        else if (rc == Z_BUF_ERROR || (rc == Z_OK && used == 0 && made == 0)) {
            if (z->eof && z->in_pos == z->in_len) zsrc_end(z, Z_BUF_ERROR, "unexpected end of file");
        } else if (rc != Z_OK)
            zsrc_end(z, rc == Z_MEM_ERROR ? Z_MEM_ERROR : Z_DATA_ERROR, z->zs.msg ? z->zs.msg : "inflate failed");
    }
    bool failed = z->done && z->done_err != Z_STREAM_END && z->done_err != Z_BUF_ERROR;
    c->n = failed ? -1 : (int)got;
    c->zerr = z->done ? z->done_err : Z_OK;
    snprintf(c->zmsg, sizeof c->zmsg, "%s", z->done ? z->done_msg : "");
    c->tell = (int64_t)z->out_off;
    c->zoff = (int64_t)z->in_off;
}

static void zsrc_close(zsrc *z)
{
    if (z->zinit) inflateEnd(&z->zs);
    free(z->in);
    if (z->fd >= 0) close(z->fd);
    z->fd = -1;
}

typedef struct reader {
    zsrc *gz;
    pthread_t th;
    bool threaded, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rchunk c[2];
    int slot;         /* consumer's next slot */
} reader;

/* A truncated stream (Z_BUF_ERROR) is reported by the read that reaches the end of the input,
 * while zlib still holds output decoded before it: that read's bytes are good, and the reads
 * after it return the rest, then 0. Only then is the truncation final (a 24 KB cut of a gzip'd
 * trace said "at uncompressed byte 262144" wherever the cut was: the first read's size). */
static bool chunk_bad(const rchunk *c)
{
    return c->n < 0 || (c->zerr != Z_OK && c->zerr != Z_STREAM_END && !(c->zerr == Z_BUF_ERROR && c->n > 0));
}

static bool chunk_final(const rchunk *c)
{
    return c->n <= 0 || chunk_bad(c);
}

static void *reader_main(void *arg)
{
    reader *r = arg;
    for (int slot = 0;; slot ^= 1) {
        rchunk *c = &r->c[slot];
        pthread_mutex_lock(&r->mu);
        while (c->full && !r->stop) pthread_cond_wait(&r->cv, &r->mu);
        bool stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop) break;
        chunk_read(r->gz, c);
        pthread_mutex_lock(&r->mu);
        c->full = true;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        if (chunk_final(c)) break;
    }
    return NULL;
}

static bool reader_open(reader *r, zsrc *gz)
{
    memset(r, 0, sizeof *r);
    r->gz = gz;
    r->c[0].data = malloc(CHUNK);
    r->c[1].data = malloc(CHUNK);
    if (!r->c[0].data || !r->c[1].data) {
        free(r->c[0].data);
        free(r->c[1].data);
        return false;
    }
    if (pthread_mutex_init(&r->mu, NULL) == 0) {
        if (pthread_cond_init(&r->cv, NULL) == 0) {
            if (pthread_create(&r->th, NULL, reader_main, r) == 0) {
                r->threaded = true;
                return true;
            }
            pthread_cond_destroy(&r->cv);
        }
        pthread_mutex_destroy(&r->mu);
    }
    return true; /* inline reads */
}

static rchunk *reader_get(reader *r)
{
    rchunk *c = &r->c[r->slot];
    if (!r->threaded) {
        chunk_read(r->gz, c);
        return c;
    }
    pthread_mutex_lock(&r->mu);
    while (!c->full) pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    return c;
}

static void reader_release(reader *r)
{
    if (r->threaded) {
        pthread_mutex_lock(&r->mu);
        r->c[r->slot].full = false;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
    }
    r->slot ^= 1;
}

static void reader_close(reader *r)
{
    if (r->threaded) {
        pthread_mutex_lock(&r->mu);
        r->stop = true;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->th, NULL);
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
    }
    free(r->c[0].data);
    free(r->c[1].data);
}

/* ---- token-aligned feeding ------------------------------------------------------------
 *
 * yajl's lexer keeps a token that a chunk boundary cuts in its own buffer and lexes it again
 * from its first byte on the next yajl_parse call (yajl_lex.c, "readChar"), so a token spread
 * over k calls costs k times its length: a 40 MB name of escaped quotes took 28 s. The feeder
 * never lets a token span calls. It follows string state over the bytes (a quote not escaped by
 * an odd run of backslashes opens or closes a string; 16 bytes at a time where a block holds no
 * backslash), hands yajl everything before the unfinished token at the end (a string: from its
 * opening quote; a number or literal: its trailing run of [0-9a-zA-Z.+-]) and keeps that token
 * for the next chunk. Every byte is scanned once and lexed once; a token is moved at most once.
 * The cut only decides where yajl_parse calls end: yajl still sees every byte in order, so a
 * wrong guess on invalid JSON costs time, never a different result. */
typedef struct feeder {
    fa_buf pend;      /* bytes not yet handed to yajl */
    size_t scanned;   /* pend[0..scanned) has been scanned */
    size_t open;      /* in a string: position of its opening quote in pend */
    size_t numrun;    /* not in a string: start of the trailing number/literal run in
                       * pend[0..scanned), SIZE_MAX when the scanned bytes end otherwise */
    bool in_str, esc; /* state after pend[scanned - 1] */
} feeder;

static bool numlit_char(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '+' ||
           c == '-';
}

static void feeder_scan(feeder *f)
{
    const unsigned char *b = (const unsigned char *)f->pend.data;
    size_t i = f->scanned, n = f->pend.len;
    bool in_str = f->in_str, esc = f->esc;
    size_t open = f->open;
#ifdef __SSE2__
    const __m128i vq = _mm_set1_epi8('"'), vb = _mm_set1_epi8('\\');
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + i));
        unsigned qm = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, vq));
        unsigned bm = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, vb));
        if (!bm && !esc) {
            if (qm) {
                if (__builtin_popcount(qm) & 1) in_str = !in_str;
                if (in_str) open = i + (size_t)(31 - __builtin_clz(qm)); /* the last quote opened it */
            }
            i += 16;
            continue;
        }
        for (size_t e = i + 16; i < e; i++) {
            unsigned char c = b[i];
            if (in_str) {
                if (esc) esc = false;
                else if (c == '\\') esc = true;
                else if (c == '"') in_str = false;
            } else if (c == '"') {
                in_str = true;
                open = i;
            }
        }
    }
#endif
    for (; i < n; i++) {
        unsigned char c = b[i];
        if (in_str) {
            if (esc) esc = false;
            else if (c == '\\') esc = true;
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
            open = i;
        }
    }
    f->in_str = in_str;
    f->esc = esc;
    f->open = open;
}

/* Where the bytes handed to yajl now end (see above); updates numrun. */
static size_t feeder_cut(feeder *f, size_t scanned_before)
{
    const unsigned char *b = (const unsigned char *)f->pend.data;
    size_t n = f->pend.len;
    if (f->in_str) {
        f->numrun = SIZE_MAX;
        return f->open;
    }
    size_t cut = n;
    while (cut > scanned_before && numlit_char(b[cut - 1])) cut--;
    if (cut == scanned_before && f->numrun != SIZE_MAX) cut = f->numrun;
    f->numrun = cut < n ? cut : SIZE_MAX;
    return cut;
}

/* Drop pend[0..cut) (handed to yajl) and keep the rest at the front. */
static void feeder_consume(feeder *f, size_t cut)
{
    if (!cut) return;
    size_t rest = f->pend.len - cut;
    memmove(f->pend.data, f->pend.data + cut, rest);
    f->pend.len = rest;
    f->pend.data[rest] = 0;
    f->scanned = rest;
    if (f->in_str) f->open -= cut;
    if (f->numrun != SIZE_MAX) f->numrun -= cut;
}

/* ---- yajl under an allocation guard -------------------------------------------------------
 * yajl never checks what its allocator returns (yajl_buf.c asserts, the handle is used at
 * once). Its allocator here jumps back to the guarded call on failure instead, which returns
 * an error with p->fail = FA_ERR_NOMEM; the handle is then only freed (yajl's buffers stay
 * consistent: the failed realloc never replaced a pointer). */
static void ya_oom(kparse *p)
{
    p->fail = FA_ERR_NOMEM;
    if (p->jmp_armed) {
        p->jmp_armed = false;
        longjmp(p->jmp, 1);
    }
}
static void *ya_malloc(void *ctx, size_t n)
{
    void *q = malloc(n);
    if (!q) ya_oom(ctx);
    return q;
}
static void *ya_realloc(void *ctx, void *ptr, size_t n)
{
    void *q = realloc(ptr, n);
    if (!q) ya_oom(ctx);
    return q;
}
static void ya_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static yajl_handle yajl_alloc_guarded(kparse *p)
{
    yajl_alloc_funcs af = {ya_malloc, ya_realloc, ya_free, p};
    p->h = NULL;
    if (setjmp(p->jmp)) return NULL;
    p->jmp_armed = true;
    yajl_handle h = yajl_alloc(&k_callbacks, &af, p);
    p->jmp_armed = false;
    if (h) yajl_config(h, yajl_dont_validate_strings, 1); /* we check UTF-8 ourselves and repair */
    return h;
}

/* yajl_parse (n bytes) or, with complete, yajl_complete_parse, under the guard. */
static yajl_status yajl_parse_guarded(kparse *p, const unsigned char *s, size_t n, bool complete)
{
    if (setjmp(p->jmp)) return yajl_status_error;
    p->jmp_armed = true;
    yajl_status ys = complete ? yajl_complete_parse(p->h) : yajl_parse(p->h, s, n);
    p->jmp_armed = false;
    return ys;
}

/* ---- driver ----------------------------------------------------------------------------- */

typedef enum { RUN_OK, RUN_FAIL, RUN_RETRY } run_result;

static fa_status nomem_at(kparse *p, uint64_t off)
{
    return fa_ctx_error(p->ctx, FA_ERR_NOMEM, "%s: out of memory reading the trace near byte %llu", p->name,
                        (unsigned long long)off);
}

/* Hand f->pend[0..cut) to yajl. Returns false on a parse failure (*rr, *out_status set). */
/* yajl's short error text ("parse error: premature EOF\n") without its trailing newline, which
 * the terminal's escaping would show as a literal "\n" (freed with yajl_free_error) */
static unsigned char *yajl_error_trimmed(yajl_handle h, const unsigned char *text, size_t len)
{
    unsigned char *msg = yajl_get_error(h, 0, text, len);
    if (msg) {
        size_t n = strlen((const char *)msg);
        while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r' || msg[n - 1] == ' ')) msg[--n] = 0;
    }
    return msg;
}

static bool feed(kparse *p, feeder *f, size_t cut, uint64_t *fed_off, bool lenient, run_result *rr,
                 fa_status *out_status)
{
    if (!cut) return true;
    p->chunk_base = *fed_off;
    yajl_status ys = yajl_parse_guarded(p, (const unsigned char *)f->pend.data, cut, false);
    if (ys != yajl_status_ok) {
        if (p->fail) { /* out of memory, or the streaming sink failed (its message is set) */
            *out_status = p->fail == FA_ERR_NOMEM ? nomem_at(p, cur_offset(p)) : p->fail;
            *rr = RUN_FAIL;
            return false;
        }
        if (!lenient) {
            *rr = RUN_RETRY;
            return false;
        }
        unsigned char *msg = yajl_error_trimmed(p->h, (const unsigned char *)f->pend.data, cut);
        *out_status = fa_ctx_error(p->ctx, FA_ERR_INPUT, "%s: invalid JSON near byte %llu (lenient pass: offset approximate): %s",
                                   p->name, (unsigned long long)cur_offset(p), msg ? (const char *)msg : "parse error");
        if (msg) yajl_free_error(p->h, msg);
        *rr = RUN_FAIL;
        return false;
    }
    *fed_off += cut;
    feeder_consume(f, cut);
    return true;
}

static run_result kineto_run(kparse *p, const fa_import_opts *opts, bool lenient, fa_status *out_status)
{
    fa_ctx *ctx = p->ctx;
    int gfd = -1; /* opened as an input: a FIFO swapped in after the import's checks is refused */
    fa_status os = fa_open_input(ctx, p->path, 0, &gfd);
    if (os) {
        *out_status = os;
        return RUN_FAIL;
    }
    zsrc zsource = {.fd = gfd}, *gz = &zsource;
    if (!(gz->in = malloc(CHUNK))) {
        close(gfd);
        *out_status = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory opening the trace", p->name);
        return RUN_FAIL;
    }
    reader rd;
    bool rd_ok = reader_open(&rd, gz);
    fa_buf fout;
    fa_buf_init(&fout);
    feeder fd;
    memset(&fd, 0, sizeof fd);
    fa_buf_init(&fd.pend);
    fd.numrun = SIZE_MAX;
    lfilter lf = {0};
    if (rd_ok) p->h = yajl_alloc_guarded(p);
    if (!rd_ok || !p->h) {
        if (rd_ok) reader_close(&rd);
        if (p->h) yajl_free(p->h);
        p->h = NULL;
        zsrc_close(gz);
        *out_status = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory starting the JSON parser", p->name);
        return RUN_FAIL;
    }
    run_result rr = RUN_OK;
    bool at_eof = false;
    uint64_t raw_off = 0, fed_off = 0;
    for (;;) {
        rchunk *c = reader_get(&rd);
        int n = c->n;
        int zerr = c->zerr;
        if (chunk_bad(c) || (n == 0 && zerr == Z_BUF_ERROR)) {
            if (zerr == Z_MEM_ERROR) {
                *out_status = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory inflating the gzip stream at uncompressed byte %llu",
                                           p->name, (unsigned long long)raw_off);
                rr = RUN_FAIL;
                break;
            }
            bool trunc = zerr == Z_BUF_ERROR;
            /* where it failed: past what earlier chunks gave (a read that fails midway returns -1
             * and its bytes are lost to n; a valid member followed by garbage said byte 0) */
            uint64_t at = c->tell > 0 && (uint64_t)c->tell > raw_off ? (uint64_t)c->tell : raw_off;
            if (trunc && opts && opts->keep_partial) {
                p->st->truncated = true;
                p->st->truncated_offset = raw_off + (n > 0 ? (uint64_t)n : 0);
                break; /* keep what was parsed (any partial n bytes are dropped) */
            }
            *out_status = fa_ctx_error(ctx, FA_ERR_INPUT,
                                       "%s: %s gzip stream at uncompressed byte %llu: %s", p->name,
                                       trunc ? "truncated" : "corrupt", (unsigned long long)at,
                                       c->zmsg[0] ? c->zmsg : "read error");
            rr = RUN_FAIL;
            break;
        }
        if (n == 0) { at_eof = true; break; }
        const unsigned char *src = c->data;
        size_t len = (size_t)n;
        if (raw_off == 0 && len >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF) {
            src += 3, len -= 3; /* UTF-8 byte order mark */
            fed_off = 3;
        }
        if (lenient) {
            fa_buf_reset(&fout);
            lf_run(&lf, src, len, &fout, p, raw_off);
            src = (const unsigned char *)fout.data;
            len = fout.len;
        }
        raw_off += (uint64_t)n;
        p->st->input_bytes = raw_off;
        /* a gzip stream that inflates beyond any trace's ratio (JSON traces: 10-30:1; deflate's
         * limit is ~1032:1) is a decompression bomb: 2 MB of gzip gave 2 GiB of blanks and cost
         * the parse minutes per hundred MB of upload */
        if (raw_off > FA_KINETO_GZ_RATIO_AFTER && c->zoff > 0 && raw_off / (uint64_t)c->zoff > FA_KINETO_GZ_RATIO_MAX) {
            *out_status = fa_ctx_error(ctx, FA_ERR_INPUT,
                                       "%s: the gzip stream inflates more than %d:1 (%llu MiB from %llu KiB at uncompressed "
                                       "byte %llu): a decompression bomb, not a trace",
                                       p->name, FA_KINETO_GZ_RATIO_MAX, (unsigned long long)(raw_off >> 20),
                                       (unsigned long long)(c->zoff >> 10), (unsigned long long)raw_off);
            rr = RUN_FAIL;
            break;
        }
        size_t before = fd.pend.len;
        fa_buf_append(&fd.pend, src, len);
        reader_release(&rd);
        if (fout.oom || fd.pend.oom) {
            *out_status = nomem_at(p, raw_off);
            rr = RUN_FAIL;
            break;
        }
        fd.scanned = before;
        feeder_scan(&fd);
        fd.scanned = fd.pend.len;
        size_t cut = feeder_cut(&fd, before);
        if (fd.pend.len - cut > MAX_TOKEN_BYTES) {
            *out_status = fa_ctx_error(ctx, FA_ERR_INPUT,
                                       "%s: a JSON string or number over %zu MiB starting near byte %llu (no trace field is "
                                       "that long)",
                                       p->name, MAX_TOKEN_BYTES >> 20, (unsigned long long)(fed_off + cut));
            rr = RUN_FAIL;
            break;
        }
        if (!feed(p, &fd, cut, &fed_off, lenient, &rr, out_status)) break;
    }
    if (rr == RUN_OK && at_eof) {
        if (lenient) {
            fa_buf_reset(&fout);
            lf_flush_lit(&lf, &fout);
            fa_buf_append(&fd.pend, fout.data ? fout.data : "", fout.len);
        }
        if (feed(p, &fd, fd.pend.len, &fed_off, lenient, &rr, out_status)) {
            p->chunk_base = fed_off;
            yajl_status ys = yajl_parse_guarded(p, NULL, 0, true);
            if (ys != yajl_status_ok && p->fail) {
                *out_status = nomem_at(p, raw_off);
                rr = RUN_FAIL;
            } else if (ys != yajl_status_ok) {
                unsigned char *msg = yajl_error_trimmed(p->h, NULL, 0);
                bool premature = p->depth > 0 || (msg && strstr((const char *)msg, "premature EOF"));
                if (premature && opts && opts->keep_partial) {
                    p->st->truncated = true;
                    p->st->truncated_offset = raw_off;
                } else if (!premature && !lenient) {
                    rr = RUN_RETRY;
                } else {
                    *out_status = fa_ctx_error(
                        ctx, FA_ERR_INPUT, "%s: %s at byte %llu (%d containers still open): %s", p->name,
                        premature ? "JSON ends early (truncated file?)" : "invalid JSON",
                        (unsigned long long)raw_off, p->depth, msg ? (const char *)msg : "parse error");
                    rr = RUN_FAIL;
                }
                if (msg) yajl_free_error(p->h, msg);
            }
        }
    }
    /* a JSON document that holds no events' array is not a trace (any package.json parsed as one
     * with 0 events and was stored as a run): an object needs a 'traceEvents' array, or Kineto's
     * own keys with none (a profile that recorded nothing: schemaVersion, deviceProperties) */
    /* a bare array (Chrome's "JSON Array Format") is a trace when it holds events: `[]`, `[1,2,3]`
     * or objects with no 'ph' were imported as an empty trace */
    if (rr == RUN_OK && p->top_array && !p->n_ph) {
        *out_status = fa_ctx_error(ctx, FA_ERR_INPUT,
                                   "%s: a JSON array holding no trace event (no element is an object with a 'ph'): not a "
                                   "profiler trace",
                                   p->name);
        rr = RUN_FAIL;
    }
    if (rr == RUN_OK && !p->top_array && !(p->top_map && (p->events_array || (!p->seen_events && p->kineto_keys)))) {
        *out_status = fa_ctx_error(ctx, FA_ERR_INPUT,
                                   p->top_map && p->seen_events
                                       ? "%s: its 'traceEvents' is not an array of events: not a profiler trace"
                                   : p->top_map ? "%s: a JSON object with no 'traceEvents' array: not a profiler trace "
                                                  "(Kineto / Chrome trace JSON)"
                                                : "%s: a JSON value that is neither an object with 'traceEvents' nor "
                                                  "an array of events: not a profiler trace",
                                   p->name);
        rr = RUN_FAIL;
    }
    if (rr == RUN_OK && p->sink) {
        fa_status fs = stream_flush(p, true);
        if (fs) {
            *out_status = fs;
            rr = RUN_FAIL;
        }
    }
    yajl_free(p->h);
    p->h = NULL;
    fa_buf_free(&fout);
    fa_buf_free(&fd.pend);
    reader_close(&rd); /* joins the read-ahead thread before the source goes */
    zsrc_close(gz);
    return rr;
}

fa_status fa__import_kineto_src(fa_ctx *ctx, const char *path, const char *name, uint64_t bytes,
                                const fa_import_opts *opts, fa_trace **out, fa_import_stats *stats)
{
    uint64_t t0 = fa_now_ns();
    fa_import_stats local;
    fa_import_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    st->kind = fa_import_detect(path);
    st->file_bytes = bytes;
    if (st->kind != FA_IMPORT_KINETO_JSON && st->kind != FA_IMPORT_KINETO_JSON_GZ)
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: not JSON or gzip (first bytes)", name);

    fa_status s = FA_OK;
    kparse p;
    fa_trace *t = NULL;
    for (int pass = 0; pass < 2; pass++) {
        memset(&p, 0, sizeof p);
        p.ctx = ctx;
        p.path = path;
        p.name = name;
        p.st = st;
        p.sink = opts ? opts->sink : NULL;
        if (pass == 1 && p.sink && p.sink->reset && (s = p.sink->reset(p.sink->user, ctx)) != FA_OK) break;
        fa_buf_init(&p.ev.name);
        fa_buf_init(&p.ev.cat);
        fa_buf_init(&p.tmp);
        fa_buf_init(&p.tmp2);
        uint64_t fb = st->file_bytes;
        fa_import_kind kind = st->kind;
        memset(st, 0, sizeof *st);
        st->file_bytes = fb;
        st->kind = kind;
        st->lenient_pass = pass == 1;
        t = fa_trace_create("kineto");
        if (!t) {
            s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", name);
            break;
        }
        p.t = t;
        run_result rr = kineto_run(&p, opts, pass == 1, &s);
        fa_buf_free(&p.ev.name);
        fa_buf_free(&p.ev.cat);
        fa_buf_free(&p.tmp);
        fa_buf_free(&p.tmp2);
        free(p.blk);
        p.blk = NULL;
        if (rr == RUN_OK) { s = FA_OK; break; }
        fa_trace_free(t);
        t = NULL;
        if (rr == RUN_FAIL) break;
    }
    if (!t) {
        st->elapsed_ns = fa_now_ns() - t0;
        return s;
    }

    if (!p.sink) fa__import_place_times(t, st, st->base_time_ns > 0 ? st->base_time_ns : 0);
    t->source_path = fa_trace_intern(t, name);
    for (int i = 0; i < st->n_devices; i++)
        if (st->devices[i].name[0]) { t->device_name = fa_trace_intern(t, st->devices[i].name); break; }
    if (!st->schema[0]) snprintf(st->schema, sizeof st->schema, "kineto (no schemaVersion)");
    t->n_parse_errors =
        st->n_bad_utf8 + st->n_bad_numbers + st->n_control_chars + st->n_nonfinite + st->n_bad_records;

    /* streaming: the GPU records are attributed and gone; this counts the duplicate launches */
    s = p.sink ? fa__import_attribute_ex(ctx, t, st, false, FA_ACT_CPU_OP, true, t->n_acts, true, NULL)
               : fa__import_attribute(ctx, t, st, false, FA_ACT_CPU_OP, true);
    if (s != FA_OK) {
        fa_trace_free(t);
        return fa_ctx_wrap(ctx, s, "%s: ", name);
    }
    fa__import_count(t, st);
    if (p.sink) {
        st->n_kernels += p.s_kernels;
        st->n_memcpy += p.s_memcpy;
        st->n_memset += p.s_memset;
        st->n_estimated_bytes += p.s_est;
        st->no_gpu_activity = st->n_kernels + st->n_memcpy + st->n_memset == 0;
    }
    st->elapsed_ns = fa_now_ns() - t0;
    if (st->no_gpu_activity && p.n_mtia > 0) {
        fa_trace_free(t);
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED,
                            "%s: non-CUDA accelerator trace (%llu MTIA events, categories mtia_*, "
                            "and no CUDA kernels): not supported",
                            name, (unsigned long long)p.n_mtia);
    }
    *out = t;
    return FA_OK;
}

fa_status fa_import_kineto_ex(fa_ctx *ctx, const char *path, const fa_import_opts *opts, fa_trace **out,
                              fa_import_stats *stats)
{
    fa_import_source src;
    fa_status s = fa_import_source_open(ctx, path, &src);
    if (s) {
        if (stats) memset(stats, 0, sizeof *stats);
        return s;
    }
    s = fa__import_kineto_src(ctx, src.path, opts && opts->name ? opts->name : path, src.bytes, opts, out, stats);
    fa_import_source_close(&src);
    return s;
}

fa_status fa_import_kineto(fa_ctx *ctx, const char *path, fa_trace **out, fa_import_stats *stats)
{
    return fa_import_kineto_ex(ctx, path, NULL, out, stats);
}
