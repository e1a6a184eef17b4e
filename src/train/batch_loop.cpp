#include "train/batch_loop.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include "train/sampling.h"

namespace tarn::train {

double TrainSums::MeanLoss() const { return weight > 0 ? loss / weight : NAN; }

namespace {

// An MLP's slice: rows gathered into a row-major block, forward-backward in
// calls of at most `chunk` rows.
class MlpPass : public SlicePass {
 public:
  MlpPass(const model::Network& net, const model::TrainingData& data, int chunk)
      : net_(net), data_(data), chunk_(chunk), ws_(net.MakeWorkspace(chunk)) {
    xb_.resize(static_cast<size_t>(chunk) * data.inputs);
    yb_.resize(chunk);
    wb_.resize(chunk);
    pred_.resize(chunk);
  }

  Status Run(float* params, const std::vector<uint32_t>& order, size_t lo, size_t hi, int epoch,
             const BatchLoopConfig& config, float* grad, SliceSums* s) override {
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
        float* dst = xb_.data() + static_cast<size_t>(i) * inputs;
        for (int k = 0; k < inputs; ++k) dst[k] = src[k];
        yb_[i] = src[inputs];
        wb_[i] = src[inputs + 1];
        s->weight += src[inputs + 1];
      }
      const uint64_t dropout_seed = DropoutSeed(config.seed, epoch, c0, config.slot);
      s->loss += net_.ForwardBackward(params, xb_.data(), yb_.data(), wb_.data(), n, grad,
                                      ws_.get(), dropout_seed, pred_.data());
      for (int i = 0; i < n; ++i) s->shifu.Add(config.shifu_kind, pred_[i], yb_[i]);
    }
    return Status::Ok();
  }

 private:
  const model::Network& net_;
  const model::TrainingData& data_;
  const int chunk_;
  std::unique_ptr<model::Workspace> ws_;
  std::vector<float> xb_, yb_, wb_, pred_;
};

}  // namespace

int SlicesForBatch(int batch) {
  return batch >= 512 ? std::min(MlpBatchModel::kMaxSlices, batch / 256) : 1;
}

int MlpBatchModel::Slices(int batch) const { return SlicesForBatch(batch); }

Result<std::unique_ptr<SlicePass>> MlpBatchModel::MakePass(int batch) {
  const int slices = Slices(batch);
  const int chunk = std::min((batch + slices - 1) / slices, 1024);  // rows per call
  return std::unique_ptr<SlicePass>(std::make_unique<MlpPass>(net_, data_, chunk));
}

BatchLoop::BatchLoop(const model::Network& net, const model::TrainingData& data,
                     BatchLoopConfig config)
    : owned_(std::make_unique<MlpBatchModel>(net, data)), model_(owned_.get()), config_(config) {}

BatchLoop::BatchLoop(BatchModel* model, BatchLoopConfig config) : model_(model), config_(config) {}

Status BatchLoop::Prepare() {
  if (prepared_) return Status::Ok();
  config_.batch = std::max(1, config_.batch);
  slices_ = std::max(1, model_->Slices(config_.batch));
  const int members = std::max(1, std::min(config_.threads, slices_));
  const size_t params = model_->GradientSize();
  slice_.resize(slices_);
  for (auto& s : slice_) s.grad.resize(params);
  for (int m = 0; m < members; ++m) {
    TARN_ASSIGN_OR_RETURN(auto pass, model_->MakePass(config_.batch));
    member_.push_back(std::move(pass));
  }
  team_ = std::make_unique<SpinTeam>(members);
  grad_.resize(params);
  prepared_ = true;
  return Status::Ok();
}

