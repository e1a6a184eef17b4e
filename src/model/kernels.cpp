#include "model/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "model/simd.h"

namespace tarn::model::kernels {

using simd::kLanes;
using simd::V;
static_assert(kBatchAlign % kLanes == 0, "the batch alignment must be a multiple of the lanes");

const char* IsaName() {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
  return "avx2";
#else
  return "scalar";
#endif
}

namespace {

constexpr int kMr = 4;  // rows (units) per register tile
constexpr int kNv = 4;  // vectors along the batch per register tile
// Rows per weight-gradient tile: its MR x 4 accumulators, 4 inputs and one
// gradient vector must fit the registers (AVX-512: 32, AVX2: 16, where a
// 4 x 4 tile spilled inside its loop).
#if defined(__AVX512F__)
constexpr int kWr = 4;
#else
constexpr int kWr = 2;
#endif

// Activation and its derivative at z.
struct ActOut {
  V h;
  V d;
};

template <Activation A, bool kWantDerivative>
inline ActOut Activate(V z) {
  using namespace simd;
  ActOut o;
  o.d = Zero();
  if constexpr (A == Activation::kLinear) {
    o.h = z;
    if (kWantDerivative) o.d = Set1(1.0f);
  } else if constexpr (A == Activation::kSigmoid) {
    o.h = Sigmoid(z);
    if (kWantDerivative) o.d = Fnma(o.h, o.h, o.h);  // h - h^2
  } else if constexpr (A == Activation::kTanh) {
    o.h = Tanh(z);
    if (kWantDerivative) o.d = Fnma(o.h, o.h, Set1(1.0f));
  } else if constexpr (A == Activation::kRelu) {
    o.h = Max(z, Zero());
    if (kWantDerivative) o.d = Select(Greater(z, Zero()), Set1(1.0f), Zero());
  } else if constexpr (A == Activation::kLeakyRelu) {
    auto pos = Greater(z, Zero());
    o.h = Select(pos, z, Mul(z, Set1(kLeakyReluSlope)));
    if (kWantDerivative) o.d = Select(pos, Set1(1.0f), Set1(kLeakyReluSlope));
  } else {  // swish
    V s = Sigmoid(z);
    o.h = Mul(z, s);
    if (kWantDerivative) o.d = Fma(o.h, Sub(Set1(1.0f), s), s);  // s + h (1 - s)
  }
  return o;
}

// In place over n floats (a multiple of kLanes): out = act(out) * mask,
// dact = act'(z) * mask. Four independent vectors per iteration so that the
// long dependency chains of exp/tanh overlap.
template <Activation A, bool kD, bool kMask>
void ActivateSpan(float* out, float* dact, const float* mask, ptrdiff_t n) {
  ptrdiff_t i = 0;
  auto finish = [&](ptrdiff_t at, ActOut o) {
    if (kMask) {
      V m = simd::Load(mask + at);
      o.h = simd::Mul(o.h, m);
      if (kD) o.d = simd::Mul(o.d, m);
    }
    simd::Store(out + at, o.h);
    if (kD) simd::Store(dact + at, o.d);
  };
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    ActOut o0 = Activate<A, kD>(simd::Load(out + i));
    ActOut o1 = Activate<A, kD>(simd::Load(out + i + kLanes));
    ActOut o2 = Activate<A, kD>(simd::Load(out + i + 2 * kLanes));
    ActOut o3 = Activate<A, kD>(simd::Load(out + i + 3 * kLanes));
    finish(i, o0);
    finish(i + kLanes, o1);
    finish(i + 2 * kLanes, o2);
    finish(i + 3 * kLanes, o3);
  }
  for (; i < n; i += kLanes) finish(i, Activate<A, kD>(simd::Load(out + i)));
}

template <Activation A>
void ActivateSpanFor(float* out, float* dact, const float* mask, ptrdiff_t n) {
  if (dact) {
    if (mask) {
      ActivateSpan<A, true, true>(out, dact, mask, n);
    } else {
      ActivateSpan<A, true, false>(out, dact, mask, n);
    }
  } else {
    if (mask) {
      ActivateSpan<A, false, true>(out, dact, mask, n);
    } else {
      ActivateSpan<A, false, false>(out, dact, mask, n);
    }
  }
}

void ActivateSpanDispatch(Activation act, float* out, float* dact, const float* mask, ptrdiff_t n) {
  switch (act) {
    case Activation::kLinear:
      ActivateSpanFor<Activation::kLinear>(out, dact, mask, n);
      break;
    case Activation::kSigmoid:
      ActivateSpanFor<Activation::kSigmoid>(out, dact, mask, n);
      break;
    case Activation::kTanh:
      ActivateSpanFor<Activation::kTanh>(out, dact, mask, n);
      break;
    case Activation::kRelu:
      ActivateSpanFor<Activation::kRelu>(out, dact, mask, n);
      break;
    case Activation::kLeakyRelu:
      ActivateSpanFor<Activation::kLeakyRelu>(out, dact, mask, n);
      break;
    case Activation::kSwish:
      ActivateSpanFor<Activation::kSwish>(out, dact, mask, n);
      break;
  }
}

// Applies the activation to `rows` rows of nb values (stride ld) in place.
void ActivateRows(Activation act, float* out, float* dact, const float* mask, int rows, int ld,
                  int nb) {
  if (ld == nb) {
    ActivateSpanDispatch(act, out, dact, mask, static_cast<ptrdiff_t>(rows) * nb);
    return;
  }
  for (int r = 0; r < rows; ++r) {
    ptrdiff_t o = static_cast<ptrdiff_t>(r) * ld;
    ActivateSpanDispatch(act, out + o, dact ? dact + o : nullptr, mask ? mask + o : nullptr, nb);
  }
}

// acc[r][v] = sum_k A[r * a_rs + k * a_cs] * in[k * ld + v * kLanes], k < K.
template <int MR, int NV>
inline void TileProduct(const float* A, ptrdiff_t a_rs, ptrdiff_t a_cs, int K, const float* in,
                        ptrdiff_t ld, V (&acc)[MR][NV]) {
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) acc[r][v] = simd::Zero();
  }
  for (int k = 0; k < K; ++k) {
    const float* row = in + k * ld;
    V x[NV];
    for (int v = 0; v < NV; ++v) x[v] = simd::Load(row + v * kLanes);
    const float* a = A + k * a_cs;
    for (int r = 0; r < MR; ++r) {
      V w = simd::Set1(a[r * a_rs]);
      for (int v = 0; v < NV; ++v) acc[r][v] = simd::Fma(w, x[v], acc[r][v]);
    }
  }
}

