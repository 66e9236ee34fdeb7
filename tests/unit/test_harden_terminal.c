/* tests/unit/test_harden_terminal — issue 32, terminal output and CSV cells: names in models, traces
 * and run databases that carry terminal escapes (OSC 52 clipboard write, window title, screen
 * clear, an 8-bit CSI, DEL, a carriage return and a newline that would forge a line) reach the
 * terminal only escaped - from `inspect`, `run`, `show`, `analyze`, `advise`, `runs`, `gate`,
 * `import` / `run TRACE` and the error messages - and a CSV cell that starts a spreadsheet formula
 * is neutralised (OWASP "CSV Injection"). The CLI cases fail on the main of before (their names
 * were printed raw); the library cases test core's one helper (fa_escape_term, fa_buf_printf_term)
 * that the CLI and the error context use. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harden_util.h"
#include "reports/reports.h"
#include "store/store.h"

/* every kind of control a name can carry: OSC 52 (clipboard), OSC 0 (title) ended by BEL, CSI 2J
 * (clear), the 8-bit CSI 0x9B as U+009B and as a lone byte, NEL (U+0085), DEL, CR, a newline that
 * starts a fake line, a right-to-left override */
#define EVIL "\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07\x1b[2J\xc2\x9b\x9b\xc2\x85\x7f\r\nFAKE-LINE \xe2\x80\xae"

/* No byte a terminal acts on: only \n and \t among the C0 controls, no DEL, no C1 (as UTF-8 or a
 * lone byte), no bidi override, and the name's newline never starts a line of its own. */
static void assert_terminal_safe(const char *what, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; u[i]; i++) {
        if ((u[i] < 0x20 && u[i] != '\n' && u[i] != '\t') || u[i] == 0x7f)
            fail_msg("%s: raw control byte 0x%02x at %zu: %.200s", what, u[i], i, s + (i > 60 ? i - 60 : 0));
        if (u[i] == 0xc2 && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
            fail_msg("%s: raw C1 control U+00%02X at %zu", what, u[i + 1], i);
        if (u[i] >= 0x80 && u[i] <= 0x9f && (i == 0 || u[i - 1] < 0xc2))
            fail_msg("%s: lone byte 0x%02x at %zu (CSI to an 8-bit terminal)", what, u[i], i);
        if (u[i] == 0xe2 && u[i + 1] == 0x80 && u[i + 2] == 0xae) fail_msg("%s: raw right-to-left override at %zu", what, i);
    }
    if (strstr(s, "\nFAKE-LINE")) fail_msg("%s: a name's newline started a line of its own", what);
}

static void check_run(const char *what, const char *const *argv, int want_rc, const char *must_have)
{
    char *out = NULL, *err = NULL;
    int rc = hu_cli_env(argv, NULL, NULL, &out, &err);
    if (want_rc >= 0 && rc != want_rc) fail_msg("%s: exit %d (want %d): %s", what, rc, want_rc, err);
    char label[128];
    snprintf(label, sizeof label, "%s stdout", what);
    assert_terminal_safe(label, out);
    snprintf(label, sizeof label, "%s stderr", what);
    assert_terminal_safe(label, err);
    if (must_have && !strstr(out, must_have) && !strstr(err, must_have))
        fail_msg("%s: the escaped name ('%s') is not shown: %s%s", what, must_have, out, err);
    free(out);
    free(err);
}

/* ---- core's helper ---- */

static char *esc(const char *s)
{
    fa_buf b;
    fa_buf_init(&b);
    fa_escape_term(&b, s, strlen(s));
    fa_buf_append(&b, "", 0);
    return b.data;
}

