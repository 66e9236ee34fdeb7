/* gate/render — the gate report as text (a column table, core/table.c), JUnit XML, Markdown
 * and JSON (docs/ci.md). */
#include "gate/gate-impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void fa_gate_pct(char *out, size_t n, double ratio)
{
    if (!isfinite(ratio)) snprintf(out, n, "n/a");
    else if (ratio >= 2 || ratio <= 0.5) /* 2x and beyond read better as factors */
        snprintf(out, n, ratio < 10 ? "x%.2f" : "x%.0f", ratio);
    else snprintf(out, n, "%+.1f%%", (ratio - 1) * 100);
}

void fa_gate_escape_xml(fa_buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned char ch = p[i];
        switch (ch) {
        case '&': fa_buf_puts(b, "&amp;"); i++; continue;
        case '<': fa_buf_puts(b, "&lt;"); i++; continue;
        case '>': fa_buf_puts(b, "&gt;"); i++; continue;
        case '"': fa_buf_puts(b, "&quot;"); i++; continue;
        case '\'': fa_buf_puts(b, "&apos;"); i++; continue;
        default: break;
        }
        if (ch < 0x20) {
            if (ch == '\t' || ch == '\n' || ch == '\r') fa_buf_append(b, &p[i], 1);
            else fa_buf_puts(b, "\xEF\xBF\xBD");
            i++;
            continue;
        }
        if (ch < 0x80) {
            fa_buf_append(b, &p[i], 1);
            i++;
            continue;
        }
        /* validate one UTF-8 sequence */
        int len = ch >= 0xF0 && ch <= 0xF4 ? 4 : ch >= 0xE0 ? 3 : ch >= 0xC2 && ch <= 0xDF ? 2 : 0;
        bool ok = len > 0 && i + (size_t)len <= n;
        for (int k = 1; ok && k < len; k++) ok = (p[i + k] & 0xC0) == 0x80;
        if (ok && len == 3 && ch == 0xE0 && p[i + 1] < 0xA0) ok = false; /* overlong */
        if (ok && len == 3 && ch == 0xED && p[i + 1] >= 0xA0) ok = false; /* surrogates */
        if (ok && len == 3 && ch == 0xEF && p[i + 1] == 0xBF && p[i + 2] >= 0xBE) ok = false; /* U+FFFE/FFFF */
        if (ok && len == 4 && ch == 0xF0 && p[i + 1] < 0x90) ok = false;
        if (ok && len == 4 && ch == 0xF4 && p[i + 1] >= 0x90) ok = false;
        if (ok) {
            fa_buf_append(b, &p[i], (size_t)len);
            i += (size_t)len;
        } else {
            fa_buf_puts(b, "\xEF\xBF\xBD");
            i++;
        }
    }
}

static void xml(fa_buf *b, const char *s) { if (s) fa_gate_escape_xml(b, s, strlen(s)); }

static fa_gate_verdict effective(const fa_gate_report *r, fa_gate_verdict v)
{
    return v == FA_GATE_INCONCLUSIVE && r->opt.strict ? FA_GATE_FAIL : v;
}

static void change_cols(const fa_gate_check *c, char *chg, size_t n1, char *ci, size_t n2)
{
    snprintf(chg, n1, "-");
    snprintf(ci, n2, "-");
    if (!c->has_stats) return;
    fa_gate_pct(chg, n1, c->stats.ratio);
    if (isfinite(c->stats.lo)) {
        char lo[32], hi[32];
        fa_gate_pct(lo, sizeof lo, c->stats.lo);
        fa_gate_pct(hi, sizeof hi, c->stats.hi);
        snprintf(ci, n2, "%s..%s", lo, hi);
    }
}

/* ", with runs 4, 3" when a side pools several runs. */
static void more_runs(fa_buf *b, const int64_t *ids, int n)
{
    for (int i = 1; i < n; i++) fa_buf_printf_term(b, "%s%" PRId64, i == 1 ? " (pooled with run " : ", ", ids[i]);
    if (n > 1) fa_buf_puts(b, ")");
}

