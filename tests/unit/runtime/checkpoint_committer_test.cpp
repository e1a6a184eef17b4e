// The checkpoint committer: a manifest is written only once every slice the
// servers write behind is in place, in order, and a roll back drops what a
// lost server never wrote.
#include "runtime/checkpoint_committer.h"

#include <gtest/gtest.h>

#include <chrono>

#include "data/file_system.h"
#include "runtime/checkpoint.h"
#include "test_util.h"

namespace tarn::runtime {
namespace {

using namespace std::chrono_literals;
using tarn::testing::TempDir;

// A checkpoint of two servers' slices, encoded but not written (as a server
// holds it when it answers), with the bytes each file will have.
struct Taken {
  Manifest manifest;
  std::vector<EncodedSlice> slices;
  std::vector<uint64_t> sizes() const {
    std::vector<uint64_t> out;
    for (const auto& s : slices) out.push_back(s.bytes.size());
    return out;
  }
  void Write(size_t i) const {
    ASSERT_TRUE(WriteWhole(manifest.slices[i].path, slices[i].bytes).ok());
  }
};

Taken Take(const TempDir& dir, int epoch) {
  Taken t;
  t.manifest.epoch = epoch;
  t.manifest.fingerprint = "f";
  for (int ps = 0; ps < 2; ++ps) {
    Slice s;
    s.epoch = epoch;
    s.ps = ps;
    s.begin = ps * 2;
    s.end = ps * 2 + 2;
    s.params.assign(2, static_cast<float>(epoch * 10 + ps));
    t.slices.push_back(EncodeSlice(s));
    t.manifest.slices.push_back(
        {dir.File(SliceName(0, epoch, ps)), t.slices.back().crc, s.begin, s.end});
  }
  return t;
}

TEST(CheckpointCommitterTest, CommitsOnlyOnceEverySliceIsWritten) {
  TempDir dir;
  CheckpointCommitter committer(dir.path(), 2);
  Taken one = Take(dir, 1);
  committer.Submit(one.manifest, one.sizes());
  one.Write(0);
  Status waiting = committer.Drain(50ms);
  ASSERT_EQ(waiting.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(waiting.message().find(one.manifest.slices[1].path), std::string::npos)
      << waiting.message();
  EXPECT_EQ(NewestManifest(dir.path()).status().code(), StatusCode::kNotFound);
  one.Write(1);
  ASSERT_TRUE(committer.Drain(30s).ok());
  auto newest = NewestManifest(dir.path());
  ASSERT_TRUE(newest.ok()) << newest.status().message();
  EXPECT_EQ(newest->epoch, 1);
  EXPECT_EQ(committer.committed(), 1);
}

TEST(CheckpointCommitterTest, ManifestsAreCommittedInOrderAndOldOnesPruned) {
  TempDir dir;
  CheckpointCommitter committer(dir.path(), 2);
  std::vector<Taken> taken;
  for (int epoch = 1; epoch <= 4; ++epoch) taken.push_back(Take(dir, epoch));
  for (const auto& t : taken) committer.Submit(t.manifest, t.sizes());
  // Epoch 2's slices are in place before epoch 1's: nothing is committed
  // until epoch 1 is.
  taken[1].Write(0);
  taken[1].Write(1);
  EXPECT_EQ(committer.Drain(50ms).code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(committer.committed(), 0);
  for (size_t i : {0, 2, 3}) {
    taken[i].Write(0);
    taken[i].Write(1);
  }
  ASSERT_TRUE(committer.Drain(30s).ok());
  EXPECT_EQ(committer.committed(), 4);
  EXPECT_EQ(NewestManifest(dir.path())->epoch, 4);
  // Two kept: epoch 3 and 4; epoch 1's and 2's files are gone.
  EXPECT_FALSE(data::PathExistsAnywhere(taken[0].manifest.slices[0].path));
  EXPECT_FALSE(data::PathExistsAnywhere(dir.File(ManifestName(0, 2))));
  EXPECT_TRUE(data::PathExistsAnywhere(dir.File(ManifestName(0, 3))));
}

TEST(CheckpointCommitterTest, SettleCommitsWhatIsCompleteAndDropsTheRest) {
  TempDir dir;
  CheckpointCommitter committer(dir.path(), 2);
  Taken one = Take(dir, 1), two = Take(dir, 2);
  committer.Submit(one.manifest, one.sizes());
  committer.Submit(two.manifest, two.sizes());
  one.Write(0);
  one.Write(1);
  two.Write(0);  // server 1 was lost before it wrote epoch 2's slice
  committer.Settle();
  EXPECT_EQ(NewestManifest(dir.path())->epoch, 1);
  EXPECT_FALSE(data::PathExistsAnywhere(dir.File(ManifestName(0, 2))));
  EXPECT_TRUE(committer.Drain(0ms).ok());  // nothing is left waiting
}

TEST(CheckpointCommitterTest, ASliceOfTheWrongSizeIsNotCommitted) {
  TempDir dir;
  CheckpointCommitter committer(dir.path(), 2);
  Taken one = Take(dir, 1);
  committer.Submit(one.manifest, one.sizes());
  one.Write(0);
  ASSERT_TRUE(WriteWhole(one.manifest.slices[1].path, "short").ok());
  EXPECT_EQ(committer.Drain(50ms).code(), StatusCode::kDeadlineExceeded);
  committer.Settle();
  EXPECT_EQ(NewestManifest(dir.path()).status().code(), StatusCode::kNotFound);
}

// Early stopping's best epoch: the first checkpoint to name its file writes
// it (before its manifest), later ones name it again; pruning keeps a best
// file while a kept manifest names it, and a resume reads it back.
TEST(CheckpointCommitterTest, TheBestEpochsFileIsWrittenOnceAndKeptWhileAManifestNamesIt) {
  TempDir dir;
  CheckpointCommitter committer(dir.path(), 2);
  const std::vector<float> best1 = {1, 2, 3}, best3 = {4, 5, 6};
  auto take = [&](int epoch, int best_epoch, const std::vector<float>& best, bool first) {
    Taken t = Take(dir, epoch);
    const EncodedSlice encoded = EncodeBestParams(0, best_epoch, best);
    t.manifest.best =
        Manifest::Best{dir.File(BestParamsName(0, best_epoch)), encoded.crc, best_epoch};
    committer.Submit(t.manifest, t.sizes(), first ? encoded.bytes : std::string());
    t.Write(0);
    t.Write(1);
    ASSERT_TRUE(committer.Drain(30s).ok());
  };
  take(1, 1, best1, true);
  take(2, 1, best1, false);
  take(3, 1, best1, false);
  // Epochs 2 and 3 are kept; both name epoch 1's best file.
  ASSERT_TRUE(data::PathExistsAnywhere(dir.File(BestParamsName(0, 1))));
  auto newest = NewestManifest(dir.path());
  ASSERT_TRUE(newest.ok()) << newest.status().message();
  ASSERT_TRUE(newest->best.has_value());
  EXPECT_EQ(newest->best->epoch, 1);
  auto read = ReadSlice(newest->best->path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->params, best1);
  take(4, 4, best3, true);
  // Epoch 3's manifest is kept and still names epoch 1's file.
  EXPECT_TRUE(data::PathExistsAnywhere(dir.File(BestParamsName(0, 1))));
  take(5, 4, best3, false);
  EXPECT_FALSE(data::PathExistsAnywhere(dir.File(BestParamsName(0, 1))));
  EXPECT_EQ(ReadSlice(NewestManifest(dir.path())->best->path)->params, best3);
  // A manifest whose best file is gone is not resumed from.
  ASSERT_TRUE(
      data::FileSystemFor(dir.path()).value()->Delete(dir.File(BestParamsName(0, 4)), false).ok());
  EXPECT_EQ(NewestManifest(dir.path()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tarn::runtime
