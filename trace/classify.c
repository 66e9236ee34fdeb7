/* trace/classify — what a GPU kernel is, from its name and the cpu op that launched it: the
 * normalised name (the sequence token), the kernel class, and the op key of the trace-advice
 * alphabet (docs/trace-advice.md lists the patterns and their order). */
#include "trace/trace.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- names and classes ---- */

static const char *const k_class_names[] = {"elementwise", "reduction", "gemm",       "conv",  "copy",
                                             "other",       "attention", "collective", "memcpy"};
_Static_assert(sizeof k_class_names / sizeof k_class_names[0] == FA_KCLASS_COUNT, "a name per kernel class");

const char *fa_kclass_name(fa_kclass c)
{
    return (unsigned)c < FA_KCLASS_COUNT ? k_class_names[c] : "?";
}

bool fa_kclass_light(fa_kclass c)
{
    return c == FA_KCLASS_ELEMENTWISE || c == FA_KCLASS_REDUCTION || c == FA_KCLASS_COPY;
}

/* case-insensitive substring */
static bool has(const char *hay, const char *needle)
{
    return strcasestr(hay, needle) != NULL;
}

/* a whole word (split at anything not alphanumeric, '_' included), case-insensitive */
static bool has_word(const char *hay, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = hay; (p = strcasestr(p, word)) != NULL; p++) {
        bool left = p == hay || !isalnum((unsigned char)p[-1]);
        bool right = !isalnum((unsigned char)p[n]);
        if (left && right) return true;
    }
    return false;
}

/* a word boundary before s[i] (i <= strlen(s)): the start or end, a character that is not a
 * letter or digit ('_' included) on either side, a lower-case letter then an upper-case one
 * ("topkGating|Softmax"), a letter then a digit or a digit then a letter ("log|2") */
static bool boundary(const char *s, size_t i)
{
    if (i == 0 || !s[i]) return true;
    unsigned char a = (unsigned char)s[i - 1], b = (unsigned char)s[i];
    if (!isalnum(a) || !isalnum(b)) return true;
    if (islower(a) && isupper(b)) return true;
    return !isdigit(a) != !isdigit(b);
}

/* pat in hay (case-insensitive) as a word: each end of pat that is a letter or digit sits on a
 * boundary of hay ("<log" in "<log2>" and "<log>", not in "<logical_and>"; "exp" in "exp_kernel",
 * not in "expert") */
static bool word_at(const char *hay, const char *pat)
{
    size_t n = strlen(pat);
    if (!n) return false;
    bool lw = isalnum((unsigned char)pat[0]), rw = isalnum((unsigned char)pat[n - 1]);
    for (const char *p = hay; (p = strcasestr(p, pat)) != NULL; p++) {
        size_t i = (size_t)(p - hay);
        if ((!lw || boundary(hay, i)) && (!rw || boundary(hay, i + n))) return true;
    }
    return false;
}

/* pat in hay (case-insensitive) as a whole identifier: no letter, digit or '_' next to it.
 * "Memset (Device)", "Memcpy DtoD", the collector's "memcpy:HtoD"; not the Triton kernel
 * "_combined_routing_memset" or cub's "batch_memcpy::BatchMemcpyKernel", which are kernels */
static bool has_ident(const char *hay, const char *pat)
{
    size_t n = strlen(pat);
    for (const char *p = hay; (p = strcasestr(p, pat)) != NULL; p++) {
        bool left = p == hay || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        bool right = !(isalnum((unsigned char)p[n]) || p[n] == '_');
        if (left && right) return true;
    }
    return false;
}

/* Patterns, tried in this order (docs/trace-advice.md): copy, reduction, convolution-only
 * words, gemm, other convolution words, elementwise; first match wins. Order matters: "cudnn::bn_fw_tr_*" is a reduction before it
 * is a cuDNN kernel, "..._winograd_..._relu_..." is a convolution with a relu epilogue. */
/* collectives: NCCL / RCCL device kernels, PyTorch symmetric-memory and vLLM custom all-reduce */
static const char *const k_collective[] = {"nccl", "rccl", "msccl", "all_reduce", "allreduce", "all_gather", "allgather",
                                           "reduce_scatter", "reducescatter", "all_to_all", "alltoall", "multimem",
                                           "cross_device_reduce", "one_shot_all", "two_shot_all", NULL};
/* copy-engine transfers and sets that a profiler lists as kernels (CUDA "Memcpy DtoD", ROCm blits):
 * "memcpy" / "memset" as a whole identifier (has_ident), ROCm's blit kernels by their prefix */
