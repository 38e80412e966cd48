#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include <amp/torch.h>

// e2e before-program: bf16 CPU autocast around the forward only, the loss computed in fp32 after
// the scope from the scope's output (PyTorch's advice for numerically sensitive losses), a plain
// backward and the optimizer's own step; no loss scaler.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, at::kBFloat16);
  for (int step = 0; step < e2e::kSteps; ++step) {
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(data.input(step)));
      auto logits = output.to(torch::kFloat);
      loss = torch::nll_loss(logits, data.target(step));
      return loss;
    }, amp::parameters_of(optimizer));
    auto [loss_value, grads] = grad_fn();
    amp::step(optimizer, grads);
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
