#include "model/epoch_report.h"

#include <algorithm>  // for clamp
#include <cmath>      // for log, fabs, isfinite, NAN
#include <cstdio>     // for snprintf

#include "common/strings.h"
#include "model/train_params.h"

namespace tarn::model {

LossKind ShifuErrorKind(const TrainParams& params) {
  return params.loss.value_or(LossKind::kSquared);
}

double ShifuRowError(LossKind kind, double p, double y) {
  if (kind == LossKind::kLog) {
    p = std::clamp(p, 1e-7, 1 - 1e-7);
    return -(y * std::log(p) + (1 - y) * std::log(1 - p));
  }
  if (kind == LossKind::kAbsolute) return std::fabs(y - p);
  return (y - p) * (y - p);
}

double ShifuError::Mean() const { return rows > 0 ? sum / rows : NAN; }

namespace {

std::string Figure(double v, int decimals) {
  if (!std::isfinite(v)) return "N/A";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

}  // namespace

std::string FormatEpochLine(const EpochFigures& f) {
  std::string line = "Epoch #" + std::to_string(f.epoch) +
                     " Training Error:" + Figure(f.shifu_train_error, 10) +
                     " Validation Error:" + Figure(f.shifu_valid_error, 10) + "  (loss " +
                     Figure(f.train_loss, 6) + " valid " + Figure(f.valid_loss, 6) + ", ";
  char rate[48];
  std::snprintf(rate, sizeof(rate), "%.0f samples/s, ", f.samples_per_sec);
  line += rate;
  if (f.seconds < 1) {
    char ms[32];
    std::snprintf(ms, sizeof(ms), "%.0f ms", f.seconds * 1000);
    line += ms;
  } else {
    line += FormatDuration(f.seconds);
  }
  line += ")";
  if (f.bag >= 0) line += " bag " + std::to_string(f.bag);
  return line;
}

}  // namespace tarn::model
