/* reports/load — reads everything the reports show from the run database into one fa_rep
 * (arena-owned): graph, per-op times, ceilings, traces of the run and of its fused run, the
 * newest plan with its clusters, why-not rows and benchmark samples. */
#include "reports-impl.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call) do { s = FA_SQL_CHECK(ctx, st, (call)); if (s) goto out; } while (0)

static const char *col_str(fa_arena *ar, sqlite3_stmt *q, int i)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    return t ? fa_arena_strdup(ar, (const char *)t) : NULL;
}

static double col_num(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

const char *fa_rep_node_name(const fa_rep *r, int id)
{
    if (id < 0 || id >= r->n_nodes || !r->nodes[id].name) return "";
    return r->nodes[id].name;
}

void fa_rep_fmt_ns(char *buf, size_t cap, double ns)
{
    if (!(ns == ns) || ns < 0) snprintf(buf, cap, "not measured");
    else if (ns < 1e3) snprintf(buf, cap, "%.0f ns", ns);
    else if (ns < 1e6) snprintf(buf, cap, "%.1f \xc2\xb5s", ns / 1e3);
    else if (ns < 1e9) snprintf(buf, cap, "%.3f ms", ns / 1e6);
    else snprintf(buf, cap, "%.3f s", ns / 1e9);
}

void fa_rep_fmt_bytes(char *buf, size_t cap, double v)
{
    if (!(v == v) || v < 0) snprintf(buf, cap, "not measured");
    else if (v < 1024) snprintf(buf, cap, "%.0f B", v);
    else if (v < 1048576.0) snprintf(buf, cap, "%.1f KiB", v / 1024);
    else if (v < 1073741824.0) snprintf(buf, cap, "%.1f MiB", v / 1048576.0);
    else snprintf(buf, cap, "%.2f GiB", v / 1073741824.0);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Kernel records (kind 0) of a run with their median iteration. */
static fa_status load_trace(fa_ctx *ctx, fa_store *st, fa_arena *ar, int64_t run_id, fa_rep_trace *t)
{
    sqlite3 *db = fa_store_db(st);
    sqlite3_stmt *q = NULL;
    fa_status s = FA_OK;
    memset(t, 0, sizeof *t);
    t->median_iter = -1;
    int64_t n = 0;
    CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM kernels WHERE run_id=?1 AND kind=0", -1, &q, NULL));
    sqlite3_bind_int64(q, 1, run_id);
    if (sqlite3_step(q) == SQLITE_ROW) n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    q = NULL;
    if (n == 0) return FA_OK;
    t->k = fa_arena_alloc(ar, sizeof *t->k * (size_t)n);
    if (!t->k) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory loading %" PRId64 " kernel records", n);
    CHECK(sqlite3_prepare_v2(db,
        "SELECT node, name, op_type, node_name, start_ns, end_ns, flops, bytes_read + bytes_written, iter, stream "
        "FROM kernels WHERE run_id=?1 AND kind=0 ORDER BY seq", -1, &q, NULL));
    sqlite3_bind_int64(q, 1, run_id);
    int rc;
    bool any_timed = false;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW && t->n < n) {
        fa_rep_kernel *k = &t->k[t->n++];
        k->node = sqlite3_column_int(q, 0);
        k->name = col_str(ar, q, 1);
        k->op_type = col_str(ar, q, 2);
        k->node_name = col_str(ar, q, 3);
        k->start_ns = sqlite3_column_int64(q, 4);
        k->end_ns = sqlite3_column_int64(q, 5);
        k->flops = (uint64_t)sqlite3_column_int64(q, 6);
        k->bytes = (uint64_t)sqlite3_column_int64(q, 7);
        k->iter = sqlite3_column_int(q, 8);
        k->stream = sqlite3_column_int64(q, 9);
        if (k->iter >= 0) any_timed = true;
    }
    CHECK(rc == SQLITE_ROW ? SQLITE_OK : rc);
    sqlite3_finalize(q);
    q = NULL;
    /* A trace whose records all have iter -1 (imports) is one iteration (as store's op table). */
    int max_iter = -1;
    for (int i = 0; i < t->n; i++) {
        if (!any_timed) t->k[i].iter = 0;
        if (t->k[i].iter > max_iter) max_iter = t->k[i].iter;
    }
    if (max_iter < 0) return FA_OK;
    int64_t *lo = fa_arena_alloc(ar, sizeof(int64_t) * (size_t)(max_iter + 1));
    int64_t *hi = fa_arena_alloc(ar, sizeof(int64_t) * (size_t)(max_iter + 1));
    int *cnt = fa_arena_alloc(ar, sizeof(int) * (size_t)(max_iter + 1));
    int64_t *sorted = fa_arena_alloc(ar, sizeof(int64_t) * 2 * (size_t)(max_iter + 1));
    t->spans = fa_arena_alloc(ar, sizeof(double) * (size_t)(max_iter + 1));
    if (!lo || !hi || !cnt || !sorted || !t->spans) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    for (int i = 0; i <= max_iter; i++) { lo[i] = INT64_MAX; hi[i] = INT64_MIN; }
    for (int i = 0; i < t->n; i++) {
        const fa_rep_kernel *k = &t->k[i];
        if (k->iter < 0) continue;
        if (k->start_ns < lo[k->iter]) lo[k->iter] = k->start_ns;
        if (k->end_ns > hi[k->iter]) hi[k->iter] = k->end_ns;
        cnt[k->iter]++;
    }
    int m = 0;
    for (int i = 0; i <= max_iter; i++)
        if (cnt[i]) {
            sorted[2 * m] = hi[i] - lo[i];
            sorted[2 * m + 1] = i;
            t->spans[m] = (double)(hi[i] - lo[i]);
            m++;
        }
    t->n_iters = m;
    /* sort (span, iter) pairs by span; the lower middle is the median (store's convention) */
    qsort(sorted, (size_t)m, 2 * sizeof(int64_t), cmp_i64);
    int mid = (m - 1) / 2;
    t->median_span_ns = sorted[2 * mid];
    t->median_iter = (int)sorted[2 * mid + 1];
    t->kernels_in_median = cnt[t->median_iter];
    return FA_OK;
out:
    if (q) sqlite3_finalize(q);
    return s;
}

/* "[1,2,3]" -> ints in the arena. */
static int parse_ints(fa_arena *ar, const char *json, int **out)
{
    int n = 0, cap = 0;
    *out = NULL;
    if (!json) return 0;
    for (const char *p = json; *p; p++) cap += *p == ',';
    cap += 1;
    int *v = fa_arena_alloc(ar, sizeof(int) * (size_t)cap);
    if (!v) return 0;
    const char *p = json;
    while (*p) {
        if ((*p >= '0' && *p <= '9') || *p == '-') {
            char *end;
            long x = strtol(p, &end, 10);
            if (n < cap) v[n++] = (int)x;
            p = end;
        } else p++;
    }
    *out = v;
    return n;
}

/* Label of cluster `id` from plans.options_json ({"clusters":[{"id":N,"label":"...",...}]}). */
static const char *find_label(fa_arena *ar, const char *opts, int id)
{
    if (!opts) return NULL;
    char key[48];
    snprintf(key, sizeof key, "{\"id\":%d,\"label\":\"", id);
    const char *p = strstr(opts, key);
    if (!p) return NULL;
    p += strlen(key);
    fa_buf b;
    fa_buf_init(&b);
    while (*p && *p != '"') {
        if (*p == '\\' && p[1]) {
            p++;
            char c = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'r' ? '\r' : *p;
            if (*p == 'u') { c = '?'; p += strlen(p) >= 5 ? 4 : 0; }
            fa_buf_append(&b, &c, 1);
            p++;
        } else fa_buf_append(&b, p++, 1);
    }
    const char *r = b.data ? fa_arena_strdup(ar, b.data) : fa_arena_strdup(ar, "");
    fa_buf_free(&b);
    return r;
}

static void stats_of(fa_arena *ar, const int64_t *v, int n, fa_sample_stats *out)
{
    memset(out, 0, sizeof *out);
    if (n <= 0) return;
    double *d = fa_arena_alloc(ar, sizeof(double) * (size_t)n);
    if (!d) return;
    for (int i = 0; i < n; i++) d[i] = (double)v[i];
    fa_sample_stats_of(d, n, out);
}

static fa_status load_benchmarks(fa_ctx *ctx, fa_store *st, fa_rep *r)
{
    sqlite3 *db = fa_store_db(st);
    sqlite3_stmt *q = NULL;
    fa_status s = FA_OK;
    int cap = 1024, n = 0;
    int64_t *v = malloc(sizeof(int64_t) * (size_t)cap);
    char cur_subject[32] = "";
    int cur_cluster = -2;
    if (!v) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    CHECK(sqlite3_prepare_v2(db,
        "SELECT subject, cluster_id, latency_ns FROM benchmarks WHERE run_id=?1 AND (plan_id=?2 OR ?2=0) "
        "ORDER BY subject, cluster_id, plan_id DESC, iter", -1, &q, NULL));
    sqlite3_bind_int64(q, 1, r->run_id);
    sqlite3_bind_int(q, 2, r->plan_id);
    for (;;) {
        int rc = sqlite3_step(q);
        const char *subj = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0) : NULL;
        int cid = rc == SQLITE_ROW ? sqlite3_column_int(q, 1) : -3;
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) CHECK(rc);
        if (!subj || strcmp(subj, cur_subject) || cid != cur_cluster) {
            /* flush the previous group */
            if (n > 0) {
                fa_sample_stats *dst = NULL;
                if (cur_cluster < 0) {
                    if (!strcmp(cur_subject, "baseline")) dst = &r->bench_base;
                    else if (!strcmp(cur_subject, "fused")) dst = &r->bench_fused;
                } else {
                    for (int i = 0; i < r->n_clusters; i++)
                        if (r->clusters[i].id == cur_cluster) {
                            if (!strcmp(cur_subject, "cluster-unfused")) dst = &r->clusters[i].unfused;
                            else if (!strcmp(cur_subject, "cluster-fused")) dst = &r->clusters[i].fused;
                        }
                }
                if (dst) stats_of(r->ar, v, n, dst);
            }
            n = 0;
            if (!subj) break;
            snprintf(cur_subject, sizeof cur_subject, "%s", subj);
            cur_cluster = cid;
        }
        if (n == cap) {
            int64_t *nv = realloc(v, sizeof(int64_t) * (size_t)cap * 2);
            if (!nv) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
            v = nv;
            cap *= 2;
        }
        v[n++] = sqlite3_column_int64(q, 2);
    }
