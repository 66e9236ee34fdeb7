/* tests/unit/test_reports — every report file of a run whose node, tensor, model and device names
 * hold <script>, quotes, ampersands, backslashes, newlines and non-ASCII text: HTML shows them as
 * text, trace.json / summary.json parse (yajl) and hold them unchanged, graph.dot is accepted by
 * `dot -Tsvg`, kernels.csv round-trips (RFC 4180). Runs without clusters, without analysis, and an
 * unwritable output folder are handled. */
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <yajl/yajl_tree.h>

#include "reports/reports.h"
#include "reports/reports-impl.h" /* white-box: fa_rep_graph's layout counts */
#include "store/store-impl.h" /* white-box: the raw connection (fa_store_db) */
#include "testutil.h"

extern char **environ;

#define N_SCRIPT "<script>alert(1)</script>"
#define N_QUOTE "q\"uote's & amp"
#define N_BACK "back\\slash\nnew line"
#define N_UNI "\xc3\xa9 \xe6\xbc\xa2\xe5\xad\x97" /* é 漢字 */
#define T_SCRIPT "t<script>alert(2)</script>"
#define T_QUOTE "t\"q'&\\"
#define MODEL_NAME "m<odel> \"&\\ \xc3\xa9"
#define DEV_NAME "dev <b>&\"x\" \xe6\xbc\xa2"

static char *slurp(const char *dir, const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    b[got] = 0;
    fclose(f);
    return b;
}

/* x -> Relu N_SCRIPT -> Sigmoid N_QUOTE -> Add(., x) N_BACK -> Neg N_UNI -> y */
static fa_graph *nasty_graph(fa_ctx *ctx, bool fused)
{
    fa_graph *g = fa_graph_create("nasty");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 17), FA_OK);
    g->path = fa_arena_strdup(g->arena, MODEL_NAME);
    int64_t d[2] = {1, 4096};
    int x = fa_graph_tensor(g, "x");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 2, d);
    fa_graph_add_input(ctx, g, x);
    if (!fused) {
        const char *i1[] = {"x"}, *o1[] = {T_SCRIPT}, *i2[] = {T_SCRIPT}, *o2[] = {T_QUOTE};
        assert_non_null(fa_graph_add_node(ctx, g, N_SCRIPT, "Relu", "", 1, i1, 1, o1));
        assert_non_null(fa_graph_add_node(ctx, g, N_QUOTE, "Sigmoid", "", 1, i2, 1, o2));
    } else {
        /* the fused model of cluster 0: one kernel named as applier/fused_graph.c names it */
        const char *i1[] = {"x"}, *o1[] = {T_QUOTE};
        assert_non_null(fa_graph_add_node(ctx, g, "fused_c0", "Sigmoid", "", 1, i1, 1, o1));
    }
    const char *i3[] = {T_QUOTE, "x"}, *o3[] = {"sum\n\xc3\xa9"}, *i4[] = {"sum\n\xc3\xa9"}, *o4[] = {"y"};
    assert_non_null(fa_graph_add_node(ctx, g, N_BACK, "Add", "", 2, i3, 1, o3));
    assert_non_null(fa_graph_add_node(ctx, g, N_UNI, "Neg", "", 1, i4, 1, o4));
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, "y"));
    assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    return g;
}

static void exec_sql(fa_store *st, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(fa_store_db(st), sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) fail_msg("sql failed: %s: %s", err ? err : "?", sql);
}

/* Stores the nasty run (device name, ceilings), optionally a plan with two clusters (one
 * accepted, one refused), why-not, benchmarks and a fused run. Returns the run id. */
static int64_t store_nasty(fa_ctx *ctx, fa_store *st, bool with_plan, bool zero_clusters)
{
    fa_graph *g = nasty_graph(ctx, false);
    int64_t run;
    assert_int_equal(fa_test_store_graph_run(ctx, st, g, 5, &run), FA_OK);
    fa_run_info upd = {0};
    upd.device_name = DEV_NAME;
    upd.threads = 2;
    upd.peak_activation_bytes = 65536;
    assert_int_equal(fa_store_run_update(ctx, st, run, &upd), FA_OK);
    fa_ceiling cs[3] = {
        {"cpu:" DEV_NAME ":2t", "bandwidth", "mem_bw", 10.0, "GB/s", "measured", 1, "test"},
        {"cpu:" DEV_NAME ":2t", "compute", "fp32_peak", 100.0, "GFLOP/s", "table", 1, "test"},
        {"cpu:" DEV_NAME ":2t", "latency", "dispatch", 500.0, "ns", "measured", 1, "test"},
    };
    for (int i = 0; i < 3; i++) assert_int_equal(fa_store_put_ceiling(ctx, st, &cs[i]), FA_OK);
    fa_graph_free(g);
    if (!with_plan) return run;
    char sql[4096];
    snprintf(sql, sizeof sql,
             "INSERT INTO plans(run_id, plan_id, created_at_ns, plan_hash, target, arch, status) VALUES "
             "(%lld, 1, 1, 'abc123', 'cpu', 'sm_90', 'applied');",
             (long long)run);
    exec_sql(st, sql);
    if (zero_clusters) return run;
    /* node ids: 0 Relu, 1 Sigmoid, 2 Add, 3 Neg */
    snprintf(sql, sizeof sql,
             "INSERT INTO clusters(run_id, plan_id, cluster_id, kind, members_json, saved_bytes, saved_launches, recompute_us, "
             "est_saving_us, est_saving_pct, registers, spill_bytes, occupancy, status, reason, measured_saving_us, max_rel_error, "
             "label, basis) VALUES (%lld,1,0,'elementwise-chain','[0,1]',32768,1,0,2.5,10,NULL,NULL,NULL,'accepted','faster by 2 us',"
             "1.5,1e-7,'relu+sigmoid <i>\"&\\','measured medians <b>&</b>'),"
             "(%lld,1,1,'elementwise-chain','[2,3]',32768,1,0,1.0,4,NULL,NULL,NULL,'refused','refused: <script>alert(3)</script> \"q\" & co',NULL,NULL,NULL,NULL);"
             "INSERT INTO why_not(run_id, plan_id, seq, producer, consumer, tensor_id, reason_code, reason) VALUES "
             "(%lld,1,0,1,2,2,'multi-consumer-recompute','x is read by <b>two</b> nodes & \"more\"');",
             (long long)run, (long long)run, (long long)run);
    exec_sql(st, sql);
    for (int i = 0; i < 5; i++) {
        snprintf(sql, sizeof sql,
                 "INSERT INTO benchmarks(run_id, plan_id, subject, cluster_id, iter, latency_ns) VALUES "
                 "(%lld,1,'baseline',-1,%d,%d),(%lld,1,'fused',-1,%d,%d),(%lld,1,'cluster-unfused',0,%d,%d),"
                 "(%lld,1,'cluster-fused',0,%d,%d);",
                 (long long)run, i, 20000 + i * 10, (long long)run, i, 10000 + i * 10, (long long)run, i, 5000 + i,
                 (long long)run, i, 3000 + i);
        exec_sql(st, sql);
    }
    /* the fused model's own trace */
    fa_graph *fg = nasty_graph(ctx, true);
    int64_t frun;
    assert_int_equal(fa_test_store_graph_run(ctx, st, fg, 3, &frun), FA_OK);
    fa_graph_free(fg);
    snprintf(sql, sizeof sql, "UPDATE runs SET kind='fused', tag='fused-of:%lld', peak_activation_bytes=32768 WHERE id=%lld;",
             (long long)run, (long long)frun);
    exec_sql(st, sql);
    return run;
}

