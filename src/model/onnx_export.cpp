#include "model/onnx_export.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string_view>

namespace tarn::model {

namespace {

// Protobuf wire format: each field is a varint key (field_number << 3 |
// wire_type) then its payload.
enum WireType : uint32_t { kVarint = 0, kLengthDelimited = 2, kFixed32 = 5 };

class ProtoWriter {
 public:
  // int32/int64/enum/bool fields: a varint (negative values take 10 bytes, as
  // protobuf encodes them).
  ProtoWriter& Int(uint32_t field, int64_t value) {
    Key(field, kVarint);
    Varint(static_cast<uint64_t>(value));
    return *this;
  }
  // float fields: 4 bytes little-endian.
  ProtoWriter& Float(uint32_t field, float value) {
    Key(field, kFixed32);
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    Fixed32(bits);
    return *this;
  }
  // string, bytes and embedded message fields: length then the bytes.
  ProtoWriter& Bytes(uint32_t field, std::string_view bytes) {
    Key(field, kLengthDelimited);
    Varint(bytes.size());
    out_.append(bytes);
    return *this;
  }
  ProtoWriter& Message(uint32_t field, const ProtoWriter& message) {
    return Bytes(field, message.out_);
  }
  // Raw little-endian float32 values (TensorProto.raw_data).
  ProtoWriter& FloatBytes(uint32_t field, const float* values, size_t count) {
    Key(field, kLengthDelimited);
    Varint(count * 4);
    for (size_t i = 0; i < count; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &values[i], sizeof bits);
      Fixed32(bits);
    }
    return *this;
  }

  // Raw little-endian 64-bit integers (TensorProto.raw_data of int64 / uint64).
  ProtoWriter& Int64Bytes(uint32_t field, const uint64_t* values, size_t count) {
    Key(field, kLengthDelimited);
    Varint(count * 8);
    for (size_t i = 0; i < count; ++i) {
      for (int b = 0; b < 8; ++b) out_.push_back(static_cast<char>((values[i] >> (8 * b)) & 0xff));
    }
    return *this;
  }

  std::string Take() { return std::move(out_); }

 private:
  void Key(uint32_t field, WireType type) { Varint((static_cast<uint64_t>(field) << 3) | type); }
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void Fixed32(uint32_t bits) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }

  std::string out_;
};

// Field numbers from onnx/onnx.proto.
namespace f {
// ModelProto
constexpr uint32_t kModelIrVersion = 1, kModelProducerName = 2, kModelProducerVersion = 3,
                   kModelDocString = 6, kModelGraph = 7, kModelOpsetImport = 8,
                   kModelMetadataProps = 14;
// StringStringEntryProto
constexpr uint32_t kEntryKey = 1, kEntryValue = 2;
// OperatorSetIdProto
constexpr uint32_t kOpsetDomain = 1, kOpsetVersion = 2;
// GraphProto
constexpr uint32_t kGraphNode = 1, kGraphName = 2, kGraphInitializer = 5, kGraphDocString = 10,
                   kGraphInput = 11, kGraphOutput = 12;
// NodeProto
constexpr uint32_t kNodeInput = 1, kNodeOutput = 2, kNodeName = 3, kNodeOpType = 4,
                   kNodeAttribute = 5;
// AttributeProto
constexpr uint32_t kAttrName = 1, kAttrF = 2, kAttrI = 3, kAttrS = 4, kAttrType = 20;
constexpr int kAttrTypeFloat = 1, kAttrTypeInt = 2, kAttrTypeString = 3;
// TensorProto
constexpr uint32_t kTensorDims = 1, kTensorDataType = 2, kTensorName = 8, kTensorRawData = 9;
constexpr int kDataTypeFloat = 1, kDataTypeInt64 = 7, kDataTypeUint64 = 13;
// ValueInfoProto
constexpr uint32_t kValueName = 1, kValueType = 2;
// TypeProto / TypeProto.Tensor
constexpr uint32_t kTypeTensorType = 1, kTensorTypeElemType = 1, kTensorTypeShape = 2;
// TensorShapeProto / Dimension
constexpr uint32_t kShapeDim = 1, kDimValue = 1, kDimParam = 2;
}  // namespace f