out:
    if (q) sqlite3_finalize(q);
    free(v);
    return s;
}

/* Sum FLOPs, external traffic and member time of each cluster (roofline arrow origin). */
static void cluster_points(fa_rep *r, const int *edge_all_p, const int *edge_all_c, const int *edge_all_t, int n_all)
{
    char *member = calloc((size_t)r->n_nodes + 1, 1);
    char *seen = calloc((size_t)r->n_tensors + 1, 1);
    if (!member || !seen) { free(member); free(seen); return; }
    for (int ci = 0; ci < r->n_clusters; ci++) {
        fa_rep_cluster *c = &r->clusters[ci];
        memset(seen, 0, (size_t)r->n_tensors + 1);
        for (int m = 0; m < c->n_members; m++) {
            int id = c->members[m];
            if (id < 0 || id >= r->n_nodes) continue;
            member[id] = 1;
            c->flops += r->nodes[id].flops;
            if (r->nodes[id].median_ns > 0) c->unfused_ns += r->nodes[id].median_ns;
        }
        for (int e = 0; e < n_all; e++) {
            int p = edge_all_p[e], k = edge_all_c[e], t = edge_all_t[e];
            if (t < 0 || t >= r->n_tensors || k < 0 || k >= r->n_nodes) continue;
            bool pin = p >= 0 && p < r->n_nodes && member[p];
            if (member[k] && !pin && !(seen[t] & 1)) { seen[t] |= 1; c->ext_bytes += r->tensors[t].bytes; }
            if (pin && !member[k] && !(seen[t] & 2)) { seen[t] |= 2; c->ext_bytes += r->tensors[t].bytes; }
        }
        for (int t = 0; t < r->n_tensors; t++) {
            int p = r->tensors[t].producer;
            if ((r->tensors[t].flags & 2) && p >= 0 && p < r->n_nodes && member[p] && !(seen[t] & 2)) {
                seen[t] |= 2;
                c->ext_bytes += r->tensors[t].bytes;
            }
        }
        for (int m = 0; m < c->n_members; m++)
            if (c->members[m] >= 0 && c->members[m] < r->n_nodes) member[c->members[m]] = 0;
    }
    free(member);
    free(seen);
}

