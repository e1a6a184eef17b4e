#include "data/normalizer.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/strings.h"

namespace tarn::data {

namespace {

// What a column's value becomes, per column type, under one normType.
enum class Rule {
  kZScore,             // numeric value, z-scored
  kRaw,                // numeric value as is
  kMaxMin,             // numeric value scaled to [0, 1] by min and max
  kDiscrete,           // numeric bin's lower boundary, z-scored
  kPosRate,            // the bin's positive rate
  kPosRateZScore,      // the bin's positive rate, z-scored by the column's mean and sd
  kWoe,                // the bin's count WOE
  kWeightedWoe,        // the bin's weighted WOE
  kWoeZScore,          // count WOE, z-scored by the count-weighted WOE mean and sd
  kWeightedWoeZScore,  // weighted WOE, z-scored likewise
  kOneHot,             // one slot per bin
  kIndex,              // the bin's (category's) index
};

// Shifu's ModelNormalizeConf.NormType and how Normalizer.fullNormalize treats
// each column type under it. Aliases repeat a type; the first name is canonical.
struct NormSpec {
  const char* name;
  NormType type;
  Rule numeric, categorical;
  bool append_index;  // *_APPEND_INDEX: the bin index follows the value
};
constexpr NormSpec kNormSpecs[] = {
    {"ZSCALE", NormType::kZScale, Rule::kZScore, Rule::kPosRateZScore, false},
    {"ZSCORE", NormType::kZScale, Rule::kZScore, Rule::kPosRateZScore, false},
    {"OLD_ZSCALE", NormType::kOldZScale, Rule::kZScore, Rule::kPosRate, false},
    {"OLD_ZSCORE", NormType::kOldZScale, Rule::kZScore, Rule::kPosRate, false},
    {"WOE", NormType::kWoe, Rule::kWoe, Rule::kWoe, false},
    {"WEIGHT_WOE", NormType::kWeightWoe, Rule::kWeightedWoe, Rule::kWeightedWoe, false},
    {"WOE_ZSCORE", NormType::kWoeZScore, Rule::kWoeZScore, Rule::kWoeZScore, false},
    {"WOE_ZSCALE", NormType::kWoeZScore, Rule::kWoeZScore, Rule::kWoeZScore, false},
    {"WEIGHT_WOE_ZSCORE", NormType::kWeightWoeZScore, Rule::kWeightedWoeZScore,
     Rule::kWeightedWoeZScore, false},
    {"WEIGHT_WOE_ZSCALE", NormType::kWeightWoeZScore, Rule::kWeightedWoeZScore,
     Rule::kWeightedWoeZScore, false},
    {"HYBRID", NormType::kHybrid, Rule::kZScore, Rule::kWoe, false},
    {"WEIGHT_HYBRID", NormType::kWeightHybrid, Rule::kZScore, Rule::kWeightedWoe, false},
    {"ONEHOT", NormType::kOneHot, Rule::kOneHot, Rule::kOneHot, false},
    {"ZSCALE_ONEHOT", NormType::kZScaleOneHot, Rule::kZScore, Rule::kOneHot, false},
    {"ZSCALE_ORDINAL", NormType::kZScaleOrdinal, Rule::kZScore, Rule::kIndex, false},
    {"ASIS_WOE", NormType::kAsIsWoe, Rule::kRaw, Rule::kWoe, false},
    {"ASIS_PR", NormType::kAsIsPr, Rule::kRaw, Rule::kPosRate, false},
    {"DISCRETE_ZSCORE", NormType::kDiscreteZScore, Rule::kDiscrete, Rule::kPosRateZScore, false},
    {"DISCRETE_ZSCALE", NormType::kDiscreteZScore, Rule::kDiscrete, Rule::kPosRateZScore, false},
    {"ZSCALE_INDEX", NormType::kZScaleIndex, Rule::kZScore, Rule::kIndex, false},
    {"ZSCORE_INDEX", NormType::kZScaleIndex, Rule::kZScore, Rule::kIndex, false},
    {"WOE_INDEX", NormType::kWoeIndex, Rule::kWoe, Rule::kIndex, false},
    {"WOE_ZSCALE_INDEX", NormType::kWoeZScaleIndex, Rule::kWoeZScore, Rule::kIndex, false},
    {"MAXMIN_INDEX", NormType::kMaxMinIndex, Rule::kMaxMin, Rule::kIndex, false},
    {"INDEX", NormType::kIndex, Rule::kIndex, Rule::kIndex, false},
    // Shifu z-scores numeric columns and writes a categorical column's index twice.
    {"ZSCALE_APPEND_INDEX", NormType::kZScaleAppendIndex, Rule::kZScore, Rule::kIndex, true},
    {"ZSCORE_APPEND_INDEX", NormType::kZScaleAppendIndex, Rule::kZScore, Rule::kIndex, true},
    {"WOE_APPEND_INDEX", NormType::kWoeAppendIndex, Rule::kWoe, Rule::kWoe, true},
    {"WOE_ZSCALE_APPEND_INDEX", NormType::kWoeZScaleAppendIndex, Rule::kWoeZScore, Rule::kWoeZScore,
     true},
};

const NormSpec& SpecOf(NormType t) {
  for (const auto& s : kNormSpecs)
    if (s.type == t) return s;
  return kNormSpecs[0];
}

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
  for (const auto& n : kNormSpecs)
    if (upper == n.name) return n.type;
  return Unsupported("normalize.normType '" + std::string(name) +
                     "' is not one of Shifu's normalization types: " + NormTypeNames());
}

std::string NormTypeNames() {
  std::string names;
  for (const auto& n : kNormSpecs) names += std::string(names.empty() ? "" : ", ") + n.name;
  return names;
}

const char* NormTypeName(NormType t) { return SpecOf(t).name; }

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
  // MAXMIN needs min and max, DISCRETE only min.
  auto need_range = [&](const char* type_name, bool max_too) -> Status {
    if (!c.stats.min || (max_too && !c.stats.max)) {
      return FailedPrecondition("column '" + c.column_name + "' has no " +
                                (max_too ? "min or max" : "min") + " in its stats, which " +
                                type_name + " needs; rerun 'tarn stats'");
    }
    n.min_ = *c.stats.min;
    n.max_ = c.stats.max.value_or(n.min_);
    return Status::Ok();
  };

