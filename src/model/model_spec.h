// ModelSpec: the one description of a dense feed-forward network, shared by
// the training engine (network.h), the model file and the exporters.
//
// A network is a stack of dense layers, y = act(W x + b), the last of which
// (the output layer) has one unit. Parameters live in one flat float vector:
// for each layer in order, W (outputs x inputs, row-major) then b (outputs).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "data/json_fields.h"

namespace tarn::model {

using Json = data::Json;
struct TrainParams;  // train_params.h

// Activation functions. Shifu spellings are accepted case-insensitively:
// "linear"/"identity", "sigmoid", "tanh", "relu", "leakyrelu"/"leaky_relu",
// "swish". LeakyReLU uses slope kLeakyReluSlope for negative inputs; swish is
// x * sigmoid(x).
enum class Activation { kLinear, kSigmoid, kTanh, kRelu, kLeakyRelu, kSwish };
inline constexpr float kLeakyReluSlope = 0.01f;
Result<Activation> ParseActivation(std::string_view name);
const char* ActivationName(Activation a);

// Loss of one prediction p against the target y (weighted by the row weight):
//   kLog:      -(y log p + (1 - y) log(1 - p)), p clamped to [1e-7, 1 - 1e-7]
//              for the value; with a sigmoid output the gradient w.r.t. the
//              pre-activation is exactly p - y.
//   kSquared:  (p - y)^2 / 2   (gradient p - y, as Encog/Shifu's error term)
//   kAbsolute: |p - y|         (gradient sign(p - y), 0 at p == y)
// Spellings: "log"/"entropy"/"cross_entropy"/"binary_crossentropy",
// "squared"/"mse", "absolute"/"mae".
enum class LossKind { kLog, kSquared, kAbsolute };
Result<LossKind> ParseLoss(std::string_view name);
const char* LossName(LossKind k);

// Weight initializers (biases always start at 0); fan_in = layer inputs,
// fan_out = layer outputs:
//   kXavier   ("xavier"/"glorot", also Shifu's "default"): U(+-sqrt(6 / (fan_in + fan_out)))
//   kHe       ("he"):       N(0, sqrt(2 / fan_in))
//   kLecun    ("lecun"):    N(0, sqrt(1 / fan_in))
//   kGaussian ("gaussian"/"normal"): N(0, 1), as Shifu's GaussianRandomizer(0, 1)
//   kUniform  ("uniform"):  U(+-0.05)
enum class Initializer { kXavier, kHe, kGaussian, kUniform, kLecun };
Result<Initializer> ParseInitializer(std::string_view name);
const char* InitializerName(Initializer i);

struct LayerSpec {
  int inputs = 0;
  int outputs = 0;
  Activation activation = Activation::kTanh;
  // Inverted dropout applied to this layer's outputs while training (hidden
  // layers only; must be 0 on the output layer).
  float dropout = 0;

  bool operator==(const LayerSpec&) const = default;
};

struct ModelSpec {
  int input_count = 0;
  std::vector<LayerSpec> layers;  // hidden layers, then the output layer (outputs = 1)
  LossKind loss = LossKind::kLog;
  Initializer initializer = Initializer::kXavier;
  // Inverted dropout on the network inputs while training. Shifu drops inputs
  // at 0.4 x DropoutRate (shifu.train.nn.inputlayerdropout.enable, on by default).
  float input_dropout = 0;

  bool operator==(const ModelSpec&) const = default;

  size_t ParameterCount() const;
  size_t WeightOffset(size_t layer) const;
  size_t BiasOffset(size_t layer) const;
  // True for flat parameter indexes that hold a bias (regularization skips them).
  std::vector<bool> BiasMask() const;

  // Checks that the layers chain (inputs of layer i+1 = outputs of layer i),
  // that sizes are positive, the output layer has 1 unit and no dropout, and
  // dropout rates lie in [0, 1).
  Status Validate() const;
  // Validate(), then that `params` has ParameterCount() finite values; errors
  // start with `what` ("ONNX export").
  Status ValidateParameters(const std::vector<float>& params, const std::string& what) const;

  // {"inputCount":16,"loss":"log","initializer":"xavier","inputDropout":0,
  //  "layers":[{"inputs":16,"outputs":50,"activation":"tanh","dropout":0},...]}
  Json ToJson() const;
  static Result<ModelSpec> FromJson(const Json& j, const std::string& where);

  // The network train#params describe (train_params.h reads and checks the
  // keys): NumHiddenNodes hidden layers with their ActivationFunc, the output
  // unit (OutputActivationFunc), the training loss, DropoutRate on the hidden
  // layers (inputs get 0.4 x the rate, as Shifu), WeightInitializer. Fails
  // only when the network itself is invalid (no inputs).
  static Result<ModelSpec> FromTrainParams(const TrainParams& params, int input_count);
};

}  // namespace tarn::model
