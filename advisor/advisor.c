/* advisor — from a prepared graph and its analysis to a ranked fusion plan: BN folding,
 * epilogues, reductions (named and decomposed), elementwise chains, horizontal fusion, the
 * cost model, the cuda register/occupancy gate, and a why-not for every edge that did not fuse
 * (rules: ../shared/DESIGN.md "Fusion rules"; docs/fusion-rules.md). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "advisor-impl.h"
#include "advisor/codegen.h"
#include "advisor/gate.h"
#include "graph/op_math.h"

/* Default ceilings when no analysis is given (documented in advisor.h / docs/fusion-rules.md). */
#define DEFAULT_BW_GBS 10.0
#define DEFAULT_PEAK_GFLOPS 100.0
#define DEFAULT_DISPATCH_NS 1000.0
#define MAX_POST 32

fa_advise_options fa_advise_options_default(void)
{
    fa_advise_options o = {.target = FA_TARGET_CPU, .arch = "sm_90", .max_ops = FA_ADVISE_MAX_OPS_DEFAULT,
                           .max_inputs = FA_ADVISE_MAX_INPUTS_DEFAULT,
                           .occupancy_floor = 0.5, .no_gate = false};
    return o;
}

/* ---- working state ---- */

typedef struct wcl {
    fa_cluster_kind kind;
    int *m;                   /* members (node ids), unordered until finish */
    int n;
    int anchor, depends_on, extra; /* extra: BN node of the BN_FOLD this epilogue depends on */
    fa_reduce_kind red;
    int reduce_axis;
    float eps;
    char label[128];
    int n_post;
    fa_post_op post[MAX_POST]; /* operand: a tensor id of g */
    int gen;                  /* EPILOGUE: generated over the product's rows, no post-ops (fa_cluster.epilogue_generated) */
    int gen_alt;              /* EPILOGUE with post-ops (gen 0) that the generated path also
                                 expresses, with a probe: both builds are probed and the faster
                                 taken (choose_epilogue_path) */
    char path_note[480];      /* that choice and both probed times, for the basis ("" none) */
    double recompute_ns;
    uint64_t horiz_bytes;     /* HORIZONTAL: bytes of the shared input */
} wcl;

typedef struct adv {
    fa_ctx *ctx;
    const fa_graph *g;
    const fa_analysis *a;
    fa_advise_options opt;
    fa_arena *ar;
    double bw, peak, disp;    /* GB/s (= bytes/ns), GFLOP/s (= FLOP/ns), ns per kernel */
    bool estimate;            /* every kernel estimated on A->opt.device's data sheet */
    const char *foreign;      /* device key of a profile measured on another kind of device than
                                 the target (its medians and ceilings say nothing about the
                                 target's kernels), else NULL */
    fa_plan *plan;            /* the plan being built: clusters [0, i] filled while cluster i is
                                 predicted (the probe builds its fused kernel from them) */
    bool probe_keep;          /* the cluster just predicted: a probe predicted a loss it did not
                                 resolve (fa_probe_loss_resolved): proposed for measurement */
    fa_cluster *alt;          /* by index as plan->clusters before ranking: a copy of each cluster,
                                 the epilogues with gen_alt as their generated build (the probe
                                 builds that one from this array); NULL when no cluster has one */
    int *pos;                 /* node id -> topo position, -1 when not live */
    int *owner;               /* node id -> index in cl, -1 when unclaimed */
    char *inreg;              /* node id -> 1 while in the region being grown */
    unsigned *seen;           /* cycle check: node id -> walk number that visited it */
    unsigned walk;            /* current cycle-check walk (0 = never) */
    int *stack;
    unsigned *queued;         /* region scan: node id -> pass number that queued it */
    unsigned pass;            /* current region-scan pass */
    fa_adv_heap heap;         /* region scan: topological positions waiting in this pass */
    int cursor;               /* region scan: position of the node last handed out */
    int m_cap;                /* members a working cluster can hold (max_ops plus slack) */
    wcl *cl;
    int ncl, capcl;
    fa_why_not *wn;
    int nwn, capwn;
    int *wn_slot;             /* open-addressing index of wn by (producer, consumer, tensor), -1 empty */
    int wn_slots;             /* a power of two, kept at least twice nwn */
    bool oom;
} adv;

/* Slot of why-not (p, c, t) in A->wn_slot: the edge's index there, or the empty slot where it
 * would go. The table is never full (kept at most half full). */
static int wn_find(const adv *A, int p, int c, int t)
{
    uint64_t h = ((uint64_t)(uint32_t)p * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(uint32_t)c * 0xC2B2AE3D27D4EB4Full) ^
                 ((uint64_t)(uint32_t)t * 0x165667B19E3779F9ull);
    h ^= h >> 29;
    unsigned mask = (unsigned)A->wn_slots - 1;
    for (unsigned i = (unsigned)h & mask;; i = (i + 1) & mask) {
        int k = A->wn_slot[i];
        if (k < 0) return (int)i;
        const fa_why_not *w = &A->wn[k];
        if (w->producer == p && w->consumer == c && w->tensor == t) return (int)i;
    }
}

/* Grow the why-not index to hold twice `need` entries (rehashing what is there). */
static bool wn_reserve(adv *A, int need)
{
    if (A->wn_slots >= 2 * need && A->wn_slots > 0) return true;
    int ns = A->wn_slots ? A->wn_slots : 128;
    while (ns < 2 * need) ns *= 2;
    int *slot = malloc(sizeof(int) * (size_t)ns);
    if (!slot) return false;
    for (int i = 0; i < ns; i++) slot[i] = -1;
    free(A->wn_slot);
    A->wn_slot = slot;
    A->wn_slots = ns;
    for (int k = 0; k < A->nwn; k++) A->wn_slot[wn_find(A, A->wn[k].producer, A->wn[k].consumer, A->wn[k].tensor)] = k;
    return true;
}

static void why(adv *A, int p, int c, int t, fa_why_code code, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static bool commit_cluster(adv *A);
static bool commit_cluster_ex(adv *A, bool record_why);
static int cmp_by_pos(const void *a, const void *b, void *pos_);
static void io_of(adv *A, const wcl *c, fa_cluster *out, int *tmp);
static void why(adv *A, int p, int c, int t, fa_why_code code, const char *fmt, ...)
{
    if (!wn_reserve(A, A->nwn + 1)) { A->oom = true; return; }
    int slot = wn_find(A, p, c, t);
    if (A->wn_slot[slot] >= 0) return; /* first reason wins */
    if (A->nwn == A->capwn) {
        int nc = A->capwn ? 2 * A->capwn : 64;
        fa_why_not *w = realloc(A->wn, sizeof *w * (size_t)nc);
        if (!w) { A->oom = true; return; }
        A->wn = w;
        A->capwn = nc;
    }
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    A->wn_slot[slot] = A->nwn;
    fa_why_not *w = &A->wn[A->nwn++];
    w->producer = p;
    w->consumer = c;
    w->tensor = t;
    w->code = code;
    w->reason = fa_arena_strdup(A->ar, buf);
}

static double flops_of(const adv *A, int nid)
{
    fa_op_cost c;
    fa_node_cost(A->g, A->g->nodes[nid], &c);
    return (double)c.flops;
}

static double mb(uint64_t b) { return b / 1e6; }

static wcl *new_cluster(adv *A, fa_cluster_kind kind)
{
    if (A->ncl == A->capcl) {
        int nc = A->capcl ? 2 * A->capcl : 32;
        wcl *w = realloc(A->cl, sizeof *w * (size_t)nc);
        if (!w) { A->oom = true; return NULL; }
        A->cl = w;
        A->capcl = nc;
    }
    wcl *c = &A->cl[A->ncl];
    memset(c, 0, sizeof *c);
    c->m = malloc(sizeof(int) * (size_t)A->m_cap);
    if (!c->m) { A->oom = true; return NULL; }
    c->kind = kind;
    c->anchor = c->depends_on = c->extra = -1;
    A->ncl++;
    return c;
}

static void drop_last_cluster(adv *A)
{
    A->ncl--;
    free(A->cl[A->ncl].m);
}

static void claim(adv *A, int ci)
{
    wcl *c = &A->cl[ci];
    for (int i = 0; i < c->n; i++)
        if (A->owner[c->m[i]] < 0) A->owner[c->m[i]] = ci;
}

/* ---- region helpers (A->inreg marks the region) ---- */

static bool produced_in(const adv *A, int tid)
{
    int p = tid >= 0 ? A->g->tensors[tid]->producer : -1;
    return p >= 0 && A->pos[p] >= 0 && A->inreg[p];
}

/* True when some path leaves the region and comes back into it (fusing would create a cycle).
 * Walks downstream from the region's outside consumers, but only through nodes placed before the
 * region's last member in topological order: a path that re-enters the region ends at a member,
 * and every node on it comes before that member (a topological order puts each producer before
 * its consumers). So the walk costs the region's topological span, not everything downstream,
 * and marks visits with a walk number instead of clearing a per-node array: advising a
 * 100,000-node chain stays near-linear (bench/bench_advise_chain). */
static bool region_has_cycle(adv *A, const int *m, int n)
{
    const fa_graph *g = A->g;
    int last = -1;
    for (int i = 0; i < n; i++)
        if (A->pos[m[i]] > last) last = A->pos[m[i]];
    if (++A->walk == 0) { /* wrapped: forget every earlier walk */
        memset(A->seen, 0, sizeof *A->seen * (size_t)g->n_nodes);
        A->walk = 1;
    }
    const unsigned w = A->walk;
    int sp = 0;
    for (int i = 0; i < n; i++) {
        const fa_node *nd = g->nodes[m[i]];
        for (int o = 0; o < nd->n_outputs; o++) {
            if (nd->outputs[o] < 0) continue;
            const int *cons;
            int nc = fa_graph_consumers(g, nd->outputs[o], &cons);
            for (int k = 0; k < nc; k++) {
                int x = cons[k];
                if (A->inreg[x] || A->seen[x] == w || A->pos[x] < 0 || A->pos[x] > last) continue;
                A->seen[x] = w;
                A->stack[sp++] = x;
            }
        }
    }
    while (sp > 0) {
        const fa_node *nd = g->nodes[A->stack[--sp]];
        for (int o = 0; o < nd->n_outputs; o++) {
            if (nd->outputs[o] < 0) continue;
            const int *cons;
            int nc = fa_graph_consumers(g, nd->outputs[o], &cons);
            for (int k = 0; k < nc; k++) {
                int x = cons[k];
                if (A->inreg[x]) return true;
                if (A->seen[x] == w || A->pos[x] < 0 || A->pos[x] > last) continue;
                A->seen[x] = w;
                A->stack[sp++] = x;
            }
        }
    }
    return false;
}

/* ---- region scan: the nodes next to a growing region, in topological order ----
 * Growing a region (an elementwise chain, a reduction domain) re-examines, pass after pass until
 * nothing joins, every node that touches it: consumers of its members' outputs (forward) and
 * producers of their inputs (backward). Each pass visits them in topological order, and a node
 * that starts touching the region during a pass is visited in that pass when it comes after the
 * one just added, else in the next pass, which is what a scan over the whole topological order
 * would do, at the cost of the region's neighbourhood instead of the graph. */

/* Queue live node x for this pass when it is outside the region and after the cursor. */
static void scan_offer(adv *A, int x)
{
    if (x < 0 || A->pos[x] <= A->cursor || A->inreg[x] || A->queued[x] == A->pass) return;
    A->queued[x] = A->pass;
    fa_adv_heap_push(&A->heap, A->pos[x]);
}

/* Queue node nid's neighbours: consumers of its outputs, producers of its inputs. */
static void scan_offer_neighbours(adv *A, int nid)
{
    const fa_graph *g = A->g;
    const fa_node *nd = g->nodes[nid];
    for (int o = 0; o < nd->n_outputs; o++) {
        const int *cons;
        int nc = nd->outputs[o] >= 0 ? fa_graph_consumers(g, nd->outputs[o], &cons) : 0;
        for (int k = 0; k < nc; k++) scan_offer(A, cons[k]);
    }
    for (int k = 0; k < nd->n_inputs; k++)
        if (nd->inputs[k] >= 0) scan_offer(A, g->tensors[nd->inputs[k]]->producer);
}

/* Start a pass over region (m, n). */
static void scan_begin(adv *A, const int *m, int n)
{
    if (++A->pass == 0) { /* wrapped: forget every earlier pass */
        memset(A->queued, 0, sizeof *A->queued * (size_t)A->g->n_nodes);
        A->pass = 1;
    }
    A->heap.n = 0;
    A->cursor = -1;
    for (int i = 0; i < n; i++) scan_offer_neighbours(A, m[i]);
}

/* The pass's next node in topological order, -1 when the pass is over. */
static int scan_next(adv *A)
{
    if (A->heap.n == 0) return -1;
    A->cursor = fa_adv_heap_pop(&A->heap);
    return A->g->topo[A->cursor];
}

/* Node nid (the one scan_next just handed out) joined the region: its neighbours after it are
 * visited in this pass. */
static void scan_joined(adv *A, int nid) { scan_offer_neighbours(A, nid); }

/* Distinct tensors read by the region and not produced inside it. */
static int count_ext_inputs(const adv *A, const int *m, int n)
{
    int cnt = 0;
    for (int i = 0; i < n; i++) {
        const fa_node *nd = A->g->nodes[m[i]];
        for (int k = 0; k < nd->n_inputs; k++) {
            int t = nd->inputs[k];
            if (t < 0 || produced_in(A, t)) continue;
            bool dup = false;
            for (int j = 0; j <= i && !dup; j++) {
                const fa_node *o = A->g->nodes[m[j]];
                for (int q = 0; q < (j == i ? k : o->n_inputs); q++)
                    if (o->inputs[q] == t) { dup = true; break; }
            }
            if (!dup) cnt++;
        }
    }
    return cnt;
}

/* Try adding node nid to region (m, *n): caps then cycle. Returns true when kept. The edge
 * (p -> nid through t) gets the why-not on refusal. */
static bool try_add(adv *A, int *m, int *n, int nid, int p, int t)
{
    const fa_graph *g = A->g;
    if (*n + 1 > A->opt.max_ops) {
        why(A, p, nid, t, FA_WHY_CAP, "cluster already holds %d ops (cap --max-ops %d): '%s' starts a new kernel", *n,
            A->opt.max_ops, g->nodes[nid]->name);
        return false;
    }
    m[(*n)++] = nid;
    A->inreg[nid] = 1;
    int ni = count_ext_inputs(A, m, *n);
    if (ni > A->opt.max_inputs) {
        A->inreg[nid] = 0;
        (*n)--;
        why(A, p, nid, t, FA_WHY_CAP, "adding '%s' would make %d distinct inputs (cap --max-inputs %d)", g->nodes[nid]->name,
            ni, A->opt.max_inputs);
        return false;
    }
    if (region_has_cycle(A, m, *n)) {
        A->inreg[nid] = 0;
        (*n)--;
        why(A, p, nid, t, FA_WHY_CYCLE, "fusing '%s' would create a cycle: one of its inputs depends on the cluster's "
            "output through nodes outside it", g->nodes[nid]->name);
        return false;
    }
    return true;
}

static void clear_region(adv *A, const int *m, int n)
{
    for (int i = 0; i < n; i++) A->inreg[m[i]] = 0;
}

static bool same_shape(const fa_tensor *a, const fa_tensor *b)
{
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

static bool all_consumers_in(const adv *A, int tid)
{
    if (A->g->tensors[tid]->flags & FA_TENSOR_GRAPH_OUTPUT) return false;
    const int *cons;
    int nc = fa_graph_consumers(A->g, tid, &cons);
    for (int k = 0; k < nc; k++)
        if (!A->inreg[cons[k]]) return false;
    return nc > 0;
}

/* ---- 0. attention (advisor/attention.c: the pattern; docs/fusion-rules.md "Attention") ---- */

/* What the attention cluster holds besides the products and the softmax, for its label. */
static void attention_label(const adv *A, const int *m, int n, int softmax, char *out, size_t cap)
{
    const fa_graph *g = A->g;
    bool scale = false, add = false, where = false, grouped = false, op = false, guard = false;
    for (int i = 0; i < n; i++) {
        const fa_node *nd = g->nodes[m[i]];
        if (A->pos[m[i]] > A->pos[softmax] && !strcmp(nd->op_type, "Where")) { /* after the softmax */
            guard = true;
            continue;
        }
        if (fa_adv_reduce_kind(nd) == FA_REDUCE_ATTENTION) {
            op = true;
            const fa_tensor *k = fa_graph_in(g, nd, 1), *q = fa_graph_in(g, nd, 0);
            if (nd->n_inputs > 3 && nd->inputs[3] >= 0) {
                if (g->tensors[nd->inputs[3]]->dtype == FA_DTYPE_BOOL) where = true;
                else add = true;
            }
            if (fa_node_attr_int(nd, "is_causal", 0)) where = true;
            if (q && k && q->rank == 4 && k->rank == 4 && q->dims[1] != k->dims[1]) grouped = true;
            if (q && k && q->rank == 3 && fa_node_attr_int(nd, "q_num_heads", 0) != fa_node_attr_int(nd, "kv_num_heads", 0))
                grouped = true;
        }
        if (!strcmp(nd->op_type, "Mul") || !strcmp(nd->op_type, "Div")) scale = true;
        if (!strcmp(nd->op_type, "Add") || !strcmp(nd->op_type, "Sub")) add = true;
        if (!strcmp(nd->op_type, "Where")) where = true;
        const fa_tensor *vi = fa_graph_in(g, nd, 0), *vo = fa_graph_out(g, nd, 0);
        if (nd->op && nd->op->view && vi && vo && fa_tensor_numel(vo) > fa_tensor_numel(vi))
            grouped = true; /* a broadcast of K or V: grouped heads */
    }
    snprintf(out, cap, "attention%s%s%s%s%s%s%s", op ? "(op" : "(", op && (scale || add || where || grouped) ? ": " : "",
             add ? "additive mask, " : "", where ? "boolean/causal mask, " : "", grouped ? "grouped kv, " : "",
             guard ? "row guard, " : "", scale ? "scale" : "");
    size_t l = strlen(out);
    while (l > 0 && (out[l - 1] == ' ' || out[l - 1] == ',')) out[--l] = 0;
    if (l > 0 && out[l - 1] == '(') out[--l] = 0;
    else if (l + 1 < cap) { out[l++] = ')'; out[l] = 0; }
}

static void phase_attention(adv *A)
{
    const fa_graph *g = A->g;
    for (int p = 0; p < g->n_topo; p++) {
        int sid = g->topo[p];
        fa_reduce_kind rk = fa_adv_reduce_kind(g->nodes[sid]);
        if (A->owner[sid] >= 0 || (rk != FA_REDUCE_SOFTMAX && rk != FA_REDUCE_ATTENTION)) continue;
        fa_adv_attention at;
        if (!fa_adv_match_attention(g, A->pos, A->owner, sid, &at)) continue;
        /* first with the views around Q, K, V and the output (the kernel reads through them), then
         * without them when the code generator cannot read through one */
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1 && at.n_views == 0) break;
            int n = at.n_core + (pass == 0 ? at.n_views : 0);
            wcl *c = new_cluster(A, FA_CLUSTER_ATTENTION);
            if (!c) return;
            int *m = realloc(c->m, sizeof(int) * (size_t)(n > A->m_cap ? n : A->m_cap));
            if (!m) { A->oom = true; return; }
            c->m = m;
            memcpy(c->m, at.core, sizeof(int) * (size_t)at.n_core);
            if (pass == 0) memcpy(c->m + at.n_core, at.views, sizeof(int) * (size_t)at.n_views);
            c->n = n;
            c->anchor = sid;
            attention_label(A, c->m, c->n, sid, c->label, sizeof c->label);
            for (int i = 0; i < n; i++) A->inreg[c->m[i]] = 1;
            bool cycle = region_has_cycle(A, c->m, n);
            clear_region(A, c->m, n);
            if (cycle) {
                drop_last_cluster(A);
                continue;
            }
            if (commit_cluster_ex(A, pass == 1 || at.n_views == 0)) break;
        }
    }
}

