// The embedded backend: every node of the job is a thread of the
// coordinator's process, connected in-process. One process, the same
// coordinator, parameter servers and workers as a multi-process job (used by
// tests and for a job that should not fork). Nodes cannot be killed one by
// one here; failure handling is exercised with the local backend.
#pragma once

#include <memory>

#include "cluster/backend.h"
#include "runtime/transport.h"

namespace tarn::runtime {

std::unique_ptr<cluster::Backend> MakeEmbeddedBackend(std::shared_ptr<Transport> transport);

}  // namespace tarn::runtime