static void test_escape_term_shows_every_control_and_keeps_text(void **state)
{
    (void)state;
    char *e = esc(EVIL);
    assert_string_equal(e, "\\x1b]52;c;ZXZpbA==\\x07\\x1b]0;pwned\\x07\\x1b[2J\\u009b\\x9b\\u0085\\x7f\\r\\nFAKE-LINE \\u202e");
    free(e);
    /* plain ASCII, backslashes (escaping twice changes nothing) and non-ASCII text are kept */
    e = esc("conv/1 \\x1b \xc3\xa9 \xe6\xbc\xa2\xe5\xad\x97 \xf0\x9f\x98\x80");
    assert_string_equal(e, "conv/1 \\x1b \xc3\xa9 \xe6\xbc\xa2\xe5\xad\x97 \xf0\x9f\x98\x80");
    char *e2 = esc(e);
    assert_string_equal(e2, e);
    free(e2);
    free(e);
    /* truncated and overlong sequences, surrogates: byte by byte */
    e = esc("a\xe6\xbc" "b\xc0\xaf\xed\xa0\x80");
    assert_string_equal(e, "a\\xe6\\xbcb\\xc0\\xaf\\xed\\xa0\\x80");
    free(e);
    /* the text form keeps the writer's newlines and tabs only */
    fa_buf b;
    fa_buf_init(&b);
    fa_escape_term_text(&b, "a\tb\nc\rd\x1b", 8);
    assert_string_equal(b.data, "a\tb\nc\\rd\\x1b");
    fa_buf_free(&b);
}

static void test_printf_term_escapes_arguments_only(void **state)
{
    (void)state;
    fa_buf b;
    fa_buf_init(&b);
    fa_buf_printf_term(&b, "node '%s':\n%-8s|%5s|%.3s|%c%c|%d %u %lld %zu %x %5.2f %g %%|%*d|%-*s|%.*s|", "a\nb",
                       "x\x1b", "y", "abcdef", 'q', '\x1b', -3, 7u, -9000000000LL, (size_t)12, 255u, 3.14159, 1e-7, 4, 2, 3, "z",
                       2, "\x1b[2J");
    assert_string_equal(b.data, "node 'a\\nb':\nx\\x1b   |    y|abc|q\\x1b|-3 7 -9000000000 12 ff  3.14 1e-07 %|   2|z  |\\x1b[|");
    fa_buf_free(&b);
    /* NULL strings print as printf does in glibc */
    fa_buf_init(&b);
    const char *volatile none = NULL;
    fa_buf_printf_term(&b, "%s|%" PRId64 "|%" PRIu64, none, (int64_t)-5, (uint64_t)UINT64_MAX);
    assert_string_equal(b.data, "(null)|-5|18446744073709551615");
    fa_buf_free(&b);
}

static void test_error_context_and_log_escape_names(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_ctx_error(ctx, FA_ERR_INPUT, "node '%s': bad\n(hint)", EVIL);
    assert_terminal_safe("fa_ctx_error", fa_ctx_errmsg(ctx));
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "bad\n(hint)")); /* the format's own newline stays */
    fa_ctx_wrap(ctx, FA_ERR_INPUT, "%s: ", "model\x1b]0;t\x07.onnx");
    assert_terminal_safe("fa_ctx_wrap", fa_ctx_errmsg(ctx));
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "model\\x1b]0;t\\x07.onnx: node '\\x1b]52"));
    fa_ctx_free(ctx);
}

static char g_logged[4096];
static void log_keep(void *user, int level, const char *msg)
{
    (void)user;
    (void)level;
    snprintf(g_logged, sizeof g_logged, "%s", msg);
}

static void test_log_messages_escape_names(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_ctx_set_log(ctx, log_keep, NULL, FA_LOG_DEBUG);
    fa_log(ctx, FA_LOG_WARN, "kernel %s skipped", EVIL);
    assert_terminal_safe("fa_log", g_logged);
    assert_non_null(strstr(g_logged, "kernel \\x1b]52"));
    fa_ctx_free(ctx);
}

static void test_table_cells_and_lines_escaped(void **state)
{
    (void)state;
    static const fa_table_col cols[] = {{"A", 1, 0, false}, {"B", 1, 0, false}};
    fa_table *t = fa_table_create(cols, 2);
    const char *row[] = {"x\x1b[2J", EVIL};
    fa_table_add_row(t, row);
    fa_table_add_line(t, "error: " EVIL);
    fa_buf b;
    fa_buf_init(&b);
    fa_table_render(t, &b);
    assert_terminal_safe("table", b.data);
    assert_non_null(strstr(b.data, "x\\x1b[2J"));
    fa_buf_free(&b);
    fa_table_free(t);
}

