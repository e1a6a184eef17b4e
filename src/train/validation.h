// The validation pass and its summary. A summary is mergeable: workers'
// summaries added in slot order give the figures of all their rows, and
// LOCAL's single summary is the one-slot case, so `auc/valid` and the
// validation losses mean the same in LOCAL and DIST.
#pragma once

#include <cstdint>
#include <vector>

#include "model/epoch_report.h"
#include "model/network.h"
#include "model/training_data.h"

namespace tarn::train {

/// Validation scores are counted into this many equal-width bins of [0, 1]
/// for the AUC: a summary has a fixed size whatever the row count.
constexpr int kScoreBins = 1000;

struct ValidationSummary {
  double loss = 0;    // weighted loss sum
  double weight = 0;  // sum of the rows' weights
  model::ShifuError shifu;
  // Weight of the positive (target >= 0.5) and negative rows per score bin;
  // empty: no rows.
  std::vector<double> positive, negative;

  void Merge(const ValidationSummary& other);
  double MeanLoss() const;  // NaN without weight
  /// The weighted area under the ROC curve of the binned scores (rows in
  /// one bin count as tied); NaN unless both classes have weight.
  double Auc() const;
};

/// Scores `rows` with `params` on `threads` threads; the same summary for
/// any thread count.
ValidationSummary Validate(const model::Network& net, const float* params,
                           const model::TrainingData& data, const std::vector<uint32_t>& rows,
                           model::LossKind shifu_kind, int threads);

/// The summary of scores already computed: scores[i] is the score of row rows[i].
ValidationSummary SummarizeScores(const model::TrainingData& data,
                                  const std::vector<uint32_t>& rows,
                                  const std::vector<float>& scores, model::LossKind loss,
                                  model::LossKind shifu_kind);

}  // namespace tarn::train
