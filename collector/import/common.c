/* collector/import/common — file-kind detection, UTF-8 repair and the kernel -> launch -> op
 * attribution both importers share. */
#include "collector/import/import-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

const char *fa_import_kind_name(fa_import_kind k)
{
    static const char *const names[] = {"unknown", "kineto-json",
                                                            "kineto-json-gz", "nsys-sqlite"};
    _Static_assert(sizeof names / sizeof names[0] == FA_IMPORT_KIND_COUNT, "names: one row per value");
    return (unsigned)k < FA_IMPORT_KIND_COUNT ? names[k] : "unknown";
}

static fa_import_kind detect_bytes(const unsigned char *hdr, size_t n)
{
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

static ssize_t read_full(int fd, void *buf, size_t n);

fa_import_kind fa_import_detect(const char *path)
{
    struct stat sb;
    /* only regular files: reading the first bytes of a pipe would consume them (a pipe goes
     * through fa_import_source_open, which keeps what it read) */
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return FA_IMPORT_UNKNOWN;
    /* O_NONBLOCK: swapped for a FIFO since the stat, it is not waited on */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return FA_IMPORT_UNKNOWN;
    unsigned char hdr[64];
    ssize_t n = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? read_full(fd, hdr, sizeof hdr) : -1;
    close(fd);
    return n < 0 ? FA_IMPORT_UNKNOWN : detect_bytes(hdr, (size_t)n);
}

/* ---- sources: files, pipes ------------------------------------------------------------- */

static ssize_t read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static bool write_full(int fd, const void *buf, size_t n)
{
    size_t put = 0;
    while (put < n) {
        ssize_t w = write(fd, (const char *)buf + put, n - put);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        put += (size_t)w;
    }
    return true;
}

fa_status fa_import_source_open(fa_ctx *ctx, const char *path, fa_import_source *src)
{
    memset(src, 0, sizeof *src);
    src->name = path;
    src->path = path;
    struct stat sb;
    if (stat(path, &sb) != 0) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: is a folder, not a trace", path);
    /* a named FIFO, a device or a socket is refused before open(2) could wait on it; an
     * anonymous pipe (/dev/stdin after `|`, `<(zcat trace.json.gz)`) is read */
    int in = -1;
    fa_status os = fa_open_input(ctx, path, FA_INPUT_PIPE_OK, &in);
    if (os) return os;
    if (fstat(in, &sb) != 0 || S_ISREG(sb.st_mode)) {
        close(in);
        src->bytes = (uint64_t)sb.st_size;
        return FA_OK;
    }
    /* a pipe: read once, into a private temporary file (0600, $TMPDIR or /tmp) that the
     * importers can read as often as they need (the Kineto importer's lenient second pass;
     * SQLite needs random access) */
    unsigned char hdr[64];
    ssize_t nh = read_full(in, hdr, sizeof hdr);
    if (nh < 0) {
        fa_status s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
        close(in);
        return s;
    }
    if (detect_bytes(hdr, (size_t)nh) == FA_IMPORT_UNKNOWN) {
        close(in);
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: not a recognised trace (expected Kineto JSON, gzip'd JSON or an Nsight Systems "
                            "SQLite export, judged by the first bytes)",
                            path);
    }
    /* the copy lives in a private folder held open and is reached through that descriptor
     * (fa_private_tmpdir), never by a name in $TMPDIR: in a folder others can write, a name
     * can be renamed over or linked between the copy and the import */
    size_t pl = PATH_MAX;
    char *tmp = malloc(pl), made[PATH_MAX];
    int dfd = -1;
    fa_status s = tmp ? fa_private_tmpdir(ctx, "fuse-advise-trace-", "trace", &dfd, tmp, pl, made, sizeof made)
                      : fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", path);
    int out = s ? -1 : openat(dfd, "trace", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (!s && out < 0) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot create a temporary copy in %s: %s", path, made, strerror(errno));
    if (s) {
        fa_private_tmpdir_remove(dfd, "trace", made);
        free(tmp);
        close(in);
        return s;
    }
    uint64_t total = 0;
    size_t cap = 1 << 20;
    unsigned char *buf = malloc(cap);
    if (!buf) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", path);
    if (!s && !write_full(out, hdr, (size_t)nh))
        s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot write its temporary copy in %s: %s", path, made, strerror(errno));
    total = (uint64_t)nh;
    while (!s) {
        ssize_t r = read_full(in, buf, cap);
        if (r < 0) {
            s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot read at byte %llu: %s", path, (unsigned long long)total,
                             strerror(errno));
            break;
        }
        if (r == 0) break;
        if (!write_full(out, buf, (size_t)r)) {
            s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot write its temporary copy in %s at byte %llu: %s", path, made,
                             (unsigned long long)total, strerror(errno));
            break;
        }
        total += (uint64_t)r;
    }
    free(buf);
    close(in);
    if (close(out) != 0 && !s)
        s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot write its temporary copy in %s: %s", path, made, strerror(errno));
    if (s) {
        fa_private_tmpdir_remove(dfd, "trace", made);
        free(tmp);
        return s;
    }
    src->spool = tmp;
    src->spool_dir_fd = dfd;
    snprintf(src->spool_dir, sizeof src->spool_dir, "%s", made);
    src->path = tmp;
    src->bytes = total;
    return FA_OK;
}

