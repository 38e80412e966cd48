#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: a step skipped when its loss is not finite (every 7th batch is poisoned with
// a NaN), checked between the autocast scope and the scaled backward; a scheduler steps after the
// scaler, and the scale is printed between step() and update().

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  torch::optim::StepLR scheduler(optimizer, 10, 0.5);
  train::GradScaler scaler(1024.0);
  int skipped = 0;
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    if (step % 7 == 3)
      input = input * std::nan("");
    auto target = data.target(step);
    optimizer.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto output = model->forward(input);
    auto loss = torch::nll_loss(output, target);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    if (!torch::isfinite(loss).item<bool>()) {
      ++skipped;
      std::printf("step %d skipped\n", step); // the harness compares which steps were skipped
      continue;
    }
    scaler.scale(loss).backward();
    scaler.step(optimizer);
    std::printf("scale %.1f\n", scaler.get_scale());
    std::printf("step %d applied\n", step);
    scaler.update();
    scheduler.step();
    e2e::log_step(step, loss);
  }
  std::printf("skipped %d\n", skipped);
  e2e::log_params(model->parameters());
}
