/* tests/unit/test_generated_vectorised — a generated masked, scaled softmax (the attention form:
 * Softmax(Where(mask, x * scale, fill))) compiled by the cpu target's compiler calls the vector
 * expf (a _ZGV...expf symbol in the shared object), not only scalar expf: gcc's default
 * -ftrapping-math / -fmath-errno kept this loop scalar, 3x slower than oneDNN's unfused softmax
 * (runtime/cpu/compile.c k_cflags). Two generated Tanh chains compiled in one batch (one
 * translation unit) call SLEEF's u35 vector tanhf (_ZGV..._tanhf_u35), the unfused Tanh's
 * variant, not the 2.5x slower u10 one that libmvec's name resolves to (nor scalar code: a
 * Relu's select follows the call), and compute tanh to 3.5 ULP, remainder lanes included (codegen/codegen.c k_tanh_u35).
 * Two generated GELU chains call libmvec's vector erff (bound to GLIBC_2.35), not SLEEF's slower
 * one (codegen/codegen.c k_erff_mvec). gcc only; skipped (77)
 * without it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <stdbool.h>
#include <math.h>

#include "codegen_cases.h"
#include "advisor/codegen.h"
#include "runtime/fused.h"

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
    tc_cluster(t, FA_CLUSTER_REDUCTION, FA_REDUCE_SOFTMAX, 1, "softmax");
    return t;
}

/* True when the file holds a vector name of fn (_ZGV<isa><mask><lanes>v_<fn>, fn "_expf" with
 * its underscore, followed by a NUL so "_tanhf" does not match "_tanhf_u35"). */
static bool has_vector_fn(const char *path, const char *fn)
{
    size_t fl = strlen(fn) + 1;
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
                found = j + (long)fl <= n && !memcmp(b + j, fn, fl);
            }
    }
    free(b);
    fclose(f);
    return found;
}

/* The path of the cache's one shared object (asserted: exactly one). */
static void only_object(const fa_kernel_cache *kc, char *path, size_t cap)
{
    int sos = 0;
    DIR *d = opendir(fa_kernel_cache_dir(kc));
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".so")) continue;
        snprintf(path, cap, "%s/%s", fa_kernel_cache_dir(kc), e->d_name);
        sos++;
    }
    closedir(d);
    assert_int_equal(sos, 1);
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
    char so[4400];
    only_object(kc, so, sizeof so);
    assert_true(has_vector_fn(so, "_expf")); /* the row loops call the vector expf */
    fa_compiled_free(got);
    free(err);
    fa_kernel_cache_free(kc);
    fa_buf_free(&src);
    tc_free(t);
}

/* The attention kernel (codegen/attention.c) built by the cpu target's compiler: its online
 * softmax's exp loop calls the vector expf too (a masked, causal, grouped-heads form). */
static void test_attention_kernel_calls_vector_expf(void **st)
{
    (void)st;
    tc *t = case_attention_gqa_causal(128);
    fa_buf src;
    fa_buf_init(&src);
    fa_codegen_info info;
    memset(&info, 0, sizeof info);
    if (fa_codegen(t->ctx, t->g, &t->c, FA_KERNEL_LANG_C, "0123456789abcdef", &src, &info))
        fail_msg("codegen: %s", fa_ctx_errmsg(t->ctx));
    const char *dir = fa_test_path(fa_test_tmpdir(), "vec-cache-attention");
    fa_kernel_cache *kc = NULL;
    assert_int_equal(fa_kernel_cache_open(t->ctx, dir, 0, &kc), FA_OK);
    fa_kernel_source ks = {src.data, src.len, info.name};
    fa_compiled *got = NULL;
    char *err = NULL;
    assert_int_equal(fa_compile_kernels(t->ctx, kc, 1, &ks, &got, &err), FA_OK);
    if (!got) fail_msg("compile: %s", err ? err : "?");
    char so[4400];
    only_object(kc, so, sizeof so);
    assert_true(has_vector_fn(so, "_expf"));
    fa_compiled_free(got);
    free(err);
    fa_kernel_cache_free(kc);
    fa_buf_free(&src);
    tc_free(t);
}

/* Two kernels of one builder, generated with different plan hashes and compiled in one batch (one
 * translation unit, one shared object: what a source emits once per unit must not repeat). Each
 * source must hold both `needle`s. */
