#include "data/keras_hash.h"

#include <cstring>
#include <utility>

namespace tarn::data {

namespace {

// FarmHash's three multipliers.
constexpr uint64_t kFarm0 = 0xc3a5c85c97cb3127ULL;
constexpr uint64_t kFarm1 = 0xb492b66fbe98f273ULL;
constexpr uint64_t kFarm2 = 0x9ae16a3b2f90404fULL;

uint64_t Load64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint64_t Load32(const char* p) {
  uint64_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint64_t RotateRight(uint64_t v, int shift) { return (v >> shift) | (v << (64 - shift)); }
uint64_t RotateLeft(uint64_t v, int shift) { return (v << shift) | (v >> (64 - shift)); }
uint64_t ShiftMix(uint64_t v) { return v ^ (v >> 47); }

// Two 64-bit values folded into one under `mul`.
uint64_t Fold(uint64_t u, uint64_t v, uint64_t mul) {
  uint64_t a = (u ^ v) * mul;
  a ^= a >> 47;
  uint64_t b = (v ^ a) * mul;
  b ^= b >> 47;
  return b * mul;
}

uint64_t Short0To16(const char* s, size_t len) {
  if (len >= 8) {
    const uint64_t mul = kFarm2 + len * 2;
    const uint64_t a = Load64(s) + kFarm2;
    const uint64_t b = Load64(s + len - 8);
    const uint64_t c = RotateRight(b, 37) * mul + a;
    const uint64_t d = (RotateRight(a, 25) + b) * mul;
    return Fold(c, d, mul);
  }
  if (len >= 4) {
    const uint64_t mul = kFarm2 + len * 2;
    return Fold(len + (Load32(s) << 3), Load32(s + len - 4), mul);
  }
  if (len > 0) {
    // The first, middle and last byte, in 32-bit arithmetic.
    const uint32_t first = static_cast<unsigned char>(s[0]);
    const uint32_t middle = static_cast<unsigned char>(s[len >> 1]);
    const uint32_t last = static_cast<unsigned char>(s[len - 1]);
    const uint32_t y = first + (middle << 8);
    const uint32_t z = static_cast<uint32_t>(len) + (last << 2);
    return ShiftMix(y * kFarm2 ^ z * kFarm0) * kFarm2;
  }
  return kFarm2;
}

uint64_t Short17To32(const char* s, size_t len) {
  const uint64_t mul = kFarm2 + len * 2;
  const uint64_t a = Load64(s) * kFarm1;
  const uint64_t b = Load64(s + 8);
  const uint64_t c = Load64(s + len - 8) * mul;
  const uint64_t d = Load64(s + len - 16) * kFarm2;
  return Fold(RotateRight(a + b, 43) + RotateRight(c, 30) + d, a + RotateRight(b + kFarm2, 18) + c,
              mul);
}

uint64_t Short33To64(const char* s, size_t len) {
  const uint64_t mul = kFarm2 + len * 2;
  const uint64_t a = Load64(s) * kFarm2;
  const uint64_t b = Load64(s + 8);
  const uint64_t c = Load64(s + len - 8) * mul;
  const uint64_t d = Load64(s + len - 16) * kFarm2;
  const uint64_t y = RotateRight(a + b, 43) + RotateRight(c, 30) + d;
  const uint64_t z = Fold(y, a + RotateRight(b + kFarm2, 18) + c, mul);
  const uint64_t e = Load64(s + 16) * mul;
  const uint64_t f = Load64(s + 24);
  const uint64_t g = (y + Load64(s + len - 32)) * mul;
  const uint64_t h = (z + Load64(s + len - 24)) * mul;
  return Fold(RotateRight(e + f, 43) + RotateRight(g, 30) + h, e + RotateRight(f + a, 18) + g, mul);
}

// Mixes 32 bytes at `s` into the running pair seeded by (a, b).
std::pair<uint64_t, uint64_t> Mix32(const char* s, uint64_t a, uint64_t b) {
  const uint64_t w = Load64(s), x = Load64(s + 8), y = Load64(s + 16), z = Load64(s + 24);
  a += w;
  b = RotateRight(b + a + z, 21);
  const uint64_t c = a;
  a += x;
  a += y;
  b += RotateRight(a, 44);
  return {a + z, b + c};
}

void SipRound(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3) {
  v0 += v1;
  v1 = RotateLeft(v1, 13);
  v1 ^= v0;
  v0 = RotateLeft(v0, 32);
  v2 += v3;
  v3 = RotateLeft(v3, 16);
  v3 ^= v2;
  v0 += v3;
  v3 = RotateLeft(v3, 21);
  v3 ^= v0;
  v2 += v1;
  v1 = RotateLeft(v1, 17);
  v1 ^= v2;
  v2 = RotateLeft(v2, 32);
}

}  // namespace

uint64_t FarmHashFingerprint64(std::string_view bytes) {
  const char* s = bytes.data();
  const size_t len = bytes.size();
  if (len <= 16) return Short0To16(s, len);
  if (len <= 32) return Short17To32(s, len);
  if (len <= 64) return Short33To64(s, len);

  // Over 64 bytes: 64-byte blocks into a 56-byte state (v, w, x, y, z), then
  // the last 64 bytes (which may overlap the last block) once more.
  constexpr uint64_t kSeed = 81;
  uint64_t x = kSeed;
  uint64_t y = kSeed * kFarm1 + 113;
  uint64_t z = ShiftMix(y * kFarm2 + 113) * kFarm2;
  std::pair<uint64_t, uint64_t> v{0, 0}, w{0, 0};
  x = x * kFarm2 + Load64(s);
  const char* end = s + ((len - 1) / 64) * 64;
  const char* last64 = s + len - 64;
  do {
    x = RotateRight(x + y + v.first + Load64(s + 8), 37) * kFarm1;
    y = RotateRight(y + v.second + Load64(s + 48), 42) * kFarm1;
    x ^= w.second;
    y += v.first + Load64(s + 40);
    z = RotateRight(z + w.first, 33) * kFarm1;
    v = Mix32(s, v.second * kFarm1, x + w.first);
    w = Mix32(s + 32, z + w.second, y + Load64(s + 16));
    std::swap(z, x);
    s += 64;
  } while (s != end);
  const uint64_t mul = kFarm1 + ((z & 0xff) << 1);
  s = last64;
  w.first += (len - 1) & 63;
  v.first += w.first;
  w.first += v.first;
  x = RotateRight(x + y + v.first + Load64(s + 8), 37) * mul;
  y = RotateRight(y + v.second + Load64(s + 48), 42) * mul;
  x ^= w.second * 9;
  y += v.first * 9 + Load64(s + 40);
  z = RotateRight(z + w.first, 33) * mul;
  v = Mix32(s, v.second * mul, x + w.first);
  w = Mix32(s + 32, z + w.second, y + Load64(s + 16));
  std::swap(z, x);
  return Fold(Fold(v.first, w.first, mul) + ShiftMix(y) * kFarm0 + z,
              Fold(v.second, w.second, mul) + x, mul);
}

uint64_t SipHash24(std::string_view bytes, uint64_t k0, uint64_t k1) {
  uint64_t v0 = k0 ^ 0x736f6d6570736575ULL;
  uint64_t v1 = k1 ^ 0x646f72616e646f6dULL;
  uint64_t v2 = k0 ^ 0x6c7967656e657261ULL;
  uint64_t v3 = k1 ^ 0x7465646279746573ULL;
  const size_t len = bytes.size();
  const size_t whole = len - len % 8;
  for (size_t i = 0; i < whole; i += 8) {
    const uint64_t m = Load64(bytes.data() + i);
    v3 ^= m;
    SipRound(v0, v1, v2, v3);
    SipRound(v0, v1, v2, v3);
    v0 ^= m;
  }
  // The last 0 to 7 bytes, little-endian, under the length's low byte.
  uint64_t last = static_cast<uint64_t>(len & 0xff) << 56;
  for (size_t i = whole; i < len; ++i) {
    last |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * (i - whole));
  }
  v3 ^= last;
  SipRound(v0, v1, v2, v3);
  SipRound(v0, v1, v2, v3);
  v0 ^= last;
  v2 ^= 0xff;
  for (int r = 0; r < 4; ++r) SipRound(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

uint32_t KerasHashing::Bin(std::string_view text) const {
  // Keras reserves bin 0 for the mask value only when there is another bin.
  const bool masked = mask_value.has_value() && num_bins > 1;
  if (masked && text == *mask_value) return 0;
  const uint64_t bins = masked ? num_bins - 1 : num_bins;
  const uint64_t hash =
      salt ? SipHash24(text, (*salt)[0], (*salt)[1]) : FarmHashFingerprint64(text);
  return static_cast<uint32_t>(hash % bins) + (masked ? 1 : 0);
}

}  // namespace tarn::data
