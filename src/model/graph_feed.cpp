#include "model/graph_feed.h"

#include <algorithm>

namespace tarn::model {

Result<GraphFeed> GraphFeed::Create(const GraphSpec& spec, const std::vector<FeedColumn>& columns) {
  GraphFeed f;
  for (const auto& c : columns) {
    for (int s = 0; s < c.width; ++s) {
      if (std::find(c.index_slots.begin(), c.index_slots.end(), s) == c.index_slots.end()) {
        f.dense_slots_.push_back(f.row_width_ + s);
      }
    }
    f.row_width_ += c.width;
  }
  int dense_inputs = 0;
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    const auto& n = spec.nodes[i];
    const std::string where = "node '" + n.name + "' (nodes[" + std::to_string(i) + "])";
    if (n.op == GraphOp::kInput && n.source == InputSource::kDense) {
      if (++dense_inputs > 1) {
        return Unsupported(where +
                           ": a graph takes one dense input (the normalized numeric values)");
      }
      if (n.width != f.dense_width()) {
        return InvalidArgument(where + ": the dense input has width " + std::to_string(n.width) +
                               " but the normalized data holds " + std::to_string(f.dense_width()) +
                               " numeric values");
      }
      continue;
    }
    if (n.op != GraphOp::kInput) continue;
    auto it = std::find_if(columns.begin(), columns.end(),
                           [&](const FeedColumn& c) { return c.name == n.column; });
    if (it == columns.end()) {
      return InvalidArgument(where + ": column '" + n.column +
                             "' is not an input column (finalSelect) of the model");
    }
    if (it->id_column < 0) {
      return InvalidArgument(where + ": column '" + n.column +
                             "' has no id column; use a categorical column with an *_INDEX "
                             "normalize.normType (e.g. ZSCALE_INDEX) or a hashSeed, rerun 'tarn "
                             "norm' and retrain (a model trained before graph models read the id "
                             "columns must be retrained too)");
    }
    f.id_columns_.push_back(it->id_column);
    // Every embedding reading this input must hold the column's ids.
    for (size_t j = i + 1; j < spec.nodes.size(); ++j) {
      const auto& e = spec.nodes[j];
      if (e.op != GraphOp::kEmbedding || e.inputs.empty() || e.inputs[0] != n.name) continue;
      if (static_cast<int64_t>(e.vocabulary) < static_cast<int64_t>(it->vocabulary)) {
        return InvalidArgument("node '" + e.name + "' (nodes[" + std::to_string(j) +
                               "]): vocabulary " + std::to_string(e.vocabulary) +
                               " is smaller than the " + std::to_string(it->vocabulary) +
                               " ids of column '" + n.column + "' (its ids and the missing id)");
      }
    }
  }
  if (dense_inputs == 0) f.dense_slots_.clear();  // the graph reads ids only
  return f;
}

void GraphFeed::Gather(const float* row, const uint32_t* row_ids, int i, float* dense,
                       int64_t* const* ids) const {
  float* d = dense + static_cast<size_t>(i) * dense_slots_.size();
  for (size_t k = 0; k < dense_slots_.size(); ++k) d[k] = row[dense_slots_[k]];
  for (size_t k = 0; k < id_columns_.size(); ++k) ids[k][i] = row_ids[id_columns_[k]];
}

}  // namespace tarn::model
