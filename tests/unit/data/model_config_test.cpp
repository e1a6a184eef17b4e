#include "data/model_config.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tarn::data {
namespace {

TEST(ModelConfigTest, CreateNewHasShifuDefaults) {
  auto mc = ModelConfig::CreateNew("income", "nn", "test");
  ASSERT_TRUE(mc.ok()) << mc.status().message();
  EXPECT_EQ(mc->data_set.data_delimiter, "|");
  EXPECT_EQ(mc->stats.max_num_bin, 10);
  EXPECT_EQ(mc->stats.binning_method, "EqualPositive");
  EXPECT_EQ(mc->var_select.filter_num, 200);
  EXPECT_EQ(mc->normalize.norm_type, "ZSCALE");
  EXPECT_EQ(mc->train.algorithm, "NN");
  EXPECT_EQ(mc->train.num_train_epochs, 200);
  EXPECT_EQ(mc->train.params["Propagation"], "R");
  EXPECT_EQ(mc->evals.size(), 1u);
  EXPECT_TRUE(mc->warnings.empty());
  EXPECT_FALSE(ModelConfig::CreateNew("x", "GBDT", "").ok());
}

TEST(ModelConfigTest, ReadsShifusOwnExample) {
  std::string path =
      testing::SharedDir() +
      "/datasets/shifu-examples/cancer-judgement/ModelStore/ModelSet1/ModelConfig.json";
  auto mc = ModelConfig::Load(path);
  if (!mc.ok() && mc.status().code() == StatusCode::kNotFound) {
    GTEST_SKIP() << "shared datasets absent: " << path;
  }
  ASSERT_TRUE(mc.ok()) << mc.status().message();
  EXPECT_EQ(mc->data_set.target_column_name, "diagnosis");
  EXPECT_EQ(mc->data_set.pos_tags, std::vector<std::string>{"M"});
  EXPECT_EQ(mc->data_set.weight_column_name, "column_3");
  EXPECT_EQ(mc->normalize.std_dev_cut_off, 4.0);
  EXPECT_EQ(mc->train.bagging_num, 5);
  EXPECT_EQ(mc->evals.size(), 2u);
  EXPECT_EQ(mc->evals[1].name, "EvalB");
  EXPECT_TRUE(mc->IsBinaryClassification());
}

TEST(ModelConfigTest, WrongTypeNamesFileKeyAndType) {
  auto mc = ModelConfig::Parse(R"({"stats": {"maxNumBin": "ten"}})", "ModelConfig.json");
  ASSERT_FALSE(mc.ok());
  EXPECT_EQ(mc.status().message(),
            "ModelConfig.json: stats.maxNumBin must be an integer, got a string \"ten\"");
  auto bad_list = ModelConfig::Parse(R"({"dataSet": {"posTags": "M"}})", "mc.json");
  ASSERT_FALSE(bad_list.ok());
  EXPECT_NE(bad_list.status().message().find("dataSet.posTags must be a list"), std::string::npos);
  auto range = ModelConfig::Parse(R"({"train": {"validSetRate": 1.5}})", "mc.json");
  ASSERT_FALSE(range.ok());
  EXPECT_NE(range.status().message().find("train.validSetRate must be between 0 and 1"),
            std::string::npos);
  auto not_json = ModelConfig::Parse("{\"basic\": ", "broken.json");
  ASSERT_FALSE(not_json.ok());
  EXPECT_NE(not_json.status().message().find("broken.json: not valid JSON"), std::string::npos);
}

TEST(ModelConfigTest, UnknownKeysAreWarnedNotDropped) {
  auto mc =
      ModelConfig::Parse(R"({"stats": {"maxNumBin": 5, "maxNumBins": 7}, "extra": 1})", "mc.json");
  ASSERT_TRUE(mc.ok());
  EXPECT_EQ(mc->stats.max_num_bin, 5);
  ASSERT_EQ(mc->warnings.size(), 2u);
  EXPECT_EQ(mc->warnings[0], "mc.json: unknown key 'stats.maxNumBins' is ignored");
  EXPECT_EQ(mc->raw["stats"]["maxNumBins"], 7);
}

TEST(ModelConfigTest, EvalSetsInheritTheTrainingFormat) {
  auto mc = ModelConfig::Parse(
      R"({"dataSet": {"dataDelimiter": ",", "targetColumnName": "y", "posTags": ["1"], "negTags": ["0"]},
          "evals": [{"name": "E", "dataSet": {"dataPath": "eval.csv"}}]})",
      "mc.json");
  ASSERT_TRUE(mc.ok()) << mc.status().message();
  EXPECT_EQ(mc->evals[0].data_set.data_delimiter, ",");
  EXPECT_EQ(mc->evals[0].data_set.target_column_name, "y");
  EXPECT_EQ(mc->evals[0].data_set.data_path, "eval.csv");
  EXPECT_EQ(mc->evals[0].score_scale, 1000);
  EXPECT_EQ(mc->evals[0].key, "evals[0]");
}

// Shifu: an eval set's weight column is its own (none: weight 1); a blank
// target or empty tags are the training set's (what `tarn new` writes).
TEST(ModelConfigTest, EvalSetsKeepTheirOwnWeightAndInheritBlankTargets) {
  auto mc = ModelConfig::Parse(
      R"({"dataSet": {"targetColumnName": "y", "posTags": ["1"], "negTags": ["0"],
                      "weightColumnName": "w"},
          "evals": [{"name": "New", "dataSet": {"weightColumnName": "", "targetColumnName": " ",
                                                "posTags": [], "negTags": []}},
                    {"name": "Absent", "dataSet": {"weightColumnName": null}},
                    {"name": "Own", "dataSet": {"weightColumnName": "ew", "targetColumnName": "t",
                                                "posTags": ["M"], "negTags": ["B"]}}]})",
      "mc.json");
  ASSERT_TRUE(mc.ok()) << mc.status().message();
  ASSERT_EQ(mc->evals.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    const auto& e = mc->evals[i];
    EXPECT_EQ(e.data_set.weight_column_name, "") << e.name;
    EXPECT_EQ(e.data_set.target_column_name, "y") << e.name;
    EXPECT_EQ(e.data_set.pos_tags, std::vector<std::string>{"1"}) << e.name;
    EXPECT_EQ(e.data_set.neg_tags, std::vector<std::string>{"0"}) << e.name;
    EXPECT_TRUE(e.inherits_target && e.inherits_pos_tags && e.inherits_neg_tags) << e.name;
  }
  const auto& own = mc->evals[2];
  EXPECT_EQ(own.key, "evals[2]");
  EXPECT_EQ(own.data_set.weight_column_name, "ew");
  EXPECT_EQ(own.data_set.target_column_name, "t");
  EXPECT_EQ(own.data_set.pos_tags, std::vector<std::string>{"M"});
  EXPECT_FALSE(own.inherits_target || own.inherits_pos_tags || own.inherits_neg_tags);
  EXPECT_EQ(mc->data_set.weight_column_name, "w");
}

TEST(ColumnNameFileTest, SkipsCommentsAndBlanks) {
  testing::TempDir dir;
  auto path = dir.Write("meta.column.names", "# ids\nid\n\n  name , other\n");
  auto names = ReadColumnNameFile(path);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"id", "name", "other"}));
  EXPECT_TRUE(ReadColumnNameFile("")->empty());
  EXPECT_FALSE(ReadColumnNameFile(dir.File("absent")).ok());
}

}  // namespace
}  // namespace tarn::data
