// CRC-32C (Castagnoli), used to checksum shards, model files and checkpoints.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tarn {

// Extends `crc` (0 for a fresh checksum) with `size` bytes of `data`.
uint32_t Crc32c(uint32_t crc, const void* data, size_t size);

}  // namespace tarn
