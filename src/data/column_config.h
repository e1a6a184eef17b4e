// ColumnConfig.json: one entry per raw column with its type, flag, stats and
// bins, in Shifu's field names (SHIFU-COMPAT §3). Count arrays have bins+1
// entries; the last is the missing-value bin.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "data/json_fields.h"

namespace tarn::data {

enum class ColumnType { kNumeric, kCategorical, kHybrid, kAuto };
enum class ColumnFlag { kNone, kTarget, kMeta, kForceSelect, kForceRemove, kCandidate, kWeight };

struct ColumnStats {
  std::optional<double> max, min, mean, median, p25, p75;
  std::optional<long long> total_count, distinct_count, missing_count, valid_num_count;
  std::optional<double> std_dev, missing_percentage;
  std::optional<double> woe, ks, iv, weighted_ks, weighted_iv, weighted_woe;
  std::optional<double> skewness, kurtosis, psi;
};

struct ColumnBinning {
  int length = 0;                         // number of bins, without the missing bin
  std::vector<double> bin_boundary;       // numeric: first entry -Infinity
  std::vector<std::string> bin_category;  // categorical: merged groups joined by "@^"
  std::vector<long long> bin_count_neg, bin_count_pos;
  std::vector<double> bin_pos_rate;
  std::vector<double> bin_weighted_neg, bin_weighted_pos;
  std::vector<double> bin_count_woe, bin_weighted_woe;
  std::vector<int> bin_avg_score;
};

struct ColumnConfig {
  int column_num = 0;
  std::string column_name;
  std::string version = "0.13.0";
  std::optional<ColumnType> column_type;
  ColumnFlag column_flag = ColumnFlag::kNone;
  bool final_select = false;
  double hybrid_threshold = 0;  // only meaningful for H columns
  std::vector<std::string> sample_values;
  int hash_seed = 0;
  ColumnStats stats;
  ColumnBinning binning;

  bool IsTarget() const { return column_flag == ColumnFlag::kTarget; }
  bool IsMeta() const { return column_flag == ColumnFlag::kMeta; }
  bool IsWeight() const { return column_flag == ColumnFlag::kWeight; }
  bool IsForceRemove() const { return column_flag == ColumnFlag::kForceRemove; }
  bool IsForceSelect() const { return column_flag == ColumnFlag::kForceSelect; }
  bool IsCategorical() const { return column_type == ColumnType::kCategorical; }
  bool IsNumeric() const { return column_type == ColumnType::kNumeric || IsHybridNumeric(); }
  bool IsHybridNumeric() const { return column_type == ColumnType::kHybrid; }
  // A column that may feed a model: not the target, meta, weight or
  // force-removed (Shifu's isCandidate).
  bool IsCandidate() const {
    return column_flag != ColumnFlag::kTarget && column_flag != ColumnFlag::kMeta &&
           column_flag != ColumnFlag::kWeight && column_flag != ColumnFlag::kForceRemove;
  }
  // Has usable stats and bins (set by `tarn stats`).
  bool HasStats() const {
    return binning.length > 0 && stats.mean.has_value() && stats.std_dev.has_value();
  }
  // The missing-value bin is the last entry of the count arrays.
  int MissingBin() const { return binning.length; }
  // Shifu's CommonUtils.isGoodCandidate for binary classification: a
  // candidate (ColumnConfig.isCandidate: when some column is flagged
  // Candidate, only Candidate and ForceSelect columns are) with stats, bins
  // and a positive KS and IV.
  bool IsGoodCandidate(bool has_candidate_flags) const;
};

// Shifu's CommonUtils.hasCandidateColumns: some column is flagged Candidate.
bool HasCandidateFlags(const std::vector<ColumnConfig>& columns);

// The columns a model trains on, in ColumnConfig order, and why: the
// finalSelect columns (not target or meta), or, when there are none, every
// good candidate (Shifu's DTrainUtils.getNumericAndCategoricalInputAndOutputCounts).
struct ModelInputs {
  std::vector<ColumnConfig> columns;
  bool all_good_candidates = false;  // no column has finalSelect
  std::string rule;                  // one line for the log
};
ModelInputs SelectModelInputs(const std::vector<ColumnConfig>& columns);

const char* ColumnTypeName(ColumnType t);
const char* ColumnFlagName(ColumnFlag f);

Result<std::vector<ColumnConfig>> LoadColumnConfigs(const std::string& path);
Result<std::vector<ColumnConfig>> ParseColumnConfigs(const std::string& text,
                                                     const std::string& file);
Json ColumnConfigsToJson(const std::vector<ColumnConfig>& columns);
// Writes atomically, pretty-printed as Shifu does.
Status SaveColumnConfigs(const std::string& path, const std::vector<ColumnConfig>& columns);

}  // namespace tarn::data
