#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdlib>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: AMP behind a run-time flag, as every real project has it (`use_amp` from the
// command line or a config; here the environment): `if (use_amp)` around the enable (in a block with
// the dtype call) and the disable. The migrated program converts the model at `use_amp ? <level> :
// O0`, so its fp32 mode (E2E_FP32=1) computes what the original's did.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  train::GradScaler scaler(1024.0);
  const bool use_amp = std::getenv("E2E_FP32") == nullptr;
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    optimizer.zero_grad();
    torch::Tensor loss;
    {
      if (use_amp) {
        at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
        at::autocast::set_cpu_enabled(true);
      }
      auto output = model->forward(input);
      loss = torch::nll_loss(output, target);
      if (use_amp) {
        at::autocast::set_cpu_enabled(false);
        at::autocast::clear_cache();
      }
    }
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    scaler.step(optimizer);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
