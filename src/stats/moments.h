// Moments: a mergeable one-pass summary of a numeric column (count, min, max,
// mean, standard deviation, skewness, kurtosis), as Shifu reports them in
// ColumnConfig.json columnStats.
#pragma once

#include <algorithm>  // for min, max
#include <cstdint>    // for uint64_t
#include <limits>     // for numeric_limits

namespace tarn::stats {

/// Streaming central moments up to the fourth, kept in Welford/Pébay form
/// (running mean plus sums of centred powers) rather than Shifu's raw power
/// sums Σx, Σx², Σx³, Σx⁴: the raw form loses every significant digit when
/// |mean| ≫ stddev (e.g. epoch timestamps), the centred form does not.
///
/// Add() is the per-row hot path (one division, ~20 flops). Merge() is exact
/// (Chan et al. / Pébay 2008 pairwise formulas), so per-thread or per-chunk
/// summaries combine into the same result as one pass, up to rounding.
///
/// Values must be finite: missing and invalid values are the caller's to count
/// and skip (Shifu excludes them from every moment). Not thread-safe; give
/// each thread its own and Merge().
struct Moments {
  /// Shifu adds this to the sum of squared deviations before taking the
  /// population variance used by skewness and kurtosis
  /// (UpdateBinningInfoReducer: `aStdDev = sqrt(|Σx² − (Σx)²/n + 1e-6| / n)`).
  /// It keeps constant columns at 0 instead of 0/0; tarn keeps it so the
  /// numbers match Shifu's ColumnConfig.json.
  static constexpr double kShifuVarianceEps = 1e-6;

  uint64_t count = 0;                                     // rows added (weights do not change it)
  double weight_sum = 0.0;                                // Σw
  double weighted_sum = 0.0;                              // Σw·x, for WeightedMean()
  double min = std::numeric_limits<double>::infinity();   // +inf while empty
  double max = -std::numeric_limits<double>::infinity();  // -inf while empty
  double mean = 0.0;                                      // running unweighted mean
  double m2 = 0.0;                                        // Σ(x−mean)²
  double m3 = 0.0;                                        // Σ(x−mean)³
  double m4 = 0.0;                                        // Σ(x−mean)⁴

  /// Adds one row. The moments are unweighted, as Shifu's are; `weight` only
  /// feeds weight_sum and weighted_sum.
  void Add(double x, double weight = 1.0) {
    const double n1 = static_cast<double>(count);
    const double n = n1 + 1.0;
    const double delta = x - mean;
    const double delta_n = delta / n;
    const double delta_n2 = delta_n * delta_n;
    const double term1 = delta * delta_n * n1;
    // Update order matters: m4 uses the old m2 and m3, m3 the old m2.
    m4 += term1 * delta_n2 * (n * n - 3.0 * n + 3.0) + 6.0 * delta_n2 * m2 - 4.0 * delta_n * m3;
    m3 += term1 * delta_n * (n - 2.0) - 3.0 * delta_n * m2;
    m2 += term1;
    mean += delta_n;
    ++count;
    min = std::min(min, x);
    max = std::max(max, x);
    weight_sum += weight;
    weighted_sum += weight * x;
  }

  /// Adds `times` rows of the same value in O(1) (e.g. a categorical bin's
  /// positive rate once per record in the bin, as Shifu's categorical stats
  /// do). `weight` is the total weight of those rows.
  void AddRepeated(double x, uint64_t times, double weight);

  /// Folds `other` in; the result equals one pass over both inputs.
  void Merge(const Moments& other);

  /// Unweighted mean; 0 while empty.
  double Mean() const { return count ? mean : 0.0; }
  /// Σw·x / Σw; 0 when the weights sum to 0.
  double WeightedMean() const { return weight_sum != 0.0 ? weighted_sum / weight_sum : 0.0; }
  /// Sample variance (n−1 denominator); 0 when count < 2.
  double SampleVariance() const;
  /// sqrt(SampleVariance()): Shifu's columnStats.stdDev. Shifu also adds its
  /// 1e-6 to the numerator here; tarn does not (it only shows for constant
  /// columns, where Shifu reports sqrt(1e-6/(n−1)) instead of 0).
  double SampleStdDev() const;
  /// Population skewness g1 = (m3/n) / σ³ with σ² = (m2 + 1e-6)/n, exactly
  /// Shifu's ColumnStatsCalculator.computeSkewness (NIST handbook §1.3.5.11,
  /// no small-sample correction). 0 when count == 0.
  double Skewness() const;
  /// Population kurtosis b2 = (m4/n) / σ⁴ with the same σ: Shifu's
  /// computeKurtosis. Not excess kurtosis: a normal sample gives ~3. 0 when
  /// count == 0.
  double Kurtosis() const;
};

}  // namespace tarn::stats
