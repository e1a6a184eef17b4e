// Tolerant readers of the ResourceManager's JSON answers (cluster apps and the services API):
// its JSON layer has written numbers as strings, and nulls, in some versions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/strings.h"  // for ParseInt

namespace tarn::cluster::yarn {

// j[key] as text: a string as it is, another value as its JSON; absent or null: "".
inline std::string JsonText(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "";
  const nlohmann::json& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

// j[key] as an integer (a number or a numeric string); 0 otherwise.
inline int64_t JsonInteger(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return 0;
  const nlohmann::json& v = j[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number()) return static_cast<int64_t>(v.get<double>());
  if (v.is_string()) {
    auto p = ParseInt(v.get<std::string>());
    return p ? static_cast<int64_t>(*p) : 0;
  }
  return 0;
}

}  // namespace tarn::cluster::yarn
