#include "model/keras_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <queue>
#include <set>

#include "common/files.h"
#include "common/strings.h"
#include "data/id_column.h"

namespace tarn::model {
namespace {

using data::JsonTypeName;

constexpr const char* kSupportedClasses =
    "InputLayer, Embedding, Dense, Concatenate, Add, Multiply, Dot, Flatten, Reshape, Dropout, "
    "BatchNormalization, Activation, LeakyReLU (slope 0.01), ReLU, Hashing";

// "(1, 8)" / "(8,)": a shape as Python prints it.
std::string ShapeText(const std::vector<int>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// Widths, dimensions and table sizes stay far below int's range, so that no
// product of them overflows.
constexpr int64_t kMaxSize = int64_t{1} << 30;

int Product(const std::vector<int>& shape) {
  int64_t p = 1;
  for (int d : shape) p = std::min(p * d, kMaxSize + 1);
  return static_cast<int>(p);
}

// Builds "file: path (Class 'name'): message" errors for one layer.
struct LayerWhere {
  const std::string& file;
  std::string path;
  std::string class_name;
  std::string name;

  Status Error(const std::string& field, const std::string& message) const {
    std::string who = class_name + (name.empty() ? "" : " '" + name + "'");
    return Unsupported(file + ": " + path + field + " (" + who + "): " + message);
  }
};

// A layer's config object: typed reads that remember which keys were read, so
// that Finish() can refuse every other option that is set.
class ConfigReader {
 public:
  ConfigReader(const Json& config, const LayerWhere& where) : config_(config), where_(where) {}

  const Json* Find(const char* key) {
    seen_.insert(key);
    return data::JsonFind(config_, key);
  }
  void Accept(const char* key) { seen_.insert(key); }
  Status Error(const char* key, const std::string& message) const {
    return where_.Error(std::string(".config.") + key, message);
  }
  Status Error(const std::string& message) const { return where_.Error("", message); }

  Status Int(const char* key, int* out) {
    const Json* v = Find(key);
    if (!v) return Status::Ok();
    if (!v->is_number_integer()) return Error(key, "expected an integer, got " + JsonTypeName(*v));
    if (v->get<int64_t>() > kMaxSize || v->get<int64_t>() < -kMaxSize) {
      return Error(key, v->dump() + " is out of range");
    }
    *out = v->get<int>();
    return Status::Ok();
  }
  Status Float(const char* key, float* out) {
    const Json* v = Find(key);
    if (!v) return Status::Ok();
    if (!v->is_number()) return Error(key, "expected a number, got " + JsonTypeName(*v));
    *out = v->get<float>();
    return Status::Ok();
  }
  Status Bool(const char* key, bool* out) {
    const Json* v = Find(key);
    if (!v) return Status::Ok();
    if (!v->is_boolean()) return Error(key, "expected true or false, got " + JsonTypeName(*v));
    *out = v->get<bool>();
    return Status::Ok();
  }
  // A positive integer that must be present.
  Status Size(const char* key, int* out) {
    *out = 0;
    TARN_RETURN_IF_ERROR(Int(key, out));
    if (*out <= 0) return Error(key, "expected a positive integer");
    return Status::Ok();
  }

  // Keys every layer has: the name, `trainable` (tarn trains every layer) and
  // the float32 dtype policy.
  Status Common() {
    Accept("name");
    // Keras 2 writes a build-time batch_input_shape ([null, null] on an Embedding); the
    // shapes tarn uses come from the graph and are checked against build_config.
    Accept("batch_input_shape");
    bool trainable = true;
    TARN_RETURN_IF_ERROR(Bool("trainable", &trainable));
    if (!trainable) return Error("trainable", "frozen layers (trainable: false) are not supported");
    const Json* dtype = Find("dtype");
    std::string policy = "float32";
    if (dtype && dtype->is_string()) policy = dtype->get<std::string>();
    if (dtype && dtype->is_object()) {
      const Json* name = data::JsonFind(*dtype, "config");
      name = name ? data::JsonFind(*name, "name") : nullptr;
      policy = name && name->is_string() ? name->get<std::string>() : "?";
    }
    if (policy != "float32") {
      return Error("dtype",
                   "dtype policy '" + policy + "' is not supported: tarn trains in float32");
    }
    return Status::Ok();
  }

  // Refuses every option not read that is set (neither null nor false nor an
  // empty list): an option tarn would silently not honour.
  Status Finish() const {
    for (const auto& [key, value] : config_.items()) {
      if (seen_.count(key)) continue;
      if (value.is_null() || (value.is_boolean() && !value.get<bool>()) ||
          ((value.is_array() || value.is_object()) && value.empty())) {
        continue;
      }
      return where_.Error(".config." + key, "option '" + key + "' is not supported by tarn");
    }
    return Status::Ok();
  }

 private:
  const Json& config_;
  const LayerWhere& where_;
  std::set<std::string> seen_;
};

// Strips Keras 3's "keras.src.x" module spelling down to what matters: a
// serialized object's class name and config.
std::string ObjectClass(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  const Json* c = data::JsonFind(j, "class_name");
  return c && c->is_string() ? c->get<std::string>() : "";
}
const Json& ObjectConfig(const Json& j) {
  static const Json kEmpty = Json::object();
  const Json* c = j.is_object() ? data::JsonFind(j, "config") : nullptr;
  return c && c->is_object() ? *c : kEmpty;
}

bool ConfigNumberIs(const Json& config, const char* key, double expected) {
  const Json* v = data::JsonFind(config, key);
  return v && v->is_number() && std::fabs(v->get<double>() - expected) < 1e-9;
}

// Only `keys` (and a seed, which tarn replaces with its own) may be set.
bool OnlyKeys(const Json& config, std::initializer_list<const char*> keys) {
  for (const auto& [key, value] : config.items()) {
    if (key == "seed" || value.is_null()) continue;
    if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; }))
      return false;
  }
  return true;
}

// Keras initializers by class name (Keras 2 also accepts the function's
// name), the tarn initializer each is, and the parameters it may carry.
struct KerasInitializer {
  const char* class_name;
  const char* function_name;
  Initializer tarn;
};
constexpr KerasInitializer kKerasInitializers[] = {
    {"glorotuniform", "glorot_uniform", Initializer::kXavier},
    {"henormal", "he_normal", Initializer::kHe},
    {"lecunnormal", "lecun_normal", Initializer::kLecun},
    {"randomuniform", "random_uniform", Initializer::kUniform},
    {"randomnormal", "random_normal", Initializer::kGaussian},
};

Result<Initializer> ReadInitializer(ConfigReader& r, const char* key, Initializer absent) {
  const Json* v = r.Find(key);
  if (!v) return absent;
  std::string cls = ObjectClass(*v);
  std::string lower = ToLower(cls);
  const Json& config = ObjectConfig(*v);
  std::string desc = "initializer '" + cls + "'";
  const KerasInitializer* known = nullptr;
  for (const auto& k : kKerasInitializers)
    if (lower == k.class_name || lower == k.function_name) known = &k;
  if (known && known->tarn == Initializer::kUniform && OnlyKeys(config, {"minval", "maxval"})) {
    if (ConfigNumberIs(config, "minval", -0.05) && ConfigNumberIs(config, "maxval", 0.05))
      return Initializer::kUniform;
    return r.Error(key, desc + " is read only as Keras' default U(-0.05, 0.05), tarn's 'uniform'");
  }
  if (known && known->tarn == Initializer::kGaussian && OnlyKeys(config, {"mean", "stddev"})) {
    if (ConfigNumberIs(config, "mean", 0) && ConfigNumberIs(config, "stddev", 1))
      return Initializer::kGaussian;
    return r.Error(key, desc + " is read only as N(0, 1), tarn's 'gaussian'");
  }
  if (known && OnlyKeys(config, {})) return known->tarn;
  return r.Error(key, desc + (known ? " with these parameters" : "") +
                          " is not supported (tarn reads GlorotUniform, HeNormal, LecunNormal, "
                          "RandomUniform(-0.05, 0.05), RandomNormal(0, 1))");
}

// An initializer that must be the constant tarn starts from: Zeros (biases,
// beta, moving mean) or Ones (gamma, moving variance).
Status RequireConstantInitializer(ConfigReader& r, const char* key, bool ones) {
  const Json* v = r.Find(key);
  if (!v) return Status::Ok();
  std::string lower = ToLower(ObjectClass(*v));
  bool is_zeros = lower == "zeros";
  bool is_ones = lower == "ones";
  if ((ones ? is_ones : is_zeros) && OnlyKeys(ObjectConfig(*v), {})) return Status::Ok();
  return r.Error(key, "initializer '" + ObjectClass(*v) + "' is not supported: tarn starts it at " +
                          (ones ? "Ones" : "Zeros"));
}

