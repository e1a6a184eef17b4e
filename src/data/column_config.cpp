#include "data/column_config.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/files.h"

namespace tarn::data {

const char* ColumnTypeName(ColumnType t) {
  switch (t) {
    case ColumnType::kNumeric:
      return "N";
    case ColumnType::kCategorical:
      return "C";
    case ColumnType::kHybrid:
      return "H";
    case ColumnType::kAuto:
      return "A";
  }
  return "N";
}

const char* ColumnFlagName(ColumnFlag f) {
  switch (f) {
    case ColumnFlag::kNone:
      return nullptr;
    case ColumnFlag::kTarget:
      return "Target";
    case ColumnFlag::kMeta:
      return "Meta";
    case ColumnFlag::kForceSelect:
      return "ForceSelect";
    case ColumnFlag::kForceRemove:
      return "ForceRemove";
    case ColumnFlag::kCandidate:
      return "Candidate";
    case ColumnFlag::kWeight:
      return "Weight";
  }
  return nullptr;
}

bool ColumnConfig::IsGoodCandidate(bool has_candidate_flags) const {
  const bool candidate = has_candidate_flags ? column_flag == ColumnFlag::kCandidate ||
                                                   column_flag == ColumnFlag::kForceSelect
                                             : IsCandidate();
  const double ks = stats.ks.value_or(0), iv = stats.iv.value_or(0);
  return candidate && HasStats() && ks > 0 && iv > 0 && std::isfinite(iv);
}

bool HasCandidateFlags(const std::vector<ColumnConfig>& columns) {
  return std::any_of(columns.begin(), columns.end(),
                     [](const ColumnConfig& c) { return c.column_flag == ColumnFlag::kCandidate; });
}

ModelInputs SelectModelInputs(const std::vector<ColumnConfig>& columns) {
  ModelInputs in;
  for (const auto& c : columns) {
    if (c.final_select && !c.IsTarget() && !c.IsMeta() && !c.IsWeight()) in.columns.push_back(c);
  }
  if (!in.columns.empty()) {
    in.rule = "training on the " + std::to_string(in.columns.size()) +
              (in.columns.size() == 1 ? " column" : " columns") + " with finalSelect";
    return in;
  }
  const bool flags = HasCandidateFlags(columns);
  for (const auto& c : columns) {
    if (c.IsGoodCandidate(flags)) in.columns.push_back(c);
  }
  in.all_good_candidates = true;
  in.rule = "no column has finalSelect: training on all " + std::to_string(in.columns.size()) +
            " good candidate columns" + (flags ? " (flagged Candidate or ForceSelect)" : "") +
            ", as Shifu does";
  return in;
}

namespace {

// Shifu writes non-finite doubles as strings ("-Infinity", "NaN").
Json NumberJson(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

template <typename T>
Json OptJson(const std::optional<T>& v) {
  if (!v) return nullptr;
  if constexpr (std::is_floating_point_v<T>) {
    return NumberJson(*v);
  } else {
    return *v;
  }
}

template <typename T>
Json ListJson(const std::vector<T>& v) {
  if (v.empty()) return nullptr;
  Json a = Json::array();
  for (const auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      a.push_back(NumberJson(x));
    } else {
      a.push_back(x);
    }
  }
  return a;
}

struct Reader {
  const std::string& file;
  std::string where;

  Status Err(const std::string& key, const char* expected, const Json& got) const {
    return InvalidArgument(file + ": " + where + "." + key + " must be " + expected + ", got " +
                           got.dump());
  }

  Result<std::optional<double>> Double(const Json& obj, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::optional<double>();
    if (it->is_number()) return std::optional<double>(it->get<double>());
    if (it->is_string()) {
      const auto& s = it->get_ref<const std::string&>();
      if (s == "-Infinity") return std::optional<double>(-std::numeric_limits<double>::infinity());
      if (s == "Infinity") return std::optional<double>(std::numeric_limits<double>::infinity());
      if (s == "NaN") return std::optional<double>(std::numeric_limits<double>::quiet_NaN());
    }
    return Err(key, "a number", *it);
  }

