/* roofline/cuda_ceilings — measured GPU ceilings (HBM bandwidth, FP32 FMA peak, launch latency)
 * stored per device with its clocks; "theoretical" per-SM limits from the table without a GPU.
 * Built only with the CUDA toolkit (FA_HAVE_CUDA). docs/cuda.md. */
#ifndef FA_ROOFLINE_CUDA_CEILINGS_H
#define FA_ROOFLINE_CUDA_CEILINGS_H

#include "roofline/roofline.h"

/* Device key "cuda:<name>:sm_XY" of device `ordinal` into buf; FA_ERR_UNSUPPORTED without a
 * driver/device. */
fa_status fa_roofline_cuda_key(fa_ctx *ctx, int ordinal, char *buf, size_t cap);

/* Measure device `ordinal` (about 1-2 s):
 * - HBM bandwidth: triad a[i] = b[i] + s*c[i] (STREAM, McCalpin) on 3 float arrays of
 *   max(256 MiB, 8 x L2) each, 12 bytes per element (2 reads + 1 write), best of 10 launches
 *   timed with CUDA events; GB/s = 1e9 B/s.
 * - FP32 peak: 8 independent FMA chains per thread (fa_fma_peak), sm_count x 8 blocks of 256
 *   threads, 2 FLOP per FMA, best of 5.
 * - launch latency: 2000 back-to-back empty-kernel launches, per-launch time (launch_ns), and
 *   200 launch+synchronize round trips (detail).
 * FA_ERR_UNSUPPORTED without a driver or device; FA_ERR_RUNTIME for CUDA failures. */
fa_status fa_roofline_measure_cuda(fa_ctx *ctx, int ordinal, fa_ceilings *out);

/* Ceilings of device `ordinal` from the run database (names mem_bw, fp32_peak, launch under
 * the device key) or measured and stored there with the clocks (sm_clock, mem_clock kHz,
 * sm_count, l2_bytes, launch_sync) when absent or `remeasure`. st may be NULL. */
fa_status fa_roofline_cuda_ceilings(fa_ctx *ctx, fa_store *st, int ordinal, bool remeasure, fa_ceilings *out);

/* Without a GPU: store the per-SM limits of `arch` ("sm_90") from the limits table as ceilings
 * of kind "limit", source "theoretical", under "cuda:theoretical:<arch>". FA_ERR_INPUT for an
 * arch not tabled. Returns the number stored in *n_stored (may be NULL). */
fa_status fa_roofline_cuda_theoretical(fa_ctx *ctx, fa_store *st, const char *arch, int *n_stored);

#endif
