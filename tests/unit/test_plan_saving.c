/* tests/unit/test_plan_saving — the plan's predicted saving counts each removed kernel once
 * (plan/plan.c fa_plan_accepted_saving): an accepted epilogue whose BN fold (depends_on) is
 * accepted too already holds the fold's saving; a fold whose epilogue was not accepted, or an
 * epilogue whose fold was not, counts on its own; clusters not accepted count nothing. */
#include <math.h>
#include <string.h>

#include "testutil.h"
#include "advisor/advisor.h"

static void test_accepted_saving_counts_a_folded_bn_once(void **st)
{
    (void)st;
    fa_cluster cl[6];
    memset(cl, 0, sizeof cl);
    /* 0: BN fold of conv A, 1: its epilogue (conv A + BN + Relu), 2: BN fold of conv B, 3: its
     * epilogue (rejected), 4: an epilogue without a fold, 5: a chain (rejected) */
    const fa_cluster_kind kinds[6] = {FA_CLUSTER_BN_FOLD, FA_CLUSTER_EPILOGUE, FA_CLUSTER_BN_FOLD, FA_CLUSTER_EPILOGUE,
                                      FA_CLUSTER_EPILOGUE, FA_CLUSTER_ELEMWISE_CHAIN};
    const int deps[6] = {-1, 0, -1, 2, -1, -1};
    const double est[6] = {100, 250, 40, 90, 30, 1000};
    for (int i = 0; i < 6; i++) {
        cl[i].id = i;
        cl[i].kind = kinds[i];
        cl[i].depends_on = deps[i];
        cl[i].est_saving_ns = est[i];
    }
    fa_plan p;
    memset(&p, 0, sizeof p);
    p.clusters = cl;
    p.n_clusters = 6;
    fa_cluster_verdict v[6];
    memset(v, 0, sizeof v);
    const fa_cluster_status status[6] = {FA_CLUSTER_ACCEPTED, FA_CLUSTER_ACCEPTED, FA_CLUSTER_ACCEPTED,
                                         FA_CLUSTER_REJECTED_NO_GAIN, FA_CLUSTER_ACCEPTED, FA_CLUSTER_REJECTED_REGRESSION};
    for (int i = 0; i < 6; i++) v[i].status = status[i];
    /* 250 (fold 0 inside it) + 40 (its epilogue rejected) + 30 */
    assert_true(fabs(fa_plan_accepted_saving(&p, v) - 320) < 1e-9);
    /* the epilogue dropped (the back-off): its fold counts on its own */
    v[1].status = FA_CLUSTER_REJECTED_NO_GAIN;
    assert_true(fabs(fa_plan_accepted_saving(&p, v) - (100 + 40 + 30)) < 1e-9);
    /* the fold dropped, the epilogue kept: the epilogue alone */
    v[0].status = FA_CLUSTER_REJECTED_NO_GAIN;
    v[1].status = FA_CLUSTER_ACCEPTED;
    assert_true(fabs(fa_plan_accepted_saving(&p, v) - (250 + 40 + 30)) < 1e-9);
    /* nothing accepted: 0 */
    for (int i = 0; i < 6; i++) v[i].status = FA_CLUSTER_REFUSED;
    assert_true(fa_plan_accepted_saving(&p, v) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted_saving_counts_a_folded_bn_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
