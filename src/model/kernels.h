// Dense-layer kernels on feature-major activations: a layer's activations for
// a mini-batch are stored as rows of `ld` floats, one row per unit
// (a[unit * ld + row]); `ld` and `nb` (the rows computed) are multiples of
// kBatchAlign so the batch runs along SIMD lanes with no tail. Weights are the
// ModelSpec layout: W is outputs x inputs, row-major.
//
// Bias and activation (and its derivative, and the dropout mask) are fused
// into the output of the matrix product; no kernel allocates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/model_spec.h"

namespace tarn::model::kernels {

inline constexpr int kBatchAlign = 16;
inline int AlignBatch(int batch) { return (batch + kBatchAlign - 1) / kBatchAlign * kBatchAlign; }

// The instruction set the kernels were built for: "avx512", "avx2" or "scalar".
const char* IsaName();

// out[c * ld + b] = x[b * cols + c] for b < batch; 0 for batch <= b < ld.
void TransposeToFeatureMajor(const float* x, int batch, int cols, int ld, float* out);

// For m < M, b < nb:
//   z = bias[m] + sum_k W[m * K + k] * in[k * ld + b]
//   out[m * ld + b]  = act(z) * mask[m * ld + b]
//   dact[m * ld + b] = act'(z) * mask[m * ld + b]     (only when dact != nullptr)
// mask may be null (= 1).
void DenseForward(const float* W, const float* bias, const float* in, int M, int K, int ld, int nb,
                  Activation act, const float* mask, float* out, float* dact);

// dprev[k * ld + b] = dact[k * ld + b] * sum_m W[m * K + k] * dz[m * ld + b], k < K, b < nb.
void DenseBackwardData(const float* W, const float* dz, int M, int K, int ld, int nb,
                       const float* dact, float* dprev);

// dprev[k * ld + b] += sum_m W[m * K + k] * dz[m * ld + b]: the graph engine's
// form, where a node's gradient gathers the contributions of all its consumers.
void DenseBackwardDataAdd(const float* W, const float* dz, int M, int K, int ld, int nb,
                          float* dprev);

// gw[m * K + k] += sum_{b < nb} dz[m * ld + b] * in[k * ld + b];  gb[m] += sum_b dz[m * ld + b].
void DenseBackwardWeights(const float* dz, const float* in, int M, int K, int ld, int nb, float* gw,
                          float* gb);

// For b < nb (a multiple of kBatchAlign): dz[b] = w[b] * dLoss/dz at the output
// unit, given predictions p (after out_act) and dact = out_act'(z). Returns
// sum_b w[b] * loss(p[b], y[b]). Rows with w = 0 contribute nothing.
double OutputLossGrad(LossKind loss, Activation out_act, const float* p, const float* dact,
                      const float* y, const float* w, int nb, float* dz);

// Elementwise activation (n a multiple of the SIMD width is not required).
void ApplyActivation(Activation act, const float* z, int n, float* out);

// In place over n floats (n a multiple of kBatchAlign): x = act(x), and
// dact = act'(x before) when dact is not null.
void ActivateInPlace(Activation act, float* x, float* dact, ptrdiff_t n);

// Inverted-dropout mask for one layer: mask[u * ld + b] = 0 with probability
// `rate`, else 1 / (1 - rate), for units u < units and rows b < batch (rows
// batch..nb get 0). Deterministic in (seed, layer, first_row + b, u).
void DropoutMask(uint64_t seed, int layer, int64_t first_row, float rate, int units, int batch,
                 int ld, int nb, float* mask);

}  // namespace tarn::model::kernels
