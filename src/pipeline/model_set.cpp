#include "pipeline/model_set.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/files.h"
#include "common/log.h"
#include "common/thread_pool.h"
#include "data/file_system.h"
#include "data/shard.h"

namespace tarn::pipeline {

std::string ModelSet::Path(const std::string& relative) const { return JoinPath(dir, relative); }

std::string ModelSet::ConfigPath(const std::string& path) const { return ResolvePath(dir, path); }

data::DataSource ModelSet::SourceFor(const data::DataSetConfig& ds) const {
  data::DataSource s;
  s.data_path = ConfigPath(ds.data_path);
  s.header_path = ConfigPath(ds.header_path);
  s.delimiter = ds.data_delimiter;
  s.header_delimiter = ds.header_delimiter.empty() ? ds.data_delimiter : ds.header_delimiter;
  s.filter_expression = ds.filter_expressions;
  s.missing_values = ds.missing_or_invalid_values;
  return s;
}

data::DataSource ModelSet::TrainingSource() const { return SourceFor(config.data_set); }

int ModelSet::Threads() const {
  auto t = settings.GetInt("tarn.threads");
  return (t.ok() && *t > 0) ? static_cast<int>(*t) : DefaultThreadCount();
}

Result<data::ReadOptions> ModelSet::ReadOptionsFor(const std::string& progress_label) const {
  data::ReadOptions o;
  o.threads = Threads();
  TARN_ASSIGN_OR_RETURN(auto chunk, settings.GetInt("tarn.data.chunk-bytes"));
  TARN_ASSIGN_OR_RETURN(o.max_bad_row_ratio, settings.GetDouble("tarn.data.max-bad-row-ratio"));
  TARN_ASSIGN_OR_RETURN(auto reported, settings.GetInt("tarn.data.bad-rows-reported"));
  TARN_ASSIGN_OR_RETURN(auto seed, settings.GetInt("tarn.seed"));
  TARN_ASSIGN_OR_RETURN(auto whole_gzip_mb, settings.GetInt("tarn.data.gzip-whole-file-mb"));
  o.gzip_whole_file_bytes = static_cast<size_t>(std::max<long long>(0, whole_gzip_mb)) << 20;
  if (chunk < 4096) {
    return InvalidArgument("setting 'tarn.data.chunk-bytes' must be at least 4096, got " +
                           std::to_string(chunk));
  }
  o.chunk_bytes = static_cast<size_t>(chunk);
  o.bad_rows_reported = static_cast<int>(reported);
  o.seed = static_cast<uint64_t>(seed);
  o.progress_label = progress_label;
  return o;
}

Result<std::vector<data::ColumnConfig>> ModelSet::LoadColumns() const {
  if (!PathExists(ColumnConfigPath())) {
    return FailedPrecondition(ColumnConfigPath() + " does not exist; run 'tarn init' first");
  }
  return data::LoadColumnConfigs(ColumnConfigPath());
}

Result<std::vector<std::string>> ModelSet::ColumnNames() const {
  TARN_ASSIGN_OR_RETURN(auto columns, LoadColumns());
  std::vector<std::string> names;
  names.reserve(columns.size());
  for (const auto& c : columns) names.push_back(c.column_name);
  return names;
}

Status ModelSet::SaveColumns(const std::vector<data::ColumnConfig>& columns) const {
  return data::SaveColumnConfigs(ColumnConfigPath(), columns);
}

Result<int> ModelSet::MiniBatchSize() const {
  const auto& params = config.train.params;
  if (!params.contains("MiniBatchs")) return 128;
  const auto& mb = params["MiniBatchs"];
  if (!mb.is_number_integer() || mb.get<int>() < 1) {
    return InvalidArgument(ModelConfigPath() +
                           ": train.params.MiniBatchs must be a positive integer, got " +
                           mb.dump());
  }
  return mb.get<int>();
}

Result<model::TrainingDataOptions> ModelSet::TrainingData(uint64_t seed) const {
  TARN_ASSIGN_OR_RETURN(auto columns, LoadColumns());
  model::TrainingDataOptions o;
  o.data_dir = NormalizedDataDir();
  for (const auto& c : columns) {
    if (c.final_select) o.selected.push_back(c);
  }
  if (o.selected.empty()) {
    return FailedPrecondition("no column has finalSelect set in " + ColumnConfigPath() +
                              "; run 'tarn varsel' first");
  }
  auto shard_paths = data::ListShards(NormalizedDataDir());
  if (!shard_paths.ok()) {
    return FailedPrecondition(shard_paths.status().message() + "; run 'tarn norm' first");
  }
  o.shard_paths = *shard_paths;
  o.norm_type = config.normalize.norm_type;
  o.valid_rate = config.train.valid_set_rate;
  o.seed = seed;
  return o;
}

Result<ModelSet> OpenModelSet(const std::string& dir, const Settings& settings) {
  ModelSet ms;
  std::error_code ec;
  ms.dir = std::filesystem::absolute(dir.empty() ? "." : dir, ec).lexically_normal().string();
  if (!ms.dir.empty() && ms.dir.size() > 1 && ms.dir.back() == '/') ms.dir.pop_back();
  if (!IsDirectory(ms.dir)) return NotFound("model set folder " + ms.dir + " does not exist");
  if (!PathExists(ms.ModelConfigPath())) {
    return NotFound(ms.ModelConfigPath() +
                    " does not exist: run inside a model set folder, pass -m DIR, or create one "
                    "with 'tarn new NAME'");
  }
  TARN_ASSIGN_OR_RETURN(ms.config, data::ModelConfig::Load(ms.ModelConfigPath()));
  for (const auto& w : ms.config.warnings) TARN_LOG(kWarn) << w;
  ms.settings = settings;
  return ms;
}

Result<Settings> LoadSettings(const std::string& exe_path,
                              const std::vector<std::string>& overrides) {
  Settings s;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("TARN_CONF_DIR")) {
    candidates.push_back(JoinPath(env, "global-default.xml"));
  } else if (!exe_path.empty()) {
    std::error_code ec;
    auto exe = std::filesystem::canonical(exe_path, ec);
    if (!ec) {
      // Installed layout (bin/../conf) and the build tree (build/bin/../../conf).
      candidates.push_back((exe.parent_path() / "../conf/global-default.xml").string());
      candidates.push_back((exe.parent_path() / "../../conf/global-default.xml").string());
    }
  }
  for (const auto& c : candidates) {
    if (PathExists(c)) {
      TARN_RETURN_IF_ERROR(s.LoadXml(c));
      break;
    }
  }
  for (const auto& o : overrides) TARN_RETURN_IF_ERROR(s.ApplyOverride(o));
  for (const auto& k : s.UnknownKeys()) {
    TARN_LOG(kDebug) << "setting '" << k << "' is not used by tarn";
  }
  data::ConfigureFileSystems(s);  // hdfs:// paths: HADOOP_CONF_DIR, -D Hadoop keys, tarn.hdfs.*
  return s;
}

}  // namespace tarn::pipeline
