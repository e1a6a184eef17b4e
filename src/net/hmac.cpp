#include "net/hmac.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace tarn::net {

Digest HmacSha256(std::string_view key, std::string_view message) {
  Digest out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), out.data(), &len);
  return out;
}

Status RandomBytes(void* out, size_t n) {
  if (RAND_bytes(static_cast<unsigned char*>(out), static_cast<int>(n)) != 1) {
    return Internal("the system's random number generator failed (OpenSSL RAND_bytes)");
  }
  return Status::Ok();
}

Result<std::string> NewJobSecret() {
  uint8_t bytes[32];
  TARN_RETURN_IF_ERROR(RandomBytes(bytes, sizeof(bytes)));
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

bool ConstantTimeEqual(const void* a, const void* b, size_t n) {
  return CRYPTO_memcmp(a, b, n) == 0;
}

}  // namespace tarn::net
