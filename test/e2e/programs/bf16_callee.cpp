#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"

// e2e before-program: bf16 CPU autocast with no loss scaler, the scope in a loss function of the
// same file (dtype, enable, forward, loss, disable); the loop calls it for its loss, then a plain
// loss.backward(), clip_grad_norm_ and the optimizer's own step(), and logs the loss after the step.

torch::Tensor compute_loss(e2e::Mlp &model, const torch::Tensor &input, const torch::Tensor &target) {
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  at::autocast::set_cpu_enabled(true);
  auto output = model->forward(input);
  auto loss = torch::nll_loss(output, target);
  at::autocast::set_cpu_enabled(false);
  at::autocast::clear_cache();
  return loss;
}

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-2));
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    optimizer.zero_grad();
    auto loss = compute_loss(model, data.input(step), data.target(step));
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 0.5);
    optimizer.step();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