/* Bytes of the score tensors the unfused ops of attention cluster w hold at once: for each
 * member, its inputs and outputs produced and read only inside the cluster with the scores'
 * element count (the softmax's input), summed; the largest. 0 for the Attention op (its
 * reference kernel already works row by row). */
static uint64_t score_bytes_of(adv *A, const wcl *w)
{
    const fa_graph *g = A->g;
    const fa_node *an = w->anchor >= 0 ? g->nodes[w->anchor] : NULL;
    if (!an || fa_adv_reduce_kind(an) != FA_REDUCE_SOFTMAX || an->inputs[0] < 0) return 0;
    int64_t ns = fa_tensor_numel(g->tensors[an->inputs[0]]);
    if (ns <= 0) return 0;
    for (int i = 0; i < w->n; i++) A->inreg[w->m[i]] = 1;
    uint64_t best = 0;
    for (int i = 0; i < w->n; i++) {
        const fa_node *nd = g->nodes[w->m[i]];
        int ts[64], nt = 0;
        for (int k = 0; k < nd->n_inputs && nt < 64; k++) ts[nt++] = nd->inputs[k];
        for (int k = 0; k < nd->n_outputs && nt < 64; k++) ts[nt++] = nd->outputs[k];
        uint64_t sum = 0;
        for (int k = 0; k < nt; k++) {
            int t = ts[k];
            bool dup = false;
            for (int j = 0; j < k; j++) dup |= ts[j] == t;
            if (t < 0 || dup || fa_tensor_numel(g->tensors[t]) != ns || !produced_in(A, t) || !all_consumers_in(A, t)) continue;
            sum += fa_tensor_bytes(g->tensors[t]);
        }
        if (sum > best) best = sum;
    }
    for (int i = 0; i < w->n; i++) A->inreg[w->m[i]] = 0;
    return best;
}

/* ---- 1. BN folding ---- */

static void phase_bn_fold(adv *A)
{
    const fa_graph *g = A->g;
    for (int p = 0; p < g->n_topo; p++) {
        const fa_node *bn = g->nodes[g->topo[p]];
        if (!bn->op || strcmp(bn->op_type, "BatchNormalization")) continue; /* an opaque node is not analysed */
        int prod;
        fa_why_code code = FA_WHY_NONE;
        char reason[400];
        if (!fa_adv_bn_foldable(g, bn, &prod, &code, reason, sizeof reason)) {
            if (prod >= 0 && code != FA_WHY_NONE) why(A, prod, bn->id, bn->inputs[0], code, "%s", reason);
            continue;
        }
        if (A->owner[prod] >= 0 || A->owner[bn->id] >= 0) continue;
        wcl *c = new_cluster(A, FA_CLUSTER_BN_FOLD);
        if (!c) return;
        c->m[c->n++] = prod;
        c->m[c->n++] = bn->id;
        c->anchor = prod;
        char lo[32];
        snprintf(lo, sizeof lo, "%s", g->nodes[prod]->op_type);
        for (char *q = lo; *q; q++) *q = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
        snprintf(c->label, sizeof c->label, "%s+bn", lo);
        claim(A, A->ncl - 1);
    }
}

/* ---- 2. reductions ---- */

/* Reduction domain of node n: its input shape and the first reduced axis r, reduced axes being
 * exactly [r, rank). False with a why code when the node reduces another set or drops dims. */
static bool reduction_domain(const fa_graph *g, const fa_node *n, int *r, fa_why_code *code)
{
    if (fa_adv_reduce_kind(n) == FA_REDUCE_NONE || fa_adv_reduce_kind(n) == FA_REDUCE_ATTENTION) {
        *code = FA_WHY_NO_PATTERN; /* no row domain: the attention op is the attention phase's */
        return false;
    }
    const fa_tensor *X = fa_graph_in(g, n, 0), *Y = fa_graph_out(g, n, 0);
    if (!X || !Y || X->rank < 1 || X->dtype != FA_DTYPE_FLOAT || Y->dtype != FA_DTYPE_FLOAT) { *code = FA_WHY_DTYPE; return false; }
    int rank = X->rank;
    for (int i = 0; i < rank; i++)
        if (X->dims[i] < 0) { *code = FA_WHY_DYNAMIC_SHAPE; return false; }
    fa_reduce_kind kind = fa_adv_reduce_kind(n);
    if (kind >= FA_REDUCE_SOFTMAX) {
        int64_t ax;
        if (kind == FA_REDUCE_SOFTMAX || kind == FA_REDUCE_LOG_SOFTMAX) {
            ax = fa_node_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
            if (ax < 0) ax += rank;
            if (n->opset >= 13 && ax != rank - 1) { *code = FA_WHY_NON_TRAILING_AXES; return false; }
        } else {
            ax = fa_node_attr_int(n, "axis", -1);
            if (ax < 0) ax += rank;
        }
        if (ax < 0 || ax >= rank) { *code = FA_WHY_NON_TRAILING_AXES; return false; }
        *r = (int)ax;
        return true;
    }
    if (!fa_reduce_is_axes(kind)) { *code = FA_WHY_OPAQUE; return false; }
    if (fa_node_attr_int(n, "keepdims", 1) != 1) { *code = FA_WHY_REDUCE_KEEPDIMS; return false; }
    const int64_t *axes = NULL;
    int na = fa_node_attr_ints(n, "axes", &axes);
    int64_t tmp[FA_MAX_RANK];
    if (na == 0 && n->n_inputs > 1 && n->inputs[1] >= 0) {
        const fa_tensor *T = g->tensors[n->inputs[1]];
        if (!(T->flags & FA_TENSOR_CONST) || !T->data) { *code = FA_WHY_NON_CONSTANT; return false; }
        na = (int)fa_tensor_numel(T);
        if (na > FA_MAX_RANK) { *code = FA_WHY_NON_TRAILING_AXES; return false; }
        for (int i = 0; i < na; i++) tmp[i] = fa_f64_to_i64_sat(fa_load_as_double(T->data, T->dtype, i));
        axes = tmp;
    }
    if (na == 0) {
        if (fa_node_attr_int(n, "noop_with_empty_axes", 0)) { *code = FA_WHY_OPAQUE; return false; }
        *r = 0;
        return true;
    }
    bool hit[FA_MAX_RANK] = {false};
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (a < 0 || a >= rank) { *code = FA_WHY_NON_TRAILING_AXES; return false; }
        hit[a] = true;
    }
    int first = rank;
    for (int i = 0; i < rank; i++)
        if (hit[i]) { first = i; break; }
    for (int i = first; i < rank; i++)
        if (!hit[i]) { *code = FA_WHY_NON_TRAILING_AXES; return false; }
    int cnt = 0;
    for (int i = 0; i < rank; i++) cnt += hit[i];
    if (cnt != rank - first) { *code = FA_WHY_NON_TRAILING_AXES; return false; }
    *r = first;
    return true;
}

typedef struct rdom {
    int rank, r;
    int64_t D[FA_MAX_RANK];
} rdom;

static bool is_D(const rdom *d, const fa_tensor *t)
{
    if (t->rank != d->rank) return false;
    for (int i = 0; i < d->rank; i++)
        if (t->dims[i] != d->D[i]) return false;
    return true;
}

static bool is_R(const rdom *d, const fa_tensor *t)
{
    if (t->rank != d->rank) return false;
    for (int i = 0; i < d->rank; i++)
        if (t->dims[i] != (i < d->r ? d->D[i] : 1)) return false;
    return true;
}

/* An outside operand of a post-reduction op: the full domain tensor, a scalar, or a parameter
 * that varies only along the reduced axes (right-aligned broadcast). */
static bool param_ok(const rdom *d, const fa_tensor *t)
{
    if (is_D(d, t) || is_R(d, t) || fa_tensor_numel(t) == 1) return true; /* full, one value per row, scalar */
    if (t->rank > d->rank) return false;
    for (int i = 0; i < t->rank; i++) {
        int a = i + d->rank - t->rank;
        if (t->dims[i] != 1 && t->dims[i] != d->D[a]) return false;
        if (a < d->r && t->dims[i] != 1) return false;
    }
    return true;
}

/* Whether an epilogue could reach node nd from a Conv/MatMul/Gemm not yet in a cluster: one of
 * nd's inputs comes from it through ops each read by the next only — elementwise ops a post-op
 * expresses (the bias add) and view-only reshapes — at most 8 of them. */
static bool gemm_epilogue_reach(const adv *A, const fa_node *nd)
{
    const fa_graph *g = A->g;
    for (int k = 0; k < nd->n_inputs; k++) {
        int t = nd->inputs[k];
        for (int hop = 0; t >= 0 && hop < 8; hop++) {
            const int *cc;
            const fa_node *p = fa_graph_producer(g, t);
            if (!p || !p->op || A->owner[p->id] >= 0 || fa_graph_consumers(g, t, &cc) != 1) break;
            if (fa_adv_is_complex(p)) return true;
            if (!(p->op->flags & FA_OPF_ALIAS) && !fa_adv_is_elementwise(g, p)) break;
            t = p->n_inputs >= 1 ? p->inputs[0] : -1;
            if (!(p->op->flags & FA_OPF_ALIAS)) { /* an elementwise step: the input it shares with the chain */
                t = -1;
                for (int i = 0; i < p->n_inputs && t < 0; i++) {
                    const fa_node *q = p->inputs[i] >= 0 ? fa_graph_producer(g, p->inputs[i]) : NULL;
                    const int *c2;
                    if (q && fa_graph_consumers(g, p->inputs[i], &c2) == 1 && !(g->tensors[p->inputs[i]]->flags & FA_TENSOR_CONST))
                        t = p->inputs[i];
                }
            }
        }
    }
    return false;
}

/* ---- the row patterns: what a reduction cluster's members spell ----
 *
 * A row-reduction cluster is one of the row patterns when its reduction is the op of that kind
 * (Softmax, LogSoftmax, LayerNormalization, RMSNormalization: fa_op.reduce), or when its members
 * spell it out: so many reductions of each kind (exactly) and so many elementwise ingredients,
 * each an op-math row (graph/op_math.h), in [lo, hi]. The decomposed forms are what the exporters
 * write (PyTorch's and TF's softmax: max, sub, exp, sum, div; the ONNX function bodies of
 * LayerNormalization-17 and RMSNormalization-23: two means / one mean, a root or reciprocal).
 * A new row pattern is one row here and its row kernel in codegen/codegen.c. */
enum {
    ING_MEAN,      /* ReduceMean (FA_REDUCE_MEAN) */
    ING_MAX,       /* ReduceMax */
    ING_SUM,       /* ReduceSum */
    ING_OTHER_RED, /* any other reduction */
    ING_EXP,       /* op-math row EXP */
    ING_LOG,       /* LOG */
    ING_SUB,       /* SUB */
    ING_ROOT,      /* SQRT, RECIPROCAL, POW: the norm's root (or its square) */
    ING_COUNT
};
#define ANY 1000
typedef struct row_pattern {
    fa_reduce_kind kind;
    const char *label;       /* the cluster's label; "(decomposed)" appended when spelled out */
    bool skip;               /* a norm: a residual Add into it makes it the skip form, labelled
                                "add+<label>" (ONNX Runtime's SkipLayerNormalization and
                                SkipSimplifiedLayerNormalization) */
    struct { short lo, hi; } need[ING_COUNT]; /* decomposed form: count ranges per ingredient */
} row_pattern;
/*                                               mean    max     sum     other   exp       log       sub       root */
static const row_pattern k_row_patterns[] = {
    {FA_REDUCE_LOG_SOFTMAX, "log_softmax", false, {{0, 0}, {1, 1}, {1, 1}, {0, 0}, {1, ANY}, {1, ANY}, {0, ANY}, {0, ANY}}},
    {FA_REDUCE_SOFTMAX, "softmax", false,         {{0, 0}, {1, 1}, {1, 1}, {0, 0}, {1, ANY}, {0, 0},   {0, ANY}, {0, ANY}}},
    {FA_REDUCE_LAYER_NORM, "layer_norm", true,    {{2, 2}, {0, 0}, {0, 0}, {0, 0}, {0, ANY}, {0, ANY}, {1, ANY}, {1, ANY}}},
    {FA_REDUCE_RMS_NORM, "rms_norm", true,        {{1, 1}, {0, 0}, {0, 0}, {0, 0}, {0, ANY}, {0, ANY}, {0, 0},   {1, ANY}}},
};
#undef ANY

/* The ingredient node n counts as, -1 for none. */
static int ingredient_of(const fa_node *n)
{
    fa_reduce_kind rk = fa_adv_reduce_kind(n);
    if (rk == FA_REDUCE_MEAN) return ING_MEAN;
    if (rk == FA_REDUCE_MAX) return ING_MAX;
    if (rk == FA_REDUCE_SUM) return ING_SUM;
    if (fa_adv_is_reduction(n)) return fa_reduce_is_row(rk) ? -1 : ING_OTHER_RED;
    if (n->domain && n->domain[0]) return -1;
    const fa_unary_math *u = fa_unary_math_find(n->op_type);
    if (u) return u->op == FA_UNARY_EXP ? ING_EXP : u->op == FA_UNARY_LOG ? ING_LOG
                : u->op == FA_UNARY_SQRT || u->op == FA_UNARY_RECIPROCAL ? ING_ROOT : -1;
    const fa_binary_math *bm = strcmp(n->op_type, "Sum") ? fa_binary_math_find(n->op_type) : NULL;
    if (bm) return bm->op == FA_BINARY_SUB ? ING_SUB : bm->op == FA_BINARY_POW ? ING_ROOT : -1;
    return -1;
}

/* The row pattern of kind `named` (a reduction op of its own; have NULL), or the first whose
 * decomposed form the ingredient counts have match; NULL for none. */
static const row_pattern *row_pattern_of(fa_reduce_kind named, const int *have)
{
    for (size_t i = 0; i < sizeof k_row_patterns / sizeof k_row_patterns[0]; i++) {
        const row_pattern *r = &k_row_patterns[i];
        if (!have) {
            if (r->kind == named) return r;
            continue;
        }
        bool ok = true;
        for (int k = 0; k < ING_COUNT && ok; k++) ok = have[k] >= r->need[k].lo && have[k] <= r->need[k].hi;
        if (ok) return r;
    }
    return NULL;
}

bool fa_adv_residual_add_in(const fa_graph *g, const int *m, int n)
{
    for (int i = 0; i < n; i++) {
        const fa_node *nd = g->nodes[m[i]];
        const fa_binary_math *bm = nd->domain && nd->domain[0] ? NULL : fa_binary_math_find(nd->op_type);
        if (!bm || bm->op != FA_BINARY_ADD || strcmp(nd->op_type, "Add") || nd->n_inputs != 2 || nd->n_outputs != 1) continue;
        const fa_tensor *Y = fa_graph_out(g, nd, 0);
        bool ok = Y != NULL;
        for (int k = 0; k < 2 && ok; k++) {
            const fa_tensor *T = fa_graph_in(g, nd, k);
            ok = T && !(T->flags & FA_TENSOR_CONST) && fa_tensor_numel(T) == fa_tensor_numel(Y) && T->rank == Y->rank;
            for (int j = 0; j < n && ok; j++) ok = !T || T->producer != m[j];
        }
        if (ok) return true;
    }
    return false;
}

