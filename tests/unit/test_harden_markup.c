/* tests/unit/test_harden_markup — issue 32, report markup from the database: a run database passed
 * between machines is as untrusted as a model, so every text value it holds reaches report.html,
 * graph.svg, summary.json, trace.json, kernels.csv and the gate's Markdown / JUnit only escaped
 * for its context, and the page's Content-Security-Policy lets no inline script or style run but
 * the page's own, listed by SHA-256 hash. On the main of before, runs.target, runs.kind,
 * runs.status and clusters.status were written raw (the status inside a class attribute), the
 * trace report's roof label raw into its SVG, a cpu op raw into kernels.csv, and the policy
 * allowed 'unsafe-inline'. Every TEXT column of every table is tried, one at a time, in a model
 * run's database and in an imported trace's (whose stored advice is JSON: every string in it is
 * tried too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "harden_util.h"
#include "reports/reports.h"
#include "store/store.h"

/* markup that breaks out of text, an attribute (either quote) and a title, a script and an image
 * with a handler, a spreadsheet formula, a Markdown link, image and mention, a terminal escape */
#define PAYLOAD                                                                                                        \
    "=HYPERLINK(\"http://evil\")\"'><script>alert(1)</script><img src=x onerror=alert(2)></title></style>"           \
    "[click](http://evil) ![i](http://evil/x.png) @octo-org/team `code` \x1b]0;t\x07"
/* the same with bytes that are not UTF-8 (an overlong '/', a surrogate, 0xFF): what a database
 * column may hold; every report file must still be UTF-8 (the stored advice is JSON, which cannot
 * hold them: PAYLOAD is used there) */
#define PAYLOAD_BYTES PAYLOAD " \xc0\xaf\xed\xa0\x80\xff"

static char g_model_db[4200], g_trace_db[4200];

static void write_trace(const char *path)
{
    fa_buf t;
    fa_buf_init(&t);
    fa_buf_puts(&t, "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA A100-SXM4-80GB\","
                    "\"computeMajor\":8,\"computeMinor\":0,\"totalGlobalMem\":85899345920,\"numSms\":108}],\"traceEvents\":[");
    for (int i = 0; i < 24; i++) {
        int ts = 10 + i * 30, k = i % 3;
        static const char *const ops[] = {"aten::mm", "aten::add", "aten::relu"};
        static const char *const kern[] = {"ampere_sgemm_128x64_nn", "void at::native::elementwise_kernel<add>",
                                           "void at::native::elementwise_kernel<relu>"};
        fa_buf_printf(&t,
                      "%s{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"%s\",\"pid\":1,\"tid\":1,\"ts\":%d,\"dur\":8,"
                      "\"args\":{\"Input Dims\":[[256,256],[256,256]],\"Input type\":[\"float\",\"float\"]}},"
                      "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":%d,"
                      "\"dur\":3,\"args\":{\"correlation\":%d}},"
                      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"pid\":0,\"tid\":7,\"ts\":%d,\"dur\":%d,"
                      "\"args\":{\"correlation\":%d,\"device\":0,\"stream\":7,\"grid\":[64,1,1],\"block\":[256,1,1],"
                      "\"registers per thread\":32,\"shared memory\":0}}",
                      i ? "," : "", ops[k], ts, ts + 1, 100 + i, kern[k], ts + 5, k ? 4 : 12, 100 + i);
    }
    fa_buf_puts(&t, "]}");
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_write_file_atomic(ctx, path, t.data, t.len), FA_OK);
    fa_ctx_free(ctx);
    fa_buf_free(&t);
}

static int setup(void **state)
{
    (void)state;
    /* a model run with every stage: ceilings, analysis, plan, clusters, why-not, a fused run */
    snprintf(g_model_db, sizeof g_model_db, "%s", hu_tmp("model.db"));
    const char *run[] = {"run", "zoo:mlp-tiny", "--iters", "2", "--warmup", "0", "--threads", "1", "--max-clusters", "2",
                         "--db", g_model_db, "--out", hu_tmp("model-out"), NULL};
    char *err = NULL;
    int rc = hu_cli_env(run, NULL, NULL, NULL, &err);
    if (rc) fprintf(stderr, "setup: run: exit %d: %s\n", rc, err);
    free(err);
    if (rc) return -1;
    /* an imported trace with its stored advice */
    snprintf(g_trace_db, sizeof g_trace_db, "%s", hu_tmp("trace.db"));
    const char *trace = hu_tmp("trace.json");
    write_trace(trace);
    const char *imp[] = {"import", trace, "--db", g_trace_db, NULL};
    rc = hu_cli_env(imp, NULL, NULL, NULL, &err);
    if (rc) fprintf(stderr, "setup: import: exit %d: %s\n", rc, err);
    free(err);
    return rc ? -1 : 0;
}

