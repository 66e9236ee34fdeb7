/* tests/unit/test_gate — NVRTC compile of every generated CUDA kernel for sm_80 and sm_90 (ptxas
 * numbers parsed), and the register/occupancy gate: ordinary kernels pass, a register-heavy one
 * is refused with its numbers. Needs the CUDA toolkit (not a GPU); skipped without it. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor/gate.h"
#include "codegen_cases.h"
#include "roofline/roofline.h"

#ifdef FA_HAVE_CUDA
#include "runtime/cuda/cuda.h"
#define NEED_CUDA() ((void)0)
#else
#define NEED_CUDA()                                                                               \
    do {                                                                                          \
        print_message("skipped: this build has no CUDA toolkit (FA_HAVE_CUDA unset)\n");          \
        skip();                                                                                   \
    } while (0)
#endif

typedef tc *(*case_fn)(void);
static tc *c_ew(void) { return case_ew_broadcast(); }
static tc *c_hz(void) { return case_horizontal(); }
static tc *c_sm(void) { return case_softmax_scale(3, 1037); }
static tc *c_sm3000(void) { return case_softmax_scale(3, 3000); }
static tc *c_smd(void) { return case_softmax_decomposed(2, 4096); }
static tc *c_ln(void) { return case_layernorm_decomposed(2, 768); }
static tc *c_lnop(void) { return case_layernorm_op(4, 1037); }
static tc *c_rms(void) { return case_rmsnorm(4, 512); }
static tc *c_rmsop(void) { return case_rmsnorm_op(4, 33); }
static tc *c_all(void) { return case_all_ops(); }
static tc *c_att(void) { return case_attention_bert(128, 12, 64); }
static tc *c_attg(void) { return case_attention_gqa_causal(512); }
static tc *c_atto(void) { return case_attention_op(77); }
static const case_fn CASES[] = {c_ew, c_hz, c_sm, c_sm3000, c_smd, c_ln, c_lnop, c_rms, c_rmsop, c_all, c_att, c_attg, c_atto};
#define N_CASES (int)(sizeof CASES / sizeof CASES[0])

static void test_nvrtc_compiles_every_generated_kernel_sm80_sm90(void **s)
{
    (void)s;
    NEED_CUDA();
    const char *arches[] = {"sm_80", "sm_90"};
    (void)arches; /* read only where the build has the CUDA toolkit */
    for (int k = 0; k < N_CASES; k++) {
        tc *t = CASES[k]();
        fa_buf src;
        fa_buf_init(&src);
        fa_codegen_info info;
        if (fa_codegen_cuda(t->ctx, t->g, &t->c, "feedc0de", &src, &info)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
#ifdef FA_HAVE_CUDA
        for (int a = 0; a < 2; a++) {
            fa_cuda_compiled cc;
            fa_status st = fa_cuda_nvrtc_compile(t->ctx, src.data, info.name, arches[a], &cc);
            if (st) fail_msg("%s %s: %s\n%s", t->c.label, arches[a], fa_ctx_errmsg(t->ctx), src.data);
            const fa_cuda_kernel_info *r = fa_cuda_compiled_kernel(&cc, info.name);
            assert_non_null(r);
            print_message("%-24s %s: %3d registers, spill %d/%d B, smem %d B, stack %d B, block %d, cubin %zu B\n",
                          t->c.label, arches[a], r->registers, r->spill_stores, r->spill_loads, r->static_smem,
                          r->stack_frame, info.block_size, cc.cubin_size);
            assert_true(r->registers > 0 && r->registers <= 255);
            assert_int_equal(r->spill_stores, 0);
            assert_int_equal(r->spill_loads, 0);
            assert_non_null(strstr(cc.log, info.name));
            assert_non_null(strstr(cc.log, arches[a]));
            if (t->c.kind == FA_CLUSTER_REDUCTION) assert_true(r->static_smem >= 128); /* fa_red[32] */
            else if (t->c.kind == FA_CLUSTER_ATTENTION) assert_true(r->static_smem > 0 && r->static_smem <= 48 * 1024); /* Q, K, V tiles */
            else assert_int_equal(r->static_smem, 0);
            assert_non_null(cc.cubin);
            assert_true(cc.cubin_size > 256);
            assert_memory_equal(cc.cubin, "\x7f" "ELF", 4);
            fa_cuda_compiled_free(&cc);
        }
#endif
        fa_buf_free(&src);
        tc_free(t);
    }
}

