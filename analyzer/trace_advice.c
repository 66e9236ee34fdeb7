/* analyzer/trace_advice — fusion advice from a GPU kernel trace without a model graph, computed
 * in one pass over per-stream time-ordered kernels into statistics bounded by distinct kernels,
 * shapes and sequences: named patterns and repeated memory-bound sequences (each kernel
 * occurrence in at most one) with savings from bytes and measured times, launch-bound stretches,
 * idle gaps, CUDA-graph replays (docs/trace-advice.md). */
#include "analyzer/trace_advice.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include <errno.h>

/* ---------------------------------------------------------------- names and classes ---- */

static const char *const k_class_names[FA_KCLASS_COUNT] = {"elementwise", "reduction", "gemm", "conv", "copy", "other",
                                                           "attention"};

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

/* Patterns, tried in this order (docs/trace-advice.md): copy, reduction, convolution-only
 * words, gemm, other convolution words, elementwise; first match wins. Order matters: "cudnn::bn_fw_tr_*" is a reduction before it
 * is a cuDNN kernel, "..._winograd_..._relu_..." is a convolution with a relu epilogue. */
static const char *const k_copy[] = {"memcpy", "memset", "copy_kernel", "direct_copy", "CatArrayBatchedCopy", "copy_device", NULL};
static const char *const k_reduction[] = {"reduce_kernel", "reduction", "softmax", "layer_norm", "layernorm",
                                          "group_norm", "groupnorm", "batch_norm", "batchnorm", "bn_fw", "bn_bw",
                                          "welford", "rms_norm", "rmsnorm", "norm_kernel", "argmax", "cross_entropy",
                                          "nll_loss", "triton_red_", "triton_per_", NULL};
static const char *const k_gemm[] = {"gemm", "cutlass", "cublas", "gemv", "matmul", "xmma", "triton_tem_", "Cijk_",
                                     "hipblaslt", "rocblas", "wmma", "mfma", NULL};
/* fused attention: FlashAttention (CUDA and ROCm CK "fmha"), PyTorch's memory-efficient kernels */
static const char *const k_attention[] = {"flash_fwd", "flash_bwd", "flash::", "fmha", "attention_kernel",
                                          "efficient_attention", "flash_attn", NULL};
static const char *const k_conv_strong[] = {"implicit_convolve", "convolve", "winograd", "conv2d", "conv3d", "fprop",
                                            "dgrad", "wgrad", NULL};
static const char *const k_conv[] = {"conv", "cudnn", "MIOpen", "miopen", NULL};
static const char *const k_elem_sub[] = {"elementwise", "pointwise", "triton_poi_", NULL};
static const char *const k_elem_words[] = {"add", "sub", "mul", "div", "relu", "gelu", "silu", "sigmoid", "tanh", "exp",
                                           "neg", "abs", "clamp", "where", "fill", "dropout", "threshold", "bias",
                                           "cast", "pow", "sqrt", "rsqrt", "scale", NULL};

static bool any_sub(const char *name, const char *const *pats)
{
    for (; *pats; pats++)
        if (has(name, *pats)) return true;
    return false;
}

fa_kclass fa_kernel_classify(const char *name)
{
    if (!name) return FA_KCLASS_OTHER;
    /* cuBLAS's split-K reduction finishes a GEMM: part of it, not a reduction to fuse */
    if (has(name, "splitKreduce") || has(name, "splitK_reduce")) return FA_KCLASS_GEMM;
    if (any_sub(name, k_attention)) return FA_KCLASS_ATTENTION;
    if (any_sub(name, k_copy)) return FA_KCLASS_COPY;
    if (any_sub(name, k_reduction)) return FA_KCLASS_REDUCTION;
    if (any_sub(name, k_conv_strong)) return FA_KCLASS_CONV;
    /* fbgemm_gpu::* are embedding / sparse kernels, not GEMMs */
    if (!has(name, "fbgemm_gpu") && any_sub(name, k_gemm)) return FA_KCLASS_GEMM;
    if (any_sub(name, k_conv)) return FA_KCLASS_CONV;
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
    "unary_internal", "impl", "AbsFunctor", NULL};

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

const char *fa_kernel_name_normalize(const char *name, char *buf, size_t cap)
{
    if (!cap) return buf;
    buf[0] = 0;
    if (!name) return buf;
    const char *s = name;
    if (!strncmp(s, "void ", 5)) s += 5;
    size_t o = 0;
    int depth = 0;
    const char *targs = NULL;
    size_t targs_len = 0;
    const char *targs_start = NULL;
    for (const char *p = s; *p; p++) {
        if (depth == 0 && !strncmp(p, "(anonymous namespace)", 21)) {
            for (int k = 0; k < 21 && o + 1 < cap; k++) buf[o++] = p[k];
            p += 20;
            continue;
        }
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
        if (o + 1 < cap) buf[o++] = *p;
    }
    while (o > 0 && buf[o - 1] == ' ') o--;
    buf[o] = 0;
    if (targs && (has(buf, "elementwise_kernel") || has(buf, "reduce_kernel") || has(buf, "elementwise"))) {
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

/* ---------------------------------------------------------------- small tables ---- */

/* string -> dense id (open addressing, SipHash under a random key: the strings come from input
 * files, so colliding names must not make the table quadratic) */
typedef struct smap {
    const char **keys;
    int32_t *ids;
    size_t cap, n;
    uint64_t key[2];
} smap;

static void smap_free(smap *m)
{
    free(m->keys);
    free(m->ids);
}

/* id of s (interned into ar when new, *added set); -1 on OOM */
static int32_t smap_get(smap *m, fa_arena *ar, const char *s, int32_t next_id, bool *added, const char **stored)
{
    if (added) *added = false;
    if (!m->key[0] && !m->key[1]) fa_hash_key_random(m->key);
    size_t n = strlen(s);
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 256;
        const char **nk = calloc(nc, sizeof *nk);
        int32_t *ni = calloc(nc, sizeof *ni);
        if (!nk || !ni) {
            free(nk);
            free(ni);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t h = fa_hash64_keyed(m->key, m->keys[i], strlen(m->keys[i])) & (nc - 1);
                while (nk[h]) h = (h + 1) & (nc - 1);
                nk[h] = m->keys[i];
                ni[h] = m->ids[i];
            }
        free(m->keys);
        free(m->ids);
        m->keys = nk;
        m->ids = ni;
        m->cap = nc;
    }
    size_t h = fa_hash64_keyed(m->key, s, n) & (m->cap - 1);
    while (m->keys[h]) {
        if (!strcmp(m->keys[h], s)) {
            if (stored) *stored = m->keys[h];
            return m->ids[h];
        }
        h = (h + 1) & (m->cap - 1);
    }
    char *c = fa_arena_strndup(ar, s, n);
    if (!c) return -1;
    m->keys[h] = c;
    m->ids[h] = next_id;
    m->n++;
    if (added) *added = true;
    if (stored) *stored = c;
    return next_id;
}

/* id table keyed by a 64-bit hash the caller computes, equality by a callback on the stored
 * entity (tuples of internal ids: no string formatting per record) */
typedef struct itab {
    int32_t *slots; /* id + 1, 0 empty */
    uint64_t *hash;
    size_t cap, n;
} itab;

static void itab_free(itab *t)
{
    free(t->slots);
    free(t->hash);
}

/* the id whose entity eq() accepts, else -1 (*slot_out: where to insert) */
static int32_t itab_find(itab *t, uint64_t h, bool (*eq)(const void *ctx, int32_t id), const void *ctx, size_t *slot_out)
{
    if (!t->cap) {
        *slot_out = SIZE_MAX;
        return -1;
    }
    size_t i = h & (t->cap - 1);
    while (t->slots[i]) {
        if (t->hash[i] == h && eq(ctx, t->slots[i] - 1)) return t->slots[i] - 1;
        i = (i + 1) & (t->cap - 1);
    }
    *slot_out = i;
    return -1;
}

static bool itab_insert(itab *t, uint64_t h, int32_t id)
{
    if ((t->n + 1) * 2 > t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        int32_t *ns = calloc(nc, sizeof *ns);
        uint64_t *nh = calloc(nc, sizeof *nh);
        if (!ns || !nh) {
            free(ns);
            free(nh);
            return false;
        }
        for (size_t i = 0; i < t->cap; i++)
            if (t->slots[i]) {
                size_t j = t->hash[i] & (nc - 1);
                while (ns[j]) j = (j + 1) & (nc - 1);
                ns[j] = t->slots[i];
                nh[j] = t->hash[i];
            }
        free(t->slots);
        free(t->hash);
        t->slots = ns;
        t->hash = nh;
        t->cap = nc;
    }
    size_t i = h & (t->cap - 1);
    while (t->slots[i]) i = (i + 1) & (t->cap - 1);
    t->slots[i] = id + 1;
    t->hash[i] = h;
    t->n++;
    return true;
}

/* splitmix64 finaliser (Steele, Lea, Flood 2014): a well-mixed hash of internal ids */
static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* growable array of fixed-size elements */
static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return p;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *q = realloc(p, nc * elem);
    if (!q) return NULL;
    memset((char *)q + *cap * elem, 0, (nc - *cap) * elem);
    *cap = nc;
    return q;
}

/* ---------------------------------------------------------------- streaming medians ---- */

/* Exact values up to QH_EXACT samples, then a log-scale histogram (bins 3% wide: the median it
 * reports is within 1.5% of the true one) over 1 ns .. 10^13 ns. Bounded memory per series. */
enum { QH_EXACT = 64, QH_BINS = 1020 };
#define QH_BASE 1.03

typedef struct qhist {
    int64_t n;
    int64_t *exact;   /* QH_EXACT values while n <= QH_EXACT */
    uint32_t *bins;   /* QH_BINS counts once n > QH_EXACT */
    int64_t zeros;    /* values <= 0 */
} qhist;

static int qh_bin(int64_t v)
{
    int b = (int)(log((double)v) / log(QH_BASE));
    return b < 0 ? 0 : b >= QH_BINS ? QH_BINS - 1 : b;
}

