/* core/blob — reference-counted byte buffers (heap, a mapped file, or a slice of either) with
 * their derived copies: how a model's weights are held once and shared by every graph and
 * executor of a run (docs/runtime.md "Weights once in memory"). */
#include "core.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { BLOB_HEAP, BLOB_MAP, BLOB_SLICE };

typedef struct derived {
    unsigned char *key;
    size_t key_len;
    void *data;
    size_t nbytes;
    int readers;          /* live fa_blob_ref_reader references to this copy (guarded by the blob's mu) */
} derived;

struct fa_blob {
    atomic_long refs;
    int kind;
    unsigned char *data;
    size_t nbytes;
    void *alloc;          /* BLOB_HEAP: what free() takes */
    void *map;            /* BLOB_MAP: the mapping */
    size_t map_len;
    fa_blob *parent;      /* BLOB_SLICE */
    pthread_mutex_t mu;   /* guards der */
    derived *der;
    int n_der, cap_der, made;
    int readers;          /* live references taken by readers of a derived copy (guarded by mu) */
    bool dropped;         /* BLOB_HEAP: plain bytes released by fa_blob_drop_plain */
};

static fa_blob *blob_new(int kind)
{
    fa_blob *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    atomic_init(&b->refs, 1);
    b->kind = kind;
    if (pthread_mutex_init(&b->mu, NULL) != 0) {
        free(b);
        return NULL;
    }
    return b;
}

fa_blob *fa_blob_alloc(size_t nbytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, nbytes ? nbytes : 64) != 0) return NULL;
    fa_blob *b = fa_blob_adopt(p, nbytes);
    return b;
}

fa_blob *fa_blob_adopt(void *data, size_t nbytes)
{
    fa_blob *b = blob_new(BLOB_HEAP);
    if (!b) {
        free(data);
        return NULL;
    }
    b->alloc = b->data = data;
    b->nbytes = nbytes;
    return b;
}

/* ---- a mapped file truncated under us ----
 * A page of a MAP_PRIVATE mapping past the file's new end raises SIGBUS when read (mmap(2)): an
 * external-data file truncated by another process while a run reads its weights killed the
 * process with "Bus error" and no word of which file. Every mapping is registered here, and a
 * SIGBUS handler (installed with the first mapping) that finds the faulting address in one writes
 * one line naming the file and the byte, and exits 1; any other SIGBUS gets the default action
 * again. The handler only reads this table and calls write(2) and _exit(2) (async-signal-safe,
 * signal-safety(7)); entries are published with release stores and read with acquire loads. A run
 * stopped so is left `running` in its database until the next open marks it failed (docs/schema.md
 * "Run status"). */
enum { MAP_SLOTS = 1024, MAP_NAME = 240 };
static struct map_slot {
    atomic_uintptr_t start; /* 0: free */
    size_t len;
    char name[MAP_NAME];    /* printable ASCII only (others as '?'): it reaches the terminal */
} g_maps[MAP_SLOTS];
static pthread_once_t g_bus_once = PTHREAD_ONCE_INIT;
static atomic_int g_bus_said; /* one line even when several threads fault at once */
static struct sigaction g_bus_prev;

static void put_str(char *buf, size_t *n, size_t cap, const char *t)
{
    while (*t && *n + 1 < cap) buf[(*n)++] = *t++;
}

static void put_dec(char *buf, size_t *n, size_t cap, uint64_t v)
{
    char d[24];
    int k = 0;
    do d[k++] = (char)('0' + v % 10); while ((v /= 10) > 0);
    while (k > 0 && *n + 1 < cap) buf[(*n)++] = d[--k];
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    uintptr_t a = (uintptr_t)si->si_addr;
    for (int i = 0; i < MAP_SLOTS; i++) {
        uintptr_t st = atomic_load_explicit(&g_maps[i].start, memory_order_acquire);
        if (!st || a < st || a - st >= g_maps[i].len) continue;
        char msg[512];
        size_t n = 0;
        put_str(msg, &n, sizeof msg, "fuse-advise: error: ");
        put_str(msg, &n, sizeof msg, g_maps[i].name);
        put_str(msg, &n, sizeof msg, ": the file got shorter while it was in use (truncated or replaced by another process); byte ");
        put_dec(msg, &n, sizeof msg, (uint64_t)(a - st));
        put_str(msg, &n, sizeof msg, " of its ");
        put_dec(msg, &n, sizeof msg, (uint64_t)g_maps[i].len);
        put_str(msg, &n, sizeof msg, " mapped bytes is gone; stopped\n");
        if (atomic_exchange(&g_bus_said, 1) == 0) {
            ssize_t w = write(2, msg, n);
            (void)w;
        }
        _exit(1);
    }
    /* not one of ours: what would have happened without this handler */
    sigaction(sig, &g_bus_prev, NULL);
    raise(sig);
}

