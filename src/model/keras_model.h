// KerasModel: a model a user defined in Keras, read from the JSON of
// `model.to_json()` (Keras 3, and Keras 2 / tf.keras / tf_keras where it
// differs), Functional and Sequential. It is a plain description, with no
// Python at training time: the inputs, the layers in topological order with
// the config fields tarn honours (typed), their connections and each layer's
// output shape in Keras terms (batch dimension aside).
//
// Anything tarn cannot train exactly as Keras would is refused by the layer's
// name, its class and the JSON path of the field:
//   "model.json: config.layers[3] (Lambda 'fm'): Lambda layers hold Python code
//    and are not supported"
//
// A model used as a layer (a Functional or Sequential inside another) is
// inlined: its layers are named "<call>/<layer>" and take the values it is
// called on. A layer called more than once (a shared layer) is one layer per
// call: the first named as in Keras, call k "<name>#k"; a shared Dense's calls
// share one kernel and bias ("shares" names the call holding them); a shared
// Embedding or BatchNormalization is refused.
//
// Inputs: `shifu_input_0` (and a Sequential's only input) is the normalized
// numeric vector, shape (N,) float; any other input is the categorical
// column it is named after, shape (1,): int32/int64, its ids, which feed
// Embedding layers only; or string, its raw text, which feeds Hashing layers
// only (each with the same options), whose bins feed Embedding layers.
//
// KerasGraphWidths() is the 2-D view tarn's layer graph runs on: the width of
// every layer's output once tensors are (batch, width). In that view Flatten
// and Reshape change nothing (they pass their input's width on).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "data/keras_hash.h"
#include "model/model_spec.h"

namespace tarn::model {

// The shifu_input_0 name Shifu's Keras script gives the normalized vector.
inline constexpr const char* kKerasNumericInputName = "shifu_input_0";

enum class KerasLayerKind {
  kInput,
  kEmbedding,
  kDense,
  kConcatenate,
  kAdd,
  kMultiply,
  kDot,
  kFlatten,
  kReshape,
  kDropout,
  kBatchNormalization,
  kActivation,  // an Activation layer, a LeakyReLU of slope 0.01, a plain ReLU
  kHashing,     // Hashing(num_bins, salt, mask_value), output_mode "int"
};
const char* KerasLayerKindName(KerasLayerKind kind);  // "dense", "batch_normalization", ...

enum class KerasInputRole {
  kNumeric,       // the normalized numeric vector (shifu_input_0)
  kCategoryIds,   // one integer id per row of the categorical column `name`
  kCategoryText,  // the raw text of the categorical column `name`, for Hashing
};

// A kernel/embedding initializer as it maps onto tarn's Initializer. Keras'
// GlorotUniform is kXavier exactly, RandomUniform(-0.05, 0.05) is kUniform
// exactly, RandomNormal(0, 1) is kGaussian exactly; HeNormal and LecunNormal
// map to kHe and kLecun (Keras truncates them at two standard deviations,
// tarn does not). Seeds are not read: tarn seeds every initializer itself.
// Any other initializer, or other parameters, are refused.

// L1/L2 penalty factors of a Keras regularizer: the loss gains
// l1 * sum|w| + l2 * sum w^2 (tarn's RegularizedConstant r with L2 is Keras l2 = r / 2).
struct KerasRegularizer {
  float l1 = 0;
  float l2 = 0;
  bool operator==(const KerasRegularizer&) const = default;
};

struct KerasLayer {
  KerasLayerKind kind = KerasLayerKind::kInput;
  std::string class_name;           // as in the JSON ("Dense")
  std::string name;                 // the layer's unique name
  std::string path;                 // its JSON path ("config.layers[3]"), for later errors
  std::vector<std::string> inputs;  // inbound layer names, in call order
  std::vector<int> shape;           // output shape without the batch dimension
  // A layer with weights called more than once: the call whose weights this
  // one uses (only Dense layers may be shared). Empty: its own.
  std::string shares;

  // kInput
  KerasInputRole role = KerasInputRole::kNumeric;
  std::string dtype;  // "float32", "int32", ...
  // kDense: units; kEmbedding: input_dim rows of output_dim (units) values
  int units = 0;
  int input_dim = 0;
  bool use_bias = true;
  Activation activation = Activation::kLinear;     // kDense, kActivation
  Initializer initializer = Initializer::kXavier;  // kDense kernel, kEmbedding table
  KerasRegularizer regularizer;                    // kDense kernel, kEmbedding table
  // kConcatenate: the axis (Keras counting: 0 is the batch); kBatchNormalization too
  int axis = -1;
  int dot_axes[2] = {-1, -1};     // kDot (Keras counting, resolved to non-negative)
  std::vector<int> target_shape;  // kReshape, -1 resolved
  float rate = 0;                 // kDropout
  float momentum = 0.99f;         // kBatchNormalization
  float epsilon = 1e-3f;
  // kHashing; and a kCategoryText input: the options of the Hashing layers it feeds
  data::KerasHashing hashing;
};

struct KerasModel {
  std::string file;           // for messages
  std::string model_class;    // "Functional" or "Sequential" (Keras 2 "Model" reads as Functional)
  std::string name;           // the model's name
  std::string keras_version;  // "3.6.0", "2.15.0", or "" when absent
  int keras_major = 3;        // 2 when the JSON is Keras 2's
  std::vector<KerasLayer> layers;   // topological order; inputs first among equals
  std::vector<std::string> inputs;  // input layer names, in the model's input order
  std::string output;               // the one output layer

  const KerasLayer* Find(const std::string& name) const;
  // The string inputs (kCategoryText) with the Hashing each feeds: the
  // columns whose ids norm computes as Keras' Hashing layer does.
  std::vector<std::pair<std::string, data::KerasHashing>> HashedTextInputs() const;
  // {"file":..,"class":..,"kerasVersion":..,"inputs":[..],"output":..,
  //  "layers":[{"name","class","kind","inputs","shape","width",...config}]}
  // `widths` as KerasGraphWidths() gives them (one per layer) or empty.
  Json Describe(const std::vector<int>& widths) const;
};

// Reads the JSON text of model.to_json(); `file` names it in messages.
Result<KerasModel> ParseKerasModel(const Json& json, const std::string& file);
Result<KerasModel> ReadKerasModel(const std::string& path);

// The 2-D width each layer produces (same order as model.layers): a shape
// reduces to (batch, width) when at most one of its dimensions exceeds 1 (the
// (1, k) of an Embedding over a (1,) id input is width k). Refuses, by layer,
// shapes that do not reduce, a Dense or BatchNormalization whose input is not
// laid along its last axis, a Dot that does not contract the width, and an
// output whose width is not 1.
Result<std::vector<int>> KerasGraphWidths(const KerasModel& model);

}  // namespace tarn::model
