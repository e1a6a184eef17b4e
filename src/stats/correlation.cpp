#include "stats/correlation.h"

#include <algorithm>  // for clamp, swap
#include <cassert>    // for assert
#include <cmath>      // for sqrt

namespace tarn::stats {

CorrelationAccumulator::CorrelationAccumulator(size_t columns)
    : columns_(columns),
      shift_(columns, 0.0),
      mean_(columns, 0.0),
      comoment_(columns * (columns + 1) / 2, 0.0),
      delta_old_(columns, 0.0),
      delta_new_(columns, 0.0) {}

void CorrelationAccumulator::Add(const double* values) {
  if (count_ == 0) shift_.assign(values, values + columns_);
  ++count_;
  const double inv_n = 1.0 / static_cast<double>(count_);
  const size_t c = columns_;
  const double* __restrict shift = shift_.data();
  double* __restrict mean = mean_.data();
  double* __restrict d_old = delta_old_.data();
  double* __restrict d_new = delta_new_.data();
  for (size_t i = 0; i < c; ++i) {
    const double x = values[i] - shift[i];
    const double d = x - mean[i];
    d_old[i] = d;
    mean[i] += d * inv_n;
    d_new[i] = x - mean[i];
  }
  double* __restrict row = comoment_.data();
  for (size_t i = 0; i < c; ++i) {
    const double a = d_old[i];
    const double* __restrict b = d_new + i;
    const size_t len = c - i;
    for (size_t k = 0; k < len; ++k) row[k] += a * b[k];
    row += len;
  }
}

void CorrelationAccumulator::Merge(const CorrelationAccumulator& other) {
  assert(other.columns_ == columns_ && "CorrelationAccumulator::Merge needs equal column counts");
  if (other.count_ == 0) return;
  if (count_ == 0) {
    count_ = other.count_;
    shift_ = other.shift_;
    mean_ = other.mean_;
    comoment_ = other.comoment_;
    return;
  }
  const double na = static_cast<double>(count_);
  const double nb = static_cast<double>(other.count_);
  const double n = na + nb;
  const double scale = na * nb / n;
  // Difference of the two means, in this accumulator's shifted frame.
  std::vector<double>& delta = delta_old_;  // reuse scratch
  for (size_t i = 0; i < columns_; ++i) {
    delta[i] = (other.shift_[i] - shift_[i]) + (other.mean_[i] - mean_[i]);
  }
  double* row = comoment_.data();
  const double* other_row = other.comoment_.data();
  for (size_t i = 0; i < columns_; ++i) {
    const double a = delta[i] * scale;
    const size_t len = columns_ - i;
    for (size_t k = 0; k < len; ++k) row[k] += other_row[k] + a * delta[i + k];
    row += len;
    other_row += len;
  }
  for (size_t i = 0; i < columns_; ++i) mean_[i] += delta[i] * (nb / n);
  count_ += other.count_;
}

std::vector<double> CorrelationAccumulator::Means() const {
  std::vector<double> means(columns_, 0.0);
  if (count_ == 0) return means;
  for (size_t i = 0; i < columns_; ++i) means[i] = shift_[i] + mean_[i];
  return means;
}

double CorrelationAccumulator::Comoment(size_t i, size_t j) const {
  if (i > j) std::swap(i, j);
  return comoment_[RowStart(i) + (j - i)];
}

std::vector<double> CorrelationAccumulator::Pearson() const {
  const size_t c = columns_;
  std::vector<double> r(c * c, 0.0);
  for (size_t i = 0; i < c; ++i) {
    r[i * c + i] = 1.0;
    const double var_i = Comoment(i, i);
    if (count_ < 2 || !(var_i > 0.0)) continue;
    for (size_t j = i + 1; j < c; ++j) {
      const double var_j = Comoment(j, j);
      if (!(var_j > 0.0)) continue;
      const double value =
          std::clamp(Comoment(i, j) / (std::sqrt(var_i) * std::sqrt(var_j)), -1.0, 1.0);
      r[i * c + j] = value;
      r[j * c + i] = value;
    }
  }
  return r;
}

std::vector<double> CorrelationAccumulator::Covariance() const {
  const size_t c = columns_;
  std::vector<double> cov(c * c, 0.0);
  if (count_ < 2) return cov;
  const double inv = 1.0 / static_cast<double>(count_ - 1);
  for (size_t i = 0; i < c; ++i) {
    for (size_t j = i; j < c; ++j) {
      const double value = Comoment(i, j) * inv;
      cov[i * c + j] = value;
      cov[j * c + i] = value;
    }
  }
  return cov;
}

}  // namespace tarn::stats
