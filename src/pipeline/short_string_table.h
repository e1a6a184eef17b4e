// A flat hash table keyed by strings of up to 8 bytes (packed by PackShortString): codes, short
// names and small numbers, found with one probe of a small array. stats and norm put one in
// front of slower work (parsing, category lookups) per column.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tarn::pipeline {

// A Value of 0 (Value()) marks an empty slot, so stored values must be non-zero.
template <typename Value>
class ShortStringTable {
 public:
  // The value stored for the string (packed as `bits`, of length n), or 0.
  Value Find(uint64_t bits, size_t n) const {
    if (slots_.empty()) return Value();
    for (size_t i = Index(bits, n);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == Value()) return Value();
      if (s.bits == bits && s.size == n) return s.value;
    }
  }
  // Adds a string not in the table.
  void Insert(uint64_t bits, size_t n, Value value) {
    if ((count_ + 1) * 2 > slots_.size()) Grow();
    Place({bits, static_cast<uint32_t>(n), value});
    ++count_;
  }
  size_t size() const { return count_; }
  void Clear() {
    std::vector<Slot>().swap(slots_);
    mask_ = count_ = 0;
    shift_ = 63;
  }

 private:
  struct Slot {
    uint64_t bits = 0;
    uint32_t size = 0;
    Value value = Value();
  };
  // Multiplicative hashing takes the product's top bits: they depend on every byte of the
  // key. (Bits from the middle of the product saw only the first five or six characters, and
  // numbers that share a prefix, "44.52", "44.53", piled up in one probe chain.)
  size_t Index(uint64_t bits, size_t n) const {
    return static_cast<size_t>(((bits ^ n) * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  void Place(const Slot& s) {
    size_t i = Index(s.bits, s.size);
    while (slots_[i].value != Value()) i = (i + 1) & mask_;
    slots_[i] = s;
  }
  void Grow() {
    std::vector<Slot> old(std::max<size_t>(64, slots_.size() * 2));
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    shift_ = 64 - std::countr_zero(slots_.size());
    for (const auto& s : old)
      if (s.value != Value()) Place(s);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 63;
  size_t count_ = 0;
};

// Whether a cache in front of slower work is worth its probes: it counts probes and hits in
// windows, and turns off for good after a window in which fewer than half of the probes hit,
// unless the window looks like a cache still filling (values seen for the first time miss):
// more than a quarter hit, and more than in the window before. On a column of many distinct
// values (measurements) nearly every probe misses, and the tables of many such columns do not
// fit in the processor's cache; on flights_3m's distance (about 1,500 values) the first window
// hits 46-52%, the next ones 75-95%.
class CacheGate {
 public:
  static constexpr uint32_t kWindow = 1024;  // probes per check
  bool on() const { return on_; }
  // Counts one probe; false when this probe ended a poor window and the cache is now off.
  bool Count(bool hit) {
    hits_ += hit;
    if (++probes_ < kWindow) return true;
    const bool filling = hits_ * 4 > probes_ && hits_ > last_hits_;
    on_ = hits_ * 2 >= probes_ || filling;
    last_hits_ = hits_;
    probes_ = hits_ = 0;
    return on_;
  }

 private:
  bool on_ = true;
  uint32_t probes_ = 0, hits_ = 0, last_hits_ = 0;
};

// A CacheGate for a cache whose owner can tell, with the cache off, whether a value was seen
// before (stats' exact value table knows its values): it judges every window by the share of
// repeats, and turns the cache back on after a window in which at least half of the values
// repeated. A column's first window, while its cache fills, can fall under half where nearly
// every later value repeats (flights_3m's distance: about 1,500 values over 3M rows), and a
// gate that stays off for good then parses every later value.
class RepeatGate {
 public:
  static constexpr uint32_t kWindow = 1024;  // values per check
  bool on() const { return on_; }
  // Counts one value: whether it repeated an earlier one (a cache hit, or a value the owner
  // already held). True when this count ended a window and turned the cache off.
  bool Count(bool repeat) {
    repeats_ += repeat;
    if (++values_ < kWindow) return false;
    const bool was_on = on_;
    on_ = repeats_ * 2 >= values_;
    values_ = repeats_ = 0;
    return was_on && !on_;
  }

 private:
  bool on_ = true;
  uint32_t values_ = 0, repeats_ = 0;
};

}  // namespace tarn::pipeline