static const char *const k_memcpy_ident[] = {"memcpy", "memset", NULL};
static const char *const k_memcpy[] = {"rocclr_copy", "rocclr_fill", NULL};
static const char *const k_copy[] = {"copy_kernel", "direct_copy", "CatArrayBatchedCopy", "copy_device", NULL};
static const char *const k_reduction[] = {"reduce_kernel", "reduction", "softmax", "layer_norm", "layernorm",
                                          "group_norm", "groupnorm", "batch_norm", "batchnorm", "bn_fw", "bn_bw",
                                          "welford", "rms_norm", "rmsnorm", "norm_kernel", "argmax", "cross_entropy",
                                          "nll_loss", "triton_red_", "triton_per_", "GradGammaBeta", NULL};
static const char *const k_gemm[] = {"gemm", "cublas", "gemv", "matmul", "xmma", "triton_tem_", "Cijk_",
                                     "hipblaslt", "rocblas", "wmma", "mfma", "nvjet", NULL};
/* words that name a GEMM / convolution only in the kernel's own name: in template arguments they
 * are element types (cutlass::bfloat16_t in a MoE finalize kernel) or longer words
 * (hipcub's convert_binary_result_type_wrapper in a rocprim reduction) */
static const char *const k_gemm_own[] = {"cutlass", "bmm_", NULL}; /* bmm_: TensorRT-LLM's batched GEMMs */
/* fused attention: FlashAttention (CUDA and ROCm CK "fmha"), PyTorch's memory-efficient kernels */
static const char *const k_attention[] = {"flash_fwd", "flash_bwd", "flash::", "fmha", "attention_kernel",
                                          "efficient_attention", "flash_attn", "attn_fwd", "attn_bwd", "mha_fwd",
                                          "mha_bwd", "paged_attention", "unified_attention", "flash_decoding", NULL};
static const char *const k_conv_strong[] = {"implicit_convolve", "convolve", "winograd", "conv2d", "conv3d", "fprop",
                                            "dgrad", "wgrad", NULL};
static const char *const k_conv[] = {"cudnn", "MIOpen", "miopen", NULL}; /* and "conv", not in "convert" */
static const char *const k_elem_sub[] = {"elementwise", "pointwise", "triton_poi_", "multi_tensor_apply",
                                         "_and_mul", "swiglu", "geglu", NULL}; /* and gated activations */
static const char *const k_elem_words[] = {"add", "sub", "mul", "div", "relu", "gelu", "silu", "sigmoid", "tanh", "exp",
                                           "neg", "abs", "clamp", "where", "fill", "dropout", "threshold", "bias",
                                           "cast", "pow", "sqrt", "rsqrt", "scale", NULL};

static bool any_sub(const char *name, const char *const *pats)
{
    for (; *pats; pats++)
        if (has(name, *pats)) return true;
    return false;
}

/* "conv" in s that does not begin "convert" (vllm::convert_fp8_kernel, convertKernel) */
static bool has_conv(const char *s)
{
    for (const char *p = s; (p = strcasestr(p, "conv")) != NULL; p += 4)
        if (strncasecmp(p, "convert", 7)) return true;
    return false;
}

/* the kernel's own name: after a leading "void ", up to its template arguments or parameters */
static bool demangle_prefix(const char *m, char *buf, size_t cap);

static const char *own_name(const char *name, char *buf, size_t cap)
{
    if (demangle_prefix(name, buf, cap)) return buf;
    if (!strncmp(name, "void ", 5)) name += 5;
    size_t n = strcspn(name, "<(");
    if (n >= cap) n = cap - 1;
    memcpy(buf, name, n);
    buf[n] = 0;
    return buf;
}

