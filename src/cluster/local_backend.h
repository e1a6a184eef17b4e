// The local backend: each task is a child process on this machine, its
// output appended to <logs>/<role>-<index>.log. Children die with the
// process that launched them (PR_SET_PDEATHSIG), so a killed coordinator
// leaves no orphans behind.
#pragma once

#include <memory>
#include <string>

#include "cluster/backend.h"

namespace tarn::cluster {

std::unique_ptr<Backend> MakeLocalBackend(const std::string& logs_dir);

}  // namespace tarn::cluster
