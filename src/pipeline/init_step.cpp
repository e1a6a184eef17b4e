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
  // non_finite: NaN, Infinity, 1e999, ...: numbers a model cannot use, so they are missing
  // values of a numeric column (as Shifu reads unparsable numbers), never a sign of a
  // categorical one.
  std::vector<uint64_t> non_missing(n, 0), numeric(n, 0), non_finite(n, 0);
  std::vector<std::vector<std::string>> samples(n);
  uint64_t seen_rows = 0, detection_rows = 0;
  const bool need_detection = categorical.empty();
  const uint64_t detect_rows =
      need_detection ? static_cast<uint64_t>(std::max(0LL, sample_rows)) : 0;
  // At least one row is read, so that an empty data file fails here by name rather than
  // as empty stats later.
  const uint64_t rows_to_read = std::max<uint64_t>(detect_rows, 1);
  {
    TARN_ASSIGN_OR_RETURN(auto options, ms.ReadOptionsFor(""));
    options.threads = 1;
    const auto& missing = reader.missing();
    static const char* kEnough = "tarn-init-sample-complete";
    auto summary = reader.ForEachBatch(options, [&](int, const data::RowBatch& batch) -> Status {
      for (size_t r = 0; r < batch.size(); ++r) {
        if (seen_rows >= rows_to_read) return Status(StatusCode::kInternal, kEnough);
        ++seen_rows;
        if (seen_rows > detect_rows) continue;
        ++detection_rows;
        const auto& fields = batch.fields(r);
        for (size_t c = 0; c < n; ++c) {
          std::string_view f = fields[c];
          if (missing.IsMissing(f)) continue;
          auto v = ParseDouble(f);
          if (v && !std::isfinite(*v)) {
            ++non_finite[c];
            continue;
          }
          ++non_missing[c];
          if (v) ++numeric[c];
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
  if (seen_rows == 0) {
    const auto& files = reader.files();
    std::string where = files.size() == 1 ? files[0]
                                          : ms.ConfigPath(ds.data_path) + " (" +
                                                std::to_string(files.size()) + " files)";
    return InvalidArgument(
        where + ": no data rows" +
        (ds.filter_expressions.empty()
             ? std::string(" (the file is empty")
             : " (none passes dataSet.filterExpressions '" + ds.filter_expressions + "'") +
        (ds.header_path.empty() ? ", or holds only the header line)" : ")") +
        "; dataSet.dataPath in " + ms.ModelConfigPath() + " must name the training data");
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
    if (cc.IsWeight()) {
      // Numeric whatever its values look like, as in Shifu: stats describes it, and it is
      // never a training input (not a candidate).
      cc.column_type = data::ColumnType::kNumeric;
      cc.sample_values = samples[c];
      continue;
    }
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
  std::vector<std::string> with_non_finite;  // the first few, with their counts
  size_t more_non_finite = 0;
  for (size_t c = 0; c < n; ++c) {
    if (non_finite[c] == 0 || !columns[c].IsNumeric()) continue;
    if (with_non_finite.size() < 10) {
      with_non_finite.push_back(header[c] + " (" + std::to_string(non_finite[c]) + ")");
    } else {
      ++more_non_finite;
    }
  }
  if (!with_non_finite.empty()) {
    TARN_LOG(kInfo) << "init: non-finite numbers (NaN, Infinity, 1e999, ...) in the first "
                    << detection_rows << " rows count as missing values of "
                    << with_non_finite.size()
                    << " numeric column(s): " << Join(with_non_finite, ", ")
                    << (more_non_finite > 0 ? ", and " + std::to_string(more_non_finite) + " more"
                                            : std::string());
  }
  // A rerun replaces stats and finalSelect: the previous file is kept, as varsel keeps its own.
  std::string previous_summary;
  if (PathExists(ms.ColumnConfigPath())) {
    auto previous = ms.LoadColumns();
    if (previous.ok()) {
      int with_stats = 0, selected = 0;
      for (const auto& c : *previous) {
        with_stats += c.HasStats();
        selected += c.final_select;
      }
      previous_summary = std::to_string(with_stats) + " column(s) with stats, " +
                         std::to_string(selected) + " with finalSelect";
    } else {
      previous_summary = "unreadable: " + previous.status().message();
    }
  }
  TARN_ASSIGN_OR_RETURN(std::string kept, ms.KeepColumnConfigVersion("init"));
  TARN_RETURN_IF_ERROR(ms.SaveColumns(columns));
  if (!kept.empty()) {
    TARN_LOG(kInfo) << "init: replaced the previous ColumnConfig.json (" << previous_summary
                    << "); it is kept as " << kept;
  }
  TARN_LOG(kInfo) << "init: " << n << " columns (" << n_num << " numeric, " << n_cat
                  << " categorical"
                  << (need_detection ? ", types detected from the first " +
                                           std::to_string(detection_rows) + " rows"
                                     : ", types from " + ds.categorical_column_name_file)
                  << ") -> " << ms.ColumnConfigPath();
  return Status::Ok();
}

}  // namespace tarn::pipeline
