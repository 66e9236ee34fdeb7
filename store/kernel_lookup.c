/* store/kernel_lookup — the measured time of a fused kernel of the same kind and shape class
 * (issue 19's second basis): the clusters earlier plans on the same device benchmarked fused,
 * keyed by a signature the advisor computes the same way from its graph. Reads only; no schema
 * of its own (benchmarks, clusters, plans, runs, nodes). */
#include "store-impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fa_kernel_signature_start(fa_buf *b, const char *kind)
{
    fa_buf_puts(b, kind ? kind : "?");
}

void fa_kernel_signature_member(fa_buf *b, const char *op_type, const char *input_shapes, const char *output_shapes,
                                uint64_t flops, uint64_t bytes_read, uint64_t bytes_written)
{
    fa_buf_printf(b, "|%s(%s)[%s]f%" PRIu64 "r%" PRIu64 "w%" PRIu64, op_type ? op_type : "?",
                  input_shapes ? input_shapes : "", output_shapes ? output_shapes : "", flops, bytes_read, bytes_written);
}

/* One stored node's signature fields, indexed by node id. */
typedef struct sig_node {
    const char *op_type, *shapes;
    const char **in_shapes; /* [n_inputs]: consumers joined with tensors; NULL slot: absent */
    int n_inputs;
    uint64_t flops, bytes_read, bytes_written;
    bool present;
} sig_node;

/* The nodes of run_id, indexed by node id, in arena; *n = max id + 1. */
static fa_status load_nodes(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena, sig_node **out, int *n)
{
    fa_stmt *q;
    binder b;
    fa_status s = fa_sq_prepare_run(ctx, st, "SELECT node_id, op_type, output_shapes, flops, bytes_read, bytes_written, n_inputs "
                                             "FROM nodes WHERE run_id=?1 ORDER BY node_id DESC", run_id, &q, &b);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, b.rc);
    sig_node *v = NULL;
    int nv = 0, rc = FA_DB_DONE;
    while (!s && (rc = fa_stmt_step(q)) == FA_DB_ROW) {
        int id = fa_col_int(q, 0);
        if (id < 0) continue;
        if (!v) { /* the first row has the largest id */
            nv = id + 1;
            v = fa_arena_alloc(arena, sizeof *v * (size_t)nv);
            if (!v) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path); break; }
            memset(v, 0, sizeof *v * (size_t)nv);
        }
        if (id >= nv) continue;
        sig_node *d = &v[id];
        d->op_type = fa_sq_col_str(q, 1, arena);
        d->shapes = fa_sq_col_str(q, 2, arena);
        d->flops = (uint64_t)fa_col_i64(q, 3);
        d->bytes_read = (uint64_t)fa_col_i64(q, 4);
        d->bytes_written = (uint64_t)fa_col_i64(q, 5);
        int ni = fa_col_int(q, 6);
        d->n_inputs = ni > 0 && ni < 4096 ? ni : 0;
        d->in_shapes = d->n_inputs ? fa_arena_alloc(arena, sizeof *d->in_shapes * (size_t)d->n_inputs) : NULL;
        if (d->n_inputs && !d->in_shapes) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path); break; }
        for (int k = 0; k < d->n_inputs; k++) d->in_shapes[k] = NULL;
        d->present = d->op_type != NULL;
    }
    if (!s) s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    if (s) return s;
    /* each input slot's shape: the consumers row of (node, slot) and its tensor ("?" unknown rank) */
    s = fa_sq_prepare_run(ctx, st, "SELECT c.node_id, c.input_index, t.shape FROM consumers c JOIN tensors t "
                                   "ON t.run_id = c.run_id AND t.tensor_id = c.tensor_id WHERE c.run_id=?1",
                          run_id, &q, &b);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, b.rc);
    rc = FA_DB_DONE;
    while (!s && (rc = fa_stmt_step(q)) == FA_DB_ROW) {
        int id = fa_col_int(q, 0), k = fa_col_int(q, 1);
        if (id < 0 || id >= nv || k < 0 || k >= v[id].n_inputs) continue;
        const char *sh = fa_sq_col_str(q, 2, arena);
        v[id].in_shapes[k] = sh ? sh : "?";
    }
    if (!s) s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    if (s) return s;
    *out = v;
    *n = nv;
    return FA_OK;
}

/* The signature of a stored cluster (kind, members_json "[3,4]") over the nodes of its run, in
 * arena; NULL when a member is not a stored node (or out of memory). */