Result<KerasRegularizer> ReadRegularizer(ConfigReader& r, const char* key) {
  KerasRegularizer out;
  const Json* v = r.Find(key);
  if (!v) return out;
  std::string lower = ToLower(ObjectClass(*v));
  const Json& config = ObjectConfig(*v);
  if ((lower == "l1" || lower == "l2" || lower == "l1l2" || lower == "l1_l2") &&
      OnlyKeys(config, {"l1", "l2"})) {
    for (const char* factor : {"l1", "l2"}) {
      const Json* f = data::JsonFind(config, factor);
      if (!f) continue;
      if (!f->is_number() || f->get<double>() < 0 || !std::isfinite(f->get<double>()))
        return r.Error(key, std::string("'") + factor + "' must be a non-negative number");
      (factor[1] == '1' ? out.l1 : out.l2) = f->get<float>();
    }
    return out;
  }
  return r.Error(
      key, "regularizer '" + ObjectClass(*v) + "' is not supported (tarn reads L1, L2, L1L2)");
}

// A regularizer tarn has no place for (biases, activities, batch norm): null only.
Status RefuseRegularizer(ConfigReader& r, const char* key, const char* why) {
  const Json* v = r.Find(key);
  if (v) return r.Error(key, why);
  return Status::Ok();
}

Status RefuseConstraint(ConfigReader& r, const char* key) {
  const Json* v = r.Find(key);
  if (v) return r.Error(key, "constraints ('" + ObjectClass(*v) + "') are not supported");
  return Status::Ok();
}

Result<Activation> ReadActivation(ConfigReader& r) {
  const Json* v = r.Find("activation");
  if (!v) return Activation::kLinear;
  // Keras 3 may write a built-in activation as {"class_name": "function", "config": "relu"}.
  std::string name;
  if (v->is_string()) name = v->get<std::string>();
  if (v->is_object() && ObjectClass(*v) == "function" && ObjectConfig(*v).empty()) {
    const Json* c = data::JsonFind(*v, "config");
    if (c && c->is_string()) name = c->get<std::string>();
  }
  if (name == "linear" || name == "sigmoid" || name == "tanh" || name == "relu") {
    return ParseActivation(name);
  }
  if (name == "swish" || name == "silu") return Activation::kSwish;
  if (name == "leaky_relu") {
    return r.Error("activation",
                   "Keras' 'leaky_relu' has slope 0.2 and tarn's leaky relu 0.01, so it is not "
                   "read");
  }
  return r.Error("activation", "activation '" + (name.empty() ? v->dump() : name) +
                                   "' is not supported (tarn reads linear, sigmoid, tanh, relu, "
                                   "swish/silu)");
}

// A shape list [null, 8] (batch first) as read from batch_shape / batch_input_shape.
Result<std::vector<int>> ReadBatchShape(const Json& v,
                                        const std::function<Status(std::string)>& error) {
  if (!v.is_array() || v.empty()) return error("expected a shape list such as [null, 8]");
  std::vector<int> shape;
  for (size_t i = 1; i < v.size(); ++i) {
    if (!v[i].is_number_integer() || v[i].get<int64_t>() <= 0 || v[i].get<int64_t>() > kMaxSize) {
      return error("dimension " + std::to_string(i) + " is " + v[i].dump() +
                   ": tarn needs every dimension but the batch known and positive");
    }
    shape.push_back(v[i].get<int>());
  }
  return shape;
}

// One reference to a layer's output: Keras 3 keras_history [name, node, tensor]
// or a Keras 2 node entry [name, node, tensor, kwargs].
struct TensorRef {
  std::string layer;
  int node = 0;
  int tensor = 0;
};

Result<TensorRef> ReadRef(const Json& ref, const std::function<Status(std::string)>& error) {
  if (!ref.is_array() || ref.size() < 3 || !ref[0].is_string() || !ref[1].is_number_integer() ||
      !ref[2].is_number_integer()) {
    return error("expected [layer name, node index, tensor index], got " + ref.dump());
  }
  return TensorRef{ref[0].get<std::string>(), ref[1].get<int>(), ref[2].get<int>()};
}

// A call's keyword arguments: none may be set, except Keras 3's traced
// `training: false`, which its Functional call replaces with the model's own
// training flag (Keras 2 would keep it, so there it is refused like the rest).
Status RefuseCallKwargs(const Json& kwargs, int keras_major,
                        const std::function<Status(std::string)>& error) {
  if (kwargs.is_null()) return Status::Ok();
  if (!kwargs.is_object()) return error("expected an object of call arguments");
  for (const auto& [key, value] : kwargs.items()) {
    if (value.is_null()) continue;
    if (key == "training" && keras_major == 3 && value.is_boolean() && !value.get<bool>()) continue;
    return error("call argument '" + key + "' (" + value.dump(-1).substr(0, 60) +
                 ") is not supported");
  }
  return Status::Ok();
}

// Keras 3: the tensors among a call's args, in order (a merge layer gets one list of them).
Status CollectKeras3Tensors(const Json& arg, const std::function<Status(std::string)>& error,
                            std::vector<TensorRef>* out) {
  if (arg.is_array()) {
    for (const auto& a : arg) TARN_RETURN_IF_ERROR(CollectKeras3Tensors(a, error, out));
    return Status::Ok();
  }
  if (arg.is_object() && ObjectClass(arg) == "__keras_tensor__") {
    const Json* history = data::JsonFind(ObjectConfig(arg), "keras_history");
    if (!history) return error("a __keras_tensor__ without keras_history");
    TARN_ASSIGN_OR_RETURN(TensorRef ref, ReadRef(*history, error));
    out->push_back(std::move(ref));
    return Status::Ok();
  }
  return error("call argument " + arg.dump() + " is not a Keras tensor: not supported");
}

// The value a layer's call produces: call 0 is the layer's own name, a later
// call k (a shared layer's) "name#k". `#` is no character Keras puts in a name.
std::string CallName(const std::string& layer, int call) {
  return call == 0 ? layer : layer + "#" + std::to_string(call);
}

// The values a reference names: layers with several outputs are refused.
Result<std::string> RefName(const TensorRef& ref, const std::function<Status(std::string)>& error) {
  if (ref.tensor != 0 || ref.node < 0) {
    return error("uses output " + std::to_string(ref.tensor) + " of call " +
                 std::to_string(ref.node) + " of layer '" + ref.layer +
                 "': layers with several outputs are not supported");
  }
  return CallName(ref.layer, ref.node);
}

// The calls of one layer entry (its inbound_nodes, Keras 3 or Keras 2): per
// call, the values it takes, as CallName()s. A shared layer has several.
Result<std::vector<std::vector<std::string>>> ReadCalls(const Json& entry, int keras_major,
                                                        const LayerWhere& where) {
  std::vector<std::vector<std::string>> calls;
  const Json* nodes = data::JsonFind(entry, "inbound_nodes");
  if (!nodes) return calls;
  if (!nodes->is_array()) return where.Error(".inbound_nodes", "expected a list");
  for (size_t c = 0; c < nodes->size(); ++c) {
    const Json& node = (*nodes)[c];
    const std::string field = ".inbound_nodes[" + std::to_string(c) + "]";
    auto error = [&](std::string m) { return where.Error(field, std::move(m)); };
    std::vector<TensorRef> refs;
    if (node.is_object()) {  // Keras 3: {"args": [...], "kwargs": {...}}
      const Json* args = data::JsonFind(node, "args");
      if (!args || !args->is_array()) return error("expected 'args', a list");
      TARN_RETURN_IF_ERROR(CollectKeras3Tensors(*args, error, &refs));
      const Json* kwargs = data::JsonFind(node, "kwargs");
      if (kwargs) TARN_RETURN_IF_ERROR(RefuseCallKwargs(*kwargs, keras_major, error));
    } else if (node.is_array()) {  // Keras 2: [["name", 0, 0, {}], ...]
      for (const auto& r : node) {
        TARN_ASSIGN_OR_RETURN(TensorRef ref, ReadRef(r, error));
        if (r.size() > 3) TARN_RETURN_IF_ERROR(RefuseCallKwargs(r[3], keras_major, error));
        refs.push_back(std::move(ref));
      }
    } else {
      return error("expected an object (Keras 3) or a list (Keras 2)");
    }
    std::vector<std::string> inputs;
    for (const auto& ref : refs) {
      TARN_ASSIGN_OR_RETURN(std::string name, RefName(ref, error));
      inputs.push_back(std::move(name));
    }
    if (inputs.empty()) return error("the layer is called on no Keras tensor");
    calls.push_back(std::move(inputs));
  }
  return calls;
}