static void phase_reductions(adv *A)
{
    const fa_graph *g = A->g;
    int *m = malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
    char *after = calloc((size_t)g->n_tensors + 1, 1); /* tensor computed from a reduction in the region */
    if (!m || !after) { free(m); free(after); A->oom = true; return; }
    for (int p = 0; p < g->n_topo; p++) {
        const fa_node *seed = g->nodes[g->topo[p]];
        if (A->owner[seed->id] >= 0) continue;
        if (!fa_adv_is_reduction(seed)) continue;
        int r;
        fa_why_code code = FA_WHY_NONE;
        if (!reduction_domain(g, seed, &r, &code)) {
            const fa_tensor *X = fa_graph_in(g, seed, 0);
            if (code == FA_WHY_NO_PATTERN) continue; /* no row domain at all: default_why says so */
            if (X)
                why(A, X->producer, seed->id, X->id, code,
                    "%s '%s' is not a reduction over trailing axes with kept dims (%s): no reduction domain to fuse in",
                    seed->op_type, seed->name, fa_why_code_name(code));
            continue;
        }
        rdom d;
        const fa_tensor *X = fa_graph_in(g, seed, 0);
        d.rank = X->rank;
        d.r = r;
        memcpy(d.D, X->dims, sizeof d.D);
        int n = 0;
        m[n++] = seed->id;
        A->inreg[seed->id] = 1;
        for (int o = 0; o < seed->n_outputs; o++)
            if (seed->outputs[o] >= 0) after[seed->outputs[o]] = 1;
        bool grew = true;
        while (grew) {
            grew = false;
            scan_begin(A, m, n);
            for (int nid; (nid = scan_next(A)) >= 0;) {
                const fa_node *nd = g->nodes[nid];
                if (A->inreg[nid] || A->owner[nid] >= 0) continue;
                bool fwd = false, back = false;
                int via_t = -1, via_p = -1;
                for (int k = 0; k < nd->n_inputs; k++)
                    if (nd->inputs[k] >= 0 && produced_in(A, nd->inputs[k])) {
                        fwd = true;
                        via_t = nd->inputs[k];
                        via_p = g->tensors[via_t]->producer;
                    }
                if (!fwd) {
                    back = nd->n_outputs >= 1 && nd->outputs[0] >= 0;
                    for (int o = 0; o < nd->n_outputs && back; o++)
                        if (nd->outputs[o] >= 0 && !all_consumers_in(A, nd->outputs[o])) back = false;
                    /* The pre-LN residual stream (GPT-2, ViT, LLaMA): x + r feeds this norm and the
                     * next residual add. The norm's row kernel computes the sum once and also writes
                     * it (a cluster output): one read of it saved and one kernel fewer, as ONNX
                     * Runtime's SkipLayerNormalization with its sum output and vLLM's
                     * fused_add_rms_norm do. Only an Add into a norm (a LayerNormalization or
                     * RMSNormalization op, or the mean a decomposed one starts with), and not one a
                     * GEMM's epilogue can take (gemm_epilogue_reach): a GEMM + bias + residual
                     * epilogue writes the sum the norm then reads, one pass fewer than a bias
                     * epilogue plus this cluster (ViT's matmul+add+add). */
                    fa_reduce_kind sk = fa_adv_reduce_kind(seed);
                    if (!back && nd->n_outputs == 1 && nd->outputs[0] >= 0 && !strcmp(nd->op_type, "Add") &&
                        (sk == FA_REDUCE_LAYER_NORM || sk == FA_REDUCE_RMS_NORM || sk == FA_REDUCE_MEAN) &&
                        !gemm_epilogue_reach(A, nd))
                        back = true;
                }
                if (!fwd && !back) continue;
                bool red = fa_adv_is_reduction(nd);
                if (red && (fa_adv_reduce_kind(nd) == FA_REDUCE_NONE || fa_adv_reduce_kind(nd) == FA_REDUCE_ATTENTION))
                    continue; /* no row domain (a pool, an Attention op): default_why */
                if (red) {
                    int r2;
                    fa_why_code c2 = FA_WHY_NONE;
                    const fa_tensor *X2 = fa_graph_in(g, nd, 0);
                    if (!fwd) { /* a same-domain reduction whose result only the region reads */
                        const fa_tensor *Y2 = fa_graph_out(g, nd, 0);
                        if (!reduction_domain(g, nd, &r2, &c2) || r2 != d.r || !is_D(&d, X2) || !Y2 ||
                            !(is_R(&d, Y2) || is_D(&d, Y2)))
                            continue;
                        if (!try_add(A, m, &n, nid, nid, Y2->id)) continue;
                        for (int o = 0; o < nd->n_outputs; o++)
                            if (nd->outputs[o] >= 0) after[nd->outputs[o]] = 1;
                        grew = true;
                        scan_joined(A, nid);
                        continue;
                    }
                    if (!reduction_domain(g, nd, &r2, &c2) || r2 != d.r || !is_D(&d, X2)) {
                        why(A, via_p, nid, via_t, FA_WHY_DIFFERENT_DOMAIN,
                            "%s '%s' reduces over a different domain than %s '%s' (%s): two reductions over different "
                            "domains never fuse", nd->op_type, nd->name, seed->op_type, seed->name,
                            c2 != FA_WHY_NONE ? fa_why_code_name(c2) : "other axes or shape");
                        continue;
                    }
                } else if (!fa_adv_is_elementwise(g, nd)) {
                    continue;
                }
                const fa_tensor *Y = fa_graph_out(g, nd, 0);
                if (back) {
                    if (red || !is_D(&d, Y)) continue;
                    /* leave a bias/residual add straight after a Conv/MatMul to that op's epilogue,
                     * except a scale by a scalar (the attention scale before a softmax) */
                    bool leave = false;
                    for (int k = 0; k < nd->n_inputs; k++) {
                        const fa_node *pp = nd->inputs[k] >= 0 ? fa_graph_producer(g, nd->inputs[k]) : NULL;
                        /* through view-only reshapes keeping the last dim, as the epilogue crosses
                         * them (Gemm -> Reshape [B, S, N] -> Add) */
                        for (int hop = 0; pp && pp->op && hop < 4 && (pp->op->flags & FA_OPF_ALIAS) && pp->n_inputs >= 1 && pp->inputs[0] >= 0;
                             hop++) {
                            const int *cv;
                            const fa_tensor *vi = g->tensors[pp->inputs[0]], *vo = fa_graph_out(g, pp, 0);
                            if (!vo || fa_graph_consumers(g, vo->id, &cv) != 1 || vi->rank < 1 || vo->rank < 1 ||
                                vi->dims[vi->rank - 1] != vo->dims[vo->rank - 1])
                                break;
                            pp = fa_graph_producer(g, pp->inputs[0]);
                        }
                        if (pp && fa_adv_is_complex(pp) && A->owner[pp->id] < 0) {
                            const int *cc;
                            if (pp->n_outputs < 1 || pp->outputs[0] < 0 || fa_graph_consumers(g, pp->outputs[0], &cc) != 1) continue;
                            char wb[256];
                            fa_post_op po;
                            fa_why_code wc;
                            if (fa_adv_post_op(g, nd, nd->inputs[k], &po, &wc, wb, sizeof wb) &&
                                (po.operand < 0 || fa_tensor_numel(g->tensors[po.operand]) != 1))
                                leave = true;
                        }
                    }
                    if (leave) continue;
                    int ct = nd->outputs[0];
                    const int *cons;
                    fa_graph_consumers(g, ct, &cons);
                    if (!try_add(A, m, &n, nid, nid, ct)) continue;
                    grew = true;
                    scan_joined(A, nid);
                    continue;
                }
                /* forward join */
                bool post = false;
                for (int k = 0; k < nd->n_inputs; k++)
                    if (nd->inputs[k] >= 0 && produced_in(A, nd->inputs[k]) && after[nd->inputs[k]]) post = true;
                if (!red) {
                    if (!(is_D(&d, Y) || is_R(&d, Y))) {
                        char a[64], b[64];
                        fa_tensor_shape_str(Y, a, sizeof a);
                        fa_tensor_shape_str(g->tensors[via_t], b, sizeof b);
                        why(A, via_p, nid, via_t, FA_WHY_SHAPE_CHANGING_EPILOGUE,
                            "%s '%s' turns %s into %s: outside the reduction domain of '%s'", nd->op_type, nd->name, b, a,
                            seed->name);
                        continue;
                    }
                    if (post) {
                        bool ok = true;
                        for (int k = 0; k < nd->n_inputs && ok; k++) {
                            int t = nd->inputs[k];
                            if (t < 0 || produced_in(A, t)) continue;
                            const fa_tensor *T = g->tensors[t];
                            if (!param_ok(&d, T)) {
                                char a[64];
                                why(A, via_p, nid, via_t, FA_WHY_NON_NORMALIZED_PARAM,
                                    "%s '%s' reads '%s' [%s], which varies along an axis the reduction '%s' does not "
                                    "normalize (axes %d..%d): not absorbed as a scale/bias", nd->op_type, nd->name,
                                    T->name, fa_tensor_shape_str(T, a, sizeof a), seed->name, d.r, d.rank - 1);
                                ok = false;
                            }
                        }
                        if (!ok) continue;
                    }
                }
                if (!try_add(A, m, &n, nid, via_p, via_t)) continue;
                if (post || red)
                    for (int o = 0; o < nd->n_outputs; o++)
                        if (nd->outputs[o] >= 0) after[nd->outputs[o]] = 1;
                grew = true;
                scan_joined(A, nid);
            }
        }
        for (int i = 0; i < n; i++) /* only members' outputs were marked: clear them for the next seed */
            for (int o = 0; o < g->nodes[m[i]]->n_outputs; o++)
                if (g->nodes[m[i]]->outputs[o] >= 0) after[g->nodes[m[i]]->outputs[o]] = 0;
        clear_region(A, m, n);
        if (n < 2) continue;
        /* classify: the row pattern the members spell (k_row_patterns) */
        int have[ING_COUNT] = {0};
        fa_reduce_kind named = FA_REDUCE_NONE; /* a reduction op of its own (Softmax ... RMSNormalization) */
        for (int i = 0; i < n; i++) {
            fa_reduce_kind rk = fa_adv_reduce_kind(g->nodes[m[i]]);
            if (fa_reduce_is_row(rk)) named = rk;
            int ing = ingredient_of(g->nodes[m[i]]);
            if (ing >= 0) have[ing]++;
        }
        wcl *c = new_cluster(A, FA_CLUSTER_REDUCTION);
        if (!c) break;
        memcpy(c->m, m, sizeof(int) * (size_t)n);
        c->n = n;
        c->anchor = seed->id;
        c->reduce_axis = d.r;
        int nred = have[ING_MEAN] + have[ING_MAX] + have[ING_SUM] + have[ING_OTHER_RED] + (named != FA_REDUCE_NONE);
        const row_pattern *rp = NULL;
        if (named != FA_REDUCE_NONE && nred > 1) {
            c->red = FA_REDUCE_GENERIC;
            snprintf(c->label, sizeof c->label, "reduction(mixed)");
        } else if ((rp = row_pattern_of(named, named != FA_REDUCE_NONE ? NULL : have))) {
            c->red = rp->kind;
            bool skip = rp->skip && fa_adv_residual_add_in(g, c->m, c->n);
            snprintf(c->label, sizeof c->label, "%s%s%s", skip ? "add+" : "", rp->label,
                     named != FA_REDUCE_NONE ? "" : "(decomposed)");
            for (int i = 0; i < n && rp->skip; i++) /* a named norm's epsilon */
                if (fa_reduce_is_row(fa_adv_reduce_kind(g->nodes[m[i]])))
                    c->eps = fa_node_attr_float(g->nodes[m[i]], "epsilon", 1e-5f);
        } else {
            c->red = FA_REDUCE_GENERIC;
            snprintf(c->label, sizeof c->label, "%s+elementwise", seed->op_type);
        }
        if (named == FA_REDUCE_NONE && (c->red == FA_REDUCE_LAYER_NORM || c->red == FA_REDUCE_RMS_NORM)) {
            /* epsilon: the scalar added to the row statistic */
            for (int i = 0; i < n; i++) {
                const fa_node *nd = g->nodes[m[i]];
                if (strcmp(nd->op_type, "Add") || nd->n_inputs != 2) continue;
                for (int k = 0; k < 2; k++) {
                    double v;
                    const fa_tensor *o = g->tensors[nd->inputs[1 - k]];
                    if (fa_adv_scalar_value(g, nd->inputs[k], &v) && is_R(&d, o) && !is_D(&d, o)) c->eps = (float)v;
                }
            }
        }
        commit_cluster(A);
    }
    free(m);
    free(after);
}

/* ---- 3. epilogues ---- */

/* Whether the cpu executor's oneDNN path takes this anchor as a fused node (runtime/cpu/dnnl.c:
 * create_conv / create_matmul / create_gemm decline these shapes, and a fused node has no
 * reference kernel to fall back to). */
static bool anchor_supported(const fa_graph *g, const fa_node *n, char *why, size_t cap)
{
    const fa_tensor *A = fa_graph_in(g, n, 0), *W = fa_graph_in(g, n, 1), *B = fa_graph_in(g, n, 2),
                    *Y = fa_graph_out(g, n, 0);
    if (!A || !W || !Y || A->dtype != FA_DTYPE_FLOAT || W->dtype != FA_DTYPE_FLOAT) {
        snprintf(why, cap, "%s '%s' is not float32", n->op_type, n->name);
        return false;
    }
    if (!strcmp(n->op_type, "MatMul")) {
        if (A->rank < 2 || W->rank < 2) {
            snprintf(why, cap, "MatMul '%s' has a 1-D operand: the library kernel that takes post-ops needs rank >= 2",
                     n->name);
            return false;
        }
    } else if (!strcmp(n->op_type, "Gemm")) {
        if (A->rank != 2 || W->rank != 2 || Y->rank != 2) {
            snprintf(why, cap, "Gemm '%s' is not 2-D", n->name);
            return false;
        }
    } else {
        if (!(W->flags & FA_TENSOR_CONST) || !W->data || (B && (!(B->flags & FA_TENSOR_CONST) || !B->data))) {
            snprintf(why, cap, "%s '%s' has non-constant weights or bias: the library convolution that takes "
                     "post-ops needs them constant", n->op_type, n->name);
            return false;
        }
        if (A->rank < 3 || A->rank > 5) {
            snprintf(why, cap, "%s '%s' has %d spatial dims (1..3 supported)", n->op_type, n->name, A->rank - 2);
            return false;
        }
        if (!strcmp(n->op_type, "ConvTranspose") && (fa_node_attr(n, "output_padding") || fa_node_attr(n, "output_shape"))) {
            snprintf(why, cap, "ConvTranspose '%s' uses output_padding/output_shape", n->name);
            return false;
        }
    }
    return true;
}

/* Whether MatMul/Gemm an can anchor a generated epilogue (docs/fusion-rules.md §3 "Generated
 * epilogues"; runtime/cpu/dnnl.c fa_dnnl_gemm_epilogue_kernel computes it alone, in blocks of
 * rows): a product the library computes as [rows, N] from row-major rows of A — a MatMul with a
 * 2-D B and A of rank >= 2, a Gemm without transA whose C is absent, multiplied by beta 0, or one
 * value per column with alpha = beta = 1 (oneDNN's bias) — with no operand folded into it
 * (folded: the members before the walk besides the anchor), on the cpu target. False with the
 * sentence in why. */
static bool gen_epilogue_anchor(const adv *A, const fa_node *an, bool folded, char *why, size_t cap)
{
    const fa_graph *g = A->g;
    const fa_tensor *X = fa_graph_in(g, an, 0), *W = fa_graph_in(g, an, 1), *C = fa_graph_in(g, an, 2),
                    *Y = fa_graph_out(g, an, 0);
    if (A->opt.target != FA_TARGET_CPU) {
        snprintf(why, cap, "the %s target has no generated GEMM epilogue (cpu only)", fa_target_name(A->opt.target));
        return false;
    }
    if (!X || !W || !Y || Y->rank < 1 || fa_tensor_numel(Y) <= 0 || Y->dims[Y->rank - 1] <= 0) {
        snprintf(why, cap, "%s '%s' has no known output shape", an->op_type, an->name);
        return false;
    }
    if (folded) {
        snprintf(why, cap, "an operand view or scale is folded into '%s'", an->name);
        return false;
    }
    if (!strcmp(an->op_type, "MatMul")) {
        if (X->rank < 2 || W->rank != 2) {
            snprintf(why, cap, "MatMul '%s' is a batched product (B of rank %d), not rows of A times one matrix", an->name,
                     W->rank);
            return false;
        }
        return true;
    }
    if (strcmp(an->op_type, "Gemm")) {
        snprintf(why, cap, "%s '%s' is not a MatMul or Gemm", an->op_type, an->name);
        return false;
    }
    float alpha = fa_node_attr_float(an, "alpha", 1.0f), beta = fa_node_attr_float(an, "beta", 1.0f);
    int64_t N = Y->dims[Y->rank - 1];
    bool bias = C && alpha == 1.0f && beta == 1.0f && fa_tensor_numel(C) == N && C->rank >= 1 && C->dims[C->rank - 1] == N;
    if (fa_node_attr_int(an, "transA", 0) || (C && beta != 0.0f && !bias)) {
        snprintf(why, cap, "Gemm '%s' %s", an->name,
                 fa_node_attr_int(an, "transA", 0) ? "reads A transposed" : "adds a C that is not a per-column bias");
        return false;
    }
    return true;
}

/* Whether consumer cn of the product (tensor cur) can be a member of a generated epilogue: an
 * elementwise op (its operands read in place, any broadcast) whose float output keeps the
 * product's element count, so the epilogue runs on the product's rows. */
static bool gen_epilogue_member(const adv *A, const fa_node *cn, int64_t prod_numel)
{
    const fa_tensor *V = fa_graph_out(A->g, cn, 0);
    return cn->n_outputs == 1 && fa_adv_is_elementwise(A->g, cn) && V && V->dtype == FA_DTYPE_FLOAT &&
           fa_tensor_numel(V) == prod_numel;
}

/* fa_gemm_take_fn of the epilogue phase: a live node no cluster claimed, not in the region. */
static bool prologue_free(void *user, const fa_graph *g, int node)
{
    (void)g;
    const adv *A = user;
    return A->owner[node] < 0 && A->pos[node] >= 0 && !A->inreg[node];
}

/* Whether the C code generator can build generated epilogue w (fa_codegen_decide on the
 * description its cluster will have); else false with the generator's sentence in *why. Leaves
 * the members' region marks cleared (io_of). */
static bool gen_epilogue_buildable(adv *A, const wcl *w, const char **why)
{
    const fa_graph *g = A->g;
    int *sorted = malloc(sizeof(int) * (size_t)(w->n > 0 ? w->n : 1));
    int *tmp = malloc(sizeof(int) * (size_t)(g->n_tensors + 1));
    if (!sorted || !tmp) {
        free(sorted);
        free(tmp);
        A->oom = true;
        *why = "out of memory";
        return false;
    }
    memcpy(sorted, w->m, sizeof(int) * (size_t)w->n);
    qsort_r(sorted, (size_t)w->n, sizeof(int), cmp_by_pos, (void *)A->pos);
    fa_cluster c;
    memset(&c, 0, sizeof c);
    c.id = A->ncl - 1;
    c.kind = FA_CLUSTER_EPILOGUE;
    c.epilogue_generated = 1;
    c.members = sorted;
    c.n_members = w->n;
    c.anchor = w->anchor;
    io_of(A, w, &c, tmp);
    fa_decision d = fa_codegen_decide(g, &c, FA_KERNEL_LANG_C);
    free(sorted);
    free(tmp);
    *why = d.reason;
    return d.code == FA_WHY_NONE;
}

/* "+op" for member cn of a generated epilogue's label */
static void gen_label(fa_buf *lab, const fa_node *cn)
{
    char shortop[32];
    snprintf(shortop, sizeof shortop, "%s", cn->op_type);
    for (char *q = shortop; *q; q++) *q = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
    fa_buf_printf(lab, "+%s", shortop);
}

/* Whether post-op epilogue w (its anchor meets the generated path's conditions:
 * gen_epilogue_anchor) is one the generated path expresses too: every member after the anchor an
 * aliasing view or an elementwise op keeping the product's element count (gen_epilogue_member;
 * the decomposed activations as their ops), and the C code generator builds it. Leaves the
 * members' region marks cleared (gen_epilogue_buildable). */
static bool epilogue_both_paths(adv *A, const wcl *w, int64_t prod_numel)
{
    for (int i = 0; i < w->n; i++) {
        const fa_node *cn = A->g->nodes[w->m[i]];
        if (w->m[i] == w->anchor || (cn->op && (cn->op->flags & FA_OPF_ALIAS))) continue;
        if (!gen_epilogue_member(A, cn, prod_numel)) return false;
    }
    const char *why = NULL;
    return gen_epilogue_buildable(A, w, &why);
}