// out = z = bias + W in, for an MR x (NV vectors) tile; the activation follows in ActivateRows.
template <int MR, int NV>
inline void ForwardTile(const float* W, const float* bias, const float* in, int K, ptrdiff_t ld,
                        float* out) {
  V acc[MR][NV];
  TileProduct<MR, NV>(W, K, 1, K, in, ld, acc);
  for (int r = 0; r < MR; ++r) {
    V b = simd::Set1(bias[r]);
    for (int v = 0; v < NV; ++v) simd::Store(out + r * ld + v * kLanes, simd::Add(acc[r][v], b));
  }
}

template <int MR>
void ForwardRows(const float* W, const float* bias, const float* in, int K, int ld, int nb,
                 Activation act, const float* mask, float* out, float* dact) {
  int nvec = nb / kLanes;
  int v = 0;
  for (; v + kNv <= nvec; v += kNv) {
    ForwardTile<MR, kNv>(W, bias, in + v * kLanes, K, ld, out + v * kLanes);
  }
  switch (nvec - v) {
    case 3:
      ForwardTile<MR, 3>(W, bias, in + v * kLanes, K, ld, out + v * kLanes);
      break;
    case 2:
      ForwardTile<MR, 2>(W, bias, in + v * kLanes, K, ld, out + v * kLanes);
      break;
    case 1:
      ForwardTile<MR, 1>(W, bias, in + v * kLanes, K, ld, out + v * kLanes);
      break;
    default:
      break;
  }
  // The rows just written are still in L1.
  ActivateRows(act, out, dact, mask, MR, ld, nb);
}

