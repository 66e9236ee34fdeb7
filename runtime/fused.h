/* runtime/fused — generated fused kernels on a target: the language a target's code generator
 * writes, compiling sources into binaries, the executor kernel of a binary and the compiler's
 * report of it, through the target's fused-kernel table (runtime-impl.h); and the cpu target's
 * compiled kernels with their cache (runtime/cpu/compile.c). */
#ifndef FA_RUNTIME_FUSED_H
#define FA_RUNTIME_FUSED_H

#include "runtime/runtime.h"

/* Source language of a target's generated fused kernels (what codegen/ emits for it). */
typedef enum fa_kernel_lang {
    FA_KERNEL_LANG_C = 0,    /* C11 + OpenMP, compiled by the system compiler (codegen.h ABI) */
    FA_KERNEL_LANG_CUDA = 1, /* CUDA C, compiled by NVRTC */
    FA_KERNEL_LANG_COUNT
} fa_kernel_lang;

/* One generated fused kernel: a whole translation unit defining the entry `name`, with its
 * parameter counts and (CUDA) 1-D launch shape as codegen/ reported them. */
typedef struct fa_fused_source {
    const char *src;
    size_t len;
    const char *name;
    int n_in, n_out;         /* pointer parameters: one per cluster input, then per output */
    int block_size;          /* threads per block (CUDA; 0 on cpu) */
    int64_t grid;            /* blocks (CUDA; 0 on cpu) */
    fa_layout layout;        /* the layout the kernel reads its following inputs and writes its
                                output in (fa_kernel_desc.layout; PLAIN: plain tensors); its
                                executor kernel declares it (fa_custom_kernel.layout) */
} fa_fused_source;

/* Registers and memory of one compiled kernel, from the compiler's own report (ptxas -v). */
typedef struct fa_kernel_resources {
    char arch[16];           /* what it was compiled for ("sm_90") */
    int registers;           /* per thread */
    int spill_stores;        /* bytes */
    int spill_loads;         /* bytes */
    int static_smem;         /* bytes of static shared memory per block */
    int local_mem;           /* bytes of stack frame per thread */
} fa_kernel_resources;

/* A compiled fused kernel, owned by the target that built it (opaque; fa_target_fused_free). */
typedef struct fa_fused_binary fa_fused_binary;

typedef struct fa_fused_compile_options {
    const char *cache_dir;    /* cpu: compiled shared objects by source hash (fa_kernel_cache_open) */
    uint64_t cache_max_bytes; /* cpu: 0 = FA_KERNEL_CACHE_MAX_BYTES_DEFAULT */
    const char *arch;         /* cuda: "sm_90"; NULL = the device's own (needs a device) */
} fa_fused_compile_options;

/* The language t's generated kernels are written in. */
fa_kernel_lang fa_target_kernel_lang(const fa_target_iface *t);
/* Compile n sources; out[i] or errs[i] (malloc'd diagnostics about that source only) per source.
 * FA_OK unless the compiler itself could not be used (cache folder, toolkit). */
fa_status fa_target_fused_compile(fa_ctx *ctx, const fa_target_iface *t, const fa_fused_compile_options *o, int n,
                                  const fa_fused_source *src, fa_fused_binary **out, char **errs);
/* The executor kernel of a compiled fused kernel for an ai.fuse-advise FusedKernel node (handed to
 * fa_exec_create through a kernel provider). The binary outlives the executor. */
fa_status fa_target_fused_kernel(fa_ctx *ctx, const fa_target_iface *t, const fa_fused_binary *b, fa_custom_kernel *out);
/* The executor kernel of FusedKernel node n of g built from binary b: fa_target_fused_kernel, or,
 * for a node with a `gemm` attribute (a MatMul/Gemm whose epilogue b is: applier/fused_graph.c,
 * codegen.h fa_kernel_desc.gemm_epilogue), the target's product in blocks of rows with b run on
 * each block — FA_ERR_UNSUPPORTED naming the node on a target without one (cuda). */
fa_status fa_target_fused_node_kernel(fa_ctx *ctx, const fa_target_iface *t, const fa_fused_binary *b, const fa_graph *g,
                                      const fa_node *n, fa_custom_kernel *out);
