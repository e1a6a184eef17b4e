// The activations in double precision, the reference the model tests check
// tarn's vectorized kernels against.
#pragma once

#include <cmath>

#include "model/model_spec.h"

namespace tarn::model::testing {

inline double ReferenceActivation(Activation a, double z) {
  switch (a) {
    case Activation::kLinear:
      return z;
    case Activation::kSigmoid:
      return 1.0 / (1.0 + std::exp(-z));
    case Activation::kTanh:
      return std::tanh(z);
    case Activation::kRelu:
      return z > 0 ? z : 0;
    case Activation::kLeakyRelu:
      return z > 0 ? z : kLeakyReluSlope * z;
    case Activation::kSwish:
      return z / (1.0 + std::exp(-z));
  }
  return 0;
}

}  // namespace tarn::model::testing
