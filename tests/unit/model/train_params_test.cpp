#include "model/train_params.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/files.h"
#include "data/model_config.h"
#include "test_util.h"

namespace tarn::model {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The message of the error Parse gives for `json`.
std::string ErrorOf(const char* json, const char* algorithm = "NN") {
  auto r = TrainParams::Parse(Json::parse(json), algorithm);
  EXPECT_FALSE(r.ok()) << json;
  return r.ok() ? std::string() : r.status().message();
}

TEST(TrainParamsTest, AbsentKeysTakeTheDeclaredDefaults) {
  auto p = TrainParams::Parse(Json::parse(R"({"NumHiddenNodes":[7]})"), "NN");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->algorithm, Algorithm::kNN);
  EXPECT_EQ(p->hidden_layers, 1);
  EXPECT_EQ(p->hidden_nodes, std::vector<int>{7});
  EXPECT_EQ(p->hidden_activations, std::vector<Activation>{Activation::kTanh});
  EXPECT_EQ(p->output_activation, Activation::kSigmoid);
  EXPECT_FALSE(p->loss.has_value());
  EXPECT_EQ(p->TrainingLoss(), LossKind::kLog);
  EXPECT_EQ(p->weight_initializer, Initializer::kXavier);
  EXPECT_EQ(p->propagation, OptimizerKind::kAdam);
  EXPECT_DOUBLE_EQ(p->learning_rate, 0.002);
  EXPECT_DOUBLE_EQ(p->momentum, 0.5);
  EXPECT_DOUBLE_EQ(p->adam_beta1, 0.9);
  EXPECT_DOUBLE_EQ(p->adam_beta2, 0.999);
  EXPECT_EQ(p->regularization, OptimizerConfig::Reg::kL2);
  EXPECT_EQ(p->mini_batch_rows, 128);
  EXPECT_EQ(p->checkpoint_interval, 0);
  EXPECT_TRUE(p->warnings.empty());
  EXPECT_TRUE(p->notes.empty());

  // LR has no hidden layer, whatever the hidden-layer keys say.
  auto lr = TrainParams::Parse(Json::parse(R"({"NumHiddenLayers":2})"), "lr");
  ASSERT_TRUE(lr.ok()) << lr.status().ToString();
  EXPECT_EQ(lr->hidden_layers, 0);
  EXPECT_TRUE(lr->hidden_nodes.empty());
  ASSERT_EQ(lr->notes.size(), 1u);
  EXPECT_PRED2(Contains, lr->notes[0], "train.params.NumHiddenLayers is read by NN, TensorFlow");
}

// OptimizerConfig's own defaults (for code that builds one directly) are the table's.
TEST(TrainParamsTest, OptimizerDefaultsAreTheDeclaredOnes) {
  const OptimizerConfig built;
  const OptimizerConfig read =
      OptimizerConfig::FromTrainParams(TrainParams::Parse(Json::object(), "LR").value());
  EXPECT_EQ(read.kind, built.kind);
  EXPECT_EQ(read.learning_rate, built.learning_rate);
  EXPECT_EQ(read.learning_decay, built.learning_decay);
  EXPECT_EQ(read.momentum, built.momentum);
  EXPECT_EQ(read.adam_beta1, built.adam_beta1);
  EXPECT_EQ(read.adam_beta2, built.adam_beta2);
  EXPECT_EQ(read.regularization, built.regularization);
  EXPECT_EQ(read.reg, built.reg);
}

TEST(TrainParamsTest, GivenValuesAreTyped) {
  auto p = TrainParams::Parse(
      Json::parse(R"({"NumHiddenLayers":"2","NumHiddenNodes":[20,"10"],)"
                  R"("ActivationFunc":["relu","Sigmoid"],"MiniBatchs":"64","CheckpointInterval":5,)"
                  R"("LearningRate":"0.01","L1orL2":"none","TF.loss":"squared"})"),
      "TensorFlow");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->hidden_nodes, (std::vector<int>{20, 10}));
  EXPECT_EQ(p->hidden_activations,
            (std::vector<Activation>{Activation::kRelu, Activation::kSigmoid}));
  EXPECT_EQ(p->mini_batch_rows, 64);
  EXPECT_EQ(p->checkpoint_interval, 5);
  EXPECT_DOUBLE_EQ(p->learning_rate, 0.01);
  EXPECT_EQ(p->regularization, OptimizerConfig::Reg::kNone);
  EXPECT_EQ(p->TrainingLoss(), LossKind::kSquared);  // TF.loss, Loss being absent
}

