/* cli/cmd_gate — `fuse-advise gate`: compare a candidate run with a baseline run and fail the
 * build (exit 3) on a fusion or latency regression. Decision rules: gate/gate.h, docs/ci.md. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gate/gate.h"
#include "store/store.h"

static const char *k_about =
    "  Without run ids or tags: candidate = the newest run; baseline = the newest earlier run of its\n"
    "  model.\n";
static const char *k_epilogue =
    "Output: a table on stdout (or --json); --junit and --markdown files are written atomically.\n"
    "Exit: 0 pass (or inconclusive without --strict), 3 regression, 1 bad input/database, 2 usage.\n"
    "Details: docs/ci.md\n";

#define MAX_RUNS 64

typedef struct run_ids {
    int64_t id[MAX_RUNS];
    int n;
} run_ids;

/* --baseline/--candidate "12" or "12,11,9" -> ids */
static int opt_runs(fa_ctx *ctx, const char *verb, const fa_cli_opt *o, const char *v, fa_buf *why)
{
    (void)ctx, (void)verb;
    run_ids *r = o->dest;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", v);
    char *save = NULL;
    r->n = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (r->n == MAX_RUNS) {
            fa_buf_printf(why, "%s takes at most %d runs", o->name, MAX_RUNS);
            return -1;
        }
        char *end;
        errno = 0;
        long long x = strtoll(t, &end, 10);
        if (!*t || *end || errno || x < 1 || x > INT32_MAX) {
            fa_buf_printf_term(why, "%s expects run ids in [1, %d], got '%s'", o->name, INT32_MAX, t);
            return -1;
        }
        r->id[r->n++] = x;
    }
    if (!r->n) {
        fa_buf_printf(why, "%s needs a run id", o->name);
        return -1;
    }
    return 0;
}

static int write_out(fa_ctx *ctx, const char *path, const fa_buf *b)
{
    if (b->oom) {
        fa_cli_eprintf("fuse-advise: error: out of memory rendering %s\n", path);
        return 1;
    }
    fa_status s = fa_write_user_file(ctx, path, b->data ? b->data : "", b->len); /* named by --junit/--markdown */
    if (s) return fa_cli_fail(ctx, s);
    return 0;
}

