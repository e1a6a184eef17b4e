// RowSlots: the distinct rows of a batch, found without sorting the batch.
// An open-addressing map (row -> slot, slots in first-seen order) of a power
// of two >= 2 x capacity entries; a table no larger than the map is indexed
// by its rows directly (no collisions, and its rows come out ascending by a
// scan instead of a sort). Nothing allocates after Reserve; Clear costs the
// rows inserted, not the map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tarn::model {

class RowSlots {
 public:
  // At most `capacity` distinct rows between clears.
  void Reserve(size_t capacity);
  // The next rows (the map is empty) are of a table of `table_rows` rows.
  void Start(uint64_t table_rows) {
    direct_ = table_rows <= keys_.size();
    table_rows_ = table_rows;
  }

  // The slot of row r (>= 0): a new row gets the next slot.
  uint32_t Insert(int64_t r) {
    size_t h = Home(r);
    while (keys_[h] != -1 && keys_[h] != r) h = (h + 1) & mask_;
    if (keys_[h] == -1) {
      keys_[h] = r;
      values_[h] = static_cast<uint32_t>(rows_.size());
      rows_.push_back(r);
    }
    return values_[h];
  }
  size_t size() const { return rows_.size(); }

  // The rows inserted, ascending, into ascending[0 .. size()), and each
  // slot's place among them into rank_of_slot[slot].
  void Rank(int64_t* ascending, uint32_t* rank_of_slot);
  template <typename Row>
  void Rank(Row* ascending, uint32_t* rank_of_slot) {
    Rank(scratch_.data(), rank_of_slot);
    for (size_t k = 0; k < rows_.size(); ++k) ascending[k] = static_cast<Row>(scratch_[k]);
  }

  // Empties the map (only the entries set since the last Clear).
  void Clear();

 private:
  size_t Home(int64_t r) const {
    return direct_
               ? static_cast<size_t>(r)
               : static_cast<size_t>((static_cast<uint64_t>(r) * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  std::vector<int64_t> keys_;  // -1: empty
  std::vector<uint32_t> values_;
  std::vector<int64_t> rows_;     // in slot order
  std::vector<int64_t> scratch_;  // Rank's ascending rows for other row types
  std::vector<std::pair<int64_t, uint32_t>> sorted_;
  size_t mask_ = 0;
  int shift_ = 64;
  bool direct_ = false;
  uint64_t table_rows_ = 0;  // Start's
};

}  // namespace tarn::model
