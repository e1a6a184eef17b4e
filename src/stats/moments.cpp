#include "stats/moments.h"

#include <cmath>  // for sqrt

namespace tarn::stats {

void Moments::AddRepeated(double x, uint64_t times, double weight) {
  if (times == 0) return;
  // `times` copies of x: mean x and zero centred moments.
  Moments block;
  block.count = times;
  block.weight_sum = weight;
  block.weighted_sum = weight * x;
  block.min = x;
  block.max = x;
  block.mean = x;
  Merge(block);
}

void Moments::Merge(const Moments& other) {
  if (other.count == 0) return;
  if (count == 0) {
    *this = other;
    return;
  }
  const double na = static_cast<double>(count);
  const double nb = static_cast<double>(other.count);
  const double n = na + nb;
  const double delta = other.mean - mean;
  const double delta_n = delta / n;
  const double delta2 = delta * delta;
  const double nab = na * nb;
  // Pébay (2008), eq. 3.1 and 3.3 specialised to orders 2..4; each line uses
  // the pre-merge m2 and m3 of both sides.
  const double new_m4 = m4 + other.m4 +
                        delta2 * delta2 * nab * (na * na - nab + nb * nb) / (n * n * n) +
                        6.0 * delta2 * (na * na * other.m2 + nb * nb * m2) / (n * n) +
                        4.0 * delta_n * (na * other.m3 - nb * m3);
  const double new_m3 = m3 + other.m3 + delta * delta2 * nab * (na - nb) / (n * n) +
                        3.0 * delta_n * (na * other.m2 - nb * m2);
  const double new_m2 = m2 + other.m2 + delta2 * nab / n;
  // Weighted-by-count form of the mean: exact when the two means agree.
  mean = mean + delta_n * nb;
  m2 = new_m2;
  m3 = new_m3;
  m4 = new_m4;
  count += other.count;
  min = std::min(min, other.min);
  max = std::max(max, other.max);
  weight_sum += other.weight_sum;
  weighted_sum += other.weighted_sum;
}

double Moments::SampleVariance() const {
  if (count < 2) return 0.0;
  return std::max(0.0, m2) / static_cast<double>(count - 1);
}

double Moments::SampleStdDev() const { return std::sqrt(SampleVariance()); }

double Moments::Skewness() const {
  if (count == 0) return 0.0;
  const double n = static_cast<double>(count);
  const double var = (std::max(0.0, m2) + kShifuVarianceEps) / n;
  return (m3 / n) / (var * std::sqrt(var));
}

double Moments::Kurtosis() const {
  if (count == 0) return 0.0;
  const double n = static_cast<double>(count);
  const double var = (std::max(0.0, m2) + kShifuVarianceEps) / n;
  return (m4 / n) / (var * var);
}

}  // namespace tarn::stats
