// Exact positive/negative counts per distinct numeric value, kept while a
// column has few distinct values (ages, months, counts, codes: most tabular
// numeric columns). When every column of a data set stays under its cap, the
// stats step needs a single pass: bin counts, moments and distinct counts all
// come from this table. A column that exceeds its cap is "overflowed": the
// caller replays the table into its streaming summaries and recounts later.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "stats/hash.h"

namespace tarn::stats {

class ValueCounts {
 public:
  struct Entry {
    double value;
    double neg, pos, wneg, wpos;
  };

  // At most `max_values` distinct values (0 makes it overflow at once).
  explicit ValueCounts(size_t max_values) : max_values_(max_values) {}

  // Counts one row. Returns false when this value made the table exceed its
  // cap: the table is then overflowed, still holds every value seen so far
  // (for a replay), and must be Release()d.
  bool Add(double value, int target, double weight) {
    if (slots_.empty()) Grow();
    const uint64_t key = std::bit_cast<uint64_t>(value + 0.0);  // -0.0 and 0.0 are one value
    size_t mask = slots_.size() - 1;
    for (size_t i = Mix64(key) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.used && s.key == key) {
        Count(s.entry, target, weight);
        return true;
      }
      if (!s.used) {
        s.used = true;
        s.key = key;
        s.entry = Entry{value, 0, 0, 0, 0};
        Count(s.entry, target, weight);
        ++size_;
        if (size_ > max_values_) {
          overflowed_ = true;
          return false;
        }
        if (size_ * 2 > slots_.size()) Grow();
        return true;
      }
    }
  }

  bool overflowed() const { return overflowed_; }
  size_t size() const { return size_; }
  size_t max_values() const { return max_values_; }

  // Calls fn(const Entry&) for every value, in table order (deterministic for
  // a given sequence of Adds).
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& s : slots_)
      if (s.used) fn(s.entry);
  }
  // The entries sorted by value.
  std::vector<Entry> Sorted() const;
  // Adds `other`'s counts; overflows when the union exceeds the cap.
  void Merge(const ValueCounts& other);
  // Frees the table; the object stays overflowed.
  void Release();

 private:
  struct Slot {
    uint64_t key = 0;
    bool used = false;
    Entry entry{};
  };
  static void Count(Entry& e, int target, double weight) {
    if (target == 1) {
      e.pos += 1;
      e.wpos += weight;
    } else {
      e.neg += 1;
      e.wneg += weight;
    }
  }
  void Grow();
  void Insert(const Entry& e);

  size_t max_values_;
  size_t size_ = 0;
  bool overflowed_ = false;
  std::vector<Slot> slots_;
};

}  // namespace tarn::stats