static void phase_epilogues(adv *A)
{
    const fa_graph *g = A->g;
    for (int p = 0; p < g->n_topo; p++) {
        int aid = g->topo[p];
        const fa_node *an = g->nodes[aid];
        if (!fa_adv_is_complex(an)) continue;
        const fa_tensor *Y = fa_graph_out(g, an, 0);
        if (!Y || Y->dtype != FA_DTYPE_FLOAT) continue;
        char nwhy[300];
        if (!anchor_supported(g, an, nwhy, sizeof nwhy)) {
            const int *cons;
            int nc = fa_graph_consumers(g, Y->id, &cons);
            for (int k = 0; k < nc; k++) why(A, aid, cons[k], Y->id, FA_WHY_ANCHOR_UNSUPPORTED, "%s", nwhy);
            continue;
        }
        int dep = -1, bn = -1;
        if (A->owner[aid] >= 0) {
            if (A->cl[A->owner[aid]].kind != FA_CLUSTER_BN_FOLD) continue;
            dep = A->owner[aid];
            bn = A->cl[dep].m[1];
        }
        wcl *c = new_cluster(A, FA_CLUSTER_EPILOGUE);
        if (!c) return;
        int ci = A->ncl - 1;
        c->anchor = aid;
        c->depends_on = dep;
        c->extra = bn;
        c->m[c->n++] = aid;
        A->inreg[aid] = 1;
        if (bn >= 0) A->inreg[bn] = 1;
        int cur = bn >= 0 ? g->nodes[bn]->outputs[0] : Y->id;
        char lo[32];
        snprintf(lo, sizeof lo, "%s", an->op_type);
        for (char *q = lo; *q; q++) *q = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
        fa_buf lab;
        fa_buf_init(&lab);
        fa_buf_puts(&lab, lo);
        if (bn >= 0) fa_buf_puts(&lab, "+bn");
        /* a Linear on batched activations (MatMul A [..., M, K] x constant B [K, N]) runs as one
         * [rows, N] product, its weights packed once (runtime/cpu/dnnl.c create_matmul): its
         * operands must read the same there, as after a view */
        const fa_tensor *Wt = fa_graph_in(g, an, 1);
        bool rows_product = !strcmp(an->op_type, "MatMul") && fa_graph_in(g, an, 0)->rank > 2 && Wt && Wt->rank == 2 &&
                            (Wt->flags & FA_TENSOR_CONST);
        /* ONNX Runtime's FusedMatMul: a Transpose (any element-moving view read with one stride
         * per axis) and a scalar scale of an operand folded into the product, read through
         * strides and applied as oneDNN's output scale (fa_gemm_operand_fold). Not a view of A
         * where the product runs as [rows, N]: reading A strided keeps the batch dims, and the
         * weights would be repacked on every call. */
        if (!strcmp(an->op_type, "MatMul") && bn < 0) {
            fa_gemm_operand pro[2];
            const char *what[2] = {NULL, NULL};
            bool scaled = false;
            for (int k = 0; k < 2; k++) {
                if (!fa_gemm_operand_fold(g, an, k, prologue_free, A, &pro[k])) continue;
                if (k == 0 && rows_product && pro[0].strided) continue;
                if (c->n + pro[k].n_nodes > A->opt.max_ops) continue;
                int n0 = c->n;
                for (int i = 0; i < pro[k].n_nodes; i++) {
                    c->m[c->n++] = pro[k].nodes[i];
                    A->inreg[pro[k].nodes[i]] = 1;
                }
                if (region_has_cycle(A, c->m, c->n)) {
                    for (int i = n0; i < c->n; i++) A->inreg[c->m[i]] = 0;
                    c->n = n0;
                    continue;
                }
                what[k] = pro[k].strided ? (k ? "view b" : "view a") : NULL;
                scaled |= pro[k].scale != 1;
            }
            if (what[0] || what[1] || scaled)
                fa_buf_printf(&lab, "(%s%s%s%s%s)", what[0] ? what[0] : "", what[0] && what[1] ? "," : "", what[1] ? what[1] : "",
                              (what[0] || what[1]) && scaled ? "," : "", scaled ? "scale" : "");
        }
        /* Gemm/MatMul: view-only reshapes between the anchor and its post-ops (Gemm -> Reshape ->
         * Add -> Relu as exporters write a Linear on 3-D activations) join when they keep the last
         * dimension: the rows are the same elements in the same order, so the post-ops run on the
         * anchor's own output, with operands that are full-shape, per-column or scalar. */
        bool gemm_like = !strcmp(an->op_type, "Gemm") || !strcmp(an->op_type, "MatMul"), viewed = false;
        int64_t cols = Y->rank >= 1 ? Y->dims[Y->rank - 1] : -1;
        int n_kept = c->n; /* members up to the last post-op (trailing views are dropped) */
        /* what post-ops cannot express — an operand computed after the anchor, Sub/Div with the
         * product second, an operand varying along a batch dim, an op with no post-op — becomes a
         * generated epilogue over the product's rows (docs/fusion-rules.md §3 "Generated
         * epilogues"): from then on every member after the anchor is generated code */
        char gwhy[300];
        bool gen_ok = gemm_like && gen_epilogue_anchor(A, an, c->n > 1, gwhy, sizeof gwhy);
        int64_t prod_numel = fa_tensor_numel(Y);
        const char *gen_because = NULL;
        int sw_post = 0, sw_p = -1, sw_c = -1, sw_t = -1; /* where the walk switched to generated code */
        int sw_kept = 0; /* n_kept then: the members up to the last post-op, views after it not counted */
        size_t sw_lab = 0;
        while (c->n_post < MAX_POST) {
            const fa_tensor *T = g->tensors[cur];
            int tp = T->producer;
            if (T->flags & FA_TENSOR_GRAPH_OUTPUT) break; /* edge reasons come from the default pass */
            const int *cons;
            int nc = fa_graph_consumers(g, cur, &cons);
            if (nc == 0) break;
            if (nc == 1 && A->owner[cons[0]] < 0) {
                const fa_node *cn = g->nodes[cons[0]];
                const fa_tensor *V = fa_graph_out(g, cn, 0);
                if (gemm_like && cn->op && cn->op->pattern == FA_PATTERN_INJECTIVE && (cn->op->flags & FA_OPF_ALIAS) && V &&
                    V->dtype == FA_DTYPE_FLOAT && V->rank >= 1 && V->dims[V->rank - 1] == cols &&
                    fa_tensor_numel(V) == fa_tensor_numel(T)) {
                    if (!try_add(A, c->m, &c->n, cn->id, tp, cur)) break;
                    viewed = true;
                    cur = V->id;
                    continue;
                }
                if (c->gen) { /* generated: any elementwise op keeping the product's size */
                    if (!gen_epilogue_member(A, cn, prod_numel) || !try_add(A, c->m, &c->n, cn->id, tp, cur)) break;
                    n_kept = c->n;
                    gen_label(&lab, cn);
                    cur = cn->outputs[0];
                    continue;
                }
                /* the post-op path failed on cn for reason `because`: the generated path takes cn
                 * and the rest, or the walk ends here */
#define GEN_OR_BREAK(because)                                                                      \
    sw_kept = n_kept, sw_post = c->n_post, sw_lab = lab.len, sw_p = tp, sw_c = cn->id, sw_t = cur; \
    if (gen_ok && gen_epilogue_member(A, cn, prod_numel) && try_add(A, c->m, &c->n, cn->id, tp, cur)) { \
        c->gen = 1;                                                                                \
        gen_because = (because);                                                                   \
        n_kept = c->n;                                                                             \
        gen_label(&lab, cn);                                                                       \
        cur = cn->outputs[0];                                                                      \
        continue;                                                                                  \
    }
                char wb[300];
                fa_post_op spec;
                fa_why_code wc = FA_WHY_NONE;
                if (!fa_adv_post_op(g, cn, cur, &spec, &wc, wb, sizeof wb)) {
                    if (wc == FA_WHY_OPERAND_ORDER || wc == FA_WHY_NOT_A_POST_OP || wc == FA_WHY_SHAPE_CHANGING_EPILOGUE ||
                        wc == FA_WHY_NONE) {
                        GEN_OR_BREAK(wc == FA_WHY_OPERAND_ORDER ? "operand-order" : wc == FA_WHY_SHAPE_CHANGING_EPILOGUE
                                                                    ? "shape-changing-epilogue" : "not-a-post-op")
                    }
                    if (wc != FA_WHY_NONE && wc != FA_WHY_NOT_A_POST_OP)
                        why(A, tp, cn->id, cur, wc, "%s%s%s", wb, gemm_like && !gen_ok ? "; no generated epilogue either: " : "",
                            gemm_like && !gen_ok ? gwhy : "");
                    break;
                }
                int opnd = spec.operand;
                if ((viewed || rows_product) && opnd >= 0) {
                    const fa_tensor *O = g->tensors[opnd];
                    int64_t on = fa_tensor_numel(O);
                    bool per_col = O->rank >= 1 && O->dims[O->rank - 1] == cols && on == cols;
                    if (!(on == 1 || per_col || on == fa_tensor_numel(T))) {
                        GEN_OR_BREAK("shape-changing-epilogue")
                        char a[64];
                        if (viewed)
                            why(A, tp, cn->id, cur, FA_WHY_SHAPE_CHANGING_EPILOGUE,
                                "%s '%s' reads '%s' [%s] after a reshape of '%s': only a full-shape, per-column or scalar "
                                "operand is the same for the anchor's own output; no generated epilogue either: %s",
                                cn->op_type, cn->name, O->name, fa_tensor_shape_str(O, a, sizeof a), an->name,
                                gen_ok ? "its output does not keep the product's size, or a cap or a cycle stopped it" : gwhy);
                        else
                            why(A, tp, cn->id, cur, FA_WHY_SHAPE_CHANGING_EPILOGUE,
                                "%s '%s' reads '%s' [%s], which varies along a batch dim only: the library runs '%s' as "
                                "one [rows, %lld] product with its weights packed once, where only a full-shape, "
                                "per-column or scalar operand reads the same (keeping the batch dims repacks the "
                                "weights on every call); no generated epilogue either: %s", cn->op_type, cn->name, O->name,
                                fa_tensor_shape_str(O, a, sizeof a), an->name, (long long)cols,
                                gen_ok ? "its output does not keep the product's size, or a cap or a cycle stopped it" : gwhy);
                        break;
                    }
                }
                if (opnd >= 0) {
                    int op_p = g->tensors[opnd]->producer;
                    if (op_p >= 0 && A->pos[op_p] >= 0 && A->pos[op_p] > A->pos[aid]) {
                        GEN_OR_BREAK("operand-later")
                        why(A, tp, cn->id, cur, FA_WHY_OPERAND_LATER,
                            "%s '%s' reads '%s', computed after '%s' in topological order: fusing it into that "
                            "kernel's post-ops could create a cycle%s%s", cn->op_type, cn->name, g->tensors[opnd]->name,
                            an->name, gemm_like ? "; no generated epilogue either: " : "", gemm_like ? gwhy : "");
                        break;
                    }
                }
                if (!try_add(A, c->m, &c->n, cn->id, tp, cur)) break;
                c->post[c->n_post++] = spec;
                n_kept = c->n;
                char shortop[32];
                snprintf(shortop, sizeof shortop, "%s", cn->op_type);
                for (char *q = shortop; *q; q++) *q = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
                fa_buf_printf(&lab, "+%s", spec.kind == FA_POST_OP_GELU_ERF || spec.kind == FA_POST_OP_GELU_TANH
                                               ? fa_post_op_name(spec.kind) : shortop);
                cur = cn->outputs[0];
                continue;
            }
            if (nc > 1) {
                fa_adv_activation ge;
                unsigned kinds = 1u << FA_POST_OP_GELU_ERF | 1u << FA_POST_OP_GELU_TANH | 1u << FA_POST_OP_SWISH |
                                 1u << FA_POST_OP_HARD_SWISH;
                if (fa_adv_match_activation(g, A->pos, cur, A->owner, kinds, &ge)) {
                    /* GELU, SiLU or HardSwish as the exporter wrote it: one post-op (SiLU is
                     * oneDNN's swish with alpha 1, dnnl_eltwise_swish) */
                    if (c->n + ge.n > A->opt.max_ops) {
                        why(A, tp, cons[0], cur, FA_WHY_CAP, "the decomposed %s (%d ops) would exceed --max-ops %d",
                            fa_post_op_name(ge.kind), ge.n, A->opt.max_ops);
                        break;
                    }
                    int n0 = c->n;
                    for (int i = 0; i < ge.n; i++) { c->m[c->n++] = ge.nodes[i]; A->inreg[ge.nodes[i]] = 1; }
                    if (count_ext_inputs(A, c->m, c->n) > A->opt.max_inputs + ge.n || region_has_cycle(A, c->m, c->n)) {
                        for (int i = n0; i < c->n; i++) A->inreg[c->m[i]] = 0;
                        c->n = n0;
                        break;
                    }
                    if (!c->gen) c->post[c->n_post++] = (fa_post_op){ge.kind, ge.kind == FA_POST_OP_SWISH ? 1.0f : 0, 0, -1};
                    n_kept = c->n;
                    fa_buf_printf(&lab, "+%s", ge.kind == FA_POST_OP_SWISH ? "silu" : fa_post_op_name(ge.kind));
                    cur = ge.output;
                    continue;
                }
            }
            break;
        }
#undef GEN_OR_BREAK
        for (int i = n_kept; i < c->n; i++) A->inreg[c->m[i]] = 0; /* views no post-op followed */
        c->n = n_kept;
        const char *cg_why = NULL;
        if (c->gen && !gen_epilogue_buildable(A, c, &cg_why)) {
            /* the C generator cannot build it (a member op without an emitter): the epilogue
             * ends where it switched, as post-ops */
            why(A, sw_p, sw_c, sw_t, FA_WHY_CODEGEN_UNSUPPORTED,
                "'%s' would start a generated epilogue (%s), which the C code generator cannot build (%s)",
                g->nodes[sw_c]->name, gen_because, cg_why ? cg_why : "no emitter");
            /* and views that no post-op followed before the switch are dropped as at the end of
             * any walk (a MatMul -> Flatten whose BatchNorm the generator cannot build was proposed
             * as a "matmul" epilogue of nothing but the view: LeViT's 22 such clusters) */
            for (int i = sw_kept; i < c->n; i++) A->inreg[c->m[i]] = 0;
            c->n = n_kept = sw_kept;
            c->n_post = sw_post;
            c->gen = 0;
            lab.len = sw_lab;
            if (lab.data) lab.data[sw_lab] = 0;
        }
        if (c->gen) { /* every member after the anchor is generated code: no post-ops */
            c->n_post = 0;
            fa_buf_printf(&lab, " (generated epilogue: %s)", gen_because);
        }
        /* both paths express it: with a probe, both builds are timed and the faster taken when
         * the cluster is predicted (choose_epilogue_path); without one the post-ops stay */
        if (!c->gen && c->n_post > 0 && gen_ok && bn < 0 && A->opt.probe && A->opt.target == FA_TARGET_CPU &&
            epilogue_both_paths(A, c, prod_numel))
            c->gen_alt = 1;
        A->inreg[aid] = 0;
        if (bn >= 0) A->inreg[bn] = 0;
        clear_region(A, c->m, c->n);
        if (c->n < 2) {
            fa_buf_free(&lab);
            drop_last_cluster(A);
            continue;
        }
        snprintf(c->label, sizeof c->label, "%s", lab.data ? lab.data : "epilogue");
        fa_buf_free(&lab);
        for (int i = 1; i < c->n; i++) A->owner[c->m[i]] = ci;
        if (A->owner[aid] < 0) A->owner[aid] = ci;
    }
}

/* ---- 4. elementwise chains (with standalone decomposed GELU) ---- */

static void grow_chain(adv *A, wcl *c)
{
    const fa_graph *g = A->g;
    for (int i = 0; i < c->n; i++) A->inreg[c->m[i]] = 1;
    double chain_flops = 0;
    int64_t dom = 0;
    for (int i = 0; i < c->n; i++) {
        chain_flops += flops_of(A, c->m[i]);
        int64_t ne = fa_tensor_numel(fa_graph_out(g, g->nodes[c->m[i]], 0));
        if (ne > dom) dom = ne;
    }
    bool grew = true;
    while (grew) {
        grew = false;
        scan_begin(A, c->m, c->n);
        for (int nid; (nid = scan_next(A)) >= 0;) {
            const fa_node *nd = g->nodes[nid];
            if (A->inreg[nid] || A->owner[nid] >= 0 || !fa_adv_is_elementwise(g, nd)) continue;
            int via_t = -1;
            for (int k = 0; k < nd->n_inputs; k++)
                if (nd->inputs[k] >= 0 && produced_in(A, nd->inputs[k])) via_t = nd->inputs[k];
            if (via_t >= 0) {
                int via_p = g->tensors[via_t]->producer;
                int64_t ne = fa_tensor_numel(fa_graph_out(g, nd, 0));
                double rec = 0;
                if (dom > 0 && ne > dom) {
                    double f = (double)ne / (double)dom;
                    rec = (f - 1.0) * chain_flops / A->peak;
                    uint64_t tb = fa_tensor_bytes(g->tensors[via_t]);
                    const int *cons;
                    int ncons = fa_graph_consumers(g, via_t, &cons);
                    double saved = (ncons == 1 ? 2.0 : 1.0) * (double)tb / A->bw + A->disp;
                    if (rec >= saved) {
                        why(A, via_p, nid, via_t, FA_WHY_BROADCAST_RECOMPUTE,
                            "%s '%s' broadcasts the chain's %lld elements to %lld (x%.0f): recomputing %.0f FLOP "
                            "(%.1f ns) costs more than the %.0f ns saved (%" PRIu64 " B, one launch)",
                            nd->op_type, nd->name, (long long)dom, (long long)ne, f, (f - 1.0) * chain_flops, rec, saved, tb);
                        continue;
                    }
                }
                if (!try_add(A, c->m, &c->n, nid, via_p, via_t)) continue;
                chain_flops += flops_of(A, nid);
                if (ne > dom) dom = ne;
                c->recompute_ns += rec;
                grew = true;
                scan_joined(A, nid);
                continue;
            }
            /* backward: a producer whose outputs are read only by the chain */
            bool back = nd->n_outputs >= 1 && nd->outputs[0] >= 0;
            for (int o = 0; o < nd->n_outputs && back; o++)
                if (nd->outputs[o] >= 0 && !all_consumers_in(A, nd->outputs[o])) back = false;
            if (!back) continue;
            const int *cons;
            fa_graph_consumers(g, nd->outputs[0], &cons);
            if (!try_add(A, c->m, &c->n, nid, nid, nd->outputs[0])) continue;
            chain_flops += flops_of(A, nid);
            grew = true;
            scan_joined(A, nid);
        }
    }
    clear_region(A, c->m, c->n);
}

static void phase_chains(adv *A)
{
    const fa_graph *g = A->g;
    /* standalone decomposed GELU first */
    for (int t = 0; t < g->n_tensors; t++) {
        fa_adv_activation ge;
        const int *cons;
        if (fa_graph_consumers(g, t, &cons) < 2) continue;
        if (!fa_adv_match_activation(g, A->pos, t, A->owner, 1u << FA_POST_OP_GELU_ERF | 1u << FA_POST_OP_GELU_TANH, &ge))
            continue;
        if (ge.n > A->opt.max_ops) continue;
        wcl *c = new_cluster(A, FA_CLUSTER_ELEMWISE_CHAIN);
        if (!c) return;
        memcpy(c->m, ge.nodes, sizeof(int) * (size_t)ge.n);
        c->n = ge.n;
        grow_chain(A, c);
        snprintf(c->label, sizeof c->label, "%s%s", fa_post_op_name(ge.kind), c->n > ge.n ? "+elementwise" : "");
        commit_cluster(A);
    }
    for (int p = 0; p < g->n_topo; p++) {
        int nid = g->topo[p];
        if (A->owner[nid] >= 0 || !fa_adv_is_elementwise(g, g->nodes[nid])) continue;
        wcl *c = new_cluster(A, FA_CLUSTER_ELEMWISE_CHAIN);
        if (!c) return;
        c->m[c->n++] = nid;
        grow_chain(A, c);
        if (c->n < 2) { drop_last_cluster(A); continue; }
        snprintf(c->label, sizeof c->label, "elementwise(%d)", c->n);
        commit_cluster(A);
    }
}

/* ---- 5. horizontal ---- */

static void phase_horizontal(adv *A)
{
    const fa_graph *g = A->g;
    int *m = malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
    if (!m) { A->oom = true; return; }
    for (int t = 0; t < g->n_tensors; t++) {
        const fa_tensor *X = g->tensors[t];
        if (X->dtype != FA_DTYPE_FLOAT) continue;
        const int *cons;
        int nc = fa_graph_consumers(g, t, &cons);
        if (nc < 2) continue;
        int red = -1, n_ew = 0;
        for (int k = 0; k < nc; k++) {
            const fa_node *cn = g->nodes[cons[k]];
            if (cn->op && cn->op->pattern == FA_PATTERN_REDUCTION) red = cn->id;
            if (fa_adv_is_elementwise(g, cn) && A->owner[cn->id] < 0) n_ew++;
        }
        if (red >= 0 && n_ew > 0 && A->owner[red] < 0)
            why(A, X->producer, red, t, FA_WHY_ACCESS_ORDER,
                "'%s' is read by reduction %s '%s' (row by row over its domain) and by %d elementwise op(s) (element "
                "order): one kernel could read it once, but the access orders conflict; legal, not proposed",
                X->name, g->nodes[red]->op_type, g->nodes[red]->name, n_ew);
        /* group unclaimed elementwise consumers with identical output shapes */
        for (int k = 0; k < nc; k++) {
            int c0 = cons[k];
            if (A->owner[c0] >= 0 || !fa_adv_is_elementwise(g, g->nodes[c0])) continue;
            const fa_tensor *Y0 = fa_graph_out(g, g->nodes[c0], 0);
            int n = 0;
            m[n++] = c0;
            A->inreg[c0] = 1;
            for (int j = k + 1; j < nc; j++) {
                int cj = cons[j];
                if (A->inreg[cj] || A->owner[cj] >= 0 || !fa_adv_is_elementwise(g, g->nodes[cj])) continue;
                if (!same_shape(Y0, fa_graph_out(g, g->nodes[cj], 0))) continue;
                try_add(A, m, &n, cj, X->producer, t);
            }
            clear_region(A, m, n);
            if (n < 2) continue;
            wcl *c = new_cluster(A, FA_CLUSTER_HORIZONTAL);
            if (!c) break;
            memcpy(c->m, m, sizeof(int) * (size_t)n);
            c->n = n;
            c->horiz_bytes = fa_tensor_bytes(X) * (uint64_t)(n - 1);
            snprintf(c->label, sizeof c->label, "horizontal(%d) on '%s'", n, X->name);
            commit_cluster(A);
        }
    }
    free(m);
}

