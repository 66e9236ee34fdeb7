#!/usr/bin/env bash
# bench/bench_masked_exp.sh — the vectorised expf the generated kernels call, on ordinary softmax
# rows (x - max in [-4.9, 0]) and on masked rows (3 of 4 values -1e4, Hugging Face's mask), linked
# as applier/compile.c links them (SLEEF's GNU-ABI library first) and against glibc's libmvec alone.
# Prints ms per 65536 exps, median of REPS (default 7) runs of 200 repetitions. Asserts nothing.
set -euo pipefail
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/m.c" <<'C'
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#pragma omp declare simd notinbranch
float expf(float);
#define N (1 << 16)
static float x[N], y[N];
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) { double p = *(const double *)a, q = *(const double *)b; return p < q ? -1 : p > q; }
int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    for (int masked = 0; masked < 2; masked++) {
        for (int i = 0; i < N; i++) x[i] = masked && (i % 4) ? -10000.f : -(float)(i % 50) * 0.1f;
        double t[64];
        for (int r = 0; r < reps && r < 64; r++) {
            double t0 = now();
            for (int k = 0; k < 200; k++) {
#pragma omp simd
                for (int i = 0; i < N; i++) y[i] = expf(x[i]);
            }
            t[r] = (now() - t0) / 200 * 1e3;
        }
        qsort(t, (size_t)reps, sizeof t[0], cmp);
        printf(" %s %.3f", masked ? "masked" : "plain", t[reps / 2]);
    }
    printf(" (y[1]=%g)\n", y[1]);
    return 0;
}
C
for libs in "-lsleefgnuabi -lm" "-lm"; do
  cc -O3 -march=native -fopenmp -o "$tmp/m" "$tmp/m.c" $libs
  printf "%-20s ms/64k:" "$libs"; "$tmp/m" "${REPS:-7}"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
