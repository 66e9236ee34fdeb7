/* tests/unit/test_trace_span — the baseline trace's span (issue 19, collector/cpu/cpu.c
 * fa_collect_cpu_span): with a span the CPU collector keeps iterating past `iters` until the
 * timed iterations span it, at most FA_TRACE_SPAN_MAX_ITERS; with 0 it takes exactly `iters`;
 * a span outside [0, FA_TRACE_SPAN_MAX_S] is a usage error naming the option. And its overhead
 * compensation (issue 36): the time the collector measures itself spending on a kernel's record
 * is not in the idle time between kernels nor in the iteration's span. */
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
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1};
    assert_int_equal(fa_exec_create(t->ctx, t->g, &eo, &e), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(t->ctx, e, 1), FA_OK);
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
    fa_exec *e = NULL;
    fa_exec_options eo = {.target = FA_TARGET_CPU, .threads = 1};
    assert_int_equal(fa_exec_create(t->ctx, t->g, &eo, &e), FA_OK);
    assert_int_equal(fa_exec_fill_inputs(t->ctx, e, 1), FA_OK);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_span),
        cmocka_unit_test(test_overhead_compensation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
