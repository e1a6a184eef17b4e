#include "pipeline/row_context.h"

#include "common/log.h"

namespace tarn::pipeline {

void RowCounters::Merge(const RowCounters& o) {
  rows += o.rows;
  invalid_target += o.invalid_target;
  invalid_weight += o.invalid_weight;
  for (const auto& s : o.invalid_target_samples)
    if (invalid_target_samples.size() < 5) invalid_target_samples.insert(s);
}

void RowCounters::AddInvalidTarget(std::string_view value) {
  ++invalid_target;
  if (invalid_target_samples.size() < 5) invalid_target_samples.emplace(value);
}

void RowCounters::Report(const ModelSet& ms, const char* step) const {
  Report(ms.config.data_set, "dataSet", step);
}

void RowCounters::Report(const data::DataSetConfig& ds, const std::string& key,
                         const char* step) const {
  if (invalid_target > 0) {
    TARN_LOG(kWarn) << step << ": " << invalid_target << " rows skipped: target '"
                    << ds.target_column_name << "' is in neither " << key << ".posTags nor " << key
                    << ".negTags";
  }
  if (invalid_weight > 0) {
    TARN_LOG(kWarn) << step << ": " << invalid_weight
                    << " rows have a missing or invalid weight in '" << ds.weight_column_name
                    << "' (" << key << ".weightColumnName); they count with weight 1";
  }
}

Result<RowSetup> SetupRows(const ModelSet& ms) {
  const auto& ds = ms.config.data_set;
  TARN_ASSIGN_OR_RETURN(auto reader, data::DatasetReader::Open(ms.TrainingSource()));
  TARN_ASSIGN_OR_RETURN(auto target,
                        data::TargetMapper::Create(ds.pos_tags, ds.neg_tags, "dataSet"));
  int t = reader.ColumnIndex(ds.target_column_name);
  if (t < 0) {
    return InvalidArgument(ms.ModelConfigPath() + ": dataSet.targetColumnName '" +
                           ds.target_column_name + "' is not a column of the data header");
  }
  int w = -1;
  if (!ds.weight_column_name.empty()) {
    w = reader.ColumnIndex(ds.weight_column_name);
    if (w < 0) {
      return InvalidArgument(ms.ModelConfigPath() + ": dataSet.weightColumnName '" +
                             ds.weight_column_name + "' is not a column of the data header");
    }
  }
  return RowSetup{std::move(reader), std::move(target), t, w};
}

Status CheckHeaderMatches(const data::DatasetReader& reader,
                          const std::vector<data::ColumnConfig>& columns,
                          const std::string& column_config_path) {
  const auto& header = reader.columns();
  if (header.size() != columns.size()) {
    return FailedPrecondition(column_config_path + " has " + std::to_string(columns.size()) +
                              " columns but the data header has " + std::to_string(header.size()) +
                              "; rerun 'tarn init'");
  }
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] != columns[i].column_name) {
      return FailedPrecondition(column_config_path + ": column " + std::to_string(i) + " is '" +
                                columns[i].column_name + "' but the data header says '" +
                                header[i] + "'; rerun 'tarn init'");
    }
  }
  return Status::Ok();
}

Status NoUsableRows(const ModelSet& ms, const RowCounters& c) {
  return NoUsableRows(ms.config.data_set, "dataSet", c);
}

Status NoUsableRows(const data::DataSetConfig& ds, const std::string& key, const RowCounters& c) {
  std::string seen;
  for (const auto& s : c.invalid_target_samples) seen += (seen.empty() ? "'" : ", '") + s + "'";
  return InvalidArgument("no row has a target value in " + key + ".posTags " +
                         Join(ds.pos_tags, ",") + " or " + key + ".negTags " +
                         Join(ds.neg_tags, ",") + " (column '" + ds.target_column_name +
                         "'; values seen: " + seen + ")");
}

}  // namespace tarn::pipeline