/* ---- cost, why-not, finish ---- */

static int group_of(const adv *A, int ci)
{
    while (ci >= 0 && A->cl[ci].depends_on >= 0) ci = A->cl[ci].depends_on;
    return ci;
}

/* Saved bytes: outputs of producers P consumed inside the cluster (members Cs). */
static uint64_t saved_bytes_of(adv *A, const wcl *c)
{
    const fa_graph *g = A->g;
    if (c->kind == FA_CLUSTER_HORIZONTAL) return c->horiz_bytes;
    for (int i = 0; i < c->n; i++) A->inreg[c->m[i]] = 1;
    uint64_t sb = 0;
    for (int i = 0; i <= c->n; i++) {
        int nid = i < c->n ? c->m[i] : c->extra;
        if (nid < 0 || (i < c->n && c->extra >= 0 && nid == c->anchor)) continue;
        const fa_node *nd = g->nodes[nid];
        for (int o = 0; o < nd->n_outputs; o++) {
            int t = nd->outputs[o];
            if (t < 0) continue;
            const int *cons;
            int nc = fa_graph_consumers(g, t, &cons), in = 0;
            for (int k = 0; k < nc; k++) in += A->inreg[cons[k]] != 0;
            if (!in) continue;
            bool all = in == nc && !(g->tensors[t]->flags & FA_TENSOR_GRAPH_OUTPUT);
            sb += (all ? 2 : 1) * fa_tensor_bytes(g->tensors[t]);
        }
    }
    for (int i = 0; i < c->n; i++) A->inreg[c->m[i]] = 0;
    return sb;
}

/* Node ids by their topological position pos[id] (qsort_r's context: no global state, two
 * advisers may run at once). */
static int cmp_by_pos(const void *a, const void *b, void *pos_)
{
    const int *pos = pos_;
    int x = pos[*(const int *)a], y = pos[*(const int *)b];
    return x < y ? -1 : x > y;
}

static void default_why(adv *A, int p, int c, int t)
{
    const fa_graph *g = A->g;
    const fa_node *pn = g->nodes[p], *cn = g->nodes[c];
    const fa_tensor *T = g->tensors[t];
    uint64_t tb = fa_tensor_bytes(T);
    const int *cons;
    int nc = fa_graph_consumers(g, t, &cons);
    int pc = A->owner[p] >= 0 ? group_of(A, A->owner[p]) : -1, cc = A->owner[c] >= 0 ? group_of(A, A->owner[c]) : -1;
    int pp = pn->op ? (int)pn->op->pattern : FA_PATTERN_OPAQUE, cp = cn->op ? (int)cn->op->pattern : FA_PATTERN_OPAQUE;
    if (pn->opaque || cn->opaque) { /* kept out of the analysis (an unsupported op, or no shape after one) */
        const fa_node *o = pn->opaque ? pn : cn;
        why(A, p, c, t, FA_WHY_OPAQUE, "%s '%s' %s: not analysed, never fused", o->op_type, o->name,
            fa_op_find(o->domain, o->op_type) ? "has no shape (it follows an unsupported op)" : "is an unsupported op");
    } else if (T->dtype != FA_DTYPE_FLOAT)
        why(A, p, c, t, FA_WHY_DTYPE, "'%s' is %s: only float32 clusters are proposed", T->name, fa_dtype_name(T->dtype));
    else if (!strncmp(cn->op_type, "Gather", 6) || !strncmp(cn->op_type, "Scatter", 7)) {
        int ix = cn->n_inputs > 1 ? cn->inputs[1] : -1;
        const fa_tensor *I = ix >= 0 ? g->tensors[ix] : NULL;
        if (I && (I->flags & FA_TENSOR_CONST))
            why(A, p, c, t, FA_WHY_GATHER_INDEX, "%s '%s' reads '%s' at constant indices ('%s', %lld value(s), known when "
                "planning): no fused kernel carries a gather (the code generator indexes point-to-point), so it is a "
                "boundary", cn->op_type, cn->name, T->name, I->name, (long long)fa_tensor_numel(I));
        else
            why(A, p, c, t, FA_WHY_GATHER_INDEX, "%s '%s' reads '%s' at data-dependent indices%s%s%s: the gather is a boundary "
                "(the index is not carried into a fused kernel)", cn->op_type, cn->name, T->name, I ? " ('" : "",
                I ? I->name : "", I ? "', computed at run time)" : "");
    } else if ((pp == FA_PATTERN_INJECTIVE && pn->op && (pn->op->flags & FA_OPF_ALIAS)) ||
               (cp == FA_PATTERN_INJECTIVE && cn->op && (cn->op->flags & FA_OPF_ALIAS))) {
        const fa_node *v = pp == FA_PATTERN_INJECTIVE && pn->op && (pn->op->flags & FA_OPF_ALIAS) ? pn : cn;
        why(A, p, c, t, FA_WHY_VIEW_BOUNDARY, "%s '%s' only relabels the shape (a view: the same elements in the same order, "
            "aliased by the executor, no copy): there is no traffic to save at it, and no cluster is planned across a "
            "shape change, so '%s' (%.2f MB) is written by one kernel and read by the next", v->op_type, v->name,
            T->name, mb(tb));
    }
    else if (pp == FA_PATTERN_OPAQUE || cp == FA_PATTERN_OPAQUE)
        why(A, p, c, t, FA_WHY_OPAQUE, "%s '%s' is opaque (never fused): '%s' (%.2f MB) round-trips memory",
            pp == FA_PATTERN_OPAQUE ? pn->op_type : cn->op_type, pp == FA_PATTERN_OPAQUE ? pn->name : cn->name, T->name,
            mb(tb));
    else if (pp == FA_PATTERN_INJECTIVE || cp == FA_PATTERN_INJECTIVE)
        why(A, p, c, t, FA_WHY_LAYOUT_CHANGE, "%s '%s' changes the layout (%s): point-to-point indexing breaks, so it is a "
            "boundary; '%s' (%.2f MB) round-trips memory", pp == FA_PATTERN_INJECTIVE ? pn->op_type : cn->op_type,
            pp == FA_PATTERN_INJECTIVE ? pn->name : cn->name, pp == FA_PATTERN_INJECTIVE ? "producer" : "consumer", T->name,
            mb(tb));
    else if (fa_adv_is_complex(pn) && fa_adv_is_complex(cn))
        why(A, p, c, t, FA_WHY_TWO_COMPLEX, "%s '%s' and %s '%s' are both complex ops: never fused into one kernel",
            pn->op_type, pn->name, cn->op_type, cn->name);
    else if (fa_adv_is_complex(cn))
        why(A, p, c, t, FA_WHY_COMPLEX_CONSUMER, "%s '%s' consumes '%s': a prologue into a complex op is not fused",
            cn->op_type, cn->name, T->name);
    else if (cp == FA_PATTERN_REDUCTION && fa_adv_reduce_kind(cn) == FA_REDUCE_NONE)
        why(A, p, c, t, FA_WHY_NO_PATTERN, "%s '%s' reduces over a domain no generated row kernel covers (a window, a "
            "channel group or an index): '%s' (%.2f MB) round-trips memory", cn->op_type, cn->name, T->name, mb(tb));
    else if (pp == FA_PATTERN_REDUCTION && cp == FA_PATTERN_REDUCTION)
        why(A, p, c, t, FA_WHY_TWO_REDUCTIONS, "%s '%s' and %s '%s' are both reductions in different clusters",
            pn->op_type, pn->name, cn->op_type, cn->name);
    else if (T->flags & FA_TENSOR_GRAPH_OUTPUT)
        why(A, p, c, t, FA_WHY_GRAPH_OUTPUT, "'%s' is a graph output: it must be written anyway", T->name);
    else if (nc > 1) {
        double f = flops_of(A, p), rec = f / A->peak, sav = tb / A->bw;
        why(A, p, c, t, FA_WHY_MULTI_CONSUMER_RECOMPUTE,
            "%s '%s' has %d consumers: fusing it into '%s' would recompute %.3g MFLOP (%.1f ns) to save one read of "
            "%.2f MB (%.1f ns); %s", pn->op_type, pn->name, nc, cn->name, f / 1e6, rec, mb(tb), sav,
            rec >= sav ? "recompute costs more than the traffic saved"
                       : "recompute would pay, but this plan never duplicates a producer into several kernels");
    } else if (cc >= 0 && pc != cc)
        why(A, p, c, t, FA_WHY_CLUSTER_BOUNDARY, "%s '%s' is fused into cluster '%s' instead of with %s '%s'%s%s%s",
            cn->op_type, cn->name, A->cl[cc].label, pn->op_type, pn->name, pc >= 0 ? " (cluster '" : "",
            pc >= 0 ? A->cl[pc].label : "", pc >= 0 ? "')" : "");
    else if (pc >= 0 && cc >= 0)
        why(A, p, c, t, FA_WHY_CLUSTER_BOUNDARY, "'%s' and '%s' landed in different clusters (%s, %s)", pn->name, cn->name,
            A->cl[pc].label, A->cl[cc].label);
    else
        why(A, p, c, t, FA_WHY_NO_PATTERN, "%s '%s' -> %s '%s' matches no fusion pattern (%s -> %s)", pn->op_type, pn->name,
            cn->op_type, cn->name, fa_pattern_name((fa_pattern)pp), fa_pattern_name((fa_pattern)cp));
}

static int *arena_ints(fa_arena *ar, const int *src, int n)
{
    int *d = fa_arena_alloc(ar, sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (d && n > 0) memcpy(d, src, sizeof(int) * (size_t)n);
    return d;
}

/* Inputs/outputs of members (plus the BN of a dependent epilogue). */
static void io_of(adv *A, const wcl *c, fa_cluster *out, int *tmp)
{
    const fa_graph *g = A->g;
    for (int i = 0; i < c->n; i++) A->inreg[c->m[i]] = 1;
    if (c->extra >= 0) A->inreg[c->extra] = 1;
    int ni = 0;
    int mem[1024], nm = 0;
    for (int i = 0; i < c->n && nm < 1023; i++) mem[nm++] = c->m[i];
    if (c->extra >= 0) mem[nm++] = c->extra;
    for (int i = 0; i < nm; i++) {
        const fa_node *nd = g->nodes[mem[i]];
        for (int k = 0; k < nd->n_inputs; k++) {
            int t = nd->inputs[k];
            if (t < 0 || produced_in(A, t)) continue;
            bool dup = false;
            for (int j = 0; j < ni; j++) dup |= tmp[j] == t;
            if (!dup) tmp[ni++] = t;
        }
    }
    out->n_inputs = ni;
    out->inputs = arena_ints(A->ar, tmp, ni);
    int no = 0;
    for (int i = 0; i < nm; i++) {
        const fa_node *nd = g->nodes[mem[i]];
        for (int o = 0; o < nd->n_outputs; o++) {
            int t = nd->outputs[o];
            if (t < 0) continue;
            const int *cons;
            int nc = fa_graph_consumers(g, t, &cons);
            bool leaves = (g->tensors[t]->flags & FA_TENSOR_GRAPH_OUTPUT) != 0;
            for (int k = 0; k < nc; k++) leaves |= !A->inreg[cons[k]];
            if (c->kind == FA_CLUSTER_HORIZONTAL) leaves = true;
            if (leaves) tmp[no++] = t;
        }
    }
    out->n_outputs = no;
    out->outputs = arena_ints(A->ar, tmp, no);
    for (int i = 0; i < nm; i++) A->inreg[mem[i]] = 0;
}

/* ---- never propose what the target's code generator cannot build (issue 19) ---- */

/* Commit the last cluster (a chain, reduction or horizontal group: a generated kernel) when the
 * code generator of the target's kernel language has an emitter for its kind and every member
 * (fa_codegen_kernel_supported, on the cluster's own description); otherwise drop it, so its
 * nodes stay free for a buildable cluster (a Conv's epilogue), and say why on its first edge.
 * Library kinds (epilogue, BN fold) are committed as they are. */
static bool commit_cluster(adv *A) { return commit_cluster_ex(A, true); }

/* record_why false: a refused cluster is dropped without a why-not (its caller tries a smaller
 * form of the same cluster next). */
static bool commit_cluster_ex(adv *A, bool record_why)
{
    wcl *w = &A->cl[A->ncl - 1];
    if (w->kind == FA_CLUSTER_EPILOGUE || w->kind == FA_CLUSTER_BN_FOLD) {
        claim(A, A->ncl - 1);
        return true;
    }
    const fa_graph *g = A->g;
    int *sorted = malloc(sizeof(int) * (size_t)(w->n > 0 ? w->n : 1));
    int *tmp = malloc(sizeof(int) * (size_t)(g->n_tensors + 1));
    if (!sorted || !tmp) {
        free(sorted); free(tmp);
        A->oom = true;
        return false;
    }
    memcpy(sorted, w->m, sizeof(int) * (size_t)w->n);
    if (w->kind != FA_CLUSTER_HORIZONTAL) {
        qsort_r(sorted, (size_t)w->n, sizeof(int), cmp_by_pos, (void *)A->pos);
    }
    fa_cluster c;
    memset(&c, 0, sizeof c);
    c.id = A->ncl - 1;
    c.kind = w->kind;
    c.members = sorted;
    c.n_members = w->n;
    c.anchor = w->anchor;
    c.reduction = w->red;
    c.reduce_axis = w->kind == FA_CLUSTER_REDUCTION ? w->reduce_axis : -1;
    io_of(A, w, &c, tmp);
    const fa_target_iface *t = fa_target_get(A->opt.target);
    fa_kernel_lang lang = t ? fa_target_kernel_lang(t) : FA_KERNEL_LANG_C;
    fa_decision dec = fa_codegen_decide(g, &c, lang);
    bool ok = dec.code == FA_WHY_NONE;
    if (!ok) {
        /* the first member edge inside the cluster carries the reason */
        for (int i = 1; i < w->n && record_why; i++) {
            const fa_node *cn = g->nodes[sorted[i]];
            /* (loop body finds the edge from another member into this one) */
            int p = -1, tid = -1;
            for (int k = 0; k < cn->n_inputs && p < 0; k++) {
                int tk = cn->inputs[k];
                int pr = tk >= 0 ? g->tensors[tk]->producer : -1;
                for (int j = 0; j < w->n && pr >= 0; j++)
                    if (sorted[j] == pr) { p = pr; tid = tk; break; }
            }
            if (p < 0 && i + 1 < w->n) continue;
            if (p < 0) { /* no edge inside (a horizontal group): the first member's first input */
                cn = g->nodes[sorted[0]];
                tid = cn->n_inputs > 0 ? cn->inputs[0] : -1;
                p = tid >= 0 ? g->tensors[tid]->producer : -1;
            }
            why(A, p, cn->id, tid, dec.code,
                "a %s cluster '%s' of %d ops from %s '%s' is not proposed: the %s code generator cannot build it "
                "(%s); its ops stay free for other clusters", fa_cluster_kind_name(w->kind),
                w->label[0] ? w->label : "?", w->n, g->nodes[sorted[0]]->op_type, g->nodes[sorted[0]]->name,
                lang == FA_KERNEL_LANG_CUDA ? "CUDA C" : "C", dec.reason);
            break;
        }
        drop_last_cluster(A);
    } else {
        claim(A, A->ncl - 1);
    }
    free(sorted);
    free(tmp);
    return ok;
}

/* ---- the cost model (issue 19): saving from the measured profile ---- */

/* Measured median of node `nid` in the baseline run, -1 when it has none. */
static double median_of(const adv *A, int nid)
{
    if (!A->a) return -1;
    int i = fa_analysis_node_index(A->a, nid);
    return i >= 0 && A->a->nodes[i].median_ns > 0 ? (double)A->a->nodes[i].median_ns : -1;
}

/* The profile's device key ("cpu:<model>:<threads>t", "cuda:<name>:sm_XY": fa_target_iface.
 * device_key) when it names another kind of device than `target`, else NULL: a CPU run's kernel
 * medians and ceilings do not predict a CUDA kernel's time (advise --target cuda on a CPU run). */
static const char *profile_foreign(const fa_analysis *a, fa_target target)
{
    if (!a || target == FA_TARGET_AUTO || !a->ceilings.device_key) return NULL;
    const char *key = a->ceilings.device_key, *name = fa_target_name(target);
    size_t n = strlen(name);
    return strncmp(key, name, n) == 0 && key[n] == ':' ? NULL : key;
}

static void shapes_of(const fa_tensor *const *ts, int n, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (int k = 0; k < n && len < cap; k++) {
        char sh[256];
        const fa_tensor *t = ts[k];
        len += (size_t)snprintf(out + len, cap - len, "%s%s", k ? ";" : "",
                                !t ? "-" : t->rank < 0 ? "?" : fa_tensor_shape_str(t, sh, sizeof sh));
    }
}

/* FNV-1a, 64-bit (Fowler, Noll, Vo; the IETF draft "The FNV Non-Cryptographic Hash Algorithm"):
 * a key for the bytes a generated kernel embeds, not a security hash. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ULL;
    return h;
}

/* Where a tensor a member reads comes from, as the kernel sees it: "m<j>.<o>" output o of member
 * j, "i<p>" the cluster's input p, "-" none (an omitted input), "x" elsewhere (not in the
 * cluster's inputs: never the case for a well-formed cluster, kept apart all the same). */
static void tensor_role(const fa_graph *g, const fa_cluster *c, int t, fa_buf *b)
{
    if (t < 0) {
        fa_buf_puts(b, "-");
        return;
    }
    for (int j = 0; j < c->n_members; j++) {
        const fa_node *m = g->nodes[c->members[j]];
        for (int o = 0; o < m->n_outputs; o++)
            if (m->outputs[o] == t) {
                fa_buf_printf(b, "m%d.%d", j, o);
                return;
            }
    }
    for (int p = 0; p < c->n_inputs; p++)
        if (c->inputs[p] == t) {
            fa_buf_printf(b, "i%d", p);
            return;
        }
    fa_buf_puts(b, "x");
}

/* The rest of what decides a cluster's kernel, beyond its members' op types and shapes: which
 * member output or cluster input each member input reads, which member outputs leave the cluster
 * (and in what order), and a hash of the members' attributes and of the values of the constants
 * a generated kernel writes into its code (scalars; integer lists of up to 16: axes, shapes). Without
 * them, two clusters of the same ops and shapes shared one probe build: HF Swin's last
 * add+layer_norm (one output) ran the kernel of an earlier one that also wrote the residual sum
 * (two outputs) and wrote through an output pointer it was never given; a LayerNorm of another
 * epsilon would have run the first one's constant. */
static void signature_wiring(const fa_graph *g, const fa_cluster *c, fa_buf *b)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a's offset basis */
    fa_buf_puts(b, "|in:");
    for (int i = 0; i < c->n_members; i++) {
        const fa_node *n = g->nodes[c->members[i]];
        fa_buf_puts(b, i ? ";" : "");
        for (int k = 0; k < n->n_inputs; k++) {
            fa_buf_puts(b, k ? "," : "");
            tensor_role(g, c, n->inputs[k], b);
            const fa_tensor *t = n->inputs[k] >= 0 ? g->tensors[n->inputs[k]] : NULL;
            /* what a generated kernel writes into its code: a scalar (codegen's const_scalar: an
             * epsilon, an exponent, a scale) or a short integer list (axes, a view's shape);
             * per-channel float vectors (a bias, a norm's weight) are read through pointers */
            int64_t ne = t && t->rank >= 0 ? fa_tensor_numel(t) : -1;
            bool integer = t && t->dtype != FA_DTYPE_FLOAT && t->dtype != FA_DTYPE_DOUBLE && t->dtype != FA_DTYPE_FLOAT16 &&
                           t->dtype != FA_DTYPE_BFLOAT16;
            if (t && (t->flags & FA_TENSOR_CONST) && t->data && (ne == 1 || (integer && ne >= 0 && ne <= 16))) {
                size_t bytes = (size_t)fa_tensor_numel(t) * fa_dtype_size(t->dtype);
                h = fnv1a(h, &t->dtype, sizeof t->dtype);
                h = fnv1a(h, t->data, bytes);
            }
        }
        for (int a = 0; a < n->n_attrs; a++) {
            const fa_attr *at = &n->attrs[a];
            if (at->name) h = fnv1a(h, at->name, strlen(at->name) + 1);
            h = fnv1a(h, &at->type, sizeof at->type);
            h = fnv1a(h, &at->i, sizeof at->i);
            h = fnv1a(h, &at->f, sizeof at->f);
            if (at->s && at->s_len) h = fnv1a(h, at->s, at->s_len);
            if (at->ints && at->n > 0) h = fnv1a(h, at->ints, sizeof *at->ints * (size_t)at->n);
            if (at->floats && at->n > 0) h = fnv1a(h, at->floats, sizeof *at->floats * (size_t)at->n);
        }
    }
    fa_buf_puts(b, "|out:");
    for (int q = 0; q < c->n_outputs; q++) {
        fa_buf_puts(b, q ? "," : "");
        tensor_role(g, c, c->outputs[q], b);
    }
    fa_buf_printf(b, "|h%016" PRIx64, h);
}

