// GraphFeed: how a normalized row (the input columns' slots, in input order,
// as norm writes them and the Scorer normalizes a raw record) feeds a graph's
// inputs. The graph's one dense input takes every slot that is a measurement
// (not a category index), in order; each ids input takes the index slot of
// the categorical column it names. Training and scoring build it from the
// same columns, so both read a row the same way.
//
// The ids come from the rows' index slots (the *_INDEX normTypes) today; the
// one place that reads them is GraphFeed::Gather, so that integer id columns
// can replace the source without touching the graph.
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
  int index_count = 0;           // ids run over [0, index_count)
};

class GraphFeed {
 public:
  // Refuses, by the graph's node: more than one dense input, a dense input
  // whose width is not the row's measurement slots, an ids input naming no
  // input column or a column without an index slot, an embedding whose
  // vocabulary is smaller than its column's id range.
  static Result<GraphFeed> Create(const GraphSpec& spec, const std::vector<FeedColumn>& columns);

  int row_width() const { return row_width_; }
  int dense_width() const { return static_cast<int>(dense_slots_.size()); }
  size_t id_inputs() const { return id_slots_.size(); }

  // One normalized row (row_width() floats) into batch row i:
  // dense[i * dense_width() ..] and ids[k][i] for each ids input k.
  void Gather(const float* row, int i, float* dense, int64_t* const* ids) const;

 private:
  int row_width_ = 0;
  std::vector<int> dense_slots_;  // offsets into the row
  std::vector<int> id_slots_;     // per ids input (graph order): offset of its id
};

}  // namespace tarn::model
