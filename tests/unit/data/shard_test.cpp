#include "data/shard.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"

namespace tarn::data {
namespace {

ShardSchema Schema() {
  ShardSchema s;
  s.features = {{"a", 1, 1}, {"color", 2, 3}};
  s.target_name = "y";
  s.norm_type = "ONEHOT";
  return s;
}

TEST(ShardTest, WriteThenReadBack) {
  testing::TempDir dir;
  std::string path = dir.File("part-00000.tshard");
  auto w = ShardWriter::Create(path, Schema());
  ASSERT_TRUE(w.ok());
  std::vector<float> rows = {0.5f, 1, 0, 0, 1, 1, -0.5f, 0, 1, 0, 0, 2};
  ASSERT_TRUE(w->Append(rows.data(), 1).ok());
  ASSERT_TRUE(w->Append(rows.data() + 6, 1).ok());
  ASSERT_TRUE(w->Finish().ok());
  auto r = ShardReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->rows(), 2u);
  EXPECT_EQ((*r)->floats_per_row(), 6);
  EXPECT_EQ((*r)->schema().features[1].name, "color");
  EXPECT_EQ((*r)->schema().FeatureCount(), 4);
  EXPECT_EQ((*r)->row(1)[0], -0.5f);
  EXPECT_EQ((*r)->row(1)[5], 2.0f);
  auto list = ListShards(dir.path());
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 1u);
}

TEST(ShardTest, UnfinishedShardIsNeverVisible) {
  testing::TempDir dir;
  {
    auto w = ShardWriter::Create(dir.File("part-00000.tshard"), Schema());
    ASSERT_TRUE(w.ok());
    float row[6] = {};
    ASSERT_TRUE(w->Append(row, 1).ok());
  }  // no Finish
  EXPECT_FALSE(ListShards(dir.path()).ok());
}

TEST(ShardTest, CorruptAndTruncatedFilesAreRefused) {
  testing::TempDir dir;
  std::string path = dir.File("part-00000.tshard");
  auto w = ShardWriter::Create(path, Schema());
  float rows[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  ASSERT_TRUE(w->Append(rows, 2).ok());
  ASSERT_TRUE(w->Finish().ok());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // Flip one payload byte.
  std::string flipped = bytes;
  flipped[flipped.size() - 3] ^= 0x40;
  std::string bad = dir.Write("bad.tshard", flipped);
  auto r = ShardReader::Open(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(r.status().message().find("checksum"), std::string::npos);
  // Truncate.
  std::string cut = dir.Write("cut.tshard", bytes.substr(0, bytes.size() - 4));
  auto t = ShardReader::Open(cut);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("truncated"), std::string::npos) << t.status().message();
  // Future version.
  std::string future = bytes;
  future[8] = 9;
  auto f = ShardReader::Open(dir.Write("future.tshard", future));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("version 9 is not supported"), std::string::npos);
  auto g = ShardReader::Open(dir.Write("garbage.tshard", std::string(100, 'x')));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("bad magic"), std::string::npos);
}

TEST(ShardTest, IndexFeaturesAreMarkedAndPlainShardsStayVersionOne) {
  testing::TempDir dir;
  auto read_version = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char head[12];
    in.read(head, sizeof(head));
    return static_cast<unsigned char>(head[8]);
  };
  float row[6] = {};
  std::string plain = dir.File("part-00000.tshard");
  auto w = ShardWriter::Create(plain, Schema());
  ASSERT_TRUE(w->Append(row, 1).ok() && w->Finish().ok());
  EXPECT_EQ(read_version(plain), 1);  // older readers still read it

  ShardSchema s = Schema();
  s.norm_type = "ZSCALE_INDEX";
  s.features = {{"a", 1, 1}, {"color", 2, 1, {0}, 7}, {"b", 3, 2, {1}, 4}};
  std::string marked = dir.File("part-00001.tshard");
  auto w2 = ShardWriter::Create(marked, s);
  ASSERT_TRUE(w2->Append(row, 1).ok() && w2->Finish().ok());
  EXPECT_EQ(read_version(marked), 2);
  auto r = ShardReader::Open(marked);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& f = (*r)->schema().features;
  EXPECT_TRUE(f[0].index_slots.empty());
  EXPECT_EQ(f[1].index_slots, std::vector<int>{0});
  EXPECT_EQ(f[1].index_count, 7);
  EXPECT_EQ(f[2].index_slots, std::vector<int>{1});
  EXPECT_EQ((*r)->floats_per_row(), 6);
  auto old = ShardReader::Open(plain);
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE((*old)->schema().HasIndexFeatures());
}

}  // namespace
}  // namespace tarn::data
