/* tests/unit/test_generated_vectorised — a generated masked, scaled softmax (the attention form:
 * Softmax(Where(mask, x * scale, fill))) compiled by the cpu target's compiler calls the vector
 * expf (a _ZGV...expf symbol in the shared object), not only scalar expf: gcc's default
 * -ftrapping-math / -fmath-errno kept this loop scalar, 3x slower than oneDNN's unfused softmax
 * (runtime/cpu/compile.c k_cflags). gcc only; skipped (77) without it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <stdbool.h>

#include "codegen_cases.h"
#include "advisor/codegen.h"
#include "runtime/runtime.h"

static tc *masked_softmax(int64_t rows, int64_t len)
{
    tc *t = tc_new(18);
    int64_t d[2] = {rows, len};
    tc_input(t, "x", 2, d);
    int mid = fa_graph_tensor(t->g, "mask");
    fa_tensor_set_shape(t->g->tensors[mid], FA_DTYPE_BOOL, 2, d);
    assert_int_equal(fa_graph_add_input(t->ctx, t->g, mid), FA_OK);
    tc_scalar(t, "scale", 0.125f);
    tc_scalar(t, "fill", -3.4e38f);
    tc_node(t, "Mul", "x", "scale", NULL, "xs");
    tc_node(t, "Where", "mask", "xs", "fill", "w");
    tc_node(t, "Softmax", "w", NULL, NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_REDUCTION, FA_RED_SOFTMAX, 1, "softmax");
    return t;
}

/* True when the file holds a vector expf name (_ZGV<isa><mask><lanes>v_expf). */
static bool has_vector_expf(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    bool found = false;
    if (b && fread(b, 1, (size_t)n, f) == (size_t)n) {
        b[n] = 0;
        for (long i = 0; i + 4 < n && !found; i++)
            if (!memcmp(b + i, "_ZGV", 4)) {
                long j = i + 4;
                while (j < n && j < i + 16 && b[j] && b[j] != '_') j++;
                found = j + 5 <= n && !memcmp(b + j, "_expf", 5);
            }
    }
    free(b);
    fclose(f);
    return found;
}

static void test_masked_softmax_calls_vector_expf(void **st)
{
    (void)st;
    tc *t = masked_softmax(256, 128);
    fa_buf src;
    fa_buf_init(&src);
    fa_codegen_info info;
    memset(&info, 0, sizeof info);
    if (fa_codegen(t->ctx, t->g, &t->c, FA_KERNEL_LANG_C, "0123456789abcdef", &src, &info))
        fail_msg("codegen: %s", fa_ctx_errmsg(t->ctx));
    assert_non_null(strstr(src.data, "expf("));
    const char *dir = fa_test_path(fa_test_tmpdir(), "vec-cache");
    fa_kernel_cache *kc = NULL;
    assert_int_equal(fa_kernel_cache_open(t->ctx, dir, 0, &kc), FA_OK);
    fa_kernel_source ks = {src.data, src.len, info.name};
    fa_compiled *got = NULL;
    char *err = NULL;
    assert_int_equal(fa_compile_kernels(t->ctx, kc, 1, &ks, &got, &err), FA_OK);
    if (!got) fail_msg("compile: %s", err ? err : "?");
    int sos = 0, vec = 0;
    DIR *d = opendir(fa_kernel_cache_dir(kc));
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".so")) continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", fa_kernel_cache_dir(kc), e->d_name);
        sos++;
        vec += has_vector_expf(p);
    }
    closedir(d);
    assert_int_equal(sos, 1);
    assert_int_equal(vec, 1); /* the row loops call the vector expf */
    fa_compiled_free(got);
    free(err);
    fa_kernel_cache_free(kc);
    fa_buf_free(&src);
    tc_free(t);
}

int main(void)
{
    /* the kernels' compiler ($CC, else cc, as runtime/cpu/compile.c starts it) must be gcc */
    if (system("${CC:-cc} --version 2>/dev/null | grep -qi 'gcc\\|free software foundation'") != 0) {
        printf("SKIP: the kernels' compiler is not gcc (the vector-expf names are gcc's)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_masked_softmax_calls_vector_expf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
