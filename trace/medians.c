/* trace/medians — streaming medians of the trace advice: exact up to 64 values, then a log
 * histogram with 3% bins (within 1.5%), so memory per series is bounded whatever the records. */
#include "trace/trace-impl.h"

#include <math.h>

#define QH_BASE 1.03

static int qh_bin(int64_t v)
{
    int b = (int)(log((double)v) / log(QH_BASE));
    return b < 0 ? 0 : b >= QH_BINS ? QH_BINS - 1 : b;
}

bool fa__qh_add(qhist *q, int64_t v)
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
int64_t fa__qh_median(qhist *q)
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

void fa__qh_free(qhist *q)
{
    free(q->exact);
    free(q->bins);
}

size_t fa__qh_bytes(const qhist *q)
{
    return (q->exact ? QH_EXACT * sizeof(int64_t) : 0) + (q->bins ? QH_BINS * sizeof(uint32_t) : 0);
}
