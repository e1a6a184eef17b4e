#include "pipeline/export_step.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "data/id_column.h"
#include "data/normalizer.h"
#include "model/model_file.h"
#include "model/onnx_export.h"
#include "model/pmml_export.h"
#include "model/scorer.h"
#include "model/serving_version.h"

namespace tarn::pipeline {

namespace {

using data::Json;

constexpr const char* kSupportedTypes = "pmml, baggingpmml, onnx, columnstats, serving";

// ---------------------------------------------------------------- onnx

struct ModelPath {
  int index = 0;
  std::string path;
};

// models/model{i}.tarn, by index.
Result<std::vector<ModelPath>> FindModels(const ModelSet& ms) {
  const std::string dir = ms.Path("models");
  std::vector<ModelPath> models;
  if (IsDirectory(dir)) {
    TARN_ASSIGN_OR_RETURN(auto names, ListDirectory(dir));
    for (const auto& name : names) {
      if (!StartsWith(name, "model") || !EndsWith(name, ".tarn")) continue;
      std::string digits = name.substr(5, name.size() - 5 - 5);
      if (digits.empty() || digits.size() > 6 ||
          !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        continue;
      models.push_back({std::stoi(digits), JoinPath(dir, name)});
    }
  }
  if (models.empty()) {
    return FailedPrecondition("no trained model in " + dir + ": run 'tarn train' first");
  }
  std::sort(models.begin(), models.end(),
            [](const ModelPath& a, const ModelPath& b) { return a.index < b.index; });
  return models;
}

// Where -o sends the export: a folder, or one file when it ends in `extension`.
struct OutputTarget {
  std::string dir;
  std::string file;  // empty: files named by the exporter, in dir
};

// `per_model`: what a folder then receives, for the message ("model{i}.onnx").
Result<OutputTarget> ResolveOutput(const std::string& output, const std::string& default_dir,
                                   const std::string& extension, size_t files,
                                   const std::string& per_model) {
  OutputTarget t{output.empty() ? default_dir : output, ""};
  if (!output.empty() && EndsWith(ToLower(output), extension)) {
    if (files != 1) {
      return InvalidArgument("-o " + output + " names one " + extension + " file but there are " +
                             std::to_string(files) + " models: give a folder to receive " +
                             per_model);
    }
    t.file = output;
    t.dir = DirName(output);
    if (t.dir.empty()) t.dir = ".";
  }
  TARN_RETURN_IF_ERROR(MakeDirs(t.dir));
  return t;
}

// Graph models (WDL, DeepFM, DCN, Keras graphs) have no PMML export:
// docs/TRAINING.md ("Export") says why.
Status RefuseGraphModelPmml(const model::ModelFile& file, const std::string& path) {
  if (!file.graph) return Status::Ok();
  return Unsupported(path + " is a graph model (train.algorithm " +
                     file.training.value("algorithm", std::string("?")) +
                     "); tarn does not export graph models to PMML (PMML has no form for hashed "
                     "ids, and tarn's PMML export covers MLPs only; docs/TRAINING.md, Export). "
                     "Export it with 'tarn export -t onnx', or serve it with 'tarn serve'");
}

// The rule that turns a raw field into an id column's id, for the sidecar.
Json IdRule(const model::ModelFile& file, const data::IdColumn& id) {
  Json j = {{"input", id.name},
            {"type", "int64"},
            {"shape", {"N"}},
            {"columnNum", id.column_num},
            {"kind", data::IdKindName(id.kind)},
            {"vocabulary", id.vocabulary},
            {"missingId", id.HasMissingId() ? Json(id.MissingId()) : Json()}};
  if (id.kind == data::IdKind::kKerasHash) {
    data::PutKerasHashingJson(id.keras, j);
    j["rule"] =
        "the column's raw field, exactly as the data file holds it (not trimmed; a value listed "
        "in missingValues too), gets the bin Keras' Hashing layer gives that text: with "
        "maskValue set (and numBins > 1) the mask value is 0 and any other value 1 + its hash "
        "mod (numBins - 1), else its hash mod numBins; the hash of the UTF-8 bytes is FarmHash "
        "Fingerprint64 (tf.strings.to_hash_bucket_fast) without a salt, SipHash-2-4 keyed by "
        "the two salt words (tf.strings.to_hash_bucket_strong) with one. An id outside [0, "
        "vocabulary) makes the row's score NaN";
    return j;
  }
  const std::string field =
      "the column's raw field, exactly as the data file holds it (not trimmed): a value listed "
      "in missingValues gets missingId (and so does an id outside [0, vocabulary) fed to the "
      "model); ";
  if (id.kind == data::IdKind::kHash) {
    j["buckets"] = id.vocabulary - 1;
    j["hashSeed"] = id.hash_seed;
    j["rule"] = field +
                "any other value gets CategoryHash64(its UTF-8 bytes, hashSeed) mod buckets, "
                "CategoryHash64 being FNV-1a 64 (offset basis 0xcbf29ce484222325 XOR hashSeed, "
                "prime 0x100000001b3) followed by SplitMix64's finalizer (x ^= x >> 30; x *= "
                "0xbf58476d1ce4e5b9; x ^= x >> 27; x *= 0x94d049bb133111eb; x ^= x >> 31), in "
                "wrapping 64-bit unsigned arithmetic";
  } else {
    Json categories = Json::array();
    for (const data::ColumnConfig& c : file.columns) {
      if (c.column_name != id.name || c.column_num != id.column_num) continue;
      for (const auto& group : c.binning.bin_category) categories.push_back(Split(group, "@^"));
    }
    j["categories"] = std::move(categories);
    j["rule"] = field +
                "any other value gets the position of the entry of categories that lists it, "
                "or missingId when none does";
  }
  return j;
}

// The rules of the id columns a graph's ids inputs read, each once, in the
// order of the ONNX model's int64 inputs (the graph's node order).
Json GraphIdInputs(const model::ModelFile& file) {
  Json rules = Json::array();
  for (const auto& node : file.graph->nodes) {
    if (node.op != model::GraphOp::kInput || node.source != model::InputSource::kIds) continue;
    if (std::any_of(rules.begin(), rules.end(),
                    [&](const Json& j) { return j["input"] == node.column; })) {
      continue;
    }
    for (const auto& id : file.id_columns) {
      if (id.name == node.column) rules.push_back(IdRule(file, id));
    }
  }
  return rules;
}

// What a user needs to build the input vector of the exported network.
Json InputDescription(const model::ModelFile& file, const std::string& onnx_name,
                      const std::string& source, const std::vector<int>& widths,
                      const std::vector<std::string>& input_names) {
  Json columns = Json::array();
  Json configs = data::ColumnConfigsToJson(file.columns);
  int offset = 0;
  for (size_t k = 0; k < file.columns.size(); ++k) {
    const auto& c = file.columns[k];
    columns.push_back(
        {{"columnNum", c.column_num},
         {"columnName", c.column_name},
         {"columnType", c.column_type ? Json(data::ColumnTypeName(*c.column_type)) : Json(nullptr)},
         {"offset", offset},
         {"width", widths[k]},
         {"columnConfig", configs[k]}});
    offset += widths[k];
  }
  return {{"format", "tarn-onnx-inputs"},
          {"model", onnx_name},
          {"source", source},
          {"input",
           {{"name", model::kOnnxInputName},
            {"type", "float32"},
            {"shape", {"N", file.spec.input_count}},
            {"description",
             "the normalized values of the columns below, in this order; a column of width k "
             "takes k consecutive values"}}},
          {"output",
           {{"name", model::kOnnxOutputName},
            {"type", "float32"},
            {"shape", {"N", 1}},
            {"description", "the model score (tarn eval reports it x evals.scoreScale)"}}},
          {"normType", file.norm_type},
          {"stdDevCutOff", file.std_dev_cut_off},
          {"missingValues", file.missing_values},
          {"inputNames", input_names},
          {"columns", std::move(columns)},
          {"spec", file.spec.ToJson()},
          {"training", file.training}};
}

Status ExportOnnxModels(const ModelSet& ms, const ExportOptions& options) {
  TARN_ASSIGN_OR_RETURN(auto models, FindModels(ms));
  TARN_ASSIGN_OR_RETURN(auto out, ResolveOutput(options.output, ms.Path("onnx"), ".onnx",
                                                models.size(), "model{i}.onnx"));
  for (const auto& m : models) {
    TARN_ASSIGN_OR_RETURN(model::ModelFile file, model::ModelFile::Load(m.path));
    TARN_ASSIGN_OR_RETURN(auto norm, data::ParseNormType(file.norm_type));
    std::vector<int> widths;
    std::vector<std::string> input_names;
    std::vector<data::ColumnNormalizer> normalizers;
    for (const auto& c : file.columns) {
      auto n = data::ColumnNormalizer::Create(c, norm, file.std_dev_cut_off);
      if (!n.ok()) return n.status().WithContext(m.path);
      widths.push_back(n->width());
      for (int w = 0; w < n->width(); ++w) input_names.push_back(c.column_name);
      normalizers.push_back(std::move(*n));
    }
    // tarn.inputColumns: the distinct columns in input order (the exporter's
    // tarn.inputNames repeats a column once per value it normalizes to).
    Json column_names = Json::array();
    for (const auto& c : file.columns) column_names.push_back(c.column_name);
    std::vector<std::pair<std::string, std::string>> metadata = {
        {"tarn.normType", file.norm_type},
        {"tarn.inputColumns", column_names.dump(-1, ' ', false, Json::error_handler_t::replace)},
        {"tarn.training", file.training.dump(-1, ' ', false, Json::error_handler_t::replace)}};
    Json id_inputs = Json::array();  // graph models: the sidecar's "ids"
    Result<std::string> bytes = std::string();
    if (file.graph) {
      // The feed says which normalized slots the graph's dense input reads.
      auto feed = model::MakeGraphFeed(*file.graph, normalizers, file.id_columns);
      if (!feed.ok()) return feed.status().WithContext(m.path);
      id_inputs = GraphIdInputs(file);
      Json id_names = Json::array();
      for (const auto& j : id_inputs) id_names.push_back(j["input"]);
      metadata.emplace_back("tarn.idInputs",
                            id_names.dump(-1, ' ', false, Json::error_handler_t::replace));
      model::GraphOnnxInputs graph_inputs{file.spec.input_count, feed->dense_slots(), input_names};
      for (const auto& id : file.id_columns) {
        graph_inputs.id_ranges.push_back(
            {id.name, id.vocabulary,
             id.HasMissingId() ? std::optional<int64_t>(id.MissingId()) : std::nullopt});
      }
      bytes = model::ExportGraphOnnx(*file.graph, file.params, graph_inputs, metadata);
    } else {
      bytes = model::ExportOnnx(file.spec, file.params, input_names, metadata);
    }
    if (!bytes.ok()) return bytes.status().WithContext(m.path);
    const std::string name = "model" + std::to_string(m.index) + ".onnx";
    const std::string path = out.file.empty() ? JoinPath(out.dir, name) : out.file;
    TARN_RETURN_IF_ERROR(WriteFileAtomic(path, *bytes));
    Json sidecar = InputDescription(file, BaseName(path), m.path, widths, input_names);
    if (file.graph) {
      // The graph in place of the MLP's spec; "input" only when the graph
      // reads normalized values; one "ids" entry per int64 input.
      sidecar.erase("spec");
      sidecar["graph"] = file.graph->ToJson();
      sidecar["opset"] = model::GraphOnnxOpset(*file.graph);
      const bool reads_dense =
          std::any_of(file.graph->nodes.begin(), file.graph->nodes.end(), [](const auto& n) {
            return n.op == model::GraphOp::kInput && n.source == model::InputSource::kDense;
          });
      if (!reads_dense) sidecar.erase("input");
      sidecar["ids"] = std::move(id_inputs);
    }
    TARN_RETURN_IF_ERROR(WriteFileAtomic(
        path + ".json", sidecar.dump(2, ' ', false, Json::error_handler_t::replace) + "\n"));
    if (file.graph) {
      TARN_LOG(kInfo) << "exported " << m.path << " to " << path << " (graph model, "
                      << file.graph->nodes.size() << " nodes, " << sidecar["ids"].size()
                      << " id inputs; inputs described in " << path << ".json)";
    } else {
      TARN_LOG(kInfo) << "exported " << m.path << " to " << path << " (" << file.spec.input_count
                      << " inputs from " << file.columns.size() << " columns, "
                      << file.spec.layers.size() << " layers; inputs described in " << path
                      << ".json)";
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- pmml

model::PmmlOptions PmmlOptionsFor(const ModelSet& ms, const std::string& model_name,
                                  const std::string& description) {
  model::PmmlOptions o;
  o.model_name = model_name;
  o.target_name = ms.config.data_set.target_column_name;
  if (!ms.config.evals.empty()) o.score_scale = ms.config.evals.front().score_scale;
  o.description = description;
  return o;
}

// pmml: pmmls/<ModelSetName><i>.pmml per model; baggingpmml: one
// pmmls/<ModelSetName>.pmml averaging them all (Shifu's layout).
Status ExportPmmlModels(const ModelSet& ms, const ExportOptions& options, bool bagging) {
  TARN_ASSIGN_OR_RETURN(auto models, FindModels(ms));
  const std::string& name = ms.config.name;
  TARN_ASSIGN_OR_RETURN(auto out,
                        ResolveOutput(options.output, ms.Path("pmmls"), ".pmml",
                                      bagging ? 1 : models.size(), ms.config.name + "{i}.pmml"));
  std::vector<model::ModelFile> files;
  for (const auto& m : models) {
    TARN_ASSIGN_OR_RETURN(model::ModelFile file, model::ModelFile::Load(m.path));
    TARN_RETURN_IF_ERROR(RefuseGraphModelPmml(file, m.path));
    if (!bagging) {
      auto xml = model::ExportPmml(
          file, PmmlOptionsFor(ms, name + std::to_string(m.index),
                               "tarn model " + m.path + " (normType " + file.norm_type + ")"));
      if (!xml.ok()) return xml.status().WithContext(m.path);
      const std::string path =
          out.file.empty() ? JoinPath(out.dir, name + std::to_string(m.index) + ".pmml") : out.file;
      TARN_RETURN_IF_ERROR(WriteFileAtomic(path, *xml));
      TARN_LOG(kInfo) << "exported " << m.path << " to " << path;
    } else {
      files.push_back(std::move(file));  // only the combined file needs them all at once
    }
  }
  if (bagging) {
    auto xml = model::ExportBaggingPmml(
        files, PmmlOptionsFor(ms, name,
                              "tarn: the average of " + std::to_string(files.size()) +
                                  " models in " + ms.Path("models")));
    if (!xml.ok()) return xml.status().WithContext(ms.Path("models"));
    const std::string path = out.file.empty() ? JoinPath(out.dir, name + ".pmml") : out.file;
    TARN_RETURN_IF_ERROR(WriteFileAtomic(path, *xml));
    TARN_LOG(kInfo) << "exported the average of " << files.size() << " models to " << path;
  }
  return Status::Ok();
}

// --------------------------------------------------------- columnstats

// Java's Double.toString: the shortest digits that round-trip, in plain
// notation with at least one fraction digit for 1e-3 <= |v| < 1e7
// ("17.0", "0.0123"), else as d.dddE<exp> ("1.0E-4", "1.2345E7").
std::string JavaDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  auto [end, ec] =
      std::to_chars(buf, buf + sizeof(buf), std::fabs(v), std::chars_format::scientific);
  std::string s(buf, end);  // "d.ddde+XX"
  const size_t e = s.find('e');
  const int exp = std::stoi(s.substr(e + 1));
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (s[i] != '.') digits += s[i];
  std::string out;
  const double a = std::fabs(v);
  if (a >= 1e-3 && a < 1e7) {
    const int point = exp + 1;  // digits before the decimal point
    if (point <= 0) {
      out = "0." + std::string(-point, '0') + digits;
    } else if (point >= static_cast<int>(digits.size())) {
      out = digits + std::string(point - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, point) + "." + digits.substr(point);
    }
  } else {
    out = digits.substr(0, 1) + "." + (digits.size() > 1 ? digits.substr(1) : "0") + "E" +
          std::to_string(exp);
  }
  return v < 0 ? "-" + out : out;
}

std::string Opt(const std::optional<double>& v) { return v ? JavaDouble(*v) : "null"; }
std::string Opt(const std::optional<long long>& v) { return v ? std::to_string(*v) : "null"; }

// Shifu writes fields unquoted; a field holding a comma, quote or line break
// is quoted here so that the file stays parseable.
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

Status ExportColumnStats(const ModelSet& ms, const ExportOptions& options) {
  TARN_ASSIGN_OR_RETURN(auto columns, ms.LoadColumns());
  std::string version = "null";
  const Json& raw = ms.config.raw;
  if (raw.is_object() && raw.contains("basic") && raw["basic"].is_object() &&
      raw["basic"].contains("version") && raw["basic"]["version"].is_string()) {
    version = raw["basic"]["version"].get<std::string>();
  }
  std::string out =
      "dataSet,columnFlag,columnName,columnNum,iv,ks,max,mean,median,min,missingCount,"
      "missingPercentage,stdDev,totalCount,distinctCount,weightedIv,weightedKs,weightedWoe,woe,"
      "skewness,kurtosis,columnType,finalSelect,psi,unitstats,version\n";
  for (const auto& c : columns) {
    const auto& s = c.stats;
    const char* flag = data::ColumnFlagName(c.column_flag);
    std::vector<std::string> f = {
        CsvField(ms.config.name),
        flag ? flag : "null",
        CsvField(c.column_name),
        std::to_string(c.column_num),
        Opt(s.iv),
        Opt(s.ks),
        Opt(s.max),
        Opt(s.mean),
        Opt(s.median),
        Opt(s.min),
        Opt(s.missing_count),
        Opt(s.missing_percentage),
        Opt(s.std_dev),
        Opt(s.total_count),
        Opt(s.distinct_count),
        Opt(s.weighted_iv),
        Opt(s.weighted_ks),
        Opt(s.weighted_woe),
        Opt(s.woe),
        Opt(s.skewness),
        Opt(s.kurtosis),
        c.column_type ? data::ColumnTypeName(*c.column_type) : "null",
        c.final_select ? "true" : "false",
        Opt(s.psi),
        "null",  // unitstats: tarn computes no per-unit PSI stats
        CsvField(version),
    };
    out += Join(f, ",");
    out += '\n';
  }
  const std::string path = options.output.empty() ? ms.Path("columnstats.csv") : options.output;
  const std::string dir = DirName(path);
  if (!dir.empty()) TARN_RETURN_IF_ERROR(MakeDirs(dir));
  TARN_RETURN_IF_ERROR(WriteFileAtomic(path, out));
  TARN_LOG(kInfo) << "exported the stats of " << columns.size() << " columns to " << path;
  return Status::Ok();
}

// ---------------------------------------------------------------- serving

Status ExportServingVersion(const ModelSet& ms, const ExportOptions& options) {
  if (options.output.empty()) {
    return InvalidArgument(
        "tarn export -t serving needs -o BASE: the model base folder that 'tarn serve "
        "--model-base BASE' watches");
  }
  TARN_ASSIGN_OR_RETURN(auto models, FindModels(ms));
  std::vector<std::string> paths;
  for (const auto& m : models) paths.push_back(m.path);
  TARN_ASSIGN_OR_RETURN(int64_t version, model::PublishServingVersionFromFiles(
                                             paths, options.output, options.version));
  TARN_LOG(kInfo) << "export: " << paths.size() << (paths.size() == 1 ? " model" : " models")
                  << " -> serving version "
                  << data::ChildPath(options.output, std::to_string(version));
  return Status::Ok();
}

}  // namespace

Status RunExport(const ModelSet& ms, const ExportOptions& options) {
  const std::string type = ToLower(options.type);
  if (type == "serving") return ExportServingVersion(ms, options);
  if (type == "onnx") return ExportOnnxModels(ms, options);
  if (type == "pmml") return ExportPmmlModels(ms, options, false);
  if (type == "baggingpmml") return ExportPmmlModels(ms, options, true);
  if (type == "columnstats") return ExportColumnStats(ms, options);
  return InvalidArgument("unknown export type '" + options.type +
                         "' (supported: " + kSupportedTypes + ")");
}

}  // namespace tarn::pipeline
