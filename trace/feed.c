/* trace/feed — advice from a whole trace in memory (every GPU record into a builder, with its
 * launch call), and what both ways of feeding take from a trace's cpu side: the profiler steps,
 * the timeline window and the cpu op around the largest gaps. */
#include "trace/trace-impl.h"

static int cpu_cmp(const void *pa, const void *pb, void *arg)
{
    const fa_activity *acts = arg;
    const fa_activity *a = &acts[*(const int32_t *)pa], *b = &acts[*(const int32_t *)pb];
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
    if (a->end_ns != b->end_ns) return a->end_ns > b->end_ns ? -1 : 1;
    return *(const int32_t *)pa < *(const int32_t *)pb ? -1 : 1;
}

static bool is_host_frame(const fa_activity *a)
{
    return a->kind == FA_ACT_CPU_OP || a->kind == FA_ACT_MODULE || (a->kind == FA_ACT_RANGE && a->device < 0);
}

struct cpu_ix {
    const fa_activity *acts;
    size_t n_acts;
    int32_t *ord;      /* cpu ops, ranges, module scopes by (pid, tid, start, outer first) */
    int32_t *parent;   /* position of the enclosing one, -1 */
    size_t n;
    bool built, failed;/* built on the first lookup: only the few largest gaps need it */
};

void fa__ta_cpu_ix_free(cpu_ix *x)
{
    if (!x) return;
    free(x->ord);
    free(x->parent);
    free(x);
}

static bool cpu_build(cpu_ix *x)
{
    if (x->built) return !x->failed;
    x->built = true;
    size_t nc = 0;
    for (size_t i = 0; i < x->n_acts; i++) nc += is_host_frame(&x->acts[i]);
    x->ord = malloc((nc + 1) * sizeof *x->ord);
    x->parent = malloc((nc + 1) * sizeof *x->parent);
    int32_t *stack = malloc((nc + 1) * sizeof *stack);
    if (!x->ord || !x->parent || !stack) {
        free(stack);
        x->failed = true;
        return false;
    }
    for (size_t i = 0; i < x->n_acts; i++)
        if (is_host_frame(&x->acts[i])) x->ord[x->n++] = (int32_t)i;
    qsort_r(x->ord, x->n, sizeof *x->ord, cpu_cmp, (void *)x->acts);
    size_t sp = 0;
    for (size_t p = 0; p < x->n; p++) {
        const fa_activity *a = &x->acts[x->ord[p]];
        while (sp > 0) {
            const fa_activity *top = &x->acts[x->ord[stack[sp - 1]]];
            if (top->pid == a->pid && top->tid == a->tid && top->end_ns >= a->start_ns) break;
            sp--;
        }
        x->parent[p] = sp ? stack[sp - 1] : -1;
        stack[sp++] = (int32_t)p;
    }
    free(stack);
    return true;
}



/* innermost frame on (pid, tid) containing ts: position in ord, -1 (parent walk capped at 256) */
static int32_t cpu_find(const cpu_ix *x, int64_t pid, int64_t tid, uint64_t ts)
{
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const fa_activity *a = &x->acts[x->ord[mid]];
        bool le = a->pid < pid || (a->pid == pid && (a->tid < tid || (a->tid == tid && a->start_ns <= ts)));
        if (le) lo = mid + 1;
        else hi = mid;
    }
    if (!lo) return -1;
    int32_t p = (int32_t)lo - 1;
    const fa_activity *a = &x->acts[x->ord[p]];
    if (a->pid != pid || a->tid != tid) return -1;
    for (int steps = 0; p >= 0 && x->acts[x->ord[p]].end_ns < ts && steps < 256; steps++) p = x->parent[p];
    return p >= 0 && x->acts[x->ord[p]].end_ns >= ts ? p : -1;
}

static const char *cpu_lookup(void *user, int64_t pid, int64_t tid, uint64_t ts)
{
    cpu_ix *x = user;
    if (!cpu_build(x)) return NULL;
    int32_t p = cpu_find(x, pid, tid, ts);
    if (p >= 0) return x->acts[x->ord[p]].name;
    /* any thread of the process: the first thread (in order) with a frame there */
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->acts[x->ord[mid]].pid < pid) lo = mid + 1;
        else hi = mid;
    }
    for (size_t i = lo; i < x->n && x->acts[x->ord[i]].pid == pid;) {
        int64_t t = x->acts[x->ord[i]].tid;
        p = cpu_find(x, pid, t, ts);
        if (p >= 0) return x->acts[x->ord[p]].name;
        while (i < x->n && x->acts[x->ord[i]].pid == pid && x->acts[x->ord[i]].tid == t) i++;
    }
    return NULL;
}