static const char *out_dir(const char *name)
{
    return fa_test_path(fa_test_tmpdir(), name);
}

/* ---- tiny RFC 4180 reader: returns the fields of every record ---- */
typedef struct csv_rec { int n; char *f[16]; } csv_rec;
static int csv_parse(const char *s, csv_rec *recs, int max)
{
    int nr = 0;
    const char *p = s;
    while (*p && nr < max) {
        csv_rec *r = &recs[nr++];
        r->n = 0;
        for (;;) {
            fa_buf b;
            fa_buf_init(&b);
            if (*p == '"') {
                p++;
                for (;;) {
                    if (!*p) break;
                    if (*p == '"' && p[1] == '"') { fa_buf_append(&b, "\"", 1); p += 2; }
                    else if (*p == '"') { p++; break; }
                    else fa_buf_append(&b, p++, 1);
                }
            } else
                while (*p && *p != ',' && *p != '\r' && *p != '\n') fa_buf_append(&b, p++, 1);
            if (r->n < 16) r->f[r->n++] = b.data ? b.data : strdup("");
            else fa_buf_free(&b);
            if (*p == ',') { p++; continue; }
            if (*p == '\r') p++;
            if (*p == '\n') p++;
            break;
        }
    }
    return nr;
}

static int run_dot(const char *dot_path, const char *svg_path)
{
    char *argv[] = {"dot", "-Tsvg", (char *)dot_path, "-o", (char *)svg_path, NULL};
    pid_t pid;
    if (posix_spawnp(&pid, "dot", NULL, NULL, argv, environ) != 0) return -1;
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static const char *js(yajl_val v)
{
    const char *s = YAJL_IS_STRING(v) ? v->u.string : NULL;
    return s ? s : "";
}

static bool trace_has_node(yajl_val root, const char *node, int pid)
{
    const char *pe[] = {"traceEvents", NULL};
    yajl_val ev = yajl_tree_get(root, pe, yajl_t_array);
    if (!ev) return false;
    for (size_t i = 0; i < ev->u.array.len; i++) {
        yajl_val e = ev->u.array.values[i];
        const char *pa[] = {"args", "node", NULL}, *pp[] = {"pid", NULL}, *ph[] = {"ph", NULL};
        yajl_val n = yajl_tree_get(e, pa, yajl_t_string), p = yajl_tree_get(e, pp, yajl_t_number),
                 h = yajl_tree_get(e, ph, yajl_t_string);
        if (n && p && h && !strcmp(js(h), "X") && YAJL_GET_INTEGER(p) == pid && !strcmp(js(n), node))
            return true;
    }
    return false;
}

/* HTML text escaping of control characters: C0 (but newline and tab), DEL and the C1 range
 * U+0080-U+009F become U+FFFD; other UTF-8 (a no-break space U+00A0) passes. A kernel name's
 * raw DEL reached report.html's title and tooltips (the attack pass). */
static void test_html_escape_replaces_every_control_character(void **state)
{
    (void)state;
    const char in[] = "a\x7f b\xc2\x85 c\xc2\x9f d\xc2\xa0" "e\x1b[31m\n\tf";
    fa_buf b;
    fa_buf_init(&b);
    fa_escape_html(&b, in, sizeof in - 1);
    fa_buf_append(&b, "", 1);
    assert_string_equal(b.data, "a&#xFFFD; b&#xFFFD; c&#xFFFD; d\xc2\xa0" "e&#xFFFD;[31m\n\tf");
    fa_buf_free(&b);
}

/* Characters no text surface shows as itself — C1, the bidi controls of the Trojan Source list
 * (U+061C, U+200E/F, U+202A-202E, U+2066-2069), U+2028/2029, U+FEFF — on every escaper: HTML and
 * DOT replace them with U+FFFD, JSON writes \uXXXX (the value unchanged for a reader), the
 * terminal \uXXXX. An RLO (U+202E) in a node name reversed the text after it in report.html;
 * U+2028 and raw C1 reached summary.json, plan.json and graph.dot (the second attack pass). */
static void test_disguising_characters_on_every_surface(void **state)
{
    (void)state;
    const char in[] = "x\xe2\x80\xaey\xd8\x9cz\xe2\x80\xa8w\xef\xbb\xbfv\xc2\x9bu\xe2\x81\xa6t\xc3\xa9";
    fa_buf b;
    fa_buf_init(&b);
    fa_escape_html(&b, in, sizeof in - 1);
    fa_buf_append(&b, "", 1);
    assert_string_equal(b.data, "x&#xFFFD;y&#xFFFD;z&#xFFFD;w&#xFFFD;v&#xFFFD;u&#xFFFD;t\xc3\xa9");
    fa_buf_reset(&b);
    fa_escape_json(&b, in, sizeof in - 1);
    fa_buf_append(&b, "", 1);
    assert_string_equal(b.data, "x\\u202ey\\u061cz\\u2028w\\ufeffv\\u009bu\\u2066t\xc3\xa9");
    fa_buf_reset(&b);
    fa_escape_dot(&b, in, sizeof in - 1);
    fa_buf_append(&b, "", 1);
    assert_string_equal(b.data, "x\xef\xbf\xbdy\xef\xbf\xbdz\xef\xbf\xbdw\xef\xbf\xbdv\xef\xbf\xbdu\xef\xbf\xbdt\xc3\xa9");
    fa_buf_reset(&b);
    fa_escape_term(&b, in, sizeof in - 1);
    fa_buf_append(&b, "", 1);
    assert_string_equal(b.data, "x\\u202ey\\u061cz\\u2028w\\ufeffv\\u009bu\\u2066t\xc3\xa9");
    fa_buf_free(&b);
}

static void test_names_are_escaped_for_every_format(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, out_dir("nasty.db"), &st), FA_OK);
    int64_t run = store_nasty(ctx, st, true, false);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", out_dir("rep-nasty/sub"));
    fa_status s = fa_reports_write(ctx, st, run, dir);
    if (s) fail_msg("%s", fa_ctx_errmsg(ctx));

    /* HTML: no raw markup from names, the escaped text is there, our own script only once */
    char *html = slurp(dir, "report.html");
    assert_non_null(html);
    assert_null(strstr(html, "<script>alert"));
    assert_null(strstr(html, "<b>two"));
    assert_null(strstr(html, "<b>&"));
    assert_non_null(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_non_null(strstr(html, "&lt;script&gt;alert(3)&lt;/script&gt;"));
    assert_non_null(strstr(html, "q&quot;uote&#39;s &amp; amp"));
    assert_non_null(strstr(html, "back\\slash\nnew line"));
    assert_non_null(strstr(html, N_UNI));
    assert_non_null(strstr(html, "relu+sigmoid &lt;i&gt;&quot;&amp;\\"));
    assert_non_null(strstr(html, "title=\"measured medians &lt;b&gt;&amp;&lt;/b&gt;\">2.50</td>")); /* basis, escaped */
    const char *p = strstr(html, "<script>");
    assert_non_null(p);
    assert_null(strstr(p + 1, "<script>"));
    assert_non_null(strstr(html, "id=\"roofline-svg\""));
    assert_non_null(strstr(html, "id=\"timeline-svg\""));
    /* fused kernel placed from the fused run; end-to-end speedup from the benchmark medians 20020 / 10020 */
    assert_non_null(strstr(html, "= fused_c0"));
    assert_non_null(strstr(html, "1.998x"));
    free(html);

    /* summary.json parses and holds names unchanged */
    char *sj = slurp(dir, "summary.json");
    char err[256];
    yajl_val root = yajl_tree_parse(sj, err, sizeof err);
    if (!root) fail_msg("summary.json: %s", err);
    const char *pm[] = {"model", NULL}, *pd[] = {"device", NULL}, *ps[] = {"speedup", NULL},
               *pa[] = {"clusters", "accepted", NULL}, *pr[] = {"clusters", "refused_by_advisor", NULL},
               *pb[] = {"baseline", "median_ns", NULL};
    assert_string_equal(js(yajl_tree_get(root, pm, yajl_t_string)), MODEL_NAME);
    assert_string_equal(js(yajl_tree_get(root, pd, yajl_t_string)), DEV_NAME);
    assert_true(YAJL_GET_DOUBLE(yajl_tree_get(root, ps, yajl_t_number)) > 1.99);
    assert_int_equal(YAJL_GET_INTEGER(yajl_tree_get(root, pa, yajl_t_number)), 1);
    assert_int_equal(YAJL_GET_INTEGER(yajl_tree_get(root, pr, yajl_t_number)), 1);
    assert_int_equal((int)YAJL_GET_DOUBLE(yajl_tree_get(root, pb, yajl_t_number)), 20020);
    yajl_tree_free(root);
    free(sj);

    /* trace.json parses; baseline (pid 1) and fused (pid 2) tracks carry the raw names */
    char *tj = slurp(dir, "trace.json");
    root = yajl_tree_parse(tj, err, sizeof err);
    if (!root) fail_msg("trace.json: %s", err);
    assert_true(trace_has_node(root, N_SCRIPT, 1));
    assert_true(trace_has_node(root, N_QUOTE, 1));
    assert_true(trace_has_node(root, N_BACK, 1));
    assert_true(trace_has_node(root, N_UNI, 1));
    assert_true(trace_has_node(root, "fused_c0", 2));
    assert_false(trace_has_node(root, N_SCRIPT, 2));
    yajl_tree_free(root);
    free(tj);

    /* graph.dot: dot accepts it; quotes and backslashes escaped; SVG shows markup as text */
    char dotp[1100], svgp[1100];
    snprintf(dotp, sizeof dotp, "%s/graph.dot", dir);
    snprintf(svgp, sizeof svgp, "%s/dot-check.svg", dir);
    assert_int_equal(run_dot(dotp, svgp), 0);
    char *dot = slurp(dir, "graph.dot");
    assert_non_null(strstr(dot, "q\\\"uote's &amp; amp"));
    assert_non_null(strstr(dot, "back\\\\slash\\nnew line"));
    assert_non_null(strstr(dot, "subgraph cluster_0"));
    assert_non_null(strstr(dot, "subgraph cluster_1"));
    free(dot);
    char *svg = slurp(dir, "graph.svg");
    assert_null(strstr(svg, "<script>alert"));
    assert_non_null(strstr(svg, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_non_null(strstr(svg, N_UNI));
    free(svg);
    svg = slurp(dir, "dot-check.svg");
    assert_null(strstr(svg, "<script>alert"));
    free(svg);

    /* kernels.csv round-trips, its line break written as the terminal's escape (a CSV file is
     * read with cat too: no control character reaches it raw) */
    char *csv = slurp(dir, "kernels.csv");
    csv_rec recs[16];
    int nr = csv_parse(csv, recs, 16);
    assert_int_equal(nr, 5); /* header + 4 ops */
    assert_string_equal(recs[0].f[0], "node");
    assert_null(strchr(N_BACK, '\n') && strstr(csv, N_BACK) ? "raw" : NULL);
    const char *want[] = {N_SCRIPT, N_QUOTE, "back\\slash\\nnew line", N_UNI};
    for (int w = 0; w < 4; w++) {
        bool found = false;
        for (int i = 1; i < nr; i++) found |= recs[i].n == 10 && !strcmp(recs[i].f[0], want[w]);
        if (!found) fail_msg("kernels.csv lost name %d", w);
    }
    for (int i = 0; i < nr; i++)
        for (int k = 0; k < recs[i].n; k++) free(recs[i].f[k]);
    free(csv);

    /* nothing half-written left behind */
    DIR *dd = opendir(dir);
    struct dirent *de;
    while ((de = readdir(dd))) assert_null(strstr(de->d_name, ".tmp"));
    closedir(dd);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* No cluster accepted: the speedup card calls the end-to-end difference noise only when the fused
 * model ran exactly the baseline's kernels; once its trace holds reorder kernels (it ran on the
 * blocked layouts) the difference is the layouts', and the card says so. */
static void test_no_cluster_accepted_noise_only_without_layouts(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, out_dir("layouts.db"), &st), FA_OK);
    int64_t run = store_nasty(ctx, st, true, false);
    exec_sql(st, "UPDATE clusters SET status='rejected-no-gain' WHERE cluster_id=0;");
    const char *dir = out_dir("rep-layouts");
    assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_OK);
    char *html = slurp(dir, "report.html");
    assert_non_null(strstr(html, "the fused model is the unfused one, so this saving of"));
    assert_null(strstr(html, "blocked layouts only"));
    free(html);
    char sql[600];
    for (int i = 0; i < 3; i++) {
        snprintf(sql, sizeof sql,
                 "INSERT INTO kernels(run_id, seq, kind, name, op_type, node, iter, start_ns, end_ns) SELECT id, %d, 0, "
                 "'dnnl:reorder(nChw16c>nchw)', 'Reorder', -1, %d, %d, %d FROM runs WHERE kind='fused';",
                 100000 + i, i, 1000000 * (i + 1), 1000000 * (i + 1) + 800);
        exec_sql(st, sql);
    }
    assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_OK);
    html = slurp(dir, "report.html");
    assert_null(strstr(html, "so this saving of"));
    assert_non_null(strstr(html, "by its blocked layouts only (1 reorder kernels per iteration)"));
    free(html);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* The fused model's Winograd convolutions (docs/runtime.md "Convolution tactics") and layout
 * reorders per iteration: one stored value (the fused trace's kernel names and op types), worded
 * alike on every surface — the figures, report.html's card and summary.json. Names that only
 * contain the word elsewhere do not count. */
static void test_winograd_convolutions_counted_from_the_fused_trace(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, out_dir("winograd.db"), &st), FA_OK);
    int64_t run = store_nasty(ctx, st, true, false);
    char sql[1400];
    for (int i = 0; i < 3; i++) { /* per traced iteration: two Winograd convolutions, one reorder, one decoy */
        snprintf(sql, sizeof sql,
                 "INSERT INTO kernels(run_id, seq, kind, name, op_type, node, iter, start_ns, end_ns) SELECT id, %d, 0, "
                 "'dnnl:convolution+post-ops(nChw16c, winograd)', 'FusedConv', -1, %d, 10, 20 FROM runs WHERE kind='fused';"
                 "INSERT INTO kernels(run_id, seq, kind, name, op_type, node, iter, start_ns, end_ns) SELECT id, %d, 0, "
                 "'dnnl:convolution(nChw16c, winograd)', 'Conv', -1, %d, 30, 40 FROM runs WHERE kind='fused';"
                 "INSERT INTO kernels(run_id, seq, kind, name, op_type, node, iter, start_ns, end_ns) SELECT id, %d, 0, "
                 "'dnnl:reorder(nChw16c>nchw)', 'Reorder', -1, %d, 50, 60 FROM runs WHERE kind='fused';"
                 "INSERT INTO kernels(run_id, seq, kind, name, op_type, node, iter, start_ns, end_ns) SELECT id, %d, 0, "
                 "'winograd (not ours)', 'Conv', -1, %d, 70, 80 FROM runs WHERE kind='fused';",
                 200000 + 4 * i, i, 200001 + 4 * i, i, 200002 + 4 * i, i, 200003 + 4 * i, i);
        exec_sql(st, sql);
    }
    fa_run_figures f;
    assert_int_equal(fa_store_get_run_figures(ctx, st, run, &f), FA_OK);
    assert_int_equal(f.winograd_fused, 2);
    assert_int_equal(f.reorders_fused, 1);
    char kf[128], want[128];
    fa_run_figures_fused_kernels_text(&f, kf, sizeof kf);
    snprintf(want, sizeof want, "%d (1 layout reorder, 2 Winograd convolutions)", f.kernels_fused);
    assert_string_equal(kf, want);
    const char *dir = out_dir("rep-winograd");
    assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_OK);
    char *html = slurp(dir, "report.html");
    assert_non_null(strstr(html, want));
    free(html);
    char *sj = slurp(dir, "summary.json");
    char err[256];
    yajl_val root = yajl_tree_parse(sj, err, sizeof err);
    free(sj);
    if (!root) fail_msg("summary.json: %s", err);
    const char *pw[] = {"kernels_per_iteration", "fused_winograd", NULL}, *pr[] = {"kernels_per_iteration", "fused_reorders", NULL};
    yajl_val w = yajl_tree_get(root, pw, yajl_t_number), r = yajl_tree_get(root, pr, yajl_t_number);
    assert_true(w && YAJL_GET_INTEGER(w) == 2);
    assert_true(r && YAJL_GET_INTEGER(r) == 1);
    yajl_tree_free(root);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

