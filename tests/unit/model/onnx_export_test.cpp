#include "model/onnx_export.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tarn::model {
namespace {

// A test-only protobuf reader: a message as its fields, each field number
// mapping to its values in order.
struct Field {
  int wire = 0;
  uint64_t varint = 0;   // wire 0
  uint32_t fixed32 = 0;  // wire 5
  std::string bytes;     // wire 2
};
using Message = std::multimap<uint32_t, Field>;

uint64_t ReadVarint(std::string_view s, size_t* pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= s.size()) throw std::runtime_error("truncated varint");
    auto b = static_cast<uint8_t>(s[(*pos)++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  throw std::runtime_error("varint too long");
}

Message Parse(std::string_view s) {
  Message m;
  size_t pos = 0;
  while (pos < s.size()) {
    uint64_t key = ReadVarint(s, &pos);
    Field f;
    f.wire = static_cast<int>(key & 7);
    auto number = static_cast<uint32_t>(key >> 3);
    switch (f.wire) {
      case 0:
        f.varint = ReadVarint(s, &pos);
        break;
      case 2: {
        uint64_t len = ReadVarint(s, &pos);
        if (pos + len > s.size()) throw std::runtime_error("truncated bytes");
        f.bytes = std::string(s.substr(pos, len));
        pos += len;
        break;
      }
      case 5:
        if (pos + 4 > s.size()) throw std::runtime_error("truncated fixed32");
        for (int i = 0; i < 4; ++i) {
          f.fixed32 |= static_cast<uint32_t>(static_cast<uint8_t>(s[pos + i])) << (8 * i);
        }
        pos += 4;
        break;
      default:
        throw std::runtime_error("unexpected wire type " + std::to_string(f.wire));
    }
    m.emplace(number, f);
  }
  return m;
}

std::vector<Field> All(const Message& m, uint32_t number) {
  std::vector<Field> out;
  auto [a, b] = m.equal_range(number);
  for (auto it = a; it != b; ++it) out.push_back(it->second);
  return out;
}

const Field& One(const Message& m, uint32_t number) {
  EXPECT_EQ(m.count(number), 1u) << "field " << number;
  auto it = m.find(number);
  if (it == m.end()) throw std::runtime_error("missing field " + std::to_string(number));
  return it->second;
}

std::string Str(const Message& m, uint32_t number) {
  const Field& f = One(m, number);
  EXPECT_EQ(f.wire, 2);
  return f.bytes;
}

int64_t Int(const Message& m, uint32_t number) {
  const Field& f = One(m, number);
  EXPECT_EQ(f.wire, 0);
  return static_cast<int64_t>(f.varint);
}

float FloatOf(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

// Decoded pieces of the ONNX model.
struct Node {
  std::string op, name;
  std::vector<std::string> inputs, outputs;
  std::map<std::string, Message> attributes;
};
struct Tensor {
  std::vector<int64_t> dims;
  int64_t data_type = 0;
  std::vector<float> values;
};
struct Value {
  int64_t elem_type = 0;
  std::vector<std::string> dims;  // dim_value as digits, dim_param as "?name"
};
struct Decoded {
  Message model;
  std::vector<Node> nodes;
  std::map<std::string, Tensor> initializers;
  std::vector<std::pair<std::string, Value>> inputs, outputs;
  std::map<std::string, std::string> metadata;
};

std::pair<std::string, Value> DecodeValueInfo(const std::string& bytes) {
  Message vi = Parse(bytes);
  Value v;
  Message type = Parse(Str(vi, 2));
  Message tensor = Parse(Str(type, 1));
  v.elem_type = Int(tensor, 1);
  Message shape = Parse(Str(tensor, 2));
  for (const auto& d : All(shape, 1)) {
    Message dim = Parse(d.bytes);
    if (dim.count(2)) {
      v.dims.push_back("?" + Str(dim, 2));
    } else {
      v.dims.push_back(std::to_string(Int(dim, 1)));
    }
  }
  return {Str(vi, 1), v};
}

Decoded Decode(const std::string& bytes) {
  Decoded d;
  d.model = Parse(bytes);
  Message graph = Parse(Str(d.model, 7));
  for (const auto& f : All(graph, 1)) {
    Message n = Parse(f.bytes);
    Node node;
    node.op = Str(n, 4);
    node.name = Str(n, 3);
    for (const auto& i : All(n, 1)) node.inputs.push_back(i.bytes);
    for (const auto& o : All(n, 2)) node.outputs.push_back(o.bytes);
    for (const auto& a : All(n, 5)) {
      Message attr = Parse(a.bytes);
      node.attributes[Str(attr, 1)] = attr;
    }
    d.nodes.push_back(node);
  }
  for (const auto& f : All(graph, 5)) {
    Message t = Parse(f.bytes);
    Tensor tensor;
    for (const auto& dim : All(t, 1)) tensor.dims.push_back(static_cast<int64_t>(dim.varint));
    tensor.data_type = Int(t, 2);
    std::string raw = Str(t, 9);
    EXPECT_EQ(raw.size() % 4, 0u);
    for (size_t i = 0; i + 4 <= raw.size(); i += 4) {
      uint32_t bits = 0;
      for (int k = 0; k < 4; ++k) {
        bits |= static_cast<uint32_t>(static_cast<uint8_t>(raw[i + k])) << (8 * k);
      }
      tensor.values.push_back(FloatOf(bits));
    }
    d.initializers[Str(t, 8)] = tensor;
  }
  for (const auto& f : All(graph, 11)) d.inputs.push_back(DecodeValueInfo(f.bytes));
  for (const auto& f : All(graph, 12)) d.outputs.push_back(DecodeValueInfo(f.bytes));
  for (const auto& f : All(d.model, 14)) {
    Message e = Parse(f.bytes);
    d.metadata[Str(e, 1)] = Str(e, 2);
  }
  return d;
}

// Runs the decoded graph on one input row (the ops the exporter emits).
std::vector<float> Interpret(const Decoded& d, const std::vector<float>& input) {
  std::map<std::string, std::vector<float>> values = {{"input", input}};
  for (const auto& n : d.nodes) {
    const auto& x = values.at(n.inputs[0]);
    std::vector<float> y;
    if (n.op == "Gemm") {
      const Tensor& w = d.initializers.at(n.inputs[1]);
      const Tensor& b = d.initializers.at(n.inputs[2]);
      EXPECT_EQ(Int(n.attributes.at("transB"), 3), 1);
      int64_t rows = w.dims[0], cols = w.dims[1];
      EXPECT_EQ(static_cast<int64_t>(x.size()), cols);
      for (int64_t r = 0; r < rows; ++r) {
        double s = b.values[r];
        for (int64_t c = 0; c < cols; ++c) s += double{w.values[r * cols + c]} * x[c];
        y.push_back(static_cast<float>(s));
      }
    } else if (n.op == "Mul") {
      const auto& g = values.at(n.inputs[1]);
      for (size_t i = 0; i < x.size(); ++i) y.push_back(x[i] * g[i]);
    } else {
      for (float v : x) {
        if (n.op == "Tanh") {
          y.push_back(std::tanh(v));
        } else if (n.op == "Sigmoid") {
          y.push_back(1 / (1 + std::exp(-v)));
        } else if (n.op == "Relu") {
          y.push_back(v > 0 ? v : 0);
        } else if (n.op == "LeakyRelu") {
          float alpha = FloatOf(One(n.attributes.at("alpha"), 2).fixed32);
          y.push_back(v > 0 ? v : alpha * v);
        } else {
          ADD_FAILURE() << "unexpected op " << n.op;
        }
      }
    }
    values[n.outputs[0]] = y;
  }
  return values.at("score");
}

ModelSpec TwoLayer(Activation hidden, Activation output = Activation::kSigmoid) {
  ModelSpec spec;
  spec.input_count = 3;
  spec.layers = {LayerSpec{3, 2, hidden, 0}, LayerSpec{2, 1, output, 0}};
  return spec;
}

std::vector<float> Params(size_t n) {
  std::vector<float> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = 0.1f * static_cast<float>(i) - 0.45f;
  return p;
}

TEST(OnnxExportTest, TwoLayerTanhSigmoidStructure) {
  ModelSpec spec = TwoLayer(Activation::kTanh);
  // Layout: W0 (2x3) at 0, b0 (2) at 6, W1 (1x2) at 8, b1 (1) at 10.
  ASSERT_EQ(spec.ParameterCount(), 11u);
  std::vector<float> params = Params(11);
  auto bytes = ExportOnnx(spec, params, {"age", "color", "color"}, {{"tarn.normType", "ZSCALE"}});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Decoded d = Decode(*bytes);

  EXPECT_EQ(Int(d.model, 1), 8);  // ir_version
  EXPECT_EQ(Str(d.model, 2), "tarn");
  EXPECT_FALSE(Str(d.model, 3).empty());
  EXPECT_NE(Str(d.model, 6).find("age, color, color"), std::string::npos);
  Message opset = Parse(Str(d.model, 8));
  EXPECT_EQ(Str(opset, 1), "");
  EXPECT_EQ(Int(opset, 2), 13);
  EXPECT_EQ(d.metadata.at("tarn.inputNames"), R"(["age","color","color"])");
  EXPECT_EQ(d.metadata.at("tarn.normType"), "ZSCALE");

  ASSERT_EQ(d.nodes.size(), 4u);
  EXPECT_EQ(d.nodes[0].op, "Gemm");
  EXPECT_EQ(d.nodes[0].inputs, (std::vector<std::string>{"input", "W0", "b0"}));
  EXPECT_EQ(d.nodes[1].op, "Tanh");
  EXPECT_EQ(d.nodes[1].inputs[0], d.nodes[0].outputs[0]);
  EXPECT_EQ(d.nodes[2].op, "Gemm");
  EXPECT_EQ(d.nodes[2].inputs, (std::vector<std::string>{d.nodes[1].outputs[0], "W1", "b1"}));
  EXPECT_EQ(d.nodes[3].op, "Sigmoid");
  EXPECT_EQ(d.nodes[3].outputs, std::vector<std::string>{"score"});
  for (int i : {0, 2}) {
    ASSERT_EQ(d.nodes[i].attributes.size(), 1u);
    const Message& trans_b = d.nodes[i].attributes.at("transB");
    EXPECT_EQ(Int(trans_b, 3), 1);
    EXPECT_EQ(Int(trans_b, 20), 2);  // AttributeProto.INT
  }

  ASSERT_EQ(d.initializers.size(), 4u);
  const Tensor& w0 = d.initializers.at("W0");
  EXPECT_EQ(w0.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w0.data_type, 1);
  EXPECT_EQ(w0.values, std::vector<float>(params.begin(), params.begin() + 6));
  EXPECT_EQ(d.initializers.at("b0").dims, std::vector<int64_t>{2});
  EXPECT_EQ(d.initializers.at("b0").values,
            std::vector<float>(params.begin() + 6, params.begin() + 8));
  EXPECT_EQ(d.initializers.at("W1").dims, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(d.initializers.at("W1").values,
            std::vector<float>(params.begin() + 8, params.begin() + 10));
  EXPECT_EQ(d.initializers.at("b1").values, std::vector<float>{params[10]});

  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].first, "input");
  EXPECT_EQ(d.inputs[0].second.elem_type, 1);
  EXPECT_EQ(d.inputs[0].second.dims, (std::vector<std::string>{"?N", "3"}));
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_EQ(d.outputs[0].first, "score");
  EXPECT_EQ(d.outputs[0].second.elem_type, 1);
  EXPECT_EQ(d.outputs[0].second.dims, (std::vector<std::string>{"?N", "1"}));

  // The graph computes the network.
  std::vector<float> x = {0.5f, -1.25f, 2.0f};
  double h[2];
  for (int r = 0; r < 2; ++r) {
    double s = params[6 + r];
    for (int c = 0; c < 3; ++c) s += double{params[r * 3 + c]} * x[c];
    h[r] = std::tanh(s);
  }
  double z = params[10] + params[8] * h[0] + params[9] * h[1];
  auto score = Interpret(d, x);
  ASSERT_EQ(score.size(), 1u);
  EXPECT_NEAR(score[0], 1 / (1 + std::exp(-z)), 1e-6);
}

TEST(OnnxExportTest, LeakyReluSwishReluAndLinear) {
  std::vector<float> x = {-1.5f, 0.25f, 3.0f};
  for (Activation hidden :
       {Activation::kLeakyRelu, Activation::kSwish, Activation::kRelu, Activation::kLinear}) {
    SCOPED_TRACE(ActivationName(hidden));
    ModelSpec spec = TwoLayer(hidden, Activation::kLinear);
    std::vector<float> params = Params(spec.ParameterCount());
    auto bytes = ExportOnnx(spec, params, {});
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    Decoded d = Decode(*bytes);
    EXPECT_EQ(d.metadata.count("tarn.inputNames"), 0u);
    std::vector<std::string> ops;
    for (const auto& n : d.nodes) ops.push_back(n.op);
    // The linear output layer is a bare Gemm writing "score".
    EXPECT_EQ(ops.back(), "Gemm");
    EXPECT_EQ(d.nodes.back().outputs[0], "score");
    if (hidden == Activation::kLeakyRelu) {
      EXPECT_EQ(ops, (std::vector<std::string>{"Gemm", "LeakyRelu", "Gemm"}));
      const Message& alpha = d.nodes[1].attributes.at("alpha");
      EXPECT_EQ(Int(alpha, 20), 1);  // AttributeProto.FLOAT
      EXPECT_EQ(One(alpha, 2).wire, 5);
      EXPECT_EQ(FloatOf(One(alpha, 2).fixed32), kLeakyReluSlope);
    } else if (hidden == Activation::kSwish) {
      EXPECT_EQ(ops, (std::vector<std::string>{"Gemm", "Sigmoid", "Mul", "Gemm"}));
      const std::string z = d.nodes[0].outputs[0];
      EXPECT_EQ(d.nodes[1].inputs, std::vector<std::string>{z});
      EXPECT_EQ(d.nodes[2].inputs, (std::vector<std::string>{z, d.nodes[1].outputs[0]}));
    } else if (hidden == Activation::kRelu) {
      EXPECT_EQ(ops, (std::vector<std::string>{"Gemm", "Relu", "Gemm"}));
    } else {
      EXPECT_EQ(ops, (std::vector<std::string>{"Gemm", "Gemm"}));
      EXPECT_EQ(d.nodes[1].inputs[0], d.nodes[0].outputs[0]);
    }

    double h[2];
    for (int r = 0; r < 2; ++r) {
      double s = params[6 + r];
      for (int c = 0; c < 3; ++c) s += double{params[r * 3 + c]} * x[c];
      switch (hidden) {
        case Activation::kLeakyRelu:
          h[r] = s > 0 ? s : kLeakyReluSlope * s;
          break;
        case Activation::kSwish:
          h[r] = s / (1 + std::exp(-s));
          break;
        case Activation::kRelu:
          h[r] = s > 0 ? s : 0;
          break;
        default:
          h[r] = s;
      }
    }
    auto score = Interpret(d, x);
    ASSERT_EQ(score.size(), 1u);
    EXPECT_NEAR(score[0], params[10] + params[8] * h[0] + params[9] * h[1], 1e-5);
  }
}

TEST(OnnxExportTest, VarintsAndLargeTensorsRoundTrip) {
  // 300 inputs: dims and lengths need multi-byte varints.
  ModelSpec spec;
  spec.input_count = 300;
  spec.layers = {LayerSpec{300, 200, Activation::kTanh, 0},
                 LayerSpec{200, 1, Activation::kSigmoid, 0}};
  std::vector<float> params = Params(spec.ParameterCount());
  auto bytes = ExportOnnx(spec, params, std::vector<std::string>(300, "x"));
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Decoded d = Decode(*bytes);
  EXPECT_EQ(d.initializers.at("W0").dims, (std::vector<int64_t>{200, 300}));
  EXPECT_EQ(d.initializers.at("W0").values,
            std::vector<float>(params.begin(), params.begin() + 60000));
  EXPECT_EQ(d.initializers.at("b1").values, std::vector<float>{params.back()});
  EXPECT_EQ(d.inputs[0].second.dims, (std::vector<std::string>{"?N", "300"}));
}

TEST(OnnxExportTest, RefusesBadInput) {
  ModelSpec spec = TwoLayer(Activation::kTanh);
  auto short_params = ExportOnnx(spec, Params(10), {});
  ASSERT_FALSE(short_params.ok());
  EXPECT_NE(short_params.status().message().find("10 parameters"), std::string::npos);

  auto names = ExportOnnx(spec, Params(11), {"a", "b"});
  ASSERT_FALSE(names.ok());
  EXPECT_NE(names.status().message().find("2 input names"), std::string::npos);

  std::vector<float> nan = Params(11);
  nan[4] = std::nanf("");
  auto diverged = ExportOnnx(spec, nan, {});
  ASSERT_FALSE(diverged.ok());
  EXPECT_NE(diverged.status().message().find("parameter 4"), std::string::npos);

  ModelSpec broken = spec;
  broken.layers[1].inputs = 5;  // does not chain
  EXPECT_FALSE(ExportOnnx(broken, Params(11), {}).ok());
}

}  // namespace
}  // namespace tarn::model
