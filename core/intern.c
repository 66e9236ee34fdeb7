/* core/intern — the keyed intern map: byte strings (names from input files, tuples of ids) to
 * dense ids, open addressing over SipHash-1-3 under a key drawn once per process. */
#include "core.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct fa_intern {
    fa_arena *ar;       /* key copies */
    fa_arena *own;      /* ar when the map made it */
    int32_t *slots;     /* id + 1, 0 empty; cap a power of two, load <= 1/2 */
    size_t cap;
    const void **keys;  /* by id */
    uint32_t *lens;     /* by id */
    uint64_t *hashes;   /* by id (grows without rehashing the keys) */
    size_t n, cap_ids;
};

/* one key per process: tables built in one run stay comparable, and no input can predict it */
static uint64_t g_key[2];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void key_init(void)
{
    fa_hash_key_random(g_key);
}

fa_intern *fa_intern_create(fa_arena *keys_ar)
{
    pthread_once(&g_once, key_init);
    fa_intern *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    if (!keys_ar) {
        if (!(m->own = fa_arena_create(1 << 14))) {
            free(m);
            return NULL;
        }
        keys_ar = m->own;
    }
    m->ar = keys_ar;
    return m;
}

void fa_intern_free(fa_intern *m)
{
    if (!m) return;
    free(m->slots);
    free(m->keys);
    free(m->lens);
    free(m->hashes);
    fa_arena_free(m->own);
    free(m);
}

static bool grow_slots(fa_intern *m)
{
    size_t nc = m->cap ? m->cap * 2 : 256;
    int32_t *ns = calloc(nc, sizeof *ns);
    if (!ns) return false;
    for (size_t id = 0; id < m->n; id++) {
        size_t h = m->hashes[id] & (nc - 1);
        while (ns[h]) h = (h + 1) & (nc - 1);
        ns[h] = (int32_t)id + 1;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = nc;
    return true;
}

static bool grow_ids(fa_intern *m)
{
    size_t nc = m->cap_ids ? m->cap_ids * 2 : 64;
    const void **nk = realloc(m->keys, nc * sizeof *nk);
    if (nk) m->keys = nk;
    uint32_t *nl = realloc(m->lens, nc * sizeof *nl);
    if (nl) m->lens = nl;
    uint64_t *nh = realloc(m->hashes, nc * sizeof *nh);
    if (nh) m->hashes = nh;
    if (!nk || !nl || !nh) return false;
    m->cap_ids = nc;
    return true;
}

/* the slot holding key, or the empty slot where it would go */
static size_t probe(const fa_intern *m, uint64_t h, const void *key, size_t n)
{
    size_t i = h & (m->cap - 1);
    while (m->slots[i]) {
        int32_t id = m->slots[i] - 1;
        if (m->hashes[id] == h && m->lens[id] == n && !memcmp(m->keys[id], key, n)) return i;
        i = (i + 1) & (m->cap - 1);
    }
    return i;
}

int32_t fa_intern_id(fa_intern *m, const void *key, size_t n, bool *added, const void **stored)
{
    if (added) *added = false;
    if (n > UINT32_MAX || m->n >= INT32_MAX - 1) return -1;
    if ((m->n + 1) * 2 > m->cap && !grow_slots(m)) return -1;
    uint64_t h = fa_hash64_keyed(g_key, key, n);
    size_t i = probe(m, h, key, n);
    if (m->slots[i]) {
        int32_t id = m->slots[i] - 1;
        if (stored) *stored = m->keys[id];
        return id;
    }
    if (m->n == m->cap_ids && !grow_ids(m)) return -1;
    char *c = fa_arena_alloc(m->ar, n + 1);
    if (!c) return -1;
    memcpy(c, key, n);
    c[n] = 0;
    int32_t id = (int32_t)m->n++;
    m->keys[id] = c;
    m->lens[id] = (uint32_t)n;
    m->hashes[id] = h;
    m->slots[i] = id + 1;
    if (added) *added = true;
    if (stored) *stored = c;
    return id;
}

int32_t fa_intern_str(fa_intern *m, const char *s, bool *added, const char **stored)
{
    const void *st = NULL;
    int32_t id = fa_intern_id(m, s, strlen(s), added, &st);
    if (stored) *stored = st;
    return id;
}

int32_t fa_intern_find(const fa_intern *m, const void *key, size_t n)
{
    if (!m->cap) return -1;
    size_t i = probe(m, fa_hash64_keyed(g_key, key, n), key, n);
    return m->slots[i] ? m->slots[i] - 1 : -1;
}

size_t fa_intern_count(const fa_intern *m)
{
    return m->n;
}

size_t fa_intern_bytes(const fa_intern *m)
{
    return sizeof *m + m->cap * sizeof *m->slots + m->cap_ids * (sizeof *m->keys + sizeof *m->lens + sizeof *m->hashes) +
           (m->own ? fa_arena_used(m->own) : 0);
}
