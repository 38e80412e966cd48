// A trainer declared in a project header: the scaler as a shared_ptr member with a default
// member initializer; the step is defined in the source file.
#pragma once
#include <memory>
#include "scaler.h"

struct HeaderNetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(HeaderNet);

struct HeaderTrainer {
  void step(torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y);
  HeaderNet model;
  std::shared_ptr<torch::amp::GradScaler> scaler = std::make_shared<torch::amp::GradScaler>(4096.0);
};