static void test_plan_with_zero_clusters_reports_nothing_to_fuse(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, out_dir("zero.db"), &st), FA_OK);
    int64_t run = store_nasty(ctx, st, true, true);
    const char *dir = out_dir("rep-zero");
    assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_OK);
    char *html = slurp(dir, "report.html");
    assert_non_null(strstr(html, "The plan has no clusters"));
    assert_non_null(strstr(html, "not measured"));
    free(html);
    char *sj = slurp(dir, "summary.json");
    char err[256];
    yajl_val root = yajl_tree_parse(sj, err, sizeof err);
    assert_non_null(root);
    const char *pa[] = {"clusters", "accepted", NULL}, *pf[] = {"fused", NULL};
    assert_int_equal(YAJL_GET_INTEGER(yajl_tree_get(root, pa, yajl_t_number)), 0);
    assert_true(YAJL_IS_NULL(yajl_tree_get(root, pf, yajl_t_any)));
    yajl_tree_free(root);
    free(sj);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* Issue 36 in the report, from the database alone: the calibration table names the term of the
 * prediction whose error explains the misses (cluster 0: predicted 2.5 us = members 4.0 + dispatch
 * 1.5 - fused 3.0, measured 1.5 us; the fused side as predicted, so the unfused side was
 * overpredicted by about the dispatch term), and the predicted saving carries its kind's stored
 * spread where one is stored (none on cluster 1). */
