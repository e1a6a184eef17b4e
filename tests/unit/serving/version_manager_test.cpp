#include "serving/version_manager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "model/serving_version.h"
#include "serving_test_util.h"
#include "test_util.h"

namespace tarn::serving {
namespace {

std::vector<int64_t> Served(const VersionManager& m) {
  std::vector<int64_t> out;
  for (const auto& v : m.state()->versions) out.push_back(v->version());
  return out;
}

VersionManager::Options Numbered(const std::string& base, const std::string& policy = "latest") {
  VersionManager::Options o;
  o.base_dir = base;
  o.policy = VersionPolicy::Parse(policy).value();
  o.poll_interval_ms = 20;
  return o;
}

TEST(VersionPolicyTest, Parses) {
  EXPECT_EQ(VersionPolicy::Parse("latest")->latest, 1);
  EXPECT_EQ(VersionPolicy::Parse("LATEST:3")->latest, 3);
  auto s = VersionPolicy::Parse("specific:4, 2,4");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, VersionPolicy::Kind::kSpecific);
  EXPECT_EQ(s->specific, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(s->ToString(), "specific:4,2");
  EXPECT_EQ(VersionPolicy::Parse("7")->specific, (std::vector<int64_t>{7}));
  for (const char* bad : {"latest:0", "latest:x", "specific:", "specific:-1", "newest", ""}) {
    EXPECT_FALSE(VersionPolicy::Parse(bad).ok()) << bad;
  }
}

TEST(VersionManagerTest, ServesTheNewestCompleteVersionAndSkipsBadOnes) {
  tarn::testing::TempDir tmp;
  const std::string base = tmp.path();
  VersionManager m(Numbered(base));
  m.PollOnce();  // nothing yet
  EXPECT_TRUE(Served(m).empty());
  ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(1), base).ok());
  ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(2), base).ok());
  m.PollOnce();
  EXPECT_EQ(Served(m), (std::vector<int64_t>{2}));
  auto old_state = m.state();  // an in-flight request holding version 2

  // 3: half-written (no marker yet). 4: corrupt.
  tmp.Write("3/model0.tarn", "half");
  ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(4), base, 4).ok());
  std::string f4 = JoinPath(base, "4/model0.tarn");
  std::string bytes = *ReadFile(f4);
  bytes[bytes.size() / 2] ^= 0x55;  // same size, bad checksum
  ASSERT_TRUE(WriteFileAtomic(f4, bytes).ok());
  m.PollOnce();
  EXPECT_EQ(Served(m), (std::vector<int64_t>{2}));
  auto statuses = m.Statuses();
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_EQ(statuses[0].version, 4);
  EXPECT_EQ(statuses[0].state, "END");
  EXPECT_NE(statuses[0].error.find("model0.tarn"), std::string::npos) << statuses[0].error;
  EXPECT_EQ(statuses[1].state, "AVAILABLE");

  // 3 completes: it is older than the failed 4, so it is the newest good one.
  auto good3 = testing::MakeModel(3);
  ASSERT_TRUE(RemoveAll(JoinPath(base, "3")).ok());
  ASSERT_TRUE(model::WriteServingVersion(good3, base, 3).ok());
  m.PollOnce();
  EXPECT_EQ(Served(m), (std::vector<int64_t>{3}));
  // The old state still works for whoever holds it.
  ASSERT_NE(old_state->Find(2), nullptr);
  float row[2] = {0, 0};
  double score;
  old_state->Find(2)->Score(row, 1, &score);
  EXPECT_TRUE(std::isfinite(score));

  // A repaired version 4 (new marker) is retried.
  ASSERT_TRUE(RemoveAll(JoinPath(base, "4")).ok());
  ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(4), base, 4).ok());
  m.PollOnce();
  EXPECT_EQ(Served(m), (std::vector<int64_t>{4}));
  EXPECT_EQ(m.Statuses().size(), 1u);

  // All versions removed from disk: keep serving what is loaded.
  ASSERT_TRUE(RemoveAll(JoinPath(base, "4")).ok());
  ASSERT_TRUE(RemoveAll(JoinPath(base, "3")).ok());
  ASSERT_TRUE(RemoveAll(JoinPath(base, "2")).ok());
  ASSERT_TRUE(RemoveAll(JoinPath(base, "1")).ok());
  m.PollOnce();
  EXPECT_EQ(Served(m), (std::vector<int64_t>{4}));
}

