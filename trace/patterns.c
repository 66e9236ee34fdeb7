/* trace/patterns — the named fusion patterns of trace advice, as data: each pattern is a line of
 * text (steps over the op alphabet, kernels that may sit between members, cpu-op / module frames
 * that name it, what would fuse it), compiled once and matched on each stream. */
#include "trace/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- the patterns ---- */

/* Named patterns, most specific first (the first that matches at a position wins). steps:
 * op keys separated by spaces; "a|b" alternatives; "?" optional; "+" one or more (at most
 * FA_TA_MAX_PATTERN members in all). skip: keys of kernels that may sit between two members
 * without joining the group (SwiGLU's up-projection GEMM between SiLU and the multiply).
 * stack: "|"-separated case-insensitive substrings of a cpu-op or nn.Module frame; kernels that
 * all run under one such frame form the pattern whatever their names. fix: what would fuse it.
 * Sources for the decompositions: Hugging Face transformers LlamaRMSNorm (pow, mean, add, rsqrt,
 * mul, to, mul), apply_rotary_pos_emb / rotate_half (mul, neg, cat, mul, add), LlamaMLP
 * (silu(gate) * up), GPT-2 NewGELUActivation (tanh approximation), torch.nn.functional.gelu
 * (erf), the softmax definition (max, sub, exp, sum, div). */
static const fa_ta_pattern_def k_patterns[] = {
    /* eager attention across its GEMMs: QK^T (bmm / baddbmm / matmul: cuBLAS, CUTLASS, sm90_xmma,
     * Tensile Cijk_ kernels), scale, mask, softmax, dropout, .V; the layout copy of V may run
     * between (it stays). The builder checks the sizes: the scores the first GEMM writes are what
     * the softmax reads and the second GEMM's first operand. */
    {"attention (unfused)", "gemm mul|div? add|where? softmax dropout? gemm", "copy", NULL,
     "torch.nn.functional.scaled_dot_product_attention (FlashAttention-2, memory-efficient or cuDNN kernels on CUDA; "
     "CK / aotriton FlashAttention on ROCm; Hugging Face attn_implementation=\"sdpa\" or \"flash_attention_2\"): "
     "QK^T, scale, mask, softmax and .V in one kernel, tiled over the keys with an online softmax, the L x S scores never "
     "written",
     false, FA_TA_COST_ATTENTION},
    /* a GEMM and the elementwise ops right after it that read its output: bias or scale, an
     * activation, a gate or a residual. Only where the sizes show it (the first op reads the GEMM's
     * output, each later one an earlier output); the epilogue stops before an op that starts
     * another named pattern (a residual add that begins "residual add + LayerNorm", a rotary
     * embedding, a SwiGLU), which keeps it */
    {"GEMM + epilogue", "gemm add|sub|mul|div|neg|exp|tanh|sigmoid|silu|gelu|relu|clamp|where|dropout+", NULL, NULL,
     "the GEMM's epilogue: cuBLASLt / hipBLASLt epilogues (bias, ReLU / GELU + bias — their GELU is the tanh approximation, "
     "right for F.gelu(approximate='tanh'), not for the exact erf form —, an output scale as alpha, a residual "
     "as beta: addmm(residual, x, W)) through torch.compile(mode=\"max-autotune\"), or nn.Linear with its bias "
     "(addmm applies it in the GEMM); torch.compile also fuses other elementwise epilogues (the exact GELU among them) "
     "into a Triton GEMM template",
     false, FA_TA_COST_EPILOGUE},
    {"residual add + RMSNorm", "add copy? pow mean add rsqrt mul copy? mul", NULL, NULL,
     "a fused add+RMSNorm kernel (Liger / Transformer Engine / vLLM fused_add_rms_norm), torch.compile, or fuse-advise's "
     "generated reduction kernel from the same cluster description (one read of x and the residual, one write)", true},
    {"RMSNorm", "copy? pow mean add rsqrt mul copy? mul", NULL, "rmsnorm|rms_norm",
     "torch.nn.functional.rms_norm (fused in PyTorch >= 2.4), Apex FusedRMSNorm, torch.compile, or fuse-advise's generated "
     "reduction kernel (reads x once, writes y once)", true},
    {"LayerNorm (decomposed)", "copy? mean sub pow mean add sqrt|rsqrt div|mul mul? add?", NULL, NULL,
     "torch.nn.functional.layer_norm (one fused kernel), Apex FusedLayerNorm, torch.compile, or fuse-advise's generated "
     "reduction kernel", true},
    {"residual add + LayerNorm", "add layer_norm", NULL, NULL,
     "a fused add+LayerNorm kernel (Apex / Transformer Engine / Liger), torch.compile, or fuse-advise's generated kernel",
     true},
    {"softmax (decomposed)", "amax sub exp sum div", NULL, NULL,
     "torch.softmax (one fused kernel), torch.compile, or fuse-advise's generated reduction kernel", true},
    {"scaled masked softmax", "mul|div add|where softmax", NULL, NULL,
     "torch.nn.functional.scaled_dot_product_attention (FlashAttention / memory-efficient kernels fuse scale, mask and "
     "softmax with both GEMMs), or a fused scale+mask+softmax kernel", false},
    {"rotary embedding", "mul neg cat mul add", NULL, "rotary|rope",
     "a fused rotary-embedding kernel (FlashAttention apply_rotary_emb, Liger, vLLM), torch.compile, or fuse-advise's "
     "generated elementwise kernel", true},
    {"QuickGELU (decomposed)", "mul sigmoid mul", NULL, "quickgelu|quick_gelu",
     "x * sigmoid(1.702 * x) in one elementwise kernel (torch.compile, or fuse-advise's generated kernel); it is its own "
     "function, not tanh-GELU: F.gelu(approximate='tanh') would change the model's numerics", true},
    {"GELU (tanh approximation, decomposed)", "mul? pow mul add mul tanh add mul mul?", NULL, "gelu",
     "torch.nn.functional.gelu(approximate='tanh') (one kernel), a GEMM epilogue (cuBLASLt GELU, the same tanh "
     "approximation), or torch.compile", true},
    {"GELU (erf, decomposed)", "mul? div erf add mul mul?", NULL, NULL,
     "torch.nn.functional.gelu (one kernel, the exact erf form), or torch.compile (also into a Triton GEMM template); "
     "not cuBLASLt's GELU epilogue, which is the tanh approximation and would change the model's numerics", true},
    {"bias + GELU", "add gelu", NULL, NULL,
     "the GEMM's epilogue (cuBLASLt CUBLASLT_EPILOGUE_GELU_BIAS, the tanh approximation: for F.gelu(approximate='tanh') "
     "only; nn.Linear with the bias folded), or one elementwise kernel (torch.compile, fuse-advise's generated kernel)",
     false},
    {"SiLU * mul (SwiGLU)", "silu mul", "gemm", "swiglu|silu_and_mul",
     "a fused SiLU-and-multiply kernel (vLLM silu_and_mul, Liger SwiGLU, Transformer Engine), torch.compile, or "
     "fuse-advise's generated elementwise kernel", false},
    {"optimizer step (foreach)", "foreach foreach+", NULL, NULL,
     "a fused optimizer (torch.optim.AdamW / Adam / SGD with fused=True: one multi-tensor kernel per parameter group "
     "instead of one foreach kernel per arithmetic op), or the step captured in a CUDA graph (capturable=True)", false},
    {"dtype-copy chain", "copy add|sub|mul|div|neg|exp|tanh|sigmoid|silu|gelu|relu|pow|sqrt|rsqrt|where|clamp+ copy", NULL,
     NULL,
     "do the arithmetic in registers at the higher precision inside one kernel (torch.compile, fuse-advise's generated "
     "kernel) instead of materialising the up- and down-cast tensors", true},
};