  Result<std::optional<long long>> Long(const Json& obj, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::optional<long long>();
    if (it->is_number_integer() || it->is_number_unsigned()) {
      return std::optional<long long>(it->get<long long>());
    }
    if (it->is_number_float()) return std::optional<long long>(std::llround(it->get<double>()));
    return Err(key, "an integer", *it);
  }

  template <typename T>
  Status List(const Json& obj, const char* key, std::vector<T>* out) const {
    out->clear();
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return Status::Ok();
    if (!it->is_array()) return Err(key, "a list", *it);
    for (const auto& e : *it) {
      if constexpr (std::is_same_v<T, std::string>) {
        if (!e.is_string()) return Err(key, "a list of strings", *it);
        out->push_back(e.get<std::string>());
      } else if constexpr (std::is_floating_point_v<T>) {
        Json wrapper = {{"v", e}};
        TARN_ASSIGN_OR_RETURN(auto v, Double(wrapper, "v"));
        if (!v) return Err(key, "a list of numbers", *it);
        out->push_back(*v);
      } else {
        if (!e.is_number()) return Err(key, "a list of integers", *it);
        out->push_back(static_cast<T>(std::llround(e.get<double>())));
      }
    }
    return Status::Ok();
  }
};

}  // namespace

Json ColumnConfigsToJson(const std::vector<ColumnConfig>& columns) {
  Json arr = Json::array();
  for (const auto& c : columns) {
    const auto& s = c.stats;
    const auto& b = c.binning;
    Json j;
    j["columnNum"] = c.column_num;
    j["columnName"] = c.column_name;
    j["version"] = c.version;
    j["columnType"] = c.column_type ? Json(ColumnTypeName(*c.column_type)) : Json(nullptr);
    const char* flag = ColumnFlagName(c.column_flag);
    j["columnFlag"] = flag ? Json(flag) : Json(nullptr);
    j["finalSelect"] = c.final_select;
    j["hybridThreshold"] = c.hybrid_threshold;
    j["sampleValues"] = ListJson(c.sample_values);
    j["hashSeed"] = c.hash_seed;
    j["columnStats"] = {
        {"max", OptJson(s.max)},
        {"min", OptJson(s.min)},
        {"mean", OptJson(s.mean)},
        {"median", OptJson(s.median)},
        {"25th", OptJson(s.p25)},
        {"75th", OptJson(s.p75)},
        {"totalCount", OptJson(s.total_count)},
        {"distinctCount", OptJson(s.distinct_count)},
        {"missingCount", OptJson(s.missing_count)},
        {"validNumCount", OptJson(s.valid_num_count)},
        {"stdDev", OptJson(s.std_dev)},
        {"missingPercentage", OptJson(s.missing_percentage)},
        {"woe", OptJson(s.woe)},
        {"ks", OptJson(s.ks)},
        {"iv", OptJson(s.iv)},
        {"weightedKs", OptJson(s.weighted_ks)},
        {"weightedIv", OptJson(s.weighted_iv)},
        {"weightedWoe", OptJson(s.weighted_woe)},
        {"skewness", OptJson(s.skewness)},
        {"kurtosis", OptJson(s.kurtosis)},
        {"psi", OptJson(s.psi)},
        {"unitStats", nullptr},
    };
    j["columnBinning"] = {
        {"length", b.length},
        {"binBoundary", ListJson(b.bin_boundary)},
        {"binCategory", ListJson(b.bin_category)},
        {"binCountNeg", ListJson(b.bin_count_neg)},
        {"binCountPos", ListJson(b.bin_count_pos)},
        {"binPosRate", ListJson(b.bin_pos_rate)},
        {"binAvgScore", ListJson(b.bin_avg_score)},
        {"binWeightedNeg", ListJson(b.bin_weighted_neg)},
        {"binWeightedPos", ListJson(b.bin_weighted_pos)},
        {"binCountWoe", ListJson(b.bin_count_woe)},
        {"binWeightedWoe", ListJson(b.bin_weighted_woe)},
    };
    arr.push_back(std::move(j));
  }
  return arr;
}

Result<std::vector<ColumnConfig>> ParseColumnConfigs(const std::string& text,
                                                     const std::string& file) {
  Json arr;
  try {
    arr = Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgument(file + ": not valid JSON: " + e.what());
  }
  if (!arr.is_array()) return InvalidArgument(file + ": the top level must be a list of columns");
  std::vector<ColumnConfig> out;
  for (size_t i = 0; i < arr.size(); ++i) {
    const Json& j = arr[i];
    std::string where = "[" + std::to_string(i) + "]";
    if (!j.is_object()) return InvalidArgument(file + ": " + where + " must be an object");
    Reader r{file, where};
    ColumnConfig c;
    if (!j.contains("columnName") || !j["columnName"].is_string()) {
      return InvalidArgument(file + ": " + where + ".columnName must be a string");
    }
    c.column_name = j["columnName"].get<std::string>();
    r.where.append(" (").append(c.column_name).append(")");
    TARN_ASSIGN_OR_RETURN(auto num, r.Long(j, "columnNum"));
    c.column_num = num ? static_cast<int>(*num) : static_cast<int>(i);
    if (j.contains("version") && j["version"].is_string()) c.version = j["version"];
    if (j.contains("columnType") && !j["columnType"].is_null()) {
      std::string t = j["columnType"].is_string() ? j["columnType"].get<std::string>() : "?";
      if (t == "N")
        c.column_type = ColumnType::kNumeric;
      else if (t == "C")
        c.column_type = ColumnType::kCategorical;
      else if (t == "H")
        c.column_type = ColumnType::kHybrid;
      else if (t == "A")
        c.column_type = ColumnType::kAuto;
      else
        return r.Err("columnType", "one of N, C, H, A", j["columnType"]);
    }
    if (j.contains("columnFlag") && !j["columnFlag"].is_null()) {
      std::string f = j["columnFlag"].is_string() ? j["columnFlag"].get<std::string>() : "?";
      bool found = false;
      for (auto flag : {ColumnFlag::kTarget, ColumnFlag::kMeta, ColumnFlag::kForceSelect,
                        ColumnFlag::kForceRemove, ColumnFlag::kCandidate, ColumnFlag::kWeight}) {
        if (f == ColumnFlagName(flag)) {
          c.column_flag = flag;
          found = true;
        }
      }
      if (!found) {
        return r.Err("columnFlag",
                     "one of Target, Meta, ForceSelect, ForceRemove, Candidate, Weight",
                     j["columnFlag"]);
      }
    }
    if (j.contains("finalSelect") && j["finalSelect"].is_boolean())
      c.final_select = j["finalSelect"];
    if (j.contains("hashSeed") && j["hashSeed"].is_number()) c.hash_seed = j["hashSeed"];
    TARN_RETURN_IF_ERROR(r.List(j, "sampleValues", &c.sample_values));
    if (j.contains("columnStats") && j["columnStats"].is_object()) {
      const Json& s = j["columnStats"];
      Reader sr{file, r.where + ".columnStats"};
      auto& st = c.stats;
      TARN_ASSIGN_OR_RETURN(st.max, sr.Double(s, "max"));
      TARN_ASSIGN_OR_RETURN(st.min, sr.Double(s, "min"));
      TARN_ASSIGN_OR_RETURN(st.mean, sr.Double(s, "mean"));
      TARN_ASSIGN_OR_RETURN(st.median, sr.Double(s, "median"));
      TARN_ASSIGN_OR_RETURN(st.p25, sr.Double(s, "25th"));
      TARN_ASSIGN_OR_RETURN(st.p75, sr.Double(s, "75th"));
      TARN_ASSIGN_OR_RETURN(st.total_count, sr.Long(s, "totalCount"));
      TARN_ASSIGN_OR_RETURN(st.distinct_count, sr.Long(s, "distinctCount"));
      TARN_ASSIGN_OR_RETURN(st.missing_count, sr.Long(s, "missingCount"));
      TARN_ASSIGN_OR_RETURN(st.valid_num_count, sr.Long(s, "validNumCount"));
      TARN_ASSIGN_OR_RETURN(st.std_dev, sr.Double(s, "stdDev"));
      TARN_ASSIGN_OR_RETURN(st.missing_percentage, sr.Double(s, "missingPercentage"));
      TARN_ASSIGN_OR_RETURN(st.woe, sr.Double(s, "woe"));
      TARN_ASSIGN_OR_RETURN(st.ks, sr.Double(s, "ks"));
      TARN_ASSIGN_OR_RETURN(st.iv, sr.Double(s, "iv"));
      TARN_ASSIGN_OR_RETURN(st.weighted_ks, sr.Double(s, "weightedKs"));
      TARN_ASSIGN_OR_RETURN(st.weighted_iv, sr.Double(s, "weightedIv"));
      TARN_ASSIGN_OR_RETURN(st.weighted_woe, sr.Double(s, "weightedWoe"));
      TARN_ASSIGN_OR_RETURN(st.skewness, sr.Double(s, "skewness"));
      TARN_ASSIGN_OR_RETURN(st.kurtosis, sr.Double(s, "kurtosis"));
      TARN_ASSIGN_OR_RETURN(st.psi, sr.Double(s, "psi"));
    }
    if (j.contains("columnBinning") && j["columnBinning"].is_object()) {
      const Json& b = j["columnBinning"];
      Reader br{file, r.where + ".columnBinning"};
      auto& bn = c.binning;
      TARN_ASSIGN_OR_RETURN(auto len, br.Long(b, "length"));
      bn.length = len ? static_cast<int>(*len) : 0;
      TARN_RETURN_IF_ERROR(br.List(b, "binBoundary", &bn.bin_boundary));
      TARN_RETURN_IF_ERROR(br.List(b, "binCategory", &bn.bin_category));
      TARN_RETURN_IF_ERROR(br.List(b, "binCountNeg", &bn.bin_count_neg));
      TARN_RETURN_IF_ERROR(br.List(b, "binCountPos", &bn.bin_count_pos));
      TARN_RETURN_IF_ERROR(br.List(b, "binPosRate", &bn.bin_pos_rate));
      TARN_RETURN_IF_ERROR(br.List(b, "binAvgScore", &bn.bin_avg_score));
      TARN_RETURN_IF_ERROR(br.List(b, "binWeightedNeg", &bn.bin_weighted_neg));
      TARN_RETURN_IF_ERROR(br.List(b, "binWeightedPos", &bn.bin_weighted_pos));
      TARN_RETURN_IF_ERROR(br.List(b, "binCountWoe", &bn.bin_count_woe));
      TARN_RETURN_IF_ERROR(br.List(b, "binWeightedWoe", &bn.bin_weighted_woe));
      // Shifu files written before the missing bin existed have `length`
      // entries; treat the absent missing bin as empty.
      auto pad = [&](auto& v, auto zero) {
        if (!v.empty() && static_cast<int>(v.size()) == bn.length) v.push_back(zero);
      };
      pad(bn.bin_count_neg, 0LL);
      pad(bn.bin_count_pos, 0LL);
      pad(bn.bin_pos_rate, 0.0);
      pad(bn.bin_weighted_neg, 0.0);
      pad(bn.bin_weighted_pos, 0.0);
    }
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<ColumnConfig>> LoadColumnConfigs(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseColumnConfigs(*text, path);
}

Status SaveColumnConfigs(const std::string& path, const std::vector<ColumnConfig>& columns) {
  return WriteFileAtomic(path, ColumnConfigsToJson(columns).dump(2) + "\n");
}

}  // namespace tarn::data
