#include "serving/predict_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "serving_test_util.h"
#include "test_util.h"

namespace tarn::serving {
namespace {

class PredictCodecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string p = tmp_.File("model0.tarn");
    ASSERT_TRUE(testing::MakeModel(4).Save(p).ok());
    servable_ = Servable::Load(3, {p}, BatchOptions{}).value();
  }

  // Scores of one row given as a raw record (through the codec's v1 path).
  // The body is kept: decoded views point into it.
  Status V1(const std::string& body, V1Format* format = nullptr) {
    body_ = body;
    if (!sc_.doc.Parse(body_)) return InvalidArgument(sc_.doc.error());
    V1Format f;
    Status s = DecodeV1Predict(*servable_, options_, &sc_, &f);
    if (format) *format = f;
    if (s.ok()) Score();
    return s;
  }
  // `binary`: the binary tensor data after the JSON header.
  Status V2(const std::string& body, std::string_view* id = nullptr,
            const std::string& binary = "") {
    body_ = body;
    binary_ = binary;
    if (!sc_.doc.Parse(body_)) return InvalidArgument(sc_.doc.error());
    Status s = DecodeV2Infer(*servable_, options_, binary_, &sc_, &request_);
    if (id) *id = request_.id;
    if (s.ok()) Score();
    return s;
  }
  void Score() {
    sc_.scores.resize(sc_.n);
    servable_->Score(sc_.rows.data(), sc_.n, sc_.scores.data());
  }
  // The score of one record normalized directly.
  double Direct(const char* x, const char* color) {
    RawValue v[2];
    if (x) v[0] = {x, true};
    if (color) v[1] = {color, true};
    float row[2];
    servable_->NormalizeRecord(v, row);
    double s;
    servable_->Score(row, 1, &s);
    return s;
  }
  std::vector<double> Scores() const { return {sc_.scores.begin(), sc_.scores.begin() + sc_.n}; }

  tarn::testing::TempDir tmp_;
  std::shared_ptr<Servable> servable_;
  CodecScratch sc_;
  DecodeOptions options_;
  V2Request request_;
  std::string body_, binary_;
};

#define EXPECT_ERROR(expr, part)                                                            \
  do {                                                                                      \
    Status _s = (expr);                                                                     \
    EXPECT_FALSE(_s.ok()) << #expr;                                                         \
    EXPECT_NE(_s.message().find(part), std::string::npos) << #expr << ": " << _s.message(); \
  } while (0)

TEST_F(PredictCodecTest, V1RowFormatWithRawRecordsAndVectors) {
  V1Format f;
  ASSERT_TRUE(V1(R"({"signature_name": "serving_default", "instances": [
      {"x": 12.5, "color": "red"}, {"x": "12.5", "color": "red"}, {"color": "blue"},
      {"x": null, "color": "?"}, {"x": "1e3"}, [0.25, -1.5]]})",
                 &f)
                  .ok());
  EXPECT_EQ(f, V1Format::kRow);
  ASSERT_EQ(sc_.n, 6);
  auto s = Scores();
  EXPECT_DOUBLE_EQ(s[0], Direct("12.5", "red"));
  EXPECT_DOUBLE_EQ(s[1], s[0]);  // a number as a string is the same value
  EXPECT_DOUBLE_EQ(s[2], Direct(nullptr, "blue"));
  EXPECT_DOUBLE_EQ(s[3], Direct(nullptr, nullptr));
  EXPECT_DOUBLE_EQ(s[4], Direct("1e3", nullptr));
  float vec[2] = {0.25f, -1.5f};
  double direct_vec;
  servable_->Score(vec, 1, &direct_vec);
  EXPECT_DOUBLE_EQ(s[5], direct_vec);

  std::string out;
  EncodeV1Predict(sc_, f, &out);
  auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["predictions"].size(), 6u);
  // One [score] per row: the signature's score is [-1, 1].
  for (int i = 0; i < 6; ++i) EXPECT_EQ(j["predictions"][i], nlohmann::json::array({s[i]}));
  // Escaped strings and keys decode.
  ASSERT_TRUE(V1(R"({"instances": [{"\u0078": 12.5, "color": "r\u0065d"}]})").ok());
  EXPECT_DOUBLE_EQ(Scores()[0], Direct("12.5", "red"));
  // An empty list is an empty answer.
  ASSERT_TRUE(V1(R"({"instances": []})").ok());
  EXPECT_EQ(sc_.n, 0);
}

