// Seeded random draws for parameter initialization, shared by the MLP
// (network.h) and the graph engine (graph.h) so both draw the same
// distributions from the same stream on every machine.
#pragma once

#include <cmath>
#include <cstdint>

#include "model/model_spec.h"

namespace tarn::model {

// splitmix64: a small, portable, seedable generator (same stream everywhere).
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }
  // Standard normal (Box-Muller; one value per call).
  double Normal() {
    double u1 = Uniform();
    double u2 = Uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

// One weight of a layer with fan_in inputs and fan_out outputs, drawn as the
// Initializer says (model_spec.h).
inline double DrawWeight(Initializer init, double fan_in, double fan_out, SplitMix& rng) {
  switch (init) {
    case Initializer::kXavier:
      return (2.0 * rng.Uniform() - 1.0) * std::sqrt(6.0 / (fan_in + fan_out));
    case Initializer::kHe:
      return rng.Normal() * std::sqrt(2.0 / fan_in);
    case Initializer::kLecun:
      return rng.Normal() * std::sqrt(1.0 / fan_in);
    case Initializer::kGaussian:
      return rng.Normal();
    case Initializer::kUniform:
      return (2.0 * rng.Uniform() - 1.0) * 0.05;
  }
  return 0;
}

}  // namespace tarn::model
