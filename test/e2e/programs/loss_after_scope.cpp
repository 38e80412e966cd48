#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"

// e2e before-program: bf16 CPU autocast around the forward only, the loss computed in fp32 after
// the scope from the scope's output (PyTorch's advice for numerically sensitive losses), a plain
// backward and the optimizer's own step; no loss scaler.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
    auto output = model->forward(data.input(step));
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    auto logits = output.to(torch::kFloat);
    auto loss = torch::nll_loss(logits, data.target(step));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
