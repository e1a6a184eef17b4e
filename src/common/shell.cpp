#include "common/shell.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tarn {

std::string ShellQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string ShellWord(std::string_view s) {
  const bool bare = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_./=:,+-@%", c) != nullptr;
  });
  return bare ? std::string(s) : ShellQuote(s);
}

Result<std::string> CaptureOutput(const std::string& command, const std::string& what) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return ErrnoError("running " + what, errno);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) text.append(buf, n);
  const int rc = ::pclose(pipe);
  if (rc != 0) {
    return FailedPrecondition(what + " failed (exit status " + std::to_string(rc >> 8) + ")");
  }
  return text;
}

}  // namespace tarn
