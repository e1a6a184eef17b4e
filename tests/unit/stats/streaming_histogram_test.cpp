#include "stats/streaming_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "stats/binning.h"

namespace tarn::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void ExpectValidCuts(const std::vector<double>& cuts, int num_bins) {
  ASSERT_FALSE(cuts.empty());
  EXPECT_EQ(cuts[0], -kInf);
  EXPECT_LE(cuts.size(), static_cast<size_t>(std::max(1, num_bins)));
  for (size_t i = 1; i < cuts.size(); ++i) {
    EXPECT_TRUE(std::isfinite(cuts[i])) << i;
    EXPECT_LT(cuts[i - 1], cuts[i]) << i;
  }
}

// Fraction of `xs` strictly below each cut.
std::vector<double> FractionsBelow(std::vector<double> xs, const std::vector<double>& cuts) {
  std::sort(xs.begin(), xs.end());
  std::vector<double> out;
  for (size_t i = 1; i < cuts.size(); ++i) {
    const auto below = std::lower_bound(xs.begin(), xs.end(), cuts[i]) - xs.begin();
    out.push_back(static_cast<double>(below) / xs.size());
  }
  return out;
}

TEST(StreamingHistogramTest, EmptyAndTrivial) {
  StreamingHistogram h(100);
  EXPECT_EQ(h.TotalWeight(), 0.0);
  EXPECT_EQ(h.Boundaries(10), (std::vector<double>{-kInf}));
  EXPECT_TRUE(std::isnan(h.Quantile(0.5)));
  h.Add(std::nan(""));
  h.Add(kInf);
  h.Add(1.0, 0.0);
  h.Add(1.0, -2.0);
  EXPECT_EQ(h.TotalWeight(), 0.0);
  EXPECT_TRUE(h.Centroids().empty());
  h.Add(4.0);
  EXPECT_EQ(h.Boundaries(10), (std::vector<double>{-kInf}));  // one value: one bin
  EXPECT_EQ(h.Boundaries(1), (std::vector<double>{-kInf}));
  EXPECT_EQ(h.Quantile(0.5), 4.0);
}

TEST(StreamingHistogramTest, DuplicatesShareOneCentroid) {
  StreamingHistogram h(100);
  for (int i = 0; i < 10000; ++i) h.Add(5.0);
  for (int i = 0; i < 5000; ++i) h.Add(7.0, 2.0);
  const auto& c = h.Centroids();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].value, 5.0);
  EXPECT_EQ(c[0].weight, 10000.0);
  EXPECT_EQ(c[1].value, 7.0);
  EXPECT_EQ(c[1].weight, 10000.0);
  EXPECT_TRUE(h.IsExact());
  EXPECT_EQ(h.TotalWeight(), 20000.0);
  EXPECT_EQ(h.Min(), 5.0);
  EXPECT_EQ(h.Max(), 7.0);
}

TEST(StreamingHistogramTest, BinaryColumnSplitsAtOne) {
  StreamingHistogram h(1000);
  for (int i = 0; i < 1000; ++i) h.Add(i % 3 == 0 ? 1.0 : 0.0);
  EXPECT_EQ(h.Boundaries(10), (std::vector<double>{-kInf, 1.0}));
}

TEST(StreamingHistogramTest, FewDistinctValuesGetOwnBins) {
  StreamingHistogram h(1000);
  for (int i = 0; i < 30; ++i) h.Add(10.0);
  h.Add(3.5);
  for (int i = 0; i < 7; ++i) h.Add(7.0);
  EXPECT_EQ(h.Boundaries(10), (std::vector<double>{-kInf, 7.0, 10.0}));
  EXPECT_EQ(h.Boundaries(3), (std::vector<double>{-kInf, 7.0, 10.0}));
}

// Twelve months, 100 rows each, 10 bins: N/B = 120. A cut at month m leaves
// 100·(m−1) rows below it; each target j·120 takes the closest:
// 120→2, 240→3, 360→5 (400 beats 300), 480→6, 600→7, 720→8, 840→9,
// 960→11 (1000 beats 900), 1080→12.
TEST(StreamingHistogramTest, MonthsCutAtDataValues) {
  StreamingHistogram h(1000);
  std::vector<double> xs;
  for (int r = 0; r < 100; ++r)
    for (int m = 1; m <= 12; ++m) xs.push_back(m);
  std::shuffle(xs.begin(), xs.end(), std::mt19937(1));
  for (double x : xs) h.Add(x);
  const auto cuts = h.Boundaries(10);
  EXPECT_EQ(cuts, (std::vector<double>{-kInf, 2, 3, 5, 6, 7, 8, 9, 11, 12}));
  // Every bin holds data.
  std::vector<int> per_bin(cuts.size(), 0);
  for (double x : xs) ++per_bin[FindNumericBin(cuts, x)];
  for (int count : per_bin) EXPECT_GT(count, 0);
}

