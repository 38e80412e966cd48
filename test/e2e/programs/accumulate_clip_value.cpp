#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: gradient accumulation over 4 micro-batches (the loss divided by 4, one
// optimizer step every 4th batch) with clip_grad_value_ between unscale_ and step(), and the loss
// scale logged after each update.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  train::GradScaler scaler(1024.0);
  const int accum = 4;
  model->train();
  for (int i = 0; i < 4 * e2e::kSteps; ++i) {
    at::autocast::set_cpu_enabled(true);
    auto loss = torch::nll_loss(model->forward(data.input(i)), data.target(i)) / accum;
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    if ((i + 1) % accum == 0) {
      scaler.unscale_(optimizer);
      torch::nn::utils::clip_grad_value_(model->parameters(), 0.02);
      scaler.step(optimizer);
      scaler.update();
      optimizer.zero_grad();
      e2e::log_step(i / accum, loss * accum);
      std::printf("step %d scale %.1f\n", i / accum, scaler.get_scale());
    }
  }
  e2e::log_params(model->parameters());
}
