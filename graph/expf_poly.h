/* graph/expf_poly.h — the constants of the float exp the vector forms in graph/ compute
 * (ops_extra.c's 4-lane reference fallback, vmath.c's 8 lanes, vmath512.c's 16): x = n ln 2 + r,
 * n = round(x log2(e)), ln 2 split in two so that n ln 2 is exact to float (Cody and Waite), then
 * a polynomial for exp(r) on [-ln 2 / 2, ln 2 / 2], then scaled by 2^n. The split, and the
 * 4-lane form's polynomial exp(r) = 1 + r + r^2 P(r), P(r) = ((((P0 r + P1) r + P2) r + P3) r +
 * P4) r + P5 of degree 5, are the Cephes library's expf (S. L. Moshier, "Methods and Programs for
 * Mathematical Functions", 1989, and its expf.c; documented error 2 ULP over the float range); the
 * 8- and 16-lane forms' Horner polynomial is below. tests/unit/test_vmath.c measures each form. */
#ifndef FA_EXPF_POLY_H
#define FA_EXPF_POLY_H

#define FA_EXPF_LOG2E 1.44269504088896341f
#define FA_EXPF_LN2_HI 0.693359375f
#define FA_EXPF_LN2_LO (-2.12194440e-4f)
#define FA_EXPF_P0 1.9875691500e-4f
#define FA_EXPF_P1 1.3981999507e-3f
#define FA_EXPF_P2 8.3334519073e-3f
#define FA_EXPF_P3 4.1665795894e-2f
#define FA_EXPF_P4 1.6666665459e-1f
#define FA_EXPF_P5 5.0000001201e-1f

/* The 16-lane exp and the 8- and 16-lane sigmoids (graph/vmath512.c, graph/vmath.c) evaluate
 * exp(r) on the same reduced range by Horner's rule alone, 1 + r (1 + r (H2 + r (H3 + r (H4 + r (H5 + r H6))))), six FMAs where the form above takes
 * eight instructions (it is compute-bound in the swish after a convolution, issue 35). H2..H6: a
 * weighted least-squares fit of (exp(r) - 1 - r) / r^2 on 4,000 Chebyshev nodes of
 * [-ln 2 / 2, ln 2 / 2], reweighted towards the largest relative error of exp (Lawson's
 * iteration) and rounded to float; in float32 with FMAs its relative error on that range is
 * 6.1e-8 (Cephes's form: 1.2e-7), tests/unit/test_vmath.c bounds the whole function's. The 4-lane
 * reference form (ops_extra.c), written without guaranteed FMAs, keeps Cephes's. */
#define FA_EXPF_H2 4.999999404e-01f
#define FA_EXPF_H3 1.666652113e-01f
#define FA_EXPF_H4 4.166838899e-02f
#define FA_EXPF_H5 8.368710056e-03f
#define FA_EXPF_H6 1.381461276e-03f

#endif