/* OWASP "CSV Injection": a cell starting with = + - @ tab or CR is quoted with a ' in front. */
static void test_csv_formula_cells_neutralised(void **state)
{
    (void)state;
    static const struct { const char *in, *out; } cases[] = {
        {"=HYPERLINK(\"http://x\",\"y\")", "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\""},
        {"+cmd|' /C calc'!A0", "\"'+cmd|' /C calc'!A0\""},
        {"-2+3", "\"'-2+3\""},
        {"@SUM(A1)", "\"'@SUM(A1)\""},
        {"\t=1", "\\t=1"},   /* the tab an escape: no longer a formula's lead */
        {"\r=1", "\\r=1"},
        {"a\x1b]52;c;SGk=\x07" "b", "a\\x1b]52;c;SGk=\\x07b"}, /* OSC 52 (clipboard) */
        {"x\xc2\x9b" "2J\xe2\x80\xae" "y", "x\\u009b2J\\u202ey"}, /* C1 CSI, right-to-left override */
        {"a\nb,c", "\"a\\nb,c\""},
        {"conv=1", "conv=1"},
        {"a,b", "\"a,b\""},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fa_buf b;
        fa_buf_init(&b);
        fa_escape_csv(&b, cases[i].in, strlen(cases[i].in));
        fa_buf_append(&b, "", 0);
        if (strcmp(b.data, cases[i].out)) fail_msg("csv cell %zu: got %s, want %s", i, b.data, cases[i].out);
        fa_buf_free(&b);
    }
}

/* kernels.csv of a stored run: a node named like a formula is written as text. Fails on the main
 * of before (the cell started with '='). */
static void test_kernels_csv_formula_names_neutralised(void **state)
{
    (void)state;
    const char *model = hu_tmp("formula.onnx");
    static const char *const names[] = {"=HYPERLINK(\"http://evil\",\"x\")", "@SUM(1)", "+1", "-1"};
    hu_export_chain(model, 2, 8, 4, names, 4);
    const char *db = hu_tmp("formula.db");
    const char *run[] = {"run", model, "--no-apply", "--iters", "1", "--warmup", "0", "--threads", "1", "--db", db,
                         "--out", hu_tmp("formula-out"), NULL};
    char *err = NULL;
    int rc = hu_cli_env(run, NULL, NULL, NULL, &err);
    if (rc) fail_msg("run: exit %d: %s", rc, err);
    free(err);
    const char *rep[] = {"report", "latest", "--db", db, "-o", hu_tmp("formula-rep"), NULL};
    rc = hu_cli_env(rep, NULL, NULL, NULL, &err);
    if (rc) fail_msg("report: exit %d: %s", rc, err);
    free(err);
    char path[4300];
    snprintf(path, sizeof path, "%s/kernels.csv", hu_tmp("formula-rep"));
    char *csv = hu_slurp(path);
    int cells = 0;
    for (const char *l = csv; l && *l;) {
        const char *nl = strchr(l, '\n');
        /* the first cell of every row: a node name; never a bare or quoted formula */
        if (*l == '=' || *l == '+' || *l == '-' || *l == '@' || (*l == '"' && strchr("=+-@", l[1])))
            fail_msg("kernels.csv row starts a formula: %.80s", l);
        if (!strncmp(l, "\"'", 2)) cells++;
        l = nl ? nl + 1 : NULL;
    }
    if (cells < 4) fail_msg("kernels.csv: %d neutralised cells, want 4 (the names): %s", cells, csv);
    free(csv);
}

/* ---- the command line ---- */

static const char *g_model, *g_db;

static int setup_hostile(void **state)
{
    (void)state;
    g_model = strdup(hu_tmp("hostile.onnx"));
    static const char *const names[] = {"x" EVIL, "t" EVIL, "n" EVIL};
    hu_export_chain(g_model, 4, 16, 6, names, 3);
    g_db = strdup(hu_tmp("hostile.db"));
    return 0;
}

