/* trace/builder — the streaming builder of trace advice: each GPU record is read once, in
 * per-stream time order, into statistics bounded by distinct kernels, shapes and sequences (never
 * by records): per-kernel statistics, roofline points, named patterns and repeated memory-bound
 * sequences (each kernel occurrence in at most one), launch-bound stretches, idle gaps, CUDA-graph
 * replays (docs/trace-advice.md). */
#include "trace/trace-impl.h"

#include <ctype.h>
#include <inttypes.h>

void *fa__ta_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return p;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *q = realloc(p, nc * elem);
    if (!q) return NULL;
    memset((char *)q + *cap * elem, 0, (nc - *cap) * elem);
    *cap = nc;
    return q;
}

fa_status fa__ta_nomem(fa_ctx *ctx, fa_ta_builder *b)
{
    b->fail = FA_ERR_NOMEM;
    return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory in the trace advice");
}

fa_status fa_ta_builder_create(fa_ctx *ctx, const fa_ta_device *dev, fa_ta_builder **out)
{
    fa_ta_builder *b = calloc(1, sizeof *b);
    if (!b || !(b->ar = fa_arena_create(1 << 16))) {
        free(b);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory in the trace advice");
    }
    if (dev) b->dev = *dev;
    b->dev_name = dev && dev->name ? fa_arena_strdup(b->ar, dev->name) : NULL;
    b->dev.name = b->dev_name;
    fa_intern **maps[] = {&b->tok_map, &b->shape_map, &b->frame_map, &b->op_map, &b->stream_map, &b->graph_map,
                          &b->dims_map, &b->src_map};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        if (!(*maps[i] = fa_intern_create(b->ar))) {
            fa_ta_builder_free(b);
            return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory in the trace advice");
        }
    if (!(b->opp_map = fa_intern_create(NULL)) || !(b->point_map = fa_intern_create(NULL))) {
        fa_ta_builder_free(b);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory in the trace advice");
    }
    b->patterns = fa_ta_patterns(&b->n_patterns);
    fa_status s = fa_ta_matcher_create(ctx, b->patterns, b->n_patterns, &b->matcher);
    if (s) {
        fa_ta_builder_free(b);
        return s;
    }
    for (int i = 0; i < OPEN_REPLAYS; i++) b->replays[i].key = -1;
    *out = b;
    return FA_OK;
}

void fa_ta_builder_set_device(fa_ta_builder *b, const fa_ta_device *dev)
{
    b->dev = *dev;
    b->dev_name = dev->name ? fa_arena_strdup(b->ar, dev->name) : NULL;
    b->dev.name = b->dev_name;
}

void fa_ta_builder_set_lookup(fa_ta_builder *b, fa_ta_cpu_lookup fn, void *user)
{
    b->lookup = fn;
    b->lookup_user = user;
}

void fa_ta_builder_add_step(fa_ta_builder *b, uint64_t start_ns, uint64_t end_ns)
{
    if (!b->n_steps || start_ns < b->step_first) b->step_first = start_ns;
    if (!b->n_steps || end_ns > b->step_last) b->step_last = end_ns;
    b->n_steps++;
    uint64_t *ns = fa__ta_grow(b->step_starts, &b->cap_step_starts, b->n_step_starts + 1, sizeof *ns);
    if (!ns) return; /* out of memory: this step cuts nothing (the advice is not lost) */
    b->step_starts = ns;
    b->step_starts[b->n_step_starts++] = start_ns;
}

