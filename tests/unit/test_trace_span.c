/* tests/unit/test_trace_span — the baseline trace's span (issue 19, collector/cpu/cpu.c
 * fa_collect_cpu_span): with a span the CPU collector keeps iterating past `iters` until the
 * timed iterations span it, at most FA_TRACE_SPAN_MAX_ITERS; with 0 it takes exactly `iters`;
 * a span outside [0, FA_TRACE_SPAN_MAX_S] is a usage error naming the option. And its overhead
 * compensation (issue 36): the time the collector measures itself spending on a kernel's record
 * is not in the idle time between kernels nor in the iteration's span. Warm-up by time
 * (FA_WARMUP_AUTO, issue 39), and the recorder a caller's own loop runs through. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_cases.h"
#include "collector/collector.h"
#include "runtime/runtime.h"

/* x[1,64,128,128] -> Relu -> Sigmoid -> y: two kernels an iteration, about a millisecond (4 MiB) */
static tc *tiny(void)
{
    tc *t = tc_new(17);
    int64_t xd[4] = {1, 64, 128, 128};
    tc_input(t, "x", 4, xd);
    tc_node(t, "Relu", "x", NULL, NULL, "r");
    tc_node(t, "Sigmoid", "r", NULL, NULL, "y");
    tc_output(t, "y");
    if (fa_graph_index(t->ctx, t->g) || fa_graph_prepare(t->ctx, t->g, NULL) || fa_graph_index(t->ctx, t->g))
        fail_msg("%s", fa_ctx_errmsg(t->ctx));
    return t;
}

/* A one-thread cpu executor of tiny()'s graph with its inputs filled (seed 1). */
static fa_exec *tiny_exec(tc *t)
{
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1};
    assert_int_equal(fa_exec_create(t->ctx, t->g, &eo, &e), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(t->ctx, e, 1), FA_OK);
    return e;
}

/* The trace's "iteration" ranges: their count, and first start to last end in s. */
static int iterations(const fa_trace *tr, double *span_s)
{
    int n = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < tr->n_acts; i++) {
        const fa_activity *a = &tr->acts[i];
        if (a->kind != FA_ACT_RANGE || !a->name || strcmp(a->name, "iteration")) continue;
        assert_int_equal(a->iter, n); /* numbered 0.. in order */
        n++;
        if (a->start_ns < lo) lo = a->start_ns;
        if (a->end_ns > hi) hi = a->end_ns;
    }
    *span_s = n ? (double)(hi - lo) / 1e9 : 0;
    return n;
}

static void test_trace_span(void **st)
{
    (void)st;
    tc *t = tiny();
    fa_exec *e = tiny_exec(t);
    fa_trace *tr = NULL;
    double span;

    /* no span: exactly iters */
    assert_int_equal(fa_collect_cpu_span(t->ctx, e, t->g, 1, 3, 0, NULL, NULL, &tr), FA_OK);
    assert_int_equal(tr->n_iters, 3);
    assert_int_equal(iterations(tr, &span), 3);
    fa_trace_free(tr);

    /* 0.1 s: more iterations than asked, spanning at least that (or the cap) */
    assert_int_equal(fa_collect_cpu_span(t->ctx, e, t->g, 1, 3, 0.1, NULL, NULL, &tr), FA_OK);
    int n = iterations(tr, &span);
    print_message("0.1 s span: %d iterations over %.3f s\n", n, span);
    assert_int_equal(n, tr->n_iters);
    assert_true(n > 3);
    assert_true(span >= 0.1 || n == FA_TRACE_SPAN_MAX_ITERS);
    assert_true(n <= FA_TRACE_SPAN_MAX_ITERS);
    fa_trace_free(tr);

    /* a span no run reaches: the iteration cap ends it */
    assert_int_equal(fa_collect_cpu_span(t->ctx, e, t->g, 0, 2, FA_TRACE_SPAN_MAX_S, NULL, NULL, &tr), FA_OK);
    assert_int_equal(tr->n_iters, FA_TRACE_SPAN_MAX_ITERS);
    fa_trace_free(tr);
    /* iters above the cap: iters, the span changes nothing past it */
    assert_int_equal(fa_collect_cpu_span(t->ctx, e, t->g, 0, FA_TRACE_SPAN_MAX_ITERS + 5, 1e-9, NULL, NULL, &tr), FA_OK);
    assert_int_equal(tr->n_iters, FA_TRACE_SPAN_MAX_ITERS + 5);
    fa_trace_free(tr);

    /* bad spans: usage errors naming the option, no trace */
    const double bad[] = {-1, NAN, FA_TRACE_SPAN_MAX_S * 2};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tr = NULL;
        assert_int_equal(fa_collect_cpu_span(t->ctx, e, t->g, 0, 2, bad[i], NULL, NULL, &tr), FA_ERR_USAGE);
        assert_null(tr);
        assert_non_null(strstr(fa_ctx_errmsg(t->ctx), "--trace-span"));
        fa_ctx_clear(t->ctx);
    }

    /* fa_collect_span on the cpu target: the same collector */
    assert_int_equal(fa_collect_span(t->ctx, e, t->g, 0, 2, 0.05, NULL, NULL, &tr), FA_OK);
    assert_true(tr->n_iters > 2);
    fa_trace_free(tr);
    fa_exec_free(e);
    tc_free(t);
}

