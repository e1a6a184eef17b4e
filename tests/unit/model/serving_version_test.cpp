#include "model/serving_version.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "model/network.h"
#include "serving/serving_test_util.h"
#include "test_util.h"

namespace tarn::model {
namespace {

ModelFile SmallModel(uint64_t seed, bool checkpoint = false) {
  ModelFile f = serving::testing::MakeModel(seed);
  if (checkpoint) {
    f.is_checkpoint = true;
    f.epoch = 3;
    f.optimizer_state.assign(4, 0.5f);
  }
  return f;
}

TEST(ServingVersionTest, WritesNumberedVersionsWithTheMarkerLast) {
  testing::TempDir tmp;
  const std::string base = tmp.File("base");  // created on demand
  auto v1 = WriteServingVersion(SmallModel(1), base);
  ASSERT_TRUE(v1.ok()) << v1.status().message();
  EXPECT_EQ(*v1, 1);
  auto v2 = WriteServingVersion(SmallModel(2), base);
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(*v2, 2);
  // An explicit number, then the next one follows the newest.
  auto v7 = WriteServingVersion(SmallModel(3), base, 7);
  ASSERT_TRUE(v7.ok());
  EXPECT_EQ(*v7, 7);
  EXPECT_EQ(*WriteServingVersion(SmallModel(4), base), 8);
  // Versions are never overwritten.
  auto again = WriteServingVersion(SmallModel(5), base, 7);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already exists"), std::string::npos);

  auto listed = ListServingVersions(base);
  ASSERT_TRUE(listed.ok());
  std::vector<int64_t> versions;
  for (const auto& e : *listed) {
    versions.push_back(e.version);
    EXPECT_TRUE(e.complete);
  }
  EXPECT_EQ(versions, (std::vector<int64_t>{1, 2, 7, 8}));

  auto manifest = ReadServingVersion(JoinPath(base, "7"));
  ASSERT_TRUE(manifest.ok()) << manifest.status().message();
  ASSERT_EQ(manifest->model_paths.size(), 1u);
  auto loaded = ModelFile::Load(manifest->model_paths[0]);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->params, SmallModel(3).params);
  // No temporary files are left behind.
  auto names = ListDirectory(JoinPath(base, "7"));
  EXPECT_EQ(*names, (std::vector<std::string>{"READY", "model0.tarn"}));
}

TEST(ServingVersionTest, BagsAndCheckpointsAndCopies) {
  testing::TempDir tmp;
  ModelFile a = SmallModel(1), b = SmallModel(2, /*checkpoint=*/true);
  auto v = WriteServingVersion({&a, &b}, tmp.path());
  ASSERT_TRUE(v.ok());
  auto m = ReadServingVersion(JoinPath(tmp.path(), "1"));
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->model_paths.size(), 2u);
  auto second = ModelFile::Load(m->model_paths[1]);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->is_checkpoint);  // served models carry no optimizer state
  EXPECT_TRUE(second->optimizer_state.empty());

  // Copies of model files, byte for byte.
  auto copied = WriteServingVersionFromFiles(m->model_paths, tmp.path());
  ASSERT_TRUE(copied.ok());
  auto m2 = ReadServingVersion(JoinPath(tmp.path(), "2"));
  ASSERT_TRUE(m2.ok());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(*ReadFile(m->model_paths[i]), *ReadFile(m2->model_paths[i]));
  }
  // A corrupt file is refused before any folder is made.
  tmp.Write("bad.tarn", "TARNMODL garbage");
  auto bad = WriteServingVersionFromFiles({tmp.File("bad.tarn")}, tmp.path());
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(PathExists(JoinPath(tmp.path(), "3")));
  EXPECT_FALSE(WriteServingVersion(std::vector<const ModelFile*>{}, tmp.path()).ok());
}

TEST(ServingVersionTest, IncompleteAndTamperedVersionsAreNotServable) {
  testing::TempDir tmp;
  ASSERT_TRUE(WriteServingVersion(SmallModel(1), tmp.path()).ok());
  // A folder without the marker: being written.
  tmp.Write("2/model0.tarn", "partial");
  // Names that are not versions are ignored.
  tmp.Write("latest/READY", "{}");
  tmp.Write("0/READY", "{}");
  tmp.Write("3x/READY", "{}");
  tmp.Write("5", "a file, not a folder");
  auto listed = ListServingVersions(tmp.path());
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_TRUE((*listed)[0].complete);
  EXPECT_EQ((*listed)[1].version, 2);
  EXPECT_FALSE((*listed)[1].complete);

  // A model file changed after the marker: its size no longer matches.
  std::string dir1 = JoinPath(tmp.path(), "1");
  tmp.Write("1/model0.tarn", "truncated");
  auto tampered = ReadServingVersion(dir1);
  ASSERT_FALSE(tampered.ok());
  EXPECT_NE(tampered.status().message().find("model0.tarn"), std::string::npos);

  // A marker cannot point outside its folder, and must be well formed.
  for (const char* marker : {R"({"format": 1, "models": ["../1/model0.tarn"], "bytes": [9]})",
                             R"({"format": 1, "models": [".."], "bytes": [9]})",
                             R"({"format": 2, "models": ["model0.tarn"], "bytes": [9]})",
                             R"({"format": 1, "models": ["model0.tarn"]})",
                             R"({"format": 1, "models": []})", R"([1, 2])", "not json"}) {
    tmp.Write("4/model0.tarn", "truncated");
    tmp.Write("4/READY", marker);
    auto r = ReadServingVersion(JoinPath(tmp.path(), "4"));
    EXPECT_FALSE(r.ok()) << marker;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << marker;
    }
  }
  // A base path that is a file is an error; a missing one is empty.
  EXPECT_FALSE(ListServingVersions(tmp.File("5")).ok());
  EXPECT_TRUE(ListServingVersions(tmp.File("absent"))->empty());
}