static char *slurp_in(const char *dir, const char *file)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    return hu_slurp(p);
}

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* The text between open and close (first occurrence), malloc'd; NULL when absent. */
static char *between(const char *s, const char *open, const char *close)
{
    const char *a = strstr(s, open);
    if (!a) return NULL;
    a += strlen(open);
    const char *b = strstr(a, close);
    if (!b) return NULL;
    return strndup(a, (size_t)(b - a));
}

/* The page's policy lists exactly the hashes of its one <style> and one <script>; nothing inline
 * besides them (no style or on* attribute, no 'unsafe-inline'). */
static void check_policy(const char *what, const char *html)
{
    char *csp = between(html, "http-equiv=\"Content-Security-Policy\" content=\"", "\"");
    if (!csp) fail_msg("%s: no Content-Security-Policy", what);
    if (strstr(csp, "unsafe-inline") || strstr(csp, "unsafe-eval")) fail_msg("%s: policy allows inline code: %s", what, csp);
    char *css = between(html, "<style>", "</style>"), *js = between(html, "<script>", "</script>");
    assert_non_null(css);
    assert_non_null(js);
    char hc[45], hj[45], want[128];
    fa_sha256_base64(css, strlen(css), hc);
    fa_sha256_base64(js, strlen(js), hj);
    snprintf(want, sizeof want, "style-src 'sha256-%s';", hc);
    if (!strstr(csp, want)) fail_msg("%s: policy %s lacks the stylesheet's hash %s", what, csp, hc);
    snprintf(want, sizeof want, "script-src 'sha256-%s';", hj);
    if (!strstr(csp, want)) fail_msg("%s: policy %s lacks the script's hash %s", what, csp, hj);
    assert_null(strstr(csp, "default-src *"));
    if (count(html, "<script") != 1 || count(html, "<style") != 1) fail_msg("%s: more than one script or style", what);
    if (strstr(html, " style=")) fail_msg("%s: an inline style attribute (the policy would refuse it)", what);
    free(csp);
    free(css);
    free(js);
}

/* text is valid UTF-8 throughout (the payload's overlong, surrogate and 0xFF bytes replaced) */
static void check_utf8(const char *what, const char *file, const char *text)
{
    size_t n = strlen(text);
    for (size_t i = 0; i < n;) {
        size_t l = fa_utf8_seq_len(text + i, n - i);
        if (!l) fail_msg("%s: %s is not UTF-8 at byte %zu", what, file, i);
        i += l;
    }
}

/* The six report files of a run whose database holds PAYLOAD somewhere: markup only escaped, JSON
 * valid, no CSV formula cell, every file UTF-8. */
static void check_reports(const char *what, const char *dir)
{
    static const char *const files[] = {"report.html", "graph.svg", "graph.dot", "summary.json", "trace.json", "kernels.csv"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *t = slurp_in(dir, files[i]);
        check_utf8(what, files[i], t);
        free(t);
    }
    char *html = slurp_in(dir, "report.html");
    if (strstr(html, "<script>alert") || strstr(html, "<img src=x") || strstr(html, "\"'>") || strstr(html, "</title></style>"))
        fail_msg("%s: report.html holds raw markup from the database", what);
    check_policy(what, html);
    free(html);
    char *svg = slurp_in(dir, "graph.svg");
    if (strstr(svg, "<script>alert") || strstr(svg, "<img src=x")) fail_msg("%s: graph.svg holds raw markup", what);
    free(svg);
    static const char *const json[] = {"summary.json", "trace.json"};
    for (int i = 0; i < 2; i++) {
        char *j = slurp_in(dir, json[i]), err[256];
        yajl_val v = yajl_tree_parse(j, err, sizeof err);
        if (!v) fail_msg("%s: %s does not parse: %s", what, json[i], err);
        yajl_tree_free(v);
        free(j);
    }
    char *csv = slurp_in(dir, "kernels.csv");
    if (strstr(csv, ",=HYPERLINK") || strstr(csv, "\n=HYPERLINK") || strstr(csv, ",\"=HYPERLINK") ||
        strstr(csv, "\n\"=HYPERLINK") || !strncmp(csv, "=HYPERLINK", 10) || !strncmp(csv, "\"=HYPERLINK", 11))
        fail_msg("%s: kernels.csv has a formula cell", what);
    free(csv);
}

