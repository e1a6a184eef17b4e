#include "model/train_params.h"

#include <algorithm>

#include "common/strings.h"

namespace tarn::model {
namespace {

using data::Json;

std::string Key(std::string_view name) { return "train.params." + std::string(name); }

// Accessors for values Check() accepted.
double NumberOf(const Json& v) {
  double d = 0;
  data::JsonAsDouble(v, &d);
  return d;
}
int IntOf(const Json& v) {
  int i = 0;
  data::JsonAsInt(v, &i);
  return i;
}
// A string, or a list of one string.
std::string StringOf(const Json& v) {
  return v.is_string() ? v.get<std::string>() : v[0].get<std::string>();
}
// A list, or a single value taken as a list of one.
Json ListOf(const Json& v) { return v.is_array() ? v : Json::array({v}); }

bool BoolOf(const Json& v, bool* out) {
  if (v.is_boolean()) {
    *out = v.get<bool>();
    return true;
  }
  if (v.is_string() && (EqualsIgnoreCase(v.get<std::string>(), "true") ||
                        EqualsIgnoreCase(v.get<std::string>(), "false"))) {
    *out = EqualsIgnoreCase(v.get<std::string>(), "true");
    return true;
  }
  return false;
}

bool InBound(double v, TrainParamBound b) {
  switch (b) {
    case TrainParamBound::kAny:
      return true;
    case TrainParamBound::kPositive:
      return v > 0;
    case TrainParamBound::kNonNegative:
      return v >= 0;
    case TrainParamBound::kUnitInterval:
      return v >= 0 && v < 1;
  }
  return false;
}

const char* BoundText(TrainParamBound b) {
  switch (b) {
    case TrainParamBound::kAny:
      return "";
    case TrainParamBound::kPositive:
      return "> 0";
    case TrainParamBound::kNonNegative:
      return ">= 0";
    case TrainParamBound::kUnitInterval:
      return "[0, 1)";
  }
  return "";
}

// "a positive integer", "a number in [0, 1)", "a list of positive integers", ...
std::string Expected(const TrainParamDecl& d) {
  const bool whole = d.type == TrainParamType::kInt || d.type == TrainParamType::kIntList;
  std::string noun = whole ? "integer" : "number";
  std::string adjective;
  switch (d.bound) {
    case TrainParamBound::kPositive:
      adjective = "positive ";
      break;
    case TrainParamBound::kNonNegative:
      adjective = "non-negative ";
      break;
    case TrainParamBound::kUnitInterval:
      noun += " in [0, 1)";
      break;
    case TrainParamBound::kAny:
      break;
  }
  switch (d.type) {
    case TrainParamType::kInt:
    case TrainParamType::kNumber: {
      const std::string phrase = adjective + noun;
      return (phrase[0] == 'i' ? "an " : "a ") + phrase;
    }
    case TrainParamType::kIntList:
      return "a list of " + adjective + noun + "s";
    case TrainParamType::kBool:
      return "true or false";
    case TrainParamType::kString:
      return "a string";
    case TrainParamType::kStringList:
      return "a string or a list of strings";
    case TrainParamType::kColumnList:
      return "a list of columnNums or column names";
  }
  return "";
}

const char* TypeText(TrainParamType t) {
  switch (t) {
    case TrainParamType::kInt:
      return "integer";
    case TrainParamType::kNumber:
      return "number";
    case TrainParamType::kBool:
      return "boolean";
    case TrainParamType::kString:
      return "string";
    case TrainParamType::kIntList:
      return "list of integers";
    case TrainParamType::kStringList:
      return "list of strings";
    case TrainParamType::kColumnList:
      return "list of columnNums or names";
  }
  return "";
}

// The type and bounds of `v` against the declaration.
Status Check(const TrainParamDecl& d, const Json& v) {
  bool ok = true;
  auto number_ok = [&](const Json& e) {
    double x = 0;
    int i = 0;
    const bool typed = d.type == TrainParamType::kInt || d.type == TrainParamType::kIntList
                           ? data::JsonAsInt(e, &i) && (x = i, true)
                           : data::JsonAsDouble(e, &x);
    return typed && InBound(x, d.bound);
  };
  switch (d.type) {
    case TrainParamType::kInt:
    case TrainParamType::kNumber:
      ok = number_ok(v);
      break;
    case TrainParamType::kIntList:
      for (const auto& e : ListOf(v)) ok = ok && number_ok(e);
      break;
    case TrainParamType::kBool: {
      bool b = false;
      ok = BoolOf(v, &b);
      break;
    }
    case TrainParamType::kString:
      ok = v.is_string() || (v.is_array() && v.size() == 1 && v[0].is_string());
      break;
    case TrainParamType::kStringList:
      for (const auto& e : ListOf(v)) ok = ok && e.is_string();
      break;
    case TrainParamType::kColumnList: {
      int i = 0;
      ok = v.is_array();
      for (const auto& e : ListOf(v))
        ok = ok && (e.is_string() || (data::JsonAsInt(e, &i) && i >= 0));
      break;
    }
  }
  if (!ok) return InvalidArgument(Key(d.name) + " must be " + Expected(d) + ", got " + v.dump());
  return Status::Ok();
}

template <typename T>
Status Assign(Result<T> r, T* out) {
  if (!r.ok()) return r.status();
  *out = *r;
  return Status::Ok();
}

Status StoreRegularization(const Json& v, TrainParams* p) {
  const std::string s = ToLower(StringOf(v));
  if (s == "none") {
    p->regularization = OptimizerConfig::Reg::kNone;
  } else if (s == "l1") {
    p->regularization = OptimizerConfig::Reg::kL1;
  } else if (s == "l2") {
    p->regularization = OptimizerConfig::Reg::kL2;
  } else {
    return InvalidArgument(Key("L1orL2") + " must be one of NONE, L1, L2, got " + v.dump());
  }
  return Status::Ok();
}

constexpr unsigned kGraphAlgorithms = kReadByWDL | kReadByDeepFM | kReadByDCN;
constexpr unsigned kNeural = kReadByNN | kReadByTensorFlow | kGraphAlgorithms;
constexpr unsigned kEvery = kReadByNN | kReadByLR | kReadByTensorFlow | kGraphAlgorithms;

// Stores a boolean Check() accepted.
bool BoolValue(const Json& v) {
  bool b = false;
  BoolOf(v, &b);
  return b;
}

// Every key of train#params that tarn or Shifu reads for NN, LR, TensorFlow and the graph
// models. Shifu's own readers: NNMaster / AbstractNNWorker / NNOutput (NN),
// LogisticRegressionMaster (LR), TensorflowTrainer and its Python scripts (TensorFlow),
// WDLMaster / WDLWorker / WideAndDeep (WDL), ModelInspector (checks), and ModelTrainConf (the
// defaults `shifu new` writes). DeepFM, DCN and ModelGraph are tarn's, in the same style.
const std::vector<TrainParamDecl> kDecls = {
    {"NumHiddenLayers", TrainParamType::kInt, "1", TrainParamBound::kNonNegative, kNeural, true,
     "hidden dense layers (LR has none)",
     [](const Json& v, TrainParams* p) {
       p->hidden_layers = IntOf(v);
       return Status::Ok();
     }},
    {"NumHiddenNodes", TrainParamType::kIntList, "", TrainParamBound::kPositive, kNeural, true,
     "units of each hidden layer, one per layer; required when NumHiddenLayers > 0",
     [](const Json& v, TrainParams* p) {
       p->hidden_nodes.clear();
       for (const auto& e : ListOf(v)) p->hidden_nodes.push_back(IntOf(e));
       return Status::Ok();
     }},
    {"ActivationFunc", TrainParamType::kStringList, "[\"tanh\"]", TrainParamBound::kAny, kNeural,
     true,
     "per hidden layer: tanh, sigmoid, relu, leakyrelu (slope 0.01), swish, linear (Shifu's "
     "spellings accepted); one value serves every layer",
     [](const Json& v, TrainParams* p) {
       p->hidden_activations.clear();
       for (const auto& e : ListOf(v)) {
         Activation a{};
         TARN_RETURN_IF_ERROR(Assign(ParseActivation(e.get<std::string>()), &a));
         p->hidden_activations.push_back(a);
       }
       return Status::Ok();
     }},
    {"OutputActivationFunc", TrainParamType::kString, "\"sigmoid\"", TrainParamBound::kAny, kEvery,
     true, "the output unit's activation (the names of ActivationFunc)",
     [](const Json& v, TrainParams* p) {
       return Assign(ParseActivation(StringOf(v)), &p->output_activation);
     }},
    {"Loss", TrainParamType::kString, "", TrainParamBound::kAny, kEvery, true,
     "the loss tarn trains: log (entropy), squared, absolute; log when absent (TensorFlow: "
     "TF.loss first). Shifu's printed Training/Validation Error is this loss's error, squared "
     "when absent",
     [](const Json& v, TrainParams* p) {
       LossKind k{};
       TARN_RETURN_IF_ERROR(Assign(ParseLoss(StringOf(v)), &k));
       p->loss = k;
       return Status::Ok();
     }},
    {"TF.loss", TrainParamType::kString, "", TrainParamBound::kAny, kReadByTensorFlow, true,
     "the loss when Loss is absent, as Shifu's TensorFlow trainer reads it",
     [](const Json& v, TrainParams* p) {
       LossKind k{};
       TARN_RETURN_IF_ERROR(Assign(ParseLoss(StringOf(v)), &k));
       p->tf_loss = k;
       return Status::Ok();
     }},
    {"DropoutRate", TrainParamType::kNumber, "0", TrainParamBound::kUnitInterval, kNeural, true,
     "inverted dropout on the hidden layers while training; the inputs get 0.4 x the rate, as "
     "Shifu",
     [](const Json& v, TrainParams* p) {
       p->dropout_rate = NumberOf(v);
       return Status::Ok();
     }},
    {"WeightInitializer", TrainParamType::kString, "\"xavier\"", TrainParamBound::kAny, kEvery,
     true,
     "xavier (also Shifu's default), he, lecun, gaussian, uniform; biases start at 0; an empty "
     "string keeps the default",
     [](const Json& v, TrainParams* p) {
       const std::string name = StringOf(v);
       if (name.empty()) return Status::Ok();
       return Assign(ParseInitializer(name), &p->weight_initializer);
     }},
    {"Propagation", TrainParamType::kString, "\"Adam\"", TrainParamBound::kAny, kEvery, true,
     "the optimizer: Adam, B (SGD), Momentum, Nesterov, AdaGrad, RMSProp, M (Manhattan); R "
     "(resilient) and Q (quickprop) on the full batch",
     [](const Json& v, TrainParams* p) {
       return Assign(ParsePropagation(StringOf(v)), &p->propagation);
     }},
    {"LearningRate", TrainParamType::kNumber, "0.002", TrainParamBound::kPositive, kEvery, true,
     "the learning rate (R does not use it)",
     [](const Json& v, TrainParams* p) {
       p->learning_rate = NumberOf(v);
       return Status::Ok();
     }},
    {"LearningDecay", TrainParamType::kNumber, "0", TrainParamBound::kUnitInterval, kEvery, true,
     "the rate of 0-based epoch e is LearningRate x (1 - decay)^e, as Shifu",
     [](const Json& v, TrainParams* p) {
       p->learning_decay = NumberOf(v);
       return Status::Ok();
     }},
    {"Momentum", TrainParamType::kNumber, "0.5", TrainParamBound::kUnitInterval, kEvery, true,
     "momentum of B, Momentum and Nesterov",
     [](const Json& v, TrainParams* p) {
       p->momentum = NumberOf(v);
       return Status::Ok();
     }},
    {"AdamBeta1", TrainParamType::kNumber, "0.9", TrainParamBound::kUnitInterval, kEvery, true,
     "Adam's first-moment decay",
     [](const Json& v, TrainParams* p) {
       p->adam_beta1 = NumberOf(v);
       return Status::Ok();
     }},
    {"AdamBeta2", TrainParamType::kNumber, "0.999", TrainParamBound::kUnitInterval, kEvery, true,
     "Adam's second-moment decay",
     [](const Json& v, TrainParams* p) {
       p->adam_beta2 = NumberOf(v);
       return Status::Ok();
     }},
    {"RegularizedConstant", TrainParamType::kNumber, "0", TrainParamBound::kNonNegative, kEvery,
     true, "regularization strength on the weights (never the biases); 0 turns it off",
     [](const Json& v, TrainParams* p) {
       p->regularized_constant = NumberOf(v);
       return Status::Ok();
     }},
    {"L1orL2", TrainParamType::kString, "\"L2\"", TrainParamBound::kAny, kEvery, true,
     "NONE, L1 or L2: which penalty RegularizedConstant scales", StoreRegularization},
    {"MiniBatchs", TrainParamType::kInt, "128", TrainParamBound::kPositive, kEvery, true,
     "rows per mini-batch, as Shifu's TensorFlow trainer reads it (Shifu's NN reads it as the "
     "number of mini-batches per epoch); R and Q use the full batch",
     [](const Json& v, TrainParams* p) {
       p->mini_batch_rows = IntOf(v);
       return Status::Ok();
     }},
    {"CheckpointInterval", TrainParamType::kInt, "0", TrainParamBound::kNonNegative, kEvery, true,
     "LOCAL training writes a checkpoint every N epochs and at the end (0: at the end only); "
     "DIST checkpoints after every epoch",
     [](const Json& v, TrainParams* p) {
       p->checkpoint_interval = IntOf(v);
       return Status::Ok();
     }},
    // The graph models (docs/TRAINING.md, "Training graph models").
    {"NumEmbedColumnIds", TrainParamType::kColumnList, "", TrainParamBound::kAny, kGraphAlgorithms,
     true,
     "the categorical columns the deep part embeds (columnNums, as Shifu, or names); absent: "
     "every categorical input with ids",
     [](const Json& v, TrainParams* p) {
       p->graph.embed_columns = std::vector<Json>(v.begin(), v.end());
       return Status::Ok();
     }},
    {"NumEmbedOuputs", TrainParamType::kInt, "8", TrainParamBound::kPositive, kGraphAlgorithms,
     true, "the width of every embedding (Shifu's spelling, sic)",
     [](const Json& v, TrainParams* p) {
       p->graph.embed_outputs = IntOf(v);
       return Status::Ok();
     }},
    {"wideEnable", TrainParamType::kBool, "true", TrainParamBound::kAny, kReadByWDL, true,
     "WDL: the wide part (one weight per category of every categorical input)",
     [](const Json& v, TrainParams* p) {
       p->graph.wide = BoolValue(v);
       return Status::Ok();
     }},
    {"deepEnable", TrainParamType::kBool, "true", TrainParamBound::kAny, kReadByWDL, true,
     "WDL: the deep part (numeric inputs and embeddings through the hidden layers)",
     [](const Json& v, TrainParams* p) {
       p->graph.deep = BoolValue(v);
       return Status::Ok();
     }},
    {"embedEnable", TrainParamType::kBool, "true", TrainParamBound::kAny, kReadByWDL, true,
     "WDL: the embeddings feed the deep part",
     [](const Json& v, TrainParams* p) {
       p->graph.embed = BoolValue(v);
       return Status::Ok();
     }},
    {"wideDenseEnable", TrainParamType::kBool, "true", TrainParamBound::kAny, kReadByWDL, true,
     "WDL: the numeric inputs feed the wide part too",
     [](const Json& v, TrainParams* p) {
       p->graph.wide_dense = BoolValue(v);
       return Status::Ok();
     }},
    {"L2Reg", TrainParamType::kNumber, "", TrainParamBound::kNonNegative, kGraphAlgorithms, true,
     "L2 strength on the dense weights (tables are not regularized); replaces RegularizedConstant",
     [](const Json& v, TrainParams* p) {
       p->graph.l2 = NumberOf(v);
       return Status::Ok();
     }},
    {"NumCrossLayers", TrainParamType::kInt, "3", TrainParamBound::kPositive, kReadByDCN, true,
     "DCN: cross layers beside the hidden layers",
     [](const Json& v, TrainParams* p) {
       p->graph.cross_layers = IntOf(v);
       return Status::Ok();
     }},
    {"ModelGraph", TrainParamType::kString, "", TrainParamBound::kAny, kEvery, true,
     "NN and TensorFlow: a Keras model.to_json() file (relative to the model set) that defines "
     "the whole network; the hidden-layer keys are then not read (other algorithms refuse it)",
     [](const Json& v, TrainParams* p) {
       p->graph.model_graph = StringOf(v);
       if (p->graph.model_graph.empty()) {
         return InvalidArgument(Key("ModelGraph") + " must name a model.to_json() file, got " +
                                v.dump());
       }
       return Status::Ok();
     }},
    // Shifu's keys that tarn accepts and does not use.
    {"EnableEarlyStop", TrainParamType::kBool, "false", TrainParamBound::kAny,
     kReadByNN | kReadByLR, false,
     "Shifu's early stop on ValidationTolerance; tarn stops early with "
     "-Dtarn.train.early-stop-patience=N",
     nullptr},
    {"ValidationTolerance", TrainParamType::kNumber, "", TrainParamBound::kAny,
     kReadByNN | kReadByLR, false, "Shifu's tolerance for EnableEarlyStop", nullptr},
    {"FixedLayers", TrainParamType::kIntList, "", TrainParamBound::kAny, kReadByNN, false,
     "Shifu's layers whose weights stay fixed while fine-tuning", nullptr},
    {"FixedBias", TrainParamType::kBool, "true", TrainParamBound::kAny, kReadByNN, false,
     "Shifu's: whether FixedLayers also fixes their biases", nullptr},
    {"TF.alg", TrainParamType::kString, "", TrainParamBound::kAny, kReadByTensorFlow, false,
     "Shifu's TensorFlow model type (DNN); tarn builds the network from the keys above", nullptr},
    {"TF.optimizer", TrainParamType::kString, "", TrainParamBound::kAny, kReadByTensorFlow, false,
     "Shifu's TensorFlow optimizer; tarn's is Propagation", nullptr},
    // Which Python script of Shifu's trains: tarn reads these where it decides whether that
    // script or its native engine runs (pipeline/shifu_tensorflow.h), not into TrainParams.
    {"TF_type", TrainParamType::kString, "", TrainParamBound::kAny, kReadByTensorFlow, true,
     "the shifu-tensorflow script in the model set: keras (the default) "
     "distributed_tf_keras.py, tensor distributed_tf_tensor.py, estimator, keras_to_estimator "
     "(docs/TRAINING.md, 'shifu-tensorflow scripts')",
     [](const Json&, TrainParams*) { return Status::Ok(); }},
    {"TF_Type", TrainParamType::kString, "", TrainParamBound::kAny, kReadByTensorFlow, true,
     "TF_type as Shifu's docs spell it (Shifu's code reads TF_type; tarn reads both)",
     [](const Json&, TrainParams*) { return Status::Ok(); }},
    {"TF.version", TrainParamType::kString, "", TrainParamBound::kAny, kReadByTensorFlow, true,
     "\"2.0\" names Shifu's TensorFlow 2 scripts (distributed_tf20_keras.py)",
     [](const Json&, TrainParams*) { return Status::Ok(); }},
};

unsigned AlgorithmBit(Algorithm a) {
  switch (a) {
    case Algorithm::kNN:
      return kReadByNN;
    case Algorithm::kLR:
      return kReadByLR;
    case Algorithm::kTensorFlow:
      return kReadByTensorFlow;
    case Algorithm::kWDL:
      return kReadByWDL;
    case Algorithm::kDeepFM:
      return kReadByDeepFM;
    case Algorithm::kDCN:
      return kReadByDCN;
  }
  return 0;
}

std::string ReadersText(unsigned bits) {
  std::vector<std::string> names;
  for (Algorithm a : {Algorithm::kNN, Algorithm::kLR, Algorithm::kTensorFlow, Algorithm::kWDL,
                      Algorithm::kDeepFM, Algorithm::kDCN}) {
    if (bits & AlgorithmBit(a)) names.push_back(AlgorithmName(a));
  }
  return Join(names, ", ");
}

std::string UnknownKeyWarning(const std::string& key) {
  std::string message = "unknown key '" + Key(key) + "' is ignored";
  std::vector<std::string> names;
  for (const auto& d : kDecls) names.push_back(d.name);
  auto [closest, distance] = ClosestName(key, names);
  // Close enough to be a typo: a few edits, fewer than a quarter of the name.
  if (distance <= std::max<size_t>(2, key.size() / 4)) {
    return message + "; did you mean " + closest + "?";
  }
  return message + " (the closest key is " + closest + "; docs/TRAINING.md lists them all)";
}

// NumHiddenNodes, and ActivationFunc's count, against NumHiddenLayers (already read).
Status ReadHiddenLayers(const Json& params, TrainParams* p) {
  if (p->hidden_layers == 0) {
    p->hidden_activations.clear();
    return Status::Ok();
  }
  const std::string count = "NumHiddenLayers (" + std::to_string(p->hidden_layers) + ")";
  const Json* nodes = params.is_object() ? data::JsonFind(params, "NumHiddenNodes") : nullptr;
  if (!nodes || nodes->is_null()) {
    return InvalidArgument(Key("NumHiddenNodes") + " must list " + count +
                           " positive integers, but it is missing");
  }
  const TrainParamDecl& decl = *FindTrainParam("NumHiddenNodes");
  if (!Check(decl, *nodes).ok() || ListOf(*nodes).size() != static_cast<size_t>(p->hidden_layers)) {
    return InvalidArgument(Key("NumHiddenNodes") + " must list " + count +
                           " positive integers, got " + nodes->dump());
  }
  TARN_RETURN_IF_ERROR(decl.store(*nodes, p));
  const size_t acts = p->hidden_activations.size();
  if (acts == 1) {
    p->hidden_activations.assign(static_cast<size_t>(p->hidden_layers), p->hidden_activations[0]);
  } else if (acts != static_cast<size_t>(p->hidden_layers)) {
    return InvalidArgument(Key("ActivationFunc") + " must list one activation or " + count +
                           " activations, got " + data::JsonFind(params, "ActivationFunc")->dump());
  }
  return Status::Ok();
}

}  // namespace

Result<Algorithm> ParseAlgorithm(std::string_view name) {
  const std::string lower = ToLower(name);
  if (lower == "nn") return Algorithm::kNN;
  if (lower == "lr") return Algorithm::kLR;
  if (lower == "tensorflow") return Algorithm::kTensorFlow;
  if (lower == "wdl") return Algorithm::kWDL;
  if (lower == "deepfm") return Algorithm::kDeepFM;
  if (lower == "dcn") return Algorithm::kDCN;
  return Unsupported("train.algorithm " + std::string(name) +
                     " is not a neural network (expected NN, LR, TensorFlow, WDL, DeepFM or DCN)");
}

const char* AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kNN:
      return "NN";
    case Algorithm::kLR:
      return "LR";
    case Algorithm::kTensorFlow:
      return "TensorFlow";
    case Algorithm::kWDL:
      return "WDL";
    case Algorithm::kDeepFM:
      return "DeepFM";
    case Algorithm::kDCN:
      return "DCN";
  }
  return "?";
}

