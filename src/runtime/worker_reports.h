// The two reports a worker sends when it has done what a directive asked:
// epoch_done (its training figures of the epoch) and valid_done (its
// validation summary). The coordinator merges them in slot order.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "data/json_fields.h"
#include "train/batch_loop.h"
#include "train/validation.h"

namespace tarn::runtime {

// Which epoch of which slot a report is about.
struct ReportOrigin {
  int slot = -1;
  int bag = 0;
  int epoch = 0;
  int64_t term = 0;
};

struct EpochDoneReport {
  static constexpr const char* kKind = "epoch_done";
  ReportOrigin origin;
  train::TrainSums sums;  // of the batches this worker trained
  double seconds = 0;
  int64_t stale = 0;   // gradients a parameter server dropped as stale
  uint64_t bytes = 0;  // to and from the parameter servers

  data::Json ToJson() const;
  /// Errors name the missing or mistyped field.
  static Result<EpochDoneReport> FromJson(const data::Json& j);
};

struct ValidDoneReport {
  static constexpr const char* kKind = "valid_done";
  ReportOrigin origin;
  train::ValidationSummary summary;

  data::Json ToJson() const;
  static Result<ValidDoneReport> FromJson(const data::Json& j);
};

}  // namespace tarn::runtime
