#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: scope and scaling in different functions. A loss function holds the 1.x
// autocast pair around forward and loss; the training loop scales, unscales, clips the model's
// parameters, steps and updates.

torch::Tensor forward_loss(e2e::Mlp &model, const torch::Tensor &input, const torch::Tensor &target) {
  at::autocast::set_cpu_enabled(true);
  auto output = model->forward(input);
  auto loss = torch::nll_loss(output, target);
  at::autocast::set_cpu_enabled(false);
  at::autocast::clear_cache();
  return loss;
}

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train::GradScaler scaler(1024.0);
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    optimizer.zero_grad();
    auto loss = forward_loss(model, data.input(step), data.target(step));
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    scaler.step(optimizer);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