static void test_calibration_names_the_term_and_quotes_the_spread(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, out_dir("calib-terms.db"), &st), FA_OK);
    int64_t run = store_nasty(ctx, st, true, false);
    char sql[600];
    snprintf(sql, sizeof sql,
             "UPDATE clusters SET pred_members_us=4.0, pred_dispatch_us=1.5, pred_fused_us=3.0, meas_unfused_us=5.002, "
             "meas_fused_us=3.002, est_spread_pct=35, est_spread_n=12 WHERE run_id=%lld AND cluster_id=0;",
             (long long)run);
    exec_sql(st, sql);
    const char *dir = out_dir("rep-calib-terms");
    assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_OK);
    char *html = slurp(dir, "report.html");
    assert_non_null(strstr(html, "<th>term missing most</th>"));
    assert_non_null(strstr(html, "<td>dispatch (1 of 1 misses)</td>"));
    assert_non_null(strstr(html, ">2.50 \xc2\xb1 35% (12 past elementwise-chain clusters on this machine)</td>"));
    assert_null(strstr(html, "1.00 \xc2\xb1"));
    free(html);
    /* a prediction whose own interval (its probe's pairs, schema v13) reaches 0: "about 0" with it */
    snprintf(sql, sizeof sql, "UPDATE clusters SET est_lo_us=-0.5, est_hi_us=2.0 WHERE run_id=%lld AND cluster_id=1;",
             (long long)run);
    exec_sql(st, sql);
    assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_OK);
    html = slurp(dir, "report.html");
    assert_non_null(strstr(html, ">1.00 (about 0 by its probe&#39;s pairs: from a loss of 0.5 us to a saving of 2.0 us)</td>"));
    free(html);
    /* the same miss without stored terms (a plan before schema v9): said so, no term guessed */
    snprintf(sql, sizeof sql, "UPDATE clusters SET pred_members_us=NULL WHERE run_id=%lld AND cluster_id=0;", (long long)run);
    exec_sql(st, sql);
    assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_OK);
    html = slurp(dir, "report.html");
    assert_non_null(strstr(html, ">terms not stored</td>"));
    free(html);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

static void test_run_without_analysis_or_plan_says_not_measured(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, out_dir("bare.db"), &st), FA_OK);
    fa_graph *g = nasty_graph(ctx, false);
    int64_t run;
    assert_int_equal(fa_test_store_graph_run(ctx, st, g, 3, &run), FA_OK); /* no device, no ceilings */
    fa_graph_free(g);
    const char *dir = out_dir("rep-bare");
    assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_OK);
    char *html = slurp(dir, "report.html");
    assert_non_null(strstr(html, "No fusion plan stored for this run: not measured"));
    assert_non_null(strstr(html, "No analysis stored for this run"));
    assert_non_null(strstr(html, "device ceilings not measured"));
    assert_non_null(strstr(html, "not measured (no fused run stored"));
    free(html);
    char *sj = slurp(dir, "summary.json");
    char err[256];
    yajl_val root = yajl_tree_parse(sj, err, sizeof err);
    assert_non_null(root);
    const char *pc[] = {"clusters", NULL}, *ps[] = {"speedup", NULL}, *pb[] = {"baseline", "samples", NULL};
    assert_true(YAJL_IS_NULL(yajl_tree_get(root, pc, yajl_t_any)));
    assert_true(YAJL_IS_NULL(yajl_tree_get(root, ps, yajl_t_any)));
    assert_int_equal(YAJL_GET_INTEGER(yajl_tree_get(root, pb, yajl_t_number)), 3);
    yajl_tree_free(root);
    free(sj);
    for (int i = 0; fa_report_files[i]; i++) {
        char *f = slurp(dir, fa_report_files[i]);
        if (!f) fail_msg("%s missing", fa_report_files[i]);
        assert_true(strlen(f) > 0);
        free(f);
    }
    fa_store_close(st);
    fa_ctx_free(ctx);
}

