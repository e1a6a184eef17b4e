#include "common/settings.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "common/files.h"
#include "common/strings.h"

namespace tarn {

namespace {

const std::vector<SettingDecl> kSettings = {
    // Shifu's keys (conf/global-default.xml of shifu-tensorflow), same meaning.
    {"shifu.task.heartbeat-interval", SettingType::kInt, "1000",
     "Milliseconds between heartbeats of a training node to the coordinator."},
    {"shifu.task.max-missed-heartbeats", SettingType::kInt, "25",
     "Heartbeats a node may miss before the coordinator declares it dead."},
    {"shifu.am.memory", SettingType::kString, "4g", "Memory of the YARN ApplicationMaster."},
    {"shifu.am.vcores", SettingType::kInt, "1", "Virtual cores of the YARN ApplicationMaster."},
    {"shifu.ps.memory", SettingType::kString, "4g", "Memory of each parameter server."},
    {"shifu.ps.vcores", SettingType::kInt, "2", "Virtual cores of each parameter server."},
    {"shifu.ps.instances", SettingType::kInt, "1", "Number of parameter servers."},
    {"shifu.worker.memory", SettingType::kString, "2g", "Memory of each worker."},
    {"shifu.worker.vcores", SettingType::kInt, "2", "Virtual cores of each worker."},
    {"shifu.worker.instances", SettingType::kInt, "0",
     "Number of workers; 0 means one per file in tmp/NormalizedData, as Shifu does."},
    {"shifu.worker.instances.backup", SettingType::kInt, "-1",
     "Number of backup workers; -1 means max(1, workers/10), as Shifu does."},
    {"shifu.application.yarn.queue", SettingType::kString, "default", "YARN queue."},
    {"shifu.application.name", SettingType::kString, "tarn", "YARN application name."},
    {"shifu.application.timeout", SettingType::kInt, "0",
     "Milliseconds before a YARN application is killed; 0 means never."},
    {"shifu.norm.shuffle.size", SettingType::kInt, "0",
     "Shards written by 'tarn norm -shuffle'; 0 means one per core."},
    {"shifu.max.category.size", SettingType::kInt, "10000",
     "Most distinct categories kept per categorical column in stats; the rest fold into the "
     "missing bin."},
    // tarn's own keys.
    {"tarn.threads", SettingType::kInt, "0", "Worker threads for data steps; 0 means all cores."},
    {"tarn.seed", SettingType::kInt, "42",
     "Seed for sampling and shuffling, so that every step is repeatable."},
    {"tarn.data.max-bad-row-ratio", SettingType::kDouble, "0.001",
     "Largest share of rows with a wrong field count before a step fails (0.001 = 0.1%)."},
    {"tarn.data.bad-rows-reported", SettingType::kInt, "5",
     "How many bad rows are reported with file and line."},
    {"tarn.data.chunk-bytes", SettingType::kInt, "1048576",
     "Bytes of text parsed per task; rows are split across threads in chunks this size."},
    {"tarn.data.gzip-whole-file-mb", SettingType::kInt, "128",
     "A gzip file whose compressed and decompressed sizes fit in this many MB is decompressed "
     "whole (libdeflate, faster); larger files, or all when 0, stream through zlib."},
    {"tarn.init.type-sample-rows", SettingType::kInt, "10000",
     "Rows sampled by 'tarn init' to tell numeric from categorical columns."},
    {"tarn.init.numeric-ratio", SettingType::kDouble, "0.95",
     "A column is numeric when at least this share of its sampled non-missing values parse as "
     "numbers."},
    {"tarn.stats.histogram-centroids", SettingType::kInt, "0",
     "Centroids per column histogram; 0 means min(maxNumBin*100, 10000), as Shifu does."},
    {"tarn.stats.exact-values-mb", SettingType::kInt, "64",
     "Memory for exact per-value counts of numeric columns. A column whose distinct values fit "
     "gets exact bins, moments and distinct count without a second pass over the data."},
    {"tarn.stats.hll-precision", SettingType::kInt, "14",
     "HyperLogLog precision p (2^p registers) for distinctCount; 14 gives about 0.8% error."},
    {"tarn.norm.shards", SettingType::kInt, "0",
     "Shards written by 'tarn norm' without -shuffle; 0 means one per input data file."},
    {"tarn.norm.shuffle.buffer-mb", SettingType::kInt, "64",
     "Memory for the shuffle's in-memory buckets before they spill to disk."},
    {"tarn.train.early-stop-patience", SettingType::kInt, "0",
     "Stop training a model when its validation error has not improved for this many epochs, "
     "and keep its best epoch; 0 trains every epoch of numTrainEpochs."},
    {"tarn.varsel.correlation", SettingType::kBool, "true",
     "Let varsel compute the correlation matrix itself when correlationThreshold < 1 and "
     "correlation.csv is missing."},
};

}  // namespace

const std::vector<SettingDecl>& DeclaredSettings() { return kSettings; }

const SettingDecl* FindSetting(const std::string& name) {
  for (const auto& d : kSettings)
    if (name == d.name) return &d;
  return nullptr;
}

const char* SettingTypeName(SettingType type) {
  switch (type) {
    case SettingType::kInt:
      return "an integer";
    case SettingType::kDouble:
      return "a number";
    case SettingType::kBool:
      return "true or false";
    case SettingType::kString:
      return "a string";
  }
  return "?";
}

namespace {

Status CheckType(const SettingDecl& d, const std::string& value, const std::string& source) {
  bool ok = true;
  switch (d.type) {
    case SettingType::kInt:
      ok = ParseInt(value).has_value();
      break;
    case SettingType::kDouble: {
      auto v = ParseDouble(value);
      ok = v.has_value() && std::isfinite(*v);
      break;
    }
    case SettingType::kBool: {
      auto l = ToLower(Trim(value));
      ok = l == "true" || l == "false";
      break;
    }
    case SettingType::kString:
      break;
  }
  if (!ok) {
    return InvalidArgument(source + ": setting '" + d.name + "' must be " +
                           SettingTypeName(d.type) + ", got '" + value + "'");
  }
  return Status::Ok();
}

std::string XmlUnescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    static const std::pair<const char*, char> kEntities[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    bool matched = false;
    for (auto [ent, ch] : kEntities) {
      if (s.substr(i, std::strlen(ent)) == ent) {
        out += ch;
        i += std::strlen(ent) - 1;
        matched = true;
        break;
      }
    }
    if (!matched) out += '&';
  }
  return out;
}

// Text between <tag> and </tag> inside `block`, or nullopt.
std::optional<std::string> ElementText(std::string_view block, const std::string& tag) {
  auto open = block.find("<" + tag + ">");
  if (open == std::string_view::npos) return std::nullopt;
  open += tag.size() + 2;
  auto close = block.find("</" + tag + ">", open);
  if (close == std::string_view::npos) return std::nullopt;
  return XmlUnescape(Trim(block.substr(open, close - open)));
}

size_t LineOf(std::string_view text, size_t offset) {
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

}  // namespace

Settings::Settings() {
  for (const auto& d : kSettings) {
    values_[d.name] = d.default_value;
    sources_[d.name] = "default";
  }
}

Status Settings::Set(const std::string& key, const std::string& value, const std::string& source) {
  if (key.empty()) return InvalidArgument(source + ": empty setting name");
  if (const SettingDecl* d = FindSetting(key)) TARN_RETURN_IF_ERROR(CheckType(*d, value, source));
  values_[key] = value;
  sources_[key] = source;
  return Status::Ok();
}

Status Settings::LoadXml(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseXml(text, path);
}

Status Settings::ParseXml(const std::string& text, const std::string& source_name) {
  std::string_view t(text);
  if (t.find("<configuration") == std::string_view::npos) {
    return InvalidArgument(source_name + ": not a Hadoop configuration file (no <configuration>)");
  }
  size_t pos = 0;
  while (true) {
    // Skip comments so that a commented-out property is not read.
    size_t comment = t.find("<!--", pos);
    size_t open = t.find("<property>", pos);
    if (open == std::string_view::npos) break;
    if (comment != std::string_view::npos && comment < open) {
      size_t end = t.find("-->", comment);
      if (end == std::string_view::npos) {
        return InvalidArgument(source_name + ":" + std::to_string(LineOf(t, comment)) +
                               ": unterminated comment");
      }
      pos = end + 3;
      continue;
    }
    size_t close = t.find("</property>", open);
    if (close == std::string_view::npos) {
      return InvalidArgument(source_name + ":" + std::to_string(LineOf(t, open)) +
                             ": <property> without </property>");
    }
    std::string_view block = t.substr(open, close - open);
    auto name = ElementText(block, "name");
    auto value = ElementText(block, "value");
    std::string where = source_name + ":" + std::to_string(LineOf(t, open));
    if (!name || name->empty()) return InvalidArgument(where + ": <property> without <name>");
    if (!value) return InvalidArgument(where + ": property '" + *name + "' has no <value>");
    TARN_RETURN_IF_ERROR(Set(*name, *value, where));
    pos = close + 11;
  }
  return Status::Ok();
}

Status Settings::ApplyOverride(const std::string& kv) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument("-D" + kv + ": expected -Dkey=value");
  }
  return Set(kv.substr(0, eq), kv.substr(eq + 1), "-D" + kv.substr(0, eq));
}

