/* bench/bench_import — trace import throughput (MB/s of JSON text) and peak memory (RSS).
 * Built and driven by bench/bench_import.sh; prints figures, asserts nothing.
 *
 *   bench_import gen PATH MB        write a synthetic Kineto trace of about MB megabytes
 *   bench_import import PATH        import once, print one figures line (run one file per
 *                                   process so ru_maxrss is that file's peak)
 *   bench_import yajl PATH          parse with empty yajl callbacks: the parser's own ceiling
 *   bench_import adv KIND PATH MB   write an adversarial Kineto trace (see gen_adversarial)
 *   bench_import graph PATH MB      write a CUDA-graph replay trace (see gen_graph)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#include "collector/import/import.h"

/* user + system CPU seconds of this process: on a shared, loaded machine MB per CPU-second
 * is steadier than MB per wall second */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss * 1024.0 / 1e6; /* Linux: ru_maxrss in KiB; MB = 1e6 bytes */
}

/* One "iteration" the way Kineto writes it (pretty-printed, as in the corpus captures): a
 * cpu_op with Input Dims/types, its cudaLaunchKernel, the ac2g flow pair and the kernel. */
static int gen(const char *path, double mb)
{
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); return 1; }
    static char iobuf[1 << 20];
    setvbuf(f, iobuf, _IOFBF, sizeof iobuf);
    fprintf(f, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\n      \"id\": 0, "
               "\"name\": \"Synthetic GPU\", \"totalGlobalMem\": 85899345920,\n      \"computeMajor\": 8, "
               "\"computeMinor\": 0, \"numSms\": 108, \"warpSize\": 32\n    }\n  ],\n  \"traceEvents\": [\n");
    static const char *const ops[] = {"aten::add", "aten::mul", "aten::gelu", "aten::layer_norm", "aten::addmm"};
    static const char *const kernels[] = {
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)",
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)",
        "ampere_sgemm_128x64_tn"};
    uint64_t target = (uint64_t)(mb * 1e6), ts = 1712195495000000ull * 1000; /* ns */
    long long corr = 1000, ext = 1;
    uint64_t written = 0;
    for (uint64_t it = 0; written < target; it++) {
        int k = (int)(it % 5);
        uint64_t t_op = ts, t_launch = ts + 3123, t_kernel = ts + 9876;
        int w = fprintf(f,
            "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 1102, \"tid\": 1102,\n"
            "    \"ts\": %llu.%03llu, \"dur\": 25.%03d,\n    \"args\": {\n      \"External id\": %lld,"
            "\"Record function id\": 0, \"Input Dims\": [[8, 512, 768], [8, 512, 768], []], "
            "\"Input type\": [\"float\", \"float\", \"Scalar\"], \"Ev Idx\": %lld\n    }\n  },\n",
            ops[k], (unsigned long long)(t_op / 1000), (unsigned long long)(t_op % 1000), (int)(it % 1000), ext, ext);
        w += fprintf(f,
            "  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1102, \"tid\": 1102,\n"
            "    \"ts\": %llu.%03llu, \"dur\": 4.%03d,\n    \"args\": {\n      \"External id\": %lld,"
            "      \"cbid\": 211, \"correlation\": %lld\n    }\n  },\n"
            "  {\n    \"ph\": \"s\", \"id\": %lld, \"pid\": 1102, \"tid\": 1102, \"ts\": %llu.%03llu,\n"
            "    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  },\n",
            (unsigned long long)(t_launch / 1000), (unsigned long long)(t_launch % 1000), (int)(it % 997), ext, corr,
            corr, (unsigned long long)(t_launch / 1000), (unsigned long long)(t_launch % 1000));
        w += fprintf(f,
            "  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": %d,\n"
            "    \"ts\": %llu.%03llu, \"dur\": 11.%03d,\n    \"args\": {\n      \"External id\": %lld,"
            "      \"queued\": 0, \"device\": 0, \"context\": 1,      \"stream\": %d, \"correlation\": %lld,"
            "      \"registers per thread\": 30,      \"shared memory\": 0,      \"blocks per SM\": 5.300000,"
            "      \"warps per SM\": 21.200001,      \"grid\": [3072, 1, 1],      \"block\": [128, 1, 1],"
            "      \"est. achieved occupancy %%\": 33\n    }\n  },\n"
            "  {\n    \"ph\": \"f\", \"id\": %lld, \"pid\": 0, \"tid\": %d, \"ts\": %llu.%03llu,\n"
            "    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  },\n",
            kernels[k], 7 + (int)(it % 2) * 13, (unsigned long long)(t_kernel / 1000),
            (unsigned long long)(t_kernel % 1000), (int)(it % 991), ext, 7 + (int)(it % 2) * 13, corr, corr,
            7 + (int)(it % 2) * 13, (unsigned long long)(t_kernel / 1000), (unsigned long long)(t_kernel % 1000));
        if (w < 0) { perror(path); fclose(f); return 1; }
        written += (uint64_t)w;
        ts += 30000;
        corr++;
        ext++;
    }
    fprintf(f, "  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", "
               "\"tid\": \"\", \"ts\": %llu\n  }\n],\n  \"traceName\": \"synthetic\",\n  \"displayTimeUnit\": \"ms\"\n}\n",
            (unsigned long long)(ts / 1000));
    if (fclose(f) != 0) { perror(path); return 1; }
    return 0;
}