void fa_import_source_close(fa_import_source *src)
{
    if (!src) return;
    if (src->spool) {
        fa_private_tmpdir_remove(src->spool_dir_fd, "trace", src->spool_dir);
        free(src->spool);
    }
    memset(src, 0, sizeof *src);
}

fa_status fa_import_file(fa_ctx *ctx, const char *path, const fa_import_opts *opts, fa_trace **out,
                         fa_import_stats *stats)
{
    fa_import_source src;
    fa_status s = fa_import_source_open(ctx, path, &src);
    if (s) return s;
    const char *name = opts && opts->name ? opts->name : path;
    switch (fa_import_detect(src.path)) {
    case FA_IMPORT_KINETO_JSON:
    case FA_IMPORT_KINETO_JSON_GZ: s = fa__import_kineto_src(ctx, src.path, name, src.bytes, opts, out, stats); break;
    case FA_IMPORT_NSYS_SQLITE: s = fa__import_nsys_src(ctx, src.path, name, src.bytes, out, stats); break;
    default:
        s = fa_ctx_error(ctx, FA_ERR_INPUT,
                         "%s: not a recognised trace (expected Kineto JSON, gzip'd JSON or an "
                         "Nsight Systems SQLite export, judged by the first bytes)",
                         name);
        break;
    }
    fa_import_source_close(&src);
    return s;
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

static void put_escaped_byte(fa_buf *b, unsigned char c)
{
    static const char hx[] = "0123456789ABCDEF";
    char e[5] = {(char)0xEF, (char)0xBF, (char)0xBD, hx[c >> 4], hx[c & 15]};
    fa_buf_append(b, e, 5);
}

int fa__name_clean(const char *str, size_t n, fa_buf *b)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    for (uint64_t w; i + 8 <= n; i += 8) { /* ASCII without NUL: 8 bytes at a time */
        memcpy(&w, s + i, 8);
        uint64_t zero = (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
        if ((w & 0x8080808080808080ull) | zero) break;
    }
    while (i < n && s[i] < 0x80 && s[i] != 0) i++;
    if (i == n) return 0;
    /* is anything to change? (valid UTF-8, no NUL, no U+FFFD: nothing) */
    int flags = 0;
    for (size_t j = i; j < n;) {
        if (s[j] == 0) {
            flags |= FA_NAME_NUL;
            j++;
            continue;
        }
        size_t l = utf8_seq(s, j, n);
        if (!l) {
            flags |= FA_NAME_BAD_UTF8;
            j++;
            continue;
        }
        if (l == 3 && s[j] == 0xEF && s[j + 1] == 0xBF && s[j + 2] == 0xBD) flags |= FA_NAME_FFFD;
        j += l;
    }
    if (!flags) return 0;
    fa_buf_reset(b);
    fa_buf_append(b, s, i);
    for (size_t j = i; j < n;) {
        if (s[j] == 0) {
            put_escaped_byte(b, 0);
            j++;
            continue;
        }
        size_t l = utf8_seq(s, j, n);
        if (!l) {
            put_escaped_byte(b, s[j]);
            j++;
            continue;
        }
        if (l == 3 && s[j] == 0xEF && s[j + 1] == 0xBF && s[j + 2] == 0xBD)
            fa_buf_append(b, "\xEF\xBF\xBD\xEF\xBF\xBD", 6);
        else
            fa_buf_append(b, s + j, l);
        j += l;
    }
    return flags;
}

void fa__name_to_cbuf(const char *s, size_t n, char *out, size_t cap)
{
    if (!cap) return;
    fa_buf b;
    fa_buf_init(&b);
    if (fa__name_clean(s, n, &b)) {
        s = b.oom ? "" : b.data;
        n = b.oom ? 0 : b.len;
    }
    size_t l = n < cap - 1 ? n : cap - 1;
    if (l < n) /* cut at a character boundary, never inside a UTF-8 sequence */
        while (l > 0 && ((unsigned char)s[l] & 0xC0) == 0x80) l--;
    memcpy(out, s, l);
    out[l] = 0;
    fa_buf_free(&b);
}

/* ---- times ------------------------------------------------------------------------------ */

void fa__import_place_times(fa_trace *t, fa_import_stats *st, int64_t base)
{
    int64_t mn = 0, mx = 0;
    size_t w = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        fa_activity a = t->acts[i];
        int64_t s0 = (int64_t)a.start_ns, e0 = (int64_t)a.end_ns; /* signed until placed */
        if (base && (s0 > INT64_MAX - base || e0 > INT64_MAX - base)) {
            st->n_bad_records++; /* the absolute time does not fit in int64 ns */
            continue;
        }
        s0 += base, e0 += base;
        if (e0 < s0) e0 = s0; /* importers clamp negative durations before (counted there) */
        if (s0 < 0) st->n_negative_times++;
        if (s0 < mn) mn = s0;
        if (e0 > mx) mx = e0;
        a.start_ns = (uint64_t)s0;
        a.end_ns = (uint64_t)e0;
        t->acts[w++] = a;
    }
    t->n_acts = w;
    if (mn >= 0) return;
    uint64_t shift = (uint64_t)(-(mn + 1)) + 1; /* -mn without overflow at INT64_MIN */
    st->time_shift_ns = shift;
    /* the shifted span must still fit int64 ns (the database stores int64): records that would
     * end past it are dropped as bad (only a trace spanning 292 years gets here) */
    bool span_ok = (uint64_t)mx + shift <= (uint64_t)INT64_MAX;
    w = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        fa_activity *a = &t->acts[i];
        uint64_t s1 = a->start_ns + shift, e1 = a->end_ns + shift; /* two's complement: s0 - mn */
        if (!span_ok && e1 > (uint64_t)INT64_MAX) {
            st->n_bad_records++;
            continue;
        }
        a->start_ns = s1;
        a->end_ns = e1;
        t->acts[w++] = *a;
    }
    t->n_acts = w;
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

