/* store/kernel_lookup — the measured time of a fused kernel of the same kind and shape class
 * (issue 19's second basis): the clusters earlier plans on the same device benchmarked fused,
 * keyed by the signature the advisor composed and stored with each cluster (clusters.signature,
 * schema v8). Reads only; no schema of its own (benchmarks, clusters, plans, runs). */
#include "store-impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
                          "SELECT b.run_id, b.plan_id, b.cluster_id, c.signature, b.iter, b.subject, b.latency_ns, c.kind, "
                          "c.est_saving_us "
                          "FROM runs cur JOIN runs r ON COALESCE(r.device_name, '') = COALESCE(cur.device_name, '') "
                          "AND r.threads = cur.threads AND (r.status = 'ok' OR r.id = cur.id) "
                          "JOIN plans p ON p.run_id = r.id AND COALESCE(p.target, '') = COALESCE(cur.target, '') "
                          "JOIN clusters c ON c.run_id = p.run_id AND c.plan_id = p.plan_id "
                          "JOIN benchmarks b ON b.run_id = c.run_id AND b.plan_id = c.plan_id AND b.cluster_id = c.cluster_id "
                          "WHERE cur.id = ?1 AND c.signature IS NOT NULL AND b.subject IN ('cluster-fused', 'cluster-unfused') "
                          "ORDER BY b.run_id, b.plan_id, b.cluster_id, b.iter, b.subject",
                          run_id, &q, &b);
    if (s) return s;
    s = FA_SQL_CHECK(ctx, st, b.rc);
    fa_measured_fused *v = NULL;
    size_t n = 0, cap = 0;
    double *smp = NULL; /* pairs: [2i] unfused, [2i + 1] fused of round i */
    int nsmp = 0, capsmp = 0, cur_iter = -1;
    bool open_entry = false;
    double pend_u = NAN, pend_f = NAN;
    rc = FA_DB_DONE;
    for (;;) {
        bool row = !s && (rc = fa_stmt_step(q)) == FA_DB_ROW;
        int64_t rid = row ? fa_col_i64(q, 0) : -1;
        int pid = row ? fa_col_int(q, 1) : -1, cid = row ? fa_col_int(q, 2) : -1, it = row ? fa_col_int(q, 4) : -1;
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
            if (!fa_sq_grow(arena, (void **)&v, n, &cap, sizeof *v)) {
                s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
                break;
            }
            v[n] = (fa_measured_fused){.run_id = rid, .plan_id = pid, .cluster_id = cid};
            v[n].kind = fa_cluster_kind_parse(fa_col_text(q, 7));
            v[n].est_saving_ns = fa_col_null(q, 8) ? NAN : fa_col_dbl(q, 8) * 1e3;
            v[n].signature = fa_sq_col_str(q, 3, arena);
            if (!v[n].signature) {
                s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", st->path);
                break;
            }
            n++;
            open_entry = true;
        }
        cur_iter = it;
        const char *subj = fa_col_text(q, 5);
        int64_t lat = fa_col_i64(q, 6);
        if (lat <= 0 || lat > FA_STORE_LATENCY_MAX_NS) { /* never a sample: a doctored or corrupt row */
            s = fa_ctx_error(ctx, FA_ERR_INPUT,
                             "%s: table benchmarks, run %lld, plan %d, cluster %d, iter %d: column latency_ns is %lld, "
                             "not a duration in (0, %lld] ns",
                             st->path, (long long)rid, pid, cid, it, (long long)lat, (long long)FA_STORE_LATENCY_MAX_NS);
            break;
        }
        double ns = (double)lat;
        if (subj && !strcmp(subj, "cluster-unfused")) pend_u = ns;
        else pend_f = ns;
    }
    if (!s && rc != FA_DB_ROW) s = STEP_CHECK(ctx, st, q, rc);
    fa_stmt_finalize(q);
    free(smp);
    if (s) return s;
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