fa_kclass fa_kernel_classify(const char *name)
{
    if (!name) return FA_KCLASS_OTHER;
    /* torch.compile's Inductor names its kernels by kind and then by every op it fused
     * ("triton_poi_fused__to_copy_add_cat_fmha_v3_fwd_mul_neg_..._13" is a pointwise kernel, not
     * attention; "triton_poi_fused_native_layer_norm_..." no reduction): the prefix says what it is */
    if (!strncmp(name, "triton_poi_", 11)) return FA_KCLASS_ELEMENTWISE;
    if (!strncmp(name, "triton_red_", 11) || !strncmp(name, "triton_per_", 11)) return FA_KCLASS_REDUCTION;
    if (!strncmp(name, "triton_tem_", 11)) return FA_KCLASS_GEMM;
    char own[256];
    own_name(name, own, sizeof own);
    /* cuBLAS's split-K reduction finishes a GEMM: part of it, not a reduction to fuse */
    if (has(name, "splitKreduce") || has(name, "splitK_reduce")) return FA_KCLASS_GEMM;
    if (any_sub(name, k_collective)) return FA_KCLASS_COLLECTIVE;
    if (any_sub(name, k_attention)) return FA_KCLASS_ATTENTION;
    if (any_sub(name, k_memcpy)) return FA_KCLASS_MEMCPY;
    for (const char *const *m = k_memcpy_ident; *m; m++)
        if (has_ident(name, *m)) return FA_KCLASS_MEMCPY;
    if (any_sub(name, k_copy)) return FA_KCLASS_COPY;
    if (any_sub(name, k_reduction)) return FA_KCLASS_REDUCTION;
    if (any_sub(name, k_conv_strong)) return FA_KCLASS_CONV;
    /* fbgemm_gpu::* are embedding / sparse kernels, not GEMMs */
    if (!has(name, "fbgemm_gpu") && (any_sub(name, k_gemm) || any_sub(own, k_gemm_own))) return FA_KCLASS_GEMM;
    if (any_sub(own, k_conv) || has_conv(own)) return FA_KCLASS_CONV;
    if (any_sub(name, k_elem_sub)) return FA_KCLASS_ELEMENTWISE;
    /* whole words, '_' splits: "add_kernel", "fused_bias_gelu" */
    char buf[512];
    snprintf(buf, sizeof buf, "%s", name);
    for (char *p = buf; *p; p++)
        if (*p == '_') *p = ' ';
    for (const char *const *w = k_elem_words; *w; w++)
        if (has_word(buf, *w)) return FA_KCLASS_ELEMENTWISE;
    return FA_KCLASS_OTHER;
}

/* identifiers in PyTorch template arguments that never name the op */
static const char *const k_hint_stop[] = {
    "at", "native", "detail", "Array", "char", "float", "double", "int", "long", "unsigned", "short", "bool",
    "void", "const", "c10", "Half", "BFloat16", "complex", "anonymous", "namespace", "lambda", "operator",
    "TensorIteratorBase", "Scalar", "BinaryFunctor", "UnaryFunctor", "AUnaryFunctor", "BUnaryFunctor",
    "func_wrapper_t", "ReduceOp", "std", "signed", "memory", "LoadWithoutCast", "StoreWithoutCast",
    "OffsetCalculator", "TrivialOffsetCalculator", "function", "uint8_t", "int64_t", "int32_t", "ClampLimits",
    "opmath_t", "scalar_t", "cuda", "vectorized", "unrolled", "legacy", "policies", "memory_access", "Float8_e4m3fn",
    "Float8_e5m2", "ComplexHalf", "gpu_kernel_impl", "gpu_kernel_impl_nocast", "gpu_kernel_with_scalars",
    "gpu", "launch_legacy_kernel", "type_specialized_kernel", "opmath_gpu_kernel_with_scalars", "binary_internal",
    "unary_internal", "impl", "AbsFunctor", "TensorListMetadata", "FusedOptimizerTensorListMetadata", "ck_tile", NULL};

static bool stop_word(const char *w, size_t n)
{
    for (const char *const *s = k_hint_stop; *s; s++)
        if (strlen(*s) == n && !strncmp(*s, w, n)) return true;
    return false;
}

/* The op a PyTorch elementwise / reduce kernel's template arguments name, e.g.
 * "4, at::native::CUDAFunctor_add<float>, ..." -> "add"; "ReduceOp<float, MeanOps<..>>" -> "Mean". */
static bool functor_hint(const char *targs, size_t len, char *out, size_t cap)
{
    static const char *const prefixes[] = {"CUDAFunctorOnSelf_", "CUDAFunctorOnOther_", "CUDAFunctor_", "launch_", NULL};
    static const char *const suffixes[] = {"_kernel_impl", "_kernel_cuda", "_kernel", "_impl", "_functor", "Functor", "Ops", NULL};
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)targs[i];
        if (!(isalpha(c) || c == '_')) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && (isalnum((unsigned char)targs[j]) || targs[j] == '_')) j++;
        const char *w = targs + i;
        size_t n = j - i;
        i = j;
        if (stop_word(w, n)) continue;
        for (const char *const *p = prefixes; *p; p++) {
            size_t pl = strlen(*p);
            if (n > pl && !strncmp(w, *p, pl)) {
                w += pl;
                n -= pl;
                break;
            }
        }
        for (const char *const *s = suffixes; *s; s++) {
            size_t sl = strlen(*s);
            if (n > sl && !strncmp(w + n - sl, *s, sl)) {
                n -= sl;
                break;
            }
        }
        if (!n || stop_word(w, n)) continue;
        snprintf(out, cap, "%.*s", (int)n, w);
        return true;
    }
    return false;
}