TEST(VersionManagerTest, ReplacedVersionsAreFreedWhenTheLastRequestEnds) {
  tarn::testing::TempDir tmp;
  VersionManager m(Numbered(tmp.path()));
  std::vector<std::weak_ptr<const Servable>> old;
  std::shared_ptr<const ServingState> held;
  for (int v = 1; v <= 20; ++v) {
    ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(v), tmp.path()).ok());
    m.PollOnce();
    ASSERT_EQ(m.state()->newest()->version(), v);
    old.emplace_back(m.state()->versions[0]);
    if (v == 10) held = m.state();  // a request still running on version 10
  }
  int alive = 0;
  for (const auto& w : old) alive += !w.expired();
  EXPECT_EQ(alive, 2);  // the served version 20 and the held version 10
  EXPECT_FALSE(old[9].expired());
  held.reset();
  EXPECT_TRUE(old[9].expired());
  EXPECT_FALSE(old[19].expired());
}

TEST(VersionManagerTest, LatestNAndSpecificPolicies) {
  tarn::testing::TempDir tmp;
  for (int v = 1; v <= 4; ++v) {
    ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(v), tmp.path()).ok());
  }
  VersionManager latest2(Numbered(tmp.path(), "latest:2"));
  latest2.PollOnce();
  EXPECT_EQ(Served(latest2), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(latest2.state()->newest()->version(), 4);
  EXPECT_NE(latest2.state()->Find(3), nullptr);
  EXPECT_EQ(latest2.state()->Find(2), nullptr);

  VersionManager specific(Numbered(tmp.path(), "specific:1,3,9"));
  specific.PollOnce();
  EXPECT_EQ(Served(specific), (std::vector<int64_t>{3, 1}));  // 9 does not exist
  // A new version does not change a specific policy.
  ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(5), tmp.path()).ok());
  specific.PollOnce();
  EXPECT_EQ(Served(specific), (std::vector<int64_t>{3, 1}));
  latest2.PollOnce();
  EXPECT_EQ(Served(latest2), (std::vector<int64_t>{5, 4}));
}

TEST(VersionManagerTest, BackgroundPollingPicksUpNewVersions) {
  tarn::testing::TempDir tmp;
  ServingMetrics metrics;
  auto o = Numbered(tmp.path());
  o.metrics = &metrics;
  VersionManager m(o);
  m.Start();
  ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(1), tmp.path()).ok());
  for (int i = 0; i < 500 && Served(m).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(Served(m), (std::vector<int64_t>{1}));
  m.Stop();
  m.Stop();  // idempotent
  std::string text = metrics.Render("m", {1});
  EXPECT_NE(text.find("tarn_serving_version_loads_total{result=\"ok\"} 1"), std::string::npos);
}

TEST(VersionManagerTest, FlatModeReloadsChangedModelFiles) {
  tarn::testing::TempDir tmp;
  VersionManager::Options o;
  o.base_dir = tmp.path();
  o.flat = true;
  VersionManager m(o);
  m.PollOnce();
  EXPECT_TRUE(Served(m).empty());  // no models yet
  ASSERT_TRUE(testing::MakeModel(1).Save(tmp.File("model0.tarn")).ok());
  m.PollOnce();  // the first models load at once
  EXPECT_EQ(Served(m), (std::vector<int64_t>{1}));
  m.PollOnce();
  EXPECT_EQ(Served(m), (std::vector<int64_t>{1}));  // unchanged
  ASSERT_TRUE(testing::MakeModel(2).Save(tmp.File("model0.tarn")).ok());
  ASSERT_TRUE(testing::MakeModel(3).Save(tmp.File("model1.tarn")).ok());
  m.PollOnce();  // changed: wait one interval for the writer to finish
  EXPECT_EQ(Served(m), (std::vector<int64_t>{1}));
  m.PollOnce();
  ASSERT_EQ(Served(m), (std::vector<int64_t>{2}));
  EXPECT_EQ(m.state()->newest()->bags(), 2);
  // A corrupt rewrite is skipped; the served version stays.
  tmp.Write("model1.tarn", "broken");
  m.PollOnce();
  m.PollOnce();
  EXPECT_EQ(Served(m), (std::vector<int64_t>{2}));
  ASSERT_FALSE(m.Statuses().empty());
  EXPECT_EQ(m.Statuses()[0].state, "END");
}

}  // namespace
}  // namespace tarn::serving