static void test_nvrtc_compile_error_carries_log(void **s)
{
    (void)s;
    NEED_CUDA();
    fa_ctx *ctx = fa_ctx_create();
#ifdef FA_HAVE_CUDA
    fa_cuda_compiled cc;
    fa_status st = fa_cuda_nvrtc_compile(ctx, "extern \"C\" __global__ void k(float *p) { p[0] = undefined_name; }", "k",
                                         "sm_90", &cc);
    assert_int_equal(st, FA_ERR_RUNTIME);
    assert_non_null(strstr(fa_ctx_errmsg(ctx), "undefined_name"));
#endif
    fa_ctx_free(ctx);
}

static void test_gate_passes_ordinary_kernels_and_fills_numbers(void **s)
{
    (void)s;
    NEED_CUDA();
    fa_advise_options opt = {0};
    opt.arch = "sm_90";
    opt.occupancy_floor = 0.5;
    for (int k = 0; k < N_CASES; k++) {
        tc *t = CASES[k]();
        t->c.status = FA_CLUSTER_PROPOSED;
        bool refused = true;
        fa_gate_numbers nums;
        fa_status st = fa_gate_cluster_ex(t->ctx, t->g, &t->c, &opt, NULL, &refused, &nums);
        if (st) fail_msg("%s: %s", t->c.label, fa_ctx_errmsg(t->ctx));
        print_message("%-24s gate: %d regs, block %d, %d blocks/SM, occupancy %.2f (%s)\n", t->c.label,
                      t->c.registers, t->c.block_size, nums.active_blocks, t->c.occupancy, nums.limiters);
        assert_false(refused);
        assert_int_equal(t->c.status, FA_CLUSTER_PROPOSED);
        assert_true(t->c.registers > 0);
        assert_int_equal(t->c.spill_bytes, 0);
        assert_true(t->c.block_size >= 32);
        /* memory-bound kernels reach the floor; the attention kernel's occupancy is recorded only */
        assert_true((t->c.kind == FA_CLUSTER_ATTENTION || t->c.occupancy >= 0.5) && t->c.occupancy > 0 && t->c.occupancy <= 1.0);
        /* the calculator with the same numbers gives the same occupancy */
        fa_occ_input oi = {0};
        oi.block_size = t->c.block_size;
        oi.regs_per_thread = t->c.registers;
        oi.static_smem = (size_t)nums.static_smem;
        oi.carveout_percent = -1;
        oi.block_barriers = 1;
        fa_occ_result occ;
        assert_int_equal(fa_occupancy(t->ctx, fa_cuda_limits_for_arch("sm_90"), &oi, &occ), FA_OK);
        assert_true(occ.occupancy == t->c.occupancy);
        tc_free(t);
    }
}

static void test_gate_refuses_register_heavy_kernel_with_numbers(void **s)
{
    (void)s;
    NEED_CUDA();
    tc *t = case_heavy(300);
    fa_advise_options opt = {0};
    opt.arch = "sm_80";
    opt.occupancy_floor = 0.5;
    t->c.status = FA_CLUSTER_PROPOSED;
    bool refused = false;
    fa_gate_numbers nums;
    fa_status st = fa_gate_cluster_ex(t->ctx, t->g, &t->c, &opt, NULL, &refused, &nums);
    if (st) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    print_message("heavy: %d regs, spill %d+%d B, occupancy %.3f\nreason: %s\n", nums.registers, nums.spill_stores,
                  nums.spill_loads, nums.occupancy, t->c.reason ? t->c.reason : "(none)");
    assert_true(refused);
    assert_int_equal(t->c.status, FA_CLUSTER_REFUSED);
    assert_non_null(t->c.reason);
    assert_true(t->c.registers > 128);
    assert_true(t->c.spill_bytes > 0);
    assert_true(t->c.occupancy < 0.5);
    char want[64];
    snprintf(want, sizeof want, "uses %d registers per thread and spills %d bytes", t->c.registers, t->c.spill_bytes);
    assert_non_null(strstr(t->c.reason, want));
    assert_non_null(strstr(t->c.reason, "occupancy gate"));
    assert_non_null(strstr(t->c.reason, "under the 50% floor"));
    tc_free(t);
}

/* The attention kernel is compute-bound: its occupancy is recorded, not held to the floor (a
 * memory-bound kernel's rule); the same kernel with a spill would still be refused. */
