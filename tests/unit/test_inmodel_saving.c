/* tests/unit/test_inmodel_saving — each accepted cluster's saving as the whole model sees it
 * (applier/inmodel.c fa_apply_inmodel_savings, issue 36), on zoo:convnet-tiny's plan with
 * hand-made traces of known kernel times: the baseline's nodes a fused node replaces (an
 * epilogue's with the BN of its absorbed fold) against that fused node and the reorder of the
 * tensor it writes, kernel time plus the idle before each kernel, medians over the iterations and
 * the IQRs in quadrature, equal to the figures worked out here from the traces' formulas; paired
 * round by round with the baseline's side of the end-to-end rounds when given; NAN for a rejected
 * cluster and for an accepted fold an accepted epilogue took over. The per-op table's idle times
 * of an iteration sum to its gaps (the analyzer's measure). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "applier/applier-impl.h"
#include "runtime/layout.h"

#define ITERS 5
#define REORDER_GAP 50.0

/* Kernel time of the node at topological place k in iteration it: a different figure per node,
 * growing with the iteration (so each side's median is iteration 2's, its IQR iteration 3's less
 * iteration 1's). fused: the fused model's trace. */
static double dur(int k, int it, bool fused) { return fused ? 500 + 23 * k + 7 * it : 1000 + 37 * k + 10 * it; }
/* The idle time before the kernel at place k (0 for the iteration's first). */
static double gap(int k) { return k ? 100 + 5 * k : 0; }
static double reorder_dur(int it) { return 300 + 3 * it; }
/* The machine's state in iteration it, a factor on every kernel's time of the traces made while
 * it is set (NULL: 1): a shared machine's slow and fast moments, which both sides of one
 * end-to-end round share. */
static const double *g_state;
static double state(int it) { return g_state ? g_state[it] : 1.0; }

static int topo_place(const fa_graph *g, const char *name)
{
    for (int k = 0; k < g->n_topo; k++)
        if (!strcmp(g->nodes[g->topo[k]]->name, name)) return k;
    fail_msg("no node '%s'", name);
    return -1;
}

/* One kernel record per live node of g per iteration (but `skip`), back to back with gap(k) between
 * them; in the fused trace a reorder of tensor `reorder_of` right after its producer (REORDER_GAP
 * before it). */
static fa_trace *make_trace(const fa_graph *g, bool fused, const char *reorder_of, const char *skip)
{
    fa_trace *t = fa_trace_create("cpu-executor");
    assert_non_null(t);
    t->n_iters = ITERS;
    for (int it = 0; it < ITERS; it++) {
        double at = 1e9 + it * 1e6;
        for (int k = 0; k < g->n_topo; k++) {
            const fa_node *n = g->nodes[g->topo[k]];
            if (skip && !strcmp(n->name, skip)) continue; /* a node that left no record */
            fa_activity a = fa_activity_init(FA_ACT_KERNEL);
            a.node = n->id;
            a.iter = it;
            a.name = a.node_name = fa_trace_intern(t, n->name);
            a.op_type = fa_trace_intern(t, n->op_type);
            at += gap(k);
            a.start_ns = (uint64_t)at;
            at += dur(k, it, fused) * state(it);
            a.end_ns = (uint64_t)at;
            assert_non_null(fa_trace_add(t, &a));
            bool writes = false;
            for (int o = 0; reorder_of && o < n->n_outputs; o++)
                writes |= n->outputs[o] >= 0 && !strcmp(g->tensors[n->outputs[o]]->name, reorder_of);
            if (writes) {
                char nm[256];
                snprintf(nm, sizeof nm, FA_REORDER_NAME_FMT, reorder_of);
                fa_activity r = fa_activity_init(FA_ACT_KERNEL);
                r.node = -1;
                r.iter = it;
                r.name = r.node_name = fa_trace_intern(t, nm);
                r.op_type = fa_trace_intern(t, FA_REORDER_OP);
                at += REORDER_GAP;
                r.start_ns = (uint64_t)at;
                at += reorder_dur(it) * state(it);
                r.end_ns = (uint64_t)at;
                assert_non_null(fa_trace_add(t, &r));
            }
        }
    }
    return t;
}

/* Iteration it's time of the named nodes of g (kernel + the idle before it), plus the reorder when
 * with_reorder: what the in-model saving sums, worked out from the formulas above. */
