/* collector/import/common — file-kind detection, UTF-8 repair and the kernel -> launch -> op
 * attribution both importers share. */
#include "collector/import/import-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

const char *fa_import_kind_name(fa_import_kind k)
{
    static const char *const names[FA_IMPORT_KIND_COUNT] = {"unknown", "kineto-json",
                                                            "kineto-json-gz", "nsys-sqlite"};
    return (unsigned)k < FA_IMPORT_KIND_COUNT ? names[k] : "unknown";
}

fa_import_kind fa_import_detect(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return FA_IMPORT_UNKNOWN;
    unsigned char hdr[64];
    size_t n = fread(hdr, 1, sizeof hdr, f);
    fclose(f);
    if (n >= 2 && hdr[0] == 0x1f && hdr[1] == 0x8b) return FA_IMPORT_KINETO_JSON_GZ;
    if (n >= 16 && memcmp(hdr, "SQLite format 3\0", 16) == 0) return FA_IMPORT_NSYS_SQLITE;
    size_t i = 0;
    if (n >= 3 && hdr[0] == 0xEF && hdr[1] == 0xBB && hdr[2] == 0xBF) i = 3; /* UTF-8 BOM */
    for (; i < n; i++) {
        unsigned char c = hdr[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
        return (c == '{' || c == '[') ? FA_IMPORT_KINETO_JSON : FA_IMPORT_UNKNOWN;
    }
    return FA_IMPORT_UNKNOWN;
}

fa_status fa_import_file(fa_ctx *ctx, const char *path, const fa_import_opts *opts,
                         fa_trace **out, fa_import_stats *stats)
{
    switch (fa_import_detect(path)) {
    case FA_IMPORT_KINETO_JSON:
    case FA_IMPORT_KINETO_JSON_GZ: return fa_import_kineto_ex(ctx, path, opts, out, stats);
    case FA_IMPORT_NSYS_SQLITE: return fa_import_nsys(ctx, path, out, stats);
    default: break;
    }
    FILE *f = fopen(path, "rb");
    if (!f) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot open trace", path);
    fclose(f);
    return fa_ctx_error(ctx, FA_ERR_INPUT,
                        "%s: not a recognised trace (expected Kineto JSON, gzip'd JSON or an "
                        "Nsight Systems SQLite export, judged by the first bytes)",
                        path);
}

/* ---- UTF-8 ---------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s[i..n), 0 if invalid (RFC 3629 table 3-7). */
static size_t utf8_seq(const unsigned char *s, size_t i, size_t n)
{
    unsigned c = s[i];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) { len = 3; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) len = 3;
    else if (c == 0xED) { len = 3; hi = 0x9F; }
    else if (c >= 0xEE && c <= 0xEF) len = 3;
    else if (c == 0xF0) { len = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) { len = 4; hi = 0x8F; }
    else return 0;
    if (i + len > n) return 0;
    if (s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
    return len;
}

bool fa__utf8_repair(const char *str, size_t n, fa_buf *b)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    for (uint64_t w; i + 8 <= n; i += 8) { /* ASCII fast path, 8 bytes at a time */
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ull) break;
    }
    while (i < n && s[i] < 0x80) i++;
    if (i == n) return true;
    size_t j = i;
    bool ok = true;
    while (j < n) {
        size_t l = utf8_seq(s, j, n);
        if (!l) { ok = false; break; }
        j += l;
    }
    if (ok) return true;
    fa_buf_reset(b);
    fa_buf_append(b, s, j);
    while (j < n) {
        size_t l = utf8_seq(s, j, n);
        if (l) {
            fa_buf_append(b, s + j, l);
            j += l;
        } else {
            fa_buf_append(b, "\xEF\xBF\xBD", 3);
            j++;
        }
    }
    return false;
}

/* ---- attribution ---------------------------------------------------------------------- */

static bool is_gpu(fa_activity_kind k)
{
    return k == FA_ACT_KERNEL || k == FA_ACT_MEMCPY || k == FA_ACT_MEMSET;
}

/* Sort context for qsort_r (glibc, _GNU_SOURCE): no global state, imports may run in
 * parallel threads. */
typedef struct sortctx {
    const fa_activity *acts;
    const int32_t *ord;
    bool pid_local;
} sortctx;

static int encl_cmp(const void *pa, const void *pb, void *arg)
{
    const sortctx *c = arg;
    const fa_activity *a = &c->acts[*(const int32_t *)pa], *b = &c->acts[*(const int32_t *)pb];
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
    if (a->end_ns != b->end_ns) return a->end_ns > b->end_ns ? -1 : 1; /* outer first */
    int32_t ia = *(const int32_t *)pa, ib = *(const int32_t *)pb;
    return ia < ib ? -1 : ia > ib;
}

