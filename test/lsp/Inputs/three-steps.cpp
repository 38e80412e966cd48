// Three training steps in one file (test/checks/amp-zero-grad.cpp without its CHECK lines).
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void after_update(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                  const torch::Tensor &target, int steps) {
  torch::amp::GradScaler scaler;
  for (int i = 0; i < steps; ++i) {
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      loss = torch::nll_loss(model->forward(data), target);
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    scaler.step(optimizer);
    scaler.update();
    optimizer.zero_grad();
  }
}

void model_zero_grad(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                     const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  model->zero_grad();
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  scaler.step(optimizer);
  scaler.update();
}

// An optimizer that is not the step's keeps its zero_grad (not a finding).
void other_optimizer(Net &model, torch::optim::SGD &optimizer, torch::optim::SGD &other,
                     const torch::Tensor &data, const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  other.zero_grad();
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  scaler.step(optimizer);
  scaler.update();
}