static void test_unwritable_out_dir_is_an_error_naming_it(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, out_dir("unwritable.db"), &st), FA_OK);
    int64_t run = store_nasty(ctx, st, false, false);
    /* a regular file in the way: mkdir fails with ENOTDIR even for root */
    const char *blocker = out_dir("blocker");
    FILE *f = fopen(blocker, "w");
    fputs("x", f);
    fclose(f);
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/reports", blocker);
    assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_ERR_IO);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), blocker));
    /* a missing run names the run */
    assert_int_equal(fa_reports_write(ctx, st, 9999, out_dir("rep-none")), FA_ERR_INPUT);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "9999"));
    struct stat sb;
    assert_int_not_equal(stat(out_dir("rep-none"), &sb), 0); /* nothing created for a failed run */
    fa_store_close(st);
    fa_ctx_free(ctx);
}


/* n_blocks x (chain of `chain` Relu nodes, then a diamond Neg/Sigmoid -> Add): 1 + chain + 3 nodes per block */
static fa_graph *big_graph(fa_ctx *ctx, int n_blocks, int chain)
{
    fa_graph *g = fa_graph_create("big");
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 17), FA_OK);
    g->path = fa_arena_strdup(g->arena, "big");
    int64_t d[2] = {1, 8};
    int x = fa_graph_tensor(g, "t0");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 2, d);
    fa_graph_add_input(ctx, g, x);
    int t = 0;
    char in[32], out[32], nm[32], a[32], b[32];
    for (int k = 0; k < n_blocks; k++) {
        for (int c = 0; c < chain; c++) {
            snprintf(in, sizeof in, "t%d", t);
            snprintf(out, sizeof out, "t%d", ++t);
            snprintf(nm, sizeof nm, "relu%d", t);
            const char *i1[] = {in}, *o1[] = {out};
            assert_non_null(fa_graph_add_node(ctx, g, nm, "Relu", "", 1, i1, 1, o1));
        }
        snprintf(in, sizeof in, "t%d", t);
        snprintf(a, sizeof a, "a%d", k);
        snprintf(b, sizeof b, "b%d", k);
        snprintf(out, sizeof out, "t%d", ++t);
        const char *i1[] = {in}, *oa[] = {a}, *ob[] = {b}, *i3[] = {a, b}, *o3[] = {out};
        snprintf(nm, sizeof nm, "neg%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Neg", "", 1, i1, 1, oa));
        snprintf(nm, sizeof nm, "sig%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Sigmoid", "", 1, i1, 1, ob));
        snprintf(nm, sizeof nm, "add%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Add", "", 2, i3, 1, o3));
    }
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, out));
    assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    return g;
}

static int count_str(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* 1200 live nodes: each accepted cluster (pairs of Relus) is drawn as one node, no subgraphs. */
static void test_large_graph_collapses_accepted_clusters(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, out_dir("big1.db"), &st), FA_OK);
    fa_graph *g = big_graph(ctx, 12, 96); /* 12 x (96 + 3) = 1188 nodes */
    int64_t run;
    assert_int_equal(fa_test_store_graph_run(ctx, st, g, 1, &run), FA_OK);
    fa_graph_free(g);
    fa_buf sql;
    fa_buf_init(&sql);
    fa_buf_printf(&sql, "INSERT INTO plans(run_id, plan_id, created_at_ns, status) VALUES (%lld, 1, 1, 'applied');", (long long)run);
    /* node ids: block k starts at 99k; Relus 99k .. 99k+95; pair them */
    for (int k = 0; k < 12; k++)
        for (int c = 0; c < 96; c += 2)
            fa_buf_printf(&sql, "INSERT INTO clusters(run_id, plan_id, cluster_id, kind, members_json, status) VALUES "
                                "(%lld,1,%d,'elementwise-chain','[%d,%d]','accepted');",
                          (long long)run, k * 48 + c / 2, 99 * k + c, 99 * k + c + 1);
    exec_sql(st, sql.data);
    fa_buf_free(&sql);
    const char *dir = out_dir("rep-big1");
    uint64_t t0 = fa_now_ns();
    if (fa_reports_write(ctx, st, run, dir)) fail_msg("%s", fa_ctx_errmsg(ctx));
    printf("1188-node graph with 576 accepted clusters: reports in %.2f s\n", (fa_now_ns() - t0) / 1e9);
    char *dot = slurp(dir, "graph.dot");
    assert_null(strstr(dot, "subgraph cluster_"));
    assert_int_equal(count_str(dot, "ops (accepted)"), 576);
    free(dot);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* 1636 live nodes and no plan: above 1500 drawn nodes linear chains collapse; the diamonds stay. */
static void test_huge_graph_renders_top_level_structure(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, out_dir("big2.db"), &st), FA_OK);
    fa_graph *g = big_graph(ctx, 4, 406); /* 4 x (406 + 3) = 1636 nodes */
    int64_t run;
    assert_int_equal(fa_test_store_graph_run(ctx, st, g, 1, &run), FA_OK);
    fa_graph_free(g);
    const char *dir = out_dir("rep-big2");
    uint64_t t0 = fa_now_ns();
    if (fa_reports_write(ctx, st, run, dir)) fail_msg("%s", fa_ctx_errmsg(ctx));
    printf("1636-node graph: reports in %.2f s\n", (fa_now_ns() - t0) / 1e9);
    char *dot = slurp(dir, "graph.dot");
    /* chains: relu1..406 (block 0 head), then per later block add(k-1)+relus; neg/sig stay alone */
    int chains = count_str(dot, "ops (chain)");
    assert_true(chains >= 4 && chains <= 8);
    assert_int_equal(count_str(dot, "\\nNeg"), 4);
    assert_int_equal(count_str(dot, "\\nSigmoid"), 4);
    free(dot);
    char *svg = slurp(dir, "graph.svg");
    assert_non_null(strstr(svg, "<svg"));
    free(svg);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

static double summary_e2e(const char *dir)
{
    char *sj = slurp(dir, "summary.json");
    char err[256];
    yajl_val root = yajl_tree_parse(sj, err, sizeof err);
    free(sj);
    if (!root) fail_msg("summary.json: %s", err);
    const char *pe[] = {"e2e_max_rel_error", NULL};
    yajl_val v = yajl_tree_get(root, pe, yajl_t_any);
    double d = YAJL_IS_NUMBER(v) ? YAJL_GET_DOUBLE(v) : -1;
    yajl_tree_free(root);
    return d;
}

