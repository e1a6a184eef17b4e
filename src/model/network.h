// Network: forward and backward passes of a ModelSpec on mini-batches.
//
// Rows are processed in blocks of at most the workspace's max batch; within a
// block activations are feature-major with the batch along SIMD lanes (see
// kernels.h). Nothing allocates per call once the Workspace exists. A Network
// is immutable and may be shared by threads, each with its own Workspace.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/model_spec.h"

namespace tarn::model {

// 64-byte aligned float storage (for the kernels' SIMD loads).
class AlignedFloats {
 public:
  AlignedFloats() = default;
  explicit AlignedFloats(size_t n);
  AlignedFloats(AlignedFloats&&) noexcept = default;
  AlignedFloats& operator=(AlignedFloats&&) noexcept = default;
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float[], Free> data_;
  size_t size_ = 0;
};

// Per-thread scratch for one Network, sized for a maximum block of rows.
struct Workspace {
  int max_batch = 0;                 // rows per block (a multiple of kernels::kBatchAlign)
  AlignedFloats input;               // input_count x max_batch (transposed inputs)
  AlignedFloats input_mask;          // input dropout mask (empty without input dropout)
  std::vector<AlignedFloats> out;    // per layer: outputs x max_batch, activations
  std::vector<AlignedFloats> dact;   // per layer: act'(z) x dropout mask
  std::vector<AlignedFloats> mask;   // per layer: dropout mask (empty without dropout)
  std::vector<AlignedFloats> delta;  // per layer: dLoss/dz
  AlignedFloats y;                   // padded targets
  AlignedFloats w;                   // padded weights
};

// One row's loss as training reports it (log loss clamps p to [1e-7, 1 - 1e-7];
// squared loss is half the squared error, as the training passes report it).
double RowLoss(LossKind kind, double p, double y);

class Network {
 public:
  explicit Network(ModelSpec spec);  // the spec must Validate()

  const ModelSpec& spec() const { return spec_; }
  size_t ParameterCount() const { return spec_.ParameterCount(); }

  // Deterministic initialization from the seed (see Initializer in
  // model_spec.h for the distributions); biases 0. The same seed gives the
  // same parameters on every machine.
  void InitParameters(float* params, uint64_t seed) const;

  // Scratch for blocks of up to max_batch rows (rounded up to the SIMD block).
  std::unique_ptr<Workspace> MakeWorkspace(int max_batch) const;

  // x: batch x input_count row-major. out: batch scores (after the output activation).
  // Any batch size; rows are processed in blocks of the workspace's max batch.
  void Predict(const float* params, const float* x, int batch, float* out, Workspace* ws) const;

  // Adds the gradient of sum_i w_i * loss(pred_i, y_i) to grad (ParameterCount
  // floats) and returns that weighted loss sum. w may be null (all 1).
  // dropout_seed != 0 applies inverted dropout (inputs and hidden layers, as
  // the spec says); the masks depend only on (seed, layer, row index in this
  // call, unit). dropout_seed == 0 trains without dropout. With
  // `predictions`, also writes each row's prediction of this forward pass
  // (with dropout, when applied) there (batch floats).
  double ForwardBackward(const float* params, const float* x, const float* y, const float* w,
                         int batch, float* grad, Workspace* ws, uint64_t dropout_seed,
                         float* predictions = nullptr) const;

  // Model FLOPs per row (2 per multiply-add) of a forward pass and of a
  // forward+backward pass, for throughput reports.
  double ForwardFlopsPerRow() const;
  double TrainFlopsPerRow() const;

 private:
  // Inference pass of one block already transposed into ws->input.
  void ForwardBlock(const float* params, int nb, Workspace* ws) const;

  ModelSpec spec_;
  std::vector<size_t> w_off_;
  std::vector<size_t> b_off_;
};

}  // namespace tarn::model