void fa_ta_builder_add_event_wait(fa_ta_builder *b, int32_t device, int64_t stream, uint64_t host_ns)
{
    struct ta_wait *w = fa__ta_grow(b->waits, &b->cap_waits, b->n_waits + 1, sizeof *w);
    if (!w) return;
    b->waits = w;
    b->waits[b->n_waits++] = (struct ta_wait){device, stream, host_ns};
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_wait(const void *a, const void *b)
{
    const struct ta_wait *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

void fa__ta_sort_cuts(fa_ta_builder *b)
{
    if (b->n_step_starts > 1) qsort(b->step_starts, b->n_step_starts, sizeof *b->step_starts, cmp_u64);
    if (b->n_waits > 1) qsort(b->waits, b->n_waits, sizeof *b->waits, cmp_wait);
}

/* Is there a value of the sorted v[0..n) in (lo, hi]? */
static bool any_in(const uint64_t *v, size_t n, uint64_t lo, uint64_t hi)
{
    size_t a = 0, z = n;
    while (a < z) { /* the first > lo */
        size_t m = a + (z - a) / 2;
        if (v[m] <= lo) a = m + 1;
        else z = m;
    }
    return a < n && v[a] <= hi;
}

/* Was an event that someone waits on recorded on stream s between the launch calls lo and hi? */
static bool wait_between(const fa_ta_builder *b, const fa_ta_stream *s, uint64_t lo, uint64_t hi)
{
    size_t a = 0, z = b->n_waits;
    while (a < z) { /* the first of (device, stream) with ts > lo */
        size_t m = a + (z - a) / 2;
        const struct ta_wait *w = &b->waits[m];
        bool before = w->device < s->device || (w->device == s->device && (w->stream < s->stream || (w->stream == s->stream && w->ts <= lo)));
        if (before) a = m + 1;
        else z = m;
    }
    return a < b->n_waits && b->waits[a].device == s->device && b->waits[a].stream == s->stream && b->waits[a].ts <= hi;
}

void fa_ta_builder_set_window(fa_ta_builder *b, uint64_t lo, uint64_t hi, bool by_launch, const char *what)
{
    b->win_set = true;
    b->win_lo = lo;
    b->win_hi = hi;
    b->win_by_launch = by_launch;
    b->win_what = what ? fa_arena_strdup(b->ar, what) : NULL;
}

void fa__ta_set_window_fallback(fa_ta_builder *b, uint64_t lo, uint64_t hi, const char *what)
{
    b->fb_set = true;
    b->fb_lo = lo;
    b->fb_hi = hi;
    b->fb_what = what ? fa_arena_strdup(b->ar, what) : NULL;
}

/* a GPU record into the timeline window when it falls in it; returns its index, or -2 - its index
 * in the fallback window, or -1 */
static int32_t window_add(fa_ta_builder *b, const fa_activity *g, const fa_activity *L, int32_t tok)
{
    if (!b->win_set) return -1;
    uint64_t t = b->win_by_launch && L ? L->start_ns : g->start_ns;
    fa_ta_wrec **arr = &b->window;
    size_t *n = &b->n_window;
    if (t < b->win_lo || t > b->win_hi) {
        if (!b->fb_set || !L || L->start_ns < b->fb_lo || L->start_ns > b->fb_hi) return -1;
        arr = &b->fb_window;
        n = &b->n_fb_window;
    }
    if (*n >= FA_TA_WINDOW_MAX) return -1;
    if (!*arr && !(*arr = malloc(FA_TA_WINDOW_MAX * sizeof **arr))) return -1;
    fa_ta_wrec *w = &(*arr)[*n];
    w->start_ns = g->start_ns;
    w->end_ns = g->end_ns > g->start_ns ? g->end_ns : g->start_ns;
    w->kernel = tok;
    w->device = g->device;
    w->stream = g->stream;
    w->opp = w->occ = -1;
    w->kind = (uint8_t)g->kind;
    int32_t id = (int32_t)(*n)++;
    return arr == &b->window ? id : -2 - id;
}

void fa_ta_builder_set_counters(fa_ta_builder *b, uint64_t orphans, uint64_t inversions, uint64_t parse_errors)
{
    b->n_orphans = orphans;
    b->n_clock_inversions = inversions;
    b->n_parse_errors = parse_errors;
}

void fa_ta_builder_free(fa_ta_builder *b)
{
    if (!b) return;
    for (size_t i = 0; i < b->n_toks; i++) fa__qh_free(&b->toks[i].dur);
    for (size_t i = 0; i < b->n_shapes; i++) free(b->shapes[i]);
    fa_intern *maps[] = {b->tok_map, b->shape_map, b->frame_map, b->op_map, b->point_map, b->opp_map, b->stream_map,
                         b->graph_map, b->dims_map, b->src_map};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) fa_intern_free(maps[i]);
    free(b->toks);
    free(b->shapes);
    free(b->frames);
    free(b->ops);
    free(b->srcs);
    free(b->points);
    free(b->opps);
    for (size_t i = 0; b->streams && i < b->n_streams; i++) free(b->streams[i].seg);
    free(b->streams);
    free(b->graphs);
    free(b->window);
    free(b->fb_window);
    free(b->step_starts);
    free(b->waits);
    fa__ta_cpu_ix_free(b->own_cx);
    fa__ta_spool_free(b);
    fa__qh_free(&b->launch_q);
    fa__qh_free(&b->latency_q);
    fa__qh_free(&b->host_q);
    fa_ta_matcher_free(b->matcher);
    fa_arena_free(b->ar);
    free(b);
}

/* id of name s in map m (dense, as arr: arr[id] is the stored name), -1 for NULL, -2 on OOM */
static int32_t name_id(fa_intern *m, const char ***arr, size_t *n, size_t *cap, const char *s)
{
    if (!s) return -1;
    bool added;
    const char *stored;
    int32_t id = fa_intern_str(m, s, &added, &stored);
    if (id < 0) return -2;
    if (added) {
        const char **na = fa__ta_grow(*arr, cap, *n + 1, sizeof **arr);
        if (!na) return -2;
        *arr = na;
        (*arr)[(*n)++] = stored;
    }
    return id;
}

static int32_t shape_id(fa_ta_builder *b, const char *text)
{
    if (!text || !*text) return -1;
    bool added;
    const char *stored;
    int32_t id = fa_intern_str(b->shape_map, text, &added, &stored);
    if (id < 0) return -2;
    if (added) {
        shape_info **na = fa__ta_grow(b->shapes, &b->cap_shapes, b->n_shapes + 1, sizeof *na);
        shape_info *si = malloc(sizeof *si);
        if (!na || !si) {
            free(si);
            if (na) b->shapes = na;
            return -2;
        }
        b->shapes = na;
        si->text = stored;
        /* the same dims with other strides are one roofline point, shown without the strides */
        char dims[2048];
        const char *dstored = NULL;
        const char *dt = strchr(stored, '@') ? fa__ta_shape_dims_text(stored, dims, sizeof dims) : stored;
        si->dims_id = fa_intern_str(b->dims_map, dt, NULL, &dstored);
        si->dims_text = dstored;
        if (si->dims_id < 0) {
            free(si);
            return -2;
        }
        fa__ta_shape_parse(stored, si);
        b->shapes[b->n_shapes++] = si;
    }
    return id;
}

/* The stream's state, added on first use; NULL with the error set in ctx and b->fail (out of
 * memory, or more than FA_TA_MAX_STREAMS distinct streams: refused as input). */
static strm *stream_of(fa_ctx *ctx, fa_ta_builder *b, int32_t device, int64_t stream)
{
    /* the last stream asked for: records come in runs of one stream */
    if (b->n_streams && b->last_sid < b->n_streams && b->streams[b->last_sid].st.device == device &&
        b->streams[b->last_sid].st.stream == stream)
        return &b->streams[b->last_sid];
    char k[64];
    snprintf(k, sizeof k, "%d:%" PRId64, device, stream);
    bool added;
    if (b->n_streams >= FA_TA_MAX_STREAMS && fa_intern_find(b->stream_map, k, strlen(k)) < 0) {
        b->fail = FA_ERR_INPUT;
        fa_ctx_error(ctx, FA_ERR_INPUT,
                     "a record on stream %" PRId64 " of device %d: more than %d distinct (device, stream) pairs, far "
                     "beyond a profiler trace of one program: refused",
                     stream, (int)device, (int)FA_TA_MAX_STREAMS);
        return NULL;
    }
    int32_t id = fa_intern_str(b->stream_map, k, &added, NULL);
    if (id < 0) {
        fa__ta_nomem(ctx, b);
        return NULL;
    }
    if (added) {
        strm *na = fa__ta_grow(b->streams, &b->cap_streams, b->n_streams + 1, sizeof *na);
        if (!na) {
            fa__ta_nomem(ctx, b);
            return NULL;
        }
        b->streams = na;
        strm *s = &b->streams[b->n_streams++];
        memset(s, 0, sizeof *s);
        s->st.device = device;
        s->st.stream = stream;
        s->last_tok = -1;
        s->last_graph = -1;
        s->refused_frame = -2;
    }
    b->last_sid = (size_t)id;
    return &b->streams[id];
}

enum { STF_BWDPASS = 1, STF_COMPILED = 2, STF_AOT = 4, STF_OPTIM = 8 }; /* what a stack says (stk_flags) */
enum { OPF_BWD = 1 };                      /* what an op name says (opk_flags) */
enum { NMF_BWD = 1, NMF_INT = 2 };         /* what a kernel name says (name_flags) */

/* Does type word w (length n) occur in name as a whole word (not inside an identifier)? */
static bool has_type_word(const char *name, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = strstr(name, w); p; p = strstr(p + 1, w)) {
        bool before = p == name || !(isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == ':');
        bool after = !(isalnum((unsigned char)p[n]) || p[n] == '_');
        if (before && after) return true;
    }
    return false;
}

/* A kernel name's template arguments name an integer element type and no floating one:
 * "CUDAFunctorOnSelf_add<long>" (num_batches_tracked += 1) works on integers, so no float
 * kernel beside it reads what it wrote. Names without template arguments say nothing. */
static bool name_integral(const char *name)
{
    const char *lt = strchr(name, '<');
    if (!lt) return false;
    static const char *const fl[] = {"float", "double", "Half", "BFloat16", "__half", "__nv_bfloat16", "half", "bfloat16",
                                     "Float8_e4m3fn", "Float8_e5m2", "complex", NULL};
    static const char *const in[] = {"long", "int64_t", "int32_t", "int16_t", "int8_t", "uint8_t", "bool", "short", NULL};
    for (int i = 0; fl[i]; i++)
        if (strstr(lt, fl[i])) return false;
    for (int i = 0; in[i]; i++)
        if (has_type_word(lt, in[i])) return true;
    return false;
}

static uint8_t stack_flags(const char *stack)
{
    if (!stack) return 0;
    uint8_t f = 0;
    /* the autograd engine's frames; an older Kineto (2021) records none, but its gradient
     * accumulation still runs under torch::autograd::AccumulateGrad */
    if (strstr(stack, "autograd::engine::evaluate_function") || strstr(stack, "torch::autograd::AccumulateGrad")) f |= STF_BWDPASS;
    if (fa_kernel_fused_by(NULL, NULL, stack, FA_KCLASS_OTHER)) f |= STF_COMPILED;
    /* AOTAutograd's CompiledFunction without Inductor's graph inside: torch.compile with a backend
     * that runs the ops as they are (aot_eager, cudagraphs) */
    else if (strstr(stack, "CompiledFunction")) f |= STF_AOT;
    /* an optimizer's step (torch.optim records "Optimizer.step#SGD.step") */
    if (strstr(stack, "Optimizer.step")) f |= STF_OPTIM;
    return f;
}

/* the class of the innermost nn.Module frame of a stack ("nn.Module: Qwen2RMSNorm_3" ->
 * "Qwen2RMSNorm"), as a srcs id; -1 none, -2 OOM */
static int32_t module_of(fa_ta_builder *b, const char *stack)
{
    if (!stack) return -1;
    const char *last = NULL;
    for (const char *p = stack; (p = strstr(p, "nn.Module: ")) != NULL; p += 11) last = p + 11;
    if (!last) return -1;
    size_t l = strcspn(last, " ");
    const char *e = strstr(last, " > ");
    if (e && (size_t)(e - last) < l) l = (size_t)(e - last);
    size_t d = l;
    while (d > 0 && last[d - 1] >= '0' && last[d - 1] <= '9') d--;
    if (d > 0 && d < l && last[d - 1] == '_') l = d - 1; /* the instance number */
    char cls[128];
    if (!l || l >= sizeof cls) return -1;
    memcpy(cls, last, l);
    cls[l] = 0;
    return name_id(b->src_map, &b->srcs, &b->n_srcs, &b->cap_srcs, cls);
}