static double side_time(const fa_graph *g, const char *const *names, int n, bool fused, bool with_reorder, int it)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        int k = topo_place(g, names[i]);
        s += dur(k, it, fused) * state(it) + gap(k);
    }
    if (with_reorder) s += REORDER_GAP + reorder_dur(it) * state(it);
    return s;
}

static int cluster_of(const fa_plan *p, fa_cluster_kind kind, const fa_graph *g, const char *anchor)
{
    for (int i = 0; i < p->n_clusters; i++)
        if (p->clusters[i].kind == kind && p->clusters[i].anchor >= 0 && !strcmp(g->nodes[p->clusters[i].anchor]->name, anchor))
            return i;
    fail_msg("no %s cluster on '%s'", fa_cluster_kind_name(kind), anchor);
    return -1;
}

/* Everything a case made, released. */
static void release(fa_ctx *ctx, fa_store *st, fa_trace *tb, fa_trace *tf, fa_fused_map *map, fa_graph *gf, fa_plan *p,
                    fa_graph *g)
{
    fa_store_close(st);
    fa_trace_free(tb);
    fa_trace_free(tf);
    fa_fused_map_free(map);
    fa_graph_free(gf);
    fa_plan_free(p);
    fa_graph_free(g);
    fa_ctx_free(ctx);
}

/* zoo:convnet-tiny and the advisor's plan for it (the defaults). */
static void convnet_tiny_plan(fa_ctx *ctx, fa_graph **g, fa_plan **p)
{
    fa_test_check_ok(ctx, fa_graph_load(ctx, "zoo:convnet-tiny", NULL, g));
    fa_advise_options o = fa_advise_options_default();
    fa_test_check_ok(ctx, fa_advise(ctx, *g, NULL, &o, p));
}

