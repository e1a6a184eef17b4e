#include "common/checksum.h"

#include <array>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

namespace tarn {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    }
  }
};
constexpr Tables kTables;

}  // namespace

uint32_t Crc32c(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
#if defined(__SSE4_2__)
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = static_cast<uint32_t>(_mm_crc32_u64(c, word));
    p += 8;
    size -= 8;
  }
  while (size--) c = _mm_crc32_u8(c, *p++);
#else
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    word ^= c;
    c = kTables.t[7][word & 0xFF] ^ kTables.t[6][(word >> 8) & 0xFF] ^
        kTables.t[5][(word >> 16) & 0xFF] ^ kTables.t[4][(word >> 24) & 0xFF] ^
        kTables.t[3][(word >> 32) & 0xFF] ^ kTables.t[2][(word >> 40) & 0xFF] ^
        kTables.t[1][(word >> 48) & 0xFF] ^ kTables.t[0][word >> 56];
    p += 8;
    size -= 8;
  }
  while (size--) c = (c >> 8) ^ kTables.t[0][(c ^ *p++) & 0xFF];
#endif
  return ~c;
}

}  // namespace tarn
