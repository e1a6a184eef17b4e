#include "model/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/train_params.h"

namespace tarn::model {
namespace {

// EXPECT_CONTAINS(text, Part("...")): the text holds the part.
struct Part {
  std::string text;
};
#define EXPECT_CONTAINS(haystack, needle)                                 \
  EXPECT_NE(std::string(haystack).find((needle).text), std::string::npos) \
      << "\"" << (haystack) << "\" lacks \"" << (needle).text << "\""

// input 2 -> 1 output: params [w0, w1, b].
ModelSpec TinySpec() {
  ModelSpec spec;
  spec.input_count = 2;
  spec.layers = {{2, 1, Activation::kSigmoid, 0}};
  return spec;
}

OptimizerConfig Config(OptimizerKind kind, double lr) {
  OptimizerConfig c;
  c.kind = kind;
  c.learning_rate = lr;
  c.regularization = 0;
  return c;
}

TEST(OptimizerTest, ParsesShifuPropagationCodes) {
  EXPECT_EQ(*ParsePropagation("B"), OptimizerKind::kSgd);
  EXPECT_EQ(*ParsePropagation("m"), OptimizerKind::kManhattan);
  EXPECT_EQ(*ParsePropagation("Momentum"), OptimizerKind::kMomentum);
  EXPECT_EQ(*ParsePropagation("nesterov"), OptimizerKind::kNesterov);
  EXPECT_EQ(*ParsePropagation("AdaGrad"), OptimizerKind::kAdaGrad);
  EXPECT_EQ(*ParsePropagation("RMSProp"), OptimizerKind::kRmsProp);
  EXPECT_EQ(*ParsePropagation("ADAM"), OptimizerKind::kAdam);
  EXPECT_EQ(*ParsePropagation("R"), OptimizerKind::kResilient);
  EXPECT_EQ(*ParsePropagation("q"), OptimizerKind::kQuick);
  auto s = ParsePropagation("S");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnsupported);
  EXPECT_CONTAINS(s.status().message(), Part("scaled conjugate gradient"));
  auto x = ParsePropagation("LBFGS");
  ASSERT_FALSE(x.ok());
  EXPECT_CONTAINS(x.status().message(), Part("valid: B, M, Momentum"));
  EXPECT_TRUE(IsFullBatch(OptimizerKind::kResilient));
  EXPECT_TRUE(IsFullBatch(OptimizerKind::kQuick));
  EXPECT_FALSE(IsFullBatch(OptimizerKind::kAdam));
  for (auto k : {OptimizerKind::kSgd, OptimizerKind::kMomentum, OptimizerKind::kNesterov,
                 OptimizerKind::kAdaGrad, OptimizerKind::kRmsProp, OptimizerKind::kAdam,
                 OptimizerKind::kResilient, OptimizerKind::kQuick, OptimizerKind::kManhattan}) {
    EXPECT_EQ(*ParsePropagation(PropagationName(k)), k);
  }
}

TEST(OptimizerTest, ConfigFromTrainParams) {
  // LR reads every optimizer key and ignores the hidden-layer ones.
  auto config = [](const char* json) -> Result<OptimizerConfig> {
    TARN_ASSIGN_OR_RETURN(auto params, TrainParams::Parse(Json::parse(json), "LR"));
    return OptimizerConfig::FromTrainParams(params);
  };
  auto c = config(
      R"({"NumHiddenLayers":2,"ActivationFunc":["Sigmoid","Sigmoid"],"NumHiddenNodes":[45,45],)"
      R"("LearningRate":0.1,"Propagation":"Q"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->kind, OptimizerKind::kQuick);
  EXPECT_DOUBLE_EQ(c->learning_rate, 0.1);

  c = config(R"({"Propagation":"Adam","LearningRate":"0.01","LearningDecay":0.05,"Momentum":0.9,)"
             R"("AdamBeta1":0.8,"AdamBeta2":0.99,"RegularizedConstant":0.001,"L1orL2":"l1"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->kind, OptimizerKind::kAdam);
  EXPECT_DOUBLE_EQ(c->learning_rate, 0.01);
  EXPECT_DOUBLE_EQ(c->learning_decay, 0.05);
  EXPECT_DOUBLE_EQ(c->momentum, 0.9);
  EXPECT_DOUBLE_EQ(c->adam_beta1, 0.8);
  EXPECT_DOUBLE_EQ(c->adam_beta2, 0.99);
  EXPECT_DOUBLE_EQ(c->regularization, 0.001);
  EXPECT_EQ(c->reg, OptimizerConfig::Reg::kL1);

  auto err = [&config](const char* json) {
    auto r = config(json);
    EXPECT_FALSE(r.ok()) << json;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_CONTAINS(err(R"({"LearningRate":"fast"})"),
                  Part("train.params.LearningRate must be a positive number, got \"fast\""));
  EXPECT_CONTAINS(err(R"({"LearningRate":-1})"), Part("train.params.LearningRate"));
  EXPECT_CONTAINS(err(R"({"Propagation":"S"})"), Part("train.params.Propagation"));
  EXPECT_CONTAINS(err(R"({"Propagation":3})"), Part("train.params.Propagation must be a string"));
  EXPECT_CONTAINS(err(R"({"L1orL2":"L3"})"), Part("train.params.L1orL2 must be one of NONE"));
  EXPECT_CONTAINS(err(R"({"Momentum":1.5})"), Part("train.params.Momentum"));
  EXPECT_CONTAINS(err(R"({"RegularizedConstant":-0.1})"), Part("train.params.RegularizedConstant"));
}

TEST(OptimizerTest, AdamTwoStepsByHand) {
  // lr 0.1, b1 0.9, b2 0.999, eps 1e-8.
  // Step 1, g = (0.1, -0.2, 0.3): m = 0.1 g, v = 0.001 g^2; bias-corrected m = g, v = g^2,
  //   so every parameter moves by lr * sign(g): (1, -2, 0.5) -> (0.9, -1.9, 0.4).
  // Step 2, g = (0.1, 0.2, -0.3):
  //   p0: m = 0.9*0.01 + 0.1*0.1 = 0.019 -> /0.19 = 0.1; v = 0.999e-5 + 1e-5 = 1.999e-5
  //       -> /0.001999 = 0.01; change = -0.1 * 0.1 / 0.1 = -0.1 -> 0.8
  //   p1: m = -0.018 + 0.02 = 0.002 -> 0.0105263; v = 3.996e-5 + 4e-5 = 7.996e-5 -> 0.04;
  //       change = -0.1 * 0.0105263 / 0.2 = -0.00526316 -> -1.90526316
  //   p2: m = 0.027 - 0.03 = -0.003 -> -0.0157895; v = 0.999*9e-5 + 9e-5 -> 0.09;
  //       change = +0.1 * 0.0157895 / 0.3 = 0.00526316 -> 0.40526316
  auto opt = Optimizer::Create(Config(OptimizerKind::kAdam, 0.1), TinySpec());
  std::vector<float> w = {1.0f, -2.0f, 0.5f};
  std::vector<float> g1 = {0.1f, -0.2f, 0.3f};
  opt->Step(w.data(), g1.data(), 0);
  EXPECT_NEAR(w[0], 0.9, 1e-6);
  EXPECT_NEAR(w[1], -1.9, 1e-6);
  EXPECT_NEAR(w[2], 0.4, 1e-6);
  std::vector<float> g2 = {0.1f, 0.2f, -0.3f};
  opt->Step(w.data(), g2.data(), 0);
  EXPECT_NEAR(w[0], 0.8, 1e-5);
  EXPECT_NEAR(w[1], -1.90526316, 1e-5);
  EXPECT_NEAR(w[2], 0.40526316, 1e-5);
  EXPECT_EQ(opt->steps(), 2u);
}

TEST(OptimizerTest, MomentumKindsByHand) {
  // B and Momentum: v = 0.5 v - 0.1 g. Step 1: -0.1 g; step 2: -0.15 g.
  for (auto kind : {OptimizerKind::kSgd, OptimizerKind::kMomentum}) {
    auto opt = Optimizer::Create(Config(kind, 0.1), TinySpec());
    std::vector<float> w = {0, 0, 0}, g = {1, 2, -3};
    opt->Step(w.data(), g.data(), 0);
    EXPECT_NEAR(w[0], -0.1, 1e-7);
    EXPECT_NEAR(w[2], 0.3, 1e-7);
    opt->Step(w.data(), g.data(), 0);
    EXPECT_NEAR(w[0], -0.25, 1e-6);
    EXPECT_NEAR(w[1], -0.5, 1e-6);
    EXPECT_NEAR(w[2], 0.75, 1e-6);
  }
  // Nesterov: v1 = -0.1, change1 = 0.5 * -0.1 - 0.1 = -0.15;
  //           v2 = -0.05 - 0.1 = -0.15, change2 = -0.075 - 0.1 = -0.175.
  auto opt = Optimizer::Create(Config(OptimizerKind::kNesterov, 0.1), TinySpec());
  std::vector<float> w = {0, 0, 0}, g = {1, 1, 1};
  opt->Step(w.data(), g.data(), 0);
  EXPECT_NEAR(w[0], -0.15, 1e-7);
  opt->Step(w.data(), g.data(), 0);
  EXPECT_NEAR(w[0], -0.325, 1e-6);
  // Plain SGD: momentum 0.
  auto cfg = Config(OptimizerKind::kSgd, 0.5);
  cfg.momentum = 0;
  opt = Optimizer::Create(cfg, TinySpec());
  w = {1, 1, 1};
  opt->Step(w.data(), g.data(), 0);
  opt->Step(w.data(), g.data(), 0);
  EXPECT_NEAR(w[0], 0.0, 1e-7);
}

TEST(OptimizerTest, AdaptiveKindsByHand) {
  // AdaGrad, g = 2: G = 4, change = -0.1*2/2 = -0.1; G = 8, change = -0.2/sqrt(8) = -0.0707107.
  auto opt = Optimizer::Create(Config(OptimizerKind::kAdaGrad, 0.1), TinySpec());
  std::vector<float> w = {0, 0, 0}, g = {2, 2, 2};
  opt->Step(w.data(), g.data(), 0);
  EXPECT_NEAR(w[0], -0.1, 1e-7);
  opt->Step(w.data(), g.data(), 0);
  EXPECT_NEAR(w[0], -0.1707107, 1e-6);
  // RMSProp (rho 0.99), g = 2: S = 0.04, change = -0.2/0.2 = -1;
  //   S = 0.0396 + 0.04 = 0.0796, change = -0.2/0.2821347 = -0.7088812.
  opt = Optimizer::Create(Config(OptimizerKind::kRmsProp, 0.1), TinySpec());
  w = {0, 0, 0};
  opt->Step(w.data(), g.data(), 0);
  EXPECT_NEAR(w[0], -1.0, 1e-6);
  opt->Step(w.data(), g.data(), 0);
  EXPECT_NEAR(w[0], -1.7088812, 1e-5);
  // Manhattan: -lr * sign(g).
  opt = Optimizer::Create(Config(OptimizerKind::kManhattan, 0.25), TinySpec());
  w = {0, 0, 0};
  std::vector<float> mixed = {3, -0.001f, 0};
  opt->Step(w.data(), mixed.data(), 0);
  EXPECT_EQ(w, (std::vector<float>{-0.25f, 0.25f, 0.0f}));
}

TEST(OptimizerTest, LearningDecayPerEpoch) {
  // lr_e = 0.1 * (1 - 0.5)^2 = 0.025 at epoch 2.
  auto cfg = Config(OptimizerKind::kSgd, 0.1);
  cfg.momentum = 0;
  cfg.learning_decay = 0.5;
  auto opt = Optimizer::Create(cfg, TinySpec());
  std::vector<float> w = {0, 0, 0}, g = {1, 1, 1};
  opt->Step(w.data(), g.data(), 2);
  EXPECT_NEAR(w[0], -0.025, 1e-8);
}

TEST(OptimizerTest, RegularizationAppliesToWeightsNotBiases) {
  // SGD lr 1, momentum 0, zero gradient: the step is -reg * w (L2) or -reg * sign(w) (L1).
  for (auto reg :
       {OptimizerConfig::Reg::kL2, OptimizerConfig::Reg::kL1, OptimizerConfig::Reg::kNone}) {
    auto cfg = Config(OptimizerKind::kSgd, 1.0);
    cfg.momentum = 0;
    cfg.regularization = 0.1;
    cfg.reg = reg;
    auto opt = Optimizer::Create(cfg, TinySpec());
    std::vector<float> w = {1.0f, -2.0f, 3.0f}, g = {0, 0, 0};
    opt->Step(w.data(), g.data(), 0);
    if (reg == OptimizerConfig::Reg::kL2) {
      EXPECT_NEAR(w[0], 0.9, 1e-7);
      EXPECT_NEAR(w[1], -1.8, 1e-7);
    } else if (reg == OptimizerConfig::Reg::kL1) {
      EXPECT_NEAR(w[0], 0.9, 1e-7);
      EXPECT_NEAR(w[1], -1.9, 1e-7);
    } else {
      EXPECT_EQ(w[0], 1.0f);
      EXPECT_EQ(w[1], -2.0f);
    }
    EXPECT_EQ(w[2], 3.0f) << "the bias is never regularized";
  }
}

// f(w) = sum_i a_i (w_i - c_i)^2 / 2, gradient a_i (w_i - c_i).
void QuadraticGrad(const std::vector<float>& w, std::vector<float>* g) {
  const float a[3] = {1.0f, 4.0f, 0.5f};
  const float c[3] = {0.7f, -1.2f, 2.0f};
  for (int i = 0; i < 3; ++i) (*g)[i] = a[i] * (w[i] - c[i]);
}

TEST(OptimizerTest, ResilientSteps) {
  auto opt = Optimizer::Create(Config(OptimizerKind::kResilient, 0.1), TinySpec());
  std::vector<float> w = {0, 0, 0};
  // Same sign twice: the step starts at 0.1 then grows to 0.12.
  std::vector<float> g = {1, -1, 0};
  opt->Step(w.data(), g.data(), 0);
  EXPECT_NEAR(w[0], -0.1, 1e-7);
  EXPECT_NEAR(w[1], 0.1, 1e-7);
  EXPECT_EQ(w[2], 0.0f);
  opt->Step(w.data(), g.data(), 0);
  EXPECT_NEAR(w[0], -0.22, 1e-6);
  // Sign flip: the last change (-0.12) is undone and the step halves to 0.06.
  g = {-1, -1, 0};
  opt->Step(w.data(), g.data(), 0);
  EXPECT_NEAR(w[0], -0.1, 1e-6);
  // After the flip the stored gradient is 0: the next step uses the halved step, 0.06.
  opt->Step(w.data(), g.data(), 0);
  EXPECT_NEAR(w[0], -0.04, 1e-6);

  // Converges on a quadratic.
  opt = Optimizer::Create(Config(OptimizerKind::kResilient, 0.1), TinySpec());
  w = {0, 0, 0};
  for (int i = 0; i < 200; ++i) {
    QuadraticGrad(w, &g);
    opt->Step(w.data(), g.data(), 0);
  }
  EXPECT_NEAR(w[0], 0.7, 1e-3);
  EXPECT_NEAR(w[1], -1.2, 1e-3);
  EXPECT_NEAR(w[2], 2.0, 1e-3);
}

TEST(OptimizerTest, QuickpropJumpsToTheParabolaMinimum) {
  auto opt = Optimizer::Create(Config(OptimizerKind::kQuick, 0.1), TinySpec());
  std::vector<float> w = {0, 0, 0}, g(3);
  // Step 1: linear only, -0.35 * s with s = g + 1e-4 w = g = a (w - c).
  QuadraticGrad(w, &g);
  opt->Step(w.data(), g.data(), 0);
  EXPECT_NEAR(w[0], 0.35 * 0.7, 1e-6);
  EXPECT_NEAR(w[1], -0.35 * 4.8, 1e-6);  // overshoots the minimum at -1.2
  // Step 2 on w1: d = -1.68, p = 4.8, s = 4 (-1.68 + 1.2) - 1.68e-4 = -1.920168 has flipped
  // sign, so the change is the parabola's minimum d s / (p - s) = 0.4800381: w1 = -1.1999619.
  // On w0: d = 0.245 > 0 and s = -0.4549755 still < 0 (and below shrink * p = -0.0636):
  // change = -0.35 s + 0.1 d = 0.1592414 + 0.0245 -> 0.4287414.
  QuadraticGrad(w, &g);
  opt->Step(w.data(), g.data(), 0);
  EXPECT_NEAR(w[1], -1.1999619, 1e-5);
  EXPECT_NEAR(w[0], 0.4287414, 1e-5);
  for (int i = 0; i < 100; ++i) {
    QuadraticGrad(w, &g);
    opt->Step(w.data(), g.data(), 0);
  }
  // The minimum of f + 1e-4 w^2 / 2 is a c / (a + 1e-4), within 1e-3 of c.
  EXPECT_NEAR(w[0], 0.7, 1e-3);
  EXPECT_NEAR(w[1], -1.2, 1e-3);
  EXPECT_NEAR(w[2], 2.0, 1e-3);
}

TEST(OptimizerTest, SaveAndLoadStateGiveIdenticalSteps) {
  ModelSpec spec;
  spec.input_count = 3;
  spec.layers = {{3, 4, Activation::kTanh, 0}, {4, 1, Activation::kSigmoid, 0}};
  const size_t P = spec.ParameterCount();
  for (auto kind : {OptimizerKind::kSgd, OptimizerKind::kMomentum, OptimizerKind::kNesterov,
                    OptimizerKind::kAdaGrad, OptimizerKind::kRmsProp, OptimizerKind::kAdam,
                    OptimizerKind::kResilient, OptimizerKind::kQuick, OptimizerKind::kManhattan}) {
    auto cfg = Config(kind, 0.05);
    cfg.regularization = 0.01;
    auto a = Optimizer::Create(cfg, spec);
    std::vector<float> w(P), g(P);
    for (size_t i = 0; i < P; ++i) w[i] = 0.1f * static_cast<float>(i) - 0.5f;
    for (int s = 0; s < 3; ++s) {
      for (size_t i = 0; i < P; ++i) g[i] = std::sin(static_cast<float>(i * 7 + s));
      a->Step(w.data(), g.data(), s);
    }
    auto state = a->SaveState();
    auto b = Optimizer::Create(cfg, spec);
    ASSERT_TRUE(b->LoadState(state).ok()) << PropagationName(kind);
    EXPECT_EQ(b->steps(), 3u);
    std::vector<float> wa = w, wb = w;
    for (int s = 3; s < 6; ++s) {
      for (size_t i = 0; i < P; ++i) g[i] = std::cos(static_cast<float>(i * 3 + s));
      a->Step(wa.data(), g.data(), s);
      b->Step(wb.data(), g.data(), s);
    }
    EXPECT_EQ(wa, wb) << PropagationName(kind);
    EXPECT_EQ(a->SaveState(), b->SaveState());

    // A state of the wrong size or kind is refused.
    auto wrong = state;
    wrong.pop_back();
    if (kind != OptimizerKind::kManhattan) {
      EXPECT_FALSE(b->LoadState(wrong).ok());
    }
    EXPECT_FALSE(b->LoadState({}).ok());
  }
  auto adam = Optimizer::Create(Config(OptimizerKind::kAdam, 0.1), spec);
  auto sgd = Optimizer::Create(Config(OptimizerKind::kSgd, 0.1), spec);
  Status st = sgd->LoadState(adam->SaveState());
  ASSERT_FALSE(st.ok());
  EXPECT_CONTAINS(st.message(), Part("another optimizer"));
  ModelSpec other = TinySpec();
  auto small = Optimizer::Create(Config(OptimizerKind::kAdam, 0.1), other);
  st = small->LoadState(adam->SaveState());
  ASSERT_FALSE(st.ok());
  EXPECT_CONTAINS(st.message(), Part("this model needs"));
}

}  // namespace
}  // namespace tarn::model