struct Dim {
  int64_t value = 0;
  std::string param;  // symbolic when not empty
};

ProtoWriter TensorValueInfo(const std::string& name, int elem_type, const std::vector<Dim>& dims) {
  ProtoWriter shape;
  for (const auto& d : dims) {
    ProtoWriter dim;
    if (d.param.empty()) {
      dim.Int(f::kDimValue, d.value);
    } else {
      dim.Bytes(f::kDimParam, d.param);
    }
    shape.Message(f::kShapeDim, dim);
  }
  ProtoWriter tensor;
  tensor.Int(f::kTensorTypeElemType, elem_type).Message(f::kTensorTypeShape, shape);
  ProtoWriter type;
  type.Message(f::kTypeTensorType, tensor);
  ProtoWriter value;
  value.Bytes(f::kValueName, name).Message(f::kValueType, type);
  return value;
}

ProtoWriter FloatValueInfo(const std::string& name, const std::vector<Dim>& dims) {
  return TensorValueInfo(name, f::kDataTypeFloat, dims);
}

ProtoWriter FloatTensor(const std::string& name, const std::vector<int64_t>& dims,
                        const float* values, size_t count) {
  ProtoWriter t;
  for (int64_t d : dims) t.Int(f::kTensorDims, d);
  t.Int(f::kTensorDataType, f::kDataTypeFloat);
  t.Bytes(f::kTensorName, name);
  t.FloatBytes(f::kTensorRawData, values, count);
  return t;
}

// An int64 (or, with `data_type` kDataTypeUint64, uint64) tensor.
ProtoWriter IntegerTensor(const std::string& name, const std::vector<int64_t>& dims,
                          const std::vector<uint64_t>& values, int data_type = f::kDataTypeInt64) {
  ProtoWriter t;
  for (int64_t d : dims) t.Int(f::kTensorDims, d);
  t.Int(f::kTensorDataType, data_type);
  t.Bytes(f::kTensorName, name);
  t.Int64Bytes(f::kTensorRawData, values.data(), values.size());
  return t;
}

ProtoWriter StringAttribute(const std::string& name, const std::string& value) {
  ProtoWriter a;
  a.Bytes(f::kAttrName, name).Bytes(f::kAttrS, value).Int(f::kAttrType, f::kAttrTypeString);
  return a;
}

ProtoWriter IntAttribute(const std::string& name, int64_t value) {
  ProtoWriter a;
  a.Bytes(f::kAttrName, name).Int(f::kAttrI, value).Int(f::kAttrType, f::kAttrTypeInt);
  return a;
}

ProtoWriter FloatAttribute(const std::string& name, float value) {
  ProtoWriter a;
  a.Bytes(f::kAttrName, name).Float(f::kAttrF, value).Int(f::kAttrType, f::kAttrTypeFloat);
  return a;
}

ProtoWriter Node(const std::string& op_type, const std::string& name,
                 const std::vector<std::string>& inputs, const std::string& output,
                 const std::vector<ProtoWriter>& attributes = {}) {
  ProtoWriter n;
  for (const auto& in : inputs) n.Bytes(f::kNodeInput, in);
  n.Bytes(f::kNodeOutput, output);
  n.Bytes(f::kNodeName, name);
  n.Bytes(f::kNodeOpType, op_type);
  for (const auto& a : attributes) n.Message(f::kNodeAttribute, a);
  return n;
}

ProtoWriter StringEntry(const std::string& key, const std::string& value) {
  ProtoWriter e;
  e.Bytes(f::kEntryKey, key).Bytes(f::kEntryValue, value);
  return e;
}