typedef struct pair_build {
    tc *t[2];
    fa_buf src[2];
    fa_compiled *got[2];
    char *err[2];
    fa_kernel_cache *kc;
    char so[4400]; /* the shared object both kernels are in */
} pair_build;

static void pair_compile(pair_build *b, tc *(*make)(void), const char *cache_name, const char *needle0,
                         const char *needle1)
{
    static const char *const hash[2] = {"0123456789abcdef", "fedcba9876543210"};
    memset(b, 0, sizeof *b);
    fa_codegen_info info[2];
    fa_kernel_source ks[2];
    for (int k = 0; k < 2; k++) {
        b->t[k] = make();
        fa_buf_init(&b->src[k]);
        memset(&info[k], 0, sizeof info[k]);
        if (fa_codegen(b->t[k]->ctx, b->t[k]->g, &b->t[k]->c, FA_KERNEL_LANG_C, hash[k], &b->src[k], &info[k]))
            fail_msg("codegen: %s", fa_ctx_errmsg(b->t[k]->ctx));
        assert_non_null(strstr(b->src[k].data, needle0));
        assert_non_null(strstr(b->src[k].data, needle1));
        ks[k] = (fa_kernel_source){b->src[k].data, b->src[k].len, info[k].name};
    }
    assert_int_equal(fa_kernel_cache_open(b->t[0]->ctx, fa_test_path(fa_test_tmpdir(), cache_name), 0, &b->kc), FA_OK);
    assert_int_equal(fa_compile_kernels(b->t[0]->ctx, b->kc, 2, ks, b->got, b->err), FA_OK);
    for (int k = 0; k < 2; k++)
        if (!b->got[k]) fail_msg("compile kernel %d: %s", k, b->err[k] ? b->err[k] : "?");
    only_object(b->kc, b->so, sizeof b->so); /* both kernels in one shared object */
}

static void pair_free(pair_build *b)
{
    fa_kernel_cache_free(b->kc);
    for (int k = 0; k < 2; k++) {
        fa_compiled_free(b->got[k]);
        free(b->err[k]);
        fa_buf_free(&b->src[k]);
        tc_free(b->t[k]);
    }
}

/* x[rows, len] -> Tanh -> Relu -> Mul 0.5: an elementwise chain; len 1000 leaves vector
 * remainders; the Relu's select after the call is what a tanhf not known to be const (memory
 * clobbered) keeps gcc from vectorising. */
static tc *tanh_chain(void)
{
    tc *t = tc_new(18);
    int64_t d[2] = {4, 1000};
    tc_input(t, "x", 2, d);
    tc_scalar(t, "half", 0.5f);
    tc_node(t, "Tanh", "x", NULL, NULL, "th");
    tc_node(t, "Relu", "th", NULL, NULL, "r");
    tc_node(t, "Mul", "r", "half", NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_ELEMWISE_CHAIN, FA_REDUCE_NONE, 0, "tanh chain");
    return t;
}

