// Norm's id columns against the scorer's ids, row by row, on the shipped
// Adult data: what a model trains on is what serving computes from a raw
// record.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <mutex>

#include "common/files.h"
#include "data/id_column.h"
#include "data/json_fields.h"
#include "model/model_file.h"
#include "model/scorer.h"
#include "model/training_data.h"
#include "pipeline/adult_model_set.h"
#include "pipeline/row_context.h"
#include "pipeline/steps.h"
#include "test_util.h"

namespace tarn::pipeline {
namespace {

constexpr int kOccupationBuckets = 7;  // fewer than its 14 values: collisions happen

TEST(NormIdsTest, NormAndScorerComputeTheSameIdsOnEveryRowOfAdult) {
  const std::string data = testing::AdultDataDir();
  if (!std::filesystem::exists(data)) GTEST_SKIP() << data << " is absent";
  testing::TempDir dir;
  const std::string set = dir.File("income");
  ASSERT_TRUE(testing::MakeAdultModelSet(set).ok());
  Settings settings;
  ASSERT_TRUE(settings.Set("tarn.norm.id-hash-seed", "11", "test").ok());
  auto ms = OpenModelSet(set, settings);
  ASSERT_TRUE(ms.ok()) << ms.status().message();
  ASSERT_TRUE(RunInit(*ms).ok());
  {
    auto columns = ms->LoadColumns();
    ASSERT_TRUE(columns.ok());
    bool found = false;
    for (auto& c : *columns) {
      if (c.column_name == "Occupation") {
        c.hash_seed = kOccupationBuckets;
        found = true;
      }
    }
    ASSERT_TRUE(found);
    ASSERT_TRUE(ms->SaveColumns(*columns).ok());
  }
  ASSERT_TRUE(RunStats(*ms, {}).ok());
  Status norm = RunNorm(*ms, {});
  ASSERT_TRUE(norm.ok()) << norm.message();

  auto options = ms->TrainingData(/*seed=*/5);
  ASSERT_TRUE(options.ok()) << options.status().message();
  auto loaded = model::LoadTrainingData(*options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const model::TrainingData& d = *loaded;
  // Every categorical input has an id: occupation hashed, the others indexed.
  int hashed = 0, indexed = 0;
  for (const auto& id : d.id_columns) {
    if (id.kind == data::IdKind::kHash) {
      EXPECT_EQ(id.name, "Occupation");
      EXPECT_EQ(id.vocabulary, kOccupationBuckets + 1u);
      EXPECT_EQ(id.hash_seed, 11u);
      ++hashed;
    } else {
      ++indexed;
    }
  }
  EXPECT_EQ(hashed, 1);
  EXPECT_GE(indexed, 5);  // workclass, education, marital-status, relationship, race, sex, ...

  // The model file records the id columns; the scorer rebuilds them.
  model::ModelFile file;
  file.columns = d.columns;
  file.norm_type = d.norm_type;
  file.std_dev_cut_off = ms->config.normalize.std_dev_cut_off;
  file.missing_values = ms->config.data_set.missing_or_invalid_values;
  file.id_columns = d.id_columns;
  file.spec.input_count = d.inputs;
  file.spec.layers = {{d.inputs, 1, model::Activation::kSigmoid}};
  file.params.assign(file.spec.ParameterCount(), 0.0f);
  ASSERT_TRUE(file.Save(dir.File("model0.tarn")).ok());
  auto reloaded = model::ModelFile::Load(dir.File("model0.tarn"));
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().message();
  EXPECT_EQ(reloaded->id_columns, d.id_columns);
  auto scorer = model::Scorer::Create(std::move(*reloaded));
  ASSERT_TRUE(scorer.ok()) << scorer.status().message();
  ASSERT_EQ(scorer->id_count(), static_cast<int>(d.id_columns.size()));

  // The raw rows norm kept (a valid target), in input order.
  auto setup = SetupRows(*ms);
  ASSERT_TRUE(setup.ok());
  std::map<uint64_t, std::vector<std::vector<std::string>>> chunks;
  std::mutex mu;
  auto read = ms->ReadOptionsFor("test");
  ASSERT_TRUE(read.ok());
  auto summary = setup->reader.ForEachBatch(*read, [&](int, const data::RowBatch& b) -> Status {
    std::vector<std::vector<std::string>> rows;
    for (size_t r = 0; r < b.size(); ++r) {
      auto f = b.fields(r);
      if (setup->target.Map(f[setup->target_index]) < 0) continue;
      rows.emplace_back(f.begin(), f.end());
    }
    std::lock_guard<std::mutex> lock(mu);
    chunks[b.chunk_index] = std::move(rows);
    return Status::Ok();
  });
  ASSERT_TRUE(summary.ok());
  std::vector<std::vector<std::string>> rows;
  for (auto& [index, chunk] : chunks)
    for (auto& r : chunk) rows.push_back(std::move(r));
  ASSERT_EQ(rows.size(), d.train.size() + d.valid.size());
  ASSERT_GT(rows.size(), 1000u);

  std::vector<uint32_t> ids(d.id_columns.size());
  std::vector<std::string_view> raw(d.columns.size());
  size_t missing_ids = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t k = 0; k < d.columns.size(); ++k) raw[k] = rows[r][d.columns[k].column_num];
    scorer->Ids(raw, ids.data());
    const uint32_t* norm_ids = d.id_row(static_cast<uint32_t>(r));
    for (size_t k = 0; k < ids.size(); ++k) {
      ASSERT_EQ(norm_ids[k], ids[k]) << "row " << r << ", id column " << d.id_columns[k].name;
      missing_ids += ids[k] == d.id_columns[k].MissingId();
    }
  }
  // Adult has '?' in workclass, occupation and native-country.
  EXPECT_GT(missing_ids, 0u);
}

}  // namespace
}  // namespace tarn::pipeline