// input_layers / output_layers: one [name, node, 0], a list of them, or a dict
// of them; as CallName()s.
Result<std::vector<std::string>> ReadEndpoints(const Json& v, const std::string& file,
                                               const std::string& path) {
  auto error = [&](std::string m) { return Unsupported(file + ": " + path + ": " + m); };
  std::vector<std::string> names;
  std::vector<const Json*> refs;
  if (v.is_array() && !v.empty() && v[0].is_string()) {
    refs.push_back(&v);
  } else if (v.is_array()) {
    for (const auto& r : v) refs.push_back(&r);
  } else if (v.is_object()) {
    for (const auto& [key, r] : v.items()) refs.push_back(&r);
  } else {
    return error("expected a list of [layer name, node index, tensor index]");
  }
  for (const Json* r : refs) {
    TARN_ASSIGN_OR_RETURN(TensorRef ref, ReadRef(*r, error));
    if (ref.tensor != 0) return error("'" + ref.layer + "' is not a layer's only output");
    names.push_back(CallName(ref.layer, ref.node));
  }
  return names;
}

Status CheckLayerClass(const Json& entry, const LayerWhere& where) {
  const std::string& cls = where.class_name;
  const Json* module = data::JsonFind(entry, "module");
  const Json* registered = data::JsonFind(entry, "registered_name");
  // Keras' own classes live in keras.* (tf_keras.* for a tf_keras model used as a layer).
  const std::string module_name = module && module->is_string() ? module->get<std::string>() : "";
  if (module && module_name.rfind("keras", 0) != 0 && module_name.rfind("tf_keras.", 0) != 0) {
    return where.Error("", "custom layers (module " + module->dump() + ") are not supported");
  }
  if (registered && (!registered->is_string() || registered->get<std::string>() != cls)) {
    return where.Error(
        "", "custom layers (registered as " + registered->dump() + ") are not supported");
  }
  if (cls == "Lambda")
    return where.Error("", "Lambda layers hold Python code and are not supported");
  if (cls == "TFOpLambda" || cls == "SlicingOpLambda") {
    return where.Error("",
                       "TensorFlow operations applied to Keras tensors are not supported: "
                       "use Keras layers");
  }
  return Status::Ok();
}

struct ClassEntry {
  const char* class_name;
  KerasLayerKind kind;
};
constexpr ClassEntry kClasses[] = {
    {"InputLayer", KerasLayerKind::kInput},
    {"Embedding", KerasLayerKind::kEmbedding},
    {"Dense", KerasLayerKind::kDense},
    {"Concatenate", KerasLayerKind::kConcatenate},
    {"Add", KerasLayerKind::kAdd},
    {"Multiply", KerasLayerKind::kMultiply},
    {"Dot", KerasLayerKind::kDot},
    {"Flatten", KerasLayerKind::kFlatten},
    {"Reshape", KerasLayerKind::kReshape},
    {"Dropout", KerasLayerKind::kDropout},
    {"BatchNormalization", KerasLayerKind::kBatchNormalization},
    {"Activation", KerasLayerKind::kActivation},
    {"LeakyReLU", KerasLayerKind::kActivation},
    {"ReLU", KerasLayerKind::kActivation},
    {"Hashing", KerasLayerKind::kHashing},
};

// LeakyReLU is tarn's leaky relu when its slope is tarn's: `negative_slope`
// (Keras 3) or `alpha` (Keras 2), Keras' default 0.3 being another function.
Status ReadLeakyRelu(ConfigReader& r, KerasLayer* layer) {
  float slope = 0.3f;
  TARN_RETURN_IF_ERROR(r.Float("negative_slope", &slope));
  TARN_RETURN_IF_ERROR(r.Float("alpha", &slope));
  if (std::fabs(slope - kLeakyReluSlope) > 1e-6f) {
    char text[96];
    std::snprintf(text, sizeof(text), "slope %g is not tarn's leaky relu slope %g", slope,
                  kLeakyReluSlope);
    return r.Error(r.Find("alpha") ? "alpha" : "negative_slope", text);
  }
  layer->activation = Activation::kLeakyRelu;
  return Status::Ok();
}

// ReLU is plain relu only without a cap, a slope or a threshold.
Status ReadRelu(ConfigReader& r, KerasLayer* layer) {
  for (const char* key : {"negative_slope", "threshold"}) {
    float v = 0;
    TARN_RETURN_IF_ERROR(r.Float(key, &v));
    if (v != 0) return r.Error(key, std::string("a ReLU with a ") + key + " is not supported");
  }
  if (r.Find("max_value")) return r.Error("max_value", "a capped ReLU is not supported");
  layer->activation = Activation::kRelu;
  return Status::Ok();
}

// Hashing: the options Keras 3 hashes with (data/keras_hash.h), output_mode
// "int" only (the bins feed an Embedding).
Status ReadHashing(ConfigReader& r, KerasLayer* layer) {
  r.Accept("name");
  r.Accept("trainable");  // no weights
  // Keras writes the output dtype as the layer's policy: the bins are integers.
  const Json* dtype = r.Find("dtype");
  std::string policy = "int64";
  if (dtype && dtype->is_string()) policy = dtype->get<std::string>();
  if (dtype && dtype->is_object()) {
    const Json* c = data::JsonFind(*dtype, "config");
    const Json* n = c ? data::JsonFind(*c, "name") : nullptr;
    policy = n && n->is_string() ? n->get<std::string>() : "?";
  }
  if (policy != "int64" && policy != "int32") {
    return r.Error("dtype", "dtype '" + policy + "': the bins are int64 or int32");
  }
  int num_bins = 0;
  TARN_RETURN_IF_ERROR(r.Size("num_bins", &num_bins));
  layer->hashing.num_bins = static_cast<uint32_t>(num_bins);
  if (const Json* salt = r.Find("salt"); salt && !salt->is_null()) {
    // Keras stores an integer salt s as the key [s, s]; TensorFlow takes the
    // words as int64 and hashes with their 64 bits.
    auto word = [](const Json& v, uint64_t* out) {
      if (v.is_number_unsigned())
        *out = v.get<uint64_t>();
      else if (v.is_number_integer())
        *out = static_cast<uint64_t>(v.get<int64_t>());
      else
        return false;
      return true;
    };
    std::array<uint64_t, 2> key{};
    const bool ok = salt->is_array() ? salt->size() == 2 && word((*salt)[0], &key[0]) &&
                                           word((*salt)[1], &key[1])
                                     : word(*salt, &key[0]);
    if (!ok) return r.Error("salt", "expected an integer or a pair of integers");
    if (!salt->is_array()) key[1] = key[0];
    layer->hashing.salt = key;
  }
  if (const Json* mask = r.Find("mask_value"); mask && !mask->is_null()) {
    if (!mask->is_string()) {
      return r.Error("mask_value", "expected a string: the Hashing layer reads the column's text");
    }
    layer->hashing.mask_value = mask->get<std::string>();
  }
  if (const Json* mode = r.Find("output_mode");
      mode && !(mode->is_string() && mode->get<std::string>() == "int")) {
    return r.Error("output_mode", "output_mode " + mode->dump() +
                                      " is not supported: tarn embeds the bins (output_mode "
                                      "\"int\")");
  }
  bool sparse = false;
  TARN_RETURN_IF_ERROR(r.Bool("sparse", &sparse));
  if (sparse) return r.Error("sparse", "sparse output is not supported");
  return Status::Ok();
}

