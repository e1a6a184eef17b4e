// Words of POSIX shell command lines.
#pragma once

#include <string>
#include <string_view>

namespace tarn {

// `s` as one word of a shell command line: in single quotes, each ' written '\''.
std::string ShellQuote(std::string_view s);

}  // namespace tarn
