/* graph/fusion_rule — the one legality rule of a vertical fusion group, in pattern-class terms
 * (DESIGN.md "Fusion rules"), written so that both paths can ask it: trace advice (trace/) asks it
 * of every repeated kernel sequence today; the model path's advisor (advisor/) decides the same
 * question with its own code and can adopt this header. Members are offered in order:
 *  - elementwise, broadcast and injective ops join anywhere (a chain, or an epilogue);
 *  - a reduction may absorb elementwise prologue and epilogue inside its own reduction domain, so a
 *    group holds at most one domain (named patterns such as softmax, norms and attention are
 *    their own, decided by their recognisers);
 *  - a GEMM / convolution (out-elementwise-fusable) only as the anchor at the start: what follows
 *    becomes its epilogue; one later in a group is a library call in the middle;
 *  - anything opaque (a collective, a copy engine transfer, a kernel already fused by a compiler or
 *    library, an unknown kernel) never joins;
 *  - every member after the first reads what an earlier member wrote (producer -> consumer), when
 *    the caller can tell;
 * and the caller keeps a group to one stream (one device queue). Header only (static inline). */
#ifndef FA_GRAPH_FUSION_RULE_H
#define FA_GRAPH_FUSION_RULE_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/graph.h"

/* What a member may be in a group. */
typedef enum fa_fuse_role {
    FA_FUSE_MEMBER = 0,    /* elementwise / broadcast / injective */
    FA_FUSE_REDUCTION = 1, /* one reduction domain per group */
    FA_FUSE_ANCHOR = 2,    /* GEMM / convolution: first member only */
    FA_FUSE_BARRIER = 3,   /* never in a group */
    FA_FUSE_ROLE_COUNT
} fa_fuse_role;

static inline fa_fuse_role fa_fuse_role_of(fa_pattern p)
{
    switch (p) {
    case FA_PATTERN_ELEMWISE:
    case FA_PATTERN_BROADCAST:
    case FA_PATTERN_INJECTIVE: return FA_FUSE_MEMBER;
    case FA_PATTERN_REDUCTION: return FA_FUSE_REDUCTION;
    case FA_PATTERN_OUT_ELEMWISE_FUSABLE: return FA_FUSE_ANCHOR;
    default: return FA_FUSE_BARRIER;
    }
}

/* Why a member cannot join (a value that carries its sentence, fa_fuse_why_text). */
typedef enum fa_fuse_why {
    FA_FUSE_OK = 0,
    FA_FUSE_WHY_BARRIER,       /* opaque: never fused */
    FA_FUSE_WHY_ANCHOR_INSIDE, /* a GEMM / convolution after the first member */
    FA_FUSE_WHY_SECOND_DOMAIN, /* a reduction over a second domain */
    FA_FUSE_WHY_NOT_CONNECTED, /* reads nothing an earlier member wrote */
    FA_FUSE_WHY_COUNT
} fa_fuse_why;

static inline const char *fa_fuse_why_text(fa_fuse_why w)
{
    static const char *const t[] = {
        "legal",
        "an opaque kernel (a collective, a copy-engine transfer, an already fused or unknown kernel) never joins a fusion",
        "a GEMM or convolution can only be the anchor at the start of a fusion (its epilogue), never in the middle",
        "two reductions over different domains never fuse (only named patterns such as attention do)",
        "it reads nothing an earlier member wrote (no producer -> consumer edge)"};
    _Static_assert(sizeof t / sizeof t[0] == FA_FUSE_WHY_COUNT, "t: one row per value");
    return (unsigned)w < FA_FUSE_WHY_COUNT ? t[w] : "?";
}

/* A group being built: offer each member in order (fa_fuse_admit), take it when legal. */
typedef struct fa_fuse_group {
    int n;              /* members taken */
    bool has_domain;
    int64_t domain;     /* the reduction domain taken, when has_domain (the caller's key) */
} fa_fuse_group;

/* May a member of this role join g? domain: its reduction domain (the caller's key: two
 * reductions over one domain have one key), ignored for other roles; connected: it reads what
 * an earlier member wrote (true when the caller cannot tell). */
static inline fa_fuse_why fa_fuse_admit(const fa_fuse_group *g, fa_fuse_role role, int64_t domain, bool connected)
{
    if (role == FA_FUSE_BARRIER) return FA_FUSE_WHY_BARRIER;
    if (role == FA_FUSE_ANCHOR && g->n > 0) return FA_FUSE_WHY_ANCHOR_INSIDE;
    if (g->n > 0 && !connected) return FA_FUSE_WHY_NOT_CONNECTED;
    if (role == FA_FUSE_REDUCTION && g->has_domain && g->domain != domain) return FA_FUSE_WHY_SECOND_DOMAIN;
    return FA_FUSE_OK;
}

static inline void fa_fuse_take(fa_fuse_group *g, fa_fuse_role role, int64_t domain)
{
    if (role == FA_FUSE_REDUCTION && !g->has_domain) {
        g->has_domain = true;
        g->domain = domain;
    }
    g->n++;
}

#endif