/* the pattern-naming frame of a cpu-op stack "outer > ... > inner": the outermost frame that
 * names a pattern */
static int32_t frame_of(fa_ta_builder *b, const char *stack, int8_t *pat)
{
    *pat = -1;
    if (!stack) return -1;
    const char *p = stack;
    while (*p) {
        const char *e = strstr(p, " > ");
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char f[256];
        if (l > 0 && l < sizeof f) {
            memcpy(f, p, l);
            f[l] = 0;
            int k = fa_ta_matcher_stack(b->matcher, f);
            if (k >= 0) {
                *pat = (int8_t)k;
                return name_id(b->frame_map, &b->frames, &b->n_frames, &b->cap_frames, f);
            }
        }
        if (!e) break;
        p = e + 3;
    }
    return -1;
}

static fa_status opp_add(fa_ctx *ctx, fa_ta_builder *b, strm *s, int pattern, rec *const *m, int n, int64_t skipped)
{
    if (n > FA_TA_MAX_SEQ) n = FA_TA_MAX_SEQ;
    /* the key: pattern, member count, member tokens with their backward marks (the same kernels
     * in the forward and in the backward pass are two opportunities, each named and fixed as
     * what it is, never by whichever occurrence came first) */
    int32_t k[FA_TA_MAX_SEQ + 2] = {pattern, n};
    for (int j = 0; j < n; j++)
        k[2 + j] = (int32_t)((uint32_t)m[j]->tok << 2 | (m[j]->flags & RF_BWD ? 1u : 0u) | (m[j]->flags & RF_BWDPASS ? 2u : 0u));
    bool added;
    int32_t id = fa_intern_id(b->opp_map, k, (size_t)(n + 2) * sizeof k[0], &added, NULL);
    if (id < 0) return fa__ta_nomem(ctx, b);
    if (added) {
        oppstat *na = fa__ta_grow(b->opps, &b->cap_opps, b->n_opps + 1, sizeof *na);
        if (!na) return fa__ta_nomem(ctx, b);
        b->opps = na;
        oppstat *p = &b->opps[b->n_opps++];
        memset(p, 0, sizeof *p);
        p->pattern = pattern;
        p->n = n;
        for (int j = 0; j < n; j++) {
            p->tok[j] = m[j]->tok;
            p->key[j] = m[j]->key;
            if (m[j]->flags & RF_BWD) p->bwd_mask |= 1u << j;
        }
        p->device = s->st.device;
        p->stream = s->st.stream;
        p->first_start = m[0]->start;
        p->module = p->source = -1;
        for (int j = 0; j < n && (p->module < 0 || p->source < 0); j++) {
            if (p->module < 0) p->module = m[j]->module;
            if (p->source < 0) p->source = m[j]->source;
        }
    }
    oppstat *p = &b->opps[id];
    p->count++;
    for (int j = 0; j < n; j++) p->backward |= (m[j]->flags & (RF_BWD | RF_BWDPASS)) != 0;
    if (!p->recompute_seen) {
        /* forward ops (no backward kernel among them) launched in the backward pass inside an
         * nn.Module's forward: a checkpointed region run again (torch.utils.checkpoint's unpack
         * hook re-enters the modules; an ordinary backward formula's kernels have no module frame) */
        bool rc = n > 0;
        for (int j = 0; j < n && rc; j++) rc = (m[j]->flags & RF_BWDPASS) && !(m[j]->flags & RF_BWD) && m[j]->module >= 0;
        p->recompute = rc;
        p->recompute_seen = true;
    }
    for (int j = 0; j < n; j++) p->aot |= m[j]->aot;
    if (p->count == 1) { /* every member in an optimizer's step: a per-parameter update loop */
        bool opt = n > 0;
        for (int j = 0; j < n; j++) opt = opt && m[j]->optim;
        p->optim = opt;
    }
    int32_t occ = b->n_occ++;
    for (int j = 0; j < n; j++) {
        fa_ta_wrec *w = m[j]->wid >= 0 ? &b->window[m[j]->wid] : m[j]->wid <= -2 ? &b->fb_window[-2 - m[j]->wid] : NULL;
        if (w) {
            w->opp = id;
            w->occ = occ;
        }
    }
    int64_t longest = 0;
    for (int j = 0; j < n; j++) {
        int64_t d = fa__ta_dur(m[j]);
        p->member_ns[j] += d;
        p->kernel_ns += d;
        if (d > longest) longest = d;
        /* idle before a member, up to what its launch cost the host (its own launch call, at most
         * the trace's median launch call): the dispatch fusing removes. A longer wait had another
         * cause (the host busy elsewhere, a first-call module load) that fusing does not remove. */
        if (j > 0 && m[j]->start > m[j - 1]->end && m[j]->launch_ns > 0) {
            int64_t g = (int64_t)(m[j]->start - m[j - 1]->end), cost = m[j]->launch_ns;
            if (b->launch_cap_ns > 0 && cost > b->launch_cap_ns) cost = b->launch_cap_ns;
            p->gaps_ns += g < cost ? g : cost;
        }
    }
    p->longest_ns += (double)longest;
    p->skipped += skipped;
    double rd, wr, sv, fl = 0;
    bool keep_first = pattern >= 0 && !strncmp(b->patterns[pattern].name, "residual add", 12), half = false;
    ta_member mb[FA_TA_MAX_SEQ];
    for (int j = 0; j < n; j++) mb[j] = (ta_member){m[j]->shape >= 0 ? b->shapes[m[j]->shape] : NULL, m[j]->key, m[j]->inplace};
    fa_ta_cost cost = pattern >= 0 ? b->patterns[pattern].cost : FA_TA_COST_MEMORY;
    bool known;
    if (cost == FA_TA_COST_ATTENTION) {
        p->anchor_ns += (double)(fa__ta_dur(m[0]) + fa__ta_dur(m[n - 1]));
        known = fa__ta_attention_bytes(mb, n, &rd, &wr, &sv, &fl, &half) > 0;
    } else if (cost == FA_TA_COST_EPILOGUE) {
        p->anchor_ns += (double)fa__ta_dur(m[0]);
        known = fa__ta_epilogue_bytes(mb, n, &rd, &wr, &sv) > 0;
    } else {
        known = fa__ta_group_bytes(mb, n, keep_first, pattern >= 0 && b->patterns[pattern].same_x, &rd, &wr, &sv);
        if (known) {
            int64_t dur[FA_TA_MAX_SEQ];
            for (int j = 0; j < n; j++) dur[j] = fa__ta_dur(m[j]);
            double mbnd = fa__ta_member_bound(mb, n, keep_first, dur);
            if (mbnd > 0) p->member_bound_ns += mbnd;
        }
    }
    if (known) {
        p->bytes_occ++;
        p->read += rd;
        p->write += wr;
        p->saved += sv;
        p->flops += fl;
        p->tensor16 |= half;
    }
    return FA_OK;
}

/* ---- per-stream analysis, in time order ---- */

static ta_member member_of(const fa_ta_builder *b, const rec *r)
{
    return (ta_member){r->shape >= 0 ? b->shapes[r->shape] : NULL, r->key, r->inplace};
}

/* The reduction domain of a reduction kernel: the cpu op instance that launched it (one op's
 * kernels reduce over one domain: batch norm's statistics and transform), else its op and input
 * shapes, else its own. */
static int64_t domain_of(const rec *r)
{
    /* a CUDA-graph replay's kernels all carry cudaGraphLaunch's External id: one op instance
     * in name only (five LayerNorms of a compiled graph are five domains) */
    if (r->flags & RF_GRAPH) return (int64_t)1 << 61 | (int64_t)(r->start & (((uint64_t)1 << 60) - 1));
    if (r->opinst >= 0) return r->opinst;
    if (r->op >= 0 && r->shape >= 0) return (int64_t)1 << 62 | (int64_t)r->op << 31 | r->shape;
    return (int64_t)1 << 61 | (int64_t)(r->start & (((uint64_t)1 << 60) - 1));
}

