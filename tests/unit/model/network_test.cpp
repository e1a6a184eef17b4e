#include "model/network.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "model/kernels.h"
#include "model/optimizer.h"
#include "reference_activation.h"

namespace tarn::model {
namespace {

double Loss(LossKind k, double p, double y) {
  switch (k) {
    case LossKind::kLog: {
      double pc = std::min(std::max(p, 1e-7), 1 - 1e-7);
      return -(y * std::log(pc) + (1 - y) * std::log(1 - pc));
    }
    case LossKind::kSquared:
      return 0.5 * (p - y) * (p - y);
    case LossKind::kAbsolute:
      return std::fabs(p - y);
  }
  return 0;
}

// Dropout masks as the network draws them, for a reference forward pass:
// masks[l][u][row] (l = 0 is the input layer), 1 where nothing is dropped.
using Masks = std::vector<std::vector<std::vector<double>>>;

Masks DrawMasks(const ModelSpec& spec, uint64_t seed, int batch, int block) {
  Masks masks;
  auto draw = [&](int layer, float rate, int units) {
    std::vector<std::vector<double>> m(static_cast<size_t>(units),
                                       std::vector<double>(static_cast<size_t>(batch), 1.0));
    if (seed == 0 || rate <= 0) return m;
    for (int start = 0; start < batch; start += block) {
      int n = std::min(block, batch - start);
      int nb = kernels::AlignBatch(n);
      std::vector<float> buf(static_cast<size_t>(units) * nb);
      kernels::DropoutMask(seed, layer, start, rate, units, n, nb, nb, buf.data());
      for (int u = 0; u < units; ++u) {
        for (int r = 0; r < n; ++r) m[u][start + r] = buf[static_cast<size_t>(u) * nb + r];
      }
    }
    return m;
  };
  masks.push_back(draw(0, spec.input_dropout, spec.input_count));
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    masks.push_back(draw(static_cast<int>(l) + 1, spec.layers[l].dropout, spec.layers[l].outputs));
  }
  return masks;
}

// Double-precision reference: predictions for every row.
std::vector<double> RefForward(const ModelSpec& spec, const std::vector<double>& params,
                               const std::vector<float>& x, int batch, const Masks* masks) {
  std::vector<double> out(static_cast<size_t>(batch));
  for (int r = 0; r < batch; ++r) {
    std::vector<double> a(static_cast<size_t>(spec.input_count));
    for (int k = 0; k < spec.input_count; ++k) {
      a[k] = x[static_cast<size_t>(r) * spec.input_count + k];
      if (masks) a[k] *= (*masks)[0][k][r];
    }
    for (size_t l = 0; l < spec.layers.size(); ++l) {
      const LayerSpec& layer = spec.layers[l];
      const double* W = params.data() + spec.WeightOffset(l);
      const double* b = params.data() + spec.BiasOffset(l);
      std::vector<double> next(static_cast<size_t>(layer.outputs));
      for (int m = 0; m < layer.outputs; ++m) {
        double z = b[m];
        for (int k = 0; k < layer.inputs; ++k) z += W[m * layer.inputs + k] * a[k];
        next[m] = testing::ReferenceActivation(layer.activation, z);
        if (masks) next[m] *= (*masks)[l + 1][m][r];
      }
      a = std::move(next);
    }
    out[r] = a[0];
  }
  return out;
}

double RefLoss(const ModelSpec& spec, const std::vector<double>& params,
               const std::vector<float>& x, const std::vector<float>& y,
               const std::vector<float>& w, int batch, const Masks* masks) {
  auto p = RefForward(spec, params, x, batch, masks);
  double total = 0;
  for (int r = 0; r < batch; ++r) total += w[r] * Loss(spec.loss, p[r], y[r]);
  return total;
}

ModelSpec MakeSpec(int inputs, const std::vector<int>& hidden, Activation hidden_act,
                   Activation out_act, LossKind loss) {
  ModelSpec spec;
  spec.input_count = inputs;
  spec.loss = loss;
  int in = inputs;
  for (int h : hidden) {
    spec.layers.push_back({in, h, hidden_act, 0});
    in = h;
  }
  spec.layers.push_back({in, 1, out_act, 0});
  EXPECT_TRUE(spec.Validate().ok()) << spec.Validate().ToString();
  return spec;
}

struct Data {
  std::vector<float> x, y, w;
};

Data MakeData(int inputs, int batch, uint64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  std::uniform_real_distribution<float> wu(0.5f, 2.0f);
  Data d;
  d.x.resize(static_cast<size_t>(batch) * inputs);
  for (auto& v : d.x) v = u(rng);
  for (int r = 0; r < batch; ++r) {
    d.y.push_back(rng() % 2 ? 1.0f : 0.0f);
    d.w.push_back(wu(rng));
  }
  return d;
}

// Compares the network's analytic gradient with central differences of the
// double-precision reference, and the returned loss with the reference loss.
void CheckGradient(const ModelSpec& spec, int batch, int block, uint64_t dropout_seed,
                   const std::string& label) {
  Network net(spec);
  const size_t P = net.ParameterCount();
  std::vector<float> params(P);
  net.InitParameters(params.data(), 17);
  // Non-zero biases so that every path is exercised.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-0.3f, 0.3f);
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    for (int m = 0; m < spec.layers[l].outputs; ++m) params[spec.BiasOffset(l) + m] = u(rng);
  }
  Data d = MakeData(spec.input_count, batch, 99);
  auto ws = net.MakeWorkspace(block);
  std::vector<float> grad(P, 0.0f);
  double loss = net.ForwardBackward(params.data(), d.x.data(), d.y.data(), d.w.data(), batch,
                                    grad.data(), ws.get(), dropout_seed);

