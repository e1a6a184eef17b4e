#include "model/model_spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "common/strings.h"
#include "model/train_params.h"

namespace tarn::model {
namespace {

template <typename E>
struct NameEntry {
  const char* name;
  E value;
};

template <typename E, size_t N>
Result<E> Lookup(std::string_view name, const NameEntry<E> (&table)[N], const char* what) {
  std::string lower = ToLower(name);
  for (const auto& e : table) {
    if (lower == e.name) return e.value;
  }
  std::string valid;
  for (const auto& e : table) {
    if (!valid.empty()) valid += ", ";
    valid += e.name;
  }
  return InvalidArgument("unknown " + std::string(what) + " '" + std::string(name) +
                         "' (valid: " + valid + ")");
}

constexpr NameEntry<Activation> kActivations[] = {
    {"tanh", Activation::kTanh},
    {"sigmoid", Activation::kSigmoid},
    {"relu", Activation::kRelu},
    {"leakyrelu", Activation::kLeakyRelu},
    {"leaky_relu", Activation::kLeakyRelu},
    {"swish", Activation::kSwish},
    {"linear", Activation::kLinear},
    {"identity", Activation::kLinear},
};

constexpr NameEntry<LossKind> kLosses[] = {
    {"log", LossKind::kLog},           {"entropy", LossKind::kLog},
    {"cross_entropy", LossKind::kLog}, {"binary_crossentropy", LossKind::kLog},
    {"squared", LossKind::kSquared},   {"mse", LossKind::kSquared},
    {"absolute", LossKind::kAbsolute}, {"mae", LossKind::kAbsolute},
};

constexpr NameEntry<Initializer> kInitializers[] = {
    {"xavier", Initializer::kXavier},   {"glorot", Initializer::kXavier},
    {"default", Initializer::kXavier},  {"he", Initializer::kHe},
    {"lecun", Initializer::kLecun},     {"gaussian", Initializer::kGaussian},
    {"normal", Initializer::kGaussian}, {"uniform", Initializer::kUniform},
};

}  // namespace

Result<Activation> ParseActivation(std::string_view name) {
  return Lookup(name, kActivations, "activation");
}

const char* ActivationName(Activation a) {
  switch (a) {
    case Activation::kLinear:
      return "linear";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kTanh:
      return "tanh";
    case Activation::kRelu:
      return "relu";
    case Activation::kLeakyRelu:
      return "leakyrelu";
    case Activation::kSwish:
      return "swish";
  }
  return "?";
}

Result<LossKind> ParseLoss(std::string_view name) { return Lookup(name, kLosses, "loss"); }

const char* LossName(LossKind k) {
  switch (k) {
    case LossKind::kLog:
      return "log";
    case LossKind::kSquared:
      return "squared";
    case LossKind::kAbsolute:
      return "absolute";
  }
  return "?";
}

Result<Initializer> ParseInitializer(std::string_view name) {
  return Lookup(name, kInitializers, "weight initializer");
}

const char* InitializerName(Initializer i) {
  switch (i) {
    case Initializer::kXavier:
      return "xavier";
    case Initializer::kHe:
      return "he";
    case Initializer::kGaussian:
      return "gaussian";
    case Initializer::kUniform:
      return "uniform";
    case Initializer::kLecun:
      return "lecun";
  }
  return "?";
}

size_t ModelSpec::ParameterCount() const {
  size_t n = 0;
  for (const auto& l : layers) {
    n += static_cast<size_t>(l.outputs) * static_cast<size_t>(l.inputs) +
         static_cast<size_t>(l.outputs);
  }
  return n;
}

size_t ModelSpec::WeightOffset(size_t layer) const {
  size_t n = 0;
  for (size_t i = 0; i < layer && i < layers.size(); ++i) {
    n += static_cast<size_t>(layers[i].outputs) * static_cast<size_t>(layers[i].inputs) +
         static_cast<size_t>(layers[i].outputs);
  }
  return n;
}

size_t ModelSpec::BiasOffset(size_t layer) const {
  return WeightOffset(layer) +
         static_cast<size_t>(layers[layer].outputs) * static_cast<size_t>(layers[layer].inputs);
}

std::vector<bool> ModelSpec::BiasMask() const {
  std::vector<bool> mask(ParameterCount(), false);
  for (size_t l = 0; l < layers.size(); ++l) {
    size_t b = BiasOffset(l);
    for (int i = 0; i < layers[l].outputs; ++i) mask[b + static_cast<size_t>(i)] = true;
  }
  return mask;
}

Status ModelSpec::Validate() const {
  if (input_count <= 0) {
    return InvalidArgument("the network needs at least one input, got " +
                           std::to_string(input_count));
  }
  if (layers.empty()) return InvalidArgument("the network has no layers");
  if (!(input_dropout >= 0 && input_dropout < 1)) {
    return InvalidArgument("input dropout must lie in [0, 1), got " +
                           std::to_string(input_dropout));
  }
  int expected_inputs = input_count;
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerSpec& l = layers[i];
    std::string name = "layer " + std::to_string(i);
    if (l.inputs != expected_inputs) {
      return InvalidArgument(name + " has " + std::to_string(l.inputs) + " inputs, expected " +
                             std::to_string(expected_inputs));
    }
    if (l.outputs <= 0) {
      return InvalidArgument(name + " must have at least one output, got " +
                             std::to_string(l.outputs));
    }
    if (!(l.dropout >= 0 && l.dropout < 1)) {
      return InvalidArgument(name + " dropout must lie in [0, 1), got " +
                             std::to_string(l.dropout));
    }
    expected_inputs = l.outputs;
  }
  if (layers.back().outputs != 1) {
    return InvalidArgument("the output layer must have 1 output, got " +
                           std::to_string(layers.back().outputs));
  }
  if (layers.back().dropout != 0) {
    return InvalidArgument("the output layer cannot have dropout");
  }
  return Status::Ok();
}