/* The fused run's kernel for each accepted cluster: "fused_c<ID>" (generated kernels),
 * "<anchor>__fused" (epilogues), "<anchor>__bnfold" (BN folds) — applier/fused_graph.c. */
static fa_status fused_points(fa_ctx *ctx, fa_store *st, fa_rep *r)
{
    fa_status s = FA_OK;
    sqlite3_stmt *q = NULL;
    if (r->have_fused_run) {
        CHECK(sqlite3_prepare_v2(fa_store_db(st), "SELECT node_id FROM nodes WHERE run_id=?1 AND name=?2", -1, &q, NULL));
    }
    for (int ci = 0; ci < r->n_clusters; ci++) {
        fa_rep_cluster *c = &r->clusters[ci];
        c->fused_ns = NAN;
        if (!c->accepted) continue;
        if (q) {
            for (int m = -1; m < c->n_members && !c->fused_name; m++) {
                for (int suf = 0; suf < 2 && !c->fused_name; suf++) {
                    char name[1200];
                    if (m < 0) { if (suf) break; snprintf(name, sizeof name, "fused_c%d", c->id); }
                    else snprintf(name, sizeof name, "%s%s", fa_rep_node_name(r, c->members[m]), suf ? "__bnfold" : "__fused");
                    sqlite3_reset(q);
                    sqlite3_bind_int64(q, 1, r->fused_run_id);
                    sqlite3_bind_text(q, 2, name, -1, SQLITE_TRANSIENT);
                    if (sqlite3_step(q) != SQLITE_ROW) continue;
                    int nid = sqlite3_column_int(q, 0);
                    for (size_t i = 0; i < r->n_fused_ops; i++)
                        if (r->fused_ops[i].node == nid && r->fused_ops[i].median_ns > 0) {
                            c->fused_ns = (double)r->fused_ops[i].median_ns;
                            c->fused_name = fa_arena_strdup(r->ar, name);
                            c->fused_source = "fused run";
                        }
                }
            }
        }
        if (!(c->fused_ns == c->fused_ns) && c->fused.n > 0) {
            c->fused_ns = c->fused.median_ns;
            c->fused_source = "cluster benchmark";
        }
        if (!(c->fused_ns == c->fused_ns) && c->measured_us == c->measured_us && c->unfused_ns > 0 &&
            c->unfused_ns - c->measured_us * 1e3 > 0) {
            c->fused_ns = c->unfused_ns - c->measured_us * 1e3;
            c->fused_source = "unfused time - measured saving";
        }
    }
out:
    if (q) sqlite3_finalize(q);
    return s;
}

