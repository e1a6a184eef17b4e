#include "model/model_file.h"

#include <cstring>

#include "common/checksum.h"
#include "common/files.h"
#include "data/normalizer.h"

namespace tarn::model {

namespace {

constexpr char kMagic[8] = {'T', 'A', 'R', 'N', 'M', 'O', 'D', 'L'};
constexpr size_t kFixed = 24;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}
template <typename T>
T Get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

Result<const data::ColumnConfig*> InputColumnOf(const ModelFile& file, const data::IdColumn& id) {
  for (const auto& c : file.columns) {
    if (c.column_num == id.column_num && c.column_name == id.name) return &c;
  }
  return FailedPrecondition("id column '" + id.name + "' is not one of the model's input columns");
}

size_t ModelFile::ExpectedParameterCount() const {
  return graph ? graph->ParameterCount() + graph->StateCount() : spec.ParameterCount();
}

Status ModelFile::Save(const std::string& path) const {
  if (params.size() != ExpectedParameterCount()) {
    return Internal("model has " + std::to_string(params.size()) + " parameters, its spec " +
                    std::to_string(ExpectedParameterCount()));
  }
  return SaveStreaming(path, [this](ParamsSink& sink) { return sink.Write(params); });
}

namespace {

// Appends to the model file's temporary file, with the checksum on the way.
class FileParamsSink : public ParamsSink {
 public:
  explicit FileParamsSink(AtomicFile* file) : file_(file) {}
  Status WriteBytes(const void* data, size_t size) {
    crc_ = Crc32c(crc_, data, size);
    return file_->Write(data, size);
  }
  Status Write(std::span<const float> values) override {
    floats_ += values.size();
    return WriteBytes(values.data(), values.size_bytes());
  }
  uint32_t crc() const { return crc_; }
  uint64_t floats() const { return floats_; }

 private:
  AtomicFile* file_;
  uint32_t crc_ = 0;
  uint64_t floats_ = 0;
};

}  // namespace

Status ModelFile::SaveStreaming(const std::string& path, const ParamsWriter& write_params) const {
  const uint64_t count = ExpectedParameterCount();
  Json header = {{"format", "tarn-model"},          {"columns", data::ColumnConfigsToJson(columns)},
                 {"normType", norm_type},           {"stdDevCutOff", std_dev_cut_off},
                 {"missingValues", missing_values}, {"training", training}};
  if (graph) {
    header["graph"] = graph->ToJson();
    header["inputCount"] = spec.input_count;
  } else {
    header["spec"] = spec.ToJson();
  }
  if (!model_set_columns.empty()) header["modelSetColumns"] = model_set_columns;
  if (!id_columns.empty()) {
    Json ids = Json::array();
    for (const auto& c : id_columns) ids.push_back(c.ToJson());
    header["idColumns"] = std::move(ids);
  }
  if (is_checkpoint) {
    header["checkpoint"] = checkpoint;
    header["checkpoint"]["epoch"] = epoch;
    header["checkpoint"]["optimizerStateSize"] = optimizer_state.size();
  }
  std::string json = header.dump();
  std::string fixed;
  fixed.append(kMagic, 8);
  Put<uint32_t>(&fixed, kModelFileVersion);
  Put<uint32_t>(&fixed, static_cast<uint32_t>(json.size()));
  Put<uint64_t>(&fixed, count);
  TARN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Open(path));
  FileParamsSink sink(&file);
  TARN_RETURN_IF_ERROR(sink.WriteBytes(fixed.data(), fixed.size()));
  TARN_RETURN_IF_ERROR(sink.WriteBytes(json.data(), json.size()));
  TARN_RETURN_IF_ERROR(write_params(sink).WithContext("writing " + path));
  if (sink.floats() != count) {
    return Internal(path + ": " + std::to_string(sink.floats()) + " parameters written, the spec " +
                    "needs " + std::to_string(count));
  }
  if (is_checkpoint) TARN_RETURN_IF_ERROR(sink.Write(optimizer_state));
  const uint32_t crc = sink.crc();
  TARN_RETURN_IF_ERROR(file.Write(&crc, sizeof(crc)));
  return file.Commit();
}

