#include "stats/value_counts.h"

#include <algorithm>

namespace tarn::stats {

void ValueCounts::Grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, Slot());
  size_ = 0;
  for (const auto& s : old)
    if (s.used) Insert(s.entry);
}

void ValueCounts::Insert(const Entry& e) {
  const uint64_t key = std::bit_cast<uint64_t>(e.value + 0.0);
  size_t mask = slots_.size() - 1;
  for (size_t i = Mix64(key) & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.used && s.key == key) {
      s.entry.neg += e.neg;
      s.entry.pos += e.pos;
      s.entry.wneg += e.wneg;
      s.entry.wpos += e.wpos;
      return;
    }
    if (!s.used) {
      s.used = true;
      s.key = key;
      s.entry = e;
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
}

}  // namespace tarn::stats