  const NormSpec& spec = SpecOf(type);
  const Rule rule = n.categorical_ ? spec.categorical : spec.numeric;
  switch (rule) {
    case Rule::kZScore:
      n.kind_ = Kind::kZScore;
      break;
    case Rule::kRaw:
      n.kind_ = Kind::kRaw;
      break;
    case Rule::kMaxMin:
      n.kind_ = Kind::kMaxMin;
      TARN_RETURN_IF_ERROR(need_range(spec.name, true));
      break;
    case Rule::kDiscrete:
      n.kind_ = Kind::kDiscrete;
      TARN_RETURN_IF_ERROR(need_range(spec.name, false));
      break;
    case Rule::kPosRate:
    case Rule::kPosRateZScore:
      TARN_RETURN_IF_ERROR(need(b.bin_pos_rate, "binPosRate"));
      n.kind_ = Kind::kBinValue;
      n.bin_value_ = b.bin_pos_rate;
      n.unseen_value_ = b.bin_pos_rate.back();  // unseen categories score like missing ones
      n.zscore_bin_value_ = rule == Rule::kPosRateZScore;
      break;
    case Rule::kWoe:
    case Rule::kWeightedWoe:
    case Rule::kWoeZScore:
    case Rule::kWeightedWoeZScore: {
      const bool weighted = rule == Rule::kWeightedWoe || rule == Rule::kWeightedWoeZScore;
      const auto& woe = weighted ? b.bin_weighted_woe : b.bin_count_woe;
      TARN_RETURN_IF_ERROR(need(woe, weighted ? "binWeightedWoe" : "binCountWoe"));
      n.kind_ = Kind::kBinValue;
      n.bin_value_ = woe;
      n.unseen_value_ = (weighted ? c.stats.weighted_woe : c.stats.woe).value_or(0);
      n.zscore_bin_value_ = rule == Rule::kWoeZScore || rule == Rule::kWeightedWoeZScore;
      if (n.zscore_bin_value_) {
        // Shifu's calculateWoeMeanAndStdDev: the bin WOEs weighted by the bins'
        // record counts (counts, not weights, also for the weighted WOE).
        double total = 0, sum = 0, sq = 0;
        for (size_t i = 0; i < bins; ++i) {
          double cnt = static_cast<double>(b.bin_count_neg.at(i) + b.bin_count_pos.at(i));
          total += cnt;
          sum += cnt * woe[i];
          sq += cnt * woe[i] * woe[i];
        }
        n.mean_ = total > 0 ? sum / total : 0;
        n.std_dev_ = total > 1 ? std::sqrt(std::abs((sq - sum * sum / total) / (total - 1))) : 0;
      }
      break;
    }
    case Rule::kOneHot:
      n.kind_ = Kind::kOneHot;
      break;
    case Rule::kIndex:
      n.kind_ = Kind::kIndex;
      break;
  }
  n.width_ = n.kind_ == Kind::kOneHot ? static_cast<int>(bins) : 1;
  if (n.kind_ == Kind::kIndex) n.index_slots_.push_back(0);
  n.append_index_ = spec.append_index;
  if (n.append_index_) n.index_slots_.push_back(n.width_++);
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

double ColumnNormalizer::NumericValue(std::string_view raw, bool missing) const {
  std::optional<double> v;
  if (!missing) v = ParseDouble(raw);
  return (v && std::isfinite(*v)) ? *v : mean_;
}

void ColumnNormalizer::Apply(std::string_view raw, bool missing, float* out) const {
  switch (kind_) {
    case Kind::kZScore:
      out[0] = static_cast<float>(ZScore(NumericValue(raw, missing), mean_, std_dev_, cutoff_));
      break;
    case Kind::kRaw:
      out[0] = static_cast<float>(NumericValue(raw, missing));
      break;
    case Kind::kMaxMin: {
      const double range = max_ - min_;
      out[0] = static_cast<float>(range > 1e-7 ? (NumericValue(raw, missing) - min_) / range : 0);
      break;
    }
    case Kind::kDiscrete: {
      bool unseen = false;
      const int bin = BinOf(raw, missing, &unseen);
      // Shifu's discreteZScoreNormalize: bin 0 stands for the minimum, the
      // missing bin for the mean.
      const double value = bin == missing_bin_ ? mean_ : bin == 0 ? min_ : boundaries_[bin];
      out[0] = static_cast<float>(ZScore(value, mean_, std_dev_, cutoff_));
      break;
    }
    case Kind::kBinValue: {
      bool unseen = false;
      int bin = BinOf(raw, missing, &unseen);
      double value = unseen ? unseen_value_ : bin_value_[bin];
      out[0] =
          static_cast<float>(zscore_bin_value_ ? ZScore(value, mean_, std_dev_, cutoff_) : value);
      break;
    }
    case Kind::kOneHot: {
      bool unseen = false;
      int bin = BinOf(raw, missing, &unseen);
      std::fill(out, out + (width_ - (append_index_ ? 1 : 0)), 0.0f);
      out[bin] = 1.0f;  // unseen categories share the missing slot
      break;
    }
    case Kind::kIndex: {
      bool unseen = false;
      out[0] = static_cast<float>(BinOf(raw, missing, &unseen));  // unseen: the missing bin
      break;
    }
  }
  if (append_index_) {
    bool unseen = false;
    out[width_ - 1] = static_cast<float>(BinOf(raw, missing, &unseen));
  }
}

ColumnNormalizer::Transform ColumnNormalizer::Describe() const {
  Transform t;
  t.kind = kind_;
  t.categorical = categorical_;
  t.mean = mean_;
  t.std_dev = std_dev_;
  t.cutoff = cutoff_;
  t.min = min_;
  t.max = max_;
  t.boundaries = boundaries_;
  t.missing_bin = missing_bin_;
  t.append_index = append_index_;
  if (categorical_) {
    t.categories.resize(missing_bin_);
    for (const auto& [category, bin] : category_bin_) t.categories[bin].push_back(category);
    for (auto& c : t.categories) std::sort(c.begin(), c.end());  // a stable order
  }
  switch (kind_) {
    case Kind::kBinValue: {
      auto output = [&](double v) {
        return zscore_bin_value_ ? ZScore(v, mean_, std_dev_, cutoff_) : v;
      };
      for (double v : bin_value_) t.bin_values.push_back(output(v));
      t.unseen_value = output(unseen_value_);
      break;
    }
    case Kind::kDiscrete:  // Apply's value per bin, z-scored
      for (int bin = 0; bin <= missing_bin_; ++bin) {
        const double value = bin == missing_bin_ ? mean_ : bin == 0 ? min_ : boundaries_[bin];
        t.bin_values.push_back(ZScore(value, mean_, std_dev_, cutoff_));
      }
      t.unseen_value = t.bin_values.back();
      break;
    case Kind::kIndex:
      for (int bin = 0; bin <= missing_bin_; ++bin) t.bin_values.push_back(bin);
      t.unseen_value = missing_bin_;
      break;
    case Kind::kZScore:
    case Kind::kRaw:
    case Kind::kMaxMin:
    case Kind::kOneHot:
      break;
  }
  return t;
}

}  // namespace tarn::data
