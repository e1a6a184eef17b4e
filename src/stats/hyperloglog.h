// HyperLogLog: the distinct-value count of a column (columnStats.distinctCount)
// in fixed memory, mergeable across threads and chunks.
#pragma once

#include <algorithm>
#include <bit>          // for countl_zero
#include <cassert>      // for assert
#include <cstdint>      // for uint8_t, uint64_t
#include <string_view>  // for string_view
#include <vector>       // for vector

#include "stats/hash.h"

namespace tarn::stats {

/// A HyperLogLog sketch over 64-bit hashes with 2^precision one-byte
/// registers (precision 14: 16 KiB, standard error 1.04/sqrt(2^14) ≈ 0.8%).
///
/// The estimate is Ertl's improved estimator ("New cardinality estimation
/// algorithms for HyperLogLog sketches", 2017, algorithm 6). It needs no
/// empirical bias tables: its σ term is the linear-counting (small-range)
/// correction, reducing to m·ln(m/V) when few registers are set, and its τ
/// term removes the raw estimator's bias in the 2.5m..5m range that HLL++
/// patches with tables. With 64-bit hashes no large-range correction is
/// needed. Error stays near the theoretical 1.04/sqrt(m) at every cardinality.
///
/// Not thread-safe; give each thread its own sketch and Merge().
class HyperLogLog {
 public:
  static constexpr int kMinPrecision = 4;
  static constexpr int kMaxPrecision = 18;

  /// `precision` must be in [4, 18]; checked by assertion, and clamped into
  /// that range in release builds so a bad value cannot overrun memory.
  explicit HyperLogLog(int precision = 14);

  /// Adds an already hashed value. The hash must be uniformly distributed
  /// over all 64 bits (use Hash64 or Mix64, not the identity).
  void AddHash(uint64_t hash) {
    const uint64_t index = hash >> (64 - precision_);
    // The sentinel bit caps the rank at 64 − p + 1 when the remaining bits
    // are all zero, without a branch.
    const uint64_t rest = (hash << precision_) | (uint64_t{1} << (precision_ - 1));
    const auto rank = static_cast<uint8_t>(std::countl_zero(rest) + 1);
    uint8_t& reg = registers_[index];
    reg = std::max(reg, rank);  // no branch: early on, whether it raises the register is random
  }

  /// Adds a value by its bytes (Hash64, seed 0).
  void Add(std::string_view value) { AddHash(Hash64(value)); }

  /// Folds `other` in: afterwards this sketch is the sketch of the union.
  /// Sketches of different precisions merge at the lower one (this sketch is
  /// reduced first if it is the more precise).
  void Merge(const HyperLogLog& other);

  /// This sketch at a lower precision, exactly as if every hash had been
  /// added to a sketch of that precision. `precision` must be in
  /// [kMinPrecision, this->precision()].
  HyperLogLog Reduced(int precision) const;

  /// Estimated number of distinct values added, rounded to an integer.
  uint64_t Estimate() const;

  int precision() const { return precision_; }
  /// The raw registers, e.g. for serialising a sketch.
  const std::vector<uint8_t>& registers() const { return registers_; }

 private:
  int precision_;
  std::vector<uint8_t> registers_;
};

}  // namespace tarn::stats
