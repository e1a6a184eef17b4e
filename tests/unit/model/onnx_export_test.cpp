#include "model/onnx_export.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/graph.h"

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
  std::vector<float> values;       // raw_data as float32
  std::vector<uint64_t> integers;  // raw_data as 64-bit integers (int64, uint64)
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
    if (tensor.data_type == 7 || tensor.data_type == 13) {  // INT64, UINT64
      EXPECT_EQ(raw.size() % 8, 0u);
      for (size_t i = 0; i + 8 <= raw.size(); i += 8) {
        uint64_t v = 0;
        for (int k = 0; k < 8; ++k) {
          v |= static_cast<uint64_t>(static_cast<uint8_t>(raw[i + k])) << (8 * k);
        }
        tensor.integers.push_back(v);
      }
    } else {
      for (size_t i = 0; i + 4 <= raw.size(); i += 4) {
        uint32_t bits = 0;
        for (int k = 0; k < 4; ++k) {
          bits |= static_cast<uint32_t>(static_cast<uint8_t>(raw[i + k])) << (8 * k);
        }
        tensor.values.push_back(FloatOf(bits));
      }
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

// ------------------------------------------------------------ graph models

// One row's value in a graph export: floats (a [1, k] row, or a scalar) or,
// for ids and hash steps, one 64-bit integer.
struct RowValue {
  std::vector<float> f;
  bool integer = false;
  uint64_t u = 0;
};

// Runs a graph model's export on one row, with ONNX's semantics for the ops
// the graph exporter emits (broadcasting only as it uses it: [k] op [1]).
std::map<std::string, RowValue> InterpretGraph(const Decoded& d, const std::vector<float>& input,
                                               const std::map<std::string, int64_t>& ids) {
  std::map<std::string, RowValue> values;
  values["input"].f = input;
  for (const auto& [column, id] : ids) {
    values[column].integer = true;
    values[column].u = static_cast<uint64_t>(id);
  }
  for (const auto& [name, t] : d.initializers) {
    RowValue v;
    if (t.data_type == 1) {
      v.f = t.values;
    } else {
      v.integer = t.integers.size() == 1 && t.dims.empty();
      v.u = t.integers.empty() ? 0 : t.integers[0];
    }
    values[name] = v;
  }
  auto attr_int = [](const Node& n, const std::string& a) { return Int(n.attributes.at(a), 3); };
  for (const auto& n : d.nodes) {
    auto in = [&](size_t k) -> const RowValue& { return values.at(n.inputs.at(k)); };
    RowValue y;
    auto elementwise = [&](auto op) {
      const auto &a = in(0).f, &b = in(1).f;
      const size_t size = std::max(a.size(), b.size());
      for (size_t i = 0; i < size; ++i) {
        y.f.push_back(op(a[a.size() == 1 ? 0 : i], b[b.size() == 1 ? 0 : i]));
      }
    };
    if (n.op == "Gather") {
      const Tensor* table =
          d.initializers.count(n.inputs[0]) ? &d.initializers.at(n.inputs[0]) : nullptr;
      if (attr_int(n, "axis") == 0) {
        EXPECT_TRUE(table && in(1).integer);
        const int64_t dim = table->dims[1];
        const auto row = static_cast<int64_t>(in(1).u);
        EXPECT_LT(row, table->dims[0]);
        y.f.assign(table->values.begin() + row * dim, table->values.begin() + (row + 1) * dim);
      } else {
        for (uint64_t slot : d.initializers.at(n.inputs[1]).integers) y.f.push_back(in(0).f[slot]);
      }
    } else if (n.op == "Cast") {
      y = in(0);  // int64 <-> uint64 keeps the bits
    } else if (n.op == "GreaterOrEqual" || n.op == "Less" || n.op == "And") {
      // int64 comparisons (signed), and And of their booleans
      const auto a = static_cast<int64_t>(in(0).u), b = static_cast<int64_t>(in(1).u);
      y.integer = true;
      y.u = n.op == "GreaterOrEqual" ? a >= b : n.op == "Less" ? a < b : (a != 0 && b != 0);
    } else if (n.op == "Where") {
      const bool pick = in(0).u != 0;
      y = pick ? in(1) : in(2);
      if (!pick && !y.integer && in(1).f.size() > 1) y.f.assign(in(1).f.size(), y.f.at(0));
    } else if (n.op == "Unsqueeze") {
      y = in(0);  // [N] to [N, 1]: one row either way
    } else if (in(0).integer) {
      const uint64_t a = in(0).u, b = in(1).u;
      y.integer = true;
      if (n.op == "Add") {
        y.u = a + b;
      } else if (n.op == "Mul") {
        y.u = a * b;
      } else if (n.op == "BitShift") {
        EXPECT_EQ(Str(n.attributes.at("direction"), 4), "RIGHT");
        y.u = a >> b;
      } else if (n.op == "BitwiseXor") {
        y.u = a ^ b;
      } else if (n.op == "Mod") {
        EXPECT_EQ(attr_int(n, "fmod"), 0);
        y.u = a % b;
      } else {
        ADD_FAILURE() << "unexpected integer op " << n.op;
      }
    } else if (n.op == "Gemm") {
      const Tensor& w = d.initializers.at(n.inputs[1]);
      EXPECT_EQ(attr_int(n, "transB"), 1);
      for (int64_t r = 0; r < w.dims[0]; ++r) {
        double s = n.inputs.size() > 2 ? d.initializers.at(n.inputs[2]).values[r] : 0.0;
        for (int64_t c = 0; c < w.dims[1]; ++c)
          s += double{w.values[r * w.dims[1] + c]} * in(0).f[c];
        y.f.push_back(static_cast<float>(s));
      }
    } else if (n.op == "MatMul") {
      double s = 0;
      for (size_t c = 0; c < in(0).f.size(); ++c) s += double{in(0).f[c]} * in(1).f[c];
      y.f = {static_cast<float>(s)};
    } else if (n.op == "Add") {
      elementwise([](float a, float b) { return a + b; });
    } else if (n.op == "Sub") {
      elementwise([](float a, float b) { return a - b; });
    } else if (n.op == "Mul") {
      elementwise([](float a, float b) { return a * b; });
    } else if (n.op == "Concat") {
      EXPECT_EQ(attr_int(n, "axis"), 1);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        y.f.insert(y.f.end(), in(k).f.begin(), in(k).f.end());
      }
    } else if (n.op == "ReduceSum") {
      EXPECT_EQ(d.initializers.at(n.inputs[1]).integers, std::vector<uint64_t>{1});
      double s = 0;
      for (float v : in(0).f) s += v;
      y.f = {static_cast<float>(s)};
    } else if (n.op == "BatchNormalization") {
      const float eps = FloatOf(One(n.attributes.at("epsilon"), 2).fixed32);
      for (size_t c = 0; c < in(0).f.size(); ++c) {
        y.f.push_back(static_cast<float>((in(0).f[c] - in(3).f[c]) /
                                             std::sqrt(double{in(4).f[c]} + eps) * in(1).f[c] +
                                         in(2).f[c]));
      }
    } else if (n.op == "Identity") {
      y = in(0);
    } else {
      for (float v : in(0).f) {
        if (n.op == "Tanh") {
          y.f.push_back(std::tanh(v));
        } else if (n.op == "Sigmoid") {
          y.f.push_back(1 / (1 + std::exp(-v)));
        } else if (n.op == "Relu") {
          y.f.push_back(v > 0 ? v : 0);
        } else {
          ADD_FAILURE() << "unexpected op " << n.op;
        }
      }
    }
    values[n.outputs[0]] = y;
  }
  return values;
}

