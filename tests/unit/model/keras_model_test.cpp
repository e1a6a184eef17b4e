#include "model/keras_model.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/strings.h"
#include "test_util.h"

namespace tarn::model {
namespace {

// The fixtures are real Keras output: tests/keras/make_graphs.py run with Keras 3.15 and
// tf_keras 2.21 (the shapes files hold the output shape Keras gave every layer).
std::string Fixture(const std::string& name) {
  return testing::SourceDir() + "/tests/unit/model/testdata/" + name;
}

Json LoadJson(const std::string& name) {
  auto text = ReadFile(Fixture(name));
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return Json::parse(*text);
}

KerasModel Read(const std::string& name) {
  auto model = ReadKerasModel(Fixture(name));
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? *model : KerasModel{};
}

std::vector<int> Widths(const KerasModel& model) {
  auto widths = KerasGraphWidths(model);
  EXPECT_TRUE(widths.ok()) << widths.status().ToString();
  return widths.ok() ? *widths : std::vector<int>{};
}

int WidthOf(const KerasModel& model, const std::vector<int>& widths, const std::string& name) {
  for (size_t i = 0; i < model.layers.size(); ++i)
    if (model.layers[i].name == name) return widths.at(i);
  ADD_FAILURE() << "no layer " << name;
  return -1;
}

const KerasLayer& Layer(const KerasModel& model, const std::string& name) {
  const KerasLayer* layer = model.Find(name);
  EXPECT_NE(layer, nullptr) << name;
  static const KerasLayer kNone;
  return layer ? *layer : kNone;
}

// The index of the layer called `name` in config.layers.
size_t EntryIndex(const Json& json, const std::string& name) {
  const Json& layers = json["config"]["layers"];
  for (size_t i = 0; i < layers.size(); ++i)
    if (layers[i]["config"]["name"] == name) return i;
  ADD_FAILURE() << "no layer " << name;
  return 0;
}

Json& Entry(Json& json, const std::string& name) {
  return json["config"]["layers"][EntryIndex(json, name)];
}

// The message of the error reading `json` (as model.json), or "" when it reads.
std::string Refusal(const Json& json) {
  auto model = ParseKerasModel(json, "model.json");
  if (!model.ok()) return model.status().message();
  auto widths = KerasGraphWidths(*model);
  return widths.ok() ? "" : widths.status().message();
}

void ExpectEveryLayerAfterItsInputs(const KerasModel& model) {
  for (size_t i = 0; i < model.layers.size(); ++i) {
    for (const auto& in : model.layers[i].inputs) {
      bool earlier = false;
      for (size_t k = 0; k < i; ++k) earlier |= model.layers[k].name == in;
      EXPECT_TRUE(earlier) << model.layers[i].name << " comes before its input " << in;
    }
  }
}

TEST(KerasModelTest, ReadsKeras3WideAndDeep) {
  KerasModel model = Read("keras3_wide_deep.json");
  EXPECT_EQ(model.model_class, "Functional");
  EXPECT_EQ(model.name, "wide_deep");
  EXPECT_EQ(model.keras_major, 3);
  EXPECT_EQ(model.inputs,
            (std::vector<std::string>{"shifu_input_0", "Work_Class", "Education", "Occupation"}));
  EXPECT_EQ(model.output, "score");
  ExpectEveryLayerAfterItsInputs(model);

  const KerasLayer& numeric = Layer(model, "shifu_input_0");
  EXPECT_EQ(numeric.role, KerasInputRole::kNumeric);
  EXPECT_EQ(numeric.shape, std::vector<int>{6});
  const KerasLayer& ids = Layer(model, "Education");
  EXPECT_EQ(ids.role, KerasInputRole::kCategoryIds);
  EXPECT_EQ(ids.dtype, "int32");
  EXPECT_EQ(ids.shape, std::vector<int>{1});

  const KerasLayer& emb = Layer(model, "deep_emb_Education");
  EXPECT_EQ(emb.kind, KerasLayerKind::kEmbedding);
  EXPECT_EQ(emb.input_dim, 17);
  EXPECT_EQ(emb.units, 4);
  EXPECT_EQ(emb.initializer, Initializer::kUniform);  // Keras' U(-0.05, 0.05)
  EXPECT_EQ(emb.inputs, std::vector<std::string>{"Education"});
  EXPECT_EQ(emb.shape, (std::vector<int>{1, 4}));

  const KerasLayer& deep2 = Layer(model, "deep_2");
  EXPECT_EQ(deep2.kind, KerasLayerKind::kDense);
  EXPECT_EQ(deep2.units, 8);
  EXPECT_EQ(deep2.activation, Activation::kTanh);
  EXPECT_TRUE(deep2.use_bias);
  EXPECT_EQ(deep2.initializer, Initializer::kXavier);
  EXPECT_FLOAT_EQ(deep2.regularizer.l2, 1e-4f);
  EXPECT_EQ(deep2.regularizer.l1, 0);
  EXPECT_EQ(Layer(model, "deep_1").regularizer, KerasRegularizer{});

  const KerasLayer& bn = Layer(model, "deep_bn");
  EXPECT_EQ(bn.kind, KerasLayerKind::kBatchNormalization);
  EXPECT_EQ(bn.axis, 1);
  EXPECT_FLOAT_EQ(bn.momentum, 0.99f);
  EXPECT_FLOAT_EQ(bn.epsilon, 1e-3f);
  EXPECT_FLOAT_EQ(Layer(model, "deep_dropout").rate, 0.1f);
  EXPECT_EQ(Layer(model, "score").activation, Activation::kSigmoid);
  EXPECT_EQ(Layer(model, "wide_plus_deep").inputs,
            (std::vector<std::string>{"wide_logit", "deep_logit"}));
  EXPECT_EQ(Layer(model, "deep_concat").inputs,
            (std::vector<std::string>{"shifu_input_0", "deep_Work_Class", "deep_Education",
                                      "deep_Occupation"}));

  std::vector<int> widths = Widths(model);
  EXPECT_EQ(WidthOf(model, widths, "deep_emb_Occupation"), 4);  // (1, 4) is 4 wide
  EXPECT_EQ(WidthOf(model, widths, "wide_concat"), 6 + 3 * 1);
  EXPECT_EQ(WidthOf(model, widths, "deep_concat"), 6 + 3 * 4);
  EXPECT_EQ(WidthOf(model, widths, "deep_bn"), 16);
  EXPECT_EQ(WidthOf(model, widths, "score"), 1);
}

TEST(KerasModelTest, ReadsDeepFmBuiltFromDotAndAdd) {
  KerasModel model = Read("keras3_deepfm.json");
  ExpectEveryLayerAfterItsInputs(model);
  const KerasLayer& reshape = Layer(model, "vec_Work_Class");
  EXPECT_EQ(reshape.kind, KerasLayerKind::kReshape);
  EXPECT_EQ(reshape.target_shape, std::vector<int>{4});
  EXPECT_EQ(Layer(model, "vec_Education").kind, KerasLayerKind::kFlatten);
  const KerasLayer& dot = Layer(model, "fm_0_2");
  EXPECT_EQ(dot.kind, KerasLayerKind::kDot);
  EXPECT_EQ(dot.inputs, (std::vector<std::string>{"vec_Work_Class", "vec_Occupation"}));
  EXPECT_EQ(dot.dot_axes[0], 1);
  EXPECT_EQ(dot.dot_axes[1], 1);
  EXPECT_EQ(dot.shape, std::vector<int>{1});
  EXPECT_EQ(Layer(model, "fm").inputs.size(), 3u);  // the three pairs
  EXPECT_EQ(Layer(model, "deep_gated").kind, KerasLayerKind::kMultiply);
  EXPECT_EQ(Layer(model, "deep_gate").activation, Activation::kSigmoid);
  // Four first-order terms, the FM and the deep part.
  EXPECT_EQ(Layer(model, "logit").inputs.size(), 6u);

  std::vector<int> widths = Widths(model);
  EXPECT_EQ(WidthOf(model, widths, "fm_0_1"), 1);
  EXPECT_EQ(WidthOf(model, widths, "deep_concat"), 6 + 3 * 4);
  EXPECT_EQ(WidthOf(model, widths, "deep_gated"), 8);
  EXPECT_EQ(WidthOf(model, widths, "logit"), 1);
}

// Keras 2 writes connections as nested lists and options its own way; the model read is the same.
TEST(KerasModelTest, Keras2AndKeras3JsonOfOneModelReadTheSame) {
  KerasModel k2 = Read("keras2_deepfm.json"), k3 = Read("keras3_deepfm.json");
  EXPECT_EQ(k2.keras_major, 2);
  EXPECT_EQ(k2.keras_version, "2.21.0");
  EXPECT_EQ(k3.keras_major, 3);
  Json d2 = k2.Describe(Widths(k2)), d3 = k3.Describe(Widths(k3));
  EXPECT_EQ(d2["inputs"], d3["inputs"]);
  EXPECT_EQ(d2["output"], d3["output"]);
  ASSERT_EQ(d2["layers"].size(), d3["layers"].size());
  for (auto& layers : {&d2["layers"], &d3["layers"]}) {
    for (auto& l : *layers) l.erase("path");  // the two list the layers in other orders
  }
  for (const auto& l3 : d3["layers"]) {
    bool found = false;
    for (const auto& l2 : d2["layers"]) {
      if (l2["name"] != l3["name"]) continue;
      found = true;
      EXPECT_EQ(l2, l3);
    }
    EXPECT_TRUE(found) << l3["name"];
  }
}

TEST(KerasModelTest, ShapesAreThoseKerasComputed) {
  for (const std::string version : {"keras3", "keras2"}) {
    Json shapes = LoadJson(version + "_shapes.json")["models"];
    for (const std::string name : {"wide_deep", "deepfm", "sequential_mlp"}) {
      std::string file = version + "_" + name + ".json";
      if (!PathExists(Fixture(file))) continue;  // not every model is committed in both
      KerasModel model = Read(file);
      size_t compared = 0;
      for (const auto& [layer, shape] : shapes[name].items()) {
        const KerasLayer* l = model.Find(layer);
        ASSERT_NE(l, nullptr) << file << ": " << layer;
        EXPECT_EQ(Json(l->shape), shape) << file << ": " << layer;
        ++compared;
      }
      EXPECT_GE(compared, 4u) << file;
    }
  }
}

// make_graphs.py's shared_nested: a Flatten and a Dense each called on three vectors, a
// Sequential ("pair") called on two, a Functional ("head") called once.
TEST(KerasModelTest, ReadsSharedLayersAndInlinesNestedModels) {
  for (const std::string version : {"keras3", "keras2"}) {
    const std::string file = version + "_shared_nested.json";
    KerasModel model = Read(file);
    auto layer = [&](const std::string& name) -> const KerasLayer& {
      static const KerasLayer kNone;
      const KerasLayer* l = model.Find(name);
      EXPECT_NE(l, nullptr) << file << ": " << name;
      return l ? *l : kNone;
    };
    // Each call is a layer; a shared Dense's later calls use the first's weights.
    EXPECT_EQ(layer("flat#2").inputs, std::vector<std::string>{"emb_Occupation"}) << file;
    EXPECT_EQ(layer("flat#2").shares, "") << file;  // no weights to share
    EXPECT_EQ(layer("shared_dense").shares, "") << file;
    EXPECT_EQ(layer("shared_dense#1").inputs, std::vector<std::string>{"flat#1"}) << file;
    EXPECT_EQ(layer("shared_dense#1").shares, "shared_dense") << file;
    EXPECT_EQ(layer("shared_dense#2").shares, "shared_dense") << file;
    // The nested models' layers, once per call, taking the values they are called on.
    EXPECT_EQ(layer("pair/pair_dense").inputs, std::vector<std::string>{"flat"}) << file;
    EXPECT_EQ(layer("pair#1/pair_dense").inputs, std::vector<std::string>{"flat#1"}) << file;
    EXPECT_EQ(layer("pair#1/pair_dense").shares, "pair/pair_dense") << file;
    EXPECT_EQ(layer("pair#1/pair_dense").units, 2) << file;
    EXPECT_EQ(layer("all").inputs,
              (std::vector<std::string>{"shifu_input_0", "shared_dense", "shared_dense#1",
                                        "shared_dense#2", "pair/pair_dense", "pair#1/pair_dense"}))
        << file;
    EXPECT_EQ(layer("head/head_hidden").inputs, std::vector<std::string>{"all"}) << file;
    EXPECT_EQ(layer("score").inputs, std::vector<std::string>{"head/head_logit"}) << file;
    EXPECT_EQ(model.Find("pair"), nullptr);
    EXPECT_EQ(model.Find("head/head_in"), nullptr);  // the nested input is the call's value
    // The shapes Keras gave: a shared layer's first call, a nested model's output.
    Json shapes = LoadJson(version + "_shapes.json")["models"]["shared_nested"];
    for (const auto& [name, shape] : shapes.items()) {
      const std::string holder = name == "pair"   ? "pair/pair_dense"
                                 : name == "head" ? "head/head_logit"
                                                  : name;
      EXPECT_EQ(Json(layer(holder).shape), shape) << file << ": " << name;
    }
    std::vector<int> widths = Widths(model);
    EXPECT_EQ(WidthOf(model, widths, "all"), 6 + 3 * 3 + 2 * 2) << file;
    for (const auto& l : model.Describe(widths)["layers"]) {
      if (l["name"] == "shared_dense#2") {
        EXPECT_EQ(l["shares"], "shared_dense") << file;
      }
      if (l["name"] == "shared_dense") {
        EXPECT_FALSE(l.contains("shares")) << file;
      }
    }
  }
}

TEST(KerasModelTest, RefusesASharedEmbeddingByItsCall) {
  for (const std::string version : {"keras3", "keras2"}) {
    const std::string file = Fixture(version + "_shared_embedding.json");
    Json json = LoadJson(version + "_shared_embedding.json");
    size_t index = 0;
    while (json["config"]["layers"][index]["config"]["name"] != "emb") ++index;
    auto model = ReadKerasModel(file);
    ASSERT_FALSE(model.ok()) << file;
    EXPECT_EQ(model.status().message(),
              file + ": config.layers[" + std::to_string(index) +
                  "] (Embedding 'emb#1'): an Embedding called more than once (shared with "
                  "'emb') is not supported: each of tarn's tables belongs to one ids input");
  }
}

TEST(KerasModelTest, ReadsSequentialModelsAsAChain) {
  for (const std::string file : {"keras3_sequential_mlp.json", "keras2_sequential_mlp.json"}) {
    SCOPED_TRACE(file);
    KerasModel model = Read(file);
    EXPECT_EQ(model.model_class, "Sequential");
    ASSERT_EQ(model.layers.size(), 6u);
    ASSERT_EQ(model.inputs.size(), 1u);
    const KerasLayer& input = model.layers[0];
    EXPECT_EQ(input.name, model.inputs[0]);
    EXPECT_EQ(input.role, KerasInputRole::kNumeric);  // a Sequential's one input, whatever its name
    EXPECT_EQ(input.shape, std::vector<int>{6});
    for (size_t i = 1; i < model.layers.size(); ++i) {
      EXPECT_EQ(model.layers[i].inputs, std::vector<std::string>{model.layers[i - 1].name});
    }
    EXPECT_EQ(model.layers[2].kind, KerasLayerKind::kDropout);
    EXPECT_FLOAT_EQ(model.layers[2].rate, 0.2f);
    EXPECT_EQ(model.layers[3].activation, Activation::kSwish);  // Keras 3 writes "silu"
    EXPECT_EQ(model.layers[4].class_name, "LeakyReLU");
    EXPECT_EQ(model.layers[4].kind, KerasLayerKind::kActivation);
    EXPECT_EQ(model.layers[4].activation, Activation::kLeakyRelu);
    EXPECT_EQ(model.output, "score");
    EXPECT_EQ(Widths(model), (std::vector<int>{6, 16, 16, 8, 8, 1}));
  }
}

// LeakyReLU's slope is `negative_slope` in Keras 3 and `alpha` in Keras 2; only tarn's 0.01 reads.
TEST(KerasModelTest, ReadsLeakyReluLayersOnlyWithTarnsSlope) {
  Json k3 = LoadJson("keras3_sequential_mlp.json"), k2 = LoadJson("keras2_sequential_mlp.json");
  size_t index = EntryIndex(k3, "leaky");
  Entry(k3, "leaky")["config"]["negative_slope"] = 0.3;
  EXPECT_EQ(Refusal(k3), "model.json: config.layers[" + std::to_string(index) +
                             "].config.negative_slope (LeakyReLU 'leaky'): slope 0.3 is not "
                             "tarn's leaky relu slope 0.01");
  EXPECT_NEAR(Entry(k2, "leaky")["config"]["alpha"].get<double>(), 0.01, 1e-6);
  Entry(k2, "leaky")["config"]["alpha"] = 0.2;
  EXPECT_NE(Refusal(k2).find(".config.alpha (LeakyReLU 'leaky'): slope 0.2"), std::string::npos);

  Json relu = LoadJson("keras3_sequential_mlp.json");
  Entry(relu, "leaky") = {
      {"class_name", "ReLU"},
      {"config", {{"name", "leaky"}, {"max_value", nullptr}, {"threshold", 0.0}}}};
  auto model = ParseKerasModel(relu, "model.json");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->Find("leaky")->activation, Activation::kRelu);
  Entry(relu, "leaky")["config"]["max_value"] = 6.0;
  EXPECT_NE(Refusal(relu).find("(ReLU 'leaky'): a capped ReLU is not supported"),
            std::string::npos);
}

// A Keras 2 Sequential saved before it was built names its input shape on its first layer.
TEST(KerasModelTest, ReadsAKeras2SequentialWithoutInputLayer) {
  Json json = LoadJson("keras2_sequential_mlp.json");
  auto& layers = json["config"]["layers"];
  layers.erase(layers.begin());
  for (auto& l : layers) l.erase("build_config");
  KerasModel model = *ParseKerasModel(json, "model.json");
  ASSERT_EQ(model.layers.size(), 6u);
  EXPECT_EQ(model.inputs, std::vector<std::string>{"hidden_1_input"});
  EXPECT_EQ(model.layers[0].shape, std::vector<int>{6});
  EXPECT_EQ(model.layers[1].inputs, std::vector<std::string>{"hidden_1_input"});
}

TEST(KerasModelTest, RefusesALambdaByItsPath) {
  Json json = LoadJson("keras3_unsupported_lambda.json");
  std::string path = "config.layers[" + std::to_string(EntryIndex(json, "fm")) + "]";
  auto model = ReadKerasModel(Fixture("keras3_unsupported_lambda.json"));
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(model.status().message(),
            Fixture("keras3_unsupported_lambda.json") + ": " + path +
                " (Lambda 'fm'): Lambda layers hold Python code and are not supported");
}

struct RefusedEdit {
  const char* what;
  void (*edit)(Json& json);
  const char* layer;    // the layer the message must name (empty: none)
  const char* field;    // the path after config.layers[i] (empty: the layer itself)
  const char* message;  // a part of the explanation
};

TEST(KerasModelTest, RefusesWhatTarnDoesNotHonourByLayerAndField) {
  const RefusedEdit kEdits[] = {
      {"a constraint",
       [](Json& j) {
         Entry(j, "deep_2")["config"]["kernel_constraint"] = {{"class_name", "NonNeg"},
                                                              {"config", Json::object()}};
       },
       "Dense 'deep_2'", ".config.kernel_constraint", "constraints ('NonNeg')"},
      {"masking", [](Json& j) { Entry(j, "deep_emb_Education")["config"]["mask_zero"] = true; },
       "Embedding 'deep_emb_Education'", ".config.mask_zero", "masking"},
      {"an activation", [](Json& j) { Entry(j, "deep_1")["config"]["activation"] = "softmax"; },
       "Dense 'deep_1'", ".config.activation", "'softmax' is not supported"},
      {"Keras' leaky relu",
       [](Json& j) { Entry(j, "deep_1")["config"]["activation"] = "leaky_relu"; }, "Dense 'deep_1'",
       ".config.activation", "slope 0.2"},
      {"an initializer",
       [](Json& j) {
         Entry(j, "deep_1")["config"]["kernel_initializer"]["class_name"] = "Orthogonal";
       },
       "Dense 'deep_1'", ".config.kernel_initializer",
       "initializer 'Orthogonal' is not supported (tarn reads GlorotUniform"},
      {"a non-default uniform",
       [](Json& j) {
         Entry(j, "deep_emb_Education")["config"]["embeddings_initializer"]["config"]["maxval"] =
             0.1;
       },
       "Embedding 'deep_emb_Education'", ".config.embeddings_initializer", "U(-0.05, 0.05)"},
      {"a bias initializer",
       [](Json& j) { Entry(j, "deep_1")["config"]["bias_initializer"]["class_name"] = "Ones"; },
       "Dense 'deep_1'", ".config.bias_initializer", "starts it at Zeros"},
      {"a bias regularizer",
       [](Json& j) {
         Entry(j, "deep_1")["config"]["bias_regularizer"] = {{"class_name", "L2"},
                                                             {"config", {{"l2", 0.1}}}};
       },
       "Dense 'deep_1'", ".config.bias_regularizer", "never biases"},
      {"a frozen layer", [](Json& j) { Entry(j, "deep_1")["config"]["trainable"] = false; },
       "Dense 'deep_1'", ".config.trainable", "frozen"},
      {"mixed precision",
       [](Json& j) { Entry(j, "deep_1")["config"]["dtype"]["config"]["name"] = "mixed_float16"; },
       "Dense 'deep_1'", ".config.dtype", "'mixed_float16'"},
      {"an unknown option", [](Json& j) { Entry(j, "deep_1")["config"]["lora_rank"] = 4; },
       "Dense 'deep_1'", ".config.lora_rank", "option 'lora_rank' is not supported"},
      {"a batch norm axis", [](Json& j) { Entry(j, "deep_bn")["config"]["axis"] = 0; },
       "BatchNormalization 'deep_bn'", ".config.axis", "last axis only"},
      {"batch norm without beta", [](Json& j) { Entry(j, "deep_bn")["config"]["center"] = false; },
       "BatchNormalization 'deep_bn'", ".config.center", "always learns gamma and beta"},
      {"an unsupported class", [](Json& j) { Entry(j, "deep_1")["class_name"] = "LSTM"; },
       "LSTM 'deep_1'", "", "layer class 'LSTM' is not supported (tarn reads InputLayer"},
      {"a Dense read as a Hashing", [](Json& j) { Entry(j, "deep_1")["class_name"] = "Hashing"; },
       "Hashing 'deep_1'", ".config.dtype", "the bins are int64 or int32"},
      {"a custom layer", [](Json& j) { Entry(j, "deep_1")["registered_name"] = "my_pkg>MyDense"; },
       "Dense 'deep_1'", "", "custom layers"},
      {"a second output",
       [](Json& j) {
         Entry(j, "deep_dropout")["inbound_nodes"][0]["args"][0]["config"]["keras_history"][2] = 1;
       },
       "Dropout 'deep_dropout'", ".inbound_nodes[0]",
       "output 1 of call 0 of layer 'deep_1': layers with several outputs"},
      {"a call that is not there",
       [](Json& j) {
         Entry(j, "deep_dropout")["inbound_nodes"][0]["args"][0]["config"]["keras_history"][1] = 1;
       },
       "Dropout 'deep_dropout'", "", "input 'deep_1#1' is no layer of the model"},
      {"a tensor in kwargs",
       [](Json& j) {
         auto& n = Entry(j, "deep_bn")["inbound_nodes"][0];
         n["kwargs"]["mask"] = n["args"][0];
       },
       "BatchNormalization 'deep_bn'", ".inbound_nodes[0]", "call argument 'mask'"},
      {"dropout forced on",
       [](Json& j) { Entry(j, "deep_dropout")["inbound_nodes"][0]["kwargs"]["training"] = true; },
       "Dropout 'deep_dropout'", ".inbound_nodes[0]",
       "call argument 'training' (true) is not supported"},
      {"a wrong build shape",
       [](Json& j) { Entry(j, "deep_1")["build_config"]["input_shape"][1] = 17; }, "Dense 'deep_1'",
       ".build_config.input_shape", "built for [null,17] but its input is (18,)"},
      {"float category ids", [](Json& j) { Entry(j, "Education")["config"]["dtype"] = "float32"; },
       "InputLayer 'Education'", ".config", "int32 or int64"},
      {"ids of two values",
       [](Json& j) {
         Entry(j, "Education")["config"]["batch_shape"] = {nullptr, 2};
       },
       "InputLayer 'Education'", ".config", "shape (1,)"},
      {"an unknown dimension",
       [](Json& j) {
         Entry(j, "shifu_input_0")["config"]["batch_shape"] = {nullptr, nullptr};
       },
       "InputLayer 'shifu_input_0'", ".config.batch_shape", "dimension 1 is null"},
      {"ids into a Dense",
       [](Json& j) {
         Entry(j, "deep_1")["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0] =
             "Education";
       },
       "Dense 'deep_1'", "", "ids feed Embedding layers only"},
      {"an embedding of numbers",
       [](Json& j) {
         Entry(j,
               "deep_emb_Education")["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0] =
             "shifu_input_0";
       },
       "Embedding 'deep_emb_Education'", "", "not a categorical input"},
      {"a missing input",
       [](Json& j) {
         Entry(j, "deep_1")["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0] =
             "nowhere";
       },
       "Dense 'deep_1'", "", "input 'nowhere' is no layer of the model"},
      {"mismatched adds",
       [](Json& j) {
         Entry(j,
               "wide_plus_deep")["inbound_nodes"][0]["args"][0][1]["config"]["keras_history"][0] =
             "deep_bn";
       },
       "Add 'wide_plus_deep'", "", "(1,) and (16,)"},
  };
  const Json original = LoadJson("keras3_wide_deep.json");
  for (const auto& e : kEdits) {
    SCOPED_TRACE(e.what);
    Json json = original;
    e.edit(json);
    std::string message = Refusal(json);
    ASSERT_FALSE(message.empty());
    std::string name = std::string(e.layer).substr(std::string(e.layer).find('\'') + 1);
    name.pop_back();
    std::string prefix = "model.json: config.layers[" + std::to_string(EntryIndex(original, name)) +
                         "]" + e.field + " (" + e.layer + "): ";
    EXPECT_EQ(message.substr(0, prefix.size()), prefix) << message;
    EXPECT_NE(message.find(e.message), std::string::npos) << message;
  }
}

// make_graphs.py's `hashing` model: every Adult categorical column's text
// through a Hashing layer (plain, salted, masked).
TEST(KerasModelTest, ReadsHashingLayersOnTextInputs) {
  const KerasModel model = Read("keras3_hashing.json");
  const auto widths = Widths(model);
  const auto hashed = model.HashedTextInputs();
  ASSERT_EQ(hashed.size(), 8u);
  EXPECT_EQ(Layer(model, "Occupation").role, KerasInputRole::kCategoryText);
  EXPECT_EQ(Layer(model, "Occupation").dtype, "string");
  const KerasLayer& occupation = Layer(model, "hash_Occupation");
  EXPECT_EQ(occupation.kind, KerasLayerKind::kHashing);
  EXPECT_EQ(occupation.inputs, std::vector<std::string>{"Occupation"});
  const data::KerasHashing expected{32, std::array<uint64_t, 2>{11, (uint64_t{1} << 40) + 3}, "?"};
  EXPECT_EQ(occupation.hashing, expected);
  EXPECT_EQ(WidthOf(model, widths, "hash_Occupation"), 1);
  EXPECT_EQ(WidthOf(model, widths, "emb_Occupation"), 4);
  for (const auto& [column, hashing] : hashed) {
    EXPECT_EQ(hashing, Layer(model, "hash_" + column).hashing) << column;
  }
  // An integer salt s is Keras' key [s, s].
  EXPECT_EQ(Layer(model, "hash_Gender").hashing.salt, (std::array<uint64_t, 2>{1, 1}));
  EXPECT_FALSE(Layer(model, "hash_Work_Class").hashing.salt.has_value());
  const Json described = model.Describe(widths);
  EXPECT_EQ(described["inputs"][4]["role"], "text");
}

TEST(KerasModelTest, RefusesHashingTarnCannotReproduce) {
  const RefusedEdit kEdits[] = {
      {"one-hot bins", [](Json& j) { Entry(j, "hash_Race")["config"]["output_mode"] = "one_hot"; },
       "Hashing 'hash_Race'", ".config.output_mode", "output_mode \"one_hot\" is not supported"},
      {"a numeric mask value", [](Json& j) { Entry(j, "hash_Race")["config"]["mask_value"] = 0; },
       "Hashing 'hash_Race'", ".config.mask_value", "expected a string"},
      {"a salt of three words",
       [](Json& j) {
         Entry(j, "hash_Race")["config"]["salt"] = {1, 2, 3};
       },
       "Hashing 'hash_Race'", ".config.salt", "an integer or a pair of integers"},
      {"an unknown option", [](Json& j) { Entry(j, "hash_Race")["config"]["lora_rank"] = 2; },
       "Hashing 'hash_Race'", ".config.lora_rank", "option 'lora_rank' is not supported"},
      {"hashing ids", [](Json& j) { Entry(j, "Race")["config"]["dtype"] = "int32"; },
       "Hashing 'hash_Race'", "", "hashes 'Race', which is not a categorical text input"},
      {"text into an Embedding",
       [](Json& j) {
         Entry(j, "emb_Race")["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0] = "Race";
       },
       "Embedding 'emb_Race'", "", "a column's text feeds Hashing layers only"},
      {"bins into a Dense",
       [](Json& j) {
         Entry(j, "hidden")["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0] =
             "hash_Race";
       },
       "Dense 'hidden'", "", "ids feed Embedding layers only"},
      {"one column hashed two ways",
       [](Json& j) {
         Entry(j, "hash_Gender")["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0] =
             "Race";
       },
       "Hashing 'hash_Gender'", ".config",
       "hashes input 'Race' with other options than 'hash_Race'"},
  };
  const Json original = LoadJson("keras3_hashing.json");
  for (const auto& e : kEdits) {
    SCOPED_TRACE(e.what);
    Json json = original;
    e.edit(json);
    const std::string message = Refusal(json);
    ASSERT_FALSE(message.empty());
    std::string name = std::string(e.layer).substr(std::string(e.layer).find('\'') + 1);
    name.pop_back();
    const std::string prefix = "model.json: config.layers[" +
                               std::to_string(EntryIndex(original, name)) + "]" + e.field + " (" +
                               e.layer + "): ";
    EXPECT_EQ(message.substr(0, prefix.size()), prefix) << message;
    EXPECT_NE(message.find(e.message), std::string::npos) << message;
  }
  // A text input that feeds no Hashing is refused by the input.
  Json json = original;
  Entry(json, "hash_Race")["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0] = "Gender";
  Json gender_options = Entry(json, "hash_Gender")["config"];
  gender_options["name"] = "hash_Race";
  Entry(json, "hash_Race")["config"] = gender_options;
  EXPECT_NE(Refusal(json).find("(InputLayer 'Race'): the string input feeds no Hashing layer"),
            std::string::npos)
      << Refusal(json);
}

TEST(KerasModelTest, RefusesModelsItCannotTrain) {
  Json json = LoadJson("keras3_wide_deep.json");
  json["config"]["output_layers"] = {{"deep_logit", 0, 0}, {"wide_logit", 0, 0}};
  EXPECT_EQ(Refusal(json),
            "model.json: config.output_layers: the model has 2 outputs; tarn "
            "trains one score");

  json = LoadJson("keras3_wide_deep.json");
  json["config"]["output_layers"] = {"deep_bn", 0, 0};
  EXPECT_NE(Refusal(json).find("(BatchNormalization 'deep_bn'): the output has width 16"),
            std::string::npos);

  json = LoadJson("keras3_wide_deep.json");
  json["class_name"] = "MyModel";
  EXPECT_NE(Refusal(json).find("model.json: class_name: model class 'MyModel' is not supported"),
            std::string::npos);

  // A nested model is read as a model: this one has no layers.
  Json nested = LoadJson("keras3_wide_deep.json");
  Entry(nested, "deep_1")["class_name"] = "Functional";
  EXPECT_EQ(Refusal(nested), "model.json: config.layers[" +
                                 std::to_string(EntryIndex(nested, "deep_1")) +
                                 "].config.layers: expected a non-empty list of layers");

  // A shared layer whose calls cannot share in tarn is refused by its later call.
  Json shared = LoadJson("keras3_wide_deep.json");
  auto& calls = Entry(shared, "deep_bn")["inbound_nodes"];
  calls.push_back(calls[0]);
  EXPECT_EQ(Refusal(shared), "model.json: config.layers[" +
                                 std::to_string(EntryIndex(shared, "deep_bn")) +
                                 "] (BatchNormalization 'deep_bn#1'): a BatchNormalization "
                                 "called more than once (shared with 'deep_bn') is not "
                                 "supported: it would keep one moving mean and variance for "
                                 "several tensors");

  auto missing = ReadKerasModel(Fixture("no_such_model.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no_such_model.json"), std::string::npos);
  testing::TempDir dir;
  auto not_json = ReadKerasModel(dir.Write("model.json", "{\"class_name\": "));
  ASSERT_FALSE(not_json.ok());
  EXPECT_NE(not_json.status().message().find("model.json: not JSON"), std::string::npos);
}

// Hand-made Keras 3 JSON for shapes the fixtures do not have.
Json Tensor(const std::string& layer) {
  return {{"class_name", "__keras_tensor__"}, {"config", {{"keras_history", {layer, 0, 0}}}}};
}
Json LayerEntry(const std::string& cls, const std::string& name, Json config,
                const std::vector<std::string>& inputs) {
  config["name"] = name;
  Json args = Json::array();
  for (const auto& in : inputs) args.push_back(Tensor(in));
  if (inputs.size() > 1) args = Json::array({args});  // merge layers take one list
  Json nodes = Json::array();
  if (!inputs.empty()) nodes.push_back({{"args", args}, {"kwargs", Json::object()}});
  return {{"module", "keras.layers"},   {"class_name", cls}, {"config", config},
          {"registered_name", nullptr}, {"name", name},      {"inbound_nodes", nodes}};
}
Json Model(std::vector<Json> layers, const std::string& output) {
  Json inputs = Json::array();
  for (const auto& l : layers)
    if (l["class_name"] == "InputLayer") inputs.push_back({l["name"], 0, 0});
  return {{"module", "keras"},
          {"class_name", "Functional"},
          {"keras_version", "3.6.0"},
          {"config",
           {{"name", "m"},
            {"layers", layers},
            {"input_layers", inputs},
            {"output_layers", {output, 0, 0}}}}};
}
std::vector<Json> EmbeddedId() {
  return {LayerEntry("InputLayer", "c", {{"batch_shape", {nullptr, 1}}, {"dtype", "int64"}}, {}),
          LayerEntry("Embedding", "e", {{"input_dim", 5}, {"output_dim", 4}}, {"c"}),
          LayerEntry("Embedding", "f", {{"input_dim", 5}, {"output_dim", 4}}, {"c"})};
}

TEST(KerasModelTest, WidthsOfTensorsThatReduceToTwoDimensions) {
  // Dense and Dot straight on the (1, 4) embeddings, without a Flatten: width 4, then 1.
  std::vector<Json> layers = EmbeddedId();
  layers.push_back(LayerEntry("Dense", "d", {{"units", 3}}, {"e"}));
  layers.push_back(LayerEntry("Dot", "dot", {{"axes", -1}}, {"e", "f"}));
  layers.push_back(LayerEntry("Concatenate", "cat", {{"axis", 2}}, {"d", "dot"}));
  layers.push_back(LayerEntry("Dense", "out", {{"units", 1}}, {"cat"}));
  auto model = ParseKerasModel(Model(layers, "out"), "model.json");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->Find("d")->shape, (std::vector<int>{1, 3}));
  EXPECT_EQ(model->Find("dot")->shape, (std::vector<int>{1, 1}));
  EXPECT_EQ(model->Find("dot")->dot_axes[0], 2);
  EXPECT_EQ(model->Find("cat")->shape, (std::vector<int>{1, 4}));
  EXPECT_EQ(Widths(*model), (std::vector<int>{1, 4, 4, 3, 1, 4, 1}));
}

TEST(KerasModelTest, RefusesTensorsThatDoNotReduceToTwoDimensions) {
  struct Case {
    const char* what;
    std::vector<Json> extra;
    const char* message;
  };
  const Case kCases[] = {
      {"a concatenation along the ids axis",
       {LayerEntry("Concatenate", "cat", {{"axis", 1}}, {"e", "f"}),
        LayerEntry("Flatten", "flat", Json::object(), {"cat"}),
        LayerEntry("Dense", "out", {{"units", 1}}, {"flat"})},
       "config.layers[3] (Concatenate 'cat'): its output (2, 4) does not reduce to (batch, width)"},
      {"a dot over the size-1 axis",
       {LayerEntry("Dot", "dot", {{"axes", 1}}, {"e", "f"}),
        LayerEntry("Flatten", "flat", Json::object(), {"dot"}),
        LayerEntry("Dense", "out", {{"units", 1}}, {"flat"})},
       "config.layers[3] (Dot 'dot'): its output (4, 4) does not reduce"},
      {"a Dense across the width",
       {LayerEntry("Reshape", "column", {{"target_shape", {4, 1}}}, {"e"}),
        LayerEntry("Dense", "d", {{"units", 1}}, {"column"}),
        LayerEntry("Flatten", "flat", Json::object(), {"d"}),
        LayerEntry("Dense", "out", {{"units", 1}}, {"flat"})},
       "config.layers[4] (Dense 'd'): its input (4, 1) is not laid along the last axis"},
      {"a huge reshape",
       {LayerEntry("Reshape", "r", {{"target_shape", {1 << 30, 1 << 30, -1}}}, {"e"})},
       "config.layers[3].config.target_shape (Reshape 'r'): cannot reshape (1, 4) (4 values)"},
      {"a huge concatenation",
       {LayerEntry("Dense", "d", {{"units", 1 << 30}}, {"e"}),
        LayerEntry("Concatenate", "cat", Json::object(), {"d", "d", "d"})},
       "config.layers[4] (Concatenate 'cat'): its output (1, 1073741825) is too large"},
      {"a reshape that loses values",
       {LayerEntry("Reshape", "r", {{"target_shape", {3}}}, {"e"})},
       "config.layers[3].config.target_shape (Reshape 'r'): cannot reshape (1, 4) (4 values)"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.what);
    std::vector<Json> layers = EmbeddedId();
    layers.insert(layers.end(), c.extra.begin(), c.extra.end());
    std::string message = Refusal(Model(layers, layers.back()["name"]));
    EXPECT_NE(message.find(std::string("model.json: ") + c.message), std::string::npos) << message;
  }
}

// Each level calls the level below 11 times: five levels would inline 11^5 Dense layers.
TEST(KerasModelTest, RefusesNestedModelsThatInlineIntoTooManyLayers) {
  const Json input = LayerEntry("InputLayer", "shifu_input_0", {{"batch_shape", {nullptr, 4}}}, {});
  Json model = Model({input, LayerEntry("Dense", "d", {{"units", 4}}, {"shifu_input_0"})}, "d");
  for (int level = 0; level < 5; ++level) {
    Json nested = model;
    nested["name"] = "m";
    nested["config"]["name"] = "m";
    nested["inbound_nodes"] = Json::array();
    for (int call = 0; call < 11; ++call) {
      nested["inbound_nodes"].push_back(
          {{"args", Json::array({Tensor("shifu_input_0")})}, {"kwargs", Json::object()}});
    }
    model = Model({input, nested}, "m");
  }
  EXPECT_NE(Refusal(model).find("(Functional 'm'): inlining the nested model's calls gives more "
                                "than 100000 layers"),
            std::string::npos)
      << Refusal(model);
}

TEST(KerasModelTest, ReadsKeras2NestedInboundNodes) {
  Json json = LoadJson("keras2_deepfm.json");
  EXPECT_EQ(Entry(json, "fm")["inbound_nodes"][0][0], (Json{"fm_0_1", 0, 0, Json::object()}));
  KerasModel model = Read("keras2_deepfm.json");
  EXPECT_EQ(Layer(model, "fm").inputs, (std::vector<std::string>{"fm_0_1", "fm_0_2", "fm_1_2"}));
  // Keras 2 keeps a call's training flag when the model runs (Keras 3 replaces a traced false).
  Json forced = json;
  Entry(forced, "fm")["inbound_nodes"][0][0][3] = {{"training", false}};
  EXPECT_NE(Refusal(forced).find("(Add 'fm'): call argument 'training' (false) is not supported"),
            std::string::npos)
      << Refusal(forced);
  // Keras 2 names a shared layer's second call node 1: fm_0_2 has none.
  Entry(json, "fm")["inbound_nodes"][0][1][1] = 1;
  std::string message = Refusal(json);
  EXPECT_NE(message.find("(Add 'fm'): input 'fm_0_2#1' is no layer of the model"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace tarn::model

namespace tarn::model {
namespace {

// Every field of every layer, replaced by a value of each JSON type: the model still reads,
// or is refused with a message that starts with the file; nothing throws.
TEST(KerasModelTest, ValuesOfTheWrongTypeAreRefusedNotThrown) {
  const Json kValues[] = {
      nullptr, 7, -1, 2.5, "x", Json::array(), Json::object(), Json::array({nullptr, 3})};
  for (const std::string file : {"keras3_deepfm.json", "keras2_deepfm.json",
                                 "keras3_sequential_mlp.json", "keras2_sequential_mlp.json"}) {
    const Json original = LoadJson(file);
    size_t refused = 0, tried = 0;
    for (size_t i = 0; i < original["config"]["layers"].size(); ++i) {
      const Json& entry = original["config"]["layers"][i];
      std::vector<std::vector<std::string>> fields;
      for (const auto& [key, value] : entry.items()) {
        fields.push_back({key});
        if (value.is_object())
          for (const auto& [sub, v] : value.items()) fields.push_back({key, sub});
      }
      for (const auto& field : fields) {
        for (const Json& replacement : kValues) {
          Json json = original;
          Json* target = &json["config"]["layers"][i];
          for (const auto& key : field) target = &(*target)[key];
          *target = replacement;
          std::string message;
          EXPECT_NO_THROW(message = Refusal(json)) << file << " " << Join(field, ".");
          if (!message.empty()) {
            EXPECT_EQ(message.rfind("model.json: ", 0), 0u) << message;
            ++refused;
          }
          ++tried;
        }
      }
    }
    EXPECT_GT(refused, tried / 3) << file;
  }
}

}  // namespace
}  // namespace tarn::model
