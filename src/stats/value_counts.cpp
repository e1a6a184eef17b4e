#include "stats/value_counts.h"

#include <algorithm>

namespace tarn::stats {

void ValueCounts::Grow() {
  // Re-places the keys in the order of the old slots, as a fresh table would
  // receive them: the slot order (and so ForEach's order) depends only on the
  // sequence of Adds.
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, Slot());
  mask_ = slots_.size() - 1;
  for (const auto& o : old) {
    if (o.index == 0) continue;
    for (size_t i = Mix64(o.key) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].index == 0) {
        slots_[i] = o;
        break;
      }
    }
  }
}

void ValueCounts::Insert(const Entry& e) {
  const uint64_t key = std::bit_cast<uint64_t>(e.value + 0.0);
  for (size_t i = Mix64(key) & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.index != 0 && s.key == key) {
      Entry& t = entries_[s.index - 1];
      t.neg += e.neg;
      t.pos += e.pos;
      t.wneg += e.wneg;
      t.wpos += e.wpos;
      return;
    }
    if (s.index == 0) {
      s.key = key;
      entries_.push_back(e);
      s.index = static_cast<uint32_t>(entries_.size());
      ++size_;
      return;
    }
  }
}

std::vector<ValueCounts::Entry> ValueCounts::Sorted() const {
  std::vector<Entry> out;
  out.reserve(size_);
  ForEach([&](const Entry& e) { out.push_back(e); });
  std::sort(out.begin(), out.end(),
            [](const Entry& a, const Entry& b) { return a.value < b.value; });
  return out;
}

void ValueCounts::Merge(const ValueCounts& other) {
  if (overflowed_) return;
  if (other.overflowed_) {
    overflowed_ = true;
    return;
  }
  other.ForEach([&](const Entry& e) {
    if (overflowed_) return;
    if (slots_.empty() || (size_ + 1) * 2 > slots_.size()) Grow();
    Insert(e);
    if (size_ > max_values_) overflowed_ = true;
  });
}

void ValueCounts::Release() {
  overflowed_ = true;
  size_ = 0;
  std::vector<Slot>().swap(slots_);
  std::vector<Entry>().swap(entries_);
  mask_ = 0;
}

}  // namespace tarn::stats
