/* runtime/cuda/fused — the applier's generated CUDA kernels on the device: a cubin (NVRTC, the
 * device's arch) loaded with cuModuleLoadData, its entry found with cuModuleGetFunction, launched
 * with cuLaunchKernel on device pointers of the node's inputs then outputs. docs/cuda.md. */
#include "runtime/cuda/cuda.h"

#include <cuda.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <string.h>

struct fa_cuda_fused {
    uint8_t *cubin;          /* malloc'd copy */
    size_t cubin_size;
    fa_cuda_module *mod;     /* NULL until loaded */
    void *fn;                /* CUfunction */
    fa_cuda_fused_stats st;
};

fa_status fa_cuda_fused_launch_dims(fa_ctx *ctx, const char *name, int block_size, int64_t grid, unsigned block_out[3],
                                    unsigned grid_out[3])
{
    if (block_size < 1 || block_size > 1024)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "fused kernel %s: block of %d threads outside 1..1024",
                            name ? name : "?", block_size);
    if (grid < 1 || grid > INT32_MAX)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "fused kernel %s: grid of %lld blocks outside 1..2^31-1",
                            name ? name : "?", (long long)grid);
    block_out[0] = (unsigned)block_size;
    block_out[1] = block_out[2] = 1;
    grid_out[0] = (unsigned)grid;
    grid_out[1] = grid_out[2] = 1;
    return FA_OK;
}

fa_status fa_cuda_fused_create(fa_ctx *ctx, const void *cubin, size_t cubin_size, const char *name, int block_size,
                               int64_t grid, int n_in, int n_out, int ptxas_registers, int ptxas_spill_bytes,
                               fa_cuda_fused **out)
{
    if (!cubin || !cubin_size || !name || !*name)
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "fused kernel: empty cubin or name");
    if (n_in < 0 || n_out < 1 || n_in + n_out > 80)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "fused kernel %s: %d inputs and %d outputs (1..80 parameters)",
                            name, n_in, n_out);
    if (strlen(name) >= sizeof ((fa_cuda_fused_stats *)0)->name)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "fused kernel name '%s' too long", name);
    fa_cuda_fused_stats st;
    memset(&st, 0, sizeof st);
    fa_status s = fa_cuda_fused_launch_dims(ctx, name, block_size, grid, st.block, st.grid);
    if (s) return s;
    fa_cuda_fused *k = calloc(1, sizeof *k);
    uint8_t *copy = malloc(cubin_size);
    if (!k || !copy) {
        free(k);
        free(copy);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory copying the cubin of %s (%zu bytes)", name, cubin_size);
    }
    memcpy(copy, cubin, cubin_size);
    snprintf(st.name, sizeof st.name, "%s", name);
    st.n_in = n_in;
    st.n_out = n_out;
    st.ptxas_registers = ptxas_registers;
    st.ptxas_spill_bytes = ptxas_spill_bytes;
    st.registers = st.local_bytes = st.max_threads = -1;
    k->cubin = copy;
    k->cubin_size = cubin_size;
    k->st = st;
    *out = k;
    return FA_OK;
}

/* cuFuncGetAttribute, found in the already loaded driver (fa_cuda_driver_load dlopened it
 * RTLD_LOCAL; RTLD_NOLOAD returns that same handle without loading anything). */
static int func_attr(void *fn, CUfunction_attribute a)
{
    typedef CUresult (*pfn)(int *, CUfunction_attribute, CUfunction);
    const char *path = getenv("FA_CUDA_DRIVER");
    if (!path || !*path) path = "libcuda.so.1";
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!h) return -1;
    pfn f = (pfn)dlsym(h, "cuFuncGetAttribute");
    int v = -1;
    if (!f || f(&v, a, (CUfunction)fn) != CUDA_SUCCESS) v = -1;
    dlclose(h);
    return v;
}

fa_status fa_cuda_fused_load(fa_ctx *ctx, fa_cuda_fused *k)
{
    if (k->mod) return FA_OK;
    fa_status s = fa_cuda_module_load(ctx, k->cubin, &k->mod);
    if (s) return fa_ctx_wrap(ctx, s, "fused kernel %s: ", k->st.name);
    s = fa_cuda_module_function(ctx, k->mod, k->st.name, &k->fn);
    if (s) {
        fa_cuda_module_unload(k->mod);
        k->mod = NULL;
        return s;
    }
    k->st.registers = fa_cuda_function_regs(k->fn);
    k->st.local_bytes = func_attr(k->fn, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
    k->st.max_threads = func_attr(k->fn, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    if (k->st.max_threads > 0 && k->st.block[0] > (unsigned)k->st.max_threads)
        return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED,
                            "fused kernel %s: block of %u threads exceeds the %d the device allows for it (%d registers)",
                            k->st.name, k->st.block[0], k->st.max_threads, k->st.registers);
    return FA_OK;
}

fa_status fa_cuda_fused_launch(fa_ctx *ctx, fa_cuda_fused *k, const fa_node *n, void *const *dev_in, int n_in,
                               void *const *dev_out, int n_out, void *stream)
{
    if (!k->fn) return fa_ctx_error(ctx, FA_ERR_INTERNAL, "fused kernel %s launched before it was loaded", k->st.name);
    if (n_in != k->st.n_in || n_out != k->st.n_out)
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "fused kernel %s takes %d inputs and %d outputs, given %d and %d",
                            k->st.name, k->st.n_in, k->st.n_out, n_in, n_out);
    /* cuLaunchKernel's kernelParams: one pointer to each parameter's value */
    void *vals[80], *args[80];
    for (int i = 0; i < n_in; i++) vals[i] = dev_in[i];
    for (int i = 0; i < n_out; i++) vals[n_in + i] = dev_out[i];
    for (int i = 0; i < n_in + n_out; i++) args[i] = &vals[i];
    char rname[256];
    if (n) nvtxRangePushA(fa_cuda_range_name(n, rname, sizeof rname));
    fa_status s = fa_cuda_launch(ctx, k->fn, k->st.grid, k->st.block, 0, stream, args);
    if (n) nvtxRangePop();
    if (s) return fa_ctx_wrap(ctx, s, "fused kernel %s: ", k->st.name);
    return FA_OK;
}

const fa_cuda_fused_stats *fa_cuda_fused_stats_of(const fa_cuda_fused *k) { return &k->st; }

void fa_cuda_fused_free(void *p)
{
    fa_cuda_fused *k = p;
    if (!k) return;
    fa_cuda_module_unload(k->mod);
    free(k->cubin);
    free(k);
}

fa_status fa_cuda_fused_custom_run(void *state, fa_ctx *ctx, const fa_node *n, const fa_value *in, int n_in,
                                   fa_value *out, int n_out, int threads)
{
    (void)in;
    (void)n_in;
    (void)out;
    (void)n_out;
    (void)threads;
    const fa_cuda_fused *k = state;
    return fa_ctx_error(ctx, FA_ERR_UNSUPPORTED, "node '%s': cuda kernel %s on a host executor (needs the cuda target)",
                        n ? n->name : "?", k ? k->st.name : "?");
}

bool fa_cuda_fused_is_device_kernel(const fa_custom_kernel *ck)
{
    return ck && ck->run == fa_cuda_fused_custom_run;
}