const std::vector<TrainParamDecl>& DeclaredTrainParams() { return kDecls; }

const TrainParamDecl* FindTrainParam(std::string_view name) {
  for (const auto& d : kDecls) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

LossKind TrainParams::TrainingLoss() const {
  if (loss) return *loss;
  if (tf_loss) return *tf_loss;
  return LossKind::kLog;
}

Result<TrainParams> TrainParams::Parse(const Json& params, std::string_view algorithm) {
  if (!params.is_null() && !params.is_object()) {
    return InvalidArgument("train.params must be an object, got " + params.dump());
  }
  TrainParams p;
  TARN_ASSIGN_OR_RETURN(p.algorithm, ParseAlgorithm(algorithm));
  const unsigned bit = AlgorithmBit(p.algorithm);
  for (const auto& d : kDecls) {
    if (!d.read_by_tarn || !(d.algorithms & bit) || !*d.default_json) continue;
    Status st = d.store(Json::parse(d.default_json), &p);
    if (!st.ok()) return Internal("the default of " + Key(d.name) + ": " + st.message());
  }
  const Json no_params = Json::object();
  for (const auto& [key, value] : (params.is_object() ? params : no_params).items()) {
    if (value.is_null()) continue;  // Shifu takes a null value as absent
    const TrainParamDecl* d = FindTrainParam(key);
    if (!d) {
      p.warnings.push_back(UnknownKeyWarning(key));
    } else if (!(d->algorithms & bit)) {
      p.notes.push_back(Key(key) + " is read by " + ReadersText(d->algorithms) + ", not " +
                        AlgorithmName(p.algorithm) + ": ignored");
    } else if (!d->read_by_tarn) {
      p.notes.push_back(Key(key) + " is read by Shifu's " + ReadersText(d->algorithms) +
                        ", not by tarn: ignored (" + d->doc + ")");
    } else {
      if (key == "NumHiddenNodes") continue;  // its count depends on NumHiddenLayers: below
      TARN_RETURN_IF_ERROR(Check(*d, value));
      Status st = d->store(value, &p);
      if (!st.ok()) return StartsWith(st.message(), Key(key)) ? st : st.WithContext(Key(key));
    }
  }
  if (!p.graph.model_graph.empty()) {
    // The graph file defines every layer; the hidden-layer keys are not read.
    p.hidden_layers = 0;
    p.hidden_nodes.clear();
    p.hidden_activations.clear();
  } else if (FindTrainParam("NumHiddenNodes")->algorithms & bit) {
    TARN_RETURN_IF_ERROR(ReadHiddenLayers(params, &p));
  }
  return p;
}

std::string TrainParamsMarkdown() {
  std::string out =
      "| key | type | default | bounds | read by | meaning |\n"
      "| --- | --- | --- | --- | --- | --- |\n";
  for (const auto& d : kDecls) {
    const std::string readers = d.read_by_tarn
                                    ? ReadersText(d.algorithms)
                                    : "Shifu's " + ReadersText(d.algorithms) + " (tarn ignores it)";
    const std::string default_text =
        *d.default_json ? "`" + std::string(d.default_json) + "`" : std::string("none");
    out += "| `" + std::string(d.name) + "` | " + TypeText(d.type) + " | " + default_text + " | " +
           BoundText(d.bound) + " | " + readers + " | " + d.doc + " |\n";
  }
  return out;
}

}  // namespace tarn::model
