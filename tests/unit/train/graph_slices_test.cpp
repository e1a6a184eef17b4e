// A graph model's batch cut into slices on the shipped Adult data: the same
// gradients, dense and sparse, and the same figures for 1 and 2 threads.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/files.h"
#include "common/settings.h"
#include "model/training_data.h"
#include "pipeline/adult_model_set.h"
#include "pipeline/steps.h"
#include "test_util.h"
#include "train/batch_loop.h"
#include "train/graph_trainer.h"
#include "train/sampling.h"
#include "train/setup.h"

namespace tarn::train {
namespace {

struct Captured {
  std::vector<std::vector<float>> dense;
  std::vector<std::vector<uint64_t>> ids;
  std::vector<std::vector<float>> grads;
  TrainSums sums;
};

class GraphSlices : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(testing::AdultDataDir())) return;
    dir_ = new testing::TempDir();
    const std::string set = dir_->File("income");
    ASSERT_TRUE(testing::MakeAdultModelSet(set).ok());
    Settings settings;
    auto ms = pipeline::OpenModelSet(set, settings);
    ASSERT_TRUE(ms.ok()) << ms.status().message();
    ASSERT_TRUE(pipeline::RunInit(*ms).ok());
    ASSERT_TRUE(pipeline::RunStats(*ms, {}).ok());
    ASSERT_TRUE(pipeline::RunNorm(*ms, {}).ok());
    auto options = ms->TrainingData(/*seed=*/5);
    ASSERT_TRUE(options.ok()) << options.status().message();
    auto loaded = model::LoadTrainingData(*options);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    data_ = new model::TrainingData(std::move(*loaded));
    auto names = ms->ColumnNames();
    ASSERT_TRUE(names.ok());
    names_ = new std::vector<std::string>(*names);
    set_ = new std::string(set);
  }
  static void TearDownTestSuite() {
    delete data_;
    delete names_;
    delete set_;
    delete dir_;
  }
  void SetUp() override {
    if (!data_) GTEST_SKIP() << "examples/income-estimation is absent";
  }

  // One epoch of `algorithm` at batch 1024 (4 slices), the tables stepped by
  // the lazy optimizer after each batch, the dense parameters as they start.
  static Captured RunOnce(const std::string& algorithm, int threads) {
    data::Json p = {{"NumHiddenLayers", 1},  {"NumHiddenNodes", {16}}, {"ActivationFunc", {"relu"}},
                    {"NumEmbedOuputs", 4},   {"DropoutRate", 0.2},     {"MiniBatchs", 1024},
                    {"Propagation", "Adam"}, {"LearningRate", 0.01}};
    auto typed = model::TrainParams::Parse(p, algorithm);
    EXPECT_TRUE(typed.ok()) << typed.status().message();
    auto m = BuildGraphModelFor(algorithm, *typed, *data_, 4.0, *names_, *set_);
    EXPECT_TRUE(m.ok()) << m.status().message();
    auto setup = TrainSetup::FromTrainParams(p, algorithm, data_->inputs);
    EXPECT_TRUE(setup.ok()) << setup.status().message();
    auto trainer = GraphTrainer::Create(m->spec, *data_, 4.0, setup->shifu_kind);
    EXPECT_TRUE(trainer.ok()) << trainer.status().message();
    GraphTrainer& g = **trainer;
    EXPECT_EQ(g.Slices(1024), 4);
    EXPECT_EQ(g.Slices(128), 1);
    auto specs = GraphTableSpecs(g.graph(), setup->optimizer, 9);
    EXPECT_TRUE(specs.ok());
    auto tables = LocalTables::Create(*specs);
    EXPECT_TRUE(tables.ok());
    g.set_tables(tables->get());
    std::vector<float> params(g.ParameterCount());
    g.InitParameters(params.data(), 9);
    BatchLoopConfig c;
    c.batch = 1024;
    c.threads = threads;
    c.seed = 42;
    c.shifu_kind = setup->shifu_kind;
    BatchLoop loop(&g, c);
    auto order = data_->train;
    ShuffleForEpoch(&order, 42, 0, 0, 0);
    Captured out;
    auto sink = [&](const BatchGradient& b) -> Status {
      out.dense.emplace_back(b.dense.begin(), b.dense.end());
      for (const auto& t : b.tables) {
        EXPECT_TRUE(std::is_sorted(t.ids.begin(), t.ids.end()));
        out.ids.emplace_back(t.ids.begin(), t.ids.end());
        out.grads.emplace_back(t.grads.begin(), t.grads.end());
      }
      (*tables)->Apply(b.tables, b.weight, 0);
      return Status::Ok();
    };
    Status st = loop.RunEpoch(params.data(), order, 0, 0, sink, &out.sums);
    EXPECT_TRUE(st.ok()) << st.message();
    return out;
  }

  static testing::TempDir* dir_;
  static model::TrainingData* data_;
  static std::vector<std::string>* names_;
  static std::string* set_;
};

testing::TempDir* GraphSlices::dir_ = nullptr;
model::TrainingData* GraphSlices::data_ = nullptr;
std::vector<std::string>* GraphSlices::names_ = nullptr;
std::string* GraphSlices::set_ = nullptr;

TEST_F(GraphSlices, WdlAndDeepFmGiveTheSameGradientsForOneAndTwoThreads) {
  for (const std::string algorithm : {"WDL", "DeepFM"}) {
    const Captured one = RunOnce(algorithm, 1);
    const Captured two = RunOnce(algorithm, 2);
    ASSERT_GT(one.dense.size(), 20u) << algorithm;  // batches
    ASSERT_FALSE(one.ids.empty()) << algorithm << " has embedding tables";
    EXPECT_EQ(one.dense, two.dense) << algorithm;
    EXPECT_EQ(one.ids, two.ids) << algorithm;
    EXPECT_EQ(one.grads, two.grads) << algorithm;
    EXPECT_EQ(one.sums.loss, two.sums.loss) << algorithm;
    EXPECT_EQ(one.sums.weight, two.sums.weight) << algorithm;
    EXPECT_EQ(one.sums.rows, static_cast<int64_t>(data_->train.size())) << algorithm;
    EXPECT_GT(one.sums.loss, 0) << algorithm;
  }
}

}  // namespace
}  // namespace tarn::train