/* An Itanium-mangled kernel name (ROCm traces of aiter, Composable Kernel and sgl-kernel keep
 * them: "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64E...") -> its qualified name
 * ("aiter::add_rmsnorm_quant_kernel"), the way the demangled names of other kernels read. Only the
 * <nested-name> / <unscoped-name> of source names is read (the ABI's productions for them: N ... E,
 * <length><identifier>, St = std, L for internal linkage, _GLOBAL__N_1 = the anonymous
 * namespace; a name whose own prefix holds any other S is left as it is), up to the template arguments (I) or the
 * parameters; nothing else is needed for a kernel's name. For Composable Kernel's generic
 * ck_tile::kentry the kernel class named first in its template arguments is kept
 * ("ck_tile::kentry<Rmsnorm2dFwd>"), as the functor of PyTorch's generic kernels is. False (buf
 * untouched) when the name is not of that form. */
static bool demangle_prefix(const char *m, char *buf, size_t cap)
{
    if (strncmp(m, "_Z", 2)) return false;
    const char *p = m + 2;
    bool nested = *p == 'N';
    if (nested) {
        p++;
        while (*p == 'r' || *p == 'V' || *p == 'K' || *p == 'R' || *p == 'O') p++;
    }
    size_t o = 0;
    bool any = false;
    for (;;) {
        if (*p == 'L') p++;
        const char *part = NULL;
        size_t len = 0;
        if (p[0] == 'S' && p[1] == 't') {
            part = "std", len = 3, p += 2;
        } else if (p[0] == 'S') {
            /* any other S: a substitution (S_, S<seq>_) names an earlier prefix, and nothing
             * precedes a name's own first component; the abbreviations (Sa, Ss, ...) are std
             * types, not kernel names. Not of the form read here. */
            return false;
        } else if (isdigit((unsigned char)*p)) {
            size_t n = 0;
            while (isdigit((unsigned char)*p)) {
                n = n * 10 + (size_t)(*p - '0');
                if (n > 4096) return false;
                p++;
            }
            if (strnlen(p, n) < n || !n) return false;
            part = p, len = n, p += n;
            if (len == 12 && !strncmp(part, "_GLOBAL__N_1", 12)) part = "(anonymous namespace)", len = 21;
        } else {
            break;
        }
        if (o + (any ? 2 : 0) + len + 1 > cap) return false;
        if (any) buf[o++] = ':', buf[o++] = ':';
        memcpy(buf + o, part, len);
        o += len;
        any = true;
        if (!nested) break;
    }
    if (!any || (nested && *p != 'E' && *p != 'I')) return false;
    buf[o] = 0;
    if (*p == 'I' && o >= 8 && !strcmp(buf + o - 8, "::kentry")) {
        /* the first class in the template arguments: a source name after a nested-name start or a
         * substitution ("ILi1ENS_12Rmsnorm2dFwdI...") */
        for (const char *q = p + 1; *q; q++) {
            if (!(q[-1] == 'N' || q[-1] == '_') || !isdigit((unsigned char)*q)) continue;
            size_t n = 0;
            const char *r = q;
            while (isdigit((unsigned char)*r) && n < 4096) n = n * 10 + (size_t)(*r++ - '0');
            if (n < 3 || strnlen(r, n) < n || !(isalpha((unsigned char)*r) || *r == '_')) continue;
            if (o + n + 3 < cap) {
                buf[o++] = '<';
                memcpy(buf + o, r, n);
                o += n;
                buf[o++] = '>';
                buf[o] = 0;
            }
            break;
        }
    }
    return true;
}

