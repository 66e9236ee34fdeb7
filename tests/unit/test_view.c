/* tests/unit/test_view — strided accessors (graph/view.c): every accessor a chain of views
 * builds reads the same element as the views applied one by one to the source's linear index
 * (brute force over every coordinate), the reshapes of a row-major axis merge back to one term,
 * grouped heads (Unsqueeze + Expand + Reshape) read head h / g, and a reshape with no accessor of
 * this form says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "testutil.h"

static int64_t numel(int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int a = 0; a < rank; a++) n *= d[a];
    return n;
}

/* coordinates of linear index l in dims (row-major) */
static void coords(int64_t l, int rank, const int64_t *d, int64_t *c)
{
    for (int a = rank - 1; a >= 0; a--) {
        c[a] = l % d[a];
        l /= d[a];
    }
}

static int64_t linear(int rank, const int64_t *d, const int64_t *c)
{
    int64_t l = 0;
    for (int a = 0; a < rank; a++) l = l * d[a] + c[a];
    return l;
}

static void test_contiguous_and_transpose_read_the_right_elements(void **s)
{
    (void)s;
    int64_t d[4] = {2, 3, 4, 5}, perm[4] = {0, 2, 3, 1}, c[4], cin[4];
    fa_view v;
    fa_view_contiguous(&v, 4, d);
    for (int64_t l = 0; l < numel(4, d); l++) {
        coords(l, 4, d, c);
        assert_int_equal(fa_view_offset_at(&v, c), l);
    }
    assert_true(fa_view_permute(&v, perm));
    int64_t pd[4] = {2, 4, 5, 3};
    for (int a = 0; a < 4; a++) assert_int_equal(v.dims[a], pd[a]);
    for (int64_t l = 0; l < numel(4, pd); l++) {
        coords(l, 4, pd, c);
        for (int a = 0; a < 4; a++) cin[perm[a]] = c[a];
        assert_int_equal(fa_view_offset_at(&v, c), linear(4, d, cin));
    }
}

/* BERT's heads: [1, 6, 12] -> Reshape [1, 6, 3, 4] -> Transpose [1, 3, 6, 4] -> Reshape [3, 6, 4]:
 * every axis one plain stride; the merge back Transpose -> Reshape [1, 6, 12] is the identity. */
static void test_head_split_and_merge_are_plain_strides(void **s)
{
    (void)s;
    int64_t d[3] = {1, 6, 12}, h[4] = {1, 6, 3, 4}, perm[4] = {0, 2, 1, 3}, bh[3] = {3, 6, 4};
    fa_view v;
    fa_view_contiguous(&v, 3, d);
    assert_true(fa_view_reshape(&v, 4, h));
    assert_true(fa_view_permute(&v, perm));
    assert_true(fa_view_reshape(&v, 3, bh));
    int64_t st;
    assert_true(fa_view_axis_stride(&v, 0, &st) && st == 4);  /* head */
    assert_true(fa_view_axis_stride(&v, 1, &st) && st == 12); /* sequence */
    assert_true(fa_view_axis_stride(&v, 2, &st) && st == 1);  /* head dim */
    /* the merge: [3, 6, 4] -> [1, 3, 6, 4] -> Transpose -> [1, 6, 3, 4] -> [1, 6, 12] */
    fa_view w;
    fa_view_contiguous(&w, 4, (int64_t[]){1, 6, 3, 4});
    assert_true(fa_view_reshape(&w, 3, d));
    assert_true(fa_view_axis_stride(&w, 2, &st) && st == 1); /* 3 x 4 back to one term of 12 */
    assert_int_equal(w.n_terms[2], 1);
}

/* LLaMA's repeat_kv: K [2, 2, 5, 4] -> Unsqueeze -> Expand [2, 2, 3, 5, 4] -> Reshape [2, 6, 5, 4]:
 * query head h reads key head h / 3. */
static void test_grouped_heads_read_head_over_group(void **s)
{
    (void)s;
    int64_t d[4] = {2, 2, 5, 4}, u[5] = {2, 2, 1, 5, 4}, e[5] = {2, 2, 3, 5, 4}, r[4] = {2, 6, 5, 4}, c[4];
    fa_view v;
    fa_view_contiguous(&v, 4, d);
    assert_true(fa_view_reshape(&v, 5, u));
    assert_true(fa_view_expand(&v, 5, e));
    assert_true(fa_view_reshape(&v, 4, r));
    int64_t st;
    assert_false(fa_view_axis_stride(&v, 1, &st)); /* not one plain stride: (h / 3) */
    assert_true(fa_view_axis_stride(&v, 2, &st) && st == 4);
    for (int64_t l = 0; l < numel(4, r); l++) {
        coords(l, 4, r, c);
        int64_t src[4] = {c[0], c[1] / 3, c[2], c[3]};
        assert_int_equal(fa_view_offset_at(&v, c), linear(4, d, src));
    }
    /* merged with the batch: [12, 5, 4], bh -> (bh / 6, (bh / 3) % 2) */
    assert_true(fa_view_reshape(&v, 3, (int64_t[]){12, 5, 4}));
    for (int64_t bh = 0; bh < 12; bh++) {
        int64_t cc[3] = {bh, 2, 3}, src[4] = {bh / 6, (bh % 6) / 3, 2, 3};
        assert_int_equal(fa_view_offset_at(&v, cc), linear(4, d, src));
    }
}

/* A transposed tensor reshaped across the permuted axes: [4, 6] transposed to [6, 4] and read as
 * [4, 6] again straddles (24 elements, the 4 of the first axis split 2 x 2): still exact, or refused. */
static void test_reshape_of_a_transpose_is_exact_or_refused(void **s)
{
    (void)s;
    int64_t d[2] = {4, 6}, t[2] = {6, 4}, perm[2] = {1, 0}, c2[2], c3[3];
    fa_view v;
    fa_view_contiguous(&v, 2, d);
    assert_true(fa_view_permute(&v, perm));
    fa_view w = v;
    if (fa_view_reshape(&w, 3, (int64_t[]){3, 2, 4})) { /* splits the 6: representable */
        for (int64_t l = 0; l < 24; l++) {
            coords(l, 3, (int64_t[]){3, 2, 4}, c3);
            coords(l, 2, t, c2);
            assert_int_equal(fa_view_offset_at(&w, c3), c2[1] * 6 + c2[0]);
        }
    } else {
        fail_msg("splitting an axis of a transpose along its own factors must be representable");
    }
    /* [6, 4] (transposed) read as [4, 6]: the second axis mixes both source axes (6 = 4 + 2 of
     * the next row): no div/mod term per axis reads it */
    w = v;
    assert_false(fa_view_reshape(&w, 2, (int64_t[]){4, 6}));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contiguous_and_transpose_read_the_right_elements),
        cmocka_unit_test(test_head_split_and_merge_are_plain_strides),
        cmocka_unit_test(test_grouped_heads_read_head_over_group),
        cmocka_unit_test(test_reshape_of_a_transpose_is_exact_or_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