// The class-specific config of one layer. An InputLayer's shape, and the
// first layer of a Sequential without one, are read by the caller.
Status ReadLayerConfig(ConfigReader& r, KerasLayer* layer) {
  switch (layer->kind) {
    case KerasLayerKind::kInput: {
      r.Accept("batch_shape");
      r.Accept("batch_input_shape");
      r.Accept("shape");
      r.Accept("dtype");
      r.Accept("name");
      bool sparse = false, ragged = false;
      TARN_RETURN_IF_ERROR(r.Bool("sparse", &sparse));
      TARN_RETURN_IF_ERROR(r.Bool("ragged", &ragged));
      if (sparse || ragged) {
        return r.Error(sparse ? "sparse" : "ragged", "sparse and ragged inputs are not supported");
      }
      return Status::Ok();
    }
    case KerasLayerKind::kDense: {
      TARN_RETURN_IF_ERROR(r.Common());
      TARN_RETURN_IF_ERROR(r.Size("units", &layer->units));
      TARN_ASSIGN_OR_RETURN(layer->activation, ReadActivation(r));
      TARN_RETURN_IF_ERROR(r.Bool("use_bias", &layer->use_bias));
      TARN_ASSIGN_OR_RETURN(layer->initializer,
                            ReadInitializer(r, "kernel_initializer", Initializer::kXavier));
      TARN_RETURN_IF_ERROR(RequireConstantInitializer(r, "bias_initializer", false));
      TARN_ASSIGN_OR_RETURN(layer->regularizer, ReadRegularizer(r, "kernel_regularizer"));
      TARN_RETURN_IF_ERROR(
          RefuseRegularizer(r, "bias_regularizer", "tarn regularizes weights only, never biases"));
      TARN_RETURN_IF_ERROR(
          RefuseRegularizer(r, "activity_regularizer", "activity regularizers are not supported"));
      TARN_RETURN_IF_ERROR(RefuseConstraint(r, "kernel_constraint"));
      TARN_RETURN_IF_ERROR(RefuseConstraint(r, "bias_constraint"));
      return Status::Ok();
    }
    case KerasLayerKind::kEmbedding: {
      TARN_RETURN_IF_ERROR(r.Common());
      TARN_RETURN_IF_ERROR(r.Size("input_dim", &layer->input_dim));
      TARN_RETURN_IF_ERROR(r.Size("output_dim", &layer->units));
      TARN_ASSIGN_OR_RETURN(layer->initializer,
                            ReadInitializer(r, "embeddings_initializer", Initializer::kUniform));
      TARN_ASSIGN_OR_RETURN(layer->regularizer, ReadRegularizer(r, "embeddings_regularizer"));
      TARN_RETURN_IF_ERROR(
          RefuseRegularizer(r, "activity_regularizer", "activity regularizers are not supported"));
      TARN_RETURN_IF_ERROR(RefuseConstraint(r, "embeddings_constraint"));
      bool mask_zero = false;
      TARN_RETURN_IF_ERROR(r.Bool("mask_zero", &mask_zero));
      if (mask_zero) {
        return r.Error("mask_zero",
                       "masking (mask_zero: true) is not supported: id 0 is a "
                       "category like any other in tarn");
      }
      int input_length = 1;
      TARN_RETURN_IF_ERROR(r.Int("input_length", &input_length));  // Keras 2
      if (input_length != 1)
        return r.Error("input_length", "tarn embeds one id per row (input_length 1)");
      return Status::Ok();
    }
    case KerasLayerKind::kConcatenate:
      TARN_RETURN_IF_ERROR(r.Common());
      return r.Int("axis", &layer->axis);
    case KerasLayerKind::kAdd:
    case KerasLayerKind::kMultiply:
      return r.Common();
    case KerasLayerKind::kDot: {
      TARN_RETURN_IF_ERROR(r.Common());
      const Json* axes = r.Find("axes");
      if (axes && axes->is_number_integer()) {
        layer->dot_axes[0] = layer->dot_axes[1] = axes->get<int>();
      } else if (axes && axes->is_array() && axes->size() == 2 && (*axes)[0].is_number_integer() &&
                 (*axes)[1].is_number_integer()) {
        layer->dot_axes[0] = (*axes)[0].get<int>();
        layer->dot_axes[1] = (*axes)[1].get<int>();
      } else {
        return r.Error("axes", "expected an integer or a pair of integers");
      }
      bool normalize = false;
      TARN_RETURN_IF_ERROR(r.Bool("normalize", &normalize));
      if (normalize)
        return r.Error("normalize", "cosine proximity (normalize: true) is not supported");
      return Status::Ok();
    }
    case KerasLayerKind::kFlatten: {
      TARN_RETURN_IF_ERROR(r.Common());
      const Json* format = r.Find("data_format");
      if (format && (!format->is_string() || format->get<std::string>() != "channels_last")) {
        return r.Error("data_format", "only channels_last is supported");
      }
      return Status::Ok();
    }
    case KerasLayerKind::kReshape: {
      TARN_RETURN_IF_ERROR(r.Common());
      const Json* target = r.Find("target_shape");
      if (!target || !target->is_array() || target->empty()) {
        return r.Error("target_shape", "expected a list of dimensions");
      }
      for (const auto& d : *target) {
        if (!d.is_number_integer() || d.get<int64_t>() == 0 || d.get<int64_t>() < -1 ||
            d.get<int64_t>() > kMaxSize) {
          return r.Error("target_shape", "dimensions must be positive integers or one -1");
        }
        layer->target_shape.push_back(d.get<int>());
      }
      if (std::count(layer->target_shape.begin(), layer->target_shape.end(), -1) > 1) {
        return r.Error("target_shape", "at most one dimension may be -1");
      }
      return Status::Ok();
    }
    case KerasLayerKind::kDropout: {
      TARN_RETURN_IF_ERROR(r.Common());
      r.Accept("seed");  // tarn's dropout is seeded by the job
      TARN_RETURN_IF_ERROR(r.Float("rate", &layer->rate));
      if (!(layer->rate >= 0 && layer->rate < 1))
        return r.Error("rate", "expected a rate in [0, 1)");
      if (r.Find("noise_shape")) return r.Error("noise_shape", "a noise_shape is not supported");
      return Status::Ok();
    }
    case KerasLayerKind::kBatchNormalization: {
      TARN_RETURN_IF_ERROR(r.Common());
      const Json* axis = r.Find("axis");
      // Keras 2 writes the built axis as a list ([1]).
      if (axis && axis->is_array() && axis->size() == 1) axis = &(*axis)[0];
      if (axis && !axis->is_number_integer()) return r.Error("axis", "expected one axis");
      if (axis) layer->axis = axis->get<int>();
      TARN_RETURN_IF_ERROR(r.Float("momentum", &layer->momentum));
      TARN_RETURN_IF_ERROR(r.Float("epsilon", &layer->epsilon));
      if (!(layer->momentum >= 0 && layer->momentum < 1))
        return r.Error("momentum", "expected a value in [0, 1)");
      if (!(layer->epsilon > 0)) return r.Error("epsilon", "expected a positive value");
      // tarn's batch_norm always learns gamma and beta.
      for (const char* key : {"center", "scale"}) {
        bool on = true;
        TARN_RETURN_IF_ERROR(r.Bool(key, &on));
        if (!on) return r.Error(key, "tarn always learns gamma and beta (center and scale true)");
      }
      TARN_RETURN_IF_ERROR(RequireConstantInitializer(r, "beta_initializer", false));
      TARN_RETURN_IF_ERROR(RequireConstantInitializer(r, "gamma_initializer", true));
      TARN_RETURN_IF_ERROR(RequireConstantInitializer(r, "moving_mean_initializer", false));
      TARN_RETURN_IF_ERROR(RequireConstantInitializer(r, "moving_variance_initializer", true));
      for (const char* key : {"beta_regularizer", "gamma_regularizer"}) {
        TARN_RETURN_IF_ERROR(
            RefuseRegularizer(r, key, "batch normalization regularizers are not supported"));
      }
      TARN_RETURN_IF_ERROR(RefuseConstraint(r, "beta_constraint"));
      TARN_RETURN_IF_ERROR(RefuseConstraint(r, "gamma_constraint"));
      r.Accept("fused");  // tf.keras' choice of kernel, not of the result
      bool renorm = false;
      TARN_RETURN_IF_ERROR(r.Bool("renorm", &renorm));
      if (renorm) return r.Error("renorm", "batch renormalization is not supported");
      r.Accept("renorm_momentum");  // used only with renorm
      return Status::Ok();
    }
    case KerasLayerKind::kActivation: {
      TARN_RETURN_IF_ERROR(r.Common());
      if (layer->class_name == "LeakyReLU") return ReadLeakyRelu(r, layer);
      if (layer->class_name == "ReLU") return ReadRelu(r, layer);
      TARN_ASSIGN_OR_RETURN(layer->activation, ReadActivation(r));
      return Status::Ok();
    }
    case KerasLayerKind::kHashing:
      return ReadHashing(r, layer);
  }
  return Status::Ok();
}

// Keras counts axes with the batch as 0; `rank` excludes it. Returns the
// index into a batch-less shape, or -1 when the axis is the batch or out of range.
int InnerAxis(int axis, size_t rank) {
  int full = axis < 0 ? axis + static_cast<int>(rank) + 1 : axis;
  return full >= 1 && full <= static_cast<int>(rank) ? full - 1 : -1;
}

