#include "model/optimizer.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cmath>
#include <string>

#include "common/strings.h"
#include "model/simd.h"
#include "model/train_params.h"

namespace tarn::model {
namespace {

int ArrayCount(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::kSgd:
    case OptimizerKind::kMomentum:
    case OptimizerKind::kNesterov:
    case OptimizerKind::kAdaGrad:
    case OptimizerKind::kRmsProp:
      return 1;
    case OptimizerKind::kAdam:
    case OptimizerKind::kQuick:
      return 2;
    case OptimizerKind::kResilient:
      return 3;
    case OptimizerKind::kManhattan:
      return 0;
  }
  return 0;
}

inline double Sign(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }

constexpr double kRpropInitialStep = 0.1;
constexpr double kRpropMaxStep = 50;
constexpr double kRpropMinStep = 1e-6;
constexpr double kRpropGrow = 1.2;
constexpr double kRpropShrink = 0.5;
constexpr double kQuickDecay = 1e-4;
constexpr double kQuickLinearRate = 0.35;
constexpr size_t kHeader = 4;  // kind, parameter count, step (high, low 24 bits)

class GenericOptimizer final : public Optimizer {
 public:
  GenericOptimizer(const OptimizerConfig& config, std::vector<bool> is_bias)
      : config_(config), is_bias_(std::move(is_bias)) {
    n_ = is_bias_.size();
    // Per-parameter regularization constant: 0 for biases.
    const double reg = config.reg == OptimizerConfig::Reg::kNone ? 0.0 : config.regularization;
    reg_.assign(n_, 0.0f);
    for (size_t i = 0; i < n_; ++i) reg_[i] = is_bias_[i] ? 0.0f : static_cast<float>(reg);
    arrays_.assign(static_cast<size_t>(ArrayCount(config.kind)), std::vector<float>(n_, 0.0f));
    if (config.kind == OptimizerKind::kResilient) {
      std::fill(arrays_[0].begin(), arrays_[0].end(), static_cast<float>(kRpropInitialStep));
    }
  }

  void Step(float* params, const float* grad, int epoch) override {
    ++steps_;
    const double lr = config_.learning_rate * std::pow(1.0 - config_.learning_decay,
                                                       static_cast<double>(std::max(epoch, 0)));
    const double reg = config_.reg == OptimizerConfig::Reg::kNone ? 0.0 : config_.regularization;
    const bool l1 = config_.reg == OptimizerConfig::Reg::kL1;
    const double mu = config_.momentum;
    const double eps = config_.epsilon;
    const double b1 = config_.adam_beta1, b2 = config_.adam_beta2;
    const double c1 = 1.0 - std::pow(b1, static_cast<double>(steps_));
    const double c2 = 1.0 - std::pow(b2, static_cast<double>(steps_));
    if (config_.kind == OptimizerKind::kAdam) {
      AdamStep(params, grad, static_cast<float>(lr * std::sqrt(c2) / c1),
               static_cast<float>(eps * std::sqrt(c2)), l1);
      return;
    }
    for (size_t i = 0; i < n_; ++i) {
      const double w = params[i];
      double g = grad[i];
      if (reg != 0 && !is_bias_[i]) g += l1 ? reg * Sign(w) : reg * w;
      double change = 0;
      switch (config_.kind) {
        case OptimizerKind::kSgd:
        case OptimizerKind::kMomentum: {
          double v = mu * arrays_[0][i] - lr * g;
          arrays_[0][i] = static_cast<float>(v);
          change = v;
          break;
        }
        case OptimizerKind::kNesterov: {
          double v = mu * arrays_[0][i] - lr * g;
          arrays_[0][i] = static_cast<float>(v);
          change = mu * v - lr * g;
          break;
        }
        case OptimizerKind::kAdaGrad: {
          double s = arrays_[0][i] + g * g;
          arrays_[0][i] = static_cast<float>(s);
          change = -lr * g / (std::sqrt(s) + eps);
          break;
        }
        case OptimizerKind::kRmsProp: {
          double s = kRmsPropDecay * arrays_[0][i] + (1 - kRmsPropDecay) * g * g;
          arrays_[0][i] = static_cast<float>(s);
          change = -lr * g / (std::sqrt(s) + eps);
          break;
        }
        case OptimizerKind::kAdam: {
          double m = b1 * arrays_[0][i] + (1 - b1) * g;
          double v = b2 * arrays_[1][i] + (1 - b2) * g * g;
          arrays_[0][i] = static_cast<float>(m);
          arrays_[1][i] = static_cast<float>(v);
          change = -lr * (m / c1) / (std::sqrt(v / c2) + eps);
          break;
        }
        case OptimizerKind::kManhattan:
          change = -lr * Sign(g);
          break;
        case OptimizerKind::kResilient: {
          // arrays: 0 = step size, 1 = last gradient, 2 = last change
          double step = arrays_[0][i];
          const double last_g = arrays_[1][i];
          const double s = Sign(g * last_g);
          if (s > 0) {
            step = std::min(step * kRpropGrow, kRpropMaxStep);
            change = -Sign(g) * step;
            arrays_[1][i] = static_cast<float>(g);
          } else if (s < 0) {
            step = std::max(step * kRpropShrink, kRpropMinStep);
            change = -static_cast<double>(arrays_[2][i]);
            arrays_[1][i] = 0.0f;
          } else {
            change = -Sign(g) * step;
            arrays_[1][i] = static_cast<float>(g);
          }
          arrays_[0][i] = static_cast<float>(step);
          arrays_[2][i] = static_cast<float>(change);
          break;
        }
        case OptimizerKind::kQuick: {
          // arrays: 0 = last change, 1 = last gradient
          const double d = arrays_[0][i];
          const double s = g + kQuickDecay * w;
          const double p = arrays_[1][i];
          const double shrink = lr / (1.0 + lr);
          if (d < 0) {
            if (s > 0) change -= kQuickLinearRate * s;
            change += s >= shrink * p ? lr * d : d * s / (p - s);
          } else if (d > 0) {
            if (s < 0) change -= kQuickLinearRate * s;
            change += s <= shrink * p ? lr * d : d * s / (p - s);
          } else {
            change -= kQuickLinearRate * s;
          }
          arrays_[0][i] = static_cast<float>(change);
          arrays_[1][i] = static_cast<float>(g);
          break;
        }
      }
      params[i] = static_cast<float>(w + change);
    }
  }