// kAdd: dprev += W^T dz (dact unused); else dprev = dact * (W^T dz).
template <int MR, int NV, bool kAdd>
inline void BackwardDataTile(const float* W, const float* dz, int M, int K, ptrdiff_t ld,
                             const float* dact, float* dprev) {
  V acc[MR][NV];
  // A(r, m) = W[m * K + r]: rows are the previous layer's units.
  TileProduct<MR, NV>(W, 1, K, M, dz, ld, acc);
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      ptrdiff_t off = r * ld + v * kLanes;
      if constexpr (kAdd) {
        simd::Store(dprev + off, simd::Add(acc[r][v], simd::Load(dprev + off)));
      } else {
        simd::Store(dprev + off, simd::Mul(acc[r][v], simd::Load(dact + off)));
      }
    }
  }
}

template <int MR, bool kAdd>
void BackwardDataRows(const float* W, const float* dz, int M, int K, int ld, int nb,
                      const float* dact, float* dprev) {
  int nvec = nb / kLanes;
  int v = 0;
  auto at = [](const float* p, int o) { return p ? p + o : nullptr; };
  for (; v + kNv <= nvec; v += kNv) {
    BackwardDataTile<MR, kNv, kAdd>(W, dz + v * kLanes, M, K, ld, at(dact, v * kLanes),
                                    dprev + v * kLanes);
  }
  int o = v * kLanes;
  switch (nvec - v) {
    case 3:
      BackwardDataTile<MR, 3, kAdd>(W, dz + o, M, K, ld, at(dact, o), dprev + o);
      break;
    case 2:
      BackwardDataTile<MR, 2, kAdd>(W, dz + o, M, K, ld, at(dact, o), dprev + o);
      break;
    case 1:
      BackwardDataTile<MR, 1, kAdd>(W, dz + o, M, K, ld, at(dact, o), dprev + o);
      break;
    default:
      break;
  }
}

template <bool kAdd>
void BackwardData(const float* W, const float* dz, int M, int K, int ld, int nb, const float* dact,
                  float* dprev) {
  auto rows = [&](ptrdiff_t o) { return dact ? dact + o : nullptr; };
  int k = 0;
  for (; k + kMr <= K; k += kMr) {
    ptrdiff_t o = static_cast<ptrdiff_t>(k) * ld;
    BackwardDataRows<kMr, kAdd>(W + k, dz, M, K, ld, nb, rows(o), dprev + o);
  }
  ptrdiff_t o = static_cast<ptrdiff_t>(k) * ld;
  switch (K - k) {
    case 3:
      BackwardDataRows<3, kAdd>(W + k, dz, M, K, ld, nb, rows(o), dprev + o);
      break;
    case 2:
      BackwardDataRows<2, kAdd>(W + k, dz, M, K, ld, nb, rows(o), dprev + o);
      break;
    case 1:
      BackwardDataRows<1, kAdd>(W + k, dz, M, K, ld, nb, rows(o), dprev + o);
      break;
    default:
      break;
  }
}

