// Job secrets and HMAC-SHA256 (OpenSSL) for authenticating connections.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tarn::net {

using Digest = std::array<uint8_t, 32>;

Digest HmacSha256(std::string_view key, std::string_view message);
// Cryptographically random bytes (OpenSSL's RAND_bytes).
Status RandomBytes(void* out, size_t n);
// A fresh job secret: 32 random bytes as 64 hex digits.
Result<std::string> NewJobSecret();
// Compares in time independent of where the inputs differ.
bool ConstantTimeEqual(const void* a, const void* b, size_t n);

}  // namespace tarn::net
