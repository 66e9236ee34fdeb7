/* cli/cmd_devices — `fuse-advise devices [--measure] [--threads N] [--json] [--db PATH]`: the
 * device ceilings the roofline uses, and where each came from. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "roofline/roofline.h"
#include "store/store.h"

static const char *k_about =
    "  cpu ceilings are measured at first use and cached in the run database per device;\n"
    "  --measure re-measures (the best bandwidth measured so far is kept and shown\n"
    "  beside the new one). CUDA limits come from the per-compute-capability table\n"
    "  (theoretical without a GPU); --arch selects one (default: all tabled).\n";

/* True when the run database already holds target t's fp32 peak for its device key with
 * `threads` (fa_roofline_ceilings will read them, not measure). */
static bool ceilings_cached(fa_store *st, fa_target t, int threads)
{
    const fa_target_iface *ti = fa_target_get(t);
    char key[512];
    fa_ctx *c = fa_ctx_create();
    fa_arena *ar = fa_arena_create(4096);
    fa_ceiling *rows = NULL;
    size_t n = 0;
    bool have = false;
    if (c && ar && ti && !fa_target_device_key(c, ti, threads, key, sizeof key) &&
        !fa_store_get_ceilings(c, st, key, ar, &rows, &n))
        for (size_t i = 0; i < n && !have; i++) have = !strcmp(rows[i].name, "fp32_peak");
    fa_arena_free(ar);
    fa_ctx_free(c);
    return have;
}

