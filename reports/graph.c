/* reports/graph — the op graph as graph.dot (libcgraph, agwrite) and graph.svg (libgvc, dot
 * layout): nodes labelled op + time, edges labelled with intermediate bytes, accepted clusters
 * as filled subgraphs, refused/rejected candidates outlined with their reason as tooltip.
 * Large graphs (docs/reports.md "Large graphs"): from FA_REP_COLLAPSE_NODES live nodes each
 * accepted cluster becomes one node; above FA_REP_TOPLEVEL_NODES remaining nodes, linear
 * chains (one successor whose only predecessor is this node) become one node each. At any size,
 * a node whose consumers lie far apart (FA_REP_FANOUT_STUB) gets a reference box beside each
 * consumer instead of edges that span the model's depth. */
#include "reports-impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<graphviz/cgraph.h>) && __has_include(<graphviz/gvc.h>)
#define FA_REP_HAVE_GVC 1
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#endif
#endif

#define FA_REP_COLLAPSE_NODES 1000
#define FA_REP_TOPLEVEL_NODES 1500
#define FA_REP_EDGE_LABELS_MAX 1000
/* A drawn node feeding at least FA_REP_FANOUT_STUB drawn nodes whose latest levels (below) lie
 * more than FA_REP_FANOUT_SPREAD levels apart is drawn once, and each of its consumers
 * FA_REP_FANOUT_SPREAD or more levels below the nearest gets a small reference node ("from
 * NAME") instead of an edge back to it (the near ones keep their edges). Such a node is a transformer's
 * attention mask or a shared constant read by every layer: drawn as edges, each of them spans
 * the depth of the model, so the layered layout (dot) places a virtual node on every rank each
 * edge crosses — L edges of length ~L, O(L^2) virtual nodes, and dot's network simplex is
 * superlinear in those (a 24-layer GPT-2: 18,306 nodes in the x-coordinate problem for 373
 * drawn, 41 s). */
#define FA_REP_FANOUT_STUB 4
#define FA_REP_FANOUT_SPREAD 4
/* The most work dot's x-coordinate network simplex is given: its auxiliary graph holds a node per
 * drawn node, per edge and per virtual node (an edge's rank span less one), and its time grows
 * about as that size squared (6,049 nodes for a 24-layer BERT: 0.18 s; 14,993 for a 3,000-node
 * braid of two-input Adds that no chain merges: 2.2 s; 30,000: ~30 s on this class of machine).
 * Above it, estimated before any layout from the drawn nodes, edges and each edge's span between
 * levels, graph.svg says so and graph.dot still holds the whole graph (a crafted run database or
 * model of 20,000 such nodes took `report` past five minutes). */
#define FA_REP_LAYOUT_WORK_MAX 20000
/* Past this many drawn nodes, dot's x-coordinate network simplex stops after
 * FA_REP_LAYOUT_NSLIMIT x drawn nodes iterations (graphviz's `nslimit` graph attribute; its
 * default runs to the optimum). Unbounded, that phase was 73 % of a 24-layer BERT's layout and
 * what made the report stage grow faster than depth (`fuse-advise report` of a run: 12 layers
 * 0.22-0.27 s, 24 layers 0.46-0.55 s; `dot -Tsvg` of its 949-node graph.dot 0.37 s, 0.16 s
 * with nslimit=0.2, and 0.16-0.17 s at 0.05 and 0.01: past 0.2 the other phases are what is
 * left). The bounded layout keeps every rank and edge; nodes sit less centred over their
 * neighbours (the drawing 13 % wider on a 12-layer BERT). Graphs of ResNet-50's size (175 drawn
 * nodes) keep the optimal layout. */
#define FA_REP_LAYOUT_NSLIMIT_NODES 300
#define FA_REP_LAYOUT_NSLIMIT "0.2"

/* One drawn node: a graph node, a collapsed accepted cluster, or a collapsed chain. */
typedef struct grp {
    int first, last;      /* node ids (first/last in id order) */
    int count;            /* graph nodes inside */
    int64_t time_ns;      /* sum of medians */
    int cluster;          /* index in r->clusters when a collapsed cluster, else -1 */
    int parent;           /* union-find */
} grp;

typedef struct gedge {
    int u, v;             /* group ids */
    uint64_t bytes;
    int tensor;
    int count;
} gedge;

