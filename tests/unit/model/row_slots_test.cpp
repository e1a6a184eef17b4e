// RowSlots: a batch's distinct rows come out ascending, and each batch row's
// slot maps to its row's place among them, whichever way the map ranks them
// (a scan of a small table, a sort of a sparse one, a hashed map).
#include "model/row_slots.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace tarn::model {
namespace {

// Inserts `rows` (a batch) and checks Rank against a std::set of them.
void ExpectRanked(RowSlots* slots, uint64_t table_rows, const std::vector<int64_t>& rows) {
  slots->Start(table_rows);
  std::vector<uint32_t> slot_of_row;
  for (int64_t r : rows) slot_of_row.push_back(slots->Insert(r));
  const std::set<int64_t> distinct(rows.begin(), rows.end());
  ASSERT_EQ(slots->size(), distinct.size());
  std::vector<int64_t> ascending(distinct.size());
  std::vector<uint32_t> rank(distinct.size());
  slots->Rank(ascending.data(), rank.data());
  slots->Clear();
  EXPECT_EQ(ascending, std::vector<int64_t>(distinct.begin(), distinct.end()));
  for (size_t b = 0; b < rows.size(); ++b) {
    EXPECT_EQ(ascending[rank[slot_of_row[b]]], rows[b]) << "batch row " << b;
  }
}

std::vector<int64_t> Draw(size_t n, int64_t below, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> d(0, below - 1);
  std::vector<int64_t> rows(n);
  for (auto& r : rows) r = d(rng);
  return rows;
}

TEST(RowSlots, RanksTheDistinctRowsOfSmallSparseAndHashedTables) {
  RowSlots slots;
  slots.Reserve(128);  // a map of 256 entries
  // A 42-row table with 5 distinct rows (too few for a scan: sorted).
  ExpectRanked(&slots, 42, {41, 3, 3, 17, 0, 41, 9, 3});
  // A 3-row table, every row touched (ranked by a scan of the table).
  ExpectRanked(&slots, 3, {2, 1, 0, 2, 2, 1});
  // A 256-row table with few distinct rows (indexed directly, ranked by a sort).
  ExpectRanked(&slots, 256, {255, 7, 130, 7, 64});
  // A table larger than the map (hashed), batches of 128 rows.
  ExpectRanked(&slots, 4000000, Draw(128, 4000000, 1));
  ExpectRanked(&slots, 1000, Draw(128, 1000, 2));
  // About 40 of 42 rows (a scan); the map is empty again after each Clear.
  ExpectRanked(&slots, 42, Draw(128, 42, 3));
  ExpectRanked(&slots, 42, Draw(128, 42, 3));
}

}  // namespace
}  // namespace tarn::model
