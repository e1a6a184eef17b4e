// Words of POSIX shell command lines.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace tarn {

// `s` as one word of a shell command line: in single quotes, each ' written '\''.
std::string ShellQuote(std::string_view s);

// `s` as one word, left bare when it holds only characters no shell treats specially
// (letters, digits, `_./=:,+-@%`), else ShellQuote(s): command lines that people read, such as
// a YARN container's, stay legible.
std::string ShellWord(std::string_view s);

// Runs `command` under /bin/sh and returns what it wrote to stdout.
// FailedPrecondition naming `what` and the exit status when it exits non-zero;
// an errno error when it cannot be started.
Result<std::string> CaptureOutput(const std::string& command, const std::string& what);

}  // namespace tarn
