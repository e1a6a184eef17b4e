#include "model/model_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "model/train_params.h"

namespace tarn::model {
namespace {

// EXPECT_CONTAINS(text, Part("...")): the text holds the part.
struct Part {
  std::string text;
};
#define EXPECT_CONTAINS(haystack, needle)                                 \
  EXPECT_NE(std::string(haystack).find((needle).text), std::string::npos) \
      << "\"" << (haystack) << "\" lacks \"" << (needle).text << "\""

// The network of train#params, as tarn train builds it.
Result<ModelSpec> SpecFrom(const Json& params, const char* algorithm, int inputs) {
  TARN_ASSIGN_OR_RETURN(auto typed, TrainParams::Parse(params, algorithm));
  return ModelSpec::FromTrainParams(typed, inputs);
}

TEST(ModelSpecTest, ParsesShifuSpellings) {
  EXPECT_EQ(*ParseActivation("TanH"), Activation::kTanh);
  EXPECT_EQ(*ParseActivation("Sigmoid"), Activation::kSigmoid);
  EXPECT_EQ(*ParseActivation("RELU"), Activation::kRelu);
  EXPECT_EQ(*ParseActivation("leakyrelu"), Activation::kLeakyRelu);
  EXPECT_EQ(*ParseActivation("Leaky_ReLU"), Activation::kLeakyRelu);
  EXPECT_EQ(*ParseActivation("swish"), Activation::kSwish);
  EXPECT_EQ(*ParseActivation("identity"), Activation::kLinear);
  EXPECT_EQ(*ParseActivation("linear"), Activation::kLinear);
  auto bad = ParseActivation("softmax");
  ASSERT_FALSE(bad.ok());
  EXPECT_CONTAINS(bad.status().message(), Part("softmax"));
  EXPECT_CONTAINS(bad.status().message(), Part("tanh, sigmoid, relu"));

  EXPECT_EQ(*ParseLoss("entropy"), LossKind::kLog);
  EXPECT_EQ(*ParseLoss("binary_crossentropy"), LossKind::kLog);
  EXPECT_EQ(*ParseLoss("Squared"), LossKind::kSquared);
  EXPECT_EQ(*ParseLoss("mae"), LossKind::kAbsolute);
  EXPECT_FALSE(ParseLoss("hinge").ok());

  EXPECT_EQ(*ParseInitializer("Glorot"), Initializer::kXavier);
  EXPECT_EQ(*ParseInitializer("he"), Initializer::kHe);
  EXPECT_EQ(*ParseInitializer("normal"), Initializer::kGaussian);
  EXPECT_EQ(*ParseInitializer("uniform"), Initializer::kUniform);
  EXPECT_EQ(*ParseInitializer("lecun"), Initializer::kLecun);
  EXPECT_FALSE(ParseInitializer("zeros").ok());

  for (Activation a : {Activation::kLinear, Activation::kSigmoid, Activation::kTanh,
                       Activation::kRelu, Activation::kLeakyRelu, Activation::kSwish}) {
    EXPECT_EQ(*ParseActivation(ActivationName(a)), a);
  }
}

TEST(ModelSpecTest, ParameterCountAndOffsets) {
  ModelSpec spec;
  spec.input_count = 3;
  spec.layers = {
      {3, 4, Activation::kTanh, 0}, {4, 2, Activation::kRelu, 0}, {2, 1, Activation::kSigmoid, 0}};
  ASSERT_TRUE(spec.Validate().ok());
  EXPECT_EQ(spec.ParameterCount(), 29u);  // 12+4 + 8+2 + 2+1
  EXPECT_EQ(spec.WeightOffset(0), 0u);
  EXPECT_EQ(spec.BiasOffset(0), 12u);
  EXPECT_EQ(spec.WeightOffset(1), 16u);
  EXPECT_EQ(spec.BiasOffset(1), 24u);
  EXPECT_EQ(spec.WeightOffset(2), 26u);
  EXPECT_EQ(spec.BiasOffset(2), 28u);
  auto mask = spec.BiasMask();
  ASSERT_EQ(mask.size(), 29u);
  for (size_t i = 0; i < mask.size(); ++i) {
    bool bias = (i >= 12 && i < 16) || (i >= 24 && i < 26) || i == 28;
    EXPECT_EQ(mask[i], bias) << i;
  }
}

TEST(ModelSpecTest, ShifuExampleParams) {
  Json params = Json::parse(
      R"({"NumHiddenLayers":2,"ActivationFunc":["Sigmoid","Sigmoid"],"NumHiddenNodes":[45,45],)"
      R"("LearningRate":0.1,"Propagation":"Q"})");
  auto spec = SpecFrom(params, "NN", 30);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->layers.size(), 3u);
  EXPECT_EQ(spec->layers[0], (LayerSpec{30, 45, Activation::kSigmoid, 0}));
  EXPECT_EQ(spec->layers[1], (LayerSpec{45, 45, Activation::kSigmoid, 0}));
  EXPECT_EQ(spec->layers[2], (LayerSpec{45, 1, Activation::kSigmoid, 0}));
  EXPECT_EQ(spec->loss, LossKind::kLog);
  EXPECT_EQ(spec->initializer, Initializer::kXavier);
  EXPECT_EQ(spec->ParameterCount(), 30u * 45 + 45 + 45 * 45 + 45 + 45 + 1);
}

TEST(ModelSpecTest, ParamsWrittenByShifuNew) {
  Json params = Json::parse(
      R"({"Propagation":"R","LearningRate":0.1,"NumHiddenNodes":[50],"NumHiddenLayers":1,)"
      R"("RegularizedConstant":0.0,"ActivationFunc":["tanh"]})");
  auto spec = SpecFrom(params, "NN", 16);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->layers.size(), 2u);
  EXPECT_EQ(spec->layers[0], (LayerSpec{16, 50, Activation::kTanh, 0}));
  EXPECT_EQ(spec->layers[1], (LayerSpec{50, 1, Activation::kSigmoid, 0}));
}