static bool qh_add(qhist *q, int64_t v)
{
    if (q->n < QH_EXACT) {
        if (!q->exact && !(q->exact = malloc(QH_EXACT * sizeof *q->exact))) return false;
        q->exact[q->n++] = v;
        return true;
    }
    if (!q->bins) {
        if (!(q->bins = calloc(QH_BINS, sizeof *q->bins))) return false;
        for (int64_t i = 0; i < q->n; i++) {
            if (q->exact[i] <= 0) q->zeros++;
            else q->bins[qh_bin(q->exact[i])]++;
        }
        free(q->exact);
        q->exact = NULL;
    }
    q->n++;
    if (v <= 0) q->zeros++;
    else q->bins[qh_bin(v)]++;
    return true;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* lower median; -1 when empty */
static int64_t qh_median(qhist *q)
{
    if (!q->n) return -1;
    int64_t want = (q->n - 1) / 2; /* index of the lower median */
    if (q->exact) {
        qsort(q->exact, (size_t)q->n, sizeof *q->exact, cmp_i64);
        return q->exact[want];
    }
    if (want < q->zeros) return 0;
    int64_t acc = q->zeros;
    for (int b = 0; b < QH_BINS; b++) {
        acc += q->bins[b];
        if (acc > want) return (int64_t)llround(pow(QH_BASE, b + 0.5)); /* the bin's geometric middle */
    }
    return 0;
}

static void qh_free(qhist *q)
{
    free(q->exact);
    free(q->bins);
}

static size_t qh_bytes(const qhist *q)
{
    return (q->exact ? QH_EXACT * sizeof(int64_t) : 0) + (q->bins ? QH_BINS * sizeof(uint32_t) : 0);
}

/* ---------------------------------------------------------------- shapes ---- */

/* The launching cpu op's inputs, parsed once per distinct shape string. The importers write
 * "TYPE:DIMS;TYPE:DIMS;..." with DIMS "8x512x768" (a 0-d tensor: empty), "L<numel>" for a
 * TensorList, "?" when unreadable; TYPE is the c10 type name ("float", "c10::BFloat16",
 * "Scalar", "TensorList", ...), DIMS after its last ':'. */
enum { SH_MAX_IN = 16, SH_MAX_DIMS = 8 };

typedef struct sh_in {
    bool tensor;        /* a tensor or a tensor list with a known element count */
    uint8_t dsize;      /* bytes per element, 0 unknown */
    uint8_t ndim;       /* plain tensors only */
    bool list;
    double numel;
    int64_t dims[SH_MAX_DIMS];
} sh_in;

typedef struct shape_info {
    const char *text;   /* builder-owned */
    int n;
    sh_in in[SH_MAX_IN];
} shape_info;

static uint8_t dtype_size_name(const char *s, size_t n)
{
    static const struct { const char *name; uint8_t size; } tab[] = {
        {"float", 4}, {"double", 8}, {"c10::Half", 2}, {"c10::BFloat16", 2}, {"long int", 8}, {"long", 8},
        {"int64_t", 8}, {"int", 4}, {"short int", 2}, {"short", 2}, {"signed char", 1}, {"unsigned char", 1},
        {"bool", 1}, {"c10::complex<float>", 8}, {"c10::complex<double>", 16}, {"c10::Float8_e4m3fn", 1},
        {"c10::Float8_e5m2", 1}, {"c10::Float8_e4m3fnuz", 1}, {"c10::Float8_e5m2fnuz", 1}, {"unsigned int", 4},
        {"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"int32", 4}, {"int8", 1}, {"uint8", 1}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strlen(tab[i].name) == n && !strncmp(tab[i].name, s, n)) return tab[i].size;
    return 0;
}

static void shape_parse(const char *text, shape_info *si)
{
    memset(si->in, 0, sizeof si->in);
    si->n = 0;
    const char *p = text;
    while (*p && si->n < SH_MAX_IN) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *colon = NULL; /* the last ':' (type names hold "::") */
        for (const char *q = p; q < p + len; q++)
            if (*q == ':') colon = q;
        sh_in *in = &si->in[si->n++];
        if (colon) {
            size_t tl = (size_t)(colon - p);
            in->dsize = dtype_size_name(p, tl);
            const char *d = colon + 1, *de = p + len;
            if (d < de && *d == 'L') {
                in->list = in->tensor = true;
                in->numel = strtod(d + 1, NULL);
            } else if (d < de && *d == '?') {
                in->tensor = false;
            } else if (in->dsize) { /* a tensor: a known element type (not Scalar, ScalarList, "", ...) */
                in->tensor = true;
                in->numel = 1;
                while (d < de) {
                    char *q;
                    long long v = strtoll(d, &q, 10);
                    if (q == d || v < 0) {
                        in->tensor = false;
                        break;
                    }
                    if (in->ndim < SH_MAX_DIMS) in->dims[in->ndim] = v;
                    in->ndim++;
                    in->numel *= (double)v;
                    d = q;
                    if (d < de && *d == 'x') d++;
                }
                if (in->ndim > SH_MAX_DIMS) in->ndim = SH_MAX_DIMS;
            }
        }
        if (!end) break;
        p = end + 1;
    }
}

/* Bytes and FLOPs one kernel moves / does, from its op key and the op's inputs. read/write < 0
 * when unknown; *why says what is missing. Output sizes (Kineto records none): elementwise ops
 * write the broadcast of their inputs (the largest input) in the widest input type; reductions
 * (mean, sum, amax, var) reduce the last dimension; copy_(dst, src) reads src and writes dst;
 * softmax / norms / unary ops keep the input's shape. FLOPs: 1 per output element for
 * elementwise ops, 1 per input element for reductions, 5 per element for softmax, 8 for norms;
 * GEMM 2*M*N*K; attention 4*B*H*L*S*D (QK^T and PV). */
typedef struct kbytes {
    double read, write, flops;
    double out_numel;
    uint8_t out_dsize;
    const char *why;
} kbytes;

static void kernel_bytes(const shape_info *si, int key, bool inplace, kbytes *kb)
{
    kb->read = kb->write = kb->flops = -1;
    kb->out_numel = -1;
    kb->out_dsize = 0;
    kb->why = NULL;
    if (!si) {
        kb->why = "no Input Dims on its cpu op (record_shapes off), or the op launched several kernels";
        return;
    }
    int t[SH_MAX_IN], nt = 0;
    for (int i = 0; i < si->n; i++)
        if (si->in[i].tensor) t[nt++] = i;
    if (!nt) {
        kb->why = "its cpu op has no tensor input with known dims";
        return;
    }
    const sh_in *x = &si->in[t[0]];
    double rd = 0;
    bool dsz_ok = true;
    for (int k = 0; k < nt; k++) {
        const sh_in *in = &si->in[t[k]];
        if (!in->dsize) dsz_ok = false;
        rd += in->numel * in->dsize;
    }
    switch (key) {
    case FA_TA_KEY_GEMM: {
        /* the two matrices: the last two tensor inputs (addmm: bias, A, B; linear: x, W, bias) */
        const sh_in *a = NULL, *b = NULL;
        if (nt >= 2 && si->in[t[nt - 1]].ndim >= 2 && si->in[t[nt - 2]].ndim >= 2) {
            a = &si->in[t[nt - 2]];
            b = &si->in[t[nt - 1]];
        } else if (nt >= 2 && si->in[t[0]].ndim >= 2 && si->in[t[1]].ndim >= 2) {
            a = &si->in[t[0]];
            b = &si->in[t[1]];
        }
        if (!a || !dsz_ok) {
            kb->why = "GEMM operands without 2-d shapes";
            return;
        }
        double K = (double)a->dims[a->ndim - 1];
        double M = a->numel / (K > 0 ? K : 1);
        /* B is [..., K, N] (mm, bmm, matmul) or [N, K] (linear's weight) */
        double N = b->ndim >= 2 && (double)b->dims[b->ndim - 2] == K ? (double)b->dims[b->ndim - 1] : (double)b->dims[0];
        kb->flops = 2.0 * M * N * K;
        kb->out_numel = M * N;
        kb->out_dsize = a->dsize;
        kb->read = rd;
        kb->write = kb->out_numel * kb->out_dsize;
        return;
    }
    case FA_TA_KEY_ATTENTION: {
        if (nt < 3 || si->in[t[0]].ndim != 4 || si->in[t[1]].ndim != 4 || !dsz_ok) {
            kb->why = "attention inputs without [B, H, L, D] shapes";
            return;
        }
        const sh_in *q = &si->in[t[0]], *kk = &si->in[t[1]];
        double B = (double)q->dims[0], H = (double)q->dims[1], L = (double)q->dims[2], D = (double)q->dims[3];
        double S = (double)kk->dims[2];
        kb->flops = 4.0 * B * H * L * S * D;
        kb->out_numel = q->numel;
        kb->out_dsize = q->dsize;
        kb->read = si->in[t[0]].numel * q->dsize + si->in[t[1]].numel * kk->dsize +
                   (nt > 2 ? si->in[t[2]].numel * si->in[t[2]].dsize : 0);
        kb->write = kb->out_numel * kb->out_dsize;
        return;
    }
    case FA_TA_KEY_CONV:
        kb->why = "convolution output size needs stride and padding, which the trace does not record";
        return;
    case FA_TA_KEY_OTHER:
    case FA_TA_KEY_INDEX:
    case FA_TA_KEY_EMBEDDING:
        kb->why = "op kind not modelled (its output size is not a function of the input shapes)";
        return;
    default: break;
    }
    if (!dsz_ok && key != FA_TA_KEY_CAT) {
        kb->why = "an input's dtype is unknown";
        return;
    }
    switch (key) {
    case FA_TA_KEY_COPY:
        if (nt >= 2) { /* copy_(dst, src) */
            kb->read = si->in[t[1]].numel * si->in[t[1]].dsize;
            kb->out_numel = x->numel;
            kb->out_dsize = x->dsize;
        } else {
            kb->read = rd;
            kb->out_numel = x->numel;
            kb->out_dsize = x->dsize;
        }
        kb->flops = 0;
        break;
    case FA_TA_KEY_CAT: {
        double n = 0;
        uint8_t ds = 0;
        for (int k = 0; k < nt; k++) {
            n += si->in[t[k]].numel;
            if (si->in[t[k]].dsize) ds = si->in[t[k]].dsize;
        }
        if (!ds) {
            kb->why = "a TensorList's dtype is not recorded";
            kb->out_numel = n;
            return;
        }
        kb->read = n * ds;
        kb->out_numel = n;
        kb->out_dsize = ds;
        kb->flops = 0;
        break;
    }
    case FA_TA_KEY_MEAN:
    case FA_TA_KEY_SUM:
    case FA_TA_KEY_AMAX:
    case FA_TA_KEY_VAR: {
        double last = x->ndim ? (double)x->dims[x->ndim - 1] : 1;
        kb->read = x->numel * x->dsize;
        kb->out_numel = last > 0 ? x->numel / last : x->numel;
        kb->out_dsize = x->dsize;
        kb->flops = x->numel;
        break;
    }
    case FA_TA_KEY_SOFTMAX:
    case FA_TA_KEY_LAYER_NORM:
    case FA_TA_KEY_RMS_NORM:
        kb->read = rd;
        kb->out_numel = x->numel;
        kb->out_dsize = x->dsize;
        kb->flops = (key == FA_TA_KEY_SOFTMAX ? 5.0 : 8.0) * x->numel;
        break;
    default: { /* elementwise: the broadcast of the inputs, in the widest input type */
        double n = 0;
        uint8_t ds = 0;
        for (int k = 0; k < nt; k++) {
            if (si->in[t[k]].numel > n) n = si->in[t[k]].numel;
            if (si->in[t[k]].dsize > ds) ds = si->in[t[k]].dsize;
        }
        if (inplace) {
            n = x->numel;
            ds = x->dsize;
        }
        kb->read = rd;
        kb->out_numel = n;
        kb->out_dsize = ds;
        kb->flops = n;
        break;
    }
    }
    kb->write = kb->out_numel * kb->out_dsize;
}

/* ---------------------------------------------------------------- the builder ---- */

enum {
    WIN = 24,          /* look-ahead window per stream for the patterns (kernels) */
    REORDER = 4096,    /* reorder window per stream (kernels): records out of time order by less
                          than this many kernels are put back in order */
    OPEN_REPLAYS = 64, /* graph replays followed at once */
    SEG_MAX = 256,     /* a run of memory-bound kernels is held up to this long before it is cut */
    NAME_SLOTS = 4096, /* kernel-name cache */
    MAX_STRETCHES = 64 /* launch-bound stretches kept (the longest) */
};

enum { RF_ORPHAN = 1, RF_INVERTED = 2, RF_GRAPH = 4 };

/* one GPU kernel as the analysis holds it, only while it sits in a window */
typedef struct rec {
    uint64_t start, end;
    int64_t launch_ns;   /* launch call duration, -1 none (or counted with its graph replay) */
    int64_t pid, tid;    /* launch thread (for the cpu op of a gap) */
    int64_t graph;       /* graph replay key (launch correlation), -1 */
    int32_t tok;         /* kernel name id */
    int32_t shape;       /* shape signature id, -1 none */
    int32_t frame;       /* pattern-naming frame id, -1 none */
    int32_t op;          /* cpu op name id, -1 none */
    int32_t graph_launch_op, graph_capture_op; /* name ids, -1 */
    int32_t wid;         /* index in the timeline window, -1 */
    int16_t key;
    int8_t frame_pat;
    uint8_t cls, flags;
    bool inplace;
} rec;

/* a record of a builder fed in any order: sorted by (device, stream, start, end, arrival) */
typedef struct srec {
    rec r;
    uint64_t seq;
    int32_t sidx; /* stream index */
} srec;

enum { RUN_RECS = 65536, MERGE_BUDGET = 8 << 20 };

typedef struct tokstat {
    /* name: the normalised name; full_name, cls: the earliest record's own (names normalise
     * together across template arguments, and the records come in any order) */
    const char *name, *full_name;
    fa_kclass cls;
    uint64_t rep_start, rep_end, cfg_start, occ_start;
    int64_t count, total_ns;
    qhist dur;
    int32_t grid[3], block[3], registers, smem;
    double occupancy;
    const char *occ_src;
} tokstat;

typedef struct pointstat {
    int32_t tok, shape, op;
    int64_t count, total_ns;
} pointstat;

typedef struct oppstat {
    int pattern;        /* -1: a repeated sequence */
    int n;
    int32_t tok[FA_TA_MAX_SEQ];
    int16_t key[FA_TA_MAX_SEQ];
    int64_t member_ns[FA_TA_MAX_SEQ];
    int64_t count, kernel_ns, gaps_ns, skipped;
    int64_t bytes_occ;
    double read, write, saved;   /* sums over the occurrences with sizes */
    double longest_ns;           /* sum over occurrences of the slowest member */
    int32_t device;
    int64_t stream;
    uint64_t first_start;
} oppstat;

typedef struct replay {
    int64_t key;          /* launch correlation, -1 free */
    uint64_t hash;
    int64_t n, ns;
    int32_t launch_op, capture_op;
} replay;

typedef struct graphstat {
    int64_t replays, kernels, kernel_ns;
    int32_t launch_op, capture_op;
    int id;
} graphstat;

typedef struct strm {
    fa_ta_stream st;
    rec *heap;            /* reorder window: min-heap by start */
    size_t nheap, capheap;
    bool emitted;
    uint64_t last_emitted;
    bool any;
    uint64_t last_end, busy_end;
    int32_t last_tok;
    rec win[WIN];
    int wn;
    rec seg[SEG_MAX];
    int seg_n;
    int str_n;            /* launch-bound stretch in progress */
    uint64_t str_start, str_end;
    int64_t str_kns, str_lns;
    int32_t str_first;
} strm;

typedef struct cpu_ix cpu_ix;
static void count_steps(fa_ta_builder *b, const fa_trace *t);
static void cpu_ix_free(cpu_ix *x);

struct fa_ta_builder {
    fa_arena *ar;
    fa_ta_device dev;
    const char *dev_name;
    fa_ta_matcher *matcher;
    int n_patterns;
    const fa_ta_pattern_def *patterns;
    fa_ta_cpu_lookup lookup;
    void *lookup_user;
    smap tok_map, shape_map, frame_map, op_map, point_map, opp_map, stream_map, graph_map;
    tokstat *toks;
    size_t n_toks, cap_toks;
    shape_info **shapes;
    size_t n_shapes, cap_shapes;
    const char **frames, **ops;
    size_t n_frames, cap_frames, n_ops, cap_ops;
    pointstat *points;
    size_t n_points, cap_points;
    oppstat *opps;
    size_t n_opps, cap_opps;
    strm *streams;
    size_t n_streams, cap_streams;
    graphstat *graphs;
    size_t n_graphs, cap_graphs;
    replay replays[OPEN_REPLAYS];
    int replay_next;
    fa_ta_gap gaps[FA_TA_TOP_GAPS];
    struct { int64_t pid, tid; bool ok; } gap_who[FA_TA_TOP_GAPS]; /* the next kernel's launch thread */
    int n_gaps;
    fa_ta_stretch stretches[MAX_STRETCHES];
    int n_stretches;
    int64_t launch_bound_kernels, launch_bound_ns;
    qhist launch_q, gap_q;
    int64_t n_kernels, kernel_ns, class_ns[FA_KCLASS_COUNT], n_launch_calls, launch_call_ns;
    int64_t n_memcpy, memcpy_ns, n_memset, memset_ns, n_estimated_bytes, n_late, graph_kernels;
    bool any_gpu;
    uint64_t first_ns, last_ns;
    int64_t n_steps;
    uint64_t step_first, step_last;
    uint64_t n_orphans, n_clock_inversions, n_parse_errors;
    double best_gbs;       /* best achieved bandwidth of a memory-bound kernel with known bytes */
    const char *best_gbs_kernel;
    size_t heap_peak;      /* records held in reorder windows at once, at most */
    size_t heap_now;
    bool win_set, win_by_launch;
    uint64_t win_lo, win_hi;
    const char *win_what;
    itab opp_tab, point_tab;
    const char *opk_ptr[1024];  /* cpu op name address -> (name id, key, in place) (cache) */
    int32_t opk_id[1024];
    int16_t opk_key[1024];
    bool opk_inplace[1024];
    const char *shp_ptr[1024];  /* shapes address -> shape id (cache) */
    int32_t shp_id[1024];
    const char *stk_ptr[1024];  /* stack address -> (frame id, pattern) (cache) */
    int32_t stk_frame[1024];
    int8_t stk_pat[1024];
    const char *name_ptr[4096]; /* raw kernel name address -> token id, class, key (cache) */
    int32_t name_tok[4096];
    uint8_t name_cls[4096];
    int16_t name_key[4096];
    const char *last_launch_name;
    bool last_launch_graph;
    fa_ta_wrec *window;    /* kernel = token id, opp = internal opportunity id until finish */
    /* fa_ta_builder_any_order: records sorted through runs in a temporary file */
    bool spool;
    struct srec *run;      /* the current run, RUN_RECS at most */
    size_t nrun;
    FILE *sf;              /* the sorted runs (unlinked at creation) */
    uint64_t *run_len;     /* records per run written */
    size_t n_runs, cap_runs;
    uint64_t spool_seq;
    size_t merge_bytes;    /* the merge's buffers */
    size_t last_sid;       /* stream_of's last answer */
    struct cpu_ix *own_cx; /* fa_ta_builder_use_trace: the cpu index over own_trace */
    const fa_trace *own_trace;
    size_t n_window;
    int32_t n_occ;
    fa_status fail;
};

static fa_status nomem(fa_ctx *ctx, fa_ta_builder *b)
{
    b->fail = FA_ERR_NOMEM;
    return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory in the trace advice");
}

fa_status fa_ta_builder_create(fa_ctx *ctx, const fa_ta_device *dev, fa_ta_builder **out)
{
    fa_ta_builder *b = calloc(1, sizeof *b);
    if (!b || !(b->ar = fa_arena_create(1 << 16))) {
        free(b);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory in the trace advice");
    }
    if (dev) b->dev = *dev;
    b->dev_name = dev && dev->name ? fa_arena_strdup(b->ar, dev->name) : NULL;
    b->dev.name = b->dev_name;
    b->patterns = fa_ta_patterns(&b->n_patterns);
    fa_status s = fa_ta_matcher_create(ctx, b->patterns, b->n_patterns, &b->matcher);
    if (s) {
        fa_arena_free(b->ar);
        free(b);
        return s;
    }
    for (int i = 0; i < OPEN_REPLAYS; i++) b->replays[i].key = -1;
    *out = b;
    return FA_OK;
}

void fa_ta_builder_set_device(fa_ta_builder *b, const fa_ta_device *dev)
{
    b->dev = *dev;
    b->dev_name = dev->name ? fa_arena_strdup(b->ar, dev->name) : NULL;
    b->dev.name = b->dev_name;
}

void fa_ta_builder_set_lookup(fa_ta_builder *b, fa_ta_cpu_lookup fn, void *user)
{
    b->lookup = fn;
    b->lookup_user = user;
}

void fa_ta_builder_add_step(fa_ta_builder *b, uint64_t start_ns, uint64_t end_ns)
{
    if (!b->n_steps || start_ns < b->step_first) b->step_first = start_ns;
    if (!b->n_steps || end_ns > b->step_last) b->step_last = end_ns;
    b->n_steps++;
}

void fa_ta_builder_set_window(fa_ta_builder *b, uint64_t lo, uint64_t hi, bool by_launch, const char *what)
{
    b->win_set = true;
    b->win_lo = lo;
    b->win_hi = hi;
    b->win_by_launch = by_launch;
    b->win_what = what ? fa_arena_strdup(b->ar, what) : NULL;
}

/* a GPU record into the timeline window when it falls in it; returns its index or -1 */
static int32_t window_add(fa_ta_builder *b, const fa_activity *g, const fa_activity *L, int32_t tok)
{
    if (!b->win_set || b->n_window >= FA_TA_WINDOW_MAX) return -1;
    uint64_t t = b->win_by_launch && L ? L->start_ns : g->start_ns;
    if (t < b->win_lo || t > b->win_hi) return -1;
    if (!b->window && !(b->window = malloc(FA_TA_WINDOW_MAX * sizeof *b->window))) return -1;
    fa_ta_wrec *w = &b->window[b->n_window];
    w->start_ns = g->start_ns;
    w->end_ns = g->end_ns > g->start_ns ? g->end_ns : g->start_ns;
    w->kernel = tok;
    w->device = g->device;
    w->stream = g->stream;
    w->opp = w->occ = -1;
    w->kind = (uint8_t)g->kind;
    return (int32_t)b->n_window++;
}

void fa_ta_builder_set_counters(fa_ta_builder *b, uint64_t orphans, uint64_t inversions, uint64_t parse_errors)
{
    b->n_orphans = orphans;
    b->n_clock_inversions = inversions;
    b->n_parse_errors = parse_errors;
}

void fa_ta_builder_free(fa_ta_builder *b)
{
    if (!b) return;
    for (size_t i = 0; i < b->n_toks; i++) qh_free(&b->toks[i].dur);
    for (size_t i = 0; i < b->n_shapes; i++) free(b->shapes[i]);
    for (size_t i = 0; i < b->n_streams; i++) free(b->streams[i].heap);
    smap *maps[] = {&b->tok_map, &b->shape_map, &b->frame_map, &b->op_map, &b->point_map, &b->opp_map, &b->stream_map,
                    &b->graph_map};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) smap_free(maps[i]);
    itab_free(&b->opp_tab);
    itab_free(&b->point_tab);
    free(b->toks);
    free(b->shapes);
    free(b->frames);
    free(b->ops);
    free(b->points);
    free(b->opps);
    free(b->streams);
    free(b->graphs);
    free(b->window);
    cpu_ix_free(b->own_cx);
    free(b->run);
    free(b->run_len);
    if (b->sf) fclose(b->sf);
    qh_free(&b->launch_q);
    qh_free(&b->gap_q);
    fa_ta_matcher_free(b->matcher);
    fa_arena_free(b->ar);
    free(b);
}

static int32_t name_id(fa_ta_builder *b, smap *m, const char ***arr, size_t *n, size_t *cap, const char *s)
{
    if (!s) return -1;
    bool added;
    const char *stored;
    int32_t id = smap_get(m, b->ar, s, (int32_t)*n, &added, &stored);
    if (id < 0) return -2;
    if (added) {
        const char **na = grow(*arr, cap, *n + 1, sizeof **arr);
        if (!na) return -2;
        *arr = na;
        (*arr)[(*n)++] = stored;
    }
    return id;
}

static int32_t shape_id(fa_ta_builder *b, const char *text)
{
    if (!text || !*text) return -1;
    bool added;
    const char *stored;
    int32_t id = smap_get(&b->shape_map, b->ar, text, (int32_t)b->n_shapes, &added, &stored);
    if (id < 0) return -2;
    if (added) {
        shape_info **na = grow(b->shapes, &b->cap_shapes, b->n_shapes + 1, sizeof *na);
        shape_info *si = malloc(sizeof *si);
        if (!na || !si) {
            free(si);
            if (na) b->shapes = na;
            return -2;
        }
        b->shapes = na;
        si->text = stored;
        shape_parse(stored, si);
        b->shapes[b->n_shapes++] = si;
    }
    return id;
}

static strm *stream_of(fa_ta_builder *b, int32_t device, int64_t stream)
{
    /* the last stream asked for: records come in runs of one stream */
    if (b->n_streams && b->last_sid < b->n_streams && b->streams[b->last_sid].st.device == device &&
        b->streams[b->last_sid].st.stream == stream)
        return &b->streams[b->last_sid];
    char k[64];
    snprintf(k, sizeof k, "%d:%" PRId64, device, stream);
    bool added;
    int32_t id = smap_get(&b->stream_map, b->ar, k, (int32_t)b->n_streams, &added, NULL);
    if (id < 0) return NULL;
    if (added) {
        strm *na = grow(b->streams, &b->cap_streams, b->n_streams + 1, sizeof *na);
        if (!na) return NULL;
        b->streams = na;
        strm *s = &b->streams[b->n_streams++];
        memset(s, 0, sizeof *s);
        s->st.device = device;
        s->st.stream = stream;
        s->last_tok = -1;
    }
    b->last_sid = (size_t)id;
    return &b->streams[id];
}

/* the pattern-naming frame of a cpu-op stack "outer > ... > inner": the outermost frame that
 * names a pattern */
static int32_t frame_of(fa_ta_builder *b, const char *stack, int8_t *pat)
{
    *pat = -1;
    if (!stack) return -1;
    const char *p = stack;
    while (*p) {
        const char *e = strstr(p, " > ");
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char f[256];
        if (l > 0 && l < sizeof f) {
            memcpy(f, p, l);
            f[l] = 0;
            int k = fa_ta_matcher_stack(b->matcher, f);
            if (k >= 0) {
                *pat = (int8_t)k;
                return name_id(b, &b->frame_map, &b->frames, &b->n_frames, &b->cap_frames, f);
            }
        }
        if (!e) break;
        p = e + 3;
    }
    return -1;
}

/* ---- one occurrence of an opportunity ---- */

/* the inputs a kernel reads (copy_(dst, src) reads src only) */
static int read_inputs(const shape_info *si, int key, const sh_in **out)
{
    int n = 0, nt = 0;
    for (int i = 0; i < si->n; i++) {
        if (!si->in[i].tensor) continue;
        if (key == FA_TA_KEY_COPY && nt++ == 0 && si->n > 1) {
            bool more = false;
            for (int k = i + 1; k < si->n; k++) more |= si->in[k].tensor;
            if (more) continue; /* the destination */
        }
        out[n++] = &si->in[i];
    }
    return n;
}

/* The fused kernel's traffic for one occurrence (estimated): the group's first member reads its
 * inputs; a later member's input that an earlier member produced (same element count and type)
 * is an intermediate held on chip; one equal to the group's own first input is that tensor again
 * (read once); anything else is an external input (a weight, a residual). The last member's
 * output is written (and the first member's when keep_first: a residual stream that stays live).
 * saved = unfused traffic - fused traffic. False when a member's sizes are unknown. */
static bool group_bytes(fa_ta_builder *b, rec *const *m, int n, bool keep_first, bool same_x, double *rd, double *wr,
                        double *saved)
{
    kbytes kb[FA_TA_MAX_SEQ];
    double unfused = 0;
    for (int j = 0; j < n; j++) {
        const shape_info *si = m[j]->shape >= 0 ? b->shapes[m[j]->shape] : NULL;
        kernel_bytes(si, m[j]->key, m[j]->inplace, &kb[j]);
        if (kb[j].read < 0 && m[j]->key == FA_TA_KEY_CAT && kb[j].out_numel >= 0 && j > 0 && kb[j - 1].out_dsize) {
            /* a TensorList's dtype is not recorded: the tensors come from the member before */
            kb[j].out_dsize = kb[j - 1].out_dsize;
            kb[j].read = kb[j].write = kb[j].out_numel * kb[j].out_dsize;
        }
        if (kb[j].read < 0 || kb[j].write < 0) return false;
        unfused += kb[j].read + kb[j].write;
    }
    const sh_in *x0[SH_MAX_IN];
    int nx = read_inputs(b->shapes[m[0]->shape], m[0]->key, x0);
    double xn = nx ? x0[0]->numel : -1;
    uint8_t xd = nx ? x0[0]->dsize : 0;
    double r = kb[0].read;
    for (int j = 1; j < n; j++) {
        const sh_in *in[SH_MAX_IN];
        int ni = read_inputs(b->shapes[m[j]->shape], m[j]->key, in);
        bool used[FA_TA_MAX_SEQ] = {false}; /* an earlier output feeds one input of this member at most */
        for (int k = 0; k < ni; k++) {
            bool inter = false;
            for (int p = j - 1; p >= 0 && !inter; p--)
                if (!used[p] && in[k]->numel == kb[p].out_numel && (!in[k]->dsize || in[k]->dsize == kb[p].out_dsize))
                    inter = used[p] = true;
            if (inter) continue;
            if (same_x && in[k]->numel == xn && (!in[k]->dsize || in[k]->dsize == xd)) continue;
            r += in[k]->numel * (in[k]->dsize ? in[k]->dsize : xd);
        }
    }
    double w = kb[n - 1].write + (keep_first && n > 1 ? kb[0].write : 0);
    *rd = r;
    *wr = w;
    *saved = unfused > r + w ? unfused - (r + w) : 0;
    return true;
}

static int64_t dur_of(const rec *r)
{
    return r->end > r->start ? (int64_t)(r->end - r->start) : 0;
}

typedef struct opp_key {
    const fa_ta_builder *b;
    int pattern, n;
    int32_t tok[FA_TA_MAX_SEQ];
} opp_key;

static bool opp_eq(const void *ctx, int32_t id)
{
    const opp_key *k = ctx;
    const oppstat *p = &k->b->opps[id];
    return p->pattern == k->pattern && p->n == k->n && !memcmp(p->tok, k->tok, (size_t)k->n * sizeof k->tok[0]);
}

typedef struct point_key {
    const fa_ta_builder *b;
    int32_t tok, shape;
} point_key;

static bool point_eq(const void *ctx, int32_t id)
{
    const point_key *k = ctx;
    return k->b->points[id].tok == k->tok && k->b->points[id].shape == k->shape;
}

static fa_status opp_add(fa_ctx *ctx, fa_ta_builder *b, strm *s, int pattern, rec *const *m, int n, int64_t skipped)
{
    if (n > FA_TA_MAX_SEQ) n = FA_TA_MAX_SEQ;
    opp_key k = {b, pattern, n, {0}};
    uint64_t h = mix64((uint64_t)(pattern + 2) * 1000003u + (uint64_t)n);
    for (int j = 0; j < n; j++) {
        k.tok[j] = m[j]->tok;
        h = mix64(h ^ (uint64_t)m[j]->tok);
    }
    size_t slot;
    int32_t id = itab_find(&b->opp_tab, h, opp_eq, &k, &slot);
    if (id < 0) {
        id = (int32_t)b->n_opps;
        if (!itab_insert(&b->opp_tab, h, id)) return nomem(ctx, b);
        oppstat *na = grow(b->opps, &b->cap_opps, b->n_opps + 1, sizeof *na);
        if (!na) return nomem(ctx, b);
        b->opps = na;
        oppstat *p = &b->opps[b->n_opps++];
        memset(p, 0, sizeof *p);
        p->pattern = pattern;
        p->n = n;
        for (int j = 0; j < n; j++) {
            p->tok[j] = m[j]->tok;
            p->key[j] = m[j]->key;
        }
        p->device = s->st.device;
        p->stream = s->st.stream;
        p->first_start = m[0]->start;
    }
    oppstat *p = &b->opps[id];
    p->count++;
    int32_t occ = b->n_occ++;
    for (int j = 0; j < n; j++)
        if (m[j]->wid >= 0) {
            b->window[m[j]->wid].opp = id;
            b->window[m[j]->wid].occ = occ;
        }
    int64_t longest = 0;
    for (int j = 0; j < n; j++) {
        int64_t d = dur_of(m[j]);
        p->member_ns[j] += d;
        p->kernel_ns += d;
        if (d > longest) longest = d;
        /* idle before a member, up to its own launch call's time: what the GPU waited for the
         * launch that fusing removes (a longer wait had another cause) */
        if (j > 0 && m[j]->start > m[j - 1]->end && m[j]->launch_ns > 0) {
            int64_t g = (int64_t)(m[j]->start - m[j - 1]->end);
            p->gaps_ns += g < m[j]->launch_ns ? g : m[j]->launch_ns;
        }
    }
    p->longest_ns += (double)longest;
    p->skipped += skipped;
    double rd, wr, sv;
    bool keep_first = pattern >= 0 && !strncmp(b->patterns[pattern].name, "residual add", 12);
    if (group_bytes(b, m, n, keep_first, pattern >= 0 && b->patterns[pattern].same_x, &rd, &wr, &sv)) {
        p->bytes_occ++;
        p->read += rd;
        p->write += wr;
        p->saved += sv;
    }
    return FA_OK;
}

/* ---- per-stream analysis, in time order ---- */

/* A run of memory-bound kernels between two kernels that are not (or a named pattern) ends:
 * it is one occurrence of a sequence. A run that repeats one unit (add mul add mul add mul: an
 * unrolled loop, an optimizer's per-parameter ops) is that unit's occurrences instead, so the
 * repeats are found; a run longer than FA_TA_MAX_SEQ without a period is cut into pieces. */
static fa_status seg_emit(fa_ctx *ctx, fa_ta_builder *b, strm *s, int from, int n)
{
    if (n < 2) return FA_OK;
    rec *m[FA_TA_MAX_SEQ];
    for (int j = 0; j < n; j++) m[j] = &s->seg[from + j];
    return opp_add(ctx, b, s, -1, m, n, 0);
}

static fa_status seg_flush(fa_ctx *ctx, fa_ta_builder *b, strm *s)
{
    fa_status st = FA_OK;
    int n = s->seg_n, period = 0;
    for (int p = 2; p <= n / 2 && p <= FA_TA_MAX_SEQ && !period; p++) {
        bool ok = true;
        for (int i = 0; i + p < n && ok; i++) ok = s->seg[i].tok == s->seg[i + p].tok;
        if (ok) period = p;
    }
    int unit = period ? period : FA_TA_MAX_SEQ;
    int i = 0;
    for (; i + unit <= n && !st; i += unit) st = seg_emit(ctx, b, s, i, unit);
    if (!st && i < n) st = seg_emit(ctx, b, s, i, n - i);
    s->seg_n = 0;
    return st;
}

static void win_drop(strm *s, int k)
{
    memmove(s->win, s->win + k, (size_t)(s->wn - k) * sizeof s->win[0]);
    s->wn -= k;
}

/* Decide what the window's first kernel belongs to: a frame group, a named pattern starting
 * there, or the memory-bound run in progress. */
static fa_status win_step(fa_ctx *ctx, fa_ta_builder *b, strm *s)
{
    rec *w = s->win;
    rec *m[FA_TA_MAX_SEQ];
    if (w[0].frame >= 0 && w[0].frame_pat >= 0) {
        int k = 1;
        while (k < s->wn && k < FA_TA_MAX_SEQ && w[k].frame == w[0].frame) k++;
        if (k >= 2) {
            fa_status st = seg_flush(ctx, b, s);
            for (int j = 0; j < k && !st; j++) m[j] = &w[j];
            if (!st) st = opp_add(ctx, b, s, w[0].frame_pat, m, k, 0);
            win_drop(s, k);
            return st;
        }
    }
    int keys[WIN], members[FA_TA_MAX_PATTERN], pat = -1;
    for (int i = 0; i < s->wn; i++) keys[i] = w[i].key;
    int nm = fa_ta_matcher_match(b->matcher, keys, s->wn, &pat, members);
    if (nm >= 2) {
        fa_status st = seg_flush(ctx, b, s);
        for (int j = 0; j < nm; j++) m[j] = &w[members[j]];
        int64_t skipped = members[nm - 1] + 1 - nm;
        if (!st) st = opp_add(ctx, b, s, pat, m, nm, skipped);
        win_drop(s, members[nm - 1] + 1);
        return st;
    }
    fa_status st = FA_OK;
    if (fa_kclass_light((fa_kclass)w[0].cls)) {
        if (s->seg_n == SEG_MAX) st = seg_flush(ctx, b, s);
        s->seg[s->seg_n++] = w[0];
    } else {
        st = seg_flush(ctx, b, s);
    }
    win_drop(s, 1);
    return st;
}

static void stretch_end(fa_ta_builder *b, strm *s)
{
    if (s->str_n >= FA_TA_MIN_STRETCH) {
        b->launch_bound_kernels += s->str_n;
        b->launch_bound_ns += s->str_kns;
        fa_ta_stretch r = {s->st.device, s->st.stream, s->str_n, s->str_start, s->str_end, s->str_kns, s->str_lns,
                           b->toks[s->str_first].name};
        if (b->n_stretches < MAX_STRETCHES) {
            b->stretches[b->n_stretches++] = r;
        } else { /* keep the longest */
            int lo = 0;
            for (int i = 1; i < b->n_stretches; i++)
                if (b->stretches[i].n_kernels < b->stretches[lo].n_kernels) lo = i;
            if (b->stretches[lo].n_kernels < r.n_kernels) b->stretches[lo] = r;
        }
    }
    s->str_n = 0;
}

static void gap_offer(fa_ta_builder *b, strm *s, const rec *next, uint64_t gstart, int64_t g)
{
    int slot = -1;
    if (b->n_gaps < FA_TA_TOP_GAPS) slot = b->n_gaps++;
    else {
        int lo = 0;
        for (int i = 1; i < b->n_gaps; i++)
            if (b->gaps[i].gap_ns < b->gaps[lo].gap_ns) lo = i;
        if (b->gaps[lo].gap_ns >= g) return;
        slot = lo;
    }
    fa_ta_gap *x = &b->gaps[slot];
    x->device = s->st.device;
    x->stream = s->st.stream;
    x->start_ns = gstart;
    x->gap_ns = g;
    x->next_kernel = b->toks[next->tok].name;
    x->cpu_op = NULL;
    /* the cpu op is looked up at finish, for the gaps that stay among the largest (the importer's
     * cpu side is complete then, even when kernels stream in before all of it is read) */
    b->gap_who[slot].pid = next->pid;
    b->gap_who[slot].tid = next->tid;
    b->gap_who[slot].ok = !(next->flags & (RF_ORPHAN | RF_INVERTED));
}

static fa_status analyze(fa_ctx *ctx, fa_ta_builder *b, strm *s, const rec *r)
{
    int64_t d = dur_of(r);
    fa_ta_stream *st = &s->st;
    st->n_kernels++;
    st->kernel_ns += d;
    st->class_ns[r->cls] += d;
    if (!s->any || r->start < st->first_ns) st->first_ns = r->start;
    if (r->end > st->last_ns) st->last_ns = r->end;
    /* busy = union of kernel intervals */
    uint64_t from = s->any && r->start < s->busy_end ? s->busy_end : r->start;
    if (r->end > from) st->busy_ns += (int64_t)(r->end - from);
    if (!s->any || r->end > s->busy_end) s->busy_end = r->end;
    if (s->any) {
        if (r->start > s->last_end) {
            int64_t g = (int64_t)(r->start - s->last_end);
            st->idle_ns += g;
            st->n_gaps++;
            if (!qh_add(&b->gap_q, g)) return nomem(ctx, b);
            gap_offer(b, s, r, s->last_end, g);
        } else if (r->start < s->last_end) {
            st->n_overlaps++;
        }
    }
    if (!s->any || r->end > s->last_end) s->last_end = r->end;
    s->any = true;
    /* launch-bound stretch: kernels each shorter than their own launch call */
    if (r->launch_ns > 0 && d < r->launch_ns) {
        if (!s->str_n) {
            s->str_start = r->start;
            s->str_kns = s->str_lns = 0;
            s->str_first = r->tok;
        }
        s->str_n++;
        s->str_end = r->end;
        s->str_kns += d;
        s->str_lns += r->launch_ns;
    } else {
        stretch_end(b, s);
    }
    s->win[s->wn++] = *r;
    fa_status stt = FA_OK;
    while (s->wn == WIN && !stt) stt = win_step(ctx, b, s);
    return stt;
}

/* reorder window: a binary min-heap by (start, end) */
static bool rec_less(const rec *a, const rec *b)
{
    return a->start != b->start ? a->start < b->start : a->end < b->end;
}

static void heap_push(strm *s, const rec *r)
{
    size_t i = s->nheap++;
    s->heap[i] = *r;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!rec_less(&s->heap[i], &s->heap[p])) break;
        rec t = s->heap[i];
        s->heap[i] = s->heap[p];
        s->heap[p] = t;
        i = p;
    }
}