/* Adversarial Kineto traces of about MB megabytes, one shape each (issue 15: every parser
 * linear in its input):
 *   quotes      kernels whose names are 1 MiB runs of escaped quotes (\")
 *   one-name    one kernel whose name is a single run of escaped quotes (at most 60 MiB)
 *   digits      cpu ops whose Input Dims hold 1 MiB numbers (bad numbers, records kept)
 *   correlation every launch and kernel sharing one correlation id
 *   nesting     cpu ops nested as deep as the size allows, all ending before the launches
 *   deep-json   args holding arrays nested 100,000 deep */
static int gen_adversarial(const char *kind, const char *path, double mb)
{
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); return 1; }
    static char iobuf[1 << 20];
    setvbuf(f, iobuf, _IOFBF, sizeof iobuf);
    uint64_t target = (uint64_t)(mb * 1e6);
    fputs("{\"traceEvents\": [\n", f);
    uint64_t written = 0;
    const char *sep = "";
    if (!strcmp(kind, "quotes") || !strcmp(kind, "one-name") || !strcmp(kind, "digits")) {
        bool digits = !strcmp(kind, "digits");
        uint64_t each = !strcmp(kind, "one-name") ? (target < (60ull << 20) ? target : (60ull << 20)) : (1ull << 20);
        static char unit[1 << 16];
        for (size_t i = 0; i < sizeof unit; i += 2) {
            unit[i] = digits ? '1' : '\\';
            unit[i + 1] = digits ? '2' : '"';
        }
        for (uint64_t it = 0; written < target; it++) {
            if (digits)
                written += (uint64_t)fprintf(f, "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"pid\": 1, "
                                                "\"tid\": 1, \"ts\": %llu, \"dur\": 1, \"args\": {\"Input Dims\": [[",
                                             sep, (unsigned long long)it);
            else
                written += (uint64_t)fprintf(f, "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"", sep);
            for (uint64_t k = 0; k < each; k += sizeof unit) {
                size_t n = each - k < sizeof unit ? (size_t)(each - k) : sizeof unit;
                fwrite(unit, 1, n, f);
                written += n;
            }
            if (digits) written += (uint64_t)fprintf(f, "]]}}");
            else written += (uint64_t)fprintf(f, "\", \"pid\": 0, \"tid\": 7, \"ts\": %llu, \"dur\": 1}", (unsigned long long)it);
            sep = ",\n";
            if (!strcmp(kind, "one-name")) break;
        }
    } else if (!strcmp(kind, "correlation")) {
        for (uint64_t it = 0; written < target; it++) {
            written += (uint64_t)fprintf(f, "%s{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
                                            "\"pid\": 1, \"tid\": 1, \"ts\": %llu, \"dur\": 1, \"args\": {\"correlation\": 7}},\n"
                                            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
                                            "\"ts\": %llu, \"dur\": 1, \"args\": {\"correlation\": 7, \"stream\": 7}}",
                                         sep, (unsigned long long)(2 * it), (unsigned long long)(2 * it + 1));
            sep = ",\n";
        }
    } else if (!strcmp(kind, "nesting")) {
        /* each op line ~110 bytes, each launch + kernel ~260: a third of the bytes in ops */
        uint64_t n = target / 3 / 110 + 1, m = target * 2 / 3 / 260 + 1;
        for (uint64_t i = 0; i < n; i++) {
            written += (uint64_t)fprintf(f, "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"pid\": 1, "
                                            "\"tid\": 1, \"ts\": %llu, \"dur\": %llu}",
                                         sep, (unsigned long long)i, (unsigned long long)(4 * n - 2 * i));
            sep = ",\n";
        }
        for (uint64_t i = 0; i < m; i++)
            written += (uint64_t)fprintf(f, ",\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
                                            "\"pid\": 1, \"tid\": 1, \"ts\": %llu, \"dur\": 1, \"args\": {\"correlation\": %llu}},\n"
                                            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
                                            "\"ts\": %llu, \"dur\": 1, \"args\": {\"correlation\": %llu, \"stream\": 7}}",
                                         (unsigned long long)(5 * n + 2 * i), (unsigned long long)i,
                                         (unsigned long long)(5 * n + 2 * i + 1), (unsigned long long)i);
    } else if (!strcmp(kind, "deep-json")) {
        for (uint64_t it = 0; written < target; it++) {
            written += (uint64_t)fprintf(f, "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
                                            "\"tid\": 7, \"ts\": %llu, \"dur\": 1, \"args\": {\"x\": ", sep, (unsigned long long)it);
            for (int d = 0; d < 100000; d++) fputc('[', f);
            for (int d = 0; d < 100000; d++) fputc(']', f);
            written += 200000 + (uint64_t)fprintf(f, "}}");
            sep = ",\n";
        }
    } else {
        fprintf(stderr, "unknown adversarial kind %s\n", kind);
        fclose(f);
        return 2;
    }
    fputs("\n]}\n", f);
    if (fclose(f) != 0) { perror(path); return 1; }
    return 0;
}