static fa_fuse_role role_of(const rec *r)
{
    if (r->flags & (RF_FUSED | RF_BARRIER)) return FA_FUSE_BARRIER;
    switch ((fa_kclass)r->cls) {
    case FA_KCLASS_ELEMENTWISE:
    case FA_KCLASS_COPY: return FA_FUSE_MEMBER;
    case FA_KCLASS_REDUCTION: return FA_FUSE_REDUCTION;
    case FA_KCLASS_GEMM:
    case FA_KCLASS_CONV: return FA_FUSE_ANCHOR;
    default: return FA_FUSE_BARRIER;
    }
}

/* Is there a host-side boundary between consecutive kernels a and b of one stream, which no
 * fused kernel can span? (1) They were launched from different host threads (a loss's forward
 * kernels and the autograd thread's backward ones; an autograd thread's gradient accumulation
 * and the optimizer's step): one fused kernel is one launch by one op. (2) b was queued before a
 * ended yet started more than FA_TA_HELD_NS after it: the stream sat idle with b waiting, so b
 * waited on something else — an event of another stream (a collective's output b reads). */
static bool host_boundary(const fa_ta_builder *bl, const fa_ta_stream *st, const rec *a, const rec *b)
{
    bool launched = a->launch_end && b->launch_end && !(a->flags & (RF_GRAPH | RF_ORPHAN)) && !(b->flags & (RF_GRAPH | RF_ORPHAN));
    if (launched && (a->pid != b->pid || a->tid != b->tid)) return true;
    /* (3) a profiler step began between their launches: two iterations' kernels that ran back to
     * back on the GPU (an optimizer's last kernel and the next step's first) are two launches of
     * two steps' code, which no fused kernel replaces */
    if (launched && a->launch_start < b->launch_start && any_in(bl->step_starts, bl->n_step_starts, a->launch_start, b->launch_start))
        return true;
    /* (4) an event recorded on this stream after a was launched and before b, which another
     * stream (a collective waiting for a gradient bucket) or the host waited on: fused, a and b
     * would end together and the wait would last b's time longer */
    if (a->launch_start && b->launch_start && a->launch_start < b->launch_start && bl->n_waits &&
        wait_between(bl, st, a->launch_start, b->launch_start))
        return true;
    return b->launch_end && b->launch_end <= a->end && b->start > a->end + FA_TA_HELD_NS;
}

/* A run of memory-bound kernels between two kernels that are not (or a named pattern) ends:
 * it is one occurrence of a sequence, cut where the fusion rule (graph/fusion_rule.h) says the
 * next kernel cannot join: a reduction over a second domain, or a kernel that reads nothing an
 * earlier member wrote. Each legal piece of two or more is an occurrence. */
static fa_status seg_emit(fa_ctx *ctx, fa_ta_builder *b, strm *s, int from, int n)
{
    rec *m[FA_TA_MAX_SEQ];
    ta_member mb[FA_TA_MAX_SEQ];
    int k = 0;
    fa_fuse_group g = {0};
    fa_status st = FA_OK;
    for (int j = 0; j < n && !st; j++) {
        rec *r = &s->seg[from + j];
        fa_fuse_role role = role_of(r);
        int64_t dom = role == FA_FUSE_REDUCTION ? domain_of(r) : 0;
        ta_member me = member_of(b, r);
        if (k > 0 && host_boundary(b, &s->st, m[k - 1], r)) { /* cut here; r may start the next piece */
            b->n_split_host++;
            if (k >= 2) st = opp_add(ctx, b, s, -1, m, k, 0);
            k = 0;
            g = (fa_fuse_group){0};
            if (st) break;
        }
        /* where either lacks sizes, an integer kernel beside a floating one (a step counter's
         * add beside a batch norm whose three kernels have none) reads nothing it wrote: no data
         * flow between them, whatever the order */
        bool connected = k == 0 || fa__ta_reads_output(mb, k, &me);
        if (k > 0 && connected && (r->shape < 0 || m[k - 1]->shape < 0) && (r->flags & RF_INTDATA) != (m[k - 1]->flags & RF_INTDATA) &&
            r->cls != FA_KCLASS_COPY && m[k - 1]->cls != FA_KCLASS_COPY)
            connected = false;
        fa_fuse_why w = fa_fuse_admit(&g, role, dom, connected);
        if (w != FA_FUSE_OK) {
            b->n_split[w]++;
            if (k >= 2) st = opp_add(ctx, b, s, -1, m, k, 0);
            k = 0;
            g = (fa_fuse_group){0};
            if (fa_fuse_admit(&g, role, dom, true) != FA_FUSE_OK) continue;
        }
        fa_fuse_take(&g, role, dom);
        mb[k] = me;
        m[k++] = r;
    }
    if (!st && k >= 2) st = opp_add(ctx, b, s, -1, m, k, 0);
    return st;
}

static fa_status seg_flush(fa_ctx *ctx, fa_ta_builder *b, strm *s)
{
    fa_status st = FA_OK;
    int n = s->seg_n, period = 0;
    for (int p = 2; p <= n / 2 && p <= FA_TA_MAX_SEQ && !period; p++) {
        bool ok = true;
        for (int i = 0; i + p < n && ok; i++) ok = s->seg[i].tok == s->seg[i + p].tok;
        if (ok) period = p;
    }
    int unit = period ? period : FA_TA_MAX_SEQ;
    int i = 0;
    for (; i + unit <= n && !st; i += unit) st = seg_emit(ctx, b, s, i, unit);
    if (!st && i < n) st = seg_emit(ctx, b, s, i, n - i);
    s->seg_n = 0;
    return st;
}

static void win_drop(strm *s, int k)
{
    memmove(s->win, s->win + k, (size_t)(s->wn - k) * sizeof s->win[0]);
    s->wn -= k;
}

/* the op key a record offers the named patterns: none for a backward, already fused or barrier
 * record (the patterns describe forward ops that a new kernel would fuse); a kernel launched in
 * the backward pass (autograd frames on its stack: MmBackward0's aten::mm) is backward too */
static int match_key(const rec *r)
{
    if (r->flags & RF_BARRIER) return FA_TA_KEY_MEMCPY;
    if (r->flags & (RF_BWD | RF_BWDPASS | RF_FUSED)) return FA_TA_KEY_OTHER;
    return r->key;
}

/* Do the k kernels under one pattern-naming frame fit that pattern? A frame names what the code
 * meant, the kernels what ran: a "rotary" module that runs a GEMM (a cos/sin table), a "GELU"
 * module whose kernels compute a sigmoid (QuickGELU), or backward kernels under a forward
 * module's name are not the pattern. Kernels whose names say nothing (key other) are taken on
 * the frame's word. */
static bool frame_fits(const fa_ta_builder *b, const rec *w, int k, int pat)
{
    uint64_t keys = fa_ta_matcher_alphabet(b->matcher, pat) | 1ull << FA_TA_KEY_OTHER | 1ull << FA_TA_KEY_COPY;
    for (int j = 0; j < k; j++) {
        if (w[j].flags & (RF_BWD | RF_BWDPASS | RF_FUSED | RF_BARRIER)) return false;
        fa_kclass c = (fa_kclass)w[j].cls;
        if (!fa_kclass_light(c) && c != FA_KCLASS_OTHER) return false;
        if (!(keys >> w[j].key & 1)) return false;
        /* an elementwise / reduction kernel whose op the alphabet does not name (cos, sin, ...) */
        if (w[j].key == FA_TA_KEY_OTHER && c != FA_KCLASS_OTHER) return false;
    }
    return true;
}

/* Does a named match fit what its kernels' sizes say? An epilogue's trailing op that starts another
 * named pattern is left to it (a GEMM's residual add that begins "residual add + LayerNorm"), and
 * its first op must read the GEMM's output; attention's scores must be what the softmax and the
 * second GEMM read. Sizes unknown: the keys are the evidence. *nm may shrink. */