static void test_inmodel_saving_per_cluster(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    fa_plan *p = NULL;
    convnet_tiny_plan(ctx, &g, &p);
    /* the plan: conv2's epilogue (with its BN fold) accepted, conv1's fold accepted and its
     * epilogue rejected (measured no faster), so the fold has a node of its own */
    int epi2 = cluster_of(p, FA_CLUSTER_EPILOGUE, g, "conv2"), fold2 = cluster_of(p, FA_CLUSTER_BN_FOLD, g, "conv2");
    int epi1 = cluster_of(p, FA_CLUSTER_EPILOGUE, g, "conv1"), fold1 = cluster_of(p, FA_CLUSTER_BN_FOLD, g, "conv1");
    fa_cluster_verdict v[16];
    assert_true(p->n_clusters <= 16);
    for (int i = 0; i < p->n_clusters; i++) {
        v[i] = fa_cluster_verdict_of(&p->clusters[i]);
        v[i].status = FA_CLUSTER_REJECTED_NO_GAIN;
        v[i].inmodel_saving_ns = v[i].inmodel_spread_ns = 12345; /* overwritten: NAN where not measured */
    }
    v[epi2].status = v[fold2].status = v[fold1].status = FA_CLUSTER_ACCEPTED;
    int ids[16], n_ids = 0;
    for (int i = 0; i < p->n_clusters; i++)
        if (v[i].status == FA_CLUSTER_ACCEPTED) ids[n_ids++] = p->clusters[i].id;
    fa_graph *gf = NULL;
    fa_fused_map map = {0};
    fa_test_check_ok(ctx, fa_fused_graph_mapped(ctx, g, p, ids, n_ids, false, true, -1, 0, NULL, 0, &gf, &map));

    /* the traces, stored as the run and its fused twin; the fold's folded conv writes bn1_out,
     * which the fused model reorders */
    fa_trace *tb = make_trace(g, false, NULL, NULL), *tf = make_trace(gf, true, "bn1_out", NULL);
    const char *path = fa_test_store_fresh("inmodel");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    int64_t bid, fid;
    fa_test_check_ok(ctx, fa_test_store_graph_trace(ctx, st, g, tb, &bid));
    fa_test_check_ok(ctx, fa_test_store_graph_trace(ctx, st, gf, tf, &fid));

    /* the per-op table: an iteration's idle times over every op are its gaps */
    fa_arena *ar = fa_arena_create(0);
    fa_op_row *rows = NULL;
    size_t nr = 0;
    int iters = 0;
    fa_test_check_ok(ctx, fa_store_op_table(ctx, st, fid, ar, &rows, &nr, &iters));
    assert_int_equal(iters, ITERS);
    for (int it = 0; it < ITERS; it++) {
        double idle = 0, want = REORDER_GAP;
        for (size_t r = 0; r < nr; r++) idle += (double)rows[r].idle_ns[it];
        for (int k = 0; k < gf->n_topo; k++) want += gap(k);
        assert_true(fabs(idle - want) < 0.5);
    }
    fa_arena_free(ar);

    fa_test_check_ok(ctx, fa_apply_inmodel_savings(ctx, st, bid, fid, p, gf, &map, NULL, v));
    /* conv2's epilogue replaced conv2, bn2 (its fold's), relu2 and add by its Fused conv */
    const char *base2[] = {"conv2", "bn2", "relu2", "add"}, *fz2[] = {"conv2__fused"};
    double b_med = side_time(g, base2, 4, false, false, 2), f_med = side_time(gf, fz2, 1, true, false, 2);
    double b_iqr = side_time(g, base2, 4, false, false, 3) - side_time(g, base2, 4, false, false, 1);
    double f_iqr = side_time(gf, fz2, 1, true, false, 3) - side_time(gf, fz2, 1, true, false, 1);
    assert_true(fabs(v[epi2].inmodel_saving_ns - (b_med - f_med)) < 0.5);
    assert_true(fabs(v[epi2].inmodel_spread_ns - sqrt(b_iqr * b_iqr + f_iqr * f_iqr)) < 1e-6);
    /* conv1's fold: conv1 and bn1 by the folded conv and the reorder of what it writes */
    const char *base1[] = {"conv1", "bn1"}, *fz1[] = {"conv1__bnfold"};
    b_med = side_time(g, base1, 2, false, false, 2), f_med = side_time(gf, fz1, 1, true, true, 2);
    b_iqr = side_time(g, base1, 2, false, false, 3) - side_time(g, base1, 2, false, false, 1);
    f_iqr = side_time(gf, fz1, 1, true, true, 3) - side_time(gf, fz1, 1, true, true, 1);
    assert_true(fabs(v[fold1].inmodel_saving_ns - (b_med - f_med)) < 0.5);
    assert_true(fabs(v[fold1].inmodel_spread_ns - sqrt(b_iqr * b_iqr + f_iqr * f_iqr)) < 1e-6);
    /* not measured: the fold conv2's epilogue absorbed (no node of its own), the rejected epilogue */
    assert_true(isnan(v[fold2].inmodel_saving_ns) && isnan(v[fold2].inmodel_spread_ns));
    assert_true(isnan(v[epi1].inmodel_saving_ns) && isnan(v[epi1].inmodel_spread_ns));

    /* stored once: the verdict columns read back as computed */
    p->run_id = bid;
    int plan_id = 0;
    fa_test_check_ok(ctx, fa_store_put_plan(ctx, st, p, v, &plan_id));
    fa_plan *rp = NULL;
    fa_cluster_verdict *rv = NULL;
    fa_test_check_ok(ctx, fa_store_get_latest_plan(ctx, st, bid, &rp, &rv));
    for (int i = 0; i < rp->n_clusters; i++) {
        int j = rp->clusters[i].id;
        if (isnan(v[j].inmodel_saving_ns)) assert_true(isnan(rv[i].inmodel_saving_ns));
        else assert_true(fabs(rv[i].inmodel_saving_ns - v[j].inmodel_saving_ns) < 1e-3);
    }
    fa_plan_free(rp);

    release(ctx, st, tb, tf, &map, gf, p, g);
}

/* The baseline's side of the end-to-end rounds given (fa_apply_result.baseline_rounds_trace):
 * the saving is the median over rounds of each round's difference and the spread their IQR, from
 * that trace and not from the baseline run's own; the two sides share each round's state of the
 * machine (a factor 1-2.2 on every kernel, round by round), which the paired figure cancels and
 * the unpaired one (the medians of two sides whose slow rounds differ) does not. A rounds trace
 * with other iterations than the fused run's pairs nothing: the unpaired figure, as without one. */
