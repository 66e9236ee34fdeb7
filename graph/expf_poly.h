/* graph/expf_poly.h — the constants of the one float exp every vector form in graph/ computes
 * (ops_extra.c's 4-lane reference fallback, vmath.c's 8 lanes, vmath512.c's 16): x = n ln 2 + r,
 * n = round(x log2(e)), ln 2 split in two so that n ln 2 is exact to float (Cody and Waite),
 * exp(r) = 1 + r + r^2 P(r) with P of degree 5 on [-ln 2 / 2, ln 2 / 2], then scaled by 2^n. The
 * split and P are the Cephes library's expf (S. L. Moshier, "Methods and Programs for
 * Mathematical Functions", 1989, and its expf.c; documented error 2 ULP over the float range;
 * tests/unit/test_vmath.c measures each form). P(r) = ((((P0 r + P1) r + P2) r + P3) r + P4) r + P5. */
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

#endif
