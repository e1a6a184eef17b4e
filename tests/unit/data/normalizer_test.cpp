#include "data/normalizer.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tarn::data {
namespace {

ColumnConfig Numeric() {
  ColumnConfig c;
  c.column_name = "x";
  c.column_type = ColumnType::kNumeric;
  c.stats.mean = 10;
  c.stats.std_dev = 2;
  c.stats.woe = 0.1;
  c.binning.length = 2;
  c.binning.bin_boundary = {-INFINITY, 10};
  c.binning.bin_count_neg = {30, 10, 5};
  c.binning.bin_count_pos = {10, 30, 5};
  c.binning.bin_pos_rate = {0.25, 0.75, 0.5};
  c.binning.bin_count_woe = {1.0, -1.0, 0.0};
  c.binning.bin_weighted_woe = {2.0, -2.0, 0.5};
  return c;
}

ColumnConfig Categorical() {
  ColumnConfig c;
  c.column_name = "color";
  c.column_type = ColumnType::kCategorical;
  c.stats.mean = 0.5;
  c.stats.std_dev = 0.25;
  c.stats.woe = 0.3;
  c.binning.length = 2;
  c.binning.bin_category = {"red", "blue@^green"};
  c.binning.bin_count_neg = {8, 2, 1};
  c.binning.bin_count_pos = {2, 8, 1};
  c.binning.bin_pos_rate = {0.2, 0.8, 0.5};
  c.binning.bin_count_woe = {1.4, -1.4, 0.0};
  c.binning.bin_weighted_woe = {1.4, -1.4, 0.0};
  return c;
}

float Norm(const ColumnConfig& c, NormType t, std::string_view raw, bool missing = false,
           double cutoff = 4) {
  auto n = ColumnNormalizer::Create(c, t, cutoff);
  EXPECT_TRUE(n.ok()) << n.status().message();
  float out[8] = {};
  n->Apply(raw, missing, out);
  return out[0];
}

TEST(NormalizerTest, ZScaleNumericClipsAndFillsMissingWithMean) {
  auto c = Numeric();
  EXPECT_FLOAT_EQ(Norm(c, NormType::kZScale, "14"), 2.0f);
  EXPECT_FLOAT_EQ(Norm(c, NormType::kZScale, "100", false, 3), 3.0f);  // clipped at mean+3sd
  EXPECT_FLOAT_EQ(Norm(c, NormType::kZScale, "", true), 0.0f);
  EXPECT_FLOAT_EQ(Norm(c, NormType::kZScale, "abc"), 0.0f);  // invalid -> mean
  EXPECT_FLOAT_EQ(Norm(c, NormType::kZScale, "NaN"), 0.0f);
  c.stats.std_dev = 1e-9;
  EXPECT_FLOAT_EQ(Norm(c, NormType::kZScale, "14"), 0.0f);
}

TEST(NormalizerTest, ZScaleCategoricalUsesPositiveRate) {
  auto c = Categorical();
  EXPECT_FLOAT_EQ(Norm(c, NormType::kZScale, "red"), (0.2f - 0.5f) / 0.25f);
  EXPECT_FLOAT_EQ(Norm(c, NormType::kZScale, "green"), (0.8f - 0.5f) / 0.25f);
  EXPECT_FLOAT_EQ(Norm(c, NormType::kOldZScale, "green"), 0.8f);
  EXPECT_FLOAT_EQ(Norm(c, NormType::kOldZScale, "", true), 0.5f);
}

TEST(NormalizerTest, WoeFamilies) {
  auto n = Numeric();
  EXPECT_FLOAT_EQ(Norm(n, NormType::kWoe, "9.99"), 1.0f);
  EXPECT_FLOAT_EQ(Norm(n, NormType::kWoe, "10"), -1.0f);  // bins are [b_i, b_i+1)
  EXPECT_FLOAT_EQ(Norm(n, NormType::kWoe, "", true), 0.0f);
  EXPECT_FLOAT_EQ(Norm(n, NormType::kWeightWoe, "1"), 2.0f);
  auto c = Categorical();
  EXPECT_FLOAT_EQ(Norm(c, NormType::kWoe, "blue"), -1.4f);
  EXPECT_FLOAT_EQ(Norm(c, NormType::kWoe, "purple"), 0.3f);  // unseen -> column woe
  EXPECT_FLOAT_EQ(Norm(c, NormType::kHybrid, "red"), 1.4f);
  EXPECT_FLOAT_EQ(Norm(n, NormType::kHybrid, "12"), 1.0f);
  // WOE_ZSCORE: count-weighted mean of bin WOEs is 0 here; sd from the counts.
  double mean = (40 * 1.0 + 40 * -1.0 + 10 * 0.0) / 90;
  double var = (40 * 1.0 + 40 * 1.0 - 90 * mean * mean) / 89;
  EXPECT_NEAR(Norm(n, NormType::kWoeZScore, "1"), (1.0 - mean) / std::sqrt(var), 1e-6);
}

TEST(NormalizerTest, OneHotAndAsIs) {
  auto c = Categorical();
  auto n = ColumnNormalizer::Create(c, NormType::kOneHot, 4);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->width(), 3);
  float out[3];
  n->Apply("green", false, out);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 1);
  EXPECT_EQ(out[2], 0);
  n->Apply("", true, out);
  EXPECT_EQ(out[2], 1);
  auto z = ColumnNormalizer::Create(Numeric(), NormType::kZScaleOneHot, 4);
  EXPECT_EQ(z->width(), 1);
  EXPECT_FLOAT_EQ(Norm(Numeric(), NormType::kAsIsPr, "123.5"), 123.5f);
  EXPECT_FLOAT_EQ(Norm(c, NormType::kAsIsPr, "red"), 0.2f);
  EXPECT_FLOAT_EQ(Norm(c, NormType::kAsIsWoe, "red"), 1.4f);
}

TEST(NormalizerTest, UnsupportedTypesAreRefusedByName) {
  EXPECT_EQ(*ParseNormType("zscore"), NormType::kZScale);
  auto r = ParseNormType("ZSCALE_INDEX");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'ZSCALE_INDEX' is not supported"), std::string::npos);
  EXPECT_NE(r.status().message().find("WOE_ZSCORE"), std::string::npos);
}

TEST(NormalizerTest, ColumnWithoutStatsIsRefused) {
  ColumnConfig c;
  c.column_name = "raw";
  c.column_type = ColumnType::kNumeric;
  auto n = ColumnNormalizer::Create(c, NormType::kZScale, 4);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("'raw' has no stats"), std::string::npos);
}

}  // namespace
}  // namespace tarn::data
