#include "data/json_fields.h"

#include <cmath>

namespace tarn::data {

std::string JsonTypeName(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "a list";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

bool JsonAsInt(const Json& j, int* out) {
  if (j.is_number_integer() || j.is_number_unsigned()) {
    *out = j.get<int>();
    return true;
  }
  if (j.is_number_float() && std::floor(j.get<double>()) == j.get<double>()) {
    *out = static_cast<int>(j.get<double>());
    return true;
  }
  if (j.is_string()) {
    try {
      size_t used = 0;
      int v = std::stoi(j.get<std::string>(), &used);
      if (used == j.get<std::string>().size()) {
        *out = v;
        return true;
      }
    } catch (...) {
    }
  }
  return false;
}

bool JsonAsInt64(const Json& j, int64_t* out) {
  if (j.is_number_integer() || j.is_number_unsigned()) {
    if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t{INT64_MAX}) return false;
    *out = j.get<int64_t>();
    return true;
  }
  if (j.is_number_float()) {
    const double v = j.get<double>();
    if (std::floor(v) != v || std::fabs(v) > 9.0e18) return false;
    *out = static_cast<int64_t>(v);
    return true;
  }
  if (j.is_string()) {
    try {
      size_t used = 0;
      const long long v = std::stoll(j.get<std::string>(), &used);
      if (used == j.get<std::string>().size()) {
        *out = v;
        return true;
      }
    } catch (...) {
    }
  }
  return false;
}

bool JsonAsDouble(const Json& j, double* out) {
  if (j.is_number()) {
    *out = j.get<double>();
    return std::isfinite(*out);
  }
  if (j.is_string()) {
    try {
      size_t used = 0;
      double v = std::stod(j.get<std::string>(), &used);
      if (used == j.get<std::string>().size() && std::isfinite(v)) {
        *out = v;
        return true;
      }
    } catch (...) {
    }
  }
  return false;
}

const Json* JsonFind(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

JsonFields::JsonFields(const Json* object, std::string file, std::string path)
    : object_(object && object->is_object() ? object : nullptr),
      file_(std::move(file)),
      path_(std::move(path)) {}

std::string JsonFields::Where(const char* key) const {
  return path_.empty() ? std::string(key) : path_ + "." + key;
}

const Json* JsonFields::Find(const char* key) {
  seen_.insert(key);
  if (!object_) return nullptr;
  auto it = object_->find(key);
  if (it == object_->end() || it->is_null()) return nullptr;
  return &*it;
}

Status JsonFields::TypeError(const char* key, const char* expected, const Json& found) const {
  return InvalidArgument(file_ + ": " + Where(key) + " must be " + expected + ", got " +
                         JsonTypeName(found) + " " + found.dump());
}

Status JsonFields::GetString(const char* key, std::string* out) {
  const Json* j = Find(key);
  if (!j) return Status::Ok();
  if (j->is_string()) {
    *out = j->get<std::string>();
  } else if (j->is_number() || j->is_boolean()) {
    *out = j->dump();  // Jackson coerces scalars to strings; so do we
  } else {
    return TypeError(key, "a string", *j);
  }
  return Status::Ok();
}

Status JsonFields::GetInt(const char* key, int* out) {
  const Json* j = Find(key);
  if (!j) return Status::Ok();
  return JsonAsInt(*j, out) ? Status::Ok() : TypeError(key, "an integer", *j);
}

Status JsonFields::GetInt64(const char* key, int64_t* out) {
  const Json* j = Find(key);
  if (!j) return Status::Ok();
  return JsonAsInt64(*j, out) ? Status::Ok() : TypeError(key, "an integer", *j);
}

Status JsonFields::GetDouble(const char* key, double* out) {
  const Json* j = Find(key);
  if (!j) return Status::Ok();
  return JsonAsDouble(*j, out) ? Status::Ok() : TypeError(key, "a number", *j);
}

Status JsonFields::GetBool(const char* key, bool* out) {
  const Json* j = Find(key);
  if (!j) return Status::Ok();
  if (j->is_boolean()) {
    *out = j->get<bool>();
    return Status::Ok();
  }
  if (j->is_string() && (*j == "true" || *j == "false")) {
    *out = *j == "true";
    return Status::Ok();
  }
  return TypeError(key, "true or false", *j);
}

Status JsonFields::GetStringList(const char* key, std::vector<std::string>* out) {
  const Json* j = Find(key);
  if (!j) return Status::Ok();
  if (!j->is_array()) return TypeError(key, "a list of strings", *j);
  out->clear();
  for (const auto& e : *j) {
    if (e.is_string()) {
      out->push_back(e.get<std::string>());
    } else if (e.is_number()) {
      out->push_back(e.dump());
    } else {
      return TypeError(key, "a list of strings", *j);
    }
  }
  return Status::Ok();
}

void JsonFields::Accept(const char* key) { seen_.insert(key); }

Result<const Json*> JsonFields::GetObject(const char* key) {
  const Json* j = Find(key);
  if (!j) return static_cast<const Json*>(nullptr);
  if (!j->is_object()) return TypeError(key, "an object", *j);
  return j;
}

std::vector<std::string> JsonFields::UnknownKeyWarnings() const {
  std::vector<std::string> out;
  if (!object_) return out;
  for (auto it = object_->begin(); it != object_->end(); ++it) {
    if (!seen_.count(it.key())) {
      out.push_back(file_ + ": unknown key '" + Where(it.key().c_str()) + "' is ignored");
    }
  }
  return out;
}

}  // namespace tarn::data
