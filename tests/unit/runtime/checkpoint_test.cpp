// Distributed checkpoints: slices and manifests, and what a resume may read.
#include "runtime/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/checksum.h"
#include "common/files.h"
#include "runtime/job.h"
#include "runtime/protocol.h"
#include "test_util.h"

namespace tarn::runtime {
namespace {

using tarn::testing::TempDir;

Manifest WriteEpoch(const TempDir& dir, int epoch, float value) {
  Manifest m;
  m.bag = 0;
  m.epoch = epoch;
  m.fingerprint = "f";
  for (int ps = 0; ps < 2; ++ps) {
    Slice s;
    s.epoch = epoch;
    s.ps = ps;
    s.begin = ps * 3;
    s.end = ps * 3 + 3;
    s.params.assign(3, value + ps);
    s.optimizer_state = {1, 2};
    std::string path = dir.File(SliceName(0, epoch, ps));
    auto crc = WriteSlice(path, s);
    EXPECT_TRUE(crc.ok());
    m.slices.push_back({path, *crc, s.begin, s.end});
  }
  EXPECT_TRUE(WriteManifest(dir.path(), m).ok());
  return m;
}

TEST(CheckpointTest, SliceRoundTripAndCorruptionIsNamed) {
  TempDir dir;
  Manifest m = WriteEpoch(dir, 1, 5.0f);
  auto s = ReadSlice(m.slices[1].path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->params, std::vector<float>(3, 6.0f));
  EXPECT_EQ(s->begin, 3u);
  EXPECT_EQ(s->optimizer_state, (std::vector<float>{1, 2}));
  // A flipped byte and a truncation are both refused with the file's name.
  std::string bytes = *ReadFile(m.slices[1].path);
  bytes[bytes.size() / 2] ^= 1;
  ASSERT_TRUE(WriteFileAtomic(m.slices[1].path, bytes).ok());
  auto bad = ReadSlice(m.slices[1].path);
  EXPECT_EQ(bad.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(bad.status().message().find(m.slices[1].path), std::string::npos);
  ASSERT_TRUE(WriteFileAtomic(m.slices[1].path, bytes.substr(0, 20)).ok());
  EXPECT_FALSE(ReadSlice(m.slices[1].path).ok());
}

TEST(CheckpointTest, NewestCompleteManifestWinsAndBrokenOnesAreSkipped) {
  TempDir dir;
  WriteEpoch(dir, 1, 1.0f);
  WriteEpoch(dir, 2, 2.0f);
  Manifest third = WriteEpoch(dir, 3, 3.0f);
  auto m = NewestManifest(dir.path());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->epoch, 3);
  // Epoch 3's second slice goes missing (a crash between slice and manifest
  // cannot do this, but a lost file can): epoch 2 is the newest complete one.
  std::filesystem::remove(third.slices[1].path);
  m = NewestManifest(dir.path());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->epoch, 2);
  // A half-written manifest (never renamed into place) is invisible; a
  // garbled one is skipped.
  std::ofstream(dir.File(ManifestName(0, 4))) << "{\"slices\": [";
  m = NewestManifest(dir.path());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->epoch, 2);
  PruneCheckpoints(dir.path(), 0, 2, 1);
  EXPECT_FALSE(std::filesystem::exists(dir.File(ManifestName(0, 1))));
  EXPECT_FALSE(std::filesystem::exists(dir.File(SliceName(0, 1, 0))));
  EXPECT_TRUE(std::filesystem::exists(dir.File(ManifestName(0, 2))));
  TempDir empty;
  EXPECT_EQ(NewestManifest(empty.path()).status().code(), StatusCode::kNotFound);
}

TEST(CheckpointTest, AManifestNamesItsOwnFilesNotJustIntactOnes) {
  TempDir dir;
  WriteEpoch(dir, 1, 1.0f);
  Manifest second = WriteEpoch(dir, 2, 2.0f);
  EXPECT_NE(second.slices[0].crc, second.slices[1].crc);
  // Epoch 2's first slice is replaced by another intact slice (a stale write
  // landing late): its checksum is not the recorded one, so epoch 1 wins.
  ASSERT_TRUE(WriteFileAtomic(second.slices[0].path, *ReadFile(dir.File(SliceName(0, 1, 0)))).ok());
  auto m = NewestManifest(dir.path());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->epoch, 1);
  // A manifest of the earlier format (the whole file's CRC, one residue for
  // every intact file) still resumes.
  Manifest legacy = WriteEpoch(dir, 3, 3.0f);
  for (auto& e : legacy.slices) {
    const std::string whole = *ReadFile(e.path);
    e.crc = Crc32c(0, whole.data(), whole.size());
  }
  ASSERT_TRUE(WriteManifest(dir.path(), legacy).ok());
  m = NewestManifest(dir.path());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->epoch, 3);
}

TEST(ProtocolTest, SlicesAreContiguousAndBalanced) {
  for (size_t count : {1u, 7u, 100u, 1001u}) {
    for (int parts = 1; parts <= 5 && static_cast<size_t>(parts) <= count; ++parts) {
      size_t next = 0;
      for (int i = 0; i < parts; ++i) {
        auto [b, e] = SliceRange(count, parts, i);
        EXPECT_EQ(b, next);
        EXPECT_GE(e - b, count / parts);
        EXPECT_LE(e - b, count / parts + 1);
        next = e;
      }
      EXPECT_EQ(next, count);
    }
  }
}

TEST(JobTest, JsonRoundTripAndBadValuesAreRefused) {
  JobConfig j;
  j.inputs = 12;
  j.shard_paths = {"/a", "/b"};
  j.consistency = Consistency::kSsp;
  j.staleness = 4;
  j.train_params = {{"LearningRate", 0.1}};
  auto back = JobConfig::FromJson(j.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ToJson(), j.ToJson());
  auto json = j.ToJson();
  json["workers"] = 0;
  EXPECT_FALSE(JobConfig::FromJson(json).ok());
  json = j.ToJson();
  json.erase("shards");
  EXPECT_FALSE(JobConfig::FromJson(json).ok());
  EXPECT_FALSE(ParseConsistency("eventual").ok());
  EXPECT_EQ(*ParseConsistency("ASYNC"), Consistency::kAsync);
}

}  // namespace
}  // namespace tarn::runtime