const char *fa_kernel_name_normalize(const char *name, char *buf, size_t cap)
{
    if (!cap) return buf;
    buf[0] = 0;
    if (!name) return buf;
    if (demangle_prefix(name, buf, cap)) return buf;
    const char *s = name;
    if (!strncmp(s, "void ", 5)) s += 5;
    size_t o = 0;
    int depth = 0;
    const char *targs = NULL;
    size_t targs_len = 0;
    const char *targs_start = NULL;
    int paren = 0; /* parentheses inside template arguments: "enable_if<((8)>(0))>" */
    for (const char *p = s; *p; p++) {
        if (depth == 0 && !strncmp(p, "(anonymous namespace)", 21)) {
            for (int k = 0; k < 21 && o + 1 < cap; k++) buf[o++] = p[k];
            p += 20;
            continue;
        }
        if (depth > 0 && (*p == '(' || *p == ')')) {
            paren += *p == '(' ? 1 : paren > 0 ? -1 : 0;
            continue;
        }
        if (paren > 0) continue;
        if (*p == '<') {
            if (depth == 0 && !targs) targs_start = p + 1;
            depth++;
            continue;
        }
        if (*p == '>') {
            if (depth > 0) depth--;
            if (depth == 0 && targs_start && !targs) {
                targs = targs_start;
                targs_len = (size_t)(p - targs_start);
            }
            continue;
        }
        if (depth > 0) continue;
        if (*p == '(') break; /* the parameter list */
        if (*p == ' ' && (targs || memmem(buf, o, "::", 2)) && (isalpha((unsigned char)p[1]) || p[1] == '_')) {
            /* "std::enable_if<...>::type vllm::fused_add_rms_norm_kernel<...>(...)": what came
             * before was the return type; the name (and its template arguments) follow */
            o = 0;
            targs = targs_start = NULL;
            continue;
        }
        if (o + 1 < cap) buf[o++] = *p;
    }
    while (o > 0 && buf[o - 1] == ' ') o--;
    buf[o] = 0;
    if (targs && (has(buf, "elementwise_kernel") || has(buf, "reduce_kernel") || has(buf, "elementwise") ||
                  has(buf, "multi_tensor_apply") || has(buf, "::kentry"))) {
        char hint[128];
        if (functor_hint(targs, targs_len, hint, sizeof hint) && o + strlen(hint) + 3 < cap) {
            snprintf(buf + o, cap - o, "<%s>", hint);
        }
    }
    if (!buf[0]) snprintf(buf, cap, "%s", name);
    return buf;
}

const char *fa_kernel_name_short(const char *name, char *buf, size_t cap)
{
    if (!cap) return buf;
    char norm[512];
    fa_kernel_name_normalize(name ? name : "?", norm, sizeof norm);
    /* drop namespaces: keep what follows the last "::" outside <...> */
    const char *s = norm;
    int depth = 0;
    for (const char *p = norm; *p; p++) {
        if (*p == '<') depth++;
        else if (*p == '>' && depth > 0) depth--;
        else if (depth == 0 && p[0] == ':' && p[1] == ':') s = p + 2;
    }
    size_t n = strlen(s);
    if (n < cap) {
        memcpy(buf, s, n + 1);
        return buf;
    }
    size_t keep = cap > 4 ? cap - 4 : 0;
    while (keep > 0 && ((unsigned char)s[keep] & 0xC0) == 0x80) keep--; /* UTF-8 boundary */
    memcpy(buf, s, keep);
    memcpy(buf + keep, "...", cap > 4 ? 4 : 0);
    if (cap <= 4) buf[0] = 0;
    return buf;
}

/* ---------------------------------------------------------------- the op alphabet ---- */

/* Keys. Index = key id (FA_TA_KEY_*); stable within a build only (never stored as numbers). */
static const char *const k_keys[] = {
    "other", "add", "sub", "mul", "div", "neg", "pow", "sqrt", "rsqrt", "exp", "log", "tanh", "erf", "sigmoid",
    "silu", "gelu", "relu", "where", "fill", "copy", "cat", "mean", "sum", "amax", "var", "softmax",
    "layer_norm", "rms_norm", "dropout", "clamp", "gemm", "conv", "attention", "index", "embedding", "batch_norm",
    "foreach", "optimizer", "collective", "memcpy", "gated_activation"};
_Static_assert(sizeof k_keys / sizeof k_keys[0] == FA_TA_KEY_COUNT, "a name per op key");
_Static_assert(FA_TA_KEY_COUNT <= 64, "the matcher keeps a set of keys in 64 bits");

const char *fa_ta_key_name(int key)
{
    return key >= 0 && key < FA_TA_KEY_COUNT ? k_keys[key] : "other";
}

int fa_ta_key_parse(const char *s, size_t n)
{
    for (int k = 0; k < FA_TA_KEY_COUNT; k++)
        if (strlen(k_keys[k]) == n && !strncmp(k_keys[k], s, n)) return k;
    return -1;
}

/* cpu op names (aten::, after the namespace, trailing '_' of in-place ops removed) -> key.
 * PyTorch's native_functions.yaml names; both the public op and the one that launches. */
