#include "train/graph_models.h"

#include <algorithm>
#include <map>

#include "common/files.h"
#include "common/strings.h"

namespace tarn::train {

namespace {

using data::Json;
using model::GraphNode;
using model::GraphOp;

std::string Key(const char* key) { return std::string("train.params.") + key; }

GraphNode Node(std::string name, GraphOp op, std::vector<std::string> inputs) {
  GraphNode n;
  n.name = std::move(name);
  n.op = op;
  n.inputs = std::move(inputs);
  return n;
}

GraphNode DenseNode(std::string name, std::vector<std::string> inputs, int units,
                    model::Activation activation, bool use_bias = true) {
  GraphNode n = Node(std::move(name), GraphOp::kDense, std::move(inputs));
  n.units = units;
  n.activation = activation;
  n.use_bias = use_bias;
  return n;
}

// Builds WDL, DeepFM and DCN graphs node by node.
struct Builder {
  model::GraphSpec spec;
  std::map<std::string, std::string> id_input;  // column -> its ids input node

  std::string Add(GraphNode n) {
    spec.nodes.push_back(std::move(n));
    return spec.nodes.back().name;
  }
  std::string Ids(const GraphColumn& c) {
    auto it = id_input.find(c.name);
    if (it != id_input.end()) return it->second;
    GraphNode n = Node("ids_" + c.name, GraphOp::kInput, {});
    n.source = model::InputSource::kIds;
    n.column = c.name;
    return id_input[c.name] = Add(std::move(n));
  }
  std::string Embedding(const std::string& prefix, const GraphColumn& c, int units) {
    GraphNode n = Node(prefix + c.name, GraphOp::kEmbedding, {Ids(c)});
    n.vocabulary = c.id_count;
    n.units = units;
    return Add(std::move(n));
  }
  // Adds inputs when there are several; the one input itself otherwise.
  std::string Sum(const std::string& name, const std::vector<std::string>& inputs) {
    return inputs.size() == 1 ? inputs[0] : Add(Node(name, GraphOp::kAdd, inputs));
  }
  std::string Concat(const std::string& name, const std::vector<std::string>& inputs) {
    return inputs.size() == 1 ? inputs[0] : Add(Node(name, GraphOp::kConcatenate, inputs));
  }
  // The NN keys' hidden layers (with DropoutRate) over `input`; returns the last.
  std::string Hidden(const std::string& prefix, std::string input, const model::ModelSpec& nn) {
    for (size_t l = 0; l + 1 < nn.layers.size(); ++l) {
      const auto& layer = nn.layers[l];
      input =
          Add(DenseNode(prefix + std::to_string(l + 1), {input}, layer.outputs, layer.activation));
      if (layer.dropout > 0) {
        GraphNode d = Node(prefix + std::to_string(l + 1) + "_dropout", GraphOp::kDropout, {input});
        d.rate = layer.dropout;
        input = Add(std::move(d));
      }
    }
    return input;
  }
};

// The columns NumEmbedColumnIds names (by columnNum or name), or every
// categorical input with ids.
Result<std::vector<GraphColumn>> EmbedColumns(const GraphModelParams& p,
                                              const std::vector<GraphColumn>& columns,
                                              const std::vector<std::string>& model_set_columns) {
  std::vector<GraphColumn> out;
  if (!p.embed_columns) {
    for (const auto& c : columns) {
      if (c.has_ids) out.push_back(c);
    }
    return out;
  }
  for (size_t i = 0; i < p.embed_columns->size(); ++i) {
    const Json& v = (*p.embed_columns)[i];
    const std::string where = Key("NumEmbedColumnIds") + "[" + std::to_string(i) + "]";
    int num = 0;
    auto it = columns.end();
    if (v.is_string()) {
      it = std::find_if(columns.begin(), columns.end(),
                        [&](const GraphColumn& c) { return c.name == v.get<std::string>(); });
    } else if (data::JsonAsInt(v, &num)) {
      it = std::find_if(columns.begin(), columns.end(),
                        [&](const GraphColumn& c) { return c.column_num == num; });
    } else {
      return InvalidArgument(where + " must be a columnNum or a column name, got " + v.dump());
    }
    if (it == columns.end()) {
      const bool exists = v.is_string()
                              ? std::find(model_set_columns.begin(), model_set_columns.end(),
                                          v.get<std::string>()) != model_set_columns.end()
                              : num >= 0 && static_cast<size_t>(num) < model_set_columns.size();
      return InvalidArgument(where + " " + v.dump() +
                             (exists ? " is not an input column (finalSelect)"
                                     : " names no column of ColumnConfig.json"));
    }
    if (!it->has_ids) {
      return InvalidArgument(where + ": column '" + it->name +
                             "' has no category ids; embed categorical columns normalized "
                             "with an *_INDEX normalize.normType (e.g. ZSCALE_INDEX) or with "
                             "a hashSeed, and rerun 'tarn norm'");
    }
    out.push_back(*it);
  }
  return out;
}

}  // namespace

Json GraphModelToJson(const GraphModel& m) {
  return Json{{"spec", m.spec.ToJson()},
              {"l2", m.l2 ? Json(*m.l2) : Json()},
              {"unregularized", m.unregularized}};
}

Result<GraphModel> GraphModelFromJson(const Json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("spec") || !j.contains("l2") ||
      !(j["l2"].is_null() || j["l2"].is_number()) || !j.contains("unregularized") ||
      !j["unregularized"].is_array()) {
    return InvalidArgument(where + ": a graph model needs spec, l2 and unregularized");
  }
  GraphModel m;
  TARN_ASSIGN_OR_RETURN(m.spec, model::GraphSpec::FromJson(j["spec"], where + ": spec"));
  if (j["l2"].is_number()) m.l2 = j["l2"].get<double>();
  for (const auto& n : j["unregularized"]) {
    if (!n.is_string()) return InvalidArgument(where + ": unregularized holds node names");
    m.unregularized.push_back(n.get<std::string>());
  }
  return m;
}

