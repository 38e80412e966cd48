#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: clip_grad_norm_ whose returned norm is logged, autocast enabled once per
// step with the dtype set explicitly, zero_grad between loss and backward.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train::GradScaler scaler(256.0, 2.0, 0.5, 20);
  const double max_norm = 0.5;
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
    auto output = model->forward(input);
    auto loss = torch::nll_loss(output, target);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    optimizer.zero_grad();
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    auto norm = torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm);
    std::printf("step %d norm %.6f\n", step, norm);
    scaler.step(optimizer);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