static rec heap_pop(strm *s)
{
    rec top = s->heap[0];
    s->heap[0] = s->heap[--s->nheap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->nheap && rec_less(&s->heap[l], &s->heap[m])) m = l;
        if (r < s->nheap && rec_less(&s->heap[r], &s->heap[m])) m = r;
        if (m == i) break;
        rec t = s->heap[i];
        s->heap[i] = s->heap[m];
        s->heap[m] = t;
        i = m;
    }
    return top;
}

static void replay_add(fa_ta_builder *b, int64_t key, const rec *r, int64_t launch_ns);

/* a graph-replayed kernel joins its replay in time order (the replay's kernel sequence names the
 * graph); its launch call is counted once per replay there */
static void graph_take(fa_ta_builder *b, rec *r)
{
    if (!(r->flags & RF_GRAPH)) return;
    replay_add(b, r->graph, r, r->launch_ns);
    r->launch_ns = -1;
}

static fa_status emit_one(fa_ctx *ctx, fa_ta_builder *b, strm *s)
{
    rec r = heap_pop(s);
    b->heap_now--;
    graph_take(b, &r);
    if (s->emitted && r.start < s->last_emitted) {
        /* later kernels of this stream were analysed already: count it, no sequence across it */
        b->n_late++;
        s->st.n_kernels++;
        s->st.kernel_ns += dur_of(&r);
        s->st.class_ns[r.cls] += dur_of(&r);
        return FA_OK;
    }
    s->emitted = true;
    s->last_emitted = r.start;
    return analyze(ctx, b, s, &r);
}

/* ---- graph replays ---- */

static void replay_close(fa_ta_builder *b, replay *rp)
{
    if (rp->key < 0) return;
    char k[64];
    snprintf(k, sizeof k, "%016" PRIx64 ":%" PRId64, rp->hash, rp->n);
    bool added;
    int32_t id = smap_get(&b->graph_map, b->ar, k, (int32_t)b->n_graphs, &added, NULL);
    if (id >= 0 && added) {
        graphstat *na = grow(b->graphs, &b->cap_graphs, b->n_graphs + 1, sizeof *na);
        if (!na) id = -1;
        else {
            b->graphs = na;
            graphstat *g = &b->graphs[b->n_graphs++];
            memset(g, 0, sizeof *g);
            g->id = (int)b->n_graphs;
            g->kernels = rp->n;
            g->launch_op = rp->launch_op;
            g->capture_op = rp->capture_op;
        }
    }
    if (id >= 0) {
        graphstat *g = &b->graphs[id];
        g->replays++;
        g->kernel_ns += rp->ns;
        if (g->capture_op < 0) g->capture_op = rp->capture_op;
    }
    rp->key = -1;
}

static void replay_add(fa_ta_builder *b, int64_t key, const rec *r, int64_t launch_ns)
{
    replay *rp = NULL;
    for (int i = 0; i < OPEN_REPLAYS; i++)
        if (b->replays[i].key == key) {
            rp = &b->replays[i];
            break;
        }
    if (!rp) {
        rp = &b->replays[b->replay_next];
        b->replay_next = (b->replay_next + 1) % OPEN_REPLAYS;
        replay_close(b, rp);
        memset(rp, 0, sizeof *rp);
        rp->key = key;
        rp->hash = 1469598103934665603ull;
        rp->launch_op = r->graph_launch_op;
        rp->capture_op = r->graph_capture_op;
        if (launch_ns >= 0) { /* one launch call per replay */
            qh_add(&b->launch_q, launch_ns);
            b->n_launch_calls++;
            b->launch_call_ns += launch_ns;
        }
    }
    rp->n++;
    rp->ns += dur_of(r);
    rp->hash = (rp->hash ^ (uint64_t)(r->tok + 1)) * 1099511628211ull;
    if (rp->capture_op < 0) rp->capture_op = r->graph_capture_op;
}

/* ---- feeding ---- */

/* ---- records in any order: sorted runs in a temporary file, merged at finish ---- */