static int find(grp *g, int i)
{
    while (g[i].parent != i) { g[i].parent = g[g[i].parent].parent; i = g[i].parent; }
    return i;
}

static int cmp_edge(const void *a, const void *b)
{
    const gedge *x = a, *y = b;
    if (x->u != y->u) return x->u < y->u ? -1 : 1;
    if (x->v != y->v) return x->v < y->v ? -1 : 1;
    return 0;
}

/* Longest path from each drawn node to a sink, in edges, over the merged edges es (sorted by u;
 * u, v < ng): a node's latest level counted from the bottom. h[i] = -1 for a node on a cycle
 * (a collapsed group can close one); NULL when out of memory. */
static int *sink_heights(const gedge *es, int ne, int ng)
{
    int *h = malloc(sizeof(int) * ((size_t)ng + 1)), *left = calloc((size_t)ng + 1, sizeof(int));
    int *in_start = calloc((size_t)ng + 2, sizeof(int)), *in_edge = malloc(sizeof(int) * ((size_t)ne + 1));
    int *queue = malloc(sizeof(int) * ((size_t)ng + 1));
    if (!h || !left || !in_start || !in_edge || !queue) {
        free(h); h = NULL;
        goto out;
    }
    for (int e = 0; e < ne; e++) { left[es[e].u]++; in_start[es[e].v + 1]++; }
    for (int i = 0; i < ng; i++) in_start[i + 1] += in_start[i];
    {
        int *fill = queue; /* borrowed as the per-v cursor before the sweep */
        for (int i = 0; i < ng; i++) fill[i] = in_start[i];
        for (int e = 0; e < ne; e++) in_edge[fill[es[e].v]++] = e;
    }
    int qh = 0, qt = 0;
    for (int i = 0; i < ng; i++) {
        h[i] = left[i] == 0 ? 0 : -1;
        if (!left[i]) queue[qt++] = i;
    }
    while (qh < qt) {
        int v = queue[qh++];
        for (int k = in_start[v]; k < in_start[v + 1]; k++) {
            int u = es[in_edge[k]].u;
            if (h[v] + 1 > h[u]) h[u] = h[v] + 1;
            if (--left[u] == 0) queue[qt++] = u;
        }
    }
    for (int i = 0; i < ng; i++)
        if (left[i]) h[i] = -1;
out:
    free(left);
    free(in_start);
    free(in_edge);
    free(queue);
    return h;
}

/* Graph-level value of a label / tooltip: what the DOT parser would store. Backslashes are
 * doubled (graphviz expands \N, \G, \l ... in labels), a newline becomes the \n escape, & is
 * written as &amp; (graphviz decodes entities in labels). agwrite adds the quotes and escapes
 * the double quote itself (so it is left alone here). Control characters become spaces, and bytes
 * that are not valid UTF-8 U+FFFD: graph.dot and graph.svg are UTF-8 documents (an SVG with one
 * stray byte is not well-formed XML, and no browser shows it). */
static void gv_text(fa_buf *b, const char *s)
{
    const char *p = s ? s : "";
    size_t n = strlen(p);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)p[i];
        size_t l = c < 0x80 ? 1 : fa_utf8_seq_len(p + i, n - i);
        if (c == '\\') fa_buf_puts(b, "\\\\");
        else if (c == '\n') fa_buf_puts(b, "\\n");
        else if (c == '&') fa_buf_puts(b, "&amp;");
        else if (c < 0x20 || c == 0x7f) fa_buf_puts(b, " ");
        else if (!l || (c >= 0x80 && fa_utf8_disguising(p + i, l))) fa_buf_puts(b, "\xEF\xBF\xBD");
        else fa_buf_append(b, p + i, l);
        i += l ? l : 1;
    }
}

#ifdef FA_REP_HAVE_GVC
#include <pthread.h>

/* Process-wide graphviz state. Graphviz 2.43 keeps a static font/text-size cache that points into
 * strings owned by the GVC context: after gvFreeContext a second context reads freed memory
 * (valgrind: textspan_size in libgvplugin_pango). So one context is created on first use and kept
 * for the life of the process, and every use of graphviz is serialized (graphviz is not
 * thread-safe). These are the documented exceptions to "no hidden global state". */