const fa_ta_pattern_def *fa_ta_patterns(int *n)
{
    if (n) *n = (int)(sizeof k_patterns / sizeof k_patterns[0]);
    return k_patterns;
}

/* ---- compiled form ---- */

typedef struct cstep {
    uint64_t keys;  /* bit set of keys */
    bool optional, repeat;
} cstep;

typedef struct cpat {
    int n;
    cstep st[FA_TA_MAX_PATTERN];
    uint64_t skip;
    const char *stack; /* from the def */
} cpat;

struct fa_ta_matcher {
    int n;
    cpat *p;
};

static fa_status parse_keys(fa_ctx *ctx, const char *name, const char *s, size_t n, uint64_t *out)
{
    uint64_t set = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j] != '|') j++;
        int k = fa_ta_key_parse(s + i, j - i);
        if (k < 0)
            return fa_ctx_error(ctx, FA_ERR_INTERNAL, "pattern '%s': unknown op key '%.*s'", name, (int)(j - i), s + i);
        set |= 1ull << k;
        i = j + 1;
    }
    *out = set;
    return FA_OK;
}

fa_status fa_ta_matcher_create(fa_ctx *ctx, const fa_ta_pattern_def *defs, int n, fa_ta_matcher **out)
{
    fa_ta_matcher *m = calloc(1, sizeof *m);
    if (!m || !(m->p = calloc((size_t)(n ? n : 1), sizeof *m->p))) {
        free(m);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory compiling trace patterns");
    }
    m->n = n;
    for (int i = 0; i < n; i++) {
        cpat *c = &m->p[i];
        c->stack = defs[i].stack;
        const char *s = defs[i].steps;
        while (*s) {
            while (*s == ' ') s++;
            if (!*s) break;
            size_t len = strcspn(s, " ");
            bool opt = false, rep = false;
            size_t kl = len;
            while (kl > 0 && (s[kl - 1] == '?' || s[kl - 1] == '+')) {
                if (s[kl - 1] == '?') opt = true;
                else rep = true;
                kl--;
            }
            if (c->n == FA_TA_MAX_PATTERN) {
                fa_ta_matcher_free(m);
                return fa_ctx_error(ctx, FA_ERR_INTERNAL, "pattern '%s': more than %d steps", defs[i].name, FA_TA_MAX_PATTERN);
            }
            fa_status st = parse_keys(ctx, defs[i].name, s, kl, &c->st[c->n].keys);
            if (st) {
                fa_ta_matcher_free(m);
                return st;
            }
            c->st[c->n].optional = opt;
            c->st[c->n].repeat = rep;
            c->n++;
            s += len;
        }
        if (defs[i].skip) {
            fa_status st = parse_keys(ctx, defs[i].name, defs[i].skip, strlen(defs[i].skip), &c->skip);
            if (st) {
                fa_ta_matcher_free(m);
                return st;
            }
            /* what stays between two members may include a transfer (a GEMM's workspace memset):
             * it is not inside the fused kernel */
            c->skip |= 1ull << FA_TA_KEY_MEMCPY;
        }
    }
    *out = m;
    return FA_OK;
}