  uint64_t steps() const override { return steps_; }

  // Adam in float, vectorized: with c1 = 1 - b1^t, c2 = 1 - b2^t,
  // (m / c1) / (sqrt(v / c2) + eps) = m / (sqrt(v) + eps sqrt(c2)) * sqrt(c2) / c1.
  // The scalar tail uses the same IEEE operations, so results do not depend on
  // where a parameter falls.
  void AdamStep(float* params, const float* grad, float lr_c, float eps_c, bool l1) {
    using namespace simd;
    float* m = arrays_[0].data();
    float* v = arrays_[1].data();
    const float b1 = static_cast<float>(config_.adam_beta1);
    const float b2 = static_cast<float>(config_.adam_beta2);
    const V vb1 = Set1(b1), vb1c = Set1(1 - b1), vb2 = Set1(b2), vb2c = Set1(1 - b2);
    const V vlr = Set1(lr_c), veps = Set1(eps_c);
    size_t i = 0;
    for (; i + kLanes <= n_; i += kLanes) {
      V w = Load(params + i);
      V reg = Load(reg_.data() + i);
      V pen =
          l1 ? Select(Greater(w, Zero()), Set1(1.0f), Select(Less(w, Zero()), Set1(-1.0f), Zero()))
             : w;
      V g = Fma(reg, pen, Load(grad + i));
      V mi = Fma(vb1, Load(m + i), Mul(vb1c, g));
      V vi = Fma(vb2, Load(v + i), Mul(Mul(vb2c, g), g));
      Store(m + i, mi);
      Store(v + i, vi);
      Store(params + i, Sub(w, Div(Mul(vlr, mi), Add(Sqrt(vi), veps))));
    }
    for (; i < n_; ++i) {
      const float w = params[i];
      const float pen = l1 ? static_cast<float>(Sign(w)) : w;
      const float g = std::fma(reg_[i], pen, grad[i]);
      const float mi = std::fma(b1, m[i], (1 - b1) * g);
      const float vi = std::fma(b2, v[i], ((1 - b2) * g) * g);
      m[i] = mi;
      v[i] = vi;
      params[i] = w - (lr_c * mi) / (std::sqrt(vi) + eps_c);
    }
  }

  std::vector<float> SaveState() const override {
    std::vector<float> out;
    out.reserve(kHeader + arrays_.size() * n_);
    out.push_back(static_cast<float>(static_cast<int>(config_.kind)));
    out.push_back(static_cast<float>(n_));
    out.push_back(static_cast<float>(steps_ >> 24));
    out.push_back(static_cast<float>(steps_ & 0xffffffu));
    for (const auto& a : arrays_) out.insert(out.end(), a.begin(), a.end());
    return out;
  }

