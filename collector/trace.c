/* collector/trace — the in-memory activity trace shared by every trace source. */
#include "collector.h"

#include <stdlib.h>
#include <string.h>

const char *fa_activity_kind_name(fa_activity_kind k)
{
    static const char *const names[] = {
        "kernel", "memcpy", "memset", "runtime", "driver", "cpu_op", "range", "sync", "overhead", "module", "python"};
    _Static_assert(sizeof names / sizeof names[0] == FA_ACT_KIND_COUNT, "names: one row per value");
    return (unsigned)k < FA_ACT_KIND_COUNT ? names[k] : "unknown";
}

/* The intern map hangs off the trace through a hidden header (names come from input files:
 * core's keyed map, no hash flooding); the strings live in the trace's arena. */
typedef struct fa_trace_impl {
    fa_trace pub;
    fa_intern *names;
} fa_trace_impl;

fa_trace *fa_trace_create(const char *source)
{
    fa_trace_impl *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->pub.arena = fa_arena_create(1 << 16);
    if (!t->pub.arena || !(t->names = fa_intern_create(t->pub.arena))) {
        fa_arena_free(t->pub.arena);
        free(t);
        return NULL;
    }
    t->pub.source = fa_trace_intern(&t->pub, source ? source : "unknown");
    return &t->pub;
}

void fa_trace_free(fa_trace *tr)
{
    if (!tr) return;
    fa_trace_impl *t = (fa_trace_impl *)tr;
    fa_intern_free(t->names);
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
    a.wait_record = a.wait_stream = -1;
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
    const void *stored = NULL;
    if (fa_intern_id(((fa_trace_impl *)tr)->names, s, n, NULL, &stored) < 0) return NULL;
    return stored;
}

size_t fa_trace_names_bytes(const fa_trace *t)
{
    /* the map's tables, and the strings: they live in the trace's arena, which holds nothing else */
    return fa_intern_bytes(((const fa_trace_impl *)t)->names) + fa_arena_used(t->arena);
}

const char *fa_trace_intern(fa_trace *t, const char *s)
{
    return s ? fa_trace_intern_n(t, s, strlen(s)) : NULL;
}
