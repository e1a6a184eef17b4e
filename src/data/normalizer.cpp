#include "data/normalizer.h"

#include <algorithm>
#include <cmath>

#include "common/strings.h"

namespace tarn::data {

namespace {

struct NormName {
  const char* name;
  NormType type;
};
constexpr NormName kNormNames[] = {
    {"ZSCALE", NormType::kZScale},
    {"ZSCORE", NormType::kZScale},
    {"OLD_ZSCALE", NormType::kOldZScale},
    {"OLD_ZSCORE", NormType::kOldZScale},
    {"WOE", NormType::kWoe},
    {"WEIGHT_WOE", NormType::kWeightWoe},
    {"WOE_ZSCORE", NormType::kWoeZScore},
    {"WOE_ZSCALE", NormType::kWoeZScore},
    {"HYBRID", NormType::kHybrid},
    {"ONEHOT", NormType::kOneHot},
    {"ZSCALE_ONEHOT", NormType::kZScaleOneHot},
    {"ASIS_WOE", NormType::kAsIsWoe},
    {"ASIS_PR", NormType::kAsIsPr},
};

// Shifu's z-score with cutoff: clip to mean +- cutoff*sd first.
double ZScore(double v, double mean, double sd, double cutoff) {
  if (sd <= kMinZScoreStdDev) return 0;
  double lo = mean - cutoff * sd, hi = mean + cutoff * sd;
  v = std::clamp(v, lo, hi);
  return (v - mean) / sd;
}

}  // namespace

Result<NormType> ParseNormType(std::string_view name) {
  std::string upper(Trim(name));
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& n : kNormNames)
    if (upper == n.name) return n.type;
  std::string supported;
  for (const auto& n : kNormNames) supported += std::string(supported.empty() ? "" : ", ") + n.name;
  return Unsupported("normalize.normType '" + std::string(name) +
                     "' is not supported by tarn; supported: " + supported);
}

const char* NormTypeName(NormType t) {
  for (const auto& n : kNormNames)
    if (n.type == t) return n.name;
  return "?";
}

Result<ColumnNormalizer> ColumnNormalizer::Create(const ColumnConfig& c, NormType type,
                                                  double cutoff) {
  if (!c.HasStats()) {
    return FailedPrecondition("column '" + c.column_name +
                              "' has no stats or bins; run 'tarn stats' first");
  }
  ColumnNormalizer n;
  n.name_ = c.column_name;
  n.column_num_ = c.column_num;
  n.categorical_ = c.IsCategorical();
  n.cutoff_ = cutoff;
  n.mean_ = *c.stats.mean;
  n.std_dev_ = *c.stats.std_dev;
  n.missing_bin_ = c.binning.length;
  const auto& b = c.binning;
  if (n.categorical_) {
    for (int i = 0; i < static_cast<int>(b.bin_category.size()); ++i) {
      for (const auto& cat : Split(b.bin_category[i], "@^")) n.category_bin_.emplace(cat, i);
    }
  } else {
    n.boundaries_ = b.bin_boundary;
    if (n.boundaries_.empty()) {
      return FailedPrecondition("numeric column '" + c.column_name + "' has no binBoundary");
    }
  }
  size_t bins = static_cast<size_t>(b.length) + 1;
  auto need = [&](const std::vector<double>& v, const char* what) -> Status {
    if (v.size() != bins) {
      return FailedPrecondition("column '" + c.column_name + "': " + what + " has " +
                                std::to_string(v.size()) + " entries, expected " +
                                std::to_string(bins) + "; rerun 'tarn stats'");
    }
    return Status::Ok();
  };

  bool use_woe = false, use_pr = false, onehot = false, raw = false, weighted = false;
  switch (type) {
    case NormType::kZScale:
      if (n.categorical_) {
        use_pr = true;
        n.zscore_bin_value_ = true;
      }
      break;
    case NormType::kOldZScale:
      use_pr = n.categorical_;
      break;
    case NormType::kWoe:
      use_woe = true;
      break;
    case NormType::kWeightWoe:
      use_woe = weighted = true;
      break;
    case NormType::kWoeZScore:
      use_woe = n.zscore_bin_value_ = true;
      break;
    case NormType::kHybrid:
      use_woe = n.categorical_;
      break;
    case NormType::kOneHot:
      onehot = true;
      break;
    case NormType::kZScaleOneHot:
      onehot = n.categorical_;
      break;
    case NormType::kAsIsWoe:
      use_woe = n.categorical_;
      raw = !n.categorical_;
      break;
    case NormType::kAsIsPr:
      use_pr = n.categorical_;
      raw = !n.categorical_;
      break;
  }
  if (onehot) {
    n.kind_ = Kind::kOneHot;
    n.width_ = static_cast<int>(bins);
  } else if (use_woe) {
    const auto& woe = weighted ? b.bin_weighted_woe : b.bin_count_woe;
    TARN_RETURN_IF_ERROR(need(woe, weighted ? "binWeightedWoe" : "binCountWoe"));
    n.kind_ = Kind::kBinValue;
    n.bin_value_ = woe;
    n.unseen_value_ = (weighted ? c.stats.weighted_woe : c.stats.woe).value_or(0);
    if (n.zscore_bin_value_) {
      // WOE_ZSCORE: z-score with the count-weighted mean and sd of the bin WOEs.
      double total = 0, sum = 0, sq = 0;
      for (size_t i = 0; i < bins; ++i) {
        double cnt = static_cast<double>(b.bin_count_neg.at(i) + b.bin_count_pos.at(i));
        total += cnt;
        sum += cnt * woe[i];
        sq += cnt * woe[i] * woe[i];
      }
      n.mean_ = total > 0 ? sum / total : 0;
      n.std_dev_ =
          total > 1 ? std::sqrt(std::max(0.0, (sq - total * n.mean_ * n.mean_) / (total - 1))) : 0;
    }
  } else if (use_pr) {
    TARN_RETURN_IF_ERROR(need(b.bin_pos_rate, "binPosRate"));
    n.kind_ = Kind::kBinValue;
    n.bin_value_ = b.bin_pos_rate;
    n.unseen_value_ = b.bin_pos_rate.back();  // unseen categories score like missing ones
  } else if (raw) {
    n.kind_ = Kind::kRaw;
  } else {
    n.kind_ = Kind::kZScore;
  }
  return n;
}