static void run_line(fa_buf *b, const char *role, const fa_run_info *ri, const char *db, const int64_t *ids, int n)
{
    fa_buf_printf_term(b, "%s: run %" PRId64, role, ri->id);
    more_runs(b, ids, n);
    fa_buf_printf_term(b, " of %s", ri->model_path ? ri->model_path : "?");
    if (ri->tag) fa_buf_printf_term(b, " (tag %s)", ri->tag);
    fa_buf_printf_term(b, " on %s/%s in %s\n", ri->target ? ri->target : "?", ri->device_name ? ri->device_name : "?", db);
}

static const char *overall_word(const fa_gate_report *r)
{
    fa_gate_verdict v = effective(r, r->verdict);
    return v == FA_GATE_FAIL ? (r->verdict == FA_GATE_FAIL ? "REGRESSION" : "INCONCLUSIVE (--strict: fails)")
                             : v == FA_GATE_INCONCLUSIVE ? "INCONCLUSIVE" : "PASS";
}

void fa_gate_render_text(const fa_gate_report *r, fa_buf *b)
{
    fa_buf_puts(b, "fuse-advise gate\n");
    run_line(b, "  baseline ", &r->baseline, r->baseline_db, r->baseline_runs, r->n_baseline_runs);
    run_line(b, "  candidate", &r->candidate, r->candidate_db, r->candidate_runs, r->n_candidate_runs);
    if (r->traces)
        fa_buf_printf_term(b, "  rule: imported traces, one figure per side: fail when the candidate's kernel time is more than "
                              "+%.3g%% and at least %.3g%% of the baseline's step above the baseline's, or it has more kernels\n\n",
                           r->opt.max_regression * 100, r->opt.min_share * 100);
    else
        fa_buf_printf_term(b, "  rule: fail when the %.4g%% bootstrap CI of the median ratio lies above +%.3g%% (%d resamples)\n\n",
                           r->opt.confidence * 100, r->opt.max_regression * 100, r->opt.resamples);
    /* the check column as wide as the longest name, cut at 72 bytes */
    static const fa_table_col cols[] = {{"VERDICT", 12, 0, false}, {"CHECK", 5, 72, false}, {"CHANGE", 8, 0, true},
                                        {"CI", 17, 0, false}, {"DETAIL", 0, 0, false}};
    fa_table *t = fa_table_create(cols, 5);
    for (int i = 0; i < r->n_checks; i++) {
        const fa_gate_check *c = &r->checks[i];
        char chg[32], ci[64];
        change_cols(c, chg, sizeof chg, ci, sizeof ci);
        const char *cells[] = {fa_gate_verdict_name(c->verdict), c->name, chg, ci, c->message};
        fa_table_add_row(t, cells);
    }
    fa_table_render(t, b);
    fa_table_free(t);
    for (int i = 0; i < r->n_notes; i++) fa_buf_printf_term(b, "note: %s\n", r->notes[i]);
    fa_buf_printf_term(b, "\n%s: %d failed, %d inconclusive, %d warnings, %d passed, %d skipped (not measured)\n",
                       overall_word(r), r->counts[FA_GATE_FAIL], r->counts[FA_GATE_INCONCLUSIVE], r->counts[FA_GATE_WARN],
                       r->counts[FA_GATE_PASS], r->counts[FA_GATE_SKIPPED]);
}