// The output shape of `layer` from its inputs' shapes, as Keras computes it.
Status InferShape(const std::vector<const KerasLayer*>& ins, const LayerWhere& where,
                  KerasLayer* layer) {
  auto one_input = [&]() -> Status {
    if (ins.size() != 1) {
      return where.Error("", "expected one input, got " + std::to_string(ins.size()));
    }
    return Status::Ok();
  };
  switch (layer->kind) {
    case KerasLayerKind::kInput:
      return Status::Ok();
    case KerasLayerKind::kDense:
      TARN_RETURN_IF_ERROR(one_input());
      layer->shape = ins[0]->shape;
      if (layer->shape.empty()) return where.Error("", "the input has no feature axis");
      layer->shape.back() = layer->units;
      return Status::Ok();
    case KerasLayerKind::kEmbedding:
      TARN_RETURN_IF_ERROR(one_input());
      layer->shape = ins[0]->shape;
      layer->shape.push_back(layer->units);
      return Status::Ok();
    case KerasLayerKind::kConcatenate: {
      if (ins.size() < 2) return where.Error("", "expected at least two inputs");
      const auto& first = ins[0]->shape;
      int axis = InnerAxis(layer->axis, first.size());
      if (axis < 0) {
        return where.Error(".config.axis", "axis " + std::to_string(layer->axis) +
                                               " is not a feature axis of " + ShapeText(first));
      }
      layer->shape = first;
      layer->shape[axis] = 0;
      for (const KerasLayer* in : ins) {
        bool fits = in->shape.size() == first.size();
        for (size_t d = 0; fits && d < first.size(); ++d)
          fits = static_cast<int>(d) == axis || in->shape[d] == first[d];
        if (!fits) {
          return where.Error("", "cannot concatenate " + ShapeText(first) + " and " +
                                     ShapeText(in->shape) + " on axis " +
                                     std::to_string(layer->axis));
        }
        layer->shape[axis] =
            static_cast<int>(std::min(int64_t{layer->shape[axis]} + in->shape[axis], kMaxSize + 1));
      }
      layer->axis = axis + 1;
      return Status::Ok();
    }
    case KerasLayerKind::kAdd:
    case KerasLayerKind::kMultiply:
      if (ins.size() < 2) return where.Error("", "expected at least two inputs");
      for (const KerasLayer* in : ins) {
        if (in->shape != ins[0]->shape) {
          return where.Error(
              "", "inputs of shapes " + ShapeText(ins[0]->shape) + " and " + ShapeText(in->shape) +
                      ": tarn combines inputs of equal shapes only (no broadcasting)");
        }
      }
      layer->shape = ins[0]->shape;
      return Status::Ok();
    case KerasLayerKind::kDot: {
      if (ins.size() != 2) return where.Error("", "expected two inputs");
      std::vector<int> a = ins[0]->shape, b = ins[1]->shape;
      int axis_a = InnerAxis(layer->dot_axes[0], a.size());
      int axis_b = InnerAxis(layer->dot_axes[1], b.size());
      if (axis_a < 0 || axis_b < 0 || a[axis_a] != b[axis_b]) {
        return where.Error(".config.axes", "cannot contract " + ShapeText(a) + " and " +
                                               ShapeText(b) + " on axes " +
                                               std::to_string(layer->dot_axes[0]) + ", " +
                                               std::to_string(layer->dot_axes[1]));
      }
      layer->dot_axes[0] = axis_a + 1;
      layer->dot_axes[1] = axis_b + 1;
      a.erase(a.begin() + axis_a);
      b.erase(b.begin() + axis_b);
      layer->shape = a;
      layer->shape.insert(layer->shape.end(), b.begin(), b.end());
      if (layer->shape.empty()) layer->shape = {1};  // Keras keeps (batch, 1)
      return Status::Ok();
    }
    case KerasLayerKind::kFlatten:
      TARN_RETURN_IF_ERROR(one_input());
      layer->shape = {Product(ins[0]->shape)};
      return Status::Ok();
    case KerasLayerKind::kReshape: {
      TARN_RETURN_IF_ERROR(one_input());
      std::vector<int> known_dims = layer->target_shape;
      std::replace(known_dims.begin(), known_dims.end(), -1, 1);
      int total = Product(ins[0]->shape), known = Product(known_dims);
      for (int& d : layer->target_shape) {
        if (d == -1) d = known > 0 && total % known == 0 ? total / known : -1;
      }
      if (Product(layer->target_shape) != total ||
          std::count(layer->target_shape.begin(), layer->target_shape.end(), -1) > 0) {
        return where.Error(".config.target_shape", "cannot reshape " + ShapeText(ins[0]->shape) +
                                                       " (" + std::to_string(total) + " values)");
      }
      layer->shape = layer->target_shape;
      return Status::Ok();
    }
    case KerasLayerKind::kDropout:
    case KerasLayerKind::kActivation:
    case KerasLayerKind::kHashing:
      TARN_RETURN_IF_ERROR(one_input());
      layer->shape = ins[0]->shape;
      return Status::Ok();
    case KerasLayerKind::kBatchNormalization: {
      TARN_RETURN_IF_ERROR(one_input());
      layer->shape = ins[0]->shape;
      int axis = InnerAxis(layer->axis, layer->shape.size());
      if (axis != static_cast<int>(layer->shape.size()) - 1) {
        return where.Error(".config.axis", "tarn normalizes the last axis only, not axis " +
                                               std::to_string(layer->axis) + " of " +
                                               ShapeText(layer->shape));
      }
      layer->axis = axis + 1;
      return Status::Ok();
    }
  }
  return Status::Ok();
}

// build_config.input_shape, where Keras 3 wrote one for a single-input layer,
// must be what tarn inferred: a mismatch means the JSON is not what it seems.
Status CheckBuildConfig(const Json& entry, const std::vector<int>& input_shape,
                        const LayerWhere& where) {
  const Json* build = data::JsonFind(entry, "build_config");
  const Json* shape = build ? data::JsonFind(*build, "input_shape") : nullptr;
  if (!shape || !shape->is_array() || shape->empty() || shape->at(0).is_array()) {
    return Status::Ok();
  }
  std::vector<int> built;
  for (size_t i = 1; i < shape->size(); ++i) {
    built.push_back((*shape)[i].is_number_integer() ? (*shape)[i].get<int>() : -1);
  }
  if (built != input_shape) {
    return where.Error(
        ".build_config.input_shape",
        "the layer was built for " + shape->dump() + " but its input is " + ShapeText(input_shape));
  }
  return Status::Ok();
}

// The shape of an InputLayer (or of the first layer of a Keras 2 Sequential).
Result<std::vector<int>> ReadInputShape(const Json& config, const LayerWhere& where) {
  for (const char* key : {"batch_shape", "batch_input_shape"}) {
    const Json* v = data::JsonFind(config, key);
    if (!v) continue;
    return ReadBatchShape(*v, [&](std::string m) {
      return where.Error(std::string(".config.") + key, std::move(m));
    });
  }
  return where.Error(".config", "the input has no batch_shape");
}

Status SetInputRole(const Json& config, bool sequential, const LayerWhere& where,
                    KerasLayer* layer) {
  const Json* dtype = data::JsonFind(config, "dtype");
  layer->dtype = dtype && dtype->is_string() ? dtype->get<std::string>() : "float32";
  bool is_float =
      layer->dtype == "float32" || layer->dtype == "float64" || layer->dtype == "float16";
  bool is_int = layer->dtype == "int32" || layer->dtype == "int64";
  std::string what =
      "input '" + layer->name + "' (" + layer->dtype + ", shape " + ShapeText(layer->shape) + ")";
  if (sequential || layer->name == kKerasNumericInputName) {
    layer->role = KerasInputRole::kNumeric;
    if (!is_float || layer->shape.size() != 1) {
      return where.Error(".config", what + ": the normalized numeric vector is (N,), float");
    }
    return Status::Ok();
  }
  const bool is_text = layer->dtype == "string";
  layer->role = is_text ? KerasInputRole::kCategoryText : KerasInputRole::kCategoryIds;
  if (!(is_int || is_text) || layer->shape != std::vector<int>{1}) {
    return where.Error(".config", what + ": an input other than " +
                                      std::string(kKerasNumericInputName) +
                                      " takes the categorical column it is named after, shape "
                                      "(1,): its ids (int32 or int64) or its text (string, for "
                                      "a Hashing layer)");
  }
  return Status::Ok();
}

