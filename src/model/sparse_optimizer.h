// Optimizers for sparse parameters (embedding tables): a step updates only
// the rows a mini-batch touched, and only their state. Untouched rows keep
// their values and their state exactly.
//
// For a touched row with mean gradient g (the caller divides the summed
// gradient by the batch's total weight) and lr_e = lr * (1 - decay)^epoch:
//   kSgd:     w -= lr_e * g                       (no state; no momentum)
//   kAdaGrad: G += g^2; w -= lr_e * g / (sqrt(G) + eps)   (G per row, from 0)
//   kAdam:    as PyTorch's SparseAdam, only touched rows' moments move:
//             m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//             w -= lr_e * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
//             t is the TABLE's step counter (one per Step call, touched or
//             not), as SparseAdam's state['step'] is per parameter tensor, so
//             a row touched for the first time at step 100 is corrected with
//             t = 100, not 1. eps is added to sqrt(v / (1 - b2^t)) as tarn's
//             dense Adam does (SparseAdam adds it to sqrt(v)); with every row
//             touched every step the update equals the dense Adam's.
// Regularization is not applied to sparse rows: a penalty on untouched rows
// would need every row every step (PyTorch's sparse optimizers have none).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "model/optimizer.h"

namespace tarn::model {

enum class SparseOptimizerKind : uint8_t { kSgd = 0, kAdaGrad = 1, kAdam = 2 };
const char* SparseOptimizerName(SparseOptimizerKind k);  // "sgd", "adagrad", "adam"
Result<SparseOptimizerKind> ParseSparseOptimizer(std::string_view name);

struct SparseOptimizerConfig {
  SparseOptimizerKind kind = SparseOptimizerKind::kAdam;
  // The dense optimizer's defaults, train#params' declared ones.
  double learning_rate = OptimizerConfig().learning_rate;
  double learning_decay = OptimizerConfig().learning_decay;
  double beta1 = OptimizerConfig().adam_beta1, beta2 = OptimizerConfig().adam_beta2;
  double epsilon = OptimizerConfig().epsilon;

  bool operator==(const SparseOptimizerConfig&) const = default;
  // The job's dense optimizer settings carried over to its tables: Adam and
  // AdaGrad as they are, B as plain SGD (Momentum is not applied to sparse
  // rows); the other Propagation kinds have no lazy form and are refused.
  static Result<SparseOptimizerConfig> FromDense(const OptimizerConfig& dense);
  Status Validate() const;
};

class SparseOptimizer {
 public:
  SparseOptimizer(const SparseOptimizerConfig& config, size_t dim);

  const SparseOptimizerConfig& config() const { return config_; }
  size_t dim() const { return dim_; }
  // Floats of state kept per row: 0 (SGD), dim (AdaGrad), 2 dim (Adam: m, v).
  size_t state_per_row() const;

  // One step over the touched rows: rows[i] and states[i] point at row i's
  // dim values and state_per_row() state floats, grad is rows.size() x dim
  // (row-major mean gradients). Counts one step even when rows is empty.
  void Step(std::span<float* const> rows, std::span<float* const> states, const float* grad,
            int epoch);

  // The table's step counter t (checkpointed with the rows).
  uint64_t steps() const { return steps_; }
  void set_steps(uint64_t steps) { steps_ = steps; }

 private:
  SparseOptimizerConfig config_;
  size_t dim_;
  uint64_t steps_ = 0;
};

}  // namespace tarn::model