static bool match_fits(const fa_ta_builder *b, const rec *w, const int *keys, int wn, int pat, const int *members, int *nm)
{
    fa_ta_cost cost = b->patterns[pat].cost;
    if (cost == FA_TA_COST_MEMORY) {
        /* a residual add adds two tensors of one size; where the sizes show a broadcast (a ViT's
         * position embedding [1, 197, 768] onto [4, 197, 768]) it is an embedding add, not a
         * residual: the pattern's name and its live-residual bytes would be wrong */
        if (!strncmp(b->patterns[pat].name, "residual add", 12)) {
            const rec *r0 = &w[members[0]];
            const shape_info *si = r0->shape >= 0 ? b->shapes[r0->shape] : NULL;
            if (si && si->n >= 2 && si->in[0].tensor && si->in[1].tensor && si->in[0].numel != si->in[1].numel) return false;
        }
        return true;
    }
    if (cost == FA_TA_COST_EPILOGUE) {
        /* stop before the first op that starts another named pattern reaching past the epilogue
         * (a residual add that begins "residual add + LayerNorm": the norm is no epilogue, the
         * pattern keeps its add); one the epilogue holds whole (bias + GELU) it takes in */
        for (int j = 1; j < *nm; j++) {
            int p = members[j], other = -1, mm[FA_TA_MAX_PATTERN];
            int k = fa_ta_matcher_match(b->matcher, keys + p, wn - p, &other, mm);
            if (k >= 2 && b->patterns[other].cost == FA_TA_COST_MEMORY && p + mm[k - 1] > members[*nm - 1]) {
                *nm = j;
                break;
            }
        }
        if (*nm < 2) return false;
    }
    ta_member mb[FA_TA_MAX_SEQ];
    for (int j = 0; j < *nm; j++) mb[j] = member_of(b, &w[members[j]]);
    double rd, wr, sv, fl;
    bool half;
    if (cost == FA_TA_COST_ATTENTION) return fa__ta_attention_bytes(mb, *nm, &rd, &wr, &sv, &fl, &half) >= 0;
    /* an epilogue needs the sizes' word: its first op reads the GEMM's output, each later op an
     * earlier output (a GEMM followed by an unrelated elementwise op is no epilogue) */
    if (fa__ta_epilogue_bytes(mb, *nm, &rd, &wr, &sv) <= 0) return false;
    for (int j = 2; j < *nm; j++)
        if (!fa__ta_reads_output(mb, j, &mb[j])) {
            *nm = j;
            break;
        }
    return true;
}

/* Decide what the window's first kernel belongs to: a frame group, a named pattern starting
 * there, or the memory-bound run in progress. */
static fa_status win_step(fa_ctx *ctx, fa_ta_builder *b, strm *s)
{
    rec *w = s->win;
    rec *m[FA_TA_MAX_SEQ];
    /* a frame whose kernels did not fit its pattern names none of its kernels: not the ones after
     * the kernel that did not fit either (the rest of a cos/sin table module after its GEMM) */
    if (w[0].frame != s->refused_frame) s->refused_frame = -2;
    if (w[0].frame >= 0 && w[0].frame_pat >= 0 && w[0].frame != s->refused_frame) {
        int k = 1;
        while (k < s->wn && k < FA_TA_MAX_SEQ && w[k].frame == w[0].frame) k++;
        if (k >= 2 && !frame_fits(b, w, k, w[0].frame_pat)) s->refused_frame = w[0].frame;
        else if (k >= 2) {
            fa_status st = seg_flush(ctx, b, s);
            for (int j = 0; j < k && !st; j++) m[j] = &w[j];
            if (!st) st = opp_add(ctx, b, s, w[0].frame_pat, m, k, 0);
            win_drop(s, k);
            return st;
        }
    }
    int keys[WIN], members[FA_TA_MAX_PATTERN], pat = -1;
    for (int i = 0; i < s->wn; i++) keys[i] = match_key(&w[i]);
    int nm = fa_ta_matcher_match(b->matcher, keys, s->wn, &pat, members);
    while (nm >= 2 && !match_fits(b, w, keys, s->wn, pat, members, &nm))
        nm = fa_ta_matcher_match_from(b->matcher, pat + 1, keys, s->wn, &pat, members);
    if (nm >= 2) {
        fa_status st = seg_flush(ctx, b, s);
        for (int j = 0; j < nm; j++) m[j] = &w[members[j]];
        int64_t skipped = members[nm - 1] + 1 - nm;
        if (!st) st = opp_add(ctx, b, s, pat, m, nm, skipped);
        win_drop(s, members[nm - 1] + 1);
        return st;
    }
    fa_status st = FA_OK;
    if (fa_kclass_light((fa_kclass)w[0].cls) && !(w[0].flags & (RF_FUSED | RF_BARRIER))) {
        if (s->seg_n == SEG_MAX) st = seg_flush(ctx, b, s);
        if (!st && s->seg_n == s->seg_cap) {
            int cap = s->seg_cap ? 2 * s->seg_cap : 8;
            rec *g = realloc(s->seg, sizeof *g * (size_t)(cap < SEG_MAX ? cap : SEG_MAX));
            if (!g) return fa__ta_nomem(ctx, b);
            s->seg = g;
            s->seg_cap = cap < SEG_MAX ? cap : SEG_MAX;
        }
        if (!st) s->seg[s->seg_n++] = w[0];
    } else {
        st = seg_flush(ctx, b, s);
    }
    win_drop(s, 1);
    return st;
}

static void stretch_end(fa_ta_builder *b, strm *s)
{
    if (s->str_n >= FA_TA_MIN_STRETCH) {
        b->launch_bound_kernels += s->str_n;
        b->launch_bound_ns += s->str_kns;
        fa_ta_stretch r = {s->st.device, s->st.stream, s->str_n, s->str_start, s->str_end, s->str_kns, s->str_lns,
                           b->toks[s->str_first].name};
        if (b->n_stretches < MAX_STRETCHES) {
            b->stretches[b->n_stretches++] = r;
        } else { /* keep the longest */
            int lo = 0;
            for (int i = 1; i < b->n_stretches; i++)
                if (b->stretches[i].n_kernels < b->stretches[lo].n_kernels) lo = i;
            if (b->stretches[lo].n_kernels < r.n_kernels) b->stretches[lo] = r;
        }
    }
    s->str_n = 0;
}

static void gap_offer(fa_ta_builder *b, strm *s, const rec *next, uint64_t gstart, int64_t g)
{
    int slot = -1;
    if (b->n_gaps < FA_TA_TOP_GAPS) slot = b->n_gaps++;
    else {
        int lo = 0;
        for (int i = 1; i < b->n_gaps; i++)
            if (b->gaps[i].gap_ns < b->gaps[lo].gap_ns) lo = i;
        if (b->gaps[lo].gap_ns >= g) return;
        slot = lo;
    }
    fa_ta_gap *x = &b->gaps[slot];
    x->device = s->st.device;
    x->stream = s->st.stream;
    x->start_ns = gstart;
    x->gap_ns = g;
    x->next_kernel = b->toks[next->tok].name;
    x->cpu_op = NULL;
    /* the cpu op is looked up at finish, for the gaps that stay among the largest (the importer's
     * cpu side is complete then, even when kernels stream in before all of it is read) */
    b->gap_who[slot].pid = next->pid;
    b->gap_who[slot].tid = next->tid;
    b->gap_who[slot].ok = !(next->flags & (RF_ORPHAN | RF_INVERTED));
}

/* What the GPU waited for in the gap g >= 0 before kernel r on stream s (s->last_end: the end of the
 * kernels before it). Queued: r's launch call had ended before the previous kernel ended, so the
 * GPU had r in hand and the gap is its own launch latency (a few us on recent GPUs; a gap of 0 is
 * a latency of 0, which whole-us Kineto timestamps give); so is a kernel of the same graph replay
 * as the previous one. Host-bound: r's launch call ended at or
 * after the previous kernel's end, so the GPU idled until the host launched it (Python, data
 * loading, a synchronising call): no launch cost, counted as host-bound idle. Neither can be told
 * (unclassed): r has no launch call in the trace (an orphan) or starts before it (a clock
 * inversion), or a memcpy / memset ran on the stream between the two kernels while r was queued
 * (the gap holds the transfer). A zero gap counts only as a latency. false on out of memory. */