static const struct { const char *op; int key; } k_ops[] = {
    {"add", FA_TA_KEY_ADD}, {"sub", FA_TA_KEY_SUB}, {"rsub", FA_TA_KEY_SUB}, {"mul", FA_TA_KEY_MUL},
    {"div", FA_TA_KEY_DIV}, {"neg", FA_TA_KEY_NEG}, {"pow", FA_TA_KEY_POW}, {"square", FA_TA_KEY_POW},
    {"sqrt", FA_TA_KEY_SQRT}, {"rsqrt", FA_TA_KEY_RSQRT}, {"exp", FA_TA_KEY_EXP}, {"log", FA_TA_KEY_LOG},
    {"tanh", FA_TA_KEY_TANH}, {"erf", FA_TA_KEY_ERF}, {"sigmoid", FA_TA_KEY_SIGMOID}, {"silu", FA_TA_KEY_SILU},
    {"gelu", FA_TA_KEY_GELU}, {"relu", FA_TA_KEY_RELU}, {"where", FA_TA_KEY_WHERE}, {"masked_fill", FA_TA_KEY_WHERE},
    {"fill", FA_TA_KEY_FILL}, {"zero", FA_TA_KEY_FILL}, {"copy", FA_TA_KEY_COPY}, {"to", FA_TA_KEY_COPY},
    {"_to_copy", FA_TA_KEY_COPY}, {"contiguous", FA_TA_KEY_COPY}, {"clone", FA_TA_KEY_COPY}, {"type_as", FA_TA_KEY_COPY},
    {"cat", FA_TA_KEY_CAT}, {"mean", FA_TA_KEY_MEAN}, {"sum", FA_TA_KEY_SUM}, {"amax", FA_TA_KEY_AMAX},
    {"max", FA_TA_KEY_AMAX}, {"var", FA_TA_KEY_VAR}, {"var_mean", FA_TA_KEY_VAR}, {"softmax", FA_TA_KEY_SOFTMAX},
    {"_softmax", FA_TA_KEY_SOFTMAX}, {"log_softmax", FA_TA_KEY_SOFTMAX}, {"_log_softmax", FA_TA_KEY_SOFTMAX},
    {"layer_norm", FA_TA_KEY_LAYER_NORM}, {"native_layer_norm", FA_TA_KEY_LAYER_NORM},
    {"rms_norm", FA_TA_KEY_RMS_NORM}, {"_fused_rms_norm", FA_TA_KEY_RMS_NORM}, {"dropout", FA_TA_KEY_DROPOUT},
    {"native_dropout", FA_TA_KEY_DROPOUT}, {"clamp", FA_TA_KEY_CLAMP}, {"clamp_min", FA_TA_KEY_CLAMP},
    {"addmm", FA_TA_KEY_GEMM}, {"mm", FA_TA_KEY_GEMM}, {"bmm", FA_TA_KEY_GEMM}, {"baddbmm", FA_TA_KEY_GEMM},
    {"matmul", FA_TA_KEY_GEMM}, {"linear", FA_TA_KEY_GEMM}, {"_scaled_mm", FA_TA_KEY_GEMM},
    {"convolution", FA_TA_KEY_CONV}, {"_convolution", FA_TA_KEY_CONV}, {"cudnn_convolution", FA_TA_KEY_CONV},
    {"conv2d", FA_TA_KEY_CONV}, {"scaled_dot_product_attention", FA_TA_KEY_ATTENTION},
    {"_scaled_dot_product_flash_attention", FA_TA_KEY_ATTENTION},
    {"_scaled_dot_product_efficient_attention", FA_TA_KEY_ATTENTION},
    {"_scaled_dot_product_cudnn_attention", FA_TA_KEY_ATTENTION}, {"_flash_attention_forward", FA_TA_KEY_ATTENTION},
    {"_efficient_attention_forward", FA_TA_KEY_ATTENTION}, {"index", FA_TA_KEY_INDEX},
    {"index_select", FA_TA_KEY_INDEX}, {"gather", FA_TA_KEY_INDEX}, {"embedding", FA_TA_KEY_EMBEDDING},
};

int fa_ta_key_of_op(const char *op)
{
    if (!op || !*op) return -1;
    /* collectives (c10d::allreduce_, nccl:all_reduce, symm_mem::multimem_all_reduce_, ...) */
    if (any_sub(op, k_collective) || has(op, "c10d::") || has(op, "record_param_comms")) return FA_TA_KEY_COLLECTIVE;
    const char *s = op;
    const char *c = strstr(s, "::");
    if (c) s = c + 2;
    /* optimizer steps: foreach ops (one multi-tensor kernel per arithmetic op), fused optimizers */
    if (!strncmp(s, "_foreach_", 9)) return FA_TA_KEY_FOREACH;
    if (!strncmp(s, "_fused_adam", 11) || !strncmp(s, "_fused_sgd", 10) || !strncmp(s, "_fused_adagrad", 14))
        return FA_TA_KEY_OPTIMIZER;
    /* a gated activation op (vLLM _C::silu_and_mul, sgl_kernel::gelu_tanh_and_mul, ...) */
    if (strstr(s, "_and_mul")) return FA_TA_KEY_GATED_ACT;
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '_' && s[0] != '_') n--; /* add_ -> add; keep _to_copy */
    for (size_t i = 0; i < sizeof k_ops / sizeof k_ops[0]; i++)
        if (strlen(k_ops[i].op) == n && !strncmp(k_ops[i].op, s, n)) return k_ops[i].key;
    return -1;
}