static void test_gate_records_attention_occupancy_without_the_floor(void **s)
{
    (void)s;
    NEED_CUDA();
    tc *t = case_attention_bert(128, 12, 64);
    fa_advise_options opt = {0};
    opt.arch = "sm_90";
    opt.occupancy_floor = 0.99;
    t->c.status = FA_CLUSTER_PROPOSED;
    bool refused = true;
    fa_gate_numbers nums;
    if (fa_gate_cluster_ex(t->ctx, t->g, &t->c, &opt, NULL, &refused, &nums)) fail_msg("%s", fa_ctx_errmsg(t->ctx));
    print_message("attention: %d regs, %d B smem, occupancy %.3f (%s)\n", t->c.registers, nums.static_smem, t->c.occupancy,
                  nums.limiters);
    assert_false(refused);
    assert_int_equal(t->c.status, FA_CLUSTER_PROPOSED);
    assert_true(t->c.registers > 0 && t->c.occupancy > 0 && t->c.occupancy < 0.99);
    assert_int_equal(t->c.spill_bytes, 0);
    tc_free(t);
}

/* Issue 40: the gate decides per architecture, from that architecture's own compile. No kernel
 * the advisor generates for the zoo comes near a spill on sm_80, sm_90 or sm_100 (the largest,
 * `advise zoo:M --target cuda --arch A --json` with NVRTC 13.0: the attention kernels, BERT
 * layer 72 / 72 / 157 registers, GPT-2 block 72 / 126 / 120, of the 255 their 128-thread launch
 * bound allows; the layer norms 25-32 of 255 at 256 threads), so the case is the register-heavy
 * chain (case_heavy: n values live at once) at the size where ptxas's allocation differs by
 * arch: with NVRTC 13.0 a 248-deep chain fits sm_80's and sm_90's 255 registers and spills 4 + 4
 * bytes on sm_100. The window 244..256 is searched for the first depth where the archs disagree
 * (another toolkit may move the boundary by a few values); the test skips, naming the figures,
 * when none does. At that depth the gate refuses on the arch that spills with its counts and
 * arch in the why-not, and passes the same cluster on the arch that fits. Occupancy floor 5%:
 * only the register gate decides (255 registers x 256 threads is 12.5% occupancy anywhere). */
static void test_gate_refuses_spill_on_one_arch_fits_on_another(void **s)
{
    (void)s;
    NEED_CUDA();
#ifdef FA_HAVE_CUDA
    const char *arches[] = {"sm_80", "sm_90", "sm_100"};
    char seen[1200] = "";
    size_t used = 0;
    for (int n = 244; n <= 256; n++) {
        /* what each arch's own compile of the generated kernel spills */
        int spill[3], regs[3];
        for (int a = 0; a < 3; a++) {
            tc *t = case_heavy(n);
            fa_buf src;
            fa_buf_init(&src);
            fa_codegen_info info;
            fa_cuda_compiled cc;
            if (fa_codegen_cuda(t->ctx, t->g, &t->c, "feedc0de", &src, &info) ||
                fa_cuda_nvrtc_compile(t->ctx, src.data, info.name, arches[a], &cc))
                fail_msg("%s: %s", arches[a], fa_ctx_errmsg(t->ctx));
            const fa_cuda_kernel_info *r = fa_cuda_compiled_kernel(&cc, info.name);
            assert_non_null(r);
            spill[a] = r->spill_stores + r->spill_loads;
            regs[a] = r->registers;
            fa_buf_free(&src);
            tc_free(t);
        }
        used += (size_t)snprintf(seen + used, used < sizeof seen ? sizeof seen - used : 0,
                                 " n=%d: %d/%d/%d regs, spill %d/%d/%d B;", n, regs[0], regs[1], regs[2], spill[0],
                                 spill[1], spill[2]);
        bool any_spills = false, any_fits = false;
        for (int a = 0; a < 3; a++) {
            any_spills |= spill[a] > 0;
            any_fits |= spill[a] == 0;
        }
        if (!any_spills || !any_fits) continue; /* every arch agrees at this depth */
        /* the gate, per arch, on the same cluster: refused exactly where that arch spills */
        for (int a = 0; a < 3; a++) {
            tc *t = case_heavy(n);
            fa_advise_options opt = {0};
            opt.arch = arches[a];
            opt.occupancy_floor = 0.05;
            t->c.status = FA_CLUSTER_PROPOSED;
            bool refused = false;
            if (fa_gate_cluster_ex(t->ctx, t->g, &t->c, &opt, NULL, &refused, NULL))
                fail_msg("%s %s", arches[a], fa_ctx_errmsg(t->ctx));
            print_message("depth %d, %s: %d registers, spill %d B: %s\n", n, arches[a], t->c.registers,
                          t->c.spill_bytes, refused ? t->c.reason : "passes");
            assert_int_equal(t->c.registers, regs[a]);
            assert_int_equal(t->c.spill_bytes, spill[a]);
            if (spill[a] > 0) {
                char want[160];
                snprintf(want, sizeof want, "register gate: the %s kernel uses %d registers per thread and spills %d bytes",
                         arches[a], regs[a], spill[a]);
                assert_true(refused);
                assert_int_equal(t->c.status, FA_CLUSTER_REFUSED);
                assert_int_equal(t->c.refusal, FA_WHY_REGISTER_GATE);
                if (!strstr(t->c.reason, want)) fail_msg("%s: want \"%s\" in \"%s\"", arches[a], want, t->c.reason);
            } else {
                assert_false(refused);
                assert_int_equal(t->c.status, FA_CLUSTER_PROPOSED);
            }
            tc_free(t);
        }
        return;
    }
    print_message("skipped: no depth in 244..256 spills on one arch and fits on another with this NVRTC:%s\n", seen);
    skip();
#endif
}

