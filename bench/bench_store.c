/* bench/bench_store — insert throughput of the run database: stores synthetic traces of 100k
 * and 1M activity records (one run each, one transaction per put_trace) and prints records/s
 * for the insert, the read back (fa_store_load_trace) and the per-op table, and this process's
 * peak RSS after each step (getrusage ru_maxrss; a PostgreSQL server's own memory is not in it).
 * usage: bench_store [DB_PATH | postgresql://URI]   (default: a fresh file in $TMPDIR, removed
 * afterwards; a URI stores into that server, e.g. one from scripts/pg-test-server.sh start) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"

#ifdef FA_HAVE_LIBPQ
#include <libpq-fe.h>
#endif

/* A local PostgreSQL server's CPU time for the store's connection (its backend process, found
 * through pg_stat_activity by application_name 'fuse-advise'; /proc/PID/stat utime + stime):
 * the server's share of the work, which the client's wall time under load does not separate.
 * -1 when unknown (not a server URI, the server is remote, built without libpq). */
static const char *g_uri;
static double server_cpu_s(void)
{
#ifdef FA_HAVE_LIBPQ
    if (!g_uri) return -1;
    PGconn *c = PQconnectdb(g_uri);
    double v = -1;
    if (PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, "SELECT pid FROM pg_stat_activity WHERE application_name = 'fuse-advise' "
                                "AND pid <> pg_backend_pid() ORDER BY backend_start DESC LIMIT 1");
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
            char path[64], buf[1024];
            snprintf(path, sizeof path, "/proc/%s/stat", PQgetvalue(r, 0, 0));
            FILE *f = fopen(path, "r");
            size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
            if (f) fclose(f);
            buf[n] = 0;
            char *p = strrchr(buf, ')');
            unsigned long long ut = 0, stt = 0;
            /* fields after ")": state(3) ... utime(14) stime(15) */
            if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stt) == 2)
                v = (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
        }
        PQclear(r);
    }
    PQfinish(c);
    return v;
#else
    return -1;
#endif
}

/* Records shaped like a CPU executor run: `nodes` nodes per iteration, every field set. */
static fa_trace *synth(size_t n, int nodes)
{
    fa_trace *t = fa_trace_create("cpu-executor");
    if (!t) return NULL;
    t->device_name = fa_trace_intern(t, "bench cpu");
    t->n_iters = (int)(n / (size_t)nodes);
    static const char *const ops[] = {"Conv", "BatchNormalization", "Relu", "Add", "MatMul", "Softmax"};
    fa_rng r;
    fa_rng_seed(&r, 42);
    uint64_t clock = 1000000000ull;
    for (size_t i = 0; i < n; i++) {
        fa_activity a = fa_activity_init(FA_ACT_KERNEL);
        int node = (int)(i % (size_t)nodes);
        char nm[64];
        snprintf(nm, sizeof nm, "%s_%d", ops[node % 6], node);
        a.name = fa_trace_intern(t, nm);
        a.node_name = a.name;
        a.op_type = fa_trace_intern(t, ops[node % 6]);
        a.node = node;
        a.iter = (int32_t)(i / (size_t)nodes);
        a.stream = 1234;
        a.tid = 5678;
        a.start_ns = clock;
        clock += 2000 + fa_rng_u64(&r) % 100000;
        a.end_ns = clock;
        clock += 300;
        a.bytes_read = fa_rng_u64(&r) % (64u << 20);
        a.bytes_written = fa_rng_u64(&r) % (16u << 20);
        a.flops = fa_rng_u64(&r) % (1ull << 32);
        if (!fa_trace_add(t, &a)) {
            fa_trace_free(t);
            return NULL;
        }
    }
    return t;
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Peak resident set of this process so far, MiB (Linux: ru_maxrss in KiB). */
static double peak_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

static int bench(fa_ctx *ctx, fa_store *st, size_t n)
{
    fa_trace *t = synth(n, 161); /* 161: ResNet-50's live node count after BN is kept */
    if (!t) {
        fprintf(stderr, "bench_store: out of memory building %zu records\n", n);
        return 1;
    }
    fa_run_info info = {0};
    info.kind = "run";
    info.model_path = "bench:synthetic";
    info.target = "cpu";
    info.iters = t->n_iters;
    int64_t id;
    fa_status s = fa_store_run_begin(ctx, st, &info, &id);
    double srv0 = server_cpu_s();
    uint64_t t0 = fa_now_ns(), c0 = cpu_ns();
    if (!s) s = fa_store_put_trace(ctx, st, id, t);
    uint64_t t1 = fa_now_ns(), c1 = cpu_ns();
    double rss_insert = peak_rss_mib();
    double srv1 = server_cpu_s();
    if (!s) s = fa_store_run_finish(ctx, st, id, true, NULL);
    fa_trace *back = NULL;
    uint64_t t2 = fa_now_ns();
    if (!s) s = fa_store_load_trace(ctx, st, id, &back);
    uint64_t t3 = fa_now_ns();
    double rss_load = peak_rss_mib();
    fa_arena *ar = fa_arena_create(0);
    fa_op_row *rows = NULL;
    size_t nr = 0;
    int iters = 0;
    if (!s) s = fa_store_op_table(ctx, st, id, ar, &rows, &nr, &iters);
    uint64_t t4 = fa_now_ns();
    if (s) {
        fprintf(stderr, "bench_store: %s\n", fa_ctx_errmsg(ctx));
    } else {
        double ins = (double)(t1 - t0) / 1e9, rd = (double)(t3 - t2) / 1e9, op = (double)(t4 - t3) / 1e9;
        printf("%8zu records: insert %.3f s wall, %.3f s cpu (%.0f records/s), load %.3f s (%.0f records/s), "
               "op table %.3f s (%zu ops x %d iters); peak RSS %.0f MiB after insert, %.0f MiB after load\n",
               n, ins, (double)(c1 - c0) / 1e9, (double)n / ins, rd, (double)n / rd, op, nr, iters, rss_insert,
               rss_load);
        if (srv0 >= 0 && srv1 >= 0) printf("%8s  server process cpu during the insert: %.2f s\n", "", srv1 - srv0);
    }
    fa_arena_free(ar);
    fa_trace_free(back);
    fa_trace_free(t);
    return s ? 1 : 0;
}

int main(int argc, char **argv)
{
    char path[4096];
    bool temp = argc < 2;
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "usage: bench_store [DB_PATH | postgresql://URI]\n");
        return 2;
    }
    if (temp) {
        const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(path, sizeof path, "%s/bench_store_%d.db", base, (int)getpid());
    } else {
        snprintf(path, sizeof path, "%s", argv[1]);
    }
    if (fa_store_path_is_pg(path)) g_uri = path;
    fa_ctx *ctx = fa_ctx_create();
    fa_store *st = NULL;
    if (fa_store_open(ctx, path, &st)) {
        fprintf(stderr, "bench_store: %s\n", fa_ctx_errmsg(ctx));
        return 1;
    }
    printf("bench_store: %s (%s back end; SQLite %s)\n", fa_store_path(st), fa_store_backend_name(st),
           sqlite3_libversion());
    int rc = bench(ctx, st, 100000);
    if (!rc) rc = bench(ctx, st, 1000000);
    fa_store_close(st);
    fa_ctx_free(ctx);
    if (temp) {
        char p2[4200];
        unlink(path);
        snprintf(p2, sizeof p2, "%s-wal", path);
        unlink(p2);
        snprintf(p2, sizeof p2, "%s-shm", path);
        unlink(p2);
    }
    return rc;
}