  Status LoadState(const std::vector<float>& state) override {
    const size_t want = kHeader + arrays_.size() * n_;
    if (state.size() < kHeader) {
      return Corrupt("optimizer state has " + std::to_string(state.size()) +
                     " values, fewer than its header");
    }
    if (state[0] != static_cast<float>(static_cast<int>(config_.kind))) {
      return InvalidArgument("optimizer state is for another optimizer (kind " +
                             std::to_string(static_cast<int>(state[0])) + "), not " +
                             PropagationName(config_.kind));
    }
    if (state[1] != static_cast<float>(n_) || state.size() != want) {
      return InvalidArgument("optimizer state holds " + std::to_string(state.size()) +
                             " values for " + std::to_string(static_cast<long long>(state[1])) +
                             " parameters; this model needs " + std::to_string(want) +
                             " values for " + std::to_string(n_) + " parameters");
    }
    steps_ = (static_cast<uint64_t>(state[2]) << 24) + static_cast<uint64_t>(state[3]);
    size_t off = kHeader;
    for (auto& a : arrays_) {
      std::copy(state.begin() + static_cast<ptrdiff_t>(off),
                state.begin() + static_cast<ptrdiff_t>(off + n_), a.begin());
      off += n_;
    }
    return Status::Ok();
  }

 private:
  OptimizerConfig config_;
  std::vector<bool> is_bias_;
  std::vector<float> reg_;
  size_t n_ = 0;
  uint64_t steps_ = 0;
  std::vector<std::vector<float>> arrays_;
};

}  // namespace

Result<OptimizerKind> ParsePropagation(std::string_view name) {
  std::string s = ToLower(name);
  if (s == "b") return OptimizerKind::kSgd;
  if (s == "momentum") return OptimizerKind::kMomentum;
  if (s == "nesterov") return OptimizerKind::kNesterov;
  if (s == "adagrad") return OptimizerKind::kAdaGrad;
  if (s == "rmsprop") return OptimizerKind::kRmsProp;
  if (s == "adam") return OptimizerKind::kAdam;
  if (s == "r") return OptimizerKind::kResilient;
  if (s == "q") return OptimizerKind::kQuick;
  if (s == "m") return OptimizerKind::kManhattan;
  if (s == "s") {
    return Unsupported(
        "Propagation S (scaled conjugate gradient) is not supported (Shifu refuses it in "
        "distributed training too); use R, Q, B, M, Momentum, Nesterov, AdaGrad, RMSProp or Adam");
  }
  return InvalidArgument("unknown Propagation '" + std::string(name) +
                         "' (valid: B, M, Momentum, Nesterov, AdaGrad, RMSProp, Adam, R, Q)");
}

const char* PropagationName(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::kSgd:
      return "B";
    case OptimizerKind::kMomentum:
      return "Momentum";
    case OptimizerKind::kNesterov:
      return "Nesterov";
    case OptimizerKind::kAdaGrad:
      return "AdaGrad";
    case OptimizerKind::kRmsProp:
      return "RMSProp";
    case OptimizerKind::kAdam:
      return "Adam";
    case OptimizerKind::kResilient:
      return "R";
    case OptimizerKind::kQuick:
      return "Q";
    case OptimizerKind::kManhattan:
      return "M";
  }
  return "?";
}

bool IsFullBatch(OptimizerKind k) {
  return k == OptimizerKind::kResilient || k == OptimizerKind::kQuick;
}

OptimizerConfig::OptimizerConfig() {
  // LR reads every optimizer key and requires none.
  static const OptimizerConfig declared =
      FromTrainParams(TrainParams::Parse(data::Json::object(), "LR").value());
  *this = declared;
}

OptimizerConfig OptimizerConfig::FromTrainParams(const TrainParams& params) {
  OptimizerConfig c{Unset{}};
  c.kind = params.propagation;
  c.learning_rate = params.learning_rate;
  c.learning_decay = params.learning_decay;
  c.momentum = params.momentum;
  c.adam_beta1 = params.adam_beta1;
  c.adam_beta2 = params.adam_beta2;
  c.regularization = params.regularized_constant;
  c.reg = params.regularization;
  return c;
}

Optimizer::~Optimizer() = default;

std::unique_ptr<Optimizer> Optimizer::Create(const OptimizerConfig& config, const ModelSpec& spec) {
  return Create(config, spec.BiasMask());
}

std::unique_ptr<Optimizer> Optimizer::Create(const OptimizerConfig& config,
                                             std::vector<bool> unregularized) {
  return std::make_unique<GenericOptimizer>(config, std::move(unregularized));
}

std::unique_ptr<Optimizer> Optimizer::CreateForRange(const OptimizerConfig& config,
                                                     const ModelSpec& spec, size_t begin,
                                                     size_t end) {
  std::vector<bool> mask = spec.BiasMask();
  assert(begin <= end && end <= mask.size());
  return std::make_unique<GenericOptimizer>(
      config, std::vector<bool>(mask.begin() + static_cast<ptrdiff_t>(begin),
                                mask.begin() + static_cast<ptrdiff_t>(end)));
}

}  // namespace tarn::model
