#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: the gradient norm logged without clipping, the usual way:
// clip_grad_norm_(params, INFINITY) after unscale_, its result printed each step (issue #37).
// The migrated program clips nothing either and prints the same norms.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train::GradScaler scaler(256.0, 2.0, 0.5, 20);
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    optimizer.zero_grad();
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
    auto output = model->forward(input);
    auto loss = torch::nll_loss(output, target);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    double norm = torch::nn::utils::clip_grad_norm_(model->parameters(), INFINITY);
    std::printf("step %d grad_norm %.6f\n", step, norm);
    scaler.step(optimizer);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
