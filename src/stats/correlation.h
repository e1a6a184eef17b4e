// Pearson correlation between numeric columns (Shifu's `stats -c`,
// correlation.csv and varSelect.correlationThreshold).
#pragma once

#include <cstddef>  // for size_t
#include <cstdint>  // for uint64_t
#include <vector>   // for vector

namespace tarn::stats {

/// Streaming co-moments of `columns` variables, mergeable across threads.
///
/// Keeps means and the co-moment matrix C_ij = Σ(x_i − mean_i)(x_j − mean_j)
/// updated Welford-style, C_ij += (x_i − old mean_i)(x_j − new mean_j), which
/// is exact in real arithmetic and avoids the cancellation of Σxy − ΣxΣy/n.
/// The running means are kept relative to a per-column shift (the first row
/// seen), so columns on a large offset (timestamps, ids) lose no digits to
/// the rounding of a large mean; Welford keeps it robust even when the first
/// row is far from the rest.
/// Only the upper triangle is stored (packed row by row) and updated: each
/// row of it is one contiguous multiply-add loop the compiler vectorises.
/// Add() is O(columns²/2).
///
/// Rows must be complete and finite: impute missing values before Add().
/// Not thread-safe; give each thread its own and Merge().
class CorrelationAccumulator {
 public:
  explicit CorrelationAccumulator(size_t columns);

  /// Adds one row of `columns` values.
  void Add(const double* values);

  /// Folds `other` in (Chan et al. pairwise update). Both must have the same
  /// column count (checked by assertion).
  void Merge(const CorrelationAccumulator& other);

  /// Row-major columns × columns Pearson correlations, symmetric, clamped to
  /// [-1, 1], 1 on the diagonal, and 0 off the diagonal wherever either
  /// column has zero variance (or fewer than 2 rows were added).
  std::vector<double> Pearson() const;

  /// Row-major sample covariance (n−1 denominator); zeros when count < 2.
  std::vector<double> Covariance() const;

  size_t columns() const { return columns_; }
  uint64_t count() const { return count_; }
  /// Column means (0 while empty).
  std::vector<double> Means() const;

 private:
  // Where row i of the packed upper triangle starts; it holds j = i..columns-1.
  size_t RowStart(size_t i) const { return i * columns_ - i * (i - 1) / 2; }
  double Comoment(size_t i, size_t j) const;

  size_t columns_;
  uint64_t count_ = 0;
  std::vector<double> shift_;      // first row seen
  std::vector<double> mean_;       // running mean of x − shift
  std::vector<double> comoment_;   // packed upper triangle, diagonal included
  std::vector<double> delta_old_;  // scratch: x − old mean
  std::vector<double> delta_new_;  // scratch: x − new mean
};

}  // namespace tarn::stats
