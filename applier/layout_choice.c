/* applier/layout_choice — the fused plan's layout per model, by measurement (issue 35): the
 * model on the plan's executor in the target's default layout against each other layout its
 * convolutions can run on here, interleaved paired whole-model rounds judged by the rule every
 * cluster passes (applier/judge.c fa_apply_paired_verdict); a rival is kept only when measurably
 * faster, else the default stays. docs/runtime.md "The plan's layout". */
#include "applier-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void fa_layout_judge(fa_layout deflt, const fa_layout_samples *s, int n_rivals, fa_plan_layout *out)
{
    *out = fa_plan_layout_unknown();
    out->source = FA_LAYOUT_SRC_MEASURED;
    out->layout = out->deflt = deflt;
    int best = -1, winner = -1;
    fa_paired_judgement bj = {0}, wj = {0};
    for (int k = 0; k < n_rivals; k++) {
        fa_paired_judgement j;
        int v = fa_apply_paired_verdict(s[k].sa, s[k].sb, s[k].n, &j);
        if (v == 1 && (winner < 0 || j.gain_ns > wj.gain_ns)) winner = k, wj = j;
        if (best < 0 || j.gain_ns > bj.gain_ns) best = k, bj = j;
    }
    int k = winner >= 0 ? winner : best;
    if (k < 0) return; /* no rival measured: the default, no figures */
    fa_paired_judgement *j = winner >= 0 ? &wj : &bj;
    if (winner >= 0) out->layout = s[k].rival;
    out->rival = s[k].rival;
    out->rounds = j->n;
    out->verdict = j->verdict;
    /* whole ns, as the run database keeps them (plans.layout_*_ns), so every surface shows the
     * stored value */
    out->default_median_ns = round(j->unfused.median_ns);
    out->rival_median_ns = round(j->fused.median_ns);
    out->gain_ns = round(j->gain_ns);
    out->gain_lo_ns = round(j->ci_lo_ns);
    out->gain_hi_ns = round(j->ci_hi_ns);
}

/* Whether g has a node that starts a blocked region (a convolution): without one no layout
 * choice changes what runs. */
static bool has_region(const fa_graph *g)
{
    for (int k = 0; k < g->n_topo; k++)
        if (fa_layout_starts_region(g->nodes[g->topo[k]])) return true;
    return false;
}

static fa_status plan_exec(fa_ctx *ctx, const fa_graph *g, fa_target t, int threads, fa_layout l, fa_exec **e)
{
    fa_exec_options eo = fa_exec_options_measured(t, threads); /* each layout with its own convolutions' tactics */
    eo.blocked_layouts = l != FA_LAYOUT_PLAIN;
    eo.plan_layout = l;
    fa_status s = fa_exec_create(ctx, g, &eo, e);
    if (!s) s = fa_exec_fill_inputs(ctx, *e, 1);
    return s;
}

