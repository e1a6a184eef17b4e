#include "serving/servable.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "model/scorer.h"
#include "serving_test_util.h"
#include "test_util.h"

namespace tarn::serving {
namespace {

using testing::CategoricalColumn;
using testing::MakeModel;
using testing::NumericColumn;

std::vector<std::string> SaveModels(const tarn::testing::TempDir& tmp,
                                    const std::vector<model::ModelFile>& models) {
  std::vector<std::string> paths;
  for (size_t i = 0; i < models.size(); ++i) {
    std::string p = tmp.File("model" + std::to_string(i) + ".tarn");
    EXPECT_TRUE(models[i].Save(p).ok());
    paths.push_back(p);
  }
  return paths;
}

// What tarn eval computes for one record: each model's Scorer on the raw
// fields, then the mean.
double EvalScore(const std::vector<model::ModelFile>& models,
                 const std::vector<std::pair<std::string, std::string>>& record) {
  double sum = 0;
  for (const auto& f : models) {
    auto scorer = model::Scorer::Create(f).value();
    std::vector<std::string_view> raw;
    for (const auto& name : scorer.input_columns()) {
      std::string_view v;
      for (const auto& [k, val] : record)
        if (k == name) v = val;
      raw.push_back(v);
    }
    std::vector<float> x(scorer.input_width());
    scorer.Normalize(raw, x.data());
    float out;
    auto ws = scorer.MakeWorkspace(1);
    scorer.Score(x.data(), nullptr, 1, &out, ws.get());
    sum += out;
  }
  return sum / static_cast<double>(models.size());
}

TEST(ServableTest, ScoresRawRecordsExactlyLikeEval) {
  tarn::testing::TempDir tmp;
  std::vector<model::ModelFile> models = {MakeModel(1), MakeModel(2), MakeModel(3)};
  auto s = Servable::Load(5, SaveModels(tmp, models), BatchOptions{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  const Servable& sv = **s;
  EXPECT_EQ(sv.version(), 5);
  EXPECT_EQ(sv.bags(), 3);
  ASSERT_EQ(sv.columns().size(), 2u);
  EXPECT_EQ(sv.columns()[0].name, "x");
  EXPECT_TRUE(sv.columns()[0].numeric);
  EXPECT_EQ(sv.columns()[1].type, "C");
  EXPECT_EQ(sv.FindColumn("color"), 1);
  EXPECT_EQ(sv.FindColumn("nope"), -1);
  EXPECT_EQ(sv.vector_width(), 2);  // one shared normalization
  EXPECT_EQ(sv.vector_names(), (std::vector<std::string>{"x", "color"}));

  std::vector<std::vector<std::pair<std::string, std::string>>> records = {
      {{"x", "12.5"}, {"color", "red"}},
      {{"x", "3"}, {"color", "blue"}},
      {{"x", "?"}, {"color", "green"}},  // a missing value, an unseen category
      {{"x", "1e3"}, {"color", ""}},
  };
  std::vector<float> rows(records.size() * 2);
  for (size_t r = 0; r < records.size(); ++r) {
    RawValue v[2];
    v[0] = {records[r][0].second, true};
    v[1] = {records[r][1].second, true};
    sv.NormalizeRecord(v, rows.data() + r * 2);
  }
  std::vector<double> scores(records.size());
  sv.Score(rows.data(), static_cast<int>(records.size()), scores.data());
  for (size_t r = 0; r < records.size(); ++r) {
    EXPECT_NEAR(scores[r], EvalScore(models, records[r]), 1e-7) << r;
  }
  // Absent columns are missing values.
  RawValue absent[2];
  float row[2];
  sv.NormalizeRecord(absent, row);
  double s_absent;
  sv.Score(row, 1, &s_absent);
  EXPECT_NEAR(s_absent, EvalScore(models, {{"x", "?"}, {"color", "?"}}), 1e-7);
}

TEST(ServableTest, BagsWithDifferentColumnsShareNothingButTheRecord) {
  tarn::testing::TempDir tmp;
  std::vector<model::ModelFile> models = {
      MakeModel(1), MakeModel(2, {CategoricalColumn(), NumericColumn("y")}),
      MakeModel(3)};  // the first and third share a normalization
  auto s = Servable::Load(1, SaveModels(tmp, models), BatchOptions{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  const Servable& sv = **s;
  EXPECT_EQ(sv.columns().size(), 3u);  // x, color, y
  EXPECT_EQ(sv.row_width(), 4);        // two groups of two inputs
  EXPECT_EQ(sv.vector_width(), -1);    // no single normalized vector
  std::vector<std::pair<std::string, std::string>> rec = {
      {"x", "8"}, {"color", "blue"}, {"y", "11"}};
  RawValue v[3] = {{"8", true}, {"blue", true}, {"11", true}};
  float row[4];
  sv.NormalizeRecord(v, row);
  double score;
  sv.Score(row, 1, &score);
  EXPECT_NEAR(score, EvalScore(models, rec), 1e-7);
}

TEST(ServableTest, ConcurrentRequestsAreBatchedWithTheSameResults) {
  tarn::testing::TempDir tmp;
  std::vector<model::ModelFile> models = {MakeModel(9)};
  for (int wait_us : {0, 2000}) {
    BatchOptions b;
    b.max_batch_rows = 8;
    b.max_wait_us = wait_us;
    b.max_concurrent = 1;  // one batch at a time: concurrent requests must share
    auto s = Servable::Load(1, SaveModels(tmp, models), b);
    ASSERT_TRUE(s.ok());
    Histogram batches({1, 2, 4, 8, 16});
    (*s)->set_batch_histogram(&batches);
    const int kThreads = 6, kRequests = 200;
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kRequests; ++i) {
          // 1-3 rows per request, sometimes a large one that runs alone.
          int n = (i % 17 == 0) ? 20 : 1 + (i + t) % 3;
          std::vector<float> rows(static_cast<size_t>(n) * 2);
          for (int r = 0; r < n; ++r) {
            rows[r * 2] = static_cast<float>(t) * 0.1f + static_cast<float>(r) * 0.01f;
            rows[r * 2 + 1] = static_cast<float>(i % 5) * 0.2f - 0.4f;
          }
          std::vector<double> out(n), expected(n);
          (*s)->Score(rows.data(), n, out.data());
          auto scorer = model::Scorer::Create(models[0]).value();
          auto ws = scorer.MakeWorkspace(32);
          std::vector<float> e(n);
          scorer.Score(rows.data(), nullptr, n, e.data(), ws.get());
          for (int r = 0; r < n; ++r) {
            if (std::abs(out[r] - e[r]) > 1e-7) wrong.fetch_add(1);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_GT(batches.count(), 0u);
  }
}

TEST(ServableTest, LoadErrorsNameTheFile) {
  tarn::testing::TempDir tmp;
  tmp.Write("bad.tarn", "TARNMODL and then nothing useful");
  auto s = Servable::Load(1, {tmp.File("bad.tarn")}, BatchOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("bad.tarn"), std::string::npos);
  EXPECT_FALSE(Servable::Load(1, {tmp.File("absent.tarn")}, BatchOptions{}).ok());
  EXPECT_FALSE(Servable::Load(1, {}, BatchOptions{}).ok());
  // A checkpoint is not a servable model.
  auto ck = MakeModel(1);
  ck.is_checkpoint = true;
  ASSERT_TRUE(ck.Save(tmp.File("ck.tarn")).ok());
  EXPECT_FALSE(Servable::Load(1, {tmp.File("ck.tarn")}, BatchOptions{}).ok());
}

}  // namespace
}  // namespace tarn::serving