static void test_gate_floor_is_configurable(void **s)
{
    (void)s;
    NEED_CUDA();
    tc *t = case_softmax_scale(3, 1037);
    fa_advise_options opt = {0};
    opt.arch = "sm_90";
    opt.occupancy_floor = 0.5;
    bool refused = true;
    assert_int_equal(fa_gate_cluster(t->ctx, t->g, &t->c, &opt, &refused), FA_OK);
    assert_false(refused);
    double occ = t->c.occupancy;
    opt.occupancy_floor = occ + 0.01; /* just above what this kernel reaches */
    assert_int_equal(fa_gate_cluster(t->ctx, t->g, &t->c, &opt, &refused), FA_OK);
    assert_true(refused);
    assert_int_equal(t->c.status, FA_CLUSTER_REFUSED);
    assert_non_null(strstr(t->c.reason, "occupancy gate"));
    assert_null(strstr(t->c.reason, "spills"));
    tc_free(t);
}

static void test_gate_leaves_library_clusters_ungated(void **s)
{
    (void)s;
    tc *t = case_ew_broadcast();
    t->c.kind = FA_CLUSTER_EPILOGUE;
    t->c.registers = 17;
    t->c.status = FA_CLUSTER_PROPOSED;
    fa_advise_options opt = {0};
    bool refused = true;
    assert_int_equal(fa_gate_cluster(t->ctx, t->g, &t->c, &opt, &refused), FA_OK);
    assert_false(refused);
    assert_int_equal(t->c.registers, -1);
    assert_int_equal(t->c.status, FA_CLUSTER_PROPOSED);
    t->c.kind = FA_CLUSTER_BN_FOLD;
    assert_int_equal(fa_gate_cluster(t->ctx, t->g, &t->c, &opt, &refused), FA_OK);
    assert_false(refused);
    assert_int_equal(t->c.registers, -1);
    tc_free(t);
}

static void test_gate_without_toolkit_is_unsupported_or_works(void **s)
{
    (void)s;
    tc *t = case_horizontal();
    fa_advise_options opt = {0};
    bool refused = true;
    /* the cuda gate asked for by name: it works with the toolkit, and without it says so */
    opt.target = FA_TARGET_CUDA;
    fa_status st = fa_gate_cluster(t->ctx, t->g, &t->c, &opt, &refused);
#ifdef FA_HAVE_CUDA
    assert_int_equal(st, FA_OK);
    assert_true(t->c.registers > 0);
    assert_false(refused);
    /* unknown arch: no tabled limits */
    opt.arch = "sm_12";
    st = fa_gate_cluster(t->ctx, t->g, &t->c, &opt, &refused);
    assert_int_equal(st, FA_ERR_INPUT);
#else
    assert_int_equal(st, FA_ERR_UNSUPPORTED);
    assert_non_null(strstr(fa_ctx_errmsg(t->ctx), "no cuda target"));
    assert_false(refused);
    /* AUTO without a target that has a gate: the cpu target, which has none (nothing gated) */
    opt.target = FA_TARGET_AUTO;
    refused = true;
    assert_int_equal(fa_gate_cluster(t->ctx, t->g, &t->c, &opt, &refused), FA_OK);
    assert_false(refused);
    assert_int_equal(t->c.registers, -1);
#endif
    tc_free(t);
}


