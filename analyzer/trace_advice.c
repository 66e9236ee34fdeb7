/* analyzer/trace_advice — op-level advice from a GPU kernel trace without a model graph:
 * kernel statistics, repeated memory-bound kernel sequences, launch-bound stretches, idle gaps. */
#include "analyzer/trace_advice.h"

#include <ctype.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roofline/roofline.h"

/* ---------------------------------------------------------------- names and classes ---- */

static const char *const k_class_names[FA_KCLASS_COUNT] = {"elementwise", "reduction", "gemm", "conv", "copy", "other"};

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
static const char *const k_gemm[] = {"gemm", "cutlass", "cublas", "gemv", "matmul", "xmma", "triton_tem_", NULL};
static const char *const k_conv_strong[] = {"implicit_convolve", "convolve", "winograd", "conv2d", "conv3d", "fprop",
                                            "dgrad", "wgrad", NULL};
static const char *const k_conv[] = {"conv", "cudnn", NULL};
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
    "gpu", "launch_legacy_kernel", "type_specialized_kernel", "opmath_gpu_kernel_with_scalars", NULL};

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

/* ---------------------------------------------------------------- device tables ---- */

double fa_gpu_hbm_gbs(const char *n, uint64_t mem, const char **label)
{
    /* Theoretical peak DRAM bandwidth from NVIDIA data sheets (A100: "NVIDIA A100 Tensor Core
     * GPU" datasheet, 40GB 1555 GB/s, 80GB SXM 2039 GB/s; V100 SXM2 900 GB/s; H100 SXM 3.35 TB/s,
     * H100 PCIe 2 TB/s; H200 4.8 TB/s; GeForce RTX 2080 Ti 616 GB/s; T4 320 GB/s). */
    const char *l = NULL;
    double g = 0;
    if (!n) n = "";
    if (has(n, "A100")) {
        bool big = has(n, "80GB") || mem > (uint64_t)48 << 30;
        l = big ? "A100 80GB" : "A100 40GB";
        g = big ? 2039 : 1555;
    } else if (has(n, "V100")) {
        l = "V100";
        g = 900;
    } else if (has(n, "H200")) {
        l = "H200";
        g = 4800;
    } else if (has(n, "H100")) {
        bool pcie = has(n, "PCIe");
        l = pcie ? "H100 PCIe" : "H100 SXM";
        g = pcie ? 2000 : 3350;
    } else if (has(n, "2080 Ti")) {
        l = "RTX 2080 Ti";
        g = 616;
    } else if (has_word(n, "T4")) {
        l = "T4";
        g = 320;
    }
    if (label) *label = l;
    return g;
}

bool fa_gpu_cc_from_name(const char *n, int *major, int *minor)
{
    int ma = 0, mi = 0;
    if (!n) return false;
    if (has(n, "A100")) ma = 8, mi = 0;
    else if (has(n, "V100")) ma = 7, mi = 0;
    else if (has(n, "H100") || has(n, "H200")) ma = 9, mi = 0;
    else if (has(n, "RTX 20") || has_word(n, "T4")) ma = 7, mi = 5;
    else if (has(n, "RTX 30")) ma = 8, mi = 6;
    else if (has(n, "RTX 40") || has_word(n, "L4")) ma = 8, mi = 9;
    else return false;
    *major = ma;
    *minor = mi;
    return true;
}

/* ---------------------------------------------------------------- small helpers ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* lower median (as the store's iter_median_ns) of v[0..n), sorts v; -1 when n == 0 */
static int64_t median_i64(int64_t *v, size_t n)
{
    if (!n) return -1;
    qsort(v, n, sizeof *v, cmp_i64);
    return v[(n - 1) / 2];
}

static int64_t dur(const fa_activity *a)
{
    return a->end_ns > a->start_ns ? (int64_t)(a->end_ns - a->start_ns) : 0;
}

/* string -> id table (open addressing) */
typedef struct strtab {
    const char **keys;
    int *ids;
    size_t cap, n;
} strtab;

static int strtab_get(strtab *t, const char *k, int next_id, bool *added)
{
    if ((t->n + 1) * 2 > t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 256;
        const char **nk = calloc(nc, sizeof *nk);
        int *ni = calloc(nc, sizeof *ni);
        if (!nk || !ni) {
            free(nk);
            free(ni);
            return -1;
        }
        for (size_t i = 0; i < t->cap; i++)
            if (t->keys[i]) {
                size_t h = fa_hash64(t->keys[i], strlen(t->keys[i])) & (nc - 1);
                while (nk[h]) h = (h + 1) & (nc - 1);
                nk[h] = t->keys[i];
                ni[h] = t->ids[i];
            }
        free(t->keys);
        free(t->ids);
        t->keys = nk;
        t->ids = ni;
        t->cap = nc;
    }
    size_t h = fa_hash64(k, strlen(k)) & (t->cap - 1);
    while (t->keys[h]) {
        if (!strcmp(t->keys[h], k)) {
            *added = false;
            return t->ids[h];
        }
        h = (h + 1) & (t->cap - 1);
    }
    t->keys[h] = k;
    t->ids[h] = next_id;
    t->n++;
    *added = true;
    return next_id;
}

/* n-gram table */
typedef struct ngram {
    int n;
    int ids[FA_TA_MAX_NGRAM];
    int64_t count, total_ns, idle_ns;
    uint64_t bytes;
    int64_t unknown_occ;     /* occurrences without sizes */
    int64_t last_run;        /* run index of the last counted occurrence */
    int last_end;            /* position after it in that run */
    bool drop;
} ngram;

typedef struct ngtab {
    ngram *v;
    size_t n, capv;
    int32_t *slots;          /* index+1 into v, 0 empty */
    size_t cap;
} ngtab;

static uint64_t ng_hash(int n, const int *ids)
{
    return fa_hash64(ids, sizeof(int) * (size_t)n) ^ (uint64_t)n * 0x9e3779b97f4a7c15ull;
}

static ngram *ngtab_get(ngtab *t, int n, const int *ids)
{
    if ((t->n + 1) * 2 > t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        int32_t *ns = calloc(nc, sizeof *ns);
        if (!ns) return NULL;
        for (size_t i = 0; i < t->n; i++) {
            size_t h = ng_hash(t->v[i].n, t->v[i].ids) & (nc - 1);
            while (ns[h]) h = (h + 1) & (nc - 1);
            ns[h] = (int32_t)i + 1;
        }
        free(t->slots);
        t->slots = ns;
        t->cap = nc;
    }
    size_t h = ng_hash(n, ids) & (t->cap - 1);
    while (t->slots[h]) {
        ngram *g = &t->v[t->slots[h] - 1];
        if (g->n == n && !memcmp(g->ids, ids, sizeof(int) * (size_t)n)) return g;
        h = (h + 1) & (t->cap - 1);
    }
    if (t->n == t->capv) {
        size_t nc = t->capv ? t->capv * 2 : 1024;
        ngram *nv = realloc(t->v, nc * sizeof *nv);
        if (!nv) return NULL;
        t->v = nv;
        t->capv = nc;
    }
    ngram *g = &t->v[t->n];
    memset(g, 0, sizeof *g);
    g->n = n;
    memcpy(g->ids, ids, sizeof(int) * (size_t)n);
    g->last_run = -1;
    t->slots[h] = (int32_t)++t->n;
    return g;
}

