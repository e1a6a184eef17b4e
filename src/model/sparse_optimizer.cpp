#include "model/sparse_optimizer.h"

#include <cmath>

#include "common/strings.h"

namespace tarn::model {

const char* SparseOptimizerName(SparseOptimizerKind k) {
  switch (k) {
    case SparseOptimizerKind::kSgd:
      return "sgd";
    case SparseOptimizerKind::kAdaGrad:
      return "adagrad";
    case SparseOptimizerKind::kAdam:
      return "adam";
  }
  return "?";
}

Result<SparseOptimizerKind> ParseSparseOptimizer(std::string_view name) {
  const std::string s = ToLower(std::string(name));
  for (auto k :
       {SparseOptimizerKind::kSgd, SparseOptimizerKind::kAdaGrad, SparseOptimizerKind::kAdam}) {
    if (s == SparseOptimizerName(k)) return k;
  }
  return InvalidArgument("sparse optimizer must be one of sgd, adagrad, adam, got \"" +
                         std::string(name) + "\"");
}

Result<SparseOptimizerConfig> SparseOptimizerConfig::FromDense(const OptimizerConfig& dense) {
  SparseOptimizerConfig c;
  switch (dense.kind) {
    case OptimizerKind::kSgd:
      c.kind = SparseOptimizerKind::kSgd;
      break;
    case OptimizerKind::kAdaGrad:
      c.kind = SparseOptimizerKind::kAdaGrad;
      break;
    case OptimizerKind::kAdam:
      c.kind = SparseOptimizerKind::kAdam;
      break;
    default:
      return InvalidArgument(std::string("train.params.Propagation ") +
                             PropagationName(dense.kind) +
                             " has no sparse form for embedding tables; use B, AdaGrad or Adam");
  }
  c.learning_rate = dense.learning_rate;
  c.learning_decay = dense.learning_decay;
  c.beta1 = dense.adam_beta1;
  c.beta2 = dense.adam_beta2;
  c.epsilon = dense.epsilon;
  return c;
}

Status SparseOptimizerConfig::Validate() const {
  if (static_cast<uint8_t>(kind) > static_cast<uint8_t>(SparseOptimizerKind::kAdam)) {
    return InvalidArgument("unknown sparse optimizer kind " +
                           std::to_string(static_cast<int>(kind)));
  }
  if (!(learning_rate > 0) || !std::isfinite(learning_rate)) {
    return InvalidArgument("sparse optimizer learning rate must be a positive number");
  }
  if (!(learning_decay >= 0 && learning_decay < 1)) {
    return InvalidArgument("sparse optimizer learning decay must be in [0, 1)");
  }
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) {
    return InvalidArgument("sparse optimizer Adam betas must be in [0, 1)");
  }
  if (!(epsilon > 0) || !std::isfinite(epsilon)) {
    return InvalidArgument("sparse optimizer epsilon must be a positive number");
  }
  return Status::Ok();
}

SparseOptimizer::SparseOptimizer(const SparseOptimizerConfig& config, size_t dim)
    : config_(config), dim_(dim) {}

size_t SparseOptimizer::state_per_row() const {
  switch (config_.kind) {
    case SparseOptimizerKind::kSgd:
      return 0;
    case SparseOptimizerKind::kAdaGrad:
      return dim_;
    case SparseOptimizerKind::kAdam:
      return 2 * dim_;
  }
  return 0;
}

void SparseOptimizer::Step(std::span<float* const> rows, std::span<float* const> states,
                           const float* grad, int epoch) {
  ++steps_;
  const double lr = config_.learning_rate *
                    std::pow(1.0 - config_.learning_decay, static_cast<double>(std::max(epoch, 0)));
  const double eps = config_.epsilon;
  switch (config_.kind) {
    case SparseOptimizerKind::kSgd:
      for (size_t r = 0; r < rows.size(); ++r) {
        const float* g = grad + r * dim_;
        for (size_t j = 0; j < dim_; ++j) {
          rows[r][j] = static_cast<float>(rows[r][j] - lr * g[j]);
        }
      }
      return;
    case SparseOptimizerKind::kAdaGrad:
      // The same double-precision arithmetic as the dense AdaGrad.
      for (size_t r = 0; r < rows.size(); ++r) {
        const float* g = grad + r * dim_;
        float* acc = states[r];
        for (size_t j = 0; j < dim_; ++j) {
          const double gj = g[j];
          const double s = acc[j] + gj * gj;
          acc[j] = static_cast<float>(s);
          rows[r][j] = static_cast<float>(rows[r][j] - lr * gj / (std::sqrt(s) + eps));
        }
      }
      return;
    case SparseOptimizerKind::kAdam: {
      // The dense Adam's float form: (m / c1) / (sqrt(v / c2) + eps) =
      // m / (sqrt(v) + eps sqrt(c2)) * sqrt(c2) / c1.
      const double c1 = 1.0 - std::pow(config_.beta1, static_cast<double>(steps_));
      const double c2 = 1.0 - std::pow(config_.beta2, static_cast<double>(steps_));
      const float lr_c = static_cast<float>(lr * std::sqrt(c2) / c1);
      const float eps_c = static_cast<float>(eps * std::sqrt(c2));
      const float b1 = static_cast<float>(config_.beta1);
      const float b2 = static_cast<float>(config_.beta2);
      for (size_t r = 0; r < rows.size(); ++r) {
        const float* g = grad + r * dim_;
        float* m = states[r];
        float* v = states[r] + dim_;
        float* w = rows[r];
        for (size_t j = 0; j < dim_; ++j) {
          const float mj = std::fma(b1, m[j], (1 - b1) * g[j]);
          const float vj = std::fma(b2, v[j], ((1 - b2) * g[j]) * g[j]);
          m[j] = mj;
          v[j] = vj;
          w[j] = w[j] - (lr_c * mj) / (std::sqrt(vj) + eps_c);
        }
      }
      return;
    }
  }
}

}  // namespace tarn::model