/* A CUDA-graph replay trace of about MB megabytes, the shape of a decode loop under
 * torch.cuda.graphs: one CUDAGraph::replay op and one cudaGraphLaunch per replay, then the
 * replay's 64 kernels (an RMSNorm, rotary, SwiGLU-like mix) in compact one-line events. */
static int gen_graph(const char *path, double mb)
{
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); return 1; }
    static char iobuf[1 << 20];
    setvbuf(f, iobuf, _IOFBF, sizeof iobuf);
    static const char *const k[] = {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int)",
                                    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float>)",
                                    "void at::native::vectorized_elementwise_kernel<4, at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}, at::detail::Array<char*, 2> >(int)",
                                    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
                                    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}, at::detail::Array<char*, 2> >(int)",
                                    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t> >(pytorch_flash::Flash_fwd_params)"};
    fprintf(f, "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", "
               "\"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}], \"traceEvents\": [\n");
    uint64_t target = (uint64_t)(mb * 1e6), written = 0, ts = 1000;
    for (long long r = 0; written < target; r++) {
        written += (uint64_t)fprintf(f, "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"CUDAGraph::replay\",\"pid\":7,\"tid\":7,"
                                        "\"ts\":%llu,\"dur\":20},\n{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaGraphLaunch\","
                                        "\"pid\":7,\"tid\":7,\"ts\":%llu,\"dur\":12,\"args\":{\"correlation\":%lld}},\n",
                                     (unsigned long long)ts, (unsigned long long)ts + 2, r + 1);
        uint64_t g = ts + 15;
        for (int i = 0; i < 64; i++) {
            int kk = i % 16 < 8 ? i % 3 : 3 + i % 3;
            int d = kk == 3 ? 20 : kk == 5 ? 30 : 3;
            written += (uint64_t)fprintf(f, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"pid\":0,\"tid\":7,\"ts\":%llu,"
                                            "\"dur\":%d,\"args\":{\"device\":0,\"stream\":7,\"correlation\":%lld}},\n",
                                         k[kk], (unsigned long long)g, d, r + 1);
            g += (uint64_t)d + 1;
        }
        ts = g + 5;
    }
    fprintf(f, "{\"ph\":\"i\",\"name\":\"end\",\"ts\":%llu}]}\n", (unsigned long long)ts);
    if (fclose(f) != 0) { perror(path); return 1; }
    return 0;
}