static int srec_cmp(const void *pa, const void *pb, void *user)
{
    const fa_ta_builder *b = user;
    const srec *x = pa, *y = pb;
    if (x->sidx != y->sidx) {
        const strm *sx = &b->streams[x->sidx], *sy = &b->streams[y->sidx];
        if (sx->st.device != sy->st.device) return sx->st.device < sy->st.device ? -1 : 1;
        if (sx->st.stream != sy->st.stream) return sx->st.stream < sy->st.stream ? -1 : 1;
    }
    if (x->r.start != y->r.start) return x->r.start < y->r.start ? -1 : 1;
    if (x->r.end != y->r.end) return x->r.end < y->r.end ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static fa_status spool_io(fa_ctx *ctx, fa_ta_builder *b, const char *what)
{
    fa_status s = fa_ctx_error(ctx, FA_ERR_IO, "trace advice: cannot %s the temporary file sorting the kernels: %s",
                               what, strerror(errno));
    b->fail = s;
    return s;
}

static fa_status spool_write_run(fa_ctx *ctx, fa_ta_builder *b)
{
    if (!b->sf) {
        const char *dir = getenv("TMPDIR");
        if (!dir || !*dir) dir = "/tmp";
        char path[4096];
        snprintf(path, sizeof path, "%s/fuse-advise-kernels-XXXXXX", dir);
        int fd = mkstemp(path);
        if (fd < 0) return spool_io(ctx, b, "create");
        unlink(path); /* gone with the process */
        if (!(b->sf = fdopen(fd, "w+b"))) {
            close(fd);
            return spool_io(ctx, b, "open");
        }
    }
    if (b->n_runs == b->cap_runs) {
        uint64_t *nl = grow(b->run_len, &b->cap_runs, b->n_runs + 1, sizeof *nl);
        if (!nl) return nomem(ctx, b);
        b->run_len = nl;
    }
    qsort_r(b->run, b->nrun, sizeof *b->run, srec_cmp, b);
    if (fwrite(b->run, sizeof *b->run, b->nrun, b->sf) != b->nrun) return spool_io(ctx, b, "write");
    b->run_len[b->n_runs++] = b->nrun;
    b->nrun = 0;
    return FA_OK;
}

static fa_status spool_add(fa_ctx *ctx, fa_ta_builder *b, strm *s, const rec *r)
{
    if (!b->run && !(b->run = malloc(RUN_RECS * sizeof *b->run))) return nomem(ctx, b);
    srec *x = &b->run[b->nrun++];
    x->r = *r;
    x->seq = b->spool_seq++;
    x->sidx = (int32_t)(s - b->streams);
    if (b->nrun == RUN_RECS) return spool_write_run(ctx, b);
    return FA_OK;
}

static fa_status ordered(fa_ctx *ctx, fa_ta_builder *b, const srec *x)
{
    strm *s = &b->streams[x->sidx];
    rec r = x->r;
    graph_take(b, &r);
    return analyze(ctx, b, s, &r);
}

/* every record, in order: the last run from memory when it is the only one, else a k-way
 * merge of the runs in the file, each read through a buffer of its share of MERGE_BUDGET */
static fa_status spool_drain(fa_ctx *ctx, fa_ta_builder *b)
{
    fa_status s = FA_OK;
    if (!b->n_runs) {
        qsort_r(b->run, b->nrun, sizeof *b->run, srec_cmp, b);
        for (size_t i = 0; i < b->nrun && !s; i++) s = ordered(ctx, b, &b->run[i]);
        b->nrun = 0;
        return s;
    }
    if (b->nrun && (s = spool_write_run(ctx, b))) return s;
    free(b->run); /* the merge's buffers take its place */
    b->run = NULL;
    size_t k = b->n_runs;
    size_t per = MERGE_BUDGET / sizeof(srec) / k;
    if (per < 16) per = 16;
    srec *buf = malloc(k * per * sizeof *buf);
    uint64_t *off = malloc(k * sizeof *off), *left = malloc(k * sizeof *left);
    size_t *pos = malloc(k * sizeof *pos), *have = malloc(k * sizeof *have), *hp = malloc(k * sizeof *hp);
    if (!buf || !off || !left || !pos || !have || !hp) {
        s = nomem(ctx, b);
        goto done;
    }
    b->merge_bytes = k * per * sizeof *buf + k * 5 * sizeof(uint64_t);
    uint64_t o = 0;
    for (size_t i = 0; i < k; i++) {
        off[i] = o;
        left[i] = b->run_len[i];
        o += b->run_len[i] * sizeof(srec);
        pos[i] = have[i] = 0;
    }
    /* a min-heap of runs by their current record */
#define HEAD(i) (&buf[(i) * per + pos[i]])
    size_t nh = 0;
    for (size_t i = 0; i < k; i++) {
        size_t want = left[i] < per ? (size_t)left[i] : per;
        if (fseeko(b->sf, (off_t)off[i], SEEK_SET) || fread(&buf[i * per], sizeof *buf, want, b->sf) != want) {
            s = spool_io(ctx, b, "read");
            goto done;
        }
        off[i] += want * sizeof *buf;
        left[i] -= want;
        have[i] = want;
        if (!want) continue;
        size_t j = nh++;
        hp[j] = i;
        while (j > 0 && srec_cmp(HEAD(hp[j]), HEAD(hp[(j - 1) / 2]), b) < 0) {
            size_t t = hp[j];
            hp[j] = hp[(j - 1) / 2];
            hp[(j - 1) / 2] = t;
            j = (j - 1) / 2;
        }
    }
    while (nh && !s) {
        size_t i = hp[0];
        s = ordered(ctx, b, HEAD(i));
        if (s) break;
        if (++pos[i] == have[i]) {
            size_t want = left[i] < per ? (size_t)left[i] : per;
            if (want && (fseeko(b->sf, (off_t)off[i], SEEK_SET) ||
                         fread(&buf[i * per], sizeof *buf, want, b->sf) != want)) {
                s = spool_io(ctx, b, "read");
                break;
            }
            off[i] += want * sizeof *buf;
            left[i] -= want;
            have[i] = want;
            pos[i] = 0;
            if (!want) hp[0] = hp[--nh];
        }
        for (size_t j = 0;;) { /* sift down */
            size_t l = 2 * j + 1, r = l + 1, m = j;
            if (l < nh && srec_cmp(HEAD(hp[l]), HEAD(hp[m]), b) < 0) m = l;
            if (r < nh && srec_cmp(HEAD(hp[r]), HEAD(hp[m]), b) < 0) m = r;
            if (m == j) break;
            size_t t = hp[j];
            hp[j] = hp[m];
            hp[m] = t;
            j = m;
        }
    }
#undef HEAD
done:
    free(buf), free(off), free(left), free(pos), free(have), free(hp);
    fclose(b->sf);
    b->sf = NULL;
    return s;
}

void fa_ta_builder_any_order(fa_ta_builder *b)
{
    b->spool = true;
}

fa_status fa_ta_builder_add(fa_ctx *ctx, fa_ta_builder *b, const fa_activity *g, const fa_activity *L)
{
    if (b->fail) return b->fail;
    int64_t d = g->end_ns > g->start_ns ? (int64_t)(g->end_ns - g->start_ns) : 0;
    if (g->kind == FA_ACT_MEMCPY || g->kind == FA_ACT_MEMSET) {
        if (g->device >= 0) b->any_gpu = true;
        window_add(b, g, L, -1);
        if (g->kind == FA_ACT_MEMCPY) b->n_memcpy++, b->memcpy_ns += d;
        else b->n_memset++, b->memset_ns += d;
        return FA_OK;
    }
    if (g->kind != FA_ACT_KERNEL || g->device < 0) return FA_OK;
    b->any_gpu = true;
    /* kernel name -> id: a direct-mapped cache by the name's address (names are interned and
     * live until finish) spares normalising every record */
    const char *gname = g->name ? g->name : "?";
    size_t slot = (size_t)(((uintptr_t)gname >> 4) * 0x9E3779B97F4A7C15ull >> 52) & (NAME_SLOTS - 1);
    bool added = false;
    const char *stored = NULL;
    int32_t tok;
    fa_kclass kcls;
    int kkey;
    if (b->name_ptr[slot] == gname) {
        tok = b->name_tok[slot];
        kcls = (fa_kclass)b->name_cls[slot];
        kkey = b->name_key[slot];
    } else {
        char norm[512];
        fa_kernel_name_normalize(gname, norm, sizeof norm);
        tok = smap_get(&b->tok_map, b->ar, norm, (int32_t)b->n_toks, &added, &stored);
        if (tok < 0) return nomem(ctx, b);
        /* the class and key by the record's own name: never by whichever name of its token came
         * first, which depends on the order records come in */
        kcls = fa_kernel_classify(gname);
        kkey = fa_ta_key_of_kernel(stored, kcls);
        b->name_ptr[slot] = gname;
        b->name_tok[slot] = tok;
        b->name_cls[slot] = (uint8_t)kcls;
        b->name_key[slot] = (int16_t)kkey;
    }
    if (added) {
        tokstat *na = grow(b->toks, &b->cap_toks, b->n_toks + 1, sizeof *na);
        if (!na) return nomem(ctx, b);
        b->toks = na;
        tokstat *t = &b->toks[b->n_toks++];
        memset(t, 0, sizeof *t);
        t->name = stored;
        t->full_name = gname;
        t->cls = kcls;
        t->rep_start = g->start_ns;
        t->rep_end = g->end_ns;
        t->cfg_start = t->occ_start = UINT64_MAX;
        t->occupancy = -1;
    }
    tokstat *t = &b->toks[tok];
    t->count++;
    t->total_ns += d;
    if (!qh_add(&t->dur, d)) return nomem(ctx, b);
    /* the row's full name, class, launch configuration and occupancy: the earliest record's that
     * has them (ties by name), whatever the order of arrival */
    if (g->start_ns < t->rep_start || (g->start_ns == t->rep_start && (g->end_ns < t->rep_end ||
                                        (g->end_ns == t->rep_end && strcmp(gname, t->full_name) < 0)))) {
        t->full_name = gname;
        t->cls = kcls;
        t->rep_start = g->start_ns;
        t->rep_end = g->end_ns;
    }
    if (g->block[0] > 0 && g->start_ns <= t->cfg_start) {
        if (g->start_ns < t->cfg_start || memcmp(g->grid, t->grid, sizeof t->grid) < 0 ||
            (!memcmp(g->grid, t->grid, sizeof t->grid) && memcmp(g->block, t->block, sizeof t->block) < 0)) {
            memcpy(t->grid, g->grid, sizeof t->grid);
            memcpy(t->block, g->block, sizeof t->block);
            t->registers = g->registers;
            t->smem = g->static_smem + g->dynamic_smem;
        }
        t->cfg_start = g->start_ns;
    }
    if (g->occupancy >= 0 && (g->start_ns < t->occ_start || (g->start_ns == t->occ_start && g->occupancy < t->occupancy))) {
        t->occupancy = g->occupancy;
        t->occ_src = "trace";
        t->occ_start = g->start_ns;
    }
    b->n_kernels++;
    b->kernel_ns += d;
    b->class_ns[kcls] += d;
    if (b->n_kernels == 1 || g->start_ns < b->first_ns) b->first_ns = g->start_ns;
    if (g->end_ns > b->last_ns) b->last_ns = g->end_ns;

    rec r;
    memset(&r, 0, sizeof r);
    r.start = g->start_ns;
    r.end = g->end_ns > g->start_ns ? g->end_ns : g->start_ns;
    r.tok = tok;
    r.cls = (uint8_t)kcls;
    /* the op (name id, key, in place) and the stack's pattern frame, cached by address */
    int op_key;
    size_t os = (size_t)(((uintptr_t)g->op_type >> 4) * 0x9E3779B97F4A7C15ull >> 54) & 1023;
    if (g->op_type && b->opk_ptr[os] == g->op_type) {
        r.op = b->opk_id[os];
        op_key = b->opk_key[os];
        r.inplace = b->opk_inplace[os];
    } else {
        op_key = fa_ta_key_of_op(g->op_type);
        size_t ol = g->op_type ? strlen(g->op_type) : 0;
        r.inplace = ol > 1 && g->op_type[ol - 1] == '_' && g->op_type[ol - 2] != '_';
        r.op = name_id(b, &b->op_map, &b->ops, &b->n_ops, &b->cap_ops, g->op_type);
        if (g->op_type && r.op >= 0) {
            b->opk_ptr[os] = g->op_type;
            b->opk_id[os] = r.op;
            b->opk_key[os] = (int16_t)op_key;
            b->opk_inplace[os] = r.inplace;
        }
    }
    /* a memory-bound kernel an addmm or a convolution launched (a bias broadcast, a cast) is not
     * the GEMM: only its own name says what it is */
    if (fa_kclass_light(kcls) && (op_key == FA_TA_KEY_GEMM || op_key == FA_TA_KEY_CONV || op_key == FA_TA_KEY_ATTENTION))
        op_key = -1;
    r.key = (int16_t)(kkey >= 0 ? kkey : op_key >= 0 ? op_key : FA_TA_KEY_OTHER);
    size_t hs = (size_t)(((uintptr_t)g->shapes >> 4) * 0x9E3779B97F4A7C15ull >> 54) & 1023;
    if (g->shapes && b->shp_ptr[hs] == g->shapes) {
        r.shape = b->shp_id[hs];
    } else {
        r.shape = shape_id(b, g->shapes);
        if (g->shapes && r.shape >= 0) {
            b->shp_ptr[hs] = g->shapes;
            b->shp_id[hs] = r.shape;
        }
    }
    size_t ss = (size_t)(((uintptr_t)g->stack >> 4) * 0x9E3779B97F4A7C15ull >> 54) & 1023;
    if (g->stack && b->stk_ptr[ss] == g->stack) {
        r.frame = b->stk_frame[ss];
        r.frame_pat = b->stk_pat[ss];
    } else {
        r.frame = frame_of(b, g->stack, &r.frame_pat);
        if (g->stack && r.frame >= -1) {
            b->stk_ptr[ss] = g->stack;
            b->stk_frame[ss] = r.frame;
            b->stk_pat[ss] = r.frame_pat;
        }
    }
    if (r.op < -1 || r.shape < -1 || r.frame < -1) return nomem(ctx, b);
    r.graph = -1;
    r.graph_launch_op = r.graph_capture_op = -1;
    r.wid = window_add(b, g, L, tok);
    r.pid = g->pid;
    r.tid = g->tid;
    r.launch_ns = -1;
    if (g->flags & FA_ACTF_ORPHAN) r.flags |= RF_ORPHAN;
    if (g->flags & FA_ACTF_CLOCK_INVERSION) r.flags |= RF_INVERTED;
    int64_t ld = L && L->end_ns > L->start_ns ? (int64_t)(L->end_ns - L->start_ns) : (L ? 0 : -1);
    bool graph = false;
    if (L && L->name) { /* GraphLaunch in the launch call's name, memoised by its address */
        if (L->name != b->last_launch_name) {
            b->last_launch_name = L->name;
            b->last_launch_graph = strstr(L->name, "GraphLaunch") || strstr(L->name, "graphLaunch");
        }
        graph = b->last_launch_graph;
    }
    if (graph || (g->flags & FA_ACTF_GRAPH)) {
        r.flags |= RF_GRAPH;
        r.graph = L ? (L->pid * 1000003) ^ L->correlation : g->correlation;
        r.graph_launch_op = name_id(b, &b->op_map, &b->ops, &b->n_ops, &b->cap_ops, g->node_name);
        /* the importer sets op_type to the captured launch's op when the capture is in the trace,
         * else it stays the op around cudaGraphLaunch */
        r.graph_capture_op = g->op_type && g->node_name && strcmp(g->op_type, g->node_name) ? r.op : -1;
        b->graph_kernels++;
        r.launch_ns = ld; /* taken by its replay in time order (graph_take) */
    } else if (L) {
        r.launch_ns = ld;
        if (!qh_add(&b->launch_q, ld)) return nomem(ctx, b);
        b->n_launch_calls++;
        b->launch_call_ns += ld;
    }
    /* roofline point (kernel name x input shapes) */
    {
        point_key pk = {b, tok, r.shape};
        uint64_t h = mix64(((uint64_t)(uint32_t)tok << 32) ^ (uint64_t)(uint32_t)(r.shape + 1));
        size_t slot;
        int32_t pid = itab_find(&b->point_tab, h, point_eq, &pk, &slot);
        if (pid < 0) {
            pointstat *na = grow(b->points, &b->cap_points, b->n_points + 1, sizeof *na);
            if (!na) return nomem(ctx, b);
            b->points = na;
            pid = (int32_t)b->n_points;
            b->points[b->n_points++] = (pointstat){tok, r.shape, r.op, 0, 0};
            if (!itab_insert(&b->point_tab, h, pid)) return nomem(ctx, b);
        }
        b->points[pid].count++;
        b->points[pid].total_ns += d;
    }
    if (r.shape >= 0) {
        b->n_estimated_bytes++;
        /* the best bandwidth a memory-bound kernel reached (kernels over 5 us: shorter ones are
         * latency-bound and say nothing about the roof) */
        if (fa_kclass_light(kcls) && d >= 5000) {
            kbytes kb;
            kernel_bytes(b->shapes[r.shape], r.key, r.inplace, &kb);
            if (kb.read >= 0 && kb.write >= 0) {
                double gbs = (kb.read + kb.write) / (double)d;
                if (gbs > b->best_gbs) {
                    b->best_gbs = gbs;
                    b->best_gbs_kernel = t->name;
                }
            }
        }
    }
    strm *s = stream_of(b, g->device, g->stream);
    if (!s) return nomem(ctx, b);
    if (b->spool) return spool_add(ctx, b, s, &r);
    if (s->nheap == s->capheap) {
        rec *nh = grow(s->heap, &s->capheap, s->nheap + 1, sizeof *nh);
        if (!nh) return nomem(ctx, b);
        s->heap = nh;
    }
    /* in time order (the usual case): straight to the analysis, no heap */
    if (!s->nheap && (!s->emitted || r.start >= s->last_emitted)) {
        s->emitted = true;
        s->last_emitted = r.start;
        graph_take(b, &r);
        return analyze(ctx, b, s, &r);
    }
    heap_push(s, &r);
    b->heap_now++;
    if (b->heap_now > b->heap_peak) b->heap_peak = b->heap_now;
    if (s->nheap > REORDER) return emit_one(ctx, b, s);
    return FA_OK;
}

/* ---------------------------------------------------------------- finishing ---- */

static int cmp_kernel_total(const void *a, const void *b)
{
    const fa_ta_kernel *x = a, *y = b;
    if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_opp(const void *a, const void *b)
{
    const fa_ta_opportunity *x = a, *y = b;
    if (x->est.saving_ns != y->est.saving_ns) return x->est.saving_ns > y->est.saving_ns ? -1 : 1;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    for (int i = 0; i < x->n; i++) {
        int c = strcmp(x->members[i], y->members[i]);
        if (c) return c;
    }
    return 0;
}

static int cmp_point(const void *a, const void *b)
{
    const fa_ta_point *x = a, *y = b;
    if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns ? -1 : 1;
    return strcmp(x->kernel, y->kernel);
}

static int cmp_gap(const void *a, const void *b)
{
    const fa_ta_gap *x = a, *y = b;
    if (x->gap_ns != y->gap_ns) return x->gap_ns > y->gap_ns ? -1 : 1;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int cmp_stretch(const void *a, const void *b)
{
    const fa_ta_stretch *x = a, *y = b;
    if (x->n_kernels != y->n_kernels) return x->n_kernels > y->n_kernels ? -1 : 1;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int cmp_stream(const void *a, const void *b)
{
    const fa_ta_stream *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    return (x->stream > y->stream) - (x->stream < y->stream);
}

static int cmp_wrec(const void *a, const void *b)
{
    const fa_ta_wrec *x = a, *y = b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    return (x->stream > y->stream) - (x->stream < y->stream);
}

static const char *adup(fa_arena *ar, const char *s)
{
    return s ? fa_arena_strdup(ar, s) : NULL;
}

fa_status fa_ta_builder_finish(fa_ctx *ctx, fa_ta_builder *b, fa_trace_advice **out)
{
    fa_status s = b->fail;
    fa_trace_advice *a = NULL;
    if (!s && b->spool) s = spool_drain(ctx, b);
    /* drain the windows */
    for (size_t i = 0; i < b->n_streams && !s; i++) {
        strm *st = &b->streams[i];
        while (st->nheap && !s) s = emit_one(ctx, b, st);
        while (st->wn && !s) s = win_step(ctx, b, st);
        if (!s) s = seg_flush(ctx, b, st);
        stretch_end(b, st);
    }
    for (int i = 0; i < OPEN_REPLAYS; i++) replay_close(b, &b->replays[i]);
    if (s) goto fail;
    if (b->own_trace) {
        /* a streaming import: the steps from the whole cpu side, read by now */
        b->n_steps = 0;
        count_steps(b, b->own_trace);
    }
    a = calloc(1, sizeof *a);
    if (!a || !(a->arena = fa_arena_create(1 << 16))) goto nomem;
    fa_arena *ar = a->arena;

    /* device */
    a->device_name = adup(ar, b->dev.name);
    if (b->dev.cc_major > 0) {
        a->cc_major = b->dev.cc_major;
        a->cc_minor = b->dev.cc_minor;
        a->cc_source = "deviceProperties";
    } else if (fa_gpu_cc_from_name(b->dev.name, &a->cc_major, &a->cc_minor)) {
        a->cc_source = "assumed from the device name";
    }
    a->total_mem_bytes = b->dev.total_mem_bytes;
    a->sm_count = b->dev.sm_count;
    fa_gpu_roofs_for(b->dev.name, b->dev.total_mem_bytes, &a->roofs);
    a->hbm_gbs = a->roofs.hbm_gbs;
    a->hbm_label = a->roofs.label;
    if (b->best_gbs > 0 && (a->hbm_gbs <= 0 || b->best_gbs < a->hbm_gbs)) {
        a->mem_roof_gbs = b->best_gbs;
        char buf[600];
        snprintf(buf, sizeof buf, "measured in this trace: the best bandwidth a memory-bound kernel reached (%s, bytes "
                 "estimated from Input Dims)", b->best_gbs_kernel);
        a->mem_roof_source = adup(ar, buf);
    } else if (a->hbm_gbs > 0) {
        a->mem_roof_gbs = a->hbm_gbs;
        a->mem_roof_source = "theoretical (data sheet)";
    }

    a->no_gpu_activity = !b->any_gpu;
    a->n_kernels = b->n_kernels;
    a->kernel_ns = b->kernel_ns;
    memcpy(a->class_ns, b->class_ns, sizeof a->class_ns);
    a->span_ns = b->n_kernels ? (int64_t)(b->last_ns - b->first_ns) : 0;
    a->n_steps = b->n_steps;
    a->step_ns = b->n_steps ? a->span_ns / b->n_steps : a->span_ns;
    a->n_memcpy = b->n_memcpy;
    a->memcpy_ns = b->memcpy_ns;
    a->n_memset = b->n_memset;
    a->memset_ns = b->memset_ns;
    a->n_launch_calls = b->n_launch_calls;
    a->launch_call_ns = b->launch_call_ns;
    a->launch_call_median_ns = qh_median(&b->launch_q);
    a->gap_median_ns = qh_median(&b->gap_q);
    a->launch_overhead_ns = (a->launch_call_median_ns > 0 ? a->launch_call_median_ns : 0) +
                            (a->gap_median_ns > 0 ? a->gap_median_ns : 0);
    a->n_late = b->n_late;
    a->n_orphans = b->n_orphans;
    a->n_clock_inversions = b->n_clock_inversions;
    a->n_parse_errors = b->n_parse_errors;
    a->n_estimated_bytes = b->n_estimated_bytes;
    a->graph_kernels = b->graph_kernels;

    /* per kernel name */
    const fa_cuda_limits *lim = a->cc_major ? fa_cuda_limits_for(a->cc_major, a->cc_minor) : NULL;
    a->n_kernel_names = (int)b->n_toks;
    a->kernels = fa_arena_alloc(ar, (b->n_toks ? b->n_toks : 1) * sizeof *a->kernels);
    if (!a->kernels) goto nomem;
    int64_t *tok_median = calloc(b->n_toks + 1, sizeof *tok_median);
    if (!tok_median) goto nomem;
    for (size_t i = 0; i < b->n_toks; i++) {
        tokstat *t = &b->toks[i];
        fa_ta_kernel *k = &a->kernels[i];
        k->id = (int32_t)i;
        k->name = adup(ar, t->name);
        k->full_name = adup(ar, t->full_name);
        k->cls = t->cls;
        int tkey = fa_ta_key_of_kernel(t->name, t->cls);
        k->op = fa_ta_key_name(tkey >= 0 ? tkey : FA_TA_KEY_OTHER);
        k->count = t->count;
        k->total_ns = t->total_ns;
        k->median_ns = tok_median[i] = qh_median(&t->dur);
        memcpy(k->grid, t->grid, sizeof k->grid);
        memcpy(k->block, t->block, sizeof k->block);
        k->registers = t->registers;
        k->smem = t->smem;
        k->occupancy = t->occupancy;
        k->occupancy_source = t->occ_src;
        int bs = k->block[0] * (k->block[1] ? k->block[1] : 1) * (k->block[2] ? k->block[2] : 1);
        if (k->occupancy < 0 && lim && bs > 0 && k->registers > 0) {
            fa_occ_input in = {.block_size = bs, .regs_per_thread = k->registers, .static_smem = (size_t)k->smem,
                               .carveout_percent = -1, .block_barriers = 1};
            fa_occ_result r;
            if (fa_occupancy(ctx, lim, &in, &r) == FA_OK) {
                k->occupancy = r.occupancy;
                k->occupancy_source = "calculator";
            } else {
                fa_ctx_clear(ctx);
            }
        }
        if (!k->name || !k->full_name) {
            free(tok_median);
            goto nomem;
        }
    }

    /* opportunities: named patterns (any count) and repeated sequences (twice or more) */
    size_t n_o = 0;
    for (size_t i = 0; i < b->n_opps; i++)
        if (b->opps[i].pattern >= 0 || b->opps[i].count >= 2) n_o++;
    fa_ta_opportunity *ops = calloc(n_o ? n_o : 1, sizeof *ops);
    if (!ops) {
        free(tok_median);
        goto nomem;
    }
    double step_wall = (double)a->span_ns;
    size_t w = 0;
    for (size_t i = 0; i < b->n_opps; i++) {
        const oppstat *p = &b->opps[i];
        if (!(p->pattern >= 0 || p->count >= 2)) continue;
        fa_ta_opportunity *o = &ops[w++];
        o->id = (int32_t)i;
        o->pattern = p->pattern >= 0 ? b->patterns[p->pattern].name : NULL;
        o->fix = p->pattern >= 0 ? b->patterns[p->pattern].fix
                                 : "one fused elementwise/reduction kernel: torch.compile, or fuse-advise's generated kernel "
                                   "from the same cluster description";
        o->n = p->n;
        o->count = p->count;
        o->kernel_ns = p->kernel_ns;
        o->gaps_ns = p->gaps_ns;
        o->skipped = p->skipped;
        o->bytes_occurrences = p->bytes_occ;
        o->device = p->device;
        o->stream = p->stream;
        o->first_start_ns = p->first_start;
        o->members = fa_arena_alloc(ar, (size_t)p->n * sizeof *o->members);
        o->member_ops = fa_arena_alloc(ar, (size_t)p->n * sizeof *o->member_ops);
        o->member_ns = fa_arena_alloc(ar, (size_t)p->n * sizeof *o->member_ns);
        if (!o->members || !o->member_ops || !o->member_ns) {
            free(tok_median);
            free(ops);
            goto nomem;
        }
        double floor = -1;
        for (int j = 0; j < p->n; j++) {
            o->members[j] = a->kernels[p->tok[j]].name;
            o->member_ops[j] = fa_ta_key_name(p->key[j]);
            o->member_ns[j] = p->member_ns[j];
            double md = (double)tok_median[p->tok[j]];
            if (md > 0 && (floor < 0 || md < floor)) floor = md;
        }
        fa_fusion_input in = {.occurrences = p->count, .n_members = p->n, .member_ns = (double)p->kernel_ns,
                              .gaps_ns = (double)p->gaps_ns, .read_bytes = -1, .write_bytes = -1, .flops = -1,
                              .floor_ns = floor > 0 ? floor : 0, .longest_member_ns = p->longest_ns / (double)p->count};
        if (p->bytes_occ > 0) {
            /* sizes of the occurrences that had them, scaled to all (occurrences of one sequence
             * repeat the same shapes) */
            double scale = (double)p->count / (double)p->bytes_occ;
            in.read_bytes = p->read * scale;
            in.write_bytes = p->write * scale;
            o->read_bytes = p->read / (double)p->bytes_occ;
            o->write_bytes = p->write / (double)p->bytes_occ;
            o->saved_bytes = p->saved / (double)p->bytes_occ;
        } else {
            o->read_bytes = o->write_bytes = o->saved_bytes = -1;
        }
        fa_fusion_predict(&in, a->mem_roof_gbs, a->roofs.fp32_gflops, &o->est);
        o->share = step_wall > 0 ? o->est.saving_ns / step_wall : 0;
        a->saving_ns += o->est.saving_ns;
        a->saving_kernel_ns += o->kernel_ns;
    }
    qsort(ops, w, sizeof *ops, cmp_opp);
    a->n_opps_total = (int64_t)w;
    a->n_opps = w < FA_TA_MAX_OPPS ? (int)w : FA_TA_MAX_OPPS;
    a->opps = fa_arena_alloc(ar, (size_t)(a->n_opps ? a->n_opps : 1) * sizeof *a->opps);
    if (!a->opps) {
        free(tok_median);
        free(ops);
        goto nomem;
    }
    memcpy(a->opps, ops, (size_t)a->n_opps * sizeof *a->opps);
    /* the window's tags: internal opportunity id -> rank (-1 past the kept ones) */
    int32_t *rank = malloc((b->n_opps + 1) * sizeof *rank);
    if (!rank) {
        free(tok_median);
        free(ops);
        goto nomem;
    }
    for (size_t i = 0; i < b->n_opps; i++) rank[i] = -1;
    for (int i = 0; i < a->n_opps; i++) rank[a->opps[i].id] = i;
    for (size_t i = 0; i < b->n_window; i++)
        if (b->window[i].opp >= 0) {
            b->window[i].opp = rank[b->window[i].opp];
            if (b->window[i].opp < 0) b->window[i].occ = -1;
        }
    free(rank);
    free(ops);
    free(tok_median);

    /* roofline points */
    fa_ta_point *pts = calloc(b->n_points ? b->n_points : 1, sizeof *pts);
    if (!pts) goto nomem;
    for (size_t i = 0; i < b->n_points; i++) {
        const pointstat *p = &b->points[i];
        fa_ta_point *q = &pts[i];
        q->kernel = a->kernels[p->tok].name;
        q->cls = a->kernels[p->tok].cls;
        q->count = p->count;
        q->total_ns = p->total_ns;
        q->shapes = p->shape >= 0 ? b->shapes[p->shape]->text : NULL;
        q->op = p->op >= 0 ? b->ops[p->op] : NULL;
        int key = fa_ta_key_of_kernel(b->toks[p->tok].name, b->toks[p->tok].cls);
        if (key < 0) key = fa_ta_key_of_op(q->op);
        size_t ol = q->op ? strlen(q->op) : 0;
        kbytes kb;
        kernel_bytes(p->shape >= 0 ? b->shapes[p->shape] : NULL, key >= 0 ? key : FA_TA_KEY_OTHER,
                     ol > 1 && q->op[ol - 1] == '_' && q->op[ol - 2] != '_', &kb);
        q->bytes = kb.read >= 0 && kb.write >= 0 ? kb.read + kb.write : -1;
        q->flops = q->bytes >= 0 ? kb.flops : -1;
        q->why_unknown = kb.why;
    }
    qsort(pts, b->n_points, sizeof *pts, cmp_point);
    a->n_points = b->n_points < FA_TA_MAX_POINTS ? (int)b->n_points : FA_TA_MAX_POINTS;
    a->points = fa_arena_alloc(ar, (size_t)(a->n_points ? a->n_points : 1) * sizeof *a->points);
    if (!a->points) {
        free(pts);
        goto nomem;
    }
    for (int i = 0; i < a->n_points; i++) {
        a->points[i] = pts[i];
        a->points[i].shapes = adup(ar, pts[i].shapes);
        a->points[i].op = adup(ar, pts[i].op);
    }
    free(pts);

    /* streams, gaps, stretches, graphs */
    a->n_streams = (int)b->n_streams;
    a->streams = fa_arena_alloc(ar, (b->n_streams ? b->n_streams : 1) * sizeof *a->streams);
    if (!a->streams) goto nomem;
    for (size_t i = 0; i < b->n_streams; i++) {
        a->streams[i] = b->streams[i].st;
        a->idle_ns += a->streams[i].idle_ns;
        a->n_overlaps += a->streams[i].n_overlaps;
    }
    qsort(a->streams, b->n_streams, sizeof *a->streams, cmp_stream);
    a->n_gaps = b->n_gaps;
    a->gaps = fa_arena_alloc(ar, (size_t)(b->n_gaps ? b->n_gaps : 1) * sizeof *a->gaps);
    if (!a->gaps) goto nomem;
    for (int i = 0; i < b->n_gaps; i++) {
        a->gaps[i] = b->gaps[i];
        const char *op = NULL;
        if (b->lookup && b->gap_who[i].ok)
            op = b->lookup(b->lookup_user, b->gap_who[i].pid, b->gap_who[i].tid,
                           b->gaps[i].start_ns + (uint64_t)b->gaps[i].gap_ns / 2);
        a->gaps[i].cpu_op = adup(ar, op);
        a->gaps[i].next_kernel = adup(ar, b->gaps[i].next_kernel);
    }
    qsort(a->gaps, (size_t)a->n_gaps, sizeof *a->gaps, cmp_gap);
    a->n_stretches = b->n_stretches;
    a->stretches = fa_arena_alloc(ar, (size_t)(b->n_stretches ? b->n_stretches : 1) * sizeof *a->stretches);
    if (!a->stretches) goto nomem;
    for (int i = 0; i < b->n_stretches; i++) {
        a->stretches[i] = b->stretches[i];
        a->stretches[i].first_name = adup(ar, b->stretches[i].first_name);
    }
    qsort(a->stretches, (size_t)a->n_stretches, sizeof *a->stretches, cmp_stretch);
    a->launch_bound_kernels = b->launch_bound_kernels;
    a->launch_bound_ns = b->launch_bound_ns;
    a->n_graphs = (int)b->n_graphs;
    a->graphs = fa_arena_alloc(ar, (b->n_graphs ? b->n_graphs : 1) * sizeof *a->graphs);
    if (!a->graphs) goto nomem;
    for (size_t i = 0; i < b->n_graphs; i++) {
        const graphstat *g = &b->graphs[i];
        a->graphs[i] = (fa_ta_graph){g->id, g->replays, g->kernels, g->kernel_ns,
                                     adup(ar, g->launch_op >= 0 ? b->ops[g->launch_op] : NULL),
                                     adup(ar, g->capture_op >= 0 ? b->ops[g->capture_op] : NULL)};
    }

    /* the advice's own state at its peak: tables, histograms, windows */
    size_t st_bytes = b->cap_toks * sizeof(tokstat) + b->cap_points * sizeof(pointstat) +
                      b->cap_opps * sizeof(oppstat) + b->cap_streams * sizeof(strm) + b->cap_shapes * sizeof(shape_info) +
                      b->heap_peak * sizeof(rec) + fa_arena_used(b->ar) +
                      (b->spool_seq ? (b->n_runs ? RUN_RECS : (size_t)b->spool_seq) * sizeof(srec) : 0) +
                      b->merge_bytes;
    for (size_t i = 0; i < b->n_toks; i++) st_bytes += qh_bytes(&b->toks[i].dur);
    a->peak_state_bytes = st_bytes;
    qsort(a->kernels, b->n_toks, sizeof *a->kernels, cmp_kernel_total);
    /* the window, its kernels as positions in the sorted kernels[] */
    a->window_what = adup(ar, b->win_what);
    if (b->n_window) {
        int32_t *pos = malloc((b->n_toks + 1) * sizeof *pos);
        a->window = fa_arena_alloc(ar, b->n_window * sizeof *a->window);
        if (!pos || !a->window) {
            free(pos);
            goto nomem;
        }
        for (size_t i = 0; i < b->n_toks; i++) pos[a->kernels[i].id] = (int32_t)i;
        for (size_t i = 0; i < b->n_window; i++) {
            a->window[i] = b->window[i];
            if (a->window[i].kernel >= 0) a->window[i].kernel = pos[a->window[i].kernel];
        }
        a->n_window = (int)b->n_window;
        free(pos);
        qsort(a->window, b->n_window, sizeof *a->window, cmp_wrec);
    }
    fa_ta_builder_free(b);
    *out = a;
    return FA_OK;
nomem:
    s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory in the trace advice");
fail:
    fa_trace_advice_free(a);
    fa_ta_builder_free(b);
    return s;
}

void fa_trace_advice_free(fa_trace_advice *a)
{
    if (!a) return;
    fa_arena_free(a->arena);
    free(a);
}

/* ---------------------------------------------------------------- in-memory traces ---- */

static int cpu_cmp(const void *pa, const void *pb, void *arg)
{
    const fa_activity *acts = arg;
    const fa_activity *a = &acts[*(const int32_t *)pa], *b = &acts[*(const int32_t *)pb];
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
    if (a->end_ns != b->end_ns) return a->end_ns > b->end_ns ? -1 : 1;
    return *(const int32_t *)pa < *(const int32_t *)pb ? -1 : 1;
}

static bool is_host_frame(const fa_activity *a)
{
    return a->kind == FA_ACT_CPU_OP || a->kind == FA_ACT_MODULE || (a->kind == FA_ACT_RANGE && a->device < 0);
}

struct cpu_ix {
    const fa_activity *acts;
    size_t n_acts;
    int32_t *ord;      /* cpu ops, ranges, module scopes by (pid, tid, start, outer first) */
    int32_t *parent;   /* position of the enclosing one, -1 */
    size_t n;
    bool built, failed;/* built on the first lookup: only the few largest gaps need it */
};

static void cpu_ix_free(cpu_ix *x)
{
    if (!x) return;
    free(x->ord);
    free(x->parent);
    free(x);
}

static bool cpu_build(cpu_ix *x)
{
    if (x->built) return !x->failed;
    x->built = true;
    size_t nc = 0;
    for (size_t i = 0; i < x->n_acts; i++) nc += is_host_frame(&x->acts[i]);
    x->ord = malloc((nc + 1) * sizeof *x->ord);
    x->parent = malloc((nc + 1) * sizeof *x->parent);
    int32_t *stack = malloc((nc + 1) * sizeof *stack);
    if (!x->ord || !x->parent || !stack) {
        free(stack);
        x->failed = true;
        return false;
    }
    for (size_t i = 0; i < x->n_acts; i++)
        if (is_host_frame(&x->acts[i])) x->ord[x->n++] = (int32_t)i;
    qsort_r(x->ord, x->n, sizeof *x->ord, cpu_cmp, (void *)x->acts);
    size_t sp = 0;
    for (size_t p = 0; p < x->n; p++) {
        const fa_activity *a = &x->acts[x->ord[p]];
        while (sp > 0) {
            const fa_activity *top = &x->acts[x->ord[stack[sp - 1]]];
            if (top->pid == a->pid && top->tid == a->tid && top->end_ns >= a->start_ns) break;
            sp--;
        }
        x->parent[p] = sp ? stack[sp - 1] : -1;
        stack[sp++] = (int32_t)p;
    }
    free(stack);
    return true;
}



/* innermost frame on (pid, tid) containing ts: position in ord, -1 (parent walk capped at 256) */
static int32_t cpu_find(const cpu_ix *x, int64_t pid, int64_t tid, uint64_t ts)
{
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const fa_activity *a = &x->acts[x->ord[mid]];
        bool le = a->pid < pid || (a->pid == pid && (a->tid < tid || (a->tid == tid && a->start_ns <= ts)));
        if (le) lo = mid + 1;
        else hi = mid;
    }
    if (!lo) return -1;
    int32_t p = (int32_t)lo - 1;
    const fa_activity *a = &x->acts[x->ord[p]];
    if (a->pid != pid || a->tid != tid) return -1;
    for (int steps = 0; p >= 0 && x->acts[x->ord[p]].end_ns < ts && steps < 256; steps++) p = x->parent[p];
    return p >= 0 && x->acts[x->ord[p]].end_ns >= ts ? p : -1;
}

static const char *cpu_lookup(void *user, int64_t pid, int64_t tid, uint64_t ts)
{
    cpu_ix *x = user;
    if (!cpu_build(x)) return NULL;
    int32_t p = cpu_find(x, pid, tid, ts);
    if (p >= 0) return x->acts[x->ord[p]].name;
    /* any thread of the process: the first thread (in order) with a frame there */
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->acts[x->ord[mid]].pid < pid) lo = mid + 1;
        else hi = mid;
    }
    for (size_t i = lo; i < x->n && x->acts[x->ord[i]].pid == pid;) {
        int64_t t = x->acts[x->ord[i]].tid;
        p = cpu_find(x, pid, t, ts);
        if (p >= 0) return x->acts[x->ord[p]].name;
        while (i < x->n && x->acts[x->ord[i]].pid == pid && x->acts[x->ord[i]].tid == t) i++;
    }
    return NULL;
}

/* the lookup of a streaming builder: an index over its trace's cpu side, built on the first call
 * (at finish: the cpu side is complete then) */
static const char *cpu_lookup_trace(void *user, int64_t pid, int64_t tid, uint64_t ts)
{
    fa_ta_builder *b = user;
    if (!b->own_cx->acts) {
        b->own_cx->acts = b->own_trace->acts;
        b->own_cx->n_acts = b->own_trace->n_acts;
    }
    return cpu_lookup(b->own_cx, pid, tid, ts);
}

typedef struct lref {
    int64_t pid, corr;
    uint64_t start;
    size_t act;
} lref;

static int cmp_lref(const void *a, const void *b)
{
    const lref *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->act > y->act) - (x->act < y->act);
}

