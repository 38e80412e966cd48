#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: checkpoint and resume, as trainers that save {model, optimizer, scaler}
// every N steps do. Phase 1 trains half the steps and keeps the scaler's state_dict() (the scale
// has moved: growth every 4 steps, a poisoned batch backs it off); phase 2 builds a fresh scaler,
// loads that state and trains on with the same model and optimizer. One step function serves both
// phases, with the scaler passed by reference: the migrated program keeps the checkpoint code as
// written (amp::GradScaler has the same state_dict()/load_state_dict() with PyTorch's keys).

void train_range(e2e::Mlp &model, torch::optim::Optimizer &optimizer, train::GradScaler &scaler,
                 e2e::SyntheticData &data, int begin, int end) {
  for (int step = begin; step < end; ++step) {
    auto input = data.input(step);
    if (step == 6)
      input = input * std::nan("");
    optimizer.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto loss = torch::nll_loss(model->forward(input), data.target(step));
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 0.5);
    scaler.step(optimizer);
    scaler.update();
    e2e::log_scale(step, scaler.get_scale()); // the harness compares it step by step
    if (step != 6)
      e2e::log_step(step, loss);
  }
}

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  std::map<std::string, double> saved;
  {
    train::GradScaler scaler(1024.0, 2.0, 0.5, 4);
    train_range(model, optimizer, scaler, data, 0, e2e::kSteps / 2);
    saved = scaler.state_dict();
  }
  {
    train::GradScaler scaler; // PyTorch's defaults, replaced by the checkpoint
    scaler.load_state_dict(saved);
    train_range(model, optimizer, scaler, data, e2e::kSteps / 2, e2e::kSteps);
  }
  e2e::log_params(model->parameters());
}