static bool gap_classify(fa_ta_builder *b, strm *s, const rec *r, int64_t g)
{
    bool known = r->launch_end && !(r->flags & (RF_ORPHAN | RF_INVERTED));
    /* a kernel of the graph replay the previous kernel belongs to was queued by the replay itself,
     * whenever its one launch call (cudaGraphLaunch, hipGraphLaunch: on ROCm it returns after the
     * replay's kernels ran) ended */
    bool same_replay = r->graph >= 0 && r->graph == s->last_graph;
    if (known && (r->launch_end < s->last_end || same_replay) && s->xfer_end <= s->last_end) {
        /* queued, yet started over FA_TA_HELD_NS after the kernel ahead: it waited on another
         * stream's work (an all-to-all it reads), not on the device's launch path - a median over
         * such gaps was a 50 us "device launch latency" on a multi-stream DLRM trace */
        if (g > FA_TA_HELD_NS && !same_replay) {
            b->n_held_gaps++;
            b->held_ns += g;
            return true;
        }
        b->n_latency_gaps++;
        b->latency_gap_ns += g;
        return fa__qh_add(&b->latency_q, g);
    }
    if (g <= 0) return true;
    if (known && r->launch_end >= s->last_end) {
        b->n_host_gaps++;
        b->host_idle_ns += g;
        s->host_idle_ns += g;
        return fa__qh_add(&b->host_q, g);
    }
    b->n_unclassed_gaps++;
    b->unclassed_idle_ns += g;
    return true;
}

fa_status fa__ta_analyze(fa_ctx *ctx, fa_ta_builder *b, strm *s, const rec *r)
{
    fa_status stt = FA_OK;
    if (r->flags & RF_BARRIER) { /* a memcpy / memset: no group across it, nothing else */
        if (r->end > s->xfer_end) s->xfer_end = r->end;
        s->win[s->wn++] = *r;
        while (s->wn == WIN && !stt) stt = win_step(ctx, b, s);
        return stt;
    }
    if (!b->an_any || r->start < b->an_first) b->an_first = r->start;
    if (!b->an_any || r->end > b->an_last) b->an_last = r->end;
    b->an_any = true;
    int64_t d = fa__ta_dur(r);
    fa_ta_stream *st = &s->st;
    st->n_kernels++;
    st->kernel_ns += d;
    st->class_ns[r->cls] += d;
    if (!s->any || r->start < st->first_ns) st->first_ns = r->start;
    if (r->end > st->last_ns) st->last_ns = r->end;
    /* busy = union of kernel intervals */
    uint64_t from = s->any && r->start < s->busy_end ? s->busy_end : r->start;
    if (r->end > from) st->busy_ns += (int64_t)(r->end - from);
    if (!s->any || r->end > s->busy_end) s->busy_end = r->end;
    if (s->any) {
        if (r->start >= s->last_end) {
            int64_t g = (int64_t)(r->start - s->last_end);
            if (g > 0) {
                st->idle_ns += g;
                st->n_gaps++;
                gap_offer(b, s, r, s->last_end, g);
            }
            if (!gap_classify(b, s, r, g)) return fa__ta_nomem(ctx, b);
        } else {
            st->n_overlaps++;
        }
    }
    if (!s->any || r->end > s->last_end) {
        s->last_end = r->end;
        s->last_graph = r->graph;
    }
    s->any = true;
    /* launch-bound stretch: kernels each shorter than their own launch call, a call counted up to
     * the median launch call (launch_cap_ns, as the launch cost removed): a longer one was a first
     * call loading its module or the host busy elsewhere (a 300 ms hipLaunchKernel in TraceLens'
     * normalization trace made 16 kernels of 119 us "launch-bound" by 786 ms of launch calls),
     * which no CUDA graph removes */
    int64_t lns = r->launch_ns > 0 && b->launch_cap_ns > 0 && r->launch_ns > b->launch_cap_ns ? b->launch_cap_ns : r->launch_ns;
    if (lns > 0 && d < lns) {
        if (!s->str_n) {
            s->str_start = r->start;
            s->str_kns = s->str_lns = 0;
            s->str_first = r->tok;
        }
        s->str_n++;
        s->str_end = r->end;
        s->str_kns += d;
        s->str_lns += lns;
    } else {
        stretch_end(b, s);
    }
    s->win[s->wn++] = *r;
    while (s->wn == WIN && !stt) stt = win_step(ctx, b, s);
    return stt;
}

static void replay_add(fa_ta_builder *b, int64_t key, const rec *r, int64_t launch_ns);

/* a graph-replayed kernel joins its replay in time order (the replay's kernel sequence names the
 * graph); its launch call is counted once per replay there */
void fa__ta_graph_take(fa_ta_builder *b, rec *r)
{
    if (!(r->flags & RF_GRAPH)) return;
    replay_add(b, r->graph, r, r->launch_ns);
    r->launch_ns = -1;
}

/* ---- graph replays ---- */

static void replay_close(fa_ta_builder *b, replay *rp)
{
    if (rp->key < 0) return;
    /* the launch call per kernel of the replay: cudaGraphLaunch / hipGraphLaunch launches them
     * all (a 507 us hipGraphLaunch of a vLLM decode step was one of five "launch calls" whose median
     * was the per-kernel launch overhead) */
    if (rp->launch_ns >= 0 && rp->n > 0) fa__qh_add(&b->launch_q, rp->launch_ns / rp->n);
    char k[64];
    snprintf(k, sizeof k, "%016" PRIx64 ":%" PRId64, rp->hash, rp->n);
    bool added;
    int32_t id = fa_intern_str(b->graph_map, k, &added, NULL);
    if (id >= 0 && added) {
        graphstat *na = fa__ta_grow(b->graphs, &b->cap_graphs, b->n_graphs + 1, sizeof *na);
        if (!na) id = -1;
        else {
            b->graphs = na;
            graphstat *g = &b->graphs[b->n_graphs++];
            memset(g, 0, sizeof *g);
            g->id = (int)b->n_graphs;
            g->kernels = rp->n;
            g->launch_op = rp->launch_op;
            g->capture_op = rp->capture_op;
        }
    }
    if (id >= 0) {
        graphstat *g = &b->graphs[id];
        g->replays++;
        g->kernel_ns += rp->ns;
        if (g->capture_op < 0) g->capture_op = rp->capture_op;
    }
    rp->key = -1;
}

static void replay_add(fa_ta_builder *b, int64_t key, const rec *r, int64_t launch_ns)
{
    replay *rp = NULL;
    for (int i = 0; i < OPEN_REPLAYS; i++)
        if (b->replays[i].key == key) {
            rp = &b->replays[i];
            break;
        }
    if (!rp) {
        rp = &b->replays[b->replay_next];
        b->replay_next = (b->replay_next + 1) % OPEN_REPLAYS;
        replay_close(b, rp);
        memset(rp, 0, sizeof *rp);
        rp->key = key;
        rp->hash = 1469598103934665603ull;
        rp->launch_op = r->graph_launch_op;
        rp->capture_op = r->graph_capture_op;
        rp->launch_ns = launch_ns;
        if (launch_ns >= 0) { /* one launch call per replay (its per-kernel share: replay_close) */
            b->n_launch_calls++;
            b->launch_call_ns += launch_ns;
        }
    }
    rp->n++;
    rp->ns += fa__ta_dur(r);
    rp->hash = (rp->hash ^ (uint64_t)(r->tok + 1)) * 1099511628211ull;
    if (rp->capture_op < 0) rp->capture_op = r->graph_capture_op;
}

fa_status fa__ta_drain_streams(fa_ctx *ctx, fa_ta_builder *b)
{
    fa_status s = FA_OK;
    for (size_t i = 0; i < b->n_streams && !s; i++) {
        strm *st = &b->streams[i];
        while (st->wn && !s) s = win_step(ctx, b, st);
        if (!s) s = seg_flush(ctx, b, st);
        stretch_end(b, st);
    }
    for (int i = 0; i < OPEN_REPLAYS; i++) replay_close(b, &b->replays[i]);
    return s;
}

/* a memcpy / memset on a GPU stream: counted, in the timeline window, and a barrier in its
 * stream's analysis (no fusion across a transfer) */