void fa_cluster_signature(const fa_graph *g, const fa_cluster *c, fa_buf *b)
{
    fa_buf_puts(b, fa_cluster_kind_name(c->kind));
    if (c->epilogue_generated) fa_buf_puts(b, "(generated)"); /* another kernel than the post-ops' on the same members */
    char outs[1024], ins[1024];
    const fa_tensor *ts[64];
    for (int i = 0; i < c->n_members; i++) {
        const fa_node *n = g->nodes[c->members[i]];
        int no = n->n_outputs < 64 ? n->n_outputs : 64, ni = n->n_inputs < 64 ? n->n_inputs : 64;
        for (int k = 0; k < no; k++) ts[k] = fa_graph_out(g, n, k); /* as the store writes nodes.output_shapes */
        shapes_of(ts, no, outs, sizeof outs);
        for (int k = 0; k < ni; k++) ts[k] = n->inputs[k] >= 0 ? g->tensors[n->inputs[k]] : NULL; /* consumers + tensors */
        shapes_of(ts, ni, ins, sizeof ins);
        fa_op_cost cost;
        fa_node_cost(g, n, &cost);
        fa_buf_printf(b, "|%s(%s)[%s]f%" PRIu64 "r%" PRIu64 "w%" PRIu64, n->op_type ? n->op_type : "?", ins, outs, cost.flops,
                      cost.bytes_read, cost.bytes_written);
    }
    signature_wiring(g, c, b);
}

/* c->signature composed (fa_cluster_signature) into the plan's arena; A->oom when it could not be. */
static void set_signature(adv *A, fa_cluster *c)
{
    fa_buf sig;
    fa_buf_init(&sig);
    fa_cluster_signature(A->g, c, &sig);
    c->signature = sig.oom || !sig.data ? NULL : fa_arena_strdup(A->ar, sig.data);
    if (!c->signature) A->oom = true;
    fa_buf_free(&sig);
}

/* The newest measured fused kernel of an earlier plan with c's signature (fa_cluster_signature)
 * whose measurement resolved its difference (resolved_only), or the newest of any, NULL when
 * none is known. */
static const fa_measured_fused *measured_same_kind(const adv *A, const fa_cluster *c, bool resolved_only)
{
    if (!A->opt.n_measured_fused || !A->opt.measured_fused || !c->signature) return NULL;
    return fa_measured_fused_find(A->opt.measured_fused, A->opt.n_measured_fused, c->signature, resolved_only);
}

bool fa_probe_loss_resolved(int reps, int wins)
{
    return reps >= FA_PROBE_LOSS_PAIRS && wins == 0;
}

/* The probe's answer for cluster c into *pr: asked with c's signature and the plan view up to c
 * (clusters [0, c] filled). Every kind is asked: BN folds and epilogues (library kernels), and the
 * generated kernels of chains, reductions and horizontal groups, compiled by the target as the
 * applier compiles them (applier/probe.c). Before 2026-12-03 only the library kinds: a generated
 * kernel was predicted from the roofline, and gpt2-block's masked softmax, whose expf loops gcc
 * left scalar, was predicted a 206-255 us saving and measured a 660-695 us loss (bench/README.md,
 * "Visits and the trace's span"). False when it measured nothing (pr->what says why, or is empty
 * when the signature could not be formed). */
static bool ask_probe(adv *A, const fa_cluster *c, fa_fused_probe_result *pr)
{
    memset(pr, 0, sizeof *pr);
    fa_plan view = *A->plan;
    int ci = (int)(c - A->plan->clusters);
    view.n_clusters = ci + 1;
    return c->signature && A->opt.probe(A->opt.probe_user, A->g, &view, ci, c->signature, pr);
}

/* ask_probe for the generated build of epilogue c (A->alt at c's index): the plan view is the
 * alternatives' array, so the probe builds and keys that cluster (its signature says
 * "(generated)"; fa_kernel_probe_revisit revisits it when given that view). */
static bool ask_probe_alt(adv *A, const fa_cluster *c, fa_fused_probe_result *pr)
{
    memset(pr, 0, sizeof *pr);
    int ci = (int)(c - A->plan->clusters);
    const fa_cluster *ac = A->alt ? &A->alt[ci] : NULL;
    if (!ac || !ac->epilogue_generated) return false;
    fa_plan view = *A->plan;
    view.clusters = A->alt;
    view.n_clusters = ci + 1;
    return ac->signature && A->opt.probe(A->opt.probe_user, A->g, &view, ci, ac->signature, pr);
}

/* A probe answer's fused/unfused figure (fa_epilogue_generated_faster): the median of its pairs'
 * ratios, else the ratio of its medians; 0 when it has neither. */
static double probe_ratio(const fa_fused_probe_result *r)
{
    if (r->paired_ratio > 0 && isfinite(r->paired_ratio)) return r->paired_ratio;
    return r->unfused_median_ns > 0 ? r->median_ns / r->unfused_median_ns : 0;
}

bool fa_epilogue_generated_faster(const fa_fused_probe_result *post, const fa_fused_probe_result *gen)
{
    bool p = post && post->median_ns > 0 && isfinite(post->median_ns), q = gen && gen->median_ns > 0 && isfinite(gen->median_ns);
    if (!q) return false;
    if (!p) return true;
    double rp = probe_ratio(post), rq = probe_ratio(gen);
    if (rp > 0 && rq > 0) return rq < rp * (1 - FA_EPILOGUE_PATH_MARGIN);
    return gen->median_ns < post->median_ns * (1 - FA_EPILOGUE_PATH_MARGIN);
}

/* An epilogue both paths express (w->gen_alt): *pr is the probe's answer for its post-op build
 * (got: it measured); the generated build is asked here, and fa_epilogue_generated_faster
 * chooses. Generated: c and w become that build (epilogue_generated, no post-ops, its signature,
 * the label's "(generated epilogue: faster than post-ops)") and *pr its answer. The choice and
 * both probed times go to w->path_note (the basis quotes it). Returns whether *pr measured. */
static bool choose_epilogue_path(adv *A, wcl *w, fa_cluster *c, fa_fused_probe_result *pr, bool got)
{
    fa_fused_probe_result pg;
    bool got_g = ask_probe_alt(A, c, &pg) && pg.median_ns > 0;
    bool gen = fa_epilogue_generated_faster(got ? pr : NULL, got_g ? &pg : NULL);
    char rp[48] = "", rq[48] = "";
    if (got && probe_ratio(pr) > 0) snprintf(rp, sizeof rp, ", fused/unfused %.3f", probe_ratio(pr));
    if (got_g && probe_ratio(&pg) > 0) snprintf(rq, sizeof rq, ", fused/unfused %.3f", probe_ratio(&pg));
    if (got && got_g)
        snprintf(w->path_note, sizeof w->path_note, "%s: probe %.1f us%s against %s %.1f us%s (each build timed against "
                 "the same unfused sub-graph, compared by that ratio)",
                 gen ? "generated epilogue" : "post-op epilogue", (gen ? pg.median_ns : pr->median_ns) / 1e3, gen ? rq : rp,
                 gen ? "post-ops" : "the generated epilogue's", (gen ? pr->median_ns : pg.median_ns) / 1e3, gen ? rp : rq);
    else if (got_g)
        snprintf(w->path_note, sizeof w->path_note, "generated epilogue: probe %.1f us%s; the post-op build measured "
                 "nothing (%.200s)", pg.median_ns / 1e3, rq, pr->what);
    else
        snprintf(w->path_note, sizeof w->path_note, "post-op epilogue: the generated build, which also expresses it, "
                 "measured nothing (%.200s)", pg.what[0] ? pg.what : "not probed");
    if (!gen) return got;
    const fa_cluster *ac = &A->alt[(int)(c - A->plan->clusters)];
    w->gen = 1;
    w->n_post = 0;
    c->epilogue_generated = 1;
    c->n_post_ops = 0;
    c->signature = ac->signature;
    char lab[192];
    snprintf(lab, sizeof lab, "%s (generated epilogue: %s)", w->label, got ? "faster than post-ops" : "post-ops not measured");
    snprintf(w->label, sizeof w->label, "%s", lab);
    c->label = fa_arena_strdup(A->ar, lab);
    if (!c->label) A->oom = true;
    *pr = pg;
    return true;
}

/* Predict c's saving with fa_fusion_predict (the one cost model, shared with trace advice):
 * the measured medians of the kernels that disappear + their dispatch gaps - the fused kernel's
 * predicted time - recompute. The fused kernel:
 *  - BN_FOLD: the anchor's measured kernel unchanged (BN's scale/shift folded into its weights);
 *  - EPILOGUE: the anchor's measured kernel plus the post-ops' extra operand reads and FLOPs;
 *  - chains, reductions: a new kernel reading the external inputs once and writing the outputs
 *    once at the bandwidth the members measurably reached (their bytes / their time, capped by
 *    the roof of that working set: fa_roofline_mem_roof), or its FLOPs on the peak, never
 *    shorter than the fastest member;
 *  - HORIZONTAL: the members' kernels, less one read of the shared input per extra member;
 *  - any kind, when an earlier plan on this device measured a fused kernel with the same
 *    signature (A->opt.measured_fused): that kernel's measured median instead;
 *  - BN_FOLD and EPILOGUE with a probe (A->opt.probe, applier/probe.c), before the lookup: the
 *    probe times the cluster's unfused sub-graph (plain) and its fused kernel (the plan's
 *    layout) now, interleaved; the fused kernel is predicted as the members' profile time x
 *    that fused/unfused ratio, and the probe's own difference is quoted in the basis.
 * Without a measured median for every member: the analytic estimate (saved bytes / bandwidth +
 * launches x dispatch - recompute), labelled so. Writes est_saving_ns and basis. */
/* The fused kernel's new traffic, bytes: *in the cluster's external inputs read once (an epilogue:
 * only its post-ops' extra operands, the anchor reads the rest already), *out its outputs written
 * once. */
static void fused_io_bytes(const fa_graph *g, const wcl *w, const fa_cluster *c, double *in, double *out)
{
    *in = *out = 0;
    for (int i = 0; i < c->n_inputs; i++) {
        if (w->kind == FA_CLUSTER_EPILOGUE) {
            bool operand = false;
            for (int k = 0; k < w->n_post; k++) operand |= w->post[k].operand == c->inputs[i];
            if (w->gen) { /* generated: every input the anchor does not read is the epilogue's */
                const fa_node *an = g->nodes[w->anchor];
                operand = true;
                for (int k = 0; k < an->n_inputs; k++) operand &= an->inputs[k] != c->inputs[i];
            }
            if (!operand) continue;
        }
        *in += (double)fa_tensor_bytes(g->tensors[c->inputs[i]]);
    }
    for (int i = 0; i < c->n_outputs; i++) *out += (double)fa_tensor_bytes(g->tensors[c->outputs[i]]);
}

/* One node's time on the planned GPU (fa_gpu_plan_kernel_time over the registry's bytes and
 * FLOPs); 0 and no launch for a node that moves nothing, or only relabels its input's shape (an
 * aliasing view, FA_OPF_ALIAS: no kernel on a GPU either). */
static double node_on_device(const adv *A, int nid, double *roof_ns)
{
    const fa_node *n = A->g->nodes[nid];
    if (roof_ns) *roof_ns = 0;
    if (n->op && (n->op->flags & FA_OPF_ALIAS)) return 0;
    fa_op_cost oc;
    fa_node_cost(A->g, n, &oc);
    double bytes = (double)oc.bytes_read + (double)oc.bytes_written, ns = 0, r = 0;
    if (bytes > 0 || oc.flops > 0) fa_gpu_plan_kernel_time(A->opt.device, bytes, (double)oc.flops, &r, &ns);
    if (roof_ns) *roof_ns = r;
    return ns;
}

/* The estimated time of every kernel of g on the planned GPU, ns (the iteration a saving's share
 * is taken of): node_on_device summed over the live nodes. */
static double iteration_on_device(const adv *A)
{
    double t = 0;
    for (int p = 0; p < A->g->n_topo; p++) t += node_on_device(A, A->g->topo[p], NULL);
    return t;
}

/* The saving of cluster c on a GPU planned from its data sheet (A->opt.device; the profile was
 * measured on another kind of device, so neither its medians nor its ceilings carry over): every
 * member kernel and the fused kernel estimated on the device's roofs (fa_gpu_plan_kernel_time),
 * each at least one launch:
 *  - BN_FOLD: the BatchNormalization's kernel is gone, the anchor unchanged;
 *  - EPILOGUE: the post-ops' kernels are gone; the anchor reads their extra operands once;
 *  - HORIZONTAL: one launch for the members' work, less one read of the shared input per extra
 *    member;
 *  - chains, reductions, attention: one new kernel reading the cluster's external inputs once and
 *    writing its outputs once (an attention's scores never written), with the members' FLOPs.
 * Less the recompute. Writes est_saving_ns and basis; returns 0 (no measured member time: no
 * noise floor). */
static double predict_on_device(adv *A, const wcl *w, fa_cluster *c)
{
    const fa_graph *g = A->g;
    const fa_gpu_plan_dev *d = A->opt.device;
    double members = 0, flops = 0, roof_sum = 0;
    int kernels = 0;
    c->member_est_ns = fa_arena_alloc(A->ar, sizeof(double) * (size_t)(w->n + 1));
    if (!c->member_est_ns) A->oom = true;
    for (int i = 0; i < w->n; i++) {
        int nid = w->m[i];
        bool stays = (w->kind == FA_CLUSTER_EPILOGUE || w->kind == FA_CLUSTER_BN_FOLD) && nid == w->anchor;
        double r, ns = node_on_device(A, nid, &r);
        if (c->member_est_ns) c->member_est_ns[i] = ns;
        if (stays) continue;
        members += ns;
        roof_sum += r;
        kernels += ns > 0;
        flops += flops_of(A, nid);
    }
    double ext_in, ext_out;
    fused_io_bytes(g, w, c, &ext_in, &ext_out);
    double fused = 0;
    char how[400];
    switch (w->kind) {
    case FA_CLUSTER_BN_FOLD:
        snprintf(how, sizeof how, "the anchor unchanged, the BatchNormalization folded into its weights");
        break;
    case FA_CLUSTER_EPILOGUE:
        fa_gpu_plan_kernel_time(d, ext_in, flops, &fused, NULL); /* inside the anchor's launch */
        snprintf(how, sizeof how, "the anchor's kernel plus %.0f B of epilogue operands and %.3g FLOP on the roofs: +%.2f us%s",
                 ext_in, flops, fused / 1e3, w->gen ? " (generated epilogue: the product written once)" : "");
        break;
    case FA_CLUSTER_HORIZONTAL: {
        double shared = (double)(w->n - 1) * (double)w->horiz_bytes / d->roofs.hbm_gbs;
        fused = roof_sum - shared > d->launch_ns ? roof_sum - shared : d->launch_ns;
        snprintf(how, sizeof how, "one launch of the members' work less %d read(s) of the shared input: %.2f us",
                 w->n - 1, fused / 1e3);
        break;
    }
    default:
        fa_gpu_plan_kernel_time(d, ext_in + ext_out, flops, NULL, &fused);
        snprintf(how, sizeof how, "one kernel: %.0f B in + %.0f B out, %.3g FLOP: %.2f us", ext_in, ext_out, flops,
                 fused / 1e3);
    }
    c->est_saving_ns = members - fused - w->recompute_ns;
    c->pred_members_ns = members;
    c->pred_fused_ns = w->kind == FA_CLUSTER_BN_FOLD ? 0 : fused; /* the anchor's time is in neither side */
    char b[1400];
    snprintf(b, sizeof b, "estimated for %s (%s) from its data sheet, no device measured (%s%s%s): each kernel max(bytes / %.0f GB/s HBM, FLOPs / %.0f GFLOP/s FP32), at least one launch "
             "of %.1f us; %d member kernel(s) %.2f us; fused: %s; recompute %.2f us",
             d->roofs.label, d->roofs.arch, A->foreign ? "the profile's " : "no profile", A->foreign ? A->foreign : "",
             A->foreign ? " times do not carry over" : "", d->roofs.hbm_gbs, d->roofs.fp32_gflops, d->launch_ns / 1e3,
             kernels, members / 1e3, how, w->recompute_ns / 1e3);
    c->basis = fa_arena_strdup(A->ar, b);
    return 0;
}