void fa_gate_render_junit(const fa_gate_report *r, fa_buf *b)
{
    int failures = 0, skipped = 0;
    for (int i = 0; i < r->n_checks; i++) {
        fa_gate_verdict v = effective(r, r->checks[i].verdict);
        failures += v == FA_GATE_FAIL;
        skipped += v == FA_GATE_SKIPPED || v == FA_GATE_INCONCLUSIVE;
    }
    fa_buf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fa_buf_printf(b, "<testsuites name=\"fuse-advise gate\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\">\n",
                  r->n_checks, failures, skipped);
    fa_buf_printf(b, "  <testsuite name=\"fuse-advise gate\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" "
                     "time=\"0\">\n    <properties>\n",
                  r->n_checks, failures, skipped);
    const struct { const char *k; const fa_run_info *ri; const char *db; } runs[2] = {
        {"baseline", &r->baseline, r->baseline_db}, {"candidate", &r->candidate, r->candidate_db}};
    for (int k = 0; k < 2; k++) {
        fa_buf_printf(b, "      <property name=\"%s_run\" value=\"%" PRId64 "\"/>\n", runs[k].k, runs[k].ri->id);
        fa_buf_printf(b, "      <property name=\"%s_db\" value=\"", runs[k].k);
        xml(b, runs[k].db);
        fa_buf_puts(b, "\"/>\n");
        fa_buf_printf(b, "      <property name=\"%s_model\" value=\"", runs[k].k);
        xml(b, runs[k].ri->model_path);
        fa_buf_puts(b, "\"/>\n");
    }
    fa_buf_printf(b, "      <property name=\"max_regression\" value=\"%.6g\"/>\n", r->opt.max_regression);
    fa_buf_puts(b, "    </properties>\n");
    for (int i = 0; i < r->n_checks; i++) {
        const fa_gate_check *c = &r->checks[i];
        fa_gate_verdict v = effective(r, c->verdict);
        fa_buf_puts(b, "    <testcase classname=\"fuse-advise.gate.");
        xml(b, c->category);
        fa_buf_puts(b, "\" name=\"");
        xml(b, c->name);
        fa_buf_puts(b, "\" time=\"0\">\n");
        if (v == FA_GATE_FAIL) {
            fa_buf_printf(b, "      <failure type=\"%s\" message=\"", c->verdict == FA_GATE_INCONCLUSIVE ? "inconclusive"
                                                                                                           : "regression");
            xml(b, c->message);
            fa_buf_puts(b, "\">");
            xml(b, c->id);
            fa_buf_puts(b, ": ");
            xml(b, c->message);
            fa_buf_puts(b, "</failure>\n");
        } else if (v == FA_GATE_SKIPPED || v == FA_GATE_INCONCLUSIVE) {
            fa_buf_printf(b, "      <skipped message=\"%s: ", fa_gate_verdict_name(v));
            xml(b, c->message);
            fa_buf_puts(b, "\"/>\n");
        }
        fa_buf_printf(b, "      <system-out>%s: ", fa_gate_verdict_name(c->verdict));
        xml(b, c->message);
        fa_buf_puts(b, "</system-out>\n    </testcase>\n");
    }
    fa_buf_puts(b, "    <system-out>");
    for (int i = 0; i < r->n_notes; i++) {
        fa_buf_puts(b, "note: ");
        xml(b, r->notes[i]);
        fa_buf_puts(b, "\n");
    }
    fa_buf_printf(b, "%s</system-out>\n  </testsuite>\n</testsuites>\n", overall_word(r));
}

/* Markdown text from a run database or a model (GitHub-flavoured Markdown, posted as a pull-request
 * comment, docs/ci.md): newlines folded to spaces, control characters shown as fa_escape_term
 * shows them, < > & as entities, every other ASCII punctuation character backslash-escaped
 * (CommonMark 0.30 sec. 2.4: it then stands for itself, so no link, image, emphasis, code span,
 * heading, list, autolink or table cell can start inside a name), and '@' followed by U+2060
 * WORD JOINER (GitHub would notify a user or team named after it). */
static void md(fa_buf *b, const char *s)
{
    if (!s) return;
    fa_buf flat, esc;
    fa_buf_init(&flat);
    fa_buf_init(&esc);
    for (const char *p = s; *p; p++) fa_buf_append(&flat, *p == '\n' || *p == '\r' ? " " : p, 1);
    fa_escape_term(&esc, flat.data ? flat.data : "", flat.len);
    for (size_t i = 0; i < esc.len; i++) {
        char c = esc.data[i];
        switch (c) {
        case '<': fa_buf_puts(b, "&lt;"); break;
        case '>': fa_buf_puts(b, "&gt;"); break;
        case '&': fa_buf_puts(b, "&amp;"); break;
        case '@': fa_buf_puts(b, "@\xe2\x81\xa0"); break;
        default:
            if (strchr("!\"#$%'()*+,-./:;=?[\\]^_`{|}~", c) && c) fa_buf_puts(b, "\\");
            fa_buf_append(b, &c, 1);
        }
    }
    if (flat.oom || esc.oom) b->oom = true;
    fa_buf_free(&flat);
    fa_buf_free(&esc);
}

