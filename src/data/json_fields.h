// Typed access to JSON config objects with errors that name the file, the key
// and the expected type, and a record of which keys were understood so that
// unknown ones can be warned about (never silently dropped).
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace tarn::data {

using Json = nlohmann::ordered_json;

// A finite number, or null (JSON has no NaN).
inline Json OrNull(double v) { return std::isfinite(v) ? Json(v) : Json(); }

class JsonFields {
 public:
  // `object` may be null (then every Get returns the default); `path` is the
  // dotted prefix used in messages ("dataSet"), `file` the file name.
  JsonFields(const Json* object, std::string file, std::string path);

  Status GetString(const char* key, std::string* out);  // null keeps *out
  Status GetInt(const char* key, int* out);
  Status GetInt64(const char* key, int64_t* out);
  Status GetDouble(const char* key, double* out);
  Status GetBool(const char* key, bool* out);
  Status GetStringList(const char* key, std::vector<std::string>* out);
  // Marks a key as understood without reading it (kept in the raw JSON).
  void Accept(const char* key);
  // Sub-object (may be null/absent); marks it understood.
  Result<const Json*> GetObject(const char* key);

  // "file: unknown key 'path.key'" for each key no Get/Accept asked for.
  std::vector<std::string> UnknownKeyWarnings() const;
  std::string Where(const char* key) const;

 private:
  const Json* Find(const char* key);
  Status TypeError(const char* key, const char* expected, const Json& found) const;

  const Json* object_;
  std::string file_;
  std::string path_;
  std::set<std::string> seen_;
};

std::string JsonTypeName(const Json& j);

// Lenient conversions, as Jackson reads Shifu's configs: a number, or a string
// holding one ("10"). Doubles must be finite. False when `j` is neither.
bool JsonAsInt(const Json& j, int* out);
bool JsonAsInt64(const Json& j, int64_t* out);
bool JsonAsDouble(const Json& j, double* out);
// obj[key], or nullptr when obj is not an object or the key is absent or null.
const Json* JsonFind(const Json& obj, const char* key);

}  // namespace tarn::data