static double predict_cluster(adv *A, wcl *w, fa_cluster *c)
{
    c->pred_members_ns = c->pred_dispatch_ns = c->pred_fused_ns = c->pred_ratio = NAN;
    c->est_lo_ns = c->est_hi_ns = NAN;
    if (A->estimate) return predict_on_device(A, w, c);
    A->probe_keep = false;
    const fa_graph *g = A->g;
    const fa_analysis *a = A->a;
    char b[2400]; /* the basis: the fused kernel's sentence (fh), the probe's notes, the path's choice */
    bool measured = a != NULL && !A->foreign;
    double sum = 0, anchor = 0, fastest = -1, bytes_run = 0, t_run = 0, flops = 0;
    int gone = 0;
    for (int i = 0; i < w->n && measured; i++) {
        int nid = w->m[i];
        double md = median_of(A, nid);
        if (md < 0) { measured = false; break; }
        bool stays = (w->kind == FA_CLUSTER_EPILOGUE || w->kind == FA_CLUSTER_BN_FOLD) && nid == w->anchor;
        if (stays) { anchor = md; continue; }
        int k = fa_analysis_node_index(a, nid);
        sum += md;
        gone++;
        bytes_run += (double)a->nodes[k].bytes;
        t_run += md;
        flops += flops_of(A, nid);
        if (fastest < 0 || md < fastest) fastest = md;
    }
    if (!measured || gone == 0) {
        c->est_saving_ns = (double)c->saved_bytes / A->bw + c->saved_launches * A->disp - c->recompute_ns;
        c->pred_dispatch_ns = c->saved_launches * A->disp;
        snprintf(b, sizeof b, "analytic (%s): %" PRIu64 " B saved at %.1f GB/s + %d "
                 "launch(es) x %.0f ns - recompute %.1f ns",
                 A->foreign ? "the profile was measured on another kind of device than the target, so neither its "
                              "medians nor its ceilings apply; default ceilings"
                            : "no measured median for every member",
                 c->saved_bytes, A->bw, c->saved_launches, A->disp, c->recompute_ns);
        c->basis = fa_arena_strdup(A->ar, b);
        return 0;
    }
    /* measured idle between consecutive kernels of the baseline, per kernel; else the dispatch ceiling */
    double gap = a->gap_ns > 0 && a->kernels_per_iter > 1 ? (double)a->gap_ns / (double)(a->kernels_per_iter - 1) : A->disp;
    /* launches removed: an epilogue or a BN fold keeps the anchor's; a chain or reduction adds
     * one new kernel; a horizontal group keeps one of its members' */
    int launches = w->kind == FA_CLUSTER_EPILOGUE || w->kind == FA_CLUSTER_BN_FOLD ? gone : w->n - 1;
    fa_fusion_input in = {.occurrences = 1, .n_members = w->n, .member_ns = sum + anchor, .gaps_ns = launches * gap,
                          .read_bytes = 0, .write_bytes = 0, .flops = 0, .floor_ns = 0, .longest_member_ns = 0,
                          .anchor_ns = 0, .recompute_ns = w->recompute_ns};
    double ext_in, ext_out;
    fused_io_bytes(g, w, c, &ext_in, &ext_out);
    double bw = 0;
    const char *fused_how;
    char fh[900];
    switch (w->kind) {
    case FA_CLUSTER_BN_FOLD:
        in.anchor_ns = anchor;
        in.read_bytes = in.write_bytes = in.flops = 0;
        fused_how = "the anchor's measured kernel, unchanged (BN folded into its weights)";
        break;
    case FA_CLUSTER_EPILOGUE:
        in.anchor_ns = anchor;
        in.read_bytes = ext_in;
        in.write_bytes = 0;
        in.flops = flops;
        bw = fa_roofline_mem_roof(&a->ceilings, ext_in);
        snprintf(fh, sizeof fh, "the anchor's measured %.0f ns + %.0f B of epilogue operands at %.1f GB/s + %.3g FLOP "
                 "at %.0f GFLOP/s%s", anchor, ext_in, bw, flops, A->peak,
                 w->gen ? " (generated epilogue on each block of the product's rows in cache: the product written once, "
                          "not written, read and written again)" : "");
        fused_how = fh;
        break;
    case FA_CLUSTER_HORIZONTAL:
        in.anchor_ns = sum; /* the members' work stays; one kernel reads the shared input once */
        in.member_ns = sum;
        fused_how = "the members' measured kernels in one launch";
        break;
    default: {
        /* The members' achieved bandwidth, scaled down by the ratio of the roofs of the fused and
         * the members' working sets when the fused kernel's falls to a slower memory level. Never
         * capped by the absolute roof: the kernels' achieved figure and the roofs come from
         * different measurements, and under load a roof measured lower than what the members
         * demonstrably reached (5 GB/s against 15 achieved) would predict every fusion a loss. */
        double roof = fa_roofline_mem_roof(&a->ceilings, ext_in + ext_out);
        double roof_members = fa_roofline_mem_roof(&a->ceilings, bytes_run / gone);
        bw = t_run > 0 && bytes_run > 0 ? bytes_run / t_run : roof; /* achieved: bytes per ns = GB/s */
        if (t_run > 0 && bytes_run > 0 && roof > 0 && roof_members > roof) bw *= roof / roof_members;
        in.read_bytes = ext_in;
        in.write_bytes = ext_out;
        in.flops = flops;
        in.floor_ns = fastest;
        snprintf(fh, sizeof fh, "a new kernel: %.0f B in + %.0f B out at the members' achieved %.1f GB/s (roof of its working set %.1f), "
                 "%.3g FLOP at %.0f GFLOP/s, not under the fastest member's %.0f ns", ext_in, ext_out, bw, roof, flops,
                 A->peak, fastest);
        fused_how = fh;
    }
    }
    fa_fusion_estimate e;
    fa_fusion_predict(&in, bw, A->peak, &e);
    double net = e.net_ns;
    if (w->kind == FA_CLUSTER_HORIZONTAL) {
        double roof = fa_roofline_mem_roof(&a->ceilings, (double)w->horiz_bytes);
        if (roof > 0) net += (double)w->horiz_bytes / roof;
        if (roof > 0) e.fused_ns -= (double)w->horiz_bytes / roof; /* the term as it enters net */
    }
    double ratio_used = NAN; /* the fused/unfused ratio the fused time rests on, when measured */
    /* a library kernel (BN fold, epilogue): the probe measures it as the fused plan runs it —
     * in the target's blocked layout, its own implementation, its post-ops — where the baseline
     * timed the anchor plain (oneDNN's gemm convolution on NCHW, 1.5-2x slower than its jit one
     * on nChw16c: pass-1 fused meas/pred 0.62 before the probe, bench/README.md); a generated
     * kernel (chain, reduction, horizontal group): compiled and timed as the applier will run it,
     * instead of its traffic on the members' achieved bandwidth (ask_probe) */
    bool probed = false, fused_measured = false;
    char pnote[420] = "";
    if (A->opt.probe && A->plan) {
        fa_fused_probe_result pr;
        bool got = ask_probe(A, c, &pr) && pr.median_ns > 0;
        if (w->gen_alt) got = choose_epilogue_path(A, w, c, &pr, got);
        if (got) {
            /* the saving rests on the profile (issue 19): the members' measured time in the
             * baseline trace less the fused kernel's predicted time, which is the probe's
             * fused/unfused ratio applied to those members — the probe timed the cluster's own
             * unfused sub-graph (plain, as the baseline runs it) and its fused kernel (the plan's
             * layout) interleaved, so the ratio cancels the load both sides shared. On a quiet
             * machine this was within +-25 % of the measured saving for 65/71 % of accepted
             * clusters (passes 1/2), the probe's own difference for 70/69 %; under load the
             * profile's moment differs from the applier's (0.6-1.7x) and the ratio fell to
             * 31/55 % (bench/README.md, issue-19e). The difference is quoted beside it. */
            /* The ratio is the median of the pairs' own fused/unfused ratios when the probe
             * paired them: each pair ran back to back, so its ratio cancels the phase of memory
             * bandwidth both runs shared, where a ratio of two medians over visits in different
             * phases does not (over the applier's rounds, the paired ratio of the first half of
             * a cluster's rounds agreed with the second half's within +-25 % of the saving for
             * 86-96 % of clusters against 78-90 % for the ratio of medians, three runs of
             * bench_calibration.sh, bench/README.md "Paired ratios"). */
            bool paired = pr.paired_ratio > 0 && isfinite(pr.paired_ratio);
            double ratio = paired ? pr.paired_ratio : pr.unfused_median_ns > 0 ? pr.median_ns / pr.unfused_median_ns : 0;
            e.fused_ns = ratio > 0 ? in.member_ns * ratio : pr.median_ns;
            if (ratio > 0) ratio_used = ratio;
            /* the prediction's own interval (issue 36): the same saving at the two ends of the
             * ratio's sign-test interval over the probe's pairs. A ratio near 1 on a long anchor
             * (ViT-B/16's 3-4 ms GEMMs with a bias add: 1.001 from 12 pairs, 5 of them faster
             * fused) is a saving of a few us whose interval reaches a loss and a saving of
             * 100 us; measured, 94-128 us (bench/README.md, calibration) */
            if (paired && pr.ratio_lo > 0 && isfinite(pr.ratio_lo) && isfinite(pr.ratio_hi) && pr.ratio_lo <= pr.ratio_hi) {
                c->est_lo_ns = in.member_ns + in.gaps_ns - in.member_ns * pr.ratio_hi;
                c->est_hi_ns = in.member_ns + in.gaps_ns - in.member_ns * pr.ratio_lo;
            }
            /* a recomputed producer ran inside the probed fused kernel: its time is in e.fused_ns */
            net = in.member_ns + in.gaps_ns - e.fused_ns;
            char an[64] = ""; /* a library kernel's anchor stays in it; a generated kernel has none */
            if (w->kind == FA_CLUSTER_BN_FOLD || w->kind == FA_CLUSTER_EPILOGUE)
                snprintf(an, sizeof an, "the anchor's measured %.0f ns; ", anchor);
            if (ratio > 0)
                snprintf(fh, sizeof fh, "probe: %s; fused = that ratio %.3f x the members' %.0f ns in the profile (%s; %s"
                         "the probe's own difference %.0f - %.0f ns)",
                         pr.what, ratio, in.member_ns, paired ? "the median of its pairs' fused/unfused ratios"
                                                               : "the ratio of its medians", an, pr.unfused_median_ns,
                         pr.median_ns);
            else
                snprintf(fh, sizeof fh, "probe: %s%s%.*s%s", pr.what, an[0] ? " (" : "",
                         (int)(strlen(an) > 2 ? strlen(an) - 2 : 0), an, an[0] ? ")" : "");
            fused_how = fh;
            probed = true;
            fused_measured = true; /* pr.median_ns > 0: the fused time rests on the probe either way */
            /* Slower than the members as the baseline runs them (plain) but faster than the members
             * as the fused plan runs them when the cluster is left unfused (their blocked layouts,
             * its BN/add/activation a pass of its own: the probe's second timing, applier/probe.c):
             * that is the alternative the plan has (the applier judges it so too,
             * judge_in_plan_layout), so the saving predicted is the one in the plan — the plan's
             * members' time, their ratio to the fused kernel's applied to the fused time predicted
             * above, less that fused time — when the ratio's sign-test interval lies under 1
             * (MobileNetV2's 24-channel conv+BN folds: 1.17x the plain members, 0.8x the plan's). */
            bool plan_known = pr.plan_reps > 0 && pr.plan_ratio > 0 && isfinite(pr.plan_ratio) && pr.plan_ratio_lo > 0 &&
                              isfinite(pr.plan_ratio_lo) && isfinite(pr.plan_ratio_hi);
            if (net <= 0 && plan_known && pr.plan_ratio_hi < 1) {
                double members_plan = e.fused_ns / pr.plan_ratio;
                double net_plain = net;
                net = members_plan + in.gaps_ns - e.fused_ns;
                c->est_lo_ns = members_plan + in.gaps_ns - members_plan * pr.plan_ratio_hi;
                c->est_hi_ns = members_plan + in.gaps_ns - members_plan * pr.plan_ratio_lo;
                in.member_ns = members_plan; /* the prediction's members' term (pred_members_ns, below) */
                char ln[32];
                fa_duration_text(ln, sizeof ln, -net_plain);
                snprintf(pnote, sizeof pnote, "; judged against its members as the fused plan runs them when it is left "
                         "unfused: a predicted loss of %s against the baseline's plain members, but the probe's fused kernel "
                         "ran %.3f x those members' %.0f ns in the plan's layout (the median of %d pairs' ratios, %d faster "
                         "fused; interval %.3f..%.3f), so %.0f ns there", ln, pr.plan_ratio, pr.plan_unfused_median_ns,
                         pr.plan_reps, pr.plan_wins, pr.plan_ratio_lo, pr.plan_ratio_hi, members_plan);
            } else if (net <= 0 && !fa_probe_loss_resolved(pr.reps, pr.wins)) {
                A->probe_keep = true;
                snprintf(pnote, sizeof pnote, "; proposed for measurement all the same: the probe's loss is not "
                         "resolved (%d of %d pairs faster fused; a loss is taken as shown when every one of at least %d "
                         "pairs is slower)", pr.wins, pr.reps, FA_PROBE_LOSS_PAIRS);
            }
        } else if (pr.what[0]) {
            snprintf(pnote, sizeof pnote, "; probe not used: %s", pr.what);
        }
    }
    const fa_measured_fused *known = probed ? NULL : measured_same_kind(A, c, true);
    if (known && known->unfused_median_ns > 0) {
        /* the same fused kernel measured: its time, not the roofline's. The earlier fused and
         * unfused sub-graphs were timed in isolation, interleaved round by round; this profile
         * timed the members inside the model (other cache state, other load). Their measured
         * ratio carries over; the isolated time itself would mix the two conditions. */
        bool paired = known->paired_ratio > 0 && isfinite(known->paired_ratio); /* as the probe's, above */
        double ratio = paired ? known->paired_ratio : known->median_ns / known->unfused_median_ns;
        e.fused_ns = in.member_ns * ratio;
        ratio_used = ratio;
        net = in.member_ns + in.gaps_ns - e.fused_ns; /* the recompute ran inside the measured kernel */
        fused_measured = true;
        snprintf(fh, sizeof fh, "fused time measured in run %" PRId64 ": cluster %d of its plan %d, the same ops, shapes "
                 "and dtype on this device, ran in %.0f ns against its members' %.0f ns (medians of %d interleaved "
                 "rounds, resolved); %s %.3f x the members' %.0f ns here", known->run_id, known->cluster_id,
                 known->plan_id, known->median_ns, known->unfused_median_ns, known->n_samples,
                 paired ? "the median of its rounds' fused/unfused ratios" : "that ratio", ratio, in.member_ns);
        fused_how = fh;
    }
    c->est_saving_ns = net;
    c->pred_members_ns = in.member_ns;
    c->pred_dispatch_ns = in.gaps_ns;
    c->pred_fused_ns = e.fused_ns;
    c->pred_ratio = ratio_used;
    snprintf(b, sizeof b, "measured: %d kernel(s) removed, medians %.0f ns + %d gap(s) x %.0f ns; fused kernel %.0f ns "
             "(%s); recompute %.0f ns%s%s%s%s", gone, sum, launches, gap, e.fused_ns, fused_how, w->recompute_ns,
             fused_measured && w->recompute_ns > 0 ? " (inside the measured fused time, not subtracted again)" : "", pnote,
             w->path_note[0] ? "; " : "", w->path_note);
    c->basis = fa_arena_strdup(A->ar, b);
    return in.member_ns + in.gaps_ns;
}

/* The refusals of the noise floor (issue 19), after c's prediction: `measured-loss` when the
 * newest measurement of c's signature on this device resolved a loss; `below-noise` when it
 * resolved neither sign but its interval lies within +-1 % of the members' time there (the
 * applier's settled-by-floor rule: the saving is known to be about 0); or `below-noise` when the
 * positive saving predicted from the profile for a new generated kernel (chain, reduction,
 * horizontal) is under FA_ADVISE_NOISE_FLOOR of the members' measured time (member_ns; 0:
 * analytic, no floor). False: c is left as it was (a non-positive prediction is the caller's
 * `not-beneficial`). */
static bool noise_refusal(adv *A, fa_cluster *c, double member_ns)
{
    char r[1400];
    const fa_measured_fused *m = A->foreign ? NULL : measured_same_kind(A, c, false);
    const fa_paired_saving *ps = m ? &m->paired : NULL;
    char med[64] = "", ci[96] = ""; /* a loss in words, never a negative saving (issue 33) */
    if (ps && ps->n > 0) {
        fa_saving_phrase(med, sizeof med, ps->median_ns);
        fa_saving_interval_phrase(ci, sizeof ci, ps->ci_lo_ns, ps->ci_hi_ns);
    }
    if (ps && ps->n > 0 && m->resolved && ps->median_ns < 0) {
        c->refusal = FA_WHY_MEASURED_LOSS;
        snprintf(r, sizeof r, "measured-loss: the same fused kernel (same ops, input and output shapes on this device) "
                 "was measured slower than its members in run %" PRId64 " (cluster %d of its plan %d): paired median "
                 "%s, %.0f%% interval %s over %d rounds",
                 m->run_id, m->cluster_id, m->plan_id, med, 100 * ps->ci_level, ci, ps->n);
    } else if (ps && ps->n > 0 && !m->resolved && m->unfused_median_ns > 0 &&
               fa_paired_saving_settled(ps, 0, 0.01 * m->unfused_median_ns)) {
        c->refusal = FA_WHY_BELOW_NOISE;
        snprintf(r, sizeof r, "below-noise: the same fused kernel measured in run %" PRId64 " (cluster %d of its plan %d) "
                 "gave a paired median %s, %.0f%% interval %s over %d rounds: within 1%% of its members' %.1f us and "
                 "not distinguishable from 0",
                 m->run_id, m->cluster_id, m->plan_id, med, 100 * ps->ci_level, ci, ps->n, m->unfused_median_ns / 1e3);
    } else if (member_ns > 0 && c->est_saving_ns > 0 && c->est_saving_ns < FA_ADVISE_NOISE_FLOOR * member_ns &&
               c->kind != FA_CLUSTER_BN_FOLD && c->kind != FA_CLUSTER_EPILOGUE) {
        /* not for a library anchor's fold or epilogue: the target may run the fused anchor in
         * another layout or implementation than the profiled one (oneDNN's nChw16c against the
         * plain NCHW baseline measured 6-41 % savings where the profile predicted 2 %), so its
         * profile prediction is no floor; only a measurement of the same signature refuses it */
        c->refusal = FA_WHY_BELOW_NOISE;
        snprintf(r, sizeof r, "below-noise: predicted saving %.1f us is %.1f%% of its members' measured %.1f us, under "
                 "the %.0f%% by which kernel timings of one run move between runs (%s)", c->est_saving_ns / 1e3,
                 100 * c->est_saving_ns / member_ns, member_ns / 1e3, 100 * FA_ADVISE_NOISE_FLOOR, c->basis);
    } else {
        return false;
    }
    c->status = FA_CLUSTER_REFUSED;
    c->reason = fa_arena_strdup(A->ar, r);
    return true;
}

/* Whether v[i] is a copy of another entry's benchmark: the same run, plan and signature (the
 * applier benchmarks the first cluster of a signature in a plan and copies its rounds to the
 * others, "benchmark shared with cluster N") with a smaller cluster id. v is sorted by signature
 * (fa_store_measured_fused), so the copies are neighbours. */
static bool shares_an_earlier_benchmark(const fa_measured_fused *v, size_t n, size_t i)
{
    const fa_measured_fused *x = &v[i];
    if (!x->signature) return false;
    for (size_t d = 1; d <= i || i + d < n; d++) {
        bool more = false;
        for (int side = 0; side < 2; side++) {
            if (side == 0 ? d > i : i + d >= n) continue;
            const fa_measured_fused *y = &v[side == 0 ? i - d : i + d];
            if (!y->signature || strcmp(y->signature, x->signature)) continue;
            more = true;
            if (y->run_id == x->run_id && y->plan_id == x->plan_id && y->cluster_id < x->cluster_id) return true;
        }
        if (!more) return false; /* past this signature's entries on both sides */
    }
    return false;
}

void fa_advise_kind_spread(const fa_measured_fused *v, size_t n, fa_cluster_kind kind, fa_kind_spread *out)
{
    *out = (fa_kind_spread){0, NAN, NAN, false};
    size_t k = 0;
    for (size_t i = 0; i < n && v; i++)
        k += v[i].kind == kind;
    if (!k) return;
    double *err = malloc(sizeof *err * k * 2);
    if (!err) return; /* no history read: nothing quoted */
    double *rep = err + k;
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        const fa_measured_fused *x = &v[i];
        double p = x->est_saving_ns;
        if (x->kind != kind || !x->resolved || !(p == p) || p == 0 || !(x->paired.median_ns == x->paired.median_ns))
            continue;
        if (shares_an_earlier_benchmark(v, n, i)) continue; /* one measurement counts once */
        double iqr = x->paired.iqr_ns;
        bool about_0 = iqr == iqr && fabs(p) <= iqr && fabs(x->paired.median_ns) <= iqr;
        err[m] = about_0 ? 0 : fabs(x->paired.median_ns - p) / fabs(p) * 100.0;
        rep[m] = (x->paired.ci_hi_ns - x->paired.ci_lo_ns) / 2.0 / fabs(p) * 100.0;
        m++;
    }
    out->n = m;
    if (m > 0) {
        qsort(err, (size_t)m, sizeof *err, fa_stats_cmp_double);
        qsort(rep, (size_t)m, sizeof *rep, fa_stats_cmp_double);
        out->spread_pct = fa_stats_quantile_sorted(err, (size_t)m, 0.8);
        out->repeat_pct = fa_stats_quantile_sorted(rep, (size_t)m, 0.8);
        out->quote = m >= FA_ADVISE_SPREAD_MIN_PAST && out->spread_pct > out->repeat_pct;
    }
    free(err);
}

