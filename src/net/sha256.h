// SHA-256 (OpenSSL) of a byte string, for recognizing files by their content.
#pragma once

#include <string>
#include <string_view>

namespace tarn::net {

// SHA-256 of `data` as 64 lower-case hex digits.
std::string Sha256Hex(std::string_view data);

}  // namespace tarn::net
