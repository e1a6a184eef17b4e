// What `tarn train` does for runMode DIST on the local backend: starts the
// coordinator (`tarn node --role coordinator`) as a child process with the
// job's secret in its environment, shows its output and keeps a copy in
// logs/coordinator.log, and turns its exit into a Status.
#pragma once

#include <string>

#include "common/status.h"

namespace tarn::runtime {

Status RunCoordinatorProcess(const std::string& tarn_binary, const std::string& job_path,
                             const std::string& secret, const std::string& log_path);

// The path of the running executable (/proc/self/exe).
Result<std::string> SelfExecutable();

}  // namespace tarn::runtime
