// Which rows a bag trains on and in which order an epoch visits them, as pure
// functions of (seed, bag, epoch, slot). LOCAL training is slot 0 of one
// slot; a distributed worker passes the slot it holds, so a backup that
// takes a slot over sees exactly the rows and order its predecessor saw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tarn::train {

struct BagSampling {
  double sample_rate = 1.0;  // train.baggingSampleRate
  bool with_replacement = false;
};

/// The training rows of `bag`: all of `train`, a seeded sample of them
/// (sorted, without replacement) or a seeded draw with replacement.
std::vector<uint32_t> BagRows(const std::vector<uint32_t>& train, const BagSampling& sampling,
                              uint64_t seed, int bag, int slot);

/// Shuffles `order` (a bag's rows) into the order of `epoch`. A resumed run
/// sees the same batches as an uninterrupted one.
void ShuffleForEpoch(std::vector<uint32_t>* order, uint64_t seed, int bag, int epoch, int slot);

/// The dropout seed of the rows starting at `position` of an epoch's order
/// (never 0: 0 means no dropout).
uint64_t DropoutSeed(uint64_t seed, int epoch, size_t position, int slot);

/// The seed of a bag's initial parameters.
uint64_t InitSeed(uint64_t seed, int bag);

}  // namespace tarn::train
