#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdlib>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: autocast switched on once before the training loop and off after it, each
// under the run-time flag (`if (use_amp)`), with the cache cleared after each step and after the
// loop: every iteration's forward runs under the scope. (Without the per-step clear_cache() the
// original would keep using casts of the weights made before they were stepped.) The migrated program converts the model once, before
// the loop, at `use_amp ? <level> : O0`; the step's forward region is the loop body from the
// forward to the scaled backward. E2E_FP32=1 runs the fp32 mode.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train::GradScaler scaler(1024.0);
  const bool use_amp = std::getenv("E2E_FP32") == nullptr;
  model->train();
  if (use_amp)
    at::autocast::set_cpu_enabled(true);
  for (int step = 0; step < e2e::kSteps; ++step) {
    optimizer.zero_grad();
    auto input = data.input(step);
    auto target = data.target(step);
    auto output = model->forward(input);
    auto loss = torch::nll_loss(output, target);
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    scaler.step(optimizer);
    scaler.update();
    e2e::log_step(step, loss);
    at::autocast::clear_cache(); // the casts of the weights this step changed
  }
  if (use_amp) {
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
  }
  e2e::log_params(model->parameters());
}