/* launches by (pid if pid-local, correlation, start, pid, index): the launches sharing a
 * correlation id (in one process when pid-local) are contiguous and in time order */
static int launch_cmp(const void *pa, const void *pb, void *arg)
{
    const sortctx *c = arg;
    int32_t ia = *(const int32_t *)pa, ib = *(const int32_t *)pb;
    const fa_activity *a = &c->acts[ia], *b = &c->acts[ib];
    if (c->pid_local && a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->correlation != b->correlation) return a->correlation < b->correlation ? -1 : 1;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
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

static int cmp_i64_asc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A GPU record whose enclosing op is found by time: the innermost enclosing record on the
 * launch's (pid, tid) whose [start, end] contains the launch's start. */
typedef struct encl_query {
    int64_t pid, tid;
    uint64_t ts;
    int32_t gpu; /* record index */
} encl_query;

/* ---- frame stacks ---- */

static bool is_frame(const fa_activity *a)
{
    if (a->kind == FA_ACT_CPU_OP || a->kind == FA_ACT_MODULE || a->kind == FA_ACT_PYFRAME) return true;
    /* host ranges (user annotations, NVTX), but not ProfilerStep#N (a different name per step) */
    return a->kind == FA_ACT_RANGE && a->device < 0 && !(a->name && !strncmp(a->name, "ProfilerStep#", 13));
}

static int frame_cmp(const void *pa, const void *pb, void *arg)
{
    const fa_activity *acts = arg;
    int32_t ia = *(const int32_t *)pa, ib = *(const int32_t *)pb;
    const fa_activity *a = &acts[ia], *b = &acts[ib];
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
    if (a->end_ns != b->end_ns) return a->end_ns > b->end_ns ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

enum { STACK_DEPTH = 24, MAX_CAPTURES = 256 };

static bool is_graph_launch(const fa_activity *a)
{
    return a->name && (strstr(a->name, "GraphLaunch") || strstr(a->name, "graphLaunch"));
}

/* The innermost frame on (pid, tid) containing ts, as a record index, -1 none: a cpu op only
 * (cpu_op_only: not a module or range frame), else any frame but a Python source frame (a cpu op,
 * an nn.Module scope or a host range: a user annotation, NVTX). */
static int32_t frame_at(const fa_activity *acts, const int32_t *fr, const int32_t *parent, size_t nf, int64_t pid, int64_t tid,
                        uint64_t ts, bool cpu_op_only)
{
    size_t lo = 0, hi = nf;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const fa_activity *a = &acts[fr[mid]];
        bool le = a->pid < pid || (a->pid == pid && (a->tid < tid || (a->tid == tid && a->start_ns <= ts)));
        if (le) lo = mid + 1;
        else hi = mid;
    }
    int32_t p = (int32_t)lo - 1;
    if (p < 0 || acts[fr[p]].pid != pid || acts[fr[p]].tid != tid) return -1;
    for (int steps = 0; p >= 0 && steps < 256; steps++, p = parent[p]) {
        const fa_activity *a = &acts[fr[p]];
        if (a->end_ns >= ts && (cpu_op_only ? a->kind == FA_ACT_CPU_OP : a->kind != FA_ACT_PYFRAME)) return fr[p];
    }
    return -1;
}

/* a Python frame of the user's code, not PyTorch's own nor the standard library's plumbing */
static bool is_user_source(const char *name)
{
    static const char *const skip[] = {"torch/", "contextlib.py", "functools.py", "threading.py", "runpy.py",
                                       "typing.py", "abc.py", NULL};
    if (!name || name[0] == '<' || strstr(name, "/torch/")) return false;
    for (const char *const *k = skip; *k; k++)
        if (!strncmp(name, *k, strlen(*k)) || strstr(name, *k) == name) return false;
    const char *slash = strrchr(name, '/');
    for (const char *const *k = skip + 1; *k; k++)
        if (slash && !strncmp(slash + 1, *k, strlen(*k))) return false;
    return true;
}

typedef struct gk_ref {
    int32_t launch, kernel;
    uint64_t start;
} gk_ref;

static int gk_cmp(const void *pa, const void *pb)
{
    const gk_ref *a = pa, *b = pb;
    if (a->launch != b->launch) return a->launch < b->launch ? -1 : 1;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    return (a->kernel > b->kernel) - (a->kernel < b->kernel);
}

/* Frames and graph replays, after attribution. launch_of[i] / op_of[i]: record index of GPU
 * record i's launch call / op, -1 none.
 *
 * Stacks: each GPU record whose op is known gets the frames around that op, outermost first,
 * " > " between (cpu ops, nn.Module scopes, user / NVTX ranges on its thread, not ProfilerStep#N):
 * the pattern recognisers read module names there. Innermost STACK_DEPTH frames at most; memo per
 * frame; O(n log n). Python source frames are not in the stack text: the innermost one of the
 * user's code (not torch's) is the record's source line.
 *
 * Graphs: kernels launched by cudaGraphLaunch / hipGraphLaunch are replays of a captured graph:
 * flagged FA_ACTF_GRAPH, node_name the op around the launch call (CUDAGraph::replay or the
 * user's). When the capture is in the trace — kernel launch calls between cudaStreamBeginCapture
 * and cudaStreamEndCapture on one thread that no GPU record links to — a replay whose kernel
 * count equals a capture's launch count (the latest such capture before it) maps its k-th kernel
 * (by start) to the k-th captured launch: op_type becomes the cpu op that launch ran under. */
static fa_status import_frames(fa_ctx *ctx, fa_trace *t, const int32_t *launch_of, int32_t *op_of)
{
    size_t n = t->n_acts, nf = 0;
    fa_activity *acts = t->acts;
    bool any_op = false, any_graph = false;
    for (size_t i = 0; i < n; i++) {
        if (is_frame(&acts[i])) nf++;
        any_op |= op_of[i] >= 0;
        any_graph |= launch_of[i] >= 0 && is_graph_launch(&acts[launch_of[i]]);
    }
    if (!any_op && !any_graph) return FA_OK;
    int32_t *fr = malloc((nf + 1) * sizeof *fr), *parent = malloc((nf + 1) * sizeof *parent);
    int32_t *pos = malloc((n + 1) * sizeof *pos), *stk = malloc((nf + 1) * sizeof *stk);
    const char **memo = calloc(nf + 1, sizeof *memo);
    const char **memo_src = calloc(nf + 1, sizeof *memo_src);
    int32_t *rt = NULL, *cl = NULL;
    int64_t *linked = NULL;
    gk_ref *gk = NULL;
    fa_buf b;
    fa_buf_init(&b);
    fa_status s = FA_OK;
    if (!fr || !parent || !pos || !stk || !memo || !memo_src) goto nomem;
    nf = 0;
    for (size_t i = 0; i < n; i++) {
        pos[i] = -1;
        if (is_frame(&acts[i])) fr[nf++] = (int32_t)i;
    }
    qsort_r(fr, nf, sizeof *fr, frame_cmp, acts);
    size_t sp = 0;
    for (size_t p = 0; p < nf; p++) {
        const fa_activity *a = &acts[fr[p]];
        pos[fr[p]] = (int32_t)p;
        while (sp > 0) {
            const fa_activity *top = &acts[fr[stk[sp - 1]]];
            if (top->pid == a->pid && top->tid == a->tid && top->end_ns >= a->start_ns) break;
            sp--;
        }
        parent[p] = sp ? stk[sp - 1] : -1;
        stk[sp++] = (int32_t)p;
    }

    /* graph replays: flag, then map to the capture's ops where the capture is in the trace */
    if (any_graph) {
        size_t ng = 0, nl = 0;
        for (size_t i = 0; i < n; i++)
            if (launch_of[i] >= 0 && is_graph_launch(&acts[launch_of[i]])) ng++;
        gk = malloc((ng + 1) * sizeof *gk);
        linked = malloc((n + 1) * sizeof *linked);
        rt = malloc((n + 1) * sizeof *rt);
        cl = malloc((n + 1) * sizeof *cl);
        if (!gk || !linked || !rt || !cl) goto nomem;
        ng = 0;
        for (size_t i = 0; i < n; i++) {
            if (is_gpu(acts[i].kind) && acts[i].correlation >= 0 && launch_of[i] >= 0) linked[nl++] = acts[launch_of[i]].correlation;
            if (launch_of[i] >= 0 && is_graph_launch(&acts[launch_of[i]])) {
                acts[i].flags |= FA_ACTF_GRAPH;
                if (acts[i].kind == FA_ACT_KERNEL) gk[ng++] = (gk_ref){launch_of[i], (int32_t)i, acts[i].start_ns};
            }
        }
        qsort(linked, nl, sizeof *linked, cmp_i64_asc);
        /* captures: per thread in time order */
        size_t nrt = 0;
        for (size_t i = 0; i < n; i++)
            if (acts[i].kind == FA_ACT_RUNTIME || acts[i].kind == FA_ACT_DRIVER) rt[nrt++] = (int32_t)i;
        qsort_r(rt, nrt, sizeof *rt, frame_cmp, acts);
        struct { size_t first, n; uint64_t end; } caps[MAX_CAPTURES];
        int ncap = 0;
        size_t ncl = 0;
        bool in_cap = false;
        int64_t cpid = 0, ctid = 0;
        for (size_t k = 0; k < nrt; k++) {
            const fa_activity *a = &acts[rt[k]];
            if (in_cap && (a->pid != cpid || a->tid != ctid)) in_cap = false;
            if (a->name && strstr(a->name, "BeginCapture")) {
                if (ncap < MAX_CAPTURES) {
                    in_cap = true;
                    cpid = a->pid;
                    ctid = a->tid;
                    caps[ncap].first = ncl;
                    caps[ncap].n = 0;
                    caps[ncap].end = a->end_ns;
                    ncap++;
                }
            } else if (a->name && strstr(a->name, "EndCapture")) {
                if (in_cap) caps[ncap - 1].end = a->end_ns;
                in_cap = false;
            } else if (in_cap && a->correlation >= 0 && a->name && strstr(a->name, "aunch") && !is_graph_launch(a) &&
                       !bsearch(&a->correlation, linked, nl, sizeof *linked, cmp_i64_asc)) {
                cl[ncl++] = frame_at(acts, fr, parent, nf, a->pid, a->tid, a->start_ns, true);
                caps[ncap - 1].n++;
            }
        }
        qsort(gk, ng, sizeof *gk, gk_cmp);
        for (size_t g0 = 0; g0 < ng;) {
            size_t g1 = g0 + 1;
            while (g1 < ng && gk[g1].launch == gk[g0].launch) g1++;
            const fa_activity *L = &acts[gk[g0].launch];
            int c = -1; /* the latest capture before this replay with as many launches */
            for (int k = 0; k < ncap; k++)
                if (caps[k].n == g1 - g0 && caps[k].end <= L->start_ns) c = k;
            /* what the replay was launched under: the op around cudaGraphLaunch, else the innermost
             * frame there (a user range: sglang's step[DECODE bs=32] holds its hipGraphLaunch) */
            int32_t under = -1;
            if (!acts[gk[g0].kernel].node_name && !acts[gk[g0].kernel].op_type)
                under = frame_at(acts, fr, parent, nf, L->pid, L->tid, L->start_ns, false);
            for (size_t k = g0; k < g1; k++) {
                fa_activity *g = &acts[gk[k].kernel];
                if (!g->node_name) g->node_name = g->op_type;
                if (!g->node_name && under >= 0) g->node_name = acts[under].name;
                if (c >= 0) {
                    int32_t op = cl[caps[c].first + (k - g0)];
                    if (op >= 0) {
                        g->op_type = acts[op].name;
                        op_of[gk[k].kernel] = op; /* the capture's op frames the stack */
                        g->shapes = acts[op].shapes;
                    }
                }
            }
            g0 = g1;
        }
    }

    for (size_t i = 0; i < n && !s; i++) {
        if (op_of[i] < 0 || pos[op_of[i]] < 0) continue;
        int32_t p = pos[op_of[i]];
        if (!memo[p]) {
            int32_t chain[STACK_DEPTH];
            int depth = 0;
            for (int32_t q = p, walked = 0; q >= 0 && depth < STACK_DEPTH && walked < 512; q = parent[q], walked++) {
                const fa_activity *f = &acts[fr[q]];
                if (f->kind != FA_ACT_PYFRAME) chain[depth++] = q;
                else if (!memo_src[p] && is_user_source(f->name)) memo_src[p] = f->name;
            }
            fa_buf_reset(&b);
            for (int k = depth - 1; k >= 0; k--) {
                if (k != depth - 1) fa_buf_puts(&b, " > ");
                const char *nm = acts[fr[chain[k]]].name;
                fa_buf_puts(&b, nm ? nm : "?");
            }
            if (b.oom || !(memo[p] = fa_trace_intern_n(t, b.data ? b.data : "", b.len))) goto nomem;
        }
        acts[i].stack = memo[p];
        acts[i].source = memo_src[p];
    }
    goto done;
nomem:
    s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory building cpu-op stacks for %zu records", n);
done:
    free(fr);
    free(parent);
    free(pos);
    free(stk);
    free(memo);
    free(memo_src);
    free(rt);
    free(cl);
    free(linked);
    free(gk);
    fa_buf_free(&b);
    return s;
}

static int query_cmp(const void *pa, const void *pb)
{
    const encl_query *a = pa, *b = pb;
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return (a->gpu > b->gpu) - (a->gpu < b->gpu);
}

fa_status fa__import_attribute(fa_ctx *ctx, fa_trace *t, fa_import_stats *st, bool pid_local,
                               fa_activity_kind encl_kind, bool use_external_id)
{
    return fa__import_attribute_ex(ctx, t, st, pid_local, encl_kind, use_external_id, 0, true, NULL);
}

fa_status fa__import_attribute_ex(fa_ctx *ctx, fa_trace *t, fa_import_stats *st, bool pid_local,
                                  fa_activity_kind encl_kind, bool use_external_id, size_t gpu_from, bool count_dups,
                                  int32_t **launch_out)
{
    fa_activity *acts = t->acts;
    size_t n = t->n_acts;
    if (n > INT32_MAX) return fa_ctx_error(ctx, FA_ERR_NOMEM, "trace has over 2^31 records");
    size_t n_launch = 0, n_encl = 0, n_gpu = 0;
    for (size_t i = 0; i < n; i++) {
        if ((acts[i].kind == FA_ACT_RUNTIME || acts[i].kind == FA_ACT_DRIVER) && acts[i].correlation >= 0) n_launch++;
        if (acts[i].kind == encl_kind) n_encl++;
        if (is_gpu(acts[i].kind)) n_gpu++;
    }
    /* Memory: 4 bytes per launch, 16-20 per enclosing record, 4 per record, 32 per GPU record
     * needing a time lookup (sorted index arrays, no hash tables: the trace itself dominates).
     * Time: O(n log n) whatever the input — no scan over all launches sharing a correlation id
     * and no walk up a chain of nested ops per kernel (both were quadratic on adversarial
     * traces: a million launches with one id, ops nested a million deep). */
    fa_status s = FA_OK;
    int32_t *lord = malloc((n_launch + 1) * sizeof *lord);
    int32_t *ord = malloc((n_encl + 1) * sizeof *ord);
    int32_t *eord = malloc((n_encl + 1) * sizeof *eord); /* the External id index, then the sweep stack */
    uint32_t *gpu_count = calloc(n_encl + 1, sizeof *gpu_count);
    int32_t *gop = malloc((n + 1) * sizeof *gop);
    int32_t *glaunch = malloc((n + 1) * sizeof *glaunch);
    encl_query *qs = malloc((n_gpu + 1) * sizeof *qs);
    int64_t *pids = NULL;
    if (!lord || !ord || !eord || !gpu_count || !gop || !glaunch || !qs) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory attributing %zu trace records", n);
        goto done;
    }
    sortctx sc = {acts, ord, pid_local};

    /* launch calls sorted by (pid, correlation, start) */
    size_t nl = 0;
    for (size_t i = 0; i < n; i++) {
        gop[i] = -1;
        glaunch[i] = -1;
        if ((acts[i].kind == FA_ACT_RUNTIME || acts[i].kind == FA_ACT_DRIVER) && acts[i].correlation >= 0)
            lord[nl++] = (int32_t)i;
    }
    qsort_r(lord, nl, sizeof *lord, launch_cmp, &sc);
    /* duplicates: launches sharing a correlation id within one process (groups are contiguous;
     * pid-local groups are one process already, other groups are counted per pid) */
    for (size_t g0 = 0; g0 < nl && count_dups;) {
        size_t g1 = g0 + 1;
        while (g1 < nl && acts[lord[g1]].correlation == acts[lord[g0]].correlation &&
               (!pid_local || acts[lord[g1]].pid == acts[lord[g0]].pid))
            g1++;
        if (g1 - g0 > 1) {
            if (pid_local) {
                st->n_duplicate_correlations += g1 - g0 - 1;
            } else {
                int64_t *np = realloc(pids, (g1 - g0) * sizeof *np);
                if (!np) {
                    s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory attributing %zu trace records", n);
                    goto done;
                }
                pids = np;
                for (size_t k = g0; k < g1; k++) pids[k - g0] = acts[lord[k]].pid;
                qsort(pids, g1 - g0, sizeof *pids, cmp_i64_asc);
                for (size_t k = 1; k < g1 - g0; k++)
                    if (pids[k] == pids[k - 1]) st->n_duplicate_correlations++;
            }
        }
        g0 = g1;
    }

    /* enclosing records: sorted per thread, outer first at equal starts */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (acts[i].kind == encl_kind) ord[m++] = (int32_t)i;
    qsort_r(ord, m, sizeof *ord, encl_cmp, &sc);
    size_t ne = 0;
    if (use_external_id) {
        for (size_t p = 0; p < m; p++)
            if (acts[ord[p]].external_id > 0) eord[ne++] = (int32_t)p;
        qsort_r(eord, ne, sizeof *eord, ext_cmp, &sc);
    }

    size_t nq = 0;
    for (size_t i = gpu_from; i < n; i++) {
        fa_activity *g = &acts[i];
        if (!is_gpu(g->kind)) continue;
        int32_t li = -1;
        if (g->correlation >= 0 && nl) {
            /* the group of launches with g's correlation (and pid when pid-local) */
            size_t lo = 0, hi = nl;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const fa_activity *a = &acts[lord[mid]];
                bool lt = pid_local && a->pid != g->pid ? a->pid < g->pid : a->correlation < g->correlation;
                if (lt) lo = mid + 1;
                else hi = mid;
            }
            size_t g0 = lo;
            hi = nl;
            while (lo < hi) { /* end of the group */
                size_t mid = lo + (hi - lo) / 2;
                const fa_activity *a = &acts[lord[mid]];
                bool le = pid_local && a->pid != g->pid ? a->pid < g->pid : a->correlation <= g->correlation;
                if (le) lo = mid + 1;
                else hi = mid;
            }
            size_t g1 = lo;
            if (g0 < g1) {
                /* the latest launch not after the GPU record (the first of equal starts), else
                 * the earliest: two binary searches over the group's starts */
                lo = g0, hi = g1;
                while (lo < hi) {
                    size_t mid = lo + (hi - lo) / 2;
                    if (acts[lord[mid]].start_ns <= g->start_ns) lo = mid + 1;
                    else hi = mid;
                }
                if (lo == g0) {
                    li = lord[g0];
                } else {
                    uint64_t best = acts[lord[lo - 1]].start_ns;
                    size_t a0 = g0, a1 = lo - 1;
                    while (a0 < a1) {
                        size_t mid = a0 + (a1 - a0) / 2;
                        if (acts[lord[mid]].start_ns < best) a0 = mid + 1;
                        else a1 = mid;
                    }
                    li = lord[a0];
                }
            }
        }
        const fa_activity *L = li >= 0 ? &acts[li] : NULL;
        glaunch[i] = li;
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
        /* an External id names the op only where that op is around the launch call (same thread,
         * its interval holding the call's start): some Kineto versions wrote a kernel's
         * correlation id as its External id, which then names an unrelated op (param's
         * resnet_kineto: a forward add_'s kernel named ConvolutionBackward0). Elsewhere the
         * launch's time decides, as for a record with no External id. */
        if (ep >= 0 && L) {
            const fa_activity *a = &acts[ord[ep]];
            if (a->tid != L->tid || a->start_ns > L->start_ns || a->end_ns < L->start_ns) {
                ep = -1;
                st->n_extid_mismatch++;
            }
        }
        if (ep >= 0) gop[i] = ep;
        else if (L && m) qs[nq++] = (encl_query){L->pid, L->tid, L->start_ns, (int32_t)i};
    }

    /* time containment, offline: queries and enclosing records both in (pid, tid, time) order,
     * one sweep with a stack of open records (each pushed and popped once) */
    qsort(qs, nq, sizeof *qs, query_cmp);
    {
        int32_t *stack = eord; /* the External id index is no longer needed */
        size_t sp = 0, p = 0;
        int64_t cur_pid = 0, cur_tid = 0;
        bool have_cur = false;
        for (size_t k = 0; k < nq; k++) {
            const encl_query *q = &qs[k];
            if (!have_cur || q->pid != cur_pid || q->tid != cur_tid) {
                have_cur = true;
                cur_pid = q->pid;
                cur_tid = q->tid;
                sp = 0;
                /* skip records of earlier threads */
                size_t lo = p, hi = m;
                while (lo < hi) {
                    size_t mid = lo + (hi - lo) / 2;
                    const fa_activity *a = &acts[ord[mid]];
                    if (a->pid < q->pid || (a->pid == q->pid && a->tid < q->tid)) lo = mid + 1;
                    else hi = mid;
                }
                p = lo;
            }
            while (p < m) {
                const fa_activity *a = &acts[ord[p]];
                if (a->pid != q->pid || a->tid != q->tid || a->start_ns > q->ts) break;
                while (sp > 0 && acts[ord[stack[sp - 1]]].end_ns < a->start_ns) sp--;
                stack[sp++] = (int32_t)p;
                p++;
            }
            while (sp > 0 && acts[ord[stack[sp - 1]]].end_ns < q->ts) sp--;
            if (sp > 0) gop[q->gpu] = stack[sp - 1];
        }
    }

    for (size_t i = 0; i < n; i++) {
        int32_t ep = gop[i];
        if (ep < 0) continue;
        fa_activity *g = &acts[i];
        const fa_activity *e = &acts[ord[ep]];
        g->op_type = e->name;
        g->node_name = e->name;
        if (glaunch[i] >= 0) {
            acts[glaunch[i]].op_type = e->name;
            acts[glaunch[i]].node_name = e->name;
        }
        st->n_attributed++;
        if (g->kind == FA_ACT_KERNEL) gpu_count[ep]++;
    }
    /* estimated bytes and the op's shapes: only where the op launched exactly one kernel (else
     * each kernel would be charged the whole op's traffic) */
    for (size_t i = 0; i < n; i++) {
        fa_activity *g = &acts[i];
        if (g->kind != FA_ACT_KERNEL || gop[i] < 0) continue;
        const fa_activity *e = &acts[ord[gop[i]]];
        if (gpu_count[gop[i]] != 1) continue;
        if ((e->flags & FA_ACTF_ESTIMATED_BYTES) && g->bytes_read == 0 && g->bytes_written == 0) {
            g->bytes_read = e->bytes_read;
            g->bytes_written = e->bytes_written;
            g->flags |= FA_ACTF_ESTIMATED_BYTES;
        }
        if (!g->shapes) g->shapes = e->shapes;
    }
    for (size_t i = 0; i < n; i++) gop[i] = gop[i] >= 0 ? ord[gop[i]] : -1; /* the op's record index */
    s = import_frames(ctx, t, glaunch, gop);
    t->n_orphans = st->n_orphans;
    t->n_clock_inversions = st->n_clock_inversions;
    if (!s && launch_out) {
        *launch_out = glaunch;
        glaunch = NULL;
    }