TEST(TrainParamsTest, WrongTypesAndBoundsNameTheKey) {
  EXPECT_PRED2(Contains, ErrorOf(R"({"NumHiddenNodes":[5],"MiniBatchs":"many"})"),
               "train.params.MiniBatchs must be a positive integer, got \"many\"");
  EXPECT_PRED2(Contains, ErrorOf(R"({"NumHiddenNodes":[5],"MiniBatchs":0})"),
               "train.params.MiniBatchs must be a positive integer, got 0");
  EXPECT_PRED2(Contains, ErrorOf(R"({"NumHiddenNodes":[5],"CheckpointInterval":-1})"),
               "train.params.CheckpointInterval must be a non-negative integer, got -1");
  EXPECT_PRED2(Contains, ErrorOf(R"({"NumHiddenNodes":[5],"CheckpointInterval":2.5})"),
               "train.params.CheckpointInterval must be a non-negative integer, got 2.5");
  EXPECT_PRED2(Contains, ErrorOf(R"({"NumHiddenNodes":[5],"AdamBeta2":1})"),
               "train.params.AdamBeta2 must be a number in [0, 1), got 1");
  EXPECT_PRED2(Contains, ErrorOf(R"({"NumHiddenNodes":[5],"ActivationFunc":[1]})"),
               "train.params.ActivationFunc must be a string or a list of strings, got [1]");
  EXPECT_PRED2(Contains, ErrorOf(R"({"Loss":"hinge"})", "LR"),
               "train.params.Loss: unknown loss 'hinge'");
  EXPECT_PRED2(Contains, ErrorOf(R"({"TF.loss":3,"NumHiddenNodes":[5]})", "TensorFlow"),
               "train.params.TF.loss must be a string, got 3");
  EXPECT_PRED2(Contains, ErrorOf("[1]"), "train.params must be an object, got [1]");
  auto gbt = TrainParams::Parse(Json::object(), "GBT");
  ASSERT_FALSE(gbt.ok());
  EXPECT_EQ(gbt.status().code(), StatusCode::kUnsupported);
  EXPECT_PRED2(Contains, gbt.status().message(), "train.algorithm GBT is not a neural network");
}

TEST(TrainParamsTest, ListLengthsFollowNumHiddenLayers) {
  EXPECT_PRED2(Contains, ErrorOf(R"({"NumHiddenLayers":2,"NumHiddenNodes":[50]})"),
               "train.params.NumHiddenNodes must list NumHiddenLayers (2) positive integers, got "
               "[50]");
  EXPECT_PRED2(Contains, ErrorOf(R"({"NumHiddenLayers":2})"),
               "train.params.NumHiddenNodes must list NumHiddenLayers (2) positive integers, but "
               "it is missing");
  EXPECT_PRED2(Contains, ErrorOf(R"({"NumHiddenNodes":[5, -1]})"),
               "train.params.NumHiddenNodes must list NumHiddenLayers (1) positive integers, got "
               "[5,-1]");
  EXPECT_PRED2(Contains,
               ErrorOf(R"({"NumHiddenLayers":3,"NumHiddenNodes":[5,5,5],"ActivationFunc":["tanh",)"
                       R"("relu"]})"),
               "train.params.ActivationFunc must list one activation or NumHiddenLayers (3) "
               "activations, got [\"tanh\",\"relu\"]");
  // No hidden layer: the sizes are not needed.
  auto none = TrainParams::Parse(Json::parse(R"({"NumHiddenLayers":0})"), "NN");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->hidden_nodes.empty());
  EXPECT_TRUE(none->hidden_activations.empty());
}

