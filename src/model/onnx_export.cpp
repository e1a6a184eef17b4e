#include "model/onnx_export.h"

#include <cmath>
#include <cstdint>
#include <cstring>
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
constexpr uint32_t kAttrName = 1, kAttrF = 2, kAttrI = 3, kAttrType = 20;
constexpr int kAttrTypeFloat = 1, kAttrTypeInt = 2;
// TensorProto
constexpr uint32_t kTensorDims = 1, kTensorDataType = 2, kTensorName = 8, kTensorRawData = 9;
constexpr int kDataTypeFloat = 1;
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

ProtoWriter FloatValueInfo(const std::string& name, const std::vector<Dim>& dims) {
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
  tensor.Int(f::kTensorTypeElemType, f::kDataTypeFloat).Message(f::kTensorTypeShape, shape);
  ProtoWriter type;
  type.Message(f::kTypeTensorType, tensor);
  ProtoWriter value;
  value.Bytes(f::kValueName, name).Message(f::kValueType, type);
  return value;
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
    switch (layer.activation) {
      case Activation::kLinear:
        break;
      case Activation::kSigmoid:
        graph.Message(f::kGraphNode, Node("Sigmoid", "sigmoid" + id, {gemm}, out));
        break;
      case Activation::kTanh:
        graph.Message(f::kGraphNode, Node("Tanh", "tanh" + id, {gemm}, out));
        break;
      case Activation::kRelu:
        graph.Message(f::kGraphNode, Node("Relu", "relu" + id, {gemm}, out));
        break;
      case Activation::kLeakyRelu:
        graph.Message(f::kGraphNode, Node("LeakyRelu", "leakyrelu" + id, {gemm}, out,
                                          {FloatAttribute("alpha", kLeakyReluSlope)}));
        break;
      case Activation::kSwish: {
        const std::string gate = "g" + id;
        graph.Message(f::kGraphNode, Node("Sigmoid", "swish_gate" + id, {gemm}, gate));
        graph.Message(f::kGraphNode, Node("Mul", "swish" + id, {gemm, gate}, out));
        break;
      }
    }
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

  ProtoWriter opset;
  opset.Bytes(f::kOpsetDomain, "").Int(f::kOpsetVersion, kOnnxOpsetVersion);

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

  ProtoWriter model;
  model.Int(f::kModelIrVersion, kOnnxIrVersion);
  model.Bytes(f::kModelProducerName, kOnnxProducerName);
  model.Bytes(f::kModelProducerVersion, kOnnxProducerVersion);
  model.Bytes(f::kModelDocString, doc);
  model.Message(f::kModelGraph, graph);
  model.Message(f::kModelOpsetImport, opset);
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

}  // namespace tarn::model