static void bus_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_bus_prev);
}

static void map_register(void *start, size_t len, const char *shown)
{
    pthread_once(&g_bus_once, bus_install);
    for (int i = 0; i < MAP_SLOTS; i++) {
        uintptr_t zero = 0;
        struct map_slot *m = &g_maps[i];
        if (atomic_load_explicit(&m->start, memory_order_relaxed)) continue;
        /* claim the slot with a placeholder, fill it, then publish the real start */
        if (!atomic_compare_exchange_strong(&m->start, &zero, (uintptr_t)1)) continue;
        size_t k = 0;
        for (const char *p = shown ? shown : "?"; *p && k + 1 < MAP_NAME; p++)
            m->name[k++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
        m->name[k] = 0;
        m->len = len;
        atomic_store_explicit(&m->start, (uintptr_t)start, memory_order_release);
        return;
    }
    /* more than MAP_SLOTS files mapped at once: this one's SIGBUS stays the default */
}

static void map_unregister(void *start)
{
    for (int i = 0; i < MAP_SLOTS; i++)
        if (atomic_load_explicit(&g_maps[i].start, memory_order_acquire) == (uintptr_t)start) {
            atomic_store_explicit(&g_maps[i].start, 0, memory_order_release);
            return;
        }
}

fa_status fa_blob_map_file(fa_ctx *ctx, int fd, const char *shown, fa_blob **out)
{
    struct stat st;
    if (fstat(fd, &st) != 0) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot stat: %s", shown, strerror(errno));
    if (!S_ISREG(st.st_mode)) return fa_ctx_error(ctx, FA_ERR_IO, "%s: not a regular file: cannot map it", shown);
    if (st.st_size == 0) { /* mmap refuses 0 bytes: an empty heap blob */
        fa_blob *b = fa_blob_alloc(0);
        if (!b) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", shown);
        *out = b;
        return FA_OK;
    }
    if ((uint64_t)st.st_size > SIZE_MAX) return fa_ctx_error(ctx, FA_ERR_IO, "%s: too large to map", shown);
    size_t len = (size_t)st.st_size;
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot map %zu bytes: %s", shown, len, strerror(errno));
    fa_blob *b = blob_new(BLOB_MAP);
    if (!b) {
        munmap(m, len);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", shown);
    }
    b->map = b->data = m;
    b->map_len = b->nbytes = len;
    map_register(m, len, shown);
    *out = b;
    return FA_OK;
}

fa_blob *fa_blob_slice(fa_blob *parent, size_t offset, size_t nbytes)
{
    if (!parent || offset > parent->nbytes || nbytes > parent->nbytes - offset) return NULL;
    fa_blob *b = blob_new(BLOB_SLICE);
    if (!b) return NULL;
    b->parent = fa_blob_ref(parent);
    b->data = parent->data + offset;
    b->nbytes = nbytes;
    return b;
}

const void *fa_blob_data(const fa_blob *b) { return b ? b->data : NULL; }
size_t fa_blob_size(const fa_blob *b) { return b ? b->nbytes : 0; }

static const fa_blob *root_of(const fa_blob *b)
{
    while (b && b->kind == BLOB_SLICE) b = b->parent;
    return b;
}

bool fa_blob_mapped(const fa_blob *b)
{
    const fa_blob *r = root_of(b);
    return r && r->kind == BLOB_MAP;
}

fa_blob *fa_blob_ref(fa_blob *b)
{
    if (b) atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
    return b;
}

/* The derived copy of b at data, or NULL; b->mu held. */
static derived *derived_at(const fa_blob *b, const void *data)
{
    for (int i = 0; i < b->n_der; i++)
        if (b->der[i].data == data) return &b->der[i];
    return NULL;
}

fa_blob *fa_blob_ref_reader(fa_blob *b, const void *data)
{
    if (!b) return NULL;
    pthread_mutex_lock(&b->mu);
    derived *d = derived_at(b, data);
    if (d) b->readers++, d->readers++;
    atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&b->mu);
    return b;
}

void fa_blob_unref_reader(fa_blob *b, const void *data)
{
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    derived *d = derived_at(b, data);
    if (d && d->readers > 0) b->readers--, d->readers--;
    pthread_mutex_unlock(&b->mu);
    fa_blob_unref(b);
}

bool fa_blob_drop_plain(fa_blob *b, int want_readers)
{
    if (!b || b->kind != BLOB_HEAP) return false;
    pthread_mutex_lock(&b->mu);
    bool ok = !b->dropped && b->n_der > 0 && want_readers > 0 && b->readers == want_readers &&
              atomic_load(&b->refs) == 1 + (long)b->readers;
    if (ok) {
        free(b->alloc);
        b->alloc = b->data = NULL;
        b->dropped = true;
    }
    pthread_mutex_unlock(&b->mu);
    return ok;
}