TEST_F(PredictCodecTest, V1ColumnarFormat) {
  V1Format f;
  ASSERT_TRUE(
      V1(R"({"inputs": {"x": [12.5, 3, null], "color": ["red", "blue", "red"]}})", &f).ok());
  EXPECT_EQ(f, V1Format::kColumnar);
  auto s = Scores();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0], Direct("12.5", "red"));
  EXPECT_DOUBLE_EQ(s[1], Direct("3", "blue"));
  EXPECT_DOUBLE_EQ(s[2], Direct(nullptr, "red"));
  ASSERT_TRUE(V1(R"({"inputs": {"x": 7, "color": "blue"}})").ok());  // one row of scalars
  EXPECT_DOUBLE_EQ(Scores()[0], Direct("7", "blue"));
  ASSERT_TRUE(V1(R"({"inputs": [[0.5, 0.5], [1, 2]]})").ok());
  EXPECT_EQ(sc_.n, 2);
  ASSERT_TRUE(V1(R"({"inputs": [0.5, 0.5]})").ok());
  EXPECT_EQ(sc_.n, 1);
  std::string out;
  EncodeV1Predict(sc_, f, &out);
  EXPECT_EQ(out.rfind("{\"outputs\": [", 0), 0u) << out;
}

TEST_F(PredictCodecTest, V1ErrorsSayWhatIsWrong) {
  EXPECT_ERROR(V1("[1]"), "must be a JSON object");
  EXPECT_ERROR(V1("{}"), "neither \"instances\"");
  EXPECT_ERROR(V1(R"({"instances": [], "inputs": {}})"), "not both");
  EXPECT_ERROR(V1(R"({"instances": {}})"), "\"instances\" must be a list");
  EXPECT_ERROR(V1(R"({"instances": [{"x": 1, "shape": 2}]})"),
               "instances[0]: unknown column \"shape\": not read by the model (its files predate");
  EXPECT_ERROR(V1(R"({"instances": [{"x": 1, "shape": 2}]})"), "; the model reads: x, color");
  EXPECT_ERROR(V1(R"({"instances": [{"x": 1}, {"x": "abc"}]})"),
               "instances[1]: column \"x\" is numeric, but \"abc\" is not a number");
  EXPECT_ERROR(V1(R"({"instances": [{"x": true}]})"), "numeric, but got true");
  EXPECT_ERROR(V1(R"({"instances": [{"x": [1]}]})"), "expected a number, a string or null");
  EXPECT_ERROR(V1(R"({"instances": [{"x": 1, "x": 2}]})"), "given twice");
  EXPECT_ERROR(V1(R"({"instances": [[1, 2, 3]]})"), "has 2 numbers for this model, got 3");
  EXPECT_ERROR(V1(R"({"instances": [[1, "a"]]})"), "instances[0][1]: expected a number");
  EXPECT_ERROR(V1(R"({"instances": [[1, 1e39]]})"), "not a finite float");
  EXPECT_ERROR(V1(R"({"instances": [7]})"), "expected an object (a raw record)");
  EXPECT_ERROR(V1(R"({"inputs": {"x": [1, 2], "color": ["red"]}})"), "one value per row");
  EXPECT_ERROR(V1(R"({"inputs": {"x": [1], "color": "red"}})"), "mix of single values");
  EXPECT_ERROR(V1(R"({"inputs": {"x": [[1]]}})"), "nested");
  EXPECT_ERROR(V1(R"({"inputs": {}})"), "no columns");
  EXPECT_ERROR(V1(R"({"inputs": [[1, 2], 3]})"), "inputs[1]: expected a list of numbers");
  EXPECT_ERROR(V1(R"({"inputs": "x"})"), "\"inputs\" must be an object");
  EXPECT_ERROR(V1(R"({"instances": [], "signature_name": 3})"), "signature_name");
  options_.max_rows = 2;
  EXPECT_ERROR(V1(R"({"instances": [{}, {}, {}]})"), "too many rows");
  options_.max_rows = 100000;
  // Unknown columns may be allowed.
  options_.ignore_unknown_columns = true;
  ASSERT_TRUE(V1(R"({"instances": [{"x": 3, "target": ">50K"}]})").ok());
  EXPECT_DOUBLE_EQ(Scores()[0], Direct("3", nullptr));
}