typedef struct gref {
    int32_t device;
    int64_t stream;
    uint64_t start, end;
    size_t act;
} gref;

static int cmp_gref(const void *a, const void *b)
{
    const gref *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->act > y->act) - (x->act < y->act);
}

/* the steps of t, and the timeline window: the second step (the first is often warm-up), else
 * the first; false when t has no step */
static bool is_step(const fa_activity *a)
{
    return (is_host_frame(a) || a->kind == FA_ACT_RANGE) && a->name && !strncmp(a->name, "ProfilerStep#", 13) &&
           a->device < 0;
}

static void count_steps(fa_ta_builder *b, const fa_trace *t)
{
    for (size_t i = 0; i < t->n_acts; i++)
        if (is_step(&t->acts[i])) fa_ta_builder_add_step(b, t->acts[i].start_ns, t->acts[i].end_ns);
}

static bool steps_and_window(fa_ta_builder *b, const fa_trace *t)
{
    const fa_activity *step0 = NULL, *step1 = NULL;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        if (is_step(a)) {
            fa_ta_builder_add_step(b, a->start_ns, a->end_ns);
            if (!step0 || a->start_ns < step0->start_ns) step1 = step0, step0 = a;
            else if (!step1 || a->start_ns < step1->start_ns) step1 = a;
        }
    }
    if (!step0) return false;
    const fa_activity *w = step1 ? step1 : step0;
    fa_ta_builder_set_window(b, w->start_ns, w->end_ns, true, w->name);
    return true;
}

