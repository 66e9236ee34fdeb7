/* tests/unit/test_import_nsys — Nsight Systems SQLite import: both export generations, probing
 * of tables/columns, per-process correlation, NVTX attribution, faults, and the corpus export.
 * The small exports are generated here with SQL (schemas follow nsys' documented tables). */
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/import/import.h"
#include "testutil.h"

#define PID_A (100ll << 24) /* globalPid: pid in bits 24.. */
#define PID_B (200ll << 24)

static const char *make_db(const char *name, const char *sql)
{
    const char *path = fa_test_path(fa_test_tmpdir(), name);
    remove(path);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) fprintf(stderr, "sql: %s\n", err);
    assert_int_equal(rc, SQLITE_OK);
    sqlite3_close(db);
    return path;
}

static const char *COMMON_NEW =
    "CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);"
    "INSERT INTO META_DATA_EXPORT VALUES('EXPORT_SCHEMA_VERSION','3.13.2'),"
    " ('EXPORT_HOST','secret-host-name'),('EXPORT_USER','secret-user-name');"
    "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
    "INSERT INTO StringIds VALUES(1,'cudaLaunchKernel'),(2,'gemm'),(3,'relu'),(4,'layer1'),"
    " (6,'void gemm<float>(float*)'),(7,'void relu<float>(float*)'),(8,'cudaMemcpyAsync'),"
    " (9,'skewed'),(10,'void skewed()');"
    "CREATE TABLE TARGET_INFO_GPU(id INTEGER, name TEXT, smCount INTEGER, computeMajor INTEGER,"
    " computeMinor INTEGER, totalMemory INTEGER, maxWarpsPerSm INTEGER, threadsPerWarp INTEGER);"
    "INSERT INTO TARGET_INFO_GPU VALUES(0,'NVIDIA Test GPU',108,8,0,85899345920,64,32);";

static const char *KERNEL_NEW =
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " deviceId INTEGER, contextId INTEGER, greenContextId INTEGER, streamId INTEGER,"
    " correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,"
    " registersPerThread INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER,"
    " blockY INTEGER, blockZ INTEGER, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER,"
    " localMemoryPerThread INTEGER);";

static const char *RUNTIME =
    "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER,"
    " returnValue INTEGER, callchainId INTEGER);";

static char *cat(const char *a, const char *b, const char *c, const char *d)
{
    static char buf[8192];
    snprintf(buf, sizeof buf, "%s%s%s%s", a, b ? b : "", c ? c : "", d ? d : "");
    return buf;
}

static const fa_activity *find(const fa_trace *t, const char *name)
{
    for (size_t i = 0; i < t->n_acts; i++)
        if (t->acts[i].name && strcmp(t->acts[i].name, name) == 0) return &t->acts[i];
    return NULL;
}

static fa_trace *import_ok(const char *path, fa_import_stats *st)
{
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = NULL;
    fa_status s = fa_import_nsys(ctx, path, &t, st);
    if (s != FA_OK) fprintf(stderr, "import failed: %s\n", fa_ctx_errmsg(ctx));
    assert_int_equal(s, FA_OK);
    fa_ctx_free(ctx);
    return t;
}

static const char *import_fail(const char *path, fa_status want)
{
    static char msg[1024];
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = (fa_trace *)0x1;
    fa_status s = fa_import_nsys(ctx, path, &t, NULL);
    snprintf(msg, sizeof msg, "%s", fa_ctx_errmsg(ctx));
    fa_ctx_free(ctx);
    if (s != want) fprintf(stderr, "status %d: %s\n", s, msg);
    assert_int_equal(s, want);
    assert_ptr_equal(t, (fa_trace *)0x1);
    return msg;
}

static const char *ROWS_NEW =
    /* process A (pid 100, thread 101) and B (pid 200, thread 201) both use correlation id 1 */
    "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES(900,950,0,(100<<24)+101,1,1,0,0),"
    " (1000,1050,0,(200<<24)+201,1,1,0,0),(1200,1210,0,(100<<24)+101,2,8,0,0),"
    " (5100,5120,0,(100<<24)+101,3,1,0,0);"
    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES"
    " (1000,2000,0,1,NULL,7,1,100<<24,6,2,64,4,2,1,128,1,1,1024,2048,16),"
    " (1100,1500,0,1,NULL,13,1,200<<24,7,3,32,8,1,1,256,1,1,0,0,0),"
    " (5000,5050,0,1,NULL,7,3,100<<24,10,9,16,1,1,1,32,1,1,0,0,0);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(start INTEGER, end INTEGER, deviceId INTEGER,"
    " contextId INTEGER, greenContextId INTEGER, streamId INTEGER, correlationId INTEGER,"
    " globalPid INTEGER, bytes INTEGER, copyKind INTEGER);"
    "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES(1220,1300,0,1,NULL,7,2,100<<24,4096,1);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET(start INTEGER, end INTEGER, deviceId INTEGER,"
    " streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER);"
    "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES(3000,3010,0,7,77,100<<24,512);"
    "CREATE TABLE NVTX_EVENTS(start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,"
    " rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,"
    " endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);"
    "INSERT INTO NVTX_EVENTS VALUES(800,3000,59,NULL,NULL,NULL,NULL,(100<<24)+101,NULL,4,0),"
    " (850,960,59,NULL,NULL,NULL,'matmul',(100<<24)+101,NULL,NULL,0),"
    " (880,NULL,34,NULL,NULL,NULL,'a mark',(100<<24)+101,NULL,NULL,0);";