TEST_F(PredictCodecTest, V2InferWithColumnsOrVectors) {
  std::string_view id;
  ASSERT_TRUE(V2(R"({"id": "req-1", "inputs": [
      {"name": "x", "shape": [2], "datatype": "FP32", "data": [12.5, 3]},
      {"name": "color", "shape": [2, 1], "datatype": "BYTES", "data": [["red"], ["blue"]]}]})",
                 &id)
                  .ok());
  EXPECT_EQ(id, "req-1");
  auto s = Scores();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s[0], Direct("12.5", "red"));
  EXPECT_DOUBLE_EQ(s[1], Direct("3", "blue"));
  std::string out;
  size_t json_bytes = 0;
  EncodeV2Infer(sc_, "income", 3, request_, &out, &json_bytes);
  EXPECT_EQ(json_bytes, out.size());
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["model_name"], "income");
  EXPECT_EQ(j["model_version"], "3");
  EXPECT_EQ(j["id"], "req-1");
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json({2, 1}));
  EXPECT_EQ(j["outputs"][0]["data"][1].get<double>(), s[1]);

  ASSERT_TRUE(V2(R"({"inputs": [{"name": "input", "shape": [2, 2], "datatype": "FP32",
                                  "data": [[0.25, -1.5], [0, 0]]}]})")
                  .ok());
  EXPECT_EQ(sc_.n, 2);
  float vec[2] = {0.25f, -1.5f};
  double direct;
  servable_->Score(vec, 1, &direct);
  EXPECT_DOUBLE_EQ(Scores()[0], direct);
}

TEST_F(PredictCodecTest, ColumnsAndMembersInAnyOrder) {
  // The decoder guesses each column from the one before it: other orders, an
  // escaped member name and a repeated member (the first counts) must not
  // fool it.
  ASSERT_TRUE(V2(R"({"inputs": [
      {"data": ["blue"], "datatype": "BYTES", "shape": [1], "name": "color"},
      {"n\u0061me": "x", "shape": [1], "datatype": "FP64", "data": [3]}]})")
                  .ok());
  EXPECT_DOUBLE_EQ(Scores()[0], Direct("3", "blue"));
  ASSERT_TRUE(V2(R"({"inputs": [
      {"name": "x", "name": "color", "shape": [1], "datatype": "FP64", "data": [3]}]})")
                  .ok());
  EXPECT_DOUBLE_EQ(Scores()[0], Direct("3", nullptr));
  ASSERT_TRUE(
      V1(R"({"instances": [{"color": "red", "x": 12.5}, {"x": 3, "color": "blue"}]})").ok());
  EXPECT_DOUBLE_EQ(Scores()[0], Direct("12.5", "red"));
  EXPECT_DOUBLE_EQ(Scores()[1], Direct("3", "blue"));
}

