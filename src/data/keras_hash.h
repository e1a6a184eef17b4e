// The string hashes of Keras' Hashing layer, so that tarn turns a raw
// category into the bin Keras would (issue 11: Keras graphs with Hashing).
//
// Keras 3's Hashing(num_bins, mask_value, salt) hashes each value's text:
//   - without a salt, tf.strings.to_hash_bucket_fast: FarmHash's
//     Fingerprint64 of the UTF-8 bytes (the "na" variant of FarmHash 1.1,
//     seed 81 for inputs over 64 bytes) mod the bins;
//   - with a salt, tf.strings.to_hash_bucket_strong: SipHash-2-4 of the bytes
//     keyed by the two 64-bit salt words (an integer salt s is the key
//     [s, s]) mod the bins;
//   - with a mask_value (and num_bins > 1), the mask value is bin 0 and
//     every other value 1 + its hash mod (num_bins - 1).
// Written from the published algorithms; checked against TensorFlow on every
// distinct value of Adult's categorical columns (tests/integration) and
// pinned by unit tests. They must never change.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tarn::data {

// FarmHash Fingerprint64 (TensorFlow's Fingerprint64, little-endian loads).
uint64_t FarmHashFingerprint64(std::string_view bytes);

// SipHash-2-4 with the 128-bit key (k0, k1) (the key's bytes k0 then k1,
// little-endian), the 64-bit output.
uint64_t SipHash24(std::string_view bytes, uint64_t k0, uint64_t k1);

// The options of one Keras Hashing layer that tarn reproduces.
struct KerasHashing {
  uint32_t num_bins = 1;
  std::optional<std::array<uint64_t, 2>> salt;  // set: SipHash keyed by it
  std::optional<std::string> mask_value;        // set: that text is bin 0

  // The bin of `text`, in [0, num_bins), exactly as Keras' Hashing layer.
  uint32_t Bin(std::string_view text) const;
  bool operator==(const KerasHashing&) const = default;
};

}  // namespace tarn::data