/* A clock that charges every read `step` ns (the value read, then the step): a stand-in for the
 * collector's cost that the test controls exactly. */
typedef struct step_clock {
    uint64_t t, step;
} step_clock;

static uint64_t step_read(void *user)
{
    step_clock *c = user;
    uint64_t v = c->t;
    c->t += c->step;
    return v;
}

/* Per kernel the collector reads the clock at its begin, its end and once more after its record
 * (what it charges itself); the iteration at its start and end. With every read costing S, one
 * kernel's begin-to-end span is S, and what the collector spent recording it (end stamp to the
 * read after the record: S) is taken out of every later stamp of the iteration: consecutive
 * kernels are S apart (the next begin's own read; uncompensated 2S: the record's read too) and
 * the iteration spans (2k + 1)S for k kernels (uncompensated (3k + 1)S). S = 428 ns: the gap per
 * kernel the quiet calibration pass traced on T5 (issue 36), all of it the collector's. */
static void test_overhead_compensation(void **st)
{
    (void)st;
    tc *t = tiny();
    fa_exec *e = tiny_exec(t);
    const uint64_t S = 428;
    step_clock ck = {1000000, S};
    fa_trace *tr = NULL;
    assert_int_equal(fa_collect_cpu_clocked(t->ctx, e, t->g, 1, 3, 0, step_read, &ck, NULL, NULL, &tr), FA_OK);
    assert_int_equal(tr->n_iters, 3);
    int ranges = 0;
    for (int it = 0; it < 3; it++) {
        const fa_activity *range = NULL, *prev = NULL;
        int k = 0;
        for (size_t i = 0; i < tr->n_acts; i++) {
            const fa_activity *a = &tr->acts[i];
            if (a->iter != it) continue;
            if (a->kind == FA_ACT_RANGE) {
                range = a;
                continue;
            }
            assert_int_equal(a->kind, FA_ACT_KERNEL);
            assert_int_equal(a->end_ns - a->start_ns, S); /* the kernel's own span: unchanged */
            if (prev) assert_int_equal(a->start_ns - prev->end_ns, S); /* 2S before compensation */
            prev = a;
            k++;
        }
        assert_int_equal(k, 2);
        assert_non_null(range);
        ranges++;
        assert_int_equal(range->end_ns - range->start_ns, (uint64_t)(2 * k + 1) * S); /* (3k + 1)S before */
        assert_int_equal(prev->end_ns + S, range->end_ns);
    }
    assert_int_equal(ranges, 3);
    fa_trace_free(tr);
    fa_exec_free(e);
    tc_free(t);
}

/* The span ends with the first iteration that reaches it, not one past it. On a clock whose every
 * read costs 0.1 s, a timed iteration of the 2-kernel graph reads it 8 times (3 per kernel, 2 for
 * the iteration) and the collector once after it: after iterations 1, 2 and 3 the span read is
 * 0.9, 1.8 and 2.7 s, so a 2 s span takes 3 (read before each iteration, as it once was: 4). */
static void test_span_ends_at_the_first_iteration_reaching_it(void **st)
{
    (void)st;
    tc *t = tiny();
    fa_exec *e = tiny_exec(t);
    fa_trace *tr = NULL;
    step_clock slow = {1000000, 100000000};
    assert_int_equal(fa_collect_cpu_clocked(t->ctx, e, t->g, 0, 1, 2.0, step_read, &slow, NULL, NULL, &tr), FA_OK);
    assert_int_equal(tr->n_iters, 3);
    double span;
    assert_int_equal(iterations(tr, &span), 3);
    fa_trace_free(tr);
    fa_exec_free(e);
    tc_free(t);
}

/* fa_warmup_more: W >= 0 exactly; FA_WARMUP_AUTO at least 1, more while under
 * FA_WARMUP_AUTO_MIN_S, FA_WARMUP_AUTO_MAX at most. */
