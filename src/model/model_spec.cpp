#include "model/model_spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "common/strings.h"

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

std::string ParamKey(const char* key) { return std::string("train.params.") + key; }

Status ParamError(const char* key, const std::string& expected, const Json& got) {
  return InvalidArgument(ParamKey(key) + " must be " + expected + ", got " + got.dump());
}

// A string (or a one-element list of strings) under `key`; `*found` false when absent.
Status GetParamString(const Json& params, const char* key, std::string* out, bool* found) {
  *found = false;
  const Json* j = data::JsonFind(params, key);
  if (!j) return Status::Ok();
  if (j->is_string()) {
    *out = j->get<std::string>();
  } else if (j->is_array() && j->size() == 1 && (*j)[0].is_string()) {
    *out = (*j)[0].get<std::string>();
  } else {
    return ParamError(key, "a string", *j);
  }
  *found = true;
  return Status::Ok();
}

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

Result<ModelSpec> ModelSpec::FromTrainParams(const Json& params, const std::string& algorithm,
                                             int input_count) {
  if (!params.is_null() && !params.is_object()) {
    return InvalidArgument("train.params must be an object, got " + params.dump());
  }
  std::string alg = ToLower(algorithm);
  if (alg != "nn" && alg != "lr" && alg != "tensorflow") {
    return Unsupported("train.algorithm " + algorithm +
                       " is not a neural network (expected NN, LR or TensorFlow)");
  }
  ModelSpec spec;
  spec.input_count = input_count;
  const bool is_lr = alg == "lr";

  // Loss.
  std::string loss_name;
  bool found = false;
  const char* loss_key = "Loss";
  TARN_RETURN_IF_ERROR(GetParamString(params, "Loss", &loss_name, &found));
  if (!found && alg == "tensorflow") {
    loss_key = "TF.loss";
    TARN_RETURN_IF_ERROR(GetParamString(params, "TF.loss", &loss_name, &found));
  }
  if (found) {
    auto r = ParseLoss(loss_name);
    if (!r.ok()) return r.status().WithContext(ParamKey(loss_key));
    spec.loss = *r;
  }

  // Initializer.
  std::string init_name;
  TARN_RETURN_IF_ERROR(GetParamString(params, "WeightInitializer", &init_name, &found));
  if (found && !init_name.empty()) {
    auto r = ParseInitializer(init_name);
    if (!r.ok()) return r.status().WithContext(ParamKey("WeightInitializer"));
    spec.initializer = *r;
  }

  // Dropout.
  double dropout = 0;
  if (const Json* j = data::JsonFind(params, "DropoutRate")) {
    if (!data::JsonAsDouble(*j, &dropout) || dropout < 0 || dropout >= 1) {
      return ParamError("DropoutRate", "a number in [0, 1)", *j);
    }
  }

  // Output activation.
  Activation output_act = Activation::kSigmoid;
  std::string out_name;
  TARN_RETURN_IF_ERROR(GetParamString(params, "OutputActivationFunc", &out_name, &found));
  if (found) {
    auto r = ParseActivation(out_name);
    if (!r.ok()) return r.status().WithContext(ParamKey("OutputActivationFunc"));
    output_act = *r;
  }

  int hidden_layers = 0;
  std::vector<int> hidden_nodes;
  std::vector<Activation> hidden_acts;
  if (!is_lr) {
    hidden_layers = 1;
    if (const Json* j = data::JsonFind(params, "NumHiddenLayers")) {
      if (!data::JsonAsInt(*j, &hidden_layers) || hidden_layers < 0) {
        return ParamError("NumHiddenLayers", "a non-negative integer", *j);
      }
    }
    const Json* nodes = data::JsonFind(params, "NumHiddenNodes");
    if (hidden_layers > 0) {
      auto nodes_error = [&](const Json& got) {
        return InvalidArgument(ParamKey("NumHiddenNodes") + " must list NumHiddenLayers (" +
                               std::to_string(hidden_layers) + ") positive integers, got " +
                               got.dump());
      };
      if (!nodes) {
        return InvalidArgument(ParamKey("NumHiddenNodes") + " must list NumHiddenLayers (" +
                               std::to_string(hidden_layers) +
                               ") positive integers, but it is missing");
      }
      Json list = nodes->is_array() ? *nodes : Json::array({*nodes});
      if (list.size() != static_cast<size_t>(hidden_layers)) return nodes_error(*nodes);
      for (const auto& e : list) {
        int n = 0;
        if (!data::JsonAsInt(e, &n) || n <= 0) return nodes_error(*nodes);
        hidden_nodes.push_back(n);
      }
      const Json* acts = data::JsonFind(params, "ActivationFunc");
      std::vector<std::string> names;
      if (!acts) {
        names.assign(1, "tanh");
      } else if (acts->is_string()) {
        names.assign(1, acts->get<std::string>());
      } else if (acts->is_array()) {
        for (const auto& e : *acts) {
          if (!e.is_string()) {
            return ParamError("ActivationFunc", "a list of activation names", *acts);
          }
          names.push_back(e.get<std::string>());
        }
      } else {
        return ParamError("ActivationFunc", "a list of activation names", *acts);
      }
      if (names.size() != 1 && names.size() != static_cast<size_t>(hidden_layers)) {
        return InvalidArgument(
            ParamKey("ActivationFunc") + " must list one activation or NumHiddenLayers (" +
            std::to_string(hidden_layers) + ") activations, got " + acts->dump());
      }
      for (int i = 0; i < hidden_layers; ++i) {
        const std::string& name = names[names.size() == 1 ? 0 : static_cast<size_t>(i)];
        auto r = ParseActivation(name);
        if (!r.ok()) return r.status().WithContext(ParamKey("ActivationFunc"));
        hidden_acts.push_back(*r);
      }
    }
  }

  int in = input_count;
  for (int i = 0; i < hidden_layers; ++i) {
    LayerSpec l;
    l.inputs = in;
    l.outputs = hidden_nodes[static_cast<size_t>(i)];
    l.activation = hidden_acts[static_cast<size_t>(i)];
    l.dropout = static_cast<float>(dropout);
    spec.layers.push_back(l);
    in = l.outputs;
  }
  LayerSpec out;
  out.inputs = in;
  out.outputs = 1;
  out.activation = output_act;
  spec.layers.push_back(out);
  if (hidden_layers > 0) spec.input_dropout = static_cast<float>(0.4 * dropout);

  Status st = spec.Validate();
  if (!st.ok()) return st.WithContext("train.params");
  return spec;
}

}  // namespace tarn::model
