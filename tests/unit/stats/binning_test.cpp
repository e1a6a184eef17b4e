#include "stats/binning.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace tarn::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(BinningTest, EqualIntervalFollowsShifu) {
  // w = (10 − 0)/(5 − 1) = 2.5; cuts at 0 + 1.25 + k·2.5.
  EXPECT_EQ(EqualIntervalBoundaries(0, 10, 5),
            (std::vector<double>{-kInf, 1.25, 3.75, 6.25, 8.75}));
  // Two bins: one cut at the midpoint.
  EXPECT_EQ(EqualIntervalBoundaries(-4, 6, 2), (std::vector<double>{-kInf, 1.0}));
  // Shifu's default 10 bins over 1..10: w = 1, cuts 1.5 .. 9.5.
  const auto ten = EqualIntervalBoundaries(1, 10, 10);
  ASSERT_EQ(ten.size(), 10u);
  for (int k = 0; k < 9; ++k) EXPECT_DOUBLE_EQ(ten[k + 1], 1.5 + k);
}

TEST(BinningTest, EqualIntervalDegenerateInputs) {
  const std::vector<double> one_bin{-kInf};
  EXPECT_EQ(EqualIntervalBoundaries(3, 3, 10), one_bin);  // constant column
  EXPECT_EQ(EqualIntervalBoundaries(5, 1, 10), one_bin);  // no data (max < min)
  EXPECT_EQ(EqualIntervalBoundaries(0, 1, 1), one_bin);
  EXPECT_EQ(EqualIntervalBoundaries(0, 1, 0), one_bin);
  EXPECT_EQ(EqualIntervalBoundaries(0, 1e101, 4), one_bin);  // Shifu ignores |x| >= 1e100
  EXPECT_EQ(EqualIntervalBoundaries(-kInf, 1, 4), one_bin);
  // A range so narrow that rounding collapses cuts: still strictly increasing.
  const double x = 1.0;
  const auto tiny = EqualIntervalBoundaries(x, std::nextafter(x, 2.0), 50);
  for (size_t i = 1; i < tiny.size(); ++i) EXPECT_LT(tiny[i - 1], tiny[i]);
}

TEST(BinningTest, FindNumericBinHalfOpenIntervals) {
  const std::vector<double> b{-kInf, 1, 2, 3};
  EXPECT_EQ(FindNumericBin(b, -5), 0);
  EXPECT_EQ(FindNumericBin(b, -kInf), 0);
  EXPECT_EQ(FindNumericBin(b, 0.999), 0);
  EXPECT_EQ(FindNumericBin(b, 1), 1);  // a value on a cut goes up
  EXPECT_EQ(FindNumericBin(b, 1.5), 1);
  EXPECT_EQ(FindNumericBin(b, 2), 2);
  EXPECT_EQ(FindNumericBin(b, 3), 3);
  EXPECT_EQ(FindNumericBin(b, 1e300), 3);
  EXPECT_EQ(FindNumericBin(b, kInf), 3);
  EXPECT_EQ(FindNumericBin(b, std::nan("")), -1);
  EXPECT_EQ(FindNumericBin({-kInf}, 42), 0);
  EXPECT_EQ(FindNumericBin({5.0, 6.0}, 1.0), 0);  // below b[0] clamps to bin 0
}

TEST(BinningTest, FindNumericBinMatchesLinearScan) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-100, 100);
  for (int size = 1; size <= 33; ++size) {
    std::vector<double> b{-kInf};
    for (int i = 1; i < size; ++i)
      b.push_back(b.size() == 1 ? -90.0 : b.back() + 0.01 + std::fabs(u(rng)) / 20);
    for (int t = 0; t < 200; ++t) {
      const double x = (t % 7 == 0 && size > 1) ? b[1 + t % (size - 1)] : u(rng);
      int expected = 0;
      for (int i = 0; i < size; ++i)
        if (b[i] <= x) expected = i;
      ASSERT_EQ(FindNumericBin(b, x), expected) << "size " << size << " x " << x;
    }
  }
}

TEST(BinningTest, ParseBinningMethodNames) {
  EXPECT_EQ(*ParseBinningMethod("EqualPositive"), BinningMethod::kEqualPositive);
  EXPECT_EQ(*ParseBinningMethod("equalnegative"), BinningMethod::kEqualNegative);
  EXPECT_EQ(*ParseBinningMethod("EQUALTOTAL"), BinningMethod::kEqualTotal);
  EXPECT_EQ(*ParseBinningMethod("EqualInterval"), BinningMethod::kEqualInterval);
  EXPECT_EQ(*ParseBinningMethod("WeightEqualPositive"), BinningMethod::kWeightEqualPositive);
  EXPECT_EQ(*ParseBinningMethod("weightEqualNegative"), BinningMethod::kWeightEqualNegative);
  EXPECT_EQ(*ParseBinningMethod("WeightEqualTotal"), BinningMethod::kWeightEqualTotal);
  EXPECT_EQ(*ParseBinningMethod("WeightEqualInterval"), BinningMethod::kWeightEqualInterval);
  for (auto m : {BinningMethod::kEqualTotal, BinningMethod::kWeightEqualNegative}) {
    EXPECT_EQ(*ParseBinningMethod(BinningMethodName(m)), m);
  }
  auto bad = ParseBinningMethod("EqualPopulation");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("EqualPopulation"), std::string::npos);
  EXPECT_NE(bad.status().message().find("EqualPositive"), std::string::npos);
  EXPECT_NE(bad.status().message().find("WeightEqualInterval"), std::string::npos);
  EXPECT_FALSE(ParseBinningMethod("").ok());
  EXPECT_FALSE(ParseBinningMethod("EqualPositive ").ok());
}

TEST(BinningTest, MethodHelpers) {
  EXPECT_FALSE(UsesWeights(BinningMethod::kEqualPositive));
  EXPECT_TRUE(UsesWeights(BinningMethod::kWeightEqualInterval));
  EXPECT_TRUE(CountsPositivesOnly(BinningMethod::kEqualPositive));
  EXPECT_TRUE(CountsPositivesOnly(BinningMethod::kWeightEqualPositive));
  EXPECT_FALSE(CountsPositivesOnly(BinningMethod::kEqualTotal));
  EXPECT_TRUE(CountsNegativesOnly(BinningMethod::kWeightEqualNegative));
  EXPECT_FALSE(CountsNegativesOnly(BinningMethod::kEqualPositive));
  EXPECT_TRUE(IsEqualInterval(BinningMethod::kEqualInterval));
  EXPECT_TRUE(IsEqualInterval(BinningMethod::kWeightEqualInterval));
  EXPECT_FALSE(IsEqualInterval(BinningMethod::kWeightEqualTotal));
}

}  // namespace
}  // namespace tarn::stats
