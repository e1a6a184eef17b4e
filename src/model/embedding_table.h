// Embedding tables: `rows` x `dim` floats addressed by row id, updated by a
// SparseOptimizer. A table may hold the whole table (a single process) or
// one server's share of it: with P parts, part p owns the rows whose
// id % P == p. Rows are created on first touch, initialised from
// (seed, table name, row id) alone, so a share's memory is the rows it was
// asked for, never the whole table, and every holder of a row starts it with
// the same values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/model_spec.h"
#include "model/sparse_optimizer.h"

namespace tarn::model {

struct TableSpec {
  std::string name;  // [A-Za-z0-9_.-], at most 64 characters (it names files)
  uint64_t rows = 0;
  uint32_t dim = 0;
  uint64_t seed = 0;
  // Initial values are uniform in [-init_scale, init_scale] (Keras'
  // Embedding default, RandomUniform(-0.05, 0.05)).
  float init_scale = 0.05f;
  SparseOptimizerConfig optimizer;

  bool operator==(const TableSpec&) const = default;
  Status Validate() const;
  // {"name","rows","dim","seed","initScale","optimizer":{"kind","learningRate",
  //  "learningDecay","beta1","beta2","epsilon"}}
  Json ToJson() const;
  static Result<TableSpec> FromJson(const Json& j, const std::string& where);
};

// Row `row`'s initial values (dim floats), a function of (seed, name, row).
void InitialRow(const TableSpec& spec, uint64_t row, float* out);

class EmbeddingTable {
 public:
  // The share of part `part` of `parts` (0 of 1: the whole table).
  static Result<std::unique_ptr<EmbeddingTable>> Create(const TableSpec& spec, int part = 0,
                                                        int parts = 1);

  const TableSpec& spec() const { return spec_; }
  int part() const { return part_; }
  int parts() const { return parts_; }
  size_t state_per_row() const { return optimizer_.state_per_row(); }
  // Floats stored per row: the values, then the optimizer state.
  size_t stride() const { return spec_.dim + state_per_row(); }
  bool Owns(uint64_t row) const { return row % static_cast<uint64_t>(parts_) == uint64_t(part_); }

  // Checks ids for a pull or push: each below `rows`, owned by this share,
  // and (distinct) without repeats. The error names the first bad id.
  Status CheckIds(std::span<const uint64_t> ids, bool distinct) const;
  // Copies the rows of (checked) ids into out (ids.size() x dim).
  void Gather(std::span<const uint64_t> ids, float* out);
  // One optimizer step: grad holds the mean gradient rows of the distinct,
  // checked ids (ids.size() x dim). Counts a step when ids is empty too.
  void ApplyGradient(std::span<const uint64_t> ids, const float* grad, int epoch);

  size_t rows_held() const { return ids_.size(); }
  // Bytes held: the rows' storage (values and optimizer state) and the row index.
  size_t bytes_held() const {
    return chunks_.size() * kChunkRows * stride() * sizeof(float) +
           (slots_.capacity() + ids_.capacity()) * sizeof(uint64_t);
  }
  uint64_t steps() const { return optimizer_.steps(); }
  void set_steps(uint64_t steps) { optimizer_.set_steps(steps); }

  // Held rows in the order they were created: the i-th row's id and its
  // stride() floats (values, then state). For checkpoints.
  uint64_t held_id(size_t i) const { return ids_[i]; }
  const float* held_row(size_t i) const { return Slot(i); }
  // Restores a row (values and state) from a checkpoint.
  Status Restore(uint64_t id, const float* values_and_state);

 private:
  static constexpr size_t kChunkRows = 1024;  // rows are allocated in chunks; addresses stay put

  EmbeddingTable(const TableSpec& spec, int part, int parts);
  float* Slot(size_t i) const {
    return chunks_[i / kChunkRows].get() + (i % kChunkRows) * stride();
  }
  // The row's storage, created (initialised, zero state) on first touch.
  float* Touch(uint64_t id);

  TableSpec spec_;
  int part_ = 0, parts_ = 1;
  SparseOptimizer optimizer_;
  // The row index: an open-addressing hash table (linear probing, at most
  // 70% full) of 1 + the row's index in ids_ and storage, 0 when free.
  // 8 bytes a slot: with the id, about 32 bytes a row, where a node-based
  // map and the ids took 57.
  uint64_t& SlotOf(uint64_t id);
  void GrowIndex();
  std::vector<uint64_t> slots_;
  std::vector<uint64_t> ids_;
  std::vector<std::unique_ptr<float[]>> chunks_;
  std::vector<float*> touched_rows_, touched_states_;  // scratch for ApplyGradient
};

}  // namespace tarn::model
