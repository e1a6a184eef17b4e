// Minimal leveled logging to stderr. Long-running steps report progress through
// Progress (progress.h), not through log lines.
#pragma once

#include <sstream>
#include <string>

namespace tarn {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// -q: warnings and errors only, no progress or per-epoch lines; what a command is asked
// to print (varsel -list, tarn settings) still prints.
inline bool Quiet() { return GetLogLevel() > LogLevel::kInfo; }
void LogLine(LogLevel level, const std::string& message);

namespace detail {
class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage() { LogLine(level_, stream_.str()); }
  std::ostringstream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace detail

}  // namespace tarn

#define TARN_LOG(level)                                  \
  if (::tarn::LogLevel::level < ::tarn::GetLogLevel()) { \
  } else                                                 \
    ::tarn::detail::LogMessage(::tarn::LogLevel::level).stream()
