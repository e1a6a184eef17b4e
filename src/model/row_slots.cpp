#include "model/row_slots.h"

#include <algorithm>

namespace tarn::model {

void RowSlots::Reserve(size_t capacity) {
  size_t slots = 1;
  while (slots < 2 * std::max<size_t>(capacity, 1)) slots *= 2;
  keys_.assign(slots, -1);
  values_.assign(slots, 0);
  rows_.clear();
  rows_.reserve(capacity);
  scratch_.resize(capacity);
  sorted_.reserve(capacity);
  mask_ = slots - 1;
  shift_ = 64;
  for (size_t s = slots; s > 1; s >>= 1) --shift_;
  direct_ = false;
}

void RowSlots::Rank(int64_t* ascending, uint32_t* rank_of_slot) {
  if (direct_ && rows_.size() * 8 >= std::min<uint64_t>(keys_.size(), table_rows_)) {
    // Keys sit at their own index, below the table's rows, and fill that span
    // well: a scan finds them in order, cheaper than a sort.
    uint32_t k = 0;
    for (size_t h = 0; h <= mask_ && k < rows_.size(); ++h) {
      if (keys_[h] == -1) continue;
      ascending[k] = keys_[h];
      rank_of_slot[values_[h]] = k++;
    }
    return;
  }
  sorted_.clear();
  for (size_t s = 0; s < rows_.size(); ++s)
    sorted_.emplace_back(rows_[s], static_cast<uint32_t>(s));
  std::sort(sorted_.begin(), sorted_.end());
  for (size_t k = 0; k < sorted_.size(); ++k) {
    ascending[k] = sorted_[k].first;
    rank_of_slot[sorted_[k].second] = static_cast<uint32_t>(k);
  }
}

void RowSlots::Clear() {
  if (direct_) {
    for (int64_t r : rows_) keys_[static_cast<size_t>(r)] = -1;
  } else {
    for (int64_t r : rows_) {
      size_t h = Home(r);
      while (keys_[h] != r) h = (h + 1) & mask_;
      keys_[h] = -1;
    }
  }
  rows_.clear();
}

}  // namespace tarn::model
