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
  c.stats.min = 2;
  c.stats.max = 22;
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
    case ColumnNormalizer::Kind::kMaxMin: {
      const double range = t.max - t.min;
      return {static_cast<float>(range > 1e-7 ? ((number ? *v : t.mean) - t.min) / range : 0)};
    }
    case ColumnNormalizer::Kind::kBinValue:
    case ColumnNormalizer::Kind::kDiscrete:
    case ColumnNormalizer::Kind::kIndex:
      return {static_cast<float>(unseen ? t.unseen_value : t.bin_values.at(bin))};
    case ColumnNormalizer::Kind::kOneHot: {
      std::vector<float> out(t.missing_bin + 1, 0.0f);
      out[bin] = 1;
      return out;
    }
  }
  return {};
}

// The same, with the *_APPEND_INDEX types' index after the kind's outputs.
std::vector<float> FromDescriptionWithIndex(const ColumnNormalizer::Transform& t,
                                            std::string_view raw, bool missing) {
  auto out = FromDescription(t, raw, missing);
  if (t.append_index) {
    ColumnNormalizer::Transform index = t;
    index.kind = ColumnNormalizer::Kind::kIndex;
    index.bin_values.clear();
    for (int b = 0; b <= t.missing_bin; ++b) index.bin_values.push_back(b);
    index.unseen_value = t.missing_bin;
    out.push_back(FromDescription(index, raw, missing).at(0));
  }
  return out;
}

// Exporters restate a column from Describe(); it must say exactly what Apply does, for every
// normType and every kind of value.
TEST(NormalizerTest, DescribeSaysWhatApplyDoes) {
  const auto types = Split(NormTypeNames(), ", ");
  ASSERT_GT(types.size(), 20u);
  struct Value {
    const char* raw;
    bool missing;
  };
  const Value numeric[] = {{"3", false},    {"10", false},  {"11.5", false}, {"1e9", false},
                           {"-1e9", false}, {"abc", false}, {"", true}};
  const Value categorical[] = {
      {"red", false}, {"blue", false}, {"green", false}, {"purple", false}, {"", true}};
  for (const auto& name : types) {
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
        EXPECT_EQ(FromDescriptionWithIndex(t, value.raw, value.missing), applied)
            << name << " " << column.column_name << " '" << value.raw << "'";
      }
    }
  }
}

TEST(NormalizerTest, EveryShifuNormTypeIsAcceptedAndOthersAreRefusedByName) {
  // ModelNormalizeConf.NormType in ShifuML/shifu (develop).
  for (const char* name : {"OLD_ZSCORE",
                           "OLD_ZSCALE",
                           "ZSCORE",
                           "ZSCALE",
                           "WOE",
                           "WEIGHT_WOE",
                           "HYBRID",
                           "WEIGHT_HYBRID",
                           "WOE_ZSCORE",
                           "WOE_ZSCALE",
                           "WEIGHT_WOE_ZSCORE",
                           "WEIGHT_WOE_ZSCALE",
                           "ONEHOT",
                           "ZSCALE_ONEHOT",
                           "ZSCALE_ORDINAL",
                           "MAXMIN_INDEX",
                           "ASIS_WOE",
                           "ASIS_PR",
                           "DISCRETE_ZSCORE",
                           "DISCRETE_ZSCALE",
                           "ZSCALE_INDEX",
                           "ZSCORE_INDEX",
                           "WOE_INDEX",
                           "WOE_ZSCALE_INDEX",
                           "ZSCALE_APPEND_INDEX",
                           "ZSCORE_APPEND_INDEX",
                           "WOE_APPEND_INDEX",
                           "WOE_ZSCALE_APPEND_INDEX",
                           "INDEX"}) {
    auto t = ParseNormType(name);
    ASSERT_TRUE(t.ok()) << name;
    // Aliases share a type whose canonical name parses back to it.
    EXPECT_EQ(*ParseNormType(NormTypeName(*t)), *t) << name;
    EXPECT_TRUE(ColumnNormalizer::Create(Numeric(), *t, 4).ok()) << name;
    EXPECT_TRUE(ColumnNormalizer::Create(Categorical(), *t, 4).ok()) << name;
  }
  EXPECT_EQ(*ParseNormType("zscore_index"), NormType::kZScaleIndex);
  auto r = ParseNormType("ZSCALE_BUCKETS");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'ZSCALE_BUCKETS' is not one of Shifu's"), std::string::npos);
  EXPECT_NE(r.status().message().find("WOE_ZSCALE_INDEX"), std::string::npos);
}

// Every output slot of one field.
std::vector<float> All(const ColumnConfig& c, NormType t, std::string_view raw,
                       bool missing = false) {
  auto n = ColumnNormalizer::Create(c, t, 4);
  EXPECT_TRUE(n.ok()) << n.status().message();
  std::vector<float> out(n->width());
  n->Apply(raw, missing, out.data());
  return out;
}

