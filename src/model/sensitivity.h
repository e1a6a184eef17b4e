// Sensitivity analysis of a trained network (Shifu's VarSelectMapper and
// VarSelectReducer, behind varSelect.filterBy SE and ST): for every row and
// every input column, the column's inputs are set to 0 (the normalized mean
// under ZSCALE; Shifu drops the input's term from the first layer's sums,
// which is the same) and the row is scored again. The difference is
//   SE: full score - perturbed score
//   ST: target - perturbed score
// and each column gets, over the n rows,
//   mean = sum |d| / n,  rms = sqrt(sum d^2 / n),  variance = sum d^2 / n - mean^2.
// Shifu ranks by rms, largest first, for both SE and ST.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/network.h"
#include "model/training_data.h"

namespace tarn::model {

enum class SensitivityKind {
  kScore,   // SE: how far the score moves
  kTarget,  // ST: how far the perturbed score is from the target
};
// "SE" or "ST", case-insensitively.
Result<SensitivityKind> ParseSensitivityKind(std::string_view name);

struct ColumnSensitivity {
  int column = 0;  // index into TrainingData::columns
  uint64_t rows = 0;
  double sum_abs = 0;  // sum of |d|
  double sum_sq = 0;   // sum of d^2

  double Mean() const;
  double Rms() const;
  double Variance() const;
};

// Every row of `data` (training and validation rows alike, unweighted, as
// Shifu), on `threads` threads. Rows are cut into fixed chunks whose sums are
// added in chunk order, so the result does not depend on the thread count.
// One entry per input column, in input order.
std::vector<ColumnSensitivity> ComputeSensitivity(const Network& net, const float* params,
                                                  const TrainingData& data, SensitivityKind kind,
                                                  int threads);

// Column indexes ordered by rms, largest first (ties keep input order).
std::vector<int> RankByRms(const std::vector<ColumnSensitivity>& sensitivity);

}  // namespace tarn::model