Result<ModelFile> ModelFile::Load(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  if (bytes.size() < kFixed + 4 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    return Corrupt(path + ": not a tarn model file");
  }
  uint32_t version = Get<uint32_t>(bytes.data() + 8);
  if (version != kModelFileVersion) {
    return Corrupt(path + ": model format version " + std::to_string(version) +
                   " is not supported (this tarn reads version " +
                   std::to_string(kModelFileVersion) + ")");
  }
  uint32_t stored_crc = Get<uint32_t>(bytes.data() + bytes.size() - 4);
  if (Crc32c(0, bytes.data(), bytes.size() - 4) != stored_crc) {
    return Corrupt(path + ": checksum mismatch (the file is truncated or damaged)");
  }
  uint32_t json_bytes = Get<uint32_t>(bytes.data() + 12);
  uint64_t n_params = Get<uint64_t>(bytes.data() + 16);
  if (kFixed + json_bytes > bytes.size() - 4) return Corrupt(path + ": truncated header");
  ModelFile m;
  Json header;
  try {
    header = Json::parse(bytes.substr(kFixed, json_bytes));
  } catch (const nlohmann::json::exception& e) {
    return Corrupt(path + ": bad header: " + e.what());
  }
  try {
    if (header.contains("graph")) {
      TARN_ASSIGN_OR_RETURN(m.graph, GraphSpec::FromJson(header["graph"], path + ": graph"));
      m.spec.input_count = header.at("inputCount").get<int>();
    } else {
      TARN_ASSIGN_OR_RETURN(m.spec, ModelSpec::FromJson(header.at("spec"), path + ": spec"));
    }
    TARN_ASSIGN_OR_RETURN(
        m.columns, data::ParseColumnConfigs(header.at("columns").dump(), path + ": columns"));
    m.norm_type = header.at("normType").get<std::string>();
    m.std_dev_cut_off = header.at("stdDevCutOff").get<double>();
    m.missing_values = header.at("missingValues").get<std::vector<std::string>>();
    m.training = header.value("training", Json::object());
    if (header.contains("modelSetColumns")) {
      m.model_set_columns = header["modelSetColumns"].get<std::vector<std::string>>();
    }
    if (header.contains("idColumns")) {
      for (const auto& c : header["idColumns"]) {
        TARN_ASSIGN_OR_RETURN(auto id, data::IdColumn::FromJson(c, path + ": idColumns"));
        m.id_columns.push_back(std::move(id));
      }
    }
    if (header.contains("checkpoint")) {
      m.is_checkpoint = true;
      m.checkpoint = header["checkpoint"];
      m.epoch = m.checkpoint.at("epoch").get<int>();
      m.optimizer_state.resize(m.checkpoint.at("optimizerStateSize").get<size_t>());
    }
  } catch (const nlohmann::json::exception& e) {
    return Corrupt(path + ": bad header: " + e.what());
  }
  if (n_params != m.ExpectedParameterCount()) {
    return Corrupt(path + ": " + std::to_string(n_params) + " parameters stored, the spec needs " +
                   std::to_string(m.ExpectedParameterCount()));
  }
  {
    // The normalized widths of the input columns must add up to the inputs.
    auto norm = data::ParseNormType(m.norm_type);
    if (!norm.ok()) return Corrupt(path + ": " + norm.status().message());
    int width = 0;
    for (const auto& c : m.columns) {
      auto n = data::ColumnNormalizer::Create(c, *norm, m.std_dev_cut_off);
      if (!n.ok()) return Corrupt(path + ": " + n.status().message());
      width += n->width();
    }
    if (width != m.spec.input_count) {
      return Corrupt(path + ": the input columns normalize to " + std::to_string(width) +
                     " values for a network of " + std::to_string(m.spec.input_count) + " inputs");
    }
    // Every id column is one of the input columns and fits its categories.
    for (const auto& id : m.id_columns) {
      auto column = InputColumnOf(m, id);
      if (!column.ok()) return Corrupt(path + ": " + column.status().message());
      auto encoder = data::IdEncoder::Create(**column, id);
      if (!encoder.ok()) return Corrupt(path + ": " + encoder.status().message());
    }
  }
  size_t need = kFixed + json_bytes + (n_params + m.optimizer_state.size()) * sizeof(float) + 4;
  if (need != bytes.size()) {
    return Corrupt(path + ": expected " + std::to_string(need) + " bytes, found " +
                   std::to_string(bytes.size()));
  }
  const char* p = bytes.data() + kFixed + json_bytes;
  m.params.resize(n_params);
  if (n_params > 0) std::memcpy(m.params.data(), p, n_params * sizeof(float));
  p += n_params * sizeof(float);
  if (!m.optimizer_state.empty()) {  // memcpy from/to null is undefined even for 0 bytes
    std::memcpy(m.optimizer_state.data(), p, m.optimizer_state.size() * sizeof(float));
  }
  return m;
}

}  // namespace tarn::model
