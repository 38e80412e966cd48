// A loss helper that runs the backward itself (losses.cpp), as a translation trainer's does.
#pragma once
#include <torch/torch.h>

struct LossComputer {
  torch::Tensor compute(const torch::Tensor &out, const torch::Tensor &y);
};
