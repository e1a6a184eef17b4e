#include "model/graph_spec.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <type_traits>

#include "model/training_data.h"

namespace tarn::model {
namespace {

struct OpEntry {
  const char* name;
  GraphOp op;
  // The op's own fields (beyond name, op, inputs), as FromJson accepts them.
  std::vector<std::string> fields;
};

const std::vector<OpEntry>& Ops() {
  static const std::vector<OpEntry> ops = {
      {"input", GraphOp::kInput, {"source", "width", "column"}},
      {"embedding", GraphOp::kEmbedding, {"vocabulary", "units"}},
      {"hashed_embedding", GraphOp::kHashedEmbedding, {"buckets", "units"}},
      {"dense", GraphOp::kDense, {"units", "activation", "use_bias", "shares"}},
      {"concatenate", GraphOp::kConcatenate, {}},
      {"add", GraphOp::kAdd, {}},
      {"multiply", GraphOp::kMultiply, {}},
      {"dot", GraphOp::kDot, {}},
      {"fm", GraphOp::kFm, {}},
      {"cross", GraphOp::kCross, {"layers"}},
      {"dropout", GraphOp::kDropout, {"rate"}},
      {"batch_norm", GraphOp::kBatchNorm, {"momentum", "epsilon"}},
      {"activation", GraphOp::kActivation, {"activation"}},
  };
  return ops;
}

const OpEntry& EntryOf(GraphOp op) {
  for (const auto& e : Ops()) {
    if (e.op == op) return e;
  }
  return Ops().front();
}

std::string NodeLabel(const GraphNode& n, size_t i) {
  return "node '" + n.name + "' (nodes[" + std::to_string(i) + "])";
}

bool IsEmbedding(GraphOp op) {
  return op == GraphOp::kEmbedding || op == GraphOp::kHashedEmbedding;
}

bool IsIdsInput(const GraphNode& n) {
  return n.op == GraphOp::kInput && n.source == InputSource::kIds;
}

// Checks one node against the nodes before it; `widths` holds theirs. Sets *width.
Status ValidateNode(const GraphNode& n, size_t i, const std::map<std::string, size_t>& index,
                    const std::vector<GraphNode>& nodes, const std::vector<int>& widths,
                    int* width) {
  const std::string label = NodeLabel(n, i);
  auto bad = [&](const std::string& field, const std::string& what) {
    return InvalidArgument(label + ": " + field + " " + what);
  };
  std::vector<size_t> in;
  for (const std::string& name : n.inputs) {
    auto it = index.find(name);
    if (it == index.end()) {
      return bad("inputs", "names '" + name + "', which is not a node listed before it");
    }
    in.push_back(it->second);
  }
  auto arity = [&](size_t lo, size_t hi) -> Status {
    if (in.size() < lo || in.size() > hi) {
      std::string want = lo == hi ? std::to_string(lo) : std::to_string(lo) + " or more";
      return bad("inputs", "must list " + want + " node(s), got " + std::to_string(in.size()));
    }
    return Status::Ok();
  };
  // Only embeddings read ids; every other op reads floats.
  for (size_t k = 0; k < in.size(); ++k) {
    const GraphNode& src = nodes[in[k]];
    if (IsEmbedding(n.op) != IsIdsInput(src)) {
      return bad("inputs", IsEmbedding(n.op)
                               ? "must name an input node of source ids, got '" + src.name + "'"
                               : "names '" + src.name +
                                     "', an ids input: ids feed only an embedding or "
                                     "hashed_embedding");
    }
  }
  auto equal_widths = [&]() -> Status {
    for (size_t k = 1; k < in.size(); ++k) {
      if (widths[in[k]] != widths[in[0]]) {
        return bad("inputs", "must have equal widths, got '" + nodes[in[0]].name + "' of " +
                                 std::to_string(widths[in[0]]) + " and '" + nodes[in[k]].name +
                                 "' of " + std::to_string(widths[in[k]]));
      }
    }
    return Status::Ok();
  };
  auto positive_units = [&]() -> Status {
    if (n.units <= 0)
      return bad("units", "must be a positive integer, got " + std::to_string(n.units));
    return Status::Ok();
  };
  switch (n.op) {
    case GraphOp::kInput:
      TARN_RETURN_IF_ERROR(arity(0, 0));
      if (n.source == InputSource::kDense) {
        if (n.width <= 0) {
          return bad("width", "must be a positive integer, got " + std::to_string(n.width));
        }
        *width = n.width;
      } else {
        if (n.column.empty()) return bad("column", "must name the categorical column");
        *width = 1;
      }
      return Status::Ok();
    case GraphOp::kEmbedding:
    case GraphOp::kHashedEmbedding: {
      TARN_RETURN_IF_ERROR(arity(1, 1));
      const bool hashed = n.op == GraphOp::kHashedEmbedding;
      const int64_t rows = hashed ? n.buckets : n.vocabulary;
      if (rows <= 0) {
        return bad(hashed ? "buckets" : "vocabulary",
                   "must be a positive integer, got " + std::to_string(rows));
      }
      TARN_RETURN_IF_ERROR(positive_units());
      // A table's floats are indexed with 64 bits, but must fit in memory.
      if (rows > (int64_t{1} << 40) / n.units) {
        return bad(hashed ? "buckets" : "vocabulary", "x units must be at most 2^40 floats, got " +
                                                          std::to_string(rows) + " x " +
                                                          std::to_string(n.units));
      }
      *width = n.units;
      return Status::Ok();
    }
    case GraphOp::kDense: {
      TARN_RETURN_IF_ERROR(arity(1, 1));
      TARN_RETURN_IF_ERROR(positive_units());
      *width = n.units;
      if (n.shares.empty()) return Status::Ok();
      auto owner = index.find(n.shares);
      if (owner == index.end() || nodes[owner->second].op != GraphOp::kDense ||
          !nodes[owner->second].shares.empty()) {
        return bad("shares",
                   "must name a dense node listed before it that shares no other's, "
                   "got '" +
                       n.shares + "'");
      }
      const GraphNode& o = nodes[owner->second];
      const size_t o_in = index.at(o.inputs.at(0));
      if (o.units != n.units || o.use_bias != n.use_bias || widths[o_in] != widths[in[0]]) {
        return bad("shares", "'" + n.shares + "' has other parameters: " + std::to_string(o.units) +
                                 " units over an input of width " + std::to_string(widths[o_in]) +
                                 (o.use_bias ? "" : ", no bias") + ", against " +
                                 std::to_string(n.units) + " over " +
                                 std::to_string(widths[in[0]]) + (n.use_bias ? "" : ", no bias"));
      }
      return Status::Ok();
    }
    case GraphOp::kConcatenate:
      TARN_RETURN_IF_ERROR(arity(2, SIZE_MAX));
      *width = 0;
      for (size_t k : in) *width += widths[k];
      return Status::Ok();
    case GraphOp::kAdd:
    case GraphOp::kMultiply:
      TARN_RETURN_IF_ERROR(arity(2, SIZE_MAX));
      TARN_RETURN_IF_ERROR(equal_widths());
      *width = widths[in[0]];
      return Status::Ok();
    case GraphOp::kDot:
      TARN_RETURN_IF_ERROR(arity(2, 2));
      TARN_RETURN_IF_ERROR(equal_widths());
      *width = 1;
      return Status::Ok();
    case GraphOp::kFm:
      TARN_RETURN_IF_ERROR(arity(2, SIZE_MAX));
      TARN_RETURN_IF_ERROR(equal_widths());
      *width = 1;
      return Status::Ok();
    case GraphOp::kCross:
      TARN_RETURN_IF_ERROR(arity(1, 1));
      if (n.layers <= 0) {
        return bad("layers", "must be a positive integer, got " + std::to_string(n.layers));
      }
      *width = widths[in[0]];
      return Status::Ok();
    case GraphOp::kDropout:
      TARN_RETURN_IF_ERROR(arity(1, 1));
      if (!(n.rate >= 0 && n.rate < 1)) {
        return bad("rate", "must lie in [0, 1), got " + std::to_string(n.rate));
      }
      *width = widths[in[0]];
      return Status::Ok();
    case GraphOp::kBatchNorm:
      TARN_RETURN_IF_ERROR(arity(1, 1));
      if (!(n.momentum >= 0 && n.momentum < 1)) {
        return bad("momentum", "must lie in [0, 1), got " + std::to_string(n.momentum));
      }
      if (!(n.epsilon > 0 && std::isfinite(n.epsilon))) {
        return bad("epsilon", "must be a positive number, got " + std::to_string(n.epsilon));
      }
      *width = widths[in[0]];
      return Status::Ok();
    case GraphOp::kActivation:
      TARN_RETURN_IF_ERROR(arity(1, 1));
      *width = widths[in[0]];
      return Status::Ok();
  }
  return bad("op", "is not known");
}

}  // namespace

Result<GraphOp> ParseGraphOp(std::string_view name) {
  std::string valid;
  for (const auto& e : Ops()) {
    if (name == e.name) return e.op;
    valid += valid.empty() ? "" : ", ";
    valid += e.name;
  }
  return InvalidArgument("unknown op '" + std::string(name) + "' (valid: " + valid + ")");
}

const char* GraphOpName(GraphOp op) { return EntryOf(op).name; }

uint64_t HashedBucket(int64_t id, int64_t buckets) {
  return MixSeed(static_cast<uint64_t>(id)) % static_cast<uint64_t>(buckets);
}

Status GraphSpec::Validate() const {
  if (nodes.empty()) return InvalidArgument("the graph has no nodes");
  std::map<std::string, size_t> index;
  std::vector<int> widths;
  std::vector<bool> used(nodes.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const GraphNode& n = nodes[i];
    if (n.name.empty()) return InvalidArgument("nodes[" + std::to_string(i) + "]: name is empty");
    if (index.count(n.name)) {
      return InvalidArgument(NodeLabel(n, i) + ": name is already used by nodes[" +
                             std::to_string(index[n.name]) + "]");
    }
    int width = 0;
    TARN_RETURN_IF_ERROR(ValidateNode(n, i, index, nodes, widths, &width));
    for (const std::string& in : n.inputs) used[index[in]] = true;
    index[n.name] = i;
    widths.push_back(width);
  }
  const size_t last = nodes.size() - 1;
  for (size_t i = 0; i < last; ++i) {
    if (!used[i]) {
      return InvalidArgument(NodeLabel(nodes[i], i) +
                             ": is used by no node; the graph's one output is its last node, '" +
                             nodes[last].name + "'");
    }
  }
  if (IsIdsInput(nodes[last]) || widths[last] != 1) {
    return InvalidArgument(NodeLabel(nodes[last], last) +
                           ": the output (the last node) must be a float of width 1, got width " +
                           std::to_string(widths[last]));
  }
  return Status::Ok();
}

std::vector<GraphNodeLayout> GraphSpec::Layout() const {
  std::vector<GraphNodeLayout> out(nodes.size());
  std::map<std::string, size_t> index;
  size_t params = 0;
  size_t state = 0;
  int tables = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const GraphNode& n = nodes[i];
    GraphNodeLayout& l = out[i];
    std::vector<int> in;
    for (const std::string& name : n.inputs) in.push_back(out[index.at(name)].width);
    const size_t first_width = in.empty() ? 0 : static_cast<size_t>(in[0]);
    switch (n.op) {
      case GraphOp::kInput:
        l.width = n.source == InputSource::kDense ? n.width : 1;
        break;
      case GraphOp::kEmbedding:
      case GraphOp::kHashedEmbedding:
        l.width = n.units;
        l.table = tables++;
        break;
      case GraphOp::kDense:
        l.width = n.units;
        l.param_count = static_cast<size_t>(n.units) * first_width +
                        (n.use_bias ? static_cast<size_t>(n.units) : 0);
        break;
      case GraphOp::kConcatenate:
        for (int w : in) l.width += w;
        break;
      case GraphOp::kDot:
      case GraphOp::kFm:
        l.width = 1;
        break;
      case GraphOp::kCross:
        l.width = in[0];
        l.param_count = 2 * static_cast<size_t>(n.layers) * first_width;
        break;
      case GraphOp::kBatchNorm:
        l.width = in[0];
        l.param_count = 2 * first_width;
        l.state_count = 2 * first_width;
        break;
      case GraphOp::kAdd:
      case GraphOp::kMultiply:
      case GraphOp::kDropout:
      case GraphOp::kActivation:
        l.width = in[0];
        break;
    }
    if (!n.shares.empty()) {
      l.owner = static_cast<int>(index.at(n.shares));
      l.param_offset = out[static_cast<size_t>(l.owner)].param_offset;
    } else {
      l.param_offset = params;
      params += l.param_count;
    }
    l.state_offset = state;
    state += l.state_count;
    index[n.name] = i;
  }
  return out;
}