int ColumnNormalizer::BinOf(std::string_view raw, bool missing, bool* unseen) const {
  *unseen = false;
  if (missing) return missing_bin_;
  if (categorical_) {
    auto it = category_bin_.find(raw);
    if (it == category_bin_.end()) {
      *unseen = true;
      return missing_bin_;
    }
    return it->second;
  }
  auto v = ParseDouble(raw);
  if (!v || !std::isfinite(*v)) return missing_bin_;
  // Bin i covers [b_i, b_{i+1}); b_0 is -Infinity.
  auto it = std::upper_bound(boundaries_.begin(), boundaries_.end(), *v);
  return static_cast<int>(std::max<std::ptrdiff_t>(0, it - boundaries_.begin() - 1));
}

void ColumnNormalizer::Apply(std::string_view raw, bool missing, float* out) const {
  switch (kind_) {
    case Kind::kZScore: {
      std::optional<double> v;
      if (!missing) v = ParseDouble(raw);
      double x = (v && std::isfinite(*v)) ? *v : mean_;  // missing or invalid -> mean
      out[0] = static_cast<float>(ZScore(x, mean_, std_dev_, cutoff_));
      return;
    }
    case Kind::kRaw: {
      std::optional<double> v;
      if (!missing) v = ParseDouble(raw);
      out[0] = static_cast<float>((v && std::isfinite(*v)) ? *v : mean_);
      return;
    }
    case Kind::kBinValue: {
      bool unseen = false;
      int bin = BinOf(raw, missing, &unseen);
      double value = unseen ? unseen_value_ : bin_value_[bin];
      out[0] =
          static_cast<float>(zscore_bin_value_ ? ZScore(value, mean_, std_dev_, cutoff_) : value);
      return;
    }
    case Kind::kOneHot: {
      bool unseen = false;
      int bin = BinOf(raw, missing, &unseen);
      std::fill(out, out + width_, 0.0f);
      out[bin] = 1.0f;  // unseen categories share the missing slot
      return;
    }
  }
}

ColumnNormalizer::Transform ColumnNormalizer::Describe() const {
  Transform t;
  t.kind = kind_;
  t.categorical = categorical_;
  t.mean = mean_;
  t.std_dev = std_dev_;
  t.cutoff = cutoff_;
  t.boundaries = boundaries_;
  t.missing_bin = missing_bin_;
  if (categorical_) {
    t.categories.resize(missing_bin_);
    for (const auto& [category, bin] : category_bin_) t.categories[bin].push_back(category);
    for (auto& c : t.categories) std::sort(c.begin(), c.end());  // a stable order
  }
  if (kind_ == Kind::kBinValue) {
    auto output = [&](double v) {
      return zscore_bin_value_ ? ZScore(v, mean_, std_dev_, cutoff_) : v;
    };
    for (double v : bin_value_) t.bin_values.push_back(output(v));
    t.unseen_value = output(unseen_value_);
  }
  return t;
}

}  // namespace tarn::data