/* Gate every codegen cluster the advisor proposes on the zoo transformers and the corpus
 * *_expanded graphs (cuda target, sm_90): each compiles, has registers, and every refusal
 * carries its numbers. */
static int gate_plan(fa_ctx *ctx, fa_graph *g, const char *what, int *refusals)
{
    fa_advise_options o = fa_advise_options_default();
    o.no_gate = true;
    o.target = FA_TARGET_CUDA; /* the gate is the cuda target's (the cpu has none) */
    fa_plan *p = NULL;
    if (fa_advise(ctx, g, NULL, &o, &p)) fail_msg("%s: advise: %s", what, fa_ctx_errmsg(ctx));
    o.arch = "sm_90";
    int n = 0;
    for (int i = 0; i < p->n_clusters; i++) {
        fa_cluster *c = &p->clusters[i];
        if (c->kind == FA_CLUSTER_EPILOGUE || c->kind == FA_CLUSTER_BN_FOLD) continue;
        c->status = FA_CLUSTER_PROPOSED;
        bool refused = false;
        fa_gate_numbers nums;
        if (fa_gate_cluster_ex(ctx, g, c, &o, NULL, &refused, &nums))
            fail_msg("%s: cluster %d (%s): %s", what, c->id, c->label, fa_ctx_errmsg(ctx));
        assert_true(c->registers > 0);
        assert_true(c->block_size >= 32);
        if (refused) {
            (*refusals)++;
            print_message("%s cluster %d (%s) refused: %s\n", what, c->id, c->label, c->reason);
            char want[32];
            snprintf(want, sizeof want, "%d registers", c->registers);
            assert_non_null(strstr(c->reason, want));
        }
        n++;
    }
    fa_plan_free(p);
    return n;
}

static void test_gate_every_advisor_cluster_of_zoo_and_corpus(void **s)
{
    (void)s;
    NEED_CUDA();
    int n = 0, refusals = 0;
    const char *models[] = {"bert-layer", "gpt2-block"};
    for (int m = 0; m < 2; m++) {
        fa_ctx *ctx = fa_ctx_create();
        fa_graph *g = NULL;
        if (fa_zoo_build(ctx, models[m], 1, &g) || fa_graph_prepare(ctx, g, NULL) || fa_graph_index(ctx, g))
            fail_msg("%s", fa_ctx_errmsg(ctx));
        n += gate_plan(ctx, g, models[m], &refusals);
        fa_graph_free(g);
        fa_ctx_free(ctx);
    }
    const char *corpus = fa_test_corpus();
    if (corpus) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/onnx/node", corpus);
        DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL) {
            if (!strstr(de->d_name, "_expanded") || strstr(de->d_name, "group_norm") || strstr(de->d_name, "attention"))
                continue;
            char path[1400];
            snprintf(path, sizeof path, "%s/%s/model.onnx", dir, de->d_name);
            fa_ctx *ctx = fa_ctx_create();
            fa_graph *g = NULL;
            if (!fa_onnx_import(ctx, path, &g) && !fa_graph_prepare(ctx, g, NULL) && !fa_graph_index(ctx, g))
                n += gate_plan(ctx, g, de->d_name, &refusals);
            fa_graph_free(g);
            fa_ctx_free(ctx);
        }
        if (d) closedir(d);
    } else {
        print_message("corpus not found: zoo models only\n");
    }
    print_message("%d advisor clusters compiled and gated for sm_90, %d refused\n", n, refusals);
    assert_true(n >= 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvrtc_compiles_every_generated_kernel_sm80_sm90),
        cmocka_unit_test(test_nvrtc_compile_error_carries_log),
        cmocka_unit_test(test_gate_passes_ordinary_kernels_and_fills_numbers),
        cmocka_unit_test(test_gate_refuses_register_heavy_kernel_with_numbers),
        cmocka_unit_test(test_gate_refuses_spill_on_one_arch_fits_on_another),
        cmocka_unit_test(test_gate_floor_is_configurable),
        cmocka_unit_test(test_gate_records_attention_occupancy_without_the_floor),
        cmocka_unit_test(test_gate_leaves_library_clusters_ungated),
        cmocka_unit_test(test_gate_without_toolkit_is_unsupported_or_works),
        cmocka_unit_test(test_gate_every_advisor_cluster_of_zoo_and_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