  Masks masks = DrawMasks(spec, dropout_seed, batch, ws->max_batch);
  std::vector<double> p(params.begin(), params.end());
  double ref_loss = RefLoss(spec, p, d.x, d.y, d.w, batch, &masks);
  EXPECT_NEAR(loss, ref_loss, 1e-4 * (1 + std::fabs(ref_loss))) << label;

  double max_abs = 0;
  std::vector<double> numeric(P);
  for (size_t i = 0; i < P; ++i) {
    const double h = 1e-6;
    double save = p[i];
    p[i] = save + h;
    double lp = RefLoss(spec, p, d.x, d.y, d.w, batch, &masks);
    p[i] = save - h;
    double lm = RefLoss(spec, p, d.x, d.y, d.w, batch, &masks);
    p[i] = save;
    numeric[i] = (lp - lm) / (2 * h);
    max_abs = std::max(max_abs, std::fabs(numeric[i]));
  }
  for (size_t i = 0; i < P; ++i) {
    ASSERT_NEAR(grad[i], numeric[i], 1e-3 * (max_abs + 1e-3) + 2e-4 * std::fabs(numeric[i]))
        << label << " parameter " << i << " of " << P;
  }
}

constexpr Activation kAllActivations[] = {Activation::kLinear,    Activation::kSigmoid,
                                          Activation::kTanh,      Activation::kRelu,
                                          Activation::kLeakyRelu, Activation::kSwish};

TEST(GradientTest, EveryActivationLossAndDepthMatchesFiniteDifferences) {
  const std::vector<std::vector<int>> depths = {{}, {6}, {5, 4}};
  for (Activation act : kAllActivations) {
    for (LossKind loss : {LossKind::kLog, LossKind::kSquared, LossKind::kAbsolute}) {
      for (const auto& hidden : depths) {
        for (Activation out : {Activation::kSigmoid, Activation::kLinear}) {
          if (loss == LossKind::kLog && out != Activation::kSigmoid) continue;
          ModelSpec spec = MakeSpec(5, hidden, act, out, loss);
          std::string label = std::string(ActivationName(act)) + "/" + LossName(loss) + "/" +
                              std::to_string(hidden.size() + 1) + " layers/out " +
                              ActivationName(out);
          CheckGradient(spec, 21, 64, 0, label);
        }
      }
    }
  }
}

TEST(GradientTest, OutputActivationsOtherThanSigmoid) {
  for (Activation out : kAllActivations) {
    ModelSpec spec = MakeSpec(4, {5}, Activation::kTanh, out, LossKind::kSquared);
    CheckGradient(spec, 19, 64, 0, std::string("out ") + ActivationName(out));
  }
}

TEST(GradientTest, BlocksLargerThanTheWorkspaceAndOddBatches) {
  ModelSpec spec = MakeSpec(7, {9, 3}, Activation::kTanh, Activation::kSigmoid, LossKind::kLog);
  CheckGradient(spec, 37, 16, 0, "blocks of 16");
  CheckGradient(spec, 1, 16, 0, "batch 1");
  CheckGradient(spec, 130, 128, 0, "batch 130 in blocks of 128");
}