// The nodes of activation `a` from `in` to `out`; none for linear (the caller
// then writes `out` itself). `tag` keeps node names unique ("sigmoid" + tag).
void AppendActivation(ProtoWriter* graph, Activation a, const std::string& tag,
                      const std::string& in, const std::string& out) {
  switch (a) {
    case Activation::kLinear:
      break;
    case Activation::kSigmoid:
      graph->Message(f::kGraphNode, Node("Sigmoid", "sigmoid" + tag, {in}, out));
      break;
    case Activation::kTanh:
      graph->Message(f::kGraphNode, Node("Tanh", "tanh" + tag, {in}, out));
      break;
    case Activation::kRelu:
      graph->Message(f::kGraphNode, Node("Relu", "relu" + tag, {in}, out));
      break;
    case Activation::kLeakyRelu:
      graph->Message(f::kGraphNode, Node("LeakyRelu", "leakyrelu" + tag, {in}, out,
                                         {FloatAttribute("alpha", kLeakyReluSlope)}));
      break;
    case Activation::kSwish: {
      const std::string gate = "g" + tag;
      graph->Message(f::kGraphNode, Node("Sigmoid", "swish_gate" + tag, {in}, gate));
      graph->Message(f::kGraphNode, Node("Mul", "swish" + tag, {in, gate}, out));
      break;
    }
  }
}

// The ModelProto around `graph`: ir_version, producer, `doc`, the default
// domain at `opset`, and the metadata (tarn.inputNames first when given).
std::string ModelBytes(const ProtoWriter& graph, int opset, const std::string& doc,
                       const std::vector<std::string>& input_names,
                       const std::vector<std::pair<std::string, std::string>>& metadata) {
  ProtoWriter opset_id;
  opset_id.Bytes(f::kOpsetDomain, "").Int(f::kOpsetVersion, opset);
  ProtoWriter model;
  model.Int(f::kModelIrVersion, kOnnxIrVersion);
  model.Bytes(f::kModelProducerName, kOnnxProducerName);
  model.Bytes(f::kModelProducerVersion, kOnnxProducerVersion);
  model.Bytes(f::kModelDocString, doc);
  model.Message(f::kModelGraph, graph);
  model.Message(f::kModelOpsetImport, opset_id);
  if (!input_names.empty()) {
    model.Message(
        f::kModelMetadataProps,
        StringEntry("tarn.inputNames",
                    Json(input_names).dump(-1, ' ', false, Json::error_handler_t::replace)));
  }
  for (const auto& [key, value] : metadata) {
    model.Message(f::kModelMetadataProps, StringEntry(key, value));
  }
  return model.Take();
}

}  // namespace

