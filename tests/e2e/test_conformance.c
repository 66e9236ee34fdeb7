/* tests/e2e/test_conformance — every ONNX conformance case under ../shared/corpus/onnx/{node,
 * pytorch-converted,pytorch-operator} runs on the unfused cpu executor and must match its
 * expected outputs (|got - want| <= atol + rtol*|want|, rtol 1e-4, atol 1e-5). A case whose
 * model is refused as unsupported must be listed, with its reason, in
 * tests/e2e/conformance-unsupported.txt; any other refusal or mismatch fails the test.
 * Env FA_CONFORMANCE_FILTER=substring runs only matching cases (for development). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/graph.h"
#include "runtime/runtime.h"
#include "testutil.h"

#define RTOL 1e-4
#define ATOL 1e-5

typedef struct counts {
    int pass, fail, unsupported, listed_unsupported;
} counts;

static char *g_allow; /* contents of conformance-unsupported.txt */

static bool allowed_unsupported(const char *folder, const char *name)
{
    if (!g_allow) return false;
    char key[512];
    snprintf(key, sizeof key, "%s/%s ", folder, name);
    for (const char *p = g_allow; (p = strstr(p, key)); p++)
        if (p == g_allow || p[-1] == '\n') return true;
    return false;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Compare one output; returns true if within tolerance, writes a description otherwise. */
static bool compare(const fa_value *got, const fa_value *want, char *why, size_t cap)
{
    if (got->rank != want->rank) {
        snprintf(why, cap, "rank %d, expected %d", got->rank, want->rank);
        return false;
    }
    for (int d = 0; d < got->rank; d++)
        if (got->dims[d] != want->dims[d]) {
            snprintf(why, cap, "dim %d is %lld, expected %lld", d, (long long)got->dims[d], (long long)want->dims[d]);
            return false;
        }
    if (got->dtype != want->dtype) {
        snprintf(why, cap, "dtype %s, expected %s", fa_dtype_name(got->dtype), fa_dtype_name(want->dtype));
        return false;
    }
    int64_t ne = fa_value_numel(want);
    double rtol = RTOL, atol = ATOL;
    /* float16 data carries 11 bits of mantissa: compare at half precision (documented in docs/testing.md). */
    if (want->dtype == FA_DTYPE_FLOAT16 || want->dtype == FA_DTYPE_BFLOAT16) { rtol = 1e-3; atol = 1e-3; }
    for (int64_t i = 0; i < ne; i++) {
        double a = fa_load_as_double(got->data, got->dtype, i), b = fa_load_as_double(want->data, want->dtype, i);
        if (isnan(a) && isnan(b)) continue;
        if (isinf(a) && isinf(b) && (a > 0) == (b > 0)) continue;
        if (!(fabs(a - b) <= atol + rtol * fabs(b))) {
            snprintf(why, cap, "element %lld: got %.9g, expected %.9g", (long long)i, a, b);
            return false;
        }
    }
    return true;
}

/* Run one case folder; returns 0 pass, 1 fail, 2 unsupported. */
static int run_case(const char *dir, char *why, size_t cap)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_graph *g = NULL;
    fa_exec *e = NULL;
    int result = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    /* Shape-parameter inputs (Reshape's shape, Slice's starts, Resize's scales, ...) are given
     * by test_data_set_0: freeze them to constants so shapes stay static (the analysis needs
     * static shapes). Every data set of a case must then agree on those values. */
    fa_value frozen[16];
    int n_frozen = 0;
    int orig_inputs[64];
    int n_orig = 0;
    fa_status st = fa_onnx_import(ctx, path, &g);
    if (!st) {
        n_orig = g->n_inputs < 64 ? g->n_inputs : 64;
        memcpy(orig_inputs, g->inputs, sizeof(int) * (size_t)n_orig);
        for (int i = 0; i < n_orig && !st; i++) {
            if (!fa_graph_input_is_shape_param(g, orig_inputs[i]) || n_frozen >= 16) continue;
            char ip[4200];
            snprintf(ip, sizeof ip, "%s/test_data_set_0/input_%d.pb", dir, i);
            st = fa_tensorproto_read(ctx, ip, &frozen[n_frozen], NULL);
            if (!st) st = fa_graph_freeze_input(ctx, g, g->tensors[orig_inputs[i]]->name, &frozen[n_frozen]);
            if (!st) n_frozen++;
        }
        if (!st) st = fa_graph_prepare(ctx, g, NULL);
    }
    for (int i = 0; i < n_frozen; i++) free(frozen[i].data);
    if (!st) {
        fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 2};
        st = fa_exec_create(ctx, g, &eo, &e);
    }
    if (st) {
        snprintf(why, cap, "%s", fa_ctx_errmsg(ctx));
        result = st == FA_ERR_UNSUPPORTED ? 2 : 1;
        goto done;
    }
    for (int ds = 0; result == 0; ds++) {
        char dsdir[4200];
        snprintf(dsdir, sizeof dsdir, "%s/test_data_set_%d", dir, ds);
        struct stat sb;
        if (stat(dsdir, &sb) != 0) {
            if (ds == 0) { snprintf(why, cap, "no test_data_set_0"); result = 1; }
            break;
        }
        for (int i = 0; i < n_orig && !st; i++) {
            int live = -1;
            for (int k = 0; k < g->n_inputs; k++)
                if (g->inputs[k] == orig_inputs[i]) live = k;
            if (live < 0) continue; /* frozen */
            snprintf(path, sizeof path, "%s/input_%d.pb", dsdir, i);
            fa_value v;
            st = fa_tensorproto_read(ctx, path, &v, NULL);
            if (!st) {
                st = fa_exec_set_input(ctx, e, live, &v);
                free(v.data);
            }
        }
        if (!st) st = fa_exec_run(ctx, e, NULL);
        if (st) {
            snprintf(why, cap, "%s", fa_ctx_errmsg(ctx));
            result = st == FA_ERR_UNSUPPORTED ? 2 : 1;
            break;
        }
        for (int o = 0; o < g->n_outputs && result == 0; o++) {
            snprintf(path, sizeof path, "%s/output_%d.pb", dsdir, o);
            if (stat(path, &sb) != 0) continue; /* optional outputs without reference */
            fa_value want;
            st = fa_tensorproto_read(ctx, path, &want, NULL);
            if (st) { snprintf(why, cap, "%s", fa_ctx_errmsg(ctx)); result = 1; break; }
            const fa_value *got = fa_exec_output(e, o);
            char w2[512];
            if (!got) { snprintf(why, cap, "output %d not produced", o); result = 1; }
            else if (!compare(got, &want, w2, sizeof w2)) {
                snprintf(why, cap, "data set %d output %d: %s", ds, o, w2);
                result = 1;
            }
            free(want.data);
        }
    }