/* Kernel names -> key: case-insensitive matches in the normalised name, the PyTorch functor in
 * "<...>" first (CUDA and ROCm eager builds name the same templates: HIP keeps them), then the
 * kernel's own name. Tried in order; the first match wins ("rsqrt" before "sqrt", "catarray"
 * before "copy", "softmax" before "max", a gated activation before its activation). An op word
 * (W) matches only as a word of the name (word_at): "exp" is not in "count_and_sort_expert_tokens",
 * "fill" not in "BatchPrefill", "cat_" not in "recat_copy", "<log" not in "<logical_and>"; a
 * library or kernel fragment (S) anywhere ("flash" in "flashinfer", "layernorm" in
 * "LayerNormalization"). */
enum { S = 0, W = 1 };
static const struct { const char *sub; int key; bool word; } k_kernel_keys[] = {
    {"fused_adam", FA_TA_KEY_OPTIMIZER, S}, {"fusedadam", FA_TA_KEY_OPTIMIZER, S}, {"fused_sgd", FA_TA_KEY_OPTIMIZER, S},
    {"multi_tensor_apply", FA_TA_KEY_FOREACH, S},
    /* gated activations: act(x) * y in one kernel (vLLM / sglang act_and_mul_kernel with the
     * activation a template argument, silu_and_mul, gelu_and_mul, gelu_tanh_and_mul; SwiGLU,
     * GeGLU, ReGLU kernels): never the one activation its name may hold */
    {"_and_mul", FA_TA_KEY_GATED_ACT, S}, {"andmul", FA_TA_KEY_GATED_ACT, S}, {"swiglu", FA_TA_KEY_GATED_ACT, W},
    {"geglu", FA_TA_KEY_GATED_ACT, W}, {"reglu", FA_TA_KEY_GATED_ACT, W},
    /* a fused rotary embedding is no embedding lookup */
    {"rotary", FA_TA_KEY_OTHER, S},
    {"softmax", FA_TA_KEY_SOFTMAX, S}, {"bn_fw", FA_TA_KEY_BATCH_NORM, S}, {"bn_bw", FA_TA_KEY_BATCH_NORM, S},
    {"batch_norm", FA_TA_KEY_BATCH_NORM, S}, {"batchnorm", FA_TA_KEY_BATCH_NORM, S}, {"layer_norm", FA_TA_KEY_LAYER_NORM, S},
    {"layernorm", FA_TA_KEY_LAYER_NORM, S}, {"rowwisemoments", FA_TA_KEY_LAYER_NORM, S}, {"gradgammabeta", FA_TA_KEY_LAYER_NORM, S},
    {"rms_norm", FA_TA_KEY_RMS_NORM, S}, {"rmsnorm", FA_TA_KEY_RMS_NORM, S},
    {"catarraybatchedcopy", FA_TA_KEY_CAT, S}, {"cat_", FA_TA_KEY_CAT, W}, {"rsqrt", FA_TA_KEY_RSQRT, W},
    {"sqrt", FA_TA_KEY_SQRT, W}, {"pow", FA_TA_KEY_POW, W}, {"silu", FA_TA_KEY_SILU, W}, {"gelu", FA_TA_KEY_GELU, W},
    {"sigmoid", FA_TA_KEY_SIGMOID, W}, {"tanh", FA_TA_KEY_TANH, W}, {"erf", FA_TA_KEY_ERF, W}, {"exp", FA_TA_KEY_EXP, W},
    {"neg", FA_TA_KEY_NEG, W}, {"relu", FA_TA_KEY_RELU, W}, {"threshold", FA_TA_KEY_RELU, W}, {"where", FA_TA_KEY_WHERE, W},
    {"masked_fill", FA_TA_KEY_WHERE, W}, {"fill", FA_TA_KEY_FILL, W}, {"dropout", FA_TA_KEY_DROPOUT, W},
    {"clamp", FA_TA_KEY_CLAMP, W}, {"mean", FA_TA_KEY_MEAN, W}, {"welford", FA_TA_KEY_VAR, S}, {"sum", FA_TA_KEY_SUM, W},
    {"maxops", FA_TA_KEY_AMAX, S}, {"<max", FA_TA_KEY_AMAX, W}, {"amax", FA_TA_KEY_AMAX, W}, {"copy", FA_TA_KEY_COPY, W},
    {"<add", FA_TA_KEY_ADD, W}, {"add_kernel", FA_TA_KEY_ADD, W}, {"<sub", FA_TA_KEY_SUB, W}, {"<mul", FA_TA_KEY_MUL, W},
    {"mul_kernel", FA_TA_KEY_MUL, W}, {"<div", FA_TA_KEY_DIV, W}, {"div_", FA_TA_KEY_DIV, W}, {"<log", FA_TA_KEY_LOG, W},
    {"flash", FA_TA_KEY_ATTENTION, S}, {"fmha", FA_TA_KEY_ATTENTION, S}, {"attention", FA_TA_KEY_ATTENTION, S},
    {"indexselect", FA_TA_KEY_INDEX, S}, {"index_elementwise", FA_TA_KEY_INDEX, S}, {"gather", FA_TA_KEY_INDEX, S},
    {"embedding", FA_TA_KEY_EMBEDDING, S},
};