Result<std::string> ExportOnnx(const ModelSpec& spec, const std::vector<float>& params,
                               const std::vector<std::string>& input_names,
                               const std::vector<std::pair<std::string, std::string>>& metadata) {
  TARN_RETURN_IF_ERROR(spec.ValidateParameters(params, "ONNX export"));
  if (!input_names.empty() && input_names.size() != static_cast<size_t>(spec.input_count)) {
    return InvalidArgument("ONNX export: " + std::to_string(input_names.size()) +
                           " input names for a network of " + std::to_string(spec.input_count) +
                           " inputs");
  }

  ProtoWriter graph;
  std::vector<ProtoWriter> initializers;
  std::string x = kOnnxInputName;
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    const LayerSpec& layer = spec.layers[l];
    const bool last = l + 1 == spec.layers.size();
    const std::string id = std::to_string(l);
    const std::string w = "W" + id, b = "b" + id;
    initializers.push_back(FloatTensor(w, {layer.outputs, layer.inputs},
                                       params.data() + spec.WeightOffset(l),
                                       static_cast<size_t>(layer.outputs) * layer.inputs));
    initializers.push_back(
        FloatTensor(b, {layer.outputs}, params.data() + spec.BiasOffset(l), layer.outputs));

    const std::string out = last ? kOnnxOutputName : "h" + id;
    const bool linear = layer.activation == Activation::kLinear;
    const std::string gemm = linear ? out : "z" + id;
    graph.Message(f::kGraphNode,
                  Node("Gemm", "gemm" + id, {x, w, b}, gemm, {IntAttribute("transB", 1)}));
    AppendActivation(&graph, layer.activation, id, gemm, out);
    x = out;
  }
  graph.Bytes(f::kGraphName, "tarn");
  for (const auto& t : initializers) graph.Message(f::kGraphInitializer, t);
  graph.Bytes(f::kGraphDocString,
              "Dense network exported by tarn: input = the normalized feature vector, "
              "score = the model output.");
  graph.Message(f::kGraphInput,
                FloatValueInfo(kOnnxInputName, {Dim{0, "N"}, Dim{spec.input_count, ""}}));
  graph.Message(f::kGraphOutput, FloatValueInfo(kOnnxOutputName, {Dim{0, "N"}, Dim{1, ""}}));

  std::string doc = "tarn model: " + std::to_string(spec.input_count) + " inputs";
  for (const auto& layer : spec.layers) {
    doc += std::string(" -> ") + std::to_string(layer.outputs) + " " +
           ActivationName(layer.activation);
  }
  doc += ".";
  if (!input_names.empty()) {
    doc += " Inputs, in order: ";
    for (size_t i = 0; i < input_names.size(); ++i) {
      if (i) doc += ", ";
      doc += input_names[i];
    }
    doc += ".";
  }

  return ModelBytes(graph, kOnnxOpsetVersion, doc, input_names, metadata);
}

}  // namespace tarn::model

// ------------------------------------------------------------ graph models

namespace tarn::model {

namespace {

// Builds the nodes of a graph model's ONNX graph. Every value a node makes is
// named after the graph node ("node/<name>", its intermediates
// "node/<name>/..."), its parameters "param/<name>/...", so that no name can
// meet a column's (the ids inputs) unless the column is so named.
class OnnxGraphBuilder {
 public:
  // Appends one node; its name is its output's.
  const std::string& Op(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::string& output,
                        const std::vector<ProtoWriter>& attributes = {}) {
    graph_.Message(f::kGraphNode, Node(op_type, output, inputs, output, attributes));
    return output;
  }
  const std::string& Float(const std::string& name, const std::vector<int64_t>& dims,
                           const float* values, size_t count) {
    initializers_.push_back(FloatTensor(name, dims, values, count));
    return name;
  }
  // A uint64 or int64 constant shared by every node that needs it (made once).
  std::string Integer(const std::string& name, const std::vector<int64_t>& dims,
                      const std::vector<uint64_t>& values, int data_type = f::kDataTypeInt64) {
    if (constants_.insert(name).second) {
      initializers_.push_back(IntegerTensor(name, dims, values, data_type));
    }
    return name;
  }
  ProtoWriter* graph() { return &graph_; }
  const std::vector<ProtoWriter>& initializers() const { return initializers_; }