// Month 1 holds 600 rows, months 2..12 40 each (N = 1040), 4 bins, N/B = 260.
// Targets 260 and 520 both fall inside month 1: the nearest cut is 2 (600
// below), deduplicated. Target 780: cut at 6 leaves 760 below, at 7 800; the
// tie goes to the lower cut. So bins {1}, {2..5}, {6..12}.
TEST(StreamingHistogramTest, SkewedMonthsCollapseDuplicateCuts) {
  StreamingHistogram h(1000);
  for (int i = 0; i < 600; ++i) h.Add(1);
  for (int m = 2; m <= 12; ++m)
    for (int i = 0; i < 40; ++i) h.Add(m);
  EXPECT_EQ(h.Boundaries(4), (std::vector<double>{-kInf, 2, 6}));
}

TEST(StreamingHistogramTest, UniformGivesEvenCuts) {
  std::vector<double> xs(10000);
  for (int i = 0; i < 10000; ++i) xs[i] = i;
  std::shuffle(xs.begin(), xs.end(), std::mt19937(2));
  StreamingHistogram h(1000);  // Shifu: 10 bins × 100
  for (double x : xs) h.Add(x);
  EXPECT_FALSE(h.IsExact());
  EXPECT_EQ(h.Centroids().size(), 1000u);
  EXPECT_EQ(h.TotalWeight(), 10000.0);
  const auto cuts = h.Boundaries(10);
  ExpectValidCuts(cuts, 10);
  ASSERT_EQ(cuts.size(), 10u);
  for (int j = 1; j < 10; ++j) EXPECT_NEAR(cuts[j], 1000.0 * j, 25.0) << j;
  EXPECT_NEAR(h.Quantile(0.5), 5000.0, 25.0);
  EXPECT_NEAR(h.Quantile(0.25), 2500.0, 25.0);
  EXPECT_EQ(h.Quantile(0.0), 0.0);
  EXPECT_EQ(h.Quantile(1.0), 9999.0);
}

TEST(StreamingHistogramTest, MergeOfHalvesMatchesSinglePass) {
  StreamingHistogram single(1000), low(1000), high(1000);
  std::mt19937 rng(5);
  std::normal_distribution<double> dist(50, 10);
  for (int i = 0; i < 100000; ++i) {
    const double x = dist(rng);
    single.Add(x);
    (i < 50000 ? low : high).Add(x);
  }
  StreamingHistogram merged = low;
  merged.Merge(high);
  EXPECT_EQ(merged.TotalWeight(), single.TotalWeight());
  EXPECT_LE(merged.Centroids().size(), 1000u);
  EXPECT_EQ(merged.Min(), single.Min());
  EXPECT_EQ(merged.Max(), single.Max());
  const auto a = single.Boundaries(10);
  const auto b = merged.Boundaries(10);
  ASSERT_EQ(a.size(), 10u);
  ASSERT_EQ(b.size(), 10u);
  for (size_t j = 1; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 0.1) << j;  // σ = 10
  // Both close to the normal deciles 50 + 10·z_j.
  const double z[] = {-1.2816, -0.8416, -0.5244, -0.2533, 0, 0.2533, 0.5244, 0.8416, 1.2816};
  for (int j = 1; j < 10; ++j) EXPECT_NEAR(b[j], 50 + 10 * z[j - 1], 0.3) << j;
}

TEST(StreamingHistogramTest, SkewedDataGetsEqualPopulations) {
  std::vector<double> xs(200000);
  std::mt19937 rng(9);
  std::exponential_distribution<double> dist(1.0);
  for (double& x : xs) x = std::exp(3 * dist(rng));  // heavy right tail
  StreamingHistogram h(1000);
  for (double x : xs) h.Add(x);
  const auto cuts = h.Boundaries(10);
  ExpectValidCuts(cuts, 10);
  ASSERT_EQ(cuts.size(), 10u);
  const auto fractions = FractionsBelow(xs, cuts);
  for (size_t j = 0; j < fractions.size(); ++j) EXPECT_NEAR(fractions[j], 0.1 * (j + 1), 0.01);
}

