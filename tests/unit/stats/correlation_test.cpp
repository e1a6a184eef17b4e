#include "stats/correlation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tarn::stats {
namespace {

// Columns: x = 1..5, y = [1,3,2,5,4], z = −x, k = 7 (constant).
// Σ(x−3)(y−3) = 4+0+0+2+2 = 8, Σ(x−3)² = 10, Σ(y−3)² = 10 → r(x,y) = 0.8.
CorrelationAccumulator HandExample() {
  CorrelationAccumulator acc(4);
  const double ys[] = {1, 3, 2, 5, 4};
  for (int i = 0; i < 5; ++i) {
    const double row[] = {i + 1.0, ys[i], -(i + 1.0), 7.0};
    acc.Add(row);
  }
  return acc;
}

TEST(CorrelationTest, HandComputedPearson) {
  const auto r = HandExample().Pearson();
  ASSERT_EQ(r.size(), 16u);
  auto at = [&](int i, int j) { return r[i * 4 + j]; };
  for (int i = 0; i < 4; ++i) EXPECT_EQ(at(i, i), 1.0);
  EXPECT_NEAR(at(0, 1), 0.8, 1e-12);
  EXPECT_NEAR(at(1, 0), 0.8, 1e-12);
  EXPECT_NEAR(at(0, 2), -1.0, 1e-12);
  EXPECT_NEAR(at(1, 2), -0.8, 1e-12);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(at(i, 3), 0.0);  // zero variance
    EXPECT_EQ(at(3, i), 0.0);
  }
}

TEST(CorrelationTest, CovarianceAndMeans) {
  const auto acc = HandExample();
  EXPECT_EQ(acc.count(), 5u);
  EXPECT_DOUBLE_EQ(acc.Means()[0], 3.0);
  EXPECT_DOUBLE_EQ(acc.Means()[3], 7.0);
  const auto cov = acc.Covariance();
  EXPECT_NEAR(cov[0 * 4 + 1], 2.0, 1e-12);  // 8 / (5 − 1)
  EXPECT_NEAR(cov[1 * 4 + 0], 2.0, 1e-12);
  EXPECT_NEAR(cov[0], 2.5, 1e-12);
  EXPECT_EQ(cov[3 * 4 + 3], 0.0);
}

TEST(CorrelationTest, TooFewRows) {
  CorrelationAccumulator acc(2);
  EXPECT_EQ(acc.Pearson(), (std::vector<double>{1, 0, 0, 1}));
  const double row[] = {1, 2};
  acc.Add(row);
  EXPECT_EQ(acc.Pearson(), (std::vector<double>{1, 0, 0, 1}));
  EXPECT_EQ(acc.Covariance(), (std::vector<double>{0, 0, 0, 0}));
}

TEST(CorrelationTest, MergeMatchesSinglePassAndTwoPassReference) {
  const size_t cols = 7;
  const int rows = 5000;
  std::mt19937_64 rng(21);
  std::normal_distribution<double> n01(0, 1);
  std::vector<double> data(rows * cols);
  for (int r = 0; r < rows; ++r) {
    const double common = n01(rng);
    for (size_t c = 0; c < cols; ++c) {
      // Correlated columns on large, different offsets (1e8 stresses the
      // shifted accumulation).
      data[r * cols + c] = 1e8 * c + common * (c + 1) + n01(rng) * 0.5 * c;
    }
  }
  CorrelationAccumulator whole(cols),
      parts[3] = {CorrelationAccumulator(cols), CorrelationAccumulator(cols),
                  CorrelationAccumulator(cols)};
  for (int r = 0; r < rows; ++r) {
    whole.Add(&data[r * cols]);
    parts[(r < 100) ? 0 : (r < 3000 ? 1 : 2)].Add(&data[r * cols]);
  }
  CorrelationAccumulator merged(cols);
  merged.Merge(parts[2]);
  merged.Merge(parts[0]);
  merged.Merge(parts[1]);
  EXPECT_EQ(merged.count(), static_cast<uint64_t>(rows));

  // Two-pass reference in long double.
  std::vector<long double> mean(cols, 0);
  for (int r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) mean[c] += data[r * cols + c];
  for (auto& m : mean) m /= rows;
  std::vector<long double> s(cols * cols, 0);
  for (int r = 0; r < rows; ++r)
    for (size_t i = 0; i < cols; ++i)
      for (size_t j = 0; j < cols; ++j)
        s[i * cols + j] += (data[r * cols + i] - mean[i]) * (data[r * cols + j] - mean[j]);

  const auto a = whole.Pearson();
  const auto b = merged.Pearson();
  for (size_t i = 0; i < cols; ++i) {
    for (size_t j = 0; j < cols; ++j) {
      const double expected =
          i == j
              ? 1.0
              : static_cast<double>(s[i * cols + j] / std::sqrt(s[i * cols + i] * s[j * cols + j]));
      EXPECT_NEAR(a[i * cols + j], expected, 1e-9) << i << "," << j;
      EXPECT_NEAR(b[i * cols + j], expected, 1e-9) << i << "," << j;
    }
  }
  EXPECT_GT(a[0 * cols + 1], 0.5);  // the shared factor shows through
}

}  // namespace
}  // namespace tarn::stats