/* launches by (pid if pid-local, correlation, pid, start, index) */
static int launch_cmp(const void *pa, const void *pb, void *arg)
{
    const sortctx *c = arg;
    int32_t ia = *(const int32_t *)pa, ib = *(const int32_t *)pb;
    const fa_activity *a = &c->acts[ia], *b = &c->acts[ib];
    if (c->pid_local && a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->correlation != b->correlation) return a->correlation < b->correlation ? -1 : 1;
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1; /* duplicates are per process */
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

/* enclosing records by (pid if pid-local, External id, position); holds positions in ord */
static int ext_cmp(const void *pa, const void *pb, void *arg)
{
    const sortctx *c = arg;
    int32_t pa_ = *(const int32_t *)pa, pb_ = *(const int32_t *)pb;
    const fa_activity *a = &c->acts[c->ord[pa_]], *b = &c->acts[c->ord[pb_]];
    if (c->pid_local && a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->external_id != b->external_id) return a->external_id < b->external_id ? -1 : 1;
    return pa_ < pb_ ? -1 : pa_ > pb_;
}

/* Position in ord of the innermost enclosing record on (pid, tid) containing ts, or -1. */
static int32_t encl_find(const fa_activity *acts, const int32_t *ord, const int32_t *parent,
                         size_t n, int64_t pid, int64_t tid, uint64_t ts)
{
    size_t lo = 0, hi = n; /* first position whose key > (pid, tid, ts) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const fa_activity *a = &acts[ord[mid]];
        bool le = a->pid < pid || (a->pid == pid && (a->tid < tid || (a->tid == tid && a->start_ns <= ts)));
        if (le) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return -1;
    int32_t p = (int32_t)(lo - 1);
    const fa_activity *a = &acts[ord[p]];
    if (a->pid != pid || a->tid != tid) return -1;
    while (p >= 0 && acts[ord[p]].end_ns < ts) p = parent[p];
    return p;
}

fa_status fa__import_attribute(fa_ctx *ctx, fa_trace *t, fa_import_stats *st, bool pid_local,
                               fa_activity_kind encl_kind, bool use_external_id)
{
    fa_activity *acts = t->acts;
    size_t n = t->n_acts;
    if (n > INT32_MAX) return fa_ctx_error(ctx, FA_ERR_NOMEM, "trace has over 2^31 records");
    size_t n_launch = 0, n_encl = 0;
    for (size_t i = 0; i < n; i++) {
        if ((acts[i].kind == FA_ACT_RUNTIME || acts[i].kind == FA_ACT_DRIVER) && acts[i].correlation >= 0) n_launch++;
        if (acts[i].kind == encl_kind) n_encl++;
    }
    /* Memory: 4 bytes per launch, 16-20 per enclosing record, 4 per record (sorted index
     * arrays, no hash tables: the trace itself dominates). */
    fa_status s = FA_OK;
    int32_t *lord = malloc((n_launch + 1) * sizeof *lord);
    int32_t *ord = malloc((n_encl + 1) * sizeof *ord);
    int32_t *parent = malloc((n_encl + 1) * sizeof *parent);
    int32_t *eord = malloc((n_encl + 1) * sizeof *eord); /* stack, then the External id index */
    uint32_t *gpu_count = calloc(n_encl + 1, sizeof *gpu_count);
    int32_t *gop = malloc((n + 1) * sizeof *gop);
    if (!lord || !ord || !parent || !eord || !gpu_count || !gop) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory attributing %zu trace records", n);
        goto done;
    }
    sortctx sc = {acts, ord, pid_local};

    /* launch calls sorted by (pid, correlation, start) */
    size_t nl = 0;
    for (size_t i = 0; i < n; i++) {
        gop[i] = -1;
        if ((acts[i].kind == FA_ACT_RUNTIME || acts[i].kind == FA_ACT_DRIVER) && acts[i].correlation >= 0)
            lord[nl++] = (int32_t)i;
    }
    qsort_r(lord, nl, sizeof *lord, launch_cmp, &sc);
    for (size_t k = 1; k < nl; k++) {
        const fa_activity *a = &acts[lord[k - 1]], *b = &acts[lord[k]];
        if (a->correlation == b->correlation && a->pid == b->pid) st->n_duplicate_correlations++;
    }

    /* enclosing records: sorted per thread, parent links by a nesting sweep */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (acts[i].kind == encl_kind) ord[m++] = (int32_t)i;
    qsort_r(ord, m, sizeof *ord, encl_cmp, &sc);
    int32_t *stack = eord;
    size_t sp = 0;
    for (size_t p = 0; p < m; p++) {
        const fa_activity *a = &acts[ord[p]];
        while (sp > 0) {
            const fa_activity *top = &acts[ord[stack[sp - 1]]];
            if (top->pid == a->pid && top->tid == a->tid && top->end_ns >= a->start_ns) break;
            sp--;
        }
        parent[p] = sp ? stack[sp - 1] : -1;
        stack[sp++] = (int32_t)p;
    }
    size_t ne = 0;
    if (use_external_id) {
        for (size_t p = 0; p < m; p++)
            if (acts[ord[p]].external_id > 0) eord[ne++] = (int32_t)p;
        qsort_r(eord, ne, sizeof *eord, ext_cmp, &sc);
    }

    for (size_t i = 0; i < n; i++) {
        fa_activity *g = &acts[i];
        if (!is_gpu(g->kind)) continue;
        int32_t li = -1;
        if (g->correlation >= 0 && nl) {
            /* first launch with key >= (pid, correlation) */
            size_t lo = 0, hi = nl;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const fa_activity *a = &acts[lord[mid]];
                bool lt = pid_local && a->pid != g->pid ? a->pid < g->pid : a->correlation < g->correlation;
                if (lt) lo = mid + 1;
                else hi = mid;
            }
            /* duplicates: the latest launch not after the GPU record, else the earliest */
            int32_t best_before = -1, best_after = -1;
            for (size_t k = lo; k < nl; k++) {
                const fa_activity *a = &acts[lord[k]];
                if (a->correlation != g->correlation || (pid_local && a->pid != g->pid)) break;
                if (a->start_ns <= g->start_ns) {
                    if (best_before < 0 || a->start_ns > acts[best_before].start_ns) best_before = lord[k];
                } else if (best_after < 0 || a->start_ns < acts[best_after].start_ns) {
                    best_after = lord[k];
                }
            }
            li = best_before >= 0 ? best_before : best_after;
        }
        const fa_activity *L = li >= 0 ? &acts[li] : NULL;
        if (!L) {
            g->flags |= FA_ACTF_ORPHAN;
            st->n_orphans++;
        } else {
            g->pid = L->pid;
            g->tid = L->tid;
            if (g->start_ns < L->start_ns) {
                g->flags |= FA_ACTF_CLOCK_INVERSION;
                st->n_clock_inversions++;
            }
            if (g->external_id < 0) g->external_id = L->external_id;
        }
        int32_t ep = -1; /* position in ord */
        if (use_external_id && g->external_id > 0 && ne) {
            int64_t pid = L ? L->pid : g->pid;
            size_t lo = 0, hi = ne;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const fa_activity *a = &acts[ord[eord[mid]]];
                bool lt = pid_local && a->pid != pid ? a->pid < pid : a->external_id < g->external_id;
                if (lt) lo = mid + 1;
                else hi = mid;
            }
            if (lo < ne) {
                const fa_activity *a = &acts[ord[eord[lo]]];
                if (a->external_id == g->external_id && (!pid_local || a->pid == pid)) ep = eord[lo];
            }
        }
        if (ep < 0 && L) ep = encl_find(acts, ord, parent, m, L->pid, L->tid, L->start_ns);
        if (ep >= 0) {
            const fa_activity *e = &acts[ord[ep]];
            g->op_type = e->name;
            g->node_name = e->name;
            if (li >= 0) {
                acts[li].op_type = e->name;
                acts[li].node_name = e->name;
            }
            st->n_attributed++;
            gop[i] = ep;
            if (g->kind == FA_ACT_KERNEL) gpu_count[ep]++;
        }
    }
    /* estimated bytes: only where the op launched exactly one kernel */
    for (size_t i = 0; i < n; i++) {
        fa_activity *g = &acts[i];
        if (g->kind != FA_ACT_KERNEL || gop[i] < 0) continue;
        const fa_activity *e = &acts[ord[gop[i]]];
        if (gpu_count[gop[i]] == 1 && (e->flags & FA_ACTF_ESTIMATED_BYTES) && g->bytes_read == 0 &&
            g->bytes_written == 0) {
            g->bytes_read = e->bytes_read;
            g->bytes_written = e->bytes_written;
            g->flags |= FA_ACTF_ESTIMATED_BYTES;
        }
    }
    t->n_orphans = st->n_orphans;
    t->n_clock_inversions = st->n_clock_inversions;