TEST(GradientTest, WithDropoutFromAFixedSeed) {
  ModelSpec spec = MakeSpec(6, {8, 5}, Activation::kTanh, Activation::kSigmoid, LossKind::kLog);
  spec.layers[0].dropout = 0.3f;
  spec.layers[1].dropout = 0.2f;
  spec.input_dropout = 0.12f;
  CheckGradient(spec, 40, 32, 1234, "dropout");
  // Different seeds drop different units: the gradients differ.
  Network net(spec);
  std::vector<float> params(net.ParameterCount());
  net.InitParameters(params.data(), 3);
  Data d = MakeData(6, 40, 1);
  auto ws = net.MakeWorkspace(64);
  std::vector<float> g1(params.size()), g2(params.size()), g3(params.size());
  net.ForwardBackward(params.data(), d.x.data(), d.y.data(), d.w.data(), 40, g1.data(), ws.get(),
                      1);
  net.ForwardBackward(params.data(), d.x.data(), d.y.data(), d.w.data(), 40, g2.data(), ws.get(),
                      1);
  net.ForwardBackward(params.data(), d.x.data(), d.y.data(), d.w.data(), 40, g3.data(), ws.get(),
                      2);
  EXPECT_EQ(g1, g2);
  EXPECT_NE(g1, g3);
}

TEST(NetworkTest, PredictEqualsTheTrainingForward) {
  ModelSpec spec = MakeSpec(16, {50}, Activation::kTanh, Activation::kSigmoid, LossKind::kLog);
  Network net(spec);
  std::vector<float> params(net.ParameterCount());
  net.InitParameters(params.data(), 8);
  const int batch = 300;
  Data d = MakeData(16, batch, 4);
  auto ws = net.MakeWorkspace(128);
  std::vector<float> pred(batch);
  net.Predict(params.data(), d.x.data(), batch, pred.data(), ws.get());
  std::vector<double> p(params.begin(), params.end());
  auto ref = RefForward(spec, p, d.x, batch, nullptr);
  double loss_from_pred = 0;
  for (int r = 0; r < batch; ++r) {
    ASSERT_NEAR(pred[r], ref[r], 2e-6) << r;
    loss_from_pred += d.w[r] * Loss(spec.loss, pred[r], d.y[r]);
  }
  std::vector<float> grad(params.size());
  double loss = net.ForwardBackward(params.data(), d.x.data(), d.y.data(), d.w.data(), batch,
                                    grad.data(), ws.get(), 0);
  EXPECT_NEAR(loss, loss_from_pred, 1e-5 * loss_from_pred);
  // Row by row gives the same predictions as a batch.
  auto ws1 = net.MakeWorkspace(1);
  for (int r = 0; r < batch; r += 37) {
    float one = 0;
    net.Predict(params.data(), d.x.data() + static_cast<size_t>(r) * 16, 1, &one, ws1.get());
    EXPECT_FLOAT_EQ(one, pred[r]);
  }
}

TEST(NetworkTest, WeightsDefaultToOne) {
  ModelSpec spec = MakeSpec(3, {4}, Activation::kRelu, Activation::kSigmoid, LossKind::kLog);
  Network net(spec);
  std::vector<float> params(net.ParameterCount());
  net.InitParameters(params.data(), 1);
  Data d = MakeData(3, 10, 2);
  std::vector<float> ones(10, 1.0f), g1(params.size()), g2(params.size());
  auto ws = net.MakeWorkspace(16);
  double a = net.ForwardBackward(params.data(), d.x.data(), d.y.data(), nullptr, 10, g1.data(),
                                 ws.get(), 0);
  double b = net.ForwardBackward(params.data(), d.x.data(), d.y.data(), ones.data(), 10, g2.data(),
                                 ws.get(), 0);
  EXPECT_EQ(a, b);
  EXPECT_EQ(g1, g2);
}