/* What t's compiler reported for b: false when t has no such report (FA_TARGET_CAP_KERNEL_REPORT). */
bool fa_target_fused_resources(const fa_target_iface *t, const fa_fused_binary *b, fa_kernel_resources *out);
/* Free a binary t built; NULL is a no-op. */
void fa_target_fused_free(const fa_target_iface *t, fa_fused_binary *b);

/* ---- the cpu target's compiled kernels and their cache (runtime/cpu/compile.c, docs/codegen.md
 *      "Kernel cache") ---- */

/* Shared objects the cache keeps before evicting the least recently used (256 MiB: about 4,000
 * batches of typical generated kernels, 20-200 KiB each as built here). */
#define FA_KERNEL_CACHE_MAX_BYTES_DEFAULT (256ull << 20)

/* The folder compiled kernels are cached in. dir NULL: $XDG_CACHE_HOME/fuse-advise/kernels, else
 * $HOME/.cache/fuse-advise/kernels, else a folder made for this process under $TMPDIR or /tmp
 * (removed by fa_kernel_cache_free); a relative variable, or one whose cache path would not fit
 * PATH_MAX, is ignored (XDG Base Directory Specification: relative paths are invalid). A
 * relative dir is taken from the current folder. The path is opened with fa_private_dir_open
 * (core.h): every folder from "/" owned by the effective user or root and writable by nobody
 * else unless sticky, the cache folder itself the user's and writable by nobody else, links
 * followed only where nobody else can write, missing folders created 0700; refused with
 * FA_ERR_IO naming the folder at fault and what to do. The folder is held open until
 * fa_kernel_cache_free and every later step is relative to it. Work folders of dead processes
 * are removed. max_bytes 0: FA_KERNEL_CACHE_MAX_BYTES_DEFAULT. */
typedef struct fa_kernel_cache fa_kernel_cache;
fa_status fa_kernel_cache_open(fa_ctx *ctx, const char *dir, uint64_t max_bytes, fa_kernel_cache **out);
const char *fa_kernel_cache_dir(const fa_kernel_cache *kc);
void fa_kernel_cache_free(fa_kernel_cache *kc);

typedef void (*fa_fused_fn)(const void *const *in, void *const *out, int threads);
/* One generated C kernel: a whole translation unit defining fn_name (fa_codegen_c's output). */
typedef struct fa_kernel_source {
    const char *src;
    size_t len;
    const char *fn_name;
} fa_kernel_source;
/* A loaded kernel: holds one reference to its shared object (fa_compiled_free drops it). */
typedef struct fa_compiled {
    void *handle;
    fa_fused_fn fn;
    char hash[65];  /* the cache entry (SHA-256 of flags + every source of its batch) */
    bool cached;    /* loaded from the cache, not compiled now */
} fa_compiled;
void fa_compiled_free(fa_compiled *c);

/* Compile n kernels into one shared object with one compiler process ($CC split into words as a
 * shell would, fa_split_words, or cc; started with an argument vector, never a shell; -O3
 * -march=native -fopenmp -fno-trapping-math -fno-math-errno -DFA_SLEEF_GNUABI -shared), each
 * source marked "#line 1 \"kernel-K.c\"" so diagnostics name their kernel; kernels that fail
 * are dropped and the rest go again together (one kernel per process only where the
 * diagnostics name none). The compile folder is made inside the held cache folder and is the
 * compiler's working folder (it compiles kernels.c to out.so by those names); it is removed.
 * Entries are KEY.so plus KEY.so.sha256, the SHA-256 of the binary written when it was built;
 * before dlopen an entry must be a regular file owned by us, writable by nobody else, non-empty
 * and match that hash, else it is removed and rebuilt (zero-byte, corrupt, tampered or planted
 * entries never load); the descriptor that was hashed is what dlopen maps (/proc/self/fd/N).
 * A use refreshes its mtime; after adding one, least recently used entries are removed until
 * the shared objects fit the cache's max_bytes.
 * Per kernel: out[i] (owned by the caller) or errs[i] (malloc'd, the compiler's diagnostics
 * about that kernel only, fa_compiler_diagnostics, never the content of an included file).
 * Returns FA_OK unless the cache itself failed (folder, compiler not startable, CC with an
 * unterminated quote). */
fa_status fa_compile_kernels(fa_ctx *ctx, fa_kernel_cache *kc, int n, const fa_kernel_source *srcs, fa_compiled **out,
                             char **errs);

#endif
