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

}  // namespace
}  // namespace tarn::data