TEST_F(PredictCodecTest, V2ErrorsSayWhatIsWrong) {
  EXPECT_ERROR(V2("{}"), "\"inputs\" must be a non-empty list");
  EXPECT_ERROR(V2(R"({"id": 5, "inputs": []})"), "\"id\" must be a string");
  EXPECT_ERROR(V2(R"({"inputs": [3]})"), "expected a tensor object");
  EXPECT_ERROR(V2(R"({"inputs": [{"shape": [1], "datatype": "FP32", "data": [1]}]})"),
               "\"name\" must be a string");
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "STR", "data": [1]}]})"),
               "unsupported datatype");
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1]}]})"),
               "\"data\" has 1 values but the shape says 2");
  EXPECT_ERROR(
      V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": ["a"]}]})"),
      "datatype FP32 but data[0] is a string");
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "q", "shape": [1], "datatype": "FP32", "data": [1]}]})"),
               "\"q\" is not a column of the model, nor a normalized tensor of shape [N, 2]");
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]},
                                 {"name": "color", "shape": [2], "datatype": "BYTES",
                                  "data": ["a", "b"]}]})"),
               "2 rows, the tensors before it 1");
  EXPECT_ERROR(
      V2(R"({"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]})"),
      "shape [N] or [N, 1]");
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "x", "shape": [-1], "datatype": "FP32", "data": [1]}]})"),
               "non-negative integers");
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "input", "shape": [1, 2], "datatype": "FP32",
                                   "data": [1, 2, 3]}]})"),
               "shape says 1 x 2");
  EXPECT_ERROR(
      V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "BYTES", "data": ["abc"]}]})"),
      "is numeric, but \"abc\" is not a number");
}

// A model file that lists its model set's columns accepts whole data rows:
// the target, weight and unselected columns are ignored, other names refused.
TEST_F(PredictCodecTest, ColumnsOfTheModelSetThatTheModelSkipsAreIgnored) {
  auto file = testing::MakeModel(4);
  file.model_set_columns = {"id", "x", "color", "Status", "weight"};
  std::string p = tmp_.File("with-columns.tarn");
  ASSERT_TRUE(file.Save(p).ok());
  servable_ = Servable::Load(3, {p}, BatchOptions{}).value();
  EXPECT_TRUE(servable_->knows_model_set());
  EXPECT_EQ(servable_->ignored_columns(), (std::vector<std::string>{"id", "Status", "weight"}));
  ASSERT_TRUE(V1(R"({"instances": [{"id": 7, "x": 12.5, "color": "red", "Status": ">50K",
                                    "weight": "1.5"}]})")
                  .ok());
  EXPECT_DOUBLE_EQ(Scores()[0], Direct("12.5", "red"));
  ASSERT_TRUE(V1(R"({"inputs": {"x": [3], "Status": ["<=50K"], "color": ["blue"]}})").ok());
  EXPECT_DOUBLE_EQ(Scores()[0], Direct("3", "blue"));
  ASSERT_TRUE(V2(R"({"inputs": [
      {"name": "Status", "shape": [1], "datatype": "BYTES", "data": [">50K"]},
      {"name": "x", "shape": [1], "datatype": "FP64", "data": [3]}]})")
                  .ok());
  EXPECT_DOUBLE_EQ(Scores()[0], Direct("3", nullptr));
  EXPECT_ERROR(V1(R"({"instances": [{"x": 1, "Zip": 2}]})"),
               "instances[0]: unknown column \"Zip\": not a column of the model set; the model "
               "reads: x, color");
  EXPECT_ERROR(
      V2(R"({"inputs": [{"name": "Zip", "shape": [1], "datatype": "FP64", "data": [1]}]})"),
      "\"Zip\" is not a column of the model, nor a normalized tensor of shape [N, 2], nor "
      "a column of the model set");
  // Only columns the model skips: no row to score.
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "id", "shape": [1], "datatype": "FP64", "data": [1]}]})"),
               "no input tensor names a column that the model reads");
}

TEST_F(PredictCodecTest, NaNAndInfinityAreMissingValues) {
  ASSERT_TRUE(V1(R"({"instances": [{"x": NaN, "color": "red"}, {"x": Infinity},
                                   {"x": -Infinity, "color": NaN}]})")
                  .ok());
  auto s = Scores();
  EXPECT_DOUBLE_EQ(s[0], Direct(nullptr, "red"));
  EXPECT_DOUBLE_EQ(s[1], Direct(nullptr, nullptr));
  EXPECT_DOUBLE_EQ(s[2], Direct(nullptr, nullptr));
  ASSERT_TRUE(V2(R"({"inputs": [{"name": "x", "shape": [2], "datatype": "FP64",
                                  "data": [NaN, 12.5]}]})")
                  .ok());
  EXPECT_DOUBLE_EQ(Scores()[0], Direct(nullptr, nullptr));
  EXPECT_DOUBLE_EQ(Scores()[1], Direct("12.5", nullptr));
  // A normalized vector has no missing values.
  EXPECT_ERROR(V1(R"({"instances": [[NaN, 1]]})"), "instances[0][0]: NaN is not a finite float");
}