bool IsGraphModel(const model::TrainParams& params) {
  using model::Algorithm;
  return params.algorithm == Algorithm::kWDL || params.algorithm == Algorithm::kDeepFM ||
         params.algorithm == Algorithm::kDCN || !params.graph.model_graph.empty();
}

std::string ModelGraphPath(const GraphModelParams& params, const std::string& model_set_dir) {
  return params.model_graph.front() == '/' ? params.model_graph
                                           : JoinPath(model_set_dir, params.model_graph);
}

Result<GraphModel> BuildGraphModel(const std::string& algorithm, const model::TrainParams& params,
                                   const std::vector<GraphColumn>& columns, int dense_width,
                                   const std::vector<std::string>& model_set_columns,
                                   const std::string& model_set_dir) {
  const GraphModelParams& p = params.graph;
  const std::string alg = ToLower(algorithm);
  // The NN keys (hidden layers, activations, dropout, loss, initializer).
  TARN_ASSIGN_OR_RETURN(auto nn, model::ModelSpec::FromTrainParams(params, 1));
  if (!p.model_graph.empty()) {
    if (alg != "nn" && alg != "tensorflow") {
      return InvalidArgument(Key("ModelGraph") + " defines the whole model; train.algorithm " +
                             algorithm + " builds its own (use NN or TensorFlow with ModelGraph)");
    }
    TARN_ASSIGN_OR_RETURN(auto keras, model::ReadKerasModel(ModelGraphPath(p, model_set_dir)));
    return KerasGraphModel(keras, columns, model_set_columns, nn.loss);
  }
  TARN_ASSIGN_OR_RETURN(auto embedded, EmbedColumns(p, columns, model_set_columns));
  Builder b;
  b.spec.loss = nn.loss;
  b.spec.initializer = nn.initializer;
  std::string x;
  // WDL's wide part alone without wideDenseEnable reads no numeric value.
  const bool reads_numeric = alg != "wdl" || p.deep || (p.wide && p.wide_dense);
  if (dense_width > 0 && reads_numeric) {
    GraphNode n = Node("numeric", GraphOp::kInput, {});
    n.width = dense_width;
    x = b.Add(std::move(n));
  }
  std::vector<std::string> deep_inputs;  // the numeric values and the embeddings
  if (!x.empty()) deep_inputs.push_back(x);
  std::vector<std::string> embeddings;
  auto embed_all = [&] {
    for (const auto& c : embedded) embeddings.push_back(b.Embedding("embed_", c, p.embed_outputs));
    deep_inputs.insert(deep_inputs.end(), embeddings.begin(), embeddings.end());
  };
  const auto sigmoid = model::Activation::kSigmoid;
  const auto linear = model::Activation::kLinear;
  if (alg == "wdl") {
    // Shifu's WideAndDeep: wide = a weight per category of every categorical
    // input (+ a linear term of the numeric inputs); deep = numeric values and
    // embeddings through the hidden layers to one logit; the two logits meet
    // in a Dense(1) with a sigmoid.
    if (!p.wide && !p.deep) {
      return InvalidArgument(Key("wideEnable") + " and " + Key("deepEnable") +
                             " are both false: WDL needs a wide or a deep part");
    }
    std::vector<std::string> outputs;
    if (p.wide) {
      std::vector<std::string> wide;
      for (const auto& c : columns) {
        if (c.has_ids) wide.push_back(b.Embedding("wide_", c, 1));
      }
      if (p.wide_dense && !x.empty())
        wide.push_back(b.Add(DenseNode("wide_dense", {x}, 1, linear, false)));
      if (wide.empty()) {
        return InvalidArgument(Key("wideEnable") +
                               ": the wide part has no categorical input with ids and no numeric "
                               "input (wideDenseEnable)");
      }
      outputs.push_back(b.Sum("wide", wide));
    }
    if (p.deep) {
      if (p.embed) embed_all();
      if (deep_inputs.empty()) {
        return InvalidArgument(Key("deepEnable") + ": the deep part has no input");
      }
      const std::string h = b.Hidden("deep_", b.Concat("deep_inputs", deep_inputs), nn);
      outputs.push_back(b.Add(DenseNode("deep_logit", {h}, 1, linear)));
    }
    if (outputs.size() == 2) {
      b.Add(DenseNode("score", {b.Concat("wide_deep", outputs)}, 1, sigmoid));
    } else {
      b.Add(DenseNode("score", {outputs[0]}, 1, sigmoid));
    }
  } else if (alg == "deepfm") {
    // First order (a weight per category + linear numeric) + FM's second order
    // over the embeddings + the deep part's logit, through a sigmoid.
    if (embedded.size() < 2) {
      return InvalidArgument(Key("NumEmbedColumnIds") +
                             ": DeepFM's second order needs at least 2 embedded columns, got " +
                             std::to_string(embedded.size()));
    }
    std::vector<std::string> first;
    for (const auto& c : embedded) first.push_back(b.Embedding("first_", c, 1));
    if (!x.empty()) first.push_back(b.Add(DenseNode("first_numeric", {x}, 1, linear, false)));
    const std::string first_order = b.Sum("first_order", first);
    embed_all();
    const std::string fm = b.Add(Node("fm", GraphOp::kFm, embeddings));
    const std::string h = b.Hidden("deep_", b.Concat("deep_inputs", deep_inputs), nn);
    const std::string deep = b.Add(DenseNode("deep_logit", {h}, 1, linear));
    GraphNode out = Node("score", GraphOp::kActivation,
                         {b.Add(Node("logit", GraphOp::kAdd, {first_order, fm, deep}))});
    out.activation = sigmoid;
    b.Add(std::move(out));
  } else if (alg == "dcn") {
    // x0 = numeric values and embeddings; a cross network beside the hidden
    // layers; both concatenated into a Dense(1) with a sigmoid.
    embed_all();
    if (deep_inputs.empty()) return InvalidArgument("DCN: the model has no input");
    const std::string x0 = b.Concat("x0", deep_inputs);
    GraphNode cross = Node("cross", GraphOp::kCross, {x0});
    cross.layers = p.cross_layers;
    std::vector<std::string> parts = {b.Add(std::move(cross))};
    if (nn.layers.size() > 1) parts.push_back(b.Hidden("deep_", x0, nn));
    b.Add(DenseNode("score", {b.Concat("cross_deep", parts)}, 1, sigmoid));
  } else {
    return Unsupported("train.algorithm " + algorithm + " is not a graph model");
  }
  TARN_RETURN_IF_ERROR(b.spec.Validate().WithContext(algorithm + " graph"));
  return GraphModel{std::move(b.spec), p.l2};
}

