// Helpers for the HTTP server's tests.
#pragma once

#include <string>

namespace tarn::net::testing {

// How many complete responses (Content-Length framing; interim 100 Continue
// answers not counted) `s` holds from its start.
inline int CountCompleteResponses(const std::string& s) {
  int n = 0;
  size_t pos = 0;
  while (true) {
    size_t end = s.find("\r\n\r\n", pos);
    if (end == std::string::npos) return n;
    const bool interim = s.compare(pos, 12, "HTTP/1.1 100") == 0;
    size_t cl = s.find("Content-Length: ", pos);
    size_t len = 0;
    if (!interim && cl != std::string::npos && cl < end) len = std::stoul(s.substr(cl + 16));
    if (s.size() < end + 4 + len) return n;
    if (!interim) ++n;
    pos = end + 4 + len;
  }
}

}  // namespace tarn::net::testing
