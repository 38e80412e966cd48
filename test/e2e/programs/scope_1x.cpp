#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: the 1.x autocast API as an enable/disable pair around forward and loss,
// a hand-written scaler, clip_grad_norm_ after unscale_, then step and update. Each scope call is
// spelled per libtorch version (`#if TORCH_VERSION_MAJOR >= 2` the 2.4 API, else the 1.x one), as
// code built against several libtorch releases does: the conditionals go with the scope.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train::GradScaler scaler(1024.0);
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    optimizer.zero_grad();
#if TORCH_VERSION_MAJOR >= 2
    at::autocast::set_autocast_enabled(at::kCPU, true);
#else
    at::autocast::set_cpu_enabled(true);
#endif
    auto output = model->forward(input);
    auto loss = torch::nll_loss(output, target);
#if TORCH_VERSION_MAJOR >= 2
    at::autocast::set_autocast_enabled(at::kCPU, false);
#else
    at::autocast::set_cpu_enabled(false);
#endif
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    scaler.step(optimizer);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