/* sort contexts */
typedef struct kref {
    int32_t device;
    int64_t stream;
    uint64_t start, end;
    size_t act;              /* index in t->acts */
    int token;
} kref;

static int cmp_kref(const void *a, const void *b)
{
    const kref *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->act > y->act) - (x->act < y->act);
}

typedef struct lref {
    int64_t pid, corr;
    size_t act;
} lref;

static int cmp_lref(const void *a, const void *b)
{
    const lref *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return (x->act > y->act) - (x->act < y->act);
}

static int cmp_gap(const void *a, const void *b)
{
    const fa_ta_gap *x = a, *y = b;
    if (x->gap_ns != y->gap_ns) return x->gap_ns > y->gap_ns ? -1 : 1;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int cmp_kernel_total(const void *a, const void *b)
{
    const fa_ta_kernel *x = a, *y = b;
    if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_seq(const void *a, const void *b)
{
    const fa_ta_seq *x = a, *y = b;
    if (x->saving_ns != y->saving_ns) return x->saving_ns > y->saving_ns ? -1 : 1;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    for (int i = 0; i < x->n; i++) {
        int c = strcmp(x->names[i], y->names[i]);
        if (c) return c;
    }
    return 0;
}

static int cmp_stretch(const void *a, const void *b)
{
    const fa_ta_stretch *x = a, *y = b;
    if (x->n_kernels != y->n_kernels) return x->n_kernels > y->n_kernels ? -1 : 1;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

/* index of the launch call of GPU record a (same pid, same correlation), or SIZE_MAX */
static size_t find_launch(const lref *l, size_t nl, const fa_activity *a)
{
    if (a->correlation < 0 || (a->flags & FA_ACTF_ORPHAN)) return SIZE_MAX;
    size_t lo = 0, hi = nl;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (l[mid].pid < a->pid || (l[mid].pid == a->pid && l[mid].corr < a->correlation)) lo = mid + 1;
        else hi = mid;
    }
    if (lo < nl && l[lo].pid == a->pid && l[lo].corr == a->correlation) return l[lo].act;
    return SIZE_MAX;
}

/* ---------------------------------------------------------------- the analysis ---- */

fa_status fa_trace_advise(fa_ctx *ctx, const fa_trace *t, const fa_ta_device *dev, fa_trace_advice **out)
{
    fa_status s = FA_OK;
    fa_trace_advice *a = calloc(1, sizeof *a);
    kref *ks = NULL;
    lref *ls = NULL;
    int64_t *tmp = NULL, *launch_durs = NULL, *gapv = NULL;
    size_t *launch_of = NULL;
    fa_ta_gap *allgaps = NULL;
    strtab names = {0};
    ngtab ng = {0};
    int *tok = NULL;
    if (!a || !(a->arena = fa_arena_create(1 << 16))) goto nomem;
    a->launch_call_median_ns = a->gap_median_ns = -1;
    a->n_orphans = t->n_orphans;
    a->n_clock_inversions = t->n_clock_inversions;
    a->n_parse_errors = t->n_parse_errors;

    /* device */
    const char *dname = dev && dev->name && dev->name[0] ? dev->name : t->device_name;
    a->device_name = dname ? fa_arena_strdup(a->arena, dname) : NULL;
    if (dev && dev->cc_major > 0) {
        a->cc_major = dev->cc_major;
        a->cc_minor = dev->cc_minor;
        a->cc_source = "deviceProperties";
    } else if (fa_gpu_cc_from_name(dname, &a->cc_major, &a->cc_minor)) {
        a->cc_source = "assumed from the device name";
    }
    a->total_mem_bytes = dev ? dev->total_mem_bytes : 0;
    a->hbm_gbs = fa_gpu_hbm_gbs(dname, dev ? dev->total_mem_bytes : 0, &a->hbm_label);
    const fa_cuda_limits *lim = a->cc_major ? fa_cuda_limits_for(a->cc_major, a->cc_minor) : NULL;

    /* GPU kernels, their tokens */
    size_t nk = 0;
    for (size_t i = 0; i < t->n_acts; i++)
        if (t->acts[i].kind == FA_ACT_KERNEL && t->acts[i].device >= 0) nk++;
    for (size_t i = 0; i < t->n_acts; i++)
        if (t->acts[i].flags & FA_ACTF_ESTIMATED_BYTES && t->acts[i].kind == FA_ACT_KERNEL) a->n_estimated_bytes++;
    bool any_gpu = nk > 0;
    for (size_t i = 0; i < t->n_acts && !any_gpu; i++)
        if ((t->acts[i].kind == FA_ACT_MEMCPY || t->acts[i].kind == FA_ACT_MEMSET) && t->acts[i].device >= 0) any_gpu = true;
    a->no_gpu_activity = !any_gpu;
    a->n_kernels = (int64_t)nk;
    ks = calloc(nk ? nk : 1, sizeof *ks);
    launch_of = calloc(nk ? nk : 1, sizeof *launch_of);
    tmp = calloc(nk ? nk : 1, sizeof *tmp);
    launch_durs = calloc(nk ? nk : 1, sizeof *launch_durs);
    gapv = calloc(nk ? nk : 1, sizeof *gapv);
    allgaps = calloc(nk ? nk : 1, sizeof *allgaps);
    tok = calloc(nk ? nk : 1, sizeof *tok);
    if (!ks || !launch_of || !tmp || !launch_durs || !gapv || !allgaps || !tok) goto nomem;

    /* per-name stats grow as names appear */
    size_t kcap = 64;
    a->kernels = calloc(kcap, sizeof *a->kernels);
    if (!a->kernels) goto nomem;
    size_t j = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *x = &t->acts[i];
        if (x->kind != FA_ACT_KERNEL || x->device < 0) continue;
        char buf[512];
        fa_kernel_name_normalize(x->name ? x->name : "?", buf, sizeof buf);
        bool added = false;
        char *key = NULL;
        int id = -1;
        /* look up without allocating first */
        if (names.cap) {
            size_t h = fa_hash64(buf, strlen(buf)) & (names.cap - 1);
            while (names.keys[h]) {
                if (!strcmp(names.keys[h], buf)) {
                    id = names.ids[h];
                    break;
                }
                h = (h + 1) & (names.cap - 1);
            }
        }
        if (id < 0) {
            if (!(key = fa_arena_strdup(a->arena, buf))) goto nomem;
            id = strtab_get(&names, key, a->n_kernel_names, &added);
            if (id < 0) goto nomem;
        }
        if (added) {
            if ((size_t)a->n_kernel_names == kcap) {
                fa_ta_kernel *nv = realloc(a->kernels, 2 * kcap * sizeof *nv);
                if (!nv) goto nomem;
                a->kernels = nv;
                kcap *= 2;
            }
            fa_ta_kernel *k = &a->kernels[a->n_kernel_names++];
            memset(k, 0, sizeof *k);
            k->name = key;
            k->full_name = fa_arena_strdup(a->arena, x->name ? x->name : "?");
            k->cls = fa_kernel_classify(x->name ? x->name : key);
            k->occupancy = -1;
        }
        fa_ta_kernel *k = &a->kernels[id];
        k->count++;
        k->total_ns += dur(x);
        a->kernel_ns += dur(x);
        if (!k->block[0] && x->block[0] > 0) {
            memcpy(k->grid, x->grid, sizeof k->grid);
            memcpy(k->block, x->block, sizeof k->block);
            k->registers = x->registers;
            k->smem = x->static_smem + x->dynamic_smem;
        }
        if (k->occupancy < 0 && x->occupancy >= 0) {
            k->occupancy = x->occupancy;
            k->occupancy_source = "trace";
        }
        ks[j] = (kref){x->device, x->stream, x->start_ns, x->end_ns, i, id};
        tok[j] = id;
        j++;
    }

    /* median duration per name: sort (token, duration) */
    {
        int64_t *pairs = calloc(nk ? nk * 2 : 2, sizeof *pairs);
        if (!pairs) goto nomem;
        for (size_t i = 0; i < nk; i++) {
            pairs[2 * i] = ks[i].token;
            pairs[2 * i + 1] = dur(&t->acts[ks[i].act]);
        }
        /* counting sort by token, then median of each bucket */
        int64_t *off = calloc((size_t)a->n_kernel_names + 1, sizeof *off);
        if (!off) {
            free(pairs);
            goto nomem;
        }
        for (size_t i = 0; i < nk; i++) off[pairs[2 * i] + 1]++;
        for (int i = 0; i < a->n_kernel_names; i++) off[i + 1] += off[i];
        int64_t *fill = calloc((size_t)a->n_kernel_names + 1, sizeof *fill);
        if (!fill) {
            free(pairs);
            free(off);
            goto nomem;
        }
        for (size_t i = 0; i < nk; i++) {
            int64_t id = pairs[2 * i];
            tmp[off[id] + fill[id]++] = pairs[2 * i + 1];
        }
        for (int i = 0; i < a->n_kernel_names; i++)
            a->kernels[i].median_ns = median_i64(tmp + off[i], (size_t)(off[i + 1] - off[i]));
        free(pairs);
        free(off);
        free(fill);
    }

    /* occupancy from the calculator where the trace has none */
    for (int i = 0; i < a->n_kernel_names; i++) {
        fa_ta_kernel *k = &a->kernels[i];
        int bs = k->block[0] * (k->block[1] ? k->block[1] : 1) * (k->block[2] ? k->block[2] : 1);
        if (k->occupancy >= 0 || !lim || bs <= 0 || k->registers <= 0) continue;
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

    /* launch calls: runtime / driver records with a correlation id, sorted by (pid, corr) */
    size_t nl = 0;
    for (size_t i = 0; i < t->n_acts; i++)
        if ((t->acts[i].kind == FA_ACT_RUNTIME || t->acts[i].kind == FA_ACT_DRIVER) && t->acts[i].correlation >= 0) nl++;
    ls = calloc(nl ? nl : 1, sizeof *ls);
    if (!ls) goto nomem;
    nl = 0;
    for (size_t i = 0; i < t->n_acts; i++)
        if ((t->acts[i].kind == FA_ACT_RUNTIME || t->acts[i].kind == FA_ACT_DRIVER) && t->acts[i].correlation >= 0)
            ls[nl++] = (lref){t->acts[i].pid, t->acts[i].correlation, i};
    qsort(ls, nl, sizeof *ls, cmp_lref);

    qsort(ks, nk, sizeof *ks, cmp_kref);
    for (size_t i = 0; i < nk; i++) {
        tok[i] = ks[i].token;
        launch_of[i] = find_launch(ls, nl, &t->acts[ks[i].act]);
    }
    /* distinct launch calls' durations */
    size_t nld = 0;
    {
        size_t *calls = calloc(nk ? nk : 1, sizeof *calls);
        if (!calls) goto nomem;
        size_t nc = 0;
        for (size_t i = 0; i < nk; i++)
            if (launch_of[i] != SIZE_MAX) calls[nc++] = launch_of[i];
        /* sort + unique (a graph launch links many kernels to one call) */
        for (size_t i = 0; i < nc; i++) launch_durs[i] = (int64_t)calls[i];
        qsort(launch_durs, nc, sizeof *launch_durs, cmp_i64);
        for (size_t i = 0; i < nc; i++)
            if (i == 0 || launch_durs[i] != launch_durs[i - 1]) calls[nld++] = (size_t)launch_durs[i];
        for (size_t i = 0; i < nld; i++) launch_durs[i] = dur(&t->acts[calls[i]]);
        free(calls);
    }
    a->n_launch_calls = (int64_t)nld;
    a->launch_call_median_ns = median_i64(launch_durs, nld);

    /* streams, gaps */
    size_t ngaps = 0;
    size_t scap = 16;
    fa_ta_stream *streams = calloc(scap, sizeof *streams);
    if (!streams) goto nomem;
    int nstreams = 0;
    for (size_t i = 0; i < nk; i++) {
        bool first = i == 0 || ks[i].device != ks[i - 1].device || ks[i].stream != ks[i - 1].stream;
        if (first) {
            if ((size_t)nstreams == scap) {
                fa_ta_stream *nv = realloc(streams, 2 * scap * sizeof *nv);
                if (!nv) {
                    free(streams);
                    goto nomem;
                }
                streams = nv;
                scap *= 2;
            }
            streams[nstreams++] = (fa_ta_stream){.device = ks[i].device, .stream = ks[i].stream};
        }
        fa_ta_stream *sm = &streams[nstreams - 1];
        sm->n_kernels++;
        sm->kernel_ns += dur(&t->acts[ks[i].act]);
        if (first) continue;
        const fa_activity *prev = &t->acts[ks[i - 1].act], *cur = &t->acts[ks[i].act];
        if (cur->start_ns < prev->end_ns) {
            sm->n_overlaps++;
            continue;
        }
        int64_t g = (int64_t)(cur->start_ns - prev->end_ns);
        if (g <= 0) continue;
        sm->n_gaps++;
        sm->idle_ns += g;
        gapv[ngaps] = g;
        allgaps[ngaps] = (fa_ta_gap){cur->device, cur->stream, prev->end_ns, g, NULL, a->kernels[ks[i].token].name};
        /* remember the act index of the next kernel in cpu_op until attribution */
        allgaps[ngaps].cpu_op = (const char *)(uintptr_t)(ks[i].act + 1);
        ngaps++;
    }
    for (int i = 0; i < nstreams; i++) {
        a->idle_ns += streams[i].idle_ns;
        a->n_overlaps += streams[i].n_overlaps;
    }
    a->n_streams = nstreams;
    a->streams = fa_arena_alloc(a->arena, sizeof *streams * (size_t)(nstreams ? nstreams : 1));
    if (!a->streams) {
        free(streams);
        goto nomem;
    }
    memcpy(a->streams, streams, sizeof *streams * (size_t)nstreams);
    free(streams);
    a->gap_median_ns = median_i64(gapv, ngaps);
    a->launch_overhead_ns = (a->launch_call_median_ns > 0 ? a->launch_call_median_ns : 0) +
                            (a->gap_median_ns > 0 ? a->gap_median_ns : 0);

    /* largest gaps with the cpu op running then */
    qsort(allgaps, ngaps, sizeof *allgaps, cmp_gap);
    a->n_gaps = (int)(ngaps < FA_TA_TOP_GAPS ? ngaps : FA_TA_TOP_GAPS);
    a->gaps = fa_arena_alloc(a->arena, sizeof *a->gaps * (size_t)(a->n_gaps ? a->n_gaps : 1));
    if (!a->gaps) goto nomem;
    for (int g = 0; g < a->n_gaps; g++) {
        fa_ta_gap *gp = &a->gaps[g];
        *gp = allgaps[g];
        size_t next = (size_t)(uintptr_t)gp->cpu_op - 1;
        gp->cpu_op = NULL;
        const fa_activity *nx = &t->acts[next];
        if (nx->flags & (FA_ACTF_CLOCK_INVERSION | FA_ACTF_ORPHAN)) continue;
        uint64_t mid = gp->start_ns + (uint64_t)gp->gap_ns / 2;
        /* the launch thread first, then any thread of the process */
        const fa_activity *best = NULL;
        for (int pass = 0; pass < 2 && !best; pass++)
            for (size_t i = 0; i < t->n_acts; i++) {
                const fa_activity *c = &t->acts[i];
                if ((c->kind != FA_ACT_CPU_OP && !(c->kind == FA_ACT_RANGE && c->device < 0)) || c->pid != nx->pid || (pass == 0 && c->tid != nx->tid)) continue;
                if (c->start_ns > mid || c->end_ns < mid) continue;
                if (!best || dur(c) < dur(best)) best = c;
            }
        if (best && best->name) gp->cpu_op = fa_arena_strdup(a->arena, best->name);
    }

    /* launch-bound stretches: consecutive kernels of a stream, each shorter than its launch call */
    {
        size_t cap = 16, n = 0;
        fa_ta_stretch *v = calloc(cap, sizeof *v);
        if (!v) goto nomem;
        size_t i = 0;
        while (i < nk) {
            size_t e = i;
            int64_t kn = 0, ln = 0;
            while (e < nk && ks[e].device == ks[i].device && ks[e].stream == ks[i].stream && launch_of[e] != SIZE_MAX &&
                   dur(&t->acts[ks[e].act]) < dur(&t->acts[launch_of[e]])) {
                kn += dur(&t->acts[ks[e].act]);
                ln += dur(&t->acts[launch_of[e]]);
                e++;
            }
            if (e - i >= FA_TA_MIN_STRETCH) {
                if (n == cap) {
                    fa_ta_stretch *nv = realloc(v, 2 * cap * sizeof *nv);
                    if (!nv) {
                        free(v);
                        goto nomem;
                    }
                    v = nv;
                    cap *= 2;
                }
                v[n++] = (fa_ta_stretch){ks[i].device, ks[i].stream, (int)(e - i), t->acts[ks[i].act].start_ns,
                                         t->acts[ks[e - 1].act].end_ns, kn, ln, a->kernels[ks[i].token].name};
                a->launch_bound_kernels += (int64_t)(e - i);
                a->launch_bound_ns += kn;
            }
            i = e > i ? e : i + 1;
        }
        qsort(v, n, sizeof *v, cmp_stretch);
        a->n_stretches = (int)n;
        a->stretches = fa_arena_alloc(a->arena, sizeof *v * (n ? n : 1));
        if (!a->stretches) {
            free(v);
            goto nomem;
        }
        memcpy(a->stretches, v, sizeof *v * n);
        free(v);
    }

    /* repeated n-grams inside maximal runs of light kernels on a stream */
    {
        int64_t run_idx = 0;
        size_t i = 0;
        while (i < nk) {
            if (!fa_kclass_light(a->kernels[tok[i]].cls)) {
                i++;
                continue;
            }
            size_t e = i;
            while (e < nk && ks[e].device == ks[i].device && ks[e].stream == ks[i].stream &&
                   fa_kclass_light(a->kernels[tok[e]].cls))
                e++;
            int len = (int)(e - i);
            for (int n = 2; n <= FA_TA_MAX_NGRAM && n <= len; n++)
                for (int p = 0; p + n <= len; p++) {
                    ngram *g = ngtab_get(&ng, n, tok + i + p);
                    if (!g) goto nomem;
                    if (g->last_run == run_idx && p < g->last_end) continue; /* overlaps the last one */
                    g->last_run = run_idx;
                    g->last_end = p + n;
                    g->count++;
                    bool known = true;
                    uint64_t b = 0;
                    for (int q = 0; q < n; q++) {
                        const fa_activity *x = &t->acts[ks[i + p + q].act];
                        g->total_ns += dur(x);
                        if (q == 0) continue;
                        const fa_activity *pv = &t->acts[ks[i + p + q - 1].act];
                        if (x->start_ns > pv->end_ns) g->idle_ns += (int64_t)(x->start_ns - pv->end_ns);
                        if (x->bytes_read > 0) b += 2 * x->bytes_read;
                        else known = false;
                    }
                    if (known) g->bytes += b;
                    else g->unknown_occ++;
                }
            run_idx++;
            i = e;
        }
        /* keep repeated ones; drop periodic n-grams (a unit repeated: a b a b) and n-grams
         * contained in a longer kept one with the same count */
        for (size_t x = 0; x < ng.n; x++) {
            ngram *g = &ng.v[x];
            if (g->count < 2) {
                g->drop = true;
                continue;
            }
            /* period 1 (a a a): keep only the pair (a a) */
            for (int per = g->n > 2 ? 1 : 2; per < g->n && !g->drop; per++) {
                if (g->n % per) continue;
                bool periodic = true;
                for (int q = per; q < g->n && periodic; q++) periodic = g->ids[q] == g->ids[q - per];
                if (periodic) g->drop = true;
            }
        }
        size_t *live = calloc(ng.n ? ng.n : 1, sizeof *live), nlive = 0;
        if (!live) goto nomem;
        for (size_t x = 0; x < ng.n; x++)
            if (!ng.v[x].drop) live[nlive++] = x;
        for (size_t xi = 0; xi < nlive; xi++) {
            ngram *g = &ng.v[live[xi]];
            for (size_t yi = 0; yi < nlive && !g->drop; yi++) {
                ngram *h = &ng.v[live[yi]];
                if (h->drop || h->n <= g->n || h->count != g->count) continue;
                for (int off = 0; off + g->n <= h->n; off++)
                    if (!memcmp(h->ids + off, g->ids, sizeof(int) * (size_t)g->n)) {
                        g->drop = true;
                        break;
                    }
            }
        }
        free(live);
        size_t kept = 0;
        for (size_t x = 0; x < ng.n; x++) kept += !ng.v[x].drop;
        fa_ta_seq *seqs = fa_arena_alloc(a->arena, sizeof *seqs * (kept ? kept : 1));
        if (!seqs) goto nomem;
        size_t k = 0;
        for (size_t x = 0; x < ng.n; x++) {
            ngram *g = &ng.v[x];
            if (g->drop) continue;
            fa_ta_seq *q = &seqs[k++];
            memset(q, 0, sizeof *q);
            q->n = g->n;
            q->names = fa_arena_alloc(a->arena, sizeof *q->names * (size_t)g->n);
            if (!q->names) goto nomem;
            for (int m = 0; m < g->n; m++) q->names[m] = a->kernels[g->ids[m]].name;
            q->count = g->count;
            q->total_ns = g->total_ns;
            q->idle_inside_ns = g->idle_ns;
            q->bytes_known = g->unknown_occ == 0;
            q->intermediate_bytes = q->bytes_known ? g->bytes : 0;
            q->saving_launch_ns = (double)q->count * (q->n - 1) * (double)a->launch_overhead_ns;
            /* GB/s = bytes per ns */
            q->saving_bytes_ns = q->bytes_known && a->hbm_gbs > 0 ? (double)q->intermediate_bytes / a->hbm_gbs : 0;
            q->saving_ns = q->saving_launch_ns + q->saving_bytes_ns;
        }
        qsort(seqs, k, sizeof *seqs, cmp_seq);
        a->n_seqs = (int)(k < FA_TA_MAX_SEQS ? k : FA_TA_MAX_SEQS);
        a->seqs = seqs;
        for (int m = 0; m < a->n_seqs; m++) a->saving_ns += seqs[m].saving_ns;
    }

    qsort(a->kernels, (size_t)a->n_kernel_names, sizeof *a->kernels, cmp_kernel_total);
    goto done;
nomem:
    s = fa_ctx_error(ctx, FA_ERR_NOMEM, "trace advice: out of memory");
done:
    free(ks);
    free(ls);
    free(tmp);
    free(launch_durs);
    free(gapv);
    free(allgaps);
    free(launch_of);
    free(names.keys);
    free(names.ids);
    free(ng.v);
    free(ng.slots);
    free(tok);
    if (s) {
        if (a) free(a->kernels), a->kernels = NULL;
        fa_trace_advice_free(a);
        return s;
    }
    /* kernels array is malloc'd: move it into the arena so free is one call */
    fa_ta_kernel *kv = fa_arena_alloc(a->arena, sizeof *kv * (size_t)(a->n_kernel_names ? a->n_kernel_names : 1));
    if (!kv) {
        free(a->kernels);
        a->kernels = NULL;
        fa_trace_advice_free(a);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "trace advice: out of memory");
    }
    memcpy(kv, a->kernels, sizeof *kv * (size_t)a->n_kernel_names);
    free(a->kernels);
    a->kernels = kv;
    *out = a;
    return FA_OK;
}

void fa_trace_advice_free(fa_trace_advice *a)
{
    if (!a) return;
    fa_arena_free(a->arena);
    free(a);
}

/* ---------------------------------------------------------------- store ---- */

fa_status fa_trace_advise_run(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_ta_device *dev,
                              fa_trace_advice **out)
{
    fa_trace *t = NULL;
    fa_arena *ar = fa_arena_create(4096);
    if (!ar) return fa_ctx_error(ctx, FA_ERR_NOMEM, "trace advice: out of memory");
    fa_run_info ri;
    fa_status s = fa_store_get_run(ctx, st, run_id, ar, &ri);
    if (!s) s = fa_store_load_trace(ctx, st, run_id, &t);
    fa_ta_device d = {0};
    if (!s && !dev) {
        d.name = ri.device_name;
        sqlite3 *db = fa_store_db(st);
        sqlite3_stmt *q = NULL;
        s = FA_SQL_CHECK(ctx, st, sqlite3_prepare_v2(db,
            "SELECT key, value FROM analysis_summary WHERE run_id=?1 AND key IN ('trace.device.cc','trace.device.mem_bytes')",
            -1, &q, NULL));
        if (!s) {
            sqlite3_bind_int64(q, 1, run_id);
            int rc;
            while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
                const char *k = (const char *)sqlite3_column_text(q, 0);
                double v = sqlite3_column_double(q, 1);
                if (k && !strcmp(k, "trace.device.cc") && v > 0) {
                    int x = (int)(v * 10 + 0.5);
                    d.cc_major = x / 10;
                    d.cc_minor = x % 10;
                } else if (k && !strcmp(k, "trace.device.mem_bytes") && v > 0) {
                    d.total_mem_bytes = (uint64_t)v;
                }
            }
            s = FA_SQL_CHECK(ctx, st, rc);
        }
        sqlite3_finalize(q);
        dev = &d;
    }
    fa_trace_advice *a = NULL;
    if (!s) s = fa_trace_advise(ctx, t, dev, &a);
    if (!s) {
        a->run_id = run_id;
        *out = a;
    }
    fa_trace_free(t);
    fa_arena_free(ar);
    return s;
}

