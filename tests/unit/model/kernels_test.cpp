#include "model/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "reference_activation.h"

namespace tarn::model {
namespace {

double RefDeriv(Activation a, double z) {
  switch (a) {
    case Activation::kLinear:
      return 1;
    case Activation::kSigmoid: {
      double s = 1.0 / (1.0 + std::exp(-z));
      return s * (1 - s);
    }
    case Activation::kTanh: {
      double t = std::tanh(z);
      return 1 - t * t;
    }
    case Activation::kRelu:
      return z > 0 ? 1 : 0;
    case Activation::kLeakyRelu:
      return z > 0 ? 1 : kLeakyReluSlope;
    case Activation::kSwish: {
      double s = 1.0 / (1.0 + std::exp(-z));
      return s + z * s * (1 - s);
    }
  }
  return 0;
}

constexpr Activation kAllActivations[] = {Activation::kLinear,    Activation::kSigmoid,
                                          Activation::kTanh,      Activation::kRelu,
                                          Activation::kLeakyRelu, Activation::kSwish};

std::vector<float> Random(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(ActivationTest, TanhIsAccurateOverTheFloatRange) {
  std::vector<float> xs;
  for (double x = 1e-30; x < 30; x *= 1.01) {
    xs.push_back(static_cast<float>(x));
    xs.push_back(static_cast<float>(-x));
  }
  xs.push_back(0.0f);
  xs.push_back(0.55f);
  xs.push_back(std::nextafter(0.55f, 0.0f));
  xs.push_back(1e6f);
  xs.push_back(-1e6f);
  std::vector<float> out(xs.size());
  kernels::ApplyActivation(Activation::kTanh, xs.data(), static_cast<int>(xs.size()), out.data());
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double want = std::tanh(static_cast<double>(xs[i]));
    double rel = want == 0 ? std::fabs(out[i]) : std::fabs(out[i] - want) / std::fabs(want);
    worst = std::max(worst, rel);
    ASSERT_LE(rel, 1e-6) << "tanh(" << xs[i] << ") = " << out[i] << ", want " << want;
  }
  EXPECT_EQ(out.back(), -1.0f);
  std::printf("tanh worst relative error %.3g (%s)\n", worst, kernels::IsaName());
}

TEST(ActivationTest, SigmoidAndSwishAreAccurate) {
  std::vector<float> xs;
  for (double x = -80; x <= 80; x += 0.01) xs.push_back(static_cast<float>(x));
  std::vector<float> out(xs.size());
  for (Activation a : {Activation::kSigmoid, Activation::kSwish}) {
    kernels::ApplyActivation(a, xs.data(), static_cast<int>(xs.size()), out.data());
    for (size_t i = 0; i < xs.size(); ++i) {
      double want = testing::ReferenceActivation(a, xs[i]);
      double tol = 1e-6 * std::fabs(want) + 1e-37;
      ASSERT_NEAR(out[i], want, tol) << ActivationName(a) << "(" << xs[i] << ")";
    }
  }
}

TEST(ActivationTest, PiecewiseActivationsAreExact) {
  std::vector<float> xs = {-3.5f, -1e-20f, 0.0f, 1e-20f, 2.25f, -0.75f, 7.0f, -100.0f, 0.5f};
  std::vector<float> out(xs.size());
  for (Activation a : {Activation::kLinear, Activation::kRelu, Activation::kLeakyRelu}) {
    kernels::ApplyActivation(a, xs.data(), static_cast<int>(xs.size()), out.data());
    for (size_t i = 0; i < xs.size(); ++i) {
      EXPECT_FLOAT_EQ(out[i], static_cast<float>(testing::ReferenceActivation(a, xs[i])));
    }
  }
}

TEST(KernelTest, TransposePadsWithZeros) {
  const int batch = 5, cols = 3, ld = 16;
  std::vector<float> x(batch * cols);
  for (int i = 0; i < batch * cols; ++i) x[i] = static_cast<float>(i + 1);
  std::vector<float> out(cols * ld, -1.0f);
  kernels::TransposeToFeatureMajor(x.data(), batch, cols, ld, out.data());
  for (int c = 0; c < cols; ++c) {
    for (int b = 0; b < ld; ++b) {
      float want = b < batch ? x[b * cols + c] : 0.0f;
      EXPECT_EQ(out[c * ld + b], want) << c << "," << b;
    }
  }
}

struct Shape {
  int M, K, nb;
};
constexpr Shape kShapes[] = {{1, 1, 16},    {4, 4, 16},   {3, 5, 32},  {5, 17, 48},
                             {50, 16, 128}, {1, 50, 128}, {8, 12, 80}, {13, 7, 64},
                             {16, 8, 144},  {2, 3, 16},   {4, 16, 256}};

TEST(KernelTest, DenseForwardMatchesScalarReference) {
  std::mt19937 rng(7);
  for (const Shape& s : kShapes) {
    for (Activation act : kAllActivations) {
      for (int variant = 0; variant < 3; ++variant) {   // plain, with dact, with mask + dact
        const int ld = s.nb + (variant == 2 ? 16 : 0);  // ld > nb is allowed
        auto W = Random(static_cast<size_t>(s.M) * s.K, rng);
        auto bias = Random(s.M, rng);
        auto in = Random(static_cast<size_t>(s.K) * ld, rng, 2.0f);
        std::vector<float> mask(static_cast<size_t>(s.M) * ld);
        for (auto& m : mask) m = (rng() % 3 == 0) ? 0.0f : 1.5f;
        std::vector<float> out(static_cast<size_t>(s.M) * ld, 99.0f);
        std::vector<float> dact(out.size(), 99.0f);
        const bool want_d = variant >= 1;
        const float* mk = variant == 2 ? mask.data() : nullptr;
        kernels::DenseForward(W.data(), bias.data(), in.data(), s.M, s.K, ld, s.nb, act, mk,
                              out.data(), want_d ? dact.data() : nullptr);
        for (int m = 0; m < s.M; ++m) {
          for (int b = 0; b < s.nb; ++b) {
            double z = bias[m];
            for (int k = 0; k < s.K; ++k) z += static_cast<double>(W[m * s.K + k]) * in[k * ld + b];
            double scale = mk ? mk[m * ld + b] : 1.0;
            double h = testing::ReferenceActivation(act, z) * scale;
            double tol = 2e-5 * (1 + std::fabs(h)) * (1 + s.K / 16.0);
            ASSERT_NEAR(out[m * ld + b], h, tol)
                << ActivationName(act) << " M=" << s.M << " K=" << s.K << " m=" << m << " b=" << b;
            if (want_d) {
              ASSERT_NEAR(dact[m * ld + b], RefDeriv(act, z) * scale, tol);
            }
          }
          for (int b = s.nb; b < ld; ++b) ASSERT_EQ(out[m * ld + b], 99.0f) << "wrote past nb";
        }
      }
    }
  }
}

TEST(KernelTest, BackwardDataMatchesScalarReference) {
  std::mt19937 rng(11);
  for (const Shape& s : kShapes) {
    const int ld = s.nb;
    auto W = Random(static_cast<size_t>(s.M) * s.K, rng);
    auto dz = Random(static_cast<size_t>(s.M) * ld, rng);
    auto dact = Random(static_cast<size_t>(s.K) * ld, rng);
    std::vector<float> dprev(static_cast<size_t>(s.K) * ld);
    kernels::DenseBackwardData(W.data(), dz.data(), s.M, s.K, ld, s.nb, dact.data(), dprev.data());
    for (int k = 0; k < s.K; ++k) {
      for (int b = 0; b < s.nb; ++b) {
        double sum = 0;
        for (int m = 0; m < s.M; ++m) sum += static_cast<double>(W[m * s.K + k]) * dz[m * ld + b];
        double want = sum * dact[k * ld + b];
        ASSERT_NEAR(dprev[k * ld + b], want, 1e-5 * (1 + std::fabs(want)) * (1 + s.M / 16.0))
            << "M=" << s.M << " K=" << s.K << " k=" << k << " b=" << b;
      }
    }
  }
}

TEST(KernelTest, BackwardWeightsAccumulatesAndMatchesScalarReference) {
  std::mt19937 rng(13);
  for (const Shape& s : kShapes) {
    const int ld = s.nb;
    auto dz = Random(static_cast<size_t>(s.M) * ld, rng);
    auto in = Random(static_cast<size_t>(s.K) * ld, rng);
    auto gw = Random(static_cast<size_t>(s.M) * s.K, rng);  // accumulates onto existing values
    auto gb = Random(s.M, rng);
    auto gw0 = gw;
    auto gb0 = gb;
    kernels::DenseBackwardWeights(dz.data(), in.data(), s.M, s.K, ld, s.nb, gw.data(), gb.data());
    for (int m = 0; m < s.M; ++m) {
      double bsum = gb0[m];
      for (int b = 0; b < s.nb; ++b) bsum += dz[m * ld + b];
      ASSERT_NEAR(gb[m], bsum, 1e-5 * (1 + s.nb / 16.0));
      for (int k = 0; k < s.K; ++k) {
        double sum = gw0[m * s.K + k];
        for (int b = 0; b < s.nb; ++b) sum += static_cast<double>(dz[m * ld + b]) * in[k * ld + b];
        ASSERT_NEAR(gw[m * s.K + k], sum, 1e-5 * (1 + s.nb / 16.0))
            << "M=" << s.M << " K=" << s.K << " m=" << m << " k=" << k;
      }
    }
  }
}

TEST(KernelTest, OutputLossGradMatchesFormulas) {
  const int nb = 32;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.01f, 0.99f);
  std::vector<float> p(nb), dact(nb), y(nb), w(nb), dz(nb);
  for (int b = 0; b < nb; ++b) {
    p[b] = u(rng);
    dact[b] = p[b] * (1 - p[b]);
    y[b] = b % 3 == 0 ? 1.0f : 0.0f;
    w[b] = b < 20 ? 0.5f + u(rng) : 0.0f;  // the tail is padding
  }
  for (LossKind loss : {LossKind::kLog, LossKind::kSquared, LossKind::kAbsolute}) {
    double got = kernels::OutputLossGrad(loss, Activation::kSigmoid, p.data(), dact.data(),
                                         y.data(), w.data(), nb, dz.data());
    double want = 0;
    for (int b = 0; b < nb; ++b) {
      double d = static_cast<double>(p[b]) - y[b];
      double l = 0, g = 0;
      if (loss == LossKind::kLog) {
        l = -(y[b] * std::log(p[b]) + (1 - y[b]) * std::log(1.0 - p[b]));
        g = d;
      } else if (loss == LossKind::kSquared) {
        l = 0.5 * d * d;
        g = d * dact[b];
      } else {
        l = std::fabs(d);
        g = (d > 0 ? 1 : -1) * dact[b];
      }
      want += w[b] * l;
      ASSERT_NEAR(dz[b], w[b] * g, 1e-6) << LossName(loss) << " b=" << b;
    }
    EXPECT_NEAR(got, want, 1e-5 * std::fabs(want)) << LossName(loss);
  }
}

TEST(KernelTest, DropoutMaskIsDeterministicWithTheRequestedRate) {
  const int units = 37, batch = 200, nb = 208;
  std::vector<float> a(static_cast<size_t>(units) * nb), b(a.size()), c(a.size());
  kernels::DropoutMask(42, 1, 1000, 0.3f, units, batch, nb, nb, a.data());
  kernels::DropoutMask(42, 1, 1000, 0.3f, units, batch, nb, nb, b.data());
  kernels::DropoutMask(43, 1, 1000, 0.3f, units, batch, nb, nb, c.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  int dropped = 0;
  for (int u = 0; u < units; ++u) {
    for (int r = 0; r < nb; ++r) {
      float v = a[static_cast<size_t>(u) * nb + r];
      if (r >= batch) {
        EXPECT_EQ(v, 0.0f);
        continue;
      }
      if (v == 0.0f) {
        ++dropped;
      } else {
        EXPECT_FLOAT_EQ(v, 1.0f / 0.7f);
      }
    }
  }
  double rate = static_cast<double>(dropped) / (units * batch);
  EXPECT_NEAR(rate, 0.3, 0.03);
  // Row r of a call starting at row 1000 equals row r - 8 of a call starting at 1008.
  std::vector<float> d(a.size());
  kernels::DropoutMask(42, 1, 1008, 0.3f, units, batch, nb, nb, d.data());
  for (int u = 0; u < units; ++u) {
    for (int r = 8; r < batch; ++r) {
      ASSERT_EQ(a[static_cast<size_t>(u) * nb + r], d[static_cast<size_t>(u) * nb + r - 8]);
    }
  }
}

}  // namespace
}  // namespace tarn::model
