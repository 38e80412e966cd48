#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program (libtorch >= 2.4 API): set_autocast_dtype / set_autocast_enabled with a
// device argument, gradient accumulation over two micro-batches, clip, step, update.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train::GradScaler scaler(1024.0);
  const int micro_steps = 2;
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    optimizer.zero_grad();
    torch::Tensor total = torch::zeros({});
    for (int micro = 0; micro < micro_steps; ++micro) {
      auto input = data.input(2 * step + micro);
      auto target = data.target(2 * step + micro);
      at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
      at::autocast::set_autocast_enabled(at::kCPU, true);
      auto output = model->forward(input);
      auto loss = torch::nll_loss(output, target) / micro_steps;
      at::autocast::set_autocast_enabled(at::kCPU, false);
      at::autocast::clear_cache();
      scaler.scale(loss).backward();
      total = total + loss.detach();
    }
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    scaler.step(optimizer);
    scaler.update();
    e2e::log_step(step, total);
  }
  e2e::log_params(model->parameters());
}