static const char *md_mark(fa_gate_verdict v)
{
    switch (v) {
    case FA_GATE_FAIL: return ":x:";
    case FA_GATE_WARN: return ":warning:";
    case FA_GATE_INCONCLUSIVE: return ":grey_question:";
    case FA_GATE_SKIPPED: return ":heavy_minus_sign:";
    default: return ":white_check_mark:";
    }
}

/* At most n source bytes of s (cut at a space when one is near, never inside a UTF-8 sequence),
 * then "..." when cut, written as md() writes text. */
static void md_cut(fa_buf *b, const char *s, size_t n)
{
    if (!s) return;
    size_t len = strlen(s);
    if (len <= n) {
        md(b, s);
        return;
    }
    size_t k = n;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--; /* a UTF-8 sequence's start */
    size_t sp = k;
    while (sp > n / 2 && s[sp] != ' ') sp--;
    if (s[sp] == ' ') k = sp;
    char *t = malloc(k + 1);
    if (!t) {
        b->oom = true;
        return;
    }
    memcpy(t, s, k);
    t[k] = '\0';
    md(b, t);
    fa_buf_puts(b, " \xe2\x80\xa6"); /* U+2026 */
    free(t);
}

/* One table row of check c: its verdict, name, change, interval and detail (cut to detail_max). */
static void md_row(fa_buf *b, const fa_gate_check *c, size_t detail_max)
{
    char chg[32], ci[64];
    change_cols(c, chg, sizeof chg, ci, sizeof ci);
    fa_buf_printf(b, "| %s %s | ", md_mark(c->verdict), fa_gate_verdict_name(c->verdict));
    md_cut(b, c->name, 200);
    fa_buf_printf(b, " | %s | %s | ", chg, ci);
    md_cut(b, c->message, detail_max);
    fa_buf_puts(b, " |\n");
}