int fa_cmd_devices(fa_ctx *ctx, int argc, char **argv)
{
    const char *db = fa_cli_default_db(), *arch = NULL;
    bool json = false, measure = false;
    int threads = 0;
    const fa_cli_opt opts[] = {
        FA_CLI_FLAG("--measure", &measure, "measure the cpu ceilings again"),
        FA_CLI_OPT_THREADS(&threads),
        FA_CLI_OPT_JSON(&json),
        FA_CLI_OPT_DB(&db),
        FA_CLI_STRING("--arch", "sm_XY", &arch, "one tabled CUDA architecture"),
        FA_CLI_END,
    };
    const fa_cli_spec spec = {.verb = "devices", .synopsis = "[options]", .about = k_about, .opts = opts};
    fa_cli_args args;
    int prc = fa_cli_parse(ctx, &spec, argc, argv, &args);
    if (prc >= 0) return prc;
    if (arch && !fa_cuda_limits_for_arch(arch)) return fa_cli_usage("devices", "unknown --arch '%s' (tabled: sm_70 sm_75 sm_80 sm_86 sm_89 sm_90)", arch);
    if (threads == 0) threads = sysconf(_SC_NPROCESSORS_ONLN);
    fa_store *st = NULL;
    fa_status s = fa_store_open(ctx, db, &st);
    if (s) return fa_cli_fail(ctx, s);
    fa_ceilings c;
    if (fa_cli_is_tty() && !json && (measure || !ceilings_cached(st, FA_TARGET_CPU, (int)threads)))
        fa_cli_eprintf("measuring cpu ceilings (first use takes a few seconds)...\n");
    s = fa_roofline_cpu_ceilings(ctx, st, (int)threads, measure, &c);
    /* every other target of this build with a device present (a GPU): its measured ceilings */
    fa_ceilings gc[FA_TARGET_COUNT];
    const fa_target_iface *gt[FA_TARGET_COUNT];
    int n_gpu = 0;
    for (int i = 0; !s && fa_target_at(i) && n_gpu < FA_TARGET_COUNT; i++) {
        const fa_target_iface *t = fa_target_at(i);
        if (!fa_target_has(fa_target_id(t), FA_TARGET_CAP_ACCELERATOR) || !fa_target_available(t)) continue;
        s = fa_roofline_ceilings(ctx, st, fa_target_id(t), 0, measure, &gc[n_gpu]);
        if (!s) gt[n_gpu++] = t;
    }
    bool have_gpu = n_gpu > 0;
    fa_store_close(st);
    if (s) return fa_cli_fail(ctx, s);
    for (int i = 0; i < n_gpu && !json; i++)
        fa_cli_printf("%s %s\n  HBM bandwidth %10.2f GB/s (%s)\n  FP32 peak     %10.2f GFLOP/s (%s)\n  launch latency %9.1f ns (%s)\n%s\n\n",
                      fa_target_name(fa_target_id(gt[i])), gc[i].device_key, gc[i].mem_bw_gbs, gc[i].mem_bw_source, gc[i].peak_gflops, gc[i].peak_source,
                      gc[i].launch_ns, gc[i].launch_source, gc[i].detail);
    fa_buf b;
    fa_buf_init(&b);
    if (json) {
        fa_buf_puts(&b, "{\"cpu\":{\"device_key\":");
        fa_json_str_or_empty(&b, c.device_key);
        fa_buf_printf_term(&b, ",\"threads\":%d,\"mem_bw_gbs\":%.3f,\"mem_bw_new_gbs\":", c.threads, c.mem_bw_gbs);
        fa_json_num(&b, c.mem_bw_new_gbs > 0 ? c.mem_bw_new_gbs : NAN, 6);
        fa_buf_puts(&b, ",\"mem_bw_source\":");
        fa_json_str_or_empty(&b, c.mem_bw_source);
        fa_buf_printf_term(&b, ",\"peak_gflops\":%.3f,\"peak_source\":", c.peak_gflops);
        fa_json_str_or_empty(&b, c.peak_source);
        fa_buf_printf_term(&b, ",\"dispatch_ns\":%.1f,\"dispatch_source\":", c.launch_ns);
        fa_json_str_or_empty(&b, c.launch_source);
        fa_buf_puts(&b, ",\"cache_levels\":[");
        for (int i = 0; i < c.n_cache_levels; i++)
        {
            fa_buf_printf_term(&b, "%s{\"name\":\"%s\",\"working_set_bytes\":%llu,\"bandwidth_gbs\":%.3f,\"bandwidth_new_gbs\":",
                               i ? "," : "", c.cache[i].name, (unsigned long long)c.cache[i].working_set, c.cache[i].bandwidth_gbs);
            fa_json_num(&b, c.cache[i].bandwidth_new_gbs > 0 ? c.cache[i].bandwidth_new_gbs : NAN, 6);
            fa_buf_puts(&b, "}");
        }
        fa_buf_puts(&b, "],\"detail\":");
        fa_json_str_or_empty(&b, c.detail);
        fa_buf_puts(&b, "},");
        for (int i = 0; i < n_gpu; i++) {
            fa_buf_printf_term(&b, "\"%s_device\":{\"device_key\":", fa_target_name(fa_target_id(gt[i])));
            fa_json_str_or_empty(&b, gc[i].device_key);
            fa_buf_printf_term(&b, ",\"mem_bw_gbs\":%.3f,\"peak_gflops\":%.3f,\"launch_ns\":%.1f,\"source\":", gc[i].mem_bw_gbs,
                               gc[i].peak_gflops, gc[i].launch_ns);
            fa_json_str_or_empty(&b, gc[i].mem_bw_source);
            fa_buf_puts(&b, "},");
        }
        fa_buf_puts(&b, "\"cuda\":[");
    } else {
        fa_cli_printf("cpu  %s\n", c.device_key);
        fa_cli_printf("  main-memory bandwidth  %10.2f GB/s      (%s", c.mem_bw_gbs, c.mem_bw_source);
        if (c.mem_bw_new_gbs > 0 && c.mem_bw_new_gbs != c.mem_bw_gbs) fa_cli_printf("; measured now %.2f GB/s", c.mem_bw_new_gbs);
        fa_cli_printf(")\n");
        for (int i = 0; i < c.n_cache_levels; i++) {
            fa_cli_printf("  %-6s bandwidth       %10.2f GB/s      (measured, working set %llu KiB", c.cache[i].name,
                          c.cache[i].bandwidth_gbs, (unsigned long long)(c.cache[i].working_set >> 10));
            if (c.cache[i].bandwidth_new_gbs > 0 && c.cache[i].bandwidth_new_gbs != c.cache[i].bandwidth_gbs)
                fa_cli_printf("; best kept, measured now %.2f GB/s", c.cache[i].bandwidth_new_gbs);
            fa_cli_printf(")\n");
        }
        fa_cli_printf("  FP32 peak              %10.2f GFLOP/s   (%s", c.peak_gflops, c.peak_source);
        if (c.peak_new_gflops > 0 && c.peak_new_gflops != c.peak_gflops) fa_cli_printf("; measured now %.2f GFLOP/s", c.peak_new_gflops);
        fa_cli_printf(")\n");
        fa_cli_printf("  dispatch per kernel    %10.1f ns        (%s)\n", c.launch_ns, c.launch_source);
        fa_cli_printf("  ridge point            %10.2f FLOP/byte\n", c.mem_bw_gbs > 0 ? c.peak_gflops / c.mem_bw_gbs : 0);
        if (c.detail[0]) fa_cli_printf("  how: %s\n", c.detail);
        fa_cli_printf(have_gpu ? "\ncuda limits per compute capability (table)\n"
                      : "\ncuda (no GPU here: limits are theoretical, from the table)\n");
        fa_cli_printf("  %-6s %6s %6s %7s %8s %10s %10s %8s\n", "arch", "warps", "blocks", "regs", "smem/SM", "smem/blk", "opt-in", "reserve");
    }
    int first = 1;
    for (int i = 0; i < fa_cuda_limits_count(); i++) {
        const fa_cuda_limits *l = fa_cuda_limits_at(i);
        if (arch && l != fa_cuda_limits_for_arch(arch)) continue;
        if (json) {
            fa_buf_printf_term(&b, "%s{\"arch\":\"%s\",\"source\":\"theoretical\",\"max_warps_per_sm\":%d,\"max_blocks_per_sm\":%d,"
                                   "\"regs_per_sm\":%d,\"max_regs_per_thread\":%d,\"reg_alloc_unit\":%d,\"smem_per_sm\":%d,"
                                   "\"smem_per_block\":%d,\"smem_per_block_optin\":%d,\"smem_reserved_per_block\":%d,\"table_source\":",
                               first ? "" : ",", l->arch, l->max_warps_per_sm, l->max_blocks_per_sm, l->regs_per_sm,
                               l->max_regs_per_thread, l->reg_alloc_unit, l->smem_per_sm, l->smem_per_block,
                               l->smem_per_block_optin, l->smem_reserved_per_block);
            fa_json_str_or_empty(&b, l->source);
            fa_buf_puts(&b, "}");
        } else {
            fa_cli_printf("  %-6s %6d %6d %7d %8d %10d %10d %8d\n", l->arch, l->max_warps_per_sm, l->max_blocks_per_sm,
                          l->regs_per_sm, l->smem_per_sm, l->smem_per_block, l->smem_per_block_optin, l->smem_reserved_per_block);
        }
        first = 0;
    }
    if (json) {
        fa_buf_puts(&b, "]}\n");
        fwrite(b.data, 1, b.len, stdout);
    } else {
        fa_cli_printf("  source: %s\n", fa_cuda_limits_at(0)->source);
    }
    fa_buf_free(&b);
    return 0;
}