static void seq_names(fa_buf *b, const fa_ta_seq *q, const char *sep)
{
    for (int m = 0; m < q->n; m++) fa_buf_printf(b, "%s%s", m ? sep : "", q->names[m]);
}

static fa_status put_row(fa_ctx *ctx, fa_store *st, sqlite3_stmt *q, int64_t run_id, const char *key, double v,
                         const char *unit, const char *text)
{
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, run_id);
    sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_double(q, 3, v);
    sqlite3_bind_text(q, 4, unit, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 5, text, -1, SQLITE_TRANSIENT);
    return FA_SQL_CHECK(ctx, st, sqlite3_step(q));
}

fa_status fa_trace_advice_save(fa_ctx *ctx, fa_store *st, int64_t run_id, const fa_trace_advice *a)
{
    sqlite3 *db = fa_store_db(st);
    sqlite3_stmt *q = NULL;
    fa_buf b;
    fa_buf_init(&b);
    fa_status s = fa_store_begin(ctx, st);
    if (s) return s;
    static const char *const del[] = {"DELETE FROM analysis_summary WHERE run_id=?1 AND key LIKE 'trace.%'",
                                      "DELETE FROM analysis_chains WHERE run_id=?1"};
    for (size_t i = 0; i < 2 && !s; i++) {
        s = FA_SQL_CHECK(ctx, st, sqlite3_prepare_v2(db, del[i], -1, &q, NULL));
        if (!s) {
            sqlite3_bind_int64(q, 1, run_id);
            s = FA_SQL_CHECK(ctx, st, sqlite3_step(q));
        }
        sqlite3_finalize(q);
        q = NULL;
    }
    if (!s) s = FA_SQL_CHECK(ctx, st, sqlite3_prepare_v2(db,
        "INSERT OR REPLACE INTO analysis_summary(run_id, key, value, unit, text) VALUES (?1,?2,?3,?4,?5)", -1, &q, NULL));
#define ROW(key, v, unit) \
    do { if (!s) s = put_row(ctx, st, q, run_id, key, (double)(v), unit, b.data ? b.data : ""); fa_buf_reset(&b); } while (0)
    if (a->cc_major) {
        fa_buf_printf(&b, "Compute capability %d.%d (%s).", a->cc_major, a->cc_minor, a->cc_source);
        ROW("trace.device.cc", a->cc_major + a->cc_minor / 10.0, "cc");
    }
    if (a->total_mem_bytes) {
        fa_buf_printf(&b, "Device memory %.1f GiB (deviceProperties).", a->total_mem_bytes / 1073741824.0);
        ROW("trace.device.mem_bytes", a->total_mem_bytes, "bytes");
    }
    if (a->no_gpu_activity) {
        fa_buf_printf(&b, "No GPU activity in the trace: nothing to fuse.");
        ROW("trace.no_gpu_activity", 1, "bool");
    }
    fa_buf_printf(&b, "%" PRId64 " GPU kernels (%d distinct names), %.3f ms of kernel time on %d streams.", a->n_kernels,
                  a->n_kernel_names, a->kernel_ns / 1e6, a->n_streams);
    ROW("trace.kernels", a->n_kernels, "count");
    fa_buf_printf(&b, "Launch overhead %.2f us per kernel, measured in the trace: median launch call %.2f us (%" PRId64
                      " calls) + median idle gap between kernels on a stream %.2f us.",
                  a->launch_overhead_ns / 1e3, a->launch_call_median_ns > 0 ? a->launch_call_median_ns / 1e3 : 0.0,
                  a->n_launch_calls, a->gap_median_ns > 0 ? a->gap_median_ns / 1e3 : 0.0);
    ROW("trace.launch_overhead_ns", a->launch_overhead_ns, "ns");
    if (a->hbm_gbs > 0) fa_buf_printf(&b, "HBM bandwidth %.0f GB/s (theoretical, %s data sheet).", a->hbm_gbs, a->hbm_label);
    else fa_buf_printf(&b, "HBM bandwidth unknown for this device: savings count launches only.");
    ROW("trace.hbm_gbs", a->hbm_gbs, "GB/s");
    if (a->n_seqs) {
        const fa_ta_seq *q0 = &a->seqs[0];
        fa_buf_printf(&b, "%d repeated memory-bound kernel sequences; the largest: ", a->n_seqs);
        seq_names(&b, q0, " -> ");
        fa_buf_printf(&b, " x%" PRId64 ", %.1f us, estimated saving %.1f us if fused (%s).", q0->count, q0->total_ns / 1e3,
                      q0->saving_ns / 1e3,
                      q0->bytes_known ? "launches + intermediate bytes from Input Dims, estimated" : "launches only, bytes unknown");
    } else {
        fa_buf_printf(&b, "No repeated sequence of memory-bound kernels found.");
    }
    ROW("trace.sequences", a->n_seqs, "count");
    fa_buf_printf(&b, "Estimated saving of fusing every repeated sequence: %.1f us (estimate).", a->saving_ns / 1e3);
    ROW("trace.saving_ns", a->saving_ns, "ns");
    fa_buf_printf(&b, "%d launch-bound stretches (>= %d consecutive kernels each shorter than its launch call): %" PRId64
                      " kernels, %.1f us of kernel time.",
                  a->n_stretches, FA_TA_MIN_STRETCH, a->launch_bound_kernels, a->launch_bound_ns / 1e3);
    ROW("trace.launch_bound_ns", a->launch_bound_ns, "ns");
    fa_buf_printf(&b, "GPU idle between kernels: %.3f ms summed over streams", a->idle_ns / 1e6);
    if (a->n_gaps)
        fa_buf_printf(&b, "; largest gap %.1f us before %s (cpu op then: %s)", a->gaps[0].gap_ns / 1e3,
                      a->gaps[0].next_kernel, a->gaps[0].cpu_op ? a->gaps[0].cpu_op : "unknown");
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
#undef ROW
    sqlite3_finalize(q);
    q = NULL;
    if (!s) s = FA_SQL_CHECK(ctx, st, sqlite3_prepare_v2(db,
        "INSERT INTO analysis_chains(run_id, chain_id, members_json, time_ns, share, intermediate_bytes, launches, max_saving_ns) "
        "VALUES (?1,?2,?3,?4,?5,?6,?7,?8)", -1, &q, NULL));
    for (int i = 0; i < a->n_seqs && !s; i++) {
        const fa_ta_seq *c = &a->seqs[i];
        fa_buf_reset(&b);
        fa_buf_puts(&b, "[");
        for (int k = 0; k < c->n; k++) {
            if (k) fa_buf_puts(&b, ",");
            fa_buf_puts(&b, "\"");
            fa_escape_json(&b, c->names[k], strlen(c->names[k]));
            fa_buf_puts(&b, "\"");
        }
        fa_buf_puts(&b, "]");
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, run_id);
        sqlite3_bind_int(q, 2, i);
        sqlite3_bind_text(q, 3, b.data, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 4, c->total_ns);
        sqlite3_bind_double(q, 5, a->kernel_ns > 0 ? (double)c->total_ns / (double)a->kernel_ns : 0.0);
        sqlite3_bind_int64(q, 6, (int64_t)c->intermediate_bytes);
        sqlite3_bind_int64(q, 7, c->count * c->n);
        sqlite3_bind_int64(q, 8, (int64_t)c->saving_ns);
        s = FA_SQL_CHECK(ctx, st, sqlite3_step(q));
    }
    sqlite3_finalize(q);
    fa_buf_free(&b);
    if (s) {
        fa_store_rollback(st);
        return s;
    }
    return fa_store_commit(ctx, st);
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