static void test_inmodel_saving_paired_by_round(void **state_)
{
    (void)state_;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    fa_plan *p = NULL;
    convnet_tiny_plan(ctx, &g, &p);
    int epi2 = cluster_of(p, FA_CLUSTER_EPILOGUE, g, "conv2"), fold2 = cluster_of(p, FA_CLUSTER_BN_FOLD, g, "conv2");
    fa_cluster_verdict v[16];
    assert_true(p->n_clusters <= 16);
    for (int i = 0; i < p->n_clusters; i++) {
        v[i] = fa_cluster_verdict_of(&p->clusters[i]);
        v[i].status = FA_CLUSTER_REJECTED_NO_GAIN;
    }
    v[epi2].status = v[fold2].status = FA_CLUSTER_ACCEPTED;
    int ids[2] = {p->clusters[fold2].id, p->clusters[epi2].id};
    fa_graph *gf = NULL;
    fa_fused_map map = {0};
    fa_test_check_ok(ctx, fa_fused_graph_mapped(ctx, g, p, ids, 2, false, true, -1, 0, NULL, 0, &gf, &map));
    /* the baseline run's own trace on a quiet machine; the rounds slow in 2 of 5 */
    fa_trace *tb = make_trace(g, false, NULL, NULL);
    static const double rounds[ITERS] = {1.0, 2.2, 1.0, 1.9, 1.05};
    g_state = rounds;
    fa_trace *tr = make_trace(g, false, NULL, NULL), *tf = make_trace(gf, true, NULL, NULL);
    const char *path = fa_test_store_fresh("inmodel-paired");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    int64_t bid, fid;
    fa_test_check_ok(ctx, fa_test_store_graph_trace(ctx, st, g, tb, &bid));
    fa_test_check_ok(ctx, fa_test_store_graph_trace(ctx, st, gf, tf, &fid));

    fa_test_check_ok(ctx, fa_apply_inmodel_savings(ctx, st, bid, fid, p, gf, &map, tr, v));
    const char *base2[] = {"conv2", "bn2", "relu2", "add"}, *fz2[] = {"conv2__fused"};
    double d[ITERS];
    for (int it = 0; it < ITERS; it++) d[it] = side_time(g, base2, 4, false, false, it) - side_time(gf, fz2, 1, true, false, it);
    qsort(d, ITERS, sizeof *d, fa_stats_cmp_double);
    double want = fa_stats_quantile_sorted(d, ITERS, 0.5),
           want_iqr = fa_stats_quantile_sorted(d, ITERS, 0.75) - fa_stats_quantile_sorted(d, ITERS, 0.25);
    /* the records' stamps are whole ns: a side of four kernels is within 4 ns of the formula */
    assert_true(fabs(v[epi2].inmodel_saving_ns - want) < 5);
    assert_true(fabs(v[epi2].inmodel_spread_ns - want_iqr) < 5);
    double paired = v[epi2].inmodel_saving_ns;

    /* unpaired, against the baseline run's quiet trace: another figure (the fused side's slow
     * rounds against a quiet baseline), which the rounds trace with one round less also gives */
    fa_test_check_ok(ctx, fa_apply_inmodel_savings(ctx, st, bid, fid, p, gf, &map, NULL, v));
    double unpaired = v[epi2].inmodel_saving_ns;
    assert_true(fabs(unpaired - paired) > 100);
    tr->n_iters = ITERS - 1;
    size_t kept = 0;
    for (size_t i = 0; i < tr->n_acts; i++)
        if (tr->acts[i].iter != ITERS - 1) tr->acts[kept++] = tr->acts[i];
    tr->n_acts = kept;
    fa_test_check_ok(ctx, fa_apply_inmodel_savings(ctx, st, bid, fid, p, gf, &map, tr, v));
    assert_true(fabs(v[epi2].inmodel_saving_ns - unpaired) < 1e-6);
    g_state = NULL;
    fa_trace_free(tr);
    release(ctx, st, tb, tf, &map, gf, p, g);
}

/* No fused trace, or a cluster whose fused node left no record: NAN, never a figure made up. */
static void test_inmodel_saving_not_measured_without_records(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    fa_plan *p = NULL;
    convnet_tiny_plan(ctx, &g, &p);
    int fold1 = cluster_of(p, FA_CLUSTER_BN_FOLD, g, "conv1");
    fa_cluster_verdict v[16];
    for (int i = 0; i < p->n_clusters; i++) v[i] = fa_cluster_verdict_of(&p->clusters[i]);
    v[fold1].status = FA_CLUSTER_ACCEPTED;
    int ids[1] = {p->clusters[fold1].id};
    fa_graph *gf = NULL;
    fa_fused_map map = {0};
    fa_test_check_ok(ctx, fa_fused_graph_mapped(ctx, g, p, ids, 1, false, true, -1, 0, NULL, 0, &gf, &map));
    fa_trace *tb = make_trace(g, false, NULL, NULL), *tf = make_trace(gf, true, NULL, "conv1__bnfold");
    const char *path = fa_test_store_fresh("inmodel-none");
    fa_store *st = fa_test_store_open_ok(ctx, path);
    int64_t bid, fid;
    fa_test_check_ok(ctx, fa_test_store_graph_trace(ctx, st, g, tb, &bid));
    fa_test_check_ok(ctx, fa_test_store_graph_trace(ctx, st, gf, tf, &fid));
    fa_test_check_ok(ctx, fa_apply_inmodel_savings(ctx, st, bid, fid, p, gf, &map, NULL, v));
    assert_true(isnan(v[fold1].inmodel_saving_ns) && isnan(v[fold1].inmodel_spread_ns));
    /* no map (no fused model): every cluster NAN */
    fa_test_check_ok(ctx, fa_apply_inmodel_savings(ctx, st, bid, fid, p, NULL, NULL, NULL, v));
    for (int i = 0; i < p->n_clusters; i++) assert_true(isnan(v[i].inmodel_saving_ns));
    release(ctx, st, tb, tf, &map, gf, p, g);
}