Result<long long> Settings::GetInt(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return NotFound("setting '" + key + "' is not set");
  auto v = ParseInt(it->second);
  if (!v) {
    return InvalidArgument(sources_.at(key) + ": setting '" + key + "' must be an integer, got '" +
                           it->second + "'");
  }
  return *v;
}

Result<double> Settings::GetDouble(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return NotFound("setting '" + key + "' is not set");
  auto v = ParseDouble(it->second);
  if (!v || !std::isfinite(*v)) {
    return InvalidArgument(sources_.at(key) + ": setting '" + key + "' must be a number, got '" +
                           it->second + "'");
  }
  return *v;
}

Result<bool> Settings::GetBool(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return NotFound("setting '" + key + "' is not set");
  auto l = ToLower(Trim(it->second));
  if (l == "true") return true;
  if (l == "false") return false;
  return InvalidArgument(sources_.at(key) + ": setting '" + key + "' must be true or false, got '" +
                         it->second + "'");
}

std::string Settings::GetString(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? std::string() : it->second;
}

std::vector<std::string> Settings::UnknownKeys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : values_)
    if (!FindSetting(k)) out.push_back(k);
  return out;
}

std::string Settings::DefaultXml() {
  std::string out =
      "<?xml version=\"1.0\"?>\n"
      "<!-- tarn's job settings, with their defaults. Shifu's keys keep Shifu's meaning.\n"
      "     Override any of them for one command with -Dkey=value.\n"
      "     This file is generated from src/common/settings.cpp (tarn settings --xml). -->\n"
      "<configuration>\n";
  for (const auto& d : kSettings) {
    out += "  <property>\n    <name>" + EscapeMarkup(d.name) + "</name>\n    <value>" +
           EscapeMarkup(d.default_value) + "</value>\n    <description>" + EscapeMarkup(d.doc) +
           "</description>\n  </property>\n";
  }
  out += "</configuration>\n";
  return out;
}

}  // namespace tarn