/* the lookup of a streaming builder: an index over its trace's cpu side, built on the first call
 * (at finish: the cpu side is complete then) */
static const char *cpu_lookup_trace(void *user, int64_t pid, int64_t tid, uint64_t ts)
{
    fa_ta_builder *b = user;
    if (!b->own_cx->acts) {
        b->own_cx->acts = b->own_trace->acts;
        b->own_cx->n_acts = b->own_trace->n_acts;
    }
    return cpu_lookup(b->own_cx, pid, tid, ts);
}

typedef struct lref {
    int64_t pid, corr;
    uint64_t start;
    size_t act;
} lref;

static int cmp_lref(const void *a, const void *b)
{
    const lref *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->act > y->act) - (x->act < y->act);
}

typedef struct gref {
    int32_t device;
    int64_t stream;
    uint64_t start, end;
    size_t act;
} gref;

static int cmp_gref(const void *a, const void *b)
{
    const gref *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->act > y->act) - (x->act < y->act);
}

/* the steps of t, and the timeline window: the second step (the first is often warm-up), else
 * the first; false when t has no step */
static bool is_step(const fa_activity *a)
{
    return (is_host_frame(a) || a->kind == FA_ACT_RANGE) && a->name && !strncmp(a->name, "ProfilerStep#", 13) &&
           a->device < 0;
}

typedef struct rec_call {
    int64_t corr;
    uint64_t start;
} rec_call;

static int cmp_rec_call(const void *a, const void *b)
{
    const rec_call *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

void fa__ta_collect_waits(fa_ta_builder *b, const fa_trace *t)
{
    size_t nw = 0, nr = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        if (a->kind == FA_ACT_SYNC && a->wait_record >= 0 && a->wait_stream >= 0) nw++;
        if ((a->kind == FA_ACT_RUNTIME || a->kind == FA_ACT_DRIVER) && a->correlation >= 0 && a->name && strstr(a->name, "EventRecord"))
            nr++;
    }
    if (!nw || !nr) return;
    rec_call *rc = malloc(nr * sizeof *rc);
    if (!rc) return; /* out of memory: no event cuts (the advice is not lost) */
    nr = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        if ((a->kind == FA_ACT_RUNTIME || a->kind == FA_ACT_DRIVER) && a->correlation >= 0 && a->name && strstr(a->name, "EventRecord"))
            rc[nr++] = (rec_call){a->correlation, a->start_ns};
    }
    qsort(rc, nr, sizeof *rc, cmp_rec_call);
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        if (a->kind != FA_ACT_SYNC || a->wait_record < 0 || a->wait_stream < 0) continue;
        rec_call key = {a->wait_record, 0};
        size_t lo = 0, hi = nr;
        while (lo < hi) {
            size_t m = lo + (hi - lo) / 2;
            if (cmp_rec_call(&rc[m], &key) < 0) lo = m + 1;
            else hi = m;
        }
        if (lo < nr && rc[lo].corr == a->wait_record) fa_ta_builder_add_event_wait(b, a->device, a->wait_stream, rc[lo].start);
    }
    free(rc);
}

void fa__ta_count_steps(fa_ta_builder *b, const fa_trace *t)
{
    for (size_t i = 0; i < t->n_acts; i++)
        if (is_step(&t->acts[i])) fa_ta_builder_add_step(b, t->acts[i].start_ns, t->acts[i].end_ns);
}

static bool steps_and_window(fa_ta_builder *b, const fa_trace *t)
{
    const fa_activity *step0 = NULL, *step1 = NULL;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        if (is_step(a)) {
            fa_ta_builder_add_step(b, a->start_ns, a->end_ns);
            if (!step0 || a->start_ns < step0->start_ns) step1 = step0, step0 = a;
            else if (!step1 || a->start_ns < step1->start_ns) step1 = a;
        }
    }
    if (!step0) return false;
    const fa_activity *w = step1 ? step1 : step0;
    fa_ta_builder_set_window(b, w->start_ns, w->end_ns, true, w->name);
    if (step1) fa__ta_set_window_fallback(b, step0->start_ns, step0->end_ns, step0->name);
    return true;
}

