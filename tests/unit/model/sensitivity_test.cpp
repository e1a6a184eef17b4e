#include "model/sensitivity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tarn::model {
namespace {

// Three input columns, the middle one one-hot of width 2: 4 inputs, a tanh
// hidden layer of 5 units, a sigmoid output.
ModelSpec SmallSpec() {
  ModelSpec spec;
  spec.input_count = 4;
  spec.layers = {{4, 5, Activation::kTanh, 0}, {5, 1, Activation::kSigmoid, 0}};
  return spec;
}

TrainingData RandomRows(int rows, uint64_t seed) {
  TrainingData d;
  d.inputs = 4;
  d.columns.resize(3);
  for (int c = 0; c < 3; ++c) d.columns[c].column_num = 10 + c;
  d.widths = {1, 2, 1};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> value(0, 1);
  std::bernoulli_distribution positive(0.3);
  for (int r = 0; r < rows; ++r) {
    d.x.push_back(value(rng));
    bool hot = positive(rng);  // the one-hot column
    d.x.push_back(hot ? 1.0f : 0.0f);
    d.x.push_back(hot ? 0.0f : 1.0f);
    d.x.push_back(value(rng));
    d.x.push_back(positive(rng) ? 1.0f : 0.0f);  // target
    d.x.push_back(1.0f);                         // weight
    d.train.push_back(static_cast<uint32_t>(r));
  }
  return d;
}

// Shifu's mapper in double precision: the first layer's sums once per row, and
// for each column those sums minus the column's terms (CacheFlatNetwork).
std::vector<ColumnSensitivity> ShifuReference(const ModelSpec& spec,
                                              const std::vector<float>& params,
                                              const TrainingData& d, SensitivityKind kind) {
  const int in = spec.input_count, hidden = spec.layers[0].outputs;
  const size_t w1 = spec.WeightOffset(0), b1 = spec.BiasOffset(0);
  const size_t w2 = spec.WeightOffset(1), b2 = spec.BiasOffset(1);
  auto output = [&](const std::vector<double>& z1) {
    double z2 = params[b2];
    for (int h = 0; h < hidden; ++h) z2 += params[w2 + h] * std::tanh(z1[h]);
    return 1 / (1 + std::exp(-z2));
  };
  std::vector<ColumnSensitivity> out(d.columns.size());
  const size_t rows = d.x.size() / d.stride();
  for (size_t r = 0; r < rows; ++r) {
    const float* x = d.row(static_cast<uint32_t>(r));
    std::vector<double> z1(hidden);
    for (int h = 0; h < hidden; ++h) {
      z1[h] = params[b1 + h];
      for (int j = 0; j < in; ++j) z1[h] += params[w1 + h * in + j] * x[j];
    }
    const double full = output(z1);
    int offset = 0;
    for (size_t c = 0; c < d.columns.size(); ++c) {
      std::vector<double> cut = z1;
      for (int h = 0; h < hidden; ++h) {
        for (int j = offset; j < offset + d.widths[c]; ++j) {
          cut[h] -= params[w1 + h * in + j] * x[j];
        }
      }
      offset += d.widths[c];
      const double reference = kind == SensitivityKind::kScore ? full : x[in];
      const double diff = reference - output(cut);
      out[c].column = static_cast<int>(c);
      out[c].rows++;
      out[c].sum_abs += std::fabs(diff);
      out[c].sum_sq += diff * diff;
    }
  }
  return out;
}

std::vector<float> RandomParams(const ModelSpec& spec, uint64_t seed) {
  std::vector<float> p(spec.ParameterCount());
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  for (auto& v : p) v = u(rng);
  return p;
}

TEST(SensitivityTest, MatchesShifusFirstLayerFormulaForSeAndSt) {
  const ModelSpec spec = SmallSpec();
  Network net(spec);
  const auto params = RandomParams(spec, 7);
  const TrainingData d = RandomRows(2500, 11);  // more than two chunks, the last one partial
  for (auto kind : {SensitivityKind::kScore, SensitivityKind::kTarget}) {
    auto got = ComputeSensitivity(net, params.data(), d, kind, 2);
    auto want = ShifuReference(spec, params, d, kind);
    ASSERT_EQ(got.size(), 3u);
    for (size_t c = 0; c < 3; ++c) {
      EXPECT_EQ(got[c].rows, 2500u);
      EXPECT_NEAR(got[c].Mean(), want[c].Mean(), 1e-5 + 1e-4 * want[c].Mean()) << c;
      EXPECT_NEAR(got[c].Rms(), want[c].Rms(), 1e-5 + 1e-4 * want[c].Rms()) << c;
      EXPECT_NEAR(got[c].Variance(), want[c].Variance(), 1e-5 + 1e-3 * want[c].Variance()) << c;
    }
    EXPECT_EQ(RankByRms(got), RankByRms(want));
  }
}

TEST(SensitivityTest, ReducerFormulas) {
  ColumnSensitivity s;
  s.rows = 4;  // diffs 1, -1, 2, 0
  s.sum_abs = 4;
  s.sum_sq = 6;
  EXPECT_DOUBLE_EQ(s.Mean(), 1.0);
  EXPECT_DOUBLE_EQ(s.Rms(), std::sqrt(1.5));
  EXPECT_DOUBLE_EQ(s.Variance(), 0.5);
  EXPECT_EQ(ColumnSensitivity{}.Rms(), 0);
}

TEST(SensitivityTest, ResultDoesNotDependOnThreadCount) {
  const ModelSpec spec = SmallSpec();
  Network net(spec);
  const auto params = RandomParams(spec, 3);
  const TrainingData d = RandomRows(5000, 5);
  auto one = ComputeSensitivity(net, params.data(), d, SensitivityKind::kTarget, 1);
  auto three = ComputeSensitivity(net, params.data(), d, SensitivityKind::kTarget, 3);
  for (size_t c = 0; c < one.size(); ++c) {
    EXPECT_EQ(one[c].sum_abs, three[c].sum_abs);
    EXPECT_EQ(one[c].sum_sq, three[c].sum_sq);
  }
}

TEST(SensitivityTest, AColumnTheNetworkIgnoresHasZeroScoreSensitivity) {
  ModelSpec spec = SmallSpec();
  Network net(spec);
  auto params = RandomParams(spec, 9);
  // The last column's weights are 0: setting it to 0 cannot move the score.
  for (int h = 0; h < 5; ++h) params[spec.WeightOffset(0) + h * 4 + 3] = 0;
  const TrainingData d = RandomRows(300, 1);
  auto s = ComputeSensitivity(net, params.data(), d, SensitivityKind::kScore, 2);
  EXPECT_EQ(s[2].Rms(), 0);
  EXPECT_GT(s[0].Rms(), 0);
  EXPECT_EQ(RankByRms(s).back(), 2);
}

TEST(SensitivityTest, ParsesShifusNames) {
  EXPECT_EQ(*ParseSensitivityKind("se"), SensitivityKind::kScore);
  EXPECT_EQ(*ParseSensitivityKind("ST"), SensitivityKind::kTarget);
  auto bad = ParseSensitivityKind("KS");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("SE or ST"), std::string::npos);
}

}  // namespace
}  // namespace tarn::model