int fa_ta_key_of_kernel(const char *token, fa_kclass cls)
{
    if (!token) return -1;
    /* GEMM / convolution kernels are named by library (cutlass, cuBLAS, Tensile Cijk_, MIOpen):
     * the class says it */
    if (cls == FA_KCLASS_GEMM) return strcasestr(token, "flash") || strcasestr(token, "fmha") ? FA_TA_KEY_ATTENTION : FA_TA_KEY_GEMM;
    if (cls == FA_KCLASS_CONV) return FA_TA_KEY_CONV;
    if (cls == FA_KCLASS_ATTENTION) return FA_TA_KEY_ATTENTION;
    if (cls == FA_KCLASS_COLLECTIVE) return FA_TA_KEY_COLLECTIVE;
    if (cls == FA_KCLASS_MEMCPY) return FA_TA_KEY_MEMCPY;
    const char *lt = strchr(token, '<');
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: the functor in <...> (with its '<'), pass 1: the whole name */
        const char *hay = pass == 0 ? lt : token;
        if (!hay) continue;
        for (size_t i = 0; i < sizeof k_kernel_keys / sizeof k_kernel_keys[0]; i++)
            if (k_kernel_keys[i].word ? word_at(hay, k_kernel_keys[i].sub) : strcasestr(hay, k_kernel_keys[i].sub) != NULL)
                return k_kernel_keys[i].key;
        if (pass == 0) {
            /* a bare functor "<add>", "<Mul>" */
            char f[32];
            size_t n = strcspn(lt + 1, ">");
            if (n > 0 && n < sizeof f) {
                for (size_t k = 0; k < n; k++) f[k] = (char)tolower((unsigned char)lt[1 + k]);
                int key = fa_ta_key_parse(f, n);
                if (key >= 0) return key;
            }
        }
    }
    return -1;
}

/* ---------------------------------------------------------------- refinements ---- */

fa_kclass fa_kernel_classify_op(const char *name, const char *op)
{
    return fa_kclass_with_op(fa_kernel_classify(name), fa_ta_key_of_op(op));
}

fa_kclass fa_kclass_with_op(fa_kclass c, int k)
{
    if (k == FA_TA_KEY_COLLECTIVE && c != FA_KCLASS_MEMCPY) return FA_KCLASS_COLLECTIVE;
    if (c != FA_KCLASS_OTHER) return c;
    switch (k) {
    case FA_TA_KEY_GEMM: return FA_KCLASS_GEMM;
    case FA_TA_KEY_CONV: return FA_KCLASS_CONV;
    case FA_TA_KEY_ATTENTION: return FA_KCLASS_ATTENTION;
    default: return c;
    }
}

/* backward markers in a kernel's or op's name (case-insensitive substrings) */
static const char *const k_backward[] = {"backward", "_bwd", "bwd_", "bn_bw", "grad_input", "gradinput",
                                         "gradgammabeta", "gradients", "_grad_", NULL};

bool fa_kernel_is_backward(const char *name, const char *op)
{
    return (name && any_sub(name, k_backward)) || (op && any_sub(op, k_backward));
}

const char *fa_kernel_fused_by(const char *name, const char *op, const char *stack, fa_kclass cls)
{
    if (cls == FA_KCLASS_ATTENTION) return "fused attention kernel";
    if ((name && !strncmp(name, "triton_", 7)) || (op && !strncmp(op, "triton_", 7)))
        return "torch.compile (Triton)";
    /* inside a compiled graph: what is not a library GEMM / convolution is the compiler's kernel */
    if (stack && cls != FA_KCLASS_GEMM && cls != FA_KCLASS_CONV &&
        (strstr(stack, "CompiledFxGraph") || strstr(stack, "Torch-Compiled Region")))
        return "torch.compile (Triton)";
    if (fa_ta_key_of_op(op) == FA_TA_KEY_OPTIMIZER || (name && (has(name, "fused_adam") || has(name, "fusedadam"))))
        return "fused optimizer";
    return NULL;
}