void fa_gate_render_markdown(const fa_gate_report *r, fa_buf *b)
{
    size_t start = b->len;
    fa_gate_verdict ov = effective(r, r->verdict);
    fa_buf_printf(b, "### %s fuse-advise gate: %s\n\n", md_mark(ov == FA_GATE_FAIL ? FA_GATE_FAIL : r->verdict),
                  overall_word(r));
    for (int k = 0; k < 2; k++) {
        const fa_run_info *ri = k ? &r->candidate : &r->baseline;
        fa_buf_printf(b, "- **%s**: run %" PRId64, k ? "Candidate" : "Baseline", ri->id);
        more_runs(b, k ? r->candidate_runs : r->baseline_runs, k ? r->n_candidate_runs : r->n_baseline_runs);
        fa_buf_puts(b, " of ");
        md_cut(b, ri->model_path, 300);
        if (ri->tag) {
            fa_buf_puts(b, " (tag ");
            md_cut(b, ri->tag, 100);
            fa_buf_puts(b, ")");
        }
        fa_buf_puts(b, " on ");
        md_cut(b, ri->device_name ? ri->device_name : ri->target, 100);
        fa_buf_puts(b, "\n");
    }
    if (r->traces)
        fa_buf_printf(b, "- **Rule**: imported traces, one figure per side: fail when the candidate's kernel time is more "
                         "than +%.3g%% and at least %.3g%% of the baseline's step above the baseline's, or it has more "
                         "kernels\n", r->opt.max_regression * 100, r->opt.min_share * 100);
    else
        fa_buf_printf(b, "- **Rule**: fail when the %.4g%% bootstrap confidence interval of the ratio of medians "
                         "(candidate / baseline, per-iteration samples) lies above +%.3g%%\n",
                      r->opt.confidence * 100, r->opt.max_regression * 100);
    fa_buf_printf(b, "- **Result**: %d failed, %d inconclusive, %d warnings, %d passed, %d not measured\n",
                  r->counts[FA_GATE_FAIL], r->counts[FA_GATE_INCONCLUSIVE], r->counts[FA_GATE_WARN],
                  r->counts[FA_GATE_PASS], r->counts[FA_GATE_SKIPPED]);
    /* notes first: they are few (notes[] holds 16) and say what the table cannot */
    for (int i = 0; i < r->n_notes; i++) {
        fa_buf_puts(b, "\n> ");
        md_cut(b, r->notes[i], 400);
        fa_buf_puts(b, "\n");
    }
    /* failing, inconclusive and warning checks in full, in that order, within the budget (the
     * closing lines keep FA_GATE_MD_RESERVE) */
    const fa_gate_verdict order[3] = {FA_GATE_FAIL, FA_GATE_INCONCLUSIVE, FA_GATE_WARN};
    int n_bad = r->counts[FA_GATE_FAIL] + r->counts[FA_GATE_INCONCLUSIVE] + r->counts[FA_GATE_WARN], shown = 0;
    if (n_bad) {
        fa_buf_puts(b, "\n| | Check | Change | CI | Detail |\n|---|---|---:|---|---|\n");
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < r->n_checks; i++) {
                const fa_gate_check *c = &r->checks[i];
                if (c->verdict != order[k]) continue;
                if (b->len - start > FA_GATE_MD_MAX - FA_GATE_MD_RESERVE) continue;
                md_row(b, c, 600);
                shown++;
            }
        if (shown < n_bad)
            fa_buf_printf(b, "\n%d more failing, inconclusive or warning checks are not shown here (a comment holds "
                             "%d characters): the JUnit report or `fuse-advise gate --json` has every check\n",
                          n_bad - shown, FA_GATE_MD_MAX);
    }
    /* passing and not-measured checks: summarised, collapsed; the rows while the budget lasts */
    int n_ok = r->counts[FA_GATE_PASS] + r->counts[FA_GATE_SKIPPED];
    if (n_ok) {
        fa_buf_printf(b, "\n<details><summary>%d passed, %d not measured</summary>\n\n| | Check | Change | CI | Detail |\n"
                         "|---|---|---:|---|---|\n", r->counts[FA_GATE_PASS], r->counts[FA_GATE_SKIPPED]);
        int listed = 0;
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < r->n_checks; i++) {
                const fa_gate_check *c = &r->checks[i];
                if (c->verdict != (k ? FA_GATE_SKIPPED : FA_GATE_PASS)) continue;
                if (b->len - start > FA_GATE_MD_MAX - FA_GATE_MD_RESERVE) continue;
                md_row(b, c, 160);
                listed++;
            }
        if (listed < n_ok)
            fa_buf_printf(b, "\n%d more passing or not-measured checks: the JUnit report or `fuse-advise gate --json`\n",
                          n_ok - listed);
        fa_buf_puts(b, "\n</details>\n");
    }
}

