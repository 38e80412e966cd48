#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: the gradient norm logged without clipping, the usual way:
// clip_grad_norm_(params, INFINITY) after unscale_, its result printed each step (issue #37).
// The migrated program clips nothing either and prints the same norms.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(256.0).growth_factor(2.0).backoff_factor(0.5).growth_interval(20));
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, at::kBFloat16);
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
    double norm = amp::clip_by_global_norm_(grads, INFINITY).item<double>();
    std::printf("step %d grad_norm %.6f\n", step, norm);
    scaler.step(optimizer, grads);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
