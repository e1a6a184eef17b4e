#include "train/graph_models.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "model/graph_feed.h"
#include "model/keras_model.h"
#include "test_util.h"

namespace tarn::train {
namespace {

using data::Json;

// Adult-like inputs: two numeric columns, three categorical ones with ids.
std::vector<GraphColumn> Columns() {
  return {{"Age", 0, false, 0},
          {"Work_Class", 1, true, 9},
          {"Education", 3, true, 17},
          {"Hours", 12, false, 0},
          {"Occupation", 6, true, 16}};
}
const std::vector<std::string> kModelSet = {"Age",     "Work_Class", "FnlWgt",    "Education",
                                            "Edu_Num", "Marital",    "Occupation"};

// Parsed as `tarn train` parses train#params, then mapped.
Result<GraphModel> Build(const std::string& algorithm, const Json& params) {
  TARN_ASSIGN_OR_RETURN(auto typed, model::TrainParams::Parse(params, algorithm));
  return BuildGraphModel(algorithm, typed, Columns(), 2, kModelSet, "/nonexistent");
}

const model::GraphNode* FindNode(const model::GraphSpec& s, const std::string& name) {
  for (const auto& n : s.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

Json Nn() {
  return {{"NumHiddenLayers", 1}, {"NumHiddenNodes", {16}}, {"ActivationFunc", {"relu"}}};
}

TEST(GraphModels, WdlIsShifusWideAndDeep) {
  Json p = Nn();
  p["NumEmbedColumnIds"] = {1, 6};  // columnNums, as Shifu
  p["NumEmbedOuputs"] = 4;
  p["L2Reg"] = 0.01;
  auto m = Build("WDL", p);
  ASSERT_TRUE(m.ok()) << m.status().message();
  // The wide part weighs every category of every categorical input, and the numeric inputs.
  for (const char* name : {"wide_Work_Class", "wide_Education", "wide_Occupation"}) {
    const auto* n = FindNode(m->spec, name);
    ASSERT_NE(n, nullptr) << name;
    EXPECT_EQ(n->units, 1);
  }
  ASSERT_NE(FindNode(m->spec, "wide_dense"), nullptr);
  // The deep part embeds only the listed columns.
  EXPECT_EQ(FindNode(m->spec, "embed_Work_Class")->units, 4);
  EXPECT_EQ(FindNode(m->spec, "embed_Work_Class")->vocabulary, 9);
  EXPECT_EQ(FindNode(m->spec, "embed_Education"), nullptr);
  EXPECT_EQ(FindNode(m->spec, "deep_1")->units, 16);
  EXPECT_EQ(m->spec.nodes.back().name, "score");
  EXPECT_EQ(m->spec.nodes.back().inputs, std::vector<std::string>{"wide_deep"});
  ASSERT_TRUE(m->l2.has_value());
  EXPECT_DOUBLE_EQ(*m->l2, 0.01);

  p["wideDenseEnable"] = "false";  // Shifu reads "false" as false too
  p["deepEnable"] = false;
  auto wide = Build("WDL", p);
  ASSERT_TRUE(wide.ok()) << wide.status().message();
  EXPECT_EQ(FindNode(wide->spec, "wide_dense"), nullptr);
  EXPECT_EQ(FindNode(wide->spec, "deep_logit"), nullptr);
}

TEST(GraphModels, RefusalsNameTheKeyOrColumn) {
  Json p = Nn();
  p["NumEmbedColumnIds"] = {0};  // numeric: no ids
  auto m = Build("WDL", p);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("train.params.NumEmbedColumnIds[0]: column 'Age' has no "
                                      "category ids"),
            std::string::npos)
      << m.status().message();
  p["NumEmbedColumnIds"] = {"FnlWgt"};
  m = Build("WDL", p);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("is not an input column (finalSelect)"), std::string::npos)
      << m.status().message();
  p["NumEmbedColumnIds"] = {"Nope"};
  m = Build("WDL", p);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("names no column of ColumnConfig.json"), std::string::npos);
  p.erase("NumEmbedColumnIds");
  p["wideEnable"] = false;
  p["deepEnable"] = false;
  m = Build("WDL", p);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("both false"), std::string::npos);
  p = Nn();
  p["NumEmbedOuputs"] = 0;
  m = Build("WDL", p);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("train.params.NumEmbedOuputs must be a positive integer"),
            std::string::npos);
  p = Nn();
  p["NumEmbedColumnIds"] = {1};
  m = Build("DeepFM", p);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("at least 2 embedded columns"), std::string::npos);
  p = Nn();
  p["ModelGraph"] = "graph.json";
  m = Build("WDL", p);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("train.params.ModelGraph defines the whole model"),
            std::string::npos);
}

