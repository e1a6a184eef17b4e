// Per-column normalization (SHIFU-COMPAT §4 "Normalisation"): turns a raw
// field into the floats a model sees. Lives in the data layer so that `norm`,
// the model file and the model server all apply exactly the same transform.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "data/column_config.h"

namespace tarn::data {

enum class NormType {
  kZScale,                // ZSCALE / ZSCORE
  kOldZScale,             // OLD_ZSCALE / OLD_ZSCORE
  kWoe,                   // WOE
  kWeightWoe,             // WEIGHT_WOE
  kWoeZScore,             // WOE_ZSCORE / WOE_ZSCALE
  kWeightWoeZScore,       // WEIGHT_WOE_ZSCORE / WEIGHT_WOE_ZSCALE
  kHybrid,                // HYBRID
  kWeightHybrid,          // WEIGHT_HYBRID
  kOneHot,                // ONEHOT
  kZScaleOneHot,          // ZSCALE_ONEHOT
  kZScaleOrdinal,         // ZSCALE_ORDINAL
  kAsIsWoe,               // ASIS_WOE
  kAsIsPr,                // ASIS_PR
  kDiscreteZScore,        // DISCRETE_ZSCORE / DISCRETE_ZSCALE
  kZScaleIndex,           // ZSCALE_INDEX / ZSCORE_INDEX
  kWoeIndex,              // WOE_INDEX
  kWoeZScaleIndex,        // WOE_ZSCALE_INDEX
  kMaxMinIndex,           // MAXMIN_INDEX
  kIndex,                 // INDEX
  kZScaleAppendIndex,     // ZSCALE_APPEND_INDEX / ZSCORE_APPEND_INDEX
  kWoeAppendIndex,        // WOE_APPEND_INDEX
  kWoeZScaleAppendIndex,  // WOE_ZSCALE_APPEND_INDEX
};

// Accepts the names of Shifu's ModelNormalizeConf.NormType (case-insensitive);
// anything else is refused with a message listing them.
Result<NormType> ParseNormType(std::string_view name);
// Every accepted name, comma-separated (for messages and help).
std::string NormTypeNames();
const char* NormTypeName(NormType t);

// A z-score of a column whose standard deviation is at most this is 0.
inline constexpr double kMinZScoreStdDev = 1e-5;

class ColumnNormalizer {
 public:
  // What Apply computes; every normType maps to one of these.
  enum class Kind {
    kZScore,    // numeric value, z-scored (missing: the mean)
    kRaw,       // numeric value as is (missing: the mean)
    kMaxMin,    // numeric (value - min) / (max - min) (missing: the mean)
    kDiscrete,  // numeric bin's lower boundary (bin 0: min), z-scored
    kBinValue,  // the bin's positive rate or WOE, z-scored when zscore_bin_value_
    kOneHot,    // one slot per bin, missing bin last
    kIndex,     // the bin's index
  };

  // Apply's computation as data, for exporters that restate it in another
  // language (PMML). Only the fields of `kind` matter.
  struct Transform {
    Kind kind = Kind::kZScore;
    bool categorical = false;
    // kZScore: clip to mean +- cutoff x std_dev, then (x - mean) / std_dev (0 when
    // std_dev <= kMinZScoreStdDev). kZScore, kRaw and kMaxMin: a missing or
    // unparsable value is the mean.
    double mean = 0, std_dev = 1, cutoff = 4;
    // kMaxMin: (x - min) / (max - min), 0 when max - min <= 1e-7.
    double min = 0, max = 0;
    // kBinValue, kDiscrete, kIndex and kOneHot. Numeric bin i covers
    // [boundaries[i], boundaries[i+1]), the first bin also everything below, the
    // last everything above. Categorical bin i holds the raw values
    // categories[i]. Missing and unparsable values go to bin missing_bin (the
    // last), so does an unseen category for kOneHot and kIndex.
    std::vector<double> boundaries;
    std::vector<std::vector<std::string>> categories;
    int missing_bin = 0;
    // kBinValue, kDiscrete and kIndex: the output of each bin, missing_bin
    // included, and of an unseen category.
    std::vector<double> bin_values;
    double unseen_value = 0;
    // *_APPEND_INDEX: one more output after the kind's, the bin's index
    // (missing and unseen: missing_bin).
    bool append_index = false;
  };
  Transform Describe() const;

  // `column` must have stats and bins (tarn stats). `cutoff` is stdDevCutOff.
  static Result<ColumnNormalizer> Create(const ColumnConfig& column, NormType type, double cutoff);

  int width() const { return width_; }
  // Writes width() floats for the raw field `raw`; `missing` says whether the
  // field is one of missingOrInvalidValues.
  void Apply(std::string_view raw, bool missing, float* out) const;
  // The value a missing field normalizes to (used by sensitivity analysis).
  void ApplyMissing(float* out) const { Apply({}, true, out); }
  const std::string& name() const { return name_; }
  int column_num() const { return column_num_; }
  // The output slots (0..width()-1) that hold a bin or category index rather
  // than a measurement: the *_INDEX types' categorical columns, INDEX, and
  // the appended index of the *_APPEND_INDEX types. An index is in
  // [0, index_count()); the last value is the missing bin, which unseen
  // categories share, as in Shifu.
  const std::vector<int>& index_slots() const { return index_slots_; }
  int index_count() const { return missing_bin_ + 1; }

 private:
  // Bin of a raw value: numeric by boundaries, categorical by lookup; the
  // missing bin for missing or unparsable values. `unseen` is set for a valid
  // category that stats never saw.
  int BinOf(std::string_view raw, bool missing, bool* unseen) const;
  // The numeric value of a field; the mean when it is missing or not a finite number.
  double NumericValue(std::string_view raw, bool missing) const;

  std::string name_;
  int column_num_ = 0;
  bool categorical_ = false;
  Kind kind_ = Kind::kZScore;
  bool append_index_ = false;  // *_APPEND_INDEX: a last slot with the bin index
  int width_ = 1;
  // z-score of a numeric value, or of a categorical bin value
  double mean_ = 0, std_dev_ = 1, cutoff_ = 4;
  double min_ = 0, max_ = 0;
  bool zscore_bin_value_ = false;  // categorical ZSCALE: z-score of the positive rate
  std::vector<double> boundaries_;
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> category_bin_;
  std::vector<double> bin_value_;  // per bin incl. missing: positive rate or WOE
  double unseen_value_ = 0;
  int missing_bin_ = 0;
  std::vector<int> index_slots_;
};

}  // namespace tarn::data