TEST(ModelSpecTest, OneActivationIsReusedAndOptionsAreRead) {
  Json params =
      Json::parse(R"({"NumHiddenLayers":3,"NumHiddenNodes":["20",10,5],"ActivationFunc":["ReLU"],)"
                  R"("OutputActivationFunc":"linear","Loss":"squared","DropoutRate":0.25,)"
                  R"("WeightInitializer":"he"})");
  auto spec = SpecFrom(params, "NN", 8);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->layers.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(spec->layers[i].activation, Activation::kRelu);
    EXPECT_FLOAT_EQ(spec->layers[i].dropout, 0.25f);
  }
  EXPECT_EQ(spec->layers[0].outputs, 20);
  EXPECT_EQ(spec->layers[3].activation, Activation::kLinear);
  EXPECT_EQ(spec->layers[3].dropout, 0.0f);
  EXPECT_FLOAT_EQ(spec->input_dropout, 0.1f);  // 0.4 x DropoutRate, as Shifu
  EXPECT_EQ(spec->loss, LossKind::kSquared);
  EXPECT_EQ(spec->initializer, Initializer::kHe);
}

TEST(ModelSpecTest, LogisticRegressionAndTensorFlow) {
  Json lr = Json::parse(R"({"Propagation":"R","LearningRate":0.1,"L1orL2":"NONE",)"
                        R"("NumHiddenLayers":2,"NumHiddenNodes":[3]})");
  auto spec = SpecFrom(lr, "LR", 12);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->layers.size(), 1u);
  EXPECT_EQ(spec->layers[0], (LayerSpec{12, 1, Activation::kSigmoid, 0}));
  EXPECT_EQ(spec->ParameterCount(), 13u);

  Json tf = Json::parse(R"({"LearningRate":0.1,"NumHiddenLayers":1,"NumHiddenNodes":[50],)"
                        R"("ActivationFunc":["relu"],"TF.optimizer":"Adam","TF.loss":"squared"})");
  spec = SpecFrom(tf, "TensorFlow", 4);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->loss, LossKind::kSquared);
  EXPECT_EQ(spec->layers[0].activation, Activation::kRelu);

  EXPECT_EQ(SpecFrom(Json::object(), "GBT", 4).status().code(), StatusCode::kUnsupported);
}