done:
    free(lord);
    free(ord);
    free(parent);
    free(eord);
    free(gpu_count);
    free(gop);
    return s;
}

void fa__import_count(const fa_trace *t, fa_import_stats *st)
{
    st->n_kernels = st->n_memcpy = st->n_memset = st->n_runtime = st->n_driver = 0;
    st->n_cpu_ops = st->n_ranges = st->n_sync = st->n_estimated_bytes = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        switch (a->kind) {
        case FA_ACT_KERNEL: st->n_kernels++; break;
        case FA_ACT_MEMCPY: st->n_memcpy++; break;
        case FA_ACT_MEMSET: st->n_memset++; break;
        case FA_ACT_RUNTIME: st->n_runtime++; break;
        case FA_ACT_DRIVER: st->n_driver++; break;
        case FA_ACT_CPU_OP: st->n_cpu_ops++; break;
        case FA_ACT_RANGE: st->n_ranges++; break;
        case FA_ACT_SYNC: st->n_sync++; break;
        default: break;
        }
        if (a->flags & FA_ACTF_ESTIMATED_BYTES) st->n_estimated_bytes++;
    }
    st->no_gpu_activity = st->n_kernels + st->n_memcpy + st->n_memset == 0;
}

/* ---- stats as JSON ---------------------------------------------------------------------- */