void fa_gate_render_json(const fa_gate_report *r, fa_buf *b)
{
    fa_buf_printf(b, "{\"schema\":\"fuse-advise.gate/1\",\"verdict\":\"%s\",\"strict\":%s,\"fails_build\":%s,",
                  fa_gate_verdict_name(r->verdict), r->opt.strict ? "true" : "false",
                  effective(r, r->verdict) == FA_GATE_FAIL ? "true" : "false");
    fa_buf_puts(b, "\"options\":{\"max_regression\":");
    fa_json_num(b, r->opt.max_regression, 9);
    fa_buf_puts(b, ",\"confidence\":");
    fa_json_num(b, r->opt.confidence, 9);
    fa_buf_printf(b, ",\"resamples\":%d,\"seed\":%" PRIu64 ",\"min_share\":", r->opt.resamples, r->opt.seed);
    fa_json_num(b, r->opt.min_share, 9);
    fa_buf_puts(b, ",\"register_warn\":");
    fa_json_num(b, r->opt.register_warn, 9);
    fa_buf_puts(b, "}");
    for (int k = 0; k < 2; k++) {
        const fa_run_info *ri = k ? &r->candidate : &r->baseline;
        fa_buf_printf(b, ",\"%s\":{\"db\":", k ? "candidate" : "baseline");
        fa_json_str(b, k ? r->candidate_db : r->baseline_db);
        fa_buf_printf(b, ",\"run_id\":%" PRId64 ",\"model_path\":", ri->id);
        fa_json_str(b, ri->model_path);
        fa_buf_puts(b, ",\"model_sha256\":");
        fa_json_str(b, ri->model_sha256);
        fa_buf_puts(b, ",\"tag\":");
        fa_json_str(b, ri->tag);
        fa_buf_puts(b, ",\"target\":");
        fa_json_str(b, ri->target);
        fa_buf_puts(b, ",\"device_name\":");
        fa_json_str(b, ri->device_name);
        fa_buf_printf(b, ",\"iters\":%d,\"runs\":[", ri->iters);
        int nr = k ? r->n_candidate_runs : r->n_baseline_runs;
        const int64_t *ids = k ? r->candidate_runs : r->baseline_runs;
        for (int i = 0; i < nr; i++) fa_buf_printf(b, "%s%" PRId64, i ? "," : "", ids[i]);
        fa_buf_puts(b, "]}");
    }
    fa_buf_puts(b, ",\"counts\":{");
    for (int v = 0; v < FA_GATE_VERDICT_COUNT; v++)
        fa_buf_printf(b, "%s\"%s\":%d", v ? "," : "", fa_gate_verdict_name((fa_gate_verdict)v), r->counts[v]);
    fa_buf_puts(b, "},\"notes\":[");
    for (int i = 0; i < r->n_notes; i++) {
        if (i) fa_buf_puts(b, ",");
        fa_json_str(b, r->notes[i]);
    }
    fa_buf_puts(b, "],\"checks\":[");
    for (int i = 0; i < r->n_checks; i++) {
        const fa_gate_check *c = &r->checks[i];
        fa_buf_puts(b, i ? ",\n{\"id\":" : "\n{\"id\":");
        fa_json_str(b, c->id);
        fa_buf_puts(b, ",\"category\":");
        fa_json_str(b, c->category);
        fa_buf_puts(b, ",\"name\":");
        fa_json_str(b, c->name);
        fa_buf_printf(b, ",\"verdict\":\"%s\",\"message\":", fa_gate_verdict_name(c->verdict));
        fa_json_str(b, c->message);
        fa_buf_puts(b, ",\"stats\":");
        if (!c->has_stats) fa_buf_puts(b, "null");
        else {
            const fa_gate_stats *s = &c->stats;
            fa_buf_printf(b, "{\"n_base\":%d,\"n_cand\":%d,\"base_median_ns\":", s->n_base, s->n_cand);
            fa_json_num(b, s->base_median_ns, 9);
            fa_buf_puts(b, ",\"cand_median_ns\":");
            fa_json_num(b, s->cand_median_ns, 9);
            fa_buf_puts(b, ",\"ratio\":");
            fa_json_num(b, s->ratio, 9);
            fa_buf_puts(b, ",\"ci_lo\":");
            fa_json_num(b, s->lo, 9);
            fa_buf_puts(b, ",\"ci_hi\":");
            fa_json_num(b, s->hi, 9);
            fa_buf_puts(b, ",\"confidence\":");
            fa_json_num(b, s->confidence, 9);
            fa_buf_printf(b, ",\"runs_base\":%d,\"runs_cand\":%d,\"suggested_iters\":%d}", s->runs_base, s->runs_cand,
                          s->suggested_iters);
        }
        fa_buf_puts(b, "}");
    }
    fa_buf_puts(b, "]}\n");
}
