// A graph model's tables as the training core holds them: compact per-batch tables give the
// full tables' results, and LOCAL's lazy tables resume bit-identically from a checkpoint.
#include "train/graph_trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "model/graph.h"
#include "model/optimizer.h"

namespace tarn::train {
namespace {

using data::Json;

// Two numeric inputs and three categorical columns with ids, as an Adult-like table.
GraphModel Wdl() {
  const std::vector<GraphColumn> columns = {{"Age", 0, false, 0},
                                            {"Work_Class", 1, true, 9},
                                            {"Education", 3, true, 17},
                                            {"Occupation", 6, true, 16}};
  Json p = {{"NumHiddenLayers", 1}, {"NumHiddenNodes", {16}}, {"ActivationFunc", {"relu"}}};
  p["NumEmbedOuputs"] = 4;
  auto typed = model::TrainParams::Parse(p, "WDL");
  EXPECT_TRUE(typed.ok()) << typed.status().message();
  auto m = BuildGraphModel(
      "WDL", *typed, columns, 1,
      {"Age", "Work_Class", "FnlWgt", "Education", "Edu_Num", "Marital", "Occupation"},
      "/nonexistent");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return *m;
}

model::OptimizerConfig Adam() {
  model::OptimizerConfig c;
  c.kind = model::OptimizerKind::kAdam;
  c.learning_rate = 0.01;
  return c;
}

TEST(GraphTables, ACompactTableOfTheBatchsRowsGivesTheWholeTablesResults) {
  const GraphModel m = Wdl();
  const model::Graph g(m.spec);
  auto specs = GraphTableSpecs(g, Adam(), 7);
  ASSERT_TRUE(specs.ok()) << specs.status().message();
  ASSERT_EQ(specs->size(), g.tables().size());
  std::vector<std::vector<float>> whole;
  for (const auto& s : *specs) whole.push_back(InitialTable(s));
  std::vector<float> dense(g.DenseParameterCount() + g.StateCount());
  g.InitParameters(dense.data(), {}, 3);
  g.InitState(dense.data() + g.DenseParameterCount());

  const int n = 40;
  std::mt19937 rng(5);
  std::vector<float> x(n), y(n), w(n, 1.0f);
  for (int i = 0; i < n; ++i) {
    x[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
    y[i] = static_cast<float>(i % 2);
  }
  std::vector<std::vector<int64_t>> ids(g.id_inputs().size(), std::vector<int64_t>(n));
  for (auto& v : ids) {
    for (auto& id : v) id = std::uniform_int_distribution<int64_t>(0, 8)(rng);  // repeats
  }
  std::vector<const int64_t*> id_pointers;
  for (auto& v : ids) id_pointers.push_back(v.data());
  const float* dense_in[] = {x.data()};
  model::GraphInputs in{n, dense_in, id_pointers};

  // The whole tables, rows from the ids.
  std::vector<const float*> whole_pointers;
  for (auto& t : whole) whole_pointers.push_back(t.data());
  auto ws_whole = g.MakeWorkspace(n);
  std::vector<float> grad_whole(g.DenseParameterCount());
  auto loss_whole = g.ForwardBackward({dense.data(), whole_pointers, nullptr}, in, y.data(),
                                      w.data(), grad_whole.data(), ws_whole.get(), 11);
  ASSERT_TRUE(loss_whole.ok()) << loss_whole.status().message();

  // Compact tables: each table's distinct rows, the rows remapped to them.
  std::vector<std::vector<int64_t>> rows(g.tables().size(), std::vector<int64_t>(n));
  std::vector<int64_t*> row_pointers;
  for (auto& r : rows) row_pointers.push_back(r.data());
  ASSERT_TRUE(g.TableRows(in, row_pointers).ok());
  std::vector<std::vector<int64_t>> distinct(rows.size());
  std::vector<std::vector<float>> compact(rows.size());
  for (size_t t = 0; t < rows.size(); ++t) {
    distinct[t] = rows[t];
    std::sort(distinct[t].begin(), distinct[t].end());
    distinct[t].erase(std::unique(distinct[t].begin(), distinct[t].end()), distinct[t].end());
    const int dim = g.tables()[t].dim;
    for (int64_t r : distinct[t]) {
      compact[t].insert(compact[t].end(), whole[t].begin() + r * dim,
                        whole[t].begin() + (r + 1) * dim);
    }
    for (auto& r : rows[t]) {
      r = std::lower_bound(distinct[t].begin(), distinct[t].end(), r) - distinct[t].begin();
    }
  }
  std::vector<const float*> compact_pointers;
  for (auto& t : compact) compact_pointers.push_back(t.data());
  std::vector<const int64_t*> const_rows(row_pointers.begin(), row_pointers.end());
  model::GraphInputs compact_in{n, dense_in, id_pointers, const_rows};
  auto ws_compact = g.MakeWorkspace(n);
  std::vector<float> grad_compact(g.DenseParameterCount());
  auto loss_compact =
      g.ForwardBackward({dense.data(), compact_pointers, nullptr}, compact_in, y.data(), w.data(),
                        grad_compact.data(), ws_compact.get(), 11);
  ASSERT_TRUE(loss_compact.ok()) << loss_compact.status().message();

  EXPECT_EQ(*loss_compact, *loss_whole);
  EXPECT_EQ(grad_compact, grad_whole);
  for (size_t t = 0; t < rows.size(); ++t) {
    const auto& a = ws_whole->table_gradients[t];
    const auto& b = ws_compact->table_gradients[t];
    ASSERT_EQ(a.count, b.count);
    for (size_t k = 0; k < a.count; ++k) {
      EXPECT_EQ(a.rows[k], distinct[t][static_cast<size_t>(b.rows[k])]);
      EXPECT_TRUE(std::equal(a.grad(k), a.grad(k) + a.dim, b.grad(k)));
    }
  }
}

// Random sparse steps on every table.
void Steps(LocalTables* tables, const std::vector<model::TableSpec>& specs, uint64_t seed,
           int count) {
  std::mt19937_64 rng(seed);
  for (int s = 0; s < count; ++s) {
    std::vector<std::vector<uint64_t>> ids(specs.size());
    std::vector<std::vector<float>> grads(specs.size());
    std::vector<TableGradient> gradients(specs.size());
    for (size_t t = 0; t < specs.size(); ++t) {
      for (uint64_t r = 0; r < specs[t].rows; ++r) {
        if (rng() % 3 == 0) ids[t].push_back(r);
      }
      for (size_t k = 0; k < ids[t].size() * specs[t].dim; ++k) {
        grads[t].push_back(static_cast<float>(static_cast<int64_t>(rng() % 2001) - 1000) / 1000);
      }
      gradients[t] = {ids[t], grads[t]};
    }
    tables->Apply(gradients, 3.0, 0);
  }
}

TEST(GraphTables, LocalTablesResumeFromTheirCheckpointStateBitIdentically) {
  const model::Graph g(Wdl().spec);
  auto specs = GraphTableSpecs(g, Adam(), 9);
  ASSERT_TRUE(specs.ok());
  auto straight = LocalTables::Create(*specs);
  auto first = LocalTables::Create(*specs);
  ASSERT_TRUE(straight.ok() && first.ok());
  Steps(straight->get(), *specs, 1, 5);
  Steps(first->get(), *specs, 1, 5);
  // A table untouched so far is whole at its initial values.
  EXPECT_EQ((*first)->Whole(0), (*straight)->Whole(0));

  std::vector<float> state;
  std::vector<uint64_t> steps;
  (*first)->SaveState(&state, &steps);
  EXPECT_EQ(state.size(), (*first)->StateFloats());
  EXPECT_EQ(steps, std::vector<uint64_t>(specs->size(), 5));
  const auto whole = (*first)->WholeTables();
  auto resumed = LocalTables::Create(*specs);
  ASSERT_TRUE(resumed.ok());
  std::vector<std::span<const float>> values(whole.begin(), whole.end());
  ASSERT_TRUE((*resumed)->LoadState(values, state, steps).ok());

  Steps(straight->get(), *specs, 2, 4);
  Steps(resumed->get(), *specs, 2, 4);
  EXPECT_EQ((*resumed)->WholeTables(), (*straight)->WholeTables());
  std::vector<float> state_a, state_b;
  std::vector<uint64_t> steps_a, steps_b;
  (*straight)->SaveState(&state_a, &steps_a);
  (*resumed)->SaveState(&state_b, &steps_b);
  EXPECT_EQ(state_a, state_b);
  EXPECT_EQ(steps_a, steps_b);
  // A checkpoint of other tables is refused.
  EXPECT_FALSE((*resumed)->LoadState(values, std::span<const float>(state.data(), 3), steps).ok());
}

TEST(GraphTables, AJobCarriesItsGraphModel) {
  GraphModel m = Wdl();
  m.l2 = 0.25;
  m.unregularized = {"wide_dense"};
  auto back = GraphModelFromJson(GraphModelToJson(m), "job");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->spec, m.spec);
  EXPECT_EQ(back->l2, m.l2);
  EXPECT_EQ(back->unregularized, m.unregularized);
  EXPECT_FALSE(GraphModelFromJson(Json{{"spec", m.spec.ToJson()}}, "job").ok());
}

}  // namespace
}  // namespace tarn::train
