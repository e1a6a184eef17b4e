// Numeric binning: Shifu's binning methods, equal-interval cut points and
// the bin lookup used on every value of every numeric column.
#pragma once

#include <cmath>        // for isnan
#include <string>       // for string
#include <string_view>  // for string_view
#include <vector>       // for vector

#include "common/status.h"

namespace tarn::stats {

/// ModelConfig.json stats.binningMethod. Which records decide the numeric
/// cut points (AddColumnNumAndFilterUDF): EqualPositive positives only,
/// EqualNegative negatives only, EqualTotal and EqualInterval all records.
/// The Weight* variants count each record by its weight.
enum class BinningMethod {
  kEqualPositive,
  kEqualNegative,
  kEqualTotal,
  kEqualInterval,
  kWeightEqualPositive,
  kWeightEqualNegative,
  kWeightEqualTotal,
  kWeightEqualInterval,
};

/// Parses Shifu's spelling ("EqualPositive", "WeightEqualTotal", ...),
/// ignoring ASCII case. The error lists every valid name.
Result<BinningMethod> ParseBinningMethod(std::string_view name);
/// Shifu's spelling, e.g. "WeightEqualInterval".
const char* BinningMethodName(BinningMethod method);

/// True for the Weight* methods: records count by weight, not by one.
bool UsesWeights(BinningMethod method);
/// True for (Weight)EqualPositive: only positive records feed the cut points.
bool CountsPositivesOnly(BinningMethod method);
/// True for (Weight)EqualNegative: only negative records feed the cut points.
bool CountsNegativesOnly(BinningMethod method);
/// True for (Weight)EqualInterval: cut points come from min and max alone.
bool IsEqualInterval(BinningMethod method);

/// Shifu's EqualIntervalBinning.getDataBin: {-inf, min + w/2 + k·w for
/// k = 0..B−2} with w = (max − min)/(B − 1), i.e. B bins whose inner cuts sit
/// halfway between B evenly spaced points from min to max (so the first and
/// last bins are half as wide as the others). Returns {-inf} (one bin) when
/// num_bins <= 1, when max <= min (Shifu would emit B−1 copies of min), or
/// when either end is not finite or beyond ±1e100 (Shifu ignores such
/// values). Cuts that rounding makes equal are dropped.
std::vector<double> EqualIntervalBoundaries(double min, double max, int num_bins);

/// The bin of `x` for cut points `boundaries` (sorted, boundaries[0] == -inf):
/// the i with boundaries[i] <= x < boundaries[i+1], the last bin reaching
/// +inf. A value equal to a cut goes to the bin above, as in Shifu's
/// BinUtils.getBinIndex; a value below boundaries[0] goes to bin 0. NaN
/// returns -1 (missing). This runs on every value: up to 32 cuts it counts the cuts at or below
/// x (independent compares the compiler vectorizes; a binary search waits on each load), beyond
/// that a branch-free binary search.
inline int FindNumericBin(const std::vector<double>& boundaries, double x) {
  if (std::isnan(x)) return -1;
  const double* base = boundaries.data();
  size_t n = boundaries.size();
  if (n == 0) return 0;
  if (n <= 32) {
    int below = 0;  // sorted: the cuts b_1.. at or below x are exactly those before the bin's end
    for (size_t i = 1; i < n; ++i) below += base[i] <= x;
    return below;
  }
  // Invariant: the answer is in [base, base + n); halve without branching.
  while (n > 1) {
    const size_t half = n / 2;
    base = (base[half] <= x) ? base + half : base;
    n -= half;
  }
  return static_cast<int>(base - boundaries.data());
}

}  // namespace tarn::stats
