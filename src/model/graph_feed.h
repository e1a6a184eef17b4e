// GraphFeed: how one row feeds a graph's inputs. A row is the normalized
// values (the input columns' slots, in input order, as norm writes them and
// the Scorer normalizes a raw record) and the integer ids of the id columns
// (data/id_column.h: TrainingData::id_row in training, Scorer::Ids in eval and
// serving). The graph's one dense input takes every normalized slot that is a
// measurement (not a category index), in order; each ids input takes the id
// of the column it names. GraphFeed::Gather is the one place a graph input's
// id comes from, so training and scoring read a row the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/graph_spec.h"

namespace tarn::model {

// One input column of the normalized row.
struct FeedColumn {
  std::string name;
  int width = 1;                 // slots in the normalized row
  std::vector<int> index_slots;  // slots (0..width-1) holding a category index
  int id_column = -1;            // its position among the row's ids, -1: none
  uint32_t vocabulary = 0;       // its ids run over [0, vocabulary)
};

class GraphFeed {
 public:
  // Refuses, by the graph's node: more than one dense input, a dense input
  // whose width is not the row's measurement slots, an ids input naming no
  // input column or a column without an id column, an embedding whose
  // vocabulary is smaller than its column's id range.
  static Result<GraphFeed> Create(const GraphSpec& spec, const std::vector<FeedColumn>& columns);

  int row_width() const { return row_width_; }
  int dense_width() const { return static_cast<int>(dense_slots_.size()); }
  size_t id_inputs() const { return id_columns_.size(); }
  // The row's slots the dense input takes, in order (empty: no dense input).
  const std::vector<int>& dense_slots() const { return dense_slots_; }

  // One row (row_width() normalized floats and its ids) into batch row i:
  // dense[i * dense_width() ..] and ids[k][i] for each ids input k.
  void Gather(const float* row, const uint32_t* row_ids, int i, float* dense,
              int64_t* const* ids) const;

 private:
  int row_width_ = 0;
  std::vector<int> dense_slots_;  // offsets into the row
  std::vector<int> id_columns_;   // per ids input (graph order): its id's position
};

}  // namespace tarn::model
