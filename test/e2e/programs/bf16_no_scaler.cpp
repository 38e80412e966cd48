#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"

// e2e before-program: bf16 CPU autocast with no loss scaler (bf16 keeps fp32's exponent range), as
// modern code trains: an enable/disable pair around forward and loss, a plain loss.backward(),
// clip_grad_norm_ on the grads, then the optimizer's own step().

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-2));
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    optimizer.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto output = model->forward(input);
    auto loss = torch::nll_loss(output, target);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 0.5);
    optimizer.step();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