static void test_cli_model_names_escaped_in_every_verb(void **state)
{
    (void)state;
    const char *inspect[] = {"inspect", g_model, NULL};
    check_run("inspect", inspect, 0, "\\x1b]52;c;");
    const char *inspect_json[] = {"inspect", g_model, "--json", NULL};
    check_run("inspect --json", inspect_json, 0, NULL);
    const char *run[] = {"run", g_model, "--iters", "2", "--warmup", "0", "--threads", "1", "--max-clusters", "1",
                         "--db", g_db, "--out", hu_tmp("hostile-out"), NULL};
    check_run("run", run, 0, NULL);
    const char *show[] = {"show", "1", "--db", g_db, NULL};
    check_run("show", show, 0, "\\x1b]52;c;");
    const char *analyze[] = {"analyze", "latest", "--db", g_db, NULL};
    check_run("analyze", analyze, 0, NULL);
    const char *advise[] = {"advise", "latest", "--db", g_db, NULL};
    check_run("advise", advise, 0, "\\x1b]52;c;");
    const char *runs[] = {"runs", "--db", g_db, NULL};
    check_run("runs", runs, 0, NULL);
}

/* Values a shared run database holds (model path, tag, device, error) printed by `runs`, `show`
 * and `gate`. */
static void test_cli_database_values_escaped(void **state)
{
    (void)state;
    const char *db = hu_tmp("dbvals.db");
    const char *run[] = {"run", "zoo:mlp-tiny", "--no-apply", "--iters", "3", "--warmup", "0", "--threads", "1", "--db",
                         db, "--tag", "base", NULL};
    char *err = NULL;
    int rc = hu_cli_env(run, NULL, NULL, NULL, &err);
    if (rc) fail_msg("run: exit %d: %s", rc, err);
    free(err);
    rc = hu_cli_env(run, NULL, NULL, NULL, &err);
    if (rc) fail_msg("run: exit %d: %s", rc, err);
    free(err);
    hu_exec_sql(db, "UPDATE runs SET model_path = 'zoo:mlp' || char(27) || ']52;c;ZXZpbA==' || char(7) || char(10) || "
                    "'FAKE-LINE', device_name = 'cpu' || char(27) || '[2J' || char(155), tag = 'base' || char(27) || "
                    "']0;title' || char(7), host = 'h' || char(13) || char(127);");
    hu_exec_sql(db, "INSERT INTO runs(kind, status, model_path, started_at_ns, error) SELECT kind, 'failed', model_path, "
                    "started_at_ns, 'boom ' || char(27) || '[2J' || char(10) || 'FAKE-LINE' FROM runs LIMIT 1;");
    const char *runs[] = {"runs", "--db", db, NULL};
    check_run("runs", runs, 0, "\\x1b]52;c;");
    const char *runs_json[] = {"runs", "--db", db, "--json", NULL};
    check_run("runs --json", runs_json, 0, NULL);
    const char *show[] = {"show", "1", "--db", db, NULL};
    check_run("show", show, 0, "\\x1b]52;c;");
    const char *gate[] = {"gate", "--db", db, "--baseline", "1", "--candidate", "2", NULL};
    check_run("gate", gate, -1, "\\x1b]52;c;");
    const char *gate_md[] = {"gate", "--db", db, "--baseline", "1", "--candidate", "2", "--markdown", hu_tmp("gate.md"), NULL};
    check_run("gate markdown", gate_md, -1, NULL);
}

/* Error messages: an op type, node and file name with escapes: run and exec refuse it at load;
 * inspect keeps the node opaque and names it in a notice (docs/supported-ops.md), escaped too. */