/* sql on db with ?1 bound to PAYLOAD (the payload holds quotes). */
static void exec_payload(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(h));
    if (sqlite3_bind_parameter_count(q) >= 1) sqlite3_bind_text(q, 1, PAYLOAD_BYTES, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    if (rc != SQLITE_DONE) fail_msg("%s: %s", sql, sqlite3_errmsg(h));
    sqlite3_finalize(q);
    sqlite3_close(h);
}

/* A copy of db with `sql` applied (?1 = PAYLOAD), reported; returns whether the report was written (a value the
 * loader refuses, like members_json that is not JSON, fails with a message instead). */
static bool report_of_copy(const char *db, const char *sql, int64_t run, const char *dir, char *msg, size_t cap)
{
    const char *copy = hu_tmp("work.db");
    unlink(copy);
    char vac[4400];
    snprintf(vac, sizeof vac, "VACUUM INTO '%s';", copy);
    hu_exec_sql(db, vac);
    exec_payload(copy, sql);
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    fa_status s = fa_store_open(ctx, copy, &st);
    if (!s) s = fa_reports_write(ctx, st, run, dir);
    snprintf(msg, cap, "%s", fa_ctx_errmsg(ctx));
    if (s && !fa_ctx_errmsg(ctx)[0]) fail_msg("report failed without a message");
    fa_store_close(st);
    fa_ctx_free(ctx);
    return s == FA_OK;
}

/* the run a report is of: the first model run (not its fused twin), the imported trace */
static void every_text_column(const char *db, int64_t run)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(h,
                                        "SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p "
                                        "WHERE m.type = 'table' AND upper(p.type) LIKE '%TEXT%' ORDER BY 1, 2",
                                        -1, &q, NULL),
                     SQLITE_OK);
    int tried = 0, written = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *table = (const char *)sqlite3_column_text(q, 0), *col = (const char *)sqlite3_column_text(q, 1);
        char sql[1024], what[256], msg[4096];
        /* payload + the old value: a column in a unique key stays unique */
        snprintf(sql, sizeof sql, "UPDATE \"%s\" SET \"%s\" = ?1 || coalesce(\"%s\", '');", table, col, col);
        snprintf(what, sizeof what, "%s.%s", table, col);
        const char *dir = hu_tmp("rep");
        fa_rm_tree(dir);
        tried++;
        if (!report_of_copy(db, sql, run, dir, msg, sizeof msg)) {
            /* refused: the message, too, carries no raw control character */
            for (const char *c = msg; *c; c++)
                if ((unsigned char)*c < 0x20 && *c != '\n') fail_msg("%s: refusal message with a raw control byte", what);
            continue;
        }
        written++;
        check_reports(what, dir);
    }
    sqlite3_finalize(q);
    sqlite3_close(h);
    if (tried < 10 || written < tried / 2) fail_msg("%s: %d columns tried, only %d reported", db, tried, written);
}

static void test_every_text_column_of_a_model_run_escaped(void **state)
{
    (void)state;
    every_text_column(g_model_db, 1);
}

static void test_every_text_column_of_a_trace_run_escaped(void **state)
{
    (void)state;
    every_text_column(g_trace_db, 1);
}

/* yajl tree -> JSON with every string value replaced by PAYLOAD (keys kept). */
static void gen_poisoned(yajl_gen g, yajl_val v)
{
    if (YAJL_IS_STRING(v)) yajl_gen_string(g, (const unsigned char *)PAYLOAD, strlen(PAYLOAD));
    else if (YAJL_IS_OBJECT(v)) {
        yajl_gen_map_open(g);
        for (size_t i = 0; i < v->u.object.len; i++) {
            yajl_gen_string(g, (const unsigned char *)v->u.object.keys[i], strlen(v->u.object.keys[i]));
            gen_poisoned(g, v->u.object.values[i]);
        }
        yajl_gen_map_close(g);
    } else if (YAJL_IS_ARRAY(v)) {
        yajl_gen_array_open(g);
        for (size_t i = 0; i < v->u.array.len; i++) gen_poisoned(g, v->u.array.values[i]);
        yajl_gen_array_close(g);
    } else if (YAJL_IS_NUMBER(v)) yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r));
    else if (YAJL_IS_TRUE(v)) yajl_gen_bool(g, 1);
    else if (YAJL_IS_FALSE(v)) yajl_gen_bool(g, 0);
    else yajl_gen_null(g);
}

