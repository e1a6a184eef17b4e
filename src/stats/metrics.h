// Per-column predictive metrics from bin counts (KS, IV, WOE) and bin-based
// percentiles, as Shifu's ColumnStatsCalculator and UpdateBinningInfoReducer.
#pragma once

#include <vector>  // for vector

namespace tarn::stats {

struct BinMetrics {
  double ks = 0.0;              // 100 · max_k |cumP_k − cumN_k|
  double iv = 0.0;              // Σ (n_i/N − p_i/P) · bin_woe_i
  double woe = 0.0;             // ln((N + eps) / (P + eps))
  std::vector<double> bin_woe;  // ln((n_i/N + eps) / (p_i/P + eps)) per entry
};

/// Shifu's calculateColumnMetrics(double[] negative, double[] positive), the
/// overload of the default (SPDTI / MapReduce) stats path, with eps = 1e-10.
/// WOE is negative-over-positive: a bin rich in positives has negative WOE.
/// (Shifu's local Akka path uses positive-over-negative, flipping every WOE
/// sign; IV and KS agree either way.)
///
/// Every entry counts, the trailing missing-value bin included; pass counts
/// for the weighted variants' weights. The two vectors must have the same
/// size (checked by assertion).
///
/// When N == 0 or P == 0 (no negatives or no positives, or no entries) Shifu
/// returns no metrics and writes zeros for the bin WOEs; this returns the
/// same: ks = iv = woe = 0 and bin_woe all 0, one per entry.
BinMetrics ComputeBinMetrics(const std::vector<double>& count_neg,
                             const std::vector<double>& count_pos);

/// pos_i / (pos_i + neg_i) per bin; 0 for an empty bin (Shifu's binPosRate).
std::vector<double> PositiveRates(const std::vector<double>& count_neg,
                                  const std::vector<double>& count_pos);

/// The q-quantile (q in [0, 1], clamped) of a numeric column from its bins:
/// bin i spans [lo_i, hi_i) with lo_0 = min, lo_i = boundaries[i],
/// hi_i = boundaries[i+1] and the last bin's hi = max; the quantile is
/// interpolated linearly inside the bin where the cumulative count passes
/// q·total, as Shifu's UpdateBinningInfoReducer does for median, 25th and
/// 75th. `counts` holds the non-missing bins only (one per boundary).
///
/// Differences from Shifu, which are its bugs: Shifu interpolates bin 0 from
/// its -inf lower edge (giving -inf or NaN) and returns the last bin's lower
/// edge without interpolating; it also targets floor(count/4) with the count
/// including missing values. Here the target is q·Σcounts, bins use min and
/// max as outer edges, and the result is clamped to [min, max]. Returns min
/// when the counts sum to 0, max for q = 1.
double PercentileFromBins(const std::vector<double>& boundaries, const std::vector<double>& counts,
                          double min, double max, double q);

}  // namespace tarn::stats