static const char *stored_signature(const char *kind, const char *members, const sig_node *nodes, int n_nodes,
                                    fa_arena *arena)
{
    fa_buf b;
    fa_buf_init(&b);
    fa_kernel_signature_start(&b, kind);
    bool ok = members != NULL;
    for (const char *p = members; ok && *p;) {
        if (*p < '0' || *p > '9') { p++; continue; }
        char *end;
        long id = strtol(p, &end, 10);
        p = end;
        ok = id >= 0 && id < n_nodes && nodes[id].present;
        if (ok) {
            fa_buf ins;
            fa_buf_init(&ins);
            for (int k = 0; k < nodes[id].n_inputs; k++)
                fa_buf_printf(&ins, "%s%s", k ? ";" : "", nodes[id].in_shapes[k] ? nodes[id].in_shapes[k] : "-");
            ok = !ins.oom;
            fa_kernel_signature_member(&b, nodes[id].op_type, ins.data ? ins.data : "", nodes[id].shapes, nodes[id].flops,
                                       nodes[id].bytes_read, nodes[id].bytes_written);
            fa_buf_free(&ins);
        }
    }
    const char *sig = ok && !b.oom && b.data ? fa_arena_strdup(arena, b.data) : NULL;
    fa_buf_free(&b);
    return sig;
}

static int cmp_measured(const void *a, const void *b)
{
    const fa_measured_fused *x = a, *y = b;
    int c = strcmp(x->signature, y->signature);
    if (c) return c;
    if (x->run_id != y->run_id) return x->run_id > y->run_id ? -1 : 1; /* newest first */
    if (x->plan_id != y->plan_id) return x->plan_id > y->plan_id ? -1 : 1;
    return x->cluster_id - y->cluster_id;
}

