// ONNX export of a trained network (`tarn export -t onnx`). The model is
// serialized with a small protobuf wire encoder of our own (no protobuf
// library); field numbers follow onnx/onnx.proto.
//
// The graph, ir_version 8, default-domain opset 13:
//   input  "input"  float [N, input_count]   (N symbolic: any batch size)
//   per layer l:  h = Gemm(x, W{l}, b{l}, transB=1)   W{l}: [outputs, inputs]
//                 then the activation: Tanh, Sigmoid, Relu,
//                 LeakyRelu(alpha = kLeakyReluSlope), swish as Mul(h, Sigmoid(h)),
//                 nothing for linear
//   output "score"  float [N, 1]   (the raw network output, 0..1 for a sigmoid
//                                   output layer; eval prints it x 1000)
// The inputs are the normalized values, exactly the vector the network saw in
// training (see the .onnx.json sidecar `tarn export` writes beside the model).
//
// A graph model (graph_spec.h: WDL, DeepFM, DCN, Keras graphs) exports the
// same way, ir_version 8, opset 13 (18 when it has a hashed embedding, for
// BitwiseXor on uint64):
//   input  "input"   float [N, width]  the normalized vector as above, when the
//                    graph has a dense input; a Gather on axis 1 picks the
//                    slots the graph reads (not the category-index slots)
//   input  <column>  int64 [N]  per id column an ids input reads, its ids; an
//                    id outside [0, vocabulary) of its column is read as the
//                    column's missing id (GreaterOrEqual, Less, And, Where),
//                    as tarn eval and tarn serve read an unknown category;
//                    a column without one (Keras' Hashing bins) turns the
//                    row's score to NaN instead, so that Gather never reads a
//                    negative id from the end of a table
//   per node: input ids -> the column's input; embedding -> Gather(table, ids);
//     hashed_embedding -> Cast to uint64, HashedBucket's MixSeed in Add,
//     BitShift, BitwiseXor and Mul (wrapping uint64), Mod buckets, Cast to
//     int64, Gather; dense -> Gemm(x, W, b, transB=1) and the activation as
//     above; concatenate -> Concat(axis 1); add, multiply -> Add, Mul chained
//     left to right; dot -> Mul, ReduceSum(axis 1); fm -> the engine's
//     0.5 * sum_d ((sum_k v_k)^2 - sum_k v_k^2) in Add, Mul, Sub, ReduceSum;
//     cross -> per layer MatMul(x_c, w_c), Mul(x_0, .), Add(b_c), Add(x_c);
//     dropout -> Identity; batch_norm -> BatchNormalization(epsilon) on the
//     moving statistics; activation -> as above (linear: Identity)
//   output "score"   float [N, 1]
// Values are named "node/<graph node name>", parameters "param/<name>/...".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/graph_spec.h"
#include "model/model_spec.h"

namespace tarn::model {

inline constexpr int kOnnxIrVersion = 8;
inline constexpr int kOnnxOpsetVersion = 13;
inline constexpr int kOnnxGraphHashOpsetVersion = 18;  // BitwiseXor
inline constexpr const char* kOnnxProducerName = "tarn";
inline constexpr const char* kOnnxProducerVersion = "0.1.0";  // the project VERSION
inline constexpr const char* kOnnxInputName = "input";
inline constexpr const char* kOnnxOutputName = "score";

// Serialized ONNX ModelProto bytes for `spec` with the flat `params` (the
// ModelSpec layout). `input_names` names each network input (a column that
// normalizes to k values repeats its name k times), or is empty; the names go
// to the model's doc_string and to the metadata key "tarn.inputNames" (a JSON
// array). `metadata` adds further metadata_props key/value pairs. Refuses an
// invalid spec, a parameter count that does not match it, non-finite
// parameters and a wrong number of input names.
Result<std::string> ExportOnnx(
    const ModelSpec& spec, const std::vector<float>& params,
    const std::vector<std::string>& input_names,
    const std::vector<std::pair<std::string, std::string>>& metadata = {});

// The ids an id column's rule gives: [0, vocabulary), the missing value's
// id among them, or none (every raw value hashes to a bin: Keras' Hashing).
struct OnnxIdRange {
  std::string column;
  int64_t vocabulary = 0;
  std::optional<int64_t> missing_id;
};

// What feeds a graph model's "input" and its int64 inputs.
struct GraphOnnxInputs {
  int input_width = 0;           // the normalized vector's width
  std::vector<int> dense_slots;  // the slots the graph's dense input reads, in order
  // Per normalized slot its column (a column of width k repeats k times), or empty.
  std::vector<std::string> input_names;
  // One per column an ids input reads.
  std::vector<OnnxIdRange> id_ranges;
};

// The opset a graph's export imports: kOnnxOpsetVersion, or
// kOnnxGraphHashOpsetVersion when the graph has a hashed embedding.
int GraphOnnxOpset(const GraphSpec& spec);

// Serialized ONNX ModelProto bytes for a graph model: `params` as the model
// file holds them (dense parameters, every table, the batch-norm state).
// Refuses an invalid spec, a parameter count that does not match it,
// non-finite parameters, a dense input the slots do not fit, an id column
// named "input" or "score" or without its id range, and, by node and op, an
// op without an exact ONNX form.
Result<std::string> ExportGraphOnnx(
    const GraphSpec& spec, const std::vector<float>& params, const GraphOnnxInputs& inputs,
    const std::vector<std::pair<std::string, std::string>>& metadata = {});

}  // namespace tarn::model
