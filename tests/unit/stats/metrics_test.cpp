#include "stats/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace tarn::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// neg = [40, 40, 20] (N = 100), pos = [5, 15, 30] (P = 50):
//   n_i/N = .4 .4 .2, p_i/P = .1 .3 .6
//   binWoe = ln(.4/.1) = 1.386294, ln(.4/.3) = 0.287682, ln(.2/.6) = -1.098612
//   IV = .3·1.386294 + .1·0.287682 + (-.4)·(-1.098612) = 0.884101
//   cumN .4 .8 1, cumP .1 .4 1 → KS = 100·.4 = 40
//   woe = ln(100/50) = 0.693147
TEST(MetricsTest, HandComputedThreeBins) {
  const BinMetrics m = ComputeBinMetrics({40, 40, 20}, {5, 15, 30});
  ASSERT_EQ(m.bin_woe.size(), 3u);
  EXPECT_NEAR(m.bin_woe[0], std::log(4.0), 1e-9);
  EXPECT_NEAR(m.bin_woe[1], std::log(4.0 / 3.0), 1e-9);
  EXPECT_NEAR(m.bin_woe[2], std::log(1.0 / 3.0), 1e-9);
  EXPECT_NEAR(m.iv, 0.3 * std::log(4.0) + 0.1 * std::log(4.0 / 3.0) + 0.4 * std::log(3.0), 1e-9);
  EXPECT_NEAR(m.iv, 0.884101, 1e-6);
  EXPECT_NEAR(m.ks, 40.0, 1e-9);
  EXPECT_NEAR(m.woe, std::log(2.0), 1e-9);
}

// The missing bin is one more entry: neg [40, 40, 20, 0], pos [5, 15, 20, 10]
// (P = 50). p = .1 .3 .4 .2. cumN .4 .8 1 1, cumP .1 .4 .8 1: KS = 40.
// The empty-negative missing bin: ln((0 + 1e-10)/(.2 + 1e-10)) ≈ -21.4164.
TEST(MetricsTest, MissingBinIncludedAndEpsKeepsLogFinite) {
  const BinMetrics m = ComputeBinMetrics({40, 40, 20, 0}, {5, 15, 20, 10});
  ASSERT_EQ(m.bin_woe.size(), 4u);
  EXPECT_NEAR(m.bin_woe[2], std::log(0.2 / 0.4), 1e-9);
  EXPECT_NEAR(m.bin_woe[3], std::log(1e-10 / (0.2 + 1e-10)), 1e-9);
  EXPECT_NEAR(m.bin_woe[3], -21.416413, 1e-5);
  EXPECT_NEAR(m.ks, 40.0, 1e-9);
  const double iv = 0.3 * std::log(4.0) + 0.1 * std::log(4.0 / 3.0) + (0.2 - 0.4) * std::log(0.5) +
                    (0 - 0.2) * m.bin_woe[3];
  EXPECT_NEAR(m.iv, iv, 1e-9);
}

TEST(MetricsTest, OneClassGivesZeros) {
  for (const auto& [neg, pos] :
       {std::pair<std::vector<double>, std::vector<double>>{{3, 4}, {0, 0}},
        {{0, 0}, {1, 2}},
        {{}, {}}}) {
    const BinMetrics m = ComputeBinMetrics(neg, pos);
    EXPECT_EQ(m.ks, 0.0);
    EXPECT_EQ(m.iv, 0.0);
    EXPECT_EQ(m.woe, 0.0);
    EXPECT_EQ(m.bin_woe, std::vector<double>(neg.size(), 0.0));
  }
}

TEST(MetricsTest, IdenticalDistributionsCarryNoInformation) {
  const BinMetrics m = ComputeBinMetrics({10, 20, 30}, {1, 2, 3});
  EXPECT_NEAR(m.ks, 0.0, 1e-9);
  EXPECT_NEAR(m.iv, 0.0, 1e-12);
  for (double w : m.bin_woe) EXPECT_NEAR(w, 0.0, 1e-9);
  EXPECT_NEAR(m.woe, std::log(10.0), 1e-9);
}

TEST(MetricsTest, PositiveRates) {
  EXPECT_EQ(PositiveRates({40, 40, 0, 20}, {5, 15, 0, 30}),
            (std::vector<double>{5.0 / 45, 15.0 / 55, 0.0, 0.6}));
  EXPECT_TRUE(PositiveRates({}, {}).empty());
}

// Bins [min=0, 10) 10 rows, [10, 20) 20 rows, [20, max=40] 10 rows; total 40.
TEST(MetricsTest, PercentileFromBinsInterpolates) {
  const std::vector<double> b{-kInf, 10, 20};
  const std::vector<double> c{10, 20, 10};
  EXPECT_DOUBLE_EQ(PercentileFromBins(b, c, 0, 40, 0.0), 0.0);    // min
  EXPECT_DOUBLE_EQ(PercentileFromBins(b, c, 0, 40, 0.125), 5.0);  // 5 of 10 in bin 0
  EXPECT_DOUBLE_EQ(PercentileFromBins(b, c, 0, 40, 0.25), 10.0);  // start of bin 1
  EXPECT_DOUBLE_EQ(PercentileFromBins(b, c, 0, 40, 0.5), 15.0);   // 10 of 20 in bin 1
  EXPECT_DOUBLE_EQ(PercentileFromBins(b, c, 0, 40, 0.9), 32.0);   // 6 of 10 in [20, 40]
  EXPECT_DOUBLE_EQ(PercentileFromBins(b, c, 0, 40, 1.0), 40.0);   // max
  EXPECT_DOUBLE_EQ(PercentileFromBins(b, c, 0, 40, 2.0), 40.0);   // clamped
}

TEST(MetricsTest, PercentileFromBinsEdgeCases) {
  const std::vector<double> b{-kInf, 10, 20};
  // Empty bins are skipped: everything sits in [10, 20).
  EXPECT_DOUBLE_EQ(PercentileFromBins(b, {0, 8, 0}, 12, 18, 0.0), 12.0);
  EXPECT_DOUBLE_EQ(PercentileFromBins(b, {0, 8, 0}, 12, 18, 0.5), 15.0);
  // No rows: min.
  EXPECT_DOUBLE_EQ(PercentileFromBins(b, {0, 0, 0}, 3, 4, 0.5), 3.0);
  // One bin spanning [min, max].
  EXPECT_DOUBLE_EQ(PercentileFromBins({-kInf}, {4}, 2, 6, 0.75), 5.0);
}

}  // namespace
}  // namespace tarn::stats
