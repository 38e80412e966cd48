#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: the robust loop of LLM/RL trainers. A batch whose loss is not finite is
// skipped inside the autocast scope (`if (!finite) { close the scope; continue; }`: every 7th batch
// is poisoned with a NaN); after unscale_ the clip's total norm is checked, and a non-finite norm
// (two batches carry a zero-valued term whose gradient overflows) skips the optimizer's step while
// update() still backs the scale off. The migrated program runs the loss check after
// value_and_grad, with the scope's calls gone from it.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train::GradScaler scaler(65536.0, 2.0, 0.5, 6);
  int skipped_loss = 0, skipped_norm = 0;
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    if (step % 7 == 3)
      input = input * std::nan("");
    optimizer.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto output = model->forward(input);
    auto loss = torch::nll_loss(output, data.target(step));
    if (step == 11 || step == 23) {
      auto w = model->parameters()[0];
      loss = loss + (w - w.detach()).sum() * 1e36;
    }
    if (!std::isfinite(loss.item<float>())) {
      at::autocast::set_cpu_enabled(false);
      at::autocast::clear_cache();
      ++skipped_loss;
      std::printf("step %d skipped\n", step); // the harness compares which steps were skipped
      continue;
    }
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    double norm = torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    if (!std::isfinite(norm)) {
      ++skipped_norm;
      scaler.update();
      std::printf("step %d skipped\n", step);
      e2e::log_scale(step, scaler.get_scale());
      continue;
    }
    scaler.step(optimizer);
    scaler.update();
    std::printf("step %d applied\n", step);
    e2e::log_scale(step, scaler.get_scale());
    e2e::log_step(step, loss);
  }
  std::printf("skipped %d %d\n", skipped_loss, skipped_norm);
  e2e::log_params(model->parameters());
}