 private:
  ProtoWriter graph_;
  std::vector<ProtoWriter> initializers_;
  std::set<std::string> constants_;
};

// rows = HashedBucket(id, buckets) on an int64 [N] tensor of ids >= 0: the
// id's 64 bits through MixSeed (training_data.h: add the golden ratio, then
// SplitMix64's finalizer) in wrapping uint64 arithmetic, modulo buckets.
std::string HashedRows(OnnxGraphBuilder* b, const std::string& ids, const std::string& at,
                       int64_t buckets) {
  auto u64 = [&](const std::string& name, uint64_t v) {
    return b->Integer("hash/" + name, {}, {v}, f::kDataTypeUint64);
  };
  std::string x = b->Op("Cast", {ids}, at + "/u64", {IntAttribute("to", f::kDataTypeUint64)});
  x = b->Op("Add", {x, u64("golden", 0x9e3779b97f4a7c15ULL)}, at + "/x0");
  const std::pair<int, uint64_t> rounds[] = {{30, 0xbf58476d1ce4e5b9ULL},
                                             {27, 0x94d049bb133111ebULL}};
  int k = 0;
  for (const auto& [shift, multiplier] : rounds) {
    const std::string tag = at + "/r" + std::to_string(++k);
    const std::string shifted = b->Op("BitShift", {x, u64("shift" + std::to_string(shift), shift)},
                                      tag + "/shift", {StringAttribute("direction", "RIGHT")});
    x = b->Op("BitwiseXor", {x, shifted}, tag + "/xor");
    x = b->Op("Mul", {x, u64("mul" + std::to_string(k), multiplier)}, tag + "/mul");
  }
  const std::string last = b->Op("BitShift", {x, u64("shift31", 31)}, at + "/shift",
                                 {StringAttribute("direction", "RIGHT")});
  x = b->Op("BitwiseXor", {x, last}, at + "/mix");
  x = b->Op("Mod", {x, u64("buckets" + std::to_string(buckets), static_cast<uint64_t>(buckets))},
            at + "/bucket", {IntAttribute("fmod", 0)});
  return b->Op("Cast", {x}, at + "/rows", {IntAttribute("to", f::kDataTypeInt64)});
}

// The ids of `column` (int64 [N]) kept inside [0, vocabulary): an id outside
// becomes the missing id, or, without one, 0 with its row noted in *valid
// (the caller then makes that row's score NaN).
std::string GuardedIds(OnnxGraphBuilder* b, const std::string& column, const OnnxIdRange& range,
                       const std::string& at, std::string* valid) {
  const auto i64 = [&](const std::string& name, int64_t v) {
    return b->Integer(name, {}, {static_cast<uint64_t>(v)});
  };
  const std::string lo =
      b->Op("GreaterOrEqual", {column, i64("const/zero", 0)}, at + "/nonnegative");
  const std::string hi =
      b->Op("Less", {column, i64(at + "/vocabulary", range.vocabulary)}, at + "/below_vocabulary");
  *valid = b->Op("And", {lo, hi}, at + "/valid");
  const int64_t fallback = range.missing_id.value_or(0);
  return b->Op("Where", {*valid, column, i64(at + "/fallback", fallback)}, at);
}

// a op b op c ... from left to right, as the engine accumulates (ONNX's
// variadic Sum leaves the order to the runtime).
std::string Chain(OnnxGraphBuilder* b, const std::string& op, const std::vector<std::string>& in,
                  const std::string& out) {
  std::string acc = in[0];
  for (size_t k = 1; k < in.size(); ++k) {
    acc = b->Op(op, {acc, in[k]}, k + 1 == in.size() ? out : out + "/" + std::to_string(k));
  }
  return acc;
}

}  // namespace

int GraphOnnxOpset(const GraphSpec& spec) {
  for (const auto& n : spec.nodes) {
    if (n.op == GraphOp::kHashedEmbedding) return kOnnxGraphHashOpsetVersion;
  }
  return kOnnxOpsetVersion;
}

Result<std::string> ExportGraphOnnx(
    const GraphSpec& spec, const std::vector<float>& params, const GraphOnnxInputs& inputs,
    const std::vector<std::pair<std::string, std::string>>& metadata) {
  TARN_RETURN_IF_ERROR(spec.Validate().WithContext("ONNX export"));
  const std::vector<GraphNodeLayout> layout = spec.Layout();
  const std::vector<EmbeddingTableShape> tables = spec.TableShapes();
  const size_t dense_count = spec.DenseParameterCount();
  const size_t expected = spec.ParameterCount() + spec.StateCount();
  if (params.size() != expected) {
    return InvalidArgument("ONNX export: the graph has " + std::to_string(expected) +
                           " parameters (dense, tables, batch-norm state), got " +
                           std::to_string(params.size()));
  }
  for (size_t k = 0; k < params.size(); ++k) {
    if (!std::isfinite(params[k])) {
      return InvalidArgument("ONNX export: parameter " + std::to_string(k) + " is not finite");
    }
  }
  if (!inputs.input_names.empty() &&
      inputs.input_names.size() != static_cast<size_t>(inputs.input_width)) {
    return InvalidArgument("ONNX export: " + std::to_string(inputs.input_names.size()) +
                           " input names for a normalized vector of " +
                           std::to_string(inputs.input_width) + " values");
  }
  std::vector<const float*> table_data;
  const float* next_table = params.data() + dense_count;
  for (const auto& t : tables) {
    table_data.push_back(next_table);
    next_table += static_cast<size_t>(t.rows) * static_cast<size_t>(t.dim);
  }
  const float* state = next_table;

  OnnxGraphBuilder b;
  std::map<std::string, size_t> index;
  std::vector<std::string> value(spec.nodes.size());
  std::vector<std::string> id_columns;         // the ids inputs' columns, each once, in node order
  std::map<std::string, std::string> guarded;  // column -> its ids kept within range
  std::vector<std::string> rejecting;  // per column without a missing id: its rows' validity
  auto range_of = [&](const std::string& column) -> const OnnxIdRange* {
    for (const auto& r : inputs.id_ranges)
      if (r.column == column) return &r;
    return nullptr;
  };
  bool any_rejecting = false;
  for (const auto& n : spec.nodes) {
    const OnnxIdRange* r =
        n.op == GraphOp::kInput && n.source == InputSource::kIds ? range_of(n.column) : nullptr;
    any_rejecting = any_rejecting || (r && !r->missing_id);
  }
  bool reads_dense = false;
  const std::string axis1 = "const/axis1";
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    const GraphNode& node = spec.nodes[i];
    const GraphNodeLayout& l = layout[i];
    const std::string where =
        "ONNX export: node '" + node.name + "' (op " + GraphOpName(node.op) + ")";
    // With rows to reject, the score is made after the last node.
    const std::string out =
        i + 1 == spec.nodes.size() && !any_rejecting ? kOnnxOutputName : "node/" + node.name;
    const std::string param = "param/" + node.name + "/";
    std::vector<std::string> in;
    for (const auto& name : node.inputs) in.push_back(value[index.at(name)]);
    const float* p = params.data() + l.param_offset;
    const int64_t width = l.width;
    switch (node.op) {
      case GraphOp::kInput:
        if (node.source == InputSource::kIds) {
          if (node.column == kOnnxInputName || node.column == kOnnxOutputName) {
            return Unsupported(where + ": its column is named '" + node.column +
                               "', the name of the model's " +
                               (node.column == kOnnxInputName ? "dense input" : "output"));
          }
          if (!guarded.count(node.column)) {
            const OnnxIdRange* range = range_of(node.column);
            if (!range || range->vocabulary < 1) {
              return InvalidArgument(where + ": no id range for column '" + node.column + "'");
            }
            id_columns.push_back(node.column);
            std::string valid;
            guarded[node.column] = GuardedIds(&b, node.column, *range, out, &valid);
            if (!range->missing_id) rejecting.push_back(valid);
          }
          value[i] = guarded.at(node.column);
          break;
        }
        if (reads_dense) return Unsupported(where + ": a second dense input");
        reads_dense = true;
        if (static_cast<int64_t>(inputs.dense_slots.size()) != width) {
          return InvalidArgument(where + ": width " + std::to_string(width) + " but " +
                                 std::to_string(inputs.dense_slots.size()) +
                                 " normalized slots feed it");
        }
        {
          bool all = width == inputs.input_width;
          std::vector<uint64_t> slots;
          for (int64_t k = 0; k < width; ++k) {
            const int s = inputs.dense_slots[static_cast<size_t>(k)];
            if (s < 0 || s >= inputs.input_width) {
              return InvalidArgument(where + ": slot " + std::to_string(s) +
                                     " is outside the normalized vector");
            }
            all = all && s == k;
            slots.push_back(static_cast<uint64_t>(s));
          }
          // The normalized vector's category-index slots are ids, not values.
          value[i] =
              all ? std::string(kOnnxInputName)
                  : b.Op("Gather", {kOnnxInputName, b.Integer(param + "slots", {width}, slots)},
                         out, {IntAttribute("axis", 1)});
        }
        break;
      case GraphOp::kEmbedding:
      case GraphOp::kHashedEmbedding: {
        const EmbeddingTableShape& t = tables[static_cast<size_t>(l.table)];
        const std::string table =
            b.Float(param + "table", {t.rows, t.dim}, table_data[static_cast<size_t>(l.table)],
                    static_cast<size_t>(t.rows) * static_cast<size_t>(t.dim));
        const std::string rows =
            node.op == GraphOp::kHashedEmbedding ? HashedRows(&b, in[0], out, node.buckets) : in[0];
        value[i] = b.Op("Gather", {table, rows}, out, {IntAttribute("axis", 0)});
        break;
      }
      case GraphOp::kDense: {
        const int64_t k = layout[index.at(node.inputs[0])].width;
        std::vector<std::string> gemm_in = {
            in[0], b.Float(param + "W", {width, k}, p, static_cast<size_t>(width * k))};
        if (node.use_bias) {
          gemm_in.push_back(
              b.Float(param + "b", {width}, p + width * k, static_cast<size_t>(width)));
        }
        const bool linear = node.activation == Activation::kLinear;
        const std::string z =
            b.Op("Gemm", gemm_in, linear ? out : out + "/z", {IntAttribute("transB", 1)});
        AppendActivation(b.graph(), node.activation, ":" + out, z, out);
        value[i] = out;
        break;
      }
      case GraphOp::kActivation:
        if (node.activation == Activation::kLinear) {
          b.Op("Identity", {in[0]}, out);
        } else {
          AppendActivation(b.graph(), node.activation, ":" + out, in[0], out);
        }
        value[i] = out;
        break;
      case GraphOp::kConcatenate:
        value[i] = b.Op("Concat", in, out, {IntAttribute("axis", 1)});
        break;
      case GraphOp::kAdd:
        value[i] = Chain(&b, "Add", in, out);
        break;
      case GraphOp::kMultiply:
        value[i] = Chain(&b, "Mul", in, out);
        break;
      case GraphOp::kDot: {
        const std::string prod = b.Op("Mul", {in[0], in[1]}, out + "/prod");
        value[i] = b.Op("ReduceSum", {prod, b.Integer(axis1, {1}, {1})}, out,
                        {IntAttribute("keepdims", 1)});
        break;
      }
      case GraphOp::kFm: {
        // 0.5 * sum_d ((sum_k v_kd)^2 - sum_k v_kd^2), as the engine.
        const std::string sum = Chain(&b, "Add", in, out + "/sum");
        std::string diff = b.Op("Mul", {sum, sum}, out + "/square_of_sum");
        for (size_t k = 0; k < in.size(); ++k) {
          const std::string tag = out + "/" + std::to_string(k);
          const std::string sq = b.Op("Mul", {in[k], in[k]}, tag + "/square");
          diff = b.Op("Sub", {diff, sq}, tag + "/diff");
        }
        const std::string total = b.Op("ReduceSum", {diff, b.Integer(axis1, {1}, {1})},
                                       out + "/total", {IntAttribute("keepdims", 1)});
        const float half = 0.5f;
        value[i] = b.Op("Mul", {total, b.Float(out + "/half", {}, &half, 1)}, out);
        break;
      }
      case GraphOp::kCross: {
        // x_{c+1} = x_0 * (x_c . w_c) + b_c + x_c.
        const std::string x0 = in[0];
        std::string x = x0;
        for (int c = 0; c < node.layers; ++c) {
          const std::string tag = out + "/" + std::to_string(c);
          const float* w = p + 2 * static_cast<size_t>(c) * static_cast<size_t>(width);
          const std::string s = b.Op("MatMul",
                                     {x, b.Float(param + "w" + std::to_string(c), {width, 1}, w,
                                                 static_cast<size_t>(width))},
                                     tag + "/s");
          const std::string scaled = b.Op("Mul", {x0, s}, tag + "/x0s");
          const std::string biased = b.Op("Add",
                                          {scaled, b.Float(param + "b" + std::to_string(c), {width},
                                                           w + width, static_cast<size_t>(width))},
                                          tag + "/biased");
          x = b.Op("Add", {biased, x}, c + 1 == node.layers ? out : tag + "/x");
        }
        value[i] = x;
        break;
      }
      case GraphOp::kDropout:
        value[i] = b.Op("Identity", {in[0]}, out);  // inference: no dropout
        break;
      case GraphOp::kBatchNorm: {
        const float* moving = state + l.state_offset;
        const size_t w = static_cast<size_t>(width);
        value[i] = b.Op("BatchNormalization",
                        {in[0], b.Float(param + "gamma", {width}, p, w),
                         b.Float(param + "beta", {width}, p + w, w),
                         b.Float(param + "moving_mean", {width}, moving, w),
                         b.Float(param + "moving_variance", {width}, moving + w, w)},
                        out, {FloatAttribute("epsilon", node.epsilon)});
        break;
      }
      default:
        return Unsupported(where + " has no exact ONNX form in tarn's exporter");
    }
    index[node.name] = i;
  }
  if (any_rejecting) {
    // A row with an id no raw value gives (outside a Keras-hashed column's
    // bins) scores NaN: [N] validity to [N, 1], then Where.
    const std::string valid = Chain(&b, "And", rejecting, "score/valid_ids");
    const std::string column =
        b.Op("Unsqueeze", {valid, b.Integer(axis1, {1}, {1})}, "score/valid_rows");
    const float nan = std::numeric_limits<float>::quiet_NaN();
    b.Op("Where", {column, value.back(), b.Float("const/nan", {}, &nan, 1)}, kOnnxOutputName);
  } else if (value.back() != kOnnxOutputName) {
    b.Op("Identity", {value.back()}, kOnnxOutputName);
  }