/* The end-to-end error (measured only by the live run) comes from the applied plan in the database
 * alone: a summary.json already in the folder is never read back, of this run or another (reports
 * own the file and write it once). */
static void test_e2e_error_from_database_never_from_a_summary_in_the_folder(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, out_dir("e2e.db"), &st), FA_OK);
    int64_t run = store_nasty(ctx, st, false, false);
    const char *dir = out_dir("rep-e2e");
    mkdir(dir, 0755);
    char path[1100], text[256];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    snprintf(text, sizeof text, "{\"schema\":\"fuse-advise.summary/1\",\"run_id\":%lld,\"e2e_max_rel_error\":1.5e-07}", (long long)run + 1);
    assert_int_equal(fa_write_file_atomic(ctx, path, text, strlen(text)), FA_OK);
    assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_OK);
    assert_true(summary_e2e(dir) < 0); /* another run's value is not taken */
    snprintf(text, sizeof text, "{\"schema\":\"fuse-advise.summary/1\",\"run_id\":%lld,\"e2e_max_rel_error\":1.5e-07}", (long long)run);
    assert_int_equal(fa_write_file_atomic(ctx, path, text, strlen(text)), FA_OK);
    assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_OK);
    assert_true(summary_e2e(dir) < 0); /* nor this run's: the database has no end-to-end error */
    /* stored on the applied plan (as `run` does): the database wins over any summary.json */
    fa_plan_e2e_row e2e = {2.5e-6, FA_E2E_WIN};
    assert_int_not_equal(fa_store_set_plan_e2e(ctx, st, run, 1, &e2e), FA_OK); /* no plan yet */
    fa_ctx_clear(ctx);
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO plans(run_id, plan_id, created_at_ns, status) VALUES (%lld, 1, 1, 'applied');",
             (long long)run);
    exec_sql(st, sql);
    assert_int_equal(fa_store_set_plan_e2e(ctx, st, run, 1, &e2e), FA_OK);
    char other[1100];
    snprintf(other, sizeof other, "%s-other", dir);
    assert_int_equal(fa_reports_write(ctx, st, run, other), FA_OK); /* a folder without summary.json */
    assert_true(summary_e2e(other) > 2.49e-6 && summary_e2e(other) < 2.51e-6);
    assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_OK);
    assert_true(summary_e2e(dir) > 2.49e-6 && summary_e2e(dir) < 2.51e-6);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* The applier's end-to-end verdict comes back from the database alone: a plan stored as a LOSS
 * is one in summary.json and report.html even where the medians' ratio is above 1 (inside the
 * paired noise), and is never coloured as a win; a WIN is. */
static void test_e2e_loss_verdict_from_database_never_shown_as_a_win(void **state)
{
    (void)state;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    assert_int_equal(fa_store_open(ctx, out_dir("verdict.db"), &st), FA_OK);
    int64_t run = store_nasty(ctx, st, true, false); /* medians 20.02 us -> 10.02 us: 1.998x */
    const char *dir = out_dir("rep-verdict");
    assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_OK);
    char *sj = slurp(dir, "summary.json"), *html = slurp(dir, "report.html");
    assert_non_null(strstr(sj, "\"e2e_verdict\":null")); /* not recorded: not claimed either way */
    assert_non_null(strstr(sj, "\"timings_noisy\":")); /* fa_run_figures_noisy's word on the same figures */
    assert_null(strstr(html, "End-to-end verdict"));
    free(sj);
    free(html);
    const struct { fa_e2e_verdict v; const char *json, *card, *speedup; } cases[] = {
        {FA_E2E_LOSS, "\"e2e_verdict\":\"loss\"", "<div class=\"v bad\">LOSS</div>", "<div class=\"v bad\">1.998x</div>"},
        {FA_E2E_WIN, "\"e2e_verdict\":\"win\"", "<div class=\"v good\">win</div>", "<div class=\"v good\">1.998x</div>"},
        {FA_E2E_MISMATCH, "\"e2e_verdict\":\"mismatch\"", "<div class=\"v bad\">MISMATCH</div>", "<div class=\"v bad\">1.998x</div>"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fa_plan_e2e_row e2e = {1e-7, cases[k].v};
        assert_int_equal(fa_store_set_plan_e2e(ctx, st, run, 1, &e2e), FA_OK);
        assert_int_equal(fa_reports_write(ctx, st, run, dir), FA_OK);
        sj = slurp(dir, "summary.json");
        html = slurp(dir, "report.html");
        if (!strstr(sj, cases[k].json)) fail_msg("summary.json lacks %s: %s", cases[k].json, sj);
        if (!strstr(html, cases[k].card)) fail_msg("report.html lacks %s", cases[k].card);
        if (!strstr(html, cases[k].speedup)) fail_msg("report.html lacks %s", cases[k].speedup);
        free(sj);
        free(html);
    }
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* One noise rule for every surface (fa_run_figures_noisy): a benchmark side whose IQR exceeds 25 %
 * of its median, or the baseline's benchmark median more than 25 % from its traced iteration;
 * quiet timings are not noisy, and a run with no benchmark is never called noisy (summary.json
 * null). A loaded machine's regnet_x_400mf read "a WIN ... baseline 18.150 ms (IQR 14.268)". */
static void test_noisy_timings_one_rule(void **state)
{
    (void)state;
    fa_run_figures f;
    memset(&f, 0, sizeof f);
    f.traced_iter_ns = NAN;
    assert_false(fa_run_figures_noisy(&f)); /* not benchmarked */
    f.bench_baseline = (fa_sample_stats){.n = 10, .median_ns = 10e6, .p25_ns = 9.8e6, .p75_ns = 10.3e6};
    f.bench_fused = (fa_sample_stats){.n = 10, .median_ns = 8e6, .p25_ns = 7.9e6, .p75_ns = 8.2e6};
    assert_false(fa_run_figures_noisy(&f));
    f.traced_iter_ns = 10.5e6;
    assert_false(fa_run_figures_noisy(&f));
    f.traced_iter_ns = 7.9e6; /* the benchmark 1.27x the traced run */
    assert_true(fa_run_figures_noisy(&f));
    f.traced_iter_ns = 13e6; /* 0.77x */
    assert_true(fa_run_figures_noisy(&f));
    f.traced_iter_ns = NAN;
    f.bench_baseline = (fa_sample_stats){.n = 10, .median_ns = 18.15e6, .p25_ns = 3.8e6, .p75_ns = 18.07e6};
    assert_true(fa_run_figures_noisy(&f));
    f.bench_baseline = (fa_sample_stats){.n = 10, .median_ns = 10e6, .p25_ns = 9.8e6, .p75_ns = 10.3e6};
    f.bench_fused = (fa_sample_stats){.n = 10, .median_ns = 8e6, .p25_ns = 6e6, .p75_ns = 8.5e6};
    assert_true(fa_run_figures_noisy(&f));
}

/* The one JSON value writer (core): escaping, NULL as null or "", non-finite numbers as null. */
static void test_json_writer_escapes_and_writes_null_for_missing_and_non_finite(void **state)
{
    (void)state;
    fa_buf b;
    fa_buf_init(&b);
    fa_json_str(&b, "a\"b\\c\n\x01");
    fa_buf_puts(&b, ",");
    fa_json_str(&b, NULL);
    fa_buf_puts(&b, ",");
    fa_json_str_or_empty(&b, NULL);
    fa_buf_puts(&b, ",");
    fa_json_num(&b, 1.0 / 3.0, 6);
    fa_buf_puts(&b, ",");
    fa_json_num(&b, NAN, 6);
    fa_buf_puts(&b, ",");
    fa_json_num(&b, INFINITY, 9);
    fa_buf_puts(&b, ",");
    fa_json_num(&b, 2.5e-6, 9);
    assert_string_equal(b.data, "\"a\\\"b\\\\c\\n\\u0001\",null,\"\",0.333333,null,null,2.5e-06");
    fa_buf_free(&b);
}

/* An empty graph NAME (opset 17) with its one input h0[1, 8]: where the layered test graphs start. */
static fa_graph *layers_graph_begin(fa_ctx *ctx, const char *name)
{
    fa_graph *g = fa_graph_create(name);
    assert_int_equal(fa_graph_set_opset(ctx, g, "", 17), FA_OK);
    g->path = fa_arena_strdup(g->arena, name);
    int64_t d[2] = {1, 8};
    int x = fa_graph_tensor(g, "h0");
    fa_tensor_set_shape(g->tensors[x], FA_DTYPE_FLOAT, 2, d);
    fa_graph_add_input(ctx, g, x);
    return g;
}

/* n_layers x (Relu, Relu, Relu, then Add of the chain and Neg(mask)), with mask = Sigmoid(x) read
 * by every layer: the attention-mask shape of a transformer, a node whose consumers span the depth. */
static fa_graph *deep_graph(fa_ctx *ctx, int n_layers)
{
    fa_graph *g = layers_graph_begin(ctx, "deep");
    {
        const char *i1[] = {"h0"}, *o1[] = {"mask"};
        assert_non_null(fa_graph_add_node(ctx, g, "mask", "Sigmoid", "", 1, i1, 1, o1));
    }
    char h[32], a[32], b[32], c[32], m[32], nm[32], out[32];
    for (int k = 0; k < n_layers; k++) {
        snprintf(h, sizeof h, "h%d", k);
        snprintf(a, sizeof a, "a%d", k);
        snprintf(b, sizeof b, "b%d", k);
        snprintf(c, sizeof c, "c%d", k);
        snprintf(m, sizeof m, "m%d", k);
        snprintf(out, sizeof out, "h%d", k + 1);
        const char *ih[] = {h}, *oa[] = {a}, *ia[] = {a}, *ob[] = {b}, *ib[] = {b}, *oc[] = {c};
        const char *im[] = {"mask"}, *om[] = {m}, *iadd[] = {c, m}, *oo[] = {out};
        snprintf(nm, sizeof nm, "relu_a%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Relu", "", 1, ih, 1, oa));
        snprintf(nm, sizeof nm, "relu_b%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Relu", "", 1, ia, 1, ob));
        snprintf(nm, sizeof nm, "relu_c%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Relu", "", 1, ib, 1, oc));
        snprintf(nm, sizeof nm, "neg%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Neg", "", 1, im, 1, om));
        snprintf(nm, sizeof nm, "add%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Add", "", 2, iadd, 1, oo));
    }
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, out));
    assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    return g;
}