void fa_ta_builder_use_trace(fa_ta_builder *b, const fa_trace *t)
{
    if (!b->own_cx) {
        b->own_cx = calloc(1, sizeof *b->own_cx);
        if (!b->own_cx) return; /* no cpu ops for the gaps: they say unknown */
    }
    b->own_cx->acts = NULL; /* built on the first lookup, from t as it is then */
    b->own_trace = t;
    fa_ta_builder_set_lookup(b, cpu_lookup_trace, b);
    if (!steps_and_window(b, t)) {
        char what[64];
        snprintf(what, sizeof what, "the first %d GPU records", FA_TA_WINDOW_MAX);
        fa_ta_builder_set_window(b, 0, UINT64_MAX, false, what);
    }
}

fa_status fa_trace_advise(fa_ctx *ctx, const fa_trace *t, const fa_ta_device *dev, fa_trace_advice **out)
{
    fa_ta_device d = {0};
    if (dev) d = *dev;
    if (!d.name || !d.name[0]) d.name = t->device_name;
    fa_ta_builder *b = NULL;
    fa_status s = fa_ta_builder_create(ctx, &d, &b);
    if (s) return s;
    fa_ta_builder_set_counters(b, t->n_orphans, t->n_clock_inversions, t->n_parse_errors);
    size_t nl = 0, nc = 0, ng = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        if ((a->kind == FA_ACT_RUNTIME || a->kind == FA_ACT_DRIVER) && a->correlation >= 0) nl++;
        if (is_host_frame(a)) nc++;
        if (a->kind == FA_ACT_KERNEL || a->kind == FA_ACT_MEMCPY || a->kind == FA_ACT_MEMSET) ng++;
    }
    lref *ls = malloc((nl + 1) * sizeof *ls);
    gref *gs = malloc((ng + 1) * sizeof *gs);
    cpu_ix cx = {t->acts, t->n_acts, NULL, NULL, 0, false, false};
    (void)nc;
    if (!ls || !gs) {
        s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory in the trace advice");
        goto done;
    }
    nl = ng = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        if ((a->kind == FA_ACT_RUNTIME || a->kind == FA_ACT_DRIVER) && a->correlation >= 0)
            ls[nl++] = (lref){a->pid, a->correlation, a->start_ns, i};
        if (a->kind == FA_ACT_KERNEL || a->kind == FA_ACT_MEMCPY || a->kind == FA_ACT_MEMSET)
            gs[ng++] = (gref){a->device, a->stream, a->start_ns, a->end_ns, i};
    }
    if (!steps_and_window(b, t) && ng) {
        /* no steps: the first stretch of GPU time holding about FA_TA_WINDOW_MAX records */
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t k = 0; k < ng; k++) {
            if (gs[k].start < lo) lo = gs[k].start;
            if (gs[k].end > hi) hi = gs[k].end;
        }
        double frac = ng > FA_TA_WINDOW_MAX ? (double)FA_TA_WINDOW_MAX / (double)ng : 1.0;
        uint64_t len = (uint64_t)((double)(hi - lo) * frac);
        char what[64];
        snprintf(what, sizeof what, "the first %.3f ms of GPU activity", (double)len / 1e6);
        fa_ta_builder_set_window(b, lo, lo + len, false, what);
    }
    qsort(ls, nl, sizeof *ls, cmp_lref);
    qsort(gs, ng, sizeof *gs, cmp_gref);
    fa_ta_builder_set_lookup(b, cpu_lookup, &cx);
    for (size_t k = 0; k < ng && !s; k++) {
        const fa_activity *g = &t->acts[gs[k].act];
        const fa_activity *L = NULL;
        if (g->correlation >= 0 && !(g->flags & FA_ACTF_ORPHAN) && nl) {
            size_t lo = 0, hi = nl;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (ls[mid].pid < g->pid || (ls[mid].pid == g->pid && ls[mid].corr < g->correlation)) lo = mid + 1;
                else hi = mid;
            }
            if (lo < nl && ls[lo].pid == g->pid && ls[lo].corr == g->correlation) {
                size_t best = lo; /* the latest not after the record, else the first */
                for (size_t q = lo; q < nl && ls[q].pid == g->pid && ls[q].corr == g->correlation && q < lo + 64; q++)
                    if (ls[q].start <= g->start_ns) best = q;
                L = &t->acts[ls[best].act];
            }
        }
        s = fa_ta_builder_add(ctx, b, g, L);
    }
    if (!s) {
        s = fa_ta_builder_finish(ctx, b, out);
        b = NULL;
    }
done:
    fa_ta_builder_free(b);
    free(ls);
    free(gs);
    free(cx.ord);
    free(cx.parent);
    return s;
}

/* ---------------------------------------------------------------- renderings ---- */

static const char *occ_text(const fa_trace_advice *a, const fa_ta_kernel *k, char *buf, size_t cap)
{
    if (k->occupancy >= 0 && k->occupancy_source && !strcmp(k->occupancy_source, "trace"))
        snprintf(buf, cap, "%.0f%% (trace)", 100 * k->occupancy);
    else if (k->occupancy >= 0)
        snprintf(buf, cap, "%.0f%% (sm_%d%d%s)", 100 * k->occupancy, a->cc_major, a->cc_minor,
                 a->cc_source && strcmp(a->cc_source, "deviceProperties") ? ", assumed" : "");
    else
        snprintf(buf, cap, "unknown");
    return buf;
}

static void opp_members(fa_buf *b, const fa_ta_opportunity *o, bool ops)
{
    for (int i = 0; i < o->n; i++) {
        char sh[96];
        fa_buf_puts(b, i ? " -> " : "");
        /* ops: the op key, or the kernel's short name where the key says nothing */
        bool other = ops && !strcmp(o->member_ops[i], "other");
        fa_buf_printf_term(b, "%s", ops && !other ? o->member_ops[i] : fa_kernel_name_short(o->members[i], sh, sizeof sh));
    }
}

static const char *ms(double ns, char *buf, size_t cap)
{
    if (ns >= 1e6) snprintf(buf, cap, "%.2f ms", ns / 1e6);
    else snprintf(buf, cap, "%.1f us", ns / 1e3);
    return buf;
}

void fa_trace_advice_text(const fa_trace_advice *a, fa_buf *b)
{
    char t1[32], t2[32], t3[32];
    if (a->no_gpu_activity) {
        fa_buf_puts(b, "no GPU activity in the trace: nothing to fuse\n");
        return;
    }
    fa_buf_printf_term(b, "device: %s", a->device_name ? a->device_name : "unknown");
    if (a->cc_major) fa_buf_printf_term(b, ", sm_%d%d (%s)", a->cc_major, a->cc_minor, a->cc_source);
    else fa_buf_puts(b, ", compute capability unknown: no occupancy from the calculator");
    if (a->roofs.label)
        fa_buf_printf_term(b, "\nroofs (theoretical, %s data sheet): HBM %.0f GB/s, FP32 %.1f TFLOP/s%s", a->roofs.label,
                           a->roofs.hbm_gbs, a->roofs.fp32_gflops / 1e3, a->roofs.tensor_gflops > 0 ? "" : "");
    if (a->roofs.tensor_gflops > 0) fa_buf_printf_term(b, ", 16-bit tensor %.0f TFLOP/s", a->roofs.tensor_gflops / 1e3);
    if (a->mem_roof_gbs > 0)
        fa_buf_printf_term(b, "\nmemory roof used for fused kernels: %.0f GB/s (%s)", a->mem_roof_gbs, a->mem_roof_source);
    else
        fa_buf_puts(b, "\nmemory roof unknown (device not tabled, no sizes): fused kernels taken to last as long as their "
                       "slowest member");
    fa_buf_printf_term(b, "\n%" PRId64 " GPU kernels (%d distinct), %s of kernel time over a %s span on %d streams", a->n_kernels,
                       a->n_kernel_names, ms((double)a->kernel_ns, t1, sizeof t1), ms((double)a->span_ns, t2, sizeof t2),
                       a->n_streams);
    if (a->n_steps) fa_buf_printf_term(b, ", %" PRId64 " profiler steps (%s each)", a->n_steps, ms((double)a->step_ns, t3, sizeof t3));
    fa_buf_puts(b, "\nkernel time by class:");
    for (int c = 0; c < FA_KCLASS_COUNT; c++)
        if (a->class_ns[c] > 0)
            fa_buf_printf_term(b, " %s %s (%.0f%%)", fa_kclass_name((fa_kclass)c), ms((double)a->class_ns[c], t1, sizeof t1),
                               a->kernel_ns ? 100.0 * (double)a->class_ns[c] / (double)a->kernel_ns : 0.0);
    fa_buf_printf_term(b, "\nlaunch overhead: %.2f us = median launch call %.2f us (%" PRId64
                       " calls) + median idle gap %.2f us (measured)\n",
                       a->launch_overhead_ns / 1e3, a->launch_call_median_ns > 0 ? a->launch_call_median_ns / 1e3 : 0.0,
                       a->n_launch_calls, a->gap_median_ns > 0 ? a->gap_median_ns / 1e3 : 0.0);

    fa_buf_printf_term(b, "\nfusion opportunities, ranked by estimated saving (each kernel counted in at most one): %" PRId64 "\n",
                       a->n_opps_total);
    int show = a->n_opps < 10 ? a->n_opps : 10;
    for (int i = 0; i < show; i++) {
        const fa_ta_opportunity *o = &a->opps[i];
        fa_buf_printf_term(b, "  %2d. %s x%" PRId64 ": saves %s (%.1f%% of the span", i + 1, o->pattern ? o->pattern : "repeated sequence",
                           o->count, ms(o->est.saving_ns, t1, sizeof t1), 100 * o->share);
        if (a->n_steps) fa_buf_printf_term(b, "; %s per step", ms(o->est.saving_ns / (double)a->n_steps, t2, sizeof t2));
        fa_buf_puts(b, "), estimated\n      ");
        opp_members(b, o, true);
        fa_buf_printf_term(b, "  (%d launches -> 1", o->n);
        if (o->skipped) fa_buf_printf_term(b, "; %" PRId64 " kernels between them stay", o->skipped);
        fa_buf_puts(b, ")\n      kernels: ");
        opp_members(b, o, false);
        fa_buf_printf_term(b, "\n      measured %s kernels + %s launch gaps; fused %s", ms((double)o->kernel_ns, t1, sizeof t1),
                           ms((double)o->gaps_ns, t2, sizeof t2), ms(o->est.fused_ns, t3, sizeof t3));
        if (o->read_bytes >= 0)
            fa_buf_printf_term(b, " (per occurrence reads %.2f MiB, writes %.2f MiB, %.2f MiB of intermediates no longer "
                                  "written and read back)",
                               o->read_bytes / 1048576.0, o->write_bytes / 1048576.0, o->saved_bytes / 1048576.0);
        fa_buf_printf_term(b, "\n      from: %s\n      fix: %s\n", o->est.basis, o->fix);
    }
    if (a->n_opps_total > show) fa_buf_printf_term(b, "  ... %" PRId64 " more\n", a->n_opps_total - show);
    fa_buf_printf_term(b, "  all together: %s estimated (%.1f%% of the span), from %s of kernel time\n",
                       ms(a->saving_ns, t1, sizeof t1), a->span_ns ? 100.0 * a->saving_ns / (double)a->span_ns : 0.0,
                       ms((double)a->saving_kernel_ns, t2, sizeof t2));

    fa_buf_printf_term(b, "\n%-60s %-11s %7s %11s %10s %14s %5s %7s %s\n", "kernel", "class", "count", "total us", "median us",
                       "grid/block", "regs", "smem", "occupancy");
    int ks = a->n_kernel_names < 15 ? a->n_kernel_names : 15;
    for (int i = 0; i < ks; i++) {
        const fa_ta_kernel *k = &a->kernels[i];
        char lc[64], oc[64], sh[61];
        if (k->block[0]) snprintf(lc, sizeof lc, "%d/%d", k->grid[0] * (k->grid[1] ? k->grid[1] : 1) * (k->grid[2] ? k->grid[2] : 1),
                                  k->block[0] * (k->block[1] ? k->block[1] : 1) * (k->block[2] ? k->block[2] : 1));
        else snprintf(lc, sizeof lc, "-");
        fa_buf_printf_term(b, "%-60s %-11s %7" PRId64 " %11.1f %10.2f %14s %5d %7d %s\n", fa_kernel_name_short(k->name, sh, sizeof sh),
                           fa_kclass_name(k->cls), k->count, k->total_ns / 1e3, k->median_ns / 1e3, lc, k->registers, k->smem,
                           occ_text(a, k, oc, sizeof oc));
    }
    if (a->n_kernel_names > ks) fa_buf_printf_term(b, "... %d more kernel names\n", a->n_kernel_names - ks);
    fa_buf_printf_term(b, "\nlaunch-bound stretches (>= %d kernels each shorter than its launch call): %d, %" PRId64
                       " kernels, %.1f us kernel time\n",
                       FA_TA_MIN_STRETCH, a->n_stretches, a->launch_bound_kernels, a->launch_bound_ns / 1e3);
    for (int i = 0; i < a->n_stretches && i < 5; i++) {
        const fa_ta_stretch *r = &a->stretches[i];
        char sh[96];
        fa_buf_printf_term(b, "  stream %" PRId64 ": %d kernels from %s, %.1f us kernels vs %.1f us launch calls\n", r->stream,
                           r->n_kernels, fa_kernel_name_short(r->first_name, sh, sizeof sh), r->kernel_ns / 1e3, r->launch_ns / 1e3);
    }
    if (a->n_stretches) fa_buf_puts(b, "  fix: capture them in a CUDA graph (torch.cuda.graphs, torch.compile mode=\"reduce-overhead\") or fuse them\n");
    fa_buf_printf_term(b, "\nidle gaps: %.3f ms summed over streams", a->idle_ns / 1e6);
    if (a->n_overlaps) fa_buf_printf_term(b, " (%" PRId64 " overlapping kernels excluded)", a->n_overlaps);
    fa_buf_puts(b, "\n");
    for (int i = 0; i < a->n_gaps && i < 5; i++) {
        const fa_ta_gap *g = &a->gaps[i];
        char sh[96];
        fa_buf_printf_term(b, "  %.1f us on stream %" PRId64 " before %s; cpu op then: %s\n", g->gap_ns / 1e3, g->stream,
                           fa_kernel_name_short(g->next_kernel, sh, sizeof sh), g->cpu_op ? g->cpu_op : "unknown");
    }
    for (int i = 0; i < a->n_streams; i++) {
        const fa_ta_stream *m = &a->streams[i];
        int64_t span = m->last_ns > m->first_ns ? (int64_t)(m->last_ns - m->first_ns) : 0;
        fa_buf_printf_term(b, "  stream %d:%" PRId64 ": %" PRId64 " kernels, busy %.1f%% of its %s span\n", m->device, m->stream,
                           m->n_kernels, span ? 100.0 * (double)m->busy_ns / (double)span : 0.0, ms((double)span, t1, sizeof t1));
    }
    if (a->n_graphs) {
        fa_buf_printf_term(b, "\nCUDA graphs: %d, %" PRId64 " kernels launched by graph replays\n", a->n_graphs, a->graph_kernels);
        for (int i = 0; i < a->n_graphs && i < 5; i++) {
            const fa_ta_graph *g = &a->graphs[i];
            fa_buf_printf_term(b, "  graph %d: %" PRId64 " replays x %" PRId64 " kernels, %s; launched under %s, captured under %s\n",
                               g->id, g->replays, g->kernels, ms((double)g->kernel_ns, t1, sizeof t1),
                               g->launch_op ? g->launch_op : "unknown", g->capture_op ? g->capture_op : "(capture not in the trace)");
        }
    }
    fa_buf_printf_term(b, "\norphans %" PRIu64 ", clock inversions %" PRIu64 ", parse errors %" PRIu64, a->n_orphans,
                       a->n_clock_inversions, a->n_parse_errors);
    if (a->n_late) fa_buf_printf_term(b, ", %" PRId64 " kernels far out of time order (no sequence across them)", a->n_late);
    fa_buf_puts(b, "\n");
    if (a->n_estimated_bytes == 0)
        fa_buf_puts(b, "no kernel has sizes (no Input Dims): every byte figure is unknown; fused kernels are taken to last as "
                       "long as their slowest member\n");
}