void fa_ta_builder_use_trace(fa_ta_builder *b, const fa_trace *t)
{
    if (!b->own_cx) {
        b->own_cx = calloc(1, sizeof *b->own_cx);
        if (!b->own_cx) return; /* no cpu ops for the gaps: they say unknown */
    }
    b->own_cx->acts = NULL; /* built on the first lookup, from t as it is then */
    b->own_trace = t;
    fa_ta_builder_set_lookup(b, cpu_lookup_trace, b);
    if (!steps_and_window(b, t)) {
        char what[64];
        snprintf(what, sizeof what, "the first %d GPU records", FA_TA_WINDOW_MAX);
        fa_ta_builder_set_window(b, 0, UINT64_MAX, false, what);
    }
}

fa_status fa_trace_advise(fa_ctx *ctx, const fa_trace *t, const fa_ta_device *dev, fa_trace_advice **out)
{
    fa_ta_device d = {0};
    if (dev) d = *dev;
    if (!d.name || !d.name[0]) d.name = t->device_name;
    fa_ta_builder *b = NULL;
    fa_status s = fa_ta_builder_create(ctx, &d, &b);
    if (s) return s;
    fa_ta_builder_set_counters(b, t->n_orphans, t->n_clock_inversions, t->n_parse_errors);
    size_t nl = 0, nc = 0, ng = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        if ((a->kind == FA_ACT_RUNTIME || a->kind == FA_ACT_DRIVER) && a->correlation >= 0) nl++;
        if (is_host_frame(a)) nc++;
        if (a->kind == FA_ACT_KERNEL || a->kind == FA_ACT_MEMCPY || a->kind == FA_ACT_MEMSET) ng++;
    }
    lref *ls = malloc((nl + 1) * sizeof *ls);
    gref *gs = malloc((ng + 1) * sizeof *gs);
    cpu_ix cx = {t->acts, t->n_acts, NULL, NULL, 0, false, false};
    (void)nc;
    if (!ls || !gs) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory in the trace advice");
        goto done;
    }
    nl = ng = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        if ((a->kind == FA_ACT_RUNTIME || a->kind == FA_ACT_DRIVER) && a->correlation >= 0)
            ls[nl++] = (lref){a->pid, a->correlation, a->start_ns, i};
        if (a->kind == FA_ACT_KERNEL || a->kind == FA_ACT_MEMCPY || a->kind == FA_ACT_MEMSET)
            gs[ng++] = (gref){a->device, a->stream, a->start_ns, a->end_ns, i};
    }
    fa__ta_collect_waits(b, t);
    if (!steps_and_window(b, t) && ng) {
        /* no steps: the first stretch of GPU time holding about FA_TA_WINDOW_MAX records */
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t k = 0; k < ng; k++) {
            if (gs[k].start < lo) lo = gs[k].start;
            if (gs[k].end > hi) hi = gs[k].end;
        }
        double frac = ng > FA_TA_WINDOW_MAX ? (double)FA_TA_WINDOW_MAX / (double)ng : 1.0;
        uint64_t len = (uint64_t)((double)(hi - lo) * frac);
        char what[64];
        snprintf(what, sizeof what, "the first %.3f ms of GPU activity", (double)len / 1e6);
        fa_ta_builder_set_window(b, lo, lo + len, false, what);
    }
    qsort(ls, nl, sizeof *ls, cmp_lref);
    qsort(gs, ng, sizeof *gs, cmp_gref);
    fa_ta_builder_set_lookup(b, cpu_lookup, &cx);
    for (size_t k = 0; k < ng && !s; k++) {
        const fa_activity *g = &t->acts[gs[k].act];
        const fa_activity *L = NULL;
        if (g->correlation >= 0 && !(g->flags & FA_ACTF_ORPHAN) && nl) {
            size_t lo = 0, hi = nl;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (ls[mid].pid < g->pid || (ls[mid].pid == g->pid && ls[mid].corr < g->correlation)) lo = mid + 1;
                else hi = mid;
            }
            if (lo < nl && ls[lo].pid == g->pid && ls[lo].corr == g->correlation) {
                size_t best = lo; /* the latest not after the record, else the first */
                for (size_t q = lo; q < nl && ls[q].pid == g->pid && ls[q].corr == g->correlation && q < lo + 64; q++)
                    if (ls[q].start <= g->start_ns) best = q;
                L = &t->acts[ls[best].act];
            }
        }
        s = fa_ta_builder_add(ctx, b, g, L);
    }
    if (!s) {
        s = fa_ta_builder_finish(ctx, b, out);
        b = NULL;
    }
done:
    fa_ta_builder_free(b);
    free(ls);
    free(gs);
    free(cx.ord);
    free(cx.parent);
    return s;
}