static pthread_mutex_t g_gv_lock = PTHREAD_MUTEX_INITIALIZER;
static GVC_t *g_gvc;
static char g_gv_err[512];
static int gv_err_sink(char *msg)
{
    /* the one hidden state of this module: graphviz reports errors through a global hook */
    snprintf(g_gv_err, sizeof g_gv_err, "%s", msg ? msg : "");
    size_t n = strlen(g_gv_err);
    while (n && (g_gv_err[n - 1] == '\n' || g_gv_err[n - 1] == ' ')) g_gv_err[--n] = 0;
    return 0;
}

static void set(void *obj, const char *name, const char *value)
{
    agsafeset(obj, (char *)name, (char *)(value ? value : ""), (char *)"");
}

static void set_text(void *obj, const char *name, const char *raw)
{
    fa_buf b;
    fa_buf_init(&b);
    gv_text(&b, raw);
    set(obj, name, b.data ? b.data : "");
    fa_buf_free(&b);
}

static const char *heat(double share)
{
    /* fill by share of iteration time */
    if (share >= 0.20) return "#f4a259";
    if (share >= 0.05) return "#f8c98f";
    if (share >= 0.01) return "#fbe3c4";
    return "#ffffff";
}
#endif

fa_status fa_rep_graph(fa_ctx *ctx, const fa_rep *r, fa_buf *dot, fa_buf *svg, fa_rep_graph_stats *stats)
{
    fa_rep_graph_stats st_local;
    if (!stats) stats = &st_local;
    memset(stats, 0, sizeof *stats);
#ifndef FA_REP_HAVE_GVC
    fa_buf_printf(dot, "/* graphviz (libcgraph/libgvc) was not found when fuse-advise was built: no graph for run %" PRId64 " */\n"
                       "digraph G { }\n", r->run_id);
    fa_buf_puts(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"40\"><text x=\"4\" y=\"24\">"
                     "graphviz was not available at build time</text></svg>\n");
    (void)ctx;
    return FA_OK;
#else
    fa_status s = FA_OK;
    int n = r->n_nodes;
    grp *gs = calloc((size_t)n + (size_t)r->n_clusters + 1, sizeof *gs);
    int *gid = malloc(sizeof(int) * ((size_t)n + 1));
    gedge *es = malloc(sizeof *es * ((size_t)r->n_edges + 1));
    int *indeg = NULL, *outdeg = NULL, *dense = NULL, *height = NULL, *fan_refs = NULL;
    char *ref_edge = NULL;
    Agraph_t *g = NULL;
    GVC_t *gvc = NULL;
    bool locked = false;
    fa_buf tmp;
    fa_buf_init(&tmp);
    if (!gs || !gid || !es) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory building graph.dot"); goto out; }
    bool collapse = r->n_live >= FA_REP_COLLAPSE_NODES;
    /* groups: one per live node; accepted clusters collapsed when the graph is large */
    int ng = 0;
    int *cl_group = calloc((size_t)r->n_clusters + 1, sizeof(int));
    if (!cl_group) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
    for (int i = 0; i < r->n_clusters; i++) cl_group[i] = -1;
    for (int i = 0; i < n; i++) {
        gid[i] = -1;
        const fa_rep_node *nd = &r->nodes[i];
        if (!nd->name || nd->folded) continue;
        int c = nd->cluster;
        if (collapse && c >= 0) {
            if (cl_group[c] < 0) {
                cl_group[c] = ng;
                gs[ng] = (grp){.first = i, .last = i, .count = 0, .cluster = c, .parent = ng};
                ng++;
            }
            grp *G = &gs[cl_group[c]];
            G->count++;
            G->last = i;
            if (nd->median_ns > 0) G->time_ns += nd->median_ns;
            gid[i] = cl_group[c];
            continue;
        }
        gs[ng] = (grp){.first = i, .last = i, .count = 1, .time_ns = nd->median_ns > 0 ? nd->median_ns : 0, .cluster = -1, .parent = ng};
        gid[i] = ng++;
    }
    free(cl_group);
    /* group edges */
    int ne = 0;
    for (int pass = 0; pass < 2; pass++) {
        ne = 0;
        for (int e = 0; e < r->n_edges; e++) {
            const fa_rep_edge *ed = &r->edges[e];
            if (ed->producer < 0 || ed->producer >= n || ed->consumer < 0 || ed->consumer >= n) continue;
            int u = gid[ed->producer], v = gid[ed->consumer];
            if (u < 0 || v < 0) continue;
            u = find(gs, u);
            v = find(gs, v);
            if (u == v) continue;
            es[ne++] = (gedge){.u = u, .v = v, .bytes = ed->bytes, .tensor = ed->tensor, .count = 1};
        }
        qsort(es, (size_t)ne, sizeof *es, cmp_edge);
        int m = 0;
        for (int e = 0; e < ne; e++) {
            if (m > 0 && es[m - 1].u == es[e].u && es[m - 1].v == es[e].v) {
                /* same tensor read twice by one consumer counts once */
                if (es[m - 1].tensor != es[e].tensor) { es[m - 1].bytes += es[e].bytes; es[m - 1].count++; }
            } else es[m++] = es[e];
        }
        ne = m;
        int roots = 0;
        for (int i = 0; i < ng; i++) roots += find(gs, i) == i;
        if (pass == 1 || roots <= FA_REP_TOPLEVEL_NODES) break;
        /* top-level structure: merge linear chains u -> v (u's only successor, v's only predecessor) */
        indeg = calloc((size_t)ng + 1, sizeof(int));
        outdeg = calloc((size_t)ng + 1, sizeof(int));
        if (!indeg || !outdeg) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
        for (int e = 0; e < ne; e++) { outdeg[es[e].u]++; indeg[es[e].v]++; }
        for (int e = 0; e < ne; e++)
            if (outdeg[es[e].u] == 1 && indeg[es[e].v] == 1 && gs[es[e].u].cluster < 0 && gs[es[e].v].cluster < 0) {
                int a = find(gs, es[e].u), b2 = find(gs, es[e].v);
                if (a == b2) continue;
                gs[b2].parent = a;
                gs[a].count += gs[b2].count;
                gs[a].time_ns += gs[b2].time_ns;
                if (gs[b2].first < gs[a].first) gs[a].first = gs[b2].first;
                if (gs[b2].last > gs[a].last) gs[a].last = gs[b2].last;
            }
    }
    int n_roots = 0;
    for (int i = 0; i < ng; i++) n_roots += find(gs, i) == i;
    bool edge_labels = n_roots <= FA_REP_EDGE_LABELS_MAX;
    /* fan-out references (FA_REP_FANOUT_STUB): es is sorted by u, so a node's out-edges are a run */
    height = sink_heights(es, ne, ng);
    fan_refs = calloc((size_t)ng + 1, sizeof(int));
    ref_edge = calloc((size_t)ne + 1, 1);
    if (!height || !fan_refs || !ref_edge) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
    for (int e0 = 0, e1; e0 < ne; e0 = e1) {
        int lo = INT32_MAX, hi = -1;
        for (e1 = e0; e1 < ne && es[e1].u == es[e0].u; e1++)
            if (height[es[e1].v] >= 0) {
                if (height[es[e1].v] < lo) lo = height[es[e1].v];
                if (height[es[e1].v] > hi) hi = height[es[e1].v];
            }
        if (e1 - e0 < FA_REP_FANOUT_STUB || hi < 0 || hi - lo <= FA_REP_FANOUT_SPREAD) continue;
        /* the consumers fewer than FA_REP_FANOUT_SPREAD levels below the nearest keep their
         * edges: they hold the drawing together (a BERT layer's LayerNorm feeds its Q, K and V
         * and the residual Add a block below; with every edge a reference, each layer became a
         * component of its own, laid side by side: 24 layers 3.3x the layout time of 12) */
        int n_refs = 0;
        for (int e = e0; e < e1; e++)
            if (height[es[e].v] >= 0 && height[es[e].v] <= hi - FA_REP_FANOUT_SPREAD) {
                ref_edge[e] = 1;
                n_refs++;
            }
        fan_refs[es[e0].u] = n_refs;
    }

    /* the layout's work, estimated (FA_REP_LAYOUT_WORK_MAX): levels are each node's longest path
     * to the graph's end, a valid layering whose spans bound dot's own (its ranks minimise the
     * total span) */
    long work = n_roots;
    for (int e = 0; e < ne; e++) {
        int a = find(gs, es[e].u), b2 = find(gs, es[e].v);
        if (a == b2) continue;
        work += ref_edge[e] ? 2 : 1; /* an edge's node, a reference box and its edge */
        if (!ref_edge[e] && height[es[e].u] >= 0 && height[es[e].v] >= 0 && height[es[e].u] - height[es[e].v] > 1)
            work += height[es[e].u] - height[es[e].v] - 1;
    }
    stats->layout_work_estimate = work;
    bool lay_out = work <= FA_REP_LAYOUT_WORK_MAX;

    pthread_mutex_lock(&g_gv_lock);
    locked = true;
    agseterr(AGERR);
    agseterrf(gv_err_sink);
    g_gv_err[0] = 0;
    char gname[64];
    snprintf(gname, sizeof gname, "run_%" PRId64, r->run_id);
    g = agopen(gname, Agdirected, NULL);
    if (!g) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "graphviz: agopen failed"); goto out; }
    set(g, "rankdir", "TB");
    if (n_roots > FA_REP_LAYOUT_NSLIMIT_NODES) set(g, "nslimit", FA_REP_LAYOUT_NSLIMIT);
    set(g, "fontname", "Helvetica");
    set(g, "fontsize", "11");
    set_text(g, "label", r->run.model_path);
    set(g, "labelloc", "t");
    agattr(g, AGNODE, (char *)"shape", (char *)"box");
    agattr(g, AGNODE, (char *)"style", (char *)"rounded,filled");
    agattr(g, AGNODE, (char *)"fontname", (char *)"Helvetica");
    agattr(g, AGNODE, (char *)"fontsize", (char *)"10");
    agattr(g, AGNODE, (char *)"fillcolor", (char *)"#ffffff");
    agattr(g, AGEDGE, (char *)"fontname", (char *)"Helvetica");
    agattr(g, AGEDGE, (char *)"fontsize", (char *)"9");
    agattr(g, AGEDGE, (char *)"color", (char *)"#555555");

    dense = malloc(sizeof(int) * ((size_t)ng + 1));
    Agnode_t **an = calloc((size_t)ng + 1, sizeof *an);
    if (!dense || !an) { free(an); s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
    /* subgraphs for accepted clusters (expanded mode) and outlined refused/rejected candidates */
    Agraph_t **sub = calloc((size_t)r->n_clusters + 1, sizeof *sub);
    char *taken = calloc((size_t)n + 1, 1);
    if (!sub || !taken) { free(an); free(sub); free(taken); s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
    char buf[160], b2[64];
    for (int pass = 0; pass < 2 && !collapse; pass++)
        for (int ci = 0; ci < r->n_clusters; ci++) {
            const fa_rep_cluster *c = &r->clusters[ci];
            if ((pass == 0) != c->accepted || c->p->n_members == 0) continue;
            bool free_ok = true;
            for (int m = 0; m < c->p->n_members; m++) {
                int id = c->p->members[m];
                if (id < 0 || id >= n || gid[id] < 0 || taken[id]) free_ok = false;
            }
            if (!free_ok) continue; /* overlaps a drawn cluster: members get an outline instead */
            for (int m = 0; m < c->p->n_members; m++) taken[c->p->members[m]] = 1;
            snprintf(buf, sizeof buf, "cluster_%d", c->p->id);
            sub[ci] = agsubg(g, buf, 1);
            fa_buf_reset(&tmp);
            fa_buf_printf(&tmp, "#%d %s (%s): %s", c->p->id, c->p->label ? c->p->label : "", fa_cluster_kind_name(c->p->kind), fa_cluster_status_name(c->v->status));
            set_text(sub[ci], "label", tmp.data);
            fa_buf_reset(&tmp);
            fa_buf_printf(&tmp, "cluster %d %s: %s", c->p->id, fa_cluster_status_name(c->v->status), c->v->reason ? c->v->reason : "");
            set_text(sub[ci], "tooltip", tmp.data);
            set(sub[ci], "fontsize", "10");
            if (c->accepted) {
                set(sub[ci], "style", "filled,rounded");
                set(sub[ci], "fillcolor", "#d8f0d2");
                set(sub[ci], "color", "#3a8a2e");
            } else {
                /* proposed (never applied): blue; refused / rejected: red */
                set(sub[ci], "style", "dashed,rounded");
                set(sub[ci], "color", c->v->status == FA_CLUSTER_PROPOSED ? "#4e79a7" : "#c0392b");
            }
        }
    for (int i = 0; i < ng; i++) {
        if (find(gs, i) != i) { dense[i] = -1; continue; }
        const grp *G = &gs[i];
        const fa_rep_node *nd = &r->nodes[G->first];
        char tbuf[48];
        fa_rep_fmt_ns(tbuf, sizeof tbuf, G->time_ns > 0 ? (double)G->time_ns : -1);
        snprintf(buf, sizeof buf, "n%d", G->first);
        Agraph_t *parent = g;
        if (G->cluster < 0 && G->count == 1)
            for (int ci = 0; ci < r->n_clusters; ci++)
                if (sub[ci])
                    for (int m = 0; m < r->clusters[ci].p->n_members; m++)
                        if (r->clusters[ci].p->members[m] == G->first) parent = sub[ci];
        Agnode_t *a = agnode(parent, buf, 1);
        an[i] = a;
        fa_buf_reset(&tmp);
        if (G->cluster >= 0) {
            const fa_rep_cluster *c = &r->clusters[G->cluster];
            snprintf(b2, sizeof b2, "#%d ", c->p->id);
            gv_text(&tmp, b2);
            gv_text(&tmp, c->p->label ? c->p->label : fa_cluster_kind_name(c->p->kind));
            fa_buf_printf(&tmp, "\\n%d ops (accepted) \xc2\xb7 %s", G->count, tbuf);
            set(a, "fillcolor", "#d8f0d2");
            set(a, "color", "#3a8a2e");
        } else if (G->count > 1) {
            gv_text(&tmp, nd->name);
            fa_buf_puts(&tmp, " \xe2\x80\xa6 ");
            gv_text(&tmp, r->nodes[G->last].name);
            fa_buf_printf(&tmp, "\\n%d ops (chain) \xc2\xb7 %s", G->count, tbuf);
        } else {
            gv_text(&tmp, nd->name);
            fa_buf_puts(&tmp, "\\n");
            gv_text(&tmp, nd->op_type);
            fa_buf_printf(&tmp, " \xc2\xb7 %s", tbuf);
            set(a, "fillcolor", heat(nd->share));
        }
        if (fan_refs[i]) fa_buf_printf(&tmp, "\\n\xe2\x86\x92 %d far consumers (referenced beside each)", fan_refs[i]);
        set(a, "label", tmp.data ? tmp.data : "");
        fa_buf_reset(&tmp);
        fa_buf_printf(&tmp, "%s (%s)\n%s, %" PRIu64 " FLOP, %" PRIu64 " bytes", nd->name, nd->op_type ? nd->op_type : "", tbuf,
                      nd->flops, nd->bytes);
        if (nd->bound) fa_buf_printf(&tmp, ", %s-bound", nd->bound);
        /* outline nodes of refused/rejected candidates that have no subgraph of their own */
        for (int ci = 0; ci < r->n_clusters && G->count == 1; ci++) {
            const fa_rep_cluster *c = &r->clusters[ci];
            if (c->accepted || sub[ci]) continue;
            for (int m = 0; m < c->p->n_members; m++)
                if (c->p->members[m] == G->first) {
                    fa_buf_printf(&tmp, "\ncluster %d %s: %s", c->p->id, fa_cluster_status_name(c->v->status), c->v->reason ? c->v->reason : "");
                    set(a, "color", c->v->status == FA_CLUSTER_PROPOSED ? "#4e79a7" : "#c0392b");
                    set(a, "penwidth", "2");
                    break;
                }
        }
        set_text(a, "tooltip", tmp.data);
    }
    for (int e = 0; e < ne; e++) {
        Agnode_t *u = an[es[e].u], *v = an[es[e].v];
        if (!u || !v) continue;
        char bb[48];
        fa_rep_fmt_bytes(bb, sizeof bb, (double)es[e].bytes);
        if (ref_edge[e]) {
            /* a reference box beside the consumer instead of an edge from the fan-out node */
            snprintf(buf, sizeof buf, "ref%d", e);
            Agnode_t *rn = agnode(g, buf, 1);
            if (!rn) continue;
            const grp *G = &gs[es[e].u];
            fa_buf_reset(&tmp);
            fa_buf_puts(&tmp, "from ");
            if (G->cluster >= 0) {
                const fa_rep_cluster *c = &r->clusters[G->cluster];
                snprintf(b2, sizeof b2, "#%d ", c->p->id);
                gv_text(&tmp, b2);
                gv_text(&tmp, c->p->label ? c->p->label : fa_cluster_kind_name(c->p->kind));
            } else gv_text(&tmp, r->nodes[G->first].name);
            set(rn, "label", tmp.data);
            set(rn, "style", "dashed,rounded");
            set(rn, "fontsize", "8");
            set(rn, "color", "#888888");
            stats->fanout_refs++;
            u = rn;
        }
        Agedge_t *ae = agedge(g, u, v, NULL, 1);
        if (!ae) continue;
        if (edge_labels) set(ae, "label", bb);
        fa_buf_reset(&tmp);
        const char *tn = es[e].tensor >= 0 && es[e].tensor < r->n_tensors ? r->tensors[es[e].tensor].name : "";
        fa_buf_printf(&tmp, "%s: %s", tn, bb);
        if (es[e].count > 1) fa_buf_printf(&tmp, " (%d tensors)", es[e].count);
        set_text(ae, "tooltip", tmp.data);
    }
    free(an);
    free(sub);
    free(taken);

    /* graph.dot: written before layout (no positions in it) */
    {
        char *mem = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&mem, &len);
        if (!f) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "open_memstream failed writing graph.dot"); goto out; }
        int wrc = agwrite(g, f);
        fclose(f);
        if (wrc != 0 || !mem) {
            free(mem);
            s = fa_ctx_error(ctx, FA_ERR_RUNTIME, "graphviz: agwrite failed: %s", g_gv_err);
            goto out;
        }
        fa_buf_append(dot, mem, len);
        free(mem);
    }
    if (!lay_out) {
        stats->layout_skipped = true;
        fa_buf_printf(svg,
                      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"60\"><text x=\"4\" y=\"20\" "
                      "font-family=\"Helvetica\" font-size=\"13\">graph.svg not drawn: %d nodes and %d edges after merging "
                      "would give the layout about %ld positions to solve (more than %d; its time grows about as the "
                      "square).</text><text x=\"4\" y=\"44\" font-family=\"Helvetica\" font-size=\"13\">graph.dot "
                      "holds the whole graph: dot -Tsvg graph.dot -o graph.svg</text></svg>\n",
                      n_roots, ne, work, FA_REP_LAYOUT_WORK_MAX);
        goto out;
    }
    if (!g_gvc) g_gvc = gvContext();
    gvc = g_gvc;
    if (!gvc) { s = fa_ctx_error(ctx, FA_ERR_RUNTIME, "graphviz: gvContext failed"); goto out; }
    if (gvLayout(gvc, g, "dot") != 0) {
        s = fa_ctx_error(ctx, FA_ERR_RUNTIME, "graphviz: dot layout of run %" PRId64 " failed: %s", r->run_id, g_gv_err);
        goto out;
    }
    /* the work the layout did: its ranks, and the virtual nodes it placed on every rank an edge
     * crosses (types.h's ND_rank, set by dot's rank phase) */
    for (Agnode_t *a = agfstnode(g); a; a = agnxtnode(g, a)) {
        stats->drawn_nodes++;
        if (ND_rank(a) + 1 > stats->ranks) stats->ranks = ND_rank(a) + 1;
        for (Agedge_t *ae = agfstout(g, a); ae; ae = agnxtout(g, ae)) {
            int span = ND_rank(aghead(ae)) - ND_rank(agtail(ae));
            if (span < 0) span = -span;
            stats->drawn_edges++;
            if (span > 1) stats->virtual_nodes += span - 1;
        }
    }
    char *data = NULL;
    unsigned int dlen = 0;
    int rrc = gvRenderData(gvc, g, "svg", &data, &dlen);
    if (rrc != 0 || !data) {
        s = fa_ctx_error(ctx, FA_ERR_RUNTIME, "graphviz: svg render failed (is the graphviz core plugin installed?): %s", g_gv_err);
    } else fa_buf_append(svg, data, dlen);
    if (data) gvFreeRenderData(data);
    gvFreeLayout(gvc, g);
out:
    if (g) agclose(g);
    if (locked) pthread_mutex_unlock(&g_gv_lock);
    fa_buf_free(&tmp);
    free(gs);
    free(gid);
    free(es);
    free(indeg);
    free(outdeg);
    free(dense);
    free(height);
    free(fan_refs);
    free(ref_edge);
    return s;
#endif
}