TEST(NetworkTest, InitializationIsDeterministicAndScaled) {
  ModelSpec spec = MakeSpec(100, {60}, Activation::kTanh, Activation::kSigmoid, LossKind::kLog);
  for (Initializer init : {Initializer::kXavier, Initializer::kHe, Initializer::kGaussian,
                           Initializer::kUniform, Initializer::kLecun}) {
    spec.initializer = init;
    Network net(spec);
    std::vector<float> a(net.ParameterCount()), b(a.size()), c(a.size());
    net.InitParameters(a.data(), 5);
    net.InitParameters(b.data(), 5);
    net.InitParameters(c.data(), 6);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    for (size_t l = 0; l < spec.layers.size(); ++l) {
      for (int m = 0; m < spec.layers[l].outputs; ++m) EXPECT_EQ(a[spec.BiasOffset(l) + m], 0.0f);
    }
    // First layer: 6000 weights, fan_in 100, fan_out 60.
    double sum = 0, sq = 0, maxabs = 0;
    const int n = 6000;
    for (int i = 0; i < n; ++i) {
      sum += a[i];
      sq += a[i] * a[i];
      maxabs = std::max(maxabs, std::fabs(static_cast<double>(a[i])));
    }
    double sd = std::sqrt(sq / n - (sum / n) * (sum / n));
    double want_sd = 0;
    switch (init) {
      case Initializer::kXavier:
        want_sd = std::sqrt(6.0 / 160) / std::sqrt(3.0);
        EXPECT_LE(maxabs, std::sqrt(6.0 / 160));
        break;
      case Initializer::kHe:
        want_sd = std::sqrt(2.0 / 100);
        break;
      case Initializer::kLecun:
        want_sd = std::sqrt(1.0 / 100);
        break;
      case Initializer::kGaussian:
        want_sd = 1.0;
        break;
      case Initializer::kUniform:
        want_sd = 0.05 / std::sqrt(3.0);
        EXPECT_LE(maxabs, 0.05);
        break;
    }
    EXPECT_NEAR(sd, want_sd, 0.05 * want_sd) << InitializerName(init);
    EXPECT_NEAR(sum / n, 0.0, 0.1 * want_sd) << InitializerName(init);
  }
}

TEST(NetworkTest, FlopsPerRow) {
  ModelSpec spec = MakeSpec(16, {50}, Activation::kTanh, Activation::kSigmoid, LossKind::kLog);
  Network net(spec);
  EXPECT_DOUBLE_EQ(net.ForwardFlopsPerRow(), 2.0 * (16 * 50 + 50));
  EXPECT_DOUBLE_EQ(net.TrainFlopsPerRow(), 2.0 * (16 * 50 * 2 + 50 * 3));
}

TEST(NetworkTest, AdamLearnsXor) {
  ModelSpec spec = MakeSpec(2, {8}, Activation::kTanh, Activation::kSigmoid, LossKind::kLog);
  Network net(spec);
  std::vector<float> params(net.ParameterCount());
  net.InitParameters(params.data(), 2024);
  const int batch = 64;
  std::vector<float> x, y;
  for (int i = 0; i < batch; ++i) {
    int a = i % 2, b = (i / 2) % 2;
    x.push_back(a ? 1.0f : -1.0f);
    x.push_back(b ? 1.0f : -1.0f);
    y.push_back(a != b ? 1.0f : 0.0f);
  }
  OptimizerConfig cfg;
  cfg.kind = OptimizerKind::kAdam;
  cfg.learning_rate = 0.05;
  auto opt = Optimizer::Create(cfg, spec);
  auto ws = net.MakeWorkspace(batch);
  std::vector<float> grad(params.size());
  double first = 0, last = 0;
  for (int step = 0; step < 500; ++step) {
    std::fill(grad.begin(), grad.end(), 0.0f);
    double loss = net.ForwardBackward(params.data(), x.data(), y.data(), nullptr, batch,
                                      grad.data(), ws.get(), 0) /
                  batch;
    for (auto& g : grad) g /= batch;
    opt->Step(params.data(), grad.data(), 0);
    if (step == 0) first = loss;
    last = loss;
  }
  EXPECT_GT(first, 0.5);
  EXPECT_LT(last, 0.02) << "first " << first;
  std::vector<float> pred(batch);
  net.Predict(params.data(), x.data(), batch, pred.data(), ws.get());
  for (int i = 0; i < batch; ++i) EXPECT_EQ(pred[i] > 0.5f, y[i] > 0.5f) << i;
}

}  // namespace
}  // namespace tarn::model
