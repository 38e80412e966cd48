// Uses the guard of amp_guard.h and names nothing else of AMP: only the guard's name, learned
// while parsing amp_guard.h, tells the fast path that this body matters.
#pragma once
#include "amp_guard.h"

inline torch::Tensor guarded_forward(torch::nn::Linear &model, const torch::Tensor &x) {
  MixedPrecision mp(true);
  return model(x);
}
