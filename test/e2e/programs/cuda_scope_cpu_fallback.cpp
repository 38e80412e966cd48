#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: the common public shape of a CUDA training loop with a CPU fallback: the
// device chosen at run time, CUDA's autocast (`at::autocast::set_enabled`) around the forward and
// the loss, a loss scaler, a clip. On a machine without CUDA the scope casts nothing and the
// program trains in fp32; the migrated program must too (its conversion is CUDA's only).

int main() {
  torch::Device device = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  train::GradScaler scaler(65536.0);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto x = data.input(step).to(device);
    auto y = data.target(step).to(device);
    optimizer.zero_grad();
    at::autocast::set_enabled(true);
    auto loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
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
