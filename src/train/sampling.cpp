#include "train/sampling.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "model/training_data.h"

namespace tarn::train {

using model::MixSeed;

std::vector<uint32_t> BagRows(const std::vector<uint32_t>& train, const BagSampling& sampling,
                              uint64_t seed, int bag, int slot) {
  std::vector<uint32_t> rows = train;
  if (rows.empty()) return rows;
  std::mt19937_64 rng(MixSeed(seed ^ (0xBA6ULL << 32) ^ static_cast<uint64_t>(bag) ^
                              (static_cast<uint64_t>(slot) << 48)));
  if (sampling.with_replacement) {
    const size_t n = static_cast<size_t>(std::llround(sampling.sample_rate * train.size()));
    std::uniform_int_distribution<size_t> pick(0, train.size() - 1);
    rows.resize(std::max<size_t>(1, n));
    for (auto& r : rows) r = train[pick(rng)];
  } else if (sampling.sample_rate < 1.0) {
    std::shuffle(rows.begin(), rows.end(), rng);
    rows.resize(
        std::max<size_t>(1, static_cast<size_t>(std::llround(sampling.sample_rate * rows.size()))));
    std::sort(rows.begin(), rows.end());
  }
  return rows;
}

void ShuffleForEpoch(std::vector<uint32_t>* order, uint64_t seed, int bag, int epoch, int slot) {
  std::mt19937_64 rng(
      MixSeed(seed ^ MixSeed((static_cast<uint64_t>(bag) << 32) ^ static_cast<uint64_t>(epoch) ^
                             (static_cast<uint64_t>(slot) << 48))));
  std::shuffle(order->begin(), order->end(), rng);
}

uint64_t DropoutSeed(uint64_t seed, int epoch, size_t position, int slot) {
  return MixSeed(seed ^ MixSeed((static_cast<uint64_t>(epoch) << 32) ^ position ^
                                (static_cast<uint64_t>(slot) << 56))) |
         1;
}

uint64_t InitSeed(uint64_t seed, int bag) {
  return MixSeed(seed + 7919 * static_cast<uint64_t>(bag));
}

}  // namespace tarn::train
