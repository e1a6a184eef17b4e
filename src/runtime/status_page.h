// The coordinator's status page: a small self-contained HTML page (no
// scripts or external assets; it refreshes itself) built from the same JSON
// as tmp/cluster.json plus the per-epoch history.
#pragma once

#include <string>

#include "data/json_fields.h"

namespace tarn::runtime {

std::string RenderStatusPage(const data::Json& status);

}  // namespace tarn::runtime