// Half the rows are 0 (a spike), half uniform on (0, 1). The spike's centroid
// pair absorbs targets 0.1..0.5 of N: one cut just above 0, then the
// uniform half splits evenly, as Shifu's one-cut-per-centroid-pair rule does.
TEST(StreamingHistogramTest, SpikeKeepsItsOwnBin) {
  std::vector<double> xs;
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < 50000; ++i) {
    xs.push_back(0.0);
    xs.push_back(u(rng) + 1e-9);
  }
  StreamingHistogram h(1000);
  for (double x : xs) h.Add(x);
  const auto cuts = h.Boundaries(10);
  ExpectValidCuts(cuts, 10);
  ASSERT_GE(cuts.size(), 3u);
  EXPECT_GT(cuts[1], 0.0);
  EXPECT_LT(cuts[1], 0.01);
  const auto fractions = FractionsBelow(xs, cuts);
  EXPECT_NEAR(fractions[0], 0.5, 0.005);
  EXPECT_NEAR(fractions.back(), 0.9, 0.01);
}

TEST(StreamingHistogramTest, WeightsCountAsRepeats) {
  StreamingHistogram weighted(1000), repeated(1000);
  for (int m = 1; m <= 12; ++m) {
    weighted.Add(m, m);
    for (int i = 0; i < m; ++i) repeated.Add(m);
  }
  EXPECT_EQ(weighted.TotalWeight(), 78.0);
  EXPECT_EQ(weighted.Boundaries(5), repeated.Boundaries(5));
  EXPECT_EQ(weighted.Quantile(0.5), repeated.Quantile(0.5));
  // Σ_{m≤8} m = 36 < 39 ≤ 45 = Σ_{m≤9} m: the exact median is 9.
  EXPECT_EQ(weighted.Quantile(0.5), 9.0);
}

TEST(StreamingHistogramTest, ExactQuantiles) {
  StreamingHistogram h(1000);
  for (int i = 101; i >= 1; --i) h.Add(i);
  EXPECT_EQ(h.Quantile(0.5), 51.0);
  EXPECT_EQ(h.Quantile(0.25), 26.0);  // first value with ≥ 25.25 at or below
  EXPECT_EQ(h.Quantile(0.0), 1.0);
  EXPECT_EQ(h.Quantile(1.0), 101.0);
  EXPECT_EQ(h.Quantile(7.0), 101.0);  // clamped
}

TEST(StreamingHistogramTest, MergeKeepsExactnessOnlyWhenBothExact) {
  StreamingHistogram a(16), b(16), c(16);
  for (int i = 0; i < 10; ++i) a.Add(i);
  for (int i = 5; i < 15; ++i) b.Add(i);
  a.Merge(b);
  EXPECT_TRUE(a.IsExact());  // 15 distinct values fit in 16
  EXPECT_EQ(a.Centroids().size(), 15u);
  EXPECT_EQ(a.TotalWeight(), 20.0);
  for (int i = 0; i < 100; ++i) c.Add(i * 0.5);
  EXPECT_FALSE(c.IsExact());
  a.Merge(c);
  EXPECT_FALSE(a.IsExact());
  EXPECT_LE(a.Centroids().size(), 16u);
}

// Shifu's rule merges the closest neighbours first: with room for 3
// centroids, {0, 1, 1.1, 10} loses the 1–1.1 gap (to their mean 1.05).
TEST(StreamingHistogramTest, ClosestPairRuleMergesSmallestGap) {
  StreamingHistogram h(3, StreamingHistogram::MergeRule::kClosestPair);
  for (double x : {10.0, 1.1, 0.0, 1.0}) h.Add(x);
  const auto& c = h.Centroids();
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].value, 0.0);
  EXPECT_DOUBLE_EQ(c[1].value, 1.05);
  EXPECT_EQ(c[1].weight, 2.0);
  EXPECT_EQ(c[2].value, 10.0);
}

// The equal-mass rule folds by weight: 0 and 1 weigh 100 each, 5 and 9 one
// each (N = 202, 3 slices of 67.3). Cumulative midpoints 50, 150, 200.5,
// 201.5 fall in slices 0, 2, 2, 2: the two light outliers fold into 1
// (value (100·1 + 5 + 9)/102), while the closest-pair rule would have merged
// the two heavy values 0 and 1 into a centroid at 0.5 that is no data value.
TEST(StreamingHistogramTest, EqualMassRuleKeepsHeavyValuesApart) {
  StreamingHistogram h(3);
  EXPECT_EQ(h.merge_rule(), StreamingHistogram::MergeRule::kEqualMass);
  h.Add(0.0, 100);
  h.Add(1.0, 100);
  h.Add(5.0);
  h.Add(9.0);
  const auto& c = h.Centroids();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].value, 0.0);
  EXPECT_EQ(c[0].weight, 100.0);
  EXPECT_DOUBLE_EQ(c[1].value, 114.0 / 102.0);
  EXPECT_EQ(c[1].weight, 102.0);
  EXPECT_FALSE(h.IsExact());

  StreamingHistogram shifu(3, StreamingHistogram::MergeRule::kClosestPair);
  shifu.Add(0.0, 100);
  shifu.Add(1.0, 100);
  shifu.Add(5.0);
  shifu.Add(9.0);
  ASSERT_EQ(shifu.Centroids().size(), 3u);
  EXPECT_EQ(shifu.Centroids()[0].value, 0.5);
}