size_t GraphSpec::DenseParameterCount() const {
  size_t n = 0;
  for (const auto& l : Layout()) n += l.owner < 0 ? l.param_count : 0;
  return n;
}

std::vector<EmbeddingTableShape> GraphSpec::TableShapes() const {
  std::vector<EmbeddingTableShape> shapes;
  for (const GraphNode& n : nodes) {
    if (!IsEmbedding(n.op)) continue;
    shapes.push_back({n.name, n.op == GraphOp::kEmbedding ? n.vocabulary : n.buckets, n.units});
  }
  return shapes;
}

size_t GraphSpec::StateCount() const {
  size_t n = 0;
  for (const auto& l : Layout()) n += l.state_count;
  return n;
}

size_t GraphSpec::ParameterCount() const {
  size_t n = DenseParameterCount();
  for (const auto& t : TableShapes()) n += static_cast<size_t>(t.rows) * static_cast<size_t>(t.dim);
  return n;
}

std::vector<bool> GraphSpec::UnregularizedMask() const {
  std::vector<GraphNodeLayout> layout = Layout();
  std::vector<bool> mask(DenseParameterCount(), false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const GraphNode& n = nodes[i];
    const GraphNodeLayout& l = layout[i];
    const size_t w = static_cast<size_t>(l.width);
    if (n.op == GraphOp::kDense && n.use_bias) {
      for (size_t k = l.param_count - w; k < l.param_count; ++k) mask[l.param_offset + k] = true;
    } else if (n.op == GraphOp::kCross) {
      for (int c = 0; c < n.layers; ++c) {
        size_t b = l.param_offset + (2 * static_cast<size_t>(c) + 1) * w;
        for (size_t k = 0; k < w; ++k) mask[b + k] = true;
      }
    } else if (n.op == GraphOp::kBatchNorm) {
      for (size_t k = 0; k < l.param_count; ++k) mask[l.param_offset + k] = true;
    }
  }
  return mask;
}

