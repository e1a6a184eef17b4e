// A thin float-vector layer over AVX-512, AVX2+FMA, or plain scalars, and fast
// vectorized exp/log/tanh/sigmoid built on it. Internal to tarn_model.
//
// Accuracy (checked by kernels_test.cpp against <cmath>): exp and log within a
// few ulp; tanh and sigmoid within ~3e-7 relative over the whole float range.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__AVX2__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -Wuninitialized reports at every inlined use (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

namespace tarn::model::simd {

#if defined(__AVX512F__)
constexpr int kLanes = 16;
using V = __m512;
using M = __mmask16;
inline V Load(const float* p) { return _mm512_loadu_ps(p); }
inline void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
inline V Set1(float x) { return _mm512_set1_ps(x); }
inline V Zero() { return _mm512_setzero_ps(); }
inline V Add(V a, V b) { return _mm512_add_ps(a, b); }
inline V Sub(V a, V b) { return _mm512_sub_ps(a, b); }
inline V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
inline V Div(V a, V b) { return _mm512_div_ps(a, b); }
inline V Sqrt(V a) { return _mm512_sqrt_ps(a); }
inline V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }    // a*b+c
inline V Fnma(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }  // c-a*b
inline V Max(V a, V b) { return _mm512_max_ps(a, b); }
inline V Min(V a, V b) { return _mm512_min_ps(a, b); }
inline V Abs(V a) {
  return _mm512_castsi512_ps(
      _mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)));
}
inline V SignBits(V a) {
  return _mm512_castsi512_ps(
      _mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
}
inline V Or(V a, V b) {
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}
inline M Less(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
inline M Greater(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
inline V Select(M m, V if_true, V if_false) { return _mm512_mask_blend_ps(m, if_false, if_true); }
inline V Round(V a) {
  return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
// 2^n for integral n in [-126, 127].
inline V Pow2i(V n) {
  __m512i i = _mm512_cvtps_epi32(n);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(i, _mm512_set1_epi32(127)), 23));
}
// Splits positive normal x into mantissa m in [1, 2) and exponent e.
inline void Frexp(V x, V* m, V* e) {
  __m512i i = _mm512_castps_si512(x);
  __m512i ex = _mm512_sub_epi32(_mm512_srli_epi32(i, 23), _mm512_set1_epi32(127));
  *e = _mm512_cvtepi32_ps(ex);
  *m = _mm512_castsi512_ps(_mm512_or_si512(_mm512_and_si512(i, _mm512_set1_epi32(0x007fffff)),
                                           _mm512_set1_epi32(0x3f800000)));
}
// p * 2^n for integral n (AVX-512 scalef: one instruction, any n).
inline V Scale2(V p, V n) { return _mm512_scalef_ps(p, n); }
inline float ReduceAdd(V a) { return _mm512_reduce_add_ps(a); }
// Fast reciprocal with one Newton step (relative error ~1e-8).
inline V Recip(V a) {
  V r = _mm512_rcp14_ps(a);
  return Mul(r, Fnma(a, r, Set1(2.0f)));
}
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int kLanes = 8;
using V = __m256;
using M = __m256;
inline V Load(const float* p) { return _mm256_loadu_ps(p); }
inline void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
inline V Set1(float x) { return _mm256_set1_ps(x); }
inline V Zero() { return _mm256_setzero_ps(); }
inline V Add(V a, V b) { return _mm256_add_ps(a, b); }
inline V Sub(V a, V b) { return _mm256_sub_ps(a, b); }
inline V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
inline V Div(V a, V b) { return _mm256_div_ps(a, b); }
inline V Sqrt(V a) { return _mm256_sqrt_ps(a); }
inline V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V Fnma(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
inline V Max(V a, V b) { return _mm256_max_ps(a, b); }
inline V Min(V a, V b) { return _mm256_min_ps(a, b); }
inline V Abs(V a) { return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }
inline V SignBits(V a) {
  return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u))));
}
inline V Or(V a, V b) { return _mm256_or_ps(a, b); }
inline M Less(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
inline M Greater(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
inline V Select(M m, V if_true, V if_false) { return _mm256_blendv_ps(if_false, if_true, m); }
inline V Round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline V Pow2i(V n) {
  __m256i i = _mm256_cvtps_epi32(n);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(i, _mm256_set1_epi32(127)), 23));
}
inline void Frexp(V x, V* m, V* e) {
  __m256i i = _mm256_castps_si256(x);
  __m256i ex = _mm256_sub_epi32(_mm256_srli_epi32(i, 23), _mm256_set1_epi32(127));
  *e = _mm256_cvtepi32_ps(ex);
  *m = _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(i, _mm256_set1_epi32(0x007fffff)),
                                           _mm256_set1_epi32(0x3f800000)));
}
inline V Scale2(V p, V n) {
  // n may reach 128 at the top of the range: split the scale in two.
  V half = Round(Mul(n, Set1(0.5f)));
  return Mul(Mul(p, Pow2i(half)), Pow2i(Sub(n, half)));
}
inline float ReduceAdd(V a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline V Recip(V a) {
  V r = _mm256_rcp_ps(a);  // 12 bits; two Newton steps
  r = Mul(r, Fnma(a, r, Set1(2.0f)));
  return Mul(r, Fnma(a, r, Set1(2.0f)));
}
#else
constexpr int kLanes = 1;
using V = float;
using M = bool;
inline V Load(const float* p) { return *p; }
inline void Store(float* p, V v) { *p = v; }
inline V Set1(float x) { return x; }
inline V Zero() { return 0.0f; }
inline V Add(V a, V b) { return a + b; }
inline V Sub(V a, V b) { return a - b; }
inline V Mul(V a, V b) { return a * b; }
inline V Div(V a, V b) { return a / b; }
inline V Sqrt(V a) { return std::sqrt(a); }
inline V Fma(V a, V b, V c) { return std::fma(a, b, c); }
inline V Fnma(V a, V b, V c) { return std::fma(-a, b, c); }
inline V Max(V a, V b) { return a > b ? a : b; }
inline V Min(V a, V b) { return a < b ? a : b; }
inline V Abs(V a) { return std::fabs(a); }
inline V SignBits(V a) { return std::signbit(a) ? -0.0f : 0.0f; }
inline V Or(V a, V b) {
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  x |= y;
  std::memcpy(&a, &x, 4);
  return a;
}
inline M Less(V a, V b) { return a < b; }
inline M Greater(V a, V b) { return a > b; }
inline V Select(M m, V if_true, V if_false) { return m ? if_true : if_false; }
inline V Round(V a) { return std::nearbyint(a); }
inline V Pow2i(V n) {
  uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline void Frexp(V x, V* m, V* e) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  *e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 127);
  bits = (bits & 0x007fffffu) | 0x3f800000u;
  std::memcpy(m, &bits, 4);
}
inline V Scale2(V p, V n) { return std::ldexp(p, static_cast<int>(n)); }
inline float ReduceAdd(V a) { return a; }
inline V Recip(V a) { return 1.0f / a; }
#endif

