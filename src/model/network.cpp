#include "model/network.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "model/init_random.h"
#include "model/kernels.h"

namespace tarn::model {

void AlignedFloats::Free::operator()(float* p) const { std::free(p); }

AlignedFloats::AlignedFloats(size_t n) : size_(n) {
  size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  if (bytes == 0) bytes = 64;
  float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  data_.reset(p);
}

Network::Network(ModelSpec spec) : spec_(std::move(spec)) {
  assert(spec_.Validate().ok());
  for (size_t l = 0; l < spec_.layers.size(); ++l) {
    w_off_.push_back(spec_.WeightOffset(l));
    b_off_.push_back(spec_.BiasOffset(l));
  }
}

void Network::InitParameters(float* params, uint64_t seed) const {
  SplitMix rng(seed);
  for (size_t l = 0; l < spec_.layers.size(); ++l) {
    const LayerSpec& layer = spec_.layers[l];
    const double fan_in = layer.inputs;
    const double fan_out = layer.outputs;
    float* w = params + w_off_[l];
    const size_t n = static_cast<size_t>(layer.outputs) * static_cast<size_t>(layer.inputs);
    for (size_t i = 0; i < n; ++i) {
      w[i] = static_cast<float>(DrawWeight(spec_.initializer, fan_in, fan_out, rng));
    }
    std::fill(params + b_off_[l], params + b_off_[l] + layer.outputs, 0.0f);
  }
}

std::unique_ptr<Workspace> Network::MakeWorkspace(int max_batch) const {
  auto ws = std::make_unique<Workspace>();
  int mb = kernels::AlignBatch(std::max(max_batch, 1));
  ws->max_batch = mb;
  const size_t B = static_cast<size_t>(mb);
  ws->input = AlignedFloats(static_cast<size_t>(spec_.input_count) * B);
  if (spec_.input_dropout > 0) {
    ws->input_mask = AlignedFloats(static_cast<size_t>(spec_.input_count) * B);
  }
  for (const LayerSpec& l : spec_.layers) {
    const size_t n = static_cast<size_t>(l.outputs) * B;
    ws->out.emplace_back(n);
    ws->dact.emplace_back(n);
    ws->delta.emplace_back(n);
    ws->mask.emplace_back(l.dropout > 0 ? n : 0);
  }
  ws->y = AlignedFloats(B);
  ws->w = AlignedFloats(B);
  return ws;
}

void Network::ForwardBlock(const float* params, int nb, Workspace* ws) const {
  const float* in = ws->input.data();
  for (size_t l = 0; l < spec_.layers.size(); ++l) {
    const LayerSpec& layer = spec_.layers[l];
    kernels::DenseForward(params + w_off_[l], params + b_off_[l], in, layer.outputs, layer.inputs,
                          nb, nb, layer.activation, nullptr, ws->out[l].data(), nullptr);
    in = ws->out[l].data();
  }
}

void Network::Predict(const float* params, const float* x, int batch, float* out,
                      Workspace* ws) const {
  const int K = spec_.input_count;
  const size_t last = spec_.layers.size() - 1;
  for (int start = 0; start < batch; start += ws->max_batch) {
    const int n = std::min(ws->max_batch, batch - start);
    const int nb = kernels::AlignBatch(n);
    kernels::TransposeToFeatureMajor(x + static_cast<size_t>(start) * static_cast<size_t>(K), n, K,
                                     nb, ws->input.data());
    ForwardBlock(params, nb, ws);
    std::memcpy(out + start, ws->out[last].data(), static_cast<size_t>(n) * sizeof(float));
  }
}

double Network::ForwardBackward(const float* params, const float* x, const float* y, const float* w,
                                int batch, float* grad, Workspace* ws, uint64_t dropout_seed,
                                float* predictions) const {
  const int K = spec_.input_count;
  const size_t L = spec_.layers.size();
  const bool dropout = dropout_seed != 0;
  double loss = 0;
  for (int start = 0; start < batch; start += ws->max_batch) {
    const int n = std::min(ws->max_batch, batch - start);
    const int nb = kernels::AlignBatch(n);
    float* input = ws->input.data();
    kernels::TransposeToFeatureMajor(x + static_cast<size_t>(start) * static_cast<size_t>(K), n, K,
                                     nb, input);
    if (dropout && spec_.input_dropout > 0) {
      float* m = ws->input_mask.data();
      kernels::DropoutMask(dropout_seed, 0, start, spec_.input_dropout, K, n, nb, nb, m);
      const size_t total = static_cast<size_t>(K) * static_cast<size_t>(nb);
      for (size_t i = 0; i < total; ++i) input[i] *= m[i];
    }
    for (size_t l = 0; l < L; ++l) {
      const LayerSpec& layer = spec_.layers[l];
      if (dropout && layer.dropout > 0) {
        kernels::DropoutMask(dropout_seed, static_cast<int>(l) + 1, start, layer.dropout,
                             layer.outputs, n, nb, nb, ws->mask[l].data());
      }
    }
    const float* in = input;
    for (size_t l = 0; l < L; ++l) {
      const LayerSpec& layer = spec_.layers[l];
      const float* mask = dropout && layer.dropout > 0 ? ws->mask[l].data() : nullptr;
      kernels::DenseForward(params + w_off_[l], params + b_off_[l], in, layer.outputs, layer.inputs,
                            nb, nb, layer.activation, mask, ws->out[l].data(), ws->dact[l].data());
      in = ws->out[l].data();
    }

    float* yb = ws->y.data();
    float* wb = ws->w.data();
    std::memcpy(yb, y + start, static_cast<size_t>(n) * sizeof(float));
    if (w) {
      std::memcpy(wb, w + start, static_cast<size_t>(n) * sizeof(float));
    } else {
      std::fill(wb, wb + n, 1.0f);
    }
    std::fill(yb + n, yb + nb, 0.0f);
    std::fill(wb + n, wb + nb, 0.0f);
    loss +=
        kernels::OutputLossGrad(spec_.loss, spec_.layers[L - 1].activation, ws->out[L - 1].data(),
                                ws->dact[L - 1].data(), yb, wb, nb, ws->delta[L - 1].data());
    if (predictions) {
      std::memcpy(predictions + start, ws->out[L - 1].data(),
                  static_cast<size_t>(n) * sizeof(float));
    }

    for (size_t l = L; l-- > 0;) {
      const LayerSpec& layer = spec_.layers[l];
      const float* layer_in = l == 0 ? input : ws->out[l - 1].data();
      kernels::DenseBackwardWeights(ws->delta[l].data(), layer_in, layer.outputs, layer.inputs, nb,
                                    nb, grad + w_off_[l], grad + b_off_[l]);
      if (l > 0) {
        kernels::DenseBackwardData(params + w_off_[l], ws->delta[l].data(), layer.outputs,
                                   layer.inputs, nb, nb, ws->dact[l - 1].data(),
                                   ws->delta[l - 1].data());
      }
    }
  }
  return loss;
}

double Network::ForwardFlopsPerRow() const {
  double f = 0;
  for (const LayerSpec& l : spec_.layers) f += 2.0 * l.inputs * l.outputs;
  return f;
}

double Network::TrainFlopsPerRow() const {
  double f = 0;
  for (size_t i = 0; i < spec_.layers.size(); ++i) {
    const LayerSpec& l = spec_.layers[i];
    double mac = 2.0 * l.inputs * l.outputs;
    f += mac * (i == 0 ? 2 : 3);  // forward, weight gradient, and input gradient past layer 0
  }
  return f;
}

double RowLoss(LossKind kind, double p, double y) {
  if (kind == LossKind::kLog) {
    p = std::clamp(p, 1e-7, 1 - 1e-7);
    return -(y * std::log(p) + (1 - y) * std::log(1 - p));
  }
  // Half the squared error, the loss training minimizes (kernels::OutputLossGrad).
  if (kind == LossKind::kSquared) return 0.5 * (p - y) * (p - y);
  return std::fabs(p - y);
}

}  // namespace tarn::model