static int cb0(void *c) { (void)c; return 1; }
static int cbb(void *c, int b) { (void)c; (void)b; return 1; }
static int cbn(void *c, const char *s, size_t n) { (void)c; (void)s; (void)n; return 1; }
static int cbs(void *c, const unsigned char *s, size_t n) { (void)c; (void)s; (void)n; return 1; }

static int yajl_only(const char *path)
{
    static const yajl_callbacks cbs_ = {cb0, cbb, NULL, NULL, cbn, cbs, cb0, cbs, cb0, cb0, cb0};
    uint64_t t0 = fa_now_ns();
    double c0 = cpu_s();
    gzFile g = gzopen(path, "rb");
    if (!g) { perror(path); return 1; }
    gzbuffer(g, 256 * 1024);
    unsigned char *buf = malloc(256 * 1024);
    yajl_handle h = yajl_alloc(&cbs_, NULL, NULL);
    yajl_config(h, yajl_dont_validate_strings, 1);
    uint64_t total = 0;
    int n;
    while ((n = gzread(g, buf, 256 * 1024)) > 0) {
        total += (uint64_t)n;
        if (yajl_parse(h, buf, (size_t)n) != yajl_status_ok) break;
    }
    yajl_complete_parse(h);
    yajl_free(h);
    gzclose(g);
    free(buf);
    double s = (fa_now_ns() - t0) / 1e9, c = cpu_s() - c0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    printf("yajl-only %-52s json %8.1f MB  %7.3f s  %7.1f MB/s wall  %7.1f MB/s cpu  peak RSS %7.1f MB\n", base,
           total / 1e6, s, total / 1e6 / s, total / 1e6 / c, peak_rss_mb());
    return 0;
}

static int import(const char *path)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = NULL;
    fa_import_stats st;
    double c0 = cpu_s();
    fa_status s = fa_import_file(ctx, path, NULL, &t, &st);
    double cpu = cpu_s() - c0;
    double rss = peak_rss_mb();
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (s != FA_OK) {
        printf("import    %-60s %s: %s\n", base, fa_status_name(s), fa_ctx_errmsg(ctx));
    } else {
        double sec = st.elapsed_ns / 1e9;
        printf("import    %-52s file %8.1f MB  parsed %8.1f MB  %7.3f s  %7.1f MB/s wall  %7.1f MB/s cpu  "
               "peak RSS %7.1f MB (%.0f%% of parsed)  events %llu kernels %llu orphans %llu inversions %llu\n",
               base, st.file_bytes / 1e6, st.input_bytes / 1e6, sec, st.input_bytes / 1e6 / sec,
               st.input_bytes / 1e6 / cpu, rss,
               100.0 * rss * 1e6 / (double)(st.input_bytes ? st.input_bytes : 1),
               (unsigned long long)st.n_events, (unsigned long long)st.n_kernels,
               (unsigned long long)st.n_orphans, (unsigned long long)st.n_clock_inversions);
    }
    fa_trace_free(t);
    fa_ctx_free(ctx);
    return s == FA_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "gen") == 0) return gen(argv[2], atof(argv[3]));
    if (argc == 5 && strcmp(argv[1], "adv") == 0) return gen_adversarial(argv[2], argv[3], atof(argv[4]));
    if (argc == 4 && strcmp(argv[1], "graph") == 0) return gen_graph(argv[2], atof(argv[3]));
    if (argc == 3 && strcmp(argv[1], "import") == 0) return import(argv[2]);
    if (argc == 3 && strcmp(argv[1], "yajl") == 0) return yajl_only(argv[2]);
    fprintf(stderr, "usage: bench_import gen PATH MB | adv KIND PATH MB | graph PATH MB | import PATH | yajl PATH\n");
    return 2;
}