static void test_cli_error_messages_escape_names(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = fa_graph_create("g");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 13), FA_OK);
    const int64_t dims[1] = {4};
    int x = fa_graph_tensor(g, "x" EVIL);
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 1, dims);
    assert_int_equal(fa_graph_add_input(ctx, g, x), FA_OK);
    const char *in[] = {"x" EVIL}, *out[] = {"y"};
    assert_non_null(fa_graph_add_node(ctx, g, "node" EVIL, "NoSuchOp" EVIL, "", 1, in, 1, out));
    assert_int_equal(fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y")), FA_OK);
    const char *path = hu_tmp("bad\x1b]0;t\x07op.onnx");
    assert_int_equal(fa_onnx_export(ctx, g, path), FA_OK);
    fa_graph_free(g);
    fa_ctx_free(ctx);
    const char *inspect[] = {"inspect", path, NULL};
    check_run("inspect (opaque notice)", inspect, 0, "NoSuchOp\\x1b]52");
    const char *run[] = {"run", path, "--db", hu_tmp("err.db"), NULL};
    check_run("run (error)", run, 1, "NoSuchOp\\x1b]52");
    const char *exec[] = {"exec", path, "--outputs", hu_tmp("err-out"), NULL};
    check_run("exec (error)", exec, 1, NULL);
}

/* A Kineto trace whose kernel, cpu op and device names carry escapes: `import` and `run TRACE`. */
static void test_cli_trace_names_escaped(void **state)
{
    (void)state;
    fa_buf t;
    fa_buf_init(&t);
    fa_buf_puts(&t, "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"GPU\\u001b]0;x\\u0007\"}],\"traceEvents\":[");
    for (int i = 0; i < 12; i++) {
        int ts = 10 + i * 20;
        fa_buf_printf(&t,
                      "%s{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add\\u001b[2J\\nFAKE-LINE\",\"pid\":1,\"tid\":1,\"ts\":%d,"
                      "\"dur\":6,\"args\":{\"Input Dims\":[[64,64],[64,64]],\"Input type\":[\"float\",\"float\"]}},"
                      "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":%d,"
                      "\"dur\":2,\"args\":{\"correlation\":%d}},"
                      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\\u001b]52;c;ZXZpbA==\\u0007\\u009b\\r\\nFAKE-LINE\","
                      "\"pid\":0,\"tid\":7,\"ts\":%d,\"dur\":4,\"args\":{\"correlation\":%d,\"device\":0,\"stream\":7}}",
                      i ? "," : "", ts, ts + 1, 100 + i, i % 2 ? "void at::elementwise_kernel<add>" : "relu_kernel", ts + 4, 100 + i);
    }
    fa_buf_puts(&t, "]}");
    const char *path = hu_tmp("hostile-trace.json");
    fa_ctx *ctx = fa_ctx_create();
    assert_int_equal(fa_write_file_atomic(ctx, path, t.data, t.len), FA_OK);
    fa_ctx_free(ctx);
    fa_buf_free(&t);
    const char *db = hu_tmp("trace.db");
    const char *imp[] = {"import", path, "--db", db, NULL};
    check_run("import", imp, 0, "\\x1b]52;c;");
    const char *run[] = {"run", path, "--db", db, "--out", hu_tmp("trace-out"), NULL};
    check_run("run TRACE", run, 0, NULL);
    const char *show[] = {"show", "latest", "--db", db, NULL};
    check_run("show (trace)", show, 0, NULL);
    const char *advise[] = {"advise", "latest", "--db", db, NULL};
    check_run("advise (trace)", advise, -1, NULL);
    const char *analyze[] = {"analyze", "latest", "--db", db, NULL};
    check_run("analyze (trace)", analyze, -1, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape_term_shows_every_control_and_keeps_text),
        cmocka_unit_test(test_printf_term_escapes_arguments_only),
        cmocka_unit_test(test_error_context_and_log_escape_names),
        cmocka_unit_test(test_log_messages_escape_names),
        cmocka_unit_test(test_table_cells_and_lines_escaped),
        cmocka_unit_test(test_csv_formula_cells_neutralised),
        cmocka_unit_test(test_kernels_csv_formula_names_neutralised),
        cmocka_unit_test_setup(test_cli_model_names_escaped_in_every_verb, setup_hostile),
        cmocka_unit_test(test_cli_database_values_escaped),
        cmocka_unit_test(test_cli_error_messages_escape_names),
        cmocka_unit_test(test_cli_trace_names_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