TEST(ServingVersionTest, ConcurrentWritersTakeDifferentNumbers) {
  testing::TempDir tmp;
  ModelFile m = SmallModel(1);
  std::vector<int64_t> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto v = WriteServingVersion(m, tmp.path());
      got[t] = v.ok() ? *v : -1;
    });
  }
  for (auto& t : threads) t.join();
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int64_t>{1, 2, 3, 4}));
}

TEST(ServingVersionTest, ExportHookWritesFinishedBagsPlusTheCurrentOne) {
  testing::TempDir tmp;
  ServingExportHook off("", 1);
  EXPECT_FALSE(off.enabled());
  EXPECT_FALSE(off.DueAfterEpoch(1));
  EXPECT_TRUE(off.ExportFinal().ok());

  ServingExportHook hook(tmp.path(), 2);
  EXPECT_FALSE(hook.DueAfterEpoch(1));
  EXPECT_TRUE(hook.DueAfterEpoch(2));
  EXPECT_TRUE(hook.DueAfterEpoch(4));
  ASSERT_TRUE(hook.ExportDuringTraining(0, SmallModel(1)).ok());  // bag 0 in training
  hook.BagDone(0, SmallModel(2));
  ASSERT_TRUE(hook.ExportDuringTraining(1, SmallModel(3)).ok());  // bag 1 in training
  hook.BagDone(1, SmallModel(4));
  ASSERT_TRUE(hook.ExportFinal().ok());
  EXPECT_EQ(hook.last_version(), 3);
  auto sizes = [&](int v) {
    return ReadServingVersion(JoinPath(tmp.path(), std::to_string(v)))->model_paths.size();
  };
  EXPECT_EQ(sizes(1), 1u);
  EXPECT_EQ(sizes(2), 2u);
  EXPECT_EQ(sizes(3), 2u);
  auto last = ReadServingVersion(JoinPath(tmp.path(), "3"));
  EXPECT_EQ(ModelFile::Load(last->model_paths[1])->params, SmallModel(4).params);

  ServingExportHook final_only(tmp.File("f"), 0);
  EXPECT_FALSE(final_only.DueAfterEpoch(1));
  EXPECT_TRUE(final_only.ExportFinal().ok());  // nothing finished: nothing written
  EXPECT_FALSE(PathExists(tmp.File("f/1")));
}

TEST(ServingVersionTest, ExportHookListsBagsInBagOrderWhateverOrderTheyFinish) {
  testing::TempDir tmp;
  ServingExportHook hook(tmp.path(), 0);
  hook.BagDone(2, SmallModel(3));  // bags trained in parallel finish in any order
  hook.BagDone(0, SmallModel(1));
  hook.BagDone(1, SmallModel(2));
  ASSERT_TRUE(hook.ExportFinal().ok());
  auto version = ReadServingVersion(JoinPath(tmp.path(), std::to_string(hook.last_version())));
  ASSERT_TRUE(version.ok()) << version.status().message();
  ASSERT_EQ(version->model_paths.size(), 3u);
  for (int bag = 0; bag < 3; ++bag) {
    EXPECT_EQ(ModelFile::Load(version->model_paths[bag])->params, SmallModel(bag + 1).params);
  }
}

TEST(ServingVersionTest, AVersionDuringParallelBagsHoldsEveryBagInBagOrder) {
  // Bags 0 and 1 train at once; bag 1 finishes first. A version exported by bag 0 still lists
  // bag 0 first, and one exported by bag 1 keeps bag 0's latest snapshot.
  testing::TempDir tmp;
  ServingExportHook hook(tmp.path(), 1);
  ASSERT_TRUE(hook.ExportDuringTraining(1, SmallModel(11)).ok());
  ASSERT_TRUE(hook.ExportDuringTraining(0, SmallModel(1)).ok());
  hook.BagDone(1, SmallModel(12));
  ASSERT_TRUE(hook.ExportDuringTraining(0, SmallModel(2)).ok());
  auto params = [&](int64_t v) {
    std::vector<std::vector<float>> out;
    auto version = ReadServingVersion(JoinPath(tmp.path(), std::to_string(v)));
    EXPECT_TRUE(version.ok()) << version.status().message();
    if (!version.ok()) return out;
    for (const auto& p : version->model_paths) out.push_back(ModelFile::Load(p)->params);
    return out;
  };
  EXPECT_EQ(params(1), (std::vector<std::vector<float>>{SmallModel(11).params}));
  EXPECT_EQ(params(2),
            (std::vector<std::vector<float>>{SmallModel(1).params, SmallModel(11).params}));
  EXPECT_EQ(params(3),
            (std::vector<std::vector<float>>{SmallModel(2).params, SmallModel(12).params}));
}

TEST(ServingVersionTest, ListsModelFilesInBagOrder) {
  testing::TempDir tmp;
  EXPECT_FALSE(ListModelFiles(tmp.path()).ok());
  for (const char* n : {"model10.tarn", "model2.tarn", "model0.tarn", "model1-3.tarn",
                        "modelx.tarn", "notes.txt"}) {
    tmp.Write(n, "x");
  }
  auto files = ListModelFiles(tmp.path());
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 3u);
  EXPECT_EQ(BaseName((*files)[0]), "model0.tarn");
  EXPECT_EQ(BaseName((*files)[1]), "model2.tarn");
  EXPECT_EQ(BaseName((*files)[2]), "model10.tarn");
}

}  // namespace
}  // namespace tarn::model