float InterpretGraphRow(const Decoded& d, const std::vector<float>& input,
                        const std::map<std::string, int64_t>& ids) {
  const auto values = InterpretGraph(d, input, ids);
  EXPECT_EQ(values.at("score").f.size(), 1u);
  return values.at("score").f.at(0);
}

// Every op of the graph engine, fed by a dense input that skips a category
// index slot and by two id columns, one of them hashed.
GraphSpec EveryOpSpec() {
  auto spec = GraphSpec::FromJson(Json::parse(R"({"nodes": [
    {"name": "x", "op": "input", "source": "dense", "width": 3},
    {"name": "ids_a", "op": "input", "source": "ids", "column": "colA"},
    {"name": "ids_h", "op": "input", "source": "ids", "column": "colH"},
    {"name": "ea", "op": "embedding", "inputs": ["ids_a"], "vocabulary": 4, "units": 2},
    {"name": "eh", "op": "hashed_embedding", "inputs": ["ids_h"], "buckets": 5, "units": 2},
    {"name": "d1", "op": "dense", "inputs": ["x"], "units": 2, "activation": "relu"},
    {"name": "sum", "op": "add", "inputs": ["ea", "eh", "d1"]},
    {"name": "prod", "op": "multiply", "inputs": ["ea", "eh"]},
    {"name": "cat", "op": "concatenate", "inputs": ["sum", "prod"]},
    {"name": "cr", "op": "cross", "inputs": ["cat"], "layers": 2},
    {"name": "bn", "op": "batch_norm", "inputs": ["cr"]},
    {"name": "dr", "op": "dropout", "inputs": ["bn"], "rate": 0.5},
    {"name": "act", "op": "activation", "inputs": ["dr"], "activation": "tanh"},
    {"name": "fm", "op": "fm", "inputs": ["ea", "eh"]},
    {"name": "dot", "op": "dot", "inputs": ["ea", "d1"]},
    {"name": "top", "op": "concatenate", "inputs": ["act", "fm", "dot"]},
    {"name": "wide", "op": "dense", "inputs": ["top"], "units": 2, "use_bias": false},
    {"name": "out", "op": "dense", "inputs": ["wide"], "units": 1, "activation": "sigmoid"}
  ]})"),
                                  "test");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return *spec;
}

