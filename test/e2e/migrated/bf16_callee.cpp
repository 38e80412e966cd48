#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include <amp/torch.h>

// e2e before-program: bf16 CPU autocast with no loss scaler, the scope in a loss function of the
// same file (dtype, enable, forward, loss, disable); the loop calls it for its loss, then a plain
// loss.backward(), clip_grad_norm_ and the optimizer's own step(), and logs the loss after the step.

torch::Tensor compute_loss(e2e::Mlp &model, const torch::Tensor &input, const torch::Tensor &target) {
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, at::kBFloat16);
  auto output = amp::cast_to_adapter_tensor(amp_model->forward(input));
  auto loss = torch::nll_loss(output, target);
  return loss;
}

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-2));
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      loss = compute_loss(model, data.input(step), data.target(step));
      return loss;
    }, amp::parameters_of(optimizer));
    auto [loss_value, grads] = grad_fn();
    amp::clip_by_global_norm_(grads, 0.5);
    amp::step(optimizer, grads);
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
