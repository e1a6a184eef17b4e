#include "train/batch_loop.h"

#include <algorithm>
#include <cmath>

#include "train/sampling.h"

namespace tarn::train {

double TrainSums::MeanLoss() const { return weight > 0 ? loss / weight : NAN; }

BatchLoop::BatchLoop(const model::Network& net, const model::TrainingData& data,
                     BatchLoopConfig config)
    : net_(net), data_(data), config_(config) {
  config_.batch = std::max(1, config_.batch);
  // Below a few hundred rows a slice costs less than the hand-off to a thread.
  slices_ = config_.batch >= 512 ? std::min(kMaxSlices, config_.batch / 256) : 1;
  chunk_ = std::min((config_.batch + slices_ - 1) / slices_, 1024);  // rows per call
  const int members = std::max(1, std::min(config_.threads, slices_));
  team_ = std::make_unique<SpinTeam>(members);
  const size_t params = net_.ParameterCount();
  slice_.resize(slices_);
  for (auto& s : slice_) s.grad.resize(params);
  member_.resize(members);
  for (auto& m : member_) {
    m.ws = net_.MakeWorkspace(chunk_);
    m.xb.resize(static_cast<size_t>(chunk_) * data_.inputs);
    m.yb.resize(chunk_);
    m.wb.resize(chunk_);
    m.pred.resize(chunk_);
  }
  grad_.resize(params);
}

int64_t BatchLoop::Batches(size_t rows) const {
  return (static_cast<int64_t>(rows) + config_.batch - 1) / config_.batch;
}

void BatchLoop::RunSlice(const float* params, const std::vector<uint32_t>& order, int epoch,
                         size_t lo, size_t hi, Member* m, Slice* s) const {
  std::fill(s->grad.begin(), s->grad.end(), 0.0f);
  s->loss = s->weight = 0;
  s->shifu = {};
  const int inputs = data_.inputs;
  for (size_t c0 = lo; c0 < hi; c0 += chunk_) {
    const int n = static_cast<int>(std::min(hi, c0 + chunk_) - c0);
    constexpr int kAhead = 16;  // rows are scattered: fetch ahead of the copy
    for (int i = 0; i < std::min(n, kAhead); ++i) __builtin_prefetch(data_.row(order[c0 + i]));
    for (int i = 0; i < n; ++i) {
      if (i + kAhead < n) {
        const float* ahead = data_.row(order[c0 + i + kAhead]);
        __builtin_prefetch(ahead);
        __builtin_prefetch(ahead + inputs + 1);  // the row may span two lines
      }
      // An inline loop: rows are a few dozen floats, too short for memmove.
      const float* src = data_.row(order[c0 + i]);
      float* dst = m->xb.data() + static_cast<size_t>(i) * inputs;
      for (int k = 0; k < inputs; ++k) dst[k] = src[k];
      m->yb[i] = src[inputs];
      m->wb[i] = src[inputs + 1];
      s->weight += src[inputs + 1];
    }
    const uint64_t dropout_seed = DropoutSeed(config_.seed, epoch, c0, config_.slot);
    s->loss += net_.ForwardBackward(params, m->xb.data(), m->yb.data(), m->wb.data(), n,
                                    s->grad.data(), m->ws.get(), dropout_seed, m->pred.data());
    for (int i = 0; i < n; ++i) s->shifu.Add(config_.shifu_kind, m->pred[i], m->yb[i]);
  }
}

Status BatchLoop::RunEpoch(const float* params, const std::vector<uint32_t>& order, int epoch,
                           int64_t first_batch, const GradientSink& sink, TrainSums* sums) {
  const size_t batch = static_cast<size_t>(config_.batch);
  const int members = static_cast<int>(member_.size());
  if (first_batch >= Batches(order.size())) return Status::Ok();  // e.g. a slot already trained
  for (size_t begin = static_cast<size_t>(std::max<int64_t>(0, first_batch)) * batch;
       begin < order.size(); begin += batch) {
    const size_t end = std::min(order.size(), begin + batch);
    const size_t per_slice = (end - begin + slices_ - 1) / slices_;
    team_->Run([&](int t) {
      for (int k = t; k < slices_; k += members) {
        const size_t lo = std::min(end, begin + k * per_slice);
        RunSlice(params, order, epoch, lo, std::min(end, lo + per_slice), &member_[t], &slice_[k]);
      }
    });
    double batch_weight = 0;
    std::copy(slice_[0].grad.begin(), slice_[0].grad.end(), grad_.begin());
    for (int k = 0; k < slices_; ++k) {
      sums->loss += slice_[k].loss;
      batch_weight += slice_[k].weight;
      sums->shifu.Merge(slice_[k].shifu);
      if (k == 0) continue;
      const float* g = slice_[k].grad.data();
      for (size_t i = 0; i < grad_.size(); ++i) grad_[i] += g[i];
    }
    sums->weight += batch_weight;
    sums->rows += static_cast<int64_t>(end - begin);
    TARN_RETURN_IF_ERROR(sink(grad_, batch_weight, static_cast<int64_t>(begin / batch), end));
  }
  return Status::Ok();
}

}  // namespace tarn::train