static void test_tanh_chain_calls_u35_tanh(void **st)
{
    (void)st;
    pair_build b;
    pair_compile(&b, tanh_chain, "tanh-cache", "tanhf(", "tanhf_u35");
    tc **t = b.t;
    fa_compiled **got = b.got;
    assert_true(has_vector_fn(b.so, "_tanhf_u35"));
    assert_false(has_vector_fn(b.so, "_tanhf"));
    enum { N = 4000 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    assert_true(x && y);
    for (int i = 0; i < N; i++) x[i] = (float)(i % 997) / 50.0f - 10.0f;
    for (int k = 0; k < 2; k++) {
        assert_non_null(got[k]->fn);
        for (int i = 0; i < N; i++) y[i] = NAN;
        const float half = 0.5f;
        assert_int_equal(t[k]->c.n_inputs, 2); /* x, then the Mul's constant */
        const void *in[2] = {x, &half};
        void *out[1] = {y};
        got[k]->fn(in, out, 1);
        double worst = 0;
        for (int i = 0; i < N; i++) {
            double th = tanh((double)x[i]), want = 0.5 * (th > 0 ? th : 0), e = fabs(y[i] - want);
            if (!(e <= worst)) worst = e; /* NaN makes it NaN */
        }
        /* 3.5 ULP of |tanh| <= 1 is under 2.1e-7, times 0.5, plus the Mul's rounding */
        if (!(worst <= 1.2e-7)) fail_msg("kernel %d: max abs error %g", k, worst);
    }
    free(x);
    free(y);
    pair_free(&b);
}

/* x[4, 1000] -> Div sqrt2 -> Erf -> Add 1 -> Mul x -> Mul 0.5: GELU as the exporters write it. */
static tc *gelu_chain(void)
{
    tc *t = tc_new(18);
    int64_t d[2] = {4, 1000};
    tc_input(t, "x", 2, d);
    tc_scalar(t, "sqrt2", 1.4142135f);
    tc_scalar(t, "one", 1.0f);
    tc_scalar(t, "half", 0.5f);
    tc_node(t, "Div", "x", "sqrt2", NULL, "xs");
    tc_node(t, "Erf", "xs", NULL, NULL, "e");
    tc_node(t, "Add", "e", "one", NULL, "e1");
    tc_node(t, "Mul", "x", "e1", NULL, "xe");
    tc_node(t, "Mul", "xe", "half", NULL, "y");
    tc_output(t, "y");
    tc_cluster(t, FA_CLUSTER_ELEMWISE_CHAIN, FA_REDUCE_NONE, 0, "gelu chain");
    return t;
}

/* True when `objdump -T so` lists a vector erff (_ZGV..._erff) bound to glibc's GLIBC_2.35
 * version, the one only libmvec defines. False when objdump cannot run. */
static bool vector_erff_from_libmvec(const char *so, bool *ran)
{
    char cmd[4600];
    snprintf(cmd, sizeof cmd, "objdump -T '%s' 2>/dev/null", so);
    FILE *p = popen(cmd, "r");
    *ran = false;
    if (!p) return false;
    char line[512];
    bool found = false;
    while (fgets(line, sizeof line, p)) {
        *ran = true;
        if (strstr(line, "_ZGV") && strstr(line, "v_erff") && strstr(line, "GLIBC_2.35")) found = true;
    }
    pclose(p);
    return found;
}

/* Two generated GELU chains in one batch (one translation unit: the .symver directives must not
 * repeat) call libmvec's vector erff, as the unfused Erf does, not SLEEF's 2.7x slower one that the
 * unversioned name resolves to (codegen/codegen.c k_erff_mvec), and compute GELU to float accuracy. */
static void test_gelu_chain_calls_libmvec_erff(void **st)
{
    (void)st;
    pair_build b;
    pair_compile(&b, gelu_chain, "erf-cache", "erff(", "_erff@GLIBC_2.35");
    tc **t = b.t;
    fa_compiled **got = b.got;
    assert_true(has_vector_fn(b.so, "_erff"));
    enum { N = 4000 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    assert_true(x && y);
    for (int i = 0; i < N; i++) x[i] = (float)(i % 997) / 80.0f - 6.0f;
    for (int k = 0; k < 2; k++) {
        const float c[3] = {1.4142135f, 1.0f, 0.5f};
        const void *in[4] = {x, &c[0], &c[1], &c[2]};
        assert_int_equal(t[k]->c.n_inputs, 4); /* x, then the three constants in the order they are read */
        void *out[1] = {y};
        for (int i = 0; i < N; i++) y[i] = NAN;
        got[k]->fn(in, out, 2);
        double worst = 0;
        for (int i = 0; i < N; i++) {
            double want = 0.5 * x[i] * (1.0 + erf(x[i] / 1.4142135623730951)), e = fabs(y[i] - want) / (1e-6 + fabs(x[i]));
            if (!(e <= worst)) worst = e;
        }
        if (!(worst <= 1e-6)) fail_msg("kernel %d: max error %g of |x|", k, worst);
    }
    free(x);
    free(y);
    /* the binding itself, as the dynamic linker sees it (objdump comes with gcc's binutils) */
    bool ran = false, mvec = vector_erff_from_libmvec(b.so, &ran);
    pair_free(&b);
    if (!ran) skip();
    assert_true(mvec);
}

/* The instructions of shared object `so` (objdump -d, Intel-free AT&T mnemonics), counted:
 * packed single-precision arithmetic (add/sub/mul/fma ...ps on any vector register) and
 * conversions between float and double (cvtps2pd, cvtss2sd, cvtpd2ps, cvtsd2ss). False when
 * objdump cannot run. */
static bool count_float_ops(const char *so, int *packed, int *to_double)
{
    char cmd[4600];
    snprintf(cmd, sizeof cmd, "objdump -d --no-show-raw-insn '%s' 2>/dev/null", so);
    FILE *p = popen(cmd, "r");
    if (!p) return false;
    char line[512];
    int lines = 0;
    *packed = *to_double = 0;
    while (fgets(line, sizeof line, p)) {
        lines++;
        if (strstr(line, "cvtps2pd") || strstr(line, "cvtss2sd") || strstr(line, "cvtpd2ps") || strstr(line, "cvtsd2ss"))
            (*to_double)++;
        const char *m = strchr(line, '\t');
        if (!m) continue;
        m++;
        while (*m == ' ' || *m == '\t') m++;
        if (*m == 'v') m++;
        if ((!strncmp(m, "addps", 5) || !strncmp(m, "subps", 5) || !strncmp(m, "mulps", 5) || !strncmp(m, "fmadd", 5) ||
             !strncmp(m, "fnmadd", 6)) && strstr(m, "ps"))
            (*packed)++;
    }
    return pclose(p) == 0 && lines > 0;
}

/* Residual add + layer norm (ONNX Runtime's SkipLayerNormalization; issue 33): the generated row
 * kernel keeps x + residual in a row buffer from its first sweep and sums in float vector lanes.
 * Before, it summed in double (half the lanes, a float->double conversion per element) and read
 * and added x and the residual again in each of its three sweeps: on ViT the fused kernel took
 * 21.5 us against 16.6 us for the unfused Add and oneDNN's layer norm. The compiled object has
 * packed float arithmetic and no conversion to double; the same for the residual + RMS norm. */
static void check_skip_norm(tc *t, const char *tag)
{
    fa_buf src;
    fa_buf_init(&src);
    fa_codegen_info info;
    memset(&info, 0, sizeof info);
    if (fa_codegen(t->ctx, t->g, &t->c, FA_KERNEL_LANG_C, "0123456789abcdef", &src, &info))
        fail_msg("codegen: %s", fa_ctx_errmsg(t->ctx));
    assert_non_null(strstr(src.data, "float rb")); /* x + residual kept in the row buffer */
    assert_null(strstr(src.data, "double"));
    char dir[64];
    snprintf(dir, sizeof dir, "skip-norm-cache-%s", tag);
    fa_kernel_cache *kc = NULL;
    assert_int_equal(fa_kernel_cache_open(t->ctx, fa_test_path(fa_test_tmpdir(), dir), 0, &kc), FA_OK);
    fa_kernel_source ks = {src.data, src.len, info.name};
    fa_compiled *got = NULL;
    char *err = NULL;
    assert_int_equal(fa_compile_kernels(t->ctx, kc, 1, &ks, &got, &err), FA_OK);
    if (!got) fail_msg("compile: %s", err ? err : "?");
    char so[4400];
    only_object(kc, so, sizeof so);
    int packed = 0, to_double = 0;
    if (!count_float_ops(so, &packed, &to_double)) skip();
    printf("%s: %d packed float instructions, %d float<->double conversions\n", tag, packed, to_double);
    assert_true(packed >= 3); /* the sum, the sum of squares, the output sweep */
    assert_int_equal(to_double, 0);
    fa_compiled_free(got);
    free(err);
    fa_kernel_cache_free(kc);
    fa_buf_free(&src);
    tc_free(t);
}

static void test_skip_layernorm_sums_in_float_lanes(void **st)
{
    (void)st;
    check_skip_norm(case_skip_layernorm(394, 768, 0.0f), "layernorm");
}

static void test_skip_rmsnorm_sums_in_float_lanes(void **st)
{
    (void)st;
    check_skip_norm(case_skip_rmsnorm(64, 768), "rmsnorm");
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
        cmocka_unit_test(test_attention_kernel_calls_vector_expf),
        cmocka_unit_test(test_tanh_chain_calls_u35_tanh),
        cmocka_unit_test(test_gelu_chain_calls_libmvec_erff),
        cmocka_unit_test(test_skip_layernorm_sums_in_float_lanes),
        cmocka_unit_test(test_skip_rmsnorm_sums_in_float_lanes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