// A value holding 30% of the rows keeps an exact centroid of its own through
// every flush, even with far more distinct values than centroids.
TEST(StreamingHistogramTest, SpikeKeepsExactCentroid) {
  StreamingHistogram h(100);
  std::mt19937 rng(8);
  std::uniform_int_distribution<int> v(1, 50000);
  double zeros = 0;
  for (int i = 0; i < 100000; ++i) {
    if (i % 10 < 3) {
      h.Add(0.0);
      ++zeros;
    } else {
      h.Add(v(rng));
    }
  }
  EXPECT_FALSE(h.IsExact());
  EXPECT_LE(h.Centroids().size(), 100u);
  const auto& c = h.Centroids();
  EXPECT_EQ(c[0].value, 0.0);
  EXPECT_EQ(c[0].weight, zeros);
  // The rest hold roughly N/100 each.
  for (size_t i = 1; i < c.size(); ++i) EXPECT_LT(c[i].weight, 2500.0);
}

// Shifu's closest-pair rule reproduces its results on well-behaved data...
TEST(StreamingHistogramTest, ClosestPairRuleOnUniformData) {
  StreamingHistogram h(1000, StreamingHistogram::MergeRule::kClosestPair);
  std::vector<double> xs(20000);
  for (int i = 0; i < 20000; ++i) xs[i] = i * 0.5;
  std::shuffle(xs.begin(), xs.end(), std::mt19937(3));
  for (double x : xs) h.Add(x);
  EXPECT_EQ(h.Centroids().size(), 1000u);
  const auto cuts = h.Boundaries(10);
  ASSERT_EQ(cuts.size(), 10u);
  for (int j = 1; j < 10; ++j) EXPECT_NEAR(cuts[j], 1000.0 * j, 25.0) << j;
}

// ...but crushes the bulk of heavy-tailed data into a few centroids, which is
// why it is not the default: here it cannot produce the 10 bins that the
// equal-mass rule does.
TEST(StreamingHistogramTest, ClosestPairRuleDegradesOnHeavyTails) {
  std::mt19937 rng(9);
  std::exponential_distribution<double> dist(1.0);
  StreamingHistogram shifu(1000, StreamingHistogram::MergeRule::kClosestPair);
  StreamingHistogram tarn(1000);
  for (int i = 0; i < 200000; ++i) {
    const double x = std::exp(3 * dist(rng));
    shifu.Add(x);
    tarn.Add(x);
  }
  EXPECT_LT(shifu.Boundaries(10).size(), 6u);
  EXPECT_EQ(tarn.Boundaries(10).size(), 10u);
}

// Many distinct integers (more than the centroid budget) and assorted
// shapes: cuts stay finite, strictly increasing and within budget.
TEST(StreamingHistogramTest, CutsAreAlwaysValid) {
  std::mt19937 rng(6);
  std::geometric_distribution<int> geo(0.01);
  std::uniform_int_distribution<int> small(0, 3);
  for (int trial = 0; trial < 6; ++trial) {
    StreamingHistogram h(50 + trial * 200);
    for (int i = 0; i < 20000; ++i) {
      switch (trial % 3) {
        case 0:
          h.Add(geo(rng));
          break;
        case 1:
          h.Add(small(rng) == 0 ? 42.0 : geo(rng) * 0.001, 1 + small(rng));
          break;
        default:
          h.Add(i < 19990 ? 1.0 : 1e12 + i);
          break;
      }
    }
    for (int bins : {2, 5, 10, 37, 100}) ExpectValidCuts(h.Boundaries(bins), bins);
    const double q1 = h.Quantile(0.1), q9 = h.Quantile(0.9);
    EXPECT_LE(q1, q9);
    EXPECT_GE(q1, h.Min());
    EXPECT_LE(q9, h.Max());
  }
}

}  // namespace
}  // namespace tarn::stats
