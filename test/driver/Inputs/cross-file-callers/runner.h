// A runner whose forward-and-loss (runner.cpp, under autocast) a trainer in another file trains
// with (trainer.cpp), while runner.cpp itself only evaluates with it.
#pragma once
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

struct Runner {
  Net model;
  torch::Tensor forward_and_loss(const torch::Tensor &x, const torch::Tensor &y);
  double evaluate(const torch::Tensor &x, const torch::Tensor &y);
};
