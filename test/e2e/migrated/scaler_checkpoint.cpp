#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: checkpoint and resume, as trainers that save {model, optimizer, scaler}
// every N steps do. Phase 1 trains half the steps and keeps the scaler's state_dict() (the scale
// has moved: growth every 4 steps, a poisoned batch backs it off); phase 2 builds a fresh scaler,
// loads that state and trains on with the same model and optimizer. One step function serves both
// phases, with the scaler passed by reference: the migrated program keeps the checkpoint code as
// written (amp::GradScaler has the same state_dict()/load_state_dict() with PyTorch's keys).

void train_range(e2e::Mlp &model, torch::optim::Optimizer &optimizer, amp::GradScaler &scaler,
                 e2e::SyntheticData &data, int begin, int end) {
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);
  for (int step = begin; step < end; ++step) {
    auto input = data.input(step);
    if (step == 6)
      input = input * std::nan("");
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(input)), data.target(step));
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.unscale_(optimizer, grads);
    amp::clip_by_global_norm_(grads, 0.5);
    scaler.step(optimizer, grads);
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
    amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0).growth_factor(2.0).backoff_factor(0.5).growth_interval(4));
    train_range(model, optimizer, scaler, data, 0, e2e::kSteps / 2);
    saved = scaler.state_dict();
  }
  {
    amp::GradScaler scaler; // PyTorch's defaults, replaced by the checkpoint
    scaler.load_state_dict(saved);
    train_range(model, optimizer, scaler, data, e2e::kSteps / 2, e2e::kSteps);
  }
  e2e::log_params(model->parameters());
}
