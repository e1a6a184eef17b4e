// Embedding tables: `rows` x `dim` floats addressed by row id, updated by a
// SparseOptimizer. A table may hold the whole table (a single process) or
// one server's share of it: with P parts, part p owns the rows whose
// id % P == p. Rows are created on first touch, initialised from
// (seed, table name, row id) alone, so a share's memory is the rows it was
// asked for, never the whole table, and every holder of a row starts it with
// the same values.
#pragma once

#include <algorithm>
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
  ~EmbeddingTable();  // unmaps the storage and the dense index
  EmbeddingTable(const EmbeddingTable&) = delete;
  EmbeddingTable& operator=(const EmbeddingTable&) = delete;

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

  size_t rows_held() const { return held_; }
  // Bytes held: the rows' storage (values and optimizer state, whole pages)
  // and the row index (the dense index's pages that hold a row, at most).
  size_t bytes_held() const;
  uint64_t steps() const { return optimizer_.steps(); }
  void set_steps(uint64_t steps) { optimizer_.set_steps(steps); }

  // Held rows are visited by position, in [0, positions()), a range at a
  // time if need be (a checkpoint copies a range per lock hold); a row
  // created meanwhile at a position not yet visited is included. With the
  // dense index a position is a local row (rows come in ascending id), with
  // the hashed one the creation order (a visit across the move from the
  // hashed index to the dense one must start again).
  // visit(id, values_and_state) gets the row's id and its stride() floats.
  bool indexed_densely() const { return dense_ != nullptr; }
  size_t positions() const { return dense_ ? local_rows_ : held_; }
  template <typename Visit>
  void ForEachHeld(size_t begin, size_t end, Visit&& visit) const {
    for (size_t p = begin; p < end; ++p) {
      if (dense_) {
        const uint32_t slot = dense_[p];
        if (slot != 0) visit(p * uint64_t(parts_) + uint64_t(part_), Slot(slot - 1));
      } else {
        visit(ids_[p], Slot(p));
      }
    }
  }
  template <typename Visit>
  void ForEachHeld(Visit&& visit) const {
    ForEachHeld(0, positions(), visit);
  }
  // Restores a row (values and state) from a checkpoint.
  Status Restore(uint64_t id, const float* values_and_state);

 private:
  // The rows of part `part` of `parts` of a table of `rows` rows.
  static uint64_t LocalRows(uint64_t rows, int part, int parts);
  // The dense index's mapping: a 4-byte slot per local row (at least one).
  size_t DenseIndexBytes() const { return std::max<uint64_t>(local_rows_, 1) * 4; }
  EmbeddingTable(const TableSpec& spec, int part, int parts);
  float* Slot(size_t i) const {
    return chunks_[i >> chunk_shift_] + (i & ((size_t{1} << chunk_shift_) - 1)) * stride();
  }
  // The row's storage, created (initialised, zero state) on first touch.
  float* Touch(uint64_t id);
  float* NewRow(uint64_t id);

  TableSpec spec_;
  int part_ = 0, parts_ = 1;
  uint64_t local_rows_ = 0;  // rows of this share: id / parts is a row's local row
  SparseOptimizer optimizer_;
  size_t held_ = 0;
  // The rows' storage: slot i is row i of chunk i >> chunk_shift_, each
  // chunk an anonymous memory mapping of about kChunkBytes, so that a
  // chunk's untouched tail takes no memory and a dropped table's memory goes
  // back to the system at once (no allocator arenas keep it).
  static constexpr size_t kChunkBytes = size_t{4} << 20;
  int chunk_shift_ = 0;
  std::vector<float*> chunks_;
  // The row index. A share's rows are known at declare (row r is local row
  // r / parts), so it can be dense: 1 + the row's slot per local row, 0 when
  // not held, one mapping whose pages are taken only where rows are held
  // (4 bytes a row of the share at most). A sparsely touched share (a huge
  // hashed id space) would pay a page per row for it, so a share starts with
  // the hashed index, an open-addressing table (linear probing, at most 70%
  // full) of 1 + the row's slot (0 when free) and each slot's id, and moves
  // to the dense one when the hashed one would grow past its size.
  uint32_t* dense_ = nullptr;
  uint64_t& SlotOf(uint64_t id);
  void GrowIndex();
  std::vector<uint64_t> slots_;
  std::vector<uint64_t> ids_;
  std::vector<float*> touched_rows_, touched_states_;  // scratch for ApplyGradient
};

}  // namespace tarn::model