done:
    free(lord);
    free(ord);
    free(eord);
    free(gpu_count);
    free(gop);
    free(glaunch);
    free(qs);
    free(pids);
    return s;
}

void fa__import_count(const fa_trace *t, fa_import_stats *st)
{
    st->n_kernels = st->n_memcpy = st->n_memset = st->n_runtime = st->n_driver = 0;
    st->n_cpu_ops = st->n_ranges = st->n_sync = st->n_estimated_bytes = st->n_frames = 0;
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
        case FA_ACT_MODULE:
        case FA_ACT_PYFRAME: st->n_frames++; break;
        default: break;
        }
        if (a->flags & FA_ACTF_ESTIMATED_BYTES) st->n_estimated_bytes++;
    }
    st->no_gpu_activity = st->n_kernels + st->n_memcpy + st->n_memset == 0;
}

/* ---- stats as JSON ---------------------------------------------------------------------- */

void fa_import_stats_json(const fa_import_stats *st, fa_buf *b)
{
    fa_buf_puts(b, "{\"kind\":");
    fa_json_str_or_empty(b, fa_import_kind_name(st->kind));
    fa_buf_puts(b, ",\"schema\":");
    fa_json_str_or_empty(b, st->schema);
    const struct { const char *k; uint64_t v; } nums[] = {
        {"file_bytes", st->file_bytes}, {"input_bytes", st->input_bytes}, {"events", st->n_events},
        {"kernels", st->n_kernels}, {"memcpy", st->n_memcpy}, {"memset", st->n_memset},
        {"runtime", st->n_runtime}, {"driver", st->n_driver}, {"cpu_ops", st->n_cpu_ops},
        {"ranges", st->n_ranges}, {"sync", st->n_sync}, {"frames", st->n_frames}, {"skipped", st->n_skipped},
        {"orphans", st->n_orphans}, {"clock_inversions", st->n_clock_inversions},
        {"duplicate_correlations", st->n_duplicate_correlations}, {"extid_mismatch", st->n_extid_mismatch},
        {"attributed", st->n_attributed},
        {"estimated_bytes", st->n_estimated_bytes}, {"negative_durations", st->n_negative_durations},
        {"bad_records", st->n_bad_records}, {"first_bad_record_offset", st->first_bad_record_offset},
        {"negative_times", st->n_negative_times}, {"time_shift_ns", st->time_shift_ns},
        {"bad_utf8", st->n_bad_utf8}, {"nul_names", st->n_nul_names}, {"first_bad_utf8_offset", st->first_bad_utf8_offset},
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
        fa_json_str_or_empty(b, d->name);
        fa_buf_printf(b, ",\"sm_count\":%d,\"cc_major\":%d,\"cc_minor\":%d,\"total_mem_bytes\":%llu,"
                         "\"max_threads_per_sm\":%d,\"regs_per_sm\":%d,\"smem_per_sm\":%d,"
                         "\"smem_per_block\":%d,\"warp_size\":%d}",
                      d->sm_count, d->cc_major, d->cc_minor, (unsigned long long)d->total_mem_bytes,
                      d->max_threads_per_sm, d->regs_per_sm, d->smem_per_sm, d->smem_per_block, d->warp_size);
    }
    fa_buf_puts(b, "]}");
}