Json GraphSpec::ToJson() const {
  Json j = Json::object();
  j["loss"] = LossName(loss);
  j["initializer"] = InitializerName(initializer);
  Json list = Json::array();
  for (const GraphNode& n : nodes) {
    Json o = Json::object();
    o["name"] = n.name;
    o["op"] = GraphOpName(n.op);
    if (n.op != GraphOp::kInput) o["inputs"] = n.inputs;
    switch (n.op) {
      case GraphOp::kInput:
        if (n.source == InputSource::kDense) {
          o["source"] = "dense";
          o["width"] = n.width;
        } else {
          o["source"] = "ids";
          o["column"] = n.column;
        }
        break;
      case GraphOp::kEmbedding:
        o["vocabulary"] = n.vocabulary;
        o["units"] = n.units;
        break;
      case GraphOp::kHashedEmbedding:
        o["buckets"] = n.buckets;
        o["units"] = n.units;
        break;
      case GraphOp::kDense:
        o["units"] = n.units;
        o["activation"] = ActivationName(n.activation);
        o["use_bias"] = n.use_bias;
        if (!n.shares.empty()) o["shares"] = n.shares;
        break;
      case GraphOp::kCross:
        o["layers"] = n.layers;
        break;
      case GraphOp::kDropout:
        o["rate"] = n.rate;
        break;
      case GraphOp::kBatchNorm:
        o["momentum"] = n.momentum;
        o["epsilon"] = n.epsilon;
        break;
      case GraphOp::kActivation:
        o["activation"] = ActivationName(n.activation);
        break;
      case GraphOp::kConcatenate:
      case GraphOp::kAdd:
      case GraphOp::kMultiply:
      case GraphOp::kDot:
      case GraphOp::kFm:
        break;
    }
    list.push_back(std::move(o));
  }
  j["nodes"] = std::move(list);
  return j;
}

