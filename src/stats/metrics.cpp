#include "stats/metrics.h"

#include <algorithm>  // for clamp, max
#include <cassert>    // for assert
#include <cmath>      // for log, fabs

namespace tarn::stats {
namespace {

// Shifu's ColumnStatsCalculator.EPS.
constexpr double kEps = 1e-10;

}  // namespace

BinMetrics ComputeBinMetrics(const std::vector<double>& count_neg,
                             const std::vector<double>& count_pos) {
  assert(count_neg.size() == count_pos.size());
  const size_t bins = count_neg.size();
  BinMetrics out;
  out.bin_woe.assign(bins, 0.0);
  double total_neg = 0.0;
  double total_pos = 0.0;
  for (size_t i = 0; i < bins; ++i) {
    total_neg += count_neg[i];
    total_pos += count_pos[i];
  }
  if (total_neg == 0.0 || total_pos == 0.0) return out;

  out.woe = std::log((total_neg + kEps) / (total_pos + kEps));
  double cum_neg = 0.0;
  double cum_pos = 0.0;
  for (size_t i = 0; i < bins; ++i) {
    const double n = count_neg[i] / total_neg;
    const double p = count_pos[i] / total_pos;
    const double bin_woe = std::log((n + kEps) / (p + kEps));
    out.bin_woe[i] = bin_woe;
    out.iv += (n - p) * bin_woe;
    cum_neg += n;
    cum_pos += p;
    out.ks = std::max(out.ks, std::fabs(cum_pos - cum_neg));
  }
  out.ks *= 100.0;
  return out;
}

std::vector<double> PositiveRates(const std::vector<double>& count_neg,
                                  const std::vector<double>& count_pos) {
  assert(count_neg.size() == count_pos.size());
  std::vector<double> rates(count_neg.size(), 0.0);
  for (size_t i = 0; i < rates.size(); ++i) {
    const double n = count_pos[i] + count_neg[i];
    if (n != 0.0) rates[i] = count_pos[i] / n;
  }
  return rates;
}

double PercentileFromBins(const std::vector<double>& boundaries, const std::vector<double>& counts,
                          double min, double max, double q) {
  assert(boundaries.size() == counts.size());
  double total = 0.0;
  for (double c : counts) total += c;
  if (!(total > 0.0)) return min;
  const double target = std::clamp(q, 0.0, 1.0) * total;
  double cumulative = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double c = counts[i];
    if (c > 0.0 && target < cumulative + c) {
      const double lo = i == 0 ? min : std::clamp(boundaries[i], min, max);
      const double hi = i + 1 < boundaries.size() ? std::clamp(boundaries[i + 1], min, max) : max;
      const double value = lo + (target - cumulative) / c * (hi - lo);
      return std::clamp(value, min, max);
    }
    cumulative += c;
  }
  return max;
}

}  // namespace tarn::stats
