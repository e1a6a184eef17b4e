// Graph: forward and backward passes of a GraphSpec on mini-batches.
//
// Parameters come in three parts (layouts in graph_spec.h):
//   dense   one flat float vector (dense, cross and batch-norm parameters), the
//           part an optimizer steps as today's MLP parameters;
//   tables  one row-major table per embedding node (rows x dim), kept apart
//           so that a parameter server can shard them by row;
//   state   batch norm's moving mean and variance: saved with the model, not
//           trained by gradients (UpdateState moves them).
// The backward pass adds the dense gradient to a caller's vector and leaves,
// per table, a SPARSE gradient in the workspace: the rows the batch touched,
// ascending, and their gradient rows. No table-sized gradient exists.
//
// Inside a pass every node's values are feature-major (value[unit * nb + row],
// nb = the batch rounded up to kernels::kBatchAlign), so dense nodes run on the
// fused kernels of kernels.h and the other ops are loops along the batch.
// Nothing allocates per call once the workspace exists. A Graph is immutable
// and may be shared by threads, each with its own workspace; a call's result
// depends only on its inputs, never on the threads around it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/graph_spec.h"
#include "model/network.h"
#include "model/row_slots.h"

namespace tarn::model {

// Per row, the inputs of the graph's input nodes: plain pointers.
struct GraphInputs {
  int rows = 0;
  // One per input node of source dense, in node order: rows x width floats, row-major.
  std::span<const float* const> dense;
  // One per input node of source ids, in node order: rows ids. An embedding
  // takes ids in [0, vocabulary); a hashed embedding any id >= 0.
  std::span<const int64_t* const> ids;
  // Empty, or one per table (TableShapes() order): each row's row in
  // GraphParams::tables, already resolved from the ids (TableRows) and
  // remapped by the caller, e.g. into a compact table of the rows a batch
  // touches. The tables' sparse gradients then name these rows too.
  std::span<const int64_t* const> table_rows;
};

struct GraphParams {
  const float* dense = nullptr;          // GraphSpec::DenseParameterCount() floats
  std::span<const float* const> tables;  // one per table, GraphSpec::TableShapes() order
  const float* state = nullptr;          // GraphSpec::StateCount() floats
};

// The gradient of one table from one ForwardBackward: rows[k] (ascending,
// each once) has the gradient row grads[k * dim .. k * dim + dim).
struct SparseRows {
  int dim = 0;
  size_t count = 0;
  std::vector<int64_t> rows;  // capacity: the workspace's max batch; the first count are valid
  std::vector<float> grads;
  const float* grad(size_t k) const { return grads.data() + k * static_cast<size_t>(dim); }
};

// Per-thread scratch for one Graph (its fields are the engine's; read only
// `table_gradients`).
struct GraphWorkspace {
  const void* graph = nullptr;  // the Graph that made it
  int max_batch = 0;            // a multiple of kernels::kBatchAlign
  std::vector<AlignedFloats> value, grad, dact, dz, aux, aux2;  // per node
  std::vector<std::vector<int64_t>> ids;                        // per ids input
  std::vector<std::vector<int64_t>> table_rows;                 // per table: row of each batch row
  std::vector<SparseRows> table_gradients;                      // per table
  // TableGradient's scratch, shared by the tables: the touched rows, each
  // batch row's slot among them and each slot's rank.
  RowSlots slots;
  std::vector<uint32_t> row_slot, slot_rank;
  AlignedFloats y, w, ones, zeros, sink;
  bool has_batch_statistics = false;
};

class Graph {
 public:
  explicit Graph(GraphSpec spec);  // the spec must Validate()

  const GraphSpec& spec() const { return spec_; }
  const std::vector<GraphNodeLayout>& layout() const { return layout_; }
  size_t DenseParameterCount() const { return dense_count_; }
  size_t StateCount() const { return state_count_; }
  const std::vector<EmbeddingTableShape>& tables() const { return tables_; }
  // Node indexes of the dense inputs and of the ids inputs, in the order GraphInputs takes them.
  const std::vector<size_t>& dense_inputs() const { return dense_inputs_; }
  const std::vector<size_t>& id_inputs() const { return id_inputs_; }

