#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

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
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  MixedPrecision mp;
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);
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