TEST_F(PredictCodecTest, V1NamedVectorInputAndSignatures) {
  ASSERT_TRUE(
      V1(R"({"signature_name": "normalized", "instances": [{"input": [0.25, -1.5]}]})").ok());
  float vec[2] = {0.25f, -1.5f};
  double direct;
  servable_->Score(vec, 1, &direct);
  EXPECT_DOUBLE_EQ(Scores()[0], direct);
  V1Format f;
  ASSERT_TRUE(V1(R"({"inputs": {"input": [[0.25, -1.5], [0.25, -1.5]]}})", &f).ok());
  EXPECT_EQ(f, V1Format::kColumnar);
  EXPECT_EQ(Scores(), (std::vector<double>{direct, direct}));
  std::string out;
  EncodeV1Predict(sc_, f, &out);
  EXPECT_EQ(
      nlohmann::json::parse(out)["outputs"],
      nlohmann::json::array({nlohmann::json::array({direct}), nlohmann::json::array({direct})}));
  EXPECT_ERROR(V1(R"({"signature_name": "predict", "instances": []})"),
               "signature_name \"predict\" is not a signature of this model (serving_default, "
               "normalized");
}

// The binary tensor data extension: inputs as raw bytes after the JSON.
TEST_F(PredictCodecTest, V2BinaryTensorData) {
  auto append = [](std::string* out, const auto& v) {
    out->append(reinterpret_cast<const char*>(&v), sizeof(v));
  };
  std::string bin;
  for (double x : {12.5, 3.0, std::nan("")}) append(&bin, x);
  for (const char* c : {"red", "blue", ""}) {
    append(&bin, static_cast<uint32_t>(std::strlen(c)));
    bin.append(c);
  }
  const size_t x_bytes = 24, color_bytes = bin.size() - 24;
  const std::string header = R"({"inputs": [
      {"name": "x", "shape": [3, 1], "datatype": "FP64", "parameters": {"binary_data_size": )" +
                             std::to_string(x_bytes) + R"(}},
      {"name": "color", "shape": [3], "datatype": "BYTES",
       "parameters": {"binary_data_size": )" +
                             std::to_string(color_bytes) + R"(}}],
      "outputs": [{"name": "score", "parameters": {"binary_data": true}}]})";
  ASSERT_TRUE(V2(header, nullptr, bin).ok());
  auto s = Scores();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0], Direct("12.5", "red"));
  EXPECT_DOUBLE_EQ(s[1], Direct("3", "blue"));
  EXPECT_DOUBLE_EQ(s[2], Direct(nullptr, ""));  // NaN: missing; "" is a missing value too
  EXPECT_TRUE(request_.binary_output);
  std::string out;
  size_t json_bytes = 0;
  EncodeV2Infer(sc_, "m", 3, request_, &out, &json_bytes);
  auto j = nlohmann::json::parse(out.substr(0, json_bytes));
  EXPECT_EQ(j["outputs"][0]["parameters"]["binary_data_size"], 24);
  EXPECT_FALSE(j["outputs"][0].contains("data"));
  ASSERT_EQ(out.size(), json_bytes + 24);
  double back[3];
  std::memcpy(back, out.data() + json_bytes, 24);
  EXPECT_EQ(std::vector<double>(back, back + 3), s);

  // Integers, booleans, FP32 and FP16 (1.5 = 0x3E00).
  std::string ints;
  append(&ints, static_cast<int32_t>(12));
  ASSERT_TRUE(V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "INT32",
                                  "parameters": {"binary_data_size": 4}}]})",
                 nullptr, ints)
                  .ok());
  EXPECT_DOUBLE_EQ(Scores()[0], Direct("12", nullptr));
  std::string half;
  append(&half, static_cast<uint16_t>(0x3E00));
  ASSERT_TRUE(V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP16",
                                  "parameters": {"binary_data_size": 2}}]})",
                 nullptr, half)
                  .ok());
  EXPECT_DOUBLE_EQ(Scores()[0], Direct("1.5", nullptr));
  std::string vec;
  for (float v : {0.25f, -1.5f}) append(&vec, v);
  ASSERT_TRUE(V2(R"({"inputs": [{"name": "input", "shape": [1, 2], "datatype": "FP32",
                                  "parameters": {"binary_data_size": 8}}],
                     "parameters": {"binary_data_output": true}})",
                 nullptr, vec)
                  .ok());
  float fv[2] = {0.25f, -1.5f};
  double direct;
  servable_->Score(fv, 1, &direct);
  EXPECT_DOUBLE_EQ(Scores()[0], direct);
  EXPECT_TRUE(request_.binary_output);

  // Sizes that do not add up, and a bool in a numeric column.
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "x", "shape": [2], "datatype": "INT32",
                                   "parameters": {"binary_data_size": 4}}]})",
                  nullptr, ints),
               "binary_data_size 4 but 2 INT32 values take 8");
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "INT32",
                                   "parameters": {"binary_data_size": 8}}]})",
                  nullptr, ints),
               "binary_data_size 8 but only 4 bytes of binary data are left");
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP64", "data": [1]}]})",
                  nullptr, ints),
               "4 bytes of binary data after its JSON header, but the inputs' binary_data_size "
               "add up to 0");
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "color", "shape": [1], "datatype": "BYTES",
                                   "parameters": {"binary_data_size": 4}}]})",
                  nullptr, ints),
               "element 0 has 12 bytes, more than the binary data left");
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "BOOL",
                                   "parameters": {"binary_data_size": 1}}]})",
                  nullptr, std::string(1, '\1')),
               "column \"x\" is numeric, but got true");
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [1],
                                   "parameters": {"binary_data_size": 4}}]})",
                  nullptr, ints),
               "either \"data\" or \"binary_data_size\"");
}

