#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdlib>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: AMP behind a run-time flag, as every real project has it (`use_amp` from the
// command line or a config; here the environment): `if (use_amp)` around the enable (in a block with
// the dtype call) and the disable. The migrated program converts the model at `use_amp ? <level> :
// O0`, so its fp32 mode (E2E_FP32=1) computes what the original's did.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  const bool use_amp = std::getenv("E2E_FP32") == nullptr;
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, use_amp ? amp::Level::O1 : amp::Level::O0, at::kBFloat16);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(input));
      loss = torch::nll_loss(output, target);
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.unscale_(optimizer, grads);
    amp::clip_by_global_norm_(grads, 1.0);
    scaler.step(optimizer, grads);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
