#include "cli.h"

#include <cstdio>

#include "common/log.h"
#include "common/progress.h"

namespace tarn::app {

int ExitCodeFor(const Status& status) {
  if (status.ok()) return 0;
  const StatusCode c = status.code();
  return c == StatusCode::kInvalidArgument || c == StatusCode::kUnsupported ? kExitUsage
                                                                            : kExitFailure;
}

int Fail(const std::string& who, const Status& status) {
  std::fprintf(stderr, "%s: error: %s\n", who.c_str(), status.message().c_str());
  return ExitCodeFor(status);
}

int UsageError(const std::string& who, const std::string& message, const std::string& hint) {
  std::fprintf(stderr, "%s: %s%s%s\n", who.c_str(), message.c_str(), hint.empty() ? "" : " ",
               hint.c_str());
  return kExitUsage;
}

bool ApplyVerbosityFlag(const std::string& arg) {
  if (arg == "-v" || arg == "--verbose") {
    SetLogLevel(LogLevel::kDebug);
    return true;
  }
  if (arg == "-q" || arg == "--quiet") {
    SetLogLevel(LogLevel::kWarn);
    Progress::SetEnabled(false);
    return true;
  }
  return false;
}

}  // namespace tarn::app