/* A duration of ns >= 0 for a sentence, in the unit that reads best: "3.3 ms", "412.0 us",
 * "850 ns" (a reason never shows a raw negative nanosecond count: a loss says "loss of"). */
static void duration_text(char *out, size_t cap, double ns)
{
    if (ns >= 1e6) snprintf(out, cap, "%.1f ms", ns / 1e6);
    else if (ns >= 1e3) snprintf(out, cap, "%.1f us", ns / 1e3);
    else snprintf(out, cap, "%.0f ns", ns);
}

static int cmp_cluster_rank(const void *a, const void *b)
{
    const fa_cluster *x = a, *y = b;
    if (x->est_saving_ns != y->est_saving_ns) return x->est_saving_ns > y->est_saving_ns ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void plan_hash(fa_plan *p, const fa_graph *g)
{
    fa_buf b;
    fa_buf_init(&b);
    fa_buf_printf(&b, "fuse-advise plan v1\ngraph %s\ntarget %s arch %s max_ops %d max_inputs %d floor %.4f gate %d\n",
                  g->name ? g->name : "", fa_target_name(p->opt.target), p->opt.arch ? p->opt.arch : "", p->opt.max_ops,
                  p->opt.max_inputs, p->opt.occupancy_floor, !p->opt.no_gate);
    for (int i = 0; i < p->n_clusters; i++) {
        const fa_cluster *c = &p->clusters[i];
        fa_buf_printf(&b, "%d %s %s anchor %d dep %d red %s axis %d eps %.9g members", c->id, fa_cluster_kind_name(c->kind),
                      c->label, c->anchor, c->depends_on, fa_reduce_kind_name(c->reduction), c->reduce_axis, c->epsilon);
        for (int k = 0; k < c->n_members; k++) fa_buf_printf(&b, " %d", c->members[k]);
        fa_buf_puts(&b, " post");
        for (int k = 0; k < c->n_post_ops; k++) {
            char po[64];
            fa_post_op_format(&c->post_ops[k], po, sizeof po);
            fa_buf_printf(&b, " %s@%d", po, c->post_ops[k].operand);
        }
        fa_buf_printf(&b, " status %s\n", fa_cluster_status_name(c->status));
    }
    fa_sha256_hex(b.data ? b.data : "", b.len, p->hash);
    fa_buf_free(&b);
}

fa_status fa_advise(fa_ctx *ctx, const fa_graph *g, const fa_analysis *a, const fa_advise_options *opt, fa_plan **out)
{
    if (!g || !g->topo) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "fa_advise: graph is not indexed (fa_graph_prepare)");
    fa_plan *plan = fa_plan_create();
    adv A;
    memset(&A, 0, sizeof A);
    A.ctx = ctx;
    A.g = g;
    A.a = a;
    A.opt = opt ? *opt : fa_advise_options_default();
    if (A.opt.max_ops <= 0) A.opt.max_ops = FA_ADVISE_MAX_OPS_DEFAULT;
    if (A.opt.max_inputs <= 0) A.opt.max_inputs = FA_ADVISE_MAX_INPUTS_DEFAULT;
    if (!A.opt.arch) A.opt.arch = "sm_90";
    if (A.opt.occupancy_floor <= 0) A.opt.occupancy_floor = 0.5;
    A.ar = plan ? plan->arena : NULL;
    int nn = g->n_nodes + 1;
    A.pos = malloc(sizeof(int) * (size_t)nn);
    A.owner = malloc(sizeof(int) * (size_t)nn);
    A.inreg = calloc((size_t)nn, 1);
    A.seen = calloc((size_t)nn, sizeof *A.seen);
    A.stack = malloc(sizeof(int) * (size_t)nn * 2);
    A.queued = calloc((size_t)nn, sizeof *A.queued);
    /* every region holds at most max_ops members (try_add), a BN fold two */
    A.m_cap = A.opt.max_ops < nn - 2 ? A.opt.max_ops + 2 : nn;
    int *tmp = malloc(sizeof(int) * (size_t)(g->n_tensors + 1));
    if (!plan || !A.ar || !A.pos || !A.owner || !A.inreg || !A.seen || !A.stack || !A.queued || !tmp) {
        free(A.pos); free(A.owner); free(A.inreg); free(A.seen); free(A.stack); free(A.queued); free(tmp);
        fa_plan_free(plan);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory planning '%s'", g->name ? g->name : "graph");
    }
    for (int i = 0; i < g->n_nodes; i++) { A.pos[i] = -1; A.owner[i] = -1; }
    for (int p = 0; p < g->n_topo; p++) A.pos[g->topo[p]] = p;
    A.bw = DEFAULT_BW_GBS;
    A.peak = DEFAULT_PEAK_GFLOPS;
    A.disp = DEFAULT_DISPATCH_NS;
    A.foreign = profile_foreign(a, A.opt.target);
    /* a GPU planned from its data sheet: the profile is of another kind of device, or there is none */
    A.estimate = A.opt.device && A.opt.target == FA_TARGET_CUDA && (A.foreign || !a);
    if (A.estimate) {
        /* a GPU planned from its data sheet: its roofs and launch for every estimate */
        A.bw = A.opt.device->roofs.hbm_gbs;
        A.peak = A.opt.device->roofs.fp32_gflops;
        A.disp = A.opt.device->launch_ns;
    } else if (a && !A.foreign) {
        if (a->ceilings.mem_bw_gbs > 0) A.bw = a->ceilings.mem_bw_gbs;
        if (a->ceilings.peak_gflops > 0) A.peak = a->ceilings.peak_gflops;
        if (a->ceilings.launch_ns > 0) A.disp = a->ceilings.launch_ns;
        else if (a->gap_ns > 0 && a->kernels_per_iter > 1) A.disp = (double)a->gap_ns / (double)(a->kernels_per_iter - 1);
    }

    phase_attention(&A);
    phase_bn_fold(&A);
    phase_reductions(&A);
    phase_epilogues(&A);
    phase_chains(&A);
    phase_horizontal(&A);

    /* finish clusters */
    plan->run_id = a ? a->run_id : -1;
    plan->opt = (fa_plan_options){A.opt.target, fa_arena_strdup(A.ar, A.opt.arch), A.opt.max_ops, A.opt.max_inputs,
                                  A.opt.occupancy_floor, A.opt.no_gate}; /* the caller's arch need not outlive the plan */
    plan->n_clusters = A.ncl;
    plan->clusters = fa_arena_alloc(A.ar, sizeof(fa_cluster) * (size_t)(A.ncl > 0 ? A.ncl : 1));
    A.plan = plan;
    double dev_iter = A.estimate ? iteration_on_device(&A) : 0;
    plan->estimated = A.estimate; /* else the profile is of the target's kind: measured */
    plan->device_iter_ns = dev_iter;
    for (int i = 0; i < A.ncl && plan->clusters; i++) {
        wcl *w = &A.cl[i];
        fa_cluster *c = &plan->clusters[i];
        if (w->kind != FA_CLUSTER_HORIZONTAL) qsort_r(w->m, (size_t)w->n, sizeof(int), cmp_by_pos, (void *)A.pos);
        c->id = i;
        c->kind = w->kind;
        c->n_members = w->n;
        c->members = arena_ints(A.ar, w->m, w->n);
        c->anchor = w->anchor;
        c->reduction = w->red;
        c->reduce_axis = w->kind == FA_CLUSTER_REDUCTION ? w->reduce_axis : -1;
        c->epsilon = w->eps;
        c->label = fa_arena_strdup(A.ar, w->label);
        c->depends_on = w->depends_on;
        c->n_post_ops = w->n_post;
        c->epilogue_generated = w->gen;
        c->post_ops = fa_arena_alloc(A.ar, sizeof(fa_post_op) * (size_t)(w->n_post + 1));
        if (c->post_ops && w->n_post) memcpy(c->post_ops, w->post, sizeof(fa_post_op) * (size_t)w->n_post);
        io_of(&A, w, c, tmp);
        c->saved_bytes = saved_bytes_of(&A, w);
        c->score_bytes = w->kind == FA_CLUSTER_ATTENTION ? score_bytes_of(&A, w) : 0;
        c->saved_launches = w->kind == FA_CLUSTER_BN_FOLD ? 1 : w->n - 1;
        c->recompute_ns = w->recompute_ns;
        /* the signature, composed once here: the probe and the lookup of earlier measurements
         * below key by it, and the store keeps it with the plan (clusters.signature) */
        set_signature(&A, c);
    }
    /* the epilogues both paths express (gen_alt): their generated builds in a copy of the
     * clusters, which the probe is given as its plan view for them (ask_probe_alt) */
    bool any_alt = false;
    for (int i = 0; i < A.ncl && plan->clusters; i++) any_alt |= A.cl[i].gen_alt != 0;
    fa_plan alt_plan = *plan;
    if (any_alt && (A.alt = fa_arena_alloc(A.ar, sizeof(fa_cluster) * (size_t)A.ncl))) {
        memcpy(A.alt, plan->clusters, sizeof(fa_cluster) * (size_t)A.ncl);
        alt_plan.clusters = A.alt;
        for (int i = 0; i < A.ncl; i++) {
            fa_cluster *ac = &A.alt[i];
            if (!A.cl[i].gen_alt) continue;
            ac->epilogue_generated = 1;
            ac->n_post_ops = 0;
            set_signature(&A, ac);
        }
    } else if (any_alt) {
        A.oom = true;
    }
    /* the probe's sweeps (issue 19): every BN fold and epilogue probed once (an epilogue both
     * paths express in both builds), then revisited, so each signature's medians come from visits
     * spread over the probing instead of one moment; predict_cluster below is then served from
     * the probe's entries */
    if (A.opt.probe && A.opt.probe_prepare && plan->clusters) {
        /* one compiler process for the plan's generated kernels and the alternatives' (a view of
         * both: the plan's clusters, then each generated build; only their code is made from it) */
        fa_plan both = *plan;
        int nb = 0;
        fa_cluster *bc = A.alt ? fa_arena_alloc(A.ar, sizeof(fa_cluster) * (size_t)(2 * A.ncl)) : NULL;
        if (bc) {
            memcpy(bc, plan->clusters, sizeof(fa_cluster) * (size_t)A.ncl);
            nb = A.ncl;
            for (int i = 0; i < A.ncl; i++)
                if (A.cl[i].gen_alt) bc[nb++] = A.alt[i];
            both.clusters = bc;
            both.n_clusters = nb;
        }
        A.opt.probe_prepare(A.opt.probe_user, g, &both);
    }
    if (A.opt.probe && A.opt.probe_revisit && A.opt.probe_visits > 1 && plan->clusters) {
        fa_fused_probe_result pr;
        for (int i = 0; i < A.ncl; i++) {
            ask_probe(&A, &plan->clusters[i], &pr);
            if (A.cl[i].gen_alt) ask_probe_alt(&A, &plan->clusters[i], &pr);
        }
        for (int v = 1; v < A.opt.probe_visits; v++) {
            int n = A.opt.probe_revisit(A.opt.probe_user, plan);
            if (A.alt) n += A.opt.probe_revisit(A.opt.probe_user, &alt_plan);
            if (n == 0) break;
        }
    }
    for (int i = 0; i < A.ncl && plan->clusters; i++) {
        wcl *w = &A.cl[i];
        fa_cluster *c = &plan->clusters[i];
        double member_ns = predict_cluster(&A, w, c);
        /* the spread of this kind's past predictions on this machine (issue 36): quoted where it
         * exceeds the measurements' own repeatability; only for a profile of this device (the
         * history is this device's) */
        c->est_spread_pct = NAN;
        c->est_spread_n = -1;
        if (a && !A.foreign && !A.estimate) {
            fa_kind_spread ks;
            fa_advise_kind_spread(A.opt.measured_fused, A.opt.n_measured_fused, c->kind, &ks);
            c->est_spread_n = ks.n;
            if (ks.quote) c->est_spread_pct = ks.spread_pct;
        }
        c->est_saving_pct = dev_iter > 0 ? 100.0 * c->est_saving_ns / dev_iter
                          : a && a->iter_ns > 0 ? 100.0 * c->est_saving_ns / (double)a->iter_ns
                                                : NAN; /* no iteration to be a share of (a bare model) */
        c->registers = c->spill_bytes = c->block_size = -1;
        c->occupancy = -1;
        c->status = FA_CLUSTER_PROPOSED;
        c->refusal = FA_WHY_NONE;
        if (noise_refusal(&A, c, member_ns)) {
            /* refused: measured-loss or below-noise, the reason set */
        } else if (c->est_saving_ns <= 0 && !A.probe_keep) {
            c->status = FA_CLUSTER_REFUSED;
            c->refusal = FA_WHY_NOT_BENEFICIAL;
            char r[2600], t[32];
            duration_text(t, sizeof t, -c->est_saving_ns);
            if (c->est_saving_ns < 0)
                snprintf(r, sizeof r, "not-beneficial: predicted loss of %s (%s)", t, c->basis);
            else
                snprintf(r, sizeof r, "not-beneficial: no predicted saving (%s)", c->basis);
            c->reason = fa_arena_strdup(A.ar, r);
        }
        /* the register/occupancy gate of the target's table (a target without one: no-op) */
        if (c->status == FA_CLUSTER_PROPOSED && !A.opt.no_gate && A.opt.target != FA_TARGET_AUTO) {
            bool refused = false;
            fa_status gs = fa_gate_cluster_ex(ctx, g, c, &A.opt, A.ar, &refused, NULL);
            if (gs) { /* a gate that cannot run is recorded on the cluster, not fatal for the plan */
                char r[600];
                snprintf(r, sizeof r, "gate not run (%s): %s", fa_status_name(gs), fa_ctx_errmsg(ctx));
                c->reason = fa_arena_strdup(A.ar, r);
                fa_ctx_clear(ctx);
            }
        }
    }

    /* why-not: edges inside a refused cluster get its reason; others outside one group get a default */
    for (int p = 0; p < g->n_topo && plan->clusters; p++) {
        int cid = g->topo[p];
        const fa_node *cn = g->nodes[cid];
        for (int k = 0; k < cn->n_inputs; k++) {
            int t = cn->inputs[k];
            if (t < 0) continue;
            int pid = g->tensors[t]->producer;
            if (pid < 0 || A.pos[pid] < 0) continue;
            int gp = A.owner[pid] >= 0 ? group_of(&A, A.owner[pid]) : -1;
            int gc = A.owner[cid] >= 0 ? group_of(&A, A.owner[cid]) : -1;
            if (gp >= 0 && gp == gc) {
                const fa_cluster *c = &plan->clusters[A.owner[cid]];
                if (c->status == FA_CLUSTER_REFUSED)
                    why(&A, pid, cid, t, c->refusal != FA_WHY_NONE ? c->refusal : FA_WHY_REFUSED, "%s",
                        c->reason ? c->reason : "refused");
                continue;
            }
            default_why(&A, pid, cid, t);
        }
    }
    /* drop recorded reasons for edges that ended up fused after all */
    int keep = 0;
    for (int i = 0; i < A.nwn; i++) {
        fa_why_not *w = &A.wn[i];
        bool fused = false;
        if (w->producer >= 0 && w->consumer >= 0 && A.owner[w->producer] >= 0 && A.owner[w->consumer] >= 0) {
            int gp = group_of(&A, A.owner[w->producer]), gc = group_of(&A, A.owner[w->consumer]);
            fused = gp == gc && plan->clusters[A.owner[w->consumer]].status != FA_CLUSTER_REFUSED;
        }
        if (!fused) A.wn[keep++] = *w;
    }
    plan->n_why_not = keep;
    plan->why_not = fa_arena_alloc(A.ar, sizeof(fa_why_not) * (size_t)(keep > 0 ? keep : 1));
    if (plan->why_not && keep) memcpy(plan->why_not, A.wn, sizeof(fa_why_not) * (size_t)keep);

    /* rank, remap depends_on */
    if (plan->clusters && A.ncl > 1) {
        qsort(plan->clusters, (size_t)A.ncl, sizeof(fa_cluster), cmp_cluster_rank);
        int *newidx = tmp; /* old id -> new index */
        for (int i = 0; i < A.ncl; i++) newidx[plan->clusters[i].id] = i;
        for (int i = 0; i < A.ncl; i++) {
            fa_cluster *c = &plan->clusters[i];
            if (c->depends_on >= 0) c->depends_on = newidx[c->depends_on];
        }
        for (int i = 0; i < A.ncl; i++) plan->clusters[i].id = i;
    }
    plan_hash(plan, g);
    bool oom = A.oom || A.heap.oom || !plan->clusters || !plan->why_not;
    for (int i = 0; i < A.ncl; i++) free(A.cl[i].m);
    free(A.cl); free(A.wn); free(A.pos); free(A.owner); free(A.inreg); free(A.seen); free(A.stack); free(A.queued); free(A.heap.v);
    free(A.wn_slot); free(tmp);
    if (oom) {
        fa_plan_free(plan);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory planning '%s'", g->name ? g->name : "graph");
    }
    *out = plan;
    return FA_OK;
}

/* ---- store ---- */

fa_status fa_plan_save(fa_ctx *ctx, fa_store *st, fa_plan *p)
{
    int plan_id = 0;
    fa_status s = fa_store_put_plan(ctx, st, p, NULL, &plan_id);
    if (!s) p->plan_id = plan_id;
    return s;
}

bool fa_adv_cluster_computes_gelu(const fa_graph *g, const fa_cluster *c)
{
    if (c->kind == FA_CLUSTER_EPILOGUE) {
        for (int i = 0; i < c->n_post_ops; i++)
            if (c->post_ops[i].kind == FA_POST_OP_GELU_ERF || c->post_ops[i].kind == FA_POST_OP_GELU_TANH) return true;
        return false;
    }
    if (c->kind != FA_CLUSTER_ELEMWISE_CHAIN) return false;
    for (int i = 0; i < c->n_members; i++) {
        const fa_node *nd = g->nodes[c->members[i]];
        if (!strcmp(nd->op_type, "Gelu") && !(nd->domain && nd->domain[0])) return true;
    }
    /* the decomposed forms: the advisor's own matcher on each member's inputs, the match wholly
     * inside the cluster (phase_chains seeds a standalone GELU chain the same way) */
    int *pos = malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
    if (!pos) return false;
    for (int i = 0; i < g->n_nodes; i++) pos[i] = -1;
    for (int p = 0; p < g->n_topo; p++) pos[g->topo[p]] = p;
    bool found = false;
    for (int i = 0; i < c->n_members && !found; i++) {
        const fa_node *nd = g->nodes[c->members[i]];
        for (int k = 0; k < nd->n_inputs && !found; k++) {
            fa_adv_activation ge;
            if (nd->inputs[k] < 0 ||
                !fa_adv_match_activation(g, pos, nd->inputs[k], NULL, 1u << FA_POST_OP_GELU_ERF | 1u << FA_POST_OP_GELU_TANH, &ge))
                continue;
            bool inside = true;
            for (int a = 0; a < ge.n && inside; a++) {
                bool in = false;
                for (int b = 0; b < c->n_members && !in; b++) in = c->members[b] == ge.nodes[a];
                inside = in;
            }
            found = inside;
        }
    }
    free(pos);
    return found;
}
