#include "pipeline/model_set.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
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
  return ColumnNames(columns);
}

std::vector<std::string> ModelSet::ColumnNames(const std::vector<data::ColumnConfig>& columns) {
  std::vector<std::string> names;
  names.reserve(columns.size());
  for (const auto& c : columns) names.push_back(c.column_name);
  return names;
}

Status ModelSet::SaveColumns(const std::vector<data::ColumnConfig>& columns) const {
  return data::SaveColumnConfigs(ColumnConfigPath(), columns);
}

Result<std::string> ModelSet::KeepColumnConfigVersion(const std::string& folder, int n) const {
  if (!PathExists(ColumnConfigPath())) return std::string();
  TARN_RETURN_IF_ERROR(MakeDirs(Path(folder)));
  const std::string stem = JoinPath(folder, "ColumnConfig.json.");
  if (n < 0) {
    n = 0;
    while (PathExists(Path(stem + std::to_string(n)))) ++n;
  }
  TARN_ASSIGN_OR_RETURN(auto previous, ReadFile(ColumnConfigPath()));
  const std::string kept = Path(stem + std::to_string(n));
  TARN_RETURN_IF_ERROR(WriteFileAtomic(kept, previous));
  return kept;
}

Result<model::TrainParams> ModelSet::ReadTrainParams() const {
  TARN_ASSIGN_OR_RETURN(auto params, InConfig(model::TrainParams::Parse(config.train.params,
                                                                        config.train.algorithm)));
  for (const auto& w : params.warnings) TARN_LOG(kWarn) << ModelConfigPath() << ": " << w;
  for (const auto& n : params.notes) TARN_LOG(kInfo) << ModelConfigPath() << ": " << n;
  return params;
}

Result<model::TrainingDataOptions> ModelSet::TrainingData(
    uint64_t seed, const std::vector<data::ColumnConfig>& inputs) const {
  if (inputs.empty()) {
    TARN_ASSIGN_OR_RETURN(auto columns, LoadColumns());
    return TrainingDataFrom(seed, columns);
  }
  model::TrainingDataOptions o;
  o.selected = inputs;
  o.data_dir = NormalizedDataDir();
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

Result<model::TrainingDataOptions> ModelSet::TrainingDataFrom(
    uint64_t seed, const std::vector<data::ColumnConfig>& columns) const {
  auto chosen = data::SelectModelInputs(columns);
  if (chosen.columns.empty()) {
    return FailedPrecondition("no column of " + ColumnConfigPath() +
                              " has finalSelect, and none is a good candidate (a candidate with "
                              "stats and a positive KS and IV); run 'tarn stats' or 'tarn varsel'");
  }
  TARN_LOG(kInfo) << "train: " << chosen.rule;
  return TrainingData(seed, chosen.columns);
}

Result<ModelSet> OpenModelSet(const std::string& dir, const Settings& settings) {
  ModelSet ms;
  std::error_code ec;
  ms.dir = std::filesystem::absolute(dir.empty() ? "." : dir, ec).lexically_normal().string();
  if (!ms.dir.empty() && ms.dir.size() > 1 && ms.dir.back() == '/') ms.dir.pop_back();
  // Both are how the command was called (the folder, -m), so usage errors.
  if (!IsDirectory(ms.dir)) {
    return InvalidArgument("model set folder " + ms.dir + " does not exist");
  }
  if (!PathExists(ms.ModelConfigPath())) {
    return InvalidArgument(
        ms.ModelConfigPath() +
        " does not exist: run inside a model set folder, pass -m DIR, or create one "
        "with 'tarn new NAME'");
  }
  TARN_ASSIGN_OR_RETURN(ms.config, data::ModelConfig::Load(ms.ModelConfigPath()));
  for (const auto& w : ms.config.warnings) TARN_LOG(kWarn) << w;
  ms.settings = settings;
  return ms;
}

namespace {

// Dotted keys of a ModelConfig.json object ("basic.runMode", "train.params.LearningRate", ...).
void CollectKeys(const data::Json& object, const std::string& prefix,
                 std::vector<std::string>* out) {
  for (const auto& [key, value] : object.items()) {
    out->push_back(prefix + key);
    if (value.is_object()) CollectKeys(value, prefix + key + ".", out);
  }
}

// The keys of a new model set's ModelConfig.json, for every algorithm, and every declared
// train.params key.
const std::vector<std::string>& ModelConfigKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const char* algorithm : {"NN", "LR", "TENSORFLOW"}) {
      auto config = data::ModelConfig::CreateNew("model", algorithm, "");
      if (config.ok()) CollectKeys(config->raw, "", &out);
    }
    for (const auto& d : model::DeclaredTrainParams())
      out.push_back("train.params." + std::string(d.name));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }();
  return keys;
}

// Why -D<key> does nothing, and what the user probably meant.
std::string UnknownSettingWarning(const std::string& key) {
  std::string message = "-D" + key + " is not a tarn setting and is ignored";
  const auto& keys = ModelConfigKeys();
  for (const auto& k : keys) {
    if (!EqualsIgnoreCase(k, key)) continue;
    const size_t dot = k.rfind('.');
    message += "; " + k + " is a ModelConfig.json key: set \"" + k.substr(dot + 1) + "\"";
    if (dot != std::string::npos) message += " in its \"" + k.substr(0, dot) + "\" section";
    message += " of ModelConfig.json instead";
    return message;
  }
  // Close enough to be a typo: a few edits, fewer than a quarter of the name.
  const size_t allowed = std::max<size_t>(2, key.size() / 4);
  auto [setting, setting_distance] = ClosestSetting(key);
  auto [config_key, config_distance] = ClosestName(key, keys);
  if (setting_distance <= allowed && setting_distance <= config_distance) {
    return message + "; did you mean -D" + setting + "?";
  }
  if (config_distance <= allowed) {
    return message + "; did you mean ModelConfig.json's " + config_key +
           " (set in ModelConfig.json, not with -D)?";
  }
  return message + " ('tarn settings' lists the settings)";
}

}  // namespace

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
  for (const auto& o : overrides) {
    TARN_RETURN_IF_ERROR(s.ApplyOverride(o));
    const std::string key = o.substr(0, o.find('='));
    if (!FindSetting(key) && !IsHadoopKey(key)) {
      TARN_LOG(kWarn) << UnknownSettingWarning(key);
    }
  }
  for (const auto& k : s.UnknownKeys()) {
    TARN_LOG(kDebug) << "setting '" << k << "' is not used by tarn";
  }
  data::ConfigureFileSystems(s);  // hdfs:// paths: HADOOP_CONF_DIR, -D Hadoop keys, tarn.hdfs.*
  return s;
}

}  // namespace tarn::pipeline