static void test_nsys_new_schema_kernels_linked_by_correlation_within_process(void **state)
{
    (void)state;
    const char *path = make_db("new.sqlite", cat(COMMON_NEW, KERNEL_NEW, RUNTIME, ROWS_NEW));
    assert_int_equal(fa_import_detect(path), FA_IMPORT_NSYS_SQLITE);
    fa_import_stats st;
    fa_trace *t = import_ok(path, &st);
    assert_string_equal(st.schema, "nsys 3.13.2");
    assert_int_equal(st.n_kernels, 3);
    assert_int_equal(st.n_runtime, 4);
    assert_int_equal(st.n_memcpy, 1);
    assert_int_equal(st.n_memset, 1);
    assert_int_equal(st.n_ranges, 2); /* the mark is not a range */
    assert_int_equal(st.n_duplicate_correlations, 0); /* same id, different processes */
    const fa_activity *g = find(t, "void gemm<float>(float*)"); /* demangledName preferred */
    assert_non_null(g);
    assert_int_equal(g->pid, PID_A);
    assert_int_equal(g->tid, PID_A + 101);
    assert_int_equal(g->stream, 7);
    assert_int_equal(g->start_ns, 1000);
    assert_int_equal(g->end_ns, 2000);
    assert_int_equal(g->grid[0], 4);
    assert_int_equal(g->grid[1], 2);
    assert_int_equal(g->block[0], 128);
    assert_int_equal(g->registers, 64);
    assert_int_equal(g->static_smem, 1024);
    assert_int_equal(g->dynamic_smem, 2048);
    assert_int_equal(g->local_mem, 16);
    const fa_activity *r = find(t, "void relu<float>(float*)");
    assert_int_equal(r->pid, PID_B); /* linked to B's launch, not A's */
    assert_int_equal(r->tid, PID_B + 201);
    assert_int_equal(r->flags & (FA_ACTF_ORPHAN | FA_ACTF_CLOCK_INVERSION), 0);
    /* concurrency across streams kept: relu runs inside gemm's interval on stream 13 */
    assert_int_equal(r->stream, 13);
    assert_true(r->start_ns > g->start_ns && r->end_ns < g->end_ns);
    const fa_activity *m = find(t, "Memcpy HtoD");
    assert_non_null(m);
    assert_int_equal(m->bytes_read, 4096);
    assert_int_equal(m->flags & FA_ACTF_ORPHAN, 0);
    assert_true(find(t, "Memset")->flags & FA_ACTF_ORPHAN);
    assert_int_equal(st.n_orphans, 1);
    assert_string_equal(t->device_name, "NVIDIA Test GPU");
    assert_int_equal(st.devices[0].sm_count, 108);
    assert_int_equal(st.devices[0].max_threads_per_sm, 2048);
    /* host and user names from the metadata never reach the trace */
    for (size_t i = 0; i < t->n_acts; i++) assert_null(strstr(t->acts[i].name, "secret"));
    fa_trace_free(t);
}

static void test_nsys_nvtx_innermost_range_on_launch_thread_names_kernel(void **state)
{
    (void)state;
    const char *path = make_db("nvtx.sqlite", cat(COMMON_NEW, KERNEL_NEW, RUNTIME, ROWS_NEW));
    fa_import_stats st;
    fa_trace *t = import_ok(path, &st);
    /* gemm launched at 900 on A/101: inside layer1 [800,3000] and matmul [850,960] */
    assert_string_equal(find(t, "void gemm<float>(float*)")->op_type, "matmul");
    assert_string_equal(find(t, "void gemm<float>(float*)")->node_name, "matmul");
    /* memcpy launched at 1200: only layer1 (textId -> StringIds) */
    assert_string_equal(find(t, "Memcpy HtoD")->op_type, "layer1");
    /* relu launched on B's thread: A's ranges do not apply */
    assert_null(find(t, "void relu<float>(float*)")->op_type);
    fa_trace_free(t);
}

static void test_nsys_clock_inversion_linked_and_counted(void **state)
{
    (void)state;
    const char *path = make_db("skew.sqlite", cat(COMMON_NEW, KERNEL_NEW, RUNTIME, ROWS_NEW));
    fa_import_stats st;
    fa_trace *t = import_ok(path, &st);
    const fa_activity *k = find(t, "void skewed()");
    assert_true(k->flags & FA_ACTF_CLOCK_INVERSION);
    assert_int_equal(k->flags & FA_ACTF_ORPHAN, 0);
    assert_int_equal(k->tid, PID_A + 101);
    assert_int_equal(st.n_clock_inversions, 1);
    fa_trace_free(t);
}