static fa_status add_transfer(fa_ctx *ctx, fa_ta_builder *b, const fa_activity *g, const fa_activity *L, int64_t d)
{
    if (g->device < 0) return FA_OK;
    b->any_gpu = true;
    if (g->kind == FA_ACT_MEMCPY) b->n_memcpy++, b->memcpy_ns += d;
    else b->n_memset++, b->memset_ns += d;
    rec r;
    memset(&r, 0, sizeof r);
    r.start = g->start_ns;
    r.end = g->end_ns > g->start_ns ? g->end_ns : g->start_ns;
    r.launch_start = L ? L->start_ns : 0;
    r.opinst = -1;
    r.tok = r.shape = r.frame = r.op = r.graph_launch_op = r.graph_capture_op = r.module = r.source = -1;
    r.frame_pat = -1;
    r.graph = -1;
    r.launch_ns = -1;
    r.key = FA_TA_KEY_MEMCPY;
    r.cls = FA_KCLASS_MEMCPY;
    r.flags = RF_BARRIER;
    r.wid = window_add(b, g, L, -1);
    strm *s = stream_of(ctx, b, g->device, g->stream);
    if (!s) return b->fail;
    return fa__ta_spool_add(ctx, b, s, &r);
}

fa_status fa_ta_builder_add(fa_ctx *ctx, fa_ta_builder *b, const fa_activity *g, const fa_activity *L)
{
    if (b->fail) return b->fail;
    int64_t d = g->end_ns > g->start_ns ? (int64_t)(g->end_ns - g->start_ns) : 0;
    if (g->kind == FA_ACT_MEMCPY || g->kind == FA_ACT_MEMSET) return add_transfer(ctx, b, g, L, d);
    if (g->kind != FA_ACT_KERNEL || g->device < 0) return FA_OK;
    b->any_gpu = true;
    rec r;
    memset(&r, 0, sizeof r);
    /* the op (name id, key, in place, backward), cached by address */
    int op_key;
    uint8_t op_flags;
    const char *op_fused;
    size_t os = (size_t)(((uintptr_t)g->op_type >> 4) * 0x9E3779B97F4A7C15ull >> 54) & 1023;
    if (g->op_type && b->opk_ptr[os] == g->op_type) {
        r.op = b->opk_id[os];
        op_key = b->opk_key[os];
        r.inplace = b->opk_inplace[os];
        op_flags = b->opk_flags[os];
        op_fused = b->opk_fused[os];
    } else {
        op_key = fa_ta_key_of_op(g->op_type);
        size_t ol = g->op_type ? strlen(g->op_type) : 0;
        r.inplace = ol > 1 && g->op_type[ol - 1] == '_' && g->op_type[ol - 2] != '_';
        op_flags = g->op_type && fa_kernel_is_backward(NULL, g->op_type) ? OPF_BWD : 0;
        op_fused = fa_kernel_fused_by(NULL, g->op_type, NULL, FA_KCLASS_OTHER);
        r.op = name_id(b->op_map, &b->ops, &b->n_ops, &b->cap_ops, g->op_type);
        if (g->op_type && r.op >= 0) {
            b->opk_ptr[os] = g->op_type;
            b->opk_id[os] = r.op;
            b->opk_key[os] = (int16_t)op_key;
            b->opk_inplace[os] = r.inplace;
            b->opk_flags[os] = op_flags;
            b->opk_fused[os] = op_fused;
        }
    }
    /* kernel name -> id: a direct-mapped cache by the name's address (names are interned and
     * live until finish) spares normalising every record */
    const char *gname = g->name ? g->name : "?";
    size_t slot = (size_t)(((uintptr_t)gname >> 4) * 0x9E3779B97F4A7C15ull >> 52) & (NAME_SLOTS - 1);
    bool added = false;
    const char *stored = NULL;
    int32_t tok;
    fa_kclass kcls;
    int kkey;
    uint8_t name_flags;
    const char *name_fused;
    if (b->name_ptr[slot] == gname) {
        tok = b->name_tok[slot];
        kcls = (fa_kclass)b->name_cls[slot];
        kkey = b->name_key[slot];
        name_flags = b->name_flags[slot];
        name_fused = b->name_fused[slot];
    } else {
        char norm[512];
        fa_kernel_name_normalize(gname, norm, sizeof norm);
        tok = fa_intern_str(b->tok_map, norm, &added, &stored);
        if (tok < 0) return fa__ta_nomem(ctx, b);
        /* the class and key by the record's own name: never by whichever name of its token came
         * first, which depends on the order records come in */
        kcls = fa_kernel_classify(gname);
        kkey = fa_ta_key_of_kernel(stored ? stored : b->toks[tok].name, kcls);
        name_flags = (fa_kernel_is_backward(gname, NULL) ? NMF_BWD : 0) | (name_integral(gname) ? NMF_INT : 0);
        name_fused = fa_kernel_fused_by(gname, NULL, NULL, FA_KCLASS_OTHER);
        b->name_ptr[slot] = gname;
        b->name_tok[slot] = tok;
        b->name_cls[slot] = (uint8_t)kcls;
        b->name_key[slot] = (int16_t)kkey;
        b->name_flags[slot] = name_flags;
        b->name_fused[slot] = name_fused;
    }
    /* a kernel its name says nothing about is what its op is (attn_fwd under
     * aten::_flash_attention_forward, nvjet_* under aten::addmm); a collective op's kernels are
     * collectives */
    fa_kclass refined = fa_kclass_with_op(kcls, op_key);
    if (refined != kcls) {
        kcls = refined;
        kkey = fa_ta_key_of_kernel(added ? stored : b->toks[tok].name, kcls);
    }
    /* the stack's pattern frame and what it says, cached by address */
    uint8_t stk_flags;
    size_t ss = (size_t)(((uintptr_t)g->stack >> 4) * 0x9E3779B97F4A7C15ull >> 54) & 1023;
    if (g->stack && b->stk_ptr[ss] == g->stack) {
        r.frame = b->stk_frame[ss];
        r.frame_pat = b->stk_pat[ss];
        stk_flags = b->stk_flags[ss];
        r.module = b->stk_module[ss];
    } else {
        r.frame = frame_of(b, g->stack, &r.frame_pat);
        stk_flags = stack_flags(g->stack);
        r.module = module_of(b, g->stack);
        if (g->stack && r.frame >= -1 && r.module >= -1) {
            b->stk_ptr[ss] = g->stack;
            b->stk_frame[ss] = r.frame;
            b->stk_pat[ss] = r.frame_pat;
            b->stk_flags[ss] = stk_flags;
            b->stk_module[ss] = r.module;
        }
    }
    /* the user's source line around its op, cached by address */
    size_t cs = (size_t)(((uintptr_t)g->source >> 4) * 0x9E3779B97F4A7C15ull >> 54) & 1023;
    if (g->source && b->src_ptr[cs] == g->source) {
        r.source = b->src_id[cs];
    } else {
        r.source = name_id(b->src_map, &b->srcs, &b->n_srcs, &b->cap_srcs, g->source);
        if (g->source && r.source >= 0) {
            b->src_ptr[cs] = g->source;
            b->src_id[cs] = r.source;
        }
    }
    /* fa_kernel_fused_by(gname, op, stack, kcls), from its cached parts */
    const char *fused_by = kcls == FA_KCLASS_ATTENTION ? fa_kernel_fused_by(NULL, NULL, NULL, kcls)
                           : name_fused                ? name_fused
                           : op_fused                  ? op_fused
                           : (stk_flags & STF_COMPILED) && kcls != FA_KCLASS_GEMM && kcls != FA_KCLASS_CONV
                               ? fa_kernel_fused_by(NULL, NULL, g->stack, kcls)
                               : NULL;
    bool bwd = (name_flags & NMF_BWD) || (op_flags & OPF_BWD);
    if (added) {
        tokstat *na = fa__ta_grow(b->toks, &b->cap_toks, b->n_toks + 1, sizeof *na);
        if (!na) return fa__ta_nomem(ctx, b);
        b->toks = na;
        tokstat *t = &b->toks[b->n_toks++];
        memset(t, 0, sizeof *t);
        t->name = stored;
        t->full_name = gname;
        t->cls = kcls;
        t->bwd = bwd;
        t->fused_by = fused_by;
        t->rep_start = g->start_ns;
        t->rep_end = g->end_ns;
        t->cfg_start = t->occ_start = UINT64_MAX;
        t->occupancy = -1;
    }
    tokstat *t = &b->toks[tok];
    t->count++;
    t->total_ns += d;
    if (!fa__qh_add(&t->dur, d)) return fa__ta_nomem(ctx, b);
    /* the row's full name, class, launch configuration and occupancy: the earliest record's that
     * has them (ties by name), whatever the order of arrival */
    if (g->start_ns < t->rep_start || (g->start_ns == t->rep_start && (g->end_ns < t->rep_end ||
                                        (g->end_ns == t->rep_end && strcmp(gname, t->full_name) < 0)))) {
        t->full_name = gname;
        t->cls = kcls;
        t->bwd = bwd;
        t->fused_by = fused_by;
        t->rep_start = g->start_ns;
        t->rep_end = g->end_ns;
    }
    if (g->block[0] > 0 && g->start_ns <= t->cfg_start) {
        if (g->start_ns < t->cfg_start || memcmp(g->grid, t->grid, sizeof t->grid) < 0 ||
            (!memcmp(g->grid, t->grid, sizeof t->grid) && memcmp(g->block, t->block, sizeof t->block) < 0)) {
            memcpy(t->grid, g->grid, sizeof t->grid);
            memcpy(t->block, g->block, sizeof t->block);
            t->registers = g->registers;
            t->smem = g->static_smem + g->dynamic_smem;
        }
        t->cfg_start = g->start_ns;
    }
    if (g->occupancy >= 0 && (g->start_ns < t->occ_start || (g->start_ns == t->occ_start && g->occupancy < t->occupancy))) {
        t->occupancy = g->occupancy;
        t->occ_src = "trace";
        t->occ_start = g->start_ns;
    }
    b->n_kernels++;
    b->kernel_ns += d;
    b->class_ns[kcls] += d;
    if (fused_by) b->n_fused_kernels++, b->fused_kernel_ns += d;
    if (b->n_kernels == 1 || g->start_ns < b->first_ns) b->first_ns = g->start_ns;
    if (g->end_ns > b->last_ns) b->last_ns = g->end_ns;

    r.start = g->start_ns;
    r.end = g->end_ns > g->start_ns ? g->end_ns : g->start_ns;
    r.launch_start = L ? L->start_ns : 0;
    r.launch_end = L ? (L->end_ns > L->start_ns ? L->end_ns : L->start_ns) : 0;
    r.opinst = g->external_id;
    r.tok = tok;
    r.cls = (uint8_t)kcls;
    if (bwd) r.flags |= RF_BWD;
    if (name_flags & NMF_INT) r.flags |= RF_INTDATA;
    if (stk_flags & STF_BWDPASS) r.flags |= RF_BWDPASS;
    r.aot = (stk_flags & STF_AOT) != 0;
    r.optim = (stk_flags & STF_OPTIM) != 0;
    if (fused_by) r.flags |= RF_FUSED;
    /* a memory-bound kernel an addmm or a convolution launched (a bias broadcast, a cast) is not
     * the GEMM: only its own name says what it is */
    if (fa_kclass_light(kcls) && (op_key == FA_TA_KEY_GEMM || op_key == FA_TA_KEY_CONV || op_key == FA_TA_KEY_ATTENTION ||
                                  op_key == FA_TA_KEY_COLLECTIVE))
        op_key = -1;
    r.key = (int16_t)(kkey >= 0 ? kkey : op_key >= 0 ? op_key : FA_TA_KEY_OTHER);
    size_t hs = (size_t)(((uintptr_t)g->shapes >> 4) * 0x9E3779B97F4A7C15ull >> 54) & 1023;
    if (g->shapes && b->shp_ptr[hs] == g->shapes) {
        r.shape = b->shp_id[hs];
    } else {
        r.shape = shape_id(b, g->shapes);
        if (g->shapes && r.shape >= 0) {
            b->shp_ptr[hs] = g->shapes;
            b->shp_id[hs] = r.shape;
        }
    }
    if (r.op < -1 || r.shape < -1 || r.frame < -1 || r.module < -1 || r.source < -1) return fa__ta_nomem(ctx, b);
    r.graph = -1;
    r.graph_launch_op = r.graph_capture_op = -1;
    r.wid = window_add(b, g, L, tok);
    r.pid = g->pid;
    r.tid = g->tid;
    r.launch_ns = -1;
    if (g->flags & FA_ACTF_ORPHAN) r.flags |= RF_ORPHAN;
    if (g->flags & FA_ACTF_CLOCK_INVERSION) r.flags |= RF_INVERTED;
    int64_t ld = L && L->end_ns > L->start_ns ? (int64_t)(L->end_ns - L->start_ns) : (L ? 0 : -1);
    bool graph = false;
    if (L && L->name) { /* GraphLaunch in the launch call's name, memoised by its address */
        if (L->name != b->last_launch_name) {
            b->last_launch_name = L->name;
            b->last_launch_graph = strstr(L->name, "GraphLaunch") || strstr(L->name, "graphLaunch");
        }
        graph = b->last_launch_graph;
    }
    if (graph || (g->flags & FA_ACTF_GRAPH)) {
        r.flags |= RF_GRAPH;
        r.graph = L ? (L->pid * 1000003) ^ L->correlation : g->correlation;
        /* the op around the launch call, else the innermost frame of its stack: a user range
         * (sglang's step[DECODE bs=32], vLLM's execute_model) holds a graph launch no cpu op does */
        const char *lop = g->node_name;
        char lbuf[256];
        if (!lop && g->stack) {
            const char *last = g->stack, *q;
            while ((q = strstr(last, " > ")) != NULL) last = q + 3;
            if (*last && strlen(last) < sizeof lbuf) {
                snprintf(lbuf, sizeof lbuf, "%s", last);
                lop = lbuf;
            }
        }
        r.graph_launch_op = name_id(b->op_map, &b->ops, &b->n_ops, &b->cap_ops, lop);
        /* the importer sets op_type to the captured launch's op when the capture is in the trace,
         * else it stays the op around cudaGraphLaunch */
        r.graph_capture_op = g->op_type && g->node_name && strcmp(g->op_type, g->node_name) ? r.op : -1;
        b->graph_kernels++;
        r.launch_ns = ld; /* taken by its replay in time order (graph_take) */
    } else if (L) {
        r.launch_ns = ld;
        if (!fa__qh_add(&b->launch_q, ld)) return fa__ta_nomem(ctx, b);
        b->n_launch_calls++;
        b->launch_call_ns += ld;
    }
    /* roofline point (kernel name x input shapes) */
    {
        int32_t pk[2] = {tok, r.shape >= 0 ? b->shapes[r.shape]->dims_id : -1};
        bool padded;
        int32_t pid = fa_intern_id(b->point_map, pk, sizeof pk, &padded, NULL);
        if (pid < 0) return fa__ta_nomem(ctx, b);
        if (padded) {
            pointstat *na = fa__ta_grow(b->points, &b->cap_points, b->n_points + 1, sizeof *na);
            if (!na) return fa__ta_nomem(ctx, b);
            b->points = na;
            b->points[b->n_points++] = (pointstat){tok, r.shape, r.op, 0, 0};
        }
        b->points[pid].count++;
        b->points[pid].total_ns += d;
    }
    if (r.shape >= 0) {
        b->n_estimated_bytes++;
        /* the best bandwidth a memory-bound kernel reached (kernels over 5 us moving at least
         * FA_TA_ROOF_MIN_BYTES: shorter or smaller ones are latency-bound and say nothing about the
         * roof; a 1 KB threshold over 5.6 us "reached" 1 GB/s on an MI250 GCD the table could not
         * name, and set its memory roof) */
        if (fa_kclass_light(kcls) && !fused_by && d >= 5000) {
            kbytes kb;
            fa__ta_kernel_bytes(b->shapes[r.shape], r.key, r.inplace, &kb);
            double gbs = (kb.read + kb.write) / (double)d;
            for (int k = 0; k < ROOF_BUCKETS && kb.read >= 0 && kb.write >= 0 &&
                            kb.read + kb.write >= (double)FA_TA_ROOF_MIN_BYTES * (double)(1 << k); k++)
                if (gbs > b->best_gbs[k]) {
                    b->best_gbs[k] = gbs;
                    b->best_gbs_kernel[k] = t->name;
                }
        }
    }
    strm *s = stream_of(ctx, b, g->device, g->stream);
    if (!s) return b->fail;
    return fa__ta_spool_add(ctx, b, s, &r);
}
