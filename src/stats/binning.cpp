#include "stats/binning.h"

#include <array>    // for array
#include <cmath>    // for fabs
#include <limits>   // for numeric_limits
#include <utility>  // for pair

#include "common/strings.h"  // for EqualsIgnoreCase, Join

namespace tarn::stats {
namespace {

constexpr std::array<std::pair<BinningMethod, const char*>, 8> kMethodNames{{
    {BinningMethod::kEqualPositive, "EqualPositive"},
    {BinningMethod::kEqualNegative, "EqualNegative"},
    {BinningMethod::kEqualTotal, "EqualTotal"},
    {BinningMethod::kEqualInterval, "EqualInterval"},
    {BinningMethod::kWeightEqualPositive, "WeightEqualPositive"},
    {BinningMethod::kWeightEqualNegative, "WeightEqualNegative"},
    {BinningMethod::kWeightEqualTotal, "WeightEqualTotal"},
    {BinningMethod::kWeightEqualInterval, "WeightEqualInterval"},
}};

// Shifu's EqualIntervalBinning.isLegalDouble.
bool IsLegal(double v) { return std::fabs(v) < 1e100; }

}  // namespace

Result<BinningMethod> ParseBinningMethod(std::string_view name) {
  for (const auto& [method, spelling] : kMethodNames) {
    if (EqualsIgnoreCase(name, spelling)) return method;
  }
  std::vector<std::string> valid;
  for (const auto& entry : kMethodNames) valid.emplace_back(entry.second);
  return InvalidArgument("unknown binningMethod \"" + std::string(name) + "\"; valid values are " +
                         Join(valid, ", "));
}

const char* BinningMethodName(BinningMethod method) {
  for (const auto& [m, spelling] : kMethodNames) {
    if (m == method) return spelling;
  }
  return "?";
}

bool UsesWeights(BinningMethod method) {
  switch (method) {
    case BinningMethod::kWeightEqualPositive:
    case BinningMethod::kWeightEqualNegative:
    case BinningMethod::kWeightEqualTotal:
    case BinningMethod::kWeightEqualInterval:
      return true;
    default:
      return false;
  }
}

bool CountsPositivesOnly(BinningMethod method) {
  return method == BinningMethod::kEqualPositive || method == BinningMethod::kWeightEqualPositive;
}

bool CountsNegativesOnly(BinningMethod method) {
  return method == BinningMethod::kEqualNegative || method == BinningMethod::kWeightEqualNegative;
}

bool IsEqualInterval(BinningMethod method) {
  return method == BinningMethod::kEqualInterval || method == BinningMethod::kWeightEqualInterval;
}

std::vector<double> EqualIntervalBoundaries(double min, double max, int num_bins) {
  std::vector<double> cuts{-std::numeric_limits<double>::infinity()};
  if (num_bins <= 1 || !(max > min) || !IsLegal(min) || !IsLegal(max)) return cuts;
  const double width = (max - min) / (num_bins - 1);
  cuts.reserve(num_bins);
  // Accumulated as Shifu does (start + w, + w, ...), so the cuts written to
  // ColumnConfig.json are bit-identical to Shifu's.
  double cut = min + width / 2;
  for (int k = 0; k < num_bins - 1; ++k) {
    if (cut > cuts.back()) cuts.push_back(cut);
    cut += width;
  }
  return cuts;
}

}  // namespace tarn::stats