void fa_trace_advice_text(const fa_trace_advice *a, fa_buf *b)
{
    if (a->no_gpu_activity) {
        fa_buf_puts(b, "no GPU activity in the trace: nothing to fuse\n");
        return;
    }
    fa_buf_printf(b, "device: %s", a->device_name ? a->device_name : "unknown");
    if (a->cc_major) fa_buf_printf(b, ", sm_%d%d (%s)", a->cc_major, a->cc_minor, a->cc_source);
    else fa_buf_puts(b, ", compute capability unknown: no occupancy from the calculator");
    if (a->hbm_gbs > 0) fa_buf_printf(b, ", HBM %.0f GB/s (theoretical, %s)", a->hbm_gbs, a->hbm_label);
    else fa_buf_puts(b, ", HBM bandwidth unknown (savings count launches only)");
    fa_buf_printf(b, "\n%" PRId64 " GPU kernels, %d distinct, %.3f ms kernel time, %d streams\n", a->n_kernels,
                  a->n_kernel_names, a->kernel_ns / 1e6, a->n_streams);
    fa_buf_printf(b, "launch overhead: %.2f us = median launch call %.2f us (%" PRId64
                     " calls) + median idle gap %.2f us (measured)\n",
                  a->launch_overhead_ns / 1e3, a->launch_call_median_ns > 0 ? a->launch_call_median_ns / 1e3 : 0.0,
                  a->n_launch_calls, a->gap_median_ns > 0 ? a->gap_median_ns / 1e3 : 0.0);
    fa_buf_printf(b, "\n%-60s %-11s %7s %11s %10s %14s %5s %7s %s\n", "kernel", "class", "count", "total us", "median us",
                  "grid/block", "regs", "smem", "occupancy");
    int show = a->n_kernel_names < 15 ? a->n_kernel_names : 15;
    for (int i = 0; i < show; i++) {
        const fa_ta_kernel *k = &a->kernels[i];
        char lc[64], oc[64];
        if (k->block[0]) snprintf(lc, sizeof lc, "%d/%d", k->grid[0] * (k->grid[1] ? k->grid[1] : 1) * (k->grid[2] ? k->grid[2] : 1),
                                  k->block[0] * (k->block[1] ? k->block[1] : 1) * (k->block[2] ? k->block[2] : 1));
        else snprintf(lc, sizeof lc, "-");
        fa_buf_printf(b, "%-60.60s %-11s %7" PRId64 " %11.1f %10.2f %14s %5d %7d %s\n", k->name, fa_kclass_name(k->cls),
                      k->count, k->total_ns / 1e3, k->median_ns / 1e3, lc, k->registers, k->smem, occ_text(a, k, oc, sizeof oc));
    }
    if (a->n_kernel_names > show) fa_buf_printf(b, "... %d more kernel names\n", a->n_kernel_names - show);

    fa_buf_printf(b, "\nrepeated memory-bound kernel sequences (light = elementwise/reduction/copy): %d\n", a->n_seqs);
    int sq = a->n_seqs < 10 ? a->n_seqs : 10;
    for (int i = 0; i < sq; i++) {
        const fa_ta_seq *q = &a->seqs[i];
        fa_buf_printf(b, "  %2d. ", i + 1);
        seq_names(b, q, " -> ");
        fa_buf_printf(b, "\n      x%" PRId64 ", %.1f us total, %.1f us idle between its kernels; ", q->count,
                      q->total_ns / 1e3, q->idle_inside_ns / 1e3);
        if (q->bytes_known) fa_buf_printf(b, "intermediate %.2f MiB (estimated from Input Dims, upper bound); ",
                                          q->intermediate_bytes / 1048576.0);
        else fa_buf_puts(b, "bytes unknown; ");
        fa_buf_printf(b, "estimated saving %.1f us (launches %.1f", q->saving_ns / 1e3, q->saving_launch_ns / 1e3);
        if (q->bytes_known && a->hbm_gbs > 0) fa_buf_printf(b, " + bytes %.1f", q->saving_bytes_ns / 1e3);
        fa_buf_puts(b, ")\n");
    }
    if (a->n_seqs > sq) fa_buf_printf(b, "  ... %d more\n", a->n_seqs - sq);
    fa_buf_printf(b, "\nlaunch-bound stretches (>= %d kernels each shorter than its launch call): %d, %" PRId64
                     " kernels, %.1f us kernel time\n",
                  FA_TA_MIN_STRETCH, a->n_stretches, a->launch_bound_kernels, a->launch_bound_ns / 1e3);
    for (int i = 0; i < a->n_stretches && i < 5; i++) {
        const fa_ta_stretch *r = &a->stretches[i];
        fa_buf_printf(b, "  stream %" PRId64 ": %d kernels from %s, %.1f us kernels vs %.1f us launch calls\n", r->stream,
                      r->n_kernels, r->first_name, r->kernel_ns / 1e3, r->launch_ns / 1e3);
    }
    fa_buf_printf(b, "\nidle gaps: %.3f ms summed over streams", a->idle_ns / 1e6);
    if (a->n_overlaps) fa_buf_printf(b, " (%" PRId64 " overlapping kernels excluded)", a->n_overlaps);
    fa_buf_puts(b, "\n");
    for (int i = 0; i < a->n_gaps && i < 5; i++) {
        const fa_ta_gap *g = &a->gaps[i];
        fa_buf_printf(b, "  %.1f us on stream %" PRId64 " before %s; cpu op then: %s\n", g->gap_ns / 1e3, g->stream,
                      g->next_kernel, g->cpu_op ? g->cpu_op : "unknown");
    }
    fa_buf_printf(b, "\norphans %" PRIu64 ", clock inversions %" PRIu64 ", parse errors %" PRIu64 "\n", a->n_orphans,
                  a->n_clock_inversions, a->n_parse_errors);
    if (a->n_estimated_bytes == 0)
        fa_buf_puts(b, "no kernel has sizes (no Input Dims): every byte figure is unknown, savings count launches only\n");
}