static void test_nsys_old_schema_export_meta_data_short_names_suffixed_nvtx(void **state)
{
    (void)state;
    const char *sql =
        "CREATE TABLE EXPORT_META_DATA(name TEXT, value TEXT);"
        "INSERT INTO EXPORT_META_DATA VALUES('EXPORT_SCHEMA_VERSION','2.7.1');"
        "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO StringIds VALUES(1,'cudaLaunchKernel'),(2,'old_kernel'),(3,'step');"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER,"
        " contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,"
        " shortName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER,"
        " blockY INTEGER, blockZ INTEGER);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES(100,110,0,1,7,5,100<<24,2,1,1,1,32,1,1);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, end INTEGER, eventClass INTEGER,"
        " globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES(90,95,0,(100<<24)+7,5,1,0);"
        "CREATE TABLE NVTX_EVENTS_V2(start INTEGER, end INTEGER, eventType INTEGER, text TEXT,"
        " globalTid INTEGER);"
        "INSERT INTO NVTX_EVENTS_V2 VALUES(80,200,59,'step',(100<<24)+7);";
    const char *path = make_db("old.sqlite", sql);
    fa_import_stats st;
    fa_trace *t = import_ok(path, &st);
    assert_string_equal(st.schema, "nsys 2.7.1");
    assert_int_equal(st.n_kernels, 1);
    const fa_activity *k = find(t, "old_kernel");
    assert_non_null(k);
    assert_int_equal(k->registers, 0); /* column absent: unknown */
    assert_int_equal(k->block[0], 32);
    assert_int_equal(k->flags & FA_ACTF_ORPHAN, 0);
    assert_string_equal(k->op_type, "step");
    assert_null(t->device_name); /* no TARGET_INFO_GPU */
    fa_trace_free(t);
}

/* nsys 2021 exports (EXPORT_META_DATA, pipit's saxpy-mpi-cuda_nsys_perlmutter0.sqlite) record each
 * runtime call twice, the call and its versioned entry point nested in it with the same correlation
 * id: 38 "duplicate correlations" in a 95-row table, every call counted twice, and each kernel linked
 * to the inner "cudaLaunchKernel_v7000". One call is one record; a second call that only shares the
 * correlation id (not nested, or not its versioned name) is still a duplicate. */
static void test_nsys_versioned_runtime_rows_are_one_call(void **state)
{
    (void)state;
    const char *sql =
        "CREATE TABLE EXPORT_META_DATA(name TEXT, value TEXT);"
        "INSERT INTO EXPORT_META_DATA VALUES('EXPORT_SCHEMA_VERSION','2.9.1');"
        "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO StringIds VALUES(1,'cudaLaunchKernel'),(2,'saxpy'),(3,'cudaLaunchKernel_v7000'),"
        " (4,'cudaMemcpy'),(5,'cudaMemcpy_v3020'),(6,'cudaLaunchKernel_vX');"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER,"
        " contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,"
        " shortName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER,"
        " blockY INTEGER, blockZ INTEGER);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES(200,210,0,1,7,140,100<<24,2,1,1,1,32,1,1),"
        " (400,410,0,1,7,160,100<<24,2,1,1,1,32,1,1);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, end INTEGER, eventClass INTEGER,"
        " globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES(100,190,0,(100<<24)+7,140,1,0),"
        " (101,189,0,(100<<24)+7,140,3,0),"
        " (20,60,0,(100<<24)+7,138,4,0),(21,59,0,(100<<24)+7,138,5,0),"
        /* not a versioned entry point of the outer call: both kept, one duplicate */
        " (300,390,0,(100<<24)+7,160,1,0),(301,389,0,(100<<24)+7,160,6,0);";
    const char *path = make_db("versioned.sqlite", sql);
    fa_import_stats st;
    fa_trace *t = import_ok(path, &st);
    assert_int_equal(st.n_runtime, 4);
    assert_null(find(t, "cudaLaunchKernel_v7000"));
    assert_null(find(t, "cudaMemcpy_v3020"));
    assert_non_null(find(t, "cudaLaunchKernel_vX"));
    assert_int_equal(st.n_duplicate_correlations, 1);
    assert_int_equal(st.n_orphans, 0);
    fa_trace_free(t);
}

static void test_nsys_missing_kernel_column_named_in_error(void **state)
{
    (void)state;
    const char *sql =
        "CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);"
        "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER,"
        " streamId INTEGER, globalPid INTEGER, shortName INTEGER);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES(1,2,0,7,100<<24,1);";
    const char *msg = import_fail(make_db("nocorr.sqlite", sql), FA_ERR_INPUT);
    assert_non_null(strstr(msg, "CUPTI_ACTIVITY_KIND_KERNEL.correlationId"));
    assert_non_null(strstr(msg, "nocorr.sqlite"));

    const char *sql2 =
        "CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);"
        "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER,"
        " streamId INTEGER, correlationId INTEGER, globalPid INTEGER);";
    msg = import_fail(make_db("noname.sqlite", sql2), FA_ERR_INPUT);
    assert_non_null(strstr(msg, "demangledName"));
}

