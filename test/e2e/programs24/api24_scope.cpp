#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program (libtorch >= 2.4 API): the device-argument autocast calls, with the device in
// a variable, around forward and loss; a hand-written scaler; clip; step; update.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model(/*batch_norm=*/true);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(3e-3));
  train::GradScaler scaler(2048.0);
  const auto device = at::kCPU;
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    optimizer.zero_grad();
    at::autocast::set_autocast_enabled(device, true);
    at::autocast::set_autocast_dtype(device, at::kBFloat16);
    auto output = model->forward(input);
    auto loss = torch::nll_loss(output, target);
    at::autocast::set_autocast_enabled(device, false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 2.0);
    scaler.step(optimizer);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