std::span<const TableGradient> BatchLoop::MergeTables() {
  const size_t tables = slice_[0].ids.size();
  merged_ids_.resize(tables);
  merged_grads_.resize(tables);
  merged_.resize(tables);
  heads_.resize(slice_.size());
  for (size_t t = 0; t < tables; ++t) {
    size_t dim = 0;
    for (const Slice& s : slice_) {
      if (!s.ids[t].empty()) dim = s.grads[t].size() / s.ids[t].size();
    }
    auto& ids = merged_ids_[t];
    auto& grads = merged_grads_[t];
    ids.clear();
    grads.clear();
    std::fill(heads_.begin(), heads_.end(), 0);
    // Each slice's rows are ascending: take the smallest head each time.
    while (true) {
      uint64_t next = UINT64_MAX;
      for (size_t k = 0; k < slice_.size(); ++k) {
        if (heads_[k] < slice_[k].ids[t].size()) next = std::min(next, slice_[k].ids[t][heads_[k]]);
      }
      if (next == UINT64_MAX) break;
      ids.push_back(next);
      grads.resize(grads.size() + dim, 0.0f);
      float* row = grads.data() + grads.size() - dim;
      for (size_t k = 0; k < slice_.size(); ++k) {
        const auto& sid = slice_[k].ids[t];
        if (heads_[k] >= sid.size() || sid[heads_[k]] != next) continue;
        const float* g = slice_[k].grads[t].data() + heads_[k] * dim;
        for (size_t d = 0; d < dim; ++d) row[d] += g[d];
        ++heads_[k];
      }
    }
    merged_[t].ids = ids;
    merged_[t].grads = grads;
  }
  return merged_;
}

int64_t BatchLoop::Batches(size_t rows) const {
  const int64_t batch = std::max(1, config_.batch);
  return (static_cast<int64_t>(rows) + batch - 1) / batch;
}

Status BatchLoop::RunEpoch(float* params, const std::vector<uint32_t>& order, int epoch,
                           int64_t first_batch, const GradientSink& sink, TrainSums* sums) {
  TARN_RETURN_IF_ERROR(Prepare());
  const size_t batch = static_cast<size_t>(config_.batch);
  const int members = static_cast<int>(member_.size());
  if (first_batch >= Batches(order.size())) return Status::Ok();  // e.g. a slot already trained
  for (size_t begin = static_cast<size_t>(std::max<int64_t>(0, first_batch)) * batch;
       begin < order.size(); begin += batch) {
    const size_t end = std::min(order.size(), begin + batch);
    const size_t per_slice = (end - begin + slices_ - 1) / slices_;
    TARN_RETURN_IF_ERROR(model_->BeginBatch(order, begin, end));
    team_->Run([&](int t) {
      for (int k = t; k < slices_; k += members) {
        const size_t lo = std::min(end, begin + k * per_slice);
        Slice& s = slice_[k];
        std::fill(s.grad.begin(), s.grad.end(), 0.0f);
        s.sums = {};
        s.status = member_[t]->Run(params, order, lo, std::min(end, lo + per_slice), epoch, config_,
                                   s.grad.data(), &s.sums);
        if (slices_ == 1) continue;
        const auto tables = member_[t]->tables();
        s.ids.resize(tables.size());
        s.grads.resize(tables.size());
        for (size_t i = 0; i < tables.size(); ++i) {
          s.ids[i].assign(tables[i].ids.begin(), tables[i].ids.end());
          s.grads[i].assign(tables[i].grads.begin(), tables[i].grads.end());
        }
      }
    });
    double batch_weight = 0;
    std::copy(slice_[0].grad.begin(), slice_[0].grad.end(), grad_.begin());
    for (int k = 0; k < slices_; ++k) {
      TARN_RETURN_IF_ERROR(slice_[k].status);
      sums->loss += slice_[k].sums.loss;
      batch_weight += slice_[k].sums.weight;
      sums->shifu.Merge(slice_[k].sums.shifu);
      if (k == 0) continue;
      const float* g = slice_[k].grad.data();
      for (size_t i = 0; i < grad_.size(); ++i) grad_[i] += g[i];
    }
    sums->weight += batch_weight;
    sums->rows += static_cast<int64_t>(end - begin);
    BatchGradient gradient;
    gradient.dense = grad_;
    gradient.tables = slices_ == 1 ? member_[0]->tables() : MergeTables();
    gradient.weight = batch_weight;
    gradient.batch = static_cast<int64_t>(begin / batch);
    gradient.done = end;
    TARN_RETURN_IF_ERROR(sink(gradient));
  }
  return Status::Ok();
}

}  // namespace tarn::train