fa_status fa_store_measured_fused(fa_ctx *ctx, fa_store *st, int64_t run_id, fa_arena *arena, fa_measured_fused **out,
                                  size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    fa_stmt *q;
    binder b;
    fa_status s = fa_sq_prepare_run(ctx, st, "SELECT count(*) FROM runs WHERE id=?1", run_id, &q, &b);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, b.rc);
    int rc = s ? FA_DB_DONE : fa_stmt_step(q);
    bool exists = rc == FA_DB_ROW && fa_col_i64(q, 0) > 0;
    if (!s && rc != FA_DB_ROW) s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    if (s) return s;
    if (!exists) return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: no run %" PRId64, st->path, run_id);
    /* every fused and unfused cluster sample of a plan for run_id's target on run_id's device,
     * one row per sample, grouped by cluster and round */
    s = fa_sq_prepare_run(ctx, st,
                          "SELECT b.run_id, b.plan_id, b.cluster_id, c.kind, c.members_json, b.iter, b.subject, b.latency_ns "
                          "FROM runs cur JOIN runs r ON COALESCE(r.device_name, '') = COALESCE(cur.device_name, '') "
                          "AND r.threads = cur.threads AND (r.status = 'ok' OR r.id = cur.id) "
                          "JOIN plans p ON p.run_id = r.id AND COALESCE(p.target, '') = COALESCE(cur.target, '') "
                          "JOIN clusters c ON c.run_id = p.run_id AND c.plan_id = p.plan_id "
                          "JOIN benchmarks b ON b.run_id = c.run_id AND b.plan_id = c.plan_id AND b.cluster_id = c.cluster_id "
                          "WHERE cur.id = ?1 AND b.subject IN ('cluster-fused', 'cluster-unfused') "
                          "ORDER BY b.run_id, b.plan_id, b.cluster_id, b.iter, b.subject",
                          run_id, &q, &b);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, b.rc);
    fa_measured_fused *v = NULL;
    const char **kinds = NULL, **members = NULL; /* per entry of v until its signature is built */
    size_t n = 0, cap = 0, capk = 0, capm = 0;
    double *smp = NULL; /* pairs: [2i] unfused, [2i + 1] fused of round i */
    int nsmp = 0, capsmp = 0, cur_iter = -1;
    bool open_entry = false;
    double pend_u = NAN, pend_f = NAN;
    rc = FA_DB_DONE;
    for (;;) {
        bool row = !s && (rc = fa_stmt_step(q)) == FA_DB_ROW;
        int64_t rid = row ? fa_col_i64(q, 0) : -1;
        int pid = row ? fa_col_int(q, 1) : -1, cid = row ? fa_col_int(q, 2) : -1, it = row ? fa_col_int(q, 5) : -1;
        bool new_cluster = !row || !open_entry || rid != v[n - 1].run_id || pid != v[n - 1].plan_id || cid != v[n - 1].cluster_id;
        /* a round ends: keep it when both subjects were seen */
        if (open_entry && (new_cluster || it != cur_iter)) {
            if (pend_u == pend_u && pend_f == pend_f) {
                if (nsmp + 1 >= capsmp) {
                    int nc = capsmp ? 2 * capsmp : 128;
                    double *ns = realloc(smp, sizeof *smp * (size_t)nc);
                    if (!ns) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path); break; }
                    smp = ns;
                    capsmp = nc;
                }
                smp[nsmp++] = pend_u;
                smp[nsmp++] = pend_f;
            }
            pend_u = pend_f = NAN;
        }
        /* a cluster ends: its medians and whether its pairs resolve a difference */
        if (open_entry && new_cluster) {
            fa_measured_fused *m = &v[n - 1];
            int np = nsmp / 2;
            m->n_samples = np;
            if (np > 0) {
                double *u = malloc(sizeof *u * (size_t)np * 2);
                if (!u) { s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path); break; }
                double *f = u + np;
                for (int i = 0; i < np; i++) u[i] = smp[2 * i], f[i] = smp[2 * i + 1];
                fa_paired_saving ps;
                fa_paired_saving_of(u, f, np, &ps);
                m->resolved = ps.n > 0 && ps.ci_lo_ns == ps.ci_lo_ns && (ps.ci_lo_ns > 0 || ps.ci_hi_ns < 0);
                m->paired = ps;
                m->paired_ratio = fa_stats_paired_ratio(f, u, (size_t)np); /* before the medians sort u and f */
                m->unfused_median_ns = fa_stats_median(u, (size_t)np);
                m->median_ns = fa_stats_median(f, (size_t)np);
                free(u);
            } else {
                n--; /* no round with both: nothing measured to use */
            }
            nsmp = 0;
            open_entry = false;
        }
        if (!row) break;
        if (!open_entry) {
            if (!fa_sq_grow(arena, (void **)&v, n, &cap, sizeof *v) || !fa_sq_grow(arena, (void **)&kinds, n, &capk, sizeof *kinds) ||
                !fa_sq_grow(arena, (void **)&members, n, &capm, sizeof *members)) {
                s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
                break;
            }
            v[n] = (fa_measured_fused){.run_id = rid, .plan_id = pid, .cluster_id = cid};
            kinds[n] = fa_sq_col_str(q, 3, arena);
            members[n] = fa_sq_col_str(q, 4, arena);
            n++;
            open_entry = true;
        }
        cur_iter = it;
        const char *subj = fa_col_text(q, 6);
        double ns = (double)fa_col_i64(q, 7);
        if (subj && !strcmp(subj, "cluster-unfused")) pend_u = ns;
        else pend_f = ns;
    }
    if (!s && rc != FA_DB_ROW) s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    free(smp);
    if (s) return s;
    /* the signatures, over each run's stored nodes (one query per run, after the one above ends:
     * a backend need not interleave statements); v is ordered by run */
    int64_t nodes_run = -1;
    sig_node *nodes = NULL;
    int n_nodes = 0;
    size_t kept = 0;
    for (size_t i = 0; i < n && !s; i++) {
        if (v[i].run_id != nodes_run) {
            nodes_run = v[i].run_id;
            s = load_nodes(ctx, st, nodes_run, arena, &nodes, &n_nodes);
            if (s) break;
        }
        v[i].signature = stored_signature(kinds[i], members[i], nodes, n_nodes, arena);
        if (v[i].signature) v[kept++] = v[i]; /* a member not stored: nothing to match */
    }
    if (s) return s;
    n = kept;
    if (n) qsort(v, n, sizeof *v, cmp_measured);
    *out = v;
    *n_out = n;
    return FA_OK;
}

const fa_measured_fused *fa_measured_fused_find(const fa_measured_fused *v, size_t n, const char *signature,
                                                bool resolved_only)
{
    size_t lo = 0, hi = n; /* the first entry whose signature is >= signature */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(v[mid].signature, signature) < 0) lo = mid + 1;
        else hi = mid;
    }
    for (; lo < n && !strcmp(v[lo].signature, signature); lo++)
        if (v[lo].resolved || !resolved_only) return &v[lo];
    return NULL;
}