// Parameters as the model file holds them: dense, tables, then batch-norm
// state (moving variances kept positive).
std::vector<float> GraphParameters(const GraphSpec& spec) {
  std::vector<float> p(spec.ParameterCount() + spec.StateCount());
  for (size_t i = 0; i < p.size(); ++i) p[i] = 0.37f * std::sin(1.3f * static_cast<float>(i));
  for (const auto& l : spec.Layout()) {
    if (l.state_count == 0) continue;
    float* var = p.data() + spec.ParameterCount() + l.state_offset + l.width;
    for (int k = 0; k < l.width; ++k) var[k] = 0.5f + 0.1f * static_cast<float>(k);
  }
  return p;
}

TEST(OnnxGraphExportTest, EveryOpScoresAsTheEngine) {
  const GraphSpec spec = EveryOpSpec();
  const std::vector<float> params = GraphParameters(spec);
  // The normalized vector holds 4 slots; slot 1 is colA's category index.
  // colA: ids 0..3, 3 the missing one; colH: any id a hash gives.
  const int64_t any_id = std::numeric_limits<int64_t>::max();
  GraphOnnxInputs inputs{
      4, {0, 2, 3}, {"n1", "colA", "n2", "n3"}, {{"colA", 4, 3}, {"colH", any_id, 0}}};
  auto bytes = ExportGraphOnnx(spec, params, inputs, {{"tarn.normType", "ZSCALE_INDEX"}});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Decoded d = Decode(*bytes);

  EXPECT_EQ(GraphOnnxOpset(spec), 18);  // the hashed embedding needs BitwiseXor
  EXPECT_EQ(Int(Parse(Str(d.model, 8)), 2), 18);
  EXPECT_EQ(d.metadata.at("tarn.inputNames"), R"(["n1","colA","n2","n3"])");
  EXPECT_EQ(d.metadata.at("tarn.normType"), "ZSCALE_INDEX");
  ASSERT_EQ(d.inputs.size(), 3u);
  EXPECT_EQ(d.inputs[0].first, "input");
  EXPECT_EQ(d.inputs[0].second.elem_type, 1);
  EXPECT_EQ(d.inputs[0].second.dims, (std::vector<std::string>{"?N", "4"}));
  for (size_t k : {1, 2}) {
    EXPECT_EQ(d.inputs[k].first, k == 1 ? "colA" : "colH");
    EXPECT_EQ(d.inputs[k].second.elem_type, 7);  // int64
    EXPECT_EQ(d.inputs[k].second.dims, std::vector<std::string>{"?N"});
  }
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_EQ(d.outputs[0].first, "score");
  EXPECT_EQ(d.outputs[0].second.dims, (std::vector<std::string>{"?N", "1"}));
  std::set<std::string> ops;
  for (const auto& n : d.nodes) ops.insert(n.op);
  EXPECT_EQ(ops, (std::set<std::string>{"Gather",     "Cast",
                                        "Add",        "BitShift",
                                        "BitwiseXor", "Mul",
                                        "Mod",        "Gemm",
                                        "Relu",       "Concat",
                                        "MatMul",     "Sub",
                                        "ReduceSum",  "BatchNormalization",
                                        "Identity",   "Tanh",
                                        "Sigmoid",    "GreaterOrEqual",
                                        "Less",       "And",
                                        "Where"}));
  EXPECT_EQ(d.initializers.at("param/ea/table").dims, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(d.initializers.at("param/eh/table").dims, (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(d.initializers.at("param/x/slots").integers, (std::vector<uint64_t>{0, 2, 3}));
  EXPECT_EQ(d.initializers.count("param/wide/b"), 0u);  // use_bias false: Gemm without C

  Graph graph(spec);
  const float* tables[2] = {params.data() + spec.DenseParameterCount(),
                            params.data() + spec.DenseParameterCount() + 8};
  GraphParams gp{params.data(), tables, params.data() + spec.ParameterCount()};
  auto ws = graph.MakeWorkspace(8);
  // Hashed ids well past the bucket count, up to 2^62, reach every bucket rule step.
  const int64_t hashed[] = {0, 1, 4, 5, 977, int64_t{1} << 40, (int64_t{1} << 62) + 12345};
  for (int64_t id_a = 0; id_a < 4; ++id_a) {
    for (int64_t id_h : hashed) {
      const std::vector<float> row = {0.3f * id_a - 0.5f, float(id_a), 0.7f, -1.1f + 0.2f * id_a};
      const float dense[3] = {row[0], row[2], row[3]};
      const float* dense_in[1] = {dense};
      const int64_t* ids_in[2] = {&id_a, &id_h};
      float expected = 0;
      ASSERT_TRUE(graph.Predict(gp, GraphInputs{1, dense_in, ids_in}, &expected, ws.get()).ok());
      const float got = InterpretGraphRow(d, row, {{"colA", id_a}, {"colH", id_h}});
      EXPECT_NEAR(got, expected, 2e-6) << "ids " << id_a << ", " << id_h;
    }
  }
  // An id outside colA's [0, 4) scores as its missing id 3, as an unknown category in
  // tarn eval; Gather never reads a negative id from the table's end.
  const std::vector<float> row = {0.1f, 3.0f, 0.7f, -0.9f};
  const float missing = InterpretGraphRow(d, row, {{"colA", 3}, {"colH", 7}});
  for (int64_t bad : {int64_t{-1}, int64_t{-4}, int64_t{4}, int64_t{1} << 40}) {
    const auto values = InterpretGraph(d, row, {{"colA", bad}, {"colH", 7}});
    EXPECT_EQ(values.at("node/ids_a").u, 3u) << bad;
    EXPECT_EQ(values.at("score").f.at(0), missing) << bad;
  }
  // The hashed embedding reads the engine's rows: HashedBucket's, bit for bit.
  for (int64_t id : hashed) {
    const auto values = InterpretGraph(d, std::vector<float>(4, 0.0f), {{"colA", 0}, {"colH", id}});
    EXPECT_EQ(values.at("node/eh/rows").u, HashedBucket(id, 5)) << "id " << id;
  }
}

TEST(OnnxGraphExportTest, WithoutHashedEmbeddingsTheOpsetIs13AndIdsOnlyGraphsTakeNoVector) {
  auto spec = GraphSpec::FromJson(Json::parse(R"({"nodes": [
    {"name": "ids_a", "op": "input", "source": "ids", "column": "colA"},
    {"name": "ea", "op": "embedding", "inputs": ["ids_a"], "vocabulary": 3, "units": 1},
    {"name": "out", "op": "activation", "inputs": ["ea"], "activation": "linear"}
  ]})"),
                                  "test");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const std::vector<float> params = {0.25f, -0.5f, 2.0f};
  // No missing id (a Keras-hashed column): an id outside its 3 bins scores NaN.
  auto bytes =
      ExportGraphOnnx(*spec, params, GraphOnnxInputs{2, {}, {"a", "b"}, {{"colA", 3, {}}}});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Decoded d = Decode(*bytes);
  EXPECT_EQ(GraphOnnxOpset(*spec), 13);
  EXPECT_EQ(Int(Parse(Str(d.model, 8)), 2), 13);
  ASSERT_EQ(d.inputs.size(), 1u);  // no "input": the graph reads no normalized value
  EXPECT_EQ(d.inputs[0].first, "colA");
  EXPECT_EQ(d.metadata.count("tarn.inputNames"), 0u);
  for (int64_t id = 0; id < 3; ++id) {
    EXPECT_EQ(InterpretGraphRow(d, {}, {{"colA", id}}), params[static_cast<size_t>(id)]);
  }
  for (int64_t bad : {-1, -3, 3})
    EXPECT_TRUE(std::isnan(InterpretGraphRow(d, {}, {{"colA", bad}})));
}

TEST(OnnxGraphExportTest, RefusesBadInput) {
  const GraphSpec spec = EveryOpSpec();
  const GraphOnnxInputs inputs{4, {0, 2, 3}, {}, {{"colA", 4, 3}, {"colH", 1 << 20, 0}}};
  std::vector<float> params = GraphParameters(spec);
  auto short_params =
      ExportGraphOnnx(spec, std::vector<float>(params.begin(), params.end() - 1), inputs);
  ASSERT_FALSE(short_params.ok());
  EXPECT_NE(short_params.status().message().find("parameters"), std::string::npos);

  params[3] = std::nanf("");
  auto diverged = ExportGraphOnnx(spec, params, inputs);
  ASSERT_FALSE(diverged.ok());
  EXPECT_NE(diverged.status().message().find("parameter 3"), std::string::npos);
  params[3] = 0;

  auto slots = ExportGraphOnnx(spec, params, GraphOnnxInputs{4, {0, 2}, {}, inputs.id_ranges});
  ASSERT_FALSE(slots.ok());
  EXPECT_NE(slots.status().message().find("node 'x'"), std::string::npos);
  auto outside = ExportGraphOnnx(spec, params, GraphOnnxInputs{3, {0, 2, 3}, {}, inputs.id_ranges});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("slot 3"), std::string::npos);

  GraphSpec clash = spec;
  clash.nodes[1].column = "score";
  auto named = ExportGraphOnnx(clash, params, inputs);
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.status().message().find("'score'"), std::string::npos);

  auto unranged = ExportGraphOnnx(spec, params, GraphOnnxInputs{4, {0, 2, 3}, {}, {}});
  ASSERT_FALSE(unranged.ok());
  EXPECT_NE(unranged.status().message().find("no id range for column 'colA'"), std::string::npos)
      << unranged.status().message();
}

}  // namespace
}  // namespace tarn::model
