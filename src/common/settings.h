// Job settings: Shifu's Hadoop-style keys (conf/global-default.xml) plus
// tarn's own. Every key is declared once, in settings.cpp, with its type,
// default and documentation; the shipped XML file is checked against that
// table by a test. Values come from the declared default, then the XML file,
// then -Dkey=value overrides, in that order.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace tarn {

enum class SettingType { kInt, kDouble, kBool, kString };

struct SettingDecl {
  const char* name;
  SettingType type;
  const char* default_value;
  const char* doc;
};

const std::vector<SettingDecl>& DeclaredSettings();
const SettingDecl* FindSetting(const std::string& name);
const char* SettingTypeName(SettingType type);
// The declared setting nearest to `name` by edit distance, and that distance; {"", max} when
// none is declared.
std::pair<std::string, size_t> ClosestSetting(const std::string& name);
// Keys of Hadoop's own configuration (fs.defaultFS, dfs.*, yarn.*, hadoop.*, ...), which -D
// passes to the cluster configuration rather than to tarn's settings.
bool IsHadoopKey(const std::string& name);

class Settings {
 public:
  // Declared defaults only.
  Settings();

  // Reads a Hadoop configuration file (<configuration><property><name>..</name>
  // <value>..</value></property>...). Unknown keys are kept (Shifu passes them
  // through) and reported by UnknownKeys().
  Status LoadXml(const std::string& path);
  Status ParseXml(const std::string& text, const std::string& source_name);
  // "key=value" as given after -D.
  Status ApplyOverride(const std::string& key_equals_value);
  Status Set(const std::string& key, const std::string& value, const std::string& source);

  Result<long long> GetInt(const std::string& key) const;
  Result<double> GetDouble(const std::string& key) const;
  Result<bool> GetBool(const std::string& key) const;
  std::string GetString(const std::string& key) const;
  bool Has(const std::string& key) const { return values_.count(key) > 0; }

  std::vector<std::string> UnknownKeys() const;
  const std::map<std::string, std::string>& values() const { return values_; }

  // The global-default.xml that documents every declared key.
  static std::string DefaultXml();

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> sources_;  // where each value came from
};

}  // namespace tarn
