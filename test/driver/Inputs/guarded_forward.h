// Uses the guard of amp_guard.h and the scaler class of scaler.h and names nothing else of AMP:
// only the class names, learned while parsing those headers, tell the fast path that these
// bodies matter.
#pragma once
#include "amp_guard.h"
#include "scaler.h"

inline torch::Tensor guarded_forward(torch::nn::Linear &model, const torch::Tensor &x) {
  MixedPrecision mp(true);
  return model(x);
}

inline void step_half(torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler) {
  scaler.step(optimizer);
  scaler.update();
}
