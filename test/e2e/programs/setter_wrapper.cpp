#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: autocast switched through a project's thin wrapper class whose method
// forwards its argument to the 1.x API (`mp.set_enabled(true)` ... `mp.set_enabled(false)`, the
// callers passing constants), a hand-written scaler, unscale_, clip, step and update.

class MixedPrecision {
public:
  void set_enabled(bool enabled) { at::autocast::set_cpu_enabled(enabled); }
};

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train::GradScaler scaler(1024.0);
  MixedPrecision mp;
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    optimizer.zero_grad();
    mp.set_enabled(true);
    auto output = model->forward(input);
    auto loss = torch::nll_loss(output, target);
    mp.set_enabled(false);
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
