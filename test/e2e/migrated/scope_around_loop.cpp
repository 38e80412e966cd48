#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdlib>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

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
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  const bool use_amp = std::getenv("E2E_FP32") == nullptr;
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, use_amp ? amp::Level::O1 : amp::Level::O0);
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
    // the casts of the weights this step changed
  }
  e2e::log_params(model->parameters());
}