done:
    fa_exec_free(e);
    fa_graph_free(g);
    fa_ctx_free(ctx);
    return result;
}

static counts run_folder(const char *folder)
{
    counts c = {0};
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/onnx/%s", fa_test_corpus(), folder);
    DIR *d = opendir(dir);
    assert_non_null(d);
    char *names[1024];
    int nn = 0;
    struct dirent *de;
    while ((de = readdir(d)) && nn < 1024)
        if (de->d_name[0] != '.') names[nn++] = strdup(de->d_name);
    closedir(d);
    qsort(names, (size_t)nn, sizeof names[0], cmp_names);
    const char *filter = getenv("FA_CONFORMANCE_FILTER");
    for (int i = 0; i < nn; i++) {
        if (filter && !strstr(names[i], filter)) { free(names[i]); continue; }
        char cdir[4500], why[1024] = "";
        snprintf(cdir, sizeof cdir, "%s/%s", dir, names[i]);
        int r = run_case(cdir, why, sizeof why);
        bool listed = allowed_unsupported(folder, names[i]);
        if (r == 0) {
            c.pass++;
            if (listed) printf("NOTE %s/%s passes but is listed as unsupported: remove it from the list\n", folder, names[i]);
        } else if (r == 2 && listed) {
            c.listed_unsupported++;
            printf("UNSUPPORTED (listed) %s/%s: %s\n", folder, names[i], why);
        } else if (r == 2) {
            c.unsupported++;
            printf("UNSUPPORTED (not listed) %s/%s: %s\n", folder, names[i], why);
        } else {
            c.fail++;
            printf("FAIL %s/%s: %s\n", folder, names[i], why);
        }
        free(names[i]);
    }
    printf("conformance %s: %d passed, %d failed, %d unsupported (listed %d, unlisted %d)\n", folder, c.pass,
           c.fail, c.unsupported + c.listed_unsupported, c.listed_unsupported, c.unsupported);
    fflush(stdout);
    return c;
}

static void check_folder(const char *folder)
{
    counts c = run_folder(folder);
    assert_int_equal(c.fail, 0);
    assert_int_equal(c.unsupported, 0);
}

static void test_conformance_node(void **state) { (void)state; check_folder("node"); }
static void test_conformance_pytorch_converted(void **state) { (void)state; check_folder("pytorch-converted"); }
static void test_conformance_pytorch_operator(void **state) { (void)state; check_folder("pytorch-operator"); }

int main(void)
{
    fa_test_require_corpus();
    const char *src = getenv("FA_SOURCE_DIR");
    if (src) {
        char p[4096];
        snprintf(p, sizeof p, "%s/tests/e2e/conformance-unsupported.txt", src);
        uint8_t *data;
        size_t len;
        fa_ctx *ctx = fa_ctx_create();
        if (fa_read_file(ctx, p, &data, &len) == FA_OK) g_allow = (char *)data;
        fa_ctx_free(ctx);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conformance_node),
        cmocka_unit_test(test_conformance_pytorch_converted),
        cmocka_unit_test(test_conformance_pytorch_operator),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(g_allow);
    return rc;
}