#if defined(__AVX512F__)
// Sums each of 16 vectors; lane 4 r + c of the result is the sum of v[4 r + c].
inline __m512 Reduce16(const __m512 (&v)[16]) {
  __m512 a[8];
  for (int p = 0; p < 8; ++p) {
    a[p] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * p], v[2 * p + 1]),
                         _mm512_unpackhi_ps(v[2 * p], v[2 * p + 1]));
  }
  __m512 b[4];
  for (int p = 0; p < 4; ++p) {
    __m512d x = _mm512_castps_pd(a[2 * p]);
    __m512d y = _mm512_castps_pd(a[2 * p + 1]);
    b[p] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  __m512 c01 = _mm512_add_ps(_mm512_shuffle_f32x4(b[0], b[1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_f32x4(b[0], b[1], _MM_SHUFFLE(3, 2, 3, 2)));
  __m512 c23 = _mm512_add_ps(_mm512_shuffle_f32x4(b[2], b[3], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_f32x4(b[2], b[3], _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(c01, c23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(c01, c23, _MM_SHUFFLE(3, 1, 3, 1)));
}
#endif

#if defined(__AVX2__) && !defined(__AVX512F__)
// Sums each of 8 vectors; lane i of the result is the sum of v[i].
inline __m256 Reduce8(const __m256 (&v)[8]) {
  const __m256 a0 = _mm256_hadd_ps(v[0], v[1]);
  const __m256 a1 = _mm256_hadd_ps(v[2], v[3]);
  const __m256 a2 = _mm256_hadd_ps(v[4], v[5]);
  const __m256 a3 = _mm256_hadd_ps(v[6], v[7]);
  const __m256 b0 = _mm256_hadd_ps(a0, a1);  // v0..v3 over lanes 0-3, then over lanes 4-7
  const __m256 b1 = _mm256_hadd_ps(a2, a3);
  return _mm256_add_ps(_mm256_permute2f128_ps(b0, b1, 0x20), _mm256_permute2f128_ps(b0, b1, 0x31));
}
#endif

// gw[r * K + c] += sum_b dz[r * ld + b] * in[c * ld + b] for an MR x KR tile.
template <int MR, int KR>
inline void WeightsTile(const float* dz, const float* in, int K, ptrdiff_t ld, int nb, float* gw) {
  V acc[MR][KR];
  for (int r = 0; r < MR; ++r) {
    for (int c = 0; c < KR; ++c) acc[r][c] = simd::Zero();
  }
  for (int b = 0; b < nb; b += kLanes) {
    V x[KR];
    for (int c = 0; c < KR; ++c) x[c] = simd::Load(in + c * ld + b);
    for (int r = 0; r < MR; ++r) {
      V d = simd::Load(dz + r * ld + b);
      for (int c = 0; c < KR; ++c) acc[r][c] = simd::Fma(d, x[c], acc[r][c]);
    }
  }
#if defined(__AVX2__) && !defined(__AVX512F__)
  if constexpr (MR == 2 && KR == 4) {
    __m256 flat[8];
    for (int r = 0; r < 2; ++r) {
      for (int c = 0; c < 4; ++c) flat[r * 4 + c] = acc[r][c];
    }
    const __m256 s = Reduce8(flat);
    _mm_storeu_ps(gw, _mm_add_ps(_mm_loadu_ps(gw), _mm256_castps256_ps128(s)));
    _mm_storeu_ps(gw + K, _mm_add_ps(_mm_loadu_ps(gw + K), _mm256_extractf128_ps(s, 1)));
    return;
  }
#endif
#if defined(__AVX512F__)
  if constexpr (MR == 4 && KR == 4) {
    __m512 flat[16];
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < 4; ++c) flat[r * 4 + c] = acc[r][c];
    }
    __m512 s = Reduce16(flat);
    alignas(64) float sums[16];
    _mm512_store_ps(sums, s);
    for (int r = 0; r < 4; ++r) {
      __m128 g = _mm_loadu_ps(gw + r * K);
      _mm_storeu_ps(gw + r * K, _mm_add_ps(g, _mm_load_ps(sums + 4 * r)));
    }
    return;
  }
#endif
  for (int r = 0; r < MR; ++r) {
    for (int c = 0; c < KR; ++c) gw[r * K + c] += simd::ReduceAdd(acc[r][c]);
  }
}

template <int MR>
void WeightsRows(const float* dz, const float* in, int K, int ld, int nb, float* gw) {
  int k = 0;
  for (; k + 4 <= K; k += 4) WeightsTile<MR, 4>(dz, in + k * ld, K, ld, nb, gw + k);
  switch (K - k) {
    case 3:
      WeightsTile<MR, 3>(dz, in + k * ld, K, ld, nb, gw + k);
      break;
    case 2:
      WeightsTile<MR, 2>(dz, in + k * ld, K, ld, nb, gw + k);
      break;
    case 1:
      WeightsTile<MR, 1>(dz, in + k * ld, K, ld, nb, gw + k);
      break;
    default:
      break;
  }
}

inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

void TransposeToFeatureMajor(const float* x, int batch, int cols, int ld, float* out) {
  // Blocks of 16 rows keep both sides in cache lines.
  for (int b0 = 0; b0 < batch; b0 += 16) {
    int bn = batch - b0 < 16 ? batch - b0 : 16;
    for (int c = 0; c < cols; ++c) {
      float* o = out + static_cast<ptrdiff_t>(c) * ld + b0;
      const float* xi = x + static_cast<ptrdiff_t>(b0) * cols + c;
      for (int b = 0; b < bn; ++b) o[b] = xi[static_cast<ptrdiff_t>(b) * cols];
    }
  }
  for (int c = 0; c < cols; ++c) {
    float* o = out + static_cast<ptrdiff_t>(c) * ld;
    for (int b = batch; b < ld; ++b) o[b] = 0.0f;
  }
}

void DenseForward(const float* W, const float* bias, const float* in, int M, int K, int ld, int nb,
                  Activation act, const float* mask, float* out, float* dact) {
  int m = 0;
  auto row = [&](const float* p) { return p ? p + static_cast<ptrdiff_t>(m) * ld : nullptr; };
  auto roww = [&](float* p) { return p ? p + static_cast<ptrdiff_t>(m) * ld : nullptr; };
  for (; m + kMr <= M; m += kMr) {
    ForwardRows<kMr>(W + m * K, bias + m, in, K, ld, nb, act, row(mask), roww(out), roww(dact));
  }
  switch (M - m) {
    case 3:
      ForwardRows<3>(W + m * K, bias + m, in, K, ld, nb, act, row(mask), roww(out), roww(dact));
      break;
    case 2:
      ForwardRows<2>(W + m * K, bias + m, in, K, ld, nb, act, row(mask), roww(out), roww(dact));
      break;
    case 1:
      ForwardRows<1>(W + m * K, bias + m, in, K, ld, nb, act, row(mask), roww(out), roww(dact));
      break;
    default:
      break;
  }
}

void DenseBackwardData(const float* W, const float* dz, int M, int K, int ld, int nb,
                       const float* dact, float* dprev) {
  BackwardData<false>(W, dz, M, K, ld, nb, dact, dprev);
}

void DenseBackwardDataAdd(const float* W, const float* dz, int M, int K, int ld, int nb,
                          float* dprev) {
  BackwardData<true>(W, dz, M, K, ld, nb, nullptr, dprev);
}

void DenseBackwardWeights(const float* dz, const float* in, int M, int K, int ld, int nb, float* gw,
                          float* gb) {
  int m = 0;
  for (; m + kWr <= M; m += kWr) {
    WeightsRows<kWr>(dz + static_cast<ptrdiff_t>(m) * ld, in, K, ld, nb, gw + m * K);
  }
  const float* d = dz + static_cast<ptrdiff_t>(m) * ld;
  switch (M - m) {
    case 3:
      WeightsRows<3>(d, in, K, ld, nb, gw + m * K);
      break;
    case 2:
      WeightsRows<2>(d, in, K, ld, nb, gw + m * K);
      break;
    case 1:
      WeightsRows<1>(d, in, K, ld, nb, gw + m * K);
      break;
    default:
      break;
  }
  for (int u = 0; u < M; ++u) {
    const float* row = dz + static_cast<ptrdiff_t>(u) * ld;
    V s = simd::Zero();
    for (int b = 0; b < nb; b += kLanes) s = simd::Add(s, simd::Load(row + b));
    gb[u] += simd::ReduceAdd(s);
  }
}

double OutputLossGrad(LossKind loss, Activation out_act, const float* p, const float* dact,
                      const float* y, const float* w, int nb, float* dz) {
  using namespace simd;
  V total = Zero();
  const V one = Set1(1.0f);
  const V lo = Set1(1e-7f);
  const V hi = Set1(1.0f - 1e-7f);
  for (int b = 0; b < nb; b += kLanes) {
    V pv = Load(p + b);
    V yv = Load(y + b);
    V wv = Load(w + b);
    V diff = Sub(pv, yv);
    V l, g;
    switch (loss) {
      case LossKind::kLog: {
        V pc = Min(Max(pv, lo), hi);
        // -(y log p + (1 - y) log(1 - p))
        l = Sub(Zero(), Fma(yv, Log(pc), Mul(Sub(one, yv), Log(Sub(one, pc)))));
        if (out_act == Activation::kSigmoid) {
          g = diff;  // d/dz of log loss through the sigmoid
        } else {
          g = Mul(Div(diff, Mul(pc, Sub(one, pc))), Load(dact + b));
        }
        break;
      }
      case LossKind::kSquared:
        l = Mul(Set1(0.5f), Mul(diff, diff));
        g = Mul(diff, Load(dact + b));
        break;
      case LossKind::kAbsolute:
      default: {
        l = Abs(diff);
        V sign =
            Select(Greater(diff, Zero()), one, Select(Less(diff, Zero()), Set1(-1.0f), Zero()));
        g = Mul(sign, Load(dact + b));
        break;
      }
    }
    // w = 0 rows (the batch padding) contribute exactly 0, even if l is not finite.
    auto active = Greater(Abs(wv), Zero());
    total = Add(total, Select(active, Mul(wv, l), Zero()));
    Store(dz + b, Select(active, Mul(wv, g), Zero()));
  }
  return static_cast<double>(ReduceAdd(total));
}

void ApplyActivation(Activation act, const float* z, int n, float* out) {
  int full = n / kLanes * kLanes;
  std::copy(z, z + full, out);
  ActivateSpanDispatch(act, out, nullptr, nullptr, full);
  if (full < n) {
    alignas(64) float buf[kLanes] = {};
    std::copy(z + full, z + n, buf);
    ActivateSpanDispatch(act, buf, nullptr, nullptr, kLanes);
    std::copy(buf, buf + (n - full), out + full);
  }
}

void ActivateInPlace(Activation act, float* x, float* dact, ptrdiff_t n) {
  ActivateSpanDispatch(act, x, dact, nullptr, n);
}

void DropoutMask(uint64_t seed, int layer, int64_t first_row, float rate, int units, int batch,
                 int ld, int nb, float* mask) {
  const float keep = 1.0f / (1.0f - rate);
  // 16-bit uniforms: the rate is resolved to 1/65536.
  const uint32_t threshold = static_cast<uint32_t>(static_cast<double>(rate) * 65536.0 + 0.5);
  const uint64_t layer_key = Mix64(seed ^ (static_cast<uint64_t>(layer) * 0xd1342543de82ef95ull));
  for (int b = 0; b < nb; ++b) {
    if (b >= batch) {
      for (int u = 0; u < units; ++u) mask[static_cast<ptrdiff_t>(u) * ld + b] = 0.0f;
      continue;
    }
    uint64_t row_key = Mix64(layer_key ^ static_cast<uint64_t>(first_row + b));
    for (int u0 = 0; u0 < units; u0 += 4) {
      uint64_t bits = Mix64(row_key + static_cast<uint64_t>(u0));
      for (int j = 0; j < 4 && u0 + j < units; ++j) {
        uint32_t r = static_cast<uint32_t>(bits >> (16 * j)) & 0xffffu;
        mask[static_cast<ptrdiff_t>(u0 + j) * ld + b] = r < threshold ? 0.0f : keep;
      }
    }
  }
}

}  // namespace tarn::model::kernels