// exp(x) for x in float range; inputs are clamped to [-87.3, 88.3] (results
// stay normal or reach ~FLT_MAX).
inline V Exp(V x) {
  x = Min(Max(x, Set1(-87.3f)), Set1(88.3f));
  V n = Round(Mul(x, Set1(1.44269504088896341f)));
  // Cody-Waite: ln2 = hi + lo, hi exactly representable with few bits.
  V r = Fnma(n, Set1(0.693359375f), x);
  r = Fnma(n, Set1(-2.12194440e-4f), r);
  // Taylor series of e^r on |r| <= ln2/2 to degree 6 (truncation < 1.2e-7).
  V p = Set1(1.0f / 720.0f);
  p = Fma(p, r, Set1(1.0f / 120.0f));
  p = Fma(p, r, Set1(1.0f / 24.0f));
  p = Fma(p, r, Set1(1.0f / 6.0f));
  p = Fma(p, r, Set1(0.5f));
  p = Fma(p, r, Set1(1.0f));
  p = Fma(p, r, Set1(1.0f));
  return Scale2(p, n);
}

// Natural log for positive normal x (callers clamp away 0 and denormals).
inline V Log(V x) {
  V m, e;
  Frexp(x, &m, &e);
  // Move m into [sqrt(1/2), sqrt(2)).
  M big = Greater(m, Set1(1.41421356f));
  m = Select(big, Mul(m, Set1(0.5f)), m);
  e = Select(big, Add(e, Set1(1.0f)), e);
  // log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716.
  V s = Div(Sub(m, Set1(1.0f)), Add(m, Set1(1.0f)));
  V s2 = Mul(s, s);
  V p = Set1(2.0f / 11.0f);
  p = Fma(p, s2, Set1(2.0f / 9.0f));
  p = Fma(p, s2, Set1(2.0f / 7.0f));
  p = Fma(p, s2, Set1(2.0f / 5.0f));
  p = Fma(p, s2, Set1(2.0f / 3.0f));
  p = Fma(p, s2, Set1(2.0f));
  V log_m = Mul(p, s);
  return Fma(e, Set1(0.693147180559945309f), log_m);
}

// tanh: odd Taylor polynomial below |x| = 0.55 (truncation < 1e-7 relative),
// 1 - 2 / (e^{2|x|} + 1) above, with the sign restored.
inline V Tanh(V x) {
  V ax = Abs(x);
  V sign = SignBits(x);
  V x2 = Mul(ax, ax);
  V p = Set1(929569.0f / 638512875.0f);
  p = Fnma(p, x2, Set1(21844.0f / 6081075.0f));  // c13 - x2*c15
  p = Fnma(p, x2, Set1(1382.0f / 155925.0f));    // c11 - ...
  p = Fnma(p, x2, Set1(62.0f / 2835.0f));        // c9
  p = Fnma(p, x2, Set1(17.0f / 315.0f));         // c7
  p = Fnma(p, x2, Set1(2.0f / 15.0f));           // c5
  p = Fnma(p, x2, Set1(1.0f / 3.0f));            // c3
  p = Fnma(p, x2, Set1(1.0f));                   // 1
  V small = Mul(p, ax);
  V e = Exp(Mul(Min(ax, Set1(10.0f)), Set1(2.0f)));
  V large = Fnma(Set1(2.0f), Recip(Add(e, Set1(1.0f))), Set1(1.0f));
  V t = Select(Less(ax, Set1(0.55f)), small, large);
  return Or(t, sign);
}

inline V Sigmoid(V x) {
  V e = Exp(Sub(Zero(), Max(x, Set1(-87.0f))));
  return Recip(Add(e, Set1(1.0f)));
}

}  // namespace tarn::model::simd