Result<GraphSpec> GraphSpec::FromJson(const Json& j, const std::string& where) {
  if (!j.is_object())
    return InvalidArgument(where + ": the graph must be an object, got " + j.dump());
  GraphSpec spec;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "loss" && it.key() != "initializer" && it.key() != "nodes") {
      return InvalidArgument(where + ": unknown field '" + it.key() +
                             "' (valid: loss, initializer, nodes)");
    }
  }
  if (const Json* v = data::JsonFind(j, "loss")) {
    auto r = v->is_string()
                 ? ParseLoss(v->get<std::string>())
                 : Result<LossKind>(InvalidArgument("must be a string, got " + v->dump()));
    if (!r.ok()) return r.status().WithContext(where + ": loss");
    spec.loss = *r;
  }
  if (const Json* v = data::JsonFind(j, "initializer")) {
    auto r = v->is_string()
                 ? ParseInitializer(v->get<std::string>())
                 : Result<Initializer>(InvalidArgument("must be a string, got " + v->dump()));
    if (!r.ok()) return r.status().WithContext(where + ": initializer");
    spec.initializer = *r;
  }
  const Json* list = data::JsonFind(j, "nodes");
  if (!list || !list->is_array()) {
    return InvalidArgument(where + ": nodes must be a list of node objects" +
                           (list ? ", got " + list->dump() : std::string(", but it is missing")));
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& nj = (*list)[i];
    std::string label = "nodes[" + std::to_string(i) + "]";
    if (!nj.is_object()) {
      return InvalidArgument(where + ": " + label + " must be an object, got " + nj.dump());
    }
    GraphNode n;
    const Json* name = data::JsonFind(nj, "name");
    if (!name || !name->is_string()) {
      return InvalidArgument(where + ": " + label + ": name must be a string" +
                             (name ? ", got " + name->dump() : std::string(", but it is missing")));
    }
    n.name = name->get<std::string>();
    label = NodeLabel(n, i);
    auto bad = [&](const std::string& field, const std::string& what, const Json* got) {
      return InvalidArgument(where + ": " + label + ": " + field + " must be " + what +
                             (got ? ", got " + got->dump() : std::string(", but it is missing")));
    };
    const Json* op = data::JsonFind(nj, "op");
    if (!op || !op->is_string()) return bad("op", "a string", op);
    auto parsed = ParseGraphOp(op->get<std::string>());
    if (!parsed.ok()) return parsed.status().WithContext(where + ": " + label + ": op");
    n.op = *parsed;
    const OpEntry& entry = EntryOf(n.op);
    for (auto it = nj.begin(); it != nj.end(); ++it) {
      const std::string& key = it.key();
      bool known = key == "name" || key == "op" || (key == "inputs" && n.op != GraphOp::kInput);
      for (const auto& f : entry.fields) known = known || key == f;
      if (!known) {
        std::string valid = n.op == GraphOp::kInput ? "name, op" : "name, op, inputs";
        for (const auto& f : entry.fields) valid += ", " + f;
        return InvalidArgument(where + ": " + label + ": field '" + key + "' is not one of op " +
                               entry.name + "'s (valid: " + valid + ")");
      }
    }
    if (n.op != GraphOp::kInput) {
      const Json* in = data::JsonFind(nj, "inputs");
      if (!in || !in->is_array()) return bad("inputs", "a list of node names", in);
      for (const Json& e : *in) {
        if (!e.is_string()) return bad("inputs", "a list of node names", in);
        n.inputs.push_back(e.get<std::string>());
      }
    }
    auto get_int = [&](const char* key, bool required, auto* out) -> Status {
      const Json* v = data::JsonFind(nj, key);
      if (!v) return required ? bad(key, "an integer", nullptr) : Status::Ok();
      double d = 0;
      if (!v->is_number() || !data::JsonAsDouble(*v, &d) || d != std::floor(d) ||
          std::fabs(d) > 9.0e15) {
        return bad(key, "an integer", v);
      }
      *out = static_cast<std::remove_pointer_t<decltype(out)>>(d);
      if (static_cast<double>(*out) != d) return bad(key, "an integer in range", v);
      return Status::Ok();
    };
    auto get_float = [&](const char* key, float* out) -> Status {
      const Json* v = data::JsonFind(nj, key);
      if (!v) return Status::Ok();
      double d = 0;
      if (!v->is_number() || !data::JsonAsDouble(*v, &d)) return bad(key, "a number", v);
      *out = static_cast<float>(d);
      return Status::Ok();
    };
    auto get_activation = [&](bool required) -> Status {
      const Json* v = data::JsonFind(nj, "activation");
      if (!v) return required ? bad("activation", "an activation name", nullptr) : Status::Ok();
      if (!v->is_string()) return bad("activation", "an activation name", v);
      auto r = ParseActivation(v->get<std::string>());
      if (!r.ok()) return r.status().WithContext(where + ": " + label + ": activation");
      n.activation = *r;
      return Status::Ok();
    };
    switch (n.op) {
      case GraphOp::kInput: {
        const Json* src = data::JsonFind(nj, "source");
        std::string s = src && src->is_string() ? src->get<std::string>() : "";
        if (s == "dense") {
          n.source = InputSource::kDense;
          if (data::JsonFind(nj, "column")) {
            return InvalidArgument(where + ": " + label +
                                   ": field 'column' belongs to source ids, not dense");
          }
          TARN_RETURN_IF_ERROR(get_int("width", true, &n.width));
        } else if (s == "ids") {
          n.source = InputSource::kIds;
          if (data::JsonFind(nj, "width")) {
            return InvalidArgument(where + ": " + label +
                                   ": field 'width' belongs to source dense (ids are 1 per row)");
          }
          const Json* col = data::JsonFind(nj, "column");
          if (!col || !col->is_string()) return bad("column", "a column name", col);
          n.column = col->get<std::string>();
        } else {
          return bad("source", "\"dense\" or \"ids\"", src);
        }
        break;
      }
      case GraphOp::kEmbedding:
        TARN_RETURN_IF_ERROR(get_int("vocabulary", true, &n.vocabulary));
        TARN_RETURN_IF_ERROR(get_int("units", true, &n.units));
        break;
      case GraphOp::kHashedEmbedding:
        TARN_RETURN_IF_ERROR(get_int("buckets", true, &n.buckets));
        TARN_RETURN_IF_ERROR(get_int("units", true, &n.units));
        break;
      case GraphOp::kDense: {
        TARN_RETURN_IF_ERROR(get_int("units", true, &n.units));
        TARN_RETURN_IF_ERROR(get_activation(false));
        if (const Json* v = data::JsonFind(nj, "use_bias")) {
          if (!v->is_boolean()) return bad("use_bias", "true or false", v);
          n.use_bias = v->get<bool>();
        }
        if (const Json* v = data::JsonFind(nj, "shares")) {
          if (!v->is_string()) return bad("shares", "a node name", v);
          n.shares = v->get<std::string>();
        }
        break;
      }
      case GraphOp::kCross:
        TARN_RETURN_IF_ERROR(get_int("layers", true, &n.layers));
        break;
      case GraphOp::kDropout:
        if (!data::JsonFind(nj, "rate")) return bad("rate", "a number", nullptr);
        TARN_RETURN_IF_ERROR(get_float("rate", &n.rate));
        break;
      case GraphOp::kBatchNorm:
        TARN_RETURN_IF_ERROR(get_float("momentum", &n.momentum));
        TARN_RETURN_IF_ERROR(get_float("epsilon", &n.epsilon));
        break;
      case GraphOp::kActivation:
        TARN_RETURN_IF_ERROR(get_activation(true));
        break;
      case GraphOp::kConcatenate:
      case GraphOp::kAdd:
      case GraphOp::kMultiply:
      case GraphOp::kDot:
      case GraphOp::kFm:
        break;
    }
    spec.nodes.push_back(std::move(n));
  }
  Status st = spec.Validate();
  if (!st.ok()) return st.WithContext(where);
  return spec;
}

}  // namespace tarn::model