int fa_cmd_gate(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = NULL, *bdb = NULL, *cdb = NULL, *tag = NULL, *ctag = NULL, *junit = NULL, *mdpath = NULL;
    run_ids base = {.n = 0}, cand = {.n = 0};
    int runs = 1, seed;
    bool json = false;
    fa_gate_options opt;
    fa_gate_options_default(&opt);
    seed = (int)opt.seed;
    const fa_cli_opt opts[] = {
        FA_CLI_GROUP("selecting the runs"),
        FA_CLI_CALLBACK("--baseline", "RUN[,RUN...]", opt_runs, &base, 0, 0, 0,
                        "baseline run ids (in --db, or in --baseline-db); several pool runs of one side (first = "
                        "primary)"),
        FA_CLI_CALLBACK("--candidate", "RUN[,RUN...]", opt_runs, &cand, 0, 0, 0, "candidate run ids, as --baseline"),
        FA_CLI_OPT_DB(&db),
        FA_CLI_STRING("--baseline-db", "A.db", &bdb,
                      "the baseline's database; without ids, the newest finished run of each database (the candidate "
                      "must be of the baseline's model)"),
        FA_CLI_STRING("--candidate-db", "B.db", &cdb, "the candidate's database"),
        FA_CLI_STRING2("--baseline-tag", "--tag", "TAG", &tag,
                       "baseline = the newest run tagged TAG; candidate = the newest run of the same model with "
                       "another tag (or none), or tagged --candidate-tag (`--baseline-db postgresql://... "
                       "--baseline-tag main --candidate-db this.db`: the team's main from a shared server)"),
        FA_CLI_STRING("--candidate-tag", "TAG2", &ctag, "the candidate = the newest run tagged TAG2"),
        FA_CLI_INT("--runs", "N", &runs, 1, MAX_RUNS, 0,
                   "pool the newest N matching runs of each side: latency intervals then include run-to-run "
                   "variation (two-stage bootstrap)"),
        FA_CLI_GROUP("deciding"),
        FA_CLI_PERCENT("--max-regression", "X", &opt.max_regression, 0, 10, 0,
                       "threshold, percent (\"3%\", \"3\" and \"0.5%\" mean percent)"),
        FA_CLI_PERCENT("--confidence", "X", &opt.confidence, 0.5, 1, FA_CLI_MAX_OPEN,
                       "two-sided level of the bootstrap interval"),
        FA_CLI_INT("--resamples", "N", &opt.resamples, 100, 200000, 0, "bootstrap resamples per check"),
        FA_CLI_INT("--seed", "S", &seed, 0, INT32_MAX, 0, "the bootstrap's seed (fixed: the gate is reproducible)"),
        FA_CLI_PERCENT("--min-share", "X", &opt.min_share, 0, 1, 0,
                       "a per-cluster/per-op slowdown fails only when it costs at least X of the iteration (at the "
                       "interval's lower bound); smaller ones warn"),
        FA_CLI_FLAG("--strict", &opt.strict, "an inconclusive gate fails (exit 3) instead of passing (exit 0)"),
        FA_CLI_GROUP("output"),
        FA_CLI_OPT_JSON(&json),
        FA_CLI_STRING("--junit", "FILE", &junit, "JUnit XML of the checks"),
        FA_CLI_STRING("--markdown", "FILE", &mdpath, "Markdown for a PR comment"),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = "gate", .synopsis = "[options]", .about = k_about, .epilogue = k_epilogue,
                              .opts = opts};
    fa_cli_args args;
    int prc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (prc >= 0) return prc;
    opt.seed = (uint64_t)seed;
    int64_t *bids = base.id, *cids = cand.id;
    int nbid = base.n, ncid = cand.n;
    if (db && (bdb || cdb)) return fa_cli_usage("gate", "--db cannot be combined with --baseline-db/--candidate-db");
    if (ctag && !tag) return fa_cli_usage("gate", "--candidate-tag needs --tag (the baseline's tag)");
    if (tag && nbid) return fa_cli_usage("gate", "--tag and --baseline RUN both select the baseline: give one");
    if (ctag && ncid) return fa_cli_usage("gate", "--candidate-tag and --candidate RUN both select the candidate: give one");
    if (!db) db = fa_cli_default_db();
    if (!bdb) bdb = db;
    if (!cdb) cdb = db;

    /* --junit/--markdown never name a database the gate reads (or its -wal/-shm) */
    const char *outs[2] = {junit, mdpath};
    for (int k = 0; k < 2; k++) {
        if (!outs[k]) continue;
        fa_status so = fa_cli_check_not_db(ctx, outs[k], false, bdb);
        if (!so) so = fa_cli_check_not_db(ctx, outs[k], false, cdb);
        if (so) return fa_cli_fail(ctx, so);
    }
    fa_store *bst = NULL, *cst = NULL;
    fa_status s = fa_store_open_ex(ctx, bdb, FA_STORE_NO_CREATE | FA_STORE_READONLY, &bst);
    if (s) return fa_cli_fail(ctx, s);
    bool same_db = !strcmp(bdb, cdb);
    if (same_db) cst = bst;
    else if ((s = fa_store_open_ex(ctx, cdb, FA_STORE_NO_CREATE | FA_STORE_READONLY, &cst))) {
        fa_store_close(bst);
        return fa_cli_fail(ctx, s);
    }
    fa_arena *ar = fa_arena_create(4096);
    fa_run_info binfo, cinfo;
    if (!ar) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    /* Resolve in the order that lets each side constrain the other: the baseline first when it is
     * named (ids, tag) or lives in its own file; otherwise the candidate (the newest run) first. */
    else if (nbid || tag || !same_db) {
        if (!nbid) s = fa_gate_pick_runs(ctx, bst, tag, NULL, NULL, 0, NULL, runs, bids, &nbid);
        if (!s) s = fa_store_get_run(ctx, bst, bids[0], ar, &binfo);
        if (!s && !ncid)
            s = fa_gate_pick_runs(ctx, cst, ctag, ctag ? NULL : tag, same_db ? bids : NULL, same_db ? nbid : 0, &binfo,
                                  runs, cids, &ncid);
    } else {
        if (!ncid) s = fa_gate_pick_runs(ctx, cst, NULL, NULL, NULL, 0, NULL, 1, cids, &ncid);
        if (!s) s = fa_store_get_run(ctx, cst, cids[0], ar, &cinfo);
        if (!s && runs > 1 && ncid == 1) {
            /* more candidate runs: the newest runs of its model with its tag */
            if (!cinfo.tag)
                s = fa_ctx_error(ctx, FA_ERR_USAGE, "--runs %d without --tag: the candidate run %" PRId64
                                 " has no tag to tell its runs from the baseline's", runs, cids[0]);
            int64_t more[MAX_RUNS];
            int nm = 0;
            if (!s && !fa_gate_pick_runs(ctx, cst, cinfo.tag, NULL, cids, 1, &cinfo, runs - 1, more, &nm))
                for (int i = 0; i < nm; i++) cids[ncid++] = more[i];
            if (!s) fa_ctx_clear(ctx);
        }
        if (!s) {
            /* the newest other runs of the same model, older than the candidate */
            s = fa_gate_pick_runs(ctx, bst, NULL, ncid > 1 ? cinfo.tag : NULL, cids, ncid, &cinfo, runs, bids, &nbid);
            if (!s && bids[0] > cids[0])
                s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: the newest other run of %s (%" PRId64 ") is newer than the "
                                 "candidate %" PRId64 "; name the baseline with --baseline or --tag",
                                 bdb, cinfo.model_path ? cinfo.model_path : "the model", bids[0], cids[0]);
        }
    }
    fa_gate_report *rep = NULL;
    if (!s) s = fa_gate_run_multi(ctx, bst, bids, nbid, cst, cids, ncid, &opt, &rep);
    fa_arena_free(ar);
    if (s) {
        if (cst != bst) fa_store_close(cst);
        fa_store_close(bst);
        return fa_cli_fail(ctx, s);
    }
    int rc = 0;
    fa_buf out;
    fa_buf_init(&out);
    if (json) fa_gate_render_json(rep, &out);
    else fa_gate_render_text(rep, &out);
    fwrite(out.data ? out.data : "", 1, out.len, stdout);
    if (junit) {
        fa_buf_reset(&out);
        fa_gate_render_junit(rep, &out);
        if ((rc = write_out(ctx, junit, &out))) goto done;
    }
    if (mdpath) {
        fa_buf_reset(&out);
        fa_gate_render_markdown(rep, &out);
        if ((rc = write_out(ctx, mdpath, &out))) goto done;
    }
    if (rep->verdict == FA_GATE_FAIL || (rep->verdict == FA_GATE_INCONCLUSIVE && opt.strict)) rc = 3;
done:
    fflush(stdout);
    fa_buf_free(&out);
    fa_gate_report_free(rep);
    if (cst != bst) fa_store_close(cst);
    fa_store_close(bst);
    return rc;
}