TEST(GraphModels, DeepFmAndDcnShapes) {
  auto fm = Build("DeepFM", Nn());
  ASSERT_TRUE(fm.ok()) << fm.status().message();
  EXPECT_EQ(FindNode(fm->spec, "fm")->inputs.size(), 3u);  // every categorical input embedded
  Json p = Nn();
  p["NumCrossLayers"] = 2;
  auto dcn = Build("DCN", p);
  ASSERT_TRUE(dcn.ok()) << dcn.status().message();
  EXPECT_EQ(FindNode(dcn->spec, "cross")->layers, 2);
  EXPECT_EQ(FindNode(dcn->spec, "x0")->inputs.size(), 4u);  // numeric + 3 embeddings
}

std::string Fixture(const std::string& name) {
  return testing::SourceDir() + "/tests/unit/model/testdata/" + name;
}

TEST(GraphModels, KerasWideDeepMapsOntoTheGraph) {
  auto keras = model::ReadKerasModel(Fixture("keras3_wide_deep.json"));
  ASSERT_TRUE(keras.ok()) << keras.status().message();
  auto m = KerasGraphModel(*keras, Columns(), kModelSet, model::LossKind::kLog);
  ASSERT_TRUE(m.ok()) << m.status().message();
  // Flatten layers alias their input: the concatenation reads the embeddings.
  EXPECT_EQ(FindNode(m->spec, "deep_Work_Class"), nullptr);
  EXPECT_EQ(FindNode(m->spec, "deep_concat")->inputs[1], "deep_emb_Work_Class");
  EXPECT_EQ(FindNode(m->spec, "Work_Class")->column, "Work_Class");
  EXPECT_EQ(m->spec.nodes.back().name, "score");
  // deep_2 alone has an L2 regularizer: the others are not regularized.
  ASSERT_TRUE(m->l2.has_value());
  EXPECT_GT(*m->l2, 0);
  EXPECT_EQ(std::count(m->unregularized.begin(), m->unregularized.end(), "deep_2"), 0);
  EXPECT_EQ(std::count(m->unregularized.begin(), m->unregularized.end(), "deep_1"), 1);
  // The feed checks shifu_input_0 against the normalized measurement values.
  std::vector<model::FeedColumn> feed = {{"Age", 1, {}},
                                         {"Work_Class", 1, {0}, 0, 9},
                                         {"Education", 1, {0}, 1, 17},
                                         {"Hours", 1, {}},
                                         {"Occupation", 1, {0}, 2, 16}};
  auto f = model::GraphFeed::Create(m->spec, feed);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("'shifu_input_0'"), std::string::npos);
  EXPECT_NE(f.status().message().find("holds 2 numeric values"), std::string::npos)
      << f.status().message();
}

// Shared layers and nested models (make_graphs.py's shared_nested): the graph holds one kernel
// per shared Dense, and a nested model's layers in place of it.
TEST(GraphModels, KerasSharedLayersShareOneParameterBlock) {
  auto keras = model::ReadKerasModel(Fixture("keras3_shared_nested.json"));
  ASSERT_TRUE(keras.ok()) << keras.status().message();
  auto m = KerasGraphModel(*keras, Columns(), kModelSet, model::LossKind::kLog);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(FindNode(m->spec, "shared_dense#2")->shares, "shared_dense");
  EXPECT_EQ(FindNode(m->spec, "shared_dense#2")->inputs[0], "emb_Occupation");  // Flatten aliases
  EXPECT_EQ(FindNode(m->spec, "pair#1/pair_dense")->shares, "pair/pair_dense");
  EXPECT_EQ(FindNode(m->spec, "head/head_hidden")->inputs[0], "all");
  // Parameters: shared_dense 4x3+3 and pair_dense 4x2+2 once each, head 19x8+8, 8x1+1.
  EXPECT_EQ(m->spec.DenseParameterCount(), 15u + 10u + 160u + 9u);
}