TEST(NormalizerTest, IndexTypesWriteTheCategoryIndexWithMissingAndUnseenLast) {
  auto c = Categorical();
  for (auto t : {NormType::kZScaleIndex, NormType::kWoeIndex, NormType::kWoeZScaleIndex,
                 NormType::kMaxMinIndex, NormType::kZScaleOrdinal, NormType::kIndex}) {
    EXPECT_EQ(All(c, t, "red"), std::vector<float>{0});
    EXPECT_EQ(All(c, t, "green"), std::vector<float>{1});  // merged group "blue@^green"
    EXPECT_EQ(All(c, t, "blue"), std::vector<float>{1});
    EXPECT_EQ(All(c, t, "purple"), std::vector<float>{2});  // unseen: the category count
    EXPECT_EQ(All(c, t, "", true), std::vector<float>{2});  // missing: the same
    auto n = ColumnNormalizer::Create(c, t, 4);
    EXPECT_EQ(n->index_slots(), std::vector<int>{0});
    EXPECT_EQ(n->index_count(), 3);
  }
  // The numeric side of each: ZSCALE_INDEX z-scores, WOE_INDEX takes the bin WOE,
  // WOE_ZSCALE_INDEX its z-score, MAXMIN_INDEX scales by min and max, INDEX the bin.
  auto x = Numeric();
  EXPECT_FLOAT_EQ(All(x, NormType::kZScaleIndex, "14")[0], 2.0f);
  EXPECT_FLOAT_EQ(All(x, NormType::kWoeIndex, "14")[0], -1.0f);
  EXPECT_FLOAT_EQ(All(x, NormType::kWoeZScaleIndex, "14")[0],
                  All(x, NormType::kWoeZScore, "14")[0]);
  EXPECT_FLOAT_EQ(All(x, NormType::kMaxMinIndex, "7")[0], 0.25f);
  EXPECT_FLOAT_EQ(All(x, NormType::kMaxMinIndex, "", true)[0], 0.4f);  // the mean, scaled
  EXPECT_EQ(All(x, NormType::kIndex, "9.99"), std::vector<float>{0});
  EXPECT_EQ(All(x, NormType::kIndex, "10"), std::vector<float>{1});
  EXPECT_EQ(All(x, NormType::kIndex, "abc"), std::vector<float>{2});
  EXPECT_TRUE(ColumnNormalizer::Create(x, NormType::kZScaleIndex, 4)->index_slots().empty());
  EXPECT_EQ(ColumnNormalizer::Create(x, NormType::kIndex, 4)->index_slots(), std::vector<int>{0});
  x.stats.max = x.stats.min;  // no range: Shifu writes 0
  EXPECT_FLOAT_EQ(All(x, NormType::kMaxMinIndex, "7")[0], 0.0f);
  x.stats.max.reset();
  auto no_max = ColumnNormalizer::Create(x, NormType::kMaxMinIndex, 4);
  ASSERT_FALSE(no_max.ok());
  EXPECT_NE(no_max.status().message().find("'x' has no min or max"), std::string::npos);
}

TEST(NormalizerTest, AppendIndexTypesWriteTheValueThenTheBinIndex) {
  auto x = Numeric();
  auto z = All(x, NormType::kZScaleAppendIndex, "14");
  EXPECT_EQ(z.size(), 2u);
  EXPECT_FLOAT_EQ(z[0], 2.0f);
  EXPECT_FLOAT_EQ(z[1], 1.0f);
  EXPECT_EQ(All(x, NormType::kWoeAppendIndex, "3"), (std::vector<float>{1.0f, 0.0f}));
  EXPECT_EQ(All(x, NormType::kWoeAppendIndex, "", true), (std::vector<float>{0.0f, 2.0f}));
  auto wz = All(x, NormType::kWoeZScaleAppendIndex, "3");
  EXPECT_FLOAT_EQ(wz[0], All(x, NormType::kWoeZScore, "3")[0]);
  EXPECT_FLOAT_EQ(wz[1], 0.0f);
  auto c = Categorical();
  // Shifu writes a categorical column's index twice under ZSCALE_APPEND_INDEX.
  EXPECT_EQ(All(c, NormType::kZScaleAppendIndex, "green"), (std::vector<float>{1, 1}));
  EXPECT_EQ(All(c, NormType::kWoeAppendIndex, "purple"), (std::vector<float>{0.3f, 2}));
  EXPECT_EQ(ColumnNormalizer::Create(c, NormType::kZScaleAppendIndex, 4)->index_slots(),
            (std::vector<int>{0, 1}));
  EXPECT_EQ(ColumnNormalizer::Create(c, NormType::kWoeAppendIndex, 4)->index_slots(),
            std::vector<int>{1});
}

TEST(NormalizerTest, DiscreteUsesTheBinsLowerBoundaryAndWeightedVariantsTheWeightedWoe) {
  auto x = Numeric();
  x.stats.min = 4;
  // Bin 1 starts at 10, the mean: z-score 0; bin 0 stands for the min.
  EXPECT_FLOAT_EQ(All(x, NormType::kDiscreteZScore, "12")[0], 0.0f);
  EXPECT_FLOAT_EQ(All(x, NormType::kDiscreteZScore, "9")[0], (4.0f - 10.0f) / 2.0f);
  EXPECT_FLOAT_EQ(All(x, NormType::kDiscreteZScore, "", true)[0], 0.0f);
  auto c = Categorical();
  EXPECT_FLOAT_EQ(All(c, NormType::kDiscreteZScore, "red")[0], (0.2f - 0.5f) / 0.25f);
  EXPECT_FLOAT_EQ(All(x, NormType::kWeightHybrid, "14")[0], 2.0f);
  EXPECT_FLOAT_EQ(All(c, NormType::kWeightHybrid, "red")[0], 1.4f);
  c.binning.bin_weighted_woe = {0.7, -0.7, 0.1};
  EXPECT_FLOAT_EQ(All(c, NormType::kWeightHybrid, "red")[0], 0.7f);
  // WEIGHT_WOE_ZSCORE: the weighted WOEs, weighted by the bins' record counts.
  double mean = (10 * 0.7 + 10 * -0.7 + 2 * 0.1) / 22;
  double var = (10 * 0.49 + 10 * 0.49 + 2 * 0.01 - 22 * mean * mean) / 21;
  EXPECT_NEAR(All(c, NormType::kWeightWoeZScore, "blue")[0], (-0.7 - mean) / std::sqrt(var), 1e-5);
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