static void test_warmup_rule(void **st)
{
    (void)st;
    const uint64_t min_ns = (uint64_t)(FA_WARMUP_AUTO_MIN_S * 1e9);
    assert_false(fa_warmup_more(0, 0, 0));
    assert_true(fa_warmup_more(5, 4, UINT64_MAX)); /* a count asked is a count, whatever the time */
    assert_false(fa_warmup_more(5, 5, 0));
    assert_true(fa_warmup_more(FA_WARMUP_AUTO, 0, UINT64_MAX)); /* one at least */
    assert_false(fa_warmup_more(FA_WARMUP_AUTO, 1, min_ns)); /* one that took the minimum is enough */
    assert_true(fa_warmup_more(FA_WARMUP_AUTO, 1, min_ns - 1));
    assert_true(fa_warmup_more(FA_WARMUP_AUTO, FA_WARMUP_AUTO_MAX - 1, 0));
    assert_false(fa_warmup_more(FA_WARMUP_AUTO, FA_WARMUP_AUTO_MAX, 0)); /* the most it takes */
}

/* The collector's warm-up by time, on a clock the test controls: a slow iteration (each clock
 * read costing 0.1 s: a warm-up run of the 2-kernel graph reads it 4 times) warms up once; a fast
 * one FA_WARMUP_AUTO_MAX times; a W given is taken as it is. n_warmup says what ran. */
static void test_warmup_by_time(void **st)
{
    (void)st;
    tc *t = tiny();
    fa_exec *e = tiny_exec(t);
    fa_trace *tr = NULL;
    step_clock slow = {1000000, 100000000}, fast = {1000000, 428}, slow2 = {1000000, 100000000};
    assert_int_equal(fa_collect_cpu_clocked(t->ctx, e, t->g, FA_WARMUP_AUTO, 2, 0, step_read, &slow, NULL, NULL, &tr), FA_OK);
    assert_int_equal(tr->n_warmup, 1);
    assert_int_equal(tr->n_iters, 2);
    fa_trace_free(tr);
    assert_int_equal(fa_collect_cpu_clocked(t->ctx, e, t->g, FA_WARMUP_AUTO, 2, 0, step_read, &fast, NULL, NULL, &tr), FA_OK);
    assert_int_equal(tr->n_warmup, FA_WARMUP_AUTO_MAX);
    fa_trace_free(tr);
    assert_int_equal(fa_collect_cpu_clocked(t->ctx, e, t->g, 2, 2, 0, step_read, &slow2, NULL, NULL, &tr), FA_OK);
    assert_int_equal(tr->n_warmup, 2);
    fa_trace_free(tr);
    /* below FA_WARMUP_AUTO: a usage error */
    assert_int_equal(fa_collect_cpu_clocked(t->ctx, e, t->g, -2, 2, 0, NULL, NULL, NULL, NULL, &tr), FA_ERR_USAGE);
    fa_ctx_clear(t->ctx);
    fa_exec_free(e);
    tc_free(t);
}

/* The recorder a caller's loop runs (the applier's end-to-end rounds): warm-up runs leave no
 * record; each timed run is the next iteration, its kernels stamped as fa_collect_cpu's, and
 * *own_ns is what the recorder spent on the run's records — with every clock read costing S,
 * 1 read per kernel (the one after its record) = 2S for the 2-kernel graph, the same amount its
 * stamps were moved back by (test_overhead_compensation). */
static void test_recorder(void **st)
{
    (void)st;
    tc *t = tiny();
    fa_exec *e = tiny_exec(t);
    const uint64_t S = 1000;
    step_clock ck = {1000000, S};
    fa_cpu_recorder *rec = NULL;
    assert_int_equal(fa_cpu_recorder_create(t->ctx, t->g, step_read, &ck, &rec), FA_OK);
    uint64_t own = 77;
    assert_int_equal(fa_cpu_recorder_run(t->ctx, rec, e, false, &own), FA_OK);
    assert_int_equal(own, 0); /* a warm-up: nothing recorded, nothing spent on records */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(fa_cpu_recorder_run(t->ctx, rec, e, true, &own), FA_OK);
        assert_int_equal(own, 2 * S);
    }
    fa_trace *tr = fa_cpu_recorder_take(rec);
    assert_non_null(tr);
    assert_null(fa_cpu_recorder_take(rec));
    fa_cpu_recorder_free(rec);
    double span;
    assert_int_equal(tr->n_iters, 3);
    assert_int_equal(iterations(tr, &span), 3);
    int kernels = 0;
    for (size_t i = 0; i < tr->n_acts; i++)
        if (tr->acts[i].kind == FA_ACT_KERNEL) {
            kernels++;
            assert_true(tr->acts[i].iter >= 0 && tr->acts[i].iter < 3);
            assert_int_equal(tr->acts[i].end_ns - tr->acts[i].start_ns, S);
        }
    assert_int_equal(kernels, 6);
    fa_trace_free(tr);
    fa_exec_free(e);
    tc_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_span),
        cmocka_unit_test(test_overhead_compensation),
        cmocka_unit_test(test_span_ends_at_the_first_iteration_reaching_it),
        cmocka_unit_test(test_warmup_rule),
        cmocka_unit_test(test_warmup_by_time),
        cmocka_unit_test(test_recorder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
