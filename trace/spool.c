/* trace/spool — the builder takes records in any order (a streaming import: Kineto files are often
 * far out of time order, one CUPTI buffer after another) and analyses them at finish, when what
 * the analysis needs of the whole trace is known (its profiler steps, its median launch call):
 * records are sorted through runs of RUN_RECS in a temporary file ($TMPDIR, unlinked at once) and
 * merged through MERGE_BUDGET bytes of buffers, in (device, stream, start, end, arrival) order, so
 * memory stays bounded. */
#include "trace/trace-impl.h"

#include <errno.h>
#include <unistd.h>

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
        if (!dir || dir[0] != '/') dir = "/tmp"; /* a relative TMPDIR is ignored, as everywhere */
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
        uint64_t *nl = fa__ta_grow(b->run_len, &b->cap_runs, b->n_runs + 1, sizeof *nl);
        if (!nl) return fa__ta_nomem(ctx, b);
        b->run_len = nl;
    }
    qsort_r(b->run, b->nrun, sizeof *b->run, srec_cmp, b);
    if (fwrite(b->run, sizeof *b->run, b->nrun, b->sf) != b->nrun) return spool_io(ctx, b, "write");
    b->run_len[b->n_runs++] = b->nrun;
    b->nrun = 0;
    return FA_OK;
}

fa_status fa__ta_spool_add(fa_ctx *ctx, fa_ta_builder *b, strm *s, const rec *r)
{
    if (!b->run && !(b->run = malloc(RUN_RECS * sizeof *b->run))) return fa__ta_nomem(ctx, b);
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
    if (!(r.flags & RF_BARRIER)) fa__ta_graph_take(b, &r);
    /* a trace with profiler steps: the advice is the steps'. A kernel launched before the first
     * step (or before the trace: an orphan) or after the last ran in the window only because the
     * GPU lagged the CPU; it is counted, not analysed. */
    if (b->n_steps && !(r.flags & RF_BARRIER) &&
        (!r.launch_start || r.launch_start < b->step_first || r.launch_start > b->step_last)) {
        b->n_outside++;
        b->outside_ns += fa__ta_dur(&r);
        return FA_OK;
    }
    return fa__ta_analyze(ctx, b, s, &r);
}

/* every record, in order: the last run from memory when it is the only one, else a k-way
 * merge of the runs in the file, each read through a buffer of its share of MERGE_BUDGET */
fa_status fa__ta_spool_drain(fa_ctx *ctx, fa_ta_builder *b)
{
    fa_status s = FA_OK;
    if (!b->n_runs) {
        if (!b->nrun) return FA_OK; /* no GPU record at all */
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
        s = fa__ta_nomem(ctx, b);
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

void fa__ta_spool_free(fa_ta_builder *b)
{
    free(b->run);
    free(b->run_len);
    if (b->sf) fclose(b->sf);
    b->run = NULL;
    b->run_len = NULL;
    b->sf = NULL;
}
