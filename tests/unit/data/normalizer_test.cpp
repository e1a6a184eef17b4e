#include "data/normalizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "common/strings.h"

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

// What Describe() says a raw value becomes, computed from the description alone.
std::vector<float> FromDescription(const ColumnNormalizer::Transform& t, std::string_view raw,
                                   bool missing) {
  std::optional<double> v;
  if (!missing && !t.categorical) v = ParseDouble(raw);
  const bool number = v && std::isfinite(*v);
  int bin = t.missing_bin;
  bool unseen = false;
  if (!missing && t.categorical) {
    unseen = true;
    for (size_t b = 0; b < t.categories.size(); ++b)
      for (const auto& c : t.categories[b])
        if (c == raw) bin = static_cast<int>(b), unseen = false;
  } else if (number) {
    bin = 0;
    while (bin + 1 < static_cast<int>(t.boundaries.size()) && *v >= t.boundaries[bin + 1]) ++bin;
  }
  switch (t.kind) {
    case ColumnNormalizer::Kind::kZScore: {
      if (t.std_dev <= kMinZScoreStdDev) return {0.0f};
      double x = number
                     ? std::clamp(*v, t.mean - t.cutoff * t.std_dev, t.mean + t.cutoff * t.std_dev)
                     : t.mean;
      return {static_cast<float>((x - t.mean) / t.std_dev)};
    }
    case ColumnNormalizer::Kind::kRaw:
      return {static_cast<float>(number ? *v : t.mean)};
    case ColumnNormalizer::Kind::kBinValue:
      return {static_cast<float>(unseen ? t.unseen_value : t.bin_values.at(bin))};
    case ColumnNormalizer::Kind::kOneHot: {
      std::vector<float> out(t.missing_bin + 1, 0.0f);
      out[bin] = 1;
      return out;
    }
  }
  return {};
}

// Exporters restate a column from Describe(); it must say exactly what Apply does, for every
// normType and every kind of value.
TEST(NormalizerTest, DescribeSaysWhatApplyDoes) {
  const char* types[] = {"ZSCALE", "OLD_ZSCALE", "WOE",           "WEIGHT_WOE", "WOE_ZSCORE",
                         "HYBRID", "ONEHOT",     "ZSCALE_ONEHOT", "ASIS_WOE",   "ASIS_PR"};
  struct Value {
    const char* raw;
    bool missing;
  };
  const Value numeric[] = {{"3", false},    {"10", false},  {"11.5", false}, {"1e9", false},
                           {"-1e9", false}, {"abc", false}, {"", true}};
  const Value categorical[] = {
      {"red", false}, {"blue", false}, {"green", false}, {"purple", false}, {"", true}};
  for (const char* name : types) {
    auto type = ParseNormType(name);
    ASSERT_TRUE(type.ok()) << name;
    for (const auto& [column, values] :
         {std::pair{Numeric(), std::vector<Value>(std::begin(numeric), std::end(numeric))},
          std::pair{Categorical(),
                    std::vector<Value>(std::begin(categorical), std::end(categorical))}}) {
      auto n = ColumnNormalizer::Create(column, *type, 3);
      ASSERT_TRUE(n.ok()) << n.status().message();
      const auto t = n->Describe();
      EXPECT_EQ(t.categorical, column.IsCategorical());
      for (const auto& value : values) {
        std::vector<float> applied(n->width());
        n->Apply(value.raw, value.missing, applied.data());
        EXPECT_EQ(FromDescription(t, value.raw, value.missing), applied)
            << name << " " << column.column_name << " '" << value.raw << "'";
      }
    }
  }
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
