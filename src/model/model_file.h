// models/model{i}.tarn: a trained network with everything needed to score
// raw records.
//
// Layout, little-endian:
//   0  char[8]  magic "TARNMODL"
//   8  u32      format version (1)
//  12  u32      header JSON bytes (H)
//  16  u64      parameter count (P)
//  24  H bytes  header JSON: "spec" (ModelSpec), "columns" (the ColumnConfig
//               entries of the input columns, in input order), "normType",
//               "stdDevCutOff", "missingValues", "training" (metadata),
//               "modelSetColumns" (every column name of the model set; absent
//               in files written before tarn recorded it), "idColumns"
//               (absent when the model reads no ids: per id column its
//               name, columnNum, kind, vocabulary and, for "hash", buckets
//               and hashSeed, data/id_column.h; an "index" column's
//               categories are its binCategory in "columns"), and for
//               checkpoints "checkpoint" (epoch, optimizer state size);
//               a graph model (WDL, DeepFM, DCN, Keras) has "graph"
//               (GraphSpec JSON) and "inputCount" in place of "spec"
//      P x f32  parameters (ModelSpec layout; a graph model: its dense
//               parameters, then every table, then the batch-norm state)
//      S x f32  optimizer state (checkpoints only; S from the header)
//      u32      CRC-32C of every byte before it
// Readers refuse unknown versions, truncation and checksum mismatches with an
// error naming the file; the file is written atomically.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "data/column_config.h"
#include "data/id_column.h"
#include "data/json_fields.h"
#include "model/graph_spec.h"
#include "model/model_spec.h"

namespace tarn::model {

inline constexpr uint32_t kModelFileVersion = 1;

// Where a model file's parameters go as they are written.
class ParamsSink {
 public:
  virtual ~ParamsSink() = default;
  virtual Status Write(std::span<const float> values) = 0;
};
using ParamsWriter = std::function<Status(ParamsSink&)>;
// A sink that appends to a vector (the parameters whole in memory).
class VectorParamsSink : public ParamsSink {
 public:
  explicit VectorParamsSink(std::vector<float>* out) : out_(out) {}
  Status Write(std::span<const float> values) override {
    out_->insert(out_->end(), values.begin(), values.end());
    return Status::Ok();
  }

 private:
  std::vector<float>* out_;
};

struct ModelFile {
  // The MLP; for a graph model only spec.input_count (the normalized width) is set.
  ModelSpec spec;
  std::optional<GraphSpec> graph;
  std::vector<data::ColumnConfig> columns;  // input columns, in input order
  std::string norm_type;
  double std_dev_cut_off = 4;
  std::vector<std::string> missing_values;
  // Every column of the model set (ColumnConfig.json order): the target,
  // weight, meta and unselected columns too, so that a server can accept a
  // raw record as it sits in the data. Empty when unknown (older files).
  std::vector<std::string> model_set_columns;
  // The integer ids the model reads (TrainingData::id_columns), each of one
  // of `columns`; the scorer computes them from raw records as norm did.
  std::vector<data::IdColumn> id_columns;
  Json training = Json::object();  // algorithm, epochs, errors, bag, seed, created...
  std::vector<float> params;
  // Checkpoints only.
  bool is_checkpoint = false;
  int epoch = 0;  // epochs completed
  std::vector<float> optimizer_state;
  Json checkpoint = Json::object();  // extra resume state (RNG, best validation...)

  // spec.ParameterCount(), or a graph's dense + table + state floats.
  size_t ExpectedParameterCount() const;
  Status Save(const std::string& path) const;
  // Save with the parameters written by write_params as they are made (in
  // the file's order, exactly ExpectedParameterCount() floats), `params`
  // unread: a model larger than memory is never whole in it.
  Status SaveStreaming(const std::string& path, const ParamsWriter& write_params) const;
  static Result<ModelFile> Load(const std::string& path);
};

// The input column (of file.columns) an id column reads.
Result<const data::ColumnConfig*> InputColumnOf(const ModelFile& file, const data::IdColumn& id);

}  // namespace tarn::model