// Orders layers so that each comes after its inputs, keeping the JSON's order
// where it already does.
Result<std::vector<size_t>> TopologicalOrder(const std::vector<KerasLayer>& layers,
                                             const std::map<std::string, size_t>& index,
                                             const std::string& file) {
  std::vector<int> pending(layers.size(), 0);
  std::vector<std::vector<size_t>> users(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    for (const auto& in : layers[i].inputs) {
      auto it = index.find(in);
      if (it == index.end()) {
        return Unsupported(file + ": " + layers[i].path + " (" + layers[i].class_name + " '" +
                           layers[i].name + "'): input '" + in + "' is no layer of the model");
      }
      users[it->second].push_back(i);
      ++pending[i];
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < layers.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() != layers.size()) {
    return Unsupported(file + ": config.layers: the layers' connections form a cycle");
  }
  return order;
}

bool IsModelClass(const std::string& cls) {
  return cls == "Functional" || cls == "Sequential" || cls == "Model";
}

// Layers whose calls share weights when the layer is called more than once.
bool HasWeights(KerasLayerKind kind) {
  return kind == KerasLayerKind::kDense || kind == KerasLayerKind::kEmbedding ||
         kind == KerasLayerKind::kBatchNormalization;
}

// Nested models deeper than this, or inlined into more layers, are refused (a
// guard against JSON that calls a nested model within a nested model ... again
// and again).
constexpr int kMaxNesting = 16;
constexpr size_t kMaxInlinedLayers = 100000;

// One model's layers as its JSON lists them, each nested model inlined and
// each shared layer's calls apart, before connections are resolved: a layer's
// inputs and the output are CallName()s, and `alias` maps the ones that are no
// layer (a nested model's value, its inputs inside it) on to what holds them.
struct FlatModel {
  bool sequential = false;
  std::vector<KerasLayer> layers;
  std::vector<const Json*> entries;  // per layer: the entry whose build_config it checks, or null
  std::map<std::string, std::string> alias;
  std::vector<std::string> inputs;  // InputLayer names
  std::string output;
};

// `json` is a model object ({"class_name", "config": {"layers", ...}}) found
// at `path` ("" for the top, "config.layers[3]." for a nested model).
Result<FlatModel> ReadModelLayers(const Json& json, const std::string& file,
                                  const std::string& path, int keras_major, int depth) {
  auto model_error = [&](const std::string& field, const std::string& m) {
    return Unsupported(file + ": " + path + field + ": " + m);
  };
  FlatModel out;
  std::string cls = ObjectClass(json);
  if (cls == "Model") cls = "Functional";  // tf.keras before 2.4
  out.sequential = cls == "Sequential";
  const Json& config = ObjectConfig(json);
  if (const Json* t = data::JsonFind(config, "trainable");
      t && t->is_boolean() && !t->get<bool>()) {
    return model_error("config.trainable", "frozen models (trainable: false) are not supported");
  }
  const Json* entries = data::JsonFind(config, "layers");
  if (!entries || !entries->is_array() || entries->empty()) {
    return model_error("config.layers", "expected a non-empty list of layers");
  }
  std::set<std::string> names;  // this model's layer names
  std::string previous;         // a Sequential's last value
  for (size_t i = 0; i < entries->size(); ++i) {
    const Json& entry = (*entries)[i];
    LayerWhere where{file, path + "config.layers[" + std::to_string(i) + "]", "", ""};
    if (!entry.is_object()) return where.Error("", "expected a layer object");
    where.class_name = ObjectClass(entry);
    const Json* layer_config = data::JsonFind(entry, "config");
    if (!layer_config || !layer_config->is_object())
      return where.Error(".config", "expected an object");
    const Json* name = data::JsonFind(entry, "name");
    if (!name) name = data::JsonFind(*layer_config, "name");
    if (!name || !name->is_string()) return where.Error(".name", "expected the layer's name");
    where.name = name->get<std::string>();
    if (!names.insert(where.name).second)
      return where.Error(".name", "a second layer of this name");
    TARN_RETURN_IF_ERROR(CheckLayerClass(entry, where));

    // The calls: a Sequential's layer takes the value before it.
    std::vector<std::vector<std::string>> calls;
    if (out.sequential && !previous.empty()) {
      calls = {{previous}};
    } else if (!out.sequential) {
      TARN_ASSIGN_OR_RETURN(calls, ReadCalls(entry, keras_major, where));
    }

    if (IsModelClass(where.class_name)) {
      // A nested model is inlined once per call: its layers renamed "call/layer",
      // its inputs the call's values; a second call's weights share the first's.
      if (depth >= kMaxNesting) return where.Error("", "models nested too deep");
      TARN_ASSIGN_OR_RETURN(FlatModel sub,
                            ReadModelLayers(entry, file, where.path + ".", keras_major, depth + 1));
      if (calls.empty()) {
        return where.Error("", out.sequential
                                   ? "a Sequential model that starts with a nested model has no "
                                     "input (start it with keras.Input)"
                                   : "the nested model is called on no Keras tensor");
      }
      // Keras 2 counts a model built from an InputLayer's own first node (the
      // one linking its input to its output) in the references to its calls.
      const Json* inner = data::JsonFind(ObjectConfig(entry), "layers");
      const bool skips_first_node = keras_major == 2 && inner && inner->is_array() &&
                                    !inner->empty() && ObjectClass((*inner)[0]) == "InputLayer";
      const int node_offset = skips_first_node ? 1 : 0;
      const std::string first = CallName(where.name, 0) + "/";
      for (size_t c = 0; c < calls.size(); ++c) {
        if (calls[c].size() != sub.inputs.size()) {
          return where.Error(".inbound_nodes[" + std::to_string(c) + "]",
                             "the nested model takes " + std::to_string(sub.inputs.size()) +
                                 " inputs and is called on " + std::to_string(calls[c].size()));
        }
        const std::string prefix = CallName(where.name, static_cast<int>(c)) + "/";
        for (size_t k = 0; k < sub.inputs.size(); ++k)
          out.alias[prefix + sub.inputs[k]] = calls[c][k];
        for (const auto& [from, to] : sub.alias) out.alias[prefix + from] = prefix + to;
        for (size_t j = 0; j < sub.layers.size(); ++j) {
          const KerasLayer& inner = sub.layers[j];
          if (inner.kind == KerasLayerKind::kInput) continue;
          KerasLayer layer = inner;
          layer.name = prefix + inner.name;
          for (auto& in : layer.inputs) in = prefix + in;
          if (c > 0 && HasWeights(inner.kind)) {
            layer.shares = first + (inner.shares.empty() ? inner.name : inner.shares);
          } else if (!inner.shares.empty()) {
            layer.shares = first + inner.shares;
          }
          out.layers.push_back(std::move(layer));
          out.entries.push_back(c == 0 ? sub.entries[j] : nullptr);
        }
        out.alias[CallName(where.name, static_cast<int>(c) + node_offset)] = prefix + sub.output;
        if (out.layers.size() > kMaxInlinedLayers) {
          return where.Error("", "inlining the nested model's calls gives more than " +
                                     std::to_string(kMaxInlinedLayers) + " layers");
        }
      }
      previous = CallName(where.name, node_offset);
      continue;
    }

    const ClassEntry* known = nullptr;
    for (const auto& c : kClasses)
      if (where.class_name == c.class_name) known = &c;
    if (!known) {
      return where.Error("", "layer class '" + where.class_name +
                                 "' is not supported (tarn reads " + kSupportedClasses +
                                 ", and Functional and Sequential models inside a model)");
    }
    KerasLayer layer;
    layer.kind = known->kind;
    layer.class_name = where.class_name;
    layer.name = where.name;
    layer.path = where.path;

    ConfigReader reader(*layer_config, where);
    // A Keras 2 Sequential without an InputLayer gives its first layer the input shape.
    bool implicit_input = out.sequential && i == 0 && layer.kind != KerasLayerKind::kInput;
    if (implicit_input) {
      reader.Accept("batch_input_shape");
      KerasLayer input;
      input.kind = KerasLayerKind::kInput;
      input.class_name = "InputLayer";
      input.name = layer.name + "_input";  // as Keras names it
      input.path = where.path;
      std::vector<int> shape;
      if (data::JsonFind(*layer_config, "batch_input_shape")) {
        TARN_ASSIGN_OR_RETURN(shape, ReadInputShape(*layer_config, where));
      } else {
        const Json* build = data::JsonFind(entry, "build_config");
        const Json* built = build ? data::JsonFind(*build, "input_shape") : nullptr;
        if (!built) built = data::JsonFind(config, "build_input_shape");
        if (!built) {
          return where.Error("",
                             "the Sequential model has no input shape (build it, or start "
                             "it with keras.Input)");
        }
        TARN_ASSIGN_OR_RETURN(shape, ReadBatchShape(*built, [&](std::string m) {
                                return where.Error(".build_config.input_shape", std::move(m));
                              }));
      }
      input.shape = shape;
      if (depth == 0) TARN_RETURN_IF_ERROR(SetInputRole(Json::object(), true, where, &input));
      out.inputs.push_back(input.name);
      calls = {{input.name}};
      out.layers.push_back(std::move(input));
      out.entries.push_back(nullptr);
    }
    TARN_RETURN_IF_ERROR(ReadLayerConfig(reader, &layer));
    TARN_RETURN_IF_ERROR(reader.Finish());
    if (layer.kind == KerasLayerKind::kInput) {
      TARN_ASSIGN_OR_RETURN(layer.shape, ReadInputShape(*layer_config, where));
      // A nested model's inputs are the values it is called on.
      if (depth == 0) {
        TARN_RETURN_IF_ERROR(SetInputRole(*layer_config, out.sequential, where, &layer));
      }
      if (out.sequential && i != 0) {
        return where.Error("", "an InputLayer that is not the first layer");
      }
      if (out.sequential) out.inputs.push_back(layer.name);
      previous = layer.name;
      out.layers.push_back(std::move(layer));
      out.entries.push_back(&entry);
      continue;
    }
    if (calls.empty()) calls.emplace_back();  // called on nothing: refused with its shape
    for (size_t c = 0; c < calls.size(); ++c) {
      KerasLayer call = layer;
      call.name = CallName(layer.name, static_cast<int>(c));
      call.inputs = calls[c];
      if (c > 0 && HasWeights(layer.kind)) call.shares = layer.name;
      out.layers.push_back(std::move(call));
      out.entries.push_back(c == 0 ? &entry : nullptr);
    }
    previous = layer.name;
  }

  if (out.sequential) {
    out.output = previous;
    return out;
  }
  for (const char* key : {"input_layers", "output_layers"}) {
    const std::string field = std::string("config.") + key;
    const Json* v = data::JsonFind(config, key);
    if (!v) return model_error(field, "missing");
    TARN_ASSIGN_OR_RETURN(auto refs, ReadEndpoints(*v, file, path + field));
    if (key[0] == 'o') {
      if (refs.size() != 1) {
        return model_error(field, "the model has " + std::to_string(refs.size()) +
                                      " outputs; tarn trains one score");
      }
      out.output = refs[0];
      continue;
    }
    for (const auto& n : refs) {
      auto it = std::find_if(out.layers.begin(), out.layers.end(),
                             [&](const KerasLayer& l) { return l.name == n; });
      if (it == out.layers.end()) return model_error(field, "no layer '" + n + "'");
      if (it->kind != KerasLayerKind::kInput) {
        return model_error(field, "'" + n + "' is not an InputLayer");
      }
    }
    out.inputs = refs;
  }
  for (const auto& l : out.layers) {
    if (l.kind == KerasLayerKind::kInput &&
        std::find(out.inputs.begin(), out.inputs.end(), l.name) == out.inputs.end()) {
      return model_error(l.path.substr(path.size()),
                         "InputLayer '" + l.name + "' is not among config.input_layers");
    }
  }
  return out;
}

const char* InputRoleName(KerasInputRole role) {
  switch (role) {
    case KerasInputRole::kNumeric:
      return "numeric";
    case KerasInputRole::kCategoryText:
      return "text";
    case KerasInputRole::kCategoryIds:
      break;
  }
  return "ids";
}

}  // namespace