/* g (made by make for n layers) stored as a run in STEM<n>.db and drawn: dot and svg filled (the
 * caller frees them), *gs the layout's counts, printed. */
static void draw_layers(fa_graph *(*make)(fa_ctx *, int), const char *stem, int n, fa_buf *dot, fa_buf *svg,
                        fa_rep_graph_stats *gs)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    char name[64];
    snprintf(name, sizeof name, "%s%d.db", stem, n);
    assert_int_equal(fa_store_open(ctx, out_dir(name), &st), FA_OK);
    fa_graph *g = make(ctx, n);
    int64_t run;
    assert_int_equal(fa_test_store_graph_run(ctx, st, g, 1, &run), FA_OK);
    fa_graph_free(g);
    fa_rep *r = NULL;
    if (fa_rep_load(ctx, st, run, &r)) fail_msg("%s", fa_ctx_errmsg(ctx));
    fa_buf_init(dot);
    fa_buf_init(svg);
    if (fa_rep_graph(ctx, r, dot, svg, gs)) fail_msg("%s", fa_ctx_errmsg(ctx));
    printf("%s, %d layers: %d nodes drawn, %d edges, %d references, %d ranks, %ld virtual nodes\n", stem, n,
           gs->drawn_nodes, gs->drawn_edges, gs->fanout_refs, gs->ranks, gs->virtual_nodes);
    fa_rep_free(r);
    fa_store_close(st);
    fa_ctx_free(ctx);
}

/* graph.svg's layout work grows linearly with depth: the ranks dot lays out plus the virtual nodes
 * it places on every rank an edge crosses (read from graphviz after layout: counts, not times).
 * Drawn as edges, the mask's 12 / 24 / 48 edges span the whole depth: O(L^2) virtual nodes, the
 * cause of a 24-layer GPT-2's 41 s layout. Each layer gets a "from mask" box instead. */
static void test_deep_graph_layout_work_grows_linearly(void **state)
{
    (void)state;
    const int layers[3] = {12, 24, 48};
    long work[3];
    bool drawn_ok[3];
    for (int i = 0; i < 3; i++) {
        fa_buf dot, svg;
        fa_rep_graph_stats gs;
        draw_layers(deep_graph, "deep", layers[i], &dot, &svg, &gs);
        work[i] = gs.ranks + gs.virtual_nodes;
        char consumers[64];
        snprintf(consumers, sizeof consumers, "%d far consumers", layers[i] - 1);
        /* each layer but the first (its edge kept: the nearest consumer) has its reference box,
         * the mask says how many, and nothing is lost: every graph node is drawn (checked after
         * the work, which is what this test is about) */
        drawn_ok[i] = gs.fanout_refs == layers[i] - 1 && count_str(dot.data, "label=\"from mask\"") == layers[i] - 1 &&
                      strstr(dot.data, consumers) && strstr(svg.data, "from mask") &&
                      count_str(dot.data, "Relu \xc2\xb7") == 3 * layers[i];
        fa_buf_free(&dot);
        fa_buf_free(&svg);
        /* twice the layers, at most 2.2x the work (quadratic growth gives ~4x) */
        if (i > 0) assert_true(work[i] * 10 <= work[i - 1] * 22);
    }
    for (int i = 0; i < 3; i++) assert_true(drawn_ok[i]);
}

/* n two-input Adds, each reading the two outputs before it: every node has two predecessors and
 * two successors, so no chain merges and n nodes stay drawn. */
static fa_graph *braid_graph(fa_ctx *ctx, int n)
{
    fa_graph *g = layers_graph_begin(ctx, "braid");
    char a[32], b[32], o[32], nm[32];
    {
        const char *i1[] = {"h0"}, *o1[] = {"h1"};
        assert_non_null(fa_graph_add_node(ctx, g, "r0", "Relu", "", 1, i1, 1, o1));
    }
    for (int k = 2; k <= n; k++) {
        snprintf(a, sizeof a, "h%d", k - 1);
        snprintf(b, sizeof b, "h%d", k - 2);
        snprintf(o, sizeof o, "h%d", k);
        snprintf(nm, sizeof nm, "add%d", k);
        const char *in[] = {a, b}, *out[] = {o};
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Add", "", 2, in, 1, out));
    }
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, o));
    assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    return g;
}