static void test_nsys_missing_runtime_column_and_string_table_named(void **state)
{
    (void)state;
    const char *sql = cat("CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);"
                          "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);",
                          KERNEL_NEW,
                          "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, end INTEGER,"
                          " globalTid INTEGER, correlationId INTEGER);", NULL);
    const char *msg = import_fail(make_db("rtname.sqlite", sql), FA_ERR_INPUT);
    assert_non_null(strstr(msg, "CUPTI_ACTIVITY_KIND_RUNTIME.nameId"));

    msg = import_fail(make_db("nostrings.sqlite",
                              cat("CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);", KERNEL_NEW, NULL, NULL)),
                      FA_ERR_INPUT);
    assert_non_null(strstr(msg, "StringIds"));
}

static void test_nsys_metadata_only_is_no_gpu_activity(void **state)
{
    (void)state;
    const char *path = make_db("meta.sqlite", "CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);"
                                              "INSERT INTO META_DATA_EXPORT VALUES('EXPORT_SCHEMA_VERSION','3.11.0');");
    fa_import_stats st;
    fa_trace *t = import_ok(path, &st);
    assert_true(st.no_gpu_activity);
    assert_int_equal(t->n_acts, 0);
    assert_string_equal(st.schema, "nsys 3.11.0");
    fa_trace_free(t);
}

static void test_nsys_no_runtime_table_kernels_kept_as_orphans(void **state)
{
    (void)state;
    const char *sql = cat(COMMON_NEW, KERNEL_NEW,
                          "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES"
                          " (1000,2000,0,1,NULL,7,1,100<<24,6,2,64,4,2,1,128,1,1,0,0,0);", NULL);
    fa_import_stats st;
    fa_trace *t = import_ok(make_db("nort.sqlite", sql), &st);
    assert_int_equal(st.n_kernels, 1);
    assert_int_equal(st.n_orphans, 1);
    assert_false(st.no_gpu_activity);
    assert_true(t->acts[0].flags & FA_ACTF_ORPHAN);
    fa_trace_free(t);
}

/* The same kernel table without NOT NULL: SQLite stores any type in any column. */
static const char *KERNEL_LOOSE =
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, contextId, greenContextId, streamId,"
    " correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX,"
    " blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread);";

/* Issue 15: NULL or text start/end read as 0 and reals were clamped, which made 183-second
 * kernels and wrapped ids. A row whose time or id column is not an INTEGER is skipped and
 * counted; a descriptive column of the wrong type is left unknown and counted. */
static void test_nsys_null_text_real_times_or_ids_skip_the_row(void **state)
{
    (void)state;
    const char *sql = cat(COMMON_NEW, KERNEL_LOOSE,
                          "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, correlationId,"
                          " nameId, returnValue, callchainId);",
                          "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES"
                          " (1000,2000,0,1,NULL,7,1,100<<24,6,2,64,4,2,1,128,1,1,0,0,0),"   /* good */
                          " (NULL,2000,0,1,NULL,7,1,100<<24,7,3,64,4,2,1,128,1,1,0,0,0),"   /* NULL start */
                          " (1000,'2000',0,1,NULL,7,1,100<<24,7,3,64,4,2,1,128,1,1,0,0,0)," /* text end */
                          " (1.5e20,2000,0,1,NULL,7,1,100<<24,7,3,64,4,2,1,128,1,1,0,0,0)," /* real start */
                          " (1000,2000,'0',1,NULL,7,1,100<<24,7,3,64,4,2,1,128,1,1,0,0,0)," /* text device */
                          " (1000,2000,0,1,NULL,NULL,1,100<<24,7,3,64,4,2,1,128,1,1,0,0,0),"/* NULL stream */
                          " (1000,2000,0,1,NULL,7,'x',100<<24,7,3,64,4,2,1,128,1,1,0,0,0)," /* text correlation */
                          " (1000,2000,0,1,NULL,7,1,X'00',7,3,64,4,2,1,128,1,1,0,0,0),"     /* blob pid */
                          " (3000,3500,0,1,NULL,7,NULL,100<<24,10,9,'many',1,1,1,32,1,1,0,0,0);" /* kept */
                          "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES(900,950,0,(100<<24)+101,1,1,0,0),"
                          " (NULL,950,0,(100<<24)+101,2,1,0,0),(900,950,0,'tid',3,1,0,0);");
    fa_import_stats st;
    fa_trace *t = import_ok(make_db("badcols.sqlite", sql), &st);
    assert_int_equal(st.n_kernels, 2);
    assert_int_equal(st.n_runtime, 1);
    assert_int_equal(st.n_bad_records, 9);
    const fa_activity *g = find(t, "void gemm<float>(float*)");
    assert_non_null(g);
    assert_int_equal(g->end_ns - g->start_ns, 1000);
    assert_int_equal(g->flags & FA_ACTF_ORPHAN, 0);
    const fa_activity *k = find(t, "void skewed()");
    assert_non_null(k);
    assert_int_equal(k->correlation, -1); /* NULL correlation: unknown, an orphan */
    assert_true(k->flags & FA_ACTF_ORPHAN);
    assert_int_equal(k->registers, 0);    /* 'many': unknown, counted */
    assert_int_equal(st.n_bad_numbers, 1);
    for (size_t i = 0; i < t->n_acts; i++) assert_true(t->acts[i].end_ns - t->acts[i].start_ns < 10000);
    fa_trace_free(t);
}

