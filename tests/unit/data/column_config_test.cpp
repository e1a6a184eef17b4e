#include "data/column_config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace tarn::data {
namespace {

TEST(ColumnConfigTest, RoundTripsThroughShifuJson) {
  ColumnConfig c;
  c.column_num = 3;
  c.column_name = "age";
  c.column_type = ColumnType::kNumeric;
  c.final_select = true;
  c.stats.mean = 38.5;
  c.stats.std_dev = 13.6;
  c.stats.ks = 25.0;
  c.stats.total_count = 100;
  c.binning.length = 2;
  c.binning.bin_boundary = {-INFINITY, 30};
  c.binning.bin_count_neg = {10, 20, 1};
  c.binning.bin_count_pos = {5, 60, 4};
  testing::TempDir dir;
  std::string path = dir.File("ColumnConfig.json");
  ASSERT_TRUE(SaveColumnConfigs(path, {c}).ok());
  auto back = LoadColumnConfigs(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 1u);
  const auto& b = (*back)[0];
  EXPECT_EQ(b.column_name, "age");
  EXPECT_EQ(b.column_type, ColumnType::kNumeric);
  EXPECT_TRUE(b.final_select);
  EXPECT_TRUE(std::isinf(b.binning.bin_boundary[0]) && b.binning.bin_boundary[0] < 0);
  EXPECT_EQ(b.binning.bin_count_pos, (std::vector<long long>{5, 60, 4}));
  EXPECT_EQ(*b.stats.total_count, 100);
  EXPECT_FALSE(b.stats.iv.has_value());
}

TEST(ColumnConfigTest, ReadsShifusOwnOutput) {
  std::string path =
      testing::SharedDir() +
      "/datasets/shifu-examples/cancer-judgement/ModelStore/ModelSet1/ColumnConfig.json";
  auto cols = LoadColumnConfigs(path);
  if (!cols.ok() && cols.status().code() == StatusCode::kNotFound) GTEST_SKIP() << path;
  ASSERT_TRUE(cols.ok()) << cols.status().message();
  ASSERT_EQ(cols->size(), 31u);
  EXPECT_TRUE((*cols)[0].IsTarget());
  const auto& c = (*cols)[2];
  EXPECT_EQ(c.column_name, "column_4");
  EXPECT_EQ(c.binning.length, 10);
  // Shifu 0.2 files have no missing bin: it is added, empty.
  EXPECT_EQ(c.binning.bin_count_pos.size(), 11u);
  EXPECT_EQ(c.binning.bin_count_pos.back(), 0);
}

TEST(ColumnConfigTest, BadFieldIsNamed) {
  auto r = ParseColumnConfigs(R"([{"columnName": "a", "columnType": "X"}])", "cc.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cc.json: [0] (a).columnType must be one of N, C, H, A"),
            std::string::npos)
      << r.status().message();
  auto s =
      ParseColumnConfigs(R"([{"columnName": "a", "columnStats": {"mean": "high"}}])", "cc.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("columnStats.mean must be a number"), std::string::npos);
}

// A column with stats and bins; ks and iv as given.
ColumnConfig WithStats(int num, const std::string& name, ColumnFlag flag, double ks, double iv) {
  ColumnConfig c;
  c.column_num = num;
  c.column_name = name;
  c.column_type = ColumnType::kNumeric;
  c.column_flag = flag;
  c.stats.mean = 1;
  c.stats.std_dev = 1;
  c.stats.ks = ks;
  c.stats.iv = iv;
  c.binning.length = 1;
  c.binning.bin_boundary = {-INFINITY};
  return c;
}

std::vector<std::string> Names(const ModelInputs& in) {
  std::vector<std::string> out;
  for (const auto& c : in.columns) out.push_back(c.column_name);
  return out;
}

TEST(ColumnConfigTest, WithoutFinalSelectModelsTrainOnEveryGoodCandidate) {
  std::vector<ColumnConfig> cols = {
      WithStats(0, "good", ColumnFlag::kNone, 10, 0.2),
      WithStats(1, "no_ks", ColumnFlag::kNone, 0, 0.2),
      WithStats(2, "no_iv", ColumnFlag::kNone, 5, 0),
      WithStats(3, "meta", ColumnFlag::kMeta, 10, 0.2),
      WithStats(4, "removed", ColumnFlag::kForceRemove, 10, 0.2),
      WithStats(5, "weight", ColumnFlag::kWeight, 10, 0.2),
      WithStats(6, "forced", ColumnFlag::kForceSelect, 3, 0.1),
      WithStats(7, "target", ColumnFlag::kTarget, 100, 9),
      WithStats(8, "no_stats", ColumnFlag::kNone, 10, 0.2),
  };
  cols[8].stats.mean.reset();
  auto in = SelectModelInputs(cols);
  EXPECT_TRUE(in.all_good_candidates);
  EXPECT_EQ(Names(in), (std::vector<std::string>{"good", "forced"}));
  EXPECT_NE(in.rule.find("no column has finalSelect: training on all 2 good candidate columns"),
            std::string::npos)
      << in.rule;

  // Once a column is flagged Candidate, only Candidate and ForceSelect columns are candidates.
  cols[2] = WithStats(2, "flagged", ColumnFlag::kCandidate, 5, 0.3);
  EXPECT_EQ(Names(SelectModelInputs(cols)), (std::vector<std::string>{"flagged", "forced"}));

  // finalSelect wins, target and meta excluded (Shifu counts neither).
  cols[1].final_select = cols[3].final_select = cols[7].final_select = true;
  in = SelectModelInputs(cols);
  EXPECT_FALSE(in.all_good_candidates);
  EXPECT_EQ(Names(in), std::vector<std::string>{"no_ks"});
  EXPECT_NE(in.rule.find("training on the 1 column with finalSelect"), std::string::npos)
      << in.rule;
}

}  // namespace
}  // namespace tarn::data