Status ModelSpec::ValidateParameters(const std::vector<float>& params,
                                     const std::string& what) const {
  TARN_RETURN_IF_ERROR(Validate());
  if (params.size() != ParameterCount()) {
    return InvalidArgument(what + ": the model has " + std::to_string(params.size()) +
                           " parameters, its spec needs " + std::to_string(ParameterCount()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (!std::isfinite(params[i])) {
      return InvalidArgument(what + ": parameter " + std::to_string(i) +
                             " is not finite (the training diverged)");
    }
  }
  return Status::Ok();
}

Json ModelSpec::ToJson() const {
  Json j = Json::object();
  j["inputCount"] = input_count;
  j["loss"] = LossName(loss);
  j["initializer"] = InitializerName(initializer);
  j["inputDropout"] = input_dropout;
  Json ls = Json::array();
  for (const auto& l : layers) {
    Json o = Json::object();
    o["inputs"] = l.inputs;
    o["outputs"] = l.outputs;
    o["activation"] = ActivationName(l.activation);
    o["dropout"] = l.dropout;
    ls.push_back(std::move(o));
  }
  j["layers"] = std::move(ls);
  return j;
}

Result<ModelSpec> ModelSpec::FromJson(const Json& j, const std::string& where) {
  auto err = [&](const std::string& key, const std::string& expected, const Json* got) {
    return InvalidArgument(where + ": " + key + " must be " + expected +
                           (got ? ", got " + got->dump() : std::string(", but it is missing")));
  };
  if (!j.is_object()) return err("the model spec", "an object", &j);
  ModelSpec spec;
  const Json* v = data::JsonFind(j, "inputCount");
  if (!v || !data::JsonAsInt(*v, &spec.input_count)) return err("inputCount", "an integer", v);
  if ((v = data::JsonFind(j, "loss"))) {
    if (!v->is_string()) return err("loss", "a string", v);
    auto r = ParseLoss(v->get<std::string>());
    if (!r.ok()) return r.status().WithContext(where + ": loss");
    spec.loss = *r;
  }
  if ((v = data::JsonFind(j, "initializer"))) {
    if (!v->is_string()) return err("initializer", "a string", v);
    auto r = ParseInitializer(v->get<std::string>());
    if (!r.ok()) return r.status().WithContext(where + ": initializer");
    spec.initializer = *r;
  }
  if ((v = data::JsonFind(j, "inputDropout"))) {
    double d = 0;
    if (!data::JsonAsDouble(*v, &d)) return err("inputDropout", "a number", v);
    spec.input_dropout = static_cast<float>(d);
  }
  v = data::JsonFind(j, "layers");
  if (!v || !v->is_array()) return err("layers", "a list of layer objects", v);
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& lj = (*v)[i];
    std::string prefix = "layers[" + std::to_string(i) + "].";
    if (!lj.is_object()) return err("layers[" + std::to_string(i) + "]", "an object", &lj);
    LayerSpec l;
    const Json* f = data::JsonFind(lj, "inputs");
    if (!f || !data::JsonAsInt(*f, &l.inputs)) return err(prefix + "inputs", "an integer", f);
    f = data::JsonFind(lj, "outputs");
    if (!f || !data::JsonAsInt(*f, &l.outputs)) return err(prefix + "outputs", "an integer", f);
    f = data::JsonFind(lj, "activation");
    if (!f || !f->is_string()) return err(prefix + "activation", "a string", f);
    auto act = ParseActivation(f->get<std::string>());
    if (!act.ok()) return act.status().WithContext(where + ": " + prefix + "activation");
    l.activation = *act;
    if ((f = data::JsonFind(lj, "dropout"))) {
      double d = 0;
      if (!data::JsonAsDouble(*f, &d)) return err(prefix + "dropout", "a number", f);
      l.dropout = static_cast<float>(d);
    }
    spec.layers.push_back(l);
  }
  Status st = spec.Validate();
  if (!st.ok()) return st.WithContext(where);
  return spec;
}

Result<ModelSpec> ModelSpec::FromTrainParams(const TrainParams& params, int input_count) {
  ModelSpec spec;
  spec.input_count = input_count;
  spec.loss = params.TrainingLoss();
  spec.initializer = params.weight_initializer;
  const float dropout = static_cast<float>(params.dropout_rate);
  int in = input_count;
  for (size_t i = 0; i < params.hidden_nodes.size(); ++i) {
    LayerSpec l;
    l.inputs = in;
    l.outputs = params.hidden_nodes[i];
    l.activation = params.hidden_activations[i];
    l.dropout = dropout;
    spec.layers.push_back(l);
    in = l.outputs;
  }
  LayerSpec out;
  out.inputs = in;
  out.outputs = 1;
  out.activation = params.output_activation;
  spec.layers.push_back(out);
  if (!params.hidden_nodes.empty())
    spec.input_dropout = static_cast<float>(0.4 * params.dropout_rate);

  Status st = spec.Validate();
  if (!st.ok()) return st.WithContext("train.params");
  return spec;
}

}  // namespace tarn::model