/* Issue 15: names with a NUL were cut at it, merging kernels. */
static void test_nsys_nul_in_string_ids_never_truncates_or_merges(void **state)
{
    (void)state;
    const char *sql = cat(COMMON_NEW, KERNEL_NEW,
                          "INSERT INTO StringIds VALUES(20, CAST(X'6B0041' AS TEXT)), (21, CAST(X'6B0042' AS TEXT)),"
                          " (22, 'k'), (23, CAST(X'6BFF41' AS TEXT));"
                          "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES"
                          " (1000,2000,0,1,NULL,7,1,100<<24,20,20,0,1,1,1,1,1,1,0,0,0),"
                          " (3000,4000,0,1,NULL,7,2,100<<24,21,21,0,1,1,1,1,1,1,0,0,0),"
                          " (5000,6000,0,1,NULL,7,3,100<<24,22,22,0,1,1,1,1,1,1,0,0,0),"
                          " (7000,8000,0,1,NULL,7,4,100<<24,23,23,0,1,1,1,1,1,1,0,0,0);", NULL);
    fa_import_stats st;
    fa_trace *t = import_ok(make_db("nulnames.sqlite", sql), &st);
    assert_int_equal(t->n_acts, 4);
    assert_non_null(find(t, "k\xEF\xBF\xBD" "00A"));
    assert_non_null(find(t, "k\xEF\xBF\xBD" "00B"));
    assert_non_null(find(t, "k"));
    assert_non_null(find(t, "k\xEF\xBF\xBD" "FFA"));
    assert_int_equal(st.n_nul_names, 2);
    assert_int_equal(st.n_bad_utf8, 1);
    fa_trace_free(t);
}

/* Issue 15: a start before the session's 0 was clamped and its duration lost. */
static void test_nsys_negative_start_shifts_the_trace(void **state)
{
    (void)state;
    const char *sql = cat(COMMON_NEW, KERNEL_NEW, RUNTIME,
                          "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES(-900,-850,0,(100<<24)+101,1,1,0,0);"
                          "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES"
                          " (-500,500,0,1,NULL,7,1,100<<24,6,2,64,4,2,1,128,1,1,0,0,0);");
    fa_import_stats st;
    fa_trace *t = import_ok(make_db("negstart.sqlite", sql), &st);
    assert_int_equal(st.time_shift_ns, 900);
    assert_int_equal(st.n_negative_times, 2);
    const fa_activity *g = find(t, "void gemm<float>(float*)");
    assert_int_equal(g->start_ns, 400);
    assert_int_equal(g->end_ns, 1400);
    assert_int_equal(g->flags & (FA_ACTF_ORPHAN | FA_ACTF_CLOCK_INVERSION), 0);
    fa_trace_free(t);
}

/* Issue 15: an export read from a pipe (SQLite needs random access: a private copy) */
static void test_nsys_export_from_pipe(void **state)
{
    (void)state;
    const char *path = make_db("pipe.sqlite", cat(COMMON_NEW, KERNEL_NEW, RUNTIME, ROWS_NEW));
    int fd = fa_test_pipe_file(path);
    assert_true(fd >= 0);
    char dev[64];
    snprintf(dev, sizeof dev, "/dev/fd/%d", fd);
    fa_ctx *ctx = fa_ctx_create();
    fa_trace *t = NULL;
    fa_import_stats st;
    fa_status s = fa_import_file(ctx, dev, NULL, &t, &st);
    if (s) fail_msg("%s", fa_ctx_errmsg(ctx));
    assert_int_equal(st.n_kernels, 3);
    assert_string_equal(t->source_path, dev);
    fa_trace_free(t);
    fa_ctx_free(ctx);
    close(fd);
    fa_test_pipe_reap();
}