/* A graph whose layout would be past FA_REP_LAYOUT_WORK_MAX (a 6,000-node braid: dot's network
 * simplex took 32 s, 20,000 nodes past five minutes) is not laid out: graph.svg says why and how
 * to draw it, graph.dot holds every node; a 300-node braid is drawn as before. */
static void test_graph_too_large_to_lay_out_is_not_laid_out(void **state)
{
    (void)state;
    fa_buf dot, svg;
    fa_rep_graph_stats gs;
    draw_layers(braid_graph, "braid", 6000, &dot, &svg, &gs);
    assert_true(gs.layout_skipped);
    assert_true(gs.layout_work_estimate > 20000);
    assert_non_null(strstr(svg.data, "graph.svg not drawn"));
    assert_non_null(strstr(svg.data, "dot -Tsvg graph.dot"));
    assert_int_equal(count_str(dot.data, "\\nAdd"), 5999);
    fa_buf_free(&dot);
    fa_buf_free(&svg);
    draw_layers(braid_graph, "braid", 300, &dot, &svg, &gs);
    assert_false(gs.layout_skipped);
    assert_null(strstr(svg.data, "not drawn"));
    assert_true(gs.drawn_nodes >= 300);
    fa_buf_free(&dot);
    fa_buf_free(&svg);
}

/* n_layers x a BERT layer's shape: LN = Sigmoid(h) feeds Q, K, V (Relu each), their Sum, four
 * more ops, and the residual Add(LN, ...) six levels below Q: the LayerNorm output is a fan-out
 * node (4 consumers more than 4 levels apart) inside every layer. */
static fa_graph *bert_like_graph(fa_ctx *ctx, int n_layers)
{
    fa_graph *g = layers_graph_begin(ctx, "bertlike");
    char t[10][32], nm[32];
    for (int k = 0; k < n_layers; k++) {
        const char *stem[10] = {"h", "ln", "q", "k", "v", "s", "r1", "r2", "r3", "r4"};
        for (int j = 0; j < 10; j++) snprintf(t[j], sizeof t[j], "%s%d", stem[j], k);
        char out[32];
        snprintf(out, sizeof out, "h%d", k + 1);
        const char *ih[] = {t[0]}, *oln[] = {t[1]}, *iln[] = {t[1]}, *oq[] = {t[2]}, *ok[] = {t[3]}, *ov[] = {t[4]};
        const char *isum[] = {t[2], t[3], t[4]}, *os[] = {t[5]}, *is[] = {t[5]}, *or1[] = {t[6]}, *ir1[] = {t[6]};
        const char *or2[] = {t[7]}, *ir2[] = {t[7]}, *or3[] = {t[8]}, *ir3[] = {t[8]}, *or4[] = {t[9]};
        const char *ires[] = {t[1], t[9]}, *oo[] = {out};
        snprintf(nm, sizeof nm, "ln%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Sigmoid", "", 1, ih, 1, oln));
        snprintf(nm, sizeof nm, "q%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Relu", "", 1, iln, 1, oq));
        snprintf(nm, sizeof nm, "k%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Relu", "", 1, iln, 1, ok));
        snprintf(nm, sizeof nm, "v%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Relu", "", 1, iln, 1, ov));
        snprintf(nm, sizeof nm, "sum%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Sum", "", 3, isum, 1, os));
        snprintf(nm, sizeof nm, "r1_%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Relu", "", 1, is, 1, or1));
        snprintf(nm, sizeof nm, "r2_%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Tanh", "", 1, ir1, 1, or2));
        snprintf(nm, sizeof nm, "r3_%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Relu", "", 1, ir2, 1, or3));
        snprintf(nm, sizeof nm, "r4_%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Tanh", "", 1, ir3, 1, or4));
        snprintf(nm, sizeof nm, "res%d", k);
        assert_non_null(fa_graph_add_node(ctx, g, nm, "Add", "", 2, ires, 1, oo));
    }
    char last[32];
    snprintf(last, sizeof last, "h%d", n_layers);
    fa_graph_add_output(ctx, g, fa_graph_find_tensor(g, last));
    assert_int_equal(fa_graph_prepare(ctx, g, NULL), FA_OK);
    return g;
}

/* A fan-out node inside every layer (a BERT LayerNorm feeding Q, K, V and the residual Add) keeps
 * its edges to the near consumers: the drawing stays one chain of layers, its ranks growing with
 * depth. With every edge a reference each layer was a component of its own, laid side by side
 * (constant ranks, ever wider): a 24-layer BERT's layout took 3.3x the 12-layer one's. */
static void test_fanout_inside_a_layer_keeps_the_layers_connected(void **state)
{
    (void)state;
    const int layers[2] = {12, 24};
    int ranks[2];
    for (int i = 0; i < 2; i++) {
        fa_buf dot, svg;
        fa_rep_graph_stats gs;
        draw_layers(bert_like_graph, "bertlike", layers[i], &dot, &svg, &gs);
        ranks[i] = gs.ranks;
        assert_int_equal(gs.fanout_refs, layers[i]); /* the residual edge of each layer, nothing else */
        assert_int_equal(count_str(dot.data, "label=\"from ln"), layers[i]);
        fa_buf_free(&dot);
        fa_buf_free(&svg);
    }
    assert_true(ranks[0] >= 6 * layers[0]); /* a chain: every layer's levels stacked */
    assert_true(ranks[1] * 10 >= ranks[0] * 19);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_html_escape_replaces_every_control_character),
        cmocka_unit_test(test_disguising_characters_on_every_surface),
        cmocka_unit_test(test_names_are_escaped_for_every_format),
        cmocka_unit_test(test_no_cluster_accepted_noise_only_without_layouts),
        cmocka_unit_test(test_plan_with_zero_clusters_reports_nothing_to_fuse),
        cmocka_unit_test(test_calibration_names_the_term_and_quotes_the_spread),
        cmocka_unit_test(test_run_without_analysis_or_plan_says_not_measured),
        cmocka_unit_test(test_unwritable_out_dir_is_an_error_naming_it),
        cmocka_unit_test(test_e2e_error_from_database_never_from_a_summary_in_the_folder),
        cmocka_unit_test(test_e2e_loss_verdict_from_database_never_shown_as_a_win),
        cmocka_unit_test(test_noisy_timings_one_rule),
        cmocka_unit_test(test_json_writer_escapes_and_writes_null_for_missing_and_non_finite),
        cmocka_unit_test(test_large_graph_collapses_accepted_clusters),
        cmocka_unit_test(test_huge_graph_renders_top_level_structure),
        cmocka_unit_test(test_deep_graph_layout_work_grows_linearly),
        cmocka_unit_test(test_graph_too_large_to_lay_out_is_not_laid_out),
        cmocka_unit_test(test_fanout_inside_a_layer_keeps_the_layers_connected),
        cmocka_unit_test(test_winograd_convolutions_counted_from_the_fused_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
