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

static const char *k_help =
    "usage: fuse-advise gate [--baseline RUN] [--candidate RUN] [--db PATH|URI]\n"
    "                        [--baseline-db A.db] [--candidate-db B.db]\n"
    "                        [--tag|--baseline-tag TAG [--candidate-tag TAG2]] [--runs N]\n"
    "                        [--max-regression 3%] [--confidence 95%] [--resamples N] [--seed S]\n"
    "                        [--min-share 1%] [--strict] [--junit FILE] [--markdown FILE] [--json]\n"
    "Selecting the runs:\n"
    "  --baseline RUN / --candidate RUN   run ids (in --db, or in --baseline-db / --candidate-db);\n"
    "                     RUN,RUN,... pools several runs of one side (first = primary)\n"
    "  --baseline-db A.db --candidate-db B.db  two databases; without ids, the newest finished run\n"
    "                     of each (the candidate must be of the baseline's model)\n"
    "  --tag TAG          baseline = the newest run tagged TAG; candidate = the newest run of the\n"
    "                     same model with another tag (or no tag), or tagged --candidate-tag TAG2\n"
    "  --baseline-tag TAG the same as --tag (e.g. `--baseline-db postgresql://... --baseline-tag main\n"
    "                     --candidate-db this.db`: the team's main from a shared server, docs/ci.md)\n"
    "  default            candidate = the newest run; baseline = the newest earlier run of its model\n"
    "  --runs N           pool the newest N matching runs of each side (default 1): latency\n"
    "                     intervals then include run-to-run variation (two-stage bootstrap)\n"
    "Deciding:\n"
    "  --max-regression X  threshold, percent (\"3%\", \"3\" and \"0.5%\" mean percent), default 3%\n"
    "  --confidence X      two-sided level of the bootstrap interval, default 95%\n"
    "  --resamples N       bootstrap resamples per check, default 2000 (fixed --seed, default 1)\n"
    "  --min-share X       a per-cluster/per-op slowdown fails only when it costs at least X of\n"
    "                      the iteration (at the interval's lower bound); smaller ones warn. 1%\n"
    "  --strict            an inconclusive gate fails (exit 3) instead of passing (exit 0)\n"
    "Output: a table on stdout (or --json); --junit FILE (JUnit XML), --markdown FILE (PR comment),\n"
    "both written atomically.\n"
    "Exit: 0 pass (or inconclusive without --strict), 3 regression, 1 bad input/database, 2 usage.\n"
    "Details: docs/ci.md\n";

/* "3%", "3" → 0.03; "0.5%" → 0.005. -1 on a malformed value. */
static double parse_pct(const char *v)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || errno || !isfinite(x)) return -1;
    if (*end == '%') end++;
    if (*end) return -1;
    return x / 100.0;
}

#define MAX_RUNS 64

/* "12" or "12,11,9" → ids; count, or -1 after a usage message. */
static int parse_runs(const char *opt, const char *v, int64_t *ids)
{
    int n = 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", v);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == MAX_RUNS) {
            fa_cli_usage("gate", "%s takes at most %d runs", opt, MAX_RUNS);
            return -1;
        }
        long x = fa_cli_parse_long("gate", opt, t, 1, INT32_MAX);
        if (x < 0) return -1;
        ids[n++] = x;
    }
    if (!n) fa_cli_usage("gate", "%s needs a run id", opt);
    return n ? n : -1;
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
    int64_t bids[MAX_RUNS], cids[MAX_RUNS];
    int nbid = 0, ncid = 0, runs = 1;
    bool json = false;
    fa_gate_options opt;
    fa_gate_options_default(&opt);
    for (int i = 1; i < argc; i++) {
        const char *v;
        int save = i;
#define OPT(name) (i = save, (v = fa_cli_opt_value(argc, argv, &i, name)) != NULL)
        if (OPT("--db")) db = v;
        else if (OPT("--baseline-db")) bdb = v;
        else if (OPT("--candidate-db")) cdb = v;
        else if (OPT("--tag") || OPT("--baseline-tag")) tag = v;
        else if (OPT("--candidate-tag")) ctag = v;
        else if (OPT("--junit")) junit = v;
        else if (OPT("--markdown")) mdpath = v;
        else if (OPT("--baseline")) {
            if ((nbid = parse_runs("--baseline", v, bids)) < 0) return 2;
            continue;
        } else if (OPT("--candidate")) {
            if ((ncid = parse_runs("--candidate", v, cids)) < 0) return 2;
            continue;
        } else if (OPT("--runs")) {
            long x = fa_cli_parse_long("gate", "--runs", v, 1, MAX_RUNS);
            if (x < 0) return 2;
            runs = (int)x;
            continue;
        } else if (OPT("--max-regression")) {
            double x = parse_pct(v);
            if (x < 0 || x > 10) return fa_cli_usage("gate", "--max-regression expects a percentage like 3%%, got '%s'", v);
            opt.max_regression = x;
            continue;
        } else if (OPT("--confidence")) {
            double x = parse_pct(v);
            if (!(x >= 0.5 && x < 1)) return fa_cli_usage("gate", "--confidence expects 50%%..99.9%%, got '%s'", v);
            opt.confidence = x;
            continue;
        } else if (OPT("--min-share")) {
            double x = parse_pct(v);
            if (x < 0 || x > 1) return fa_cli_usage("gate", "--min-share expects a percentage, got '%s'", v);
            opt.min_share = x;
            continue;
        } else if (OPT("--resamples")) {
            long x = fa_cli_parse_long("gate", "--resamples", v, 100, 200000);
            if (x < 0) return 2;
            opt.resamples = (int)x;
            continue;
        } else if (OPT("--seed")) {
            long x = fa_cli_parse_long("gate", "--seed", v, 0, INT32_MAX);
            if (x < 0) return 2;
            opt.seed = (uint64_t)x;
            continue;
        } else {
            i = save;
            if (!strcmp(argv[i], "--json")) json = true;
            else if (!strcmp(argv[i], "--strict")) opt.strict = true;
            else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                fputs(k_help, stdout);
                return 0;
            } else if (argv[i][0] == '-') return fa_cli_usage("gate", "unknown option '%s'", argv[i]);
            else return fa_cli_usage("gate", "unexpected argument '%s'", argv[i]);
            continue;
        }
#undef OPT
        if (!*v) return fa_cli_usage("gate", "%s needs a value", argv[save]);
    }
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