const char* KerasLayerKindName(KerasLayerKind kind) {
  switch (kind) {
    case KerasLayerKind::kInput:
      return "input";
    case KerasLayerKind::kEmbedding:
      return "embedding";
    case KerasLayerKind::kDense:
      return "dense";
    case KerasLayerKind::kConcatenate:
      return "concatenate";
    case KerasLayerKind::kAdd:
      return "add";
    case KerasLayerKind::kMultiply:
      return "multiply";
    case KerasLayerKind::kDot:
      return "dot";
    case KerasLayerKind::kFlatten:
      return "flatten";
    case KerasLayerKind::kReshape:
      return "reshape";
    case KerasLayerKind::kDropout:
      return "dropout";
    case KerasLayerKind::kBatchNormalization:
      return "batch_normalization";
    case KerasLayerKind::kActivation:
      return "activation";
    case KerasLayerKind::kHashing:
      return "hashing";
  }
  return "?";
}

const KerasLayer* KerasModel::Find(const std::string& layer_name) const {
  for (const auto& l : layers)
    if (l.name == layer_name) return &l;
  return nullptr;
}

std::vector<std::pair<std::string, data::KerasHashing>> KerasModel::HashedTextInputs() const {
  std::vector<std::pair<std::string, data::KerasHashing>> out;
  for (const auto& l : layers) {
    if (l.kind == KerasLayerKind::kInput && l.role == KerasInputRole::kCategoryText) {
      out.emplace_back(l.name, l.hashing);
    }
  }
  return out;
}