/* Issue 15: out of memory names the file (an address-space limit the records cannot fit in). */
static void test_nsys_out_of_memory_names_the_file(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip();
#else
    const char *path = make_db("oom.sqlite",
                               cat(COMMON_NEW, KERNEL_NEW,
                                   "WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 600000)"
                                   " INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT i*10, i*10+5, 0, 1, NULL, 7, i,"
                                   " 100<<24, 6, 2, 64, 4, 2, 1, 128, 1, 1, 0, 0, 0 FROM r;", NULL));
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        fa_ctx *ctx = fa_ctx_create();
        FILE *f = fopen("/proc/self/statm", "r");
        unsigned long pages = 0;
        if (!f || fscanf(f, "%lu", &pages) != 1) _exit(3);
        fclose(f);
        struct rlimit rl;
        rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (48u << 20);
        if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
        fa_trace *t = NULL;
        fa_status s = fa_import_nsys(ctx, path, &t, NULL);
        const char *m = fa_ctx_errmsg(ctx);
        if (write(pfd[1], m, strlen(m)) < 0) _exit(3);
        _exit(s == FA_ERR_NOMEM ? 0 : 2);
    }
    close(pfd[1]);
    char msg[1024] = {0};
    ssize_t r = read(pfd[0], msg, sizeof msg - 1);
    (void)r;
    close(pfd[0]);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) fail_msg("child status %d, message: %s", ws, msg);
    assert_non_null(strstr(msg, "oom.sqlite"));
    assert_non_null(strstr(msg, "out of memory"));
#endif
}

/* fa_import_nsys in a child with a wall-clock limit (a hang fails the test) and, outside ASan, an
 * address-space limit of `as_mb` MiB above what the child already maps (0: none); its status
 * returned, its message in msg. */
static fa_status import_in_child(const char *path, int secs, unsigned as_mb, char *msg, size_t cap)
{
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        alarm((unsigned)secs);
#if !defined(__SANITIZE_ADDRESS__)
        if (as_mb) {
            FILE *f = fopen("/proc/self/statm", "r");
            unsigned long pages = 0;
            if (!f || fscanf(f, "%lu", &pages) != 1) _exit(100);
            fclose(f);
            struct rlimit rl;
            rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)as_mb << 20);
            if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(100);
        }
#else
        (void)as_mb;
#endif
        fa_ctx *ctx = fa_ctx_create();
        fa_trace *t = NULL;
        fa_status s = fa_import_nsys(ctx, path, &t, NULL);
        const char *m = fa_ctx_errmsg(ctx);
        if (write(pfd[1], m, strlen(m)) < 0) _exit(100);
        fa_trace_free(t);
        _exit((int)s);
    }
    close(pfd[1]);
    memset(msg, 0, cap);
    ssize_t r = read(pfd[0], msg, cap - 1);
    (void)r;
    close(pfd[0]);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) >= 100)
        fail_msg("%s: the import %s (%d): %s", path, WIFSIGNALED(ws) && WTERMSIG(ws) == SIGALRM ? "hung" : "died", ws, msg);
    return (fa_status)WEXITSTATUS(ws);
}

/* Issue 32: an export is untrusted input. A view where a table is read ran a query of the file's
 * choosing: over an endless recursive query, `import` never ended; a 24 KB file made one name
 * of 400 MB (printf's width), as a generated column does. Only stored columns of ordinary tables
 * are read. */
static void test_nsys_view_where_a_table_is_read_refused_before_it_runs(void **state)
{
    (void)state;
    static const char *const endless =
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)";
    char views[4][1024];
    snprintf(views[0], sizeof views[0],
             "DROP TABLE StringIds; CREATE VIEW StringIds AS %s SELECT x AS id, 'k' || x AS value FROM c;", endless);
    snprintf(views[1], sizeof views[1],
             "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS %s SELECT x AS start, "
             "x + 1 AS end, 0 AS deviceId, 7 AS streamId, 1 AS correlationId, 100 << 24 AS globalPid, 6 AS demangledName "
             "FROM c WHERE x < 0;",
             endless);
    snprintf(views[2], sizeof views[2],
             "DROP TABLE StringIds; CREATE VIEW StringIds AS SELECT 6 AS id, printf('%%.*c', 400000000, 'x') AS value;");
    /* a generated column computes on every read what a stored one holds */
    snprintf(views[3], sizeof views[3],
             "DROP TABLE StringIds; CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT GENERATED ALWAYS AS "
             "(printf('%%.*c', 400000000, 'x')) VIRTUAL); INSERT INTO StringIds(id) VALUES (1), (2), (3), (6), (7);");
    const char *const want[] = {"StringIds is a view", "CUPTI_ACTIVITY_KIND_KERNEL is a view", "StringIds is a view",
                                "column StringIds.value is a generated column"};
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "view%d.sqlite", i);
        char sql[8192];
        snprintf(sql, sizeof sql, "%s%s%s%s", COMMON_NEW, KERNEL_NEW, RUNTIME, ROWS_NEW);
        const char *path = make_db(name, sql);
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, views[i], NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        char msg[1024];
        fa_status s = import_in_child(path, 30, 1024, msg, sizeof msg);
        if (s != FA_ERR_INPUT || !strstr(msg, want[i]) || !strstr(msg, name))
            fail_msg("%s: status %d (want a refusal saying \"%s\"): %s", name, s, want[i], msg);
    }
}

/* Issue 32: names had no length limit. One over NSYS_NAME_MAX (64 KiB) is refused naming its
 * table, row and column; one SQLite would have to load beyond 16 MiB is refused naming the table
 * read; a name that is not text is an unknown name, counted. */