// Hashing layers (make_graphs.py's `hashing`): norm wrote Keras' bins as each
// column's ids, so a Hashing is its input's ids and the Embedding reads them.
TEST(GraphModels, KerasHashingReadsTheColumnsKerasHashedIds) {
  auto keras = model::ReadKerasModel(Fixture("keras3_hashing.json"));
  ASSERT_TRUE(keras.ok()) << keras.status().message();
  std::vector<GraphColumn> cols;
  std::vector<std::string> names;
  int num = 0;
  for (const auto& [column, hashing] : keras->HashedTextInputs()) {
    data::IdColumn id{column, num, data::IdKind::kKerasHash, hashing.num_bins};
    id.keras = hashing;
    cols.push_back({column, num++, true, static_cast<int>(hashing.num_bins), id});
    names.push_back(column);
  }
  auto m = KerasGraphModel(*keras, cols, names, model::LossKind::kLog);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(FindNode(m->spec, "hash_Occupation"), nullptr);
  EXPECT_EQ(FindNode(m->spec, "Occupation")->source, model::InputSource::kIds);
  EXPECT_EQ(FindNode(m->spec, "emb_Occupation")->inputs[0], "Occupation");
  EXPECT_EQ(FindNode(m->spec, "emb_Occupation")->vocabulary, 32);

  // Ids that are not these bins (norm ran without this graph, or with other options).
  auto stale = cols;
  stale[3].ids.kind = data::IdKind::kIndex;
  m = KerasGraphModel(*keras, stale, names, model::LossKind::kLog);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("(InputLayer 'Occupation'): column 'Occupation' has ids of "
                                      "kind index in tmp/NormalizedData, but the graph hashes its "
                                      "text with a Hashing layer of 32 bins; rerun 'tarn norm'"),
            std::string::npos)
      << m.status().message();
  stale = cols;
  stale[3].ids.keras.salt.reset();
  EXPECT_FALSE(KerasGraphModel(*keras, stale, names, model::LossKind::kLog).ok());
}

TEST(GraphModels, KerasRefusals) {
  auto keras = model::ReadKerasModel(Fixture("keras3_wide_deep.json"));
  ASSERT_TRUE(keras.ok());
  // An ids input whose column is not an input, or has no ids.
  auto cols = Columns();
  cols.erase(cols.begin() + 1);
  auto m = KerasGraphModel(*keras, cols, kModelSet, model::LossKind::kLog);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("(InputLayer 'Work_Class'): column 'Work_Class' is not an "
                                      "input column (finalSelect)"),
            std::string::npos)
      << m.status().message();
  cols = Columns();
  cols[1].has_ids = false;
  m = KerasGraphModel(*keras, cols, kModelSet, model::LossKind::kLog);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("has no category ids"), std::string::npos);
  // input_dim below the column's id range.
  cols = Columns();
  cols[1].id_count = 10;
  m = KerasGraphModel(*keras, cols, kModelSet, model::LossKind::kLog);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("(Embedding 'deep_emb_Work_Class'): input_dim 9 is smaller "
                                      "than the 10 ids"),
            std::string::npos)
      << m.status().message();
  // Two Dense initializers, and two L2 factors.
  auto edited = *keras;
  for (auto& l : edited.layers) {
    if (l.name == "deep_2") l.initializer = model::Initializer::kHe;
  }
  m = KerasGraphModel(edited, Columns(), kModelSet, model::LossKind::kLog);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("kernel_initializer he differs"), std::string::npos)
      << m.status().message();
  edited = *keras;
  for (auto& l : edited.layers) {
    if (l.name == "deep_1") l.regularizer.l2 = 0.5f;
  }
  m = KerasGraphModel(edited, Columns(), kModelSet, model::LossKind::kLog);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("one L2 factor"), std::string::npos);
}

}  // namespace
}  // namespace tarn::train
