#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "model/network.h"
#include "model/training_data.h"
#include "train/batch_loop.h"
#include "train/epoch_outcome.h"
#include "train/sampling.h"
#include "train/setup.h"
#include "train/validation.h"

namespace tarn::train {
namespace {

std::vector<uint32_t> Iota(uint32_t n) {
  std::vector<uint32_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST(BagRows, AllRowsUnlessSampled) {
  const auto train = Iota(1000);
  EXPECT_EQ(BagRows(train, {1.0, false}, 42, 3, 0), train);
  const auto half = BagRows(train, {0.5, false}, 42, 0, 0);
  EXPECT_EQ(half.size(), 500u);
  EXPECT_TRUE(std::is_sorted(half.begin(), half.end()));
  EXPECT_EQ(std::set<uint32_t>(half.begin(), half.end()).size(), 500u);  // no repeats
  EXPECT_EQ(BagRows(train, {0.5, false}, 42, 0, 0), half);               // a pure function
  EXPECT_NE(BagRows(train, {0.5, false}, 42, 1, 0), half);               // of the bag
  EXPECT_NE(BagRows(train, {0.5, false}, 42, 0, 1), half);               // and the slot
  const auto drawn = BagRows(train, {1.0, true}, 42, 0, 0);
  EXPECT_EQ(drawn.size(), 1000u);
  EXPECT_LT(std::set<uint32_t>(drawn.begin(), drawn.end()).size(), 1000u);  // with repeats
  EXPECT_TRUE(BagRows({}, {0.5, true}, 42, 0, 0).empty());
}

TEST(ShuffleForEpoch, DependsOnEpochAndSlotOnly) {
  auto a = Iota(200), b = Iota(200), c = Iota(200), d = Iota(200);
  ShuffleForEpoch(&a, 7, 0, 2, 0);
  ShuffleForEpoch(&b, 7, 0, 2, 0);
  ShuffleForEpoch(&c, 7, 0, 3, 0);
  ShuffleForEpoch(&d, 7, 0, 2, 1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  std::sort(a.begin(), a.end());
  EXPECT_EQ(a, Iota(200));
  EXPECT_NE(DropoutSeed(7, 1, 0, 0), 0u);
}

// Rows of `inputs` random inputs, a 0/1 target and a weight of 1 or 2.
model::TrainingData MakeData(int rows, int inputs, uint64_t seed) {
  model::TrainingData d;
  d.inputs = inputs;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> x(0, 1);
  for (int r = 0; r < rows; ++r) {
    float sum = 0;
    for (int k = 0; k < inputs; ++k) {
      d.x.push_back(x(rng));
      sum += d.x.back();
    }
    d.x.push_back(sum > 0 ? 1.0f : 0.0f);
    d.x.push_back(r % 3 == 0 ? 2.0f : 1.0f);
    (r % 5 == 0 ? d.valid : d.train).push_back(static_cast<uint32_t>(r));
  }
  return d;
}

TrainSetup SmallNetwork(int inputs, int batch) {
  data::Json params{{"NumHiddenLayers", 1}, {"NumHiddenNodes", {16}}, {"ActivationFunc", {"tanh"}},
                    {"MiniBatchs", batch},  {"DropoutRate", 0.1},     {"Loss", "log"}};
  auto s = TrainSetup::FromTrainParams(params, "NN", inputs);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

struct Captured {
  std::vector<std::vector<float>> gradients;
  std::vector<double> weights;
  TrainSums sums;
};

Captured RunOnce(const model::TrainingData& data, const TrainSetup& setup, int batch, int threads,
                 int64_t first_batch = 0) {
  model::Network net(setup.spec);
  std::vector<float> params(net.ParameterCount());
  net.InitParameters(params.data(), InitSeed(42, 0));
  BatchLoopConfig c;
  c.batch = batch;
  c.threads = threads;
  c.seed = 42;
  c.shifu_kind = setup.shifu_kind;
  BatchLoop loop(net, data, c);
  auto order = data.train;
  ShuffleForEpoch(&order, 42, 0, 0, 0);
  Captured out;
  auto sink = [&](const BatchGradient& g) -> Status {
    out.gradients.emplace_back(g.dense.begin(), g.dense.end());
    out.weights.push_back(g.weight);
    return Status::Ok();
  };
  EXPECT_TRUE(loop.RunEpoch(params.data(), order, 0, first_batch, sink, &out.sums).ok());
  return out;
}

TEST(BatchLoop, TheThreadCountNeverChangesTheFigures) {
  const auto data = MakeData(5000, 12, 1);
  const auto setup = SmallNetwork(12, 1500);  // 5 slices of 300 rows
  const auto one = RunOnce(data, setup, 1500, 1);
  const auto four = RunOnce(data, setup, 1500, 4);
  ASSERT_EQ(one.gradients.size(), 3u);  // 4000 rows: 1500, 1500, 1000
  EXPECT_EQ(one.gradients, four.gradients);
  EXPECT_EQ(one.weights, four.weights);
  EXPECT_EQ(one.sums.loss, four.sums.loss);
  EXPECT_EQ(one.sums.rows, 4000);
  EXPECT_EQ(one.sums.shifu.rows, 4000);
  double weight = 0;
  for (uint32_t r : data.train) weight += data.row(r)[data.inputs + 1];
  EXPECT_DOUBLE_EQ(one.sums.weight, weight);
}

TEST(BatchLoop, StartsAtABatchPosition) {
  const auto data = MakeData(2000, 6, 2);
  const auto setup = SmallNetwork(6, 100);
  const auto all = RunOnce(data, setup, 100, 1);
  const auto tail = RunOnce(data, setup, 100, 1, 10);
  ASSERT_EQ(all.gradients.size(), 16u);
  ASSERT_EQ(tail.gradients.size(), 6u);
  // Gradients at the same parameters: the sink here does not step.
  EXPECT_EQ(tail.gradients[0], all.gradients[10]);
  EXPECT_EQ(tail.sums.rows, 600);
  EXPECT_EQ(RunOnce(data, setup, 100, 1, int64_t{1} << 60).gradients.size(), 0u);
}

TEST(Validation, SummariesMergeAndTheAucIsTheBinnedArea) {
  const auto data = MakeData(3000, 8, 3);
  const auto setup = SmallNetwork(8, 128);
  model::Network net(setup.spec);
  std::vector<float> params(net.ParameterCount());
  net.InitParameters(params.data(), 5);
  const auto whole = Validate(net, params.data(), data, data.train, setup.shifu_kind, 3);
  EXPECT_EQ(Validate(net, params.data(), data, data.train, setup.shifu_kind, 1).loss, whole.loss);
  const size_t half = data.train.size() / 2;
  std::vector<uint32_t> first(data.train.begin(), data.train.begin() + half);
  std::vector<uint32_t> second(data.train.begin() + half, data.train.end());
  auto merged = Validate(net, params.data(), data, first, setup.shifu_kind, 2);
  merged.Merge(Validate(net, params.data(), data, second, setup.shifu_kind, 2));
  EXPECT_NEAR(merged.MeanLoss(), whole.MeanLoss(), 1e-12);
  EXPECT_EQ(merged.shifu.rows, whole.shifu.rows);
  EXPECT_EQ(merged.positive, whole.positive);
  EXPECT_EQ(merged.negative, whole.negative);
  EXPECT_DOUBLE_EQ(merged.Auc(), whole.Auc());

  // The AUC by counting weighted pairs, ties within a bin counting one half.
  std::vector<std::pair<int, double>> pos, neg;
  std::vector<float> scores(data.train.size());
  auto ws = net.MakeWorkspace(256);
  std::vector<float> x;
  for (uint32_t r : data.train) x.insert(x.end(), data.row(r), data.row(r) + data.inputs);
  net.Predict(params.data(), x.data(), static_cast<int>(scores.size()), scores.data(), ws.get());
  for (size_t i = 0; i < scores.size(); ++i) {
    const float* r = data.row(data.train[i]);
    const int bin = std::clamp(static_cast<int>(scores[i] * kScoreBins), 0, kScoreBins - 1);
    (r[data.inputs] >= 0.5f ? pos : neg).push_back({bin, r[data.inputs + 1]});
  }
  double area = 0, wp = 0, wn = 0;
  for (auto [b, w] : pos) wp += w;
  for (auto [b, w] : neg) wn += w;
  for (auto [bp, w1] : pos) {
    for (auto [bn, w2] : neg) area += w1 * w2 * (bp > bn ? 1.0 : bp == bn ? 0.5 : 0.0);
  }
  EXPECT_NEAR(whole.Auc(), area / (wp * wn), 1e-9);
  EXPECT_TRUE(std::isnan(ValidationSummary{}.Auc()));
  EXPECT_TRUE(std::isnan(ValidationSummary{}.MeanLoss()));
}

TEST(EarlyStop, StopsAfterPatienceAndKeepsTheBest) {
  EarlyStop stop({0, 2});
  EXPECT_TRUE(stop.AfterEpoch(0.5, 0.40).keep_params);
  EXPECT_FALSE(stop.AfterEpoch(0.4, 0.41).stop);
  const auto saved = stop.SaveState();
  EXPECT_TRUE(stop.AfterEpoch(0.3, 0.42).stop);
  EarlyStop resumed({0, 2});
  resumed.RestoreState(saved);
  EXPECT_TRUE(resumed.AfterEpoch(0.3, 0.42).stop);  // the resumed run decides the same
  EarlyStop converge({0.1, 0});
  EXPECT_FALSE(converge.AfterEpoch(0.2, NAN).stop);
  EXPECT_TRUE(converge.AfterEpoch(0.05, NAN).stop);
  EXPECT_FALSE(converge.AfterEpoch(0.05, NAN).keep_params);
}

TEST(EpochTotals, PoolsLossesAndAveragesShifusErrorOverTheSlots) {
  TrainSums a, b;
  a.loss = 10;
  a.weight = 20;
  a.rows = 10;
  a.shifu = {1.0, 10};
  b.loss = 30;
  b.weight = 20;
  b.rows = 30;
  b.shifu = {9.0, 30};
  ValidationSummary va, vb;
  va.loss = 1;
  va.weight = 4;
  va.shifu = {0.5, 5};
  vb.loss = 3;
  vb.weight = 4;
  vb.shifu = {4.5, 5};
  EpochTotals totals;
  totals.AddSlot(a, va);
  totals.AddSlot(b, vb);
  const auto f = totals.Figures(3, -1, 2.0, 2.5);
  EXPECT_DOUBLE_EQ(f.train_loss, 1.0);                     // 40 / 40: weighted over every row
  EXPECT_DOUBLE_EQ(f.shifu_train_error, (0.1 + 0.3) / 2);  // each slot's mean, averaged
  EXPECT_DOUBLE_EQ(f.valid_loss, 0.5);
  EXPECT_DOUBLE_EQ(f.shifu_valid_error, (0.1 + 0.9) / 2);
  EXPECT_DOUBLE_EQ(f.samples_per_sec, 20.0);  // 40 rows in 2 s
  EXPECT_EQ(f.epoch, 3);
}

TEST(EpochOutcome, ShifuErrorAveragesTheWorkersAndDivergenceIsAnError) {
  EXPECT_DOUBLE_EQ(ShifuErrorOverWorkers({{1.0, 10}, {3.0, 10}, {0, 0}}), 0.2);
  EXPECT_TRUE(std::isnan(ShifuErrorOverWorkers({})));
  EXPECT_TRUE(CheckNotDiverged(3, 0.5).ok());
  const Status st = CheckNotDiverged(3, NAN);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("epoch 3"), std::string::npos);
}

}  // namespace
}  // namespace tarn::train
