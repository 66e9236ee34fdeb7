/* collector/trace — the in-memory activity trace shared by every trace source. */
#include "collector.h"

#include <stdlib.h>
#include <string.h>

const char *fa_activity_kind_name(fa_activity_kind k)
{
    static const char *const names[FA_ACT_KIND_COUNT] = {
        "kernel", "memcpy", "memset", "runtime", "driver", "cpu_op", "range", "sync", "overhead", "module"};
    return (unsigned)k < FA_ACT_KIND_COUNT ? names[k] : "unknown";
}

typedef struct intern_tab {
    const char **slots;
    size_t cap, n;
    uint64_t key[2]; /* random per trace: names come from input files (no hash flooding) */
} intern_tab;

/* The intern table hangs off the trace through a hidden header in the arena. */
typedef struct fa_trace_impl {
    fa_trace pub;
    intern_tab tab;
} fa_trace_impl;

fa_trace *fa_trace_create(const char *source)
{
    fa_trace_impl *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->pub.arena = fa_arena_create(1 << 16);
    if (!t->pub.arena) {
        free(t);
        return NULL;
    }
    fa_hash_key_random(t->tab.key);
    t->pub.source = fa_trace_intern(&t->pub, source ? source : "unknown");
    return &t->pub;
}

void fa_trace_free(fa_trace *tr)
{
    if (!tr) return;
    fa_trace_impl *t = (fa_trace_impl *)tr;
    free(t->tab.slots);
    free(tr->acts);
    fa_arena_free(tr->arena);
    free(t);
}

fa_activity fa_activity_init(fa_activity_kind kind)
{
    fa_activity a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.node = -1;
    a.iter = -1;
    a.device = -1;
    a.correlation = -1;
    a.external_id = -1;
    a.occupancy = -1.0f;
    return a;
}

fa_activity *fa_trace_add(fa_trace *t, const fa_activity *a)
{
    if (t->n_acts == t->cap_acts) {
        size_t nc = t->cap_acts ? t->cap_acts * 2 : 1024;
        fa_activity *p = realloc(t->acts, nc * sizeof *p);
        if (!p) return NULL;
        t->acts = p;
        t->cap_acts = nc;
    }
    t->acts[t->n_acts] = *a;
    return &t->acts[t->n_acts++];
}

const char *fa_trace_intern_n(fa_trace *tr, const char *s, size_t n)
{
    if (!s) return NULL;
    fa_trace_impl *t = (fa_trace_impl *)tr;
    intern_tab *tab = &t->tab;
    if ((tab->n + 1) * 2 > tab->cap) {
        size_t nc = tab->cap ? tab->cap * 2 : 256;
        const char **slots = calloc(nc, sizeof *slots);
        if (!slots) return NULL;
        for (size_t i = 0; i < tab->cap; i++) {
            if (!tab->slots[i]) continue;
            size_t h = fa_hash64_keyed(tab->key, tab->slots[i], strlen(tab->slots[i])) & (nc - 1);
            while (slots[h]) h = (h + 1) & (nc - 1);
            slots[h] = tab->slots[i];
        }
        free(tab->slots);
        tab->slots = slots;
        tab->cap = nc;
    }
    size_t h = fa_hash64_keyed(tab->key, s, n) & (tab->cap - 1);
    while (tab->slots[h]) {
        if (strncmp(tab->slots[h], s, n) == 0 && tab->slots[h][n] == 0) return tab->slots[h];
        h = (h + 1) & (tab->cap - 1);
    }
    char *c = fa_arena_strndup(tr->arena, s, n);
    if (!c) return NULL;
    tab->slots[h] = c;
    tab->n++;
    return c;
}

const char *fa_trace_intern(fa_trace *t, const char *s)
{
    return s ? fa_trace_intern_n(t, s, strlen(s)) : NULL;
}
