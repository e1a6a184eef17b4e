// Exact positive/negative counts per distinct numeric value, kept while a
// column has few distinct values (ages, months, counts, codes: most tabular
// numeric columns). When every column of a data set stays under its cap, the
// stats step needs a single pass: bin counts, moments and distinct counts all
// come from this table. A column that exceeds its cap is "overflowed": the
// caller replays the table into its streaming summaries and recounts later.
#pragma once

#include <bit>
#include <cstddef>
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
  // (for a replay), and must be Release()d. *entry (when given) receives the
  // value's entry, for CountAt.
  bool Add(double value, int target, double weight, size_t* entry = nullptr) {
    if (slots_.empty()) Grow();
    const uint64_t key = std::bit_cast<uint64_t>(value + 0.0);  // -0.0 and 0.0 are one value
    for (size_t i = Mix64(key) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.index != 0 && s.key == key) {
        Count(entries_[s.index - 1], target, weight);
        if (entry != nullptr) *entry = s.index - 1;
        return true;
      }
      if (s.index == 0) {
        s.key = key;
        entries_.push_back(Entry{value, 0, 0, 0, 0});
        s.index = static_cast<uint32_t>(entries_.size());
        if (entry != nullptr) *entry = s.index - 1;
        Count(entries_.back(), target, weight);
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

  // Counts one more row of the value whose entry Add gave (the same as Add
  // with that value). Entries stay put until Release().
  void CountAt(size_t entry, int target, double weight) { Count(entries_[entry], target, weight); }

  bool overflowed() const { return overflowed_; }
  size_t size() const { return size_; }
  size_t max_values() const { return max_values_; }

  // Calls fn(const Entry&) for every value, in table order (deterministic for
  // a given sequence of Adds).
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& s : slots_)
      if (s.index != 0) fn(entries_[s.index - 1]);
  }
  // The entries sorted by value.
  std::vector<Entry> Sorted() const;
  // Adds `other`'s counts; overflows when the union exceeds the cap.
  void Merge(const ValueCounts& other);
  // Frees the table; the object stays overflowed.
  void Release();

 private:
  // Open addressing with linear probing on the bits of the value; the slots
  // are small (16 bytes) so that probing stays in cache, and point into
  // `entries_` (insertion order). ForEach walks the slots, so the order it
  // gives depends only on the sequence of Adds.
  struct Slot {
    uint64_t key = 0;
    uint32_t index = 0;  // 1 + index into entries_; 0: empty
  };
  static void Count(Entry& e, int target, double weight) {
    // Branch-free: targets arrive in no predictable order. (A choice between the fields'
    // addresses, `positive ? &e.pos : &e.neg`, compiled to a branch.) The positive field is
    // the negative one's neighbour: one index picks both.
    static_assert(offsetof(Entry, pos) == offsetof(Entry, neg) + sizeof(double) &&
                  offsetof(Entry, wpos) == offsetof(Entry, wneg) + sizeof(double));
    const size_t at = (target == 1) * sizeof(double);
    char* const bytes = reinterpret_cast<char*>(&e);
    *reinterpret_cast<double*>(bytes + offsetof(Entry, neg) + at) += 1;
    *reinterpret_cast<double*>(bytes + offsetof(Entry, wneg) + at) += weight;
  }
  void Grow();
  void Insert(const Entry& e);

  size_t max_values_;
  size_t size_ = 0;
  bool overflowed_ = false;
  std::vector<Slot> slots_;
  size_t mask_ = 0;  // slots_.size() - 1
  std::vector<Entry> entries_;
};

}  // namespace tarn::stats