/* Every node of the applier's domain carries the flops of the ops it replaces, by their own
 * formulas, and fa_node_cost reads them (graph/registry.c fused_cost): the cpu executor takes a
 * node under 1 MFLOP and 256 KiB moved for a small kernel and runs it on one thread, and with 0
 * flops a fused convolution of any size was one. conv2's epilogue counts its convolution and the
 * ops it absorbed; with the attribute gone, the anchor's formula over the node counts the
 * convolution. */
static void test_fused_nodes_carry_their_flops(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    fa_plan *p = NULL;
    convnet_tiny_plan(ctx, &g, &p);
    int epi2 = cluster_of(p, FA_CLUSTER_EPILOGUE, g, "conv2"), fold2 = cluster_of(p, FA_CLUSTER_BN_FOLD, g, "conv2");
    int ids[2] = {p->clusters[fold2].id, p->clusters[epi2].id};
    fa_graph *gf = NULL;
    fa_fused_map map = {0};
    fa_test_check_ok(ctx, fa_fused_graph_mapped(ctx, g, p, ids, 2, false, true, -1, 0, NULL, 0, &gf, &map));
    const fa_cluster *c = &p->clusters[epi2];
    uint64_t members = 0;
    for (int m = 0; m < c->n_members; m++) {
        fa_op_cost mc;
        fa_node_cost(g, g->nodes[c->members[m]], &mc);
        members += mc.flops;
    }
    fa_op_cost conv;
    fa_node_cost(g, g->nodes[c->anchor], &conv);
    assert_true(conv.flops > 1000 && members > conv.flops); /* the product, and the ops after it */
    int found = 0;
    for (int i = 0; i < gf->n_nodes; i++) {
        fa_node *n = gf->nodes[i];
        if (!n || strcmp(n->domain, FA_FUSED_DOMAIN)) continue;
        found++;
        assert_string_equal(n->op_type, "FusedConv");
        assert_int_equal(fa_node_attr_int(n, FA_FUSED_FLOPS_ATTR, -1), (int64_t)members);
        fa_op_cost fc;
        fa_node_cost(gf, n, &fc);
        assert_int_equal(fc.flops, members);
        assert_true(fc.bytes_read > 0 && fc.bytes_written > 0);
        for (int a = 0; a < n->n_attrs; a++) /* the attribute gone: the anchor's formula */
            if (!strcmp(n->attrs[a].name, FA_FUSED_FLOPS_ATTR)) n->attrs[a].name = "not_flops";
        assert_int_equal(fa_node_attr_int(n, FA_FUSED_FLOPS_ATTR, -1), -1);
        fa_node_cost(gf, n, &fc);
        /* the product, and the bias the BN fold gave it (one add per output) */
        bool bias = fa_graph_in(gf, n, 2) && !fa_graph_in(g, g->nodes[c->anchor], 2);
        assert_int_equal(fc.flops, conv.flops + (bias ? (uint64_t)fa_tensor_numel(fa_graph_out(gf, n, 0)) : 0));
    }
    assert_int_equal(found, 1);
    release(ctx, NULL, NULL, NULL, &map, gf, p, g);
}

int main(void)
{
    fa_test_store_backend_init("test_inmodel_saving");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inmodel_saving_per_cluster),
        cmocka_unit_test(test_inmodel_saving_paired_by_round),
        cmocka_unit_test(test_inmodel_saving_not_measured_without_records),
        cmocka_unit_test(test_fused_nodes_carry_their_flops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
