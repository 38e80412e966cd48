#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: scope and scaling in different functions. A loss function holds the 1.x
// autocast pair around forward and loss; the training loop scales, unscales, clips the model's
// parameters, steps and updates.

torch::Tensor forward_loss(e2e::Mlp &model, const torch::Tensor &input, const torch::Tensor &target) {
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);
  auto output = amp::cast_to_adapter_tensor(amp_model->forward(input));
  auto loss = torch::nll_loss(output, target);
  return loss;
}

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      loss = forward_loss(model, data.input(step), data.target(step));
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