Result<GraphModel> KerasGraphModel(const model::KerasModel& keras,
                                   const std::vector<GraphColumn>& columns,
                                   const std::vector<std::string>& model_set_columns,
                                   model::LossKind loss) {
  TARN_ASSIGN_OR_RETURN(auto widths, model::KerasGraphWidths(keras));
  GraphModel out;
  out.spec.loss = loss;
  std::map<std::string, std::string> alias;  // layer -> the node holding its value
  std::optional<model::Initializer> dense_init;
  std::optional<model::KerasRegularizer> reg;
  auto where = [&](const model::KerasLayer& l) {
    return keras.file + ": " + l.path + " (" + l.class_name + " '" + l.name + "')";
  };
  auto note_regularizer = [&](const model::KerasLayer& l) -> Status {
    if (l.regularizer.l1 != 0) {
      return Unsupported(where(l) + ": L1 regularization is not supported (only L2)");
    }
    if (l.regularizer.l2 == 0) {
      out.unregularized.push_back(l.name);
    } else if (reg && reg->l2 != l.regularizer.l2) {
      return Unsupported(where(l) + ": its L2 factor " + FormatDouble(l.regularizer.l2) +
                         " differs from another layer's " + FormatDouble(reg->l2) +
                         " (tarn applies one L2 factor to the regularized weights)");
    } else {
      reg = l.regularizer;
    }
    return Status::Ok();
  };
  for (size_t i = 0; i < keras.layers.size(); ++i) {
    const auto& l = keras.layers[i];
    std::vector<std::string> inputs;
    for (const auto& in : l.inputs) inputs.push_back(alias.at(in));
    GraphNode n = Node(l.name, GraphOp::kDense, inputs);
    switch (l.kind) {
      case model::KerasLayerKind::kFlatten:
      case model::KerasLayerKind::kReshape:
      case model::KerasLayerKind::kHashing:  // norm hashed the column's text (its id column)
        alias[l.name] = inputs.at(0);
        continue;
      case model::KerasLayerKind::kInput:
        n.op = GraphOp::kInput;
        if (l.role == model::KerasInputRole::kNumeric) {
          n.source = model::InputSource::kDense;
          n.width = widths[i];
        } else {
          auto c = std::find_if(columns.begin(), columns.end(),
                                [&](const GraphColumn& g) { return g.name == l.name; });
          if (c == columns.end()) {
            const bool exists = std::find(model_set_columns.begin(), model_set_columns.end(),
                                          l.name) != model_set_columns.end();
            return InvalidArgument(
                where(l) + ": " +
                (exists ? "column '" + l.name + "' is not an input column (finalSelect)"
                        : "no column of ColumnConfig.json is named '" + l.name +
                              "' (an ids input is named after its column)"));
          }
          const bool text = l.role == model::KerasInputRole::kCategoryText;
          if (!c->has_ids) {
            return InvalidArgument(
                where(l) + ": column '" + l.name + "' has no category ids; " +
                (text ? "a Hashing layer hashes a categorical column's text: rerun 'tarn norm' "
                        "with this ModelGraph in train#params"
                      : "use a categorical column and an *_INDEX normalize.normType (e.g. "
                        "ZSCALE_INDEX) or a hashSeed, and rerun 'tarn norm'"));
          }
          // The ids must be the ones the graph reads: Keras' bins for a text
          // input (norm hashes the columns ModelGraph hashes), else tarn's own.
          const bool keras_ids = c->ids.kind == data::IdKind::kKerasHash;
          if (text != keras_ids || (text && !(c->ids.keras == l.hashing))) {
            return InvalidArgument(
                where(l) + ": column '" + l.name + "' has ids of kind " +
                data::IdKindName(c->ids.kind) +
                (keras_ids ? " (" + std::to_string(c->ids.keras.num_bins) + " bins)" : "") +
                " in tmp/NormalizedData, but the graph " +
                (text ? "hashes its text with a Hashing layer of " +
                            std::to_string(l.hashing.num_bins) + " bins"
                      : "reads its integer ids") +
                "; rerun 'tarn norm' with this ModelGraph in train#params");
          }
          n.source = model::InputSource::kIds;
          n.column = l.name;
        }
        break;
      case model::KerasLayerKind::kEmbedding: {
        n.op = GraphOp::kEmbedding;
        n.vocabulary = l.input_dim;
        n.units = l.units;
        if (l.initializer != model::Initializer::kUniform) {
          return Unsupported(where(l) + ": embeddings_initializer " +
                             model::InitializerName(l.initializer) +
                             " (tarn's tables start RandomUniform(-0.05, 0.05))");
        }
        const model::KerasLayer* src = keras.Find(l.inputs.at(0));
        if (src && src->kind == model::KerasLayerKind::kHashing)
          src = keras.Find(src->inputs.at(0));
        auto c = std::find_if(columns.begin(), columns.end(), [&](const GraphColumn& g) {
          return src != nullptr && g.name == src->name;
        });
        if (c != columns.end() && l.input_dim < c->id_count) {
          return InvalidArgument(where(l) + ": input_dim " + std::to_string(l.input_dim) +
                                 " is smaller than the " + std::to_string(c->id_count) +
                                 " ids of column '" + c->name + "'" +
                                 (c->ids.HasMissingId() ? " (its bins and the missing bin)" : ""));
        }
        TARN_RETURN_IF_ERROR(note_regularizer(l));
        break;
      }
      case model::KerasLayerKind::kDense:
        n.units = l.units;
        n.activation = l.activation;
        n.use_bias = l.use_bias;
        n.shares = l.shares;  // a Keras layer called more than once
        if (dense_init && *dense_init != l.initializer) {
          return Unsupported(
              where(l) + ": kernel_initializer " + model::InitializerName(l.initializer) +
              " differs from another "
              "Dense's " +
              model::InitializerName(*dense_init) + " (tarn initializes every Dense alike)");
        }
        dense_init = l.initializer;
        TARN_RETURN_IF_ERROR(note_regularizer(l));
        break;
      case model::KerasLayerKind::kConcatenate:
        n.op = GraphOp::kConcatenate;
        break;
      case model::KerasLayerKind::kAdd:
        n.op = GraphOp::kAdd;
        break;
      case model::KerasLayerKind::kMultiply:
        n.op = GraphOp::kMultiply;
        break;
      case model::KerasLayerKind::kDot:
        n.op = GraphOp::kDot;
        break;
      case model::KerasLayerKind::kDropout:
        n.op = GraphOp::kDropout;
        n.rate = l.rate;
        break;
      case model::KerasLayerKind::kBatchNormalization:
        n.op = GraphOp::kBatchNorm;
        n.momentum = l.momentum;
        n.epsilon = l.epsilon;
        break;
      case model::KerasLayerKind::kActivation:
        n.op = GraphOp::kActivation;
        n.activation = l.activation;
        break;
    }
    alias[l.name] = l.name;
    out.spec.nodes.push_back(std::move(n));
  }
  if (dense_init) out.spec.initializer = *dense_init;
  // Keras adds l2 * sum w^2 to the loss; tarn's L2 r adds r/2 * sum w^2. No
  // regularizer: none (the model says so, whatever RegularizedConstant says).
  out.l2 = reg ? 2.0 * reg->l2 : 0.0;
  TARN_RETURN_IF_ERROR(out.spec.Validate().WithContext(keras.file));
  return out;
}

}  // namespace tarn::train
