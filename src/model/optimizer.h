// Optimizers: parameter updates from the mean gradient of a mini-batch (or of
// the whole training set for the full-batch kinds R and Q).
//
// Every step, for parameter i with mean gradient g_i (the caller divides the
// summed gradient by the batch's total weight):
//   1. Regularization, weights only (biases are never regularized):
//        L2: g_i += reg * w_i      (penalty reg * sum(w^2) / 2)
//        L1: g_i += reg * sign(w_i) (penalty reg * sum|w|)
//      reg = RegularizedConstant; nothing when it is 0 or L1orL2 is NONE.
//      (Shifu shrinks weights after the update instead, scaled by 1/#rows;
//      tarn folds the penalty into the gradient so every optimizer sees it.)
//   2. The learning rate for 0-based epoch e is lr_e = lr * (1 - decay)^e, as
//      Shifu's NNMaster (lr multiplied by (1 - LearningDecay) each iteration).
//   3. The update, with g the regularized gradient:
//      kSgd ("B"), kMomentum ("Momentum"): v = momentum * v - lr_e * g; w += v
//          (Shifu's backpropagation keeps momentum too; Momentum 0 is plain SGD)
//      kNesterov: v = momentum * v - lr_e * g; w += momentum * v - lr_e * g
//      kAdaGrad:  G += g^2; w -= lr_e * g / (sqrt(G) + eps)
//      kRmsProp:  S = rho * S + (1 - rho) g^2, rho = kRmsPropDecay (0.99, Encog's);
//                 w -= lr_e * g / (sqrt(S) + eps)
//      kAdam:     t += 1; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//                 w -= lr_e * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
//      kManhattan ("M"): w -= lr_e * sign(g)
//      kResilient ("R", full batch): Rprop with weight backtracking, as Encog
//          and Shifu: per-weight step starts at 0.1; if g keeps its sign the
//          step grows x1.2 (at most 50) and w -= sign(g) * step; if it flips
//          the step shrinks x0.5 (at least 1e-6), the previous change is undone
//          and the stored gradient is zeroed; after a zero, w -= sign(g) * step.
//          The learning rate is not used.
//      kQuick ("Q", full batch): Quickprop as Shifu, on the mean gradient:
//          s = g + 1e-4 w (the slope), p = the previous g, d = the previous
//          change, mu = lr_e, shrink = mu / (1 + mu). If d == 0 the change is
//          -0.35 s. Otherwise it is d * s / (p - s) (the parabola's minimum),
//          or mu * d when the slope did not shrink enough (s >= shrink * p for
//          d < 0, s <= shrink * p for d > 0), plus -0.35 s when s and d have
//          opposite signs (the slope still points the way the last step went).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "model/model_spec.h"

namespace tarn::model {

enum class OptimizerKind {
  kSgd,        // "B"
  kMomentum,   // "Momentum"
  kNesterov,   // "Nesterov"
  kAdaGrad,    // "AdaGrad"
  kRmsProp,    // "RMSProp"
  kAdam,       // "Adam"
  kResilient,  // "R": Rprop, full batch
  kQuick,      // "Q": Quickprop, full batch
  kManhattan,  // "M": Manhattan update rule (Shifu's M; not momentum)
};

inline constexpr double kRmsPropDecay = 0.99;

// Shifu's Propagation codes, case-insensitive: B, M, Momentum, Nesterov,
// AdaGrad, RMSProp, Adam, R, Q. "S" (scaled conjugate gradient) is refused:
// Shifu itself does not support it in distributed training.
Result<OptimizerKind> ParsePropagation(std::string_view name);
const char* PropagationName(OptimizerKind k);  // the Shifu code: "B", "Adam", "R", ...
bool IsFullBatch(OptimizerKind k);             // R and Q

struct OptimizerConfig {
  // The defaults are train#params' declared ones (the key table in
  // train_params.cpp, the one place they are written); epsilon is no key.
  OptimizerConfig();

  OptimizerKind kind;
  double learning_rate;
  double learning_decay;  // lr_e = lr * (1 - decay)^epoch
  double momentum;
  double adam_beta1, adam_beta2;
  double epsilon = 1e-8;
  double regularization;                   // RegularizedConstant
  enum class Reg { kNone, kL1, kL2 } reg;  // L1orL2: "NONE", "L1", "L2"

  // Propagation, LearningRate, LearningDecay, Momentum, AdamBeta1, AdamBeta2,
  // RegularizedConstant and L1orL2 of train#params (train_params.h checks them).
  static OptimizerConfig FromTrainParams(const TrainParams& params);

 private:
  struct Unset {};
  explicit OptimizerConfig(Unset) {}  // FromTrainParams sets every field
};

class Optimizer {
 public:
  // spec tells which parameters are biases (not regularized).
  static std::unique_ptr<Optimizer> Create(const OptimizerConfig& config, const ModelSpec& spec);
  // One flag per parameter: true where regularization skips it (a graph's
  // GraphSpec::UnregularizedMask()).
  static std::unique_ptr<Optimizer> Create(const OptimizerConfig& config,
                                           std::vector<bool> unregularized);
  // An optimizer of parameters [begin, end) only: a parameter server's slice.
  // Step then takes that slice's parameters and gradient.
  static std::unique_ptr<Optimizer> CreateForRange(const OptimizerConfig& config,
                                                   const ModelSpec& spec, size_t begin, size_t end);
  virtual ~Optimizer();

  // grad is the MEAN gradient over the batch; epoch is 0-based (for decay).
  virtual void Step(float* params, const float* grad, int epoch) = 0;
  // Steps taken so far.
  virtual uint64_t steps() const = 0;

  // Optimizer state (moments etc.) for checkpoints: a flat float vector that
  // holds the kind, the parameter count, the step counter and the per-
  // parameter arrays. LoadState refuses a state of another kind or size.
  virtual std::vector<float> SaveState() const = 0;
  virtual Status LoadState(const std::vector<float>& state) = 0;
};

}  // namespace tarn::model
