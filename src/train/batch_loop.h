// The training pass of one epoch, shared by LOCAL training and every
// distributed worker: gathers each mini-batch's rows, runs forward-backward
// and hands the batch's gradient sum to a sink (LOCAL: the optimizer steps;
// a worker: a push to the parameter servers every commPeriod batches).
//
// A batch is cut into slices whose number depends on the batch size only
// (one below 512 rows, then one per 256 rows up to kMaxSlices); each slice's
// gradient goes into its own buffer and the buffers are added in slice
// order. The team of threads only decides who computes which slice, so the
// figures are the same for any thread count, on one machine or many.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "common/status.h"
#include "common/thread_pool.h"
#include "model/epoch_report.h"
#include "model/network.h"
#include "model/training_data.h"

namespace tarn::train {

/// The training figures of (part of) an epoch.
struct TrainSums {
  double loss = 0;    // weighted loss sum
  double weight = 0;  // sum of the rows' weights
  model::ShifuError shifu;
  int64_t rows = 0;
  double MeanLoss() const;  // NaN without weight
};

struct BatchLoopConfig {
  int batch = 128;  // rows per mini-batch; full-batch training passes the bag's row count
  int threads = 1;  // the most threads a batch may use (never changes the figures)
  uint64_t seed = 0;
  int slot = 0;  // LOCAL: 0
  model::LossKind shifu_kind = model::LossKind::kSquared;
};

class BatchLoop {
 public:
  static constexpr int kMaxSlices = 16;

  BatchLoop(const model::Network& net, const model::TrainingData& data, BatchLoopConfig config);

  int64_t Batches(size_t rows) const;

  // Called after each batch with the batch's gradient sum (the sink may scale
  // or keep it), the batch's weight, its index and the rows of the order done.
  using GradientSink = std::function<Status(std::span<float> gradient_sum, double weight,
                                            int64_t batch, size_t done)>;

  // Trains batches first_batch.. of `order` (an epoch's rows) with the
  // parameters `params` as they are when each batch starts; adds the figures
  // of the batches run to *sums.
  Status RunEpoch(const float* params, const std::vector<uint32_t>& order, int epoch,
                  int64_t first_batch, const GradientSink& sink, TrainSums* sums);

 private:
  struct Slice {
    std::vector<float> grad;
    double loss = 0, weight = 0;
    model::ShifuError shifu;
  };
  struct Member {
    std::unique_ptr<model::Workspace> ws;
    std::vector<float> xb, yb, wb, pred;
  };
  void RunSlice(const float* params, const std::vector<uint32_t>& order, int epoch, size_t lo,
                size_t hi, Member* m, Slice* s) const;

  const model::Network& net_;
  const model::TrainingData& data_;
  BatchLoopConfig config_;
  int slices_ = 1, chunk_ = 1;
  std::vector<Slice> slice_;
  std::vector<Member> member_;
  std::unique_ptr<SpinTeam> team_;
  std::vector<float> grad_;
};

}  // namespace tarn::train