Result<KerasModel> ParseKerasModel(const Json& json, const std::string& file) {
  auto top_error = [&](const std::string& path, const std::string& m) {
    return Unsupported(file + ": " + path + ": " + m);
  };
  if (!json.is_object()) return top_error("(top)", "expected the JSON object of model.to_json()");
  KerasModel model;
  model.file = file;
  std::string cls = ObjectClass(json);
  if (cls == "Model") cls = "Functional";  // tf.keras before 2.4
  if (cls != "Functional" && cls != "Sequential") {
    return top_error("class_name", "model class '" + cls +
                                       "' is not supported: tarn reads Functional and Sequential "
                                       "models (a subclassed model's JSON has no layer graph)");
  }
  model.model_class = cls;
  if (const Json* v = data::JsonFind(json, "keras_version"); v && v->is_string()) {
    model.keras_version = v->get<std::string>();
  }
  if (const Json* n = data::JsonFind(ObjectConfig(json), "name"); n && n->is_string()) {
    model.name = n->get<std::string>();
  }
  // Keras 2 is told apart by its version, or by what only it writes.
  model.keras_major = model.keras_version.rfind("2.", 0) == 0 ? 2 : 3;
  if (model.keras_version.empty() && !data::JsonFind(json, "module")) model.keras_major = 2;

  TARN_ASSIGN_OR_RETURN(FlatModel flat, ReadModelLayers(json, file, "", model.keras_major, 0));
  model.layers = std::move(flat.layers);
  model.inputs = std::move(flat.inputs);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const KerasLayer& l = model.layers[i];
    if (!index.emplace(l.name, i).second) {
      return top_error(l.path, "a second layer is named '" + l.name + "'");
    }
  }
  // A value is a layer's, or an alias's chain ends at one.
  auto resolve = [&](std::string name, const std::string& who) -> Result<std::string> {
    for (size_t hops = 0; hops <= flat.alias.size(); ++hops) {
      if (index.count(name)) return name;
      auto it = flat.alias.find(name);
      if (it == flat.alias.end()) break;
      name = it->second;
    }
    return Unsupported(file + ": " + who + ": input '" + name + "' is no layer of the model");
  };
  for (KerasLayer& l : model.layers) {
    for (auto& in : l.inputs) {
      TARN_ASSIGN_OR_RETURN(in, resolve(in, l.path + " (" + l.class_name + " '" + l.name + "')"));
    }
  }
  TARN_ASSIGN_OR_RETURN(model.output, resolve(flat.output, "config.output_layers"));

  TARN_ASSIGN_OR_RETURN(auto order, TopologicalOrder(model.layers, index, file));
  std::vector<KerasLayer> sorted;
  std::vector<const Json*> entries;
  for (size_t i : order) {
    sorted.push_back(std::move(model.layers[i]));
    entries.push_back(flat.entries[i]);
  }
  model.layers = std::move(sorted);

  // A shared layer's calls use one set of weights, owned by the call that
  // comes first in this order (the graph lists an owner before its sharers).
  std::map<std::string, std::string> owner;  // Keras' first call -> the first call in order
  for (KerasLayer& l : model.layers) {
    if (!HasWeights(l.kind)) continue;
    const std::string group = l.shares.empty() ? l.name : l.shares;
    auto [it, first] = owner.emplace(group, l.name);
    l.shares = first ? "" : it->second;
  }
  for (const KerasLayer& l : model.layers) {
    if (l.shares.empty() || l.kind == KerasLayerKind::kDense) continue;
    LayerWhere where{file, l.path, l.class_name, l.name};
    return where.Error("", l.kind == KerasLayerKind::kEmbedding
                               ? "an Embedding called more than once (shared with '" + l.shares +
                                     "') is not supported: each of tarn's tables belongs to "
                                     "one ids input"
                               : "a BatchNormalization called more than once (shared with '" +
                                     l.shares +
                                     "') is not supported: it would keep one moving mean "
                                     "and variance for several tensors");
  }

  std::map<std::string, KerasLayer*> done;
  std::map<std::string, std::string> text_hashed;  // text input -> the first Hashing of it
  for (size_t i = 0; i < model.layers.size(); ++i) {
    KerasLayer& layer = model.layers[i];
    LayerWhere where{file, layer.path, layer.class_name, layer.name};
    std::vector<KerasLayer*> ins;
    for (const auto& n : layer.inputs) ins.push_back(done.at(n));
    // Category ids (an int input's, a Hashing layer's bins) are looked up,
    // never computed on; a column's text is only hashed.
    const bool embedding = layer.kind == KerasLayerKind::kEmbedding;
    const bool hashing = layer.kind == KerasLayerKind::kHashing;
    for (KerasLayer* in : ins) {
      const bool text =
          in->kind == KerasLayerKind::kInput && in->role == KerasInputRole::kCategoryText;
      const bool ids =
          (in->kind == KerasLayerKind::kInput && in->role == KerasInputRole::kCategoryIds) ||
          in->kind == KerasLayerKind::kHashing;
      if (hashing != text) {
        return where.Error("", hashing ? "hashes '" + in->name +
                                             "', which is not a categorical text input (an Input "
                                             "of shape (1,), string, named after the column)"
                                       : "takes the text of input '" + in->name +
                                             "': a column's text feeds Hashing layers only");
      }
      if (ids && !embedding) {
        return where.Error(
            "", "takes the category ids of '" + in->name + "': ids feed Embedding layers only");
      }
      if (embedding && !ids) {
        return where.Error("", "embeds '" + in->name +
                                   "', which is not a categorical input (an Input of shape (1,), "
                                   "int, named after the column, or a Hashing layer)");
      }
      if (text) {
        // The column gets one id per row: every Hashing of it must agree.
        auto [first, is_first] = text_hashed.emplace(in->name, layer.name);
        if (is_first) {
          in->hashing = layer.hashing;
        } else if (!(in->hashing == layer.hashing)) {
          return where.Error(".config", "hashes input '" + in->name +
                                            "' with other options than '" + first->second +
                                            "' (tarn gives a column one id per row)");
        }
      }
    }
    TARN_RETURN_IF_ERROR(
        InferShape(std::vector<const KerasLayer*>(ins.begin(), ins.end()), where, &layer));
    if (Product(layer.shape) > kMaxSize) {
      return where.Error("", "its output " + ShapeText(layer.shape) + " is too large");
    }
    if (ins.size() == 1 && entries[i]) {
      TARN_RETURN_IF_ERROR(CheckBuildConfig(*entries[i], ins[0]->shape, where));
    }
    done[layer.name] = &layer;
  }
  for (const KerasLayer& l : model.layers) {
    if (l.kind == KerasLayerKind::kInput && l.role == KerasInputRole::kCategoryText &&
        !text_hashed.count(l.name)) {
      return LayerWhere{file, l.path, l.class_name, l.name}.Error(
          "",
          "the string input feeds no Hashing layer (tarn reads a column's text only to hash it)");
    }
  }
  return model;
}

Result<KerasModel> ReadKerasModel(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::parse_error& e) {
    return InvalidArgument(path + ": not JSON (" + std::string(e.what()) + ")");
  }
  return ParseKerasModel(json, path);
}

Result<std::vector<int>> KerasGraphWidths(const KerasModel& model) {
  std::vector<int> widths;
  std::map<std::string, int> width_of;
  for (const auto& layer : model.layers) {
    LayerWhere where{model.file, layer.path, layer.class_name, layer.name};
    int big_dims = 0;
    for (int d : layer.shape) big_dims += d > 1 ? 1 : 0;
    if (big_dims > 1) {
      return where.Error("", "its output " + ShapeText(layer.shape) +
                                 " does not reduce to (batch, width): tarn's layer graph runs on "
                                 "2-D tensors (Flatten it first)");
    }
    // Dense and BatchNormalization act on the last axis: the width must lie there.
    const KerasLayer* in = layer.inputs.empty() ? nullptr : model.Find(layer.inputs[0]);
    bool last_axis_op =
        layer.kind == KerasLayerKind::kDense || layer.kind == KerasLayerKind::kBatchNormalization;
    if (last_axis_op && in && in->shape.back() != Product(in->shape)) {
      return where.Error("", "its input " + ShapeText(in->shape) +
                                 " is not laid along the last axis, which it acts on");
    }
    if (layer.kind == KerasLayerKind::kDot) {
      const KerasLayer* b = model.Find(layer.inputs[1]);
      if (in->shape[layer.dot_axes[0] - 1] != Product(in->shape) ||
          b->shape[layer.dot_axes[1] - 1] != Product(b->shape)) {
        return where.Error(".config.axes",
                           "tarn's dot is the inner product of two widths; "
                           "these axes contract something else");
      }
    }
    widths.push_back(Product(layer.shape));
    width_of[layer.name] = widths.back();
  }
  if (width_of.at(model.output) != 1) {
    const KerasLayer* out = model.Find(model.output);
    LayerWhere where{model.file, out->path, out->class_name, out->name};
    return where.Error("", "the output has width " + std::to_string(width_of.at(model.output)) +
                               "; tarn trains one score (width 1)");
  }
  return widths;
}

Json KerasModel::Describe(const std::vector<int>& widths) const {
  Json j;
  j["file"] = file;
  j["class"] = model_class;
  j["name"] = name;
  j["kerasVersion"] = keras_version;
  j["kerasMajor"] = keras_major;
  Json ins = Json::array();
  for (const auto& n : inputs) {
    const KerasLayer* l = Find(n);
    ins.push_back(
        {{"name", n}, {"role", InputRoleName(l->role)}, {"dtype", l->dtype}, {"shape", l->shape}});
  }
  j["inputs"] = ins;
  j["output"] = output;
  Json out = Json::array();
  for (size_t i = 0; i < layers.size(); ++i) {
    const KerasLayer& l = layers[i];
    Json e = {{"name", l.name}, {"class", l.class_name}, {"kind", KerasLayerKindName(l.kind)},
              {"path", l.path}, {"inputs", l.inputs},    {"shape", l.shape}};
    if (i < widths.size()) e["width"] = widths[i];
    if (!l.shares.empty()) e["shares"] = l.shares;
    switch (l.kind) {
      case KerasLayerKind::kInput:
        e["role"] = InputRoleName(l.role);
        break;
      case KerasLayerKind::kHashing:
        data::PutKerasHashingJson(l.hashing, e);
        break;
      case KerasLayerKind::kDense:
        e["units"] = l.units;
        e["activation"] = ActivationName(l.activation);
        e["useBias"] = l.use_bias;
        e["initializer"] = InitializerName(l.initializer);
        e["l1"] = l.regularizer.l1;
        e["l2"] = l.regularizer.l2;
        break;
      case KerasLayerKind::kEmbedding:
        e["inputDim"] = l.input_dim;
        e["outputDim"] = l.units;
        e["initializer"] = InitializerName(l.initializer);
        e["l1"] = l.regularizer.l1;
        e["l2"] = l.regularizer.l2;
        break;
      case KerasLayerKind::kConcatenate:
        e["axis"] = l.axis;
        break;
      case KerasLayerKind::kDot:
        e["axes"] = {l.dot_axes[0], l.dot_axes[1]};
        break;
      case KerasLayerKind::kReshape:
        e["targetShape"] = l.target_shape;
        break;
      case KerasLayerKind::kDropout:
        e["rate"] = l.rate;
        break;
      case KerasLayerKind::kBatchNormalization:
        e["axis"] = l.axis;
        e["momentum"] = l.momentum;
        e["epsilon"] = l.epsilon;
        break;
      case KerasLayerKind::kActivation:
        e["activation"] = ActivationName(l.activation);
        break;
      default:
        break;
    }
    out.push_back(std::move(e));
  }
  j["layers"] = out;
  return j;
}

}  // namespace tarn::model