TEST_F(PredictCodecTest, V2OutputsAndIntegerRanges) {
  EXPECT_ERROR(V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP64", "data": [1]}],
                      "outputs": [{"name": "probability"}]})"),
               "outputs[0]: unknown output \"probability\"; the model answers \"score\"");
  ASSERT_TRUE(V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP64", "data": [1]}],
                     "outputs": [{"name": "score", "parameters": {"binary_data": false}}],
                     "parameters": {"binary_data_output": true}})")
                  .ok());
  EXPECT_FALSE(request_.binary_output);  // the output's own setting wins
  EXPECT_ERROR(
      V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "INT8", "data": [300]}]})"),
      "data[0] = 300 does not fit INT8");
  EXPECT_ERROR(
      V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "UINT8", "data": [-1]}]})"),
      "data[0] = -1 does not fit UINT8");
  EXPECT_ERROR(
      V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [1.5]}]})"),
      "data[0] = 1.5 does not fit INT32");
  ASSERT_TRUE(
      V2(R"({"inputs": [{"name": "x", "shape": [2], "datatype": "INT8", "data": [-128, 127]}]})")
          .ok());
  EXPECT_DOUBLE_EQ(Scores()[1], Direct("127", nullptr));
  ASSERT_TRUE(V2(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "UINT64",
                                  "data": [18446744073709551615]}]})")
                  .ok());
}

