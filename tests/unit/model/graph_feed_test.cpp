#include "model/graph_feed.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "data/json_fields.h"

namespace tarn::model {
namespace {

// A dense input over the numeric slots and one embedding of column "colA".
GraphSpec DenseAndEmbedding(int vocabulary) {
  auto spec = GraphSpec::FromJson(data::Json::parse(R"({"loss":"log","nodes":[
        {"name":"x","op":"input","source":"dense","width":2},
        {"name":"a","op":"input","source":"ids","column":"colA"},
        {"name":"emb","op":"embedding","inputs":["a"],"vocabulary":)" +
                                                    std::to_string(vocabulary) + R"(,"units":2},
        {"name":"cat","op":"concatenate","inputs":["x","emb"]},
        {"name":"out","op":"dense","inputs":["cat"],"units":1,"activation":"sigmoid"}]})"),
                                  "graph.json");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return *spec;
}

TEST(GraphFeedTest, IdsComeFromTheIdColumnsNotTheIndexSlots) {
  // Row: num0, colA's index slot, num1; ids: another column's id, then colA's.
  std::vector<FeedColumn> columns = {{"num0", 1, {}}, {"colA", 1, {0}, 1, 5}, {"num1", 1, {}}};
  auto feed = GraphFeed::Create(DenseAndEmbedding(5), columns);
  ASSERT_TRUE(feed.ok()) << feed.status().ToString();
  EXPECT_EQ(feed->row_width(), 3);
  EXPECT_EQ(feed->dense_width(), 2);
  ASSERT_EQ(feed->id_inputs(), 1u);
  const float row[] = {0.25f, 3.0f, -1.5f};
  const uint32_t row_ids[] = {8, 4};
  std::vector<float> dense(4);
  std::vector<int64_t> ids(2, -1);
  int64_t* id_pointers[] = {ids.data()};
  feed->Gather(row, row_ids, 1, dense.data(), id_pointers);
  EXPECT_EQ(dense[2], 0.25f);
  EXPECT_EQ(dense[3], -1.5f);
  EXPECT_EQ(ids[1], 4);  // colA's id, not its index slot's 3
}

TEST(GraphFeedTest, AColumnWithoutAnIdColumnOrTooFewRowsIsRefused) {
  std::vector<FeedColumn> no_ids = {{"num0", 1, {}}, {"colA", 1, {0}}, {"num1", 1, {}}};
  auto feed = GraphFeed::Create(DenseAndEmbedding(5), no_ids);
  ASSERT_FALSE(feed.ok());
  EXPECT_NE(feed.status().message().find("node 'a' (nodes[1]): column 'colA' has no id column"),
            std::string::npos)
      << feed.status().message();
  EXPECT_NE(feed.status().message().find("retrain"), std::string::npos);

  std::vector<FeedColumn> wide = {{"num0", 1, {}}, {"colA", 1, {0}, 0, 6}, {"num1", 1, {}}};
  feed = GraphFeed::Create(DenseAndEmbedding(5), wide);
  ASSERT_FALSE(feed.ok());
  EXPECT_NE(feed.status().message().find("vocabulary 5 is smaller than the 6 ids of column 'colA'"),
            std::string::npos)
      << feed.status().message();
}

}  // namespace
}  // namespace tarn::model