static fa_status load_ceilings(fa_ctx *ctx, fa_store *st, fa_rep *r)
{
    fa_ceiling *cs = NULL;
    size_t n = 0;
    fa_status s = fa_store_get_ceilings(ctx, st, NULL, r->ar, &cs, &n);
    if (s) return s;
    char key[600];
    snprintf(key, sizeof key, "cpu:%s:%dt", r->run.device_name ? r->run.device_name : "cpu", r->run.threads);
    const char *use = NULL;
    for (size_t i = 0; i < n && !use; i++)
        if (!strcmp(cs[i].device_key, key)) use = cs[i].device_key;
    for (size_t i = 0; i < n && !use && r->run.device_name && *r->run.device_name; i++)
        if (strstr(cs[i].device_key, r->run.device_name)) use = cs[i].device_key;
    if (!use) return FA_OK;
    fa_ceilings *c = &r->ceil;
    memset(c, 0, sizeof *c);
    c->device_key = use;
    c->device_name = r->run.device_name;
    c->threads = r->run.threads;
    bool f1 = false, f2 = false, f3 = false;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(cs[i].device_key, use)) continue;
        if (!strcmp(cs[i].name, "mem_bw") || !strcmp(cs[i].name, "dram_bw")) {
            c->mem_bw_gbs = cs[i].value; c->mem_bw_source = cs[i].source; f1 = true;
            if (cs[i].detail) snprintf(c->detail, sizeof c->detail, "%s", cs[i].detail);
        } else if (!strcmp(cs[i].name, "fp32_peak")) {
            c->peak_gflops = cs[i].value; c->peak_source = cs[i].source; f2 = true;
        } else if (!strcmp(cs[i].name, "dispatch") || !strcmp(cs[i].name, "launch_gap")) {
            c->launch_ns = cs[i].value; c->launch_source = cs[i].source; f3 = true;
        }
    }
    r->have_ceil = f1 && f2 && c->mem_bw_gbs > 0 && c->peak_gflops > 0;
    if (!f3) c->launch_ns = 0;
    r->ceil_key = use;
    return FA_OK;
}