void fa_blob_unref(fa_blob *b)
{
    while (b) {
        if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
        for (int i = 0; i < b->n_der; i++) {
            free(b->der[i].key);
            free(b->der[i].data);
        }
        free(b->der);
        pthread_mutex_destroy(&b->mu);
        fa_blob *parent = b->kind == BLOB_SLICE ? b->parent : NULL;
        if (b->kind == BLOB_HEAP) free(b->alloc);
        else if (b->kind == BLOB_MAP) {
            map_unregister(b->map);
            munmap(b->map, b->map_len);
        }
        free(b);
        b = parent; /* a slice's parent loses its reference (iteratively: no deep recursion) */
    }
}

void fa_blob_release_pages(const fa_blob *b)
{
    const fa_blob *r = root_of(b);
    if (!r || r->kind != BLOB_MAP || !b->nbytes) return;
    long ps = sysconf(_SC_PAGESIZE);
    uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096;
    uintptr_t lo = (uintptr_t)b->data & ~(page - 1), hi = ((uintptr_t)b->data + b->nbytes + page - 1) & ~(page - 1);
    uintptr_t mlo = (uintptr_t)r->map, mhi = mlo + ((r->map_len + page - 1) & ~(page - 1));
    if (lo < mlo) lo = mlo;
    if (hi > mhi) hi = mhi;
    /* a private read-only file mapping never written: the pages are the page cache's, and a
     * later read maps them again (madvise(2), MADV_DONTNEED) */
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

fa_status fa_blob_derived(fa_ctx *ctx, fa_blob *b, const void *key, size_t key_len, size_t nbytes, fa_blob_make_fn make,
                          void *user, const void **out)
{
    pthread_mutex_lock(&b->mu);
    for (int i = 0; i < b->n_der; i++)
        if (b->der[i].key_len == key_len && !memcmp(b->der[i].key, key, key_len) && b->der[i].nbytes == nbytes) {
            *out = b->der[i].data;
            pthread_mutex_unlock(&b->mu);
            return FA_OK;
        }
    if (b->dropped) {
        pthread_mutex_unlock(&b->mu);
        return fa_ctx_error(ctx, FA_ERR_RUNTIME, "a derived copy of %zu bytes asked for after the plain bytes were released "
                                                 "(fa_blob_drop_plain)", nbytes);
    }
    fa_status s = FA_OK;
    void *dst = NULL;
    unsigned char *k = malloc(key_len ? key_len : 1);
    if (b->n_der == b->cap_der) {
        int nc = b->cap_der ? 2 * b->cap_der : 2;
        derived *nd = realloc(b->der, sizeof *nd * (size_t)nc);
        if (nd) {
            b->der = nd;
            b->cap_der = nc;
        }
    }
    if (!k || b->n_der == b->cap_der || posix_memalign(&dst, 64, nbytes ? nbytes : 64) != 0) {
        dst = NULL;
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "cannot allocate a derived copy of %zu bytes", nbytes);
    }
    if (!s) s = make(user, ctx, b->data, dst, nbytes);
    if (s) {
        free(k);
        free(dst);
        pthread_mutex_unlock(&b->mu);
        return s;
    }
    if (key_len) memcpy(k, key, key_len);
    b->der[b->n_der++] = (derived){k, key_len, dst, nbytes, 0};
    b->made++;
    *out = dst;
    pthread_mutex_unlock(&b->mu);
    return FA_OK;
}

size_t fa_blob_trim_derived(fa_blob *b)
{
    if (!b) return 0;
    size_t freed = 0;
    pthread_mutex_lock(&b->mu);
    if (!b->dropped) { /* with the plain bytes gone a copy is the only one left: kept */
        int k = 0;
        for (int i = 0; i < b->n_der; i++) {
            if (b->der[i].readers == 0) {
                freed += b->der[i].nbytes;
                free(b->der[i].key);
                free(b->der[i].data);
            } else b->der[k++] = b->der[i];
        }
        b->n_der = k;
    }
    pthread_mutex_unlock(&b->mu);
    return freed;
}

int fa_blob_derived_count(const fa_blob *b)
{
    if (!b) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&b->mu);
    int n = b->made;
    pthread_mutex_unlock((pthread_mutex_t *)&b->mu);
    return n;
}

void *fa_blob_take(fa_blob *b)
{
    if (!b || b->kind != BLOB_HEAP || b->data != b->alloc || atomic_load(&b->refs) != 1 || b->n_der) return NULL;
    void *p = b->alloc;
    pthread_mutex_destroy(&b->mu);
    free(b);
    return p;
}