static void test_nsys_name_over_the_limit_refused_naming_table_row_column(void **state)
{
    (void)state;
    char sql[8192];
    snprintf(sql, sizeof sql, "%s%s%s%s%s", COMMON_NEW, KERNEL_NEW, RUNTIME, ROWS_NEW,
             "UPDATE StringIds SET value = replace(hex(zeroblob(70000)), '00', 'a') WHERE id = 6;");
    char msg[1024];
    fa_status s = import_in_child(make_db("longname.sqlite", sql), 30, 0, msg, sizeof msg);
    if (s != FA_ERR_INPUT || !strstr(msg, "table StringIds, row id 6, column value: a name of 70000 bytes") ||
        !strstr(msg, "64 KiB"))
        fail_msg("a 70000-byte name: status %d: %s", s, msg);
    snprintf(sql, sizeof sql, "%s%s%s%s%s", COMMON_NEW, KERNEL_NEW, RUNTIME, ROWS_NEW,
             "UPDATE StringIds SET value = replace(hex(zeroblob(17000000)), '00', 'a') WHERE id = 6;");
    s = import_in_child(make_db("hugename.sqlite", sql), 30, 0, msg, sizeof msg);
    if (s != FA_ERR_INPUT || !strstr(msg, "CUPTI_ACTIVITY_KIND_KERNEL") || !strstr(msg, "longer than 16 MiB"))
        fail_msg("a 17 MB name: status %d: %s", s, msg);
    unlink(fa_test_path(fa_test_tmpdir(), "hugename.sqlite"));
    /* a name that is not text, a reference that finds no row, a key on two rows: a broken string
     * table, refused naming the table, row and column (a blob name was counted and the kernel
     * kept nameless; a dangling id merged every kernel into one "" row; a doubled key doubled
     * every record, exit 0) */
    static const struct {
        const char *file, *sql, *want;
    } broken[] = {
        {"blobname.sqlite", "UPDATE StringIds SET value = x'6b65726e656c' WHERE id = 6;",
         "table StringIds, row id 6, column value: a blob where a name belongs"},
        {"nullname.sqlite", "CREATE TABLE s2 AS SELECT * FROM StringIds; DROP TABLE StringIds; "
                            "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT); INSERT INTO StringIds SELECT * "
                            "FROM s2; DROP TABLE s2; UPDATE StringIds SET value = NULL WHERE id = 6;",
         "table StringIds, row id 6, column value: NULL where a name belongs"},
        {"dangling.sqlite", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 99999 WHERE start = 1100;",
         "table CUPTI_ACTIVITY_KIND_KERNEL, row #2 read, column demangledName: the name id 99999 names no row"},
        {"dupid.sqlite", "CREATE TABLE s2 AS SELECT * FROM StringIds; DROP TABLE StringIds; "
                         "CREATE TABLE StringIds(id INTEGER, value TEXT); INSERT INTO StringIds SELECT * FROM s2; "
                         "INSERT INTO StringIds SELECT * FROM s2; DROP TABLE s2;",
         "table StringIds, column id: the key"},
        /* a text '6' beside the integer 6: no duplicate to GROUP BY, but a join on 6 found both */
        {"textkey.sqlite", "CREATE TABLE s2 AS SELECT * FROM StringIds; DROP TABLE StringIds; "
                           "CREATE TABLE StringIds(id, value TEXT); INSERT INTO StringIds SELECT * FROM s2; "
                           "INSERT INTO StringIds VALUES('6', 'TXT'); DROP TABLE s2;",
         "table StringIds, column id: the key '6' is text"},
        /* an NVTX range named by a textId that finds no row */
        {"nvtxdangling.sqlite", "UPDATE NVTX_EVENTS SET textId = 99999 WHERE textId = 4;",
         "table NVTX_EVENTS, row #1 read, column textId: the name id 99999 names no row"},
    };
    /* a WAL-mode export is read without leaving a -wal or -shm in the user's folder (it gained
     * both: read-only opens of a WAL database make them) */
    {
        snprintf(sql, sizeof sql, "PRAGMA journal_mode = WAL; %s%s%s%s", COMMON_NEW, KERNEL_NEW, RUNTIME, ROWS_NEW);
        const char *wp = make_db("walmode.sqlite", sql);
        char side[4300];
        struct stat sb;
        fa_import_stats wst;
        fa_trace *wt = import_ok(wp, &wst);
        fa_trace_free(wt);
        snprintf(side, sizeof side, "%s-wal", wp);
        if (stat(side, &sb) == 0) fail_msg("%s was left", side);
        snprintf(side, sizeof side, "%s-shm", wp);
        if (stat(side, &sb) == 0) fail_msg("%s was left", side);
        /* with a stray -wal beside it (the export is then read with it): the -shm SQLite makes is
         * not left behind either, and the -wal that was there stays */
        snprintf(side, sizeof side, "%s-wal", wp);
        FILE *f = fopen(side, "wb");
        assert_non_null(f);
        fputs("123456789", f);
        fclose(f);
        wt = import_ok(wp, &wst);
        fa_trace_free(wt);
        if (stat(side, &sb) != 0) fail_msg("the -wal that was there before was removed");
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", wp);
        if (stat(side, &sb) == 0) fail_msg("%s was left beside an export read with a stray -wal", side);
    }
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        snprintf(sql, sizeof sql, "%s%s%s%s%s", COMMON_NEW, KERNEL_NEW, RUNTIME, ROWS_NEW, broken[i].sql);
        const char *msg2 = import_fail(make_db(broken[i].file, sql), FA_ERR_INPUT);
        if (!strstr(msg2, broken[i].want) || !strstr(msg2, broken[i].file)) fail_msg("%s: %s", broken[i].file, msg2);
    }
}