static void jstr(fa_buf *b, const char *s)
{
    if (!s) {
        fa_buf_puts(b, "null");
        return;
    }
    fa_buf_puts(b, "\"");
    fa_escape_json(b, s, strlen(s));
    fa_buf_puts(b, "\"");
}

void fa_trace_advice_json(const fa_trace_advice *a, fa_buf *b)
{
    fa_buf_puts(b, "{\"device\":");
    jstr(b, a->device_name);
    if (a->cc_major) fa_buf_printf(b, ",\"arch\":\"sm_%d%d\"", a->cc_major, a->cc_minor);
    else fa_buf_puts(b, ",\"arch\":null");
    fa_buf_puts(b, ",\"arch_source\":");
    jstr(b, a->cc_source);
    fa_buf_printf(b, ",\"hbm_gbs\":%.1f,\"hbm_source\":", a->hbm_gbs);
    jstr(b, a->hbm_gbs > 0 ? "theoretical" : NULL);
    fa_buf_printf(b, ",\"no_gpu_activity\":%s,\"kernels\":%" PRId64 ",\"kernel_ns\":%" PRId64 ",\"streams\":%d,"
                     "\"launch_calls\":%" PRId64 ",\"launch_call_median_ns\":%" PRId64 ",\"gap_median_ns\":%" PRId64
                     ",\"launch_overhead_ns\":%" PRId64 ",\"idle_ns\":%" PRId64 ",\"overlaps\":%" PRId64
                     ",\"orphans\":%" PRIu64 ",\"clock_inversions\":%" PRIu64 ",\"parse_errors\":%" PRIu64
                     ",\"launch_bound_kernels\":%" PRId64 ",\"launch_bound_ns\":%" PRId64 ",\"saving_ns\":%.0f",
                  a->no_gpu_activity ? "true" : "false", a->n_kernels, a->kernel_ns, a->n_streams, a->n_launch_calls,
                  a->launch_call_median_ns, a->gap_median_ns, a->launch_overhead_ns, a->idle_ns, a->n_overlaps,
                  a->n_orphans, a->n_clock_inversions, a->n_parse_errors, a->launch_bound_kernels, a->launch_bound_ns,
                  a->saving_ns);
    fa_buf_puts(b, ",\"kernel_stats\":[");
    for (int i = 0; i < a->n_kernel_names; i++) {
        const fa_ta_kernel *k = &a->kernels[i];
        fa_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        jstr(b, k->name);
        fa_buf_printf(b, ",\"class\":\"%s\",\"count\":%" PRId64 ",\"total_ns\":%" PRId64 ",\"median_ns\":%" PRId64
                         ",\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d],\"registers\":%d,\"smem\":%d,",
                      fa_kclass_name(k->cls), k->count, k->total_ns, k->median_ns, k->grid[0], k->grid[1], k->grid[2],
                      k->block[0], k->block[1], k->block[2], k->registers, k->smem);
        if (k->occupancy >= 0) fa_buf_printf(b, "\"occupancy\":%.4f,\"occupancy_source\":", k->occupancy);
        else fa_buf_puts(b, "\"occupancy\":null,\"occupancy_source\":");
        jstr(b, k->occupancy_source);
        fa_buf_puts(b, "}");
    }
    fa_buf_puts(b, "],\"sequences\":[");
    for (int i = 0; i < a->n_seqs; i++) {
        const fa_ta_seq *q = &a->seqs[i];
        fa_buf_puts(b, i ? ",{\"kernels\":[" : "{\"kernels\":[");
        for (int m = 0; m < q->n; m++) {
            if (m) fa_buf_puts(b, ",");
            jstr(b, q->names[m]);
        }
        fa_buf_printf(b, "],\"count\":%" PRId64 ",\"total_ns\":%" PRId64 ",\"idle_inside_ns\":%" PRId64 ",", q->count,
                      q->total_ns, q->idle_inside_ns);
        if (q->bytes_known) fa_buf_printf(b, "\"intermediate_bytes\":%" PRIu64 ",\"bytes\":\"estimated\",", q->intermediate_bytes);
        else fa_buf_puts(b, "\"intermediate_bytes\":null,\"bytes\":\"unknown\",");
        fa_buf_printf(b, "\"saving_launch_ns\":%.0f,\"saving_bytes_ns\":%.0f,\"saving_ns\":%.0f,\"saving\":\"estimated\"}",
                      q->saving_launch_ns, q->saving_bytes_ns, q->saving_ns);
    }
    fa_buf_puts(b, "],\"launch_bound_stretches\":[");
    for (int i = 0; i < a->n_stretches; i++) {
        const fa_ta_stretch *r = &a->stretches[i];
        fa_buf_printf(b, "%s{\"device\":%d,\"stream\":%" PRId64 ",\"kernels\":%d,\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64
                         ",\"kernel_ns\":%" PRId64 ",\"launch_ns\":%" PRId64 ",\"first\":",
                      i ? "," : "", r->device, r->stream, r->n_kernels, r->start_ns, r->end_ns, r->kernel_ns, r->launch_ns);
        jstr(b, r->first_name);
        fa_buf_puts(b, "}");
    }
    fa_buf_puts(b, "],\"streams\":[");
    for (int i = 0; i < a->n_streams; i++) {
        const fa_ta_stream *m = &a->streams[i];
        fa_buf_printf(b, "%s{\"device\":%d,\"stream\":%" PRId64 ",\"kernels\":%" PRId64 ",\"kernel_ns\":%" PRId64
                         ",\"idle_ns\":%" PRId64 ",\"gaps\":%" PRId64 ",\"overlaps\":%" PRId64 "}",
                      i ? "," : "", m->device, m->stream, m->n_kernels, m->kernel_ns, m->idle_ns, m->n_gaps, m->n_overlaps);
    }
    fa_buf_puts(b, "],\"largest_gaps\":[");
    for (int i = 0; i < a->n_gaps; i++) {
        const fa_ta_gap *g = &a->gaps[i];
        fa_buf_printf(b, "%s{\"device\":%d,\"stream\":%" PRId64 ",\"start_ns\":%" PRIu64 ",\"gap_ns\":%" PRId64 ",\"next_kernel\":",
                      i ? "," : "", g->device, g->stream, g->start_ns, g->gap_ns);
        jstr(b, g->next_kernel);
        fa_buf_puts(b, ",\"cpu_op\":");
        jstr(b, g->cpu_op);
        fa_buf_puts(b, "}");
    }
    fa_buf_puts(b, "]}");
}
