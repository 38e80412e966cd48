// The guard's use is in another header; this file adds one more use of its own.
#include "guarded_forward.h"

torch::Tensor twice(torch::nn::Linear &model, const torch::Tensor &x) {
  MixedPrecision mp(true);
  return guarded_forward(model, x) + model(x);
}
