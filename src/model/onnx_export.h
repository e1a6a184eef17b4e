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
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/model_spec.h"

namespace tarn::model {

inline constexpr int kOnnxIrVersion = 8;
inline constexpr int kOnnxOpsetVersion = 13;
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

}  // namespace tarn::model