TEST(ModelSpecTest, BadParamsNameTheKey) {
  auto error = [](const char* json) {
    auto r = SpecFrom(Json::parse(json), "NN", 10);
    EXPECT_FALSE(r.ok()) << json;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_CONTAINS(error(R"({"NumHiddenLayers":2,"NumHiddenNodes":[50]})"),
                  Part("train.params.NumHiddenNodes must list NumHiddenLayers (2) positive "
                       "integers, got [50]"));
  EXPECT_CONTAINS(error(R"({"NumHiddenLayers":1})"), Part("NumHiddenNodes"));
  EXPECT_CONTAINS(error(R"({"NumHiddenLayers":"two","NumHiddenNodes":[5]})"),
                  Part("train.params.NumHiddenLayers must be a non-negative integer"));
  EXPECT_CONTAINS(error(R"({"NumHiddenLayers":1,"NumHiddenNodes":[0]})"),
                  Part("train.params.NumHiddenNodes"));
  EXPECT_CONTAINS(
      error(R"({"NumHiddenLayers":1,"NumHiddenNodes":[5],"ActivationFunc":["softmax"]})"),
      Part("train.params.ActivationFunc: unknown activation 'softmax'"));
  EXPECT_CONTAINS(
      error(R"({"NumHiddenLayers":3,"NumHiddenNodes":[5,5,5],"ActivationFunc":["tanh","relu"]})"),
      Part("train.params.ActivationFunc must list one activation or NumHiddenLayers (3)"));
  EXPECT_CONTAINS(error(R"({"NumHiddenLayers":1,"NumHiddenNodes":[5],"DropoutRate":1.5})"),
                  Part("train.params.DropoutRate must be a number in [0, 1), got 1.5"));
  EXPECT_CONTAINS(error(R"({"NumHiddenLayers":1,"NumHiddenNodes":[5],"Loss":"hinge"})"),
                  Part("train.params.Loss: unknown loss 'hinge'"));
  EXPECT_CONTAINS(error(R"({"NumHiddenLayers":1,"NumHiddenNodes":[5],"WeightInitializer":3})"),
                  Part("train.params.WeightInitializer must be a string"));
  EXPECT_CONTAINS(error(R"({"NumHiddenLayers":1,"NumHiddenNodes":[5],"OutputActivationFunc":"x"})"),
                  Part("train.params.OutputActivationFunc"));
  auto no_inputs = SpecFrom(Json::parse(R"({"NumHiddenNodes":[5]})"), "NN", 0);
  ASSERT_FALSE(no_inputs.ok());
  EXPECT_CONTAINS(no_inputs.status().message(), Part("at least one input"));
}

TEST(ModelSpecTest, JsonRoundTrip) {
  ModelSpec spec;
  spec.input_count = 7;
  spec.loss = LossKind::kAbsolute;
  spec.initializer = Initializer::kGaussian;
  spec.input_dropout = 0.08f;
  spec.layers = {{7, 11, Activation::kSwish, 0.2f},
                 {11, 3, Activation::kLeakyRelu, 0},
                 {3, 1, Activation::kLinear, 0}};
  Json j = spec.ToJson();
  auto back = ModelSpec::FromJson(Json::parse(j.dump()), "model.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, spec);
  EXPECT_EQ(back->ToJson().dump(), j.dump());
  EXPECT_EQ(j["layers"][0]["activation"], "swish");
}

TEST(ModelSpecTest, FromJsonErrors) {
  auto err = [](const char* json) {
    auto r = ModelSpec::FromJson(Json::parse(json), "model.json");
    EXPECT_FALSE(r.ok()) << json;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_CONTAINS(err(R"({"layers":[]})"), Part("model.json: inputCount must be an integer"));
  EXPECT_CONTAINS(err(R"({"inputCount":2})"), Part("layers must be a list"));
  EXPECT_CONTAINS(
      err(R"({"inputCount":2,"layers":[{"inputs":3,"outputs":1,"activation":"tanh"}]})"),
      Part("layer 0 has 3 inputs, expected 2"));
  EXPECT_CONTAINS(
      err(R"({"inputCount":2,"layers":[{"inputs":2,"outputs":2,"activation":"tanh"}]})"),
      Part("output layer must have 1 output"));
  EXPECT_CONTAINS(
      err(R"({"inputCount":2,"layers":[{"inputs":2,"outputs":1,"activation":"nope"}]})"),
      Part("layers[0].activation"));
  EXPECT_CONTAINS(err(R"({"inputCount":2,"layers":[{"inputs":2,"outputs":1,"activation":"tanh",)"
                      R"("dropout":0.5}]})"),
                  Part("output layer cannot have dropout"));
}

}  // namespace
}  // namespace tarn::model
