// The models: declared here, defined in net.cpp (an fp32 forward) and half.cpp (a forward that
// turns autocast on itself).
#pragma once
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

struct HalfNetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(HalfNet);
