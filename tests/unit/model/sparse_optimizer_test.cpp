// Sparse optimizers and embedding tables: touched rows move as a dense
// optimizer would move them, untouched rows and their state do not move.
#include "model/sparse_optimizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>

#include "model/embedding_table.h"
#include "model/optimizer.h"

namespace tarn::model {
namespace {

constexpr uint32_t kDim = 5;

TableSpec Spec(SparseOptimizerKind kind, uint64_t rows = 12) {
  TableSpec s;
  s.name = "items";
  s.rows = rows;
  s.dim = kDim;
  s.seed = 7;
  s.optimizer.kind = kind;
  s.optimizer.learning_rate = 0.05;
  s.optimizer.learning_decay = 0.1;
  return s;
}

OptimizerConfig Dense(SparseOptimizerKind kind) {
  OptimizerConfig c;
  c.kind = kind == SparseOptimizerKind::kSgd    ? OptimizerKind::kSgd
           : kind == SparseOptimizerKind::kAdam ? OptimizerKind::kAdam
                                                : OptimizerKind::kAdaGrad;
  c.learning_rate = 0.05;
  c.learning_decay = 0.1;
  c.momentum = 0;  // plain SGD
  c.reg = OptimizerConfig::Reg::kNone;
  return c;
}

std::vector<float> Gradient(std::mt19937_64& rng, size_t n) {
  std::normal_distribution<float> g(0, 1);
  std::vector<float> out(n);
  for (float& v : out) v = g(rng);
  return out;
}

std::vector<float> TableValues(EmbeddingTable& t) {
  std::vector<uint64_t> ids(t.spec().rows);
  for (uint64_t i = 0; i < ids.size(); ++i) ids[i] = i;
  std::vector<float> out(ids.size() * t.spec().dim);
  t.Gather(ids, out.data());
  return out;
}

class EveryKind : public ::testing::TestWithParam<SparseOptimizerKind> {};

// Every row touched every step: the sparse step is the dense optimizer's step.
TEST_P(EveryKind, AllRowsTouchedEqualsTheDenseOptimizer) {
  const TableSpec spec = Spec(GetParam());
  auto table = EmbeddingTable::Create(spec).value();
  std::vector<float> dense = TableValues(*table);
  ModelSpec model;
  model.input_count = static_cast<int>(dense.size()) - 1;
  model.layers = {{model.input_count, 1}};
  auto reference = Optimizer::Create(Dense(GetParam()), model);
  std::vector<uint64_t> all(spec.rows);
  for (uint64_t i = 0; i < all.size(); ++i) all[i] = i;
  std::mt19937_64 rng(3);
  for (int step = 0; step < 6; ++step) {
    const auto g = Gradient(rng, dense.size());
    table->ApplyGradient(all, g.data(), step / 2);
    reference->Step(dense.data(), g.data(), step / 2);
  }
  EXPECT_EQ(TableValues(*table), dense);
  EXPECT_EQ(table->steps(), 6u);
}

// A reference in double over the whole table that updates only the touched
// rows, with Adam's t counting every step of the table.
TEST_P(EveryKind, OnlyTouchedRowsAndTheirStateMove) {
  const TableSpec spec = Spec(GetParam());
  auto table = EmbeddingTable::Create(spec).value();
  const std::vector<float> initial = TableValues(*table);
  std::vector<double> w(initial.begin(), initial.end()), m(w.size(), 0), v(w.size(), 0);
  const auto& o = spec.optimizer;
  std::mt19937_64 rng(11);
  std::set<uint64_t> ever;
  for (int step = 1; step <= 8; ++step) {
    std::vector<uint64_t> ids;
    for (uint64_t r = 0; r < spec.rows; ++r) {
      if (r % 3 != 0 && (rng() % 3 == 0)) ids.push_back(r);  // rows 0, 3, 6, 9 never
    }
    const auto g = Gradient(rng, ids.size() * kDim);
    const int epoch = step / 3;
    table->ApplyGradient(ids, g.data(), epoch);
    const double lr = o.learning_rate * std::pow(1 - o.learning_decay, epoch);
    for (size_t k = 0; k < ids.size(); ++k) {
      ever.insert(ids[k]);
      for (uint32_t j = 0; j < kDim; ++j) {
        const size_t i = ids[k] * kDim + j;
        const double gj = g[k * kDim + j];
        if (GetParam() == SparseOptimizerKind::kSgd) {
          w[i] -= lr * gj;
        } else if (GetParam() == SparseOptimizerKind::kAdaGrad) {
          m[i] += gj * gj;
          w[i] -= lr * gj / (std::sqrt(m[i]) + o.epsilon);
        } else {
          m[i] = o.beta1 * m[i] + (1 - o.beta1) * gj;
          v[i] = o.beta2 * v[i] + (1 - o.beta2) * gj * gj;
          const double mh = m[i] / (1 - std::pow(o.beta1, step));
          const double vh = v[i] / (1 - std::pow(o.beta2, step));
          w[i] -= lr * mh / (std::sqrt(vh) + o.epsilon);
        }
      }
    }
  }
  const std::vector<float> after = TableValues(*table);
  for (uint64_t r = 0; r < spec.rows; ++r) {
    for (uint32_t j = 0; j < kDim; ++j) {
      const size_t i = r * kDim + j;
      if (!ever.count(r)) {
        EXPECT_EQ(after[i], initial[i]) << "untouched row " << r;
      } else {
        EXPECT_NEAR(after[i], w[i], 1e-5 * std::max(1.0, std::abs(w[i]))) << "row " << r;
        EXPECT_NE(after[i], initial[i]) << "row " << r;
      }
    }
  }
  // The untouched rows' state is still zero.
  table->ForEachHeld([&](uint64_t id, const float* row) {
    if (ever.count(id)) return;
    for (size_t j = 0; j < table->state_per_row(); ++j) EXPECT_EQ(row[kDim + j], 0.0f);
  });
}

INSTANTIATE_TEST_SUITE_P(Kinds, EveryKind,
                         ::testing::Values(SparseOptimizerKind::kSgd, SparseOptimizerKind::kAdaGrad,
                                           SparseOptimizerKind::kAdam));

TEST(SparseOptimizer, StatePerRowAndSavedStateResumesExactly) {
  EXPECT_EQ(SparseOptimizer({SparseOptimizerKind::kSgd}, 4).state_per_row(), 0u);
  EXPECT_EQ(SparseOptimizer({SparseOptimizerKind::kAdaGrad}, 4).state_per_row(), 4u);
  EXPECT_EQ(SparseOptimizer({SparseOptimizerKind::kAdam}, 4).state_per_row(), 8u);
  // Train 3 steps, copy rows + state + step counter into a fresh table, train
  // 3 more on both: the copy matches the uninterrupted one.
  const TableSpec spec = Spec(SparseOptimizerKind::kAdam, 1000);
  auto a = EmbeddingTable::Create(spec).value();
  std::mt19937_64 rng(5);
  const std::vector<uint64_t> ids = {1, 17, 400, 999};
  for (int s = 0; s < 3; ++s) a->ApplyGradient(ids, Gradient(rng, ids.size() * kDim).data(), 0);
  auto b = EmbeddingTable::Create(spec).value();
  a->ForEachHeld([&](uint64_t id, const float* row) { EXPECT_TRUE(b->Restore(id, row).ok()); });

  b->set_steps(a->steps());
  for (int s = 0; s < 3; ++s) {
    const auto g = Gradient(rng, ids.size() * kDim);
    a->ApplyGradient(ids, g.data(), 1);
    b->ApplyGradient(ids, g.data(), 1);
  }
  std::vector<float> ra(ids.size() * kDim), rb(ra.size());
  a->Gather(ids, ra.data());
  b->Gather(ids, rb.data());
  EXPECT_EQ(ra, rb);
}

TEST(SparseOptimizer, FromDenseMapsShifuPropagations) {
  OptimizerConfig dense;
  dense.kind = OptimizerKind::kAdaGrad;
  dense.learning_rate = 0.3;
  auto c = SparseOptimizerConfig::FromDense(dense);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, SparseOptimizerKind::kAdaGrad);
  EXPECT_EQ(c->learning_rate, 0.3);
  dense.kind = OptimizerKind::kResilient;
  auto r = SparseOptimizerConfig::FromDense(dense);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Propagation R"), std::string::npos);
}

TEST(EmbeddingTable, RowsAreCreatedOnFirstTouchWithTheSameValuesInEveryShare) {
  const TableSpec spec = Spec(SparseOptimizerKind::kAdam, 1'000'000'000);
  auto whole = EmbeddingTable::Create(spec).value();
  auto share = EmbeddingTable::Create(spec, 1, 4).value();
  EXPECT_EQ(whole->rows_held(), 0u);
  const std::vector<uint64_t> ids = {5, 999'999'997};  // both owned by part 1 of 4
  ASSERT_TRUE(share->CheckIds(ids, true).ok());
  std::vector<float> a(ids.size() * kDim), b(a.size());
  whole->Gather(ids, a.data());
  share->Gather(ids, b.data());
  EXPECT_EQ(a, b);
  EXPECT_EQ(share->rows_held(), 2u);
  // A billion-row table holding two rows holds one chunk, not the table.
  EXPECT_LT(share->bytes_held(), size_t{1} << 20);
  for (float x : a) EXPECT_LE(std::abs(x), spec.init_scale);
  EXPECT_NE(a[0], a[kDim]);  // rows differ
}

TEST(EmbeddingTable, RefusesIdsOutsideTheTableTheShareOrRepeated) {
  auto share = EmbeddingTable::Create(Spec(SparseOptimizerKind::kSgd, 100), 2, 4).value();
  const std::vector<uint64_t> outside = {2, 102};
  auto st = share->CheckIds(outside, false);
  EXPECT_NE(st.message().find("row 102 is outside"), std::string::npos) << st.message();
  const std::vector<uint64_t> foreign = {3};
  st = share->CheckIds(foreign, false);
  EXPECT_NE(st.message().find("belongs to server 3"), std::string::npos) << st.message();
  const std::vector<uint64_t> twice = {6, 6};
  EXPECT_TRUE(share->CheckIds(twice, false).ok());
  EXPECT_FALSE(share->CheckIds(twice, true).ok());
  TableSpec bad = Spec(SparseOptimizerKind::kSgd);
  bad.name = "../etc";
  EXPECT_FALSE(EmbeddingTable::Create(bad).ok());
}

// The process's resident memory (what a parameter server's peak RSS counts).
size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// `count` distinct ids below `rows` that part `part` of `parts` owns, shuffled.
std::vector<uint64_t> OwnedIds(uint64_t rows, int part, int parts, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<uint64_t> distinct;
  while (distinct.size() < count) distinct.insert(rng() % (rows / parts) * parts + part);
  std::vector<uint64_t> ids(distinct.begin(), distinct.end());
  std::shuffle(ids.begin(), ids.end(), rng);
  return ids;
}

// A huge, sparsely touched share (a billion rows): the hashed index. The
// memory the process takes for 200,000 rows, per row, is the row's values
// and state, its id and the index's slots, and every row is found again
// after the index grew.
TEST(EmbeddingTable, HoldsASparseShareWithAHashedIndexAndFindsEachRowAfterItGrows) {
  const TableSpec spec = Spec(SparseOptimizerKind::kAdam, 1'000'000'000);
  constexpr size_t kRows = 200'000;
  const std::vector<uint64_t> ids = OwnedIds(spec.rows, 0, 1, kRows, 3);
  const size_t before = ResidentBytes();
  auto table = EmbeddingTable::Create(spec).value();
  std::vector<float> row(kDim);
  for (uint64_t id : ids) table->Gather(std::span<const uint64_t>(&id, 1), row.data());
  const double row_bytes = static_cast<double>(table->stride() * sizeof(float));
  const double per_row = static_cast<double>(ResidentBytes() - before) / kRows;
  std::printf("hashed index: %.1f bytes a row of %.0f\n", per_row, row_bytes);
  EXPECT_LT(per_row, row_bytes + 48);  // a node-based map and the ids took 57
  EXPECT_EQ(table->rows_held(), kRows);
  EXPECT_FALSE(table->indexed_densely());  // 4 GB of dense index would cost a page a row
  EXPECT_LT(static_cast<double>(table->bytes_held()) / kRows, row_bytes + 48);
  // Found again, not created twice: the same values, the same count; held
  // rows are visited in the order they were created.
  for (size_t i = 0; i < kRows; i += 997) {
    std::vector<float> again(kDim), initial(kDim);
    table->Gather(std::span<const uint64_t>(&ids[i], 1), again.data());
    InitialRow(spec, ids[i], initial.data());
    EXPECT_EQ(again, initial);
  }
  std::vector<uint64_t> visited;
  table->ForEachHeld([&](uint64_t id, const float*) { visited.push_back(id); });
  EXPECT_EQ(visited, ids);
  EXPECT_EQ(table->rows_held(), kRows);
}

// A share whose rows are known at declare (4M rows over 4 servers, 400,000
// of its 1M rows touched, as a hashed id column's buckets are): once the
// hashed index would outgrow a dense one it moves to the dense one, and the
// share takes its rows plus 4 bytes per row of the share, and gives all of
// it back when it is dropped (a roll back's re-declare).
TEST(EmbeddingTable, HoldsADenseShareInItsRowsPlusFourBytesARowAndGivesItBackWhenDropped) {
  const TableSpec spec = Spec(SparseOptimizerKind::kAdam, 4'000'000);
  constexpr size_t kRows = 400'000;
  const std::vector<uint64_t> ids = OwnedIds(spec.rows, 1, 4, kRows, 4);
  const size_t before = ResidentBytes();
  auto table = EmbeddingTable::Create(spec, 1, 4).value();
  std::vector<float> row(kDim);
  for (uint64_t id : ids) table->Gather(std::span<const uint64_t>(&id, 1), row.data());
  const size_t rows_bytes = kRows * table->stride() * sizeof(float);
  const size_t index_bytes = spec.rows / 4 * 4;
  const size_t taken = ResidentBytes() - before;
  EXPECT_TRUE(table->indexed_densely());  // moved there from the hashed index as it grew
  std::printf("dense index: %zu bytes for %zu bytes of rows and a %zu-byte index\n", taken,
              rows_bytes, index_bytes);
  EXPECT_LE(taken, rows_bytes + index_bytes + (size_t{1} << 20));
  EXPECT_LE(table->bytes_held(), rows_bytes + index_bytes + (size_t{1} << 20));
  // Every row found again with its values, visited once, ids ascending.
  std::vector<uint64_t> visited;
  table->ForEachHeld([&](uint64_t id, const float* values) {
    std::vector<float> initial(kDim);
    InitialRow(spec, id, initial.data());
    EXPECT_TRUE(std::equal(initial.begin(), initial.end(), values)) << "row " << id;
    visited.push_back(id);
  });
  std::vector<uint64_t> ascending = ids;
  std::sort(ascending.begin(), ascending.end());
  EXPECT_EQ(visited, ascending);
  EXPECT_EQ(table->positions(), spec.rows / 4);
  table.reset();
  EXPECT_LE(ResidentBytes(), before + (size_t{1} << 20));
}

}  // namespace
}  // namespace tarn::model