// Mutated request bodies: the decoders answer a clean error or rows, never
// more rows than asked, never a crash.
TEST_F(PredictCodecTest, FuzzDecoders) {
  const std::vector<std::string> seeds = {
      R"({"instances": [{"x": 12.5, "color": "red"}, [0.5, 1]]})",
      R"({"inputs": {"x": [1, 2], "color": ["red", "blue"]}})",
      R"({"inputs": [[0.5, 1], [2, 3]]})",
      R"({"id": "a", "inputs": [{"name": "x", "shape": [2], "datatype": "FP64", "data": [1, 2]},
          {"name": "color", "shape": [2], "datatype": "BYTES", "data": ["red", null]}]})",
      R"({"inputs": [{"name": "input", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]})",
  };
  static const char* kTokens[] = {
      "{",    "}",     "[",  "]",     ",",      "\"x\"",          "\"color\"",
      "null", "1e308", "-1", "\"?\"", "[1, 2]", "\"shape\": [3]", "\"input\"",
      "0"};
  std::mt19937_64 rng(99);
  int ok = 0, failed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string s = seeds[rng() % seeds.size()];
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % (s.size() + 1);
      switch (rng() % 4) {
        case 0:
          if (pos < s.size()) s.erase(pos, 1 + rng() % 5);
          break;
        case 1:
          s.insert(pos, kTokens[rng() % (sizeof(kTokens) / sizeof(kTokens[0]))]);
          break;
        case 2:
          if (pos < s.size()) s[pos] = static_cast<char>(32 + rng() % 95);
          break;
        default:
          if (pos < s.size()) s.insert(pos, s.substr(pos, 1 + rng() % 20));
          break;
      }
    }
    Status st = (iter % 2 == 0) ? V1(s) : V2(s);
    if (st.ok()) {
      ++ok;
      ASSERT_GE(sc_.n, 0);
      ASSERT_LE(static_cast<size_t>(sc_.n) * servable_->row_width(), sc_.rows.size());
    } else {
      ++failed;
      ASSERT_FALSE(st.message().empty());
    }
  }
  EXPECT_GT(ok, 200);
  EXPECT_GT(failed, 1000);
}

// Binary tensor data with damaged bytes and sizes: a clean error or rows,
// never a read outside the data.
TEST_F(PredictCodecTest, FuzzBinaryTensorData) {
  std::mt19937_64 rng(7);
  int ok = 0, failed = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    const int rows = static_cast<int>(rng() % 4);
    std::string bin;
    for (int i = 0; i < rows; ++i) {
      double x = static_cast<double>(rng() % 100);
      bin.append(reinterpret_cast<const char*>(&x), 8);
    }
    const size_t x_bytes = bin.size();
    for (int i = 0; i < rows; ++i) {
      uint32_t len = static_cast<uint32_t>(rng() % 6);
      bin.append(reinterpret_cast<const char*>(&len), 4);
      bin.append(len, 'a');
    }
    long long sizes[2] = {static_cast<long long>(x_bytes),
                          static_cast<long long>(bin.size() - x_bytes)};
    for (int e = 0; e < 2; ++e) {
      switch (rng() % 4) {
        case 0:  // flip a byte (a BYTES length, often)
          if (!bin.empty()) bin[rng() % bin.size()] = static_cast<char>(rng());
          break;
        case 1:
          sizes[rng() % 2] += static_cast<long long>(rng() % 9) - 4;
          break;
        case 2:
          if (!bin.empty()) bin.resize(rng() % bin.size());
          break;
        default:
          break;
      }
    }
    const std::string header = R"({"inputs": [{"name": "x", "shape": [)" + std::to_string(rows) +
                               R"(], "datatype": "FP64", "parameters": {"binary_data_size": )" +
                               std::to_string(sizes[0]) + R"(}}, {"name": "color", "shape": [)" +
                               std::to_string(rows) +
                               R"(], "datatype": "BYTES", "parameters": {"binary_data_size": )" +
                               std::to_string(sizes[1]) + "}}]}";
    Status st = V2(header, nullptr, bin);
    if (st.ok()) {
      ++ok;
      ASSERT_EQ(sc_.n, rows);
    } else {
      ++failed;
      ASSERT_FALSE(st.message().empty());
    }
  }
  EXPECT_GT(ok, 500);
  EXPECT_GT(failed, 500);
}

}  // namespace
}  // namespace tarn::serving