fa_status fa_rep_load(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_rep **out)
{
    fa_rep *r = calloc(1, sizeof *r);
    if (!r) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    r->ar = fa_arena_create(1 << 16);
    if (!r->ar) { free(r); return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); }
    r->run_id = run_id;
    sqlite3 *db = fa_store_db(st);
    sqlite3_stmt *q = NULL;
    int *ep = NULL, *ec = NULL, *et = NULL;
    int n_all = 0;
    fa_status s = fa_store_get_run(ctx, st, run_id, r->ar, &r->run);
    if (s) goto out;

    /* nodes */
    CHECK(sqlite3_prepare_v2(db, "SELECT coalesce(max(node_id),-1) FROM nodes WHERE run_id=?1", -1, &q, NULL));
    sqlite3_bind_int64(q, 1, run_id);
    if (sqlite3_step(q) == SQLITE_ROW) r->n_nodes = sqlite3_column_int(q, 0) + 1;
    sqlite3_finalize(q);
    q = NULL;
    r->nodes = fa_arena_alloc(r->ar, sizeof *r->nodes * (size_t)(r->n_nodes + 1));
    if (!r->nodes) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
    for (int i = 0; i < r->n_nodes; i++) { r->nodes[i].median_ns = -1; r->nodes[i].cluster = -1; r->nodes[i].pattern = -1; }
    CHECK(sqlite3_prepare_v2(db,
        "SELECT node_id, name, op_type, pattern, folded, flops, bytes_read + bytes_written FROM nodes WHERE run_id=?1",
        -1, &q, NULL));
    sqlite3_bind_int64(q, 1, run_id);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int id = sqlite3_column_int(q, 0);
        if (id < 0 || id >= r->n_nodes) continue;
        fa_rep_node *n = &r->nodes[id];
        n->name = col_str(r->ar, q, 1);
        n->op_type = col_str(r->ar, q, 2);
        n->pattern = sqlite3_column_type(q, 3) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 3);
        n->folded = sqlite3_column_int(q, 4) != 0;
        n->flops = (uint64_t)sqlite3_column_int64(q, 5);
        n->bytes = (uint64_t)sqlite3_column_int64(q, 6);
        if (!n->name) n->name = "";
        if (!n->folded) r->n_live++;
    }
    CHECK(rc);
    sqlite3_finalize(q);
    q = NULL;

    /* tensors */
    CHECK(sqlite3_prepare_v2(db, "SELECT coalesce(max(tensor_id),-1) FROM tensors WHERE run_id=?1", -1, &q, NULL));
    sqlite3_bind_int64(q, 1, run_id);
    if (sqlite3_step(q) == SQLITE_ROW) r->n_tensors = sqlite3_column_int(q, 0) + 1;
    sqlite3_finalize(q);
    q = NULL;
    r->tensors = fa_arena_alloc(r->ar, sizeof *r->tensors * (size_t)(r->n_tensors + 1));
    if (!r->tensors) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
    for (int i = 0; i < r->n_tensors; i++) { r->tensors[i].producer = -1; r->tensors[i].name = ""; }
    CHECK(sqlite3_prepare_v2(db, "SELECT tensor_id, name, bytes, producer, flags FROM tensors WHERE run_id=?1", -1, &q, NULL));
    sqlite3_bind_int64(q, 1, run_id);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int id = sqlite3_column_int(q, 0);
        if (id < 0 || id >= r->n_tensors) continue;
        fa_rep_tensor *t = &r->tensors[id];
        t->name = col_str(r->ar, q, 1);
        if (!t->name) t->name = "";
        t->bytes = (uint64_t)sqlite3_column_int64(q, 2);
        t->producer = sqlite3_column_int(q, 3);
        t->flags = (unsigned)sqlite3_column_int(q, 4);
    }
    CHECK(rc);
    sqlite3_finalize(q);
    q = NULL;

    /* consumers: every (tensor, consumer); graph edges are those with a producer */
    int64_t n_cons = 0;
    CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM consumers WHERE run_id=?1", -1, &q, NULL));
    sqlite3_bind_int64(q, 1, run_id);
    if (sqlite3_step(q) == SQLITE_ROW) n_cons = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    q = NULL;
    ep = malloc(sizeof(int) * (size_t)(n_cons + 1));
    ec = malloc(sizeof(int) * (size_t)(n_cons + 1));
    et = malloc(sizeof(int) * (size_t)(n_cons + 1));
    r->edges = fa_arena_alloc(r->ar, sizeof *r->edges * (size_t)(n_cons + 1));
    if (!ep || !ec || !et || !r->edges) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
    CHECK(sqlite3_prepare_v2(db,
        "SELECT t.producer, e.node_id, e.tensor_id, t.bytes FROM consumers e JOIN tensors t USING (run_id, tensor_id) "
        "WHERE e.run_id=?1 ORDER BY e.tensor_id, e.node_id, e.input_index", -1, &q, NULL));
    sqlite3_bind_int64(q, 1, run_id);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW && n_all < n_cons) {
        int p = sqlite3_column_int(q, 0), c = sqlite3_column_int(q, 1), t = sqlite3_column_int(q, 2);
        ep[n_all] = p; ec[n_all] = c; et[n_all] = t;
        n_all++;
        /* one graph edge per (producer, consumer, tensor) even when read at two slots */
        if (p >= 0 && !(r->n_edges > 0 && r->edges[r->n_edges - 1].tensor == t && r->edges[r->n_edges - 1].consumer == c)) {
            fa_rep_edge *e = &r->edges[r->n_edges++];
            e->producer = p; e->consumer = c; e->tensor = t;
            e->bytes = (uint64_t)sqlite3_column_int64(q, 3);
        }
    }
    CHECK(rc == SQLITE_ROW ? SQLITE_OK : rc);
    sqlite3_finalize(q);
    q = NULL;

    /* per-op table */
    s = fa_store_op_table(ctx, st, run_id, r->ar, &r->ops, &r->n_ops, &r->n_iters);
    if (s) goto out;
    for (size_t i = 0; i < r->n_ops; i++) {
        int id = r->ops[i].node;
        if (id < 0 || id >= r->n_nodes) continue;
        r->nodes[id].median_ns = r->ops[i].median_ns;
        r->nodes[id].share = r->ops[i].share;
        r->nodes[id].kernels = r->ops[i].kernels;
    }

    s = load_ceilings(ctx, st, r);
    if (s) goto out;
    for (int i = 0; i < r->n_nodes; i++) {
        fa_rep_node *n = &r->nodes[i];
        if (!r->have_ceil || n->median_ns <= 0) continue;
        fa_roofline_place(&r->ceil, n->flops, n->bytes, (uint64_t)n->median_ns, &n->place);
        n->placed = true;
        n->bound = fa_bound_name(n->place.bound);
    }

    /* analysis */
    CHECK(sqlite3_prepare_v2(db,
        "SELECT (SELECT count(*) FROM analysis_kernels WHERE run_id=?1) + (SELECT count(*) FROM analysis_summary WHERE run_id=?1 AND key <> 'e2e_max_rel_error')",
        -1, &q, NULL));
    sqlite3_bind_int64(q, 1, run_id);
    if (sqlite3_step(q) == SQLITE_ROW) r->have_analysis = sqlite3_column_int64(q, 0) > 0;
    sqlite3_finalize(q);
    q = NULL;
    if (r->have_analysis) {
        fa_buf b;
        fa_buf_init(&b);
        CHECK(sqlite3_prepare_v2(db, "SELECT text FROM analysis_summary WHERE run_id=?1 AND text IS NOT NULL AND key <> 'e2e_max_rel_error' ORDER BY key", -1, &q, NULL));
        sqlite3_bind_int64(q, 1, run_id);
        while (sqlite3_step(q) == SQLITE_ROW) {
            if (b.len) fa_buf_puts(&b, "\n");
            fa_buf_puts(&b, (const char *)sqlite3_column_text(q, 0));
        }
        sqlite3_finalize(q);
        q = NULL;
        if (b.len) r->analysis_text = fa_arena_strdup(r->ar, b.data);
        fa_buf_free(&b);
    }

    /* traces */
    s = load_trace(ctx, st, r->ar, run_id, &r->base);
    if (s) goto out;
    {
        char tag[64];
        snprintf(tag, sizeof tag, "fused-of:%" PRId64, run_id);
        CHECK(sqlite3_prepare_v2(db, "SELECT id FROM runs WHERE kind='fused' AND tag=?1 AND status<>'failed' ORDER BY id DESC LIMIT 1", -1, &q, NULL));
        sqlite3_bind_text(q, 1, tag, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(q) == SQLITE_ROW) { r->fused_run_id = sqlite3_column_int64(q, 0); r->have_fused_run = true; }
        sqlite3_finalize(q);
        q = NULL;
    }
    if (r->have_fused_run) {
        s = fa_store_get_run(ctx, st, r->fused_run_id, r->ar, &r->fused_run);
        if (!s) s = load_trace(ctx, st, r->ar, r->fused_run_id, &r->fused);
        int nit = 0;
        if (!s) s = fa_store_op_table(ctx, st, r->fused_run_id, r->ar, &r->fused_ops, &r->n_fused_ops, &nit);
        if (s) goto out;
    }

    /* newest plan */
    const char *opts = NULL;
    CHECK(sqlite3_prepare_v2(db, "SELECT plan_id, plan_hash, options_json FROM plans WHERE run_id=?1 ORDER BY plan_id DESC LIMIT 1",
                             -1, &q, NULL));
    sqlite3_bind_int64(q, 1, run_id);
    if (sqlite3_step(q) == SQLITE_ROW) {
        r->plan_id = sqlite3_column_int(q, 0);
        r->plan_hash = col_str(r->ar, q, 1);
        opts = col_str(r->ar, q, 2);
    }
    sqlite3_finalize(q);
    q = NULL;
    if (r->plan_id > 0) {
        int64_t nc = 0;
        CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM clusters WHERE run_id=?1 AND plan_id=?2", -1, &q, NULL));
        sqlite3_bind_int64(q, 1, run_id);
        sqlite3_bind_int(q, 2, r->plan_id);
        if (sqlite3_step(q) == SQLITE_ROW) nc = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        q = NULL;
        r->clusters = fa_arena_alloc(r->ar, sizeof *r->clusters * (size_t)(nc + 1));
        if (!r->clusters) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
        CHECK(sqlite3_prepare_v2(db,
            "SELECT cluster_id, kind, members_json, saved_bytes, saved_launches, est_saving_us, est_saving_pct, registers, "
            "spill_bytes, occupancy, status, reason, measured_saving_us, max_rel_error FROM clusters "
            "WHERE run_id=?1 AND plan_id=?2 ORDER BY est_saving_us DESC, cluster_id", -1, &q, NULL));
        sqlite3_bind_int64(q, 1, run_id);
        sqlite3_bind_int(q, 2, r->plan_id);
        while ((rc = sqlite3_step(q)) == SQLITE_ROW && r->n_clusters < nc) {
            fa_rep_cluster *c = &r->clusters[r->n_clusters];
            c->id = sqlite3_column_int(q, 0);
            c->kind = col_str(r->ar, q, 1);
            c->n_members = parse_ints(r->ar, (const char *)sqlite3_column_text(q, 2), &c->members);
            c->saved_bytes = sqlite3_column_int64(q, 3);
            c->saved_launches = sqlite3_column_int(q, 4);
            c->est_us = col_num(q, 5);
            c->est_pct = col_num(q, 6);
            c->registers = sqlite3_column_type(q, 7) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 7);
            c->spill_bytes = sqlite3_column_type(q, 8) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 8);
            c->occupancy = col_num(q, 9);
            c->status = col_str(r->ar, q, 10);
            if (!c->status) c->status = "proposed";
            c->reason = col_str(r->ar, q, 11);
            c->measured_us = col_num(q, 12);
            c->max_rel_error = col_num(q, 13);
            c->label = find_label(r->ar, opts, c->id);
            c->accepted = !strcmp(c->status, "accepted");
            if (c->accepted) r->n_accepted++;
            else if (!strcmp(c->status, "refused")) r->n_refused++;
            else if (!strncmp(c->status, "rejected", 8)) r->n_rejected++;
            else r->n_proposed++;
            if (c->accepted)
                for (int m = 0; m < c->n_members; m++)
                    if (c->members[m] >= 0 && c->members[m] < r->n_nodes) r->nodes[c->members[m]].cluster = r->n_clusters;
            r->n_clusters++;
        }
        CHECK(rc == SQLITE_ROW ? SQLITE_OK : rc);
        sqlite3_finalize(q);
        q = NULL;

        int64_t nw = 0;
        CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM why_not WHERE run_id=?1 AND plan_id=?2", -1, &q, NULL));
        sqlite3_bind_int64(q, 1, run_id);
        sqlite3_bind_int(q, 2, r->plan_id);
        if (sqlite3_step(q) == SQLITE_ROW) nw = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        q = NULL;
        r->why = fa_arena_alloc(r->ar, sizeof *r->why * (size_t)(nw + 1));
        if (!r->why) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory"); goto out; }
        CHECK(sqlite3_prepare_v2(db,
            "SELECT producer, consumer, tensor_id, reason_code, reason FROM why_not WHERE run_id=?1 AND plan_id=?2 ORDER BY seq",
            -1, &q, NULL));
        sqlite3_bind_int64(q, 1, run_id);
        sqlite3_bind_int(q, 2, r->plan_id);
        while ((rc = sqlite3_step(q)) == SQLITE_ROW && r->n_why < nw) {
            fa_rep_why *w = &r->why[r->n_why++];
            w->producer = sqlite3_column_int(q, 0);
            w->consumer = sqlite3_column_int(q, 1);
            w->tensor = sqlite3_column_int(q, 2);
            w->code = col_str(r->ar, q, 3);
            w->reason = col_str(r->ar, q, 4);
        }
        CHECK(rc == SQLITE_ROW ? SQLITE_OK : rc);
        sqlite3_finalize(q);
        q = NULL;
    }
    r->e2e_max_rel_error = NAN;
    CHECK(sqlite3_prepare_v2(db,
        "SELECT value FROM analysis_summary WHERE key='e2e_max_rel_error' AND value IS NOT NULL AND run_id IN (?1, ?2) "
        "ORDER BY run_id = ?1 DESC LIMIT 1", -1, &q, NULL));
    sqlite3_bind_int64(q, 1, run_id);
    sqlite3_bind_int64(q, 2, r->have_fused_run ? r->fused_run_id : run_id);
    if (sqlite3_step(q) == SQLITE_ROW) r->e2e_max_rel_error = sqlite3_column_double(q, 0);
    sqlite3_finalize(q);
    q = NULL;
    s = load_benchmarks(ctx, st, r);
    if (s) goto out;
    cluster_points(r, ep, ec, et, n_all);
    s = fused_points(ctx, st, r);
out:
    if (q) sqlite3_finalize(q);
    free(ep);
    free(ec);
    free(et);
    if (s) {
        fa_rep_free(r);
        return s;
    }
    *out = r;
    return FA_OK;
}

void fa_rep_free(fa_rep *r)
{
    if (!r) return;
    fa_arena_free(r->ar);
    free(r);
}
