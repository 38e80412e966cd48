// A trainer whose two steps are defined in two source files; the scaler is a member.
#pragma once
#include <memory>
#include "scaler.h"

struct TrainerNetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(TrainerNet);

struct Trainer {
  void step_a(torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y);
  void step_b(torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y);
  TrainerNet model;
  std::shared_ptr<torch::amp::GradScaler> scaler = std::make_shared<torch::amp::GradScaler>(4096.0);
};