/* ---- JSON (also what the run database keeps: fa_trace_advise_run reads it back) ---- */

static void jkey(fa_buf *b, const char *k, bool *first)
{
    fa_buf_puts(b, *first ? "\"" : ",\"");
    *first = false;
    fa_buf_puts(b, k);
    fa_buf_puts(b, "\":");
}

static void jnum(fa_buf *b, const char *k, double v, bool *first)
{
    jkey(b, k, first);
    if (!isfinite(v)) fa_buf_puts(b, "null");
    else if (v == (double)(int64_t)v && fabs(v) < 9e15) fa_buf_printf(b, "%" PRId64, (int64_t)v);
    else fa_buf_printf(b, "%.6g", v);
}

static void jsk(fa_buf *b, const char *k, const char *v, bool *first)
{
    jkey(b, k, first);
    fa_json_str(b, v);
}

void fa_trace_advice_json(const fa_trace_advice *a, fa_buf *b)
{
    bool f = true;
    fa_buf_puts(b, "{");
    jsk(b, "device", a->device_name, &f);
    jkey(b, "arch", &f);
    if (a->cc_major) fa_buf_printf(b, "\"sm_%d%d\"", a->cc_major, a->cc_minor);
    else fa_buf_puts(b, "null");
    jnum(b, "cc_major", a->cc_major, &f);
    jnum(b, "cc_minor", a->cc_minor, &f);
    jsk(b, "arch_source", a->cc_source, &f);
    jnum(b, "total_mem_bytes", (double)a->total_mem_bytes, &f);
    jnum(b, "sm_count", a->sm_count, &f);
    jnum(b, "hbm_gbs", a->hbm_gbs, &f);
    jsk(b, "hbm_source", a->hbm_gbs > 0 ? "theoretical" : NULL, &f);
    jsk(b, "roofs_label", a->roofs.label, &f);
    jnum(b, "fp32_gflops", a->roofs.fp32_gflops, &f);
    jnum(b, "tensor_gflops", a->roofs.tensor_gflops, &f);
    jnum(b, "mem_roof_gbs", a->mem_roof_gbs, &f);
    jsk(b, "mem_roof_source", a->mem_roof_source, &f);
    jkey(b, "no_gpu_activity", &f);
    fa_buf_puts(b, a->no_gpu_activity ? "true" : "false");
    const struct { const char *k; double v; } nums[] = {
        {"kernels", (double)a->n_kernels}, {"kernel_ns", (double)a->kernel_ns}, {"span_ns", (double)a->span_ns},
        {"steps", (double)a->n_steps}, {"step_ns", (double)a->step_ns}, {"streams", a->n_streams},
        {"memcpy", (double)a->n_memcpy}, {"memcpy_ns", (double)a->memcpy_ns}, {"memset", (double)a->n_memset},
        {"memset_ns", (double)a->memset_ns}, {"launch_calls", (double)a->n_launch_calls},
        {"launch_call_ns", (double)a->launch_call_ns}, {"launch_call_median_ns", (double)a->launch_call_median_ns},
        {"gap_median_ns", (double)a->gap_median_ns}, {"launch_overhead_ns", (double)a->launch_overhead_ns},
        {"idle_ns", (double)a->idle_ns}, {"overlaps", (double)a->n_overlaps}, {"late", (double)a->n_late},
        {"orphans", (double)a->n_orphans}, {"clock_inversions", (double)a->n_clock_inversions},
        {"parse_errors", (double)a->n_parse_errors}, {"estimated_bytes", (double)a->n_estimated_bytes},
        {"launch_bound_kernels", (double)a->launch_bound_kernels}, {"launch_bound_ns", (double)a->launch_bound_ns},
        {"saving_ns", a->saving_ns}, {"saving_kernel_ns", (double)a->saving_kernel_ns},
        {"opportunities_total", (double)a->n_opps_total}, {"graph_kernels", (double)a->graph_kernels},
        {"peak_state_bytes", (double)a->peak_state_bytes}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) jnum(b, nums[i].k, nums[i].v, &f);
    jkey(b, "class_ns", &f);
    fa_buf_puts(b, "{");
    for (int c = 0; c < FA_KCLASS_COUNT; c++)
        fa_buf_printf(b, "%s\"%s\":%" PRId64, c ? "," : "", fa_kclass_name((fa_kclass)c), a->class_ns[c]);
    fa_buf_puts(b, "}");
    jkey(b, "opportunities", &f);
    fa_buf_puts(b, "[");
    for (int i = 0; i < a->n_opps; i++) {
        const fa_ta_opportunity *o = &a->opps[i];
        bool g = true;
        fa_buf_puts(b, i ? ",{" : "{");
        jsk(b, "pattern", o->pattern, &g);
        jsk(b, "fix", o->fix, &g);
        jkey(b, "kernels", &g);
        fa_buf_puts(b, "[");
        for (int m = 0; m < o->n; m++) {
            if (m) fa_buf_puts(b, ",");
            fa_json_str(b, o->members[m]);
        }
        fa_buf_puts(b, "]");
        jkey(b, "ops", &g);
        fa_buf_puts(b, "[");
        for (int m = 0; m < o->n; m++) {
            if (m) fa_buf_puts(b, ",");
            fa_json_str(b, o->member_ops[m]);
        }
        fa_buf_puts(b, "]");
        jkey(b, "member_ns", &g);
        fa_buf_puts(b, "[");
        for (int m = 0; m < o->n; m++) fa_buf_printf(b, "%s%" PRId64, m ? "," : "", o->member_ns[m]);
        fa_buf_puts(b, "]");
        jnum(b, "count", (double)o->count, &g);
        jnum(b, "kernel_ns", (double)o->kernel_ns, &g);
        jnum(b, "gaps_ns", (double)o->gaps_ns, &g);
        jnum(b, "skipped", (double)o->skipped, &g);
        jnum(b, "bytes_occurrences", (double)o->bytes_occurrences, &g);
        if (o->read_bytes >= 0) {
            jnum(b, "read_bytes", o->read_bytes, &g);
            jnum(b, "write_bytes", o->write_bytes, &g);
            jnum(b, "saved_bytes", o->saved_bytes, &g);
            jsk(b, "bytes", "estimated", &g);
        } else {
            jkey(b, "read_bytes", &g);
            fa_buf_puts(b, "null");
            jsk(b, "bytes", "unknown", &g);
        }
        jnum(b, "fused_ns", o->est.fused_ns, &g);
        jnum(b, "saving_ns", o->est.saving_ns, &g);
        jsk(b, "saving", "estimated", &g);
        jsk(b, "basis", o->est.basis, &g);
        jnum(b, "share", o->share, &g);
        jnum(b, "device", o->device, &g);
        jnum(b, "stream", (double)o->stream, &g);
        jnum(b, "first_start_ns", (double)o->first_start_ns, &g);
        fa_buf_puts(b, "}");
    }
    fa_buf_puts(b, "]");
    jkey(b, "kernel_stats", &f);
    fa_buf_puts(b, "[");
    for (int i = 0; i < a->n_kernel_names; i++) {
        const fa_ta_kernel *k = &a->kernels[i];
        bool g = true;
        fa_buf_puts(b, i ? ",{" : "{");
        jsk(b, "name", k->name, &g);
        jsk(b, "full_name", k->full_name, &g);
        jsk(b, "class", fa_kclass_name(k->cls), &g);
        jsk(b, "op", k->op, &g);
        jnum(b, "count", (double)k->count, &g);
        jnum(b, "total_ns", (double)k->total_ns, &g);
        jnum(b, "median_ns", (double)k->median_ns, &g);
        jkey(b, "grid", &g);
        fa_buf_printf(b, "[%d,%d,%d]", k->grid[0], k->grid[1], k->grid[2]);
        jkey(b, "block", &g);
        fa_buf_printf(b, "[%d,%d,%d]", k->block[0], k->block[1], k->block[2]);
        jnum(b, "registers", k->registers, &g);
        jnum(b, "smem", k->smem, &g);
        if (k->occupancy >= 0) jnum(b, "occupancy", k->occupancy, &g);
        else {
            jkey(b, "occupancy", &g);
            fa_buf_puts(b, "null");
        }
        jsk(b, "occupancy_source", k->occupancy_source, &g);
        fa_buf_puts(b, "}");
    }
    fa_buf_puts(b, "]");
    jkey(b, "points", &f);
    fa_buf_puts(b, "[");
    for (int i = 0; i < a->n_points; i++) {
        const fa_ta_point *p = &a->points[i];
        bool g = true;
        fa_buf_puts(b, i ? ",{" : "{");
        jsk(b, "kernel", p->kernel, &g);
        jsk(b, "shapes", p->shapes, &g);
        jsk(b, "op", p->op, &g);
        jsk(b, "class", fa_kclass_name(p->cls), &g);
        jnum(b, "count", (double)p->count, &g);
        jnum(b, "total_ns", (double)p->total_ns, &g);
        jnum(b, "bytes", p->bytes, &g);
        jnum(b, "flops", p->flops, &g);
        jsk(b, "why_unknown", p->bytes < 0 ? p->why_unknown : NULL, &g);
        fa_buf_puts(b, "}");
    }
    fa_buf_puts(b, "]");
    jkey(b, "launch_bound_stretches", &f);
    fa_buf_puts(b, "[");
    for (int i = 0; i < a->n_stretches; i++) {
        const fa_ta_stretch *r = &a->stretches[i];
        fa_buf_printf(b, "%s{\"device\":%d,\"stream\":%" PRId64 ",\"kernels\":%d,\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64
                         ",\"kernel_ns\":%" PRId64 ",\"launch_ns\":%" PRId64 ",\"first\":",
                      i ? "," : "", r->device, r->stream, r->n_kernels, r->start_ns, r->end_ns, r->kernel_ns, r->launch_ns);
        fa_json_str(b, r->first_name);
        fa_buf_puts(b, "}");
    }
    fa_buf_puts(b, "]");
    jkey(b, "stream_stats", &f);
    fa_buf_puts(b, "[");
    for (int i = 0; i < a->n_streams; i++) {
        const fa_ta_stream *m = &a->streams[i];
        fa_buf_printf(b, "%s{\"device\":%d,\"stream\":%" PRId64 ",\"kernels\":%" PRId64 ",\"kernel_ns\":%" PRId64
                         ",\"busy_ns\":%" PRId64 ",\"idle_ns\":%" PRId64 ",\"gaps\":%" PRId64 ",\"overlaps\":%" PRId64
                         ",\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 ",\"class_ns\":[",
                      i ? "," : "", m->device, m->stream, m->n_kernels, m->kernel_ns, m->busy_ns, m->idle_ns, m->n_gaps,
                      m->n_overlaps, m->first_ns, m->last_ns);
        for (int c = 0; c < FA_KCLASS_COUNT; c++) fa_buf_printf(b, "%s%" PRId64, c ? "," : "", m->class_ns[c]);
        fa_buf_puts(b, "]}");
    }
    fa_buf_puts(b, "]");
    jkey(b, "largest_gaps", &f);
    fa_buf_puts(b, "[");
    for (int i = 0; i < a->n_gaps; i++) {
        const fa_ta_gap *g = &a->gaps[i];
        fa_buf_printf(b, "%s{\"device\":%d,\"stream\":%" PRId64 ",\"start_ns\":%" PRIu64 ",\"gap_ns\":%" PRId64 ",\"next_kernel\":",
                      i ? "," : "", g->device, g->stream, g->start_ns, g->gap_ns);
        fa_json_str(b, g->next_kernel);
        fa_buf_puts(b, ",\"cpu_op\":");
        fa_json_str(b, g->cpu_op);
        fa_buf_puts(b, "}");
    }
    fa_buf_puts(b, "]");
    jsk(b, "window_what", a->window_what, &f);
    jkey(b, "window", &f);
    /* [start, end, kernel index (-1 memcpy/memset), device, stream, opportunity, occurrence, kind] */
    fa_buf_puts(b, "[");
    for (int i = 0; i < a->n_window; i++) {
        const fa_ta_wrec *w = &a->window[i];
        fa_buf_printf(b, "%s[%" PRIu64 ",%" PRIu64 ",%d,%d,%" PRId64 ",%d,%d,%d]", i ? "," : "", w->start_ns, w->end_ns, w->kernel,
                      w->device, w->stream, w->opp, w->occ, w->kind);
    }
    fa_buf_puts(b, "]");
    jkey(b, "graphs", &f);
    fa_buf_puts(b, "[");
    for (int i = 0; i < a->n_graphs; i++) {
        const fa_ta_graph *g = &a->graphs[i];
        fa_buf_printf(b, "%s{\"id\":%d,\"replays\":%" PRId64 ",\"kernels\":%" PRId64 ",\"kernel_ns\":%" PRId64 ",\"launch_op\":",
                      i ? "," : "", g->id, g->replays, g->kernels, g->kernel_ns);
        fa_json_str(b, g->launch_op);
        fa_buf_puts(b, ",\"capture_op\":");
        fa_json_str(b, g->capture_op);
        fa_buf_puts(b, "}");
    }
    fa_buf_puts(b, "]}");
}

/* ---- reading the stored advice back ---- */

static yajl_val jget(yajl_val o, const char *k)
{
    if (!o || !YAJL_IS_OBJECT(o)) return NULL;
    for (size_t i = 0; i < o->u.object.len; i++)
        if (!strcmp(o->u.object.keys[i], k)) return o->u.object.values[i];
    return NULL;
}

static double jd(yajl_val o, const char *k, double dflt)
{
    yajl_val v = jget(o, k);
    return v && YAJL_IS_NUMBER(v) ? YAJL_GET_DOUBLE(v) : dflt;
}

static int64_t ji(yajl_val o, const char *k, int64_t dflt)
{
    yajl_val v = jget(o, k);
    if (!v || !YAJL_IS_NUMBER(v)) return dflt;
    return YAJL_IS_INTEGER(v) ? YAJL_GET_INTEGER(v) : (int64_t)YAJL_GET_DOUBLE(v);
}

static const char *js(fa_arena *ar, yajl_val o, const char *k)
{
    yajl_val v = jget(o, k);
    return v && YAJL_IS_STRING(v) ? fa_arena_strdup(ar, YAJL_GET_STRING(v)) : NULL;
}

static size_t jlen(yajl_val o, const char *k)
{
    yajl_val v = jget(o, k);
    return v && YAJL_IS_ARRAY(v) ? v->u.array.len : 0;
}

static yajl_val jat(yajl_val o, const char *k, size_t i)
{
    return jget(o, k)->u.array.values[i];
}

static fa_kclass class_parse(const char *s)
{
    for (int c = 0; c < FA_KCLASS_COUNT; c++)
        if (s && !strcmp(s, fa_kclass_name((fa_kclass)c))) return (fa_kclass)c;
    return FA_KCLASS_OTHER;
}