  // Deterministic in the seed, node by node (a node's draws depend on the
  // seed and its index only): dense and cross weights from the spec's
  // initializer (dense: fan_in = input width, fan_out = units; cross: fan_in
  // = width, fan_out = 1), biases 0, gamma 1, beta 0; table entries U(+-0.05).
  // Empty `tables` leaves the tables alone (lazy tables initialise their rows).
  void InitParameters(float* dense, std::span<float* const> tables, uint64_t seed) const;

  // Per table, the table row of each of the inputs' rows (hashed embeddings
  // hash their ids): rows[t][0 .. in.rows). Errors: ids out of range, naming
  // the node, the row and the id.
  Status TableRows(const GraphInputs& in, std::span<int64_t* const> rows) const;
  // Moving means 0 and variances 1, as Keras starts them.
  void InitState(float* state) const;

  std::unique_ptr<GraphWorkspace> MakeWorkspace(int max_batch) const;

  // Inference: batch norm on its moving statistics, no dropout. Any batch
  // size (rows are taken in blocks of the workspace's max batch). out: one
  // score per row (the output node's value).
  Status Predict(const GraphParams& params, const GraphInputs& in, float* out,
                 GraphWorkspace* ws) const;

  // Training pass over one mini-batch of at most the workspace's max batch
  // rows (batch norm needs the whole batch at once): adds the gradient of
  // sum_i w_i * loss(p_i, y_i) w.r.t. the dense parameters to grad, leaves the
  // tables' sparse gradients in ws->table_gradients (replacing the previous
  // call's) and returns that weighted loss sum. w may be null (all 1).
  // dropout_seed != 0 applies dropout; a mask depends only on (seed, node
  // index, row, unit), the row counted from `first_row` (a slice of a batch
  // passes its first row's place in the batch, so that its masks are the
  // batch's). With `predictions`, writes this pass's predictions.
  // Errors: input counts, null pointers, a workspace of another graph, ids
  // out of range (naming the node, the row and the id).
  Result<double> ForwardBackward(const GraphParams& params, const GraphInputs& in, const float* y,
                                 const float* w, float* grad, GraphWorkspace* ws,
                                 uint64_t dropout_seed, float* predictions = nullptr,
                                 int first_row = 0) const;

  // After a ForwardBackward, moves each batch norm's moving statistics toward
  // that batch's: moving = momentum * moving + (1 - momentum) * batch (the
  // batch variance is the biased one, as Keras' non-fused layer).
  void UpdateState(const GraphWorkspace& ws, float* state) const;

  // Model FLOPs per row of a forward pass (2 per multiply-add; gathers and
  // elementwise ops count 1 per output float), for throughput reports.
  double ForwardFlopsPerRow() const;

 private:
  Status CheckInputs(const GraphParams& params, const GraphInputs& in,
                     const GraphWorkspace* ws) const;
  // Loads rows [start, start + n) of the inputs into the workspace.
  Status LoadBlock(const GraphInputs& in, int start, int n, int nb, GraphWorkspace* ws) const;
  // rows_of_table[t][b] from ids_of_input[slot][b], b < n (start: the first row's index, for
  // errors).
  template <typename Ids, typename Rows>
  Status ResolveRows(const Ids& ids_of_input, int start, int n, Rows& rows_of_table) const;
  void Forward(const GraphParams& params, int start, int n, int nb, bool train,
               uint64_t dropout_seed, GraphWorkspace* ws) const;
  void Backward(const GraphParams& params, int n, int nb, float* grad, uint64_t dropout_seed,
                GraphWorkspace* ws) const;
  void TableGradient(size_t node, int n, int nb, GraphWorkspace* ws) const;

  GraphSpec spec_;
  std::vector<GraphNodeLayout> layout_;
  std::vector<std::vector<size_t>> inputs_;  // per node: input node indexes
  std::vector<bool> needs_grad_;             // the node or a node before it has parameters
  std::vector<int> input_slot_;              // input nodes: index into GraphInputs' span
  std::vector<size_t> dense_inputs_, id_inputs_;
  std::vector<EmbeddingTableShape> tables_;
  size_t dense_count_ = 0;
  size_t state_count_ = 0;
};

}  // namespace tarn::model
