#include "stats/moments.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tarn::stats {
namespace {

Moments Of(const std::vector<double>& xs) {
  Moments m;
  for (double x : xs) m.Add(x);
  return m;
}

void ExpectRelNear(double actual, double expected, double rel) {
  EXPECT_NEAR(actual, expected, rel * std::max(1.0, std::fabs(expected)))
      << "actual " << actual << " expected " << expected;
}

// {2,4,4,4,5,5,7,9}: mean 5, deviations -3,-1,-1,-1,0,0,2,4.
// Σd² = 32, Σd³ = -27-1-1-1+8+64 = 42, Σd⁴ = 81+1+1+1+16+256 = 356.
TEST(MomentsTest, HandComputedSample) {
  const Moments m = Of({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(m.count, 8u);
  EXPECT_EQ(m.min, 2);
  EXPECT_EQ(m.max, 9);
  EXPECT_DOUBLE_EQ(m.Mean(), 5.0);
  EXPECT_DOUBLE_EQ(m.m2, 32.0);
  EXPECT_DOUBLE_EQ(m.m3, 42.0);
  EXPECT_DOUBLE_EQ(m.m4, 356.0);
  EXPECT_DOUBLE_EQ(m.SampleVariance(), 32.0 / 7.0);
  EXPECT_DOUBLE_EQ(m.SampleStdDev(), std::sqrt(32.0 / 7.0));
  // Shifu: population σ² = (Σd² + 1e-6)/n; skewness = (Σd³/n)/σ³ = 5.25/8 for
  // σ² = 4; kurtosis = (Σd⁴/n)/σ⁴ = 44.5/16 = 2.78125 (not excess).
  const double var = (32.0 + 1e-6) / 8.0;
  EXPECT_DOUBLE_EQ(m.Skewness(), (42.0 / 8.0) / std::pow(var, 1.5));
  EXPECT_DOUBLE_EQ(m.Kurtosis(), (356.0 / 8.0) / (var * var));
  EXPECT_NEAR(m.Skewness(), 0.65625, 1e-6);
  EXPECT_NEAR(m.Kurtosis(), 2.78125, 1e-6);
}

TEST(MomentsTest, EmptyAndSingle) {
  Moments m;
  EXPECT_EQ(m.count, 0u);
  EXPECT_EQ(m.Mean(), 0.0);
  EXPECT_EQ(m.SampleStdDev(), 0.0);
  EXPECT_EQ(m.Skewness(), 0.0);
  EXPECT_EQ(m.Kurtosis(), 0.0);
  EXPECT_EQ(m.WeightedMean(), 0.0);
  m.Add(3.5);
  EXPECT_EQ(m.Mean(), 3.5);
  EXPECT_EQ(m.SampleStdDev(), 0.0);
  EXPECT_EQ(m.min, 3.5);
  EXPECT_EQ(m.max, 3.5);
}

TEST(MomentsTest, ConstantColumnHasZeroShape) {
  Moments m;
  for (int i = 0; i < 1000; ++i) m.Add(0.1);
  EXPECT_DOUBLE_EQ(m.Mean(), 0.1);
  EXPECT_EQ(m.SampleStdDev(), 0.0);
  EXPECT_EQ(m.Skewness(), 0.0);
  EXPECT_EQ(m.Kurtosis(), 0.0);
}

TEST(MomentsTest, WeightsOnlyFeedWeightedSums) {
  Moments m;
  m.Add(1.0, 3.0);
  m.Add(5.0, 1.0);
  EXPECT_EQ(m.count, 2u);
  EXPECT_DOUBLE_EQ(m.Mean(), 3.0);  // unweighted
  EXPECT_DOUBLE_EQ(m.weight_sum, 4.0);
  EXPECT_DOUBLE_EQ(m.WeightedMean(), 2.0);  // (3·1 + 1·5)/4
}

TEST(MomentsTest, StableWithLargeOffset) {
  // Shifu's Σx² − (Σx)²/n would lose all digits here; Welford keeps them.
  // Deviations -6,-3,3,6 from 1e9+10: Σd² = 90, sample variance 30.
  const Moments m = Of({1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16});
  EXPECT_DOUBLE_EQ(m.Mean(), 1e9 + 10);
  EXPECT_NEAR(m.SampleVariance(), 30.0, 1e-6);
  EXPECT_NEAR(m.m3, 0.0, 1e-3);
}

TEST(MomentsTest, MergeOfSplitsEqualsOnePass) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(3.0, 1.0);
  std::vector<double> xs(10007);
  for (double& x : xs) x = 1e6 + dist(rng);

  const Moments whole = Of(xs);
  // Reference: two-pass central moments in long double.
  long double mean = 0;
  for (double x : xs) mean += x;
  mean /= xs.size();
  long double s2 = 0, s3 = 0, s4 = 0;
  for (double x : xs) {
    const long double d = x - mean;
    s2 += d * d;
    s3 += d * d * d;
    s4 += d * d * d * d;
  }
  ExpectRelNear(whole.Mean(), static_cast<double>(mean), 1e-12);
  ExpectRelNear(whole.m2, static_cast<double>(s2), 1e-9);
  ExpectRelNear(whole.m3, static_cast<double>(s3), 1e-9);
  ExpectRelNear(whole.m4, static_cast<double>(s4), 1e-9);

  // Uneven splits, merged in a different order.
  for (size_t parts : {2u, 3u, 17u}) {
    std::vector<Moments> pieces(parts);
    for (size_t i = 0; i < xs.size(); ++i) pieces[(i * i) % parts].Add(xs[i], 0.5);
    Moments merged;
    for (size_t p = parts; p-- > 0;) merged.Merge(pieces[p]);
    EXPECT_EQ(merged.count, whole.count);
    EXPECT_EQ(merged.min, whole.min);
    EXPECT_EQ(merged.max, whole.max);
    ExpectRelNear(merged.Mean(), whole.Mean(), 1e-12);
    ExpectRelNear(merged.m2, whole.m2, 1e-9);
    ExpectRelNear(merged.m3, whole.m3, 1e-9);
    ExpectRelNear(merged.m4, whole.m4, 1e-9);
    ExpectRelNear(merged.SampleStdDev(), whole.SampleStdDev(), 1e-9);
    ExpectRelNear(merged.Skewness(), whole.Skewness(), 1e-9);
    ExpectRelNear(merged.Kurtosis(), whole.Kurtosis(), 1e-9);
    ExpectRelNear(merged.weight_sum, 0.5 * xs.size(), 1e-12);
  }
}

TEST(MomentsTest, MergeWithEmptyIsIdentity) {
  const Moments a = Of({1, 2, 3});
  Moments b = a;
  b.Merge(Moments{});
  EXPECT_EQ(b.count, 3u);
  EXPECT_DOUBLE_EQ(b.m2, a.m2);
  Moments c;
  c.Merge(a);
  EXPECT_DOUBLE_EQ(c.Mean(), 2.0);
  EXPECT_DOUBLE_EQ(c.m2, 2.0);
}

TEST(MomentsTest, AddRepeatedMatchesRepeatedAdds) {
  Moments repeated = Of({1.0, 10.0});
  repeated.AddRepeated(4.0, 5, 5.0);
  repeated.AddRepeated(7.0, 0, 0.0);  // no-op
  const Moments one_by_one = Of({1.0, 10.0, 4, 4, 4, 4, 4});
  EXPECT_EQ(repeated.count, 7u);
  EXPECT_DOUBLE_EQ(repeated.Mean(), one_by_one.Mean());
  EXPECT_NEAR(repeated.m2, one_by_one.m2, 1e-12);
  EXPECT_NEAR(repeated.m3, one_by_one.m3, 1e-12);
  EXPECT_NEAR(repeated.m4, one_by_one.m4, 1e-9);
  EXPECT_DOUBLE_EQ(repeated.weight_sum, 7.0);
  EXPECT_EQ(repeated.max, 10.0);
}

// A right-skewed sample has positive skewness; a symmetric one ~0; a normal
// sample's (non-excess) kurtosis is ~3.
TEST(MomentsTest, ShapeOfKnownDistributions) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal(5.0, 2.0);
  std::exponential_distribution<double> expo(1.0);
  Moments n, e;
  for (int i = 0; i < 200000; ++i) {
    n.Add(normal(rng));
    e.Add(expo(rng));
  }
  EXPECT_NEAR(n.Skewness(), 0.0, 0.03);
  EXPECT_NEAR(n.Kurtosis(), 3.0, 0.06);
  EXPECT_NEAR(e.Skewness(), 2.0, 0.1);  // exponential: skewness 2, kurtosis 9
  EXPECT_NEAR(e.Kurtosis(), 9.0, 0.8);
}

}  // namespace
}  // namespace tarn::stats