static void json_str(fa_buf *b, const char *s)
{
    fa_buf_puts(b, "\"");
    fa_escape_json(b, s, strlen(s));
    fa_buf_puts(b, "\"");
}

void fa_import_stats_json(const fa_import_stats *st, fa_buf *b)
{
    fa_buf_puts(b, "{\"kind\":");
    json_str(b, fa_import_kind_name(st->kind));
    fa_buf_puts(b, ",\"schema\":");
    json_str(b, st->schema);
    const struct { const char *k; uint64_t v; } nums[] = {
        {"file_bytes", st->file_bytes}, {"input_bytes", st->input_bytes}, {"events", st->n_events},
        {"kernels", st->n_kernels}, {"memcpy", st->n_memcpy}, {"memset", st->n_memset},
        {"runtime", st->n_runtime}, {"driver", st->n_driver}, {"cpu_ops", st->n_cpu_ops},
        {"ranges", st->n_ranges}, {"sync", st->n_sync}, {"skipped", st->n_skipped},
        {"orphans", st->n_orphans}, {"clock_inversions", st->n_clock_inversions},
        {"duplicate_correlations", st->n_duplicate_correlations}, {"attributed", st->n_attributed},
        {"estimated_bytes", st->n_estimated_bytes}, {"negative_durations", st->n_negative_durations},
        {"bad_utf8", st->n_bad_utf8}, {"first_bad_utf8_offset", st->first_bad_utf8_offset},
        {"control_chars", st->n_control_chars}, {"nonfinite", st->n_nonfinite},
        {"bad_numbers", st->n_bad_numbers}, {"first_bad_number_offset", st->first_bad_number_offset},
        {"truncated_offset", st->truncated_offset}, {"elapsed_ns", st->elapsed_ns},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        fa_buf_printf(b, ",\"%s\":%llu", nums[i].k, (unsigned long long)nums[i].v);
    fa_buf_printf(b, ",\"base_time_ns\":%lld", (long long)st->base_time_ns);
    fa_buf_printf(b, ",\"lenient_pass\":%s,\"no_gpu_activity\":%s,\"truncated\":%s,\"devices\":[",
                  st->lenient_pass ? "true" : "false", st->no_gpu_activity ? "true" : "false",
                  st->truncated ? "true" : "false");
    for (int i = 0; i < st->n_devices && i < FA_IMPORT_MAX_DEVICES; i++) {
        const fa_import_device *d = &st->devices[i];
        fa_buf_printf(b, "%s{\"id\":%d,\"name\":", i ? "," : "", d->id);
        json_str(b, d->name);
        fa_buf_printf(b, ",\"sm_count\":%d,\"cc_major\":%d,\"cc_minor\":%d,\"total_mem_bytes\":%llu,"
                         "\"max_threads_per_sm\":%d,\"regs_per_sm\":%d,\"smem_per_sm\":%d,"
                         "\"smem_per_block\":%d,\"warp_size\":%d}",
                      d->sm_count, d->cc_major, d->cc_minor, (unsigned long long)d->total_mem_bytes,
                      d->max_threads_per_sm, d->regs_per_sm, d->smem_per_sm, d->smem_per_block, d->warp_size);
    }
    fa_buf_puts(b, "]}");
}
