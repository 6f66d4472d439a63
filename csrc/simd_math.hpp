// Branch-free float32 elementary functions that compilers vectorise.
//
// A libm call per element (expf, erff, tanhf) stops auto-vectorisation and made
// GELU several times slower than it needs to be. Everything here is arithmetic,
// bit casts and selects, so a loop calling these helpers becomes SIMD code.
// Accuracy target: about 1e-7 relative (a few float32 ulp). NaN inputs give NaN
// outputs once the caller multiplies by x, which every GELU formula does.
//
// This header has no include guard on purpose: each ISA translation unit
// includes it inside its own namespace (see kernels_impl.hpp). It needs
// <cstdint> and <cstring> included beforehand.

EMBER_INLINE float bits_as_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

EMBER_INLINE uint32_t float_as_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

// e^z as 2^n * e^r with n = round(z / ln 2) and |r| <= ln(2) / 2. Valid for
// z <= 88.3; every caller passes z <= ~0, so only the lower bound is checked
// (one compare serves the clamp and the flush). Below ln(FLT_MIN) the result
// flushes to 0 (the true value is under 1.2e-38). NaN gives NaN.
EMBER_INLINE float exp_neg_f32(float z) {
    const float lo = -87.33654475f;  // ln(FLT_MIN): keeps n >= -126 and 2^n normal
    const bool flush = z < lo;
    const float zc = flush ? lo : z;
    // Adding 1.5 * 2^23 rounds to an integer held in the low mantissa bits.
    const float shifter = 12582912.0f;
    float k = zc * 1.44269504088896341f + shifter;
    const uint32_t n_bits = float_as_bits(k) - float_as_bits(shifter);
    k -= shifter;
    // Two-part ln 2 (Cody-Waite) keeps r accurate to float32.
    float r = zc - k * 0.693359375f;
    r = r - k * -2.12194440e-4f;
    // Degree-6 Chebyshev fit of e^r on |r| <= ln(2)/2 (made for ember with numpy):
    // 1.7e-8 relative error before float32 rounding.
    float p = 1.39485808e-3f;
    p = p * r + 8.37512889e-3f;
    p = p * r + 4.16662183e-2f;
    p = p * r + 1.66664155e-1f;
    p = p * r + 5.00000011e-1f;
    p = p * r + 1.00000004f;
    p = p * r + 1.0f;
    const float scale = bits_as_float((n_bits + 127u) << 23);
    return flush ? 0.0f : p * scale;
}

// Standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2, accurate in both tails.
//
// erfc(a) = t * exp(-a^2 + P(t)) with t = 1 / (1 + a/2) for a >= 0. P is a
// degree-9 Chebyshev fit of log(erfc(a) e^(a^2) / t) over t in (0, 1], refitted
// for ember with numpy/scipy (it reproduces the classic Numerical Recipes
// `erfcc` coefficients): max error 1.03e-7 in the exponent, i.e. relative error
// in erfc, for every a >= 0. For x < 0 the small tail is computed directly, for
// x >= 0 as 1 - tail, so neither side suffers cancellation.
EMBER_INLINE float erfc_poly_f32(float t) {
    float p = 0.17087278f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851589f;
    p = p * t - 1.13520400f;
    p = p * t + 0.27886808f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678419f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    return p;
}

EMBER_INLINE float normal_cdf_f32(float x) {
    const float ax = std::fabs(x);
    const float a = ax * 0.70710678118654752f;
    const float half_x2 = 0.5f * x * x;  // a^2 with one rounding instead of two
    const float t = 1.0f / (1.0f + 0.5f * a);
    const float tail = 0.5f * t * exp_neg_f32(erfc_poly_f32(t) - half_x2);
    return x < 0.0f ? tail : 1.0f - tail;
}

// exp(-x^2 / 2): the unnormalised standard normal density.
EMBER_INLINE float gauss_f32(float x) {
    return exp_neg_f32(-0.5f * x * x);
}

// Logistic sigmoid and sigma * (1 - sigma), both from e = exp(-|v|) <= 1 so
// nothing overflows for large |v|.
EMBER_INLINE void sigmoid_f32(float v, float* sig, float* sig_one_minus) {
    const float e = exp_neg_f32(-std::fabs(v));
    const float q = 1.0f / (1.0f + e);
    *sig = v < 0.0f ? e * q : q;
    *sig_one_minus = e * q * q;
}
