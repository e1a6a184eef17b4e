#include "serving/version_mirror.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "common/files.h"
#include "model/serving_version.h"
#include "serving/version_manager.h"
#include "serving_test_util.h"
#include "test_util.h"

namespace tarn::serving {
namespace {

// The mirror reaches its remote through data::FileSystemFor, so a local folder stands in for
// HDFS here; tests/integration/test_serving_hdfs.py runs it against the mini HDFS.
std::vector<int64_t> Cached(const std::string& cache) {
  std::vector<int64_t> out;
  const auto listed = model::ListServingVersions(cache);
  EXPECT_TRUE(listed.ok()) << listed.status().message();
  if (!listed.ok()) return out;
  for (const auto& e : *listed) {
    EXPECT_TRUE(e.complete) << e.dir;
    out.push_back(e.version);
  }
  return out;
}

TEST(VersionMirrorTest, CopiesOnlyCompleteVersionsAndPrunesByPolicy) {
  tarn::testing::TempDir tmp;
  const std::string remote = JoinPath(tmp.path(), "remote"), cache = JoinPath(tmp.path(), "c");
  ASSERT_TRUE(MakeDirs(remote).ok());
  VersionMirror mirror(remote, cache, VersionPolicy::Parse("latest:1").value());
  mirror.Sync({});
  EXPECT_TRUE(Cached(cache).empty());

  ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(1), remote, 1).ok());
  tmp.Write("remote/2/model0.tarn", "half written, no marker yet");
  mirror.Sync({});
  EXPECT_EQ(Cached(cache), (std::vector<int64_t>{1}));

  // 2 completes; 1 is pruned only once it is no longer loaded.
  ASSERT_TRUE(RemoveAll(JoinPath(remote, "2")).ok());
  ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(2), remote, 2).ok());
  mirror.Sync({1});
  EXPECT_EQ(Cached(cache), (std::vector<int64_t>{1, 2}));
  mirror.Sync({2});
  EXPECT_EQ(Cached(cache), (std::vector<int64_t>{2}));

  // A marker that does not describe its files (a file shorter than recorded) is not cached,
  // and not fetched again until the marker changes.
  ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(3), remote, 3).ok());
  const std::string f3 = JoinPath(remote, "3/model0.tarn");
  std::string good = ReadFile(f3).value();
  ASSERT_TRUE(WriteFileAtomic(f3, good.substr(0, good.size() / 2)).ok());
  mirror.Sync({2});
  EXPECT_EQ(Cached(cache), (std::vector<int64_t>{2}));
  EXPECT_FALSE(PathExists(JoinPath(cache, ".fetch-3")));
  ASSERT_TRUE(WriteFileAtomic(f3, good).ok());
  mirror.Sync({2});
  EXPECT_EQ(Cached(cache), (std::vector<int64_t>{2}));  // the same marker: not retried
  // The marker rewritten (its time moves on): fetched again, now whole.
  const std::filesystem::path marker = JoinPath(remote, "3/READY");
  std::filesystem::last_write_time(
      marker, std::filesystem::last_write_time(marker) + std::chrono::seconds(1));
  mirror.Sync({2});
  EXPECT_EQ(Cached(cache), (std::vector<int64_t>{2, 3}));  // 2 still loaded
}

TEST(VersionMirrorTest, UnreachableRemoteKeepsTheCache) {
  tarn::testing::TempDir tmp;
  const std::string remote = JoinPath(tmp.path(), "remote"), cache = JoinPath(tmp.path(), "c");
  ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(1), remote, 1).ok());
  VersionMirror mirror(remote, cache, VersionPolicy::Parse("latest:2").value());
  mirror.Sync({});
  ASSERT_TRUE(RemoveAll(remote).ok());  // listing fails
  mirror.Sync({});
  EXPECT_EQ(Cached(cache), (std::vector<int64_t>{1}));
}

TEST(VersionMirrorTest, SpecificPolicyFetchesOnlyItsVersions) {
  tarn::testing::TempDir tmp;
  const std::string remote = JoinPath(tmp.path(), "remote"), cache = JoinPath(tmp.path(), "c");
  for (int v = 1; v <= 3; ++v) {
    ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(v), remote, v).ok());
  }
  VersionMirror mirror(remote, cache, VersionPolicy::Parse("specific:1,3").value());
  mirror.Sync({});
  EXPECT_EQ(Cached(cache), (std::vector<int64_t>{1, 3}));
}

TEST(VersionMirrorTest, ManagerServesARemoteBaseThroughItsCache) {
  tarn::testing::TempDir tmp;
  const std::string remote = JoinPath(tmp.path(), "remote"), cache = JoinPath(tmp.path(), "c");
  VersionManager::Options o;
  o.base_dir = cache;
  o.remote_base = remote;
  VersionManager m(o);
  ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(1), remote, 1).ok());
  m.PollOnce();
  ASSERT_NE(m.state()->newest(), nullptr);
  EXPECT_EQ(m.state()->newest()->version(), 1);
  ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(2), remote, 2).ok());
  m.PollOnce();
  EXPECT_EQ(m.state()->newest()->version(), 2);
  m.PollOnce();  // 1 is unloaded now: its cached copy goes
  EXPECT_EQ(Cached(cache), (std::vector<int64_t>{2}));
}

}  // namespace
}  // namespace tarn::serving