fa_status fa_layout_choose(fa_ctx *ctx, const fa_graph *g, fa_target target, int threads, int request,
                           fa_plan_layout *out)
{
    *out = fa_plan_layout_unknown();
    const fa_target_iface *ti = NULL;
    fa_status ts = fa_target_resolve(ctx, target, &ti); /* AUTO: the target the apply stage will take */
    if (ts) return ts;
    target = fa_target_id(ti);
    fa_plan_layouts pl;
    fa_target_plan_layouts(target, &pl);
    out->layout = out->deflt = pl.deflt;
    if (request >= 0) { /* --layout names it */
        if (request >= FA_LAYOUT_COUNT) return fa_ctx_error(ctx, FA_ERR_USAGE, "--layout: layout %d out of range", request);
        bool ok = request == FA_LAYOUT_PLAIN;
        for (int i = 0; i < pl.n; i++) ok |= pl.cand[i] == (fa_layout)request;
        if (!ok)
            return fa_ctx_error(ctx, FA_ERR_USAGE, "--layout %s: %s cannot run convolutions on it here (it can: plain%s%s%s%s%s%s)",
                                fa_layout_name((fa_layout)request), fa_target_name(target), pl.n > 0 ? ", " : "",
                                pl.n > 0 ? fa_layout_name(pl.cand[0]) : "", pl.n > 1 ? ", " : "",
                                pl.n > 1 ? fa_layout_name(pl.cand[1]) : "", pl.n > 2 ? ", " : "",
                                pl.n > 2 ? fa_layout_name(pl.cand[2]) : "");
        out->source = FA_LAYOUT_SRC_OPTION;
        out->layout = (fa_layout)request;
        return FA_OK;
    }
    if (pl.from_env) {
        out->source = FA_LAYOUT_SRC_ENV;
        return FA_OK;
    }
    out->source = FA_LAYOUT_SRC_DEFAULT;
    if (pl.n < 2 || pl.deflt == FA_LAYOUT_PLAIN || !has_region(g)) return FA_OK;

    int cap = FA_LAYOUT_ROUNDS_MAX;
    fa_layout_samples rs[FA_LAYOUT_COUNT];
    double *buf = calloc((size_t)(2 * cap * pl.n), sizeof *buf);
    if (!buf) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory choosing the plan's layout");
    fa_exec *eb = NULL;
    fa_status s = plan_exec(ctx, g, target, threads, pl.deflt, &eb);
    int nr = 0;
    for (int k = 1; k < pl.n && !s; k++) { /* one rival's executor at a time, freed after its rounds */
        fa_layout_samples *r = &rs[nr];
        double *sa = buf + (size_t)(2 * cap * nr), *sb = sa + cap;
        r->rival = pl.cand[k];
        r->sa = sa;
        r->sb = sb;
        r->n = 0;
        fa_exec *er = NULL;
        fa_ctx *rctx = fa_ctx_create(); /* a rival that cannot run is left out, not the run's error */
        if (!rctx) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory choosing the plan's layout");
        fa_status es = s ? s : plan_exec(rctx, g, target, threads, pl.cand[k], &er);
        if (es == FA_ERR_NOMEM && !s) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "%s", fa_ctx_errmsg(rctx));
        else if (es && !s) {
            fa_log(ctx, FA_LOG_INFO, "layout choice: %s left out: %s", fa_layout_name(pl.cand[k]), fa_ctx_errmsg(rctx));
            fa_exec_free(er);
            fa_ctx_free(rctx);
            continue;
        }
        fa_ctx_free(rctx);
        while (!s && r->n < cap) {
            int block = r->n == 0 ? FA_LAYOUT_ROUNDS : FA_LAYOUT_ROUNDS_STEP;
            if (block > cap - r->n) block = cap - r->n;
            s = fa_apply_bench_pair(ctx, fa_apply_exec_once, eb, er, 1, r->n, block, 0, fa_exec_threads(eb), sa + r->n,
                                    sb + r->n);
            if (!s) r->n += block;
            if (!s && fa_apply_rounds_settled(sa, sb, r->n)) break;
        }
        fa_exec_free(er);
        if (!s) nr++;
    }
    fa_exec_free(eb);
    /* the weights' copies in the layouts measured belong to no executor now: freed, so that the
     * layouts the plan does not keep hold no memory through the rest of the run (the probe and
     * the apply stage make the ones they read again, once) */
    size_t trimmed = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t] && (g->tensors[t]->flags & FA_TENSOR_CONST)) trimmed += fa_blob_trim_derived(g->tensors[t]->blob);
    if (trimmed) fa_log(ctx, FA_LOG_INFO, "layout choice: %.1f MiB of reordered weights freed", trimmed / 1048576.0);
    if (s) fa_ctx_wrap(ctx, s, "choosing the plan's layout: ");
    else fa_layout_judge(pl.deflt, rs, nr, out);
    free(buf);
    return s;
}

fa_layout fa_apply_plan_layout(const fa_plan *p, fa_target target)
{
    if (p && p->layout.source != FA_LAYOUT_SRC_UNKNOWN && (unsigned)p->layout.layout < FA_LAYOUT_COUNT) return p->layout.layout;
    fa_plan_layouts pl;
    fa_target_plan_layouts(target, &pl);
    return pl.deflt;
}
