#include "stats/hyperloglog.h"

#include <algorithm>  // for max, clamp
#include <array>      // for array
#include <cmath>      // for log, sqrt, llround, isinf
#include <limits>     // for numeric_limits

namespace tarn::stats {
namespace {

// σ(x) = x + Σ_{k≥1} x^(2^k)·2^(k−1), the small-range term (Ertl eq. 19);
// diverges at x = 1 (all registers empty).
double Sigma(double x) {
  if (x == 1.0) return std::numeric_limits<double>::infinity();
  double y = 1.0;
  double z = x;
  double previous;
  do {
    x *= x;
    previous = z;
    z += x * y;
    y += y;
  } while (z != previous);
  return z;
}

// τ(x) = (1/3)·(1 − x − Σ_{k≥1} (1 − x^(2^−k))²·2^−k), the large-range term
// (Ertl eq. 24); it only matters once registers saturate at q + 1.
double Tau(double x) {
  if (x == 0.0 || x == 1.0) return 0.0;
  double y = 1.0;
  double z = 1.0 - x;
  double previous;
  do {
    x = std::sqrt(x);
    previous = z;
    y *= 0.5;
    z -= (1.0 - x) * (1.0 - x) * y;
  } while (z != previous);
  return z / 3.0;
}

}  // namespace

HyperLogLog::HyperLogLog(int precision)
    : precision_(std::clamp(precision, kMinPrecision, kMaxPrecision)) {
  assert(precision >= kMinPrecision && precision <= kMaxPrecision &&
         "HyperLogLog precision must be in [4, 18]");
  registers_.assign(size_t{1} << precision_, 0);
}

void HyperLogLog::Merge(const HyperLogLog& other) {
  if (other.precision_ > precision_) {
    Merge(other.Reduced(precision_));
    return;
  }
  if (other.precision_ < precision_) *this = Reduced(other.precision_);
  const size_t m = registers_.size();
  uint8_t* dst = registers_.data();
  const uint8_t* src = other.registers_.data();
  for (size_t i = 0; i < m; ++i) dst[i] = std::max(dst[i], src[i]);
}

HyperLogLog HyperLogLog::Reduced(int precision) const {
  assert(precision >= kMinPrecision && precision <= precision_);
  precision = std::clamp(precision, kMinPrecision, precision_);
  HyperLogLog out(precision);
  const int d = precision_ - precision;  // index bits that move into the rank
  const uint64_t low_mask = (uint64_t{1} << d) - 1;
  for (size_t j = 0; j < registers_.size(); ++j) {
    const uint8_t r = registers_[j];
    if (r == 0) continue;  // nothing hashed here
    // The d dropped index bits lead the rank bits: if any is set the rank is
    // fixed by them, otherwise it is d plus the old rank.
    const uint64_t dropped = j & low_mask;
    const auto rank = static_cast<uint8_t>(dropped != 0 ? d - std::bit_width(dropped) + 1 : d + r);
    uint8_t& reg = out.registers_[j >> d];
    if (rank > reg) reg = rank;
  }
  return out;
}

uint64_t HyperLogLog::Estimate() const {
  const int q = 64 - precision_;  // rank bits; registers hold 0..q+1
  std::array<uint64_t, 66> histogram{};
  for (uint8_t r : registers_) ++histogram[r];
  const double m = static_cast<double>(registers_.size());
  double z = m * Tau(1.0 - static_cast<double>(histogram[q + 1]) / m);
  for (int k = q; k >= 1; --k) z = 0.5 * (z + static_cast<double>(histogram[k]));
  z += m * Sigma(static_cast<double>(histogram[0]) / m);
  if (std::isinf(z)) return 0;                          // nothing added
  constexpr double kAlphaInf = 0.72134752044448170368;  // 1 / (2 ln 2)
  return static_cast<uint64_t>(std::llround(kAlphaInf * m * m / z));
}

}  // namespace tarn::stats
