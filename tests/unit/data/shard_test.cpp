#include "data/shard.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/checksum.h"
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

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

ShardSchema IdSchema() {
  ShardSchema s = Schema();
  s.norm_type = "ZSCALE_INDEX";
  s.features = {{"a", 1, 1}, {"color", 2, 1, {0}, 4}};
  s.id_columns = {{"color", 2, IdKind::kIndex, 4}, {"merchant", 5, IdKind::kHash, 1u << 30, 7}};
  return s;
}

// Records of 4 floats (a, color, target, weight) then 2 uint32 ids.
std::string IdRecords(const std::vector<std::pair<uint32_t, uint32_t>>& ids) {
  std::string out;
  float f = 0;
  for (const auto& [color, merchant] : ids) {
    const float floats[4] = {f, static_cast<float>(color), 1, 1};
    f += 0.5f;
    out.append(reinterpret_cast<const char*>(floats), sizeof(floats));
    out.append(reinterpret_cast<const char*>(&color), 4);
    out.append(reinterpret_cast<const char*>(&merchant), 4);
  }
  return out;
}

TEST(ShardTest, IdColumnsRoundTripAsIntegersInVersionThree) {
  testing::TempDir dir;
  std::string path = dir.File("part-00000.tshard");
  auto w = ShardWriter::Create(path, IdSchema());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->RecordBytes(), 24u);
  // A merchant id far above 2^24, which a float32 would round.
  const uint32_t big = (1u << 30) - 3;
  std::string first = IdRecords({{0, big}, {3, 16777217}});
  std::string second = IdRecords({{2, 0}});
  ASSERT_TRUE(w->AppendRecords(first.data(), 2).ok());
  ASSERT_TRUE(w->AppendRecords(second.data(), 1).ok());
  ASSERT_TRUE(w->Finish().ok());
  EXPECT_EQ(static_cast<unsigned char>(ReadBytes(path)[8]), 3);
  auto r = ShardReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->rows(), 3u);
  EXPECT_EQ((*r)->floats_per_row(), 4);
  EXPECT_EQ((*r)->ids_per_row(), 2);
  EXPECT_EQ((*r)->schema().id_columns, IdSchema().id_columns);
  EXPECT_EQ((*r)->ids(0)[0], 0u);
  EXPECT_EQ((*r)->ids(0)[1], big);
  EXPECT_EQ((*r)->ids(1)[0], 3u);
  EXPECT_EQ((*r)->ids(1)[1], 16777217u);
  EXPECT_EQ((*r)->ids(2)[0], 2u);
  EXPECT_EQ((*r)->row(1)[1], 3.0f);  // the float layout is unchanged
  EXPECT_EQ((*r)->row(2)[0], 0.0f);
}

// Heap bytes in use (glibc): arenas plus mmapped blocks.
size_t HeapInUse() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

TEST(ShardTest, IdsOfManyRowsAreSpilledNotHeldInMemoryAndRoundTrip) {
  testing::TempDir dir;
  std::string path = dir.File("part-00000.tshard");
  constexpr uint32_t kRows = 400000, kPerCall = 1000;  // 3.2 MB of ids, several copy chunks
  std::vector<std::pair<uint32_t, uint32_t>> batch(kPerCall);
  {
    auto w = ShardWriter::Create(path, IdSchema());
    ASSERT_TRUE(w.ok());
    const size_t heap_before = HeapInUse();
    for (uint32_t r0 = 0; r0 < kRows; r0 += kPerCall) {
      for (uint32_t i = 0; i < kPerCall; ++i) batch[i] = {(r0 + i) % 4, (r0 + i) * 2654u + 7};
      const std::string records = IdRecords(batch);
      ASSERT_TRUE(w->AppendRecords(records.data(), kPerCall).ok());
    }
    // The ids written so far live in the spill file, not on the heap.
    EXPECT_LT(HeapInUse(), heap_before + (1u << 20));
    // The spill is unlinked: the folder holds only the shard's temporary file.
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                            std::filesystem::directory_iterator()),
              1);
    ASSERT_TRUE(w->Finish().ok());
  }
  auto r = ShardReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)->rows(), kRows);
  for (uint32_t i = 0; i < kRows; ++i) {
    ASSERT_EQ((*r)->ids(i)[0], i % 4) << i;
    ASSERT_EQ((*r)->ids(i)[1], i * 2654u + 7) << i;
  }
  EXPECT_EQ((*r)->row(kRows - 1)[1], static_cast<float>((kRows - 1) % 4));
  // An abandoned writer leaves nothing behind, spill included.
  {
    auto w = ShardWriter::Create(dir.File("part-00001.tshard"), IdSchema());
    const std::string records = IdRecords({{1, 2}});
    ASSERT_TRUE(w->AppendRecords(records.data(), 1).ok());
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            1);
}