/* The trace report reads its advice back from JSON stored with the run: every string in it (device,
 * roof label, kernel, op and pattern names, fixes, bases, shapes) from the database. */
static void test_every_string_of_stored_trace_advice_escaped(void **state)
{
    (void)state;
    char *json = hu_query_text(g_trace_db, "SELECT text FROM analysis_summary WHERE key = 'trace.advice_json'");
    assert_non_null(json);
    char err[256];
    yajl_val root = yajl_tree_parse(json, err, sizeof err);
    if (!root) fail_msg("stored advice: %s", err);
    yajl_gen g = yajl_gen_alloc(NULL);
    gen_poisoned(g, root);
    const unsigned char *out;
    size_t len;
    yajl_gen_get_buf(g, &out, &len);
    /* as an SQL literal: quotes doubled */
    fa_buf sql;
    fa_buf_init(&sql);
    fa_buf_puts(&sql, "UPDATE analysis_summary SET text = '");
    for (size_t i = 0; i < len; i++) fa_buf_append(&sql, out[i] == '\'' ? "''" : (const char *)&out[i], out[i] == '\'' ? 2 : 1);
    fa_buf_puts(&sql, "' WHERE key = 'trace.advice_json';");
    yajl_gen_free(g);
    yajl_tree_free(root);
    free(json);
    const char *dir = hu_tmp("rep-advice");
    char msg[4096];
    if (!report_of_copy(g_trace_db, sql.data, 1, dir, msg, sizeof msg)) fail_msg("report: %s", msg);
    fa_buf_free(&sql);
    char *html = slurp_in(dir, "report.html");
    if (!strstr(html, "fuse-advise trace report")) fail_msg("the poisoned advice was not read back (model report written)");
    /* the payload is there, as text */
    if (!strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;")) fail_msg("the payload is not shown at all");
    free(html);
    check_reports("trace advice", dir);
}

/* The gate's Markdown (a pull-request comment) and JUnit (a CI page) of runs whose model path, tag
 * and device came from a shared database. */
static void test_gate_markdown_and_junit_escape_database_values(void **state)
{
    (void)state;
    const char *db = hu_tmp("gate.db");
    unlink(db);
    char vac[4400];
    snprintf(vac, sizeof vac, "VACUUM INTO '%s';", db);
    hu_exec_sql(g_model_db, vac);
    exec_payload(db, "UPDATE runs SET model_path = ?1, tag = ?1, device_name = ?1;");
    const char *md = hu_tmp("gate.md"), *xml = hu_tmp("gate.xml");
    const char *argv[] = {"gate", "--db", db, "--baseline", "1", "--candidate", "1", "--markdown", md, "--junit", xml, NULL};
    char *out = NULL, *err = NULL;
    int rc = hu_cli_env(argv, NULL, NULL, &out, &err);
    if (rc != 0 && rc != 3) fail_msg("gate: exit %d: %s", rc, err);
    free(out);
    free(err);
    char *m = hu_slurp(md);
    if (strstr(m, "<script") || strstr(m, "<img")) fail_msg("markdown: raw HTML from the database: %s", m);
    if (strstr(m, "](http") || strstr(m, "![")) fail_msg("markdown: a link or image from the database: %s", m);
    if (strstr(m, "@octo-org")) fail_msg("markdown: a mention from the database: %s", m);
    if (strstr(m, "`code`")) fail_msg("markdown: a code span from the database: %s", m);
    if (strchr(m, '\x1b')) fail_msg("markdown: a raw escape");
    assert_non_null(strstr(m, "\\[click\\]\\(http\\:\\/\\/evil\\)")); /* shown as the text it is */
    free(m);
    char *x = hu_slurp(xml);
    if (strstr(x, "<script") || strstr(x, "<img")) fail_msg("junit: raw markup from the database");
    if (strchr(x, '\x1b')) fail_msg("junit: a raw escape");
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_text_column_of_a_model_run_escaped),
        cmocka_unit_test(test_every_text_column_of_a_trace_run_escaped),
        cmocka_unit_test(test_every_string_of_stored_trace_advice_escaped),
        cmocka_unit_test(test_gate_markdown_and_junit_escape_database_values),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
