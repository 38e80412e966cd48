// A trainer declared in a project header; its step is split over two methods (trainer.cpp).
#pragma once
#include <torch/torch.h>
#include "scaler.h"
#include <memory>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

class Trainer {
public:
  void train_batch(const torch::Tensor &x);

private:
  void forward_backward(const torch::Tensor &x);
  void optimizer_step();
  Net model_;
  std::unique_ptr<torch::optim::SGD> opt_;
  torch::amp::GradScaler scaler_;
};