TEST(ShardTest, DamagedIdSectionIsRefusedWithTheFileNamed) {
  testing::TempDir dir;
  std::string path = dir.File("part-00000.tshard");
  auto w = ShardWriter::Create(path, IdSchema());
  std::string records = IdRecords({{1, 5}, {2, 6}});
  ASSERT_TRUE(w->AppendRecords(records.data(), 2).ok() && w->Finish().ok());
  const std::string bytes = ReadBytes(path);
  // The last 4 bytes are the ids' checksum, the 16 before them the ids.
  auto refused = [&](const std::string& name, const std::string& contents) {
    std::string p = dir.Write(name, contents);
    auto r = ShardReader::Open(p);
    EXPECT_FALSE(r.ok()) << name;
    if (r.ok()) return std::string();
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(r.status().message().find(p), std::string::npos) << r.status().message();
    return r.status().message();
  };
  EXPECT_NE(refused("cut.tshard", bytes.substr(0, bytes.size() - 6)).find("truncated"),
            std::string::npos);
  std::string flipped = bytes;
  flipped[flipped.size() - 8] ^= 0x01;  // merchant id of row 1
  EXPECT_NE(refused("flipped.tshard", flipped).find("id section checksum mismatch"),
            std::string::npos);
  // An id outside its vocabulary with a checksum that matches: a bad writer.
  std::string outside = bytes;
  const size_t ids_at = outside.size() - 4 - 16;
  const uint32_t color = 4;  // vocabulary 4: ids 0..3
  std::memcpy(&outside[ids_at], &color, 4);
  const uint32_t crc = Crc32c(0, outside.data() + ids_at, 16);
  std::memcpy(&outside[outside.size() - 4], &crc, 4);
  EXPECT_NE(refused("outside.tshard", outside).find("row 0 has id 4 for column 'color'"),
            std::string::npos);
  // A header that lists id columns in a version 2 file.
  std::string v2 = bytes;
  v2[8] = 2;
  EXPECT_NE(refused("v2.tshard", v2).find("cannot carry id columns"), std::string::npos);
}

// A version 1 shard laid out byte by byte as tarn wrote it before ids
// existed (this file's format history), independent of ShardWriter.
TEST(ShardTest, HandWrittenVersionOneShardStillReads) {
  const std::string json =
      R"({"features":[{"columnNum":1,"name":"a","width":1}],"normType":"ZSCALE","target":"y"})";
  const float payload[3] = {0.25f, 1, 2};
  std::string file(40, '\0');
  std::memcpy(file.data(), "TARNSHRD", 8);
  auto put32 = [&](size_t at, uint32_t v) { std::memcpy(&file[at], &v, 4); };
  put32(8, 1);
  put32(12, static_cast<uint32_t>(json.size()));
  const uint64_t rows = 1;
  std::memcpy(&file[16], &rows, 8);
  put32(24, 3);
  put32(28, Crc32c(0, payload, sizeof(payload)));
  put32(32, Crc32c(0, json.data(), json.size()));
  file += json;
  file.resize((file.size() + 63) / 64 * 64, '\0');
  file.append(reinterpret_cast<const char*>(payload), sizeof(payload));
  testing::TempDir dir;
  auto r = ShardReader::Open(dir.Write("part-00000.tshard", file));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->rows(), 1u);
  EXPECT_EQ((*r)->row(0)[0], 0.25f);
  EXPECT_EQ((*r)->ids_per_row(), 0);
  EXPECT_TRUE((*r)->schema().id_columns.empty());
}

}  // namespace
}  // namespace tarn::data