static void test_nsys_not_sqlite_or_not_an_export_refused(void **state)
{
    (void)state;
    const char *p = fa_test_path(fa_test_tmpdir(), "text.sqlite");
    FILE *f = fopen(p, "w");
    fputs("hello, not a database\n", f);
    fclose(f);
    const char *msg = import_fail(p, FA_ERR_INPUT);
    assert_non_null(strstr(msg, "text.sqlite"));
    msg = import_fail(make_db("other.sqlite", "CREATE TABLE t(x INTEGER);"), FA_ERR_INPUT);
    assert_non_null(strstr(msg, "not an Nsight Systems export"));
    /* a corrupt database body after a valid header */
    const char *c = fa_test_path(fa_test_tmpdir(), "corrupt.sqlite");
    f = fopen(c, "wb");
    char page[4096];
    memset(page, 0xAB, sizeof page);
    memcpy(page, "SQLite format 3\0", 16);
    fwrite(page, 1, sizeof page, f);
    fclose(f);
    import_fail(c, FA_ERR_INPUT);
}

static void test_nsys_corpus_perlmutter_export(void **state)
{
    (void)state;
    fa_test_require_corpus();
    char path[1024];
    snprintf(path, sizeof path, "%s/traces/nsys/perlmutter-cloverleaf-cuda.sqlite", fa_test_corpus());
    fa_import_stats st;
    fa_trace *t = import_ok(path, &st);
    /* counts from the corpus SOURCES.md */
    assert_int_equal(st.n_kernels, 1312);
    assert_int_equal(st.n_runtime, 3048);
    assert_int_equal(st.n_memcpy, 279);
    assert_int_equal(st.n_ranges, 0);
    assert_int_equal(st.n_orphans, 0);
    assert_string_equal(st.schema, "nsys 3.13.2");
    assert_string_equal(t->device_name, "NVIDIA A100-SXM4-80GB");
    assert_int_equal(st.devices[0].sm_count, 108);
    printf("  perlmutter-cloverleaf-cuda.sqlite: rows %llu kernels %llu orphans %llu inversions %llu  %.1f ms\n",
           (unsigned long long)st.n_events, (unsigned long long)st.n_kernels,
           (unsigned long long)st.n_orphans, (unsigned long long)st.n_clock_inversions, st.elapsed_ns / 1e6);
    size_t with_grid = 0;
    for (size_t i = 0; i < t->n_acts; i++) {
        const fa_activity *a = &t->acts[i];
        assert_true(a->end_ns >= a->start_ns);
        if (a->kind == FA_ACT_KERNEL && a->grid[0] > 0 && a->block[0] > 0 && a->registers > 0) with_grid++;
    }
    assert_int_equal(with_grid, 1312);
    fa_trace_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nsys_new_schema_kernels_linked_by_correlation_within_process),
        cmocka_unit_test(test_nsys_nvtx_innermost_range_on_launch_thread_names_kernel),
        cmocka_unit_test(test_nsys_clock_inversion_linked_and_counted),
        cmocka_unit_test(test_nsys_old_schema_export_meta_data_short_names_suffixed_nvtx),
        cmocka_unit_test(test_nsys_versioned_runtime_rows_are_one_call),
        cmocka_unit_test(test_nsys_missing_kernel_column_named_in_error),
        cmocka_unit_test(test_nsys_missing_runtime_column_and_string_table_named),
        cmocka_unit_test(test_nsys_metadata_only_is_no_gpu_activity),
        cmocka_unit_test(test_nsys_no_runtime_table_kernels_kept_as_orphans),
        cmocka_unit_test(test_nsys_null_text_real_times_or_ids_skip_the_row),
        cmocka_unit_test(test_nsys_nul_in_string_ids_never_truncates_or_merges),
        cmocka_unit_test(test_nsys_negative_start_shifts_the_trace),
        cmocka_unit_test(test_nsys_export_from_pipe),
        cmocka_unit_test(test_nsys_out_of_memory_names_the_file),
        cmocka_unit_test(test_nsys_view_where_a_table_is_read_refused_before_it_runs),
        cmocka_unit_test(test_nsys_name_over_the_limit_refused_naming_table_row_column),
        cmocka_unit_test(test_nsys_not_sqlite_or_not_an_export_refused),
        cmocka_unit_test(test_nsys_corpus_perlmutter_export),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