fa_status fa_trace_advice_from_json(fa_ctx *ctx, const char *json, size_t n, fa_trace_advice **out)
{
    char *txt = malloc(n + 1), err[200];
    if (!txt) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory reading the stored trace advice");
    memcpy(txt, json, n);
    txt[n] = 0;
    yajl_val root = yajl_tree_parse(txt, err, sizeof err);
    free(txt);
    if (!root || !YAJL_IS_OBJECT(root)) {
        if (root) yajl_tree_free(root);
        return fa_ctx_error(ctx, FA_ERR_INPUT, "stored trace advice is not valid JSON: %s", err);
    }
    fa_trace_advice *a = calloc(1, sizeof *a);
    if (!a || !(a->arena = fa_arena_create(1 << 16))) {
        free(a);
        yajl_tree_free(root);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory reading the stored trace advice");
    }
    fa_arena *ar = a->arena;
    a->device_name = js(ar, root, "device");
    a->cc_major = (int)ji(root, "cc_major", 0);
    a->cc_minor = (int)ji(root, "cc_minor", 0);
    a->cc_source = js(ar, root, "arch_source");
    a->total_mem_bytes = (uint64_t)ji(root, "total_mem_bytes", 0);
    a->sm_count = (int32_t)ji(root, "sm_count", 0);
    a->hbm_gbs = a->roofs.hbm_gbs = jd(root, "hbm_gbs", 0);
    a->roofs.label = a->hbm_label = js(ar, root, "roofs_label");
    a->roofs.fp32_gflops = jd(root, "fp32_gflops", 0);
    a->roofs.tensor_gflops = jd(root, "tensor_gflops", 0);
    a->mem_roof_gbs = jd(root, "mem_roof_gbs", 0);
    a->mem_roof_source = js(ar, root, "mem_roof_source");
    yajl_val ng = jget(root, "no_gpu_activity");
    a->no_gpu_activity = ng && YAJL_IS_TRUE(ng);
    a->n_kernels = ji(root, "kernels", 0);
    a->kernel_ns = ji(root, "kernel_ns", 0);
    a->span_ns = ji(root, "span_ns", 0);
    a->n_steps = ji(root, "steps", 0);
    a->step_ns = ji(root, "step_ns", 0);
    a->n_memcpy = ji(root, "memcpy", 0);
    a->memcpy_ns = ji(root, "memcpy_ns", 0);
    a->n_memset = ji(root, "memset", 0);
    a->memset_ns = ji(root, "memset_ns", 0);
    a->n_launch_calls = ji(root, "launch_calls", 0);
    a->launch_call_ns = ji(root, "launch_call_ns", 0);
    a->launch_call_median_ns = ji(root, "launch_call_median_ns", -1);
    a->gap_median_ns = ji(root, "gap_median_ns", -1);
    a->launch_overhead_ns = ji(root, "launch_overhead_ns", 0);
    a->idle_ns = ji(root, "idle_ns", 0);
    a->n_overlaps = ji(root, "overlaps", 0);
    a->n_late = ji(root, "late", 0);
    a->n_orphans = (uint64_t)ji(root, "orphans", 0);
    a->n_clock_inversions = (uint64_t)ji(root, "clock_inversions", 0);
    a->n_parse_errors = (uint64_t)ji(root, "parse_errors", 0);
    a->n_estimated_bytes = ji(root, "estimated_bytes", 0);
    a->launch_bound_kernels = ji(root, "launch_bound_kernels", 0);
    a->launch_bound_ns = ji(root, "launch_bound_ns", 0);
    a->saving_ns = jd(root, "saving_ns", 0);
    a->saving_kernel_ns = ji(root, "saving_kernel_ns", 0);
    a->n_opps_total = ji(root, "opportunities_total", 0);
    a->graph_kernels = ji(root, "graph_kernels", 0);
    a->peak_state_bytes = (uint64_t)ji(root, "peak_state_bytes", 0);
    yajl_val cn = jget(root, "class_ns");
    for (int c = 0; c < FA_KCLASS_COUNT; c++) a->class_ns[c] = ji(cn, fa_kclass_name((fa_kclass)c), 0);

    size_t no = jlen(root, "opportunities"), nk = jlen(root, "kernel_stats"), np = jlen(root, "points");
    size_t nr = jlen(root, "launch_bound_stretches"), nsm = jlen(root, "stream_stats"), ngp = jlen(root, "largest_gaps");
    size_t ngr = jlen(root, "graphs");
    a->opps = fa_arena_alloc(ar, (no ? no : 1) * sizeof *a->opps);
    a->kernels = fa_arena_alloc(ar, (nk ? nk : 1) * sizeof *a->kernels);
    a->points = fa_arena_alloc(ar, (np ? np : 1) * sizeof *a->points);
    a->stretches = fa_arena_alloc(ar, (nr ? nr : 1) * sizeof *a->stretches);
    a->streams = fa_arena_alloc(ar, (nsm ? nsm : 1) * sizeof *a->streams);
    a->gaps = fa_arena_alloc(ar, (ngp ? ngp : 1) * sizeof *a->gaps);
    a->graphs = fa_arena_alloc(ar, (ngr ? ngr : 1) * sizeof *a->graphs);
    if (!a->opps || !a->kernels || !a->points || !a->stretches || !a->streams || !a->gaps || !a->graphs) goto nomem;
    for (size_t i = 0; i < no; i++) {
        yajl_val v = jat(root, "opportunities", i);
        fa_ta_opportunity *o = &a->opps[a->n_opps++];
        o->pattern = js(ar, v, "pattern");
        o->fix = js(ar, v, "fix");
        size_t n = jlen(v, "kernels");
        if (n > FA_TA_MAX_SEQ || jlen(v, "ops") != n || jlen(v, "member_ns") != n) {
            yajl_tree_free(root);
            fa_trace_advice_free(a);
            return fa_ctx_error(ctx, FA_ERR_INPUT, "stored trace advice: opportunity %zu is malformed", i);
        }
        o->n = (int)n;
        o->members = fa_arena_alloc(ar, (n ? n : 1) * sizeof *o->members);
        o->member_ops = fa_arena_alloc(ar, (n ? n : 1) * sizeof *o->member_ops);
        o->member_ns = fa_arena_alloc(ar, (n ? n : 1) * sizeof *o->member_ns);
        if (!o->members || !o->member_ops || !o->member_ns) goto nomem;
        for (size_t m = 0; m < n; m++) {
            yajl_val k = jat(v, "kernels", m), op = jat(v, "ops", m), mn = jat(v, "member_ns", m);
            o->members[m] = fa_arena_strdup(ar, YAJL_IS_STRING(k) ? YAJL_GET_STRING(k) : "?");
            o->member_ops[m] = fa_arena_strdup(ar, YAJL_IS_STRING(op) ? YAJL_GET_STRING(op) : "other");
            o->member_ns[m] = YAJL_IS_INTEGER(mn) ? YAJL_GET_INTEGER(mn) : 0;
        }
        o->count = ji(v, "count", 0);
        o->kernel_ns = ji(v, "kernel_ns", 0);
        o->gaps_ns = ji(v, "gaps_ns", 0);
        o->skipped = ji(v, "skipped", 0);
        o->bytes_occurrences = ji(v, "bytes_occurrences", 0);
        o->read_bytes = jd(v, "read_bytes", -1);
        o->write_bytes = jd(v, "write_bytes", -1);
        o->saved_bytes = jd(v, "saved_bytes", -1);
        o->est.fused_ns = jd(v, "fused_ns", 0);
        o->est.saving_ns = jd(v, "saving_ns", 0);
        o->est.basis = js(ar, v, "basis");
        o->share = jd(v, "share", 0);
        o->device = (int32_t)ji(v, "device", 0);
        o->stream = ji(v, "stream", 0);
        o->first_start_ns = (uint64_t)ji(v, "first_start_ns", 0);
    }
    for (size_t i = 0; i < nk; i++) {
        yajl_val v = jat(root, "kernel_stats", i);
        fa_ta_kernel *k = &a->kernels[a->n_kernel_names++];
        k->name = js(ar, v, "name");
        k->full_name = js(ar, v, "full_name");
        if (!k->name) k->name = "?";
        if (!k->full_name) k->full_name = k->name;
        yajl_val cl = jget(v, "class");
        k->cls = class_parse(cl && YAJL_IS_STRING(cl) ? YAJL_GET_STRING(cl) : NULL);
        k->op = js(ar, v, "op");
        k->count = ji(v, "count", 0);
        k->total_ns = ji(v, "total_ns", 0);
        k->median_ns = ji(v, "median_ns", 0);
        for (int d = 0; d < 3; d++) {
            yajl_val gv = jget(v, "grid"), bv = jget(v, "block");
            k->grid[d] = gv && YAJL_IS_ARRAY(gv) && gv->u.array.len == 3 ? (int32_t)YAJL_GET_INTEGER(gv->u.array.values[d]) : 0;
            k->block[d] = bv && YAJL_IS_ARRAY(bv) && bv->u.array.len == 3 ? (int32_t)YAJL_GET_INTEGER(bv->u.array.values[d]) : 0;
        }
        k->registers = (int32_t)ji(v, "registers", 0);
        k->smem = (int32_t)ji(v, "smem", 0);
        k->occupancy = jd(v, "occupancy", -1);
        k->occupancy_source = js(ar, v, "occupancy_source");
    }
    for (size_t i = 0; i < np; i++) {
        yajl_val v = jat(root, "points", i);
        fa_ta_point *p = &a->points[a->n_points++];
        p->kernel = js(ar, v, "kernel");
        if (!p->kernel) p->kernel = "?";
        p->shapes = js(ar, v, "shapes");
        p->op = js(ar, v, "op");
        yajl_val cl = jget(v, "class");
        p->cls = class_parse(cl && YAJL_IS_STRING(cl) ? YAJL_GET_STRING(cl) : NULL);
        p->count = ji(v, "count", 0);
        p->total_ns = ji(v, "total_ns", 0);
        p->bytes = jd(v, "bytes", -1);
        p->flops = jd(v, "flops", -1);
        p->why_unknown = js(ar, v, "why_unknown");
    }
    for (size_t i = 0; i < nr; i++) {
        yajl_val v = jat(root, "launch_bound_stretches", i);
        fa_ta_stretch *r = &a->stretches[a->n_stretches++];
        r->device = (int32_t)ji(v, "device", 0);
        r->stream = ji(v, "stream", 0);
        r->n_kernels = (int)ji(v, "kernels", 0);
        r->start_ns = (uint64_t)ji(v, "start_ns", 0);
        r->end_ns = (uint64_t)ji(v, "end_ns", 0);
        r->kernel_ns = ji(v, "kernel_ns", 0);
        r->launch_ns = ji(v, "launch_ns", 0);
        r->first_name = js(ar, v, "first");
    }
    for (size_t i = 0; i < nsm; i++) {
        yajl_val v = jat(root, "stream_stats", i);
        fa_ta_stream *m = &a->streams[a->n_streams++];
        m->device = (int32_t)ji(v, "device", 0);
        m->stream = ji(v, "stream", 0);
        m->n_kernels = ji(v, "kernels", 0);
        m->kernel_ns = ji(v, "kernel_ns", 0);
        m->busy_ns = ji(v, "busy_ns", 0);
        m->idle_ns = ji(v, "idle_ns", 0);
        m->n_gaps = ji(v, "gaps", 0);
        m->n_overlaps = ji(v, "overlaps", 0);
        m->first_ns = (uint64_t)ji(v, "first_ns", 0);
        m->last_ns = (uint64_t)ji(v, "last_ns", 0);
        yajl_val cv = jget(v, "class_ns");
        for (int c = 0; c < FA_KCLASS_COUNT && cv && YAJL_IS_ARRAY(cv) && (size_t)c < cv->u.array.len; c++)
            m->class_ns[c] = YAJL_GET_INTEGER(cv->u.array.values[c]);
    }
    for (size_t i = 0; i < ngp; i++) {
        yajl_val v = jat(root, "largest_gaps", i);
        fa_ta_gap *g = &a->gaps[a->n_gaps++];
        g->device = (int32_t)ji(v, "device", 0);
        g->stream = ji(v, "stream", 0);
        g->start_ns = (uint64_t)ji(v, "start_ns", 0);
        g->gap_ns = ji(v, "gap_ns", 0);
        g->next_kernel = js(ar, v, "next_kernel");
        g->cpu_op = js(ar, v, "cpu_op");
    }
    for (size_t i = 0; i < ngr; i++) {
        yajl_val v = jat(root, "graphs", i);
        fa_ta_graph *g = &a->graphs[a->n_graphs++];
        g->id = (int)ji(v, "id", 0);
        g->replays = ji(v, "replays", 0);
        g->kernels = ji(v, "kernels", 0);
        g->kernel_ns = ji(v, "kernel_ns", 0);
        g->launch_op = js(ar, v, "launch_op");
        g->capture_op = js(ar, v, "capture_op");
    }
    a->window_what = js(ar, root, "window_what");
    size_t nw = jlen(root, "window");
    if (nw) {
        a->window = fa_arena_alloc(ar, nw * sizeof *a->window);
        if (!a->window) goto nomem;
        for (size_t i = 0; i < nw; i++) {
            yajl_val v = jat(root, "window", i);
            if (!YAJL_IS_ARRAY(v) || v->u.array.len != 8) continue;
            int64_t x[8];
            bool ok = true;
            for (int k = 0; k < 8; k++) {
                yajl_val e = v->u.array.values[k];
                ok &= YAJL_IS_INTEGER(e);
                x[k] = ok ? YAJL_GET_INTEGER(e) : 0;
            }
            if (!ok || x[2] < -1 || x[2] >= a->n_kernel_names || x[5] < -1 || x[5] >= a->n_opps) continue;
            a->window[a->n_window++] = (fa_ta_wrec){(uint64_t)x[0], (uint64_t)x[1], (int32_t)x[2], (int32_t)x[3], x[4],
                                                    (int32_t)x[5], (int32_t)x[6], (uint8_t)x[7]};
        }
    }
    yajl_tree_free(root);
    *out = a;
    return FA_OK;
nomem:
    yajl_tree_free(root);
    fa_trace_advice_free(a);
    return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory reading the stored trace advice");
}

/* ---------------------------------------------------------------- storage ---- */

fa_status fa_trace_advice_save(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_trace_advice *a)
{
    fa_buf b;
    fa_buf_init(&b);
    fa_arena *ar = fa_arena_create(1 << 14);
    enum { MAX_ROWS = 24 };
    fa_analysis_summary_row rows[MAX_ROWS];
    int n_rows = 0;
    fa_status s = ar ? FA_OK : fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory storing the trace advice");
    /* one summary row: the sentence in b (copied), then b is reset for the next */
#define ROW(k, v, u)                                                                                     \
    do {                                                                                                 \
        if (!s && n_rows < MAX_ROWS) {                                                                   \
            const char *text_ = fa_arena_strdup(ar, b.data ? b.data : "");                               \
            if (!text_) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory storing the trace advice");   \
            rows[n_rows++] = (fa_analysis_summary_row){(k), (double)(v), (u), text_};                    \
        }                                                                                                \
        fa_buf_reset(&b);                                                                                \
    } while (0)
    char t1[32], t2[32];
    if (a->cc_major) {
        fa_buf_printf(&b, "Compute capability %d.%d (%s).", a->cc_major, a->cc_minor, a->cc_source);
        ROW("trace.device.cc", a->cc_major + a->cc_minor / 10.0, "cc");
    }
    if (a->total_mem_bytes) ROW("trace.device.mem_bytes", (double)a->total_mem_bytes, "bytes");
    if (a->no_gpu_activity) {
        fa_buf_puts(&b, "No GPU activity in the trace: nothing to fuse.");
        ROW("trace.no_gpu_activity", 1, "bool");
    }
    fa_buf_printf(&b, "%" PRId64 " GPU kernels (%d distinct names), %s of kernel time over a %s span on %d streams.",
                  a->n_kernels, a->n_kernel_names, ms((double)a->kernel_ns, t1, sizeof t1), ms((double)a->span_ns, t2, sizeof t2),
                  a->n_streams);
    ROW("trace.kernels", a->n_kernels, "count");
    fa_buf_printf(&b, "Launch overhead %.2f us per kernel, measured in the trace: median launch call %.2f us (%" PRId64
                      " calls) + median idle gap between kernels on a stream %.2f us.",
                  a->launch_overhead_ns / 1e3, a->launch_call_median_ns > 0 ? a->launch_call_median_ns / 1e3 : 0.0,
                  a->n_launch_calls, a->gap_median_ns > 0 ? a->gap_median_ns / 1e3 : 0.0);
    ROW("trace.launch_overhead_ns", a->launch_overhead_ns, "ns");
    if (a->hbm_gbs > 0) fa_buf_printf(&b, "HBM bandwidth %.0f GB/s (theoretical, %s data sheet).", a->hbm_gbs, a->hbm_label);
    else fa_buf_printf(&b, "HBM bandwidth unknown for this device.");
    ROW("trace.hbm_gbs", a->hbm_gbs, "GB/s");
    if (a->n_opps) {
        const fa_ta_opportunity *o = &a->opps[0];
        fa_buf_printf(&b, "%" PRId64 " fusion opportunities; the largest: %s x%" PRId64 " (", a->n_opps_total,
                      o->pattern ? o->pattern : "repeated sequence", o->count);
        opp_members(&b, o, true);
        fa_buf_printf(&b, "), estimated saving %s (%.1f%% of the span).", ms(o->est.saving_ns, t1, sizeof t1), 100 * o->share);
    } else {
        fa_buf_printf(&b, "No fusion opportunity found (no named pattern, no repeated sequence of memory-bound kernels).");
    }
    ROW("trace.opportunities", a->n_opps_total, "count");
    fa_buf_printf(&b, "Estimated saving of all fusion opportunities: %s (%.1f%% of the span; each kernel counted at most once).",
                  ms(a->saving_ns, t1, sizeof t1), a->span_ns ? 100.0 * a->saving_ns / (double)a->span_ns : 0.0);
    ROW("trace.saving_ns", a->saving_ns, "ns");
    fa_buf_printf(&b, "%d launch-bound stretches (>= %d consecutive kernels each shorter than its launch call): %" PRId64
                      " kernels, %.1f us of kernel time.",
                  a->n_stretches, FA_TA_MIN_STRETCH, a->launch_bound_kernels, a->launch_bound_ns / 1e3);
    ROW("trace.launch_bound_ns", a->launch_bound_ns, "ns");
    fa_buf_printf(&b, "GPU idle between kernels: %.3f ms summed over streams", a->idle_ns / 1e6);
    if (a->n_gaps)
        fa_buf_printf(&b, "; largest gap %.1f us before %s (cpu op then: %s)", a->gaps[0].gap_ns / 1e3, a->gaps[0].next_kernel,
                      a->gaps[0].cpu_op ? a->gaps[0].cpu_op : "unknown");
    fa_buf_puts(&b, ".");
    ROW("trace.idle_ns", a->idle_ns, "ns");
    fa_buf_printf(&b, "%" PRIu64 " GPU records without a launch call in the trace (orphans).", a->n_orphans);
    ROW("trace.orphans", a->n_orphans, "count");
    fa_buf_printf(&b, "%" PRIu64 " GPU records starting before their launch call (clock inversions; linked, not fixed).",
                  a->n_clock_inversions);
    ROW("trace.clock_inversions", a->n_clock_inversions, "count");
    fa_buf_printf(&b, "%" PRIu64 " recoverable parse errors in the trace file.", a->n_parse_errors);
    ROW("trace.parse_errors", a->n_parse_errors, "count");
    fa_buf_printf(&b, "%" PRId64 " kernels started before the previous kernel on their stream ended (gap excluded).",
                  a->n_overlaps);
    ROW("trace.overlaps", a->n_overlaps, "count");
    fa_trace_advice_json(a, &b);
    if (b.oom) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory storing the trace advice");
    ROW("trace.advice_json", 1, "json");
#undef ROW
    fa_analysis_chain_row *chains = ar ? fa_arena_alloc(ar, sizeof *chains * (size_t)(a->n_opps + 1)) : NULL;
    if (!s && !chains) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory storing the trace advice");
    for (int i = 0; i < a->n_opps && !s; i++) {
        const fa_ta_opportunity *c = &a->opps[i];
        chains[i] = (fa_analysis_chain_row){
            .n_members = c->n,
            .member_names = (const char *const *)c->members,
            .time_ns = c->kernel_ns,
            .share = a->kernel_ns > 0 ? (double)c->kernel_ns / (double)a->kernel_ns : 0.0,
            .intermediate_bytes = c->saved_bytes >= 0 ? (uint64_t)(c->saved_bytes * (double)c->count) : 0,
            .launches = (int)(c->count * c->n),
            .max_saving_ns = (int64_t)c->est.saving_ns,
        };
    }
    fa_analysis_rows r = {.summary = rows, .n_summary = (size_t)n_rows, .chains = chains, .n_chains = (size_t)a->n_opps};
    if (!s) s = fa_store_put_trace_advice(ctx, st, run_id, &r);
    fa_buf_free(&b);
    fa_arena_free(ar);
    return s;
}

fa_status fa_trace_advise_run(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_ta_device *dev, fa_trace_advice **out)
{
    (void)dev;
    fa_arena *ar = fa_arena_create(1 << 12);
    if (!ar) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory reading the stored trace advice");
    const char *json = NULL;
    fa_status s = fa_store_get_summary_text(ctx, st, run_id, "trace.advice_json", ar, &json);
    if (!s && json) {
        s = fa_trace_advice_from_json(ctx, json, strlen(json), out);
        if (!s) (*out)->run_id = run_id;
    } else if (!s) {
        s = fa_ctx_error(ctx, FA_ERR_INPUT,
                         "run %" PRId64 " holds no trace advice (import it again with this version: `fuse-advise import TRACE`)",
                         run_id);
    }
    fa_arena_free(ar);
    return s;
}
