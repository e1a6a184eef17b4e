#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <set>
#include <unordered_set>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "pipeline/steps.h"

namespace tarn::pipeline {

namespace {

// Reads a column-name file named in ModelConfig.json and checks that every
// name is a header column, so a typo fails loudly instead of being ignored.
Result<std::set<std::string>> NameSet(const ModelSet& ms, const std::string& config_path,
                                      const char* key, const std::vector<std::string>& header) {
  std::set<std::string> out;
  if (config_path.empty()) return out;
  std::string path = ms.ConfigPath(config_path);
  if (!data::PathExistsAnywhere(path)) {
    return NotFound("ModelConfig.json: " + std::string(key) + " names " + path +
                    ", which does not exist");
  }
  TARN_ASSIGN_OR_RETURN(auto names, data::ReadColumnNameFile(path));
  for (const auto& n : names) {
    if (std::find(header.begin(), header.end(), n) == header.end()) {
      return InvalidArgument(
          path + ": column '" + n + "' is not in the data header (" +
          std::to_string(header.size()) + " columns: " +
          Join(std::vector<std::string>(header.begin(),
                                        header.begin() + std::min<size_t>(header.size(), 8)),
               ", ") +
          (header.size() > 8 ? ", ..." : "") + ")");
    }
    out.insert(n);
  }
  return out;
}

}  // namespace

Status RunInit(const ModelSet& ms) {
  const auto& ds = ms.config.data_set;
  TARN_ASSIGN_OR_RETURN(auto reader, data::DatasetReader::Open(ms.TrainingSource()));
  const auto& header = reader.columns();
  if (ds.target_column_name.empty()) {
    return InvalidArgument(ms.ModelConfigPath() + ": dataSet.targetColumnName is not set");
  }
  if (reader.ColumnIndex(ds.target_column_name) < 0) {
    return InvalidArgument(ms.ModelConfigPath() + ": dataSet.targetColumnName '" +
                           ds.target_column_name + "' is not a column of the data header");
  }
  if (!ds.weight_column_name.empty() && reader.ColumnIndex(ds.weight_column_name) < 0) {
    return InvalidArgument(ms.ModelConfigPath() + ": dataSet.weightColumnName '" +
                           ds.weight_column_name + "' is not a column of the data header");
  }
  {
    std::set<std::string> seen;
    for (const auto& h : header) {
      if (!seen.insert(h).second) {
        return InvalidArgument("the data header names column '" + h + "' twice");
      }
    }
  }
  const auto& vs = ms.config.var_select;
  TARN_ASSIGN_OR_RETURN(
      auto meta, NameSet(ms, ds.meta_column_name_file, "dataSet.metaColumnNameFile", header));
  TARN_ASSIGN_OR_RETURN(auto categorical, NameSet(ms, ds.categorical_column_name_file,
                                                  "dataSet.categoricalColumnNameFile", header));
  TARN_ASSIGN_OR_RETURN(
      auto hybrid, NameSet(ms, ds.hybrid_column_name_file, "dataSet.hybridColumnNameFile", header));
  TARN_ASSIGN_OR_RETURN(auto force_select,
                        NameSet(ms, vs.force_enable ? vs.force_select_column_name_file : "",
                                "varSelect.forceSelectColumnNameFile", header));
  TARN_ASSIGN_OR_RETURN(auto force_remove,
                        NameSet(ms, vs.force_enable ? vs.force_remove_column_name_file : "",
                                "varSelect.forceRemoveColumnNameFile", header));
  TARN_ASSIGN_OR_RETURN(auto candidates, NameSet(ms, vs.candidate_column_name_file,
                                                 "varSelect.candidateColumnNameFile", header));

  // Type detection on a sample of the first rows (one thread, so the sample is
  // the same on every machine).
  TARN_ASSIGN_OR_RETURN(auto sample_rows, ms.settings.GetInt("tarn.init.type-sample-rows"));
  TARN_ASSIGN_OR_RETURN(double numeric_ratio, ms.settings.GetDouble("tarn.init.numeric-ratio"));
  size_t n = header.size();
  std::vector<uint64_t> non_missing(n, 0), numeric(n, 0);
  std::vector<std::vector<std::string>> samples(n);
  uint64_t seen_rows = 0;
  bool need_detection = categorical.empty();
  if (need_detection && sample_rows > 0) {
    TARN_ASSIGN_OR_RETURN(auto options, ms.ReadOptionsFor(""));
    options.threads = 1;
    const auto& missing = reader.missing();
    static const char* kEnough = "tarn-init-sample-complete";
    auto summary = reader.ForEachBatch(options, [&](int, const data::RowBatch& batch) -> Status {
      for (size_t r = 0; r < batch.size(); ++r) {
        if (seen_rows >= static_cast<uint64_t>(sample_rows)) {
          return Status(StatusCode::kInternal, kEnough);
        }
        ++seen_rows;
        const auto& fields = batch.fields(r);
        for (size_t c = 0; c < n; ++c) {
          std::string_view f = fields[c];
          if (missing.IsMissing(f)) continue;
          ++non_missing[c];
          auto v = ParseDouble(f);
          if (v && std::isfinite(*v)) ++numeric[c];
          if (samples[c].size() < 5 &&
              std::find(samples[c].begin(), samples[c].end(), f) == samples[c].end()) {
            samples[c].emplace_back(f);
          }
        }
      }
      return Status::Ok();
    });
    if (!summary.ok() && summary.status().message() != kEnough) return summary.status();
  }

  std::vector<data::ColumnConfig> columns(n);
  int n_cat = 0, n_num = 0;
  for (size_t c = 0; c < n; ++c) {
    auto& cc = columns[c];
    cc.column_num = static_cast<int>(c);
    cc.column_name = header[c];
    const std::string& name = header[c];
    if (name == ds.target_column_name) {
      cc.column_flag = data::ColumnFlag::kTarget;
    } else if (name == ds.weight_column_name) {
      cc.column_flag = data::ColumnFlag::kWeight;
    } else if (meta.count(name)) {
      cc.column_flag = data::ColumnFlag::kMeta;
    } else if (force_remove.count(name)) {
      cc.column_flag = data::ColumnFlag::kForceRemove;
    } else if (force_select.count(name)) {
      cc.column_flag = data::ColumnFlag::kForceSelect;
    } else if (!candidates.empty() && !candidates.count(name)) {
      // Not listed as a candidate: kept out of stats and selection.
      cc.column_flag = data::ColumnFlag::kForceRemove;
    }
    if (cc.IsTarget()) {
      if (ms.config.IsBinaryClassification()) cc.column_type = data::ColumnType::kCategorical;
      continue;
    }
    if (cc.IsMeta()) continue;
    if (hybrid.count(name)) {
      cc.column_type = data::ColumnType::kHybrid;
    } else if (!need_detection) {
      cc.column_type =
          categorical.count(name) ? data::ColumnType::kCategorical : data::ColumnType::kNumeric;
    } else {
      // A column is numeric when enough of its sampled non-missing values parse
      // as finite numbers; a column with no values in the sample stays numeric.
      bool is_numeric =
          non_missing[c] == 0 || static_cast<double>(numeric[c]) >= numeric_ratio * non_missing[c];
      cc.column_type = is_numeric ? data::ColumnType::kNumeric : data::ColumnType::kCategorical;
    }
    cc.sample_values = samples[c];
    (cc.IsCategorical() ? n_cat : n_num)++;
  }
  TARN_RETURN_IF_ERROR(ms.SaveColumns(columns));
  TARN_LOG(kInfo) << "init: " << n << " columns (" << n_num << " numeric, " << n_cat
                  << " categorical"
                  << (need_detection
                          ? ", types detected from the first " + std::to_string(seen_rows) + " rows"
                          : ", types from " + ds.categorical_column_name_file)
                  << ") -> " << ms.ColumnConfigPath();
  return Status::Ok();
}

}  // namespace tarn::pipeline