TEST(TrainParamsTest, UnknownKeysWarnWithTheClosestKeyAndKnownOnesAreNoted) {
  auto p = TrainParams::Parse(
      Json::parse(R"({"NumHiddenNodes":[5],"LearnigRate":0.5,"Epsilon":1,)"
                  R"("TF.loss":"log","FixedLayers":[1],"EnableEarlyStop":true})"),
      "NN");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_DOUBLE_EQ(p->learning_rate, 0.002);  // the misspelled key did nothing
  // In the file's order.
  ASSERT_EQ(p->warnings.size(), 2u);
  EXPECT_EQ(p->warnings[0],
            "unknown key 'train.params.LearnigRate' is ignored; did you mean LearningRate?");
  EXPECT_PRED2(Contains, p->warnings[1],
               "unknown key 'train.params.Epsilon' is ignored (the "
               "closest key is ");
  ASSERT_EQ(p->notes.size(), 3u);
  EXPECT_PRED2(Contains, p->notes[0], "train.params.TF.loss is read by TensorFlow, not NN");
  EXPECT_PRED2(Contains, p->notes[1],
               "train.params.FixedLayers is read by Shifu's NN, not by tarn");
  EXPECT_PRED2(Contains, p->notes[2],
               "train.params.EnableEarlyStop is read by Shifu's NN, LR, not by tarn");
}

// Every model set `tarn new` writes, and Shifu's own examples, parse without a warning.
TEST(TrainParamsTest, ShifusAndTarnsModelSetsParseWithoutWarnings) {
  for (const char* algorithm : {"NN", "LR", "TENSORFLOW"}) {
    auto config = data::ModelConfig::CreateNew("m", algorithm, "");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto p = TrainParams::Parse(config->train.params, config->train.algorithm);
    ASSERT_TRUE(p.ok()) << algorithm << ": " << p.status().ToString();
    EXPECT_TRUE(p->warnings.empty()) << algorithm << ": " << p->warnings[0];
  }
  const std::string examples = testing::SharedDir() + "/datasets/shifu-examples";
  if (!IsDirectory(examples)) GTEST_SKIP() << examples << " is absent";
  int checked = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(examples)) {
    if (e.path().filename() != "ModelConfig.json") continue;
    auto config = data::ModelConfig::Load(e.path().string());
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto p = TrainParams::Parse(config->train.params, config->train.algorithm);
    ASSERT_TRUE(p.ok()) << e.path() << ": " << p.status().ToString();
    EXPECT_TRUE(p->warnings.empty()) << e.path() << ": " << p->warnings[0];
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no ModelConfig.json under " << examples;
}

TEST(TrainParamsTest, EveryDeclarationIsUsable) {
  for (const auto& d : DeclaredTrainParams()) {
    EXPECT_EQ(FindTrainParam(d.name), &d) << d.name << " is declared twice";
    EXPECT_EQ(d.read_by_tarn, d.store != nullptr) << d.name;
    EXPECT_NE(d.algorithms, 0u) << d.name;
    EXPECT_NE(std::string(d.doc), "") << d.name;
    EXPECT_EQ(std::string(d.doc).find('|'), std::string::npos) << d.name << ": breaks the table";
  }
  EXPECT_EQ(FindTrainParam("learningrate"), nullptr);  // Shifu's spelling, exactly
}

TEST(TrainParamsTest, TrainingDocHoldsTheGeneratedTable) {
  auto doc = ReadFile(testing::SourceDir() + "/docs/TRAINING.md");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const size_t begin = doc->find("| key | type | default");
  ASSERT_NE(begin, std::string::npos) << "docs/TRAINING.md lacks the train#params table";
  const size_t end = doc->find("\n\n", begin);
  ASSERT_NE(end, std::string::npos);
  EXPECT_EQ(doc->substr(begin, end + 1 - begin), TrainParamsMarkdown())
      << "docs/TRAINING.md's train#params table is stale: replace it with the output of "
         "'tarn settings --train-params'";
}

}  // namespace
}  // namespace tarn::model
