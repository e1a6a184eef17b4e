// The per-epoch figures tarn train prints, in LOCAL and DIST alike.
//
// Shifu's NN trainer (Guagua: NNMaster, AbstractNNWorker, ParallelGradient,
// SubGradient, NNOutput) prints "Epoch #N Training Error:E Validation
// Error:V". Each worker computes, over its rows, the ErrorCalculation named
// by train#params Loss (default "squared") divided by its row count:
//
//   squared   mean of (y - p)^2   (SquaredErrorCalculation)
//   log       mean of -(y ln p + (1 - y) ln(1 - p))   (LogErrorCalculation)
//   absolute  mean of |y - p|   (AbsoluteErrorCalculation)
//
// and the master averages the workers' figures, unweighted by their row
// counts. The calculations take the row's Encog "significance" (squared
// error: ((y - p)·s)^2), but Shifu's in-memory data set
// (BasicFloatMLDataSet.getRecord) never copies the significance into the
// pair it fills, so every row counts 1 whatever the weight column says:
// the Shifu 0.12.0 reference run on cancer-judgement, weighted by column_3
// (values 7 to 28), prints errors near 0.23. tarn prints that figure, and
// its own loss (the weighted mean of the training loss, log loss by
// default) beside it.
#pragma once

#include <string>  // for string

#include "data/json_fields.h"
#include "model/model_spec.h"

namespace tarn::model {

/// The error Shifu prints for train#params: its "Loss", squared when absent.
LossKind ShifuErrorKind(const TrainParams& params);

/// One row's contribution to Shifu's error. Log error clamps p to
/// [1e-7, 1 - 1e-7] as tarn's loss does (Shifu would print Infinity).
double ShifuRowError(LossKind kind, double p, double y);

/// A running sum of Shifu's error over rows.
struct ShifuError {
  double sum = 0.0;
  double rows = 0.0;
  void Add(LossKind kind, double p, double y) {
    sum += ShifuRowError(kind, p, y);
    rows += 1.0;
  }
  void Merge(const ShifuError& o) {
    sum += o.sum;
    rows += o.rows;
  }
  /// NaN without rows.
  double Mean() const;
};

struct EpochFigures {
  int epoch = 0;                   // 1-based
  double shifu_train_error = 0.0;  // Shifu's Training Error
  double shifu_valid_error = 0.0;  // Shifu's Validation Error; NaN: no validation rows
  double train_loss = 0.0;         // tarn's weighted mean loss
  double valid_loss = 0.0;         // NaN: no validation rows
  double samples_per_sec = 0.0;
  double seconds = 0.0;
  int bag = -1;  // printed when >= 0 (baggingNum > 1)
};

/// "Epoch #3 Training Error:0.1023456789 Validation Error:0.1034567890
///  (loss 0.312345 valid 0.323456, 52340 samples/s, 180 ms) bag 1"
/// Errors and losses without validation rows print as N/A.
std::string FormatEpochLine(const EpochFigures& f);

}  // namespace tarn::model