void fa_ta_matcher_free(fa_ta_matcher *m)
{
    if (!m) return;
    free(m->p);
    free(m);
}

/* Backtracking match of pattern c at keys[pos..n): members[] gets the positions of the member
 * kernels. Returns the number of members, 0 for no match. Steps are few (<= 16) and the window
 * is bounded, so the search is bounded by a constant per position. */
static int match_from(const cpat *c, int step, const int *keys, int n, int pos, int *members, int nm, int budget_skip,
                      int *work)
{
    if (++*work > 4096) return 0; /* a hard cap on backtracking per start position */
    if (step == c->n) return nm;
    const cstep *s = &c->st[step];
    if (s->optional) {
        /* take it when the next kernel matches (the longer match), else leave it out */
        if (pos < n && (s->keys >> keys[pos] & 1) && nm < FA_TA_MAX_PATTERN) {
            members[nm] = pos;
            int r = match_from(c, step + 1, keys, n, pos + 1, members, nm + 1, budget_skip, work);
            if (r) return r;
        }
        return match_from(c, step + 1, keys, n, pos, members, nm, budget_skip, work);
    }
    /* skipped kernels between members (not before the first) */
    int p = pos;
    int skips = 0;
    for (;;) {
        if (p >= n) return 0;
        if (s->keys >> keys[p] & 1) break;
        if (nm == 0 || !(c->skip >> keys[p] & 1) || skips >= budget_skip) return 0;
        p++;
        skips++;
    }
    if (nm >= FA_TA_MAX_PATTERN) return 0;
    members[nm] = p;
    if (s->repeat) {
        /* greedy: as many as match, then give back */
        int q = p + 1, cnt = 1;
        while (q < n && (s->keys >> keys[q] & 1) && nm + cnt < FA_TA_MAX_PATTERN) {
            members[nm + cnt] = q;
            q++;
            cnt++;
        }
        for (; cnt >= 1; cnt--) {
            int r = match_from(c, step + 1, keys, n, p + cnt, members, nm + cnt, budget_skip, work);
            if (r) return r;
        }
        return 0;
    }
    return match_from(c, step + 1, keys, n, p + 1, members, nm + 1, budget_skip, work);
}

int fa_ta_matcher_match(const fa_ta_matcher *m, const int *keys, int n, int *pattern, int *members)
{
    return fa_ta_matcher_match_from(m, 0, keys, n, pattern, members);
}

int fa_ta_matcher_match_from(const fa_ta_matcher *m, int from, const int *keys, int n, int *pattern, int *members)
{
    if (n <= 0) return 0;
    for (int i = from < 0 ? 0 : from; i < m->n; i++) {
        const cpat *c = &m->p[i];
        int work = 0;
        int r = match_from(c, 0, keys, n, 0, members, 0, 2, &work);
        if (r >= 2 && members[0] == 0) {
            *pattern = i;
            return r;
        }
    }
    return 0;
}

/* The pattern a frame name denotes ("nn.Module: LlamaRMSNorm_3" -> RMSNorm), -1 none. */
int fa_ta_matcher_stack(const fa_ta_matcher *m, const char *frame)
{
    if (!frame) return -1;
    for (int i = 0; i < m->n; i++) {
        const char *st = m->p[i].stack;
        if (!st) continue;
        while (*st) {
            size_t l = strcspn(st, "|");
            char sub[64];
            if (l > 0 && l < sizeof sub) {
                memcpy(sub, st, l);
                sub[l] = 0;
                if (strcasestr(frame, sub)) return i;
            }
            st += l;
            if (*st == '|') st++;
        }
    }
    return -1;
}

uint64_t fa_ta_matcher_alphabet(const fa_ta_matcher *m, int pattern)
{
    if (pattern < 0 || pattern >= m->n) return 0;
    const cpat *c = &m->p[pattern];
    uint64_t set = c->skip;
    for (int i = 0; i < c->n; i++) set |= c->st[i].keys;
    return set;
}
