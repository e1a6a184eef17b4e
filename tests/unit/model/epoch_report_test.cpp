#include "model/epoch_report.h"

#include <gtest/gtest.h>

#include <cmath>  // for log, NAN

#include "model/train_params.h"

namespace tarn::model {
namespace {

// Shifu's Squared, Log and Absolute ErrorCalculation, each row counting 1
// (Shifu's in-memory data set drops the weight).
TEST(ShifuErrorTest, RowErrorsFollowShifusCalculations) {
  EXPECT_DOUBLE_EQ(ShifuRowError(LossKind::kSquared, 0.25, 1.0), 0.5625);
  EXPECT_DOUBLE_EQ(ShifuRowError(LossKind::kAbsolute, 0.25, 0.0), 0.25);
  EXPECT_DOUBLE_EQ(ShifuRowError(LossKind::kLog, 0.25, 0.0), -std::log(0.75));
  EXPECT_DOUBLE_EQ(ShifuRowError(LossKind::kLog, 0.25, 1.0), -std::log(0.25));
  EXPECT_TRUE(std::isfinite(ShifuRowError(LossKind::kLog, 0.0, 1.0)));  // clamped
}

TEST(ShifuErrorTest, MeanIsOverRows) {
  ShifuError e;
  e.Add(LossKind::kSquared, 0.5, 1.0);  // 0.25
  e.Add(LossKind::kSquared, 0.0, 0.0);  // 0
  EXPECT_DOUBLE_EQ(e.Mean(), 0.125);
  ShifuError other;
  other.Add(LossKind::kSquared, 1.0, 0.0);  // 1
  e.Merge(other);
  EXPECT_DOUBLE_EQ(e.Mean(), 1.25 / 3.0);
  EXPECT_TRUE(std::isnan(ShifuError{}.Mean()));
}

TEST(ShifuErrorTest, KindIsTrainParamsLossDefaultSquared) {
  auto kind = [](const data::Json& params) {
    return ShifuErrorKind(TrainParams::Parse(params, "LR").value());
  };
  EXPECT_EQ(kind(data::Json::object()), LossKind::kSquared);
  EXPECT_EQ(kind({{"Loss", "log"}}), LossKind::kLog);
  EXPECT_EQ(kind({{"Loss", "absolute"}}), LossKind::kAbsolute);
  // TF.loss sets the loss tarn trains, not Shifu's printed error.
  EXPECT_EQ(
      ShifuErrorKind(
          TrainParams::Parse({{"TF.loss", "log"}, {"NumHiddenNodes", {4}}}, "TensorFlow").value()),
      LossKind::kSquared);
}

TEST(EpochLineTest, ShifusWordsThenTarnsLoss) {
  EpochFigures f;
  f.epoch = 3;
  f.shifu_train_error = 0.1023456789123;
  f.shifu_valid_error = 0.10345678901;
  f.train_loss = 0.3123454;
  f.valid_loss = 0.3234561;
  f.samples_per_sec = 52340.4;
  f.seconds = 0.18;
  EXPECT_EQ(FormatEpochLine(f),
            "Epoch #3 Training Error:0.1023456789 Validation Error:0.1034567890  (loss 0.312345 "
            "valid 0.323456, 52340 samples/s, 180 ms)");
  f.shifu_valid_error = f.valid_loss = NAN;
  f.bag = 1;
  EXPECT_EQ(FormatEpochLine(f),
            "Epoch #3 Training Error:0.1023456789 Validation Error:N/A  (loss 0.312345 valid "
            "N/A, 52340 samples/s, 180 ms) bag 1");
}

}  // namespace
}  // namespace tarn::model
