#include "model/training_data.h"

#include <algorithm>
#include <memory>

#include "common/strings.h"
#include "data/normalizer.h"
#include "data/shard.h"

namespace tarn::model {

uint64_t MixSeed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

Result<TrainingData> LoadTrainingData(const TrainingDataOptions& o) {
  TrainingData d;
  if (o.selected.empty()) {
    return FailedPrecondition("no input columns selected; run 'tarn stats' or 'tarn varsel'");
  }
  if (o.shard_paths.empty()) {
    return FailedPrecondition(o.data_dir + " holds no shards; run 'tarn norm' first");
  }
  std::vector<int> which = o.shards;
  if (which.empty()) {
    for (size_t i = 0; i < o.shard_paths.size(); ++i) which.push_back(static_cast<int>(i));
  }
  std::vector<std::unique_ptr<data::ShardReader>> shards;
  for (int i : which) {
    if (i < 0 || static_cast<size_t>(i) >= o.shard_paths.size()) {
      return InvalidArgument("shard index " + std::to_string(i) + " is not in " + o.data_dir);
    }
    TARN_ASSIGN_OR_RETURN(auto r, data::ShardReader::Open(o.shard_paths[i]));
    shards.push_back(std::move(r));
  }
  const data::ShardSchema& schema = shards[0]->schema();
  for (const auto& s : shards) {
    if (s->schema().ToJson() != schema.ToJson()) {
      return FailedPrecondition(s->path() + " was normalized differently from " +
                                shards[0]->path() + "; rerun 'tarn norm'");
    }
  }
  TARN_ASSIGN_OR_RETURN(auto norm_type, data::ParseNormType(o.norm_type));
  if (schema.norm_type != data::NormTypeName(norm_type)) {
    return FailedPrecondition(o.data_dir + " holds " + schema.norm_type +
                              " data but normalize.normType is " + o.norm_type +
                              "; rerun 'tarn norm'");
  }
  d.norm_type = schema.norm_type;
  // Offsets of the selected columns in a shard row.
  std::vector<std::pair<int, int>> slices;  // offset, width
  for (const auto& c : o.selected) {
    int offset = 0;
    bool found = false;
    for (const auto& f : schema.features) {
      if (f.column_num == c.column_num && f.name == c.column_name) {
        slices.emplace_back(offset, f.width);
        found = true;
        break;
      }
      offset += f.width;
    }
    if (!found) {
      return FailedPrecondition("column '" + c.column_name + "' is selected but not in " +
                                o.data_dir + "; rerun 'tarn norm'");
    }
    d.inputs += slices.back().second;
    d.columns.push_back(c);
    d.widths.push_back(slices.back().second);
  }
  // Positions of the selected columns' ids in a shard's id row.
  std::vector<size_t> id_slots;
  for (const auto& c : o.selected) {
    for (size_t k = 0; k < schema.id_columns.size(); ++k) {
      if (schema.id_columns[k].column_num == c.column_num &&
          schema.id_columns[k].name == c.column_name) {
        id_slots.push_back(k);
        d.id_columns.push_back(schema.id_columns[k]);
      }
    }
  }
  if (o.schema_only) return d;
  uint64_t rows = 0;
  for (const auto& s : shards) rows += s->rows();
  if (rows == 0 && o.require_train_rows) {
    return FailedPrecondition(o.data_dir + " holds no rows");
  }
  if (rows > UINT32_MAX) return Unsupported("more than 4 billion training rows");
  d.x.resize(rows * d.stride());
  d.ids.resize(rows * id_slots.size());
  const int fpr = schema.FloatsPerRow();
  uint64_t r = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    const auto& s = shards[k];
    const uint64_t si = static_cast<uint64_t>(which[k]);
    for (uint64_t i = 0; i < s->rows(); ++i, ++r) {
      const float* src = s->row(i);
      float* dst = d.x.data() + r * d.stride();
      for (const auto& [offset, width] : slices) {
        std::copy_n(src + offset, width, dst);
        dst += width;
      }
      dst[0] = src[fpr - 2];  // dst now points past the inputs
      dst[1] = src[fpr - 1];
      if (!id_slots.empty()) {
        const uint32_t* ids = s->ids(i);
        uint32_t* id_dst = d.ids.data() + r * id_slots.size();
        for (size_t k = 0; k < id_slots.size(); ++k) id_dst[k] = ids[id_slots[k]];
      }
      // Validation rows by a hash of the row's place: the same split every run.
      uint64_t h = MixSeed(o.seed ^ MixSeed((si << 40) ^ i));
      bool is_valid = static_cast<double>(h >> 11) * 0x1.0p-53 < o.valid_rate;
      (is_valid ? d.valid : d.train).push_back(static_cast<uint32_t>(r));
    }
  }
  if (d.train.empty() && o.require_train_rows) {
    return FailedPrecondition("train.validSetRate " + FormatDouble(o.valid_rate) +
                              " leaves no training rows");
  }
  return d;
}

Result<int> InputWidth(const TrainingDataOptions& o) {
  if (o.shard_paths.empty()) {
    return FailedPrecondition(o.data_dir + " holds no shards; run 'tarn norm' first");
  }
  TARN_ASSIGN_OR_RETURN(auto shard, data::ShardReader::Open(o.shard_paths[0]));
  int inputs = 0;
  for (const auto& c : o.selected) {
    bool found = false;
    for (const auto& f : shard->schema().features) {
      if (f.column_num == c.column_num && f.name == c.column_name) {
        inputs += f.width;
        found = true;
        break;
      }
    }
    if (!found) {
      return FailedPrecondition("column '" + c.column_name + "' is selected but not in " +
                                o.data_dir + "; rerun 'tarn norm'");
    }
  }
  return inputs;
}

}  // namespace tarn::model
