// What happens after an epoch's figures are known, the same in LOCAL and
// DIST: the epoch line, the TensorBoard scalars, the divergence error, and
// the best-validation bookkeeping behind early stop and convergence.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "data/json_fields.h"
#include "model/epoch_report.h"
#include "model/tensorboard.h"
#include "train/batch_loop.h"
#include "train/validation.h"

namespace tarn::train {

// An epoch's figures over the slots that trained it, added in slot order
// (LOCAL training: one slot).
struct EpochTotals {
  TrainSums train;
  ValidationSummary valid;
  std::vector<model::ShifuError> shifu_train, shifu_valid;  // each slot's

  void AddSlot(const TrainSums& slot_train, const ValidationSummary& slot_valid);
  /// The epoch line's figures: `epoch` 1-based, `bag` -1 with one bag;
  /// samples/s counts the training pass only.
  model::EpochFigures Figures(int epoch, int bag, double train_seconds, double seconds) const;
};

/// Prints the epoch line (unless quiet) and, with `tensorboard`, writes the
/// epoch's scalars: loss/train, loss/valid and auc/valid when finite,
/// throughput/samples_per_sec; then flushes.
Status ReportEpoch(const model::EpochFigures& figures, double auc,
                   model::TensorBoardWriter* tensorboard);

/// Shifu's error of an epoch several workers trained: each worker's mean,
/// averaged over the workers with rows, unweighted (Shifu's NNMaster). LOCAL
/// training is one worker. NaN without rows.
double ShifuErrorOverWorkers(const std::vector<model::ShifuError>& workers);

/// The error for a training error that is not finite.
Status CheckNotDiverged(int epoch, double train_error);

struct StopRules {
  double convergence_threshold = 0;  // train.convergenceThreshold; 0: off
  int patience = 0;                  // tarn.train.early-stop-patience; 0: off
  std::string who = "train";         // starts its log lines ("train: bag 2")
};

// The best validation loss so far and whether training should stop.
class EarlyStop {
 public:
  explicit EarlyStop(StopRules rules) : rules_(rules) {}

  struct Verdict {
    bool improved = false;     // this epoch has the best validation loss so far
    bool keep_params = false;  // improved, and the best epoch's parameters are kept
    bool stop = false;
  };
  /// Logs why it stops.
  Verdict AfterEpoch(double train_error, double valid_error);

  void Reset();
  /// {"bestValid", "sinceBest"}, as checkpoints store them.
  data::Json SaveState() const;
  void RestoreState(const data::Json& state);

 private:
  StopRules rules_;
  double best_valid_ = INFINITY;
  int since_best_ = 0;
};

}  // namespace tarn::train