  ProtoWriter* graph = b.graph();
  graph->Bytes(f::kGraphName, "tarn");
  for (const auto& t : b.initializers()) graph->Message(f::kGraphInitializer, t);
  graph->Bytes(f::kGraphDocString,
               "Graph model exported by tarn: input = the normalized feature vector, one int64 "
               "input per id column (named after the column), score = the model output.");
  if (reads_dense) {
    graph->Message(f::kGraphInput,
                   FloatValueInfo(kOnnxInputName, {Dim{0, "N"}, Dim{inputs.input_width, ""}}));
  }
  for (const auto& column : id_columns) {
    graph->Message(f::kGraphInput, TensorValueInfo(column, f::kDataTypeInt64, {Dim{0, "N"}}));
  }
  graph->Message(f::kGraphOutput, FloatValueInfo(kOnnxOutputName, {Dim{0, "N"}, Dim{1, ""}}));

  std::string doc = "tarn graph model: " + std::to_string(spec.nodes.size()) + " nodes";
  if (reads_dense) doc += ", " + std::to_string(inputs.input_width) + " normalized inputs";
  doc += ", " + std::to_string(id_columns.size()) + " id inputs.";
  return ModelBytes(*graph, GraphOnnxOpset(spec), doc,
                    reads_dense ? inputs.input_names : std::vector<std::string>{}, metadata);
}

}  // namespace tarn::model
