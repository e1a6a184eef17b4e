// GraphSpec: a model as a graph of layers (WDL, DeepFM, DCN, Keras graphs),
// trained by the graph engine (graph.h). The dense MLP keeps ModelSpec.
//
// Nodes are listed in topological order (every input of a node is listed
// before it); each has a unique name, an op and its inputs by name. The last
// node is the one output: width 1, the score the loss compares with the
// target. Every other node feeds some later node.
//
// Ops and their fields (JSON names; the formulas are in docs/TRAINING.md):
//   input            source "dense" with width (a normalized numeric vector), or
//                    source "ids" with column (one integer id per row)
//   embedding        1 ids input; vocabulary rows of units floats; ids in [0, vocabulary)
//   hashed_embedding 1 ids input; buckets rows of units floats; row = HashedBucket(id)
//   dense            1 input; units, activation (default linear), use_bias (default true);
//                    shares: an earlier dense node whose W and b this node uses (a Keras
//                    layer called twice), of the same units, use_bias and input width
//   concatenate      2+ inputs, widths add up
//   add, multiply    2+ inputs of equal width, elementwise
//   dot              2 inputs of equal width; their inner product (width 1)
//   fm               2+ inputs of equal width (embeddings); second-order FM term (width 1)
//   cross            1 input; layers cross layers (DCN), width kept
//   dropout          1 input; rate in [0, 1), inverted dropout while training
//   batch_norm       1 input; momentum (0.99), epsilon (0.001) as Keras
//   activation       1 input; activation (required)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/model_spec.h"

namespace tarn::model {

enum class GraphOp {
  kInput,
  kEmbedding,
  kHashedEmbedding,
  kDense,
  kConcatenate,
  kAdd,
  kMultiply,
  kDot,
  kFm,
  kCross,
  kDropout,
  kBatchNorm,
  kActivation,
};
Result<GraphOp> ParseGraphOp(std::string_view name);  // the JSON names above
const char* GraphOpName(GraphOp op);

enum class InputSource { kDense, kIds };

// The table row of a hashed embedding for a non-negative id: SplitMix64's
// finalizer (MixSeed in training_data.h) of the id's 64 bits, modulo buckets.
// Stable forever: models trained today must read the same rows tomorrow.
uint64_t HashedBucket(int64_t id, int64_t buckets);

struct GraphNode {
  std::string name;
  GraphOp op = GraphOp::kDense;
  std::vector<std::string> inputs;  // node names
  // input
  InputSource source = InputSource::kDense;
  int width = 0;       // source dense
  std::string column;  // source ids: the categorical column feeding it
  // embedding (vocabulary) / hashed_embedding (buckets): table rows
  int64_t vocabulary = 0;
  int64_t buckets = 0;
  // embedding, hashed_embedding: the vector dimension; dense: its outputs
  int units = 0;
  // dense (default linear), activation (required)
  Activation activation = Activation::kLinear;
  bool use_bias = true;    // dense
  std::string shares;      // dense: the node whose parameters it uses; empty: its own
  int layers = 0;          // cross
  float rate = 0;          // dropout
  float momentum = 0.99f;  // batch_norm: moving = momentum * moving + (1 - momentum) * batch
  float epsilon = 0.001f;  // batch_norm: added to the variance

  bool operator==(const GraphNode&) const = default;
};

// Where a node's parameters live.
struct GraphNodeLayout {
  int width = 0;            // output floats per row (ids inputs: 1 id)
  size_t param_offset = 0;  // into the dense parameter vector
  size_t param_count = 0;   // a sharing node's are its owner's block
  int owner = -1;           // a node that shares: the index of the node owning its parameters
  int table = -1;           // embedding nodes: index of their table
  size_t state_offset = 0;  // batch_norm: moving mean (width) then moving variance (width)
  size_t state_count = 0;
};

struct EmbeddingTableShape {
  std::string node;
  int64_t rows = 0;
  int dim = 0;
  bool operator==(const EmbeddingTableShape&) const = default;
};

struct GraphSpec {
  std::vector<GraphNode> nodes;
  LossKind loss = LossKind::kLog;
  // Dense and cross weights (biases start at 0). Embedding tables always start
  // U(+-0.05), Keras' default for Embedding.
  Initializer initializer = Initializer::kXavier;

  bool operator==(const GraphSpec&) const = default;

  // Names unique and non-empty; inputs defined earlier, of the count and kind
  // each op takes; widths chain; fields in range; one output (the last node,
  // width 1, every other node used). Errors name the node and the field:
  // "node 'emb_a' (nodes[2]): vocabulary must be a positive integer, got 0".
  Status Validate() const;

  // For a spec that Validate()s. Dense parameters, node by node in order:
  //   dense       W (units x input width, row-major), then b (units) if use_bias;
  //               none for a node that shares another's
  //   cross       per cross layer l: w_l (width), then b_l (width)
  //   batch_norm  gamma (width), then beta (width)
  // Tables: one per embedding / hashed_embedding node, in node order,
  // row-major rows x dim. State: per batch_norm node, in node order, moving
  // mean (width) then moving variance (width).
  std::vector<GraphNodeLayout> Layout() const;
  size_t DenseParameterCount() const;
  std::vector<EmbeddingTableShape> TableShapes() const;
  size_t StateCount() const;
  // Dense + every table's rows x dim.
  size_t ParameterCount() const;
  // True for dense parameters that regularization skips: biases (dense b,
  // cross b_l) and batch norm's gamma and beta.
  std::vector<bool> UnregularizedMask() const;

  // {"loss":"log","initializer":"xavier","nodes":[{"name":"x","op":"input",
  //  "source":"dense","width":4},...]}; a node lists only its op's fields.
  Json ToJson() const;
  // Refuses unknown fields and fields another op takes; then Validate().
  static Result<GraphSpec> FromJson(const Json& j, const std::string& where);
};

}  // namespace tarn::model
